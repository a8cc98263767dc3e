/* signal.c — the cpu module's signal family (opset 17): the windows
 * HannWindow, HammingWindow and BlackmanWindow, DFT, STFT and
 * MelWeightMatrix (the triangular filters of ONNX's definition, to the
 * letter: its mel step divides by num_mel_bins + 2).
 *
 * The windows follow ONNX's definitions with the exact pi: w[n] = a0 -
 * a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N the size (periodic) or the
 * size minus one (symmetric). The transforms run fft.c's FFT in double
 * (mixed radix, Bluestein for a large prime factor: O(n log n) for any
 * length), lines spread over the pool, the plan kept in the kernel when
 * the length is known at build time. Lengths given as inputs (the window
 * size, dft_length, frame_step, frame_length) are read at run time and
 * checked against the output's shape. */
#include <math.h>
#include <string.h>

#include "fft.h"
#include "index_kernel.h"

static pl_status *sg_build_window(pl_module_ctx *ctx, const pl_node_desc *node,
                                  pl_kernel **out_kernel);
static pl_status *sg_build_dft(pl_module_ctx *ctx, const pl_node_desc *node,
                               pl_kernel **out_kernel);
static pl_status *sg_build_stft(pl_module_ctx *ctx, const pl_node_desc *node,
                                pl_kernel **out_kernel);
static pl_status *sg_build_mel(pl_module_ctx *ctx, const pl_node_desc *node,
                               pl_kernel **out_kernel);

const cpu_op_entry cpu_ops_signal[] = {
    {"HannWindow", sg_build_window, 1, 1, 0, CPU_OP_ANY_DTYPE},
    {"HammingWindow", sg_build_window, 1, 1, 0, CPU_OP_ANY_DTYPE},
    {"BlackmanWindow", sg_build_window, 1, 1, 0, CPU_OP_ANY_DTYPE},
    {"DFT", sg_build_dft, 1, 2, 0, CPU_OP_ANY_DTYPE},
    {"STFT", sg_build_stft, 2, 4, 0, CPU_OP_ANY_DTYPE},
    {"MelWeightMatrix", sg_build_mel, 5, 5, 0, CPU_OP_ANY_DTYPE},
    {NULL, NULL, 0, 0, 0, 0},
};

#define SG_PI 3.14159265358979323846

/* The scalar integer (i32 or i64) input I of a run. */
static int64_t sg_scalar(const pl_run_args *args, size_t i)
{
    return ix_index_at(shp_in(args, i), PL_DTYPE_EQ(args->inputs[i].dtype, PL_DTYPE_I64), 0);
}

/* A refusal unless input I of NODE is one i32 or i64 value. */
static pl_status *sg_check_scalar(const pl_node_desc *node, size_t i)
{
    const pl_tensor *t = &node->inputs[i];
    bool i64;
    SHP_TRY(ix_index_dtype(node, i, &i64));
    if (cpu_elements(t->shape, t->ndim) != 1)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "input %zu must be one value", i);
    return NULL;
}

/* ---- windows ----------------------------------------------------------------- */

typedef struct sg_window_kernel {
    shp_kernel k;
    double a0, a1, a2;
    bool periodic;
} sg_window_kernel;

static pl_status *sg_window_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                                  const pl_run_args *args, size_t o, void *dst,
                                  pl_output_request req)
{
    (void)ctx, (void)o, (void)req;
    const sg_window_kernel *k = (const sg_window_kernel *)kernel;
    size_t n = kernel->outs[0].elements;
    int64_t size = sg_scalar(args, 0);
    if (size < 0 || (uint64_t)size != n)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->base.op,
                         "size %lld at run time, but the output has %zu elements",
                         (long long)size, n);
    double len = (double)(k->periodic ? n : n - 1);
    for (size_t i = 0; i < n; i++) {
        double v = 1.0;
        if (len > 0)
            v = k->a0 - k->a1 * cos(2 * SG_PI * (double)i / len) +
                k->a2 * cos(4 * SG_PI * (double)i / len);
        ix_store(kernel->outs[0].dtype, dst, i, v);
    }
    return NULL;
}

