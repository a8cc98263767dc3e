/* label_encode.c — the cpu module's ai.plinth LabelEncode, the form the
 * core lowers ai.onnx.ml's LabelEncoder with numeric keys and values to
 * (core/opset/src/opset_lower.c; scikit-learn's IsolationForest maps leaf
 * ids to path lengths so, twice per tree).
 *
 * Inputs: X (f32 or i64), the keys [K] of X's type, the values [K] (f32 or
 * i64) and the default (a scalar of the values' type), all three constant.
 * Attribute nan_matches: a NaN of X takes the value of the first NaN key
 * (ai.onnx.ml 4), else a NaN matches nothing (ai.onnx.ml 2, as ONNX
 * Runtime reads it). Output: X's shape, each element the value of the
 * first key it equals (as C compares: -0.0 equals 0.0), else the default;
 * a repeated key keeps its first value, as ONNX Runtime does.
 *
 * The build sorts the keys once (stably, the first of equal keys kept);
 * a run looks each element up by binary search, elements over the pool:
 * the lowering it replaces compared every element with every key (an
 * [N, K] Equal, Cast, ArgMax and ReduceMax: two thirds of iforest's run). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "index_kernel.h"

static pl_status *le_build(pl_module_ctx *ctx, const pl_node_desc *node,
                           pl_kernel **out_kernel);

const cpu_op_entry cpu_ops_label_encode[] = {
    {"LabelEncode", le_build, 4, 4, 0, CPU_OP_ANY_DTYPE | CPU_OP_PLINTH_DOMAIN},
    {NULL, NULL, 0, 0, 0, 0},
};

/* A key with its value, as the sort and the lookup read them. */
typedef struct le_entry {
    union {
        int64_t i;
        float f;
    } key;
    union {
        int64_t i;
        float f;
    } value;
    size_t at; /* the key's place in the attribute: ties keep the first */
} le_entry;

typedef struct le_kernel {
    shp_kernel k;
    bool float_keys, float_values, nan_matches, nan_key;
    size_t n;           /* distinct keys in TABLE (NaN keys not among them) */
    le_entry nan_value; /* the first NaN key's value, when nan_key */
    le_entry dflt;      /* the default, in .value */
    const le_entry *table;
} le_kernel;

typedef struct le_job {
    const le_kernel *k;
    const void *x;
    void *y;
} le_job;

#define LE_GRAIN 4096 /* elements a parallel_for chunk, at least */

static int le_cmp_i64(const void *a, const void *b)
{
    const le_entry *p = a, *q = b;
    if (p->key.i != q->key.i)
        return p->key.i < q->key.i ? -1 : 1;
    return p->at < q->at ? -1 : p->at > q->at;
}

static int le_cmp_f32(const void *a, const void *b)
{
    const le_entry *p = a, *q = b;
    if (p->key.f != q->key.f)
        return p->key.f < q->key.f ? -1 : 1;
    return p->at < q->at ? -1 : p->at > q->at;
}

/* The entry whose key equals X (XI for i64 keys, XF for f32 ones), else
 * NULL. */
static inline const le_entry *le_find(const le_kernel *k, int64_t xi, float xf)
{
    bool fk = k->float_keys;
    if (fk && xf != xf)
        return k->nan_matches && k->nan_key ? &k->nan_value : NULL;
    size_t lo = 0, hi = k->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (fk ? k->table[mid].key.f < xf : k->table[mid].key.i < xi)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == k->n)
        return NULL;
    const le_entry *t = &k->table[lo];
    return (fk ? t->key.f == xf : t->key.i == xi) ? t : NULL;
}

static void le_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const le_job *j = arg;
    const le_kernel *k = j->k;
    for (size_t e = begin; e < end; e++) {
        const le_entry *hit = k->float_keys ? le_find(k, 0, ((const float *)j->x)[e])
                                            : le_find(k, ((const int64_t *)j->x)[e], 0.0f);
        if (hit == NULL)
            hit = &k->dflt;
        if (k->float_values)
            ((float *)j->y)[e] = hit->value.f;
        else
            ((int64_t *)j->y)[e] = hit->value.i;
    }
}

