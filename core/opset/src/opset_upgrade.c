/* opset_upgrade.c — converts the nodes of a graph that imports ai.onnx
 * opset 1 to 6 to opset 7, the oldest version whose schemas the core has,
 * so that old models (PyTorch's exports of 2018, the first model zoo) load
 * through the same schemas, inference and kernels as new ones.
 *
 * The steps are those of ONNX's version converter (onnx/version_converter),
 * applied to each node as the inference driver reaches it (opset.c), so that
 * the types of its inputs are known when a step needs them:
 *
 *   3 -> 4  Concat: an absent axis was 1; it becomes explicit.
 *   4 -> 5  Reshape: the 'shape' attribute becomes an int64 constant input.
 *   5 -> 6  'consumed_inputs' (a legacy in-place hint) is dropped.
 *   6 -> 7  Add Sub Mul Div Pow And Or Xor Equal Less Greater: the legacy
 *           broadcast (broadcast=1, axis=k: B lines up with A from axis k)
 *           becomes NumPy broadcasting: B gets trailing 1-dims (a reshaped
 *           copy of a constant B, else an Unsqueeze node before the node).
 *           Gemm drops 'broadcast'; BatchNormalization and Dropout drop
 *           'is_test' whatever its value, as the converter does for
 *           BatchNormalization (Plinth runs inference only, where Dropout
 *           is the identity). PRelu's slope of shape [C] was per channel:
 *           it gets trailing 1-dims, so that NumPy rules line it up with
 *           axis 1 (the converter calls PRelu 6 -> 7 compatible, which
 *           lines [C] up with the last axis instead).
 *
 * and, where the converter has no step though the op changed: Pad 1 -> 2
 * ('paddings' renamed 'pads'), Split 1 -> 2 (the optional 'split' input,
 * when constant, becomes the attribute), Tile 1 -> 6 (inputs tiles and
 * axis, when constant, become the repeats input), Cast 1 -> 6 ('to' named
 * the type by its string), Selu 1 -> 6 (its default alpha and gamma
 * changed). What cannot be converted is refused with the node and the
 * reason: a legacy broadcast whose ranks are unknown, a Split-1 without an
 * axis, a Tile-1 whose tiles or axis are computed. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "opset_internal.h"

/* ---- errors and names ----------------------------------------------------- */

static pl_status *up_error(const pl_graph *g, pl_nid id, int64_t from, pl_code code,
                           const char *fmt, ...) PL_PRINTF_LIKE(5, 6);

static pl_status *up_error(const pl_graph *g, pl_nid id, int64_t from, pl_code code,
                           const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const pl_graph_node *n = pl_graph_get_node(g, id);
    return pl_status_create(code, "node '%s' (%s): %s (converting ai.onnx opset %lld to %d)",
                            n->name, n->op, msg, (long long)from, PL_OPSET_UPGRADE_TARGET);
}

void pl_rewrite_fresh_name(const pl_graph *g, const char *base, const char *what, char *buf,
                           size_t cap)
{
    snprintf(buf, cap, "%.200s_%s", base, what);
    for (unsigned k = 1; pl_graph_find_tensor(g, buf) != PL_TID_NONE ||
                         pl_graph_find_node(g, buf) != PL_NID_NONE;
         k++)
        snprintf(buf, cap, "%.200s_%s_%u", base, what, k);
}

/* Input I of node ID, or NULL when absent. */
static const pl_graph_tensor *up_input(const pl_graph *g, pl_nid id, size_t i)
{
    const pl_graph_node *n = pl_graph_get_node(g, id);
    if (i >= n->n_inputs || n->inputs[i] == PL_TID_NONE)
        return NULL;
    return pl_graph_get_tensor(g, n->inputs[i]);
}

/* Replaces input I of node ID with tensor T (I < the node's input count). */
static pl_status *up_set_input(pl_graph *g, pl_nid id, size_t i, pl_tid t)
{
    const pl_graph_node *n = pl_graph_get_node(g, id);
    pl_tid ins[PL_OP_MAX_FORMAL];
    if (n->n_inputs > PL_OP_MAX_FORMAL || i >= n->n_inputs)
        return pl_status_create(PL_CODE_INTERNAL, "node '%s' (%s): input %zu of %zu", n->name,
                                n->op, i, n->n_inputs);
    memcpy(ins, n->inputs, n->n_inputs * sizeof *ins);
    ins[i] = t;
    return pl_graph_node_set_inputs(g, id, ins, n->n_inputs);
}

