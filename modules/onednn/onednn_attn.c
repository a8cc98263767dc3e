/* onednn_attn.c — the onednn module's own fused attention on AVX-512:
 * MatMul(Q, K^T) -> [Mul or Div by a scalar] -> [Add a bias] ->
 * [Where(condition, scores, a scalar), either way round] -> [Add a mask]
 * -> [Max by a scalar] ->
 * Softmax over the keys -> MatMul(., V), as one step (Reshapes that
 * regroup the batch dims between are the compile's business).
 *
 * Why: unfused, the scores of every head are written to memory and read
 * back twice (softmax, then the second product). At Whisper-base's 1500
 * positions that is 72 MB a layer: oneDNN's QK^T took 20 ms a layer
 * (gemm:jit on the views, 115 GFLOP/s, against 205 for the model's
 * dense layers), its softmax 12.3 ms (memory-bound) and P x V 12.7 ms,
 * 271 of the encoder's 560 ms. ONNX Runtime took 516 in all.
 *
 * The kernel. Work items are (batch entry, block of query rows); a
 * thread takes a contiguous range of them, so it packs the keys and
 * values of an entry once (K^T into panels of 16 keys [panel][d][16],
 * V into rows of DVPAD floats; zeros after the last key and value
 * column) and reuses them for all its blocks of that entry. For a block
 * it packs the queries dense, computes the block's scores into its
 * scratch (a register tile of 12 rows by 32 keys, 24 accumulators, the
 * queries broadcast), applies the scale and the mask and the softmax's
 * max and exp in place, row by row, while the block is in L2, and
 * multiplies by V (a tile of 6 rows by 64 value columns), dividing by the
 * row's sum at the store. Every operand is read through strides (a
 * broadcast dim has stride 0), so Reshape and Transpose views need no
 * copy; the output's columns are dense.
 *
 * Numbers as ONNX defines them but for the order of rounding: the
 * normalisation is applied to P x V's rows instead of P. A row whose
 * scores are all -inf gives NaN, as exp(-inf - -inf) does in the graph,
 * or 0 where the graph replaces the Softmax's NaN by 0 (safe: torch 2's
 * exporters' Where(IsNaN(p), 0, p); the Softmax makes whole rows NaN). */
#include "onednn.h"

#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#define ODNN_ATTN_FN static inline __attribute__((always_inline, target("avx512f")))

/* Score tile: rows by 32 keys; value tile: rows by 64 value columns. */
#define ODNN_ATTN_SROWS 12
#define ODNN_ATTN_VROWS 6

static int64_t odnn_attn_up16(int64_t x)
{
    return (x + 15) / 16 * 16;
}

/* Query rows a work item takes: a multiple of 12 whose scores fill about
 * 192 KiB (in L2 with the entry's packed keys and values), 12 to 96, the
 * blocks of a head about even. */
int64_t odnn_attn_block_rows(const struct odnn_attn *a)
{
    int64_t rows = (int64_t)(49152 / odnn_attn_up16(a->n)) / ODNN_ATTN_SROWS * ODNN_ATTN_SROWS;
    if (rows < ODNN_ATTN_SROWS)
        rows = ODNN_ATTN_SROWS;
    if (rows > 96)
        rows = 96;
    /* as many blocks as that takes, evened out: 197 queries in blocks of
     * 72, 72 and 53, not 96, 96 and 5 */
    int64_t blocks = (a->s + rows - 1) / rows;
    int64_t even = (a->s + blocks - 1) / blocks;
    return (even + ODNN_ATTN_SROWS - 1) / ODNN_ATTN_SROWS * ODNN_ATTN_SROWS;
}

/* Floats of one thread's scratch, each part 64-byte aligned: packed K^T,
 * packed V, the queries of a block and its scores. */
static size_t odnn_attn_part(int64_t floats)
{
    return (size_t)(floats + 15) / 16 * 16;
}

static size_t odnn_attn_thread_floats(const struct odnn_attn *a)
{
    int64_t np = odnn_attn_up16(a->n), rows = odnn_attn_block_rows(a);
    return odnn_attn_part(np * a->d) + odnn_attn_part(np * odnn_attn_up16(a->dv)) +
           odnn_attn_part(rows * a->d) + odnn_attn_part(rows * np);
}

