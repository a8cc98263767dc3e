/* model_info.c — a summary of an ONNX ModelProto, decoded with the
 * protobuf-c code generated from onnx.proto. Plinth itself reads the model
 * through its onnx module; the runner reads it again only to learn the op
 * types (for the report) and the order of inputs and outputs (to match the
 * numbered test data files), which are facts of the file, not of Plinth. */
#define _DEFAULT_SOURCE

#include "model_info.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "tensor_file.h"

void cf_model_info_free(cf_model_info *info)
{
    free(info->ops);
    for (size_t i = 0; i < info->n_ops; i++)
        free(info->op_list[i]);
    free(info->op_list);
    for (size_t i = 0; i < info->n_inputs; i++)
        free(info->inputs[i]);
    free(info->inputs);
    for (size_t i = 0; i < info->n_outputs; i++)
        free(info->outputs[i]);
    free(info->outputs);
    free(info->input_types);
    for (size_t i = 0; info->input_dims != NULL && i < info->n_inputs; i++)
        free(info->input_dims[i]);
    free(info->input_dims);
    free(info->input_ranks);
    free(info->output_types);
    memset(info, 0, sizeof *info);
}

/* Why a value of type T cannot be a tensor of the runner, or NULL. */
static const char *cf_value_kind_problem(const Onnx__TypeProto *t)
{
    if (t == NULL)
        return NULL; /* no type given: Plinth's importer decides */
    switch (t->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
        return NULL;
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
        return "a sequence";
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
        return "a map";
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
        return "an optional";
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
        return "a sparse tensor";
    default:
        return NULL;
    }
}

/* The element type V declares, or 0. */
static int32_t cf_value_elem_type(const Onnx__ValueInfoProto *v)
{
    if (v->type == NULL || v->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        v->type->tensor_type == NULL || !v->type->tensor_type->has_elem_type)
        return 0;
    return v->type->tensor_type->elem_type;
}

/* Records the shape input I declares (V's), if any. */
static bool cf_record_shape(cf_model_info *info, size_t i, const Onnx__ValueInfoProto *v)
{
    info->input_ranks[i] = -1;
    if (v->type == NULL || v->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        v->type->tensor_type == NULL || v->type->tensor_type->shape == NULL)
        return true;
    const Onnx__TensorShapeProto *shape = v->type->tensor_type->shape;
    info->input_ranks[i] = (int32_t)shape->n_dim;
    info->input_dims[i] = malloc((shape->n_dim + 1) * sizeof *info->input_dims[i]);
    if (info->input_dims[i] == NULL)
        return false;
    for (size_t d = 0; d < shape->n_dim; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = shape->dim[d];
        info->input_dims[i][d] =
            dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ? dim->dim_value
                                                                                    : -1;
    }
    return true;
}

bool cf_model_info_input_fits(const cf_model_info *info, size_t i, int32_t ndim,
                              const int64_t *dims, char *why, size_t why_len)
{
    int32_t rank = info->input_ranks[i];
    if (rank < 0)
        return true;
    if (rank != ndim) {
        snprintf(why, why_len,
                 "the test data give input '%s' rank %d, but the model declares rank %d",
                 info->inputs[i], (int)ndim, (int)rank);
        return false;
    }
    for (int32_t d = 0; d < ndim; d++) {
        int64_t want = info->input_dims[i][d];
        if (want >= 0 && want != dims[d]) {
            snprintf(why, why_len,
                     "the test data give input '%s' dimension %d = %lld, but the model "
                     "declares %lld",
                     info->inputs[i], (int)d, (long long)dims[d], (long long)want);
            return false;
        }
    }
    return true;
}

/* Notes in INFO why value V (an input or output) cannot be fed or read. */
static void cf_check_value(cf_model_info *info, const Onnx__ValueInfoProto *v,
                           const char *role)
{
    if (info->unsupported[0] != '\0')
        return;
    const char *kind = cf_value_kind_problem(v->type);
    if (kind != NULL) {
        snprintf(info->unsupported, sizeof info->unsupported,
                 "graph %s '%s' is %s, not a tensor", role, v->name ? v->name : "", kind);
        return;
    }
    if (v->type != NULL && v->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
        v->type->tensor_type != NULL && v->type->tensor_type->has_elem_type) {
        pl_dtype dt;
        pl_status *st = cf_dtype_from_onnx(v->type->tensor_type->elem_type, &dt);
        if (st != NULL) {
            snprintf(info->unsupported, sizeof info->unsupported, "graph %s '%s': %s", role,
                     v->name ? v->name : "", pl_status_message(st));
            pl_status_free(st);
        }
    }
}

