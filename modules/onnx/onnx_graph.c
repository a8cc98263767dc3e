/* onnx_graph.c — a decoded ONNX model turned into builder calls: opset
 * imports (ai.onnx 1 to 17; the core converts 1 to 6 to 7), initializers,
 * graph inputs (without those that are initializers: older exporters list
 * every weight as an input too), outputs and value_info with their types,
 * and nodes with their attributes. Constant nodes become constants of their output's name.
 * Subgraphs (GRAPH and GRAPHS attributes: the bodies of If, Loop and Scan)
 * are imported the same way through a builder of their own; their errors
 * name the node and attribute that hold them. Sparse tensors are refused.
 *
 * Every error names the file and the place: the initializer, the input,
 * the node and attribute. The core validates the finished graph (undefined
 * inputs, cycles) and infers its types afterwards. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* ---- a set of names ------------------------------------------------------ */

/* Borrowed strings, open addressing; for initializer names, which may be
 * many. */
typedef struct ox_names {
    const char **slots;
    size_t cap, n;
} ox_names;

static uint64_t ox_hash(const char *s)
{
    uint64_t h = 1469598103934665603u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211u;
    return h;
}

static bool ox_names_has(const ox_names *set, const char *name)
{
    if (set->cap == 0)
        return false;
    for (size_t i = ox_hash(name) & (set->cap - 1);; i = (i + 1) & (set->cap - 1)) {
        if (set->slots[i] == NULL)
            return false;
        if (strcmp(set->slots[i], name) == 0)
            return true;
    }
}

/* Adds NAME (not yet present); false when out of memory. */
static bool ox_names_add(ox_names *set, const char *name)
{
    if (2 * (set->n + 1) > set->cap) {
        size_t cap = set->cap ? 2 * set->cap : 64;
        const char **slots = calloc(cap, sizeof *slots);
        if (slots == NULL)
            return false;
        for (size_t k = 0; k < set->cap; k++) {
            if (set->slots[k] == NULL)
                continue;
            size_t i = ox_hash(set->slots[k]) & (cap - 1);
            while (slots[i] != NULL)
                i = (i + 1) & (cap - 1);
            slots[i] = set->slots[k];
        }
        free(set->slots);
        set->slots = slots;
        set->cap = cap;
    }
    size_t i = ox_hash(name) & (set->cap - 1);
    while (set->slots[i] != NULL)
        i = (i + 1) & (set->cap - 1);
    set->slots[i] = name;
    set->n++;
    return true;
}

/* ---- names and types ------------------------------------------------------ */

/* Checks a name's length (and, when REQUIRED, that it is not empty). */
static pl_status *ox_check_name(const ox_import *imp, const char *name, bool required,
                                const char *what)
{
    size_t len = name ? strlen(name) : 0;
    if (required && len == 0)
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT, "%s has no name", what);
    if (len > imp->limits.max_name_bytes)
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                        "%s: a name of %zu bytes, over the limit of %" PRIu64
                        " (the onnx module's max_name_bytes)",
                        what, len, imp->limits.max_name_bytes);
    return NULL;
}

static const char *ox_type_case_name(Onnx__TypeProto__ValueCase c)
{
    switch (c) {
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
        return "sequence";
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
        return "map";
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
        return "optional";
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
        return "sparse tensor";
    default:
        return "empty";
    }
}

/* Declares the type of a graph input, output or value_info to the builder.
 * REQUIRED (graph inputs): the type and elem_type must be given. MODEL_IO:
 * an input or output of the model's graph, which must be a tensor. */
