/* qlinear_ms.c — ONNX Runtime's com.microsoft QLinearAdd, QLinearMul,
 * QLinearSigmoid and QLinearLeakyRelu on u8 and i8, in the arithmetic of
 * ONNX Runtime's x86 kernels, so that a
 * QOperator model (onnxruntime.quantization's QuantFormat.QOperator)
 * gives ONNX Runtime's values, not one quantization step off.
 *
 * These ops have no ONNX reference: ONNX Runtime defines them, and its
 * kernels do not compute dequantize -> op -> quantize (what the core's
 * lowering of them computes, and what a model without this module runs):
 *
 *   QLinearAdd  c = sat(rne(a * rA + (b * rB + fixed)))   (two FMAs)
 *               rA = sa / sc, rB = sb / sc,
 *               fixed = zc - (rA * za + rB * zb)       (one FMA, f32)
 *               When one operand is constant along the innermost run of
 *               the output (a scalar, or per channel of NCHW), that
 *               operand's term joins `fixed` first (a product and a sum,
 *               rounded apart), then one FMA with the other.
 *   QLinearMul  c = sat(rne((f32)((a - za) * (b - zb)) * (sa * sb / sc) + zc))
 *               the product of the debiased values exact in int32, then a
 *               product and a sum in f32, rounded apart.
 *
 * rne is round-half-to-even (the default MXCSR mode); a float at or beyond
 * 2^31, or NaN, converts to INT32_MIN as cvtps2dq gives; sat clamps to the
 * type. The zero point joins before the rounding, so ties fall otherwise
 * than dequantize -> Add -> quantize: with equal input and output scales
 * and odd zero points, 40% of a QLinearAdd's values differed by one
 * (bench/zoo's single-op differential against ONNX Runtime 1.32), and
 * PP-OCR v4's detector quantized so (89 QLinearAdds, 86 QLinearMuls) was
 * 0.29 off ONNX Runtime at its output.
 *
 * QLinearSigmoid and QLinearLeakyRelu are, as in ONNX Runtime, a table of
 * the 256 inputs' results (dequantized in f32, the function, quantized as
 * QuantizeLinear): one lookup per value instead of three passes through
 * f32; the table is made once when the scales and zero points are
 * constants.
 *
 * Scales and zero points are read at run time (scalars, as ONNX Runtime
 * requires); operands broadcast as NumPy's. The file is compiled with
 * -ffp-contract=off (CMakeLists.txt): a product and a sum that ONNX
 * Runtime rounds apart must not become an FMA here. */
#include <limits.h>
#include <math.h>
#include <string.h>

#include <plinth/qlinear.h>

#include "fastmath.h"
#include "shape_kernel.h"

static pl_status *qm_build(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel);
static pl_status *qm_build_lut(pl_module_ctx *ctx, const pl_node_desc *node,
                               pl_kernel **out_kernel);
static pl_status *qm_build_table(pl_module_ctx *ctx, const pl_node_desc *node,
                                 pl_kernel **out_kernel);

const cpu_op_entry cpu_ops_qlinear_ms[] = {
    {"QLinearAdd", qm_build, 7, 8, 0, CPU_OP_ANY_DTYPE | CPU_OP_MS_DOMAIN},
    {"QLinearMul", qm_build, 7, 8, 0, CPU_OP_ANY_DTYPE | CPU_OP_MS_DOMAIN},
    {"QLinearSigmoid", qm_build_lut, 4, 5, 0, CPU_OP_ANY_DTYPE | CPU_OP_MS_DOMAIN},
    {"QLinearLeakyRelu", qm_build_lut, 4, 5, 0, CPU_OP_ANY_DTYPE | CPU_OP_MS_DOMAIN},
    {"TableLookup8", qm_build_table, 2, 2, 0, CPU_OP_ANY_DTYPE | CPU_OP_PLINTH_DOMAIN},
    {NULL, NULL, 0, 0, 0, 0},
};

/* Output rows (the innermost dim) per parallel_for grain: about 16 KB. */
#define QM_GRAIN_VALUES 16384

