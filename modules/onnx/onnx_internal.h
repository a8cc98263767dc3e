/* onnx_internal.h — what the files of the onnx module share: the state of
 * one import, its error helpers, and the steps of an import (the wire check
 * before decoding, the graph translation, the tensor conversion).
 *
 * Nothing here is thread-safe on its own: one import runs on one thread, and
 * each import has its own ox_import. */
#ifndef PLINTH_ONNX_INTERNAL_H
#define PLINTH_ONNX_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <plinth/module.h>

#include "onnx.pb-c.h"

/* The host table, set once by the entry point; valid until unload. */
extern const pl_host_api *ox_host;

/* Limits an import enforces; set by configure. */
typedef struct ox_limits {
    uint64_t max_file_bytes; /* the .onnx file itself */
    uint64_t max_nodes;      /* NodeProto messages, subgraphs included */
    uint64_t max_name_bytes; /* any name: tensor, node, op, domain, attribute */
} ox_limits;

/* Deepest nesting of messages the wire check lets through. ONNX itself
 * needs about 8 (model, graph, node, attribute, tensor, entry; a few more
 * for nested sequence types); the bound keeps protobuf-c's recursive
 * decoder off the end of the stack. */
#define OX_MAX_DEPTH 64
/* Entries of opset_import a model may list. */
#define OX_MAX_OPSETS 1024
/* The ai.onnx opset versions the core reads: it converts 1 to 6 to 7
 * (core/opset/src/opset_upgrade.c), the oldest its schemas describe, and
 * knows what changed up to 28 (core/opset/src/opset_history.c): a node
 * whose op changed after the schema the core has is refused by name. */
#define OX_OPSET_MIN 1
#define OX_OPSET_MAX 28
/* Rank of any tensor (the core's limit). */
#define OX_MAX_RANK 16

/* Returns the status of EXPR when it is an error. */
#define OX_RETURN_IF_ERROR(expr)          \
    do {                                  \
        pl_status *ox_st_ = (expr);       \
        if (ox_st_ != NULL)               \
            return ox_st_;                \
    } while (0)

/* One import: the file, the builder, and bookkeeping for errors. */
typedef struct ox_import {
    const pl_graph_api *graph; /* host->graph: the builder functions */
    pl_graph_builder *b;
    const char *path;          /* the file, as the core named it */
    uint64_t file_bytes;
    const uint8_t *map;        /* the file mapped: raw_data read in place lies in it */
    ox_limits limits;
    const Onnx__ModelProto *model; /* for the opset imports bodies speak */
    /* Inside a body: where it is ("node 'loop' (Loop): attribute 'body': "),
     * put before every message; NULL at the model's graph. */
    const char *scope;
    /* Model-local functions inlined so far (onnx_graph.c): calls, for the
     * names of their inner tensors, and nodes, against max_nodes (nested
     * calls multiply); shared by bodies. */
    struct ox_inlined {
        size_t calls, nodes;
    } *inlined;
    /* Set while the graph's initializers are read: INT4 and UINT4 tensors
     * are taken there (onnx_tensor.c), nowhere else. */
    bool nibbles_ok;
} ox_import;

/* A status "PATH: <message>" with CODE. */
pl_status *ox_error(const ox_import *imp, pl_code code, const char *fmt, ...)
    PL_PRINTF_LIKE(3, 4);

/* Takes ownership of ST (a builder's status, or NULL) and, when it is an
 * error, returns "PATH: <where>: <its message>" with its code. */
pl_status *ox_wrap(const ox_import *imp, pl_status *st, const char *where_fmt, ...)
    PL_PRINTF_LIKE(3, 4);

/* ---- onnx_scan.c ------------------------------------------------------- */

/* Walks the protobuf wire format of DATA as an onnx.ModelProto before
 * protobuf-c decodes it: every tag, wire type and length is checked against
 * the message descriptors, nesting is bounded by OX_MAX_DEPTH and NodeProto
 * messages are counted against the limit. protobuf-c's own decoder says
 * only "failed"; this says where and why. */
pl_status *ox_scan(const ox_import *imp, const uint8_t *data, size_t len);

/* ---- onnx_lift.c ------------------------------------------------------- */

/* Where one initializer's raw_data lies in the file; len SIZE_MAX: it has
 * none. */
typedef struct ox_lift_raw {
    const uint8_t *data;
    size_t len;
} ox_lift_raw;

/* A model's wire form without its initializers' raw_data. */
typedef struct ox_lifted {
    uint8_t *buf;
    size_t len;
    ox_lift_raw *raws; /* one per initializer of the main graph, in order */
    size_t n_raws;
} ox_lifted;

/* Writes DATA (a model ox_scan passed) without its main graph's raw_data
 * into OUT. False (OUT empty) when there is nothing to lift, the layout is
 * unusual, or memory ran out: decode DATA itself then. */
bool ox_lift(const uint8_t *data, size_t len, ox_lifted *out);
/* Points M's initializers (decoded from OUT->buf) at their raw_data in the
 * file; false when M does not match what was lifted. */
bool ox_lift_attach(Onnx__ModelProto *m, const ox_lifted *l);
/* Clears those pointers again, before M is freed. */
void ox_lift_detach(Onnx__ModelProto *m, const ox_lifted *l);
void ox_lift_free(ox_lifted *l);

/* ---- onnx_tensor.c ----------------------------------------------------- */

/* The Plinth dtype of an ONNX elem_type. Returns 1 and sets *out when Plinth
 * has it; 0 otherwise, with *out_name the ONNX name of the type ("UINT16")
 * or NULL when the value is not an ONNX type at all. */
int ox_dtype(int32_t elem_type, pl_dtype *out, const char **out_name);

/* Formats DIMS like "[3,4]" into BUF (truncated to fit). */
void ox_format_dims(char *buf, size_t cap, const int64_t *dims, size_t ndim);

/* Hands tensor T to the builder as the constant NAME: bytes from raw_data,
 * a typed field or an external file, all sizes checked. WHAT names it in
 * errors ("initializer 'w'", "node 'c' (Constant): attribute 'value'"). */
pl_status *ox_tensor_constant(const ox_import *imp, const Onnx__TensorProto *t,
                              const char *name, const char *what);

/* Hands sparse tensor SP to the builder as the dense constant NAME: its
 * values at its indices (linear, or one coordinate per axis), zeros
 * elsewhere. Its dense form may take at most max_file_bytes. */
pl_status *ox_sparse_constant(const ox_import *imp, const Onnx__SparseTensorProto *sp,
                              const char *name, const char *what);

/* COUNT strings V (ONNX's length-delimited bytes) as the builder takes
 * PL_DTYPE_STRING data: COUNT pointers, then the NUL-terminated copies they
 * point at, in one block *OUT the caller frees; a NUL inside one is
 * refused (WHAT names them). */
pl_status *ox_string_block(const ox_import *imp, const ProtobufCBinaryData *v, size_t count,
                           const char *what, char **out);

/* Decodes tensor T into host memory for a tensor attribute: *out_data
 * (free()) holds *out_bytes little-endian bytes of *out_dtype. External data
 * is refused here. */
pl_status *ox_tensor_bytes(const ox_import *imp, const Onnx__TensorProto *t,
                           const char *what, pl_dtype *out_dtype, void **out_data,
                           size_t *out_bytes);

/* ---- onnx_graph.c ------------------------------------------------------ */

/* Translates a decoded model into builder calls. */
pl_status *ox_import_model(ox_import *imp, const Onnx__ModelProto *model);

#endif /* PLINTH_ONNX_INTERNAL_H */
