/* onednn_qlinear.c — com.microsoft QLinearAdd and QLinearMul of two 8-bit
 * values of one shape and layout, in ONNX Runtime's arithmetic
 * (plinth/qlinear.h), as the module's own step (ODNN_S_QBIN): a QOperator
 * ResNet's residual additions no longer cut its subgraph into pieces.
 * Compiled with -ffp-contract=off (CMakeLists.txt), as the header asks; the
 * loops run in an AVX2+FMA clone where the CPU has it (fmaf in hardware,
 * vectorised; elsewhere fmaf is libm's exact, slow software one). */
#include <omp.h>
#include <stdint.h>

#include <plinth/qlinear.h>

#include "onednn.h"

#define ODNN_QBIN_LOOPS(T)                                                                      \
    {                                                                                           \
        const T *restrict x = a, *restrict y = b;                                               \
        T *restrict z = c;                                                                      \
        const float lo = p->lo, hi = p->hi;                                                     \
        if (p->mul) {                                                                           \
            const int32_t za = p->za, zb = p->zb;                                               \
            const float ratio = p->ratio, zc = p->zc;                                           \
            for (int64_t i = first; i < last; i++)                                              \
                z[i] = (T)(int32_t)pl_qlinear_round_sat(                                        \
                    (float)(((int32_t)x[i] - za) * ((int32_t)y[i] - zb)) * ratio + zc, lo, hi); \
        } else {                                                                                \
            const float ra = p->ra, rb = p->rb, fixed = p->fixed;                               \
            for (int64_t i = first; i < last; i++)                                              \
                z[i] = (T)(int32_t)pl_qlinear_round_sat(                                        \
                    fmaf((float)x[i], ra, fmaf((float)y[i], rb, fixed)), lo, hi);               \
        }                                                                                       \
    }

#define ODNN_QBIN_BODY                                                                          \
    if (p->is_signed)                                                                           \
        ODNN_QBIN_LOOPS(int8_t)                                                                 \
    else                                                                                        \
        ODNN_QBIN_LOOPS(uint8_t)

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,fma"))) static void odnn_qbin_fma(const pl_qlinear *p, const void *a,
                                                              const void *b, void *c,
                                                              int64_t first, int64_t last)
{
    ODNN_QBIN_BODY
}
#endif

static void odnn_qbin_plain(const pl_qlinear *p, const void *a, const void *b, void *c,
                            int64_t first, int64_t last)
{
    ODNN_QBIN_BODY
}

static void odnn_qbin_range(const pl_qlinear *p, const void *a, const void *b, void *c,
                            int64_t first, int64_t last)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        odnn_qbin_fma(p, a, b, c, first, last);
        return;
    }
#endif
    odnn_qbin_plain(p, a, b, c, first, last);
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
