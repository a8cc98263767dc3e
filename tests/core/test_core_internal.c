/* test_core_internal.c — unit tests of core internals that the public API
 * cannot reach: the CPU pool behind host->parallel_for, and the reference
 * counts that keep a module loaded while something it made is alive.
 * Linked against the core's object library. Usage: test_core_internal CASE
 * [STAGE_DIR]. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <plinth/graph_hash.h>

#include "cache.h"
#include "filedata.h"
#include "hostbuf.h"
#include "graph_view.h"
#include "model.h"
#include "registry.h"
#include "status.h"
#include "strmap.h"
#include "threadpool.h"

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                \
            exit(1);                                                       \
        }                                                                  \
    } while (0)

/* ---- the CPU pool -------------------------------------------------------- */

typedef struct cover_arg {
    atomic_int *hits;
    int threads;
    atomic_int bad_worker;
    pl_threadpool *pool;
    atomic_long inner_sum;
} cover_arg;

static void cover_body(void *arg, size_t begin, size_t end, int worker)
{
    cover_arg *a = arg;
    if (worker < 0 || worker >= a->threads)
        atomic_store(&a->bad_worker, 1);
    for (size_t i = begin; i < end; i++)
        atomic_fetch_add(&a->hits[i], 1);
}

static void run_cover(int threads, size_t n, size_t grain)
{
    pl_threadpool *pool = NULL;
    CHECK(pl_threadpool_create(threads, &pool) == NULL);
    CHECK(pl_threadpool_size(pool) == threads);
    cover_arg a = {.threads = threads};
    a.hits = calloc(n, sizeof *a.hits);
    CHECK(a.hits != NULL);
    for (int round = 0; round < 20; round++)
        pl_threadpool_parallel_for(pool, n, grain, cover_body, &a);
    for (size_t i = 0; i < n; i++)
        CHECK(atomic_load(&a.hits[i]) == 20);
    CHECK(atomic_load(&a.bad_worker) == 0);
    free(a.hits);
    pl_threadpool_destroy(pool);
}

static void case_pool_cover(void)
{
    int sizes[] = {1, 2, 3, 4, 8};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        run_cover(sizes[i], 100003, 1);
        run_cover(sizes[i], 7, 1);
        run_cover(sizes[i], 1000, 4096);
    }
}

typedef struct chunks_arg {
    atomic_size_t count, least, most;
} chunks_arg;

static void chunks_body(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    chunks_arg *a = arg;
    size_t len = end - begin, seen;
    atomic_fetch_add(&a->count, 1);
    seen = atomic_load(&a->least);
    while (len < seen && !atomic_compare_exchange_weak(&a->least, &seen, len))
        ;
    seen = atomic_load(&a->most);
    while (len > seen && !atomic_compare_exchange_weak(&a->most, &seen, len))
        ;
}

/* Chunks hold at least 3/4 of the grain (all of N when it is less than
 * 3/2 of it), differ by one at most, are at most four a thread and, more
 * than one a thread, a multiple of the threads: 9,600 at a grain of 4,096
 * is two of 4,800 (not 4,096, 4,096 and 1,408, the last a helper's wake for
 * little), 98 at 64 two of 49, 201 at 64 two of 100 and 101 on 2 threads
 * (not three: one thread would do two), 100,003 at a grain of 1 is
 * 4 x threads. */
static void case_pool_chunks(void)
{
    static const size_t cases[][2] = {{9600, 4096}, {100003, 1}, {1000, 4096}, {8192, 4096},
                                      {8191, 4096}, {65536, 16384}, {70000, 16384}, {7, 1},
                                      {98, 64}, {95, 64}, {96, 64}, {201, 64}, {330, 64}};
    for (int threads = 2; threads <= 4; threads += 2)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            pl_threadpool *pool = NULL;
            CHECK(pl_threadpool_create(threads, &pool) == NULL);
            size_t n = cases[c][0], grain = cases[c][1];
            chunks_arg a;
            atomic_init(&a.count, 0);
            atomic_init(&a.least, SIZE_MAX);
            atomic_init(&a.most, 0);
            pl_threadpool_parallel_for(pool, n, grain, chunks_body, &a);
            size_t count = atomic_load(&a.count), least = atomic_load(&a.least),
                   most = atomic_load(&a.most);
            if (4 * least < 3 * (n < grain ? n : grain) || most - least > 1 ||
                count > 4 * (size_t)threads || (2 * n >= 3 * grain && count < 2) ||
                (2 * n < 3 * grain && count > 1) ||
                (count > (size_t)threads && count % (size_t)threads != 0)) {
                fprintf(stderr, "threads %d, n %zu, grain %zu: %zu chunks of %zu to %zu\n",
                        threads, n, grain, count, least, most);
                exit(1);
            }
            pl_threadpool_destroy(pool);
        }
}

static void inner_body(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    cover_arg *a = arg;
    for (size_t i = begin; i < end; i++)
        atomic_fetch_add(&a->inner_sum, (long)i);
}

static void outer_body(void *arg, size_t begin, size_t end, int worker)
{
    cover_arg *a = arg;
    (void)worker;
    for (size_t i = begin; i < end; i++)
        pl_threadpool_parallel_for(a->pool, 100, 1, inner_body, a);
}

/* A parallel_for inside a chunk must not deadlock even when every worker is
 * busy with the outer loop. */