pl_status *pl_rewrite_add_constant(pl_graph *g, pl_nid id, const char *what, pl_dtype dtype,
                                   int32_t ndim, const int64_t *dims, const void *data,
                                   size_t nbytes, pl_tid *out_t)
{
    char name[256];
    pl_rewrite_fresh_name(g, pl_graph_get_node(g, id)->name, what, name, sizeof name);
    PL_RETURN_IF_ERROR(pl_graph_tensor_get_or_add(g, name, out_t));
    PL_RETURN_IF_ERROR(pl_graph_set_type(g, *out_t, dtype, ndim, dims, NULL));
    return pl_graph_set_constant(g, *out_t, data, nbytes);
}

/* The int value of attribute NAME of node ID into *OUT: 1 read, 0 absent,
 * -1 present with another kind. */
static int up_attr_int(const pl_graph *g, pl_nid id, const char *name, int64_t *out)
{
    const pl_attr *a = pl_graph_node_attr(pl_graph_get_node(g, id), name);
    if (a == NULL)
        return 0;
    if (a->kind != PL_ATTR_INT)
        return -1;
    *out = a->i;
    return 1;
}

/* The integer values of constant T (int64, int32 or a float type holding
 * integers) into OUT (capacity CAP). False when T is not a constant of that
 * kind, holds more than CAP values, or a float value is not an integer. */
static bool up_const_ints(const pl_graph_tensor *t, int64_t *out, size_t cap, size_t *out_n)
{
    *out_n = 0;
    size_t n;
    if (t == NULL || t->data == NULL || t->ndim < 0 || !pl_dims_elements(t->dims, t->ndim, &n) ||
        n > cap)
        return false;
    pl_dtype_set bit = pl_dtype_set_of(t->dtype);
    size_t esize = pl_dtype_size(t->dtype);
    if (!(bit & (PL_TS_I64 | PL_TS_I32 | PL_TS_F32 | PL_TS_F64)) || t->nbytes < n * esize)
        return false;
    const unsigned char *p = t->data;
    for (size_t i = 0; i < n; i++, p += esize) {
        double f;
        switch (bit) {
        case PL_TS_I64: memcpy(&out[i], p, 8); continue;
        case PL_TS_I32: { int32_t v; memcpy(&v, p, 4); out[i] = v; continue; }
        case PL_TS_F32: { float v; memcpy(&v, p, 4); f = v; break; }
        default: memcpy(&f, p, 8); break;
        }
        if (!(f == floor(f) && fabs(f) < 9.0e15))
            return false;
        out[i] = (int64_t)f;
    }
    *out_n = n;
    return true;
}

/* How many node inputs and graph outputs name tensor T. */
static size_t up_uses(const pl_graph *g, pl_tid t)
{
    size_t uses = pl_graph_get_tensor(g, t)->is_output;
    for (size_t i = 0; i < pl_graph_node_count(g); i++) {
        const pl_graph_node *n = pl_graph_get_node(g, (pl_nid)i);
        for (size_t k = 0; k < n->n_inputs; k++)
            uses += n->inputs[k] == t;
    }
    return uses;
}

/* Gives input I of node ID K trailing 1-dims. A constant is reshaped where
 * it lies when this is its only use, else replaced by a reshaped copy:
 * either way no node for the backends to run. Anything else goes through a
 * new Unsqueeze node (opset 7: axes is an attribute). */
