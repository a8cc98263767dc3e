/* stage.h — sessions of models whose shapes are not all known when the
 * session is made: an input with a dim left open, or a node whose output
 * shape depends on values (NonZero and Compress, lowered to a count and a
 * TopK; TopK, OneHot, Range, Reshape, Expand... on computed values).
 *
 * The graph splits in two. The prefix is every node whose inputs and
 * outputs have known shapes and that reads nothing computed after the
 * split: a session like any other, made once. The tail is the rest; it is
 * planned at run time, per distinct signature of what it reads (the
 * frontier): each frontier tensor's shape and, for the small integer ones
 * (a count, a K, a shape), its values, bound as constants so that
 * inference knows them. A tail whose shapes are still not all known is
 * itself staged, so a chain of data-dependent ops resolves level by level.
 * Where nothing can be bound any more and the next node is an If or Loop
 * whose inputs are known, that node is the pivot: each run runs it on its
 * own (pl_control_run_dynamic), and the tail after it is planned on the
 * shapes it gave. So are an If or Loop whose bodies can never be planned
 * once (Mask R-CNN's paste loop resizes each mask to its box).
 * Specialised tails are kept, least recently used first out, at most
 * PL_STAGE_MAX_SPECS of them with at most PL_STAGE_SPEC_ARENA_BYTES of
 * planned arenas, constants read and sessions (an estimate per node)
 * together (a compiling module keeps its own copy of the weights of each),
 * and of those used only once at most 32 (stage.c, STG_ONCE_KEPT). */
#ifndef PL_CORE_STAGE_H
#define PL_CORE_STAGE_H

#include <stdbool.h>

#include "graph.h"
#include "plinth/plinth.h"

/* Most specialised tails a staged session keeps, and the most their arenas
 * may plan, with the bytes of the constants each reads, together. A Loop body that slices row i of a carried tensor
 * plans one tail per iteration (SLANet-plus: 150 of 0.6 MiB each, used in
 * turn every run; with 32 kept, every iteration of every run planned its
 * tail again: 500 ms a run against 120). */
#define PL_STAGE_MAX_SPECS 256
#define PL_STAGE_SPEC_ARENA_BYTES ((size_t)256 << 20)

typedef struct pl_stage pl_stage;

/* Whether some tensor a node of G reads or writes has a shape that is not
 * fully known, or an If or Loop has a body that cannot be planned once
 * (pl_control_body_open): the session must be staged. */
bool pl_stage_needed(pl_runtime *rt, const pl_graph *g);

/* Splits MODEL's graph and makes the prefix's session with OPTIONS (which
 * the tails are made with too). Fails naming the node when no input's
 * shape or small value can ever determine a shape that is unknown. */
pl_status *pl_stage_create(pl_model *model, const pl_session_options *options,
                           pl_stage **out_stage);
void pl_stage_destroy(pl_stage *stage);

/* pl_session_run's contract; an output whose shape is known only now and
 * is allocated for the caller points its shape at dims the stage keeps
 * for its life. */
pl_status *pl_stage_run(pl_stage *stage, const pl_io *inputs, size_t n_inputs,
                        pl_io *outputs, size_t n_outputs);

/* The prefix's session, or NULL when every node is in the tail. */
pl_session *pl_stage_prefix(const pl_stage *stage);
/* The staged session's warnings: its prefix's of creation, then what the
 * prefix and the tails warned while running, each text once (a tail's
 * after the shapes it was planned for). Thread-safe; a text stays while
 * the stage lives. */
size_t pl_stage_warning_count(pl_stage *stage);
const char *pl_stage_warning(pl_stage *stage, size_t i);
/* The name of the pivot: an If or Loop between prefix and tail run to know
 * its outputs' shapes (pl_control_create_dynamic), when no binding of
 * values can tell them or its body can never be planned once; NULL when
 * there is none. */
const char *pl_stage_pivot_name(const pl_stage *stage);
/* Nodes of the tail, and the tails specialised so far. */
size_t pl_stage_tail_nodes(const pl_stage *stage);
size_t pl_stage_spec_count(pl_stage *stage);
/* What the stage measured of its tails planned in full (QUICK false; the
 * first plan and the first full one after it not counted) or quick: the
 * moving means of a plan's and a run's milliseconds, and how many were
 * timed. */
void pl_stage_tier(pl_stage *stage, bool quick, double *out_plan_ms, double *out_run_ms,
                   uint64_t *out_plans, uint64_t *out_runs);
/* Whether the tail a run used last was planned quick (false before any
 * run). */
bool pl_stage_last_quick(pl_stage *stage);
/* The steps after the prefix's, for the step list (pl_session_step_info):
 * the pivot, when there is one, then those of the tail a run used last
 * (none before the first run). Names and backends are valid until that tail
 * is evicted or the stage destroyed. */
size_t pl_stage_step_count(pl_stage *stage);
void pl_stage_step_info(pl_stage *stage, size_t i, const char **out_name,
                        const char **out_backend, uint64_t *out_total_ns, uint64_t *out_runs);
/* The arena bytes the prefix and the kept tails plan. */
size_t pl_stage_arena_bytes(pl_stage *stage);
/* The description of the tail a run used last (pl_session_describe's
 * JSON, freed with pl_free), or NULL in *OUT_JSON before any run. */
pl_status *pl_stage_describe_tail(pl_stage *stage, char **out_json);

#endif
