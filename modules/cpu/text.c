/* text.c — the cpu module's TfIdfVectorizer over integer token ids, as ONNX
 * Runtime counts: for every skip distance 0..max_skip_count and every start
 * position, the tokens start, start + (skip + 1), ... form n-grams of each
 * length min..max_gram_length, and each one found in the pool adds one to
 * its output column (unigrams only once: skips do not change them). The
 * count then becomes the output by mode: TF the count, IDF its weight when
 * the count is positive, TFIDF count times weight (weights default 1, the
 * i-th for the i-th n-gram of the pool). The pool's n-grams of each
 * length are found through a hash table made with the kernel (open
 * addressing, at most half full; a repeated n-gram keeps its first place):
 * the linear search it replaced was 60% of a bigram TF-IDF pipeline's run
 * (skl2onnx, a pool of 240). */
#include <string.h>

#include <plinth/graph_hash.h>

#include "index_kernel.h"

static pl_status *tx_build_tfidf(pl_module_ctx *ctx, const pl_node_desc *node,
                                 pl_kernel **out_kernel);

const cpu_op_entry cpu_ops_text[] = {
    {"TfIdfVectorizer", tx_build_tfidf, 1, 1, 0, CPU_OP_ANY_DTYPE},
    {NULL, NULL, 0, 0, 0, 0},
};

typedef enum tx_mode { TX_TF, TX_IDF, TX_TFIDF } tx_mode;

/* The pool's n-grams of length n start at pool[start[n]] and count[n] of
 * them follow; n-gram j of the pool (all lengths, in order) goes to
 * output column column[j] with weight weight[j]. The arrays follow the
 * kernel in its block. */
typedef struct tx_kernel {
    shp_kernel k;
    size_t rows, len, cols;
    int64_t min_n, max_n, max_skip;
    tx_mode mode;
    bool idx64;
    size_t n_grams;
    size_t start[CPU_MAX_RANK + 1], count[CPU_MAX_RANK + 1], first[CPU_MAX_RANK + 1];
    int64_t *pool, *column;
    double *weight;
    /* per length n: a table of mask[n] + 1 slots from slot[n] on, each the
     * number of an n-gram of that length (0 .. count[n] - 1) or TX_EMPTY */
    size_t slot[CPU_MAX_RANK + 1], mask[CPU_MAX_RANK + 1];
    uint32_t *slots;
} tx_kernel;

#define TX_EMPTY UINT32_MAX

static uint64_t tx_hash(const int64_t *tokens, int64_t n)
{
    uint64_t h = PL_HASH_SEED;
    pl_hash_bytes(&h, tokens, (size_t)n * sizeof *tokens);
    return h;
}

/* The place in the table of length N where TOKENS is, or the empty slot
 * where it would go. */
static uint32_t *tx_probe(const tx_kernel *k, int64_t n, const int64_t *tokens)
{
    const int64_t *p = k->pool + k->start[n];
    size_t mask = k->mask[n];
    uint32_t *t = k->slots + k->slot[n];
    for (size_t h = (size_t)tx_hash(tokens, n) & mask;; h = (h + 1) & mask) {
        if (t[h] == TX_EMPTY ||
            memcmp(p + (size_t)t[h] * (size_t)n, tokens, (size_t)n * sizeof *p) == 0)
            return &t[h];
    }
}

/* The pool n-gram of length N equal to TOKENS, as its number j, or -1. */
static int64_t tx_find(const tx_kernel *k, int64_t n, const int64_t *tokens)
{
    if (k->count[n] == 0)
        return -1;
    uint32_t at = *tx_probe(k, n, tokens);
    return at == TX_EMPTY ? -1 : (int64_t)(k->first[n] + at);
}

