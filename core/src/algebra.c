/* algebra.c — rewrites before constant folding (`[graph] optimize = all`):
 * shape computations whose answer the inferred types already give, and
 * exact algebraic rewrites that leave constant arithmetic for folding.
 *
 * - Shape and Size of a tensor whose dims are known become constants, and
 *   so do a Gather or a Slice that picks only known dims out of a Shape
 *   (PyTorch and Hugging Face exports compute every Reshape's target from
 *   Shape → Gather → Unsqueeze → Concat; with the batch symbolic, the
 *   other dims are still known). Folding then computes the rest of the
 *   chain, and the Reshape sees a constant shape.
 * - BatchNormalization after a Conv (or an ungrouped ConvTranspose) with
 *   constant weights goes into them: W' = W · s and b' = (b − mean) · s + B
 *   with s = scale / √(var + ε) per output channel. So does a Mul or an Add
 *   of a constant with one value per output channel (or one value).
 *   Exporters that do not fold batch norms themselves (older converters,
 *   PyTorch with training preserved) leave one after every convolution;
 *   others write it as Mul and Add, or a conv's bias as an Add. One node
 *   per Conv per pass: the model runs the pass again while it changes
 *   something, so a chain (Conv → Mul → Add) goes in whole.
 * - A Mul or an Add of such a constant after a BatchNormalization that no
 *   Conv took goes into its scale and shift (scale' = scale · c, B' = B · c;
 *   B' = B + c): caffe2 exports a scaled batch norm as BatchNormalization →
 *   Mul → Add, and in a pre-activation net (DenseNet) it comes before the
 *   ReLU and Conv, so each was a pass over the map of its own.
 * - BatchNormalization of a 2-D [M, C] after a MatMul by a constant [K, C]
 *   (directly, or through a Flatten or Reshape that keeps C last: LeViT's
 *   Linear -> BatchNorm1d): W' = W · s per column, and an Add of
 *   B − mean · s in the BatchNormalization's place (oneDNN 2.6 runs a
 *   batch norm of 2-D data on its generic kernel: 61 us for [64, 320]).
 * - Einsum of two inputs that is a batched matrix product (every label a
 *   batch label, in both inputs and the output, or the one M, N or K:
 *   "bhid,bhjd->bhij", MaxViT's "B G H I D, B G H J D -> B G H I J")
 *   becomes Transposes and a MatMul, which every backend runs as a GEMM
 *   (the cpu module's Einsum gathered the operands for an OpenBLAS that
 *   ran its Prescott kernels on this CPU: 13 ms for 9.8M multiply-adds).
 * - MatMul above 4-D (MaxViT's Einsums above make 5-D ones) whose batch
 *   dims are the same on both sides, or all 1 on one side, becomes a 3-D
 *   MatMul between Reshapes that merge the batch dims (views, no copy):
 *   backends take products of 2-D to 4-D (oneDNN's module among them),
 *   and a 5-D one left to the cpu module split tv_maxvit_t into 89 steps,
 *   alternating with onednn subgraphs.
 * - MatMul of a 2-D input by a constant matrix, then Add of a constant that
 *   broadcasts to the product, become one Gemm with C (a dense layer).
 * - Two or more MatMuls of one input by constant matrices of its dtype
 *   (a transformer's query, key and value projections), each maybe with
 *   the Add of a per-column constant after it, become one MatMul by the
 *   matrices side by side, one Add of the constants side by side (zeros
 *   for a product without one) and a Split of the columns into the
 *   results they had: the same sums, one GEMM where there were several
 *   (ViT-S's three [37, 192] x [192, 192]: ViT, DeiT, BEiT, T5 of the HF
 *   zoo 5-9% faster on the default configuration; ONNX Runtime packs
 *   them in its Attention fusion). Products by the same matrix, beyond
 *   1 MiB of weights in all (PL_ALG_SIB_MAX_BYTES), or whose result is a
 *   graph output stay.
 * - MatMul of an input of rank 3 or more (dims known) by a constant matrix
 *   of 1 MiB or more becomes a 2-D product of the merged rows between
 *   Reshapes, the Add of a per-column constant after it its Gemm's C
 *   (oneDNN lays a 2-D product's weights out once, a 3-D one's on every
 *   run), and the elementwise nodes after those (GELU, an activation) on
 *   the merged rows too, before the Reshape back, where a backend fusing
 *   what follows a product sees them.
 * - Layer normalisation written out as exporters without the op write it
 *   (PyTorch before opset 17, Keras's own): ReduceMean over the last axis,
 *   Sub, Pow(·, 2) or Mul(d, d), ReduceMean, Add ε, Sqrt, Div, then a Mul
 *   of a per-element constant and maybe an Add of one, becomes one
 *   LayerNormalization (at any opset: Plinth's schema takes it from 1):
 *   one pass where there were nine, and one node every backend places
 *   whole (the cpu module: 66 -> 16 us for [128, 768]; an accelerator
 *   taking Sub, Mul and Add had split each normalisation into pieces).
 *   The result is the same arithmetic but for dividing by √(var + ε)
 *   where the kernel multiplies by its inverse (an ulp). So is Keras's
 *   form as tf2onnx writes it (pl_alg_layernorm_tf: the means as
 *   GlobalAveragePool of a rank-3 tensor or ReduceMean, Reciprocal of the
 *   Sqrt times gamma, x * s + (-m * s + beta)): Keras ViTs and
 *   transformers on the cpu module 10% faster, and one node for every
 *   backend where there were twelve or thirteen.
 * - A Transpose of a Transpose becomes one Transpose, or none when the two
 *   undo each other.
 * - An Expand whose every reader broadcasts its inputs (Add, Mul, Where,
 *   ...) to a shape the Expand's input gives too goes, its readers reading
 *   that input: x * gate.expand_as(x) (timm's ECA and squeeze-excitation
 *   gates) wrote the [1, C, 1, 1] gate out to [1, C, H, W] for a Mul that
 *   broadcasts it anyway (ecaresnet26t on the default configuration 50 ->
 *   26 ms: a reorder and a full-size binary per block gone).
 * - A Conv's kernel taps that read only padding on an input of known size
 *   (a dilated kernel wider than the map) are cut off the weights.
 * - A ScatterElements on axis 0 whose indices are an Expand of one index
 *   per row to data's other dims (whole rows written: torchvision's
 *   _onnx_merge_levels) becomes a ScatterND of the row indices.
 * - A QuantizeLinear -> DequantizeLinear pair whose input is already on its
 *   grid (the values of a DequantizeLinear with the same scale and zero
 *   point, moved by Reshapes, Transposes, MaxPools and the like) changes
 *   nothing and goes (pl_alg_requant).
 * - A chain of elementwise nodes from one 8-bit tensor to an 8-bit result,
 *   every other input a one-value constant (QOperator SiLU, QLinearMul(x,
 *   QLinearSigmoid(x)); QDQ's DequantizeLinear -> Sigmoid -> QuantizeLinear
 *   -> DequantizeLinear -> Mul -> QuantizeLinear; GELU through Erf; a
 *   requantization), depends on one byte per value: it becomes
 *   ai.plinth TableLookup8(x, T), T the same nodes run on the 256 bytes,
 *   which folding computes on a module (pl_alg_lut). The values are the
 *   chain's own; a run reads one byte and writes one per value instead of
 *   passing through f32 several times (NudeNet's YOLOv8 in QDQ form: 18.1
 *   -> 10.4 ms on the default configuration).
 *
 * The core computes no tensor here: the rewrites write the arithmetic as
 * nodes on constants (Add, Sqrt, Div, Reshape, Mul, Sub), and constant
 * folding (fold.c) runs them on a module. When folding cannot, the graph
 * still computes what it did. Shapes come from type inference. Every
 * rewrite is recorded; `plinth explain` lists them. Nodes whose outputs are
 * graph outputs or named by a control-flow body are left as they are. */
#include <stdio.h>
#include <math.h>
#include <string.h>

#include "alloc.h"
#include "fold.h"
#include "optimize.h"
#include "status.h"
#include "strmap.h"

/* A constant i64 vector (or scalar) to give tensor T in the copy. */
struct pl_alg_const {
    pl_tid t;
    int32_t ndim;  /* 0: scalar, 1: vector of n */
    size_t n;
    int64_t v[PL_GRAPH_MAX_RANK];
};

/* A BatchNormalization, or a Mul or Add of a per-channel constant, taken
 * into the Conv before it (CONV), or a Mul or Add into the
 * BatchNormalization before it (CONV is then that node). */
struct pl_alg_bn {
    pl_nid conv, bn;
    pl_tid c;          /* Mul, Add: the constant */
};

/* A ScatterElements on axis 0 of whole rows: a ScatterND of ROWS ([k, 1,
 * ..., 1], the indices before their Expand) reshaped to [k, 1]. */
struct pl_alg_scatter {
    pl_nid node;
    pl_tid rows;
    int64_t k;
};

/* A Transpose of a Transpose, made one Transpose of the first's input. */
struct pl_alg_perm {
    pl_nid node;
    pl_tid src;
    int32_t n;
    int64_t perm[PL_GRAPH_MAX_RANK];
};

/* A Conv whose outer kernel taps read only padding, cut to the taps that
 * read the input. */
struct pl_alg_crop {
    pl_nid conv;
    int32_t r;                          /* spatial rank */
    int64_t first[PL_GRAPH_MAX_RANK];   /* first live tap per axis */
    int64_t k[PL_GRAPH_MAX_RANK];       /* live taps per axis */
    int64_t pads[2 * PL_GRAPH_MAX_RANK];
};

/* A BatchNormalization after a MatMul by a constant matrix (maybe through
 * a Flatten or Reshape), taken into its weights and an Add. */
struct pl_alg_bnmm {
    pl_nid mm, bn;
};

/* An Einsum made MatMul(Transpose(A), Transpose(B)), then a Transpose
 * (each only where its permutation is not the identity); where a group of
 * M, K or N labels has more than one, Reshapes merge the Ks (in A and B)
 * and the Ns (in B, split again after the product), and B takes a 1 for
 * each M but the last. */
struct pl_alg_einsum {
    pl_nid node;
    int32_t ra, rb, ro;                /* ranks of A, B and the output */
    int32_t nbat, nm, nk, nn;          /* labels of each kind */
    int64_t pa[PL_GRAPH_MAX_RANK], pb[PL_GRAPH_MAX_RANK], po[PL_GRAPH_MAX_RANK];
    int64_t kprod, nprod;              /* the Ks and the Ns merged (when they are) */
    int64_t ndims[PL_GRAPH_MAX_RANK];  /* the Ns, in the product's order */
};

/* A MatMul above 4-D made Reshape -> 3-D MatMul -> Reshape: A and B each
 * reshaped to [batch, rows, cols] (batched) or [rows, cols] (shared). */
struct pl_alg_bmm {
    pl_nid node;
    int64_t batch;
    int64_t a_dims[3], b_dims[3];
    int32_t a_rank, b_rank;  /* of the reshaped operands: 3, or 2 for a shared one */
};

/* A layer normalisation written out (pl_alg_layernorm): the nodes from
 * the first ReduceMean to LAST, made LayerNormalization(X, GAMMA[, BETA])
 * over the last axis with EPS. */
struct pl_alg_ln {
    pl_nid first, last;
    pl_tid x, gamma, beta; /* beta PL_TID_NONE: none */
    float eps;
};

/* A MatMul and the Add after it, made one Gemm. */
struct pl_alg_gemm {
    pl_nid mm, add;
};

/* A MatMul of [.., M, K] by a constant [K, N] (and the Add of a constant
 * [N] after it, ADD, or PL_NID_NONE): one 2-D product of ROWS rows between
 * Reshapes. */
#define PL_ALG_FLAT_REGION_MAX 16
struct pl_alg_flat {
    pl_nid mm, add;
    pl_tid c;
    int64_t rows, k;
    /* elementwise nodes after it that run on the merged rows too, in
     * topological order, and the one tensor they hand on (pl_alg_flat_region) */
    pl_nid region[PL_ALG_FLAT_REGION_MAX];
    size_t n_region;
    pl_tid exit;
};

/* MatMuls of one input X by constant matrices [K, N_i] (N of them, MM in
 * the order X's consumers list them), each maybe with the Add of a
 * per-column constant after it (ADD, all or none): one MatMul by the
 * matrices side by side, one Add of the constants side by side, and a
 * Split of the result along the last axis into the outputs they had. */
#define PL_ALG_SIB_MAX 8
struct pl_alg_sib {
    pl_tid x;
    size_t n;
    pl_nid mm[PL_ALG_SIB_MAX], add[PL_ALG_SIB_MAX];
    pl_tid c[PL_ALG_SIB_MAX];  /* the Adds' constants (aliased) */
};

/* An 8-bit table lookup (pl_alg_lut): the elementwise nodes CONE (N of
 * them, in topological order, SINK last) from the one 8-bit tensor X to
 * SINK's 8-bit output, made TableLookup8(X, T), T the same nodes run on the
 * 256 bytes (folded). */
#define PL_ALG_LUT_MAX 16
#define PL_ALG_LUT_INPUTS 9 /* the most inputs a cone's op has (QLinearMul's 8) */
struct pl_alg_lut {
    pl_nid sink;
    pl_tid x;
    size_t n;
    pl_nid cone[PL_ALG_LUT_MAX];
};

struct pl_alg {
    const pl_graph *g;
    bool *is_const;         /* per tensor: constant once folding has run */
    pl_strmap body_names;   /* tensor names control-flow bodies read */
    bool *drop;
    bool *dead;             /* per node: no graph output depends on it (pl_alg_dead) */
    pl_tid *alias;
    struct pl_alg_const *consts;
    size_t n_consts;
    struct pl_alg_bn *bns;
    size_t n_bns;
    struct pl_alg_gemm *gemms;
    size_t n_gemms;
    struct pl_alg_ln *lns;
    size_t n_lns;
    struct pl_alg_bnmm *bnmms;
    size_t n_bnmms;
    struct pl_alg_einsum *einsums;
    size_t n_einsums;
    struct pl_alg_bmm *bmms;
    size_t n_bmms;
    struct pl_alg_perm *perms;
    size_t n_perms;
    struct pl_alg_crop *crops;
    size_t n_crops;
    struct pl_alg_qconv *qconvs;
    size_t n_qconvs;
    struct pl_alg_qpool *qpools;
    size_t n_qpools;
    struct pl_alg_qbin *qbins;
    size_t n_qbins;
    struct pl_alg_qmm *qmms;
    size_t n_qmms;
    struct pl_alg_scatter *scatters;
    size_t n_scatters;
    struct pl_alg_flat *flats;
    size_t n_flats;
    struct pl_alg_lut *luts;
    size_t n_luts;
    struct pl_alg_sib *sibs;
    size_t n_sibs;
    size_t *pos;            /* per node: its place in the topological order */
    bool *alias_read;       /* per tensor: read in another's name (pl_alg_requant) */
    bool qdq_int8;          /* [graph] qdq = int8 */
    bool qlinear_binary;    /* com.microsoft QLinearAdd and QLinearMul have schemas */
    pl_rewrites *rewrites;
};

static pl_status *pl_alg_oom(void)
{
    return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory optimising the graph");
}

/* Whether tensor T may lose its producer: not a graph output, not named by
 * a body. */
static bool pl_alg_replaceable(const struct pl_alg *a, pl_tid t)
{
    const pl_graph_tensor *ti = pl_graph_get_tensor(a->g, t);
    uint32_t seen;
    return !ti->is_output && !pl_strmap_get(&a->body_names, ti->name, &seen);
}

static bool pl_alg_default_domain(const pl_graph_node *n)
{
    return n->domain[0] == '\0' || strcmp(n->domain, "ai.onnx") == 0;
}

static int64_t pl_alg_attr_int(const pl_graph_node *n, const char *name, int64_t dflt)
{
    const pl_attr *a = pl_graph_node_attr(n, name);
    return a != NULL && a->kind == PL_ATTR_INT ? a->i : dflt;
}

static double pl_alg_attr_f(const pl_graph_node *n, const char *name, double dflt)
{
    const pl_attr *a = pl_graph_node_attr(n, name);
    return a != NULL && a->kind == PL_ATTR_FLOAT ? a->f : dflt;
}

/* ---- shape computations --------------------------------------------------- */

/* The dims Shape node N gives (its start/end applied): *OUT_FIRST indexes
 * the input's dims, *OUT_N of them; false when the input's rank is not
 * known or N is not a Shape. */
static bool pl_alg_shape_range(const pl_graph *g, const pl_graph_node *n, int32_t *out_first,
                               int32_t *out_n)
{
    if (strcmp(n->op, "Shape") != 0 || !pl_alg_default_domain(n) || n->n_inputs < 1 ||
        n->inputs[0] == PL_TID_NONE)
        return false;
    const pl_graph_tensor *x = pl_graph_get_tensor(g, n->inputs[0]);
    if (x->ndim < 0)
        return false;
    int64_t r = x->ndim, s = pl_alg_attr_int(n, "start", 0), e = pl_alg_attr_int(n, "end", r);
    s = s < 0 ? s + r : s;
    e = e < 0 ? e + r : e;
    s = s < 0 ? 0 : s > r ? r : s;
    e = e < 0 ? 0 : e > r ? r : e;
    *out_first = (int32_t)s;
    *out_n = e > s ? (int32_t)(e - s) : 0;
    return true;
}

/* Up to PL_GRAPH_MAX_RANK integer values of constant tensor T (i32 or i64,
 * rank 0 or 1) into OUT; their count, or -1. *OUT_SCALAR when rank 0. */
static int pl_alg_const_ints(const pl_graph *g, pl_tid t, int64_t *out, bool *out_scalar)
{
    const pl_graph_tensor *ti = t == PL_TID_NONE ? NULL : pl_graph_get_tensor(g, t);
    if (ti == NULL || ti->data == NULL || ti->ndim > 1 || (ti->ndim == 1 && ti->dims[0] < 0))
        return -1;
    size_t n = ti->ndim == 0 ? 1 : (size_t)ti->dims[0];
    bool i64 = PL_DTYPE_EQ(ti->dtype, PL_DTYPE_I64), i32 = PL_DTYPE_EQ(ti->dtype, PL_DTYPE_I32);
    if ((!i64 && !i32) || n > PL_GRAPH_MAX_RANK || ti->nbytes != n * (i64 ? 8 : 4))
        return -1;
    for (size_t k = 0; k < n; k++) {
        if (i64) {
            memcpy(&out[k], (const char *)ti->data + 8 * k, 8);
        } else {
            int32_t v;
            memcpy(&v, (const char *)ti->data + 4 * k, 4);
            out[k] = v;
        }
    }
    if (out_scalar != NULL)
        *out_scalar = ti->ndim == 0;
    return (int)n;
}

/* The indices Slice node N (opset OPSET) takes from a vector of LEN
 * values, into IDX; their count, or -1 when its starts, ends, axes or
 * steps are not constants this can read. */
static int pl_alg_slice_indices(const pl_graph *g, const pl_graph_node *n, int64_t opset,
                                int64_t len, int32_t *idx)
{
    int64_t starts[PL_GRAPH_MAX_RANK], ends[PL_GRAPH_MAX_RANK], axes[PL_GRAPH_MAX_RANK];
    int64_t steps[PL_GRAPH_MAX_RANK];
    int ns, ne, na = -1, nst = -1;
    if (opset < 10) {
        const pl_attr *s = pl_graph_node_attr(n, "starts"), *e = pl_graph_node_attr(n, "ends");
        const pl_attr *ax = pl_graph_node_attr(n, "axes");
        if (s == NULL || e == NULL || s->kind != PL_ATTR_INTS || e->kind != PL_ATTR_INTS ||
            s->n != 1 || e->n != 1 || (ax != NULL && (ax->kind != PL_ATTR_INTS || ax->n != 1)))
            return -1;
        starts[0] = s->ints[0];
        ends[0] = e->ints[0];
        ns = ne = 1;
        if (ax != NULL) {
            axes[0] = ax->ints[0];
            na = 1;
        }
    } else {
        if (n->n_formal_inputs < 3)
            return -1;
        ns = pl_alg_const_ints(g, n->inputs[1], starts, NULL);
        ne = pl_alg_const_ints(g, n->inputs[2], ends, NULL);
        if (n->n_formal_inputs > 3 && n->inputs[3] != PL_TID_NONE &&
            (na = pl_alg_const_ints(g, n->inputs[3], axes, NULL)) < 0)
            return -1;
        if (n->n_formal_inputs > 4 && n->inputs[4] != PL_TID_NONE &&
            (nst = pl_alg_const_ints(g, n->inputs[4], steps, NULL)) < 0)
            return -1;
    }
    if (ns != 1 || ne != 1 || (na >= 0 && (na != 1 || (axes[0] != 0 && axes[0] != -1))) ||
        (nst >= 0 && (nst != 1 || steps[0] == 0)))
        return -1;
    int64_t st = nst == 1 ? steps[0] : 1, s = starts[0], e = ends[0];
    s = s < 0 ? s + len : s;
    e = e < 0 ? e + len : e;
    if (st > 0) {
        s = s < 0 ? 0 : s > len ? len : s;
        e = e < 0 ? 0 : e > len ? len : e;
    } else {
        s = s < 0 ? 0 : s > len - 1 ? len - 1 : s;
        e = e < -1 ? -1 : e > len - 1 ? len - 1 : e;
    }
    int count = 0;
    for (int64_t i = s; st > 0 ? i < e : i > e; i += st)
        idx[count++] = (int32_t)i;
    return count;
}

/* Records that node N (dropped) gives its output 0 the constant of the
 * NDIM (0 or 1) dims of X (a tensor of G) listed in DIMS (K of them, each
 * known), and the rewrite's line. */
static pl_status *pl_alg_fold_dims(struct pl_alg *a, pl_nid id, const pl_graph_tensor *x,
                                   const int32_t *dims, size_t k, int32_t ndim, int64_t product)
{
    const pl_graph_node *n = pl_graph_get_node(a->g, id);
    struct pl_alg_const *c = &a->consts[a->n_consts++];
    c->t = n->outputs[0];
    c->ndim = ndim;
    c->n = ndim == 0 ? 1 : k;
    char text[256];
    size_t used = 0;
    if (product >= 0) {
        c->v[0] = product;
        used = (size_t)snprintf(text, sizeof text, "%lld", (long long)product);
    }
    for (size_t i = 0; product < 0 && i < k; i++) {
        c->v[i] = x->dims[dims[i]];
        if (used < sizeof text)
            used += (size_t)snprintf(text + used, sizeof text - used, "%s%lld", i ? "," : "",
                                     (long long)c->v[i]);
    }
    a->drop[id] = true;
    if (!pl_rewrites_add(a->rewrites,
                         "%s '%s' folded: the dims of '%s' it reads are known (%s%s%s); its "
                         "readers read a constant",
                         n->op, n->name, x->name, ndim == 1 ? "[" : "", text,
                         ndim == 1 ? "]" : ""))
        return pl_alg_oom();
    return NULL;
}

/* Shape, Size, and a Gather or Slice of a Shape, whose answer is known. */
static pl_status *pl_alg_shapes(struct pl_alg *a, pl_nid id)
{
    const pl_graph *g = a->g;
    const pl_graph_node *n = pl_graph_get_node(g, id);
    if (!pl_alg_default_domain(n) || n->n_outputs < 1 || n->outputs[0] == PL_TID_NONE ||
        !pl_alg_replaceable(a, n->outputs[0]) || n->n_inputs < 1 || n->inputs[0] == PL_TID_NONE)
        return NULL;
    const pl_graph_tensor *in = pl_graph_get_tensor(g, n->inputs[0]);
    int32_t dims[PL_GRAPH_MAX_RANK] = {0};
    if (strcmp(n->op, "Size") == 0) {
        if (in->ndim < 0)
            return NULL;
        int64_t p = 1;
        for (int32_t d = 0; d < in->ndim; d++) {
            if (in->dims[d] < 0 || (in->dims[d] > 0 && p > INT64_MAX / in->dims[d]))
                return NULL;
            p *= in->dims[d];
        }
        return pl_alg_fold_dims(a, id, in, dims, 0, 0, p);
    }
    int32_t first, count;
    if (pl_alg_shape_range(g, n, &first, &count)) {
        for (int32_t i = 0; i < count; i++) {
            if (in->dims[first + i] < 0)
                return NULL;
            dims[i] = first + i;
        }
        return pl_alg_fold_dims(a, id, in, dims, (size_t)count, 1, -1);
    }
    /* A Gather or Slice of a Shape's output that is not folded itself. */
    bool gather = strcmp(n->op, "Gather") == 0, slice = strcmp(n->op, "Slice") == 0;
    if ((!gather && !slice) || in->producer == PL_NID_NONE || a->drop[in->producer])
        return NULL;
    const pl_graph_node *sh = pl_graph_get_node(g, in->producer);
    if (!pl_alg_shape_range(g, sh, &first, &count))
        return NULL;
    const pl_graph_tensor *x = pl_graph_get_tensor(g, sh->inputs[0]);
    int32_t picked[PL_GRAPH_MAX_RANK];
    int k;
    bool scalar = false;
    if (gather) {
        int64_t idx[PL_GRAPH_MAX_RANK];
        int64_t axis = pl_alg_attr_int(n, "axis", 0);
        if ((axis != 0 && axis != -1) || n->n_inputs < 2 ||
            (k = pl_alg_const_ints(g, n->inputs[1], idx, &scalar)) < 0)
            return NULL;
        for (int i = 0; i < k; i++) {
            int64_t v = idx[i] < 0 ? idx[i] + count : idx[i];
            if (v < 0 || v >= count)
                return NULL;  /* out of range: the run reports it */
            picked[i] = (int32_t)v;
        }
    } else {
        k = pl_alg_slice_indices(g, n, pl_graph_opset(g, ""), count, picked);
        if (k < 0)
            return NULL;
    }
    for (int i = 0; i < k; i++) {
        dims[i] = first + picked[i];
        if (x->dims[dims[i]] < 0)
            return NULL;
    }
    return pl_alg_fold_dims(a, id, x, dims, (size_t)k, scalar ? 0 : 1, -1);
}

/* ---- BatchNormalization into the Conv before it ---------------------------- */

static bool pl_alg_float(pl_dtype t)
{
    return PL_DTYPE_EQ(t, PL_DTYPE_F32) || PL_DTYPE_EQ(t, PL_DTYPE_F64);
}

/* Whether tensor T is a constant (after folding) vector of M values of
 * dtype DT. */
static bool pl_alg_const_vector(const struct pl_alg *a, pl_tid t, int64_t m, pl_dtype dt)
{
    if (t == PL_TID_NONE || !a->is_const[t])
        return false;
    const pl_graph_tensor *ti = pl_graph_get_tensor(a->g, t);
    return ti->ndim == 1 && ti->dims[0] == m && PL_DTYPE_EQ(ti->dtype, dt);
}

/* The float tensor of rank MIN_RANK or more that X stands for, written by
 * a node and read once, as X is: X itself, or what an earlier fold of this
 * pass made X (Conv -> BatchNormalization -> Mul -> Add, caffe2's export:
 * each folds in turn, the weights and bias the last fold gave the Conv,
 * pl_alg_write_bn); PL_TID_NONE when not so. */
