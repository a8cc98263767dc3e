/* shape.c — the cpu module's shape family: its op table, the kernel object
 * and run driver its files share (see shape_kernel.h), and the kernels that
 * only copy bytes or make small tensors: Reshape, Flatten, Identity,
 * Squeeze, Unsqueeze, Dropout (inference), Shape, ConstantOfShape and
 * Range. The other kernels live in shape_strided.c (Transpose, Slice,
 * Expand, Tile), shape_slab.c (Concat, Split, Gather), shape_pad.c,
 * shape_cast.c and shape_resize.c.
 *
 * The family serves every dtype of ABI 1, so its entries take over the base
 * table's f32-only Reshape, Flatten, Identity, Transpose and Concat. The
 * movers work on bytes and never look at values. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "shape_kernel.h"

#define SHP_ANY CPU_OP_ANY_DTYPE
#define SHP_MULTI (CPU_OP_ANY_DTYPE | CPU_OP_MULTI_OUTPUT)

const cpu_op_entry cpu_ops_shape[] = {
    /* Reshape's target shape and Squeeze's and Unsqueeze's axes are already
     * folded into the output's shape by the core's inference. */
    {"Reshape", shp_build_copy, 2, 2, 0, SHP_ANY},
    {"Flatten", shp_build_copy, 1, 1, 0, SHP_ANY},
    {"Identity", shp_build_copy, 1, 1, 0, SHP_ANY},
    {"BitCast", shp_build_bitcast, 1, 1, 0, SHP_ANY},
    {"Squeeze", shp_build_copy, 1, 2, 0, SHP_ANY},
    {"Unsqueeze", shp_build_copy, 1, 2, 0, SHP_ANY},
    {"Dropout", shp_build_dropout, 1, 3, 0, SHP_MULTI},
    {"Transpose", shp_build_transpose, 1, 1, 0, SHP_ANY},
    {"Concat", shp_build_concat, 1, SIZE_MAX, 0, SHP_ANY},
    {"Split", shp_build_split, 1, 2, 0, SHP_MULTI},
    {"Slice", shp_build_slice, 1, 5, 0, SHP_ANY},
    {"Gather", shp_build_gather, 2, 2, 0, SHP_ANY},
    {"Expand", shp_build_expand, 2, 2, 0, SHP_ANY},
    {"Tile", shp_build_tile, 2, 2, 0, SHP_ANY},
    {"Pad", shp_build_pad, 1, 4, 0, SHP_ANY},
    {"Shape", shp_build_shape, 1, 1, 0, SHP_ANY},
    {"ConstantOfShape", shp_build_constant_of_shape, 1, 1, 0, SHP_ANY},
    {"Constant", shp_build_constant, 0, 0, 0, SHP_ANY},
    {"Range", shp_build_range, 3, 3, 0, SHP_ANY},
    {"Cast", shp_build_cast, 1, 1, 0, SHP_ANY},
    {"Resize", shp_build_resize, 1, 4, 0, SHP_ANY},
    {"Upsample", shp_build_resize, 1, 2, 0, SHP_ANY},
    {NULL, NULL, 0, 0, 0, 0},
};

/* ---- reading nodes --------------------------------------------------------- */

static const pl_graph_api *shp_view(const pl_node_desc *node)
{
    const pl_graph_api *g = cpu_host->graph;
    if (node->graph == NULL || g == NULL || !PL_ABI_HAS_FN(pl_graph_api, g, node_output) ||
        !PL_ABI_HAS_FN(pl_graph_api, g, tensor_constant))
        return NULL;
    return g;
}

bool shp_input_present(const pl_node_desc *node, size_t i)
{
    if (i >= node->n_inputs)
        return false;
    if (node->inputs[i].ndim >= 0)
        return true;
    const pl_graph_api *g = shp_view(node);
    return g != NULL && g->node_input(node->graph, node->node_index, i) >= 0;
}

bool shp_output_present(const pl_node_desc *node, size_t o)
{
    if (o >= node->n_outputs)
        return false;
    if (node->outputs[o].ndim >= 0)
        return true;
    const pl_graph_api *g = shp_view(node);
    return g != NULL && g->node_output(node->graph, node->node_index, o) >= 0;
}

const void *shp_constant(const pl_node_desc *node, size_t i, size_t *out_bytes)
{
    *out_bytes = 0;
    const pl_graph_api *g = shp_view(node);
    if (g == NULL || i >= node->n_inputs)
        return NULL;
    int64_t t = g->node_input(node->graph, node->node_index, i);
    const void *data = NULL;
    if (t < 0 || !g->tensor_constant(node->graph, t, &data, out_bytes))
        return NULL;
    return data;
}