static pl_status *sg_build_window(pl_module_ctx *ctx, const pl_node_desc *node,
                                  pl_kernel **out_kernel)
{
    SHP_TRY(sg_check_scalar(node, 0));
    if (node->outputs[0].ndim != 1 || PL_DTYPE_EQ(node->outputs[0].dtype, PL_DTYPE_BOOL))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "the output must be a numeric vector");
    int64_t periodic;
    SHP_TRY(cpu_attr_int(node, "periodic", 1, &periodic));
    sg_window_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, sg_window_write, (shp_kernel **)&k));
    k->periodic = periodic != 0;
    if (strcmp(node->op, "HannWindow") == 0) {
        k->a0 = 0.5;
        k->a1 = 0.5;
    } else if (strcmp(node->op, "HammingWindow") == 0) {
        k->a0 = 25.0 / 46.0;
        k->a1 = 1.0 - 25.0 / 46.0;
    } else {
        k->a0 = 0.42;
        k->a1 = 0.5;
        k->a2 = 0.08;
    }
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- transforms: the shared run --------------------------------------------------- */

/* A kernel's plan when its length was known at build time: in the kernel's
 * block, after its struct. */
static size_t sg_plan_offset(size_t kernel_bytes)
{
    return (kernel_bytes + 15) & ~(size_t)15;
}

/* Bytes to add to a kernel of KERNEL_BYTES for a plan of N (0 for none:
 * N unknown, or too large to keep in a kernel). */
static size_t sg_plan_extra(size_t kernel_bytes, int64_t n)
{
    size_t b = n >= 1 ? cpu_fft_bytes((size_t)n) : 0;
    if (b == 0 || b > ((size_t)64 << 20))
        return 0;
    return sg_plan_offset(kernel_bytes) - kernel_bytes + b;
}

/* One run of a transform: the plan, each worker's scratch and the lines. */
typedef struct sg_call {
    const void *kernel;
    const cpu_fft *plan;
    size_t n;              /* the transform's length */
    const char *x, *w;
    char *dst;
    size_t step;           /* STFT: frame_step */
    double *scratch;       /* per_worker doubles for each worker */
    size_t per_worker;
} sg_call;

/* Sets up CALL for transforms of N over LINES lines with FN, runs them on
 * the pool and frees what it made. CACHED is the kernel's own plan, or
 * NULL. */
static pl_status *sg_transform(pl_module_ctx *ctx, const char *op, const cpu_fft *cached,
                               sg_call *call, size_t lines, pl_parallel_fn fn)
{
    size_t n = call->n;
    void *owned = NULL;
    const cpu_fft *plan = cached != NULL && cpu_fft_length(cached) == n ? cached : NULL;
    if (plan == NULL) {
        size_t bytes = cpu_fft_bytes(n);
        if (bytes == 0)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "a transform of length %zu is too long",
                             n);
        owned = cpu_host->host_alloc(ctx->host_ctx, bytes, 16);
        if (owned == NULL)
            return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory for a plan of length %zu",
                             n);
        plan = cpu_fft_init(owned, n);
    }
    size_t workers = (size_t)cpu_host->thread_count(ctx->host_ctx);
    /* the line in, its transform out, the plan's scratch */
    call->per_worker = (4 * n + 2 * cpu_fft_scratch(plan) + 7) & ~(size_t)7;
    call->scratch = cpu_host->host_alloc(ctx->host_ctx,
                                         workers * call->per_worker * sizeof(double), 64);
    if (call->scratch == NULL) {
        cpu_host->host_free(ctx->host_ctx, owned);
        return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory for %zu lines of %zu",
                         workers, n);
    }
    call->plan = plan;
    cpu_host->parallel_for(ctx->host_ctx, lines, 1 + 32768 / (n + 1), fn, call);
    cpu_host->host_free(ctx->host_ctx, call->scratch);
    cpu_host->host_free(ctx->host_ctx, owned);
    return NULL;
}

