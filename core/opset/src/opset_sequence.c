/* opset_sequence.c — ONNX's sequence values followed through a graph and
 * rewritten into tensor ops, node by node as the inference walk reaches
 * them (opset.c), so that no module ever sees a sequence.
 *
 * A sequence is held one of two ways (pl_graph_seq, graph.h):
 *
 * - a list of tensors known when the graph is rewritten (SequenceEmpty,
 *   SequenceConstruct, SplitToSequence with a split of unequal parts,
 *   SequenceInsert and SequenceErase at known positions); SequenceAt at a
 *   known position is then the tensor itself, SequenceLength a constant,
 *   ConcatFromSequence one Concat (of Unsqueezes with new_axis);
 * - one tensor holding the elements stacked along an axis (SplitToSequence
 *   without a split, or into equal parts: the input itself, unsqueezed or
 *   reshaped; a Loop's sequence built by appending, as a scan output);
 *   SequenceAt is a Gather, SequenceLength a dim of its Shape,
 *   ConcatFromSequence a Transpose and, without new_axis, a Reshape
 *   merging two axes.
 *
 * A list a control-flow body reads, or one read at a computed position,
 * is stacked (a Concat of Unsqueezes) when its tensors can share a shape:
 * a body sees only stacked sequences. A Loop that carries a sequence
 * starting empty, to which its body appends one tensor per iteration
 * (PyTorch's scripted `for ...: list.append(x)`), gets that tensor as a
 * scan output instead: the sequence after the loop is the scan output,
 * stacked on axis 0. Any other Loop over sequences (its body reads a list
 * of tensors of different shapes, or the sequence it grows) is unrolled
 * when its trip count is known before the run (sq_unroll), each copy of
 * the body walked in turn.
 *
 * What cannot be followed is refused with the node and the reason: a
 * sequence as the model's input or output (the onnx module refuses those),
 * positions and splits computed at run time on lists, such a Loop whose
 * trip count only the run knows, SequenceMap, and any other op given a
 * sequence. Elements of a stacked
 * sequence share one shape, as ONNX Runtime's loops and splits give them;
 * a SplitToSequence into parts of a size that does not divide a dim known
 * only at run time fails there, in its Reshape. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "opset_internal.h"

enum { SQ_NAME = 256, SQ_MAX_ELEMS = 4096 };

typedef struct sq {
    pl_infer_ctx *ctx;
    pl_graph *g;
    pl_nid id;
    int64_t version;
    char base[SQ_NAME];
    char op[64];
    bool walk_added;   /* the nodes added need the whole walk (an unrolled body) */
} sq;

static pl_status *sq_error(const sq *s, pl_code code, const char *fmt, ...)
    PL_PRINTF_LIKE(3, 4);

static pl_status *sq_error(const sq *s, pl_code code, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pl_status_create(code, "node '%s' (%s): %s", s->base, s->op, msg);
}

static const pl_graph_node *sq_node(const sq *s)
{
    return pl_graph_get_node(s->g, s->id);
}

/* Formal input I of the node, or PL_TID_NONE. */
static pl_tid sq_in(const sq *s, size_t i)
{
    const pl_graph_node *n = sq_node(s);
    return i < n->n_formal_inputs ? n->inputs[i] : PL_TID_NONE;
}

static const char *sq_name(const sq *s, pl_tid t)
{
    return pl_graph_get_tensor(s->g, t)->name;
}

static int64_t sq_attr_i(const sq *s, const char *name, int64_t def)
{
    const pl_attr *a = pl_graph_node_attr(sq_node(s), name);
    return a != NULL && a->kind == PL_ATTR_INT ? a->i : def;
}

/* The values of tensor T when all are known integers (at most
 * PL_KNOWN_MAX), into OUT; false otherwise. */
static bool sq_known(const sq *s, pl_tid t, int64_t *out, size_t *out_n)
{
    bool is_float;
    const int64_t *iv;
    const double *fv;
    uint64_t mask;
    size_t n;
    if (t == PL_TID_NONE ||
        !pl_infer_known_tensor(s->ctx, t, &is_float, &iv, &fv, &mask, &n) || is_float ||
        mask != (n < 64 ? (UINT64_C(1) << n) - 1 : UINT64_MAX))
        return false;
    memcpy(out, iv, n * sizeof *out);
    *out_n = n;
    return true;
}

/* Adds node OP(INS) with N_OUT fresh outputs, named after the node; their
 * ids into OUTS, the node's into *OUT_ID. */
static pl_status *sq_add(sq *s, const char *op, const pl_tid *ins, size_t n_in, size_t n_out,
                         pl_tid *outs, pl_nid *out_id)
{
    enum { MAXIO = 64 };
    if (n_in > MAXIO || n_out > MAXIO)
        return sq_error(s, PL_CODE_UNSUPPORTED, "a rewrite of more than %d tensors", MAXIO);
    char in_names[MAXIO][SQ_NAME], out_names[MAXIO][SQ_NAME], node_name[SQ_NAME];
    const char *ip[MAXIO], *op_[MAXIO];
    for (size_t i = 0; i < n_in; i++) {
        snprintf(in_names[i], SQ_NAME, "%s", ins[i] == PL_TID_NONE ? "" : sq_name(s, ins[i]));
        ip[i] = in_names[i];
    }
    pl_rewrite_fresh_name(s->g, s->base, op, node_name, sizeof node_name);
    for (size_t o = 0; o < n_out; o++) {
        char what[80];
        snprintf(what, sizeof what, "%s_out%zu", op, o);
        pl_rewrite_fresh_name(s->g, s->base, what, out_names[o], SQ_NAME);
        /* reserve the name before the next one is chosen */
        pl_tid t;
        PL_RETURN_IF_ERROR(pl_graph_tensor_get_or_add(s->g, out_names[o], &t));
        op_[o] = out_names[o];
    }
    pl_nid id;
    PL_RETURN_IF_ERROR(pl_graph_add_node(s->g, node_name, op, "", ip, n_in, op_, n_out, &id));
    for (size_t o = 0; o < n_out; o++)
        outs[o] = pl_graph_find_tensor(s->g, out_names[o]);
    if (out_id != NULL)
        *out_id = id;
    return NULL;
}

static pl_status *sq_add1(sq *s, const char *op, const pl_tid *ins, size_t n_in, pl_tid *out,
                          pl_nid *out_id)
{
    return sq_add(s, op, ins, n_in, 1, out, out_id);
}

static pl_status *sq_i64s(sq *s, const char *what, const int64_t *v, size_t n, bool scalar,
                          pl_tid *out)
{
    int64_t dims[1] = {(int64_t)n};
    return pl_rewrite_add_constant(s->g, s->id, what, (pl_dtype){PL_TYPE_INT, 64, 1},
                                   scalar ? 0 : 1, dims, v, n * sizeof *v, out);
}

/* X with a new axis AXIS (in the output's rank; negative counts from its
 * end): Unsqueeze, its axes an input from opset 13, an attribute before. */
static pl_status *sq_unsqueeze(sq *s, pl_tid x, int64_t axis, pl_tid *out)
{
    pl_nid nid;
    if (s->version >= 13) {
        pl_tid ax;
        PL_RETURN_IF_ERROR(sq_i64s(s, "axes", &axis, 1, false, &ax));
        pl_tid ins[2] = {x, ax};
        return sq_add1(s, "Unsqueeze", ins, 2, out, &nid);
    }
    PL_RETURN_IF_ERROR(sq_add1(s, "Unsqueeze", &x, 1, out, &nid));
    return pl_graph_attr_ints(s->g, nid, "axes", &axis, 1);
}