static pl_status *le_write(pl_module_ctx *ctx, const shp_kernel *sk, const pl_run_args *args,
                           size_t o, void *dst, pl_output_request req)
{
    (void)o;
    (void)req;
    const le_kernel *k = (const le_kernel *)sk;
    le_job j = {.k = k, .x = shp_in(args, 0), .y = dst};
    size_t n = sk->outs[0].elements;
    if (n > LE_GRAIN)
        cpu_host->parallel_for(ctx->host_ctx, n, LE_GRAIN, le_chunk, &j);
    else if (n > 0)
        le_chunk(&j, 0, n, 0);
    return NULL;
}

static pl_status *le_build(pl_module_ctx *ctx, const pl_node_desc *node,
                           pl_kernel **out_kernel)
{
    const char *op = node->op;
    const pl_tensor *in = node->inputs;
    bool fk = PL_DTYPE_EQ(in[0].dtype, PL_DTYPE_F32), fv = PL_DTYPE_EQ(in[2].dtype, PL_DTYPE_F32);
    if (node->n_outputs != 1 || !(fk || PL_DTYPE_EQ(in[0].dtype, PL_DTYPE_I64)) ||
        !(fv || PL_DTYPE_EQ(in[2].dtype, PL_DTYPE_I64)) || !PL_DTYPE_EQ(in[1].dtype, in[0].dtype) ||
        !PL_DTYPE_EQ(in[3].dtype, in[2].dtype) || !PL_DTYPE_EQ(node->outputs[0].dtype, in[2].dtype))
        return cpu_error(PL_CODE_UNSUPPORTED, op,
                         "X and the keys must be f32 or i64, the values, default and Y f32 or "
                         "i64, each pair alike");
    if (in[1].ndim != 1 || in[2].ndim != 1 || in[1].shape[0] != in[2].shape[0] ||
        cpu_elements(in[3].shape, in[3].ndim) != 1 || in[0].ndim != node->outputs[0].ndim ||
        cpu_elements(in[0].shape, in[0].ndim) !=
            cpu_elements(node->outputs[0].shape, node->outputs[0].ndim))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "keys [K], values [K], a one-element default and Y of X's shape do not "
                         "fit");
    size_t b[4];
    const void *keys = shp_constant(node, 1, &b[1]), *vals = shp_constant(node, 2, &b[2]),
               *dflt = shp_constant(node, 3, &b[3]);
    if (keys == NULL || vals == NULL || dflt == NULL)
        return cpu_error(PL_CODE_UNSUPPORTED, op, "the keys, values and default must be constants");
    int64_t nan_matches;
    SHP_TRY(cpu_attr_int(node, "nan_matches", 0, &nan_matches));
    size_t n = (size_t)in[1].shape[0];
    if (n > SIZE_MAX / 2 / sizeof(le_entry))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "%zu keys", n);
    le_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k + n * sizeof(le_entry), le_write,
                             (shp_kernel **)&k));
    k->float_keys = fk;
    k->float_values = fv;
    k->nan_matches = nan_matches != 0;
    le_entry *t = (le_entry *)(k + 1);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        le_entry e = {.at = i};
        if (fv)
            e.value.f = ((const float *)vals)[i];
        else
            e.value.i = ((const int64_t *)vals)[i];
        if (fk) {
            e.key.f = ((const float *)keys)[i];
            if (e.key.f != e.key.f) {
                if (!k->nan_key)
                    k->nan_value = e;
                k->nan_key = true;
                continue;
            }
        } else {
            e.key.i = ((const int64_t *)keys)[i];
        }
        t[m++] = e;
    }
    qsort(t, m, sizeof *t, fk ? le_cmp_f32 : le_cmp_i64);
    /* equal keys sit together, the first of the attribute first: keep it */
    size_t d = 0;
    for (size_t i = 0; i < m; i++)
        if (d == 0 || (fk ? t[i].key.f != t[d - 1].key.f : t[i].key.i != t[d - 1].key.i))
            t[d++] = t[i];
    k->n = d;
    k->table = t;
    if (fv)
        k->dflt.value.f = *(const float *)dflt;
    else
        k->dflt.value.i = *(const int64_t *)dflt;
    *out_kernel = &k->k.base;
    return NULL;
}
