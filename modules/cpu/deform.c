/* deform.c — the cpu module's DeformConv (ONNX 19, torchvision's
 * deform_conv2d): a 2-D convolution whose every kernel tap reads the input
 * at its place moved by a learned offset, bilinearly interpolated, and
 * optionally scaled by a mask.
 *
 * For output (oy, ox) and tap (i, j) of offset group g, the tap reads
 * X[c] at y = oy * stride - pad + i * dilation + offset[g, 2t], x alike
 * with offset[g, 2t + 1] (t = i * kW + j), where X is zero outside: the
 * four corners of a sample each count only inside the plane, and a sample
 * at -1 or beyond the last row or column is 0 (torchvision's
 * bilinear_interpolate, which ONNX's reference and ONNX Runtime follow).
 * The mask (when given) multiplies the sample: mask[g, t].
 *
 * A run does, for each image: the samples of every (offset group, tap,
 * output position) — four corners and their weights, the mask folded in —
 * which every channel of the offset group shares; the columns
 * [C x kH x kW, oH x oW] from them (tasks over channels); then per group
 * the product of W_g [M/group, C/group x taps] by its rows of the columns
 * (one task per thread over the output positions), the bias added. f32; f16 and bf16 come through
 * dtype_wrap.c. */
#include <math.h>
#include <string.h>

#include "gemm.h"
#include "shape_kernel.h"

static pl_status *df_build(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel);

const cpu_op_entry cpu_ops_deform[] = {
    {"DeformConv", df_build, 3, 5, 0, CPU_OP_ANY_DTYPE},
    {NULL, NULL, 0, 0, 0, 0},
};

typedef struct df_kernel {
    shp_kernel k;
    int64_t n, c, h, w, m, oh, ow, kh, kw;
    int64_t group, offset_group;
    int64_t sh, sw, ph, pw, dh, dw;
    bool has_bias, has_mask;
} df_kernel;

/* One sample of a tap at one output position, for every channel of its
 * offset group: four element offsets into the plane and their weights
 * (the mask folded in; a corner outside the plane weighs 0 and reads
 * element 0). */
typedef struct df_tap {
    int32_t at[4];
    float w[4];
} df_tap;

typedef struct df_call {
    const df_kernel *k;
    const float *x, *off, *mask, *wt, *bias;
    float *col, *y;
    df_tap *taps;         /* [offset_group, kH x kW, oH x oW] */
    int64_t image;
    int64_t block;        /* output positions of one product task */
    float *scratch;       /* per worker: scratch_floats each */
    size_t scratch_floats;
} df_call;

/* The samples of rows [BEGIN, END) of (offset group, tap) for the call's
 * image: torchvision's bilinear_interpolate, zero outside. */
static void df_taps(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const df_call *c = arg;
    const df_kernel *k = c->k;
    const int64_t taps = k->kh * k->kw, plane = k->oh * k->ow;
    const int64_t h = k->h, w = k->w;
    for (size_t row = begin; row < end; row++) {
        const int64_t g = (int64_t)row / taps, t = (int64_t)row % taps;
        const int64_t i = t / k->kw, j = t % k->kw;
        const float *oy = c->off + ((c->image * k->offset_group + g) * 2 * taps + 2 * t) * plane;
        const float *ox = oy + plane;
        const float *mt = c->mask ? c->mask + ((c->image * k->offset_group + g) * taps + t) * plane
                                  : NULL;
        df_tap *tp = c->taps + (size_t)row * (size_t)plane;
        for (int64_t py = 0; py < k->oh; py++) {
            const float base_y = (float)(py * k->sh - k->ph + i * k->dh);
            for (int64_t px = 0; px < k->ow; px++) {
                const int64_t q = py * k->ow + px;
                const float y = base_y + oy[q];
                const float x = (float)(px * k->sw - k->pw + j * k->dw) + ox[q];
                df_tap *e = &tp[q];
                memset(e, 0, sizeof *e);
                if (y <= -1.0f || y >= (float)h || x <= -1.0f || x >= (float)w)
                    continue;
                const float yf = floorf(y), xf = floorf(x);
                const int64_t y0 = (int64_t)yf, x0 = (int64_t)xf;
                const float ly = y - yf, lx = x - xf, m = mt ? mt[q] : 1.0f;
                const float wy[2] = {1.0f - ly, ly}, wx[2] = {1.0f - lx, lx};
                for (int a = 0; a < 2; a++)
                    for (int b = 0; b < 2; b++) {
                        const int64_t yy = y0 + a, xx = x0 + b;
                        if (yy < 0 || yy >= h || xx < 0 || xx >= w)
                            continue;
                        e->at[2 * a + b] = (int32_t)(yy * w + xx);
                        e->w[2 * a + b] = wy[a] * wx[b] * m;
                    }
            }
        }
    }
}

