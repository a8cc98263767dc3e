/* sample.c — the cpu module's sampling family: GridSample (4-D, the
 * bilinear, nearest and bicubic modes with zeros, border and reflection
 * padding, as PyTorch's grid_sample defines them, which ONNX follows; 5-D
 * (opset 20) trilinear and nearest) and
 * RoiAlign (average mode, as ONNX Runtime computes it: bilinear samples
 * on a grid per output bin). Computed in double. */
#include <math.h>
#include <string.h>

#include "index_kernel.h"

static pl_status *sa_build_grid_sample(pl_module_ctx *ctx, const pl_node_desc *node,
                                       pl_kernel **out_kernel);
static pl_status *sa_build_roi_align(pl_module_ctx *ctx, const pl_node_desc *node,
                                     pl_kernel **out_kernel);

const cpu_op_entry cpu_ops_sample[] = {
    {"GridSample", sa_build_grid_sample, 2, 2, 0, CPU_OP_ANY_DTYPE},
    {"RoiAlign", sa_build_roi_align, 3, 3, 0, CPU_OP_ANY_DTYPE},
    {NULL, NULL, 0, 0, 0, 0},
};

static bool sa_is_float(pl_dtype dt)
{
    return PL_DTYPE_EQ(dt, PL_DTYPE_F32) || PL_DTYPE_EQ(dt, PL_DTYPE_F64) ||
           PL_DTYPE_EQ(dt, PL_DTYPE_F16) || PL_DTYPE_EQ(dt, PL_DTYPE_BF16);
}

/* ---- GridSample ------------------------------------------------------------------ */

typedef enum sa_mode { SA_BILINEAR, SA_NEAREST, SA_BICUBIC } sa_mode;
typedef enum sa_pad { SA_ZEROS, SA_BORDER, SA_REFLECTION } sa_pad;

typedef struct sa_grid_kernel {
    shp_kernel k;
    size_t n, c, d, h, w, od, oh, ow; /* d and od 1 for a 4-D input */
    bool volumetric;                  /* 5-D: a grid of (x, y, z) */
    sa_mode mode;
    sa_pad pad;
    bool align;
    pl_dtype dt, grid_dt;
} sa_grid_kernel;

/* Reflects X into [twice_low / 2, twice_high / 2] (PyTorch's
 * reflect_coordinates). */
static double sa_reflect(double x, double twice_low, double twice_high)
{
    if (twice_low == twice_high)
        return 0;
    double lo = twice_low / 2, span = (twice_high - twice_low) / 2;
    x = fabs(x - lo);
    double extra = fmod(x, span);
    double flips = floor(x / span);
    return fmod(flips, 2) == 0 ? extra + lo : span - extra + lo;
}

/* A coordinate under the padding mode (border and reflection keep it in
 * [0, size - 1]; zeros leaves it). */
static double sa_pad_coord(const sa_grid_kernel *k, double x, size_t size)
{
    if (k->pad == SA_ZEROS)
        return x;
    if (k->pad == SA_REFLECTION)
        x = k->align ? sa_reflect(x, 0, 2.0 * ((double)size - 1))
                     : sa_reflect(x, -1, 2.0 * (double)size - 1);
    double hi = (double)size - 1;
    return x < 0 ? 0 : x > hi ? hi : x;
}

/* The normalised G in [-1, 1] as a pixel coordinate of a dim of SIZE. */
static double sa_unnormalize(const sa_grid_kernel *k, double g, size_t size)
{
    return k->align ? (g + 1) / 2 * ((double)size - 1) : ((g + 1) * (double)size - 1) / 2;
}

/* Pixel (y, x) of plane P (H x W doubles), 0 outside. */
static double sa_pixel(const sa_grid_kernel *k, const double *p, int64_t y, int64_t x)
{
    if (y < 0 || x < 0 || y >= (int64_t)k->h || x >= (int64_t)k->w)
        return 0;
    return p[(size_t)y * k->w + (size_t)x];
}

