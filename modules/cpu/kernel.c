/* kernel.c — the cpu module's imperative mode: get_kernel finds the op's
 * builder, checks what every kernel needs (domain, arity, f32 dtypes, fully
 * known shapes) and lets the builder precompute the kernel; kernel_run
 * checks the arguments of a run and hands the output request to the kernel;
 * kernel_release frees it. The op tables of every family are searched
 * here, and cpu_op_tables_check keeps them to one entry per op. Also the
 * small helpers the builders share: attributes read through the host's
 * graph view, and error statuses. */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernel.h"
#include "nn_window.h"

/* The ops no family claims: the base table. */
static const cpu_op_entry cpu_ops[] = {
    {"MatMul", cpu_build_matmul, 2, 2, 3u, CPU_OP_F64 | CPU_OP_INTS},
    {"Gemm", cpu_build_gemm, 2, 3, 7u, CPU_OP_F64},
    {"Softmax", cpu_build_softmax, 1, 1, 1u, CPU_OP_F64},
    {NULL, NULL, 0, 0, 0, 0},
};

/* Every op table, with the file that holds it (for cpu_op_tables_check's
 * message). */
static const cpu_op_entry *const cpu_op_tables[] = {
    cpu_ops_nn,    cpu_ops_math,   cpu_ops_shape,     cpu_ops_rnn,    cpu_ops_index,
    cpu_ops_loss,  cpu_ops_quant,  cpu_ops_signal,    cpu_ops_normalize, cpu_ops_sample,
    cpu_ops_text,  cpu_ops_strings, cpu_ops_detect, cpu_ops_unique, cpu_ops_qlinear_ms, cpu_ops_deform,
    cpu_ops_random, cpu_ops_linattn, cpu_ops_trees, cpu_ops_svm, cpu_ops_label_encode, cpu_ops_gqa, cpu_ops_nbits, cpu_ops};
static const char *const cpu_op_table_files[] = {
    "nn.c",   "math.c",  "shape.c",  "rnn_build.c", "index.c",  "loss.c",
    "quant.c", "signal.c", "normalize.c", "sample.c", "text.c", "nms.c", "unique.c",
    "qlinear_ms.c", "deform.c", "random.c", "linattn.c", "trees.c", "svm.c", "label_encode.c", "gqa.c", "nbits.c", "kernel.c"};
#define CPU_N_OP_TABLES (sizeof cpu_op_tables / sizeof cpu_op_tables[0])

pl_status *cpu_op_tables_check(void)
{
    size_t first = 0, second = 0;
    const char *op = cpu_op_tables_duplicate(cpu_op_tables, CPU_N_OP_TABLES, &first, &second);
    if (op == NULL)
        return NULL;
    return cpu_host->status_create(PL_CODE_INTERNAL,
                                   "cpu: op '%s' has two kernel table entries (%s and %s): "
                                   "only the first is ever found",
                                   op, cpu_op_table_files[first], cpu_op_table_files[second]);
}

/* The domain flag of DOMAIN: 0 for ONNX's, CPU_OP_PLINTH_DOMAIN or
 * CPU_OP_MS_DOMAIN; false for a domain the module has no op of. */
static bool cpu_domain_flag(const char *domain, uint32_t *out)
{
    if (domain[0] == '\0' || strcmp(domain, "ai.onnx") == 0)
        *out = 0;
    else if (strcmp(domain, "ai.plinth") == 0)
        *out = CPU_OP_PLINTH_DOMAIN;
    else if (strcmp(domain, "com.microsoft") == 0)
        *out = CPU_OP_MS_DOMAIN;
    else
        return false;
    return true;
}

/* The entries of every table sorted by op, made once: the partitioner
 * asks for a kernel per node per plan, and the walk over the tables with a
 * strcmp per entry was a tenth of the partition of a decoder's tail. */
#define CPU_OP_INDEX_MAX 1024
static const cpu_op_entry *cpu_op_index[CPU_OP_INDEX_MAX];
static size_t cpu_op_index_n; /* 0: more ops than it holds; the tables are walked */
static pthread_once_t cpu_op_index_once = PTHREAD_ONCE_INIT;

