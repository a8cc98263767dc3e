/* array.h — what the core's other parts (eager.c) need of pl_array beyond
 * plinth.h: its module, references, and its variable on the engine. */
#ifndef PL_CORE_ARRAY_H
#define PL_CORE_ARRAY_H

#include "engine.h"
#include "registry.h"

/* The module whose device holds A, or NULL for host memory. */
pl_module *pl_array_module_internal(const pl_array *a);
void pl_array_retain_internal(pl_array *a);
void pl_array_release_internal(pl_array *a);
/* A's variable on RT's engine, made on first use; an array is used with
 * one runtime only (then it keeps that runtime, and so its engine,
 * alive). */
pl_status *pl_array_var_internal(pl_array *a, pl_runtime *rt, pl_var **out_var);

/* eager.c: the runtime's kernel cache, and the finished calls whose
 * references are dropped from the application's thread. */
pl_status *pl_eager_cache_create(pl_runtime *rt);
void pl_eager_cache_destroy(pl_runtime *rt);
void pl_eager_drain(pl_runtime *rt);

#endif