/* Voxel (z, y, x) of volume P (D x H x W doubles), 0 outside. */
static double sa_voxel(const sa_grid_kernel *k, const double *p, int64_t z, int64_t y, int64_t x)
{
    if (z < 0 || z >= (int64_t)k->d)
        return 0;
    return sa_pixel(k, p + (size_t)z * k->h * k->w, y, x);
}

/* The value of volume P at grid point (GX, GY, GZ): trilinear or nearest,
 * each coordinate through the padding as in 2-D (PyTorch's 5-D
 * grid_sample). */
static double sa_sample3(const sa_grid_kernel *k, const double *p, double gx, double gy,
                         double gz)
{
    double x = sa_pad_coord(k, sa_unnormalize(k, gx, k->w), k->w);
    double y = sa_pad_coord(k, sa_unnormalize(k, gy, k->h), k->h);
    double z = sa_pad_coord(k, sa_unnormalize(k, gz, k->d), k->d);
    if (k->mode == SA_NEAREST)
        return sa_voxel(k, p, (int64_t)nearbyint(z), (int64_t)nearbyint(y),
                        (int64_t)nearbyint(x));
    double x0 = floor(x), y0 = floor(y), z0 = floor(z);
    double t[3] = {x - x0, y - y0, z - z0}, v = 0;
    for (int c = 0; c < 8; c++) {
        int bx = c & 1, by = (c >> 1) & 1, bz = c >> 2;
        double wgt = (bx ? t[0] : 1 - t[0]) * (by ? t[1] : 1 - t[1]) * (bz ? t[2] : 1 - t[2]);
        v += wgt * sa_voxel(k, p, (int64_t)z0 + bz, (int64_t)y0 + by, (int64_t)x0 + bx);
    }
    return v;
}

/* A bicubic tap: its coordinates go through the padding first. */
static double sa_tap(const sa_grid_kernel *k, const double *p, double y, double x)
{
    y = sa_pad_coord(k, y, k->h);
    x = sa_pad_coord(k, x, k->w);
    return sa_pixel(k, p, (int64_t)floor(y), (int64_t)floor(x));
}

static void sa_cubic_coeffs(double t, double *c)
{
    const double a = -0.75;
    double x1 = t + 1, x2 = t, x3 = 1 - t, x4 = 2 - t;
    c[0] = ((a * x1 - 5 * a) * x1 + 8 * a) * x1 - 4 * a;
    c[1] = ((a + 2) * x2 - (a + 3)) * x2 * x2 + 1;
    c[2] = ((a + 2) * x3 - (a + 3)) * x3 * x3 + 1;
    c[3] = ((a * x4 - 5 * a) * x4 + 8 * a) * x4 - 4 * a;
}

/* The value of plane P at grid point (GX, GY). */
static double sa_sample(const sa_grid_kernel *k, const double *p, double gx, double gy)
{
    double x = sa_unnormalize(k, gx, k->w), y = sa_unnormalize(k, gy, k->h);
    if (k->mode == SA_BICUBIC) {
        double x0 = floor(x), y0 = floor(y), cx[4], cy[4], v = 0;
        sa_cubic_coeffs(x - x0, cx);
        sa_cubic_coeffs(y - y0, cy);
        for (int i = 0; i < 4; i++) {
            double row = 0;
            for (int j = 0; j < 4; j++)
                row += cx[j] * sa_tap(k, p, y0 - 1 + i, x0 - 1 + j);
            v += cy[i] * row;
        }
        return v;
    }
    x = sa_pad_coord(k, x, k->w);
    y = sa_pad_coord(k, y, k->h);
    if (k->mode == SA_NEAREST)
        return sa_pixel(k, p, (int64_t)nearbyint(y), (int64_t)nearbyint(x));
    double x0 = floor(x), y0 = floor(y), tx = x - x0, ty = y - y0;
    int64_t xi = (int64_t)x0, yi = (int64_t)y0;
    return (1 - ty) * ((1 - tx) * sa_pixel(k, p, yi, xi) + tx * sa_pixel(k, p, yi, xi + 1)) +
           ty * ((1 - tx) * sa_pixel(k, p, yi + 1, xi) + tx * sa_pixel(k, p, yi + 1, xi + 1));
}

