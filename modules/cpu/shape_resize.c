/* shape_resize.c — the cpu module's Resize kernel on f32 data: mode
 * nearest (every nearest_mode), mode linear (bilinear on NCHW, and linear
 * over up to three resized axes of any rank) and mode cubic (bicubic with
 * cubic_coeff_a and exclude_outside, over up to two resized axes: taps
 * outside the input read its edge, or with exclude_outside weigh 0 and the
 * others are renormalised, as ONNX's reference), with the coordinate
 * transformations half_pixel, pytorch_half_pixel, align_corners,
 * asymmetric, tf_half_pixel_for_nn, half_pixel_symmetric (19; the
 * lowering leaves it only where it is not half_pixel) and
 * tf_crop_and_resize (roi a constant; outputs that read outside the
 * input take extrapolation_value); Resize 18's antialias on linear and
 * cubic downsampling (the filter widened by 1 / scale and normalised, as
 * ONNX's reference: the axes resampled one after the other). Scales (a
 * constant) or sizes give
 * the factor of each axis; opset 10 has scales only and works as the
 * Upsample it replaced, which runs here too (opset 7: scales an attribute;
 * 9: an input): asymmetric coordinates, nearest rounding down.
 *
 * get_kernel computes, for every output index of every axis, the input
 * indices it reads and the weight of the second; a run then walks output
 * rows, combining the corners of the resized outer axes with the last
 * axis's table. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shape_kernel.h"

/* Most axes linear and cubic modes interpolate at once (2^3 corners, 4^2
 * taps), and the most input rows an output row combines. */
#define SHP_LINEAR_AXES 3
#define SHP_CUBIC_AXES 2
#define SHP_MAX_TAPS 4
#define SHP_MAX_COMBOS 16

typedef enum shp_coord {
    SHP_HALF_PIXEL, SHP_PYTORCH_HALF_PIXEL, SHP_ALIGN_CORNERS, SHP_ASYMMETRIC, SHP_TF_HALF_PIXEL,
    SHP_HALF_PIXEL_SYMMETRIC, SHP_TF_CROP
} shp_coord;

/* tf_crop_and_resize's region of an axis, in [0, 1] of the input's extent:
 * output 0 reads start x (in - 1), the last reads end x (in - 1). */
typedef struct shp_roi {
    double start, end;
} shp_roi;

typedef enum shp_nearest { SHP_PREFER_FLOOR, SHP_PREFER_CEIL, SHP_FLOOR, SHP_CEIL } shp_nearest;

/* Output index -> the input indices it reads and their weights: the
 * kernel's taps (nearest 1, linear 2, cubic 4) on a resized axis, one
 * (weight 1) on an axis that is not; unused taps repeat the first index
 * with weight 0. */
typedef struct shp_resize_entry {
    int32_t i[SHP_MAX_TAPS]; /* an index along one axis */
    float w[SHP_MAX_TAPS];
    int32_t outside;         /* tf_crop_and_resize: reads outside the input,
                                the output is extrapolation_value */
} shp_resize_entry;

typedef struct shp_resize_kernel {
    shp_kernel k;
    int rank;
    int taps;                 /* 1 nearest, 2 linear, 4 cubic */
    size_t esize;             /* element bytes: any dtype in nearest mode, f32 else */
    int axis_taps[CPU_MAX_RANK]; /* taps, or 1 on an axis that is not resized */
    int64_t o_dims[CPU_MAX_RANK];
    int64_t x_stride[CPU_MAX_RANK];
    shp_resize_entry *table[CPU_MAX_RANK];
    bool extrapolate;         /* some entry is outside (f32 data) */
    float extrapolation;
} shp_resize_kernel;

/* tf_crop_and_resize: the elements of output row ROW (of COLS, at Y) that
 * read outside the input take the extrapolation value: all of them when an
 * outer axis's entry is outside. */