size_t odnn_attn_scratch_bytes(const struct odnn_attn *a, int threads)
{
    return odnn_attn_thread_floats(a) * sizeof(float) * (size_t)(threads > 0 ? threads : 1);
}

/* exp(x) for x <= 0 or NaN (x minus its row's max): 2^n e^r with
 * n = round(x log2 e), r = x - n ln 2 in two parts, a degree-6
 * polynomial; 0 below -87.3 (no denormals reach the product by V), NaN
 * stays NaN. */
ODNN_ATTN_FN __m512 odnn_attn_exp(__m512 x)
{
    __m512 c = _mm512_max_ps(x, _mm512_set1_ps(-87.3f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(c, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), c);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.0f / 720.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    __m512 y = _mm512_scalef_ps(p, n);
    y = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3f), _CMP_GE_OQ), y);
    return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}

/* K^T of one entry (K(d, j) at K[d * K_DS + j * K_NS]) into panels of 16
 * keys, [panel][d][16], zeros after N; V (V(j, c) at V[j * V_NS + c *
 * V_CS]) into N rows of DVPAD floats, zeros after DV. */
static void odnn_attn_pack(const struct odnn_attn *a, const float *k, const float *v, float *kp,
                           float *vp)
{
    int64_t dvpad = odnn_attn_up16(a->dv);
    for (int64_t p = 0; p < a->n; p += 16) {
        float *panel = kp + p * a->d;
        int64_t w = a->n - p < 16 ? a->n - p : 16;
        for (int64_t d = 0; d < a->d; d++) {
            const float *src = k + d * a->k_ds + p * a->k_ns;
            float *row = panel + d * 16;
            if (a->k_ns == 1) {
                memcpy(row, src, (size_t)w * sizeof *row);
            } else {
                for (int64_t j = 0; j < w; j++)
                    row[j] = src[j * a->k_ns];
            }
            for (int64_t j = w; j < 16; j++)
                row[j] = 0.0f;
        }
    }
    for (int64_t j = 0; j < a->n; j++) {
        const float *src = v + j * a->v_ns;
        float *row = vp + j * dvpad;
        if (a->v_cs == 1) {
            memcpy(row, src, (size_t)a->dv * sizeof *row);
        } else {
            for (int64_t c = 0; c < a->dv; c++)
                row[c] = src[c * a->v_cs];
        }
        for (int64_t c = a->dv; c < dvpad; c++)
            row[c] = 0.0f;
    }
}

/* Scores of R query rows (QP, dense rows of D) by panels P and P + 1 (or
 * P alone: TWO 0) of KP into S (rows of SLD floats) at key P * 16. */
ODNN_ATTN_FN void odnn_attn_scores_tile(int r, int two, int64_t d, const float *qp,
                                        const float *kp0, float *s, int64_t sld)
{
    __m512 acc[ODNN_ATTN_SROWS][2];
#pragma GCC unroll 12
    for (int i = 0; i < ODNN_ATTN_SROWS; i++)
        acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    const float *kp1 = kp0 + 16 * d;
    for (int64_t k = 0; k < d; k++) {
        __m512 b0 = _mm512_load_ps(kp0 + k * 16);
        __m512 b1 = two ? _mm512_load_ps(kp1 + k * 16) : b0;
#pragma GCC unroll 12
        for (int i = 0; i < ODNN_ATTN_SROWS; i++) {
            if (i < r) {
                __m512 q = _mm512_set1_ps(qp[i * d + k]);
                acc[i][0] = _mm512_fmadd_ps(q, b0, acc[i][0]);
                if (two)
                    acc[i][1] = _mm512_fmadd_ps(q, b1, acc[i][1]);
            }
        }
    }
#pragma GCC unroll 12
    for (int i = 0; i < ODNN_ATTN_SROWS; i++) {
        if (i < r) {
            _mm512_store_ps(s + i * sld, acc[i][0]);
            if (two)
                _mm512_store_ps(s + i * sld + 16, acc[i][1]);
        }
    }
}

