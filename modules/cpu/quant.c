/* quant.c — the cpu module's linear quantization family: QuantizeLinear and
 * DequantizeLinear (a scale and zero point per tensor, or per entry of one
 * axis), DynamicQuantizeLinear, and the integer matrix products
 * MatMulInteger and QLinearMatMul, on u8 and i8.
 *
 * Arithmetic follows ONNX's reference: a float quantizes as
 * saturate(round_half_even(x / scale) + zero_point), computed in f32 for
 * f32 data; dequantizing is (x - zero_point) * scale in f32. The integer
 * products accumulate exactly in int32 (as ONNX asks; K up to 2^16 cannot
 * overflow) with one zero point per tensor, per row of A or per column of
 * B; QLinearMatMul then requantizes with the scales' product in f32, as
 * ONNX Runtime does.
 * Scales and zero points are read at run time. The integer convolutions
 * live in quant_conv.c. */
#include <math.h>
#include <string.h>

#include "fastmath.h"
#include "gemm.h"
#include "index_kernel.h"

static pl_status *qu_build_quantize(pl_module_ctx *ctx, const pl_node_desc *node,
                                    pl_kernel **out_kernel);
static pl_status *qu_build_dynamic(pl_module_ctx *ctx, const pl_node_desc *node,
                                   pl_kernel **out_kernel);
static pl_status *qu_build_matmul(pl_module_ctx *ctx, const pl_node_desc *node,
                                  pl_kernel **out_kernel);

const cpu_op_entry cpu_ops_quant[] = {
    {"QuantizeLinear", qu_build_quantize, 2, 3, 0, CPU_OP_ANY_DTYPE},
    {"DequantizeLinear", qu_build_quantize, 2, 3, 0, CPU_OP_ANY_DTYPE},
    {"DynamicQuantizeLinear", qu_build_dynamic, 1, 1, 0,
     CPU_OP_ANY_DTYPE | CPU_OP_MULTI_OUTPUT},
    {"MatMulInteger", qu_build_matmul, 2, 4, 0, CPU_OP_ANY_DTYPE},
    {"QLinearMatMul", qu_build_matmul, 8, 8, 0, CPU_OP_ANY_DTYPE},
    {"ConvInteger", qu_build_conv, 2, 4, 0, CPU_OP_ANY_DTYPE},
    {"QLinearConv", qu_build_conv, 8, 9, 0, CPU_OP_ANY_DTYPE},
    {NULL, NULL, 0, 0, 0, 0},
};

/* Element I of a u8 (SIGNED false) or i8 tensor at P. */
static inline int32_t qu_q8(const char *p, bool is_signed, size_t i)
{
    return is_signed ? (int32_t)((const int8_t *)(const void *)p)[i]
                     : (int32_t)((const uint8_t *)(const void *)p)[i];
}

static inline bool qu_is_q8(pl_dtype dt, bool *out_signed)
{
    *out_signed = PL_DTYPE_EQ(dt, PL_DTYPE_I8);
    return *out_signed || PL_DTYPE_EQ(dt, PL_DTYPE_U8);
}

/* Rounds V half to even and saturates it to u8 or i8 at Y[I]. */
static inline void qu_store_q8(char *y, bool is_signed, size_t i, double v)
{
    double lo = is_signed ? -128 : 0, hi = is_signed ? 127 : 255;
    v = nearbyint(v);
    v = v < lo ? lo : v > hi ? hi : v;
    if (is_signed)
        ((int8_t *)(void *)y)[i] = (int8_t)v;
    else
        ((uint8_t *)(void *)y)[i] = (uint8_t)v;
}

/* ---- QuantizeLinear, DequantizeLinear --------------------------------------- */

/* Element e of X uses the scale and zero point of entry (e / inner) % n
 * of the axis; per tensor, n is 1. */
typedef struct qu_kernel {
    shp_kernel k;
    bool dequantize;
    size_t inner, n_params;
    bool has_zp, q_signed;
    pl_dtype x_dt;
} qu_kernel;

