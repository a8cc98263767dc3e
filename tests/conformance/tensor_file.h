/* tensor_file.h — one serialized ONNX TensorProto (an input_N.pb or
 * output_N.pb of the ONNX backend tests) read into a dense host tensor.
 *
 * Single-threaded use: nothing here is shared between calls. */
#ifndef PLINTH_CONFORMANCE_TENSOR_FILE_H
#define PLINTH_CONFORMANCE_TENSOR_FILE_H

#include <stddef.h>
#include <stdint.h>

#include <plinth/plinth.h>

/* A dense, row-major host tensor that owns its memory. */
typedef struct cf_tensor {
    char *name;      /* the TensorProto's name, "" when it had none */
    pl_dtype dtype;
    int32_t ndim;
    int64_t *dims;   /* ndim entries (NULL when ndim is 0) */
    size_t count;    /* number of elements: the product of dims */
    void *data;      /* count * pl_dtype_size(dtype) bytes (never NULL) */
    char *strings;   /* a string tensor's strings, which data points at */
} cf_tensor;

/* Maps an ONNX TensorProto.DataType code to a Plinth dtype. Fails with
 * PL_CODE_UNSUPPORTED, naming the ONNX type, for the types Plinth has no
 * dtype for (complex, float8, ...). */
pl_status *cf_dtype_from_onnx(int32_t onnx_type, pl_dtype *out_dtype);

/* The ONNX name of a TensorProto.DataType code ("FLOAT", "INT64", …). */
const char *cf_onnx_type_name(int32_t onnx_type);

/* Reads PATH as a TensorProto into *OUT (cleared on entry, left empty on
 * failure). Both raw_data and the typed fields (float_data, int32_data,
 * int64_data, double_data, uint64_data) are understood. DECLARED is the
 * ONNX element type the model declares for this value (0 when unknown):
 * ONNX's test data stores bfloat16 values as UINT16 bit patterns (numpy has
 * no bfloat16), so a UINT16 file for a BFLOAT16 value is read as bf16.
 * Fails with PL_CODE_UNSUPPORTED for dtypes Plinth lacks and external
 * data, with PL_CODE_INVALID_ARGUMENT for a malformed file, PL_CODE_IO_ERROR
 * when it cannot be read. The caller frees *OUT with cf_tensor_free. */
pl_status *cf_tensor_read(const char *path, int32_t declared, cf_tensor *out);

/* Frees what T owns and clears it; an empty tensor is a no-op. */
void cf_tensor_free(cf_tensor *t);

/* A pl_tensor view of T for pl_session_run (borrows T's memory). */
pl_tensor cf_tensor_view(const cf_tensor *t);

/* Reads a whole file into memory (malloc'ed, *out_len bytes). */
pl_status *cf_file_read(const char *path, uint8_t **out_bytes, size_t *out_len);

/* "A/B", malloc'ed (NULL when out of memory). */
char *cf_join_path(const char *a, const char *b);

#endif /* PLINTH_CONFORMANCE_TENSOR_FILE_H */
