/* npy.h — NumPy .npy files for the CLI: read one into a host tensor, write
 * one from a host tensor. Format 1.0 and 2.0/3.0 headers, little-endian,
 * C order; dtypes f32 f64 f16 i8 u8 i32 i64 bool. */
#ifndef PLINTH_TOOLS_NPY_H
#define PLINTH_TOOLS_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "plinth/tensor.h"

/* A tensor read from a file; free with npy_free. */
typedef struct npy_array {
    pl_dtype dtype;
    int32_t ndim;
    int64_t dims[16];
    void *data;
    size_t bytes;
} npy_array;

/* Reads PATH. On failure returns -1 and writes a one-line reason (naming the
 * file) into ERR. */
int npy_read(const char *path, npy_array *out, char *err, size_t err_size);
/* Writes a tensor as .npy. Same error convention. */
int npy_write(const char *path, pl_dtype dtype, int32_t ndim, const int64_t *dims,
              const void *data, size_t bytes, char *err, size_t err_size);
void npy_free(npy_array *a);

#endif
