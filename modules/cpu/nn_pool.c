/* nn_pool.c — the cpu module's pooling kernels: MaxPool (with its optional
 * Indices output), AveragePool and LpPool over 1 to 3 spatial axes with
 * ceil_mode, pads, auto_pad, dilations and count_include_pad; GlobalAveragePool
 * and GlobalMaxPool. LpPool, (sum of |x|^p over the window's taps inside
 * the input)^(1/p), walks the taps directly.
 *
 * Work is split over the N*C planes. A 2-D pool without indices pads each
 * plane into a phase plane (see nn_window.h; -inf or 0 outside the input)
 * so that every tap of an output row is one contiguous vector loop; the
 * average's divisor is a product of per-axis counts, precomputed. Other
 * pools (1-D, 3-D, with indices) walk the taps of each output directly.
 * Indices follow ONNX (storage_order 0): the flat index into X, batch and
 * channel included, of the first maximum. */
#include <math.h>
#include <string.h>

#include "bytes.h"
#include "nn_window.h"

typedef struct nn_pool_kernel {
    pl_kernel base;
    nn_window w;
    bool is_max;
    bool is_lp;             /* LpPool, of exponent p */
    double p;
    bool include_pad;       /* AveragePool's count_include_pad */
    bool col_major;         /* MaxPool's storage_order 1: indices column-major in a plane */
    bool fast;              /* 2-D phase-plane path */
    bool global;
    int64_t planes, in_plane, out_plane, ksize;
    int64_t in_step[NN_MAX_SP];
    int64_t grain;          /* planes per parallel_for chunk, at least */
    size_t slice_bytes, ws_bytes;
    nn_phase_plan plan;
    /* Average: per axis d, the count of taps of output o that the divisor
     * counts, at counts[count_at[d] + o]. Allocated past the struct. */
    int64_t count_at[NN_MAX_SP];
    float counts[];
} nn_pool_kernel;

typedef struct nn_pool_call {
    const nn_pool_kernel *k;
    const float *x;
    float *out;             /* NULL: not wanted */
    int64_t *indices;       /* NULL: not wanted */
    bool add;
    char *ws;
} nn_pool_call;

/* ---- the direct path ---------------------------------------------------- */

/* One plane, every output: walks the taps of each window. */
static void nn_pool_plane_direct(const nn_pool_call *c, int64_t plane)
{
    const nn_pool_kernel *k = c->k;
    const nn_window *w = &k->w;
    const int nsp = w->nsp;
    const float *x = c->x + plane * k->in_plane;
    int64_t o_idx[NN_MAX_SP] = {0};
    for (int64_t p = 0; p < k->out_plane; p++) {
        int64_t start[NN_MAX_SP];
        float div = 1.0f;
        for (int d = 0; d < nsp; d++) {
            start[d] = o_idx[d] * w->stride[d] - w->pad_begin[d];
            if (!k->is_max && !k->is_lp)
                div *= k->counts[k->count_at[d] + o_idx[d]];
        }
        float best = -INFINITY, sum = 0.0f;
        double lp = 0;
        int64_t best_at = -1;
        for (int64_t t = 0; t < k->ksize; t++) {
            int64_t rest = t, off = 0;
            bool inside = true;
            for (int d = nsp - 1; d >= 0; d--) {
                int64_t i = start[d] + (rest % w->kernel[d]) * w->dilation[d];
                rest /= w->kernel[d];
                if (i < 0 || i >= w->in[d]) {
                    inside = false;
                    break;
                }
                off += i * k->in_step[d];
            }
            if (!inside)
                continue;
            float v = x[off];
            if (k->is_lp) {
                double a = fabs((double)v);
                lp += k->p == 1 ? a : k->p == 2 ? a * a : pow(a, k->p);
            } else if (k->is_max) {
                if (best_at < 0 || v > best) {
                    best = v;
                    best_at = off;
                }
            } else {
                sum += v;
            }
        }
        float r = k->is_lp    ? (float)(k->p == 1   ? lp
                                          : k->p == 2 ? sqrt(lp)
                                                      : pow(lp, 1 / k->p))
                  : k->is_max ? best
                              : sum / div;
        if (c->out != NULL) {
            float *o = c->out + plane * k->out_plane + p;
            *o = c->add ? *o + r : r;
        }
        if (c->indices != NULL && k->col_major && best_at >= 0)
            best_at = nn_col_major_offset(w, best_at);
        if (c->indices != NULL)
            c->indices[plane * k->out_plane + p] =
                best_at < 0 ? -1 : plane * k->in_plane + best_at;
        for (int d = nsp - 1; d >= 0; d--) {
            if (++o_idx[d] < w->out[d])
                break;
            o_idx[d] = 0;
        }
    }
}

