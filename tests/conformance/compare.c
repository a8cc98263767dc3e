/* compare.c — output comparison with ONNX's tolerances.
 *
 * The ONNX backend runner checks every output with
 * numpy.testing.assert_allclose(actual, expected, rtol, atol) after
 * asserting that the dtypes are equal; this file does the same on host
 * tensors, so a result here means what it means in ONNX's own runner. As
 * there (onnx 1.21), a bfloat16 output's rtol is at least 2^-6, two of its
 * ULPs: a backend that computes in f32 and rounds once differs from the
 * reference's rounding after every step by that much. */
#include "compare.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

const char *cf_dtype_name(pl_dtype dt)
{
    if (PL_DTYPE_EQ(dt, PL_DTYPE_F32)) return "f32";
    if (PL_DTYPE_EQ(dt, PL_DTYPE_F64)) return "f64";
    if (PL_DTYPE_EQ(dt, PL_DTYPE_F16)) return "f16";
    if (PL_DTYPE_EQ(dt, PL_DTYPE_BF16)) return "bf16";
    if (PL_DTYPE_EQ(dt, PL_DTYPE_U8)) return "u8";
    if (PL_DTYPE_EQ(dt, PL_DTYPE_I8)) return "i8";
    if (PL_DTYPE_EQ(dt, PL_DTYPE_I32)) return "i32";
    if (PL_DTYPE_EQ(dt, PL_DTYPE_I64)) return "i64";
    if (PL_DTYPE_EQ(dt, PL_DTYPE_BOOL)) return "bool";
    if (PL_DTYPE_EQ(dt, PL_DTYPE_I16)) return "i16";
    if (PL_DTYPE_EQ(dt, PL_DTYPE_U16)) return "u16";
    if (PL_DTYPE_EQ(dt, PL_DTYPE_U32)) return "u32";
    if (PL_DTYPE_EQ(dt, PL_DTYPE_U64)) return "u64";
    if (PL_DTYPE_EQ(dt, PL_DTYPE_STRING)) return "string";
    return "?";
}

/* IEEE half to double (subnormals, infinities and NaN included). */
static double cf_half_to_double(uint16_t h)
{
    int exp = (h >> 10) & 0x1f;
    int mant = h & 0x3ff;
    double v;
    if (exp == 0)
        v = ldexp((double)mant, -24);
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexp((double)(mant | 0x400), exp - 25);
    return (h & 0x8000) ? -v : v;
}

static bool cf_is_float(pl_dtype dt)
{
    return dt.code == PL_TYPE_FLOAT || dt.code == PL_TYPE_BFLOAT;
}

/* Element I of a floating-point buffer, as a double. */
static double cf_float_at(const void *data, pl_dtype dt, size_t i)
{
    if (dt.code == PL_TYPE_BFLOAT) {
        uint32_t bits = (uint32_t)((const uint16_t *)data)[i] << 16;
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    switch (dt.bits) {
    case 16: return cf_half_to_double(((const uint16_t *)data)[i]);
    case 32: return ((const float *)data)[i];
    default: return ((const double *)data)[i];
    }
}

/* Element I of an integer or bool buffer, as an int64. */
static int64_t cf_int_at(const void *data, pl_dtype dt, size_t i)
{
    if (dt.code == PL_TYPE_UINT || dt.code == PL_TYPE_BOOL)
        switch (dt.bits) {
        case 8: return ((const uint8_t *)data)[i];
        case 16: return ((const uint16_t *)data)[i];
        case 32: return ((const uint32_t *)data)[i];
        default: return (int64_t)((const uint64_t *)data)[i]; /* the same bits */
        }
    switch (dt.bits) {
    case 8: return ((const int8_t *)data)[i];
    case 16: return ((const int16_t *)data)[i];
    case 32: return ((const int32_t *)data)[i];
    default: return ((const int64_t *)data)[i];
    }
}

static bool cf_close(double a, double e, double rtol, double atol)
{
    if (isnan(a) || isnan(e))
        return isnan(a) && isnan(e);
    if (isinf(a) || isinf(e))
        return a == e;
    return fabs(a - e) <= atol + rtol * fabs(e);
}

/* Writes SHAPE as "[2, 3]" into BUF. */
static const char *cf_shape_str(int32_t ndim, const int64_t *dims, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int32_t d = 0; d < ndim && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%" PRId64, d ? ", " : "", dims[d]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
    return buf;
}

/* The coordinates of flat index I in a row-major tensor, as "(0, 1, 2)". */
static const char *cf_coords_str(size_t i, int32_t ndim, const int64_t *dims, char *buf,
                                 size_t cap)
{
    int64_t idx[64];
    for (int32_t d = ndim - 1; d >= 0; d--) {
        idx[d] = dims[d] ? (int64_t)(i % (size_t)dims[d]) : 0;
        i = dims[d] ? i / (size_t)dims[d] : 0;
    }
    size_t n = (size_t)snprintf(buf, cap, "(");
    for (int32_t d = 0; d < ndim && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%" PRId64, d ? ", " : "", idx[d]);
    if (n < cap)
        snprintf(buf + n, cap - n, ")");
    return buf;
}

/* The dtype and shape checks of both comparisons. */
static pl_status *cf_same_type(const char *name, const pl_tensor *actual,
                               const cf_tensor *expected)
{
    char sa[256], se[256];
    if (!PL_DTYPE_EQ(actual->dtype, expected->dtype))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "output '%s': dtype %s, expected %s", name,
                                cf_dtype_name(actual->dtype), cf_dtype_name(expected->dtype));
    bool same = actual->ndim == expected->ndim && actual->ndim <= 64;
    for (int32_t d = 0; same && d < actual->ndim; d++)
        same = actual->shape[d] == expected->dims[d];
    if (!same)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "output '%s': shape %s, expected %s",
                                name, cf_shape_str(actual->ndim, actual->shape, sa, sizeof sa),
                                cf_shape_str(expected->ndim, expected->dims, se, sizeof se));
    if (actual->data == NULL && expected->count > 0)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "output '%s': the run gave no data",
                                name);
    return NULL;
}

