/* example_acc_program.c — symbolic mode of example_acc: which nodes it takes,
 * how a subgraph becomes a program, how the program runs, and how it is
 * saved to and restored from a binary blob for the core's cache.
 *
 * The program. compile numbers every tensor of the subgraph as a "value"
 * (boundary inputs first, in the view's input order, then constants and the
 * outputs of each node) and turns each node into one instruction over
 * values. Every value is kept in the device's private layout: the tensor
 * seen as a matrix (the last dimension is the columns, all others the rows)
 * cut into 8x8 tiles, each tile contiguous, the edges zero-padded. The core
 * never sees this layout: run converts its plain row-major inputs into
 * tiles in the compiled subgraph's scratch buffer and its results back.
 * Constants (weights) are tiled once, at compile time, into a weights
 * buffer in device memory.
 *
 * The blob. export writes a header (magic, format version, module version,
 * a hash of the subgraph), the program and the tiled weights, and a
 * checksum. import refuses a blob written for another subgraph
 * (PL_CODE_INCOMPATIBLE) and validates every count, index and shape of a
 * malformed one (PL_CODE_INVALID_ARGUMENT) before it runs anything.
 *
 * Every function here is called by the core for one instance; run is never
 * called twice at once on one compiled subgraph, so its scratch needs no
 * lock. */
#include "example_acc.h"

#include <plinth/graph_hash.h>

#include <stdio.h>
#include <string.h>

#define XACC_TILE 8                     /* tiles are XACC_TILE x XACC_TILE */
#define XACC_TILE_FLOATS (XACC_TILE * XACC_TILE)
#define XACC_MAX_RANK 8                 /* tensors of higher rank are refused */
#define XACC_MAX_FLOATS (((uint64_t)XACC_MAX_CAPACITY_MB << 20) / sizeof(float))

/* ---- the ops it takes ----------------------------------------------------
 *
 * To add an op: a row in xacc_ops, a case in xacc_check_node (what it
 * accepts), in xacc_check_instr (the shapes an imported program must have)
 * and in xacc_execute (the kernel). */

enum xacc_op {
    XACC_OP_MATMUL = 1,
    XACC_OP_GEMM = 2,
    XACC_OP_ADD = 3,
    XACC_OP_SUB = 4,
    XACC_OP_MUL = 5,
    XACC_OP_RELU = 6
};

static const struct xacc_op_info {
    const char *name;
    enum xacc_op op;
    int min_inputs;
    int max_inputs;
} xacc_ops[] = {
    {"MatMul", XACC_OP_MATMUL, 2, 2}, {"Gemm", XACC_OP_GEMM, 2, 3},
    {"Add", XACC_OP_ADD, 2, 2},       {"Sub", XACC_OP_SUB, 2, 2},
    {"Mul", XACC_OP_MUL, 2, 2},       {"Relu", XACC_OP_RELU, 1, 1},
};
#define XACC_N_OPS (sizeof xacc_ops / sizeof xacc_ops[0])

static const struct xacc_op_info *xacc_op_find(const char *name)
{
    for (size_t i = 0; i < XACC_N_OPS; i++)
        if (name != NULL && strcmp(xacc_ops[i].name, name) == 0)
            return &xacc_ops[i];
    return NULL;
}

/* ---- the program ---------------------------------------------------------- */

enum xacc_value_kind {
    XACC_VALUE_INPUT = 1, /* a boundary input: filled from run's arguments */
    XACC_VALUE_CONST = 2, /* a constant: tiled into the weights at compile */
    XACC_VALUE_TEMP = 3   /* written by one instruction */
};

/* One tensor of the subgraph. kind, ndim, dims and offset are exported; the
 * tile geometry is derived from them (xacc_value_geometry). */
struct xacc_value {
    uint32_t kind;
    int32_t ndim;
    int64_t dims[XACC_MAX_RANK];
    uint64_t offset; /* in floats, into the weights (CONST) or the scratch */
    size_t rows, cols;           /* the tensor as a matrix */
    size_t row_tiles, col_tiles; /* tiles per column and per row */
    size_t tiled;                /* floats, padding included */
};

/* One node. in[i] and out are value indices; in[2] is -1 unless Gemm has C. */
struct xacc_instr {
    uint32_t op;
    int32_t in[3];
    int32_t out;
    int32_t trans_a, trans_b; /* Gemm */
    double alpha, beta;       /* Gemm */
};

/* A compiled subgraph. Arrays and buffers belong to it. */
struct pl_compiled {
    int device;
    uint64_t view_hash;
    uint32_t n_values, n_instrs, n_inputs, n_outputs;
    struct xacc_value *values;
    struct xacc_instr *instrs;
    uint32_t *inputs;  /* value of the view's input(i) */
    uint32_t *outputs; /* value of the view's output(i) */
    uint64_t weight_floats, scratch_floats;
    struct xacc_buffer *weights; /* device memory: tiled constants */
    struct xacc_buffer *scratch; /* device memory: tiled inputs and temps */
};

/* Overflow-checked size arithmetic: 0 on overflow. */
static int xacc_mul(size_t a, size_t b, size_t *out)
{
    if (b != 0 && a > SIZE_MAX / b)
        return 0;
    *out = a * b;
    return 1;
}

static int xacc_add(size_t a, size_t b, size_t *out)
{
    if (a > SIZE_MAX - b)
        return 0;
    *out = a + b;
    return 1;
}

/* Derives a value's matrix view and tile geometry from ndim and dims.
 * Returns 0 when the rank or a dim is out of range or the size too large. */
static int xacc_value_geometry(struct xacc_value *v)
{
    if (v->ndim < 0 || v->ndim > XACC_MAX_RANK)
        return 0;
    size_t rows = 1, cols = 1;
    for (int32_t d = 0; d < v->ndim; d++) {
        if (v->dims[d] < 0 || (uint64_t)v->dims[d] > XACC_MAX_FLOATS)
            return 0;
        size_t *into = d == v->ndim - 1 ? &cols : &rows;
        if (!xacc_mul(*into, (size_t)v->dims[d], into) || *into > XACC_MAX_FLOATS)
            return 0;
    }
    v->rows = rows;
    v->cols = cols;
    v->row_tiles = (rows + XACC_TILE - 1) / XACC_TILE;
    v->col_tiles = (cols + XACC_TILE - 1) / XACC_TILE;
    size_t tiles;
    if (!xacc_mul(v->row_tiles, v->col_tiles, &tiles) ||
        !xacc_mul(tiles, XACC_TILE_FLOATS, &v->tiled) || v->tiled > XACC_MAX_FLOATS)
        return 0;
    return 1;
}

/* Where element (r, c) of value V lies in its tiled storage. */
static size_t xacc_at(const struct xacc_value *v, size_t r, size_t c)
{
    return ((r / XACC_TILE) * v->col_tiles + c / XACC_TILE) * XACC_TILE_FLOATS +
           (r % XACC_TILE) * XACC_TILE + c % XACC_TILE;
}

static int xacc_dims_equal(int32_t a_ndim, const int64_t *a, int32_t b_ndim, const int64_t *b)
{
    if (a_ndim != b_ndim)
        return 0;
    for (int32_t d = 0; d < a_ndim; d++)
        if (a[d] != b[d])
            return 0;
    return 1;
}

