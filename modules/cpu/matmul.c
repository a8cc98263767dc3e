/* matmul.c — the cpu module's GEMM kernels, MatMul and Gemm, on the
 * module's own SGEMM (gemm.c), on OpenBLAS's cblas_dgemm for f64, and
 * (MatMul) on plain wrapping loops for i32 and i64.
 *
 * The parallelism is the host's: a run is cut into tasks, each one matrix
 * of the batch or a block of its rows or columns, and the tasks go to
 * host->parallel_for; each task runs cpu_gemm on its block with its
 * worker's slice of the workspace for packing. A B that is a constant of
 * the graph (the weights of a layer) is packed once at get_kernel time into
 * the kernel's own block, and column blocks then start on whole panels.
 * With blas_threads = pool (cpu.c) every product is one call of OpenBLAS's
 * cblas_sgemm, which threads it itself.
 *
 * MatMul follows numpy.matmul: 1-D operands get a dim of 1 (prepended for
 * A, appended for B) that the output then lacks, and batch dims broadcast.
 * When B is the same matrix for every batch entry and A's batch is dense,
 * the batch folds into the rows: one GEMM of batch*M rows. Gemm is ONNX's:
 * alpha*op(A)*op(B) + beta*C, C broadcast to [M,N]. PL_REQ_ADD_TO uses
 * the GEMM's beta = 1 on the output. */
#include <string.h>

#include "blas.h"

#include "gemm.h"
#include "nn_window.h"

/* A run below this many multiply-adds stays on the calling thread, unless
 * it streams at least CPU_GEMM_SPLIT_B_BYTES of B: a product of one or a
 * few rows (a batch-1 dense layer) is bound by reading its weights, and two
 * cores read them faster than one. */
#define CPU_GEMM_SERIAL_MACS (64 * 64 * 64)
#define CPU_GEMM_SPLIT_B_BYTES (256 * 1024)
/* Row blocks are at least this tall. */
#define CPU_GEMM_MIN_ROWS 16
/* Column blocks are at least this wide. */
#define CPU_GEMM_MIN_COLS 64

typedef struct cpu_gemm_kernel {
    pl_kernel base;
    int64_t m, n, k;        /* per batch entry (after folding) */
    int trans_a, trans_b;   /* Gemm only */
    float alpha, beta;      /* beta: Gemm's coefficient of C */
    bool f64;               /* operands and output are f64 (cblas_dgemm) */
    pl_parallel_fn int_chunk; /* MatMul of i32 or i64: its loop, else NULL */
    double alpha64, beta64; /* alpha and beta for f64 */
    int has_c;              /* Gemm: C is present and beta != 0 */
    int64_t c_row_stride;   /* Gemm: C's strides over [M,N] (0: broadcast) */
    int64_t c_col_stride;
    int64_t rows_per_task;  /* row block of one task */
    int64_t cols_per_task;  /* column block of one task */
    int64_t col_blocks;     /* column blocks per batch entry */
    int64_t blocks;         /* blocks (rows x columns) per batch entry */
    int64_t batch;          /* batch entries */
    int batch_ndim;         /* batch dims, size-1 dims dropped */
    int64_t batch_dims[CPU_MAX_RANK];
    int64_t a_batch_stride[CPU_MAX_RANK]; /* in elements, 0: broadcast */
    int64_t b_batch_stride[CPU_MAX_RANK];
    const float *packed_b;  /* op(B) packed (inside this block), or NULL */
    size_t slice_floats;    /* one worker's packing scratch */
    int threads;            /* workers at get_kernel time */
} cpu_gemm_kernel;

typedef struct cpu_gemm_call {
    const cpu_gemm_kernel *k;
    const float *a;
    const float *b;
    const float *c;
    float *out;
    int add;
    const cpu_blas *blas;   /* f64, or blas_threads = pool: OpenBLAS (threaded by itself) */
    float *ws;              /* the workers' scratch slices */
} cpu_gemm_call;

