/* opset_control.c — schemas of ONNX's control flow: If (opsets 1, 11, 13,
 * 16), Loop (1, 11, 13, 16) and Scan (8: a batch axis and sequence_lens;
 * 9, 11, 16: axes and directions per input and output). Each keeps its
 * bodies in GRAPH attributes.
 *
 * Inference checks every body's signature against the node (If's branches
 * take no inputs and give one output per node output; a Loop body takes
 * 2+N inputs and gives 1+N+K outputs; a Scan body takes as many inputs as
 * the node has states and scan inputs), types the body's inputs from the
 * node's, its outer-scope references from the enclosing graph, infers the
 * body (nested bodies in turn), and derives the node's outputs from the
 * body's: If's from both branches (a dim the branches disagree on is
 * unknown), Loop's carried values from the body, its scan outputs with the
 * trip count when it is known before the run (M known, and the condition
 * absent or known true and passed through unchanged by the body), Scan's
 * with the sequence length. Only tensors flow: sequence and optional
 * types are refused where the importer meets them. */
#include <stdio.h>
#include <string.h>

#include "opset_internal.h"

/* A tensor type, copied (a graph's dims move when it is retyped). */
typedef struct ctl_type {
    pl_dtype dtype;
    int32_t ndim;
    int64_t dims[PL_GRAPH_MAX_RANK];
} ctl_type;

static ctl_type ctl_type_of(const pl_graph_tensor *t)
{
    ctl_type c = {.dtype = t ? t->dtype : PL_DTYPE_UNKNOWN, .ndim = t ? t->ndim : -1};
    for (int32_t d = 0; t && d < t->ndim; d++)
        c.dims[d] = t->dims[d];
    return c;
}

static const ctl_type ctl_scalar_i64 = {.dtype = {PL_TYPE_INT, 64, 1}, .ndim = 0};
static const ctl_type ctl_scalar_bool = {.dtype = {PL_TYPE_BOOL, 8, 1}, .ndim = 0};

/* The body held by GRAPH attribute NAME (required by the schema). */
static pl_graph *ctl_body(pl_infer_ctx *ctx, const char *name)
{
    const pl_attr *a = pl_graph_node_attr(pl_infer_node(ctx), name);
    return a != NULL && a->kind == PL_ATTR_GRAPH && a->n == 1 ? a->graphs[0] : NULL;
}

static pl_status *ctl_arity(pl_infer_ctx *ctx, const char *attr, const pl_graph *body,
                            size_t want_in, size_t want_out, const char *why)
{
    size_t in = pl_graph_input_count(body), out = pl_graph_output_count(body);
    if (in == want_in && out == want_out)
        return NULL;
    return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                          "%s has %zu input%s and %zu output%s; it must have %zu and %zu (%s)",
                          attr, in, in == 1 ? "" : "s", out, out == 1 ? "" : "s", want_in,
                          want_out, why);
}

/* Gives input I of BODY the type T, against what the body declares. */
static pl_status *ctl_bind(pl_infer_ctx *ctx, const char *attr, pl_graph *body, size_t i,
                           const ctl_type *t)
{
    pl_tid id = pl_graph_input(body, i);
    const pl_graph_tensor *bt = pl_graph_get_tensor(body, id);
    ctl_type have = ctl_type_of(bt);
    char a[160], b[160];
    if (t->dtype.lanes != 0 && have.dtype.lanes != 0 && !PL_DTYPE_EQ(t->dtype, have.dtype))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "%s: input %zu ('%s') is declared %s but receives %s", attr, i,
                              bt->name, pl_dtype_name(have.dtype), pl_dtype_name(t->dtype));
    if (t->ndim >= 0 && have.ndim >= 0 && t->ndim != have.ndim)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "%s: input %zu ('%s') is declared %s but receives %s", attr, i,
                              bt->name, pl_dims_format(have.dims, have.ndim, a, sizeof a),
                              pl_dims_format(t->dims, t->ndim, b, sizeof b));
    ctl_type merged = *t;
    if (merged.dtype.lanes == 0)
        merged.dtype = have.dtype;
    if (merged.ndim < 0)
        merged = (ctl_type){.dtype = merged.dtype, .ndim = have.ndim};
    for (int32_t d = 0; d < merged.ndim; d++) {
        int64_t want = t->ndim >= 0 ? t->dims[d] : -1;
        int64_t decl = have.ndim >= 0 ? have.dims[d] : -1;
        merged.dims[d] = want >= 0 ? want : decl;
    }
    return pl_graph_set_type(body, id, merged.dtype, merged.ndim, merged.dims, NULL);
}

