/* opset_lower.c — ops of ai.onnx opsets 18 and later in the form the
 * schemas and the modules' kernels take.
 *
 * Two kinds of rewrite, applied to each node as the inference driver
 * reaches it (opset.c), when the types of its inputs are known:
 *
 * - Ops ONNX defines as functions of older ops are expanded into those
 *   ops, as ONNX's function bodies do, so that every backend (an
 *   out-of-tree one included) runs them with the kernels it has, and the
 *   onednn module's matchers fuse the chains back (GELU into its gelu_erf
 *   or gelu_tanh, x * sigmoid(x) into swish):
 *     Gelu 20               x * 0.5 * (1 + erf(x / sqrt 2)), or the tanh form
 *     Mish 18               x * tanh(softplus(x))
 *     Swish 24              x * sigmoid(alpha * x)
 *     RMSNormalization 23   x / sqrt(mean(x^2 over axis..) + eps) * scale
 *     Attention 23          scaled dot-product attention (see lw_attention)
 *     RotaryEmbedding 23    RoPE by halves or interleaved pairs
 *     CenterCropPad 18      Pad (zeros, centred) then a centred Slice
 *     AffineGrid 20         a constant base grid times theta^T (constant
 *                           size only)
 *     GroupNormalization 18 and 21
 *                           reshape to [N, G, -1], InstanceNormalization,
 *                           reshape back, * scale + bias per channel (18
 *                           gives scale and bias per group: constants are
 *                           repeated per channel, computed ones refused)
 *     NonZero 9, Compress 9 (from opset 10: TopK with K as an input)
 *                           the count of nonzero elements (ReduceSum of
 *                           a bool Cast) and TopK of the 0/1 values with
 *                           K = that count: the positions ascending, whose
 *                           number a staged session (stage.c) binds
 *     Unique 11             ai.plinth UniquePadded (buffers of the most
 *                           there can be, and their number) and Slices
 *     NonMaxSuppression 10  ai.plinth NonMaxSuppressionPadded (the
 *                           selection in rows of the most it can hold,
 *                           and their count) and a Slice of count rows
 *   Float16 and bfloat16 inputs are computed in float32 between two Casts
 *   (the functions' stash_type, 1 by default, asks as much of the
 *   normalizations). The node itself becomes the last op of its chain, so
 *   its name and output stay.
 *
 * - Attributes newer versions added are checked and, at their defaults,
 *   removed or given the older spelling, so that kernels written against
 *   the older version read the node right; a value Plinth cannot run is
 *   refused with the node and the value: Resize 18's keep_aspect_ratio_policy
 *   (not_larger / not_smaller become constant scales where the sizes are
 *   constants, the dims known and the rounded sizes those scales give) and
 *   19's half_pixel_symmetric (half_pixel where every output size is scale
 *   x input exactly), its axes becoming scales or sizes for every axis, a
 *   ScatterElements into ones or the input's Shape; antialias 1 stays for
 *   the kernels, the cpu module's runs it; Pad 19's wrap (the cpu
 *   module's Pad runs it); GridSample 20's modes (linear and cubic are
 *   16's bilinear and bicubic; 5-D kept for the cpu kernel, other ranks
 *   refused); QuantizeLinear's and DequantizeLinear's
 *   saturate (float8 only), block_size (blocked quantisation: the float
 *   arithmetic with each scale repeated over its block, lw_quant_blocked),
 *   output_dtype (other than the type the inputs give, refused) and
 *   precision; Range 27's stash_type (f16/bf16 computed in f32 between
 *   Casts; accumulation in 16 bits refused); SpaceToDepth 28's
 *   mode (DCR dropped, CRD kept for the kernels); QLinearMatMul 21's f16 and bf16 scales (cast to
 *   f32); DFT 20's axis input (a constant: 17's attribute, else refused).
 *
 * opset_history.c lists the versions that need this; opset_*.c hold the
 * schemas of the rewritten versions. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "opset_internal.h"

enum { LW_NAME = 256, LW_MAX_NAMES = 128 };

/* One node's rewrite: names are copied here, since adding tensors may move
 * the graph's own strings. */
typedef struct lw {
    pl_graph *g;
    pl_nid id;
    int64_t version;
    char base[LW_NAME];
    char op[64];
    char names[LW_MAX_NAMES][LW_NAME];
    int used;
    bool narrow;     /* computed in f32 between Casts */
    bool exhausted;  /* a name was asked for past LW_MAX_NAMES */
    pl_dtype dtype;  /* the node's input 0 */
} lw;

static pl_status *lw_error(const lw *w, pl_code code, const char *fmt, ...)
    PL_PRINTF_LIKE(3, 4);

static pl_status *lw_error(const lw *w, pl_code code, const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pl_status_create(code, "node '%s' (%s): %s (ai.onnx opset %lld)", w->base, w->op, msg,
                            (long long)w->version);
}

static char *lw_slot(lw *w)
{
    if (w->used < LW_MAX_NAMES)
        return w->names[w->used++];
    w->exhausted = true;
    return NULL;
}

/* The name of input I of the node ("" when absent), copied. */
static const char *lw_input(lw *w, size_t i)
{
    const pl_graph_node *n = pl_graph_get_node(w->g, w->id);
    char *s = lw_slot(w);
    if (s == NULL)
        return "";
    s[0] = '\0';
    if (i < n->n_inputs && n->inputs[i] != PL_TID_NONE)
        snprintf(s, LW_NAME, "%s", pl_graph_get_tensor(w->g, n->inputs[i])->name);
    return s;
}

static const pl_graph_tensor *lw_tensor(const lw *w, const char *name)
{
    pl_tid t = pl_graph_find_tensor(w->g, name);
    return t == PL_TID_NONE ? NULL : pl_graph_get_tensor(w->g, t);
}

/* Adds node OP(INS) named after the node and OP; its output's name in
 * *OUT. */
static pl_status *lw_node(lw *w, const char *op, const char *const *ins, size_t n_in,
                          const char **out, pl_nid *out_id)
{
    char node_name[LW_NAME], what[96];
    char *o = lw_slot(w);
    if (o == NULL)
        return lw_error(w, PL_CODE_INTERNAL, "too many names in one rewrite");
    snprintf(what, sizeof what, "%s", op);
    pl_rewrite_fresh_name(w->g, w->base, what, node_name, sizeof node_name);
    snprintf(what, sizeof what, "%s_out", op);
    pl_rewrite_fresh_name(w->g, w->base, what, o, LW_NAME);
    const char *outs[1] = {o};
    pl_nid id;
    PL_RETURN_IF_ERROR(pl_graph_add_node(w->g, node_name, op, "", ins, n_in, outs, 1, &id));
    *out = o;
    if (out_id)
        *out_id = id;
    return NULL;
}

static pl_status *lw_unary(lw *w, const char *op, const char *a, const char **out)
{
    return lw_node(w, op, (const char *[]){a}, 1, out, NULL);
}

static pl_status *lw_binary(lw *w, const char *op, const char *a, const char *b,
                            const char **out)
{
    return lw_node(w, op, (const char *[]){a, b}, 2, out, NULL);
}

/* ONNX's TensorProto code of a float dtype (the 'to' of Cast). */
static int64_t lw_onnx_code(pl_dtype d)
{
    if (PL_DTYPE_EQ(d, PL_DTYPE_F32))
        return 1;
    if (d.code == PL_TYPE_FLOAT && d.bits == 16)
        return 10;
    if (d.code == PL_TYPE_FLOAT && d.bits == 64)
        return 11;
    if (d.code == PL_TYPE_BFLOAT && d.bits == 16)
        return 16;
    return 0;
}

static pl_status *lw_cast(lw *w, const char *a, int64_t to, const char **out)
{
    pl_nid id;
    PL_RETURN_IF_ERROR(lw_node(w, "Cast", (const char *[]){a}, 1, out, &id));
    return pl_graph_attr_int(w->g, id, "to", to);
}

/* A scalar constant V in the type computations run in (f32, or f64). */
static pl_status *lw_scalar(lw *w, const char *what, double v, const char **out)
{
    char *s = lw_slot(w);
    if (s == NULL)
        return lw_error(w, PL_CODE_INTERNAL, "too many names in one rewrite");
    pl_tid t;
    bool f64 = !w->narrow && w->dtype.bits == 64;
    float f = (float)v;
    PL_RETURN_IF_ERROR(pl_rewrite_add_constant(w->g, w->id, what,
                                               f64 ? PL_DTYPE_F64 : PL_DTYPE_F32, 0, NULL,
                                               f64 ? (const void *)&v : (const void *)&f,
                                               f64 ? 8 : 4, &t));
    snprintf(s, LW_NAME, "%s", pl_graph_get_tensor(w->g, t)->name);
    *out = s;
    return NULL;
}

static pl_status *lw_i64s(lw *w, const char *what, const int64_t *v, int64_t n, const char **out)
{
    char *s = lw_slot(w);
    if (s == NULL)
        return lw_error(w, PL_CODE_INTERNAL, "too many names in one rewrite");
    pl_tid t;
    PL_RETURN_IF_ERROR(pl_rewrite_add_constant(w->g, w->id, what, PL_DTYPE_I64, 1, &n, v,
                                               (size_t)n * 8, &t));
    snprintf(s, LW_NAME, "%s", pl_graph_get_tensor(w->g, t)->name);
    *out = s;
    return NULL;
}

/* A 0-d int64 constant V. */
static pl_status *lw_i64_scalar(lw *w, const char *what, int64_t v, const char **out)
{
    char *s = lw_slot(w);
    if (s == NULL)
        return lw_error(w, PL_CODE_INTERNAL, "too many names in one rewrite");
    pl_tid t;
    PL_RETURN_IF_ERROR(pl_rewrite_add_constant(w->g, w->id, what, PL_DTYPE_I64, 0, NULL, &v, 8,
                                               &t));
    snprintf(s, LW_NAME, "%s", pl_graph_get_tensor(w->g, t)->name);
    *out = s;
    return NULL;
}

/* Turns the node into DOMAIN's OP(INS), without attributes: its first
 * output only unless ALL_OUTPUTS. */
static pl_status *lw_become_in(lw *w, const char *domain, const char *op, const char *const *ins,
                               size_t n_in, bool all_outputs)
{
    pl_tid tids[PL_GRAPH_MAX_RANK + 1];
    if (n_in > PL_COUNT(tids))
        return lw_error(w, PL_CODE_INTERNAL, "rewrite into %zu inputs", n_in);
    for (size_t i = 0; i < n_in; i++) {
        tids[i] = pl_graph_find_tensor(w->g, ins[i]);
        if (tids[i] == PL_TID_NONE)
            return lw_error(w, PL_CODE_INTERNAL, "rewrite lost tensor '%s'", ins[i]);
    }
    const pl_graph_node *n = pl_graph_get_node(w->g, w->id);
    while (n->n_attrs > 0) {
        char name[LW_NAME];
        snprintf(name, sizeof name, "%s", n->attrs[0].name);
        pl_graph_node_remove_attr(w->g, w->id, name);
        n = pl_graph_get_node(w->g, w->id);
    }
    PL_RETURN_IF_ERROR(pl_graph_node_set_inputs(w->g, w->id, tids, n_in));
    /* the first output only: the others, where a rewrite supports them,
     * were handed to the nodes that compute them */
    if (n->n_outputs > 1 && !all_outputs) {
        pl_tid first = n->outputs[0];
        PL_RETURN_IF_ERROR(pl_graph_node_set_outputs(w->g, w->id, &first, 1));
    }
    return pl_graph_node_set_op(w->g, w->id, domain, op);
}

/* Turns the node into OP(INS), without attributes, its first output only. */
static pl_status *lw_become(lw *w, const char *op, const char *const *ins, size_t n_in)
{
    return lw_become_in(w, "", op, ins, n_in, false);
}

/* The chain's last step OP(A, B): the node itself, or, for an input
 * computed in f32, a node whose result the node casts back. */
static pl_status *lw_end(lw *w, const char *op, const char *a, const char *b)
{
    if (!w->narrow)
        return lw_become(w, op, (const char *[]){a, b}, 2);
    const char *r;
    PL_RETURN_IF_ERROR(lw_binary(w, op, a, b, &r));
    PL_RETURN_IF_ERROR(lw_become(w, "Cast", (const char *[]){r}, 1));
    return pl_graph_attr_int(w->g, w->id, "to", lw_onnx_code(w->dtype));
}

/* Input 0 as the chain computes it: itself, or cast to f32. Refuses a
 * non-float input (the schema would, but the rewrite comes first). */
static pl_status *lw_float_input(lw *w, const char **x)
{
    *x = lw_input(w, 0);
    const pl_graph_tensor *t = lw_tensor(w, *x);
    if (t == NULL)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "input 0 is absent");
    w->dtype = t->dtype;
    if (lw_onnx_code(t->dtype) == 0)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "input 0 has dtype %s; a float type is "
                                                     "required",
                        pl_dtype_name(t->dtype));
    w->narrow = t->dtype.bits == 16;
    if (w->narrow)
        return lw_cast(w, *x, 1, x);
    return NULL;
}

static const pl_attr *lw_attr(const lw *w, const char *name)
{
    return pl_graph_node_attr(pl_graph_get_node(w->g, w->id), name);
}

static int64_t lw_attr_i(const lw *w, const char *name, int64_t def)
{
    const pl_attr *a = lw_attr(w, name);
    return a != NULL && a->kind == PL_ATTR_INT ? a->i : def;
}

static double lw_attr_f(const lw *w, const char *name, double def)
{
    const pl_attr *a = lw_attr(w, name);
    return a != NULL && a->kind == PL_ATTR_FLOAT ? a->f : def;
}

static const char *lw_attr_s(const lw *w, const char *name, const char *def)
{
    const pl_attr *a = lw_attr(w, name);
    return a != NULL && a->kind == PL_ATTR_STRING && a->s != NULL ? a->s : def;
}

/* ---- functions ---------------------------------------------------------------- */

/* GELU of X (computed in f32 already) ending at the node: the erf form, or
 * the tanh form in the order the onednn module's matcher reads it:
 * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
static pl_status *lw_gelu_of(lw *w, const char *x, bool tanh_form)
{
    const char *one, *half, *g;
    PL_RETURN_IF_ERROR(lw_scalar(w, "one", 1.0, &one));
    PL_RETURN_IF_ERROR(lw_scalar(w, "half", 0.5, &half));
    if (tanh_form) {
        const char *x2, *x3, *c, *q, *i, *k, *ki, *t, *t1;
        PL_RETURN_IF_ERROR(lw_binary(w, "Mul", x, x, &x2));
        PL_RETURN_IF_ERROR(lw_binary(w, "Mul", x2, x, &x3));
        PL_RETURN_IF_ERROR(lw_scalar(w, "c", 0.044715, &c));
        PL_RETURN_IF_ERROR(lw_binary(w, "Mul", x3, c, &q));
        PL_RETURN_IF_ERROR(lw_binary(w, "Add", x, q, &i));
        PL_RETURN_IF_ERROR(lw_scalar(w, "k", sqrt(2.0 / 3.14159265358979323846), &k));
        PL_RETURN_IF_ERROR(lw_binary(w, "Mul", i, k, &ki));
        PL_RETURN_IF_ERROR(lw_unary(w, "Tanh", ki, &t));
        PL_RETURN_IF_ERROR(lw_binary(w, "Add", t, one, &t1));
        PL_RETURN_IF_ERROR(lw_binary(w, "Mul", x, t1, &g));
    } else {
        const char *sq, *d, *e, *e1;
        PL_RETURN_IF_ERROR(lw_scalar(w, "sqrt2", sqrt(2.0), &sq));
        PL_RETURN_IF_ERROR(lw_binary(w, "Div", x, sq, &d));
        PL_RETURN_IF_ERROR(lw_unary(w, "Erf", d, &e));
        PL_RETURN_IF_ERROR(lw_binary(w, "Add", e, one, &e1));
        PL_RETURN_IF_ERROR(lw_binary(w, "Mul", x, e1, &g));
    }
    return lw_end(w, "Mul", g, half);
}

static pl_status *lw_gelu(lw *w)
{
    const char *approx = lw_attr_s(w, "approximate", "none");
    bool tanh_form = strcmp(approx, "tanh") == 0;
    if (!tanh_form && strcmp(approx, "none") != 0)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "approximate is '%s'; 'none' or 'tanh' "
                                                     "expected",
                        approx);
    const char *x;
    PL_RETURN_IF_ERROR(lw_float_input(w, &x));
    return lw_gelu_of(w, x, tanh_form);
}

static pl_status *lw_mish(lw *w)
{
    const char *x, *sp, *t;
    PL_RETURN_IF_ERROR(lw_float_input(w, &x));
    PL_RETURN_IF_ERROR(lw_unary(w, "Softplus", x, &sp));
    PL_RETURN_IF_ERROR(lw_unary(w, "Tanh", sp, &t));
    return lw_end(w, "Mul", x, t);
}

static pl_status *lw_swish(lw *w)
{
    double alpha = lw_attr_f(w, "alpha", 1.0);
    const char *x, *a = NULL, *s;
    PL_RETURN_IF_ERROR(lw_float_input(w, &x));
    if (alpha != 1.0) {
        const char *ac;
        PL_RETURN_IF_ERROR(lw_scalar(w, "alpha", alpha, &ac));
        PL_RETURN_IF_ERROR(lw_binary(w, "Mul", x, ac, &a));
    }
    PL_RETURN_IF_ERROR(lw_unary(w, "Sigmoid", a ? a : x, &s));
    return lw_end(w, "Mul", x, s);
}

/* SwiGLU 28 (A, B): Swish_alpha(A) * B, A and B of one shape. */
static pl_status *lw_swiglu(lw *w)
{
    double alpha = lw_attr_f(w, "alpha", 1.0);
    const char *x, *b = lw_input(w, 1), *a = NULL, *s, *g;
    PL_RETURN_IF_ERROR(lw_float_input(w, &x));
    if (b[0] == '\0')
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "input 1 (B) is absent");
    if (w->narrow)
        PL_RETURN_IF_ERROR(lw_cast(w, b, 1, &b));
    if (alpha != 1.0) {
        const char *ac;
        PL_RETURN_IF_ERROR(lw_scalar(w, "alpha", alpha, &ac));
        PL_RETURN_IF_ERROR(lw_binary(w, "Mul", x, ac, &a));
    }
    PL_RETURN_IF_ERROR(lw_unary(w, "Sigmoid", a ? a : x, &s));
    PL_RETURN_IF_ERROR(lw_binary(w, "Mul", x, s, &g));
    return lw_end(w, "Mul", g, b);
}

/* OP(A) over AXES (N of them), the axes an input from opset SINCE on and an
 * attribute before. */
static pl_status *lw_axes_op(lw *w, const char *op, int64_t since, const char *a,
                             const int64_t *axes, int64_t n, const char **out)
{
    if (w->version >= since) {
        const char *ax;
        PL_RETURN_IF_ERROR(lw_i64s(w, "axes", axes, n, &ax));
        return lw_binary(w, op, a, ax, out);
    }
    pl_nid id;
    PL_RETURN_IF_ERROR(lw_node(w, op, (const char *[]){a}, 1, out, &id));
    return pl_graph_attr_ints(w->g, id, "axes", axes, (size_t)n);
}

/* ReduceMean of A over AXES keeping them, in the graph's opset's form. */
static pl_status *lw_mean(lw *w, const char *a, const int64_t *axes, int64_t n, const char **out)
{
    return lw_axes_op(w, "ReduceMean", 18, a, axes, n, out);
}

/* x / sqrt(mean(x^2 over AXIS..) + epsilon), X computed in f32 already. */
static pl_status *lw_rms(lw *w, const char *x, int64_t r, int64_t axis, double epsilon,
                         const char **out)
{
    if (r < 1)
        return lw_error(w, PL_CODE_UNSUPPORTED, "the rank of input 0 is not known");
    if (axis < -r || axis >= r)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "axis %lld is out of range for rank %lld",
                        (long long)axis, (long long)r);
    if (axis < 0)
        axis += r;
    int64_t axes[PL_GRAPH_MAX_RANK];
    for (int64_t d = axis; d < r; d++)
        axes[d - axis] = d;
    const char *x2, *ms, *eps, *ae, *rs;
    PL_RETURN_IF_ERROR(lw_binary(w, "Mul", x, x, &x2));
    PL_RETURN_IF_ERROR(lw_mean(w, x2, axes, r - axis, &ms));
    PL_RETURN_IF_ERROR(lw_scalar(w, "epsilon", epsilon, &eps));
    PL_RETURN_IF_ERROR(lw_binary(w, "Add", ms, eps, &ae));
    PL_RETURN_IF_ERROR(lw_unary(w, "Sqrt", ae, &rs));
    return lw_binary(w, "Div", x, rs, out);
}

static pl_status *lw_rms_norm(lw *w)
{
    const char *x, *scale = lw_input(w, 1), *n;
    PL_RETURN_IF_ERROR(lw_float_input(w, &x));
    int64_t r = lw_tensor(w, lw_input(w, 0))->ndim;
    PL_RETURN_IF_ERROR(lw_rms(w, x, r, lw_attr_i(w, "axis", -1), lw_attr_f(w, "epsilon", 1e-5),
                              &n));
    if (w->narrow)
        PL_RETURN_IF_ERROR(lw_cast(w, n, lw_onnx_code(w->dtype), &n));
    return lw_become(w, "Mul", (const char *[]){n, scale}, 2);
}

/* GroupNormalization's per-channel SCALE (or bias) as a tensor of shape
 * [C, 1, ...] (rank R - 1) for the multiply: version 18's per-group values
 * repeated C / G times (a constant only), version 21's reshaped. */
static pl_status *lw_gn_param(lw *w, const char *name, int64_t c, int64_t groups, int64_t r,
                              const char **out)
{
    const pl_graph_tensor *t = lw_tensor(w, name);
    int64_t want = w->version >= 21 ? c : groups;
    if (t == NULL || t->ndim != 1 || (t->dims[0] >= 0 && t->dims[0] != want))
        return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                        "'%s' must have shape [%lld] (%s at version %d)", name,
                        (long long)want, w->version >= 21 ? "one per channel" : "one per group",
                        w->version >= 21 ? 21 : 18);
    int64_t dims[PL_GRAPH_MAX_RANK];
    dims[0] = c;
    for (int64_t d = 1; d < r - 1; d++)
        dims[d] = 1;
    char *s = lw_slot(w);
    if (s == NULL)
        return lw_error(w, PL_CODE_INTERNAL, "too many names in one rewrite");
    if (t->data != NULL && !t->is_input) {
        size_t es = pl_dtype_size(t->dtype);
        unsigned char buf[8 * 4096];
        if ((size_t)c * es > sizeof buf || t->nbytes < (size_t)want * es)
            return lw_error(w, PL_CODE_UNSUPPORTED, "'%s': too many channels (%lld)", name,
                            (long long)c);
        for (int64_t k = 0; k < c; k++)
            memcpy(buf + (size_t)k * es,
                   (const unsigned char *)t->data + (size_t)(want == c ? k : k / (c / groups)) * es,
                   es);
        pl_tid tid;
        PL_RETURN_IF_ERROR(pl_rewrite_add_constant(w->g, w->id, "param",
                                                   t->dtype, (int32_t)(r - 1), dims, buf,
                                                   (size_t)c * es, &tid));
        snprintf(s, LW_NAME, "%s", pl_graph_get_tensor(w->g, tid)->name);
        *out = s;
        return NULL;
    }
    if (want != c)
        return lw_error(w, PL_CODE_UNSUPPORTED, "'%s' is computed, and version 18's per-group "
                                                "values are repeated per channel only when "
                                                "constant",
                        name);
    snprintf(s, LW_NAME, "%s", name);
    *out = s;
    if (r <= 2)
        return NULL;
    int64_t axes[PL_GRAPH_MAX_RANK];
    for (int64_t d = 1; d < r - 1; d++)
        axes[d - 1] = d;
    const char *ax;
    PL_RETURN_IF_ERROR(lw_i64s(w, "axes", axes, r - 2, &ax));
    return lw_binary(w, "Unsqueeze", s, ax, out);
}

static pl_status *lw_group_norm(lw *w)
{
    const char *x, *scale = lw_input(w, 1), *bias = lw_input(w, 2);
    PL_RETURN_IF_ERROR(lw_float_input(w, &x));
    const pl_graph_tensor *xt = lw_tensor(w, lw_input(w, 0));
    const pl_attr *ga = lw_attr(w, "num_groups");
    if (ga == NULL || ga->kind != PL_ATTR_INT)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "missing required attribute 'num_groups'");
    int64_t groups = ga->i, r = xt->ndim, c = r >= 2 ? xt->dims[1] : -1;
    if (r < 2 || c <= 0)
        return lw_error(w, PL_CODE_UNSUPPORTED,
                        "input 0 needs a known rank of at least 2 and a known channel count");
    if (groups <= 0 || c % groups != 0)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "num_groups %lld does not divide the %lld "
                                                     "channels",
                        (long long)groups, (long long)c);
    bool known = true;
    for (int32_t d = 0; d < xt->ndim; d++)
        known &= xt->dims[d] >= 0;
    int64_t xdims[PL_GRAPH_MAX_RANK];
    memcpy(xdims, xt->dims, (size_t)r * sizeof *xdims);
    if (w->dtype.bits == 64) /* InstanceNormalization's unit scale is f32 */
        return lw_error(w, PL_CODE_UNSUPPORTED, "float64 input is not supported");
    double eps = lw_attr_f(w, "epsilon", 1e-5);
    const char *sh1, *xr, *ones, *zeros, *in, *shape, *xb, *sc, *bc, *m;
    PL_RETURN_IF_ERROR(lw_i64s(w, "group_shape", (const int64_t[]){0, groups, -1}, 3, &sh1));
    PL_RETURN_IF_ERROR(lw_binary(w, "Reshape", x, sh1, &xr));
    /* InstanceNormalization of [N, G, L] with unit scale and zero bias */
    {
        float one[1] = {1.0f};
        int64_t gdim = groups;
        pl_tid t1, t0;
        size_t nb = (size_t)groups * 4;
        float *buf = pl_malloc(nb);
        if (buf == NULL)
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory expanding '%s'",
                                    w->base);
        for (int64_t k = 0; k < groups; k++)
            buf[k] = one[0];
        pl_status *st = pl_rewrite_add_constant(w->g, w->id, "ones", PL_DTYPE_F32, 1, &gdim, buf,
                                                nb, &t1);
        memset(buf, 0, nb);
        if (st == NULL)
            st = pl_rewrite_add_constant(w->g, w->id, "zeros", PL_DTYPE_F32, 1, &gdim, buf, nb,
                                         &t0);
        pl_free(buf);
        PL_RETURN_IF_ERROR(st);
        char *s1 = lw_slot(w), *s0 = lw_slot(w);
        if (s1 == NULL || s0 == NULL)
            return lw_error(w, PL_CODE_INTERNAL, "too many names in one rewrite");
        snprintf(s1, LW_NAME, "%s", pl_graph_get_tensor(w->g, t1)->name);
        snprintf(s0, LW_NAME, "%s", pl_graph_get_tensor(w->g, t0)->name);
        ones = s1;
        zeros = s0;
    }
    pl_nid inode;
    PL_RETURN_IF_ERROR(lw_node(w, "InstanceNormalization", (const char *[]){xr, ones, zeros}, 3,
                               &in, &inode));
    PL_RETURN_IF_ERROR(pl_graph_attr_float(w->g, inode, "epsilon", eps));
    if (known)
        PL_RETURN_IF_ERROR(lw_i64s(w, "shape", xdims, r, &shape));
    else
        PL_RETURN_IF_ERROR(lw_unary(w, "Shape", x, &shape));
    PL_RETURN_IF_ERROR(lw_binary(w, "Reshape", in, shape, &xb));
    if (w->narrow)
        PL_RETURN_IF_ERROR(lw_cast(w, xb, lw_onnx_code(w->dtype), &xb));
    PL_RETURN_IF_ERROR(lw_gn_param(w, scale, c, groups, r, &sc));
    PL_RETURN_IF_ERROR(lw_gn_param(w, bias, c, groups, r, &bc));
    PL_RETURN_IF_ERROR(lw_binary(w, "Mul", xb, sc, &m));
    return lw_become(w, "Add", (const char *[]){m, bc}, 2);
}

/* Attention 23 (24 and 25 as far as they agree with it): scaled dot
 * product attention, as its function computes it, for 3-D inputs (B, S,
 * heads * size, with q_num_heads and kv_num_heads) or 4-D ones (B, heads, S,
 * size), grouped-query heads repeated, a boolean or additive mask, causal
 * masking (query i sees key j <= i + the cached keys), softcap, and a row
 * every key of which is masked giving zeros; a KV cache and the optional
 * outputs as lw_attention says. The mask and the causal frontier are built
 * with Shape, Range and compares, so dynamic sequence lengths work and
 * static ones fold into constants. */
static pl_status *lw_perm(lw *w, const char *a, const int64_t *perm, int n, const char **out)
{
    pl_nid id;
    PL_RETURN_IF_ERROR(lw_node(w, "Transpose", (const char *[]){a}, 1, out, &id));
    return pl_graph_attr_ints(w->g, id, "perm", perm, (size_t)n);
}

/* A scalar i64 element I of the shape of tensor A (a 0-d tensor). */
static pl_status *lw_dim(lw *w, const char *a, int64_t i, const char **out)
{
    const char *sh, *idx;
    PL_RETURN_IF_ERROR(lw_unary(w, "Shape", a, &sh));
    PL_RETURN_IF_ERROR(lw_i64_scalar(w, "index", i, &idx));
    return lw_binary(w, "Gather", sh, idx, out);
}

/* 0, 1, ..., (dim AXIS of A) - 1, as int64. */
static pl_status *lw_range_of_dim(lw *w, const char *a, int64_t axis, const char **out)
{
    const char *len, *zero_i, *one_i;
    PL_RETURN_IF_ERROR(lw_dim(w, a, axis, &len));
    PL_RETURN_IF_ERROR(lw_i64_scalar(w, "zero_i", 0, &zero_i));
    PL_RETURN_IF_ERROR(lw_i64_scalar(w, "one_i", 1, &one_i));
    return lw_node(w, "Range", (const char *[]){zero_i, len, one_i}, 3, out, NULL);
}

static pl_status *lw_unsqueeze(lw *w, const char *a, const int64_t *axes, int64_t n,
                               const char **out);

/* The causal bias [queries, keys]: ZERO where key j <= query i (no cached
 * keys: past_sequence_length 0), MASKED after. The queries are dim QAXIS of
 * Q, the keys dim KAXIS of K. */
static pl_status *lw_causal_bias(lw *w, const char *q, int64_t qaxis, const char *k,
                                 int64_t kaxis, const char *zero, const char *masked,
                                 const char **out)
{
    const char *rows, *cols, *rows2, *ok;
    PL_RETURN_IF_ERROR(lw_range_of_dim(w, q, qaxis, &rows));
    PL_RETURN_IF_ERROR(lw_range_of_dim(w, k, kaxis, &cols));
    PL_RETURN_IF_ERROR(lw_unsqueeze(w, rows, (const int64_t[]){1}, 1, &rows2));
    PL_RETURN_IF_ERROR(lw_binary(w, "LessOrEqual", cols, rows2, &ok));
    return lw_node(w, "Where", (const char *[]){ok, zero, masked}, 3, out, NULL);
}

static pl_status *lw_node_to_output(lw *w, const char *op, const char *a, const char *b,
                                    size_t out_index, const char **out);

/* Hands A to output OUT of the node: cast back to the node's type when the
 * rewrite computes in f32 (NARROW), else through an Identity. */
static pl_status *lw_attention_out(lw *w, const char *a, size_t out, bool narrow)
{
    const char *name;
    PL_RETURN_IF_ERROR(lw_node_to_output(w, narrow ? "Cast" : "Identity", a, NULL, out, &name));
    if (!narrow)
        return NULL;
    return pl_graph_attr_int(w->g, (pl_nid)(pl_graph_node_count(w->g) - 1), "to",
                             lw_onnx_code(w->dtype));
}

/* Attention 23: Q, K, V in 4-D [batch, heads, sequence, size] or 3-D
 * [batch, sequence, heads * size], an optional mask (bool or additive),
 * a KV cache (past_key and past_value, inputs 4 and 5, concatenated before
 * the new keys and values and given back as present_key and present_value,
 * outputs 1 and 2; a causal frontier then counts the cached keys),
 * grouped-query heads, softcap (before the mask), and output 3, the scores
 * at the point qk_matmul_output_mode names (0 the scaled product, 1 after
 * softcap, 2 after the mask too, 3 after softmax), as ONNX's reference
 * computes them since onnx 1.21 and ONNX Runtime 1.32 does (onnx 1.20 put
 * softcap after the mask and numbered modes 1 and 2 the other way round;
 * its masked keys took weight under a softcap). float16 and bfloat16 are computed in
 * float32 between Casts. Attention 24's nonpad_kv_seqlen (an external
 * cache filled to a length per batch: the keys past it masked, a causal
 * frontier counting it) and 25's left_window_size and right_window_size
 * (query position p sees keys p - left to p + right) are built from the
 * same positions. */