/* The f32 path of 4-D bilinear and nearest sampling: the taps of a block
 * of output points (offsets into the plane and their weights; a tap
 * outside the plane has weight 0 at offset 0) are computed once, in
 * double as the generic path computes them, and serve every channel of
 * the block's batch entry; the sums are in f32, as ONNX Runtime and
 * PyTorch compute them. RT-DETR's deformable attention (8 heads of 32
 * channels, 1,200 points) took 3.8 ms a GridSample in the generic path. */
#define SA_FAST_POINTS 256

typedef struct sa_fast_tap {
    int32_t at[4]; /* -1: outside the plane (a tap of 0, whatever the plane holds) */
    float w[4];
} sa_fast_tap;

typedef struct sa_fast_call {
    const sa_grid_kernel *k;
    const float *x, *g;
    float *dst;
    size_t blocks, cgroups, cb; /* point blocks per batch entry; channel groups of CB */
} sa_fast_call;

/* Plane offset of (Y, X), or -1 outside the plane (or not a number). */
static int32_t sa_fast_at(const sa_grid_kernel *k, double y, double x)
{
    if (!(y >= 0 && x >= 0 && y < (double)k->h && x < (double)k->w))
        return -1;
    return (int32_t)((size_t)y * k->w + (size_t)x);
}

/* The taps of grid point (GX, GY) (sa_sample's arithmetic). */
static sa_fast_tap sa_fast_taps(const sa_grid_kernel *k, double gx, double gy)
{
    sa_fast_tap t = {{-1, -1, -1, -1}, {0, 0, 0, 0}};
    double x = sa_pad_coord(k, sa_unnormalize(k, gx, k->w), k->w);
    double y = sa_pad_coord(k, sa_unnormalize(k, gy, k->h), k->h);
    if (k->mode == SA_NEAREST) {
        t.at[0] = sa_fast_at(k, nearbyint(y), nearbyint(x));
        t.w[0] = 1;
        return t;
    }
    double x0 = floor(x), y0 = floor(y), tx = x - x0, ty = y - y0;
    double w[4] = {(1 - ty) * (1 - tx), (1 - ty) * tx, ty * (1 - tx), ty * tx};
    for (int i = 0; i < 4; i++) {
        t.at[i] = sa_fast_at(k, y0 + (i >> 1), x0 + (i & 1));
        t.w[i] = (float)w[i];
    }
    return t;
}

static void sa_fast_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const sa_fast_call *c = arg;
    const sa_grid_kernel *k = c->k;
    size_t plane = k->h * k->w, out = k->oh * k->ow;
    sa_fast_tap taps[SA_FAST_POINTS];
    for (size_t item = begin; item < end; item++) {
        size_t cg = item % c->cgroups, rest = item / c->cgroups;
        size_t n = rest / c->blocks, i0 = rest % c->blocks * SA_FAST_POINTS;
        size_t pts = out - i0 < SA_FAST_POINTS ? out - i0 : SA_FAST_POINTS;
        const float *g = c->g + (n * out + i0) * 2;
        for (size_t i = 0; i < pts; i++)
            taps[i] = sa_fast_taps(k, g[2 * i], g[2 * i + 1]);
        size_t c0 = cg * c->cb, c1 = c0 + c->cb < k->c ? c0 + c->cb : k->c;
        for (size_t ch = c0; ch < c1; ch++) {
            const float *p = c->x + (n * k->c + ch) * plane;
            float *y = c->dst + (n * k->c + ch) * out + i0;
            if (k->mode == SA_NEAREST) {
                for (size_t i = 0; i < pts; i++)
                    y[i] = taps[i].at[0] >= 0 ? p[taps[i].at[0]] : 0.0f;
                continue;
            }
            for (size_t i = 0; i < pts; i++) {
                const sa_fast_tap *t = &taps[i];
                if ((t->at[0] | t->at[1] | t->at[2] | t->at[3]) >= 0) {
                    y[i] = (t->w[0] * p[t->at[0]] + t->w[1] * p[t->at[1]]) +
                           (t->w[2] * p[t->at[2]] + t->w[3] * p[t->at[3]]);
                    continue;
                }
                float v = 0;
                for (int j = 0; j < 4; j++)
                    v += t->at[j] >= 0 ? t->w[j] * p[t->at[j]] : 0.0f;
                y[i] = v;
            }
        }
    }
}

