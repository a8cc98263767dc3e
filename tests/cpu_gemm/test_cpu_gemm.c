/* test_cpu_gemm.c — the cpu module's SGEMM (modules/cpu/gemm.c) against a
 * naive double-precision reference: every size from 0 to past the
 * micro-kernel's panels, sizes past the cache blocks, all four transposes,
 * alpha and beta (beta 0 must not read C: C starts as NaN there), K 0, and
 * operands packed ahead of time, whole or cut into panel-aligned blocks as
 * the kernels cut them, and the fused epilogue (row and column bias, Relu,
 * Clip) of cpu_gemm_ex. An error is allowed relative to sum |a*b| of the
 * element. Usage: test_cpu_gemm <group>. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"

static int tg_failures;
static uint64_t tg_seed = 0x2545f4914f6cdd1dull;

static float tg_random(void)
{
    tg_seed = tg_seed * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(tg_seed >> 40) / (double)(1ull << 24) * 4.0 - 2.0);
}

static float *tg_alloc(size_t floats)
{
    size_t bytes = (floats * sizeof(float) + 63) / 64 * 64 + 64;
    float *p = aligned_alloc(64, bytes);
    if (p == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

/* One product's operands: op(A) M x K, op(B) K x N, C M x N with padding
 * columns (ldc > n) that must stay untouched. */
typedef struct tg_case {
    int64_t m, n, k;
    bool ta, tb;
    float alpha, beta;
    bool pack_a, pack_b;
    int64_t row_blocks, col_blocks; /* the product cut as a kernel cuts it */
    int epi; /* 0 none; 1 row bias + Relu; 2 column bias + Clip; 3 both biases */
    bool tight; /* B's rows as long as they are (a column: stride 1), else padded */
} tg_case;

/* The epilogue's activation on V, as cpu_gemm_epilogue defines it. */
static double tg_act(int epi, double v)
{
    if (epi == 1)
        return v > 0.0 ? v : 0.0;
    if (epi == 2)
        return v < -0.5 ? -0.5 : (v > 0.75 ? 0.75 : v);
    return v;
}

#define TG_GUARD 12345.0f

