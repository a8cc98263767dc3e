/* opset_signal.c — schemas of ONNX's signal ops (opset 17): the windows
 * HannWindow, HammingWindow and BlackmanWindow, DFT, STFT and
 * MelWeightMatrix. Their output
 * lengths come from scalar inputs (the window size, dft_length,
 * frame_length, frame_step): read here when they are constants, else left
 * unknown for the graph's declared type to fill, and checked by the
 * kernels at run time. */
#include <string.h>

#include "opset_internal.h"

/* The value of scalar integer input I: 1 known (*out), 0 unknown or
 * absent. */
static int sg_known(const pl_infer_ctx *ctx, size_t i, int64_t *out)
{
    const int64_t *v;
    uint64_t mask;
    size_t n;
    if (pl_infer_input(ctx, i) == NULL || !pl_infer_known_ints(ctx, i, &v, &mask, &n) ||
        n != 1 || !(mask & 1))
        return 0;
    *out = v[0];
    return 1;
}

/* Fails unless input I, when present with a known shape, holds one value. */
static pl_status *sg_scalar(pl_infer_ctx *ctx, size_t i, const char *what)
{
    const pl_graph_tensor *t = pl_infer_input(ctx, i);
    size_t n;
    if (t != NULL && t->ndim >= 0 && pl_dims_elements(t->dims, t->ndim, &n) &&
        (n != 1 || t->ndim > 1))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "%s must be a scalar", what);
    return NULL;
}

/* The windows: a vector of the size input's value, of output_datatype. */
static pl_status *sg_infer_window(pl_infer_ctx *ctx)
{
    PL_RETURN_IF_ERROR(sg_scalar(ctx, 0, "size"));
    pl_dtype dt;
    int64_t code = pl_infer_attr_int(ctx, "output_datatype");
    if (!pl_onnx_dtype(code, &dt) || !(pl_dtype_set_of(dt) & PL_TS_NUM))
        return pl_infer_error(ctx, PL_CODE_UNSUPPORTED,
                              "output_datatype %lld is not a numeric dtype this runtime has",
                              (long long)code);
    int64_t size = -1;
    if (sg_known(ctx, 0, &size) && size < 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "size %lld is negative",
                              (long long)size);
    return pl_infer_set_output(ctx, 0, dt, 1, &size, NULL);
}

/* DFT: the input's shape, with the axis resized to the DFT length (half
 * plus one when onesided) and a last dim of 2 (real, imaginary). */
static pl_status *sg_infer_dft(pl_infer_ctx *ctx)
{
    PL_RETURN_IF_ERROR(sg_scalar(ctx, 1, "dft_length"));
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    if (x->ndim < 0)
        return NULL;
    if (x->ndim < 3 || (x->dims[x->ndim - 1] >= 0 && x->dims[x->ndim - 1] != 1 &&
                        x->dims[x->ndim - 1] != 2))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "the input must be [batch, signal..., 1 or 2], rank >= 3");
    int64_t axis = pl_infer_attr_int(ctx, "axis"), a = axis < 0 ? axis + x->ndim : axis;
    if (a < 0 || a >= x->ndim - 1)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "axis %lld is out of range for rank %d (the last dim excluded)",
                              (long long)axis, (int)x->ndim);
    bool onesided = pl_infer_attr_int(ctx, "onesided") != 0;
    /* inverse and onesided: the inverse of a real signal's onesided
     * spectrum (numpy's irfft), a real signal of dft_length values, by
     * default 2 (bins - 1) */
    bool c2r = onesided && pl_infer_attr_int(ctx, "inverse") != 0;
    int64_t n = c2r && x->dims[a] >= 0 ? 2 * (x->dims[a] - 1) : x->dims[a];
    if (pl_infer_input(ctx, 1) != NULL && !sg_known(ctx, 1, &n))
        n = -1;
    if (c2r && n == 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "an inverse onesided DFT of one bin needs dft_length");
    if (pl_infer_input(ctx, 1) != NULL && n == 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "dft_length is 0");
    if (n < -1)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "dft_length %lld is negative",
                              (long long)n);
    int64_t dims[PL_GRAPH_MAX_RANK];
    memcpy(dims, x->dims, (size_t)x->ndim * sizeof *dims);
    dims[a] = n < 0 ? -1 : c2r ? n : onesided ? n / 2 + 1 : n;
    dims[x->ndim - 1] = c2r ? 1 : 2;
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, x->ndim, dims, NULL);
}

/* STFT: [batch, frames, bins, 2] of a signal [batch, length, 1 or 2], or
 * [batch, length]: real, as ONNX Runtime reads it (onnxscript's front ends
 * write that). */
static pl_status *sg_infer_stft(pl_infer_ctx *ctx)
{
    PL_RETURN_IF_ERROR(sg_scalar(ctx, 1, "frame_step"));
    PL_RETURN_IF_ERROR(sg_scalar(ctx, 3, "frame_length"));
    const pl_graph_tensor *x = pl_infer_input(ctx, 0), *w = pl_infer_input(ctx, 2);
    if (x->ndim >= 0 && (x->ndim < 2 || x->ndim > 3 ||
                         (x->ndim == 3 && x->dims[2] >= 0 && x->dims[2] != 1 &&
                          x->dims[2] != 2)))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "the signal must be [batch, length] or [batch, length, 1 or 2]");
    if (w != NULL && w->ndim >= 0 && w->ndim != 1)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "the window must be a vector");
    if (w == NULL && pl_infer_input(ctx, 3) == NULL)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "neither a window nor frame_length is given");
    int64_t fl = w != NULL && w->ndim == 1 ? w->dims[0] : -1, flv, step = -1;
    if (sg_known(ctx, 3, &flv)) {
        if (fl >= 0 && flv != fl)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "frame_length %lld differs from the window's %lld",
                                  (long long)flv, (long long)fl);
        fl = flv;
    }
    if (sg_known(ctx, 1, &step) && step < 1)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "frame_step %lld is below 1",
                              (long long)step);
    if (x->ndim < 0)
        return NULL;
    int64_t len = x->dims[1];
    if (fl == 0 || (fl > 0 && len >= 0 && fl > len))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "frame_length %lld does not fit a signal of %lld", (long long)fl,
                              (long long)len);
    bool onesided = pl_infer_attr_int(ctx, "onesided") != 0;
    int64_t dims[4] = {x->dims[0], -1, -1, 2};
    if (fl > 0 && len >= 0 && step > 0)
        dims[1] = (len - fl) / step + 1;
    if (fl > 0)
        dims[2] = onesided ? fl / 2 + 1 : fl;
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, 4, dims, NULL);
}

/* MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins] of output_datatype. */
static pl_status *sg_infer_mel(pl_infer_ctx *ctx)
{
    for (size_t i = 0; i < 5; i++)
        PL_RETURN_IF_ERROR(sg_scalar(ctx, i, "every input"));
    pl_dtype dt;
    int64_t code = pl_infer_attr_int(ctx, "output_datatype");
    if (!pl_onnx_dtype(code, &dt) || !(pl_dtype_set_of(dt) & PL_TS_NUM))
        return pl_infer_error(ctx, PL_CODE_UNSUPPORTED,
                              "output_datatype %lld is not a numeric dtype this runtime has",
                              (long long)code);
    int64_t bins = -1, dft = -1, dims[2] = {-1, -1};
    if (sg_known(ctx, 0, &bins) && bins < 1)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "num_mel_bins %lld is below 1",
                              (long long)bins);
    if (sg_known(ctx, 1, &dft) && dft < 1)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "dft_length %lld is below 1",
                              (long long)dft);
    dims[0] = dft < 0 ? -1 : dft / 2 + 1;
    dims[1] = bins;
    return pl_infer_set_output(ctx, 0, dt, 2, dims, NULL);
}

static const pl_attr_spec sg_mel_attrs[] = {PL_ATTR_I("output_datatype", 1)};
static const pl_attr_spec sg_window_attrs[] = {PL_ATTR_I("output_datatype", 1),
                                               PL_ATTR_I("periodic", 1)};
static const pl_attr_spec sg_dft_attrs[] = {PL_ATTR_I("axis", 1), PL_ATTR_I("inverse", 0),
                                            PL_ATTR_I("onesided", 0)};
static const pl_attr_spec sg_stft_attrs[] = {PL_ATTR_I("onesided", 1)};

#define SG_WINDOW(op)                                                             \
    {.name = op, .domain = "", .since_version = 17, .min_inputs = 1,              \
     .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .attrs = sg_window_attrs, \
     .n_attrs = PL_COUNT(sg_window_attrs),                                        \
     .types = {{"T1", PL_TS_I32 | PL_TS_I64}, {"T2", PL_TS_NUM}},                 \
     .input_types = {"T1"}, .output_types = {"T2"}, .infer = sg_infer_window}

const pl_op_schema pl_opset_signal_schemas[] = {
    SG_WINDOW("HannWindow"),
    SG_WINDOW("HammingWindow"),
    SG_WINDOW("BlackmanWindow"),
    {.name = "DFT", .domain = "", .since_version = 17, .min_inputs = 1, .max_inputs = 2,
     .min_outputs = 1, .max_outputs = 1, .attrs = sg_dft_attrs,
     .n_attrs = PL_COUNT(sg_dft_attrs),
     .types = {{"T1", PL_TS_FLOAT}, {"T2", PL_TS_I32 | PL_TS_I64}},
     .input_types = {"T1", "T2"}, .output_types = {"T1"}, .infer = sg_infer_dft},
    /* 20: 17's, once opset_lower.c has made the axis input an attribute */
    {.name = "DFT", .domain = "", .since_version = 20, .min_inputs = 1, .max_inputs = 2,
     .min_outputs = 1, .max_outputs = 1, .attrs = sg_dft_attrs,
     .n_attrs = PL_COUNT(sg_dft_attrs),
     .types = {{"T1", PL_TS_FLOAT}, {"T2", PL_TS_I32 | PL_TS_I64}},
     .input_types = {"T1", "T2"}, .output_types = {"T1"}, .infer = sg_infer_dft},
    {.name = "STFT", .domain = "", .since_version = 17, .min_inputs = 2, .max_inputs = 4,
     .min_outputs = 1, .max_outputs = 1, .attrs = sg_stft_attrs,
     .n_attrs = PL_COUNT(sg_stft_attrs),
     .types = {{"T1", PL_TS_FLOAT}, {"T2", PL_TS_I32 | PL_TS_I64}},
     .input_types = {"T1", "T2", "T1", "T2"}, .output_types = {"T1"},
     .infer = sg_infer_stft},
    {.name = "MelWeightMatrix", .domain = "", .since_version = 17, .min_inputs = 5,
     .max_inputs = 5, .min_outputs = 1, .max_outputs = 1, .attrs = sg_mel_attrs,
     .n_attrs = PL_COUNT(sg_mel_attrs),
     .types = {{"T1", PL_TS_I32 | PL_TS_I64}, {"T2", PL_TS_FLOAT}, {"T3", PL_TS_NUM}},
     .input_types = {"T1", "T1", "T1", "T2", "T2"}, .output_types = {"T3"},
     .infer = sg_infer_mel},
};
const size_t pl_opset_signal_count = PL_COUNT(pl_opset_signal_schemas);
