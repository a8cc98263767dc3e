/* plan.c — the static memory planner. It sits between lowering and the
 * run: the execution program (program.c) hands it the lifetime interval of
 * every value the core owns in an arena, and binds every planned value to
 * arena + offset at run time. Inside a module-compiled subgraph the module
 * plans its own memory; those tensors never reach this file.
 *
 * The interval planner works in two passes: take the intervals in
 * production order while deciding in-place reuse (which groups intervals
 * into blocks), then assign offsets per device, greedy by size, keeping the
 * best of a few variants. The graph front end (pl_plan_build) derives the
 * intervals from a graph and an order, for callers that hold a graph. */
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "status.h"

#define PLAN_NONE PL_PLAN_NONE
#define PLAN_NO_STEP UINT32_MAX

struct pl_plan {
    size_t n_graph_tensors;    /* graph plans: the graph's tensor count */
    size_t *entry_of;          /* graph plans, per tensor id: its entry, or PLAN_NONE */
    pl_plan_entry *entries;    /* per interval */
    size_t *shares;            /* per interval: the interval whose block it took, or PLAN_NONE */
    size_t n_entries;
    pl_plan_device_stats *stats;
    int32_t n_devices;
    size_t alignment;
};

/* One region of an arena: a value and every value that reuses it in
 * place. Its lifetime is the union of theirs, which is one interval since
 * each reuse starts at the step the previous holder dies. */
typedef struct plan_block {
    size_t size;               /* rounded up to the alignment */
    uint32_t first, last;
    int32_t device;
    size_t offset;
} plan_block;

/* The interval planner's state. */
typedef struct plan_build {
    const pl_plan_interval_options *o;
    size_t align;
    plan_block *blocks;
    size_t n_blocks;
    size_t *block_of;          /* per interval */
    bool *taken;               /* per interval: an interval already took its block */
    pl_plan *plan;
} plan_build;

/* The blocks of one device during offset assignment, in order of first
 * step, with an implicit interval tree over them: the node of a range
 * [lo, hi) is its midpoint, and tmax holds the largest last step of the
 * range, so the blocks alive during a span are found without a full scan. */
typedef struct plan_device {
    size_t m;
    size_t *size;
    uint32_t *first, *last;
    uint32_t *tmax;
    size_t *offset;            /* of the variant being tried; PLAN_NONE = unplaced */
    size_t *best;              /* of the best variant so far */
    struct plan_span *near;    /* placed neighbours of the block being placed */
    size_t n_near;
} plan_device;

typedef struct plan_span {
    size_t offset, size;
} plan_span;

/* A sort key for the placement order of a block. */
typedef struct plan_key {
    size_t size;
    uint32_t len, first;
    size_t index;
    size_t pressure; /* the most bytes alive at one step of the block's life */
} plan_key;

static pl_status *plan_oom(void)
{
    return pl_status_create(PL_CODE_OUT_OF_MEMORY,
                            "out of memory while planning tensor memory");
}

static pl_status *plan_check_interval_options(const pl_plan_interval_options *o,
                                              size_t *out_align)
{
    if (o == NULL || (o->n_intervals > 0 && o->intervals == NULL))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "memory plan: no intervals given");
    if (o->n_steps >= PLAN_NO_STEP)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "memory plan: %zu steps are too many", o->n_steps);
    if (o->n_devices < 0)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "memory plan: %d devices", (int)o->n_devices);
    size_t align = o->alignment ? o->alignment : 64;
    if ((align & (align - 1)) != 0)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "memory plan: alignment %zu is not a power of two",
                                align);
    for (size_t i = 0; i < o->n_intervals; i++) {
        const pl_plan_interval *v = &o->intervals[i];
        if (v->device < 0 || v->device >= o->n_devices)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "memory plan: interval %zu is on device %d; "
                                    "there are %d",
                                    i, (int)v->device, (int)o->n_devices);
        if (v->first > v->last || v->last >= o->n_steps)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "memory plan: interval %zu spans steps %u..%u "
                                    "of %zu",
                                    i, (unsigned)v->first, (unsigned)v->last,
                                    o->n_steps);
        if (i > 0 && v->first < o->intervals[i - 1].first)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "memory plan: interval %zu starts before the "
                                    "one ahead of it (intervals come in order of "
                                    "their first step)",
                                    i);
        if (v->n_candidates > 0 && v->candidates == NULL)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "memory plan: interval %zu has %zu candidates "
                                    "but no array",
                                    i, v->n_candidates);
    }
    *out_align = align;
    return NULL;
}

/* The interval whose block interval I takes in place, or PLAN_NONE: its
 * first candidate where reuse is legal and the caller agrees. */
static size_t plan_inplace_source(const plan_build *b, size_t i)
{
    const pl_plan_interval_options *o = b->o;
    const pl_plan_interval *v = &o->intervals[i];
    for (size_t k = 0; k < v->n_candidates; k++) {
        size_t c = v->candidates[k];
        if (c >= i || b->taken[c])
            continue;
        const pl_plan_interval *src = &o->intervals[c];
        if (src->device != v->device || src->bytes != v->bytes || src->last != v->first)
            continue;
        if (o->accept == NULL || o->accept(o->user, i, k))
            return c;
    }
    return PLAN_NONE;
}

/* Pass one: interval I becomes an entry, in place or with a block of its
 * own. */
