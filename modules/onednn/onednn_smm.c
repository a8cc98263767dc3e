/* onednn_smm.c — the onednn module's own kernel for small matrix products
 * (MatMul and Gemm) on CPUs where oneDNN dispatches to its AVX2 kernels.
 *
 * Why: oneDNN 2.6's gemm:jit costs about a microsecond per product of a
 * batch before it multiplies anything (it partitions, packs and calls its
 * drivers for each), which is all of an attention head's product at short
 * sequences: transformer_padmask's 8 heads of 12x12 by 12x12 took 9-12 us
 * a MatMul, its whole cpu-module run 100 us; the default configuration was
 * 1.2x the cpu module's time on the issue zoo's two small transformers.
 *
 * The kernel. C[b] = post(A[b] x B[b] + bias) for every entry b of the
 * batch, A, B and C read and written through strides (a broadcast batch
 * dim has stride 0, a transposed operand swapped strides), C's columns
 * dense. B is packed into rows of NPAD floats (N rounded up to 8, zeros
 * after): once at compile when it is a constant of the graph, else per
 * batch entry into the calling thread's scratch. A work item is one batch
 * entry's block of up to ODNN_SMM_ROWS rows; a register tile is up to 4
 * rows by 16 columns (8 accumulators, FMA-bound), A's values broadcast
 * from wherever they are. The epilogue runs on the tile in registers
 * before the store: bias, then the post-ops in order (a linear map, an
 * activation odnn_act8 computes, or the sum that adds C's old value: a
 * residual written in place).
 *
 * Compiled for AVX2 by function attributes; used only where
 * odnn_direct_usable() says the CPU has AVX2 and oneDNN is below AVX-512. */
#include "onednn_avx2.h"

#include <omp.h>
#include <string.h>

/* Rows of one work item (a multiple of the tile's 4). */
#define ODNN_SMM_ROWS 16

size_t odnn_smm_packed_floats(const struct odnn_smm *s)
{
    return (size_t)(s->k * s->npad);
}

/* B of one batch entry (at B) into K rows of NPAD floats at OUT. */
static void odnn_smm_pack_one(const struct odnn_smm *s, const float *b, float *out)
{
    for (int64_t kk = 0; kk < s->k; kk++) {
        float *row = out + kk * s->npad;
        const float *src = b + kk * s->b_ks;
        if (s->b_ns == 1) {
            memcpy(row, src, (size_t)s->n * sizeof *row);
        } else {
            for (int64_t j = 0; j < s->n; j++)
                row[j] = src[j * s->b_ns];
        }
        for (int64_t j = s->n; j < s->npad; j++)
            row[j] = 0.0f;
    }
}

void odnn_smm_pack(const struct odnn_smm *s, const float *b, float *out)
{
    odnn_smm_pack_one(s, b, out);
}

size_t odnn_smm_scratch_bytes(const struct odnn_smm *s, int threads)
{
    if (s->packed || s->gemv)
        return 0;
    size_t per = (odnn_smm_packed_floats(s) * sizeof(float) + 63) / 64 * 64;
    return per * (size_t)(threads > 0 ? threads : 1);
}

/* Lanes of an 8-column vector that are columns below N. */
static inline __attribute__((always_inline, target("avx2,fma"))) __m256i odnn_smm_mask(int64_t left)
{
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(left < 8 ? left : 8)), lanes);
}

/* V (columns J.. of row I, C the row's first column): bias, post-ops, store. */
static inline __attribute__((always_inline, target("avx2,fma"))) void
odnn_smm_store(const struct odnn_smm *s, __m256 v, const float *bias, float *c, int64_t j)
{
    int64_t left = s->n - j;
    __m256i mask = odnn_smm_mask(left);
    if (bias != NULL)
        v = _mm256_add_ps(v, _mm256_loadu_ps(bias + j)); /* bias is padded to NPAD */
    for (int p = 0; p < s->n_post; p++) {
        const struct odnn_smm_post *q = &s->post[p];
        if (q->kind == ODNN_SMM_LINEAR) {
            v = _mm256_fmadd_ps(v, _mm256_set1_ps(q->a), _mm256_set1_ps(q->b));
        } else if (q->kind == ODNN_SMM_SUM) {
            __m256 old = left >= 8 ? _mm256_loadu_ps(c + j) : _mm256_maskload_ps(c + j, mask);
            v = _mm256_fmadd_ps(old, _mm256_set1_ps(q->a), v);
        } else {
            v = odnn_act8(v, q->act, _mm256_set1_ps(q->a), _mm256_set1_ps(q->b),
                          _mm256_set1_ps(q->a));
        }
    }
    if (left >= 8)
        _mm256_storeu_ps(c + j, v);
    else
        _mm256_maskstore_ps(c + j, mask, v);
}

