/* alloc.h — how the core allocates. Every block the core makes goes through
 * a pl_allocator (plinth.h): the runtime's, which its models and sessions
 * inherit, or, for code that is handed no allocator, the calling thread's
 * current one (pl_alloc_current: the allocator of the public call in
 * progress, else the system one). Tests wrap a failing allocator around a
 * runtime's (tests/failing_allocator.h) to fail every allocation in turn
 * and prove that each failure comes back as an out-of-memory status and
 * leaks nothing.
 *
 * Each block records the allocator that made it in a 16-byte header, so
 * pl_free and pl_realloc need no allocator argument and a block may be
 * freed by code that was handed none (session, plan and partition do not
 * take one yet). Blocks are aligned as malloc's. Never hand a block to
 * libc's free, nor libc's memory (strdup, vasprintf, json_dumps) to
 * pl_free. Jansson keeps its own global allocator (malloc): the core never
 * replaces it, since an application embedding the core may use jansson too. */
#ifndef PL_CORE_ALLOC_H
#define PL_CORE_ALLOC_H

#include <stdarg.h>
#include <stddef.h>

#include "plinth/plinth.h"

/* An allocator with ctl NULL resolved to the system one. */
pl_allocator pl_allocator_resolve(pl_allocator a);

/* Blocks through the allocator A (by value; ctl NULL: the system one).
 * NULL when the allocator refuses or a size overflows; bytes 0 is 1. */
void *pl_alloc_malloc(pl_allocator a, size_t bytes);
void *pl_alloc_calloc(pl_allocator a, size_t count, size_t size);
/* PTR NULL: a new block from A. Otherwise PTR's own allocator resizes it
 * (A is not used); on failure PTR is left as it was. */
void *pl_alloc_realloc(pl_allocator a, void *ptr, size_t bytes);
/* strdup / strndup / vasprintf-like through A; NULL on NULL input
 * (strings) or failure. */
char *pl_alloc_strdup(pl_allocator a, const char *s);
char *pl_alloc_strndup(pl_allocator a, const char *s, size_t n);
char *pl_alloc_vstrdupf(pl_allocator a, const char *fmt, va_list ap);
char *pl_alloc_strdupf(pl_allocator a, const char *fmt, ...)
    PL_PRINTF_LIKE(2, 3);

/* Frees a block made by any function of this header; NULL is a no-op. */
void pl_free(void *ptr);

/* How many allocations have failed on the calling thread so far. A public
 * call compares it before and after, to fail as out of memory when a
 * failure was absorbed on the way (a diagnostic line dropped, a module
 * refused because the core ran out of memory). */
unsigned long pl_alloc_failures(void);

/* The calling thread's current allocator: the one the innermost open scope
 * names, else the system allocator. */
pl_allocator pl_alloc_current(void);
/* Makes A the calling thread's current allocator until the matching
 * pl_alloc_scope_leave, which restores what pl_alloc_scope_enter returned.
 * Public entry points open a scope with their object's allocator, so that
 * code not handed an allocator still allocates through it. */
pl_allocator pl_alloc_scope_enter(pl_allocator a);
void pl_alloc_scope_leave(pl_allocator previous);

/* The same through pl_alloc_current(), for code that has no allocator at
 * hand. */
void *pl_malloc(size_t bytes);
void *pl_calloc(size_t count, size_t size);
void *pl_realloc(void *ptr, size_t bytes);
char *pl_xstrdup(const char *s);
char *pl_xstrndup(const char *s, size_t n);

#endif
