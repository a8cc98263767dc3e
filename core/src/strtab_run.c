/* strtab_run.c — the run's boundary of string tensors (strtab.h): the
 * caller's strings into ids, string outputs' ids back into strings. */
#include <inttypes.h>
#include <pthread.h>
#include <string.h>

#include "alloc.h"
#include "hostbuf.h"
#include "status.h"
#include "strtab.h"
#include "graph.h"
#include "strmap.h"

static pl_status *run_oom(void)
{
    return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory for a run's strings");
}

/* ---- the run's strings ------------------------------------------------------ */

/* Strings of one run that the table lacks: ids from the table's count on.
 * The caller's are borrowed for the run; those kernels make (intern) are
 * copies. Kernels on any thread read and add them (pl_run_strings), so
 * the list is under a lock; a string never moves once added. */
typedef struct run_strs {
    pl_run_strings api;
    const pl_strtab *tab;
    pthread_mutex_t mu;
    pl_strmap ids;
    const char **strs;
    size_t n, cap;
    char **owned;
    size_t n_owned, cap_owned;
} run_strs;

/* The run whose strings this thread's kernels and nested sessions use. */
static _Thread_local const pl_run_strings *run_current;

const pl_run_strings *pl_strings_current(void)
{
    return run_current;
}

/* The id of S; when new, S is added (borrowed; OWN: R frees it at the
 * end). -1 when out of memory (S, when owned, then freed). */
static int64_t run_add(run_strs *r, const char *s, bool own)
{
    int64_t id = pl_strtab_find(r->tab, s);
    if (id >= 0) {
        if (own)
            pl_free((char *)s);
        return id;
    }
    pthread_mutex_lock(&r->mu);
    uint32_t k;
    if (pl_strmap_get(&r->ids, s, &k)) {
        id = (int64_t)(pl_strtab_count(r->tab) + k);
        if (own)
            pl_free((char *)s);
        goto done;
    }
    id = -1;
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        const char **grown = pl_realloc(r->strs, cap * sizeof *grown);
        if (grown == NULL)
            goto fail;
        r->strs = grown;
        r->cap = cap;
    }
    if (own && r->n_owned == r->cap_owned) {
        size_t cap = r->cap_owned ? r->cap_owned * 2 : 16;
        char **grown = pl_realloc(r->owned, cap * sizeof *grown);
        if (grown == NULL)
            goto fail;
        r->owned = grown;
        r->cap_owned = cap;
    }
    if (r->n >= UINT32_MAX || !pl_strmap_put(&r->ids, s, (uint32_t)r->n))
        goto fail;
    if (own)
        r->owned[r->n_owned++] = (char *)s;
    r->strs[r->n] = s;
    id = (int64_t)(pl_strtab_count(r->tab) + r->n++);
    goto done;
fail:
    if (own)
        pl_free((char *)s);
done:
    pthread_mutex_unlock(&r->mu);
    return id;
}

static const char *run_str(run_strs *r, int64_t id)
{
    size_t base = pl_strtab_count(r->tab);
    if (id < 0)
        return NULL;
    if ((uint64_t)id < base)
        return pl_strtab_at(r->tab, (size_t)id);
    pthread_mutex_lock(&r->mu);
    const char *s = (uint64_t)id - base < r->n ? r->strs[id - (int64_t)base] : NULL;
    pthread_mutex_unlock(&r->mu);
    return s;
}

static const char *run_api_get(void *self, int64_t id, size_t *out_len)
{
    const char *s = run_str(self, id);
    if (out_len != NULL)
        *out_len = s ? strlen(s) : 0;
    return s;
}

static int64_t run_api_intern(void *self, const char *s, size_t len)
{
    char *copy = pl_xstrndup(s, len);
    return copy ? run_add(self, copy, true) : -1;
}

/* A run's strings of table TAB, none yet. */
static void run_begin(run_strs *r, const pl_strtab *tab)
{
    *r = (run_strs){.api = {.header = PL_ABI_HEADER_INIT(pl_run_strings),
                            .get = run_api_get,
                            .intern = run_api_intern},
                    .tab = tab};
    r->api.self = r;
    pthread_mutex_init(&r->mu, NULL);
}

static void run_end(run_strs *r)
{
    pl_free(r->strs);
    for (size_t i = 0; i < r->n_owned; i++)
        pl_free(r->owned[i]);
    pl_free(r->owned);
    pl_strmap_free(&r->ids);
    pthread_mutex_destroy(&r->mu);
}

pl_status *pl_strings_scope(const pl_strtab *tab, pl_status *(*fn)(void *), void *arg)
{
    run_strs r;
    run_begin(&r, tab);
    const pl_run_strings *outer = run_current;
    run_current = &r.api;
    pl_status *st = fn(arg);
    run_current = outer;
    run_end(&r);
    return st;
}