int64_t shp_opset(const pl_node_desc *node)
{
    return node->opset_version > 0 ? node->opset_version : 13;
}

pl_status *shp_attr_string(const pl_node_desc *node, const char *name,
                           const char *default_value, char *buf, size_t size)
{
    const pl_graph_api *g = cpu_host->graph;
    snprintf(buf, size, "%s", default_value);
    if (node->graph == NULL || g == NULL || !PL_ABI_HAS_FN(pl_graph_api, g, attr_string))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "no graph view to read attribute '%s' from", name);
    pl_graph_attr_kind kind = g->attr_kind(node->graph, node->node_index, name);
    if (kind == PL_GRAPH_ATTR_NONE)
        return NULL;
    const char *s = NULL;
    size_t len = 0;
    if (kind != PL_GRAPH_ATTR_STRING ||
        !g->attr_string(node->graph, node->node_index, name, &s, &len))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "attribute '%s' is not a string",
                         name);
    if (len >= size)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "attribute '%s' is too long (%zu bytes)", name, len);
    memcpy(buf, s, len);
    buf[len] = '\0';
    return NULL;
}

bool shp_read_ints(pl_dtype dtype, const void *data, size_t n, int64_t *out)
{
    const char *p = data;
    if (PL_DTYPE_EQ(dtype, PL_DTYPE_I64)) {
        memcpy(out, p, n * sizeof(int64_t));
        return true;
    }
    if (!PL_DTYPE_EQ(dtype, PL_DTYPE_I32))
        return false;
    for (size_t i = 0; i < n; i++) {
        int32_t v;
        memcpy(&v, p + i * sizeof v, sizeof v);
        out[i] = v;
    }
    return true;
}

pl_status *shp_ints_arg(const pl_node_desc *node, size_t in, const char *attr, int64_t *out,
                        size_t *out_n, int *out_state)
{
    *out_n = 0;
    *out_state = 0;
    if (shp_input_present(node, in)) {
        const pl_tensor *t = &node->inputs[in];
        size_t n = cpu_elements(t->shape, t->ndim);
        if (n > SHP_MAX_INTS)
            return cpu_error(PL_CODE_UNSUPPORTED, node->op, "input %zu has %zu values (at most %d)",
                             in, n, SHP_MAX_INTS);
        size_t bytes;
        const void *data = shp_constant(node, in, &bytes);
        if (data == NULL) {
            *out_state = -1;
            return NULL;
        }
        if (bytes < n * pl_dtype_size(t->dtype) || !shp_read_ints(t->dtype, data, n, out))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "input %zu is not a tensor of i64 or i32", in);
        *out_n = n;
        *out_state = 1;
        return NULL;
    }
    if (attr == NULL)
        return NULL;
    const int64_t *v;
    size_t n;
    SHP_TRY(cpu_attr_ints(node, attr, &v, &n));
    if (v == NULL)
        return NULL;
    if (n > SHP_MAX_INTS)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "attribute '%s' has %zu values (at most %d)",
                         attr, n, SHP_MAX_INTS);
    memcpy(out, v, n * sizeof *v);
    *out_n = n;
    *out_state = 1;
    return NULL;
}

pl_status *shp_same_dtype(const pl_node_desc *node)
{
    pl_dtype a = node->inputs[0].dtype, b = node->outputs[0].dtype;
    if (PL_DTYPE_EQ(a, b))
        return NULL;
    return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                     "input dtype (code %u, %u bits) differs from the output's (code %u, %u bits)",
                     a.code, a.bits, b.code, b.bits);
}

/* ---- the kernel object and the run driver ---------------------------------- */