static pl_tid pl_alg_fold_source(const struct pl_alg *a, pl_tid x_id, int32_t min_rank)
{
    const pl_graph *g = a->g;
    const pl_graph_tensor *x = pl_graph_get_tensor(g, x_id);
    if (x->n_consumers != 1 || !pl_alg_replaceable(a, x_id))
        return PL_TID_NONE;
    x_id = a->alias[x_id];
    x = pl_graph_get_tensor(g, x_id);
    if (x->producer == PL_NID_NONE || x->n_consumers != 1 || !pl_alg_replaceable(a, x_id) ||
        !pl_alg_float(x->dtype) || x->ndim < min_rank)
        return PL_TID_NONE;
    return x_id;
}

/* The Conv (or ungrouped ConvTranspose) with constant weights whose one
 * reader is node N through its input X: its id, and M (its output
 * channels) into *OUT_M; PL_NID_NONE when there is none that can take N. */
static pl_nid pl_alg_conv_of(const struct pl_alg *a, pl_tid x_id, int64_t *out_m)
{
    const pl_graph *g = a->g;
    x_id = pl_alg_fold_source(a, x_id, 3);
    if (x_id == PL_TID_NONE)
        return PL_NID_NONE;
    const pl_graph_tensor *x = pl_graph_get_tensor(g, x_id);
    pl_nid conv_id = x->producer;
    const pl_graph_node *conv = pl_graph_get_node(g, conv_id);
    bool transposed = strcmp(conv->op, "ConvTranspose") == 0;
    if ((!transposed && strcmp(conv->op, "Conv") != 0) || !pl_alg_default_domain(conv) ||
        a->drop[conv_id] || conv->n_formal_inputs < 2 || conv->outputs[0] != x_id ||
        (transposed && pl_alg_attr_int(conv, "group", 1) != 1))
        return PL_NID_NONE;
    pl_tid w = conv->inputs[1];
    const pl_graph_tensor *wt = w == PL_TID_NONE ? NULL : pl_graph_get_tensor(g, w);
    if (wt == NULL || !a->is_const[w] || wt->ndim != x->ndim || !PL_DTYPE_EQ(wt->dtype, x->dtype))
        return PL_NID_NONE;
    for (int32_t d = 0; d < wt->ndim; d++)
        if (wt->dims[d] <= 0)
            return PL_NID_NONE;
    int64_t m = transposed ? wt->dims[1] : wt->dims[0];
    pl_tid b = conv->n_formal_inputs > 2 ? conv->inputs[2] : PL_TID_NONE;
    if (x->dims[1] != m || (b != PL_TID_NONE && !pl_alg_const_vector(a, b, m, x->dtype)))
        return PL_NID_NONE;
    *out_m = m;
    return conv_id;
}

/* Whether constant C (after folding) holds one value per channel of an
 * output of rank R and M channels, or one value: every dim 1 but the
 * channel axis, right-aligned. */
static bool pl_alg_per_channel(const struct pl_alg *a, pl_tid c, int32_t r, int64_t m,
                               pl_dtype dt)
{
    const pl_graph_tensor *ct = pl_graph_get_tensor(a->g, c);
    if (!a->is_const[c] || ct->ndim < 0 || ct->ndim > r || !PL_DTYPE_EQ(ct->dtype, dt))
        return false;
    for (int32_t d = 0; d < ct->ndim; d++) {
        int32_t axis = d + (r - ct->ndim);
        if (ct->dims[d] != 1 && !(axis == 1 && ct->dims[d] == m))
            return false;
    }
    return true;
}

/* Whether BatchNormalization N computes in inference with its five
 * inputs, and nothing reads its outputs but the first (the running
 * statistics of training mode). */
static bool pl_alg_bn_inference(const pl_graph *g, const pl_graph_node *n)
{
    if (n->n_formal_inputs != 5 || n->inputs[0] == PL_TID_NONE ||
        pl_alg_attr_int(n, "training_mode", 0) != 0 || pl_alg_attr_int(n, "spatial", 1) != 1)
        return false;
    for (size_t o = 1; o < n->n_outputs; o++)
        if (n->outputs[o] != PL_TID_NONE &&
            (pl_graph_get_tensor(g, n->outputs[o])->is_output ||
             pl_graph_get_tensor(g, n->outputs[o])->n_consumers > 0))
            return false;
    return true;
}

/* The BatchNormalization in inference with constant scale and shift
 * whose output is X (after the aliases of this pass's earlier folds), read
 * by one node: its id, and its channels into *OUT_M; PL_NID_NONE when
 * there is none. */
static pl_nid pl_alg_bn_target(const struct pl_alg *a, pl_tid x_id, int64_t *out_m)
{
    const pl_graph *g = a->g;
    x_id = pl_alg_fold_source(a, x_id, 2);
    if (x_id == PL_TID_NONE)
        return PL_NID_NONE;
    const pl_graph_tensor *x = pl_graph_get_tensor(g, x_id);
    if (x->dims[1] <= 0)
        return PL_NID_NONE;
    pl_nid id = x->producer;
    const pl_graph_node *n = pl_graph_get_node(g, id);
    if (strcmp(n->op, "BatchNormalization") != 0 || !pl_alg_default_domain(n) || a->drop[id] ||
        n->outputs[0] != x_id || !pl_alg_bn_inference(g, n) ||
        !pl_alg_const_vector(a, n->inputs[1], x->dims[1], x->dtype) ||
        !pl_alg_const_vector(a, n->inputs[2], x->dims[1], x->dtype))
        return PL_NID_NONE;
    *out_m = x->dims[1];
    return id;
}

/* Node ID, when it is a BatchNormalization in inference, or a Mul or Add
 * of a per-channel constant, reading the output of a Conv that can take
 * it: records the pair. A Mul or Add of a per-channel constant after a
 * BatchNormalization that no Conv took (caffe2's scaled batch norm before
 * a ReLU, in pre-activation nets: DenseNet's every layer) goes into that
 * BatchNormalization's scale and shift instead: one pass over the map
 * where there were two or three. */
static pl_status *pl_alg_bn(struct pl_alg *a, pl_nid id)
{
    const pl_graph *g = a->g;
    const pl_graph_node *n = pl_graph_get_node(g, id);
    int64_t opset = pl_graph_opset(g, "");
    bool bn = strcmp(n->op, "BatchNormalization") == 0;
    bool mul = strcmp(n->op, "Mul") == 0, add = strcmp(n->op, "Add") == 0;
    if ((!bn && !mul && !add) || !pl_alg_default_domain(n) || opset < 7 || n->n_outputs < 1 ||
        n->outputs[0] == PL_TID_NONE || !pl_alg_replaceable(a, n->outputs[0]))
        return NULL;
    int64_t m = 0;
    pl_nid conv_id = PL_NID_NONE;
    pl_tid c = PL_TID_NONE;
    if (bn) {
        if (!pl_alg_bn_inference(g, n))
            return NULL;
        conv_id = pl_alg_conv_of(a, n->inputs[0], &m);
        if (conv_id == PL_NID_NONE)
            return NULL;
        pl_dtype dt = pl_graph_get_tensor(g, n->inputs[0])->dtype;
        for (size_t k = 1; k < 5; k++)
            if (!pl_alg_const_vector(a, n->inputs[k], m, dt))
                return NULL;
    } else {
        if (n->n_inputs != 2 || n->inputs[0] == n->inputs[1])
            return NULL;
        for (int bn_target = 0; bn_target < 2 && conv_id == PL_NID_NONE; bn_target++)
            for (int side = 0; side < 2 && conv_id == PL_NID_NONE; side++) {
                const pl_graph_tensor *x = pl_graph_get_tensor(g, n->inputs[side]);
                const pl_graph_tensor *y = pl_graph_get_tensor(g, n->outputs[0]);
                conv_id = bn_target ? pl_alg_bn_target(a, n->inputs[side], &m)
                                    : pl_alg_conv_of(a, n->inputs[side], &m);
                c = n->inputs[1 - side];
                if (conv_id != PL_NID_NONE &&
                    (!pl_alg_per_channel(a, c, x->ndim, m, x->dtype) || y->ndim != x->ndim))
                    conv_id = PL_NID_NONE;
            }
        if (conv_id == PL_NID_NONE)
            return NULL;
    }
    const pl_graph_node *conv = pl_graph_get_node(g, conv_id);
    a->bns[a->n_bns++] = (struct pl_alg_bn){.conv = conv_id, .bn = id, .c = c};
    a->drop[id] = true;
    a->alias[n->outputs[0]] = conv->outputs[0];
    bool into_bn = strcmp(conv->op, "BatchNormalization") == 0;
    const char *what = bn         ? "its scale and shift become the weights and bias"
                       : into_bn  ? (mul ? "the per-channel factor scales its scale and shift"
                                         : "the per-channel term adds to its shift")
                       : mul      ? "the per-channel factor scales the weights and bias"
                                  : "the per-channel term adds to the bias";
    if (!pl_rewrites_add(a->rewrites,
                         "%s '%s' folded into %s '%s': %s (computed by constant folding); its "
                         "readers read '%s'",
                         n->op, n->name, conv->op, conv->name, what,
                         pl_graph_get_tensor(g, conv->outputs[0])->name))
        return pl_alg_oom();
    return NULL;
}

/* Node ID, when it is a BatchNormalization in inference of a 2-D [M, C]
 * whose input a MatMul by a constant [K, C] writes, directly or through a
 * Flatten or Reshape that keeps C as the last dim, each the only reader:
 * records the pair. */
static pl_status *pl_alg_bn_matmul(struct pl_alg *a, pl_nid id)
{
    const pl_graph *g = a->g;
    const pl_graph_node *n = pl_graph_get_node(g, id);
    if (strcmp(n->op, "BatchNormalization") != 0 || !pl_alg_default_domain(n) ||
        pl_graph_opset(g, "") < 7 || n->n_outputs < 1 || n->outputs[0] == PL_TID_NONE ||
        !pl_alg_replaceable(a, n->outputs[0]) || !pl_alg_bn_inference(g, n))
        return NULL;
    const pl_graph_tensor *x = pl_graph_get_tensor(g, n->inputs[0]);
    if (x->ndim != 2 || x->dims[1] <= 0 || !pl_alg_float(x->dtype) || x->n_consumers != 1 ||
        x->producer == PL_NID_NONE || !pl_alg_replaceable(a, n->inputs[0]))
        return NULL;
    int64_t c = x->dims[1];
    pl_nid mm_id = x->producer;
    const pl_graph_node *mm = pl_graph_get_node(g, mm_id);
    if (strcmp(mm->op, "Flatten") == 0 || strcmp(mm->op, "Reshape") == 0) {
        /* a view that keeps C last: its input [..., C] */
        const pl_graph_tensor *v = pl_graph_get_tensor(g, mm->inputs[0]);
        if (a->drop[mm_id] || !pl_alg_default_domain(mm) || v->ndim < 2 ||
            v->dims[v->ndim - 1] != c || v->n_consumers != 1 || v->producer == PL_NID_NONE ||
            !pl_alg_replaceable(a, mm->inputs[0]))
            return NULL;
        mm_id = v->producer;
        mm = pl_graph_get_node(g, mm_id);
    }
    if (strcmp(mm->op, "MatMul") != 0 || !pl_alg_default_domain(mm) || a->drop[mm_id] ||
        mm->n_inputs != 2)
        return NULL;
    for (size_t k = 0; k < a->n_bnmms; k++)
        if (a->bnmms[k].mm == mm_id)
            return NULL;
    const pl_graph_tensor *w = pl_graph_get_tensor(g, mm->inputs[1]);
    if (!a->is_const[mm->inputs[1]] || w->ndim != 2 || w->dims[1] != c ||
        !PL_DTYPE_EQ(w->dtype, x->dtype))
        return NULL;
    for (size_t k = 1; k < 5; k++)
        if (!pl_alg_const_vector(a, n->inputs[k], c, x->dtype))
            return NULL;
    a->bnmms[a->n_bnmms++] = (struct pl_alg_bnmm){.mm = mm_id, .bn = id};
    a->drop[id] = true;
    if (!pl_rewrites_add(a->rewrites,
                         "BatchNormalization '%s' folded into MatMul '%s': its scale multiplies "
                         "the weights' columns and its shift is an Add (computed by constant "
                         "folding)",
                         n->name, mm->name))
        return pl_alg_oom();
    return NULL;
}

/* ---- Einsum as a batched matrix product --------------------------------------- */

/* The letters of the next term of EQ from *POS (spaces skipped) into
 * OUT (at most MAX); its length, or -1 for anything but letters (an
 * ellipsis, a repeated letter). *POS ends after the term. */
static int pl_alg_es_term(const char *eq, size_t *pos, char *out, int max)
{
    int n = 0;
    for (;; (*pos)++) {
        char c = eq[*pos];
        if (c == ' ')
            continue;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
            break;
        if (n == max || memchr(out, c, (size_t)n) != NULL)
            return -1;
        out[n++] = c;
    }
    return n;
}

static int pl_alg_es_find(const char *t, int n, char c)
{
    for (int i = 0; i < n; i++)
        if (t[i] == c)
            return i;
    return -1;
}

/* Node ID, when it is an Einsum of two float inputs whose equation is a
 * product: every label of A in B or the output, of B in A or the output,
 * of the output in A or B; batch labels (in all three) of equal dims, at
 * least one M (A and output), K (A and B) and N (B and output), the dims
 * of Ks and Ns known where there are several of one kind. TensorFlow's
 * attention output projection "abcd,cde->abe" (g2pid_bert: 190 us on the
 * cpu module's Einsum, a 32x128 by 128x128 product) has two Ms and two
 * Ks. Records the permutations. */
static pl_status *pl_alg_einsum(struct pl_alg *a, pl_nid id)
{
    const pl_graph *g = a->g;
    const pl_graph_node *n = pl_graph_get_node(g, id);
    if (strcmp(n->op, "Einsum") != 0 || !pl_alg_default_domain(n) || n->n_inputs != 2 ||
        n->n_outputs != 1 || n->outputs[0] == PL_TID_NONE || n->inputs[0] == PL_TID_NONE ||
        n->inputs[1] == PL_TID_NONE)
        return NULL; /* (the last new node writes the output's own name) */
    const pl_attr *eqa = pl_graph_node_attr(n, "equation");
    if (eqa == NULL || eqa->kind != PL_ATTR_STRING || eqa->s == NULL)
        return NULL;
    const char *eq = eqa->s;
    char ta[PL_GRAPH_MAX_RANK], tb[PL_GRAPH_MAX_RANK], to[PL_GRAPH_MAX_RANK];
    size_t pos = 0;
    int na = pl_alg_es_term(eq, &pos, ta, PL_GRAPH_MAX_RANK);
    while (eq[pos] == ' ')
        pos++;
    if (na < 1 || eq[pos] != ',')
        return NULL;
    pos++;
    int nb = pl_alg_es_term(eq, &pos, tb, PL_GRAPH_MAX_RANK);
    while (eq[pos] == ' ')
        pos++;
    if (nb < 1 || eq[pos] != '-' || eq[pos + 1] != '>')
        return NULL;
    pos += 2;
    int no = pl_alg_es_term(eq, &pos, to, PL_GRAPH_MAX_RANK);
    while (eq[pos] == ' ')
        pos++;
    if (no < 1 || eq[pos] != '\0')
        return NULL;
    const pl_graph_tensor *x = pl_graph_get_tensor(g, n->inputs[0]);
    const pl_graph_tensor *y = pl_graph_get_tensor(g, n->inputs[1]);
    if (x->ndim != na || y->ndim != nb || !pl_alg_float(x->dtype) ||
        !PL_DTYPE_EQ(x->dtype, y->dtype))
        return NULL;
    struct pl_alg_einsum e = {.node = id, .ra = na, .rb = nb, .ro = no, .kprod = 1, .nprod = 1};
    /* the kinds: batch and M in the output's order, K in A's, N in the
     * output's */
    char bat[PL_GRAPH_MAX_RANK], m[PL_GRAPH_MAX_RANK], k[PL_GRAPH_MAX_RANK],
        nl[PL_GRAPH_MAX_RANK];
    for (int i = 0; i < no; i++) {
        bool in_a = pl_alg_es_find(ta, na, to[i]) >= 0, in_b = pl_alg_es_find(tb, nb, to[i]) >= 0;
        if (in_a && in_b)
            bat[e.nbat++] = to[i];
        else if (in_a)
            m[e.nm++] = to[i];
        else if (in_b)
            nl[e.nn++] = to[i];
        else
            return NULL;
    }
    for (int i = 0; i < na; i++) {
        bool in_b = pl_alg_es_find(tb, nb, ta[i]) >= 0, in_o = pl_alg_es_find(to, no, ta[i]) >= 0;
        if (in_b && !in_o)
            k[e.nk++] = ta[i];
        else if (!in_o)
            return NULL; /* summed in A alone */
    }
    for (int i = 0; i < nb; i++)
        if (pl_alg_es_find(ta, na, tb[i]) < 0 && pl_alg_es_find(to, no, tb[i]) < 0)
            return NULL; /* summed in B alone */
    if (e.nm < 1 || e.nk < 1 || e.nn < 1 || e.nbat + e.nm + e.nk != na ||
        e.nbat + e.nk + e.nn != nb)
        return NULL;
    int j = 0;
    for (int i = 0; i < e.nbat; i++, j++) {
        e.pa[j] = pl_alg_es_find(ta, na, bat[i]);
        e.pb[j] = pl_alg_es_find(tb, nb, bat[i]);
        if (x->dims[e.pa[j]] >= 0 && y->dims[e.pb[j]] >= 0 &&
            x->dims[e.pa[j]] != y->dims[e.pb[j]])
            return NULL; /* broadcast batch dims: left to Einsum */
    }
    for (int i = 0; i < e.nm; i++)
        e.pa[e.nbat + i] = pl_alg_es_find(ta, na, m[i]);
    for (int i = 0; i < e.nk; i++) {
        e.pa[e.nbat + e.nm + i] = pl_alg_es_find(ta, na, k[i]);
        e.pb[e.nbat + i] = pl_alg_es_find(tb, nb, k[i]);
        int64_t da = x->dims[e.pa[e.nbat + e.nm + i]], db = y->dims[e.pb[e.nbat + i]];
        if (da >= 0 && db >= 0 && da != db)
            return NULL;
        int64_t dk = da >= 0 ? da : db; /* B, often a constant, may know it */
        e.kprod = dk < 0 || e.kprod < 0 ? -1 : e.kprod * dk;
    }
    for (int i = 0; i < e.nn; i++) {
        e.pb[e.nbat + e.nk + i] = pl_alg_es_find(tb, nb, nl[i]);
        e.ndims[i] = y->dims[e.pb[e.nbat + e.nk + i]];
        e.nprod = e.ndims[i] < 0 || e.nprod < 0 ? -1 : e.nprod * e.ndims[i];
    }
    if ((e.nk > 1 || e.nn > 1 || (e.nm > 1 && e.nbat > 0)) && (e.kprod < 0 || e.nprod < 0))
        return NULL; /* B's Reshape needs them (pl_alg_write_einsum) */
    /* the product's labels: batch, M, N (each kind in the output's
     * order); the output's from them */
    char prod[PL_GRAPH_MAX_RANK];
    memcpy(prod, bat, (size_t)e.nbat);
    memcpy(prod + e.nbat, m, (size_t)e.nm);
    memcpy(prod + e.nbat + e.nm, nl, (size_t)e.nn);
    for (int i = 0; i < no; i++)
        e.po[i] = pl_alg_es_find(prod, no, to[i]);
    a->einsums[a->n_einsums++] = e;
    a->drop[id] = true;
    if (!pl_rewrites_add(a->rewrites,
                         "Einsum '%s' (%s) made a MatMul with Transposes%s (a product of %d "
                         "batch, %d M, %d K and %d N label%s)",
                         n->name, eq, e.nk > 1 || e.nn > 1 || e.nm > 1 ? " and Reshapes" : "",
                         e.nbat, e.nm, e.nk, e.nn, e.nn == 1 ? "" : "s"))
        return pl_alg_oom();
    return NULL;
}

/* Whether PERM (R values) is the identity. */
static bool pl_alg_perm_identity(const int64_t *perm, int32_t r)
{
    for (int32_t i = 0; i < r; i++)
        if (perm[i] != i)
            return false;
    return true;
}

/* Adds Transpose(IN, PERM) to COPY writing OUT (a new name when NULL);
 * the output's name in *OUT_NAME (caller frees when new). */
static pl_status *pl_alg_transpose_node(pl_graph *copy, const char *base, const char *in,
                                        const int64_t *perm, int32_t r, const char *out,
                                        char **out_name)
{
    char *name = pl_alg_name(copy, base, "Transpose", true);
    char *o = out == NULL ? pl_alg_name(copy, base, "Transpose_out", false) : NULL;
    const char *dst = out != NULL ? out : o;
    pl_nid id;
    pl_status *st = name && dst ? pl_graph_add_node(copy, name, "Transpose", "", &in, 1, &dst, 1,
                                                    &id)
                                : pl_alg_oom();
    if (st == NULL)
        st = pl_graph_attr_ints(copy, id, "perm", perm, (size_t)r);
    pl_free(name);
    if (st != NULL) {
        pl_free(o);
        return st;
    }
    *out_name = o;
    return NULL;
}

static pl_status *pl_alg_reshape_node(pl_graph *copy, const char *base, const char *in,
                                      const int64_t *dims, int32_t r, const char *out,
                                      char **out_name);

/* Writes Einsum E into COPY as Transposes, Reshapes (the Ks and Ns merged;
 * 0s keep the dims before them) and a MatMul writing its output. */
