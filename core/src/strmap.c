/* strmap.c — name lookup for graphs of any size: open addressing with
 * linear probing, resized at 50% load. Every slot keeps its key's hash, so
 * a probe compares strings only when the hashes agree and growing rehashes
 * nothing. Names are long ("/m/features/features.3/block/block.0/...") and
 * every optimiser pass that rewrites a graph puts all of them again
 * (tv_swin_t: a fifth of its load was this map with byte-wise FNV-1a and a
 * strcmp per probe), so the hash reads eight bytes at a time. */
#include "strmap.h"

#include <string.h>

#include "alloc.h"

static uint32_t pl_strmap_hash(const char *s)
{
    size_t n = strlen(s);
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    uint64_t tail = 0;
    memcpy(&tail, s + i, n - i);
    h = (h ^ tail) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 32;
    return (uint32_t)h;
}

/* The slot of KEY (hash H): where it is, or the empty slot ending its probe. */
static size_t pl_strmap_slot(const pl_strmap *m, const char *key, uint32_t h)
{
    size_t mask = m->cap - 1;
    size_t i = h & mask;
    while (m->keys[i] != NULL && !(m->hashes[i] == h && strcmp(m->keys[i], key) == 0))
        i = (i + 1) & mask;
    return i;
}

bool pl_strmap_get(const pl_strmap *m, const char *key, uint32_t *out_value)
{
    if (m->cap == 0)
        return false;
    size_t i = pl_strmap_slot(m, key, pl_strmap_hash(key));
    if (m->keys[i] == NULL)
        return false;
    *out_value = m->values[i];
    return true;
}

static bool pl_strmap_grow(pl_strmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    if (cap < m->cap || cap > ((size_t)1 << 32))
        return false;
    const char **keys = pl_alloc_calloc(m->alloc, cap, sizeof *keys);
    uint32_t *values = pl_alloc_calloc(m->alloc, cap, sizeof *values);
    uint32_t *hashes = pl_alloc_calloc(m->alloc, cap, sizeof *hashes);
    if (keys == NULL || values == NULL || hashes == NULL) {
        pl_free(keys);
        pl_free(values);
        pl_free(hashes);
        return false;
    }
    size_t mask = cap - 1;
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i] == NULL)
            continue;
        size_t j = m->hashes[i] & mask; /* keys are distinct: the first empty slot */
        while (keys[j] != NULL)
            j = (j + 1) & mask;
        keys[j] = m->keys[i];
        values[j] = m->values[i];
        hashes[j] = m->hashes[i];
    }
    pl_free(m->keys);
    pl_free(m->values);
    pl_free(m->hashes);
    m->keys = keys;
    m->values = values;
    m->hashes = hashes;
    m->cap = cap;
    return true;
}

bool pl_strmap_put(pl_strmap *m, const char *key, uint32_t value)
{
    if ((m->count + 1) * 2 > m->cap && !pl_strmap_grow(m))
        return false;
    uint32_t h = pl_strmap_hash(key);
    size_t i = pl_strmap_slot(m, key, h);
    if (m->keys[i] == NULL)
        m->count++;
    m->keys[i] = key;
    m->values[i] = value;
    m->hashes[i] = h;
    return true;
}

bool pl_strmap_clone(pl_strmap *dst, const pl_strmap *src,
                     const char *(*key_of)(const void *ctx, uint32_t value), const void *ctx)
{
    if (dst->cap != 0 || src->cap == 0)
        return dst->cap == 0 && src->cap == 0;
    const char **keys = pl_alloc_calloc(dst->alloc, src->cap, sizeof *keys);
    uint32_t *values = pl_alloc_malloc(dst->alloc, src->cap * sizeof *values);
    uint32_t *hashes = pl_alloc_malloc(dst->alloc, src->cap * sizeof *hashes);
    if (keys == NULL || values == NULL || hashes == NULL) {
        pl_free(keys);
        pl_free(values);
        pl_free(hashes);
        return false;
    }
    memcpy(values, src->values, src->cap * sizeof *values);
    memcpy(hashes, src->hashes, src->cap * sizeof *hashes);
    for (size_t i = 0; i < src->cap; i++)
        if (src->keys[i] != NULL)
            keys[i] = key_of(ctx, src->values[i]);
    dst->keys = keys;
    dst->values = values;
    dst->hashes = hashes;
    dst->cap = src->cap;
    dst->count = src->count;
    return true;
}

void pl_strmap_free(pl_strmap *m)
{
    pl_free(m->keys);
    pl_free(m->values);
    pl_free(m->hashes);
    memset(m, 0, sizeof *m);
}