static pl_status *tx_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                           const pl_run_args *args, size_t o, void *dst,
                           pl_output_request req)
{
    (void)o, (void)req;
    const tx_kernel *k = (const tx_kernel *)kernel;
    size_t counts_bytes = (k->n_grams ? k->n_grams : 1) * sizeof(double);
    double *counts = cpu_host->host_alloc(ctx->host_ctx, counts_bytes, 0);
    if (counts == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, kernel->base.op, "out of memory");
    const char *x = shp_in(args, 0);
    float *y = dst;
    for (size_t r = 0; r < k->rows; r++) {
        memset(counts, 0, counts_bytes);
        int64_t lo = k->min_n;
        for (int64_t skip = 0; skip <= k->max_skip; skip++) {
            for (size_t s = 0; s < k->len; s++) {
                int64_t gram[CPU_MAX_RANK];
                for (int64_t n = 1; n <= k->max_n; n++) {
                    size_t at = s + (size_t)(n - 1) * (size_t)(skip + 1);
                    if (at >= k->len)
                        break;
                    gram[n - 1] = ix_index_at(x, k->idx64, r * k->len + at);
                    if (n < lo)
                        continue;
                    int64_t j = tx_find(k, n, gram);
                    if (j >= 0)
                        counts[j] += 1;
                }
            }
            if (lo == 1)
                lo = 2; /* unigrams are counted once, at skip 0 */
            if (lo > k->max_n)
                break;
        }
        memset(y + r * k->cols, 0, k->cols * sizeof *y);
        for (size_t j = 0; j < k->n_grams; j++) {
            double c = counts[j], w = k->weight[j];
            double v = k->mode == TX_TF ? c : k->mode == TX_IDF ? (c > 0 ? w : 0) : c * w;
            y[r * k->cols + (size_t)k->column[j]] = (float)v;
        }
    }
    cpu_host->host_free(ctx->host_ctx, counts);
    return NULL;
}

