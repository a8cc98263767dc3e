/* fft.c — mixed-radix Cooley-Tukey with Bluestein's transform for lengths
 * with a large prime factor (see fft.h).
 *
 * The mixed-radix transform is decimation in time, out of place: a stage
 * of radix p over sub-transforms of length m reads its input at a stride
 * and combines p results of length m with the twiddles of the whole
 * length (index q * k * stride mod N). Radix 4 and 2 have their own
 * butterflies; other radices (3, 5, 7, ...) sum p terms per output. */
#include "fft.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define FFT_PI 3.14159265358979323846
#define FFT_MAX_FACTORS 64
/* Lengths past this are not planned (a plan's tables would not fit). */
#define FFT_MAX_N ((size_t)1 << 36)

struct cpu_fft {
    size_t n;
    size_t n_factors;              /* pairs (radix, remaining length) */
    size_t factors[2 * FFT_MAX_FACTORS];
    size_t max_radix;              /* 0: Bluestein */
    const double *tw;              /* n twiddles e^(-2 pi i k / n) */
    /* Bluestein */
    size_t m;                      /* power of two >= 2n - 1 */
    const cpu_fft *sub;            /* the plan of m */
    const double *chirp;           /* n values e^(-pi i j^2 / n) */
    const double *bspec;           /* m values: the transform of the conjugate chirp */
};

static size_t fft_round(size_t bytes)
{
    return (bytes + 15) & ~(size_t)15;
}

/* N's factors as (radix, remaining) pairs into F: fours first, then twos,
 * then odd factors upwards. False when a factor passes CPU_FFT_MAX_RADIX. */
static bool fft_factor(size_t n, size_t *f, size_t *n_pairs, size_t *max_radix)
{
    size_t k = 0, p = 4, biggest = 1;
    while (n > 1) {
        while (n % p != 0) {
            p = p == 4 ? 2 : p == 2 ? 3 : p + 2;
            if (p * p > n)
                p = n;
        }
        if (p > CPU_FFT_MAX_RADIX || k == FFT_MAX_FACTORS)
            return false;
        n /= p;
        f[2 * k] = p;
        f[2 * k + 1] = n;
        k++;
        if (p > biggest)
            biggest = p;
    }
    *n_pairs = k;
    *max_radix = biggest;
    return true;
}

static size_t fft_pow2_at_least(size_t v)
{
    size_t m = 1;
    while (m < v)
        m <<= 1;
    return m;
}

size_t cpu_fft_bytes(size_t n)
{
    if (n == 0 || n > FFT_MAX_N)
        return 0;
    size_t f[2 * FFT_MAX_FACTORS], pairs, radix;
    size_t head = fft_round(sizeof(cpu_fft));
    if (fft_factor(n, f, &pairs, &radix))
        return head + fft_round(n * 2 * sizeof(double));
    size_t m = fft_pow2_at_least(2 * n - 1);
    /* the chirp, the kernel's spectrum, room for the kernel while it is
     * transformed, and the plan of m */
    return head + fft_round(n * 2 * sizeof(double)) + 2 * fft_round(m * 2 * sizeof(double)) +
           cpu_fft_bytes(m);
}

static void fft_twiddles(double *tw, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        double ang = -2.0 * FFT_PI * (double)k / (double)n;
        tw[2 * k] = cos(ang);
        tw[2 * k + 1] = sin(ang);
    }
}

