/* quant_conv.c — the cpu module's integer convolutions, ConvInteger and
 * QLinearConv, on u8 and i8: a direct convolution of any spatial rank with
 * Conv's geometry (auto_pad, pads, strides, dilations, group), accumulating
 * (x - x_zero_point) * (w - w_zero_point) exactly in int32. Padding
 * contributes nothing: it stands for the zero point, as in ONNX's examples.
 * The weights' zero point and (QLinearConv) scale may be one per output
 * channel; QLinearConv adds its i32 bias and requantizes in f32 as ONNX
 * Runtime does. The
 * quantization family's table (quant.c) names the builder. */
#include <math.h>
#include <string.h>

#include <plinth/auto_pad.h>

#include "fastmath.h"
#include "igemm.h"
#include "bytes.h"
#include "index_kernel.h"
#include "requant.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define QC_X86 1
#endif

#define QC_MAX_SP (CPU_MAX_RANK - 2)

typedef struct qc_kernel {
    shp_kernel k;
    bool qlinear;
    int nsp;
    size_t n, c, m, group;
    int64_t in[QC_MAX_SP], ker[QC_MAX_SP], out[QC_MAX_SP];
    int64_t stride[QC_MAX_SP], dil[QC_MAX_SP], pad[QC_MAX_SP];
    int64_t in_st[QC_MAX_SP];          /* the input plane's strides */
    size_t in_sp, ker_sp, out_sp;      /* spatial element counts */
    bool x_signed, w_signed, y_signed;
    bool has_xz, has_wz, wz_per, ws_per, has_bias;
    bool hwc;                          /* im2col channels-last (qc_hwc_fits) */
    bool vpack;                        /* weights in cpu_igemv's byte panels (qc_vpack_fits) */
    size_t ix, iw, ixz, iwz;           /* input numbers */
    /* Constant weights (and zero points) packed for the integer GEMM, one
     * group after another, made once when the kernel is; NULL when the
     * weights come at run time. */
    const char *wpack_pre;
} qc_kernel;

static inline int32_t qc_q8(const char *p, bool is_signed, size_t i)
{
    return is_signed ? (int32_t)((const int8_t *)(const void *)p)[i]
                     : (int32_t)((const uint8_t *)(const void *)p)[i];
}

/* Stores the exact sum SUM (a whole number in a double) of output element
 * AT: i32 (wrapping, ConvInteger) or requantized (QLinearConv). */
/* Output positions up to which (per image and group) a convolution's
 * product reads its weights from cpu_igemv's byte panels (cpu_igemv_cols)
 * where the CPU's integer GEMM is AVX2's: resnet50_s_qop's last stage (2x2
 * maps, 256 -> 512 and 128 -> 512 channels) streamed the GEMM's i16 panels,
 * twice the bytes, eight columns wide for four real ones. */
#define QC_VPACK_MAX_COLS 4

static bool qc_vpack_fits(const qc_kernel *k)
{
    size_t rows = k->c / k->group * k->ker_sp;
    return k->out_sp <= QC_VPACK_MAX_COLS && rows > 0 && k->m > 0 &&
           cpu_igemv_packed_bytes((int64_t)(k->m / k->group), (int64_t)rows) > 0;
}

/* Bytes of one group's packed weights. */
static size_t qc_pack_bytes(const qc_kernel *k, size_t mg, size_t rows)
{
    return k->vpack ? cpu_igemv_packed_bytes((int64_t)mg, (int64_t)rows)
                    : cpu_igemm_packed_a_bytes((int64_t)mg, (int64_t)rows);
}

/* Scratch of one product of N columns and depth ROWS. */
static size_t qc_product_scratch(const qc_kernel *k, size_t n, size_t rows)
{
    return k->vpack ? cpu_igemv_cols_scratch_bytes((int64_t)rows)
                    : cpu_igemm_scratch_bytes((int64_t)n, (int64_t)rows);
}

static inline void qc_store(const qc_kernel *k, void *dst, size_t at, int64_t sum, size_t m,
                            const int32_t *bias, const float *ws, float xs, float ys, int32_t yz)
{
    int32_t acc = (int32_t)(uint32_t)(uint64_t)sum; /* int32 wraps */
    if (!k->qlinear) {
        ((int32_t *)dst)[at] = acc;
        return;
    }
    /* As ONNX Runtime requantizes (and so its users' models expect to the
     * last step): the i32 sum plus the bias, in f32 times the f32
     * multiplier x_scale * w_scale / y_scale, rounded half to even. Double
     * gave a different step where the product falls on .5 in f32. */
    float mult = xs * ws[k->ws_per ? m : 0] / ys;
    int32_t total = (int32_t)((uint32_t)acc + (uint32_t)(bias ? bias[m] : 0));
    double v = nearbyintf((float)total * mult) + yz;
    double lo = k->y_signed ? -128 : 0, hi = k->y_signed ? 127 : 255;
    v = v < lo ? lo : v > hi ? hi : v;
    if (k->y_signed)
        ((int8_t *)dst)[at] = (int8_t)v;
    else
        ((uint8_t *)dst)[at] = (uint8_t)v;
}


/* How qc_write_gemm runs a product. */
typedef struct qc_plan {
    size_t tile;      /* columns of one item */
    size_t cols;      /* columns tiled: output positions, or (implicit) the
                         positions of the padded pitch (qc_implicit_cols) */
    size_t pad_bytes; /* a group's padded input (qc_pad_group), or 0: the
                         run-by-run im2col */
    bool direct;      /* 1x1, stride 1, no padding: B is the input itself */
    bool implicit;    /* 2-D, stride 1 or 2, padded: B's rows are shifted
                         views of the padded planes (cpu_igemm_q8.row_off) */
    bool shared_pad;  /* every (image, group)'s padded input made once,
                         before the products, in a buffer all share */
} qc_plan;

/* One integer convolution on the integer GEMM: what every chunk reads. */
typedef struct qc_gemm_call {
    pl_module_ctx *ctx;
    const qc_kernel *k;
    const char *x;
    int32_t xz;
    const int32_t *bias;
    const float *ws;
    float xs, ys;
    int32_t yz;
    void *dst;
    const char *wpack;    /* per group: the packed weights (cpu_igemm_pack_a, or
                           * cpu_igemv_pack when k->vpack) */
    size_t wpack_bytes;   /* of one group */
    size_t rows, n_tiles;
    qc_plan plan;
    const int32_t *wdw;   /* depthwise: w - w_zero_point, [M, taps] (qc_dw_chunk) */
    const struct qc_tapcol *tapcol; /* 2-D im2col: per kernel column (qc_tapcol_of) */
    uint8_t *xpad_all;    /* plan.shared_pad: pad_bytes per (image, group) */
    size_t pad_chunk, n_pad_chunks; /* ... made by chunks of channels */
    char *work;           /* the run's workspace, SLICE bytes a worker, or NULL */
    size_t slice;
    /* qc_write_split: the im2col of every (group, image), shared, and how
     * the channels (phase one) and output channels (phase two) split */
    uint8_t *col;
    size_t cchunk, n_cchunks, mblk, n_mblks;
    size_t dwl_block;     /* qc_dwl_chunk: channels of one item */
    int failed;           /* a chunk ran out of memory (atomic stores) */
} qc_gemm_call;

/* ---- per-worker scratch ------------------------------------------------------
 *
 * A chunk's buffers come from its worker's slice of the run's workspace,
 * which the kernel asks the core for when it is built (the arena keeps it
 * between runs); only when the core handed less are they allocated per
 * chunk. Allocated and freed on every run, the buffers of one convolution
 * (the igemm panel alone is 73 KB for 2304 rows) went back to the system
 * when freed and came back as page faults: 14% of a 256-channel 3x3
 * QLinearConv on a 2x2 map. */

#define QC_MAX_BUFS 5

static size_t qc_slice_of(const size_t *bytes, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += CPU_IGEMM_R64(bytes[i]);
    return total;
}

/* Points OUT[i] at BYTES[i] bytes of WORKER's scratch (NULL for 0 bytes);
 * false when an allocation failed (qc_scratch_free frees the others). */
static bool qc_scratch(const qc_gemm_call *c, int worker, const size_t *bytes, size_t n,
                       void **out)
{
    bool ok = true;
    char *at = c->work != NULL ? c->work + (size_t)worker * c->slice : NULL;
    for (size_t i = 0; i < n; i++) {
        if (bytes[i] == 0) {
            out[i] = NULL;
        } else if (at != NULL) {
            out[i] = at;
            at += CPU_IGEMM_R64(bytes[i]);
        } else {
            out[i] = cpu_host->host_alloc(c->ctx->host_ctx, bytes[i], 64);
            ok &= out[i] != NULL;
        }
    }
    return ok;
}

static void qc_scratch_free(const qc_gemm_call *c, void **bufs, size_t n)
{
    for (size_t i = 0; c->work == NULL && i < n; i++)
        cpu_host->host_free(c->ctx->host_ctx, bufs[i]);
}

/* A chunk's buffers (qc_scratch); false, the call marked failed, when
 * memory is short: the chunk then runs no item. */
static bool qc_chunk_bufs(qc_gemm_call *c, int worker, const size_t *bytes, void **bufs)
{
    if (qc_scratch(c, worker, bytes, QC_MAX_BUFS, bufs))
        return true;
    __atomic_store_n(&c->failed, 1, __ATOMIC_RELAXED);
    return false;
}


/* Where one kernel column of a 2-D im2col reads: the input column of
 * output column 0 (BASE) and the output columns [LO, HI) that read inside
 * the input. */
typedef struct qc_tapcol {
    int64_t base, lo, hi;
} qc_tapcol;

static qc_tapcol qc_tapcol_of(const qc_kernel *k, int64_t kw)
{
    const int64_t wd = k->in[1], ow_n = k->out[1], sw = k->stride[1];
    qc_tapcol t = {.base = kw * k->dil[1] - k->pad[1]};
    t.lo = t.base >= 0 ? 0 : (-t.base + sw - 1) / sw;
    t.hi = wd - t.base <= 0 ? 0 : (wd - t.base + sw - 1) / sw;
    t.lo = t.lo > ow_n ? ow_n : t.lo;
    t.hi = t.hi > ow_n ? ow_n : t.hi < t.lo ? t.lo : t.hi;
    return t;
}

/* One row of the 2-D im2col: the input at kernel row offset KH (dilated)
 * and kernel column TC for output positions from (OH, OW0) on, NC of
 * them, PAD outside the input; whole runs of an output row at a time
 * (memset, then memcpy where the stride is 1 or the even bytes where it is
 * 2); every run after the first starts a row. */
static inline void qc_im2col_row2(const qc_kernel *k, const uint8_t *xb, int64_t kh,
                                  const qc_tapcol *tc, int64_t oh, int64_t ow0, size_t nc,
                                  uint8_t pad, uint8_t *row)
{
    const int64_t h = k->in[0], wd = k->in[1], ow_n = k->out[1], st = k->in_st[0];
    const int64_t sh = k->stride[0], sw = k->stride[1];
    for (size_t j = 0; j < nc; oh++, ow0 = 0) {
        int64_t len = ow_n - ow0 < (int64_t)(nc - j) ? ow_n - ow0 : (int64_t)(nc - j);
        int64_t ih = oh * sh - k->pad[0] + kh;
        uint8_t *r = row + j;
        j += (size_t)len;
        if (ih < 0 || ih >= h) {
            memset(r, pad, (size_t)len);
            continue;
        }
        /* the run's positions inside the input: [lo, hi) */
        int64_t lo = tc->lo - ow0, hi = tc->hi - ow0;
        lo = lo < 0 ? 0 : lo > len ? len : lo;
        hi = hi < lo ? lo : hi > len ? len : hi;
        const uint8_t *xs = xb + ih * st + tc->base + ow0 * sw; /* output column ow0's input */
        memset(r, pad, (size_t)lo);
        if (sw == 1) {
            memcpy(r + lo, xs + lo, (size_t)(hi - lo));
        } else if (sw == 2) {
            /* whole groups of 16 only while their 32 bytes stay in the row */
            int64_t fit = (wd - (tc->base + (ow0 + lo) * 2)) / 2;
            int64_t vec = hi - lo < fit ? hi - lo : fit;
            vec = vec < 0 ? 0 : vec / 16 * 16;
            cpu_bytes_split2(r + lo, NULL, xs + 2 * lo, vec);
            for (int64_t t = lo + vec; t < hi; t++)
                r[t] = xs[2 * t];
        } else {
            for (int64_t t = lo; t < hi; t++)
                r[t] = xs[t * sw];
        }
        memset(r + hi, pad, (size_t)(len - hi));
    }
}