/* Whether the f32 path takes K. */
static bool sa_fast(const sa_grid_kernel *k)
{
    return !k->volumetric && k->mode != SA_BICUBIC && PL_DTYPE_EQ(k->dt, PL_DTYPE_F32) &&
           PL_DTYPE_EQ(k->grid_dt, PL_DTYPE_F32) && k->h * k->w > 0 &&
           k->h * k->w < ((size_t)1 << 31);
}

static void sa_fast_run(pl_module_ctx *ctx, const sa_grid_kernel *k, const float *x,
                        const float *g, float *dst)
{
    size_t out = k->oh * k->ow;
    sa_fast_call c = {k, x, g, dst, (out + SA_FAST_POINTS - 1) / SA_FAST_POINTS, 1, k->c};
    /* too few blocks to share among the threads: channels split too */
    size_t items = k->n * c.blocks, want = 8 * (size_t)cpu_host->thread_count(ctx->host_ctx);
    if (items > 0 && items < want && k->c > 1) {
        c.cgroups = (want + items - 1) / items;
        c.cgroups = c.cgroups < k->c ? c.cgroups : k->c;
        c.cb = (k->c + c.cgroups - 1) / c.cgroups;
        c.cgroups = (k->c + c.cb - 1) / c.cb;
    }
    cpu_host->parallel_for(ctx->host_ctx, items * c.cgroups, 1, sa_fast_chunk, &c);
}

static pl_status *sa_grid_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                                const pl_run_args *args, size_t o, void *dst,
                                pl_output_request req)
{
    (void)o, (void)req;
    const sa_grid_kernel *k = (const sa_grid_kernel *)kernel;
    const char *x = shp_in(args, 0), *g = shp_in(args, 1);
    if (sa_fast(k)) {
        sa_fast_run(ctx, k, (const float *)(const void *)x, (const float *)(const void *)g, dst);
        return NULL;
    }
    size_t plane = k->d * k->h * k->w, out = k->od * k->oh * k->ow, gd = k->volumetric ? 3 : 2;
    double *p = cpu_host->host_alloc(ctx->host_ctx, (plane ? plane : 1) * sizeof *p, 0);
    if (p == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, kernel->base.op, "out of memory");
    size_t es = pl_dtype_size(k->dt);
    for (size_t n = 0; n < k->n; n++)
        for (size_t c = 0; c < k->c; c++) {
            shp_convert(k->dt, x + (n * k->c + c) * plane * es, PL_DTYPE_F64, p, plane);
            for (size_t i = 0; i < out; i++) {
                size_t gi = (n * out + i) * gd;
                double gx = ix_load(k->grid_dt, g, gi), gy = ix_load(k->grid_dt, g, gi + 1);
                double v = k->volumetric ? sa_sample3(k, p, gx, gy, ix_load(k->grid_dt, g, gi + 2))
                                         : sa_sample(k, p, gx, gy);
                ix_store(k->dt, dst, (n * k->c + c) * out + i, v);
            }
        }
    cpu_host->host_free(ctx->host_ctx, p);
    return NULL;
}