/* The instances the row loop calls: full tiles with the count known. */
static __attribute__((target("avx512f"))) void odnn_attn_scores12(int two, int64_t d,
                                                                  const float *qp,
                                                                  const float *kp, float *s,
                                                                  int64_t sld)
{
    if (two)
        odnn_attn_scores_tile(ODNN_ATTN_SROWS, 1, d, qp, kp, s, sld);
    else
        odnn_attn_scores_tile(ODNN_ATTN_SROWS, 0, d, qp, kp, s, sld);
}

/* A block's last tile, of fewer rows: each count its own instance (a
 * count known only at run time leaves a test per row in the inner loop;
 * ViT-B's 197 queries end in such a tile). */
#define ODNN_ATTN_SCORES_R(R)                                                                      \
    case R:                                                                                        \
        if (two)                                                                                   \
            odnn_attn_scores_tile(R, 1, d, qp, kp, s, sld);                                        \
        else                                                                                       \
            odnn_attn_scores_tile(R, 0, d, qp, kp, s, sld);                                        \
        break;
static __attribute__((target("avx512f"))) void odnn_attn_scores_any(int r, int two, int64_t d,
                                                                    const float *qp,
                                                                    const float *kp, float *s,
                                                                    int64_t sld)
{
    switch (r) {
        ODNN_ATTN_SCORES_R(1)
        ODNN_ATTN_SCORES_R(2)
        ODNN_ATTN_SCORES_R(3)
        ODNN_ATTN_SCORES_R(4)
        ODNN_ATTN_SCORES_R(5)
        ODNN_ATTN_SCORES_R(6)
        ODNN_ATTN_SCORES_R(7)
        ODNN_ATTN_SCORES_R(8)
        ODNN_ATTN_SCORES_R(9)
        ODNN_ATTN_SCORES_R(10)
        ODNN_ATTN_SCORES_R(11)
    default:
        odnn_attn_scores_tile(r, two, d, qp, kp, s, sld);
        break;
    }
}
#undef ODNN_ATTN_SCORES_R

/* Lanes of the 16 condition bytes from C[J * C_CS] (LANES of them) that
 * are not 0. */
static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vl"))) __mmask16
odnn_attn_cond(const struct odnn_attn *a, const uint8_t *c, int64_t j,
                                      __mmask16 lanes)
{
    if (a->c_cs == 1) {
        __m512i b = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(lanes, c + j));
        return _mm512_test_epi32_mask(b, b);
    }
    if (a->c_cs == 0)
        return c[0] != 0 ? lanes : 0;
    unsigned bits = 0;
    for (int t = 0; t < 16; t++)
        if ((lanes >> t & 1u) && c[(j + t) * a->c_cs] != 0)
            bits |= 1u << t;
    return (__mmask16)bits;
}

/* Row of the additive operand M (J on at stride CS: 1, 0 or other) in
 * LANES of 16 at column J. */
static inline __attribute__((always_inline, target("avx512f"))) __m512
odnn_attn_row16(const float *m, int64_t cs, int64_t j, int64_t n, __mmask16 lanes)
{
    if (cs == 1)
        return _mm512_maskz_loadu_ps(lanes, m + j);
    if (cs == 0)
        return _mm512_maskz_mov_ps(lanes, _mm512_set1_ps(m[0]));
    float tmp[16];
    for (int64_t t = 0; t < 16; t++)
        tmp[t] = j + t < n ? m[(j + t) * cs] : 0.0f;
    return _mm512_loadu_ps(tmp);
}

/* One row of N scores at S: scale, bias (the row's B, or none), select
 * (the row's condition C, or none), mask (M(j) at M[j * M_CS], or none),
 * floor, then exp(x - max) in place; returns the sum. */
