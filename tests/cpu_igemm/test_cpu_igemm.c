/* test_cpu_igemm.c — the cpu module's integer GEMM (modules/cpu/igemm.c)
 * against a naive loop: sum_k (A - za) * (B - zb) in int64, wrapped to i32.
 * Every result must be identical. Sizes from 0 to past the micro-kernel's
 * panels and the column block, every mix of u8 / i8 operands, transposed
 * or not, zero points none / one / per row of A / per column of B, a
 * packed A cut into row blocks as callers cut it, and sums that wrap.
 * Columns past N of C must stay untouched. Usage: test_cpu_igemm <group>. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "igemm.h"

static int ti_failures;
static uint64_t ti_seed = 0x9e3779b97f4a7c15ull;

static uint32_t ti_random(void)
{
    ti_seed = ti_seed * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(ti_seed >> 33);
}

static void *ti_alloc(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    if (p == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

typedef struct ti_case {
    int64_t m, n, k;
    bool a_signed, b_signed, ta, tb;
    int zp;           /* 0 none; 1 one each; 2 per row of A and column of B */
    int64_t blocks;   /* row blocks of the packed A, cut at multiples of MR */
    int extreme;      /* values at the ends of their range (sums that wrap) */
    bool tight;       /* C's leading dimension N (else N + 5) */
    bool row_off;     /* B (not transposed) through row offsets, K of them in a
                       * block of their own (an implicit im2col's): a read past
                       * them is the sanitizers' to catch */
} ti_case;

#define TI_GUARD 0x5a5a5a5a

static int32_t ti_q8(const void *p, bool s, int64_t i)
{
    return s ? ((const int8_t *)p)[i] : ((const uint8_t *)p)[i];
}

static void ti_fill(uint8_t *p, size_t n, bool is_signed, int extreme)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t r = ti_random();
        if (extreme)
            p[i] = is_signed ? (uint8_t)(r & 1 ? 0x80 : 0x7f) : (uint8_t)(r & 1 ? 0 : 255);
        else
            p[i] = (uint8_t)r;
    }
}

/* The reference, once per case: S[i * n + j] = sum_k (A[i][k] - za_i) *
 * B[k][j] and R[i] = sum_k (A[i][k] - za_i), in int64, so that every check
 * below takes its want as S - zb_j * R, whatever zero point of B it uses.
 * A and B are first widened into rows of K (B transposed): the loop over
 * K reads both contiguously (it read B a row apart per value, and the
 * large group took 11-19 s under ASan). */
static void ti_reference(const ti_case *t, const uint8_t *a, int64_t lda, const uint8_t *b,
                         int64_t ldb, const int32_t *za, int64_t *s_out, int64_t *r_out)
{
    const int64_t m = t->m, n = t->n, k = t->k;
    int32_t *ar = ti_alloc(sizeof(int32_t) * (size_t)(k + 1));
    int32_t *bt = ti_alloc(sizeof(int32_t) * (size_t)(n * k + 1));
    for (int64_t j = 0; j < n; j++)
        for (int64_t q = 0; q < k; q++)
            bt[j * k + q] = ti_q8(b, t->b_signed, t->tb ? j * ldb + q : q * ldb + j);
    for (int64_t i = 0; i < m; i++) {
        int64_t zai = t->zp ? za[t->zp == 2 ? i : 0] : 0, r = 0;
        for (int64_t q = 0; q < k; q++) {
            ar[q] = ti_q8(a, t->a_signed, t->ta ? q * lda + i : i * lda + q) - (int32_t)zai;
            r += ar[q];
        }
        r_out[i] = r;
        for (int64_t j = 0; j < n; j++) {
            const int32_t *bj = bt + j * k;
            int64_t sum = 0;
            for (int64_t q = 0; q < k; q++)
                sum += (int64_t)ar[q] * bj[q];
            s_out[i * n + j] = sum;
        }
    }
    free(ar);
    free(bt);
}

