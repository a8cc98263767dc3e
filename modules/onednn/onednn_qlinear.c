/* onednn_qlinear.c — com.microsoft QLinearAdd and QLinearMul of two 8-bit
 * values of one shape and layout, in ONNX Runtime's arithmetic
 * (plinth/qlinear.h), as the module's own step (ODNN_S_QBIN): a QOperator
 * ResNet's residual additions no longer cut its subgraph into pieces.
 * Compiled with -ffp-contract=off (CMakeLists.txt), as the header asks. */
#include <omp.h>
#include <stdint.h>

#include <plinth/qlinear.h>

#include "onednn.h"

static void odnn_qbin_range(const pl_qlinear *p, const void *a, const void *b, void *c, int64_t lo,
                            int64_t hi)
{
    if (p->is_signed) {
        const int8_t *x = a, *y = b;
        int8_t *z = c;
        for (int64_t i = lo; i < hi; i++)
            z[i] = (int8_t)(int32_t)pl_qlinear_value(p, x[i], y[i]);
    } else {
        const uint8_t *x = a, *y = b;
        uint8_t *z = c;
        for (int64_t i = lo; i < hi; i++)
            z[i] = (uint8_t)(int32_t)pl_qlinear_value(p, x[i], y[i]);
    }
}

void odnn_qbin_run(const pl_qlinear *p, const void *a, const void *b, void *c, int64_t n,
                   int threads)
{
    int team = n >= 65536 && threads > 1 ? threads : 1;
#pragma omp parallel num_threads(team) if (team > 1)
    {
        int t = omp_get_thread_num(), k = omp_get_num_threads();
        odnn_qbin_range(p, a, b, c, n * t / k, n * (t + 1) / k);
    }
}