/* The N tensors ELEMS stacked along a new axis 0. */
static pl_status *sq_stack(sq *s, const pl_tid *elems, size_t n, pl_tid *out)
{
    pl_tid *u = pl_malloc((n ? n : 1) * sizeof *u);
    if (u == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory stacking a sequence");
    pl_status *st = NULL;
    for (size_t i = 0; st == NULL && i < n; i++)
        st = sq_unsqueeze(s, elems[i], 0, &u[i]);
    pl_nid nid;
    if (st == NULL)
        st = sq_add1(s, "Concat", u, n, out, &nid);
    if (st == NULL)
        st = pl_graph_attr_int(s->g, nid, "axis", 0);
    pl_free(u);
    return st;
}

/* Turns the node into OP(INS), its attributes dropped, its output 0 kept. */
static pl_status *sq_become(sq *s, const char *op, const pl_tid *ins, size_t n_in)
{
    for (;;) {
        const pl_graph_node *n = sq_node(s);
        if (n->n_attrs == 0)
            break;
        char name[128];
        snprintf(name, sizeof name, "%s", n->attrs[0].name);
        pl_graph_node_remove_attr(s->g, s->id, name);
    }
    PL_RETURN_IF_ERROR(pl_graph_node_set_op(s->g, s->id, "", op));
    return pl_graph_node_set_inputs(s->g, s->id, ins, n_in);
}

/* Whether tensor T is read by a control-flow body (a capture of a node of
 * this graph). */
static bool sq_captured(const sq *s, pl_tid t)
{
    for (size_t i = 0; i < pl_graph_node_count(s->g); i++) {
        const pl_graph_node *n = pl_graph_get_node(s->g, (pl_nid)i);
        for (size_t k = n->n_formal_inputs; k < n->n_inputs; k++)
            if (n->inputs[k] == t)
                return true;
    }
    return false;
}

static pl_status *sq_mark(sq *s, pl_tid t, pl_seq_kind kind, int64_t axis, pl_dtype dtype,
                          const pl_tid *elems, size_t n)
{
    pl_graph_seq q = {.kind = kind, .axis = axis, .elem_dtype = dtype, .n = n,
                      .elems = (pl_tid *)elems};
    return pl_graph_set_seq(s->g, t, &q);
}

/* The node's output becomes the list ELEMS (N tensors of DTYPE); stacked
 * instead when a body reads it. The node itself, whose output nobody reads
 * as a tensor, becomes an Identity the session prunes. */
static pl_status *sq_finish_list(sq *s, const pl_tid *elems, size_t n, pl_dtype dtype)
{
    pl_tid out = sq_node(s)->outputs[0];
    bool uniform = n > 0;
    for (size_t i = 1; uniform && i < n; i++) {
        const pl_graph_tensor *e0 = pl_graph_get_tensor(s->g, elems[0]);
        const pl_graph_tensor *e = pl_graph_get_tensor(s->g, elems[i]);
        bool differ = e->ndim >= 0 && e0->ndim >= 0 && e->ndim != e0->ndim;
        for (int32_t d = 0; !differ && e->ndim == e0->ndim && d < e->ndim; d++)
            differ = e->dims[d] >= 0 && e0->dims[d] >= 0 && e->dims[d] != e0->dims[d];
        uniform = !differ;
    }
    /* a body reads it: stacked, unless its tensors differ in shape (then
     * a Loop reading it is unrolled: sq_loop) */
    if (uniform && sq_captured(s, out)) {
        pl_tid *u = pl_malloc(n * sizeof *u);
        if (u == NULL)
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory stacking a sequence");
        pl_status *st = NULL;
        for (size_t i = 0; st == NULL && i < n; i++)
            st = sq_unsqueeze(s, elems[i], 0, &u[i]);
        if (st == NULL)
            st = sq_become(s, "Concat", u, n);
        if (st == NULL)
            st = pl_graph_attr_int(s->g, s->id, "axis", 0);
        pl_free(u);
        if (st == NULL)
            st = sq_mark(s, out, PL_SEQ_STACKED, 0, dtype, NULL, 0);
        return st;
    }
    pl_tid src;
    if (n > 0) {
        src = elems[0];
    } else {
        float zero = 0;
        PL_RETURN_IF_ERROR(pl_rewrite_add_constant(s->g, s->id, "empty",
                                                   (pl_dtype){PL_TYPE_FLOAT, 32, 1}, 0, NULL,
                                                   &zero, sizeof zero, &src));
    }
    PL_RETURN_IF_ERROR(sq_become(s, "Identity", &src, 1));
    return sq_mark(s, out, PL_SEQ_LIST, 0, dtype, elems, n);
}

/* The sequence input I, or an error naming it. */
static pl_status *sq_seq_input(sq *s, size_t i, const pl_graph_seq **out)
{
    pl_tid t = sq_in(s, i);
    if (t == PL_TID_NONE)
        return sq_error(s, PL_CODE_INVALID_ARGUMENT, "input %zu (the sequence) is missing", i);
    *out = pl_graph_seq_of(s->g, t);
    if (*out == NULL)
        return sq_error(s, PL_CODE_UNSUPPORTED,
                        "input %zu ('%s') is not a sequence Plinth could follow: it must come "
                        "from a sequence op of this graph (or of one enclosing it), not from "
                        "the model's inputs, an If or another op",
                        i, sq_name(s, t));
    return NULL;
}

/* A list's elements copied with room for one more. */
static pl_status *sq_copy_elems(const pl_graph_seq *q, pl_tid **out)
{
    *out = pl_malloc((q->n + 1) * sizeof **out);
    if (*out == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory following a sequence");
    if (q->n)
        memcpy(*out, q->elems, q->n * sizeof **out);
    return NULL;
}

/* A known position input I into *POS, normalised against LEN (INSERT: the
 * end itself is a position); 0 when absent (then DEF), 1 read, -1 not
 * known. */
static pl_status *sq_position(sq *s, size_t i, int64_t len, bool insert, int64_t def,
                              int64_t *pos, int *state)
{
    pl_tid t = sq_in(s, i);
    *pos = def;
    *state = 0;
    if (t == PL_TID_NONE)
        return NULL;
    int64_t v[PL_KNOWN_MAX];
    size_t n;
    if (!sq_known(s, t, v, &n) || n != 1) {
        *state = -1;
        return NULL;
    }
    *state = 1;
    int64_t p = v[0] < 0 ? v[0] + len : v[0];
    if (len >= 0 && (p < 0 || p > (insert ? len : len - 1)))
        return sq_error(s, PL_CODE_INVALID_ARGUMENT,
                        "position %lld is outside the sequence of %lld elements",
                        (long long)v[0], (long long)len);
    *pos = p;
    return NULL;
}

/* ---- the ops ---------------------------------------------------------- */

static pl_status *sq_empty(sq *s)
{
    pl_dtype dtype = {PL_TYPE_FLOAT, 32, 1};
    int64_t code = sq_attr_i(s, "dtype", 1);
    if (!pl_onnx_dtype(code, &dtype))
        return sq_error(s, PL_CODE_UNSUPPORTED, "dtype %lld is not supported", (long long)code);
    return sq_finish_list(s, NULL, 0, dtype);
}

static pl_status *sq_construct(sq *s)
{
    const pl_graph_node *n = sq_node(s);
    size_t k = n->n_formal_inputs;
    if (k == 0)
        return sq_error(s, PL_CODE_INVALID_ARGUMENT, "needs at least one input");
    pl_tid *elems = pl_malloc(k * sizeof *elems);
    if (elems == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory following a sequence");
    memcpy(elems, n->inputs, k * sizeof *elems);
    pl_status *st = NULL;
    for (size_t i = 0; st == NULL && i < k; i++)
        if (elems[i] == PL_TID_NONE)
            st = sq_error(s, PL_CODE_INVALID_ARGUMENT, "input %zu is missing", i);
    if (st == NULL)
        st = sq_finish_list(s, elems, k, pl_graph_get_tensor(s->g, elems[0])->dtype);
    pl_free(elems);
    return st;
}

static pl_status *sq_insert(sq *s)
{
    const pl_graph_seq *q;
    PL_RETURN_IF_ERROR(sq_seq_input(s, 0, &q));
    pl_tid t = sq_in(s, 1), seq = sq_in(s, 0);
    if (t == PL_TID_NONE)
        return sq_error(s, PL_CODE_INVALID_ARGUMENT, "input 1 (the tensor) is missing");
    pl_dtype dtype = pl_graph_get_tensor(s->g, t)->dtype;
    int64_t pos;
    int state;
    if (q->kind == PL_SEQ_LIST) {
        PL_RETURN_IF_ERROR(sq_position(s, 2, (int64_t)q->n, true, (int64_t)q->n, &pos, &state));
        if (state < 0)
            return sq_error(s, PL_CODE_UNSUPPORTED,
                            "the position is computed at run time; Plinth follows a list "
                            "sequence only through known positions");
        if (q->n >= SQ_MAX_ELEMS)
            return sq_error(s, PL_CODE_UNSUPPORTED, "a sequence of more than %d tensors",
                            SQ_MAX_ELEMS);
        pl_tid *e;
        PL_RETURN_IF_ERROR(sq_copy_elems(q, &e));
        memmove(e + pos + 1, e + pos, (q->n - (size_t)pos) * sizeof *e);
        e[pos] = t;
        pl_status *st = sq_finish_list(s, e, q->n + 1, dtype);
        pl_free(e);
        return st;
    }
    int64_t axis = q->axis;
    const pl_graph_tensor *st_t = pl_graph_get_tensor(s->g, seq);
    int64_t len = st_t->ndim > axis ? st_t->dims[axis] : -1;
    PL_RETURN_IF_ERROR(sq_position(s, 2, len, true, -1, &pos, &state));
    bool front = state == 1 && pos == 0 && len != 0;
    if (state < 0 || (state == 1 && !front && (len < 0 || pos != len)))
        return sq_error(s, PL_CODE_UNSUPPORTED,
                        "inserts inside a sequence stacked in one tensor; Plinth inserts there "
                        "only at the front or the end");
    pl_tid u;
    PL_RETURN_IF_ERROR(sq_unsqueeze(s, t, axis, &u));
    pl_tid ins[2] = {front ? u : seq, front ? seq : u};
    PL_RETURN_IF_ERROR(sq_become(s, "Concat", ins, 2));
    PL_RETURN_IF_ERROR(pl_graph_attr_int(s->g, s->id, "axis", axis));
    return sq_mark(s, sq_node(s)->outputs[0], PL_SEQ_STACKED, axis, dtype, NULL, 0);
}

static pl_status *sq_erase(sq *s)
{
    const pl_graph_seq *q;
    PL_RETURN_IF_ERROR(sq_seq_input(s, 0, &q));
    pl_tid seq = sq_in(s, 0);
    int64_t pos;
    int state;
    if (q->kind == PL_SEQ_LIST) {
        if (q->n == 0)
            return sq_error(s, PL_CODE_INVALID_ARGUMENT, "erases from an empty sequence");
        PL_RETURN_IF_ERROR(
            sq_position(s, 1, (int64_t)q->n, false, (int64_t)q->n - 1, &pos, &state));
        if (state < 0)
            return sq_error(s, PL_CODE_UNSUPPORTED,
                            "the position is computed at run time; Plinth follows a list "
                            "sequence only through known positions");
        pl_tid *e;
        PL_RETURN_IF_ERROR(sq_copy_elems(q, &e));
        memmove(e + pos, e + pos + 1, (q->n - (size_t)pos - 1) * sizeof *e);
        pl_status *st = sq_finish_list(s, e, q->n - 1, q->elem_dtype);
        pl_free(e);
        return st;
    }
    const pl_graph_tensor *st_t = pl_graph_get_tensor(s->g, seq);
    int64_t len = st_t->ndim > q->axis ? st_t->dims[q->axis] : -1;
    PL_RETURN_IF_ERROR(sq_position(s, 1, len, false, -1, &pos, &state));
    bool last = state == 0 || (len >= 0 && pos == len - 1);
    if (state < 0 || (!last && pos != 0))
        return sq_error(s, PL_CODE_UNSUPPORTED,
                        "erases inside a sequence stacked in one tensor; Plinth erases there "
                        "only the first or the last element");
    int64_t v[3] = {last ? 0 : 1, last ? -1 : INT64_MAX, q->axis};
    pl_tid c[3];
    PL_RETURN_IF_ERROR(sq_i64s(s, "starts", &v[0], 1, false, &c[0]));
    PL_RETURN_IF_ERROR(sq_i64s(s, "ends", &v[1], 1, false, &c[1]));
    PL_RETURN_IF_ERROR(sq_i64s(s, "axes", &v[2], 1, false, &c[2]));
    pl_tid ins[4] = {seq, c[0], c[1], c[2]};
    PL_RETURN_IF_ERROR(sq_become(s, "Slice", ins, 4));
    return sq_mark(s, sq_node(s)->outputs[0], PL_SEQ_STACKED, q->axis, q->elem_dtype, NULL, 0);
}

static pl_status *sq_at(sq *s)
{
    const pl_graph_seq *q;
    PL_RETURN_IF_ERROR(sq_seq_input(s, 0, &q));
    pl_tid seq = sq_in(s, 0), p = sq_in(s, 1);
    if (p == PL_TID_NONE)
        return sq_error(s, PL_CODE_INVALID_ARGUMENT, "input 1 (the position) is missing");
    /* a position of shape [1] (ONNX asks for a scalar; ONNX Runtime reads
     * the first element of any shape) is made a scalar, so that the Gather
     * drops the axis */
    const pl_graph_tensor *pt = pl_graph_get_tensor(s->g, p);
    if (pt->ndim == 1 && pt->dims[0] == 1) {
        pl_tid shape, scalar;
        static const int64_t none[1] = {0};
        PL_RETURN_IF_ERROR(sq_i64s(s, "scalar", none, 0, false, &shape));
        pl_tid ins[2] = {p, shape};
        PL_RETURN_IF_ERROR(sq_add1(s, "Reshape", ins, 2, &scalar, NULL));
        p = scalar;
    }
    if (q->kind == PL_SEQ_LIST) {
        if (q->n == 0)
            return sq_error(s, PL_CODE_INVALID_ARGUMENT, "reads an empty sequence");
        int64_t pos;
        int state;
        PL_RETURN_IF_ERROR(sq_position(s, 1, (int64_t)q->n, false, 0, &pos, &state));
        if (state == 1) {
            pl_tid e = q->elems[pos];
            return sq_become(s, "Identity", &e, 1);
        }
        pl_tid stacked;
        PL_RETURN_IF_ERROR(sq_stack(s, q->elems, q->n, &stacked));
        pl_tid ins[2] = {stacked, p};
        PL_RETURN_IF_ERROR(sq_become(s, "Gather", ins, 2));
        return pl_graph_attr_int(s->g, s->id, "axis", 0);
    }
    int64_t axis = q->axis;
    pl_tid ins[2] = {seq, p};
    PL_RETURN_IF_ERROR(sq_become(s, "Gather", ins, 2));
    return pl_graph_attr_int(s->g, s->id, "axis", axis);
}

static pl_status *sq_length(sq *s)
{
    const pl_graph_seq *q;
    PL_RETURN_IF_ERROR(sq_seq_input(s, 0, &q));
    pl_tid c;
    if (q->kind == PL_SEQ_LIST) {
        int64_t n = (int64_t)q->n;
        PL_RETURN_IF_ERROR(sq_i64s(s, "length", &n, 1, true, &c));
        return sq_become(s, "Identity", &c, 1);
    }
    pl_tid seq = sq_in(s, 0), shape;
    PL_RETURN_IF_ERROR(sq_add1(s, "Shape", &seq, 1, &shape, NULL));
    PL_RETURN_IF_ERROR(sq_i64s(s, "axis", &q->axis, 1, true, &c));
    pl_tid ins[2] = {shape, c};
    PL_RETURN_IF_ERROR(sq_become(s, "Gather", ins, 2));
    return pl_graph_attr_int(s->g, s->id, "axis", 0);
}

/* The node becomes a Reshape of X that replaces X's axes [FROM, TO) with
 * the N_MID dims MID (-1 for the one Reshape infers), the others kept:
 * Concat(Slice(Shape(X), 0, FROM), MID, Slice(Shape(X), TO, end)). */
static pl_status *sq_reshape_middle(sq *s, pl_tid x, int64_t from, int64_t to,
                                    const int64_t *mid, size_t n_mid)
{
    pl_tid shape, c[4], head, tail, m, target;
    pl_nid nid;
    PL_RETURN_IF_ERROR(sq_add1(s, "Shape", &x, 1, &shape, NULL));
    int64_t v[4] = {0, from, to, INT64_MAX};
    PL_RETURN_IF_ERROR(sq_i64s(s, "zero", &v[0], 1, false, &c[0]));
    PL_RETURN_IF_ERROR(sq_i64s(s, "from", &v[1], 1, false, &c[1]));
    PL_RETURN_IF_ERROR(sq_i64s(s, "to", &v[2], 1, false, &c[2]));
    PL_RETURN_IF_ERROR(sq_i64s(s, "end", &v[3], 1, false, &c[3]));
    pl_tid hi[3] = {shape, c[0], c[1]}, ti[3] = {shape, c[2], c[3]};
    PL_RETURN_IF_ERROR(sq_add1(s, "Slice", hi, 3, &head, NULL));
    PL_RETURN_IF_ERROR(sq_add1(s, "Slice", ti, 3, &tail, NULL));
    PL_RETURN_IF_ERROR(sq_i64s(s, "mid", mid, n_mid, false, &m));
    pl_tid parts[3] = {head, m, tail};
    PL_RETURN_IF_ERROR(sq_add1(s, "Concat", parts, 3, &target, &nid));
    PL_RETURN_IF_ERROR(pl_graph_attr_int(s->g, nid, "axis", 0));
    pl_tid ins[2] = {x, target};
    return sq_become(s, "Reshape", ins, 2);
}

/* PERM moving axis FROM of a rank-R tensor to position TO. */
static void sq_move_perm(int64_t r, int64_t from, int64_t to, int64_t *perm)
{
    int64_t k = 0;
    for (int64_t d = 0; d < r; d++)
        if (d != from)
            perm[k++] = d;
    memmove(perm + to + 1, perm + to, (size_t)(r - 1 - to) * sizeof *perm);
    perm[to] = from;
}

static pl_status *sq_concat(sq *s)
{
    const pl_graph_seq *q;
    PL_RETURN_IF_ERROR(sq_seq_input(s, 0, &q));
    const pl_attr *ax = pl_graph_node_attr(sq_node(s), "axis");
    if (ax == NULL || ax->kind != PL_ATTR_INT)
        return sq_error(s, PL_CODE_INVALID_ARGUMENT, "attribute 'axis' is required");
    int64_t axis = ax->i, new_axis = sq_attr_i(s, "new_axis", 0);
    pl_tid seq = sq_in(s, 0);
    if (q->kind == PL_SEQ_LIST) {
        if (q->n == 0)
            return sq_error(s, PL_CODE_INVALID_ARGUMENT, "concatenates an empty sequence");
        pl_tid *e;
        PL_RETURN_IF_ERROR(sq_copy_elems(q, &e));
        pl_status *st = NULL;
        for (size_t i = 0; st == NULL && new_axis && i < q->n; i++)
            st = sq_unsqueeze(s, q->elems[i], axis, &e[i]);
        if (st == NULL)
            st = sq_become(s, "Concat", e, q->n);
        if (st == NULL)
            st = pl_graph_attr_int(s->g, s->id, "axis", axis);
        pl_free(e);
        return st;
    }
    const pl_graph_tensor *t = pl_graph_get_tensor(s->g, seq);
    int64_t r = t->ndim, a = q->axis;
    if (r < 1)
        return sq_error(s, PL_CODE_UNSUPPORTED, "the rank of sequence '%s' is not known",
                        t->name);
    /* The elements have rank r - 1; with new_axis the result has rank r. */
    int64_t b = axis < 0 ? axis + (new_axis ? r : r - 1) : axis;
    if (b < 0 || b >= (new_axis ? r : r - 1))
        return sq_error(s, PL_CODE_INVALID_ARGUMENT,
                        "axis %lld is outside elements of rank %lld%s", (long long)axis,
                        (long long)(r - 1), new_axis ? " with a new axis" : "");
    int64_t perm[PL_GRAPH_MAX_RANK];
    sq_move_perm(r, a, b, perm);
    if (new_axis) {
        if (a == b)
            return sq_become(s, "Identity", &seq, 1);
        PL_RETURN_IF_ERROR(sq_become(s, "Transpose", &seq, 1));
        return pl_graph_attr_ints(s->g, s->id, "perm", perm, (size_t)r);
    }
    pl_tid moved = seq;
    if (a != b) {
        pl_nid nid;
        PL_RETURN_IF_ERROR(sq_add1(s, "Transpose", &seq, 1, &moved, &nid));
        PL_RETURN_IF_ERROR(pl_graph_attr_ints(s->g, nid, "perm", perm, (size_t)r));
    }
    /* merge axes b (the elements) and b + 1 (each element's axis b) */
    int64_t merged = -1;
    return sq_reshape_middle(s, moved, b, b + 2, &merged, 1);
}

/* X reshaped so that its axis AXIS becomes (-1, PART): chunks of PART
 * stacked on AXIS. */
static pl_status *sq_reshape_chunks(sq *s, pl_tid x, int64_t axis, int64_t part)
{
    int64_t mid[2] = {-1, part};
    return sq_reshape_middle(s, x, axis, axis + 1, mid, 2);
}

static pl_status *sq_split(sq *s)
{
    pl_tid x = sq_in(s, 0), split = sq_in(s, 1);
    if (x == PL_TID_NONE)
        return sq_error(s, PL_CODE_INVALID_ARGUMENT, "input 0 is missing");
    const pl_graph_tensor *xt = pl_graph_get_tensor(s->g, x);
    pl_dtype dtype = xt->dtype;
    int64_t r = xt->ndim, axis = sq_attr_i(s, "axis", 0);
    if (r < 1)
        return sq_error(s, PL_CODE_UNSUPPORTED, "the rank of input 0 ('%s') is not known%s",
                        xt->name, r == 0 ? " (a scalar cannot be split)" : "");
    int64_t a = axis < 0 ? axis + r : axis;
    if (a < 0 || a >= r)
        return sq_error(s, PL_CODE_INVALID_ARGUMENT, "axis %lld is outside rank %lld",
                        (long long)axis, (long long)r);
    int64_t dim = xt->dims[a];
    pl_tid out = sq_node(s)->outputs[0];
    bool keep = sq_attr_i(s, "keepdims", 1) != 0;
    if (split == PL_TID_NONE) {
        if (keep) {
            pl_tid u;
            PL_RETURN_IF_ERROR(sq_unsqueeze(s, x, a + 1, &u));
            PL_RETURN_IF_ERROR(sq_become(s, "Identity", &u, 1));
        } else {
            PL_RETURN_IF_ERROR(sq_become(s, "Identity", &x, 1));
        }
        return sq_mark(s, out, PL_SEQ_STACKED, a, dtype, NULL, 0);
    }
    int64_t v[PL_KNOWN_MAX];
    size_t n;
    const pl_graph_tensor *spt = pl_graph_get_tensor(s->g, split);
    if (!sq_known(s, split, v, &n) || spt->ndim > 1)
        return sq_error(s, PL_CODE_UNSUPPORTED,
                        "the split ('%s') is computed at run time or longer than %d; Plinth "
                        "needs the number of parts before the run",
                        spt->name, PL_KNOWN_MAX);
    bool scalar = spt->ndim == 0;
    int64_t part = v[0];
    bool equal = n > 0;
    int64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < 0)
            return sq_error(s, PL_CODE_INVALID_ARGUMENT, "split %lld is negative",
                            (long long)v[i]);
        equal &= v[i] == part;
        sum += v[i];
    }
    if (scalar && part <= 0)
        return sq_error(s, PL_CODE_INVALID_ARGUMENT, "a split of %lld", (long long)part);
    /* keepdims applies to a scalar split too (as ONNX Runtime reads it):
     * parts of one, the axis dropped */
    if (scalar && !keep) {
        if (part != 1)
            return sq_error(s, PL_CODE_INVALID_ARGUMENT,
                            "keepdims 0 drops the split axis, which needs parts of 1, not %lld",
                            (long long)part);
        PL_RETURN_IF_ERROR(sq_become(s, "Identity", &x, 1));
        return sq_mark(s, out, PL_SEQ_STACKED, a, dtype, NULL, 0);
    }
    if (!scalar && dim >= 0 && sum != dim)
        return sq_error(s, PL_CODE_INVALID_ARGUMENT,
                        "the split sums to %lld but axis %lld has %lld", (long long)sum,
                        (long long)a, (long long)dim);
    /* Equal parts: chunks stacked by a Reshape. */
    if (part > 0 && ((scalar && (dim < 0 || dim % part == 0)) || (!scalar && equal && dim >= 0))) {
        PL_RETURN_IF_ERROR(sq_reshape_chunks(s, x, a, part));
        return sq_mark(s, out, PL_SEQ_STACKED, a, dtype, NULL, 0);
    }
    /* Unequal parts: a Split and a list. */
    int64_t sizes[PL_KNOWN_MAX];
    size_t k = 0;
    if (scalar) {
        for (int64_t left = dim; left > 0 && k < PL_KNOWN_MAX; left -= part)
            sizes[k++] = left < part ? left : part;
        if (k == PL_KNOWN_MAX && dim > part * PL_KNOWN_MAX)
            return sq_error(s, PL_CODE_UNSUPPORTED, "more than %d parts of unequal sizes",
                            PL_KNOWN_MAX);
    } else {
        memcpy(sizes, v, n * sizeof *sizes);
        k = n;
    }
    if (k == 0)
        return sq_finish_list(s, NULL, 0, dtype);
    pl_tid parts[PL_KNOWN_MAX];
    pl_nid nid;
    if (s->version >= 13) {
        pl_tid sp, ins[2];
        PL_RETURN_IF_ERROR(sq_i64s(s, "split", sizes, k, false, &sp));
        ins[0] = x;
        ins[1] = sp;
        PL_RETURN_IF_ERROR(sq_add(s, "Split", ins, 2, k, parts, &nid));
    } else {
        PL_RETURN_IF_ERROR(sq_add(s, "Split", &x, 1, k, parts, &nid));
        PL_RETURN_IF_ERROR(pl_graph_attr_ints(s->g, nid, "split", sizes, k));
    }
    PL_RETURN_IF_ERROR(pl_graph_attr_int(s->g, nid, "axis", a));
    return sq_finish_list(s, parts, k, dtype);
}

static pl_status *sq_identity(sq *s, const pl_graph_seq *q)
{
    return pl_graph_set_seq(s->g, sq_node(s)->outputs[0], q);
}

/* ---- Loop ------------------------------------------------------------- */

/* Whether a node of BODY other than SKIP reads T (as an input or a
 * capture), or T is an output of BODY other than position SKIP_OUT. */
static bool sq_body_reads(const pl_graph *body, pl_tid t, pl_nid skip, size_t skip_out)
{
    for (size_t i = 0; i < pl_graph_node_count(body); i++) {
        if ((pl_nid)i == skip)
            continue;
        const pl_graph_node *n = pl_graph_get_node(body, (pl_nid)i);
        for (size_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == t)
                return true;
    }
    for (size_t o = 0; o < pl_graph_output_count(body); o++)
        if (o != skip_out && pl_graph_output(body, o) == t)
            return true;
    return false;
}

static pl_nid sq_producer(const pl_graph *body, pl_tid t)
{
    for (size_t i = 0; i < pl_graph_node_count(body); i++) {
        const pl_graph_node *n = pl_graph_get_node(body, (pl_nid)i);
        for (size_t k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] == t)
                return (pl_nid)i;
    }
    return PL_NID_NONE;
}