/* ---- the 2-D phase-plane path -------------------------------------------- */

static void nn_pool_plane_fast(const nn_pool_call *c, int64_t plane, float *scratch)
{
    const nn_pool_kernel *k = c->k;
    const nn_window *w = &k->w;
    const nn_phase_plan *p = &k->plan;
    float *pad = scratch, *tmp = scratch + p->rows * p->cols;
    nn_phase_fill(w, p, c->x + plane * k->in_plane, k->is_max ? -INFINITY : 0.0f, pad);
    const int64_t oh_n = w->out[0], ow_n = w->out[1], kh_n = w->kernel[0], kw_n = w->kernel[1];
    float *out = c->out + plane * k->out_plane;
    for (int64_t oh = 0; oh < oh_n; oh++) {
        float *dst = c->add ? tmp : out + oh * ow_n;
        const float *row0 = pad + oh * w->stride[0] * p->cols;
        memcpy(dst, row0 + p->tap_col[0], (size_t)ow_n * sizeof(float));
        for (int64_t kh = 0; kh < kh_n; kh++) {
            const float *row = row0 + kh * w->dilation[0] * p->cols;
            for (int64_t kw = kh == 0 ? 1 : 0; kw < kw_n; kw++) {
                if (k->is_max)
                    nn_max_row(dst, row + p->tap_col[kw], ow_n);
                else
                    nn_add_row(dst, row + p->tap_col[kw], ow_n);
            }
        }
        if (!k->is_max) {
            const float *cw = k->counts + k->count_at[1];
            float ch = k->counts[k->count_at[0] + oh];
            for (int64_t i = 0; i < ow_n; i++)
                dst[i] /= ch * cw[i];
        }
        if (c->add)
            nn_add_row(out + oh * ow_n, tmp, ow_n);
    }
}

/* ---- global pools --------------------------------------------------------- */

static void nn_pool_plane_global(const nn_pool_call *c, int64_t plane)
{
    const nn_pool_kernel *k = c->k;
    const float *x = c->x + plane * k->in_plane;
    float r = k->is_max ? nn_max(x, k->in_plane) : nn_sum(x, k->in_plane) / (float)k->in_plane;
    c->out[plane] = c->add ? c->out[plane] + r : r;
}

/* ---- runs ----------------------------------------------------------------- */

static void nn_pool_chunk(void *arg, size_t begin, size_t end, int worker)
{
    const nn_pool_call *c = arg;
    const nn_pool_kernel *k = c->k;
    /* Global pools take no workspace: no pointer arithmetic on NULL. */
    float *scratch = c->ws ? (float *)(void *)(c->ws + (size_t)worker * k->slice_bytes) : NULL;
    for (size_t t = begin; t < end; t++) {
        if (k->global)
            nn_pool_plane_global(c, (int64_t)t);
        else if (k->fast && c->indices == NULL)
            nn_pool_plane_fast(c, (int64_t)t, scratch);
        else
            nn_pool_plane_direct(c, (int64_t)t);
    }
}

static pl_status *nn_pool_go(pl_module_ctx *ctx, const nn_pool_kernel *k,
                             const pl_run_args *args, float *out, int64_t *indices, bool add)
{
    nn_workspace ws;
    if (nn_workspace_acquire(ctx, args, k->ws_bytes, &ws) == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, k->base.op,
                         "out of memory for %zu bytes of workspace", k->ws_bytes);
    nn_pool_call c = {.k = k, .x = cpu_in(args, 0), .out = out, .indices = indices,
                      .add = add, .ws = ws.base};
    cpu_host->parallel_for(ctx->host_ctx, (size_t)k->planes, (size_t)k->grain, nn_pool_chunk, &c);
    nn_workspace_release(ctx, &ws);
    return NULL;
}

static pl_status *nn_pool_run(pl_module_ctx *ctx, const pl_kernel *kernel,
                              const pl_run_args *args, float *out, pl_output_request req)
{
    return nn_pool_go(ctx, (const nn_pool_kernel *)kernel, args, out, NULL,
                      req == PL_REQ_ADD_TO);
}

/* The data of output I, or an error when it is not what the kernel needs. */
static pl_status *nn_output_data(const nn_pool_kernel *k, const pl_run_args *args, size_t i,
                                 void **out)
{
    const pl_tensor *t = &args->outputs[i];
    *out = NULL;
    if (t->ndim < 0 || (t->ndim > 0 && t->shape == NULL) ||
        cpu_elements(t->shape, t->ndim) != k->base.out_elements)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, k->base.op,
                         "output %zu of the run does not have the %zu elements of the kernel", i,
                         k->base.out_elements);
    if (t->data == NULL && k->base.out_elements > 0)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, k->base.op, "output %zu has no data", i);
    *out = (char *)t->data + t->byte_offset;
    return NULL;
}