static pl_status *pl_alg_write_einsum(const pl_graph *g, const pl_tid *alias, pl_graph *copy,
                                      const struct pl_alg_einsum *e)
{
    const pl_graph_node *n = pl_graph_get_node(g, e->node);
    const char *base = n->name, *out = pl_graph_get_tensor(g, n->outputs[0])->name;
    const char *ins[2] = {pl_graph_get_tensor(g, alias[n->inputs[0]])->name,
                          pl_graph_get_tensor(g, alias[n->inputs[1]])->name};
    char *t[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    pl_status *st = NULL;
    const int64_t *perms[2] = {e->pa, e->pb};
    const int32_t ranks[2] = {e->ra, e->rb};
    for (int i = 0; i < 2 && st == NULL; i++)
        if (!pl_alg_perm_identity(perms[i], ranks[i])) {
            st = pl_alg_transpose_node(copy, base, ins[i], perms[i], ranks[i], NULL, &t[i]);
            ins[i] = t[i];
        }
    int64_t dims[PL_GRAPH_MAX_RANK + 2];
    int32_t r = 0;
    if (st == NULL && e->nk > 1) { /* A: [batch, M..., K] */
        for (; r < e->nbat + e->nm; r++)
            dims[r] = 0;
        dims[r++] = e->kprod;
        st = pl_alg_reshape_node(copy, base, ins[0], dims, r, NULL, &t[2]);
        ins[0] = t[2];
    }
    /* B: [batch, 1..., K, N], or [K, N] without batch labels (a 2-D B
     * meets every A) */
    if (st == NULL && (e->nk > 1 || e->nn > 1 || (e->nm > 1 && e->nbat > 0))) {
        for (r = 0; r < e->nbat; r++)
            dims[r] = 0;
        for (int i = 1; e->nbat > 0 && i < e->nm; i++)
            dims[r++] = 1;
        dims[r++] = e->kprod;
        dims[r++] = e->nprod;
        st = pl_alg_reshape_node(copy, base, ins[1], dims, r, NULL, &t[3]);
        ins[1] = t[3];
    }
    bool split = e->nn > 1, last = pl_alg_perm_identity(e->po, e->ro);
    char *mm_out = st == NULL && (split || !last) ? pl_alg_name(copy, base, "MatMul_out", false)
                                                  : NULL;
    char *mm_name = st == NULL ? pl_alg_name(copy, base, "MatMul", true) : NULL;
    const char *dst = split || !last ? mm_out : out;
    if (st == NULL)
        st = mm_name && dst ? pl_graph_add_node(copy, mm_name, "MatMul", "", ins, 2, &dst, 1,
                                                NULL)
                            : pl_alg_oom();
    const char *prod = mm_out;
    if (st == NULL && split) { /* [batch, M..., N...] */
        for (r = 0; r < e->nbat + e->nm; r++)
            dims[r] = 0;
        for (int i = 0; i < e->nn; i++)
            dims[r++] = e->ndims[i];
        st = pl_alg_reshape_node(copy, base, mm_out, dims, r, last ? out : NULL, &t[4]);
        prod = t[4];
    }
    if (st == NULL && !last)
        st = pl_alg_transpose_node(copy, base, prod, e->po, e->ro, out, &t[5]);
    pl_free(mm_out);
    pl_free(mm_name);
    for (int i = 0; i < 6; i++)
        pl_free(t[i]);
    return st;
}

/* ---- MatMul above 4-D as a 3-D one ---------------------------------------------- */

/* Node ID, when it is a MatMul whose output is above 4-D, every dim known,
 * and each input either batched like the output (the same leading dims)
 * or shared (2-D, or leading dims all 1): records the reshapes. */
static pl_status *pl_alg_batch_matmul(struct pl_alg *a, pl_nid id)
{
    const pl_graph *g = a->g;
    const pl_graph_node *n = pl_graph_get_node(g, id);
    if (strcmp(n->op, "MatMul") != 0 || !pl_alg_default_domain(n) || n->n_inputs != 2 ||
        n->n_outputs != 1 || n->outputs[0] == PL_TID_NONE || n->inputs[0] == PL_TID_NONE ||
        n->inputs[1] == PL_TID_NONE)
        return NULL; /* (the last Reshape writes the output's own name) */
    const pl_graph_tensor *x[2] = {pl_graph_get_tensor(g, n->inputs[0]),
                                   pl_graph_get_tensor(g, n->inputs[1])};
    const pl_graph_tensor *y = pl_graph_get_tensor(g, n->outputs[0]);
    int32_t r = y->ndim;
    if (r <= 4 || x[0]->ndim < 2 || x[1]->ndim < 2 || x[0]->ndim > r ||
        x[1]->ndim > r)
        return NULL;
    for (int32_t i = 0; i < r; i++)
        if (y->dims[i] < 0)
            return NULL;
    struct pl_alg_bmm e = {.node = id, .batch = 1};
    for (int32_t i = 0; i < r - 2; i++)
        e.batch *= y->dims[i];
    bool batched[2];
    for (int k = 0; k < 2; k++) {
        const pl_graph_tensor *t = x[k];
        int32_t lead = t->ndim - 2;
        for (int32_t i = 0; i < t->ndim; i++)
            if (t->dims[i] < 0)
                return NULL;
        bool ones = true, same = lead == r - 2;
        for (int32_t i = 0; i < lead; i++) {
            ones = ones && t->dims[i] == 1;
            same = same && t->dims[i] == y->dims[i];
        }
        if (!ones && !same)
            return NULL; /* a broadcast within the batch dims: left as it is */
        batched[k] = !ones || (same && e.batch == 1);
        int64_t *d = k == 0 ? e.a_dims : e.b_dims;
        int32_t *rank = k == 0 ? &e.a_rank : &e.b_rank;
        if (batched[k]) {
            d[0] = e.batch, d[1] = t->dims[t->ndim - 2], d[2] = t->dims[t->ndim - 1];
            *rank = 3;
        } else {
            d[0] = t->dims[t->ndim - 2], d[1] = t->dims[t->ndim - 1];
            *rank = 2;
        }
    }
    if (!batched[0] && !batched[1])
        e.a_dims[2] = e.a_dims[1], e.a_dims[1] = e.a_dims[0], e.a_dims[0] = 1, e.a_rank = 3;
    a->bmms[a->n_bmms++] = e;
    a->drop[id] = true;
    if (!pl_rewrites_add(a->rewrites,
                         "MatMul '%s' (%d-D) made a 3-D MatMul of %lld products between "
                         "Reshapes that merge its batch dims",
                         n->name, (int)r, (long long)e.batch))
        return pl_alg_oom();
    return NULL;
}

/* Adds Reshape(IN, DIMS) to COPY writing OUT (a new name when NULL, into
 * *OUT_NAME for the caller to free). */
static pl_status *pl_alg_reshape_node(pl_graph *copy, const char *base, const char *in,
                                      const int64_t *dims, int32_t r, const char *out,
                                      char **out_name)
{
    *out_name = NULL;
    char *shape = NULL;
    int64_t len = r;
    PL_RETURN_IF_ERROR(pl_alg_constant(copy, base, "Reshape_shape", PL_DTYPE_I64, 1, &len, dims,
                                       (size_t)r * sizeof *dims, &shape));
    char *name = pl_alg_name(copy, base, "Reshape", true);
    char *o = out == NULL ? pl_alg_name(copy, base, "Reshape_out", false) : NULL;
    const char *dst = out != NULL ? out : o;
    const char *ins[2] = {in, shape};
    pl_status *st = name && dst ? pl_graph_add_node(copy, name, "Reshape", "", ins, 2, &dst, 1,
                                                    NULL)
                                : pl_alg_oom();
    pl_free(name);
    pl_free(shape);
    if (st != NULL) {
        pl_free(o);
        return st;
    }
    *out_name = o;
    return NULL;
}

/* Writes E into COPY: Reshapes of the inputs, the MatMul, and a Reshape
 * writing the output. */
static pl_status *pl_alg_write_bmm(const pl_graph *g, const pl_tid *alias, pl_graph *copy,
                                   const struct pl_alg_bmm *e)
{
    const pl_graph_node *n = pl_graph_get_node(g, e->node);
    const pl_graph_tensor *y = pl_graph_get_tensor(g, n->outputs[0]);
    const char *base = n->name;
    const char *ins[2] = {pl_graph_get_tensor(g, alias[n->inputs[0]])->name,
                          pl_graph_get_tensor(g, alias[n->inputs[1]])->name};
    char *t[2] = {NULL, NULL};
    pl_status *st = NULL;
    for (int k = 0; k < 2 && st == NULL; k++) {
        st = pl_alg_reshape_node(copy, base, ins[k], k == 0 ? e->a_dims : e->b_dims,
                                 k == 0 ? e->a_rank : e->b_rank, NULL, &t[k]);
        ins[k] = t[k];
    }
    char *mm_out = st == NULL ? pl_alg_name(copy, base, "MatMul_out", false) : NULL;
    char *mm_name = st == NULL ? pl_alg_name(copy, base, "MatMul", true) : NULL;
    const char *dst = mm_out;
    if (st == NULL)
        st = mm_name && dst ? pl_graph_add_node(copy, mm_name, "MatMul", "", ins, 2, &dst, 1,
                                                NULL)
                            : pl_alg_oom();
    char *last = NULL;
    if (st == NULL)
        st = pl_alg_reshape_node(copy, base, mm_out, y->dims, y->ndim, y->name, &last);
    pl_free(last);
    pl_free(mm_out);
    pl_free(mm_name);
    for (int k = 0; k < 2; k++)
        pl_free(t[k]);
    return st;
}

/* ---- products by a constant matrix, rows merged ------------------------------ */

/* Node ID, when it is a MatMul of A [.., M, K] (rank 3 or more, every dim
 * known) by a constant [K, N]: the rows of A's leading dims merged into
 * one 2-D product between Reshapes (views), with the Add of a constant
 * [N] (or [1, .., 1, N]) after it taken in as a Gemm's C. A backend then
 * sees the product it runs best: oneDNN 2.6 keeps the weights of a 3-D
 * product plain and copies them into its blocks on every run, but lays a
 * 2-D product's out once (a transformer's linear layers at batch 1, each
 * [1, S, K] by [K, N]; dz_vit_b_16, 17 tokens: 37.5 -> 21 ms a run). */
/* Ops that map each element alone (given one-value operands): what may
 * run on the merged rows as well as on the rows of any shape. */
static bool pl_alg_flat_elementwise(const char *op)
{
    static const char *const ops[] = {
        "Relu",  "Sigmoid",  "Tanh",     "Erf",         "Exp",         "Log",      "Sqrt",
        "Abs",   "Neg",      "Reciprocal", "Softplus",  "Softsign",    "Elu",      "Selu",
        "Celu",  "LeakyRelu", "HardSigmoid", "HardSwish", "ThresholdedRelu", "Mish", "Gelu",
        "Clip",  "Mul",      "Div",      "Add",         "Sub",         "Pow",      "Max",
        "Min"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(op, ops[i]) == 0)
            return true;
    return false;
}

/* The elementwise nodes after a product whose rows merge (F, its result
 * T0): GELU written out (x read twice), an activation, a scale. They run
 * on the 2-D result before the Reshape back, so that a backend that fuses
 * what follows a product sees them after it (oneDNN's post-ops: across the
 * Reshape, DistilBERT's GELU was an eltwise primitive of its own). Taken
 * when every input of each is T0, a tensor the region made, or a constant
 * of one value and rank 2 or less (broadcasting it keeps the rank), each
 * gives T0's shape, nothing outside reads T0 or what the region makes but
 * one tensor, the exit, which is not T0. Else none. */
static void pl_alg_flat_region(struct pl_alg *a, struct pl_alg_flat *f, pl_tid t0)
{
    const pl_graph *g = a->g;
    const pl_graph_tensor *yt = pl_graph_get_tensor(g, t0);
    pl_tid made[PL_ALG_FLAT_REGION_MAX + 1] = {t0};
    size_t n_made = 1;
    f->n_region = 0;
    f->exit = PL_TID_NONE;
    for (bool grew = true; grew && f->n_region < PL_ALG_FLAT_REGION_MAX;) {
        grew = false;
        for (size_t i = 0; i < n_made && !grew; i++) {
            const pl_graph_tensor *ti = pl_graph_get_tensor(g, made[i]);
            for (size_t c = 0; c < ti->n_consumers && !grew; c++) {
                pl_nid id = ti->consumers[c];
                const pl_graph_node *n = pl_graph_get_node(g, id);
                bool in = a->drop[id] || !pl_alg_default_domain(n) || n->n_outputs != 1 ||
                          n->outputs[0] == PL_TID_NONE || !pl_alg_flat_elementwise(n->op);
                for (size_t k = 0; k < f->n_region && !in; k++)
                    in = f->region[k] == id;
                if (in)
                    continue; /* taken, or not one to take */
                const pl_graph_tensor *ot = pl_graph_get_tensor(g, n->outputs[0]);
                bool ok = ot->ndim == yt->ndim && PL_DTYPE_EQ(ot->dtype, yt->dtype) &&
                          memcmp(ot->dims, yt->dims, (size_t)yt->ndim * sizeof *yt->dims) == 0;
                for (size_t j = 0; ok && j < n->n_inputs; j++) {
                    pl_tid t = n->inputs[j];
                    if (t == PL_TID_NONE)
                        continue;
                    bool ours = false;
                    for (size_t k = 0; k < n_made && !ours; k++)
                        ours = made[k] == t;
                    const pl_graph_tensor *it = pl_graph_get_tensor(g, a->alias[t]);
                    size_t bytes = 0;
                    ok = ours || (a->is_const[a->alias[t]] && it->ndim >= 0 && it->ndim <= 2 &&
                                  pl_graph_tensor_bytes(it, &bytes) &&
                                  bytes == pl_dtype_size(it->dtype));
                }
                if (!ok)
                    continue;
                f->region[f->n_region++] = id;
                made[n_made++] = n->outputs[0];
                grew = true;
            }
        }
    }
    /* one tensor leaves (read outside, or a graph output), not the product's */
    pl_tid exit = PL_TID_NONE;
    size_t exits = 0;
    for (size_t i = 0; i < n_made; i++) {
        const pl_graph_tensor *ti = pl_graph_get_tensor(g, made[i]);
        bool leaves = !pl_alg_replaceable(a, made[i]);
        for (size_t c = 0; c < ti->n_consumers && !leaves; c++) {
            bool ours = false;
            for (size_t k = 0; k < f->n_region && !ours; k++)
                ours = f->region[k] == ti->consumers[c];
            leaves = !ours;
        }
        if (leaves) {
            exits++;
            exit = made[i];
        }
    }
    if (f->n_region == 0 || exits != 1 || exit == t0) {
        f->n_region = 0;
        return;
    }
    f->exit = exit;
    for (size_t k = 0; k < f->n_region; k++)
        a->drop[f->region[k]] = true;
}

/* The smallest weights whose product's rows merge (below: see the pass). */
#define PL_ALG_FLAT_MIN_BYTES ((size_t)1 << 20)

/* The constant of Add node AI when it adds one to the product Y ([.., N])
 * per column ([N] or [1, .., 1, N], of Y's dtype) without changing Y's
 * shape, and may go; else PL_TID_NONE. */
static pl_tid pl_alg_column_add(const struct pl_alg *a, pl_tid y, pl_nid ai)
{
    const pl_graph *g = a->g;
    const pl_graph_node *add = pl_graph_get_node(g, ai);
    if (a->drop[ai] || strcmp(add->op, "Add") != 0 || !pl_alg_default_domain(add) ||
        add->n_inputs != 2 || add->inputs[0] == add->inputs[1] || add->n_outputs < 1 ||
        add->outputs[0] == PL_TID_NONE)
        return PL_TID_NONE;
    const pl_graph_tensor *yt = pl_graph_get_tensor(g, y);
    pl_tid c = a->alias[add->inputs[0] == y ? add->inputs[1] : add->inputs[0]];
    const pl_graph_tensor *ct = pl_graph_get_tensor(g, c);
    const pl_graph_tensor *st = pl_graph_get_tensor(g, add->outputs[0]);
    bool col = a->is_const[c] && ct->ndim >= 1 && ct->ndim <= yt->ndim &&
               PL_DTYPE_EQ(ct->dtype, yt->dtype) && st->ndim == yt->ndim &&
               ct->dims[ct->ndim - 1] == yt->dims[yt->ndim - 1];
    for (int32_t d = 0; col && d + 1 < ct->ndim; d++)
        col = ct->dims[d] == 1;
    for (int32_t d = 0; col && d < st->ndim; d++)
        col = st->dims[d] == yt->dims[d];
    return col ? c : PL_TID_NONE;
}

static pl_status *pl_alg_flat_matmul(struct pl_alg *a, pl_nid id)
{
    const pl_graph *g = a->g;
    const pl_graph_node *mm = pl_graph_get_node(g, id);
    if (strcmp(mm->op, "MatMul") != 0 || !pl_alg_default_domain(mm) || mm->n_inputs != 2 ||
        mm->outputs[0] == PL_TID_NONE)
        return NULL;
    const pl_graph_tensor *at = pl_graph_get_tensor(g, a->alias[mm->inputs[0]]);
    const pl_graph_tensor *bt = pl_graph_get_tensor(g, a->alias[mm->inputs[1]]);
    const pl_graph_tensor *yt = pl_graph_get_tensor(g, mm->outputs[0]);
    /* (weights that are a constant now, not one folding would make: a
     * DequantizeLinear of int8 weights stays for the backends' int8
     * products, which the Reshapes would part from their QuantizeLinear) */
    if (at->ndim < 3 || bt->ndim != 2 || bt->data == NULL ||
        yt->ndim != at->ndim || !pl_alg_float(yt->dtype) || !PL_DTYPE_EQ(at->dtype, yt->dtype) ||
        !pl_alg_replaceable(a, mm->outputs[0]))
        return NULL;
    for (size_t k = 0; k < a->n_bnmms; k++)
        if (a->bnmms[k].mm == id)
            return NULL; /* a batch norm goes into its weights this round */
    /* Only weights of 1 MiB and more: below, copying B costs little beside
     * the activation a backend fuses into a 3-D product and not across the
     * Reshape (LeViT's 128-384 channel layers, HardSwish after each: 0.31
     * -> 0.47 ms merged). */
    size_t wbytes;
    if (!pl_graph_tensor_bytes(bt, &wbytes) || wbytes < PL_ALG_FLAT_MIN_BYTES)
        return NULL;
    int64_t rows = 1;
    for (int32_t d = 0; d < at->ndim; d++)
        if (at->dims[d] < 0 || yt->dims[d] < 0)
            return NULL;
    for (int32_t d = 0; d + 1 < at->ndim; d++)
        rows *= at->dims[d];
    struct pl_alg_flat f = {.mm = id, .add = PL_NID_NONE, .c = PL_TID_NONE, .rows = rows,
                            .k = at->dims[at->ndim - 1]};
    /* the Add of a per-column constant after it, the product's one reader */
    if (yt->n_consumers == 1) {
        pl_nid ai = yt->consumers[0];
        pl_tid c = pl_alg_column_add(a, mm->outputs[0], ai);
        if (c != PL_TID_NONE) {
            f.add = ai;
            f.c = c;
            a->drop[ai] = true;
        }
    }
    a->drop[id] = true;
    pl_alg_flat_region(a, &f, f.add != PL_NID_NONE ? pl_graph_get_node(g, f.add)->outputs[0]
                                                  : mm->outputs[0]);
    a->flats[a->n_flats++] = f;
    char more[64] = "";
    if (f.n_region > 0)
        snprintf(more, sizeof more, " (and the %zu elementwise nodes after it)", f.n_region);
    if (!pl_rewrites_add(a->rewrites,
                         "MatMul '%s' of %d-D rows by a constant matrix%s made a 2-D %s of "
                         "%lld rows between Reshapes%s",
                         mm->name, (int)at->ndim, f.add != PL_NID_NONE ? " and the Add after it" : "",
                         f.add != PL_NID_NONE ? "Gemm" : "MatMul", (long long)rows, more))
        return pl_alg_oom();
    return NULL;
}

/* Writes F's elementwise region into COPY on the 2-D product POUT (the
 * rows of T0 merged): each node as it was, reading what the region made
 * (under new names) and its constants, then the Reshape of the exit back to
 * its dims, under its name. */
static pl_status *pl_alg_write_flat_region(const pl_graph *g, const pl_tid *alias,
                                           pl_graph *copy, const struct pl_alg_flat *f,
                                           const char *pout, pl_tid t0)
{
    pl_tid src[PL_ALG_FLAT_REGION_MAX + 1] = {t0};
    char *flat[PL_ALG_FLAT_REGION_MAX + 1] = {pl_strdupf("%s", pout)};
    size_t n_src = 1;
    pl_status *st = flat[0] != NULL ? NULL : pl_alg_oom();
    for (size_t k = 0; st == NULL && k < f->n_region; k++) {
        const pl_graph_node *n = pl_graph_get_node(g, f->region[k]);
        const char *ins[8];
        if (n->n_inputs > sizeof ins / sizeof ins[0]) {
            st = pl_status_create(PL_CODE_INTERNAL, "'%s': %zu inputs", n->name, n->n_inputs);
            break;
        }
        for (size_t j = 0; j < n->n_inputs; j++) {
            pl_tid t = n->inputs[j];
            ins[j] = t == PL_TID_NONE ? "" : pl_graph_get_tensor(g, alias[t])->name;
            for (size_t i = 0; t != PL_TID_NONE && i < n_src; i++)
                if (src[i] == t)
                    ins[j] = flat[i];
        }
        char *out = pl_alg_name(copy, n->name, "flat", false);
        pl_nid nid;
        st = out != NULL ? pl_graph_add_node(copy, n->name, n->op, n->domain, ins, n->n_inputs,
                                             (const char *const *)&out, 1, &nid)
                         : pl_alg_oom();
        if (st == NULL)
            st = pl_graph_node_copy_attrs(copy, nid, n);
        src[n_src] = n->outputs[0];
        flat[n_src++] = out;
    }
    const pl_graph_tensor *et = pl_graph_get_tensor(g, f->exit);
    for (size_t i = 0; st == NULL && i < n_src; i++)
        if (src[i] == f->exit) {
            char *last = NULL;
            st = pl_alg_reshape_node(copy, et->name, flat[i], et->dims, et->ndim, et->name,
                                     &last);
            pl_free(last);
        }
    for (size_t i = 0; i < n_src; i++)
        pl_free(flat[i]);
    return st;
}

/* Writes F into COPY: Reshape(A) to [rows, K], the product (a Gemm with C
 * reshaped to [N] when an Add went in), Reshape to the result's dims,
 * writing the Add's output (or the MatMul's). */
static pl_status *pl_alg_write_flat(const pl_graph *g, const pl_tid *alias, pl_graph *copy,
                                    const struct pl_alg_flat *f)
{
    const pl_graph_node *mm = pl_graph_get_node(g, f->mm);
    const pl_graph_tensor *y = pl_graph_get_tensor(
        g, f->add != PL_NID_NONE ? pl_graph_get_node(g, f->add)->outputs[0] : mm->outputs[0]);
    const char *base = mm->name;
    int64_t a2[2] = {f->rows, f->k};
    const pl_graph_tensor *bt = pl_graph_get_tensor(g, alias[mm->inputs[1]]);
    char *ra = NULL, *rc = NULL, *pout = NULL, *pname = NULL, *last = NULL;
    pl_status *st = pl_alg_reshape_node(copy, base, pl_graph_get_tensor(g, alias[mm->inputs[0]])->name,
                                        a2, 2, NULL, &ra);
    const char *ins[3] = {ra, bt->name, NULL};
    if (st == NULL && f->c != PL_TID_NONE) {
        int64_t n1 = bt->dims[1];
        st = pl_alg_reshape_node(copy, base, pl_graph_get_tensor(g, f->c)->name, &n1, 1, NULL,
                                 &rc);
        ins[2] = rc;
    }
    const char *op = f->c != PL_TID_NONE ? "Gemm" : "MatMul";
    if (st == NULL) {
        pout = pl_alg_name(copy, base, f->c != PL_TID_NONE ? "Gemm_out" : "MatMul_out", false);
        pname = pl_alg_name(copy, base, op, true);
        const char *dst = pout;
        st = pout && pname ? pl_graph_add_node(copy, pname, op, "", ins,
                                               f->c != PL_TID_NONE ? 3 : 2, &dst, 1, NULL)
                           : pl_alg_oom();
    }
    if (st == NULL && f->n_region == 0)
        st = pl_alg_reshape_node(copy, base, pout, y->dims, y->ndim, y->name, &last);
    else if (st == NULL)
        st = pl_alg_write_flat_region(g, alias, copy, f, pout,
                                      f->add != PL_NID_NONE
                                          ? pl_graph_get_node(g, f->add)->outputs[0]
                                          : mm->outputs[0]);
    pl_free(ra);
    pl_free(rc);
    pl_free(pout);
    pl_free(pname);
    pl_free(last);
    return st;
}

/* ---- products of one input by several constant matrices ---------------------- */

/* The most bytes of weights one merge puts side by side. Below, each
 * product's fixed costs weigh (ViT-S of the HF zoo, [37, 192] x [192,
 * 192] three times: 5% faster merged); above, one product runs as fast as
 * its parts (BERT-base, T5-small, Whisper-base: the same time within the
 * noise), and the copy folding makes of the weights costs load time and
 * memory while the originals are still held (BERT-base merged whole:
 * model load 142 -> 184 ms, peak RSS 451 -> 531 MiB). */
#define PL_ALG_SIB_MAX_BYTES ((size_t)1 << 20)

/* Node ID, when it is the first of two or more MatMuls that read the same
 * input X by constant matrices of X's dtype (a transformer's query, key
 * and value projections): records them, with the Adds of a per-column
 * constant after each when every one has such an Add. The one product by
 * [K, N_1 + .. + N_n] computes the same sums, column by column, as the
 * products it replaces, and a backend runs one GEMM where it ran n
 * (ViT-S's three [37, 192] x [192, 192] as one [37, 192] x [192, 576];
 * ONNX Runtime packs them the same way in its Attention fusion). */
static pl_status *pl_alg_siblings(struct pl_alg *a, pl_nid id)
{
    const pl_graph *g = a->g;
    const pl_graph_node *n = pl_graph_get_node(g, id);
    if (strcmp(n->op, "MatMul") != 0 || !pl_alg_default_domain(n) || n->n_inputs != 2 ||
        n->n_outputs < 1 || n->outputs[0] == PL_TID_NONE)
        return NULL;
    pl_tid x = n->inputs[0];
    const pl_graph_tensor *xt = pl_graph_get_tensor(g, x);
    if (xt->ndim < 2 || xt->dims[xt->ndim - 1] <= 0 || !pl_alg_float(xt->dtype) ||
        xt->n_consumers < 2)
        return NULL;
    struct pl_alg_sib sib = {.x = x};
    size_t bytes = 0;
    for (size_t k = 0; k < xt->n_consumers && sib.n < PL_ALG_SIB_MAX; k++) {
        pl_nid ci = xt->consumers[k];
        const pl_graph_node *mm = pl_graph_get_node(g, ci);
        if (a->drop[ci] || strcmp(mm->op, "MatMul") != 0 || !pl_alg_default_domain(mm) ||
            mm->n_inputs != 2 || mm->inputs[0] != x || mm->inputs[1] == x ||
            mm->n_outputs < 1 || mm->outputs[0] == PL_TID_NONE ||
            !pl_alg_replaceable(a, mm->outputs[0]))
            continue;
        /* (a product by the same matrix as another is the same product:
         * nothing to gain side by side) */
        bool seen = false, bn = false;
        for (size_t j = 0; j < sib.n; j++)
            seen |= sib.mm[j] == ci || a->alias[pl_graph_get_node(g, sib.mm[j])->inputs[1]] ==
                                           a->alias[mm->inputs[1]];
        for (size_t j = 0; j < a->n_bnmms; j++)
            bn |= a->bnmms[j].mm == ci;
        const pl_graph_tensor *bt = pl_graph_get_tensor(g, a->alias[mm->inputs[1]]);
        const pl_graph_tensor *yt = pl_graph_get_tensor(g, mm->outputs[0]);
        size_t wb;
        /* weights that are a constant now (not a DequantizeLinear of int8
         * ones, which the backends' integer products take) */
        if (seen || bn || bt->data == NULL || bt->ndim != 2 ||
            bt->dims[0] != xt->dims[xt->ndim - 1] || bt->dims[1] <= 0 ||
            !PL_DTYPE_EQ(bt->dtype, xt->dtype) || yt->ndim != xt->ndim ||
            !PL_DTYPE_EQ(yt->dtype, xt->dtype) || yt->dims[yt->ndim - 1] != bt->dims[1] ||
            !pl_graph_tensor_bytes(bt, &wb) || bytes + wb > PL_ALG_SIB_MAX_BYTES)
            continue;
        bytes += wb;
        sib.mm[sib.n] = ci;
        sib.add[sib.n] = PL_NID_NONE;
        sib.c[sib.n] = PL_TID_NONE;
        pl_tid c = yt->n_consumers == 1 ? pl_alg_column_add(a, mm->outputs[0], yt->consumers[0])
                                        : PL_TID_NONE;
        if (c != PL_TID_NONE &&
            pl_alg_replaceable(a, pl_graph_get_node(g, yt->consumers[0])->outputs[0])) {
            sib.c[sib.n] = c;
            sib.add[sib.n] = yt->consumers[0];
        }
        sib.n++;
    }
    if (sib.n < 2 || sib.mm[0] != id)
        return NULL;
    /* products without an Add take zeros in the Add of all (Whisper's key
     * projection has no bias, its query and value ones have): an Add left
     * on a Split piece would be a pass of its own over a strided view */
    bool adds = false;
    for (size_t k = 0; k < sib.n; k++)
        adds |= sib.add[k] != PL_NID_NONE;
    for (size_t k = 0; k < sib.n; k++) {
        a->drop[sib.mm[k]] = true;
        if (sib.add[k] != PL_NID_NONE)
            a->drop[sib.add[k]] = true;
    }
    a->sibs[a->n_sibs++] = sib;
    char names[256] = "";
    size_t at = 0;
    for (size_t k = 0; k < sib.n && at < sizeof names; k++) {
        int w = snprintf(names + at, sizeof names - at, "%s'%s'", k ? ", " : "",
                         pl_graph_get_node(g, sib.mm[k])->name);
        at += w > 0 ? (size_t)w : 0;
    }
    if (!pl_rewrites_add(a->rewrites,
                         "MatMuls %s of '%s' by constant matrices%s made one MatMul by the "
                         "matrices side by side%s and a Split of its columns (the weights "
                         "concatenated by constant folding)",
                         names, xt->name, adds ? " and the Adds after them" : "",
                         adds ? ", one Add of the constants side by side (zeros for a "
                                "product without one),"
                              : ""))
        return pl_alg_oom();
    return NULL;
}

/* Adds node OP to COPY as pl_alg_node does, with its int attribute NAME =
 * V (Concat's and Split's axis). */
static pl_status *pl_alg_node_axis(pl_graph *copy, const char *base, const char *op,
                                   const char *const *in, size_t n_in, const char *const *out,
                                   size_t n_out, int64_t v, char **out_name)
{
    char *name = pl_alg_name(copy, base, op, true);
    char *o = out == NULL ? pl_alg_name(copy, base, op, false) : NULL;
    pl_nid id;
    pl_status *st = name && (out != NULL || o != NULL) ? NULL : pl_alg_oom();
    if (st == NULL)
        st = pl_graph_add_node(copy, name, op, "", in, n_in,
                               out != NULL ? out : (const char *const[]){o},
                               out != NULL ? n_out : 1, &id);
    if (st == NULL)
        st = pl_graph_attr_int(copy, id, "axis", v);
    pl_free(name);
    if (st != NULL || out_name == NULL)
        pl_free(o);
    else
        *out_name = o;
    return st;
}

/* Writes S into COPY: Concat of the matrices (and of the Adds' constants,
 * each made [N_i]), the MatMul (and the Add), and the Split into the
 * outputs the products (or their Adds) had. */
static pl_status *pl_alg_write_sibs(const pl_graph *g, const pl_tid *alias, pl_graph *copy,
                                    const struct pl_alg_sib *s)
{
    const char *base = pl_graph_get_node(g, s->mm[0])->name;
    const char *ins[PL_ALG_SIB_MAX], *outs[PL_ALG_SIB_MAX];
    char *vec[PL_ALG_SIB_MAX] = {NULL};
    int64_t split[PL_ALG_SIB_MAX], n = (int64_t)s->n;
    char *wcat = NULL, *bcat = NULL, *y = NULL, *sum = NULL, *sizes = NULL;
    bool adds = false;
    pl_dtype dt = pl_graph_get_tensor(g, s->x)->dtype;
    for (size_t k = 0; k < s->n; k++) {
        const pl_graph_node *mm = pl_graph_get_node(g, s->mm[k]);
        const pl_graph_tensor *bt = pl_graph_get_tensor(g, alias[mm->inputs[1]]);
        ins[k] = bt->name;
        split[k] = bt->dims[1];
        adds |= s->add[k] != PL_NID_NONE;
        outs[k] = pl_graph_get_tensor(g, s->add[k] != PL_NID_NONE
                                             ? pl_graph_get_node(g, s->add[k])->outputs[0]
                                             : mm->outputs[0])
                      ->name;
    }
    pl_status *st = pl_alg_node_axis(copy, base, "Concat", ins, s->n, NULL, 0, 1, &wcat);
    if (st == NULL)
        st = pl_alg_node(copy, base, "MatMul",
                         (const char *const[]){pl_graph_get_tensor(g, alias[s->x])->name, wcat},
                         2, &y);
    for (size_t k = 0; st == NULL && adds && k < s->n; k++) {
        const pl_graph_tensor *ct =
            s->c[k] != PL_TID_NONE ? pl_graph_get_tensor(g, s->c[k]) : NULL;
        if (ct == NULL) { /* zeros: all bits clear is +0 in every float type */
            size_t bytes = (size_t)split[k] * pl_dtype_size(dt);
            void *zeros = pl_calloc(bytes ? bytes : 1, 1);
            st = zeros != NULL ? pl_alg_constant(copy, base, "zero_bias", dt, 1, &split[k], zeros,
                                                 bytes, &vec[k])
                               : pl_alg_oom();
            pl_free(zeros);
            ins[k] = vec[k];
        } else if (ct->ndim == 1) {
            ins[k] = ct->name;
        } else if ((st = pl_alg_reshape_node(copy, base, ct->name, &split[k], 1, NULL,
                                             &vec[k])) == NULL) {
            ins[k] = vec[k];
        }
    }
    if (st == NULL && adds)
        st = pl_alg_node_axis(copy, base, "Concat", ins, s->n, NULL, 0, 0, &bcat);
    if (st == NULL && adds)
        st = pl_alg_node(copy, base, "Add", (const char *const[]){y, bcat}, 2, &sum);
    /* the sizes as Split's input from opset 13, as its attribute before */
    bool as_input = pl_graph_opset(g, "") >= 13;
    if (st == NULL && as_input)
        st = pl_alg_constant(copy, base, "split", PL_DTYPE_I64, 1, &n, split,
                             s->n * sizeof *split, &sizes);
    if (st == NULL) {
        const char *sin[2] = {adds ? sum : y, sizes};
        char *name = pl_alg_name(copy, base, "Split", true);
        pl_nid id;
        st = name ? pl_graph_add_node(copy, name, "Split", "", sin, as_input ? 2 : 1, outs, s->n,
                                      &id)
                  : pl_alg_oom();
        if (st == NULL)
            st = pl_graph_attr_int(copy, id, "axis", -1);
        if (st == NULL && !as_input)
            st = pl_graph_attr_ints(copy, id, "split", split, s->n);
        pl_free(name);
    }
    for (size_t k = 0; k < s->n; k++)
        pl_free(vec[k]);
    pl_free(wcat);
    pl_free(bcat);
    pl_free(y);
    pl_free(sum);
    pl_free(sizes);
    return st;
}

/* ---- kernel taps that only ever read padding -------------------------------- */

/* Reads INTS attribute NAME of N into OUT (R values), DFLT each when
 * absent; false when present with another count. */
static bool pl_alg_ints(const pl_graph_node *n, const char *name, int32_t r, int64_t dflt,
                        int64_t *out)
{
    const pl_attr *at = pl_graph_node_attr(n, name);
    for (int32_t i = 0; i < r; i++)
        out[i] = dflt;
    if (at == NULL)
        return true;
    if (at->kind != PL_ATTR_INTS || at->n != (size_t)r)
        return false;
    memcpy(out, at->ints, (size_t)r * sizeof *out);
    return true;
}

/* A Conv with constant weights on an input of known size whose kernel
 * reaches further than the input, padding included, ever lets it read
 * data: a dilated 3x3 on a map smaller than the dilation (ASPP branches
 * at rates 12 to 36 on the 28x28 map of a 224 input) is a 1x1. The taps
 * that read only padding multiply zeros; the Conv keeps the others (the
 * weights sliced by a Slice that folding computes) and pads so that every
 * output reads what it read. */
static pl_status *pl_alg_crop_taps(struct pl_alg *a, pl_nid id)
{
    const pl_graph *g = a->g;
    const pl_graph_node *n = pl_graph_get_node(g, id);
    if (strcmp(n->op, "Conv") != 0 || !pl_alg_default_domain(n) || n->n_formal_inputs < 2 ||
        n->inputs[0] == PL_TID_NONE || n->inputs[1] == PL_TID_NONE ||
        pl_graph_opset(g, "") < 10 || !a->is_const[n->inputs[1]])
        return NULL;
    for (size_t k = 0; k < a->n_bns; k++)
        if (a->bns[k].conv == id)
            return NULL;  /* rewritten in this pass: the next round */
    const pl_attr *ap = pl_graph_node_attr(n, "auto_pad");
    if (ap != NULL && (ap->kind != PL_ATTR_STRING ||
                       (strcmp(ap->s, "NOTSET") != 0 && strcmp(ap->s, "VALID") != 0)))
        return NULL;
    const pl_graph_tensor *x = pl_graph_get_tensor(g, n->inputs[0]);
    const pl_graph_tensor *w = pl_graph_get_tensor(g, n->inputs[1]);
    int32_t r = w->ndim - 2;
    if (r < 1 || x->ndim != w->ndim)
        return NULL;
    int64_t ks[PL_GRAPH_MAX_RANK], st[PL_GRAPH_MAX_RANK], dil[PL_GRAPH_MAX_RANK];
    int64_t pads[2 * PL_GRAPH_MAX_RANK];
    if (!pl_alg_ints(n, "strides", r, 1, st) || !pl_alg_ints(n, "dilations", r, 1, dil) ||
        !pl_alg_ints(n, "pads", 2 * r, 0, pads) ||
        !pl_alg_ints(n, "kernel_shape", r, -1, ks))
        return NULL;
    struct pl_alg_crop c = {.conv = id, .r = r};
    bool cut = false;
    for (int32_t i = 0; i < r; i++) {
        int64_t len = x->dims[2 + i], k = w->dims[2 + i];
        int64_t pb = pads[i], pe = pads[r + i], s = st[i], d = dil[i];
        if (len <= 0 || k <= 0 || (ks[i] != -1 && ks[i] != k) || s <= 0 || d <= 0 || pb < 0 ||
            pe < 0)
            return NULL;
        int64_t span = d * (k - 1) + 1;
        if (len + pb + pe < span)
            return NULL;
        int64_t outs = (len + pb + pe - span) / s + 1;
        /* Tap j reads o * s - pb + j * d; it is live when some output o
         * in [0, outs) reads inside [0, len). */
        int64_t first = -1, last = -1;
        for (int64_t j = 0; j < k; j++) {
            int64_t lo = -pb + j * d, hi = (outs - 1) * s - pb + j * d;
            /* Some o*s + lo in [0, len): the first such o. */
            int64_t o = lo >= 0 ? 0 : (-lo + s - 1) / s;
            if (o < outs && o * s + lo < len && hi >= 0) {
                first = first < 0 ? j : first;
                last = j;
            }
        }
        if (first < 0)
            return NULL;  /* every tap reads padding: the output is the bias */
        int64_t kk = last - first + 1;
        int64_t pb2 = pb - first * d;
        int64_t pe2 = (outs - 1) * s + d * (kk - 1) + 1 - len - pb2;
        if (pb2 < 0 || pe2 < 0)
            return NULL;
        c.first[i] = first;
        c.k[i] = kk;
        c.pads[i] = pb2;
        c.pads[r + i] = pe2;
        cut = cut || kk < k;
    }
    if (!cut)
        return NULL;
    a->crops[a->n_crops++] = c;
    char text[128];
    size_t used = 0;
    for (int32_t i = 0; i < r && used < sizeof text; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%lld", i ? "x" : "",
                                 (long long)c.k[i]);
    if (!pl_rewrites_add(a->rewrites,
                         "Conv '%s' cut to its %s kernel taps that read the input (on its "
                         "%lld-wide input the others read only padding)",
                         n->name, text, (long long)x->dims[2]))
        return pl_alg_oom();
    return NULL;
}

/* ---- MatMul + Add into Gemm ------------------------------------------------ */

static pl_status *pl_alg_gemm(struct pl_alg *a, pl_nid add_id)
{
    const pl_graph *g = a->g;
    const pl_graph_node *add = pl_graph_get_node(g, add_id);
    if (strcmp(add->op, "Add") != 0 || !pl_alg_default_domain(add) || add->n_inputs != 2 ||
        pl_graph_opset(g, "") < 7 || add->inputs[0] == add->inputs[1])
        return NULL;
    for (int side = 0; side < 2; side++) {
        pl_tid p = add->inputs[side], c = add->inputs[1 - side];
        const pl_graph_tensor *pt = pl_graph_get_tensor(g, p);
        if (pt->producer == PL_NID_NONE || a->drop[pt->producer] || pt->n_consumers != 1 ||
            !pl_alg_replaceable(a, p))
            continue;
        const pl_graph_node *mm = pl_graph_get_node(g, pt->producer);
        if (strcmp(mm->op, "MatMul") != 0 || !pl_alg_default_domain(mm) || mm->n_inputs != 2)
            continue;
        const pl_graph_tensor *at = pl_graph_get_tensor(g, mm->inputs[0]);
        const pl_graph_tensor *bt = pl_graph_get_tensor(g, mm->inputs[1]);
        const pl_graph_tensor *ct = pl_graph_get_tensor(g, c);
        const pl_graph_tensor *yt = pl_graph_get_tensor(g, add->outputs[0]);
        if (at->ndim != 2 || bt->ndim != 2 || !a->is_const[mm->inputs[1]] || !a->is_const[c] ||
            ct->ndim < 0 || ct->ndim > 2 || pt->ndim != 2 || yt->ndim != 2 ||
            !pl_alg_float(pt->dtype) || !PL_DTYPE_EQ(ct->dtype, pt->dtype))
            continue;
        /* C must broadcast to the product (Gemm broadcasts C one way only),
         * and the sum must have the product's shape. */
        bool fits = true;
        for (int32_t d = 0; d < 2 && fits; d++) {
            int32_t cd = d - (2 - ct->ndim);
            int64_t want = pt->dims[d], have = cd >= 0 ? ct->dims[cd] : 1;
            fits = (have == 1 || (want >= 0 && have == want)) && yt->dims[d] == want;
        }
        if (!fits)
            continue;
        a->gemms[a->n_gemms++] = (struct pl_alg_gemm){.mm = pt->producer, .add = add_id};
        a->drop[pt->producer] = true;
        a->drop[add_id] = true;
        if (!pl_rewrites_add(a->rewrites,
                             "MatMul '%s' and Add '%s' fused into Gemm '%s' (a 2-D product by a "
                             "constant matrix plus a constant that broadcasts to it)",
                             mm->name, add->name, mm->name))
            return pl_alg_oom();
        return NULL;
    }
    return NULL;
}

/* ---- layer normalisation, written out -------------------------------------- */

/* The one node that reads T (once), when T may be replaced; else NONE. */
static pl_nid pl_alg_sole_reader(const struct pl_alg *a, pl_tid t)
{
    const pl_graph_tensor *ti = t == PL_TID_NONE ? NULL : pl_graph_get_tensor(a->g, t);
    if (ti == NULL || ti->n_consumers != 1 || !pl_alg_replaceable(a, t) ||
        a->drop[ti->consumers[0]])
        return PL_NID_NONE;
    return ti->consumers[0];
}

/* Whether node N is OP of the default domain with N_IN inputs. */
static bool pl_alg_is(const pl_graph_node *n, const char *op, size_t n_in)
{
    return n != NULL && strcmp(n->op, op) == 0 && pl_alg_default_domain(n) &&
           n->n_inputs == n_in && n->n_outputs >= 1;
}

/* Whether ReduceMean node N averages the last axis of its input of rank R,
 * keeping it (axes an attribute, or from opset 18 a constant input). */
static bool pl_alg_mean_last(const struct pl_alg *a, const pl_graph_node *n, int32_t r)
{
    if (strcmp(n->op, "ReduceMean") != 0 || !pl_alg_default_domain(n) ||
        pl_alg_attr_int(n, "keepdims", 1) != 1 || n->n_inputs < 1)
        return false;
    int64_t axes[PL_GRAPH_MAX_RANK];
    int k;
    if (n->n_inputs >= 2 && n->inputs[1] != PL_TID_NONE) {
        k = pl_alg_const_ints(a->g, n->inputs[1], axes, NULL);
    } else {
        const pl_attr *at = pl_graph_node_attr(n, "axes");
        if (at == NULL || at->kind != PL_ATTR_INTS || at->n != 1)
            return false;
        axes[0] = at->ints[0];
        k = 1;
    }
    return k == 1 && (axes[0] == -1 || axes[0] == r - 1);
}

/* The input of binary node N other than T (T once, on either side), or
 * NONE. */
static pl_tid pl_alg_other(const pl_graph_node *n, pl_tid t)
{
    if (n->n_inputs != 2 || n->inputs[0] == n->inputs[1])
        return PL_TID_NONE;
    return n->inputs[0] == t ? n->inputs[1] : n->inputs[1] == t ? n->inputs[0] : PL_TID_NONE;
}

/* Whether T is a constant of C elements shaped [C] of dtype DT. */
static bool pl_alg_ln_param(const struct pl_alg *a, pl_tid t, int64_t c, pl_dtype dt)
{
    const pl_graph_tensor *ti = t == PL_TID_NONE ? NULL : pl_graph_get_tensor(a->g, t);
    return ti != NULL && a->is_const[t] && ti->ndim == 1 && ti->dims[0] == c &&
           PL_DTYPE_EQ(ti->dtype, dt);
}

/* The f32 value of constant scalar (or one-element) T into *OUT. */
static bool pl_alg_f32_scalar(const pl_graph *g, pl_tid t, float *out)
{
    const pl_graph_tensor *ti = t == PL_TID_NONE ? NULL : pl_graph_get_tensor(g, t);
    if (ti == NULL || ti->data == NULL || !PL_DTYPE_EQ(ti->dtype, PL_DTYPE_F32) ||
        ti->nbytes != sizeof *out)
        return false;
    memcpy(out, ti->data, sizeof *out);
    return true;
}

/* Whether node N averages the last axis of its input of rank R, keeping
 * it: a ReduceMean (pl_alg_mean_last), or a GlobalAveragePool of a rank-3
 * input (its one spatial axis is the last: how tf2onnx writes Keras's
 * mean over features). */
static bool pl_alg_mean_last_any(const struct pl_alg *a, const pl_graph_node *n, int32_t r)
{
    if (pl_alg_is(n, "GlobalAveragePool", 1))
        return r == 3;
    return pl_alg_mean_last(a, n, r);
}

/* The standard deviation of a layer normalisation from its squares SQ:
 * VAR = mean(SQ) (a ReduceMean over the last axis of rank R, or with
 * MEAN_OP the same op as its first mean, which may be a rank-3
 * GlobalAveragePool), ADD = Add(VAR, EPS), SQRT = Sqrt(ADD); each read only
 * by the next. */
static bool pl_alg_ln_std(const struct pl_alg *a, pl_tid sq, const char *mean_op, int32_t r,
                          pl_nid *var_id, pl_nid *add_id, pl_nid *sqrt_id, float *eps)
{
    const pl_graph *g = a->g;
    *var_id = pl_alg_sole_reader(a, sq);
    const pl_graph_node *var = *var_id != PL_NID_NONE ? pl_graph_get_node(g, *var_id) : NULL;
    if (var == NULL || var->n_outputs != 1 ||
        (mean_op == NULL ? !pl_alg_mean_last(a, var, r)
                         : strcmp(var->op, mean_op) != 0 || !pl_alg_mean_last_any(a, var, r)))
        return false;
    *add_id = pl_alg_sole_reader(a, var->outputs[0]);
    const pl_graph_node *add = *add_id != PL_NID_NONE ? pl_graph_get_node(g, *add_id) : NULL;
    if (!pl_alg_is(add, "Add", 2) ||
        !pl_alg_f32_scalar(g, pl_alg_other(add, var->outputs[0]), eps) || !(*eps >= 0.0f))
        return false;
    *sqrt_id = pl_alg_sole_reader(a, add->outputs[0]);
    return *sqrt_id != PL_NID_NONE && pl_alg_is(pl_graph_get_node(g, *sqrt_id), "Sqrt", 1);
}

/* Layer normalisation written out, from its first ReduceMean ID: m =
 * ReduceMean(x); d = Sub(x, m); p = Pow(d, 2) or Mul(d, d); v =
 * ReduceMean(p); s = Sqrt(Add(v, eps)); y = Div(d, s) * gamma (+ beta),
 * every intermediate read only by the pattern. */
static pl_status *pl_alg_layernorm(struct pl_alg *a, pl_nid id)
{
    const pl_graph *g = a->g;
    const pl_graph_node *m = pl_graph_get_node(g, id);
    if (strcmp(m->op, "ReduceMean") != 0 || m->n_outputs != 1 || m->inputs[0] == PL_TID_NONE)
        return NULL;
    pl_tid x = m->inputs[0];
    const pl_graph_tensor *xt = pl_graph_get_tensor(g, x);
    if (xt->ndim < 1 || xt->dims[xt->ndim - 1] <= 0 || !pl_alg_float(xt->dtype) ||
        !pl_alg_mean_last(a, m, xt->ndim))
        return NULL;
    int64_t c = xt->dims[xt->ndim - 1];
    pl_nid sub_id = pl_alg_sole_reader(a, m->outputs[0]);
    const pl_graph_node *sub = sub_id != PL_NID_NONE ? pl_graph_get_node(g, sub_id) : NULL;
    if (!pl_alg_is(sub, "Sub", 2) || sub->inputs[0] != x || sub->inputs[1] != m->outputs[0])
        return NULL;
    /* d: read by the square (Pow, or Mul twice) and the Div, nothing else */
    pl_tid d = sub->outputs[0];
    const pl_graph_tensor *dt = pl_graph_get_tensor(g, d);
    if (!pl_alg_replaceable(a, d) || dt->n_consumers < 2 || dt->n_consumers > 3)
        return NULL;
    pl_nid sq_id = PL_NID_NONE, div_id = PL_NID_NONE;
    for (size_t k = 0; k < dt->n_consumers; k++) {
        pl_nid r = dt->consumers[k];
        const pl_graph_node *rn = pl_graph_get_node(g, r);
        float two;
        if (a->drop[r])
            return NULL;
        if (pl_alg_is(rn, "Div", 2) && rn->inputs[0] == d && rn->inputs[1] != d)
            div_id = div_id == PL_NID_NONE ? r : PL_NID_NONE - 1;
        else if ((pl_alg_is(rn, "Pow", 2) && rn->inputs[0] == d &&
                  pl_alg_f32_scalar(g, rn->inputs[1], &two) && two == 2.0f) ||
                 (pl_alg_is(rn, "Mul", 2) && rn->inputs[0] == d && rn->inputs[1] == d))
            sq_id = sq_id == PL_NID_NONE || sq_id == r ? r : PL_NID_NONE - 1;
        else
            return NULL;
    }
    if (sq_id >= PL_NID_NONE - 1 || div_id >= PL_NID_NONE - 1 ||
        dt->n_consumers != (strcmp(pl_graph_get_node(g, sq_id)->op, "Mul") == 0 ? 3u : 2u))
        return NULL;
    const pl_graph_node *sq = pl_graph_get_node(g, sq_id), *dv = pl_graph_get_node(g, div_id);
    pl_nid var_id, add_id, sqrt_id;
    float eps;
    if (!pl_alg_ln_std(a, sq->outputs[0], NULL, xt->ndim, &var_id, &add_id, &sqrt_id, &eps))
        return NULL;
    const pl_graph_node *sqr = pl_graph_get_node(g, sqrt_id);
    if (pl_alg_sole_reader(a, sqr->outputs[0]) != div_id || dv->inputs[1] != sqr->outputs[0])
        return NULL;
    pl_nid mul_id = pl_alg_sole_reader(a, dv->outputs[0]);
    const pl_graph_node *mul = mul_id != PL_NID_NONE ? pl_graph_get_node(g, mul_id) : NULL;
    if (!pl_alg_is(mul, "Mul", 2))
        return NULL;
    pl_tid gamma = pl_alg_other(mul, dv->outputs[0]);
    if (!pl_alg_ln_param(a, gamma, c, xt->dtype))
        return NULL;
    pl_nid last = mul_id;
    pl_tid beta = PL_TID_NONE;
    pl_nid badd_id = pl_alg_sole_reader(a, mul->outputs[0]);
    const pl_graph_node *badd = badd_id != PL_NID_NONE ? pl_graph_get_node(g, badd_id) : NULL;
    if (pl_alg_is(badd, "Add", 2) &&
        pl_alg_ln_param(a, pl_alg_other(badd, mul->outputs[0]), c, xt->dtype)) {
        beta = pl_alg_other(badd, mul->outputs[0]);
        last = badd_id;
    }
    const pl_graph_tensor *yt = pl_graph_get_tensor(g, pl_graph_get_node(g, last)->outputs[0]);
    if (yt->ndim != xt->ndim || !PL_DTYPE_EQ(yt->dtype, xt->dtype) ||
        memcmp(yt->dims, xt->dims, (size_t)xt->ndim * sizeof *xt->dims) != 0)
        return NULL;
    pl_nid nodes[9] = {id, sub_id, sq_id, var_id, add_id, sqrt_id, div_id, mul_id, badd_id};
    for (size_t k = 0; k < (beta != PL_TID_NONE ? 9u : 8u); k++)
        a->drop[nodes[k]] = true;
    a->lns[a->n_lns++] = (struct pl_alg_ln){.first = id, .last = last, .x = x, .gamma = gamma,
                                            .beta = beta, .eps = eps};
    if (!pl_rewrites_add(a->rewrites,
                         "ReduceMean '%s' through %s '%s' fused into LayerNormalization '%s' "
                         "(a layer normalisation written out, epsilon %g)",
                         m->name, pl_graph_get_node(g, last)->op,
                         pl_graph_get_node(g, last)->name, pl_graph_get_node(g, last)->name,
                         (double)eps))
        return pl_alg_oom();
    return NULL;
}

/* Whether T is a constant of C elements of dtype DT shaped [C] or [1, ..,
 * 1, C] (at most rank R): one value per element of the last axis. Those of
 * rank above 1 must hold their data (pl_alg_write_ln copies it as [C]). */
static bool pl_alg_ln_vec(const struct pl_alg *a, pl_tid t, int64_t c, pl_dtype dt, int32_t r)
{
    const pl_graph_tensor *ti = t == PL_TID_NONE ? NULL : pl_graph_get_tensor(a->g, t);
    if (ti == NULL || !a->is_const[t] || ti->ndim < 1 || ti->ndim > r ||
        ti->dims[ti->ndim - 1] != c || !PL_DTYPE_EQ(ti->dtype, dt))
        return false;
    for (int32_t i = 0; i + 1 < ti->ndim; i++)
        if (ti->dims[i] != 1)
            return false;
    return ti->ndim == 1 || (ti->data != NULL && ti->nbytes == (size_t)c * pl_dtype_size(dt));
}

/* Layer normalisation as Keras computes it and tf2onnx writes it (13 or 12
 * nodes), from its first mean ID: m = mean(x); d = Sub(x, m); v =
 * mean(Mul(d, d)); s = Reciprocal(Sqrt(Add(v, eps))) * gamma; y =
 * Add(Mul(x, s), Add(Mul(Neg(m), s), beta)), or Add(Mul(x, s), Mul(Neg(m),
 * s)) when beta was zero (folded away). The means are ReduceMean over the
 * last axis or GlobalAveragePool of a rank-3 tensor. x * s - m * s is
 * (x - m) * s up to rounding. */
static pl_status *pl_alg_layernorm_tf(struct pl_alg *a, pl_nid id)
{
    const pl_graph *g = a->g;
    const pl_graph_node *m = pl_graph_get_node(g, id);
    if (m->n_outputs != 1 || m->n_inputs < 1 || m->inputs[0] == PL_TID_NONE)
        return NULL;
    pl_tid x = m->inputs[0];
    const pl_graph_tensor *xt = pl_graph_get_tensor(g, x);
    if (xt->ndim < 2 || xt->dims[xt->ndim - 1] <= 0 || !pl_alg_float(xt->dtype) ||
        !pl_alg_mean_last_any(a, m, xt->ndim))
        return NULL;
    int64_t c = xt->dims[xt->ndim - 1];
    pl_tid mean = m->outputs[0];
    const pl_graph_tensor *mt = pl_graph_get_tensor(g, mean);
    if (mt->n_consumers != 2 || !pl_alg_replaceable(a, mean))
        return NULL;
    pl_nid sub_id = PL_NID_NONE, neg_id = PL_NID_NONE;
    for (size_t k = 0; k < 2; k++) {
        pl_nid r = mt->consumers[k];
        const pl_graph_node *rn = pl_graph_get_node(g, r);
        if (a->drop[r])
            return NULL;
        if (pl_alg_is(rn, "Sub", 2) && rn->inputs[0] == x && rn->inputs[1] == mean)
            sub_id = r;
        else if (pl_alg_is(rn, "Neg", 1))
            neg_id = r;
    }
    if (sub_id == PL_NID_NONE || neg_id == PL_NID_NONE)
        return NULL;
    /* d: read by its square alone */
    pl_tid d = pl_graph_get_node(g, sub_id)->outputs[0];
    const pl_graph_tensor *dt = pl_graph_get_tensor(g, d);
    pl_nid sq_id = dt->n_consumers >= 1 ? dt->consumers[0] : PL_NID_NONE;
    const pl_graph_node *sq = sq_id != PL_NID_NONE ? pl_graph_get_node(g, sq_id) : NULL;
    float two;
    if (sq == NULL || a->drop[sq_id] || !pl_alg_replaceable(a, d) ||
        !((pl_alg_is(sq, "Mul", 2) && sq->inputs[0] == d && sq->inputs[1] == d &&
           dt->n_consumers == 2 && dt->consumers[1] == sq_id) ||
          (pl_alg_is(sq, "Pow", 2) && sq->inputs[0] == d && dt->n_consumers == 1 &&
           pl_alg_f32_scalar(g, sq->inputs[1], &two) && two == 2.0f)))
        return NULL;
    pl_nid var_id, add_id, sqrt_id;
    float eps;
    if (!pl_alg_ln_std(a, sq->outputs[0], m->op, xt->ndim, &var_id, &add_id, &sqrt_id, &eps))
        return NULL;
    const pl_graph_node *sqr = pl_graph_get_node(g, sqrt_id);
    pl_nid rcp_id = pl_alg_sole_reader(a, sqr->outputs[0]);
    const pl_graph_node *rcp = rcp_id != PL_NID_NONE ? pl_graph_get_node(g, rcp_id) : NULL;
    if (!pl_alg_is(rcp, "Reciprocal", 1))
        return NULL;
    pl_nid gm_id = pl_alg_sole_reader(a, rcp->outputs[0]);
    const pl_graph_node *gm = gm_id != PL_NID_NONE ? pl_graph_get_node(g, gm_id) : NULL;
    if (!pl_alg_is(gm, "Mul", 2))
        return NULL;
    pl_tid gamma = pl_alg_other(gm, rcp->outputs[0]);
    if (!pl_alg_ln_vec(a, gamma, c, xt->dtype, xt->ndim))
        return NULL;
    /* s: read by Mul(x, s) and Mul(Neg(m), s) */
    pl_tid s_t = gm->outputs[0];
    const pl_graph_tensor *st_ = pl_graph_get_tensor(g, s_t);
    pl_tid neg_t = pl_graph_get_node(g, neg_id)->outputs[0];
    if (st_->n_consumers != 2 || !pl_alg_replaceable(a, s_t))
        return NULL;
    pl_nid xs_id = PL_NID_NONE, ms_id = PL_NID_NONE;
    for (size_t k = 0; k < 2; k++) {
        pl_nid r = st_->consumers[k];
        const pl_graph_node *rn = pl_graph_get_node(g, r);
        if (a->drop[r] || !pl_alg_is(rn, "Mul", 2))
            return NULL;
        pl_tid o = pl_alg_other(rn, s_t);
        if (o == x)
            xs_id = r;
        else if (o == neg_t)
            ms_id = r;
    }
    if (xs_id == PL_NID_NONE || ms_id == PL_NID_NONE || pl_alg_sole_reader(a, neg_t) != ms_id)
        return NULL;
    pl_tid xs_t = pl_graph_get_node(g, xs_id)->outputs[0];
    pl_tid ms_t = pl_graph_get_node(g, ms_id)->outputs[0];
    pl_nid r1_id = pl_alg_sole_reader(a, ms_t), fin_id, badd_id = PL_NID_NONE;
    const pl_graph_node *r1 = r1_id != PL_NID_NONE ? pl_graph_get_node(g, r1_id) : NULL;
    pl_tid beta = PL_TID_NONE;
    if (!pl_alg_is(r1, "Add", 2))
        return NULL;
    if (pl_alg_other(r1, ms_t) == xs_t) {
        fin_id = r1_id;
    } else {
        beta = pl_alg_other(r1, ms_t);
        if (!pl_alg_ln_vec(a, beta, c, xt->dtype, xt->ndim))
            return NULL;
        badd_id = r1_id;
        fin_id = pl_alg_sole_reader(a, r1->outputs[0]);
        const pl_graph_node *fin = fin_id != PL_NID_NONE ? pl_graph_get_node(g, fin_id) : NULL;
        if (!pl_alg_is(fin, "Add", 2) || pl_alg_other(fin, r1->outputs[0]) != xs_t)
            return NULL;
    }
    if (pl_alg_sole_reader(a, xs_t) != fin_id)
        return NULL;
    const pl_graph_tensor *yt = pl_graph_get_tensor(g, pl_graph_get_node(g, fin_id)->outputs[0]);
    if (yt->ndim != xt->ndim || !PL_DTYPE_EQ(yt->dtype, xt->dtype) ||
        memcmp(yt->dims, xt->dims, (size_t)xt->ndim * sizeof *xt->dims) != 0)
        return NULL;
    pl_nid nodes[13] = {id,     sub_id, sq_id, var_id, add_id, sqrt_id, rcp_id,
                        gm_id,  neg_id, xs_id, ms_id,  fin_id, badd_id};
    for (size_t k = 0; k < (badd_id != PL_NID_NONE ? 13u : 12u); k++)
        a->drop[nodes[k]] = true;
    a->lns[a->n_lns++] = (struct pl_alg_ln){.first = id, .last = fin_id, .x = x, .gamma = gamma,
                                            .beta = beta, .eps = eps};
    const pl_graph_node *last = pl_graph_get_node(g, fin_id);
    if (!pl_rewrites_add(a->rewrites,
                         "%s '%s' through Add '%s' fused into LayerNormalization '%s' (a layer "
                         "normalisation as Keras computes it, epsilon %g)",
                         m->op, m->name, last->name, last->name, (double)eps))
        return pl_alg_oom();
    return NULL;
}

/* ---- Transpose of a Transpose ------------------------------------------------ */

/* The permutation of Transpose node N (its perm, or reversed dims) of
 * an input of rank R into PERM; false when it cannot be read. */
static bool pl_alg_perm_of(const pl_graph_node *n, int32_t r, int64_t *perm)
{
    const pl_attr *p = pl_graph_node_attr(n, "perm");
    if (p == NULL) {
        for (int32_t i = 0; i < r; i++)
            perm[i] = r - 1 - i;
        return true;
    }
    if (p->kind != PL_ATTR_INTS || p->n != (size_t)r)
        return false;
    bool seen[PL_GRAPH_MAX_RANK] = {false};
    for (int32_t i = 0; i < r; i++) {
        int64_t v = p->ints[i] < 0 ? p->ints[i] + r : p->ints[i];
        if (v < 0 || v >= r || seen[v])
            return false;
        seen[v] = true;
        perm[i] = v;
    }
    return true;
}

/* Transpose(Transpose(x, p1), p2) is Transpose(x, q) with q[i] = p1[p2[i]]
 * (TensorFlow converters leave NHWC <-> NCHW pairs around every op they
 * could not convert); when q is the identity, the second's readers read x
 * and the pair goes. */
static pl_status *pl_alg_transpose(struct pl_alg *a, pl_nid id)
{
    const pl_graph *g = a->g;
    const pl_graph_node *n = pl_graph_get_node(g, id);
    if (strcmp(n->op, "Transpose") != 0 || !pl_alg_default_domain(n) || n->n_inputs != 1 ||
        n->outputs[0] == PL_TID_NONE || a->alias[n->inputs[0]] != n->inputs[0])
        return NULL;
    const pl_graph_tensor *mid = pl_graph_get_tensor(g, n->inputs[0]);
    if (mid->producer == PL_NID_NONE || a->drop[mid->producer] || mid->ndim < 1)
        return NULL;
    const pl_graph_node *first = pl_graph_get_node(g, mid->producer);
    if (strcmp(first->op, "Transpose") != 0 || !pl_alg_default_domain(first) ||
        first->n_inputs != 1 || first->inputs[0] == PL_TID_NONE)
        return NULL;
    for (size_t k = 0; k < a->n_perms; k++)
        if (a->perms[k].node == mid->producer)
            return NULL;  /* rewritten itself: the next round */
    int32_t r = mid->ndim;
    int64_t p1[PL_GRAPH_MAX_RANK], p2[PL_GRAPH_MAX_RANK], q[PL_GRAPH_MAX_RANK];
    if (!pl_alg_perm_of(first, r, p1) || !pl_alg_perm_of(n, r, p2))
        return NULL;
    bool identity = true;
    for (int32_t i = 0; i < r; i++) {
        q[i] = p1[p2[i]];
        identity = identity && q[i] == i;
    }
    pl_tid src = a->alias[first->inputs[0]];
    if (identity) {
        if (!pl_alg_replaceable(a, n->outputs[0]))
            return NULL;
        a->drop[id] = true;
        a->alias[n->outputs[0]] = src;
    } else {
        struct pl_alg_perm *p = &a->perms[a->n_perms++];
        p->node = id;
        p->src = src;
        p->n = r;
        memcpy(p->perm, q, (size_t)r * sizeof *q);
    }
    if (!pl_rewrites_add(a->rewrites,
                         identity ? "Transpose '%s' after Transpose '%s' undoes it: its readers "
                                    "read '%s'"
                                  : "Transpose '%s' after Transpose '%s' made one Transpose of "
                                    "'%s'",
                         n->name, first->name, pl_graph_get_tensor(g, src)->name))
        return pl_alg_oom();
    return NULL;
}

/* ---- ScatterElements of whole rows as ScatterND ------------------------------ */

static pl_nid pl_alg_copy_id(const struct pl_alg *a, pl_nid id);

/* Node ID, when it is a ScatterElements on axis 0 without reduction whose
 * indices are an Expand of [k, 1, ..., 1] to the updates' shape, and the
 * updates span data's other dims whole: it writes row idx[i] of data with
 * updates[i] (torchvision's _onnx_merge_levels puts each pyramid level's
 * RoIAlign rows back in place this way), which ScatterND does from the k
 * indices alone instead of k x C x H x W expanded ones. */
static pl_status *pl_alg_scatter(struct pl_alg *a, pl_nid id)
{
    const pl_graph *g = a->g;
    const pl_graph_node *n = pl_graph_get_node(g, id);
    if (strcmp(n->op, "ScatterElements") != 0 || !pl_alg_default_domain(n) ||
        n->n_inputs != 3 || n->outputs[0] == PL_TID_NONE)
        return NULL;
    for (int k = 0; k < 3; k++)
        if (n->inputs[k] == PL_TID_NONE)
            return NULL;
    const pl_graph_tensor *d = pl_graph_get_tensor(g, a->alias[n->inputs[0]]);
    const pl_graph_tensor *ix = pl_graph_get_tensor(g, a->alias[n->inputs[1]]);
    const pl_graph_tensor *u = pl_graph_get_tensor(g, a->alias[n->inputs[2]]);
    const pl_attr *ax = pl_graph_node_attr(n, "axis");
    const pl_attr *red = pl_graph_node_attr(n, "reduction");
    int32_t r = d->ndim;
    if (r < 2 || ix->ndim != r || u->ndim != r ||
        (ax != NULL && (ax->kind != PL_ATTR_INT || (ax->i != 0 && ax->i != -(int64_t)r))) ||
        (red != NULL && (red->kind != PL_ATTR_STRING || strcmp(red->s, "none") != 0)))
        return NULL;
    for (int32_t i = 0; i < r; i++)
        if (d->dims[i] < 0 || ix->dims[i] < 0 || u->dims[i] != ix->dims[i] ||
            (i > 0 && ix->dims[i] != d->dims[i]))
            return NULL;
    if (ix->producer == PL_NID_NONE || a->drop[ix->producer])
        return NULL;
    const pl_graph_node *e = pl_graph_get_node(g, ix->producer);
    if (strcmp(e->op, "Expand") != 0 || !pl_alg_default_domain(e) || e->n_inputs < 1 ||
        e->inputs[0] == PL_TID_NONE)
        return NULL;
    pl_tid rows = a->alias[e->inputs[0]];
    const pl_graph_tensor *x = pl_graph_get_tensor(g, rows);
    if (x->ndim != r || x->dims[0] != ix->dims[0] || !PL_DTYPE_EQ(x->dtype, ix->dtype))
        return NULL;
    for (int32_t i = 1; i < r; i++)
        if (x->dims[i] != 1)
            return NULL;
    struct pl_alg_scatter *sc = &a->scatters[a->n_scatters++];
    sc->node = id;
    sc->rows = rows;
    sc->k = x->dims[0];
    if (!pl_rewrites_add(a->rewrites,
                         "ScatterElements '%s' writes whole rows of '%s' at indices expanded "
                         "from '%s': a ScatterND of the %lld indices",
                         n->name, d->name, x->name, (long long)sc->k))
        return pl_alg_oom();
    return NULL;
}

/* Writes S into COPY: a Reshape of its rows to [k, 1], and the node made a
 * ScatterND of them. */
static pl_status *pl_alg_write_scatter(const pl_graph *g, const struct pl_alg *a, pl_graph *copy,
                                       const struct pl_alg_scatter *sc)
{
    const pl_graph_node *n = pl_graph_get_node(g, sc->node);
    int64_t shape[2] = {sc->k, 1}, two = 2;
    char *shp = NULL, *idx = NULL;
    pl_status *st = pl_alg_constant(copy, n->name, "rows_shape", PL_DTYPE_I64, 1, &two, shape,
                                    sizeof shape, &shp);
    if (st == NULL)
        st = pl_alg_node(copy, n->name, "Reshape",
                         (const char *const[]){pl_graph_get_tensor(g, sc->rows)->name, shp}, 2,
                         &idx);
    pl_nid id = pl_alg_copy_id(a, sc->node);
    if (st == NULL)
        st = pl_graph_node_set_op(copy, id, "", "ScatterND");
    if (st == NULL) {
        pl_graph_node_remove_attr(copy, id, "axis");
        pl_graph_node_remove_attr(copy, id, "reduction");
        pl_tid ins[3] = {pl_graph_find_tensor(copy, pl_graph_get_tensor(g, a->alias[n->inputs[0]])->name),
                         pl_graph_find_tensor(copy, idx),
                         pl_graph_find_tensor(copy, pl_graph_get_tensor(g, a->alias[n->inputs[2]])->name)};
        st = pl_graph_node_set_inputs(copy, id, ins, 3);
    }
    pl_free(shp);
    pl_free(idx);
    return st;
}

/* ---- a QuantizeLinear/DequantizeLinear pair that changes nothing --------- */

/* The one value of constant tensor T (a scale or a zero point, per tensor)
 * as raw bytes into *OUT (8 bytes, zeroed first) and its dtype into *OUT_DT;
 * T == PL_TID_NONE is a zero point of 0. False when T is not one constant
 * value. */
static bool pl_alg_qparam(const pl_graph *g, pl_tid t, uint64_t *out, pl_dtype *out_dt)
{
    *out = 0;
    if (t == PL_TID_NONE) {
        *out_dt = (pl_dtype){0};
        return true;
    }
    const pl_graph_tensor *ti = pl_graph_get_tensor(g, t);
    size_t es = pl_dtype_size(ti->dtype);
    if (ti->data == NULL || es == 0 || es > sizeof *out || ti->nbytes != es)
        return false;
    memcpy(out, ti->data, es);
    *out_dt = ti->dtype;
    return true;
}

/* Whether the QuantizeLinear or DequantizeLinear nodes A and B use the same
 * per-tensor scale and zero point: equal dtypes and equal bits (a zero
 * point absent is 0). */
static bool pl_alg_same_qparams(const pl_graph *g, const pl_graph_node *a, const pl_graph_node *b)
{
    if (a->n_inputs < 2 || b->n_inputs < 2 || a->inputs[1] == PL_TID_NONE ||
        b->inputs[1] == PL_TID_NONE)
        return false;
    for (size_t k = 1; k <= 2; k++) {
        pl_tid ta = k < a->n_inputs ? a->inputs[k] : PL_TID_NONE;
        pl_tid tb = k < b->n_inputs ? b->inputs[k] : PL_TID_NONE;
        uint64_t va, vb;
        pl_dtype da, db;
        if (!pl_alg_qparam(g, ta, &va, &da) || !pl_alg_qparam(g, tb, &vb, &db) || va != vb)
            return false;
        /* An absent zero point against a present 0: the dtypes are checked
         * on the quantized tensors. */
        if (ta != PL_TID_NONE && tb != PL_TID_NONE && !PL_DTYPE_EQ(da, db))
            return false;
    }
    return true;
}

/* Whether output O of node N holds only values of its input 0 (or zeros,
 * which every quantization grid holds: the zero point dequantizes to 0):
 * ops that move, pick, repeat or take the maximum of elements. */
static bool pl_alg_moves_values(const pl_graph *g, const pl_graph_node *n, size_t o)
{
    static const char *const movers[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze",
                                         "Transpose", "Expand", "Gather", "Slice", "Tile",
                                         "Split", "DepthToSpace", "SpaceToDepth", "Identity",
                                         "Relu", "GatherElements"};
    if (!pl_alg_default_domain(n) || n->n_inputs < 1 || n->inputs[0] == PL_TID_NONE)
        return false;
    if (strcmp(n->op, "MaxPool") == 0)
        return o == 0;
    if (strcmp(n->op, "Pad") == 0) {
        /* constant mode pads with its value: only 0 (or none) is on the grid */
        const pl_attr *mode = pl_graph_node_attr(n, "mode");
        if (mode != NULL && mode->kind == PL_ATTR_STRING && strcmp(mode->s, "constant") != 0)
            return true;
        if (n->n_inputs < 3 || n->inputs[2] == PL_TID_NONE) {
            const pl_attr *v = pl_graph_node_attr(n, "value");
            return v == NULL || (v->kind == PL_ATTR_FLOAT && v->f == 0.0);
        }
        const pl_graph_tensor *v = pl_graph_get_tensor(g, n->inputs[2]);
        if (v->data == NULL || !PL_DTYPE_EQ(v->dtype, PL_DTYPE_F32) || v->nbytes != 4)
            return false;
        float f;
        memcpy(&f, v->data, 4);
        return f == 0.0f;
    }
    for (size_t k = 0; k < sizeof movers / sizeof *movers; k++)
        if (strcmp(n->op, movers[k]) == 0)
            return true;
    return false;
}

/* DequantizeLinear(QuantizeLinear(x)) is x itself when every value of x is
 * already on the pair's grid: x comes out of a DequantizeLinear with the
 * same scale, zero point and integer type, through ops that only move,
 * pick or take the maximum of its values (a Reshape, a Transpose, a
 * MaxPool). Quantizing (q − z)·s gives back q, so the pair changes nothing.
 * PyTorch's and ONNX Runtime's quantizers put such a pair after every
 * Reshape and Transpose of a QDQ model — in a small ViT, 63 of 145 — and
 * each is a primitive to launch or a kernel to run. The second
 * DequantizeLinear's readers read x; the QuantizeLinear goes with it when
 * nothing else reads it. */
static pl_status *pl_alg_requant(struct pl_alg *a, pl_nid id)
{
    const pl_graph *g = a->g;
    const pl_graph_node *dq = pl_graph_get_node(g, id);
    if (strcmp(dq->op, "DequantizeLinear") != 0 || !pl_alg_default_domain(dq) ||
        dq->n_inputs < 2 || dq->inputs[0] == PL_TID_NONE || dq->outputs[0] == PL_TID_NONE ||
        a->alias[dq->inputs[0]] != dq->inputs[0] || !pl_alg_replaceable(a, dq->outputs[0]))
        return NULL;
    const pl_graph_tensor *q = pl_graph_get_tensor(g, dq->inputs[0]);
    if (q->producer == PL_NID_NONE || a->drop[q->producer] ||
        (q->dtype.code != PL_TYPE_INT && q->dtype.code != PL_TYPE_UINT) || q->dtype.bits > 16)
        return NULL;
    const pl_graph_node *qn = pl_graph_get_node(g, q->producer);
    if (strcmp(qn->op, "QuantizeLinear") != 0 || !pl_alg_default_domain(qn) ||
        qn->inputs[0] == PL_TID_NONE || !pl_alg_same_qparams(g, qn, dq))
        return NULL;
    /* Back from x through the value movers to the DequantizeLinear. */
    pl_tid x = a->alias[qn->inputs[0]];
    pl_tid t = x;
    for (int hops = 0; hops < 64; hops++) {
        const pl_graph_tensor *ti = pl_graph_get_tensor(g, t);
        if (ti->producer == PL_NID_NONE || a->drop[ti->producer])
            return NULL;
        const pl_graph_node *p = pl_graph_get_node(g, ti->producer);
        if (strcmp(p->op, "DequantizeLinear") == 0 && pl_alg_default_domain(p)) {
            if (p->inputs[0] == PL_TID_NONE ||
                !PL_DTYPE_EQ(pl_graph_get_tensor(g, p->inputs[0])->dtype, q->dtype) ||
                !pl_alg_same_qparams(g, p, qn))
                return NULL;
            a->drop[id] = true;
            a->alias[dq->outputs[0]] = x;
            if (!pl_rewrites_add(a->rewrites,
                                 "QuantizeLinear '%s' and DequantizeLinear '%s' removed (the "
                                 "values of '%s' are on their grid already: DequantizeLinear "
                                 "'%s' made them, with the same scale and zero point): their "
                                 "readers read '%s'",
                                 qn->name, dq->name, pl_graph_get_tensor(g, x)->name, p->name,
                                 pl_graph_get_tensor(g, x)->name))
                return pl_alg_oom();
            return NULL;
        }
        size_t o = 0;
        while (o < p->n_outputs && p->outputs[o] != t)
            o++;
        if (!pl_alg_moves_values(g, p, o))
            return NULL;
        t = a->alias[p->inputs[0]];
    }
    return NULL;
}

/* ---- Expands that broadcasting readers do not need ------------------------ */

/* Whether OP broadcasts all its inputs multidirectionally to its one
 * output (so an input may be any shape that broadcasts to the same). */
static bool pl_alg_broadcasts(const pl_graph_node *n)
{
    static const char *const ops[] = {
        "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mean", "Sum", "Mod", "Equal",
        "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Where",
        "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor"};
    if (!pl_alg_default_domain(n) || n->n_outputs != 1)
        return false;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(n->op, ops[i]) == 0)
            return true;
    return false;
}