/* ---- unrolling -------------------------------------------------------- */

enum { SQ_UNROLL_TRIPS = 256, SQ_UNROLL_NODES = 16384 };

/* The trip count of the Loop when nothing but M ends it, or -1. */
static int64_t sq_static_trips(sq *s)
{
    int64_t v[PL_KNOWN_MAX];
    size_t n;
    pl_tid m = sq_in(s, 0), c = sq_in(s, 1);
    if (m == PL_TID_NONE || !sq_known(s, m, v, &n) || n != 1)
        return -1;
    int64_t trips = v[0] < 0 ? 0 : v[0];
    if (c == PL_TID_NONE)
        return trips; /* the body's condition: checked below */
    int64_t cv[PL_KNOWN_MAX];
    if (!sq_known(s, c, cv, &n) || n != 1)
        return -1;
    return cv[0] == 0 ? 0 : trips;
}

/* The Loop unrolled into this graph, TRIPS copies of its body one after the
 * other (names "<loop>/it<k>/<name>"), when its sequences can be followed
 * no other way (a list of tensors of different shapes read in the body, a
 * sequence the body reads while it grows): each copy's sequence ops are
 * then rewritten as the walk reaches them. */
static pl_status *sq_unroll(sq *s, pl_graph *body, int64_t trips)
{
    const pl_graph_node *n = sq_node(s);
    size_t nf = n->n_formal_inputs, n_car = nf - 2, n_out = n->n_outputs;
    size_t n_scan = n_out - n_car, nt = pl_graph_tensor_count(body);
    size_t nn = pl_graph_node_count(body);
    const pl_nid *order = pl_graph_topo_order(body);
    if (order == NULL)
        return sq_error(s, PL_CODE_INTERNAL, "its body is not validated");
    if (trips == 0 && n_scan > 0)
        return sq_error(s, PL_CODE_UNSUPPORTED,
                        "runs no iteration and has scan outputs; Plinth unrolls it only when "
                        "it runs");
    if ((size_t)trips * (nn ? nn : 1) > SQ_UNROLL_NODES)
        return sq_error(s, PL_CODE_UNSUPPORTED,
                        "unrolling its %lld iterations of %zu nodes would make more than %d",
                        (long long)trips, nn, SQ_UNROLL_NODES);
    for (size_t i = 0; i < nn; i++) {
        const pl_graph_node *b = pl_graph_get_node(body, (pl_nid)i);
        for (size_t k = 0; k < b->n_attrs; k++)
            if (b->attrs[k].kind == PL_ATTR_GRAPH || b->attrs[k].kind == PL_ATTR_GRAPHS)
                return sq_error(s, PL_CODE_UNSUPPORTED,
                                "its body holds control flow ('%s'); Plinth unrolls only "
                                "bodies without",
                                b->name);
    }
    pl_tid *map = pl_malloc((nt ? nt : 1) * sizeof *map);
    pl_tid *cur = pl_malloc((n_car + 1) * sizeof *cur);
    pl_tid *scans = pl_malloc(((size_t)trips * n_scan + 1) * sizeof *scans);
    pl_tid *outs = pl_malloc((n_out + 1) * sizeof *outs);
    pl_status *st = NULL;
    if (!map || !cur || !scans || !outs)
        st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory unrolling a Loop");
    pl_tid cond = PL_TID_NONE;
    if (st == NULL) {
        for (size_t k = 0; k < n_car; k++)
            cur[k] = n->inputs[2 + k];
        memcpy(outs, n->outputs, n_out * sizeof *outs);
        cond = n->inputs[1];
        if (cond == PL_TID_NONE) {
            bool yes = true;
            st = pl_rewrite_add_constant(s->g, s->id, "true", (pl_dtype){PL_TYPE_BOOL, 8, 1}, 0,
                                         NULL, &yes, 1, &cond);
        }
    }
    /* constants and outer references: the same in every copy */
    for (size_t t = 0; st == NULL && t < nt; t++) {
        const pl_graph_tensor *bt = pl_graph_get_tensor(body, (pl_tid)t);
        map[t] = PL_TID_NONE;
        if (bt->data != NULL) {
            int64_t dims[PL_GRAPH_MAX_RANK];
            if (bt->ndim > 0)
                memcpy(dims, bt->dims, (size_t)bt->ndim * sizeof *dims);
            st = pl_rewrite_add_constant(s->g, s->id, bt->name, bt->dtype, bt->ndim,
                                         bt->ndim > 0 ? dims : NULL, bt->data, bt->nbytes,
                                         &map[t]);
        } else if (bt->is_outer) {
            map[t] = pl_graph_find_tensor(s->g, bt->name);
            if (map[t] == PL_TID_NONE)
                st = sq_error(s, PL_CODE_INTERNAL, "its body reads '%s', not in this graph",
                              bt->name);
        }
    }
    for (int64_t it = 0; st == NULL && it < trips; it++) {
        pl_tid iter;
        char prefix[SQ_NAME];
        snprintf(prefix, sizeof prefix, "%.180s/it%lld", s->base, (long long)it);
        st = sq_i64s(s, "iter", &it, 1, true, &iter);
        if (st == NULL) {
            map[pl_graph_input(body, 0)] = iter;
            map[pl_graph_input(body, 1)] = cond;
            for (size_t k = 0; k < n_car; k++)
                map[pl_graph_input(body, 2 + k)] = cur[k];
        }
        for (size_t i = 0; st == NULL && i < nn; i++) {
            const pl_graph_node *b = pl_graph_get_node(body, order[i]);
            enum { MAXIO = 64 };
            if (b->n_formal_inputs > MAXIO || b->n_outputs > MAXIO) {
                st = sq_error(s, PL_CODE_UNSUPPORTED, "body node '%s' has more than %d inputs "
                                                      "or outputs", b->name, MAXIO);
                break;
            }
            char in_names[MAXIO][SQ_NAME], out_names[MAXIO][SQ_NAME], name[SQ_NAME];
            const char *ip[MAXIO], *op[MAXIO];
            for (size_t k = 0; st == NULL && k < b->n_formal_inputs; k++) {
                pl_tid bt = b->inputs[k];
                if (bt != PL_TID_NONE && map[bt] == PL_TID_NONE)
                    st = sq_error(s, PL_CODE_INTERNAL, "body tensor '%s' read before it is "
                                                       "made", pl_graph_get_tensor(body, bt)->name);
                else
                    snprintf(in_names[k], SQ_NAME, "%s",
                             bt == PL_TID_NONE ? "" : sq_name(s, map[bt]));
                ip[k] = in_names[k];
            }
            for (size_t k = 0; st == NULL && k < b->n_outputs; k++) {
                op[k] = "";
                if (b->outputs[k] == PL_TID_NONE)
                    continue;
                char what[SQ_NAME];
                snprintf(what, sizeof what, "%s", pl_graph_get_tensor(body, b->outputs[k])->name);
                pl_rewrite_fresh_name(s->g, prefix, what, out_names[k], SQ_NAME);
                pl_tid t;
                st = pl_graph_tensor_get_or_add(s->g, out_names[k], &t);
                map[b->outputs[k]] = t;
                op[k] = out_names[k];
            }
            pl_nid id;
            if (st == NULL) {
                pl_rewrite_fresh_name(s->g, prefix, b->name, name, sizeof name);
                st = pl_graph_add_node(s->g, name, b->op, b->domain, ip, b->n_formal_inputs, op,
                                       b->n_outputs, &id);
            }
            if (st == NULL)
                st = pl_graph_node_copy_attrs(s->g, id, b);
        }
        for (size_t k = 0; st == NULL && k < n_car; k++)
            cur[k] = map[pl_graph_output(body, 1 + k)];
        for (size_t k = 0; st == NULL && k < n_scan; k++)
            scans[(size_t)it * n_scan + k] = map[pl_graph_output(body, 1 + n_car + k)];
        for (size_t k = 0; st == NULL && k < n_car + n_scan; k++)
            if (map[pl_graph_output(body, 1 + k)] == PL_TID_NONE)
                st = sq_error(s, PL_CODE_INVALID_ARGUMENT, "body output %zu is not made", 1 + k);
    }
    /* the node's outputs, from the last copy (carried) and each copy's
     * rows (scan outputs); the node itself becomes an Identity nobody
     * reads */
    pl_tid dummy = PL_TID_NONE;
    if (st == NULL) {
        char name[SQ_NAME];
        pl_rewrite_fresh_name(s->g, s->base, "unrolled", name, sizeof name);
        st = pl_graph_tensor_get_or_add(s->g, name, &dummy);
    }
    if (st == NULL)
        st = pl_graph_node_set_outputs(s->g, s->id, &dummy, 1);
    for (size_t k = 0; st == NULL && k < n_out; k++) {
        if (outs[k] == PL_TID_NONE)
            continue;
        pl_tid src;
        if (k < n_car) {
            src = cur[k];
        } else {
            pl_tid *rows = pl_malloc((size_t)trips * sizeof *rows);
            if (rows == NULL) {
                st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory unrolling a Loop");
                break;
            }
            for (int64_t it = 0; it < trips; it++)
                rows[it] = scans[(size_t)it * n_scan + (k - n_car)];
            st = sq_stack(s, rows, (size_t)trips, &src);
            pl_free(rows);
        }
        char in[SQ_NAME], out[SQ_NAME], name[SQ_NAME];
        snprintf(in, sizeof in, "%s", sq_name(s, src));
        snprintf(out, sizeof out, "%s", sq_name(s, outs[k]));
        const char *ip[1] = {in}, *op[1] = {out};
        pl_rewrite_fresh_name(s->g, s->base, "output", name, sizeof name);
        if (st == NULL)
            st = pl_graph_add_node(s->g, name, "Identity", "", ip, 1, op, 1, NULL);
    }
    if (st == NULL) {
        pl_tid m = sq_in(s, 0);
        st = sq_become(s, "Identity", &m, 1); /* drops the body */
    }
    pl_free(map);
    pl_free(cur);
    pl_free(scans);
    pl_free(outs);
    if (st == NULL)
        s->walk_added = true;
    return st;
}

