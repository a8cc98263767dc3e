/* plinth/graph_hash.h — a 64-bit hash of bytes and of a subgraph, for the
 * modules that export compiled subgraphs (PL_CAP_EXPORT): import_compiled
 * compares the hash a blob was written for with the hash of the view it is
 * offered, and a blob's trailer checksums its bytes.
 *
 * Header-only (static inline) on top of the host table's graph view: nothing
 * new crosses the module boundary, so the ABI is unchanged. Not
 * cryptographic: it tells subgraphs and blobs apart and catches damage. */
#ifndef PLINTH_GRAPH_HASH_H
#define PLINTH_GRAPH_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "plinth/host.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The value a hash starts from (FNV-1a's offset basis). */
#define PL_HASH_SEED 0xcbf29ce484222325ull

/* One step of the hash: word W folded into state X. */
static inline uint64_t pl_hash_mix_(uint64_t x, uint64_t w)
{
    x = (x ^ w) * 0x9e3779b97f4a7c15ull;
    return x ^ (x >> 29);
}

/* Folds N bytes at DATA into *H: whole 32-byte blocks first, in four
 * independent lanes (one 8-byte word each, so the multiplies overlap),
 * folded into *H after the last block; then the remaining 8-byte words
 * (little-endian, a multiply and a xor-shift each) and the last N % 8
 * bytes one at a time (FNV-1a). The lanes make it about three times faster
 * than one chain over the tens of megabytes of weights a subgraph and its
 * blob hold; under 32 bytes it is the one chain. */
static inline void pl_hash_bytes(uint64_t *h, const void *data, size_t n)
{
    const unsigned char *p = (const unsigned char *)data;
    uint64_t x = *h;
    size_t i = 0;
    if (n >= 32) {
        uint64_t l0 = x, l1 = x ^ 0x6a09e667f3bcc909ull, l2 = x ^ 0xbb67ae8584caa73bull,
                 l3 = x ^ 0x3c6ef372fe94f82bull;
        for (; i + 32 <= n; i += 32) {
            uint64_t w[4];
            memcpy(w, p + i, 32);
            l0 = pl_hash_mix_(l0, w[0]);
            l1 = pl_hash_mix_(l1, w[1]);
            l2 = pl_hash_mix_(l2, w[2]);
            l3 = pl_hash_mix_(l3, w[3]);
        }
        x = pl_hash_mix_(pl_hash_mix_(pl_hash_mix_(pl_hash_mix_(x, l0), l1), l2), l3);
    }
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        x = pl_hash_mix_(x, w);
    }
    for (; i < n; i++) {
        x ^= p[i];
        x *= 0x100000001b3ull;
    }
    *h = x;
}

static inline void pl_hash_u64(uint64_t *h, uint64_t v)
{
    pl_hash_bytes(h, &v, sizeof v);
}

/* A string with its terminator, so "ab","c" and "a","bc" differ; NULL
 * hashes as "". */
static inline void pl_hash_str(uint64_t *h, const char *s)
{
    s = s != NULL ? s : "";
    pl_hash_bytes(h, s, strlen(s) + 1);
}

/* pl_hash_bytes over bytes that arrive in pieces (a blob written through a
 * sink): pl_hash_stream_end gives what pl_hash_bytes from PL_HASH_SEED
 * gives over the pieces put end to end, however they were cut. */
typedef struct pl_hash_stream {
    uint64_t h;
    uint64_t lane[4];      /* the lanes, once a whole block has been seen */
    int blocks;            /* whether one has */
    unsigned char part[32]; /* the bytes of an unfinished block */
    size_t n_part;
} pl_hash_stream;

static inline void pl_hash_stream_init(pl_hash_stream *s)
{
    s->h = PL_HASH_SEED;
    s->blocks = 0;
    s->n_part = 0;
}

/* Folds the whole 32-byte blocks of B (N a multiple of 32) into the lanes. */
static inline void pl_hash_stream_blocks_(pl_hash_stream *s, const unsigned char *b, size_t n)
{
    if (n == 0)
        return;
    if (!s->blocks) {
        uint64_t x = s->h;
        s->lane[0] = x;
        s->lane[1] = x ^ 0x6a09e667f3bcc909ull;
        s->lane[2] = x ^ 0xbb67ae8584caa73bull;
        s->lane[3] = x ^ 0x3c6ef372fe94f82bull;
        s->blocks = 1;
    }
    for (size_t i = 0; i < n; i += 32) {
        uint64_t w[4];
        memcpy(w, b + i, 32);
        for (int k = 0; k < 4; k++)
            s->lane[k] = pl_hash_mix_(s->lane[k], w[k]);
    }
}

