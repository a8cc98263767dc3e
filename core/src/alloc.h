/* alloc.h — the core's allocation functions for everything a model file or
 * a plan can make it allocate (graph, JSON, opset inference, planner). They
 * forward to malloc, and let tests fail the Nth allocation to prove that
 * every failure path returns an out-of-memory status and leaks nothing. */
#ifndef PL_CORE_ALLOC_H
#define PL_CORE_ALLOC_H

#include <stddef.h>

void *pl_malloc(size_t bytes);
void *pl_calloc(size_t count, size_t size);
void *pl_realloc(void *ptr, size_t bytes);
void pl_free(void *ptr);
/* strdup / strndup through pl_malloc; NULL on NULL input or failure. */
char *pl_xstrdup(const char *s);
char *pl_xstrndup(const char *s, size_t n);

/* Test hook: from now on, fail the Nth allocation (1 = the next one) and
 * every one after it until reset; 0 turns failures off. Process-wide. */
void pl_alloc_fail_at(long n);
/* Allocations made since the last pl_alloc_fail_at call. */
long pl_alloc_count(void);

/* Makes jansson allocate through these functions (once per process). */
void pl_alloc_route_jansson(void);

#endif