/* Types BODY's outer-scope references from the graph of the node and
 * infers it. */
static pl_status *ctl_infer_body(pl_infer_ctx *ctx, const char *attr, pl_graph *body)
{
    const pl_graph *g = pl_infer_graph(ctx);
    for (size_t t = 0; t < pl_graph_tensor_count(body); t++) {
        const pl_graph_tensor *bt = pl_graph_get_tensor(body, (pl_tid)t);
        if (!bt->is_outer || bt->data != NULL)
            continue;
        pl_tid o = pl_graph_find_tensor(g, bt->name);
        if (o == PL_TID_NONE)
            continue;
        ctl_type ot = ctl_type_of(pl_graph_get_tensor(g, o));
        PL_RETURN_IF_ERROR(pl_graph_set_type(body, (pl_tid)t, ot.dtype, ot.ndim, ot.dims, NULL));
    }
    const pl_graph_node *n = pl_infer_node(ctx);
    return pl_status_wrap(pl_opset_infer_body(pl_infer_opset(ctx), body),
                          "node '%s' (%s): %s: ", n->name, n->op, attr);
}

static ctl_type ctl_output(const pl_graph *body, size_t i)
{
    return ctl_type_of(pl_graph_get_tensor(body, pl_graph_output(body, i)));
}

static pl_status *ctl_set(pl_infer_ctx *ctx, size_t i, const ctl_type *t)
{
    return pl_infer_set_output(ctx, i, t->dtype, t->ndim, t->dims, NULL);
}

/* ---- If --------------------------------------------------------------------- */

static pl_status *if_infer(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *cond = pl_infer_input(ctx, 0);
    if (cond != NULL && cond->ndim > 0) {
        size_t n;
        if (cond->ndim > 1 || (pl_dims_elements(cond->dims, cond->ndim, &n) && n != 1))
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "cond must hold one element (a scalar or [1])");
    }
    size_t n_out = pl_infer_output_count(ctx);
    pl_graph *br[2] = {ctl_body(ctx, "then_branch"), ctl_body(ctx, "else_branch")};
    const char *names[2] = {"then_branch", "else_branch"};
    for (int b = 0; b < 2; b++) {
        PL_RETURN_IF_ERROR(ctl_arity(ctx, names[b], br[b], 0, n_out,
                                     "a branch takes no inputs and gives one output per "
                                     "output of the node"));
        PL_RETURN_IF_ERROR(ctl_infer_body(ctx, names[b], br[b]));
    }
    for (size_t o = 0; o < n_out; o++) {
        ctl_type t = ctl_output(br[0], o), e = ctl_output(br[1], o);
        if (t.dtype.lanes != 0 && e.dtype.lanes != 0 && !PL_DTYPE_EQ(t.dtype, e.dtype))
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "output %zu is %s in then_branch but %s in else_branch", o,
                                  pl_dtype_name(t.dtype), pl_dtype_name(e.dtype));
        if (t.dtype.lanes == 0)
            t.dtype = e.dtype;
        /* The branch taken is known only when the node runs: a dim the
         * branches disagree on is unknown. */
        if (t.ndim != e.ndim)
            t.ndim = -1;
        for (int32_t d = 0; d < t.ndim; d++)
            if (t.dims[d] != e.dims[d])
                t.dims[d] = -1;
        PL_RETURN_IF_ERROR(ctl_set(ctx, o, &t));
    }
    return NULL;
}