/* The reference's C[i][j] with B's zero point ZBJ, wrapped to i32. */
static int32_t ti_want(const int64_t *s, const int64_t *r, int64_t n, int64_t i, int64_t j,
                       int64_t zbj)
{
    return (int32_t)(uint32_t)(uint64_t)(s[i * n + j] - zbj * r[i]);
}

static void ti_run(const ti_case *t)
{
    const int64_t m = t->m, n = t->n, k = t->k;
    const int64_t lda = (t->ta ? m : k) + 3, ldb = (t->tb ? k : n) + 2,
                  ldc = t->tight ? n : n + 5;
    const int64_t a_rows = t->ta ? k : m, b_rows = t->tb ? n : k;
    uint8_t *a = ti_alloc((size_t)(a_rows * lda + 1)), *b = ti_alloc((size_t)(b_rows * ldb + 1));
    int32_t *c = ti_alloc(sizeof(int32_t) * (size_t)(m * ldc + 1));
    int32_t *za = ti_alloc(sizeof(int32_t) * (size_t)(m + 1));
    int32_t *zb = ti_alloc(sizeof(int32_t) * (size_t)(n + 1));
    ti_fill(a, (size_t)(a_rows * lda), t->a_signed, t->extreme);
    ti_fill(b, (size_t)(b_rows * ldb), t->b_signed, t->extreme);
    for (int64_t i = 0; i < m + 1; i++) {
        uint32_t r = ti_random() & 255;
        za[i] = t->a_signed ? (int32_t)(int8_t)r : (int32_t)r;
    }
    for (int64_t j = 0; j < n + 1; j++) {
        uint32_t r = ti_random() & 255;
        zb[j] = t->b_signed ? (int32_t)(int8_t)r : (int32_t)r;
    }
    if (t->extreme) { /* the zero points far from the values: the widest products */
        za[0] = t->a_signed ? 127 : 255;
        zb[0] = t->b_signed ? -128 : 0;
    }
    for (int64_t i = 0; i < m * ldc; i++)
        c[i] = TI_GUARD;
    int64_t *ref_s = ti_alloc(sizeof(int64_t) * (size_t)(m * n + 1));
    int64_t *ref_r = ti_alloc(sizeof(int64_t) * (size_t)(m + 1));
    ti_reference(t, a, lda, b, ldb, za, ref_s, ref_r);
    cpu_igemm_q8 qa = {a, lda, t->ta, t->a_signed}, qb = {b, ldb, t->tb, t->b_signed};
    int64_t *row_off = NULL;
    if (t->row_off && !t->tb) {
        row_off = malloc(sizeof *row_off * (size_t)(k > 0 ? k : 1));
        if (row_off == NULL) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
        for (int64_t q = 0; q < k; q++)
            row_off[q] = q * ldb;
        qb.row_off = row_off;
    }
    const int32_t *pza = t->zp ? za : NULL, *pzb = t->zp ? zb : NULL;
    bool per = t->zp == 2;
    void *pa = ti_alloc(cpu_igemm_packed_a_bytes(m, k));
    cpu_igemm_pack_a(m, k, &qa, pza, per, pa);
    void *scratch = ti_alloc(cpu_igemm_scratch_bytes(n, k));
    int64_t mr = cpu_igemm_mr(), blocks = t->blocks > 0 ? t->blocks : 1;
    int64_t step = ((m + blocks - 1) / blocks + mr - 1) / mr * mr;
    for (int64_t r0 = 0; r0 < m; r0 += step > 0 ? step : 1) {
        int64_t rows = m - r0 < step ? m - r0 : step;
        cpu_igemm(rows, n, k, pa, r0, &qb, pzb, per, c + r0 * ldc, ldc, scratch);
    }
    /* one column: the matrix-vector product too, where this CPU has it */
    size_t vbytes = n == 1 ? cpu_igemv_packed_bytes(m, k) : 0;
    if (vbytes > 0) {
        int vbad = 0;
        uint8_t *x = ti_alloc((size_t)k + 1);
        for (int64_t q = 0; q < k; q++)
            x[q] = b[t->tb ? q : q * ldb];
        void *pv = ti_alloc(vbytes), *vs = ti_alloc(cpu_igemv_scratch_bytes(k));
        int32_t *y = ti_alloc(sizeof(int32_t) * (size_t)(m + 1));
        cpu_igemv_pack(m, k, &qa, pza, per, pv);
        cpu_igemv(pv, x, t->b_signed, pzb ? zb[0] : 0, y, vs);
        for (int64_t i = 0; i < m && vbad < 3; i++) {
            int32_t want = ti_want(ref_s, ref_r, n, i, 0, pzb ? zb[0] : 0);
            if (y[i] != want) {
                fprintf(stderr, "FAIL igemv m=%lld k=%lld a%s x%s zp=%d: y[%lld] = %d, want %d\n",
                        (long long)m, (long long)k, t->a_signed ? "i8" : "u8",
                        t->b_signed ? "i8" : "u8", t->zp, (long long)i, y[i], want);
                vbad++;
                ti_failures++;
            }
        }
        free(x);
        free(pv);
        free(vs);
        free(y);
    }
    /* a few columns: the byte panels' product (cpu_igemv_cols), in row
     * blocks of multiples of eight, B's zero point one for all */
    size_t cbytes = n >= 1 && n <= 12 ? cpu_igemv_packed_bytes(m, k) : 0;
    if (cbytes > 0) {
        int cbad = 0;
        void *pv = ti_alloc(cbytes), *cs = ti_alloc(cpu_igemv_cols_scratch_bytes(k));
        int32_t *y = ti_alloc(sizeof(int32_t) * (size_t)(m * ldc + 1));
        for (int64_t i = 0; i < m * ldc; i++)
            y[i] = TI_GUARD;
        cpu_igemv_pack(m, k, &qa, pza, per, pv);
        int64_t vr = cpu_igemv_rows(), vstep = ((m + blocks - 1) / blocks + vr - 1) / vr * vr;
        for (int64_t r0 = 0; r0 < m; r0 += vstep > 0 ? vstep : 1) {
            int64_t rows = m - r0 < vstep ? m - r0 : vstep;
            cpu_igemv_cols(pv, r0, rows, n, &qb, pzb ? zb[0] : 0, y + r0 * ldc, ldc, cs);
        }
        for (int64_t i = 0; i < m && cbad < 3; i++)
            for (int64_t j = 0; j < ldc && cbad < 3; j++) {
                int32_t want = TI_GUARD;
                if (j < n)
                    want = ti_want(ref_s, ref_r, n, i, j, pzb ? zb[0] : 0);
                if (y[i * ldc + j] != want) {
                    fprintf(stderr,
                            "FAIL igemv_cols m=%lld n=%lld k=%lld a%s b%s ta=%d tb=%d zp=%d "
                            "blocks=%lld: C[%lld][%lld] = %d, want %d\n",
                            (long long)m, (long long)n, (long long)k, t->a_signed ? "i8" : "u8",
                            t->b_signed ? "i8" : "u8", t->ta, t->tb, t->zp, (long long)blocks,
                            (long long)i, (long long)j, y[i * ldc + j], want);
                    cbad++;
                    ti_failures++;
                }
            }
        free(pv);
        free(cs);
        free(y);
    }
    int bad = 0;
    for (int64_t i = 0; i < m && bad < 3; i++)
        for (int64_t j = 0; j < ldc && bad < 3; j++) {
            int32_t got = c[i * ldc + j];
            int32_t want = TI_GUARD;
            if (j < n)
                want = ti_want(ref_s, ref_r, n, i, j, pzb ? zb[per ? j : 0] : 0);
            if (got != want) {
                fprintf(stderr,
                        "FAIL m=%lld n=%lld k=%lld a%s b%s ta=%d tb=%d zp=%d blocks=%lld: "
                        "C[%lld][%lld] = %d, want %d\n",
                        (long long)m, (long long)n, (long long)k, t->a_signed ? "i8" : "u8",
                        t->b_signed ? "i8" : "u8", t->ta, t->tb, t->zp, (long long)t->blocks,
                        (long long)i, (long long)j, got, want);
                bad++;
            }
        }
    ti_failures += bad;
    free(a), free(b), free(c), free(za), free(zb), free(pa), free(scratch), free(row_off);
    free(ref_s), free(ref_r);
}

