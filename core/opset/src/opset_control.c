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
 * absent or known true and passed through unchanged by the body; or a
 * condition the body computes from scalars that start known and change by
 * known steps, evaluated here: loop_count_trips), Scan's
 * with the sequence length. Only tensors flow: sequence and optional
 * types are refused where the importer meets them. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
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

/* Gives input I of BODY the type T, against what the body declares.
 * CARRIED (a Loop's carried value, whose shape may change from one
 * iteration to the next, as ONNX's own inference allows): a shape that
 * contradicts the declaration is the one the first iteration gets —
 * paddle2onnx starts a [?, 501, 8] value as a scalar placeholder its body
 * never reads (slanet-plus) — and the Loop's output shape is then
 * unknown until it runs. */
static pl_status *ctl_bind(pl_infer_ctx *ctx, const char *attr, pl_graph *body, size_t i,
                           const ctl_type *t, bool carried)
{
    pl_tid id = pl_graph_input(body, i);
    const pl_graph_tensor *bt = pl_graph_get_tensor(body, id);
    ctl_type have = ctl_type_of(bt);
    char a[160], b[160];
    if (t->dtype.lanes != 0 && have.dtype.lanes != 0 && !PL_DTYPE_EQ(t->dtype, have.dtype))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "%s: input %zu ('%s') is declared %s but receives %s", attr, i,
                              bt->name, pl_dtype_name(have.dtype), pl_dtype_name(t->dtype));
    if (t->ndim >= 0 && have.ndim >= 0 && t->ndim != have.ndim) {
        if (!carried)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "%s: input %zu ('%s') is declared %s but receives %s", attr,
                                  i, bt->name, pl_dims_format(have.dims, have.ndim, a, sizeof a),
                                  pl_dims_format(t->dims, t->ndim, b, sizeof b));
        have.ndim = -1; /* the declaration does not hold at the first iteration */
    }
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

/* Whether a node of BODY reads T as a sequence: a sequence op or an
 * Identity. */