/* DST[0 .. N) = SRC[0 .. N) for the short runs of small maps: whole
 * 8-byte moves (the last one overlapping) instead of a call. */
static inline void qc_copy_run(uint8_t *dst, const uint8_t *src, int64_t n)
{
    if (n >= 8 && n <= 16) {
        uint64_t a, b;
        memcpy(&a, src, 8);
        memcpy(&b, src + n - 8, 8);
        memcpy(dst, &a, 8);
        memcpy(dst + n - 8, &b, 8);
    } else if (n > 16) {
        memcpy(dst, src, (size_t)n);
    } else {
        for (int64_t t = 0; t < n; t++)
            dst[t] = src[t];
    }
}

/* The input of one group of a 2-D convolution with its padding made real
 * (the zero point), so that the im2col of a small map copies runs without
 * a bound to check: per channel, QC_PAD_ROWS(k) rows of qc_pad_pitch(k)
 * bytes, input row IH at row IH + pad, column IW at IW + pad; the rows
 * cover every input row and column a kernel tap reads, and a pitch one
 * past that lets cpu_bytes_split2 read its last pair whole. */
static int64_t qc_pad_rows(const qc_kernel *k)
{
    return (k->out[0] - 1) * k->stride[0] + (k->ker[0] - 1) * k->dil[0] + 1;
}

static int64_t qc_pad_pitch(const qc_kernel *k)
{
    return (k->out[1] - 1) * k->stride[1] + (k->ker[1] - 1) * k->dil[1] + 2;
}

/* Output rows at least this wide take the implicit im2col (the pitch's
 * extra columns, (kernel width + 1) of every row, are computed and
 * dropped: at most about a third more work). */
#define QC_IMPLICIT_MIN_W 8

/* The implicit product's geometry. Stride 1: output (oh, ow) is column
 * oh * pitch + ow of the padded plane (qc_pad_group), and tap (kh, kw) of
 * every column is one shift of it. Stride 2 (no dilation): the padded
 * plane is split into its four (row, column) parity phases
 * (qc_pad_phases), each PITCH = half the padded pitch wide; tap (kh, kw)
 * reads phase (kh % 2, kw % 2) shifted by (kh / 2, kw / 2), so output
 * (oh, ow) is again column oh * pitch + ow. */
static bool qc_implicit_s2(const qc_kernel *k)
{
    return k->stride[0] == 2;
}

static int64_t qc_implicit_pitch(const qc_kernel *k)
{
    return qc_implicit_s2(k) ? (qc_pad_pitch(k) + 1) / 2 : qc_pad_pitch(k);
}

static int64_t qc_implicit_rows(const qc_kernel *k)
{
    return qc_implicit_s2(k) ? (qc_pad_rows(k) + 1) / 2 : qc_pad_rows(k);
}

/* Bytes of one channel's padded input as the implicit product reads it. */
static size_t qc_implicit_plane(const qc_kernel *k)
{
    return (size_t)((qc_implicit_s2(k) ? 4 : 1) * qc_implicit_rows(k) * qc_implicit_pitch(k));
}

static size_t qc_implicit_cols(const qc_kernel *k)
{
    return (size_t)((k->out[0] - 1) * qc_implicit_pitch(k) + k->out[1]);
}

/* Whether K's product can read its input implicitly: 2-D, stride 1, or 2
 * without dilation, and rows wide enough (QC_IMPLICIT_MIN_W). */
static bool qc_implicit_fits(const qc_kernel *k)
{
    bool s1 = k->stride[0] == 1 && k->stride[1] == 1;
    bool s2 = k->stride[0] == 2 && k->stride[1] == 2 && k->dil[0] == 1 && k->dil[1] == 1;
    return k->nsp == 2 && (s1 || s2) && k->out[1] >= QC_IMPLICIT_MIN_W;
}

/* Padded inputs of at most this many bytes take qc_im2col_padded. */
#define QC_PAD_MAX_BYTES ((size_t)256 << 10)
/* The padded inputs of all (image, group)s of a run, shared by its work
 * items, at most this many bytes (qc_plan.shared_pad). */
#define QC_PAD_SHARED_MAX ((size_t)4 << 20)

/* ---- narrow maps, channels-last ----------------------------------------------
 *
 * An output row narrower than QC_IMPLICIT_MIN_W makes the im2col by
 * channel a few bytes a run: a 256 -> 256 3x3 QLinearConv on a 2x2 map
 * copied 4608 runs of two bytes, a third of its time. Such a convolution
 * reads its input channels-last instead: the group's input, padding made
 * real, is laid out [rows, columns, channels] once (qc_pad_hwc), and each
 * output position's column of B is its taps' channel runs one after
 * another (kernel row by kernel row: KW * C/g bytes at once without
 * dilation), taken as a transposed B [positions, K]. The weights are
 * packed with K in the same order, (kh, kw, channel) (qc_pack_weights). */

/* Columns of the channels-last padded input: the last one a tap reads. */
static int64_t qc_hwc_pitch(const qc_kernel *k)
{
    return (k->out[1] - 1) * k->stride[1] + (k->ker[1] - 1) * k->dil[1] + 1;
}

/* Input channels a group needs for the channels-last im2col to pay: its
 * runs are at least this long. */
#define QC_HWC_MIN_C 4

static bool qc_is_direct(const qc_kernel *k)
{
    bool direct = k->ker_sp == 1;
    for (int d = 0; d < k->nsp; d++)
        direct &= k->stride[d] == 1 && k->pad[d] == 0 && k->out[d] == k->in[d];
    return direct;
}

/* Whether K's products take the channels-last im2col: 2-D, not depthwise
 * nor a 1x1 that reads its input as it is, output rows too narrow for the
 * implicit product, enough channels a group, and the padded input within
 * QC_PAD_MAX_BYTES (qc_gemm_plan's buffer for it). */
static bool qc_hwc_fits(const qc_kernel *k)
{
    size_t cg = k->group ? k->c / k->group : 0;
    return k->nsp == 2 && k->c != k->group && !qc_is_direct(k) &&
           k->out[1] < QC_IMPLICIT_MIN_W && cg >= QC_HWC_MIN_C &&
           cg * (size_t)(qc_pad_rows(k) * qc_pad_pitch(k)) <= QC_PAD_MAX_BYTES;
}

/* The CG channels of one group (XG) channels-last with the padding made
 * real (PAD): byte (y, x, c) at OUT[(y * qc_hwc_pitch + x) * CG + c] is
 * input (y - pad, x - pad) of channel c. Eight channels at a time, one
 * 8-byte store per position. */
static void qc_pad_hwc(const qc_kernel *k, const uint8_t *xg, size_t cg, uint8_t pad,
                       uint8_t *out)
{
    const int64_t hp = qc_pad_rows(k), wp = qc_hwc_pitch(k);
    const int64_t h = k->in[0], wd = k->in[1], p0 = k->pad[0], p1 = k->pad[1];
    const int64_t x0 = p1, x1 = wd + p1 < wp ? wd + p1 : wp; /* columns inside */
    memset(out, pad, cg * (size_t)(hp * wp));
    for (int64_t y = p0; y < hp && y - p0 < h; y++) {
        const uint8_t *src = xg + (y - p0) * wd; /* input column x - p1 */
        uint8_t *row = out + (size_t)(y * wp) * cg;
        size_t cc = 0;
        for (; cc + 8 <= cg; cc += 8) {
            const uint8_t *s0 = src + cc * k->in_sp;
            for (int64_t x = x0; x < x1; x++) {
                uint8_t v[8];
                for (int i = 0; i < 8; i++)
                    v[i] = s0[(size_t)i * k->in_sp + (size_t)(x - p1)];
                memcpy(row + (size_t)x * cg + cc, v, 8);
            }
        }
        for (; cc < cg; cc++)
            for (int64_t x = x0; x < x1; x++)
                row[(size_t)x * cg + cc] = src[cc * k->in_sp + (size_t)(x - p1)];
    }
}

/* Columns C0 .. C0 + NC of B, transposed: output position j's ROWS values
 * (its taps' channels, in the weights' (kh, kw, channel) order) at
 * BT + (j - C0) * ROWS, from the channels-last input XH of CG channels. */
static void qc_hwc_cols(const qc_kernel *k, const uint8_t *xh, size_t cg, size_t c0, size_t nc,
                        size_t rows, uint8_t *bt)
{
    const int64_t wp = qc_hwc_pitch(k), ow_n = k->out[1];
    const bool joined = k->dil[1] == 1; /* a kernel row's taps lie together */
    for (size_t j = 0; j < nc; j++) {
        const int64_t oh = (int64_t)(c0 + j) / ow_n, ow = (int64_t)(c0 + j) % ow_n;
        uint8_t *o = bt + j * rows;
        for (int64_t kh = 0; kh < k->ker[0]; kh++) {
            const uint8_t *at =
                xh + (size_t)((oh * k->stride[0] + kh * k->dil[0]) * wp + ow * k->stride[1]) * cg;
            if (joined) {
                memcpy(o, at, (size_t)k->ker[1] * cg);
                o += (size_t)k->ker[1] * cg;
                continue;
            }
            for (int64_t kw = 0; kw < k->ker[1]; kw++, o += cg)
                memcpy(o, at + (size_t)(kw * k->dil[1]) * cg, cg);
        }
    }
}

static void qc_pad_group(const qc_kernel *k, const uint8_t *xg, size_t cg, uint8_t pad,
                         uint8_t *out)
{
    const int64_t hp = qc_pad_rows(k), pitch = qc_pad_pitch(k);
    const int64_t h = k->in[0], wd = k->in[1], p0 = k->pad[0], p1 = k->pad[1];
    int64_t w_in = wd < pitch - p1 ? wd : pitch - p1; /* input columns that land in a row */
    memset(out, pad, cg * (size_t)(hp * pitch));
    for (size_t cc = 0; cc < cg && w_in > 0; cc++)
        for (int64_t ih = 0; ih < h && ih + p0 < hp; ih++)
            qc_copy_run(out + (size_t)((int64_t)cc * hp + ih + p0) * (size_t)pitch + p1,
                        xg + cc * k->in_sp + (size_t)(ih * wd), w_in);
}

/* The input of one group of a stride-2 convolution padded as
 * qc_pad_group does, each channel then stored as its four parity phases
 * (qc_implicit_s2): phase (a, b) holds padded rows a, a + 2, ... and
 * columns b, b + 2, ..., qc_implicit_rows(k) rows of qc_implicit_pitch(k). */
static void qc_pad_phases(const qc_kernel *k, const uint8_t *xg, size_t cg, uint8_t pad,
                          uint8_t *out)
{
    const int64_t hp = qc_pad_rows(k), hq = qc_implicit_rows(k), pq = qc_implicit_pitch(k);
    const int64_t h = k->in[0], wd = k->in[1], p0 = k->pad[0], p1 = k->pad[1];
    const int64_t w_in = wd < 2 * pq - p1 ? wd : 2 * pq - p1; /* columns that land */
    const size_t phase = (size_t)(hq * pq), plane = 4 * phase;
    memset(out, pad, cg * plane);
    for (size_t cc = 0; cc < cg && w_in > 0; cc++) {
        uint8_t *base = out + cc * plane;
        for (int64_t ih = 0; ih < h && ih + p0 < hp; ih++) {
            int64_t pr = ih + p0; /* padded row: phase row pr / 2 of parity pr % 2 */
            if ((pr & 1) && k->ker[0] == 1)
                continue; /* one kernel row reads the even rows alone */
            uint8_t *even = base + (size_t)(pr & 1) * 2 * phase + (size_t)((pr >> 1) * pq);
            uint8_t *odd = even + phase;
            /* input column q lands in padded column q + p1: the even
             * columns of the input go to one phase, the odd to the other,
             * split straight from the input 16 pairs at a time (through
             * a padded copy of the row, the split's loads waited on the
             * copy's narrower stores: 44% of a 3x3/2 convolution) */
            const uint8_t *src = xg + cc * k->in_sp + (size_t)(ih * wd);
            uint8_t *to_even_q = (p1 & 1) ? odd + (p1 >> 1) : even + (p1 >> 1);
            uint8_t *to_odd_q = (p1 & 1) ? even + ((p1 + 1) >> 1) : odd + (p1 >> 1);
            cpu_bytes_split2_bytes(to_even_q, to_odd_q, src, w_in);
        }
    }
}