pl_status *cf_compare_random(const char *name, const pl_tensor *actual,
                             const cf_tensor *expected)
{
    pl_status *st = cf_same_type(name, actual, expected);
    if (st != NULL)
        return st;
    const uint8_t *adata = (const uint8_t *)actual->data + actual->byte_offset;
    bool is_float = cf_is_float(actual->dtype), binary = true;
    for (size_t i = 0; i < expected->count && binary; i++) {
        double e = is_float ? cf_float_at(expected->data, expected->dtype, i)
                            : (double)cf_int_at(expected->data, expected->dtype, i);
        binary = e == 0.0 || e == 1.0;
    }
    for (size_t i = 0; i < expected->count; i++) {
        double a = is_float ? cf_float_at(adata, actual->dtype, i)
                            : (double)cf_int_at(adata, actual->dtype, i);
        if (!isfinite(a) || (binary && a != 0.0 && a != 1.0))
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "output '%s' (random): element %zu is %g, not %s", name, i,
                                    a, binary ? "0 or 1" : "a finite number");
    }
    return NULL;
}

pl_status *cf_compare(const char *name, const pl_tensor *actual, const cf_tensor *expected,
                      double rtol, double atol)
{
    pl_status *st = cf_same_type(name, actual, expected);
    if (st != NULL)
        return st;
    if (PL_DTYPE_EQ(actual->dtype, PL_DTYPE_BF16) && rtol < 0.015625)
        rtol = 0.015625;
    const uint8_t *adata = (const uint8_t *)actual->data + actual->byte_offset;
    if (PL_DTYPE_EQ(actual->dtype, PL_DTYPE_STRING)) {
        const char *const *as = (const char *const *)(const void *)adata;
        const char *const *es = expected->data;
        for (size_t i = 0; i < expected->count; i++)
            if (strcmp(as[i], es[i]) != 0)
                return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                        "output '%s': element %zu is \"%s\", expected \"%s\"",
                                        name, i, as[i], es[i]);
        return NULL;
    }
    size_t bad = 0, first = 0;
    double worst = 0;
    bool is_float = cf_is_float(actual->dtype);
    for (size_t i = 0; i < expected->count; i++) {
        bool ok;
        if (is_float) {
            double a = cf_float_at(adata, actual->dtype, i);
            double e = cf_float_at(expected->data, expected->dtype, i);
            ok = cf_close(a, e, rtol, atol);
            if (!ok && isfinite(a) && isfinite(e) && fabs(a - e) > worst)
                worst = fabs(a - e);
        } else {
            ok = cf_int_at(adata, actual->dtype, i) == cf_int_at(expected->data, expected->dtype, i);
        }
        if (!ok && bad++ == 0)
            first = i;
    }
    if (bad == 0)
        return NULL;
    char sa[256];
    cf_coords_str(first, expected->ndim, expected->dims, sa, sizeof sa);
    if (is_float)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "output '%s': %zu of %zu elements differ (rtol %g, atol %g, "
                                "largest absolute difference %.9g); first at index %zu %s: "
                                "actual %.9g, expected %.9g",
                                name, bad, expected->count, rtol, atol, worst, first, sa,
                                cf_float_at(adata, actual->dtype, first),
                                cf_float_at(expected->data, expected->dtype, first));
    return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                            "output '%s': %zu of %zu elements differ; first at index %zu %s: "
                            "actual %" PRId64 ", expected %" PRId64,
                            name, bad, expected->count, first, sa,
                            cf_int_at(adata, actual->dtype, first),
                            cf_int_at(expected->data, expected->dtype, first));
}