/* Whether the node reads (as a capture of its body) a list sequence. */
static bool sq_captures_list(const sq *s)
{
    const pl_graph_node *n = sq_node(s);
    for (size_t k = n->n_formal_inputs; k < n->n_inputs; k++) {
        const pl_graph_seq *q = pl_graph_seq_of(s->g, n->inputs[k]);
        if (q != NULL && q->kind == PL_SEQ_LIST)
            return true;
    }
    return false;
}

/* Why carried sequence K of the Loop cannot become a scan output (into
 * WHY), or "" when it can: it starts empty and the body only appends one
 * tensor to it. *INSERT: the body's SequenceInsert. */
static void sq_append_pattern(sq *s, const pl_graph *body, size_t k, pl_nid *insert, char *why,
                              size_t cap)
{
    const pl_graph_node *n = sq_node(s);
    const pl_graph_seq *q = pl_graph_seq_of(s->g, n->inputs[2 + k]);
    pl_tid b_in = pl_graph_input(body, 2 + k), b_out = pl_graph_output(body, 1 + k);
    const char *bname = pl_graph_get_tensor(body, b_in)->name;
    why[0] = '\0';
    if (q->kind != PL_SEQ_LIST || q->n != 0) {
        snprintf(why, cap, "carried sequence %zu ('%s') does not start empty", k, bname);
        return;
    }
    pl_nid p = sq_producer(body, b_out);
    const pl_graph_node *pn = p == PL_NID_NONE ? NULL : pl_graph_get_node(body, p);
    if (pn == NULL || strcmp(pn->op, "SequenceInsert") != 0 || pn->n_formal_inputs < 2 ||
        pn->inputs[0] != b_in || pn->inputs[1] == PL_TID_NONE ||
        (pn->n_formal_inputs > 2 && pn->inputs[2] != PL_TID_NONE) ||
        sq_body_reads(body, b_in, p, SIZE_MAX) || sq_body_reads(body, b_out, PL_NID_NONE, 1 + k))
        snprintf(why, cap,
                 "the body does more with carried sequence %zu ('%s') than append one tensor "
                 "to it",
                 k, bname);
    *insert = p;
}

