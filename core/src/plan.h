/* plan.h — static memory planning for the values the core owns.
 *
 * The planner's own input is a list of lifetime intervals
 * (pl_plan_build_intervals): for each value its device, its size, the step
 * that makes it and the last step that reads it, and the earlier values
 * whose block it may take in place. The execution program hands it those
 * directly. The graph front end (pl_plan_build) derives them from a graph:
 *
 * Given a validated graph, an execution order and the device each tensor
 * lives on, the planner computes each tensor's lifetime, lets an output
 * reuse a dying input's block in place where the caller's policy allows it,
 * and assigns every block an offset in one arena per device. Graph inputs,
 * graph outputs and constants stay outside the arenas: the caller binds
 * them per run.
 *
 * Terms used below. A step is a position in the order (0 .. n_order-1). A
 * tensor is planned when all of these hold:
 *   - its device (tensor_device) is >= 0;
 *   - it is produced by a node in the order;
 *   - every node that consumes it is in the order (a tensor that a node
 *     outside the order reads is external: its lifetime is not known here);
 *   - it is not a graph input, a graph output or a constant.
 * A planned tensor lives from its producer's step to its last consumer's
 * step, both included; with no consumer it lives during its producer's step
 * only (the node still writes it).
 *
 * In place: output O of node N (at step S) may take the block of the input
 * U in slot I of N when
 *   - U is planned, on the same device, with exactly the same byte size;
 *   - N is U's last use (no node after N reads U);
 *   - no other output of N has taken U's block;
 *   - the policy accepts the pair (O, I).
 * If U fills several input slots of N the reuse is still allowed: every one
 * of those reads happens at N, and whether the kernel reads an element in
 * every slot before it writes that element is the policy's knowledge (an
 * elementwise op does; the policy sees the node and may refuse). Chains
 * (a -> Relu -> Relu) share one block. When no slot qualifies the output
 * gets a block of its own; that is not an error.
 *
 * Sizes: every block is rounded up to the alignment, and the three figures
 * of pl_plan_device_stats are all in rounded bytes: arena_bytes is the size
 * of the arena, lower_bound_bytes the largest total of blocks live at one
 * step (no assignment of offsets can do better, a block shared in place
 * counts once), naive_bytes the sum of every planned tensor's rounded size
 * (the arena with no reuse at all). Always lower_bound <= arena <= naive.
 * Zero-byte tensors are planned at offset 0 and take no space.
 *
 * Offsets come from greedy-by-size assignment: blocks are placed largest
 * first, each in a gap left by the already placed blocks whose lifetimes
 * overlap its own; a few orderings and gap rules are tried and the smallest
 * arena is kept. Work is about O(B log B + P log P) for B blocks and P pairs
 * of blocks with overlapping lifetimes. The result is deterministic.
 *
 * A pl_plan is immutable once built; any number of threads may read it. */
#ifndef PL_CORE_PLAN_H
#define PL_CORE_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph.h"

/* The in-place policy: may output OUT_INDEX of node NODE overwrite the
 * input in slot IN_SLOT? The opset schema decides (ONNX Runtime's
 * "may in-place" pairs are this relation); the caller wraps it. The planner
 * asks only about slots where reuse is legal (see above), in increasing
 * slot order, and takes the first slot the policy accepts, so a commutative
 * op can offer both of its inputs. Called from the thread running
 * pl_plan_build. */
typedef bool (*pl_plan_inplace_fn)(void *user, pl_nid node, size_t out_index,
                                   size_t in_slot);

typedef struct pl_plan_options {
    /* Validated (pl_graph_validate), with the types of the tensors to plan
     * known. Borrowed for the call only. */
    const pl_graph *graph;
    /* Execution order: N_ORDER distinct node ids, each producer before its
     * consumers. It may hold only some of the graph's nodes (for example the
     * core-owned ones); see the header comment for what that means for the
     * tensors they touch. At most UINT32_MAX - 1 steps. */
    const pl_nid *order;
    size_t n_order;
    /* One entry per tensor of the graph (pl_graph_tensor_count): the device
     * index (0 .. n_devices-1) the core owns it on, or -1 when the core does
     * not plan it (it lives inside a module's subgraph, say). */
    const int32_t *tensor_device;
    int32_t n_devices;
    /* Alignment of every offset and block size: 0 means 64; otherwise a
     * power of two. */
    size_t alignment;
    /* NULL: no in-place reuse. */
    pl_plan_inplace_fn inplace;
    void *user;
} pl_plan_options;

/* Where one planned tensor lives. */
typedef struct pl_plan_entry {
    pl_tid tensor;
    int32_t device;
    size_t offset;        /* in the device's arena; a multiple of the alignment */
    size_t bytes;         /* the tensor's own size (not rounded) */
    pl_tid shares_with;   /* PL_TID_NONE, or the input whose block it reuses */
    uint32_t first_step;  /* producer's step */
    uint32_t last_step;   /* last consumer's step (first_step if none) */
} pl_plan_entry;