static pl_status *ox_declare(const ox_import *imp, const Onnx__ValueInfoProto *vi,
                             bool required, bool model_io, const char *what)
{
    const Onnx__TypeProto *type = vi->type;
    if (type == NULL) {
        if (required)
            return ox_error(imp, PL_CODE_INVALID_ARGUMENT, "%s has no type", what);
        return NULL;
    }
    /* A type with nothing set (PyTorch's exporter leaves If branches'
     * outputs so) says nothing, as no type does; the importer's shape
     * inference fills it. */
    if (!required && (type->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET ||
                      (type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
                       type->tensor_type == NULL)))
        return NULL;
    /* A sequence inside the model (a value_info, a body's carried value)
     * is followed by the core through the sequence ops, which rewrite it
     * into tensors; the model's own inputs and outputs stay tensors. */
    if (type->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE && !model_io)
        return NULL;
    /* a sequence of maps no ZipMap makes (ox_values lets a ZipMap's
     * through): the message names the way out */
    const Onnx__TypeProto *elem = type->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE &&
                                          type->sequence_type != NULL
                                      ? type->sequence_type->elem_type
                                      : NULL;
    if (elem != NULL && elem->value_case == ONNX__TYPE_PROTO__VALUE_MAP_TYPE)
        return ox_error(imp, PL_CODE_UNSUPPORTED,
                        "%s is a sequence of maps that no ZipMap makes; Plinth gives only "
                        "tensors (a classifier's ZipMap output as the tensor it zips): export "
                        "the values as a tensor (skl2onnx: options {'zipmap': False})",
                        what);
    if (type->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE)
        return ox_error(imp, PL_CODE_UNSUPPORTED,
                        "%s has a sequence type; Plinth follows sequences inside a model "
                        "(the sequence ops become tensor ops) but takes and gives only tensors",
                        what);
    if (type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        type->tensor_type == NULL)
        return ox_error(imp, PL_CODE_UNSUPPORTED,
                        "%s has a %s type; only tensors are supported", what,
                        ox_type_case_name(type->value_case));
    const Onnx__TypeProto__Tensor *tt = type->tensor_type;
    pl_dtype dtype = {0, 0, 0}; /* unknown */
    if (tt->has_elem_type && tt->elem_type != 0) {
        const char *tname = NULL;
        if (!ox_dtype(tt->elem_type, &dtype, &tname)) {
            if (tname == NULL)
                return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                                "%s: unknown elem_type %" PRId32, what, tt->elem_type);
            return ox_error(imp, PL_CODE_UNSUPPORTED,
                            "%s: elem_type %s is not supported (Plinth has FLOAT, DOUBLE, "
                            "FLOAT16, BFLOAT16, INT8, UINT8, INT16, UINT16, INT32, UINT32, INT64, UINT64, BOOL, "
                        "STRING)",
                            what, tname);
        }
    } else if (required) {
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT, "%s has no elem_type", what);
    }
    int32_t ndim = -1;
    int64_t dims[OX_MAX_RANK];
    const char *params[OX_MAX_RANK];
    if (tt->shape != NULL) {
        const Onnx__TensorShapeProto *sh = tt->shape;
        if (sh->n_dim > OX_MAX_RANK)
            return ox_error(imp, PL_CODE_INVALID_ARGUMENT, "%s: rank %zu, at most %d", what,
                            sh->n_dim, OX_MAX_RANK);
        ndim = (int32_t)sh->n_dim;
        for (size_t i = 0; i < sh->n_dim; i++) {
            const Onnx__TensorShapeProto__Dimension *d = sh->dim[i];
            dims[i] = -1;
            params[i] = NULL;
            if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
                /* -1 (paddle2onnx's dynamic batch) is read as ONNX
                 * Runtime reads it: unknown */
                if (d->dim_value < -1)
                    return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                                    "%s: dimension %zu is %" PRId64
                                    "; dims are >= 0, -1 (unknown) or symbolic (dim_param)",
                                    what, i, d->dim_value);
                dims[i] = d->dim_value;
            } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM) {
                char label[64];
                snprintf(label, sizeof label, "dimension %zu's dim_param", i);
                OX_RETURN_IF_ERROR(ox_check_name(imp, d->dim_param, false, label));
                params[i] = d->dim_param;
            }
        }
    }
    return ox_wrap(imp,
                   imp->graph->builder_tensor(imp->b, vi->name, dtype, ndim,
                                              ndim > 0 ? dims : NULL,
                                              ndim > 0 ? params : NULL),
                   "%s", what);
}

/* ---- attributes ------------------------------------------------------------ */

static const char *ox_attr_kind_name(int kind)
{
    switch (kind) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: return "FLOAT";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: return "INT";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: return "STRING";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: return "TENSOR";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: return "GRAPH";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR: return "SPARSE_TENSOR";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO: return "TYPE_PROTO";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: return "FLOATS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: return "INTS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: return "STRINGS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS: return "TENSORS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS: return "GRAPHS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS: return "SPARSE_TENSORS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS: return "TYPE_PROTOS";
    default: return NULL;
    }
}

/* The kind of A: its type field, or for IR version 1 files (no type) the
 * one value field that is set; UNDEFINED when neither says. */
static int ox_attr_kind(const Onnx__AttributeProto *a)
{
    if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
        return (int)a->type;
    if (a->has_f)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    if (a->has_i)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    if (a->has_s)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    if (a->t)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    if (a->g)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    if (a->n_floats)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    if (a->n_ints)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    if (a->n_strings)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
    if (a->n_graphs)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS;
    return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
}

/* How the node is called in errors: "node 'Conv_3' (Conv)" or, without a
 * name, "node #3 (Conv)". */
static void ox_node_label(char *buf, size_t cap, const Onnx__NodeProto *n, size_t index)
{
    if (n->name && n->name[0])
        snprintf(buf, cap, "node '%.200s' (%.100s)", n->name, n->op_type);
    else
        snprintf(buf, cap, "node #%zu (%.100s)", index, n->op_type);
}

static pl_status *ox_attr_strings(const ox_import *imp, size_t nid,
                                  const Onnx__AttributeProto *a, const char *what)
{
    char **copies = calloc(a->n_strings ? a->n_strings : 1, sizeof *copies);
    pl_status *st = copies ? NULL
                           : ox_error(imp, PL_CODE_OUT_OF_MEMORY, "%s: out of memory", what);
    for (size_t i = 0; st == NULL && i < a->n_strings; i++) {
        const ProtobufCBinaryData *s = &a->strings[i];
        if (s->len && memchr(s->data, 0, s->len) != NULL)
            st = ox_error(imp, PL_CODE_UNSUPPORTED,
                          "%s: string %zu contains a NUL byte, which Plinth's string "
                          "lists cannot hold",
                          what, i);
        else if ((copies[i] = malloc(s->len + 1)) == NULL)
            st = ox_error(imp, PL_CODE_OUT_OF_MEMORY, "%s: out of memory", what);
        else {
            if (s->len)
                memcpy(copies[i], s->data, s->len);
            copies[i][s->len] = '\0';
        }
    }
    if (st == NULL)
        st = ox_wrap(imp,
                     imp->graph->builder_attr_strings(imp->b, nid, a->name,
                                                      (const char *const *)copies,
                                                      a->n_strings),
                     "%s", what);
    for (size_t i = 0; copies && i < a->n_strings; i++)
        free(copies[i]);
    free(copies);
    return st;
}

