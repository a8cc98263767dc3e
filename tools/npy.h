/* npy.h — NumPy .npy files for the CLI: read one into a host tensor, write
 * one from a host tensor. Format 1.0 and 2.0/3.0 headers, little-endian,
 * C order; all nine dtypes of the runtime: f32 <f4, f64 <f8, f16 <f2,
 * i8 |i1, u8 |u1, i32 <i4, i64 <i8, bool |b1, and bf16, which NumPy lacks:
 * written as <f4 (every bf16 value is a float32, so nothing is lost), and
 * read from <u2 holding bf16 bit patterns (what `torch.view(torch.int16)`
 * or ml_dtypes give). A <f4 file for a bf16 input is the caller's to
 * convert (npy_to_bf16). */
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

/* Reads PATH into *OUT (a <u2 file as bf16). On failure returns -1, leaves
 * nothing to free and writes a one-line reason (naming the file) into ERR. */
int npy_read(const char *path, npy_array *out, char *err, size_t err_size);
/* Turns an f32 array into bf16 in place, rounding to nearest even. Returns
 * -1 when A is not f32. */
int npy_to_bf16(npy_array *a);
/* Writes a tensor of any runtime dtype as .npy (bf16 as <f4). Same error
 * convention. */
int npy_write(const char *path, pl_dtype dtype, int32_t ndim, const int64_t *dims,
              const void *data, size_t bytes, char *err, size_t err_size);
/* Frees what npy_read allocated; A may be NULL or already freed. */
void npy_free(npy_array *a);

#endif