/* The products of K rows of B (at BP, LDB floats apart) by MR rows of A
 * into ACC: two vectors of columns, or one (ONE). MASKED: B's last vector
 * is read through M1 (one) or M1 (the second of two), lanes past B's
 * columns left zero. */
static inline __attribute__((always_inline, target("avx2,fma"))) void
odnn_smm_k(const struct odnn_smm *s, int mr, int one, int masked, __m256i m1, const float *a,
           const float *bp, int64_t ldb, __m256 acc[4][2])
{
    const int64_t ars = s->a_rs, aks = s->a_ks;
    for (int64_t kk = 0; kk < s->k; kk++, bp += ldb) {
        __m256 b0, b1 = _mm256_setzero_ps();
        if (one) {
            b0 = masked ? _mm256_maskload_ps(bp, m1) : _mm256_loadu_ps(bp);
        } else {
            b0 = _mm256_loadu_ps(bp);
            b1 = masked ? _mm256_maskload_ps(bp + 8, m1) : _mm256_loadu_ps(bp + 8);
        }
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++) {
            if (r < mr) {
                __m256 av = _mm256_broadcast_ss(a + r * ars + kk * aks);
                acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
                if (!one)
                    acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
            }
        }
    }
}

/* MR rows (1 to 4) of C (at C) from A's rows (at A, A_RS apart, K values
 * A_KS apart) by B at PB: rows LDB floats apart, NB columns there to read
 * (NPAD when packed, zeros after N; N when read in place). */
static inline __attribute__((always_inline, target("avx2,fma"))) void
odnn_smm_tile(const struct odnn_smm *s, int mr, const float *a, const float *pb, int64_t ldb,
              int64_t nb, const float *bias, float *c)
{
    for (int64_t j = 0; j < s->n; j += 16) {
        __m256 acc[4][2];
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++)
            acc[r][0] = acc[r][1] = _mm256_setzero_ps();
        int one = j + 8 >= nb;                       /* one vector of columns left */
        int64_t last = one ? j : j + 8;              /* the last vector's first column */
        int masked = last + 8 > nb;
        __m256i m1 = odnn_smm_mask(nb - last);
        if (one && masked)
            odnn_smm_k(s, mr, 1, 1, m1, a, pb + j, ldb, acc);
        else if (one)
            odnn_smm_k(s, mr, 1, 0, m1, a, pb + j, ldb, acc);
        else if (masked)
            odnn_smm_k(s, mr, 0, 1, m1, a, pb + j, ldb, acc);
        else
            odnn_smm_k(s, mr, 0, 0, m1, a, pb + j, ldb, acc);
#pragma GCC unroll 4
        for (int r = 0; r < mr; r++) {
            odnn_smm_store(s, acc[r][0], bias, c + r * s->c_rs, j);
            if (j + 8 < s->n)
                odnn_smm_store(s, acc[r][1], bias, c + r * s->c_rs, j + 8);
        }
    }
}

/* The offsets of batch entry E in A, B and C (in floats). */
static void odnn_smm_entry(const struct odnn_smm *s, int64_t e, int64_t *ao, int64_t *bo,
                           int64_t *co)
{
    *ao = *bo = *co = 0;
    for (int d = s->nb - 1; d >= 0; d--) {
        int64_t i = e % s->bd[d];
        e /= s->bd[d];
        *ao += i * s->as[d];
        *bo += i * s->bs[d];
        *co += i * s->cs[d];
    }
}

/* Work items FIRST to LAST (batch-major row blocks) on one thread; PACK
 * its scratch for B when B is not packed already. */
