/* rnn_build.c — get_kernel for the cpu module's RNN, GRU and LSTM, and the
 * op table of the rnn family (see cpu_kernel.h): reads the attributes and
 * activations with ONNX's defaults, checks every input and output shape
 * against X and R, packs constant W and R for the GEMM into the kernel's
 * block, and plans the tasks and the workspace a run (rnn.c) uses. */
#include <stdio.h>
#include <string.h>

#include "gemm.h"
#include "math_internal.h"
#include "nn_window.h"
#include "rnn.h"

static pl_status *rnn_build(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel);

const cpu_op_entry cpu_ops_rnn[] = {
    {"RNN", rnn_build, 3, 6, 0, CPU_OP_ANY_DTYPE | CPU_OP_MULTI_OUTPUT | CPU_OP_OPTIONAL_OUTPUTS},
    {"GRU", rnn_build, 3, 6, 0, CPU_OP_ANY_DTYPE | CPU_OP_MULTI_OUTPUT | CPU_OP_OPTIONAL_OUTPUTS},
    {"LSTM", rnn_build, 3, 8, 0, CPU_OP_ANY_DTYPE | CPU_OP_MULTI_OUTPUT | CPU_OP_OPTIONAL_OUTPUTS},
    {"DynamicQuantizeLSTM", rnn_q8_build, 3, 12, 0,
     CPU_OP_ANY_DTYPE | CPU_OP_MULTI_OUTPUT | CPU_OP_OPTIONAL_OUTPUTS | CPU_OP_MS_DOMAIN},
    {NULL, NULL, 0, 0, 0, 0},
};

/* Rows of X per task of the projection, at least. */
#define RNN_PROJ_MIN_ROWS 32
#define RNN_PROJ_COL_ALIGN 64

/* The recurrence splits by hidden units (rnn.h) from RNN_SPLIT_MIN_BYTES
 * of R a direction (an LSTM 256 wide), over at most RNN_SPLIT_MAX_BATCH
 * batch rows, with more than one thread; slices are a multiple of
 * RNN_SPLIT_ALIGN units. A bidirectional LSTM 512 wide over 24 steps of
 * one row (dddd_ocr's, 4 MB of R a direction) took 4.9 ms with a task per
 * direction on 2 threads, each re-reading its 4 MB every step, and 2.5
 * split (the projection split by columns too); ONNX Runtime 2.1-2.3. */
#define RNN_SPLIT_ALIGN 16

bool rnn_kind_of(const char *op, rnn_kind *out)
{
    if (strcmp(op, "LSTM") == 0)
        *out = RNN_KIND_LSTM;
    else if (strcmp(op, "GRU") == 0)
        *out = RNN_KIND_GRU;
    else if (strcmp(op, "RNN") == 0)
        *out = RNN_KIND_RNN;
    else
        return false;
    return true;
}

int64_t rnn_split_slices(rnn_kind kind, bool lbr, int64_t batch, int64_t gh, int64_t hidden,
                         int threads, bool r_const, int64_t *units)
{
    *units = 0;
    if (!r_const || threads < 2 || (kind == RNN_KIND_GRU && !lbr) ||
        batch > RNN_SPLIT_MAX_BATCH || batch < 1 ||
        (double)gh * (double)hidden * sizeof(float) < (double)RNN_SPLIT_MIN_BYTES)
        return 0;
    int64_t u = (hidden + threads - 1) / threads;
    u = (u + RNN_SPLIT_ALIGN - 1) / RNN_SPLIT_ALIGN * RNN_SPLIT_ALIGN;
    int64_t n = (hidden + u - 1) / u;
    if (n < 2)
        return 0;
    *units = u;
    return n;
}

/* Bytes of FLOATS floats rounded up to a cache line, into *out; false on
 * overflow. */
static bool rnn_floats_bytes(size_t floats, size_t *out)
{
    size_t b;
    if (__builtin_mul_overflow(floats, sizeof(float), &b) || __builtin_add_overflow(b, 63, &b))
        return false;
    *out = b & ~(size_t)63;
    return true;
}