/* True when value A has shape (NDIM, DIMS). A's rank must be valid. */
static int xacc_same_dims(const struct xacc_value *a, int32_t ndim, const int64_t *dims)
{
    return xacc_dims_equal(a->ndim, a->dims, ndim, dims);
}

/* True when B broadcasts (NumPy rules) into A's shape without changing it. */
static int xacc_broadcasts_into(int32_t a_ndim, const int64_t *a, int32_t b_ndim,
                                const int64_t *b)
{
    if (b_ndim > a_ndim)
        return 0;
    for (int32_t i = 1; i <= b_ndim; i++) {
        int64_t bd = b[b_ndim - i], ad = a[a_ndim - i];
        if (bd != ad && bd != 1)
            return 0;
    }
    return 1;
}

/* Writes "[2,3]" into BUF. */
static const char *xacc_dims_text(int32_t ndim, const int64_t *dims, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int32_t d = 0; d < ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, d ? ",%lld" : "%lld",
                                 (long long)dims[d]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

static const char *xacc_dtype_name(pl_dtype dt)
{
    static const struct {
        pl_dtype dtype;
        const char *name;
    } names[] = {{PL_DTYPE_F32, "f32"}, {PL_DTYPE_F64, "f64"}, {PL_DTYPE_F16, "f16"},
                 {PL_DTYPE_BF16, "bf16"}, {PL_DTYPE_U8, "u8"}, {PL_DTYPE_I8, "i8"},
                 {PL_DTYPE_I32, "i32"}, {PL_DTYPE_I64, "i64"}, {PL_DTYPE_BOOL, "bool"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (PL_DTYPE_EQ(dt, names[i].dtype))
            return names[i].name;
    return "unknown";
}

/* ---- which nodes it takes --------------------------------------------------- */

/* A Gemm attribute: the node's value or ONNX's default (the view lists only
 * attributes the node sets). Returns 0 when it has another kind. */
static int xacc_gemm_attrs(const pl_graph_view *view, size_t node, struct xacc_instr *out,
                           char *reason, size_t size)
{
    const pl_graph_api *g = xacc_host->graph;
    static const char *const ints[] = {"transA", "transB"};
    static const char *const floats[] = {"alpha", "beta"};
    int64_t flags[2] = {0, 0};
    double scales[2] = {1.0, 1.0};
    for (int i = 0; i < 2; i++) {
        pl_graph_attr_kind kind = g->attr_kind(view, node, ints[i]);
        if (kind != PL_GRAPH_ATTR_NONE && !g->attr_int(view, node, ints[i], &flags[i])) {
            snprintf(reason, size, "example_acc: Gemm: attribute '%s' is not an integer",
                     ints[i]);
            return 0;
        }
        if (flags[i] != 0 && flags[i] != 1) {
            snprintf(reason, size, "example_acc: Gemm: attribute '%s' = %lld not supported",
                     ints[i], (long long)flags[i]);
            return 0;
        }
        kind = g->attr_kind(view, node, floats[i]);
        if (kind != PL_GRAPH_ATTR_NONE && !g->attr_float(view, node, floats[i], &scales[i])) {
            snprintf(reason, size, "example_acc: Gemm: attribute '%s' is not a float",
                     floats[i]);
            return 0;
        }
    }
    out->trans_a = (int32_t)flags[0];
    out->trans_b = (int32_t)flags[1];
    out->alpha = scales[0];
    out->beta = scales[1];
    return 1;
}

/* The verdict on one node: 1 when this device runs it, else 0 with the
 * reason in REASON ("example_acc: Conv: op not supported"). */
static int xacc_check_node(const pl_graph_view *view, size_t node, char *reason, size_t size)
{
    const pl_graph_api *g = xacc_host->graph;
    const char *op = g->node_op(view, node);
    const char *domain = g->node_domain(view, node);
    op = op != NULL ? op : "?";
    if (domain != NULL && domain[0] != '\0' && strcmp(domain, "ai.onnx") != 0) {
        snprintf(reason, size, "example_acc: %s: domain '%s' not supported", op, domain);
        return 0;
    }
    const struct xacc_op_info *info = xacc_op_find(op);
    if (info == NULL) {
        snprintf(reason, size, "example_acc: %s: op not supported", op);
        return 0;
    }
    size_t n_in = g->node_input_count(view, node);
    if (n_in < (size_t)info->min_inputs || n_in > (size_t)info->max_inputs ||
        g->node_output_count(view, node) != 1 || g->node_output(view, node, 0) < 0) {
        snprintf(reason, size, "example_acc: %s: %zu inputs and %zu outputs not supported", op,
                 n_in, g->node_output_count(view, node));
        return 0;
    }

    /* Every tensor it touches: f32, rank and dims known, rank <= 8. */
    int32_t ndim[4] = {-1, -1, -1, -1};
    const int64_t *dims[4] = {NULL, NULL, NULL, NULL};
    for (size_t k = 0; k <= n_in; k++) {
        int64_t t = k < n_in ? g->node_input(view, node, k) : g->node_output(view, node, 0);
        if (t < 0)
            continue; /* Gemm's C may be absent */
        pl_dtype dt = {0, 0, 0};
        if (!g->tensor_type(view, t, &dt, &ndim[k], &dims[k])) {
            snprintf(reason, size, "example_acc: %s: tensor %lld unknown", op, (long long)t);
            return 0;
        }
        if (!PL_DTYPE_EQ(dt, PL_DTYPE_F32)) {
            snprintf(reason, size, "example_acc: %s: dtype %s not supported", op,
                     xacc_dtype_name(dt));
            return 0;
        }
        int known = ndim[k] >= 0 && ndim[k] <= XACC_MAX_RANK;
        for (int32_t d = 0; known && d < ndim[k]; d++)
            known = dims[k][d] >= 0;
        if (!known) {
            snprintf(reason, size,
                     "example_acc: %s: tensor '%s' needs a fully known shape of rank <= %d", op,
                     g->tensor_name(view, t), XACC_MAX_RANK);
            return 0;
        }
    }
    int32_t out_ndim = ndim[n_in];
    const int64_t *out_dims = dims[n_in];
    char a_text[96], b_text[96];

    switch (info->op) {
    case XACC_OP_MATMUL:
        if (ndim[0] != 2 || ndim[1] != 2) {
            snprintf(reason, size,
                     "example_acc: MatMul: only 2-D operands supported (got %d-D and %d-D)",
                     ndim[0], ndim[1]);
            return 0;
        }
        return 1;
    case XACC_OP_GEMM: {
        struct xacc_instr attrs;
        if (!xacc_gemm_attrs(view, node, &attrs, reason, size))
            return 0;
        if (ndim[0] != 2 || ndim[1] != 2 || out_ndim != 2) {
            snprintf(reason, size, "example_acc: Gemm: A and B must be 2-D");
            return 0;
        }
        if (n_in == 3 && ndim[2] >= 0 && !xacc_broadcasts_into(2, out_dims, ndim[2], dims[2])) {
            snprintf(reason, size, "example_acc: Gemm: C of shape %s does not broadcast to %s",
                     xacc_dims_text(ndim[2], dims[2], a_text, sizeof a_text),
                     xacc_dims_text(2, out_dims, b_text, sizeof b_text));
            return 0;
        }
        return 1;
    }
    case XACC_OP_ADD:
    case XACC_OP_SUB:
    case XACC_OP_MUL:
        if (!xacc_dims_equal(ndim[0], dims[0], out_ndim, out_dims)) {
            snprintf(reason, size,
                     "example_acc: %s: broadcast of the first operand (%s to %s) not supported",
                     op, xacc_dims_text(ndim[0], dims[0], a_text, sizeof a_text),
                     xacc_dims_text(out_ndim, out_dims, b_text, sizeof b_text));
            return 0;
        }
        if (!xacc_broadcasts_into(ndim[0], dims[0], ndim[1], dims[1])) {
            snprintf(reason, size, "example_acc: %s: %s does not broadcast to %s", op,
                     xacc_dims_text(ndim[1], dims[1], a_text, sizeof a_text),
                     xacc_dims_text(ndim[0], dims[0], b_text, sizeof b_text));
            return 0;
        }
        return 1;
    case XACC_OP_RELU:
        return 1;
    }
    return 0;
}

/* One verdict per node of the view, through SINK. The size of a subgraph is
 * the core's concern here (compile enforces max_nodes_per_subgraph). */
pl_status *xacc_supported_nodes(pl_module_ctx *ctx, int device, const pl_graph_view *graph,
                                pl_support_sink sink, void *sink_ctx)
{
    pl_status *status = xacc_check_device(ctx, device);
    if (status != NULL)
        return status;
    if (graph == NULL || sink == NULL)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: supported_nodes without a graph or a sink");
    size_t n = xacc_host->graph->node_count(graph);
    for (size_t i = 0; i < n; i++) {
        char reason[384];
        int ok = xacc_check_node(graph, i, reason, sizeof reason);
        sink(sink_ctx, i, ok, ok ? NULL : reason);
    }
    return NULL;
}

/* ---- the subgraph's hash ----------------------------------------------------
 *
 * What import compares (plinth/graph_hash.h): op types, the attributes the
 * ops read, the shape and dtype of every tensor, constant bytes, and how the
 * nodes are wired (each tensor by its order of first appearance, so the
 * same subgraph in another graph hashes the same). */

/* The hash of VIEW, into *out_hash. Fails only out of memory. */
static pl_status *xacc_view_hash(pl_module_ctx *ctx, const pl_graph_view *view,
                                 uint64_t *out_hash)
{
    static const char *const attrs[] = {"alpha", "beta", "transA", "transB"};
    if (!pl_hash_view(xacc_host, ctx->host_ctx, view, "example_acc subgraph 2", attrs,
                      sizeof attrs / sizeof attrs[0], out_hash))
        return xacc_host->status_create(PL_CODE_OUT_OF_MEMORY,
                                        "example_acc: out of memory hashing a subgraph");
    return NULL;
}

/* ---- checking a program ------------------------------------------------------
 *
 * compile builds programs that pass these checks; import runs them on what
 * it read, so that a malformed blob is refused instead of making a kernel
 * read outside its buffers. */

/* True when value index I exists. */
static int xacc_index_ok(const pl_compiled *c, int32_t i)
{
    return i >= 0 && (uint32_t)i < c->n_values;
}

/* The shapes one instruction needs. Returns 0 with a reason. */
static int xacc_check_instr(const pl_compiled *c, const struct xacc_instr *in, char *reason,
                            size_t size)
{
    const struct xacc_value *o = &c->values[in->out];
    const struct xacc_value *a = &c->values[in->in[0]];
    const struct xacc_value *b = in->in[1] >= 0 ? &c->values[in->in[1]] : NULL;
    const struct xacc_value *cc = in->in[2] >= 0 ? &c->values[in->in[2]] : NULL;
    switch (in->op) {
    case XACC_OP_MATMUL:
    case XACC_OP_GEMM: {
        if (b == NULL || a->ndim != 2 || b->ndim != 2 || o->ndim != 2 ||
            in->trans_a < 0 || in->trans_a > 1 || in->trans_b < 0 || in->trans_b > 1 ||
            (in->op == XACC_OP_MATMUL && (in->trans_a || in->trans_b || cc != NULL))) {
            snprintf(reason, size, "matrix product with bad operands");
            return 0;
        }
        int64_t m = in->trans_a ? a->dims[1] : a->dims[0];
        int64_t k = in->trans_a ? a->dims[0] : a->dims[1];
        int64_t kb = in->trans_b ? b->dims[1] : b->dims[0];
        int64_t n = in->trans_b ? b->dims[0] : b->dims[1];
        if (k != kb || o->dims[0] != m || o->dims[1] != n ||
            (cc != NULL && !xacc_broadcasts_into(2, o->dims, cc->ndim, cc->dims))) {
            snprintf(reason, size, "matrix product with mismatched shapes");
            return 0;
        }
        return 1;
    }
    case XACC_OP_ADD:
    case XACC_OP_SUB:
    case XACC_OP_MUL:
        if (b == NULL || cc != NULL || !xacc_same_dims(o, a->ndim, a->dims) ||
            !xacc_broadcasts_into(a->ndim, a->dims, b->ndim, b->dims)) {
            snprintf(reason, size, "elementwise op with mismatched shapes");
            return 0;
        }
        return 1;
    case XACC_OP_RELU:
        if (b != NULL || cc != NULL || !xacc_same_dims(o, a->ndim, a->dims)) {
            snprintf(reason, size, "Relu with mismatched shapes");
            return 0;
        }
        return 1;
    }
    snprintf(reason, size, "unknown op %u", (unsigned)in->op);
    return 0;
}

/* Checks the whole program: every value fits its region, every instruction
 * reads values already defined and writes a temporary once, the boundary
 * lists name inputs and temporaries. DEFINED is scratch of n_values bytes.
 * Returns 0 with a reason. */
static int xacc_check_program(pl_compiled *c, unsigned char *defined, char *reason,
                              size_t size)
{
    if (c->weight_floats > XACC_MAX_FLOATS || c->scratch_floats > XACC_MAX_FLOATS) {
        snprintf(reason, size, "buffers larger than the device");
        return 0;
    }
    for (uint32_t i = 0; i < c->n_values; i++) {
        struct xacc_value *v = &c->values[i];
        uint64_t region = v->kind == XACC_VALUE_CONST ? c->weight_floats : c->scratch_floats;
        if (v->kind < XACC_VALUE_INPUT || v->kind > XACC_VALUE_TEMP ||
            !xacc_value_geometry(v) || v->offset > region || v->tiled > region - v->offset) {
            snprintf(reason, size, "value %u is malformed or outside its buffer", i);
            return 0;
        }
        defined[i] = v->kind == XACC_VALUE_CONST;
    }
    for (uint32_t i = 0; i < c->n_inputs; i++) {
        uint32_t v = c->inputs[i];
        if (v >= c->n_values || c->values[v].kind != XACC_VALUE_INPUT || defined[v]) {
            snprintf(reason, size, "input %u names no input value (or one twice)", i);
            return 0;
        }
        defined[v] = 1;
    }
    for (uint32_t i = 0; i < c->n_values; i++) {
        if (c->values[i].kind == XACC_VALUE_INPUT && !defined[i]) {
            snprintf(reason, size, "value %u is an input nobody supplies", i);
            return 0;
        }
    }
    for (uint32_t i = 0; i < c->n_instrs; i++) {
        struct xacc_instr *in = &c->instrs[i];
        int ok = xacc_index_ok(c, in->out) && xacc_index_ok(c, in->in[0]) &&
                 (in->in[1] == -1 || xacc_index_ok(c, in->in[1])) &&
                 (in->in[2] == -1 || xacc_index_ok(c, in->in[2]));
        for (int k = 0; ok && k < 3; k++)
            ok = in->in[k] == -1 || defined[in->in[k]];
        ok = ok && c->values[in->out].kind == XACC_VALUE_TEMP && !defined[in->out];
        if (!ok) {
            snprintf(reason, size, "instruction %u reads an undefined value or writes one twice",
                     i);
            return 0;
        }
        char why[128];
        if (!xacc_check_instr(c, in, why, sizeof why)) {
            snprintf(reason, size, "instruction %u: %s", i, why);
            return 0;
        }
        defined[in->out] = 1;
    }
    for (uint32_t i = 0; i < c->n_outputs; i++) {
        uint32_t v = c->outputs[i];
        if (v >= c->n_values || c->values[v].kind != XACC_VALUE_TEMP || !defined[v]) {
            snprintf(reason, size, "output %u names no computed value", i);
            return 0;
        }
    }
    return 1;
}

/* ---- building a compiled object -------------------------------------------- */

/* Allocates the arrays of a compiled object with the counts set in C. */
static pl_status *xacc_compiled_alloc_arrays(pl_module_ctx *ctx, pl_compiled *c)
{
    /* +1: a zero count still gets an array. Counts are bounded by the
     * subgraph (compile) or the blob's length (import). */
    size_t nv = (size_t)c->n_values + 1, ni = (size_t)c->n_instrs + 1;
    c->values = xacc_host->host_alloc(ctx->host_ctx, nv * sizeof *c->values, 0);
    c->instrs = xacc_host->host_alloc(ctx->host_ctx, ni * sizeof *c->instrs, 0);
    c->inputs = xacc_host->host_alloc(ctx->host_ctx, ((size_t)c->n_inputs + 1) * sizeof *c->inputs, 0);
    c->outputs =
        xacc_host->host_alloc(ctx->host_ctx, ((size_t)c->n_outputs + 1) * sizeof *c->outputs, 0);
    if (c->values == NULL || c->instrs == NULL || c->inputs == NULL || c->outputs == NULL)
        return xacc_host->status_create(PL_CODE_OUT_OF_MEMORY,
                                        "example_acc: out of memory for a program");
    memset(c->values, 0, nv * sizeof *c->values);
    memset(c->instrs, 0, ni * sizeof *c->instrs);
    return NULL;
}

/* Frees a compiled subgraph: its arrays and its device buffers. */
void xacc_release(pl_module_ctx *ctx, pl_compiled *c)
{
    if (c == NULL)
        return;
    xacc_buffer_destroy(ctx, c->weights);
    xacc_buffer_destroy(ctx, c->scratch);
    xacc_host->host_free(ctx->host_ctx, c->values);
    xacc_host->host_free(ctx->host_ctx, c->instrs);
    xacc_host->host_free(ctx->host_ctx, c->inputs);
    xacc_host->host_free(ctx->host_ctx, c->outputs);
    xacc_host->host_free(ctx->host_ctx, c);
}

/* Makes an empty compiled object for DEVICE. */
static pl_status *xacc_compiled_new(pl_module_ctx *ctx, int device, pl_compiled **out)
{
    *out = xacc_host->host_alloc(ctx->host_ctx, sizeof **out, 0);
    if (*out == NULL)
        return xacc_host->status_create(PL_CODE_OUT_OF_MEMORY,
                                        "example_acc: out of memory for a program");
    memset(*out, 0, sizeof **out);
    (*out)->device = device;
    return NULL;
}

/* Checks the program and allocates its device buffers: scratch, and the
 * weights (left for the caller to fill). */
static pl_status *xacc_compiled_finish(pl_module_ctx *ctx, pl_compiled *c, pl_code code)
{
    unsigned char *defined = xacc_host->host_alloc(ctx->host_ctx, c->n_values + 1, 0);
    if (defined == NULL)
        return xacc_host->status_create(PL_CODE_OUT_OF_MEMORY,
                                        "example_acc: out of memory checking a program");
    char reason[256];
    int ok = xacc_check_program(c, defined, reason, sizeof reason);
    xacc_host->host_free(ctx->host_ctx, defined);
    if (!ok)
        return xacc_host->status_create(code, "example_acc: %s program: %s",
                                        code == PL_CODE_INTERNAL ? "compiled a bad" : "malformed",
                                        reason);
    pl_status *status = xacc_buffer_create(
        ctx, c->device, (size_t)c->weight_floats * sizeof(float), 0, 1, &c->weights);
    if (status == NULL)
        status = xacc_buffer_create(ctx, c->device, (size_t)c->scratch_floats * sizeof(float),
                                    0, 1, &c->scratch);
    return status;
}

/* ---- compile ---------------------------------------------------------------- */

/* The value of tensor T, or -1. TENSORS maps value index to tensor id. */
static int32_t xacc_value_of(const int64_t *tensors, uint32_t n, int64_t t)
{
    for (uint32_t i = 0; i < n; i++)
        if (tensors[i] == t)
            return (int32_t)i;
    return -1;
}

/* Appends tensor T as a value of KIND, its shape read from the view. */
static void xacc_add_value(pl_compiled *c, int64_t *tensors, const pl_graph_view *view,
                           int64_t t, uint32_t kind)
{
    struct xacc_value *v = &c->values[c->n_values];
    const int64_t *dims = NULL;
    pl_dtype dt;
    v->kind = kind;
    v->ndim = -1;
    xacc_host->graph->tensor_type(view, t, &dt, &v->ndim, &dims);
    for (int32_t d = 0; d < v->ndim && d < XACC_MAX_RANK; d++)
        v->dims[d] = dims[d];
    xacc_value_geometry(v);
    tensors[c->n_values++] = t;
}

/* Numbers the view's tensors as values and turns its nodes into
 * instructions (the arrays are sized for the worst case). */
static pl_status *xacc_build_program(pl_compiled *c, int64_t *tensors,
                                     const pl_graph_view *view)
{
    const pl_graph_api *g = xacc_host->graph;
    size_t n_in = c->n_inputs, n_out = c->n_outputs, nodes = c->n_instrs;
    c->n_values = 0;
    for (size_t i = 0; i < n_in; i++) {
        c->inputs[i] = c->n_values;
        xacc_add_value(c, tensors, view, g->input(view, i), XACC_VALUE_INPUT);
    }
    for (size_t n = 0; n < nodes; n++) {
        struct xacc_instr *in = &c->instrs[n];
        char why[8];
        in->op = (uint32_t)xacc_op_find(g->node_op(view, n))->op;
        in->in[0] = in->in[1] = in->in[2] = -1;
        in->alpha = in->beta = 1.0;
        if (in->op == XACC_OP_GEMM)
            xacc_gemm_attrs(view, n, in, why, sizeof why);
        size_t ni = g->node_input_count(view, n);
        for (size_t k = 0; k < ni && k < 3; k++) {
            int64_t t = g->node_input(view, n, k);
            if (t < 0)
                continue;
            int32_t v = xacc_value_of(tensors, c->n_values, t);
            const void *data;
            size_t bytes;
            if (v < 0 && g->tensor_constant(view, t, &data, &bytes)) {
                v = (int32_t)c->n_values;
                xacc_add_value(c, tensors, view, t, XACC_VALUE_CONST);
            }
            if (v < 0)
                return xacc_host->status_create(
                    PL_CODE_INTERNAL,
                    "example_acc: compile: node '%s' reads '%s', which is neither an input of "
                    "the subgraph, a constant, nor computed before it",
                    g->node_name(view, n), g->tensor_name(view, t));
            in->in[k] = v;
        }
        in->out = (int32_t)c->n_values;
        xacc_add_value(c, tensors, view, g->node_output(view, n, 0), XACC_VALUE_TEMP);
    }
    for (size_t i = 0; i < n_out; i++) {
        int32_t v = xacc_value_of(tensors, c->n_values, g->output(view, i));
        if (v < 0)
            return xacc_host->status_create(PL_CODE_INTERNAL,
                                            "example_acc: compile: output %zu of the subgraph is "
                                            "not computed by it",
                                            i);
        c->outputs[i] = (uint32_t)v;
    }

    /* Memory plan: each value its own region, constants in the weights,
     * everything else in the scratch. A real compiler would reuse scratch
     * between values whose lifetimes do not overlap. */
    size_t weights = 0, scratch = 0;
    for (uint32_t i = 0; i < c->n_values; i++) {
        struct xacc_value *v = &c->values[i];
        size_t *region = v->kind == XACC_VALUE_CONST ? &weights : &scratch;
        v->offset = *region;
        if (!xacc_add(*region, v->tiled, region) || *region > XACC_MAX_FLOATS)
            return xacc_host->status_create(PL_CODE_OUT_OF_MEMORY,
                                            "example_acc: compile: the subgraph needs more "
                                            "memory than the device has");
    }
    c->weight_floats = weights;
    c->scratch_floats = scratch;
    return NULL;
}

/* Converts a plain row-major matrix (V's shape) into V's tiles at DST. */
static void xacc_to_tiles(const struct xacc_value *v, const unsigned char *plain, float *dst)
{
    memset(dst, 0, v->tiled * sizeof *dst);
    for (size_t r = 0; r < v->rows; r++)
        for (size_t c = 0; c < v->cols; c++)
            memcpy(&dst[xacc_at(v, r, c)], plain + (r * v->cols + c) * sizeof(float),
                   sizeof(float));
}

/* Converts V's tiles at SRC back into a plain row-major matrix. */
static void xacc_from_tiles(const struct xacc_value *v, const float *src, unsigned char *plain)
{
    for (size_t r = 0; r < v->rows; r++)
        for (size_t c = 0; c < v->cols; c++)
            memcpy(plain + (r * v->cols + c) * sizeof(float), &src[xacc_at(v, r, c)],
                   sizeof(float));
}

/* Compiles SUBGRAPH for DEVICE: checks its size and nodes, builds the
 * program, tiles the constants into device memory and hashes the view for
 * export. fail_compile makes it fail at the named node on purpose. */
pl_status *xacc_compile(pl_module_ctx *ctx, int device, const pl_graph_view *subgraph,
                        pl_compiled **out_compiled)
{
    if (out_compiled == NULL)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: compile without out_compiled");
    *out_compiled = NULL;
    pl_status *status = xacc_check_device(ctx, device);
    if (status != NULL)
        return status;
    if (subgraph == NULL)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: compile without a subgraph");
    const pl_graph_api *g = xacc_host->graph;
    struct xacc_settings settings;
    xacc_settings_get(ctx, &settings);
    size_t nodes = g->node_count(subgraph);
    if (nodes == 0 || (unsigned long long)nodes > (unsigned long long)settings.max_nodes_per_subgraph)
        return xacc_host->status_create(
            PL_CODE_UNSUPPORTED,
            "example_acc: compile: a subgraph of %zu nodes (max_nodes_per_subgraph = %lld)",
            nodes, settings.max_nodes_per_subgraph);
    for (size_t n = 0; n < nodes; n++) {
        const char *name = g->node_name(subgraph, n);
        if (settings.fail_compile[0] != '\0' && name != NULL &&
            strcmp(name, settings.fail_compile) == 0)
            return xacc_host->status_create(
                PL_CODE_DEVICE_ERROR, "example_acc: compile failed at node '%s' (fail_compile)",
                name);
        char reason[384];
        if (!xacc_check_node(subgraph, n, reason, sizeof reason))
            return xacc_host->status_create(PL_CODE_UNSUPPORTED, "%s (node '%s')", reason,
                                            name != NULL ? name : "?");
    }

    pl_compiled *c = NULL;
    status = xacc_compiled_new(ctx, device, &c);
    if (status != NULL)
        return status;
    /* At most every boundary input plus every tensor each node names. */
    size_t bound = g->input_count(subgraph);
    for (size_t n = 0; n < nodes; n++)
        bound += g->node_input_count(subgraph, n) + 1;
    c->n_values = (uint32_t)bound;
    c->n_instrs = (uint32_t)nodes;
    c->n_inputs = (uint32_t)g->input_count(subgraph);
    c->n_outputs = (uint32_t)g->output_count(subgraph);
    int64_t *tensors = NULL;
    if (bound > UINT32_MAX / 2)
        status = xacc_host->status_create(PL_CODE_UNSUPPORTED,
                                          "example_acc: compile: subgraph too large");
    if (status == NULL)
        status = xacc_compiled_alloc_arrays(ctx, c);
    if (status == NULL) {
        tensors = xacc_host->host_alloc(ctx->host_ctx, bound * sizeof *tensors, 0);
        if (tensors == NULL)
            status = xacc_host->status_create(PL_CODE_OUT_OF_MEMORY,
                                              "example_acc: out of memory compiling");
    }
    if (status == NULL)
        status = xacc_build_program(c, tensors, subgraph);
    if (status == NULL)
        status = xacc_compiled_finish(ctx, c, PL_CODE_INTERNAL);
    /* Hashed before the weights are tiled: the core may drop each constant
     * once it is in its tiles, and the hash reads them all. */
    if (status == NULL)
        status = xacc_view_hash(ctx, subgraph, &c->view_hash);
    /* The weights: each constant in its tiles, in device memory. */
    for (uint32_t i = 0; status == NULL && i < c->n_values; i++) {
        const struct xacc_value *v = &c->values[i];
        const void *data = NULL;
        size_t bytes = 0;
        if (v->kind != XACC_VALUE_CONST)
            continue;
        g->tensor_constant(subgraph, tensors[i], &data, &bytes);
        if (bytes != v->rows * v->cols * sizeof(float))
            status = xacc_host->status_create(
                PL_CODE_INVALID_ARGUMENT,
                "example_acc: compile: constant '%s' has %zu bytes, its shape needs %zu",
                g->tensor_name(subgraph, tensors[i]), bytes, v->rows * v->cols * sizeof(float));
        else
            xacc_to_tiles(v, data, (float *)c->weights->bytes + v->offset);
        /* In its tiles now: the core may drop its own copy (ABI 1.5). */
        if (status == NULL && PL_ABI_HAS_FN(pl_graph_api, g, tensor_constant_done))
            g->tensor_constant_done(subgraph, tensors[i]);
    }
    xacc_host->host_free(ctx->host_ctx, tensors);
    if (status != NULL) {
        xacc_release(ctx, c);
        return status;
    }
    *out_compiled = c;
    return NULL;
}

/* ---- run ---------------------------------------------------------------------- */

/* Base of value V's tiles. */
static float *xacc_value_data(pl_compiled *c, const struct xacc_value *v)
{
    float *base = (float *)(v->kind == XACC_VALUE_CONST ? c->weights->bytes : c->scratch->bytes);
    return base + v->offset;
}

/* out = alpha * op(A) op(B) + beta * C, over tiles. MatMul is the case
 * alpha = 1 without C. Simple loops: correctness first. */
static void xacc_gemm(pl_compiled *c, const struct xacc_instr *in)
{
    const struct xacc_value *va = &c->values[in->in[0]], *vb = &c->values[in->in[1]];
    const struct xacc_value *vo = &c->values[in->out];
    const struct xacc_value *vc = in->in[2] >= 0 ? &c->values[in->in[2]] : NULL;
    const float *a = xacc_value_data(c, va), *b = xacc_value_data(c, vb);
    const float *cc = vc != NULL ? xacc_value_data(c, vc) : NULL;
    float *o = xacc_value_data(c, vo);
    size_t m = vo->rows, n = vo->cols, k = in->trans_a ? va->rows : va->cols;
    float alpha = in->op == XACC_OP_GEMM ? (float)in->alpha : 1.0f;
    float beta = (float)in->beta;
    memset(o, 0, vo->tiled * sizeof *o);
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < n; j++) {
            float acc = 0.0f;
            for (size_t p = 0; p < k; p++) {
                float x = in->trans_a ? a[xacc_at(va, p, i)] : a[xacc_at(va, i, p)];
                float y = in->trans_b ? b[xacc_at(vb, j, p)] : b[xacc_at(vb, p, j)];
                acc += x * y;
            }
            float r = alpha * acc;
            if (cc != NULL)
                r += beta * cc[xacc_at(vc, vc->rows == 1 ? 0 : i, vc->cols == 1 ? 0 : j)];
            o[xacc_at(vo, i, j)] = r;
        }
    }
}

static float xacc_apply(uint32_t op, float x, float y)
{
    switch (op) {
    case XACC_OP_ADD:
        return x + y;
    case XACC_OP_SUB:
        return x - y;
    case XACC_OP_MUL:
        return x * y;
    default:
        return x > 0.0f ? x : 0.0f; /* Relu */
    }
}

/* Elementwise ops. Operands of one shape share one tile geometry, so the
 * loop runs over the tiles directly (padding stays zero: 0+0, 0-0, 0*0 and
 * relu(0) are 0). A broadcast second operand walks the output's elements
 * and finds each one's source with NumPy strides. */
static void xacc_elementwise(pl_compiled *c, const struct xacc_instr *in)
{
    const struct xacc_value *va = &c->values[in->in[0]], *vo = &c->values[in->out];
    const struct xacc_value *vb = in->in[1] >= 0 ? &c->values[in->in[1]] : NULL;
    const float *a = xacc_value_data(c, va);
    const float *b = vb != NULL ? xacc_value_data(c, vb) : NULL;
    float *o = xacc_value_data(c, vo);
    if (vb == NULL || xacc_same_dims(vb, va->ndim, va->dims)) {
        for (size_t i = 0; i < vo->tiled; i++)
            o[i] = xacc_apply(in->op, a[i], b != NULL ? b[i] : 0.0f);
        return;
    }
    /* stride[d]: how far B's flat index moves per step of output dim d. */
    size_t stride[XACC_MAX_RANK] = {0}, index[XACC_MAX_RANK] = {0};
    size_t step = 1;
    for (int32_t i = 1; i <= vb->ndim; i++) {
        int64_t bd = vb->dims[vb->ndim - i];
        stride[vo->ndim - i] = bd == 1 ? 0 : step;
        step *= (size_t)bd;
    }
    memset(o, 0, vo->tiled * sizeof *o);
    size_t total = vo->rows * vo->cols, bi = 0;
    for (size_t e = 0; e < total; e++) {
        float x = a[xacc_at(va, e / va->cols, e % va->cols)];
        float y = b[xacc_at(vb, bi / vb->cols, bi % vb->cols)];
        o[xacc_at(vo, e / vo->cols, e % vo->cols)] = xacc_apply(in->op, x, y);
        /* Advance the output's multi-index like an odometer. */
        for (int32_t d = vo->ndim - 1; d >= 0; d--) {
            bi += stride[d];
            if (++index[d] < (size_t)vo->dims[d])
                break;
            bi -= stride[d] * index[d];
            index[d] = 0;
        }
    }
}

/* Checks that run argument T matches value V (f32, its shape, plain
 * layout) and resolves its handle. */
static pl_status *xacc_run_arg(pl_module_ctx *ctx, pl_compiled *c, const char *what, size_t i,
                               const pl_tensor *t, const struct xacc_value *v,
                               unsigned char **out_bytes)
{
    *out_bytes = NULL;
    int plain = t->strides == NULL && (!PL_TENSOR_HAS(t, layout) || t->layout == NULL ||
                                       t->layout[0] == '\0');
    if (!PL_DTYPE_EQ(t->dtype, PL_DTYPE_F32) || t->ndim != v->ndim ||
        (t->ndim > 0 && t->shape == NULL) || !xacc_same_dims(v, t->ndim, t->shape) || !plain)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: run: %s %zu is not a plain f32 tensor of "
                                        "the compiled shape",
                                        what, i);
    return xacc_resolve(ctx, "run", c->device, t->data, t->byte_offset,
                        v->rows * v->cols * sizeof(float), out_bytes);
}

