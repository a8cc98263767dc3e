/* nn.c — the cpu module's convolution kernels (Conv, ConvTranspose) and the
 * op table of the nn family (see cpu_kernel.h: each family keeps its own
 * table; the pooling kernels live in nn_pool.c).
 *
 * Conv runs one of three ways, chosen by the builder:
 *   - im2col + GEMM: per image and group, the output is W_g [Mg, Cg*K] times
 *     the column matrix [Cg*K, out positions]. A run is cut into tasks
 *     (image, group, block of output channels, block of output positions);
 *     each task unrolls its block of columns into its worker's slice of the
 *     workspace and calls the module's single-threaded GEMM (gemm.c),
 *     writing the output in place (ldc is the output plane). A W that is a
 *     constant of the graph is packed for the GEMM once, at get_kernel
 *     time, into the kernel's own block (row blocks then start on whole
 *     panels). Blocks are sized so a column block stays in L2 and there
 *     are enough tasks for the host's threads;
 *   - pointwise: 1x1 kernels with stride 1 and no pads read X directly as
 *     the column matrix (no copy);
 *   - depthwise (group == C_in, one input channel per group, 2-D): direct,
 *     one task per input plane, split into stride x stride phase planes so
 *     that each tap of an output row is one contiguous vector run (see
 *     nn_conv_depthwise_task); 3x3 has a fused 9-tap loop;
 *   - FIR (one input channel into a few outputs along one row through a
 *     filter longer than depthwise takes: resamplers, constant-Q banks):
 *     the same phase planes and row loop, the row cut into chunks of
 *     outputs over the threads (nn_conv_fir_task).
 * ConvTranspose is GEMM + col2im: per image, group and block of output
 * channels, W_g^T [Mg*K, Cg] times X_g [Cg, in positions] into the
 * workspace, then scattered (added) into the output.
 *
 * Workspace is one slice per worker (the `worker` index parallel_for gives),
 * requested at get_kernel time when the core can take the request, else
 * allocated per run. Bias and a fused activation (kernel_fuse: Relu, Clip)
 * are applied in the GEMM's epilogue as C is stored; PL_REQ_ADD_TO folds
 * the bias into C and accumulates (beta 1). */
#include <string.h>

#include "gemm.h"
#include "nn_window.h"

const cpu_op_entry cpu_ops_nn[] = {
    {"Conv", nn_build_conv, 2, 3, 7u, CPU_OP_F64},
    {"ConvTranspose", nn_build_conv_transpose, 2, 3, 7u, CPU_OP_F64},
    {"MaxPool", nn_build_pool, 1, 1, 1u, CPU_OP_MULTI_OUTPUT | CPU_OP_F64},
    {"AveragePool", nn_build_pool, 1, 1, 1u, CPU_OP_F64},
    {"LpPool", nn_build_pool, 1, 1, 1u, 0},
    {"GlobalAveragePool", nn_build_global_pool, 1, 1, 1u, CPU_OP_F64},
    {"GlobalMaxPool", nn_build_global_pool, 1, 1, 1u, CPU_OP_F64},
    {NULL, NULL, 0, 0, 0, 0},
};

/* A column block of the im2col path aims at this many bytes (it then stays
 * in a core's L2 while sgemm packs it). */
#define NN_COL_BYTES (1u << 20)
/* Column blocks are at least this wide, row (channel) blocks this tall. */
#define NN_MIN_COLS 48
#define NN_MIN_ROWS 16
/* ConvTranspose: a task's column buffer aims at no more than this. */
#define NN_CT_BYTES (4u << 20)

/* Depthwise: the most taps (kh * kw) and the largest stride of the direct
 * kernel; beyond them im2col runs. */
#define NN_DW_MAX_TAPS 64
#define NN_DW_MAX_STRIDE 8
#define NN_DW_SINGLE_MAX_OUT 4 /* one input channel: direct up to this many outputs */
/* FIR: the largest stride (one phase plane per step of it), and the
 * fewest outputs of a task's chunk of the row. */
#define NN_FIR_MAX_STRIDE 16
#define NN_FIR_MIN_CHUNK 256

typedef enum nn_conv_mode {
    NN_CONV_IM2COL = 0,
    NN_CONV_POINTWISE = 1,
    NN_CONV_DEPTHWISE = 2,
    NN_CONV_STRIDED = 3,     /* one input channel, 1-D: X read in place (nn_build_conv) */
    NN_CONV_FIR = 4          /* one input channel, one row, a long filter (nn_conv_fir_task) */
} nn_conv_mode;

typedef struct nn_conv_kernel {
    pl_kernel base;
    nn_window w;
    nn_conv_mode mode;
    bool transpose;          /* ConvTranspose */
    bool has_bias;
    int64_t batch, c_in, c_out, group;
    int64_t cg, mg;          /* input and output channels per group */
    int64_t in_plane, out_plane, ksize;
    int64_t kdim;            /* Conv: cg * ksize, the GEMM's inner size */
    int64_t in_step[NN_MAX_SP], out_step[NN_MAX_SP]; /* strides of spatial dims */
    /* Column blocks: block b covers panels [b*P/B, (b+1)*P/B) of the
     * col_panels P panels of col_unit positions (B = col_blocks); col_block
     * is the widest. Row blocks: m_block rows each. */
    int64_t col_block, col_blocks, col_panels, col_unit, m_block, m_blocks;
    int64_t tasks;
    size_t slice_bytes;      /* one worker's workspace */
    size_t ws_bytes;         /* all workers' */
    /* depthwise: the padded input plane split into sh x sw phase planes of
     * prows x pcols (see nn_conv_depthwise_task); dw_off[t] is where tap t
     * reads, relative to the first output of a row in the planes */
    int64_t dw_sh, dw_sw, dw_prows, dw_pcols, dw_plane;
    int64_t dw_off[NN_DW_MAX_TAPS];
    int64_t mult;            /* depthwise: output channels per input channel */
    /* FIR: the spatial dim of the row, the outputs of a chunk, the chunks
     * of a row, and the floats of one phase plane of a chunk */
    int64_t fir_dim, fir_chunk, fir_chunks, fir_plen;
    const float *packed_w;   /* Conv: W packed per group (inside this block), or NULL */
    size_t packed_group;     /* floats of one group's packed W */
    /* The product runs transposed, C^T = X^T W^T (output channels along the
     * micro-kernel's vectors, W^T packed as its B), into a buffer that is
     * then transposed into the output: for small planes (7x7: 49
     * positions fill 64 columns of panels, where 512 channels fill 512). */
    bool transposed;
    size_t t_floats;         /* transposed: a task's C^T buffer */
    size_t gemm_floats;      /* a task's GEMM scratch, after its columns */
} nn_conv_kernel;