static void case_pool_nested(void)
{
    pl_threadpool *pool = NULL;
    CHECK(pl_threadpool_create(4, &pool) == NULL);
    cover_arg a = {.threads = 4, .pool = pool};
    pl_threadpool_parallel_for(pool, 64, 1, outer_body, &a);
    CHECK(atomic_load(&a.inner_sum) == 64L * (99L * 100L / 2));
    pl_threadpool_destroy(pool);
}

typedef struct caller_arg {
    pl_threadpool *pool;
    atomic_long sum;
} caller_arg;

static void sum_body(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    caller_arg *a = arg;
    long local = 0;
    for (size_t i = begin; i < end; i++)
        local += (long)i;
    atomic_fetch_add(&a->sum, local);
}

static void *caller_thread(void *arg)
{
    caller_arg *a = arg;
    for (int i = 0; i < 300; i++)
        pl_threadpool_parallel_for(a->pool, 1000, 7, sum_body, a);
    return NULL;
}

/* Several application threads share one pool at once. */
static void case_pool_concurrent(void)
{
    pl_threadpool *pool = NULL;
    CHECK(pl_threadpool_create(3, &pool) == NULL);
    caller_arg a = {.pool = pool};
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&t[i], NULL, caller_thread, &a) == 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    CHECK(atomic_load(&a.sum) == 4L * 300L * (999L * 1000L / 2));
    pl_threadpool_destroy(pool);
}

/* ---- module lifetime ----------------------------------------------------- */

/* A runtime loading the staged module libplinth_<MODULE>.so alone. */
static pl_runtime *make_runtime_with(const char *stage_dir, char *tmpl, const char *module)
{
    CHECK(mkdtemp(tmpl) != NULL);
    char ini[4096];
    snprintf(ini, sizeof ini, "%s/backend.ini", tmpl);
    FILE *f = fopen(ini, "w");
    CHECK(f != NULL);
    fprintf(f, "[runtime]\nmodules = %s/libplinth_%s.so\nthreads = 2\n", stage_dir,
            module);
    fclose(f);
    pl_runtime_options o = {.struct_size = sizeof o, .config_path = ini,
                            .ignore_environment = true};
    pl_runtime *rt = NULL;
    pl_status *st = pl_runtime_create(&o, &rt);
    if (st != NULL)
        fprintf(stderr, "%s\n", pl_status_message(st));
    CHECK(st == NULL);
    unlink(ini);
    rmdir(tmpl);
    return rt;
}

static pl_runtime *make_runtime(const char *stage_dir, char *tmpl)
{
    return make_runtime_with(stage_dir, tmpl, "example_acc");
}

/* A module referenced by a live object survives the runtime's destruction,
 * still initialised and callable, and is unloaded only with the last
 * reference. */
static void case_module_outlives_runtime(const char *stage_dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/libplinth_example_acc.so", stage_dir);
    CHECK(dlopen(path, RTLD_NOW | RTLD_NOLOAD) == NULL);
    char tmpl[] = "/tmp/plinth-internal-XXXXXX";
    pl_runtime *rt = make_runtime(stage_dir, tmpl);
    long idx = pl_runtime_find_module(rt, "example_acc");
    CHECK(idx >= 0);
    pl_module *m = rt->modules[idx];
    CHECK(m->status == PL_MODULE_LOADED && m->ctx != NULL);
    pl_module_retain(m);
    pl_runtime_destroy(rt);

    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    CHECK(h != NULL); /* still loaded */
    dlclose(h);
    pl_kv kv = {"devices", "2"};
    CHECK(pl_module_configure(m, &kv, 1) == NULL);
    CHECK(m->api.device_count(m->ctx) == 2);
    /* The host context still works: parallel_for on the runtime's pool. */
    caller_arg a = {.pool = NULL};
    pl_host_table.parallel_for(&m->host, 1000, 1, sum_body, &a);
    CHECK(atomic_load(&a.sum) == 999L * 1000L / 2);

    pl_module_release(m);
    CHECK(dlopen(path, RTLD_NOW | RTLD_NOLOAD) == NULL); /* unloaded now */
}

/* Two runtimes share the library but not the instance. */
static void case_module_two_runtimes(const char *stage_dir)
{
    char t1[] = "/tmp/plinth-internal-XXXXXX";
    char t2[] = "/tmp/plinth-internal-XXXXXX";
    pl_runtime *a = make_runtime(stage_dir, t1);
    pl_runtime *b = make_runtime(stage_dir, t2);
    pl_module *ma = a->modules[pl_runtime_find_module(a, "example_acc")];
    pl_module *mb = b->modules[pl_runtime_find_module(b, "example_acc")];
    CHECK(ma->handle == mb->handle);
    CHECK(ma->ctx != mb->ctx);
    const char *k[] = {"devices"}, *v[] = {"3"};
    CHECK(pl_runtime_configure_module(a, "example_acc", k, v, 1) == NULL);
    CHECK(ma->api.device_count(ma->ctx) == 3);
    CHECK(mb->api.device_count(mb->ctx) == 1);
    pl_runtime_destroy(a);
    CHECK(mb->api.device_count(mb->ctx) == 1);
    pl_runtime_destroy(b);
}

/* ---- the graph view modules get ---------------------------------------- */

/* A subgraph view of examples/cnn: its boundary, attributes, constants,
 * tensor types and JSON text. */