static pl_status *plan_add_entry(plan_build *b, size_t i)
{
    pl_plan *p = b->plan;
    const pl_plan_interval *v = &b->o->intervals[i];
    size_t rounded;
    if (!pl_size_add(v->bytes, b->align - 1, &rounded))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "memory plan: interval %zu is too large (%zu bytes)",
                                i, v->bytes);
    rounded &= ~(b->align - 1);
    pl_plan_device_stats *st = &p->stats[v->device];
    if (!pl_size_add(st->naive_bytes, rounded, &st->naive_bytes))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "memory plan: the values of device %d add up "
                                "to more than %zu bytes",
                                (int)v->device, SIZE_MAX);
    size_t src = plan_inplace_source(b, i);
    p->entries[i] = (pl_plan_entry){.tensor = PL_TID_NONE, .device = v->device,
                                    .bytes = v->bytes, .shares_with = PL_TID_NONE,
                                    .first_step = v->first, .last_step = v->last};
    p->shares[i] = src;
    b->taken[i] = false;
    st->n_tensors++;
    if (src != PLAN_NONE) {
        size_t blk = b->block_of[src];
        b->taken[src] = true;
        b->block_of[i] = blk;
        if (v->last > b->blocks[blk].last)
            b->blocks[blk].last = v->last;
        st->n_inplace++;
    } else {
        size_t blk = b->n_blocks++;
        b->blocks[blk] = (plan_block){.size = rounded, .first = v->first,
                                      .last = v->last, .device = v->device};
        b->block_of[i] = blk;
    }
    return NULL;
}

/* ---- offsets --------------------------------------------------------- */

static uint32_t plan_tree_build(plan_device *d, size_t lo, size_t hi)
{
    size_t mid = lo + (hi - lo) / 2;
    uint32_t m = d->last[mid];
    if (lo < mid) {
        uint32_t l = plan_tree_build(d, lo, mid);
        m = l > m ? l : m;
    }
    if (mid + 1 < hi) {
        uint32_t r = plan_tree_build(d, mid + 1, hi);
        m = r > m ? r : m;
    }
    d->tmax[mid] = m;
    return m;
}

/* Collects into d->near the placed, non-empty blocks alive during some
 * step of [a, b]. */
static void plan_tree_query(plan_device *d, size_t lo, size_t hi, uint32_t a,
                            uint32_t b)
{
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->tmax[mid] < a)
            return;
        plan_tree_query(d, lo, mid, a, b);
        if (d->first[mid] > b)
            return;  /* so does every block to the right */
        if (d->last[mid] >= a && d->offset[mid] != PLAN_NONE && d->size[mid] > 0)
            d->near[d->n_near++] = (plan_span){d->offset[mid], d->size[mid]};
        lo = mid + 1;
    }
}

static int plan_span_cmp(const void *pa, const void *pb)
{
    const plan_span *a = pa, *b = pb;
    return (a->offset > b->offset) - (a->offset < b->offset);
}

/* Places the blocks in the order KEYS gives, each at the smallest gap that
 * fits among the placed blocks it overlaps in time (BEST_FIT) or at the
 * lowest one, else above them all. Returns the arena size. */
static size_t plan_place(plan_device *d, const plan_key *keys, bool best_fit)
{
    for (size_t i = 0; i < d->m; i++)
        d->offset[i] = PLAN_NONE;
    size_t arena = 0;
    for (size_t k = 0; k < d->m; k++) {
        size_t i = keys[k].index;
        size_t size = d->size[i];
        if (size == 0) {
            d->offset[i] = 0;
            continue;
        }
        d->n_near = 0;
        plan_tree_query(d, 0, d->m, d->first[i], d->last[i]);
        qsort(d->near, d->n_near, sizeof *d->near, plan_span_cmp);
        size_t top = 0, at = PLAN_NONE, at_gap = PLAN_NONE;
        for (size_t j = 0; j < d->n_near; j++) {
            const plan_span *s = &d->near[j];
            if (s->offset > top) {
                size_t gap = s->offset - top;
                if (gap >= size && gap < at_gap) {
                    at = top;
                    at_gap = gap;
                    if (!best_fit || gap == size)
                        break;
                }
            }
            if (s->offset + s->size > top)
                top = s->offset + s->size;
        }
        if (at == PLAN_NONE)
            at = top;
        d->offset[i] = at;
        if (at + size > arena)
            arena = at + size;
    }
    return arena;
}

