/* topk.c — the cpu module's selections along one axis: TopK (the K largest
 * or smallest elements and their indices) and Hardmax (one at the first
 * maximum, zeros elsewhere), for every numeric dtype.
 *
 * TopK orders by value and, among equal values, by lower index, as ONNX
 * says; NaN counts as larger than every number (NumPy's order). Its output
 * is always sorted, which sorted=0 allows. K is read at run time when it
 * is an input and must match the output's shape, which the core inferred
 * from a constant K or took from the graph's declared type. Values are
 * compared as long double, exact for every dtype up to i64. A small K
 * keeps a bounded heap of the K best instead of sorting the line. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "index_kernel.h"

/* Loads element I of DT at P as long double (exact for i64). f32, f64, i32
 * and i64 directly: through shp_convert, one element a call, the load was
 * 46% of a TopK of 5 out of 1728 (0.31 ms of tf_ops). */
static long double tk_key(pl_dtype dt, const char *p, size_t i)
{
#define TK_LOAD(DT, T)                                                                      \
    if (PL_DTYPE_EQ(dt, DT)) {                                                              \
        T v;                                                                                \
        memcpy(&v, p + i * sizeof v, sizeof v);                                             \
        return (long double)v;                                                              \
    }
    TK_LOAD(PL_DTYPE_F32, float)
    TK_LOAD(PL_DTYPE_F64, double)
    TK_LOAD(PL_DTYPE_I32, int32_t)
    TK_LOAD(PL_DTYPE_I64, int64_t)
#undef TK_LOAD
    return (long double)ix_load(dt, p, i);
}

/* ---- TopK ------------------------------------------------------------------- */

typedef struct tk_kernel {
    shp_kernel k;
    size_t outer, len, inner;
    int64_t k_out;   /* K as the output's shape says */
    bool largest;
    bool k_input;    /* K is input 1 (opset 10 on) */
    pl_dtype dt;
} tk_kernel;

/* One element of a line being ordered: CLS puts NaN first (largest) or
 * last (smallest), KEY is the value negated for largest, so that one
 * ascending order serves both. */
typedef struct tk_item {
    long double key;
    int64_t index;
    int cls;
} tk_item;

static int tk_cmp(const void *pa, const void *pb)
{
    const tk_item *a = pa, *b = pb;
    if (a->cls != b->cls)
        return a->cls < b->cls ? -1 : 1;
    if (a->cls == 1 && a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* Whether A orders before B (tk_cmp < 0), inline for the heap. */
static inline bool tk_before(const tk_item *a, const tk_item *b)
{
    if (a->cls != b->cls)
        return a->cls < b->cls;
    if (a->cls == 1 && a->key != b->key)
        return a->key < b->key;
    return a->index < b->index;
}

/* Restores the heap property below slot I of HEAP (N items) whose root is
 * the item ordered last: the worst of the K kept so far. */
static void tk_sift_down(tk_item *heap, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && tk_before(&heap[m], &heap[l]))
            m = l;
        if (r < n && tk_before(&heap[m], &heap[r]))
            m = r;
        if (m == i)
            return;
        tk_item t = heap[i];
        heap[i] = heap[m];
        heap[m] = t;
        i = m;
    }
}

/* Orders the first KK of ITEMS[0..LEN) into ITEMS[0..KK): a bounded heap of
 * the KK best (O(len log kk)) when KK is small against LEN, else a full
 * sort. */
static void tk_select(tk_item *items, size_t len, size_t kk)
{
    if (kk * 8 >= len) {
        qsort(items, len, sizeof *items, tk_cmp);
        return;
    }
    for (size_t i = kk / 2; i-- > 0;)
        tk_sift_down(items, kk, i);
    for (size_t j = kk; j < len; j++)
        if (tk_before(&items[j], &items[0])) {
            items[0] = items[j];
            tk_sift_down(items, kk, 0);
        }
    qsort(items, kk, sizeof *items, tk_cmp);
}