/* Splits each of the BATCH products into a grid of row blocks x column
 * blocks so that there are about as many tasks as threads (one when the
 * work is small). A short, wide product (an MLP layer on a small batch) is
 * split by columns: each task then packs only its own slice of B, where
 * row blocks would each pack all of it. */
static void cpu_gemm_plan_tasks(pl_module_ctx *ctx, cpu_gemm_kernel *k)
{
    int threads = cpu_host->thread_count(ctx->host_ctx);
    double macs = (double)k->batch * (double)k->m * (double)k->n * (double)k->k;
    int64_t blocks = 1;
    /* blas_threads = pool: one call, OpenBLAS threads it. */
    double b_bytes = (double)k->n * (double)k->k * sizeof(float);
    if (threads > 1 && (macs >= CPU_GEMM_SERIAL_MACS || b_bytes >= CPU_GEMM_SPLIT_B_BYTES) &&
        k->batch < threads && !ctx->blas_pool)
        blocks = (threads + k->batch - 1) / k->batch;
    int64_t row_blocks = 1, col_blocks = 1;
    if (blocks > 1) {
        if (k->m >= k->n) {
            int64_t max_blocks = k->m / CPU_GEMM_MIN_ROWS;
            row_blocks = blocks < max_blocks ? blocks : (max_blocks > 1 ? max_blocks : 1);
        } else {
            int64_t max_blocks = k->n / CPU_GEMM_MIN_COLS;
            col_blocks = blocks < max_blocks ? blocks : (max_blocks > 1 ? max_blocks : 1);
        }
    }
    k->blocks = row_blocks * col_blocks;
    k->col_blocks = col_blocks;
    k->rows_per_task = k->m > 0 ? (k->m + row_blocks - 1) / row_blocks : 1;
    /* Column blocks in whole panels of B (a packed B is cut only there). */
    int64_t nr = cpu_gemm_nr();
    int64_t cols = k->n > 0 ? (k->n + col_blocks - 1) / col_blocks : 1;
    k->cols_per_task = col_blocks > 1 ? (cols + nr - 1) / nr * nr : cols;
    k->slice_floats = cpu_gemm_scratch_floats(k->rows_per_task, k->cols_per_task, k->k, false,
                                              k->packed_b != NULL);
    k->threads = threads;
}

/* Tasks [begin, end): task t is block t % blocks of batch entry t / blocks;
 * a block is a row block and a column block of the output. */
/* Where task T works: its batch entry, first row and column, rows and
 * columns, and the offsets of its entry's A and B; false when empty. */
typedef struct cpu_gemm_task {
    int64_t entry, row0, col0, rows, n, off_a, off_b;
} cpu_gemm_task;

static bool cpu_gemm_task_of(const cpu_gemm_kernel *k, size_t t, cpu_gemm_task *p)
{
    const int64_t block = (int64_t)t % k->blocks;
    p->entry = (int64_t)t / k->blocks;
    p->row0 = (block / k->col_blocks) * k->rows_per_task;
    p->col0 = (block % k->col_blocks) * k->cols_per_task;
    p->rows = k->m - p->row0 < k->rows_per_task ? k->m - p->row0 : k->rows_per_task;
    p->n = k->n - p->col0 < k->cols_per_task ? k->n - p->col0 : k->cols_per_task;
    p->off_a = p->off_b = 0;
    int64_t rest = p->entry;
    for (int d = k->batch_ndim - 1; d >= 0; d--) {
        int64_t i = rest % k->batch_dims[d];
        rest /= k->batch_dims[d];
        p->off_a += i * k->a_batch_stride[d];
        p->off_b += i * k->b_batch_stride[d];
    }
    return p->rows > 0 && p->n > 0;
}

/* f64 (MatMul and Gemm of doubles): every block is one cblas_dgemm, after
 * beta*C is laid into the output; no packing, no epilogue. */