static int plan_key_by_size(const void *pa, const void *pb)
{
    const plan_key *a = pa, *b = pb;
    if (a->size != b->size)
        return a->size > b->size ? -1 : 1;
    if (a->len != b->len)
        return a->len > b->len ? -1 : 1;
    if (a->first != b->first)
        return a->first < b->first ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

static int plan_key_by_area(const void *pa, const void *pb)
{
    const plan_key *a = pa, *b = pb;
    double x = (double)a->size * (a->len + 1), y = (double)b->size * (b->len + 1);
    if (x != y)
        return x > y ? -1 : 1;
    return plan_key_by_size(pa, pb);
}

static int plan_key_by_first(const void *pa, const void *pb)
{
    const plan_key *a = pa, *b = pb;
    if (a->first != b->first)
        return a->first < b->first ? -1 : 1;
    return plan_key_by_size(pa, pb);
}

static int plan_key_by_life(const void *pa, const void *pb)
{
    const plan_key *a = pa, *b = pb;
    if (a->len != b->len)
        return a->len > b->len ? -1 : 1;
    if (a->size != b->size)
        return a->size > b->size ? -1 : 1;
    if (a->first != b->first)
        return a->first < b->first ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* Blocks alive where the most bytes are first, longest-lived first among
 * them: those that make the lower bound are packed before the rest can
 * fragment the space under them (tf_densenet's growing concatenations
 * came to 1.09x the bound by size, lifetime, area or first use; this
 * order reaches it). */
static int plan_key_by_pressure(const void *pa, const void *pb)
{
    const plan_key *a = pa, *b = pb;
    if (a->pressure != b->pressure)
        return a->pressure > b->pressure ? -1 : 1;
    return plan_key_by_life(pa, pb);
}

/* Largest total of block sizes alive at one step; DIFF has n_order + 1
 * zeroed entries and is left holding the bytes alive at each step (the
 * caller zeroes it). */
static size_t plan_lower_bound(const plan_device *d, size_t *diff, size_t n_order)
{
    for (size_t i = 0; i < d->m; i++) {
        diff[d->first[i]] += d->size[i];
        diff[d->last[i] + 1] -= d->size[i];  /* wraps back in the running sum */
    }
    size_t live = 0, peak = 0;
    for (size_t s = 0; s <= n_order; s++) {
        live += diff[s];
        diff[s] = live;
        if (live > peak)
            peak = live;
    }
    return peak;
}

static void plan_device_free(plan_device *d)
{
    pl_free(d->size);
    pl_free(d->first);
    pl_free(d->last);
    pl_free(d->tmax);
    pl_free(d->offset);
    pl_free(d->best);
    pl_free(d->near);
}

/* ---- the search for a packing at the bound ------------------------------ */

/* When the greedy orders leave the arena above the lower bound, a
 * depth-first search looks for a packing that reaches it (every zoo plan
 * the greedy orders missed has one: clip_text's 67 blocks came to 1.15x
 * the bound by 210 orders, mobilebert's 152 to 1.08x). Blocks are placed
 * bottom up: the level L is the lowest top of the arena (the skyline) at
 * any step where an unplaced block lives; a candidate is an unplaced block
 * whose whole life lies where the skyline is L, and it goes at L. When none
 * fits, the leftmost stretch at L is raised to its lower neighbour, the
 * space under it left empty. A branch fails as soon as some step's
 * skyline plus its unplaced bytes exceeds the bound. Candidates are tried
 * in one of a few orders (latest end first solves most plans without
 * backtracking, earliest start the rest), each within a work budget. */
typedef struct plan_search {
    const plan_device *d;
    uint32_t n_steps;
    size_t cap;
    size_t *sky, *need;   /* per step: the skyline; unplaced bytes alive */
    size_t *run;          /* per step: its stretch at the level, or PLAN_NONE */
    size_t *off;          /* per block: its offset, PLAN_NONE while unplaced */
    size_t *rank;         /* the blocks in the order candidates are tried */
    size_t *cand;         /* candidates at the current level */
} plan_search;

/* One level of the search: its L, the next candidate to try, and what the
 * branch taken did (a block placed, or a stretch raised). */
typedef struct plan_level {
    size_t level;
    size_t next;
    size_t placed;        /* PLAN_NONE when the branch raised */
    uint32_t r0, r1;
} plan_level;

/* A block's sort key for one order of candidates: ascending. Ties go to
 * the larger block, then the earlier start, then the later end, so that
 * identical blocks sit together. */
typedef struct plan_rank_key {
    uint64_t k[4];
    size_t index;
} plan_rank_key;

enum { PLAN_BY_END, PLAN_BY_START, PLAN_BY_LENGTH, PLAN_N_ORDERS };

static int plan_rank_cmp(const void *pa, const void *pb)
{
    const plan_rank_key *a = pa, *b = pb;
    for (int i = 0; i < 4; i++)
        if (a->k[i] != b->k[i])
            return a->k[i] < b->k[i] ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* Fills s->rank with the blocks in ORDER: latest end first, earliest start
 * first, or longest life first. KEYS is scratch of d->m entries. */
static void plan_rank(plan_search *s, int order, plan_rank_key *keys)
{
    const plan_device *d = s->d;
    for (size_t i = 0; i < d->m; i++) {
        uint64_t primary = order == PLAN_BY_END     ? UINT32_MAX - (uint64_t)d->last[i]
                           : order == PLAN_BY_START ? (uint64_t)d->first[i]
                                                    : UINT32_MAX - (uint64_t)(d->last[i] -
                                                                              d->first[i]);
        keys[i] = (plan_rank_key){{primary, UINT64_MAX - (uint64_t)d->size[i],
                                   (uint64_t)d->first[i], UINT32_MAX - (uint64_t)d->last[i]},
                                  i};
    }
    qsort(keys, d->m, sizeof *keys, plan_rank_cmp);
    for (size_t i = 0; i < d->m; i++)
        s->rank[i] = keys[i].index;
}

static bool plan_same_block(const plan_device *d, size_t a, size_t b)
{
    return d->size[a] == d->size[b] && d->first[a] == d->first[b] && d->last[a] == d->last[b];
}

/* The unplaced blocks that fit at LEVEL, in rank order; their count. A
 * block fits when its first and last steps lie in one stretch of steps
 * whose skyline is LEVEL (and where unplaced bytes live). */
static size_t plan_collect(const plan_search *s, size_t level)
{
    const plan_device *d = s->d;
    size_t stretch = 0;
    for (uint32_t t = 0; t < s->n_steps; t++) {
        bool at = s->need[t] != 0 && s->sky[t] == level;
        s->run[t] = at ? stretch : PLAN_NONE;
        if (!at && t > 0 && s->run[t - 1] != PLAN_NONE)
            stretch++;
    }
    size_t n = 0;
    for (size_t r = 0; r < d->m; r++) {
        size_t i = s->rank[r];
        if (s->off[i] == PLAN_NONE && d->size[i] > 0 && s->run[d->first[i]] != PLAN_NONE &&
            s->run[d->first[i]] == s->run[d->last[i]] && level + d->size[i] <= s->cap)
            s->cand[n++] = i;
    }
    return n;
}

/* The lowest skyline where unplaced bytes live, or PLAN_NONE when a step's
 * unplaced bytes no longer fit above its skyline. */
static size_t plan_level_of(const plan_search *s)
{
    size_t lowest = PLAN_NONE;
    for (uint32_t t = 0; t < s->n_steps; t++) {
        if (s->need[t] == 0)
            continue;
        if (s->sky[t] > s->cap || s->need[t] > s->cap - s->sky[t])
            return PLAN_NONE;
        if (s->sky[t] < lowest)
            lowest = s->sky[t];
    }
    return lowest;
}

static void plan_put(plan_search *s, size_t i, size_t at)
{
    s->off[i] = at;
    for (uint32_t t = s->d->first[i]; t <= s->d->last[i]; t++) {
        s->sky[t] = at + s->d->size[i];
        s->need[t] -= s->d->size[i];
    }
}

static void plan_unput(plan_search *s, size_t i, size_t level)
{
    s->off[i] = PLAN_NONE;
    for (uint32_t t = s->d->first[i]; t <= s->d->last[i]; t++) {
        s->sky[t] = level;
        s->need[t] += s->d->size[i];
    }
}

/* Raises the leftmost stretch at LEVEL to its lower neighbour above it;
 * false when it has none. */
static bool plan_raise(plan_search *s, size_t level, plan_level *lv)
{
    uint32_t a = 0;
    while (a < s->n_steps && (s->need[a] == 0 || s->sky[a] != level))
        a++;
    if (a == s->n_steps)
        return false;
    uint32_t b = a;
    while (b + 1 < s->n_steps && s->need[b + 1] != 0 && s->sky[b + 1] == level)
        b++;
    size_t up = PLAN_NONE;
    if (a > 0 && s->sky[a - 1] > level)
        up = s->sky[a - 1];
    if (b + 1 < s->n_steps && s->sky[b + 1] > level && s->sky[b + 1] < up)
        up = s->sky[b + 1];
    if (up == PLAN_NONE)
        return false;
    for (uint32_t t = a; t <= b; t++)
        s->sky[t] = up;
    lv->r0 = a;
    lv->r1 = b;
    return true;
}

/* Searches for offsets within s->cap; true when every block has one. At
 * most BUDGET moves (a branch taken or undone) and MAX_DEPTH levels. */
static bool plan_search_run(plan_search *s, plan_level *stack, size_t max_depth, size_t budget)
{
    const plan_device *d = s->d;
    size_t left = 0;
    memset(s->sky, 0, s->n_steps * sizeof *s->sky);
    memset(s->need, 0, s->n_steps * sizeof *s->need);
    for (size_t i = 0; i < d->m; i++) {
        s->off[i] = d->size[i] > 0 ? PLAN_NONE : 0;
        if (d->size[i] > 0) {
            left++;
            for (uint32_t t = d->first[i]; t <= d->last[i]; t++)
                s->need[t] += d->size[i];
        }
    }
    size_t depth = 0, steps = 0;
    bool fresh = true;
    for (;;) {
        plan_level *lv = &stack[depth];
        bool back = false;
        if (++steps > budget)
            return false;
        if (fresh) {
            if (left == 0)
                return true;
            lv->level = plan_level_of(s);
            lv->next = 0;
            back = lv->level == PLAN_NONE;
        }
        if (!back) {
            size_t n = plan_collect(s, lv->level);
            size_t k = lv->next;
            while (k > 0 && k < n && plan_same_block(d, s->cand[k], s->cand[k - 1]))
                k++; /* the same block again: the same subtree */
            lv->next = k + 1;
            if (k < n) {
                lv->placed = s->cand[k];
                plan_put(s, lv->placed, lv->level);
                left--;
            } else if (k == n && plan_raise(s, lv->level, lv)) {
                lv->placed = PLAN_NONE; /* the last branch: leave the stretch empty */
            } else {
                back = true;
            }
        }
        if (!back && depth + 1 < max_depth) {
            depth++;
            fresh = true;
            continue;
        }
        if (!back) /* deeper than 3m: not expected (each raise merges two stretches) */
            return false;
        if (depth == 0)
            return false;
        lv = &stack[--depth];
        if (lv->placed != PLAN_NONE) {
            plan_unput(s, lv->placed, lv->level);
            left++;
        } else {
            for (uint32_t t = lv->r0; t <= lv->r1; t++)
                s->sky[t] = lv->level;
        }
        fresh = false;
    }
}

/* Looks for offsets at BOUND; on success writes them to d->best and
 * returns true. The work is bounded (about 16M step and block visits over
 * all orders: 10-20 ms when it fails), and a plan too large for two moves
 * per block within it is not searched: 2000 blocks over 1000 steps, whose
 * failed searches took 0.2 s with a per-order budget, keep the greedy
 * result. At 4M, RT-DETR's 621 blocks over 787 steps (1.12x the bound by
 * the greedy orders; the search needs about 3 moves a block) went
 * unsearched. */
static bool plan_search_bound(plan_device *d, uint32_t n_steps, size_t bound, bool *oom)
{
    /* Each move costs a pass over the steps and one over the blocks. */
    size_t budget = 16000000 / ((size_t)n_steps + d->m + 64) / PLAN_N_ORDERS;
    size_t max_depth = 3 * d->m + 2;
    if (budget < 2 * d->m)
        return false;
    plan_search s = {.d = d, .n_steps = n_steps, .cap = bound};
    s.sky = pl_malloc(n_steps * sizeof *s.sky);
    s.need = pl_malloc(n_steps * sizeof *s.need);
    s.run = pl_malloc(n_steps * sizeof *s.run);
    s.off = pl_malloc(d->m * sizeof *s.off);
    s.rank = pl_malloc(d->m * sizeof *s.rank);
    s.cand = pl_malloc(d->m * sizeof *s.cand);
    plan_rank_key *keys = pl_malloc(d->m * sizeof *keys);
    plan_level *stack = pl_malloc(max_depth * sizeof *stack);
    bool found = false;
    if (!s.sky || !s.need || !s.run || !s.off || !s.rank || !s.cand || !keys || !stack)
        *oom = true;
    for (int o = 0; !*oom && !found && o < PLAN_N_ORDERS; o++) {
        plan_rank(&s, o, keys);
        found = plan_search_run(&s, stack, max_depth, budget);
    }
    if (found)
        memcpy(d->best, s.off, d->m * sizeof *d->best);
    pl_free(s.sky);
    pl_free(s.need);
    pl_free(s.run);
    pl_free(s.off);
    pl_free(s.rank);
    pl_free(s.cand);
    pl_free(keys);
    pl_free(stack);
    return found;
}

/* Assigns offsets to the M blocks IDS (in order of first step) of one
 * device and fills in its arena size and lower bound in ST. */
static pl_status *plan_assign_device(plan_build *b, const size_t *ids, size_t m,
                                     size_t *diff, pl_plan_device_stats *st)
{
    plan_device d = {.m = m};
    plan_key *keys = NULL;
    if (m == 0)
        return NULL;
    d.size = pl_malloc(m * sizeof *d.size);
    d.first = pl_malloc(m * sizeof *d.first);
    d.last = pl_malloc(m * sizeof *d.last);
    d.tmax = pl_malloc(m * sizeof *d.tmax);
    d.offset = pl_malloc(m * sizeof *d.offset);
    d.best = pl_malloc(m * sizeof *d.best);
    d.near = pl_malloc(m * sizeof *d.near);
    keys = pl_malloc(m * sizeof *keys);
    if (!d.size || !d.first || !d.last || !d.tmax || !d.offset || !d.best ||
        !d.near || !keys) {
        plan_device_free(&d);
        pl_free(keys);
        return plan_oom();
    }
    for (size_t i = 0; i < m; i++) {
        const plan_block *blk = &b->blocks[ids[i]];
        d.size[i] = blk->size;
        d.first[i] = blk->first;
        d.last[i] = blk->last;
    }
    plan_tree_build(&d, 0, m);
    st->lower_bound_bytes = plan_lower_bound(&d, diff, b->o->n_steps);
    size_t *pressure = pl_malloc(m * sizeof *pressure);
    if (pressure == NULL) {
        plan_device_free(&d);
        pl_free(keys);
        return plan_oom();
    }
    for (size_t i = 0; i < m; i++) {
        size_t most = 0;
        for (uint32_t s = d.first[i]; s <= d.last[i] && s <= b->o->n_steps; s++)
            most = diff[s] > most ? diff[s] : most;
        pressure[i] = most;
    }
    memset(diff, 0, (b->o->n_steps + 1) * sizeof *diff);

    /* Largest first is the classic greedy by size; longest-lived first wins
     * when long skip connections fragment the arena; most-pressed first when
     * concatenations do. Best fit and first fit differ on ties of the two.
     * The best arena is kept. */
    static int (*const orders[])(const void *, const void *) = {
        plan_key_by_size, plan_key_by_life, plan_key_by_area, plan_key_by_first,
        plan_key_by_pressure};
    size_t best_arena = PLAN_NONE;
    for (size_t v = 0; v < 2 * sizeof orders / sizeof orders[0]; v++) {
        if (v % 2 == 0) {
            for (size_t i = 0; i < m; i++)
                keys[i] = (plan_key){.size = d.size[i],
                                     .len = d.last[i] - d.first[i],
                                     .first = d.first[i], .index = i,
                                     .pressure = pressure[i]};
            qsort(keys, m, sizeof *keys, orders[v / 2]);
        }
        size_t arena = plan_place(&d, keys, v % 2 == 0);
        if (arena < best_arena) {
            best_arena = arena;
            memcpy(d.best, d.offset, m * sizeof *d.best);
        }
        if (best_arena == st->lower_bound_bytes)
            break;  /* optimal */
    }
    /* Still above the bound: a search for a packing at the bound. */
    if (best_arena > st->lower_bound_bytes && !b->o->quick) {
        bool oom = false;
        if (plan_search_bound(&d, (uint32_t)b->o->n_steps + 1, st->lower_bound_bytes, &oom))
            best_arena = st->lower_bound_bytes;
        if (oom) {
            plan_device_free(&d);
            pl_free(keys);
            pl_free(pressure);
            return plan_oom();
        }
    }
    /* Still above the bound: orders by pressure with the ties and near-ties
     * broken at random (a fixed seed: the same plan every time), best fit,
     * the best kept. A transformer's equal-sized activations leave many
     * ties the orders above break the same way: deberta's arena went from
     * 1.20x the bound to the bound (test plan.intervals_ties). The tries
     * are bounded by the work (a placement is about m^2 / 2 comparisons)
     * and end after 32 without a gain: clip_text's plan, which no order
     * improves, costs 1.2 ms more session creation, not 6.5. A small plan
     * may go on for a quarter of its tries without a gain: tv_resnext50's
     * 109 blocks on cpu reach the bound in 9 of 200 orders (the others
     * 1.07-1.31x), and 32 stale tries stopped it at 1.067x. */
    uint64_t rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)m;
    size_t tries = m > 0 ? 20000000 / (m * m + 1) : 0;
    tries = tries > 400 ? 400 : tries < 4 ? 4 : tries;
    if (b->o->quick)
        tries = 0;
    size_t patience = tries / 4 > 32 ? tries / 4 : 32;
    for (size_t t = 0, stale = 0;
         t < tries && stale < patience && best_arena > st->lower_bound_bytes; t++, stale++) {
        for (size_t i = 0; i < m; i++) {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            /* pressure within 1/8 of another's counts as a tie */
            size_t jitter = (size_t)(rng % 256) * (pressure[i] / 8 / 256 + 1);
            keys[i] = (plan_key){.size = d.size[i], .len = d.last[i] - d.first[i],
                                 .first = d.first[i], .index = i,
                                 .pressure = pressure[i] + jitter};
        }
        qsort(keys, m, sizeof *keys, plan_key_by_pressure);
        size_t arena = plan_place(&d, keys, true);
        if (arena < best_arena) {
            best_arena = arena;
            memcpy(d.best, d.offset, m * sizeof *d.best);
            stale = 0;
        }
    }
    for (size_t i = 0; i < m; i++)
        b->blocks[ids[i]].offset = d.best[i];
    st->arena_bytes = best_arena;
    plan_device_free(&d);
    pl_free(keys);
    pl_free(pressure);
    return NULL;
}

/* Pass three: offsets, device by device. Blocks were made in order of
 * first step, and a stable split by device keeps that order. */
static pl_status *plan_assign(plan_build *b)
{
    pl_plan *p = b->plan;
    int32_t nd = b->o->n_devices;
    size_t *start = pl_calloc((size_t)nd + 1, sizeof *start);
    size_t *ids = pl_malloc((b->n_blocks ? b->n_blocks : 1) * sizeof *ids);
    size_t *diff = pl_calloc(b->o->n_steps + 1, sizeof *diff);
    pl_status *st = NULL;
    if (!start || !ids || !diff) {
        st = plan_oom();
        goto done;
    }
    for (size_t i = 0; i < b->n_blocks; i++)
        start[b->blocks[i].device + 1]++;
    for (int32_t dv = 0; dv < nd; dv++)
        start[dv + 1] += start[dv];
    for (size_t i = 0; i < b->n_blocks; i++)
        ids[start[b->blocks[i].device]++] = i;
    /* start[dv] now ends device dv; shift back to starts. */
    for (int32_t dv = nd; dv > 0; dv--)
        start[dv] = start[dv - 1];
    start[0] = 0;
    for (int32_t dv = 0; dv < nd && st == NULL; dv++)
        st = plan_assign_device(b, ids + start[dv], start[dv + 1] - start[dv],
                                diff, &p->stats[dv]);
    if (st == NULL)
        for (size_t e = 0; e < p->n_entries; e++)
            p->entries[e].offset = b->blocks[b->block_of[e]].offset;
done:
    pl_free(start);
    pl_free(ids);
    pl_free(diff);
    return st;
}

/* ---- the interval planner ------------------------------------------------ */

static pl_status *plan_intervals_passes(plan_build *b)
{
    pl_plan *p = b->plan;
    size_t n = b->o->n_intervals;
    p->n_devices = b->o->n_devices;
    p->alignment = b->align;
    p->n_entries = n;
    p->stats = pl_calloc(b->o->n_devices ? (size_t)b->o->n_devices : 1, sizeof *p->stats);
    p->entries = pl_malloc((n ? n : 1) * sizeof *p->entries);
    p->shares = pl_malloc((n ? n : 1) * sizeof *p->shares);
    b->blocks = pl_malloc((n ? n : 1) * sizeof *b->blocks);
    b->block_of = pl_malloc((n ? n : 1) * sizeof *b->block_of);
    b->taken = pl_malloc((n ? n : 1) * sizeof *b->taken);
    if (!p->stats || !p->entries || !p->shares || !b->blocks || !b->block_of || !b->taken)
        return plan_oom();
    for (size_t i = 0; i < n; i++)
        PL_RETURN_IF_ERROR(plan_add_entry(b, i));
    return plan_assign(b);
}

pl_status *pl_plan_build_intervals(const pl_plan_interval_options *options,
                                   pl_plan **out_plan)
{
    if (out_plan == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "memory plan: no place for the result");
    *out_plan = NULL;
    plan_build b = {.o = options};
    PL_RETURN_IF_ERROR(plan_check_interval_options(options, &b.align));
    b.plan = pl_calloc(1, sizeof *b.plan);
    if (b.plan == NULL)
        return plan_oom();
    pl_status *st = plan_intervals_passes(&b);
    pl_free(b.blocks);
    pl_free(b.block_of);
    pl_free(b.taken);
    if (st != NULL) {
        pl_plan_destroy(b.plan);
        return st;
    }
    *out_plan = b.plan;
    return NULL;
}

/* ---- the graph front end ----------------------------------------------------
 * Derives one interval per planned tensor from a graph and an order, with
 * the inputs of its producer as in-place candidates, and maps the result
 * back to tensor ids. */

typedef struct plan_graph {
    const pl_plan_options *o;
    const pl_graph *g;
    uint32_t *step_of;         /* per node: its step, or PLAN_NO_STEP */
    pl_tid *tensor;            /* per interval */
    pl_nid *node;              /* per interval: its producer */
    size_t *out_index;         /* per interval: its producer's output slot */
    size_t *cand_start;        /* per interval: its first candidate in cand/slot */
    size_t *cand, *slot;       /* candidate intervals and their input slots */
    size_t *interval_of;       /* per tensor: its interval, or PLAN_NONE */
    pl_plan_interval *iv;
    size_t n;
} plan_graph;

static const char *plan_node_name(const pl_graph *g, pl_nid n)
{
    const pl_graph_node *node = pl_graph_get_node(g, n);
    return node ? node->name : "?";
}

static const char *plan_node_op(const pl_graph *g, pl_nid n)
{
    const pl_graph_node *node = pl_graph_get_node(g, n);
    return node ? node->op : "?";
}

/* "[1,?,224,224]" or "(unknown rank)", cut to fit CAP. */
static void plan_format_shape(const pl_graph_tensor *t, char *buf, size_t cap)
{
    if (t->ndim < 0 || (t->ndim > 0 && t->dims == NULL)) {
        snprintf(buf, cap, "(unknown rank)");
        return;
    }
    size_t len = (size_t)snprintf(buf, cap, "[");
    for (int32_t i = 0; i < t->ndim && len < cap; i++) {
        const char *sep = i ? "," : "";
        if (t->dims[i] < 0)
            len += (size_t)snprintf(buf + len, cap - len, "%s?", sep);
        else
            len += (size_t)snprintf(buf + len, cap - len, "%s%lld", sep,
                                    (long long)t->dims[i]);
    }
    if (len < cap)
        snprintf(buf + len, cap - len, "]");
}

static pl_status *plan_check_options(const pl_plan_options *o)
{
    if (o == NULL || o->graph == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "memory plan: no graph given");
    if (pl_graph_topo_order(o->graph) == NULL && pl_graph_node_count(o->graph) > 0)
        return pl_status_create(PL_CODE_FAILED_PRECONDITION,
                                "memory plan: the graph is not validated");
    if (o->n_order > 0 && o->order == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "memory plan: %zu steps but no order", o->n_order);
    if (o->n_order >= PLAN_NO_STEP)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "memory plan: %zu steps are too many", o->n_order);
    if (o->tensor_device == NULL && pl_graph_tensor_count(o->graph) > 0)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "memory plan: no tensor devices given");
    if (o->n_devices < 0)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "memory plan: %d devices", (int)o->n_devices);
    size_t align = o->alignment ? o->alignment : 64;
    if ((align & (align - 1)) != 0)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "memory plan: alignment %zu is not a power of two",
                                align);
    return NULL;
}