static pl_status *ox_attr_bodies(const ox_import *imp, size_t nid,
                                 const Onnx__AttributeProto *a, int kind, const char *what);

static pl_status *ox_attr(const ox_import *imp, size_t nid, const Onnx__AttributeProto *a,
                          size_t index, const char *node_label)
{
    char what[640];
    snprintf(what, sizeof what, "%s: attribute #%zu", node_label, index);
    OX_RETURN_IF_ERROR(ox_check_name(imp, a->name, true, what));
    snprintf(what, sizeof what, "%s: attribute '%.200s'", node_label, a->name);
    if (a->ref_attr_name && a->ref_attr_name[0])
        return ox_error(imp, PL_CODE_UNSUPPORTED,
                        "%s refers to function attribute '%.200s'; references are valid "
                        "only inside functions",
                        what, a->ref_attr_name);
    const pl_graph_api *g = imp->graph;
    int kind = ox_attr_kind(a);
    const char *kind_name = ox_attr_kind_name(kind);
    switch (kind) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        return ox_wrap(imp, g->builder_attr_float(imp->b, nid, a->name, a->f), "%s", what);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
        return ox_wrap(imp, g->builder_attr_int(imp->b, nid, a->name, a->i), "%s", what);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        return ox_wrap(imp,
                       g->builder_attr_string(imp->b, nid, a->name,
                                              a->s.data ? (const char *)a->s.data : "",
                                              a->s.len),
                       "%s", what);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        return ox_wrap(imp, g->builder_attr_ints(imp->b, nid, a->name, a->ints, a->n_ints),
                       "%s", what);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: {
        double *v = malloc((a->n_floats ? a->n_floats : 1) * sizeof *v);
        if (v == NULL)
            return ox_error(imp, PL_CODE_OUT_OF_MEMORY, "%s: out of memory", what);
        for (size_t i = 0; i < a->n_floats; i++)
            v[i] = a->floats[i];
        pl_status *st = ox_wrap(imp, g->builder_attr_floats(imp->b, nid, a->name, v,
                                                            a->n_floats),
                                "%s", what);
        free(v);
        return st;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
        return ox_attr_strings(imp, nid, a, what);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
        if (a->t == NULL)
            return ox_error(imp, PL_CODE_INVALID_ARGUMENT, "%s has kind TENSOR but no tensor",
                            what);
        pl_dtype dtype;
        void *data = NULL;
        size_t bytes = 0;
        OX_RETURN_IF_ERROR(ox_tensor_bytes(imp, a->t, what, &dtype, &data, &bytes));
        pl_status *st = ox_wrap(imp,
                                g->builder_attr_tensor(imp->b, nid, a->name, dtype,
                                                       (int32_t)a->t->n_dims, a->t->dims,
                                                       data, bytes),
                                "%s", what);
        free(data);
        return st;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS:
        return ox_attr_bodies(imp, nid, a, kind, what);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED:
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT, "%s has no type and no value", what);
    default:
        if (kind_name != NULL)
            return ox_error(imp, PL_CODE_UNSUPPORTED, "%s has kind %s, unsupported", what,
                            kind_name);
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT, "%s has unknown kind %d", what, kind);
    }
}

/* ---- Constant nodes ------------------------------------------------------------- */

/* A Constant's value_string (a scalar) or value_strings (1-D) as string
 * constant OUT. */
static pl_status *ox_string_constant(const ox_import *imp, const Onnx__AttributeProto *a,
                                     const char *out, const char *what)
{
    bool scalar = a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    size_t count = scalar ? 1 : a->n_strings;
    char *block;
    OX_RETURN_IF_ERROR(ox_string_block(imp, scalar ? &a->s : a->strings, count, what, &block));
    int64_t dims[1] = {(int64_t)count};
    pl_status *st = ox_wrap(imp,
                            imp->graph->builder_constant(imp->b, out, PL_DTYPE_STRING,
                                                         scalar ? 0 : 1, dims, block,
                                                         count * sizeof(const char *)),
                            "%s", what);
    free(block);
    return st;
}