/* Columns of channels [BEGIN, END) of the call's image, from the samples. */
static void df_columns(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const df_call *c = arg;
    const df_kernel *k = c->k;
    const int64_t taps = k->kh * k->kw, plane = k->oh * k->ow;
    const int64_t cpg = k->c / k->offset_group;
    for (size_t ch = begin; ch < end; ch++) {
        const int64_t g = (int64_t)ch / cpg;
        const float *xp = c->x + (c->image * k->c + (int64_t)ch) * k->h * k->w;
        for (int64_t t = 0; t < taps; t++) {
            const df_tap *tp = c->taps + (size_t)(g * taps + t) * (size_t)plane;
            float *col = c->col + ((int64_t)ch * taps + t) * plane;
            for (int64_t q = 0; q < plane; q++) {
                const df_tap *e = &tp[q];
                col[q] = (e->w[0] * xp[e->at[0]] + e->w[1] * xp[e->at[1]]) +
                         (e->w[2] * xp[e->at[2]] + e->w[3] * xp[e->at[3]]);
            }
        }
    }
}

/* Output positions [BEGIN, END) x block of every group, for the call's
 * image. */
static void df_product(void *arg, size_t begin, size_t end, int worker)
{
    const df_call *c = arg;
    const df_kernel *k = c->k;
    const int64_t taps = k->kh * k->kw, plane = k->oh * k->ow;
    const int64_t mg = k->m / k->group, kg = (k->c / k->group) * taps;
    float *scratch = c->scratch + (size_t)worker * c->scratch_floats;
    for (size_t blk = begin; blk < end; blk++) {
        const int64_t p0 = (int64_t)blk * c->block;
        const int64_t np = p0 + c->block <= plane ? c->block : plane - p0;
        for (int64_t g = 0; g < k->group; g++) {
            float *y = c->y + (c->image * k->m + g * mg) * plane + p0;
            cpu_gemm_operand a = {.data = c->wt + g * mg * kg, .ld = kg};
            cpu_gemm_operand b = {.data = c->col + g * kg * plane + p0, .ld = plane};
            cpu_gemm_epilogue epi = {.row_bias = c->bias ? c->bias + g * mg : NULL};
            cpu_gemm_ex(mg, np, kg, 1.0f, &a, &b, 0.0f, y, plane, scratch, &epi);
        }
    }
}

static pl_status *df_write(pl_module_ctx *ctx, const shp_kernel *kernel, const pl_run_args *args,
                           size_t o, void *dst, pl_output_request req)
{
    (void)o, (void)req;
    const df_kernel *k = (const df_kernel *)kernel;
    const int64_t taps = k->kh * k->kw, plane = k->oh * k->ow;
    const int64_t mg = k->m / k->group;
    int threads = cpu_host->thread_count(ctx->host_ctx);
    /* one product task per thread (each packs W_g once), in blocks of at
     * least 256 positions, a multiple of 64 */
    int64_t block = (plane + threads - 1) / threads;
    block = block < 256 ? 256 : (block + 63) & ~(int64_t)63;
    size_t col_floats = ((size_t)(k->c * taps * plane) + 15) & ~(size_t)15;
    size_t tap_floats = (size_t)(k->offset_group * taps * plane) * (sizeof(df_tap) / 4);
    tap_floats = (tap_floats + 15) & ~(size_t)15;
    size_t sf = cpu_gemm_scratch_floats(mg, plane < block ? plane : block, 0, false, false);
    sf = (sf + 15) & ~(size_t)15; /* each worker's part 64-byte aligned */
    size_t total = col_floats + tap_floats + sf * (size_t)threads;
    float *col = cpu_host->host_alloc(ctx->host_ctx, total * sizeof(float), 64);
    if (col == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, kernel->base.op,
                         "out of memory for %zu floats of samples and columns", total);
    df_call c = {
        .k = k,
        .x = (const float *)(const void *)shp_in(args, 0),
        .wt = (const float *)(const void *)shp_in(args, 1),
        .off = (const float *)(const void *)shp_in(args, 2),
        .bias = k->has_bias ? (const float *)(const void *)shp_in(args, 3) : NULL,
        .mask = k->has_mask ? (const float *)(const void *)shp_in(args, 4) : NULL,
        .col = col,
        .taps = (df_tap *)(void *)(col + col_floats),
        .y = dst,
        .block = block,
        .scratch = col + col_floats + tap_floats,
        .scratch_floats = sf,
    };
    size_t blocks = (size_t)((plane + block - 1) / block);
    for (int64_t img = 0; img < k->n; img++) {
        c.image = img;
        cpu_host->parallel_for(ctx->host_ctx, (size_t)(k->offset_group * taps), 1, df_taps, &c);
        cpu_host->parallel_for(ctx->host_ctx, (size_t)k->c, 1, df_columns, &c);
        cpu_host->parallel_for(ctx->host_ctx, blocks, 1, df_product, &c);
    }
    cpu_host->host_free(ctx->host_ctx, col);
    return NULL;
}

