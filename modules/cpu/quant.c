/* quant.c — the cpu module's linear quantization family: QuantizeLinear and
 * DequantizeLinear (a scale and zero point per tensor, or per entry of one
 * axis), DynamicQuantizeLinear, and the integer matrix products
 * MatMulInteger and QLinearMatMul, on u8 and i8; QuantizeLinear and
 * DequantizeLinear also on i16 and u16.
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

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#include "fastmath.h"
#include "igemm.h"
#include "index_kernel.h"
#include "nn_window.h"
#include "requant.h"

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

/* The quantized dtypes of QuantizeLinear and DequantizeLinear beyond the
 * 8-bit ones: i16 and u16 (ONNX Runtime's 16-bit activations), and i32,
 * which DequantizeLinear reads (a bias). */
typedef enum qu_qtype { QU_U8, QU_I8, QU_U16, QU_I16, QU_I32, QU_NONE } qu_qtype;

static qu_qtype qu_qtype_of(pl_dtype dt)
{
    return PL_DTYPE_EQ(dt, PL_DTYPE_U8)    ? QU_U8
           : PL_DTYPE_EQ(dt, PL_DTYPE_I8)  ? QU_I8
           : PL_DTYPE_EQ(dt, PL_DTYPE_U16) ? QU_U16
           : PL_DTYPE_EQ(dt, PL_DTYPE_I16) ? QU_I16
           : PL_DTYPE_EQ(dt, PL_DTYPE_I32) ? QU_I32
                                           : QU_NONE;
}

/* Element I of a tensor of quantized type T at P. */
static inline int32_t qu_load(const char *p, qu_qtype t, size_t i)
{
    switch (t) {
    case QU_U8: return ((const uint8_t *)(const void *)p)[i];
    case QU_I8: return ((const int8_t *)(const void *)p)[i];
    case QU_U16: return ((const uint16_t *)(const void *)p)[i];
    case QU_I16: return ((const int16_t *)(const void *)p)[i];
    default: return ((const int32_t *)(const void *)p)[i];
    }
}

/* Rounds V half to even and saturates it to T (8 or 16 bits) at Y[I]. */
static inline void qu_store(char *y, qu_qtype t, size_t i, double v)
{
    static const double lo[] = {0, -128, 0, -32768}, hi[] = {255, 127, 65535, 32767};
    v = nearbyint(v);
    v = v < lo[t] ? lo[t] : v > hi[t] ? hi[t] : v;
    switch (t) {
    case QU_U8: ((uint8_t *)(void *)y)[i] = (uint8_t)v; break;
    case QU_I8: ((int8_t *)(void *)y)[i] = (int8_t)v; break;
    case QU_U16: ((uint16_t *)(void *)y)[i] = (uint16_t)v; break;
    default: ((int16_t *)(void *)y)[i] = (int16_t)v; break;
    }
}

/* ---- QuantizeLinear, DequantizeLinear --------------------------------------- */

/* Element e of X uses the scale and zero point of entry (e / inner) % n
 * of the axis; per tensor, n is 1. */
typedef struct qu_kernel {
    shp_kernel k;
    bool dequantize;
    size_t inner, n_params;
    bool has_zp, q_signed;
    qu_qtype qt;          /* the quantized side's type */
    pl_dtype x_dt;
} qu_kernel;

/* DequantizeLinear of 8-bit values at one scale: (x - z) * s in f32, the
 * same operations per element as the general loop, in a loop the
 * compiler vectorises (a table of the 256 values, read one element at a
 * time, took 43 us for 64x32x32: three of every QLinearAdd's four steps
 * in resnet50_s_qop). */
typedef struct qu_dequant_call {
    const char *x;
    float *y;
    float z, s;
    bool is_signed;
} qu_dequant_call;

CPU_CLONES static void qu_dequant_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const qu_dequant_call *c = arg;
    const float z = c->z, s = c->s;
    float *restrict y = c->y;
    if (c->is_signed) {
        const int8_t *restrict q = (const int8_t *)(const void *)c->x;
        for (size_t e = begin; e < end; e++)
            y[e] = ((float)q[e] - z) * s;
    } else {
        const uint8_t *restrict q = (const uint8_t *)(const void *)c->x;
        for (size_t e = begin; e < end; e++)
            y[e] = ((float)q[e] - z) * s;
    }
}

