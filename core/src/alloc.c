/* alloc.c — allocation with a failure switch. Production code pays one
 * relaxed atomic increment per call; tests use pl_alloc_fail_at to walk
 * every allocation of graph loading and planning and check that each failure
 * comes back as an out-of-memory status without a leak. */
#include "alloc.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_long pl_alloc_counter;
static atomic_long pl_alloc_fail_index; /* 0: never fail */

static int pl_alloc_should_fail(void)
{
    long fail = atomic_load_explicit(&pl_alloc_fail_index, memory_order_relaxed);
    long n = atomic_fetch_add_explicit(&pl_alloc_counter, 1, memory_order_relaxed) + 1;
    return fail > 0 && n >= fail;
}

void *pl_malloc(size_t bytes)
{
    if (pl_alloc_should_fail())
        return NULL;
    return malloc(bytes ? bytes : 1);
}

void *pl_calloc(size_t count, size_t size)
{
    if (pl_alloc_should_fail())
        return NULL;
    if (count == 0 || size == 0)
        return calloc(1, 1);
    return calloc(count, size);
}

void *pl_realloc(void *ptr, size_t bytes)
{
    if (pl_alloc_should_fail())
        return NULL;
    return realloc(ptr, bytes ? bytes : 1);
}

void pl_free(void *ptr)
{
    free(ptr);
}

char *pl_xstrndup(const char *s, size_t n)
{
    if (s == NULL)
        return NULL;
    char *out = pl_malloc(n + 1);
    if (out == NULL)
        return NULL;
    memcpy(out, s, n);
    out[n] = '\0';
    return out;
}

char *pl_xstrdup(const char *s)
{
    return s ? pl_xstrndup(s, strlen(s)) : NULL;
}

void pl_alloc_fail_at(long n)
{
    atomic_store(&pl_alloc_counter, 0);
    atomic_store(&pl_alloc_fail_index, n);
}

long pl_alloc_count(void)
{
    return atomic_load(&pl_alloc_counter);
}

static pthread_once_t pl_alloc_jansson_once = PTHREAD_ONCE_INIT;
static void pl_alloc_jansson_init(void)
{
    json_set_alloc_funcs(pl_malloc, pl_free);
}

void pl_alloc_route_jansson(void)
{
    pthread_once(&pl_alloc_jansson_once, pl_alloc_jansson_init);
}