static pl_status *up_append_ones(pl_graph *g, pl_nid id, size_t i, int32_t k)
{
    const pl_graph_tensor *b = up_input(g, id, i);
    int32_t rb = b->ndim;
    if (rb + k > PL_GRAPH_MAX_RANK)
        return pl_status_create(PL_CODE_INTERNAL, "rank %d over the limit", (int)(rb + k));
    int64_t dims[PL_GRAPH_MAX_RANK];
    for (int32_t d = 0; d < rb + k; d++)
        dims[d] = d < rb ? b->dims[d] : 1;
    pl_tid t, bt = pl_graph_get_node(g, id)->inputs[i];
    if (b->data != NULL && !b->is_input && up_uses(g, bt) == 1)
        return pl_graph_reshape_constant(g, bt, rb + k, dims);
    if (b->data != NULL && !b->is_input) {
        PL_RETURN_IF_ERROR(pl_rewrite_add_constant(g, id, "legacy_broadcast", b->dtype, rb + k, dims,
                                           b->data, b->nbytes, &t));
        return up_set_input(g, id, i, t);
    }
    int64_t axes[PL_GRAPH_MAX_RANK];
    for (int32_t d = 0; d < k; d++)
        axes[d] = rb + d;
    char node_name[256], out_name[256], in_name[256];
    snprintf(in_name, sizeof in_name, "%s", b->name);
    const char *base = pl_graph_get_node(g, id)->name;
    pl_rewrite_fresh_name(g, base, "legacy_broadcast", node_name, sizeof node_name);
    pl_rewrite_fresh_name(g, base, "legacy_broadcast_out", out_name, sizeof out_name);
    const char *ins[1] = {in_name}, *outs[1] = {out_name};
    pl_nid u;
    PL_RETURN_IF_ERROR(pl_graph_add_node(g, node_name, "Unsqueeze", "", ins, 1, outs, 1, &u));
    PL_RETURN_IF_ERROR(pl_graph_attr_ints(g, u, "axes", axes, (size_t)k));
    return up_set_input(g, id, i, pl_graph_find_tensor(g, out_name));
}

/* ---- the steps -------------------------------------------------------------- */

typedef pl_status *(*up_step_fn)(pl_graph *g, pl_nid id, int64_t from);

/* 5 -> 6 (Reshape 4 -> 5): the in-place hint has no meaning any more. */
static pl_status *up_consumed_inputs(pl_graph *g, pl_nid id, int64_t from)
{
    (void)from;
    pl_graph_node_remove_attr(g, id, "consumed_inputs");
    return NULL;
}

/* 6 -> 7: BatchNormalization and Dropout decide training from their
 * outputs (and Plinth runs inference only). */
static pl_status *up_is_test(pl_graph *g, pl_nid id, int64_t from)
{
    (void)from;
    pl_graph_node_remove_attr(g, id, "is_test");
    return NULL;
}

/* 6 -> 7: Gemm's C broadcasts one way to (M, N) by NumPy's rules; a C that
 * the legacy flag let broadcast does so as well. */
static pl_status *up_gemm(pl_graph *g, pl_nid id, int64_t from)
{
    (void)from;
    pl_graph_node_remove_attr(g, id, "broadcast");
    return NULL;
}

/* 6 -> 7: the legacy broadcast. Without broadcast=1 the shapes had to be
 * equal; with it and no axis, B matched a suffix of A — NumPy agrees with
 * both. With axis=k, B's dims line up with A's from k: B gets
 * rank(A) - k - rank(B) trailing 1-dims. */
static pl_status *up_broadcast(pl_graph *g, pl_nid id, int64_t from)
{
    int64_t bcast = 0, axis = 0;
    int has_b = up_attr_int(g, id, "broadcast", &bcast);
    int has_axis = up_attr_int(g, id, "axis", &axis);
    if (has_b < 0 || has_axis < 0)
        return up_error(g, id, from, PL_CODE_INVALID_ARGUMENT,
                        "attribute '%s' must be an int", has_b < 0 ? "broadcast" : "axis");
    const pl_graph_tensor *a = up_input(g, id, 0), *b = up_input(g, id, 1);
    if (has_b == 1 && bcast != 0 && has_axis == 1 && a != NULL && b != NULL) {
        if (a->ndim < 0 || b->ndim < 0)
            return up_error(g, id, from, PL_CODE_UNSUPPORTED,
                            "the legacy broadcast (broadcast=1, axis=%lld) needs the rank of "
                            "input %d ('%s'), which is unknown",
                            (long long)axis, a->ndim < 0 ? 0 : 1,
                            a->ndim < 0 ? a->name : b->name);
        if (axis < 0 || axis + b->ndim > a->ndim)
            return up_error(g, id, from, PL_CODE_INVALID_ARGUMENT,
                            "the legacy broadcast axis %lld does not fit input 1 ('%s', rank "
                            "%d) into input 0 ('%s', rank %d)",
                            (long long)axis, b->name, (int)b->ndim, a->name, (int)a->ndim);
        int32_t k = (int32_t)(a->ndim - axis - b->ndim);
        if (k > 0)
            PL_RETURN_IF_ERROR(up_append_ones(g, id, 1, k));
    }
    pl_graph_node_remove_attr(g, id, "broadcast");
    pl_graph_node_remove_attr(g, id, "axis");
    return NULL;
}