/* One row of the 2-D im2col from the padded input XP of one channel
 * (qc_pad_group): kernel tap (KH, KW), output positions from (OH, OW0) on,
 * NC of them. */
static inline void qc_im2col_padded(const qc_kernel *k, const uint8_t *xp, int64_t kh,
                                    int64_t kw, int64_t oh, int64_t ow0, size_t nc, uint8_t *row)
{
    const int64_t ow_n = k->out[1], pitch = qc_pad_pitch(k);
    const int64_t sh = k->stride[0], sw = k->stride[1];
    const uint8_t *base = xp + kh * k->dil[0] * pitch + kw * k->dil[1];
    for (size_t j = 0; j < nc; oh++, ow0 = 0) {
        int64_t len = ow_n - ow0 < (int64_t)(nc - j) ? ow_n - ow0 : (int64_t)(nc - j);
        const uint8_t *xs = base + oh * sh * pitch + ow0 * sw;
        uint8_t *r = row + j;
        j += (size_t)len;
        if (sw == 1)
            qc_copy_run(r, xs, len);
        else if (sw == 2)
            cpu_bytes_split2(r, NULL, xs, len);
        else
            for (int64_t t = 0; t < len; t++)
                r[t] = xs[t * sw];
    }
}


/* Writes the exact sums AM of output channel M of image N at positions
 * C0 .. C0 + NC: ConvInteger's i32, or QLinearConv's requantization (the
 * arithmetic of qc_store, the multiplier once per channel). */
static void qc_store_run(const qc_gemm_call *c, size_t n, size_t m, size_t c0, const int32_t *am,
                         size_t nc);

/* QLinearConv's requantization of NC sums AM of output channel M into
 * OUT (bytes). */
static void qc_requant_run(const qc_gemm_call *c, size_t m, const int32_t *am, size_t nc,
                           void *out)
{
    const qc_kernel *k = c->k;
    const float mult = c->xs * c->ws[k->ws_per ? m : 0] / c->ys;
    const uint32_t bb = (uint32_t)(c->bias ? c->bias[m] : 0);
    cpu_requant_i32(am, nc, bb, mult, (float)c->yz, k->y_signed, out);
}

static void qc_store_run(const qc_gemm_call *c, size_t n, size_t m, size_t c0, const int32_t *am,
                         size_t nc)
{
    const qc_kernel *k = c->k;
    size_t at = (n * k->m + m) * k->out_sp + c0;
    if (!k->qlinear) {
        memcpy((int32_t *)c->dst + at, am, nc * sizeof *am);
        return;
    }
    qc_requant_run(c, m, am, nc, (char *)c->dst + at);
}

/* Bytes of qc_store_pitch's stage of requantized sums. */
#define QC_STORE_STAGE ((size_t)2048)

/* Multiply-adds under which a depthwise convolution runs on the calling
 * thread alone (cpu_igemm_serial_macs for the others: its loops do far
 * fewer a nanosecond than the integer GEMM). */
#define QC_DW_SERIAL_MACS ((size_t)1 << 17)

/* Whether K's product runs on the caller alone (cpu_igemm_serial_macs):
 * then it is not split by output channels either (qc_split_plan), in the
 * scratch sizing (qc_worker_slice) as in the run. */
static bool qc_serial(const qc_kernel *k)
{
    return k->n * k->m * (k->c / k->group * k->ker_sp) * k->out_sp < cpu_igemm_serial_macs();
}

/* Output rows narrower than this go channels-last (qc_dwl_chunk). */
#define QC_DWL_MAX_W 16
/* ... or narrower than this with at least QC_DWL_MIN_TAPS taps (a 7x7
 * ConvInteger on 24 channels of 16x16, convnext_s_dyn's: 0.15 ms in planes,
 * 0.10 channels-last; 3x3 on 64 channels of 32x32: 0.16 in planes, 0.30
 * channels-last), unless AVX2's qc_dw16_chunk takes it (convnext_s_dyn
 * 0.94 ms with these channels-last, 0.64 on qc_dw16_chunk; below 16
 * columns channels-last stays ahead: mobilenet_v3_s_qop's 4x4 and 8x8
 * maps 0.38 against 0.41 ms). */
#define QC_DWL_MAX_W_WIDE 32
#define QC_DWL_MIN_TAPS 25
/* Channels of one qc_dwl_chunk item. */
#define QC_DWL_BLOCK 64


/* The scratch of one worker of qc_gemm_chunk: im2col panel, padded input,
 * sums, column positions, igemm's panel. */
static void qc_gemm_scratch(const qc_kernel *k, size_t rows, const qc_plan *p, size_t *bytes)
{
    size_t tile = p->tile;
    memset(bytes, 0, QC_MAX_BUFS * sizeof *bytes);
    bytes[0] = p->direct ? 0 : p->implicit ? rows * sizeof(int64_t) : rows * tile + 1;
    bytes[1] = p->shared_pad ? 0 : p->pad_bytes;
    bytes[2] = k->m / k->group * tile * sizeof(int32_t);
    bytes[3] = tile * QC_MAX_SP * sizeof(int32_t);
    bytes[4] = qc_product_scratch(k, tile, rows);
}

static bool qc_dw16_fits(const qc_kernel *k);
static size_t qc_dw16_plane_bytes(const qc_kernel *k);
static size_t qc_dw16_sums(const qc_kernel *k);

/* ... of qc_dw_chunk: one output plane of sums; of qc_dw16_chunk, one
 * channel's padded input, its sums and the weights in pairs. */
static void qc_dw_scratch(const qc_kernel *k, size_t *bytes)
{
    memset(bytes, 0, QC_MAX_BUFS * sizeof *bytes);
    if (qc_dw16_fits(k)) {
        bytes[0] = qc_dw16_plane_bytes(k);
        bytes[1] = qc_dw16_sums(k) * sizeof(int32_t);
        bytes[2] = (k->ker_sp + 1) * (sizeof(int32_t) + sizeof(int64_t));
        return;
    }
    bytes[0] = k->out_sp * sizeof(uint32_t);
}

/* ... of qc_dwl_chunk: a block's input and sums channels-last, one output
 * row, the block's weights. */
static void qc_dwl_scratch(const qc_kernel *k, size_t *bytes)
{
    memset(bytes, 0, QC_MAX_BUFS * sizeof *bytes);
    bytes[0] = k->in_sp * QC_DWL_BLOCK * sizeof(uint32_t);
    bytes[1] = k->out_sp * QC_DWL_BLOCK * sizeof(uint32_t);
    bytes[2] = k->out_sp * sizeof(int32_t);
    bytes[3] = k->ker_sp * QC_DWL_BLOCK * sizeof(uint32_t);
}

/* ... of qc_write_split's phases: one channel's padded plane (ONE); a
 * block of MBLK output channels' sums and igemm's panel (TWO). */
static void qc_split_scratch(const qc_kernel *k, size_t mblk, size_t *one, size_t *two)
{
    memset(one, 0, QC_MAX_BUFS * sizeof *one);
    memset(two, 0, QC_MAX_BUFS * sizeof *two);
    one[0] = (k->hwc ? k->c / k->group : 1) * (size_t)(qc_pad_rows(k) * qc_pad_pitch(k));
    two[0] = mblk * k->out_sp * sizeof(int32_t);
    two[1] = qc_product_scratch(k, k->out_sp, k->c / k->group * k->ker_sp);
}


/* How qc_write_gemm runs K on THREADS; IMPLICIT: the implicit im2col
 * where it applies. */
static void qc_gemm_plan(const qc_kernel *k, size_t threads, bool implicit_ok, qc_plan *p)
{
    size_t rows = k->c / k->group * k->ker_sp;
    bool direct = qc_is_direct(k);
    size_t pad_bytes = 0;
    bool implicit = false;
    if (!direct && k->nsp == 2) {
        size_t bytes = k->c / k->group * (size_t)(qc_pad_rows(k) * qc_pad_pitch(k));
        size_t phased = k->c / k->group * qc_implicit_plane(k);
        implicit = implicit_ok && qc_implicit_fits(k) && phased <= QC_PAD_MAX_BYTES;
        pad_bytes = implicit ? phased : bytes <= QC_PAD_MAX_BYTES ? bytes : 0;
    }
    /* Each work item used to pad its (image, group) itself: on two threads
     * a 64 -> 64 3x3 on 14x14 padded its input eight times a run, 2.5 us
     * each, and ran slower than on one. Within QC_PAD_SHARED_MAX all of
     * them are made once, in parallel, first. */
    bool shared_pad = pad_bytes > 0 && k->n * k->group * pad_bytes <= QC_PAD_SHARED_MAX;
    size_t cols = implicit ? qc_implicit_cols(k) : k->out_sp;
    size_t tile = direct ? 1024 : ((size_t)1 << 16) / (rows ? rows : 1);
    tile = tile < 64 ? 64 : tile > cols ? cols : tile;
    /* at least two items per thread when the output allows */
    while (tile > 64 && k->group * k->n * ((cols + tile - 1) / tile) < 2 * threads)
        tile = (tile + 1) / 2;
    /* whole panels of B (a part-filled one packs through a staging row) */
    size_t nr = (size_t)cpu_igemm_nr();
    if (tile > nr && tile < cols)
        tile = tile / nr * nr;
    *p = (qc_plan){.tile = tile, .cols = cols, .pad_bytes = pad_bytes, .direct = direct,
                   .implicit = implicit, .shared_pad = shared_pad};
}

/* Output channels per input channel up to which a convolution of one
 * input channel per group runs on the depthwise chunks; past it the
 * integer GEMM, whose rows are the output channels (a 1 -> 64 first layer,
 * kernel 10, stride 5 on 4000 samples, wav2vec_fe_qdq's: 0.05 ms on the
 * GEMM, 0.2 on the depthwise loops). */
#define QC_DW_MAX_MULT 4

/* Whether K is depthwise: one input channel per group, a few outputs each. */
static bool qc_depthwise_fits(const qc_kernel *k)
{
    return k->c == k->group && k->nsp == 2 && k->m / k->group <= QC_DW_MAX_MULT;
}

/* Whether K runs on the depthwise chunks; channels-last (*OUT_DWL) or not. */
static bool qc_is_depthwise(const qc_kernel *k, bool *out_dwl)
{
    *out_dwl = k->m == k->c &&
               (k->out[1] < QC_DWL_MAX_W ||
                (k->out[1] < QC_DWL_MAX_W_WIDE && k->ker_sp >= QC_DWL_MIN_TAPS &&
                 !qc_dw16_fits(k)));
    return qc_depthwise_fits(k);
}

/* Whether qc_write_gemm splits K's product by output channels
 * (qc_write_split): fewer (group, image) items than threads, each one tile
 * of a small 2-D map (or of a 1x1 convolution that reads its input as it
 * is), and enough output channels for two blocks. Then the blocks of
 * *OUT_MBLK output channels and *OUT_CCHUNK input channels. */
static bool qc_split_plan(const qc_kernel *k, size_t threads, size_t *out_mblk,
                          size_t *out_cchunk)
{
    qc_plan p;
    qc_gemm_plan(k, threads, false, &p);
    size_t mg = k->m / k->group, cg = k->c / k->group;
    size_t mr = (size_t)(k->vpack ? cpu_igemv_rows() : cpu_igemm_mr());
    if ((!p.direct && p.pad_bytes == 0) || p.tile < p.cols || k->group * k->n >= threads ||
        mg < 2 * mr || threads < 2)
        return false;
    size_t per = (mg + threads - 1) / threads;
    *out_mblk = (per + mr - 1) / mr * mr;
    /* channels-last: one item a (group, image), the layout needs them all */
    *out_cchunk = k->hwc ? cg : (cg + threads - 1) / threads;
    return true;
}