static pl_status *sa_build_grid_sample(pl_module_ctx *ctx, const pl_node_desc *node,
                                       pl_kernel **out_kernel)
{
    const char *op = node->op;
    const pl_tensor *x = &node->inputs[0], *g = &node->inputs[1], *o = &node->outputs[0];
    char mode[16], pad[16];
    int64_t align;
    SHP_TRY(shp_attr_string(node, "mode", "bilinear", mode, sizeof mode));
    SHP_TRY(shp_attr_string(node, "padding_mode", "zeros", pad, sizeof pad));
    SHP_TRY(cpu_attr_int(node, "align_corners", 0, &align));
    SHP_TRY(shp_same_dtype(node));
    if (PL_DTYPE_EQ(x->dtype, PL_DTYPE_BOOL) || !sa_is_float(g->dtype))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "X must be numeric and the grid floating point");
    int r = x->ndim;
    bool ok = (r == 4 || r == 5) && g->ndim == r && o->ndim == r && g->shape[r - 1] == r - 2 &&
              g->shape[0] == x->shape[0] && o->shape[0] == x->shape[0] &&
              o->shape[1] == x->shape[1];
    for (int d = 2; ok && d < r; d++)
        ok = o->shape[d] == g->shape[d - 1];
    if (!ok)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "X [N, C, (D,) H, W], grid [N, (D_out,) H_out, W_out, 2 (3)] and output "
                         "do not fit");
    sa_mode m = strcmp(mode, "nearest") == 0 ? SA_NEAREST
              : strcmp(mode, "bicubic") == 0 ? SA_BICUBIC : SA_BILINEAR;
    sa_pad p = strcmp(pad, "border") == 0 ? SA_BORDER
             : strcmp(pad, "reflection") == 0 ? SA_REFLECTION : SA_ZEROS;
    if ((m == SA_BILINEAR && strcmp(mode, "bilinear") != 0) ||
        (p == SA_ZEROS && strcmp(pad, "zeros") != 0))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "mode '%s' or padding_mode '%s' unknown",
                         mode, pad);
    if (r == 5 && m == SA_BICUBIC)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "bicubic mode on a 5-D input");
    sa_grid_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, sa_grid_write, (shp_kernel **)&k));
    k->volumetric = r == 5;
    k->n = (size_t)x->shape[0];
    k->c = (size_t)x->shape[1];
    k->d = r == 5 ? (size_t)x->shape[2] : 1;
    k->h = (size_t)x->shape[r - 2];
    k->w = (size_t)x->shape[r - 1];
    k->od = r == 5 ? (size_t)o->shape[2] : 1;
    k->oh = (size_t)o->shape[r - 2];
    k->ow = (size_t)o->shape[r - 1];
    k->mode = m;
    k->pad = p;
    k->align = align != 0;
    k->dt = x->dtype;
    k->grid_dt = g->dtype;
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- RoiAlign ------------------------------------------------------------------- */

typedef struct sa_roi_kernel {
    shp_kernel k;
    size_t n, c, h, w, rois, oh, ow;
    int64_t sampling;
    double scale;
    bool half_pixel;
    pl_dtype dt;
} sa_roi_kernel;

/* One bilinear sample of a plane: four element offsets and their weights
 * (all 0 well outside), the same for every channel of a roi. */
typedef struct sa_tap4 {
    size_t at[4];
    double w[4];
    bool inside;  /* false: the sample is 0, whatever the plane holds */
} sa_tap4;

/* The sample at (Y, X) of an H x W plane (ONNX Runtime's RoiAlign). */
static sa_tap4 sa_roi_tap(const sa_roi_kernel *k, double y, double x)
{
    sa_tap4 t = {{0, 0, 0, 0}, {0, 0, 0, 0}, false};
    double h = (double)k->h, w = (double)k->w;
    if (y < -1.0 || y > h || x < -1.0 || x > w)
        return t;
    y = y <= 0 ? 0 : y;
    x = x <= 0 ? 0 : x;
    size_t yl = (size_t)y, xl = (size_t)x, yh, xh;
    if (yl >= k->h - 1) {
        yh = yl = k->h - 1;
        y = (double)yl;
    } else {
        yh = yl + 1;
    }
    if (xl >= k->w - 1) {
        xh = xl = k->w - 1;
        x = (double)xl;
    } else {
        xh = xl + 1;
    }
    double ly = y - (double)yl, lx = x - (double)xl, hy = 1 - ly, hx = 1 - lx;
    t = (sa_tap4){{yl * k->w + xl, yl * k->w + xh, yh * k->w + xl, yh * k->w + xh},
                  {hy * hx, hy * lx, ly * hx, ly * lx}, true};
    return t;
}

/* One run's RoiAlign, split over rois. */
typedef struct sa_roi_call {
    const sa_roi_kernel *k;
    const char *x, *rois, *bi;
    char *dst;
    pl_module_ctx *ctx;
    bool failed;  /* out of memory in a chunk */
} sa_roi_call;