static pl_status *qu_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                           const pl_run_args *args, size_t o, void *dst,
                           pl_output_request req)
{
    (void)ctx, (void)o, (void)req;
    const qu_kernel *k = (const qu_kernel *)kernel;
    const float *scale = (const float *)(const void *)shp_in(args, 1);
    const char *x = shp_in(args, 0), *zp = k->has_zp ? shp_in(args, 2) : NULL;
    size_t n = kernel->outs[0].elements;
    bool x_i32 = PL_DTYPE_EQ(k->x_dt, PL_DTYPE_I32);
    for (size_t p = 0; p < k->n_params; p++)
        if (!k->dequantize && !(scale[p] != 0))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->base.op,
                             "scale %zu is %g; it must be nonzero", p, (double)scale[p]);
    if (k->n_params == 1 && !x_i32) {
        /* One scale (the usual case): tight loops, the same arithmetic. */
        int32_t z = zp != NULL ? qu_q8(zp, k->q_signed, 0) : 0;
        if (k->dequantize) {
            float lut[256];
            for (int v = 0; v < 256; v++)
                lut[v] = ((float)(k->q_signed ? (int32_t)(int8_t)v : v) - (float)z) * scale[0];
            const uint8_t *q = (const uint8_t *)(const void *)x;
            for (size_t e = 0; e < n; e++)
                ((float *)dst)[e] = lut[q[e]];
            return NULL;
        }
        const float *xf = (const float *)(const void *)x;
        const float s0 = scale[0], lo = k->q_signed ? -128.0f : 0.0f,
                    hi = k->q_signed ? 127.0f : 255.0f, zf = (float)z;
        for (size_t e = 0; e < n; e++) {
            float v = cpu_round_even(xf[e] / s0) + zf;
            v = v < lo ? lo : v > hi ? hi : v;
            if (!(v == v))
                v = 0.0f; /* NaN: what the double path's conversion gave on x86 */
            if (k->q_signed)
                ((int8_t *)dst)[e] = (int8_t)v;
            else
                ((uint8_t *)dst)[e] = (uint8_t)v;
        }
        return NULL;
    }
    for (size_t e = 0; e < n; e++) {
        size_t p = (e / k->inner) % k->n_params;
        int32_t z = zp != NULL ? (x_i32 && k->dequantize ? ((const int32_t *)(const void *)zp)[p]
                                                         : qu_q8(zp, k->q_signed, p))
                               : 0;
        if (k->dequantize) {
            float v = x_i32 ? (float)((const int32_t *)(const void *)x)[e]
                            : (float)qu_q8(x, k->q_signed, e);
            ((float *)dst)[e] = (v - (float)z) * scale[p];
        } else if (x_i32) {
            double v = (double)((const int32_t *)(const void *)x)[e] / scale[p];
            qu_store_q8(dst, k->q_signed, e, nearbyint(v) + z);
        } else {
            float v = ((const float *)(const void *)x)[e] / scale[p];
            qu_store_q8(dst, k->q_signed, e, nearbyint((double)v) + z);
        }
    }
    return NULL;
}

static pl_status *qu_build_quantize(pl_module_ctx *ctx, const pl_node_desc *node,
                                    pl_kernel **out_kernel)
{
    const char *op = node->op;
    const pl_tensor *x = &node->inputs[0], *s = &node->inputs[1], *o = &node->outputs[0];
    bool deq = strcmp(op, "DequantizeLinear") == 0, has_zp = shp_input_present(node, 2);
    const pl_tensor *q = deq ? x : o;
    bool q_signed = false;
    if (!PL_DTYPE_EQ(s->dtype, PL_DTYPE_F32))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "the scale must be f32");
    if (deq ? !PL_DTYPE_EQ(o->dtype, PL_DTYPE_F32) || (!qu_is_q8(x->dtype, &q_signed) &&
                                                        !PL_DTYPE_EQ(x->dtype, PL_DTYPE_I32))
            : !qu_is_q8(o->dtype, &q_signed) || !(PL_DTYPE_EQ(x->dtype, PL_DTYPE_F32) ||
                                                  PL_DTYPE_EQ(x->dtype, PL_DTYPE_I32)))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "unsupported dtypes");
    if (has_zp && !PL_DTYPE_EQ(node->inputs[2].dtype, q->dtype))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "the zero point's dtype is not the quantized one's");
    if (cpu_elements(x->shape, x->ndim) != cpu_elements(o->shape, o->ndim))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "input and output differ in size");
    size_t n_params = cpu_elements(s->shape, s->ndim), inner = 1;
    if (n_params != 1) {
        int a = 0;
        if (s->ndim != 1 || x->ndim < 1)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "the scale must be a scalar or a vector");
        SHP_TRY(ix_axis(node, 1, x->ndim, &a));
        if ((int64_t)n_params != x->shape[a])
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "%zu scales for an axis of %lld entries", n_params,
                             (long long)x->shape[a]);
        inner = cpu_elements(x->shape + a + 1, x->ndim - a - 1);
    }
    if (has_zp && cpu_elements(node->inputs[2].shape, node->inputs[2].ndim) != n_params)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "the zero point has another element count than the scale");
    qu_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, qu_write, (shp_kernel **)&k));
    k->dequantize = deq;
    k->inner = inner == 0 ? 1 : inner;
    k->n_params = n_params;
    k->has_zp = has_zp;
    k->q_signed = q_signed;
    k->x_dt = x->dtype;
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- DynamicQuantizeLinear ---------------------------------------------------- */

