/* plinth/tensor.h — how tensors cross the module boundary.
 *
 * pl_tensor begins with exactly the fields of DLPack's DLTensor, in the same
 * order and types, so a pl_tensor * can be handed to any DLPack consumer as a
 * DLTensor *. The core static-asserts this against <dlpack/dlpack.h>; the SDK
 * itself does not depend on DLPack. After the DLPack prefix come Plinth's own
 * fields, guarded by their own struct_size because the prefix cannot start
 * with a pl_abi_header. */
#ifndef PLINTH_TENSOR_H
#define PLINTH_TENSOR_H

#include <stdint.h>

#include "plinth/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device types, numbered as DLPack's DLDeviceType. */
typedef enum pl_device_type {
    PL_DEVICE_CPU = 1,     /* kDLCPU: host memory */
    PL_DEVICE_CUDA = 2,    /* kDLCUDA */
    PL_DEVICE_CUDA_HOST = 3, /* kDLCUDAHost: pinned host memory */
    PL_DEVICE_EXT = 12     /* kDLExtDev: any other accelerator (example_acc) */
} pl_device_type;

/* Same layout as DLDevice. device_id is the index among the devices of the
 * module that owns the memory. */
typedef struct pl_device {
    int32_t device_type; /* a pl_device_type */
    int32_t device_id;
} pl_device;

/* Type codes, numbered as DLPack's DLDataTypeCode (PL_TYPE_BOOL is the code
 * that later DLPack versions gave to kDLBool). */
typedef enum pl_type_code {
    PL_TYPE_INT = 0,
    PL_TYPE_UINT = 1,
    PL_TYPE_FLOAT = 2,
    PL_TYPE_BFLOAT = 4,
    PL_TYPE_BOOL = 6,
    /* ABI 1.13: Plinth's own code, outside DLPack's range. Only at the
     * application boundary (pl_session_run, pl_session_input_type) and in
     * the graph builder: an element is a `const char *` to NUL-terminated
     * UTF-8. Inside a graph a string tensor is an int64 tensor of string
     * ids (docs/architecture.md, "String tensors"), so a module never sees
     * this code. */
    PL_TYPE_STRING = 128
} pl_type_code;

/* Same layout as DLDataType. Plinth uses lanes = 1 throughout. */
typedef struct pl_dtype {
    uint8_t code;  /* a pl_type_code */
    uint8_t bits;
    uint16_t lanes;
} pl_dtype;

/* A dtype value: a C99 compound literal, or in C++ (a vendor's module
 * may be C++; compound literals are not C++) the aggregate's braces. */
#ifdef __cplusplus
#define PL_DTYPE_OF(code, bits) (pl_dtype{(code), (bits), 1})
#else
#define PL_DTYPE_OF(code, bits) ((pl_dtype){(code), (bits), 1})
#endif

/* The nine dtypes of ABI 1.0. */
#define PL_DTYPE_F32 PL_DTYPE_OF(PL_TYPE_FLOAT, 32)
#define PL_DTYPE_F64 PL_DTYPE_OF(PL_TYPE_FLOAT, 64)
#define PL_DTYPE_F16 PL_DTYPE_OF(PL_TYPE_FLOAT, 16)
#define PL_DTYPE_BF16 PL_DTYPE_OF(PL_TYPE_BFLOAT, 16)
#define PL_DTYPE_U8 PL_DTYPE_OF(PL_TYPE_UINT, 8)
#define PL_DTYPE_I8 PL_DTYPE_OF(PL_TYPE_INT, 8)
#define PL_DTYPE_I32 PL_DTYPE_OF(PL_TYPE_INT, 32)
#define PL_DTYPE_I64 PL_DTYPE_OF(PL_TYPE_INT, 64)
#define PL_DTYPE_BOOL PL_DTYPE_OF(PL_TYPE_BOOL, 8)
/* ... and the four integer dtypes of ABI 1.11 (16-bit quantized models,
 * ONNX's integer arithmetic tests). The core offers a node with one of
 * them only to a module built against ABI 1.11 or later, whose
 * pl_dtype_size knows them; such a module refuses what it cannot do. */
#define PL_DTYPE_I16 PL_DTYPE_OF(PL_TYPE_INT, 16)
#define PL_DTYPE_U16 PL_DTYPE_OF(PL_TYPE_UINT, 16)
#define PL_DTYPE_U32 PL_DTYPE_OF(PL_TYPE_UINT, 32)
#define PL_DTYPE_U64 PL_DTYPE_OF(PL_TYPE_UINT, 64)
/* ... and strings, ABI 1.13: elements are `const char *` (see
 * PL_TYPE_STRING). */
#define PL_DTYPE_STRING PL_DTYPE_OF(PL_TYPE_STRING, 8 * sizeof(const char *))

/* True when two dtypes are the same. */
#define PL_DTYPE_EQ(a, b) \
    ((a).code == (b).code && (a).bits == (b).bits && (a).lanes == (b).lanes)

/* The compressed-sparse-row part of a sparse 2-D tensor. The tensor's data
 * holds the nnz values; row_ptr has shape[0] + 1 entries and col_idx nnz
 * entries, both of index_bits (32 or 64) bits, on the tensor's device. */
typedef struct pl_csr {
    uint32_t struct_size;
    uint32_t index_bits;
    int64_t nnz;
    void *row_ptr;
    void *col_idx;
} pl_csr;

/* A tensor: borrowed memory plus its description; it owns nothing.
 *
 * The first seven fields are DLTensor's. strides may be NULL (compact,
 * row-major). struct_size covers the Plinth fields that follow the DLPack
 * prefix: a reader uses layout and csr only when struct_size says they are
 * there (PL_TENSOR_HAS). */
typedef struct pl_tensor {
    void *data;
    pl_device device;
    int32_t ndim;
    pl_dtype dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
    /* Plinth extension, ABI 1.0. */
    uint32_t struct_size;
    uint32_t flags;      /* reserved, 0 */
    /* NULL or "" means plain row-major. Otherwise a layout name: "NCHW",
     * "NHWC", … or a module's opaque format, spelled "<module>:<format>",
     * which only that module interprets. */
    const char *layout;
    const pl_csr *csr;   /* NULL for dense tensors */
} pl_tensor;

/* True when the pl_tensor pointed to by T carries FIELD. */
#define PL_TENSOR_HAS(T, FIELD)                                       \
    ((T) != NULL && (size_t)(T)->struct_size >=                       \
                        offsetof(pl_tensor, FIELD) + sizeof((T)->FIELD))

/* Bytes per element of a dtype, 0 for a dtype this SDK does not know. */
static inline size_t pl_dtype_size(pl_dtype dt)
{
    if (dt.lanes != 1)
        return 0;
    switch (dt.code) {
    case PL_TYPE_FLOAT:
        return (dt.bits == 16 || dt.bits == 32 || dt.bits == 64) ? dt.bits / 8u : 0;
    case PL_TYPE_BFLOAT:
        return dt.bits == 16 ? 2 : 0;
    case PL_TYPE_INT:
    case PL_TYPE_UINT:
        return (dt.bits == 8 || dt.bits == 16 || dt.bits == 32 || dt.bits == 64) ? dt.bits / 8u
                                                                                   : 0;
    case PL_TYPE_BOOL:
        return dt.bits == 8 ? 1 : 0;
    case PL_TYPE_STRING:
        return dt.bits == 8 * sizeof(const char *) ? sizeof(const char *) : 0;
    default:
        return 0;
    }
}

#ifdef __cplusplus
}
#endif

#endif /* PLINTH_TENSOR_H */