static bool ctl_reads_as_sequence(const pl_graph *body, pl_tid t)
{
    for (size_t i = 0; i < pl_graph_node_count(body); i++) {
        const pl_graph_node *n = pl_graph_get_node(body, (pl_nid)i);
        bool seq_op = strstr(n->op, "Sequence") != NULL || strcmp(n->op, "Identity") == 0;
        for (size_t k = 0; seq_op && k < n->n_formal_inputs; k++)
            if (n->inputs[k] == t)
                return true;
    }
    return false;
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
        const pl_graph_tensor *og = pl_graph_get_tensor(g, o);
        ctl_type ot = ctl_type_of(og);
        PL_RETURN_IF_ERROR(pl_graph_set_type(body, (pl_tid)t, ot.dtype, ot.ndim, ot.dims, NULL));
        /* a sequence enters a body stacked in one tensor (opset_sequence.c),
         * for the sequence ops that read it there (not yet rewritten: a copy
         * of a rewritten body reads the stacked tensor as one) */
        const pl_graph_seq *q = pl_graph_seq_of(g, o);
        if (q != NULL && q->kind == PL_SEQ_STACKED && ctl_reads_as_sequence(body, (pl_tid)t))
            PL_RETURN_IF_ERROR(pl_graph_set_seq(body, (pl_tid)t, q));
        /* an integer constant of the enclosing graph (a Pad's pads, a
         * Reshape's shape, as the dynamo exporter hoists them out of the
         * branches) is one in the body too: the shapes it decides are
         * known there */
        if (og->data != NULL && og->dtype.code == PL_TYPE_INT && og->nbytes <= 1024)
            PL_RETURN_IF_ERROR(pl_graph_set_outer_constant(body, (pl_tid)t, og->data, og->nbytes));
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
        /* ONNX says a scalar or [1]; exporters also write [1, 1] (a
         * comparison of a Gemm's one output, openWakeWord's models), which
         * ONNX Runtime runs: any shape of one element is taken. */
        if (pl_dims_elements(cond->dims, cond->ndim, &n) && n != 1)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "cond must hold one element");
    }
    size_t n_out = pl_infer_output_count(ctx);
    pl_graph *br[2] = {ctl_body(ctx, "then_branch"), ctl_body(ctx, "else_branch")};
    const char *names[2] = {"then_branch", "else_branch"};
    /* A condition known before the run (a comparison of shapes) takes one
     * branch: only that one is inferred, and gives the outputs. The other
     * may not even hold for these shapes (Silero VAD's 8 kHz path squeezes
     * an axis that is 2 at 16 kHz, behind an If that only squeezes a 1). */
    const int64_t *cv;
    uint64_t cmask;
    size_t cn;
    int taken = -1;
    if (pl_infer_known_ints(ctx, 0, &cv, &cmask, &cn) && cn == 1 && (cmask & 1))
        taken = cv[0] != 0 ? 0 : 1;
    /* On a condition known only when it runs, a branch that does not
     * hold for these shapes (Silero VAD's 8 kHz model fed 16 kHz frames:
     * an LSTM then gets a rank-5 input) gives no types: the other branch
     * does, and the control module refuses the broken one only if a run
     * takes it. Both broken is an error. */
    for (int b = 0; b < 2; b++) /* both first: a failure below holds a broken branch */
        PL_RETURN_IF_ERROR(ctl_arity(ctx, names[b], br[b], 0, n_out,
                                     "a branch takes no inputs and gives one output per "
                                     "output of the node"));
    pl_status *broken[2] = {NULL, NULL};
    for (int b = 0; b < 2; b++) {
        if (taken >= 0 && taken != b)
            continue;
        pl_status *st = ctl_infer_body(ctx, names[b], br[b]);
        if (st != NULL && (taken >= 0 || pl_status_code(st) == PL_CODE_OUT_OF_MEMORY ||
                           broken[0] != NULL)) {
            pl_status_free(broken[0]);
            return st;
        }
        broken[b] = st;
    }
    if (broken[0] != NULL || broken[1] != NULL) {
        taken = broken[0] != NULL ? 1 : 0;
        pl_status_free(broken[0]);
        pl_status_free(broken[1]);
    }
    for (size_t o = 0; o < n_out; o++) {
        if (taken >= 0) {
            ctl_type k = ctl_output(br[taken], o);
            PL_RETURN_IF_ERROR(ctl_set(ctx, o, &k));
            continue;
        }
        ctl_type t = ctl_output(br[0], o), e = ctl_output(br[1], o);
        if (t.dtype.lanes != 0 && e.dtype.lanes != 0 && !PL_DTYPE_EQ(t.dtype, e.dtype))
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "output %zu is %s in then_branch but %s in else_branch", o,
                                  pl_dtype_name(t.dtype), pl_dtype_name(e.dtype));
        if (t.dtype.lanes == 0)
            t.dtype = e.dtype;
        /* The branch taken is known only when the node runs: a dim the
         * branches give different values, or one leaves unknown, is
         * unknown (a session with such an If is staged, stage.h, and
         * plans the branch its condition picks: torchvision's batched_nms
         * gives [0] in one branch and a count NonMaxSuppression decides in
         * the other). A branch that cannot be inferred at all for these
         * shapes (Silero VAD's 8 kHz branch under a 16 kHz input) was
         * set aside above: the other's types are the node's. */
        if (t.ndim < 0 || e.ndim < 0 || t.ndim != e.ndim)
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

/* ---- Loop trip counts the condition decides ------------------------------ */

/* Exporters of while loops (tf2onnx above all: every Keras RNN and
 * tf.while_loop) give the Loop a condition the body computes, such as
 * `counter < 30 && time < 30` where counter and time are carried scalars
 * that start at constants and grow by constants. How often such a loop
 * runs is then known before it runs: the body's scalar part is evaluated
 * here, iteration by iteration, from the known initial values, until the
 * condition turns false or M is reached. Only what the condition depends
 * on is evaluated (the tensors it reads, the carried values among them and
 * the body outputs that feed those, to a fixed point), all of it scalar
 * (one element) and computed by the exact ops below; anything else (a
 * value read from the data, an op outside the list) leaves the count
 * unknown. The session checks the count when the loop runs. */

#define LOOP_SIM_MAX_ITERS 1000000

typedef struct loop_val {
    bool known;
    bool is_float;  /* else an integer or a bool */
    int64_t i;
    double f;
} loop_val;

static double loop_val_f(loop_val v)
{
    return v.is_float ? v.f : (double)v.i;
}

