/* packshare.c — one copy of what kernels derive from constants (packed
 * GEMM operands) for every kernel that derives the same bytes the same way.
 *
 * Kernels pack constant weights at get_kernel time: a product's op(B)
 * (matmul.c), a convolution's weights per group (nn.c), the integer GEMM's
 * packed weights with their zero points (quant.c, quant_conv.c). Kernels
 * of the same weight are made again and again when a model's shapes open:
 * a staged session plans its tail once per input shape (a BERT of free
 * sequence length, a decoder whose past grows by one token a step), and
 * each plan packed every weight anew: 12 MB of packing, most of the 8.5 ms
 * a new length cost a 4-layer, 256-wide BERT, and 12 MB more held per
 * length kept.
 *
 * Pointers say nothing about contents (a constant freed and another made
 * at its address), so shared copies are found by content: the digest the
 * core gives for the constant (host->graph->tensor_digest: free when the
 * core knows it, else a hash of the bytes, about a tenth of the packing's
 * cost) of each source, their sizes and the derivation's parameters.
 * Hashing every weight of every first session would tax every cold start,
 * so a weight is hashed only when its address comes back with the same
 * derivation: the first kernel of a weight packs it privately, as before,
 * and remembers the address; a later kernel of that address hashes, and
 * shares or makes the shared copy. Where the core says views of the same
 * constants make kernels again (ABI 1.16's compile_repeated: a staged
 * session's tails), the first kernel hashes and shares already: a tail's
 * second signature packed every weight a second time. The shared copy lives while kernels
 * hold it. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <plinth/graph_hash.h>

#include "cpu_kernel.h"

/* Derived bytes smaller than this are made per kernel: sharing saves little. */
#define PS_MIN_BYTES ((size_t)64 * 1024)
/* Sightings remembered (a ring: the oldest goes). */
#define PS_SEEN 512

/* What a derived copy is made from: its sources (the constants' bytes,
 * by address for sightings and by digest for matches) and the parameters
 * of the derivation (the caller's: kind, sizes, flags). */
typedef struct ps_key {
    const void *src[CPU_SHARE_MAX_SOURCES];
    size_t src_bytes[CPU_SHARE_MAX_SOURCES];
    int64_t params[CPU_SHARE_MAX_PARAMS];
    size_t n_src, n_params, bytes;
} ps_key;

struct cpu_shared_pack {
    ps_key key;          /* src: the first maker's addresses (not matched) */
    uint64_t digest;     /* of the sources' bytes, in order */
    size_t refs;         /* kernels holding it; freed at 0 */
    void *data;
    struct cpu_shared_pack *next;
};

struct cpu_pack_registry {
    pthread_mutex_t mu;
    struct cpu_shared_pack *head;
    ps_key seen[PS_SEEN];
    size_t n_seen, next_seen;
};

cpu_pack_registry *cpu_pack_registry_create(pl_host_ctx *host_ctx)
{
    cpu_pack_registry *r = cpu_host->host_alloc(host_ctx, sizeof *r, 0);
    if (r == NULL)
        return NULL;
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    return r;
}

void cpu_pack_registry_destroy(pl_host_ctx *host_ctx, cpu_pack_registry *r)
{
    if (r == NULL)
        return;
    /* Kernels are released before the module shuts down; anything left is
     * a leak of theirs, freed here all the same. */
    while (r->head != NULL) {
        struct cpu_shared_pack *p = r->head;
        r->head = p->next;
        cpu_host->host_free(host_ctx, p->data);
        cpu_host->host_free(host_ctx, p);
    }
    pthread_mutex_destroy(&r->mu);
    cpu_host->host_free(host_ctx, r);
}

/* The same derivation (parameters, sizes), sources compared by address
 * when ADDRESSES, else not at all (the digest decides). */
static bool ps_same(const ps_key *a, const ps_key *b, bool addresses)
{
    if (a->n_src != b->n_src || a->n_params != b->n_params || a->bytes != b->bytes)
        return false;
    for (size_t i = 0; i < a->n_src; i++)
        if (a->src_bytes[i] != b->src_bytes[i] || (addresses && a->src[i] != b->src[i]))
            return false;
    return memcmp(a->params, b->params, a->n_params * sizeof a->params[0]) == 0;
}

/* Whether KEY was seen before; remembers it if not. */
static bool ps_seen_before(cpu_pack_registry *r, const ps_key *key)
{
    for (size_t i = 0; i < r->n_seen; i++)
        if (ps_same(&r->seen[i], key, true))
            return true;
    r->seen[r->next_seen] = *key;
    r->next_seen = (r->next_seen + 1) % PS_SEEN;
    if (r->n_seen < PS_SEEN)
        r->n_seen++;
    return false;
}