/* ---- Loop ------------------------------------------------------------------- */

/* Whether body output 0 (the condition out) is body input 1 unchanged:
 * the input itself or an Identity of it. */
static bool loop_cond_passes_through(const pl_graph *body)
{
    pl_tid in = pl_graph_input(body, 1), out = pl_graph_output(body, 0);
    if (in == out)
        return true;
    const pl_graph_tensor *t = pl_graph_get_tensor(body, out);
    if (t->producer == PL_NID_NONE)
        return false;
    const pl_graph_node *p = pl_graph_get_node(body, t->producer);
    return strcmp(p->op, "Identity") == 0 && p->domain[0] == '\0' && p->n_inputs >= 1 &&
           p->inputs[0] == in;
}

/* Whether tensor T of G is a constant true, or an input whose known value
 * says so. */
static bool loop_known_true(pl_infer_ctx *ctx, size_t input)
{
    const int64_t *v;
    uint64_t mask;
    size_t n;
    return pl_infer_known_ints(ctx, input, &v, &mask, &n) && n == 1 && (mask & 1) && v[0] != 0;
}

static pl_status *loop_infer(pl_infer_ctx *ctx)
{
    size_t n_in = pl_infer_input_count(ctx), n_out = pl_infer_output_count(ctx);
    if (n_in < 2)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "expects M and cond (either may be empty) before the carried "
                              "values, got %zu inputs",
                              n_in);
    size_t n_carried = n_in - 2;
    if (n_out < n_carried)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "has %zu carried values but only %zu outputs", n_carried, n_out);
    size_t n_scan = n_out - n_carried;
    for (int k = 0; k < 2; k++) {
        const pl_graph_tensor *t = pl_infer_input(ctx, (size_t)k);
        pl_dtype want = k == 0 ? ctl_scalar_i64.dtype : ctl_scalar_bool.dtype;
        if (t != NULL && t->dtype.lanes != 0 && !PL_DTYPE_EQ(t->dtype, want))
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "%s is %s; it must be %s",
                                  k == 0 ? "M" : "cond", pl_dtype_name(t->dtype),
                                  pl_dtype_name(want));
        size_t n;
        if (t != NULL && t->ndim >= 0 && (t->ndim > 1 || (pl_dims_elements(t->dims, t->ndim, &n) && n != 1)))
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "%s must hold one element",
                                  k == 0 ? "M" : "cond");
    }
    pl_graph *body = ctl_body(ctx, "body");
    char why[160];
    snprintf(why, sizeof why,
             "2 + %zu carried inputs; the condition, %zu carried and %zu scan outputs",
             n_carried, n_carried, n_scan);
    PL_RETURN_IF_ERROR(ctl_arity(ctx, "body", body, 2 + n_carried, 1 + n_carried + n_scan, why));
    PL_RETURN_IF_ERROR(ctl_bind(ctx, "body", body, 0, &ctl_scalar_i64));
    PL_RETURN_IF_ERROR(ctl_bind(ctx, "body", body, 1, &ctl_scalar_bool));
    for (size_t i = 0; i < n_carried; i++) {
        ctl_type t = ctl_type_of(pl_infer_input(ctx, 2 + i));
        PL_RETURN_IF_ERROR(ctl_bind(ctx, "body", body, 2 + i, &t));
    }
    PL_RETURN_IF_ERROR(ctl_infer_body(ctx, "body", body));
    ctl_type c = ctl_output(body, 0);
    if (c.dtype.lanes != 0 && !PL_DTYPE_EQ(c.dtype, ctl_scalar_bool.dtype))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "body output 0 (the condition) is %s, not bool",
                              pl_dtype_name(c.dtype));
    for (size_t i = 0; i < n_carried; i++) {
        ctl_type in = ctl_type_of(pl_infer_input(ctx, 2 + i)), out = ctl_output(body, 1 + i);
        if (in.dtype.lanes != 0 && out.dtype.lanes != 0 && !PL_DTYPE_EQ(in.dtype, out.dtype))
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "carried value %zu enters as %s but the body gives %s", i,
                                  pl_dtype_name(in.dtype), pl_dtype_name(out.dtype));
        /* The final value is the initial one after zero iterations. */
        if (out.ndim != in.ndim)
            out.ndim = -1;
        for (int32_t d = 0; d < out.ndim; d++)
            if (out.dims[d] != in.dims[d])
                out.dims[d] = -1;
        if (out.dtype.lanes == 0)
            out.dtype = in.dtype;
        PL_RETURN_IF_ERROR(ctl_set(ctx, i, &out));
    }
    /* Trip count known before the run: M known, and the loop cannot stop
     * early (no cond, or cond known true and passed through). */
    int64_t trips = -1;
    const int64_t *mv;
    uint64_t mask;
    size_t mn;
    bool have_cond = pl_infer_input(ctx, 1) != NULL;
    if (pl_infer_known_ints(ctx, 0, &mv, &mask, &mn) && mn == 1 && (mask & 1) &&
        (!have_cond || (loop_known_true(ctx, 1) && loop_cond_passes_through(body))))
        trips = mv[0] < 0 ? 0 : mv[0];
    for (size_t k = 0; k < n_scan; k++) {
        ctl_type b = ctl_output(body, 1 + n_carried + k), out = {.dtype = b.dtype, .ndim = -1};
        if (b.ndim >= 0 && b.ndim < PL_GRAPH_MAX_RANK) {
            out.ndim = b.ndim + 1;
            out.dims[0] = trips;
            memcpy(out.dims + 1, b.dims, (size_t)b.ndim * sizeof b.dims[0]);
        }
        PL_RETURN_IF_ERROR(ctl_set(ctx, n_carried + k, &out));
    }
    return NULL;
}