/* The one element of constant bytes DATA of DTYPE. */
static bool loop_read_scalar(pl_dtype dt, const void *data, size_t nbytes, loop_val *out)
{
    size_t es = dt.bits / 8;
    if (data == NULL || es == 0 || nbytes != es || dt.lanes != 1)
        return false;
    *out = (loop_val){.known = true};
    switch (dt.code) {
    case PL_TYPE_INT:
        if (es == 1) out->i = *(const int8_t *)data;
        else if (es == 2) out->i = *(const int16_t *)data;
        else if (es == 4) out->i = *(const int32_t *)data;
        else if (es == 8) out->i = *(const int64_t *)data;
        else return false;
        return true;
    case PL_TYPE_UINT:
    case PL_TYPE_BOOL:
        if (es == 1) out->i = *(const uint8_t *)data;
        else if (es == 2) out->i = *(const uint16_t *)data;
        else if (es == 4) out->i = *(const uint32_t *)data;
        else if (es == 8 && *(const uint64_t *)data <= (uint64_t)INT64_MAX)
            out->i = (int64_t) * (const uint64_t *)data;
        else return false;
        if (dt.code == PL_TYPE_BOOL)
            out->i = out->i != 0;
        return true;
    case PL_TYPE_FLOAT:
        out->is_float = true;
        if (es == 4) out->f = *(const float *)data;
        else if (es == 8) out->f = *(const double *)data;
        else return false;
        return true;
    default:
        return false;
    }
}

/* V converted to DT as Cast does (integers truncate toward zero and wrap
 * to their width, bools are v != 0, f32 rounds). */
static bool loop_convert(loop_val v, pl_dtype dt, loop_val *out)
{
    *out = (loop_val){.known = true};
    if (dt.code == PL_TYPE_FLOAT) {
        out->is_float = true;
        double f = loop_val_f(v);
        out->f = dt.bits == 32 ? (double)(float)f : f;
        return dt.bits == 32 || dt.bits == 64;
    }
    if (dt.code == PL_TYPE_BOOL) {
        out->i = v.is_float ? v.f != 0.0 : v.i != 0;
        return true;
    }
    if (dt.code != PL_TYPE_INT && dt.code != PL_TYPE_UINT)
        return false;
    int64_t i = v.i;
    if (v.is_float) {
        if (!(v.f > -9.0e18 && v.f < 9.0e18))
            return false;
        i = (int64_t)v.f;
    }
    if (dt.bits < 64) {
        uint64_t m = (UINT64_C(1) << dt.bits) - 1, u = (uint64_t)i & m;
        if (dt.code == PL_TYPE_INT && (u >> (dt.bits - 1)))
            i = (int64_t)(u | ~m);
        else
            i = (int64_t)u;
    }
    out->i = i;
    return true;
}

/* Evaluates node N of BODY on the scalar values VALS; false when the op or
 * its operands are not ones this evaluation knows. */