static pl_status *lw_attention(lw *w)
{
    const pl_graph_node *n = pl_graph_get_node(w->g, w->id);
    bool has_past[2] = {false, false}, has_nonpad = false;
    for (size_t i = 4; i < n->n_inputs && i < 7; i++) {
        if (n->inputs[i] == PL_TID_NONE)
            continue;
        if (i == 6)
            has_nonpad = true;
        else
            has_past[i - 4] = true;
    }
    if (has_past[0] != has_past[1])
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "past_key and past_value must be given "
                                                     "together");
    if (has_nonpad && has_past[0])
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "nonpad_kv_seqlen cannot be combined "
                                                     "with past_key and past_value");
    bool want[4] = {true, false, false, false};
    for (size_t o = 1; o < n->n_outputs && o < 4; o++)
        want[o] = n->outputs[o] != PL_TID_NONE;
    int64_t qk_mode = lw_attr_i(w, "qk_matmul_output_mode", 0);
    if (want[3] && (qk_mode < 0 || qk_mode > 3))
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "qk_matmul_output_mode %lld; 0 to 3 "
                                                     "expected",
                        (long long)qk_mode);
    int64_t left = lw_attr_i(w, "left_window_size", -1);
    int64_t right = lw_attr_i(w, "right_window_size", -1);
    if (left < -1 || right < -1)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "window sizes %lld and %lld; -1 or "
                                                     "nonnegative expected",
                        (long long)left, (long long)right);
    const char *q = lw_input(w, 0), *k = lw_input(w, 1), *v = lw_input(w, 2);
    const char *mask = lw_input(w, 3);
    const char *nonpad = has_nonpad ? lw_input(w, 6) : NULL;
    const char *past_k = has_past[0] ? lw_input(w, 4) : NULL;
    const char *past_v = has_past[1] ? lw_input(w, 5) : NULL;
    /* Their types, copied: adding tensors may move the graph's. */
    pl_graph_tensor qt, kt, vt;
    int64_t qd[4], kd[4], vd[4];
    {
        const pl_graph_tensor *a = lw_tensor(w, q), *b = lw_tensor(w, k), *c = lw_tensor(w, v);
        if (a == NULL || b == NULL || c == NULL)
            return lw_error(w, PL_CODE_INVALID_ARGUMENT, "Q, K and V are required");
        qt = *a;
        kt = *b;
        vt = *c;
    }
    bool mask_bool = false, mask_float = false;
    int32_t mask_rank = 0;
    int64_t mask_keys = -1, keys = -1; /* the mask's last dim; the keys with the cache */
    {
        const pl_graph_tensor *pt = past_k != NULL ? lw_tensor(w, past_k) : NULL;
        int64_t now = kt.ndim == 4 ? kt.dims[2] : kt.ndim == 3 ? kt.dims[1] : -1;
        int64_t before = pt == NULL ? 0 : pt->ndim == 4 ? pt->dims[2] : -1;
        keys = now >= 0 && before >= 0 ? now + before : -1;
    }
    if (mask[0] != '\0') {
        const pl_graph_tensor *mt = lw_tensor(w, mask);
        if (mt != NULL && mt->ndim > 0) {
            mask_rank = mt->ndim;
            mask_keys = mt->dims[mt->ndim - 1];
        }
        mask_bool = mt != NULL && PL_DTYPE_EQ(mt->dtype, PL_DTYPE_BOOL);
        mask_float = mt != NULL && PL_DTYPE_EQ(mt->dtype, qt.dtype);
        if (!mask_bool && !mask_float)
            return lw_error(w, PL_CODE_INVALID_ARGUMENT, "attn_mask has dtype %s; bool or the "
                                                         "type of Q expected",
                            mt != NULL ? pl_dtype_name(mt->dtype) : "(unknown)");
    }
    bool narrow = false;
    if (!PL_DTYPE_EQ(qt.dtype, PL_DTYPE_F32)) {
        if (!((qt.dtype.code == PL_TYPE_FLOAT || qt.dtype.code == PL_TYPE_BFLOAT) &&
              qt.dtype.bits == 16))
            return lw_error(w, PL_CODE_UNSUPPORTED, "Q, K and V of type %s (float32, float16 "
                                                    "or bfloat16 expected)",
                            pl_dtype_name(qt.dtype));
        narrow = true;
    }
    w->dtype = qt.dtype;
    int32_t r = qt.ndim;
    if (r != 3 && r != 4)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "Q has rank %d; 3 or 4 expected", (int)r);
    if (kt.ndim != r || vt.ndim != r)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "Q, K and V must have the same rank");
    memcpy(qd, qt.dims, (size_t)r * sizeof *qd);
    memcpy(kd, kt.dims, (size_t)r * sizeof *kd);
    memcpy(vd, vt.dims, (size_t)r * sizeof *vd);
    if (narrow) { /* the float inputs in f32; scalars made below are f32 */
        const char **in[5] = {&q, &k, &v, &past_k, &past_v};
        for (int i = 0; i < 5; i++)
            if (*in[i] != NULL)
                PL_RETURN_IF_ERROR(lw_cast(w, *in[i], 1, in[i]));
        if (mask_float)
            PL_RETURN_IF_ERROR(lw_cast(w, mask, 1, &mask));
    }
    int64_t hq, hkv, d;
    const char *q4 = q, *k4 = k, *v4 = v;
    static const int64_t swap12[4] = {0, 2, 1, 3};
    if (r == 3) {
        hq = lw_attr_i(w, "q_num_heads", 0);
        hkv = lw_attr_i(w, "kv_num_heads", 0);
        if (hq <= 0 || hkv <= 0)
            return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                            "3-D inputs need q_num_heads and kv_num_heads");
        if (qd[2] < 0 || qd[2] % hq != 0)
            return lw_error(w, PL_CODE_UNSUPPORTED, "Q's hidden size must be known and a "
                                                    "multiple of q_num_heads");
        d = qd[2] / hq;
        const char *sq, *sk, *t;
        PL_RETURN_IF_ERROR(lw_i64s(w, "q_heads", (const int64_t[]){0, 0, hq, -1}, 4, &sq));
        PL_RETURN_IF_ERROR(lw_i64s(w, "kv_heads", (const int64_t[]){0, 0, hkv, -1}, 4, &sk));
        PL_RETURN_IF_ERROR(lw_binary(w, "Reshape", q, sq, &t));
        PL_RETURN_IF_ERROR(lw_perm(w, t, swap12, 4, &q4));
        PL_RETURN_IF_ERROR(lw_binary(w, "Reshape", k, sk, &t));
        PL_RETURN_IF_ERROR(lw_perm(w, t, swap12, 4, &k4));
        PL_RETURN_IF_ERROR(lw_binary(w, "Reshape", v, sk, &t));
        PL_RETURN_IF_ERROR(lw_perm(w, t, swap12, 4, &v4));
    } else {
        hq = qd[1];
        hkv = kd[1];
        d = qd[3];
        if (hq < 0 || hkv < 0)
            return lw_error(w, PL_CODE_UNSUPPORTED, "the head counts of Q and K must be known");
    }
    if (past_k != NULL) { /* the cache first, then this step's keys and values */
        pl_nid id;
        PL_RETURN_IF_ERROR(lw_node(w, "Concat", (const char *[]){past_k, k4}, 2, &k4, &id));
        PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, id, "axis", 2));
        PL_RETURN_IF_ERROR(lw_node(w, "Concat", (const char *[]){past_v, v4}, 2, &v4, &id));
        PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, id, "axis", 2));
    }
    if (want[1])
        PL_RETURN_IF_ERROR(lw_attention_out(w, k4, 1, narrow));
    if (want[2])
        PL_RETURN_IF_ERROR(lw_attention_out(w, v4, 2, narrow));
    const char *k_all = k4; /* the keys before heads are shared out: their count */
    if (hkv != hq) { /* grouped-query: each K and V head serves hq / hkv query heads */
        if (hkv <= 0 || hq % hkv != 0 || d < 0)
            return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                            "%lld query heads cannot share %lld key heads", (long long)hq,
                            (long long)hkv);
        const char *ax, *reps, *shape, *t;
        PL_RETURN_IF_ERROR(lw_i64s(w, "group_axis", (const int64_t[]){2}, 1, &ax));
        PL_RETURN_IF_ERROR(lw_i64s(w, "group", (const int64_t[]){1, 1, hq / hkv, 1, 1}, 5, &reps));
        PL_RETURN_IF_ERROR(lw_i64s(w, "grouped", (const int64_t[]){0, hq, -1, d}, 4, &shape));
        const char **kv[2] = {&k4, &v4};
        for (int j = 0; j < 2; j++) {
            int64_t dv = j == 0 ? d : (r == 4 ? vd[3] : -2);
            const char *sh = shape;
            if (j == 1 && dv != d) { /* V's head size may differ from Q's */
                if (dv < 0 && r == 4)
                    return lw_error(w, PL_CODE_UNSUPPORTED, "V's head size must be known");
                if (r == 3) {
                    if (vd[2] < 0)
                        return lw_error(w, PL_CODE_UNSUPPORTED, "V's hidden size must be known");
                    dv = vd[2] / hkv;
                }
                PL_RETURN_IF_ERROR(lw_i64s(w, "grouped_v", (const int64_t[]){0, hq, -1, dv}, 4,
                                           &sh));
            }
            PL_RETURN_IF_ERROR(lw_binary(w, "Unsqueeze", *kv[j], ax, &t));
            PL_RETURN_IF_ERROR(lw_binary(w, "Tile", t, reps, &t));
            PL_RETURN_IF_ERROR(lw_binary(w, "Reshape", t, sh, kv[j]));
        }
    }
    const pl_attr *sa = lw_attr(w, "scale");
    double scale;
    if (sa != NULL && sa->kind == PL_ATTR_FLOAT) {
        scale = sa->f;
    } else {
        if (d <= 0)
            return lw_error(w, PL_CODE_UNSUPPORTED, "the head size must be known for the "
                                                    "default scale");
        scale = 1.0 / sqrt((double)d);
    }
    const char *sc, *qs, *kT, *scores, *qk = NULL;
    PL_RETURN_IF_ERROR(lw_scalar(w, "scale", scale, &sc));
    PL_RETURN_IF_ERROR(lw_binary(w, "Mul", q4, sc, &qs));
    PL_RETURN_IF_ERROR(lw_perm(w, k4, (const int64_t[]){0, 1, 3, 2}, 4, &kT));
    PL_RETURN_IF_ERROR(lw_binary(w, "MatMul", qs, kT, &scores));
    if (qk_mode == 0)
        qk = scores;
    /* softcap before the mask, as ONNX (since PR 8068, onnx 1.21) and ONNX
     * Runtime 1.32 apply it: a masked score stays -inf (after the mask, a
     * -inf became -softcap and the masked keys took weight) */
    double softcap = lw_attr_f(w, "softcap", 0.0);
    if (softcap > 0) {
        const char *cap, *inv, *t;
        PL_RETURN_IF_ERROR(lw_scalar(w, "softcap", softcap, &cap));
        PL_RETURN_IF_ERROR(lw_scalar(w, "inv_softcap", 1.0 / softcap, &inv));
        PL_RETURN_IF_ERROR(lw_binary(w, "Mul", scores, inv, &t));
        PL_RETURN_IF_ERROR(lw_unary(w, "Tanh", t, &t));
        PL_RETURN_IF_ERROR(lw_binary(w, "Mul", t, cap, &scores));
    }
    if (qk_mode == 1)
        qk = scores;
    const char *zero, *neg_inf;
    PL_RETURN_IF_ERROR(lw_scalar(w, "zero", 0.0, &zero));
    PL_RETURN_IF_ERROR(lw_scalar(w, "neg_inf", -INFINITY, &neg_inf));
    bool masked = false;
    if (mask[0] != '\0') {
        const char *bias = mask;
        if (mask_bool)
            PL_RETURN_IF_ERROR(lw_node(w, "Where", (const char *[]){mask, zero, neg_inf}, 3,
                                       &bias, NULL));
        if (mask_keys >= 0 && keys > mask_keys) { /* a shorter mask: the rest masked */
            int64_t pads[2 * PL_GRAPH_MAX_RANK] = {0};
            pads[2 * mask_rank - 1] = keys - mask_keys;
            const char *pv;
            PL_RETURN_IF_ERROR(lw_i64s(w, "mask_pads", pads, 2 * mask_rank, &pv));
            PL_RETURN_IF_ERROR(lw_node(w, "Pad", (const char *[]){bias, pv, neg_inf}, 3, &bias,
                                       NULL));
        }
        PL_RETURN_IF_ERROR(lw_binary(w, "Add", scores, bias, &scores));
        masked = true;
    }
    bool causal = lw_attr_i(w, "is_causal", 0) != 0;
    if (causal || left >= 0 || right >= 0 || nonpad != NULL) {
        /* key j's index against query i's position: i + the cached keys
         * (past), or i + nonpad_kv_seqlen[b] - the queries ([B, 1, q, 1]:
         * an external cache filled to a length per batch), else i */
        const char *cols, *rows, *pos, *np4 = NULL, *bias, *t;
        PL_RETURN_IF_ERROR(lw_range_of_dim(w, k_all, 2, &cols));
        PL_RETURN_IF_ERROR(lw_range_of_dim(w, q4, 2, &rows));
        PL_RETURN_IF_ERROR(lw_unsqueeze(w, rows, (const int64_t[]){1}, 1, &pos));
        if (nonpad != NULL) {
            const char *shape, *qlen;
            PL_RETURN_IF_ERROR(lw_i64s(w, "per_batch", (const int64_t[]){-1, 1, 1, 1}, 4,
                                       &shape));
            PL_RETURN_IF_ERROR(lw_binary(w, "Reshape", nonpad, shape, &np4));
            PL_RETURN_IF_ERROR(lw_dim(w, q4, 2, &qlen));
            PL_RETURN_IF_ERROR(lw_binary(w, "Sub", np4, qlen, &t));
            PL_RETURN_IF_ERROR(lw_binary(w, "Add", pos, t, &pos));
        } else if (past_k != NULL) {
            PL_RETURN_IF_ERROR(lw_dim(w, past_k, 2, &t));
            PL_RETURN_IF_ERROR(lw_binary(w, "Add", pos, t, &pos));
        }
        const char *allowed = NULL;
        if (causal)
            PL_RETURN_IF_ERROR(lw_binary(w, "LessOrEqual", cols, pos, &allowed));
        if (left >= 0 || right >= 0) { /* pos - left <= j <= pos + right */
            const char *diff, *bound, *ok;
            PL_RETURN_IF_ERROR(lw_binary(w, "Sub", pos, cols, &diff));
            for (int side = 0; side < 2; side++) {
                int64_t size = side == 0 ? left : right;
                if (size < 0)
                    continue;
                PL_RETURN_IF_ERROR(lw_i64_scalar(w, "window", size, &bound));
                const char *x = diff;
                if (side == 1)
                    PL_RETURN_IF_ERROR(lw_unary(w, "Neg", diff, &x));
                PL_RETURN_IF_ERROR(lw_binary(w, "LessOrEqual", x, bound, &ok));
                if (allowed != NULL)
                    PL_RETURN_IF_ERROR(lw_binary(w, "And", allowed, ok, &ok));
                allowed = ok;
            }
        }
        if (np4 != NULL) { /* keys past each batch's length */
            const char *ok;
            PL_RETURN_IF_ERROR(lw_binary(w, "Less", cols, np4, &ok));
            if (allowed != NULL)
                PL_RETURN_IF_ERROR(lw_binary(w, "And", allowed, ok, &ok));
            allowed = ok;
        }
        PL_RETURN_IF_ERROR(lw_node(w, "Where", (const char *[]){allowed, zero, neg_inf}, 3,
                                   &bias, NULL));
        PL_RETURN_IF_ERROR(lw_binary(w, "Add", scores, bias, &scores));
        masked = true;
    }
    if (qk_mode == 2)
        qk = scores;
    const char *probs, *y4;
    pl_nid sm;
    PL_RETURN_IF_ERROR(lw_node(w, "Softmax", (const char *[]){scores}, 1, &probs, &sm));
    PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, sm, "axis", -1));
    if (masked) { /* a row with every key masked: zeros, not NaN */
        const char *nan;
        PL_RETURN_IF_ERROR(lw_unary(w, "IsNaN", probs, &nan));
        PL_RETURN_IF_ERROR(lw_node(w, "Where", (const char *[]){nan, zero, probs}, 3, &probs,
                                   NULL));
    }
    if (qk_mode == 3)
        qk = probs;
    if (want[3])
        PL_RETURN_IF_ERROR(lw_attention_out(w, qk, 3, narrow));
    const char *t, *flat;
    if (r == 4) {
        if (!narrow)
            return lw_become(w, "MatMul", (const char *[]){probs, v4}, 2);
        PL_RETURN_IF_ERROR(lw_binary(w, "MatMul", probs, v4, &t));
    } else {
        PL_RETURN_IF_ERROR(lw_binary(w, "MatMul", probs, v4, &y4));
        PL_RETURN_IF_ERROR(lw_perm(w, y4, swap12, 4, &t));
        PL_RETURN_IF_ERROR(lw_i64s(w, "merge_heads", (const int64_t[]){0, 0, -1}, 3, &flat));
        if (!narrow)
            return lw_become(w, "Reshape", (const char *[]){t, flat}, 2);
        PL_RETURN_IF_ERROR(lw_binary(w, "Reshape", t, flat, &t));
    }
    PL_RETURN_IF_ERROR(lw_become(w, "Cast", (const char *[]){t}, 1));
    return pl_graph_attr_int(w->g, w->id, "to", lw_onnx_code(w->dtype));
}

/* Slice of A's last axis [FROM, TO) by STEP. */
static pl_status *lw_slice_step(lw *w, const char *a, int64_t from, int64_t to, int64_t step,
                                const char **out)
{
    const char *st, *en, *ax, *sp;
    PL_RETURN_IF_ERROR(lw_i64s(w, "starts", &from, 1, &st));
    PL_RETURN_IF_ERROR(lw_i64s(w, "ends", &to, 1, &en));
    PL_RETURN_IF_ERROR(lw_i64s(w, "slice_axes", (const int64_t[]){-1}, 1, &ax));
    PL_RETURN_IF_ERROR(lw_i64s(w, "steps", &step, 1, &sp));
    return lw_node(w, "Slice", (const char *[]){a, st, en, ax, sp}, 5, out, NULL);
}

static pl_status *lw_concat_last(lw *w, const char *a, const char *b, const char **out)
{
    pl_nid id;
    PL_RETURN_IF_ERROR(lw_node(w, "Concat", (const char *[]){a, b}, 2, out, &id));
    return pl_graph_attr_int(w->g, id, "axis", -1);
}

/* RotaryEmbedding 23: the rotation of the op's reference algorithm, on
 * [B, S, heads, size] (3-D input reshaped by num_heads, 4-D transposed),
 * halves or interleaved pairs, a partial rotary_embedding_dim passing the
 * rest through, caches gathered by position_ids when given. */
static pl_status *lw_rotary(lw *w)
{
    const char *x = lw_input(w, 0), *cc = lw_input(w, 1), *sc = lw_input(w, 2);
    const char *pos = lw_input(w, 3);
    const pl_graph_tensor *xt = lw_tensor(w, x);
    if (xt == NULL || (xt->ndim != 3 && xt->ndim != 4))
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "X must be 3-D or 4-D");
    int32_t r = xt->ndim;
    int64_t heads = lw_attr_i(w, "num_heads", 0), d;
    if (r == 3) {
        if (heads <= 0 || xt->dims[2] < 0 || xt->dims[2] % heads != 0)
            return lw_error(w, PL_CODE_INVALID_ARGUMENT, "3-D input needs num_heads dividing a "
                                                         "known hidden size");
        d = xt->dims[2] / heads;
    } else {
        d = xt->dims[3];
        if (d < 0)
            return lw_error(w, PL_CODE_UNSUPPORTED, "the head size must be known");
    }
    int64_t rd = lw_attr_i(w, "rotary_embedding_dim", 0);
    if (rd <= 0)
        rd = d;
    if (rd > d || rd % 2 != 0)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "rotary_embedding_dim %lld for a head size "
                                                     "of %lld",
                        (long long)rd, (long long)d);
    bool interleaved = lw_attr_i(w, "interleaved", 0) != 0;
    static const int64_t swap12[4] = {0, 2, 1, 3};
    const char *x4, *t;
    if (r == 3) {
        PL_RETURN_IF_ERROR(lw_i64s(w, "heads", (const int64_t[]){0, 0, heads, -1}, 4, &t));
        PL_RETURN_IF_ERROR(lw_binary(w, "Reshape", x, t, &x4));
    } else {
        PL_RETURN_IF_ERROR(lw_perm(w, x, swap12, 4, &x4));
    }
    const char *xr = x4, *xp = NULL;
    if (rd < d) {
        PL_RETURN_IF_ERROR(lw_slice_step(w, x4, 0, rd, 1, &xr));
        PL_RETURN_IF_ERROR(lw_slice_step(w, x4, rd, d, 1, &xp));
    }
    const char *cs[2] = {cc, sc};
    for (int k = 0; k < 2; k++) {
        if (pos[0] != '\0')
            PL_RETURN_IF_ERROR(lw_binary(w, "Gather", cs[k], pos, &cs[k]));
        PL_RETURN_IF_ERROR(lw_unsqueeze(w, cs[k], (const int64_t[]){2}, 1, &cs[k]));
    }
    const char *x1, *x2, *a, *b, *re, *im, *rot;
    if (interleaved) {
        PL_RETURN_IF_ERROR(lw_slice_step(w, xr, 0, rd, 2, &x1));
        PL_RETURN_IF_ERROR(lw_slice_step(w, xr, 1, rd, 2, &x2));
    } else {
        PL_RETURN_IF_ERROR(lw_slice_step(w, xr, 0, rd / 2, 1, &x1));
        PL_RETURN_IF_ERROR(lw_slice_step(w, xr, rd / 2, rd, 1, &x2));
    }
    PL_RETURN_IF_ERROR(lw_binary(w, "Mul", cs[0], x1, &a));
    PL_RETURN_IF_ERROR(lw_binary(w, "Mul", cs[1], x2, &b));
    PL_RETURN_IF_ERROR(lw_binary(w, "Sub", a, b, &re));
    PL_RETURN_IF_ERROR(lw_binary(w, "Mul", cs[1], x1, &a));
    PL_RETURN_IF_ERROR(lw_binary(w, "Mul", cs[0], x2, &b));
    PL_RETURN_IF_ERROR(lw_binary(w, "Add", a, b, &im));
    if (interleaved) {
        const char *re5, *im5, *pairs, *sh;
        PL_RETURN_IF_ERROR(lw_unsqueeze(w, re, (const int64_t[]){-1}, 1, &re5));
        PL_RETURN_IF_ERROR(lw_unsqueeze(w, im, (const int64_t[]){-1}, 1, &im5));
        PL_RETURN_IF_ERROR(lw_concat_last(w, re5, im5, &pairs));
        PL_RETURN_IF_ERROR(lw_i64s(w, "pairs", (const int64_t[]){0, 0, 0, -1}, 4, &sh));
        PL_RETURN_IF_ERROR(lw_binary(w, "Reshape", pairs, sh, &rot));
    } else {
        PL_RETURN_IF_ERROR(lw_concat_last(w, re, im, &rot));
    }
    if (xp != NULL)
        PL_RETURN_IF_ERROR(lw_concat_last(w, rot, xp, &rot));
    if (r == 3) {
        const char *flat;
        PL_RETURN_IF_ERROR(lw_i64s(w, "merge_heads", (const int64_t[]){0, 0, -1}, 3, &flat));
        return lw_become(w, "Reshape", (const char *[]){rot, flat}, 2);
    }
    PL_RETURN_IF_ERROR(lw_become(w, "Transpose", (const char *[]){rot}, 1));
    return pl_graph_attr_ints(w->g, w->id, "perm", swap12, 4);
}

/* ---- newer attributes ----------------------------------------------------------- */

static pl_status *lw_drop(lw *w, const char *name)
{
    pl_graph_node_remove_attr(w->g, w->id, name);
    return NULL;
}

/* Input I of the node replaced by tensor NAME. */
static pl_status *lw_set_input(lw *w, size_t i, const char *name)
{
    const pl_graph_node *n = pl_graph_get_node(w->g, w->id);
    pl_tid tids[16];
    if (n->n_inputs > PL_COUNT(tids) || i >= n->n_inputs)
        return lw_error(w, PL_CODE_INTERNAL, "input %zu of %zu", i, n->n_inputs);
    memcpy(tids, n->inputs, n->n_inputs * sizeof *tids);
    tids[i] = name[0] ? pl_graph_find_tensor(w->g, name) : PL_TID_NONE;
    return pl_graph_node_set_inputs(w->g, w->id, tids, n->n_inputs);
}

/* Resize 18's axes: its scales or sizes (one per listed axis) spread over
 * every axis of the input X (rank R): a constant when they are one (and,
 * for sizes, X's other dims are known), else a ScatterElements into ones
 * or X's Shape; the roi, read only by tf_crop_and_resize (refused),
 * goes. */
static pl_status *lw_resize_axes(lw *w, const pl_attr *axes, int32_t r, bool keep_roi)
{
    int64_t ax[PL_GRAPH_MAX_RANK];
    bool seen[PL_GRAPH_MAX_RANK] = {false};
    if (axes->kind != PL_ATTR_INTS || axes->n == 0 || axes->n > (size_t)r)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "axes: %zu values for rank %d", axes->n,
                        (int)r);
    for (size_t i = 0; i < axes->n; i++) {
        int64_t a = axes->ints[i] < 0 ? axes->ints[i] + r : axes->ints[i];
        if (a < 0 || a >= r || seen[a])
            return lw_error(w, PL_CODE_INVALID_ARGUMENT, "axes: %lld is out of range or "
                                                         "repeated",
                            (long long)axes->ints[i]);
        seen[a] = true;
        ax[i] = a;
    }
    const char *x = lw_input(w, 0), *scales = lw_input(w, 2), *sizes = lw_input(w, 3);
    const pl_graph_tensor *st = scales[0] ? lw_tensor(w, scales) : NULL;
    bool by_scales = st != NULL && st->ndim == 1 && st->dims[0] > 0;
    /* constant scales, or constant sizes with the other dims known: a
     * constant for every axis, which inference reads */
    const pl_graph_tensor *zt = sizes[0] ? lw_tensor(w, sizes) : NULL;
    const pl_graph_tensor *xt = lw_tensor(w, x);
    const pl_graph_tensor *ct = by_scales ? st : zt;
    bool known = ct != NULL && ct->data != NULL && ct->ndim == 1 &&
                 ct->dims[0] == (int64_t)axes->n;
    for (int32_t d = 0; known && !by_scales && d < r; d++)
        known = seen[d] || (xt != NULL && xt->dims[d] >= 0);
    if (known) {
        char *s = lw_slot(w);
        if (s == NULL)
            return lw_error(w, PL_CODE_INTERNAL, "too many names in one rewrite");
        float fs[PL_GRAPH_MAX_RANK];
        int64_t is[PL_GRAPH_MAX_RANK], n = r;
        for (int32_t d = 0; d < r; d++) {
            fs[d] = 1.0f;
            is[d] = by_scales ? 0 : xt->dims[d];
        }
        for (size_t i = 0; i < axes->n; i++) {
            if (by_scales)
                memcpy(&fs[ax[i]], (const char *)ct->data + i * 4, 4);
            else
                memcpy(&is[ax[i]], (const char *)ct->data + i * 8, 8);
        }
        pl_tid t;
        PL_RETURN_IF_ERROR(pl_rewrite_add_constant(
            w->g, w->id, by_scales ? "scales" : "sizes", by_scales ? PL_DTYPE_F32 : PL_DTYPE_I64,
            1, &n, by_scales ? (const void *)fs : (const void *)is, (size_t)r * (by_scales ? 4 : 8),
            &t));
        snprintf(s, LW_NAME, "%s", pl_graph_get_tensor(w->g, t)->name);
        PL_RETURN_IF_ERROR(lw_set_input(w, by_scales ? 2 : 3, s));
        return keep_roi ? NULL : lw_set_input(w, 1, "");
    }
    const char *idx, *base, *full;
    PL_RETURN_IF_ERROR(lw_i64s(w, "axes", ax, (int64_t)axes->n, &idx));
    if (by_scales) {
        char *s = lw_slot(w);
        if (s == NULL)
            return lw_error(w, PL_CODE_INTERNAL, "too many names in one rewrite");
        float ones[PL_GRAPH_MAX_RANK];
        for (int32_t i = 0; i < r; i++)
            ones[i] = 1.0f;
        int64_t n = r;
        pl_tid t;
        PL_RETURN_IF_ERROR(pl_rewrite_add_constant(w->g, w->id, "ones", PL_DTYPE_F32, 1, &n, ones,
                                                   (size_t)r * 4, &t));
        snprintf(s, LW_NAME, "%s", pl_graph_get_tensor(w->g, t)->name);
        base = s;
    } else {
        PL_RETURN_IF_ERROR(lw_unary(w, "Shape", x, &base));
    }
    pl_nid sc;
    PL_RETURN_IF_ERROR(lw_node(w, "ScatterElements",
                               (const char *[]){base, idx, by_scales ? scales : sizes}, 3, &full,
                               &sc));
    PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, sc, "axis", 0));
    PL_RETURN_IF_ERROR(lw_set_input(w, by_scales ? 2 : 3, full));
    return keep_roi ? NULL : lw_set_input(w, 1, "");
}

/* tf_crop_and_resize's roi over AXES (N starts, then N ends) as one over
 * every axis of rank R: [0, 1] on the others, which maps output i to input
 * i there. The roi must be a constant (f32 or f64). */
static pl_status *lw_resize_roi_full(lw *w, const pl_attr *axes, int32_t r)
{
    const char *roi = lw_input(w, 1);
    const pl_graph_tensor *t = roi[0] ? lw_tensor(w, roi) : NULL;
    size_t n = axes->n;
    bool f64 = t != NULL && PL_DTYPE_EQ(t->dtype, PL_DTYPE_F64);
    if (t == NULL || t->data == NULL || t->ndim != 1 || t->dims[0] != (int64_t)(2 * n) ||
        !(f64 || PL_DTYPE_EQ(t->dtype, PL_DTYPE_F32)))
        return lw_error(w, PL_CODE_UNSUPPORTED, "tf_crop_and_resize with axes needs a constant "
                                                "f32 or f64 roi of 2 x %zu values",
                        n);
    float full[2 * PL_GRAPH_MAX_RANK];
    for (int32_t d = 0; d < r; d++) {
        full[d] = 0.0f;
        full[r + d] = 1.0f;
    }
    for (size_t i = 0; i < n && i < PL_GRAPH_MAX_RANK; i++) {
        int64_t a = axes->ints[i] < 0 ? axes->ints[i] + r : axes->ints[i];
        if (a < 0 || a >= r)
            return lw_error(w, PL_CODE_INVALID_ARGUMENT, "axes: %lld is out of range",
                            (long long)axes->ints[i]);
        for (int k = 0; k < 2; k++) {
            size_t at = i + (size_t)k * n;
            double v;
            if (f64) {
                memcpy(&v, (const char *)t->data + at * 8, 8);
            } else {
                float f;
                memcpy(&f, (const char *)t->data + at * 4, 4);
                v = f;
            }
            full[a + k * r] = (float)v;
        }
    }
    char *name = lw_slot(w);
    if (name == NULL)
        return lw_error(w, PL_CODE_INTERNAL, "too many names in one rewrite");
    int64_t len = 2 * (int64_t)r;
    pl_tid ft;
    PL_RETURN_IF_ERROR(pl_rewrite_add_constant(w->g, w->id, "roi", PL_DTYPE_F32, 1, &len, full,
                                               (size_t)len * 4, &ft));
    snprintf(name, LW_NAME, "%s", pl_graph_get_tensor(w->g, ft)->name);
    return lw_set_input(w, 1, name);
}

/* Resize 18's keep_aspect_ratio_policy (not_larger / not_smaller) with
 * sizes: one scale for the resized axes, the smallest (largest) of
 * size / input, the outputs round(scale x input) and the coordinates at
 * that scale. Rewritten as constant scales for every axis (1 on the others)
 * where the sizes are constants and the input's dims known, and the
 * rounded sizes are the ones scales give (floor); else refused. */
static pl_status *lw_resize_aspect(lw *w, const char *policy)
{
    const pl_graph_tensor *xt = lw_tensor(w, lw_input(w, 0));
    const pl_graph_tensor *zt = lw_tensor(w, lw_input(w, 3));
    if (strcmp(policy, "not_larger") != 0 && strcmp(policy, "not_smaller") != 0)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "keep_aspect_ratio_policy '%s'; stretch, "
                                                     "not_larger or not_smaller expected",
                        policy);
    if (xt == NULL || zt == NULL || zt->data == NULL || zt->ndim != 1 || xt->ndim <= 0)
        return lw_error(w, PL_CODE_UNSUPPORTED, "keep_aspect_ratio_policy '%s' needs constant "
                                                "sizes and an input of known rank",
                        policy);
    int32_t r = xt->ndim;
    int64_t ax[PL_GRAPH_MAX_RANK];
    size_t n = (size_t)zt->dims[0];
    const pl_attr *axes = lw_attr(w, "axes");
    if (axes != NULL && (axes->kind != PL_ATTR_INTS || axes->n != n))
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "axes and sizes differ in length");
    if (axes == NULL && n != (size_t)r)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "sizes has %zu values for rank %d", n,
                        (int)r);
    double scale = 0;
    for (size_t i = 0; i < n; i++) {
        ax[i] = axes != NULL ? (axes->ints[i] < 0 ? axes->ints[i] + r : axes->ints[i])
                             : (int64_t)i;
        int64_t size;
        memcpy(&size, (const char *)zt->data + i * 8, 8);
        if (ax[i] < 0 || ax[i] >= r || xt->dims[ax[i]] <= 0 || size <= 0)
            return lw_error(w, PL_CODE_UNSUPPORTED, "keep_aspect_ratio_policy '%s' needs the "
                                                    "resized dims known and sizes positive",
                            policy);
        double f = (double)size / (double)xt->dims[ax[i]];
        if (i == 0 || (policy[4] == 'l' ? f < scale : f > scale))
            scale = f;
    }
    float fs[PL_GRAPH_MAX_RANK];
    for (int32_t d = 0; d < r; d++)
        fs[d] = 1.0f;
    for (size_t i = 0; i < n; i++) {
        double in = (double)xt->dims[ax[i]], want = floor(scale * in + 0.5);
        fs[ax[i]] = (float)scale;
        if (floor((double)fs[ax[i]] * in) != want)
            return lw_error(w, PL_CODE_UNSUPPORTED, "keep_aspect_ratio_policy '%s': axis %lld "
                                                    "resizes to %.0f, which no scale gives "
                                                    "with these coordinates",
                            policy, (long long)ax[i], want);
    }
    int64_t nr = r;
    pl_tid t;
    PL_RETURN_IF_ERROR(pl_rewrite_add_constant(w->g, w->id, "scales", PL_DTYPE_F32, 1, &nr, fs,
                                               (size_t)r * 4, &t));
    char *name = lw_slot(w);
    if (name == NULL)
        return lw_error(w, PL_CODE_INTERNAL, "too many names in one rewrite");
    snprintf(name, LW_NAME, "%s", pl_graph_get_tensor(w->g, t)->name);
    PL_RETURN_IF_ERROR(lw_set_input(w, 2, name));
    PL_RETURN_IF_ERROR(lw_set_input(w, 3, ""));
    return lw_drop(w, "axes");
}

/* Resize 19's half_pixel_symmetric: half_pixel shifted by
 * in / 2 x (1 - out / (scale x in)), nothing where the output size is
 * scale x input exactly: always with sizes (the scale is out / in), with
 * constant scales where every product is whole. Those become half_pixel,
 * which every module runs; the others keep the mode, which the cpu
 * module's Resize computes and other modules refuse. */
static pl_status *lw_resize_symmetric(lw *w)
{
    const char *scales = lw_input(w, 2);
    const pl_graph_tensor *st = scales[0] != '\0' ? lw_tensor(w, scales) : NULL;
    if (st != NULL && st->ndim == 1 && st->dims[0] > 0) {
        const pl_graph_tensor *xt = lw_tensor(w, lw_input(w, 0));
        bool whole = st->data != NULL && xt != NULL && xt->ndim == st->dims[0];
        for (int32_t d = 0; whole && d < xt->ndim; d++) {
            float f;
            memcpy(&f, (const char *)st->data + (size_t)d * 4, 4);
            double p = (double)f * (double)xt->dims[d];
            whole = xt->dims[d] >= 0 && p == floor(p);
        }
        if (!whole)
            return NULL; /* the mode stays: the cpu module's Resize computes it */
    }
    pl_graph_node_remove_attr(w->g, w->id, "coordinate_transformation_mode");
    return pl_graph_attr_string(w->g, w->id, "coordinate_transformation_mode", "half_pixel",
                                strlen("half_pixel"));
}

static pl_status *lw_resize(lw *w)
{
    const char *policy = lw_attr_s(w, "keep_aspect_ratio_policy", "stretch");
    if (strcmp(policy, "stretch") != 0 && lw_input(w, 3)[0] != '\0')
        PL_RETURN_IF_ERROR(lw_resize_aspect(w, policy));
    const pl_attr *axes = lw_attr(w, "axes");
    if (axes != NULL) {
        const pl_graph_tensor *x = lw_tensor(w, lw_input(w, 0));
        if (x == NULL || x->ndim < 0)
            return lw_error(w, PL_CODE_UNSUPPORTED, "axes on an input of unknown rank");
        bool all = axes->kind == PL_ATTR_INTS && axes->n == (size_t)x->ndim;
        for (size_t i = 0; all && i < axes->n; i++)
            all = axes->ints[i] == (int64_t)i || axes->ints[i] == (int64_t)i - x->ndim;
        if (!all) {
            bool crop = strcmp(lw_attr_s(w, "coordinate_transformation_mode", ""),
                               "tf_crop_and_resize") == 0;
            if (crop)
                PL_RETURN_IF_ERROR(lw_resize_roi_full(w, axes, x->ndim));
            PL_RETURN_IF_ERROR(lw_resize_axes(w, axes, x->ndim, crop));
        }
    }
    if (strcmp(lw_attr_s(w, "coordinate_transformation_mode", ""), "half_pixel_symmetric") == 0)
        PL_RETURN_IF_ERROR(lw_resize_symmetric(w));
    /* antialias (1) stays for the kernels: the cpu module's reads it, the
     * others refuse a Resize that has it */
    if (lw_attr_i(w, "antialias", 0) == 0)
        lw_drop(w, "antialias");
    lw_drop(w, "keep_aspect_ratio_policy");
    return lw_drop(w, "axes");
}

/* The value of constant NAME: an initializer's data, or the value attribute
 * of the Constant node writing it (which folding has not turned into data
 * yet when the node is rewritten), as *OUT (data, dtype, rank, dims). */
static bool lw_constant(const lw *w, const char *name, pl_attr_tensor *out)
{
    const pl_graph_tensor *t = lw_tensor(w, name);
    if (t == NULL)
        return false;
    if (t->data != NULL && !t->is_input) {
        *out = (pl_attr_tensor){.dtype = t->dtype, .ndim = t->ndim, .dims = t->dims,
                                .data = (void *)t->data, .nbytes = t->nbytes};
        return true;
    }
    pl_tid id = pl_graph_find_tensor(w->g, name);
    for (size_t k = 0; k < pl_graph_node_count(w->g); k++) {
        const pl_graph_node *p = pl_graph_get_node(w->g, (pl_nid)k);
        if (p == NULL || p->n_outputs != 1 || p->outputs[0] != id || strcmp(p->op, "Constant") != 0)
            continue;
        const pl_attr *a = pl_graph_node_attr(p, "value");
        if (a == NULL || a->kind != PL_ATTR_TENSOR || a->tensor == NULL || a->tensor->data == NULL)
            return false;
        *out = *a->tensor;
        return true;
    }
    return false;
}

/* The one integer (i32 or i64, any shape of one element) constant NAME
 * holds (lw_constant). */
static bool lw_constant_int(const lw *w, const char *name, int64_t *out)
{
    pl_attr_tensor c;
    if (!lw_constant(w, name, &c))
        return false;
    if (PL_DTYPE_EQ(c.dtype, PL_DTYPE_I64) && c.nbytes == 8) {
        memcpy(out, c.data, 8);
        return true;
    }
    int32_t v;
    if (PL_DTYPE_EQ(c.dtype, PL_DTYPE_I32) && c.nbytes == 4) {
        memcpy(&v, c.data, 4);
        *out = v;
        return true;
    }
    return false;
}

/* DFT 20: the axis (by default -2, the last signal axis) became input 2;
 * as a constant it goes back to 17's attribute. */
static pl_status *lw_dft(lw *w)
{
    const char *ax = lw_input(w, 2);
    int64_t axis = -2;
    if (ax[0] == '\0' && lw_attr(w, "axis") != NULL)
        return NULL; /* lowered already */
    if (ax[0] != '\0' && !lw_constant_int(w, ax, &axis))
        return lw_error(w, PL_CODE_UNSUPPORTED, "the axis '%s' must be a constant", ax);
    const pl_graph_node *n = pl_graph_get_node(w->g, w->id);
    if (n->n_inputs > 2) {
        pl_tid tids[2] = {n->inputs[0], n->inputs[1]};
        PL_RETURN_IF_ERROR(pl_graph_node_set_inputs(w->g, w->id, tids, 2));
    }
    return pl_graph_attr_int(w->g, w->id, "axis", axis);
}

static pl_status *lw_grid_sample(lw *w)
{
    const pl_graph_tensor *x = lw_tensor(w, lw_input(w, 0));
    if (x != NULL && x->ndim != 4 && x->ndim != 5)
        return lw_error(w, PL_CODE_UNSUPPORTED, "a GridSample of rank %d (4-D and 5-D only: "
                                                "N, C, [D,] H, W)",
                        (int)x->ndim);
    const char *mode = lw_attr_s(w, "mode", "linear");
    /* 16's names are taken too: ONNX's own tests of version 22 use them */
    const char *old = strcmp(mode, "linear") == 0 || strcmp(mode, "bilinear") == 0 ? "bilinear"
                      : strcmp(mode, "cubic") == 0 || strcmp(mode, "bicubic") == 0 ? "bicubic"
                      : strcmp(mode, "nearest") == 0                               ? "nearest"
                                                                                   : NULL;
    if (old == NULL)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "mode '%s'; linear, cubic or nearest "
                                                     "expected",
                        mode);
    pl_graph_node_remove_attr(w->g, w->id, "mode");
    return pl_graph_attr_string(w->g, w->id, "mode", old, strlen(old));
}

/* CenterCropPad 18 as ONNX's function body computes it: on each of the
 * axes (all by default), a dim shorter than the target is padded with
 * zeros, half before (rounded down) and the rest after, then a longer one
 * is cropped to a centred window, (dim - target) / 2 from its start. The
 * shape input may be i32 or i64; the rank of the input must be known. */