/* ---- DFT ---------------------------------------------------------------------- */

/* Lines along the axis: [outer, len, inner, c] in, [outer, bins, inner, 2]
 * out; N is the transform length (input zero-padded or cut to it). */
typedef struct sg_dft_kernel {
    shp_kernel k;
    size_t outer, in_len, inner, c, bins;
    int64_t n;        /* -1: read from dft_length at run time */
    bool inverse, onesided;
    bool c2r; /* inverse and onesided: BINS real values out ([.., 1]) */
    pl_dtype dt;
    const cpu_fft *plan; /* of n, when known at build time */
} sg_dft_kernel;

/* The inverse of a real signal's onesided spectrum (numpy's irfft): line
 * X of IN_LEN bins (C values each: a missing imaginary part is 0) read as
 * the first n / 2 + 1 of a Hermitian spectrum of N (bins past IN_LEN are
 * 0), the rest its conjugates; the imaginary parts of bin 0 and (for an
 * even N) bin n / 2 drop out, as in numpy. Y the N real values. */
static void sg_c2r_line(const sg_dft_kernel *k, const sg_call *c, double *in, double *out,
                        double *fs, size_t x0, size_t xstep, size_t y0, size_t ystep)
{
    size_t n = c->n, half = n / 2, take = k->in_len < half + 1 ? k->in_len : half + 1;
    memset(in, 0, 2 * n * sizeof(double));
    for (size_t f = 0; f < take; f++) {
        size_t at = x0 + f * xstep;
        double xr = ix_load(k->dt, c->x, at), xi = k->c == 2 ? ix_load(k->dt, c->x, at + 1) : 0;
        if (f == 0 || 2 * f == n)
            xi = 0;
        in[2 * f] = xr;
        in[2 * f + 1] = -xi; /* conjugated: the inverse through the forward */
        if (f != 0 && 2 * f != n) {
            in[2 * (n - f)] = xr;
            in[2 * (n - f) + 1] = xi;
        }
    }
    cpu_fft_forward(c->plan, in, out, fs);
    double scale = 1.0 / (double)n;
    for (size_t t = 0; t < n; t++)
        ix_store(k->dt, c->dst, y0 + t * ystep, out[2 * t] * scale);
}

static void sg_dft_lines(void *arg, size_t begin, size_t end, int worker)
{
    const sg_call *c = arg;
    const sg_dft_kernel *k = c->kernel;
    size_t n = c->n, take = k->in_len < n ? k->in_len : n;
    double *in = c->scratch + (size_t)worker * c->per_worker, *out = in + 2 * n, *fs = out + 2 * n;
    double scale = k->inverse ? 1.0 / (double)n : 1.0, sign = k->inverse ? -1.0 : 1.0;
    for (size_t line = begin; line < end; line++) {
        size_t ou = line / k->inner, i = line % k->inner;
        if (k->c2r) {
            sg_c2r_line(k, c, in, out, fs, (ou * k->in_len * k->inner + i) * k->c,
                        k->inner * k->c, ou * k->bins * k->inner + i, k->inner);
            continue;
        }
        /* an inverse through the forward transform: conj(F(conj(x))) / n */
        for (size_t t = 0; t < take; t++) {
            size_t at = ((ou * k->in_len + t) * k->inner + i) * k->c;
            in[2 * t] = ix_load(k->dt, c->x, at);
            in[2 * t + 1] = k->c == 2 ? sign * ix_load(k->dt, c->x, at + 1) : 0;
        }
        memset(in + 2 * take, 0, 2 * (n - take) * sizeof(double));
        cpu_fft_forward(c->plan, in, out, fs);
        for (size_t f = 0; f < k->bins; f++) {
            size_t y = ((ou * k->bins + f) * k->inner + i) * 2;
            ix_store(k->dt, c->dst, y, out[2 * f] * scale);
            ix_store(k->dt, c->dst, y + 1, sign * out[2 * f + 1] * scale);
        }
    }
}