static void case_graph_view(const char *stage_dir, const char *source_dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/examples/cnn/model.json", source_dir);
    char tmpl[] = "/tmp/plinth_core_XXXXXX";
    pl_runtime *rt = make_runtime_with(stage_dir, tmpl, "json");
    pl_graph *g = NULL;
    /* Read as a model load reads it: through the json format module. */
    pl_status *st = pl_model_read_graph(rt, path, &g);
    if (st != NULL)
        fprintf(stderr, "%s\n", pl_status_message(st));
    CHECK(st == NULL);
    const char *names[] = {"conv2", "relu2", "dwconv", "residual", "clip"};
    pl_nid ids[5];
    for (int i = 0; i < 5; i++) {
        ids[i] = pl_graph_find_node(g, names[i]);
        CHECK(ids[i] != PL_NID_NONE);
    }
    pl_graph_view *v = NULL;
    CHECK(pl_graph_view_create(g, ids, 5, &v) == NULL);
    const pl_graph_api *api = pl_host_table.graph;
    CHECK(api != NULL && PL_ABI_HAS_FN(pl_graph_api, api, json));
    CHECK(api->node_count(v) == 5);
    CHECK(strcmp(api->node_op(v, 2), "Conv") == 0);
    CHECK(strcmp(api->node_domain(v, 2), "") == 0);
    CHECK(api->node_opset(v, 2) == 13);
    /* boundary: reads p1 (constants excluded), produces k2 for gap */
    CHECK(api->input_count(v) == 1);
    CHECK(strcmp(api->tensor_name(v, api->input(v, 0)), "p1") == 0);
    CHECK(api->output_count(v) == 1);
    CHECK(strcmp(api->tensor_name(v, api->output(v, 0)), "k2") == 0);
    /* attributes */
    const int64_t *ks = NULL;
    size_t n = 0;
    CHECK(api->attr_ints(v, 0, "kernel_shape", &ks, &n) == 1 && n == 2 && ks[0] == 3);
    int64_t group = 0;
    CHECK(api->attr_int(v, 2, "group", &group) == 1 && group == 32);
    const char *s = NULL;
    size_t len = 0;
    CHECK(api->attr_string(v, 0, "auto_pad", &s, &len) == 1 && strcmp(s, "SAME_UPPER") == 0);
    CHECK(api->attr_kind(v, 0, "missing") == PL_GRAPH_ATTR_NONE);
    CHECK(api->attr_int(v, 0, "kernel_shape", &group) == 0); /* wrong kind */
    /* tensors */
    int64_t w = api->node_input(v, 0, 1);
    const void *data = NULL;
    size_t bytes = 0;
    CHECK(api->tensor_constant(v, w, &data, &bytes) == 1 && bytes == 32 * 16 * 9 * 4);
    pl_dtype dt;
    int32_t ndim;
    const int64_t *dims;
    CHECK(api->tensor_type(v, api->output(v, 0), &dt, &ndim, &dims) == 1);
    CHECK(PL_DTYPE_EQ(dt, PL_DTYPE_F32) || dt.lanes == 0);
    CHECK(api->node_input(v, 0, 7) == -1);
    CHECK(api->tensor_name(v, -1) == NULL);
    /* constant_bytes: each constant the nodes read, once (counted here
     * from tensor_constant over every input, repeats skipped) */
    size_t want = 0;
    int64_t seen[64];
    size_t n_seen = 0;
    for (size_t i = 0; i < api->node_count(v); i++)
        for (size_t k = 0; k < api->node_input_count(v, i); k++) {
            int64_t t = api->node_input(v, i, k);
            int repeat = 0;
            for (size_t j = 0; j < n_seen; j++)
                repeat = repeat || seen[j] == t;
            if (t < 0 || repeat || !api->tensor_constant(v, t, &data, &bytes))
                continue;
            CHECK(n_seen < 64);
            seen[n_seen++] = t;
            want += bytes;
        }
    CHECK(n_seen == 2 && want == (32 * 16 * 9 + 32 * 9) * 4); /* conv2.w, dw.w */
    CHECK(PL_ABI_HAS_FN(pl_graph_api, api, constant_bytes) && api->constant_bytes(v) == want);
    /* compile_exported: 1 until the core says otherwise (a session's
     * compile without the cache) */
    CHECK(PL_ABI_HAS_FN(pl_graph_api, api, compile_exported) && api->compile_exported(v) == 1);
    pl_graph_view_set_exported(v, false);
    CHECK(api->compile_exported(v) == 0);
    pl_graph_view_set_exported(v, true);
    CHECK(api->compile_exported(v) == 1);
    /* JSON: the same five nodes, parseable */
    const char *text = api->json(v);
    CHECK(text != NULL);
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    CHECK(root != NULL);
    CHECK(json_array_size(json_object_get(root, "nodes")) == 5);
    CHECK(api->json(v) == text); /* made once */
    json_decref(root);
    pl_graph_view_destroy(v);
    pl_graph_destroy(g);
    pl_runtime_destroy(rt);
}

/* The compiled-subgraph cache's key (cache.c): the same subgraph loaded
 * twice keys the same; an attribute, one byte of a weight or the device
 * changes it. */