/* 6 -> 7: a slope of shape [C] was per channel (axis 1); NumPy lines it up
 * with the last axis unless it gets rank(X) - 2 trailing 1-dims. */
static pl_status *up_prelu(pl_graph *g, pl_nid id, int64_t from)
{
    const pl_graph_tensor *x = up_input(g, id, 0), *s = up_input(g, id, 1);
    if (x == NULL || s == NULL || s->ndim != 1 || s->dims[0] == 1)
        return NULL;
    if (x->ndim < 0)
        return up_error(g, id, from, PL_CODE_UNSUPPORTED,
                        "a per-channel slope ('%s') needs the rank of input 0 ('%s'), which "
                        "is unknown",
                        s->name, x->name);
    return x->ndim > 2 ? up_append_ones(g, id, 1, x->ndim - 2) : NULL;
}

/* 3 -> 4: Concat's axis defaulted to 1 and is required since. */
static pl_status *up_concat(pl_graph *g, pl_nid id, int64_t from)
{
    (void)from;
    if (pl_graph_node_attr(pl_graph_get_node(g, id), "axis") != NULL)
        return NULL;
    return pl_graph_attr_int(g, id, "axis", 1);
}

/* 4 -> 5: Reshape's 'shape' attribute becomes its second input. */
static pl_status *up_reshape(pl_graph *g, pl_nid id, int64_t from)
{
    const pl_graph_node *n = pl_graph_get_node(g, id);
    const pl_attr *a = pl_graph_node_attr(n, "shape");
    if (a == NULL || a->kind != PL_ATTR_INTS)
        return up_error(g, id, from, PL_CODE_INVALID_ARGUMENT,
                        "%s; before opset 5 the new shape is the ints attribute 'shape'",
                        a == NULL ? "no attribute 'shape'" : "attribute 'shape' is not ints");
    if (n->n_inputs != 1)
        return up_error(g, id, from, PL_CODE_INVALID_ARGUMENT,
                        "%zu inputs; before opset 5 Reshape takes one", n->n_inputs);
    int64_t dims[1] = {(int64_t)a->n};
    pl_tid t;
    PL_RETURN_IF_ERROR(pl_rewrite_add_constant(g, id, "shape", PL_DTYPE_I64, 1, dims, a->ints,
                                       a->n * sizeof(int64_t), &t));
    n = pl_graph_get_node(g, id);
    pl_tid ins[2] = {n->inputs[0], t};
    PL_RETURN_IF_ERROR(pl_graph_node_set_inputs(g, id, ins, 2));
    pl_graph_node_remove_attr(g, id, "shape");
    return NULL;
}

/* 1 -> 2: Pad's 'paddings' is 'pads', in the same order. */
static pl_status *up_pad(pl_graph *g, pl_nid id, int64_t from)
{
    const pl_graph_node *n = pl_graph_get_node(g, id);
    const pl_attr *a = pl_graph_node_attr(n, "paddings");
    if (a == NULL || a->kind != PL_ATTR_INTS || pl_graph_node_attr(n, "pads") != NULL)
        return up_error(g, id, from, PL_CODE_INVALID_ARGUMENT,
                        "opset 1's Pad takes its pads in the ints attribute 'paddings'%s",
                        a == NULL ? ", which is missing"
                        : a->kind != PL_ATTR_INTS ? ", which is not ints"
                                                  : ", and not 'pads'");
    int64_t pads[2 * PL_GRAPH_MAX_RANK];
    size_t count = a->n;
    if (count > PL_COUNT(pads))
        return up_error(g, id, from, PL_CODE_INVALID_ARGUMENT, "%zu paddings, more than %zu",
                        count, PL_COUNT(pads));
    memcpy(pads, a->ints, count * sizeof *pads);
    pl_graph_node_remove_attr(g, id, "paddings");
    return pl_graph_attr_ints(g, id, "pads", pads, count);
}

/* 1 -> 2: Split's lengths may come as a (float) second input; the axis
 * had no default. */