/* Attribute NAME of 2 values (DEF when absent) into OUT. */
static pl_status *df_pair(const pl_node_desc *node, const char *name, size_t want, int64_t def,
                          int64_t *out)
{
    const int64_t *v;
    size_t n;
    SHP_TRY(cpu_attr_ints(node, name, &v, &n));
    if (v != NULL && n != want)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "%s has %zu values, expected %zu",
                         name, n, want);
    for (size_t i = 0; i < want; i++)
        out[i] = v != NULL ? v[i] : def;
    return NULL;
}

static pl_status *df_build(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const char *op = node->op;
    const pl_tensor *x = &node->inputs[0], *wt = &node->inputs[1], *off = &node->inputs[2];
    const pl_tensor *o = &node->outputs[0];
    bool has_bias = shp_input_present(node, 3), has_mask = shp_input_present(node, 4);
    for (size_t i = 0; i < node->n_inputs; i++)
        if (shp_input_present(node, i) && !PL_DTYPE_EQ(node->inputs[i].dtype, PL_DTYPE_F32))
            return cpu_error(PL_CODE_UNSUPPORTED, op, "unsupported dtype: f32 only");
    if (!PL_DTYPE_EQ(o->dtype, PL_DTYPE_F32))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "unsupported dtype: f32 only");
    if (x->ndim != 4 || wt->ndim != 4 || off->ndim != 4 || o->ndim != 4)
        return cpu_error(PL_CODE_UNSUPPORTED, op, "2-D only (X of rank 4), X has rank %d",
                         x->ndim);
    int64_t group, og, strides[2], pads[4], dil[2];
    SHP_TRY(cpu_attr_int(node, "group", 1, &group));
    SHP_TRY(cpu_attr_int(node, "offset_group", 1, &og));
    SHP_TRY(df_pair(node, "strides", 2, 1, strides));
    SHP_TRY(df_pair(node, "pads", 4, 0, pads));
    SHP_TRY(df_pair(node, "dilations", 2, 1, dil));
    int64_t n = x->shape[0], c = x->shape[1], m = wt->shape[0];
    int64_t kh = wt->shape[2], kw = wt->shape[3], taps = kh * kw;
    int64_t oh = o->shape[2], ow = o->shape[3];
    bool ok = group >= 1 && og >= 1 && c % group == 0 && c % og == 0 && m % group == 0 &&
              wt->shape[1] == c / group && o->shape[0] == n && o->shape[1] == m &&
              off->shape[0] == n && off->shape[1] == og * 2 * taps && off->shape[2] == oh &&
              off->shape[3] == ow && strides[0] >= 1 && strides[1] >= 1 && dil[0] >= 1 &&
              dil[1] >= 1;
    if (has_bias)
        ok = ok && node->inputs[3].ndim == 1 && node->inputs[3].shape[0] == m;
    if (has_mask) {
        const pl_tensor *mk = &node->inputs[4];
        ok = ok && mk->ndim == 4 && mk->shape[0] == n && mk->shape[1] == og * taps &&
             mk->shape[2] == oh && mk->shape[3] == ow;
    }
    if (!ok)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "X, W, offset, B, mask, group %lld and offset_group %lld do not fit",
                         (long long)group, (long long)og);
    /* the output size Conv's rule gives */
    int64_t want_h = (x->shape[2] + pads[0] + pads[2] - ((kh - 1) * dil[0] + 1)) / strides[0] + 1;
    int64_t want_w = (x->shape[3] + pads[1] + pads[3] - ((kw - 1) * dil[1] + 1)) / strides[1] + 1;
    if (want_h != oh || want_w != ow)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "output %lld x %lld, expected %lld x %lld",
                         (long long)oh, (long long)ow, (long long)want_h, (long long)want_w);
    if ((c / group) * taps > INT32_MAX || oh * ow > INT32_MAX)
        return cpu_error(PL_CODE_UNSUPPORTED, op, "sizes beyond 2^31 per product");
    df_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, df_write, (shp_kernel **)&k));
    *k = (df_kernel){
        .k = k->k,
        .n = n, .c = c, .h = x->shape[2], .w = x->shape[3], .m = m, .oh = oh, .ow = ow,
        .kh = kh, .kw = kw, .group = group, .offset_group = og,
        .sh = strides[0], .sw = strides[1], .ph = pads[0], .pw = pads[1],
        .dh = dil[0], .dw = dil[1], .has_bias = has_bias, .has_mask = has_mask,
    };
    *out_kernel = &k->k.base;
    return NULL;
}
