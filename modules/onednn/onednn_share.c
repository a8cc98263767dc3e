/* onednn_share.c — one laid-out copy of a constant weight for every
 * compiled subgraph that reads it the same way.
 *
 * A staged session compiles its tail once per input shape (a BERT of free
 * sequence length): each compile laid every weight out again into fresh
 * memory (copy or reorder, the denormal flush, the page faults), and each
 * length kept held its own copy. A weight laid out with the same source
 * layout and destination layout from the same bytes is the same bytes, so
 * compiles share it: found by the digest of the source bytes (the
 * core's for a constant of the view, which it remembers; else hashed
 * here, plinth/graph_hash.h), their size and both layouts. A weight is hashed
 * only when its source address comes back with the same layouts (a
 * session's first compile pays nothing); the address only decides that,
 * never a match -- but where the core says the view's constants compile
 * again (ABI 1.16's compile_repeated: a staged session's tails) and keeps
 * a constant in place for the session (tensor_constant_keep), its copy is
 * shared from the first compile, keyed by the address: every holder keeps
 * its constant at that address, so no other bytes can lie there while the
 * copy lives (GPT-2 base's prompt at a second length laid all 497 MB out
 * again, its first compile's copies private). Weights the module packs
 * itself (its own convolutions, onednn_direct.c) share the same way, their
 * packing told apart by a salt (the kernel's parameters and the bias
 * folded in): the source layout alone does not say how. The shared copy is
 * read-only and lives while compiled subgraphs hold it. The cpu module
 * does the same for its packed operands (modules/cpu/packshare.c). */
#include "onednn.h"

#include <plinth/graph_hash.h>

#include <string.h>
#include <sys/mman.h>

/* Weights smaller than this are laid out per compile. */
#define ODNN_SHARE_MIN_BYTES ((size_t)64 * 1024)

struct onednn_shared_weight {
    uint64_t digest;   /* of the source bytes; by_address: the source's address */
    uint64_t salt;     /* how the module packed it (0: oneDNN's layout MD) */
    int by_address;
    size_t src_bytes;
    dnnl_memory_desc_t src_md, md;
    void *data; /* host_alloc, 64-byte aligned; or in BLOCK */
    struct onednn_block *block;
    size_t refs;
    struct onednn_shared_weight *next;
};

void onednn_block_ref(struct onednn_block *b)
{
    if (b != NULL)
        atomic_fetch_add(&b->refs, 1);
}

void onednn_block_unref(pl_module_ctx *ctx, struct onednn_block *b)
{
    if (b == NULL || atomic_fetch_sub(&b->refs, 1) != 1)
        return;
    munmap(b->base, b->len);
    onednn_host->host_free(ctx->host_ctx, b);
}

/* Frees W's bytes (its block's hold, or its own memory) and W. */
static void share_free(pl_module_ctx *ctx, struct onednn_shared_weight *w)
{
    if (w->block != NULL)
        onednn_block_unref(ctx, w->block);
    else
        onednn_host->host_free(ctx->host_ctx, w->data);
    onednn_host->host_free(ctx->host_ctx, w);
}

void onednn_share_init(struct onednn_share *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
}

void onednn_share_destroy(pl_module_ctx *ctx)
{
    struct onednn_share *s = &ctx->share;
    while (s->head != NULL) { /* none once every subgraph is released */
        struct onednn_shared_weight *w = s->head;
        s->head = w->next;
        share_free(ctx, w);
    }
    pthread_mutex_destroy(&s->mu);
}

static int share_seen(struct onednn_share *s, const void *data, const dnnl_memory_desc_t *src_md,
                      const dnnl_memory_desc_t *md)
{
    for (size_t i = 0; i < s->n_seen; i++)
        if (s->seen[i].data == data && dnnl_memory_desc_equal(&s->seen[i].src_md, src_md) &&
            dnnl_memory_desc_equal(&s->seen[i].md, md))
            return 1;
    s->seen[s->next_seen].data = data;
    s->seen[s->next_seen].src_md = *src_md;
    s->seen[s->next_seen].md = *md;
    s->next_seen = (s->next_seen + 1) % ONEDNN_SHARE_SEEN;
    if (s->n_seen < ONEDNN_SHARE_SEEN)
        s->n_seen++;
    return 0;
}

/* The digest of SRC_BYTES at DATA: the core's (host->graph->tensor_digest,
 * which remembers it) when DATA is a constant NODE of VIEW reads whole,
 * else a hash of the bytes (a weight the build made: a scaled bias, RNN
 * gates gathered). */