/* ---- Scan ------------------------------------------------------------------- */

/* Axis I of INTS attribute NAME, or DEF when absent, checked against RANK
 * (for outputs rank + 1 is the rank made). */
static pl_status *scan_axis(pl_infer_ctx *ctx, const char *name, size_t i, int64_t rank,
                            int64_t *out)
{
    const int64_t *v;
    size_t n;
    *out = 0;
    if (!pl_infer_attr_ints(ctx, name, &v, &n))
        return NULL;
    if (i >= n)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "%s lists %zu axes, fewer than the node's %zu", name, n, i + 1);
    if (rank < 0) {
        *out = v[i];
        return NULL;
    }
    if (!pl_infer_axis(v[i], rank, out))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "%s[%zu] = %lld is out of range for rank %lld", name, i,
                              (long long)v[i], (long long)rank);
    return NULL;
}

static pl_status *scan_count_attr(pl_infer_ctx *ctx, const char *name, size_t want)
{
    const int64_t *v;
    size_t n;
    if (pl_infer_attr_ints(ctx, name, &v, &n) && n != want)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "%s lists %zu values; the node has %zu", name, n, want);
    for (size_t i = 0; strstr(name, "directions") && i < n; i++)
        if (v[i] != 0 && v[i] != 1)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "%s[%zu] is %lld; a direction is 0 or 1", name, i,
                                  (long long)v[i]);
    return NULL;
}