typedef struct qm_kernel {
    shp_kernel k;
    bool mul, is_signed;
    int rank;                     /* of the output, at least 1 */
    int64_t dims[CPU_MAX_RANK];   /* the output's */
    int64_t sa[CPU_MAX_RANK];     /* A's element stride per output dim (0: broadcast) */
    int64_t sb[CPU_MAX_RANK];
    size_t rows, inner;           /* the output as rows x inner (its last dim) */
} qm_kernel;

/* The run's constants (plinth/qlinear.h, shared with other modules). */
typedef pl_qlinear qm_params;

typedef struct qm_call {
    const qm_kernel *k;
    const qm_params *p;
    const char *a, *b;
    char *c;
} qm_call;

static inline int32_t qm_at(const char *p, bool is_signed, int64_t i)
{
    return is_signed ? (int32_t)((const int8_t *)(const void *)p)[i]
                     : (int32_t)((const uint8_t *)(const void *)p)[i];
}

/* cvtps2dq then saturation, in floats (vectorisable; plinth/qlinear.h) */
#define qm_round_sat pl_qlinear_round_sat

/* The loops of one output row of N values, for element type T: QLinearAdd
 * with A and B both varying, with one operand X varying (the other's term
 * is in FIXED), and QLinearMul. fmaf is fused in hardware where the clone
 * has FMA, exactly rounded in software elsewhere. */
#define QM_ROWS(T, SUFFIX)                                                                   \
    static inline void qm_add_##SUFFIX(const qm_params *p, const T *restrict a,              \
                                       const T *restrict b, T *restrict c, int64_t n)        \
    {                                                                                        \
        const float ra = p->ra, rb = p->rb, fixed = p->fixed, lo = p->lo, hi = p->hi;        \
        for (int64_t j = 0; j < n; j++)                                                      \
            c[j] = (T)(int32_t)qm_round_sat(                                                 \
                fmaf((float)a[j], ra, fmaf((float)b[j], rb, fixed)), lo, hi);                \
    }                                                                                        \
    static inline void qm_add1_##SUFFIX(float fixed, float r, const T *restrict x,          \
                                        T *restrict c, int64_t n, float lo, float hi)        \
    {                                                                                        \
        for (int64_t j = 0; j < n; j++)                                                      \
            c[j] = (T)(int32_t)qm_round_sat(fmaf((float)x[j], r, fixed), lo, hi);            \
    }                                                                                        \
    static inline void qm_mul_##SUFFIX(const qm_params *p, const T *restrict a, int64_t da,  \
                                       const T *restrict b, int64_t db, T *restrict c,       \
                                       int64_t n)                                            \
    {                                                                                        \
        const int32_t za = p->za, zb = p->zb;                                                \
        const float ratio = p->ratio, zc = p->zc, lo = p->lo, hi = p->hi;                    \
        if (da == 0) {                                                                       \
            const int32_t av = (int32_t)a[0] - za;                                           \
            for (int64_t j = 0; j < n; j++)                                                  \
                c[j] = (T)(int32_t)qm_round_sat(                                             \
                    (float)(av * ((int32_t)b[j] - zb)) * ratio + zc, lo, hi);                \
        } else if (db == 0) {                                                                \
            const int32_t bv = (int32_t)b[0] - zb;                                           \
            for (int64_t j = 0; j < n; j++)                                                  \
                c[j] = (T)(int32_t)qm_round_sat(                                             \
                    (float)(((int32_t)a[j] - za) * bv) * ratio + zc, lo, hi);                \
        } else {                                                                             \
            for (int64_t j = 0; j < n; j++)                                                  \
                c[j] = (T)(int32_t)qm_round_sat(                                             \
                    (float)(((int32_t)a[j] - za) * ((int32_t)b[j] - zb)) * ratio + zc, lo,   \
                    hi);                                                                     \
        }                                                                                    \
    }                                                                                        \
    static inline void qm_row_##SUFFIX(const qm_kernel *k, const qm_params *p, const T *a,   \
                                       int64_t da, const T *b, int64_t db, T *c, int64_t n)  \
    {                                                                                        \
        if (k->mul)                                                                          \
            qm_mul_##SUFFIX(p, a, da, b, db, c, n);                                          \
        else if (da == 0)                                                                    \
            qm_add1_##SUFFIX(p->fixed + (float)a[0] * p->ra, p->rb, b, c, n, p->lo, p->hi);  \
        else if (db == 0)                                                                    \
            qm_add1_##SUFFIX(p->fixed + (float)b[0] * p->rb, p->ra, a, c, n, p->lo, p->hi);  \
        else                                                                                 \
            qm_add_##SUFFIX(p, a, b, c, n);                                                  \
    }