static void view_key(pl_runtime *rt, pl_graph *g, int32_t device, pl_cache_key *key)
{
    const char *names[] = {"conv2", "relu2", "dwconv", "residual", "clip"};
    pl_nid ids[5];
    for (int i = 0; i < 5; i++)
        ids[i] = pl_graph_find_node(g, names[i]);
    pl_graph_view *v = NULL;
    CHECK(pl_graph_view_create(g, ids, 5, &v) == NULL);
    pl_module *json = rt->modules[pl_runtime_find_module(rt, "json")];
    CHECK(pl_cache_key_make(json, device, v, key) == NULL);
    pl_graph_view_destroy(v);
}

static void case_cache_key(const char *stage_dir, const char *source_dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/examples/cnn/model.json", source_dir);
    char tmpl[] = "/tmp/plinth_core_XXXXXX";
    pl_runtime *rt = make_runtime_with(stage_dir, tmpl, "json");
    pl_graph *g = NULL, *g2 = NULL;
    CHECK(pl_model_read_graph(rt, path, &g) == NULL);
    CHECK(pl_model_read_graph(rt, path, &g2) == NULL);
    pl_cache_key k1, k2, k;
    view_key(rt, g, 0, &k1);
    view_key(rt, g2, 0, &k2);
    CHECK(strcmp(k1.hex, k2.hex) == 0);
    view_key(rt, g, 1, &k);
    CHECK(strcmp(k.hex, k1.hex) != 0);
    /* One byte of conv2's weights (at 2048 in the sidecar): a copy of the
     * model whose weights file differs there. */
    char dir[] = "/tmp/plinth_key_XXXXXX", cmd[8192], copy[4200];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cmd, sizeof cmd,
             "cp %s/examples/cnn/model.json %s/examples/cnn/model.weights %s/ && "
             "printf '\\377' | dd of=%s/model.weights bs=1 seek=2148 conv=notrunc 2>/dev/null",
             source_dir, source_dir, dir, dir);
    CHECK(system(cmd) == 0);
    snprintf(copy, sizeof copy, "%s/model.json", dir);
    pl_graph *g3 = NULL;
    CHECK(pl_model_read_graph(rt, copy, &g3) == NULL);
    view_key(rt, g3, 0, &k);
    CHECK(strcmp(k.hex, k1.hex) != 0);
    pl_graph_destroy(g3);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    /* An attribute. */
    pl_nid dw = pl_graph_find_node(g2, "dwconv");
    pl_graph_node_remove_attr(g2, dw, "group");
    CHECK(pl_graph_attr_int(g2, dw, "group", 16) == NULL);
    view_key(rt, g2, 0, &k);
    CHECK(strcmp(k.hex, k1.hex) != 0);
    pl_graph_destroy(g);
    pl_graph_destroy(g2);
    pl_runtime_destroy(rt);
}

/* ---- constants read from the model file (filedata.c) --------------------- */

#define FD_N 6
#define FD_BYTES ((size_t)256 << 10)

typedef struct fd_arg {
    pl_filedata *f;
    unsigned char *buf[FD_N];
    int id;
} fd_arg;

static unsigned char fd_byte(size_t region, size_t j)
{
    return (unsigned char)(region * 37 + j * 11 + (j >> 12));
}

static int fd_intact(const unsigned char *b, size_t region)
{
    for (size_t j = 0; j < FD_BYTES; j += 509)
        if (b[j] != fd_byte(region, j))
            return 0;
    return b[FD_BYTES - 1] == fd_byte(region, FD_BYTES - 1);
}

/* Creations (enter .. leave) from several threads: inside one, every
 * constant reads as the file says, except one this thread dropped alone
 * (done), which need reads back; each leaves pinning one region for a
 * while, as a live session would. */
static void *fd_worker(void *p)
{
    fd_arg *a = p;
    int token;
    for (int round = 0; round < 150; round++) {
        CHECK(pl_filedata_enter(a->f) == NULL);
        for (size_t r = 0; r < FD_N; r++)
            CHECK(fd_intact(a->buf[r], r));
        bool droppable[FD_N];
        for (size_t r = 0; r < FD_N; r++)
            droppable[r] = true;
        bool kept[FD_N] = {0};
        pl_filedata_set_compiling(a->f, &token, droppable, kept);
        size_t r = (size_t)(round + a->id) % FD_N;
        pl_filedata_done(a->f, &token, a->buf[r]);
        CHECK(pl_filedata_need(a->f, a->buf[r] + 100) == NULL);
        CHECK(fd_intact(a->buf[r], r));
        pl_filedata_set_compiling(a->f, NULL, NULL, NULL);
        size_t region = (size_t)a->id % FD_N; /* pins take the record's index */
        uint32_t pin = (uint32_t)pl_filedata_find(a->f, a->buf[region]);
        CHECK(pl_filedata_leave(a->f, &pin, 1) == NULL);
        CHECK(fd_intact(a->buf[region], region)); /* pinned: stays */
        pl_filedata_unpin(a->f, &pin, 1);
    }
    return NULL;
}