static void ti_signs(ti_case t)
{
    for (int s = 0; s < 4; s++) {
        t.a_signed = s & 1;
        t.b_signed = s >> 1;
        ti_run(&t);
    }
}

static void ti_small(void)
{
    for (int64_t m = 0; m <= 9; m++)
        for (int64_t n = 0; n <= 9; n += 3)
            for (int64_t k = 0; k <= 9; k++)
                ti_signs((ti_case){m, n, k, .zp = 1});
}

static void ti_edges(void)
{
    static const int64_t ms[] = {1, 5, 6, 7, 8, 9, 12, 13, 16, 17};
    static const int64_t ns[] = {1, 15, 16, 17, 31, 32, 33, 48, 255, 256, 257};
    static const int64_t ks[] = {1, 2, 3, 4, 5, 7, 8, 63, 64, 65};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
        for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++)
            ti_run(&(ti_case){ms[i], ns[j], ks[(i + j) % 10], (i & 1) != 0, (j & 1) != 0,
                              .zp = 1});
    /* AMX's panel of 32 rows in halves of 16 and its runs of 64 values of
     * K: rows and columns either side of 16 and 32, K either side of 64
     * and 128, A transposed or not */
    static const int64_t ms2[] = {15, 16, 17, 31, 32, 33, 48, 64, 65};
    static const int64_t ns2[] = {8, 16, 17, 24, 32, 40};
    static const int64_t ks2[] = {60, 64, 68, 127, 128, 129, 200};
    for (size_t i = 0; i < sizeof ms2 / sizeof ms2[0]; i++)
        for (size_t j = 0; j < sizeof ns2 / sizeof ns2[0]; j++)
            ti_run(&(ti_case){ms2[i], ns2[j], ks2[(i + j) % 7], (i & 1) != 0, (j & 1) != 0,
                              .ta = ((i + j) & 1) != 0, .zp = 2, .row_off = (j & 2) != 0});
}