QM_ROWS(uint8_t, u8)
QM_ROWS(int8_t, s8)

/* One output row. */
#define QM_ROW_BODY                                                                          \
    if (k->is_signed)                                                                        \
        qm_row_s8(k, p, (const int8_t *)(const void *)a, da,                                 \
                  (const int8_t *)(const void *)b, db, (int8_t *)(void *)c, n);              \
    else                                                                                     \
        qm_row_u8(k, p, (const uint8_t *)(const void *)a, da,                                \
                  (const uint8_t *)(const void *)b, db, (uint8_t *)(void *)c, n);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2,fma"))) static void qm_row_fma(const qm_kernel *k,
                                                           const qm_params *p, const char *a,
                                                           int64_t da, const char *b,
                                                           int64_t db, char *c, int64_t n)
{
    QM_ROW_BODY
}
#endif

static void qm_row_plain(const qm_kernel *k, const qm_params *p, const char *a, int64_t da,
                         const char *b, int64_t db, char *c, int64_t n)
{
    QM_ROW_BODY
}

static void qm_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const qm_call *call = arg;
    const qm_kernel *k = call->k;
    int r = k->rank;
    int64_t idx[CPU_MAX_RANK] = {0};
    size_t rest = begin;
    for (int d = r - 2; d >= 0; d--) {
        idx[d] = (int64_t)(rest % (size_t)k->dims[d]);
        rest /= (size_t)k->dims[d];
    }
    bool fma_ok = cpu_has_isa(CPU_ISA_AVX2_FMA);
    int64_t da = k->sa[r - 1], db = k->sb[r - 1], n = (int64_t)k->inner;
    for (size_t row = begin; row < end; row++) {
        int64_t oa = 0, ob = 0;
        for (int d = 0; d < r - 1; d++) {
            oa += idx[d] * k->sa[d];
            ob += idx[d] * k->sb[d];
        }
        const char *a = call->a + oa, *b = call->b + ob;
        char *c = call->c + (int64_t)row * n;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
        if (fma_ok)
            qm_row_fma(k, call->p, a, da, b, db, c, n);
        else
#endif
            qm_row_plain(k, call->p, a, da, b, db, c, n);
        for (int d = r - 2; d >= 0; d--) {
            if (++idx[d] < k->dims[d])
                break;
            idx[d] = 0;
        }
    }
}

/* Scalar input I as f32 (a scale), or as the 8-bit zero point (0 when
 * absent). */
static float qm_scale(const pl_run_args *args, size_t i)
{
    float s;
    memcpy(&s, shp_in(args, i), sizeof s);
    return s;
}

static int32_t qm_zero_point(bool is_signed, const pl_run_args *args, size_t i)
{
    if (i >= args->n_inputs || args->inputs[i].data == NULL)
        return 0;
    return qm_at(shp_in(args, i), is_signed, 0);
}