/* The u8 scale and zero point that map [min(0, x), max(0, x)] onto
 * [0, 255], as ONNX's reference computes them (in f32). A zero range
 * (all of x zero, or empty) gives scale 0 and zero point 0. */
static void qu_dynamic_params(const float *x, size_t n, float *out_scale, uint8_t *out_zp)
{
    float lo = 0, hi = 0;
    for (size_t i = 0; i < n; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    float scale = (hi - lo) / 255.0f;
    *out_scale = scale;
    if (!(scale > 0) || !isfinite(scale)) {
        *out_zp = 0;
        return;
    }
    float zp = 0.0f - lo / scale;
    zp = zp < 0 ? 0 : zp > 255 ? 255 : zp;
    *out_zp = (uint8_t)nearbyintf(zp);
}

static pl_status *qu_dynamic_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                                   const pl_run_args *args, size_t o, void *dst,
                                   pl_output_request req)
{
    (void)ctx, (void)req;
    const float *x = (const float *)(const void *)shp_in(args, 0);
    size_t n = cpu_elements(args->inputs[0].shape, args->inputs[0].ndim);
    if (n != kernel->outs[0].elements)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->base.op,
                         "the input does not have the output's %zu elements",
                         kernel->outs[0].elements);
    float scale;
    uint8_t zp;
    qu_dynamic_params(x, n, &scale, &zp);
    if (o == 1) {
        memcpy(dst, &scale, sizeof scale);
    } else if (o == 2) {
        memcpy(dst, &zp, 1);
    } else {
        for (size_t i = 0; i < n; i++)
            qu_store_q8(dst, false, i, scale > 0 ? nearbyint((double)(x[i] / scale)) + zp : 0);
    }
    return NULL;
}

static pl_status *qu_build_dynamic(pl_module_ctx *ctx, const pl_node_desc *node,
                                   pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0];
    if (!PL_DTYPE_EQ(x->dtype, PL_DTYPE_F32) || node->n_outputs != 3)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "f32 input and three outputs only");
    for (size_t o = 0; o < 3; o++) {
        const pl_tensor *t = &node->outputs[o];
        bool scalar = cpu_elements(t->shape, t->ndim) == 1;
        pl_dtype want = o == 1 ? PL_DTYPE_F32 : PL_DTYPE_U8;
        if (shp_output_present(node, o) &&
            (!PL_DTYPE_EQ(t->dtype, want) || (o > 0 && !scalar) ||
             (o == 0 && cpu_elements(t->shape, t->ndim) != cpu_elements(x->shape, x->ndim))))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "output %zu is not of the dtype and size it must have", o);
    }
    shp_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, qu_dynamic_write, &k));
    *out_kernel = &k->base;
    return NULL;
}

/* ---- MatMulInteger, QLinearMatMul ---------------------------------------------- */

/* [batch..., M, K] x [batch..., K, N] with broadcast batch dims; a rank-1
 * A is one row, a rank-1 B one column. */
typedef struct qu_mm_kernel {
    shp_kernel k;
    bool qlinear;
    int nb;                             /* output batch dims */
    int64_t batch[CPU_MAX_RANK];
    int64_t a_st[CPU_MAX_RANK], b_st[CPU_MAX_RANK]; /* in matrices */
    size_t m, kk, n;
    bool a_signed, b_signed, y_signed;
    /* Input numbers of A, B, their zero points, scales; y's scale and zp. */
    size_t ia, ib, iza, izb, isa, isb, isy, izy;
    bool has_za, has_zb;
    bool za_rows, zb_cols, sa_rows, sb_cols; /* per row / column, else one */
} qu_mm_kernel;