static void cpu_gemm_chunk_f64(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const cpu_gemm_call *c = arg;
    const cpu_gemm_kernel *k = c->k;
    const int64_t m = k->m, ld_out = k->n, kk = k->k;
    const double *a0 = (const void *)c->a, *b0 = (const void *)c->b, *c0 = (const void *)c->c;
    cpu_gemm_task p;
    for (size_t t = begin; t < end; t++) {
        if (!cpu_gemm_task_of(k, t, &p))
            continue;
        double *out = (double *)(void *)c->out + (p.entry * m + p.row0) * ld_out + p.col0;
        double beta_out = c->add ? 1.0 : 0.0;
        for (int64_t r = 0; r < p.rows && (k->has_c || (kk == 0 && !c->add)); r++) {
            const double *crow = k->has_c ? c0 + (p.row0 + r) * k->c_row_stride +
                                                p.col0 * k->c_col_stride
                                          : NULL;
            double *orow = out + r * ld_out;
            for (int64_t j = 0; j < p.n; j++) {
                double cv = crow != NULL ? k->beta64 * crow[j * k->c_col_stride] : 0.0;
                orow[j] = (c->add ? orow[j] : 0.0) + cv;
            }
        }
        if (k->has_c)
            beta_out = 1.0;
        if (kk == 0)
            continue;
        const double *a = a0 + p.off_a + (k->trans_a ? p.row0 : p.row0 * kk);
        const double *b = b0 + p.off_b + (k->trans_b ? p.col0 * kk : p.col0);
        c->blas->dgemm(CblasRowMajor, k->trans_a ? CblasTrans : CblasNoTrans,
                    k->trans_b ? CblasTrans : CblasNoTrans, (int)p.rows, (int)p.n, (int)kk,
                    k->alpha64, a, (int)(k->trans_a ? m : kk), b,
                    (int)(k->trans_b ? kk : ld_out), beta_out, out, (int)ld_out);
    }
}

/* MatMul of integers T (ONNX's i32 and i64): plain loops, wrapping (the
 * products and sums computed in the unsigned UT). */
#define CPU_GEMM_INT_CHUNK(NAME, T, UT)                                                  \
    static void NAME(void *arg, size_t begin, size_t end, int worker)                    \
    {                                                                                    \
        (void)worker;                                                                    \
        const cpu_gemm_call *c = arg;                                                    \
        const cpu_gemm_kernel *k = c->k;                                                 \
        const int64_t kk = k->k, ld = k->n;                                              \
        cpu_gemm_task p;                                                                 \
        for (size_t t = begin; t < end; t++) {                                           \
            if (!cpu_gemm_task_of(k, t, &p))                                             \
                continue;                                                                \
            const T *a = (const T *)(const void *)c->a + p.off_a + p.row0 * kk;          \
            const T *b = (const T *)(const void *)c->b + p.off_b + p.col0;               \
            T *out = (T *)(void *)c->out + (p.entry * k->m + p.row0) * ld + p.col0;      \
            for (int64_t r = 0; r < p.rows; r++)                                         \
                for (int64_t j = 0; j < p.n; j++) {                                      \
                    UT acc = c->add ? (UT)out[r * ld + j] : 0;                           \
                    for (int64_t q = 0; q < kk; q++)                                     \
                        acc += (UT)a[r * kk + q] * (UT)b[q * ld + j];                    \
                    out[r * ld + j] = (T)acc;                                            \
                }                                                                        \
        }                                                                                \
    }
CPU_GEMM_INT_CHUNK(cpu_gemm_chunk_i32, int32_t, uint32_t)
CPU_GEMM_INT_CHUNK(cpu_gemm_chunk_i64, int64_t, uint64_t)