static pl_status *qm_write(pl_module_ctx *ctx, const shp_kernel *kernel, const pl_run_args *args,
                           size_t o, void *dst, pl_output_request req)
{
    (void)o, (void)req;
    const qm_kernel *k = (const qm_kernel *)kernel;
    float sa = qm_scale(args, 1), sb = qm_scale(args, 4), sc = qm_scale(args, 6);
    if (!(sc != 0) || !isfinite(sa) || !isfinite(sb) || !isfinite(sc))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->base.op,
                         "scales %g, %g and %g: they must be finite and C's nonzero", (double)sa,
                         (double)sb, (double)sc);
    qm_params p = pl_qlinear_make(k->mul, k->is_signed, sa, qm_zero_point(k->is_signed, args, 2),
                                  sb, qm_zero_point(k->is_signed, args, 5), sc,
                                  qm_zero_point(k->is_signed, args, 7));
    qm_call call = {.k = k, .p = &p, .a = shp_in(args, 0), .b = shp_in(args, 3), .c = dst};
    size_t grain = k->inner >= QM_GRAIN_VALUES ? 1 : QM_GRAIN_VALUES / k->inner;
    cpu_host->parallel_for(ctx->host_ctx, k->rows, grain, qm_chunk, &call);
    return NULL;
}

/* Drops the output's dims of 1 and merges neighbouring dims that both
 * operands read alike (contiguously, or both broadcast), so that rows are
 * as long as they can be: an elementwise add of two [1,C,H,W] is one row,
 * a per-channel operand gives rows of H*W over which it is constant (as
 * ONNX Runtime's broadcaster spans them, which decides its formula). */
static void qm_merge_dims(qm_kernel *k)
{
    int r = 0;
    for (int d = 0; d < k->rank; d++) {
        if (k->dims[d] == 1)
            continue;
        if (r > 0 && k->sa[r - 1] == k->sa[d] * k->dims[d] &&
            k->sb[r - 1] == k->sb[d] * k->dims[d]) {
            k->dims[r - 1] *= k->dims[d];
            k->sa[r - 1] = k->sa[d];
            k->sb[r - 1] = k->sb[d];
            continue;
        }
        k->dims[r] = k->dims[d];
        k->sa[r] = k->sa[d];
        k->sb[r] = k->sb[d];
        r++;
    }
    if (r == 0) {
        k->dims[0] = 1;
        k->sa[0] = k->sb[0] = 0;
        r = 1;
    }
    k->rank = r;
}

static bool qm_is_scalar(const pl_tensor *t)
{
    return cpu_elements(t->shape, t->ndim) == 1;
}

/* Checks the scales and zero points of NODE (its inputs from 1 on, but
 * those in DATA_MASK): one value each, scales (SCALE_MASK) f32, zero
 * points of the quantized type QT. */
static pl_status *qm_check_params(const pl_node_desc *node, pl_dtype qt, unsigned data_mask,
                                  unsigned scale_mask)
{
    for (size_t i = 1; i < node->n_inputs && i < 32; i++) {
        if ((data_mask >> i & 1u) || !shp_input_present(node, i))
            continue;
        const pl_tensor *t = &node->inputs[i];
        if (!qm_is_scalar(t))
            return cpu_error(PL_CODE_UNSUPPORTED, node->op,
                             "input %zu: a scale or zero point per tensor only (one value)", i);
        if ((scale_mask >> i & 1u) ? !PL_DTYPE_EQ(t->dtype, PL_DTYPE_F32)
                                   : !PL_DTYPE_EQ(t->dtype, qt))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "input %zu: scales are f32 and zero points of the data's dtype", i);
    }
    return NULL;
}