/* *total += bytes of FLOATS floats, recording the offset in *off. */
bool rnn_place(size_t *total, size_t floats, size_t *off)
{
    size_t b;
    if (!rnn_floats_bytes(floats, &b))
        return false;
    *off = *total;
    return !__builtin_add_overflow(*total, b, total);
}

/* ---- get_kernel ------------------------------------------------------------ */

/* The graph view, which get_kernel has (kernel.c checked it for ints). */
static const pl_graph_api *rnn_view(const pl_node_desc *node)
{
    const pl_graph_api *g = cpu_host->graph;
    if (node->graph == NULL || g == NULL || !PL_ABI_HAS_FN(pl_graph_api, g, attr_strings))
        return NULL;
    return g;
}

/* Reads the activations of NODE (COUNT per direction) into K->act. */
pl_status *rnn_read_activations(const pl_node_desc *node, int count, rnn_kernel *k)
{
    static const char *const defaults[3][3] = {
        {"Tanh", NULL, NULL}, {"Sigmoid", "Tanh", NULL}, {"Sigmoid", "Tanh", "Tanh"}};
    const pl_graph_api *g = rnn_view(node);
    if (g == NULL)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "no graph view to read the activations from");
    const char *const *names = defaults[k->kind];
    size_t n = (size_t)count;
    const double *alphas = NULL, *betas = NULL;
    size_t n_alpha = 0, n_beta = 0;
    static const char *const attr[3] = {"activations", "activation_alpha", "activation_beta"};
    static const pl_graph_attr_kind kinds[3] = {PL_GRAPH_ATTR_STRINGS, PL_GRAPH_ATTR_FLOATS,
                                                PL_GRAPH_ATTR_FLOATS};
    for (int a = 0; a < 3; a++) {
        pl_graph_attr_kind have = g->attr_kind(node->graph, node->node_index, attr[a]);
        if (have == PL_GRAPH_ATTR_NONE)
            continue;
        if (have != kinds[a])
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "attribute '%s' is not %s",
                             attr[a], a == 0 ? "a list of strings" : "a list of floats");
        if (a == 0)
            g->attr_strings(node->graph, node->node_index, attr[a], &names, &n);
        else
            g->attr_floats(node->graph, node->node_index, attr[a], a == 1 ? &alphas : &betas,
                           a == 1 ? &n_alpha : &n_beta);
    }
    if (n != (size_t)count && n != (size_t)(count * k->dirs))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "%zu activations; expected %d per direction (%lld in all)", n, count,
                         (long long)(count * k->dirs));
    size_t ia = 0, ib = 0;
    for (size_t i = 0; i < n; i++) {
        rnn_act a;
        bool takes_alpha, takes_beta;
        if (!rnn_act_named(names[i], &a, &takes_alpha, &takes_beta))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "activation '%s' is not one of Relu, Tanh, Sigmoid, Affine, "
                             "LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, "
                             "Softsign, Softplus",
                             names[i] ? names[i] : "");
        if (takes_alpha && ia < n_alpha)
            a.alpha = (float)alphas[ia++];
        if (takes_beta && ib < n_beta)
            a.beta = (float)betas[ib++];
        k->act[i / (size_t)count][i % (size_t)count] = a;
    }
    if (n == (size_t)count && k->dirs == 2)
        memcpy(k->act[1], k->act[0], sizeof k->act[0]);
    return NULL;
}