static pl_status *tx_build_tfidf(pl_module_ctx *ctx, const pl_node_desc *node,
                                 pl_kernel **out_kernel)
{
    const char *op = node->op;
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    int64_t lo, hi, skip;
    char mode[8];
    const int64_t *counts, *cols, *pool;
    size_t n_counts, n_cols, n_pool;
    SHP_TRY(cpu_attr_int(node, "min_gram_length", 1, &lo));
    SHP_TRY(cpu_attr_int(node, "max_gram_length", 1, &hi));
    SHP_TRY(cpu_attr_int(node, "max_skip_count", 0, &skip));
    SHP_TRY(shp_attr_string(node, "mode", "TF", mode, sizeof mode));
    SHP_TRY(cpu_attr_ints(node, "ngram_counts", &counts, &n_counts));
    SHP_TRY(cpu_attr_ints(node, "ngram_indexes", &cols, &n_cols));
    SHP_TRY(cpu_attr_ints(node, "pool_int64s", &pool, &n_pool));
    bool idx64;
    SHP_TRY(ix_index_dtype(node, 0, &idx64));
    if (lo < 1 || hi < lo || hi > CPU_MAX_RANK || skip < 0 || pool == NULL ||
        n_counts < (size_t)hi || !PL_DTYPE_EQ(o->dtype, PL_DTYPE_F32))
        return cpu_error(PL_CODE_UNSUPPORTED, op,
                         "needs gram lengths in 1..%d, max_skip_count >= 0, ngram_counts for "
                         "each length, pool_int64s and an f32 output", CPU_MAX_RANK);
    /* The pool: n-grams of length n from counts[n - 1] up to the next. */
    size_t start[CPU_MAX_RANK + 1] = {0}, count[CPU_MAX_RANK + 1] = {0};
    size_t first[CPU_MAX_RANK + 1] = {0}, n_grams = 0;
    for (int64_t n = 1; n <= (int64_t)n_counts && n <= CPU_MAX_RANK; n++) {
        int64_t b = counts[n - 1], e = n < (int64_t)n_counts ? counts[n] : (int64_t)n_pool;
        if (b < 0 || e < b || (size_t)e > n_pool || (e - b) % n != 0)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "ngram_counts does not split the pool into whole %lld-grams",
                             (long long)n);
        start[n] = (size_t)b;
        count[n] = (size_t)((e - b) / n);
        first[n] = n_grams;
        n_grams += count[n];
    }
    if (n_cols != n_grams)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "ngram_indexes has %zu entries for %zu pool n-grams", n_cols, n_grams);
    size_t out_cols = o->ndim >= 1 ? (size_t)o->shape[o->ndim - 1] : 0;
    for (size_t j = 0; j < n_cols; j++)
        if (cols[j] < 0 || (size_t)cols[j] >= out_cols)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "ngram_indexes holds %lld; the output has %zu columns",
                             (long long)cols[j], out_cols);
    const double *weights = NULL;
    size_t n_weights = 0;
    const pl_graph_api *g = cpu_host->graph;
    if (g != NULL && PL_ABI_HAS_FN(pl_graph_api, g, attr_floats) &&
        g->attr_kind(node->graph, node->node_index, "weights") == PL_GRAPH_ATTR_FLOATS)
        g->attr_floats(node->graph, node->node_index, "weights", &weights, &n_weights);
    if (weights != NULL && n_weights != n_grams)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "%zu weights for %zu pool n-grams",
                         n_weights, n_grams);
    size_t rows = x->ndim == 2 ? (size_t)x->shape[0] : 1;
    if ((x->ndim != 1 && x->ndim != 2) || o->ndim != x->ndim ||
        (x->ndim == 2 && o->shape[0] != x->shape[0]))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "input [C] or [N, C], output [K] or [N, K]");
    size_t slot[CPU_MAX_RANK + 1] = {0}, mask[CPU_MAX_RANK + 1] = {0}, n_slots = 0;
    for (int64_t n = 1; n <= CPU_MAX_RANK; n++) {
        if (count[n] == 0)
            continue;
        if (count[n] >= TX_EMPTY / 4)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "the pool is too large");
        size_t cap = 16;
        while (cap < 2 * count[n])
            cap *= 2;
        slot[n] = n_slots;
        mask[n] = cap - 1;
        n_slots += cap;
    }
    size_t extra, pool_bytes, gram_bytes;
    if (__builtin_mul_overflow(n_pool, sizeof(int64_t), &pool_bytes) ||
        __builtin_mul_overflow(n_grams, sizeof(int64_t) + sizeof(double), &gram_bytes) ||
        __builtin_add_overflow(pool_bytes, gram_bytes, &extra) ||
        __builtin_add_overflow(extra, n_slots * sizeof(uint32_t), &extra) ||
        __builtin_add_overflow(extra, sizeof(tx_kernel), &extra))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "the pool is too large");
    extra -= sizeof(tx_kernel);
    tx_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k + extra, tx_write, (shp_kernel **)&k));
    k->pool = (int64_t *)(void *)(k + 1);
    k->column = k->pool + n_pool;
    k->weight = (double *)(void *)(k->column + n_grams);
    memcpy(k->pool, pool, n_pool * sizeof *pool);
    memcpy(k->column, cols, n_grams * sizeof *cols);
    for (size_t j = 0; j < n_grams; j++)
        k->weight[j] = weights != NULL ? weights[j] : 1.0;
    memcpy(k->start, start, sizeof start);
    memcpy(k->count, count, sizeof count);
    memcpy(k->first, first, sizeof first);
    memcpy(k->slot, slot, sizeof slot);
    memcpy(k->mask, mask, sizeof mask);
    k->slots = (uint32_t *)(void *)(k->weight + n_grams);
    memset(k->slots, 0xFF, n_slots * sizeof *k->slots);
    for (int64_t n = 1; n <= CPU_MAX_RANK; n++)
        for (size_t j = 0; j < count[n]; j++) {
            uint32_t *at = tx_probe(k, n, k->pool + start[n] + j * (size_t)n);
            if (*at == TX_EMPTY) /* (a repeated n-gram keeps its first place) */
                *at = (uint32_t)j;
        }
    k->n_grams = n_grams;
    k->rows = rows;
    k->len = (size_t)x->shape[x->ndim - 1];
    k->cols = out_cols;
    k->min_n = lo;
    k->max_n = hi;
    k->max_skip = skip;
    k->mode = strcmp(mode, "IDF") == 0 ? TX_IDF : strcmp(mode, "TFIDF") == 0 ? TX_TFIDF : TX_TF;
    k->idx64 = idx64;
    *out_kernel = &k->k.base;
    return NULL;
}