/* The Loop's carried values that became scan outputs, rewired: the body
 * loses the inputs DROP and gives BOUTS, the node reads INS and gives
 * OUTS (carried values, then scan outputs, the new ones last). */
static pl_status *sq_loop_rewire(sq *s, pl_graph *body, const pl_tid *drop, size_t n_drop,
                                 const pl_tid *ins, size_t n_ins, const pl_tid *outs,
                                 size_t n_outs, const pl_tid *bouts, size_t n_bouts)
{
    for (size_t k = 0; k < n_drop; k++)
        pl_graph_drop_input(body, drop[k]);
    pl_graph_clear_outputs(body);
    for (size_t k = 0; k < n_bouts; k++)
        PL_RETURN_IF_ERROR(pl_graph_add_output_again(body, bouts[k]));
    PL_RETURN_IF_ERROR(pl_graph_validate(body));
    PL_RETURN_IF_ERROR(pl_graph_node_set_inputs(s->g, s->id, ins, n_ins));
    return pl_graph_node_set_outputs(s->g, s->id, outs, n_outs);
}

/* A Loop carrying sequences, each starting empty and growing by one
 * SequenceInsert at its end per iteration: the appended tensors become
 * scan outputs. Any other Loop over sequences (one carried another way, a
 * list of tensors its body reads) is unrolled when its trip count is known
 * before the run. */