static int cpu_op_entry_cmp(const void *a, const void *b)
{
    return strcmp((*(const cpu_op_entry *const *)a)->op, (*(const cpu_op_entry *const *)b)->op);
}

static void cpu_op_index_make(void)
{
    size_t n = 0;
    for (size_t t = 0; t < CPU_N_OP_TABLES; t++)
        for (const cpu_op_entry *e = cpu_op_tables[t]; e->op != NULL; e++)
            if (n < CPU_OP_INDEX_MAX)
                cpu_op_index[n++] = e;
            else
                return;
    qsort(cpu_op_index, n, sizeof *cpu_op_index, cpu_op_entry_cmp);
    cpu_op_index_n = n;
}

/* The entry of OP of DOMAIN (cpu_op_tables_check made it the only one). */
static const cpu_op_entry *cpu_find_op(const char *domain, const char *op)
{
    uint32_t want;
    if (!cpu_domain_flag(domain, &want))
        return NULL;
    pthread_once(&cpu_op_index_once, cpu_op_index_make);
    const cpu_op_entry *found = NULL;
    if (cpu_op_index_n > 0) {
        size_t lo = 0, hi = cpu_op_index_n;
        while (lo < hi && found == NULL) {
            size_t mid = lo + (hi - lo) / 2;
            int c = strcmp(cpu_op_index[mid]->op, op);
            if (c == 0)
                found = cpu_op_index[mid];
            else if (c < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
    } else {
        for (size_t t = 0; t < CPU_N_OP_TABLES && found == NULL; t++)
            for (const cpu_op_entry *e = cpu_op_tables[t]; e->op != NULL && found == NULL; e++)
                if (strcmp(e->op, op) == 0)
                    found = e;
    }
    if (found == NULL)
        return NULL;
    return (found->flags & (CPU_OP_PLINTH_DOMAIN | CPU_OP_MS_DOMAIN)) == want ? found : NULL;
}

/* ---- shared helpers ------------------------------------------------------ */

pl_status *cpu_error(pl_code code, const char *op, const char *fmt, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return cpu_host->status_create(code, "cpu: %s: %s", op, message);
}

const char *cpu_dims_text(const int64_t *dims, int32_t ndim, char *buf, size_t size)
{
    size_t used = 0;
    used += (size_t)snprintf(buf, size, "[");
    for (int32_t d = 0; d < ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, d ? ",%lld" : "%lld",
                                 (long long)dims[d]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

size_t cpu_elements(const int64_t *dims, int32_t ndim)
{
    size_t n = 1;
    for (int32_t d = 0; d < ndim; d++)
        n *= (size_t)dims[d];
    return n;
}

bool cpu_broadcast_strides(const int64_t *shape, int r, const int64_t *out_dims, int out_r,
                           int64_t *strides)
{
    if (r > out_r)
        return false;
    int64_t step = 1;
    for (int d = out_r - 1; d >= 0; d--) {
        int sd = d - (out_r - r);
        int64_t dim = sd >= 0 ? shape[sd] : 1;
        if (dim != out_dims[d] && dim != 1)
            return false;
        strides[d] = dim == 1 ? 0 : step;
        step *= dim;
    }
    return true;
}

pl_kernel *cpu_kernel_alloc(pl_module_ctx *ctx, size_t bytes, const char *op, cpu_run_fn run)
{
    pl_kernel *k = cpu_host->host_alloc(ctx->host_ctx, bytes, 0);
    if (k == NULL)
        return NULL;
    memset(k, 0, bytes);
    k->op = op;
    k->run = run;
    return k;
}

/* The graph view's table when it can read attributes, else NULL. */
static const pl_graph_api *cpu_graph_api(const pl_node_desc *node)
{
    const pl_graph_api *g = cpu_host->graph;
    if (node->graph == NULL || g == NULL || !PL_ABI_HAS_FN(pl_graph_api, g, attr_kind) ||
        !PL_ABI_HAS_FN(pl_graph_api, g, attr_ints))
        return NULL;
    return g;
}

/* Finds attribute NAME of KIND: 1 present, 0 absent, or a status (no view,
 * or an attribute of another kind). */
static pl_status *cpu_attr_find(const pl_node_desc *node, const char *name,
                                pl_graph_attr_kind kind, const pl_graph_api **out_api,
                                int *out_present)
{
    *out_present = 0;
    const pl_graph_api *g = cpu_graph_api(node);
    *out_api = g;
    if (g == NULL)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "no graph view to read attribute '%s' from", name);
    pl_graph_attr_kind have = g->attr_kind(node->graph, node->node_index, name);
    if (have == PL_GRAPH_ATTR_NONE)
        return NULL;
    if (have != kind)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "attribute '%s' has kind %d, expected %d", name, (int)have, (int)kind);
    *out_present = 1;
    return NULL;
}

pl_status *cpu_attr_int(const pl_node_desc *node, const char *name, int64_t default_value,
                        int64_t *out)
{
    *out = default_value;
    const pl_graph_api *g;
    int present;
    pl_status *st = cpu_attr_find(node, name, PL_GRAPH_ATTR_INT, &g, &present);
    if (st == NULL && present)
        g->attr_int(node->graph, node->node_index, name, out);
    return st;
}

pl_status *cpu_attr_float(const pl_node_desc *node, const char *name, double default_value,
                          double *out)
{
    *out = default_value;
    const pl_graph_api *g;
    int present;
    pl_status *st = cpu_attr_find(node, name, PL_GRAPH_ATTR_FLOAT, &g, &present);
    if (st == NULL && present)
        g->attr_float(node->graph, node->node_index, name, out);
    return st;
}

pl_status *cpu_attr_ints(const pl_node_desc *node, const char *name,
                         const int64_t **out_values, size_t *out_count)
{
    *out_values = NULL;
    *out_count = 0;
    const pl_graph_api *g;
    int present;
    pl_status *st = cpu_attr_find(node, name, PL_GRAPH_ATTR_INTS, &g, &present);
    if (st == NULL && present)
        g->attr_ints(node->graph, node->node_index, name, out_values, out_count);
    return st;
}

pl_status *cpu_attr_floats(const pl_node_desc *node, const char *name,
                           const double **out_values, size_t *out_count)
{
    *out_values = NULL;
    *out_count = 0;
    const pl_graph_api *g;
    int present;
    pl_status *st = cpu_attr_find(node, name, PL_GRAPH_ATTR_FLOATS, &g, &present);
    if (st == NULL && present && !PL_ABI_HAS_FN(pl_graph_api, g, attr_floats))
        return cpu_error(PL_CODE_UNSUPPORTED, node->op,
                         "the host cannot read floats attribute '%s'", name);
    if (st == NULL && present)
        g->attr_floats(node->graph, node->node_index, name, out_values, out_count);
    return st;
}

/* ---- get_kernel ---------------------------------------------------------- */

static const char *cpu_dtype_name(pl_dtype dt, char *buf, size_t size)
{
    static const struct {
        pl_dtype dt;
        const char *name;
    } names[] = {
        {{PL_TYPE_FLOAT, 32, 1}, "f32"}, {{PL_TYPE_FLOAT, 64, 1}, "f64"},
        {{PL_TYPE_FLOAT, 16, 1}, "f16"}, {{PL_TYPE_BFLOAT, 16, 1}, "bf16"},
        {{PL_TYPE_UINT, 8, 1}, "u8"},    {{PL_TYPE_INT, 8, 1}, "i8"},
        {{PL_TYPE_INT, 32, 1}, "i32"},   {{PL_TYPE_INT, 64, 1}, "i64"},
        {{PL_TYPE_BOOL, 8, 1}, "bool"},
        {{PL_TYPE_INT, 16, 1}, "i16"},   {{PL_TYPE_UINT, 16, 1}, "u16"},
        {{PL_TYPE_UINT, 32, 1}, "u32"},  {{PL_TYPE_UINT, 64, 1}, "u64"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (PL_DTYPE_EQ(dt, names[i].dt))
            return names[i].name;
    if (dt.lanes == 0)
        return "unknown";
    snprintf(buf, size, "(code %u, %u bits, %u lanes)", dt.code, dt.bits, dt.lanes);
    return buf;
}

/* True when input I of NODE is absent. An absent optional input and an
 * input of unknown rank both have ndim -1; the view tells them apart. */
static bool cpu_input_absent(const pl_node_desc *node, size_t i)
{
    if (node->inputs[i].ndim >= 0)
        return false;
    const pl_graph_api *g = cpu_host->graph;
    if (node->graph != NULL && g != NULL && PL_ABI_HAS_FN(pl_graph_api, g, node_input))
        return g->node_input(node->graph, node->node_index, i) < 0;
    return true;
}

/* True when output O of NODE is absent (an unnamed optional output, which
 * the description gives ndim -1 like an output of unknown rank). */
static bool cpu_output_absent(const pl_node_desc *node, size_t o)
{
    if (node->outputs[o].ndim >= 0)
        return false;
    const pl_graph_api *g = cpu_host->graph;
    return node->graph != NULL && g != NULL && PL_ABI_HAS_FN(pl_graph_api, g, node_output) &&
           g->node_output(node->graph, node->node_index, o) < 0;
}

/* A fully known shape whose element count fits in size_t (and whose byte
 * count does too). */
bool cpu_shape_known(const pl_tensor *t)
{
    if (t->ndim < 0 || t->ndim > CPU_MAX_RANK || (t->ndim > 0 && t->shape == NULL))
        return false;
    size_t n = sizeof(float);
    for (int32_t d = 0; d < t->ndim; d++) {
        if (t->shape[d] < 0 || (uint64_t)t->shape[d] > SIZE_MAX)
            return false;
        if (__builtin_mul_overflow(n, (size_t)t->shape[d], &n))
            return false;
    }
    return true;
}

/* The checks every kernel shares (see cpu_build_fn). */
static pl_status *cpu_check_node(const cpu_op_entry *e, const pl_node_desc *node)
{
    const char *op = e->op;
    char buf[64];
    if (node->n_inputs < e->min_inputs || node->n_inputs > e->max_inputs ||
        (node->n_inputs > 0 && node->inputs == NULL))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "%zu inputs (expected %zu to %zu)",
                         node->n_inputs, e->min_inputs, e->max_inputs);
    bool multi = (e->flags & CPU_OP_MULTI_OUTPUT) != 0;
    if (node->n_outputs < 1 || (!multi && node->n_outputs != 1) || node->outputs == NULL)
        return cpu_error(PL_CODE_UNSUPPORTED, op, "%zu outputs (only 1 is supported)",
                         node->n_outputs);
    if (e->flags & CPU_OP_ANY_DTYPE) {
        /* Outputs first, as below: unknown whenever an input is. Output 0
         * may be absent only in ops whose outputs are all optional. */
        for (size_t o = 0; o < node->n_outputs; o++)
            if ((o == 0 || node->outputs[o].ndim >= 0) && !cpu_shape_known(&node->outputs[o]) &&
                !((e->flags & CPU_OP_OPTIONAL_OUTPUTS) && cpu_output_absent(node, o)))
                return cpu_error(PL_CODE_UNSUPPORTED, op, "output shape not fully known");
        for (size_t i = 0; i < node->n_inputs; i++)
            if (!cpu_input_absent(node, i) && !cpu_shape_known(&node->inputs[i]))
                return cpu_error(PL_CODE_UNSUPPORTED, op, "input %zu shape not fully known", i);
        return NULL;
    }
    /* The float dtype: f32, or f64, i32 or i64 where the op takes it
     * (output 0 says). */
    pl_dtype fdt = PL_DTYPE_F32, odt = node->outputs[0].dtype;
    if (((e->flags & CPU_OP_F64) && PL_DTYPE_EQ(odt, PL_DTYPE_F64)) ||
        ((e->flags & CPU_OP_INTS) &&
         (PL_DTYPE_EQ(odt, PL_DTYPE_I32) || PL_DTYPE_EQ(odt, PL_DTYPE_I64))))
        fdt = odt;
    for (size_t i = 0; i < node->n_inputs; i++) {
        bool is_float = i < 31 ? (e->float_inputs >> i) & 1u : e->float_inputs >> 31;
        if (i >= e->min_inputs && cpu_input_absent(node, i))
            continue;
        if (is_float && !PL_DTYPE_EQ(node->inputs[i].dtype, fdt))
            return cpu_error(PL_CODE_UNSUPPORTED, op, "unsupported dtype %s",
                             cpu_dtype_name(node->inputs[i].dtype, buf, sizeof buf));
    }
    if (!PL_DTYPE_EQ(node->outputs[0].dtype, fdt))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "unsupported dtype %s",
                         cpu_dtype_name(node->outputs[0].dtype, buf, sizeof buf));
    /* The output first: it is unknown whenever an input is, and says so
     * in the terms of the node. */
    if (!cpu_shape_known(&node->outputs[0]))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "output shape not fully known");
    for (size_t i = 0; i < node->n_inputs; i++) {
        if (i >= e->min_inputs && cpu_input_absent(node, i))
            continue;
        if (!cpu_shape_known(&node->inputs[i]))
            return cpu_error(PL_CODE_UNSUPPORTED, op, "input %zu shape not fully known", i);
    }
    return NULL;
}

pl_status *cpu_get_kernel(pl_module_ctx *ctx, int device, const pl_node_desc *node,
                          pl_kernel **out_kernel, size_t *out_workspace_bytes)
{
    if (out_kernel != NULL)
        *out_kernel = NULL;
    if (out_workspace_bytes != NULL)
        *out_workspace_bytes = 0;
    if (device != 0)
        return cpu_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                       "cpu: no device %d (the cpu module has device 0 only)",
                                       device);
    if (node == NULL || out_kernel == NULL || out_workspace_bytes == NULL)
        return cpu_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                       "cpu: get_kernel without a node or output pointers");
    if (!PL_ABI_HAS_FIELD(pl_node_desc, node, outputs) || node->op == NULL)
        return cpu_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                       "cpu: get_kernel with a node description of %u bytes "
                                       "(ABI 1.0 has %zu) or without an op",
                                       node->header.struct_size, sizeof(pl_node_desc));
    const char *domain = node->domain != NULL ? node->domain : "";
    const cpu_op_entry *e = cpu_find_op(domain, node->op);
    if (e == NULL && domain[0] != '\0')
        return cpu_host->status_create(PL_CODE_UNSUPPORTED,
                                       "cpu: no kernel for op '%s' of domain '%s'", node->op,
                                       domain);
    if (e == NULL)
        return cpu_host->status_create(PL_CODE_UNSUPPORTED, "cpu: no kernel for op '%s' yet",
                                       node->op);
    pl_status *st = nn_pool8_wanted(node) ? nn_build_pool8(ctx, node, out_kernel)
                                          : cpu_build_node(ctx, e, node, out_kernel);
    /* f16 and bf16: computed in f32 by the op's f32 kernel, unless the op
     * takes them itself (the shape ops, Cast). A refusal of the wrapped
     * kernel for a reason of its own replaces the dtype refusal. */
    if (st != NULL && cpu_host->status_code(st) == PL_CODE_UNSUPPORTED &&
        cpu_wrap_wanted(node)) {
        pl_status *wrapped = cpu_wrap_build(ctx, e, node, out_kernel);
        if (wrapped == NULL || cpu_host->status_code(wrapped) != PL_CODE_UNSUPPORTED ||
            strstr(cpu_host->status_message(st), "dtype") != NULL) {
            cpu_host->status_free(st);
            st = wrapped;
        } else {
            cpu_host->status_free(wrapped);
        }
    }
    if (st == NULL && *out_kernel != NULL)
        *out_workspace_bytes = (*out_kernel)->workspace_bytes;
    return st;
}