/* Reads direction, layout, hidden_size, clip and the op's flags. */
pl_status *rnn_read_attrs(const pl_node_desc *node, rnn_kernel *k)
{
    const char *dir;
    size_t len;
    NN_TRY(nn_attr_string(node, "direction", "forward", &dir, &len));
    if (len == 7 && memcmp(dir, "forward", 7) == 0) {
        k->dirs = 1;
    } else if (len == 7 && memcmp(dir, "reverse", 7) == 0) {
        k->dirs = 1;
        k->reverse = true;
    } else if (len == 13 && memcmp(dir, "bidirectional", 13) == 0) {
        k->dirs = 2;
    } else {
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "direction '%.*s' is not forward, reverse or bidirectional", (int)len,
                         dir);
    }
    int64_t layout, lbr = 0, input_forget = 0;
    NN_TRY(cpu_attr_int(node, "layout", 0, &layout));
    if (layout != 0 && layout != 1)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "layout %lld is not 0 or 1",
                         (long long)layout);
    k->layout = layout == 1;
    if (k->kind == RNN_KIND_GRU)
        NN_TRY(cpu_attr_int(node, "linear_before_reset", 0, &lbr));
    if (k->kind == RNN_KIND_LSTM)
        NN_TRY(cpu_attr_int(node, "input_forget", 0, &input_forget));
    k->lbr = lbr != 0;
    k->input_forget = input_forget != 0;
    double clip;
    NN_TRY(cpu_attr_float(node, "clip", -1.0, &clip));
    const pl_graph_api *g = rnn_view(node);
    k->has_clip = g != NULL && g->attr_kind(node->graph, node->node_index, "clip") != 0;
    if (k->has_clip && !(clip >= 0.0))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "clip %g is not a threshold >= 0",
                         clip);
    k->clip = (float)clip;
    return NULL;
}

/* Fails unless tensor T (input or output NAME) has the N dims of WANT. */
static pl_status *rnn_expect(const pl_node_desc *node, const pl_tensor *t, const char *name,
                             int n, const int64_t *want)
{
    bool ok = t->ndim == n;
    for (int d = 0; ok && d < n; d++)
        ok = t->shape[d] == want[d];
    if (ok)
        return NULL;
    char have[128], exp[128];
    return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "%s is %s, expected %s", name,
                     cpu_dims_text(t->shape, t->ndim, have, sizeof have),
                     cpu_dims_text(want, n, exp, sizeof exp));
}

static const char *const rnn_in_names[8] = {"X", "W", "R", "B", "sequence_lens", "initial_h",
                                            "initial_c", "P"};

pl_status *rnn_check_rest(const pl_node_desc *node, rnn_kernel *k)
{
    static const char *const out_names[3] = {"Y", "Y_h", "Y_c"};
    const int64_t d = k->dirs, h = k->hidden, b = k->batch, gh = k->gh;
    const int64_t b_dims[2] = {d, 2 * gh}, l_dims[1] = {b}, p_dims[2] = {d, 3 * h};
    const int64_t s_dims[3] = {k->layout ? b : d, k->layout ? d : b, h};
    const int64_t *dims_of[8] = {NULL, NULL, NULL, b_dims, l_dims, s_dims, s_dims, p_dims};
    const int rank_of[8] = {0, 0, 0, 2, 1, 3, 3, 2};
    bool *flags[8] = {NULL, NULL, NULL, &k->has_b, &k->has_lens, &k->has_h0, &k->has_c0,
                      &k->has_p};
    for (size_t i = RNN_B; i < 8 && i < node->n_inputs; i++) {
        if (!math_input_present(node, i))
            continue;
        pl_dtype want = i == RNN_LENS ? PL_DTYPE_I32 : PL_DTYPE_F32;
        if (!PL_DTYPE_EQ(node->inputs[i].dtype, want))
            return cpu_error(PL_CODE_UNSUPPORTED, node->op, "%s has dtype %s (supported: %s)",
                             rnn_in_names[i], math_dtype_name(node->inputs[i].dtype),
                             i == RNN_LENS ? "i32" : "f32");
        NN_TRY(rnn_expect(node, &node->inputs[i], rnn_in_names[i], rank_of[i], dims_of[i]));
        *flags[i] = true;
    }
    const size_t max_out = k->kind == RNN_KIND_LSTM ? 3u : 2u;
    if (node->n_outputs > max_out)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "%zu outputs (at most %zu)",
                         node->n_outputs, max_out);
    const int64_t y_dims[4] = {k->layout ? b : k->seq, k->layout ? k->seq : d,
                               k->layout ? d : b, h};
    for (size_t o = 0; o < node->n_outputs; o++) {
        if (!math_output_present(node, o))
            continue;
        if (!PL_DTYPE_EQ(node->outputs[o].dtype, PL_DTYPE_F32))
            return cpu_error(PL_CODE_UNSUPPORTED, node->op, "%s has dtype %s (supported: f32)",
                             out_names[o], math_dtype_name(node->outputs[o].dtype));
        NN_TRY(rnn_expect(node, &node->outputs[o], out_names[o], o == 0 ? 4 : 3,
                          o == 0 ? y_dims : s_dims));
    }
    return NULL;
}