static void ti_large(void)
{
    ti_signs((ti_case){64, 300, 576, .zp = 1});
    ti_signs((ti_case){130, 700, 1152, .zp = 1});
    ti_run(&(ti_case){40, 1030, 4608, false, true, .zp = 1});
    ti_run(&(ti_case){1000, 33, 130, false, true, .zp = 2});
}

static void ti_transposes(void)
{
    for (int tr = 0; tr < 4; tr++) {
        ti_signs((ti_case){13, 37, 29, .ta = tr & 1, .tb = tr >> 1, .zp = 1});
        ti_signs((ti_case){67, 290, 131, .ta = tr & 1, .tb = tr >> 1, .zp = 2});
    }
    /* a transposed A of two blocks of 48 rows and the rest (AVX2 packs
     * those eight panels at once), K even and odd */
    ti_signs((ti_case){100, 50, 64, .ta = true, .zp = 2, .blocks = 2});
    ti_signs((ti_case){150, 17, 77, .ta = true, .zp = 1});
}

static void ti_zero_points(void)
{
    for (int zp = 0; zp < 3; zp++) {
        ti_signs((ti_case){11, 45, 23, .zp = zp});
        ti_signs((ti_case){24, 260, 200, .tb = true, .zp = zp});
    }
}

static void ti_blocks(void)
{
    for (int64_t blocks = 1; blocks <= 5; blocks++) {
        ti_signs((ti_case){50, 70, 77, .zp = 2, .blocks = blocks});
        ti_run(&(ti_case){203, 19, 300, true, false, .zp = 1, .blocks = blocks});
    }
}

