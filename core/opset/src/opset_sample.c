/* opset_sample.c — schemas of ONNX's sampling ops: GridSample (opset 16,
 * 4-D: a [N, C, H, W] input read at a grid [N, H_out, W_out, 2] of
 * normalised coordinates; opset 20 also 5-D, with a grid of 3) and RoiAlign (opsets 10 and 16: average-pooled
 * bilinear samples of regions of interest), and the random generators:
 * RandomNormal and RandomUniform (a shape attribute), RandomNormalLike and
 * RandomUniformLike (the input's shape), Bernoulli (opset 15: 0 or 1 with
 * the input's probabilities) and Multinomial (class indices drawn from
 * unnormalised log-probabilities). Their outputs are not functions of
 * their inputs: folding never computes them (fold.c). */
#include <string.h>

#include "opset_internal.h"

static pl_status *sa_infer_grid_sample(pl_infer_ctx *ctx)
{
    const char *mode = pl_infer_attr_string(ctx, "mode");
    const char *pad = pl_infer_attr_string(ctx, "padding_mode");
    if (strcmp(mode, "bilinear") != 0 && strcmp(mode, "nearest") != 0 &&
        strcmp(mode, "bicubic") != 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "mode '%s' is none of bilinear, nearest, bicubic", mode);
    if (strcmp(pad, "zeros") != 0 && strcmp(pad, "border") != 0 &&
        strcmp(pad, "reflection") != 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "padding_mode '%s' is none of zeros, border, reflection", pad);
    const pl_graph_tensor *x = pl_infer_input(ctx, 0), *g = pl_infer_input(ctx, 1);
    /* 4-D; from opset 20 also 5-D (volumetric: [N, C, D, H, W] at a grid
     * [N, D_out, H_out, W_out, 3]), bicubic excepted */
    int rank = x->ndim >= 0 ? x->ndim : g->ndim;
    bool vol_ok = pl_infer_opset_version(ctx) >= 20 && strcmp(mode, "bicubic") != 0;
    if ((rank >= 0 && rank != 4 && !(rank == 5 && vol_ok)) ||
        (x->ndim >= 0 && g->ndim >= 0 && x->ndim != g->ndim) ||
        (g->ndim >= 3 && g->dims[g->ndim - 1] >= 0 && g->dims[g->ndim - 1] != g->ndim - 2) ||
        (x->ndim >= 1 && g->ndim >= 1 && x->dims[0] >= 0 && g->dims[0] >= 0 &&
         x->dims[0] != g->dims[0]))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "X must be [N, C, H, W] and the grid [N, H_out, W_out, 2] (or, "
                              "from opset 20 and not bicubic, [N, C, D, H, W] and "
                              "[N, D_out, H_out, W_out, 3])");
    if (x->ndim < 0 || g->ndim < 0)
        return NULL;
    int64_t dims[5] = {x->dims[0] >= 0 ? x->dims[0] : g->dims[0], x->dims[1], g->dims[1],
                       g->dims[2], rank == 5 ? g->dims[3] : 0};
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, rank, dims, NULL);
}

static pl_status *sa_infer_roi_align(pl_infer_ctx *ctx)
{
    const char *mode = pl_infer_attr_string(ctx, "mode");
    if (strcmp(mode, "avg") != 0 && strcmp(mode, "max") != 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "mode '%s' is neither avg nor max",
                              mode);
    if (pl_infer_has_attr(ctx, "coordinate_transformation_mode")) {
        const char *c = pl_infer_attr_string(ctx, "coordinate_transformation_mode");
        if (strcmp(c, "half_pixel") != 0 && strcmp(c, "output_half_pixel") != 0)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "coordinate_transformation_mode '%s' is neither half_pixel "
                                  "nor output_half_pixel", c);
    }
    int64_t oh = pl_infer_attr_int(ctx, "output_height");
    int64_t ow = pl_infer_attr_int(ctx, "output_width");
    if (oh < 1 || ow < 1 || pl_infer_attr_int(ctx, "sampling_ratio") < 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "output_height and output_width must be positive, "
                              "sampling_ratio not negative");
    const pl_graph_tensor *x = pl_infer_input(ctx, 0), *r = pl_infer_input(ctx, 1);
    const pl_graph_tensor *b = pl_infer_input(ctx, 2);
    if ((x->ndim >= 0 && x->ndim != 4) || (r->ndim >= 0 && r->ndim != 2) ||
        (r->ndim == 2 && r->dims[1] >= 0 && r->dims[1] != 4) || (b->ndim >= 0 && b->ndim != 1))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "X must be [N, C, H, W], rois [R, 4], batch_indices [R]");
    int64_t dims[4] = {r->ndim == 2 ? r->dims[0] : -1, x->ndim == 4 ? x->dims[1] : -1, oh, ow};
    if (dims[0] < 0 && b->ndim == 1)
        dims[0] = b->dims[0];
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, 4, dims, NULL);
}

