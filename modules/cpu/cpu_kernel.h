/* cpu_kernel.h — what the cpu module's kernel files share: the module
 * instance, the kernel object every op's kernel starts with, and the helpers
 * get_kernel and kernel_run use to read nodes and tensors. Internal to the
 * module (everything here has hidden visibility).
 *
 * A kernel is one host_alloc block made by its op's builder at get_kernel
 * time, holding everything precomputed (broadcast strides, GEMM sizes,
 * permutations). It is immutable afterwards, so kernel_run may run it from
 * any number of threads at once; every run keeps its state on its own
 * stack. */
#ifndef PL_CPU_KERNEL_H
#define PL_CPU_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <plinth/module.h>

/* The highest rank a kernel handles (as the core's graph does). */
#define CPU_MAX_RANK 16

/* The host table handed to pl_module_entry (cpu.c): one static table of the
 * core, valid until the module is unloaded. */
extern const pl_host_api *cpu_host;

/* One runtime's instance of the module, made by init and freed by shutdown.
 * Changed only by configure (which the core serialises, before kernels are
 * made), so any thread may read it. */
typedef struct cpu_pack_registry cpu_pack_registry;
typedef struct cpu_shared_pack cpu_shared_pack;
typedef struct cpu_cost_uses cpu_cost_uses;

struct pl_module_ctx {
    pl_host_ctx *host_ctx; /* the core's handle for this instance */
    int compute_units;     /* online CPUs when init ran */
    bool blas_pool;        /* blas_threads = pool (see cpu.c's configure) */
    cpu_pack_registry *packs; /* shared packed weights (packshare.c; locks its own) */
    cpu_cost_uses *cost_uses; /* the estimates' tensor use counts (cost.c; NULL: none) */
};

/* Runs a kernel: ARGS were checked by kernel_run (counts, the request,
 * non-NULL data of every input the kernel reads and of the output); OUT is
 * the output's first element and REQ is PL_REQ_WRITE, PL_REQ_INPLACE or
 * PL_REQ_ADD_TO. Must be reentrant. */
typedef pl_status *(*cpu_run_fn)(pl_module_ctx *ctx, const pl_kernel *kernel,
                                 const pl_run_args *args, float *out,
                                 pl_output_request req);

/* Runs a kernel that checks its own arguments: any number of outputs, any
 * dtypes. kernel_run checks only that ARGS is well formed (counts match the
 * node's, requests present) and hands everything over. Must be reentrant;
 * must honour each output's request (PL_REQ_NULL: skip it). */
typedef pl_status *(*cpu_run_any_fn)(pl_module_ctx *ctx, const pl_kernel *kernel,
                                     const pl_run_args *args);

/* A fused epilogue (kernel_fuse): the kernel maps its result x to
 * act(x * scale + col_add[j]) before it stores it, j the index along the
 * output's last axis, act Relu (x > 0 ? x : 0) or Clip (x < lo ? lo : x >
 * hi ? hi : x) as the unfused kernels of those ops compute them. scale and
 * col_add come only to kernels whose builder set epilogue_cols (products
 * without a C: a Mul or Div by a scalar constant and the Add of a bias
 * after a transformer's MatMul), which fold scale into their alpha. */
typedef enum cpu_epilogue_kind {
    CPU_EPI_NONE = 0,
    CPU_EPI_RELU = 1,
    CPU_EPI_CLIP = 2
} cpu_epilogue_kind;

typedef struct cpu_epilogue {
    cpu_epilogue_kind kind;
    float lo, hi;        /* Clip */
    float scale;         /* 1 unless fused; 0 is read as 1 (a zeroed kernel) */
    const float *col_add; /* epilogue_cols values (a constant of the graph), or NULL */
} cpu_epilogue;

/* Whether E changes anything. */
static inline bool cpu_epilogue_any(const cpu_epilogue *e)
{
    return e->kind != CPU_EPI_NONE || e->col_add != NULL || (e->scale != 0.0f && e->scale != 1.0f);
}

/* E's scale (1 when none was fused). */
static inline float cpu_epilogue_scale(const cpu_epilogue *e)
{
    return e->scale != 0.0f ? e->scale : 1.0f;
}

