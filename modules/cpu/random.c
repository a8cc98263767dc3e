/* random.c — the cpu module's random generators: RandomNormal,
 * RandomUniform, RandomNormalLike, RandomUniformLike, Bernoulli and
 * Multinomial, for f32, f64, f16 and bf16 (Bernoulli's and Multinomial's
 * outputs of their own types).
 *
 * The generator is counter-based: value i of a run is a function of the
 * kernel's key, the run's number and i (SplitMix64's finaliser over their
 * sum), so chunks of the pool compute any part of a tensor in any order
 * and a run gives the same values however many threads it has. The key is
 * the seed attribute's bits when the node has one (runs 0, 1, 2... of a
 * seeded kernel repeat from one session to the next, as ONNX Runtime's
 * seeded generator does; the values are not its values: the spec leaves
 * the algorithm open), else drawn when the kernel is made. Each run takes
 * the next run number (an atomic counter), so two runs never repeat each
 * other, concurrent ones included.
 *
 * Uniform: [low, high) from 53 (f64) or 24 (others) random bits. Normal:
 * Box-Muller on two uniforms per value, the first in (0, 1]. Bernoulli:
 * 1 where a uniform falls below the input's probability (a probability
 * outside [0, 1] is an error, as in ONNX Runtime). Multinomial: per batch
 * row, the classes' exp(x - max) summed into a cumulative table, and each
 * sample the first class whose cumulative share passes a uniform. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "index_kernel.h"

static pl_status *rnd_build(pl_module_ctx *ctx, const pl_node_desc *node,
                            pl_kernel **out_kernel);

const cpu_op_entry cpu_ops_random[] = {
    {"RandomNormal", rnd_build, 0, 0, 0, CPU_OP_ANY_DTYPE},
    {"RandomUniform", rnd_build, 0, 0, 0, CPU_OP_ANY_DTYPE},
    {"RandomNormalLike", rnd_build, 1, 1, 0, CPU_OP_ANY_DTYPE},
    {"RandomUniformLike", rnd_build, 1, 1, 0, CPU_OP_ANY_DTYPE},
    {"Bernoulli", rnd_build, 1, 1, 0, CPU_OP_ANY_DTYPE},
    {"Multinomial", rnd_build, 1, 1, 0, CPU_OP_ANY_DTYPE},
    {NULL, NULL, 0, 0, 0, 0},
};

enum { RND_NORMAL, RND_UNIFORM, RND_BERNOULLI, RND_MULTINOMIAL };

typedef struct rnd_kernel {
    shp_kernel k;
    int kind;
    double a, b;          /* normal: mean, scale; uniform: low, high */
    uint64_t key;
    atomic_uint_fast64_t runs;
    pl_dtype in_dt;       /* Bernoulli, Multinomial */
    int64_t rows, classes, samples; /* Multinomial */
} rnd_kernel;

/* SplitMix64's finaliser: a bijection of 64 bits that mixes every bit. */
static inline uint64_t rnd_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The run's stream: value I is rnd_bits(stream, I). */
static inline uint64_t rnd_bits(uint64_t stream, uint64_t i)
{
    return rnd_mix(stream + (i + 1) * 0x9e3779b97f4a7c15ull);
}

/* A uniform in [0, 1) from 53 bits, and one in (0, 1]. */
static inline double rnd_unit(uint64_t bits)
{
    return (double)(bits >> 11) * 0x1.0p-53;
}

static inline double rnd_unit_open0(uint64_t bits)
{
    return ((double)(bits >> 11) + 1.0) * 0x1.0p-53;
}

typedef struct rnd_call {
    const rnd_kernel *k;
    uint64_t stream;
    const char *x;        /* Bernoulli's probabilities, Multinomial's logits */
    char *y;
    pl_dtype dt;
    bool f64;
    atomic_bool bad;      /* Bernoulli: a probability outside [0, 1];
                             Multinomial: out of memory */
} rnd_call;

/* Values [begin, end) of a normal or uniform output, in blocks converted
 * to the output's dtype. */