static void tg_run(const tg_case *t)
{
    const int64_t m = t->m, n = t->n, k = t->k;
    const int64_t lda = (t->ta ? m : k) + 3, ldb = (t->tb ? k : n) + (t->tight ? 0 : 2),
                  ldc = n + 5;
    const int64_t a_rows = t->ta ? k : m, b_rows = t->tb ? n : k;
    float *a = tg_alloc((size_t)(a_rows * lda + 1)), *b = tg_alloc((size_t)(b_rows * ldb + 1));
    float *c = tg_alloc((size_t)(m * ldc + 1));
    double *want = malloc(sizeof(double) * (size_t)(m * n + 1));
    double *bound = malloc(sizeof(double) * (size_t)(m * n + 1));
    for (int64_t i = 0; i < a_rows * lda; i++)
        a[i] = tg_random();
    for (int64_t i = 0; i < b_rows * ldb; i++)
        b[i] = tg_random();
    float *rbias = tg_alloc((size_t)m + 1), *cbias = tg_alloc((size_t)n + 1);
    for (int64_t i = 0; i < m; i++)
        rbias[i] = tg_random();
    for (int64_t j = 0; j < n; j++)
        cbias[j] = tg_random();
    const bool use_rb = t->epi == 1 || t->epi == 3, use_cb = t->epi == 2 || t->epi == 3;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < ldc; j++)
            c[i * ldc + j] = j >= n ? TG_GUARD : t->beta == 0.0f ? NAN : tg_random();
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0.0, abs_s = 0.0;
            for (int64_t p = 0; p < k; p++) {
                double x = t->ta ? a[p * lda + i] : a[i * lda + p];
                double y = t->tb ? b[j * ldb + p] : b[p * ldb + j];
                s += x * y;
                abs_s += fabs(x * y);
            }
            double cv = t->beta == 0.0f ? 0.0 : (double)t->beta * c[i * ldc + j];
            double bias = (use_rb ? rbias[i] : 0.0) + (use_cb ? cbias[j] : 0.0);
            want[i * n + j] = tg_act(t->epi, (double)t->alpha * s + cv + bias);
            bound[i * n + j] = fabs((double)t->alpha) * abs_s + fabs(cv) + fabs(bias);
        }
    float *pa = NULL, *pb = NULL;
    if (t->pack_a) {
        pa = tg_alloc(cpu_gemm_packed_a_floats(m, k));
        cpu_gemm_pack_a(m, k, a, lda, t->ta, pa);
    }
    if (t->pack_b) {
        pb = tg_alloc(cpu_gemm_packed_b_floats(k, n));
        cpu_gemm_pack_b(k, n, b, ldb, t->tb, pb);
    }
    /* Blocks of rows and columns, aligned to whole panels as a packed
     * operand needs. */
    int64_t mr = cpu_gemm_mr(), nr = cpu_gemm_nr();
    int64_t rb = t->row_blocks > 0 ? t->row_blocks : 1, cb = t->col_blocks > 0 ? t->col_blocks : 1;
    int64_t rows = (m + rb - 1) / rb, cols = (n + cb - 1) / cb;
    rows = rb > 1 ? (rows + mr - 1) / mr * mr : rows;
    cols = cb > 1 ? (cols + nr - 1) / nr * nr : cols;
    if (rows < 1)
        rows = 1;
    if (cols < 1)
        cols = 1;
    for (int64_t r0 = 0; r0 < m || (m == 0 && r0 == 0); r0 += rows)
        for (int64_t c0 = 0; c0 < n || (n == 0 && c0 == 0); c0 += cols) {
            int64_t bm = m - r0 < rows ? m - r0 : rows, bn = n - c0 < cols ? n - c0 : cols;
            cpu_gemm_operand oa = {.data = t->ta ? a + r0 : a + r0 * lda, .ld = lda, .trans = t->ta};
            cpu_gemm_operand ob = {.data = t->tb ? b + c0 * ldb : b + c0, .ld = ldb, .trans = t->tb};
            if (pa != NULL) {
                oa.packed = pa;
                oa.packed_k = k;
                oa.first = r0;
            }
            if (pb != NULL) {
                ob.packed = pb;
                ob.packed_k = k;
                ob.first = c0;
            }
            size_t sf = cpu_gemm_scratch_floats(bm, bn, k, pa != NULL, pb != NULL);
            float *scratch = sf ? tg_alloc(sf) : NULL;
            if (t->epi == 0) {
                cpu_gemm(bm, bn, k, t->alpha, &oa, &ob, t->beta, c + r0 * ldc + c0, ldc,
                         scratch);
            } else {
                cpu_gemm_epilogue e = {.row_bias = use_rb ? rbias + r0 : NULL,
                                       .col_bias = use_cb ? cbias + c0 : NULL,
                                       .act = t->epi == 1   ? CPU_GEMM_ACT_RELU
                                              : t->epi == 2 ? CPU_GEMM_ACT_CLIP
                                                            : CPU_GEMM_ACT_NONE,
                                       .lo = -0.5f,
                                       .hi = 0.75f};
                cpu_gemm_ex(bm, bn, k, t->alpha, &oa, &ob, t->beta, c + r0 * ldc + c0, ldc,
                            scratch, &e);
            }
            free(scratch);
            if (m == 0 || n == 0)
                break;
        }
    int bad = 0;
    for (int64_t i = 0; i < m && bad < 3; i++)
        for (int64_t j = 0; j < ldc && bad < 3; j++) {
            float got = c[i * ldc + j];
            bool ok;
            if (j >= n)
                ok = got == TG_GUARD;
            else
                ok = fabs(got - want[i * n + j]) <= 1e-5 * bound[i * n + j] + 1e-30 && !isnan(got);
            if (!ok) {
                fprintf(stderr,
                        "FAIL m%lld n%lld k%lld ta%d tb%d alpha %g beta %g pack %d%d blocks %lldx%lld"
                        " epi %d: C[%lld][%lld] = %.9g, want %.9g (bound %g)\n",
                        (long long)m, (long long)n, (long long)k, t->ta, t->tb, t->alpha,
                        t->beta, t->pack_a, t->pack_b, (long long)rb, (long long)cb, t->epi,
                        (long long)i, (long long)j, got, j < n ? want[i * n + j] : TG_GUARD,
                        j < n ? bound[i * n + j] : 0.0);
                bad++;
            }
        }
    tg_failures += bad;
    free(a);
    free(b);
    free(c);
    free(rbias);
    free(cbias);
    free(want);
    free(bound);
    free(pa);
    free(pb);
}