/* Reads the sizes from X and R and checks W and R against them, then the
 * other inputs and the outputs (rnn_check_rest); dtypes f32. */
static pl_status *rnn_read_shapes(const pl_node_desc *node, rnn_kernel *k)
{
    for (size_t i = 0; i < 3; i++) {
        if (i >= node->n_inputs || !math_input_present(node, i))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "input %s is absent",
                             rnn_in_names[i]);
        if (!PL_DTYPE_EQ(node->inputs[i].dtype, PL_DTYPE_F32))
            return cpu_error(PL_CODE_UNSUPPORTED, node->op, "%s has dtype %s (supported: f32)",
                             rnn_in_names[i], math_dtype_name(node->inputs[i].dtype));
    }
    const pl_tensor *x = &node->inputs[RNN_X], *r = &node->inputs[RNN_R];
    char buf[128];
    if (x->ndim != 3 || r->ndim != 3)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "%s %s must have rank 3",
                         x->ndim != 3 ? "X" : "R",
                         cpu_dims_text(x->ndim != 3 ? x->shape : r->shape,
                                       x->ndim != 3 ? x->ndim : r->ndim, buf, sizeof buf));
    k->seq = x->shape[k->layout ? 1 : 0];
    k->batch = x->shape[k->layout ? 0 : 1];
    k->input = x->shape[2];
    k->hidden = r->shape[2];
    if (k->hidden <= 0)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "R %s has hidden size 0",
                         cpu_dims_text(r->shape, r->ndim, buf, sizeof buf));
    int64_t hidden_attr;
    NN_TRY(cpu_attr_int(node, "hidden_size", k->hidden, &hidden_attr));
    if (hidden_attr != k->hidden)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "hidden_size %lld but R %s has hidden size %lld", (long long)hidden_attr,
                         cpu_dims_text(r->shape, r->ndim, buf, sizeof buf), (long long)k->hidden);
    const int64_t d = k->dirs, h = k->hidden, gh = k->gates * h;
    k->gh = gh;
    const int64_t w_dims[3] = {d, gh, k->input}, r_dims[3] = {d, gh, h};
    NN_TRY(rnn_expect(node, &node->inputs[RNN_W], "W", 3, w_dims));
    NN_TRY(rnn_expect(node, r, "R", 3, r_dims));
    return rnn_check_rest(node, k);
}