/* The taps of roi R into *OUT (grown as needed; *CAP of them), their count
 * per bin in *OUT_PER. */
static bool sa_roi_taps(const sa_roi_call *c, size_t r, sa_tap4 **out, size_t *cap,
                        size_t *out_per)
{
    const sa_roi_kernel *k = c->k;
    double off = k->half_pixel ? 0.5 : 0.0;
    double x1 = ix_load(k->dt, c->rois, r * 4) * k->scale - off;
    double y1 = ix_load(k->dt, c->rois, r * 4 + 1) * k->scale - off;
    double x2 = ix_load(k->dt, c->rois, r * 4 + 2) * k->scale - off;
    double y2 = ix_load(k->dt, c->rois, r * 4 + 3) * k->scale - off;
    double rw = x2 - x1, rh = y2 - y1;
    if (!k->half_pixel) {
        rw = rw > 1 ? rw : 1;
        rh = rh > 1 ? rh : 1;
    }
    double bh = rh / (double)k->oh, bw = rw / (double)k->ow;
    int64_t gh = k->sampling > 0 ? k->sampling : (int64_t)ceil(rh / (double)k->oh);
    int64_t gw = k->sampling > 0 ? k->sampling : (int64_t)ceil(rw / (double)k->ow);
    size_t per = (size_t)(gh > 0 ? gh : 0) * (size_t)(gw > 0 ? gw : 0);
    size_t need = k->oh * k->ow * (per ? per : 1);
    if (need > *cap) {
        cpu_host->host_free(c->ctx->host_ctx, *out);
        *out = cpu_host->host_alloc(c->ctx->host_ctx, need * sizeof **out, 0);
        *cap = *out ? need : 0;
        if (*out == NULL)
            return false;
    }
    sa_tap4 *t = *out;
    for (size_t ph = 0; ph < k->oh; ph++)
        for (size_t pw = 0; pw < k->ow; pw++)
            for (int64_t iy = 0; iy < gh; iy++)
                for (int64_t ixx = 0; ixx < gw; ixx++) {
                    double yy = y1 + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
                    double xx = x1 + (double)pw * bw + ((double)ixx + 0.5) * bw / (double)gw;
                    *t++ = sa_roi_tap(k, yy, xx);
                }
    *out_per = per;
    return true;
}

static void sa_roi_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    sa_roi_call *c = arg;
    const sa_roi_kernel *k = c->k;
    size_t plane = k->h * k->w, es = pl_dtype_size(k->dt), cap = 0, per = 0;
    bool f32 = PL_DTYPE_EQ(k->dt, PL_DTYPE_F32);
    double *p = NULL;
    sa_tap4 *taps = NULL;
    if (!f32 && (p = cpu_host->host_alloc(c->ctx->host_ctx, plane * sizeof *p, 0)) == NULL) {
        c->failed = true;
        return;
    }
    for (size_t r = begin; r < end && !c->failed; r++) {
        if (!sa_roi_taps(c, r, &taps, &cap, &per)) {
            c->failed = true;
            break;
        }
        double count = (double)(per > 1 ? per : 1);
        size_t b = (size_t)ix_index_at(c->bi, true, r);
        for (size_t ch = 0; ch < k->c; ch++) {
            const char *src = c->x + (b * k->c + ch) * plane * es;
            const float *pf = (const float *)(const void *)src;
            if (!f32)
                shp_convert(k->dt, src, PL_DTYPE_F64, p, plane);
            const sa_tap4 *t = taps;
            for (size_t bin = 0; bin < k->oh * k->ow; bin++) {
                double sum = 0;
                for (size_t s = 0; s < per; s++, t++)
                    sum += !t->inside ? 0.0
                           : f32 ? t->w[0] * (double)pf[t->at[0]] + t->w[1] * (double)pf[t->at[1]] +
                                     t->w[2] * (double)pf[t->at[2]] +
                                     t->w[3] * (double)pf[t->at[3]]
                               : t->w[0] * p[t->at[0]] + t->w[1] * p[t->at[1]] +
                                     t->w[2] * p[t->at[2]] + t->w[3] * p[t->at[3]];
                ix_store(k->dt, c->dst, (r * k->c + ch) * k->oh * k->ow + bin, sum / count);
            }
        }
    }
    cpu_host->host_free(c->ctx->host_ctx, taps);
    cpu_host->host_free(c->ctx->host_ctx, p);
}