static bool pl_alg_dims_known(const pl_graph_tensor *t)
{
    if (t->ndim < 0)
        return false;
    for (int32_t d = 0; d < t->ndim; d++)
        if (t->dims[d] < 0)
            return false;
    return true;
}

/* "[1,256,1,1]" into BUF. */
static void pl_alg_dims_text(const pl_graph_tensor *t, char *buf, size_t size)
{
    int len = snprintf(buf, size, "[");
    for (int32_t d = 0; d < t->ndim && len < (int)size; d++)
        len += snprintf(buf + len, size - (size_t)len, "%s%lld", d ? "," : "",
                        (long long)t->dims[d]);
    if (len < (int)size)
        snprintf(buf + len, size - (size_t)len, "]");
}

/* Whether reader R of tensor FROM gives the same output reading TO in its
 * place: the broadcast of its inputs, TO for FROM, is its output's shape.
 * Its other inputs as they will be read (a->alias): two Expands into one
 * Add, of [] and of [1, 2] to [2, 2] (jax2onnx's dynamic_update_slice
 * indices), may not both go, the Add would give [1, 2]. */
static bool pl_alg_same_broadcast(const struct pl_alg *a, const pl_graph_node *r, pl_tid from,
                                  pl_tid to)
{
    const pl_graph *g = a->g;
    const pl_graph_tensor *y = pl_graph_get_tensor(g, r->outputs[0]);
    if (!pl_alg_broadcasts(r) || !pl_alg_dims_known(y))
        return false;
    int64_t b[PL_GRAPH_MAX_RANK];
    for (int32_t d = 0; d < y->ndim; d++)
        b[d] = 1;
    int32_t rank = 0; /* the output's rank is its inputs' highest */
    for (size_t i = 0; i < r->n_inputs; i++) {
        if (r->inputs[i] == PL_TID_NONE)
            return false;
        const pl_graph_tensor *x =
            pl_graph_get_tensor(g, r->inputs[i] == from ? to : a->alias[r->inputs[i]]);
        if (!pl_alg_dims_known(x) || x->ndim > y->ndim)
            return false;
        if (x->ndim > rank)
            rank = x->ndim;
        for (int32_t d = 0; d < x->ndim; d++) {
            int64_t v = x->dims[d], *o = &b[y->ndim - x->ndim + d];
            if (v != 1 && *o != 1 && v != *o)
                return false;
            if (v != 1)
                *o = v;
        }
    }
    if (rank != y->ndim)
        return false; /* Expand([6, 1], [1, 1, 1]) then Sub by [1]: [1, 6, 1], not [6, 1] */
    for (int32_t d = 0; d < y->ndim; d++)
        if (b[d] != y->dims[d])
            return false;
    return true;
}