/* ---- f32 lines: one integer key per element ---------------------------------
 *
 * The order above in one uint64 per element, compared as integers: the f32
 * bits mapped to an unsigned key that orders as the numbers do (-0 as +0,
 * every NaN as the largest), the index below it so that among equal values
 * the lower index wins, and for the K smallest the whole key inverted. The
 * K best keys are the K largest: a bounded min-heap of them, then sorted.
 * On tf_ops' TopK of 5 out of [2, 1728] the long double items cost most of
 * the kernel. */

static inline uint64_t tk_f32_key(float v, uint32_t index, bool largest)
{
    uint32_t ord = ix_f32_order(v);
    return largest ? (uint64_t)ord << 32 | (UINT32_MAX - index)
                   : ~((uint64_t)ord << 32 | index);
}

static inline void tk_u64_sift(uint64_t *h, size_t n, size_t i)
{
    for (;;) { /* min-heap: the worst kept key at the root */
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && h[l] < h[m])
            m = l;
        if (r < n && h[r] < h[m])
            m = r;
        if (m == i)
            return;
        uint64_t t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

void ix_sort_u64_desc(uint64_t *keys, size_t n, uint64_t *tmp)
{
    if (n < 64) { /* insertion */
        for (size_t i = 1; i < n; i++) {
            uint64_t v = keys[i];
            size_t j = i;
            for (; j > 0 && keys[j - 1] < v; j--)
                keys[j] = keys[j - 1];
            keys[j] = v;
        }
        return;
    }
    size_t count[8][256];
    memset(count, 0, sizeof count);
    for (size_t i = 0; i < n; i++)
        for (int b = 0; b < 8; b++)
            count[b][(keys[i] >> (8 * b)) & 255]++;
    uint64_t *src = keys, *dst = tmp;
    for (int b = 0; b < 8; b++) {
        if (count[b][(keys[0] >> (8 * b)) & 255] == n)
            continue; /* one digit everywhere: the pass changes nothing */
        size_t off[256], pos = 0;
        for (int d = 255; d >= 0; d--) { /* high digits first: descending */
            off[d] = pos;
            pos += count[b][d];
        }
        for (size_t i = 0; i < n; i++)
            dst[off[(src[i] >> (8 * b)) & 255]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != keys)
        memcpy(keys, src, n * sizeof *keys);
}

/* The indices of the KK best of LEN f32 values STRIDE apart at X, best
 * first, into OUT (KK of them); KEYS holds 2 * LEN (the second half for
 * the sort). */
static void tk_f32_line(const float *x, size_t len, size_t stride, size_t kk, bool largest,
                        uint64_t *keys, int64_t *out)
{
    size_t n = kk * 8 >= len ? len : kk;
    for (size_t j = 0; j < n; j++)
        keys[j] = tk_f32_key(x[j * stride], (uint32_t)j, largest);
    if (n < len) {
        for (size_t i = kk / 2; i-- > 0;)
            tk_u64_sift(keys, kk, i);
        for (size_t j = kk; j < len; j++) {
            uint64_t key = tk_f32_key(x[j * stride], (uint32_t)j, largest);
            if (key > keys[0]) {
                keys[0] = key;
                tk_u64_sift(keys, kk, 0);
            }
        }
    }
    ix_sort_u64_desc(keys, n, keys + len);
    for (size_t j = 0; j < kk; j++) {
        uint64_t key = largest ? keys[j] : ~keys[j];
        uint32_t low = (uint32_t)key;
        out[j] = largest ? (int64_t)(UINT32_MAX - low) : (int64_t)low;
    }
}

static pl_status *tk_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                           const pl_run_args *args, size_t o, void *dst,
                           pl_output_request req)
{
    const tk_kernel *k = (const tk_kernel *)kernel;
    const char *op = kernel->base.op;
    if (k->k_input) {
        const pl_tensor *kt = &args->inputs[1];
        if (!PL_DTYPE_EQ(kt->dtype, PL_DTYPE_I64) || kt->data == NULL)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "K must be one i64 value");
        int64_t kv;
        memcpy(&kv, shp_in(args, 1), sizeof kv);
        if (kv != k->k_out)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "K is %lld at run time, but the outputs have %lld along the axis",
                             (long long)kv, (long long)k->k_out);
    }
    size_t kk = (size_t)k->k_out;
    if (kk == 0)
        return NULL;
    tk_item *items = cpu_host->host_alloc(ctx->host_ctx, k->len * sizeof *items, 0);
    if (items == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory ordering %zu elements",
                         k->len);
    const char *x = shp_in(args, 0);
    size_t es = kernel->outs[o].esize;
    if (PL_DTYPE_EQ(k->dt, PL_DTYPE_F32) && k->len < UINT32_MAX) {
        _Static_assert(sizeof(tk_item) >= 2 * sizeof(uint64_t), "keys and the sort's copy");
        uint64_t *keys = (uint64_t *)(void *)items; /* tk_item is larger */
        int64_t *idx = cpu_host->host_alloc(ctx->host_ctx, kk * sizeof *idx, 0);
        if (idx == NULL) {
            cpu_host->host_free(ctx->host_ctx, items);
            return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory ordering %zu elements",
                             k->len);
        }
        /* values and indices from one ordering: written together at o = 0
         * when both are plain writes (NonZero's lowering reads only the
         * indices, but every TopK has both) */
        bool both = args->n_outputs > 1 && args->requests[0] == PL_REQ_WRITE &&
                    args->requests[1] == PL_REQ_WRITE && args->outputs[0].data != NULL &&
                    args->outputs[1].data != NULL && req == PL_REQ_WRITE;
        char *vals = o == 0 ? dst : NULL, *inds = o == 1 ? dst : NULL;
        if (both && o == 1) {
            cpu_host->host_free(ctx->host_ctx, idx);
            cpu_host->host_free(ctx->host_ctx, items);
            return NULL;
        }
        if (both)
            inds = (char *)args->outputs[1].data + args->outputs[1].byte_offset;
        for (size_t ou = 0; ou < k->outer; ou++)
            for (size_t in = 0; in < k->inner; in++) {
                size_t base = ou * k->len * k->inner + in;
                tk_f32_line((const float *)(const void *)x + base, k->len, k->inner, kk,
                            k->largest, keys, idx);
                size_t obase = ou * kk * k->inner + in;
                for (size_t j = 0; j < kk; j++) {
                    size_t at = obase + j * k->inner;
                    if (vals != NULL)
                        memcpy(vals + at * 4, x + (base + (size_t)idx[j] * k->inner) * 4, 4);
                    if (inds != NULL)
                        memcpy(inds + at * 8, &idx[j], 8);
                }
            }
        cpu_host->host_free(ctx->host_ctx, idx);
        cpu_host->host_free(ctx->host_ctx, items);
        return NULL;
    }
    for (size_t ou = 0; ou < k->outer; ou++)
        for (size_t in = 0; in < k->inner; in++) {
            size_t base = ou * k->len * k->inner + in;
            for (size_t j = 0; j < k->len; j++) {
                long double v = tk_key(k->dt, x, base + j * k->inner);
                tk_item *it = &items[j];
                it->index = (int64_t)j;
                it->cls = isnan(v) ? (k->largest ? 0 : 2) : 1;
                it->key = k->largest ? -v : v;
            }
            tk_select(items, k->len, kk);
            size_t obase = ou * kk * k->inner + in;
            for (size_t j = 0; j < kk; j++) {
                size_t at = obase + j * k->inner;
                if (o == 0)
                    memcpy((char *)dst + at * es,
                           x + (base + (size_t)items[j].index * k->inner) * es, es);
                else
                    memcpy((char *)dst + at * 8, &items[j].index, 8);
            }
        }
    cpu_host->host_free(ctx->host_ctx, items);
    return NULL;
}