pl_status *cpu_build_node(pl_module_ctx *ctx, const cpu_op_entry *e, const pl_node_desc *node,
                          pl_kernel **out_kernel)
{
    pl_status *st = cpu_check_node(e, node);
    return st != NULL ? st : e->build(ctx, node, out_kernel);
}

/* ---- kernel_run ---------------------------------------------------------- */

static bool cpu_tensor_empty(const pl_tensor *t)
{
    if (t->shape == NULL)
        return false;
    for (int32_t d = 0; d < t->ndim; d++)
        if (t->shape[d] == 0)
            return true;
    return false;
}

pl_status *cpu_kernel_run(pl_module_ctx *ctx, pl_kernel *kernel, const pl_run_args *args)
{
    if (kernel == NULL || args == NULL || !PL_ABI_HAS_FIELD(pl_run_args, args, requests))
        return cpu_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                       "cpu: kernel_run without a kernel or arguments");
    const char *op = kernel->op;
    if (kernel->run_any != NULL) {
        if (args->n_outputs != kernel->n_outputs || args->outputs == NULL ||
            args->requests == NULL || (kernel->n_reads > 0 && args->inputs == NULL) ||
            args->n_inputs < kernel->n_reads)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "kernel_run with %zu inputs and %zu outputs (expected %zu and %zu)",
                             args->n_inputs, args->n_outputs, kernel->n_reads,
                             kernel->n_outputs);
        return kernel->run_any(ctx, kernel, args);
    }
    if (args->n_outputs != 1 || args->outputs == NULL || args->requests == NULL)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "kernel_run with %zu outputs%s (expected 1 and its request)",
                         args->n_outputs, args->requests == NULL ? " and no requests" : "");
    pl_output_request req = args->requests[0];
    if (req == PL_REQ_NULL)
        return NULL;
    if (req != PL_REQ_WRITE && req != PL_REQ_INPLACE && req != PL_REQ_ADD_TO)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "unknown output request %d", (int)req);
    if (req == PL_REQ_INPLACE && !kernel->inplace_ok)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "in-place output requested, but this op writes no output in place");
    const pl_tensor *out = &args->outputs[0];
    if (out->ndim < 0 || (out->ndim > 0 && out->shape == NULL) ||
        cpu_elements(out->shape, out->ndim) != kernel->out_elements)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "output of the run does not have the %zu elements of the kernel",
                         kernel->out_elements);
    if (kernel->out_elements == 0)
        return NULL;
    if (args->n_inputs < kernel->n_reads || args->inputs == NULL)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "kernel_run with %zu inputs (expected %zu)",
                         args->n_inputs, kernel->n_reads);
    for (size_t i = 0; i < kernel->n_reads; i++)
        if (args->inputs[i].data == NULL && !cpu_tensor_empty(&args->inputs[i]))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "input %zu has no data", i);
    if (out->data == NULL)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "the output has no data");
    float *data = (float *)(void *)((char *)out->data + out->byte_offset);
    if (req == PL_REQ_ADD_TO && cpu_epilogue_any(&kernel->epilogue)) {
        /* out += epilogue(result): the epilogue sits between the product
         * and the sum, so the result goes through a buffer of its own. */
        size_t bytes = kernel->out_elements * sizeof(float);
        float *tmp = cpu_host->host_alloc(ctx->host_ctx, bytes, 64);
        if (tmp == NULL)
            return cpu_error(PL_CODE_OUT_OF_MEMORY, op,
                             "out of memory for %zu bytes of fused output", bytes);
        pl_status *st = kernel->run(ctx, kernel, args, tmp, PL_REQ_WRITE);
        if (st == NULL)
            for (size_t i = 0; i < kernel->out_elements; i++)
                data[i] += tmp[i];
        cpu_host->host_free(ctx->host_ctx, tmp);
        return st;
    }
    return kernel->run(ctx, kernel, args, data, req);
}

