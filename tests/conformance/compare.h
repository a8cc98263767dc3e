/* compare.h — compares an output of a run with the expected tensor of an
 * ONNX backend test, the way the ONNX backend test runner does
 * (numpy.testing.assert_allclose for numbers, equality otherwise). */
#ifndef PLINTH_CONFORMANCE_COMPARE_H
#define PLINTH_CONFORMANCE_COMPARE_H

#include <plinth/plinth.h>

#include "tensor_file.h"

/* The tolerances of the ONNX backend tests when a test names none. */
#define CF_DEFAULT_RTOL 1e-3
#define CF_DEFAULT_ATOL 1e-7

/* Compares ACTUAL, output NAME of a run, with EXPECTED. dtype and shape must
 * be equal. Floating-point elements (f32, f64, f16, bf16) match when
 * |actual - expected| <= atol + rtol * |expected|, a NaN matches a NaN and
 * an infinity the same infinity; integer and bool elements must be equal.
 * Returns NULL on a match; otherwise a status whose message names the
 * output, the first mismatching element (flat index and coordinates), the
 * actual and expected values, and how many elements differ. */
pl_status *cf_compare(const char *name, const pl_tensor *actual,
                      const cf_tensor *expected, double rtol, double atol);

/* For a model with a random op (Bernoulli, RandomNormal...: its expected
 * outputs are one draw of NumPy's generator, which no other generator
 * repeats): dtype and shape must be equal, and each value must be finite
 * and, where every expected value is 0 or 1 (Bernoulli's), 0 or 1. */
pl_status *cf_compare_random(const char *name, const pl_tensor *actual,
                             const cf_tensor *expected);

/* A short name of a dtype: "f32", "i64", "bool", … */
const char *cf_dtype_name(pl_dtype dt);

#endif /* PLINTH_CONFORMANCE_COMPARE_H */