static __attribute__((target("avx512f,avx512bw,avx512vl"))) float
odnn_attn_softmax_row(const struct odnn_attn *a, float *s, const float *m, const uint8_t *c,
                      const float *bias)
{
    int64_t n = a->n;
    __m512 mx = _mm512_set1_ps(-INFINITY);
    __m512 sc = _mm512_set1_ps(a->scale);
    int nan = 0;
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 lanes = n - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j)) - 1u);
        __m512 x = _mm512_maskz_load_ps(lanes, s + j);
        if (a->scale_op == ODNN_ATTN_MUL)
            x = _mm512_mul_ps(x, sc);
        else if (a->scale_op == ODNN_ATTN_DIV)
            x = _mm512_div_ps(x, sc);
        if (bias != NULL)
            x = _mm512_add_ps(x, odnn_attn_row16(bias, a->b_cs, j, n, lanes));
        if (c != NULL) { /* Where: the score where the condition is KEEP, else FILL */
            __mmask16 set = odnn_attn_cond(a, c, j, lanes);
            __mmask16 keep = a->keep ? set : (__mmask16)(~set & lanes);
            x = _mm512_mask_blend_ps(keep, _mm512_set1_ps(a->fill), x);
        }
        if (m != NULL)
            x = _mm512_add_ps(x, odnn_attn_row16(m, a->m_cs, j, n, lanes));
        if (a->has_floor) /* max(floor, x) gives x when x is NaN */
            x = _mm512_max_ps(_mm512_set1_ps(a->floor), x);
        nan |= _mm512_mask_cmp_ps_mask(lanes, x, x, _CMP_UNORD_Q) != 0;
        _mm512_mask_store_ps(s + j, lanes, x);
        mx = _mm512_mask_max_ps(mx, lanes, mx, x);
    }
    /* max ignores NaN: a NaN score makes the row NaN, as in the graph */
    float rmax = nan ? NAN : _mm512_reduce_max_ps(mx);
    __m512 vmax = _mm512_set1_ps(rmax);
    __m512 sum = _mm512_setzero_ps();
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 lanes = n - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j)) - 1u);
        __m512 e = odnn_attn_exp(_mm512_sub_ps(_mm512_maskz_load_ps(lanes, s + j), vmax));
        e = _mm512_maskz_mov_ps(lanes, e);
        _mm512_store_ps(s + j, e); /* the padding keys' P is 0 */
        sum = _mm512_add_ps(sum, e);
    }
    return _mm512_reduce_add_ps(sum);
}

/* O rows (R of them) = P (rows of SLD floats) x VP (N rows of DVPAD) for
 * value columns C0 .. C0 + 16 NV, each row times INV[i], into O (rows of
 * O_RS floats; the last vector's LAST lanes only). */
ODNN_ATTN_FN void odnn_attn_values_tile(int r, int nv, const struct odnn_attn *a, const float *p,
                                        int64_t sld, const float *vp, int64_t dvpad, int64_t c0,
                                        const float *inv, float *o, __mmask16 last)
{
    __m512 acc[ODNN_ATTN_VROWS][4];
#pragma GCC unroll 6
    for (int i = 0; i < ODNN_ATTN_VROWS; i++)
        acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = _mm512_setzero_ps();
    const float *vc = vp + c0;
    for (int64_t j = 0; j < a->n; j++) {
        __m512 v[4];
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++)
            v[c] = c < nv ? _mm512_load_ps(vc + j * dvpad + 16 * c) : _mm512_setzero_ps();
#pragma GCC unroll 6
        for (int i = 0; i < ODNN_ATTN_VROWS; i++) {
            if (i < r) {
                __m512 pv = _mm512_set1_ps(p[i * sld + j]);
#pragma GCC unroll 4
                for (int c = 0; c < 4; c++)
                    if (c < nv)
                        acc[i][c] = _mm512_fmadd_ps(pv, v[c], acc[i][c]);
            }
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < ODNN_ATTN_VROWS; i++) {
        if (i < r) {
            __m512 sc = _mm512_set1_ps(inv[i]);
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++) {
                if (c < nv) {
                    __mmask16 lanes = c == nv - 1 ? last : (__mmask16)0xffff;
                    _mm512_mask_storeu_ps(o + i * a->o_rs + c0 + 16 * c, lanes,
                                          _mm512_mul_ps(acc[i][c], sc));
                }
            }
        }
    }
}