static pl_status *scan_infer(pl_infer_ctx *ctx)
{
    bool v8 = pl_infer_opset_version(ctx) < 9;
    size_t first = v8 ? 1 : 0; /* Scan-8 opens with sequence_lens */
    size_t n_in = pl_infer_input_count(ctx), n_out = pl_infer_output_count(ctx);
    int64_t m = pl_infer_attr_int(ctx, "num_scan_inputs");
    if (m < 1 || (size_t)m > n_in - first)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "num_scan_inputs is %lld; it must be 1 to %zu (the node's inputs)",
                              (long long)m, n_in - first);
    size_t n_scan_in = (size_t)m, n_state = n_in - first - n_scan_in;
    if (n_out < n_state)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "has %zu states but only %zu outputs", n_state, n_out);
    size_t n_scan_out = n_out - n_state;
    pl_graph *body = ctl_body(ctx, "body");
    char why[160];
    snprintf(why, sizeof why, "%zu states and %zu scan inputs in; the states and %zu scan outputs out",
             n_state, n_scan_in, n_scan_out);
    PL_RETURN_IF_ERROR(ctl_arity(ctx, "body", body, n_state + n_scan_in, n_out, why));
    if (v8) {
        PL_RETURN_IF_ERROR(scan_count_attr(ctx, "directions", n_scan_in));
    } else {
        PL_RETURN_IF_ERROR(scan_count_attr(ctx, "scan_input_axes", n_scan_in));
        PL_RETURN_IF_ERROR(scan_count_attr(ctx, "scan_input_directions", n_scan_in));
        PL_RETURN_IF_ERROR(scan_count_attr(ctx, "scan_output_axes", n_scan_out));
        PL_RETURN_IF_ERROR(scan_count_attr(ctx, "scan_output_directions", n_scan_out));
    }
    /* Scan-8 keeps axis 0 for the batch and scans axis 1. */
    int64_t batch = -1, seq = -1;
    bool batch_known = false, seq_known = false;
    for (size_t i = 0; i < n_state + n_scan_in; i++) {
        const pl_graph_tensor *x = pl_infer_input(ctx, first + i);
        if (x == NULL)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "input %zu is required",
                                  first + i);
        ctl_type t = ctl_type_of(x), slice = {.dtype = t.dtype, .ndim = -1};
        bool is_scan = i >= n_state;
        int64_t axis = v8 ? 1 : 0;
        if (!v8 && is_scan)
            PL_RETURN_IF_ERROR(scan_axis(ctx, "scan_input_axes", i - n_state, t.ndim, &axis));
        int32_t drop = (int32_t)(v8 ? 1 : 0) + (is_scan ? 1 : 0);
        if (t.ndim >= 0 && t.ndim < drop)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "input %zu ('%s') has rank %d; it needs at least %d", first + i,
                                  x->name, (int)t.ndim, (int)drop);
        if (t.ndim >= 0) {
            slice.ndim = 0;
            for (int32_t d = 0; d < t.ndim; d++) {
                if (v8 && d == 0) {
                    if (t.dims[0] >= 0 && batch_known && batch >= 0 && t.dims[0] != batch)
                        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                              "input %zu has batch %lld, another %lld", first + i,
                                              (long long)t.dims[0], (long long)batch);
                    if (t.dims[0] >= 0)
                        batch = t.dims[0];
                    batch_known = true;
                    continue;
                }
                if (is_scan && d == axis) {
                    if (t.dims[d] >= 0 && seq_known && seq >= 0 && t.dims[d] != seq)
                        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                              "scan input %zu has %lld steps, another %lld",
                                              i - n_state, (long long)t.dims[d], (long long)seq);
                    if (t.dims[d] >= 0)
                        seq = t.dims[d];
                    seq_known = true;
                    continue;
                }
                slice.dims[slice.ndim++] = t.dims[d];
            }
        }
        PL_RETURN_IF_ERROR(ctl_bind(ctx, "body", body, i, &slice));
    }
    PL_RETURN_IF_ERROR(ctl_infer_body(ctx, "body", body));
    for (size_t o = 0; o < n_out; o++) {
        ctl_type b = ctl_output(body, o), out = {.dtype = b.dtype, .ndim = -1};
        bool is_scan = o >= n_state;
        if (!is_scan && o < n_state) {
            ctl_type in = ctl_type_of(pl_infer_input(ctx, first + o));
            if (in.dtype.lanes != 0 && b.dtype.lanes != 0 && !PL_DTYPE_EQ(in.dtype, b.dtype))
                return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                      "state %zu enters as %s but the body gives %s", o,
                                      pl_dtype_name(in.dtype), pl_dtype_name(b.dtype));
        }
        int32_t extra = (int32_t)(v8 ? 1 : 0) + (is_scan ? 1 : 0);
        if (b.ndim >= 0 && b.ndim + extra <= PL_GRAPH_MAX_RANK) {
            int64_t axis = v8 ? 1 : 0;
            if (!v8 && is_scan)
                PL_RETURN_IF_ERROR(scan_axis(ctx, "scan_output_axes", o - n_state, b.ndim + 1,
                                             &axis));
            out.ndim = 0;
            int32_t src = 0;
            for (int32_t d = 0; d < b.ndim + extra; d++) {
                if (v8 && d == 0)
                    out.dims[out.ndim++] = batch;
                else if (is_scan && d == axis)
                    out.dims[out.ndim++] = seq;
                else
                    out.dims[out.ndim++] = b.dims[src++];
            }
        }
        PL_RETURN_IF_ERROR(ctl_set(ctx, o, &out));
    }
    return NULL;
}