/* The start of every kernel object. */
struct pl_kernel {
    const char *op;      /* the op's name, a static string (for messages) */
    cpu_run_fn run;      /* f32, one output (or NULL when run_any is set) */
    cpu_run_any_fn run_any; /* any dtypes and outputs (or NULL) */
    size_t n_reads;      /* inputs 0 .. n_reads-1 are read (others ignored) */
    size_t n_outputs;    /* run_any kernels: outputs the node has */
    size_t out_elements; /* elements of output 0, checked on every run */
    bool inplace_ok;     /* the output may alias input 0 (PL_REQ_INPLACE) */
    size_t workspace_bytes; /* asked of the core; handed to every run */
    bool epilogue_ok;    /* the kernel applies `epilogue` (its builder says) */
    cpu_epilogue epilogue; /* set by kernel_fuse, before the first run */
    int64_t epilogue_cols; /* > 0: the output's last dim, and the kernel applies
                              epilogue.scale and epilogue.col_add too */
    float *epilogue_buf;  /* the kernel's copy of epilogue.col_add, freed with it */
    pl_kernel *inner[2]; /* kernels this one wraps (dtype_wrap.c), released
                            with it; NULL for most */
    cpu_shared_pack *shared_pack; /* a packed weight it shares (packshare.c),
                                     let go with it; NULL for most */
    /* Frees what the kernel holds outside its block (compiled regular
     * expressions: strings.c), before the block goes; NULL for most. */
    void (*release)(pl_module_ctx *ctx, pl_kernel *kernel);
};

/* Applies E but its scale to ROWS x COLS floats at C (leading dimension
 * LDC), their first column column COL0 of the output: col_add, then the
 * activation. Vectorised (nn_vec.c). Kernels on the module's GEMM apply it
 * in the GEMM's own epilogue instead (cpu_gemm_ex). */
void cpu_epilogue_rows(const cpu_epilogue *e, float *c, int64_t ldc, int64_t rows,
                       int64_t cols, int64_t col0);

/* Allocates a zeroed kernel object of BYTES (at least sizeof(pl_kernel))
 * from the host and fills its base. NULL when out of memory. */
pl_kernel *cpu_kernel_alloc(pl_module_ctx *ctx, size_t bytes, const char *op,
                            cpu_run_fn run);

/* ---- packed weights shared between kernels (packshare.c) ---------------- */

cpu_pack_registry *cpu_pack_registry_create(pl_host_ctx *host_ctx);
void cpu_pack_registry_destroy(pl_host_ctx *host_ctx, cpu_pack_registry *r);
#define CPU_SHARE_MAX_SOURCES 3
/* The derivations (PARAMS[0]), one per packing. */
enum { CPU_SHARE_GEMM_B = 1, CPU_SHARE_CONV_W, CPU_SHARE_IGEMM_MM_B, CPU_SHARE_IGEMM_CONV_W };
#define CPU_SHARE_MAX_PARAMS 8
/* Writes the derived bytes at OUT (cpu_share_derived's size). */
typedef void (*cpu_share_fill)(void *arg, void *out);
/* BYTES derived from the constants NODE reads as its INPUTS (node input
 * indices; at most CPU_SHARE_MAX_SOURCES) by a derivation PARAMS name
 * (kind, sizes, flags: at most CPU_SHARE_MAX_PARAMS; the caller's), shared
 * by every kernel that derives the same bytes the same way, made by FILL
 * when none has yet: the bytes (64-byte aligned, read-only), and in
 * *OUT_REF the hold to keep in the kernel's shared_pack. NULL (and
 * *OUT_REF NULL) when not shared: small, first seen at these addresses,
 * an input not constant, no digest, out of memory; the caller then makes
 * its own copy. */
void *cpu_share_derived(pl_module_ctx *ctx, const pl_node_desc *node, const size_t *inputs,
                        size_t n_inputs, const int64_t *params, size_t n_params, size_t bytes,
                        cpu_share_fill fill, void *fill_arg, cpu_shared_pack **out_ref);
/* Whether a shared copy derived by PARAMS (BYTES of it) from the one
 * constant at SRC (SRC_BYTES) is alive, found by the address its first
 * maker read (an estimate's question, cost.c: no digest is taken; a false
 * answer only prices a packing that may not happen). */
bool cpu_share_has(pl_module_ctx *ctx, const void *src, size_t src_bytes, const int64_t *params,
                   size_t n_params, size_t bytes);
/* Lets go of REF (NULL: nothing); the last hold frees the packed copy. */
void cpu_pack_unshare(pl_module_ctx *ctx, cpu_shared_pack *ref);
/* Shared copies alive (tests). */
size_t cpu_pack_shared_count(pl_module_ctx *ctx);