/* ---- kernel_fuse --------------------------------------------------------- */

/* Clip's bound I (1 min, 2 max) of NEXT when it is absent (*out unchanged)
 * or a constant f32 scalar; false otherwise. */
static bool cpu_clip_bound(const pl_node_desc *next, size_t i, float *out)
{
    const pl_graph_api *g = cpu_host->graph;
    if (i >= next->n_inputs)
        return true;
    int64_t t = g->node_input(next->graph, next->node_index, i);
    if (t < 0)
        return true;
    const void *data;
    size_t bytes;
    if (!PL_DTYPE_EQ(next->inputs[i].dtype, PL_DTYPE_F32) ||
        !g->tensor_constant(next->graph, t, &data, &bytes) || bytes != sizeof(float))
        return false;
    memcpy(out, data, sizeof(float));
    return true;
}

/* NEXT's input that is not input SELF (0 or 1) of a binary NEXT: a
 * constant f32 of the graph, its data in *DATA and its elements in *COUNT;
 * its shape must broadcast to a row of COLS along the last axis (dims all 1
 * but the last, which is 1 or COLS). False otherwise. */
static bool cpu_fuse_operand(const pl_node_desc *next, size_t self, int64_t cols,
                             const float **data, size_t *count)
{
    const pl_graph_api *g = cpu_host->graph;
    size_t i = 1 - self;
    const pl_tensor *t = &next->inputs[i];
    int64_t id = g->node_input(next->graph, next->node_index, i);
    const void *p;
    size_t bytes;
    if (id < 0 || !PL_DTYPE_EQ(t->dtype, PL_DTYPE_F32) || t->ndim < 0 ||
        !g->tensor_constant(next->graph, id, &p, &bytes))
        return false;
    for (int32_t d = 0; d + 1 < t->ndim; d++)
        if (t->shape[d] != 1)
            return false;
    int64_t last = t->ndim > 0 ? t->shape[t->ndim - 1] : 1;
    if ((last != 1 && last != cols) || bytes != (size_t)last * sizeof(float))
        return false;
    *data = p;
    *count = (size_t)last;
    return true;
}