typedef struct nn_conv_call {
    const nn_conv_kernel *k;
    const float *x, *wt, *bias;
    float *out;
    char *ws;
    bool add;
} nn_conv_call;

/* FIR: the floats of S phase planes of PLEN, rounded to 64 bytes (the
 * taps' offsets follow them). */
static size_t nn_fir_floats(int64_t s, int64_t plen)
{
    return ((size_t)(s * plen) + 15) / 16 * 16;
}

/* ---- im2col ------------------------------------------------------------ */

/* Kernel offsets of tap KIDX, per spatial dim. */
static void nn_tap(const nn_window *w, int64_t kidx, int64_t *kk)
{
    for (int d = w->nsp - 1; d >= 0; d--) {
        kk[d] = kidx % w->kernel[d];
        kidx /= w->kernel[d];
    }
}

/* The range [*lo, *hi) of output indices along the last dim whose tap at
 * BASE + o*s falls inside [0, in). */
static void nn_valid_range(int64_t base, int64_t s, int64_t in, int64_t out, int64_t *lo,
                           int64_t *hi)
{
    int64_t l = base >= 0 ? 0 : (-base + s - 1) / s;
    int64_t h = base > in - 1 ? 0 : (in - 1 - base) / s + 1;
    *lo = l < out ? l : out;
    *hi = h < out ? h : out;
    if (*hi < *lo)
        *hi = *lo;
}

/* Offset inside an input plane of the row that output row ROW (the index
 * over all spatial dims but the last) reads for tap KK, or -1 when it lies
 * in the padding. */
static int64_t nn_row_offset(const nn_conv_kernel *k, int64_t row, const int64_t *kk)
{
    const nn_window *w = &k->w;
    int64_t off = 0;
    for (int d = w->nsp - 2; d >= 0; d--) {
        int64_t o = row % w->out[d];
        row /= w->out[d];
        int64_t i = o * w->stride[d] - w->pad_begin[d] + kk[d] * w->dilation[d];
        if (i < 0 || i >= w->in[d])
            return -1;
        off += i * k->in_step[d];
    }
    return off;
}

/* Unrolls output positions [p0, p1) of the CG input planes at X into COL,
 * [cg * ksize rows, p1 - p0 columns]. */
static void nn_im2col(const nn_conv_kernel *k, const float *x, int64_t p0, int64_t p1, float *col)
{
    const nn_window *w = &k->w;
    const int last = w->nsp - 1;
    const int64_t ow_n = w->out[last], in_n = w->in[last], s = w->stride[last];
    const int64_t cols = p1 - p0;
    int64_t kk[NN_MAX_SP];
    for (int64_t kidx = 0; kidx < k->ksize; kidx++) {
        nn_tap(w, kidx, kk);
        const int64_t base = kk[last] * w->dilation[last] - w->pad_begin[last];
        int64_t lo, hi;
        nn_valid_range(base, s, in_n, ow_n, &lo, &hi);
        float *dst0 = col + kidx * cols;
        for (int64_t p = p0; p < p1;) {
            /* One run of output positions along the last dim. */
            int64_t ow0 = p % ow_n, row = p / ow_n;
            int64_t ow1 = ow0 + (p1 - p < ow_n - ow0 ? p1 - p : ow_n - ow0);
            int64_t off = nn_row_offset(k, row, kk);
            int64_t a = ow0 > lo ? ow0 : lo, b = ow1 < hi ? ow1 : hi;
            if (a > ow1)
                a = ow1;
            if (b < a)
                b = a;
            float *dst = dst0 + (p - p0);
            for (int64_t c = 0; c < k->cg; c++, dst += k->ksize * cols) {
                if (off < 0) {
                    memset(dst, 0, (size_t)(ow1 - ow0) * sizeof(float));
                    continue;
                }
                /* Output o reads src[base + o * s]. */
                const float *src = x + c * k->in_plane + off;
                for (int64_t o = ow0; o < a; o++)
                    dst[o - ow0] = 0.0f;
                if (s == 1)
                    memcpy(dst + (a - ow0), src + base + a, (size_t)(b - a) * sizeof(float));
                else
                    for (int64_t o = a; o < b; o++)
                        dst[o - ow0] = src[base + o * s];
                for (int64_t o = b; o < ow1; o++)
                    dst[o - ow0] = 0.0f;
            }
            p += ow1 - ow0;
        }
    }
}

/* ---- Conv tasks -------------------------------------------------------- */

/* Prepares ROWS x COLS of C (leading dim LDC) for sgemm and returns its
 * beta: the bias written or added, or C left for beta 0/1. */
static float nn_prepare_c(float *c, int64_t ldc, int64_t rows, int64_t cols,
                          const float *bias, bool add)
{
    if (bias == NULL)
        return add ? 1.0f : 0.0f;
    for (int64_t r = 0; r < rows; r++) {
        float *row = c + r * ldc, b = bias[r];
        if (add)
            for (int64_t j = 0; j < cols; j++)
                row[j] += b;
        else
            for (int64_t j = 0; j < cols; j++)
                row[j] = b;
    }
    return 1.0f;
}

/* The transposed product of one task: C^T [cols x (m1 - m0)] = op(B)^T
 * W^T into T, then added or copied, transposed, into OUT (output channel
 * m0 of group G, at the task's first position). B [kdim x cols] is X's
 * block or its unrolled columns, LDB apart. */
static void nn_conv_transposed(const nn_conv_call *c, const float *b, int64_t ldb, int64_t cols,
                               int64_t g, int64_t m0, int64_t m1, float *out, float *t,
                               float *gemm_scratch)
{
    const nn_conv_kernel *k = c->k;
    const int64_t mb = m1 - m0, m_first = g * k->mg + m0;
    cpu_gemm_epilogue epi = nn_gemm_epilogue_of(&k->base.epilogue, NULL);
    epi.col_bias = c->bias ? c->bias + m_first : NULL; /* channels are columns here */
    if (c->add)
        epi.act = CPU_GEMM_ACT_NONE; /* cpu_kernel_run: no activation with ADD_TO */
    cpu_gemm_operand ga = {.data = b, .ld = ldb, .trans = true};
    cpu_gemm_operand gb = {.packed = k->packed_w + (size_t)g * k->packed_group,
                           .packed_k = k->kdim,
                           .first = m0};
    cpu_gemm_ex(cols, mb, k->kdim, 1.0f, &ga, &gb, 0.0f, t, mb, gemm_scratch, &epi);
    nn_transpose(out, k->out_plane, t, mb, cols, mb, c->add);
}