/* Runs T with every transpose. */
static void tg_run_all_trans(tg_case t)
{
    for (int tr = 0; tr < 4; tr++) {
        t.ta = tr & 1;
        t.tb = (tr >> 1) & 1;
        tg_run(&t);
    }
}

static void tg_small(void)
{
    for (int64_t m = 0; m <= 26; m++)
        for (int64_t n = 0; n <= 40; n++)
            for (int64_t k = 0; k <= 9; k += 3)
                tg_run_all_trans((tg_case){m, n, k, 0, 0, 1.0f, 0.0f, 0, 0, 1, 1});
}

static void tg_edges(void)
{
    static const int64_t sizes[] = {0, 1, 2, 5, 6, 7, 11, 12, 13, 15, 16, 17, 23, 24, 25,
                                    31, 32, 33, 47, 48, 49, 63, 64, 65, 70};
    const int ns = (int)(sizeof sizes / sizeof sizes[0]);
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < ns; j++) {
            int64_t k = sizes[(i * 7 + j * 3) % ns];
            tg_case t = {sizes[i], sizes[j], k, (i + j) & 1, (i * j) & 1, 1.0f, 0.0f, 0, 0, 1, 1};
            tg_run(&t);
        }
}

static void tg_large(void)
{
    /* Past MC (240), KC (256) and NC (2048) and around them. */
    tg_run_all_trans((tg_case){257, 300, 520, 0, 0, 1.0f, 0.0f, 0, 0, 1, 1});
    tg_run(&(tg_case){481, 65, 700, 0, 0, 1.0f, 1.0f, 0, 0, 1, 1});
    tg_run(&(tg_case){13, 2100, 40, 0, 1, 1.0f, 0.0f, 0, 0, 1, 1});
    tg_run(&(tg_case){64, 49, 1152, 0, 0, 1.0f, 0.0f, 1, 0, 1, 1});
}

static void tg_transposes(void)
{
    for (int64_t s = 1; s <= 70; s += 3)
        tg_run_all_trans((tg_case){s, 71 - s, (s * 5) % 67 + 1, 0, 0, 1.0f, 0.0f, 0, 0, 1, 1});
}

static void tg_alpha_beta(void)
{
    static const float alphas[] = {1.0f, -0.5f, 2.0f, 0.0f};
    static const float betas[] = {0.0f, 1.0f, -1.5f, 0.25f};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            tg_run_all_trans((tg_case){37, 45, 19, 0, 0, alphas[i], betas[j], 0, 0, 1, 1});
            tg_run(&(tg_case){30, 70, 300, 0, 0, alphas[i], betas[j], 0, 0, 1, 1});
        }
}

static void tg_zero_k(void)
{
    static const float betas[] = {0.0f, 1.0f, 3.0f};
    for (int j = 0; j < 3; j++)
        for (int64_t m = 0; m < 20; m += 7)
            for (int64_t n = 0; n < 40; n += 13)
                tg_run_all_trans((tg_case){m, n, 0, 0, 0, 1.0f, betas[j], 0, 0, 1, 1});
}

/* Packed operands, whole and cut into blocks of panels. */
static void tg_packed(bool pack_a, bool pack_b)
{
    static const int64_t sizes[] = {1, 7, 12, 13, 31, 33, 64, 70};
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) {
            int64_t k = sizes[(i + 2 * j) % 8] * 3;
            tg_case t = {sizes[i], sizes[j], k, 0, 0, 1.0f, (i + j) % 3 == 0 ? 0.0f : 1.0f,
                         pack_a, pack_b, 1 + i % 3, 1 + j % 3};
            tg_run_all_trans(t);
        }
    tg_run(&(tg_case){300, 260, 600, 0, 1, 1.0f, 0.0f, pack_a, pack_b, 2, 2});
    tg_run(&(tg_case){64, 1024, 784, 0, 1, 1.0f, 0.0f, pack_a, pack_b, 1, 2});
}

static void tg_blocks(void)
{
    for (int64_t rb = 1; rb <= 4; rb++)
        for (int64_t cb = 1; cb <= 4; cb++)
            tg_run_all_trans((tg_case){100, 150, 70, 0, 0, 1.0f, 0.5f, 0, 0, rb, cb});
}

/* The fused epilogue: every kind, with sizes around the panels and the
 * cache blocks (K past KC: only the last slice may apply it), packed and
 * plain operands (B read in place for short A), blocks, and K 0. */