static pl_status *sq_loop(sq *s, bool *handled)
{
    const pl_graph_node *n = sq_node(s);
    size_t n_formal = n->n_formal_inputs;
    bool any = false, lists = sq_captures_list(s);
    for (size_t i = 2; i < n_formal && !any; i++)
        any = n->inputs[i] != PL_TID_NONE && pl_graph_seq_of(s->g, n->inputs[i]) != NULL;
    if (!any && !lists)
        return NULL;
    *handled = true;
    const pl_attr *ba = pl_graph_node_attr(n, "body");
    if (ba == NULL || ba->kind != PL_ATTR_GRAPH || ba->n != 1)
        return sq_error(s, PL_CODE_INVALID_ARGUMENT, "has no body");
    pl_graph *body = ba->graphs[0];
    size_t carried = n_formal - 2;
    size_t n_bin = pl_graph_input_count(body), n_bout = pl_graph_output_count(body);
    if (n_bin != n_formal || n_bout < 1 + carried || n->n_outputs + 1 != n_bout)
        return sq_error(s, PL_CODE_INVALID_ARGUMENT,
                        "its body has %zu inputs and %zu outputs for %zu carried values", n_bin,
                        n_bout, carried);
    char why[300] = "";
    if (lists)
        snprintf(why, sizeof why, "its body reads a list of tensors (of different shapes)");
    for (size_t k = 0; !why[0] && k < carried; k++) {
        pl_tid init = n->inputs[2 + k];
        pl_nid ins_node;
        if (init != PL_TID_NONE && pl_graph_seq_of(s->g, init) != NULL)
            sq_append_pattern(s, body, k, &ins_node, why, sizeof why);
    }
    if (why[0]) {
        int64_t trips = sq_static_trips(s);
        if (trips < 0 || (trips > 0 && !pl_opset_loop_cond_always_true(s->ctx, body)))
            return sq_error(s, PL_CODE_UNSUPPORTED,
                            "%s, and how often it runs is known only when it runs: Plinth "
                            "follows a Loop's sequence when the body only appends to one that "
                            "starts empty, or unrolls the loop when its trip count is known",
                            why);
        if (trips > SQ_UNROLL_TRIPS)
            return sq_error(s, PL_CODE_UNSUPPORTED,
                            "%s; Plinth would unroll it, but it runs %lld times (at most %d)",
                            why, (long long)trips, SQ_UNROLL_TRIPS);
        return sq_unroll(s, body, trips);
    }
    size_t n_scan = n_bout - 1 - carried;
    pl_tid *ins = pl_malloc((n_formal + 1) * sizeof *ins);
    pl_tid *outs = pl_malloc((n->n_outputs + 1) * sizeof *outs);
    pl_tid *bouts = pl_malloc((n_bout + 1) * sizeof *bouts);
    pl_tid *drop = pl_malloc((n_formal + 1) * sizeof *drop);
    pl_tid *seq_outs = pl_malloc((carried + 1) * sizeof *seq_outs);
    pl_tid *seq_bouts = pl_malloc((carried + 1) * sizeof *seq_bouts);
    pl_dtype *seq_dtypes = pl_malloc((carried + 1) * sizeof *seq_dtypes);
    pl_status *st = NULL;
    if (!ins || !outs || !bouts || !drop || !seq_outs || !seq_bouts || !seq_dtypes)
        st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory following a sequence");
    size_t n_ins = 0, n_outs = 0, n_bouts = 0, n_drop = 0, n_seq = 0;
    if (st == NULL) {
        ins[n_ins++] = n->inputs[0];
        ins[n_ins++] = n->inputs[1];
        bouts[n_bouts++] = pl_graph_output(body, 0);
    }
    for (size_t k = 0; st == NULL && k < carried; k++) {
        pl_tid init = n->inputs[2 + k];
        const pl_graph_seq *q = init == PL_TID_NONE ? NULL : pl_graph_seq_of(s->g, init);
        pl_tid b_in = pl_graph_input(body, 2 + k), b_out = pl_graph_output(body, 1 + k);
        if (q == NULL) {
            ins[n_ins++] = init;
            outs[n_outs++] = n->outputs[k];
            bouts[n_bouts++] = b_out;
            continue;
        }
        pl_nid p = PL_NID_NONE;
        sq_append_pattern(s, body, k, &p, why, sizeof why);
        /* the append becomes the scan output's element */
        pl_tid elem = pl_graph_get_node(body, p)->inputs[1];
        st = pl_graph_node_set_op(body, p, "", "Identity");
        if (st == NULL)
            st = pl_graph_node_set_inputs(body, p, &elem, 1);
        drop[n_drop++] = b_in;
        seq_outs[n_seq] = n->outputs[k];
        seq_bouts[n_seq] = b_out;
        seq_dtypes[n_seq] = q->elem_dtype;
        n_seq++;
    }
    if (st == NULL) {
        for (size_t k = 0; k < n_scan; k++) {
            outs[n_outs++] = n->outputs[carried + k];
            bouts[n_bouts++] = pl_graph_output(body, 1 + carried + k);
        }
        for (size_t k = 0; k < n_seq; k++) {
            outs[n_outs++] = seq_outs[k];
            bouts[n_bouts++] = seq_bouts[k];
        }
        st = sq_loop_rewire(s, body, drop, n_drop, ins, n_ins, outs, n_outs, bouts, n_bouts);
    }
    for (size_t k = 0; st == NULL && k < n_seq; k++)
        st = sq_mark(s, seq_outs[k], PL_SEQ_STACKED, 0, seq_dtypes[k], NULL, 0);
    pl_free(ins);
    pl_free(outs);
    pl_free(bouts);
    pl_free(drop);
    pl_free(seq_outs);
    pl_free(seq_bouts);
    pl_free(seq_dtypes);
    return st;
}

