/* packshare.c — one packed copy of a constant GEMM operand for every kernel
 * that multiplies by it.
 *
 * A kernel packs a constant op(B) at get_kernel time (matmul.c). Kernels
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
 * cost), its size and the packing's parameters. Hashing every weight of
 * every first session would tax every cold start, so a weight is hashed
 * only when its address comes back with the same packing: the first
 * kernel of a weight packs it privately, as before, and remembers the
 * address; a later kernel of that address hashes, and shares or makes the
 * shared copy. The shared copy lives while kernels hold it. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "cpu_kernel.h"
#include "gemm.h"

/* Operands smaller than this are packed per kernel: sharing saves little. */
#define PS_MIN_BYTES ((size_t)64 * 1024)
/* Addresses remembered from first sightings (a ring: the oldest goes). */
#define PS_SEEN 512

struct cpu_shared_pack {
    uint64_t digest;
    size_t bytes;        /* the constant's */
    int64_t k, n;
    bool trans;
    size_t refs;         /* kernels holding it; freed at 0 */
    float *packed;
    struct cpu_shared_pack *next;
};

typedef struct ps_seen {
    const void *data;
    size_t bytes;
    int64_t k, n;
    bool trans;
} ps_seen;

struct cpu_pack_registry {
    pthread_mutex_t mu;
    struct cpu_shared_pack *head;
    ps_seen seen[PS_SEEN];
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
        cpu_host->host_free(host_ctx, p->packed);
        cpu_host->host_free(host_ctx, p);
    }
    pthread_mutex_destroy(&r->mu);
    cpu_host->host_free(host_ctx, r);
}

/* Whether DATA was seen with this packing before; remembers it if not. */
static bool ps_seen_before(cpu_pack_registry *r, const void *data, size_t bytes, int64_t k,
                           int64_t n, bool trans)
{
    for (size_t i = 0; i < r->n_seen; i++) {
        const ps_seen *s = &r->seen[i];
        if (s->data == data && s->bytes == bytes && s->k == k && s->n == n && s->trans == trans)
            return true;
    }
    r->seen[r->next_seen] = (ps_seen){data, bytes, k, n, trans};
    r->next_seen = (r->next_seen + 1) % PS_SEEN;
    if (r->n_seen < PS_SEEN)
        r->n_seen++;
    return false;
}

const float *cpu_pack_share(pl_module_ctx *ctx, const pl_node_desc *node, int64_t tensor,
                            const void *data, size_t bytes, int64_t k, int64_t n, bool trans,
                            cpu_shared_pack **out_ref)
{
    *out_ref = NULL;
    cpu_pack_registry *r = ctx->packs;
    const pl_graph_api *g = cpu_host->graph;
    if (r == NULL || bytes < PS_MIN_BYTES || g == NULL ||
        !PL_ABI_HAS_FN(pl_graph_api, g, tensor_digest))
        return NULL;
    pthread_mutex_lock(&r->mu);
    bool again = ps_seen_before(r, data, bytes, k, n, trans);
    pthread_mutex_unlock(&r->mu);
    size_t digest_bytes = 0;
    uint64_t digest = 0;
    if (!again || !g->tensor_digest(node->graph, tensor, &digest_bytes, &digest) ||
        digest_bytes != bytes)
        return NULL;
    pthread_mutex_lock(&r->mu);
    struct cpu_shared_pack *p = r->head;
    while (p != NULL && !(p->digest == digest && p->bytes == bytes && p->k == k && p->n == n &&
                          p->trans == trans))
        p = p->next;
    if (p != NULL) {
        p->refs++;
        pthread_mutex_unlock(&r->mu);
        *out_ref = p;
        return p->packed;
    }
    pthread_mutex_unlock(&r->mu);
    /* Packed outside the lock; a kernel of the same weight made meanwhile
     * on another thread may pack its own shared copy too (both correct). */
    p = cpu_host->host_alloc(ctx->host_ctx, sizeof *p, 0);
    float *packed = cpu_host->host_alloc(ctx->host_ctx,
                                         cpu_gemm_packed_b_floats(k, n) * sizeof(float), 0);
    if (p == NULL || packed == NULL) {
        cpu_host->host_free(ctx->host_ctx, p);
        cpu_host->host_free(ctx->host_ctx, packed);
        return NULL; /* the caller packs its own */
    }
    cpu_gemm_pack_b(k, n, (const float *)data, trans ? k : n, trans, packed);
    *p = (struct cpu_shared_pack){
        .digest = digest, .bytes = bytes, .k = k, .n = n, .trans = trans, .refs = 1,
        .packed = packed};
    pthread_mutex_lock(&r->mu);
    p->next = r->head;
    r->head = p;
    pthread_mutex_unlock(&r->mu);
    *out_ref = p;
    return packed;
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
        cpu_host->host_free(ctx->host_ctx, ref->packed);
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