static void cpu_gemm_chunk(void *arg, size_t begin, size_t end, int worker)
{
    const cpu_gemm_call *c = arg;
    const cpu_gemm_kernel *k = c->k;
    const int64_t m = k->m, ld_out = k->n, kk = k->k;
    cpu_gemm_task p;
    for (size_t t = begin; t < end; t++) {
        if (!cpu_gemm_task_of(k, t, &p))
            continue;
        const int64_t row0 = p.row0, col0 = p.col0, rows = p.rows, n = p.n;
        const int64_t entry = p.entry, off_a = p.off_a, off_b = p.off_b;
        float *out = c->out + (entry * m + row0) * ld_out + col0;
        float beta_out = c->add ? 1.0f : 0.0f;
        /* The module's GEMM applies the activation (and a C that is one row
         * of bias, beta 1: a Gemm layer's bias) as it stores the block. */
        cpu_gemm_epilogue epi = {0};
        const cpu_epilogue *fused = &k->base.epilogue;
        /* (a run that adds to its output gets no epilogue: cpu_kernel_run
         * runs it into a buffer of its own when one was fused) */
        const float alpha = c->add ? k->alpha : k->alpha * cpu_epilogue_scale(fused);
        if (!c->blas && !c->add) {
            epi = nn_gemm_epilogue_of(fused, NULL);
            if (fused->col_add != NULL)
                epi.col_bias = fused->col_add + col0; /* no C then (cpu_kernel_fuse) */
            else if (k->has_c && k->c_row_stride == 0 && k->c_col_stride == 1 &&
                     k->beta == 1.0f)
                epi.col_bias = c->c + col0;
        }
        if (k->has_c && epi.col_bias == NULL) {
            /* out (+)= beta*C for this block, then sgemm accumulates. */
            for (int64_t r = 0; r < rows; r++) {
                const float *crow = c->c + (row0 + r) * k->c_row_stride + col0 * k->c_col_stride;
                float *orow = out + r * ld_out;
                const int64_t cs = k->c_col_stride;
                const float beta = k->beta;
                if (c->add)
                    for (int64_t j = 0; j < n; j++)
                        orow[j] += beta * crow[j * cs];
                else
                    for (int64_t j = 0; j < n; j++)
                        orow[j] = beta * crow[j * cs];
            }
            beta_out = 1.0f;
        }
        /* Row block of op(A): rows of A, or columns of a transposed A;
         * column block of op(B): columns of B, or rows of a transposed B. */
        const float *a = c->a + off_a + (k->trans_a ? row0 : row0 * kk);
        const float *b = c->b + off_b + (k->trans_b ? col0 * kk : col0);
        const int64_t lda = k->trans_a ? m : kk;
        const int64_t ldb = k->trans_b ? kk : ld_out;
        if (c->blas) {
            if (kk == 0) {
                /* An empty sum: only C (or nothing) reaches the output. */
                if (beta_out == 0.0f)
                    for (int64_t r = 0; r < rows; r++)
                        memset(out + r * ld_out, 0, (size_t)n * sizeof(float));
                if (!c->add)
                    cpu_epilogue_rows(fused, out, ld_out, rows, n, col0);
                continue;
            }
            c->blas->sgemm(CblasRowMajor, k->trans_a ? CblasTrans : CblasNoTrans,
                        k->trans_b ? CblasTrans : CblasNoTrans, (int)rows, (int)n, (int)kk,
                        alpha, a, (int)lda, b, (int)ldb, beta_out, out, (int)ld_out);
            if (!c->add)
                cpu_epilogue_rows(fused, out, ld_out, rows, n, col0);
            continue;
        }
        cpu_gemm_operand ga = {.data = a, .ld = lda, .trans = k->trans_a};
        cpu_gemm_operand gb = {.data = b, .ld = ldb, .trans = k->trans_b};
        if (k->packed_b != NULL) {
            gb.packed = k->packed_b;
            gb.packed_k = kk;
            gb.first = col0;
        }
        cpu_gemm_ex(rows, n, kk, alpha, &ga, &gb, beta_out, out, ld_out,
                    c->ws + (size_t)worker * (nn_slice_bytes(k->slice_floats) / sizeof(float)),
                    &epi);
    }
}