static bool cf_is_initializer(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_initializer; i++)
        if (g->initializer[i]->name != NULL && strcmp(g->initializer[i]->name, name) == 0)
            return true;
    return false;
}

/* Appends OP to INFO's op list unless it is there already. */
static bool cf_add_op(cf_model_info *info, const char *domain, const char *op)
{
    char name[256];
    bool onnx = domain == NULL || domain[0] == '\0' || strcmp(domain, "ai.onnx") == 0;
    snprintf(name, sizeof name, "%s%s%s", onnx ? "" : domain, onnx ? "" : ":", op ? op : "?");
    for (size_t i = 0; i < info->n_ops; i++)
        if (strcmp(info->op_list[i], name) == 0)
            return true;
    char **grown = realloc(info->op_list, (info->n_ops + 1) * sizeof *grown);
    if (grown == NULL)
        return false;
    info->op_list = grown;
    if ((info->op_list[info->n_ops] = strdup(name)) == NULL)
        return false;
    info->n_ops++;
    return true;
}

static char *cf_join(char **items, size_t n, const char *sep)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(items[i]) + strlen(sep);
    char *s = malloc(len);
    if (s == NULL)
        return NULL;
    s[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i)
            strcat(s, sep);
        strcat(s, items[i]);
    }
    return s;
}

static pl_status *cf_model_info_fill(const Onnx__GraphProto *g, cf_model_info *info)
{
    for (size_t i = 0; i < g->n_node; i++)
        if (!cf_add_op(info, g->node[i]->domain, g->node[i]->op_type))
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    if ((info->ops = cf_join(info->op_list, info->n_ops, ",")) == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    info->inputs = calloc(g->n_input + 1, sizeof *info->inputs);
    info->outputs = calloc(g->n_output + 1, sizeof *info->outputs);
    info->input_types = calloc(g->n_input + 1, sizeof *info->input_types);
    info->output_types = calloc(g->n_output + 1, sizeof *info->output_types);
    info->input_ranks = calloc(g->n_input + 1, sizeof *info->input_ranks);
    info->input_dims = calloc(g->n_input + 1, sizeof *info->input_dims);
    if (info->inputs == NULL || info->outputs == NULL || info->input_types == NULL ||
        info->output_types == NULL || info->input_ranks == NULL || info->input_dims == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < g->n_input; i++) {
        const char *name = g->input[i]->name ? g->input[i]->name : "";
        if (cf_is_initializer(g, name))
            continue;
        cf_check_value(info, g->input[i], "input");
        info->input_types[info->n_inputs] = cf_value_elem_type(g->input[i]);
        if (!cf_record_shape(info, info->n_inputs, g->input[i]))
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
        if ((info->inputs[info->n_inputs++] = strdup(name)) == NULL)
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < g->n_output; i++) {
        cf_check_value(info, g->output[i], "output");
        info->output_types[info->n_outputs] = cf_value_elem_type(g->output[i]);
        if ((info->outputs[info->n_outputs++] =
                 strdup(g->output[i]->name ? g->output[i]->name : "")) == NULL)
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    }
    return NULL;
}

pl_status *cf_model_info_read(const char *path, cf_model_info *out)
{
    memset(out, 0, sizeof *out);
    uint8_t *bytes = NULL;
    size_t len = 0;
    pl_status *st = cf_file_read(path, &bytes, &len);
    if (st != NULL)
        return st;
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, bytes);
    free(bytes);
    if (m == NULL || m->graph == NULL) {
        if (m != NULL)
            onnx__model_proto__free_unpacked(m, NULL);
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "%s: not an ONNX model with a graph",
                                path);
    }
    st = cf_model_info_fill(m->graph, out);
    onnx__model_proto__free_unpacked(m, NULL);
    if (st != NULL)
        cf_model_info_free(out);
    return st;
}