/* The Add, Mul or Div by a constant that NEXT is, taken into KERNEL's
 * epilogue of scale and column values (kernel->epilogue_cols > 0, no
 * activation and no column values yet): Mul or Div by one value scales the
 * product (its alpha), Add of one value per column (a bias, [N] or [1, ..,
 * 1, N]) is added as it is stored, from the kernel's copy. */
static bool cpu_fuse_affine(pl_module_ctx *ctx, pl_kernel *kernel, const pl_node_desc *next,
                            cpu_epilogue *e)
{
    const pl_graph_api *g = cpu_host->graph;
    if (kernel->epilogue_cols <= 0 || kernel->epilogue.col_add != NULL ||
        next->n_inputs != 2 || next->outputs[0].ndim < 1 ||
        next->outputs[0].shape[next->outputs[0].ndim - 1] != kernel->epilogue_cols ||
        !PL_ABI_HAS_FN(pl_graph_api, g, tensor_constant))
        return false;
    /* which input is the kernel's result: the one that is not a constant */
    const void *p;
    size_t bytes, self = 0;
    int64_t in0 = g->node_input(next->graph, next->node_index, 0);
    if (in0 < 0 || g->tensor_constant(next->graph, in0, &p, &bytes))
        self = 1;
    if (self == 1 && strcmp(next->op, "Div") == 0)
        return false; /* c / x */
    if (!PL_DTYPE_EQ(next->inputs[self].dtype, PL_DTYPE_F32))
        return false;
    const float *c;
    size_t count;
    if (!cpu_fuse_operand(next, self, kernel->epilogue_cols, &c, &count))
        return false;
    *e = kernel->epilogue;
    if (strcmp(next->op, "Add") == 0 && count == (size_t)kernel->epilogue_cols) {
        size_t bytes = count * sizeof(float);
        float *copy = cpu_host->host_alloc(ctx->host_ctx, bytes, 64);
        if (copy == NULL)
            return false;
        memcpy(copy, c, bytes);
        kernel->epilogue_buf = copy;
        e->col_add = copy;
        return true;
    }
    if (count != 1 || !isfinite(c[0]) || c[0] == 0.0f)
        return false;
    if (strcmp(next->op, "Mul") == 0)
        e->scale = cpu_epilogue_scale(e) * c[0];
    else if (strcmp(next->op, "Div") == 0)
        e->scale = cpu_epilogue_scale(e) / c[0];
    else
        return false;
    return true;
}