/* The scratch bytes one worker of K's run takes (qc_scratch), and
 * (*OUT_SHARED) the bytes all share after the workers' slices. */
static size_t qc_worker_slice(const qc_kernel *k, size_t threads, size_t *out_shared)
{
    size_t bytes[QC_MAX_BUFS];
    bool dwl;
    *out_shared = 0;
    if (qc_is_depthwise(k, &dwl)) {
        if (dwl)
            qc_dwl_scratch(k, bytes);
        else
            qc_dw_scratch(k, bytes);
        return qc_slice_of(bytes, QC_MAX_BUFS);
    }
    size_t mblk, cchunk;
    size_t rows = k->c / k->group * k->ker_sp;
    qc_plan p;
    bool split = !qc_serial(k) && qc_split_plan(k, threads, &mblk, &cchunk);
    qc_gemm_plan(k, threads, !split, &p);
    if (split) {
        /* phase one: one channel's padded plane; phase two: a block's sums
         * and igemm's panel */
        size_t one[QC_MAX_BUFS], two[QC_MAX_BUFS];
        qc_split_scratch(k, mblk, one, two);
        size_t a = qc_slice_of(one, QC_MAX_BUFS), b = qc_slice_of(two, QC_MAX_BUFS);
        *out_shared = p.direct ? 0 : CPU_IGEMM_R64(k->group * k->n * rows * k->out_sp);
        return a > b ? a : b;
    }
    qc_gemm_scratch(k, rows, &p, bytes);
    *out_shared = p.shared_pad ? CPU_IGEMM_R64(k->n * k->group * p.pad_bytes) : 0;
    return qc_slice_of(bytes, QC_MAX_BUFS);
}

/* The workspace K asks for on THREADS workers. */
static size_t qc_work_bytes(const qc_kernel *k, size_t threads, size_t *out_slice)
{
    size_t shared;
    *out_slice = qc_worker_slice(k, threads, &shared);
    return *out_slice * threads + shared;
}

/* One input channel per group (depthwise, any multiplier), 2-D: per
 * (image, output channel) item, each tap's weight less its zero point
 * times the input less its zero point, added over the valid runs of each
 * output row into an i32 plane (padding adds nothing); the loops over a
 * row vectorise. The sums wrap as the GEMM's do. */
#define QC_DW_TAP(T)                                                                        \
    for (int64_t oh = 0; oh < oh_n; oh++) {                                                 \
        int64_t ih = oh * sh - k->pad[0] + kh * k->dil[0];                                  \
        if (ih < 0 || ih >= h)                                                              \
            continue;                                                                       \
        const T *xr = (const T *)xp + ih * wd + iw0;                                        \
        uint32_t *a = acc + oh * ow_n;                                                      \
        if (sw == 1)                                                                        \
            for (int64_t ow = lo; ow < hi; ow++)                                            \
                a[ow] += wv * (uint32_t)((int32_t)xr[ow] - xz);                             \
        else                                                                                \
            for (int64_t ow = lo; ow < hi; ow++)                                            \
                a[ow] += wv * (uint32_t)((int32_t)xr[ow * sw] - xz);                        \
    }

CPU_CLONES static void qc_dw_chunk(void *arg, size_t begin, size_t end, int worker)
{
    qc_gemm_call *c = arg;
    const qc_kernel *k = c->k;
    const size_t mg = k->m / k->group;
    const int64_t h = k->in[0], wd = k->in[1], oh_n = k->out[0], ow_n = k->out[1];
    const int64_t sh = k->stride[0], sw = k->stride[1];
    const int32_t xz = c->xz;
    size_t bytes[QC_MAX_BUFS];
    qc_dw_scratch(k, bytes);
    void *bufs[QC_MAX_BUFS];
    if (!qc_chunk_bufs(c, worker, bytes, bufs))
        begin = end;
    uint32_t *acc = bufs[0];
    for (size_t item = begin; item < end; item++) {
        size_t n = item / k->m, m = item % k->m, g = m / mg;
        const char *xp = c->x + (n * k->c + g) * k->in_sp;
        memset(acc, 0, k->out_sp * sizeof *acc);
        for (int64_t kh = 0; kh < k->ker[0]; kh++)
            for (int64_t kw = 0; kw < k->ker[1]; kw++) {
                uint32_t wv = (uint32_t)c->wdw[m * k->ker_sp + (size_t)(kh * k->ker[1] + kw)];
                if (wv == 0)
                    continue;
                /* the output columns whose input column is inside */
                int64_t iw0 = kw * k->dil[1] - k->pad[1];
                int64_t lo = iw0 >= 0 ? 0 : (-iw0 + sw - 1) / sw;
                int64_t hi = wd - iw0 <= 0 ? 0 : (wd - iw0 + sw - 1) / sw;
                hi = hi > ow_n ? ow_n : hi;
                if (hi <= lo)
                    continue;
                if (k->x_signed)
                    QC_DW_TAP(int8_t)
                else
                    QC_DW_TAP(uint8_t)
            }
        qc_store_run(c, n, m, 0, (const int32_t *)acc, k->out_sp);
    }
    qc_scratch_free(c, bufs, QC_MAX_BUFS);
}

/* Depthwise on AVX2, 16 outputs at a time in registers (the planar loop
 * above reads and writes its plane of sums once per tap: 34% of
 * mobilenet_v2's int8 time at 128x128). Per (image, channel): the input
 * channel padded with its zero point into a plane of qc_dw16_rows rows of
 * qc_dw16_pitch bytes, then per block of 16 outputs the taps in pairs:
 * both taps' 16 inputs widened to i16 (stride 2: the even bytes of 32,
 * masked or shifted out of 16-bit words), interleaved, and multiplied by
 * the pair of weights less their zero point with vpmaddwd into i32. The
 * sums are of raw inputs: (x - xz) * w summed is sum(x * w) - xz *
 * sum(w), taken off per channel in the same wrapping u32 arithmetic, and
 * padding reads xz, so every sum is the planar loop's.
 *
 * Rows of 16 or more outputs go row by row, in blocks of 16 columns.
 * Narrower rows with the same stride in rows and columns go as one run:
 * output (oh, ow) is position v = oh * pitch + ow of the plane, and tap
 * (kh, kw) reads byte stride * v + kh * dil * pitch + kw * dil, so 16
 * consecutive v are one block whatever the rows (the pitch's columns past
 * the row are computed and dropped; a 4-wide row of a 3x3 kernel wastes
 * 2 of 6 instead of 12 of 16). Stride 1 or 2 in columns, any dilation; a
 * kernel of at most QC_DW16_MAX_TAPS taps (x * w < 2^16.0 a pair, so sums
 * stay below 2^31). */
#define QC_DW16_MAX_TAPS 16384

static bool qc_dw16_fits(const qc_kernel *k)
{
#ifdef QC_X86
    return k->nsp == 2 && k->c == k->group && (k->stride[1] == 1 || k->stride[1] == 2) &&
           k->ker_sp <= QC_DW16_MAX_TAPS && cpu_has_isa(CPU_ISA_AVX2_FMA);
#else
    (void)k;
    return false;
#endif
}

/* Whether K's rows go as one run (see above). */
static bool qc_dw16_run(const qc_kernel *k)
{
    return k->out[1] < 16 && k->stride[0] == k->stride[1];
}

/* Row pitch of the padded plane: every column a row's outputs read; row
 * by row, the widest load of the last block of columns, 16 (stride 1) or
 * 32 (stride 2) bytes from its last tap. */
static int64_t qc_dw16_pitch(const qc_kernel *k)
{
    int64_t cols = qc_dw16_run(k) ? k->out[1] : (k->out[1] + 15) / 16 * 16;
    return (cols - 1) * k->stride[1] + (k->ker[1] - 1) * k->dil[1] + 1 +
           (qc_dw16_run(k) ? 0 : k->stride[1] - 1);
}

static int64_t qc_dw16_rows(const qc_kernel *k)
{
    return (k->out[0] - 1) * k->stride[0] + (k->ker[0] - 1) * k->dil[0] + 1;
}

/* Positions a run computes: the last row's outputs end it, rounded up to
 * the block. */
static size_t qc_dw16_run_len(const qc_kernel *k)
{
    return (size_t)(((k->out[0] - 1) * qc_dw16_pitch(k) + k->out[1] + 15) / 16 * 16);
}

/* The padded plane, and past it what the last block of a run reads. */
static size_t qc_dw16_plane_bytes(const qc_kernel *k)
{
    size_t plane = (size_t)(qc_dw16_rows(k) * qc_dw16_pitch(k));
    return qc_dw16_run(k) ? plane + (size_t)k->stride[1] * 16 + 32 : plane;
}

/* i32 sums of one channel: the run, or the plane plus a block's overrun. */
static size_t qc_dw16_sums(const qc_kernel *k)
{
    return qc_dw16_run(k) ? qc_dw16_run_len(k) : k->out_sp + 16;
}

#ifdef QC_X86
/* 16 values from P as i16: bytes P[0..16) (stride 1) or the even bytes of
 * P[0..32) (stride 2), unsigned or signed. */
__attribute__((target("avx2"), always_inline)) static inline __m256i
qc_dw16_load(const uint8_t *p, bool s2, bool is_signed)
{
    if (!s2) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        return is_signed ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v);
    }
    __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)p);
    return is_signed ? _mm256_srai_epi16(_mm256_slli_epi16(v, 8), 8)
                     : _mm256_and_si256(v, _mm256_set1_epi16(0xff));
}

/* The 16 sums of the block whose first tap reads B, less CORR, at OUT. */
__attribute__((target("avx2"), always_inline)) static inline void
qc_dw16_block(const uint8_t *b, const int64_t *off, const int32_t *wpair, size_t pairs,
              bool s2, bool xsig, uint32_t corr, int32_t *out)
{
    __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
    for (size_t q = 0; q < pairs; q++) {
        __m256i v0 = qc_dw16_load(b + off[2 * q], s2, xsig);
        __m256i v1 = qc_dw16_load(b + off[2 * q + 1], s2, xsig);
        __m256i wv = _mm256_set1_epi32(wpair[q]);
        lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(v0, v1), wv));
        hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(v0, v1), wv));
    }
    /* lanes hold outputs 0-3 | 8-11 (lo) and 4-7 | 12-15 (hi) */
    const __m256i vc = _mm256_set1_epi32((int32_t)corr);
    _mm256_storeu_si256((__m256i *)(void *)out,
                        _mm256_sub_epi32(_mm256_permute2x128_si256(lo, hi, 0x20), vc));
    _mm256_storeu_si256((__m256i *)(void *)(out + 8),
                        _mm256_sub_epi32(_mm256_permute2x128_si256(lo, hi, 0x31), vc));
}