/* Runs a compiled subgraph: inputs into tiles, the instructions, tiles back
 * into the outputs. Sleeps `latency_us` first, as a real device would take
 * time. */
pl_status *xacc_run(pl_module_ctx *ctx, pl_compiled *c, const pl_run_args *args)
{
    if (c == NULL || args == NULL)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: run without a compiled subgraph or args");
    if (args->n_inputs != c->n_inputs || args->n_outputs != c->n_outputs ||
        (args->n_inputs > 0 && args->inputs == NULL) ||
        (args->n_outputs > 0 && args->outputs == NULL))
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: run: %zu inputs and %zu outputs given, the "
                                        "subgraph has %u and %u",
                                        args->n_inputs, args->n_outputs, c->n_inputs,
                                        c->n_outputs);
    if (args->run != NULL && args->run->device != c->device)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: run on device %d of a subgraph compiled "
                                        "for device %d",
                                        (int)args->run->device, c->device);
    struct xacc_settings settings;
    xacc_settings_get(ctx, &settings);
    xacc_sleep_us(settings.latency_us);

    pl_status *status = NULL;
    for (size_t i = 0; status == NULL && i < c->n_inputs; i++) {
        const struct xacc_value *v = &c->values[c->inputs[i]];
        unsigned char *plain;
        status = xacc_run_arg(ctx, c, "input", i, &args->inputs[i], v, &plain);
        if (status == NULL)
            xacc_to_tiles(v, plain, xacc_value_data(c, v));
    }
    for (uint32_t i = 0; status == NULL && i < c->n_instrs; i++) {
        const struct xacc_instr *in = &c->instrs[i];
        if (in->op == XACC_OP_MATMUL || in->op == XACC_OP_GEMM)
            xacc_gemm(c, in);
        else
            xacc_elementwise(c, in);
    }
    /* A kernel that strayed outside the scratch shows up here. */
    if (status == NULL)
        status = xacc_buffer_check_guards(c->scratch);
    if (status == NULL)
        status = xacc_buffer_check_guards(c->weights);
    for (size_t i = 0; status == NULL && i < c->n_outputs; i++) {
        const struct xacc_value *v = &c->values[c->outputs[i]];
        unsigned char *plain;
        status = xacc_run_arg(ctx, c, "output", i, &args->outputs[i], v, &plain);
        if (status == NULL)
            xacc_from_tiles(v, xacc_value_data(c, v), plain);
    }
    return status;
}