/* MaxPool with its Indices output: checks what kernel_run left to it. */
static pl_status *nn_pool_run_any(pl_module_ctx *ctx, const pl_kernel *kernel,
                                  const pl_run_args *args)
{
    const nn_pool_kernel *k = (const nn_pool_kernel *)kernel;
    pl_output_request r0 = args->requests[0], r1 = args->requests[1];
    if ((r0 != PL_REQ_NULL && r0 != PL_REQ_WRITE && r0 != PL_REQ_ADD_TO) ||
        (r1 != PL_REQ_NULL && r1 != PL_REQ_WRITE))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->op,
                         "output requests %d and %d (values: write or add-to; indices: write)",
                         (int)r0, (int)r1);
    if ((r0 == PL_REQ_NULL && r1 == PL_REQ_NULL) || k->base.out_elements == 0)
        return NULL;
    if (args->inputs[0].data == NULL)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->op, "input 0 has no data");
    void *values = NULL, *indices = NULL;
    if (r0 != PL_REQ_NULL)
        NN_TRY(nn_output_data(k, args, 0, &values));
    if (r1 != PL_REQ_NULL)
        NN_TRY(nn_output_data(k, args, 1, &indices));
    return nn_pool_go(ctx, k, args, values, indices, r0 == PL_REQ_ADD_TO);
}

/* ---- builders -------------------------------------------------------------- */

int64_t nn_pool_count(const nn_window *w, int d, int64_t o, bool include_pad)
{
    int64_t lo = include_pad ? -w->pad_begin[d] : 0;
    int64_t hi = include_pad ? w->in[d] + w->pad_end[d] : w->in[d];
    int64_t start = o * w->stride[d] - w->pad_begin[d], n = 0;
    for (int64_t t = 0; t < w->kernel[d]; t++) {
        int64_t i = start + t * w->dilation[d];
        n += i >= lo && i < hi;
    }
    return n;
}

/* The window of pool NODE from X to O into *W: pads smaller than the
 * window, the output's shape the one the window gives. */
static pl_status *nn_pool_window(const pl_node_desc *node, const pl_tensor *x,
                                 const pl_tensor *o, nn_window *w)
{
    NN_TRY(nn_window_read(node, NN_WINDOW_POOL, x, NULL, w));
    for (int d = 0; d < w->nsp; d++)
        if (w->pad_begin[d] >= w->kernel[d] * w->dilation[d] ||
            w->pad_end[d] >= w->kernel[d] * w->dilation[d])
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "pads on spatial axis %d must be smaller than the window", d);
    return nn_window_check_output(node, o, x->shape[0], x->shape[1], w);
}

static nn_pool_kernel *nn_pool_alloc(pl_module_ctx *ctx, const pl_node_desc *node,
                                     const nn_window *w, size_t counts)
{
    nn_pool_kernel *k = (nn_pool_kernel *)cpu_kernel_alloc(
        ctx, sizeof *k + counts * sizeof(float), node->op, nn_pool_run);
    if (k == NULL)
        return NULL;
    k->w = *w;
    k->in_plane = k->out_plane = k->ksize = 1;
    for (int d = w->nsp - 1; d >= 0; d--) {
        k->in_step[d] = k->in_plane;
        k->in_plane *= w->in[d];
        k->out_plane *= w->out[d];
        k->ksize *= w->kernel[d];
    }
    return k;
}