static inline void pl_hash_stream_add(pl_hash_stream *s, const void *data, size_t n)
{
    const unsigned char *b = (const unsigned char *)data;
    if (s->n_part > 0) {
        size_t take = 32 - s->n_part < n ? 32 - s->n_part : n;
        memcpy(s->part + s->n_part, b, take);
        s->n_part += take;
        b += take;
        n -= take;
        if (s->n_part < 32)
            return;
        pl_hash_stream_blocks_(s, s->part, 32);
        s->n_part = 0;
    }
    size_t whole = n / 32 * 32;
    pl_hash_stream_blocks_(s, b, whole);
    memcpy(s->part, b + whole, n - whole);
    s->n_part = n - whole;
}

static inline uint64_t pl_hash_stream_end(pl_hash_stream *s)
{
    if (s->blocks)
        for (int k = 0; k < 4; k++)
            s->h = pl_hash_mix_(s->h, s->lane[k]);
    s->blocks = 0;
    /* The tail is under 32 bytes: pl_hash_bytes takes it word by word. */
    pl_hash_bytes(&s->h, s->part, s->n_part);
    s->n_part = 0;
    return s->h;
}

/* The tensors of a view as pl_hash_view meets them: SEEN in order of
 * first appearance (room for every reference of the view), and ORD, when
 * not NULL, each tensor id below N_ORD's ordinal in SEEN (-1: not yet), so
 * that a reference costs O(1), not a scan of SEEN (a subgraph of 5000
 * nodes made 10^8 comparisons). */
typedef struct pl_hash_seen_ {
    int64_t *seen;
    size_t n_seen;
    int64_t *ord;
    size_t n_ord;
} pl_hash_seen_;

/* A reference to tensor T of VIEW: its ordinal among the tensors seen so
 * far (T is added when new), and on first sight its dtype, shape and, for
 * a constant, its bytes. */
static inline void pl_hash_view_tensor_(const pl_graph_api *g, const pl_graph_view *view,
                                        uint64_t *h, pl_hash_seen_ *s, int64_t t)
{
    int indexed = s->ord != NULL && t >= 0 && (uint64_t)t < s->n_ord;
    if (indexed && s->ord[t] >= 0) {
        pl_hash_u64(h, (uint64_t)s->ord[t]);
        return;
    }
    for (size_t i = 0; !indexed && i < s->n_seen; i++)
        if (s->seen[i] == t) {
            pl_hash_u64(h, i);
            return;
        }
    if (indexed)
        s->ord[t] = (int64_t)s->n_seen;
    pl_hash_u64(h, s->n_seen);
    s->seen[s->n_seen++] = t;
    pl_dtype dt = {0, 0, 0};
    int32_t ndim = -1;
    const int64_t *dims = NULL;
    if (t >= 0 && g->tensor_type(view, t, &dt, &ndim, &dims)) {
        pl_hash_u64(h, ((uint64_t)dt.code << 24) | ((uint64_t)dt.bits << 16) | dt.lanes);
        pl_hash_u64(h, (uint64_t)(int64_t)ndim);
        for (int32_t d = 0; d < ndim; d++)
            pl_hash_u64(h, (uint64_t)dims[d]);
    }
    /* A constant enters as its size and the digest of its bytes, which
     * the core may know without reading them (tensor_digest, ABI 1.6). */
    const void *data = NULL;
    size_t bytes = 0;
    uint64_t digest = PL_HASH_SEED;
    if (t >= 0 && PL_ABI_HAS_FN(pl_graph_api, g, tensor_digest)) {
        if (g->tensor_digest(view, t, &bytes, &digest)) {
            pl_hash_u64(h, bytes);
            pl_hash_u64(h, digest);
        }
    } else if (t >= 0 && g->tensor_constant(view, t, &data, &bytes)) {
        pl_hash_bytes(&digest, data, bytes);
        pl_hash_u64(h, bytes);
        pl_hash_u64(h, digest);
    }
}