/* The largest |v - zero point| an 8-bit value can have. */
static int32_t qu_span(bool is_signed, int32_t zp)
{
    int32_t lo = is_signed ? -128 : 0, hi = is_signed ? 127 : 255;
    return zp - lo > hi - zp ? zp - lo : hi - zp;
}

/* One matrix of the batch on the module's SGEMM (quant_conv.c does the
 * same for convolutions): A - za and B - zb as floats, multiplied in slices
 * of K short enough that every partial sum stays below 2^24 (exact in f32),
 * summed in int64, then stored as MatMulInteger's i32 (wrapping) or
 * requantized as QLinearMatMul's. Zero points per row of A or column of B
 * are taken off before the product. False when memory is short (the direct
 * loop runs then). */
static bool qu_mm_gemm(pl_module_ctx *ctx, const qu_mm_kernel *k, const char *a, size_t ao,
                       const char *b, size_t bo, const char *za, const char *zb, const float *sa,
                       const float *sb, float sy, int32_t zy, void *dst, size_t at0)
{
    size_t m = k->m, kk = k->kk, n = k->n;
    size_t scratch_n = cpu_gemm_scratch_floats((int64_t)m, (int64_t)n, false, false);
    float *af = cpu_host->host_alloc(ctx->host_ctx, (m * kk > 0 ? m * kk : 1) * sizeof *af, 64);
    float *bf = cpu_host->host_alloc(ctx->host_ctx, (kk * n > 0 ? kk * n : 1) * sizeof *bf, 64);
    float *yf = cpu_host->host_alloc(ctx->host_ctx, (m * n > 0 ? m * n : 1) * sizeof *yf, 64);
    int64_t *acc = cpu_host->host_alloc(ctx->host_ctx, (m * n > 0 ? m * n : 1) * sizeof *acc, 64);
    float *scratch = scratch_n ? cpu_host->host_alloc(ctx->host_ctx, scratch_n * sizeof *scratch, 64)
                               : NULL;
    bool ok = af && bf && yf && acc && (scratch_n == 0 || scratch);
    if (ok) {
        int32_t amax = 1, bmax = 1;
        for (size_t i = 0; i < m; i++) {
            int32_t z = za ? qu_q8(za, k->a_signed, k->za_rows ? i : 0) : 0;
            int32_t span = qu_span(k->a_signed, z);
            amax = span > amax ? span : amax;
            for (size_t q = 0; q < kk; q++)
                af[i * kk + q] = (float)(qu_q8(a, k->a_signed, ao + i * kk + q) - z);
        }
        for (size_t q = 0; q < kk; q++)
            for (size_t j = 0; j < n; j++) {
                int32_t z = zb ? qu_q8(zb, k->b_signed, k->zb_cols ? j : 0) : 0;
                int32_t v = qu_q8(b, k->b_signed, bo + q * n + j) - z;
                bf[q * n + j] = (float)v;
                bmax = v > bmax ? v : -v > bmax ? -v : bmax;
            }
        size_t slice = (size_t)(((INT64_C(1) << 24) - 1) / ((int64_t)amax * bmax));
        slice = slice < 1 ? 1 : slice;
        memset(acc, 0, m * n * sizeof *acc);
        for (size_t k0 = 0; k0 < kk; k0 += slice) {
            size_t kc = kk - k0 < slice ? kk - k0 : slice;
            cpu_gemm_operand ga = {.data = af + k0, .ld = (int64_t)kk};
            cpu_gemm_operand gb = {.data = bf + k0 * n, .ld = (int64_t)n};
            cpu_gemm((int64_t)m, (int64_t)n, (int64_t)kc, 1.0f, &ga, &gb, 0.0f, yf, (int64_t)n,
                     scratch);
            for (size_t e = 0; e < m * n; e++)
                acc[e] += (int64_t)yf[e];
        }
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) {
                int32_t v = (int32_t)(uint32_t)(uint64_t)acc[i * n + j]; /* int32 wraps */
                size_t at = at0 + i * n + j;
                if (!k->qlinear) {
                    ((int32_t *)dst)[at] = v;
                    continue;
                }
                /* in f32, as ONNX Runtime requantizes (QLinearConv too) */
                float scale = sa[k->sa_rows ? i : 0] * sb[k->sb_cols ? j : 0] / sy;
                qu_store_q8(dst, k->y_signed, at, nearbyintf((float)v * scale) + zy);
            }
    }
    cpu_host->host_free(ctx->host_ctx, af);
    cpu_host->host_free(ctx->host_ctx, bf);
    cpu_host->host_free(ctx->host_ctx, yf);
    cpu_host->host_free(ctx->host_ctx, acc);
    cpu_host->host_free(ctx->host_ctx, scratch);
    return ok;
}