static void shp_resize_extrapolate(const shp_resize_kernel *k, size_t row, float *y, int64_t cols)
{
    const int last = k->rank - 1;
    size_t rest = row;
    bool all = false;
    for (int d = last - 1; d >= 0 && !all; d--) {
        all = k->table[d][rest % (size_t)k->o_dims[d]].outside != 0;
        rest /= (size_t)k->o_dims[d];
    }
    const shp_resize_entry *tl = k->table[last];
    for (int64_t j = 0; j < cols; j++)
        if (all || tl[j].outside)
            y[j] = k->extrapolation;
}

typedef struct shp_resize_call {
    const shp_resize_kernel *k;
    const float *x;
    float *y;
} shp_resize_call;

static void shp_resize_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const shp_resize_call *c = arg;
    const shp_resize_kernel *k = c->k;
    const int last = k->rank - 1;
    const int64_t cols = k->o_dims[last];
    const shp_resize_entry *tl = k->table[last];
    for (size_t row = begin; row < end; row++) {
        float *y = c->y + row * (size_t)cols;
        if (k->taps == 1) {
            /* nearest: a copy of elements of any size */
            size_t rest = row;
            int64_t at = 0;
            for (int d = last - 1; d >= 0; d--) {
                at += k->table[d][rest % (size_t)k->o_dims[d]].i[0] * k->x_stride[d];
                rest /= (size_t)k->o_dims[d];
            }
            const size_t es = k->esize;
            const char *x = (const char *)(const void *)c->x + (size_t)at * es;
            char *yb = (char *)(void *)c->y + row * (size_t)cols * es;
            if (es == 4)
                for (int64_t j = 0; j < cols; j++)
                    memcpy(yb + (size_t)j * 4, x + (size_t)tl[j].i[0] * 4, 4);
            else if (es == 1)
                for (int64_t j = 0; j < cols; j++)
                    yb[j] = x[tl[j].i[0]];
            else
                for (int64_t j = 0; j < cols; j++)
                    memcpy(yb + (size_t)j * es, x + (size_t)tl[j].i[0] * es, es);
            if (k->extrapolate)
                shp_resize_extrapolate(k, row, y, cols);
            continue;
        }
        /* The input rows this output row combines: every choice of a tap
         * on each outer axis, with the product of their weights. */
        int64_t off[SHP_MAX_COMBOS];
        float w[SHP_MAX_COMBOS];
        off[0] = 0;
        w[0] = 1.0f;
        int n = 1;
        size_t rest = row;
        for (int d = last - 1; d >= 0; d--) {
            const shp_resize_entry *e = &k->table[d][rest % (size_t)k->o_dims[d]];
            rest /= (size_t)k->o_dims[d];
            const int taps = k->axis_taps[d];
            for (int t = taps - 1; t >= 0; t--)
                for (int p = 0; p < n; p++) {
                    off[t * n + p] = off[p] + e->i[t] * k->x_stride[d];
                    w[t * n + p] = w[p] * e->w[t];
                }
            n *= taps;
        }
        /* The last axis, with the kernel's tap count fixed (an entry with
         * fewer repeats its index with weight 0). */
        if (k->taps == 2) {
            for (int64_t j = 0; j < cols; j++) {
                const shp_resize_entry *e = &tl[j];
                float acc = 0.0f;
                for (int p = 0; p < n; p++) {
                    const float *x = c->x + off[p];
                    acc += w[p] * (e->w[0] * x[e->i[0]] + e->w[1] * x[e->i[1]]);
                }
                y[j] = acc;
            }
            if (k->extrapolate)
                shp_resize_extrapolate(k, row, y, cols);
            continue;
        }
        for (int64_t j = 0; j < cols; j++) {
            const shp_resize_entry *e = &tl[j];
            float acc = 0.0f;
            for (int p = 0; p < n; p++) {
                const float *x = c->x + off[p];
                acc += w[p] * ((e->w[0] * x[e->i[0]] + e->w[1] * x[e->i[1]]) +
                               (e->w[2] * x[e->i[2]] + e->w[3] * x[e->i[3]]));
            }
            y[j] = acc;
        }
        if (k->extrapolate)
            shp_resize_extrapolate(k, row, y, cols);
    }
}