pl_status *shp_kernel_alloc(pl_module_ctx *ctx, const pl_node_desc *node, size_t bytes,
                            shp_write_fn write, shp_kernel **out_kernel)
{
    *out_kernel = NULL;
    size_t n_out = node->n_outputs;
    if (!shp_output_present(node, 0) || node->outputs[0].ndim < 0)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "output shape not fully known");
    for (size_t o = 0; o < n_out; o++) {
        const pl_tensor *t = &node->outputs[o];
        if (shp_output_present(node, o) &&
            (t->ndim < 0 || pl_dtype_size(t->dtype) == 0))
            return cpu_error(PL_CODE_UNSUPPORTED, node->op,
                             "output %zu has an unknown shape or an unsupported dtype", o);
    }
    for (size_t i = 0; i < node->n_inputs; i++)
        if (shp_input_present(node, i) && pl_dtype_size(node->inputs[i].dtype) == 0)
            return cpu_error(PL_CODE_UNSUPPORTED, node->op, "input %zu has an unsupported dtype",
                             i);
    bytes = (bytes + 15) & ~(size_t)15;
    shp_kernel *k = (shp_kernel *)cpu_kernel_alloc(ctx, bytes + n_out * sizeof(shp_output),
                                                   node->op, NULL);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->outs = (shp_output *)(void *)((char *)k + bytes);
    for (size_t o = 0; o < n_out; o++) {
        const pl_tensor *t = &node->outputs[o];
        shp_output *so = &k->outs[o];
        so->present = shp_output_present(node, o);
        if (!so->present)
            continue;
        so->dtype = t->dtype;
        so->esize = pl_dtype_size(t->dtype);
        so->elements = cpu_elements(t->shape, t->ndim);
    }
    k->write = write;
    k->in_esize = node->n_inputs > 0 ? pl_dtype_size(node->inputs[0].dtype) : 0;
    k->base.run_any = shp_run;
    k->base.n_reads = node->n_inputs;
    k->base.n_outputs = n_out;
    k->base.out_elements = k->outs[0].elements;
    *out_kernel = k;
    return NULL;
}

static bool shp_tensor_empty(const pl_tensor *t)
{
    if (t->ndim <= 0 || t->shape == NULL)
        return false;
    for (int32_t d = 0; d < t->ndim; d++)
        if (t->shape[d] == 0)
            return true;
    return false;
}

/* Checks output O of a run; *out_data is NULL when there is nothing to
 * write (not requested, or no elements). */
static pl_status *shp_run_output(const shp_kernel *k, const pl_run_args *args, size_t o,
                                 void **out_data)
{
    *out_data = NULL;
    const char *op = k->base.op;
    pl_output_request req = args->requests[o];
    if (req == PL_REQ_NULL)
        return NULL;
    if (req != PL_REQ_WRITE && req != PL_REQ_INPLACE && req != PL_REQ_ADD_TO)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "unknown output request %d", (int)req);
    if (req == PL_REQ_INPLACE && (o != 0 || !k->base.inplace_ok))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "in-place output %zu requested, but this op writes no output in place",
                         o);
    const shp_output *so = &k->outs[o];
    if (!so->present)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "output %zu requested, but the node does not produce it", o);
    const pl_tensor *t = &args->outputs[o];
    if (t->ndim < 0 || (t->ndim > 0 && t->shape == NULL) ||
        cpu_elements(t->shape, t->ndim) != so->elements)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "output %zu of the run does not have the %zu elements of the kernel", o,
                         so->elements);
    if (so->elements == 0)
        return NULL;
    if (t->data == NULL)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "output %zu has no data", o);
    *out_data = (char *)t->data + t->byte_offset;
    return NULL;
}

pl_status *shp_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    const shp_kernel *k = (const shp_kernel *)kernel;
    for (size_t i = 0; i < kernel->n_reads; i++) {
        const pl_tensor *t = &args->inputs[i];
        if (t->ndim >= 0 && t->data == NULL && !shp_tensor_empty(t))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->op, "input %zu has no data", i);
    }
    for (size_t o = 0; o < kernel->n_outputs; o++) {
        void *dst;
        SHP_TRY(shp_run_output(k, args, o, &dst));
        if (dst == NULL)
            continue;
        pl_output_request req = args->requests[o];
        if (req != PL_REQ_ADD_TO) {
            SHP_TRY(k->write(ctx, k, args, o, dst, req));
            continue;
        }
        const shp_output *so = &k->outs[o];
        void *tmp = cpu_host->host_alloc(ctx->host_ctx, so->elements * so->esize, 0);
        if (tmp == NULL)
            return cpu_error(PL_CODE_OUT_OF_MEMORY, kernel->op,
                             "out of memory for the %zu bytes of output %zu to add",
                             so->elements * so->esize, o);
        pl_status *st = k->write(ctx, k, args, o, tmp, PL_REQ_WRITE);
        if (st == NULL)
            shp_accumulate(so->dtype, dst, tmp, so->elements);
        cpu_host->host_free(ctx->host_ctx, tmp);
        if (st != NULL)
            return st;
    }
    return NULL;
}

/* ---- copies: Reshape, Flatten, Identity, Squeeze, Unsqueeze, Dropout --------- */