/* Maps nodes to steps and checks that the order is a valid schedule of the
 * nodes it holds: ids in range, none twice, producers first. */
static pl_status *plan_index_order(plan_graph *pg)
{
    const pl_graph *g = pg->g;
    size_t nn = pl_graph_node_count(g);
    pg->step_of = pl_malloc((nn ? nn : 1) * sizeof *pg->step_of);
    if (pg->step_of == NULL)
        return plan_oom();
    for (size_t i = 0; i < nn; i++)
        pg->step_of[i] = PLAN_NO_STEP;
    for (size_t s = 0; s < pg->o->n_order; s++) {
        pl_nid n = pg->o->order[s];
        if (n >= nn)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "memory plan: step %zu names node %u, but "
                                    "the graph has %zu nodes",
                                    s, (unsigned)n, nn);
        if (pg->step_of[n] != PLAN_NO_STEP)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "memory plan: node '%s' (%s) is in the "
                                    "order twice (steps %u and %zu)",
                                    plan_node_name(g, n), plan_node_op(g, n),
                                    (unsigned)pg->step_of[n], s);
        pg->step_of[n] = (uint32_t)s;
    }
    for (size_t s = 0; s < pg->o->n_order; s++) {
        pl_nid n = pg->o->order[s];
        const pl_graph_node *node = pl_graph_get_node(g, n);
        for (size_t k = 0; k < node->n_inputs; k++) {
            if (node->inputs[k] == PL_TID_NONE)
                continue;
            const pl_graph_tensor *t = pl_graph_get_tensor(g, node->inputs[k]);
            if (t->producer == PL_NID_NONE || pg->step_of[t->producer] == PLAN_NO_STEP)
                continue;
            if (pg->step_of[t->producer] >= s)
                return pl_status_create(
                    PL_CODE_INVALID_ARGUMENT,
                    "memory plan: the order runs node '%s' (%s) at step %zu, "
                    "before node '%s' (%s) produces its input '%s' at step %u",
                    node->name, node->op, s, plan_node_name(g, t->producer),
                    plan_node_op(g, t->producer), t->name,
                    (unsigned)pg->step_of[t->producer]);
        }
    }
    return NULL;
}