cpu_fft *cpu_fft_init(void *mem, size_t n)
{
    cpu_fft *p = mem;
    memset(p, 0, sizeof *p);
    p->n = n;
    char *at = (char *)mem + fft_round(sizeof(cpu_fft));
    if (fft_factor(n, p->factors, &p->n_factors, &p->max_radix)) {
        fft_twiddles((double *)(void *)at, n);
        p->tw = (const double *)(void *)at;
        return p;
    }
    p->max_radix = 0;
    size_t m = fft_pow2_at_least(2 * n - 1);
    p->m = m;
    double *chirp = (double *)(void *)at;
    at += fft_round(n * 2 * sizeof(double));
    double *bspec = (double *)(void *)at;
    at += fft_round(m * 2 * sizeof(double));
    double *b = (double *)(void *)at;
    at += fft_round(m * 2 * sizeof(double));
    p->sub = cpu_fft_init(at, m);
    /* e^(-pi i j^2 / n), j^2 reduced mod 2n in integers first */
    for (size_t j = 0; j < n; j++) {
        uint64_t sq = (uint64_t)j * j % (2 * (uint64_t)n);
        double ang = -FFT_PI * (double)sq / (double)n;
        chirp[2 * j] = cos(ang);
        chirp[2 * j + 1] = sin(ang);
    }
    /* the kernel conj(chirp[|l|]) for l in (-n, n), wrapped mod m */
    memset(b, 0, m * 2 * sizeof(double));
    for (size_t j = 0; j < n; j++) {
        b[2 * j] = chirp[2 * j];
        b[2 * j + 1] = -chirp[2 * j + 1];
        if (j > 0) {
            b[2 * (m - j)] = chirp[2 * j];
            b[2 * (m - j) + 1] = -chirp[2 * j + 1];
        }
    }
    /* a power of two needs no scratch */
    cpu_fft_forward(p->sub, b, bspec, NULL);
    p->chirp = chirp;
    p->bspec = bspec;
    return p;
}

size_t cpu_fft_length(const cpu_fft *p)
{
    return p->n;
}

size_t cpu_fft_scratch(const cpu_fft *p)
{
    if (p->max_radix == 0)
        return 2 * p->m + cpu_fft_scratch(p->sub);
    return p->max_radix > 4 ? p->max_radix : 0;
}

/* ---- the mixed-radix stages --------------------------------------------------------- */

static void fft_radix2(const cpu_fft *p, double *out, size_t fstride, size_t m)
{
    double *a = out, *b = out + 2 * m;
    for (size_t k = 0; k < m; k++) {
        const double *w = p->tw + 2 * k * fstride;
        double br = b[2 * k] * w[0] - b[2 * k + 1] * w[1];
        double bi = b[2 * k] * w[1] + b[2 * k + 1] * w[0];
        b[2 * k] = a[2 * k] - br;
        b[2 * k + 1] = a[2 * k + 1] - bi;
        a[2 * k] += br;
        a[2 * k + 1] += bi;
    }
}

static void fft_radix4(const cpu_fft *p, double *out, size_t fstride, size_t m)
{
    double *o0 = out, *o1 = out + 2 * m, *o2 = out + 4 * m, *o3 = out + 6 * m;
    for (size_t k = 0; k < m; k++) {
        const double *w1 = p->tw + 2 * k * fstride, *w2 = p->tw + 4 * k * fstride,
                     *w3 = p->tw + 6 * k * fstride;
        double s0r = o0[2 * k], s0i = o0[2 * k + 1];
        double s1r = o1[2 * k] * w1[0] - o1[2 * k + 1] * w1[1];
        double s1i = o1[2 * k] * w1[1] + o1[2 * k + 1] * w1[0];
        double s2r = o2[2 * k] * w2[0] - o2[2 * k + 1] * w2[1];
        double s2i = o2[2 * k] * w2[1] + o2[2 * k + 1] * w2[0];
        double s3r = o3[2 * k] * w3[0] - o3[2 * k + 1] * w3[1];
        double s3i = o3[2 * k] * w3[1] + o3[2 * k + 1] * w3[0];
        double t0r = s0r + s2r, t0i = s0i + s2i, t1r = s0r - s2r, t1i = s0i - s2i;
        double t2r = s1r + s3r, t2i = s1i + s3i, t3r = s1r - s3r, t3i = s1i - s3i;
        o0[2 * k] = t0r + t2r;
        o0[2 * k + 1] = t0i + t2i;
        o2[2 * k] = t0r - t2r;
        o2[2 * k + 1] = t0i - t2i;
        /* W_4 = -i: out[k + m] = t1 - i t3, out[k + 3m] = t1 + i t3 */
        o1[2 * k] = t1r + t3i;
        o1[2 * k + 1] = t1i - t3r;
        o3[2 * k] = t1r - t3i;
        o3[2 * k + 1] = t1i + t3r;
    }
}