/* QuantizeLinear at one scale, over the pool in blocks of elements. */
typedef struct qu_quant_call {
    const float *x;
    char *y;
    float z, s;
    bool is_signed;
} qu_quant_call;

static void qu_quant_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const qu_quant_call *c = arg;
    cpu_quantize_f32(c->x + begin, end - begin, c->s, c->z, c->is_signed, c->y + begin);
}

/* DequantizeLinear or QuantizeLinear of 8-bit values with a scale and
 * zero point per entry of an axis: the tensor as units, each a block of
 * INNER elements at one channel's parameters, or with INNER 1 a row of
 * N_PARAMS elements, a parameter each; the same arithmetic per element as
 * the general loop, in loops the compiler vectorises. Per element, the
 * general loop's division, modulo and dtype switch took 60% of loading
 * a per-channel int8 MobileNetV2 (TFLite's dynamic-range quantization,
 * folded at load): 1.9 M weights in 12 ms. */
typedef struct qu_axis_call {
    const char *x;
    char *y;
    const float *s, *z; /* n_params each; z the zero points as f32 */
    size_t inner, n_params;
    bool dequantize, is_signed;
} qu_axis_call;

CPU_CLONES static void qu_dequant_run(const char *x, float *restrict y, size_t n, bool is_signed,
                                      const float *restrict s, const float *restrict z,
                                      bool per_element)
{
    /* one s and z for the N elements, or (PER_ELEMENT) one each */
#define QU_DEQ_LOOPS(T)                                                            \
    do {                                                                           \
        const T *restrict q = (const T *)(const void *)x;                          \
        if (!per_element)                                                          \
            for (size_t e = 0; e < n; e++)                                         \
                y[e] = ((float)q[e] - z[0]) * s[0];                                \
        else                                                                       \
            for (size_t e = 0; e < n; e++)                                         \
                y[e] = ((float)q[e] - z[e]) * s[e];                                \
    } while (0)
    if (is_signed)
        QU_DEQ_LOOPS(int8_t);
    else
        QU_DEQ_LOOPS(uint8_t);
#undef QU_DEQ_LOOPS
}

static void qu_axis_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const qu_axis_call *c = arg;
    size_t len = c->inner == 1 ? c->n_params : c->inner;
    for (size_t u = begin; u < end; u++) {
        size_t off = u * len, p = c->inner == 1 ? 0 : u % c->n_params;
        if (c->dequantize)
            qu_dequant_run(c->x + off, (float *)(void *)c->y + off, len, c->is_signed,
                           c->s + p, c->z + p, c->inner == 1);
        else if (c->inner != 1)
            cpu_quantize_f32((const float *)(const void *)c->x + off, len, c->s[p], c->z[p],
                             c->is_signed, c->y + off);
        else
            for (size_t e = 0; e < len; e++) {
                float v = ((const float *)(const void *)c->x)[off + e] / c->s[e];
                qu_store_q8(c->y, c->is_signed, off + e, nearbyint((double)v) + c->z[e]);
            }
    }
}