static pl_status *cpu_gemm_run(pl_module_ctx *ctx, const pl_kernel *kernel,
                               const pl_run_args *args, float *out, pl_output_request req)
{
    const cpu_gemm_kernel *k = (const cpu_gemm_kernel *)kernel;
    cpu_gemm_call c = {.k = k,
                       .a = cpu_in(args, 0),
                       .b = cpu_in(args, 1),
                       .c = k->has_c ? cpu_in(args, 2) : NULL,
                       .out = out,
                       .add = req == PL_REQ_ADD_TO};
    size_t tasks = (size_t)(k->batch * k->blocks);
    if (k->f64 || k->int_chunk != NULL) {
        if (k->f64)
            c.blas = cpu_blas_loaded(); /* opened when the kernel was made */
        cpu_host->parallel_for(ctx->host_ctx, tasks, 1,
                               k->f64 ? cpu_gemm_chunk_f64 : k->int_chunk, &c);
        return NULL;
    }
    if (ctx->blas_pool) {
        c.blas = cpu_blas_loaded(); /* opened when blas_threads = pool was set */
        cpu_gemm_chunk(&c, 0, tasks, 0); /* OpenBLAS threads each call */
        return NULL;
    }
    /* Packing scratch, one slice per worker of the thread count of
     * get_kernel time (a run never has more). It is taken per run rather
     * than as the kernel's workspace: the core's contract for MatMul and
     * Gemm is that they need none. */
    size_t bytes = nn_slice_bytes(k->slice_floats) * (size_t)k->threads;
    nn_workspace ws;
    if (nn_workspace_acquire(ctx, args, bytes, &ws) == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, kernel->op,
                         "out of memory for %zu bytes of packing scratch", bytes);
    c.ws = (float *)(void *)ws.base;
    cpu_host->parallel_for(ctx->host_ctx, tasks, 1, cpu_gemm_chunk, &c);
    nn_workspace_release(ctx, &ws);
    return NULL;
}

/* f64 products, and every f32 one under blas_threads = pool, run on
 * OpenBLAS: it is opened here, when such a kernel is made (blas.h). */
static pl_status *cpu_gemm_blas_ready(const pl_module_ctx *ctx, const pl_node_desc *node)
{
    const char *why = NULL;
    bool f64 = PL_DTYPE_EQ(node->outputs[0].dtype, PL_DTYPE_F64);
    if ((f64 || ctx->blas_pool) && cpu_blas_get(&why) == NULL)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "%s products need OpenBLAS: %s",
                         f64 ? "f64" : "blas_threads = pool", why);
    return NULL;
}

/* cpu_share_derived's fill for op(B) packed whole. */
typedef struct cpu_gemm_fill_b {
    int64_t k, n;
    const float *b;
    bool trans;
} cpu_gemm_fill_b;

static void cpu_gemm_fill_b_run(void *arg, void *out)
{
    const cpu_gemm_fill_b *f = arg;
    cpu_gemm_pack_b(f->k, f->n, f->b, f->trans ? f->k : f->n, f->trans, (float *)out);
}

/* Allocates the kernel, with op(B) packed when B is a constant of the
 * graph (input 1 of NODE) that every batch entry shares: the copy other
 * kernels of the same weight packed (packshare.c), or its own, in room
 * after the kernel. */
