/* compile.c — compiling the subgraph steps of an execution program.
 *
 * Each subgraph step's view goes to its symbolic module's compile. Where
 * the configuration names a cache folder and the module can export and
 * import what it compiled, the compiled subgraph is looked up in the cache
 * first (cache.c) and stored there after a fresh compile; a cache entry the
 * module refuses, or one that cannot be written, is a warning, not an
 * error. A failed compile is reported with the step's index, so that the
 * session can move its nodes to the next backend. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "cache.h"
#include "program.h"
#include "status.h"

/* Takes step ST's compiled subgraph from the cache if an entry for it is
 * there and its module accepts it. */
static void pl_compile_lookup(const pl_program *p, pl_prog_step *st, int32_t device,
                              const pl_cache_key *key, pl_warnings *w)
{
    pl_module *m = st->module;
    const void *blob = NULL;
    size_t bytes = 0;
    const char *dir = p->rt->config->cache_dir;
    pl_status *err = pl_cache_map(dir, m, key, &blob, &bytes);
    uint64_t delta[PL_CACHE_COUNTS] = {0};
    delta[PL_CACHE_MISSES] = 1;
    if (err == NULL) {
        err = m->api.import_compiled(m->ctx, device, st->view, blob, bytes, &st->compiled);
        if (err == NULL && st->compiled != NULL) {
            st->cache = "hit";
            delta[PL_CACHE_MISSES] = 0;
            delta[PL_CACHE_HITS] = 1;
            delta[PL_CACHE_BYTES_READ] = bytes;
            pl_cache_touch(dir, m, key);
            if (m->api.header.abi_minor >= 6 && (m->api.capabilities & PL_CAP_KEEPS_BLOB)) {
                st->blob = blob; /* read in place: unmapped after release */
                st->blob_bytes = bytes;
                blob = NULL;
            }
        } else {
            pl_warnings_add(w, "%s: the cached compile was refused (%s); compiling again",
                            st->name, err ? pl_status_message(err) : "no result");
            st->compiled = NULL;
        }
    }
    pl_status_free(err);
    pl_cache_unmap(blob, bytes);
    pl_cache_count(dir, delta);
}

/* Stores step ST's freshly compiled subgraph in the cache, written to the
 * folder as the module exports it. */
static void pl_compile_store(const pl_program *p, pl_prog_step *st, const pl_cache_key *key,
                             pl_warnings *w)
{
    pl_module *m = st->module;
    const char *dir = p->rt->config->cache_dir;
    pl_cache_writer *out = NULL;
    uint64_t written = 0;
    pl_status *err = pl_cache_writer_open(dir, m, key, &out);
    if (err == NULL) {
        err = m->api.export_compiled(m->ctx, st->compiled, pl_cache_writer_sink, out);
        pl_status *closed = pl_cache_writer_close(out, err == NULL, &written);
        if (err == NULL)
            err = closed;
        else
            pl_status_free(closed);
    }
    if (err == NULL) {
        pl_cache_touch(dir, m, key);
        st->cache = "stored";
        uint64_t delta[PL_CACHE_COUNTS] = {0};
        delta[PL_CACHE_STORES] = 1;
        delta[PL_CACHE_BYTES_WRITTEN] = written;
        pl_cache_count(dir, delta);
        pl_cache_limit(dir, p->rt->config->cache_max_bytes, m, key);
    } else {
        pl_warnings_add(w, "%s: not cached: %s", st->name, pl_status_message(err));
        pl_status_free(err);
    }
}

/* Whether step ST may go through the cache; turns CACHE_OK off for good
 * when the folder is unusable. */
static bool pl_compile_cacheable(const pl_prog_step *st, const char *dir, bool *cache_ok,
                                 pl_warnings *w)
{
    pl_module *m = st->module;
    bool cacheable = *cache_ok && (m->api.capabilities & PL_CAP_EXPORT) &&
                     m->api.export_compiled != NULL && m->api.import_compiled != NULL;
    if (!cacheable)
        return false;
    pl_status *dir_err = pl_cache_check_dir(dir);
    if (dir_err != NULL) {
        pl_warnings_add(w, "%s", pl_status_message(dir_err));
        pl_status_free(dir_err);
        *cache_ok = false;
        return false;
    }
    return true;
}

pl_status *pl_program_compile(pl_program *p, pl_warnings *w, long *out_failed)
{
    *out_failed = -1;
    const char *dir = p->rt->config->cache_dir;
    /* Not a plan for few runs (a staged session's tail for a new signature,
     * stage.c): writing its subgraphs out cost more than compiling them
     * (a 4-layer BERT at a new length: 15.5 ms a first run against 9.2,
     * 20 MB of cache each), and reading one back, checked, more too. */
    bool cache_ok = dir != NULL && dir[0] != '\0' && !(pl_partition_plan_runs(p->part) > 0);
    for (size_t i = 0; i < p->n_steps; i++) {
        pl_prog_step *st = &p->steps[i];
        if (st->kind != PL_STEP_SUBGRAPH)
            continue;
        pl_module *m = st->module;
        int32_t device = pl_partition_backend(p->part, (size_t)st->backend)->device;
        st->cache = "off";
        bool cacheable = pl_compile_cacheable(st, dir, &cache_ok, w);
        pl_cache_key key;
        if (cacheable) {
            pl_status *key_err = pl_cache_key_make(m, device, st->view, &key);
            if (key_err != NULL) {
                pl_status_free(key_err);
                cacheable = false;
            } else {
                st->cache = "miss";
                pl_compile_lookup(p, st, device, &key, w);
            }
        }
        if (st->compiled == NULL) {
            pl_graph_view_set_exported(st->view, cacheable);
            pl_status *err = m->api.compile(m->ctx, device, st->view, &st->compiled);
            if (err == NULL && st->compiled == NULL)
                err = pl_status_create(PL_CODE_INTERNAL, "compile returned nothing");
            if (err != NULL) {
                *out_failed = (long)i;
                return err;
            }
            if (cacheable)
                pl_compile_store(p, st, &key, w);
        }
        st->compiled_var = pl_engine_new_var(p->rt->engine);
        st->run_mu = pl_malloc(sizeof *st->run_mu);
        if (st->run_mu != NULL && pthread_mutex_init(st->run_mu, NULL) != 0) {
            pl_free(st->run_mu);
            st->run_mu = NULL;
        }
        if (st->compiled_var == NULL || st->run_mu == NULL)
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory creating a session");
    }
    return NULL;
}