static uint64_t share_digest(const pl_graph_view *view, int64_t node, const void *data,
                             size_t src_bytes)
{
    const pl_graph_api *g = onednn_host->graph;
    if (view != NULL && node >= 0 && g != NULL && PL_ABI_HAS_FN(pl_graph_api, g, tensor_digest))
        for (size_t k = 0; k < g->node_input_count(view, (size_t)node); k++) {
            int64_t t = g->node_input(view, (size_t)node, k);
            const void *at = NULL;
            size_t bytes = 0, have = 0;
            uint64_t d = 0;
            if (t >= 0 && g->tensor_constant(view, t, &at, &bytes) && at == data &&
                bytes == src_bytes && g->tensor_digest(view, t, &have, &d) && have == bytes)
                return d;
        }
    uint64_t digest = PL_HASH_SEED;
    pl_hash_bytes(&digest, data, src_bytes);
    return digest;
}

/* Whether DATA (SRC_BYTES) is a constant NODE of VIEW reads whose place
 * and bytes the core keeps for the session (tensor_constant_keep), in a
 * view whose constants compile again (compile_repeated, ABI 1.16). Every
 * holder of a copy keyed by that address then keeps its constant there,
 * so while the copy lives no other bytes can lie at the address. */
static int share_by_address(const pl_graph_view *view, int64_t node, const void *data,
                            size_t src_bytes)
{
    const pl_graph_api *g = onednn_host->graph;
    if (view == NULL || node < 0 || g == NULL || !PL_ABI_HAS_FN(pl_graph_api, g, compile_repeated) ||
        !PL_ABI_HAS_FN(pl_graph_api, g, tensor_constant_keep) || !g->compile_repeated(view))
        return 0;
    for (size_t k = 0; k < g->node_input_count(view, (size_t)node); k++) {
        int64_t t = g->node_input(view, (size_t)node, k);
        const void *at = NULL;
        size_t bytes = 0;
        if (t >= 0 && g->tensor_constant(view, t, &at, &bytes) && at == data &&
            bytes == src_bytes)
            return g->tensor_constant_keep(view, t) != 0;
    }
    return 0;
}

struct onednn_shared_weight *onednn_share_find(pl_module_ctx *ctx, const pl_graph_view *view,
                                               int64_t node, const void *data,
                                               const dnnl_memory_desc_t *src_md,
                                               const dnnl_memory_desc_t *md, uint64_t salt,
                                               int *out_want, uint64_t *out_digest)
{
    struct onednn_share *s = &ctx->share;
    *out_want = 0;
    size_t src_bytes = dnnl_memory_desc_get_size(src_md);
    if (data == NULL || dnnl_memory_desc_get_size(md) < ODNN_SHARE_MIN_BYTES)
        return NULL;
    int by_address = share_by_address(view, node, data, src_bytes);
    if (!by_address) {
        pthread_mutex_lock(&s->mu);
        int again = share_seen(s, data, src_md, md);
        pthread_mutex_unlock(&s->mu);
        if (!again)
            return NULL;
    }
    uint64_t key = by_address ? (uint64_t)(uintptr_t)data
                              : share_digest(view, node, data, src_bytes);
    pthread_mutex_lock(&s->mu);
    struct onednn_shared_weight *w = s->head;
    while (w != NULL && !(w->by_address == by_address && w->digest == key && w->salt == salt &&
                          w->src_bytes == src_bytes && dnnl_memory_desc_equal(&w->src_md, src_md) &&
                          dnnl_memory_desc_equal(&w->md, md)))
        w = w->next;
    if (w != NULL)
        w->refs++;
    pthread_mutex_unlock(&s->mu);
    *out_want = w != NULL ? 0 : by_address ? 2 : 1;
    *out_digest = key;
    return w;
}

struct onednn_shared_weight *onednn_share_add(pl_module_ctx *ctx, int want, uint64_t digest,
                                              uint64_t salt, const dnnl_memory_desc_t *src_md,
                                              const dnnl_memory_desc_t *md, void *data,
                                              struct onednn_block *block)
{
    struct onednn_shared_weight *w = onednn_host->host_alloc(ctx->host_ctx, sizeof *w, 0);
    if (w == NULL)
        return NULL;
    *w = (struct onednn_shared_weight){.digest = digest,
                                       .salt = salt,
                                       .by_address = want == 2,
                                       .src_bytes = dnnl_memory_desc_get_size(src_md),
                                       .src_md = *src_md,
                                       .md = *md,
                                       .data = data,
                                       .block = block,
                                       .refs = 1};
    onednn_block_ref(block);
    pthread_mutex_lock(&ctx->share.mu);
    w->next = ctx->share.head;
    ctx->share.head = w;
    pthread_mutex_unlock(&ctx->share.mu);
    return w;
}

