/* transpose.c — Transposes of activations moved down until they cancel
 * (`[graph] optimize = all`, before pl_graph_prefold).
 *
 * TensorFlow computes in NHWC and ONNX's Conv in NCHW, so tf2onnx (and
 * other NHWC sources: Keras, TFLite converters) writes a Transpose to NCHW
 * before every convolution and one back to NHWC after it, with the
 * activations, batch-norm arithmetic, squeeze-and-excitation means and
 * residual Adds in NHWC between them. Every such Transpose is a copy, and a
 * backend that keeps NCHW (or blocked) layouts sees NHWC reductions and
 * broadcasts it serves badly: the graph splits and converts layouts at
 * every boundary.
 *
 * A Transpose T (perm P) of an activation X is moved below a node N that
 * reads its output Y when N computes the same in any layout: N then reads
 * X, and a new Transpose after N gives N's output its old name and layout.
 *   - elementwise unary ops (Relu, Sigmoid, Clip with scalar bounds, ...):
 *     nothing else changes;
 *   - broadcasting ops (Add, Mul, Where, PRelu, Max, comparisons, ...):
 *     every other input is a Transpose by the same P (read its input), a
 *     tensor of single elements (a scalar: any layout), or a constant of
 *     rank <= rank(Y), which gets Unsqueeze-like Reshape and the inverse
 *     Transpose as nodes that constant folding computes;
 *   - reductions with known axes: axis a becomes P[a]; with keepdims=0 the
 *     Transpose after holds the kept axes' order (none when it is the
 *     identity);
 *   - Pad with constant pads (and a scalar value): the pads go with their
 *     axes;
 *   - Concat (every input a Transpose by P or a constant) and Softmax,
 *     LogSoftmax, Hardmax from opset 13: the axis becomes P[axis];
 *   - a Transpose: the two compose into one (P[Q[j]]); when that is the
 *     identity its readers read X and it goes.
 * One node at a time, repeated while something moves: a Transpose read
 * by several nodes moves below each that allows it (the others keep
 * reading it). Transposes nobody reads are left for the dead-node pass
 * of pl_graph_prefold, and the rewrite is kept only when fewer Transposes
 * of activations remain read than the graph had (moving one below a fork that never meets its inverse would add
 * copies). The core computes no tensor: constants are permuted by nodes
 * that folding runs on a module. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "optimize.h"
#include "status.h"
#include "strmap.h"

static pl_status *pl_tr_oom(void)
{
    return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory optimising the graph");
}

/* Whether a body names NAME. */
static bool pl_tr_named(const pl_strmap *named, const char *name)
{
    uint32_t v;
    return pl_strmap_get(named, name, &v);
}

static bool pl_tr_default_domain(const pl_graph_node *n)
{
    return n->domain[0] == '\0' || strcmp(n->domain, "ai.onnx") == 0;
}

static bool pl_tr_in(const char *op, const char *const *ops, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(op, ops[i]) == 0)
            return true;
    return false;
}

static const char *const pl_tr_unary[] = {
    "Relu", "LeakyRelu", "Elu", "Selu", "Celu", "Sigmoid", "HardSigmoid", "HardSwish",
    "Tanh", "Softplus", "Softsign", "Abs", "Neg", "Exp", "Log", "Sqrt", "Reciprocal", "Erf",
    "Floor", "Ceil", "Round", "Sign", "Not", "Cast", "Identity", "Clip", "Sin", "Cos",
    "IsNaN", "IsInf", "Gelu", "Mish", "ThresholdedRelu", "Shrink"};
static const char *const pl_tr_broadcast[] = {
    "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "Equal", "Less",
    "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor", "Where", "PRelu", "Mod"};
