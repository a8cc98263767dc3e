/* math_wide.h — what the cpu math family's widening kernels share
 * (math_functions.c, math_nary.c, math_axis.c): their own dtype enum, and
 * loads and stores of one element of any of those dtypes widened to double
 * or int64, which lets one loop serve every dtype where speed matters less
 * than coverage. Every kernel of those files checks its own run's arguments
 * (run_any), because most take several dtypes. Internal to the module. */
#ifndef PL_CPU_MATH_WIDE_H
#define PL_CPU_MATH_WIDE_H

#include <string.h>

#include "math_internal.h"

/* The dtypes these kernels compute in. Unlike math_type, the order is
 * meaningful (wide_is_int) and the kernels index tables by it. */
typedef enum wide_type {
    WT_F32, WT_F64, WT_I64, WT_I32, WT_I8, WT_U8, WT_BOOL, WT_OTHER
} wide_type;

static inline wide_type wide_type_of(pl_dtype dt)
{
    if (PL_DTYPE_EQ(dt, PL_DTYPE_F64))
        return WT_F64;
    switch (math_type_of(dt)) {
    case MATH_F32: return WT_F32;
    case MATH_I64: return WT_I64;
    case MATH_I32: return WT_I32;
    case MATH_I8: return WT_I8;
    case MATH_U8: return WT_U8;
    case MATH_BOOL: return WT_BOOL;
    default: return WT_OTHER;
    }
}

static inline bool wide_is_float(wide_type t) { return t == WT_F32 || t == WT_F64; }
static inline bool wide_is_int(wide_type t) { return t >= WT_I64 && t <= WT_U8; }

/* Element I of X of type T, as double or as int64. */
static inline double wide_load_f(const void *x, wide_type t, size_t i)
{
    switch (t) {
    case WT_F32: return ((const float *)x)[i];
    case WT_F64: return ((const double *)x)[i];
    case WT_I64: return (double)((const int64_t *)x)[i];
    case WT_I32: return ((const int32_t *)x)[i];
    case WT_I8: return ((const int8_t *)x)[i];
    default: return ((const uint8_t *)x)[i];
    }
}

static inline int64_t wide_load_i(const void *x, wide_type t, size_t i)
{
    switch (t) {
    case WT_I64: return ((const int64_t *)x)[i];
    case WT_I32: return ((const int32_t *)x)[i];
    case WT_I8: return ((const int8_t *)x)[i];
    default: return ((const uint8_t *)x)[i];
    }
}

/* Stores V (ADD: adds it) at element I of Y of type T; integers wrap. */
static inline void wide_store_f(void *y, wide_type t, size_t i, double v, int add)
{
    if (t == WT_F32)
        ((float *)y)[i] = add ? ((float *)y)[i] + (float)v : (float)v;
    else
        ((double *)y)[i] = add ? ((double *)y)[i] + v : v;
}

static inline void wide_store_i(void *y, wide_type t, size_t i, int64_t v, int add)
{
    switch (t) {
    case WT_I64:
        ((int64_t *)y)[i] = add ? (int64_t)((uint64_t)((int64_t *)y)[i] + (uint64_t)v) : v;
        break;
    case WT_I32:
        ((int32_t *)y)[i] =
            (int32_t)(uint32_t)((add ? (uint64_t)((int32_t *)y)[i] : 0) + (uint64_t)v);
        break;
    case WT_I8:
        ((int8_t *)y)[i] = (int8_t)(uint8_t)((add ? (uint64_t)((int8_t *)y)[i] : 0) + (uint64_t)v);
        break;
    default:
        ((uint8_t *)y)[i] = (uint8_t)((add ? (uint64_t)((uint8_t *)y)[i] : 0) + (uint64_t)v);
        break;
    }
}

/* Index of NAME in NAMES (N of them), or -1. */
static inline int wide_find(const char *const *names, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (names[i] != NULL && strcmp(names[i], name) == 0)
            return (int)i;
    return -1;
}

#define WIDE_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The output of a run_any kernel with one output: checks it, and says
 * whether there is anything to do (*out NULL: nothing). */
static inline pl_status *wide_output(const pl_kernel *k, const pl_run_args *args, bool allow_add,
                              void **out, int *add)
{
    pl_output_request req;
    pl_status *st = math_run_output(k, args, 0, k->out_elements, allow_add, out, &req);
    *add = req == PL_REQ_ADD_TO;
    return st;
}

#endif
