/* trees.c — the cpu module's tree ensembles: ai.plinth TreeEnsemble, the
 * form the core lowers ai.onnx.ml's TreeEnsembleClassifier and
 * TreeEnsembleRegressor to (core/opset/src/opset_lower.c, which reads the
 * trees, checks them and leaves what the spec leaves open to the nodes
 * around this one).
 *
 * Inputs: X [N, C] f32; per node of every tree (M of them) its feature
 * (i64), threshold (f32), yes and no nodes (i64; a leaf's are itself);
 * the leaves' weights [M, K] f32; the trees' roots [T] i64; optionally per
 * node whether a NaN goes the yes way (bool). Attribute mode: the one
 * comparison of every branch (BRANCH_LEQ, _LT, _GTE, _GT, _EQ, _NEQ: X's
 * value against the threshold, as C compares floats: a NaN false but for
 * NEQ). Output: [N, K] f32, the
 * sum over the trees of the weights of the leaf each row reaches, trees in
 * order, as ONNX Runtime sums them. Rows go over the pool in blocks. */
#include <math.h>
#include <string.h>

#include "index_kernel.h"

static pl_status *tree_build(pl_module_ctx *ctx, const pl_node_desc *node,
                             pl_kernel **out_kernel);

const cpu_op_entry cpu_ops_trees[] = {
    {"TreeEnsemble", tree_build, 7, 8, 0, CPU_OP_ANY_DTYPE | CPU_OP_PLINTH_DOMAIN},
    {NULL, NULL, 0, 0, 0, 0},
};

enum { TREE_LEQ, TREE_LT, TREE_GTE, TREE_GT, TREE_EQ, TREE_NEQ };

/* A node as the walk reads it: one 16-byte load where the four tables
 * took four cache lines (rf_reg 0.131 -> ms a run). FEAT's top bit: a NaN
 * goes the yes way. A leaf's yes and no are itself. */
typedef struct tree_node {
    float thr;
    uint32_t feat;
    int32_t yes, no;
} tree_node;

#define TREE_NAN_YES 0x80000000u

typedef struct tree_kernel {
    shp_kernel k;
    size_t rows, cols, nodes, trees, k_out;
    int mode;
    bool nan_yes; /* some node sends a NaN the yes way */
    const int32_t *roots; /* TREES entries, then NODES tree_nodes, in the kernel's block */
    const tree_node *node;
} tree_kernel;

/* One run's leaves and rows. */
typedef struct tree_job {
    const tree_kernel *k;
    const float *x, *leaf;
    float *y;
} tree_job;

#define TREE_BLOCK 16 /* rows a parallel_for chunk */
/* Sums of up to this many targets or classes are kept in double, rounded
 * once: a forest's class probability is its trees' votes / T, and a float
 * sum of twenty 0.05s came to 0.50000006 where the vote was even (the label
 * then the positive class; scikit-learn's is the negative, ONNX Runtime's
 * float sum came to 0.5 there). */
#define TREE_ACC 32

static inline __attribute__((always_inline)) bool tree_test(int mode, float v, float t)
{
    switch (mode) {
    case TREE_LEQ: return v <= t;
    case TREE_LT: return v < t;
    case TREE_GTE: return v >= t;
    case TREE_GT: return v > t;
    case TREE_EQ: return v == t;
    default: return v != t; /* NEQ: true for a NaN, as C's != (and ONNX Runtime) */
    }
}

/* The leaf of tree T each of the block's N rows reaches, into LEAF: the
 * rows step together, one node each a round, so their chains of dependent
 * loads overlap (one row at a time waited on every load; rf_reg 0.030 ->
 * ms a run); a leaf leads to itself both ways, so a row that arrived
 * stays, and the walk ends after a round in which no row moved. MODE and
 * NAN_YES are constants where tree_walk calls it. */
static inline __attribute__((always_inline)) void
tree_walk_as(const tree_kernel *k, const float *x, size_t n, size_t t, int32_t *leaf, int mode,
             bool nan_yes)
{
    int32_t root = k->roots[t];
    for (size_t r = 0; r < n; r++)
        leaf[r] = root;
    /* at most M rounds: the core checked the trees acyclic */
    for (size_t s = 0; s <= k->nodes; s++) {
        int32_t moved = 0;
        for (size_t r = 0; r < n; r++) {
            const tree_node *nd = &k->node[leaf[r]];
            float v = x[r * k->cols + (nd->feat & ~TREE_NAN_YES)];
            bool go = tree_test(mode, v, nd->thr);
            if (nan_yes)
                go = go || ((nd->feat & TREE_NAN_YES) && v != v);
            /* no branch: which way a forest goes is a coin toss */
            int32_t next = nd->no ^ ((nd->yes ^ nd->no) & -(int32_t)go);
            moved |= next ^ leaf[r];
            leaf[r] = next;
        }
        if (moved == 0)
            break;
    }
}