static pl_status *lw_center_crop_pad(lw *w)
{
    const char *x = lw_input(w, 0), *target = lw_input(w, 1);
    const pl_graph_tensor *xt = lw_tensor(w, x), *tt = lw_tensor(w, target);
    if (xt == NULL || xt->ndim < 0)
        return lw_error(w, PL_CODE_UNSUPPORTED, "the input's rank must be known");
    int64_t r = xt->ndim, axes[PL_GRAPH_MAX_RANK], n_axes = 0;
    const pl_attr *a = lw_attr(w, "axes");
    if (a != NULL && a->kind == PL_ATTR_INTS) {
        if (a->n > (size_t)r)
            return lw_error(w, PL_CODE_INVALID_ARGUMENT, "%zu axes for an input of rank %lld",
                            a->n, (long long)r);
        for (size_t i = 0; i < a->n; i++) {
            int64_t ax = a->ints[i] < 0 ? a->ints[i] + r : a->ints[i];
            if (ax < 0 || ax >= r)
                return lw_error(w, PL_CODE_INVALID_ARGUMENT, "axis %lld outside rank %lld",
                                (long long)a->ints[i], (long long)r);
            for (int64_t j = 0; j < n_axes; j++)
                if (axes[j] == ax)
                    return lw_error(w, PL_CODE_INVALID_ARGUMENT, "axis %lld given twice",
                                    (long long)a->ints[i]);
            axes[n_axes++] = ax;
        }
    } else {
        for (int64_t i = 0; i < r; i++)
            axes[n_axes++] = i;
    }
    if (tt != NULL && tt->ndim == 1 && tt->dims[0] >= 0 && tt->dims[0] != n_axes)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "shape has %lld values for %lld axes",
                        (long long)tt->dims[0], (long long)n_axes);
    if (tt != NULL && !PL_DTYPE_EQ(tt->dtype, PL_DTYPE_I64))
        PL_RETURN_IF_ERROR(lw_cast(w, target, 7, &target));
    const char *ax, *two, *dims, *wide, *pad, *left, *right, *pads, *padded, *dims2, *narrow,
        *cut, *begin, *end;
    pl_nid id;
    PL_RETURN_IF_ERROR(lw_i64s(w, "axes", axes, n_axes, &ax));
    PL_RETURN_IF_ERROR(lw_i64_scalar(w, "two", 2, &two));
    /* pad: max(dim, target) - dim, half before */
    PL_RETURN_IF_ERROR(lw_unary(w, "Shape", x, &dims));
    PL_RETURN_IF_ERROR(lw_binary(w, "Gather", dims, ax, &dims));
    PL_RETURN_IF_ERROR(lw_binary(w, "Max", dims, target, &wide));
    PL_RETURN_IF_ERROR(lw_binary(w, "Sub", wide, dims, &pad));
    PL_RETURN_IF_ERROR(lw_binary(w, "Div", pad, two, &left));
    PL_RETURN_IF_ERROR(lw_binary(w, "Sub", pad, left, &right));
    PL_RETURN_IF_ERROR(lw_node(w, "Concat", (const char *[]){left, right}, 2, &pads, &id));
    PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, id, "axis", 0));
    PL_RETURN_IF_ERROR(lw_node(w, "Pad", (const char *[]){x, pads, "", ax}, 4, &padded, NULL));
    /* crop: a window of min(dim, target) from (dim - it) / 2 */
    PL_RETURN_IF_ERROR(lw_unary(w, "Shape", padded, &dims2));
    PL_RETURN_IF_ERROR(lw_binary(w, "Gather", dims2, ax, &dims2));
    PL_RETURN_IF_ERROR(lw_binary(w, "Min", dims2, target, &narrow));
    PL_RETURN_IF_ERROR(lw_binary(w, "Sub", dims2, narrow, &cut));
    PL_RETURN_IF_ERROR(lw_binary(w, "Div", cut, two, &begin));
    PL_RETURN_IF_ERROR(lw_binary(w, "Add", begin, narrow, &end));
    return lw_become(w, "Slice", (const char *[]){padded, begin, end, ax}, 4);
}

/* AffineGrid 20 with a constant size [N, C, H, W] (or [N, C, D, H, W]):
 * the grid of normalised output coordinates, each point (x, y[, z], 1)
 * (x along the last axis; -1 + (2i + 1) / n, or with align_corners -1 +
 * 2i / (n - 1)), a constant [points, 3 or 4], multiplied by theta^T
 * ([N, 3 or 4, 2 or 3]) and reshaped to [N, H, W, 2] ([N, D, H, W, 3]),
 * as ONNX's reference computes it. f32 theta. */
/* The constant vector NAME (lw_constant): its dtype, length and data. */
static bool lw_constant_vector(const lw *w, const char *name, pl_dtype *dtype, int64_t *n,
                               const void **data)
{
    pl_attr_tensor c;
    if (!lw_constant(w, name, &c) || c.ndim != 1)
        return false;
    *dtype = c.dtype, *n = c.dims[0], *data = c.data;
    return true;
}

static pl_status *lw_affine_grid(lw *w)
{
    const char *theta = lw_input(w, 0), *size = lw_input(w, 1);
    const pl_graph_tensor *tt = lw_tensor(w, theta);
    pl_dtype sdt;
    int64_t sn = 0;
    const void *sdata = NULL;
    if (!lw_constant_vector(w, size, &sdt, &sn, &sdata) || (sn != 4 && sn != 5) ||
        !PL_DTYPE_EQ(sdt, PL_DTYPE_I64))
        return lw_error(w, PL_CODE_UNSUPPORTED, "size must be a constant i64 [N, C, H, W] or "
                                                "[N, C, D, H, W]");
    if (tt == NULL || !PL_DTYPE_EQ(tt->dtype, PL_DTYPE_F32))
        return lw_error(w, PL_CODE_UNSUPPORTED, "theta must be f32");
    int64_t sz[5];
    int nsp = (int)sn - 2;
    memcpy(sz, sdata, (size_t)sn * sizeof(int64_t));
    int64_t points = 1;
    for (int d = 0; d < nsp; d++) {
        if (sz[d + 2] < 1 || sz[d + 2] > ((int64_t)1 << 24))
            return lw_error(w, PL_CODE_INVALID_ARGUMENT, "size[%d] is %lld", d + 2,
                            (long long)sz[d + 2]);
        points *= sz[d + 2];
    }
    if (sz[0] < 1 || points > ((int64_t)1 << 26))
        return lw_error(w, PL_CODE_UNSUPPORTED, "a grid of %lld points for %lld images",
                        (long long)points, (long long)sz[0]);
    bool align = lw_attr_i(w, "align_corners", 0) != 0;
    int64_t cols = nsp + 1;
    float *base = malloc((size_t)(points * cols) * sizeof *base);
    if (base == NULL)
        return lw_error(w, PL_CODE_OUT_OF_MEMORY, "out of memory for the base grid");
    for (int64_t p = 0; p < points; p++) {
        int64_t rest = p;
        for (int d = nsp - 1; d >= 0; d--) { /* column 0 is x, the last axis */
            int64_t n = sz[d + 2], i = rest % n;
            rest /= n;
            double c = align ? (n > 1 ? -1.0 + 2.0 * (double)i / (double)(n - 1) : -1.0)
                             : -1.0 + (2.0 * (double)i + 1.0) / (double)n;
            base[p * cols + (nsp - 1 - d)] = (float)c;
        }
        base[p * cols + nsp] = 1.0f;
    }
    char *s = lw_slot(w);
    pl_tid t;
    int64_t bdims[2] = {points, cols};
    pl_status *err = s == NULL ? lw_error(w, PL_CODE_INTERNAL, "too many names in one rewrite")
                               : pl_rewrite_add_constant(w->g, w->id, "base_grid", PL_DTYPE_F32,
                                                         2, bdims, base,
                                                         (size_t)(points * cols) * 4, &t);
    free(base);
    PL_RETURN_IF_ERROR(err);
    snprintf(s, LW_NAME, "%s", pl_graph_get_tensor(w->g, t)->name);
    const char *thetaT, *grid, *shape;
    int64_t out[5] = {sz[0]};
    for (int d = 0; d < nsp; d++)
        out[d + 1] = sz[d + 2];
    out[nsp + 1] = nsp;
    PL_RETURN_IF_ERROR(lw_perm(w, theta, (const int64_t[]){0, 2, 1}, 3, &thetaT));
    PL_RETURN_IF_ERROR(lw_binary(w, "MatMul", s, thetaT, &grid));
    PL_RETURN_IF_ERROR(lw_i64s(w, "grid_shape", out, nsp + 2, &shape));
    return lw_become(w, "Reshape", (const char *[]){grid, shape}, 2);
}

static pl_status *lw_quant(lw *w, bool quantize)
{
    if (lw_attr_i(w, "block_size", 0) != 0)
        return lw_error(w, PL_CODE_UNSUPPORTED, "block_size %lld: blocked quantisation is not "
                                                "supported",
                        (long long)lw_attr_i(w, "block_size", 0));
    if (lw_attr_i(w, "precision", 0) != 0)
        return lw_error(w, PL_CODE_UNSUPPORTED, "precision %lld is not supported",
                        (long long)lw_attr_i(w, "precision", 0));
    int64_t od = lw_attr_i(w, "output_dtype", 0);
    if (od != 0) {
        /* the type the inputs give already: the zero point's (uint8 without
         * one) for QuantizeLinear, the scale's for DequantizeLinear */
        const pl_graph_tensor *t = lw_tensor(w, lw_input(w, quantize ? 2 : 1));
        int64_t given = 2; /* uint8 */
        if (t != NULL)
            given = PL_DTYPE_EQ(t->dtype, PL_DTYPE_F32)   ? 1
                    : PL_DTYPE_EQ(t->dtype, PL_DTYPE_U8)  ? 2
                    : PL_DTYPE_EQ(t->dtype, PL_DTYPE_I8)  ? 3
                    : PL_DTYPE_EQ(t->dtype, PL_DTYPE_U16) ? 4
                    : PL_DTYPE_EQ(t->dtype, PL_DTYPE_I16) ? 5
                    : PL_DTYPE_EQ(t->dtype, PL_DTYPE_I32) ? 6
                                                          : -1;
        if (od != given)
            return lw_error(w, PL_CODE_UNSUPPORTED, "output_dtype %lld differs from the type "
                                                    "the inputs give",
                            (long long)od);
    }
    lw_drop(w, "saturate");
    lw_drop(w, "block_size");
    lw_drop(w, "precision");
    return lw_drop(w, "output_dtype");
}

/* ---- ONNX Runtime's contrib ops ------------------------------------------------
 *
 * The fused ops ONNX Runtime's transformer optimizer and model builders
 * write (domain com.microsoft; SimplifiedLayerNormalization in ai.onnx's
 * domain, where ONNX Runtime registers it) expand into the ops they fuse,
 * as the standard functions above do, so models it optimised load on every
 * backend. */

/* Gelu, FastGelu (tanh form, optional bias), BiasGelu (bias required). */
static pl_status *lw_ms_gelu(lw *w, bool tanh_form, bool bias)
{
    const char *b = bias ? lw_input(w, 1) : "";
    const char *x;
    PL_RETURN_IF_ERROR(lw_float_input(w, &x));
    if (b[0] != '\0') {
        if (w->narrow)
            PL_RETURN_IF_ERROR(lw_cast(w, b, 1, &b));
        PL_RETURN_IF_ERROR(lw_binary(w, "Add", x, b, &x));
    }
    return lw_gelu_of(w, x, tanh_form);
}

static pl_status *lw_ms_gelu_erf(lw *w) { return lw_ms_gelu(w, false, false); }
static pl_status *lw_ms_fast_gelu(lw *w) { return lw_ms_gelu(w, true, true); }
static pl_status *lw_ms_bias_gelu(lw *w) { return lw_ms_gelu(w, false, true); }

/* com.microsoft QuantizeLinear and DequantizeLinear: ONNX 13's, of any
 * opset (ONNX Runtime's quantizer writes them for 16-bit activations
 * before opset 21 allowed those), axis 1 by default; 4-bit ones are
 * refused by the schema's types. */
static pl_status *lw_ms_qdq(lw *w, const char *op)
{
    int64_t axis = lw_attr_i(w, "axis", 1);
    size_t n = pl_graph_get_node(w->g, w->id)->n_inputs;
    const char *ins[3];
    for (size_t i = 0; i < n && i < 3; i++)
        ins[i] = lw_input(w, i);
    /* an absent zero point (its name empty) is left off */
    if (n == 3 && ins[2][0] == '\0')
        n = 2;
    if (n < 2 || n > 3)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "%zu inputs (2 or 3 expected)", n);
    PL_RETURN_IF_ERROR(lw_become(w, op, ins, n));
    return pl_graph_attr_int(w->g, w->id, "axis", axis);
}

static pl_status *lw_ms_quantize(lw *w) { return lw_ms_qdq(w, "QuantizeLinear"); }
static pl_status *lw_ms_dequantize(lw *w) { return lw_ms_qdq(w, "DequantizeLinear"); }

/* QuickGelu: x * sigmoid(alpha x), alpha 1.702 by default. */
static pl_status *lw_ms_quick_gelu(lw *w)
{
    double alpha = lw_attr_f(w, "alpha", 1.702);
    const char *x, *ac, *a, *sg;
    PL_RETURN_IF_ERROR(lw_float_input(w, &x));
    PL_RETURN_IF_ERROR(lw_scalar(w, "alpha", alpha, &ac));
    PL_RETURN_IF_ERROR(lw_binary(w, "Mul", x, ac, &a));
    PL_RETURN_IF_ERROR(lw_unary(w, "Sigmoid", a, &sg));
    return lw_end(w, "Mul", x, sg);
}

/* BiasAdd: X + bias + skip. */
static pl_status *lw_ms_bias_add(lw *w)
{
    const char *x = lw_input(w, 0), *b = lw_input(w, 1), *skip = lw_input(w, 2), *t;
    PL_RETURN_IF_ERROR(lw_binary(w, "Add", x, b, &t));
    return lw_become(w, "Add", (const char *[]){t, skip}, 2);
}

/* FusedMatMul: alpha * op(A) op(B), op transposing the last two axes. */
/* transBatchA/B (what ONNX Runtime's MatmulTransposeFusion writes for a
 * Transpose that moved the first axis behind the batch axes): the input is
 * read as Transpose(perm = [1, ..., r-2, 0, r-1]), then transA/B swap its
 * last two axes; both in one Transpose. Checked against ONNX Runtime 1.32
 * on the models its ORT_ENABLE_EXTENDED level saves (vit_s, a
 * transformer encoder). */
static pl_status *lw_ms_fused_matmul(lw *w)
{
    const char *ab[2] = {lw_input(w, 0), lw_input(w, 1)};
    const char *names[2] = {"transA", "transB"}, *batch[2] = {"transBatchA", "transBatchB"};
    for (int j = 0; j < 2; j++) {
        bool trans = lw_attr_i(w, names[j], 0) != 0, tb = lw_attr_i(w, batch[j], 0) != 0;
        if (!trans && !tb)
            continue;
        const pl_graph_tensor *t = lw_tensor(w, ab[j]);
        int32_t r = t != NULL ? t->ndim : -1;
        if (r < 2 || (tb && r < 3))
            return lw_error(w, PL_CODE_UNSUPPORTED, "%s needs an input of known rank >= %d",
                            tb ? batch[j] : names[j], tb ? 3 : 2);
        int64_t perm[PL_GRAPH_MAX_RANK];
        for (int32_t d = 0; d < r; d++)
            perm[d] = d;
        if (tb) {
            for (int32_t d = 0; d < r - 2; d++)
                perm[d] = d + 1;
            perm[r - 2] = 0;
        }
        if (trans) {
            int64_t last = perm[r - 1];
            perm[r - 1] = perm[r - 2];
            perm[r - 2] = last;
        }
        PL_RETURN_IF_ERROR(lw_perm(w, ab[j], perm, r, &ab[j]));
    }
    double alpha = lw_attr_f(w, "alpha", 1.0);
    if (alpha == 1.0)
        return lw_become(w, "MatMul", ab, 2);
    const char *mm, *ac;
    PL_RETURN_IF_ERROR(lw_binary(w, "MatMul", ab[0], ab[1], &mm));
    PL_RETURN_IF_ERROR(lw_scalar(w, "alpha", alpha, &ac));
    return lw_become(w, "Mul", (const char *[]){mm, ac}, 2);
}

/* Unsqueeze of A at AXES in the graph's opset's form (an input from 13). */
static pl_status *lw_unsqueeze(lw *w, const char *a, const int64_t *axes, int64_t n,
                               const char **out)
{
    return lw_axes_op(w, "Unsqueeze", 13, a, axes, n, out);
}

/* Slice of A's last axis [FROM, TO). */
static pl_status *lw_slice_last(lw *w, const char *a, int64_t from, int64_t to, const char **out)
{
    const char *st, *en, *ax;
    PL_RETURN_IF_ERROR(lw_i64s(w, "starts", &from, 1, &st));
    PL_RETURN_IF_ERROR(lw_i64s(w, "ends", &to, 1, &en));
    PL_RETURN_IF_ERROR(lw_i64s(w, "slice_axes", (const int64_t[]){-1}, 1, &ax));
    return lw_node(w, "Slice", (const char *[]){a, st, en, ax}, 4, out, NULL);
}

/* The masks and heads of ONNX Runtime's Attention and MultiHeadAttention
 * on Q [B, S, q], K [B, L, q] and V [B, L, v] (3-D, heads of HEADS): scaled
 * (SCALE, else 1/sqrt(head size)) dot products, an additive
 * mask_filter_value (-10000) where MASK masks a key (a raw [B, L] mask of 1
 * = attend, or [B] key counts; "" for none), ATTN_BIAS added when not "",
 * the diagonal's future masked when unidirectional, softmax, times V, heads
 * merged into the node's output. BATCH is B when known (the added nodes'
 * types are not inferred yet: the caller reads it off the node's input). */
static pl_status *lw_ms_attention_core(lw *w, const char *q, const char *k, const char *v,
                                       int64_t heads, int64_t qsize, int64_t batch,
                                       const char *mask, const char *attn_bias)
{
    int64_t mask_rank = -1, mask_dim0 = -1;
    pl_dtype mask_dt = PL_DTYPE_F32;
    if (mask[0] != '\0') {
        const pl_graph_tensor *mt = lw_tensor(w, mask);
        mask_rank = mt->ndim;
        mask_dim0 = mt->ndim > 0 ? mt->dims[0] : -1;
        mask_dt = mt->dtype;
        /* [B] key counts also where B or the mask's length is not known
         * yet (a symbolic batch: EmbedLayerNormalization's mask_index);
         * ONNX Runtime's [2B] form (with start positions) is refused where
         * it shows, and at run time fails the reshape to [B, 1, 1, 1] */
        bool counts = mask_rank == 1 && (batch < 0 || mask_dim0 < 0 || mask_dim0 == batch);
        if (!(mask_rank == 2 || counts))
            return lw_error(w, PL_CODE_UNSUPPORTED, "a mask of rank %lld: only a raw [B, L] "
                                                    "mask or [B] key counts are supported",
                            (long long)mask_rank);
    }
    double filter = lw_attr_f(w, "mask_filter_value", -10000.0);
    double scale = lw_attr_f(w, "scale", 0.0);
    if (scale == 0.0)
        scale = 1.0 / sqrt((double)(qsize / heads));
    const char *hs, *t, *q4, *kT, *v4, *sc, *scores;
    PL_RETURN_IF_ERROR(lw_i64s(w, "heads", (const int64_t[]){0, 0, heads, -1}, 4, &hs));
    static const int64_t swap12[4] = {0, 2, 1, 3};
    PL_RETURN_IF_ERROR(lw_binary(w, "Reshape", q, hs, &t));
    PL_RETURN_IF_ERROR(lw_perm(w, t, swap12, 4, &q4));
    PL_RETURN_IF_ERROR(lw_binary(w, "Reshape", k, hs, &t));
    PL_RETURN_IF_ERROR(lw_perm(w, t, (const int64_t[]){0, 2, 3, 1}, 4, &kT));
    PL_RETURN_IF_ERROR(lw_binary(w, "Reshape", v, hs, &t));
    PL_RETURN_IF_ERROR(lw_perm(w, t, swap12, 4, &v4));
    PL_RETURN_IF_ERROR(lw_scalar(w, "scale", scale, &sc));
    PL_RETURN_IF_ERROR(lw_binary(w, "Mul", q4, sc, &t));
    PL_RETURN_IF_ERROR(lw_binary(w, "MatMul", t, kT, &scores));
    if (attn_bias[0] != '\0')
        PL_RETURN_IF_ERROR(lw_binary(w, "Add", scores, attn_bias, &scores));
    const char *zero, *fv;
    PL_RETURN_IF_ERROR(lw_scalar(w, "zero", 0.0, &zero));
    PL_RETURN_IF_ERROR(lw_scalar(w, "mask_filter", filter, &fv));
    if (mask[0] != '\0') {
        const char *keep, *bias, *b4;
        if (mask_rank == 2) { /* raw: 1 attends */
            const char *mz;
            char *s0 = lw_slot(w);
            if (s0 == NULL)
                return lw_error(w, PL_CODE_INTERNAL, "too many names in one rewrite");
            pl_tid t0;
            unsigned char zb[8] = {0};
            PL_RETURN_IF_ERROR(pl_rewrite_add_constant(w->g, w->id, "mask_zero", mask_dt, 0,
                                                       NULL, zb, pl_dtype_size(mask_dt), &t0));
            snprintf(s0, LW_NAME, "%s", pl_graph_get_tensor(w->g, t0)->name);
            mz = s0;
            PL_RETURN_IF_ERROR(lw_binary(w, "Greater", mask, mz, &keep));
        } else { /* key counts: key j is seen when j < count[b] */
            const char *cols, *cnt, *cnt2;
            PL_RETURN_IF_ERROR(lw_range_of_dim(w, kT, 3, &cols));
            pl_nid cid;
            PL_RETURN_IF_ERROR(lw_node(w, "Cast", (const char *[]){mask}, 1, &cnt, &cid));
            PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, cid, "to", 7));
            PL_RETURN_IF_ERROR(lw_unsqueeze(w, cnt, (const int64_t[]){1}, 1, &cnt2));
            PL_RETURN_IF_ERROR(lw_binary(w, "Less", cols, cnt2, &keep));
        }
        PL_RETURN_IF_ERROR(lw_node(w, "Where", (const char *[]){keep, zero, fv}, 3, &bias, NULL));
        PL_RETURN_IF_ERROR(lw_unsqueeze(w, bias, (const int64_t[]){1, 2}, 2, &b4));
        PL_RETURN_IF_ERROR(lw_binary(w, "Add", scores, b4, &scores));
    }
    if (lw_attr_i(w, "unidirectional", 0) != 0) {
        const char *bias;
        PL_RETURN_IF_ERROR(lw_causal_bias(w, q4, 2, kT, 3, zero, fv, &bias));
        PL_RETURN_IF_ERROR(lw_binary(w, "Add", scores, bias, &scores));
    }
    const char *probs, *y4, *flat;
    pl_nid sm;
    PL_RETURN_IF_ERROR(lw_node(w, "Softmax", (const char *[]){scores}, 1, &probs, &sm));
    PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, sm, "axis", -1));
    PL_RETURN_IF_ERROR(lw_binary(w, "MatMul", probs, v4, &y4));
    PL_RETURN_IF_ERROR(lw_perm(w, y4, swap12, 4, &t));
    PL_RETURN_IF_ERROR(lw_i64s(w, "merge_heads", (const int64_t[]){0, 0, -1}, 3, &flat));
    return lw_become(w, "Reshape", (const char *[]){t, flat}, 2);
}

/* Attention's and QAttention's common part: refuses inputs FIRST_UNUSED
 * on (past state and later) and the present output, and checks the input
 * X [B, S, in] and weights W [in, q + k + v] (their shapes read from XT and
 * WT, the node's own inputs, which may be quantized); *OUT_BATCH and
 * OUT_SIZES (q, k, v) for lw_ms_attention_qkv. */
static pl_status *lw_ms_attention_check(lw *w, size_t first_unused, const pl_graph_tensor *xt,
                                        const pl_graph_tensor *wtt, int64_t *out_batch,
                                        int64_t out_sizes[3])
{
    const pl_graph_node *nd = pl_graph_get_node(w->g, w->id);
    for (size_t i = first_unused; i < nd->n_inputs; i++)
        if (nd->inputs[i] != PL_TID_NONE)
            return lw_error(w, PL_CODE_UNSUPPORTED, "input %zu (%s) is not supported", i,
                            i == first_unused ? "past" : i == first_unused + 1
                                                             ? "attention_bias"
                                                             : "past_sequence_length");
    if (nd->n_outputs > 1 && nd->outputs[1] != PL_TID_NONE)
        return lw_error(w, PL_CODE_UNSUPPORTED, "output 1 (present) is not supported");
    if (lw_attr_i(w, "do_rotary", 0) != 0)
        return lw_error(w, PL_CODE_UNSUPPORTED, "do_rotary is not supported");
    if (w->version < 13)
        return lw_error(w, PL_CODE_UNSUPPORTED, "a graph of ai.onnx opset %lld (13 or later "
                                                "needed)",
                        (long long)w->version);
    int64_t heads = lw_attr_i(w, "num_heads", 0);
    if (heads <= 0)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "missing required attribute 'num_heads'");
    if (xt == NULL || wtt == NULL || xt->ndim != 3 || wtt->ndim != 2 || wtt->dims[1] < 0)
        return lw_error(w, PL_CODE_UNSUPPORTED, "an input [B, S, hidden] and weights of known "
                                                "width are required");
    *out_batch = xt->dims[0];
    const pl_attr *qs = lw_attr(w, "qkv_hidden_sizes");
    if (qs != NULL && qs->kind == PL_ATTR_INTS && qs->n == 3) {
        memcpy(out_sizes, qs->ints, 3 * sizeof *out_sizes);
    } else {
        if (wtt->dims[1] % 3 != 0)
            return lw_error(w, PL_CODE_INVALID_ARGUMENT, "weights width %lld is not 3 equal parts",
                            (long long)wtt->dims[1]);
        out_sizes[0] = out_sizes[1] = out_sizes[2] = wtt->dims[1] / 3;
    }
    if (out_sizes[0] != out_sizes[1] || out_sizes[0] % heads != 0 || out_sizes[2] % heads != 0)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "qkv_hidden_sizes do not split into %lld "
                                                     "heads",
                        (long long)heads);
    return NULL;
}

/* X times the packed weights WT plus bias B (may be ""), split into Q, K
 * and V of SIZES, then lw_ms_attention_core with MASK. */
static pl_status *lw_ms_attention_qkv(lw *w, const char *x, const char *wt, const char *b,
                                      const char *mask, int64_t batch, const int64_t sizes[3])
{
    const char *qkv, *q, *k, *v;
    PL_RETURN_IF_ERROR(lw_binary(w, "MatMul", x, wt, &qkv));
    if (b[0] != '\0')
        PL_RETURN_IF_ERROR(lw_binary(w, "Add", qkv, b, &qkv));
    PL_RETURN_IF_ERROR(lw_slice_last(w, qkv, 0, sizes[0], &q));
    PL_RETURN_IF_ERROR(lw_slice_last(w, qkv, sizes[0], sizes[0] + sizes[1], &k));
    PL_RETURN_IF_ERROR(lw_slice_last(w, qkv, sizes[0] + sizes[1], sizes[0] + sizes[1] + sizes[2],
                                     &v));
    return lw_ms_attention_core(w, q, k, v, lw_attr_i(w, "num_heads", 0), sizes[0], batch, mask,
                                "");
}

/* com.microsoft Attention (ONNX Runtime's fused BERT self-attention):
 * input [B, S, in] times packed weights [in, q + k + v] plus bias, split,
 * then lw_ms_attention_core. Past state, attention bias, rotary embedding
 * and other mask_index forms are refused. */
static pl_status *lw_ms_attention(lw *w)
{
    const char *x = lw_input(w, 0), *wt = lw_input(w, 1), *b = lw_input(w, 2);
    const char *mask = lw_input(w, 3);
    const pl_graph_tensor *xt = lw_tensor(w, x);
    int64_t batch, sizes[3];
    PL_RETURN_IF_ERROR(lw_ms_attention_check(w, 4, xt, lw_tensor(w, wt), &batch, sizes));
    if (!PL_DTYPE_EQ(xt->dtype, PL_DTYPE_F32))
        return lw_error(w, PL_CODE_UNSUPPORTED, "a float32 input is required");
    w->dtype = xt->dtype;
    return lw_ms_attention_qkv(w, x, wt, b, mask, batch, sizes);
}

static pl_status *lw_dq(lw *w, const char *x, const char *scale, const char *zp, int64_t axis,
                        const char **out);

/* com.microsoft QAttention (ONNX Runtime's quantize_dynamic of a fused
 * Attention, its BERT recipe): input (u8 or i8, its scale and zero point
 * at inputs 3 and 6), weights (i8 or u8, a scale and zero point per
 * tensor or per column at 4 and 7), a float bias, mask_index at 5: the
 * Attention above on the dequantized input and weights. (ONNX Runtime's
 * kernel multiplies the 8-bit values in integers; a float product of the
 * dequantized values differs from it by float rounding only.) */
static pl_status *lw_ms_qattention(lw *w)
{
    const char *x8 = lw_input(w, 0), *w8 = lw_input(w, 1);
    const pl_graph_tensor *ws = lw_tensor(w, lw_input(w, 4));
    bool per_column = ws != NULL && ws->ndim == 1 && ws->dims[0] != 1;
    int64_t batch, sizes[3];
    PL_RETURN_IF_ERROR(lw_ms_attention_check(w, 8, lw_tensor(w, x8), lw_tensor(w, w8), &batch,
                                             sizes));
    w->dtype = PL_DTYPE_F32;
    const char *x, *wt;
    PL_RETURN_IF_ERROR(lw_dq(w, x8, lw_input(w, 3), lw_input(w, 6), -1, &x));
    PL_RETURN_IF_ERROR(lw_dq(w, w8, lw_input(w, 4), lw_input(w, 7), per_column ? 1 : -1, &wt));
    return lw_ms_attention_qkv(w, x, wt, lw_input(w, 2), lw_input(w, 5), batch, sizes);
}

/* com.microsoft MultiHeadAttention (ONNX Runtime's unfused-weights
 * attention: Whisper, T5, Stable Diffusion): 3-D query [B, S, q], key
 * [B, L, q] and value [B, L, v], an optional packed bias [q + q + v], a
 * key_padding_mask and an attention_bias, then lw_ms_attention_core. Packed
 * or 4-D inputs, past state and the optional outputs are refused. */
/* com.microsoft RotaryEmbedding (ONNX Runtime's transformer optimizer
 * and Olive write it for Llama- and Phi-style models): ONNX's
 * RotaryEmbedding (23; lw_rotary) with the inputs in ONNX's order (X,
 * cos_cache, sin_cache, position_ids). position_ids of one value is an
 * offset: the positions offset .. offset + S - 1 for every row; a 3-D X
 * without num_heads has heads of the rotated width, 2 cos_cache's. Checked
 * equal to ONNX Runtime 1.20 in both forms of X and of the positions. */
static pl_status *lw_ms_rotary(lw *w)
{
    const char *x = lw_input(w, 0), *pos = lw_input(w, 1), *cc = lw_input(w, 2);
    const char *sc = lw_input(w, 3);
    const pl_graph_tensor *xt = lw_tensor(w, x), *pt = lw_tensor(w, pos), *ct = lw_tensor(w, cc);
    if (xt == NULL || pt == NULL || ct == NULL || sc[0] == '\0' || (xt->ndim != 3 && xt->ndim != 4) ||
        ct->ndim != 2 || pt->ndim < 0)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                        "needs input (3-D or 4-D), position_ids, cos_cache [positions, R / 2] "
                        "and sin_cache");
    if (lw_attr_i(w, "is_packed_batching", 0) != 0)
        return lw_error(w, PL_CODE_UNSUPPORTED, "is_packed_batching is not supported");
    if (xt->ndim == 3 && lw_attr_i(w, "num_heads", 0) <= 0) {
        if (ct->dims[1] <= 0 || xt->dims[2] < 0 || xt->dims[2] % (2 * ct->dims[1]) != 0)
            return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                            "a 3-D input without num_heads needs a hidden size that is a "
                            "known multiple of 2 x cos_cache's width");
        PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, w->id, "num_heads",
                                             xt->dims[2] / (2 * ct->dims[1])));
    }
    if (pt->ndim <= 1) {
        /* one offset: offset + Range(S), as [1, S] */
        const char *steps, *at;
        if (pt->ndim == 1 && pt->dims[0] != 1)
            return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                            "position_ids must be [B, S] or one offset");
        PL_RETURN_IF_ERROR(lw_range_of_dim(w, x, xt->ndim == 3 ? 1 : 2, &steps));
        PL_RETURN_IF_ERROR(lw_binary(w, "Add", steps, pos, &at));
        PL_RETURN_IF_ERROR(lw_unsqueeze(w, at, (const int64_t[]){0}, 1, &pos));
    }
    pl_tid tids[4];
    const char *order[4] = {x, cc, sc, pos};
    for (int i = 0; i < 4; i++)
        tids[i] = pl_graph_find_tensor(w->g, order[i]);
    PL_RETURN_IF_ERROR(pl_graph_node_set_inputs(w->g, w->id, tids, 4));
    pl_graph_node_remove_attr(w->g, w->id, "scale");
    pl_graph_node_remove_attr(w->g, w->id, "is_packed_batching");
    return lw_rotary(w);
}

/* GroupQueryAttention (onnxruntime-genai's and ONNX Runtime's transformer
 * optimizer's LLMs: grouped query heads, a KV cache in and out, per-row
 * lengths in seqlens_k, rotary embedding inside): ai.plinth
 * GroupQueryAttention, the same node (schema in opset_index.c; the cpu
 * module's gqa.c runs it as ONNX Runtime 1.20's CPU kernel does). The
 * inputs and attributes later versions added (position_ids,
 * attention_bias, head_sink; qk_output) are refused when used. */
static pl_status *lw_ms_gqa(lw *w)
{
    const pl_graph_node *nd = pl_graph_get_node(w->g, w->id);
    static const char *const later[] = {"position_ids", "attention_bias", "head_sink"};
    for (size_t i = 9; i < nd->n_inputs; i++)
        if (nd->inputs[i] != PL_TID_NONE)
            return lw_error(w, PL_CODE_UNSUPPORTED, "input %zu (%s) is not supported", i,
                            i < 12 ? later[i - 9] : "unknown");
    for (size_t o = 3; o < nd->n_outputs; o++)
        if (nd->outputs[o] != PL_TID_NONE)
            return lw_error(w, PL_CODE_UNSUPPORTED, "output %zu (output_qk) is not supported", o);
    if (lw_attr_i(w, "qk_output", 0) != 0)
        return lw_error(w, PL_CODE_UNSUPPORTED, "qk_output is not supported");
    if (nd->n_inputs > 9)
        PL_RETURN_IF_ERROR(pl_graph_node_set_inputs(w->g, w->id, nd->inputs, 9));
    nd = pl_graph_get_node(w->g, w->id);
    if (nd->n_outputs > 3)
        PL_RETURN_IF_ERROR(pl_graph_node_set_outputs(w->g, w->id, nd->outputs, 3));
    pl_graph_node_remove_attr(w->g, w->id, "qk_output");
    return pl_graph_node_set_op(w->g, w->id, "ai.plinth", "GroupQueryAttention");
}

static pl_status *lw_ms_mha(lw *w)
{
    const pl_graph_node *nd = pl_graph_get_node(w->g, w->id);
    for (size_t i = 6; i < nd->n_inputs; i++)
        if (nd->inputs[i] != PL_TID_NONE)
            return lw_error(w, PL_CODE_UNSUPPORTED, "input %zu (past state) is not supported", i);
    for (size_t o = 1; o < nd->n_outputs; o++)
        if (nd->outputs[o] != PL_TID_NONE)
            return lw_error(w, PL_CODE_UNSUPPORTED, "output %zu is not supported", o);
    if (w->version < 13)
        return lw_error(w, PL_CODE_UNSUPPORTED, "a graph of ai.onnx opset %lld (13 or later "
                                                "needed)",
                        (long long)w->version);
    const char *q = lw_input(w, 0), *k = lw_input(w, 1), *v = lw_input(w, 2);
    const char *b = lw_input(w, 3), *mask = lw_input(w, 4), *ab = lw_input(w, 5);
    int64_t heads = lw_attr_i(w, "num_heads", 0);
    const pl_graph_tensor *qt = lw_tensor(w, q), *kt = lw_tensor(w, k), *vt = lw_tensor(w, v);
    if (heads <= 0)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "missing required attribute 'num_heads'");
    if (qt == NULL || kt == NULL || vt == NULL || qt->ndim != 3 || kt->ndim != 3 ||
        vt->ndim != 3 || !PL_DTYPE_EQ(qt->dtype, PL_DTYPE_F32))
        return lw_error(w, PL_CODE_UNSUPPORTED, "float32 3-D query, key and value are required "
                                                "(packed and 4-D forms are not supported)");
    int64_t qsize = qt->dims[2], vsize = vt->dims[2], batch = qt->dims[0];
    if (qsize < 0 || vsize < 0 || qsize % heads != 0 || vsize % heads != 0)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "hidden sizes must be known multiples of "
                                                     "num_heads");
    w->dtype = qt->dtype;
    if (b[0] != '\0') {
        const char *bq, *bk, *bv;
        PL_RETURN_IF_ERROR(lw_slice_last(w, b, 0, qsize, &bq));
        PL_RETURN_IF_ERROR(lw_slice_last(w, b, qsize, 2 * qsize, &bk));
        PL_RETURN_IF_ERROR(lw_slice_last(w, b, 2 * qsize, 2 * qsize + vsize, &bv));
        PL_RETURN_IF_ERROR(lw_binary(w, "Add", q, bq, &q));
        PL_RETURN_IF_ERROR(lw_binary(w, "Add", k, bk, &k));
        PL_RETURN_IF_ERROR(lw_binary(w, "Add", v, bv, &v));
    }
    return lw_ms_attention_core(w, q, k, v, heads, qsize, batch, mask, ab);
}

/* Layer normalisation of S over the last axis with GAMMA and BETA ending at
 * the node: LayerNormalization, at any opset (Plinth's schema takes it from
 * 1, as ONNX Runtime registers it; before 17 the optimiser would only fuse
 * the written-out form back into it). */
static pl_status *lw_layer_norm_last(lw *w, const char *s, const char *gamma, const char *beta,
                                     int64_t r, double eps)
{
    (void)r;
    const char *ins[3] = {s, gamma, beta};
    PL_RETURN_IF_ERROR(lw_become(w, "LayerNormalization", ins, beta[0] ? 3 : 2));
    PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, w->id, "axis", -1));
    return pl_graph_attr_float(w->g, w->id, "epsilon", eps);
}

/* Copies node ID's attribute NAME (int, float, string, ints or floats)
 * onto node TO, when present. */
static pl_status *lw_copy_attr(lw *w, pl_nid to, const char *name)
{
    const pl_attr *a = lw_attr(w, name);
    if (a == NULL)
        return NULL;
    /* the values are copied out first: setting an attribute may move them */
    switch (a->kind) {
    case PL_ATTR_INT: return pl_graph_attr_int(w->g, to, name, a->i);
    case PL_ATTR_FLOAT: return pl_graph_attr_float(w->g, to, name, a->f);
    case PL_ATTR_STRING: {
        char buf[LW_NAME];
        snprintf(buf, sizeof buf, "%s", a->s);
        return pl_graph_attr_string(w->g, to, name, buf, strlen(buf));
    }
    case PL_ATTR_INTS: {
        int64_t v[2 * PL_GRAPH_MAX_RANK];
        size_t n = a->n < PL_COUNT(v) ? a->n : PL_COUNT(v);
        memcpy(v, a->ints, n * sizeof *v);
        return pl_graph_attr_ints(w->g, to, name, v, n);
    }
    case PL_ATTR_FLOATS: {
        double v[8];
        size_t n = a->n < PL_COUNT(v) ? a->n : PL_COUNT(v);
        memcpy(v, a->floats, n * sizeof *v);
        return pl_graph_attr_floats(w->g, to, name, v, n);
    }
    default:
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "attribute '%s' has an unexpected kind",
                        name);
    }
}