pl_status *nn_build_pool(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    bool is_max = strcmp(node->op, "MaxPool") == 0, is_lp = strcmp(node->op, "LpPool") == 0;
    nn_window w;
    NN_TRY(nn_pool_window(node, x, o, &w));
    int64_t include_pad = 0, storage_order = 0, p = 2;
    if (is_lp) {
        NN_TRY(cpu_attr_int(node, "p", 2, &p));
        if (p < 1)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "p is %lld; it must be >= 1",
                             (long long)p);
    } else if (!is_max) {
        NN_TRY(cpu_attr_int(node, "count_include_pad", 0, &include_pad));
    }
    bool want_indices = is_max && node->n_outputs > 1 && node->outputs[1].ndim >= 0;
    if (want_indices) {
        NN_TRY(cpu_attr_int(node, "storage_order", 0, &storage_order));
        const pl_tensor *ix = &node->outputs[1];
        if (storage_order != 0 && storage_order != 1)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "storage_order %lld: 0 (row-major) or 1 (column-major) expected",
                             (long long)storage_order);
        if (!PL_DTYPE_EQ(ix->dtype, PL_DTYPE_I64) || ix->ndim != o->ndim ||
            memcmp(ix->shape, o->shape, (size_t)o->ndim * sizeof(int64_t)) != 0)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "the Indices output must be i64 of the output's shape");
    }
    if (node->n_outputs > 2)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "%zu outputs", node->n_outputs);
    if (PL_DTYPE_EQ(x->dtype, PL_DTYPE_F64))
        return nn_build_f64(ctx, node, &w, 1, include_pad != 0, out_kernel);

    size_t counts = 0;
    for (int d = 0; d < w.nsp; d++)
        counts += (size_t)w.out[d];
    nn_pool_kernel *k = nn_pool_alloc(ctx, node, &w, is_max || is_lp ? 0 : counts);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->is_max = is_max;
    k->is_lp = is_lp;
    k->p = (double)p;
    k->include_pad = include_pad != 0;
    k->col_major = storage_order == 1;
    k->planes = x->shape[0] * x->shape[1];
    k->base.n_reads = 1;
    k->base.out_elements = cpu_elements(o->shape, o->ndim);
    if (!is_max && !is_lp) {
        int64_t at = 0;
        for (int d = 0; d < w.nsp; d++) {
            k->count_at[d] = at;
            for (int64_t i = 0; i < w.out[d]; i++)
                k->counts[at + i] = (float)nn_pool_count(&w, d, i, k->include_pad);
            at += w.out[d];
        }
    }
    if (want_indices || node->n_outputs > 1) {
        k->base.run = NULL;
        k->base.run_any = nn_pool_run_any;
        k->base.n_outputs = node->n_outputs;
    }
    k->fast = !is_lp && nn_phase_plan_make(&w, &k->plan);
    int threads = cpu_host->thread_count(ctx->host_ctx);
    if (k->fast) {
        k->slice_bytes = nn_slice_bytes((size_t)(k->plan.rows * k->plan.cols + w.out[1]));
        k->ws_bytes = k->slice_bytes * (size_t)threads;
        k->base.workspace_bytes = k->ws_bytes;
    }
    int64_t work = k->out_plane * k->ksize;
    k->grain = work > 0 && work < 16384 ? 16384 / work : 1;
    *out_kernel = &k->base;
    return NULL;
}

pl_status *nn_build_global_pool(pl_module_ctx *ctx, const pl_node_desc *node,
                                pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    char tx[128], to[128];
    if (x->ndim < 3)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "input %s needs rank 3 or more (N, C, spatial...)",
                         cpu_dims_text(x->shape, x->ndim, tx, sizeof tx));
    bool ok = o->ndim == x->ndim;
    for (int d = 0; ok && d < x->ndim; d++)
        ok = o->shape[d] == (d < 2 ? x->shape[d] : 1);
    if (!ok)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "output %s does not pool input %s",
                         cpu_dims_text(o->shape, o->ndim, to, sizeof to),
                         cpu_dims_text(x->shape, x->ndim, tx, sizeof tx));
    int64_t planes = x->shape[0] * x->shape[1];
    int64_t in_plane = (int64_t)cpu_elements(x->shape + 2, x->ndim - 2);
    if (in_plane == 0 && planes > 0)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "input %s has empty planes",
                         cpu_dims_text(x->shape, x->ndim, tx, sizeof tx));
    if (PL_DTYPE_EQ(x->dtype, PL_DTYPE_F64))
        return nn_build_f64(ctx, node, NULL, 1, false, out_kernel);
    nn_pool_kernel *k = (nn_pool_kernel *)cpu_kernel_alloc(ctx, sizeof *k, node->op, nn_pool_run);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->global = true;
    k->is_max = strcmp(node->op, "GlobalMaxPool") == 0;
    k->planes = planes;
    k->in_plane = in_plane;
    k->out_plane = 1;
    k->grain = in_plane < 32768 ? 32768 / (in_plane > 0 ? in_plane : 1) : 1;
    k->base.n_reads = 1;
    k->base.out_elements = (size_t)planes;
    *out_kernel = &k->base;
    return NULL;
}

/* ---- MaxPool on u8 and i8 ------------------------------------------------- */

/* A 2-D MaxPool of 8-bit integers without Indices, in bytes (a quantized
 * network's pools: squeezenet_s_qop's 3x3 pools had taken 0.1 ms through
 * the f32 wrapper, which widens, pools and narrows whole tensors). i8
 * values are flipped to u8 (v ^ 0x80 keeps their order) so one loop serves
 * both; a window entirely in the padding gives the lowest value. */
typedef struct nn_pool8_kernel {
    pl_kernel base;
    nn_window w;
    uint8_t flip; /* 0x80 for i8 */
    int64_t planes, in_plane, out_plane, grain;
} nn_pool8_kernel;