static pl_status *shp_resize_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                                   const pl_run_args *args, size_t o, void *dst,
                                   pl_output_request req)
{
    (void)o, (void)req;
    const shp_resize_kernel *k = (const shp_resize_kernel *)kernel;
    shp_resize_call c = {.k = k, .x = (const float *)(const void *)shp_in(args, 0), .y = dst};
    if (k->rank == 0) {
        memcpy(dst, c.x, k->esize);
        return NULL;
    }
    int64_t cols = k->o_dims[k->rank - 1];
    size_t rows = kernel->base.out_elements / (size_t)cols;
    size_t grain = 16384 / (size_t)cols + 1;
    cpu_host->parallel_for(ctx->host_ctx, rows, grain, shp_resize_chunk, &c);
    return NULL;
}

/* The input coordinate of output index I on an axis of IN -> OUT with
 * SCALE (and ROI, for tf_crop_and_resize). */
static double shp_coordinate_roi(shp_coord mode, int64_t i, int64_t in, int64_t out, double scale,
                                 shp_roi roi)
{
    switch (mode) {
    case SHP_HALF_PIXEL_SYMMETRIC: {
        /* half_pixel about the centre of an output of scale x in, of which
         * OUT (whole) elements are kept: ONNX's reference */
        double offset = (double)in / 2 * (1 - (double)out / (scale * (double)in));
        return offset + ((double)i + 0.5) / scale - 0.5;
    }
    case SHP_TF_CROP:
        return out > 1 ? roi.start * (double)(in - 1) +
                             (double)i * (roi.end - roi.start) * (double)(in - 1) /
                                 (double)(out - 1)
                       : 0.5 * (roi.start + roi.end) * (double)(in - 1);
    default:
        break;
    }
    switch (mode) {
    case SHP_HALF_PIXEL:
        return ((double)i + 0.5) / scale - 0.5;
    case SHP_PYTORCH_HALF_PIXEL:
        return out > 1 ? ((double)i + 0.5) / scale - 0.5 : 0.0;
    case SHP_ALIGN_CORNERS:
        return out == 1 ? 0.0 : (double)i * (double)(in - 1) / (double)(out - 1);
    case SHP_TF_HALF_PIXEL:
        return ((double)i + 0.5) / scale;
    default:
        return (double)i / scale;
    }
}

static double shp_coordinate(shp_coord mode, int64_t i, int64_t in, int64_t out, double scale)
{
    return shp_coordinate_roi(mode, i, in, out, scale, (shp_roi){0.0, 1.0});
}

static int64_t shp_clamp(int64_t v, int64_t n)
{
    return v < 0 ? 0 : v >= n ? n - 1 : v;
}

static int64_t shp_nearest_index(shp_nearest mode, double x)
{
    switch (mode) {
    case SHP_PREFER_FLOOR:
        return (int64_t)ceil(x - 0.5);
    case SHP_PREFER_CEIL:
        return (int64_t)floor(x + 0.5);
    case SHP_FLOOR:
        return (int64_t)floor(x);
    default:
        return (int64_t)ceil(x);
    }
}

/* Reads the attributes into the modes; a refusal names what is not
 * supported. */