/* A Constant node becomes the constant named by its output. */
static pl_status *ox_constant_node(const ox_import *imp, const Onnx__NodeProto *n,
                                   const char *label)
{
    if (n->n_input != 0 || n->n_output != 1 || n->output[0][0] == '\0')
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                        "%s: a Constant has no inputs and one named output (it has %zu "
                        "inputs, %zu outputs)",
                        label, n->n_input, n->n_output);
    if (n->n_attribute != 1)
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                        "%s: a Constant has exactly one attribute (value, value_float, "
                        "value_floats, value_int, value_ints, value_string, value_strings, "
                        "sparse_value), it has %zu",
                        label, n->n_attribute);
    const Onnx__AttributeProto *a = n->attribute[0];
    const char *out = n->output[0];
    const char *aname = a->name ? a->name : "";
    int kind = ox_attr_kind(a);
    char what[640];
    snprintf(what, sizeof what, "%s: attribute '%.200s'", label, aname);
    struct {
        const char *name;
        int kind;
    } forms[] = {
        {"value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR},
        {"value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT},
        {"value_floats", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS},
        {"value_int", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT},
        {"value_ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS},
        {"sparse_value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR},
        {"value_string", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING},
        {"value_strings", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS},
    };
    size_t form = SIZE_MAX;
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
        if (strcmp(aname, forms[i].name) == 0)
            form = i;
    if (form == SIZE_MAX)
        return ox_error(imp, PL_CODE_UNSUPPORTED,
                        "%s is not supported for Constant (supported: value, value_float, "
                        "value_floats, value_int, value_ints, value_string, value_strings, "
                        "sparse_value)",
                        what);
    if (kind != forms[form].kind)
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT, "%s has kind %s, expected %s", what,
                        ox_attr_kind_name(kind) ? ox_attr_kind_name(kind) : "UNDEFINED",
                        ox_attr_kind_name(forms[form].kind));
    if (kind == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR) {
        if (a->sparse_tensor == NULL)
            return ox_error(imp, PL_CODE_INVALID_ARGUMENT, "%s has no sparse tensor", what);
        return ox_sparse_constant(imp, a->sparse_tensor, out, what);
    }
    if (kind == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR) {
        if (a->t == NULL)
            return ox_error(imp, PL_CODE_INVALID_ARGUMENT, "%s has no tensor", what);
        return ox_tensor_constant(imp, a->t, out, what);
    }
    if (kind == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING ||
        kind == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS)
        return ox_string_constant(imp, a, out, what);
    bool floats = kind == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT ||
                  kind == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    bool scalar = kind == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT ||
                  kind == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    size_t count = scalar ? 1 : floats ? a->n_floats : a->n_ints;
    size_t width = floats ? 4 : 8;
    uint8_t *bytes = malloc(count ? count * width : 1);
    if (bytes == NULL)
        return ox_error(imp, PL_CODE_OUT_OF_MEMORY, "%s: out of memory", what);
    for (size_t i = 0; i < count; i++) {
        uint64_t bits;
        if (floats) {
            uint32_t b32;
            float f = scalar ? a->f : a->floats[i];
            memcpy(&b32, &f, 4);
            bits = b32;
        } else {
            bits = (uint64_t)(scalar ? a->i : a->ints[i]);
        }
        for (size_t k = 0; k < width; k++)
            bytes[i * width + k] = (uint8_t)(bits >> (8 * k));
    }
    int64_t dims[1] = {(int64_t)count};
    pl_status *st = ox_wrap(imp,
                            imp->graph->builder_constant(imp->b, out,
                                                         floats ? PL_DTYPE_F32 : PL_DTYPE_I64,
                                                         scalar ? 0 : 1, dims, bytes,
                                                         count * width),
                            "%s", what);
    free(bytes);
    return st;
}

/* ---- opsets and nodes ------------------------------------------------------------- */

/* "" and "ai.onnx" are the same domain. */
static const char *ox_domain(const char *d)
{
    return d == NULL || strcmp(d, "ai.onnx") == 0 ? "" : d;
}

static pl_status *ox_opsets(const ox_import *imp, const Onnx__ModelProto *m)
{
    if (m->n_opset_import > OX_MAX_OPSETS)
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                        "opset_import lists %zu domains, more than %d", m->n_opset_import,
                        OX_MAX_OPSETS);
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        const char *d = ox_domain(o->domain);
        OX_RETURN_IF_ERROR(ox_check_name(imp, d, false, "an opset_import domain"));
        if (!o->has_version)
            return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                            "opset_import of domain '%s' has no version",
                            d[0] ? d : "ai.onnx");
        /* skl2onnx lists ai.onnx twice at one version (ONNX Runtime takes
         * it): the same entry again says nothing new; two versions of one
         * domain leave no way to read its nodes */
        bool again = false;
        for (size_t k = 0; k < i && !again; k++) {
            const Onnx__OperatorSetIdProto *p = m->opset_import[k];
            if (strcmp(ox_domain(p->domain), d) != 0)
                continue;
            if (p->version != o->version)
                return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                                "opset_import lists domain '%s' twice, at versions %" PRId64
                                " and %" PRId64,
                                d[0] ? d : "ai.onnx", p->version, o->version);
            again = true;
        }
        if (again)
            continue;
        if (d[0] == '\0' && (o->version < OX_OPSET_MIN || o->version > OX_OPSET_MAX))
            return ox_error(imp, PL_CODE_UNSUPPORTED,
                            "model imports ai.onnx opset %" PRId64 "; supported: %d to %d",
                            o->version, OX_OPSET_MIN, OX_OPSET_MAX);
        OX_RETURN_IF_ERROR(ox_wrap(imp, imp->graph->builder_opset(imp->b, d, o->version),
                                   "opset_import"));
    }
    return NULL;
}

static bool ox_has_opset(const Onnx__ModelProto *m, const char *domain)
{
    for (size_t i = 0; i < m->n_opset_import; i++)
        if (strcmp(ox_domain(m->opset_import[i]->domain), domain) == 0)
            return true;
    return false;
}

static const Onnx__FunctionProto *ox_function(const Onnx__ModelProto *m, const char *domain,
                                              const char *name);
static pl_status *ox_inline(const ox_import *imp, const Onnx__ModelProto *m,
                            const Onnx__FunctionProto *f, const Onnx__NodeProto *call,
                            const char *label, int depth);