/* Whether the core asks for NODE's kernel only to weigh it against other
 * backends (PL_NODE_QUERY, ABI 1.9): it never runs, so builders leave
 * constant weights unpacked (the packing is the kernel's cost: a VGG-19
 * fully connected layer packed 411 MB for a kernel onednn's was preferred
 * to); the same verdict either way. */
static inline bool cpu_node_query(const pl_node_desc *node)
{
    return PL_ABI_HAS_FIELD(pl_node_desc, node, flags) && (node->flags & PL_NODE_QUERY) != 0;
}

/* Whether T's shape is fully known and its element and byte counts (as
 * f32) fit in size_t. */
bool cpu_shape_known(const pl_tensor *t);

/* Copies N bytes, the sizes of one 4- or 8-byte element inline: a
 * gather, scatter or concatenation of single elements (a table's columns)
 * is a call to memcpy per element otherwise. */
static inline void cpu_copy_small(void *dst, const void *src, size_t n)
{
    if (n == 4)
        memcpy(dst, src, 4);
    else if (n == 8)
        memcpy(dst, src, 8);
    else if (n > 0)
        memcpy(dst, src, n);
}

/* The first element of a host tensor (data plus byte_offset). */
static inline const float *cpu_in(const pl_run_args *args, size_t i)
{
    const pl_tensor *t = &args->inputs[i];
    return (const float *)(const void *)((const char *)t->data + t->byte_offset);
}

/* Number of elements of a shape known to be fully known and not to
 * overflow (get_kernel checked both). */
size_t cpu_elements(const int64_t *dims, int32_t ndim);

/* The element strides, per output dim, at which an operand of SHAPE (rank
 * R) is read for an output of OUT_DIMS (rank OUT_R) under NumPy
 * broadcasting: 0 along the dims it is broadcast over. False when SHAPE
 * does not broadcast to OUT_DIMS (a dim neither equal nor 1, or R > OUT_R). */
bool cpu_broadcast_strides(const int64_t *shape, int r, const int64_t *out_dims, int out_r,
                           int64_t *strides);

/* ---- node reading (get_kernel time) ------------------------------------- */

/* Reads the integer attribute NAME of NODE into *out, or DEFAULT_VALUE when
 * the node has none. An attribute of another kind is an error. */
pl_status *cpu_attr_int(const pl_node_desc *node, const char *name,
                        int64_t default_value, int64_t *out);
/* The same for a float attribute (read as double). */
pl_status *cpu_attr_float(const pl_node_desc *node, const char *name,
                          double default_value, double *out);
/* The ints attribute NAME: *out_values (borrowed for the get_kernel call)
 * and *out_count, or NULL and 0 when absent. */
pl_status *cpu_attr_ints(const pl_node_desc *node, const char *name,
                         const int64_t **out_values, size_t *out_count);
/* The floats attribute NAME (no values when absent), borrowed from the
 * graph view for the get_kernel call. */
pl_status *cpu_attr_floats(const pl_node_desc *node, const char *name,
                           const double **out_values, size_t *out_count);

/* A status "cpu: OP: <message>" with CODE. */
pl_status *cpu_error(pl_code code, const char *op, const char *fmt, ...)
    PL_PRINTF_LIKE(3, 4);

/* Writes DIMS as "[2,3,4]" into BUF of SIZE bytes; returns BUF. */
const char *cpu_dims_text(const int64_t *dims, int32_t ndim, char *buf,
                          size_t size);

/* ---- the table's imperative entries (kernel.c) ---------------------------- */

/* The estimates' table of tensor readers and writers (cost.c). */
cpu_cost_uses *cpu_cost_uses_create(void);
void cpu_cost_uses_destroy(cpu_cost_uses *u);

/* What NODES of the view cost a run here (cost.c; pl_module_api.estimate_cost). */
int cpu_estimate_cost(pl_module_ctx *ctx, int device, const pl_graph_view *v,
                      const size_t *nodes, size_t n_nodes, pl_cost *out);

pl_status *cpu_get_kernel(pl_module_ctx *ctx, int device, const pl_node_desc *node,
                          pl_kernel **out_kernel, size_t *out_workspace_bytes);
pl_status *cpu_kernel_run(pl_module_ctx *ctx, pl_kernel *kernel, const pl_run_args *args);
void cpu_kernel_release(pl_module_ctx *ctx, pl_kernel *kernel);
/* kernel_fuse (ABI 1.1): folds a following Relu, or Clip with constant
 * bounds, into a kernel whose builder set epilogue_ok (Conv, Gemm, MatMul). */