static const char *const pl_tr_reduce[] = {
    "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
    "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
static const char *const pl_tr_axis_ops[] = {"Softmax", "LogSoftmax", "Hardmax"};

#define PL_TR_COUNT(a) (sizeof(a) / sizeof *(a))

/* Node N is a Transpose with a valid perm of its input: the perm into P
 * (*OUT_R entries). */
static bool pl_tr_perm(const pl_graph *g, const pl_graph_node *n, int64_t *p, int *out_r)
{
    if (strcmp(n->op, "Transpose") != 0 || !pl_tr_default_domain(n) || n->n_formal_inputs < 1 ||
        n->inputs[0] == PL_TID_NONE || n->n_outputs != 1 || n->outputs[0] == PL_TID_NONE)
        return false;
    const pl_graph_tensor *x = pl_graph_get_tensor(g, n->inputs[0]);
    const pl_attr *a = pl_graph_node_attr(n, "perm");
    if (a == NULL || a->kind != PL_ATTR_INTS || a->n < 1 || a->n > PL_GRAPH_MAX_RANK ||
        (x->ndim >= 0 && (size_t)x->ndim != a->n))
        return false;
    bool seen[PL_GRAPH_MAX_RANK] = {false};
    for (size_t i = 0; i < a->n; i++) {
        if (a->ints[i] < 0 || a->ints[i] >= (int64_t)a->n || seen[a->ints[i]])
            return false;
        seen[a->ints[i]] = true;
        p[i] = a->ints[i];
    }
    *out_r = (int)a->n;
    return true;
}

/* A tensor of single elements (every dim known and 1) of rank <= R: the
 * same in every layout. */
static bool pl_tr_layout_free(const pl_graph_tensor *t, int r)
{
    if (t->ndim < 0 || t->ndim > r)
        return false;
    for (int32_t d = 0; d < t->ndim; d++)
        if (t->dims[d] != 1)
            return false;
    return true;
}

/* A constant of known type and rank <= R. */
static bool pl_tr_permutable_const(const pl_graph_tensor *t, int r)
{
    if (t->data == NULL || t->ndim < 0 || t->ndim > r || t->dtype.lanes == 0)
        return false;
    for (int32_t d = 0; d < t->ndim; d++)
        if (t->dims[d] < 0)
            return false;
    return true;
}

/* T is the output of a Transpose by P (R entries) whose input is not a
 * constant: that input into *OUT_SRC. */
static bool pl_tr_same_transpose(const pl_graph *g, pl_tid t, const int64_t *p, int r,
                                 pl_tid *out_src)
{
    const pl_graph_tensor *tt = pl_graph_get_tensor(g, t);
    if (tt->producer == PL_NID_NONE)
        return false;
    int64_t q[PL_GRAPH_MAX_RANK];
    int rq;
    const pl_graph_node *n = pl_graph_get_node(g, tt->producer);
    if (!pl_tr_perm(g, n, q, &rq) || rq != r || memcmp(p, q, (size_t)r * sizeof *p) != 0)
        return false;
    *out_src = n->inputs[0];
    return pl_graph_get_tensor(g, *out_src)->data == NULL;
}

/* The axes of reduction N (attribute, or constant input 1 where the op's
 * version takes them as an input): 1 known (*OUT_N of them, 0 = all),
 * 0 not movable. */
static int pl_tr_reduce_axes(const pl_graph *g, const pl_graph_node *n, int64_t *axes,
                             size_t *out_n)
{
    *out_n = 0;
    const pl_attr *a = pl_graph_node_attr(n, "axes");
    if (n->n_formal_inputs >= 2 && n->inputs[1] != PL_TID_NONE) {
        const pl_graph_tensor *t = pl_graph_get_tensor(g, n->inputs[1]);
        if (t->data == NULL || !PL_DTYPE_EQ(t->dtype, PL_DTYPE_I64) || t->ndim > 1 ||
            t->nbytes / 8 > PL_GRAPH_MAX_RANK)
            return 0;
        *out_n = t->nbytes / 8;
        memcpy(axes, t->data, t->nbytes);
    } else if (a != NULL) {
        if (a->kind != PL_ATTR_INTS || a->n > PL_GRAPH_MAX_RANK)
            return 0;
        *out_n = a->n;
        memcpy(axes, a->ints, a->n * sizeof *axes);
    }
    const pl_attr *noop = pl_graph_node_attr(n, "noop_with_empty_axes");
    if (*out_n == 0 && noop != NULL && noop->kind == PL_ATTR_INT && noop->i != 0)
        return 0;
    return 1;
}

/* What moving a Transpose below one reader takes. */
struct pl_tr_plan {
    int kind;  /* 0 elementwise, 1 reduce, 2 axis attribute, 3 transpose, 4 Pad */
    pl_tid in[8];                   /* the reader's new inputs (PL_TID_NONE: unchanged) */
    bool permute_const[8];          /* input k: a constant to permute */
    int64_t axes[2 * PL_GRAPH_MAX_RANK]; /* reduce: new axes; axis ops: [0] the new
                                          * axis; Pad: the new pads */
    size_t n_axes;
    bool axes_input;                /* reduce, Pad: the axes (pads) are input 1 */
    int64_t out_perm[PL_GRAPH_MAX_RANK]; /* the Transpose after the reader */
    int out_r;
};

static bool pl_tr_identity(const int64_t *p, int r)
{
    for (int i = 0; i < r; i++)
        if (p[i] != i)
            return false;
    return true;
}

/* Whether the Transpose (perm P of rank R, input X, output Y) can move
 * below reader N; the plan into *PLAN. */
static bool pl_tr_plan_for(const pl_graph *g, const pl_graph_node *n, pl_tid y, const int64_t *p,
                           int r, struct pl_tr_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    for (size_t k = 0; k < 8; k++)
        plan->in[k] = PL_TID_NONE;
    if (!pl_tr_default_domain(n) || n->n_outputs != 1 || n->outputs[0] == PL_TID_NONE ||
        n->n_formal_inputs > 8 || n->n_formal_inputs != n->n_inputs)
        return false;
    const char *op = n->op;
    plan->out_r = r;
    memcpy(plan->out_perm, p, (size_t)r * sizeof *p);
    if (pl_tr_in(op, pl_tr_unary, PL_TR_COUNT(pl_tr_unary))) {
        if (n->inputs[0] != y)
            return false;
        for (size_t k = 1; k < n->n_inputs; k++)
            if (n->inputs[k] != PL_TID_NONE &&
                (n->inputs[k] == y ||
                 !pl_tr_layout_free(pl_graph_get_tensor(g, n->inputs[k]), r)))
                return false;
        return true;
    }
    if (pl_tr_in(op, pl_tr_broadcast, PL_TR_COUNT(pl_tr_broadcast))) {
        for (size_t k = 0; k < n->n_inputs; k++) {
            pl_tid t = n->inputs[k], src;
            if (t == PL_TID_NONE || t == y)
                continue;
            const pl_graph_tensor *tt = pl_graph_get_tensor(g, t);
            if (pl_tr_same_transpose(g, t, p, r, &src))
                plan->in[k] = src;
            else if (pl_tr_layout_free(tt, r))
                continue;
            else if (pl_tr_permutable_const(tt, r))
                plan->permute_const[k] = true;
            else
                return false;
        }
        return true;
    }
    if (pl_tr_in(op, pl_tr_reduce, PL_TR_COUNT(pl_tr_reduce))) {
        int64_t axes[PL_GRAPH_MAX_RANK];
        size_t na;
        if (n->inputs[0] != y || !pl_tr_reduce_axes(g, n, axes, &na))
            return false;
        plan->kind = 1;
        plan->axes_input = n->n_formal_inputs >= 2 && n->inputs[1] != PL_TID_NONE;
        bool reduced[PL_GRAPH_MAX_RANK] = {false};
        for (size_t i = 0; i < na; i++) {
            int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
            if (a < 0 || a >= r)
                return false;
            reduced[a] = true;
            plan->axes[i] = p[a];
        }
        plan->n_axes = na;
        const pl_attr *kd = pl_graph_node_attr(n, "keepdims");
        bool keep = kd == NULL || kd->kind != PL_ATTR_INT || kd->i != 0;
        if (na == 0 && !keep)
            plan->out_r = 0;  /* a scalar: nothing to transpose */
        else if (!keep) {
            /* The kept axes of Y in order, by their position among X's
             * kept axes. */
            bool xred[PL_GRAPH_MAX_RANK] = {false};
            for (int i = 0; i < r; i++)
                if (reduced[i] || na == 0)
                    xred[p[i]] = true;
            int o = 0;
            for (int i = 0; i < r; i++) {
                if (reduced[i])
                    continue;
                int64_t rank_in_x = 0;
                for (int j = 0; j < p[i]; j++)
                    rank_in_x += !xred[j];
                plan->out_perm[o++] = rank_in_x;
            }
            plan->out_r = o;
        }
        return true;
    }
    if (strcmp(op, "Concat") == 0 ||
        (pl_tr_in(op, pl_tr_axis_ops, PL_TR_COUNT(pl_tr_axis_ops)) &&
         pl_graph_opset(g, "") >= 13)) {
        bool concat = op[0] == 'C';
        const pl_attr *ax = pl_graph_node_attr(n, "axis");
        int64_t a = ax != NULL && ax->kind == PL_ATTR_INT ? ax->i : concat ? 0 : -1;
        if ((concat && ax == NULL) || (a < 0 ? a + r : a) < 0 || (a < 0 ? a + r : a) >= r)
            return false;
        if (!concat && n->inputs[0] != y)
            return false;
        for (size_t k = 0; concat && k < n->n_inputs; k++) {
            pl_tid t = n->inputs[k], src;
            if (t == y)
                continue;
            const pl_graph_tensor *tt = pl_graph_get_tensor(g, t);
            if (t != PL_TID_NONE && pl_tr_same_transpose(g, t, p, r, &src))
                plan->in[k] = src;
            else if (t != PL_TID_NONE && tt->ndim == r && pl_tr_permutable_const(tt, r))
                plan->permute_const[k] = true;
            else
                return false;
        }
        plan->kind = 2;
        plan->axes[0] = p[a < 0 ? a + r : a];
        return true;
    }
    if (strcmp(op, "Pad") == 0 && n->inputs[0] == y) {
        /* pads (attribute before opset 11, a constant input after; no
         * axes input) go with their axes: begin and end of Y axis i are
         * those of X axis P[i]. */
        int64_t pads[2 * PL_GRAPH_MAX_RANK];
        const pl_attr *pa = pl_graph_node_attr(n, "pads");
        if (n->n_formal_inputs >= 2 && n->inputs[1] != PL_TID_NONE) {
            const pl_graph_tensor *pt = pl_graph_get_tensor(g, n->inputs[1]);
            if (pt->data == NULL || !PL_DTYPE_EQ(pt->dtype, PL_DTYPE_I64) ||
                pt->nbytes != (size_t)(2 * r) * 8 ||
                (n->n_formal_inputs >= 4 && n->inputs[3] != PL_TID_NONE))
                return false;
            memcpy(pads, pt->data, pt->nbytes);
            plan->axes_input = true;
        } else if (pa != NULL && pa->kind == PL_ATTR_INTS && pa->n == (size_t)(2 * r)) {
            memcpy(pads, pa->ints, pa->n * sizeof *pads);
        } else {
            return false;
        }
        if (n->n_formal_inputs >= 3 && n->inputs[2] != PL_TID_NONE &&
            !pl_tr_layout_free(pl_graph_get_tensor(g, n->inputs[2]), r))
            return false;
        for (int i = 0; i < r; i++) {
            plan->axes[p[i]] = pads[i];
            plan->axes[r + p[i]] = pads[r + i];
        }
        plan->n_axes = (size_t)(2 * r);
        plan->kind = 4;
        return true;
    }
    int64_t q[PL_GRAPH_MAX_RANK];
    int rq;
    if (pl_tr_perm(g, n, q, &rq) && rq == r) {
        plan->kind = 3;
        for (int j = 0; j < r; j++)
            plan->out_perm[j] = p[q[j]];
        return true;
    }
    return false;
}

/* A constant input C of N, permuted for reading beside X: reshaped to rank
 * R with leading 1s when lower, then transposed by the inverse of P. Its
 * new name into *OUT_NAME (caller frees). */
static pl_status *pl_tr_permute_const(pl_graph *copy, const pl_graph_node *n, pl_tid c,
                                      const int64_t *p, int r, char **out_name)
{
    const pl_graph_tensor *ct = pl_graph_get_tensor(copy, c);
    char *src = pl_strdup(ct->name), *base = pl_strdup(n->name);  /* adding nodes moves them */
    pl_status *st = src && base ? NULL : pl_tr_oom();
    if (st == NULL && ct->ndim < r) {
        int64_t shape[PL_GRAPH_MAX_RANK], len = r;
        for (int i = 0; i < r; i++)
            shape[i] = i < r - ct->ndim ? 1 : ct->dims[i - (r - ct->ndim)];
        char *shape_name = NULL, *reshaped = NULL;
        st = pl_alg_constant(copy, base, "layout_shape", PL_DTYPE_I64, 1, &len, shape,
                             (size_t)r * sizeof *shape, &shape_name);
        if (st == NULL)
            st = pl_alg_node(copy, base, "Reshape", (const char *const[]){src, shape_name}, 2,
                             &reshaped);
        pl_free(shape_name);
        pl_free(src);
        src = reshaped;
    }
    char *out = NULL;
    pl_nid id = PL_NID_NONE;
    if (st == NULL) {
        st = pl_alg_node(copy, base, "Transpose", (const char *const[]){src}, 1, &out);
        id = (pl_nid)(pl_graph_node_count(copy) - 1);
    }
    int64_t inv[PL_GRAPH_MAX_RANK];
    for (int i = 0; i < r; i++)
        inv[p[i]] = i;
    if (st == NULL)
        st = pl_graph_attr_ints(copy, id, "perm", inv, (size_t)r);
    pl_free(src);
    pl_free(base);
    if (st != NULL) {
        pl_free(out);
        return st;
    }
    *out_name = out;
    return NULL;
}

/* Moves the Transpose (perm P, input X, output Y) below reader NID by
 * PLAN. NAMED marks names bodies read; DROP[n] is set for a Transpose the
 * composition makes the identity (its readers read X). */
static pl_status *pl_tr_apply(pl_graph *copy, pl_nid nid, pl_tid x, pl_tid y, const int64_t *p,
                              int r, const struct pl_tr_plan *plan, const pl_strmap *named,
                              bool *drop)
{
    const pl_graph_node *n = pl_graph_get_node(copy, nid);
    pl_tid ins[8];
    size_t n_in = n->n_inputs;
    for (size_t k = 0; k < n_in; k++)
        ins[k] = n->inputs[k] == y ? x : plan->in[k] != PL_TID_NONE ? plan->in[k] : n->inputs[k];
    pl_status *st = NULL;
    for (size_t k = 0; st == NULL && k < n_in; k++) {
        if (!plan->permute_const[k])
            continue;
        char *name = NULL;
        st = pl_tr_permute_const(copy, pl_graph_get_node(copy, nid), n->inputs[k], p, r, &name);
        n = pl_graph_get_node(copy, nid);  /* nodes may have moved */
        if (st == NULL)
            ins[k] = pl_graph_find_tensor(copy, name);
        pl_free(name);
    }
    if (st == NULL && (plan->kind == 1 || plan->kind == 4) && plan->axes_input) {
        char *name = NULL;
        int64_t len = (int64_t)plan->n_axes;
        st = pl_alg_constant(copy, n->name, plan->kind == 4 ? "layout_pads" : "layout_axes",
                             PL_DTYPE_I64, 1, &len, plan->axes,
                             plan->n_axes * sizeof *plan->axes, &name);
        n = pl_graph_get_node(copy, nid);
        if (st == NULL)
            ins[1] = pl_graph_find_tensor(copy, name);
        pl_free(name);
    } else if (st == NULL && plan->kind == 1 && plan->n_axes > 0) {
        pl_graph_node_remove_attr(copy, nid, "axes");
        st = pl_graph_attr_ints(copy, nid, "axes", plan->axes, plan->n_axes);
    } else if (st == NULL && plan->kind == 4) {
        pl_graph_node_remove_attr(copy, nid, "pads");
        st = pl_graph_attr_ints(copy, nid, "pads", plan->axes, plan->n_axes);
    } else if (st == NULL && plan->kind == 2) {
        pl_graph_node_remove_attr(copy, nid, "axis");
        st = pl_graph_attr_int(copy, nid, "axis", plan->axes[0]);
    } else if (st == NULL && plan->kind == 3) {
        pl_graph_node_remove_attr(copy, nid, "perm");
        st = pl_graph_attr_ints(copy, nid, "perm", plan->out_perm, (size_t)plan->out_r);
    }
    if (st == NULL)
        st = pl_graph_node_set_inputs(copy, nid, ins, n_in);
    if (st != NULL)
        return st;
    n = pl_graph_get_node(copy, nid);
    pl_tid out = n->outputs[0];
    const pl_graph_tensor *ot = pl_graph_get_tensor(copy, out);
    if (plan->kind == 3) {
        /* Composed: an identity Transpose hands its readers X; one whose
         * output is the graph's (or a body's) name becomes an Identity. */
        if (!pl_tr_identity(plan->out_perm, plan->out_r))
            return NULL;
        if (ot->is_output || pl_tr_named(named, ot->name)) {
            pl_graph_node_remove_attr(copy, nid, "perm");
            return pl_graph_node_set_op(copy, nid, "", "Identity");
        }
        for (size_t c = 0; c < ot->n_consumers; c++) {
            const pl_graph_node *rd = pl_graph_get_node(copy, ot->consumers[c]);
            pl_tid rin[64];
            if (rd->n_inputs > 64)
                return pl_status_create(PL_CODE_UNSUPPORTED, "too many inputs to rewire");
            for (size_t k = 0; k < rd->n_inputs; k++)
                rin[k] = rd->inputs[k] == out ? x : rd->inputs[k];
            PL_RETURN_IF_ERROR(pl_graph_node_set_inputs(copy, ot->consumers[c], rin,
                                                        rd->n_formal_inputs));
        }
        drop[nid] = true;
        return NULL;
    }
    if (plan->out_r == 0 || pl_tr_identity(plan->out_perm, plan->out_r))
        return NULL;
    /* N writes a new tensor; a Transpose after it writes N's output. */
    char *fresh = pl_alg_name(copy, ot->name, "layout", false);
    char *tname = pl_alg_name(copy, n->name, "Transpose", true);
    pl_tid ft = PL_TID_NONE;
    st = fresh && tname ? pl_graph_tensor_get_or_add(copy, fresh, &ft) : pl_tr_oom();
    if (st == NULL)
        st = pl_graph_node_set_outputs(copy, nid, &ft, 1);
    pl_nid tid = PL_NID_NONE;
    if (st == NULL)
        st = pl_graph_add_node(copy, tname, "Transpose", "", (const char *const[]){fresh}, 1,
                               (const char *const[]){pl_graph_get_tensor(copy, out)->name}, 1,
                               &tid);
    if (st == NULL)
        st = pl_graph_attr_ints(copy, tid, "perm", plan->out_perm, (size_t)plan->out_r);
    pl_free(fresh);
    pl_free(tname);
    return st;
}

/* Transposes of activations (not of constants, nor of what is computed
 * from constants only: the permuted constants this pass adds, folded
 * later) among the nodes DROP (may be NULL) keeps; SIZE_MAX when out of
 * memory. G is validated. */
static size_t pl_tr_count(const pl_graph *g, const bool *drop)
{
    size_t nt = pl_graph_tensor_count(g);
    bool *is_const = pl_calloc(nt ? nt : 1, sizeof *is_const);
    if (is_const == NULL)
        return SIZE_MAX;
    for (size_t t = 0; t < nt; t++)
        is_const[t] = pl_graph_get_tensor(g, (pl_tid)t)->data != NULL;
    const pl_nid *order = pl_graph_topo_order(g);
    for (size_t i = 0; i < pl_graph_node_count(g); i++) {
        const pl_graph_node *n = pl_graph_get_node(g, order[i]);
        bool all = n->n_inputs > 0;
        for (size_t k = 0; k < n->n_inputs; k++)
            all &= n->inputs[k] == PL_TID_NONE || is_const[n->inputs[k]];
        for (size_t o = 0; all && o < n->n_outputs; o++)
            if (n->outputs[o] != PL_TID_NONE)
                is_const[n->outputs[o]] = true;
    }
    size_t count = 0;
    for (size_t i = 0; i < pl_graph_node_count(g); i++) {
        const pl_graph_node *n = pl_graph_get_node(g, (pl_nid)i);
        int64_t p[PL_GRAPH_MAX_RANK];
        int r;
        if ((drop == NULL || !drop[i]) && pl_tr_perm(g, n, p, &r) && !is_const[n->inputs[0]])
            count++;
    }
    pl_free(is_const);
    return count;
}

/* Nodes a move may add: a Reshape and a Transpose per permuted constant
 * input (at most 8) and the Transpose after the reader. */
#define PL_TR_NODES_PER_MOVE 17
/* Moves made between two validations of the graph. */
#define PL_TR_BATCH 64

/* Whether tensor T was rewired by a move of this batch (or made by one:
 * ids from N_OLD on), so that its consumer lists are stale. */
static bool pl_tr_touched(const bool *touched, size_t n_old, pl_tid t)
{
    return t != PL_TID_NONE && (t >= n_old || touched[t]);
}

static void pl_tr_touch_node(const pl_graph *g, pl_nid nid, bool *touched, size_t n_old)
{
    const pl_graph_node *n = pl_graph_get_node(g, nid);
    for (size_t k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] != PL_TID_NONE && n->inputs[k] < n_old)
            touched[n->inputs[k]] = true;
    for (size_t k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] != PL_TID_NONE && n->outputs[k] < n_old)
            touched[n->outputs[k]] = true;
}