typedef struct shp_copy_call {
    const char *x;
    char *y;
} shp_copy_call;

static void shp_copy_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const shp_copy_call *c = arg;
    memcpy(c->y + begin, c->x + begin, end - begin);
}

/* Copies BYTES from X to Y on the pool (nothing when they are one buffer). */
static void shp_copy_bytes(pl_module_ctx *ctx, const void *x, void *y, size_t bytes)
{
    if (x == y || bytes == 0)
        return;
    shp_copy_call c = {.x = x, .y = y};
    cpu_host->parallel_for(ctx->host_ctx, bytes, SHP_GRAIN_BYTES, shp_copy_chunk, &c);
}

static pl_status *shp_copy_write(pl_module_ctx *ctx, const shp_kernel *k,
                                 const pl_run_args *args, size_t o, void *dst,
                                 pl_output_request req)
{
    (void)o;
    /* In place, or the same buffer handed twice: the bytes are there. */
    if (req == PL_REQ_INPLACE)
        return NULL;
    shp_copy_bytes(ctx, shp_in(args, 0), dst, k->outs[0].elements * k->outs[0].esize);
    return NULL;
}

/* The checks a copy needs: one dtype, one element count. */
static pl_status *shp_copy_check(const pl_node_desc *node)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    if (o->ndim < 0)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "output shape not fully known");
    SHP_TRY(shp_same_dtype(node));
    if (cpu_elements(x->shape, x->ndim) != cpu_elements(o->shape, o->ndim)) {
        char tx[128], to[128];
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "input %s and output %s differ in size",
                         cpu_dims_text(x->shape, x->ndim, tx, sizeof tx),
                         cpu_dims_text(o->shape, o->ndim, to, sizeof to));
    }
    return NULL;
}

/* The byte copy of input 0 into output 0, in place where the engine allows. */
static pl_status *shp_copy_kernel(pl_module_ctx *ctx, const pl_node_desc *node,
                                  pl_kernel **out_kernel)
{
    shp_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, shp_copy_write, &k));
    k->base.n_reads = 1;
    k->base.inplace_ok = true;
    *out_kernel = &k->base;
    return NULL;
}

pl_status *shp_build_copy(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    SHP_TRY(shp_copy_check(node));
    return shp_copy_kernel(ctx, node, out_kernel);
}

/* BitCast (26): the bytes as they are, read as another type of their width. */
pl_status *shp_build_bitcast(pl_module_ctx *ctx, const pl_node_desc *node,
                             pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    if (o->ndim != x->ndim || pl_dtype_size(x->dtype) != pl_dtype_size(o->dtype) ||
        memcmp(x->shape, o->shape, (size_t)x->ndim * sizeof *x->shape) != 0)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "the output must have the input's shape and element width");
    return shp_copy_kernel(ctx, node, out_kernel);
}

/* Writes the value one of DTYPE (bytes of ESIZE) into ONE. */
static void shp_one(pl_dtype dtype, unsigned char *one)
{
    double v = 1.0;
    shp_convert(PL_DTYPE_F64, &v, dtype, one, 1);
}

typedef struct shp_fill_call {
    char *y;
    const unsigned char *value;
    size_t esize;
} shp_fill_call;

static void shp_fill_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const shp_fill_call *c = arg;
    if (c->esize == 1) {
        memset(c->y + begin, c->value[0], end - begin);
        return;
    }
    for (size_t i = begin; i < end; i++)
        memcpy(c->y + i * c->esize, c->value, c->esize);
}

/* Fills N elements of ESIZE bytes at Y with VALUE. */
static void shp_fill(pl_module_ctx *ctx, void *y, const void *value, size_t esize, size_t n)
{
    shp_fill_call c = {.y = y, .value = value, .esize = esize};
    size_t grain = SHP_GRAIN_BYTES / esize;
    cpu_host->parallel_for(ctx->host_ctx, n, grain, shp_fill_chunk, &c);
}

/* A Dropout kernel: its ratio when a constant (else read at run time), and
 * the seed of its masks. */
typedef struct shp_dropout_kernel {
    shp_kernel k;
    bool mode_at_run;  /* training_mode is an input of the run */
    bool ratio_at_run; /* the ratio too */
    double ratio;
    uint64_t seed;
} shp_dropout_kernel;

/* Whether element I of a training-mode mask of seed SEED and RATIO is kept:
 * splitmix64 of the seed and the index, as a uniform value in [0, 1). */