static void case_filedata(void)
{
    char path[] = "/tmp/plinth_fd_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    unsigned char *all = malloc(FD_N * FD_BYTES + 100);
    CHECK(all != NULL);
    memset(all, 7, 100);
    for (size_t r = 0; r < FD_N; r++)
        for (size_t j = 0; j < FD_BYTES; j++)
            all[100 + r * FD_BYTES + j] = fd_byte(r, j);
    CHECK(write(fd, all, FD_N * FD_BYTES + 100) == (ssize_t)(FD_N * FD_BYTES + 100));
    close(fd);
    pl_filedata *f = NULL;
    CHECK(pl_filedata_create(path, &f) == NULL);
    fd_arg args[4];
    unsigned char *buf[FD_N];
    for (size_t r = 0; r < FD_N; r++) {
        buf[r] = malloc(FD_BYTES);
        CHECK(buf[r] != NULL);
        CHECK(pl_filedata_read(f, 100 + r * FD_BYTES, FD_BYTES, buf[r], "c") == NULL);
        CHECK(pl_filedata_track(f, buf[r], FD_BYTES, 100 + r * FD_BYTES, "c") == NULL);
    }
    CHECK(pl_filedata_count(f) == FD_N);
    CHECK(pl_filedata_find(f, buf[2] + FD_BYTES - 1) == pl_filedata_find(f, buf[2]));
    /* past the end, refused by name */
    pl_status *st = pl_filedata_read(f, FD_N * FD_BYTES, 200, buf[0], "late");
    CHECK(st != NULL && strstr(pl_status_message(st), "late") != NULL);
    pl_status_free(st);
    /* nobody pins: all dropped, read back whole */
    CHECK(pl_filedata_enter(f) == NULL);
    CHECK(pl_filedata_leave(f, NULL, 0) == NULL);
    size_t resident, dropped;
    uint64_t back0, back1;
    pl_filedata_stats(f, &resident, &dropped, &back0);
    CHECK(resident == 0 && dropped == FD_N * FD_BYTES);
    CHECK(pl_filedata_enter(f) == NULL);
    for (size_t r = 0; r < FD_N; r++)
        CHECK(fd_intact(buf[r], r));
    pl_filedata_stats(f, &resident, &dropped, &back1);
    CHECK(back1 - back0 == FD_N * FD_BYTES); /* each read once more, no more */
    CHECK(pl_filedata_leave(f, NULL, 0) == NULL);
    /* A compiled subgraph reads region 1 in place (tensor_constant_keep):
     * marked kept, no longer droppable, brought back although dropped, and
     * a later done leaves it; memory the record does not hold is the
     * graph's for good; outside a creation alone nothing is promised. */
    int owner;
    CHECK(pl_filedata_enter(f) == NULL);
    bool droppable[FD_N], kept[FD_N] = {0};
    for (size_t r = 0; r < FD_N; r++)
        droppable[r] = true;
    pl_filedata_set_compiling(f, &owner, droppable, kept);
    pl_filedata_done(f, &owner, buf[1]);
    pl_filedata_stats(f, &resident, &dropped, NULL);
    CHECK(dropped == FD_BYTES);
    CHECK(pl_filedata_keep(f, &owner, buf[1]));
    long k1 = pl_filedata_find(f, buf[1]), k0 = pl_filedata_find(f, buf[0]),
         k2 = pl_filedata_find(f, buf[2]), k3 = pl_filedata_find(f, buf[3]);
    CHECK(kept[k1] && !droppable[k1] && !kept[k0] && droppable[k0]);
    pl_filedata_stats(f, &resident, &dropped, NULL);
    CHECK(dropped == 0 && fd_intact(buf[1], 1));
    pl_filedata_done(f, &owner, buf[1]);
    pl_filedata_stats(f, &resident, &dropped, NULL);
    CHECK(dropped == 0);
    CHECK(pl_filedata_keep(f, &owner, all)); /* not recorded */
    int other;
    CHECK(!pl_filedata_keep(f, &other, buf[2]) && !kept[k2]);
    pl_filedata_set_compiling(f, NULL, NULL, NULL);
    CHECK(!pl_filedata_keep(f, &owner, buf[3]) && !kept[k3]);
    uint32_t pin = (uint32_t)k1;
    CHECK(pl_filedata_leave(f, &pin, 1) == NULL);
    pl_filedata_stats(f, &resident, &dropped, NULL);
    CHECK(resident == FD_BYTES && dropped == (FD_N - 1) * FD_BYTES && fd_intact(buf[1], 1));
    pl_filedata_unpin(f, &pin, 1);
    pthread_t th[4];
    int nth = 4;
    for (int t = 0; t < nth; t++) {
        args[t].f = f;
        args[t].id = t;
        memcpy(args[t].buf, buf, sizeof buf);
        CHECK(pthread_create(&th[t], NULL, fd_worker, &args[t]) == 0);
    }
    for (int t = 0; t < nth; t++)
        pthread_join(th[t], NULL);
    /* the file rewritten in place: reading back is refused, naming it */
    sleep(1); /* a later modification time on file systems of 1 s */
    FILE *w = fopen(path, "r+b");
    CHECK(w != NULL && fwrite("x", 1, 1, w) == 1);
    fclose(w);
    st = pl_filedata_enter(f);
    CHECK(st != NULL && pl_status_code(st) == PL_CODE_FAILED_PRECONDITION &&
          strstr(pl_status_message(st), path) != NULL &&
          strstr(pl_status_message(st), "changed since") != NULL);
    pl_status_free(st);
    pl_status_free(pl_filedata_leave(f, NULL, 0));
    pl_filedata_destroy(f);
    for (size_t r = 0; r < FD_N; r++)
        free(buf[r]);
    free(all);
    unlink(path);
}