/* Moves in topological order: each Transpose with a reader it can move
 * below, up to ROOM moves. One move per Transpose, and none that reads or
 * writes a tensor an earlier move of the batch rewired (its consumer lists
 * are stale until the graph is validated again): tf_mobilenet_v3's 203
 * moves were 203 validations of the whole graph, a third of its load.
 * *OUT_MOVES 0 when nothing moves. */
static pl_status *pl_tr_step(pl_graph *copy, const pl_strmap *named, bool *drop, size_t room,
                             size_t *out_moves)
{
    *out_moves = 0;
    size_t nn = pl_graph_node_count(copy), nt = pl_graph_tensor_count(copy);
    pl_nid *order = pl_malloc((nn ? nn : 1) * sizeof *order);
    bool *touched = pl_calloc(nt ? nt : 1, sizeof *touched);
    if (order == NULL || touched == NULL) {
        pl_free(order);
        pl_free(touched);
        return pl_tr_oom();
    }
    memcpy(order, pl_graph_topo_order(copy), nn * sizeof *order);
    pl_status *st = NULL;
    for (size_t i = 0; i < nn && st == NULL && *out_moves < room; i++) {
        if (drop[order[i]])
            continue;
        const pl_graph_node *t = pl_graph_get_node(copy, order[i]);
        int64_t p[PL_GRAPH_MAX_RANK];
        int r;
        if (!pl_tr_perm(copy, t, p, &r))
            continue;
        pl_tid x = t->inputs[0], y = t->outputs[0];
        if (pl_graph_get_tensor(copy, x)->data != NULL)
            continue;  /* a constant's Transpose is folded */
        if (pl_tr_touched(touched, nt, x) || pl_tr_touched(touched, nt, y))
            continue;
        const pl_graph_tensor *yt = pl_graph_get_tensor(copy, y);
        for (size_t c = 0; c < yt->n_consumers; c++) {
            pl_nid nid = yt->consumers[c];
            if (nid >= nn || drop[nid])
                continue;
            const pl_graph_node *n = pl_graph_get_node(copy, nid);
            bool stale = false;
            for (size_t k = 0; k < n->n_inputs && !stale; k++)
                stale = pl_tr_touched(touched, nt, n->inputs[k]);
            for (size_t k = 0; k < n->n_outputs && !stale; k++)
                stale = pl_tr_touched(touched, nt, n->outputs[k]);
            struct pl_tr_plan plan;
            if (stale || !pl_tr_plan_for(copy, n, y, p, r, &plan))
                continue;
            touched[x] = touched[y] = true;
            pl_tr_touch_node(copy, nid, touched, nt);
            st = pl_tr_apply(copy, nid, x, y, p, r, &plan, named, drop);
            if (st == NULL)
                pl_tr_touch_node(copy, nid, touched, nt);
            (*out_moves)++;
            break;
        }
    }
    pl_free(order);
    pl_free(touched);
    return st;
}