static pl_status *sg_dft_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                               const pl_run_args *args, size_t o, void *dst,
                               pl_output_request req)
{
    (void)o, (void)req;
    const sg_dft_kernel *k = (const sg_dft_kernel *)kernel;
    int64_t n = k->n;
    if (n < 0)
        n = sg_scalar(args, 1);
    size_t want = n < 1 ? 0 : k->onesided && !k->c2r ? (size_t)n / 2 + 1 : (size_t)n;
    if (n < 1 || want != k->bins)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->base.op,
                         "dft_length %lld at run time does not give the output's %zu bins",
                         (long long)n, k->bins);
    sg_call call = {.kernel = k, .n = (size_t)n, .x = shp_in(args, 0), .dst = dst};
    return sg_transform(ctx, kernel->base.op, k->plan, &call, k->outer * k->inner, sg_dft_lines);
}

static pl_status *sg_build_dft(pl_module_ctx *ctx, const pl_node_desc *node,
                               pl_kernel **out_kernel)
{
    const char *op = node->op;
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    int r = x->ndim;
    int64_t axis, inverse, onesided;
    SHP_TRY(cpu_attr_int(node, "axis", 1, &axis));
    SHP_TRY(cpu_attr_int(node, "inverse", 0, &inverse));
    SHP_TRY(cpu_attr_int(node, "onesided", 0, &onesided));
    SHP_TRY(shp_same_dtype(node));
    int64_t a = axis < 0 ? axis + r : axis;
    if (r < 3 || a < 0 || a >= r - 1 || (x->shape[r - 1] != 1 && x->shape[r - 1] != 2))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "the input must be [batch, signal..., 1 or 2] with the axis a signal dim");
    bool c2r = inverse && onesided;
    int64_t n = c2r ? 2 * (x->shape[a] - 1) : x->shape[a];
    if (shp_input_present(node, 1)) {
        SHP_TRY(sg_check_scalar(node, 1));
        int64_t v[1];
        size_t bytes;
        const void *data = shp_constant(node, 1, &bytes);
        n = data != NULL && shp_read_ints(node->inputs[1].dtype, data, 1, v) ? v[0] : -1;
    }
    bool ok = o->ndim == r && o->shape[r - 1] == (c2r ? 1 : 2);
    for (int d = 0; ok && d < r - 1; d++)
        ok = d == a || o->shape[d] == x->shape[d];
    if (ok && n >= 0)
        ok = o->shape[a] == (onesided && !c2r ? n / 2 + 1 : n) && n >= 1;
    if (!ok) {
        char tx[128], to[128];
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "input %s does not transform to output %s",
                         cpu_dims_text(x->shape, r, tx, sizeof tx),
                         cpu_dims_text(o->shape, o->ndim, to, sizeof to));
    }
    sg_dft_kernel *k;
    size_t extra = sg_plan_extra(sizeof *k, n);
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k + extra, sg_dft_write, (shp_kernel **)&k));
    k->outer = cpu_elements(x->shape, (int32_t)a);
    k->in_len = (size_t)x->shape[a];
    k->inner = cpu_elements(x->shape + a + 1, (int32_t)(r - 2 - a));
    k->c = (size_t)x->shape[r - 1];
    k->bins = (size_t)o->shape[a];
    k->n = n;
    k->inverse = inverse != 0;
    k->onesided = onesided != 0;
    k->c2r = c2r;
    k->dt = x->dtype;
    if (extra != 0)
        k->plan = cpu_fft_init((char *)k + sg_plan_offset(sizeof *k), (size_t)n);
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- STFT --------------------------------------------------------------------- */

/* A signal [batch, length, 1 or 2], or [batch, length] (real, as ONNX
 * Runtime takes it: onnx-asr's front ends) into [batch, frames, bins, 2]. */
typedef struct sg_stft_kernel {
    shp_kernel k;
    size_t batch, len, c, frames, bins;
    size_t fl;         /* 0: frame_length is read at run time */
    bool has_window, onesided;
    pl_dtype dt;
    const cpu_fft *plan; /* of fl, when known at build time */
} sg_stft_kernel;