/* External data's digests kept in the cache folder: a load with the folder
 * computes and keeps them (pl_filedata_store_digests), with the bytes of
 * the constants at unaligned offsets; the next load of the same file knows
 * them before anything reads a weight and finds those bytes aligned
 * (pl_filedata_ext_kept); a file with another modification time, or a
 * damaged memo (its last kept byte), is not believed. */
static void case_filedata_digests(void)
{
    char dir[] = "/tmp/plinth_fdm_XXXXXX", data[4200], model[4200];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(data, sizeof data, "%s/w.data", dir);
    snprintf(model, sizeof model, "%s/m.onnx", dir);
    enum { N = 3 };
    const size_t bytes = (size_t)128 << 10, off[N] = {0, 131072 + 12, 262144 + 76};
    size_t total = off[N - 1] + bytes;
    unsigned char *all = malloc(total);
    CHECK(all != NULL);
    for (size_t j = 0; j < total; j++)
        all[j] = (unsigned char)(j * 2654435761u >> 13);
    FILE *w = fopen(data, "wb");
    CHECK(w != NULL && fwrite(all, 1, total, w) == total);
    fclose(w);
    w = fopen(model, "wb");
    CHECK(w != NULL && fwrite("m", 1, 1, w) == 1);
    fclose(w);
    uint64_t want[N];
    for (int i = 0; i < N; i++) {
        want[i] = PL_HASH_SEED;
        pl_hash_bytes(&want[i], all + off[i], bytes);
    }
    for (int round = 0; round < 4; round++) {
        if (round == 2) { /* the data file touched: another file */
            struct timespec ts[2] = {{0, UTIME_NOW}, {12345, 678}};
            CHECK(utimensat(AT_FDCWD, data, ts, 0) == 0);
        }
        if (round == 3) { /* the memos damaged (one per identity the file had) */
            DIR *d = opendir(dir);
            struct dirent *de;
            int found = 0;
            while (d != NULL && (de = readdir(d)) != NULL)
                if (strncmp(de->d_name, "extdata-", 8) == 0) {
                    char memo[4300];
                    snprintf(memo, sizeof memo, "%s/%s", dir, de->d_name);
                    FILE *m = fopen(memo, "r+b");
                    CHECK(m != NULL && fseek(m, -3, SEEK_END) == 0 && fputc(0x5a, m) != EOF);
                    fclose(m);
                    found++;
                }
            if (d != NULL)
                closedir(d);
            CHECK(found == 2);
        }
        struct stat st;
        int dfd = open(data, O_RDONLY);
        CHECK(dfd >= 0 && fstat(dfd, &st) == 0);
        /* as the builder maps it: private, read-only */
        unsigned char *map = mmap(NULL, total, PROT_READ, MAP_PRIVATE, dfd, 0);
        CHECK(map != MAP_FAILED);
        close(dfd);
        pl_filedata *f = NULL;
        CHECK(pl_filedata_create(model, &f) == NULL);
        pl_filedata_open_copy(f, dir);
        /* the unaligned ones kept aligned, with their bytes, after round 0 */
        for (int i = 0; i < N; i++) {
            const unsigned char *kept = pl_filedata_ext_kept(f, &st, map, off[i], bytes);
            CHECK((kept != NULL) == (round == 1 && off[i] % 64 != 0));
            CHECK(kept == NULL ||
                  ((uintptr_t)kept % 4096 == 0 && memcmp(kept, all + off[i], bytes) == 0));
        }
        for (int i = 0; i < N; i++)
            CHECK(pl_filedata_track_mapped(f, map + off[i], bytes, NULL, "w", &st, map,
                                           off[i]) == NULL);
        uint64_t got;
        /* known at once after a load that kept them: round 1 (rounds 2 and 3
         * find no memo of the file as it is, or a damaged one) */
        for (int i = 0; i < N; i++)
            CHECK(pl_filedata_digest(f, map + off[i], bytes, &got) ==
                  (round == 1) && (round != 1 || got == want[i]));
        pl_filedata_store_digests(f, 0);
        for (int i = 0; i < N; i++)
            CHECK(pl_filedata_digest(f, map + off[i], bytes, &got) && got == want[i]);
        pl_filedata_destroy(f);
        munmap(map, total);
    }
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    free(all);
}

/* The name map: 20000 names of every length up to 120 (the hash reads
 * eight bytes at a time and a tail), sharing long prefixes as graph names
 * do; each found with its value, values replaced in place (the count
 * stays), absent names and prefixes of present ones not found. */
/* hostbuf.c: a large output buffer given back is what the next request of
 * about its size gets (not one a quarter bigger or more, nor a smaller
 * one); small ones are not kept; buffers come 64-byte aligned and whole;
 * threads giving and taking at once neither lose nor share one. */
static void *hb_worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 2000; i++) {
        size_t n = ((size_t)64 << 10) + (size_t)(i % 7) * 4096;
        unsigned char *p = pl_hostbuf_get(n);
        CHECK(p != NULL && ((uintptr_t)p & 63) == 0);
        memset(p, i & 255, n);
        CHECK(p[0] == (i & 255) && p[n - 1] == (i & 255));
        pl_hostbuf_put(p);
    }
    return NULL;
}