/* ---- Loops growing a tensor by Concat --------------------------------- */

/* The one node of BODY that reads T, or PL_NID_NONE (none, several, or T
 * is also a body output). */
static pl_nid sq_only_reader(const pl_graph *body, pl_tid t)
{
    pl_nid found = PL_NID_NONE;
    for (size_t i = 0; i < pl_graph_node_count(body); i++) {
        const pl_graph_node *n = pl_graph_get_node(body, (pl_nid)i);
        for (size_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == t) {
                if (found != PL_NID_NONE && found != (pl_nid)i)
                    return PL_NID_NONE;
                found = (pl_nid)i;
            }
    }
    for (size_t o = 0; o < pl_graph_output_count(body); o++)
        if (pl_graph_output(body, o) == t)
            return PL_NID_NONE;
    return found;
}

static bool sq_passes_through(const pl_graph_node *n)
{
    return n->domain[0] == '\0' && n->n_outputs == 1 &&
           (strcmp(n->op, "Identity") == 0 || strcmp(n->op, "Cast") == 0);
}

/* Whether BODY's Unsqueeze U adds axis 0 alone. */
static bool sq_unsqueeze0(const pl_graph *body, const pl_graph_node *u)
{
    const pl_attr *a = pl_graph_node_attr(u, "axes");
    if (a != NULL)
        return a->kind == PL_ATTR_INTS && a->n == 1 && a->ints[0] == 0;
    if (u->n_formal_inputs < 2 || u->inputs[1] == PL_TID_NONE)
        return false;
    const pl_graph_tensor *ax = pl_graph_get_tensor(body, u->inputs[1]);
    return ax->data != NULL && ax->nbytes == sizeof(int64_t) &&
           PL_DTYPE_EQ(ax->dtype, PL_DTYPE_I64) && *(const int64_t *)ax->data == 0;
}

/* Carried value K of the Loop grown by one row per iteration: it starts
 * with no rows (dim 0 is 0), and the body's only use of it is
 * Concat(it, piece) on axis 0, maybe through Identity or Cast, where the
 * piece is an Unsqueeze on axis 0, maybe followed by Identity or Cast
 * (TorchScript's `res = torch.cat((res, x.unsqueeze(0)))`). Gives the
 * Concat, the Unsqueeze and the nodes between the carried input and the
 * Concat; false when K is not such a value. */
static bool sq_grown_rows(sq *s, const pl_graph *body, size_t k, pl_nid *concat, pl_nid *unsq,
                          pl_nid *chain, size_t *n_chain)
{
    const pl_graph_node *n = sq_node(s);
    pl_tid init = n->inputs[2 + k];
    if (init == PL_TID_NONE)
        return false;
    const pl_graph_tensor *it = pl_graph_get_tensor(s->g, init);
    if (it->ndim < 1 || it->dims[0] != 0)
        return false;
    pl_tid b_in = pl_graph_input(body, 2 + k), b_out = pl_graph_output(body, 1 + k);
    pl_nid p = sq_producer(body, b_out);
    const pl_graph_node *cn = p == PL_NID_NONE ? NULL : pl_graph_get_node(body, p);
    if (cn == NULL || cn->domain[0] != '\0' || strcmp(cn->op, "Concat") != 0 ||
        cn->n_inputs != 2 || sq_body_reads(body, b_out, PL_NID_NONE, 1 + k))
        return false;
    const pl_attr *ax = pl_graph_node_attr(cn, "axis");
    if (ax == NULL || ax->kind != PL_ATTR_INT || (ax->i != 0 && ax->i != -(int64_t)it->ndim))
        return false;
    /* the carried input reaches the Concat's first input, read by nothing else */
    *n_chain = 0;
    pl_tid t = b_in;
    while (t != cn->inputs[0]) {
        pl_nid r = sq_only_reader(body, t);
        if (r == PL_NID_NONE || *n_chain == 8)
            return false;
        const pl_graph_node *rn = pl_graph_get_node(body, r);
        if (!sq_passes_through(rn) || rn->inputs[0] != t)
            return false;
        chain[(*n_chain)++] = r;
        t = rn->outputs[0];
    }
    if (sq_only_reader(body, t) != p)
        return false;
    /* the piece: one row, an Unsqueeze on axis 0 */
    pl_tid x = cn->inputs[1];
    for (int hops = 0; hops < 8; hops++) {
        pl_nid q = sq_producer(body, x);
        const pl_graph_node *qn = q == PL_NID_NONE ? NULL : pl_graph_get_node(body, q);
        if (qn == NULL || qn->domain[0] != '\0' || sq_only_reader(body, x) == PL_NID_NONE)
            return false;
        if (strcmp(qn->op, "Unsqueeze") == 0) {
            if (!sq_unsqueeze0(body, qn))
                return false;
            *concat = p;
            *unsq = q;
            return true;
        }
        if (!sq_passes_through(qn))
            return false;
        x = qn->inputs[0];
    }
    return false;
}