static void tree_walk(const tree_kernel *k, const float *x, size_t n, size_t t, int32_t *leaf)
{
#define TREE_WALK_MODE(m)                                  \
    case m:                                                \
        if (k->nan_yes)                                    \
            tree_walk_as(k, x, n, t, leaf, m, true);       \
        else                                               \
            tree_walk_as(k, x, n, t, leaf, m, false);      \
        break;
    switch (k->mode) {
        TREE_WALK_MODE(TREE_LEQ)
        TREE_WALK_MODE(TREE_LT)
        TREE_WALK_MODE(TREE_GTE)
        TREE_WALK_MODE(TREE_GT)
        TREE_WALK_MODE(TREE_EQ)
        default: tree_walk_as(k, x, n, t, leaf, TREE_NEQ, k->nan_yes); break;
    }
#undef TREE_WALK_MODE
}

/* Blocks BEGIN..END of TREE_BLOCK rows: tree by tree (a tree's nodes stay
 * in cache over the block), each row's sums in double (TREE_ACC). */
static void tree_rows(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const tree_job *j = arg;
    const tree_kernel *k = j->k;
    size_t kk = k->k_out;
    double acc[TREE_BLOCK * TREE_ACC];
    int32_t leaf[TREE_BLOCK];
    for (size_t b = begin; b < end; b++) {
        size_t r0 = b * TREE_BLOCK, n = k->rows - r0 < TREE_BLOCK ? k->rows - r0 : TREE_BLOCK;
        const float *x = j->x + r0 * k->cols;
        float *y = j->y + r0 * kk;
        bool wide = kk > TREE_ACC;
        if (wide)
            memset(y, 0, n * kk * sizeof *y);
        else
            memset(acc, 0, n * kk * sizeof *acc);
        for (size_t t = 0; t < k->trees; t++) {
            tree_walk(k, x, n, t, leaf);
            for (size_t r = 0; r < n; r++) {
                const float *w = j->leaf + (size_t)leaf[r] * kk;
                if (wide)
                    for (size_t c = 0; c < kk; c++)
                        y[r * kk + c] += w[c];
                else
                    for (size_t c = 0; c < kk; c++)
                        acc[r * kk + c] += w[c];
            }
        }
        if (!wide)
            for (size_t i = 0; i < n * kk; i++)
                y[i] = (float)acc[i];
    }
}

static pl_status *tree_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    const tree_kernel *k = (const tree_kernel *)kernel;
    if (args->requests[0] != PL_REQ_WRITE || args->outputs[0].data == NULL)
        return cpu_error(PL_CODE_UNSUPPORTED, kernel->op, "the output must be written in full");
    if ((args->inputs[0].data == NULL && k->rows > 0) || args->inputs[5].data == NULL)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->op, "X or the weights have no data");
    tree_job j = {.k = k,
                  .x = (const float *)shp_in(args, 0),
                  .leaf = (const float *)shp_in(args, 5),
                  .y = (float *)((char *)args->outputs[0].data + args->outputs[0].byte_offset)};
    size_t blocks = (k->rows + TREE_BLOCK - 1) / TREE_BLOCK;
    if (blocks > 1)
        cpu_host->parallel_for(ctx->host_ctx, blocks, 1, tree_rows, &j);
    else if (blocks == 1)
        tree_rows(&j, 0, 1, 0);
    return NULL;
}