static void case_hostbuf(void)
{
    pl_hostbuf_flush();
    size_t mb = (size_t)1 << 20;
    void *a = pl_hostbuf_get(mb);
    CHECK(a != NULL && ((uintptr_t)a & 63) == 0);
    memset(a, 1, mb);
    pl_hostbuf_put(a);
    void *b = pl_hostbuf_get(mb - 4096); /* fits: the same buffer */
    CHECK(b == a);
    pl_hostbuf_put(b);
    void *c = pl_hostbuf_get(mb / 2); /* a buffer twice as big is not handed out */
    CHECK(c != a);
    void *d = pl_hostbuf_get(mb + (mb / 16)); /* grown by a sixteenth: a was made an eighth larger */
    CHECK(d == a);
    void *e = pl_hostbuf_get(2 * mb); /* bigger than anything kept */
    CHECK(e != a && e != c);
    memset(e, 2, 2 * mb);
    void *small = pl_hostbuf_get(1000);
    CHECK(small != NULL && ((uintptr_t)small & 63) == 0);
    pl_hostbuf_put(small);
    pl_hostbuf_put(c);
    pl_hostbuf_put(d);
    pl_hostbuf_put(e);
    pl_hostbuf_put(NULL);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&t[i], NULL, hb_worker, NULL) == 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    pl_hostbuf_flush();
}

static void case_strmap(void)
{
    enum { N = 20000 };
    static char names[N][128];
    pl_strmap m = {0};
    for (int i = 0; i < N; i++) {
        int len = snprintf(names[i], sizeof names[i], "/m/features/features.%d/block.%d/Conv_%d",
                           i % 7, i % 13, i);
        for (int k = len; k < 8 + i % 113 && k < 126; k++)
            names[i][k] = (char)('a' + (i + k) % 26); /* lengths 8..120 */
        CHECK(pl_strmap_put(&m, names[i], (uint32_t)i));
    }
    CHECK(m.count == N);
    for (int i = 0; i < N; i++) {
        uint32_t v = 0;
        CHECK(pl_strmap_get(&m, names[i], &v) && v == (uint32_t)i);
    }
    for (int i = 0; i < N; i += 3)
        CHECK(pl_strmap_put(&m, names[i], (uint32_t)(i + N)));
    CHECK(m.count == N);
    for (int i = 0; i < N; i++) {
        uint32_t v = 0;
        CHECK(pl_strmap_get(&m, names[i], &v) && v == (uint32_t)(i % 3 == 0 ? i + N : i));
        char shorter[128];
        size_t len = strlen(names[i]);
        memcpy(shorter, names[i], len - 1);
        shorter[len - 1] = '\0';
        uint32_t w;
        if (pl_strmap_get(&m, shorter, &w)) /* only when it is another name */
            CHECK(strcmp(names[w >= N ? w - N : w], shorter) == 0);
    }
    uint32_t v;
    CHECK(!pl_strmap_get(&m, "", &v));
    CHECK(!pl_strmap_get(&m, "/m/absent", &v));
    pl_strmap_free(&m);
    CHECK(!pl_strmap_get(&m, names[0], &v));
}

/* ---- letting go of a rewritten graph's sources ----------------------------------- */

/* A graph G copied from SRC borrows SRC's constants; pl_graph_take_from
 * moves them to G, which then outlives SRC (ASan checks the reads). A copy
 * that reads inside one of SRC's constants, not at its start, keeps SRC. */