/* An Expand whose every reader broadcasts its inputs to a shape its input
 * gives as well goes, its readers reading its input: timm's ECA and
 * similar gates write x * y.expand_as(x), a [1, C, 1, 1] gate written out
 * to a full [1, C, H, W] tensor only for the Mul to read it (on the
 * default configuration a reorder of the map to oneDNN's blocked layout
 * and a full-size binary each; ecaresnet26t 124 ms against 98 on cpu). */
static pl_status *pl_alg_expand(struct pl_alg *a, pl_nid id, size_t *n_done)
{
    const pl_graph *g = a->g;
    const pl_graph_node *n = pl_graph_get_node(g, id);
    if (strcmp(n->op, "Expand") != 0 || !pl_alg_default_domain(n) || n->n_inputs < 1 ||
        n->inputs[0] == PL_TID_NONE || n->outputs[0] == PL_TID_NONE ||
        !pl_alg_replaceable(a, n->outputs[0]))
        return NULL;
    pl_tid from = n->outputs[0], to = a->alias[n->inputs[0]];
    const pl_graph_tensor *y = pl_graph_get_tensor(g, from);
    if (y->n_consumers == 0 || !PL_DTYPE_EQ(pl_graph_get_tensor(g, to)->dtype, y->dtype))
        return NULL;
    for (size_t k = 0; k < y->n_consumers; k++) {
        if (a->drop[y->consumers[k]] ||
            !pl_alg_same_broadcast(a, pl_graph_get_node(g, y->consumers[k]), from, to))
            return NULL;
    }
    a->drop[id] = true;
    a->alias[from] = to;
    (*n_done)++;
    const pl_graph_tensor *x = pl_graph_get_tensor(g, to);
    char xd[96], yd[96];
    pl_alg_dims_text(x, xd, sizeof xd);
    pl_alg_dims_text(y, yd, sizeof yd);
    if (!pl_rewrites_add(a->rewrites,
                         "Expand '%s' removed (%s to %s): its readers (%s '%s'%s) broadcast "
                         "'%s' to the same shape",
                         n->name, xd, yd, pl_graph_get_node(g, y->consumers[0])->op,
                         pl_graph_get_node(g, y->consumers[0])->name,
                         y->n_consumers > 1 ? " and others" : "", x->name))
        return pl_alg_oom();
    return NULL;
}

/* ---- QDQ groups as integer operators ([graph] qdq = int8) --------------------
 *
 * ONNX Runtime's QDQ format writes an int8 convolution as float ops between
 * DequantizeLinear and QuantizeLinear nodes: DQ(x) and DQ(w) (and DQ(b),
 * i32) into a Conv whose only reader is a QuantizeLinear. ONNX Runtime
 * itself runs that group as one QLinearConv at its default optimisation
 * level; computed as written, in f32, a resnet18 at 224x224 took 39 ms on
 * 2 threads against its 4.5. With `qdq = int8` (the default) such a group
 * becomes the QLinearConv it stands for, the integer weights and bias
 * read before folding dequantizes them: the same arithmetic as ONNX
 * Runtime's (i32 sums, the bias added in i32, one f32 multiplier, rounded
 * half to even), which differs from the float graph's by a quantization
 * step where the float sum lands near a .5. `qdq = float` keeps the graph
 * as written (bit for bit what ONNX Runtime gives with its optimisations
 * off). Only where the bias is quantized at x_scale * w_scale with zero
 * point 0, as ONNX Runtime's quantizer writes it, so that the integer
 * bias is the float bias exactly. */