static bool shp_dropout_keep(uint64_t seed, size_t i, double ratio)
{
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0) >= ratio;
}

/* The run's training mode and ratio: *TRAIN false means inference. */
static pl_status *shp_dropout_mode(const shp_dropout_kernel *d, const pl_run_args *args,
                                   bool *train, double *ratio)
{
    *train = d->mode_at_run && *(const unsigned char *)shp_in(args, 2) != 0;
    *ratio = d->ratio;
    if (*train && d->ratio_at_run) {
        const pl_tensor *r = &args->inputs[1];
        const char *v = shp_in(args, 1);
        if (PL_DTYPE_EQ(r->dtype, PL_DTYPE_F32))
            *ratio = *(const float *)(const void *)v;
        else if (PL_DTYPE_EQ(r->dtype, PL_DTYPE_F64))
            *ratio = *(const double *)(const void *)v;
        else
            return cpu_error(PL_CODE_UNSUPPORTED, "Dropout",
                             "a ratio of a type other than f32 or f64");
    }
    if (*train && !(*ratio >= 0.0 && *ratio < 1.0))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, "Dropout",
                         "ratio %g is outside [0, 1) in training mode", *ratio);
    return NULL;
}

static pl_status *shp_dropout_write(pl_module_ctx *ctx, const shp_kernel *k,
                                    const pl_run_args *args, size_t o, void *dst,
                                    pl_output_request req)
{
    const shp_dropout_kernel *d = (const shp_dropout_kernel *)k;
    bool train;
    double ratio;
    SHP_TRY(shp_dropout_mode(d, args, &train, &ratio));
    size_t n = k->outs[o].elements;
    if (train && ratio > 0.0) { /* y = x * mask / (1 - ratio) */
        pl_dtype dt = k->outs[0].dtype;
        if (o == 1) {
            for (size_t i = 0; i < n; i++)
                ((unsigned char *)dst)[i] = shp_dropout_keep(d->seed, i, ratio);
            return NULL;
        }
        const char *x = shp_in(args, 0);
        double scale = 1.0 / (1.0 - ratio);
        if (PL_DTYPE_EQ(dt, PL_DTYPE_F32)) {
            for (size_t i = 0; i < n; i++)
                ((float *)dst)[i] = shp_dropout_keep(d->seed, i, ratio)
                                        ? (float)(((const float *)(const void *)x)[i] * scale)
                                        : 0.0f;
        } else if (PL_DTYPE_EQ(dt, PL_DTYPE_F64)) {
            for (size_t i = 0; i < n; i++)
                ((double *)dst)[i] = shp_dropout_keep(d->seed, i, ratio)
                                         ? ((const double *)(const void *)x)[i] * scale
                                         : 0.0;
        } else {
            return cpu_error(PL_CODE_UNSUPPORTED, "Dropout",
                             "training mode on data other than f32 or f64");
        }
        return NULL;
    }
    if (o == 0)
        return shp_copy_write(ctx, k, args, o, dst, req);
    unsigned char one[8];
    shp_one(k->outs[o].dtype, one);
    shp_fill(ctx, dst, one, k->outs[o].esize, n);
    return NULL;
}

/* Dropout: at inference the data passes through and the mask, when asked
 * for, is all ones. Training mode (opset 12's third input) as a constant
 * false is inference; as an input of the run (jax2onnx exports Flax's
 * `deterministic` flag as one), each run reads it: false passes through,
 * true drops elements with probability ratio (a constant, an input, or 0.5)
 * and scales the rest by 1 / (1 - ratio), f32 and f64 data only. Its masks
 * come from the seed attribute, or a seed fixed when the kernel is made:
 * every run of one session draws the same mask (ONNX Runtime draws anew).
 * A constant true is refused unless its ratio is a constant 0. */