__attribute__((target("avx2"))) static void qc_dw16_chunk(void *arg, size_t begin, size_t end,
                                                         int worker)
{
    qc_gemm_call *c = arg;
    const qc_kernel *k = c->k;
    const int64_t h = k->in[0], wd = k->in[1], oh_n = k->out[0], ow_n = k->out[1];
    const int64_t sh = k->stride[0], pitch = qc_dw16_pitch(k), hp = qc_dw16_rows(k);
    const bool s2 = k->stride[1] == 2, xsig = k->x_signed, run = qc_dw16_run(k);
    const size_t taps = k->ker_sp, pairs = (taps + 1) / 2;
    size_t bytes[QC_MAX_BUFS];
    qc_dw_scratch(k, bytes);
    void *bufs[QC_MAX_BUFS];
    if (!qc_chunk_bufs(c, worker, bytes, bufs))
        begin = end;
    uint8_t *xpad = bufs[0];
    int32_t *sums = bufs[1];
    int64_t *off = bufs[2];
    int32_t *wpair = (int32_t *)(void *)(off + taps + 1);
    for (size_t t = 0; t < taps; t++)
        off[t] = (int64_t)(t / (size_t)k->ker[1]) * k->dil[0] * pitch +
                 (int64_t)(t % (size_t)k->ker[1]) * k->dil[1];
    off[taps] = off[taps - 1]; /* the odd tap's partner: weight 0 */
    /* the input columns that land in a padded row */
    const int64_t p0 = k->pad[0], p1 = k->pad[1];
    const int64_t w_in = wd < pitch - p1 ? wd : pitch - p1;
    for (size_t item = begin; item < end; item++) {
        size_t n = item / k->m, m = item % k->m, g = m / (k->m / k->group);
        const uint8_t *xp = (const uint8_t *)(const void *)c->x + (n * k->c + g) * k->in_sp;
        memset(xpad, (uint8_t)c->xz, bytes[0]);
        for (int64_t ih = 0; ih < h && ih + p0 < hp && w_in > 0; ih++)
            memcpy(xpad + (ih + p0) * pitch + p1, xp + ih * wd, (size_t)w_in);
        const int32_t *wm = c->wdw + m * taps;
        uint32_t wsum = 0;
        for (size_t q = 0; q < pairs; q++) {
            int32_t w0 = wm[2 * q], w1 = 2 * q + 1 < taps ? wm[2 * q + 1] : 0;
            wpair[q] = (int32_t)(((uint32_t)(uint16_t)w1 << 16) | (uint16_t)w0);
            wsum += (uint32_t)w0 + (uint32_t)w1;
        }
        const uint32_t corr = (uint32_t)c->xz * wsum;
        const int64_t step = s2 ? 2 : 1;
        if (run) {
            /* positions oh * pitch + ow, then each row's outputs moved
             * down to oh * ow_n (never past what a later row reads) */
            const size_t len = qc_dw16_run_len(k);
            for (size_t v = 0; v < len; v += 16)
                qc_dw16_block(xpad + (int64_t)v * step, off, wpair, pairs, s2, xsig, corr,
                              sums + v);
            for (int64_t oh = 1; oh < oh_n; oh++)
                memmove(sums + oh * ow_n, sums + oh * pitch, (size_t)ow_n * sizeof *sums);
        } else {
            /* a row's last block runs into the next row's start, which
             * that row then writes */
            for (int64_t oh = 0; oh < oh_n; oh++)
                for (int64_t ow = 0; ow < ow_n; ow += 16)
                    qc_dw16_block(xpad + oh * sh * pitch + ow * step, off, wpair, pairs, s2,
                                  xsig, corr, sums + oh * ow_n + ow);
        }
        qc_store_run(c, n, m, 0, sums, k->out_sp);
    }
    qc_scratch_free(c, bufs, QC_MAX_BUFS);
}
#endif

/* Stores the sums ACC ([MROWS, NC]) of output channels M0 .. M0 + MROWS
 * of image N at columns V0 .. V0 + NC of the padded pitch (qc_plan's
 * implicit columns): each output row's part, without the pitch's extra
 * columns. */
static void qc_store_pitch(const qc_gemm_call *c, size_t n, size_t m0, size_t mrows, size_t v0,
                           const int32_t *acc, size_t nc)
{
    const qc_kernel *k = c->k;
    const size_t pitch = (size_t)qc_implicit_pitch(k), ow_n = (size_t)k->out[1];
    if (k->qlinear) {
        /* each channel's sums requantized whole, a stage at a time, and
         * the rows' bytes copied out: row by row, the requantization ran
         * 23 and 11 values a call (a third of a 3x3 QLinearConv on 23x23,
         * squeezenet_s_qop's) */
        uint8_t stage[QC_STORE_STAGE];
        for (size_t mm = 0; mm < mrows; mm++) {
            char *dst = (char *)c->dst + (n * k->m + m0 + mm) * k->out_sp;
            for (size_t s0 = 0; s0 < nc; s0 += QC_STORE_STAGE) {
                size_t s1 = nc - s0 < QC_STORE_STAGE ? nc : s0 + QC_STORE_STAGE;
                qc_requant_run(c, m0 + mm, acc + mm * nc + s0, s1 - s0, stage);
                /* output rows meeting padded columns v0 + s0 .. v0 + s1 */
                for (size_t oh = (v0 + s0) / pitch;
                     oh * pitch < v0 + s1 && oh < (size_t)k->out[0]; oh++) {
                    size_t lo = oh * pitch > v0 + s0 ? oh * pitch : v0 + s0;
                    size_t hi = oh * pitch + ow_n < v0 + s1 ? oh * pitch + ow_n : v0 + s1;
                    if (hi > lo)
                        memcpy(dst + oh * ow_n + (lo - oh * pitch), stage + (lo - v0 - s0),
                               hi - lo);
                }
            }
        }
        return;
    }
    for (size_t oh = v0 / pitch; oh * pitch < v0 + nc && oh < (size_t)k->out[0]; oh++) {
        size_t lo = oh * pitch > v0 ? 0 : v0 - oh * pitch; /* first column of the row */
        size_t hi = v0 + nc - oh * pitch < ow_n ? v0 + nc - oh * pitch : ow_n;
        if (hi <= lo)
            continue;
        for (size_t mm = 0; mm < mrows; mm++)
            qc_store_run(c, n, m0 + mm, oh * ow_n + lo, acc + mm * nc + (oh * pitch + lo - v0),
                         hi - lo);
    }
}

/* Channels C0 .. C1 of group G of image N with their padding made real
 * as C's plan reads them (qc_pad_hwc: the whole group; qc_pad_phases;
 * qc_pad_group) into OUT, the group's padded input. */
static void qc_pad_part(const qc_gemm_call *c, size_t n, size_t g, size_t c0, size_t c1,
                        uint8_t *out)
{
    const qc_kernel *k = c->k;
    const size_t cg = k->c / k->group;
    const uint8_t *xg = (const uint8_t *)(const void *)c->x + (n * k->c + g * cg) * k->in_sp;
    const uint8_t pad = (uint8_t)c->xz;
    if (k->hwc)
        qc_pad_hwc(k, xg, cg, pad, out);
    else if (c->plan.implicit && qc_implicit_s2(k))
        qc_pad_phases(k, xg + c0 * k->in_sp, c1 - c0, pad, out + c0 * qc_implicit_plane(k));
    else
        qc_pad_group(k, xg + c0 * k->in_sp, c1 - c0, pad,
                     out + c0 * (size_t)(qc_pad_rows(k) * qc_pad_pitch(k)));
}

/* Items [BEGIN, END) of ((image, group), chunk of channels) of the shared
 * padded inputs (qc_plan.shared_pad). */
static void qc_pad_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const qc_gemm_call *c = arg;
    const size_t cg = c->k->c / c->k->group;
    for (size_t item = begin; item < end; item++) {
        size_t at = item / c->n_pad_chunks, ch = item % c->n_pad_chunks;
        size_t c0 = ch * c->pad_chunk, c1 = c0 + c->pad_chunk < cg ? c0 + c->pad_chunk : cg;
        qc_pad_part(c, at / c->k->group, at % c->k->group, c0, c1,
                    c->xpad_all + at * c->plan.pad_bytes);
    }
}

/* The padded input of group G of image N: in the shared buffer, else made
 * in OWN (*OWN_OF: the (image, group) OWN holds). */
static const uint8_t *qc_padded(const qc_gemm_call *c, size_t n, size_t g, uint8_t *own,
                                size_t *own_of)
{
    const size_t at = n * c->k->group + g;
    if (c->xpad_all != NULL)
        return c->xpad_all + at * c->plan.pad_bytes;
    if (*own_of != at) {
        qc_pad_part(c, n, g, 0, c->k->c / c->k->group, own);
        *own_of = at;
    }
    return own;
}

/* ACC[MROWS x NC] (leading dimension NC) = output channels M0 .. M0 +
 * MROWS of group G's weights times B (depth C->rows), less the zero
 * points: cpu_igemm, or cpu_igemv_cols on byte panels (k->vpack). */
static void qc_product(const qc_gemm_call *c, size_t g, size_t m0, size_t mrows, size_t nc,
                       const cpu_igemm_q8 *b, int32_t *acc, void *scratch)
{
    const char *w = c->wpack + g * c->wpack_bytes;
    if (c->k->vpack)
        cpu_igemv_cols(w, (int64_t)m0, (int64_t)mrows, (int64_t)nc, b, c->xz, acc, (int64_t)nc,
                       scratch);
    else
        cpu_igemm((int64_t)mrows, (int64_t)nc, (int64_t)c->rows, w, (int64_t)m0, b, &c->xz,
                  false, acc, (int64_t)nc, scratch);
}

/* Work items [BEGIN, END) of (group, image, tile of columns), each with
 * buffers of its own. */
static void qc_gemm_chunk(void *arg, size_t begin, size_t end, int worker)
{
    qc_gemm_call *c = arg;
    const qc_kernel *k = c->k;
    size_t cg = k->c / k->group, mg = k->m / k->group, rows = c->rows, tile = c->plan.tile;
    size_t bytes[QC_MAX_BUFS];
    qc_gemm_scratch(k, rows, &c->plan, bytes);
    void *bufs[QC_MAX_BUFS];
    if (!qc_chunk_bufs(c, worker, bytes, bufs))
        begin = end;
    uint8_t *col = bufs[0], *xpad = bufs[1];
    int32_t *acc = bufs[2], *col_in = bufs[3];
    void *scratch = bufs[4];
    size_t xpad_of = (size_t)-1; /* the (image, group) xpad holds */
    bool have_off = false;       /* implicit: col holds the row offsets */
    const uint8_t pad = (uint8_t)c->xz;
    for (size_t item = begin; item < end; item++) {
        size_t t = item % c->n_tiles, n = (item / c->n_tiles) % k->n,
               g = item / (c->n_tiles * k->n);
        size_t c0 = t * tile, nc = c->plan.cols - c0 < tile ? c->plan.cols - c0 : tile;
        const uint8_t *xg = (const uint8_t *)(const void *)c->x + (n * k->c + g * cg) * k->in_sp;
        cpu_igemm_q8 b = {.data = xg + c0, .ld = (int64_t)k->in_sp, .is_signed = k->x_signed};
        if (c->plan.implicit) {
            /* columns c0 .. c0 + nc of the padded pitch: row (cc, kh, kw)
             * of B is the padded plane of cc shifted by the tap */
            const uint8_t *xp = qc_padded(c, n, g, xpad, &xpad_of);
            if (!have_off) {
                have_off = true;
                const bool s2 = qc_implicit_s2(k);
                const int64_t pitch = qc_implicit_pitch(k);
                const int64_t phase = qc_implicit_rows(k) * pitch;
                const int64_t plane = (int64_t)qc_implicit_plane(k);
                int64_t *off = (int64_t *)(void *)col, r = 0;
                for (size_t cc = 0; cc < cg; cc++)
                    for (int64_t kh = 0; kh < k->ker[0]; kh++)
                        for (int64_t kw = 0; kw < k->ker[1]; kw++)
                            off[r++] = (int64_t)cc * plane +
                                       (s2 ? ((kh & 1) * 2 + (kw & 1)) * phase +
                                                 (kh >> 1) * pitch + (kw >> 1)
                                           : kh * k->dil[0] * pitch + kw * k->dil[1]);
            }
            b = (cpu_igemm_q8){.data = xp + c0, .is_signed = k->x_signed,
                               .row_off = (const int64_t *)(const void *)col};
            qc_product(c, g, 0, mg, nc, &b, acc, scratch);
            qc_store_pitch(c, n, g * mg, mg, c0, acc, nc);
            continue;
        }
        if (k->hwc) {
            /* narrow maps: B transposed, from the input channels-last */
            qc_hwc_cols(k, qc_padded(c, n, g, xpad, &xpad_of), cg, c0, nc, rows, col);
            b = (cpu_igemm_q8){.data = col, .ld = (int64_t)rows, .trans = true,
                               .is_signed = k->x_signed};
        } else if (!c->plan.direct && c->plan.pad_bytes > 0) {
            /* small 2-D maps: from the input with its padding made real */
            const uint8_t *xp = qc_padded(c, n, g, xpad, &xpad_of);
            const int64_t oh0 = (int64_t)c0 / k->out[1], ow00 = (int64_t)c0 % k->out[1];
            const size_t plane = (size_t)(qc_pad_rows(k) * qc_pad_pitch(k));
            uint8_t *row = col;
            for (size_t cc = 0; cc < cg; cc++)
                for (int64_t kh = 0; kh < k->ker[0]; kh++)
                    for (int64_t kw = 0; kw < k->ker[1]; kw++, row += nc)
                        qc_im2col_padded(k, xp + cc * plane, kh, kw, oh0, ow00, nc, row);
            b.data = col;
            b.ld = (int64_t)nc;
        } else if (!c->plan.direct) {
            /* each column's output position */
            for (size_t j = 0; j < nc && k->nsp != 2; j++) {
                size_t orest = c0 + j;
                for (int d = k->nsp - 1; d >= 0; d--) {
                    col_in[j * QC_MAX_SP + d] =
                        (int32_t)((int64_t)(orest % (size_t)k->out[d]) * k->stride[d] - k->pad[d]);
                    orest /= (size_t)k->out[d];
                }
            }
            /* the input laid out by tap, [C/g * taps, columns]; padding is
             * the zero point, which the product takes off again */
            const int64_t ow_n = k->nsp == 2 ? k->out[1] : 1;
            const int64_t oh0 = (int64_t)c0 / ow_n, ow00 = (int64_t)c0 % ow_n;
            for (size_t cc = 0; cc < cg && k->nsp == 2; cc++) {
                const uint8_t *xb = xg + cc * k->in_sp;
                uint8_t *row = col + cc * k->ker_sp * nc;
                for (int64_t kh = 0; kh < k->ker[0]; kh++)
                    for (int64_t kw = 0; kw < k->ker[1]; kw++, row += nc)
                        qc_im2col_row2(k, xb, kh * k->dil[0], &c->tapcol[kw], oh0, ow00, nc,
                                       pad, row);
            }
            for (size_t cc = 0; cc < cg && k->nsp != 2; cc++) {
                const uint8_t *xb = xg + cc * k->in_sp;
                for (size_t kp = 0; kp < k->ker_sp; kp++) {
                    int64_t kd[QC_MAX_SP];
                    size_t rest = kp;
                    for (int d = k->nsp - 1; d >= 0; d--) {
                        kd[d] = (int64_t)(rest % (size_t)k->ker[d]) * k->dil[d];
                        rest /= (size_t)k->ker[d];
                    }
                    uint8_t *row = col + (cc * k->ker_sp + kp) * nc;
                    for (size_t j = 0; j < nc; j++) {
                        size_t in_off = 0;
                        bool inside = true;
                        for (int d = 0; d < k->nsp; d++) {
                            int64_t id = col_in[j * QC_MAX_SP + d] + kd[d];
                            inside &= id >= 0 && id < k->in[d];
                            in_off += (size_t)id * (size_t)k->in_st[d];
                        }
                        row[j] = inside ? xb[in_off] : pad;
                    }
                }
            }
            b.data = col;
            b.ld = (int64_t)nc;
        }
        qc_product(c, g, 0, mg, nc, &b, acc, scratch);
        for (size_t mm = 0; mm < mg; mm++)
            qc_store_run(c, n, g * mg + mm, c0, acc + mm * nc, nc);
    }
    qc_scratch_free(c, bufs, QC_MAX_BUFS);
}