/* The step of T's last consumer (at least STEP), or PLAN_NO_STEP when a
 * node outside the order reads it. */
static uint32_t plan_last_use(const plan_graph *pg, const pl_graph_tensor *t,
                              uint32_t step)
{
    uint32_t last = step;
    for (size_t c = 0; c < t->n_consumers; c++) {
        uint32_t cs = pg->step_of[t->consumers[c]];
        if (cs == PLAN_NO_STEP)
            return PLAN_NO_STEP;
        if (cs > last)
            last = cs;
    }
    return last;
}

static pl_status *plan_size_error(const pl_graph *g, const pl_graph_tensor *t, pl_nid n)
{
    char shape[160];
    plan_format_shape(t, shape, sizeof shape);
    return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                            "memory plan: tensor '%s' (output of node '%s' "
                            "(%s)) has no known byte size: dtype %s, shape %s; "
                            "infer shapes before planning",
                            t->name, plan_node_name(g, n), plan_node_op(g, n),
                            pl_dtype_name(t->dtype), shape);
}

/* Output K of node N at STEP, planned, as interval pg->n. */
static pl_status *plan_graph_add(plan_graph *pg, pl_nid n, size_t k, uint32_t step,
                                 uint32_t last, size_t *n_cand)
{
    const pl_graph_node *node = pl_graph_get_node(pg->g, n);
    pl_tid t = node->outputs[k];
    const pl_graph_tensor *gt = pl_graph_get_tensor(pg->g, t);
    size_t bytes;
    if (!pl_graph_tensor_bytes(gt, &bytes))
        return plan_size_error(pg->g, gt, n);
    size_t i = pg->n++;
    pg->tensor[i] = t;
    pg->node[i] = n;
    pg->out_index[i] = k;
    pg->cand_start[i] = *n_cand;
    for (size_t slot = 0; slot < node->n_inputs; slot++) {
        pl_tid u = node->inputs[slot];
        if (u == PL_TID_NONE || pg->interval_of[u] == PLAN_NONE)
            continue;
        pg->cand[*n_cand] = pg->interval_of[u];
        pg->slot[(*n_cand)++] = slot;
    }
    pg->iv[i] = (pl_plan_interval){.device = pg->o->tensor_device[t], .bytes = bytes,
                                   .first = step, .last = last,
                                   .n_candidates = *n_cand - pg->cand_start[i]};
    pg->interval_of[t] = i;
    return NULL;
}