pl_status *shp_build_dropout(pl_module_ctx *ctx, const pl_node_desc *node,
                             pl_kernel **out_kernel)
{
    if (node->n_outputs > 2)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "%zu outputs (at most 2)",
                         node->n_outputs);
    SHP_TRY(shp_copy_check(node));
    bool mode_at_run = false, ratio_at_run = false;
    double ratio = 0.5;
    if (shp_input_present(node, 2)) {
        size_t bytes;
        const unsigned char *mode = shp_constant(node, 2, &bytes);
        mode_at_run = mode == NULL;
        if (mode_at_run && (!PL_DTYPE_EQ(node->inputs[2].dtype, PL_DTYPE_BOOL) ||
                            cpu_elements(node->inputs[2].shape, node->inputs[2].ndim) != 1))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "training_mode is not one bool");
        /* training with a constant ratio of 0 drops nothing, scales by 1 */
        size_t rb = 0;
        const unsigned char *rc =
            mode != NULL && mode[0] != 0 && shp_input_present(node, 1) ? shp_constant(node, 1, &rb)
                                                                       : NULL;
        bool zero = rc != NULL && rb > 0;
        for (size_t b = 0; zero && b < rb; b++)
            zero = rc[b] == 0;
        if (mode != NULL && mode[0] != 0 && !zero)
            return cpu_error(PL_CODE_UNSUPPORTED, node->op,
                             "training_mode is a constant true with a ratio that is not a "
                             "constant 0 (only inference, or a mode given at run time)");
    }
    if (mode_at_run && shp_input_present(node, 1)) {
        size_t rb = 0;
        const void *rc = shp_constant(node, 1, &rb);
        ratio_at_run = rc == NULL;
        if (rc != NULL && PL_DTYPE_EQ(node->inputs[1].dtype, PL_DTYPE_F32) && rb == 4)
            ratio = *(const float *)rc;
        else if (rc != NULL && PL_DTYPE_EQ(node->inputs[1].dtype, PL_DTYPE_F64) && rb == 8)
            ratio = *(const double *)rc;
        else if (rc != NULL)
            return cpu_error(PL_CODE_UNSUPPORTED, node->op, "a ratio that is not one f32 or f64");
    }
    if (shp_output_present(node, 1)) {
        const pl_tensor *x = &node->inputs[0], *m = &node->outputs[1];
        if (cpu_elements(m->shape, m->ndim) != cpu_elements(x->shape, x->ndim))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "the mask does not have the data's size");
    }
    int64_t seed;
    SHP_TRY(cpu_attr_int(node, "seed", (int64_t)(uintptr_t)node ^ 0x5eedULL, &seed));
    shp_dropout_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, shp_dropout_write, (shp_kernel **)&k));
    k->mode_at_run = mode_at_run;
    k->ratio_at_run = ratio_at_run;
    k->ratio = ratio;
    k->seed = (uint64_t)seed;
    k->k.base.n_reads = mode_at_run ? 3 : 1;
    k->k.base.inplace_ok = true;
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- Shape, ConstantOfShape ------------------------------------------------ */

typedef struct shp_shape_kernel {
    shp_kernel k;
    int64_t dims[CPU_MAX_RANK];
} shp_shape_kernel;

static pl_status *shp_shape_write(pl_module_ctx *ctx, const shp_kernel *k,
                                  const pl_run_args *args, size_t o, void *dst,
                                  pl_output_request req)
{
    (void)ctx, (void)args, (void)o, (void)req;
    const shp_shape_kernel *s = (const shp_shape_kernel *)k;
    memcpy(dst, s->dims, k->outs[0].elements * sizeof(int64_t));
    return NULL;
}

pl_status *shp_build_shape(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    int64_t r = x->ndim, start, end;
    SHP_TRY(cpu_attr_int(node, "start", 0, &start));
    SHP_TRY(cpu_attr_int(node, "end", r, &end));
    if (start < 0)
        start += r;
    if (end < 0)
        end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    int64_t n = end > start ? end - start : 0;
    if (!PL_DTYPE_EQ(o->dtype, PL_DTYPE_I64) || o->ndim != 1 || o->shape[0] != n)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "the output is not an i64 vector of %lld values", (long long)n);
    shp_shape_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, shp_shape_write, (shp_kernel **)&k));
    if (n > 0)
        memcpy(k->dims, x->shape + start, (size_t)n * sizeof(int64_t));
    k->k.base.n_reads = 0; /* only the shape is read */
    *out_kernel = &k->k.base;
    return NULL;
}

typedef struct shp_fill_kernel {
    shp_kernel k;
    unsigned char value[8];
} shp_fill_kernel;

static pl_status *shp_cos_write(pl_module_ctx *ctx, const shp_kernel *k, const pl_run_args *args,
                                size_t o, void *dst, pl_output_request req)
{
    (void)args, (void)req;
    const shp_fill_kernel *f = (const shp_fill_kernel *)k;
    shp_fill(ctx, dst, f->value, k->outs[o].esize, k->outs[o].elements);
    return NULL;
}

/* ConstantOfShape: the output's shape came from the inference; the value
 * is the one-element tensor attribute 'value' (default f32 zero). */