void *onednn_share_data(const struct onednn_shared_weight *w)
{
    return w->data;
}

void onednn_share_release(pl_module_ctx *ctx, struct onednn_shared_weight *w)
{
    if (w == NULL)
        return;
    struct onednn_share *s = &ctx->share;
    pthread_mutex_lock(&s->mu);
    int last = --w->refs == 0;
    if (last) {
        struct onednn_shared_weight **pp = &s->head;
        while (*pp != w)
            pp = &(*pp)->next;
        *pp = w->next;
    }
    pthread_mutex_unlock(&s->mu);
    if (last)
        share_free(ctx, w);
}

size_t onednn_share_count(pl_module_ctx *ctx)
{
    size_t n = 0;
    pthread_mutex_lock(&ctx->share.mu);
    for (const struct onednn_shared_weight *w = ctx->share.head; w != NULL; w = w->next)
        n++;
    pthread_mutex_unlock(&ctx->share.mu);
    return n;
}

int onednn_share_denormals(pl_module_ctx *ctx, uint64_t digest, size_t bytes)
{
    struct onednn_share *s = &ctx->share;
    int found = -1;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n_scanned && found < 0; i++)
        if (s->scanned[i].digest == digest && s->scanned[i].bytes == bytes)
            found = s->scanned[i].denormals;
    pthread_mutex_unlock(&s->mu);
    return found;
}

/* The slot of the address ring holding DATA (BYTES), under S's lock; with
 * ADD, a new one (the oldest replaced) when none does, else
 * ONEDNN_SHARE_SEEN. *OUT_FOUND says whether it held DATA already. */
static size_t scan_at_slot(struct onednn_share *s, const void *data, size_t bytes, int add,
                           int *out_found)
{
    for (size_t i = 0; i < s->n_scan_at; i++)
        if (s->scan_at[i].data == data && s->scan_at[i].bytes == bytes) {
            *out_found = 1;
            return i;
        }
    *out_found = 0;
    if (!add)
        return ONEDNN_SHARE_SEEN;
    size_t i = s->next_scan_at;
    s->scan_at[i].data = data;
    s->scan_at[i].bytes = bytes;
    s->scan_at[i].denormals = -1;
    s->next_scan_at = (s->next_scan_at + 1) % ONEDNN_SHARE_SEEN;
    if (s->n_scan_at < ONEDNN_SHARE_SEEN)
        s->n_scan_at++;
    return i;
}

int onednn_share_scan_again(pl_module_ctx *ctx, const void *data, size_t bytes)
{
    struct onednn_share *s = &ctx->share;
    int again;
    pthread_mutex_lock(&s->mu);
    scan_at_slot(s, data, bytes, 1, &again);
    pthread_mutex_unlock(&s->mu);
    return again;
}

void onednn_share_note_denormals(pl_module_ctx *ctx, uint64_t digest, size_t bytes,
                                 int denormals)
{
    struct onednn_share *s = &ctx->share;
    pthread_mutex_lock(&s->mu);
    s->scanned[s->next_scanned].digest = digest;
    s->scanned[s->next_scanned].bytes = bytes;
    s->scanned[s->next_scanned].denormals = denormals;
    s->next_scanned = (s->next_scanned + 1) % ONEDNN_SHARE_SEEN;
    if (s->n_scanned < ONEDNN_SHARE_SEEN)
        s->n_scanned++;
    pthread_mutex_unlock(&s->mu);
}

int onednn_share_denormals_at(pl_module_ctx *ctx, const void *data, size_t bytes)
{
    struct onednn_share *s = &ctx->share;
    int found;
    pthread_mutex_lock(&s->mu);
    size_t i = scan_at_slot(s, data, bytes, 0, &found);
    int denormals = found ? s->scan_at[i].denormals : -1;
    pthread_mutex_unlock(&s->mu);
    return denormals;
}

void onednn_share_note_denormals_at(pl_module_ctx *ctx, const void *data, size_t bytes,
                                    int denormals)
{
    struct onednn_share *s = &ctx->share;
    int found;
    pthread_mutex_lock(&s->mu);
    s->scan_at[scan_at_slot(s, data, bytes, 1, &found)].denormals = denormals;
    pthread_mutex_unlock(&s->mu);
}