/* Plans the tasks and the workspace; false on overflow. */
static bool rnn_plan(pl_module_ctx *ctx, rnn_kernel *k)
{
    int threads = cpu_host->thread_count(ctx->host_ctx);
    k->threads = threads > 0 ? threads : 1;
    int64_t m = k->seq * k->batch, n = k->dirs * k->gh;
    /* The projection: about a task per thread, in blocks of whole rows. */
    int64_t per = (m + k->threads - 1) / k->threads;
    k->proj_rows = per > RNN_PROJ_MIN_ROWS ? per : RNN_PROJ_MIN_ROWS;
    int64_t row_tasks = m > 0 && n > 0 ? (m + k->proj_rows - 1) / k->proj_rows : 0;
    /* Fewer row blocks than threads (a short sequence of one batch row:
     * 24 rows by 4096 columns ran on one thread): split the columns too,
     * in multiples of RNN_PROJ_COL_ALIGN. */
    k->proj_col_tasks = 1;
    k->proj_cols = n;
    if (row_tasks > 0 && row_tasks < k->threads) {
        int64_t want_cols = (k->threads + row_tasks - 1) / row_tasks;
        int64_t cols = (n + want_cols - 1) / want_cols;
        cols = (cols + RNN_PROJ_COL_ALIGN - 1) / RNN_PROJ_COL_ALIGN * RNN_PROJ_COL_ALIGN;
        k->proj_cols = cols < n ? cols : n;
        k->proj_col_tasks = (n + k->proj_cols - 1) / k->proj_cols;
    }
    k->proj_tasks = row_tasks * k->proj_col_tasks;
    int64_t slice_rows = k->proj_rows < m ? k->proj_rows : m;
    if (!rnn_floats_bytes(cpu_gemm_scratch_floats(slice_rows, n, 0, false, k->packed_w != NULL),
                          &k->proj_slice))
        return false;
    /* The recurrence: directions times blocks of batch rows, about one
     * task per thread. */
    int64_t want = (k->threads + k->dirs - 1) / k->dirs;
    k->blocks = k->batch < want ? k->batch : want;
    if (k->blocks < 1)
        k->blocks = 1;
    k->block_rows = k->batch > 0 ? (k->batch + k->blocks - 1) / k->blocks : 1;
    k->blocks = k->batch > 0 ? (k->batch + k->block_rows - 1) / k->block_rows : 1;
    const size_t rows = (size_t)k->block_rows, hs = (size_t)k->hidden;
    bool two_phase = k->kind == RNN_KIND_GRU && !k->lbr;
    /* R is always packed by the time the recurrence runs (see rnn_run). */
    size_t scratch = cpu_gemm_scratch_floats(k->block_rows, k->n_rec, 0, false, true);
    if (two_phase) {
        size_t s2 = cpu_gemm_scratch_floats(k->block_rows, k->hidden, 0, false, true);
        scratch = s2 > scratch ? s2 : scratch;
    }
    size_t total = 0, f;
    bool ok = !__builtin_mul_overflow(rows, hs, &f) && rnn_place(&total, f, &k->off_h) &&
              rnn_place(&total, k->kind == RNN_KIND_LSTM ? f : 0, &k->off_c) &&
              rnn_place(&total, two_phase ? f : 0, &k->off_rh) &&
              rnn_place(&total, two_phase ? f : 0, &k->off_rec2) &&
              !__builtin_mul_overflow(rows, (size_t)k->n_rec, &f) &&
              rnn_place(&total, f, &k->off_gates) && rnn_place(&total, scratch, &k->off_scratch);
    k->task_bytes = total;
    /* The workspace: the projection, the bias, R packed for the run (when
     * it is not a constant), then the larger of the projection's slices and
     * the tasks' areas (the phases do not overlap). */
    size_t ws = 0, xw, proj, tasks, off_xw, rpack;
    ok = ok && !__builtin_mul_overflow((size_t)m, (size_t)n, &xw) && rnn_place(&ws, xw, &off_xw) &&
         rnn_place(&ws, k->has_b ? (size_t)n : 0, &k->ws_bias) &&
         rnn_floats_bytes(k->packed_r[0] || k->slices ? 0
                                                      : cpu_gemm_packed_b_floats(k->hidden, k->n_rec),
                          &k->rpack_r) &&
         rnn_floats_bytes(k->packed_r[0] || k->slices || !two_phase
                              ? 0
                              : cpu_gemm_packed_b_floats(k->hidden, k->hidden),
                          &k->rpack_rh) &&
         rnn_place(&ws, 0, &k->ws_rpack) &&
         !__builtin_add_overflow(k->rpack_r, k->rpack_rh, &rpack) &&
         !__builtin_mul_overflow(rpack, (size_t)k->dirs, &rpack) &&
         !__builtin_add_overflow(ws, rpack, &ws) &&
         !__builtin_mul_overflow(k->proj_slice, (size_t)k->threads, &proj) &&
         !__builtin_mul_overflow(k->task_bytes, (size_t)(k->dirs * k->blocks), &tasks);
    k->ws_area = ws;
    if (ok && k->slices > 0) {
        /* the split recurrence: h twice and c for a direction, then a task
         * area per slice (the directions run one after the other) */
        size_t split = 0, hf, gf, sf = cpu_gemm_scratch_floats(k->batch, k->gates * k->slice_units,
                                                                 0, false, true);
        ok = !__builtin_mul_overflow((size_t)k->batch, hs, &hf) &&
             rnn_place(&split, hf, &k->sp_h[0]) && rnn_place(&split, hf, &k->sp_h[1]) &&
             rnn_place(&split, hf, &k->sp_c) && rnn_place(&split, 0, &k->sp_tasks) &&
             !__builtin_mul_overflow((size_t)k->batch, (size_t)(k->gates * k->slice_units), &gf);
        size_t task = 0, off_g;
        ok = ok && rnn_place(&task, gf, &off_g) && rnn_place(&task, sf, &k->sp_off_scratch) &&
             !__builtin_mul_overflow(task, (size_t)k->slices, &f) &&
             !__builtin_add_overflow(split, f, &split);
        k->sp_task_bytes = task;
        tasks = split > tasks ? split : tasks;
    }
    ok = ok && !__builtin_add_overflow(ws, proj > tasks ? proj : tasks, &k->ws_total);
    return ok;
}