struct pl_alg_qconv {
    pl_nid conv, q;
    pl_tid in[9]; /* QLinearConv's inputs: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B */
};

/* The DequantizeLinear or QuantizeLinear writing T (OP), or NULL. */
static const pl_graph_node *pl_alg_writer(const pl_graph *g, pl_tid t, const char *op)
{
    if (t == PL_TID_NONE)
        return NULL;
    const pl_graph_tensor *ti = pl_graph_get_tensor(g, t);
    if (ti->producer == PL_NID_NONE)
        return NULL;
    const pl_graph_node *n = pl_graph_get_node(g, ti->producer);
    return strcmp(n->op, op) == 0 && pl_alg_default_domain(n) ? n : NULL;
}

static bool pl_alg_is8(pl_dtype dt)
{
    return PL_DTYPE_EQ(dt, PL_DTYPE_U8) || PL_DTYPE_EQ(dt, PL_DTYPE_I8);
}

/* Constant T's elements (of DT), or -1 when T is not such a constant. */
static int64_t pl_alg_const_elems(const pl_graph *g, pl_tid t, pl_dtype dt)
{
    if (t == PL_TID_NONE)
        return -1;
    const pl_graph_tensor *ti = pl_graph_get_tensor(g, t);
    size_t es = pl_dtype_size(dt);
    if (ti->data == NULL || !PL_DTYPE_EQ(ti->dtype, dt) || es == 0 || ti->nbytes % es != 0)
        return -1;
    return (int64_t)(ti->nbytes / es);
}

/* Whether DQ/Q node N quantizes one activation with one positive scale and
 * a present 8-bit zero point, the quantized side of type QT. */
static bool pl_alg_act_qparams(const pl_graph *g, const pl_graph_node *n, pl_tid quantized)
{
    if (n->n_inputs < 3 || n->inputs[2] == PL_TID_NONE || pl_alg_attr_int(n, "block_size", 0))
        return false;
    pl_dtype qt = pl_graph_get_tensor(g, quantized)->dtype;
    if (!pl_alg_is8(qt) || pl_alg_const_elems(g, n->inputs[1], PL_DTYPE_F32) != 1 ||
        pl_alg_const_elems(g, n->inputs[2], qt) != 1)
        return false;
    float s;
    memcpy(&s, pl_graph_get_tensor(g, n->inputs[1])->data, sizeof s);
    return s > 0.0f && isfinite(s);
}

/* The QuantizeLinear node that alone reads T (the output of a QDQ group's
 * op), quantizing it as one activation (pl_alg_act_qparams); its id in
 * *QID. NULL where there is none. */
static const pl_graph_node *pl_alg_sole_quantizer(const struct pl_alg *a, pl_tid t, pl_nid *qid)
{
    pl_nid id = pl_alg_sole_reader(a, t);
    if (id == PL_NID_NONE)
        return NULL;
    const pl_graph_node *q = pl_graph_get_node(a->g, id);
    if (strcmp(q->op, "QuantizeLinear") != 0 || !pl_alg_default_domain(q) || q->n_inputs < 1 ||
        q->inputs[0] != t || q->n_outputs < 1 || q->outputs[0] == PL_TID_NONE ||
        !pl_alg_act_qparams(a->g, q, q->outputs[0]))
        return NULL;
    *qid = id;
    return q;
}

static pl_status *pl_alg_qdq_conv(struct pl_alg *a, pl_nid id)
{
    const pl_graph *g = a->g;
    const pl_graph_node *c = pl_graph_get_node(g, id);
    if (!a->qdq_int8 || strcmp(c->op, "Conv") != 0 || !pl_alg_default_domain(c) ||
        c->n_inputs < 2 || c->n_outputs != 1)
        return NULL;
    pl_nid qid;
    const pl_graph_node *q = pl_alg_sole_quantizer(a, c->outputs[0], &qid);
    if (q == NULL)
        return NULL;
    const pl_graph_node *dx = pl_alg_writer(g, c->inputs[0], "DequantizeLinear");
    const pl_graph_node *dw = pl_alg_writer(g, c->inputs[1], "DequantizeLinear");
    const pl_graph_node *db = c->n_inputs > 2 && c->inputs[2] != PL_TID_NONE
                                  ? pl_alg_writer(g, c->inputs[2], "DequantizeLinear")
                                  : NULL;
    if (dx == NULL || dw == NULL || (c->n_inputs > 2 && c->inputs[2] != PL_TID_NONE && db == NULL) ||
        !pl_alg_act_qparams(g, dx, dx->inputs[0]))
        return NULL;
    /* weights: constant 8-bit, one scale or one per output channel (axis 0) */
    const pl_graph_tensor *wq = pl_graph_get_tensor(g, dw->inputs[0]);
    if (wq->data == NULL || !pl_alg_is8(wq->dtype) || wq->ndim < 3 || dw->n_inputs < 3 ||
        dw->inputs[2] == PL_TID_NONE || pl_alg_attr_int(dw, "block_size", 0))
        return NULL;
    int64_t m = wq->dims[0];
    int64_t ns = pl_alg_const_elems(g, dw->inputs[1], PL_DTYPE_F32);
    int64_t axis = pl_alg_attr_int(dw, "axis", 1);
    if ((ns != 1 && !(ns == m && (axis == 0 || axis == -wq->ndim))) ||
        pl_alg_const_elems(g, dw->inputs[2], wq->dtype) != ns)
        return NULL;
    const float *ws = pl_graph_get_tensor(g, dw->inputs[1])->data;
    float xs;
    memcpy(&xs, pl_graph_get_tensor(g, dx->inputs[1])->data, sizeof xs);
    /* bias: i32, at x_scale * w_scale, zero point 0 */
    if (db != NULL) {
        const pl_graph_tensor *bq = pl_graph_get_tensor(g, db->inputs[0]);
        int64_t nb = pl_alg_const_elems(g, db->inputs[1], PL_DTYPE_F32);
        if (bq->data == NULL || !PL_DTYPE_EQ(bq->dtype, PL_DTYPE_I32) || bq->ndim != 1 ||
            bq->dims[0] != m || (nb != 1 && nb != m) || (ns > 1 && nb != m))
            return NULL;
        const float *bs = pl_graph_get_tensor(g, db->inputs[1])->data;
        for (int64_t k = 0; k < nb; k++)
            if (bs[k] != xs * ws[ns > 1 ? k : 0])
                return NULL;
        if (db->n_inputs > 2 && db->inputs[2] != PL_TID_NONE) {
            int64_t nz = pl_alg_const_elems(g, db->inputs[2], PL_DTYPE_I32);
            const int32_t *bz = pl_graph_get_tensor(g, db->inputs[2])->data;
            if (nz < 1)
                return NULL;
            for (int64_t k = 0; k < nz; k++)
                if (bz[k] != 0)
                    return NULL;
        }
    }
    struct pl_alg_qconv *p = &a->qconvs[a->n_qconvs++];
    *p = (struct pl_alg_qconv){
        .conv = id,
        .q = qid,
        .in = {dx->inputs[0], dx->inputs[1], dx->inputs[2], dw->inputs[0], dw->inputs[1],
               dw->inputs[2], q->inputs[1], q->inputs[2], db != NULL ? db->inputs[0] : PL_TID_NONE},
    };
    a->drop[id] = a->drop[qid] = true;
    if (!pl_rewrites_add(a->rewrites,
                         "DequantizeLinear -> Conv '%s' -> QuantizeLinear '%s' run as QLinearConv "
                         "'%s' (integer arithmetic, as ONNX Runtime runs QDQ groups; [graph] qdq "
                         "= float keeps the float graph)",
                         c->name, q->name, c->name))
        return pl_alg_oom();
    return NULL;
}

/* DequantizeLinear -> MaxPool -> QuantizeLinear with the same scale, zero
 * point and 8-bit type: MaxPool of the quantized values themselves.
 * Dequantizing is increasing (a positive scale), so the largest value of
 * a window dequantizes to the largest of the dequantized window, and
 * quantizing it again gives back the byte; the padding the 8-bit MaxPool
 * uses, the type's lowest value, is below every value as -inf is. ONNX
 * Runtime's quantizer writes the pair around every MaxPool of a QDQ
 * network (a ResNet's stem, SqueezeNet's three), which ran in f32 between
 * a DequantizeLinear and a QuantizeLinear: four bytes a value, three
 * passes. */
struct pl_alg_qpool {
    pl_nid pool, q;
    pl_tid x; /* the DequantizeLinear's quantized input */
};

static pl_status *pl_alg_qdq_maxpool(struct pl_alg *a, pl_nid id)
{
    const pl_graph *g = a->g;
    const pl_graph_node *mp = pl_graph_get_node(g, id);
    if (!a->qdq_int8 || strcmp(mp->op, "MaxPool") != 0 || !pl_alg_default_domain(mp) ||
        mp->n_inputs < 1 || mp->outputs[0] == PL_TID_NONE ||
        (mp->n_outputs > 1 && mp->outputs[1] != PL_TID_NONE) ||
        pl_alg_attr_int(mp, "storage_order", 0) != 0)
        return NULL;
    pl_nid qid;
    const pl_graph_node *q = pl_alg_sole_quantizer(a, mp->outputs[0], &qid);
    const pl_graph_node *dq = pl_alg_writer(g, mp->inputs[0], "DequantizeLinear");
    if (q == NULL || dq == NULL || dq->inputs[0] == PL_TID_NONE ||
        !pl_alg_act_qparams(g, dq, dq->inputs[0]) || !pl_alg_same_qparams(g, dq, q) ||
        !PL_DTYPE_EQ(pl_graph_get_tensor(g, dq->inputs[0])->dtype,
                     pl_graph_get_tensor(g, q->outputs[0])->dtype))
        return NULL;
    a->qpools[a->n_qpools++] = (struct pl_alg_qpool){.pool = id, .q = qid, .x = dq->inputs[0]};
    a->drop[id] = a->drop[qid] = true;
    if (!pl_rewrites_add(a->rewrites,
                         "DequantizeLinear '%s' -> MaxPool '%s' -> QuantizeLinear '%s' run as "
                         "MaxPool '%s' of the quantized values (the same scale and zero point: "
                         "the largest byte is the largest value; [graph] qdq = float keeps the "
                         "float graph)",
                         dq->name, mp->name, q->name, mp->name))
        return pl_alg_oom();
    return NULL;
}

/* DequantizeLinear (A), DequantizeLinear (B) -> Add or Mul ->
 * QuantizeLinear, all of one 8-bit type with one scale and zero point
 * each: com.microsoft QLinearAdd or QLinearMul of the bytes, as ONNX
 * Runtime's QDQ transformer runs the group (the residual additions of a
 * QDQ ResNet, the squeeze-and-excitation products of an EfficientNet): one
 * pass over 8-bit values where the float graph made four (two
 * dequantizations, the op, the quantization), in ONNX Runtime's
 * arithmetic (sdk/include/plinth/qlinear.h: the output's zero point joins
 * before the rounding, so a tie can land a step from the float graph's).
 * Only where a loaded module registered both schemas, after the table
 * lookups took the products of one byte (SiLU's x * sigmoid(x)). */
struct pl_alg_qbin {
    pl_nid op, q;
    bool mul;
    pl_tid in[8]; /* A, A's scale, zero point, B, its scale, zero point, C's scale, zero point */
};

static pl_status *pl_alg_qdq_binary(struct pl_alg *a, pl_nid id)
{
    const pl_graph *g = a->g;
    const pl_graph_node *n = pl_graph_get_node(g, id);
    if (!a->qdq_int8 || !a->qlinear_binary || !pl_alg_default_domain(n) ||
        (strcmp(n->op, "Add") != 0 && strcmp(n->op, "Mul") != 0) || n->n_inputs != 2 ||
        n->n_outputs != 1 || n->outputs[0] == PL_TID_NONE)
        return NULL;
    pl_nid qid;
    const pl_graph_node *q = pl_alg_sole_quantizer(a, n->outputs[0], &qid);
    const pl_graph_node *da = pl_alg_writer(g, n->inputs[0], "DequantizeLinear");
    const pl_graph_node *db = pl_alg_writer(g, n->inputs[1], "DequantizeLinear");
    if (q == NULL || da == NULL || db == NULL || da->inputs[0] == PL_TID_NONE ||
        db->inputs[0] == PL_TID_NONE || !pl_alg_act_qparams(g, da, da->inputs[0]) ||
        !pl_alg_act_qparams(g, db, db->inputs[0]))
        return NULL;
    pl_dtype qt = pl_graph_get_tensor(g, q->outputs[0])->dtype;
    if (!PL_DTYPE_EQ(pl_graph_get_tensor(g, da->inputs[0])->dtype, qt) ||
        !PL_DTYPE_EQ(pl_graph_get_tensor(g, db->inputs[0])->dtype, qt))
        return NULL;
    a->qbins[a->n_qbins++] = (struct pl_alg_qbin){
        .op = id,
        .q = qid,
        .mul = n->op[0] == 'M',
        .in = {da->inputs[0], da->inputs[1], da->inputs[2], db->inputs[0], db->inputs[1],
               db->inputs[2], q->inputs[1], q->inputs[2]},
    };
    a->drop[id] = a->drop[qid] = true;
    if (!pl_rewrites_add(a->rewrites,
                         "DequantizeLinear -> %s '%s' -> QuantizeLinear '%s' run as "
                         "com.microsoft QLinear%s '%s' (integer arithmetic, as ONNX Runtime runs "
                         "QDQ groups; [graph] qdq = float keeps the float graph)",
                         n->op, n->name, q->name, n->op, n->name))
        return pl_alg_oom();
    return NULL;
}

/* DequantizeLinear -> MatMul (or Gemm) with constant int8 weights: the product in
 * integers (ONNX Runtime's quantizer writes static int8 transformers, its
 * QDQ format, so; ONNX Runtime runs them as integer products). Written as
 * MatMulInteger(x_q, W_q, x_zp) -> Cast to f32 -> Mul by x_scale * w_scale
 * (one, or one per column), the chain quantize_dynamic writes and the
 * backends run as one int8 product: the i32 sums are exact, so the result
 * is the float graph's up to f32 rounding (closer to exact than float
 * sums), whatever reads it (usually the next QuantizeLinear). Only with
 * [graph] qdq = int8; weights i8 with zero points 0 (symmetric, as the
 * quantizer writes them), x one 8-bit activation with one scale. A Gemm
 * (PyTorch 1.x writes a 2-D Linear so: transB, the bias C) of alpha and
 * beta 1, A not transposed, gets the same chain, its weights transposed by
 * a Transpose that folding computes, then an Add of C. */
struct pl_alg_qmm {
    pl_nid mm;
    pl_tid xq, xs, xz, wq, ws, wz; /* wz may be PL_TID_NONE */
    bool trans_b;                 /* a Gemm's B is [N, K] */
    pl_tid c;                     /* a Gemm's C, or PL_TID_NONE */
};


static pl_status *pl_alg_qdq_matmul(struct pl_alg *a, pl_nid id)
{
    const pl_graph *g = a->g;
    const pl_graph_node *mm = pl_graph_get_node(g, id);
    bool gemm = strcmp(mm->op, "Gemm") == 0;
    if (!a->qdq_int8 || (!gemm && strcmp(mm->op, "MatMul") != 0) ||
        !pl_alg_default_domain(mm) || mm->n_inputs < 2 || mm->n_inputs > (gemm ? 3u : 2u) ||
        mm->n_outputs != 1 || mm->outputs[0] == PL_TID_NONE ||
        !pl_alg_replaceable(a, mm->outputs[0]))
        return NULL;
    bool trans_b = gemm && pl_alg_attr_int(mm, "transB", 0) != 0;
    pl_tid c = gemm && mm->n_inputs > 2 ? mm->inputs[2] : PL_TID_NONE;
    if (gemm && (pl_alg_attr_int(mm, "transA", 0) != 0 ||
                 pl_alg_attr_f(mm, "alpha", 1.0) != 1.0 ||
                 (c != PL_TID_NONE && pl_alg_attr_f(mm, "beta", 1.0) != 1.0)))
        return NULL;
    const pl_graph_node *dx = pl_alg_writer(g, mm->inputs[0], "DequantizeLinear");
    const pl_graph_node *dw = pl_alg_writer(g, mm->inputs[1], "DequantizeLinear");
    if (dx == NULL || dw == NULL || dx->inputs[0] == PL_TID_NONE ||
        !pl_alg_act_qparams(g, dx, dx->inputs[0]) ||
        pl_graph_get_tensor(g, dx->inputs[0])->ndim < 2)
        return NULL;
    const pl_graph_tensor *wq = pl_graph_get_tensor(g, dw->inputs[0]);
    if (wq->data == NULL || !PL_DTYPE_EQ(wq->dtype, PL_DTYPE_I8) || wq->ndim != 2 ||
        dw->n_inputs < 2 || pl_alg_attr_int(dw, "block_size", 0))
        return NULL;
    int64_t n = wq->dims[trans_b ? 0 : 1];
    int64_t ns = pl_alg_const_elems(g, dw->inputs[1], PL_DTYPE_F32);
    int64_t axis = pl_alg_attr_int(dw, "axis", 1);
    if (ns != 1 && !(ns == n && (trans_b ? axis == 0 || axis == -2 : axis == 1 || axis == -1)))
        return NULL;
    pl_tid wz = dw->n_inputs > 2 ? dw->inputs[2] : PL_TID_NONE;
    if (wz != PL_TID_NONE) {
        int64_t nz = pl_alg_const_elems(g, wz, PL_DTYPE_I8);
        const int8_t *z = pl_graph_get_tensor(g, wz)->data;
        if (nz < 1)
            return NULL;
        for (int64_t k = 0; k < nz; k++)
            if (z[k] != 0)
                return NULL;
    }
    a->qmms[a->n_qmms++] = (struct pl_alg_qmm){.mm = id, .xq = dx->inputs[0],
                                               .xs = dx->inputs[1], .xz = dx->inputs[2],
                                               .wq = dw->inputs[0], .ws = dw->inputs[1],
                                               .wz = trans_b ? PL_TID_NONE : wz,
                                               .trans_b = trans_b, .c = c};
    a->drop[id] = true;
    if (!pl_rewrites_add(a->rewrites,
                         "DequantizeLinear -> %s '%s' (int8 weights) run as MatMulInteger "
                         "-> Cast -> Mul by the scales' product%s (integer sums, as ONNX Runtime "
                         "runs QDQ products; [graph] qdq = float keeps the float graph)",
                         mm->op, mm->name, c != PL_TID_NONE ? " -> Add of C" : ""))
        return pl_alg_oom();
    return NULL;
}

/* Writes product P into COPY: MatMulInteger -> Cast -> Mul, the last
 * writing the MatMul's output under the MatMul's name; the scales' product
 * a Mul of the two constants, which folding computes. */
static pl_status *pl_alg_write_qmm(const pl_graph *g, const pl_tid *alias, pl_graph *copy,
                                   const struct pl_alg_qmm *p)
{
    const pl_graph_node *mm = pl_graph_get_node(g, p->mm);
    const char *base = mm->name;
    char *ni = pl_alg_name(copy, base, "MatMulInteger", true);
    char *ti = pl_alg_name(copy, base, "MatMulInteger_out", false);
    char *nc = pl_alg_name(copy, base, "Cast", true);
    char *tc = pl_alg_name(copy, base, "Cast_out", false);
    char *ns = pl_alg_name(copy, base, "scale", true);
    char *ts = pl_alg_name(copy, base, "scale_out", false);
    char *nt = pl_alg_name(copy, base, "weights_T", true);
    char *tt = pl_alg_name(copy, base, "weights_T_out", false);
    char *nm = pl_alg_name(copy, base, "Mul", true);
    char *tm = pl_alg_name(copy, base, "Mul_out", false);
    pl_status *st = NULL;
    if (ni == NULL || ti == NULL || nc == NULL || tc == NULL || ns == NULL || ts == NULL ||
        nt == NULL || tt == NULL || nm == NULL || tm == NULL)
        st = pl_alg_oom();
    const char *wname = pl_graph_get_tensor(g, alias[p->wq])->name;
    if (st == NULL && p->trans_b) { /* [N, K] -> [K, N], computed by folding */
        pl_nid tr;
        const char *tout = tt;
        st = pl_graph_add_node(copy, nt, "Transpose", "", &wname, 1, &tout, 1, &tr);
        if (st == NULL)
            st = pl_graph_attr_ints(copy, tr, "perm", (const int64_t[]){1, 0}, 2);
        wname = tt;
    }
    const char *ins[4] = {pl_graph_get_tensor(g, alias[p->xq])->name, wname,
                          pl_graph_get_tensor(g, alias[p->xz])->name,
                          p->wz != PL_TID_NONE ? pl_graph_get_tensor(g, alias[p->wz])->name : NULL};
    const char *out = ti;
    if (st == NULL)
        st = pl_graph_add_node(copy, ni, "MatMulInteger", "", ins, p->wz != PL_TID_NONE ? 4 : 3,
                               &out, 1, NULL);
    pl_nid cast;
    const char *cin = ti;
    out = tc;
    if (st == NULL)
        st = pl_graph_add_node(copy, nc, "Cast", "", &cin, 1, &out, 1, &cast);
    if (st == NULL)
        st = pl_graph_attr_int(copy, cast, "to", 1 /* FLOAT */);
    const char *sins[2] = {pl_graph_get_tensor(g, alias[p->xs])->name,
                           pl_graph_get_tensor(g, alias[p->ws])->name};
    out = ts;
    if (st == NULL)
        st = pl_graph_add_node(copy, ns, "Mul", "", sins, 2, &out, 1, NULL);
    const char *mins[2] = {tc, ts};
    out = p->c != PL_TID_NONE ? tm : pl_graph_get_tensor(g, mm->outputs[0])->name;
    if (st == NULL)
        st = pl_graph_add_node(copy, p->c != PL_TID_NONE ? nm : base, "Mul", "", mins, 2, &out,
                               1, NULL);
    const char *ains[2] = {tm, p->c != PL_TID_NONE ? pl_graph_get_tensor(g, alias[p->c])->name
                                                   : NULL};
    out = pl_graph_get_tensor(g, mm->outputs[0])->name;
    if (st == NULL && p->c != PL_TID_NONE)
        st = pl_graph_add_node(copy, base, "Add", "", ains, 2, &out, 1, NULL);
    pl_free(nt);
    pl_free(tt);
    pl_free(nm);
    pl_free(tm);
    pl_free(ni);
    pl_free(ti);
    pl_free(nc);
    pl_free(tc);
    pl_free(ns);
    pl_free(ts);
    return st;
}

/* Gives node ID of COPY the int, float, ints, floats and string attributes
 * of N (the kinds the ops these rewrites copy have). */
static pl_status *pl_alg_copy_attrs(pl_graph *copy, pl_nid id, const pl_graph_node *n)
{
    pl_status *st = NULL;
    for (size_t k = 0; st == NULL && k < n->n_attrs; k++) {
        const pl_attr *at = &n->attrs[k];
        if (at->kind == PL_ATTR_INT)
            st = pl_graph_attr_int(copy, id, at->name, at->i);
        else if (at->kind == PL_ATTR_INTS)
            st = pl_graph_attr_ints(copy, id, at->name, at->ints, at->n);
        else if (at->kind == PL_ATTR_STRING)
            st = pl_graph_attr_string(copy, id, at->name, at->s, at->s_len);
        else if (at->kind == PL_ATTR_FLOAT)
            st = pl_graph_attr_float(copy, id, at->name, at->f);
        else if (at->kind == PL_ATTR_FLOATS)
            st = pl_graph_attr_floats(copy, id, at->name, at->floats, at->n);
    }
    return st;
}

/* Writes QLinearConv P into COPY: the Conv's name and attributes, the
 * QuantizeLinear's output. */
static pl_status *pl_alg_write_qconv(const pl_graph *g, const pl_tid *alias, pl_graph *copy,
                                     const struct pl_alg_qconv *p)
{
    const pl_graph_node *c = pl_graph_get_node(g, p->conv), *q = pl_graph_get_node(g, p->q);
    const char *ins[9];
    size_t n = p->in[8] != PL_TID_NONE ? 9 : 8;
    for (size_t k = 0; k < n; k++)
        ins[k] = pl_graph_get_tensor(g, alias[p->in[k]])->name;
    const char *out = pl_graph_get_tensor(g, q->outputs[0])->name;
    pl_nid id;
    pl_status *st = pl_graph_add_node(copy, c->name, "QLinearConv", "", ins, n, &out, 1, &id);
    return st != NULL ? st : pl_alg_copy_attrs(copy, id, c);
}

static pl_status *pl_alg_write_qpool(const pl_graph *g, const pl_tid *alias, pl_graph *copy,
                                     const struct pl_alg_qpool *p)
{
    const pl_graph_node *mp = pl_graph_get_node(g, p->pool), *q = pl_graph_get_node(g, p->q);
    const char *in = pl_graph_get_tensor(g, alias[p->x])->name;
    const char *out = pl_graph_get_tensor(g, q->outputs[0])->name;
    pl_nid id;
    pl_status *st = pl_graph_add_node(copy, mp->name, "MaxPool", "", &in, 1, &out, 1, &id);
    return st != NULL ? st : pl_alg_copy_attrs(copy, id, mp);
}

static pl_status *pl_alg_write_qbin(const pl_graph *g, const pl_tid *alias, pl_graph *copy,
                                    const struct pl_alg_qbin *p)
{
    const pl_graph_node *n = pl_graph_get_node(g, p->op), *q = pl_graph_get_node(g, p->q);
    const char *ins[8];
    for (size_t k = 0; k < 8; k++)
        ins[k] = pl_graph_get_tensor(g, alias[p->in[k]])->name;
    const char *out = pl_graph_get_tensor(g, q->outputs[0])->name;
    if (pl_graph_opset(copy, "com.microsoft") < 1)
        PL_RETURN_IF_ERROR(pl_graph_set_opset(copy, "com.microsoft", 1));
    return pl_graph_add_node(copy, n->name, p->mul ? "QLinearMul" : "QLinearAdd", "com.microsoft",
                             ins, 8, &out, 1, NULL);
}

/* ---- 8-bit elementwise chains as a table lookup ---------------------------------- */

/* Whether T is a constant (once folded) of one value: a scale, a zero
 * point, a Clip bound, a scalar operand. */
static bool pl_alg_lut_scalar(const struct pl_alg *a, pl_tid t)
{
    if (t == PL_TID_NONE || !a->is_const[t])
        return false;
    const pl_graph_tensor *ti = pl_graph_get_tensor(a->g, t);
    size_t n;
    return ti->ndim >= 0 && pl_dims_elements(ti->dims, ti->ndim, &n) && n == 1;
}