static pl_status *sa_roi_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                               const pl_run_args *args, size_t o, void *dst,
                               pl_output_request req)
{
    (void)o, (void)req;
    const sa_roi_kernel *k = (const sa_roi_kernel *)kernel;
    sa_roi_call c = {k, shp_in(args, 0), shp_in(args, 1), shp_in(args, 2), dst, ctx, false};
    for (size_t r = 0; r < k->rois; r++) {
        int64_t b = ix_index_at(c.bi, true, r);
        if (b < 0 || (uint64_t)b >= k->n)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->base.op,
                             "batch index %lld (roi %zu) is out of range for a batch of %zu",
                             (long long)b, r, k->n);
    }
    /* the taps of a roi serve its channels: rois split among the workers */
    cpu_host->parallel_for(ctx->host_ctx, k->rois, 1, sa_roi_chunk, &c);
    if (c.failed)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, kernel->base.op, "out of memory");
    return NULL;
}

static pl_status *sa_build_roi_align(pl_module_ctx *ctx, const pl_node_desc *node,
                                     pl_kernel **out_kernel)
{
    const char *op = node->op;
    const pl_tensor *x = &node->inputs[0], *r = &node->inputs[1], *b = &node->inputs[2];
    const pl_tensor *o = &node->outputs[0];
    char mode[8], ctm[24];
    int64_t oh, ow, sampling;
    double scale;
    SHP_TRY(shp_attr_string(node, "mode", "avg", mode, sizeof mode));
    SHP_TRY(shp_attr_string(node, "coordinate_transformation_mode",
                            shp_opset(node) >= 16 ? "half_pixel" : "output_half_pixel", ctm,
                            sizeof ctm));
    SHP_TRY(cpu_attr_int(node, "output_height", 1, &oh));
    SHP_TRY(cpu_attr_int(node, "output_width", 1, &ow));
    SHP_TRY(cpu_attr_int(node, "sampling_ratio", 0, &sampling));
    SHP_TRY(cpu_attr_float(node, "spatial_scale", 1.0, &scale));
    if (strcmp(mode, "avg") != 0)
        return cpu_error(PL_CODE_UNSUPPORTED, op,
                         "mode '%s' (only avg: ONNX leaves max ambiguous, runtimes differ)", mode);
    SHP_TRY(shp_same_dtype(node));
    if (!sa_is_float(x->dtype) || !PL_DTYPE_EQ(r->dtype, x->dtype) ||
        !PL_DTYPE_EQ(b->dtype, PL_DTYPE_I64))
        return cpu_error(PL_CODE_UNSUPPORTED, op,
                         "X and rois must be floating point of one dtype, batch_indices i64");
    bool ok = x->ndim == 4 && r->ndim == 2 && r->shape[1] == 4 && b->ndim == 1 &&
              b->shape[0] == r->shape[0] && o->ndim == 4 && o->shape[0] == r->shape[0] &&
              o->shape[1] == x->shape[1] && o->shape[2] == oh && o->shape[3] == ow &&
              x->shape[2] > 0 && x->shape[3] > 0 && sampling >= 0;
    if (!ok)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "X [N, C, H, W], rois [R, 4], batch_indices [R] and output "
                         "[R, C, output_height, output_width] do not fit");
    sa_roi_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, sa_roi_write, (shp_kernel **)&k));
    k->n = (size_t)x->shape[0];
    k->c = (size_t)x->shape[1];
    k->h = (size_t)x->shape[2];
    k->w = (size_t)x->shape[3];
    k->rois = (size_t)r->shape[0];
    k->oh = (size_t)oh;
    k->ow = (size_t)ow;
    k->sampling = sampling;
    k->scale = scale;
    k->half_pixel = strcmp(ctm, "half_pixel") == 0;
    k->dt = x->dtype;
    *out_kernel = &k->k.base;
    return NULL;
}