static pl_status *shp_resize_modes(const pl_node_desc *node, int *taps, shp_coord *coord,
                                   shp_nearest *nearest)
{
    const char *op = node->op;
    char s[48];
    SHP_TRY(shp_attr_string(node, "mode", "nearest", s, sizeof s));
    if (strcmp(s, "nearest") != 0 && strcmp(s, "linear") != 0 &&
        !(strcmp(s, "cubic") == 0 && shp_opset(node) >= 11))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "mode '%s' (nearest, linear or cubic)", s);
    *taps = s[0] == 'n' ? 1 : s[0] == 'l' ? 2 : 4;
    *coord = SHP_ASYMMETRIC;
    *nearest = SHP_FLOOR;
    if (shp_opset(node) < 11)
        return NULL;
    SHP_TRY(shp_attr_string(node, "coordinate_transformation_mode", "half_pixel", s,
                                       sizeof s));
    static const struct {
        const char *name;
        shp_coord mode;
    } coords[] = {{"half_pixel", SHP_HALF_PIXEL}, {"pytorch_half_pixel", SHP_PYTORCH_HALF_PIXEL},
                  {"align_corners", SHP_ALIGN_CORNERS}, {"asymmetric", SHP_ASYMMETRIC},
                  {"tf_half_pixel_for_nn", SHP_TF_HALF_PIXEL},
                  {"half_pixel_symmetric", SHP_HALF_PIXEL_SYMMETRIC},
                  {"tf_crop_and_resize", SHP_TF_CROP}};
    size_t i = 0;
    while (i < sizeof coords / sizeof coords[0] && strcmp(coords[i].name, s) != 0)
        i++;
    if (i == sizeof coords / sizeof coords[0])
        return cpu_error(PL_CODE_UNSUPPORTED, op, "coordinate_transformation_mode '%s'", s);
    *coord = coords[i].mode;
    SHP_TRY(shp_attr_string(node, "nearest_mode", "round_prefer_floor", s, sizeof s));
    static const struct {
        const char *name;
        shp_nearest mode;
    } nearests[] = {{"round_prefer_floor", SHP_PREFER_FLOOR}, {"round_prefer_ceil", SHP_PREFER_CEIL},
                    {"floor", SHP_FLOOR}, {"ceil", SHP_CEIL}};
    for (i = 0; i < sizeof nearests / sizeof nearests[0]; i++)
        if (strcmp(nearests[i].name, s) == 0)
            break;
    if (i == sizeof nearests / sizeof nearests[0])
        return cpu_error(PL_CODE_UNSUPPORTED, op, "nearest_mode '%s'", s);
    *nearest = nearests[i].mode;
    return NULL;
}

/* The scale of every axis: the constant scales input when given (not
 * empty), else output size / input size. */
static pl_status *shp_resize_scales(const pl_node_desc *node, double *scales)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    size_t at = shp_opset(node) < 11 ? 1 : 2;
    if (shp_input_present(node, at) && cpu_elements(node->inputs[at].shape,
                                                    node->inputs[at].ndim) > 0) {
        const pl_tensor *s = &node->inputs[at];
        size_t n = cpu_elements(s->shape, s->ndim), bytes;
        const void *data = shp_constant(node, at, &bytes);
        if (data == NULL)
            return cpu_error(PL_CODE_UNSUPPORTED, node->op,
                             "scales is not a constant: it must be known when the kernel is "
                             "made");
        if (!PL_DTYPE_EQ(s->dtype, PL_DTYPE_F32) || n != (size_t)x->ndim || bytes < n * 4)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "scales is not %d f32 values", x->ndim);
        for (size_t d = 0; d < n; d++) {
            float f;
            memcpy(&f, (const char *)data + d * 4, 4);
            if (!(f > 0.0f))
                return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                                 "scale %g on axis %zu is not positive", (double)f, d);
            scales[d] = f;
        }
        return NULL;
    }
    const double *attr;
    size_t n_attr;
    SHP_TRY(cpu_attr_floats(node, "scales", &attr, &n_attr)); /* Upsample 7 */
    if (n_attr > 0 && n_attr != (size_t)x->ndim)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "scales has %zu values for rank %d",
                         n_attr, x->ndim);
    for (int d = 0; d < x->ndim; d++)
        scales[d] = n_attr > 0      ? attr[d]
                    : x->shape[d] > 0 ? (double)o->shape[d] / (double)x->shape[d]
                                      : 1.0;
    return NULL;
}

/* The four taps of cubic interpolation at X0 + T (X0 = floor): inputs
 * X0 - 1 .. X0 + 2 with Keys' weights for coefficient A. A tap outside
 * [0, IN) reads the edge, or with EXCLUDE weighs 0 and the rest are
 * scaled to sum to 1. */
