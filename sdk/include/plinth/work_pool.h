/* plinth/work_pool.h — buffers a run borrows for its length (header only).
 *
 * A run's intermediate values need memory only while it runs. Kept per
 * compiled object (per session, per subgraph), that memory adds up: a
 * model of a hundred subgraphs, or a staged session with a tail per input
 * shape, holds the sum of all their needs though they run one after
 * another. A work pool holds it instead: a run takes a buffer of at least
 * its need and gives it back when it ends. It hands out the smallest free
 * buffer that is big enough; when none is, it frees the largest free one
 * (too small) and allocates anew, so that runs one after another settle on
 * a single buffer of the largest need, and N runs in flight on N buffers.
 * The buffer a run gets may differ from its last one: a user rebinds its
 * pointers when the address changed (it rarely does).
 *
 * The core keeps one for its host arenas; a module may keep its own (the
 * onednn module does, for its subgraphs' temporaries and scratchpads).
 * Thread-safe; the list itself uses malloc. */
#ifndef PLINTH_WORK_POOL_H
#define PLINTH_WORK_POOL_H

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One buffer: P is NULL when the allocation failed. */
typedef struct pl_work_buf {
    void *p;
    size_t bytes;
} pl_work_buf;

typedef struct pl_work_pool {
    pthread_mutex_t mu;
    pl_work_buf *free_bufs;
    size_t n_free, cap_free;
    /* How buffers are made and freed: ALLOC returns BYTES of memory (the
     * caller's alignment), or NULL. */
    void *(*alloc)(void *ctx, size_t bytes);
    void (*release)(void *ctx, void *p);
    void *ctx;
} pl_work_pool;

static inline void pl_work_pool_init(pl_work_pool *wp, void *(*alloc)(void *, size_t),
                                     void (*release)(void *, void *), void *ctx)
{
    pthread_mutex_init(&wp->mu, NULL);
    wp->free_bufs = NULL;
    wp->n_free = wp->cap_free = 0;
    wp->alloc = alloc;
    wp->release = release;
    wp->ctx = ctx;
}

/* A buffer of at least BYTES, held by the caller until pl_work_pool_give. */
static inline pl_work_buf pl_work_pool_take(pl_work_pool *wp, size_t bytes)
{
    pl_work_buf w = {NULL, 0}, drop = {NULL, 0};
    pthread_mutex_lock(&wp->mu);
    size_t n = wp->n_free, best = n, largest = n;
    for (size_t i = 0; i < n; i++) {
        size_t b = wp->free_bufs[i].bytes;
        if (b >= bytes && (best == n || b < wp->free_bufs[best].bytes))
            best = i;
        if (largest == n || b > wp->free_bufs[largest].bytes)
            largest = i;
    }
    size_t pick = best < n ? best : largest;
    if (pick < n) {
        if (best < n)
            w = wp->free_bufs[pick];
        else
            drop = wp->free_bufs[pick];
        wp->free_bufs[pick] = wp->free_bufs[--wp->n_free];
    }
    pthread_mutex_unlock(&wp->mu);
    if (drop.p != NULL)
        wp->release(wp->ctx, drop.p);
    if (w.p == NULL) {
        w.p = wp->alloc(wp->ctx, bytes ? bytes : 1);
        w.bytes = w.p != NULL ? bytes : 0;
    }
    return w;
}

/* Gives W back for later runs (freed at once when the list cannot grow). */
static inline void pl_work_pool_give(pl_work_pool *wp, pl_work_buf w)
{
    if (w.p == NULL)
        return;
    pthread_mutex_lock(&wp->mu);
    if (wp->n_free == wp->cap_free) {
        size_t cap = wp->cap_free ? 2 * wp->cap_free : 4;
        pl_work_buf *grown = (pl_work_buf *)realloc(wp->free_bufs, cap * sizeof *grown);
        if (grown != NULL) {
            wp->free_bufs = grown;
            wp->cap_free = cap;
        }
    }
    int kept = wp->n_free < wp->cap_free;
    if (kept)
        wp->free_bufs[wp->n_free++] = w;
    pthread_mutex_unlock(&wp->mu);
    if (!kept)
        wp->release(wp->ctx, w.p);
}

/* Frees every free buffer (buffers still taken are the takers' to give
 * back first) and the list. */
static inline void pl_work_pool_destroy(pl_work_pool *wp)
{
    for (size_t i = 0; i < wp->n_free; i++)
        wp->release(wp->ctx, wp->free_bufs[i].p);
    free(wp->free_bufs);
    wp->free_bufs = NULL;
    wp->n_free = wp->cap_free = 0;
    pthread_mutex_destroy(&wp->mu);
}

#ifdef __cplusplus
}
#endif

#endif /* PLINTH_WORK_POOL_H */