/* Output OUT (int64 ids, in a buffer of the run) as strings: one buffer of
 * pointers and then the bytes they point at, replacing OUT's data. */
static pl_status *run_output_strings(run_strs *r, const char *name, pl_tensor *out)
{
    size_t count = 1;
    for (int32_t d = 0; d < out->ndim; d++)
        count *= (size_t)out->shape[d];
    const int64_t *ids = out->data;
    size_t bytes = count * sizeof(const char *);
    for (size_t i = 0; i < count; i++) {
        const char *s = run_str(r, ids[i]);
        if (s == NULL)
            return pl_status_create(PL_CODE_INTERNAL,
                                    "string output '%s': element %zu holds %" PRId64
                                    ", which is no string's id",
                                    name, i, ids[i]);
        bytes += strlen(s) + 1;
    }
    char *buf = pl_hostbuf_get(bytes ? bytes : 1);
    if (buf == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory for string output '%s'",
                                name);
    const char **ptrs = (const char **)buf;
    char *p = buf + count * sizeof(const char *);
    for (size_t i = 0; i < count; i++) {
        const char *s = run_str(r, ids[i]);
        size_t len = strlen(s) + 1;
        memcpy(p, s, len);
        ptrs[i] = p;
        p += len;
    }
    pl_hostbuf_put(out->data);
    out->data = buf;
    out->dtype = PL_DTYPE_STRING;
    return NULL;
}

pl_status *pl_strings_run(struct pl_session *s, const pl_strtab *tab, const bool *in_string,
                          const bool *out_string, const pl_io *inputs, size_t n_inputs,
                          pl_io *outputs, size_t n_outputs,
                          pl_status *(*run)(struct pl_session *, const pl_io *, size_t, pl_io *,
                                            size_t))
{
    run_strs r;
    run_begin(&r, tab);
    pl_io *ins = pl_calloc(n_inputs ? n_inputs : 1, sizeof *ins);
    pl_io *outs = pl_calloc(n_outputs ? n_outputs : 1, sizeof *outs);
    int64_t **owned = pl_calloc(n_inputs ? n_inputs : 1, sizeof *owned);
    pl_status *st = ins && outs && owned ? NULL : run_oom();
    for (size_t i = 0; st == NULL && i < n_inputs; i++) {
        ins[i] = inputs[i];
        if (!in_string[i])
            continue;
        const pl_tensor *t = &inputs[i].tensor;
        if (t->dtype.code != PL_TYPE_STRING || pl_dtype_size(t->dtype) == 0) {
            st = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                  "input '%s' is a string tensor: give its elements as "
                                  "const char * (dtype PL_DTYPE_STRING), not %s",
                                  inputs[i].name, pl_dtype_name(t->dtype));
            break;
        }
        size_t count = 1;
        for (int32_t d = 0; d < t->ndim && t->shape != NULL; d++)
            count *= t->shape[d] > 0 ? (size_t)t->shape[d] : 0;
        int64_t *ids = owned[i] = pl_malloc((count ? count : 1) * sizeof *ids);
        if (ids == NULL) {
            st = run_oom();
            break;
        }
        const char *const *strs =
            (const char *const *)((const char *)t->data + t->byte_offset);
        for (size_t k = 0; st == NULL && k < count; k++) {
            if (strs == NULL || strs[k] == NULL)
                st = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                      "input '%s': string element %zu is NULL", inputs[i].name,
                                      k);
            else if ((ids[k] = run_add(&r, strs[k], false)) < 0)
                st = run_oom();
        }
        ins[i].tensor.data = ids;
        ins[i].tensor.byte_offset = 0;
        ins[i].tensor.dtype = PL_DTYPE_I64;
    }
    for (size_t i = 0; st == NULL && i < n_outputs; i++) {
        outs[i] = outputs[i];
        if (out_string[i] && outputs[i].tensor.data != NULL)
            st = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                  "output '%s' is a string tensor: leave its data NULL, the "
                                  "run allocates it (pl_buffer_free frees it)",
                                  outputs[i].name);
    }
    if (st == NULL) {
        const pl_run_strings *outer = run_current;
        run_current = &r.api;
        st = run(s, ins, n_inputs, outs, n_outputs);
        run_current = outer;
    }
    for (size_t i = 0; st == NULL && i < n_outputs; i++)
        if (out_string[i])
            st = run_output_strings(&r, outs[i].name, &outs[i].tensor);
    for (size_t i = 0; outs != NULL && i < n_outputs; i++) {
        if (st == NULL)
            outputs[i] = outs[i];
        else if (outputs[i].tensor.data == NULL && outs[i].tensor.data != NULL)
            pl_hostbuf_put(outs[i].tensor.data);
    }
    for (size_t i = 0; owned != NULL && i < n_inputs; i++)
        pl_free(owned[i]);
    pl_free(owned);
    pl_free(ins);
    pl_free(outs);
    run_end(&r);
    return st;
}