static cpu_gemm_kernel *cpu_gemm_alloc(pl_module_ctx *ctx, const pl_node_desc *node,
                                       bool b_shared, int64_t rows, int64_t kk, int64_t n,
                                       bool trans_b)
{
    const pl_graph_api *g = cpu_host->graph;
    const void *data = NULL;
    size_t bytes = 0;
    size_t head = (sizeof(cpu_gemm_kernel) + 63) & ~(size_t)63;
    size_t packed = 0;
    pl_dtype dt = node->outputs[0].dtype;
    bool f64 = PL_DTYPE_EQ(dt, PL_DTYPE_F64), f32 = PL_DTYPE_EQ(dt, PL_DTYPE_F32);
    const float *shared = NULL;
    cpu_shared_pack *hold = NULL;
    /* (one column, or one row of A: cpu_gemm reads B in place) */
    if (b_shared && f32 && !ctx->blas_pool && !cpu_node_query(node) && g != NULL &&
        node->graph != NULL && kk > 0 && n > 1 && !cpu_gemm_m1_in_place(rows)) {
        int64_t t = g->node_input(node->graph, node->node_index, 1);
        if (t >= 0 && g->tensor_constant(node->graph, t, &data, &bytes) &&
            bytes >= (size_t)(kk * n) * sizeof(float)) {
            packed = cpu_gemm_packed_b_floats(kk, n);
            cpu_gemm_fill_b fill = {kk, n, (const float *)data, trans_b};
            const size_t sources[] = {1};
            const int64_t params[] = {CPU_SHARE_GEMM_B, kk, n, trans_b};
            shared = cpu_share_derived(ctx, node, sources, 1, params, 4, packed * sizeof(float),
                                       cpu_gemm_fill_b_run, &fill, &hold);
            packed = shared != NULL ? 0 : packed;
        }
    }
    cpu_gemm_kernel *k = (cpu_gemm_kernel *)cpu_kernel_alloc(
        ctx, head + packed * sizeof(float), node->op, cpu_gemm_run);
    if (k == NULL)
        cpu_pack_unshare(ctx, hold);
    else if (shared != NULL) {
        k->base.shared_pack = hold;
        k->packed_b = shared;
    }
    if (k != NULL) {
        k->f64 = f64;
        k->int_chunk = PL_DTYPE_EQ(dt, PL_DTYPE_I32)   ? cpu_gemm_chunk_i32
                       : PL_DTYPE_EQ(dt, PL_DTYPE_I64) ? cpu_gemm_chunk_i64
                                                       : NULL;
        k->alpha64 = 1.0;
        k->base.epilogue_ok = f32;
    }
    if (k == NULL || packed == 0)
        return k;
    float *buf = (float *)(void *)((char *)k + head);
    cpu_gemm_pack_b(kk, n, (const float *)data, trans_b ? kk : n, trans_b, buf);
    k->packed_b = buf;
    return k;
}

/* OpenBLAS takes int sizes and leading dimensions. */
static bool cpu_gemm_fits_int(int64_t m, int64_t n, int64_t k)
{
    return m <= INT32_MAX && n <= INT32_MAX && k <= INT32_MAX;
}

/* ---- MatMul -------------------------------------------------------------- */

