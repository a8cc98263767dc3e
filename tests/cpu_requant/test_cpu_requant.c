/* test_cpu_requant.c — the cpu module's requantization (requant.c): the
 * vector loop this CPU picks (cpu_requant_i32, cpu_quantize_f32) against
 * the portable loops (rq_requant_c, rq_quantize_c), byte for byte, on
 * lengths 0 .. 70 (every tail of every vector width) and on values that
 * decide rounding and saturation: halves (round to even), the 8-bit ends,
 * sums that wrap with the bias, ±2^22 and past, infinities and NaN in the
 * multiplier, scale and input. Bytes past N must stay untouched. Group
 * split2: the 8-bit kernels' byte split (bytes.h, cpu_bytes_split2_bytes)
 * against the definition, every length 0 .. 100 at every source offset
 * 0 .. 3, nothing written past either half. Usage: test_cpu_requant
 * <group>. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "requant.c"

static int tr_failures;
static uint64_t tr_seed = 0x2545f4914f6cdd1dull;

static uint32_t tr_random(void)
{
    tr_seed = tr_seed * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(tr_seed >> 33);
}

#define TR_MAX 70
#define TR_GUARD 0xa5

static void tr_compare(const char *what, size_t n, bool y_signed, const uint8_t *got,
                       const uint8_t *want, int round)
{
    for (size_t j = 0; j < n + 8; j++)
        if (got[j] != want[j]) {
            if (tr_failures++ < 10)
                fprintf(stderr, "%s round %d n %zu %s: byte %zu is %u, the portable loop's %u\n",
                        what, round, n, y_signed ? "i8" : "u8", j, got[j], want[j]);
            return;
        }
}

/* A multiplier or scale: mostly ordinary, sometimes an edge. */
static float tr_scale(uint32_t r)
{
    switch (r % 16) {
    case 0: return INFINITY;
    case 1: return -INFINITY;
    case 2: return NAN;
    case 3: return 0.0f;
    case 4: return 1.0f;
    case 5: return 0.5f;
    case 6: return 1e-30f;
    default: return (float)(r >> 8) / (float)(1u << 20) * ((r & 16) ? 1.0f : 0.01f);
    }
}

static void tr_requant(void)
{
    int32_t a[TR_MAX];
    uint8_t got[TR_MAX + 8], want[TR_MAX + 8];
    for (int round = 0; round < 4000; round++) {
        size_t n = (size_t)round % (TR_MAX + 1);
        bool y_signed = (round / (TR_MAX + 1)) & 1;
        for (size_t j = 0; j < n; j++) {
            uint32_t r = tr_random();
            switch (r % 8) {
            case 0: a[j] = (int32_t)tr_random(); break;              /* anything: wraps */
            case 1: a[j] = (r & 8) ? INT32_MAX : INT32_MIN; break;
            case 2: a[j] = (int32_t)(tr_random() % 1024) - 512; break;
            case 3: a[j] = ((r & 8) ? 1 : -1) * (4194304 + (int32_t)(r >> 20)); break;
            default: a[j] = (int32_t)(tr_random() % 200000) - 100000; break;
            }
        }
        uint32_t br = tr_random();
        uint32_t b = br % 4 == 0 ? tr_random() : br % 4 == 1 ? 0u : (uint32_t)(int32_t)((int)(br >> 8) % 4096 - 2048);
        /* halves: a multiplier 0.5 or 0.25 puts many products on .5 */
        float m = round % 5 == 0 ? 0.5f : round % 5 == 1 ? 0.25f : tr_scale(tr_random());
        float yz = (float)(tr_random() % 256) - (y_signed ? 128.0f : 0.0f);
        memset(got, TR_GUARD, sizeof got);
        memset(want, TR_GUARD, sizeof want);
        cpu_requant_i32(a, n, b, m, yz, y_signed, got);
        rq_requant_c(a, n, b, m, yz, y_signed, want);
        tr_compare("requant", n, y_signed, got, want, round);
    }
}

static void tr_quantize(void)
{
    float x[TR_MAX];
    uint8_t got[TR_MAX + 8], want[TR_MAX + 8];
    for (int round = 0; round < 4000; round++) {
        size_t n = (size_t)round % (TR_MAX + 1);
        bool y_signed = (round / (TR_MAX + 1)) & 1;
        float s = round % 3 == 0 ? 0.5f : tr_scale(tr_random());
        for (size_t j = 0; j < n; j++) {
            uint32_t r = tr_random();
            switch (r % 8) {
            case 0: x[j] = tr_scale(tr_random()); break;
            case 1: x[j] = (float)((int)(r >> 8) % 600 - 300) * 0.5f; break; /* halves */
            case 2: x[j] = (r & 8) ? 1e30f : -1e30f; break;
            default: x[j] = ((float)(r >> 8) / (float)(1u << 24) - 0.5f) * 600.0f; break;
            }
        }
        float zf = (float)(tr_random() % 256) - (y_signed ? 128.0f : 0.0f);
        memset(got, TR_GUARD, sizeof got);
        memset(want, TR_GUARD, sizeof want);
        cpu_quantize_f32(x, n, s, zf, y_signed, got);
        rq_quantize_c(x, n, s, zf, y_signed, want);
        tr_compare("quantize", n, y_signed, got, want, round);
    }
}

static void tr_split2(void)
{
    enum { N = 100, G = 16 };
    uint8_t src[N + 4], even[G + N / 2 + 1 + G], odd[G + N / 2 + G];
    for (size_t j = 0; j < sizeof src; j++)
        src[j] = (uint8_t)tr_random();
    for (int64_t n = 0; n <= N; n++)
        for (int off = 0; off < 4; off++) {
            memset(even, TR_GUARD, sizeof even);
            memset(odd, TR_GUARD, sizeof odd);
            cpu_bytes_split2_bytes(even + G, odd + G, src + off, n);
            for (int64_t i = -G; i < (n + 1) / 2 + G; i++) {
                uint8_t want = i >= 0 && i < (n + 1) / 2 ? src[off + 2 * i] : TR_GUARD;
                if (even[G + i] != want && tr_failures++ < 10)
                    fprintf(stderr, "split2 n %lld offset %d: even[%lld] is %u, not %u\n",
                            (long long)n, off, (long long)i, even[G + i], want);
            }
            for (int64_t i = -G; i < n / 2 + G; i++) {
                uint8_t want = i >= 0 && i < n / 2 ? src[off + 2 * i + 1] : TR_GUARD;
                if (odd[G + i] != want && tr_failures++ < 10)
                    fprintf(stderr, "split2 n %lld offset %d: odd[%lld] is %u, not %u\n",
                            (long long)n, off, (long long)i, odd[G + i], want);
            }
        }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s <group>\n", argv[0]);
        return 2;
    }
    const char *g = argv[1];
    printf("vector loop: %s\n", cpu_has_isa(CPU_ISA_AVX512_BW) ? "avx512"
                                : cpu_has_isa(CPU_ISA_AVX2_FMA) ? "avx2"
                                                                 : "portable");
    if (strcmp(g, "requant") == 0)
        tr_requant();
    else if (strcmp(g, "quantize") == 0)
        tr_quantize();
    else if (strcmp(g, "split2") == 0)
        tr_split2();
    else {
        fprintf(stderr, "unknown group '%s'\n", g);
        return 2;
    }
    if (tr_failures > 0) {
        fprintf(stderr, "%s: %d failures\n", g, tr_failures);
        return 1;
    }
    printf("%s: ok\n", g);
    return 0;
}