static __attribute__((target("avx2,fma"))) void
odnn_smm_items(const struct odnn_smm *s, const float *a, const float *b, const float *bias,
               float *c, int64_t first, int64_t last, float *pack)
{
    int64_t blocks = (s->m + ODNN_SMM_ROWS - 1) / ODNN_SMM_ROWS;
    int64_t packed_bo = -1;
    for (int64_t it = first; it < last; it++) {
        int64_t e = it / blocks, i0 = it % blocks * ODNN_SMM_ROWS;
        int64_t ao, bo, co;
        odnn_smm_entry(s, e, &ao, &bo, &co);
        const float *pb = b;
        int64_t ldb = s->npad, nb = s->npad;
        if (!s->packed && s->b_ns == 1) { /* rows of dense columns: read in place */
            pb = b + bo, ldb = s->b_ks, nb = s->n;
        } else if (!s->packed) {
            if (bo != packed_bo)
                odnn_smm_pack_one(s, b + bo, pack);
            packed_bo = bo;
            pb = pack;
        }
        int64_t i1 = i0 + ODNN_SMM_ROWS < s->m ? i0 + ODNN_SMM_ROWS : s->m;
        for (int64_t i = i0; i < i1; i += 4) {
            const float *ar = a + ao + i * s->a_rs;
            float *cr = c + co + i * s->c_rs;
            switch (i1 - i >= 4 ? 4 : (int)(i1 - i)) {
            case 4: odnn_smm_tile(s, 4, ar, pb, ldb, nb, bias, cr); break;
            case 3: odnn_smm_tile(s, 3, ar, pb, ldb, nb, bias, cr); break;
            case 2: odnn_smm_tile(s, 2, ar, pb, ldb, nb, bias, cr); break;
            default: odnn_smm_tile(s, 1, ar, pb, ldb, nb, bias, cr); break;
            }
        }
    }
}

/* ---- one row by a constant matrix ---------------------------------------------
 *
 * Why: a classifier head, a batch-1 MLP or a decode step multiplies one row
 * by a matrix it reads once, as stored: memory-bound, the matrix all its
 * work. oneDNN's gemm:jit streamed it (1x1280x1000: 0.128 ms on 2 threads
 * against brgemm's 0.170 on a packed copy), but the first gemm:jit of a
 * process generates its whole driver, 24 ms, which a small model's first
 * run waited for (ghostnet_050: 30 ms where later runs take 1.4).
 *
 * The kernel. The columns are split between the threads (ranges of whole
 * vectors of 8). Row-major B [K, N] (B_NS 1): each thread sums rows of its
 * range into accumulators of up to ODNN_GEMV_BLOCK columns on its stack,
 * four rows a pass, each row's range read in one sequential run. Transposed
 * B [N, K] (B_KS 1, every nn.Linear's Gemm): each output column is the dot
 * product of A with a row of B, four rows at once (eight accumulators),
 * eight outputs reduced into one vector. Then bias and post-ops in
 * registers (odnn_smm_store), as the small products do. */
#define ODNN_GEMV_BLOCK 512