typedef struct nn_pool8_call {
    pl_module_ctx *ctx;
    const nn_pool8_kernel *k;
    const uint8_t *x;
    uint8_t *y;
    bool add;   /* PL_REQ_ADD_TO: y += the maximum, wrapping as 8-bit sums do */
    int failed; /* a chunk ran out of memory (atomic stores) */
} nn_pool8_call;

/* DST[i] = max(DST[i], SRC[i]) for i < N, bytes. */
static inline void nn_max_u8(uint8_t *restrict dst, const uint8_t *restrict src, int64_t n)
{
    int64_t i = 0;
#ifdef CPU_BYTES_SSE2
    for (; i + 16 <= n; i += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(src + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(dst + i));
        _mm_storeu_si128((__m128i *)(void *)(dst + i), _mm_max_epu8(a, b));
    }
#endif
    for (; i < n; i++)
        dst[i] = src[i] > dst[i] ? src[i] : dst[i];
}

/* Per plane, separably: each input row's maximum over the kernel's
 * columns (the row padded with the lowest value and split into its
 * stride's phases, so that every tap reads a contiguous run), then each
 * output row's maximum over the kernel's rows of those. Every inner loop
 * is a contiguous byte maximum, which vectorises. */
/* Small planes, whole rows in 16-byte vectors: per plane,
 * each padded row (the lowest value outside the input) split into its
 * stride's phases, so that a tap is one unaligned load per vector; the
 * row's maximum over the kernel's columns, then each output row's over the
 * kernel's rows, with no calls. The separable loops below call a copy, two
 * clears and a maximum per row and tap, which on 128 planes of 11x11 (3x3
 * stride 2) cost 43 us against 14 here. Needs short output rows
 * (NN_POOL8_SMALL_W), a stride of 1 or 2 and padded rows that fit
 * NN_POOL8_ROW (nn_pool8_small_fits). */
#define NN_POOL8_ROW 256
/* Output rows up to this wide take it; wider ones copy their rows faster
 * through the separable loops (32 planes of 47x47: 0.039 ms there, 0.045
 * here, where each input byte is placed one at a time). */
#define NN_POOL8_SMALL_W 16
/* ... and stride-2 rows up to this wide (their phases are split with
 * SSE2): 32 planes of 47x47 (3x3 stride 2, 23 wide) 0.040 ms separably,
 * 0.027 here; at 56 wide (64 planes of 112x112) the separable loops win,
 * 0.20 against 0.27, as they do for stride 1 at 56 (0.05 against 0.09). */
#define NN_POOL8_SMALL_W_S2 32

static int64_t nn_pool8_vecs(const nn_window *w)
{
    return (w->out[1] + 15) / 16;
}

static bool nn_pool8_small_fits(const nn_window *w)
{
    int64_t wp = (w->out[1] - 1) * w->stride[1] + (w->kernel[1] - 1) * w->dilation[1] + 1;
    int64_t hp = (w->out[0] - 1) * w->stride[0] + (w->kernel[0] - 1) * w->dilation[0] + 1;
    int64_t reach = (w->kernel[1] - 1) * w->dilation[1]; /* the last tap's column */
    int64_t lanes = 16 * nn_pool8_vecs(w);
    bool fits = w->stride[1] == 1 ? reach + lanes <= NN_POOL8_ROW && wp <= NN_POOL8_ROW
                                  : reach / 2 + lanes <= NN_POOL8_ROW / 2 &&
                                        (wp + 1) / 2 <= NN_POOL8_ROW / 2;
    return (w->out[1] <= NN_POOL8_SMALL_W ||
            (w->stride[1] == 2 && w->out[1] <= NN_POOL8_SMALL_W_S2)) &&
           (w->stride[1] == 1 || w->stride[1] == 2) && fits && hp <= 4096;
}

/* Bytes of nn_pool8_small's buffer: per padded row, its maxima and the
 * row as the taps read it. */
static size_t nn_pool8_small_bytes(const nn_window *w)
{
    int64_t hp = (w->out[0] - 1) * w->stride[0] + (w->kernel[0] - 1) * w->dilation[0] + 1;
    return (size_t)(hp * (16 * nn_pool8_vecs(w) + NN_POOL8_ROW));
}

#ifdef CPU_BYTES_SSE2
/* N <= 64 bytes from SRC to DST in moves of 8, 4 or 1 bytes, the last
 * overlapping the one before: an output row of a few bytes, where a call
 * to memcpy took longer than the row's maxima. */