static bool loop_eval_node(const pl_graph *body, const pl_graph_node *n, loop_val *vals)
{
    if (n->domain[0] != '\0' || n->n_outputs < 1 || n->outputs[0] == PL_TID_NONE)
        return false;
    const pl_graph_tensor *ot = pl_graph_get_tensor(body, n->outputs[0]);
    loop_val *o = &vals[n->outputs[0]];
    const char *op = n->op;
    if (strcmp(op, "Constant") == 0) {
        const pl_attr *a = pl_graph_node_attr(n, "value");
        return a != NULL && a->kind == PL_ATTR_TENSOR && a->tensor != NULL &&
               loop_read_scalar(a->tensor->dtype, a->tensor->data, a->tensor->nbytes, o);
    }
    size_t nin = n->n_formal_inputs;
    loop_val a[2] = {{0}};
    for (size_t k = 0; k < nin && k < 2; k++) {
        if (n->inputs[k] == PL_TID_NONE || !vals[n->inputs[k]].known)
            return false;
        a[k] = vals[n->inputs[k]];
    }
    if (nin < 1)
        return false;
    if (strcmp(op, "Identity") == 0 || strcmp(op, "Squeeze") == 0 ||
        strcmp(op, "Unsqueeze") == 0 || strcmp(op, "Reshape") == 0 ||
        strcmp(op, "Flatten") == 0) {
        *o = a[0];
        return true;
    }
    if (strcmp(op, "Cast") == 0)
        return ot->dtype.lanes != 0 && loop_convert(a[0], ot->dtype, o);
    if (strcmp(op, "Not") == 0) {
        *o = (loop_val){.known = true, .i = a[0].i == 0};
        return !a[0].is_float;
    }
    if (strcmp(op, "Neg") == 0 || strcmp(op, "Abs") == 0) {
        bool neg = op[0] == 'N';
        *o = a[0];
        if (a[0].is_float)
            o->f = neg ? -a[0].f : (a[0].f < 0 ? -a[0].f : a[0].f);
        else if (a[0].i == INT64_MIN)
            return false;
        else
            o->i = neg ? -a[0].i : (a[0].i < 0 ? -a[0].i : a[0].i);
        return true;
    }
    if (nin != 2 || a[0].is_float != a[1].is_float)
        return false;
    bool fl = a[0].is_float;
    double x = loop_val_f(a[0]), y = loop_val_f(a[1]);
    int64_t xi = a[0].i, yi = a[1].i;
    int cmp = fl ? (x < y ? -1 : x > y ? 1 : 0) : (xi < yi ? -1 : xi > yi ? 1 : 0);
    if (fl && (x != x || y != y))
        return false;
    *o = (loop_val){.known = true};
    if (strcmp(op, "Less") == 0) o->i = cmp < 0;
    else if (strcmp(op, "LessOrEqual") == 0) o->i = cmp <= 0;
    else if (strcmp(op, "Greater") == 0) o->i = cmp > 0;
    else if (strcmp(op, "GreaterOrEqual") == 0) o->i = cmp >= 0;
    else if (strcmp(op, "Equal") == 0) o->i = cmp == 0;
    else if (strcmp(op, "And") == 0) o->i = (xi != 0) && (yi != 0);
    else if (strcmp(op, "Or") == 0) o->i = (xi != 0) || (yi != 0);
    else if (strcmp(op, "Xor") == 0) o->i = (xi != 0) != (yi != 0);
    else if (strcmp(op, "Add") == 0 || strcmp(op, "Sub") == 0 || strcmp(op, "Mul") == 0 ||
             strcmp(op, "Min") == 0 || strcmp(op, "Max") == 0) {
        o->is_float = fl;
        if (strcmp(op, "Min") == 0 || strcmp(op, "Max") == 0) {
            bool lo = op[1] == 'i';
            *o = (lo ? cmp <= 0 : cmp >= 0) ? a[0] : a[1];
            return true;
        }
        if (fl) {
            double r = op[0] == 'A' ? x + y : op[0] == 'S' ? x - y : x * y;
            o->f = ot->dtype.code == PL_TYPE_FLOAT && ot->dtype.bits == 32 ? (double)(float)r : r;
            return true;
        }
        bool overflow = op[0] == 'A'   ? __builtin_add_overflow(xi, yi, &o->i)
                        : op[0] == 'S' ? __builtin_sub_overflow(xi, yi, &o->i)
                                       : __builtin_mul_overflow(xi, yi, &o->i);
        if (overflow)
            return false;
        /* wrap to the output's width, as the kernel would */
        return ot->dtype.lanes == 0 || loop_convert(*o, ot->dtype, o);
    } else
        return false;
    if (strcmp(op, "And") == 0 || strcmp(op, "Or") == 0 || strcmp(op, "Xor") == 0)
        return !fl;
    return true;
}

/* Whether tensor T of BODY holds exactly one element. */
static bool loop_is_scalar(const pl_graph_tensor *t)
{
    size_t n;
    return t->ndim >= 0 && pl_dims_elements(t->dims, t->ndim, &n) && n == 1;
}

/* The known value of the node's input I (a constant or inferred scalar). */
static bool loop_known_input(pl_infer_ctx *ctx, size_t i, loop_val *out)
{
    const pl_graph_tensor *t = pl_infer_input(ctx, i);
    if (t == NULL || !loop_is_scalar(t))
        return false;
    if (t->data != NULL && loop_read_scalar(t->dtype, t->data, t->nbytes, out))
        return true;
    const int64_t *iv;
    uint64_t mask;
    size_t n;
    if (t->dtype.code != PL_TYPE_FLOAT && pl_infer_known_ints(ctx, i, &iv, &mask, &n) &&
        n == 1 && (mask & 1)) {
        *out = (loop_val){.known = true, .i = iv[0]};
        return true;
    }
    const double *fv;
    if (t->dtype.code == PL_TYPE_FLOAT && pl_infer_known_floats(ctx, i, &fv, &n) && n == 1) {
        *out = (loop_val){.known = true, .is_float = true, .f = fv[0]};
        return true;
    }
    return false;
}

