/* hostbuf.c — recycled output buffers (hostbuf.h).
 *
 * A loop of runs whose outputs are large (an LLM's KV caches, a
 * segmentation map) allocates them on every run and frees them after it.
 * glibc then trims the heap's top on the free and grows it again on the
 * next run, and every page of the new outputs is faulted in afresh: a
 * decode step of a lone GroupQueryAttention node with 1 MB of presents
 * took 0.46 ms, 0.28 of them in 239 page faults, and how often that
 * happens hangs on which other allocations sit above the outputs (the
 * same step took 0.19 ms with another set of modules loaded). Buffers of
 * PL_HOSTBUF_MIN bytes or more that come back are kept, up to
 * PL_HOSTBUF_SLOTS of them and PL_HOSTBUF_MAX_TOTAL bytes, and a request
 * takes the smallest kept one that holds it without wasting more than a
 * quarter; new ones are made an eighth larger than asked (in pages), so
 * a cache that grows by a token a run reuses its last buffer for a while.
 * Sizes come from malloc_usable_size: without glibc nothing is kept. */
#include "hostbuf.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
#define PL_HOSTBUF_KEEP 1
#else
#define PL_HOSTBUF_KEEP 0
#endif

#define PL_HOSTBUF_MIN ((size_t)64 << 10)
#define PL_HOSTBUF_SLOTS 64
#define PL_HOSTBUF_MAX_TOTAL ((size_t)256 << 20)

static pthread_mutex_t pl_hostbuf_mu = PTHREAD_MUTEX_INITIALIZER;
static void *pl_hostbuf_ptr[PL_HOSTBUF_SLOTS];
static size_t pl_hostbuf_size[PL_HOSTBUF_SLOTS];
static size_t pl_hostbuf_n, pl_hostbuf_total;

void *pl_hostbuf_get(size_t bytes)
{
    if (PL_HOSTBUF_KEEP && bytes >= PL_HOSTBUF_MIN) {
        pthread_mutex_lock(&pl_hostbuf_mu);
        size_t best = PL_HOSTBUF_SLOTS;
        for (size_t i = 0; i < pl_hostbuf_n; i++)
            if (pl_hostbuf_size[i] >= bytes && pl_hostbuf_size[i] - bytes <= bytes / 4 &&
                (best == PL_HOSTBUF_SLOTS || pl_hostbuf_size[i] < pl_hostbuf_size[best]))
                best = i;
        void *p = NULL;
        if (best < PL_HOSTBUF_SLOTS) {
            p = pl_hostbuf_ptr[best];
            pl_hostbuf_total -= pl_hostbuf_size[best];
            pl_hostbuf_n--;
            pl_hostbuf_ptr[best] = pl_hostbuf_ptr[pl_hostbuf_n];
            pl_hostbuf_size[best] = pl_hostbuf_size[pl_hostbuf_n];
        }
        pthread_mutex_unlock(&pl_hostbuf_mu);
        if (p != NULL)
            return p;
        /* an eighth more, in whole pages, for outputs that grow */
        size_t more = bytes / 8;
        if (bytes <= SIZE_MAX - more - 4096)
            bytes = (bytes + more + 4095) & ~(size_t)4095;
    }
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0)
        return NULL;
    return p;
}

void pl_hostbuf_put(void *data)
{
    if (data == NULL)
        return;
#if PL_HOSTBUF_KEEP
    size_t size = malloc_usable_size(data);
    if (size >= PL_HOSTBUF_MIN && ((uintptr_t)data & 63) == 0) {
        pthread_mutex_lock(&pl_hostbuf_mu);
        bool kept = false;
        if (pl_hostbuf_n < PL_HOSTBUF_SLOTS && size <= PL_HOSTBUF_MAX_TOTAL - pl_hostbuf_total) {
            pl_hostbuf_ptr[pl_hostbuf_n] = data;
            pl_hostbuf_size[pl_hostbuf_n++] = size;
            pl_hostbuf_total += size;
            kept = true;
        }
        pthread_mutex_unlock(&pl_hostbuf_mu);
        if (kept)
            return;
    }
#endif
    free(data);
}

void pl_hostbuf_flush(void)
{
    pthread_mutex_lock(&pl_hostbuf_mu);
    for (size_t i = 0; i < pl_hostbuf_n; i++)
        free(pl_hostbuf_ptr[i]);
    pl_hostbuf_n = 0;
    pl_hostbuf_total = 0;
    pthread_mutex_unlock(&pl_hostbuf_mu);
}
