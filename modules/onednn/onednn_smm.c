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
    if (s->packed)
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

void odnn_smm_run(const struct odnn_smm *s, const float *a, const float *b, const float *bias,
                  float *c, int threads, float *scratch)
{
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