static pl_status *qu_mm_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                              const pl_run_args *args, size_t o, void *dst,
                              pl_output_request req)
{
    (void)ctx, (void)o, (void)req;
    const qu_mm_kernel *k = (const qu_mm_kernel *)kernel;
    const char *a = shp_in(args, k->ia), *b = shp_in(args, k->ib);
    const char *za = k->has_za ? shp_in(args, k->iza) : NULL;
    const char *zb = k->has_zb ? shp_in(args, k->izb) : NULL;
    const float *sa = NULL, *sb = NULL;
    float sy = 1;
    int32_t zy = 0;
    if (k->qlinear) {
        sa = (const float *)(const void *)shp_in(args, k->isa);
        sb = (const float *)(const void *)shp_in(args, k->isb);
        memcpy(&sy, shp_in(args, k->isy), sizeof sy);
        zy = qu_q8(shp_in(args, k->izy), k->y_signed, 0);
        if (!(sy != 0))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->base.op, "y_scale is %g",
                             (double)sy);
    }
    size_t n_batch = cpu_elements(k->batch, k->nb), mat = k->m * k->n;
    for (size_t t = 0; t < n_batch; t++) {
        size_t ao = (size_t)ix_offset(t, k->nb, k->batch, k->a_st) * k->m * k->kk;
        size_t bo = (size_t)ix_offset(t, k->nb, k->batch, k->b_st) * k->kk * k->n;
        if (k->kk >= 8 && qu_mm_gemm(ctx, k, a, ao, b, bo, za, zb, sa, sb, sy, zy, dst, t * mat))
            continue;
        for (size_t i = 0; i < k->m; i++)
            for (size_t j = 0; j < k->n; j++) {
                int32_t zai = za ? qu_q8(za, k->a_signed, k->za_rows ? i : 0) : 0;
                int32_t zbj = zb ? qu_q8(zb, k->b_signed, k->zb_cols ? j : 0) : 0;
                int64_t sum = 0;
                for (size_t q = 0; q < k->kk; q++)
                    sum += (int64_t)(qu_q8(a, k->a_signed, ao + i * k->kk + q) - zai) *
                           (qu_q8(b, k->b_signed, bo + q * k->n + j) - zbj);
                int32_t acc = (int32_t)(uint32_t)(uint64_t)sum; /* int32 wraps */
                size_t at = t * mat + i * k->n + j;
                if (!k->qlinear) {
                    ((int32_t *)dst)[at] = acc;
                    continue;
                }
                /* in f32, as ONNX Runtime requantizes (QLinearConv too) */
                float scale = sa[k->sa_rows ? i : 0] * sb[k->sb_cols ? j : 0] / sy;
                qu_store_q8(dst, k->y_signed, at, nearbyintf((float)acc * scale) + zy);
            }
    }
    return NULL;
}

/* Whether the zero point or scale input I holds one value (*out_per
 * false) or one per entry (COUNT of them); a refusal otherwise. */
static pl_status *qu_mm_param(const pl_node_desc *node, size_t i, size_t count, bool *out_per)
{
    *out_per = false;
    if (!shp_input_present(node, i))
        return NULL;
    size_t n = cpu_elements(node->inputs[i].shape, node->inputs[i].ndim);
    if (n == 1)
        return NULL;
    if (n == count && node->inputs[i].ndim == 1) {
        *out_per = true;
        return NULL;
    }
    return cpu_error(PL_CODE_UNSUPPORTED, node->op,
                     "input %zu has %zu values: only one, or one per row of A or column of B, "
                     "is supported", i, n);
}