pl_status *shp_build_constant_of_shape(pl_module_ctx *ctx, const pl_node_desc *node,
                                       pl_kernel **out_kernel)
{
    const pl_tensor *o = &node->outputs[0];
    unsigned char value[8] = {0};
    const pl_graph_api *g = cpu_host->graph;
    if (node->graph == NULL || g == NULL || !PL_ABI_HAS_FN(pl_graph_api, g, attr_tensor))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "no graph view to read attribute 'value' from");
    pl_tensor t;
    size_t esize = pl_dtype_size(o->dtype);
    if (g->attr_tensor(node->graph, node->node_index, "value", &t)) {
        if (!PL_DTYPE_EQ(t.dtype, o->dtype) || t.data == NULL || t.ndim > CPU_MAX_RANK ||
            (t.ndim > 0 && t.shape == NULL) || t.ndim < 0 || cpu_elements(t.shape, t.ndim) != 1)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "attribute 'value' is not one element of the output's dtype");
        memcpy(value, (const char *)t.data + t.byte_offset, esize);
    } else if (!PL_DTYPE_EQ(o->dtype, PL_DTYPE_F32)) {
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "without attribute 'value' the output must be f32");
    }
    shp_fill_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, shp_cos_write, (shp_kernel **)&k));
    memcpy(k->value, value, sizeof value);
    k->k.base.n_reads = 0; /* the shape is in the output already */
    *out_kernel = &k->k.base;
    return NULL;
}

/* Constant: the value is an attribute, copied into the kernel once; a run
 * writes it out. (ONNX's importer turns Constant nodes into constants;
 * other formats, and graph rewrites, may leave them as nodes.) */
typedef struct shp_constant_kernel {
    shp_kernel k;
    size_t bytes;
    unsigned char value[];
} shp_constant_kernel;

static pl_status *shp_constant_write(pl_module_ctx *ctx, const shp_kernel *k,
                                     const pl_run_args *args, size_t o, void *dst,
                                     pl_output_request req)
{
    (void)ctx, (void)args, (void)o, (void)req;
    const shp_constant_kernel *c = (const shp_constant_kernel *)k;
    memcpy(dst, c->value, c->bytes);
    return NULL;
}

pl_status *shp_build_constant(pl_module_ctx *ctx, const pl_node_desc *node,
                              pl_kernel **out_kernel)
{
    const pl_tensor *o = &node->outputs[0];
    size_t n = cpu_elements(o->shape, o->ndim), esize = pl_dtype_size(o->dtype), bytes = n * esize;
    const void *src = NULL;
    double f = 0.0;
    int64_t i = 0;
    const int64_t *ints = NULL;
    const double *floats = NULL;
    size_t n_ints = 0, n_floats = 0;
    const pl_graph_api *g = cpu_host->graph;
    pl_tensor t;
    if (node->graph != NULL && g != NULL && PL_ABI_HAS_FN(pl_graph_api, g, attr_tensor) &&
        g->attr_tensor(node->graph, node->node_index, "value", &t)) {
        if (!PL_DTYPE_EQ(t.dtype, o->dtype) || t.data == NULL || t.ndim < 0 ||
            t.ndim > CPU_MAX_RANK || (t.ndim > 0 && t.shape == NULL) ||
            cpu_elements(t.shape, t.ndim) != n)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "attribute 'value' does not match the output's type");
        src = (const char *)t.data + t.byte_offset;
    }
    SHP_TRY(cpu_attr_ints(node, "value_ints", &ints, &n_ints));
    SHP_TRY(cpu_attr_floats(node, "value_floats", &floats, &n_floats));
    bool has_f = false, has_i = false;
    if (src == NULL && ints == NULL && floats == NULL) {
        SHP_TRY(cpu_attr_float(node, "value_float", NAN, &f));
        SHP_TRY(cpu_attr_int(node, "value_int", INT64_MIN, &i));
        has_f = !isnan(f);
        has_i = i != INT64_MIN;
    }
    bool as_i64 = ints != NULL || has_i, as_f32 = floats != NULL || has_f;
    if (src == NULL && !as_i64 && !as_f32)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op,
                         "no value attribute this module reads (value, value_float, "
                         "value_floats, value_int, value_ints)");
    if ((as_i64 && !PL_DTYPE_EQ(o->dtype, PL_DTYPE_I64)) ||
        (as_f32 && !PL_DTYPE_EQ(o->dtype, PL_DTYPE_F32)) ||
        (ints != NULL && n_ints != n) || (floats != NULL && n_floats != n) ||
        ((has_f || has_i) && n != 1))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "the value attribute does not match the output's type");
    shp_constant_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k + bytes, shp_constant_write,
                             (shp_kernel **)&k));
    k->bytes = bytes;
    if (src != NULL)
        memcpy(k->value, src, bytes);
    for (size_t e = 0; e < n && src == NULL; e++) {
        if (as_i64) {
            int64_t v = ints != NULL ? ints[e] : i;
            memcpy(k->value + e * 8, &v, 8);
        } else {
            float v = (float)(floats != NULL ? floats[e] : f);
            memcpy(k->value + e * 4, &v, 4);
        }
    }
    k->k.base.n_reads = 0;
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- Range ---------------------------------------------------------------- */