/* ---- export and import --------------------------------------------------------
 *
 * The blob, all integers in the writer's byte order (checked by a marker):
 *
 *   header   "XACCBLOB", u32 format (2), u32 byte-order marker, char[16]
 *            module version, u64 subgraph hash, u32 n_values n_instrs
 *            n_inputs n_outputs, u64 weight_floats scratch_floats
 *   values   per value: u32 kind, i32 ndim, i64 dims[8], u64 offset
 *   instrs   per instruction: u32 op, i32 in[3], i32 out, i32 trans_a,
 *            i32 trans_b, f64 alpha, f64 beta
 *   io       u32 inputs[n_inputs], u32 outputs[n_outputs]
 *   weights  weight_floats f32, tiled
 *   trailer  u64 checksum of everything before it (pl_hash_bytes) */

#define XACC_BLOB_MAGIC "XACCBLOB"
#define XACC_BLOB_FORMAT 2u /* 2: pl_hash_bytes checksum and subgraph hash */
#define XACC_BLOB_ORDER 0x01020304u
#define XACC_BLOB_VERSION_LEN 16
#define XACC_BLOB_HEADER (8 + 4 + 4 + XACC_BLOB_VERSION_LEN + 8 + 4 * 4 + 8 * 2)
#define XACC_BLOB_VALUE (4 + 4 + 8 * XACC_MAX_RANK + 8)
#define XACC_BLOB_INSTR (4 + 4 * 3 + 4 + 4 + 4 + 8 + 8)