/* A Loop whose carried tensors grow by one row per iteration
 * (sq_grown_rows) gets those rows as scan outputs instead: the same
 * tensor after the loop, [iterations, ...], but a body whose shapes do not
 * change from one iteration to the next (planned once, not copied whole
 * every iteration). */
static pl_status *sq_loop_concat(sq *s, bool *handled)
{
    const pl_graph_node *n = sq_node(s);
    const pl_attr *ba = pl_graph_node_attr(n, "body");
    if (ba == NULL || ba->kind != PL_ATTR_GRAPH || ba->n != 1)
        return NULL;
    pl_graph *body = ba->graphs[0];
    size_t n_formal = n->n_formal_inputs, carried = n_formal >= 2 ? n_formal - 2 : 0;
    size_t n_bout = pl_graph_output_count(body);
    if (pl_graph_input_count(body) != n_formal || n_bout < 1 + carried ||
        n->n_outputs + 1 != n_bout || carried > 64)
        return NULL;
    bool grown[64] = {false};
    size_t n_grown = 0;
    for (size_t k = 0; k < carried; k++) {
        pl_nid c, u, chain[8];
        size_t nc;
        grown[k] = sq_grown_rows(s, body, k, &c, &u, chain, &nc);
        n_grown += grown[k];
    }
    if (n_grown == 0)
        return NULL;
    *handled = true;
    size_t n_scan = n_bout - 1 - carried;
    pl_tid ins[66], outs[130], bouts[131], drop[64], grown_outs[64], grown_bouts[64];
    size_t n_ins = 0, n_outs = 0, n_bouts = 0, n_drop = 0, ng = 0;
    if (n->n_outputs > 129)
        return sq_error(s, PL_CODE_UNSUPPORTED, "more than 129 outputs");
    ins[n_ins++] = n->inputs[0];
    ins[n_ins++] = n->inputs[1];
    bouts[n_bouts++] = pl_graph_output(body, 0);
    pl_status *st = NULL;
    for (size_t k = 0; st == NULL && k < carried; k++) {
        pl_tid b_in = pl_graph_input(body, 2 + k), b_out = pl_graph_output(body, 1 + k);
        if (!grown[k]) {
            ins[n_ins++] = n->inputs[2 + k];
            outs[n_outs++] = n->outputs[k];
            bouts[n_bouts++] = b_out;
            continue;
        }
        pl_nid c, u, chain[8];
        size_t nc;
        sq_grown_rows(s, body, k, &c, &u, chain, &nc);
        const pl_graph_node *un = pl_graph_get_node(body, u);
        pl_tid row = un->inputs[0], piece = pl_graph_get_node(body, c)->inputs[1];
        /* the Unsqueeze passes its input on; the Concat passes the piece
         * on as the scan output's row; the nodes that read the carried
         * value read the piece instead, and nothing reads them */
        st = pl_graph_node_set_op(body, u, "", "Identity");
        if (st == NULL)
            st = pl_graph_node_set_inputs(body, u, &row, 1);
        if (st == NULL)
            pl_graph_node_remove_attr(body, u, "axes");
        /* the row's shape, when the empty start tells it: a Reshape to it
         * states it to inference (the body may compute the row from data)
         * and gives a loop that runs no iteration its shape */
        const pl_graph_tensor *init = pl_graph_get_tensor(s->g, n->inputs[2 + k]);
        bool shaped = init->ndim >= 1;
        for (int32_t d = 1; d < init->ndim; d++)
            shaped &= init->dims[d] >= 0;
        pl_tid rshape = PL_TID_NONE;
        if (st == NULL && shaped) {
            int64_t rank = init->ndim - 1;
            st = pl_rewrite_add_constant(body, c, "row_shape", PL_DTYPE_I64, 1, &rank,
                                         init->dims + 1, (size_t)rank * sizeof(int64_t),
                                         &rshape);
        }
        if (st == NULL)
            st = pl_graph_node_set_op(body, c, "", shaped ? "Reshape" : "Identity");
        if (st == NULL)
            pl_graph_node_remove_attr(body, c, "axis");
        pl_tid rins[2] = {piece, rshape};
        if (st == NULL)
            st = pl_graph_node_set_inputs(body, c, rins, shaped ? 2 : 1);
        for (size_t i = 0; st == NULL && i < nc; i++)
            st = pl_graph_node_set_inputs(body, chain[i], &piece, 1);
        drop[n_drop++] = b_in;
        grown_outs[ng] = n->outputs[k];
        grown_bouts[ng++] = b_out;
    }
    for (size_t k = 0; k < n_scan; k++) {
        outs[n_outs++] = n->outputs[carried + k];
        bouts[n_bouts++] = pl_graph_output(body, 1 + carried + k);
    }
    for (size_t k = 0; k < ng; k++) {
        outs[n_outs++] = grown_outs[k];
        bouts[n_bouts++] = grown_bouts[k];
    }
    if (st == NULL)
        st = sq_loop_rewire(s, body, drop, n_drop, ins, n_ins, outs, n_outs, bouts, n_bouts);
    if (st == NULL)
        pl_graph_note(s->g, "node '%s' (Loop): %zu carried value%s grown by Concat one row per "
                      "iteration became scan output%s",
                      s->base, n_grown, n_grown == 1 ? "" : "s", n_grown == 1 ? "" : "s");
    return st;
}

/* ---- the driver's entry ----------------------------------------------- */

static const struct {
    const char *op;
    pl_status *(*fn)(sq *s);
} sq_rules[] = {
    {"SequenceEmpty", sq_empty},    {"SequenceConstruct", sq_construct},
    {"SequenceInsert", sq_insert},  {"SequenceErase", sq_erase},
    {"SequenceAt", sq_at},          {"SequenceLength", sq_length},
    {"ConcatFromSequence", sq_concat}, {"SplitToSequence", sq_split},
};

pl_status *pl_opset_lower_sequence(pl_infer_ctx *ctx, pl_nid id, int64_t version,
                                   bool *handled, bool *walk_added)
{
    *walk_added = false;
    pl_graph *g = pl_infer_graph_mut(ctx);
    const pl_graph_node *n = pl_graph_get_node(g, id);
    *handled = false;
    if (n == NULL || (n->domain[0] != '\0' && strcmp(n->domain, "ai.onnx") != 0))
        return NULL;
    /* every node of every model passes here: most leave at once */
    bool marked = false;
    for (size_t i = 0; i < n->n_formal_inputs && !marked; i++)
        marked = n->inputs[i] != PL_TID_NONE && pl_graph_seq_of(g, n->inputs[i]) != NULL;
    if (!marked && strstr(n->op, "Sequence") == NULL && strcmp(n->op, "Loop") != 0)
        return NULL;
    sq s = {.ctx = ctx, .g = g, .id = id, .version = version};
    snprintf(s.base, sizeof s.base, "%s", n->name);
    snprintf(s.op, sizeof s.op, "%s", n->op);
    for (size_t i = 0; i < PL_COUNT(sq_rules); i++)
        if (strcmp(s.op, sq_rules[i].op) == 0) {
            *handled = true;
            return sq_rules[i].fn(&s);
        }
    if (strcmp(s.op, "Loop") == 0) {
        pl_status *st = sq_loop(&s, handled);
        if (st == NULL && !*handled)
            st = sq_loop_concat(&s, handled);
        *walk_added = s.walk_added;
        return st;
    }
    if (strcmp(s.op, "SequenceMap") == 0)
        return sq_error(&s, PL_CODE_UNSUPPORTED, "SequenceMap is not supported");
    for (size_t i = 0; i < n->n_formal_inputs; i++) {
        pl_tid t = n->inputs[i];
        const pl_graph_seq *q = t == PL_TID_NONE ? NULL : pl_graph_seq_of(g, t);
        if (q == NULL)
            continue;
        if (strcmp(s.op, "Identity") == 0 && n->n_outputs == 1) {
            *handled = true;
            return sq_identity(&s, q);
        }
        return sq_error(&s, PL_CODE_UNSUPPORTED,
                        "input %zu ('%s') is a sequence; Plinth follows sequences through "
                        "the sequence ops, Identity and a Loop's appending, not into %s",
                        i, pl_graph_get_tensor(g, t)->name, s.op);
    }
    return NULL;
}