int cpu_kernel_fuse(pl_module_ctx *ctx, pl_kernel *kernel, const pl_node_desc *next);

/* ---- the op table --------------------------------------------------------- */

/* What get_kernel knows about an op before its builder runs. Each family of
 * ops keeps its own table in its own file; kernel.c searches them all. An op
 * has one entry in all of them together (cpu_op_tables_check): a second
 * entry would never be found, and its kernels would be dead code. */
typedef pl_status *(*cpu_build_fn)(pl_module_ctx *ctx, const pl_node_desc *node,
                                   pl_kernel **out_kernel);

typedef struct cpu_op_entry {
    const char *op;
    cpu_build_fn build;
    size_t min_inputs;
    size_t max_inputs;      /* SIZE_MAX: any number */
    uint32_t float_inputs;  /* bit i: input i must be f32 (bit 31: and all
                               later ones), or f64 with CPU_OP_F64, or
                               i32/i64 with CPU_OP_INTS */
    uint32_t flags;         /* CPU_OP_* */
} cpu_op_entry;

#define CPU_ALL_INPUTS 0xffffffffu
/* The builder checks dtypes itself (inputs and output 0 need not be f32). */
#define CPU_OP_ANY_DTYPE 1u
/* The node may have several outputs (the builder checks them). */
#define CPU_OP_MULTI_OUTPUT 2u
/* Every output may be absent, output 0 included (RNN, GRU, LSTM). */
#define CPU_OP_OPTIONAL_OUTPUTS 16u
/* An op of Plinth's own domain, "ai.plinth" (what the core lowers ONNX ops
 * to), found only there. */
#define CPU_OP_PLINTH_DOMAIN 32u
/* An op of ONNX Runtime's contrib domain, "com.microsoft", that the module
 * runs itself (cpu.c registers its schema, so the core keeps the node
 * instead of lowering it), found only there. */
#define CPU_OP_MS_DOMAIN 64u

/* The float inputs and output 0 may be f64 instead of f32, all of them. */
#define CPU_OP_F64 4u
/* The same with i32 or i64. */
#define CPU_OP_INTS 8u

/* The first op that two entries of the N_TABLES TABLES (each ending with a
 * NULL op) claim, or NULL when every op has one entry; *out_first and
 * *out_second say which tables (indices into TABLES) hold the two. */
static inline const char *cpu_op_tables_duplicate(const cpu_op_entry *const *tables,
                                                   size_t n_tables, size_t *out_first,
                                                   size_t *out_second)
{
    for (size_t t = 0; t < n_tables; t++)
        for (const cpu_op_entry *e = tables[t]; e->op != NULL; e++)
            for (size_t u = t; u < n_tables; u++)
                for (const cpu_op_entry *f = u == t ? e + 1 : tables[u]; f->op != NULL; f++)
                    if (strcmp(e->op, f->op) == 0) {
                        *out_first = t;
                        *out_second = u;
                        return e->op;
                    }
    return NULL;
}

/* Refuses (PL_CODE_INTERNAL, naming the op and both files) a build of the
 * module whose op tables give an op two entries. cpu.c's init calls it. */
pl_status *cpu_op_tables_check(void);

/* Checks NODE against E (arity, dtypes unless CPU_OP_ANY_DTYPE, known
 * shapes) and runs E's builder: what get_kernel does once it found E. */
pl_status *cpu_build_node(pl_module_ctx *ctx, const cpu_op_entry *e, const pl_node_desc *node,
                          pl_kernel **out_kernel);

/* dtype_wrap.c: f16 and bf16 computed in f32 (and MaxPool's i8 and u8,
 * exactly). True when NODE has an input or output the wrapper takes. */
bool cpu_wrap_wanted(const pl_node_desc *node);
/* Builds E's f32 kernel for NODE with its f16/bf16 tensors taken as f32,
 * wrapped in a kernel that converts them at every run (inputs widened
 * exactly, outputs rounded once to nearest even). */
pl_status *cpu_wrap_build(pl_module_ctx *ctx, const cpu_op_entry *e, const pl_node_desc *node,
                          pl_kernel **out_kernel);