struct xacc_writer {
    pl_blob_sink sink;
    void *sink_ctx;
    pl_hash_stream checksum;
};

static void xacc_put(struct xacc_writer *w, const void *bytes, size_t n)
{
    pl_hash_stream_add(&w->checksum, bytes, n);
    w->sink(w->sink_ctx, bytes, n);
}

static void xacc_put_u32(struct xacc_writer *w, uint32_t v) { xacc_put(w, &v, sizeof v); }
static void xacc_put_u64(struct xacc_writer *w, uint64_t v) { xacc_put(w, &v, sizeof v); }

/* Writes the compiled subgraph as a blob, in pieces, through SINK. */
pl_status *xacc_export_compiled(pl_module_ctx *ctx, pl_compiled *c, pl_blob_sink sink,
                                void *sink_ctx)
{
    (void)ctx;
    if (c == NULL || sink == NULL)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: export without a compiled subgraph or sink");
    struct xacc_writer w = {.sink = sink, .sink_ctx = sink_ctx};
    pl_hash_stream_init(&w.checksum);
    char version[XACC_BLOB_VERSION_LEN] = {0};
    snprintf(version, sizeof version, "%s", XACC_VERSION);
    xacc_put(&w, XACC_BLOB_MAGIC, 8);
    xacc_put_u32(&w, XACC_BLOB_FORMAT);
    xacc_put_u32(&w, XACC_BLOB_ORDER);
    xacc_put(&w, version, sizeof version);
    xacc_put_u64(&w, c->view_hash);
    xacc_put_u32(&w, c->n_values);
    xacc_put_u32(&w, c->n_instrs);
    xacc_put_u32(&w, c->n_inputs);
    xacc_put_u32(&w, c->n_outputs);
    xacc_put_u64(&w, c->weight_floats);
    xacc_put_u64(&w, c->scratch_floats);
    for (uint32_t i = 0; i < c->n_values; i++) {
        const struct xacc_value *v = &c->values[i];
        xacc_put_u32(&w, v->kind);
        xacc_put_u32(&w, (uint32_t)v->ndim);
        for (int d = 0; d < XACC_MAX_RANK; d++)
            xacc_put_u64(&w, d < v->ndim ? (uint64_t)v->dims[d] : 0);
        xacc_put_u64(&w, v->offset);
    }
    for (uint32_t i = 0; i < c->n_instrs; i++) {
        const struct xacc_instr *in = &c->instrs[i];
        uint64_t bits;
        xacc_put_u32(&w, in->op);
        for (int k = 0; k < 3; k++)
            xacc_put_u32(&w, (uint32_t)in->in[k]);
        xacc_put_u32(&w, (uint32_t)in->out);
        xacc_put_u32(&w, (uint32_t)in->trans_a);
        xacc_put_u32(&w, (uint32_t)in->trans_b);
        memcpy(&bits, &in->alpha, sizeof bits);
        xacc_put_u64(&w, bits);
        memcpy(&bits, &in->beta, sizeof bits);
        xacc_put_u64(&w, bits);
    }
    for (uint32_t i = 0; i < c->n_inputs; i++)
        xacc_put_u32(&w, c->inputs[i]);
    for (uint32_t i = 0; i < c->n_outputs; i++)
        xacc_put_u32(&w, c->outputs[i]);
    /* The weights come straight from device memory, already tiled. */
    if (c->weight_floats > 0)
        xacc_put(&w, c->weights->bytes, (size_t)c->weight_floats * sizeof(float));
    uint64_t checksum = pl_hash_stream_end(&w.checksum);
    sink(sink_ctx, &checksum, sizeof checksum);
    return NULL;
}