static pl_status *ox_node_at(const ox_import *imp, const Onnx__ModelProto *m,
                             const Onnx__NodeProto *n, size_t index, int depth)
{
    char label[384];
    if (n->op_type == NULL || n->op_type[0] == '\0')
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT, "node #%zu ('%.200s') has no op_type",
                        index, n->name ? n->name : "");
    ox_node_label(label, sizeof label, n, index);
    OX_RETURN_IF_ERROR(ox_check_name(imp, n->name, false, label));
    OX_RETURN_IF_ERROR(ox_check_name(imp, n->op_type, true, label));
    OX_RETURN_IF_ERROR(ox_check_name(imp, n->domain, false, label));
    const char *domain = ox_domain(n->domain);
    if (!ox_has_opset(m, domain))
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                        "%s is in domain '%s', which the model's opset_import does not "
                        "list",
                        label, domain[0] ? domain : "ai.onnx");
    size_t named = 0;
    for (size_t i = 0; i < n->n_input; i++)
        OX_RETURN_IF_ERROR(ox_check_name(imp, n->input[i], false, label));
    for (size_t i = 0; i < n->n_output; i++) {
        OX_RETURN_IF_ERROR(ox_check_name(imp, n->output[i], false, label));
        named += n->output[i][0] != '\0';
    }
    if (named == 0)
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                        "%s has no named output (%zu outputs, all empty)", label,
                        n->n_output);
    if (domain[0] == '\0' && strcmp(n->op_type, "Constant") == 0)
        return ox_constant_node(imp, n, label);
    const Onnx__FunctionProto *f = ox_function(m, domain, n->op_type);
    if (f != NULL)
        return ox_inline(imp, m, f, n, label, depth);
    size_t nid = 0;
    OX_RETURN_IF_ERROR(ox_wrap(imp,
                               imp->graph->builder_node(imp->b, n->name, n->op_type, domain,
                                                        (const char *const *)n->input,
                                                        n->n_input,
                                                        (const char *const *)n->output,
                                                        n->n_output, &nid),
                               "%s", label));
    for (size_t i = 0; i < n->n_attribute; i++)
        OX_RETURN_IF_ERROR(ox_attr(imp, nid, n->attribute[i], i, label));
    return NULL;
}

static pl_status *ox_node(const ox_import *imp, const Onnx__ModelProto *m,
                          const Onnx__NodeProto *n, size_t index)
{
    return ox_node_at(imp, m, n, index, 0);
}

/* ---- model-local functions (IR version 8) ---------------------------------------
 *
 * A node whose domain and op_type name one of the model's FunctionProtos is
 * replaced by the function's nodes: the formal inputs and outputs become the
 * call's tensors, every other tensor of the body gets a name of its own
 * ("<call>/fn<k>/<name>"), and an attribute that refers to the caller's
 * (ref_attr_name) takes the caller's value, or is left out when the caller
 * does not set it. Bodies may call other functions, to OX_MAX_FN_DEPTH. */

#define OX_MAX_FN_DEPTH 32

static const Onnx__FunctionProto *ox_function(const Onnx__ModelProto *m, const char *domain,
                                              const char *name)
{
    for (size_t i = 0; m != NULL && i < m->n_functions; i++) {
        const Onnx__FunctionProto *f = m->functions[i];
        if (f != NULL && f->name != NULL && strcmp(f->name, name) == 0 &&
            strcmp(ox_domain(f->domain), domain) == 0)
            return f;
    }
    return NULL;
}

static char *ox_strdup(const char *s)
{
    size_t len = strlen(s) + 1;
    char *d = malloc(len);
    if (d != NULL)
        memcpy(d, s, len);
    return d;
}

/* The call's name for the body's tensor NAME: the actual input or output
 * for a formal one ("" when the call leaves it out), else PREFIX + NAME.
 * NULL when out of memory. */
static char *ox_fn_name(const Onnx__FunctionProto *f, const Onnx__NodeProto *call,
                        const char *prefix, const char *name)
{
    if (name[0] == '\0')
        return ox_strdup("");
    for (size_t i = 0; i < f->n_input; i++)
        if (strcmp(f->input[i], name) == 0)
            return ox_strdup(i < call->n_input ? call->input[i] : "");
    for (size_t i = 0; i < f->n_output; i++)
        if (strcmp(f->output[i], name) == 0 && i < call->n_output && call->output[i][0])
            return ox_strdup(call->output[i]);
    size_t len = strlen(prefix) + strlen(name) + 1;
    char *s = malloc(len);
    if (s != NULL)
        snprintf(s, len, "%s%s", prefix, name);
    return s;
}