static pl_status *tree_build(pl_module_ctx *ctx, const pl_node_desc *node,
                             pl_kernel **out_kernel)
{
    const char *op = node->op;
    const pl_tensor *in = node->inputs;
    char mode[16];
    SHP_TRY(shp_attr_string(node, "mode", "BRANCH_LEQ", mode, sizeof mode));
    static const char *const modes[] = {"BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE",
                                        "BRANCH_GT",  "BRANCH_EQ", "BRANCH_NEQ"};
    int m = -1;
    for (int i = 0; i < 6; i++)
        if (strcmp(mode, modes[i]) == 0)
            m = i;
    if (m < 0)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "mode '%s' is no branch mode", mode);
    const pl_dtype want[8] = {PL_DTYPE_F32, PL_DTYPE_I64, PL_DTYPE_F32, PL_DTYPE_I64,
                              PL_DTYPE_I64, PL_DTYPE_F32, PL_DTYPE_I64, PL_DTYPE_BOOL};
    bool ok = node->n_outputs == 1;
    for (size_t i = 0; ok && i < node->n_inputs; i++)
        ok = (i == 7 && !shp_input_present(node, i)) || PL_DTYPE_EQ(in[i].dtype, want[i]);
    if (!ok)
        return cpu_error(PL_CODE_UNSUPPORTED, op,
                         "X, thresholds and weights must be f32, the node tables i64, "
                         "nan_yes bool");
    int64_t nodes = in[1].ndim == 1 ? in[1].shape[0] : -1;
    ok = in[0].ndim == 2 && nodes > 0 && in[2].ndim == 1 && in[3].ndim == 1 && in[4].ndim == 1 &&
         in[2].shape[0] == nodes && in[3].shape[0] == nodes && in[4].shape[0] == nodes &&
         in[5].ndim == 2 && in[5].shape[0] == nodes && in[6].ndim == 1 &&
         (node->n_inputs < 8 || !shp_input_present(node, 7) ||
          (in[7].ndim == 1 && in[7].shape[0] == nodes)) &&
         node->outputs[0].ndim == 2 && node->outputs[0].shape[0] == in[0].shape[0] &&
         node->outputs[0].shape[1] == in[5].shape[1];
    if (!ok)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "X [N, C], node tables [M], weights [M, K], roots [T] and Y [N, K] do "
                         "not fit");
    /* the node tables are constants (the core wrote them): packed here,
     * every index checked once */
    size_t b[8] = {0};
    const int64_t *feat = shp_constant(node, 1, &b[1]), *yes = shp_constant(node, 3, &b[3]),
                  *no = shp_constant(node, 4, &b[4]), *roots = shp_constant(node, 6, &b[6]);
    const float *thr = shp_constant(node, 2, &b[2]);
    const uint8_t *nan_yes = node->n_inputs > 7 && shp_input_present(node, 7)
                                 ? shp_constant(node, 7, &b[7])
                                 : NULL;
    size_t trees = (size_t)in[6].shape[0], cols = (size_t)in[0].shape[1];
    if (feat == NULL || thr == NULL || yes == NULL || no == NULL || roots == NULL ||
        (node->n_inputs > 7 && shp_input_present(node, 7) && nan_yes == NULL))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "the node tables and roots must be constants");
    if (nodes >= INT32_MAX || cols >= TREE_NAN_YES || trees > SIZE_MAX / 64)
        return cpu_error(PL_CODE_UNSUPPORTED, op, "%lld nodes over %zu features", (long long)nodes,
                         cols);
    for (int64_t i = 0; i < nodes; i++) {
        bool leaf = yes[i] == i;
        if (yes[i] < 0 || yes[i] >= nodes || no[i] < 0 || no[i] >= nodes ||
            (!leaf && (feat[i] < 0 || (uint64_t)feat[i] >= cols)))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "node %lld leads to node %lld / %lld or reads feature %lld of %zu",
                             (long long)i, (long long)yes[i], (long long)no[i],
                             (long long)feat[i], cols);
    }
    for (size_t t = 0; t < trees; t++)
        if (roots[t] < 0 || roots[t] >= nodes)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "root %lld of %lld nodes",
                             (long long)roots[t], (long long)nodes);
    size_t head = (sizeof(tree_kernel) + sizeof(int32_t) * trees + 15) / 16 * 16;
    tree_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, head + sizeof(tree_node) * (size_t)nodes, NULL,
                             (shp_kernel **)&k));
    k->k.base.run_any = tree_run;
    k->rows = (size_t)in[0].shape[0];
    k->cols = cols;
    k->nodes = (size_t)nodes;
    k->trees = trees;
    k->k_out = (size_t)in[5].shape[1];
    k->mode = m;
    int32_t *r = (int32_t *)(k + 1);
    tree_node *nd = (tree_node *)((char *)k + head);
    for (size_t t = 0; t < trees; t++)
        r[t] = (int32_t)roots[t];
    for (int64_t i = 0; i < nodes; i++) {
        bool leaf = yes[i] == i;
        nd[i] = (tree_node){.thr = thr[i],
                            .feat = leaf ? 0u : (uint32_t)feat[i],
                            .yes = (int32_t)yes[i],
                            .no = leaf ? (int32_t)i : (int32_t)no[i]};
        if (nan_yes != NULL && nan_yes[i] && !leaf) {
            nd[i].feat |= TREE_NAN_YES;
            k->nan_yes = true;
        }
    }
    k->roots = r;
    k->node = nd;
    *out_kernel = &k->k.base;
    return NULL;
}