/* Reads a blob front to back; every read is bounds-checked by the caller's
 * length check, and a short read yields zeros. */
struct xacc_reader {
    const unsigned char *p;
    size_t left;
};

static void xacc_get(struct xacc_reader *r, void *out, size_t n)
{
    if (n > r->left) {
        memset(out, 0, n);
        r->left = 0;
        return;
    }
    memcpy(out, r->p, n);
    r->p += n;
    r->left -= n;
}

static uint32_t xacc_get_u32(struct xacc_reader *r)
{
    uint32_t v;
    xacc_get(r, &v, sizeof v);
    return v;
}

static uint64_t xacc_get_u64(struct xacc_reader *r)
{
    uint64_t v;
    xacc_get(r, &v, sizeof v);
    return v;
}

static pl_status *xacc_malformed(const char *why)
{
    return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                    "example_acc: import: malformed blob: %s", why);
}

/* Checks a blob's header, length and checksum, and that it was written for
 * SUBGRAPH. On success R is positioned after the header and the counts are
 * set in C. */
static pl_status *xacc_import_header(pl_module_ctx *ctx, const pl_graph_view *subgraph,
                                     const void *blob, size_t blob_bytes, pl_compiled *c,
                                     struct xacc_reader *r)
{
    if (blob == NULL || blob_bytes < XACC_BLOB_HEADER + 8)
        return xacc_malformed("shorter than its header");
    r->p = blob;
    r->left = blob_bytes;
    char magic[8], version[XACC_BLOB_VERSION_LEN];
    xacc_get(r, magic, sizeof magic);
    if (memcmp(magic, XACC_BLOB_MAGIC, 8) != 0)
        return xacc_malformed("not an example_acc blob (bad magic)");
    uint32_t format = xacc_get_u32(r), order = xacc_get_u32(r);
    xacc_get(r, version, sizeof version);
    version[sizeof version - 1] = '\0';
    if (format != XACC_BLOB_FORMAT || order != XACC_BLOB_ORDER ||
        strcmp(version, XACC_VERSION) != 0)
        return xacc_host->status_create(
            PL_CODE_INCOMPATIBLE,
            "example_acc: import: blob format %u (byte order %s) from example_acc %s; this is "
            "format %u from example_acc %s",
            (unsigned)format, order == XACC_BLOB_ORDER ? "same" : "foreign", version,
            XACC_BLOB_FORMAT, XACC_VERSION);