static pl_status *ox_inline(const ox_import *imp, const Onnx__ModelProto *m,
                            const Onnx__FunctionProto *f, const Onnx__NodeProto *call,
                            const char *label, int depth)
{
    if (depth >= OX_MAX_FN_DEPTH)
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                        "%s: functions call each other more than %d deep (recursion?)", label,
                        OX_MAX_FN_DEPTH);
    if (call->n_input > f->n_input || call->n_output > f->n_output)
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                        "%s: %zu inputs and %zu outputs given to function '%s', which has %zu "
                        "and %zu",
                        label, call->n_input, call->n_output, f->name, f->n_input,
                        f->n_output);
    /* The body speaks the model's opsets: the same version of every domain
     * both import whose ops the body runs (a different one would change
     * what they mean). A domain whose nodes in the body are all calls of
     * the model's functions has no ops of its own to mean anything:
     * jax2onnx puts each function in a domain of its own and imports it at
     * the model's default version in the function, at 1 in the model. */
    for (size_t i = 0; i < f->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = f->opset_import[i];
        const char *d = ox_domain(o->domain);
        bool runs_ops = false;
        for (size_t j = 0; j < f->n_node && !runs_ops; j++)
            runs_ops = strcmp(ox_domain(f->node[j]->domain), d) == 0 &&
                       ox_function(m, d, f->node[j]->op_type) == NULL;
        for (size_t k = 0; runs_ops && k < m->n_opset_import; k++)
            if (strcmp(ox_domain(m->opset_import[k]->domain), d) == 0 &&
                m->opset_import[k]->version != o->version)
                return ox_error(imp, PL_CODE_UNSUPPORTED,
                                "%s: function '%s' imports opset %" PRId64
                                " of domain '%s', the model %" PRId64
                                "; functions must use the model's opset versions",
                                label, f->name, o->version, d[0] ? d : "ai.onnx",
                                m->opset_import[k]->version);
    }
    imp->inlined->nodes += f->n_node;
    if (imp->inlined->nodes > imp->limits.max_nodes)
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                        "%s: inlining function '%s' makes more than %" PRIu64
                        " nodes (the onnx module's max_nodes)",
                        label, f->name, imp->limits.max_nodes);
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%.300s/fn%zu/",
             call->name && call->name[0] ? call->name : f->name, imp->inlined->calls++);
    pl_status *st = NULL;
    for (size_t i = 0; st == NULL && i < f->n_node; i++) {
        const Onnx__NodeProto *bn = f->node[i];
        Onnx__NodeProto copy = *bn;
        size_t n_names = bn->n_input + bn->n_output;
        char **names = calloc(n_names ? n_names : 1, sizeof *names);
        Onnx__AttributeProto *attrs = calloc(bn->n_attribute ? bn->n_attribute : 1,
                                             sizeof *attrs);
        Onnx__AttributeProto **aptr = calloc(bn->n_attribute ? bn->n_attribute : 1,
                                             sizeof *aptr);
        char *node_name = NULL;
        if (names == NULL || attrs == NULL || aptr == NULL)
            st = ox_error(imp, PL_CODE_OUT_OF_MEMORY, "%s: out of memory", label);
        for (size_t k = 0; st == NULL && k < n_names; k++) {
            const char *nm = k < bn->n_input ? bn->input[k] : bn->output[k - bn->n_input];
            if ((names[k] = ox_fn_name(f, call, prefix, nm ? nm : "")) == NULL)
                st = ox_error(imp, PL_CODE_OUT_OF_MEMORY, "%s: out of memory", label);
        }
        size_t na = 0;
        for (size_t k = 0; st == NULL && k < bn->n_attribute; k++) {
            const Onnx__AttributeProto *a = bn->attribute[k];
            if (a->g != NULL || a->n_graphs > 0) {
                st = ox_error(imp, PL_CODE_UNSUPPORTED,
                              "%s: function '%s' has control flow (node '%s'), which is not "
                              "inlined",
                              label, f->name, bn->name ? bn->name : "");
                break;
            }
            if (a->ref_attr_name == NULL || a->ref_attr_name[0] == '\0') {
                aptr[na++] = (Onnx__AttributeProto *)a;
                continue;
            }
            for (size_t c = 0; c < call->n_attribute; c++)
                if (strcmp(call->attribute[c]->name, a->ref_attr_name) == 0) {
                    attrs[na] = *call->attribute[c];
                    attrs[na].name = a->name;
                    attrs[na].ref_attr_name = NULL;
                    aptr[na] = &attrs[na];
                    na++;
                    break;
                }
        }
        if (st == NULL) {
            /* an unnamed node of the body: its op and place */
            bool named = bn->name != NULL && bn->name[0] != '\0';
            size_t len = strlen(prefix) + (named ? strlen(bn->name) : strlen(bn->op_type ? bn->op_type : "") + 24) + 1;
            if ((node_name = malloc(len)) == NULL)
                st = ox_error(imp, PL_CODE_OUT_OF_MEMORY, "%s: out of memory", label);
            else if (named)
                snprintf(node_name, len, "%s%s", prefix, bn->name);
            else
                snprintf(node_name, len, "%s%s_%zu", prefix, bn->op_type ? bn->op_type : "", i);
        }
        if (st == NULL) {
            copy.name = node_name;
            copy.input = names;
            copy.output = names + bn->n_input;
            copy.n_attribute = na;
            copy.attribute = aptr;
            st = ox_node_at(imp, m, &copy, i, depth + 1);
        }
        for (size_t k = 0; names != NULL && k < n_names; k++)
            free(names[k]);
        free(names);
        free(attrs);
        free(aptr);
        free(node_name);
    }
    return st;
}

/* ---- the graph ------------------------------------------------------------------- */