static void tg_epilogue(void)
{
    static const int64_t sizes[] = {1, 5, 12, 13, 31, 32, 33, 48, 49, 70};
    for (int e = 1; e <= 3; e++) {
        for (int i = 0; i < 10; i++)
            for (int j = 0; j < 10; j++) {
                tg_case t = {sizes[i], sizes[j], sizes[(i + j) % 10], 0, 0, 1.0f,
                             (i + j) % 2 ? 0.0f : 1.0f, (i + j) % 3 == 1, (i * j) % 3 == 2,
                             1 + i % 2, 1 + j % 2, e};
                tg_run_all_trans(t);
            }
        tg_run(&(tg_case){40, 3000, 300, 0, 0, 1.0f, 0.0f, 0, 0, 1, 1, e});
        tg_run(&(tg_case){260, 90, 600, 0, 0, -0.5f, 0.5f, 1, 0, 2, 1, e});
        tg_run(&(tg_case){17, 40, 0, 0, 0, 1.0f, 1.0f, 0, 0, 1, 1, e});
        tg_run(&(tg_case){17, 40, 0, 0, 0, 1.0f, 0.0f, 0, 0, 1, 1, e});
    }
}

/* One column of B (N 1): the matrix-vector path reads a contiguous column
 * (B^T's row, or B of stride 1) in place; K across its 16 lanes and their
 * tail, every transpose, alpha and beta, each epilogue, blocks of rows,
 * a padded or packed B (the panels' path). */
static void tg_vector(void)
{
    static const int64_t ks[] = {1, 15, 16, 17, 31, 33, 300, 700};
    static const float alphas[] = {1.0f, -0.5f}, betas[] = {0.0f, 1.0f, -1.5f};
    for (int i = 0; i < 8; i++)
        for (int e = 0; e <= 3; e++)
            for (int ab = 0; ab < 6; ab++) {
                tg_case t = {(i * 11 + e * 5) % 70 + 1, 1, ks[i], 0, 0, alphas[ab % 2],
                             betas[ab / 2], 0, 0, 1 + e % 3, 1, e, true};
                tg_run_all_trans(t);
                t.tight = false;
                tg_run_all_trans(t);
                t.pack_b = true;
                tg_run_all_trans(t);
            }
}

/* One row of A (M 1): B read in place whatever its size, row-major in
 * column blocks (past the block of 16384 columns and its tail; rows eight,
 * then four at a time, then the rest) or transposed as dot products (four
 * rows at a time and the rest); K 0 to past the steps of four, eight and
 * 16 (13: a step of each and one row); every transpose, alpha, beta and
 * epilogue, and blocks of columns as a kernel cuts them. */
static void tg_row(void)
{
    static const int64_t ns[] = {1, 3, 4, 5, 37, 16384, 16400, 33000};
    static const int64_t ks[] = {0, 1, 13, 4, 7, 16, 33, 130};
    static const float alphas[] = {1.0f, -0.5f}, betas[] = {0.0f, 1.0f, -1.5f};
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) {
            if (ns[i] > 5000 && ks[j] > 33)
                continue;
            int v = i * 8 + j;
            tg_case t = {1, ns[i], ks[j], 0, 0, alphas[v % 2], betas[v % 3], 0, 0, 1,
                         1 + (v / 3) % 2, v % 4};
            tg_run_all_trans(t);
        }
    tg_run_all_trans((tg_case){1, 3000, 768, 0, 0, 1.0f, 0.0f, 0, 0, 1, 2, 2});
}

/* Weights packed ahead of time lose their denormal values (zeros of their
 * sign: a multiply by one costs a microcode assist), and nothing else:
 * A = 1e30 everywhere times a B of denormals, normals and zeros. Unpacked,
 * a denormal still counts (1e30 * 1e-40 = 1e-10), so the check sees the
 * flush. */
/* Whether none of the N floats of packed operand WHICH is denormal. */
static bool tg_no_denormals(const float *v, size_t n, const char *which)
{
    for (size_t i = 0; i < n; i++)
        if (fpclassify(v[i]) == FP_SUBNORMAL) {
            fprintf(stderr, "denormals: packed %s keeps a denormal at %zu\n", which, i);
            return false;
        }
    return true;
}