static void shp_cubic_entry(shp_resize_entry *e, int64_t x0, double t, int64_t in, double a,
                            bool exclude)
{
    double s = t + 1, u = 1 - t, v = 2 - t;
    double w[4] = {((a * s - 5 * a) * s + 8 * a) * s - 4 * a,
                   ((a + 2) * t - (a + 3)) * t * t + 1,
                   ((a + 2) * u - (a + 3)) * u * u + 1,
                   ((a * v - 5 * a) * v + 8 * a) * v - 4 * a};
    double sum = 0;
    for (int k = 0; k < 4; k++) {
        int64_t i = x0 - 1 + k;
        if (exclude && (i < 0 || i >= in))
            w[k] = 0;
        sum += w[k];
    }
    for (int k = 0; k < 4; k++) {
        e->i[k] = (int32_t)shp_clamp(x0 - 1 + k, in);
        e->w[k] = (float)(exclude && sum != 0 ? w[k] / sum : w[k]);
    }
}

/* ---- antialias (Resize 18) ------------------------------------------------- */

/* A downsampling linear or cubic Resize with antialias = 1 widens its
 * filter by 1 / scale (ONNX's reference): an output reads a variable
 * number of inputs, so the axes are resampled one after the other, each
 * pass a table of N taps per output index. */
typedef struct shp_aa_axis {
    int axis;
    int64_t in, out;
    int32_t n;             /* taps per output index */
    int32_t *idx;          /* out x n */
    float *w;
} shp_aa_axis;

typedef struct shp_aa_kernel {
    shp_kernel k;
    int rank, n_axes;
    int64_t x_dims[CPU_MAX_RANK];
    shp_aa_axis ax[CPU_MAX_RANK];
    size_t most;           /* the largest intermediate, in elements */
} shp_aa_kernel;

typedef struct shp_aa_call {
    const shp_aa_axis *a;
    const float *x;
    float *y;
    size_t inner;
} shp_aa_call;

static void shp_aa_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const shp_aa_call *c = arg;
    const shp_aa_axis *a = c->a;
    const size_t inner = c->inner;
    for (size_t row = begin; row < end; row++) {
        size_t o = row / (size_t)a->out, j = row % (size_t)a->out;
        const float *x = c->x + o * (size_t)a->in * inner;
        float *y = c->y + row * inner;
        const int32_t *idx = a->idx + j * (size_t)a->n;
        const float *w = a->w + j * (size_t)a->n;
        for (size_t i = 0; i < inner; i++)
            y[i] = 0.0f;
        for (int32_t t = 0; t < a->n; t++) {
            if (w[t] == 0.0f)
                continue;
            const float *xr = x + (size_t)idx[t] * inner;
            for (size_t i = 0; i < inner; i++)
                y[i] += w[t] * xr[i];
        }
    }
}

static pl_status *shp_aa_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                               const pl_run_args *args, size_t o, void *dst,
                               pl_output_request req)
{
    (void)o, (void)req;
    const shp_aa_kernel *k = (const shp_aa_kernel *)kernel;
    float *tmp[2] = {NULL, NULL};
    if (k->n_axes > 1 && (tmp[0] = malloc(k->most * sizeof(float))) == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, "Resize", "out of memory");
    if (k->n_axes > 2 && (tmp[1] = malloc(k->most * sizeof(float))) == NULL) {
        free(tmp[0]);
        return cpu_error(PL_CODE_OUT_OF_MEMORY, "Resize", "out of memory");
    }
    int64_t dims[CPU_MAX_RANK];
    memcpy(dims, k->x_dims, sizeof dims);
    const float *cur = (const float *)(const void *)shp_in(args, 0);
    for (int p = 0; p < k->n_axes; p++) {
        const shp_aa_axis *a = &k->ax[p];
        size_t outer = 1, inner = 1;
        for (int d = 0; d < a->axis; d++)
            outer *= (size_t)dims[d];
        for (int d = a->axis + 1; d < k->rank; d++)
            inner *= (size_t)dims[d];
        float *y = p == k->n_axes - 1 ? dst : tmp[p % 2];
        shp_aa_call c = {.a = a, .x = cur, .y = y, .inner = inner};
        size_t rows = outer * (size_t)a->out;
        cpu_host->parallel_for(ctx->host_ctx, rows, 16384 / (inner * (size_t)a->n + 1) + 1,
                               shp_aa_chunk, &c);
        dims[a->axis] = a->out;
        cur = y;
    }
    free(tmp[0]);
    free(tmp[1]);
    return NULL;
}