/* Radix P: out[k] = sum_q Y_q[k mod m] e^(-2 pi i q k / (p m)). */
static void fft_radix_any(const cpu_fft *p, double *out, size_t fstride, size_t m, size_t radix,
                          double *scratch)
{
    size_t n = p->n;
    for (size_t u = 0; u < m; u++) {
        for (size_t q = 0; q < radix; q++) {
            scratch[2 * q] = out[2 * (u + q * m)];
            scratch[2 * q + 1] = out[2 * (u + q * m) + 1];
        }
        for (size_t q1 = 0; q1 < radix; q1++) {
            size_t k = u + q1 * m, step = fstride * k, at = 0;
            double re = scratch[0], im = scratch[1];
            for (size_t q = 1; q < radix; q++) {
                at += step;
                if (at >= n)
                    at -= n;
                const double *w = p->tw + 2 * at;
                re += scratch[2 * q] * w[0] - scratch[2 * q + 1] * w[1];
                im += scratch[2 * q] * w[1] + scratch[2 * q + 1] * w[0];
            }
            out[2 * k] = re;
            out[2 * k + 1] = im;
        }
    }
}

static void fft_work(const cpu_fft *p, double *out, const double *in, size_t fstride,
                     const size_t *f, double *scratch)
{
    size_t radix = f[0], m = f[1];
    if (m == 1) {
        for (size_t j = 0; j < radix; j++) {
            out[2 * j] = in[2 * j * fstride];
            out[2 * j + 1] = in[2 * j * fstride + 1];
        }
    } else {
        for (size_t j = 0; j < radix; j++)
            fft_work(p, out + 2 * j * m, in + 2 * j * fstride, fstride * radix, f + 2, scratch);
    }
    if (radix == 2)
        fft_radix2(p, out, fstride, m);
    else if (radix == 4)
        fft_radix4(p, out, fstride, m);
    else
        fft_radix_any(p, out, fstride, m, radix, scratch);
}

void cpu_fft_forward(const cpu_fft *p, const double *in, double *out, double *scratch)
{
    size_t n = p->n;
    if (p->max_radix != 0) {
        if (n == 1) {
            out[0] = in[0];
            out[1] = in[1];
            return;
        }
        fft_work(p, out, in, 1, p->factors, scratch);
        return;
    }
    /* Bluestein: X_k = c_k sum_j (x_j c_j) conj(c_(k-j)), the sum a
     * circular convolution of length m done with the plan of m */
    size_t m = p->m;
    double *a = scratch, *fa = scratch + 2 * m, *rest = scratch + 4 * m;
    const double *c = p->chirp, *b = p->bspec;
    for (size_t j = 0; j < n; j++) {
        a[2 * j] = in[2 * j] * c[2 * j] - in[2 * j + 1] * c[2 * j + 1];
        a[2 * j + 1] = in[2 * j] * c[2 * j + 1] + in[2 * j + 1] * c[2 * j];
    }
    memset(a + 2 * n, 0, (m - n) * 2 * sizeof(double));
    cpu_fft_forward(p->sub, a, fa, rest);
    /* the inverse through the forward transform: conj(F(conj(A B))) / m */
    for (size_t k = 0; k < m; k++) {
        double re = fa[2 * k] * b[2 * k] - fa[2 * k + 1] * b[2 * k + 1];
        double im = fa[2 * k] * b[2 * k + 1] + fa[2 * k + 1] * b[2 * k];
        a[2 * k] = re;
        a[2 * k + 1] = -im;
    }
    cpu_fft_forward(p->sub, a, fa, rest);
    double inv = 1.0 / (double)m;
    for (size_t k = 0; k < n; k++) {
        double re = fa[2 * k] * inv, im = -fa[2 * k + 1] * inv;
        out[2 * k] = re * c[2 * k] - im * c[2 * k + 1];
        out[2 * k + 1] = re * c[2 * k + 1] + im * c[2 * k];
    }
}