/* The planned tensors in production order, as intervals. */
static pl_status *plan_graph_collect(plan_graph *pg)
{
    const pl_graph *g = pg->g;
    const pl_plan_options *o = pg->o;
    size_t nt = pl_graph_tensor_count(g);
    size_t bound = 0, n_slots = 0;
    for (size_t s = 0; s < o->n_order; s++) {
        const pl_graph_node *node = pl_graph_get_node(g, o->order[s]);
        bound += node->n_outputs;  /* <= tensor count */
        n_slots += node->n_outputs * node->n_inputs;
    }
    pg->tensor = pl_malloc((bound ? bound : 1) * sizeof *pg->tensor);
    pg->node = pl_malloc((bound ? bound : 1) * sizeof *pg->node);
    pg->out_index = pl_malloc((bound ? bound : 1) * sizeof *pg->out_index);
    pg->cand_start = pl_malloc((bound ? bound : 1) * sizeof *pg->cand_start);
    pg->iv = pl_malloc((bound ? bound : 1) * sizeof *pg->iv);
    pg->cand = pl_malloc((n_slots ? n_slots : 1) * sizeof *pg->cand);
    pg->slot = pl_malloc((n_slots ? n_slots : 1) * sizeof *pg->slot);
    pg->interval_of = pl_malloc((nt ? nt : 1) * sizeof *pg->interval_of);
    if (!pg->tensor || !pg->node || !pg->out_index || !pg->cand_start || !pg->iv ||
        !pg->cand || !pg->slot || !pg->interval_of)
        return plan_oom();
    for (size_t t = 0; t < nt; t++)
        pg->interval_of[t] = PLAN_NONE;
    size_t n_cand = 0;
    for (size_t s = 0; s < o->n_order; s++) {
        pl_nid n = o->order[s];
        const pl_graph_node *node = pl_graph_get_node(g, n);
        for (size_t k = 0; k < node->n_outputs; k++) {
            pl_tid t = node->outputs[k];
            if (t == PL_TID_NONE)
                continue;
            const pl_graph_tensor *gt = pl_graph_get_tensor(g, t);
            int32_t device = o->tensor_device[t];
            if (device < -1 || device >= o->n_devices)
                return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                        "memory plan: tensor '%s' has device "
                                        "index %d; it must be -1 (not planned) "
                                        "or below the device count, %d",
                                        gt->name, (int)device, (int)o->n_devices);
            if (device < 0 || gt->is_input || gt->is_output || gt->data != NULL)
                continue;
            uint32_t last = plan_last_use(pg, gt, (uint32_t)s);
            if (last == PLAN_NO_STEP)
                continue;
            PL_RETURN_IF_ERROR(plan_graph_add(pg, n, k, (uint32_t)s, last, &n_cand));
        }
    }
    for (size_t i = 0; i < pg->n; i++)
        pg->iv[i].candidates = pg->cand + pg->cand_start[i];
    return NULL;
}