/* How often the Loop of CTX runs when its condition decides: the count, or
 * -1 when it is not known before the run. MAX is M (INT64_MAX when absent). */
static int64_t loop_count_trips(pl_infer_ctx *ctx, const pl_graph *body, size_t n_carried,
                                int64_t max)
{
    size_t nt = pl_graph_tensor_count(body), nn = pl_graph_node_count(body);
    const pl_nid *order = pl_graph_topo_order(body);
    if (order == NULL || nt == 0)
        return -1;
    bool *need = pl_calloc(nt, sizeof *need);
    bool *run = pl_calloc(nn ? nn : 1, sizeof *run);
    loop_val *vals = pl_calloc(nt, sizeof *vals);
    loop_val *fixed = pl_calloc(nt, sizeof *fixed);   /* constants, outer values */
    loop_val *next = pl_calloc(n_carried ? n_carried : 1, sizeof *next);
    int64_t trips = -1;
    if (need == NULL || run == NULL || vals == NULL || fixed == NULL || next == NULL)
        goto done;
    /* What the condition depends on, to a fixed point through the carried
     * values: a body input 2 + j read makes body output 1 + j needed. */
    need[pl_graph_output(body, 0)] = true;
    for (bool grew = true; grew;) {
        grew = false;
        for (size_t k = nn; k-- > 0;) {
            const pl_graph_node *n = pl_graph_get_node(body, order[k]);
            bool wanted = false;
            for (size_t o = 0; o < n->n_outputs; o++)
                wanted |= n->outputs[o] != PL_TID_NONE && need[n->outputs[o]];
            if (!wanted || run[order[k]])
                continue;
            run[order[k]] = grew = true;
            for (size_t i = 0; i < n->n_inputs; i++)
                if (n->inputs[i] != PL_TID_NONE)
                    need[n->inputs[i]] = true;
        }
        for (size_t j = 0; j < n_carried; j++) {
            pl_tid in = pl_graph_input(body, 2 + j), out = pl_graph_output(body, 1 + j);
            if (need[in] && !need[out])
                need[out] = grew = true;
        }
    }
    /* Every needed tensor is one element; constants and outer-scope values
     * are read once. */
    const pl_graph *outer = pl_infer_graph(ctx);
    for (size_t t = 0; t < nt; t++) {
        if (!need[t])
            continue;
        const pl_graph_tensor *bt = pl_graph_get_tensor(body, (pl_tid)t);
        if (!loop_is_scalar(bt) && bt->ndim >= 0)
            goto done;
        if (bt->data != NULL) {
            if (!loop_read_scalar(bt->dtype, bt->data, bt->nbytes, &fixed[t]))
                goto done;
        } else if (bt->is_outer) {
            /* a constant of the enclosing graph, or a value its inference
             * knows (a sequence length from Shape, once the input's shape
             * is bound) */
            pl_tid o = pl_graph_find_tensor(outer, bt->name);
            const pl_graph_tensor *ot = o == PL_TID_NONE ? NULL : pl_graph_get_tensor(outer, o);
            bool is_float;
            const int64_t *iv;
            const double *fv;
            uint64_t mask;
            size_t kn;
            if (ot != NULL && loop_read_scalar(ot->dtype, ot->data, ot->nbytes, &fixed[t]))
                continue;
            if (ot == NULL || !loop_is_scalar(ot) ||
                !pl_infer_known_tensor(ctx, o, &is_float, &iv, &fv, &mask, &kn) || kn != 1 ||
                (!is_float && !(mask & 1)))
                goto done;
            fixed[t] = is_float ? (loop_val){.known = true, .is_float = true, .f = fv[0]}
                                : (loop_val){.known = true, .i = iv[0]};
        }
    }
    for (size_t k = 0; k < nn; k++)
        if (run[order[k]] && !loop_is_scalar(pl_graph_get_tensor(
                                 body, pl_graph_get_node(body, order[k])->outputs[0])))
            goto done;
    /* Initial values: the iteration number, the condition (absent: true),
     * the carried values the condition needs. */
    loop_val cond = {.known = true, .i = 1};
    if (pl_infer_input(ctx, 1) != NULL && !loop_known_input(ctx, 1, &cond))
        goto done;
    for (size_t j = 0; j < n_carried; j++)
        if (need[pl_graph_input(body, 2 + j)] && !loop_known_input(ctx, 2 + j, &next[j]))
            goto done;
    int64_t it = 0;
    for (; it < max && (cond.is_float ? cond.f != 0.0 : cond.i != 0); it++) {
        if (it >= LOOP_SIM_MAX_ITERS)
            goto done;
        memcpy(vals, fixed, nt * sizeof *vals);
        vals[pl_graph_input(body, 0)] = (loop_val){.known = true, .i = it};
        vals[pl_graph_input(body, 1)] = (loop_val){.known = true, .i = 1};
        for (size_t j = 0; j < n_carried; j++)
            if (need[pl_graph_input(body, 2 + j)])
                vals[pl_graph_input(body, 2 + j)] = next[j];
        for (size_t k = 0; k < nn; k++)
            if (run[order[k]] && !loop_eval_node(body, pl_graph_get_node(body, order[k]), vals))
                goto done;
        cond = vals[pl_graph_output(body, 0)];
        if (!cond.known)
            goto done;
        for (size_t j = 0; j < n_carried; j++)
            if (need[pl_graph_input(body, 2 + j)]) {
                next[j] = vals[pl_graph_output(body, 1 + j)];
                if (!next[j].known)
                    goto done;
            }
    }
    trips = it;
done:
    pl_free(need);
    pl_free(run);
    pl_free(vals);
    pl_free(fixed);
    pl_free(next);
    return trips;
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
    /* The iteration number and the condition are scalars; paddle2onnx
     * declares them [1] (SLANet), and ONNX Runtime types them as the body
     * declares: they are typed so here too (one element either way, which
     * is what the runtime feeds, control.c). */
    ctl_type fixed[2] = {ctl_scalar_i64, ctl_scalar_bool};
    for (size_t k = 0; k < 2; k++) {
        const pl_graph_tensor *bk = pl_graph_get_tensor(body, pl_graph_input(body, k));
        if (bk != NULL && bk->ndim == 1 && (bk->dims[0] == 1 || bk->dims[0] < 0)) {
            fixed[k].ndim = 1;
            fixed[k].dims[0] = 1;
        }
    }
    PL_RETURN_IF_ERROR(ctl_bind(ctx, "body", body, 0, &fixed[0], false));
    PL_RETURN_IF_ERROR(ctl_bind(ctx, "body", body, 1, &fixed[1], false));
    for (size_t i = 0; i < n_carried; i++) {
        ctl_type t = ctl_type_of(pl_infer_input(ctx, 2 + i));
        PL_RETURN_IF_ERROR(ctl_bind(ctx, "body", body, 2 + i, &t, true));
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
    bool have_m = pl_infer_known_ints(ctx, 0, &mv, &mask, &mn) && mn == 1 && (mask & 1);
    if (have_m && (!have_cond || (loop_known_true(ctx, 1) && loop_cond_passes_through(body))))
        trips = mv[0] < 0 ? 0 : mv[0];
    else if (n_scan > 0 && have_cond && (have_m || pl_infer_input(ctx, 0) == NULL))
        trips = loop_count_trips(ctx, body, n_carried, have_m ? (mv[0] < 0 ? 0 : mv[0]) : INT64_MAX);
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
        PL_RETURN_IF_ERROR(ctl_bind(ctx, "body", body, i, &slice, false));
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

/* ---- while loops with scan outputs ------------------------------------------ */

/* Whether BODY's condition output is true on every iteration it is
 * reached with a true condition: the condition input passed through, or a
 * true constant of the body or the enclosing graph (PyTorch's for loops),
 * through Identities. */
bool pl_opset_loop_cond_always_true(pl_infer_ctx *ctx, const pl_graph *body)
{
    pl_tid t = pl_graph_output(body, 0);
    for (int hops = 0; hops < 16; hops++) {
        if (t == pl_graph_input(body, 1))
            return true;
        const pl_graph_tensor *bt = pl_graph_get_tensor(body, t);
        loop_val v;
        if (bt->data != NULL)
            return loop_read_scalar(bt->dtype, bt->data, bt->nbytes, &v) && v.i != 0;
        if (bt->is_outer) {
            const pl_graph *g = pl_infer_graph(ctx);
            pl_tid o = pl_graph_find_tensor(g, bt->name);
            const pl_graph_tensor *ot = o == PL_TID_NONE ? NULL : pl_graph_get_tensor(g, o);
            if (ot != NULL && ot->data != NULL)
                return loop_read_scalar(ot->dtype, ot->data, ot->nbytes, &v) && !v.is_float &&
                       v.i != 0;
            bool is_float;
            const int64_t *iv;
            const double *fv;
            uint64_t mask;
            size_t kn;
            return ot != NULL && pl_infer_known_tensor(ctx, o, &is_float, &iv, &fv, &mask, &kn) &&
                   kn == 1 && !is_float && (mask & 1) && iv[0] != 0;
        }
        if (bt->producer == PL_NID_NONE)
            return false;
        const pl_graph_node *p = pl_graph_get_node(body, bt->producer);
        if (strcmp(p->op, "Identity") != 0 || p->n_inputs < 1 || p->inputs[0] == PL_TID_NONE)
            return false;
        t = p->inputs[0];
    }
    return false;
}

/* Whether the Loop CTX infers now has a scan output whose length only the
 * run knows because the condition may stop it (the trip count M alone,
 * known when the run binds it, a staged session plans). */
static bool loop_needs_count(pl_infer_ctx *ctx, const pl_graph *body)
{
    const pl_graph_node *n = pl_infer_node(ctx);
    size_t nf = n->n_formal_inputs;
    /* Without a condition input the loop runs M times as planned (the
     * node this split leaves is such a loop: it is not split again) */
    if (nf < 2 || body == NULL || n->inputs[1] == PL_TID_NONE)
        return false;
    if (loop_known_true(ctx, 1) && pl_opset_loop_cond_always_true(ctx, body))
        return false;
    const pl_graph *g = pl_infer_graph(ctx);
    for (size_t o = nf - 2; o < n->n_outputs; o++) {
        if (n->outputs[o] == PL_TID_NONE)
            continue;
        const pl_graph_tensor *t = pl_graph_get_tensor(g, n->outputs[o]);
        if (t->ndim < 1 || t->dims[0] < 0)
            return true;
    }
    return false;
}

pl_status *pl_opset_loop_count_split(pl_infer_ctx *ctx, pl_nid id, pl_nid *out_counter)
{
    *out_counter = PL_NID_NONE;
    pl_graph *g = pl_infer_graph_mut(ctx);
    pl_graph *body = ctl_body(ctx, "body");
    if (!loop_needs_count(ctx, body))
        return NULL;
    const pl_graph_node *n = pl_graph_get_node(g, id);
    char base[200], name[256];
    snprintf(base, sizeof base, "%s", n->name);
    size_t nf = n->n_formal_inputs, n_car = nf - 2;
    if (pl_graph_output_count(body) < 1 + n_car || pl_graph_input_count(body) != nf)
        return NULL; /* the schema's checks name it */
    /* the counting body: the body without its scan outputs, and a counter
     * carried from 0 */
    pl_graph *b1 = NULL;
    PL_RETURN_IF_ERROR(pl_graph_copy(body, &b1));
    pl_tid cin, cone, cout;
    const pl_dtype i64 = {PL_TYPE_INT, 64, 1};
    const int64_t one = 1, zero = 0;
    pl_rewrite_fresh_name(b1, base, "count_in", name, sizeof name);
    pl_status *st = pl_graph_tensor_get_or_add(b1, name, &cin);
    if (st == NULL)
        st = pl_graph_set_type(b1, cin, i64, 0, NULL, NULL);
    if (st == NULL)
        st = pl_graph_add_input(b1, cin);
    pl_rewrite_fresh_name(b1, base, "count_one", name, sizeof name);
    if (st == NULL)
        st = pl_graph_tensor_get_or_add(b1, name, &cone);
    if (st == NULL)
        st = pl_graph_set_type(b1, cone, i64, 0, NULL, NULL);
    if (st == NULL)
        st = pl_graph_set_constant(b1, cone, &one, sizeof one);
    char in_a[256], in_b[256], out_c[256], node_name[256];
    snprintf(in_a, sizeof in_a, "%s", pl_graph_get_tensor(b1, cin)->name);
    snprintf(in_b, sizeof in_b, "%s", pl_graph_get_tensor(b1, cone)->name);
    pl_rewrite_fresh_name(b1, base, "count_out", out_c, sizeof out_c);
    pl_rewrite_fresh_name(b1, base, "count_add", node_name, sizeof node_name);
    const char *ins[2] = {in_a, in_b}, *outs[1] = {out_c};
    if (st == NULL)
        st = pl_graph_add_node(b1, node_name, "Add", "", ins, 2, outs, 1, NULL);
    pl_tid *keep = pl_malloc((n_car + 2) * sizeof *keep);
    if (st == NULL && keep == NULL)
        st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory splitting a Loop");
    for (size_t k = 0; st == NULL && k < 1 + n_car; k++)
        keep[k] = pl_graph_output(b1, k);
    if (st == NULL) {
        cout = pl_graph_find_tensor(b1, out_c);
        keep[1 + n_car] = cout;
        pl_graph_clear_outputs(b1);
    }
    for (size_t k = 0; st == NULL && k < n_car + 2; k++)
        st = pl_graph_add_output_again(b1, keep[k]);
    pl_free(keep);
    if (st != NULL) {
        pl_graph_destroy(b1);
        return st;
    }
    /* the counting Loop: the node's inputs and a counter from 0; its
     * carried results are the node's, unused */
    pl_tid z;
    PL_RETURN_IF_ERROR(pl_rewrite_add_constant(g, id, "count0", i64, 0, NULL, &zero,
                                               sizeof zero, &z));
    n = pl_graph_get_node(g, id);
    size_t n_in = nf + 1, n_out = n_car + 1;
    char (*in_names)[256] = pl_malloc(n_in * sizeof *in_names);
    char (*out_names)[256] = pl_malloc(n_out * sizeof *out_names);
    const char **ip = pl_malloc(n_in * sizeof *ip), **op = pl_malloc(n_out * sizeof *op);
    if (!in_names || !out_names || !ip || !op)
        st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory splitting a Loop");
    for (size_t i = 0; st == NULL && i < n_in; i++) {
        pl_tid t = i < nf ? n->inputs[i] : z;
        snprintf(in_names[i], 256, "%s", t == PL_TID_NONE ? "" : pl_graph_get_tensor(g, t)->name);
        ip[i] = in_names[i];
    }
    for (size_t o = 0; st == NULL && o < n_out; o++) {
        char what[64];
        snprintf(what, sizeof what, o < n_car ? "counting_carried%zu" : "trips", o);
        pl_rewrite_fresh_name(g, base, what, out_names[o], 256);
        pl_tid t;
        st = pl_graph_tensor_get_or_add(g, out_names[o], &t);
        op[o] = out_names[o];
    }
    pl_nid counter = PL_NID_NONE;
    if (st == NULL) {
        pl_rewrite_fresh_name(g, base, "counting", node_name, sizeof node_name);
        st = pl_graph_add_node(g, node_name, "Loop", "", ip, n_in, op, n_out, &counter);
    }
    if (st == NULL) {
        st = pl_graph_attr_graph(g, counter, "body", b1);
        b1 = NULL;
    }
    pl_graph_destroy(b1);
    /* the node: that many iterations, its condition the body's alone (as
     * ONNX Runtime, the body's condition output still stops it) */
    pl_tid *now = st == NULL ? pl_malloc(nf * sizeof *now) : NULL;
    if (st == NULL && now == NULL)
        st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory splitting a Loop");
    if (st == NULL) {
        n = pl_graph_get_node(g, id);
        memcpy(now, n->inputs, nf * sizeof *now);
        now[0] = pl_graph_find_tensor(g, out_names[n_car]);
        now[1] = PL_TID_NONE;
        st = pl_graph_node_set_inputs(g, id, now, nf);
    }
    pl_free(now);
    pl_free(in_names);
    pl_free(out_names);
    pl_free(ip);
    pl_free(op);
    if (st == NULL)
        *out_counter = counter;
    return st;
}

const pl_op_schema pl_opset_control_schemas[] = {
    CTL_IF(1),       CTL_IF(11),           CTL_IF(13),          CTL_IF(16),
    CTL_LOOP(1),     CTL_LOOP(11),         CTL_LOOP(13),        CTL_LOOP(16),
    CTL_SCAN(8, scan8_attrs), CTL_SCAN(9, scan9_attrs), CTL_SCAN(11, scan9_attrs),
    CTL_SCAN(16, scan9_attrs),
};
const size_t pl_opset_control_count = PL_COUNT(pl_opset_control_schemas);
