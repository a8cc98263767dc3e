/* model.h — the core's side of pl_model: a validated graph with inferred
 * types, the runtime that loaded it, and a reference count (sessions hold
 * their model). */
#ifndef PL_CORE_MODEL_H
#define PL_CORE_MODEL_H

#include <stdatomic.h>

#include "graph.h"
#include "registry.h"

struct pl_model {
    pl_runtime *runtime;
    /* The runtime's allocator, inherited: the model's own blocks and the
     * sessions made from it. */
    pl_allocator alloc;
    char *path;
    pl_graph *graph;
    _Atomic int refs;
};

void pl_model_retain(pl_model *model);
void pl_model_release(pl_model *model);

#endif
