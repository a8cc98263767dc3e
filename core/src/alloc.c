/* alloc.c — the core's allocation functions over a pl_allocator value.
 * Each block carries a header with the allocator that made it (so freeing
 * needs no allocator), and each thread has a current allocator for code
 * that is handed none: public entry points set it from their object for the
 * length of the call. There is no process-wide state: a test fails
 * allocations by wrapping one runtime's allocator, and other runtimes in
 * the process are untouched. */
#define _DEFAULT_SOURCE /* madvise */
#include "alloc.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The header before each block: the allocator, rounded up so that the
 * block after it keeps malloc's alignment. */
#define PL_ALLOC_ALIGN _Alignof(max_align_t)
#define PL_ALLOC_HEADER \
    ((sizeof(pl_allocator) + PL_ALLOC_ALIGN - 1) / PL_ALLOC_ALIGN * PL_ALLOC_ALIGN)

/* Blocks of at least this many bytes ask for transparent huge pages: a
 * folded weight (an f16 model's weights widened to f32, 340 MB for ViT-base)
 * was written into fresh 4 KiB pages, one fault each, most of its load
 * time. */
#define PL_ALLOC_HUGE_MIN (2u << 20)
#define PL_ALLOC_HUGE_PAGE ((uintptr_t)2 << 20)

/* Marks the whole 2 MiB pages inside P's BYTES for huge pages (where the
 * kernel grants them on request: THP "madvise"; a no-op where it never
 * does, and for pages already touched). */
static void pl_alloc_advise_huge(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    uintptr_t lo = ((uintptr_t)p + PL_ALLOC_HUGE_PAGE - 1) & ~(PL_ALLOC_HUGE_PAGE - 1);
    uintptr_t hi = ((uintptr_t)p + bytes) & ~(PL_ALLOC_HUGE_PAGE - 1);
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p, (void)bytes;
#endif
}

static bool pl_system_ctl(void *self, pl_allocator_command command,
                          size_t bytes, void **inout_ptr)
{
    (void)self;
    void *p = NULL;
    switch (command) {
    case PL_ALLOCATOR_MALLOC:
        p = malloc(bytes);
        break;
    case PL_ALLOCATOR_CALLOC:
        p = calloc(1, bytes);
        break;
    case PL_ALLOCATOR_REALLOC:
        p = realloc(*inout_ptr, bytes);
        break;
    case PL_ALLOCATOR_FREE:
        free(*inout_ptr);
        *inout_ptr = NULL;
        return true;
    }
    if (p == NULL)
        return false;
    if (command != PL_ALLOCATOR_FREE && bytes >= PL_ALLOC_HUGE_MIN)
        pl_alloc_advise_huge(p, bytes);
    *inout_ptr = p;
    return true;
}

pl_allocator pl_allocator_system(void)
{
    return (pl_allocator){.self = NULL, .ctl = pl_system_ctl};
}

pl_allocator pl_allocator_resolve(pl_allocator a)
{
    return a.ctl ? a : pl_allocator_system();
}

/* Refusals seen on this thread (pl_alloc_failures). */
static _Thread_local unsigned long pl_alloc_refusals;

unsigned long pl_alloc_failures(void)
{
    return pl_alloc_refusals;
}

/* Asks A for a block of BYTES plus the header and records A in it. */
static void *pl_alloc_block(pl_allocator a, pl_allocator_command command,
                            size_t bytes)
{
    a = pl_allocator_resolve(a);
    if (bytes == 0)
        bytes = 1;
    void *base = NULL;
    if (bytes > SIZE_MAX - PL_ALLOC_HEADER ||
        !a.ctl(a.self, command, bytes + PL_ALLOC_HEADER, &base) || base == NULL) {
        pl_alloc_refusals++;
        return NULL;
    }
    memcpy(base, &a, sizeof a);
    return (char *)base + PL_ALLOC_HEADER;
}

void *pl_alloc_malloc(pl_allocator a, size_t bytes)
{
    return pl_alloc_block(a, PL_ALLOCATOR_MALLOC, bytes);
}

void *pl_alloc_calloc(pl_allocator a, size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size) {
        pl_alloc_refusals++;
        return NULL;
    }
    return pl_alloc_block(a, PL_ALLOCATOR_CALLOC, count * size);
}

void *pl_alloc_realloc(pl_allocator a, void *ptr, size_t bytes)
{
    if (ptr == NULL)
        return pl_alloc_malloc(a, bytes);
    if (bytes == 0)
        bytes = 1;
    void *base = (char *)ptr - PL_ALLOC_HEADER;
    pl_allocator own;
    memcpy(&own, base, sizeof own);
    void *moved = base;
    if (bytes > SIZE_MAX - PL_ALLOC_HEADER ||
        !own.ctl(own.self, PL_ALLOCATOR_REALLOC, bytes + PL_ALLOC_HEADER, &moved) ||
        moved == NULL) {
        pl_alloc_refusals++;
        return NULL;
    }
    return (char *)moved + PL_ALLOC_HEADER;
}

void pl_free(void *ptr)
{
    if (ptr == NULL)
        return;
    void *base = (char *)ptr - PL_ALLOC_HEADER;
    pl_allocator own;
    memcpy(&own, base, sizeof own);
    own.ctl(own.self, PL_ALLOCATOR_FREE, 0, &base);
}

char *pl_alloc_strndup(pl_allocator a, const char *s, size_t n)
{
    if (s == NULL)
        return NULL;
    char *out = pl_alloc_malloc(a, n + 1);
    if (out == NULL)
        return NULL;
    memcpy(out, s, n);
    out[n] = '\0';
    return out;
}

char *pl_alloc_strdup(pl_allocator a, const char *s)
{
    return s ? pl_alloc_strndup(a, s, strlen(s)) : NULL;
}

char *pl_alloc_vstrdupf(pl_allocator a, const char *fmt, va_list ap)
{
    char small[256];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n < 0) {
        va_end(again);
        return NULL;
    }
    char *out = pl_alloc_malloc(a, (size_t)n + 1);
    if (out != NULL) {
        if ((size_t)n < sizeof small)
            memcpy(out, small, (size_t)n + 1);
        else
            vsnprintf(out, (size_t)n + 1, fmt, again);
    }
    va_end(again);
    return out;
}

char *pl_alloc_strdupf(pl_allocator a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *out = pl_alloc_vstrdupf(a, fmt, ap);
    va_end(ap);
    return out;
}

/* ---- the thread's current allocator -------------------------------------- */

static _Thread_local pl_allocator pl_alloc_scope;

pl_allocator pl_alloc_current(void)
{
    return pl_allocator_resolve(pl_alloc_scope);
}

pl_allocator pl_alloc_scope_enter(pl_allocator a)
{
    pl_allocator previous = pl_alloc_scope;
    pl_alloc_scope = pl_allocator_resolve(a);
    return previous;
}

void pl_alloc_scope_leave(pl_allocator previous)
{
    pl_alloc_scope = previous;
}

void *pl_malloc(size_t bytes)
{
    return pl_alloc_malloc(pl_alloc_scope, bytes);
}

void *pl_calloc(size_t count, size_t size)
{
    return pl_alloc_calloc(pl_alloc_scope, count, size);
}

void *pl_realloc(void *ptr, size_t bytes)
{
    return pl_alloc_realloc(pl_alloc_scope, ptr, bytes);
}

char *pl_xstrndup(const char *s, size_t n)
{
    return pl_alloc_strndup(pl_alloc_scope, s, n);
}

char *pl_xstrdup(const char *s)
{
    return pl_alloc_strdup(pl_alloc_scope, s);
}