/* ---- the tables ------------------------------------------------------------- */

static const pl_attr_spec if_attrs[] = {PL_ATTR_G("then_branch"), PL_ATTR_G("else_branch")};
static const pl_attr_spec loop_attrs[] = {PL_ATTR_G("body")};
static const pl_attr_spec scan8_attrs[] = {
    PL_ATTR_G("body"), PL_ATTR_REQ("num_scan_inputs", PL_ATTR_INT), PL_ATTR_IS("directions")};
static const pl_attr_spec scan9_attrs[] = {
    PL_ATTR_G("body"), PL_ATTR_REQ("num_scan_inputs", PL_ATTR_INT),
    PL_ATTR_IS("scan_input_axes"), PL_ATTR_IS("scan_input_directions"),
    PL_ATTR_IS("scan_output_axes"), PL_ATTR_IS("scan_output_directions")};

#define CTL_IF(v)                                                                      \
    {.name = "If", .domain = "", .since_version = (v), .min_inputs = 1, .max_inputs = 1, \
     .min_outputs = 1, .max_outputs = PL_OP_VARIADIC, .attrs = if_attrs,                \
     .n_attrs = PL_COUNT(if_attrs), .types = {{"B", PL_TS_BOOL}}, .input_types = {"B"},  \
     .infer = if_infer}
#define CTL_LOOP(v)                                                                      \
    {.name = "Loop", .domain = "", .since_version = (v), .min_inputs = 0,                 \
     .max_inputs = PL_OP_VARIADIC, .min_outputs = 0, .max_outputs = PL_OP_VARIADIC,       \
     .attrs = loop_attrs, .n_attrs = PL_COUNT(loop_attrs),                                \
     .infer = loop_infer}
#define CTL_SCAN(v, a)                                                                   \
    {.name = "Scan", .domain = "", .since_version = (v), .min_inputs = 0,                 \
     .max_inputs = PL_OP_VARIADIC, .min_outputs = 1, .max_outputs = PL_OP_VARIADIC,       \
     .attrs = (a), .n_attrs = PL_COUNT(a), .infer = scan_infer}

const pl_op_schema pl_opset_control_schemas[] = {
    CTL_IF(1),       CTL_IF(11),           CTL_IF(13),          CTL_IF(16),
    CTL_LOOP(1),     CTL_LOOP(11),         CTL_LOOP(13),        CTL_LOOP(16),
    CTL_SCAN(8, scan8_attrs), CTL_SCAN(9, scan9_attrs), CTL_SCAN(11, scan9_attrs),
    CTL_SCAN(16, scan9_attrs),
};
const size_t pl_opset_control_count = PL_COUNT(pl_opset_control_schemas);