int odnn_gemv_usable(void)
{
    static int usable = -1;
    if (usable < 0) {
        __builtin_cpu_init();
        usable = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return usable;
}

/* Columns J0..J1 of C (J0 a multiple of 8) from row-major B (rows B_KS
 * floats apart). */
static __attribute__((target("avx2,fma"))) void
odnn_gemv_rows(const struct odnn_smm *s, const float *a, const float *b, const float *bias,
               float *c, int64_t j0, int64_t j1)
{
    float acc[ODNN_GEMV_BLOCK] __attribute__((aligned(32)));
    const int64_t ldb = s->b_ks, k = s->k;
    for (int64_t jb = j0; jb < j1; jb += ODNN_GEMV_BLOCK) {
        int64_t w = j1 - jb < ODNN_GEMV_BLOCK ? j1 - jb : ODNN_GEMV_BLOCK;
        int64_t full = w / 8 * 8, left = w - full;
        __m256i tail = odnn_smm_mask(left);
        memset(acc, 0, (size_t)(full + (left ? 8 : 0)) * sizeof *acc);
        int64_t kk = 0;
        for (; kk + 4 <= k; kk += 4) {
            const float *r0 = b + kk * ldb + jb, *r1 = r0 + ldb, *r2 = r1 + ldb, *r3 = r2 + ldb;
            __m256 a0 = _mm256_set1_ps(a[kk]), a1 = _mm256_set1_ps(a[kk + 1]);
            __m256 a2 = _mm256_set1_ps(a[kk + 2]), a3 = _mm256_set1_ps(a[kk + 3]);
            for (int64_t j = 0; j < full; j += 8) {
                if ((j & 15) == 0 && kk + 8 <= k) {
                    _mm_prefetch((const char *)(r0 + 4 * ldb + j), _MM_HINT_T0);
                    _mm_prefetch((const char *)(r1 + 4 * ldb + j), _MM_HINT_T0);
                    _mm_prefetch((const char *)(r2 + 4 * ldb + j), _MM_HINT_T0);
                    _mm_prefetch((const char *)(r3 + 4 * ldb + j), _MM_HINT_T0);
                }
                __m256 v = _mm256_load_ps(acc + j);
                v = _mm256_fmadd_ps(a0, _mm256_loadu_ps(r0 + j), v);
                v = _mm256_fmadd_ps(a1, _mm256_loadu_ps(r1 + j), v);
                v = _mm256_fmadd_ps(a2, _mm256_loadu_ps(r2 + j), v);
                v = _mm256_fmadd_ps(a3, _mm256_loadu_ps(r3 + j), v);
                _mm256_store_ps(acc + j, v);
            }
            if (left) {
                __m256 v = _mm256_load_ps(acc + full);
                v = _mm256_fmadd_ps(a0, _mm256_maskload_ps(r0 + full, tail), v);
                v = _mm256_fmadd_ps(a1, _mm256_maskload_ps(r1 + full, tail), v);
                v = _mm256_fmadd_ps(a2, _mm256_maskload_ps(r2 + full, tail), v);
                v = _mm256_fmadd_ps(a3, _mm256_maskload_ps(r3 + full, tail), v);
                _mm256_store_ps(acc + full, v);
            }
        }
        for (; kk < k; kk++) {
            const float *r0 = b + kk * ldb + jb;
            __m256 a0 = _mm256_set1_ps(a[kk]);
            for (int64_t j = 0; j < full; j += 8)
                _mm256_store_ps(acc + j, _mm256_fmadd_ps(a0, _mm256_loadu_ps(r0 + j),
                                                         _mm256_load_ps(acc + j)));
            if (left)
                _mm256_store_ps(acc + full,
                                _mm256_fmadd_ps(a0, _mm256_maskload_ps(r0 + full, tail),
                                                _mm256_load_ps(acc + full)));
        }
        for (int64_t j = 0; j < w; j += 8)
            odnn_smm_store(s, _mm256_load_ps(acc + j), bias, c, jb + j);
    }
}

/* A's K values times rows R0..R3 of transposed B: OUT[i] holds the
 * partial sums of row i in its lanes. */
static inline __attribute__((always_inline, target("avx2,fma"))) void
odnn_gemv_dot4(const float *a, const float *r0, const float *r1, const float *r2,
               const float *r3, int64_t k, __m256 out[4])
{
    __m256 s[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        s[i] = _mm256_setzero_ps();
    int64_t kk = 0;
    for (; kk + 16 <= k; kk += 16) {
        __m256 x0 = _mm256_loadu_ps(a + kk), x1 = _mm256_loadu_ps(a + kk + 8);
        s[0] = _mm256_fmadd_ps(x0, _mm256_loadu_ps(r0 + kk), s[0]);
        s[1] = _mm256_fmadd_ps(x1, _mm256_loadu_ps(r0 + kk + 8), s[1]);
        s[2] = _mm256_fmadd_ps(x0, _mm256_loadu_ps(r1 + kk), s[2]);
        s[3] = _mm256_fmadd_ps(x1, _mm256_loadu_ps(r1 + kk + 8), s[3]);
        s[4] = _mm256_fmadd_ps(x0, _mm256_loadu_ps(r2 + kk), s[4]);
        s[5] = _mm256_fmadd_ps(x1, _mm256_loadu_ps(r2 + kk + 8), s[5]);
        s[6] = _mm256_fmadd_ps(x0, _mm256_loadu_ps(r3 + kk), s[6]);
        s[7] = _mm256_fmadd_ps(x1, _mm256_loadu_ps(r3 + kk + 8), s[7]);
    }
    for (; kk < k; kk += 8) {
        __m256i m = odnn_smm_mask(k - kk);
        __m256 x0 = _mm256_maskload_ps(a + kk, m);
        s[0] = _mm256_fmadd_ps(x0, _mm256_maskload_ps(r0 + kk, m), s[0]);
        s[2] = _mm256_fmadd_ps(x0, _mm256_maskload_ps(r1 + kk, m), s[2]);
        s[4] = _mm256_fmadd_ps(x0, _mm256_maskload_ps(r2 + kk, m), s[4]);
        s[6] = _mm256_fmadd_ps(x0, _mm256_maskload_ps(r3 + kk, m), s[6]);
    }
    for (int i = 0; i < 4; i++)
        out[i] = _mm256_add_ps(s[2 * i], s[2 * i + 1]);
}

/* Outputs J0..J1 of C (J0 a multiple of 8) from transposed B (row j of B
 * at B + j * B_NS). Rows past N read row N - 1 again (their lanes are not
 * stored). */
static __attribute__((target("avx2,fma"))) void
odnn_gemv_dots(const struct odnn_smm *s, const float *a, const float *b, const float *bias,
               float *c, int64_t j0, int64_t j1)
{
    const int64_t ld = s->b_ns, k = s->k, last = s->n - 1;
    for (int64_t j = j0; j < j1; j += 8) {
        __m256 r[8];
        for (int h = 0; h < 8; h += 4) {
            const float *p[4];
            for (int i = 0; i < 4; i++)
                p[i] = b + (j + h + i <= last ? j + h + i : last) * ld;
            odnn_gemv_dot4(a, p[0], p[1], p[2], p[3], k, r + h);
        }
        __m256 t0 = _mm256_hadd_ps(r[0], r[1]), t1 = _mm256_hadd_ps(r[2], r[3]);
        __m256 t2 = _mm256_hadd_ps(r[4], r[5]), t3 = _mm256_hadd_ps(r[6], r[7]);
        __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
        __m256 v = _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20),
                                 _mm256_permute2f128_ps(u0, u1, 0x31));
        odnn_smm_store(s, v, bias, c, j);
    }
}