static void sg_stft_frames(void *arg, size_t begin, size_t end, int worker)
{
    const sg_call *c = arg;
    const sg_stft_kernel *k = c->kernel;
    size_t fl = c->n;
    double *in = c->scratch + (size_t)worker * c->per_worker, *out = in + 2 * fl,
           *fs = out + 2 * fl;
    for (size_t line = begin; line < end; line++) {
        size_t b = line / k->frames, f = line % k->frames;
        if (k->c == 1 && line + 1 < end) {
            /* two real frames in one complex transform (Z = A + iB), then
             * A[j] = (Z[j] + conj Z[-j]) / 2, B[j] = (Z[j] - conj Z[-j]) / 2i:
             * half the transforms of a real signal's STFT */
            size_t b2 = (line + 1) / k->frames, f2 = (line + 1) % k->frames;
            for (size_t t = 0; t < fl; t++) {
                double wt = c->w != NULL ? ix_load(k->dt, c->w, t) : 1.0;
                in[2 * t] = ix_load(k->dt, c->x, b * k->len + f * c->step + t) * wt;
                in[2 * t + 1] = ix_load(k->dt, c->x, b2 * k->len + f2 * c->step + t) * wt;
            }
            cpu_fft_forward(c->plan, in, out, fs);
            for (size_t bin = 0; bin < k->bins; bin++) {
                size_t m = bin == 0 ? 0 : fl - bin;
                double zr = out[2 * bin], zi = out[2 * bin + 1], yr = out[2 * m],
                       yi = out[2 * m + 1];
                size_t y = (line * k->bins + bin) * 2, y2 = ((line + 1) * k->bins + bin) * 2;
                ix_store(k->dt, c->dst, y, 0.5 * (zr + yr));
                ix_store(k->dt, c->dst, y + 1, 0.5 * (zi - yi));
                ix_store(k->dt, c->dst, y2, 0.5 * (zi + yi));
                ix_store(k->dt, c->dst, y2 + 1, 0.5 * (yr - zr));
            }
            line++;
            continue;
        }
        for (size_t t = 0; t < fl; t++) {
            size_t at = (b * k->len + f * c->step + t) * k->c;
            double wt = c->w != NULL ? ix_load(k->dt, c->w, t) : 1.0;
            in[2 * t] = ix_load(k->dt, c->x, at) * wt;
            in[2 * t + 1] = k->c == 2 ? ix_load(k->dt, c->x, at + 1) * wt : 0;
        }
        cpu_fft_forward(c->plan, in, out, fs);
        for (size_t bin = 0; bin < k->bins; bin++) {
            size_t y = (line * k->bins + bin) * 2;
            ix_store(k->dt, c->dst, y, out[2 * bin]);
            ix_store(k->dt, c->dst, y + 1, out[2 * bin + 1]);
        }
    }
}

static pl_status *sg_stft_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                                const pl_run_args *args, size_t o, void *dst,
                                pl_output_request req)
{
    (void)o, (void)req;
    const sg_stft_kernel *k = (const sg_stft_kernel *)kernel;
    const char *op = kernel->base.op;
    int64_t step = sg_scalar(args, 1);
    size_t fl = k->fl;
    if (args->n_inputs > 3 && args->inputs[3].ndim >= 0 && args->inputs[3].data != NULL) {
        int64_t v = sg_scalar(args, 3);
        if (v < 1 || (uint64_t)v > k->len || (fl != 0 && (size_t)v != fl) ||
            (k->onesided ? (size_t)v / 2 + 1 : (size_t)v) != k->bins)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "frame_length %lld at run time does not give the output's %zu bins"
                             "%s", (long long)v, k->bins, fl ? " or match the window" : "");
        fl = (size_t)v;
    }
    if (step < 1 || (k->len - fl) / (size_t)step + 1 != k->frames)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "frame_step %lld at run time does not give the output's %zu frames",
                         (long long)step, k->frames);
    sg_call call = {.kernel = k, .n = fl, .x = shp_in(args, 0),
                    .w = k->has_window ? shp_in(args, 2) : NULL, .dst = dst,
                    .step = (size_t)step};
    return sg_transform(ctx, op, k->plan, &call, k->batch * k->frames, sg_stft_frames);
}