int cpu_kernel_fuse(pl_module_ctx *ctx, pl_kernel *kernel, const pl_node_desc *next)
{
    if (kernel == NULL || next == NULL || !kernel->epilogue_ok ||
        kernel->epilogue.kind != CPU_EPI_NONE || next->op == NULL || next->graph == NULL ||
        cpu_host->graph == NULL || (next->domain != NULL && next->domain[0] != '\0') ||
        next->n_outputs != 1 || next->n_inputs < 1 ||
        !PL_DTYPE_EQ(next->outputs[0].dtype, PL_DTYPE_F32) ||
        !PL_DTYPE_EQ(next->inputs[0].dtype, PL_DTYPE_F32) ||
        cpu_elements(next->outputs[0].shape, next->outputs[0].ndim) != kernel->out_elements)
        return 0;
    cpu_epilogue e = kernel->epilogue;
    if (strcmp(next->op, "Relu") == 0 && next->n_inputs == 1) {
        e.kind = CPU_EPI_RELU;
    } else if (strcmp(next->op, "Clip") == 0 && next->n_inputs <= 3) {
        e.kind = CPU_EPI_CLIP;
        e.lo = -INFINITY;
        e.hi = INFINITY;
        if (next->opset_version < 11) {
            double mn, mx;
            pl_status *st = cpu_attr_float(next, "min", -FLT_MAX, &mn);
            if (st == NULL)
                st = cpu_attr_float(next, "max", FLT_MAX, &mx);
            if (st != NULL) {
                cpu_host->status_free(st);
                return 0;
            }
            e.lo = (float)mn;
            e.hi = (float)mx;
        } else if (!cpu_clip_bound(next, 1, &e.lo) || !cpu_clip_bound(next, 2, &e.hi)) {
            return 0;
        }
        /* Clip with lo > hi (or a NaN bound) stays a node of its own: the
         * kernels' min/max form differs from Clip's there. */
        if (!(e.lo <= e.hi))
            return 0;
    } else if (!cpu_fuse_affine(ctx, kernel, next, &e)) {
        return 0;
    }
    kernel->epilogue = e;
    return 1;
}