pl_status *cpu_build_matmul(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *a = &node->inputs[0], *b = &node->inputs[1], *o = &node->outputs[0];
    char ta[128], tb[128], to[128];
    if (a->ndim < 1 || b->ndim < 1)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "operands %s and %s: MatMul needs rank 1 or more",
                         cpu_dims_text(a->shape, a->ndim, ta, sizeof ta),
                         cpu_dims_text(b->shape, b->ndim, tb, sizeof tb));
    /* numpy.matmul's promotion of 1-D operands. */
    int64_t m = a->ndim == 1 ? 1 : a->shape[a->ndim - 2];
    int64_t ka = a->shape[a->ndim - 1];
    int64_t kb = b->ndim == 1 ? b->shape[0] : b->shape[b->ndim - 2];
    int64_t n = b->ndim == 1 ? 1 : b->shape[b->ndim - 1];
    int ra = a->ndim > 2 ? a->ndim - 2 : 0, rb = b->ndim > 2 ? b->ndim - 2 : 0;
    int rbatch = ra > rb ? ra : rb;
    /* The output: batch dims, then M unless A was 1-D, N unless B was. */
    int64_t want[CPU_MAX_RANK + 2];
    int r_out = 0;
    bool ok = ka == kb;
    for (int d = 0; d < rbatch && ok; d++) {
        int da = d - (rbatch - ra), db = d - (rbatch - rb);
        int64_t x = da >= 0 ? a->shape[da] : 1, y = db >= 0 ? b->shape[db] : 1;
        ok = x == y || x == 1 || y == 1;
        want[r_out++] = x == 1 ? y : x;
    }
    if (a->ndim > 1)
        want[r_out++] = m;
    if (b->ndim > 1)
        want[r_out++] = n;
    ok = ok && r_out == o->ndim &&
         (r_out == 0 || memcmp(want, o->shape, (size_t)r_out * sizeof(int64_t)) == 0);
    if (!ok)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "operands %s and %s do not multiply to the output's %s",
                         cpu_dims_text(a->shape, a->ndim, ta, sizeof ta),
                         cpu_dims_text(b->shape, b->ndim, tb, sizeof tb),
                         cpu_dims_text(o->shape, o->ndim, to, sizeof to));
    if (!cpu_gemm_fits_int(m, n, ka))
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "matrices beyond OpenBLAS's int sizes");
    pl_status *no_blas = cpu_gemm_blas_ready(ctx, node);
    if (no_blas != NULL)
        return no_blas;
    /* B is one matrix for every batch entry when its batch dims are all 1. */
    bool b_same = true;
    for (int d = 0; d + 2 < b->ndim; d++)
        b_same = b_same && b->shape[d] == 1;

    /* A of one row in all (a decoder's step): B is read in place */
    int64_t a_rows = ka > 0 ? cpu_elements(a->shape, a->ndim) / ka : 0;
    cpu_gemm_kernel *k = cpu_gemm_alloc(ctx, node, b_same, a_rows, ka, n, false);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->base.n_reads = 2;
    k->base.out_elements = cpu_elements(o->shape, o->ndim);
    /* the output's last axis is B's columns unless B was 1-D */
    k->base.epilogue_cols = k->base.epilogue_ok && b->ndim >= 2 ? n : 0;
    k->m = m;
    k->n = n;
    k->k = ka;
    k->alpha = 1.0f;
    k->batch = 1;
    /* Batch strides in elements: a matrix of A is m*k, of B k*n. */
    int64_t step_a = m * ka, step_b = ka * n;
    bool a_dense = true, b_shared = true;
    int64_t dims[CPU_MAX_RANK], sa[CPU_MAX_RANK], sb[CPU_MAX_RANK];
    for (int d = rbatch - 1; d >= 0; d--) {
        int da = d - (rbatch - ra), db = d - (rbatch - rb);
        int64_t x = da >= 0 ? a->shape[da] : 1, y = db >= 0 ? b->shape[db] : 1;
        dims[d] = want[d];
        sa[d] = x == 1 ? 0 : step_a;
        sb[d] = y == 1 ? 0 : step_b;
        step_a *= x;
        step_b *= y;
        if (x != want[d])
            a_dense = false;
        if (y != 1)
            b_shared = false;
    }
    for (int d = 0; d < rbatch; d++) {
        if (dims[d] == 1)
            continue;
        k->batch_dims[k->batch_ndim] = dims[d];
        k->a_batch_stride[k->batch_ndim] = sa[d];
        k->b_batch_stride[k->batch_ndim] = sb[d];
        k->batch_ndim++;
        k->batch *= dims[d];
    }
    if (a_dense && b_shared && k->batch > 1 && k->batch * m <= INT32_MAX) {
        k->m = k->batch * m;
        k->batch = 1;
        k->batch_ndim = 0;
    }
    cpu_gemm_plan_tasks(ctx, k);
    *out_kernel = &k->base;
    return NULL;
}

/* ---- Gemm ---------------------------------------------------------------- */