static void rnd_fill_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    rnd_call *c = arg;
    const rnd_kernel *k = c->k;
    size_t es = pl_dtype_size(c->dt);
    double buf[256];
    for (size_t at = begin; at < end;) {
        size_t n = end - at < 256 ? end - at : 256;
        for (size_t j = 0; j < n; j++) {
            uint64_t i = at + j;
            double v;
            if (k->kind == RND_NORMAL) {
                double u1 = rnd_unit_open0(rnd_bits(c->stream, 2 * i));
                double u2 = rnd_unit(rnd_bits(c->stream, 2 * i + 1));
                v = k->a + k->b * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
            } else {
                uint64_t bits = rnd_bits(c->stream, i);
                /* 24 bits below f64: a float of [0, 1) never rounds to 1 */
                double u = c->f64 ? rnd_unit(bits) : (double)(bits >> 40) * 0x1.0p-24;
                v = k->a + (k->b - k->a) * u;
            }
            buf[j] = v;
        }
        shp_convert(PL_DTYPE_F64, buf, c->dt, c->y + at * es, n);
        at += n;
    }
}

static void rnd_bernoulli_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    rnd_call *c = arg;
    for (size_t i = begin; i < end; i++) {
        double p = ix_load(c->k->in_dt, c->x, i);
        if (!(p >= 0.0 && p <= 1.0)) {
            atomic_store_explicit(&c->bad, true, memory_order_relaxed);
            p = 0.0;
        }
        ix_store(c->dt, c->y, i, rnd_unit(rnd_bits(c->stream, i)) < p ? 1.0 : 0.0);
    }
}

static void rnd_multinomial_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    rnd_call *c = arg;
    const rnd_kernel *k = c->k;
    double cum[1024], *table = cum;
    bool heap = k->classes > 1024;
    if (heap && (table = malloc((size_t)k->classes * sizeof *table)) == NULL) {
        atomic_store_explicit(&c->bad, true, memory_order_relaxed);
        return;
    }
    for (size_t r = begin; r < end; r++) {
        size_t base = r * (size_t)k->classes;
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < k->classes; j++)
            mx = fmax(mx, ix_load(k->in_dt, c->x, base + (size_t)j));
        for (int64_t j = 0; j < k->classes; j++) {
            double e = isinf(mx) ? 1.0 : exp(ix_load(k->in_dt, c->x, base + (size_t)j) - mx);
            table[j] = sum += isnan(e) ? 0.0 : e;
        }
        for (int64_t s = 0; s < k->samples; s++) {
            double u = rnd_unit(rnd_bits(c->stream, r * (size_t)k->samples + (size_t)s)) * sum;
            int64_t j = 0;
            while (j + 1 < k->classes && table[j] <= u)
                j++;
            ix_store(c->dt, c->y, r * (size_t)k->samples + (size_t)s, (double)j);
        }
    }
    if (heap)
        free(table);
}

static pl_status *rnd_write(pl_module_ctx *ctx, const shp_kernel *kernel, const pl_run_args *args,
                            size_t o, void *dst, pl_output_request req)
{
    (void)o, (void)req;
    /* the run counter is the one thing a run changes (atomically) */
    rnd_kernel *k = (rnd_kernel *)kernel;
    uint64_t run = atomic_fetch_add(&k->runs, 1);
    rnd_call c = {.k = k, .stream = rnd_mix(k->key ^ rnd_mix(run + 0x632be59bd9b4e019ull)),
                  .y = dst, .dt = kernel->outs[0].dtype,
                  .f64 = PL_DTYPE_EQ(kernel->outs[0].dtype, PL_DTYPE_F64)};
    atomic_init(&c.bad, false);
    size_t n = kernel->outs[0].elements;
    switch (k->kind) {
    case RND_NORMAL:
    case RND_UNIFORM:
        cpu_host->parallel_for(ctx->host_ctx, n, 8192, rnd_fill_chunk, &c);
        return NULL;
    case RND_BERNOULLI:
        c.x = shp_in(args, 0);
        cpu_host->parallel_for(ctx->host_ctx, n, 8192, rnd_bernoulli_chunk, &c);
        return atomic_load(&c.bad) ? cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->base.op,
                                               "a probability is outside [0, 1]")
                                   : NULL;
    default:
        c.x = shp_in(args, 0);
        cpu_host->parallel_for(ctx->host_ctx, (size_t)k->rows, 1, rnd_multinomial_chunk, &c);
        return atomic_load(&c.bad)
                   ? cpu_error(PL_CODE_OUT_OF_MEMORY, kernel->base.op, "out of memory")
                   : NULL;
    }
}