/* Packs W and R for the GEMM into the kernel's block when they are
 * constants of the graph; allocates the kernel either way. */
static rnn_kernel *rnn_alloc(pl_module_ctx *ctx, const pl_node_desc *node, const rnn_kernel *tmpl)
{
    const void *wd = NULL, *rd = NULL;
    size_t wb = 0, rb = 0;
    const int64_t d = tmpl->dirs, gh = tmpl->gh, in = tmpl->input, hs = tmpl->hidden;
    bool two_phase = tmpl->kind == RNN_KIND_GRU && !tmpl->lbr;
    bool query = cpu_node_query(node);
    bool w_const = !query && math_input_constant(node, RNN_W, &wd, &wb) &&
                   wb >= (size_t)(d * gh * in) * sizeof(float) && in > 0;
    bool r_const = !query && math_input_constant(node, RNN_R, &rd, &rb) &&
                   rb >= (size_t)(d * gh * hs) * sizeof(float);
    size_t head = (sizeof(rnn_kernel) + 63) & ~(size_t)63;
    int64_t units = 0;
    int64_t slices = rnn_split_slices(tmpl->kind, tmpl->lbr, tmpl->batch, tmpl->gh, hs,
                                      cpu_host->thread_count(ctx->host_ctx), r_const, &units);
    size_t w_floats = w_const ? cpu_gemm_packed_b_floats(in, d * gh) : 0;
    size_t slice_floats = slices ? cpu_gemm_packed_b_floats(hs, tmpl->gates * units) : 0;
    size_t r_floats = !r_const ? 0
                      : slices ? slice_floats * (size_t)slices
                               : cpu_gemm_packed_b_floats(hs, tmpl->n_rec);
    float *gather = NULL; /* one slice's rows of R, gate by gate */
    if (slices > 0) {
        gather = cpu_host->host_alloc(ctx->host_ctx,
                                      (size_t)(tmpl->gates * units * hs) * sizeof(float), 64);
        if (gather == NULL)
            return NULL;
    }
    size_t rh_floats = r_const && two_phase ? cpu_gemm_packed_b_floats(hs, hs) : 0;
    size_t bytes = head, part;
    size_t parts[5] = {w_floats, r_floats, r_floats, rh_floats, rh_floats};
    for (size_t i = 0; i < 5; i++)
        if ((i == 2 || i == 4) && d < 2)
            parts[i] = 0;
    for (size_t i = 0; i < 5; i++)
        if (!rnn_floats_bytes(parts[i], &part) || __builtin_add_overflow(bytes, part, &bytes)) {
            cpu_host->host_free(ctx->host_ctx, gather);
            return NULL;
        }
    rnn_kernel *k = (rnn_kernel *)cpu_kernel_alloc(ctx, bytes, node->op, NULL);
    if (k == NULL) {
        cpu_host->host_free(ctx->host_ctx, gather);
        return NULL;
    }
    pl_kernel base = k->base;
    *k = *tmpl;
    k->base = base;
    k->slices = slices;
    k->slice_units = units;
    k->slice_floats = slice_floats;
    char *at = (char *)k + head;
    if (w_const) {
        float *buf = (float *)(void *)at;
        cpu_gemm_pack_b(in, d * gh, (const float *)wd, in, true, buf);
        k->packed_w = buf;
        rnn_floats_bytes(w_floats, &part);
        at += part;
    }
    for (int64_t dir = 0; slices > 0 && dir < d; dir++) {
        const float *r = (const float *)rd + dir * gh * hs;
        float *buf = (float *)(void *)at;
        k->packed_slices[dir] = buf;
        for (int64_t sl = 0; sl < slices; sl++) {
            int64_t j0 = sl * units, w = hs - j0 < units ? hs - j0 : units;
            for (int64_t q = 0; q < tmpl->gates; q++)
                memcpy(gather + q * w * hs, r + (q * hs + j0) * hs,
                       (size_t)(w * hs) * sizeof(float));
            cpu_gemm_pack_b(hs, tmpl->gates * w, gather, hs, true,
                            buf + (size_t)sl * slice_floats);
        }
        rnn_floats_bytes(r_floats, &part);
        at += part;
    }
    cpu_host->host_free(ctx->host_ctx, gather);
    for (int64_t dir = 0; r_const && slices == 0 && dir < d; dir++) {
        const float *r = (const float *)rd + dir * gh * hs;
        float *buf = (float *)(void *)at;
        cpu_gemm_pack_b(hs, tmpl->n_rec, r, hs, true, buf);
        k->packed_r[dir] = buf;
        rnn_floats_bytes(r_floats, &part);
        at += part;
        if (two_phase) {
            buf = (float *)(void *)at;
            cpu_gemm_pack_b(hs, hs, r + 2 * hs * hs, hs, true, buf);
            k->packed_rh[dir] = buf;
            rnn_floats_bytes(rh_floats, &part);
            at += part;
        }
    }
    return k;
}