static pl_status *sg_build_stft(pl_module_ctx *ctx, const pl_node_desc *node,
                                pl_kernel **out_kernel)
{
    const char *op = node->op;
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    int64_t onesided;
    SHP_TRY(cpu_attr_int(node, "onesided", 1, &onesided));
    SHP_TRY(shp_same_dtype(node));
    SHP_TRY(sg_check_scalar(node, 1));
    bool has_window = shp_input_present(node, 2);
    if (shp_input_present(node, 3))
        SHP_TRY(sg_check_scalar(node, 3));
    if ((x->ndim != 2 && x->ndim != 3) ||
        (x->ndim == 3 && x->shape[2] != 1 && x->shape[2] != 2) || o->ndim != 4)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "the signal must be [batch, length] or [batch, length, 1 or 2], the "
                         "output 4-D");
    int64_t channels = x->ndim == 3 ? x->shape[2] : 1;
    /* The frame length: the window's, else the output's bins say it (the
     * run checks frame_length against it). */
    int64_t fl;
    if (has_window) {
        const pl_tensor *w = &node->inputs[2];
        if (w->ndim != 1 || !PL_DTYPE_EQ(w->dtype, x->dtype))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "the window must be a vector of the signal's dtype");
        fl = w->shape[0];
    } else if (!shp_input_present(node, 3)) {
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "neither a window nor frame_length");
    } else {
        size_t bytes;
        int64_t v[1];
        const void *data = shp_constant(node, 3, &bytes);
        /* 0: known at run time only (a onesided output's bins leave it
         * one of two lengths). */
        fl = data != NULL && shp_read_ints(node->inputs[3].dtype, data, 1, v) ? v[0] : 0;
    }
    bool ok = fl >= 0 && fl <= x->shape[1] && o->shape[0] == x->shape[0] && o->shape[3] == 2 &&
              (fl == 0 ? o->shape[2] >= 1 : o->shape[2] == (onesided ? fl / 2 + 1 : fl));
    if (!ok) {
        char tx[128], to[128];
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "signal %s and frame length %lld do not give output %s",
                         cpu_dims_text(x->shape, x->ndim, tx, sizeof tx), (long long)fl,
                         cpu_dims_text(o->shape, 4, to, sizeof to));
    }
    sg_stft_kernel *k;
    size_t extra = sg_plan_extra(sizeof *k, fl);
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k + extra, sg_stft_write, (shp_kernel **)&k));
    k->batch = (size_t)x->shape[0];
    k->len = (size_t)x->shape[1];
    k->c = (size_t)channels;
    k->frames = (size_t)o->shape[1];
    k->bins = (size_t)o->shape[2];
    k->fl = (size_t)fl;
    k->has_window = has_window;
    k->onesided = onesided != 0;
    k->dt = x->dtype;
    if (extra != 0)
        k->plan = cpu_fft_init((char *)k + sg_plan_offset(sizeof *k), (size_t)fl);
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- MelWeightMatrix -------------------------------------------------------------- */

typedef struct sg_mel_kernel {
    shp_kernel k;
    size_t spec_bins, mel_bins;
    pl_dtype hz_dt;
} sg_mel_kernel;