/* The activation of FusedConv and FusedGemm on X ending at the node:
 * ACT with its parameters (activation_params, or FusedGemm's
 * activation_alpha/beta), as ONNX Runtime's fusions write them. */
static pl_status *lw_fused_activation(lw *w, const char *x, const char *act, const double *p,
                                      size_t np)
{
    const char *lo, *hi;
    if (strcmp(act, "Relu") == 0 || strcmp(act, "Tanh") == 0 || strcmp(act, "Sigmoid") == 0)
        return lw_become(w, act, (const char *[]){x}, 1);
    if (strcmp(act, "LeakyRelu") == 0) {
        PL_RETURN_IF_ERROR(lw_become(w, act, (const char *[]){x}, 1));
        return pl_graph_attr_float(w->g, w->id, "alpha", np > 0 ? p[0] : 0.01);
    }
    if (strcmp(act, "HardSigmoid") == 0) {
        PL_RETURN_IF_ERROR(lw_become(w, act, (const char *[]){x}, 1));
        PL_RETURN_IF_ERROR(pl_graph_attr_float(w->g, w->id, "alpha", np > 0 ? p[0] : 0.2));
        return pl_graph_attr_float(w->g, w->id, "beta", np > 1 ? p[1] : 0.5);
    }
    if (strcmp(act, "Clip") == 0) {
        PL_RETURN_IF_ERROR(lw_scalar(w, "clip_min", np > 0 ? p[0] : -INFINITY, &lo));
        PL_RETURN_IF_ERROR(lw_scalar(w, "clip_max", np > 1 ? p[1] : INFINITY, &hi));
        return lw_become(w, "Clip", (const char *[]){x, lo, hi}, 3);
    }
    return lw_error(w, PL_CODE_UNSUPPORTED, "activation '%s' is not supported", act);
}

/* com.microsoft FusedConv: activation(Conv(X, W, B) + Z), Z optional. */
static pl_status *lw_ms_fused_conv(lw *w)
{
    const char *x = lw_input(w, 0), *wt = lw_input(w, 1), *b = lw_input(w, 2);
    const char *z = lw_input(w, 3), *y;
    char act[64];
    snprintf(act, sizeof act, "%s", lw_attr_s(w, "activation", ""));
    double p[4] = {0};
    size_t np = 0;
    const pl_attr *ap = lw_attr(w, "activation_params");
    if (ap != NULL && ap->kind == PL_ATTR_FLOATS)
        for (np = 0; np < ap->n && np < 4; np++)
            p[np] = ap->floats[np];
    pl_nid conv;
    PL_RETURN_IF_ERROR(lw_node(w, "Conv", (const char *[]){x, wt, b}, b[0] ? 3 : 2, &y, &conv));
    static const char *const attrs[] = {"auto_pad", "dilations", "group", "kernel_shape", "pads",
                                        "strides"};
    for (size_t k = 0; k < PL_COUNT(attrs); k++)
        PL_RETURN_IF_ERROR(lw_copy_attr(w, conv, attrs[k]));
    if (z[0] != '\0' && act[0] == '\0')
        return lw_become(w, "Add", (const char *[]){y, z}, 2);
    if (z[0] != '\0')
        PL_RETURN_IF_ERROR(lw_binary(w, "Add", y, z, &y));
    if (act[0] == '\0')
        return lw_become(w, "Identity", (const char *[]){y}, 1);
    return lw_fused_activation(w, y, act, p, np);
}

/* com.microsoft FusedGemm: activation(Gemm(A, B, C)). */
static pl_status *lw_ms_fused_gemm(lw *w)
{
    const char *a = lw_input(w, 0), *b = lw_input(w, 1), *c = lw_input(w, 2), *y;
    char act[64];
    snprintf(act, sizeof act, "%s", lw_attr_s(w, "activation", ""));
    double p[2] = {lw_attr_f(w, "activation_alpha", 0.01), lw_attr_f(w, "activation_beta", 0.5)};
    if (strcmp(act, "Clip") == 0 && lw_attr(w, "activation_alpha") == NULL)
        p[0] = -INFINITY; /* Clip's defaults: no bound */
    if (strcmp(act, "Clip") == 0 && lw_attr(w, "activation_beta") == NULL)
        p[1] = INFINITY;
    if (strcmp(act, "HardSigmoid") == 0 && lw_attr(w, "activation_alpha") == NULL)
        p[0] = 0.2;
    pl_nid gemm;
    PL_RETURN_IF_ERROR(lw_node(w, "Gemm", (const char *[]){a, b, c}, c[0] ? 3 : 2, &y, &gemm));
    static const char *const attrs[] = {"alpha", "beta", "transA", "transB"};
    for (size_t k = 0; k < PL_COUNT(attrs); k++)
        PL_RETURN_IF_ERROR(lw_copy_attr(w, gemm, attrs[k]));
    if (act[0] == '\0')
        return lw_become(w, "Identity", (const char *[]){y}, 1);
    return lw_fused_activation(w, y, act, p, 2);
}

/* SkipLayerNormalization and SkipSimplifiedLayerNormalization: s = input +
 * skip (+ bias), normalised over the last axis; output 3, when wanted, is
 * s. The mean and inverse-deviation outputs are refused. SIMPLIFIED: RMS
 * (inputs input, skip, gamma, bias), else LayerNorm (input, skip, gamma,
 * beta, bias). */
static pl_status *lw_ms_skip_norm(lw *w, bool simplified)
{
    const pl_graph_node *nd = pl_graph_get_node(w->g, w->id);
    for (size_t o = 1; o < 3 && o < nd->n_outputs; o++)
        if (nd->outputs[o] != PL_TID_NONE)
            return lw_error(w, PL_CODE_UNSUPPORTED, "output %zu (%s) is not supported", o,
                            o == 1 ? "mean" : "inv_std_var");
    char sum_name[LW_NAME] = "";
    if (nd->n_outputs > 3 && nd->outputs[3] != PL_TID_NONE)
        snprintf(sum_name, sizeof sum_name, "%s", pl_graph_get_tensor(w->g, nd->outputs[3])->name);
    const char *x = lw_input(w, 0), *skip = lw_input(w, 1), *gamma = lw_input(w, 2);
    const char *beta = simplified ? "" : lw_input(w, 3), *bias = lw_input(w, simplified ? 3 : 4);
    const pl_graph_tensor *xt = lw_tensor(w, x);
    if (xt == NULL || !PL_DTYPE_EQ(xt->dtype, PL_DTYPE_F32))
        return lw_error(w, PL_CODE_UNSUPPORTED, "only float32 input is supported");
    w->dtype = xt->dtype;
    int64_t r = xt->ndim;
    double eps = lw_attr_f(w, "epsilon", 1e-12);
    const char *s, *t;
    if (bias[0] != '\0') {
        PL_RETURN_IF_ERROR(lw_binary(w, "Add", x, skip, &t));
        s = t;
        if (sum_name[0] != '\0') { /* the last Add writes output 3 */
            PL_RETURN_IF_ERROR(lw_node(w, "Add", (const char *[]){s, bias}, 2, &t, NULL));
            pl_nid last = (pl_nid)(pl_graph_node_count(w->g) - 1);
            pl_tid o[1] = {pl_graph_find_tensor(w->g, sum_name)};
            PL_RETURN_IF_ERROR(pl_graph_node_set_outputs(w->g, last, o, 1));
            s = sum_name;
        } else {
            PL_RETURN_IF_ERROR(lw_binary(w, "Add", s, bias, &s));
        }
    } else if (sum_name[0] != '\0') {
        PL_RETURN_IF_ERROR(lw_node(w, "Add", (const char *[]){x, skip}, 2, &t, NULL));
        pl_nid last = (pl_nid)(pl_graph_node_count(w->g) - 1);
        pl_tid o[1] = {pl_graph_find_tensor(w->g, sum_name)};
        PL_RETURN_IF_ERROR(pl_graph_node_set_outputs(w->g, last, o, 1));
        s = sum_name;
    } else {
        PL_RETURN_IF_ERROR(lw_binary(w, "Add", x, skip, &s));
    }
    if (simplified) {
        const char *n;
        PL_RETURN_IF_ERROR(lw_rms(w, s, r, -1, eps, &n));
        return lw_become(w, "Mul", (const char *[]){n, gamma}, 2);
    }
    return lw_layer_norm_last(w, s, gamma, beta, r, eps);
}

static pl_status *lw_ms_skip_ln(lw *w) { return lw_ms_skip_norm(w, false); }
static pl_status *lw_ms_skip_rms(lw *w) { return lw_ms_skip_norm(w, true); }

/* Adds OP(A, B) writing output OUT_INDEX of the node (its tensor is handed
 * over; lw_become drops it from the node). */
static pl_status *lw_node_to_output(lw *w, const char *op, const char *a, const char *b,
                                    size_t out_index, const char **out)
{
    const pl_graph_node *nd = pl_graph_get_node(w->g, w->id);
    pl_tid target = nd->outputs[out_index];
    char *name = lw_slot(w);
    if (name == NULL)
        return lw_error(w, PL_CODE_INTERNAL, "too many names in one rewrite");
    snprintf(name, LW_NAME, "%s", pl_graph_get_tensor(w->g, target)->name);
    const char *tmp;
    pl_nid id;
    PL_RETURN_IF_ERROR(lw_node(w, op, (const char *[]){a, b}, b ? 2 : 1, &tmp, &id));
    PL_RETURN_IF_ERROR(pl_graph_node_set_outputs(w->g, id, &target, 1));
    *out = name;
    return NULL;
}

/* com.microsoft EmbedLayerNormalization (BERT's embeddings): word,
 * position (position_ids, else 0..S-1) and segment embeddings gathered and
 * summed, then layer-normalised; output 1, mask_index, is the mask's row
 * sums as int32 (mask_index_type 1; zeros without a mask), output 2 the sum
 * before normalising. */
static pl_status *lw_ms_embed_ln(lw *w)
{
    const pl_graph_node *nd = pl_graph_get_node(w->g, w->id);
    bool want_mask = nd->n_outputs > 1 && nd->outputs[1] != PL_TID_NONE;
    bool want_sum = nd->n_outputs > 2 && nd->outputs[2] != PL_TID_NONE;
    const char *ids = lw_input(w, 0), *seg = lw_input(w, 1), *wemb = lw_input(w, 2);
    const char *pemb = lw_input(w, 3), *semb = lw_input(w, 4), *gamma = lw_input(w, 5);
    const char *beta = lw_input(w, 6), *mask = lw_input(w, 7), *pos = lw_input(w, 8);
    if (want_mask && lw_attr_i(w, "mask_index_type", 1) != 1)
        return lw_error(w, PL_CODE_UNSUPPORTED, "mask_index_type %lld is not supported",
                        (long long)lw_attr_i(w, "mask_index_type", 1));
    const pl_graph_tensor *wt = lw_tensor(w, wemb);
    if (wt == NULL || !PL_DTYPE_EQ(wt->dtype, PL_DTYPE_F32))
        return lw_error(w, PL_CODE_UNSUPPORTED, "only float32 embeddings are supported");
    w->dtype = wt->dtype;
    const char *we, *pe, *sum;
    PL_RETURN_IF_ERROR(lw_binary(w, "Gather", wemb, ids, &we));
    if (pos[0] == '\0')
        PL_RETURN_IF_ERROR(lw_range_of_dim(w, ids, 1, &pos));
    PL_RETURN_IF_ERROR(lw_binary(w, "Gather", pemb, pos, &pe));
    if (seg[0] != '\0' && semb[0] != '\0') {
        const char *se;
        PL_RETURN_IF_ERROR(lw_binary(w, "Add", we, pe, &sum));
        PL_RETURN_IF_ERROR(lw_binary(w, "Gather", semb, seg, &se));
        if (want_sum)
            PL_RETURN_IF_ERROR(lw_node_to_output(w, "Add", sum, se, 2, &sum));
        else
            PL_RETURN_IF_ERROR(lw_binary(w, "Add", sum, se, &sum));
    } else if (want_sum) {
        PL_RETURN_IF_ERROR(lw_node_to_output(w, "Add", we, pe, 2, &sum));
    } else {
        PL_RETURN_IF_ERROR(lw_binary(w, "Add", we, pe, &sum));
    }
    if (want_mask) {
        const char *ax, *rs, *rsc;
        pl_nid rid;
        /* Without a mask ONNX Runtime's mask_index is zeros; a mask of
         * zeros (ids - ids, of ids' shape) sums to them (the transformers
         * optimizer's fusion of DistilBERT leaves it so, unused). */
        if (mask[0] == '\0')
            PL_RETURN_IF_ERROR(lw_binary(w, "Sub", ids, ids, &mask));
        PL_RETURN_IF_ERROR(lw_i64s(w, "mask_axes", (const int64_t[]){1}, 1, &ax));
        if (w->version >= 13)
            PL_RETURN_IF_ERROR(lw_node(w, "ReduceSum", (const char *[]){mask, ax}, 2, &rs, &rid));
        else {
            PL_RETURN_IF_ERROR(lw_node(w, "ReduceSum", (const char *[]){mask}, 1, &rs, &rid));
            PL_RETURN_IF_ERROR(pl_graph_attr_ints(w->g, rid, "axes", (const int64_t[]){1}, 1));
        }
        PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, rid, "keepdims", 0));
        PL_RETURN_IF_ERROR(lw_node_to_output(w, "Cast", rs, NULL, 1, &rsc));
        PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, (pl_nid)(pl_graph_node_count(w->g) - 1), "to",
                                             6));
    }
    int64_t r = lw_tensor(w, lw_input(w, 0))->ndim + 1;
    return lw_layer_norm_last(w, sum, gamma, beta, r, lw_attr_f(w, "epsilon", 1e-12));
}

/* SimplifiedLayerNormalization (ai.onnx's domain in ONNX Runtime): RMS
 * normalisation over axis.. with scale; its inv_std_var output refused. */
static pl_status *lw_ms_simplified_ln(lw *w)
{
    const pl_graph_node *nd = pl_graph_get_node(w->g, w->id);
    if (nd->n_outputs > 1 && nd->outputs[1] != PL_TID_NONE)
        return lw_error(w, PL_CODE_UNSUPPORTED, "output 1 (inv_std_var) is not supported");
    return lw_rms_norm(w);
}

/* ---- ONNX Runtime's quantized operators (QOperator format) ---------------------------
 *
 * onnxruntime.quantization.quantize_static(quant_format=QOperator) writes
 * com.microsoft QLinear* ops beside the standard QLinearConv and
 * QLinearMatMul. Each is its float op between DequantizeLinear and
 * QuantizeLinear, which is also how ONNX Runtime defines their results
 * (its kernels round the requantization as QuantizeLinear does). */

/* DequantizeLinear(X, SCALE, ZP) (ZP may be ""); AXIS >= 0 sets the axis. */
static pl_status *lw_dq(lw *w, const char *x, const char *scale, const char *zp, int64_t axis,
                        const char **out)
{
    pl_nid id;
    PL_RETURN_IF_ERROR(lw_node(w, "DequantizeLinear", (const char *[]){x, scale, zp},
                               zp[0] ? 3 : 2, out, &id));
    return axis >= 0 ? pl_graph_attr_int(w->g, id, "axis", axis) : NULL;
}

/* The node becomes QuantizeLinear(Y, SCALE, ZP). */
static pl_status *lw_q_end(lw *w, const char *y, const char *scale, const char *zp)
{
    return lw_become(w, "QuantizeLinear", (const char *[]){y, scale, zp}, zp[0] ? 3 : 2);
}

static pl_status *lw_ms_qlinear_binary(lw *w, const char *op)
{
    const char *a, *b, *y;
    PL_RETURN_IF_ERROR(lw_dq(w, lw_input(w, 0), lw_input(w, 1), lw_input(w, 2), -1, &a));
    PL_RETURN_IF_ERROR(lw_dq(w, lw_input(w, 3), lw_input(w, 4), lw_input(w, 5), -1, &b));
    PL_RETURN_IF_ERROR(lw_binary(w, op, a, b, &y));
    return lw_q_end(w, y, lw_input(w, 6), lw_input(w, 7));
}

static pl_status *lw_ms_qlinear_add(lw *w) { return lw_ms_qlinear_binary(w, "Add"); }
static pl_status *lw_ms_qlinear_mul(lw *w) { return lw_ms_qlinear_binary(w, "Mul"); }

/* X, X_scale, X_zp, Y_scale, Y_zp around a one-input op OP (its attributes
 * ATTRS copied); channels_last is refused. */
/* The node becomes the quantization of Y as ONNX Runtime's
 * quantize_value computes it: rne(y / scale + zero_point), the zero point
 * added before the rounding (QuantizeLinear adds it after, and ties then
 * fall otherwise), i.e. QuantizeLinear(Y / SCALE + float(ZP), 1, 0). */
static pl_status *lw_q_end_zp_first(lw *w, const char *y, const char *scale, const char *zp)
{
    if (zp[0] == '\0')
        return lw_q_end(w, y, scale, zp);
    const char *t, *zf, *one, *zero;
    PL_RETURN_IF_ERROR(lw_binary(w, "Div", y, scale, &t));
    PL_RETURN_IF_ERROR(lw_cast(w, zp, 1, &zf));
    PL_RETURN_IF_ERROR(lw_binary(w, "Add", t, zf, &t));
    PL_RETURN_IF_ERROR(lw_scalar(w, "one", 1.0, &one));
    PL_RETURN_IF_ERROR(lw_binary(w, "Sub", zp, zp, &zero));
    return lw_q_end(w, t, one, zero);
}

/* ZP_FIRST: the quantization rounds as lw_q_end_zp_first says. */
static pl_status *lw_ms_qlinear_unary_as(lw *w, const char *op, const char *const *attrs,
                                         size_t n_attrs, bool zp_first)
{
    if (lw_attr_i(w, "channels_last", 0) != 0)
        return lw_error(w, PL_CODE_UNSUPPORTED, "channels_last = 1 is not supported");
    const char *x, *y;
    pl_nid id;
    PL_RETURN_IF_ERROR(lw_dq(w, lw_input(w, 0), lw_input(w, 1), lw_input(w, 2), -1, &x));
    PL_RETURN_IF_ERROR(lw_node(w, op, (const char *[]){x}, 1, &y, &id));
    for (size_t k = 0; k < n_attrs; k++)
        PL_RETURN_IF_ERROR(lw_copy_attr(w, id, attrs[k]));
    if (zp_first)
        return lw_q_end_zp_first(w, y, lw_input(w, 3), lw_input(w, 4));
    return lw_q_end(w, y, lw_input(w, 3), lw_input(w, 4));
}

static pl_status *lw_ms_qlinear_unary(lw *w, const char *op, const char *const *attrs,
                                      size_t n_attrs)
{
    return lw_ms_qlinear_unary_as(w, op, attrs, n_attrs, false);
}

static pl_status *lw_ms_qlinear_sigmoid(lw *w) { return lw_ms_qlinear_unary(w, "Sigmoid", NULL, 0); }

static pl_status *lw_ms_qlinear_leaky(lw *w)
{
    static const char *const attrs[] = {"alpha"};
    return lw_ms_qlinear_unary(w, "LeakyRelu", attrs, 1);
}

static pl_status *lw_ms_qlinear_gap(lw *w)
{
    return lw_ms_qlinear_unary(w, "GlobalAveragePool", NULL, 0);
}

static pl_status *lw_ms_qlinear_avgpool(lw *w)
{
    static const char *const attrs[] = {"auto_pad", "ceil_mode", "count_include_pad",
                                        "kernel_shape", "pads", "strides"};
    /* ONNX Runtime's kernel pools the dequantized values in f32 and
     * quantizes with the zero point added before rounding */
    return lw_ms_qlinear_unary_as(w, "AveragePool", attrs, PL_COUNT(attrs), true);
}

/* QLinearWhere(condition, X, x_scale, x_zero_point, Y, y_scale,
 * y_zero_point, z_scale, z_zero_point): the static quantizer's Where in
 * the QOperator format (and what ONNX Runtime fuses a DQ -> Where -> Q
 * into), as the float Where between dequantizations and a quantization. */
static pl_status *lw_ms_qlinear_where(lw *w)
{
    const char *x, *y, *z;
    PL_RETURN_IF_ERROR(lw_dq(w, lw_input(w, 1), lw_input(w, 2), lw_input(w, 3), -1, &x));
    PL_RETURN_IF_ERROR(lw_dq(w, lw_input(w, 4), lw_input(w, 5), lw_input(w, 6), -1, &y));
    PL_RETURN_IF_ERROR(lw_node(w, "Where", (const char *[]){lw_input(w, 0), x, y}, 3, &z, NULL));
    return lw_q_end(w, z, lw_input(w, 7), lw_input(w, 8));
}

/* QLinearSoftmax(X, X_scale, X_zero_point, Y_scale, Y_zero_point): ONNX
 * Runtime's static quantizer writes one for every Softmax in its QOperator
 * format (a transformer's attention), as the float Softmax between a
 * dequantization and a quantization, like the QLinear ops above (ONNX
 * Runtime's kernel goes through a table of exponentials: results may
 * differ by a quantization step). Attribute `opset` names the Softmax it
 * stands for: before 13 the input is coerced to 2-D at axis, from 13 on
 * one axis; the axis defaults to -1 either way, as ONNX Runtime 1.32 reads
 * it (an opset-11 Softmax without an axis meant 1). A coerced Softmax in a
 * graph of 13 or later becomes Flatten, Softmax and a Reshape back; a
 * one-axis Softmax in an older graph is the same only over the last axis. */
static pl_status *lw_ms_qlinear_softmax(lw *w)
{
    const pl_attr *op_attr = lw_attr(w, "opset");
    if (op_attr == NULL || op_attr->kind != PL_ATTR_INT)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "missing required attribute 'opset'");
    int64_t opset = op_attr->i, axis = lw_attr_i(w, "axis", -1);
    const pl_graph_tensor *xt = lw_tensor(w, lw_input(w, 0));
    int64_t rank = xt != NULL ? xt->ndim : -1;
    bool last = rank > 0 && (axis == -1 || axis == rank - 1);
    bool coerced = opset < 13 && w->version >= 13 && !last;
    if (opset >= 13 && w->version < 13 && !last)
        return lw_error(w, PL_CODE_UNSUPPORTED,
                        "a Softmax of opset %lld over axis %lld (not the last) in a graph "
                        "before 13 is not supported",
                        (long long)opset, (long long)axis);
    const char *x, *in, *y, *shape;
    pl_nid id;
    PL_RETURN_IF_ERROR(lw_dq(w, lw_input(w, 0), lw_input(w, 1), lw_input(w, 2), -1, &x));
    in = x;
    if (coerced) {
        PL_RETURN_IF_ERROR(lw_node(w, "Flatten", (const char *[]){x}, 1, &in, &id));
        PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, id, "axis", axis));
        axis = -1;
    }
    PL_RETURN_IF_ERROR(lw_node(w, "Softmax", (const char *[]){in}, 1, &y, &id));
    PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, id, "axis", axis));
    if (coerced) {
        PL_RETURN_IF_ERROR(lw_unary(w, "Shape", x, &shape));
        PL_RETURN_IF_ERROR(lw_binary(w, "Reshape", y, shape, &y));
    }
    return lw_q_end(w, y, lw_input(w, 3), lw_input(w, 4));
}

/* Whether the one-value constants (scale S1, zero point Z1) and (S2, Z2)
 * are the same quantization: equal f32 scales, zero points of one dtype
 * and value (an absent zero point is a u8 0). */
static bool lw_same_qparams(const lw *w, const char *s1, const char *z1, const char *s2,
                            const char *z2)
{
    const pl_graph_tensor *a = lw_tensor(w, s1), *b = lw_tensor(w, s2);
    if (a == NULL || b == NULL || a->data == NULL || b->data == NULL ||
        !PL_DTYPE_EQ(a->dtype, PL_DTYPE_F32) || !PL_DTYPE_EQ(b->dtype, PL_DTYPE_F32) ||
        a->nbytes != 4 || b->nbytes != 4 || memcmp(a->data, b->data, 4) != 0)
        return false;
    const pl_graph_tensor *za = z1[0] ? lw_tensor(w, z1) : NULL;
    const pl_graph_tensor *zb = z2[0] ? lw_tensor(w, z2) : NULL;
    if ((z1[0] && (za == NULL || za->data == NULL || za->nbytes != 1)) ||
        (z2[0] && (zb == NULL || zb->data == NULL || zb->nbytes != 1)))
        return false;
    pl_dtype da = za ? za->dtype : PL_DTYPE_U8, db = zb ? zb->dtype : PL_DTYPE_U8;
    uint8_t va = za ? *(const uint8_t *)za->data : 0, vb = zb ? *(const uint8_t *)zb->data : 0;
    return PL_DTYPE_EQ(da, db) && va == vb;
}

/* QLinearConcat(Y_scale, Y_zp, X0, X0_scale, X0_zp, X1, ...) with axis:
 * the 8-bit Concat of the inputs, each requantized to Y's scale and zero
 * point (DequantizeLinear -> QuantizeLinear) unless it already has them,
 * in which case it is taken as it is: quantizing a dequantized value at
 * the same scale gives it back exactly, so the result is the f32 Concat's
 * between one DequantizeLinear per input and one QuantizeLinear, without
 * widening the inputs that need nothing (squeezenet_s_qop's fire modules,
 * one of whose two inputs always matches). */
static pl_status *lw_ms_qlinear_concat(lw *w)
{
    const pl_graph_node *nd = pl_graph_get_node(w->g, w->id);
    size_t n_in = nd->n_inputs;
    if (n_in < 5 || (n_in - 2) % 3 != 0 || (n_in - 2) / 3 > 32)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                        "%zu inputs: expected Y_scale, Y_zero_point, then triples", n_in);
    const char *parts[32];
    size_t n = (n_in - 2) / 3;
    const char *ys = lw_input(w, 0), *yz = lw_input(w, 1);
    for (size_t k = 0; k < n; k++) {
        const char *x = lw_input(w, 2 + 3 * k), *xs = lw_input(w, 3 + 3 * k),
                   *xz = lw_input(w, 4 + 3 * k);
        if (lw_same_qparams(w, xs, xz, ys, yz)) {
            parts[k] = x;
            continue;
        }
        const char *d;
        pl_nid id;
        PL_RETURN_IF_ERROR(lw_dq(w, x, xs, xz, -1, &d));
        PL_RETURN_IF_ERROR(lw_node(w, "QuantizeLinear", (const char *[]){d, ys, yz},
                                   yz[0] ? 3 : 2, &parts[k], &id));
    }
    const char *y;
    pl_nid id;
    PL_RETURN_IF_ERROR(lw_node(w, "Concat", parts, n, &y, &id));
    PL_RETURN_IF_ERROR(lw_copy_attr(w, id, "axis"));
    return lw_become(w, "Identity", (const char *[]){y}, 1);
}

/* QGemm(A, A_scale, A_zp, B, B_scale, B_zp, C, Y_scale, Y_zp): C is int32
 * at scale A_scale * B_scale, zero point 0; B_scale may be per output
 * column; without Y_scale the output is float. */
static pl_status *lw_ms_qgemm(lw *w)
{
    int64_t trans_b = lw_attr_i(w, "transB", 0);
    const char *a, *b, *c = "", *y, *bs = lw_input(w, 4);
    const pl_graph_tensor *bst = lw_tensor(w, bs);
    bool per_column = bst != NULL && bst->ndim == 1 && bst->dims[0] != 1;
    PL_RETURN_IF_ERROR(lw_dq(w, lw_input(w, 0), lw_input(w, 1), lw_input(w, 2), -1, &a));
    PL_RETURN_IF_ERROR(
        lw_dq(w, lw_input(w, 3), bs, lw_input(w, 5), per_column ? (trans_b ? 0 : 1) : -1, &b));
    const char *cin = lw_input(w, 6);
    if (cin[0] != '\0') {
        const char *cs;
        PL_RETURN_IF_ERROR(lw_binary(w, "Mul", lw_input(w, 1), bs, &cs));
        PL_RETURN_IF_ERROR(lw_dq(w, cin, cs, "", per_column ? 0 : -1, &c));
    }
    pl_nid id;
    PL_RETURN_IF_ERROR(lw_node(w, "Gemm", (const char *[]){a, b, c}, c[0] ? 3 : 2, &y, &id));
    static const char *const attrs[] = {"alpha", "transA", "transB"};
    for (size_t k = 0; k < PL_COUNT(attrs); k++)
        PL_RETURN_IF_ERROR(lw_copy_attr(w, id, attrs[k]));
    const char *ys = lw_input(w, 7);
    if (ys[0] == '\0')
        return lw_become(w, "Identity", (const char *[]){y}, 1);
    return lw_q_end(w, y, ys, lw_input(w, 8));
}

/* The node becomes Cast(MatMulInteger(AQ, B, AZ, BZ)) * (AS * BS) (+ BIAS,
 * when not ""), as ONNX Runtime computes MatMulIntegerToFloat: the exact
 * i32 sum times the product of the scales (B's one per column of B [K, N],
 * or one). The chain is what quantize_dynamic itself writes, so a backend
 * that runs those (onednn: an int8 matmul with the Cast, the scales and the
 * bias as post-ops) runs these too; as dequantized f32 products they were
 * f32 GEMMs. */
static pl_status *lw_dq_matmul_end(lw *w, const char *aq, const char *as, const char *az,
                                   const char *b, const char *bs, const char *bz,
                                   const char *bias)
{
    const char *acc, *f, *s, *y;
    size_t n_in = bz[0] ? 4 : az[0] ? 3 : 2;
    PL_RETURN_IF_ERROR(
        lw_node(w, "MatMulInteger", (const char *[]){aq, b, az, bz}, n_in, &acc, NULL));
    /* the float type of the scales (f32, or f16 where a model has it) */
    const pl_graph_tensor *st = lw_tensor(w, as);
    int64_t to = st != NULL ? lw_onnx_code(st->dtype) : 1;
    PL_RETURN_IF_ERROR(lw_cast(w, acc, to != 0 ? to : 1, &f));
    PL_RETURN_IF_ERROR(lw_binary(w, "Mul", as, bs, &s));
    if (bias[0] == '\0')
        return lw_become(w, "Mul", (const char *[]){f, s}, 2);
    PL_RETURN_IF_ERROR(lw_binary(w, "Mul", f, s, &y));
    return lw_become(w, "Add", (const char *[]){y, bias}, 2);
}

/* MatMulIntegerToFloat(A, B, A_scale, B_scale, A_zp, B_zp, bias): the
 * integer product of dequantized inputs, in float, plus bias. */
static pl_status *lw_ms_matmul_int_to_float(lw *w)
{
    return lw_dq_matmul_end(w, lw_input(w, 0), lw_input(w, 2), lw_input(w, 4), lw_input(w, 1),
                            lw_input(w, 3), lw_input(w, 5), lw_input(w, 6));
}

/* DynamicQuantizeMatMul(A, B, B_scale, B_zp, bias): A quantized to uint8
 * at run time (DynamicQuantizeLinear), then as MatMulIntegerToFloat. */
static pl_status *lw_ms_dyn_quant_matmul(lw *w)
{
    const char *in = lw_input(w, 0);
    char *q = lw_slot(w), *qs = lw_slot(w), *qz = lw_slot(w);
    if (q == NULL || qs == NULL || qz == NULL)
        return lw_error(w, PL_CODE_INTERNAL, "too many names in one rewrite");
    char node_name[LW_NAME];
    pl_rewrite_fresh_name(w->g, w->base, "DynamicQuantizeLinear", node_name, sizeof node_name);
    pl_rewrite_fresh_name(w->g, w->base, "a_quant", q, LW_NAME);
    pl_rewrite_fresh_name(w->g, w->base, "a_scale", qs, LW_NAME);
    pl_rewrite_fresh_name(w->g, w->base, "a_zero_point", qz, LW_NAME);
    const char *outs[3] = {q, qs, qz};
    pl_nid id;
    PL_RETURN_IF_ERROR(
        pl_graph_add_node(w->g, node_name, "DynamicQuantizeLinear", "", &in, 1, outs, 3, &id));
    return lw_dq_matmul_end(w, q, qs, qz, lw_input(w, 1), lw_input(w, 2), lw_input(w, 3),
                            lw_input(w, 4));
}

/* Reshape(A, DIMS). */
static pl_status *lw_reshape(lw *w, const char *a, const int64_t *dims, int64_t n,
                             const char **out)
{
    const char *shape;
    PL_RETURN_IF_ERROR(lw_i64s(w, "shape", dims, n, &shape));
    return lw_binary(w, "Reshape", a, shape, out);
}

/* A[..., 0:END] along AXIS (Slice with constant inputs). */
static pl_status *lw_head(lw *w, const char *a, int64_t axis, int64_t end, const char **out)
{
    const char *st, *en, *ax;
    int64_t zero = 0;
    PL_RETURN_IF_ERROR(lw_i64s(w, "starts", &zero, 1, &st));
    PL_RETURN_IF_ERROR(lw_i64s(w, "ends", &end, 1, &en));
    PL_RETURN_IF_ERROR(lw_i64s(w, "axes", &axis, 1, &ax));
    return lw_node(w, "Slice", (const char *[]){a, st, en, ax}, 4, out, NULL);
}

/* One of DynamicQuantizeLSTM's weights, Q ([D, rows, 4H], int8 or uint8)
 * with SCALE and ZP ("" when absent) one per direction ([D]) or per
 * column ([D, 4H]), dequantized and transposed to LSTM's [D, 4H, rows]. */
static pl_status *lw_dq_lstm_weight(lw *w, const char *q, const char *scale, const char *zp,
                                    const char **out)
{
    const pl_graph_tensor *qt = lw_tensor(w, q), *st = lw_tensor(w, scale);
    if (qt == NULL || st == NULL || qt->ndim != 3 || st->ndim < 1 || st->ndim > 2 ||
        st->dims[0] < 0 || (st->ndim == 2 && st->dims[1] < 0))
        return lw_error(w, PL_CODE_UNSUPPORTED, "a weight's scale must be of known shape "
                                                "[num_directions] or [num_directions, "
                                                "4*hidden_size]");
    int64_t shape[3] = {st->dims[0], 1, st->ndim == 2 ? st->dims[1] : 1};
    const char *f, *sc, *d;
    PL_RETURN_IF_ERROR(lw_cast(w, q, 1, &f));
    if (zp[0] != '\0') {
        const char *zf, *z3;
        PL_RETURN_IF_ERROR(lw_cast(w, zp, 1, &zf));
        PL_RETURN_IF_ERROR(lw_reshape(w, zf, shape, 3, &z3));
        PL_RETURN_IF_ERROR(lw_binary(w, "Sub", f, z3, &f));
    }
    PL_RETURN_IF_ERROR(lw_reshape(w, scale, shape, 3, &sc));
    PL_RETURN_IF_ERROR(lw_binary(w, "Mul", f, sc, &d));
    return lw_perm(w, d, (const int64_t[]){0, 2, 1}, 3, out);
}

/* DynamicQuantizeLSTM(X, W, R, B, sequence_lens, initial_h, initial_c, P,
 * W_scale, W_zero_point, R_scale, R_zero_point), what ONNX Runtime's
 * quantize_dynamic makes of an LSTM (ddddocr's OCR model): the node
 * becomes the float LSTM of its weights dequantized (constants: folding
 * computes them once), its attributes and three outputs kept. ONNX
 * Runtime also quantizes X and the hidden state as it runs, so results
 * differ from its by about a quantization step. */
static pl_status *lw_ms_dyn_quant_lstm(lw *w)
{
    const char *wf, *rf;
    PL_RETURN_IF_ERROR(
        lw_dq_lstm_weight(w, lw_input(w, 1), lw_input(w, 8), lw_input(w, 9), &wf));
    PL_RETURN_IF_ERROR(
        lw_dq_lstm_weight(w, lw_input(w, 2), lw_input(w, 10), lw_input(w, 11), &rf));
    pl_tid tids[8];
    size_t n_in = 3;
    for (size_t i = 0; i < 8; i++) {
        const char *name = i == 1 ? wf : i == 2 ? rf : lw_input(w, i);
        tids[i] = name[0] != '\0' ? pl_graph_find_tensor(w->g, name) : PL_TID_NONE;
        if (tids[i] != PL_TID_NONE)
            n_in = i + 1;
    }
    PL_RETURN_IF_ERROR(pl_graph_node_set_inputs(w->g, w->id, tids, n_in));
    return pl_graph_node_set_op(w->g, w->id, "", "LSTM");
}

/* The 4-bit values packed two to a byte in X (float, [D0, D1]: bytes),
 * low nibble first (HI_FIRST: high nibble first), as float [D0, 2 * D1]. */
static pl_status *lw_nibbles(lw *w, const char *x, int64_t d0, int64_t d1, bool hi_first,
                             const char **out)
{
    const char *sixteen, *hi, *lo, *t, *lo3, *hi3, *cat;
    PL_RETURN_IF_ERROR(lw_scalar(w, "sixteen", 16.0, &sixteen));
    PL_RETURN_IF_ERROR(lw_binary(w, "Div", x, sixteen, &t));
    PL_RETURN_IF_ERROR(lw_unary(w, "Floor", t, &hi));
    PL_RETURN_IF_ERROR(lw_binary(w, "Mul", hi, sixteen, &t));
    PL_RETURN_IF_ERROR(lw_binary(w, "Sub", x, t, &lo));
    int64_t d3[3] = {d0, d1, 1};
    PL_RETURN_IF_ERROR(lw_reshape(w, lo, d3, 3, &lo3));
    PL_RETURN_IF_ERROR(lw_reshape(w, hi, d3, 3, &hi3));
    pl_nid id;
    PL_RETURN_IF_ERROR(lw_node(w, "Concat",
                               hi_first ? (const char *[]){hi3, lo3} : (const char *[]){lo3, hi3},
                               2, &cat, &id));
    PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, id, "axis", 2));
    int64_t d2[2] = {d0, 2 * d1};
    return lw_reshape(w, cat, d2, 2, out);
}