static pl_status *qu_build_matmul(pl_module_ctx *ctx, const pl_node_desc *node,
                                  pl_kernel **out_kernel)
{
    const char *op = node->op;
    bool ql = strcmp(op, "QLinearMatMul") == 0;
    size_t ia = 0, ib = ql ? 3 : 1;
    const pl_tensor *a = &node->inputs[ia], *b = &node->inputs[ib], *o = &node->outputs[0];
    bool as, bs, ys = false;
    if (!qu_is_q8(a->dtype, &as) || !qu_is_q8(b->dtype, &bs) ||
        (ql ? !qu_is_q8(o->dtype, &ys) : !PL_DTYPE_EQ(o->dtype, PL_DTYPE_I32)))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "unsupported dtypes");
    if (a->ndim < 1 || b->ndim < 1)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "operands must have rank >= 1");
    size_t m = a->ndim >= 2 ? (size_t)a->shape[a->ndim - 2] : 1;
    size_t kk = (size_t)a->shape[a->ndim - 1];
    size_t kb = b->ndim >= 2 ? (size_t)b->shape[b->ndim - 2] : (size_t)b->shape[0];
    size_t n = b->ndim >= 2 ? (size_t)b->shape[b->ndim - 1] : 1;
    int ra = a->ndim >= 2 ? a->ndim - 2 : 0, rb = b->ndim >= 2 ? b->ndim - 2 : 0;
    int nb = o->ndim - (a->ndim >= 2) - (b->ndim >= 2);
    qu_mm_kernel tmp = {.qlinear = ql};
    bool ok = kk == kb && nb >= 0 && nb >= ra && nb >= rb &&
              cpu_broadcast_strides(a->shape, ra, o->shape, nb, tmp.a_st) &&
              cpu_broadcast_strides(b->shape, rb, o->shape, nb, tmp.b_st) &&
              cpu_elements(o->shape, o->ndim) == cpu_elements(o->shape, nb) * m * n;
    if (!ok) {
        char ta[128], tb[128], to[128];
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "%s x %s does not give %s",
                         cpu_dims_text(a->shape, a->ndim, ta, sizeof ta),
                         cpu_dims_text(b->shape, b->ndim, tb, sizeof tb),
                         cpu_dims_text(o->shape, o->ndim, to, sizeof to));
    }
    tmp.ia = ia;
    tmp.ib = ib;
    tmp.iza = 2;
    tmp.izb = ql ? 5 : 3;
    tmp.isa = 1;
    tmp.isb = 4;
    tmp.isy = 6;
    tmp.izy = 7;
    tmp.has_za = shp_input_present(node, tmp.iza);
    tmp.has_zb = shp_input_present(node, tmp.izb);
    SHP_TRY(qu_mm_param(node, tmp.iza, m, &tmp.za_rows));
    SHP_TRY(qu_mm_param(node, tmp.izb, n, &tmp.zb_cols));
    if (ql) {
        bool y_per;
        SHP_TRY(qu_mm_param(node, 1, m, &tmp.sa_rows));
        SHP_TRY(qu_mm_param(node, 4, n, &tmp.sb_cols));
        SHP_TRY(qu_mm_param(node, 6, 0, &y_per));
        SHP_TRY(qu_mm_param(node, 7, 0, &y_per));
        static const size_t scales[3] = {1, 4, 6};
        for (size_t i = 0; i < 3; i++)
            if (!PL_DTYPE_EQ(node->inputs[scales[i]].dtype, PL_DTYPE_F32))
                return cpu_error(PL_CODE_UNSUPPORTED, op, "scales must be f32");
    }
    for (size_t i = 0; i < 2; i++) {
        size_t zi = i == 0 ? tmp.iza : tmp.izb;
        if (shp_input_present(node, zi) &&
            !PL_DTYPE_EQ(node->inputs[zi].dtype, i == 0 ? a->dtype : b->dtype))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "a zero point differs in dtype from its operand");
    }
    qu_mm_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, qu_mm_write, (shp_kernel **)&k));
    shp_kernel base = k->k;
    *k = tmp;
    k->k = base;
    k->nb = nb;
    memcpy(k->batch, o->shape, (size_t)nb * sizeof(int64_t));
    k->m = m;
    k->kk = kk;
    k->n = n;
    k->a_signed = as;
    k->b_signed = bs;
    k->y_signed = ys;
    *out_kernel = &k->k.base;
    return NULL;
}