static pl_status *ox_initializers(const ox_import *imp, const Onnx__GraphProto *g,
                                  ox_names *inits, ox_names *nibbles)
{
    char what[320];
    ox_import at_init = *imp;
    at_init.nibbles_ok = true;
    for (size_t i = 0; i < g->n_initializer; i++) {
        const Onnx__TensorProto *t = g->initializer[i];
        snprintf(what, sizeof what, "initializer #%zu", i);
        OX_RETURN_IF_ERROR(ox_check_name(imp, t->name, true, what));
        snprintf(what, sizeof what, "initializer '%.200s'", t->name);
        if (ox_names_has(inits, t->name))
            return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                            "%s is listed twice among the initializers", what);
        if (!ox_names_add(inits, t->name))
            return ox_error(imp, PL_CODE_OUT_OF_MEMORY, "out of memory");
        OX_RETURN_IF_ERROR(ox_tensor_constant(&at_init, t, t->name, what));
        if (t->has_data_type && (t->data_type == 21 || t->data_type == 22) &&
            !ox_names_add(nibbles, t->name))
            return ox_error(imp, PL_CODE_OUT_OF_MEMORY, "out of memory");
    }
    /* sparse ones become dense constants named by their values */
    for (size_t i = 0; i < g->n_sparse_initializer; i++) {
        const Onnx__SparseTensorProto *sp = g->sparse_initializer[i];
        const char *name = sp->values != NULL ? sp->values->name : NULL;
        snprintf(what, sizeof what, "sparse initializer #%zu", i);
        OX_RETURN_IF_ERROR(ox_check_name(imp, name, true, what));
        snprintf(what, sizeof what, "sparse initializer '%.200s'", name);
        if (ox_names_has(inits, name))
            return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                            "%s is listed twice among the initializers", what);
        if (!ox_names_add(inits, name))
            return ox_error(imp, PL_CODE_OUT_OF_MEMORY, "out of memory");
        OX_RETURN_IF_ERROR(ox_sparse_constant(imp, sp, name, what));
    }
    return NULL;
}

/* Node I of G may read a 4-bit initializer (held one value a byte) only as
 * DequantizeLinear's x or zero point, which read the values as they are;
 * anything else (a QuantizeLinear to 4 bits, which saturates there) would
 * compute on 8-bit values. */
static pl_status *ox_check_nibbles(const ox_import *imp, const Onnx__GraphProto *g,
                                   const ox_names *nibbles)
{
    for (size_t i = 0; nibbles->slots != NULL && i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        bool dq = n->op_type != NULL && strcmp(n->op_type, "DequantizeLinear") == 0 &&
                  (n->domain == NULL || n->domain[0] == '\0' || strcmp(n->domain, "ai.onnx") == 0);
        for (size_t k = 0; k < n->n_input; k++)
            if (n->input[k] != NULL && ox_names_has(nibbles, n->input[k]) &&
                !(dq && (k == 0 || k == 2)))
                return ox_error(imp, PL_CODE_UNSUPPORTED,
                                "node '%.200s' (%.100s): input %zu '%.200s' is an INT4 or "
                                "UINT4 initializer; 4-bit values are supported as "
                                "DequantizeLinear's x and zero point only",
                                n->name ? n->name : "", n->op_type ? n->op_type : "", k,
                                n->input[k]);
    }
    return NULL;
}

/* Whether graph output VI is a sequence of maps that an ai.onnx.ml ZipMap
 * node of G makes. */
static bool ox_zipmap_output(const Onnx__GraphProto *g, const Onnx__ValueInfoProto *vi)
{
    const Onnx__TypeProto *type = vi->type;
    if (type == NULL || type->value_case != ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE ||
        type->sequence_type == NULL || type->sequence_type->elem_type == NULL ||
        type->sequence_type->elem_type->value_case != ONNX__TYPE_PROTO__VALUE_MAP_TYPE ||
        vi->name == NULL)
        return false;
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        if (n->op_type != NULL && strcmp(n->op_type, "ZipMap") == 0 && n->domain != NULL &&
            strcmp(n->domain, "ai.onnx.ml") == 0 && n->n_output == 1 && n->output[0] != NULL &&
            strcmp(n->output[0], vi->name) == 0)
            return true;
    }
    return false;
}