/* MatMulNBits(A, B, scales, zero_points, g_idx, bias) of 4 or 8 bits: B
 * [N, blocks, block bytes] quantized per block of block_size along K, low
 * nibble first; zero points absent (2^(bits-1)), packed like B, or float.
 * The weights are dequantized by graph ops (Cast, Floor, Concat, Sub, Mul,
 * Reshape, Slice, Transpose) which constant folding runs once at load, so
 * a run is one float MatMul. f32 only; g_idx is refused. */
static pl_status *lw_ms_matmul_nbits(lw *w)
{
    int64_t k = lw_attr_i(w, "K", 0), n = lw_attr_i(w, "N", 0);
    int64_t bits = lw_attr_i(w, "bits", 4), bs = lw_attr_i(w, "block_size", 0);
    const char *a = lw_input(w, 0), *b = lw_input(w, 1), *sc = lw_input(w, 2);
    const char *zp = lw_input(w, 3), *gidx = lw_input(w, 4), *bias = lw_input(w, 5);
    if (bits != 4 && bits != 8)
        return lw_error(w, PL_CODE_UNSUPPORTED, "bits = %lld is not supported (4 or 8)",
                        (long long)bits);
    if (gidx[0] != '\0')
        return lw_error(w, PL_CODE_UNSUPPORTED, "g_idx (act-order) is not supported");
    if (w->version < 13)
        return lw_error(w, PL_CODE_UNSUPPORTED, "needs ai.onnx opset 13 or later");
    const pl_graph_tensor *at = lw_tensor(w, a), *bt = lw_tensor(w, b);
    if (at == NULL || !PL_DTYPE_EQ(at->dtype, PL_DTYPE_F32))
        return lw_error(w, PL_CODE_UNSUPPORTED, "input A must be f32");
    if (k <= 0 || n <= 0 || bs <= 0 || bs % 2 != 0)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "K, N and an even block_size are required");
    int64_t kb = (k + bs - 1) / bs, blob = bs * bits / 8;
    if (bt == NULL || bt->ndim != 3 || bt->dims[0] != n || bt->dims[1] != kb ||
        bt->dims[2] != blob)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                        "B must be [N, ceil(K / block_size), block_size * bits / 8] = "
                        "[%lld, %lld, %lld]",
                        (long long)n, (long long)kb, (long long)blob);
    const char *bf, *q, *zv, *sv, *wq, *wd, *wt, *y;
    PL_RETURN_IF_ERROR(lw_cast(w, b, 1, &bf));
    if (bits == 4) {
        int64_t flat[2] = {n * kb, blob};
        PL_RETURN_IF_ERROR(lw_reshape(w, bf, flat, 2, &bf));
        PL_RETURN_IF_ERROR(lw_nibbles(w, bf, n * kb, blob, false, &bf));
    }
    int64_t d3[3] = {n, kb, bs}, col[3] = {n, kb, 1};
    PL_RETURN_IF_ERROR(lw_reshape(w, bf, d3, 3, &q));
    const pl_graph_tensor *zt = zp[0] ? lw_tensor(w, zp) : NULL;
    if (zp[0] == '\0') {
        PL_RETURN_IF_ERROR(lw_scalar(w, "zero_point", (double)(1 << (bits - 1)), &zv));
    } else if (zt != NULL && PL_DTYPE_EQ(zt->dtype, PL_DTYPE_U8)) {
        int64_t per_row = bits == 4 ? (kb + 1) / 2 : kb, flat[2] = {n, per_row};
        const char *zf;
        PL_RETURN_IF_ERROR(lw_cast(w, zp, 1, &zf));
        PL_RETURN_IF_ERROR(lw_reshape(w, zf, flat, 2, &zf));
        if (bits == 4) {
            PL_RETURN_IF_ERROR(lw_nibbles(w, zf, n, per_row, false, &zf));
            if (2 * per_row != kb)
                PL_RETURN_IF_ERROR(lw_head(w, zf, 1, kb, &zf));
        }
        PL_RETURN_IF_ERROR(lw_reshape(w, zf, col, 3, &zv));
    } else if (zt != NULL && PL_DTYPE_EQ(zt->dtype, PL_DTYPE_F32)) {
        PL_RETURN_IF_ERROR(lw_reshape(w, zp, col, 3, &zv));
    } else {
        return lw_error(w, PL_CODE_UNSUPPORTED, "zero_points must be uint8 or f32");
    }
    PL_RETURN_IF_ERROR(lw_reshape(w, sc, col, 3, &sv));
    PL_RETURN_IF_ERROR(lw_binary(w, "Sub", q, zv, &wq));
    PL_RETURN_IF_ERROR(lw_binary(w, "Mul", wq, sv, &wd));
    int64_t rows[2] = {n, kb * bs};
    PL_RETURN_IF_ERROR(lw_reshape(w, wd, rows, 2, &wd));
    if (kb * bs != k)
        PL_RETURN_IF_ERROR(lw_head(w, wd, 1, k, &wd));
    PL_RETURN_IF_ERROR(lw_perm(w, wd, (const int64_t[]){1, 0}, 2, &wt));
    if (bias[0] == '\0')
        return lw_become(w, "MatMul", (const char *[]){a, wt}, 2);
    PL_RETURN_IF_ERROR(lw_binary(w, "MatMul", a, wt, &y));
    return lw_become(w, "Add", (const char *[]){y, bias}, 2);
}

/* ---- NonZero and Compress ------------------------------------------------------ */

/* Adds node OP of DOMAIN reading INS (N_IN) with two outputs named after
 * the node, OUT0 and OUT1 (what): their names in *OUT_A and *OUT_B. */
static pl_status *lw_node2(lw *w, const char *op, const char *domain, const char *const *ins,
                           size_t n_in, const char *out0, const char *out1, const char **out_a,
                           const char **out_b, pl_nid *out_id)
{
    char node_name[LW_NAME], *a = lw_slot(w), *b = lw_slot(w);
    if (a == NULL || b == NULL)
        return lw_error(w, PL_CODE_INTERNAL, "too many names in one rewrite");
    pl_rewrite_fresh_name(w->g, w->base, op, node_name, sizeof node_name);
    pl_rewrite_fresh_name(w->g, w->base, out0, a, LW_NAME);
    pl_rewrite_fresh_name(w->g, w->base, out1, b, LW_NAME);
    PL_RETURN_IF_ERROR(pl_graph_add_node(w->g, node_name, op, domain, ins, n_in,
                                         (const char *[]){a, b}, 2, out_id));
    *out_a = a;
    *out_b = b;
    return NULL;
}

/* The flat positions of the nonzero elements of X, ascending: an int64
 * vector of their count. Written with ops whose output shapes follow from
 * their inputs' values, so that a staged session (stage.c) plans what comes
 * after once the count is known: the count is ReduceSum(x != 0) (an int64
 * of known shape [1], computed before the stage), and the positions are
 * TopK(x != 0 as 0/1, K = count), since TopK orders equal values by lower
 * index. X is reshaped flat first; a NaN counts as nonzero (Cast to bool). */
static pl_status *lw_nonzero_flat(lw *w, const char *x, const char **out)
{
    if (w->version < 10)
        return lw_error(w, PL_CODE_UNSUPPORTED, "needs TopK with K as an input: ai.onnx opset "
                                                "10 or later");
    /* (read before any node is added: adding tensors moves the graph's) */
    const pl_graph_tensor *xt = lw_tensor(w, x);
    bool is_bool = xt != NULL && xt->dtype.code == PL_TYPE_BOOL;
    const char *flat, *nz = NULL, *f, *i, *count;
    PL_RETURN_IF_ERROR(lw_reshape(w, x, (const int64_t[]){-1}, 1, &flat));
    if (is_bool)
        nz = flat;
    else
        PL_RETURN_IF_ERROR(lw_cast(w, flat, 9, &nz));
    PL_RETURN_IF_ERROR(lw_cast(w, nz, 1, &f));
    PL_RETURN_IF_ERROR(lw_cast(w, nz, 7, &i));
    PL_RETURN_IF_ERROR(lw_axes_op(w, "ReduceSum", 13, i, (const int64_t[]){0}, 1, &count));
    const char *vals;
    pl_nid id;
    return lw_node2(w, "TopK", "", (const char *[]){f, count}, 2, "TopK_values",
                    "TopK_indices", &vals, out, &id);
}

/* NonZero(x): the flat positions unravelled by X's shape (read with Shape,
 * so a shape known only at run time works), one row per axis. */
static pl_status *lw_nonzero(lw *w)
{
    const char *x = lw_input(w, 0);
    const pl_graph_tensor *xt = lw_tensor(w, x);
    if (xt == NULL || xt->ndim < 0)
        return lw_error(w, PL_CODE_UNSUPPORTED, "the input's rank must be known");
    if (xt->ndim == 0)
        return lw_error(w, PL_CODE_UNSUPPORTED, "a 0-d input is not supported");
    int32_t r = xt->ndim;
    const char *idx;
    PL_RETURN_IF_ERROR(lw_nonzero_flat(w, x, &idx));
    if (r == 1) {
        const char *shape;
        PL_RETURN_IF_ERROR(lw_i64s(w, "shape", (const int64_t[]){1, -1}, 2, &shape));
        return lw_become(w, "Reshape", (const char *[]){idx, shape}, 2);
    }
    const char *sh, *stride, *rows[PL_GRAPH_MAX_RANK];
    PL_RETURN_IF_ERROR(lw_unary(w, "Shape", x, &sh));
    PL_RETURN_IF_ERROR(lw_i64s(w, "stride", (const int64_t[]){1}, 1, &stride));
    for (int32_t a = r - 1; a >= 0; a--) {
        const char *at, *dim, *c, *row;
        PL_RETURN_IF_ERROR(lw_i64s(w, "axis", (const int64_t[]){a}, 1, &at));
        PL_RETURN_IF_ERROR(lw_binary(w, "Gather", sh, at, &dim));
        PL_RETURN_IF_ERROR(lw_binary(w, "Div", idx, stride, &c));
        if (a > 0)
            PL_RETURN_IF_ERROR(lw_binary(w, "Mod", c, dim, &c));
        PL_RETURN_IF_ERROR(lw_reshape(w, c, (const int64_t[]){1, -1}, 2, &row));
        rows[a] = row;
        if (a > 0)
            PL_RETURN_IF_ERROR(lw_binary(w, "Mul", stride, dim, &stride));
    }
    PL_RETURN_IF_ERROR(lw_become(w, "Concat", rows, (size_t)r));
    return pl_graph_attr_int(w->g, w->id, "axis", 0);
}

/* Compress(x, condition[, axis]): a Gather of the positions where the
 * condition holds, along the axis, or of the flattened input. */
static pl_status *lw_compress(lw *w)
{
    bool has_axis = lw_attr(w, "axis") != NULL;
    int64_t a = has_axis ? lw_attr_i(w, "axis", 0) : 0;
    const char *x = lw_input(w, 0), *cond = lw_input(w, 1), *idx;
    const pl_graph_tensor *ct = lw_tensor(w, cond);
    if (ct != NULL && ct->ndim != 1)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "the condition must be 1-D (it has rank %d)",
                        (int)ct->ndim);
    PL_RETURN_IF_ERROR(lw_nonzero_flat(w, cond, &idx));
    if (!has_axis)
        PL_RETURN_IF_ERROR(lw_reshape(w, x, (const int64_t[]){-1}, 1, &x));
    PL_RETURN_IF_ERROR(lw_become(w, "Gather", (const char *[]){x, idx}, 2));
    return pl_graph_attr_int(w->g, w->id, "axis", a);
}

/* NonMaxSuppression: Plinth's padded form (ai.plinth
 * NonMaxSuppressionPadded, opset_index.c) gives the selection in rows of
 * the most it can hold and their count; a Slice of that many rows is the
 * node, its output's length known once a staged session binds the count. */
static pl_status *lw_nms(lw *w)
{
    int64_t center = lw_attr_i(w, "center_point_box", 0);
    const pl_graph_node *n = pl_graph_get_node(w->g, w->id);
    const char *ins[5];
    size_t n_in = n->n_inputs < 5 ? n->n_inputs : 5;
    for (size_t i = 0; i < n_in; i++)
        ins[i] = lw_input(w, i);
    const char *rows, *count;
    pl_nid id;
    PL_RETURN_IF_ERROR(lw_node2(w, "NonMaxSuppressionPadded", "ai.plinth", ins, n_in, "rows",
                                "count", &rows, &count, &id));
    PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, id, "center_point_box", center));
    const char *zero, *axis;
    PL_RETURN_IF_ERROR(lw_i64s(w, "start", (const int64_t[]){0}, 1, &zero));
    PL_RETURN_IF_ERROR(lw_i64s(w, "axis", (const int64_t[]){0}, 1, &axis));
    return lw_become(w, "Slice", (const char *[]){rows, zero, count, axis}, 4);
}

/* Unique: Plinth's padded form (ai.plinth UniquePadded, opset_index.c)
 * gives the unique values, first indices and counts in buffers of the most
 * there can be, inverse_indices in full, and their number; Slices of that
 * many take the node's outputs (Y along the axis, or of the flattened
 * input), their length known once a staged session binds the number. */
static pl_status *lw_unique(lw *w)
{
    bool has_axis = lw_attr(w, "axis") != NULL;
    int64_t a = has_axis ? lw_attr_i(w, "axis", 0) : 0;
    int64_t sorted = lw_attr_i(w, "sorted", 1);
    const char *x = lw_input(w, 0);
    char node_name[LW_NAME], *outs[5];
    static const char *const what[5] = {"values", "first", "inverse", "counts", "number"};
    for (int i = 0; i < 5; i++)
        if ((outs[i] = lw_slot(w)) == NULL)
            return lw_error(w, PL_CODE_INTERNAL, "too many names in one rewrite");
    pl_rewrite_fresh_name(w->g, w->base, "UniquePadded", node_name, sizeof node_name);
    for (int i = 0; i < 5; i++)
        pl_rewrite_fresh_name(w->g, w->base, what[i], outs[i], LW_NAME);
    pl_nid id;
    PL_RETURN_IF_ERROR(pl_graph_add_node(w->g, node_name, "UniquePadded", "ai.plinth",
                                         (const char *[]){x}, 1, (const char *const *)outs, 5,
                                         &id));
    PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, id, "axis", a));
    PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, id, "flat", !has_axis));
    PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, id, "sorted", sorted));
    const char *zero, *ax0, *axa;
    PL_RETURN_IF_ERROR(lw_i64s(w, "start", (const int64_t[]){0}, 1, &zero));
    PL_RETURN_IF_ERROR(lw_i64s(w, "axis", (const int64_t[]){0}, 1, &ax0));
    PL_RETURN_IF_ERROR(lw_i64s(w, "axis", (const int64_t[]){a}, 1, &axa));
    /* outputs 1..3, where the node gives them: their tensors handed over */
    const pl_graph_node *n = pl_graph_get_node(w->g, w->id);
    size_t n_out = n->n_outputs < 4 ? n->n_outputs : 4;
    for (size_t o = 1; o < n_out; o++) {
        n = pl_graph_get_node(w->g, w->id);
        pl_tid target = n->outputs[o];
        if (target == PL_TID_NONE)
            continue;
        const char *tmp;
        pl_nid nid;
        if (o == 2)
            PL_RETURN_IF_ERROR(lw_node(w, "Identity", (const char *[]){outs[2]}, 1, &tmp, &nid));
        else
            PL_RETURN_IF_ERROR(lw_node(w, "Slice", (const char *[]){outs[o], zero, outs[4], ax0},
                                       4, &tmp, &nid));
        PL_RETURN_IF_ERROR(pl_graph_node_set_outputs(w->g, nid, &target, 1));
    }
    return lw_become(w, "Slice", (const char *[]){outs[0], zero, outs[4], axa}, 4);
}

/* ---- ONNX's experimental ops (removed from ONNX 1.5, kept by ONNX Runtime) -------- */

/* Models converted from CoreML and CNTK (the model zoo's Tiny YOLOv2
 * starts with an ImageScaler) use ops ONNX 1.2-1.4 defined as
 * experimental and later removed; ONNX Runtime still runs them, as these
 * rewrites do, with its semantics. */

/* An f32 constant of DIMS (NDIM of them; 0: one dim of all) holding the
 * floats attribute NAME (*OUT_N values), or NULL in *OUT when the attribute
 * is absent. */
static pl_status *lw_ml_floats(lw *w, const char *name, int32_t ndim, const int64_t *dims,
                               size_t *out_n, const char **out)
{
    *out = NULL;
    *out_n = 0;
    const pl_attr *a = lw_attr(w, name);
    if (a == NULL)
        return NULL;
    if (a->kind != PL_ATTR_FLOATS || a->n == 0)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "attribute '%s' must be a list of floats",
                        name);
    char *slot = lw_slot(w);
    float *v = pl_calloc(a->n, sizeof *v);
    pl_status *st = slot != NULL && v != NULL
                        ? NULL
                        : lw_error(w, PL_CODE_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; st == NULL && i < a->n; i++)
        v[i] = (float)a->floats[i];
    int64_t flat = (int64_t)a->n;
    pl_tid t;
    if (st == NULL)
        st = pl_rewrite_add_constant(w->g, w->id, name, PL_DTYPE_F32, ndim ? ndim : 1,
                                     ndim ? dims : &flat, v, a->n * sizeof *v, &t);
    pl_free(v);
    if (st != NULL)
        return st;
    snprintf(slot, LW_NAME, "%s", pl_graph_get_tensor(w->g, t)->name);
    *out = slot;
    *out_n = a->n;
    return NULL;
}

/* A float attribute that ONNX Runtime requires. */
static pl_status *lw_attr_f_req(lw *w, const char *name, double *out)
{
    const pl_attr *a = lw_attr(w, name);
    if (a == NULL || a->kind != PL_ATTR_FLOAT)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "the float attribute '%s' is required",
                        name);
    *out = a->f;
    return NULL;
}

/* ImageScaler: scale * x + bias[c] on [N, C, H, W]. */
static pl_status *lw_image_scaler(lw *w)
{
    const char *x, *sc, *t;
    PL_RETURN_IF_ERROR(lw_float_input(w, &x));
    const pl_graph_tensor *xt = lw_tensor(w, x);
    int64_t c = xt != NULL && xt->ndim == 4 ? xt->dims[1] : -1;
    const pl_attr *bias = lw_attr(w, "bias");
    size_t nb = bias != NULL && bias->kind == PL_ATTR_FLOATS ? bias->n : 0;
    if (xt == NULL || xt->ndim != 4 || (bias != NULL && (c < 0 || nb != (size_t)c)))
        return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                        "needs an [N, C, H, W] input and one bias a channel (%zu for %lld)", nb,
                        (long long)c);
    PL_RETURN_IF_ERROR(lw_scalar(w, "scale", lw_attr_f(w, "scale", 1.0), &sc));
    PL_RETURN_IF_ERROR(lw_binary(w, "Mul", x, sc, &t));
    if (nb == 0)
        return lw_become(w, "Identity", (const char *[]){t}, 1);
    const char *b;
    PL_RETURN_IF_ERROR(lw_ml_floats(w, "bias", 4, (const int64_t[]){1, c, 1, 1}, &nb, &b));
    if (w->dtype.bits == 64) /* an f64 input adds an f64 bias */
        PL_RETURN_IF_ERROR(lw_cast(w, b, 11, &b));
    return lw_end(w, "Add", t, b);
}

/* Scale: scale * x. Affine: alpha * x + beta. */
static pl_status *lw_scale(lw *w)
{
    const char *x, *a;
    PL_RETURN_IF_ERROR(lw_float_input(w, &x));
    PL_RETURN_IF_ERROR(lw_scalar(w, "scale", lw_attr_f(w, "scale", 1.0), &a));
    return lw_end(w, "Mul", x, a);
}

static pl_status *lw_affine(lw *w)
{
    const char *x, *a, *b, *t;
    PL_RETURN_IF_ERROR(lw_float_input(w, &x));
    PL_RETURN_IF_ERROR(lw_scalar(w, "alpha", lw_attr_f(w, "alpha", 1.0), &a));
    PL_RETURN_IF_ERROR(lw_scalar(w, "beta", lw_attr_f(w, "beta", 0.0), &b));
    PL_RETURN_IF_ERROR(lw_binary(w, "Mul", x, a, &t));
    return lw_end(w, "Add", t, b);
}

/* ScaledTanh: alpha * tanh(beta * x); ParametricSoftplus: alpha *
 * ln(1 + exp(beta * x)). */
static pl_status *lw_scaled_act(lw *w)
{
    bool tanh_form = strcmp(w->op, "ScaledTanh") == 0;
    double alpha = 0, beta = 0;
    PL_RETURN_IF_ERROR(lw_attr_f_req(w, "alpha", &alpha));
    PL_RETURN_IF_ERROR(lw_attr_f_req(w, "beta", &beta));
    const char *x, *a, *b, *t;
    PL_RETURN_IF_ERROR(lw_float_input(w, &x));
    PL_RETURN_IF_ERROR(lw_scalar(w, "alpha", alpha, &a));
    PL_RETURN_IF_ERROR(lw_scalar(w, "beta", beta, &b));
    PL_RETURN_IF_ERROR(lw_binary(w, "Mul", x, b, &t));
    PL_RETURN_IF_ERROR(lw_unary(w, tanh_form ? "Tanh" : "Softplus", t, &t));
    return lw_end(w, "Mul", t, a);
}

/* ThresholdedRelu before opset 10 (experimental; the same op since):
 * x where x > alpha, else 0, as x * (x > alpha) (Where is opset 9's). */
static pl_status *lw_thresholded_relu_old(lw *w)
{
    const char *x, *a, *m;
    PL_RETURN_IF_ERROR(lw_float_input(w, &x));
    PL_RETURN_IF_ERROR(lw_scalar(w, "alpha", lw_attr_f(w, "alpha", 1.0), &a));
    PL_RETURN_IF_ERROR(lw_binary(w, "Greater", x, a, &m));
    PL_RETURN_IF_ERROR(lw_cast(w, m, !w->narrow && w->dtype.bits == 64 ? 11 : 1, &m));
    return lw_end(w, "Mul", x, m);
}

/* BatchNormalization with training_mode = 1 (opset 14 on): normalised by
 * the batch's own statistics, as ONNX's reference computes them: mean and
 * population variance over every axis but 1, Y = (X - mean) /
 * sqrt(var + epsilon) * scale + B; the optional running_mean and
 * running_var are input_mean * momentum + mean * (1 - momentum) (and
 * input_var likewise). timm's normalisation-free nets (ScaledStdConv2d)
 * standardise their convolutions' weights this way, from constants only:
 * folded at load. */
static pl_status *lw_bn_training(lw *w)
{
    const char *x, *mean, *d, *sq, *var, *eps, *ve, *sd, *nx, *sc, *b, *y;
    PL_RETURN_IF_ERROR(lw_float_input(w, &x));
    int32_t r = lw_tensor(w, lw_input(w, 0))->ndim;
    if (r < 2)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                        "training_mode needs an input of known rank 2 or more (the channels "
                        "are axis 1)");
    int64_t axes[PL_GRAPH_MAX_RANK], k = 0;
    for (int64_t a = 0; a < r; a++)
        if (a != 1)
            axes[k++] = a;
    PL_RETURN_IF_ERROR(lw_mean(w, x, axes, k, &mean));
    PL_RETURN_IF_ERROR(lw_binary(w, "Sub", x, mean, &d));
    PL_RETURN_IF_ERROR(lw_binary(w, "Mul", d, d, &sq));
    PL_RETURN_IF_ERROR(lw_mean(w, sq, axes, k, &var));
    PL_RETURN_IF_ERROR(lw_scalar(w, "epsilon", lw_attr_f(w, "epsilon", 1e-5), &eps));
    PL_RETURN_IF_ERROR(lw_binary(w, "Add", var, eps, &ve));
    PL_RETURN_IF_ERROR(lw_unary(w, "Sqrt", ve, &sd));
    PL_RETURN_IF_ERROR(lw_binary(w, "Div", d, sd, &nx));
    /* per-channel inputs [C] in f32, the running statistics first */
    const char *in[5];
    for (int i = 1; i < 5; i++) {
        in[i] = lw_input(w, (size_t)i);
        if (w->narrow)
            PL_RETURN_IF_ERROR(lw_cast(w, in[i], 1, &in[i]));
    }
    const pl_graph_node *nd = pl_graph_get_node(w->g, w->id);
    double mom = lw_attr_f(w, "momentum", 0.9);
    for (size_t o = 1; o < 3; o++) {
        if (o >= nd->n_outputs || nd->outputs[o] == PL_TID_NONE)
            continue;
        const char *cur, *m, *keep, *part, *run;
        PL_RETURN_IF_ERROR(lw_axes_op(w, "Squeeze", 13, o == 1 ? mean : var, axes, k, &cur));
        PL_RETURN_IF_ERROR(lw_scalar(w, "momentum", mom, &m));
        PL_RETURN_IF_ERROR(lw_scalar(w, "one_minus_momentum", 1.0 - mom, &keep));
        PL_RETURN_IF_ERROR(lw_binary(w, "Mul", in[o + 2], m, &part));
        PL_RETURN_IF_ERROR(lw_binary(w, "Mul", cur, keep, &cur));
        PL_RETURN_IF_ERROR(lw_binary(w, "Add", part, cur, &run));
        PL_RETURN_IF_ERROR(lw_attention_out(w, run, o, w->narrow));
        nd = pl_graph_get_node(w->g, w->id);
    }
    PL_RETURN_IF_ERROR(lw_unsqueeze(w, in[1], axes, k, &sc));
    PL_RETURN_IF_ERROR(lw_unsqueeze(w, in[2], axes, k, &b));
    PL_RETURN_IF_ERROR(lw_binary(w, "Mul", nx, sc, &y));
    return lw_end(w, "Add", y, b);
}

/* MeanVarianceNormalization before opset 9 (experimental): over N, H and
 * W of each channel (opset 9's default axes), or over the whole tensor
 * with across_channels; the mean taken away, and with normalize_variance
 * (the default) divided by the standard deviation plus 1e-9, as ONNX
 * Runtime 1.32 computes it at opsets 7 and 8 (checked on all three
 * forms). */
static pl_status *lw_mvn_old(lw *w)
{
    const char *x, *mean, *d, *sq, *var, *sd, *eps;
    PL_RETURN_IF_ERROR(lw_float_input(w, &x));
    const pl_graph_tensor *xt = lw_tensor(w, x);
    if (xt == NULL || xt->ndim != 4)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "needs an [N, C, H, W] input");
    bool across = lw_attr_i(w, "across_channels", 0) != 0;
    static const int64_t all[4] = {0, 1, 2, 3}, per_channel[3] = {0, 2, 3};
    const int64_t *ax = across ? all : per_channel;
    size_t nax = across ? 4 : 3;
    pl_nid id;
    PL_RETURN_IF_ERROR(lw_node(w, "ReduceMean", (const char *[]){x}, 1, &mean, &id));
    PL_RETURN_IF_ERROR(pl_graph_attr_ints(w->g, id, "axes", ax, nax));
    PL_RETURN_IF_ERROR(lw_binary(w, "Sub", x, mean, &d));
    if (lw_attr_i(w, "normalize_variance", 1) == 0) {
        if (!w->narrow)
            return lw_become(w, "Identity", (const char *[]){d}, 1);
        PL_RETURN_IF_ERROR(lw_become(w, "Cast", (const char *[]){d}, 1));
        return pl_graph_attr_int(w->g, w->id, "to", lw_onnx_code(w->dtype));
    }
    PL_RETURN_IF_ERROR(lw_binary(w, "Mul", d, d, &sq));
    PL_RETURN_IF_ERROR(lw_node(w, "ReduceMean", (const char *[]){sq}, 1, &var, &id));
    PL_RETURN_IF_ERROR(pl_graph_attr_ints(w->g, id, "axes", ax, nax));
    PL_RETURN_IF_ERROR(lw_unary(w, "Sqrt", var, &sd));
    PL_RETURN_IF_ERROR(lw_scalar(w, "eps", 1e-9, &eps));
    PL_RETURN_IF_ERROR(lw_binary(w, "Add", sd, eps, &sd));
    return lw_end(w, "Div", d, sd);
}

/* Crop: [N, C, H, W] cut by border (left, top, right, bottom), or to
 * scale (height, width) from the top-left border, as ONNX Runtime does. */
static pl_status *lw_crop(lw *w)
{
    const pl_attr *border = lw_attr(w, "border"), *scale = lw_attr(w, "scale");
    const char *x = lw_input(w, 0);
    const pl_graph_tensor *xt = lw_tensor(w, x);
    if (border == NULL || border->kind != PL_ATTR_INTS || border->n != 4 ||
        (scale != NULL && (scale->kind != PL_ATTR_INTS || scale->n != 2)) || xt == NULL ||
        xt->ndim != 4)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                        "needs an [N, C, H, W] input, border of 4 values (left, top, right, "
                        "bottom) and at most a scale of 2 (height, width)");
    int64_t left = border->ints[0], top = border->ints[1];
    int64_t right = border->ints[2], bottom = border->ints[3];
    int64_t h = xt->dims[2], wd = xt->dims[3];
    int64_t ends[2];
    if (scale != NULL) {
        ends[0] = top + scale->ints[0];
        ends[1] = left + scale->ints[1];
    } else {
        ends[0] = bottom > 0 ? -bottom : INT64_MAX;
        ends[1] = right > 0 ? -right : INT64_MAX;
    }
    if (left < 0 || top < 0 || right < 0 || bottom < 0 ||
        (scale != NULL && (scale->ints[0] < 0 || scale->ints[1] < 0 ||
                           (h >= 0 && ends[0] > h) || (wd >= 0 && ends[1] > wd))) ||
        (scale == NULL && ((h >= 0 && top + bottom > h) || (wd >= 0 && left + right > wd))))
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "the crop does not fit the input");
    const int64_t starts[2] = {top, left}, axes2[2] = {2, 3};
    if (w->version < 10) { /* Slice-1: starts, ends and axes are attributes */
        PL_RETURN_IF_ERROR(lw_become(w, "Slice", (const char *[]){x}, 1));
        PL_RETURN_IF_ERROR(pl_graph_attr_ints(w->g, w->id, "starts", starts, 2));
        PL_RETURN_IF_ERROR(pl_graph_attr_ints(w->g, w->id, "ends", ends, 2));
        return pl_graph_attr_ints(w->g, w->id, "axes", axes2, 2);
    }
    const char *st, *en, *axes;
    PL_RETURN_IF_ERROR(lw_i64s(w, "starts", starts, 2, &st));
    PL_RETURN_IF_ERROR(lw_i64s(w, "ends", ends, 2, &en));
    PL_RETURN_IF_ERROR(lw_i64s(w, "axes", axes2, 2, &axes));
    return lw_become(w, "Slice", (const char *[]){x, st, en, axes}, 4);
}

/* ---- ai.onnx.ml: scikit-learn's linear pieces --------------------------------------- */

/* skl2onnx writes a StandardScaler as Scaler, a LinearRegression as
 * LinearRegressor, and Normalizer, Binarizer and ArrayFeatureExtractor for
 * their namesakes; these become standard ops (the graph's ai.onnx opset
 * runs them). Integer inputs are read as f32, as ONNX-ML's float outputs
 * say. */

/* Input 0 as f32 (an integer or f64 input cast), and its last dim. */
static pl_status *lw_ml_input(lw *w, const char **x, int64_t *cols)
{
    *x = lw_input(w, 0);
    const pl_graph_tensor *t = lw_tensor(w, *x);
    if (t == NULL || t->ndim < 1)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "input 0 must have a rank of 1 or more");
    *cols = t->dims[t->ndim - 1];
    if (PL_DTYPE_EQ(t->dtype, PL_DTYPE_F32))
        return NULL;
    return lw_cast(w, *x, 1, x);
}

/* Scaler: (X - offset) * scale along the last axis (one value: every
 * column). */
static pl_status *lw_ml_scaler(lw *w)
{
    const char *x, *off, *sc, *t;
    int64_t cols;
    size_t no, ns;
    PL_RETURN_IF_ERROR(lw_ml_input(w, &x, &cols));
    PL_RETURN_IF_ERROR(lw_ml_floats(w, "offset", 0, NULL, &no, &off));
    PL_RETURN_IF_ERROR(lw_ml_floats(w, "scale", 0, NULL, &ns, &sc));
    if ((no > 1 && cols >= 0 && no != (size_t)cols) || (ns > 1 && cols >= 0 && ns != (size_t)cols))
        return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                        "offset (%zu) and scale (%zu) need one value or one a column (%lld)", no,
                        ns, (long long)cols);
    t = x;
    if (off != NULL)
        PL_RETURN_IF_ERROR(lw_binary(w, "Sub", t, off, &t));
    if (sc != NULL)
        return lw_become(w, "Mul", (const char *[]){t, sc}, 2);
    return lw_become(w, "Identity", (const char *[]){t}, 1);
}

/* The ai.onnx opset the graph's standard nodes are read at: its import,
 * or the default where it imports none (onnxmltools' XGBoost models import
 * ai.onnx.ml alone). */
static int64_t lw_ai_opset(const lw *w)
{
    int64_t v = pl_graph_opset(w->g, "");
    return v > 0 ? v : PL_OPSET_DEFAULT_VERSION;
}

/* OP(A) over AXIS (Unsqueeze, a Reduce*: axes an input from ai.onnx
 * opset SINCE, an attribute before; lw_axes_op reads the node's own
 * version, which for an ai.onnx.ml node is that domain's), with keepdims
 * KEEP unless it is -1. */
static pl_status *lw_ml_axis_op(lw *w, const char *op, int64_t since, const char *a, int64_t axis,
                                int keep, const char **out)
{
    pl_nid id;
    if (lw_ai_opset(w) >= since) {
        const char *ax;
        PL_RETURN_IF_ERROR(lw_i64s(w, "axes", &axis, 1, &ax));
        PL_RETURN_IF_ERROR(lw_node(w, op, (const char *[]){a, ax}, 2, out, &id));
    } else {
        PL_RETURN_IF_ERROR(lw_node(w, op, (const char *[]){a}, 1, out, &id));
        PL_RETURN_IF_ERROR(pl_graph_attr_ints(w->g, id, "axes", &axis, 1));
    }
    return keep < 0 ? NULL : pl_graph_attr_int(w->g, id, "keepdims", keep);
}

/* OP (a Reduce*) of A over its last axis, kept: axes as an attribute
 * below the opset that made it an input (13 for ReduceSum, 18 for the
 * others). */
static pl_status *lw_ml_reduce_last(lw *w, const char *op, const char *a, const char **out)
{
    return lw_ml_axis_op(w, op, strcmp(op, "ReduceSum") == 0 ? 13 : 18, a, -1, -1, out);
}

/* Normalizer: each row over the last axis by its MAX, L1 or L2 norm (a
 * norm of 0 by 1). */
static pl_status *lw_ml_normalizer(lw *w)
{
    const char *x, *norm = lw_attr_s(w, "norm", "MAX"), *d, *a;
    int64_t cols;
    PL_RETURN_IF_ERROR(lw_ml_input(w, &x, &cols));
    if (strcmp(norm, "MAX") == 0) {
        PL_RETURN_IF_ERROR(lw_ml_reduce_last(w, "ReduceMax", x, &d));
    } else if (strcmp(norm, "L1") == 0) {
        PL_RETURN_IF_ERROR(lw_unary(w, "Abs", x, &a));
        PL_RETURN_IF_ERROR(lw_ml_reduce_last(w, "ReduceSum", a, &d));
    } else if (strcmp(norm, "L2") == 0) {
        PL_RETURN_IF_ERROR(lw_binary(w, "Mul", x, x, &a));
        PL_RETURN_IF_ERROR(lw_ml_reduce_last(w, "ReduceSum", a, &d));
        PL_RETURN_IF_ERROR(lw_unary(w, "Sqrt", d, &d));
    } else {
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "norm '%s' is none of MAX, L1, L2", norm);
    }
    /* a row whose norm is 0 stays as it is, as in ONNX Runtime (an empty
     * document's TF-IDF row before a classifier) */
    const char *zero, *one, *is0;
    PL_RETURN_IF_ERROR(lw_scalar(w, "zero", 0.0, &zero));
    PL_RETURN_IF_ERROR(lw_scalar(w, "one", 1.0, &one));
    PL_RETURN_IF_ERROR(lw_binary(w, "Equal", d, zero, &is0));
    PL_RETURN_IF_ERROR(lw_node(w, "Where", (const char *[]){is0, one, d}, 3, &d, NULL));
    return lw_become(w, "Div", (const char *[]){x, d}, 2);
}

/* LinearRegressor: X [N, C] times coefficients [targets, C] transposed,
 * plus intercepts; post_transform NONE only (skl2onnx writes no other). */
static pl_status *lw_ml_linear_regressor(lw *w)
{
    const char *x, *wt, *b;
    int64_t cols, targets = lw_attr_i(w, "targets", 1);
    size_t nw, nb;
    PL_RETURN_IF_ERROR(lw_ml_input(w, &x, &cols));
    if (strcmp(lw_attr_s(w, "post_transform", "NONE"), "NONE") != 0)
        return lw_error(w, PL_CODE_UNSUPPORTED, "post_transform '%s' (only NONE)",
                        lw_attr_s(w, "post_transform", "NONE"));
    const pl_attr *coef = lw_attr(w, "coefficients");
    if (targets < 1 || coef == NULL || coef->kind != PL_ATTR_FLOATS ||
        coef->n % (size_t)targets != 0 || (cols >= 0 && coef->n != (size_t)(targets * cols)))
        return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                        "coefficients must hold targets (%lld) x columns (%lld) values",
                        (long long)targets, (long long)cols);
    int64_t wd[2] = {targets, (int64_t)coef->n / targets};
    PL_RETURN_IF_ERROR(lw_ml_floats(w, "coefficients", 2, wd, &nw, &wt));
    PL_RETURN_IF_ERROR(lw_ml_floats(w, "intercepts", 0, NULL, &nb, &b));
    if (b != NULL && nb != (size_t)targets)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "intercepts holds %zu values for %lld targets",
                        nb, (long long)targets);
    const char *y;
    pl_nid id;
    PL_RETURN_IF_ERROR(lw_perm(w, wt, (const int64_t[]){1, 0}, 2, &wt));
    if (b == NULL)
        return lw_become(w, "MatMul", (const char *[]){x, wt}, 2);
    PL_RETURN_IF_ERROR(lw_node(w, "MatMul", (const char *[]){x, wt}, 2, &y, &id));
    return lw_become(w, "Add", (const char *[]){y, b}, 2);
}