/* Packs the weights of every group (cpu_igemm_pack_a: [M/g, C/g * taps]
 * with their zero points) into OUT, GROUP_BYTES apart. Channels-last
 * (K->hwc), each row's values go (tap, channel) through PERM (M/g * C/g *
 * taps bytes) first. */
static void qc_pack_weights(const qc_kernel *k, const char *w, const char *wz, char *out,
                            size_t group_bytes, int32_t *zbuf, char *perm)
{
    size_t mg = k->m / k->group, cg = k->c / k->group, rows = cg * k->ker_sp;
    for (size_t g = 0; g < k->group; g++) {
        for (size_t mm = 0; mm < mg; mm++)
            zbuf[mm] = wz != NULL ? qc_q8(wz, k->w_signed, k->wz_per ? g * mg + mm : 0) : 0;
        const char *wg = w + g * mg * rows;
        if (k->hwc) {
            for (size_t mm = 0; mm < mg; mm++)
                for (size_t cc = 0; cc < cg; cc++)
                    for (size_t t = 0; t < k->ker_sp; t++)
                        perm[mm * rows + t * cg + cc] = wg[mm * rows + cc * k->ker_sp + t];
            wg = perm;
        }
        cpu_igemm_q8 a = {.data = wg, .ld = (int64_t)rows, .is_signed = k->w_signed};
        if (k->vpack)
            cpu_igemv_pack((int64_t)mg, (int64_t)rows, &a, zbuf, true, out + g * group_bytes);
        else
            cpu_igemm_pack_a((int64_t)mg, (int64_t)rows, &a, zbuf, true, out + g * group_bytes);
    }
}

/* Constant weights packed with their zero points (cpu_share_derived's
 * fill). */
typedef struct qc_fill {
    const qc_kernel *k;
    const char *w, *wz;
    int32_t *zbuf;
    size_t group_bytes;
    char *perm;
} qc_fill;

static void qc_fill_run(void *arg, void *out)
{
    const qc_fill *f = arg;
    qc_pack_weights(f->k, f->w, f->wz, out, f->group_bytes, f->zbuf, f->perm);
}

/* The same convolution channels-last, for narrow maps (rows too short for
 * the plane loops to vectorise): per (image, block of QC_DWL_BLOCK
 * channels) item, the block's input less its zero point is laid out
 * [H, W, channels] in i32 once; each output position then sums its taps
 * with the loop over channels innermost, weights laid out [taps,
 * channels]. One output channel per input channel only. */

CPU_CLONES static void qc_dwl_chunk(void *arg, size_t begin, size_t end, int worker)
{
    qc_gemm_call *c = arg;
    const qc_kernel *k = c->k;
    const int64_t h = k->in[0], wd = k->in[1], oh_n = k->out[0], ow_n = k->out[1];
    const size_t blk = c->dwl_block, nblk = (k->m + blk - 1) / blk;
    size_t bytes[QC_MAX_BUFS];
    qc_dwl_scratch(k, bytes);
    void *bufs[QC_MAX_BUFS];
    if (!qc_chunk_bufs(c, worker, bytes, bufs))
        begin = end;
    uint32_t *xt = bufs[0], *yt = bufs[1], *wt = bufs[3];
    int32_t *row = bufs[2];
    for (size_t item = begin; item < end; item++) {
        size_t n = item / nblk, c0 = (item % nblk) * blk;
        size_t cb = k->m - c0 < blk ? k->m - c0 : blk;
        for (size_t cc = 0; cc < cb; cc++) {
            const char *xp = c->x + (n * k->c + c0 + cc) * k->in_sp;
            for (size_t p = 0; p < k->in_sp; p++)
                xt[p * cb + cc] = (uint32_t)(qc_q8(xp, k->x_signed, p) - c->xz);
            for (size_t t = 0; t < k->ker_sp; t++)
                wt[t * cb + cc] = (uint32_t)c->wdw[(c0 + cc) * k->ker_sp + t];
        }
        for (int64_t oh = 0; oh < oh_n; oh++)
            for (int64_t ow = 0; ow < ow_n; ow++) {
                uint32_t *y = yt + (size_t)(oh * ow_n + ow) * cb;
                memset(y, 0, cb * sizeof *y);
                for (int64_t kh = 0; kh < k->ker[0]; kh++) {
                    int64_t ih = oh * k->stride[0] - k->pad[0] + kh * k->dil[0];
                    if (ih < 0 || ih >= h)
                        continue;
                    for (int64_t kw = 0; kw < k->ker[1]; kw++) {
                        int64_t iw = ow * k->stride[1] - k->pad[1] + kw * k->dil[1];
                        if (iw < 0 || iw >= wd)
                            continue;
                        const uint32_t *xv = xt + (size_t)(ih * wd + iw) * cb;
                        const uint32_t *wv = wt + (size_t)(kh * k->ker[1] + kw) * cb;
                        for (size_t cc = 0; cc < cb; cc++)
                            y[cc] += wv[cc] * xv[cc];
                    }
                }
            }
        for (size_t cc = 0; cc < cb; cc++) {
            for (size_t p = 0; p < k->out_sp; p++)
                row[p] = (int32_t)yt[p * cb + cc];
            qc_store_run(c, n, c0 + cc, 0, row, k->out_sp);
        }
    }
    qc_scratch_free(c, bufs, QC_MAX_BUFS);
}

/* A depthwise 2-D convolution (one input channel per group) on
 * qc_dw_chunk, the (image, output channel) items over the pool. False when
 * memory is short. */
static bool qc_write_depthwise(pl_module_ctx *ctx, const qc_kernel *k, const char *x,
                               const char *w, int32_t xz, const char *wz, const int32_t *bias,
                               const float *ws, float xs, float ys, int32_t yz, void *dst,
                               char *work, size_t slice)
{
    qc_gemm_call *c = cpu_host->host_alloc(ctx->host_ctx, sizeof *c, 64);
    int32_t *wdw = cpu_host->host_alloc(ctx->host_ctx, (k->m * k->ker_sp + 1) * sizeof *wdw, 64);
    bool ok = c && wdw;
    if (ok) {
        for (size_t m = 0; m < k->m; m++) {
            int32_t z = wz != NULL ? qc_q8(wz, k->w_signed, k->wz_per ? m : 0) : 0;
            for (size_t t = 0; t < k->ker_sp; t++)
                wdw[m * k->ker_sp + t] = qc_q8(w, k->w_signed, m * k->ker_sp + t) - z;
        }
        *c = (qc_gemm_call){.ctx = ctx, .k = k, .x = x, .xz = xz, .bias = bias, .ws = ws,
                            .xs = xs, .ys = ys, .yz = yz, .dst = dst, .wdw = wdw,
                            .work = work, .slice = slice};
        /* channels-last where output rows are short and each output
         * channel reads its own input channel (measured: mobilenet_v3_s's
         * 4x4 and 8x8 maps) */
        bool dwl;
        qc_is_depthwise(k, &dwl);
        /* blocks of up to QC_DWL_BLOCK channels, in multiples of 16, at
         * least one per thread when the channels allow */
        size_t threads = (size_t)cpu_host->thread_count(ctx->host_ctx);
        size_t per = (k->m + threads - 1) / (threads ? threads : 1);
        per = (per + 15) / 16 * 16;
        c->dwl_block = per < QC_DWL_BLOCK ? per : QC_DWL_BLOCK;
        /* a small one on the caller alone (its scratch is per worker, the
         * same whoever runs it) */
        const bool serial = k->n * k->m * k->ker_sp * k->out_sp < QC_DW_SERIAL_MACS;
        size_t items = dwl ? k->n * ((k->m + c->dwl_block - 1) / c->dwl_block) : k->n * k->m;
        size_t grain = serial ? items : 1;
        if (dwl)
            cpu_host->parallel_for(ctx->host_ctx, items, grain, qc_dwl_chunk, c);
#ifdef QC_X86
        else if (qc_dw16_fits(k))
            cpu_host->parallel_for(ctx->host_ctx, items, grain, qc_dw16_chunk, c);
#endif
        else
            cpu_host->parallel_for(ctx->host_ctx, items, grain, qc_dw_chunk, c);
        ok = !__atomic_load_n(&c->failed, __ATOMIC_RELAXED);
    }
    cpu_host->host_free(ctx->host_ctx, c);
    cpu_host->host_free(ctx->host_ctx, wdw);
    return ok;
}

/* The convolution as products on the integer GEMM: per image and group,
 * the weights ([M/g, C/g * taps]) times the input laid out by tap ([C/g *
 * taps, columns], padding the zero point, in tiles of columns; a 1x1
 * convolution of stride 1 without padding reads the input itself), the
 * (group, image, tile) items spread over the pool. The sums are exact
 * 32-bit integers (igemm.h). False when memory is short (the direct loop
 * runs then, writing every output again). */
/* qc_write_split, phase one: items [BEGIN, END) of ((group, image),
 * chunk of input channels), each channel padded (qc_pad_group) and laid
 * out by tap into the shared im2col. */