static __attribute__((target("avx512f"))) void
odnn_attn_values6(int nv, const struct odnn_attn *a, const float *p, int64_t sld, const float *vp,
                  int64_t dvpad, int64_t c0, const float *inv, float *o, __mmask16 last)
{
    switch (nv) {
    case 4: odnn_attn_values_tile(ODNN_ATTN_VROWS, 4, a, p, sld, vp, dvpad, c0, inv, o, last); break;
    case 3: odnn_attn_values_tile(ODNN_ATTN_VROWS, 3, a, p, sld, vp, dvpad, c0, inv, o, last); break;
    case 2: odnn_attn_values_tile(ODNN_ATTN_VROWS, 2, a, p, sld, vp, dvpad, c0, inv, o, last); break;
    default: odnn_attn_values_tile(ODNN_ATTN_VROWS, 1, a, p, sld, vp, dvpad, c0, inv, o, last); break;
    }
}

#define ODNN_ATTN_VALUES_R(R)                                                                      \
    case R:                                                                                        \
        switch (nv) {                                                                              \
        case 4: odnn_attn_values_tile(R, 4, a, p, sld, vp, dvpad, c0, inv, o, last); break;        \
        case 3: odnn_attn_values_tile(R, 3, a, p, sld, vp, dvpad, c0, inv, o, last); break;        \
        case 2: odnn_attn_values_tile(R, 2, a, p, sld, vp, dvpad, c0, inv, o, last); break;        \
        default: odnn_attn_values_tile(R, 1, a, p, sld, vp, dvpad, c0, inv, o, last); break;       \
        }                                                                                          \
        break;
static __attribute__((target("avx512f"))) void
odnn_attn_values_any(int r, int nv, const struct odnn_attn *a, const float *p, int64_t sld,
                     const float *vp, int64_t dvpad, int64_t c0, const float *inv, float *o,
                     __mmask16 last)
{
    switch (r) {
        ODNN_ATTN_VALUES_R(1)
        ODNN_ATTN_VALUES_R(2)
        ODNN_ATTN_VALUES_R(3)
        ODNN_ATTN_VALUES_R(4)
        ODNN_ATTN_VALUES_R(5)
    default:
        odnn_attn_values_tile(r, nv, a, p, sld, vp, dvpad, c0, inv, o, last);
        break;
    }
}
#undef ODNN_ATTN_VALUES_R

/* The offsets of batch entry E in Q, K, V, the mask, O, the condition and
 * the bias (in elements). */
static void odnn_attn_entry(const struct odnn_attn *a, int64_t e, int64_t off[7])
{
    memset(off, 0, 7 * sizeof *off);
    for (int d = a->nb - 1; d >= 0; d--) {
        int64_t i = e % a->bd[d];
        e /= a->bd[d];
        for (int t = 0; t < 7; t++)
            off[t] += i * a->bs[t][d];
    }
}

/* Work items FIRST to LAST (entry-major query blocks) on one thread with
 * its scratch W. */