/* The caller's policy, asked about a candidate the interval planner found
 * legal. */
static bool plan_graph_accept(void *user, size_t interval, size_t k)
{
    const plan_graph *pg = user;
    size_t c = pg->cand_start[interval] + k;
    return pg->o->inplace(pg->o->user, pg->node[interval], pg->out_index[interval],
                          pg->slot[c]);
}

static pl_status *plan_graph_build(plan_graph *pg, pl_plan **out_plan)
{
    const pl_plan_options *o = pg->o;
    PL_RETURN_IF_ERROR(plan_index_order(pg));
    PL_RETURN_IF_ERROR(plan_graph_collect(pg));
    pl_plan_interval_options io = {.intervals = pg->iv, .n_intervals = pg->n,
                                   .n_steps = o->n_order, .n_devices = o->n_devices,
                                   .alignment = o->alignment,
                                   .accept = o->inplace ? plan_graph_accept : NULL,
                                   .user = pg};
    if (o->inplace == NULL)
        for (size_t i = 0; i < pg->n; i++)
            pg->iv[i].n_candidates = 0;
    pl_plan *p = NULL;
    PL_RETURN_IF_ERROR(pl_plan_build_intervals(&io, &p));
    size_t nt = pl_graph_tensor_count(pg->g);
    p->n_graph_tensors = nt;
    p->entry_of = pg->interval_of;
    pg->interval_of = NULL;
    for (size_t i = 0; i < p->n_entries; i++) {
        p->entries[i].tensor = pg->tensor[i];
        if (p->shares[i] != PLAN_NONE)
            p->entries[i].shares_with = pg->tensor[p->shares[i]];
    }
    *out_plan = p;
    return NULL;
}