    uint64_t checksum = PL_HASH_SEED, stored;
    pl_hash_bytes(&checksum, blob, blob_bytes - 8);
    memcpy(&stored, (const unsigned char *)blob + blob_bytes - 8, sizeof stored);
    if (checksum != stored)
        return xacc_malformed("checksum mismatch (corrupted or truncated)");

    uint64_t hash = xacc_get_u64(r), expected;
    pl_status *status = xacc_view_hash(ctx, subgraph, &expected);
    if (status != NULL)
        return status;
    if (hash != expected)
        return xacc_host->status_create(PL_CODE_INCOMPATIBLE,
                                        "example_acc: import: the blob was compiled for another "
                                        "subgraph (hash %016llx, this one %016llx)",
                                        (unsigned long long)hash, (unsigned long long)expected);
    c->view_hash = hash;
    c->n_values = xacc_get_u32(r);
    c->n_instrs = xacc_get_u32(r);
    c->n_inputs = xacc_get_u32(r);
    c->n_outputs = xacc_get_u32(r);
    c->weight_floats = xacc_get_u64(r);
    c->scratch_floats = xacc_get_u64(r);

    /* The counts must account for every byte: nothing missing, nothing
     * extra. Computed without overflow. */
    size_t expect = XACC_BLOB_HEADER + 8, part;
    int ok = c->weight_floats <= XACC_MAX_FLOATS &&
             xacc_mul(c->n_values, XACC_BLOB_VALUE, &part) && xacc_add(expect, part, &expect) &&
             xacc_mul(c->n_instrs, XACC_BLOB_INSTR, &part) && xacc_add(expect, part, &expect) &&
             xacc_mul((size_t)c->n_inputs + c->n_outputs, 4, &part) &&
             xacc_add(expect, part, &expect) &&
             xacc_add(expect, (size_t)c->weight_floats * sizeof(float), &expect);
    if (!ok || expect != blob_bytes)
        return xacc_malformed("its counts do not match its length");
    const pl_graph_api *g = xacc_host->graph;
    if (c->n_inputs != g->input_count(subgraph) || c->n_outputs != g->output_count(subgraph) ||
        c->n_instrs != g->node_count(subgraph))
        return xacc_malformed("its boundary does not match the subgraph's");
    return NULL;
}

