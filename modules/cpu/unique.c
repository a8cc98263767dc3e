/* unique.c — the cpu module's Unique: ai.plinth UniquePadded, the form the
 * core lowers ONNX's Unique to (unique values, first indices and counts in
 * buffers of the most there can be, inverse_indices in full, and their
 * number; the core slices the buffers). Items are the elements of the
 * flattened input (flat = 1) or its slices along the axis, compared
 * lexicographically in value order (exact for every dtype up to i64 and
 * f64; NaN equal to NaN and above every number, -0 equal to +0, as NumPy's
 * unique groups them); sorted = 1 lists them ascending, 0 in the order
 * they first appear. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "index_kernel.h"

static pl_status *uq_build(pl_module_ctx *ctx, const pl_node_desc *node,
                           pl_kernel **out_kernel);

const cpu_op_entry cpu_ops_unique[] = {
    {"UniquePadded", uq_build, 1, 1, 0,
     CPU_OP_ANY_DTYPE | CPU_OP_MULTI_OUTPUT | CPU_OP_PLINTH_DOMAIN},
    {NULL, NULL, 0, 0, 0, 0},
};

typedef struct uq_kernel {
    shp_kernel k;
    size_t outer, n, inner; /* items: n of outer x inner elements each */
    bool sorted;
    pl_dtype dt;
} uq_kernel;

/* The values being ordered, and the length of an item. */
typedef struct uq_rows {
    const long double *v;
    size_t len;
} uq_rows;

static int uq_cmp_value(long double a, long double b)
{
    bool na = isnan(a), nb = isnan(b);
    if (na || nb)
        return na == nb ? 0 : na ? 1 : -1;
    return a < b ? -1 : a > b;
}

/* Items I and J in value order, equal items by index. */
static int uq_cmp(const uq_rows *r, size_t i, size_t j)
{
    const long double *a = r->v + i * r->len, *b = r->v + j * r->len;
    for (size_t e = 0; e < r->len; e++) {
        int c = uq_cmp_value(a[e], b[e]);
        if (c != 0)
            return c;
    }
    return 0;
}

/* Sorts the N item indices at IDX by uq_cmp, stable (TMP holds N). */
static void uq_sort(const uq_rows *r, size_t *idx, size_t *tmp, size_t n)
{
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                tmp[o++] = uq_cmp(r, idx[b], idx[a]) < 0 ? idx[b++] : idx[a++];
            while (a < mid)
                tmp[o++] = idx[a++];
            while (b < hi)
                tmp[o++] = idx[b++];
        }
        memcpy(idx, tmp, n * sizeof *idx);
    }
}

static int uq_cmp_size(const void *pa, const void *pb)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    return a < b ? -1 : a > b;
}

static char *uq_out(const pl_run_args *args, size_t o)
{
    return (char *)args->outputs[o].data + args->outputs[o].byte_offset;
}