static void nn_conv_gemm_task(const nn_conv_call *c, int64_t t, float *scratch)
{
    const nn_conv_kernel *k = c->k;
    int64_t cb = t % k->col_blocks;
    t /= k->col_blocks;
    int64_t mb = t % k->m_blocks;
    t /= k->m_blocks;
    int64_t g = t % k->group, n = t / k->group;
    int64_t p0 = cb * k->col_panels / k->col_blocks * k->col_unit;
    int64_t p1 = (cb + 1) * k->col_panels / k->col_blocks * k->col_unit;
    int64_t m0 = mb * k->m_block, m1 = m0 + k->m_block;
    if (p1 > k->out_plane)
        p1 = k->out_plane;
    if (m1 > k->mg)
        m1 = k->mg;
    if (p0 >= p1 || m0 >= m1)
        return;
    const float *x = c->x + (n * k->c_in + g * k->cg) * k->in_plane;
    const float *b;
    int64_t ldb;
    bool b_trans = false;
    if (k->mode == NN_CONV_POINTWISE) {
        b = x + p0;
        ldb = k->in_plane;
    } else if (k->mode == NN_CONV_STRIDED) {
        /* column j is x[j * s .. j * s + K): B stored transposed, rows s
         * apart (overlapping) */
        b = x + p0 * k->w.stride[0];
        ldb = k->w.stride[0];
        b_trans = true;
    } else {
        nn_im2col(k, x, p0, p1, scratch);
        b = scratch;
        ldb = p1 - p0;
    }
    int64_t m_first = g * k->mg + m0;
    float *out = c->out + (n * k->c_out + m_first) * k->out_plane + p0;
    float *gemm_scratch = (float *)(void *)((char *)scratch + k->slice_bytes) - k->gemm_floats;
    if (k->transposed) {
        nn_conv_transposed(c, b, ldb, p1 - p0, g, m0, m1, out, gemm_scratch - k->t_floats,
                           gemm_scratch);
        return;
    }
    /* Bias and activation go in the GEMM's epilogue; accumulating into the
     * output (no activation then: see cpu_kernel_run) adds the bias first. */
    cpu_gemm_epilogue epi = {0};
    float beta = 0.0f;
    if (c->add)
        beta = nn_prepare_c(out, k->out_plane, m1 - m0, p1 - p0,
                            c->bias ? c->bias + m_first : NULL, true);
    else
        epi = nn_gemm_epilogue_of(&k->base.epilogue, c->bias ? c->bias + m_first : NULL);
    cpu_gemm_operand ga = {.data = c->wt + m_first * k->kdim, .ld = k->kdim};
    if (k->packed_w != NULL) {
        ga.packed = k->packed_w + (size_t)g * k->packed_group;
        ga.packed_k = k->kdim;
        ga.first = m0;
    }
    cpu_gemm_operand gb = {.data = b, .ld = ldb, .trans = b_trans};
    cpu_gemm_ex(m1 - m0, p1 - p0, k->kdim, 1.0f, &ga, &gb, beta, out, k->out_plane,
                gemm_scratch, &epi);
}

/* One input plane of a depthwise convolution: its MULT output planes.
 *
 * The zero-padded plane is split into sh x sw phase planes: padded pixel
 * (r, c) goes to plane (r % sh, c % sw) at (r / sh, c / sw). Tap (kh, kw)
 * of output (oh, ow) then reads plane ((kh*dh) % sh, (kw*dw) % sw) at
 * (oh + kh*dh / sh, ow + kw*dw / sw): for every tap the outputs of a row
 * read one contiguous run, so a row is one vector loop over its taps
 * (nn_dw_rows: masked at the row's end, so rows of 7 or 14 outputs stay
 * in vectors), writing the output with the activation applied in
 * registers. */
static void nn_conv_depthwise_task(const nn_conv_call *c, int64_t t, float *scratch)
{
    const nn_conv_kernel *k = c->k;
    const nn_window *w = &k->w;
    const int64_t sh = k->dw_sh, sw = k->dw_sw, prows = k->dw_prows, pcols = k->dw_pcols;
    const int64_t in_h = w->in[0], in_w = w->in[1], oh_n = w->out[0], ow_n = w->out[1];
    const int64_t pt = w->pad_begin[0], pl = w->pad_begin[1];
    int64_t ch = t % k->c_in, n = t / k->c_in;
    float *planes = scratch;
    const float *x = c->x + t * k->in_plane;
    if (sh == 1 && sw == 1) {
        /* One plane, written once: pads, the row, pads. */
        int64_t cols = in_w < pcols - pl ? in_w : pcols - pl;
        if (cols < 0)
            cols = 0;
        for (int64_t rr = 0; rr < prows; rr++) {
            float *dst = planes + rr * pcols;
            int64_t h = rr - pt;
            if (h < 0 || h >= in_h || cols == 0) {
                memset(dst, 0, (size_t)pcols * sizeof(float));
                continue;
            }
            int64_t head = pl < pcols ? pl : pcols;
            memset(dst, 0, (size_t)head * sizeof(float));
            memcpy(dst + pl, x + h * in_w, (size_t)cols * sizeof(float));
            memset(dst + pl + cols, 0, (size_t)(pcols - pl - cols) * sizeof(float));
        }
    } else {
        memset(planes, 0, (size_t)(sh * sw * k->dw_plane) * sizeof(float));
    }
    for (int64_t h = 0; h < in_h && (sh > 1 || sw > 1); h++) {
        int64_t r = h + pt, rr = r / sh;
        if (rr >= prows)
            break;
        const float *src = x + h * in_w;
        float *dst = planes + (r % sh) * sw * k->dw_plane + rr * pcols;
        if (sw == 1) {
            int64_t cols = in_w < pcols - pl ? in_w : pcols - pl;
            if (cols > 0)
                memcpy(dst + pl, src, (size_t)cols * sizeof(float));
            continue;
        }
        if (sw == 2) {
            /* Pairs of pixels to the two column phases (vectorised). */
            float *d0 = dst + ((pl & 1) ? k->dw_plane : 0) + pl / 2;
            float *d1 = dst + ((pl & 1) ? 0 : k->dw_plane) + (pl + 1) / 2;
            int64_t pairs = in_w / 2, lim0 = pcols - pl / 2, lim1 = pcols - (pl + 1) / 2;
            if (pairs > lim0)
                pairs = lim0;
            if (pairs > lim1)
                pairs = lim1;
            if (pairs < 0)
                pairs = 0;
            for (int64_t i = 0; i < pairs; i++) {
                d0[i] = src[2 * i];
                d1[i] = src[2 * i + 1];
            }
            if (2 * pairs < in_w && pairs < lim0)
                d0[pairs] = src[2 * pairs];
            if (2 * pairs + 1 < in_w && pairs < lim1)
                d1[pairs] = src[2 * pairs + 1];
            continue;
        }
        /* Column phase by column phase: every sw-th pixel, no divisions. */
        for (int64_t phase = 0; phase < sw; phase++) {
            int64_t col = ((phase - pl) % sw + sw) % sw;
            float *d = dst + phase * k->dw_plane;
            for (int64_t j = (col + pl) / sw; col < in_w && j < pcols; col += sw, j++)
                d[j] = src[col];
        }
    }
    for (int64_t j = 0; j < k->mult; j++) {
        int64_t m = ch * k->mult + j;
        float bias = c->bias ? c->bias[m] : 0.0f;
        const float *wt = c->wt + m * k->ksize;
        float *out = c->out + (n * k->c_out + m) * k->out_plane;
        nn_dw_rows(out, ow_n, planes, pcols, oh_n, k->dw_off, wt, (int)k->ksize, bias, ow_n,
                   &k->base.epilogue, c->add);
    }
}