static inline void nn_copy_short(uint8_t *dst, const uint8_t *src, int64_t n)
{
    if (n >= 8) {
        for (int64_t i = 0; i + 8 < n; i += 8)
            memcpy(dst + i, src + i, 8);
        memcpy(dst + n - 8, src + n - 8, 8);
    } else if (n >= 4) {
        memcpy(dst, src, 4);
        memcpy(dst + n - 4, src + n - 4, 4);
    } else {
        for (int64_t i = 0; i < n; i++)
            dst[i] = src[i];
    }
}
#endif

static void nn_pool8_small(const nn_pool8_call *c, size_t begin, size_t end, uint8_t *hmax)
{
#ifdef CPU_BYTES_SSE2
    const nn_pool8_kernel *k = c->k;
    const nn_window *w = &k->w;
    const int64_t h = w->in[0], wd = w->in[1], oh_n = w->out[0], ow_n = w->out[1];
    const int64_t sh = w->stride[0], sw = w->stride[1], dh = w->dilation[0], dw = w->dilation[1];
    const int64_t kh_n = w->kernel[0], kw_n = w->kernel[1];
    const int64_t hp = (oh_n - 1) * sh + (kh_n - 1) * dh + 1;
    const int64_t pt = w->pad_begin[0], pl = w->pad_begin[1];
    const int64_t half = NN_POOL8_ROW / 2; /* phase 1 starts here (stride 2) */
    const int64_t nv = nn_pool8_vecs(w), pitch = 16 * nv;
    /* the padded columns the windows reach, and the bytes of a row (of
     * each phase) the taps' loads read */
    const int64_t span = (ow_n - 1) * sw + (kw_n - 1) * dw + 1;
    const int64_t reach = (kw_n - 1) * dw;
    const int64_t need = sw == 2 ? reach / 2 + pitch : reach + pitch;
    const uint8_t f = k->flip;
    uint8_t yrow[64];
    const __m128i vf = _mm_set1_epi8((char)f); /* the padding, flipped */
    /* every row of a plane is placed before the taps read any: the taps'
     * loads straddle the placing's stores, and read right after them they
     * waited for the stores to leave the store buffer (a third of a 3x3
     * stride-2 MaxPool on 32 planes of 47x47) */
    uint8_t *rows = hmax + hp * pitch;
    for (size_t plane = begin; plane < end; plane++) {
        const uint8_t *x = c->x + (int64_t)plane * k->in_plane;
        uint8_t *y = c->y + (int64_t)plane * k->out_plane;
        for (int64_t r = 0; r < hp; r++) {
            int64_t ih = r - pt;
            if (ih < 0 || ih >= h)
                continue;
            /* clear what the taps read to the padding (the lowest value
             * once flipped), then place the input columns the windows
             * reach, as they are, and flip the whole vectors (byte by
             * byte, placing and flipping had been half of the MaxPool) */
            uint8_t *row = rows + r * NN_POOL8_ROW;
            const uint8_t *xr = x + ih * wd;
            int64_t q_end = wd < span - pl ? wd : span - pl;
            int64_t width = (need + 15) / 16 * 16; /* of each phase */
            if (sw == 2) {
                /* split straight from the input into the two phases:
                 * input column q is padded column q + pl */
                for (int64_t i = 0; i < width; i += 16) {
                    _mm_storeu_si128((__m128i *)(void *)(row + i), vf);
                    _mm_storeu_si128((__m128i *)(void *)(row + half + i), vf);
                }
                uint8_t *to_even_q = (pl & 1) ? row + half + (pl >> 1) : row + (pl >> 1);
                uint8_t *to_odd_q = (pl & 1) ? row + ((pl + 1) >> 1) : row + half + (pl >> 1);
                cpu_bytes_split2_bytes(to_even_q, to_odd_q, xr, q_end);
                for (int64_t i = 0; f != 0 && i < width; i += 16) {
                    __m128i *a = (__m128i *)(void *)(row + i);
                    __m128i *b = (__m128i *)(void *)(row + half + i);
                    _mm_storeu_si128(a, _mm_xor_si128(_mm_loadu_si128(a), _mm_set1_epi8((char)f)));
                    _mm_storeu_si128(b, _mm_xor_si128(_mm_loadu_si128(b), _mm_set1_epi8((char)f)));
                }
            } else {
                for (int64_t i = 0; i < width; i += 16)
                    _mm_storeu_si128((__m128i *)(void *)(row + i), vf);
                memcpy(row + pl, xr, (size_t)q_end);
                for (int64_t i = 0; f != 0 && i < width; i += 16) {
                    __m128i *a = (__m128i *)(void *)(row + i);
                    _mm_storeu_si128(a, _mm_xor_si128(_mm_loadu_si128(a), _mm_set1_epi8((char)f)));
                }
            }
        }
        for (int64_t r = 0; r < hp; r++) {
            int64_t ih = r - pt;
            uint8_t *hr = hmax + r * pitch;
            if (ih < 0 || ih >= h) {
                for (int64_t i = 0; i < pitch; i += 16)
                    _mm_storeu_si128((__m128i *)(void *)(hr + i), _mm_setzero_si128());
                continue;
            }
            const uint8_t *row = rows + r * NN_POOL8_ROW;
            for (int64_t v = 0; v < nv; v++) {
                __m128i m = _mm_setzero_si128();
                for (int64_t kw = 0; kw < kw_n; kw++) {
                    int64_t col = kw * dw;
                    const uint8_t *src =
                        (sw == 2 ? row + (col & 1) * half + (col >> 1) : row + col) + 16 * v;
                    m = _mm_max_epu8(m, _mm_loadu_si128((const __m128i *)(const void *)src));
                }
                _mm_storeu_si128((__m128i *)(void *)(hr + 16 * v), m);
            }
        }
        for (int64_t oh = 0; oh < oh_n; oh++) {
            for (int64_t v = 0; v < nv; v++) {
                __m128i m = _mm_setzero_si128();
                for (int64_t kh = 0; kh < kh_n; kh++)
                    m = _mm_max_epu8(m, _mm_loadu_si128((const __m128i *)(const void *)(
                                            hmax + (oh * sh + kh * dh) * pitch + 16 * v)));
                _mm_storeu_si128((__m128i *)(void *)(yrow + 16 * v),
                                 _mm_xor_si128(m, _mm_set1_epi8((char)f)));
            }
            uint8_t *yr = y + oh * ow_n;
            if (!c->add)
                nn_copy_short(yr, yrow, ow_n);
            for (int64_t ow = 0; c->add && ow < ow_n; ow++)
                yr[ow] = (uint8_t)(yr[ow] + yrow[ow]);
        }
    }
#else
    (void)c, (void)begin, (void)end, (void)hmax;
#endif
}