static pl_status *up_split(pl_graph *g, pl_nid id, int64_t from)
{
    const pl_graph_node *n = pl_graph_get_node(g, id);
    if (pl_graph_node_attr(n, "axis") == NULL)
        return up_error(g, id, from, PL_CODE_UNSUPPORTED,
                        "no attribute 'axis'; opset 1 leaves Split's default axis unspecified");
    const pl_graph_tensor *s = up_input(g, id, 1);
    if (s == NULL) {
        if (n->n_inputs > 1)
            return pl_graph_node_set_inputs(g, id, n->inputs, 1);
        return NULL;
    }
    if (pl_graph_node_attr(n, "split") != NULL)
        return up_error(g, id, from, PL_CODE_INVALID_ARGUMENT,
                        "the lengths are given twice, as attribute 'split' and as input 1");
    int64_t lengths[PL_KNOWN_MAX];
    size_t count;
    if (!up_const_ints(s, lengths, PL_COUNT(lengths), &count))
        return up_error(g, id, from, PL_CODE_UNSUPPORTED,
                        "input 1 ('%s'), the lengths, must be a constant of at most %d "
                        "integers",
                        s->name, PL_KNOWN_MAX);
    PL_RETURN_IF_ERROR(pl_graph_node_set_inputs(g, id, n->inputs, 1));
    return pl_graph_attr_ints(g, id, "split", lengths, count);
}

/* 5 -> 6: Tile(input, tiles, axis) repeated along one axis; Tile-6 takes
 * the repeats of every axis. */
static pl_status *up_tile(pl_graph *g, pl_nid id, int64_t from)
{
    const pl_graph_node *n = pl_graph_get_node(g, id);
    const pl_graph_tensor *x = up_input(g, id, 0), *tiles = up_input(g, id, 1),
                          *axis_t = up_input(g, id, 2);
    if (n->n_inputs != 3 || x == NULL || tiles == NULL || axis_t == NULL)
        return up_error(g, id, from, PL_CODE_INVALID_ARGUMENT,
                        "before opset 6 Tile takes three inputs (input, tiles, axis)");
    int64_t tv[1], av[1];
    size_t nt, na;
    if (!up_const_ints(tiles, tv, 1, &nt) || nt != 1 || !up_const_ints(axis_t, av, 1, &na) ||
        na != 1)
        return up_error(g, id, from, PL_CODE_UNSUPPORTED,
                        "inputs 1 ('%s') and 2 ('%s'), tiles and axis, must be constants of "
                        "one integer each",
                        tiles->name, axis_t->name);
    if (x->ndim < 0)
        return up_error(g, id, from, PL_CODE_UNSUPPORTED,
                        "the rank of input 0 ('%s') is unknown", x->name);
    int64_t axis;
    if (!pl_infer_axis(av[0], x->ndim, &axis) || tv[0] < 0)
        return up_error(g, id, from, PL_CODE_INVALID_ARGUMENT,
                        "axis %lld and tiles %lld do not fit input 0 of rank %d",
                        (long long)av[0], (long long)tv[0], (int)x->ndim);
    int64_t repeats[PL_GRAPH_MAX_RANK], dims[1] = {x->ndim};
    for (int32_t d = 0; d < x->ndim; d++)
        repeats[d] = d == axis ? tv[0] : 1;
    pl_tid t;
    PL_RETURN_IF_ERROR(pl_rewrite_add_constant(g, id, "repeats", PL_DTYPE_I64, 1, dims, repeats,
                                       (size_t)x->ndim * sizeof(int64_t), &t));
    pl_tid ins[2] = {pl_graph_get_node(g, id)->inputs[0], t};
    return pl_graph_node_set_inputs(g, id, ins, 2);
}

/* 5 -> 6: Cast's 'to' named the type ("FLOAT"); since, it is the
 * TensorProto number. */
static pl_status *up_cast(pl_graph *g, pl_nid id, int64_t from)
{
    static const char *const names[] = {
        "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64",
        "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64",
        "COMPLEX128", "BFLOAT16"};
    const pl_attr *a = pl_graph_node_attr(pl_graph_get_node(g, id), "to");
    if (a == NULL || a->kind != PL_ATTR_STRING)
        return NULL;
    int64_t type = 0;
    for (size_t k = 1; k < PL_COUNT(names); k++)
        if (strcmp(a->s ? a->s : "", names[k]) == 0)
            type = (int64_t)k;
    if (type == 0)
        return up_error(g, id, from, PL_CODE_INVALID_ARGUMENT,
                        "attribute 'to' is '%.64s', not a TensorProto type name",
                        a->s ? a->s : "");
    pl_graph_node_remove_attr(g, id, "to");
    return pl_graph_attr_int(g, id, "to", type);
}

