/* strmap.c — name lookup for graphs of any size: FNV-1a hashing, linear
 * probing, resized at 50% load. */
#include "strmap.h"

#include <string.h>

#include "alloc.h"

static uint64_t pl_strmap_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

bool pl_strmap_get(const pl_strmap *m, const char *key, uint32_t *out_value)
{
    if (m->cap == 0)
        return false;
    size_t mask = m->cap - 1;
    for (size_t i = pl_strmap_hash(key) & mask;; i = (i + 1) & mask) {
        if (m->keys[i] == NULL)
            return false;
        if (strcmp(m->keys[i], key) == 0) {
            *out_value = m->values[i];
            return true;
        }
    }
}

static void pl_strmap_insert(const char **keys, uint32_t *values, size_t cap,
                             const char *key, uint32_t value)
{
    size_t mask = cap - 1;
    size_t i = pl_strmap_hash(key) & mask;
    while (keys[i] != NULL && strcmp(keys[i], key) != 0)
        i = (i + 1) & mask;
    keys[i] = key;
    values[i] = value;
}

static bool pl_strmap_grow(pl_strmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    if (cap < m->cap)
        return false;
    const char **keys = pl_alloc_calloc(m->alloc, cap, sizeof *keys);
    uint32_t *values = pl_alloc_calloc(m->alloc, cap, sizeof *values);
    if (keys == NULL || values == NULL) {
        pl_free(keys);
        pl_free(values);
        return false;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i] != NULL)
            pl_strmap_insert(keys, values, cap, m->keys[i], m->values[i]);
    pl_free(m->keys);
    pl_free(m->values);
    m->keys = keys;
    m->values = values;
    m->cap = cap;
    return true;
}

bool pl_strmap_put(pl_strmap *m, const char *key, uint32_t value)
{
    if ((m->count + 1) * 2 > m->cap && !pl_strmap_grow(m))
        return false;
    uint32_t old;
    if (!pl_strmap_get(m, key, &old))
        m->count++;
    pl_strmap_insert(m->keys, m->values, m->cap, key, value);
    return true;
}

void pl_strmap_free(pl_strmap *m)
{
    pl_free(m->keys);
    pl_free(m->values);
    memset(m, 0, sizeof *m);
}