/* Whether node N is elementwise in the sense pl_alg_lut needs: each
 * output value a function of the values at the same place of its data
 * inputs, every other input a one-value constant. */
static bool pl_alg_lut_op(const struct pl_alg *a, const pl_graph_node *n)
{
    static const char *const unary[] = {
        "Sigmoid", "Tanh", "Relu", "LeakyRelu", "HardSigmoid", "HardSwish", "Elu", "Selu",
        "Softplus", "Softsign", "Exp", "Neg", "Abs", "Erf", "Sqrt", "Reciprocal", "Celu",
        "Mish", "Clip", "DequantizeLinear", "QuantizeLinear"};
    static const char *const binary[] = {"Add", "Sub", "Mul", "Div"};
    static const char *const ms[] = {"QLinearSigmoid", "QLinearLeakyRelu", "QLinearMul",
                                     "QLinearAdd"};
    if (n->n_outputs != 1 || n->outputs[0] == PL_TID_NONE || n->n_formal_inputs < 1)
        return false;
    size_t data_mask = 0; /* inputs that may carry data */
    if (pl_alg_default_domain(n)) {
        for (size_t k = 0; k < sizeof unary / sizeof *unary && data_mask == 0; k++)
            data_mask = strcmp(n->op, unary[k]) == 0 ? 1u : 0u;
        for (size_t k = 0; k < sizeof binary / sizeof *binary && data_mask == 0; k++)
            data_mask = strcmp(n->op, binary[k]) == 0 ? 3u : 0u;
        if ((strcmp(n->op, "DequantizeLinear") == 0 || strcmp(n->op, "QuantizeLinear") == 0) &&
            pl_alg_attr_int(n, "block_size", 0) != 0)
            return false;
    } else if (strcmp(n->domain, "com.microsoft") == 0) {
        for (size_t k = 0; k < sizeof ms / sizeof *ms && data_mask == 0; k++)
            data_mask = strcmp(n->op, ms[k]) == 0 ? (k < 2 ? 1u : 9u) : 0u;
    }
    if (data_mask == 0)
        return false;
    for (size_t i = 0; i < n->n_formal_inputs; i++) {
        pl_tid t = n->inputs[i];
        if (t == PL_TID_NONE || (data_mask >> i & 1u))
            continue;
        if (!pl_alg_lut_scalar(a, t))
            return false;
    }
    return true;
}

/* Whether data input T of a cone node is a leaf of it: not a one-value
 * constant (those are parameters). */
static bool pl_alg_lut_data(const struct pl_alg *a, pl_tid t)
{
    return t != PL_TID_NONE && !pl_alg_lut_scalar(a, t);
}

static bool pl_alg_lut_has(const struct pl_alg_lut *p, pl_nid id)
{
    for (size_t k = 0; k < p->n; k++)
        if (p->cone[k] == id)
            return true;
    return false;
}

/* Whether P's cone is a region of its own: every node's output of X's
 * dims, read only inside the cone (but the sink's), replaceable. */
static bool pl_alg_lut_closed(const struct pl_alg *a, const struct pl_alg_lut *p)
{
    const pl_graph *g = a->g;
    const pl_graph_tensor *xt = pl_graph_get_tensor(g, p->x);
    if (xt->ndim < 0 || !pl_alg_is8(xt->dtype))
        return false;
    for (int32_t d = 0; d < xt->ndim; d++)
        if (xt->dims[d] < 0)
            return false;
    for (size_t k = 0; k < p->n; k++) {
        const pl_graph_node *c = pl_graph_get_node(g, p->cone[k]);
        const pl_graph_tensor *ot = pl_graph_get_tensor(g, c->outputs[0]);
        if (ot->ndim != xt->ndim)
            return false;
        for (int32_t d = 0; d < xt->ndim; d++)
            if (ot->dims[d] != xt->dims[d])
                return false;
        if (p->cone[k] == p->sink)
            continue;
        if (!pl_alg_replaceable(a, c->outputs[0]))
            return false;
        for (size_t u = 0; u < ot->n_consumers; u++)
            if (!pl_alg_lut_has(p, ot->consumers[u]))
                return false;
        /* nor read through an alias: the readers of a QuantizeLinear ->
         * DequantizeLinear pair pl_alg_requant removed read its input */
        if (a->alias_read[c->outputs[0]])
            return false;
    }
    return true;
}

/* Node ID as the last of a chain of elementwise nodes from one 8-bit
 * tensor to an 8-bit result (QOperator SiLU: QLinearMul(x,
 * QLinearSigmoid(x)); QDQ: DequantizeLinear -> Sigmoid -> QuantizeLinear
 * -> DequantizeLinear -> Mul -> QuantizeLinear; hard-swish; a leaky ReLU
 * between a dequantization and a quantization): every output of the
 * chain depends on one byte, so the chain is a table of 256. The cone
 * grows from the sink through the producer of its latest data input
 * until one 8-bit tensor is left. */
static pl_status *pl_alg_lut(struct pl_alg *a, pl_nid id)
{
    const pl_graph *g = a->g;
    const pl_graph_node *s = pl_graph_get_node(g, id);
    if (!pl_alg_lut_op(a, s) || !pl_alg_is8(pl_graph_get_tensor(g, s->outputs[0])->dtype))
        return NULL;
    struct pl_alg_lut p = {.sink = id, .n = 1, .cone = {id}};
    for (;;) {
        /* the frontier: data inputs not made inside the cone */
        pl_tid only = PL_TID_NONE, latest = PL_TID_NONE;
        size_t latest_pos = 0;
        for (size_t k = 0; k < p.n; k++) {
            const pl_graph_node *c = pl_graph_get_node(g, p.cone[k]);
            for (size_t i = 0; i < c->n_formal_inputs; i++) {
                pl_tid t = c->inputs[i];
                if (!pl_alg_lut_data(a, t))
                    continue;
                pl_nid w = pl_graph_get_tensor(g, t)->producer;
                if (w != PL_NID_NONE && pl_alg_lut_has(&p, w))
                    continue;
                if (only == PL_TID_NONE)
                    only = t;
                if (w != PL_NID_NONE && !a->drop[w] &&
                    pl_alg_lut_op(a, pl_graph_get_node(g, w)) &&
                    (latest == PL_TID_NONE || a->pos[w] > latest_pos)) {
                    latest = t;
                    latest_pos = a->pos[w];
                }
            }
        }
        bool single = only != PL_TID_NONE;
        for (size_t k = 0; single && k < p.n; k++) {
            const pl_graph_node *c = pl_graph_get_node(g, p.cone[k]);
            for (size_t i = 0; single && i < c->n_formal_inputs; i++) {
                pl_tid t = c->inputs[i];
                if (!pl_alg_lut_data(a, t) || t == only)
                    continue;
                pl_nid w = pl_graph_get_tensor(g, t)->producer;
                single = w != PL_NID_NONE && pl_alg_lut_has(&p, w);
            }
        }
        if (single && pl_alg_is8(pl_graph_get_tensor(g, only)->dtype)) {
            if (a->is_const[only])
                return NULL; /* folding computes it (a table's own nodes) */
            p.x = only;
            break;
        }
        if (latest == PL_TID_NONE || p.n == PL_ALG_LUT_MAX)
            return NULL;
        p.cone[p.n++] = pl_graph_get_tensor(g, latest)->producer;
    }
    if (p.n < 2 || !pl_alg_lut_closed(a, &p))
        return NULL;
    /* topological order, the sink last */
    for (size_t i = 1; i < p.n; i++)
        for (size_t j = i; j > 0 && a->pos[p.cone[j - 1]] > a->pos[p.cone[j]]; j--) {
            pl_nid t = p.cone[j];
            p.cone[j] = p.cone[j - 1];
            p.cone[j - 1] = t;
        }
    a->luts[a->n_luts++] = p;
    for (size_t k = 0; k < p.n; k++)
        a->drop[p.cone[k]] = true;
    if (!pl_rewrites_add(a->rewrites,
                         "%zu elementwise nodes from '%s' to %s '%s' run as one TableLookup8 "
                         "'%s' (every value depends on one byte: the nodes run once on the 256 "
                         "bytes, folded to a table)",
                         p.n, pl_graph_get_tensor(g, p.x)->name, s->op, s->name, s->name))
        return pl_alg_oom();
    return NULL;
}

/* Writes lookup P into COPY: a ramp of the 256 bytes, the cone's nodes
 * copied to read it (their results the table), and the TableLookup8
 * named like the sink, writing its output. */
static pl_status *pl_alg_write_lut(const struct pl_alg *a, pl_graph *copy,
                                   const struct pl_alg_lut *p)
{
    const pl_graph *g = a->g;
    const pl_graph_node *sink = pl_graph_get_node(g, p->sink);
    uint8_t ramp[256];
    for (int b = 0; b < 256; b++)
        ramp[b] = (uint8_t)b;
    int64_t len = 256;
    char *names[PL_ALG_LUT_MAX + 1] = {NULL}; /* the copies' outputs, then the ramp */
    pl_status *st = pl_alg_constant(copy, sink->name, "lut_bytes",
                                    pl_graph_get_tensor(g, p->x)->dtype, 1, &len, ramp,
                                    sizeof ramp, &names[PL_ALG_LUT_MAX]);
    for (size_t k = 0; st == NULL && k < p->n; k++) {
        const pl_graph_node *c = pl_graph_get_node(g, p->cone[k]);
        const char *ins[PL_ALG_LUT_INPUTS];
        size_t n_in = c->n_formal_inputs < PL_ALG_LUT_INPUTS ? c->n_formal_inputs
                                                                   : PL_ALG_LUT_INPUTS;
        for (size_t i = 0; i < n_in; i++) {
            pl_tid t = c->inputs[i];
            ins[i] = "";
            if (t == PL_TID_NONE)
                continue;
            if (t == p->x) {
                ins[i] = names[PL_ALG_LUT_MAX];
                continue;
            }
            pl_nid w = pl_graph_get_tensor(g, t)->producer;
            for (size_t j = 0; j < k; j++)
                if (p->cone[j] == w)
                    ins[i] = names[j];
            if (ins[i][0] == '\0')
                ins[i] = pl_graph_get_tensor(g, a->alias[t])->name;
        }
        char *nm = pl_alg_name(copy, c->name, "lut", true);
        names[k] = pl_alg_name(copy, c->name, "lut", false);
        pl_nid nid = PL_NID_NONE;
        st = nm != NULL && names[k] != NULL
                 ? pl_graph_add_node(copy, nm, c->op, c->domain, ins, n_in,
                                     (const char *const[]){names[k]}, 1, &nid)
                 : pl_alg_oom();
        pl_free(nm);
        if (st == NULL)
            st = pl_alg_copy_attrs(copy, nid, c);
    }
    if (st == NULL) {
        const char *ins[2] = {pl_graph_get_tensor(g, a->alias[p->x])->name, names[p->n - 1]};
        const char *out = pl_graph_get_tensor(g, sink->outputs[0])->name;
        st = pl_graph_add_node(copy, sink->name, "TableLookup8", "ai.plinth", ins, 2, &out, 1,
                               NULL);
    }
    for (size_t k = 0; k <= PL_ALG_LUT_MAX; k++)
        pl_free(names[k]);
    return st;
}

/* ---- dead nodes ---------------------------------------------------------------- */

/* Drops the nodes no graph output depends on once the rewrites above are
 * made (a Shape whose Gather became a constant, nodes an exporter left
 * unread), walking the graph backwards from its outputs and the names
 * bodies read; *OUT_N counts them. */
static pl_status *pl_alg_dead(struct pl_alg *a, const pl_nid *order, size_t *out_n)
{
    const pl_graph *g = a->g;
    size_t nn = pl_graph_node_count(g), nt = pl_graph_tensor_count(g);
    bool *needed = pl_calloc(nt ? nt : 1, sizeof *needed);
    if (needed == NULL)
        return pl_alg_oom();
    for (size_t t = 0; t < nt; t++)
        needed[t] = !pl_alg_replaceable(a, (pl_tid)t);
    for (size_t i = nn; i-- > 0;) {
        pl_nid id = order[i];
        const pl_graph_node *n = pl_graph_get_node(g, id);
        bool live = false;
        for (size_t o = 0; o < n->n_outputs && !live; o++)
            live = n->outputs[o] != PL_TID_NONE && needed[n->outputs[o]];
        /* (a node a rewrite replaced may be dead too: its replacement is
         * then not written, and what only it read goes as well) */
        a->dead[id] = !live;
        if (!live && !a->drop[id]) {
            a->drop[id] = true;
            (*out_n)++;
            if (!pl_rewrites_add(a->rewrites, "%s '%s' removed: no graph output depends on it",
                                 n->op, n->name)) {
                pl_free(needed);
                return pl_alg_oom();
            }
            continue;
        }
        if (!live)
            continue;
        /* A folded shape computation reads nothing; a folded batch norm's
         * output is its Conv's (aliased), and its parameters are read by
         * the nodes that make the Conv's new weights; an Add fused into a
         * Gemm reads the MatMul's inputs; a Transpose made one with the
         * Transpose before it reads that one's input. */
        bool reads = !a->drop[id];
        for (size_t k = 0; k < a->n_perms; k++)
            if (a->perms[k].node == id) {
                needed[a->perms[k].src] = true;
                reads = false;
            }
        for (size_t k = 0; k < a->n_bns; k++)
            if (a->bns[k].conv == id) {
                const pl_graph_node *bn = pl_graph_get_node(g, a->bns[k].bn);
                for (size_t j = 1; a->bns[k].c == PL_TID_NONE && j < 5; j++)
                    needed[a->alias[bn->inputs[j]]] = true;
                if (a->bns[k].c != PL_TID_NONE)
                    needed[a->alias[a->bns[k].c]] = true;
            }
        /* a lookup reads X; its table's nodes read the cone's parameters */
        for (size_t k = 0; k < a->n_luts; k++)
            if (a->luts[k].sink == id) {
                const struct pl_alg_lut *p = &a->luts[k];
                needed[a->alias[p->x]] = true;
                for (size_t c = 0; c < p->n; c++) {
                    const pl_graph_node *cn = pl_graph_get_node(g, p->cone[c]);
                    for (size_t j = 0; j < cn->n_formal_inputs; j++) {
                        pl_tid t = cn->inputs[j];
                        if (t == PL_TID_NONE)
                            continue;
                        pl_nid w = pl_graph_get_tensor(g, t)->producer;
                        if (w == PL_NID_NONE || !pl_alg_lut_has(p, w))
                            needed[a->alias[t]] = true;
                    }
                }
            }
        for (size_t k = 0; k < a->n_qconvs; k++)
            if (a->qconvs[k].q == id)
                for (size_t j = 0; j < 9; j++)
                    if (a->qconvs[k].in[j] != PL_TID_NONE)
                        needed[a->alias[a->qconvs[k].in[j]]] = true;
        for (size_t k = 0; k < a->n_qpools; k++)
            if (a->qpools[k].q == id)
                needed[a->alias[a->qpools[k].x]] = true;
        for (size_t k = 0; k < a->n_qbins; k++)
            if (a->qbins[k].q == id)
                for (size_t j = 0; j < 8; j++)
                    needed[a->alias[a->qbins[k].in[j]]] = true;
        /* an int8 product reads the quantized values and their parameters */
        for (size_t k = 0; k < a->n_qmms; k++)
            if (a->qmms[k].mm == id) {
                const struct pl_alg_qmm *q = &a->qmms[k];
                const pl_tid ts[7] = {q->xq, q->xs, q->xz, q->wq, q->ws, q->wz, q->c};
                for (size_t j = 0; j < 7; j++)
                    if (ts[j] != PL_TID_NONE)
                        needed[a->alias[ts[j]]] = true;
                reads = false;
            }
        /* a batch norm folded into a MatMul: its input and parameters
         * feed the Add in its place and the new weights */
        for (size_t k = 0; k < a->n_bnmms; k++)
            if (a->bnmms[k].bn == id)
                reads = true;
        for (size_t k = 0; k < a->n_einsums; k++)
            if (a->einsums[k].node == id)
                reads = true; /* its inputs feed the MatMul in its place */
        for (size_t k = 0; k < a->n_bmms; k++)
            if (a->bmms[k].node == id)
                reads = true; /* its inputs feed the Reshapes in its place */
        /* a layer normalisation reads X and its parameters */
        for (size_t k = 0; k < a->n_lns; k++)
            if (a->lns[k].last == id) {
                needed[a->alias[a->lns[k].x]] = needed[a->alias[a->lns[k].gamma]] = true;
                if (a->lns[k].beta != PL_TID_NONE)
                    needed[a->alias[a->lns[k].beta]] = true;
                reads = false;
            }
        for (size_t k = 0; k < a->n_gemms; k++)
            if (a->gemms[k].add == id) {
                const pl_graph_node *mm = pl_graph_get_node(g, a->gemms[k].mm);
                reads = true;
                needed[a->alias[mm->inputs[0]]] = needed[a->alias[mm->inputs[1]]] = true;
            }
        /* a product whose rows were merged: its inputs (and the Add's
         * constant, when the Add went in) feed the Reshapes and the Gemm */
        for (size_t k = 0; k < a->n_flats; k++) {
            const struct pl_alg_flat *fl = &a->flats[k];
            for (size_t r = 0; r < fl->n_region; r++)
                if (fl->region[r] == id)
                    reads = true; /* rewritten after the product, reading the same */
            if (fl->add == id || (fl->add == PL_NID_NONE && fl->mm == id)) {
                const pl_graph_node *mm = pl_graph_get_node(g, fl->mm);
                needed[a->alias[mm->inputs[0]]] = needed[a->alias[mm->inputs[1]]] = true;
                if (fl->c != PL_TID_NONE)
                    needed[fl->c] = true;
                reads = false;
            }
        }
        /* products of one input side by side: the one product reads X and
         * every matrix (and every Add's constant), whichever is live */
        for (size_t k = 0; k < a->n_sibs; k++) {
            const struct pl_alg_sib *sb = &a->sibs[k];
            for (size_t j = 0; j < sb->n; j++) {
                if ((sb->add[j] != PL_NID_NONE ? sb->add[j] : sb->mm[j]) != id)
                    continue;
                needed[a->alias[sb->x]] = true;
                for (size_t m = 0; m < sb->n; m++) {
                    needed[a->alias[pl_graph_get_node(g, sb->mm[m])->inputs[1]]] = true;
                    if (sb->c[m] != PL_TID_NONE)
                        needed[sb->c[m]] = true;
                }
                reads = false;
            }
        }
        for (size_t k = 0; reads && k < n->n_inputs; k++)
            if (n->inputs[k] != PL_TID_NONE)
                needed[a->alias[n->inputs[k]]] = true;
    }
    pl_free(needed);
    return NULL;
}

/* ---- building the copy ------------------------------------------------------- */

/* A name for a new tensor or node of COPY: BASE + SUFFIX, with a number
 * when that is taken. Caller frees. */
char *pl_alg_name(const pl_graph *copy, const char *base, const char *suffix, bool node)
{
    for (int k = 0; k < 1000; k++) {
        char *s = k == 0 ? pl_strdupf("%s/%s", base, suffix)
                         : pl_strdupf("%s/%s_%d", base, suffix, k);
        if (s == NULL)
            return NULL;
        if (node ? pl_graph_find_node(copy, s) == PL_NID_NONE
                 : pl_graph_find_tensor(copy, s) == PL_TID_NONE)
            return s;
        pl_free(s);
    }
    return NULL;
}

/* Adds node OP (named after BASE) reading IN (N_IN tensor names) to COPY;
 * its one output's new name into *OUT_NAME (caller frees). */
pl_status *pl_alg_node(pl_graph *copy, const char *base, const char *op,
                       const char *const *in, size_t n_in, char **out_name)
{
    char *name = pl_alg_name(copy, base, op, true);
    char *out = pl_alg_name(copy, base, op, false);
    pl_status *st = name && out ? NULL : pl_alg_oom();
    if (st == NULL)
        st = pl_graph_add_node(copy, name, op, "", in, n_in, (const char *const[]){out}, 1, NULL);
    pl_free(name);
    if (st != NULL) {
        pl_free(out);
        return st;
    }
    *out_name = out;
    return NULL;
}

/* A new constant tensor of COPY named after BASE: NDIM dims DIMS, DATA. */
pl_status *pl_alg_constant(pl_graph *copy, const char *base, const char *suffix, pl_dtype dt,
                           int32_t ndim, const int64_t *dims, const void *data, size_t nbytes,
                           char **out_name)
{
    char *name = pl_alg_name(copy, base, suffix, false);
    pl_tid t;
    pl_status *st = name ? pl_graph_tensor_get_or_add(copy, name, &t) : pl_alg_oom();
    if (st == NULL)
        st = pl_graph_set_type(copy, t, dt, ndim, dims, NULL);
    if (st == NULL)
        st = pl_graph_set_constant(copy, t, data, nbytes);
    if (st != NULL) {
        pl_free(name);
        return st;
    }
    *out_name = name;
    return NULL;
}

/* Writes into COPY the arithmetic that takes P's node into its Conv (CONV,
 * its id in the copy), and points the Conv at the new weights and bias:
 * - BatchNormalization: s = scale / sqrt(var + eps), W' = W * s,
 *   b' = (b - mean) * s + B (b absent: -mean * s + B);
 * - Mul by c: W' = W * c, b' = b * c (no b: none);
 * - Add of c: W' = W, b' = b + c (no b: zeros + c).
 * s and c are per output channel (or one value), reshaped to [n] and to
 * the weights' channel axis. */
/* Writes pair P whose target is a BatchNormalization (BN, its id in the
 * copy): its scale and shift as the copy's node reads them now (an earlier
 * fold of this pass may have made them), times c for a Mul; c added to
 * the shift for an Add. */
static pl_status *pl_alg_write_bn_affine(const pl_graph *g, const pl_tid *alias, pl_graph *copy,
                                         const struct pl_alg_bn *p, pl_nid bn)
{
    const pl_graph_node *n = pl_graph_get_node(g, p->bn), *tn = pl_graph_get_node(g, p->conv);
    const pl_graph_node *cbn = pl_graph_get_node(copy, bn);
    if (cbn == NULL || strcmp(cbn->name, tn->name) != 0 || cbn->n_inputs != 5)
        return pl_status_create(PL_CODE_INTERNAL, "folding '%s' into '%s': the copy's node %zu "
                                                  "is not that BatchNormalization",
                                n->name, tn->name, (size_t)bn);
    /* (adding nodes to the copy may move its nodes: CBN's inputs kept) */
    pl_tid x_now = cbn->inputs[0], mean_now = cbn->inputs[3], var_now = cbn->inputs[4];
    char *scale_now = pl_strdup(pl_graph_get_tensor(copy, cbn->inputs[1])->name);
    char *shift_now = pl_strdup(pl_graph_get_tensor(copy, cbn->inputs[2])->name);
    const pl_graph_tensor *ct = pl_graph_get_tensor(g, alias[p->c]);
    int64_t count = 1, one = 1;
    for (int32_t d = 0; d < ct->ndim; d++)
        count *= ct->dims[d];
    char *t[4] = {NULL};
    const char *nm = n->name;
    pl_status *st = scale_now && shift_now ? NULL : pl_alg_oom();
    if (st == NULL) /* c as a vector of one value or of one per channel */
        st = pl_alg_constant(copy, nm, "vector_shape", PL_DTYPE_I64, 1, &one, &count,
                             sizeof count, &t[0]);
    if (st == NULL)
        st = pl_alg_node(copy, nm, "Reshape", (const char *const[]){ct->name, t[0]}, 2, &t[1]);
    bool mul = strcmp(n->op, "Mul") == 0;
    const char *scale = scale_now, *shift = t[3];
    if (st == NULL && mul)
        st = pl_alg_node(copy, nm, "Mul", (const char *const[]){scale_now, t[1]}, 2, &t[2]);
    if (st == NULL && mul)
        scale = t[2];
    if (st == NULL)
        st = pl_alg_node(copy, nm, mul ? "Mul" : "Add", (const char *const[]){shift_now, t[1]},
                         2, &t[3]);
    if (st == NULL) {
        shift = t[3];
        pl_tid ins[5] = {x_now, pl_graph_find_tensor(copy, scale),
                         pl_graph_find_tensor(copy, shift), mean_now, var_now};
        st = pl_graph_node_set_inputs(copy, bn, ins, 5);
    }
    for (size_t k = 0; k < sizeof t / sizeof *t; k++)
        pl_free(t[k]);
    pl_free(scale_now);
    pl_free(shift_now);
    return st;
}