/* 5 -> 6: Selu's defaults were float 1.6732 and 1.0507; they gained digits
 * in opset 6, so a node that relied on them gets them written out. */
static pl_status *up_selu(pl_graph *g, pl_nid id, int64_t from)
{
    (void)from;
    const pl_graph_node *n = pl_graph_get_node(g, id);
    if (pl_graph_node_attr(n, "alpha") == NULL)
        PL_RETURN_IF_ERROR(pl_graph_attr_float(g, id, "alpha", (double)1.6732f));
    if (pl_graph_node_attr(pl_graph_get_node(g, id), "gamma") == NULL)
        PL_RETURN_IF_ERROR(pl_graph_attr_float(g, id, "gamma", (double)1.0507f));
    return NULL;
}

/* Which step applies to which op: while the model's opset is below
 * BEFORE, in table order. */
static const struct {
    const char *op;
    int64_t before;
    up_step_fn fn;
} up_steps[] = {
    {"Abs", 6, up_consumed_inputs},
    {"Add", 6, up_consumed_inputs},
    {"Add", 7, up_broadcast},
    {"And", 7, up_broadcast},
    {"BatchNormalization", 6, up_consumed_inputs},
    {"BatchNormalization", 7, up_is_test},
    {"Cast", 6, up_cast},
    {"Ceil", 6, up_consumed_inputs},
    {"Clip", 6, up_consumed_inputs},
    {"Concat", 4, up_concat},
    {"Div", 6, up_consumed_inputs},
    {"Div", 7, up_broadcast},
    {"Dropout", 6, up_consumed_inputs},
    {"Dropout", 7, up_is_test},
    {"Elu", 6, up_consumed_inputs},
    {"Equal", 7, up_broadcast},
    {"Exp", 6, up_consumed_inputs},
    {"Floor", 6, up_consumed_inputs},
    {"Gemm", 7, up_gemm},
    {"Greater", 7, up_broadcast},
    {"HardSigmoid", 6, up_consumed_inputs},
    {"InstanceNormalization", 6, up_consumed_inputs},
    {"LeakyRelu", 6, up_consumed_inputs},
    {"Less", 7, up_broadcast},
    {"Log", 6, up_consumed_inputs},
    {"Max", 6, up_consumed_inputs},
    {"Mean", 6, up_consumed_inputs},
    {"Min", 6, up_consumed_inputs},
    {"Mul", 6, up_consumed_inputs},
    {"Mul", 7, up_broadcast},
    {"Neg", 6, up_consumed_inputs},
    {"Or", 7, up_broadcast},
    {"PRelu", 6, up_consumed_inputs},
    {"PRelu", 7, up_prelu},
    {"Pad", 2, up_pad},
    {"Pow", 7, up_broadcast},
    {"Reciprocal", 6, up_consumed_inputs},
    {"Relu", 6, up_consumed_inputs},
    {"Reshape", 5, up_consumed_inputs},
    {"Reshape", 5, up_reshape},
    {"Selu", 6, up_consumed_inputs},
    {"Selu", 6, up_selu},
    {"Sigmoid", 6, up_consumed_inputs},
    {"Split", 2, up_split},
    {"Sqrt", 6, up_consumed_inputs},
    {"Sub", 6, up_consumed_inputs},
    {"Sub", 7, up_broadcast},
    {"Sum", 6, up_consumed_inputs},
    {"Tanh", 6, up_consumed_inputs},
    {"Tile", 6, up_tile},
    {"Xor", 7, up_broadcast},
};

pl_status *pl_opset_upgrade_node(pl_graph *g, pl_nid id, int64_t from)
{
    const pl_graph_node *n = pl_graph_get_node(g, id);
    if (n == NULL || (n->domain[0] != '\0' && strcmp(n->domain, "ai.onnx") != 0))
        return NULL;
    char op[64];
    snprintf(op, sizeof op, "%s", n->op);
    for (size_t i = 0; i < PL_COUNT(up_steps); i++)
        if (from < up_steps[i].before && strcmp(op, up_steps[i].op) == 0)
            PL_RETURN_IF_ERROR(up_steps[i].fn(g, id, from));
    return NULL;
}