void cpu_kernel_release(pl_module_ctx *ctx, pl_kernel *kernel)
{
    if (ctx != NULL && kernel != NULL) {
        if (kernel->release != NULL)
            kernel->release(ctx, kernel);
        cpu_kernel_release(ctx, kernel->inner[0]);
        cpu_kernel_release(ctx, kernel->inner[1]);
        cpu_pack_unshare(ctx, kernel->shared_pack);
        cpu_host->host_free(ctx->host_ctx, kernel->epilogue_buf);
        cpu_host->host_free(ctx->host_ctx, kernel);
    }
}

pl_status *cpu_register_ms_op(pl_host_ctx *host_ctx, const char *name, int32_t min_in,
                              int32_t max_in, int32_t min_out, int32_t max_out,
                              pl_shape_fn infer)
{
    if (!PL_ABI_HAS_FN(pl_host_api, cpu_host, register_op) ||
        !PL_ABI_HAS_FN(pl_host_api, cpu_host, shape_set_output))
        return NULL;
    pl_custom_op op = {
        .header = PL_ABI_HEADER_INIT(pl_custom_op),
        .name = name,
        .domain = "com.microsoft",
        .since_version = 1,
        .min_inputs = min_in,
        .max_inputs = max_in,
        .min_outputs = min_out,
        .max_outputs = max_out,
        .infer = infer,
    };
    return cpu_host->register_op(host_ctx, &op);
}