/* Keys' cubic kernel with coefficient A at X. */
static double shp_cubic_w(double x, double a)
{
    x = fabs(x);
    if (x <= 1)
        return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2)
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return 0;
}

/* The taps of output index I on axis A (IN -> OUT at SCALE). */
static void shp_aa_taps(const shp_aa_axis *a, int64_t i, shp_coord coord, double scale, int taps,
                        double cubic_a, bool exclude, int32_t *idx, float *w)
{
    double c = shp_coordinate(coord, i, a->in, a->out, scale);
    double f = floor(c), ratio = c - f;
    double ws[1024];
    int64_t start;
    int32_t n = a->n;
    bool wide = scale < 1.0;
    if (!wide) {
        start = taps == 2 ? 0 : -1;
        for (int32_t t = 0; t < n; t++)
            ws[t] = taps == 2 ? (t == 0 ? 1.0 - ratio : ratio)
                              : shp_cubic_w((double)(start + t) - ratio, cubic_a);
    } else {
        start = taps == 2 ? (int64_t)floor(-1.0 / scale) + 1 : (int64_t)floor(-2.0 / scale) + 1;
        for (int32_t t = 0; t < n; t++) {
            double arg = ((double)(start + t) - ratio) * scale;
            ws[t] = taps == 2 ? fmax(0.0, 1.0 - fabs(arg)) : shp_cubic_w(arg, cubic_a);
        }
    }
    double sum = 0;
    for (int32_t t = 0; t < n; t++) {
        int64_t j = (int64_t)f + start + t;
        if (exclude && (j < 0 || j >= a->in))
            ws[t] = 0;
        sum += ws[t];
        idx[t] = (int32_t)shp_clamp(j, a->in);
    }
    /* widened filters are normalised (ONNX's reference), as are cubic ones
     * that excluded taps outside */
    bool norm = (wide || exclude) && sum != 0;
    for (int32_t t = 0; t < n; t++)
        w[t] = (float)(norm ? ws[t] / sum : ws[t]);
}

/* The antialiased kernel for the axes that change (SCALES of each). */
static pl_status *shp_build_resize_aa(pl_module_ctx *ctx, const pl_node_desc *node,
                                      const double *scales, int taps, shp_coord coord,
                                      double cubic_a, bool exclude, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    const int r = x->ndim;
    int32_t n[CPU_MAX_RANK] = {0};
    size_t table = 0, most = 1;
    for (int d = 0; d < r; d++) {
        if (x->shape[d] == o->shape[d] && scales[d] == 1.0)
            continue;
        if (scales[d] < 1.0) {
            int64_t start = taps == 2 ? (int64_t)floor(-1.0 / scales[d]) + 1
                                      : (int64_t)floor(-2.0 / scales[d]) + 1;
            int64_t count = 2 - 2 * start;
            if (count > 1024)
                return cpu_error(PL_CODE_UNSUPPORTED, node->op,
                                 "antialias at scale %g on axis %d: a filter of %lld taps "
                                 "(at most 1024)",
                                 scales[d], d, (long long)count);
            n[d] = (int32_t)count;
        } else {
            n[d] = taps;
        }
        table += (size_t)o->shape[d] * (size_t)n[d] * (sizeof(int32_t) + sizeof(float));
    }
    /* intermediates: the input with the axes done so far resized */
    int64_t dims[CPU_MAX_RANK];
    memcpy(dims, x->shape, (size_t)r * sizeof *dims);
    for (int d = 0; d < r; d++) {
        if (n[d] == 0)
            continue;
        dims[d] = o->shape[d];
        size_t e = 1;
        for (int q = 0; q < r; q++)
            e *= (size_t)dims[q];
        most = e > most ? e : most;
    }
    shp_aa_kernel *k;
    size_t head = (sizeof *k + 15) & ~(size_t)15;
    SHP_TRY(shp_kernel_alloc(ctx, node, head + table, shp_aa_write, (shp_kernel **)&k));
    char *at = (char *)k + head;
    k->rank = r;
    k->most = most;
    memcpy(k->x_dims, x->shape, (size_t)r * sizeof *k->x_dims);
    for (int d = 0; d < r; d++) {
        if (n[d] == 0)
            continue;
        shp_aa_axis *a = &k->ax[k->n_axes++];
        a->axis = d;
        a->in = x->shape[d];
        a->out = o->shape[d];
        a->n = n[d];
        a->idx = (int32_t *)(void *)at;
        at += (size_t)a->out * (size_t)a->n * sizeof(int32_t);
        a->w = (float *)(void *)at;
        at += (size_t)a->out * (size_t)a->n * sizeof(float);
        for (int64_t i = 0; i < a->out; i++)
            shp_aa_taps(a, i, coord, scales[d], taps, cubic_a, exclude,
                        a->idx + i * a->n, a->w + i * a->n);
    }
    k->k.base.n_reads = 1;
    *out_kernel = &k->k.base;
    return NULL;
}