static void case_take_sources(const char *stage_dir, const char *source_dir)
{
    (void)source_dir;
    pl_graph *src = NULL, *g = NULL;
    CHECK(pl_graph_create(&src) == NULL);
    pl_tid a, b;
    CHECK(pl_graph_tensor_get_or_add(src, "a", &a) == NULL);
    CHECK(pl_graph_tensor_get_or_add(src, "b", &b) == NULL);
    const float va[4] = {1, 2, 3, 4}, vb[2] = {5, 6};
    int64_t d4 = 4, d2 = 2;
    CHECK(pl_graph_set_type(src, a, PL_DTYPE_F32, 1, &d4, NULL) == NULL);
    CHECK(pl_graph_set_type(src, b, PL_DTYPE_F32, 1, &d2, NULL) == NULL);
    CHECK(pl_graph_set_constant(src, a, va, sizeof va) == NULL);
    CHECK(pl_graph_set_constant(src, b, vb, sizeof vb) == NULL);
    CHECK(pl_graph_copy(src, &g) == NULL);
    const pl_graph_tensor *ga = pl_graph_get_tensor(g, a);
    CHECK(ga->data_borrowed && ga->data == pl_graph_get_tensor(src, a)->data);
    bool taken = false;
    CHECK(pl_graph_take_from(g, src, &taken) == NULL && taken);
    CHECK(!pl_graph_get_tensor(g, a)->data_borrowed && pl_graph_get_tensor(src, a)->data_borrowed);
    pl_graph_destroy(src);
    CHECK(memcmp(pl_graph_get_tensor(g, a)->data, va, sizeof va) == 0);
    CHECK(memcmp(pl_graph_get_tensor(g, b)->data, vb, sizeof vb) == 0);
    /* a view into the middle of g's A: g must stay */
    pl_graph *h = NULL;
    CHECK(pl_graph_create(&h) == NULL);
    pl_tid v;
    CHECK(pl_graph_tensor_get_or_add(h, "v", &v) == NULL);
    CHECK(pl_graph_set_type(h, v, PL_DTYPE_F32, 1, &d2, NULL) == NULL);
    CHECK(pl_graph_set_constant_ref(h, v, (const float *)pl_graph_get_tensor(g, a)->data + 2,
                                    2 * sizeof(float)) == NULL);
    CHECK(pl_graph_take_from(h, g, &taken) == NULL && !taken);
    CHECK(!pl_graph_get_tensor(g, a)->data_borrowed && pl_graph_get_tensor(h, v)->data_borrowed);
    pl_graph_destroy(h);
    pl_graph_destroy(g);

    /* A model whose passes rewrote its graph keeps none of the graphs it
     * was rewritten from, and runs: a Constant, transposed (folded on the
     * cpu module), feeding a MatMul. */
    char tmpl[] = "/tmp/plinth_core_XXXXXX";
    CHECK(mkdtemp(tmpl) != NULL);
    char ini[4096], path[4096];
    snprintf(ini, sizeof ini, "%s/backend.ini", tmpl);
    snprintf(path, sizeof path, "%s/fold.json", tmpl);
    FILE *f = fopen(ini, "w");
    CHECK(f != NULL);
    fprintf(f, "[runtime]\nmodules = %s/libplinth_cpu.so, %s/libplinth_json.so\nthreads = 2\n"
               "[placement]\norder = cpu\n",
            stage_dir, stage_dir);
    fclose(f);
    f = fopen(path, "w");
    CHECK(f != NULL);
    fprintf(f, "{\"format\":\"plinth-graph\",\"version\":1,"
               "\"opset_import\":[{\"domain\":\"\",\"version\":13}],"
               "\"inputs\":[\"x\"],\"outputs\":[\"y\"],"
               "\"tensors\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[1,3]}],"
               "\"nodes\":[{\"name\":\"k\",\"op\":\"Constant\",\"inputs\":[],\"outputs\":[\"wt\"],"
               "\"attributes\":{\"value\":{\"tensor\":{\"dtype\":\"f32\",\"shape\":[2,3],"
               "\"values\":[1,2,3,4,5,6]}}}},"
               "{\"name\":\"tr\",\"op\":\"Transpose\",\"inputs\":[\"wt\"],\"outputs\":[\"w\"]},"
               "{\"name\":\"mm\",\"op\":\"MatMul\",\"inputs\":[\"x\",\"w\"],\"outputs\":[\"y\"]}]}");
    fclose(f);
    pl_runtime_options o = {.struct_size = sizeof o, .config_path = ini,
                            .ignore_environment = true};
    pl_runtime *rt = NULL;
    pl_status *st = pl_runtime_create(&o, &rt);
    pl_model *m = NULL;
    if (st == NULL)
        st = pl_model_load(rt, path, &m);
    if (st != NULL)
        fprintf(stderr, "%s\n", pl_status_message(st));
    CHECK(st == NULL);
    CHECK(pl_graph_node_count(m->graph) == 1 && m->n_sources == 0);
    pl_session *s = NULL;
    CHECK(pl_session_create(m, NULL, &s) == NULL);
    float x[3] = {1, 10, 100}, y[2] = {0, 0};
    int64_t xd[2] = {1, 3}, yd[2] = {1, 2};
    pl_io in = {"x", {.data = x, .dtype = PL_DTYPE_F32, .ndim = 2, .shape = xd}};
    pl_io out = {"y", {.data = y, .dtype = PL_DTYPE_F32, .ndim = 2, .shape = yd}};
    CHECK(pl_session_run(s, &in, 1, &out, 1) == NULL);
    CHECK(y[0] == 321 && y[1] == 654);
    pl_session_destroy(s);
    pl_model_destroy(m);
    pl_runtime_destroy(rt);
    unlink(ini);
    unlink(path);
    rmdir(tmpl);
}

int main(int argc, char **argv)
{
    alarm(120);
    if (argc < 2) {
        fprintf(stderr, "usage: %s CASE [STAGE_DIR]\n", argv[0]);
        return 2;
    }
    const char *c = argv[1];
    if (strcmp(c, "pool_cover") == 0)
        case_pool_cover();
    else if (strcmp(c, "pool_chunks") == 0)
        case_pool_chunks();
    else if (strcmp(c, "pool_nested") == 0)
        case_pool_nested();
    else if (strcmp(c, "pool_concurrent") == 0)
        case_pool_concurrent();
    else if (strcmp(c, "module_outlives_runtime") == 0 && argc > 2)
        case_module_outlives_runtime(argv[2]);
    else if (strcmp(c, "module_two_runtimes") == 0 && argc > 2)
        case_module_two_runtimes(argv[2]);
    else if (strcmp(c, "graph_view") == 0 && argc > 3)
        case_graph_view(argv[2], argv[3]);
    else if (strcmp(c, "cache_key") == 0 && argc > 3)
        case_cache_key(argv[2], argv[3]);
    else if (strcmp(c, "filedata") == 0)
        case_filedata();
    else if (strcmp(c, "filedata_digests") == 0)
        case_filedata_digests();
    else if (strcmp(c, "strmap") == 0)
        case_strmap();
    else if (strcmp(c, "hostbuf") == 0)
        case_hostbuf();
    else if (strcmp(c, "take_sources") == 0 && argc > 3)
        case_take_sources(argv[2], argv[3]);
    else {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    printf("ok %s\n", c);
    return 0;
}