typedef struct pl_plan_device_stats {
    size_t arena_bytes;
    size_t lower_bound_bytes;
    size_t naive_bytes;
    size_t n_tensors;     /* planned tensors on this device */
    size_t n_inplace;     /* of which reuse an input's block */
} pl_plan_device_stats;

typedef struct pl_plan pl_plan;

/* Plans memory as described above. On success *OUT_PLAN is a new plan the
 * caller owns (pl_plan_destroy). Errors: PL_CODE_INVALID_ARGUMENT for bad
 * options (a node id out of range or repeated in the order, an order that
 * runs a consumer before its producer, a device index >= n_devices, an
 * alignment that is not a power of two) and for a tensor to plan whose size is unknown (the
 * message names it and its producer: infer shapes first);
 * PL_CODE_OUT_OF_MEMORY. On failure *OUT_PLAN is NULL. Any thread may
 * call it; nobody may modify the graph during the call. */
pl_status *pl_plan_build(const pl_plan_options *options, pl_plan **out_plan);

/* ---- the interval planner ---------------------------------------------- */

#define PL_PLAN_NONE SIZE_MAX

/* One value to place: it occupies BYTES on DEVICE from step FIRST to step
 * LAST, both included. */
typedef struct pl_plan_interval {
    int32_t device;           /* 0 .. n_devices-1 */
    size_t bytes;             /* its own size; rounded up to the alignment */
    uint32_t first, last;     /* first <= last < n_steps */
    /* Earlier intervals whose block it may take in place, best first. One
     * is taken when it is on the same device, of exactly the same size,
     * dies at FIRST (its LAST equals FIRST), has not been taken by another
     * interval, and the accept callback agrees. Borrowed for the call. */
    const size_t *candidates;
    size_t n_candidates;
} pl_plan_interval;

/* May interval INTERVAL take the block of its K-th candidate? Asked only
 * about candidates where reuse is legal, in order, until one is accepted. */
typedef bool (*pl_plan_accept_fn)(void *user, size_t interval, size_t k);

typedef struct pl_plan_interval_options {
    /* In production order: first steps never decrease. Borrowed. */
    const pl_plan_interval *intervals;
    size_t n_intervals;
    size_t n_steps;           /* at most UINT32_MAX - 1 */
    int32_t n_devices;
    size_t alignment;         /* 0 means 64; otherwise a power of two */
    pl_plan_accept_fn accept; /* NULL: every legal candidate is accepted */
    void *user;
    /* The plan serves one run (constant folding's session): the greedy
     * orders only, not the randomised search past them, whose tries cost
     * more than the arena they save (a ResNet's 184 folded BatchNormalization
     * nodes spent 15 ms placing their intermediates). */
    bool quick;
} pl_plan_interval_options;

/* Plans the intervals. Entry I of the plan (pl_plan_entry_at) is interval
 * I, with tensor PL_TID_NONE; pl_plan_shares_with tells whose block it
 * took. Errors: PL_CODE_INVALID_ARGUMENT for a device out of range, an
 * interval out of order or beyond n_steps, a bad alignment or a size that
 * overflows; PL_CODE_OUT_OF_MEMORY. On failure *OUT_PLAN is NULL. */
pl_status *pl_plan_build_intervals(const pl_plan_interval_options *options,
                                   pl_plan **out_plan);

/* The interval (entry) whose block entry I took in place, or PL_PLAN_NONE. */
size_t pl_plan_shares_with(const pl_plan *plan, size_t i);

/* Frees a plan; NULL is a no-op. */
void pl_plan_destroy(pl_plan *plan);

/* The entry of tensor T, or NULL when T is not in an arena (not planned,
 * or out of range). Valid until the plan is destroyed. */
const pl_plan_entry *pl_plan_entry_of(const pl_plan *plan, pl_tid t);

/* Number of planned tensors, and the I-th of them (NULL when I is out of
 * range). Entries are in production order: by step, then output slot. */
size_t pl_plan_entry_count(const pl_plan *plan);
const pl_plan_entry *pl_plan_entry_at(const pl_plan *plan, size_t i);

/* Number of devices the plan was built for (options.n_devices), and the
 * figures of DEVICE's arena (NULL when DEVICE is out of range). A device
 * with no planned tensor has an arena of 0 bytes. */
int32_t pl_plan_device_count(const pl_plan *plan);
const pl_plan_device_stats *pl_plan_stats(const pl_plan *plan, int32_t device);

/* The alignment the plan was built with (64 when the options said 0). */
size_t pl_plan_alignment(const pl_plan *plan);

#endif