/* Chunk T % fir_chunks of image T / fir_chunks of a FIR convolution (one
 * input channel, one row of taps): the chunk's stride phase planes of the
 * zero-padded row (plane p, index j: padded sample (o0 + j) * s + p), so
 * that tap t of outputs o0.. reads plane t % s from t / s on, one
 * contiguous run; then every output channel's filter over it through the
 * depthwise row loop. A resampler's 256-tap filter at stride 2 over 44100
 * samples (basic_pitch's constant-Q front end) went through im2col, which
 * copied each sample 128 times (1.19 ms against 0.1). */
static void nn_conv_fir_task(const nn_conv_call *c, int64_t t, float *scratch)
{
    const nn_conv_kernel *k = c->k;
    const nn_window *w = &k->w;
    const int d = (int)k->fir_dim;
    const int64_t s = w->stride[d], taps = w->kernel[d], in_n = w->in[d], out_n = w->out[d];
    const int64_t pad = w->pad_begin[d], plen = k->fir_plen;
    int64_t n = t / k->fir_chunks, o0 = t % k->fir_chunks * k->fir_chunk;
    int64_t o1 = o0 + k->fir_chunk < out_n ? o0 + k->fir_chunk : out_n;
    if (o0 >= o1)
        return;
    int64_t cols = o1 - o0 + (taps - 1) / s;
    const float *x = c->x + n * k->in_plane;
    float *planes = scratch;
    int64_t *off = (int64_t *)(void *)(scratch + nn_fir_floats(s, plen));
    for (int64_t p = 0; p < s; p++) {
        float *dst = planes + p * plen;
        int64_t first = o0 * s + p - pad; /* the input index of j = 0 */
        for (int64_t j = 0; j < cols; j++) {
            int64_t idx = first + j * s;
            dst[j] = idx >= 0 && idx < in_n ? x[idx] : 0.0f;
        }
        memset(dst + cols, 0, (size_t)(plen - cols) * sizeof(float));
    }
    for (int64_t tap = 0; tap < taps; tap++)
        off[tap] = tap % s * plen + tap / s;
    for (int64_t j = 0; j < k->c_out; j++) {
        float bias = c->bias ? c->bias[j] : 0.0f;
        float *out = c->out + (n * k->c_out + j) * k->out_plane + o0;
        nn_dw_rows(out, 0, planes, 0, 1, off, c->wt + j * taps, (int)taps, bias, o1 - o0,
                   &k->base.epilogue, c->add);
    }
}

/* ---- ConvTranspose tasks ----------------------------------------------- */

/* Adds the column buffer COL ([(m1-m0) * ksize, in_plane]) into output
 * channels [m0, m1) at OUT (the first of them). */
static void nn_col2im(const nn_conv_kernel *k, const float *col, int64_t channels, float *out)
{
    const nn_window *w = &k->w;
    const int last = w->nsp - 1;
    const int64_t in_n = w->in[last], out_n = w->out[last], s = w->stride[last];
    const int64_t rows_in = k->in_plane / in_n;
    int64_t kk[NN_MAX_SP];
    for (int64_t kidx = 0; kidx < k->ksize; kidx++) {
        nn_tap(w, kidx, kk);
        /* Input i of the last dim lands on output i*s + base. */
        const int64_t base = kk[last] * w->dilation[last] - w->pad_begin[last];
        int64_t lo, hi;
        nn_valid_range(base, s, out_n, in_n, &lo, &hi);
        for (int64_t row = 0; row < rows_in; row++) {
            /* The output row this input row lands on, or none. */
            int64_t off = 0, r = row;
            bool inside = true;
            for (int d = last - 1; d >= 0; d--) {
                int64_t i = r % w->in[d];
                r /= w->in[d];
                int64_t o = i * w->stride[d] - w->pad_begin[d] + kk[d] * w->dilation[d];
                if (o < 0 || o >= w->out[d]) {
                    inside = false;
                    break;
                }
                off += o * k->out_step[d];
            }
            if (!inside)
                continue;
            for (int64_t m = 0; m < channels; m++) {
                const float *src = col + (m * k->ksize + kidx) * k->in_plane + row * in_n;
                /* Input i lands on dst[base + i * s]. */
                float *dst = out + m * k->out_plane + off;
                if (s == 1)
                    nn_add_row(dst + base + lo, src + lo, hi - lo);
                else
                    for (int64_t i = lo; i < hi; i++)
                        dst[base + i * s] += src[i];
            }
        }
    }
}

static void nn_conv_transpose_task(const nn_conv_call *c, int64_t t, float *scratch)
{
    const nn_conv_kernel *k = c->k;
    int64_t mb = t % k->m_blocks;
    t /= k->m_blocks;
    int64_t g = t % k->group, n = t / k->group;
    int64_t m0 = mb * k->m_block, m1 = m0 + k->m_block;
    if (m1 > k->mg)
        m1 = k->mg;
    if (m0 >= m1)
        return;
    int64_t m_first = g * k->mg + m0;
    float *out = c->out + (n * k->c_out + m_first) * k->out_plane;
    for (int64_t m = 0; m < m1 - m0; m++) {
        float *o = out + m * k->out_plane, b = c->bias ? c->bias[m_first + m] : 0.0f;
        if (c->add && b != 0.0f)
            for (int64_t i = 0; i < k->out_plane; i++)
                o[i] += b;
        else if (!c->add)
            for (int64_t i = 0; i < k->out_plane; i++)
                o[i] = b;
    }
    /* W_g is [cg, mg * ksize]; the block's columns, transposed, are A. */
    const float *wt = c->wt + g * k->cg * k->mg * k->ksize + m0 * k->ksize;
    const float *x = c->x + (n * k->c_in + g * k->cg) * k->in_plane;
    cpu_gemm_operand ga = {.data = wt, .ld = k->mg * k->ksize, .trans = true};
    cpu_gemm_operand gb = {.data = x, .ld = k->in_plane};
    cpu_gemm((m1 - m0) * k->ksize, k->in_plane, k->cg, 1.0f, &ga, &gb, 0.0f, scratch,
             k->in_plane,
             (float *)(void *)((char *)scratch + k->slice_bytes) - k->gemm_floats);
    nn_col2im(k, scratch, m1 - m0, out);
}