pl_status *ix_build_topk(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0];
    const char *op = node->op;
    if (node->n_outputs != 2)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "%zu outputs (TopK has 2)",
                         node->n_outputs);
    pl_dtype dt = x->dtype;
    if (PL_DTYPE_EQ(dt, PL_DTYPE_BOOL))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "bool input");
    int a = 0;
    int64_t largest, k_attr = -1;
    SHP_TRY(ix_axis(node, -1, x->ndim, &a));
    SHP_TRY(cpu_attr_int(node, "largest", 1, &largest));
    bool k_input = shp_input_present(node, 1);
    if (k_input) {
        const pl_tensor *kt = &node->inputs[1];
        if (!PL_DTYPE_EQ(kt->dtype, PL_DTYPE_I64) || cpu_elements(kt->shape, kt->ndim) != 1)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "K must be one i64 value");
    } else {
        SHP_TRY(cpu_attr_int(node, "k", -1, &k_attr));
    }
    const pl_tensor *ov = &node->outputs[0], *oi = &node->outputs[1];
    bool ok = ov->ndim == x->ndim && (!shp_output_present(node, 1) ||
                                      (oi->ndim == x->ndim && PL_DTYPE_EQ(oi->dtype, PL_DTYPE_I64)));
    for (int d = 0; ok && d < x->ndim; d++)
        ok = (d == a || ov->shape[d] == x->shape[d]) &&
             (!shp_output_present(node, 1) || oi->shape[d] == ov->shape[d]);
    ok = ok && ov->shape[a] <= x->shape[a] && PL_DTYPE_EQ(ov->dtype, dt);
    ok = ok && (k_input || k_attr == ov->shape[a]);
    if (!ok) {
        char tx[128], to[128];
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "the outputs %s are not input %s with K along axis %d",
                         cpu_dims_text(ov->shape, ov->ndim, to, sizeof to),
                         cpu_dims_text(x->shape, x->ndim, tx, sizeof tx), a);
    }
    tk_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, tk_write, (shp_kernel **)&k));
    k->outer = cpu_elements(x->shape, a);
    k->len = (size_t)x->shape[a];
    k->inner = cpu_elements(x->shape + a + 1, x->ndim - a - 1);
    k->k_out = ov->shape[a];
    k->largest = largest != 0;
    k->k_input = k_input;
    k->dt = dt;
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- Hardmax ------------------------------------------------------------------ */