static pl_status *uq_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    const uq_kernel *k = (const uq_kernel *)kernel;
    const char *op = kernel->op;
    for (size_t o = 0; o < 5; o++)
        if (args->requests[o] != PL_REQ_WRITE || (args->outputs[o].data == NULL && k->n > 0))
            return cpu_error(PL_CODE_UNSUPPORTED, op, "output %zu must be written in full, once",
                             o);
    size_t n = k->n, len = k->outer * k->inner, es = pl_dtype_size(k->dt);
    int64_t number = 0;
    memcpy(uq_out(args, 4), &number, sizeof number);
    if (n == 0)
        return NULL;
    if (args->inputs[0].data == NULL)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "input 0 has no data");
    long double *v = cpu_host->host_alloc(ctx->host_ctx, n * (len ? len : 1) * sizeof *v, 0);
    size_t *idx = cpu_host->host_alloc(ctx->host_ctx, 5 * n * sizeof *idx, 0);
    if (v == NULL || idx == NULL) {
        cpu_host->host_free(ctx->host_ctx, v);
        cpu_host->host_free(ctx->host_ctx, idx);
        return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory ordering %zu items", n);
    }
    size_t *tmp = idx + n, *group = idx + 2 * n, *first = idx + 3 * n, *pos = idx + 4 * n;
    const char *x = shp_in(args, 0);
    /* item j: elements (o, j, i) in (o, i) order */
    for (size_t j = 0; j < n; j++)
        for (size_t o = 0; o < k->outer; o++)
            for (size_t i = 0; i < k->inner; i++) {
                size_t at = (o * n + j) * k->inner + i;
                long double e;
                if (PL_DTYPE_EQ(k->dt, PL_DTYPE_I64)) {
                    int64_t t;
                    memcpy(&t, x + at * 8, 8);
                    e = (long double)t;
                } else {
                    e = (long double)ix_load(k->dt, x, at); /* exact below 64 bits */
                }
                v[j * len + o * k->inner + i] = e;
            }
    uq_rows r = {v, len};
    for (size_t j = 0; j < n; j++)
        idx[j] = j;
    uq_sort(&r, idx, tmp, n);
    /* groups in value order: the first of each is its lowest index */
    size_t groups = 0;
    for (size_t s = 0; s < n; s++) {
        if (s == 0 || uq_cmp(&r, idx[s - 1], idx[s]) != 0)
            first[groups++] = idx[s];
        group[idx[s]] = groups - 1;
    }
    /* the output position of each group: value order, or first appearance */
    if (k->sorted) {
        for (size_t g = 0; g < groups; g++)
            pos[g] = g;
    } else {
        memcpy(tmp, first, groups * sizeof *tmp);
        qsort(tmp, groups, sizeof *tmp, uq_cmp_size);
        for (size_t g = 0; g < groups; g++) /* tmp[p] is a first index: its group */
            pos[group[tmp[g]]] = g;
    }
    char *y = uq_out(args, 0);
    int64_t *ind = (int64_t *)(void *)uq_out(args, 1), *inv = (int64_t *)(void *)uq_out(args, 2),
            *cnt = (int64_t *)(void *)uq_out(args, 3);
    memset(y, 0, k->outer * n * k->inner * es);
    memset(ind, 0, n * sizeof *ind);
    memset(cnt, 0, n * sizeof *cnt);
    for (size_t g = 0; g < groups; g++) {
        size_t p = pos[g];
        ind[p] = (int64_t)first[g];
        for (size_t o = 0; o < k->outer; o++)
            memcpy(y + (o * n + p) * k->inner * es, x + (o * n + first[g]) * k->inner * es,
                   k->inner * es);
    }
    for (size_t j = 0; j < n; j++) {
        inv[j] = (int64_t)pos[group[j]];
        cnt[pos[group[j]]]++;
    }
    number = (int64_t)groups;
    memcpy(uq_out(args, 4), &number, sizeof number);
    cpu_host->host_free(ctx->host_ctx, v);
    cpu_host->host_free(ctx->host_ctx, idx);
    return NULL;
}

static pl_status *uq_build(pl_module_ctx *ctx, const pl_node_desc *node,
                           pl_kernel **out_kernel)
{
    const char *op = node->op;
    const pl_tensor *x = &node->inputs[0];
    int64_t axis, flat, sorted;
    SHP_TRY(cpu_attr_int(node, "axis", 0, &axis));
    SHP_TRY(cpu_attr_int(node, "flat", 1, &flat));
    SHP_TRY(cpu_attr_int(node, "sorted", 1, &sorted));
    size_t es = pl_dtype_size(x->dtype);
    if (es == 0 || es > 8 || node->n_outputs != 5)
        return cpu_error(PL_CODE_UNSUPPORTED, op,
                         "an input of %u-bit elements, or not 5 outputs", (unsigned)x->dtype.bits);
    if (x->ndim < 0 || (!flat && (axis < -x->ndim || axis >= x->ndim)))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "axis %lld is out of range for rank %d",
                         (long long)axis, (int)x->ndim);
    size_t outer = 1, n = 1, inner = 1;
    int32_t a = flat ? -1 : (int32_t)(axis < 0 ? axis + x->ndim : axis);
    for (int32_t d = 0; d < x->ndim; d++) {
        size_t dim = (size_t)x->shape[d];
        if (flat || d == a)
            n *= dim;
        else if (d < a)
            outer *= dim;
        else
            inner *= dim;
    }
    if (node->outputs[1].ndim != 1 || node->outputs[1].shape[0] != (int64_t)n)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "outputs do not hold %zu items", n);
    uq_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, NULL, (shp_kernel **)&k));
    k->k.base.run_any = uq_run;
    k->outer = outer;
    k->n = n;
    k->inner = inner;
    k->sorted = sorted != 0;
    k->dt = x->dtype;
    *out_kernel = &k->k.base;
    return NULL;
}