/* One column (the matrix-vector kernel, its pairs of groups and the odd
 * last group) and a last column block of one column, with every operand
 * form, zero point mode and C packed tight (leading dimension 1). */
/* Two to four columns (AVX2's kernels with lanes over A's rows), alone
 * and as the last panel after whole ones, rows short of and past a
 * panel, K odd and even, every operand form and zero point mode,
 * implicit rows too; up to 12 columns also through the byte panels
 * (cpu_igemv_cols), in blocks of rows. */
static void ti_narrow(void)
{
    static const int64_t ns[] = {2, 3, 4, 18, 19, 20, 34, 36};
    static const int64_t ms[] = {1, 5, 6, 7, 13, 64};
    static const int64_t ks[] = {1, 2, 3, 5, 64, 129, 576};
    int at = 0;
    for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++)
        for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++, at++)
            ti_signs((ti_case){ms[i], ns[j], ks[at % 7], .ta = (at & 1) != 0,
                               .tb = (at & 2) != 0 && (at & 4) == 0, .zp = at % 3,
                               .row_off = (at & 6) == 6, .tight = ns[j] == 2 && (at & 1)});
    /* the byte panels' product past four columns and in row blocks */
    static const int64_t ns2[] = {1, 5, 7, 8, 9, 12};
    static const int64_t ms2[] = {8, 17, 40};
    for (size_t j = 0; j < sizeof ns2 / sizeof ns2[0]; j++)
        for (size_t i = 0; i < sizeof ms2 / sizeof ms2[0]; i++, at++)
            ti_signs((ti_case){ms2[i], ns2[j], ks[at % 7], .ta = (at & 1) != 0,
                               .tb = (at & 2) != 0, .zp = at % 3, .row_off = (at & 6) == 4,
                               .blocks = 1 + at % 3});
}

static void ti_vectors(void)
{
    static const int64_t ks[] = {1, 3, 4, 5, 8, 9, 12, 33, 130, 512};
    for (int zp = 0; zp < 3; zp++)
        for (int tr = 0; tr < 4; tr++)
            for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
                ti_signs((ti_case){37, 1, ks[i], .ta = tr & 1, .tb = tr >> 1, .zp = zp,
                                   .tight = (i & 1) != 0});
                ti_signs((ti_case){16, 257, ks[i], .ta = tr & 1, .tb = tr >> 1, .zp = zp});
            }
    ti_signs((ti_case){70, 1, 64, .zp = 2, .blocks = 3, .tight = true});
    ti_signs((ti_case){9, 1, 40000, .tb = true, .zp = 2, .extreme = 1});
}

static void ti_wrap(void)
{
    /* 255 * 255 * 40000 passes 2^31: the i32 result wraps, as ONNX's does */
    ti_signs((ti_case){9, 20, 40000, .zp = 1, .extreme = 1});
    ti_signs((ti_case){3, 40, 70000, .tb = true, .zp = 1, .extreme = 1});
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s <group>\n", argv[0]);
        return 2;
    }
    const char *g = argv[1];
    printf("micro-kernel %s (mr %d)\n", cpu_igemm_isa(), cpu_igemm_mr());
    if (strcmp(g, "small") == 0)
        ti_small();
    else if (strcmp(g, "edges") == 0)
        ti_edges();
    else if (strcmp(g, "large") == 0)
        ti_large();
    else if (strcmp(g, "transposes") == 0)
        ti_transposes();
    else if (strcmp(g, "zero_points") == 0)
        ti_zero_points();
    else if (strcmp(g, "blocks") == 0)
        ti_blocks();
    else if (strcmp(g, "wrap") == 0)
        ti_wrap();
    else if (strcmp(g, "vectors") == 0)
        ti_vectors();
    else if (strcmp(g, "narrow") == 0)
        ti_narrow();
    else {
        fprintf(stderr, "unknown group '%s'\n", g);
        return 2;
    }
    if (ti_failures > 0) {
        fprintf(stderr, "%s: %d failures\n", g, ti_failures);
        return 1;
    }
    printf("%s: ok\n", g);
    return 0;
}