/* ---- runs -------------------------------------------------------------- */

static void nn_conv_chunk(void *arg, size_t begin, size_t end, int worker)
{
    const nn_conv_call *c = arg;
    const nn_conv_kernel *k = c->k;
    float *scratch = (float *)(void *)(c->ws + (size_t)worker * k->slice_bytes);
    for (size_t t = begin; t < end; t++) {
        if (k->transpose)
            nn_conv_transpose_task(c, (int64_t)t, scratch);
        else if (k->mode == NN_CONV_DEPTHWISE)
            nn_conv_depthwise_task(c, (int64_t)t, scratch);
        else if (k->mode == NN_CONV_FIR)
            nn_conv_fir_task(c, (int64_t)t, scratch);
        else
            nn_conv_gemm_task(c, (int64_t)t, scratch);
    }
}

static pl_status *nn_conv_run(pl_module_ctx *ctx, const pl_kernel *kernel,
                              const pl_run_args *args, float *out, pl_output_request req)
{
    const nn_conv_kernel *k = (const nn_conv_kernel *)kernel;
    nn_workspace ws;
    if (nn_workspace_acquire(ctx, args, k->ws_bytes, &ws) == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, kernel->op,
                         "out of memory for %zu bytes of workspace", k->ws_bytes);
    nn_conv_call c = {.k = k,
                      .x = cpu_in(args, 0),
                      .wt = cpu_in(args, 1),
                      .bias = k->has_bias ? cpu_in(args, 2) : NULL,
                      .out = out,
                      .ws = ws.base,
                      .add = req == PL_REQ_ADD_TO};
    cpu_host->parallel_for(ctx->host_ctx, (size_t)k->tasks, 1, nn_conv_chunk, &c);
    nn_workspace_release(ctx, &ws);
    return NULL;
}

/* ---- planning ---------------------------------------------------------- */

/* The phase planes of a depthwise kernel and where each tap reads. */
static void nn_plan_depthwise(nn_conv_kernel *k)
{
    const nn_window *w = &k->w;
    const int64_t sh = w->stride[0], sw = w->stride[1], dh = w->dilation[0], dw = w->dilation[1];
    k->dw_sh = sh;
    k->dw_sw = sw;
    k->dw_prows = w->out[0] + (w->kernel[0] - 1) * dh / sh;
    k->dw_pcols = w->out[1] + (w->kernel[1] - 1) * dw / sw;
    k->dw_plane = k->dw_prows * k->dw_pcols;
    for (int64_t kh = 0; kh < w->kernel[0]; kh++)
        for (int64_t kw = 0; kw < w->kernel[1]; kw++) {
            int64_t r = kh * dh, col = kw * dw;
            int64_t plane = (r % sh) * sw + col % sw;
            k->dw_off[kh * w->kernel[1] + kw] =
                plane * k->dw_plane + (r / sh) * k->dw_pcols + col / sw;
        }
}

/* Enough tasks to keep every thread busy in parallel_for's chunks. */
static int64_t nn_task_target(int threads)
{
    return threads > 1 ? 4 * (int64_t)threads : 1;
}

static void nn_plan_conv(nn_conv_kernel *k, int threads)
{
    int64_t images = k->batch * k->group;
    int64_t want = nn_task_target(threads);
    if (k->mode == NN_CONV_FIR) {
        const int d = (int)k->fir_dim;
        int64_t out_n = k->w.out[d], s = k->w.stride[d], taps = k->w.kernel[d];
        int64_t per_image = want / k->batch, chunk = out_n; /* chunks an image */
        if (per_image > 1)
            chunk = ((out_n + per_image - 1) / per_image + 31) / 32 * 32;
        if (chunk < NN_FIR_MIN_CHUNK)
            chunk = NN_FIR_MIN_CHUNK;
        if (chunk > out_n)
            chunk = out_n > 0 ? out_n : 1;
        k->fir_chunk = chunk;
        k->fir_chunks = (out_n + chunk - 1) / chunk;
        /* a plane: the chunk, the filter's reach, the last vector's slack */
        k->fir_plen = chunk + (taps - 1) / s + 8;
        k->tasks = k->batch * k->fir_chunks;
        k->slice_bytes = nn_slice_bytes(nn_fir_floats(s, k->fir_plen) +
                                        (size_t)taps * sizeof(int64_t) / sizeof(float));
        k->ws_bytes = k->slice_bytes * (size_t)threads;
        k->base.workspace_bytes = k->ws_bytes;
        return;
    }
    if (k->mode == NN_CONV_DEPTHWISE) {
        k->tasks = k->batch * k->c_in;
        /* The planes, and slack for the row loop's last vector. */
        k->slice_bytes = nn_slice_bytes((size_t)(k->dw_sh * k->dw_sw * k->dw_plane + 8));
        k->ws_bytes = k->slice_bytes * (size_t)threads;
        k->base.workspace_bytes = k->ws_bytes;
        return;
    }
    /* kdim is 0 for a weight of no input channels: the output is the bias
     * (or zeros), and the column blocks are as small as they get. */
    int64_t target = k->kdim > 0 ? (int64_t)(NN_COL_BYTES / sizeof(float)) / k->kdim : 0;
    if (target < NN_MIN_COLS)
        target = NN_MIN_COLS;
    int64_t col_blocks = (k->out_plane + target - 1) / target, m_blocks = 1;
    double macs = (double)images * (double)k->mg * (double)k->kdim * (double)k->out_plane;
    if (images * col_blocks < want && macs >= 64.0 * 64 * 64) {
        int64_t need = (want + images - 1) / images;
        if (k->out_plane / need >= NN_MIN_COLS) {
            col_blocks = need;
        } else {
            /* Every row block unrolls the same columns again: only as many
             * as there are threads. */
            int64_t need_m = (threads + images - 1) / images;
            int64_t mb = (need_m + col_blocks - 1) / col_blocks, max_mb = k->mg / NN_MIN_ROWS;
            m_blocks = mb < max_mb ? mb : (max_mb > 1 ? max_mb : 1);
        }
    }
    /* Blocks of whole panels of the micro-kernel (a block of 112 columns
     * would compute 128 with panels of 32, in every task), the panels
     * spread evenly over the blocks (784 positions: 25 panels in 8 blocks
     * of 3 or 4) and the blocks a multiple of the threads when there are
     * few, so that no thread gets a block more than the other.
     * Transposed, positions are the product's rows: panels of MR. */
    k->col_unit = k->transposed ? cpu_gemm_mr() : cpu_gemm_nr();
    k->col_panels = (k->out_plane + k->col_unit - 1) / k->col_unit;
    if (col_blocks > 1 && col_blocks < 4 * threads)
        col_blocks = (col_blocks + threads - 1) / threads * threads;
    if (col_blocks > k->col_panels)
        col_blocks = k->col_panels;
    if (col_blocks < 1)
        col_blocks = 1;
    k->col_blocks = col_blocks;
    k->col_block = (k->col_panels + col_blocks - 1) / col_blocks * k->col_unit;
    if (k->col_block > k->out_plane)
        k->col_block = k->out_plane;
    /* Row blocks on whole panels of a packed W (panels of B when the
     * product runs transposed). */
    int64_t mr = k->transposed ? cpu_gemm_nr() : cpu_gemm_mr();
    k->m_block = (k->mg + m_blocks - 1) / m_blocks;
    if (k->m_block < 1)
        k->m_block = 1; /* no output channels (a weight of M = 0): no tasks */
    if (m_blocks > 1)
        k->m_block = (k->m_block + mr - 1) / mr * mr;
    k->m_blocks = (k->mg + k->m_block - 1) / k->m_block;
    k->tasks = images * k->m_blocks * k->col_blocks;
    size_t floats = k->mode == NN_CONV_IM2COL ? (size_t)(k->kdim * k->col_block) : 0;
    /* The slice: columns, then C^T (transposed), then the GEMM's scratch
     * (each 64-byte aligned: floats of them are multiples of 16). */
    if (k->transposed) {
        k->t_floats = ((size_t)(k->col_block * k->m_block) + 15) / 16 * 16;
        k->gemm_floats = (cpu_gemm_scratch_floats(k->col_block, k->m_block, 0, false, true) + 15) /
                         16 * 16;
    } else {
        k->t_floats = 0;
        k->gemm_floats = (cpu_gemm_scratch_floats(k->m_block, k->col_block, 0,
                                                  k->packed_w != NULL, false) + 15) / 16 * 16;
    }
    k->slice_bytes = nn_slice_bytes(floats) + (k->t_floats + k->gemm_floats) * sizeof(float);
    k->ws_bytes = k->slice_bytes * (size_t)threads;
    k->base.workspace_bytes = k->ws_bytes;
}