static void qc_split_col_chunk(void *arg, size_t begin, size_t end, int worker)
{
    qc_gemm_call *c = arg;
    const qc_kernel *k = c->k;
    size_t cg = k->c / k->group, rows = cg * k->ker_sp;
    size_t bytes[QC_MAX_BUFS], two[QC_MAX_BUFS];
    qc_split_scratch(k, c->mblk, bytes, two);
    void *bufs[QC_MAX_BUFS];
    if (!qc_chunk_bufs(c, worker, bytes, bufs))
        begin = end;
    uint8_t *xpad = bufs[0];
    for (size_t item = begin; item < end; item++) {
        size_t gi = item / c->n_cchunks, ch = item % c->n_cchunks;
        size_t g = gi / k->n, n = gi % k->n;
        size_t c0 = ch * c->cchunk, c1 = c0 + c->cchunk < cg ? c0 + c->cchunk : cg;
        const uint8_t *xg = (const uint8_t *)(const void *)c->x + (n * k->c + g * cg) * k->in_sp;
        uint8_t *col = c->col + gi * rows * k->out_sp;
        if (k->hwc) { /* the whole group (qc_split_plan's chunk) */
            qc_pad_hwc(k, xg, cg, (uint8_t)c->xz, xpad);
            qc_hwc_cols(k, xpad, cg, 0, k->out_sp, rows, col);
            continue;
        }
        for (size_t cc = c0; cc < c1; cc++) {
            qc_pad_group(k, xg + cc * k->in_sp, 1, (uint8_t)c->xz, xpad);
            uint8_t *row = col + cc * k->ker_sp * k->out_sp;
            for (int64_t kh = 0; kh < k->ker[0]; kh++)
                for (int64_t kw = 0; kw < k->ker[1]; kw++, row += k->out_sp)
                    qc_im2col_padded(k, xpad, kh, kw, 0, 0, k->out_sp, row);
        }
    }
    qc_scratch_free(c, bufs, QC_MAX_BUFS);
}

/* qc_write_split, phase two: items [BEGIN, END) of ((group, image), block
 * of output channels), each a product of the shared im2col. */
static void qc_split_gemm_chunk(void *arg, size_t begin, size_t end, int worker)
{
    qc_gemm_call *c = arg;
    const qc_kernel *k = c->k;
    size_t mg = k->m / k->group, rows = c->rows;
    size_t one[QC_MAX_BUFS], bytes[QC_MAX_BUFS];
    qc_split_scratch(k, c->mblk, one, bytes);
    void *bufs[QC_MAX_BUFS];
    if (!qc_chunk_bufs(c, worker, bytes, bufs))
        begin = end;
    int32_t *acc = bufs[0];
    for (size_t item = begin; item < end; item++) {
        size_t gi = item / c->n_mblks, mb = item % c->n_mblks;
        size_t g = gi / k->n, n = gi % k->n;
        size_t m0 = mb * c->mblk, mrows = mg - m0 < c->mblk ? mg - m0 : c->mblk;
        cpu_igemm_q8 b = {.data = c->plan.direct ? (const uint8_t *)(const void *)c->x +
                                                  (n * k->c + g * (k->c / k->group)) * k->in_sp
                                            : c->col + gi * rows * k->out_sp,
                          .ld = (int64_t)(k->hwc ? rows : k->out_sp), .trans = k->hwc,
                          .is_signed = k->x_signed};
        qc_product(c, g, m0, mrows, k->out_sp, &b, acc, bufs[1]);
        for (size_t mm = 0; mm < mrows; mm++)
            qc_store_run(c, n, g * mg + m0 + mm, 0, acc + mm * k->out_sp, k->out_sp);
    }
    qc_scratch_free(c, bufs, QC_MAX_BUFS);
}

/* A product too small to split by tiles (qc_split_plan) in two phases
 * over the pool: the im2col once, by channels, into a buffer all share
 * (the workspace's shared bytes, else allocated); then the output
 * channels by blocks, each packing the shared columns itself. Splitting
 * by output channels with an im2col per block instead measured slower:
 * the im2col is most of such a product. False when memory is short. */
static bool qc_write_split(pl_module_ctx *ctx, qc_gemm_call *c, size_t threads)
{
    const qc_kernel *k = c->k;
    size_t cg = k->c / k->group, mg = k->m / k->group;
    size_t shared = k->group * k->n * c->rows * k->out_sp;
    bool own = c->work == NULL && !c->plan.direct;
    c->col = c->plan.direct ? NULL
             : own     ? cpu_host->host_alloc(ctx->host_ctx, shared, 64)
                       : (uint8_t *)(c->work + c->slice * threads);
    if (c->col == NULL && !c->plan.direct)
        return false;
    c->n_cchunks = (cg + c->cchunk - 1) / c->cchunk;
    c->n_mblks = (mg + c->mblk - 1) / c->mblk;
    if (!c->plan.direct) /* a 1x1 product reads the input as it is */
        cpu_host->parallel_for(ctx->host_ctx, k->group * k->n * c->n_cchunks, 1,
                               qc_split_col_chunk, c);
    if (!__atomic_load_n(&c->failed, __ATOMIC_RELAXED))
        cpu_host->parallel_for(ctx->host_ctx, k->group * k->n * c->n_mblks, 1,
                               qc_split_gemm_chunk, c);
    if (own)
        cpu_host->host_free(ctx->host_ctx, c->col);
    return !__atomic_load_n(&c->failed, __ATOMIC_RELAXED);
}

static bool qc_write_gemm(pl_module_ctx *ctx, const qc_kernel *k, const char *x, const char *w,
                          int32_t xz, const char *wz, const int32_t *bias, const float *ws,
                          float xs, float ys, int32_t yz, void *dst, char *work, size_t slice)
{
    bool dwl;
    if (qc_is_depthwise(k, &dwl))
        return qc_write_depthwise(ctx, k, x, w, xz, wz, bias, ws, xs, ys, yz, dst, work, slice);
    size_t mg = k->m / k->group, rows = k->c / k->group * k->ker_sp;
    const size_t threads = (size_t)cpu_host->thread_count(ctx->host_ctx);
    /* a small product runs on the caller alone, with the plan (and the
     * workers' scratch slices, qc_worker_slice) the thread count gives */
    const bool serial = qc_serial(k);
    qc_plan p;
    size_t mblk = 0, cchunk = 0;
    bool split = !serial && qc_split_plan(k, threads, &mblk, &cchunk);
    qc_gemm_plan(k, threads, !split, &p);
    qc_gemm_call *c = cpu_host->host_alloc(ctx->host_ctx, sizeof *c, 64);
    bool pre = k->wpack_pre != NULL;
    size_t group_bytes = qc_pack_bytes(k, mg, rows);
    char *wp = pre ? NULL : cpu_host->host_alloc(ctx->host_ctx, k->group * group_bytes, 64);
    int32_t *zbuf = pre ? NULL : cpu_host->host_alloc(ctx->host_ctx, (mg + 1) * sizeof *zbuf, 64);
    char *perm = pre || !k->hwc ? NULL : cpu_host->host_alloc(ctx->host_ctx, mg * rows, 64);
    size_t n_tc = k->nsp == 2 ? (size_t)k->ker[1] : 0;
    qc_tapcol *tc = cpu_host->host_alloc(ctx->host_ctx, (n_tc + 1) * sizeof *tc, 64);
    uint8_t *own_pad = NULL;
    bool ok = c && tc && (pre || (wp && zbuf && (perm || !k->hwc)));
    if (ok && !pre)
        qc_pack_weights(k, w, wz, wp, group_bytes, zbuf, perm);
    for (size_t kw = 0; ok && kw < n_tc; kw++)
        tc[kw] = qc_tapcol_of(k, (int64_t)kw);
    if (ok) {
        *c = (qc_gemm_call){.ctx = ctx, .k = k, .x = x, .xz = xz, .bias = bias, .ws = ws,
                            .xs = xs, .ys = ys, .yz = yz, .dst = dst,
                            .wpack = pre ? k->wpack_pre : wp, .wpack_bytes = group_bytes,
                            .rows = rows, .n_tiles = (p.cols + p.tile - 1) / p.tile, .plan = p,
                            .tapcol = tc, .work = work, .slice = slice};
        if (split) {
            c->mblk = mblk;
            c->cchunk = cchunk;
            ok = qc_write_split(ctx, c, threads);
        } else {
            if (p.shared_pad) {
                size_t sets = k->n * k->group, cg = k->c / k->group;
                c->xpad_all = work != NULL ? (uint8_t *)(work + slice * threads)
                                           : cpu_host->host_alloc(ctx->host_ctx,
                                                                  sets * p.pad_bytes, 64);
                own_pad = work == NULL ? c->xpad_all : NULL;
                /* by channels too when there are fewer sets than threads
                 * (channels-last pads a whole group at once) */
                c->n_pad_chunks = serial || k->hwc || sets >= threads ? 1
                                  : threads < cg            ? threads
                                                            : cg;
                c->pad_chunk = (cg + c->n_pad_chunks - 1) / c->n_pad_chunks;
                ok = c->xpad_all != NULL; /* else the direct loop, memory being short */
                if (ok)
                    cpu_host->parallel_for(ctx->host_ctx, sets * c->n_pad_chunks,
                                           serial ? sets * c->n_pad_chunks : 1, qc_pad_chunk, c);
            }
            size_t items = k->group * k->n * c->n_tiles;
            if (ok)
                cpu_host->parallel_for(ctx->host_ctx, items, serial ? items : 1, qc_gemm_chunk,
                                       c);
            ok = ok && !__atomic_load_n(&c->failed, __ATOMIC_RELAXED);
        }
    }
    cpu_host->host_free(ctx->host_ctx, c);
    cpu_host->host_free(ctx->host_ctx, own_pad);
    cpu_host->host_free(ctx->host_ctx, tc);
    cpu_host->host_free(ctx->host_ctx, wp);
    cpu_host->host_free(ctx->host_ctx, zbuf);
    cpu_host->host_free(ctx->host_ctx, perm);
    return ok;
}

static pl_status *qc_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                           const pl_run_args *args, size_t o, void *dst,
                           pl_output_request req)
{
    (void)o, (void)req;
    const qc_kernel *k = (const qc_kernel *)kernel;
    const char *x = shp_in(args, k->ix), *w = shp_in(args, k->iw);
    int32_t xz = k->has_xz ? qc_q8(shp_in(args, k->ixz), k->x_signed, 0) : 0;
    const char *wz = k->has_wz ? shp_in(args, k->iwz) : NULL;
    const float *ws = NULL;
    const int32_t *bias = NULL;
    float xs = 1, ys = 1;
    int32_t yz = 0;
    if (k->qlinear) {
        memcpy(&xs, shp_in(args, 1), sizeof xs);
        ws = (const float *)(const void *)shp_in(args, 4);
        memcpy(&ys, shp_in(args, 6), sizeof ys);
        yz = qc_q8(shp_in(args, 7), k->y_signed, 0);
        bias = k->has_bias ? (const int32_t *)(const void *)shp_in(args, 8) : NULL;
        if (!(ys != 0))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->base.op, "y_scale is %g",
                             (double)ys);
    }
    /* the workspace the kernel asked for (qc_work_bytes), when the core
     * handed it and the pool is as large as when it asked */
    size_t threads = (size_t)cpu_host->thread_count(ctx->host_ctx);
    size_t slice;
    size_t need = qc_work_bytes(k, threads, &slice);
    char *work = args->workspace != NULL && args->workspace_bytes >= need
                     ? args->workspace
                     : NULL;
    if (qc_write_gemm(ctx, k, x, w, xz, wz, bias, ws, xs, ys, yz, dst, work, slice))
        return NULL;
    size_t cg = k->c / k->group, mg = k->m / k->group;
    for (size_t n = 0; n < k->n; n++)
        for (size_t m = 0; m < k->m; m++) {
            size_t g = m / mg;
            int32_t wzm = wz != NULL ? qc_q8(wz, k->w_signed, k->wz_per ? m : 0) : 0;
            for (size_t op = 0; op < k->out_sp; op++) {
                int64_t opos[QC_MAX_SP];
                size_t orest = op;
                for (int d = k->nsp - 1; d >= 0; d--) {
                    opos[d] = (int64_t)(orest % (size_t)k->out[d]);
                    orest /= (size_t)k->out[d];
                }
                int64_t sum = 0;
                for (size_t kp = 0; kp < k->ker_sp; kp++) {
                    size_t in_off = 0, rest = kp;
                    bool inside = true;
                    for (int d = k->nsp - 1; d >= 0; d--) {
                        int64_t kd = (int64_t)(rest % (size_t)k->ker[d]);
                        rest /= (size_t)k->ker[d];
                        int64_t id = opos[d] * k->stride[d] - k->pad[d] + kd * k->dil[d];
                        if (id < 0 || id >= k->in[d]) {
                            inside = false;
                            break;
                        }
                        in_off += (size_t)id * (size_t)k->in_st[d];
                    }
                    if (!inside)
                        continue;
                    for (size_t cc = 0; cc < cg; cc++) {
                        size_t xc = g * cg + cc;
                        int32_t xv = qc_q8(x, k->x_signed, (n * k->c + xc) * k->in_sp + in_off);
                        int32_t wv = qc_q8(w, k->w_signed, (m * cg + cc) * k->ker_sp + kp);
                        sum += (int64_t)(xv - xz) * (wv - wzm);
                    }
                }
                qc_store(k, dst, (n * k->m + m) * k->out_sp + op, sum, m, bias, ws, xs, ys, yz);
            }
        }
    return NULL;
}