/* Columns J0..J1 on one thread. */
static void odnn_gemv_range(const struct odnn_smm *s, const float *a, const float *b,
                            const float *bias, float *c, int64_t j0, int64_t j1)
{
    if (j0 >= j1)
        return;
    if (s->b_ns == 1)
        odnn_gemv_rows(s, a, b, bias, c, j0, j1);
    else
        odnn_gemv_dots(s, a, b, bias, c, j0, j1);
}

/* Columns a thread takes at least (a quarter of a 4 KB page of a row, and
 * enough rows of a transposed matrix to pay for waking a thread). */
#define ODNN_GEMV_MIN_COLS 64

static void odnn_gemv_run(const struct odnn_smm *s, const float *a, const float *b,
                          const float *bias, float *c, int threads)
{
    int64_t vecs = (s->n + 7) / 8;
    int64_t most = (s->n + ODNN_GEMV_MIN_COLS - 1) / ODNN_GEMV_MIN_COLS;
    int nt = threads > 1 ? (int)(most < threads ? most : threads) : 1;
    if (nt <= 1) {
        odnn_gemv_range(s, a, b, bias, c, 0, s->n);
        return;
    }
#pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num(), n = omp_get_num_threads();
        int64_t j0 = vecs * t / n * 8, j1 = vecs * (t + 1) / n * 8;
        odnn_gemv_range(s, a, b, bias, c, j0, j1 < s->n ? j1 : s->n);
    }
}

void odnn_smm_run(const struct odnn_smm *s, const float *a, const float *b, const float *bias,
                  float *c, int threads, float *scratch)
{
    if (s->gemv) {
        odnn_gemv_run(s, a, b, bias, c, threads);
        return;
    }
    int64_t batch = 1;
    for (int d = 0; d < s->nb; d++)
        batch *= s->bd[d];
    int64_t items = batch * ((s->m + ODNN_SMM_ROWS - 1) / ODNN_SMM_ROWS);
    size_t per = s->packed ? 0 : (odnn_smm_packed_floats(s) * sizeof(float) + 63) / 64 * 64;
    int nt = threads > 1 && items > 1 ? (int)(items < threads ? items : threads) : 1;
    if (nt == 1) {
        odnn_smm_items(s, a, b, bias, c, 0, items, scratch);
        return;
    }
#pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num(), n = omp_get_num_threads();
        float *pack = s->packed ? NULL : (float *)(void *)((char *)scratch + per * (size_t)t);
        odnn_smm_items(s, a, b, bias, c, items * t / n, items * (t + 1) / n, pack);
    }
}