pl_status *pl_plan_build(const pl_plan_options *options, pl_plan **out_plan)
{
    if (out_plan == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "memory plan: no place for the result");
    *out_plan = NULL;
    PL_RETURN_IF_ERROR(plan_check_options(options));
    plan_graph pg = {.o = options, .g = options->graph};
    pl_status *st = plan_graph_build(&pg, out_plan);
    pl_free(pg.step_of);
    pl_free(pg.tensor);
    pl_free(pg.node);
    pl_free(pg.out_index);
    pl_free(pg.cand_start);
    pl_free(pg.cand);
    pl_free(pg.slot);
    pl_free(pg.interval_of);
    pl_free(pg.iv);
    return st;
}

/* ---- reading ---------------------------------------------------------------- */

void pl_plan_destroy(pl_plan *plan)
{
    if (plan == NULL)
        return;
    pl_free(plan->entry_of);
    pl_free(plan->entries);
    pl_free(plan->shares);
    pl_free(plan->stats);
    pl_free(plan);
}

const pl_plan_entry *pl_plan_entry_of(const pl_plan *plan, pl_tid t)
{
    if (plan->entry_of == NULL || t >= plan->n_graph_tensors ||
        plan->entry_of[t] == PLAN_NONE)
        return NULL;
    return &plan->entries[plan->entry_of[t]];
}

size_t pl_plan_entry_count(const pl_plan *plan)
{
    return plan->n_entries;
}

const pl_plan_entry *pl_plan_entry_at(const pl_plan *plan, size_t i)
{
    return i < plan->n_entries ? &plan->entries[i] : NULL;
}

size_t pl_plan_shares_with(const pl_plan *plan, size_t i)
{
    return i < plan->n_entries ? plan->shares[i] : PL_PLAN_NONE;
}

int32_t pl_plan_device_count(const pl_plan *plan)
{
    return plan->n_devices;
}

const pl_plan_device_stats *pl_plan_stats(const pl_plan *plan, int32_t device)
{
    if (device < 0 || device >= plan->n_devices)
        return NULL;
    return &plan->stats[device];
}

size_t pl_plan_alignment(const pl_plan *plan)
{
    return plan->alignment;
}
