/* opset_history.c — what ai.onnx changed after opset 17, so that a graph
 * importing a newer opset runs on the schemas that describe it or is
 * refused, never run on an older op's semantics.
 *
 * pl_opset_find picks, for a node of ai.onnx opset V, the schema with the
 * newest since_version not above V. That is right when the versions after
 * it only admit more types (opset 22 gave bfloat16 to some forty ops; 19,
 * 21, 23, 24 and 25 gave float8, int4, float4 and int2 to Cast, Reshape,
 * Shape, ...: a tensor of such a type is refused by the dtype check), and
 * wrong when a version changed what the op computes or reads: an attribute
 * or input added (Resize 18's antialias, Pad 18's axes), an attribute value
 * allowed (Pad 19's 'wrap', Resize 19's 'half_pixel_symmetric'), a meaning
 * changed (GroupNormalization 21's per-channel scale). This table lists
 * those versions, one row per (op, version), read off ONNX's schemas and
 * change log for opsets 18 to PL_OPSET_NEWEST. A schema older than a change
 * that applies at V does not describe the node, and the find fails with
 * the version that changed it (pl_opset_changed_after), so the error says
 * which ONNX change Plinth lacks. Ops that are new after 17 need no row:
 * without a schema they are refused anyway. */
#include <string.h>

#include "opset_internal.h"

typedef struct pl_onnx_change {
    const char *op;
    int64_t version;
} pl_onnx_change;

/* Sorted by op, then version. */
static const pl_onnx_change pl_onnx_changes[] = {
    {"Attention", 24},          /* input nonpad_kv_seqlen */
    {"Attention", 25},          /* left/right_window_size */
    {"AveragePool", 19},        /* dilations */
    {"Cast", 19},               /* saturate (float8 targets) */
    {"Cast", 24},               /* round_mode (float8e8m0 targets) */
    {"CastLike", 19},
    {"CastLike", 24},
    {"DFT", 20},                /* axis becomes an input (lowered) */
    {"DequantizeLinear", 21},   /* block_size: blocked quantisation (lowered) */
    {"DequantizeLinear", 23},   /* output_dtype */
    {"GridSample", 20},         /* modes renamed, N-D */
    {"GroupNormalization", 21}, /* scale and bias per channel, stash_type */
    {"LpPool", 18},             /* dilations, ceil_mode */
    {"Mod", 28},                /* fmod = 0 defined for floats */
    {"OptionalHasElement", 18}, /* input optional */
    {"Pad", 18},                /* input axes */
    {"Pad", 19},                /* mode 'wrap' */
    {"QuantizeLinear", 19},     /* saturate */
    {"QuantizeLinear", 21},     /* block_size, output_dtype */
    {"QuantizeLinear", 23},     /* precision */
    {"Range", 27},              /* stash_type (float16, bfloat16) */
    {"ReduceL1", 18},           /* axes becomes an input, noop_with_empty_axes */
    {"ReduceL2", 18},
    {"ReduceLogSum", 18},
    {"ReduceLogSumExp", 18},
    {"ReduceMax", 18},
    {"ReduceMean", 18},
    {"ReduceMin", 18},
    {"ReduceProd", 18},
    {"ReduceSumSquare", 18},
    {"Resize", 18},             /* antialias, axes, keep_aspect_ratio_policy */
    {"Resize", 19},             /* coordinate mode 'half_pixel_symmetric' */
    {"ScatterElements", 18},    /* reduction 'max' and 'min' */
    {"ScatterND", 18},
    {"SpaceToDepth", 28},       /* mode (CRD: the cpu kernel reads it) */
    {"Split", 18},              /* num_outputs */
};

int64_t pl_opset_changed_after(const char *op, int64_t since, int64_t version)
{
    int64_t newest = 0;
    for (size_t i = 0; i < PL_COUNT(pl_onnx_changes); i++) {
        const pl_onnx_change *c = &pl_onnx_changes[i];
        if (c->version > since && c->version <= version && strcmp(c->op, op) == 0)
            newest = c->version;
    }
    return newest;
}