/* ---- random generators ---------------------------------------------------------- */

/* The dtype attribute DTYPE of a random op (DEF when absent), which must be
 * one of MASK. */
static pl_status *sa_random_dtype(pl_infer_ctx *ctx, pl_dtype def, uint32_t mask,
                                  const char *what, pl_dtype *out)
{
    *out = def;
    if (pl_infer_has_attr(ctx, "dtype")) {
        int64_t code = pl_infer_attr_int(ctx, "dtype");
        if (!pl_onnx_dtype(code, out))
            return pl_infer_error(ctx, PL_CODE_UNSUPPORTED,
                                  "dtype %lld is not a dtype this runtime has", (long long)code);
    }
    if (out->lanes != 0 && !(pl_dtype_set_of(*out) & mask))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "dtype %s: the output must be %s",
                              pl_dtype_name(*out), what);
    return NULL;
}

/* RandomNormal, RandomUniform: the shape attribute's dims. */
static pl_status *sa_infer_random(pl_infer_ctx *ctx)
{
    pl_dtype dt;
    PL_RETURN_IF_ERROR(sa_random_dtype(ctx, PL_DTYPE_F32, PL_TS_FLOAT, "a float", &dt));
    const int64_t *shape;
    size_t n;
    if (!pl_infer_attr_ints(ctx, "shape", &shape, &n) || n > PL_GRAPH_MAX_RANK)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "the shape attribute is required (at most %d dims)",
                              PL_GRAPH_MAX_RANK);
    for (size_t d = 0; d < n; d++)
        if (shape[d] < 0)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "shape dim %zu is %lld; dims are not negative", d,
                                  (long long)shape[d]);
    return pl_infer_set_output(ctx, 0, dt, (int32_t)n, shape, NULL);
}

/* RandomNormalLike, RandomUniformLike, Bernoulli: the input's shape; the
 * dtype attribute's type, else the input's. */
static pl_status *sa_infer_random_like(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    bool bern = strcmp(pl_infer_node(ctx)->op, "Bernoulli") == 0;
    pl_dtype dt;
    PL_RETURN_IF_ERROR(sa_random_dtype(ctx, x->dtype,
                                       bern ? PL_TS_NUM | PL_TS_BOOL : PL_TS_FLOAT,
                                       bern ? "a number or bool" : "a float (set dtype when "
                                                                   "the input is not one)",
                                       &dt));
    return pl_infer_set_output(ctx, 0, dt, x->ndim, x->dims,
                               (const char *const *)x->dim_params);
}

/* Multinomial: [batch, sample_size] class indices, i32 unless dtype says
 * i64, from [batch, classes]. */
static pl_status *sa_infer_multinomial(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    pl_dtype dt;
    PL_RETURN_IF_ERROR(sa_random_dtype(ctx, PL_DTYPE_I32, PL_TS_I32 | PL_TS_I64, "i32 or i64",
                                       &dt));
    int64_t n = pl_infer_attr_int(ctx, "sample_size");
    if (n < 1)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "sample_size %lld; at least 1",
                              (long long)n);
    if (x->ndim >= 0 && x->ndim != 2)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "the input must be [batch, classes]");
    int64_t dims[2] = {x->ndim == 2 ? x->dims[0] : -1, n};
    return pl_infer_set_output(ctx, 0, dt, 2, dims, NULL);
}

static const pl_attr_spec sa_normal_attrs[] = {
    PL_ATTR_I("dtype", 1), PL_ATTR_F("mean", 0.0), PL_ATTR_F("scale", 1.0),
    {.name = "seed", .kind = PL_ATTR_FLOAT}, PL_ATTR_REQ("shape", PL_ATTR_INTS)};
static const pl_attr_spec sa_uniform_attrs[] = {
    PL_ATTR_I("dtype", 1), PL_ATTR_F("high", 1.0), PL_ATTR_F("low", 0.0),
    {.name = "seed", .kind = PL_ATTR_FLOAT}, PL_ATTR_REQ("shape", PL_ATTR_INTS)};
static const pl_attr_spec sa_normal_like_attrs[] = {
    {.name = "dtype", .kind = PL_ATTR_INT}, PL_ATTR_F("mean", 0.0), PL_ATTR_F("scale", 1.0),
    {.name = "seed", .kind = PL_ATTR_FLOAT}};