/* Binarizer: 1 where X > threshold, else 0, in X's type. */
static pl_status *lw_ml_binarizer(lw *w)
{
    const char *x = lw_input(w, 0), *th, *m;
    const pl_graph_tensor *t = lw_tensor(w, x);
    int64_t code = t != NULL ? lw_onnx_code(t->dtype) : 0;
    if (code == 0 || t->dtype.bits == 16)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "input 0 must be f32 or f64");
    w->dtype = t->dtype;
    PL_RETURN_IF_ERROR(lw_scalar(w, "threshold", lw_attr_f(w, "threshold", 0.0), &th));
    PL_RETURN_IF_ERROR(lw_binary(w, "Greater", x, th, &m));
    PL_RETURN_IF_ERROR(lw_become(w, "Cast", (const char *[]){m}, 1));
    return pl_graph_attr_int(w->g, w->id, "to", code);
}

/* ArrayFeatureExtractor: X's last axis at the indices Y, read as a list
 * (ONNX Runtime's shape: X's dims but the last, then Y's count; a 0-d Y,
 * as skl2onnx writes after a binary LinearSVC, keeps a last dim of 1). */
static pl_status *lw_ml_feature_extractor(lw *w)
{
    const char *x = lw_input(w, 0), *y = lw_input(w, 1);
    const pl_graph_tensor *xt = lw_tensor(w, x), *yt = lw_tensor(w, y);
    if (xt == NULL || xt->ndim < 1)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "input 0 must have a rank of 1 or more");
    int64_t axis = xt->ndim - 1;
    if (yt == NULL || yt->ndim != 1) {
        const int64_t minus_one = -1;
        const char *shape;
        PL_RETURN_IF_ERROR(lw_i64s(w, "flat", &minus_one, 1, &shape));
        PL_RETURN_IF_ERROR(lw_binary(w, "Reshape", y, shape, &y));
    }
    PL_RETURN_IF_ERROR(lw_become(w, "Gather", (const char *[]){x, y}, 2));
    return pl_graph_attr_int(w->g, w->id, "axis", axis);
}

/* ---- ai.onnx.ml: classifiers and tree ensembles ------------------------------------- */

/* skl2onnx writes scikit-learn's linear classifiers as LinearClassifier and
 * its forests and boosted trees as TreeEnsembleClassifier and
 * TreeEnsembleRegressor; onnxmltools writes LightGBM's and XGBoost's trees
 * so too. They become standard ops, with ONNX Runtime's reading of what the
 * spec leaves open (the two-class outputs). String class labels are
 * refused: Plinth has no string tensors. */

/* A constant of DTYPE and dims DIMS (NDIM of them) holding NBYTES of DATA. */
static pl_status *lw_const(lw *w, const char *what, pl_dtype dtype, int32_t ndim,
                           const int64_t *dims, const void *data, size_t nbytes, const char **out)
{
    char *s = lw_slot(w);
    if (s == NULL)
        return lw_error(w, PL_CODE_INTERNAL, "too many names in one rewrite");
    pl_tid t;
    PL_RETURN_IF_ERROR(pl_rewrite_add_constant(w->g, w->id, what, dtype, ndim, dims, data, nbytes,
                                               &t));
    snprintf(s, LW_NAME, "%s", pl_graph_get_tensor(w->g, t)->name);
    *out = s;
    return NULL;
}

/* A 1-D f32 constant of the N doubles V (an attribute's floats). */
static pl_status *lw_f32s(lw *w, const char *what, const double *v, size_t n, const char **out)
{
    float *f = pl_calloc(n ? n : 1, sizeof *f);
    if (f == NULL)
        return lw_error(w, PL_CODE_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++)
        f[i] = (float)v[i];
    int64_t nn = (int64_t)n;
    pl_status *st = lw_const(w, what, PL_DTYPE_F32, 1, &nn, f, n * 4, out);
    pl_free(f);
    return st;
}

/* Node OP(A) with the int attribute NAME = V. */
static pl_status *lw_unary_i(lw *w, const char *op, const char *a, const char *name, int64_t v,
                             const char **out)
{
    pl_nid id;
    PL_RETURN_IF_ERROR(lw_node(w, op, (const char *[]){a}, 1, out, &id));
    return pl_graph_attr_int(w->g, id, name, v);
}

/* The int64 class labels (classlabels_ints, or ATTR), into *LABELS and *N;
 * string labels refused. */
static pl_status *lw_ml_labels(lw *w, const char *attr, const int64_t **labels, size_t *n)
{
    const pl_attr *a = lw_attr(w, attr);
    *labels = NULL;
    *n = 0;
    if (a != NULL && a->kind == PL_ATTR_INTS) {
        *labels = a->ints;
        *n = a->n;
    }
    const pl_attr *sl = lw_attr(w, "classlabels_strings");
    if (sl != NULL && sl->n > 0)
        return lw_error(w, PL_CODE_UNSUPPORTED,
                        "string class labels (classlabels_strings): Plinth has no string "
                        "tensors; export integer labels");
    return NULL;
}

/* A float-list attribute NAME, or its NAME_as_tensor form (f32 or f64), as
 * doubles: *V (NULL when absent; freed by the caller), *N values. */
static pl_status *lw_ml_float_list(lw *w, const char *name, double **v, size_t *n)
{
    *v = NULL;
    *n = 0;
    const pl_attr *a = lw_attr(w, name);
    char tname[96];
    snprintf(tname, sizeof tname, "%s_as_tensor", name);
    const pl_attr *t = lw_attr(w, tname);
    if (a != NULL && a->kind == PL_ATTR_FLOATS && a->n > 0) {
        *v = pl_calloc(a->n, sizeof **v);
        if (*v == NULL)
            return lw_error(w, PL_CODE_OUT_OF_MEMORY, "out of memory");
        memcpy(*v, a->floats, a->n * sizeof **v);
        *n = a->n;
    } else if (t != NULL && t->kind == PL_ATTR_TENSOR && t->tensor != NULL) {
        const pl_attr_tensor *at = t->tensor;
        size_t es = PL_DTYPE_EQ(at->dtype, PL_DTYPE_F32) ? 4 : PL_DTYPE_EQ(at->dtype, PL_DTYPE_F64) ? 8 : 0;
        if (es == 0)
            return lw_error(w, PL_CODE_UNSUPPORTED, "%s has dtype %s (f32 or f64 only)", tname,
                            pl_dtype_name(at->dtype));
        size_t cnt = at->nbytes / es;
        *v = pl_calloc(cnt ? cnt : 1, sizeof **v);
        if (*v == NULL)
            return lw_error(w, PL_CODE_OUT_OF_MEMORY, "out of memory");
        for (size_t i = 0; i < cnt; i++)
            (*v)[i] = es == 4 ? (double)((const float *)at->data)[i]
                              : ((const double *)at->data)[i];
        *n = cnt;
    }
    return NULL;
}

/* An ints attribute NAME with exactly N entries (N 0: any), into *V. */
static pl_status *lw_ml_ints(lw *w, const char *name, size_t n, const int64_t **v, size_t *got)
{
    const pl_attr *a = lw_attr(w, name);
    if (a == NULL || a->kind != PL_ATTR_INTS || a->n == 0 || (n > 0 && a->n != n))
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "attribute '%s' must list %zu integers",
                        name, n);
    *v = a->ints;
    if (got != NULL)
        *got = a->n;
    return NULL;
}

/* POST_TRANSFORM (NONE, LOGISTIC, SOFTMAX) of S, a [N, K] tensor, into
 * *OUT; SOFTMAX_ZERO and PROBIT refused. */
static pl_status *lw_ml_post(lw *w, const char *post, const char *s, const char **out)
{
    if (strcmp(post, "NONE") == 0) {
        *out = s;
        return NULL;
    }
    if (strcmp(post, "LOGISTIC") == 0)
        return lw_unary(w, "Sigmoid", s, out);
    if (strcmp(post, "SOFTMAX") == 0)
        return lw_unary_i(w, "Softmax", s, "axis", 1, out);
    return lw_error(w, PL_CODE_UNSUPPORTED, "post_transform '%s' (NONE, LOGISTIC, SOFTMAX only)",
                    post);
}

/* The label of each row of S [N, K]: LABELS[argmax], first of equal
 * maxima, as output 0 (the node itself). */
static pl_status *lw_ml_argmax_label(lw *w, const char *s, const int64_t *labels, size_t k)
{
    const char *am, *lab;
    pl_nid id;
    PL_RETURN_IF_ERROR(lw_node(w, "ArgMax", (const char *[]){s}, 1, &am, &id));
    PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, id, "axis", 1));
    PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, id, "keepdims", 0));
    PL_RETURN_IF_ERROR(lw_const(w, "labels", PL_DTYPE_I64, 1, (const int64_t[]){(int64_t)k},
                                labels, k * 8, &lab));
    return lw_become(w, "Gather", (const char *[]){lab, am}, 2);
}

static pl_status *lw_forest_choose(lw *w, int64_t opset, const char *c, const char *y,
                                   const char *n, const char **out);

/* Output 0 (the node itself): POSITIVE where S [N, 1] > THRESHOLD, else
 * NEGATIVE, as a [N] int64. */
static pl_status *lw_ml_threshold_label(lw *w, const char *s, double threshold, int64_t positive,
                                        int64_t negative)
{
    const char *th, *gt, *pos, *neg, *flat;
    PL_RETURN_IF_ERROR(lw_scalar(w, "threshold", threshold, &th));
    PL_RETURN_IF_ERROR(lw_binary(w, "Greater", s, th, &gt));
    PL_RETURN_IF_ERROR(lw_i64_scalar(w, "positive", positive, &pos));
    PL_RETURN_IF_ERROR(lw_i64_scalar(w, "negative", negative, &neg));
    const int64_t minus_one = -1;
    const char *shape;
    PL_RETURN_IF_ERROR(lw_i64s(w, "flat", &minus_one, 1, &shape));
    PL_RETURN_IF_ERROR(lw_binary(w, "Reshape", gt, shape, &flat));
    if (lw_ai_opset(w) >= 9)
        return lw_become(w, "Where", (const char *[]){flat, pos, neg}, 3);
    const char *label;
    PL_RETURN_IF_ERROR(lw_forest_choose(w, lw_ai_opset(w), flat, pos, neg, &label));
    return lw_become(w, "Identity", (const char *[]){label}, 1);
}

/* Output 1, the two-class scores of a one-column S [N, 1]: [A, B] side by
 * side. */
static pl_status *lw_ml_two_columns(lw *w, const char *a, const char *b)
{
    const char *name;
    PL_RETURN_IF_ERROR(lw_node_to_output(w, "Concat", a, b, 1, &name));
    return pl_graph_attr_int(w->g, (pl_nid)(pl_graph_node_count(w->g) - 1), "axis", 1);
}

/* LinearClassifier: scores S = X coefficients^T + intercepts, [N, E] with E
 * the intercepts' count (ONNX Runtime's reading); the label of each row
 * the class label of its largest score, output 1 S through post_transform.
 * E = 1 is the binary form: the label classlabels[1] where S > 0 (with two
 * labels, else 1 / 0) and output 1 [1 - S, S] with two labels, S alone
 * otherwise, post_transform left aside as ONNX Runtime leaves it. */
static pl_status *lw_ml_linear_classifier(lw *w)
{
    const char *x, *wt, *b, *sc;
    int64_t cols;
    size_t nw, nb, nl;
    const int64_t *labels;
    PL_RETURN_IF_ERROR(lw_ml_input(w, &x, &cols));
    PL_RETURN_IF_ERROR(lw_ml_labels(w, "classlabels_ints", &labels, &nl));
    const char *post = lw_attr_s(w, "post_transform", "NONE");
    const pl_attr *coef = lw_attr(w, "coefficients"), *icp = lw_attr(w, "intercepts");
    if (icp == NULL || icp->kind != PL_ATTR_FLOATS || icp->n == 0)
        return lw_error(w, PL_CODE_UNSUPPORTED,
                        "no intercepts (ONNX Runtime counts the classes by them)");
    int64_t e = (int64_t)icp->n;
    if (coef == NULL || coef->kind != PL_ATTR_FLOATS || coef->n % (size_t)e != 0 ||
        (cols >= 0 && coef->n != (size_t)(e * cols)))
        return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                        "coefficients must hold %lld classes x columns (%lld) values",
                        (long long)e, (long long)cols);
    if (e > 1 && nl != (size_t)e)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "%zu class labels for %lld classes", nl,
                        (long long)e);
    int64_t wd[2] = {e, (int64_t)coef->n / e};
    PL_RETURN_IF_ERROR(lw_ml_floats(w, "coefficients", 2, wd, &nw, &wt));
    PL_RETURN_IF_ERROR(lw_ml_floats(w, "intercepts", 0, NULL, &nb, &b));
    PL_RETURN_IF_ERROR(lw_perm(w, wt, (const int64_t[]){1, 0}, 2, &wt));
    PL_RETURN_IF_ERROR(lw_binary(w, "MatMul", x, wt, &sc));
    PL_RETURN_IF_ERROR(lw_binary(w, "Add", sc, b, &sc));
    const pl_graph_node *nd = pl_graph_get_node(w->g, w->id);
    bool want_scores = nd->n_outputs > 1 && nd->outputs[1] != PL_TID_NONE;
    if (e > 1) {
        if (want_scores) {
            const char *z, *name;
            PL_RETURN_IF_ERROR(lw_ml_post(w, post, sc, &z));
            PL_RETURN_IF_ERROR(lw_node_to_output(w, "Identity", z, NULL, 1, &name));
        }
        return lw_ml_argmax_label(w, sc, labels, nl);
    }
    if (strcmp(post, "PROBIT") == 0)
        return lw_error(w, PL_CODE_UNSUPPORTED, "post_transform 'PROBIT'");
    if (want_scores && nl == 2) {
        const char *one, *neg;
        PL_RETURN_IF_ERROR(lw_scalar(w, "one", 1.0, &one));
        PL_RETURN_IF_ERROR(lw_binary(w, "Sub", one, sc, &neg));
        PL_RETURN_IF_ERROR(lw_ml_two_columns(w, neg, sc));
    } else if (want_scores) {
        const char *name;
        PL_RETURN_IF_ERROR(lw_node_to_output(w, "Identity", sc, NULL, 1, &name));
    }
    return lw_ml_threshold_label(w, sc, 0.0, nl == 2 ? labels[1] : 1, nl == 2 ? labels[0] : 0);
}

/* One tree ensemble's nodes, numbered as the attributes list them (M of
 * them), for the ai.plinth TreeEnsemble node lw_forest_sum makes. */
struct lw_forest {
    size_t m, trees, k;
    int64_t *feat, *yes, *no, *roots; /* M, M, M, TREES: a leaf's yes and no are itself */
    float *thr;                       /* M */
    uint8_t *nan_yes;                 /* M: a missing value goes the yes way; NULL: none does */
    float *leaf;                      /* M x K: each leaf's weights per target or class */
    const char *mode;                 /* the one comparison of every branch */
    bool class1_everywhere;           /* K = 2: some tree weights class 1 at every leaf */
};

static void lw_forest_free(struct lw_forest *f)
{
    pl_free(f->feat);
    pl_free(f->yes);
    pl_free(f->no);
    pl_free(f->roots);
    pl_free(f->thr);
    pl_free(f->nan_yes);
    pl_free(f->leaf);
}

/* The node of tree TREE with id NODE: its index in the attribute lists
 * (ORDER sorts them by tree, then id), or -1. */
static int64_t lw_forest_find(const int64_t *tids, const int64_t *nids, const size_t *order,
                              size_t m, int64_t tree, int64_t node)
{
    size_t lo = 0, hi = m;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2, i = order[mid];
        if (tids[i] < tree || (tids[i] == tree && nids[i] < node))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < m && tids[order[lo]] == tree && nids[order[lo]] == node)
        return (int64_t)order[lo];
    return -1;
}

static const int64_t *lw_sort_tids, *lw_sort_nids;
static int lw_forest_cmp(const void *pa, const void *pb)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    if (lw_sort_tids[a] != lw_sort_tids[b])
        return lw_sort_tids[a] < lw_sort_tids[b] ? -1 : 1;
    if (lw_sort_nids[a] != lw_sort_nids[b])
        return lw_sort_nids[a] < lw_sort_nids[b] ? -1 : 1;
    return 0;
}

/* Reads the nodes_* attributes and the leaves' weights (PREFIX "target" or
 * "class": PREFIX_treeids, _nodeids, _ids, _weights) into F, K targets or
 * classes; features at most COLS (when known). */
static pl_status *lw_forest_read(lw *w, const char *prefix, size_t k, int64_t cols,
                                 struct lw_forest *f)
{
    memset(f, 0, sizeof *f);
    f->k = k;
    const int64_t *tids, *nids, *fids, *yes, *no;
    size_t m;
    PL_RETURN_IF_ERROR(lw_ml_ints(w, "nodes_treeids", 0, &tids, &m));
    PL_RETURN_IF_ERROR(lw_ml_ints(w, "nodes_nodeids", m, &nids, NULL));
    PL_RETURN_IF_ERROR(lw_ml_ints(w, "nodes_featureids", m, &fids, NULL));
    PL_RETURN_IF_ERROR(lw_ml_ints(w, "nodes_truenodeids", m, &yes, NULL));
    PL_RETURN_IF_ERROR(lw_ml_ints(w, "nodes_falsenodeids", m, &no, NULL));
    const pl_attr *modes = lw_attr(w, "nodes_modes"), *mvt = lw_attr(w, "nodes_missing_value_tracks_true");
    if (modes == NULL || modes->kind != PL_ATTR_STRINGS || modes->n != m)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "nodes_modes must list %zu modes", m);
    double *vals = NULL;
    size_t nv = 0;
    PL_RETURN_IF_ERROR(lw_ml_float_list(w, "nodes_values", &vals, &nv));
    pl_status *st = NULL;
    size_t *order = pl_calloc(m, sizeof *order);
    f->m = m;
    f->feat = pl_calloc(m, sizeof *f->feat);
    f->yes = pl_calloc(m, sizeof *f->yes);
    f->no = pl_calloc(m, sizeof *f->no);
    f->thr = pl_calloc(m, sizeof *f->thr);
    f->leaf = pl_calloc(m * k, sizeof *f->leaf);
    uint8_t *child = pl_calloc(m, 1);
    if (order == NULL || f->feat == NULL || f->yes == NULL || f->no == NULL || f->thr == NULL ||
        f->leaf == NULL || child == NULL)
        st = lw_error(w, PL_CODE_OUT_OF_MEMORY, "out of memory");
    if (st == NULL && nv != m)
        st = lw_error(w, PL_CODE_INVALID_ARGUMENT, "nodes_values lists %zu values for %zu nodes",
                      nv, m);
    if (st == NULL) {
        for (size_t i = 0; i < m; i++)
            order[i] = i;
        lw_sort_tids = tids, lw_sort_nids = nids;
        qsort(order, m, sizeof *order, lw_forest_cmp);
        for (size_t i = 1; st == NULL && i < m; i++)
            if (lw_forest_cmp(&order[i - 1], &order[i]) == 0)
                st = lw_error(w, PL_CODE_INVALID_ARGUMENT, "tree %lld lists node %lld twice",
                              (long long)tids[order[i]], (long long)nids[order[i]]);
    }
    bool any_nan = false;
    for (size_t i = 0; st == NULL && i < m; i++) {
        const char *md = modes->strings[i];
        if (strcmp(md, "LEAF") == 0) {
            f->yes[i] = f->no[i] = (int64_t)i;
            continue;
        }
        if (f->mode == NULL)
            f->mode = md;
        if (strcmp(md, f->mode) != 0) {
            st = lw_error(w, PL_CODE_UNSUPPORTED, "branches compare both as %s and as %s",
                          f->mode, md);
            break;
        }
        if (fids[i] < 0 || (cols >= 0 && fids[i] >= cols)) {
            st = lw_error(w, PL_CODE_INVALID_ARGUMENT,
                          "node %lld of tree %lld reads feature %lld of %lld",
                          (long long)nids[i], (long long)tids[i], (long long)fids[i],
                          (long long)cols);
            break;
        }
        f->feat[i] = fids[i];
        f->thr[i] = (float)vals[i];
        f->yes[i] = lw_forest_find(tids, nids, order, m, tids[i], yes[i]);
        f->no[i] = lw_forest_find(tids, nids, order, m, tids[i], no[i]);
        if (f->yes[i] < 0 || f->no[i] < 0 || f->yes[i] == (int64_t)i || f->no[i] == (int64_t)i) {
            st = lw_error(w, PL_CODE_INVALID_ARGUMENT,
                          "node %lld of tree %lld leads to a node the tree does not have",
                          (long long)nids[i], (long long)tids[i]);
            break;
        }
        child[f->yes[i]] = child[f->no[i]] = 1;
        any_nan |= mvt != NULL && mvt->kind == PL_ATTR_INTS && i < mvt->n && mvt->ints[i] != 0;
    }
    if (st == NULL && f->mode != NULL &&
        strcmp(f->mode, "BRANCH_LEQ") != 0 && strcmp(f->mode, "BRANCH_LT") != 0 &&
        strcmp(f->mode, "BRANCH_GTE") != 0 && strcmp(f->mode, "BRANCH_GT") != 0 &&
        strcmp(f->mode, "BRANCH_EQ") != 0 && strcmp(f->mode, "BRANCH_NEQ") != 0)
        st = lw_error(w, PL_CODE_INVALID_ARGUMENT, "unknown node mode '%s'", f->mode);
    if (st == NULL && any_nan) {
        f->nan_yes = pl_calloc(m, 1);
        if (f->nan_yes == NULL)
            st = lw_error(w, PL_CODE_OUT_OF_MEMORY, "out of memory");
        for (size_t i = 0; st == NULL && i < m && i < mvt->n; i++)
            f->nan_yes[i] = mvt->ints[i] != 0 && f->yes[i] != (int64_t)i;
    }
    /* trees in the order of their ids; a tree's root is its node no node
     * leads to */
    if (st == NULL) {
        f->roots = pl_calloc(m, sizeof *f->roots);
        if (f->roots == NULL)
            st = lw_error(w, PL_CODE_OUT_OF_MEMORY, "out of memory");
        for (size_t j = 0; st == NULL && j < m; j++) {
            size_t i = order[j];
            if (j > 0 && tids[order[j - 1]] == tids[i])
                continue;
            int64_t root = -1;
            for (size_t q = j; q < m && tids[order[q]] == tids[i] && root < 0; q++)
                if (!child[order[q]])
                    root = (int64_t)order[q];
            if (root < 0)
                st = lw_error(w, PL_CODE_INVALID_ARGUMENT, "tree %lld has no root",
                              (long long)tids[i]);
            else
                f->roots[f->trees++] = root;
        }
    }
    /* every path from a root ends at a leaf: a cycle is refused */
    int64_t *depth = st == NULL ? pl_calloc(m, sizeof *depth) : NULL;
    size_t *stack = st == NULL ? pl_calloc(m + 1, sizeof *stack) : NULL;
    if (st == NULL && (depth == NULL || stack == NULL))
        st = lw_error(w, PL_CODE_OUT_OF_MEMORY, "out of memory");
    for (size_t t = 0; st == NULL && t < f->trees; t++) {
        size_t sp = 0;
        stack[sp++] = (size_t)f->roots[t];
        depth[f->roots[t]] = 0;
        while (sp > 0 && st == NULL) {
            size_t i = stack[--sp];
            if (f->yes[i] == (int64_t)i)
                continue;
            if (depth[i] >= (int64_t)m || sp + 2 > m + 1) {
                st = lw_error(w, PL_CODE_INVALID_ARGUMENT, "tree %lld has a cycle",
                              (long long)tids[i]);
                break;
            }
            int64_t next[2] = {f->yes[i], f->no[i]};
            for (int c = 0; c < 2; c++) {
                depth[next[c]] = depth[i] + 1;
                stack[sp++] = (size_t)next[c];
            }
        }
    }
    pl_free(depth);
    pl_free(stack);
    /* the leaves' weights */
    char name[64];
    const int64_t *wt_t = NULL, *wt_n = NULL, *wt_id = NULL;
    size_t nwt = 0, nwv = 0;
    double *wv = NULL;
    if (st == NULL) {
        snprintf(name, sizeof name, "%s_treeids", prefix);
        st = lw_ml_ints(w, name, 0, &wt_t, &nwt);
    }
    if (st == NULL) {
        snprintf(name, sizeof name, "%s_nodeids", prefix);
        st = lw_ml_ints(w, name, nwt, &wt_n, NULL);
    }
    if (st == NULL) {
        snprintf(name, sizeof name, "%s_ids", prefix);
        st = lw_ml_ints(w, name, nwt, &wt_id, NULL);
    }
    if (st == NULL) {
        snprintf(name, sizeof name, "%s_weights", prefix);
        st = lw_ml_float_list(w, name, &wv, &nwv);
        if (st == NULL && nwv != nwt)
            st = lw_error(w, PL_CODE_INVALID_ARGUMENT, "%s lists %zu weights for %zu leaves",
                          name, nwv, nwt);
    }
    /* with two classes, which leaves carry a weight for class 1 (even 0) */
    uint8_t *has1 = st == NULL && k == 2 ? pl_calloc(m, 1) : NULL;
    if (st == NULL && k == 2 && has1 == NULL)
        st = lw_error(w, PL_CODE_OUT_OF_MEMORY, "out of memory");
    for (size_t j = 0; st == NULL && j < nwt; j++) {
        int64_t i = lw_forest_find(tids, nids, order, m, wt_t[j], wt_n[j]);
        if (i < 0 || wt_id[j] < 0 || (size_t)wt_id[j] >= k) {
            st = lw_error(w, PL_CODE_INVALID_ARGUMENT,
                          "a weight for %s %lld of node %lld of tree %lld, which is not there",
                          prefix, (long long)wt_id[j], (long long)wt_n[j], (long long)wt_t[j]);
        } else {
            f->leaf[(size_t)i * k + (size_t)wt_id[j]] += (float)wv[j];
            if (has1 != NULL && wt_id[j] == 1)
                has1[i] = 1;
        }
    }
    /* a tree all of whose leaves have one gives every row a class-1 sum */
    for (size_t j = 0, q; st == NULL && has1 != NULL && j < m && !f->class1_everywhere; j = q) {
        bool all = true;
        for (q = j; q < m && tids[order[q]] == tids[order[j]]; q++)
            all &= f->yes[order[q]] != (int64_t)order[q] || has1[order[q]];
        f->class1_everywhere = all;
    }
    pl_free(has1);
    pl_free(wv);
    pl_free(vals);
    pl_free(order);
    pl_free(child);
    return st;
}

/* Y where C, else N (int64): Where, or below ai.onnx opset 9 (LightGBM's
 * regressors import opset 8) N + C * (Y - N). */
static pl_status *lw_forest_choose(lw *w, int64_t opset, const char *c, const char *y,
                                   const char *n, const char **out)
{
    if (opset >= 9)
        return lw_node(w, "Where", (const char *[]){c, y, n}, 3, out, NULL);
    const char *ci, *d, *p;
    PL_RETURN_IF_ERROR(lw_cast(w, c, 7, &ci));
    PL_RETURN_IF_ERROR(lw_binary(w, "Sub", y, n, &d));
    PL_RETURN_IF_ERROR(lw_binary(w, "Mul", ci, d, &p));
    return lw_binary(w, "Add", n, p, out);
}

/* The sum over F's trees of the weights of the leaf each row of X [N, C]
 * reaches, [N, K]: one ai.plinth TreeEnsemble node (its schema in
 * opset_index.c, the cpu module's kernel in trees.c) over F's tables. A
 * walk of all trees in standard ops (a gather, a comparison and a Where a
 * level, for every backend) ran 3-25x ONNX Runtime's time on the ML zoo's
 * forests (20 levels: some 140 small ops a run); the kernel 0.4-0.9x. */
static pl_status *lw_forest_sum(lw *w, const char *x, const struct lw_forest *f,
                                 const char **out)
{
    const int64_t m = (int64_t)f->m, t = (int64_t)f->trees, k = (int64_t)f->k;
    const int64_t ld[2] = {m, k};
    const char *ins[8];
    size_t n_in = 7;
    ins[0] = x;
    PL_RETURN_IF_ERROR(lw_const(w, "feature", PL_DTYPE_I64, 1, &m, f->feat, (size_t)m * 8, &ins[1]));
    PL_RETURN_IF_ERROR(lw_const(w, "threshold", PL_DTYPE_F32, 1, &m, f->thr, (size_t)m * 4, &ins[2]));
    PL_RETURN_IF_ERROR(lw_const(w, "yes", PL_DTYPE_I64, 1, &m, f->yes, (size_t)m * 8, &ins[3]));
    PL_RETURN_IF_ERROR(lw_const(w, "no", PL_DTYPE_I64, 1, &m, f->no, (size_t)m * 8, &ins[4]));
    PL_RETURN_IF_ERROR(lw_const(w, "leaf", PL_DTYPE_F32, 2, ld, f->leaf, (size_t)(m * k) * 4,
                                &ins[5]));
    PL_RETURN_IF_ERROR(lw_const(w, "roots", PL_DTYPE_I64, 1, &t, f->roots, (size_t)t * 8, &ins[6]));
    if (f->nan_yes != NULL)
        PL_RETURN_IF_ERROR(lw_const(w, "nan_yes", PL_DTYPE_BOOL, 1, &m, f->nan_yes, (size_t)m,
                                    &ins[n_in++]));
    char node_name[LW_NAME], *o = lw_slot(w);
    if (o == NULL)
        return lw_error(w, PL_CODE_INTERNAL, "too many names in one rewrite");
    pl_rewrite_fresh_name(w->g, w->base, "TreeEnsemble", node_name, sizeof node_name);
    pl_rewrite_fresh_name(w->g, w->base, "TreeEnsemble_out", o, LW_NAME);
    pl_nid id;
    PL_RETURN_IF_ERROR(pl_graph_add_node(w->g, node_name, "TreeEnsemble", "ai.plinth", ins, n_in,
                                         (const char *[]){o}, 1, &id));
    *out = o;
    const char *mode = f->mode != NULL ? f->mode : "BRANCH_LEQ";
    return pl_graph_attr_string(w->g, id, "mode", mode, strlen(mode));
}

/* The input as a [N, C] f32 for a tree ensemble, and C. */
static pl_status *lw_forest_input(lw *w, const char **x, int64_t *cols)
{
    PL_RETURN_IF_ERROR(lw_ml_input(w, x, cols));
    const pl_graph_tensor *t = lw_tensor(w, lw_input(w, 0));
    if (t == NULL || t->ndim != 2)
        return lw_error(w, PL_CODE_UNSUPPORTED, "input 0 must be 2-D [rows, features]");
    return NULL;
}

/* BASE_VALUES (K of them, or none) added to S into *OUT. */
static pl_status *lw_forest_base(lw *w, const double *base, size_t nbase, const char *s,
                                 const char **out)
{
    *out = s;
    if (nbase == 0)
        return NULL;
    const char *b;
    PL_RETURN_IF_ERROR(lw_f32s(w, "base_values", base, nbase, &b));
    return lw_binary(w, "Add", s, b, out);
}

/* TreeEnsembleRegressor: the sum (or, with aggregate_function AVERAGE, the
 * mean) over the trees of the weights of the leaves each row reaches, per
 * target, plus base_values, through post_transform; [N, n_targets]. */
static pl_status *lw_ml_tree_regressor(lw *w)
{
    const char *x, *s;
    int64_t cols, k = lw_attr_i(w, "n_targets", 1);
    PL_RETURN_IF_ERROR(lw_forest_input(w, &x, &cols));
    const char *agg = lw_attr_s(w, "aggregate_function", "SUM");
    if (strcmp(agg, "SUM") != 0 && strcmp(agg, "AVERAGE") != 0)
        return lw_error(w, PL_CODE_UNSUPPORTED, "aggregate_function '%s' (SUM, AVERAGE only)", agg);
    if (k < 1 || k > (1 << 16))
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "n_targets %lld", (long long)k);
    double *base = NULL;
    size_t nbase = 0;
    PL_RETURN_IF_ERROR(lw_ml_float_list(w, "base_values", &base, &nbase));
    struct lw_forest f;
    memset(&f, 0, sizeof f);
    pl_status *st = nbase == 0 || nbase == (size_t)k
                        ? lw_forest_read(w, "target", (size_t)k, cols, &f)
                        : lw_error(w, PL_CODE_INVALID_ARGUMENT,
                                   "%zu base_values for %lld targets", nbase, (long long)k);
    if (st == NULL)
        st = lw_forest_sum(w, x, &f, &s);
    if (st == NULL && strcmp(agg, "AVERAGE") == 0) {
        const char *n;
        st = lw_scalar(w, "trees", (double)f.trees, &n);
        if (st == NULL)
            st = lw_binary(w, "Div", s, n, &s);
    }
    if (st == NULL)
        st = lw_forest_base(w, base, nbase, s, &s);
    if (st == NULL)
        st = lw_ml_post(w, lw_attr_s(w, "post_transform", "NONE"), s, &s);
    if (st == NULL)
        st = lw_become(w, "Identity", (const char *[]){s}, 1);
    lw_forest_free(&f);
    pl_free(base);
    return st;
}

/* Column J of S [N, K] as [N, 1] (a Gather: any opset). */
static pl_status *lw_ml_column(lw *w, const char *s, int64_t j, const char **out)
{
    const char *idx;
    pl_nid id;
    PL_RETURN_IF_ERROR(lw_i64s(w, "column", &j, 1, &idx));
    PL_RETURN_IF_ERROR(lw_node(w, "Gather", (const char *[]){s, idx}, 2, out, &id));
    return pl_graph_attr_int(w->g, id, "axis", 1);
}

/* Output 1 and the label of a two-class tree ensemble whose weights name
 * both classes, from the sums S [N, 2] (lw_ml_tree_classifier). */
static pl_status *lw_ml_two_sums(lw *w, const char *s, const double *base, size_t nbase,
                                 const char *post, bool want_scores, const int64_t *labels)
{
    const char *c0, *c1, *z = s;
    if (nbase == 1) { /* s0 + b0, s1 */
        PL_RETURN_IF_ERROR(lw_forest_base(w, (const double[]){base[0], 0.0}, 2, s, &z));
    }
    if (nbase == 2 || want_scores) {
        PL_RETURN_IF_ERROR(lw_ml_column(w, z, 0, &c0));
    }
    if (nbase == 2) { /* -(b1 + s0), b1 + s0 */
        const char *b1, *neg;
        PL_RETURN_IF_ERROR(lw_scalar(w, "base_value_1", base[1], &b1));
        PL_RETURN_IF_ERROR(lw_binary(w, "Add", c0, b1, &c1));
        PL_RETURN_IF_ERROR(lw_unary(w, "Neg", c1, &neg));
        c0 = neg;
    } else {
        PL_RETURN_IF_ERROR(lw_ml_column(w, z, 1, &c1));
    }
    if (want_scores) {
        const char *z2 = z, *name;
        pl_nid id;
        if (nbase == 2) {
            PL_RETURN_IF_ERROR(lw_node(w, "Concat", (const char *[]){c0, c1}, 2, &z2, &id));
            PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, id, "axis", 1));
        }
        PL_RETURN_IF_ERROR(lw_ml_post(w, post, z2, &z2));
        PL_RETURN_IF_ERROR(lw_node_to_output(w, "Identity", z2, NULL, 1, &name));
    }
    return lw_ml_threshold_label(w, c1, 0.0, labels[1], labels[0]);
}

/* TreeEnsembleClassifier: per class, the sum over the trees of the weights
 * of the leaves each row reaches, plus base_values. With three classes or
 * more, the label is the class of the largest sum and output 1 the sums
 * through post_transform. Two classes whose weights all name class 0 (what
 * skl2onnx writes for a binary forest or boosting, and onnxmltools for
 * LightGBM's and XGBoost's) read as ONNX Runtime reads them: s the sum
 * (plus the one base value), label classlabels[1] where s > 0.5 when every
 * weight is positive (a probability) else where s > 0, output 1 [1 - s, s]
 * in the first case, [-s, s] in the second (through LOGISTIC: [σ(-s),
 * σ(s)]). Two classes whose weights name both (CatBoost's binary export:
 * class 0 the negated class 1 at every leaf) read as ONNX Runtime reads
 * them when some tree weights class 1 at every leaf (so every row has a
 * class-1 sum): sums s0 and s1, with one base value s0 + b0, with two
 * -(b1 + s0) and b1 + s0 (ONNX Runtime drops s1 and b0 then); output 1
 * the two through post_transform, the label classlabels[1] where the
 * class-1 sum is > 0 (ONNX Runtime 1.20 gives 1 and 0 there, not the
 * labels; the two agree for CatBoost's default labels 0 and 1). Other
 * two-class forms, where ONNX Runtime's outputs follow rules of their own,
 * are refused. */
