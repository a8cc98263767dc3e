/* measure.h — checking a cost-based placement against its own runs.
 *
 * choose = cost places subgraphs by estimates, and an estimate can be far
 * off: a convolution oneDNN serves with its reference kernel or an im2col
 * GEMM ran 10-200x its estimate (RivaGAN's 3-D layers, 18 s a run against
 * 0.2 on cpu; basic_pitch's padded 8-channel layers), and no probe at
 * creation can know every such case of an unseen model or module. So a
 * session (with [placement] measure = yes, the default) times its compiled
 * subgraphs over its first PL_MEASURE_RUNS runs, keeping each one's fastest
 * run (a run slowed by a preempted thread does not count), and the
 * fastest run of the whole model. Ten, because a module may need several
 * runs to settle: the onednn module times its first runs before it decides
 * between its OpenMP team and one thread (onednn_pace.h), and on a host
 * whose team waits the first 7 runs of small models took 2-4 ms where the
 * rest took 0.6. A subgraph is slow when all of these
 * hold:
 *   - its fastest run took at least PL_MEASURE_FLOOR_US: a few hundred
 *     microseconds lost are not worth planning again;
 *   - at least PL_MEASURE_OVER_EST times its module's estimate: estimates
 *     are fitted within about 2x, and a loaded host (sanitizers, two jobs
 *     on two cores) slows a run 2-3x;
 *   - at least PL_MEASURE_OVER_ALT times the estimate of the backends that
 *     would run its nodes otherwise: moving must be likely to pay.
 * Only subgraphs whose module gave an estimate, that run synchronously on
 * host memory (their step time is their work: a device module's run is
 * queued and timed elsewhere) and whose nodes have somewhere else to go
 * (no pin, another backend takes them all) are weighed.
 *
 * A slow subgraph is a suspect, not a verdict: a loaded host slows an
 * OpenMP team waiting for its cores far more than the estimates allow
 * (with two compiles beside them, small onednn subgraphs measured 8-24x
 * their estimates). So the session (session.c) puts the plan as made
 * aside, makes one without the suspects on their backends, as a failed
 * compile is excluded (pl_partition_exclude_cluster), runs it for the
 * next PL_MEASURE_RUNS runs and keeps it only when its fastest run beats
 * the plan as made's by the factor PL_MEASURE_KEEP; the other plan is
 * freed. Warnings say what was measured and what stayed. Once per
 * session. */
#ifndef PL_CORE_MEASURE_H
#define PL_CORE_MEASURE_H

#include <stdbool.h>
#include <stddef.h>

#include "partition.h"
#include "program.h"

/* The runs of a window: the plan as made's, then the trial's. */
#define PL_MEASURE_RUNS 10
#define PL_MEASURE_FLOOR_US 1000.0
#define PL_MEASURE_OVER_EST 8.0
#define PL_MEASURE_OVER_ALT 3.0
/* From the third run on, a subgraph this slow is a suspect at once: 50 ms
 * or more and 30x both estimates (RivaGAN's 18 s a run need not be run ten
 * times). */
#define PL_MEASURE_EARLY_RUNS 3
#define PL_MEASURE_EARLY_FLOOR_US 50000.0
#define PL_MEASURE_EARLY_OVER 30.0
/* The trial's fastest run must beat the plan as made's by this factor. */
#define PL_MEASURE_KEEP 0.9

/* A subgraph that ran slow: its step, its first node (to find its cluster again
 * after another exclusion renumbers them), its backend, and why; or, with
 * NODE_ONLY, one slow node of a subgraph (FIRST), which alone is excluded. */
typedef struct pl_measure_slow {
    size_t step;      /* in the program measured */
    pl_nid first;
    int32_t backend;
    bool node_only;
    char reason[640];
} pl_measure_slow;

/* The slow compiled subgraphs of P (placed by PART) by the rules above
 * (EARLY: the early thresholds), measured over RUNS runs, and, after a
 * whole window (not EARLY), the slow nodes of the other subgraphs whose
 * module timed them (ABI 1.17, compiled_times; pl_measure_node_times
 * started it): a node whose own work's fastest run took at least
 * PL_MEASURE_FLOOR_US, PL_MEASURE_OVER_EST times its backend's estimate
 * for it alone and PL_MEASURE_OVER_ALT times the next backend's. A large
 * subgraph dilutes one slow node (basic_pitch's padded 8-channel
 * convolution in a subgraph of 40 nodes), and moving the whole subgraph
 * would give up what runs well in it. *OUT (allocated, NULL when none) and
 * *OUT_N. Errors only for out of memory. */
pl_status *pl_measure_slow_steps(const pl_program *p, pl_partition *part, unsigned runs,
                                 bool early, pl_measure_slow **out, size_t *out_n);

/* Starts (ON) or stops the node times of every compiled subgraph of P
 * whose module can time its nodes (compiled_times); returns how many do.
 * Never while P runs. */
size_t pl_measure_node_times(pl_program *p, bool on);

/* Step I of P's node times since they started, into OUT[0..min(N, CAP)),
 * N being the step's node count, which it returns; 0 when the step is no
 * subgraph whose module gives them. Never while P runs. */
size_t pl_measure_step_times(const pl_program *p, size_t i, pl_node_time *out, size_t cap);

/* Whether P has a slow compiled subgraph by those rules. */
bool pl_measure_any_slow(const pl_program *p, const pl_partition *part, bool early);

#endif