/* Whether input I of NODE is a u8 or i8 (*out_signed). */
static bool qc_q8_input(const pl_tensor *t, bool *out_signed)
{
    *out_signed = PL_DTYPE_EQ(t->dtype, PL_DTYPE_I8);
    return *out_signed || PL_DTYPE_EQ(t->dtype, PL_DTYPE_U8);
}

/* The geometry of NODE into K (Conv's attributes). */
static pl_status *qc_geometry(const pl_node_desc *node, qc_kernel *k)
{
    const char *op = node->op;
    const pl_tensor *x = &node->inputs[k->ix], *w = &node->inputs[k->iw], *o = &node->outputs[0];
    int nsp = x->ndim - 2;
    int64_t group;
    SHP_TRY(cpu_attr_int(node, "group", 1, &group));
    if (nsp < 1 || nsp > QC_MAX_SP || w->ndim != x->ndim || o->ndim != x->ndim || group < 1 ||
        x->shape[1] != w->shape[1] * group || w->shape[0] % group != 0 ||
        o->shape[0] != x->shape[0] || o->shape[1] != w->shape[0])
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "X [N, C, ...], W [M, C / group, ...] and the output do not fit");
    const int64_t *pads, *strides, *dil;
    size_t np, ns, nd;
    char ap[16];
    SHP_TRY(cpu_attr_ints(node, "pads", &pads, &np));
    SHP_TRY(cpu_attr_ints(node, "strides", &strides, &ns));
    SHP_TRY(cpu_attr_ints(node, "dilations", &dil, &nd));
    SHP_TRY(shp_attr_string(node, "auto_pad", "NOTSET", ap, sizeof ap));
    if ((pads && np != 2 * (size_t)nsp) || (strides && ns != (size_t)nsp) ||
        (dil && nd != (size_t)nsp))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "pads, strides or dilations do not fit");
    pl_auto_pad mode = pl_auto_pad_parse_cstr(ap);
    if (mode == PL_AUTO_PAD_INVALID)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "auto_pad '%s' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", ap);
    k->nsp = nsp;
    k->n = (size_t)x->shape[0];
    k->c = (size_t)x->shape[1];
    k->m = (size_t)w->shape[0];
    k->group = (size_t)group;
    k->in_sp = k->ker_sp = k->out_sp = 1;
    for (int d = 0; d < nsp; d++) {
        k->in[d] = x->shape[d + 2];
        k->ker[d] = w->shape[d + 2];
        k->out[d] = o->shape[d + 2];
        k->stride[d] = strides ? strides[d] : 1;
        k->dil[d] = dil ? dil[d] : 1;
        if (k->stride[d] < 1 || k->dil[d] < 1 || k->ker[d] < 1)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "strides, dilations and kernel dims must be positive");
        int64_t span = k->dil[d] * (k->ker[d] - 1) + 1, end_pad;
        if (pl_auto_pad_is_same(mode)) {
            int64_t want = pl_auto_pad_same(mode, k->in[d], k->stride[d], span, &k->pad[d],
                                            &end_pad);
            if (want != k->out[d])
                return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                                 "auto_pad %s gives %lld outputs on spatial axis %d, the "
                                 "output has %lld", ap, (long long)want, d, (long long)k->out[d]);
        } else {
            k->pad[d] = pads && mode != PL_AUTO_PAD_VALID ? pads[d] : 0;
        }
        k->in_sp *= (size_t)k->in[d];
        k->ker_sp *= (size_t)k->ker[d];
        k->out_sp *= (size_t)k->out[d];
    }
    if (nsp == 1) {
        /* a 1-D convolution is a 2-D one of one row: the 2-D paths (the
         * implicit and padded im2col, channels-last for narrow maps)
         * serve it; the N-D im2col placed each byte with its index worked
         * out (wav2vec_fe_qdq's 64 -> 64, kernel 3, stride 2 on 799: 0.14
         * ms against ONNX Runtime's 0.05) */
        k->nsp = 2;
        k->in[1] = k->in[0], k->ker[1] = k->ker[0], k->out[1] = k->out[0];
        k->stride[1] = k->stride[0], k->dil[1] = k->dil[0], k->pad[1] = k->pad[0];
        k->in[0] = k->ker[0] = k->out[0] = k->stride[0] = k->dil[0] = 1;
        k->pad[0] = 0;
    }
    ix_strides(k->in, k->nsp, k->in_st);
    return NULL;
}

/* Refuses a zero point or scale (input I) that is neither one value nor,
 * with PER_OK, one per output channel; *out_per says which. */
static pl_status *qc_param(const pl_node_desc *node, size_t i, size_t m, bool per_ok,
                           bool *out_per)
{
    size_t n = cpu_elements(node->inputs[i].shape, node->inputs[i].ndim);
    *out_per = per_ok && n == m && m != 1;
    if (n == 1 || *out_per)
        return NULL;
    return cpu_error(PL_CODE_UNSUPPORTED, node->op,
                     "input %zu has %zu values: one%s is supported", i, n,
                     per_ok ? ", or one per output channel," : "");
}

pl_status *qu_build_conv(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const char *op = node->op;
    qc_kernel tmp = {.qlinear = strcmp(op, "QLinearConv") == 0};
    tmp.ix = 0;
    tmp.iw = tmp.qlinear ? 3 : 1;
    tmp.ixz = 2;
    tmp.iwz = tmp.qlinear ? 5 : 3;
    const pl_tensor *o = &node->outputs[0];
    if (!qc_q8_input(&node->inputs[tmp.ix], &tmp.x_signed) ||
        !qc_q8_input(&node->inputs[tmp.iw], &tmp.w_signed) ||
        (tmp.qlinear ? !qc_q8_input(o, &tmp.y_signed) : !PL_DTYPE_EQ(o->dtype, PL_DTYPE_I32)))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "unsupported dtypes");
    SHP_TRY(qc_geometry(node, &tmp));
    tmp.hwc = qc_hwc_fits(&tmp);
    bool per;
    tmp.has_xz = shp_input_present(node, tmp.ixz);
    tmp.has_wz = shp_input_present(node, tmp.iwz);
    if (tmp.has_xz) {
        SHP_TRY(qc_param(node, tmp.ixz, tmp.m, false, &per));
        if (!PL_DTYPE_EQ(node->inputs[tmp.ixz].dtype, node->inputs[tmp.ix].dtype))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "x_zero_point differs from x in dtype");
    }
    if (tmp.has_wz) {
        SHP_TRY(qc_param(node, tmp.iwz, tmp.m, true, &tmp.wz_per));
        if (!PL_DTYPE_EQ(node->inputs[tmp.iwz].dtype, node->inputs[tmp.iw].dtype))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "w_zero_point differs from w in dtype");
    }
    if (tmp.qlinear) {
        SHP_TRY(qc_param(node, 1, tmp.m, false, &per));
        SHP_TRY(qc_param(node, 4, tmp.m, true, &tmp.ws_per));
        SHP_TRY(qc_param(node, 6, tmp.m, false, &per));
        SHP_TRY(qc_param(node, 7, tmp.m, false, &per));
        if (!PL_DTYPE_EQ(node->inputs[7].dtype, o->dtype))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "y_zero_point differs from y in dtype");
        tmp.has_bias = shp_input_present(node, 8);
        if (tmp.has_bias && (!PL_DTYPE_EQ(node->inputs[8].dtype, PL_DTYPE_I32) ||
                             cpu_elements(node->inputs[8].shape, node->inputs[8].ndim) != tmp.m))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "the bias must be %zu i32 values, one per output channel", tmp.m);
    }
    /* Constant weights (and weight zero points): their SGEMM operand is
     * made here, once, behind the kernel. */
    const pl_graph_api *g = cpu_host->graph;
    const void *wdata = NULL, *wzdata = NULL;
    size_t wbytes = 0, wzbytes = 0;
    size_t rows = tmp.c / tmp.group * tmp.ker_sp;
    bool pre = g != NULL && node->graph != NULL && rows > 0 && tmp.m > 0 &&
               !qc_depthwise_fits(&tmp) && /* depthwise: qc_write_depthwise */
               !cpu_node_query(node);
    if (pre) {
        int64_t tw = g->node_input(node->graph, node->node_index, tmp.iw);
        int64_t twz = tmp.has_wz ? g->node_input(node->graph, node->node_index, tmp.iwz) : -1;
        pre = tw >= 0 && g->tensor_constant(node->graph, tw, &wdata, &wbytes) &&
              wbytes == tmp.m * rows &&
              (!tmp.has_wz || (twz >= 0 && g->tensor_constant(node->graph, twz, &wzdata, &wzbytes)));
    }
    /* byte panels for constant weights only: cpu_igemv_pack is a plain
     * loop, no cheaper per run than the product it would serve */
    tmp.vpack = pre && qc_vpack_fits(&tmp);
    size_t head = (sizeof(qc_kernel) + 63) & ~(size_t)63;
    size_t mg = tmp.group ? tmp.m / tmp.group : 0;
    size_t group_bytes = pre ? qc_pack_bytes(&tmp, mg, rows) : 0;
    int32_t *zbuf = pre ? cpu_host->host_alloc(ctx->host_ctx, (mg + 1) * sizeof *zbuf, 64) : NULL;
    char *perm = pre && tmp.hwc ? cpu_host->host_alloc(ctx->host_ctx, mg * rows, 64) : NULL;
    if (pre && (zbuf == NULL || (tmp.hwc && perm == NULL))) {
        cpu_host->host_free(ctx->host_ctx, zbuf);
        return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory packing the weights");
    }
    qc_fill fill = {&tmp, wdata, wzdata, zbuf, group_bytes, perm};
    cpu_shared_pack *hold = NULL;
    const char *shared = NULL;
    if (pre) {
        const size_t sources[] = {tmp.iw, tmp.iwz};
        const int64_t params[] = {CPU_SHARE_IGEMM_CONV_W, (int64_t)tmp.m, (int64_t)rows,
                                  (int64_t)tmp.group, tmp.w_signed, tmp.wz_per, tmp.has_wz,
                                  tmp.hwc, tmp.vpack};
        shared = cpu_share_derived(ctx, node, sources, tmp.has_wz ? 2 : 1, params, 9,
                                   tmp.group * group_bytes, qc_fill_run, &fill, &hold);
    }
    qc_kernel *k;
    pl_status *st = shp_kernel_alloc(ctx, node,
                                     head + (shared != NULL ? 0 : tmp.group * group_bytes),
                                     qc_write, (shp_kernel **)&k);
    if (st != NULL) {
        cpu_pack_unshare(ctx, hold);
        cpu_host->host_free(ctx->host_ctx, zbuf);
        cpu_host->host_free(ctx->host_ctx, perm);
        return st;
    }
    shp_kernel base = k->k;
    *k = tmp;
    k->k = base;
    k->k.base.shared_pack = hold;
    if (shared != NULL) {
        k->wpack_pre = shared;
    } else if (pre) {
        char *wp = (char *)k + head;
        fill.k = k;
        qc_fill_run(&fill, wp);
        k->wpack_pre = wp;
    }
    cpu_host->host_free(ctx->host_ctx, zbuf);
    cpu_host->host_free(ctx->host_ctx, perm);
    size_t threads = (size_t)cpu_host->thread_count(ctx->host_ctx);
    size_t slice;
    k->k.base.workspace_bytes = qc_work_bytes(k, threads, &slice);
    *out_kernel = &k->k.base;
    return NULL;
}