/* Rebuilds a compiled subgraph from a blob that export wrote for SUBGRAPH:
 * refuses another subgraph's (PL_CODE_INCOMPATIBLE) and validates every
 * length, index and shape of the program (PL_CODE_INVALID_ARGUMENT). */
pl_status *xacc_import_compiled(pl_module_ctx *ctx, int device, const pl_graph_view *subgraph,
                                const void *blob, size_t blob_bytes, pl_compiled **out_compiled)
{
    if (out_compiled == NULL)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: import without out_compiled");
    *out_compiled = NULL;
    pl_status *status = xacc_check_device(ctx, device);
    if (status != NULL)
        return status;
    if (subgraph == NULL)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: import without a subgraph");
    pl_compiled *c = NULL;
    status = xacc_compiled_new(ctx, device, &c);
    struct xacc_reader r = {NULL, 0};
    if (status == NULL)
        status = xacc_import_header(ctx, subgraph, blob, blob_bytes, c, &r);
    if (status == NULL)
        status = xacc_compiled_alloc_arrays(ctx, c);
    if (status != NULL) {
        xacc_release(ctx, c);
        return status;
    }
    for (uint32_t i = 0; i < c->n_values; i++) {
        struct xacc_value *v = &c->values[i];
        v->kind = xacc_get_u32(&r);
        v->ndim = (int32_t)xacc_get_u32(&r);
        for (int d = 0; d < XACC_MAX_RANK; d++)
            v->dims[d] = (int64_t)xacc_get_u64(&r);
        v->offset = xacc_get_u64(&r);
    }
    for (uint32_t i = 0; i < c->n_instrs; i++) {
        struct xacc_instr *in = &c->instrs[i];
        uint64_t bits;
        in->op = xacc_get_u32(&r);
        for (int k = 0; k < 3; k++)
            in->in[k] = (int32_t)xacc_get_u32(&r);
        in->out = (int32_t)xacc_get_u32(&r);
        in->trans_a = (int32_t)xacc_get_u32(&r);
        in->trans_b = (int32_t)xacc_get_u32(&r);
        bits = xacc_get_u64(&r);
        memcpy(&in->alpha, &bits, sizeof bits);
        bits = xacc_get_u64(&r);
        memcpy(&in->beta, &bits, sizeof bits);
    }
    for (uint32_t i = 0; i < c->n_inputs; i++)
        c->inputs[i] = xacc_get_u32(&r);
    for (uint32_t i = 0; i < c->n_outputs; i++)
        c->outputs[i] = xacc_get_u32(&r);

    /* The program first (it checks every rank), then its boundary. */
    status = xacc_compiled_finish(ctx, c, PL_CODE_INVALID_ARGUMENT);
    /* The boundary must have the shapes the view gives it. */
    const pl_graph_api *g = xacc_host->graph;
    for (uint32_t i = 0; status == NULL && i < c->n_inputs + c->n_outputs; i++) {
        int is_input = i < c->n_inputs;
        uint32_t v = is_input ? c->inputs[i] : c->outputs[i - c->n_inputs];
        int64_t t = is_input ? g->input(subgraph, i) : g->output(subgraph, i - c->n_inputs);
        int32_t ndim = -1;
        const int64_t *dims = NULL;
        pl_dtype dt;
        if (v >= c->n_values || !g->tensor_type(subgraph, t, &dt, &ndim, &dims) ||
            !xacc_same_dims(&c->values[v], ndim, dims))
            status = xacc_malformed("a boundary tensor's shape differs from the subgraph's");
    }
    if (status == NULL && c->weight_floats > 0)
        xacc_get(&r, c->weights->bytes, (size_t)c->weight_floats * sizeof(float));
    if (status != NULL) {
        xacc_release(ctx, c);
        return status;
    }
    *out_compiled = c;
    return NULL;
}