static bool rnd_float(pl_dtype dt)
{
    return PL_DTYPE_EQ(dt, PL_DTYPE_F32) || PL_DTYPE_EQ(dt, PL_DTYPE_F64) ||
           PL_DTYPE_EQ(dt, PL_DTYPE_F16) || PL_DTYPE_EQ(dt, PL_DTYPE_BF16);
}

/* A key for a kernel without a seed: the clock's nanoseconds, the
 * kernel's address and a process-wide count, mixed. */
static uint64_t rnd_fresh_key(const void *kernel)
{
    static atomic_uint_fast64_t made;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    return rnd_mix(t ^ rnd_mix((uint64_t)(uintptr_t)kernel) ^
                   rnd_mix(atomic_fetch_add(&made, 1) + 0x5851f42d4c957f2dull));
}

static pl_status *rnd_build(pl_module_ctx *ctx, const pl_node_desc *node,
                            pl_kernel **out_kernel)
{
    const char *op = node->op;
    int kind = strstr(op, "Normal") != NULL    ? RND_NORMAL
               : strstr(op, "Uniform") != NULL ? RND_UNIFORM
               : strcmp(op, "Bernoulli") == 0  ? RND_BERNOULLI
                                               : RND_MULTINOMIAL;
    const pl_tensor *y = &node->outputs[0];
    const pl_tensor *x = node->n_inputs > 0 ? &node->inputs[0] : NULL;
    if ((kind <= RND_UNIFORM && !rnd_float(y->dtype)) ||
        (kind >= RND_BERNOULLI && (x == NULL || !rnd_float(x->dtype))) ||
        (kind == RND_MULTINOMIAL &&
         !PL_DTYPE_EQ(y->dtype, PL_DTYPE_I32) && !PL_DTYPE_EQ(y->dtype, PL_DTYPE_I64)))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "unsupported dtype");
    if (kind == RND_BERNOULLI && (y->ndim != x->ndim || cpu_elements(y->shape, y->ndim) !=
                                                            cpu_elements(x->shape, x->ndim)))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "the output is not the input's shape");
    if (kind == RND_MULTINOMIAL && (x->ndim != 2 || y->ndim != 2 || y->shape[0] != x->shape[0] ||
                                    x->shape[1] < 1))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "needs [batch, classes] in and [batch, samples] out");
    double seed, a = 0, b = 1;
    SHP_TRY(cpu_attr_float(node, "seed", NAN, &seed));
    if (kind == RND_NORMAL) {
        SHP_TRY(cpu_attr_float(node, "mean", 0.0, &a));
        SHP_TRY(cpu_attr_float(node, "scale", 1.0, &b));
    } else if (kind == RND_UNIFORM) {
        SHP_TRY(cpu_attr_float(node, "low", 0.0, &a));
        SHP_TRY(cpu_attr_float(node, "high", 1.0, &b));
    }
    rnd_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, rnd_write, (shp_kernel **)&k));
    k->kind = kind;
    k->a = a;
    k->b = b;
    atomic_init(&k->runs, 0);
    if (isnan(seed)) {
        k->key = rnd_fresh_key(k);
    } else {
        float f = (float)seed; /* the attribute is a float: its bits */
        uint32_t bits;
        memcpy(&bits, &f, sizeof bits);
        k->key = rnd_mix(bits + 0x2545f4914f6cdd1dull);
    }
    if (x != NULL) {
        k->in_dt = x->dtype;
        if (kind == RND_MULTINOMIAL) {
            k->rows = x->shape[0];
            k->classes = x->shape[1];
            k->samples = y->shape[1];
        }
    }
    /* the Like ops read only their input's shape */
    if (kind <= RND_UNIFORM)
        k->k.base.n_reads = 0;
    *out_kernel = &k->k.base;
    return NULL;
}