static pl_status *rnn_build(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    rnn_kernel t;
    memset(&t, 0, sizeof t);
    if (!rnn_kind_of(node->op, &t.kind))
        t.kind = RNN_KIND_RNN;
    t.gates = t.kind == RNN_KIND_LSTM ? 4 : t.kind == RNN_KIND_GRU ? 3 : 1;
    NN_TRY(rnn_read_attrs(node, &t));
    NN_TRY(rnn_read_shapes(node, &t));
    NN_TRY(rnn_read_activations(node, t.kind == RNN_KIND_LSTM ? 3 : t.kind == RNN_KIND_GRU ? 2 : 1,
                                &t));
    t.n_rec = t.kind == RNN_KIND_GRU && !t.lbr ? 2 * t.hidden : t.gh;
    /* Sizes the GEMM's int64 arithmetic and size_t counts must hold. */
    size_t n;
    if (__builtin_mul_overflow((size_t)t.seq, (size_t)t.batch, &n) ||
        __builtin_mul_overflow(n, (size_t)(t.dirs * t.gh), &n) ||
        __builtin_mul_overflow((size_t)(t.dirs * t.gh), (size_t)(t.input + t.hidden), &n))
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "sizes too large");
    rnn_kernel *k = rnn_alloc(ctx, node, &t);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    if (!rnn_plan(ctx, k)) {
        cpu_host->host_free(ctx->host_ctx, k);
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "sizes too large for the workspace");
    }
    k->base.run_any = rnn_run;
    k->base.n_reads = 3;
    k->base.n_outputs = node->n_outputs;
    k->base.out_elements = 0;
    k->base.workspace_bytes = k->ws_total;
    *out_kernel = &k->base;
    return NULL;
}