pl_status *cpu_build_gemm(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *a = &node->inputs[0], *b = &node->inputs[1], *o = &node->outputs[0];
    const pl_tensor *c = node->n_inputs > 2 && node->inputs[2].ndim >= 0 ? &node->inputs[2] : NULL;
    int64_t trans_a, trans_b;
    double alpha, beta;
    pl_status *st = cpu_attr_int(node, "transA", 0, &trans_a);
    if (st == NULL)
        st = cpu_attr_int(node, "transB", 0, &trans_b);
    if (st == NULL)
        st = cpu_attr_float(node, "alpha", 1.0, &alpha);
    if (st == NULL)
        st = cpu_attr_float(node, "beta", 1.0, &beta);
    if (st != NULL)
        return st;
    char ta[128], tb[128], tc[128], to[128];
    if (a->ndim != 2 || b->ndim != 2 || o->ndim != 2)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "operands %s and %s and output %s: Gemm needs matrices",
                         cpu_dims_text(a->shape, a->ndim, ta, sizeof ta),
                         cpu_dims_text(b->shape, b->ndim, tb, sizeof tb),
                         cpu_dims_text(o->shape, o->ndim, to, sizeof to));
    int64_t m = trans_a ? a->shape[1] : a->shape[0], ka = trans_a ? a->shape[0] : a->shape[1];
    int64_t kb = trans_b ? b->shape[1] : b->shape[0], n = trans_b ? b->shape[0] : b->shape[1];
    if (ka != kb || o->shape[0] != m || o->shape[1] != n)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "operands %s and %s (transA %lld, transB %lld) do not multiply to "
                         "the output's %s",
                         cpu_dims_text(a->shape, a->ndim, ta, sizeof ta),
                         cpu_dims_text(b->shape, b->ndim, tb, sizeof tb), (long long)trans_a,
                         (long long)trans_b, cpu_dims_text(o->shape, o->ndim, to, sizeof to));
    /* C broadcasts one way, to [M,N]. */
    int64_t c_rows = 1, c_cols = 1;
    if (c != NULL) {
        if (c->ndim > 2 || (c->ndim == 2 && (c->shape[0] != 1 && c->shape[0] != m)) ||
            (c->ndim >= 1 && c->shape[c->ndim - 1] != 1 && c->shape[c->ndim - 1] != n))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "C %s does not broadcast to [%lld,%lld]",
                             cpu_dims_text(c->shape, c->ndim, tc, sizeof tc), (long long)m,
                             (long long)n);
        c_rows = c->ndim == 2 ? c->shape[0] : 1;
        c_cols = c->ndim >= 1 ? c->shape[c->ndim - 1] : 1;
    }
    if (!cpu_gemm_fits_int(m, n, ka))
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "matrices beyond OpenBLAS's int sizes");
    pl_status *no_blas = cpu_gemm_blas_ready(ctx, node);
    if (no_blas != NULL)
        return no_blas;

    cpu_gemm_kernel *k = cpu_gemm_alloc(ctx, node, true, m, ka, n, trans_b != 0);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->m = m;
    k->n = n;
    k->k = ka;
    k->trans_a = trans_a != 0;
    k->trans_b = trans_b != 0;
    k->alpha = (float)alpha;
    k->beta = (float)beta;
    k->alpha64 = alpha;
    k->beta64 = beta;
    k->has_c = c != NULL && beta != 0.0;
    k->c_row_stride = c_rows == 1 ? 0 : c_cols;
    k->c_col_stride = c_cols == 1 ? 0 : 1;
    k->batch = 1;
    k->base.n_reads = k->has_c ? 3 : 2;
    k->base.out_elements = (size_t)(m * n);
    /* (with a C, a scale would have to reach it too) */
    k->base.epilogue_cols = k->base.epilogue_ok && !k->has_c ? n : 0;
    cpu_gemm_plan_tasks(ctx, k);
    *out_kernel = &k->base;
    return NULL;
}