static void nn_pool8_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    nn_pool8_call *c = arg;
    const nn_pool8_kernel *k = c->k;
    const nn_window *w = &k->w;
    const int64_t h = w->in[0], wd = w->in[1], oh_n = w->out[0], ow_n = w->out[1];
#ifdef CPU_BYTES_SSE2
    if (nn_pool8_small_fits(w)) {
        uint8_t *buf = cpu_host->host_alloc(c->ctx->host_ctx, nn_pool8_small_bytes(w), 64);
        if (buf == NULL) {
            __atomic_store_n(&c->failed, 1, __ATOMIC_RELAXED);
            return;
        }
        nn_pool8_small(c, begin, end, buf);
        cpu_host->host_free(c->ctx->host_ctx, buf);
        return;
    }
#endif
    const int64_t sw = w->stride[1], kw_n = w->kernel[1], dw = w->dilation[1];
    /* a padded row: every column a tap reads, rounded up to whole phases */
    const int64_t span = (ow_n - 1) * sw + (kw_n - 1) * dw + 1;
    const int64_t phase_n = (span + sw - 1) / sw;
    const uint8_t f = k->flip;
    uint8_t *buf = cpu_host->host_alloc(c->ctx->host_ctx,
                                        (size_t)(h * ow_n + 2 * phase_n * sw + ow_n) + 64, 64);
    if (buf == NULL) {
        __atomic_store_n(&c->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    uint8_t *hmax = buf, *row = buf + h * ow_n, *phases = row + phase_n * sw;
    uint8_t *sum_row = phases + phase_n * sw; /* add-to: the row's maxima */
    for (size_t plane = begin; plane < end; plane++) {
        const uint8_t *x = c->x + (int64_t)plane * k->in_plane;
        uint8_t *y = c->y + (int64_t)plane * k->out_plane;
        for (int64_t ih = 0; ih < h; ih++) {
            /* the row with its padding, flipped to u8 order */
            const int64_t pb = w->pad_begin[1], len = phase_n * sw;
            int64_t n_in = wd < len - pb ? wd : len - pb; /* input columns in the row */
            n_in = n_in < 0 ? 0 : n_in;
            memset(row, 0, (size_t)pb);
            memcpy(row + pb, x + ih * wd, (size_t)n_in);
            memset(row + pb + n_in, 0, (size_t)(len - pb - n_in));
            for (int64_t i = pb; f != 0 && i < pb + n_in; i++)
                row[i] ^= f;
            const uint8_t *ph = row;
            if (sw == 2) {
                cpu_bytes_split2(phases, phases + phase_n, row, phase_n);
                ph = phases;
            } else if (sw > 2) {
                for (int64_t s = 0; s < sw; s++)
                    for (int64_t i = 0; i < phase_n; i++)
                        phases[s * phase_n + i] = row[i * sw + s];
                ph = phases;
            }
            uint8_t *hr = hmax + ih * ow_n;
            for (int64_t kw = 0; kw < kw_n; kw++) {
                int64_t col = kw * dw;
                const uint8_t *src = ph + (col % sw) * phase_n + col / sw;
                if (kw == 0)
                    memcpy(hr, src, (size_t)ow_n);
                else
                    nn_max_u8(hr, src, ow_n);
            }
        }
        for (int64_t oh = 0; oh < oh_n; oh++) {
            uint8_t *yr = c->add ? sum_row : y + oh * ow_n;
            memset(yr, 0, (size_t)ow_n);
            for (int64_t kh = 0; kh < w->kernel[0]; kh++) {
                int64_t ih = oh * w->stride[0] - w->pad_begin[0] + kh * w->dilation[0];
                if (ih < 0 || ih >= h)
                    continue;
                nn_max_u8(yr, hmax + ih * ow_n, ow_n);
            }
            for (int64_t ow = 0; f != 0 && ow < ow_n; ow++)
                yr[ow] ^= f;
            for (int64_t ow = 0; c->add && ow < ow_n; ow++)
                y[oh * ow_n + ow] = (uint8_t)(y[oh * ow_n + ow] + yr[ow]);
        }
    }
    cpu_host->host_free(c->ctx->host_ctx, buf);
}

static pl_status *nn_pool8_run(pl_module_ctx *ctx, const pl_kernel *kernel,
                               const pl_run_args *args)
{
    const nn_pool8_kernel *k = (const nn_pool8_kernel *)kernel;
    pl_output_request r = args->requests[0];
    if (r == PL_REQ_NULL || k->base.out_elements == 0)
        return NULL;
    if (r != PL_REQ_WRITE && r != PL_REQ_ADD_TO)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->op,
                         "output request %d (write or add-to)", (int)r);
    const pl_tensor *t = &args->outputs[0];
    if (args->inputs[0].data == NULL || t->data == NULL || t->ndim < 0 ||
        cpu_elements(t->shape, t->ndim) != k->base.out_elements)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->op,
                         "the run's tensors do not match the kernel's");
    nn_pool8_call c = {.ctx = ctx, .k = k,
                       .x = (const uint8_t *)args->inputs[0].data + args->inputs[0].byte_offset,
                       .y = (uint8_t *)t->data + t->byte_offset, .add = r == PL_REQ_ADD_TO};
    cpu_host->parallel_for(ctx->host_ctx, (size_t)k->planes, (size_t)k->grain, nn_pool8_chunk,
                           &c);
    if (__atomic_load_n(&c.failed, __ATOMIC_RELAXED))
        return cpu_error(PL_CODE_OUT_OF_MEMORY, kernel->op, "out of memory for a row buffer");
    return NULL;
}