static pl_status *qm_build(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const char *op = node->op;
    const pl_tensor *a = &node->inputs[0], *b = &node->inputs[3], *c = &node->outputs[0];
    bool is_signed = PL_DTYPE_EQ(a->dtype, PL_DTYPE_I8);
    if ((!is_signed && !PL_DTYPE_EQ(a->dtype, PL_DTYPE_U8)) || !PL_DTYPE_EQ(b->dtype, a->dtype) ||
        !PL_DTYPE_EQ(c->dtype, a->dtype))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "A, B and C must all be u8 or all i8");
    SHP_TRY(qm_check_params(node, a->dtype, 1u << 3, 1u << 1 | 1u << 4 | 1u << 6));
    if (!shp_input_present(node, 1) || !shp_input_present(node, 4) || !shp_input_present(node, 6))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "A, B and C need their scales");
    qm_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, qm_write, (shp_kernel **)&k));
    k->mul = strcmp(op, "QLinearMul") == 0;
    k->is_signed = is_signed;
    k->rank = c->ndim > 0 ? c->ndim : 1;
    for (int d = 0; d < k->rank; d++)
        k->dims[d] = c->ndim > 0 ? c->shape[d] : 1;
    if (!cpu_broadcast_strides(a->shape, a->ndim, k->dims, k->rank, k->sa) ||
        !cpu_broadcast_strides(b->shape, b->ndim, k->dims, k->rank, k->sb)) {
        char ab[96], bb[96];
        cpu_kernel_release(ctx, &k->k.base);
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "A %s and B %s do not broadcast",
                         cpu_dims_text(a->shape, a->ndim, ab, sizeof ab),
                         cpu_dims_text(b->shape, b->ndim, bb, sizeof bb));
    }
    qm_merge_dims(k);
    k->inner = (size_t)k->dims[k->rank - 1];
    k->rows = k->inner == 0 ? 0 : cpu_elements(k->dims, k->rank) / k->inner;
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- QLinearSigmoid, QLinearLeakyRelu: a table of 256 ---------------------------- */

typedef struct qm_lut_kernel {
    shp_kernel k;
    bool is_signed, leaky, has_table;
    float alpha;
    uint8_t table[256]; /* indexed by the input's byte */
} qm_lut_kernel;

/* The table for scales SX, SY and zero points ZX, ZY: each input byte
 * dequantized ((q - zx) * sx in f32, as DequantizeLinear), through the
 * function (the sigmoid in double, rounded once), quantized as
 * QuantizeLinear (rne(y / sy) + zy, saturated). */
static void qm_lut_fill(const qm_lut_kernel *k, float sx, int32_t zx, float sy, int32_t zy,
                        uint8_t *table)
{
    float lo = k->is_signed ? -128.0f : 0.0f, hi = k->is_signed ? 127.0f : 255.0f;
    for (int b = 0; b < 256; b++) {
        int32_t q = k->is_signed ? (int32_t)(int8_t)(uint8_t)b : b;
        float x = ((float)q - (float)zx) * sx;
        float y = k->leaky ? (x >= 0.0f ? x : k->alpha * x)
                           : (float)(1.0 / (1.0 + exp(-(double)x)));
        float r = nearbyintf(y / sy);
        r = r >= lo - (float)zy ? r : lo - (float)zy; /* saturate after adding zy */
        r = r <= hi - (float)zy ? r : hi - (float)zy;
        int32_t v = (int32_t)r + zy;
        table[b] = k->is_signed ? (uint8_t)(int8_t)v : (uint8_t)v;
    }
}

typedef struct qm_lut_call {
    const uint8_t *x, *table;
    uint8_t *y;
} qm_lut_call;

static void qm_lut_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const qm_lut_call *c = arg;
    const uint8_t *restrict x = c->x, *restrict t = c->table;
    uint8_t *restrict y = c->y;
    for (size_t i = begin; i < end; i++)
        y[i] = t[x[i]];
}

static pl_status *qm_lut_params(const qm_lut_kernel *k, const pl_run_args *args, float *sx,
                                int32_t *zx, float *sy, int32_t *zy)
{
    *sx = qm_scale(args, 1);
    *sy = qm_scale(args, 3);
    *zx = qm_zero_point(k->is_signed, args, 2);
    *zy = qm_zero_point(k->is_signed, args, 4);
    if (!(*sy != 0) || !isfinite(*sx) || !isfinite(*sy))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, k->k.base.op,
                         "scales %g and %g: they must be finite and Y's nonzero", (double)*sx,
                         (double)*sy);
    return NULL;
}