/* Lines of LEN elements INNER apart; before opset 13 the input is seen as
 * a matrix [outer, len] split at the axis, so INNER is 1. */
typedef struct hm_kernel {
    shp_kernel k;
    size_t outer, len, inner;
} hm_kernel;

static pl_status *hm_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                           const pl_run_args *args, size_t o, void *dst,
                           pl_output_request req)
{
    (void)ctx, (void)o, (void)req;
    const hm_kernel *k = (const hm_kernel *)kernel;
    pl_dtype dt = kernel->outs[0].dtype;
    const char *x = shp_in(args, 0);
    char *y = dst;
    for (size_t ou = 0; ou < k->outer; ou++)
        for (size_t in = 0; in < k->inner; in++) {
            size_t base = ou * k->len * k->inner + in, best = 0;
            double bv = ix_load(dt, x, base);
            for (size_t j = 1; j < k->len; j++) {
                double v = ix_load(dt, x, base + j * k->inner);
                if (v > bv || (isnan(v) && !isnan(bv))) {
                    bv = v;
                    best = j;
                }
            }
            for (size_t j = 0; j < k->len; j++)
                ix_store(dt, y, base + j * k->inner, j == best ? 1.0 : 0.0);
        }
    return NULL;
}

pl_status *ix_build_hardmax(pl_module_ctx *ctx, const pl_node_desc *node,
                            pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0];
    if (!(PL_DTYPE_EQ(x->dtype, PL_DTYPE_F32) || PL_DTYPE_EQ(x->dtype, PL_DTYPE_F64) ||
          PL_DTYPE_EQ(x->dtype, PL_DTYPE_F16) || PL_DTYPE_EQ(x->dtype, PL_DTYPE_BF16)))
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "the input must be floating point");
    SHP_TRY(shp_same_dtype(node));
    if (x->ndim < 1)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "the input must have rank >= 1");
    bool v13 = shp_opset(node) >= 13;
    int a = 0;
    SHP_TRY(ix_axis(node, v13 ? -1 : 1, x->ndim, &a));
    hm_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, hm_write, (shp_kernel **)&k));
    k->outer = cpu_elements(x->shape, a);
    if (v13) {
        k->len = (size_t)x->shape[a];
        k->inner = cpu_elements(x->shape + a + 1, x->ndim - a - 1);
    } else {
        k->len = cpu_elements(x->shape + a, x->ndim - a);
        k->inner = 1;
    }
    *out_kernel = &k->k.base;
    return NULL;
}