/* Whether pl_tr_step would move some Transpose of G (validated): looked at
 * before the graph is copied, since most Transposes stay where they are
 * (a decoder's attention heads) and the copy was 8% of planning a staged
 * session's tail, which happens for every new shape. */
static bool pl_tr_any_move(const pl_graph *g)
{
    for (size_t i = 0; i < pl_graph_node_count(g); i++) {
        const pl_graph_node *t = pl_graph_get_node(g, (pl_nid)i);
        int64_t p[PL_GRAPH_MAX_RANK];
        int r;
        if (!pl_tr_perm(g, t, p, &r) || pl_graph_get_tensor(g, t->inputs[0])->data != NULL)
            continue;
        const pl_graph_tensor *yt = pl_graph_get_tensor(g, t->outputs[0]);
        for (size_t c = 0; c < yt->n_consumers; c++) {
            struct pl_tr_plan plan;
            if (pl_tr_plan_for(g, pl_graph_get_node(g, yt->consumers[c]), t->outputs[0], p, r,
                               &plan))
                return true;
        }
    }
    return false;
}

pl_status *pl_graph_sink_transposes(const pl_graph *g, pl_graph **out_graph,
                                    pl_rewrites *rewrites)
{
    *out_graph = NULL;
    size_t before = pl_tr_count(g, NULL);
    if (before == SIZE_MAX)
        return pl_tr_oom();
    if (before == 0 || !pl_tr_any_move(g))
        return NULL;
    pl_strmap named = {.alloc = pl_alloc_current()};
    pl_graph *copy = NULL, *result = NULL;
    bool *drop = NULL;
    size_t cap = 0, moves = 0;
    pl_status *st = pl_optimize_body_names(g, &named) ? NULL : pl_tr_oom();
    if (st == NULL)
        st = pl_graph_copy(g, &copy);
    if (st == NULL)
        st = pl_graph_validate(copy);
    size_t limit = 8 * pl_graph_node_count(g) + 64;
    for (bool moved = true; st == NULL && moved && moves < limit;) {
        size_t nn = pl_graph_node_count(copy);
        size_t want = nn + PL_TR_BATCH * PL_TR_NODES_PER_MOVE; /* room for a batch's nodes */
        if (want > cap) {
            bool *grown = pl_realloc(drop, want * sizeof *grown);
            if (grown == NULL) {
                st = pl_tr_oom();
                break;
            }
            memset(grown + cap, 0, (want - cap) * sizeof *grown);
            drop = grown;
            cap = want;
        }
        size_t made = 0, room = limit - moves < PL_TR_BATCH ? limit - moves : PL_TR_BATCH;
        st = pl_tr_step(copy, &named, drop, room, &made);
        moved = made > 0;
        if (st == NULL && moved) {
            moves += made;
            st = pl_graph_validate(copy);
        }
    }
    /* Transposes nobody reads go (the graph's interface and names bodies
     * read stay). */
    size_t nn_end = copy ? pl_graph_node_count(copy) : 0;
    if (st == NULL && nn_end > cap) {
        bool *grown = pl_realloc(drop, nn_end * sizeof *grown);
        if (grown == NULL)
            st = pl_tr_oom();
        else {
            memset(grown + cap, 0, (nn_end - cap) * sizeof *grown);
            drop = grown;
            cap = nn_end;
        }
    }
    for (bool more = st == NULL; more;) {
        more = false;
        for (size_t i = 0; i < pl_graph_node_count(copy); i++) {
            const pl_graph_node *n = pl_graph_get_node(copy, (pl_nid)i);
            int64_t p[PL_GRAPH_MAX_RANK];
            int r;
            if (drop[i] || !pl_tr_perm(copy, n, p, &r))
                continue;
            const pl_graph_tensor *y = pl_graph_get_tensor(copy, n->outputs[0]);
            bool read = y->is_output || pl_tr_named(&named, y->name);
            for (size_t c = 0; c < y->n_consumers && !read; c++)
                read = !drop[y->consumers[c]];
            if (!read)
                drop[i] = more = true;
        }
    }
    size_t after = st == NULL ? pl_tr_count(copy, drop) : before;
    if (after == SIZE_MAX)
        st = pl_tr_oom();
    if (st == NULL && moves > 0 && after < before) {
        /* The Transposes left unread stay for pl_graph_prefold's dead-node
         * pass (the copy keeps the constants this pass made). */
        result = copy;
        copy = NULL;
        if (st == NULL &&
            !pl_rewrites_add(rewrites,
                             "layout: %zu Transposes of activations -> %zu (%zu moves below "
                             "the elementwise ops, reductions, Concats and Softmaxes that "
                             "read them; pairs that undo each other cancelled)",
                             before, after, moves))
            st = pl_tr_oom();
        if (st != NULL) {
            pl_graph_destroy(result);
            result = NULL;
        }
    }
    pl_graph_destroy(copy);
    pl_free(drop);
    pl_strmap_free(&named);
    if (st != NULL && pl_status_code(st) != PL_CODE_OUT_OF_MEMORY) {
        /* An optimisation, not a reason to refuse the model. */
        bool noted = pl_rewrites_add(rewrites, "layout: Transposes left as they are: %s",
                                     pl_status_message(st));
        pl_status_free(st);
        st = noted ? NULL : pl_tr_oom();
    }
    *out_graph = result;
    return st;
}