/* The families' tables (each ends with an entry whose op is NULL). */
extern const cpu_op_entry cpu_ops_nn[];    /* nn.c: convolution, pooling */
extern const cpu_op_entry cpu_ops_math[];  /* math.c: elementwise, norms, reductions */
extern const cpu_op_entry cpu_ops_shape[]; /* shape.c: shape and index ops, all dtypes */
extern const cpu_op_entry cpu_ops_rnn[];   /* rnn.c: RNN, GRU, LSTM */
extern const cpu_op_entry cpu_ops_index[]; /* index.c: gather, scatter, TopK, Einsum, ... */
extern const cpu_op_entry cpu_ops_loss[];  /* loss.c: NLL and softmax cross-entropy */
extern const cpu_op_entry cpu_ops_quant[]; /* quant.c: (De)QuantizeLinear, integer matmuls */
extern const cpu_op_entry cpu_ops_signal[]; /* signal.c: windows, DFT, STFT */
extern const cpu_op_entry cpu_ops_normalize[]; /* normalize.c: LRN, MeanVarianceNormalization */
extern const cpu_op_entry cpu_ops_sample[]; /* sample.c: GridSample, RoiAlign */
extern const cpu_op_entry cpu_ops_random[]; /* random.c: RandomNormal..., Bernoulli, Multinomial */
extern const cpu_op_entry cpu_ops_linattn[]; /* linattn.c: LinearAttention */
extern const cpu_op_entry cpu_ops_detect[]; /* nms.c: ai.plinth NonMaxSuppressionPadded */
extern const cpu_op_entry cpu_ops_trees[];  /* trees.c: ai.plinth TreeEnsemble */
extern const cpu_op_entry cpu_ops_svm[];    /* svm.c: ai.plinth SVMClassify */
extern const cpu_op_entry cpu_ops_label_encode[]; /* label_encode.c: ai.plinth LabelEncode */
extern const cpu_op_entry cpu_ops_gqa[]; /* gqa.c: ai.plinth GroupQueryAttention */
extern const cpu_op_entry cpu_ops_nbits[]; /* nbits.c: com.microsoft MatMulNBits */
extern const cpu_op_entry cpu_ops_unique[]; /* unique.c: ai.plinth UniquePadded */
extern const cpu_op_entry cpu_ops_strings[]; /* strings.c: the ops on text */
extern const cpu_op_entry cpu_ops_text[];   /* text.c: TfIdfVectorizer */
/* qlinear_ms.c: com.microsoft QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu */
extern const cpu_op_entry cpu_ops_deform[]; /* deform.c: DeformConv */
extern const cpu_op_entry cpu_ops_qlinear_ms[];

/* Registers the schemas of qlinear_ms.c's com.microsoft ops (cpu.c's init),
 * so that the core keeps those nodes for this module instead of lowering
 * them (a core without register_op lowers them through float). */
/* Registers the com.microsoft op NAME (inputs and outputs from MIN_IN to
 * MAX_IN and MIN_OUT to MAX_OUT, shapes by INFER) for the runtime; NULL
 * without doing so on a core too old to take custom ops (its lowering of
 * the op serves then). */
pl_status *cpu_register_ms_op(pl_host_ctx *host_ctx, const char *name, int32_t min_in,
                              int32_t max_in, int32_t min_out, int32_t max_out,
                              pl_shape_fn infer);
pl_status *qm_register(pl_host_ctx *host_ctx);
/* Registers com.microsoft MatMulNBits (nbits.c). */
pl_status *nb_register(pl_host_ctx *host_ctx);

/* ---- the kernels' builders ---------------------------------------------- */

/* Each builder makes the kernel for NODE, whose op it serves, after
 * get_kernel has checked the domain, the input and output counts the op
 * needs, every float input's dtype (unless CPU_OP_ANY_DTYPE), and that every
 * present input and output has a fully known shape. On failure *out_kernel
 * stays NULL. */

/* matmul.c: MatMul (batched, broadcast batch dims) and Gemm, on the module's own GEMM (gemm.c). */
pl_status *cpu_build_matmul(pl_module_ctx *ctx, const pl_node_desc *node,
                            pl_kernel **out_kernel);
pl_status *cpu_build_gemm(pl_module_ctx *ctx, const pl_node_desc *node,
                          pl_kernel **out_kernel);
/* softmax.c: Softmax along one axis (opset 13) or over the flattened
 * trailing dims (opset < 13). */
pl_status *cpu_build_softmax(pl_module_ctx *ctx, const pl_node_desc *node,
                             pl_kernel **out_kernel);
/* Softmax (LogSoftmax with TAKE_LOG) in double over W neighbouring columns of
 * an [LEN, INNER] slice at X, into Y (ADD: added to it). */
void cpu_softmax_cols_f64(const double *x, double *y, int64_t len, int64_t inner, int w,
                          bool take_log, int add);

#endif