bool nn_pool8_wanted(const pl_node_desc *node)
{
    if (strcmp(node->op, "MaxPool") != 0 || node->n_inputs != 1 || node->n_outputs < 1)
        return false;
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    bool indices = node->n_outputs > 1 && node->outputs[1].ndim >= 0;
    return !indices && node->n_outputs <= 2 && x->ndim == 4 &&
           (PL_DTYPE_EQ(x->dtype, PL_DTYPE_U8) || PL_DTYPE_EQ(x->dtype, PL_DTYPE_I8)) &&
           PL_DTYPE_EQ(o->dtype, x->dtype) && cpu_shape_known(x) && cpu_shape_known(o);
}

pl_status *nn_build_pool8(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    nn_window w;
    NN_TRY(nn_pool_window(node, x, o, &w));
    int64_t storage_order = 0;
    NN_TRY(cpu_attr_int(node, "storage_order", 0, &storage_order));
    nn_pool8_kernel *k = (nn_pool8_kernel *)cpu_kernel_alloc(ctx, sizeof *k, node->op, NULL);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->base.run = NULL;
    k->base.run_any = nn_pool8_run;
    k->base.n_outputs = node->n_outputs;
    k->base.n_reads = 1;
    k->base.out_elements = cpu_elements(o->shape, o->ndim);
    k->w = w;
    k->flip = PL_DTYPE_EQ(x->dtype, PL_DTYPE_I8) ? 0x80 : 0;
    k->planes = x->shape[0] * x->shape[1];
    k->in_plane = w.in[0] * w.in[1];
    k->out_plane = w.out[0] * w.out[1];
    int64_t work = k->out_plane * w.kernel[0] * w.kernel[1];
    k->grain = work > 0 && work < 8192 ? 8192 / work : 1;
    *out_kernel = &k->base;
    return NULL;
}