void *cpu_share_derived(pl_module_ctx *ctx, const pl_node_desc *node, const size_t *inputs,
                        size_t n_inputs, const int64_t *params, size_t n_params, size_t bytes,
                        cpu_share_fill fill, void *fill_arg, cpu_shared_pack **out_ref)
{
    *out_ref = NULL;
    cpu_pack_registry *r = ctx->packs;
    const pl_graph_api *g = cpu_host->graph;
    if (r == NULL || bytes < PS_MIN_BYTES || g == NULL || node->graph == NULL ||
        !PL_ABI_HAS_FN(pl_graph_api, g, tensor_digest) || n_inputs == 0 ||
        n_inputs > CPU_SHARE_MAX_SOURCES || n_params > CPU_SHARE_MAX_PARAMS)
        return NULL;
    ps_key key = {.n_src = n_inputs, .n_params = n_params, .bytes = bytes};
    int64_t tensors[CPU_SHARE_MAX_SOURCES];
    for (size_t i = 0; i < n_inputs; i++) {
        tensors[i] = g->node_input(node->graph, node->node_index, inputs[i]);
        if (tensors[i] < 0 ||
            !g->tensor_constant(node->graph, tensors[i], &key.src[i], &key.src_bytes[i]))
            return NULL;
    }
    memcpy(key.params, params, n_params * sizeof *params);
    pthread_mutex_lock(&r->mu);
    bool again = ps_seen_before(r, &key);
    pthread_mutex_unlock(&r->mu);
    /* (or at once where the core says views of these constants make kernels
     * again: a staged session's tails, ABI 1.16) */
    if (!again && PL_ABI_HAS_FN(pl_graph_api, g, compile_repeated))
        again = g->compile_repeated(node->graph) != 0;
    if (!again)
        return NULL;
    /* the sources' digests, in order, folded into one */
    uint64_t digest = PL_HASH_SEED;
    for (size_t i = 0; i < n_inputs; i++) {
        size_t have = 0;
        uint64_t d = 0;
        if (!g->tensor_digest(node->graph, tensors[i], &have, &d) || have != key.src_bytes[i])
            return NULL;
        pl_hash_u64(&digest, d);
    }
    pthread_mutex_lock(&r->mu);
    struct cpu_shared_pack *p = r->head;
    while (p != NULL && !(p->digest == digest && ps_same(&p->key, &key, false)))
        p = p->next;
    if (p != NULL) {
        p->refs++;
        pthread_mutex_unlock(&r->mu);
        *out_ref = p;
        return p->data;
    }
    pthread_mutex_unlock(&r->mu);
    /* Made outside the lock; a kernel of the same weight made meanwhile
     * on another thread may make its own shared copy too (both correct). */
    p = cpu_host->host_alloc(ctx->host_ctx, sizeof *p, 0);
    void *data = cpu_host->host_alloc(ctx->host_ctx, bytes, 64);
    if (p == NULL || data == NULL) {
        cpu_host->host_free(ctx->host_ctx, p);
        cpu_host->host_free(ctx->host_ctx, data);
        return NULL; /* the caller makes its own */
    }
    fill(fill_arg, data);
    *p = (struct cpu_shared_pack){.key = key, .digest = digest, .refs = 1, .data = data};
    pthread_mutex_lock(&r->mu);
    p->next = r->head;
    r->head = p;
    pthread_mutex_unlock(&r->mu);
    *out_ref = p;
    return data;
}

bool cpu_share_has(pl_module_ctx *ctx, const void *src, size_t src_bytes, const int64_t *params,
                   size_t n_params, size_t bytes)
{
    cpu_pack_registry *r = ctx->packs;
    if (r == NULL || src == NULL || n_params > CPU_SHARE_MAX_PARAMS)
        return false;
    ps_key key = {.n_src = 1, .n_params = n_params, .bytes = bytes};
    key.src[0] = src;
    key.src_bytes[0] = src_bytes;
    memcpy(key.params, params, n_params * sizeof *params);
    pthread_mutex_lock(&r->mu);
    struct cpu_shared_pack *p = r->head;
    while (p != NULL && !ps_same(&p->key, &key, true))
        p = p->next;
    pthread_mutex_unlock(&r->mu);
    return p != NULL;
}

void cpu_pack_unshare(pl_module_ctx *ctx, cpu_shared_pack *ref)
{
    cpu_pack_registry *r = ctx->packs;
    if (ref == NULL || r == NULL)
        return;
    pthread_mutex_lock(&r->mu);
    bool last = --ref->refs == 0;
    if (last) {
        struct cpu_shared_pack **pp = &r->head;
        while (*pp != ref)
            pp = &(*pp)->next;
        *pp = ref->next;
    }
    pthread_mutex_unlock(&r->mu);
    if (last) {
        cpu_host->host_free(ctx->host_ctx, ref->data);
        cpu_host->host_free(ctx->host_ctx, ref);
    }
}

size_t cpu_pack_shared_count(pl_module_ctx *ctx)
{
    cpu_pack_registry *r = ctx->packs;
    size_t n = 0;
    if (r == NULL)
        return 0;
    pthread_mutex_lock(&r->mu);
    for (const struct cpu_shared_pack *p = r->head; p != NULL; p = p->next)
        n++;
    pthread_mutex_unlock(&r->mu);
    return n;
}