static void nn_plan_conv_transpose(nn_conv_kernel *k, int threads)
{
    int64_t images = k->batch * k->group, want = nn_task_target(threads);
    int64_t per_channel = k->ksize * k->in_plane;
    int64_t cap = (int64_t)(NN_CT_BYTES / sizeof(float)) / (per_channel > 0 ? per_channel : 1);
    int64_t m_blocks = images < want ? (want + images - 1) / images : 1;
    if (m_blocks > k->mg)
        m_blocks = k->mg;
    k->m_block = (k->mg + m_blocks - 1) / m_blocks;
    if (k->m_block > cap)
        k->m_block = cap > 1 ? cap : 1;
    k->m_blocks = (k->mg + k->m_block - 1) / k->m_block;
    k->col_blocks = 1;
    k->tasks = images * k->m_blocks;
    k->gemm_floats = (cpu_gemm_scratch_floats(k->m_block * k->ksize, k->in_plane, 0, false,
                                              false) + 15) / 16 * 16;
    k->slice_bytes = nn_slice_bytes((size_t)(k->m_block * per_channel)) +
                     k->gemm_floats * sizeof(float);
    k->ws_bytes = k->slice_bytes * (size_t)threads;
    k->base.workspace_bytes = k->ws_bytes;
}

/* Whether a product over PLANE output positions and MG output channels
 * wastes less of the micro-kernel transposed: the last panel of columns is
 * padded to NR, so 49 positions cost 64 columns while 512 channels cost
 * 512. (One thread, 512 x 49 x 4608: 80 GFLOP/s as is, 90 transposed.)
 * Below 20% waste, packing X^T (the transposed product's A) costs more
 * than the padding: 14x14 planes (196 positions in 224) stay as they are. */
static bool nn_use_transposed(int64_t plane, int64_t mg, bool unrolled)
{
    int64_t nr = cpu_gemm_nr();
    if (plane <= 0 || mg <= 0 || plane >= 1024 || mg < nr)
        return false;
    double waste_plane = (double)((plane + nr - 1) / nr * nr) / (double)plane;
    double waste_m = (double)((mg + nr - 1) / nr * nr) / (double)mg;
    return waste_plane > (unrolled ? 1.05 : 1.2) * waste_m;
}

/* ---- builders ---------------------------------------------------------- */

/* The parts of Conv and ConvTranspose checks both share; *out_bias says
 * whether the bias input is present. */
static pl_status *nn_conv_common(const pl_node_desc *node, int64_t bias_len, bool *out_bias)
{
    const pl_tensor *x = &node->inputs[0], *wt = &node->inputs[1];
    const pl_tensor *b = node->n_inputs > 2 ? &node->inputs[2] : NULL;
    char tx[128], tw[128];
    *out_bias = b != NULL && b->ndim >= 0;
    if (wt->ndim != x->ndim)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "X %s and W %s must have the same rank",
                         cpu_dims_text(x->shape, x->ndim, tx, sizeof tx),
                         cpu_dims_text(wt->shape, wt->ndim, tw, sizeof tw));
    if (*out_bias && (b->ndim != 1 || b->shape[0] != bias_len))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "bias %s must be [%lld]",
                         cpu_dims_text(b->shape, b->ndim, tx, sizeof tx), (long long)bias_len);
    return NULL;
}

static bool nn_fits_int(int64_t v)
{
    return v >= 0 && v <= INT32_MAX;
}


/* The packed weights of a convolution's GEMM path, per group, packed_group
 * floats apart: as A, or as B of the transposed product (cpu_share_derived's
 * fill). */
typedef struct nn_conv_fill {
    const float *w;
    int64_t mg, kdim, group;
    size_t packed_group;
    bool transposed;
} nn_conv_fill;

static void nn_conv_fill_run(void *arg, void *out)
{
    const nn_conv_fill *f = arg;
    float *buf = out;
    for (int64_t g = 0; g < f->group; g++) {
        if (f->transposed)
            cpu_gemm_pack_b(f->kdim, f->mg, f->w + g * f->mg * f->kdim, f->kdim, true,
                            buf + (size_t)g * f->packed_group);
        else
            cpu_gemm_pack_a(f->mg, f->kdim, f->w + g * f->mg * f->kdim, f->kdim, false,
                            buf + (size_t)g * f->packed_group);
    }
}