static void tg_denormals(void)
{
    const int64_t m = 3, n = 21, k = 5;
    float *a = tg_alloc((size_t)(m * k)), *b = tg_alloc((size_t)(k * n));
    float *c = tg_alloc((size_t)(m * n)), *c_plain = tg_alloc((size_t)(m * n));
    for (int64_t i = 0; i < m * k; i++)
        a[i] = 1e30f;
    for (int64_t i = 0; i < k * n; i++)
        b[i] = 0.0f;
    b[0 * n + 1] = 1e-40f;  /* column 1: one denormal */
    b[2 * n + 7] = -3e-39f; /* column 7: one negative denormal */
    b[3 * n + 7] = 2e-38f;  /* ... and a normal: only it counts */
    b[4 * n + 20] = 1e-45f; /* the smallest denormal */
    float *pb = tg_alloc(cpu_gemm_packed_b_floats(k, n));
    cpu_gemm_pack_b(k, n, b, n, false, pb);
    if (!tg_no_denormals(pb, cpu_gemm_packed_b_floats(k, n), "B"))
        tg_failures++;
    bool negative_zero = false;
    for (size_t i = 0; i < cpu_gemm_packed_b_floats(k, n); i++)
        negative_zero |= signbit(pb[i]) && pb[i] == 0.0f;
    if (!negative_zero) {
        fprintf(stderr, "denormals: -3e-39 did not become -0\n");
        tg_failures++;
    }
    cpu_gemm_operand oa = {.data = a, .ld = k};
    cpu_gemm_operand ob = {.packed = pb, .packed_k = k};
    cpu_gemm_operand ob_plain = {.data = b, .ld = n};
    float *scratch = tg_alloc(cpu_gemm_scratch_floats(m, n, k, false, false));
    cpu_gemm(m, n, k, 1.0f, &oa, &ob, 0.0f, c, n, scratch);
    cpu_gemm(m, n, k, 1.0f, &oa, &ob_plain, 0.0f, c_plain, n, scratch);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float want = j == 7 ? 1e30f * 2e-38f : 0.0f;
            if (fabsf(c[i * n + j] - want) > 1e-6f * fabsf(want)) {
                fprintf(stderr, "denormals: C[%lld][%lld] = %g, expected %g\n", (long long)i,
                        (long long)j, c[i * n + j], want);
                tg_failures++;
            }
        }
    if (c_plain[1] == 0.0f) {
        fprintf(stderr, "denormals: the unpacked product flushed too (the CPU runs with "
                        "denormals as zero?): the check proves nothing\n");
        tg_failures++;
    }
    /* A packed ahead of time flushes the same way. */
    float *pa = tg_alloc(cpu_gemm_packed_a_floats(n, k));
    cpu_gemm_pack_a(n, k, b, n, true, pa);
    if (!tg_no_denormals(pa, cpu_gemm_packed_a_floats(n, k), "A"))
        tg_failures++;
    free(a);
    free(b);
    free(c);
    free(c_plain);
    free(pb);
    free(pa);
    free(scratch);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s <group>\n", argv[0]);
        return 2;
    }
    const char *g = argv[1];
    printf("micro-kernel %s (%d x %d)\n", cpu_gemm_isa(), cpu_gemm_mr(), cpu_gemm_nr());
    if (strcmp(g, "small") == 0)
        tg_small();
    else if (strcmp(g, "edges") == 0)
        tg_edges();
    else if (strcmp(g, "large") == 0)
        tg_large();
    else if (strcmp(g, "transposes") == 0)
        tg_transposes();
    else if (strcmp(g, "alpha_beta") == 0)
        tg_alpha_beta();
    else if (strcmp(g, "zero_k") == 0)
        tg_zero_k();
    else if (strcmp(g, "packed_a") == 0)
        tg_packed(true, false);
    else if (strcmp(g, "packed_b") == 0)
        tg_packed(false, true);
    else if (strcmp(g, "packed_both") == 0)
        tg_packed(true, true);
    else if (strcmp(g, "blocks") == 0)
        tg_blocks();
    else if (strcmp(g, "epilogue") == 0)
        tg_epilogue();
    else if (strcmp(g, "denormals") == 0)
        tg_denormals();
    else if (strcmp(g, "vector") == 0)
        tg_vector();
    else if (strcmp(g, "row") == 0)
        tg_row();
    else {
        fprintf(stderr, "unknown group '%s'\n", g);
        return 2;
    }
    if (tg_failures > 0) {
        fprintf(stderr, "%s: %d failures\n", g, tg_failures);
        return 1;
    }
    printf("%s: ok\n", g);
    return 0;
}