static pl_status *pl_alg_write_bn(const pl_graph *g, const pl_tid *alias, pl_graph *copy,
                                  const struct pl_alg_bn *p, pl_nid conv)
{
    if (strcmp(pl_graph_get_node(g, p->conv)->op, "BatchNormalization") == 0)
        return pl_alg_write_bn_affine(g, alias, copy, p, conv);
    const pl_graph_node *n = pl_graph_get_node(g, p->bn), *cv = pl_graph_get_node(g, p->conv);
    const pl_graph_tensor *w = pl_graph_get_tensor(g, alias[cv->inputs[1]]);
    bool transposed = strcmp(cv->op, "ConvTranspose") == 0;
    /* The weights and bias the copy's Conv reads now: its own, or those an
     * earlier fold of this pass into the same Conv computed (copied: adding
     * to the copy moves its tensors). */
    const pl_graph_node *ccv = pl_graph_get_node(copy, conv);
    if (ccv == NULL || strcmp(ccv->name, cv->name) != 0 || ccv->n_inputs < 2)
        return pl_status_create(PL_CODE_INTERNAL, "folding '%s' into '%s': the copy's node %zu "
                                                  "is not that Conv",
                                n->name, cv->name, (size_t)conv);
    pl_tid cb = ccv->n_inputs > 2 ? ccv->inputs[2] : PL_TID_NONE;
    char *w_now = pl_strdup(pl_graph_get_tensor(copy, ccv->inputs[1])->name);
    char *b_now = cb != PL_TID_NONE ? pl_strdup(pl_graph_get_tensor(copy, cb)->name) : NULL;
    if (w_now == NULL || (cb != PL_TID_NONE && b_now == NULL)) {
        pl_free(w_now);
        pl_free(b_now);
        return pl_alg_oom();
    }
    bool bn = strcmp(n->op, "BatchNormalization") == 0, mul = strcmp(n->op, "Mul") == 0;
    const char *nm = n->name;
    /* Every tensor read as the copy reads it (an earlier rewrite of this
     * pass may have made it another's alias: Conv → Add → Conv). */
#define PL_ALG_T(t) pl_graph_get_tensor(g, alias[t])->name
    bool f64 = PL_DTYPE_EQ(w->dtype, PL_DTYPE_F64);
    int64_t m = transposed ? w->dims[1] : w->dims[0];
    int64_t shape[PL_GRAPH_MAX_RANK];
    for (int32_t d = 0; d < w->ndim; d++)
        shape[d] = 1;
    int64_t rank = w->ndim, one = 1;
    char *t[12] = {NULL};
    const char *scale = NULL, *bias = b_now;
    int64_t scale_n = m;  /* values in SCALE: one per channel, or one */
    pl_status *st = NULL;
    if (bn) {
        double eps = pl_alg_attr_f(n, "epsilon", 1e-5);
        float eps32 = (float)eps;
        st = pl_alg_constant(copy, nm, "epsilon", w->dtype, 0, NULL,
                             f64 ? (const void *)&eps : (const void *)&eps32,
                             f64 ? sizeof eps : sizeof eps32, &t[0]);
        if (st == NULL)
            st = pl_alg_node(copy, nm, "Add", (const char *const[]){PL_ALG_T(n->inputs[4]), t[0]},
                             2, &t[1]);
        if (st == NULL)
            st = pl_alg_node(copy, nm, "Sqrt", (const char *const[]){t[1]}, 1, &t[2]);
        if (st == NULL)
            st = pl_alg_node(copy, nm, "Div", (const char *const[]){PL_ALG_T(n->inputs[1]), t[2]},
                             2, &t[3]);
        scale = t[3];
        const char *mean = PL_ALG_T(n->inputs[3]);
        if (st == NULL)
            st = bias ? pl_alg_node(copy, nm, "Sub", (const char *const[]){bias, mean}, 2, &t[4])
                      : pl_alg_node(copy, nm, "Neg", (const char *const[]){mean}, 1, &t[4]);
        if (st == NULL)
            st = pl_alg_node(copy, nm, "Mul", (const char *const[]){t[4], scale}, 2, &t[5]);
        if (st == NULL)
            st = pl_alg_node(copy, nm, "Add",
                             (const char *const[]){t[5], PL_ALG_T(n->inputs[2])}, 2, &t[6]);
        bias = t[6];
    } else {
        /* c as a vector of one value or of one per channel. */
        const pl_graph_tensor *ct = pl_graph_get_tensor(g, alias[p->c]);
        int64_t count = 1;
        for (int32_t d = 0; d < ct->ndim; d++)
            count *= ct->dims[d];
        st = pl_alg_constant(copy, nm, "vector_shape", PL_DTYPE_I64, 1, &one, &count,
                             sizeof count, &t[0]);
        if (st == NULL)
            st = pl_alg_node(copy, nm, "Reshape", (const char *const[]){ct->name, t[0]}, 2, &t[1]);
        if (mul) {
            scale = t[1];
            scale_n = count;
            if (st == NULL && bias != NULL)
                st = pl_alg_node(copy, nm, "Mul", (const char *const[]){bias, scale}, 2, &t[2]);
            bias = bias != NULL ? t[2] : NULL;
        } else {
            if (st == NULL && bias == NULL) {
                size_t bytes = (size_t)m * (f64 ? 8 : 4);
                void *zeros = pl_calloc(1, bytes);
                st = zeros ? pl_alg_constant(copy, nm, "zero_bias", w->dtype, 1, &m, zeros,
                                             bytes, &t[2])
                           : pl_alg_oom();
                pl_free(zeros);
                bias = t[2];
            }
            if (st == NULL)
                st = pl_alg_node(copy, nm, "Add", (const char *const[]){bias, t[1]}, 2, &t[3]);
            bias = t[3];
        }
    }
    const char *weights = w_now;
    if (st == NULL && scale != NULL) {
        shape[transposed ? 1 : 0] = scale_n;
        st = pl_alg_constant(copy, nm, "channel_shape", PL_DTYPE_I64, 1, &rank, shape,
                             (size_t)rank * sizeof *shape, &t[8]);
        if (st == NULL)
            st = pl_alg_node(copy, nm, "Reshape", (const char *const[]){scale, t[8]}, 2, &t[9]);
        if (st == NULL)  /* W' = W * s */
            st = pl_alg_node(copy, nm, "Mul", (const char *const[]){w_now, t[9]}, 2, &t[10]);
        weights = t[10];
    }
#undef PL_ALG_T
    if (st == NULL) {
        pl_tid ins[3] = {alias[cv->inputs[0]], pl_graph_find_tensor(copy, weights),
                         bias ? pl_graph_find_tensor(copy, bias) : PL_TID_NONE};
        st = pl_graph_node_set_inputs(copy, conv, ins, bias ? 3 : 2);
    }
    for (size_t k = 0; k < sizeof t / sizeof *t; k++)
        pl_free(t[k]);
    pl_free(w_now);
    pl_free(b_now);
    return st;
}

/* Writes pair P into COPY: s = scale / sqrt(var + eps), the MatMul (MM,
 * its id in the copy) reading W' = W * s (s along the last axis), and an
 * Add of B - mean * s to the BatchNormalization's input, writing its
 * output. */
static pl_status *pl_alg_write_bn_matmul(const pl_graph *g, const pl_tid *alias, pl_graph *copy,
                                         const struct pl_alg_bnmm *p, pl_nid mm)
{
    const pl_graph_node *n = pl_graph_get_node(g, p->bn), *m = pl_graph_get_node(g, p->mm);
    const pl_graph_tensor *w = pl_graph_get_tensor(g, alias[m->inputs[1]]);
    const char *nm = n->name;
#define PL_ALG_T(t) pl_graph_get_tensor(g, alias[t])->name
    double eps = pl_alg_attr_f(n, "epsilon", 1e-5);
    float eps32 = (float)eps;
    bool f64 = PL_DTYPE_EQ(w->dtype, PL_DTYPE_F64);
    char *t[8] = {NULL};
    pl_status *st = pl_alg_constant(copy, nm, "epsilon", w->dtype, 0, NULL,
                                    f64 ? (const void *)&eps : (const void *)&eps32,
                                    f64 ? sizeof eps : sizeof eps32, &t[0]);
    if (st == NULL)
        st = pl_alg_node(copy, nm, "Add", (const char *const[]){PL_ALG_T(n->inputs[4]), t[0]}, 2,
                         &t[1]);
    if (st == NULL)
        st = pl_alg_node(copy, nm, "Sqrt", (const char *const[]){t[1]}, 1, &t[2]);
    if (st == NULL)  /* s */
        st = pl_alg_node(copy, nm, "Div", (const char *const[]){PL_ALG_T(n->inputs[1]), t[2]}, 2,
                         &t[3]);
    if (st == NULL)  /* W' = W * s: s broadcasts along the last axis */
        st = pl_alg_node(copy, nm, "Mul", (const char *const[]){w->name, t[3]}, 2, &t[4]);
    if (st == NULL)
        st = pl_alg_node(copy, nm, "Mul", (const char *const[]){PL_ALG_T(n->inputs[3]), t[3]}, 2,
                         &t[5]);
    if (st == NULL)  /* B - mean * s */
        st = pl_alg_node(copy, nm, "Sub", (const char *const[]){PL_ALG_T(n->inputs[2]), t[5]}, 2,
                         &t[6]);
    if (st == NULL) {
        pl_tid ins[2] = {alias[m->inputs[0]], pl_graph_find_tensor(copy, t[4])};
        st = pl_graph_node_set_inputs(copy, mm, ins, 2);
    }
    if (st == NULL) {
        const char *add_in[2] = {PL_ALG_T(n->inputs[0]), t[6]};
        const char *out = pl_graph_get_tensor(g, n->outputs[0])->name;
        char *name = pl_alg_name(copy, nm, "Add", true);
        st = name ? pl_graph_add_node(copy, name, "Add", "", add_in, 2, &out, 1, NULL)
                  : pl_alg_oom();
        pl_free(name);
    }
#undef PL_ALG_T
    for (size_t k = 0; k < sizeof t / sizeof *t; k++)
        pl_free(t[k]);
    return st;
}

/* Writes crop P into COPY: the Slice of the weights, the Conv (ID in the
 * copy) reading it with the new kernel_shape and pads. */
static pl_status *pl_alg_write_crop(const pl_graph *g, const pl_tid *alias, pl_graph *copy,
                                    const struct pl_alg_crop *p, pl_nid id)
{
    const pl_graph_node *n = pl_graph_get_node(g, p->conv);
    int64_t starts[PL_GRAPH_MAX_RANK], ends[PL_GRAPH_MAX_RANK], axes[PL_GRAPH_MAX_RANK];
    for (int32_t i = 0; i < p->r; i++) {
        starts[i] = p->first[i];
        ends[i] = p->first[i] + p->k[i];
        axes[i] = 2 + i;
    }
    int64_t r = p->r;
    char *t[4] = {NULL};
    pl_status *st = pl_alg_constant(copy, n->name, "tap_starts", PL_DTYPE_I64, 1, &r, starts,
                                    (size_t)r * 8, &t[0]);
    if (st == NULL)
        st = pl_alg_constant(copy, n->name, "tap_ends", PL_DTYPE_I64, 1, &r, ends, (size_t)r * 8,
                             &t[1]);
    if (st == NULL)
        st = pl_alg_constant(copy, n->name, "tap_axes", PL_DTYPE_I64, 1, &r, axes, (size_t)r * 8,
                             &t[2]);
    if (st == NULL)
        st = pl_alg_node(copy, n->name, "Slice",
                         (const char *const[]){pl_graph_get_tensor(g, alias[n->inputs[1]])->name,
                                               t[0], t[1], t[2]},
                         4, &t[3]);
    if (st == NULL) {
        pl_tid ins[3] = {alias[n->inputs[0]], pl_graph_find_tensor(copy, t[3]),
                         n->n_formal_inputs > 2 && n->inputs[2] != PL_TID_NONE
                             ? alias[n->inputs[2]]
                             : PL_TID_NONE};
        st = pl_graph_node_set_inputs(copy, id, ins, ins[2] != PL_TID_NONE ? 3 : 2);
    }
    if (st == NULL) {
        pl_graph_node_remove_attr(copy, id, "kernel_shape");
        pl_graph_node_remove_attr(copy, id, "pads");
        pl_graph_node_remove_attr(copy, id, "auto_pad");
        st = pl_graph_attr_ints(copy, id, "kernel_shape", p->k, (size_t)p->r);
    }
    if (st == NULL)
        st = pl_graph_attr_ints(copy, id, "pads", p->pads, 2 * (size_t)p->r);
    for (size_t k = 0; k < sizeof t / sizeof *t; k++)
        pl_free(t[k]);
    return st;
}

/* Adds the Gemm of P to COPY, named like the MatMul and writing the Add's
 * output; attributes none (alpha = beta = 1, no transposes). */
static pl_status *pl_alg_write_gemm(const pl_graph *g, const pl_tid *alias, pl_graph *copy,
                                    const struct pl_alg_gemm *p)
{
    const pl_graph_node *mm = pl_graph_get_node(g, p->mm), *add = pl_graph_get_node(g, p->add);
    pl_tid c = add->inputs[0] == mm->outputs[0] ? add->inputs[1] : add->inputs[0];
    const char *ins[3] = {pl_graph_get_tensor(g, alias[mm->inputs[0]])->name,
                          pl_graph_get_tensor(g, alias[mm->inputs[1]])->name,
                          pl_graph_get_tensor(g, alias[c])->name};
    const char *out = pl_graph_get_tensor(g, add->outputs[0])->name;
    return pl_graph_add_node(copy, mm->name, "Gemm", "", ins, 3, &out, 1, NULL);
}

static pl_status *pl_alg_write_ln(const pl_graph *g, const pl_tid *alias, pl_graph *copy,
                                  const struct pl_alg_ln *p)
{
    const pl_graph_node *last = pl_graph_get_node(g, p->last);
    const char *ins[3] = {pl_graph_get_tensor(g, alias[p->x])->name,
                          pl_graph_get_tensor(g, alias[p->gamma])->name,
                          p->beta != PL_TID_NONE ? pl_graph_get_tensor(g, alias[p->beta])->name
                                                 : NULL};
    /* a [1, .., 1, C] scale or bias (Keras's) as the [C] the op takes */
    char *made[2] = {NULL, NULL};
    pl_status *st = NULL;
    for (int k = 0; k < 2 && st == NULL; k++) {
        pl_tid t = k == 0 ? p->gamma : p->beta;
        const pl_graph_tensor *ti = t != PL_TID_NONE ? pl_graph_get_tensor(g, alias[t]) : NULL;
        if (ti == NULL || ti->ndim == 1)
            continue;
        int64_t c = ti->dims[ti->ndim - 1];
        st = pl_alg_constant(copy, last->name, k == 0 ? "scale" : "bias", ti->dtype, 1, &c,
                             ti->data, ti->nbytes, &made[k]);
        if (st == NULL)
            ins[1 + k] = made[k];
    }
    const char *out = pl_graph_get_tensor(g, last->outputs[0])->name;
    pl_nid id;
    if (st == NULL)
        st = pl_graph_add_node(copy, last->name, "LayerNormalization", "", ins,
                               p->beta != PL_TID_NONE ? 3 : 2, &out, 1, &id);
    if (st == NULL)
        st = pl_graph_attr_int(copy, id, "axis", -1);
    if (st == NULL)
        st = pl_graph_attr_float(copy, id, "epsilon", p->eps);
    pl_free(made[0]);
    pl_free(made[1]);
    return st;
}

/* The id in the copy of node ID of G: G's, less the dropped nodes before
 * it. */
static pl_nid pl_alg_copy_id(const struct pl_alg *a, pl_nid id)
{
    pl_nid out = id;
    for (pl_nid j = 0; j < id; j++)
        out -= a->drop[j] ? 1 : 0;
    return out;
}

pl_status *pl_graph_prefold(const pl_graph *g, bool qdq_int8, bool qlinear_binary,
                            pl_graph **out_graph, pl_rewrites *rewrites)
{
    *out_graph = NULL;
    size_t nn = pl_graph_node_count(g), nt = pl_graph_tensor_count(g);
    struct pl_alg a = {.g = g, .rewrites = rewrites, .qdq_int8 = qdq_int8,
                       .qlinear_binary = qlinear_binary,
                       .body_names = {.alloc = pl_alloc_current()}};
    a.is_const = pl_calloc(nt ? nt : 1, sizeof *a.is_const);
    a.drop = pl_calloc(nn ? nn : 1, sizeof *a.drop);
    a.alias = pl_calloc(nt ? nt : 1, sizeof *a.alias);
    a.consts = pl_calloc(nn ? nn : 1, sizeof *a.consts);
    a.bns = pl_calloc(nn ? nn : 1, sizeof *a.bns);
    a.gemms = pl_calloc(nn ? nn : 1, sizeof *a.gemms);
    a.lns = pl_calloc(nn ? nn : 1, sizeof *a.lns);
    a.bnmms = pl_calloc(nn ? nn : 1, sizeof *a.bnmms);
    a.einsums = pl_calloc(nn ? nn : 1, sizeof *a.einsums);
    a.bmms = pl_calloc(nn ? nn : 1, sizeof *a.bmms);
    a.perms = pl_calloc(nn ? nn : 1, sizeof *a.perms);
    a.crops = pl_calloc(nn ? nn : 1, sizeof *a.crops);
    a.qconvs = pl_calloc(nn ? nn : 1, sizeof *a.qconvs);
    a.qpools = pl_calloc(nn ? nn : 1, sizeof *a.qpools);
    a.qbins = pl_calloc(nn ? nn : 1, sizeof *a.qbins);
    a.qmms = pl_calloc(nn ? nn : 1, sizeof *a.qmms);
    a.scatters = pl_calloc(nn ? nn : 1, sizeof *a.scatters);
    a.flats = pl_calloc(nn ? nn : 1, sizeof *a.flats);
    a.luts = pl_calloc(nn ? nn : 1, sizeof *a.luts);
    a.sibs = pl_calloc(nn ? nn : 1, sizeof *a.sibs);
    a.pos = pl_calloc(nn ? nn : 1, sizeof *a.pos);
    a.dead = pl_calloc(nn ? nn : 1, sizeof *a.dead);
    pl_status *st = NULL;
    if (a.is_const == NULL || a.drop == NULL || a.alias == NULL || a.consts == NULL ||
        a.bns == NULL || a.gemms == NULL || a.lns == NULL || a.bnmms == NULL || a.einsums == NULL || a.bmms == NULL || a.perms == NULL || a.crops == NULL ||
        a.qconvs == NULL || a.qpools == NULL || a.qbins == NULL || a.qmms == NULL || a.scatters == NULL || a.flats == NULL ||
        a.luts == NULL || a.sibs == NULL ||
        a.pos == NULL || a.dead == NULL ||
        !pl_optimize_body_names(g, &a.body_names) ||
        !pl_fold_mark_constants(g, a.is_const))
        st = pl_alg_oom();
    for (size_t t = 0; st == NULL && t < nt; t++)
        a.alias[t] = (pl_tid)t;
    const pl_nid *order = pl_graph_topo_order(g);
    for (size_t i = 0; st == NULL && i < nn; i++)
        a.pos[order[i]] = i;
    for (size_t i = 0; st == NULL && i < nn; i++)
        st = pl_alg_shapes(&a, order[i]);
    for (size_t i = 0; st == NULL && i < nn; i++)
        if (!a.drop[order[i]])
            st = pl_alg_qdq_conv(&a, order[i]);
    for (size_t i = 0; st == NULL && i < nn; i++)
        if (!a.drop[order[i]])
            st = pl_alg_qdq_maxpool(&a, order[i]);
    for (size_t i = 0; st == NULL && i < nn; i++)
        if (!a.drop[order[i]])
            st = pl_alg_qdq_matmul(&a, order[i]);
    for (size_t i = 0; st == NULL && i < nn; i++)
        if (!a.drop[order[i]])
            st = pl_alg_bn(&a, order[i]);
    for (size_t i = 0; st == NULL && i < nn; i++)
        if (!a.drop[order[i]])
            st = pl_alg_bn_matmul(&a, order[i]);
    for (size_t i = 0; st == NULL && i < nn; i++)
        if (!a.drop[order[i]])
            st = pl_alg_einsum(&a, order[i]);
    for (size_t i = 0; st == NULL && i < nn; i++)
        if (!a.drop[order[i]])
            st = pl_alg_batch_matmul(&a, order[i]);
    for (size_t i = 0; st == NULL && i < nn; i++)
        if (!a.drop[order[i]])
            st = pl_alg_siblings(&a, order[i]);
    for (size_t i = 0; st == NULL && i < nn; i++)
        if (!a.drop[order[i]])
            st = pl_alg_gemm(&a, order[i]);
    for (size_t i = 0; st == NULL && i < nn; i++)
        if (!a.drop[order[i]])
            st = pl_alg_layernorm(&a, order[i]);
    for (size_t i = 0; st == NULL && i < nn; i++)
        if (!a.drop[order[i]])
            st = pl_alg_layernorm_tf(&a, order[i]);
    for (size_t i = 0; st == NULL && i < nn; i++)
        if (!a.drop[order[i]])
            st = pl_alg_flat_matmul(&a, order[i]);
    for (size_t i = 0; st == NULL && i < nn; i++)
        if (!a.drop[order[i]])
            st = pl_alg_transpose(&a, order[i]);
    for (size_t i = 0; st == NULL && i < nn; i++)
        if (!a.drop[order[i]])
            st = pl_alg_crop_taps(&a, order[i]);
    for (size_t i = 0; st == NULL && i < nn; i++)
        if (!a.drop[order[i]])
            st = pl_alg_scatter(&a, order[i]);
    size_t n_requant = 0;
    for (size_t i = 0; st == NULL && i < nn; i++)
        if (!a.drop[order[i]]) {
            st = pl_alg_requant(&a, order[i]);
            n_requant += a.drop[order[i]] ? 1 : 0;
        }
    for (size_t i = 0; st == NULL && i < nn; i++)
        if (!a.drop[order[i]])
            st = pl_alg_expand(&a, order[i], &n_requant);
    /* after requant (a pair it removes changes nothing, a table of it
     * would cost a pass); the last node of a chain first: it takes in the
     * whole chain */
    a.alias_read = st == NULL ? pl_calloc(nt ? nt : 1, sizeof *a.alias_read) : NULL;
    if (st == NULL && a.alias_read == NULL)
        st = pl_alg_oom();
    for (size_t t = 0; st == NULL && t < nt; t++)
        if (a.alias[t] != (pl_tid)t && (pl_graph_get_tensor(g, (pl_tid)t)->n_consumers > 0 ||
                                        !pl_alg_replaceable(&a, (pl_tid)t)))
            a.alias_read[a.alias[t]] = true;
    for (size_t i = nn; st == NULL && i-- > 0;)
        if (!a.drop[order[i]])
            st = pl_alg_lut(&a, order[i]);
    for (size_t i = 0; st == NULL && i < nn; i++)
        if (!a.drop[order[i]])
            st = pl_alg_qdq_binary(&a, order[i]);
    size_t n_dead = 0;
    if (st == NULL)
        st = pl_alg_dead(&a, order, &n_dead);
    pl_graph *copy = NULL;
    if (st == NULL && a.n_consts + a.n_bns + a.n_bnmms + a.n_einsums + a.n_bmms + a.n_gemms +
                              a.n_lns + a.n_perms +
                              a.n_crops +
                              a.n_qconvs + a.n_qpools + a.n_qbins + a.n_qmms + a.n_scatters + a.n_flats + a.n_luts +
                              a.n_sibs + n_requant + n_dead >
                          0)
        st = pl_graph_copy_rewritten(g, a.drop, a.alias, &copy);
    for (size_t k = 0; st == NULL && copy != NULL && k < a.n_consts; k++) {
        const struct pl_alg_const *c = &a.consts[k];
        int64_t len = (int64_t)c->n;
        st = pl_graph_set_type(copy, c->t, PL_DTYPE_I64, c->ndim, &len, NULL);
        if (st == NULL)
            st = pl_graph_set_constant(copy, c->t, c->v, c->n * sizeof *c->v);
    }
    for (size_t k = 0; st == NULL && copy != NULL && k < a.n_bns; k++) {
        /* (a Conv that the dead-node pass dropped has no copy: its folds
         * went with it) */
        if (!a.drop[a.bns[k].conv])
            st = pl_alg_write_bn(g, a.alias, copy, &a.bns[k], pl_alg_copy_id(&a, a.bns[k].conv));
    }
    for (size_t k = 0; st == NULL && copy != NULL && k < a.n_einsums; k++)
        if (!a.dead[a.einsums[k].node])
            st = pl_alg_write_einsum(g, a.alias, copy, &a.einsums[k]);
    for (size_t k = 0; st == NULL && copy != NULL && k < a.n_bmms; k++)
        if (!a.dead[a.bmms[k].node])
            st = pl_alg_write_bmm(g, a.alias, copy, &a.bmms[k]);
    for (size_t k = 0; st == NULL && copy != NULL && k < a.n_bnmms; k++)
        if (!a.drop[a.bnmms[k].mm])
            st = pl_alg_write_bn_matmul(g, a.alias, copy, &a.bnmms[k],
                                        pl_alg_copy_id(&a, a.bnmms[k].mm));
    for (size_t k = 0; st == NULL && copy != NULL && k < a.n_perms; k++) {
        if (a.drop[a.perms[k].node])
            continue;
        pl_nid id = pl_alg_copy_id(&a, a.perms[k].node);
        pl_graph_node_remove_attr(copy, id, "perm");
        st = pl_graph_attr_ints(copy, id, "perm", a.perms[k].perm, (size_t)a.perms[k].n);
        if (st == NULL)
            st = pl_graph_node_set_inputs(copy, id, &a.perms[k].src, 1);
    }
    for (size_t k = 0; st == NULL && copy != NULL && k < a.n_crops; k++)
        if (!a.drop[a.crops[k].conv])
            st = pl_alg_write_crop(g, a.alias, copy, &a.crops[k],
                                   pl_alg_copy_id(&a, a.crops[k].conv));
    for (size_t k = 0; st == NULL && copy != NULL && k < a.n_gemms; k++)
        if (!a.dead[a.gemms[k].add])
            st = pl_alg_write_gemm(g, a.alias, copy, &a.gemms[k]);
    for (size_t k = 0; st == NULL && copy != NULL && k < a.n_lns; k++)
        if (!a.dead[a.lns[k].last])
            st = pl_alg_write_ln(g, a.alias, copy, &a.lns[k]);
    for (size_t k = 0; st == NULL && copy != NULL && k < a.n_qconvs; k++)
        if (!a.dead[a.qconvs[k].q])
            st = pl_alg_write_qconv(g, a.alias, copy, &a.qconvs[k]);
    for (size_t k = 0; st == NULL && copy != NULL && k < a.n_qpools; k++)
        if (!a.dead[a.qpools[k].q])
            st = pl_alg_write_qpool(g, a.alias, copy, &a.qpools[k]);
    for (size_t k = 0; st == NULL && copy != NULL && k < a.n_qbins; k++)
        if (!a.dead[a.qbins[k].q])
            st = pl_alg_write_qbin(g, a.alias, copy, &a.qbins[k]);
    for (size_t k = 0; st == NULL && copy != NULL && k < a.n_qmms; k++)
        if (!a.dead[a.qmms[k].mm])
            st = pl_alg_write_qmm(g, a.alias, copy, &a.qmms[k]);
    for (size_t k = 0; st == NULL && copy != NULL && k < a.n_scatters; k++)
        if (!a.dead[a.scatters[k].node])
            st = pl_alg_write_scatter(g, &a, copy, &a.scatters[k]);
    for (size_t k = 0; st == NULL && copy != NULL && k < a.n_flats; k++)
        if (!a.dead[a.flats[k].add != PL_NID_NONE ? a.flats[k].add : a.flats[k].mm])
            st = pl_alg_write_flat(g, a.alias, copy, &a.flats[k]);
    for (size_t k = 0; st == NULL && copy != NULL && k < a.n_luts; k++)
        if (!a.dead[a.luts[k].sink])
            st = pl_alg_write_lut(&a, copy, &a.luts[k]);
    for (size_t k = 0; st == NULL && copy != NULL && k < a.n_sibs; k++) {
        /* (all of them dead: nothing reads the products) */
        bool live = false;
        for (size_t j = 0; j < a.sibs[k].n; j++)
            live |= !a.dead[a.sibs[k].add[j] != PL_NID_NONE ? a.sibs[k].add[j]
                                                             : a.sibs[k].mm[j]];
        if (live)
            st = pl_alg_write_sibs(g, a.alias, copy, &a.sibs[k]);
    }
    if (st == NULL && copy != NULL)
        st = pl_graph_validate(copy);
    if (st != NULL) {
        pl_graph_destroy(copy);
        copy = NULL;
    }
    *out_graph = copy;
    pl_strmap_free(&a.body_names);
    pl_free(a.is_const);
    pl_free(a.drop);
    pl_free(a.alias);
    pl_free(a.consts);
    pl_free(a.bns);
    pl_free(a.gemms);
    pl_free(a.lns);
    pl_free(a.bnmms);
    pl_free(a.einsums);
    pl_free(a.bmms);
    pl_free(a.perms);
    pl_free(a.crops);
    pl_free(a.qconvs);
    pl_free(a.qpools);
    pl_free(a.qbins);
    pl_free(a.qmms);
    pl_free(a.scatters);
    pl_free(a.flats);
    pl_free(a.luts);
    pl_free(a.sibs);
    pl_free(a.pos);
    pl_free(a.dead);
    pl_free(a.alias_read);
    return st;
}