/* Allocates the kernel with EXTRA bytes after it (64-byte aligned, at
 * nn_conv_extra(k)). */
static nn_conv_kernel *nn_conv_alloc(pl_module_ctx *ctx, const pl_node_desc *node,
                                     const nn_window *w, size_t extra)
{
    size_t head = (sizeof(nn_conv_kernel) + 63) & ~(size_t)63;
    nn_conv_kernel *k =
        (nn_conv_kernel *)cpu_kernel_alloc(ctx, head + extra, node->op, nn_conv_run);
    if (k == NULL)
        return NULL;
    k->w = *w;
    k->in_plane = k->out_plane = k->ksize = 1;
    for (int d = w->nsp - 1; d >= 0; d--) {
        k->in_step[d] = k->in_plane;
        k->out_step[d] = k->out_plane;
        k->in_plane *= w->in[d];
        k->out_plane *= w->out[d];
        k->ksize *= w->kernel[d];
    }
    return k;
}

pl_status *nn_build_conv(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *wt = &node->inputs[1], *o = &node->outputs[0];
    int64_t group;
    NN_TRY(cpu_attr_int(node, "group", 1, &group));
    bool has_bias;
    int64_t m = wt->ndim >= 1 ? wt->shape[0] : 0;
    NN_TRY(nn_conv_common(node, m, &has_bias));
    nn_window w;
    NN_TRY(nn_window_read(node, NN_WINDOW_CONV, x, wt->shape + 2, &w));
    int64_t c = x->shape[1], cg = wt->shape[1];
    char tx[128], tw[128];
    if (group < 1 || c != cg * group || m % group != 0)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "X %s and W %s do not fit group %lld",
                         cpu_dims_text(x->shape, x->ndim, tx, sizeof tx),
                         cpu_dims_text(wt->shape, wt->ndim, tw, sizeof tw), (long long)group);
    NN_TRY(nn_window_check_output(node, o, x->shape[0], m, &w));
    if (PL_DTYPE_EQ(x->dtype, PL_DTYPE_F64))
        return nn_build_f64(ctx, node, &w, group, false, out_kernel);

    /* A constant W of a GEMM path (not depthwise) is packed once, per
     * group, after the kernel: as A, or as B of the transposed product. */
    const float *w_data = NULL;
    size_t packed_group = 0;
    int64_t ksize = 1, plane = 1;
    for (int d = 0; d < w.nsp; d++) {
        ksize *= w.kernel[d];
        plane *= w.out[d];
    }
    bool unit = ksize == 1;
    for (int d = 0; d < w.nsp; d++)
        unit = unit && w.stride[d] == 1 && w.pad_begin[d] == 0 && w.pad_end[d] == 0;
    bool transposed = nn_use_transposed(plane, m / group, !unit);
    bool depthwise_like = cg == 1 && group == c && group > 1;
    /* One input channel into a few outputs along one row (1-D, or 2-D with
     * one row in, out and in the kernel) through more taps than the
     * depthwise kernel takes: FIR (nn_conv_fir_task). */
    int row = w.nsp == 1 ? 0 : 1;
    bool one_row = w.nsp == 1 || (w.nsp == 2 && w.in[0] == 1 && w.kernel[0] == 1 &&
                                  w.out[0] == 1 && w.pad_begin[0] == 0 && w.pad_end[0] == 0);
    bool fir = group == 1 && c == 1 && m >= 1 && m <= NN_DW_SINGLE_MAX_OUT && one_row &&
               w.kernel[row] > NN_DW_MAX_TAPS && w.kernel[row] <= INT32_MAX &&
               w.dilation[row] == 1 && w.stride[row] <= NN_FIR_MAX_STRIDE && w.out[row] > 0;
    const pl_graph_api *gv = cpu_host->graph;
    if (!depthwise_like && !fir && !cpu_node_query(node) && gv != NULL && node->graph != NULL &&
        m > 0 &&
        cg * ksize > 0) {
        int64_t t = gv->node_input(node->graph, node->node_index, 1);
        const void *data;
        size_t bytes;
        if (t >= 0 && gv->tensor_constant(node->graph, t, &data, &bytes) &&
            bytes >= (size_t)(m * cg * ksize) * sizeof(float)) {
            w_data = (const float *)data;
            packed_group = transposed ? cpu_gemm_packed_b_floats(cg * ksize, m / group)
                                      : cpu_gemm_packed_a_floats(m / group, cg * ksize);
            packed_group = (packed_group + 15) / 16 * 16;
        }
    }
    transposed = transposed && w_data != NULL;
    nn_conv_fill fill = {w_data, m / group, cg * ksize, group, packed_group, transposed};
    cpu_shared_pack *hold = NULL;
    const float *shared = NULL;
    if (w_data != NULL) {
        const size_t sources[] = {1};
        const int64_t params[] = {CPU_SHARE_CONV_W, m, cg * ksize, group, transposed};
        shared = cpu_share_derived(ctx, node, sources, 1, params, 5,
                                   packed_group * (size_t)group * sizeof(float), nn_conv_fill_run,
                                   &fill, &hold);
    }
    nn_conv_kernel *k = nn_conv_alloc(
        ctx, node, &w, shared != NULL ? 0 : packed_group * (size_t)group * sizeof(float));
    if (k == NULL) {
        cpu_pack_unshare(ctx, hold);
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    }
    k->base.shared_pack = hold;
    if (w_data != NULL) {
        float *buf = (float *)(void *)((char *)k + ((sizeof *k + 63) & ~(size_t)63));
        if (shared == NULL)
            nn_conv_fill_run(&fill, buf);
        k->packed_w = shared != NULL ? shared : buf;
        k->packed_group = packed_group;
        k->transposed = transposed;
    }
    k->batch = x->shape[0];
    k->c_in = c;
    k->c_out = m;
    k->group = group;
    k->cg = cg;
    k->mg = m / group;
    k->kdim = cg * k->ksize;
    k->has_bias = has_bias;
    k->base.n_reads = has_bias ? 3 : 2;
    k->base.out_elements = cpu_elements(o->shape, o->ndim);
    k->base.epilogue_ok = true;
    k->mode = unit ? NN_CONV_POINTWISE : NN_CONV_IM2COL;
    /* One input channel, 1-D, no padding or dilation: column j of the
     * unrolled input is x[j * s .. j * s + K), so the GEMM reads X in place
     * as a B stored transposed with rows s apart. An STFT written as a
     * Conv (whisper's: 1 -> 402 channels, 400 taps at stride 160) had
     * im2col gather its 2 x 1.2M values one by one every run. */
    if (!unit && !k->transposed && c == 1 && group == 1 && w.nsp == 1 &&
        w.dilation[0] == 1 && w.pad_begin[0] == 0 && w.pad_end[0] == 0 && w.out[0] > 0 &&
        (w.out[0] - 1) * w.stride[0] + w.kernel[0] <= w.in[0])
        k->mode = NN_CONV_STRIDED;
    /* A single input channel into a few outputs (an audio resampler's FIR
     * filter: 1 -> 1 channel, 1x41 taps at stride 3) is a depthwise
     * convolution of one group: im2col copied each input 41 times for a
     * GEMM of one row (0.15 ms against 0.03 direct, for 2 x 16000
     * samples). Many outputs (wav2vec2's 1 -> 512) stay on the GEMM. */
    bool single = group == 1 && c == 1 && m <= NN_DW_SINGLE_MAX_OUT;
    if (w.nsp == 2 && cg == 1 && ((group == c && group > 1) || single) && k->ksize > 1 &&
        k->ksize <= NN_DW_MAX_TAPS && w.stride[0] <= NN_DW_MAX_STRIDE &&
        w.stride[1] <= NN_DW_MAX_STRIDE) {
        k->mode = NN_CONV_DEPTHWISE;
        k->mult = k->mg;
        nn_plan_depthwise(k);
    }
    if (fir) {
        k->mode = NN_CONV_FIR;
        k->fir_dim = row;
    }
    if (!nn_fits_int(k->kdim) || !nn_fits_int(k->out_plane) || !nn_fits_int(k->in_plane) ||
        !nn_fits_int(k->mg)) {
        cpu_kernel_release(ctx, &k->base);
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "sizes beyond OpenBLAS's int sizes");
    }
    nn_plan_conv(k, cpu_host->thread_count(ctx->host_ctx));
    *out_kernel = &k->base;
    return NULL;
}