static pl_status *ox_values(const ox_import *imp, const Onnx__GraphProto *g,
                            const ox_names *inits)
{
    char what[320];
    for (size_t i = 0; i < g->n_input; i++) {
        const Onnx__ValueInfoProto *vi = g->input[i];
        snprintf(what, sizeof what, "graph input #%zu", i);
        OX_RETURN_IF_ERROR(ox_check_name(imp, vi->name, true, what));
        /* Older exporters list the initializers among the inputs; they are
         * constants here. */
        if (ox_names_has(inits, vi->name))
            continue;
        snprintf(what, sizeof what, "graph input '%.200s'", vi->name);
        /* A body's inputs may leave their types to the node that runs it. */
        OX_RETURN_IF_ERROR(ox_declare(imp, vi, imp->scope == NULL, imp->scope == NULL, what));
        OX_RETURN_IF_ERROR(
            ox_wrap(imp, imp->graph->builder_input(imp->b, vi->name), "%s", what));
    }
    for (size_t i = 0; i < g->n_output; i++) {
        const Onnx__ValueInfoProto *vi = g->output[i];
        snprintf(what, sizeof what, "graph output #%zu", i);
        OX_RETURN_IF_ERROR(ox_check_name(imp, vi->name, true, what));
        snprintf(what, sizeof what, "graph output '%.200s'", vi->name);
        /* a classifier's ZipMap (skl2onnx's default): the core gives the
         * tensor it zips (opset_lower.c), typed by inference */
        if (!ox_names_has(inits, vi->name) && !ox_zipmap_output(g, vi))
            OX_RETURN_IF_ERROR(ox_declare(imp, vi, false, imp->scope == NULL, what));
        OX_RETURN_IF_ERROR(
            ox_wrap(imp, imp->graph->builder_output(imp->b, vi->name), "%s", what));
    }
    /* The graph's inputs and outputs are its contract; a value_info of the
     * same name is a hint that may be stale (onnxconverter_common's float16
     * conversion declares an output f16 there and f32 in the outputs, as
     * its Cast makes it): ONNX Runtime keeps the graph's, and so does this. */
    ox_names io = {0};
    pl_status *st = NULL;
    for (size_t i = 0; st == NULL && i < g->n_input + g->n_output; i++) {
        const char *name = i < g->n_input ? g->input[i]->name : g->output[i - g->n_input]->name;
        if (!ox_names_has(&io, name) && !ox_names_add(&io, name))
            st = ox_error(imp, PL_CODE_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t i = 0; st == NULL && i < g->n_value_info; i++) {
        const Onnx__ValueInfoProto *vi = g->value_info[i];
        snprintf(what, sizeof what, "value_info #%zu", i);
        st = ox_check_name(imp, vi->name, true, what);
        if (st != NULL || ox_names_has(inits, vi->name) || ox_names_has(&io, vi->name))
            continue;
        snprintf(what, sizeof what, "value_info '%.200s'", vi->name);
        st = ox_declare(imp, vi, false, false, what);
    }
    free(io.slots);
    return st;
}

/* Imports graph G (the model's or a body) through IMP's builder. */
static pl_status *ox_graph(const ox_import *imp, const Onnx__GraphProto *g)
{
    ox_names inits = {0}, nibbles = {0};
    pl_status *st = ox_initializers(imp, g, &inits, &nibbles);
    if (st == NULL)
        st = ox_check_nibbles(imp, g, &nibbles);
    if (st == NULL)
        st = ox_values(imp, g, &inits);
    for (size_t i = 0; st == NULL && i < g->n_node; i++)
        st = ox_node(imp, imp->model, g->node[i], i);
    free(inits.slots);
    free(nibbles.slots);
    return st;
}

/* A GRAPH or GRAPHS attribute: each body through a builder of its own. */
static pl_status *ox_attr_bodies(const ox_import *imp, size_t nid,
                                 const Onnx__AttributeProto *a, int kind, const char *what)
{
    const pl_graph_api *api = imp->graph;
    bool one = kind == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    if (one ? a->g == NULL : (a->n_graphs > 0 && a->graphs == NULL))
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT, "%s has kind %s but no graph", what,
                        one ? "GRAPH" : "GRAPHS");
    if (!PL_ABI_HAS_FN(pl_graph_api, api, builder_attr_graph) ||
        !PL_ABI_HAS_FN(pl_graph_api, api, builder_attr_graphs))
        return ox_error(imp, PL_CODE_UNSUPPORTED,
                        "%s holds a graph (control flow), which this core cannot build "
                        "(its graph table is ABI %u.%u; bodies need 1.2)",
                        what, api ? (unsigned)api->header.abi_major : 0u,
                        api ? (unsigned)api->header.abi_minor : 0u);
    size_t count = one ? 1 : a->n_graphs;
    pl_graph_builder **subs = calloc(count ? count : 1, sizeof *subs);
    if (subs == NULL)
        return ox_error(imp, PL_CODE_OUT_OF_MEMORY, "%s: out of memory", what);
    pl_status *st = one ? api->builder_attr_graph(imp->b, nid, a->name, &subs[0])
                        : api->builder_attr_graphs(imp->b, nid, a->name, count, subs);
    st = ox_wrap(imp, st, "%s", what);
    for (size_t i = 0; st == NULL && i < count; i++) {
        const Onnx__GraphProto *body = one ? a->g : a->graphs[i];
        char scope[1400];
        const char *outer = imp->scope ? imp->scope : "";
        if (one)
            snprintf(scope, sizeof scope, "%s%s: ", outer, what);
        else
            snprintf(scope, sizeof scope, "%s%s[%zu]: ", outer, what, i);
        ox_import sub = *imp;
        sub.b = subs[i];
        sub.scope = scope;
        if (body->n_node > imp->limits.max_nodes)
            st = ox_error(&sub, PL_CODE_INVALID_ARGUMENT,
                          "%zu nodes, more than %" PRIu64 " (the onnx module's max_nodes)",
                          body->n_node, imp->limits.max_nodes);
        else
            st = ox_graph(&sub, body);
    }
    free(subs);
    return st;
}

pl_status *ox_import_model(ox_import *imp, const Onnx__ModelProto *m)
{
    if (!m->has_ir_version || m->ir_version < 3)
        return ox_error(imp, PL_CODE_INCOMPATIBLE,
                        "ir_version %" PRId64
                        " is too old; Plinth reads ONNX IR version 3 and later",
                        m->has_ir_version ? m->ir_version : 0);
    const Onnx__GraphProto *g = m->graph;
    if (g == NULL)
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT, "the model has no graph");
    if (g->n_node > imp->limits.max_nodes)
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                        "%zu nodes, more than %" PRIu64 " (the onnx module's max_nodes)",
                        g->n_node, imp->limits.max_nodes);
    OX_RETURN_IF_ERROR(ox_opsets(imp, m));
    imp->model = m;
    return ox_graph(imp, g);
}