static const pl_attr_spec sa_uniform_like_attrs[] = {
    {.name = "dtype", .kind = PL_ATTR_INT}, PL_ATTR_F("high", 1.0), PL_ATTR_F("low", 0.0),
    {.name = "seed", .kind = PL_ATTR_FLOAT}};
static const pl_attr_spec sa_bernoulli_attrs[] = {{.name = "dtype", .kind = PL_ATTR_INT},
                                                  {.name = "seed", .kind = PL_ATTR_FLOAT}};
static const pl_attr_spec sa_multinomial_attrs[] = {
    PL_ATTR_I("dtype", 6), PL_ATTR_I("sample_size", 1), {.name = "seed", .kind = PL_ATTR_FLOAT}};

static const pl_attr_spec sa_grid_attrs[] = {PL_ATTR_I("align_corners", 0),
                                             PL_ATTR_S("mode", "bilinear"),
                                             PL_ATTR_S("padding_mode", "zeros")};
static const pl_attr_spec sa_roi10_attrs[] = {
    PL_ATTR_S("mode", "avg"), PL_ATTR_I("output_height", 1), PL_ATTR_I("output_width", 1),
    PL_ATTR_I("sampling_ratio", 0), PL_ATTR_F("spatial_scale", 1.0)};
static const pl_attr_spec sa_roi16_attrs[] = {
    PL_ATTR_S("coordinate_transformation_mode", "half_pixel"), PL_ATTR_S("mode", "avg"),
    PL_ATTR_I("output_height", 1), PL_ATTR_I("output_width", 1),
    PL_ATTR_I("sampling_ratio", 0), PL_ATTR_F("spatial_scale", 1.0)};

#define SA_ROI(since, attr_table)                                                 \
    {.name = "RoiAlign", .domain = "", .since_version = since, .min_inputs = 3,   \
     .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .attrs = attr_table,    \
     .n_attrs = PL_COUNT(attr_table),                                             \
     .types = {{"T1", PL_TS_FLOAT}, {"T2", PL_TS_I64}},                           \
     .input_types = {"T1", "T1", "T2"}, .output_types = {"T1"},                   \
     .infer = sa_infer_roi_align}

const pl_op_schema pl_opset_sample_schemas[] = {
#define SA_GRID(since)                                                                 \
    {.name = "GridSample", .domain = "", .since_version = since, .min_inputs = 2,       \
     .max_inputs = 2, .min_outputs = 1, .max_outputs = 1, .attrs = sa_grid_attrs,        \
     .n_attrs = PL_COUNT(sa_grid_attrs),                                                 \
     .types = {{"T1", PL_TS_ALL}, {"T2", PL_TS_FLOAT}}, .input_types = {"T1", "T2"},     \
     .output_types = {"T1"}, .infer = sa_infer_grid_sample}
    SA_GRID(16),
    /* 20 renamed the modes (linear, cubic) and allowed N-D: opset_lower.c
     * gives 16's names, and refuses ranks other than 4 and 5. */
    SA_GRID(20),
    SA_ROI(10, sa_roi10_attrs),
    SA_ROI(16, sa_roi16_attrs),
#define SA_RANDOM(op, since, in, attr_table, fn, t1, t2)                               \
    {.name = op, .domain = "", .since_version = since, .min_inputs = in,                \
     .max_inputs = in, .min_outputs = 1, .max_outputs = 1, .attrs = attr_table,         \
     .n_attrs = PL_COUNT(attr_table), .types = {{"T1", t1}, {"T2", t2}},                \
     .input_types = {"T1"}, .output_types = {"T2"}, .infer = fn}
    SA_RANDOM("RandomNormal", 1, 0, sa_normal_attrs, sa_infer_random, PL_TS_FLOAT,
              PL_TS_FLOAT),
    SA_RANDOM("RandomUniform", 1, 0, sa_uniform_attrs, sa_infer_random, PL_TS_FLOAT,
              PL_TS_FLOAT),
    SA_RANDOM("RandomNormalLike", 1, 1, sa_normal_like_attrs, sa_infer_random_like, PL_TS_ALL,
              PL_TS_FLOAT),
    SA_RANDOM("RandomUniformLike", 1, 1, sa_uniform_like_attrs, sa_infer_random_like,
              PL_TS_ALL, PL_TS_FLOAT),
    SA_RANDOM("Bernoulli", 15, 1, sa_bernoulli_attrs, sa_infer_random_like, PL_TS_FLOAT,
              PL_TS_NUM | PL_TS_BOOL),
    SA_RANDOM("Multinomial", 7, 1, sa_multinomial_attrs, sa_infer_multinomial, PL_TS_FLOAT,
              PL_TS_I32 | PL_TS_I64),
};
const size_t pl_opset_sample_count = PL_COUNT(pl_opset_sample_schemas);