pl_status *nn_build_conv_transpose(pl_module_ctx *ctx, const pl_node_desc *node,
                                   pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *wt = &node->inputs[1], *o = &node->outputs[0];
    int64_t group;
    NN_TRY(cpu_attr_int(node, "group", 1, &group));
    char tx[128], tw[128];
    int64_t c = x->ndim >= 2 ? x->shape[1] : 0;
    if (group < 1 || wt->ndim < 3 || wt->shape[0] != c || c % group != 0)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "X %s and W %s do not fit group %lld",
                         cpu_dims_text(x->shape, x->ndim, tx, sizeof tx),
                         cpu_dims_text(wt->shape, wt->ndim, tw, sizeof tw), (long long)group);
    int64_t mg = wt->shape[1], m = mg * group;
    bool has_bias;
    NN_TRY(nn_conv_common(node, m, &has_bias));
    /* The window of the equivalent Conv read off the attributes; the output
     * sizes and pads are ConvTranspose's own, computed below. */
    nn_window w;
    NN_TRY(nn_window_read(node, NN_WINDOW_TRANSPOSE, x, wt->shape + 2, &w));
    int nsp = w.nsp;
    const int64_t *opad_v, *os_v, *pads_v;
    size_t n_opad, n_os, n_pads;
    NN_TRY(cpu_attr_ints(node, "output_padding", &opad_v, &n_opad));
    NN_TRY(cpu_attr_ints(node, "output_shape", &os_v, &n_os));
    NN_TRY(cpu_attr_ints(node, "pads", &pads_v, &n_pads));
    if ((opad_v != NULL && n_opad != (size_t)nsp) ||
        (os_v != NULL && n_os != (size_t)nsp && n_os != (size_t)nsp + 2))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "output_padding or output_shape has the wrong number of values");
    const char *ap;
    size_t ap_len;
    NN_TRY(nn_attr_string(node, "auto_pad", "NOTSET", &ap, &ap_len));
    /* nn_window_read refused a value that is not ONNX's. */
    pl_auto_pad mode = pl_auto_pad_parse(ap, ap_len);
    bool same = pl_auto_pad_is_same(mode), valid = mode == PL_AUTO_PAD_VALID;
    for (int d = 0; d < nsp; d++) {
        int64_t in = w.in[d], s = w.stride[d];
        int64_t opad = opad_v ? opad_v[d] : 0;
        int64_t eff = (w.kernel[d] - 1) * w.dilation[d] + 1;
        if (opad < 0 || opad > ((int64_t)1 << 31))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "output_padding %lld",
                             (long long)opad);
        int64_t full = s * (in - 1) + opad + eff;
        if (os_v != NULL || same) {
            /* ONNX's rule: SAME_UPPER puts the odd pad at the end, the
             * others (SAME_LOWER, or output_shape alone) at the start
             * (pl_auto_pad_split). */
            int64_t out = os_v != NULL ? os_v[n_os - (size_t)nsp + (size_t)d] : in * s;
            int64_t total = full - out;
            w.out[d] = out;
            if (total < 0) {
                /* An output larger than the full result (output_shape
                 * beyond it): as ONNX Runtime, no pads at the start and
                 * the extra elements at the end, which no input reaches
                 * (they hold the bias), as output_padding's do. */
                w.pad_begin[d] = 0;
                w.pad_end[d] = total;
            } else {
                pl_auto_pad_split(mode, total, &w.pad_begin[d], &w.pad_end[d]);
            }
        } else {
            w.pad_begin[d] = valid || pads_v == NULL ? 0 : pads_v[d];
            w.pad_end[d] = valid || pads_v == NULL ? 0 : pads_v[d + nsp];
            w.out[d] = full - w.pad_begin[d] - w.pad_end[d];
        }
        if (w.out[d] < 1)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "output size %lld on spatial axis %d is not positive",
                             (long long)w.out[d], d);
    }
    NN_TRY(nn_window_check_output(node, o, x->shape[0], m, &w));
    if (PL_DTYPE_EQ(x->dtype, PL_DTYPE_F64))
        return nn_build_f64(ctx, node, &w, group, false, out_kernel);

    nn_conv_kernel *k = nn_conv_alloc(ctx, node, &w, 0);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->transpose = true;
    k->batch = x->shape[0];
    k->c_in = c;
    k->c_out = m;
    k->group = group;
    k->cg = c / group;
    k->mg = mg;
    k->has_bias = has_bias;
    k->base.n_reads = has_bias ? 3 : 2;
    k->base.out_elements = cpu_elements(o->shape, o->ndim);
    if (!nn_fits_int(k->mg * k->ksize) || !nn_fits_int(k->in_plane) || !nn_fits_int(k->cg)) {
        cpu_kernel_release(ctx, &k->base);
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "sizes beyond OpenBLAS's int sizes");
    }
    nn_plan_conv_transpose(k, cpu_host->thread_count(ctx->host_ctx));
    *out_kernel = &k->base;
    return NULL;
}