static pl_status *sg_mel_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                               const pl_run_args *args, size_t o, void *dst,
                               pl_output_request req)
{
    (void)ctx, (void)o, (void)req;
    const sg_mel_kernel *k = (const sg_mel_kernel *)kernel;
    const char *op = kernel->base.op;
    int64_t bins = sg_scalar(args, 0), dft = sg_scalar(args, 1), rate = sg_scalar(args, 2);
    double lo = ix_load(k->hz_dt, shp_in(args, 3), 0), hi = ix_load(k->hz_dt, shp_in(args, 4), 0);
    if (bins < 1 || (uint64_t)bins != k->mel_bins || dft < 1 ||
        (uint64_t)(dft / 2 + 1) != k->spec_bins)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "num_mel_bins %lld and dft_length %lld at run time do not give the "
                         "output's [%zu, %zu]", (long long)bins, (long long)dft, k->spec_bins,
                         k->mel_bins);
    if (rate < 1 || !(lo >= 0) || !(hi > lo))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "sample_rate %lld and edges %g..%g Hz do not make sense",
                         (long long)rate, lo, hi);
    /* num_mel_bins + 2 points evenly spaced in mels, as spectrogram bins */
    size_t points = k->mel_bins + 2;
    int64_t *bin = cpu_host->host_alloc(ctx->host_ctx, points * sizeof *bin, 0);
    if (bin == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory");
    double lo_mel = 2595 * log10(1 + lo / 700), hi_mel = 2595 * log10(1 + hi / 700);
    double step = (hi_mel - lo_mel) / (double)points;
    for (size_t i = 0; i < points; i++) {
        double hz = 700 * (pow(10, ((double)i * step + lo_mel) / 2595) - 1);
        bin[i] = (int64_t)floor((double)(dft + 1) * hz / (double)rate);
        if (bin[i] < 0 || (uint64_t)bin[i] >= k->spec_bins) {
            cpu_host->host_free(ctx->host_ctx, bin);
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "the filter edge at %g Hz falls outside the %zu spectrogram bins",
                             hz, k->spec_bins);
        }
    }
    pl_dtype dt = kernel->outs[0].dtype;
    size_t n = kernel->outs[0].elements;
    for (size_t i = 0; i < n; i++)
        ix_store(dt, dst, i, 0);
    for (size_t m = 0; m < k->mel_bins; m++) {
        int64_t left = bin[m], centre = bin[m + 1], right = bin[m + 2];
        if (centre == left) {
            ix_store(dt, dst, (size_t)centre * k->mel_bins + m, 1);
        } else {
            for (int64_t j = left; j <= centre; j++)
                ix_store(dt, dst, (size_t)j * k->mel_bins + m,
                         (double)(j - left) / (double)(centre - left));
        }
        for (int64_t j = centre; j < right; j++)
            ix_store(dt, dst, (size_t)j * k->mel_bins + m,
                     (double)(right - j) / (double)(right - centre));
    }
    cpu_host->host_free(ctx->host_ctx, bin);
    return NULL;
}

static pl_status *sg_build_mel(pl_module_ctx *ctx, const pl_node_desc *node,
                               pl_kernel **out_kernel)
{
    const pl_tensor *o = &node->outputs[0];
    for (size_t i = 0; i < 3; i++)
        SHP_TRY(sg_check_scalar(node, i));
    pl_dtype hz = node->inputs[3].dtype;
    if (!PL_DTYPE_EQ(node->inputs[4].dtype, hz) ||
        !(PL_DTYPE_EQ(hz, PL_DTYPE_F32) || PL_DTYPE_EQ(hz, PL_DTYPE_F64)) ||
        cpu_elements(node->inputs[3].shape, node->inputs[3].ndim) != 1 ||
        cpu_elements(node->inputs[4].shape, node->inputs[4].ndim) != 1)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op,
                         "the edges must be one f32 or f64 value each");
    if (o->ndim != 2 || o->shape[0] < 1 || o->shape[1] < 1 || o->shape[1] > 65536 ||
        PL_DTYPE_EQ(o->dtype, PL_DTYPE_BOOL))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "the output must be a numeric [spectrogram bins, mel bins] of at most "
                         "65536 mel bins");
    sg_mel_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, sg_mel_write, (shp_kernel **)&k));
    k->spec_bins = (size_t)o->shape[0];
    k->mel_bins = (size_t)o->shape[1];
    k->hz_dt = hz;
    *out_kernel = &k->k.base;
    return NULL;
}