/* Attribute NAME of NODE: its kind, then its value. */
static inline void pl_hash_view_attr_(const pl_graph_api *g, const pl_graph_view *view,
                                      uint64_t *h, size_t node, const char *name)
{
    pl_graph_attr_kind kind = g->attr_kind(view, node, name);
    pl_hash_u64(h, (uint64_t)kind);
    int64_t iv;
    double fv;
    const int64_t *is;
    const double *fs;
    const char *s;
    const char *const *ss;
    size_t len;
    switch (kind) {
    case PL_GRAPH_ATTR_INT:
        if (g->attr_int(view, node, name, &iv))
            pl_hash_u64(h, (uint64_t)iv);
        break;
    case PL_GRAPH_ATTR_FLOAT:
        if (g->attr_float(view, node, name, &fv))
            pl_hash_bytes(h, &fv, sizeof fv);
        break;
    case PL_GRAPH_ATTR_STRING:
        if (g->attr_string(view, node, name, &s, &len)) {
            pl_hash_u64(h, len);
            pl_hash_bytes(h, s, len);
        }
        break;
    case PL_GRAPH_ATTR_INTS:
        if (g->attr_ints(view, node, name, &is, &len)) {
            pl_hash_u64(h, len);
            pl_hash_bytes(h, is, len * sizeof *is);
        }
        break;
    case PL_GRAPH_ATTR_FLOATS:
        if (g->attr_floats(view, node, name, &fs, &len)) {
            pl_hash_u64(h, len);
            pl_hash_bytes(h, fs, len * sizeof *fs);
        }
        break;
    case PL_GRAPH_ATTR_STRINGS:
        if (g->attr_strings(view, node, name, &ss, &len)) {
            pl_hash_u64(h, len);
            for (size_t i = 0; i < len; i++)
                pl_hash_str(h, ss[i]);
        }
        break;
    default:
        break;
    }
}

/* The hash of VIEW as a module compiles it, into *out_hash: SALT (the
 * module and its format, "mymod subgraph 1": change it when what the hash
 * covers changes), then the view's inputs, each node's op, domain, opset,
 * the N_ATTRS attributes ATTRS names (those the module's compile reads;
 * kind and value, absent ones too) and its wiring, and the view's outputs.
 * A tensor counts by its order of first appearance, not its index in the
 * graph, so the same subgraph in another graph hashes the same; on first
 * sight its dtype, shape and constant bytes count too. Scratch memory comes
 * from HOST's host_alloc for HOST_CTX. Returns 1, or 0 when out of memory
 * (*out_hash untouched). */
static inline int pl_hash_view(const pl_host_api *host, pl_host_ctx *host_ctx,
                               const pl_graph_view *view, const char *salt,
                               const char *const *attrs, size_t n_attrs, uint64_t *out_hash)
{
    const pl_graph_api *g = host->graph;
    size_t nodes = g->node_count(view), refs = g->input_count(view) + g->output_count(view);
    for (size_t n = 0; n < nodes; n++)
        refs += g->node_input_count(view, n) + g->node_output_count(view, n);
    if (refs + 1 > SIZE_MAX / sizeof(int64_t))
        return 0;
    pl_hash_seen_ s = {(int64_t *)host->host_alloc(host_ctx, (refs + 1) * sizeof *s.seen, 0), 0,
                       NULL, 0};
    if (s.seen == NULL)
        return 0;
    /* the ordinal map, where the table says how many tensors there are
     * (without it, or out of memory for it, the scan gives the same hash) */
    size_t nt = g->tensor_count != NULL ? g->tensor_count(view) : 0;
    if (nt > 0 && nt <= SIZE_MAX / sizeof(int64_t)) {
        s.ord = (int64_t *)host->host_alloc(host_ctx, nt * sizeof *s.ord, 0);
        s.n_ord = s.ord != NULL ? nt : 0;
        for (size_t i = 0; i < s.n_ord; i++)
            s.ord[i] = -1;
    }
    uint64_t h = PL_HASH_SEED;
    pl_hash_str(&h, salt);
    pl_hash_u64(&h, g->input_count(view));
    for (size_t i = 0; i < g->input_count(view); i++)
        pl_hash_view_tensor_(g, view, &h, &s, g->input(view, i));
    pl_hash_u64(&h, nodes);
    for (size_t n = 0; n < nodes; n++) {
        pl_hash_str(&h, g->node_op(view, n));
        pl_hash_str(&h, g->node_domain(view, n));
        pl_hash_u64(&h, (uint64_t)g->node_opset(view, n));
        for (size_t a = 0; a < n_attrs; a++)
            pl_hash_view_attr_(g, view, &h, n, attrs[a]);
        size_t ni = g->node_input_count(view, n), no = g->node_output_count(view, n);
        pl_hash_u64(&h, ni);
        pl_hash_u64(&h, no);
        for (size_t k = 0; k < ni; k++)
            pl_hash_view_tensor_(g, view, &h, &s, g->node_input(view, n, k));
        for (size_t k = 0; k < no; k++)
            pl_hash_view_tensor_(g, view, &h, &s, g->node_output(view, n, k));
    }
    pl_hash_u64(&h, g->output_count(view));
    for (size_t i = 0; i < g->output_count(view); i++)
        pl_hash_view_tensor_(g, view, &h, &s, g->output(view, i));
    if (s.ord != NULL)
        host->host_free(host_ctx, s.ord);
    host->host_free(host_ctx, s.seen);
    *out_hash = h;
    return 1;
}

#ifdef __cplusplus
}
#endif

#endif /* PLINTH_GRAPH_HASH_H */