static pl_status *qu_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                           const pl_run_args *args, size_t o, void *dst,
                           pl_output_request req)
{
    (void)o, (void)req;
    const qu_kernel *k = (const qu_kernel *)kernel;
    const float *scale = (const float *)(const void *)shp_in(args, 1);
    const char *x = shp_in(args, 0), *zp = k->has_zp ? shp_in(args, 2) : NULL;
    size_t n = kernel->outs[0].elements;
    bool x_i32 = PL_DTYPE_EQ(k->x_dt, PL_DTYPE_I32);
    for (size_t p = 0; p < k->n_params; p++)
        if (!k->dequantize && !(scale[p] != 0))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->base.op,
                             "scale %zu is %g; it must be nonzero", p, (double)scale[p]);
    if (k->n_params == 1 && !x_i32 && (k->qt == QU_U8 || k->qt == QU_I8)) {
        /* One scale (the usual case): tight loops, the same arithmetic. */
        int32_t z = zp != NULL ? qu_q8(zp, k->q_signed, 0) : 0;
        if (k->dequantize) {
            qu_dequant_call c = {.x = x, .y = dst, .z = (float)z, .s = scale[0],
                                 .is_signed = k->q_signed};
            cpu_host->parallel_for(ctx->host_ctx, n, 16384, qu_dequant_chunk, &c);
            return NULL;
        }
        qu_quant_call c = {.x = (const float *)(const void *)x, .y = dst, .z = (float)z,
                           .s = scale[0], .is_signed = k->q_signed};
        cpu_host->parallel_for(ctx->host_ctx, n, 16384, qu_quant_chunk, &c);
        return NULL;
    }
    if (!x_i32 && (k->qt == QU_U8 || k->qt == QU_I8) && n > 0) {
        float zbuf[256], *zf = k->n_params <= 256 ? zbuf : malloc(k->n_params * sizeof *zf);
        if (zf == NULL)
            return cpu_error(PL_CODE_OUT_OF_MEMORY, kernel->base.op, "out of memory");
        for (size_t p = 0; p < k->n_params; p++)
            zf[p] = zp != NULL ? (float)qu_q8(zp, k->q_signed, p) : 0.0f;
        qu_axis_call c = {.x = x, .y = dst, .s = scale, .z = zf, .inner = k->inner,
                          .n_params = k->n_params, .dequantize = k->dequantize,
                          .is_signed = k->q_signed};
        size_t len = k->inner == 1 ? k->n_params : k->inner, units = n / len;
        cpu_host->parallel_for(ctx->host_ctx, units, (16384 + len - 1) / len, qu_axis_chunk, &c);
        if (zf != zbuf)
            free(zf);
        return NULL;
    }
    for (size_t e = 0; e < n; e++) {
        size_t p = (e / k->inner) % k->n_params;
        int32_t z = zp != NULL ? qu_load(zp, k->qt, p) : 0;
        if (k->dequantize) {
            /* (x - z) in f32 as ONNX's reference; exact up to 2^24, so an
             * i32 bias beyond that rounds as its reference does too */
            float v = (float)qu_load(x, k->qt, e);
            ((float *)dst)[e] = (v - (float)z) * scale[p];
        } else if (x_i32) {
            double v = (double)((const int32_t *)(const void *)x)[e] / scale[p];
            qu_store(dst, k->qt, e, nearbyint(v) + z);
        } else {
            float v = ((const float *)(const void *)x)[e] / scale[p];
            qu_store(dst, k->qt, e, nearbyint((double)v) + z);
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
    qu_qtype qt = qu_qtype_of(q->dtype);
    q_signed = qt == QU_I8;
    if (deq ? !PL_DTYPE_EQ(o->dtype, PL_DTYPE_F32) || qt == QU_NONE
            : qt == QU_NONE || qt == QU_I32 || !(PL_DTYPE_EQ(x->dtype, PL_DTYPE_F32) ||
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
    k->qt = qt;
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
    size_t i = 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    /* minps/maxps keep their second operand when the first is NaN, as the
     * comparisons below do, so NaNs are skipped the same way */
    __m128 l[4], h[4];
    for (int a = 0; a < 4; a++)
        l[a] = h[a] = _mm_setzero_ps();
    for (; i + 16 <= n; i += 16)
        for (int a = 0; a < 4; a++) {
            __m128 v = _mm_loadu_ps(x + i + 4 * a);
            l[a] = _mm_min_ps(v, l[a]);
            h[a] = _mm_max_ps(v, h[a]);
        }
    float lv[16], hv[16];
    for (int a = 0; a < 4; a++) {
        _mm_storeu_ps(lv + 4 * a, l[a]);
        _mm_storeu_ps(hv + 4 * a, h[a]);
    }
    for (int a = 0; a < 16; a++) {
        lo = lv[a] < lo ? lv[a] : lo;
        hi = hv[a] > hi ? hv[a] : hi;
    }
#endif
    for (; i < n; i++) {
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
    /* shp_run writes outputs 0, 1, 2 in order on one thread: the scale and
     * zero point output 0 found serve 1 and 2 (a pass over x each, three
     * passes in all, was 40 us of a BERT layer's [128, 1024]) when output
     * 0 was written in this same run, i.e. requested (ARGS and X the same
     * pointers say it is this run's call, the request says 0 ran). */
    static _Thread_local struct {
        const pl_run_args *args;
        const float *x;
        float scale;
        uint8_t zp;
    } memo;
    float scale;
    uint8_t zp;
    if (o > 0 && memo.args == args && memo.x == x && args->requests[0] != PL_REQ_NULL) {
        scale = memo.scale;
        zp = memo.zp;
    } else {
        qu_dynamic_params(x, n, &scale, &zp);
        if (o == 0) {
            memo.args = args;
            memo.x = x;
            memo.scale = scale;
            memo.zp = zp;
        }
    }
    if (o == 1) {
        memcpy(dst, &scale, sizeof scale);
    } else if (o == 2) {
        memcpy(dst, &zp, 1);
    } else {
        /* qu_store_q8's rounding and saturation in f32 (exact: x / scale
         * is an f32 already) */
        if (!(scale > 0)) {
            memset(dst, 0, n);
            return NULL;
        }
        cpu_quantize_f32(x, n, scale, (float)zp, false, dst);
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
    /* A constant B without batch dims, packed for the integer GEMM when
     * the kernel is made; NULL otherwise. */
    const char *b_pre;
    /* B in cpu_igemv's byte panels, the product on cpu_igemv_cols
     * (qu_mm_vpack_fits) */
    bool vpack;
} qu_mm_kernel;

/* Rows of A up to which a product whose A has one zero point reads B from
 * cpu_igemv's byte panels where the CPU's integer GEMM is AVX2's: a
 * decoder's step (a few tokens by a [K, N] weight) streamed the GEMM's i16
 * panels, twice B's bytes, 6 or 8 columns wide for one to four real. */
#define QU_MM_VPACK_MAX_ROWS 4

static bool qu_mm_vpack_fits(const qu_mm_kernel *k)
{
    return k->m <= QU_MM_VPACK_MAX_ROWS && !k->za_rows &&
           cpu_igemv_packed_bytes((int64_t)k->n, (int64_t)k->kk) > 0;
}

/* Bytes of one packed matrix of B, and of one product's scratch. */
static size_t qu_mm_pack_bytes(const qu_mm_kernel *k)
{
    return k->vpack ? cpu_igemv_packed_bytes((int64_t)k->n, (int64_t)k->kk)
                    : cpu_igemm_packed_a_bytes((int64_t)k->n, (int64_t)k->kk);
}

static size_t qu_mm_scratch(const qu_mm_kernel *k)
{
    return k->vpack ? cpu_igemv_cols_scratch_bytes((int64_t)k->kk)
                    : cpu_igemm_scratch_bytes((int64_t)k->m, (int64_t)k->kk);
}

/* One MatMulInteger / QLinearMatMul on the integer GEMM: what every chunk
 * reads. The product runs transposed, Y^T = B^T A^T: B (usually constant
 * weights) is the packed side, its zero points one per row of B^T. */
typedef struct qu_mm_call {
    pl_module_ctx *ctx;
    const qu_mm_kernel *k;
    const char *a, *b;
    const int32_t *za, *zb; /* m and n values (zb NULL when B is prepacked) */
    const float *sa, *sb;
    float sy;
    int32_t zy;
    void *dst;
    const char *bpack;      /* per batch matrix of B, bpack_bytes apart */
    size_t bpack_bytes;
    size_t row_block, n_blocks;
    char *work;             /* the kernel's workspace, SLICE bytes a worker, or NULL */
    size_t slice;
    int failed;
} qu_mm_call;

/* Whether K's product runs on the caller alone (cpu_igemm_serial_macs). */
static bool qu_mm_serial(const qu_mm_kernel *k)
{
    return cpu_elements(k->batch, k->nb) * k->m * k->n * k->kk < cpu_igemm_serial_macs();
}

/* Rows of B^T (columns of Y) in one item of K's product on THREADS: whole
 * panels, at least two items per thread when N allows; a small product
 * (on the caller alone) one block a matrix: each item packs A again (on
 * two threads 128 x 256 by 256 x 256, 8.4M, ran in four items, 0.053 ms a
 * run against 0.028 in two on one thread). */
static size_t qu_mm_row_block(const qu_mm_kernel *k, size_t threads)
{
    size_t n_batch = cpu_elements(k->batch, k->nb);
    size_t mr = (size_t)(k->vpack ? cpu_igemv_rows() : cpu_igemm_mr());
    size_t want = qu_mm_serial(k)           ? 1
                  : 2 * threads > n_batch ? (2 * threads + n_batch - 1) / n_batch
                                          : 1;
    size_t rb = (k->n + want - 1) / want;
    rb = (rb + mr - 1) / mr * mr;
    return rb < mr ? mr : rb;
}

/* One worker's scratch for blocks of RB rows: the sums (Y^T's block) and
 * igemm's panel, each 64-byte aligned. Kept in the kernel's workspace, so
 * that a run allocates nothing: the 128 KB of a [128, 256] product's sums,
 * allocated and freed every run, came back from the system as page
 * faults and TLB shootdowns (perf: 13% of the run). */
static size_t qu_mm_slice(const qu_mm_kernel *k, size_t rb)
{
    return CPU_IGEMM_R64((rb * k->m + 1) * sizeof(int32_t)) +
           CPU_IGEMM_R64(qu_mm_scratch(k));
}

static void qu_mm_chunk(void *arg, size_t begin, size_t end, int worker)
{
    qu_mm_call *c = arg;
    const qu_mm_kernel *k = c->k;
    size_t m = k->m, kk = k->kk, n = k->n, rb = c->row_block;
    char *own = c->work != NULL ? c->work + (size_t)worker * c->slice : NULL;
    int32_t *acc = own != NULL ? (int32_t *)(void *)own
                               : cpu_host->host_alloc(c->ctx->host_ctx,
                                                      (rb * m + 1) * sizeof *acc, 64);
    void *scratch = own != NULL ? own + CPU_IGEMM_R64((rb * m + 1) * sizeof *acc)
                                : cpu_host->host_alloc(c->ctx->host_ctx, qu_mm_scratch(k), 64);
    if (!acc || !scratch) {
        __atomic_store_n(&c->failed, 1, __ATOMIC_RELAXED);
        begin = end;
    }
    for (size_t item = begin; item < end; item++) {
        size_t t = item / c->n_blocks, r0 = (item % c->n_blocks) * rb;
        size_t rows = n - r0 < rb ? n - r0 : rb;
        size_t ao = (size_t)ix_offset(t, k->nb, k->batch, k->a_st) * m * kk;
        size_t bi = k->b_pre != NULL ? 0 : (size_t)ix_offset(t, k->nb, k->batch, k->b_st);
        cpu_igemm_q8 qa = {.data = c->a + ao, .ld = (int64_t)kk, .trans = true,
                           .is_signed = k->a_signed};
        if (k->vpack)
            cpu_igemv_cols(c->bpack + bi * c->bpack_bytes, (int64_t)r0, (int64_t)rows,
                           (int64_t)m, &qa, c->za[0], acc, (int64_t)m, scratch);
        else
            cpu_igemm((int64_t)rows, (int64_t)m, (int64_t)kk, c->bpack + bi * c->bpack_bytes,
                      (int64_t)r0, &qa, c->za, k->za_rows, acc, (int64_t)m, scratch);
        size_t at0 = t * m * n;
        /* ACC holds Y^T (a row of m per column j of Y): written back row by
         * row of Y, so the stores run along Y's rows and the strided reads
         * stay in ACC (in cache). Column by column, the stores went n
         * apart: a third of a dynamically quantized BERT's time. */
        if (!k->qlinear) {
            /* by 8 x 8 blocks turned in registers (nn_transpose, which
             * moves 32-bit lanes as they are); element by element, in
             * blocks of 64 rows of ACC, a [24, 1024] x [1024, 8210]
             * product on AMX took 0.678 ms on one thread, 0.527 so. By 32
             * rows of Y at a time, so that the rows being written stay
             * few: turning [768, 128] into [128, 768] in one call, whose
             * inner loop wrote 128 rows 3 KB apart, took 28 us, by 32 rows
             * 13 (a microbenchmark of the same blocks). */
            for (size_t i0 = 0; i0 < m; i0 += 32)
                nn_transpose((float *)((int32_t *)c->dst + at0 + i0 * n + r0), (int64_t)n,
                             (const float *)(acc + i0), (int64_t)m, (int64_t)rows,
                             (int64_t)(m - i0 < 32 ? m - i0 : 32), false);
            continue;
        }
        /* in f32, as ONNX Runtime requantizes (QLinearConv too) */
        const float lo = k->y_signed ? -128.0f : 0.0f, hi = k->y_signed ? 127.0f : 255.0f;
        const float zy = (float)c->zy;
        for (size_t i = 0; i < m; i++) {
            const float sai = c->sa[k->sa_rows ? i : 0];
            for (size_t r = 0; r < rows; r++) {
                size_t j = r0 + r;
                float scale = sai * c->sb[k->sb_cols ? j : 0] / c->sy;
                float v = cpu_round_even((float)acc[r * m + i] * scale) + zy;
                v = v < lo ? lo : v > hi ? hi : v;
                if (k->y_signed)
                    ((int8_t *)c->dst)[at0 + i * n + j] = (int8_t)v;
                else
                    ((uint8_t *)c->dst)[at0 + i * n + j] = (uint8_t)v;
            }
        }
    }
    if (own == NULL) {
        cpu_host->host_free(c->ctx->host_ctx, acc);
        cpu_host->host_free(c->ctx->host_ctx, scratch);
    }
}

/* The zero points of an operand as N i32 (one when not PER). */
static void qu_zero_points(const char *z, bool is_signed, bool per, size_t n, int32_t *out)
{
    for (size_t i = 0; i < (per ? n : 1); i++)
        out[i] = z != NULL ? qu_q8(z, is_signed, i) : 0;
}

/* Packs B [K, N] of batch matrix BI (B^T for the integer GEMM, with its
 * zero points ZB) at OUT. */
static void qu_mm_pack_b(const qu_mm_kernel *k, const char *b, size_t bi, const int32_t *zb,
                         void *out)
{
    cpu_igemm_q8 qb = {.data = b + bi * k->kk * k->n, .ld = (int64_t)k->n, .trans = true,
                       .is_signed = k->b_signed};
    if (k->vpack)
        cpu_igemv_pack((int64_t)k->n, (int64_t)k->kk, &qb, zb, k->zb_cols, out);
    else
        cpu_igemm_pack_a((int64_t)k->n, (int64_t)k->kk, &qb, zb, k->zb_cols, out);
}

/* A constant B packed for the integer GEMM with its zero points
 * (cpu_share_derived's fill). */
typedef struct qu_mm_fill {
    const qu_mm_kernel *k;
    const void *b, *zb;
    int32_t *zbuf; /* n + 1 scratch */
} qu_mm_fill;

static void qu_mm_fill_run(void *arg, void *out)
{
    const qu_mm_fill *f = arg;
    qu_zero_points(f->zb, f->k->b_signed, f->k->zb_cols, f->k->n, f->zbuf);
    qu_mm_pack_b(f->k, f->b, 0, f->zbuf, out);
}

/* The whole batch on the integer GEMM (igemm.h), the (batch, block of
 * columns of Y) items spread over the pool. False when memory is short
 * (the direct loop runs then). */
static bool qu_mm_igemm(pl_module_ctx *ctx, const qu_mm_kernel *k, const char *a, const char *b,
                        const char *za, const char *zb, const float *sa, const float *sb,
                        float sy, int32_t zy, void *dst, const pl_run_args *args)
{
    size_t m = k->m, n = k->n;
    size_t n_batch = cpu_elements(k->batch, k->nb);
    size_t threads = (size_t)cpu_host->thread_count(ctx->host_ctx);
    const bool serial = qu_mm_serial(k);
    size_t rb = qu_mm_row_block(k, threads), slice = qu_mm_slice(k, rb);
    /* the workspace the kernel asked for, when the core handed it and the
     * pool is as large as when it asked */
    char *work = args->workspace != NULL && args->workspace_bytes >= slice * threads
                     ? args->workspace
                     : NULL;
    bool pre = k->b_pre != NULL;
    size_t bpack_bytes = qu_mm_pack_bytes(k);
    /* B's distinct matrices: those its batch strides reach */
    size_t nb_mats = 1;
    for (int d = 0; d < k->nb; d++)
        if (k->b_st[d] != 0)
            nb_mats *= (size_t)k->batch[d];
    qu_mm_call *c = cpu_host->host_alloc(ctx->host_ctx, sizeof *c, 64);
    int32_t *zbuf = cpu_host->host_alloc(ctx->host_ctx, (m + n + 2) * sizeof *zbuf, 64);
    char *bp = pre ? NULL : cpu_host->host_alloc(ctx->host_ctx, nb_mats * bpack_bytes, 64);
    bool ok = c && zbuf && (pre || bp);
    if (ok) {
        int32_t *zam = zbuf, *zbn = zbuf + m + 1;
        qu_zero_points(za, k->a_signed, k->za_rows, m, zam);
        qu_zero_points(zb, k->b_signed, k->zb_cols, n, zbn);
        for (size_t bi = 0; !pre && bi < nb_mats; bi++)
            qu_mm_pack_b(k, b, bi, zbn, bp + bi * bpack_bytes);
        *c = (qu_mm_call){.ctx = ctx, .k = k, .a = a, .b = b, .za = zam, .zb = zbn, .sa = sa,
                          .sb = sb, .sy = sy, .zy = zy, .dst = dst,
                          .bpack = pre ? k->b_pre : bp, .bpack_bytes = bpack_bytes,
                          .row_block = rb, .n_blocks = (n + rb - 1) / rb, .work = work,
                          .slice = slice};
        /* a small product on the caller alone */
        size_t items = n_batch * c->n_blocks;
        cpu_host->parallel_for(ctx->host_ctx, items, serial ? items : 1, qu_mm_chunk, c);
        ok = !__atomic_load_n(&c->failed, __ATOMIC_RELAXED);
    }
    cpu_host->host_free(ctx->host_ctx, c);
    cpu_host->host_free(ctx->host_ctx, zbuf);
    cpu_host->host_free(ctx->host_ctx, bp);
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
    if (qu_mm_igemm(ctx, k, a, b, za, zb, sa, sb, sy, zy, dst, args))
        return NULL;
    size_t n_batch = cpu_elements(k->batch, k->nb), mat = k->m * k->n;
    for (size_t t = 0; t < n_batch; t++) {
        size_t ao = (size_t)ix_offset(t, k->nb, k->batch, k->a_st) * k->m * k->kk;
        size_t bo = (size_t)ix_offset(t, k->nb, k->batch, k->b_st) * k->kk * k->n;
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
    /* A constant B (and zero points) of one matrix: packed here, once */
    const pl_graph_api *g = cpu_host->graph;
    const void *bdata = NULL, *zbdata = NULL;
    size_t bbytes = 0, zbbytes = 0;
    bool pre = g != NULL && node->graph != NULL && kk > 0 && n > 0 && rb == 0 &&
               !cpu_node_query(node);
    if (pre) {
        int64_t tb = g->node_input(node->graph, node->node_index, ib);
        int64_t tz = tmp.has_zb ? g->node_input(node->graph, node->node_index, tmp.izb) : -1;
        pre = tb >= 0 && g->tensor_constant(node->graph, tb, &bdata, &bbytes) &&
              bbytes == kk * n &&
              (!tmp.has_zb || (tz >= 0 && g->tensor_constant(node->graph, tz, &zbdata, &zbbytes)));
    }
    size_t head = (sizeof(qu_mm_kernel) + 63) & ~(size_t)63;
    /* the packing reads the template's sizes and signedness */
    tmp.m = m;
    tmp.kk = kk;
    tmp.n = n;
    tmp.b_signed = bs;
    /* byte panels for a constant B only: cpu_igemv_pack is a plain loop,
     * no cheaper per run than the product it would serve */
    tmp.vpack = pre && qu_mm_vpack_fits(&tmp);
    size_t packed = pre ? qu_mm_pack_bytes(&tmp) : 0;
    int32_t *zbuf = pre ? cpu_host->host_alloc(ctx->host_ctx, (n + 1) * sizeof *zbuf, 64) : NULL;
    if (pre && zbuf == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory packing B");
    qu_mm_fill fill = {&tmp, bdata, zbdata, zbuf};
    cpu_shared_pack *hold = NULL;
    const void *shared = NULL;
    if (pre) {
        const size_t sources[] = {tmp.ib, tmp.izb};
        const int64_t params[] = {CPU_SHARE_IGEMM_MM_B, (int64_t)n, (int64_t)kk, bs,
                                  tmp.zb_cols, tmp.has_zb, tmp.vpack};
        shared = cpu_share_derived(ctx, node, sources, tmp.has_zb ? 2 : 1, params, 7, packed,
                                   qu_mm_fill_run, &fill, &hold);
    }
    qu_mm_kernel *k;
    pl_status *st = shp_kernel_alloc(ctx, node, head + (shared != NULL ? 0 : packed), qu_mm_write,
                                     (shp_kernel **)&k);
    if (st != NULL) {
        cpu_pack_unshare(ctx, hold);
        cpu_host->host_free(ctx->host_ctx, zbuf);
        return st;
    }
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
    k->k.base.shared_pack = hold;
    if (shared != NULL) {
        k->b_pre = shared;
    } else if (pre) {
        fill.k = k;
        qu_mm_fill_run(&fill, (char *)k + head);
        k->b_pre = (const char *)k + head;
    }
    cpu_host->host_free(ctx->host_ctx, zbuf);
    size_t threads = (size_t)cpu_host->thread_count(ctx->host_ctx);
    k->k.base.workspace_bytes = qu_mm_slice(k, qu_mm_row_block(k, threads)) * threads;
    *out_kernel = &k->k.base;
    return NULL;
}