static pl_status *lw_ml_tree_classifier(lw *w)
{
    const char *x, *s;
    int64_t cols;
    size_t nl;
    const int64_t *labels;
    PL_RETURN_IF_ERROR(lw_forest_input(w, &x, &cols));
    PL_RETURN_IF_ERROR(lw_ml_labels(w, "classlabels_int64s", &labels, &nl));
    if (nl < 2)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "classlabels_int64s lists %zu classes", nl);
    const char *post = lw_attr_s(w, "post_transform", "NONE");
    double *base = NULL;
    size_t nbase = 0;
    PL_RETURN_IF_ERROR(lw_ml_float_list(w, "base_values", &base, &nbase));
    const pl_attr *ids = lw_attr(w, "class_ids");
    bool one_class = ids != NULL && ids->kind == PL_ATTR_INTS && ids->n > 0;
    for (size_t i = 1; one_class && i < ids->n; i++)
        one_class = ids->ints[i] == ids->ints[0];
    bool binary = nl == 2 && one_class;
    pl_status *st = NULL;
    if (nl == 2 && binary && !(ids->ints[0] == 0 && nbase <= 1))
        st = lw_error(w, PL_CODE_UNSUPPORTED,
                      "two classes with every weight for class 1, or two base values (only "
                      "weights all for class 0 and at most one base value, or weights for both "
                      "classes, are read as ONNX Runtime reads them)");
    if (st == NULL && nl > 2 && nbase != 0 && nbase != nl)
        st = lw_error(w, PL_CODE_INVALID_ARGUMENT, "%zu base_values for %zu classes", nbase, nl);
    if (st == NULL && nl == 2 && nbase > 2)
        st = lw_error(w, PL_CODE_INVALID_ARGUMENT, "%zu base_values for 2 classes", nbase);
    struct lw_forest f;
    memset(&f, 0, sizeof f);
    if (st == NULL)
        st = lw_forest_read(w, "class", binary ? 1 : nl, cols, &f);
    if (st == NULL && nl == 2 && !binary && !f.class1_everywhere)
        st = lw_error(w, PL_CODE_UNSUPPORTED,
                      "two classes with weights for both, but no tree weights class 1 at every "
                      "leaf (ONNX Runtime's scores for a row without a class-1 weight follow "
                      "rules of their own)");
    if (st == NULL)
        st = lw_forest_sum(w, x, &f, &s);
    const pl_graph_node *nd = pl_graph_get_node(w->g, w->id);
    bool want_scores = nd->n_outputs > 1 && nd->outputs[1] != PL_TID_NONE;
    if (st == NULL && nl == 2 && !binary) {
        st = lw_ml_two_sums(w, s, base, nbase, post, want_scores, labels);
        lw_forest_free(&f);
        pl_free(base);
        return st;
    }
    if (st == NULL)
        st = lw_forest_base(w, base, nbase, s, &s);
    if (st == NULL && !binary) {
        if (want_scores) {
            const char *z, *name;
            st = lw_ml_post(w, post, s, &z);
            if (st == NULL)
                st = lw_node_to_output(w, "Identity", z, NULL, 1, &name);
        }
        if (st == NULL)
            st = lw_ml_argmax_label(w, s, labels, nl);
    } else if (st == NULL) {
        bool positive = true;
        for (size_t i = 0; i < f.m; i++)
            positive &= f.leaf[i] >= 0.0f;
        if (strcmp(post, "PROBIT") == 0 || strcmp(post, "SOFTMAX_ZERO") == 0)
            st = lw_error(w, PL_CODE_UNSUPPORTED, "post_transform '%s' with two classes", post);
        if (st == NULL && want_scores) {
            const char *a, *b2;
            if (positive) {
                const char *one;
                st = lw_scalar(w, "one", 1.0, &one);
                if (st == NULL)
                    st = lw_binary(w, "Sub", one, s, &a);
                b2 = s;
            } else {
                st = lw_unary(w, "Neg", s, &a);
                b2 = s;
                if (st == NULL && strcmp(post, "LOGISTIC") == 0) {
                    st = lw_unary(w, "Sigmoid", a, &a);
                    if (st == NULL)
                        st = lw_unary(w, "Sigmoid", s, &b2);
                }
            }
            if (st == NULL)
                st = lw_ml_two_columns(w, a, b2);
        }
        if (st == NULL)
            st = lw_ml_threshold_label(w, s, positive ? 0.5 : 0.0, labels[1], labels[0]);
    }
    lw_forest_free(&f);
    pl_free(base);
    return st;
}

/* SVMRegressor (skl2onnx's SVR, NuSVR and OneClassSVM): with support
 * vectors, the kernel of each row of X with each vector (LINEAR x·v, POLY
 * (gamma x·v + coef0)^degree, RBF exp(-gamma |x - v|^2) from the
 * norms and a product, SIGMOID tanh(gamma x·v + coef0)) times the coefficients,
 * plus rho; without, X times the coefficients plus rho (liblinear's form);
 * one_class: 1 where that is > 0, else -1. [N, 1], as ONNX Runtime. */
static pl_status *lw_ml_svm_regressor(lw *w)
{
    const char *x, *k, *y;
    int64_t cols;
    PL_RETURN_IF_ERROR(lw_ml_input(w, &x, &cols));
    const pl_attr *coef = lw_attr(w, "coefficients"), *sv = lw_attr(w, "support_vectors");
    const pl_attr *rho = lw_attr(w, "rho"), *kp = lw_attr(w, "kernel_params");
    int64_t ns = lw_attr_i(w, "n_supports", 0);
    if (strcmp(lw_attr_s(w, "post_transform", "NONE"), "NONE") != 0)
        return lw_error(w, PL_CODE_UNSUPPORTED, "post_transform '%s' (NONE only)",
                        lw_attr_s(w, "post_transform", "NONE"));
    if (coef == NULL || coef->kind != PL_ATTR_FLOATS || coef->n == 0 || rho == NULL ||
        rho->kind != PL_ATTR_FLOATS || rho->n == 0 || cols < 1)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                        "coefficients, rho and a known feature count are required");
    const char *c, *r;
    size_t nc, nr;
    if (ns > 0) {
        if (sv == NULL || sv->kind != PL_ATTR_FLOATS || sv->n != (size_t)(ns * cols) ||
            coef->n != (size_t)ns)
            return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                            "%lld support vectors of %lld features need as many values and one "
                            "coefficient each",
                            (long long)ns, (long long)cols);
        const char *kt = lw_attr_s(w, "kernel_type", "LINEAR");
        double gamma = kp != NULL && kp->kind == PL_ATTR_FLOATS && kp->n > 0 ? kp->floats[0] : 0.0;
        double coef0 = kp != NULL && kp->kind == PL_ATTR_FLOATS && kp->n > 1 ? kp->floats[1] : 0.0;
        double degree = kp != NULL && kp->kind == PL_ATTR_FLOATS && kp->n > 2 ? kp->floats[2] : 0.0;
        const char *v;
        size_t nv;
        int64_t vd[2] = {ns, cols};
        PL_RETURN_IF_ERROR(lw_ml_floats(w, "support_vectors", 2, vd, &nv, &v));
        if (strcmp(kt, "RBF") == 0) {
            /* |x - v|^2 = |x|^2 - 2 x.v + |v|^2: a product where the
             * differences made an [N, S, C] tensor (svr_rbf 0.18 ms a run
             * against ONNX Runtime's 0.12); rounding under 1e-6 of it,
             * clamped at 0 */
            float *vn = pl_calloc((size_t)ns, sizeof *vn);
            if (vn == NULL)
                return lw_error(w, PL_CODE_OUT_OF_MEMORY, "out of memory");
            for (int64_t i = 0; i < ns; i++) {
                double a = 0;
                for (int64_t j = 0; j < cols; j++)
                    a += sv->floats[i * cols + j] * sv->floats[i * cols + j];
                vn[i] = (float)a;
            }
            const char *vnorm, *vt, *xx, *xn, *xv, *m2, *t, *zero, *g, *e;
            pl_status *st = lw_const(w, "sv_norm", PL_DTYPE_F32, 1, &ns, vn, (size_t)ns * 4, &vnorm);
            pl_free(vn);
            PL_RETURN_IF_ERROR(st);
            PL_RETURN_IF_ERROR(lw_binary(w, "Mul", x, x, &xx));
            PL_RETURN_IF_ERROR(lw_ml_axis_op(w, "ReduceSum", 13, xx, 1, 1, &xn));
            PL_RETURN_IF_ERROR(lw_perm(w, v, (const int64_t[]){1, 0}, 2, &vt));
            PL_RETURN_IF_ERROR(lw_binary(w, "MatMul", x, vt, &xv));
            PL_RETURN_IF_ERROR(lw_scalar(w, "minus_two", -2.0, &m2));
            PL_RETURN_IF_ERROR(lw_binary(w, "Mul", xv, m2, &t));
            PL_RETURN_IF_ERROR(lw_binary(w, "Add", t, xn, &t));
            PL_RETURN_IF_ERROR(lw_binary(w, "Add", t, vnorm, &t));
            PL_RETURN_IF_ERROR(lw_scalar(w, "zero", 0.0, &zero));
            PL_RETURN_IF_ERROR(lw_binary(w, "Max", t, zero, &k));
            PL_RETURN_IF_ERROR(lw_scalar(w, "minus_gamma", -gamma, &g));
            PL_RETURN_IF_ERROR(lw_binary(w, "Mul", k, g, &e));
            PL_RETURN_IF_ERROR(lw_unary(w, "Exp", e, &k));
        } else {
            const char *vt, *g, *c0;
            PL_RETURN_IF_ERROR(lw_perm(w, v, (const int64_t[]){1, 0}, 2, &vt));
            PL_RETURN_IF_ERROR(lw_binary(w, "MatMul", x, vt, &k));
            if (strcmp(kt, "LINEAR") != 0) {
                PL_RETURN_IF_ERROR(lw_scalar(w, "gamma", gamma, &g));
                PL_RETURN_IF_ERROR(lw_scalar(w, "coef0", coef0, &c0));
                PL_RETURN_IF_ERROR(lw_binary(w, "Mul", k, g, &k));
                PL_RETURN_IF_ERROR(lw_binary(w, "Add", k, c0, &k));
                if (strcmp(kt, "POLY") == 0) {
                    const char *dg;
                    PL_RETURN_IF_ERROR(lw_scalar(w, "degree", degree, &dg));
                    PL_RETURN_IF_ERROR(lw_binary(w, "Pow", k, dg, &k));
                } else if (strcmp(kt, "SIGMOID") == 0) {
                    PL_RETURN_IF_ERROR(lw_unary(w, "Tanh", k, &k));
                } else {
                    return lw_error(w, PL_CODE_INVALID_ARGUMENT, "kernel_type '%s'", kt);
                }
            }
        }
        int64_t cd[2] = {ns, 1};
        PL_RETURN_IF_ERROR(lw_ml_floats(w, "coefficients", 2, cd, &nc, &c));
        PL_RETURN_IF_ERROR(lw_binary(w, "MatMul", k, c, &y));
    } else {
        if (coef->n != (size_t)cols)
            return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                            "%zu coefficients for %lld features (liblinear's form)", coef->n,
                            (long long)cols);
        int64_t cd[2] = {cols, 1};
        PL_RETURN_IF_ERROR(lw_ml_floats(w, "coefficients", 2, cd, &nc, &c));
        PL_RETURN_IF_ERROR(lw_binary(w, "MatMul", x, c, &y));
    }
    PL_RETURN_IF_ERROR(lw_scalar(w, "rho", rho->floats[0], &r));
    (void)nr;
    if (lw_attr_i(w, "one_class", 0) == 0)
        return lw_become(w, "Add", (const char *[]){y, r}, 2);
    const char *sum, *zero, *pos, *neg, *gt;
    PL_RETURN_IF_ERROR(lw_binary(w, "Add", y, r, &sum));
    PL_RETURN_IF_ERROR(lw_scalar(w, "zero", 0.0, &zero));
    PL_RETURN_IF_ERROR(lw_scalar(w, "one", 1.0, &pos));
    PL_RETURN_IF_ERROR(lw_scalar(w, "minus_one", -1.0, &neg));
    PL_RETURN_IF_ERROR(lw_binary(w, "Greater", sum, zero, &gt));
    return lw_become(w, "Where", (const char *[]){gt, pos, neg}, 3);
}

/* Imputer (scikit-learn's SimpleImputer; skl2onnx writes one in front of
 * most pipelines): the values of X equal to replaced_value_float (a NaN
 * for skl2onnx: then every NaN) or replaced_value_int64 become
 * imputed_value_floats / _int64s, one value for all or one per column of
 * the last axis, in X's type, as ONNX Runtime computes it: Where(IsNaN(X)
 * or Equal(X, replaced), imputed, X). */
static pl_status *lw_ml_imputer(lw *w)
{
    const char *x = lw_input(w, 0);
    const pl_graph_tensor *t = lw_tensor(w, x);
    const pl_attr *fv = lw_attr(w, "imputed_value_floats"), *iv = lw_attr(w, "imputed_value_int64s");
    if (t == NULL || t->ndim < 1)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "input 0 must have a rank of 1 or more");
    bool is_float = PL_DTYPE_EQ(t->dtype, PL_DTYPE_F32) || PL_DTYPE_EQ(t->dtype, PL_DTYPE_F64);
    bool is_int = PL_DTYPE_EQ(t->dtype, PL_DTYPE_I64) || PL_DTYPE_EQ(t->dtype, PL_DTYPE_I32);
    const pl_attr *vals = is_float ? fv : iv;
    if (!(is_float || is_int) || vals == NULL ||
        vals->kind != (is_float ? PL_ATTR_FLOATS : PL_ATTR_INTS) || vals->n == 0)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                        "X must be f32, f64, i64 or i32 with imputed_value_%s given",
                        is_int ? "int64s" : "floats");
    int64_t cols = t->dims[t->ndim - 1], n = (int64_t)vals->n;
    if (n > 1 && cols >= 0 && n != cols)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                        "%lld imputed values for %lld columns (one, or one a column)",
                        (long long)n, (long long)cols);
    const char *imp, *cond;
    /* (the constants added below may move the graph's tensors: T goes stale) */
    const pl_dtype tdt = t->dtype;
    t = NULL;
    int64_t code = lw_onnx_code(tdt);
    if (is_float) {
        size_t nv;
        PL_RETURN_IF_ERROR(lw_ml_floats(w, "imputed_value_floats", 0, NULL, &nv, &imp));
        double rep = lw_attr_f(w, "replaced_value_float", 0.0);
        if (isnan(rep)) {
            PL_RETURN_IF_ERROR(lw_unary(w, "IsNaN", x, &cond));
        } else {
            const char *r;
            w->narrow = false;
            w->dtype = tdt;
            PL_RETURN_IF_ERROR(lw_scalar(w, "replaced", rep, &r));
            PL_RETURN_IF_ERROR(lw_binary(w, "Equal", x, r, &cond));
        }
    } else {
        const char *r;
        PL_RETURN_IF_ERROR(lw_const(w, "imputed", PL_DTYPE_I64, 1, &n, vals->ints,
                                    (size_t)n * 8, &imp));
        PL_RETURN_IF_ERROR(lw_i64_scalar(w, "replaced", lw_attr_i(w, "replaced_value_int64", 0),
                                         &r));
        if (!PL_DTYPE_EQ(tdt, PL_DTYPE_I64))
            PL_RETURN_IF_ERROR(lw_cast(w, r, code, &r));
        PL_RETURN_IF_ERROR(lw_binary(w, "Equal", x, r, &cond));
    }
    /* the imputed values in X's type (folded at load) */
    if (!PL_DTYPE_EQ(tdt, is_float ? PL_DTYPE_F32 : PL_DTYPE_I64))
        PL_RETURN_IF_ERROR(lw_cast(w, imp, code, &imp));
    return lw_become(w, "Where", (const char *[]){cond, imp, x}, 3);
}

/* OneHotEncoder of ai.onnx.ml with integer categories (cats_int64s; what
 * skl2onnx writes for a OneHotEncoder or a one-hot KBinsDiscretizer over
 * numbers): X's shape and one more axis of the categories, 1.0 where X
 * (cast to int64, truncating, as ONNX Runtime does) is that category,
 * else 0.0. A value in no category is a row of zeros, or with zeros = 0
 * fails the run, as in ONNX Runtime (an out-of-range Gather). String
 * categories arrive as ids (core/src/strtab.h). */
static pl_status *lw_ml_one_hot(lw *w)
{
    const char *x = lw_input(w, 0), *x1, *cats, *eq;
    const pl_graph_tensor *t = lw_tensor(w, x);
    const pl_attr *ci = lw_attr(w, "cats_int64s");
    if (ci == NULL || ci->kind != PL_ATTR_INTS || ci->n == 0)
        return lw_error(w, PL_CODE_UNSUPPORTED,
                        "only integer categories (cats_int64s) are run (string ones come here "
                        "as int64 ids)");
    if (t == NULL || t->ndim < 0)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "input 0's rank must be known");
    /* (the constant added below may move the graph's tensors: T goes stale) */
    const pl_dtype tdt = t->dtype;
    const int32_t tndim = t->ndim;
    int64_t n = (int64_t)ci->n;
    PL_RETURN_IF_ERROR(lw_const(w, "cats", PL_DTYPE_I64, 1, &n, ci->ints, (size_t)n * 8, &cats));
    if (!PL_DTYPE_EQ(tdt, PL_DTYPE_I64))
        PL_RETURN_IF_ERROR(lw_cast(w, x, 7, &x));
    PL_RETURN_IF_ERROR(lw_ml_axis_op(w, "Unsqueeze", 13, x, tndim, -1, &x1));
    PL_RETURN_IF_ERROR(lw_binary(w, "Equal", x1, cats, &eq));
    if (lw_attr_i(w, "zeros", 1) != 0) {
        PL_RETURN_IF_ERROR(lw_become(w, "Cast", (const char *[]){eq}, 1));
        return pl_graph_attr_int(w->g, w->id, "to", 1);
    }
    /* zeros = 0: a value in no category fails the run, as in ONNX Runtime
     * ("Unknown Category and zeros = 0"): each value's category index (n
     * for none, ai.plinth LabelEncode) picks from n zeros, a Gather that
     * is out of range for n, and the zeros are added to the one-hot */
    const char *oh, *ord, *none, *idx, *zs, *g, *g1;
    pl_nid id;
    PL_RETURN_IF_ERROR(lw_node(w, "Cast", (const char *[]){eq}, 1, &oh, &id));
    PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, id, "to", 1));
    int64_t *v = pl_malloc((size_t)n * sizeof *v);
    float *z = pl_calloc((size_t)n, sizeof *z);
    pl_status *st = v && z ? NULL : lw_error(w, PL_CODE_OUT_OF_MEMORY, "out of memory");
    for (int64_t i = 0; st == NULL && i < n; i++)
        v[i] = i;
    if (st == NULL)
        st = lw_const(w, "category_index", PL_DTYPE_I64, 1, &n, v, (size_t)n * 8, &ord);
    if (st == NULL)
        st = lw_const(w, "category_zeros", PL_DTYPE_F32, 1, &n, z, (size_t)n * 4, &zs);
    pl_free(v);
    pl_free(z);
    PL_RETURN_IF_ERROR(st);
    PL_RETURN_IF_ERROR(lw_const(w, "no_category", PL_DTYPE_I64, 0, NULL, &n, 8, &none));
    PL_RETURN_IF_ERROR(lw_node(w, "LabelEncode", (const char *[]){x, cats, ord, none}, 4, &idx,
                               &id));
    PL_RETURN_IF_ERROR(pl_graph_node_set_op(w->g, id, "ai.plinth", "LabelEncode"));
    /* the Gather named so that its error says why */
    char gname[LW_NAME], *gout = lw_slot(w);
    if (gout == NULL)
        return lw_error(w, PL_CODE_INTERNAL, "too many names in one rewrite");
    pl_rewrite_fresh_name(w->g, w->base, "unknown_category_with_zeros_0", gname, sizeof gname);
    pl_rewrite_fresh_name(w->g, w->base, "category_check", gout, LW_NAME);
    PL_RETURN_IF_ERROR(pl_graph_add_node(w->g, gname, "Gather", "", (const char *[]){zs, idx}, 2,
                                         (const char *[]){gout}, 1, &id));
    g = gout;
    PL_RETURN_IF_ERROR(lw_ml_axis_op(w, "Unsqueeze", 13, g, tndim, -1, &g1));
    return lw_become(w, "Add", (const char *[]){oh, g1}, 2);
}

/* FeatureVectorizer: the inputs, each [N, inputdimensions[i]], as f32,
 * side by side: [N, sum]. An input of another width, or not 2-D, is
 * refused (ONNX Runtime cuts or pads a row to the width, and reads a 1-D
 * input as one row). */
static pl_status *lw_ml_feature_vectorizer(lw *w)
{
    const pl_attr *dims = lw_attr(w, "inputdimensions");
    const pl_graph_node *node = pl_graph_get_node(w->g, w->id);
    size_t n_in = node->n_inputs;
    if (dims == NULL || dims->kind != PL_ATTR_INTS || dims->n != n_in || n_in == 0 ||
        n_in > PL_GRAPH_MAX_RANK)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                        "inputdimensions must give one count for each of the %zu inputs "
                        "(at most %d)",
                        n_in, PL_GRAPH_MAX_RANK);
    int64_t want[PL_GRAPH_MAX_RANK];
    for (size_t i = 0; i < n_in; i++)
        want[i] = dims->ints[i];
    const char *ins[PL_GRAPH_MAX_RANK];
    for (size_t i = 0; i < n_in; i++) {
        const char *x = lw_input(w, i);
        const pl_graph_tensor *t = lw_tensor(w, x);
        if (t == NULL || t->ndim != 2 || t->dims[1] != want[i])
            return lw_error(w, PL_CODE_UNSUPPORTED,
                            "input %zu must be [N, %lld] (inputdimensions[%zu])", i,
                            (long long)want[i], i);
        if (!PL_DTYPE_EQ(t->dtype, PL_DTYPE_F32))
            PL_RETURN_IF_ERROR(lw_cast(w, x, 1, &x));
        ins[i] = x;
    }
    PL_RETURN_IF_ERROR(lw_become(w, "Concat", ins, n_in));
    return pl_graph_attr_int(w->g, w->id, "axis", 1);
}

/* ZipMap (skl2onnx's classifiers end in it by default): a sequence of
 * maps, one a row, from each class label to its probability. Plinth's
 * values are tensors, so the node becomes the Identity of the [N, C]
 * tensor it zips, column j the class classlabels[j], and the graph keeps a
 * note saying so (the model's description lists it). */
static pl_status *lw_ml_zipmap(lw *w)
{
    const char *x = lw_input(w, 0);
    const pl_attr *li = lw_attr(w, "classlabels_int64s"), *ls = lw_attr(w, "classlabels_strings");
    size_t n = li != NULL && li->kind == PL_ATTR_INTS     ? li->n
               : ls != NULL && ls->kind == PL_ATTR_STRINGS ? ls->n
                                                           : 0;
    const pl_graph_tensor *t = lw_tensor(w, x);
    if (n == 0)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                        "classlabels_int64s or classlabels_strings must list the classes");
    if (t != NULL && t->ndim >= 0 &&
        (t->ndim != 2 || (t->dims[1] >= 0 && (size_t)t->dims[1] != n)))
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "X must be [N, %zu] for %zu class labels", n,
                        n);
    const pl_graph_node *node = pl_graph_get_node(w->g, w->id);
    const char *y = pl_graph_get_tensor(w->g, node->outputs[0])->name;
    if (!pl_graph_note(w->g,
                       "output '%s' of node '%s' (ZipMap) is a sequence of maps in ONNX: given "
                       "as the [N, %zu] tensor of values it zips, column j the class of "
                       "classlabels[j]",
                       y, w->base, n))
        return lw_error(w, PL_CODE_OUT_OF_MEMORY, "out of memory for a note");
    return lw_become(w, "Identity", (const char *[]){x}, 1);
}

/* LabelEncoder with numeric keys and values (keys_int64s or keys_floats,
 * values_int64s or values_floats, ONNX-ML 2 and later; scikit-learn's
 * IsolationForest maps leaf ids to path lengths so): one ai.plinth
 * LabelEncode node (schema in opset_index.c, the cpu module's
 * label_encode.c) over constants of the keys, the values and the default
 * (default_int64 -1, default_float -0.0); X cast to the keys' type. A NaN
 * key matches a NaN of X from ONNX-ML 4 on, as the spec and ONNX Runtime
 * read it. String keys, values and the tensor forms are refused. */
static pl_status *lw_ml_label_encoder(lw *w)
{
    const char *x = lw_input(w, 0);
    const pl_attr *ki = lw_attr(w, "keys_int64s"), *kf = lw_attr(w, "keys_floats");
    const pl_attr *vi = lw_attr(w, "values_int64s"), *vf = lw_attr(w, "values_floats");
    const pl_graph_tensor *xt = lw_tensor(w, x);
    bool int_keys = ki != NULL && ki->kind == PL_ATTR_INTS && ki->n > 0;
    bool float_keys = kf != NULL && kf->kind == PL_ATTR_FLOATS && kf->n > 0;
    bool int_vals = vi != NULL && vi->kind == PL_ATTR_INTS && vi->n > 0;
    bool float_vals = vf != NULL && vf->kind == PL_ATTR_FLOATS && vf->n > 0;
    if (!(int_keys ^ float_keys) || !(int_vals ^ float_vals) || xt == NULL || xt->ndim < 0)
        return lw_error(w, PL_CODE_UNSUPPORTED,
                        "only numeric keys and values (keys_int64s or keys_floats, values_int64s "
                        "or values_floats) are run (string ones come here as int64 ids)");
    /* (the constants added below may move the graph's tensors: XT goes stale) */
    const pl_dtype xdt = xt->dtype;
    size_t n = int_keys ? ki->n : kf->n;
    if ((int_vals ? vi->n : vf->n) != n)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "%zu keys and %zu values", n,
                        int_vals ? vi->n : vf->n);
    int64_t nn = (int64_t)n, ml = pl_graph_opset(w->g, "ai.onnx.ml");
    const char *ins[4];
    if (int_keys) {
        PL_RETURN_IF_ERROR(lw_const(w, "keys", PL_DTYPE_I64, 1, &nn, ki->ints, n * 8, &ins[1]));
    } else {
        PL_RETURN_IF_ERROR(lw_f32s(w, "keys", kf->floats, n, &ins[1]));
    }
    if (int_vals) {
        int64_t d = lw_attr_i(w, "default_int64", -1);
        PL_RETURN_IF_ERROR(lw_const(w, "values", PL_DTYPE_I64, 1, &nn, vi->ints, n * 8, &ins[2]));
        PL_RETURN_IF_ERROR(lw_const(w, "default", PL_DTYPE_I64, 0, NULL, &d, 8, &ins[3]));
    } else {
        float d = (float)lw_attr_f(w, "default_float", -0.0);
        PL_RETURN_IF_ERROR(lw_f32s(w, "values", vf->floats, n, &ins[2]));
        PL_RETURN_IF_ERROR(lw_const(w, "default", PL_DTYPE_F32, 0, NULL, &d, 4, &ins[3]));
    }
    /* X's type is the keys' (an int64 X for int keys; f32 for float ones) */
    if (int_keys && !PL_DTYPE_EQ(xdt, PL_DTYPE_I64))
        PL_RETURN_IF_ERROR(lw_cast(w, x, 7, &x));
    else if (!int_keys && !PL_DTYPE_EQ(xdt, PL_DTYPE_F32))
        PL_RETURN_IF_ERROR(lw_cast(w, x, 1, &x));
    ins[0] = x;
    PL_RETURN_IF_ERROR(lw_become_in(w, "ai.plinth", "LabelEncode", ins, 4, false));
    return pl_graph_attr_int(w->g, w->id, "nan_matches", ml >= 4);
}

/* MatMulBnb4(A, B, absmax): ONNX Runtime's bitsandbytes-style 4-bit
 * weights (its MatMulBnb4Quantizer): the [K, N] weight transposed to
 * [N, K] and flattened, in blocks of block_size, each element a 4-bit code
 * (high nibble first) into the FP4 (quant_type 0) or NF4 (1) table of 16
 * values, times its block's absmax. Dequantized by graph ops (Cast, Floor,
 * Concat, a Gather of the table, an Expand of absmax, Mul, Reshape,
 * Transpose) which constant folding runs once at load, so a run is one
 * float MatMul, as MatMulNBits. f32 A (absmax f32 or f16); training_mode
 * refused. */
static pl_status *lw_ms_matmul_bnb4(lw *w)
{
    /* the code tables (bitsandbytes' FP4 with a bias of 3, scaled to an
     * absmax of 1; QLoRA's NormalFloat 4) */
    static const double fp4[16] = {0.0, 0.005208333333, 0.6666666667, 1.0, 0.3333333333, 0.5,
                                   0.1666666667, 0.25, -0.0, -0.005208333333, -0.6666666667,
                                   -1.0, -0.3333333333, -0.5, -0.1666666667, -0.25};
    static const double nf4[16] = {
        -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
        -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
        0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
        0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0};
    int64_t k = lw_attr_i(w, "K", 0), n = lw_attr_i(w, "N", 0);
    int64_t bs = lw_attr_i(w, "block_size", 0), qt = lw_attr_i(w, "quant_type", -1);
    const char *a = lw_input(w, 0), *b = lw_input(w, 1), *am = lw_input(w, 2);
    if (lw_attr_i(w, "training_mode", 0) != 0)
        return lw_error(w, PL_CODE_UNSUPPORTED, "training_mode is not supported");
    if (qt != 0 && qt != 1)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "quant_type must be 0 (FP4) or 1 (NF4)");
    if (k <= 0 || n <= 0 || bs <= 0 || bs % 2 != 0 || k > (INT64_C(1) << 31) ||
        n > (INT64_C(1) << 31))
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "K, N and an even block_size are required");
    if (w->version < 13)
        return lw_error(w, PL_CODE_UNSUPPORTED, "needs ai.onnx opset 13 or later");
    int64_t nk = n * k, bytes = (nk + 1) / 2, nb = (nk + bs - 1) / bs;
    const pl_graph_tensor *at = lw_tensor(w, a), *bt = lw_tensor(w, b), *mt = lw_tensor(w, am);
    if (at == NULL || !PL_DTYPE_EQ(at->dtype, PL_DTYPE_F32))
        return lw_error(w, PL_CODE_UNSUPPORTED, "input A must be f32");
    if (bt == NULL || !PL_DTYPE_EQ(bt->dtype, PL_DTYPE_U8) || bt->ndim != 1 ||
        bt->dims[0] != bytes)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "B must be uint8 [ceil(N K / 2)] = [%lld]",
                        (long long)bytes);
    if (mt == NULL || (!PL_DTYPE_EQ(mt->dtype, PL_DTYPE_F32) &&
                       !PL_DTYPE_EQ(mt->dtype, PL_DTYPE_F16)) ||
        mt->ndim != 1 || mt->dims[0] != nb)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                        "absmax must be f32 or f16 [ceil(N K / block_size)] = [%lld]",
                        (long long)nb);
    bool am_f16 = PL_DTYPE_EQ(mt->dtype, PL_DTYPE_F16);
    /* (tensor pointers go stale from here: adding tensors moves them) */
    const char *bf, *codes, *table, *vals, *m, *shape, *mx, *wf, *wt;
    PL_RETURN_IF_ERROR(lw_cast(w, b, 1, &bf));
    PL_RETURN_IF_ERROR(lw_reshape(w, bf, (const int64_t[]){1, bytes}, 2, &bf));
    PL_RETURN_IF_ERROR(lw_nibbles(w, bf, 1, bytes, true, &bf));
    PL_RETURN_IF_ERROR(lw_reshape(w, bf, (const int64_t[]){2 * bytes}, 1, &codes));
    if (2 * bytes != nk)
        PL_RETURN_IF_ERROR(lw_head(w, codes, 0, nk, &codes));
    PL_RETURN_IF_ERROR(lw_cast(w, codes, 7, &codes));
    PL_RETURN_IF_ERROR(lw_f32s(w, "table", qt ? nf4 : fp4, 16, &table));
    PL_RETURN_IF_ERROR(lw_node(w, "Gather", (const char *[]){table, codes}, 2, &vals, NULL));
    m = am;
    if (am_f16)
        PL_RETURN_IF_ERROR(lw_cast(w, m, 1, &m));
    PL_RETURN_IF_ERROR(lw_reshape(w, m, (const int64_t[]){nb, 1}, 2, &m));
    PL_RETURN_IF_ERROR(lw_i64s(w, "shape", (const int64_t[]){nb, bs}, 2, &shape));
    PL_RETURN_IF_ERROR(lw_node(w, "Expand", (const char *[]){m, shape}, 2, &mx, NULL));
    PL_RETURN_IF_ERROR(lw_reshape(w, mx, (const int64_t[]){nb * bs}, 1, &mx));
    if (nb * bs != nk)
        PL_RETURN_IF_ERROR(lw_head(w, mx, 0, nk, &mx));
    PL_RETURN_IF_ERROR(lw_binary(w, "Mul", vals, mx, &wf));
    PL_RETURN_IF_ERROR(lw_reshape(w, wf, (const int64_t[]){n, k}, 2, &wf));
    PL_RETURN_IF_ERROR(lw_perm(w, wf, (const int64_t[]){1, 0}, 2, &wt));
    return lw_become(w, "MatMul", (const char *[]){a, wt}, 2);
}

/* SVMClassifier (scikit-learn's SVC and NuSVC through skl2onnx): the node
 * becomes ai.plinth SVMClassify (schema in opset_index.c, the cpu module's
 * svm.c), both outputs kept, over constants of its support vectors,
 * coefficients, rho, vectors per class, labels and Platt's prob_a and
 * prob_b; the kernel as attributes. ONNX Runtime's reading: the label by
 * one-vs-one votes, Z the pairwise decisions ([-d, d] for two classes) or,
 * with prob_a and prob_b, the coupled probabilities. post_transform other
 * than NONE, liblinear's form (no support vectors) and string labels are
 * refused. */
static pl_status *lw_ml_svm_classifier(lw *w)
{
    const char *x;
    int64_t cols;
    size_t nl;
    const int64_t *labels;
    PL_RETURN_IF_ERROR(lw_ml_input(w, &x, &cols));
    PL_RETURN_IF_ERROR(lw_ml_labels(w, "classlabels_ints", &labels, &nl));
    if (strcmp(lw_attr_s(w, "post_transform", "NONE"), "NONE") != 0)
        return lw_error(w, PL_CODE_UNSUPPORTED, "post_transform '%s' (NONE only)",
                        lw_attr_s(w, "post_transform", "NONE"));
    const pl_attr *per = lw_attr(w, "vectors_per_class"), *sv = lw_attr(w, "support_vectors");
    const pl_attr *coef = lw_attr(w, "coefficients"), *rho = lw_attr(w, "rho");
    const pl_attr *pa = lw_attr(w, "prob_a"), *pb = lw_attr(w, "prob_b"), *kp = lw_attr(w, "kernel_params");
    int64_t c = (int64_t)nl, s = 0;
    for (size_t i = 0; per != NULL && per->kind == PL_ATTR_INTS && i < per->n; i++)
        s += per->ints[i] > 0 ? per->ints[i] : 0;
    if (s == 0 || per->n != nl)
        return lw_error(w, PL_CODE_UNSUPPORTED,
                        "no support vectors or no vectors_per_class per class (liblinear's form)");
    int64_t pairs = c * (c - 1) / 2;
    bool proba = pa != NULL && pa->kind == PL_ATTR_FLOATS && pa->n > 0;
    if (nl < 2 || cols < 1 || sv == NULL || sv->kind != PL_ATTR_FLOATS ||
        sv->n != (size_t)(s * cols) || coef == NULL || coef->kind != PL_ATTR_FLOATS ||
        coef->n != (size_t)((c - 1) * s) || rho == NULL || rho->kind != PL_ATTR_FLOATS ||
        rho->n != (size_t)pairs ||
        (proba && (pa->n != (size_t)pairs || pb == NULL || pb->kind != PL_ATTR_FLOATS ||
                   pb->n != (size_t)pairs)))
        return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                        "%zu classes, %lld vectors of %lld features: support_vectors, "
                        "coefficients, rho (and prob_a, prob_b) do not fit",
                        nl, (long long)s, (long long)cols);
    const char *ins[8];
    size_t nv;
    ins[0] = x;
    int64_t vd[2] = {s, cols}, cd[2] = {c - 1, s};
    PL_RETURN_IF_ERROR(lw_ml_floats(w, "support_vectors", 2, vd, &nv, &ins[1]));
    PL_RETURN_IF_ERROR(lw_ml_floats(w, "coefficients", 2, cd, &nv, &ins[2]));
    PL_RETURN_IF_ERROR(lw_ml_floats(w, "rho", 0, NULL, &nv, &ins[3]));
    PL_RETURN_IF_ERROR(lw_const(w, "vectors_per_class", PL_DTYPE_I64, 1, &c, per->ints,
                                (size_t)c * 8, &ins[4]));
    PL_RETURN_IF_ERROR(lw_const(w, "labels", PL_DTYPE_I64, 1, &c, labels, (size_t)c * 8, &ins[5]));
    size_t n_in = 6;
    if (proba) {
        PL_RETURN_IF_ERROR(lw_ml_floats(w, "prob_a", 0, NULL, &nv, &ins[6]));
        PL_RETURN_IF_ERROR(lw_ml_floats(w, "prob_b", 0, NULL, &nv, &ins[7]));
        n_in = 8;
    }
    const char *type = lw_attr_s(w, "kernel_type", "LINEAR");
    double kv[3] = {0, 0, 0};
    for (size_t i = 0; kp != NULL && kp->kind == PL_ATTR_FLOATS && i < kp->n && i < 3; i++)
        kv[i] = kp->floats[i];
    /* the node itself, both outputs kept (its attributes go: the type is
     * copied first) */
    char type_copy[16];
    snprintf(type_copy, sizeof type_copy, "%s", type);
    PL_RETURN_IF_ERROR(lw_become_in(w, "ai.plinth", "SVMClassify", ins, n_in, true));
    PL_RETURN_IF_ERROR(
        pl_graph_attr_string(w->g, w->id, "kernel_type", type_copy, strlen(type_copy)));
    PL_RETURN_IF_ERROR(pl_graph_attr_float(w->g, w->id, "gamma", kv[0]));
    PL_RETURN_IF_ERROR(pl_graph_attr_float(w->g, w->id, "coef0", kv[1]));
    return pl_graph_attr_float(w->g, w->id, "degree", kv[2]);
}

/* ---- the text ops whose output width depends on the text ----------------------- */

/* Adds ai.plinth OP(INS) with the node's attributes, one output named
 * after WHAT (*OUT), or, with TARGET not PL_TID_NONE, writing that tensor
 * (an output of the node handed over). */
static pl_status *lw_text_node(lw *w, const char *op, const char *const *ins, size_t n_in,
                               const char *what, pl_tid target, const char **out)
{
    char node_name[LW_NAME];
    char *o = lw_slot(w);
    if (o == NULL)
        return lw_error(w, PL_CODE_INTERNAL, "too many names in one rewrite");
    pl_rewrite_fresh_name(w->g, w->base, op, node_name, sizeof node_name);
    pl_rewrite_fresh_name(w->g, w->base, what, o, LW_NAME);
    pl_nid id;
    PL_RETURN_IF_ERROR(pl_graph_add_node(w->g, node_name, op, "ai.plinth", ins, n_in,
                                         (const char *[]){o}, 1, &id));
    PL_RETURN_IF_ERROR(pl_graph_node_copy_attrs(w->g, id, pl_graph_get_node(w->g, w->id)));
    if (target != PL_TID_NONE) {
        PL_RETURN_IF_ERROR(pl_graph_node_set_outputs(w->g, id, &target, 1));
        snprintf(o, LW_NAME, "%s", pl_graph_get_tensor(w->g, target)->name);
    }
    *out = o;
    return NULL;
}

/* Turns the node into ai.plinth OP(INS), its attributes kept, its first
 * output only. */
static pl_status *lw_text_become(lw *w, const char *op, const char *const *ins, size_t n_in)
{
    pl_tid tids[2];
    for (size_t i = 0; i < n_in && i < 2; i++)
        if ((tids[i] = pl_graph_find_tensor(w->g, ins[i])) == PL_TID_NONE)
            return lw_error(w, PL_CODE_INTERNAL, "rewrite lost tensor '%s'", ins[i]);
    PL_RETURN_IF_ERROR(pl_graph_node_set_inputs(w->g, w->id, tids, n_in));
    const pl_graph_node *n = pl_graph_get_node(w->g, w->id);
    if (n->n_outputs > 1) {
        pl_tid first = n->outputs[0];
        PL_RETURN_IF_ERROR(pl_graph_node_set_outputs(w->g, w->id, &first, 1));
    }
    return pl_graph_node_set_op(w->g, w->id, "ai.plinth", op);
}

