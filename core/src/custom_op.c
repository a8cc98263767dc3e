/* custom_op.c — a module's custom operator becomes an ordinary schema of
 * its runtime's opset, whose inference function calls back into the module
 * through the SDK's shape-function interface (host.h). The module sees
 * input types, the node through a one-node graph view (attributes), and sets
 * its outputs; it never sees the core's inference context. */
#include "custom_op.h"

#include <string.h>

#include "alloc.h"
#include "graph_view.h"
#include "opset.h"
#include "registry.h"
#include "status.h"

struct pl_custom_record {
    pl_shape_fn fn;
    void *user;
    char *module;
    struct pl_custom_record *next;
};

struct pl_shape_ctx {
    pl_infer_ctx *infer;
    pl_graph_view *view;
};

static pl_status *pl_custom_infer(pl_infer_ctx *ictx)
{
    const pl_custom_record *r = pl_infer_user_data(ictx);
    pl_shape_ctx sc = {.infer = ictx, .view = NULL};
    pl_status *st = r->fn(r->user, &sc);
    pl_graph_view_destroy(sc.view);
    if (st == NULL)
        return NULL;
    pl_status *wrapped = pl_infer_error(ictx, pl_status_code(st),
                                        "shape function of module %s: %s",
                                        r->module, pl_status_message(st));
    pl_status_free(st);
    return wrapped;
}

void pl_custom_records_free(pl_custom_record *head)
{
    while (head != NULL) {
        pl_custom_record *next = head->next;
        pl_free(head->module);
        pl_free(head);
        head = next;
    }
}

pl_status *pl_custom_op_register(pl_host_ctx *ctx, const pl_custom_op *op)
{
    if (ctx == NULL || ctx->runtime == NULL || op == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "register_op: NULL context or op");
    const char *who = ctx->module ? ctx->module->name : "?";
    if (!PL_ABI_HAS_FN(pl_custom_op, op, infer) || op->name == NULL ||
        op->name[0] == '\0' || op->domain == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "module %s: register_op needs a name, a domain "
                                "and an infer function",
                                who);
    if (op->domain[0] == '\0' || strcmp(op->domain, "ai.onnx") == 0)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "module %s: custom op '%s' may not be in ONNX's "
                                "own domain; use a domain of your own "
                                "(\"com.vendor\")",
                                who, op->name);
    if (op->since_version < 1 || op->min_inputs < 0 || op->min_outputs < 1 ||
        (op->max_inputs >= 0 && op->max_inputs < op->min_inputs) ||
        (op->max_outputs >= 0 && op->max_outputs < op->min_outputs))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "module %s: custom op %s:%s: bad version or "
                                "arity (version %lld, inputs %d..%d, outputs "
                                "%d..%d)",
                                who, op->domain, op->name,
                                (long long)op->since_version, op->min_inputs,
                                op->max_inputs, op->min_outputs, op->max_outputs);
    pl_runtime *rt = ctx->runtime;
    pl_custom_record *r = pl_calloc(1, sizeof *r);
    if (r == NULL || (r->module = pl_xstrdup(who)) == NULL) {
        pl_free(r);
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    }
    r->fn = op->infer;
    r->user = op->user;
    pl_op_schema schema;
    memset(&schema, 0, sizeof schema);
    schema.name = op->name;
    schema.domain = op->domain;
    schema.since_version = op->since_version;
    schema.min_inputs = op->min_inputs;
    schema.max_inputs = op->max_inputs < 0 ? PL_OP_VARIADIC : op->max_inputs;
    schema.min_outputs = op->min_outputs;
    schema.max_outputs = op->max_outputs < 0 ? PL_OP_VARIADIC : op->max_outputs;
    schema.infer = pl_custom_infer;
    schema.infer_user = r;
    schema.allow_unknown_attrs = true;
    pthread_mutex_lock(&rt->opset_mu);
    pl_status *st = pl_opset_register(rt->opset, &schema, 1, PL_SCHEMA_COPY);
    if (st == NULL) {
        r->next = rt->custom_ops;
        rt->custom_ops = r;
    }
    pthread_mutex_unlock(&rt->opset_mu);
    if (st != NULL) {
        pl_free(r->module);
        pl_free(r);
        return pl_status_wrap(st, "module %s: ", who);
    }
    return NULL;
}

size_t pl_custom_shape_input_count(pl_shape_ctx *ctx)
{
    return ctx ? pl_infer_input_count(ctx->infer) : 0;
}

size_t pl_custom_shape_output_count(pl_shape_ctx *ctx)
{
    return ctx ? pl_infer_output_count(ctx->infer) : 0;
}

int pl_custom_shape_input(pl_shape_ctx *ctx, size_t i, pl_dtype *out_dtype,
                          int32_t *out_ndim, const int64_t **out_dims)
{
    const pl_graph_tensor *t = ctx ? pl_infer_input(ctx->infer, i) : NULL;
    if (t == NULL)
        return 0;
    if (out_dtype)
        *out_dtype = t->dtype;
    if (out_ndim)
        *out_ndim = t->ndim;
    if (out_dims)
        *out_dims = t->dims;
    return 1;
}

const pl_graph_view *pl_custom_shape_node(pl_shape_ctx *ctx, size_t *out_node)
{
    if (out_node)
        *out_node = 0;
    if (ctx == NULL)
        return NULL;
    if (ctx->view == NULL) {
        const pl_graph *g = pl_infer_graph(ctx->infer);
        pl_nid id = pl_graph_find_node(g, pl_infer_node(ctx->infer)->name);
        pl_status *st = pl_graph_view_create(g, &id, 1, &ctx->view);
        if (st != NULL) {
            pl_status_free(st);
            return NULL;
        }
    }
    return ctx->view;
}

pl_status *pl_custom_shape_set_output(pl_shape_ctx *ctx, size_t i,
                                      pl_dtype dtype, int32_t ndim,
                                      const int64_t *dims)
{
    if (ctx == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "NULL shape context");
    return pl_infer_set_output(ctx->infer, i, dtype, ndim, dims, NULL);
}
