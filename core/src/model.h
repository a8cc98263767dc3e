/* model.h — the core's side of pl_model: a validated graph with inferred
 * types, the runtime that loaded it, and a reference count (sessions hold
 * their model). */
#ifndef PL_CORE_MODEL_H
#define PL_CORE_MODEL_H

#include <pthread.h>
#include <stdatomic.h>

#include "graph.h"
#include "optimize.h"
#include "registry.h"

struct pl_model {
    pl_runtime *runtime;
    /* The runtime's allocator, inherited: the model's own blocks and the
     * sessions made from it. */
    pl_allocator alloc;
    char *path;
    pl_graph *graph;
    /* The graphs GRAPH was rewritten from (the one read, then one per
     * optimiser pass that changed it, at load and at each binding of an
     * input's shape), kept while the passes run because each rewrite
     * borrows its source's constants; when they are done, what GRAPH
     * borrows moves to it and only a source it reads inside stays
     * (pl_graph_take_from). */
    pl_graph **sources;
    size_t n_sources;
    pl_rewrites rewrites;     /* what the optimiser did (optimize.h) */
    /* The constants read out of the model file, which the core drops while
     * only modules with their own copies read them (filedata.h); borrowed
     * from the graph that was read. NULL for models made from a graph
     * (folding, bodies): they never drop anything. */
    struct pl_filedata *filedata;
    /* The graph runs once (constant folding): sessions offer its nodes to
     * the backends that run op by op before those that compile. */
    bool one_shot;
    /* The graph is a control-flow body: its program runs inline in the
     * worker of the node that calls it (pl_runner_run_inline), where a
     * kernel step costs about a quarter of one dispatched through the
     * engine; partitioning weighs steps by that. */
    bool inline_run;
    /* The graph is a part of a model (what folding runs, a control-flow
     * body, a staged session's prefix or tail): [placement] pins name the
     * model's nodes, and those this graph lacks are skipped here. */
    bool part;
    /* Sessions of other graphs of the same constants follow (a staged
     * session's tails, one per input signature): its views say so to the
     * modules (pl_graph_api.compile_repeated), which may then share
     * laid-out weights from the first compile on. */
    bool repeated;
    /* How many runs a session of this model is expected to serve, 0 for
     * many: a staged session's tail planned for a signature that seldom
     * repeats (stage.c), whose partition then weighs what compiling costs
     * against those runs (pl_cost.prepare_us). */
    double plan_runs;
    /* Modules a session of this model does not offer nodes (backends of the
     * order left out): a staged session's quick tail skips the modules that
     * took none of the tail planned before it (stage.c). Borrowed. */
    struct pl_module *const *skip;
    size_t n_skip;
    /* An input's shape was bound since the passes last ran: they run again
     * once, when the graph is next needed (pl_model_settle), however many
     * inputs were bound (each binding ran them all: a third of a
     * three-input model's load). SETTLE_MU orders that run between the
     * threads that make the model's first sessions. */
    bool rewrite_pending;
    /* String tensors (strtab.h): the table of the strings the model was
     * read with, and the names of its string inputs and outputs (their
     * graph tensors are int64 ids). NULL and 0 for a model without. */
    struct pl_strtab *strtab;
    char **string_io;
    size_t n_string_io;
    pthread_mutex_t settle_mu;
    _Atomic int refs;
};

/* Reads the graph of the model file PATH through the first loaded format
 * module whose can_import takes it (Plinth's JSON through the json module,
 * ONNX through onnx) and validates it; types are not inferred (pl_model_load
 * does that). Allocates through the calling thread's current allocator.
 * On success the caller owns *OUT (pl_graph_destroy). Core tests use it to
 * read a graph the way a model load does. */
pl_status *pl_model_read_graph(pl_runtime *rt, const char *path, pl_graph **out);

/* Whether graph input or output NAME of M is a string tensor. */
bool pl_model_is_string_io(const pl_model *m, const char *name);

/* A model of graph G (validated, types inferred) under the name PATH, on
 * RT with its allocator: the bodies of control flow (control.c) and the
 * graphs constant folding runs (fold.c). Takes G and PATH (pl_free) in
 * every case. */
pl_status *pl_model_of_graph(pl_runtime *rt, pl_graph *g, char *path, pl_model **out_model);
/* Runs the optimiser's passes ([graph] optimize) on M's graph, typed, as
 * a loaded model's run: a control-flow body's model (control.c), whose
 * shapes the enclosing session knows. */
pl_status *pl_model_optimize(pl_model *m);

/* Runs the passes again if an input was bound since they last ran; every
 * reader of model->graph that needs it rewritten (session creation, the
 * JSON save, the counts) calls it first. Errors name the model file. */
pl_status *pl_model_settle(pl_model *model);

/* A creation from M (a session's, a staged session's) starts using the
 * model file's constants (filedata.h), G the graph it reads: every dropped
 * constant is read back (pl_filedata_enter), or, for a part of a model (a
 * staged session's prefix or tail, a control-flow body), only those G and
 * its bodies read (pl_filedata_enter_only): a staged session's tail, made
 * at the first run of a shape, read back every weight of a detector's
 * backbone and dropped them again when it was made (RetinaNet at 320x320:
 * that run peaked 130 MB above the later ones). Always paired with
 * pl_filedata_leave, also after a failure. */
pl_status *pl_model_enter_file(pl_model *m, const pl_graph *g);

void pl_model_retain(pl_model *model);
void pl_model_release(pl_model *model);

#endif