static __attribute__((target("avx512f,avx512bw,avx512vl"))) void
odnn_attn_items(const struct odnn_attn *a, const float *q, const float *k, const float *v,
                const float *m, const uint8_t *c, const float *bias, float *o, int64_t first,
                int64_t last, float *w)
{
    int64_t np = odnn_attn_up16(a->n), dvpad = odnn_attn_up16(a->dv);
    int64_t rows = odnn_attn_block_rows(a), blocks = (a->s + rows - 1) / rows;
    float *kp = w, *vp = kp + odnn_attn_part(np * a->d);
    float *qp = vp + odnn_attn_part(np * dvpad), *sb = qp + odnn_attn_part(rows * a->d);
    int64_t packed = -1;
    float inv[96];
    for (int64_t it = first; it < last; it++) {
        int64_t e = it / blocks, i0 = it % blocks * rows;
        int64_t i1 = i0 + rows < a->s ? i0 + rows : a->s;
        int64_t off[7];
        odnn_attn_entry(a, e, off);
        if (e != packed)
            odnn_attn_pack(a, k + off[ODNN_ATTN_K], v + off[ODNN_ATTN_V], kp, vp);
        packed = e;
        for (int64_t i = i0; i < i1; i++) { /* the block's queries, dense */
            const float *src = q + off[ODNN_ATTN_Q] + i * a->q_rs;
            float *row = qp + (i - i0) * a->d;
            if (a->q_cs == 1) {
                memcpy(row, src, (size_t)a->d * sizeof *row);
            } else {
                for (int64_t c = 0; c < a->d; c++)
                    row[c] = src[c * a->q_cs];
            }
        }
        for (int64_t i = i0; i < i1; i += ODNN_ATTN_SROWS) {
            int r = i1 - i >= ODNN_ATTN_SROWS ? ODNN_ATTN_SROWS : (int)(i1 - i);
            const float *qr = qp + (i - i0) * a->d;
            float *sr = sb + (i - i0) * np;
            for (int64_t p = 0; p < np; p += 32) {
                int two = p + 16 < np;
                if (r == ODNN_ATTN_SROWS)
                    odnn_attn_scores12(two, a->d, qr, kp + p * a->d, sr + p, np);
                else
                    odnn_attn_scores_any(r, two, a->d, qr, kp + p * a->d, sr + p, np);
            }
        }
        for (int64_t i = i0; i < i1; i++) {
            const float *mr = a->has_mask ? m + off[ODNN_ATTN_M] + i * a->m_rs : NULL;
            const uint8_t *cr = a->has_select ? c + off[ODNN_ATTN_C] + i * a->c_rs : NULL;
            const float *br = a->has_bias ? bias + off[ODNN_ATTN_B] + i * a->b_rs : NULL;
            float sum = odnn_attn_softmax_row(a, sb + (i - i0) * np, mr, cr, br);
            inv[i - i0] = 1.0f / sum;
            if (a->safe && isnan(sum)) { /* the graph's Where(IsNaN(p), 0, p): P's row 0 */
                memset(sb + (i - i0) * np, 0, (size_t)np * sizeof *sb);
                inv[i - i0] = 0.0f;
            }
        }
        __mmask16 lastm = (a->dv % 16) != 0 ? (__mmask16)((1u << (a->dv % 16)) - 1u)
                                            : (__mmask16)0xffff;
        for (int64_t c0 = 0; c0 < a->dv; c0 += 64) {
            int nv = (int)((a->dv - c0 + 15) / 16 < 4 ? (a->dv - c0 + 15) / 16 : 4);
            __mmask16 lanes = c0 + 64 >= a->dv ? lastm : (__mmask16)0xffff;
            for (int64_t i = i0; i < i1; i += ODNN_ATTN_VROWS) {
                int r = i1 - i >= ODNN_ATTN_VROWS ? ODNN_ATTN_VROWS : (int)(i1 - i);
                float *orow = o + off[ODNN_ATTN_O] + i * a->o_rs;
                const float *pr = sb + (i - i0) * np;
                if (r == ODNN_ATTN_VROWS)
                    odnn_attn_values6(nv, a, pr, np, vp, dvpad, c0, inv + (i - i0), orow, lanes);
                else
                    odnn_attn_values_any(r, nv, a, pr, np, vp, dvpad, c0, inv + (i - i0), orow,
                                         lanes);
            }
        }
    }
}

void odnn_attn_run(const struct odnn_attn *a, const float *q, const float *k, const float *v,
                   const float *m, const uint8_t *c, const float *bias, float *o, int threads,
                   float *scratch)
{
    int64_t batch = 1;
    for (int d = 0; d < a->nb; d++)
        batch *= a->bd[d];
    int64_t rows = odnn_attn_block_rows(a);
    int64_t items = batch * ((a->s + rows - 1) / rows);
    size_t per = odnn_attn_thread_floats(a);
    if (threads > a->threads)
        threads = a->threads;
    int nt = threads > 1 && items > 1 ? (int)(items < threads ? items : threads) : 1;
    if (nt == 1) {
        odnn_attn_items(a, q, k, v, m, c, bias, o, 0, items, scratch);
        return;
    }
#pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num(), n = omp_get_num_threads();
        odnn_attn_items(a, q, k, v, m, c, bias, o, items * t / n, items * (t + 1) / n,
                        scratch + per * (size_t)t);
    }
}
