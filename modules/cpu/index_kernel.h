/* index_kernel.h — what the cpu module's index family and its neighbours
 * share (index.c, topk.c, einsum.c, det.c, loss.c, quant*.c, signal.c,
 * normalize.c, sample.c): the builders its op tables name and small
 * helpers to read index tensors and elements of any dtype. The kernels are
 * shape-family kernels (shape_kernel.h): shp_run checks each run's outputs
 * and handles the add-to request for every dtype. Internal to the module. */
#ifndef PL_CPU_INDEX_KERNEL_H
#define PL_CPU_INDEX_KERNEL_H

#include <string.h>

#include "shape_kernel.h"

/* F32 value V as an unsigned key in its order: -0 as +0, NaN above
 * everything (NumPy's order). */
static inline uint32_t ix_f32_order(float v)
{
    uint32_t b;
    if (v == 0.0f)
        v = 0.0f;
    memcpy(&b, &v, sizeof b);
    return v != v ? UINT32_MAX : (b & 0x80000000u) ? ~b : b | 0x80000000u;
}

/* Sorts N keys in descending order (a radix sort, stable; TMP holds N,
 * topk.c). */
void ix_sort_u64_desc(uint64_t *keys, size_t n, uint64_t *tmp);

/* Element I of an i64 (IDX64) or i32 index tensor at P. */
static inline int64_t ix_index_at(const char *p, bool idx64, size_t i)
{
    if (idx64) {
        int64_t v;
        memcpy(&v, p + i * 8, 8);
        return v;
    }
    int32_t v;
    memcpy(&v, p + i * 4, 4);
    return v;
}

/* Element I of a tensor of DT at P, as double (through shp_convert; f32
 * directly: the STFT's frames read every sample so, and the converter's
 * dispatch was a third of Nemo's mel front end). */
static inline double ix_load(pl_dtype dt, const char *p, size_t i)
{
    if (PL_DTYPE_EQ(dt, PL_DTYPE_F32)) {
        float f;
        memcpy(&f, p + i * 4, 4);
        return f;
    }
    double v;
    shp_convert(dt, p + i * pl_dtype_size(dt), PL_DTYPE_F64, &v, 1);
    return v;
}

/* Stores V as element I of a tensor of DT at P (f32 rounded to nearest, as
 * shp_convert does). */
static inline void ix_store(pl_dtype dt, char *p, size_t i, double v)
{
    if (PL_DTYPE_EQ(dt, PL_DTYPE_F32)) {
        float f = (float)v;
        memcpy(p + i * 4, &f, 4);
        return;
    }
    shp_convert(PL_DTYPE_F64, &v, dt, p + i * pl_dtype_size(dt), 1);
}

/* True for i64 (*out_64 true) or i32 (false); a refusal naming input I
 * of NODE otherwise. */
pl_status *ix_index_dtype(const pl_node_desc *node, size_t i, bool *out_64);

/* Reads and normalises the axis attribute (DEFAULT_AXIS when absent)
 * against rank R. */
pl_status *ix_axis(const pl_node_desc *node, int64_t default_axis, int r, int *out_axis);

/* Row-major element strides of DIMS (rank R) into ST. */
void ix_strides(const int64_t *dims, int r, int64_t *st);

/* The element offset of flat index T of a tensor of DIMS (rank R) in a
 * tensor walked with strides ST. */
static inline int64_t ix_offset(size_t t, int r, const int64_t *dims, const int64_t *st)
{
    int64_t off = 0;
    for (int d = r - 1; d >= 0; d--) {
        size_t dim = (size_t)dims[d];
        off += (int64_t)(t % dim) * st[d];
        t /= dim;
    }
    return off;
}

/* The builders. */
pl_status *ix_build_topk(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel);
pl_status *ix_build_hardmax(pl_module_ctx *ctx, const pl_node_desc *node,
                            pl_kernel **out_kernel);
pl_status *ix_build_einsum(pl_module_ctx *ctx, const pl_node_desc *node,
                           pl_kernel **out_kernel);
pl_status *ix_build_det(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel);
pl_status *qu_build_conv(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel);

#endif
