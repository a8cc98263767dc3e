/* strmap.h — a string-keyed hash map from names to uint32_t indices, with
 * open addressing and no size limit. Keys are borrowed: the caller keeps
 * them alive (the graph owns its names). Allocates through its allocator,
 * set before the first put (zero: the system allocator). */
#ifndef PL_CORE_STRMAP_H
#define PL_CORE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plinth/plinth.h"

typedef struct pl_strmap {
    pl_allocator alloc;
    const char **keys;
    uint32_t *values;
    uint32_t *hashes; /* each key's hash: probes compare it before the string */
    size_t cap;    /* a power of two, or 0 */
    size_t count;
} pl_strmap;

/* Finds KEY; false when absent. */
bool pl_strmap_get(const pl_strmap *m, const char *key, uint32_t *out_value);
/* Inserts or replaces; false when out of memory. */
bool pl_strmap_put(pl_strmap *m, const char *key, uint32_t value);
/* Makes empty DST a copy of SRC whose keys are KEY_OF(CTX, value): the
 * same strings kept elsewhere (a graph copy's names, whose tensors keep
 * their ids), with no hashing or probing. False when out of memory (DST
 * stays empty) or DST is not empty. */
bool pl_strmap_clone(pl_strmap *dst, const pl_strmap *src,
                     const char *(*key_of)(const void *ctx, uint32_t value), const void *ctx);
void pl_strmap_free(pl_strmap *m);

#endif