static pl_status *qm_lut_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                               const pl_run_args *args, size_t o, void *dst,
                               pl_output_request req)
{
    (void)o, (void)req;
    const qm_lut_kernel *k = (const qm_lut_kernel *)kernel;
    uint8_t table[256];
    const uint8_t *t = k->table;
    if (!k->has_table) {
        float sx, sy;
        int32_t zx, zy;
        SHP_TRY(qm_lut_params(k, args, &sx, &zx, &sy, &zy));
        qm_lut_fill(k, sx, zx, sy, zy, table);
        t = table;
    }
    qm_lut_call call = {.x = (const uint8_t *)(const void *)shp_in(args, 0), .table = t,
                        .y = dst};
    cpu_host->parallel_for(ctx->host_ctx, kernel->outs[0].elements, 65536, qm_lut_chunk, &call);
    return NULL;
}

/* Whether every present input from 1 on is a constant of the graph, and
 * its run arguments (data pointers into the graph's constants) in ARGS. */
static bool qm_lut_constants(const pl_node_desc *node, pl_tensor *ins)
{
    const pl_graph_api *g = cpu_host->graph;
    if (g == NULL || node->graph == NULL)
        return false;
    for (size_t i = 1; i < node->n_inputs && i < 5; i++) {
        ins[i] = node->inputs[i];
        if (!shp_input_present(node, i)) {
            ins[i].data = NULL;
            continue;
        }
        int64_t t = g->node_input(node->graph, node->node_index, i);
        const void *data = NULL;
        size_t bytes = 0;
        if (t < 0 || !g->tensor_constant(node->graph, t, &data, &bytes) || bytes == 0)
            return false;
        ins[i].data = (void *)data;
        ins[i].byte_offset = 0;
    }
    return true;
}

static pl_status *qm_build_lut(pl_module_ctx *ctx, const pl_node_desc *node,
                               pl_kernel **out_kernel)
{
    const char *op = node->op;
    const pl_tensor *x = &node->inputs[0], *y = &node->outputs[0];
    bool is_signed = PL_DTYPE_EQ(x->dtype, PL_DTYPE_I8);
    if ((!is_signed && !PL_DTYPE_EQ(x->dtype, PL_DTYPE_U8)) || !PL_DTYPE_EQ(y->dtype, x->dtype))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "X and Y must both be u8 or both i8");
    if (!shp_input_present(node, 1) || !shp_input_present(node, 3))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "X and Y need their scales");
    SHP_TRY(qm_check_params(node, x->dtype, 0, 1u << 1 | 1u << 3));
    double alpha = 0.01; /* channels_last does not matter elementwise */
    SHP_TRY(cpu_attr_float(node, "alpha", 0.01, &alpha));
    qm_lut_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, qm_lut_write, (shp_kernel **)&k));
    k->is_signed = is_signed;
    k->leaky = strcmp(op, "QLinearLeakyRelu") == 0;
    k->alpha = (float)alpha;
    pl_tensor ins[5];
    if (qm_lut_constants(node, ins)) {
        pl_run_args args = {.n_inputs = node->n_inputs < 5 ? node->n_inputs : 5, .inputs = ins};
        float sx, sy;
        int32_t zx, zy;
        pl_status *st = qm_lut_params(k, &args, &sx, &zx, &sy, &zy);
        if (st != NULL) {
            cpu_kernel_release(ctx, &k->k.base);
            return st;
        }
        qm_lut_fill(k, sx, zx, sy, zy, k->table);
        k->has_table = true;
    }
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- ai.plinth TableLookup8: a table the graph computed ---------------------------- */

static pl_status *qm_table_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                                 const pl_run_args *args, size_t o, void *dst,
                                 pl_output_request req)
{
    (void)o, (void)req;
    qm_lut_call call = {.x = (const uint8_t *)(const void *)shp_in(args, 0),
                        .table = (const uint8_t *)(const void *)shp_in(args, 1), .y = dst};
    cpu_host->parallel_for(ctx->host_ctx, kernel->outs[0].elements, 65536, qm_lut_chunk, &call);
    return NULL;
}