/* Range: start, limit and delta are read at run time (they are scalars of
 * the output's dtype); the element count they give must be the output's. */
static pl_status *shp_range_write(pl_module_ctx *ctx, const shp_kernel *k,
                                  const pl_run_args *args, size_t o, void *dst,
                                  pl_output_request req)
{
    (void)ctx, (void)req;
    pl_dtype dt = k->outs[o].dtype;
    size_t n = k->outs[o].elements, want;
    const char *op = k->base.op;
    if (PL_DTYPE_EQ(dt, PL_DTYPE_I64) || PL_DTYPE_EQ(dt, PL_DTYPE_I32)) {
        int64_t v[3];
        for (size_t i = 0; i < 3; i++)
            shp_read_ints(dt, shp_in(args, i), 1, &v[i]);
        if (v[2] == 0)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "delta is 0");
        /* ceil((limit - start) / delta), in 128 bits against overflow */
        __int128 span = (__int128)v[1] - v[0], d = v[2];
        __int128 q = span / d;
        if (q * d != span && (span > 0) == (d > 0))
            q++;
        want = q > 0 ? (size_t)q : 0;
        if (want != n)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "start %lld, limit %lld and delta %lld give %zu values, the output "
                             "has %zu", (long long)v[0], (long long)v[1], (long long)v[2], want, n);
        for (size_t i = 0; i < n; i++) {
            int64_t e = (int64_t)((uint64_t)v[0] + (uint64_t)i * (uint64_t)v[2]);
            if (dt.bits == 64)
                ((int64_t *)dst)[i] = e;
            else
                ((int32_t *)dst)[i] = (int32_t)e;
        }
        return NULL;
    }
    double v[3];
    for (size_t i = 0; i < 3; i++)
        shp_convert(dt, shp_in(args, i), PL_DTYPE_F64, &v[i], 1);
    if (v[2] == 0)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "delta is 0");
    double q = (v[1] - v[0]) / v[2];
    if (!(q < 9.0e18))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "the range has too many elements");
    want = q > 0 ? (size_t)q : 0;
    if (q > 0 && (double)want < q)
        want++;
    if (want != n)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "start %g, limit %g and delta %g give %zu values, the output has %zu",
                         v[0], v[1], v[2], want, n);
    if (PL_DTYPE_EQ(dt, PL_DTYPE_F32)) {
        float s = (float)v[0], d = (float)v[2];
        for (size_t i = 0; i < n; i++)
            ((float *)dst)[i] = s + (float)i * d;
    } else {
        for (size_t i = 0; i < n; i++)
            ((double *)dst)[i] = v[0] + (double)i * v[2];
    }
    return NULL;
}

pl_status *shp_build_range(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *o = &node->outputs[0];
    pl_dtype dt = o->dtype;
    if (!PL_DTYPE_EQ(dt, PL_DTYPE_F32) && !PL_DTYPE_EQ(dt, PL_DTYPE_F64) &&
        !PL_DTYPE_EQ(dt, PL_DTYPE_I32) && !PL_DTYPE_EQ(dt, PL_DTYPE_I64))
        return cpu_error(PL_CODE_UNSUPPORTED, node->op,
                         "unsupported dtype (code %u, %u bits): f32 f64 i32 i64 only", dt.code,
                         dt.bits);
    for (size_t i = 0; i < 3; i++) {
        const pl_tensor *t = &node->inputs[i];
        if (!PL_DTYPE_EQ(t->dtype, dt) || cpu_elements(t->shape, t->ndim) != 1)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "input %zu is not one value of the output's dtype", i);
    }
    if (o->ndim != 1)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "the output is not a vector");
    shp_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, shp_range_write, &k));
    *out_kernel = &k->base;
    return NULL;
}