pl_status *shp_build_resize(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    const char *op = node->op;
    const int r = x->ndim;
    if (o->ndim != r)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "the output's rank %d is not the input's %d",
                         o->ndim, r);
    int taps = 1;
    shp_coord coord = SHP_ASYMMETRIC;
    shp_nearest nearest = SHP_FLOOR;
    SHP_TRY(shp_resize_modes(node, &taps, &coord, &nearest));
    /* Nearest copies elements, of any dtype (QOperator models resize their
     * u8 tensors); linear and cubic compute in f32. */
    size_t esize = x->dtype.bits / 8;
    if (!PL_DTYPE_EQ(x->dtype, o->dtype) || x->dtype.lanes != 1 || esize == 0 ||
        x->dtype.bits % 8 != 0 || (taps > 1 && !PL_DTYPE_EQ(x->dtype, PL_DTYPE_F32)))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "unsupported dtype: %s",
                         taps > 1 ? "linear and cubic modes take f32 data only"
                                  : "the output's dtype must be the input's");
    double scales[CPU_MAX_RANK];
    SHP_TRY(shp_resize_scales(node, scales));
    double cubic_a = -0.75;
    int64_t exclude_outside = 0;
    if (taps == 4)
        SHP_TRY(cpu_attr_float(node, "cubic_coeff_a", -0.75, &cubic_a));
    /* (linear's two taps clamped at the edge weigh as excluded ones
     * renormalised; antialias's wider filter differs) */
    if (taps > 1 && shp_opset(node) >= 11)
        SHP_TRY(cpu_attr_int(node, "exclude_outside", 0, &exclude_outside));
    int64_t antialias = 0;
    if (shp_opset(node) >= 18)
        SHP_TRY(cpu_attr_int(node, "antialias", 0, &antialias));
    bool down = false;
    for (int d = 0; d < r; d++)
        down |= scales[d] < 1.0 && (x->shape[d] != o->shape[d] || scales[d] != 1.0);
    shp_roi roi[CPU_MAX_RANK];
    double extrapolation = 0.0;
    for (int d = 0; d < r; d++)
        roi[d] = (shp_roi){0.0, 1.0};
    if (coord == SHP_TF_CROP) {
        if (antialias != 0)
            return cpu_error(PL_CODE_UNSUPPORTED, op, "antialias with tf_crop_and_resize");
        if (!PL_DTYPE_EQ(x->dtype, PL_DTYPE_F32))
            return cpu_error(PL_CODE_UNSUPPORTED, op,
                             "unsupported dtype: tf_crop_and_resize takes f32 data only");
        SHP_TRY(cpu_attr_float(node, "extrapolation_value", 0.0, &extrapolation));
        const pl_tensor *rt = node->n_inputs > 1 ? &node->inputs[1] : NULL;
        size_t bytes = 0;
        const void *data = rt != NULL && shp_input_present(node, 1)
                               ? shp_constant(node, 1, &bytes) : NULL;
        bool f64 = rt != NULL && PL_DTYPE_EQ(rt->dtype, PL_DTYPE_F64);
        size_t es = f64 ? 8 : 4;
        if (data == NULL || !(f64 || PL_DTYPE_EQ(rt->dtype, PL_DTYPE_F32)) ||
            cpu_elements(rt->shape, rt->ndim) != (size_t)(2 * r) || bytes < (size_t)(2 * r) * es)
            return cpu_error(PL_CODE_UNSUPPORTED, op,
                             "tf_crop_and_resize needs roi as a constant of %d f32 or f64 values",
                             2 * r);
        for (int d = 0; d < r; d++) {
            double v[2];
            for (int b = 0; b < 2; b++) {
                const char *p = (const char *)data + (size_t)(d + b * r) * es;
                if (f64) {
                    memcpy(&v[b], p, 8);
                } else {
                    float f;
                    memcpy(&f, p, 4);
                    v[b] = f;
                }
            }
            roi[d] = (shp_roi){v[0], v[1]};
        }
    }
    if (antialias != 0 && taps > 1 && down && r > 0)
        return shp_build_resize_aa(ctx, node, scales, taps, coord, cubic_a,
                                   exclude_outside != 0, out_kernel);
    size_t entries = 0;
    int resized = 0;
    for (int d = 0; d < r; d++) {
        entries += (size_t)o->shape[d];
        if (x->shape[d] == 0 && o->shape[d] > 0)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "axis %d of the input is empty", d);
        if (x->shape[d] > INT32_MAX)
            return cpu_error(PL_CODE_UNSUPPORTED, op, "axis %d has %lld elements (at most 2^31 "
                             "- 1 along one axis)", d, (long long)x->shape[d]);
        resized += x->shape[d] != o->shape[d] || scales[d] != 1.0;
    }
    int most = taps == 2 ? SHP_LINEAR_AXES : SHP_CUBIC_AXES;
    if (taps > 1 && resized > most)
        return cpu_error(PL_CODE_UNSUPPORTED, op, "%s mode over %d resized axes (at most %d)",
                         taps == 2 ? "linear" : "cubic", resized, most);
    shp_resize_kernel *k;
    size_t head = (sizeof *k + 15) & ~(size_t)15;
    SHP_TRY(shp_kernel_alloc(ctx, node, head + entries * sizeof(shp_resize_entry),
                                        shp_resize_write, (shp_kernel **)&k));
    /* The tables sit between the kernel and the outputs' descriptions. */
    shp_resize_entry *e = (shp_resize_entry *)(void *)((char *)k + head);
    k->rank = r;
    k->taps = taps;
    k->esize = esize;
    k->extrapolation = (float)extrapolation;
    int64_t step = 1;
    for (int d = r - 1; d >= 0; d--) {
        k->x_stride[d] = step;
        step *= x->shape[d];
    }
    for (int d = 0; d < r; d++) {
        int64_t in = x->shape[d], out = o->shape[d];
        k->o_dims[d] = out;
        k->table[d] = e;
        bool same = in == out && scales[d] == 1.0 &&
                    (coord != SHP_TF_CROP || (roi[d].start == 0.0 && roi[d].end == 1.0));
        k->axis_taps[d] = same ? 1 : taps;
        for (int64_t i = 0; i < out; i++, e++) {
            memset(e, 0, sizeof *e);
            e->w[0] = 1.0f;
            double c = same ? (double)i : shp_coordinate_roi(coord, i, in, out, scales[d], roi[d]);
            if (coord == SHP_TF_CROP && (c < 0 || c > (double)(in - 1))) {
                e->outside = 1;
                k->extrapolate = true;
            }
            if (same || taps == 1) {
                int64_t j = same ? i : shp_clamp(shp_nearest_index(nearest, c), in);
                for (int t = 0; t < SHP_MAX_TAPS; t++)
                    e->i[t] = (int32_t)j;
                continue;
            }
            double f = floor(c), t = c - f;
            if (taps == 2) {
                e->i[0] = (int32_t)shp_clamp((int64_t)f, in);
                e->i[1] = (int32_t)shp_clamp((int64_t)f + 1, in);
                e->w[1] = (float)t;
                e->w[0] = 1.0f - e->w[1];
                continue;
            }
            shp_cubic_entry(e, (int64_t)f, t, in, cubic_a, exclude_outside != 0);
        }
    }
    k->k.base.n_reads = 1;
    *out_kernel = &k->k.base;
    return NULL;
}