static pl_status *qm_build_table(pl_module_ctx *ctx, const pl_node_desc *node,
                                 pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *t = &node->inputs[1], *y = &node->outputs[0];
    bool x8 = PL_DTYPE_EQ(x->dtype, PL_DTYPE_U8) || PL_DTYPE_EQ(x->dtype, PL_DTYPE_I8);
    bool t8 = PL_DTYPE_EQ(t->dtype, PL_DTYPE_U8) || PL_DTYPE_EQ(t->dtype, PL_DTYPE_I8);
    if (!x8 || !t8 || !PL_DTYPE_EQ(y->dtype, t->dtype))
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "X and the table must be u8 or i8");
    if (cpu_elements(t->shape, t->ndim) != 256)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "the table needs 256 values");
    shp_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, qm_table_write, &k));
    *out_kernel = &k->base;
    return NULL;
}

/* ---- the schemas ---------------------------------------------------------------- */

/* C: A and B broadcast, of A's dtype. */
static pl_status *qm_shape(void *user, pl_shape_ctx *sc)
{
    (void)user;
    pl_dtype at, bt;
    int32_t an = -1, bn = -1;
    const int64_t *ad = NULL, *bd = NULL;
    if (!cpu_host->shape_input(sc, 0, &at, &an, &ad) || !cpu_host->shape_input(sc, 3, &bt, &bn, &bd))
        return cpu_host->status_create(PL_CODE_INVALID_ARGUMENT, "needs A and B");
    if (!PL_DTYPE_EQ(at, bt))
        return cpu_host->status_create(PL_CODE_INVALID_ARGUMENT, "A is %s and B %s: they must "
                                                                 "match",
                                       PL_DTYPE_EQ(at, PL_DTYPE_I8) ? "i8" : "u8",
                                       PL_DTYPE_EQ(bt, PL_DTYPE_I8) ? "i8" : "u8");
    if (an < 0 || bn < 0)
        return cpu_host->shape_set_output(sc, 0, at, -1, NULL);
    int32_t r = an > bn ? an : bn;
    int64_t dims[CPU_MAX_RANK];
    if (r > CPU_MAX_RANK)
        return cpu_host->status_create(PL_CODE_UNSUPPORTED, "rank %d, at most %d", (int)r,
                                       CPU_MAX_RANK);
    for (int32_t d = 0; d < r; d++) {
        int64_t x = d - (r - an) >= 0 ? ad[d - (r - an)] : 1;
        int64_t y = d - (r - bn) >= 0 ? bd[d - (r - bn)] : 1;
        if (x == 1)
            dims[d] = y;
        else if (y == 1 || x == y)
            dims[d] = x;
        else if (x < 0 || y < 0)
            dims[d] = x < 0 ? y : x;
        else
            return cpu_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                           "A and B do not broadcast: dim %d is %lld and %lld",
                                           (int)d, (long long)x, (long long)y);
    }
    return cpu_host->shape_set_output(sc, 0, at, r, dims);
}

/* Y: X's type and shape. */
static pl_status *qm_lut_shape(void *user, pl_shape_ctx *sc)
{
    (void)user;
    pl_dtype xt;
    int32_t xn = -1;
    const int64_t *xd = NULL;
    if (!cpu_host->shape_input(sc, 0, &xt, &xn, &xd))
        return cpu_host->status_create(PL_CODE_INVALID_ARGUMENT, "needs X");
    return cpu_host->shape_set_output(sc, 0, xt, xn, xd);
}

pl_status *qm_register(pl_host_ctx *host_ctx)
{
    /* an older core lowers them through float */
    static const char *const names[] = {"QLinearAdd", "QLinearMul", "QLinearSigmoid",
                                        "QLinearLeakyRelu"};
    for (size_t i = 0; i < 4; i++) {
        bool lut = i >= 2;
        pl_status *st = cpu_register_ms_op(host_ctx, names[i], lut ? 4 : 7, lut ? 5 : 8, 1, 1,
                                           lut ? qm_lut_shape : qm_shape);
        if (st != NULL)
            return st;
    }
    return NULL;
}