/* com.microsoft Tokenizer: the width of its output (the most tokens of a
 * string, with the marks; 0 when no string has a token) as ai.plinth
 * TokenizerWidth, an int64 [1] known once a staged session binds it, and
 * the tokens padded to it as TokenizerPadded. */
static pl_status *lw_ms_tokenizer(lw *w)
{
    const char *x = lw_input(w, 0), *width;
    PL_RETURN_IF_ERROR(lw_text_node(w, "TokenizerWidth", (const char *[]){x}, 1, "width",
                                    PL_TID_NONE, &width));
    return lw_text_become(w, "TokenizerPadded", (const char *[]){x, width}, 2);
}

/* StringSplit: the number of parts of each string (ai.plinth
 * StringSplitCounts, the node's output Z), the most of them (a ReduceMax
 * over them and a 0, so that an empty input gives 0) and the parts padded
 * with "" to it (StringSplitPadded, the node's output Y). */
static pl_status *lw_string_split(lw *w)
{
    const char *x = lw_input(w, 0), *counts, *flat, *zero, *all, *width;
    const pl_graph_node *n = pl_graph_get_node(w->g, w->id);
    pl_tid z = n->n_outputs > 1 ? n->outputs[1] : PL_TID_NONE;
    PL_RETURN_IF_ERROR(lw_text_node(w, "StringSplitCounts", (const char *[]){x}, 1, "counts", z,
                                    &counts));
    PL_RETURN_IF_ERROR(lw_reshape(w, counts, (const int64_t[]){-1}, 1, &flat));
    PL_RETURN_IF_ERROR(lw_i64s(w, "zero", (const int64_t[]){0}, 1, &zero));
    pl_nid cat;
    PL_RETURN_IF_ERROR(lw_node(w, "Concat", (const char *[]){flat, zero}, 2, &all, &cat));
    PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, cat, "axis", 0));
    PL_RETURN_IF_ERROR(lw_axes_op(w, "ReduceMax", 18, all, (const int64_t[]){0}, 1, &width));
    return lw_text_become(w, "StringSplitPadded", (const char *[]){x, width}, 2);
}

/* com.microsoft MurmurHash3 of int32 or uint32 keys: ai.plinth MurmurHash3,
 * the same attributes (of strings, the strings pass made it
 * StringMurmurHash3 already). */
static pl_status *lw_ms_murmur(lw *w)
{
    return pl_graph_node_set_op(w->g, w->id, "ai.plinth", "MurmurHash3");
}

/* StringNormalizer with stopwords: the kept strings, normalised, first in
 * a buffer of the input's shape, and their number (at least 1: none kept
 * is one "", as ONNX says) from ai.plinth StringNormalizerPadded; the node
 * becomes the Slice of that many along the last axis. */
static pl_status *lw_string_normalizer(lw *w)
{
    const char *x = lw_input(w, 0), *padded, *count;
    pl_nid id;
    PL_RETURN_IF_ERROR(lw_node2(w, "StringNormalizerPadded", "ai.plinth", (const char *[]){x}, 1,
                                "kept", "count", &padded, &count, &id));
    /* (strings: never bound by value when a staged session's frontier) */
    pl_graph_get_tensor_mut(w->g, pl_graph_find_tensor(w->g, padded))->is_string = true;
    PL_RETURN_IF_ERROR(pl_graph_node_copy_attrs(w->g, id, pl_graph_get_node(w->g, w->id)));
    const char *zero, *axis;
    PL_RETURN_IF_ERROR(lw_i64s(w, "start", (const int64_t[]){0}, 1, &zero));
    PL_RETURN_IF_ERROR(lw_i64s(w, "axis", (const int64_t[]){-1}, 1, &axis));
    return lw_become(w, "Slice", (const char *[]){padded, zero, count, axis}, 4);
}

/* ---- the table ------------------------------------------------------------------ */

static pl_status *lw_tensor_scatter(lw *w);
static pl_status *lw_causal_conv(lw *w);

static const struct {
    const char *domain; /* "" (ai.onnx) or com.microsoft */
    const char *op;
    int64_t since;      /* ai.onnx: the version the rewrite applies from */
    pl_status *(*fn)(lw *w);
} lw_rules[] = {
    {"", "Gelu", 20, lw_gelu},
    {"", "Mish", 18, lw_mish},
    {"", "Swish", 24, lw_swish},
    {"", "RMSNormalization", 23, lw_rms_norm},
    {"", "GroupNormalization", 18, lw_group_norm},
    {"", "Attention", 23, lw_attention},
    {"", "RotaryEmbedding", 23, lw_rotary},
    {"", "Resize", 18, lw_resize},
    {"", "GridSample", 20, lw_grid_sample},
    {"", "DFT", 20, lw_dft},
    {"", "SwiGLU", 28, lw_swiglu},
    {"", "TensorScatter", 24, lw_tensor_scatter},
    {"", "CausalConvWithState", 27, lw_causal_conv},
    {"", "CenterCropPad", 18, lw_center_crop_pad},
    {"", "AffineGrid", 20, lw_affine_grid},
    {"", "NonZero", 9, lw_nonzero},
    {"", "Compress", 9, lw_compress},
    {"", "NonMaxSuppression", 10, lw_nms},
    {"", "Unique", 11, lw_unique},
    {"", "StringSplit", 20, lw_string_split},
    {"", "StringNormalizer", 10, lw_string_normalizer},
    {"com.microsoft", "Tokenizer", 0, lw_ms_tokenizer},
    {"com.microsoft", "MurmurHash3", 0, lw_ms_murmur},
    {"", "SimplifiedLayerNormalization", 1, lw_ms_simplified_ln},
    {"ai.onnx.ml", "Scaler", 0, lw_ml_scaler},
    {"ai.onnx.ml", "Normalizer", 0, lw_ml_normalizer},
    {"ai.onnx.ml", "LinearRegressor", 0, lw_ml_linear_regressor},
    {"ai.onnx.ml", "Binarizer", 0, lw_ml_binarizer},
    {"ai.onnx.ml", "ArrayFeatureExtractor", 0, lw_ml_feature_extractor},
    {"ai.onnx.ml", "LinearClassifier", 0, lw_ml_linear_classifier},
    {"ai.onnx.ml", "TreeEnsembleRegressor", 0, lw_ml_tree_regressor},
    {"ai.onnx.ml", "TreeEnsembleClassifier", 0, lw_ml_tree_classifier},
    {"ai.onnx.ml", "SVMRegressor", 0, lw_ml_svm_regressor},
    {"ai.onnx.ml", "SVMClassifier", 0, lw_ml_svm_classifier},
    {"ai.onnx.ml", "LabelEncoder", 0, lw_ml_label_encoder},
    {"ai.onnx.ml", "ZipMap", 0, lw_ml_zipmap},
    {"ai.onnx.ml", "Imputer", 0, lw_ml_imputer},
    {"ai.onnx.ml", "OneHotEncoder", 0, lw_ml_one_hot},
    {"ai.onnx.ml", "FeatureVectorizer", 0, lw_ml_feature_vectorizer},
    /* ONNX's experimental ops, at any opset (ONNX Runtime's reading) */
    {"", "ImageScaler", 1, lw_image_scaler},
    {"", "Scale", 1, lw_scale},
    {"", "Affine", 1, lw_affine},
    {"", "ScaledTanh", 1, lw_scaled_act},
    {"", "ParametricSoftplus", 1, lw_scaled_act},
    {"", "Crop", 1, lw_crop},
    {"", "ThresholdedRelu", 1, lw_thresholded_relu_old}, /* before 10 only: see below */
    {"", "MeanVarianceNormalization", 1, lw_mvn_old},    /* before 9 only */
    {"", "BatchNormalization", 14, lw_bn_training},     /* training_mode = 1 only */
    {"com.microsoft", "Gelu", 0, lw_ms_gelu_erf},
    {"com.microsoft", "FastGelu", 0, lw_ms_fast_gelu},
    {"com.microsoft", "BiasGelu", 0, lw_ms_bias_gelu},
    {"com.microsoft", "QuickGelu", 0, lw_ms_quick_gelu},
    {"com.microsoft", "BiasAdd", 0, lw_ms_bias_add},
    {"com.microsoft", "FusedMatMul", 0, lw_ms_fused_matmul},
    {"com.microsoft", "SkipLayerNormalization", 0, lw_ms_skip_ln},
    {"com.microsoft", "SkipSimplifiedLayerNormalization", 0, lw_ms_skip_rms},
    {"com.microsoft", "SimplifiedLayerNormalization", 0, lw_ms_simplified_ln},
    {"com.microsoft", "Attention", 0, lw_ms_attention},
    {"com.microsoft", "MultiHeadAttention", 0, lw_ms_mha},
    {"com.microsoft", "GroupQueryAttention", 0, lw_ms_gqa},
    {"com.microsoft", "RotaryEmbedding", 0, lw_ms_rotary},
    {"com.microsoft", "EmbedLayerNormalization", 0, lw_ms_embed_ln},
    {"com.microsoft", "FusedConv", 0, lw_ms_fused_conv},
    {"com.microsoft", "FusedGemm", 0, lw_ms_fused_gemm},
    {"com.microsoft", "QLinearAdd", 0, lw_ms_qlinear_add},
    {"com.microsoft", "QLinearMul", 0, lw_ms_qlinear_mul},
    {"com.microsoft", "QLinearSigmoid", 0, lw_ms_qlinear_sigmoid},
    {"com.microsoft", "QLinearSoftmax", 0, lw_ms_qlinear_softmax},
    {"com.microsoft", "QLinearWhere", 0, lw_ms_qlinear_where},
    {"com.microsoft", "QAttention", 0, lw_ms_qattention},
    {"com.microsoft", "QLinearLeakyRelu", 0, lw_ms_qlinear_leaky},
    {"com.microsoft", "QLinearGlobalAveragePool", 0, lw_ms_qlinear_gap},
    {"com.microsoft", "QLinearAveragePool", 0, lw_ms_qlinear_avgpool},
    {"com.microsoft", "QLinearConcat", 0, lw_ms_qlinear_concat},
    {"com.microsoft", "QGemm", 0, lw_ms_qgemm},
    {"com.microsoft", "MatMulIntegerToFloat", 0, lw_ms_matmul_int_to_float},
    {"com.microsoft", "DynamicQuantizeMatMul", 0, lw_ms_dyn_quant_matmul},
    {"com.microsoft", "MatMulNBits", 0, lw_ms_matmul_nbits},
    {"com.microsoft", "MatMulBnb4", 0, lw_ms_matmul_bnb4},
    {"com.microsoft", "DynamicQuantizeLSTM", 0, lw_ms_dyn_quant_lstm},
    {"com.microsoft", "QuantizeLinear", 0, lw_ms_quantize},
    {"com.microsoft", "DequantizeLinear", 0, lw_ms_dequantize},
};

/* TensorScatter 24 (past_cache, update, write_indices; axis, mode): the
 * KV-cache update of an LLM's attention. UPDATE (the cache's shape but
 * sequence_length at AXIS) is written into a copy of the cache from
 * position write_indices[b] of each batch entry b on (0 without it; with
 * mode circular modulo the cache's length there). Written as the
 * ScatterElements it is: indices of the update's shape, write_indices[b] +
 * s along AXIS (a Range over the update's length, read with Shape so a
 * length known only at run time works), broadcast over the other axes. */
static pl_status *lw_tensor_scatter(lw *w)
{
    const char *cache = lw_input(w, 0), *upd = lw_input(w, 1), *wi = lw_input(w, 2);
    const pl_graph_tensor *ct = lw_tensor(w, cache), *ut = lw_tensor(w, upd);
    if (ct == NULL || ut == NULL || ct->ndim < 2 || ut->ndim != ct->ndim)
        return lw_error(w, PL_CODE_UNSUPPORTED, "past_cache and update must have one known "
                                                "rank of at least 2");
    int64_t r = ct->ndim, axis = lw_attr_i(w, "axis", -2);
    if (axis < 0)
        axis += r;
    if (axis < 1 || axis >= r)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "axis %lld is out of range for rank %lld "
                                                     "(the batch axis excluded)",
                        (long long)lw_attr_i(w, "axis", -2), (long long)r);
    const char *mode = lw_attr_s(w, "mode", "linear");
    bool circular = strcmp(mode, "circular") == 0;
    if (!circular && strcmp(mode, "linear") != 0)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "mode '%s'; linear or circular expected",
                        mode);
    int64_t max_len = ct->dims[axis];
    /* (nothing is read through CT or UT past here: adding nodes moves them) */
    ct = ut = NULL;
    const char *shape, *len, *zero, *one, *ax, *pos, *idx;
    PL_RETURN_IF_ERROR(lw_unary(w, "Shape", upd, &shape));
    PL_RETURN_IF_ERROR(lw_i64_scalar(w, "axis", axis, &ax));
    PL_RETURN_IF_ERROR(lw_binary(w, "Gather", shape, ax, &len)); /* a scalar */
    PL_RETURN_IF_ERROR(lw_i64_scalar(w, "zero", 0, &zero));
    PL_RETURN_IF_ERROR(lw_i64_scalar(w, "one", 1, &one));
    PL_RETURN_IF_ERROR(lw_node(w, "Range", (const char *[]){zero, len, one}, 3, &pos, NULL));
    /* positions along AXIS: [1, ..., S, ..., 1] */
    int64_t at_axis[PL_GRAPH_MAX_RANK], per_batch[PL_GRAPH_MAX_RANK];
    for (int64_t d = 0; d < r; d++) {
        at_axis[d] = d == axis ? -1 : 1;
        per_batch[d] = d == 0 ? -1 : 1;
    }
    PL_RETURN_IF_ERROR(lw_reshape(w, pos, at_axis, r, &idx));
    if (wi[0] != '\0') {
        const char *wb, *w64;
        PL_RETURN_IF_ERROR(lw_cast(w, wi, 7, &w64));
        PL_RETURN_IF_ERROR(lw_reshape(w, w64, per_batch, r, &wb));
        PL_RETURN_IF_ERROR(lw_binary(w, "Add", idx, wb, &idx));
    }
    if (circular) {
        const char *m;
        PL_RETURN_IF_ERROR(lw_i64_scalar(w, "max_sequence_length", max_len, &m));
        PL_RETURN_IF_ERROR(lw_binary(w, "Mod", idx, m, &idx));
    }
    PL_RETURN_IF_ERROR(lw_binary(w, "Expand", idx, shape, &idx));
    PL_RETURN_IF_ERROR(lw_become(w, "ScatterElements", (const char *[]){cache, idx, upd}, 3));
    return pl_graph_attr_int(w->g, w->id, "axis", axis);
}

/* CausalConvWithState 27 (input [B, C, L], weight [C, 1, K], bias,
 * past_state [B, C, K - 1]; activation none | silu | swish), the stateful
 * depthwise convolution of Mamba and Gated DeltaNet layers, as the three ops
 * it fuses: the state (zeros without one) before the input along time, a
 * Conv of C groups without padding (then x * Sigmoid(x) for silu/swish), and
 * present_state the last K - 1 steps of that concatenation. */
static pl_status *lw_causal_conv(lw *w)
{
    const char *x = lw_input(w, 0), *wt = lw_input(w, 1), *b = lw_input(w, 2);
    const char *past = lw_input(w, 3);
    const pl_graph_tensor *xt = lw_tensor(w, x), *wtt = lw_tensor(w, wt);
    if (xt == NULL || wtt == NULL || xt->ndim != 3 || wtt->ndim != 3 || wtt->dims[0] < 1 ||
        wtt->dims[1] != 1 || wtt->dims[2] < 1)
        return lw_error(w, PL_CODE_UNSUPPORTED, "needs an input [B, C, L] and a weight "
                                                "[C, 1, K] of known shape");
    int64_t c = wtt->dims[0], k = wtt->dims[2];
    const char *act = lw_attr_s(w, "activation", "none");
    bool silu = strcmp(act, "silu") == 0 || strcmp(act, "swish") == 0;
    if (!silu && strcmp(act, "none") != 0)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "activation '%s'; none, silu or swish "
                                                     "expected",
                        act);
    xt = wtt = NULL; /* (adding nodes moves the graph's tensors) */
    const char *cat;
    pl_nid id;
    if (past[0] != '\0') {
        PL_RETURN_IF_ERROR(lw_node(w, "Concat", (const char *[]){past, x}, 2, &cat, &id));
        PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, id, "axis", 2));
    } else {
        const char *pads;
        PL_RETURN_IF_ERROR(lw_i64s(w, "pads", (const int64_t[]){0, 0, k - 1, 0, 0, 0}, 6, &pads));
        PL_RETURN_IF_ERROR(lw_binary(w, "Pad", x, pads, &cat));
    }
    /* present_state, where the node gives it: the last K - 1 steps */
    const pl_graph_node *n = pl_graph_get_node(w->g, w->id);
    pl_tid state = n->n_outputs > 1 ? n->outputs[1] : PL_TID_NONE;
    if (state != PL_TID_NONE) {
        const char *st, *en, *ax, *tmp;
        int64_t start = k > 1 ? -(k - 1) : INT64_MAX, end = INT64_MAX, axis = 2;
        pl_nid sid;
        PL_RETURN_IF_ERROR(lw_i64s(w, "starts", &start, 1, &st));
        PL_RETURN_IF_ERROR(lw_i64s(w, "ends", &end, 1, &en));
        PL_RETURN_IF_ERROR(lw_i64s(w, "axes", &axis, 1, &ax));
        PL_RETURN_IF_ERROR(lw_node(w, "Slice", (const char *[]){cat, st, en, ax}, 4, &tmp, &sid));
        PL_RETURN_IF_ERROR(pl_graph_node_set_outputs(w->g, sid, &state, 1));
    }
    const char *ins[3] = {cat, wt, b};
    size_t n_in = b[0] != '\0' ? 3 : 2;
    if (!silu) {
        PL_RETURN_IF_ERROR(lw_become(w, "Conv", ins, n_in));
        return pl_graph_attr_int(w->g, w->id, "group", c);
    }
    const char *y, *sg;
    PL_RETURN_IF_ERROR(lw_node(w, "Conv", ins, n_in, &y, &id));
    PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, id, "group", c));
    PL_RETURN_IF_ERROR(lw_unary(w, "Sigmoid", y, &sg));
    return lw_become(w, "Mul", (const char *[]){y, sg}, 2);
}

/* P (a scale or zero point of blocked quantisation: X's shape but
 * ceil(D / block) at AXIS, where X has D) with each entry repeated BLOCK
 * times along AXIS and cut to D: one value per element of X. */
static pl_status *lw_block_expand(lw *w, const char *p, int64_t r, const int64_t *xdims,
                                  const int64_t *pdims, int64_t axis, int64_t block,
                                  const char **out)
{
    int64_t split[PL_GRAPH_MAX_RANK + 1], wide[PL_GRAPH_MAX_RANK + 1], merged[PL_GRAPH_MAX_RANK];
    for (int64_t d = 0, k = 0; d < r; d++) {
        split[k] = wide[k] = pdims[d];
        merged[d] = pdims[d];
        k++;
        if (d == axis) {
            split[k] = 1;
            wide[k] = block;
            merged[d] = pdims[d] * block;
            k++;
        }
    }
    const char *s1, *shape, *s2;
    PL_RETURN_IF_ERROR(lw_reshape(w, p, split, r + 1, &s1));
    PL_RETURN_IF_ERROR(lw_i64s(w, "block_shape", wide, r + 1, &shape));
    PL_RETURN_IF_ERROR(lw_binary(w, "Expand", s1, shape, &s2));
    PL_RETURN_IF_ERROR(lw_reshape(w, s2, merged, r, out));
    if (merged[axis] != xdims[axis])
        PL_RETURN_IF_ERROR(lw_head(w, *out, axis, xdims[axis], out));
    return NULL;
}

/* QuantizeLinear and DequantizeLinear 21 with block_size B: the scale (and
 * zero point) has X's rank and shape but ceil(D / B) at the axis, one value
 * per block of B elements along it (the last block may be short). Written
 * as the float arithmetic ONNX defines, each scale repeated over its block
 * (lw_block_expand): DequantizeLinear (X - ZP) * SCALE, QuantizeLinear
 * saturate(Round(X / SCALE) + ZP) (Round is half to even, as
 * QuantizeLinear's rounding), each then a constant fold where X is a
 * weight. f32 scales and inputs. */
static pl_status *lw_quant_blocked(lw *w, bool quantize)
{
    int64_t block = lw_attr_i(w, "block_size", 0);
    const char *x = lw_input(w, 0), *sc = lw_input(w, 1), *zp = lw_input(w, 2);
    const pl_graph_tensor *xt = lw_tensor(w, x), *st = lw_tensor(w, sc);
    const pl_graph_tensor *zt = zp[0] ? lw_tensor(w, zp) : NULL;
    if (block < 0)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "block_size %lld is negative",
                        (long long)block);
    if (lw_attr_i(w, "precision", 0) != 0)
        return lw_error(w, PL_CODE_UNSUPPORTED, "precision %lld is not supported",
                        (long long)lw_attr_i(w, "precision", 0));
    if (xt == NULL || st == NULL || xt->ndim < 1 || st->ndim != xt->ndim)
        return lw_error(w, PL_CODE_UNSUPPORTED, "blocked quantisation needs x and a scale of "
                                                "the same, known rank");
    if (!PL_DTYPE_EQ(st->dtype, PL_DTYPE_F32) ||
        (quantize && !PL_DTYPE_EQ(xt->dtype, PL_DTYPE_F32)))
        return lw_error(w, PL_CODE_UNSUPPORTED, "blocked quantisation of %s with %s scales is "
                                                "not supported (f32 only)",
                        pl_dtype_name(xt->dtype), pl_dtype_name(st->dtype));
    int64_t axis = lw_attr_i(w, "axis", 1);
    if (axis < 0)
        axis += xt->ndim;
    if (axis < 0 || axis >= xt->ndim)
        return lw_error(w, PL_CODE_INVALID_ARGUMENT, "axis %lld is out of range for rank %d",
                        (long long)lw_attr_i(w, "axis", 1), (int)xt->ndim);
    for (int d = 0; d < xt->ndim; d++) {
        int64_t want = d == axis ? (xt->dims[d] + block - 1) / block : xt->dims[d];
        if (xt->dims[d] < 0 || st->dims[d] != want ||
            (zt != NULL && (zt->ndim != xt->ndim || zt->dims[d] != want))) {
            char bx[160], bs[160];
            return lw_error(w, PL_CODE_INVALID_ARGUMENT,
                            "block_size %lld along axis %lld: x %s needs a scale%s of x's "
                            "shape with ceil(%lld / %lld) at the axis, got %s",
                            (long long)block, (long long)axis,
                            pl_dims_format(xt->dims, xt->ndim, bx, sizeof bx),
                            zt != NULL ? " and zero point" : "", (long long)xt->dims[axis],
                            (long long)block, pl_dims_format(st->dims, st->ndim, bs, sizeof bs));
        }
    }
    /* the quantized type: the zero point's, else output_dtype's, else u8 */
    int64_t to = 2;
    pl_dtype qt = zt != NULL ? zt->dtype : quantize ? PL_DTYPE_U8 : xt->dtype;
    if (zt == NULL && quantize && lw_attr_i(w, "output_dtype", 0) != 0)
        to = lw_attr_i(w, "output_dtype", 0);
    else
        to = PL_DTYPE_EQ(qt, PL_DTYPE_U8)    ? 2
             : PL_DTYPE_EQ(qt, PL_DTYPE_I8)  ? 3
             : PL_DTYPE_EQ(qt, PL_DTYPE_U16) ? 4
             : PL_DTYPE_EQ(qt, PL_DTYPE_I16) ? 5
             : PL_DTYPE_EQ(qt, PL_DTYPE_I32) ? 6
                                             : -1;
    static const double lo[] = {0, 0, 0, -128, 0, -32768}, hi[] = {0, 0, 255, 127, 65535, 32767};
    if (to < 2 || to > (quantize ? 5 : 6))
        return lw_error(w, PL_CODE_UNSUPPORTED, "blocked quantisation to %s is not supported",
                        pl_dtype_name(qt));
    /* (copied: adding nodes moves the graph's tensors) */
    int64_t r = xt->ndim, xd[PL_GRAPH_MAX_RANK], sd[PL_GRAPH_MAX_RANK];
    memcpy(xd, xt->dims, (size_t)r * sizeof *xd);
    memcpy(sd, st->dims, (size_t)r * sizeof *sd); /* the zero point's are the same */
    bool has_zp = zt != NULL;
    xt = st = zt = NULL;
    const char *se, *ze = NULL, *zf;
    PL_RETURN_IF_ERROR(lw_block_expand(w, sc, r, xd, sd, axis, block, &se));
    if (has_zp) {
        PL_RETURN_IF_ERROR(lw_cast(w, zp, 1, &zf));
        PL_RETURN_IF_ERROR(lw_block_expand(w, zf, r, xd, sd, axis, block, &ze));
    }
    if (!quantize) {
        const char *xf;
        PL_RETURN_IF_ERROR(lw_cast(w, x, 1, &xf));
        if (ze != NULL)
            PL_RETURN_IF_ERROR(lw_binary(w, "Sub", xf, ze, &xf));
        return lw_become(w, "Mul", (const char *[]){xf, se}, 2);
    }
    const char *q, *rq, *mn, *mx, *c;
    PL_RETURN_IF_ERROR(lw_binary(w, "Div", x, se, &q));
    PL_RETURN_IF_ERROR(lw_unary(w, "Round", q, &rq));
    if (ze != NULL)
        PL_RETURN_IF_ERROR(lw_binary(w, "Add", rq, ze, &rq));
    PL_RETURN_IF_ERROR(lw_scalar(w, "qmin", lo[to], &mn));
    PL_RETURN_IF_ERROR(lw_scalar(w, "qmax", hi[to], &mx));
    PL_RETURN_IF_ERROR(lw_node(w, "Clip", (const char *[]){rq, mn, mx}, 3, &c, NULL));
    PL_RETURN_IF_ERROR(lw_become(w, "Cast", (const char *[]){c}, 1));
    return pl_graph_attr_int(w->g, w->id, "to", to);
}

static pl_status *lw_quantize(lw *w)
{
    return lw_attr_i(w, "block_size", 0) != 0 ? lw_quant_blocked(w, true) : lw_quant(w, true);
}

static pl_status *lw_dequantize(lw *w)
{
    return lw_attr_i(w, "block_size", 0) != 0 ? lw_quant_blocked(w, false) : lw_quant(w, false);
}

/* QLinearMatMul 21 takes f16 and bf16 scales: they are cast to f32, the
 * type the older schema and the kernels take (each scale is one value or
 * one per column, exactly representable in f32). */
static pl_status *lw_qlinear_matmul_scales(lw *w, bool *changed)
{
    const pl_graph_node *n = pl_graph_get_node(w->g, w->id);
    if (n->n_inputs < 8)
        return NULL; /* the schema names what is missing */
    pl_tid ins[8];
    memcpy(ins, n->inputs, sizeof ins);
    bool cast = false;
    static const size_t scales[] = {1, 4, 6};
    for (size_t k = 0; k < PL_COUNT(scales); k++) {
        const char *name = lw_input(w, scales[k]);
        const pl_graph_tensor *t = lw_tensor(w, name);
        if (t == NULL || t->dtype.bits != 16 ||
            (t->dtype.code != PL_TYPE_FLOAT && t->dtype.code != PL_TYPE_BFLOAT))
            continue;
        const char *f32;
        PL_RETURN_IF_ERROR(lw_cast(w, name, 1, &f32));
        ins[scales[k]] = pl_graph_find_tensor(w->g, f32);
        cast = true;
    }
    if (!cast)
        return NULL;
    *changed = true;
    n = pl_graph_get_node(w->g, w->id);
    pl_tid all[PL_OP_MAX_FORMAL];
    if (n->n_formal_inputs > PL_OP_MAX_FORMAL)
        return NULL;
    memcpy(all, n->inputs, n->n_formal_inputs * sizeof *all);
    memcpy(all, ins, sizeof ins);
    return pl_graph_node_set_inputs(w->g, w->id, all, n->n_formal_inputs);
}

/* Whether lowering FN is written for f32 only: ONNX Runtime's fused ops that
 * its transformers optimizer writes into f16 models too (convert_float_to_
 * float16 after the fusions: the usual GPU export, transformers.js's fp16
 * files), widened around the lowering by lw_widen16. */
static bool lw_f32_only(pl_status *(*fn)(lw *))
{
    return fn == lw_ms_skip_ln || fn == lw_ms_skip_rms || fn == lw_ms_embed_ln ||
           fn == lw_ms_attention || fn == lw_ms_mha || fn == lw_ms_simplified_ln ||
           fn == lw_ms_bias_add || fn == lw_ms_fused_matmul || fn == lw_ms_matmul_nbits ||
           fn == lw_ms_matmul_bnb4 || fn == lw_ms_rotary;
}

/* An f32-only lowering's node of type f16 or bf16: each input of that type read
 * through a Cast to f32 (typed here: the lowering reads its rank and dims
 * before inference sees the Cast; folding computes a constant's at load),
 * and each output but EmbedLayerNormalization's int32 mask_index written in
 * f32 to a new tensor that a Cast turns back into the node's own, of the
 * inputs' narrow type. The graph's f16 pass (optimize.c) then computes the
 * whole chain in f32. */
static pl_status *lw_widen16(lw *w, bool embed)
{
    const pl_graph_node *nd = pl_graph_get_node(w->g, w->id);
    size_t nin = nd->n_formal_inputs, nout = nd->n_outputs;
    /* the type T of the node: its first float input's (EmbedLayerNormalization's
     * word embeddings, the others' input 0) */
    pl_dtype narrow = {0, 0, 0};
    for (size_t k = 0; k < nin && narrow.lanes == 0; k++) {
        const pl_graph_tensor *t =
            nd->inputs[k] == PL_TID_NONE ? NULL : pl_graph_get_tensor(w->g, nd->inputs[k]);
        if (t != NULL && (t->dtype.code == PL_TYPE_FLOAT || t->dtype.code == PL_TYPE_BFLOAT))
            narrow = t->dtype;
    }
    if (narrow.bits != 16 || nin > PL_OP_MAX_FORMAL || nout > PL_OP_MAX_FORMAL)
        return NULL;
    pl_tid ins[PL_OP_MAX_FORMAL], outs[PL_OP_MAX_FORMAL];
    memcpy(ins, nd->inputs, nin * sizeof *ins);
    memcpy(outs, nd->outputs, nout * sizeof *outs);
    for (size_t k = 0; k < nin; k++) {
        const pl_graph_tensor *t =
            ins[k] == PL_TID_NONE ? NULL : pl_graph_get_tensor(w->g, ins[k]);
        if (t == NULL || !PL_DTYPE_EQ(t->dtype, narrow))
            continue;
        int32_t ndim = t->ndim;
        int64_t dims[PL_GRAPH_MAX_RANK];
        if (ndim > 0)
            memcpy(dims, t->dims, (size_t)ndim * sizeof *dims);
        const char *c;
        PL_RETURN_IF_ERROR(lw_cast(w, t->name, 1, &c));
        ins[k] = pl_graph_find_tensor(w->g, c);
        PL_RETURN_IF_ERROR(pl_graph_set_type(w->g, ins[k], PL_DTYPE_F32, ndim, dims, NULL));
    }
    PL_RETURN_IF_ERROR(pl_graph_node_set_inputs(w->g, w->id, ins, nin));
    pl_tid orig[PL_OP_MAX_FORMAL];
    for (size_t k = 0; k < nout; k++) {
        orig[k] = outs[k];
        if (outs[k] == PL_TID_NONE || (embed && k == 1))
            continue;
        char name[LW_NAME];
        pl_rewrite_fresh_name(w->g, w->base, "f32", name, sizeof name);
        PL_RETURN_IF_ERROR(pl_graph_tensor_get_or_add(w->g, name, &outs[k]));
    }
    PL_RETURN_IF_ERROR(pl_graph_node_set_outputs(w->g, w->id, outs, nout));
    for (size_t k = 0; k < nout; k++) {
        if (outs[k] == orig[k])
            continue;
        char node_name[LW_NAME];
        pl_rewrite_fresh_name(w->g, w->base, "Cast", node_name, sizeof node_name);
        pl_nid cid;
        PL_RETURN_IF_ERROR(pl_graph_add_node(
            w->g, node_name, "Cast", "",
            (const char *[]){pl_graph_get_tensor(w->g, outs[k])->name}, 1,
            (const char *[]){pl_graph_get_tensor(w->g, orig[k])->name}, 1, &cid));
        PL_RETURN_IF_ERROR(pl_graph_attr_int(w->g, cid, "to", lw_onnx_code(narrow)));
    }
    return NULL;
}

pl_status *pl_opset_lower_node(pl_graph *g, pl_nid id, int64_t version, bool *changed)
{
    const pl_graph_node *n = pl_graph_get_node(g, id);
    if (n == NULL)
        return NULL;
    const char *domain = strcmp(n->domain, "ai.onnx") == 0 ? "" : n->domain;
    /* Called for every node at every inference (a staged session infers
     * its tail for each new shape): the rule is found on the node's own
     * strings, and the rewrite's state (32 KiB of name slots) is made only
     * for a node that has one; zeroing it for every node was half of
     * planning a decoder's tail. */
    pl_status *(*fn)(lw *) = NULL;
    for (size_t i = 0; i < PL_COUNT(lw_rules); i++)
        if (lw_rules[i].op[0] == n->op[0] && version >= lw_rules[i].since &&
            strcmp(n->op, lw_rules[i].op) == 0 && strcmp(domain, lw_rules[i].domain) == 0)
            fn = lw_rules[i].fn;
    if ((fn == lw_thresholded_relu_old && version >= 10) || (fn == lw_mvn_old && version >= 9))
        fn = NULL; /* the standard op */
    if (fn == lw_string_normalizer) {
        const pl_attr *sw = pl_graph_node_attr(n, "stopwords");
        if (sw == NULL || sw->kind != PL_ATTR_STRINGS || sw->n == 0)
            fn = NULL; /* no stopwords: the shape stays, the op runs as it is */
    }
    if (fn == lw_bn_training) {
        const pl_attr *tm = pl_graph_node_attr(n, "training_mode");
        if (tm == NULL || tm->kind != PL_ATTR_INT || tm->i == 0)
            fn = NULL; /* inference: the standard op */
    }
    if (fn == NULL &&
        (domain[0] != '\0' ||
         !((version >= 19 && (strcmp(n->op, "QuantizeLinear") == 0 ||
                              strcmp(n->op, "DequantizeLinear") == 0)) ||
           (version >= 27 && strcmp(n->op, "Range") == 0) ||
           (version >= 28 && strcmp(n->op, "SpaceToDepth") == 0) ||
           (version >= 21 && strcmp(n->op, "QLinearMatMul") == 0))))
        return NULL;
    lw w;
    w.g = g;
    w.id = id;
    w.version = version;
    w.used = 0;
    w.narrow = false;
    w.exhausted = false;
    w.dtype = (pl_dtype){0, 0, 0};
    snprintf(w.base, sizeof w.base, "%s", n->name);
    snprintf(w.op, sizeof w.op, "%s", n->op);
    if (fn != NULL) {
        *changed = true;
        pl_status *st = lw_f32_only(fn) ? lw_widen16(&w, fn == lw_ms_embed_ln) : NULL;
        if (st == NULL)
            st = fn(&w);
        /* an input read as "" for want of a slot would have changed the op */
        if (st == NULL && w.exhausted)
            st = lw_error(&w, PL_CODE_INTERNAL, "the rewrite needed more than %d names",
                          LW_MAX_NAMES);
        return st;
    }
    if (domain[0] != '\0')
        return NULL;
    if (version >= 19 && strcmp(w.op, "QuantizeLinear") == 0)
        fn = lw_quantize;
    if (version >= 19 && strcmp(w.op, "DequantizeLinear") == 0)
        fn = lw_dequantize;
    if (version >= 27 && strcmp(w.op, "Range") == 0) {
        const char *in[3] = {lw_input(&w, 0), lw_input(&w, 1), lw_input(&w, 2)};
        const pl_graph_tensor *t = lw_tensor(&w, in[0]);
        int64_t code = t != NULL ? lw_onnx_code(t->dtype) : 0;
        *changed = true;
        if (t == NULL || t->dtype.bits != 16 || (code != 10 && code != 16)) {
            pl_graph_node_remove_attr(g, id, "stash_type");
            return NULL;
        }
        /* f16 or bf16 with stash_type 1 (the default): the three inputs
         * cast to f32, the range in f32, the result cast back, as ONNX
         * defines it; a range accumulated in 16 bits is refused */
        if (lw_attr_i(&w, "stash_type", 1) != 1)
            return lw_error(&w, PL_CODE_UNSUPPORTED, "Range on %s with stash_type %lld (in 16 "
                                                     "bits) is not supported",
                            pl_dtype_name(t->dtype), (long long)lw_attr_i(&w, "stash_type", 1));
        const char *f[3], *r;
        for (int k = 0; k < 3; k++)
            PL_RETURN_IF_ERROR(lw_cast(&w, in[k], 1, &f[k]));
        PL_RETURN_IF_ERROR(lw_node(&w, "Range", f, 3, &r, NULL));
        PL_RETURN_IF_ERROR(lw_become(&w, "Cast", (const char *[]){r}, 1));
        return pl_graph_attr_int(g, id, "to", code);
    }
    if (version >= 28 && strcmp(w.op, "SpaceToDepth") == 0) {
        /* DCR is every older version's order: the attribute goes; CRD
         * stays for the kernels (the cpu module's reads it, as
         * DepthToSpace's) */
        if (strcmp(lw_attr_s(&w, "mode", "DCR"), "CRD") == 0)
            return NULL;
        if (strcmp(lw_attr_s(&w, "mode", "DCR"), "DCR") != 0)
            return lw_error(&w, PL_CODE_INVALID_ARGUMENT, "mode '%s' is neither DCR nor CRD",
                            lw_attr_s(&w, "mode", ""));
        pl_graph_node_remove_attr(g, id, "mode");
        *changed = true;
        return NULL;
    }
    if (version >= 21 && strcmp(w.op, "QLinearMatMul") == 0)
        return lw_qlinear_matmul_scales(&w, changed);
    if (fn == NULL)
        return NULL;
    *changed = true;
    return fn(&w);
}
