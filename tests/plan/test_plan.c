/* test_plan.c — tests of the memory planner (core/src/plan.c): hand-made
 * graphs with known plans, a property test over thousands of random DAGs
 * checked against an independent liveness computation, graphs shaped like
 * resnet18, mobilenet_v2 and bert_tiny, and a sweep that fails every
 * allocation of planning in turn. Linked against the core's object library.
 * Usage: test_plan CASE. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "../failing_allocator.h"
#include "graph.h"
#include "plan.h"
#include "status.h"

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                  \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

#define CHECK_OK(expr)                                                       \
    do {                                                                     \
        pl_status *st_ = (expr);                                             \
        if (st_ != NULL) {                                                   \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__,    \
                    #expr, pl_status_message(st_));                          \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

/* ---- building graphs ---------------------------------------------------- */

/* A tensor of ELEMS f32 values named NAME (created if absent). */
static pl_tid f32(pl_graph *g, const char *name, int64_t elems)
{
    pl_tid t;
    CHECK_OK(pl_graph_tensor_get_or_add(g, name, &t));
    CHECK_OK(pl_graph_set_type(g, t, PL_DTYPE_F32, 1, &elems, NULL));
    return t;
}

/* Adds node NAME (op OP) from a space-separated list of input names to a
 * space-separated list of output names. */
static pl_nid add(pl_graph *g, const char *name, const char *op,
                  const char *ins, const char *outs)
{
    char buf[2][256];
    const char *names[2][16];
    size_t count[2] = {0, 0};
    const char *lists[2] = {ins, outs};
    for (int l = 0; l < 2; l++) {
        snprintf(buf[l], sizeof buf[l], "%s", lists[l]);
        for (char *save = NULL, *tok = strtok_r(buf[l], " ", &save); tok;
             tok = strtok_r(NULL, " ", &save))
            names[l][count[l]++] = strcmp(tok, "-") == 0 ? "" : tok;
    }
    pl_nid n;
    CHECK_OK(pl_graph_add_node(g, name, op, "", names[0], count[0], names[1],
                               count[1], &n));
    return n;
}

static pl_tid tid(const pl_graph *g, const char *name)
{
    pl_tid t = pl_graph_find_tensor(g, name);
    CHECK(t != PL_TID_NONE);
    return t;
}

static int32_t *devices_all(const pl_graph *g, int32_t device)
{
    size_t n = pl_graph_tensor_count(g);
    int32_t *d = malloc((n ? n : 1) * sizeof *d);
    CHECK(d != NULL);
    for (size_t i = 0; i < n; i++)
        d[i] = device;
    return d;
}

/* Policy: elementwise ops may overwrite any input. */
static bool elementwise_policy(void *user, pl_nid node, size_t out, size_t slot)
{
    (void)out;
    (void)slot;
    const pl_graph *g = user;
    const char *op = pl_graph_get_node(g, node)->op;
    static const char *const ops[] = {"Relu", "Clip", "Add", "Mul", "Div",
                                      "Sub", "Erf", "Reshape", "Sigmoid"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(op, ops[i]) == 0)
            return true;
    return false;
}

/* Policy: output 0 may overwrite input slot 0 only, of any op. */
static bool first_slot_policy(void *user, pl_nid node, size_t out, size_t slot)
{
    (void)user;
    (void)node;
    return out == 0 && slot == 0;
}

static pl_plan *plan_topo(const pl_graph *g, const int32_t *devices,
                          int32_t n_devices, pl_plan_inplace_fn policy,
                          void *user)
{
    pl_plan_options o = {.graph = g,
                         .order = pl_graph_topo_order(g),
                         .n_order = pl_graph_node_count(g),
                         .tensor_device = devices,
                         .n_devices = n_devices,
                         .inplace = policy,
                         .user = user};
    pl_plan *p = NULL;
    CHECK_OK(pl_plan_build(&o, &p));
    CHECK(p != NULL);
    return p;
}

static const pl_plan_entry *entry(const pl_plan *p, const pl_graph *g,
                                  const char *name)
{
    return pl_plan_entry_of(p, tid(g, name));
}

/* ---- the independent checker -------------------------------------------- */

typedef struct check_ctx {
    const pl_graph *g;
    const pl_nid *order;
    size_t n_order;
    const int32_t *devices;
    int32_t n_devices;
    size_t align;
    pl_plan_inplace_fn policy;
    void *user;
} check_ctx;

static size_t round_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

/* Checks every property of plan P against a liveness computation of its
 * own; returns the worst arena / lower bound ratio over the devices (0 when
 * every lower bound is 0). */
static double check_plan(const check_ctx *c, const pl_plan *p)
{
    const pl_graph *g = c->g;
    size_t nt = pl_graph_tensor_count(g), nn = pl_graph_node_count(g);
    long *step = malloc((nn ? nn : 1) * sizeof *step);
    CHECK(step != NULL);
    for (size_t i = 0; i < nn; i++)
        step[i] = -1;
    for (size_t s = 0; s < c->n_order; s++)
        step[c->order[s]] = (long)s;
    CHECK(pl_plan_alignment(p) == c->align);
    CHECK(pl_plan_device_count(p) == c->n_devices);

    /* Which tensors must be planned, and their lifetimes. */
    size_t expected_entries = 0;
    for (pl_tid t = 0; t < nt; t++) {
        const pl_graph_tensor *gt = pl_graph_get_tensor(g, t);
        bool planned = c->devices[t] >= 0 && !gt->is_input && !gt->is_output &&
                       gt->data == NULL && gt->producer != PL_NID_NONE &&
                       step[gt->producer] >= 0;
        long last = planned ? step[gt->producer] : -1;
        for (size_t k = 0; planned && k < gt->n_consumers; k++) {
            long cs = step[gt->consumers[k]];
            if (cs < 0)
                planned = false;
            else if (cs > last)
                last = cs;
        }
        const pl_plan_entry *e = pl_plan_entry_of(p, t);
        CHECK((e != NULL) == planned);
        if (!planned)
            continue;
        expected_entries++;
        size_t bytes;
        CHECK(pl_graph_tensor_bytes(gt, &bytes));
        CHECK(e->tensor == t);
        CHECK(e->bytes == bytes);
        CHECK(e->device == c->devices[t]);
        CHECK(e->first_step == (uint32_t)step[gt->producer]);
        CHECK(e->last_step == (uint32_t)last);
        CHECK(e->offset % c->align == 0);
    }
    CHECK(pl_plan_entry_count(p) == expected_entries);
    CHECK(pl_plan_entry_of(p, (pl_tid)nt) == NULL);
    CHECK(pl_plan_entry_at(p, expected_entries) == NULL);

    size_t m = expected_entries;
    const pl_plan_entry **es = malloc((m ? m : 1) * sizeof *es);
    size_t *root = malloc((m ? m : 1) * sizeof *root);
    size_t *sharers = calloc(m ? m : 1, sizeof *sharers);
    size_t *index_of = malloc((nt ? nt : 1) * sizeof *index_of);
    CHECK(es && root && sharers && index_of);
    for (size_t i = 0; i < nt; i++)
        index_of[i] = SIZE_MAX;
    for (size_t i = 0; i < m; i++) {
        es[i] = pl_plan_entry_at(p, i);
        CHECK(es[i] != NULL);
        CHECK(pl_plan_entry_of(p, es[i]->tensor) == es[i]);
        index_of[es[i]->tensor] = i;
        if (i > 0)
            CHECK(es[i]->first_step >= es[i - 1]->first_step);
    }

    /* Every in-place reuse is legal. Entries come in production order, so
     * a source precedes its sharer and its root is known. */
    size_t *inplace_count = calloc((size_t)c->n_devices + 1, sizeof *inplace_count);
    CHECK(inplace_count != NULL);
    for (size_t i = 0; i < m; i++) {
        const pl_plan_entry *e = es[i];
        root[i] = i;
        if (e->shares_with == PL_TID_NONE)
            continue;
        size_t j = index_of[e->shares_with];
        CHECK(j != SIZE_MAX && j < i);
        const pl_plan_entry *u = es[j];
        pl_nid n = pl_graph_get_tensor(g, e->tensor)->producer;
        const pl_graph_node *node = pl_graph_get_node(g, n);
        size_t out = SIZE_MAX;
        for (size_t k = 0; k < node->n_outputs; k++)
            if (node->outputs[k] == e->tensor)
                out = k;
        bool allowed = false;
        for (size_t k = 0; k < node->n_inputs; k++)
            if (node->inputs[k] == u->tensor && c->policy(c->user, n, out, k))
                allowed = true;
        CHECK(allowed);
        CHECK(u->last_step == e->first_step);  /* the input dies here */
        CHECK(u->device == e->device);
        CHECK(u->bytes == e->bytes);
        CHECK(u->offset == e->offset);
        CHECK(++sharers[j] == 1);
        root[i] = root[j];
        inplace_count[e->device]++;
    }

    /* No two blocks alive at one step overlap, unless one shares with the
     * other; sizes are rounded, as blocks are. */
    for (size_t i = 0; i < m; i++)
        for (size_t j = i + 1; j < m; j++) {
            const pl_plan_entry *a = es[i], *b = es[j];
            if (a->device != b->device || a->last_step < b->first_step ||
                b->last_step < a->first_step)
                continue;
            size_t ra = round_up(a->bytes, c->align), rb = round_up(b->bytes, c->align);
            if (ra == 0 || rb == 0)
                continue;
            bool disjoint = a->offset + ra <= b->offset || b->offset + rb <= a->offset;
            if (!disjoint)
                CHECK(a->shares_with == b->tensor || b->shares_with == a->tensor);
        }

    /* Figures per device, the lower bound computed step by step. */
    double worst = 0;
    size_t *stamp = malloc((m ? m : 1) * sizeof *stamp);
    CHECK(stamp != NULL);
    for (int32_t d = 0; d < c->n_devices; d++) {
        const pl_plan_device_stats *st = pl_plan_stats(p, d);
        CHECK(st != NULL);
        size_t naive = 0, end = 0, count = 0, lower = 0;
        for (size_t i = 0; i < m; i++) {
            if (es[i]->device != d)
                continue;
            size_t r = round_up(es[i]->bytes, c->align);
            naive += r;
            count++;
            if (r > 0 && es[i]->offset + r > end)
                end = es[i]->offset + r;
        }
        for (size_t i = 0; i < m; i++)
            stamp[i] = SIZE_MAX;
        for (size_t s = 0; s < c->n_order; s++) {
            size_t live = 0;
            for (size_t i = 0; i < m; i++) {
                if (es[i]->device != d || es[i]->first_step > s || es[i]->last_step < s)
                    continue;
                if (stamp[root[i]] == s)
                    continue;
                stamp[root[i]] = s;
                live += round_up(es[root[i]]->bytes, c->align);
            }
            if (live > lower)
                lower = live;
        }
        CHECK(st->naive_bytes == naive);
        CHECK(st->n_tensors == count);
        CHECK(st->n_inplace == inplace_count[d]);
        CHECK(st->lower_bound_bytes == lower);
        CHECK(st->arena_bytes == end);
        CHECK(st->arena_bytes >= st->lower_bound_bytes);
        CHECK(st->naive_bytes >= st->arena_bytes);
        if (lower > 0) {
            double ratio = (double)st->arena_bytes / (double)lower;
            if (ratio > worst)
                worst = ratio;
        }
    }
    CHECK(pl_plan_stats(p, -1) == NULL);
    CHECK(pl_plan_stats(p, c->n_devices) == NULL);
    free(stamp);
    free(inplace_count);
    free(es);
    free(root);
    free(sharers);
    free(index_of);
    free(step);
    return worst;
}

static double check_topo(const pl_graph *g, const pl_plan *p,
                         const int32_t *devices, int32_t n_devices,
                         pl_plan_inplace_fn policy, void *user)
{
    check_ctx c = {.g = g, .order = pl_graph_topo_order(g),
                   .n_order = pl_graph_node_count(g), .devices = devices,
                   .n_devices = n_devices, .align = 64, .policy = policy,
                   .user = user};
    return check_plan(&c, p);
}

static bool never_policy(void *user, pl_nid node, size_t out, size_t slot)
{
    (void)user;
    (void)node;
    (void)out;
    (void)slot;
    return false;
}

/* ---- hand-made cases ---------------------------------------------------- */

/* x -> A -> a -> Relu -> b -> Relu -> c -> B -> y: a, b and c share one
 * block; without the policy a and b (and b and c) need two. */
static void case_chain_inplace(void)
{
    pl_graph *g;
    CHECK_OK(pl_graph_create(&g));
    f32(g, "x", 250);
    f32(g, "a", 250);  /* 1000 bytes: rounded to 1024 */
    f32(g, "b", 250);
    f32(g, "c", 250);
    f32(g, "y", 250);
    add(g, "A", "Custom", "x", "a");
    add(g, "R1", "Relu", "a", "b");
    add(g, "R2", "Relu", "b", "c");
    add(g, "B", "Custom", "c", "y");
    CHECK_OK(pl_graph_add_input(g, tid(g, "x")));
    CHECK_OK(pl_graph_add_output(g, tid(g, "y")));
    CHECK_OK(pl_graph_validate(g));
    int32_t *dev = devices_all(g, 0);

    pl_plan *p = plan_topo(g, dev, 1, elementwise_policy, g);
    check_topo(g, p, dev, 1, elementwise_policy, g);
    CHECK(entry(p, g, "x") == NULL);
    CHECK(entry(p, g, "y") == NULL);
    const pl_plan_entry *a = entry(p, g, "a"), *b = entry(p, g, "b"),
                        *c = entry(p, g, "c");
    CHECK(a && b && c);
    CHECK(a->shares_with == PL_TID_NONE);
    CHECK(b->shares_with == tid(g, "a"));
    CHECK(c->shares_with == tid(g, "b"));
    CHECK(a->offset == 0 && b->offset == 0 && c->offset == 0);
    CHECK(a->bytes == 1000);
    CHECK(a->first_step == 0 && a->last_step == 1);
    CHECK(c->first_step == 2 && c->last_step == 3);
    const pl_plan_device_stats *st = pl_plan_stats(p, 0);
    CHECK(st->arena_bytes == 1024);
    CHECK(st->lower_bound_bytes == 1024);
    CHECK(st->naive_bytes == 3072);
    CHECK(st->n_tensors == 3 && st->n_inplace == 2);
    pl_plan_destroy(p);

    p = plan_topo(g, dev, 1, NULL, NULL);
    check_topo(g, p, dev, 1, never_policy, NULL);
    st = pl_plan_stats(p, 0);
    CHECK(st->arena_bytes == 2048);
    CHECK(st->lower_bound_bytes == 2048);
    CHECK(st->n_inplace == 0);
    CHECK(entry(p, g, "a")->offset == entry(p, g, "c")->offset);
    pl_plan_destroy(p);

    /* A larger alignment rounds offsets and sizes to it. */
    pl_plan_options o = {.graph = g, .order = pl_graph_topo_order(g),
                         .n_order = 4, .tensor_device = dev, .n_devices = 1,
                         .alignment = 4096};
    CHECK_OK(pl_plan_build(&o, &p));
    CHECK(pl_plan_alignment(p) == 4096);
    CHECK(pl_plan_stats(p, 0)->arena_bytes == 8192);
    CHECK(pl_plan_stats(p, 0)->naive_bytes == 3 * 4096);
    pl_plan_destroy(p);
    free(dev);
    pl_graph_destroy(g);
}

/* x -> A -> a; a -> B -> b; a -> C -> c; (b, c) -> D -> d -> E -> y. B may
 * not overwrite a (C still reads it), C may; D overwrites b. */
static void case_diamond(void)
{
    pl_graph *g;
    CHECK_OK(pl_graph_create(&g));
    const char *names[] = {"x", "a", "b", "c", "d", "y"};
    for (size_t i = 0; i < 6; i++)
        f32(g, names[i], 256);
    add(g, "A", "Custom", "x", "a");
    add(g, "B", "Custom", "a", "b");
    add(g, "C", "Custom", "a", "c");
    add(g, "D", "Custom", "b c", "d");
    add(g, "E", "Custom", "d", "y");
    CHECK_OK(pl_graph_add_input(g, tid(g, "x")));
    CHECK_OK(pl_graph_add_output(g, tid(g, "y")));
    CHECK_OK(pl_graph_validate(g));
    int32_t *dev = devices_all(g, 0);
    pl_plan *p = plan_topo(g, dev, 1, first_slot_policy, NULL);
    check_topo(g, p, dev, 1, first_slot_policy, NULL);
    CHECK(entry(p, g, "b")->shares_with == PL_TID_NONE);
    CHECK(entry(p, g, "c")->shares_with == tid(g, "a"));
    CHECK(entry(p, g, "d")->shares_with == tid(g, "b"));
    CHECK(entry(p, g, "a")->last_step == 2);
    const pl_plan_device_stats *st = pl_plan_stats(p, 0);
    CHECK(st->lower_bound_bytes == 2048);
    CHECK(st->arena_bytes == 2048);
    CHECK(st->naive_bytes == 4096);
    pl_plan_destroy(p);
    free(dev);
    pl_graph_destroy(g);
}

/* A residual block: t1 = conv(x); h = relu(t1); r = conv(h); r2 = relu(r);
 * s = add(r2, h); o = relu(s). The add may overwrite either input: both die
 * there. */
static bool add_second_policy(void *user, pl_nid node, size_t out, size_t slot)
{
    const pl_graph *g = user;
    const char *op = pl_graph_get_node(g, node)->op;
    if (strcmp(op, "Add") == 0)
        return out == 0 && slot == 1;
    return elementwise_policy(user, node, out, slot);
}

static void case_residual(void)
{
    pl_graph *g;
    CHECK_OK(pl_graph_create(&g));
    const char *names[] = {"x", "t1", "h", "r", "r2", "s", "o", "z"};
    for (size_t i = 0; i < 8; i++)
        f32(g, names[i], 64 * 56 * 56);
    add(g, "conv1", "Conv", "x", "t1");
    add(g, "relu1", "Relu", "t1", "h");
    add(g, "conv2", "Conv", "h", "r");
    add(g, "relu2", "Relu", "r", "r2");
    add(g, "add", "Add", "r2 h", "s");
    add(g, "relu3", "Relu", "s", "o");
    add(g, "head", "Conv", "o", "z");
    CHECK_OK(pl_graph_add_input(g, tid(g, "x")));
    CHECK_OK(pl_graph_add_output(g, tid(g, "z")));
    CHECK_OK(pl_graph_validate(g));
    int32_t *dev = devices_all(g, 0);
    size_t block = (size_t)64 * 56 * 56 * 4;

    pl_plan *p = plan_topo(g, dev, 1, elementwise_policy, g);
    check_topo(g, p, dev, 1, elementwise_policy, g);
    CHECK(entry(p, g, "h")->shares_with == tid(g, "t1"));
    CHECK(entry(p, g, "r2")->shares_with == tid(g, "r"));
    CHECK(entry(p, g, "s")->shares_with == tid(g, "r2"));
    CHECK(entry(p, g, "o")->shares_with == tid(g, "s"));
    CHECK(entry(p, g, "h")->last_step == 4);
    CHECK(entry(p, g, "h")->offset != entry(p, g, "r")->offset);
    const pl_plan_device_stats *st = pl_plan_stats(p, 0);
    CHECK(st->lower_bound_bytes == 2 * block);
    CHECK(st->arena_bytes == 2 * block);
    CHECK(st->naive_bytes == 6 * block);
    pl_plan_destroy(p);

    p = plan_topo(g, dev, 1, add_second_policy, g);
    check_topo(g, p, dev, 1, add_second_policy, g);
    CHECK(entry(p, g, "s")->shares_with == tid(g, "h"));
    CHECK(entry(p, g, "s")->offset == entry(p, g, "t1")->offset);
    CHECK(pl_plan_stats(p, 0)->arena_bytes == 2 * block);
    pl_plan_destroy(p);
    free(dev);
    pl_graph_destroy(g);
}

/* a and d on device 0, b and c on device 1: two arenas, and no in-place
 * reuse across devices. */
static void case_two_devices(void)
{
    pl_graph *g;
    CHECK_OK(pl_graph_create(&g));
    f32(g, "x", 256);
    f32(g, "a", 256);
    f32(g, "b", 256);
    f32(g, "c", 256);
    f32(g, "d", 256);
    f32(g, "y", 256);
    f32(g, "e", 1024);
    add(g, "A", "Relu", "x", "a");
    add(g, "B", "Relu", "a", "b");
    add(g, "C", "Relu", "b", "c");
    add(g, "D", "Relu", "c", "d");
    add(g, "E", "Custom", "d", "e");
    add(g, "F", "Custom", "e", "y");
    CHECK_OK(pl_graph_add_input(g, tid(g, "x")));
    CHECK_OK(pl_graph_add_output(g, tid(g, "y")));
    CHECK_OK(pl_graph_validate(g));
    int32_t *dev = devices_all(g, 0);
    dev[tid(g, "b")] = 1;
    dev[tid(g, "c")] = 1;
    dev[tid(g, "e")] = 2;
    pl_plan *p = plan_topo(g, dev, 3, elementwise_policy, g);
    check_topo(g, p, dev, 3, elementwise_policy, g);
    CHECK(entry(p, g, "a")->device == 0 && entry(p, g, "d")->device == 0);
    CHECK(entry(p, g, "b")->device == 1 && entry(p, g, "c")->device == 1);
    CHECK(entry(p, g, "b")->shares_with == PL_TID_NONE);
    CHECK(entry(p, g, "c")->shares_with == tid(g, "b"));
    CHECK(entry(p, g, "d")->shares_with == PL_TID_NONE);
    CHECK(pl_plan_device_count(p) == 3);
    const pl_plan_device_stats *s0 = pl_plan_stats(p, 0), *s1 = pl_plan_stats(p, 1),
                               *s2 = pl_plan_stats(p, 2);
    CHECK(s0->n_tensors == 2 && s0->arena_bytes == 1024 && s0->naive_bytes == 2048);
    CHECK(s1->n_tensors == 2 && s1->n_inplace == 1 && s1->arena_bytes == 1024);
    CHECK(s2->n_tensors == 1 && s2->arena_bytes == 4096);
    pl_plan_destroy(p);

    /* A device with nothing planned has an empty arena. */
    int32_t *dev4 = devices_all(g, 0);
    p = plan_topo(g, dev4, 4, NULL, NULL);
    check_topo(g, p, dev4, 4, never_policy, NULL);
    CHECK(pl_plan_stats(p, 3)->arena_bytes == 0);
    CHECK(pl_plan_stats(p, 3)->n_tensors == 0);
    pl_plan_destroy(p);
    free(dev4);
    free(dev);
    pl_graph_destroy(g);
}

/* A graph output stays outside the arena even when a node reads it, and a
 * node may not overwrite it in place; a tensor nobody reads is still
 * planned, for its producing step. */
static void case_output_excluded(void)
{
    pl_graph *g;
    CHECK_OK(pl_graph_create(&g));
    const char *names[] = {"x", "a", "b", "dead", "y"};
    for (size_t i = 0; i < 5; i++)
        f32(g, names[i], 256);
    add(g, "A", "Custom", "x", "a");
    add(g, "R", "Relu", "a", "b dead");
    add(g, "B", "Custom", "b", "y");
    CHECK_OK(pl_graph_add_input(g, tid(g, "x")));
    CHECK_OK(pl_graph_add_output(g, tid(g, "a")));
    CHECK_OK(pl_graph_add_output(g, tid(g, "y")));
    CHECK_OK(pl_graph_validate(g));
    int32_t *dev = devices_all(g, 0);
    pl_plan *p = plan_topo(g, dev, 1, elementwise_policy, g);
    check_topo(g, p, dev, 1, elementwise_policy, g);
    CHECK(entry(p, g, "a") == NULL);
    CHECK(entry(p, g, "y") == NULL);
    CHECK(entry(p, g, "b")->shares_with == PL_TID_NONE);
    const pl_plan_entry *dead = entry(p, g, "dead");
    CHECK(dead != NULL && dead->first_step == 1 && dead->last_step == 1);
    CHECK(dead->offset != entry(p, g, "b")->offset);
    CHECK(pl_plan_entry_count(p) == 2);
    CHECK(pl_plan_stats(p, 0)->arena_bytes == 2048);
    pl_plan_destroy(p);
    free(dev);
    pl_graph_destroy(g);
}

/* A constant (and a graph input) stays outside the arena; asking to
 * overwrite one in place is refused quietly. */
static void case_constant_excluded(void)
{
    pl_graph *g;
    CHECK_OK(pl_graph_create(&g));
    f32(g, "x", 16);
    pl_tid w = f32(g, "w", 16);
    float data[16] = {0};
    CHECK_OK(pl_graph_set_constant(g, w, data, sizeof data));
    f32(g, "a", 16);
    f32(g, "y", 16);
    add(g, "A", "Add", "w x", "a");
    add(g, "B", "Add", "a w", "y");
    CHECK_OK(pl_graph_add_input(g, tid(g, "x")));
    CHECK_OK(pl_graph_add_output(g, tid(g, "y")));
    CHECK_OK(pl_graph_validate(g));
    int32_t *dev = devices_all(g, 0);
    pl_plan *p = plan_topo(g, dev, 1, elementwise_policy, g);
    check_topo(g, p, dev, 1, elementwise_policy, g);
    CHECK(pl_plan_entry_of(p, w) == NULL);
    CHECK(entry(p, g, "x") == NULL);
    CHECK(entry(p, g, "a") != NULL);
    CHECK(entry(p, g, "a")->shares_with == PL_TID_NONE);
    CHECK(pl_plan_entry_count(p) == 1);
    CHECK(pl_plan_stats(p, 0)->arena_bytes == 64);
    pl_plan_destroy(p);
    free(dev);
    pl_graph_destroy(g);
}

/* Nodes outside the order: what they read or write is external; tensors on
 * device -1 are not planned either. */
static void case_external(void)
{
    pl_graph *g;
    CHECK_OK(pl_graph_create(&g));
    const char *names[] = {"x", "a", "b", "c", "d", "e", "y"};
    for (size_t i = 0; i < 7; i++)
        f32(g, names[i], 256);
    pl_nid A = add(g, "A", "Custom", "x", "a");
    add(g, "M", "Module", "a", "b");  /* runs inside a module */
    pl_nid C = add(g, "C", "Custom", "b", "c");
    pl_nid D = add(g, "D", "Custom", "c", "d");
    pl_nid E = add(g, "E", "Custom", "d", "e");
    pl_nid F = add(g, "F", "Custom", "e", "y");
    CHECK_OK(pl_graph_add_input(g, tid(g, "x")));
    CHECK_OK(pl_graph_add_output(g, tid(g, "y")));
    CHECK_OK(pl_graph_validate(g));
    int32_t *dev = devices_all(g, 0);
    dev[tid(g, "d")] = -1;
    pl_nid order[] = {A, C, D, E, F};
    pl_plan_options o = {.graph = g, .order = order, .n_order = 5,
                         .tensor_device = dev, .n_devices = 1};
    pl_plan *p = NULL;
    CHECK_OK(pl_plan_build(&o, &p));
    check_ctx c = {.g = g, .order = order, .n_order = 5, .devices = dev,
                   .n_devices = 1, .align = 64, .policy = never_policy};
    check_plan(&c, p);
    CHECK(entry(p, g, "a") == NULL);
    CHECK(entry(p, g, "b") == NULL);
    CHECK(entry(p, g, "c") != NULL);
    CHECK(entry(p, g, "d") == NULL);
    CHECK(entry(p, g, "e") != NULL);
    CHECK(entry(p, g, "c")->first_step == 1 && entry(p, g, "c")->last_step == 2);
    pl_plan_destroy(p);
    free(dev);
    pl_graph_destroy(g);
}

static void expect_error(const pl_plan_options *o, pl_code code,
                         const char *needle1, const char *needle2)
{
    pl_plan *p = (pl_plan *)o;  /* must be cleared */
    pl_status *st = pl_plan_build(o, &p);
    CHECK(st != NULL);
    CHECK(p == NULL);
    const char *msg = pl_status_message(st);
    if (pl_status_code(st) != code || (needle1 && !strstr(msg, needle1)) ||
        (needle2 && !strstr(msg, needle2))) {
        fprintf(stderr, "unexpected error %d: %s\n", (int)pl_status_code(st), msg);
        exit(1);
    }
    printf("  %s\n", msg);
    pl_status_free(st);
}

/* A tensor to plan whose size is unknown is an error naming it. */
static void case_unknown_size(void)
{
    pl_graph *g;
    CHECK_OK(pl_graph_create(&g));
    f32(g, "x", 256);
    pl_tid a;
    CHECK_OK(pl_graph_tensor_get_or_add(g, "act", &a));
    int64_t dims[2] = {-1, 4};
    CHECK_OK(pl_graph_set_type(g, a, PL_DTYPE_F32, 2, dims, NULL));
    f32(g, "y", 256);
    add(g, "conv1", "Conv", "x", "act");
    add(g, "B", "Custom", "act", "y");
    CHECK_OK(pl_graph_add_input(g, tid(g, "x")));
    CHECK_OK(pl_graph_add_output(g, tid(g, "y")));
    CHECK_OK(pl_graph_validate(g));
    int32_t *dev = devices_all(g, 0);
    pl_plan_options o = {.graph = g, .order = pl_graph_topo_order(g),
                         .n_order = 2, .tensor_device = dev, .n_devices = 1};
    expect_error(&o, PL_CODE_INVALID_ARGUMENT, "'act'", "[?,4]");

    /* Unknown rank and unknown dtype too. */
    CHECK_OK(pl_graph_set_type(g, a, PL_DTYPE_F32, -1, NULL, NULL));
    CHECK_OK(pl_graph_validate(g));
    o.order = pl_graph_topo_order(g);
    expect_error(&o, PL_CODE_INVALID_ARGUMENT, "'act'", "(unknown rank)");
    int64_t four = 4;
    CHECK_OK(pl_graph_set_type(g, a, (pl_dtype){0, 0, 0}, 1, &four, NULL));
    CHECK_OK(pl_graph_validate(g));
    o.order = pl_graph_topo_order(g);
    expect_error(&o, PL_CODE_INVALID_ARGUMENT, "'act'", "conv1");

    /* Not an error when the tensor is not the core's to plan. */
    dev[a] = -1;
    pl_plan *p = NULL;
    CHECK_OK(pl_plan_build(&o, &p));
    CHECK(pl_plan_entry_count(p) == 0);
    pl_plan_destroy(p);
    free(dev);
    pl_graph_destroy(g);
}

/* Bad options are errors that say what is wrong. */
static void case_bad_options(void)
{
    pl_graph *g;
    CHECK_OK(pl_graph_create(&g));
    const char *names[] = {"x", "a", "b", "y"};
    for (size_t i = 0; i < 4; i++)
        f32(g, names[i], 256);
    pl_nid A = add(g, "A", "Custom", "x", "a");
    pl_nid B = add(g, "B", "Custom", "a", "b");
    pl_nid C = add(g, "C", "Custom", "b", "y");
    CHECK_OK(pl_graph_add_input(g, tid(g, "x")));
    CHECK_OK(pl_graph_add_output(g, tid(g, "y")));
    int32_t *dev = devices_all(g, 0);
    pl_nid order[3] = {A, B, C};
    pl_plan_options o = {.graph = g, .order = order, .n_order = 3,
                         .tensor_device = dev, .n_devices = 1};
    expect_error(&o, PL_CODE_FAILED_PRECONDITION, "not validated", NULL);
    CHECK_OK(pl_graph_validate(g));

    pl_nid dup[3] = {A, B, B};
    o.order = dup;
    expect_error(&o, PL_CODE_INVALID_ARGUMENT, "'B'", "twice");
    pl_nid backwards[3] = {A, C, B};
    o.order = backwards;
    expect_error(&o, PL_CODE_INVALID_ARGUMENT, "'C'", "'b'");
    pl_nid range[3] = {A, B, 7};
    o.order = range;
    expect_error(&o, PL_CODE_INVALID_ARGUMENT, "node 7", NULL);
    o.order = order;

    dev[tid(g, "a")] = 1;
    expect_error(&o, PL_CODE_INVALID_ARGUMENT, "'a'", "device index 1");
    dev[tid(g, "a")] = -2;
    expect_error(&o, PL_CODE_INVALID_ARGUMENT, "'a'", "device index -2");
    dev[tid(g, "a")] = 0;
    o.alignment = 48;
    expect_error(&o, PL_CODE_INVALID_ARGUMENT, "alignment 48", NULL);
    o.alignment = 0;
    o.n_devices = -1;
    expect_error(&o, PL_CODE_INVALID_ARGUMENT, NULL, NULL);
    o.n_devices = 1;
    o.order = NULL;
    expect_error(&o, PL_CODE_INVALID_ARGUMENT, NULL, NULL);
    o.order = order;
    o.tensor_device = NULL;
    expect_error(&o, PL_CODE_INVALID_ARGUMENT, NULL, NULL);
    o.tensor_device = dev;
    o.graph = NULL;
    expect_error(&o, PL_CODE_INVALID_ARGUMENT, NULL, NULL);
    expect_error(NULL, PL_CODE_INVALID_ARGUMENT, NULL, NULL);
    o.graph = g;
    pl_status *st = pl_plan_build(&o, NULL);
    CHECK(pl_status_code(st) == PL_CODE_INVALID_ARGUMENT);
    pl_status_free(st);

    /* An empty order plans nothing. */
    o.n_order = 0;
    pl_plan *p = NULL;
    CHECK_OK(pl_plan_build(&o, &p));
    CHECK(pl_plan_entry_count(p) == 0);
    CHECK(pl_plan_stats(p, 0)->arena_bytes == 0);
    pl_plan_destroy(p);
    pl_plan_destroy(NULL);
    free(dev);
    pl_graph_destroy(g);
}

/* ---- random DAGs -------------------------------------------------------- */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
    /* xorshift64*: deterministic, so a failure reproduces with its seed. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)(((rng_state * 2685821657736338717ull) >> 32) % n);
}

/* The random policy: a fixed coin per (node, output, slot). */
typedef struct rand_policy {
    uint64_t seed;
} rand_policy;

static bool random_policy(void *user, pl_nid node, size_t out, size_t slot)
{
    const rand_policy *r = user;
    uint64_t h = r->seed ^ (node * 0x9E3779B97F4A7C15ull) ^ (out * 0xC2B2AE3D27D4EB4Full) ^
                 (slot * 0x165667B19E3779F9ull);
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    return (h % 100) < 70;
}

typedef struct dag_stats {
    double worst, sum;
    size_t counted;
} dag_stats;

static void random_dag(uint64_t seed, dag_stats *ds)
{
    rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
    pl_graph *g;
    CHECK_OK(pl_graph_create(&g));
    size_t n_nodes = 1 + rnd(60);
    size_t cap = 8 + n_nodes * 3;
    pl_tid *pool = malloc(cap * sizeof *pool);  /* tensors nodes may read */
    int64_t *sizes = malloc(cap * sizeof *sizes);
    CHECK(pool && sizes);
    size_t n_pool = 0;
    char name[64];
    static const int64_t palette[] = {1, 16, 100, 256, 1000, 4096, 6000, 16384, 65536};
    size_t n_in = 1 + rnd(3);
    for (size_t i = 0; i < n_in; i++) {
        snprintf(name, sizeof name, "in%zu", i);
        sizes[n_pool] = palette[rnd(9)];
        pl_tid t = f32(g, name, sizes[n_pool]);
        CHECK_OK(pl_graph_add_input(g, t));
        pool[n_pool++] = t;
    }
    if (rnd(2)) {
        int64_t elems = palette[rnd(9)];
        pl_tid t = f32(g, "const", elems);
        float *data = calloc((size_t)elems, sizeof *data);
        CHECK_OK(pl_graph_set_constant(g, t, data, (size_t)elems * sizeof *data));
        free(data);
        sizes[n_pool] = elems;
        pool[n_pool++] = t;
    }
    for (size_t n = 0; n < n_nodes; n++) {
        const char *ins[4], *outs[3];
        char in_names[4][48], out_names[3][48];
        size_t ni = 1 + rnd(rnd(4) == 0 ? 4 : 2), no = 1 + (rnd(5) == 0) + (rnd(9) == 0);
        int64_t first_size = 0;
        for (size_t k = 0; k < ni; k++) {
            /* Mostly recent tensors (chains), sometimes anything (skips);
             * sometimes an absent optional input. */
            size_t pick = rnd(3) ? n_pool - 1 - rnd(n_pool < 4 ? (uint32_t)n_pool : 4)
                                 : rnd((uint32_t)n_pool);
            if (k > 0 && rnd(12) == 0) {
                ins[k] = "";
                continue;
            }
            const pl_graph_tensor *t = pl_graph_get_tensor(g, pool[pick]);
            snprintf(in_names[k], sizeof in_names[k], "%s", t->name);
            ins[k] = in_names[k];
            if (k == 0)
                first_size = sizes[pick];
        }
        for (size_t k = 0; k < no; k++) {
            snprintf(out_names[k], sizeof out_names[k], "t%zu_%zu", n, k);
            outs[k] = out_names[k];
            /* Often the size of the first input, so in place is possible. */
            int64_t elems = rnd(2) ? first_size : palette[rnd(9)];
            if (rnd(40) == 0)
                elems = 0;
            sizes[n_pool] = elems;
            pool[n_pool++] = f32(g, outs[k], elems);
        }
        snprintf(name, sizeof name, "n%zu", n);
        CHECK_OK(pl_graph_add_node(g, name, "Custom", "", ins, ni, outs, no, NULL));
    }
    /* Outputs: the last node's, and a few others. */
    const pl_graph_node *last = pl_graph_get_node(g, (pl_nid)(n_nodes - 1));
    CHECK_OK(pl_graph_add_output(g, last->outputs[0]));
    for (size_t i = 0; i < n_pool; i++)
        if (rnd(12) == 0 && !pl_graph_get_tensor(g, pool[i])->is_output)
            CHECK_OK(pl_graph_add_output(g, pool[i]));
    CHECK_OK(pl_graph_validate(g));

    /* A random topological order (Kahn with random picks), sometimes with
     * nodes left out. */
    size_t nn = pl_graph_node_count(g), nt = pl_graph_tensor_count(g);
    uint32_t *indeg = calloc(nn, sizeof *indeg);
    pl_nid *ready = malloc(nn * sizeof *ready), *order = malloc(nn * sizeof *order);
    CHECK(indeg && ready && order);
    for (size_t n = 0; n < nn; n++) {
        const pl_graph_node *node = pl_graph_get_node(g, (pl_nid)n);
        for (size_t k = 0; k < node->n_inputs; k++)
            if (node->inputs[k] != PL_TID_NONE &&
                pl_graph_get_tensor(g, node->inputs[k])->producer != PL_NID_NONE)
                indeg[n]++;
    }
    size_t n_ready = 0, n_order = 0;
    for (size_t n = 0; n < nn; n++)
        if (indeg[n] == 0)
            ready[n_ready++] = (pl_nid)n;
    bool subset = rnd(5) == 0;
    while (n_ready > 0) {
        size_t i = rnd((uint32_t)n_ready);
        pl_nid n = ready[i];
        ready[i] = ready[--n_ready];
        if (!subset || rnd(4) != 0)
            order[n_order++] = n;
        const pl_graph_node *node = pl_graph_get_node(g, n);
        for (size_t k = 0; k < node->n_outputs; k++) {
            const pl_graph_tensor *t = pl_graph_get_tensor(g, node->outputs[k]);
            for (size_t c = 0; c < t->n_consumers; c++)
                if (--indeg[t->consumers[c]] == 0)
                    ready[n_ready++] = t->consumers[c];
        }
    }

    int32_t n_devices = 1 + (int32_t)rnd(3);
    int32_t *dev = malloc(nt * sizeof *dev);
    CHECK(dev != NULL);
    for (size_t t = 0; t < nt; t++)
        dev[t] = rnd(10) == 0 ? -1 : (int32_t)rnd((uint32_t)n_devices);
    static const size_t aligns[] = {0, 64, 8, 256};
    size_t align = aligns[rnd(4)];
    rand_policy rp = {.seed = seed};
    pl_plan_options o = {.graph = g, .order = order, .n_order = n_order,
                         .tensor_device = dev, .n_devices = n_devices,
                         .alignment = align, .inplace = random_policy,
                         .user = &rp};
    pl_plan *p = NULL;
    pl_status *st = pl_plan_build(&o, &p);
    if (st != NULL) {
        fprintf(stderr, "seed %llu: %s\n", (unsigned long long)seed,
                pl_status_message(st));
        exit(1);
    }
    check_ctx c = {.g = g, .order = order, .n_order = n_order, .devices = dev,
                   .n_devices = n_devices, .align = align ? align : 64,
                   .policy = random_policy, .user = &rp};
    for (int32_t d = 0; d < n_devices; d++) {
        const pl_plan_device_stats *s = pl_plan_stats(p, d);
        if (s->lower_bound_bytes > 0) {
            double ratio = (double)s->arena_bytes / (double)s->lower_bound_bytes;
            ds->sum += ratio;
            ds->counted++;
            if (ratio > ds->worst)
                ds->worst = ratio;
        }
    }
    check_plan(&c, p);
    pl_plan_destroy(p);
    free(dev);
    free(indeg);
    free(ready);
    free(order);
    free(pool);
    free(sizes);
    pl_graph_destroy(g);
}

static void case_random_dags(void)
{
    dag_stats ds = {0};
    const uint64_t n = 5000;
    for (uint64_t seed = 1; seed <= n; seed++)
        random_dag(seed, &ds);
    CHECK(ds.counted > 0);
    printf("random DAGs: %llu graphs, %zu arenas: arena / lower bound worst "
           "%.4f, average %.4f\n",
           (unsigned long long)n, ds.counted, ds.worst, ds.sum / (double)ds.counted);
}

/* ---- graphs shaped like real models ------------------------------------- */

/* Builds activations only: weights are constants, which the planner leaves
 * out, so they are left out here too. Shapes are batch 1. */
typedef struct net {
    pl_graph *g;
    size_t next;
} net;

static const char *net_op(net *b, const char *op, const char *ins, int ndim, ...)
{
    static char name[32];
    int64_t dims[8];
    va_list ap;
    va_start(ap, ndim);
    for (int i = 0; i < ndim; i++)
        dims[i] = va_arg(ap, int64_t);
    va_end(ap);
    snprintf(name, sizeof name, "v%zu", b->next++);
    pl_tid t;
    CHECK_OK(pl_graph_tensor_get_or_add(b->g, name, &t));
    CHECK_OK(pl_graph_set_type(b->g, t, PL_DTYPE_F32, ndim, dims, NULL));
    char node[40];
    snprintf(node, sizeof node, "%s_%zu", op, b->next);
    add(b->g, node, op, ins, name);
    return pl_graph_get_tensor(b->g, t)->name;
}

#define I64(x) ((int64_t)(x))

static void net_finish(net *b, const char *input, const char *output,
                       const char *label)
{
    CHECK_OK(pl_graph_add_input(b->g, tid(b->g, input)));
    CHECK_OK(pl_graph_add_output(b->g, tid(b->g, output)));
    CHECK_OK(pl_graph_validate(b->g));
    int32_t *dev = devices_all(b->g, 0);
    pl_plan *p = plan_topo(b->g, dev, 1, elementwise_policy, b->g);
    double ratio = check_topo(b->g, p, dev, 1, elementwise_policy, b->g);
    const pl_plan_device_stats *st = pl_plan_stats(p, 0);
    printf("%s: %zu tensors (%zu in place), arena %zu, lower bound %zu, naive "
           "%zu bytes: arena / lower bound %.4f\n",
           label, st->n_tensors, st->n_inplace, st->arena_bytes,
           st->lower_bound_bytes, st->naive_bytes, ratio);
    CHECK(ratio <= 1.05);
    pl_plan_destroy(p);
    free(dev);
    pl_graph_destroy(b->g);
}

static char *dup_name(const char *s)
{
    char *d = strdup(s);
    CHECK(d != NULL);
    return d;
}

/* resnet18 as exported to ONNX (batch norm folded into the convolutions). */
static void case_resnet18_shape(void)
{
    net b = {0};
    CHECK_OK(pl_graph_create(&b.g));
    pl_tid x;
    CHECK_OK(pl_graph_tensor_get_or_add(b.g, "input", &x));
    int64_t in_dims[4] = {1, 3, 224, 224};
    CHECK_OK(pl_graph_set_type(b.g, x, PL_DTYPE_F32, 4, in_dims, NULL));
    char *cur = dup_name(net_op(&b, "Conv", "input", 4, I64(1), I64(64), I64(112), I64(112)));
    char *t = dup_name(net_op(&b, "Relu", cur, 4, I64(1), I64(64), I64(112), I64(112)));
    free(cur);
    cur = dup_name(net_op(&b, "MaxPool", t, 4, I64(1), I64(64), I64(56), I64(56)));
    free(t);
    int64_t ch = 64, hw = 56;
    static const int64_t stages[4][2] = {{64, 56}, {128, 28}, {256, 14}, {512, 7}};
    for (int s = 0; s < 4; s++)
        for (int blk = 0; blk < 2; blk++) {
            int64_t oc = stages[s][0], ohw = stages[s][1];
            char *c1 = dup_name(net_op(&b, "Conv", cur, 4, I64(1), oc, ohw, ohw));
            char *r1 = dup_name(net_op(&b, "Relu", c1, 4, I64(1), oc, ohw, ohw));
            char *c2 = dup_name(net_op(&b, "Conv", r1, 4, I64(1), oc, ohw, ohw));
            char *skip = dup_name(cur);
            if (oc != ch || ohw != hw) {
                free(skip);
                skip = dup_name(net_op(&b, "Conv", cur, 4, I64(1), oc, ohw, ohw));
            }
            char ins[80];
            snprintf(ins, sizeof ins, "%s %s", c2, skip);
            char *sum = dup_name(net_op(&b, "Add", ins, 4, I64(1), oc, ohw, ohw));
            free(cur);
            cur = dup_name(net_op(&b, "Relu", sum, 4, I64(1), oc, ohw, ohw));
            free(c1);
            free(r1);
            free(c2);
            free(skip);
            free(sum);
            ch = oc;
            hw = ohw;
        }
    char *pool = dup_name(net_op(&b, "GlobalAveragePool", cur, 4, I64(1), I64(512), I64(1), I64(1)));
    char *flat = dup_name(net_op(&b, "Flatten", pool, 2, I64(1), I64(512)));
    char *logits = dup_name(net_op(&b, "Gemm", flat, 2, I64(1), I64(1000)));
    net_finish(&b, "input", logits, "resnet18 shape");
    free(cur);
    free(pool);
    free(flat);
    free(logits);
}

/* mobilenet_v2: inverted residual blocks with ReLU6 (Clip). */
static void case_mobilenet_v2_shape(void)
{
    net b = {0};
    CHECK_OK(pl_graph_create(&b.g));
    pl_tid x;
    CHECK_OK(pl_graph_tensor_get_or_add(b.g, "input", &x));
    int64_t in_dims[4] = {1, 3, 224, 224};
    CHECK_OK(pl_graph_set_type(b.g, x, PL_DTYPE_F32, 4, in_dims, NULL));
    char *c = dup_name(net_op(&b, "Conv", "input", 4, I64(1), I64(32), I64(112), I64(112)));
    char *cur = dup_name(net_op(&b, "Clip", c, 4, I64(1), I64(32), I64(112), I64(112)));
    free(c);
    int64_t ch = 32, hw = 112;
    static const int64_t cfg[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2},
                                      {6, 64, 4, 2}, {6, 96, 3, 1}, {6, 160, 3, 2},
                                      {6, 320, 1, 1}};
    for (int s = 0; s < 7; s++)
        for (int64_t i = 0; i < cfg[s][2]; i++) {
            int64_t stride = i == 0 ? cfg[s][3] : 1, oc = cfg[s][1];
            int64_t hidden = ch * cfg[s][0], ohw = hw / stride;
            char *h = dup_name(cur);
            if (cfg[s][0] != 1) {
                char *e = dup_name(net_op(&b, "Conv", cur, 4, I64(1), hidden, hw, hw));
                free(h);
                h = dup_name(net_op(&b, "Clip", e, 4, I64(1), hidden, hw, hw));
                free(e);
            }
            char *dw = dup_name(net_op(&b, "Conv", h, 4, I64(1), hidden, ohw, ohw));
            char *dr = dup_name(net_op(&b, "Clip", dw, 4, I64(1), hidden, ohw, ohw));
            char *pr = dup_name(net_op(&b, "Conv", dr, 4, I64(1), oc, ohw, ohw));
            char *next;
            if (stride == 1 && oc == ch) {
                char ins[80];
                snprintf(ins, sizeof ins, "%s %s", pr, cur);
                next = dup_name(net_op(&b, "Add", ins, 4, I64(1), oc, ohw, ohw));
            } else {
                next = dup_name(pr);
            }
            free(cur);
            cur = next;
            free(h);
            free(dw);
            free(dr);
            free(pr);
            ch = oc;
            hw = ohw;
        }
    char *c2 = dup_name(net_op(&b, "Conv", cur, 4, I64(1), I64(1280), I64(7), I64(7)));
    char *r2 = dup_name(net_op(&b, "Clip", c2, 4, I64(1), I64(1280), I64(7), I64(7)));
    char *pool = dup_name(net_op(&b, "GlobalAveragePool", r2, 4, I64(1), I64(1280), I64(1), I64(1)));
    char *flat = dup_name(net_op(&b, "Flatten", pool, 2, I64(1), I64(1280)));
    char *logits = dup_name(net_op(&b, "Gemm", flat, 2, I64(1), I64(1000)));
    net_finish(&b, "input", logits, "mobilenet_v2 shape");
    free(cur);
    free(c2);
    free(r2);
    free(pool);
    free(flat);
    free(logits);
}

/* bert_tiny (2 layers, hidden 128, 2 heads, intermediate 512), sequence
 * 128, as exported to ONNX: LayerNorm as one op, GELU through Erf. */
static void case_bert_tiny_shape(void)
{
    net b = {0};
    CHECK_OK(pl_graph_create(&b.g));
    const int64_t S = 128, H = 128, NH = 2, D = 64, FF = 512;
    pl_tid ids, mask;
    CHECK_OK(pl_graph_tensor_get_or_add(b.g, "input_ids", &ids));
    CHECK_OK(pl_graph_tensor_get_or_add(b.g, "attention_mask", &mask));
    int64_t in_dims[2] = {1, S};
    CHECK_OK(pl_graph_set_type(b.g, ids, PL_DTYPE_I64, 2, in_dims, NULL));
    CHECK_OK(pl_graph_set_type(b.g, mask, PL_DTYPE_I64, 2, in_dims, NULL));
    CHECK_OK(pl_graph_add_input(b.g, mask));
    char ins[96];
#define OP(var, op, in, ...) char *var = dup_name(net_op(&b, op, in, __VA_ARGS__))
#define OP2(var, op, a, c, ...)                                   \
    snprintf(ins, sizeof ins, "%s %s", a, c);                     \
    char *var = dup_name(net_op(&b, op, ins, __VA_ARGS__))
    /* The mask, computed once and read by every layer. */
    OP(m1, "Unsqueeze", "attention_mask", 4, I64(1), I64(1), I64(1), S);
    OP(m2, "Cast", m1, 4, I64(1), I64(1), I64(1), S);
    OP(m3, "Sub", m2, 4, I64(1), I64(1), I64(1), S);
    OP(mask_add, "Mul", m3, 4, I64(1), I64(1), I64(1), S);
    OP(we, "Gather", "input_ids", 3, I64(1), S, H);
    OP(pe, "Add", we, 3, I64(1), S, H);
    OP(te, "Add", pe, 3, I64(1), S, H);
    char *cur = dup_name(net_op(&b, "LayerNormalization", te, 3, I64(1), S, H));
    char *garbage[64];
    size_t n_garbage = 0;
#define KEEP(p) (garbage[n_garbage++] = (p))
    KEEP(m1), KEEP(m2), KEEP(m3), KEEP(we), KEEP(pe), KEEP(te);
    for (int layer = 0; layer < 2; layer++) {
        OP(q0, "MatMul", cur, 3, I64(1), S, H);
        OP(q1, "Add", q0, 3, I64(1), S, H);
        OP(q2, "Reshape", q1, 4, I64(1), S, NH, D);
        OP(q, "Transpose", q2, 4, I64(1), NH, S, D);
        OP(k0, "MatMul", cur, 3, I64(1), S, H);
        OP(k1, "Add", k0, 3, I64(1), S, H);
        OP(k2, "Reshape", k1, 4, I64(1), S, NH, D);
        OP(k, "Transpose", k2, 4, I64(1), NH, D, S);
        OP(v0, "MatMul", cur, 3, I64(1), S, H);
        OP(v1, "Add", v0, 3, I64(1), S, H);
        OP(v2, "Reshape", v1, 4, I64(1), S, NH, D);
        OP(v, "Transpose", v2, 4, I64(1), NH, S, D);
        OP2(sc, "MatMul", q, k, 4, I64(1), NH, S, S);
        OP(sd, "Div", sc, 4, I64(1), NH, S, S);
        OP2(sm, "Add", sd, mask_add, 4, I64(1), NH, S, S);
        OP(pr, "Softmax", sm, 4, I64(1), NH, S, S);
        OP2(ctx, "MatMul", pr, v, 4, I64(1), NH, S, D);
        OP(ct, "Transpose", ctx, 4, I64(1), S, NH, D);
        OP(cr, "Reshape", ct, 3, I64(1), S, H);
        OP(o0, "MatMul", cr, 3, I64(1), S, H);
        OP(o1, "Add", o0, 3, I64(1), S, H);
        OP2(r1, "Add", o1, cur, 3, I64(1), S, H);
        OP(ln1, "LayerNormalization", r1, 3, I64(1), S, H);
        OP(f0, "MatMul", ln1, 3, I64(1), S, FF);
        OP(f1, "Add", f0, 3, I64(1), S, FF);
        OP(g0, "Div", f1, 3, I64(1), S, FF);
        OP(g1, "Erf", g0, 3, I64(1), S, FF);
        OP(g2, "Add", g1, 3, I64(1), S, FF);
        OP2(g3, "Mul", f1, g2, 3, I64(1), S, FF);
        OP(g4, "Mul", g3, 3, I64(1), S, FF);
        OP(f2, "MatMul", g4, 3, I64(1), S, H);
        OP(f3, "Add", f2, 3, I64(1), S, H);
        OP2(r2, "Add", f3, ln1, 3, I64(1), S, H);
        free(cur);
        cur = dup_name(net_op(&b, "LayerNormalization", r2, 3, I64(1), S, H));
        char *all[] = {q0, q1, q2, q, k0, k1, k2, k, v0, v1, v2, v, sc, sd, sm,
                       pr, ctx, ct, cr, o0, o1, r1, ln1, f0, f1, g0, g1, g2, g3,
                       g4, f2, f3, r2};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            free(all[i]);
    }
    OP(pool, "Gather", cur, 2, I64(1), H);
    OP(pooled0, "Gemm", pool, 2, I64(1), H);
    OP(pooled, "Tanh", pooled0, 2, I64(1), H);
    CHECK_OK(pl_graph_add_output(b.g, tid(b.g, cur)));
    net_finish(&b, "input_ids", pooled, "bert_tiny shape");
    free(pool);
    free(pooled0);
    free(pooled);
    free(cur);
    free(mask_add);
    for (size_t i = 0; i < n_garbage; i++)
        free(garbage[i]);
#undef OP
#undef OP2
#undef KEEP
}

/* ---- failing allocations ------------------------------------------------ */

/* Fails the Nth allocation of planning for every N until planning succeeds;
 * each failure must be an out-of-memory status with nothing leaked (the
 * sanitizer build checks the leaks) and the final plan the same as one made
 * without failures. */
static void case_alloc_failure(void)
{
    rng_state = 42;
    pl_graph *g;
    CHECK_OK(pl_graph_create(&g));
    const char *names[] = {"x", "t1", "h", "r", "r2", "s", "o", "z", "w"};
    for (size_t i = 0; i < 9; i++)
        f32(g, names[i], 1000 + 64 * (int64_t)i);
    f32(g, "h", 1064);
    f32(g, "r2", 1000 + 64 * 3);
    f32(g, "s", 1000 + 64 * 3);
    add(g, "conv1", "Conv", "x", "t1");
    add(g, "relu1", "Relu", "t1", "h");
    add(g, "conv2", "Conv", "h", "r");
    add(g, "relu2", "Relu", "r", "r2");
    add(g, "add", "Add", "r2 h", "s w");
    add(g, "relu3", "Relu", "s", "o");
    add(g, "head", "Conv", "o w", "z");
    CHECK_OK(pl_graph_add_input(g, tid(g, "x")));
    CHECK_OK(pl_graph_add_output(g, tid(g, "z")));
    CHECK_OK(pl_graph_validate(g));
    int32_t *dev = devices_all(g, 0);
    dev[tid(g, "w")] = 1;
    pl_plan_options o = {.graph = g, .order = pl_graph_topo_order(g),
                         .n_order = pl_graph_node_count(g), .tensor_device = dev,
                         .n_devices = 2, .inplace = elementwise_policy, .user = g};
    pl_plan *ref = NULL;
    CHECK_OK(pl_plan_build(&o, &ref));
    long failures = 0;
    for (long n = 1;; n++) {
        CHECK(n < 100000);
        pl_plan *p = (pl_plan *)&o;
        pl_sweep_fail_at(n);
        pl_status *st = pl_plan_build(&o, &p);
        pl_sweep_fail_at(0);
        if (st == NULL) {
            CHECK(p != NULL);
            CHECK(pl_plan_entry_count(p) == pl_plan_entry_count(ref));
            for (size_t i = 0; i < pl_plan_entry_count(p); i++)
                CHECK(memcmp(pl_plan_entry_at(p, i), pl_plan_entry_at(ref, i),
                             sizeof(pl_plan_entry)) == 0);
            for (int32_t d = 0; d < 2; d++)
                CHECK(memcmp(pl_plan_stats(p, d), pl_plan_stats(ref, d),
                             sizeof(pl_plan_device_stats)) == 0);
            pl_plan_destroy(p);
            break;
        }
        CHECK(pl_status_code(st) == PL_CODE_OUT_OF_MEMORY);
        CHECK(p == NULL);
        pl_status_free(st);
        failures++;
    }
    CHECK(failures > 5);
    printf("alloc failure sweep: %ld failing allocations, each an out-of-memory "
           "status\n", failures);
    pl_plan_destroy(ref);
    free(dev);
    pl_graph_destroy(g);
}

/* ---- a large graph ------------------------------------------------------ */

/* 200,000 nodes with skips: planning stays well below quadratic. */
static void case_large(void)
{
    pl_graph *g;
    CHECK_OK(pl_graph_create(&g));
    const size_t n = 200000;
    char in[2][32], out[32], name[32];
    f32(g, "x", 4096);
    CHECK_OK(pl_graph_add_input(g, tid(g, "x")));
    for (size_t i = 0; i < n; i++) {
        snprintf(out, sizeof out, "t%zu", i);
        f32(g, out, 1024 * (1 + (int64_t)(i % 7)));
        if (i == 0)
            snprintf(in[0], sizeof in[0], "x");
        else
            snprintf(in[0], sizeof in[0], "t%zu", i - 1);
        snprintf(in[1], sizeof in[1], "t%zu", i >= 5 ? i - 5 : 0);
        const char *ins[2] = {in[0], in[1]};
        const char *outs[1] = {out};
        snprintf(name, sizeof name, "n%zu", i);
        CHECK_OK(pl_graph_add_node(g, name, "Add", "", ins, i >= 5 ? 2 : 1, outs,
                                   1, NULL));
    }
    snprintf(out, sizeof out, "t%zu", n - 1);
    CHECK_OK(pl_graph_add_output(g, tid(g, out)));
    CHECK_OK(pl_graph_validate(g));
    int32_t *dev = devices_all(g, 0);
    pl_plan *p = plan_topo(g, dev, 1, elementwise_policy, g);
    const pl_plan_device_stats *st = pl_plan_stats(p, 0);
    printf("large: %zu tensors, arena %zu, lower bound %zu: %.4f\n", st->n_tensors,
           st->arena_bytes, st->lower_bound_bytes,
           (double)st->arena_bytes / (double)st->lower_bound_bytes);
    CHECK(st->n_tensors == n - 1);
    CHECK(st->arena_bytes >= st->lower_bound_bytes);
    pl_plan_destroy(p);
    free(dev);
    pl_graph_destroy(g);
}

/* ---- the interval planner -------------------------------------------- */

static pl_plan *plan_intervals(const pl_plan_interval *iv, size_t n, size_t n_steps,
                               int32_t n_devices, pl_plan_accept_fn accept, void *user)
{
    pl_plan_interval_options o = {.intervals = iv, .n_intervals = n, .n_steps = n_steps,
                                  .n_devices = n_devices, .accept = accept, .user = user};
    pl_plan *p = NULL;
    CHECK_OK(pl_plan_build_intervals(&o, &p));
    CHECK(p != NULL);
    return p;
}

static bool refuse_all(void *user, size_t interval, size_t k)
{
    (void)user;
    (void)interval;
    (void)k;
    return false;
}

/* A chain a -> b -> c where each may take its predecessor's block, a value
 * d alive beside them, a candidate that is illegal (d does not die where c
 * is made), and a value on a second device. */
static void case_intervals(void)
{
    static const size_t cand_b[] = {0}, cand_c[] = {3, 1}, cand_e[] = {2};
    const pl_plan_interval iv[] = {
        {.device = 0, .bytes = 1000, .first = 0, .last = 1},                /* a */
        {.device = 0, .bytes = 1000, .first = 1, .last = 2,
         .candidates = cand_b, .n_candidates = 1},                         /* b */
        {.device = 0, .bytes = 1000, .first = 2, .last = 4,
         .candidates = cand_c, .n_candidates = 2},                         /* c */
        {.device = 0, .bytes = 1000, .first = 2, .last = 3},                /* d */
        {.device = 1, .bytes = 1000, .first = 4, .last = 4,
         .candidates = cand_e, .n_candidates = 1},                         /* e */
    };
    pl_plan *p = plan_intervals(iv, 5, 5, 2, NULL, NULL);
    CHECK(pl_plan_entry_count(p) == 5);
    CHECK(pl_plan_shares_with(p, 0) == PL_PLAN_NONE);
    CHECK(pl_plan_shares_with(p, 1) == 0);
    /* d is listed first but dies at 3, not 2: c takes b's block. */
    CHECK(pl_plan_shares_with(p, 2) == 1);
    CHECK(pl_plan_shares_with(p, 3) == PL_PLAN_NONE);
    /* On another device: never in place. */
    CHECK(pl_plan_shares_with(p, 4) == PL_PLAN_NONE);
    CHECK(pl_plan_shares_with(p, 5) == PL_PLAN_NONE);
    const pl_plan_entry *a = pl_plan_entry_at(p, 0), *c = pl_plan_entry_at(p, 2),
                        *d = pl_plan_entry_at(p, 3);
    CHECK(a->tensor == PL_TID_NONE && a->shares_with == PL_TID_NONE);
    CHECK(a->offset == c->offset && a->offset != d->offset);
    CHECK(c->first_step == 2 && c->last_step == 4);
    CHECK(pl_plan_stats(p, 0)->arena_bytes == 2 * 1024);
    CHECK(pl_plan_stats(p, 0)->n_inplace == 2);
    CHECK(pl_plan_stats(p, 1)->arena_bytes == 1024);
    pl_plan_destroy(p);

    /* The caller's refusal holds: every value gets a block of its own; b, c
     * and d are alive together at step 2, so the arena holds three. */
    p = plan_intervals(iv, 5, 5, 2, refuse_all, NULL);
    for (size_t i = 0; i < 5; i++)
        CHECK(pl_plan_shares_with(p, i) == PL_PLAN_NONE);
    CHECK(pl_plan_stats(p, 0)->n_inplace == 0);
    CHECK(pl_plan_stats(p, 0)->arena_bytes == 3 * 1024);
    pl_plan_destroy(p);
}

/* The host blocks of squeezenet_s (bench/zoo) on `order = cpu`, as the
 * planner saw them after in-place sharing: bytes, first step, last step.
 * Largest-first and longest-lived-first orders both left it at 1.129x its
 * lower bound (fire modules' expand branches live across the concat); the
 * planner must stay within issue 15's 1.05x. */
static void case_intervals_squeezenet(void)
{
    static const size_t blocks[][3] = {
        {282752, 0, 1}, {357120, 0, 0}, {67712, 1, 2}, {17920, 1, 1}, {16960, 2, 4},
        {557056, 2, 2}, {67712, 3, 5}, {557056, 3, 3}, {67712, 4, 5}, {128000, 4, 4},
        {135424, 5, 6}, {16960, 6, 8}, {81920, 6, 6}, {67712, 7, 9}, {557056, 7, 7},
        {67712, 8, 9}, {128000, 8, 8}, {135424, 9, 10}, {30976, 10, 11}, {4352, 10, 10},
        {7744, 11, 13}, {131072, 11, 11}, {30976, 12, 14}, {131072, 12, 12}, {30976, 13,
        14}, {299392, 13, 13}, {61952, 14, 15}, {7744, 15, 17}, {131072, 15, 15},
        {30976, 16, 18}, {131072, 16, 16}, {30976, 17, 18}, {299392, 17, 17}, {61952,
        18, 19}, {12800, 19, 20}, {1024, 19, 19}, {2432, 20, 22}, {32768, 20, 20},
        {9600, 21, 23}, {49920, 21, 21}, {9600, 22, 23}, {83584, 22, 22}, {19200, 23,
        24}, {3200, 24, 26}, {37120, 24, 24}, {12800, 25, 27}, {56320, 25, 25}, {12800,
        26, 27}, {101120, 26, 26}, {25600, 27, 28}, {1024, 28, 29}, {32768, 28, 28},
        {64, 29, 30}};
    size_t n = sizeof blocks / sizeof blocks[0];
    pl_plan_interval iv[sizeof blocks / sizeof blocks[0]];
    for (size_t i = 0; i < n; i++)
        iv[i] = (pl_plan_interval){.device = 0, .bytes = blocks[i][0],
                                   .first = (uint32_t)blocks[i][1],
                                   .last = (uint32_t)blocks[i][2]};
    pl_plan *p = plan_intervals(iv, n, 31, 1, NULL, NULL);
    const pl_plan_device_stats *st = pl_plan_stats(p, 0);
    printf("squeezenet_s: arena %zu, lower bound %zu: %.4f\n", st->arena_bytes,
           st->lower_bound_bytes, (double)st->arena_bytes / (double)st->lower_bound_bytes);
    CHECK(st->arena_bytes >= st->lower_bound_bytes);
    CHECK((double)st->arena_bytes <= 1.05 * (double)st->lower_bound_bytes);
    /* No two blocks alive at one step overlap. */
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            const pl_plan_entry *a = pl_plan_entry_at(p, i), *b = pl_plan_entry_at(p, j);
            if (a->first_step <= b->last_step && b->first_step <= a->last_step)
                CHECK(a->offset + blocks[i][0] <= b->offset ||
                      b->offset + blocks[j][0] <= a->offset);
        }
    pl_plan_destroy(p);
}

static void expect_interval_error(const pl_plan_interval *iv, size_t n, size_t n_steps,
                                  int32_t n_devices, const char *needle)
{
    pl_plan_interval_options o = {.intervals = iv, .n_intervals = n, .n_steps = n_steps,
                                  .n_devices = n_devices};
    pl_plan *p = (pl_plan *)&o;  /* must be cleared */
    pl_status *st = pl_plan_build_intervals(&o, &p);
    CHECK(st != NULL);
    CHECK(p == NULL);
    if (pl_status_code(st) != PL_CODE_INVALID_ARGUMENT ||
        strstr(pl_status_message(st), needle) == NULL) {
        fprintf(stderr, "unexpected error %d: %s\n", (int)pl_status_code(st),
                pl_status_message(st));
        exit(1);
    }
    printf("  %s\n", pl_status_message(st));
    pl_status_free(st);
}

static void case_intervals_bad(void)
{
    const pl_plan_interval dev[] = {{.device = 2, .bytes = 8, .first = 0, .last = 0}};
    expect_interval_error(dev, 1, 1, 2, "on device 2");
    const pl_plan_interval span[] = {{.device = 0, .bytes = 8, .first = 1, .last = 0}};
    expect_interval_error(span, 1, 2, 1, "spans steps 1..0");
    const pl_plan_interval beyond[] = {{.device = 0, .bytes = 8, .first = 0, .last = 5}};
    expect_interval_error(beyond, 1, 5, 1, "of 5");
    const pl_plan_interval order[] = {{.device = 0, .bytes = 8, .first = 1, .last = 1},
                                      {.device = 0, .bytes = 8, .first = 0, .last = 1}};
    expect_interval_error(order, 2, 2, 1, "starts before");
    const pl_plan_interval huge[] = {{.device = 0, .bytes = SIZE_MAX - 8, .first = 0,
                                      .last = 0}};
    expect_interval_error(huge, 1, 1, 1, "too large");
    pl_plan_interval_options o = {.n_steps = 1, .n_devices = 1, .alignment = 48};
    pl_plan *p = NULL;
    pl_status *st = pl_plan_build_intervals(&o, &p);
    CHECK(st != NULL && strstr(pl_status_message(st), "power of two") != NULL);
    pl_status_free(st);
    /* No intervals at all is a plan of empty arenas. */
    o.alignment = 0;
    CHECK_OK(pl_plan_build_intervals(&o, &p));
    CHECK(pl_plan_entry_count(p) == 0 && pl_plan_stats(p, 0)->arena_bytes == 0);
    pl_plan_destroy(p);
}

/* Plans the N blocks BLK ({size in UNITs, first step, last step}) over
 * N_STEPS steps on one device: the lower bound is BOUND, the arena meets it,
 * and blocks alive together lie apart. */
/* Plans the N blocks BLK (size in UNITs, first and last step) on one
 * device, QUICK or with the search, checks that no two blocks alive at
 * once overlap and that the lower bound is BOUND, and returns the arena. */
static size_t plan_blocks(const char *label, const uint32_t (*blk)[3], size_t n, size_t unit,
                          size_t n_steps, size_t bound, bool quick)
{
    pl_plan_interval *iv = malloc(n * sizeof *iv);
    CHECK(iv != NULL);
    for (size_t i = 0; i < n; i++)
        iv[i] = (pl_plan_interval){.device = 0, .bytes = (size_t)blk[i][0] * unit,
                                   .first = blk[i][1], .last = blk[i][2]};
    pl_plan_interval_options o = {.intervals = iv, .n_intervals = n, .n_steps = n_steps,
                                  .n_devices = 1, .quick = quick};
    pl_plan *p = NULL;
    CHECK_OK(pl_plan_build_intervals(&o, &p));
    CHECK(p != NULL);
    const pl_plan_device_stats *st = pl_plan_stats(p, 0);
    size_t arena = st->arena_bytes;
    printf("%s%s: arena %zu, lower bound %zu\n", label, quick ? " (quick)" : "", arena,
           st->lower_bound_bytes);
    CHECK(st->lower_bound_bytes == bound);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            if (iv[i].last < iv[j].first || iv[j].last < iv[i].first)
                continue;
            size_t a = pl_plan_entry_at(p, i)->offset, b = pl_plan_entry_at(p, j)->offset;
            CHECK(a + iv[i].bytes <= b || b + iv[j].bytes <= a);
        }
    pl_plan_destroy(p);
    free(iv);
    return arena;
}

static void plan_at_bound(const char *label, const uint32_t (*blk)[3], size_t n, size_t unit,
                          size_t n_steps, size_t bound)
{
    CHECK(plan_blocks(label, blk, n, unit, n_steps, bound, false) == bound);
}

/* The blocks of DeBERTa-v2's encoder as the cpu module runs it (the
 * transformers library's export, hidden 256, sequence 64: 64 KiB
 * activations and 128 KiB attention scores). Five units are alive at the
 * worst step; every deterministic order (by size, life, area, first use,
 * pressure) packs them into six, so it takes the randomized tie-breaking
 * of plan_assign_device to reach the bound. */
static void case_intervals_ties(void)
{
    static const uint32_t blk[][3] = {
        {1, 0, 2},   {1, 2, 33},  {1, 4, 7},   {1, 5, 8},   {1, 6, 9},   {1, 7, 13},  {1, 8, 14},
        {1, 9, 15},  {1, 13, 21}, {1, 14, 19}, {1, 15, 27}, {1, 19, 21}, {1, 21, 23}, {1, 23, 25},
        {1, 25, 27}, {1, 27, 29}, {1, 29, 31}, {1, 31, 32}, {1, 32, 34}, {1, 34, 44}, {2, 35, 36},
        {2, 36, 42}, {2, 37, 40}, {1, 42, 43}, {1, 43, 45}, {1, 45, 75}, {1, 46, 49}, {1, 47, 50},
        {1, 48, 51}, {1, 49, 55}, {1, 50, 56}, {1, 51, 57}, {1, 55, 63}, {1, 56, 61}, {1, 57, 69},
        {1, 61, 63}, {1, 63, 65}, {1, 65, 67}, {1, 67, 69}, {1, 69, 71}, {1, 71, 73}, {1, 73, 74},
        {1, 74, 76}, {1, 76, 86}, {2, 77, 78}, {2, 78, 84}, {2, 79, 82}, {1, 84, 85}, {1, 85, 87}};
    plan_at_bound("ties", blk, sizeof blk / sizeof blk[0], (size_t)1 << 16, 88, (size_t)5 << 16);
    /* A one-shot plan (constant folding's) stops at the greedy orders: a
     * valid plan one unit above the bound, which the search would remove. */
    CHECK(plan_blocks("ties", blk, sizeof blk / sizeof blk[0], (size_t)1 << 16, 88,
                      (size_t)5 << 16, true) == (size_t)6 << 16);
}

/* tv_resnext50's host blocks on cpu (sizes in 64-byte units, first and
 * last step): the bound is reachable, but only 9 of 200 of the random
 * orders by pressure reach it (the others 1.07-1.31x); the planner stopped
 * after 32 tries without a gain at 1.067x. */
static void case_intervals_resnext(void)
{
    static const uint32_t blk[][3] = {
        {9216, 0, 1}, {9900, 0, 0}, {2304, 1, 3}, {304, 1, 1}, {4608, 2, 4}, {1280, 2, 2},
        {9216, 3, 6}, {1280, 3, 3}, {4608, 4, 5}, {11808, 4, 4}, {9216, 5, 11}, {1280, 5, 5},
        {4608, 8, 9}, {1280, 8, 8}, {4608, 9, 10}, {11808, 9, 9}, {9216, 10, 16}, {1280, 10, 10},
        {4608, 13, 14}, {1280, 13, 13}, {4608, 14, 15}, {11808, 14, 14}, {9216, 15, 19},
        {1280, 15, 15}, {9216, 18, 20}, {1280, 18, 18}, {4608, 19, 22}, {6912, 19, 19},
        {2304, 20, 21}, {3600, 20, 20}, {4608, 21, 27}, {2304, 21, 21}, {2304, 24, 25},
        {2304, 24, 24}, {2304, 25, 26}, {3600, 25, 25}, {4608, 26, 32}, {2304, 26, 26},
        {2304, 29, 30}, {2304, 29, 29}, {2304, 30, 31}, {3600, 30, 30}, {4608, 31, 37},
        {2304, 31, 31}, {2304, 34, 35}, {2304, 34, 34}, {2304, 35, 36}, {3600, 35, 35},
        {4608, 36, 40}, {2304, 36, 36}, {4608, 39, 41}, {2304, 39, 39}, {2304, 40, 43},
        {5184, 40, 40}, {1152, 41, 42}, {1296, 41, 41}, {2304, 42, 48}, {2880, 42, 42},
        {1152, 45, 46}, {1728, 45, 45}, {1152, 46, 47}, {1296, 46, 46}, {2304, 47, 53},
        {2880, 47, 47}, {1152, 50, 51}, {1728, 50, 50}, {1152, 51, 52}, {1296, 51, 51},
        {2304, 52, 58}, {2880, 52, 52}, {1152, 55, 56}, {1728, 55, 55}, {1152, 56, 57},
        {1296, 56, 56}, {2304, 57, 63}, {2880, 57, 57}, {1152, 60, 61}, {1728, 60, 60},
        {1152, 61, 62}, {1296, 61, 61}, {2304, 62, 68}, {2880, 62, 62}, {1152, 65, 66},
        {1728, 65, 65}, {1152, 66, 67}, {1296, 66, 66}, {2304, 67, 71}, {2880, 67, 67},
        {2304, 70, 72}, {2880, 70, 70}, {1152, 71, 74}, {2496, 71, 71}, {576, 72, 73},
        {552, 72, 72}, {1152, 73, 79}, {1344, 73, 73}, {576, 76, 77}, {768, 76, 76},
        {576, 77, 78}, {552, 77, 77}, {1152, 78, 84}, {1344, 78, 78}, {576, 81, 82},
        {768, 81, 81}, {576, 82, 83}, {552, 82, 82}, {1152, 83, 86}, {1344, 83, 83},
        {128, 86, 88}};
    plan_at_bound("resnext", blk, sizeof blk / sizeof blk[0], 64, 89, 1935360);
}

/* clip_text's host blocks on cpu (the transformers library's CLIP text
 * encoder, sequence 77: 77x64 activations, 4x77x77 attention scores, 77x128
 * MLP values; sizes in 64-byte units). The bound is reachable, but only
 * with the 1483-unit scores off the 1232-unit grid the activations make:
 * every greedy order and 400 random ones stopped at 1.15x; the search
 * reaches it. */
static void case_intervals_search(void)
{
    static const uint32_t blk[][3] = {
        {1232, 0, 119}, {1232, 2, 5}, {1232, 3, 6}, {1232, 4, 7}, {1232, 5, 8}, {1232, 6, 15},
        {1232, 7, 13}, {1232, 8, 14}, {1232, 13, 19}, {1232, 14, 25}, {1232, 15, 20},
        {1232, 19, 20}, {1483, 20, 25}, {1232, 25, 27}, {1232, 27, 29}, {1232, 29, 30},
        {1232, 30, 31}, {1232, 32, 33}, {2464, 33, 34}, {2464, 34, 38}, {2464, 35, 37},
        {1232, 38, 39}, {1232, 39, 40}, {1232, 41, 44}, {1232, 42, 45}, {1232, 43, 46},
        {1232, 44, 47}, {1232, 45, 54}, {1232, 46, 52}, {1232, 47, 53}, {1232, 52, 58},
        {1232, 53, 64}, {1232, 54, 59}, {1232, 58, 59}, {1483, 59, 64}, {1232, 64, 66},
        {1232, 66, 68}, {1232, 68, 69}, {1232, 69, 70}, {1232, 71, 72}, {2464, 72, 73},
        {2464, 73, 77}, {2464, 74, 76}, {1232, 77, 78}, {1232, 78, 79}, {1232, 80, 83},
        {1232, 81, 84}, {1232, 82, 85}, {1232, 83, 86}, {1232, 84, 93}, {1232, 85, 91},
        {1232, 86, 92}, {1232, 91, 97}, {1232, 92, 103}, {1232, 93, 98}, {1232, 97, 98},
        {1483, 98, 103}, {1232, 103, 105}, {1232, 105, 107}, {1232, 107, 108}, {1232, 108, 109},
        {1232, 110, 111}, {2464, 111, 112}, {2464, 112, 116}, {2464, 113, 115}, {1232, 116, 117},
        {1232, 117, 118}
    };
    plan_at_bound("clip_text", blk, sizeof blk / sizeof blk[0], 64, 120, (size_t)6411 * 64);
}

/* RT-DETR-L's host blocks on cpu (ultralytics' export at 320x320; the
 * list in rtdetr_l_blocks.txt): 621 blocks over 786 steps, which every
 * greedy order and the random ones leave at 1.12x the bound; the search
 * reaches it, given about three moves a block (within 4M visits it was not
 * even tried). */
static void case_intervals_rtdetr(void)
{
    FILE *f = fopen(PLAN_TEST_DATA_DIR "/rtdetr_l_blocks.txt", "r");
    CHECK(f != NULL);
    uint32_t(*blk)[3] = malloc(1024 * sizeof *blk);
    CHECK(blk != NULL);
    size_t n = 0, steps = 0, bound = 0;
    char line[128];
    while (fgets(line, sizeof line, f) != NULL) {
        unsigned a, b, c;
        if (line[0] == '#')
            continue;
        if (sscanf(line, "steps %u", &a) == 1)
            steps = a;
        else if (sscanf(line, "%u %u %u", &a, &b, &c) == 3 && n < 1024)
            blk[n][0] = a, blk[n][1] = b, blk[n][2] = c, n++;
    }
    fclose(f);
    CHECK(n == 621 && steps == 786);
    size_t *live = calloc(steps, sizeof *live);
    CHECK(live != NULL);
    for (size_t i = 0; i < n; i++)
        for (uint32_t t = blk[i][1]; t <= blk[i][2]; t++)
            live[t] += (size_t)blk[i][0] * 64;
    for (size_t t = 0; t < steps; t++)
        bound = live[t] > bound ? live[t] : bound;
    CHECK(bound == 18552000);
    plan_at_bound("rtdetr_l", (const uint32_t(*)[3])blk, n, 64, steps, bound);
    free(live);
    free(blk);
}

/* Random interval sets: whatever the greedy orders or the search choose,
 * blocks alive together never overlap, and the arena is at least the bound. */
static void case_intervals_random(void)
{
    uint64_t rng = 42;
    size_t at_bound = 0, runs = 300;
    for (size_t r = 0; r < runs; r++) {
        uint32_t blk[96][3];
        size_t n = 8 + (size_t)(r % 89), steps = 0;
        uint32_t first = 0;
        for (size_t i = 0; i < n; i++) {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            first += (uint32_t)(rng % 3 == 0);
            uint32_t len = (uint32_t)((rng >> 8) % (rng % 7 == 0 ? 40 : 6));
            uint32_t size = (uint32_t)((rng >> 20) % 5) + 1;
            blk[i][0] = size * (r % 2 ? 4 : 1) + (uint32_t)((rng >> 30) % 3 == 0);
            blk[i][1] = first;
            blk[i][2] = first + len;
            if (blk[i][2] + 1 > steps)
                steps = blk[i][2] + 1;
        }
        size_t live[256] = {0}, bound = 0;
        for (size_t i = 0; i < n; i++)
            for (uint32_t t = blk[i][1]; t <= blk[i][2]; t++)
                live[t] += (size_t)blk[i][0] * 64;
        for (size_t t = 0; t < steps; t++)
            bound = live[t] > bound ? live[t] : bound;
        char label[32];
        snprintf(label, sizeof label, "random %zu", r);
        size_t arena = plan_blocks(label, (const uint32_t(*)[3])blk, n, 64, steps, bound, false);
        CHECK(arena >= bound);
        at_bound += arena == bound;
    }
    printf("%zu of %zu random plans at the bound\n", at_bound, runs);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } cases[] = {
        {"chain_inplace", case_chain_inplace},
        {"diamond", case_diamond},
        {"residual", case_residual},
        {"two_devices", case_two_devices},
        {"output_excluded", case_output_excluded},
        {"constant_excluded", case_constant_excluded},
        {"external", case_external},
        {"unknown_size", case_unknown_size},
        {"bad_options", case_bad_options},
        {"random_dags", case_random_dags},
        {"resnet18_shape", case_resnet18_shape},
        {"mobilenet_v2_shape", case_mobilenet_v2_shape},
        {"bert_tiny_shape", case_bert_tiny_shape},
        {"alloc_failure", case_alloc_failure},
        {"large", case_large},
        {"intervals", case_intervals},
        {"intervals_bad", case_intervals_bad},
        {"intervals_squeezenet", case_intervals_squeezenet},
        {"intervals_ties", case_intervals_ties},
        {"intervals_resnext", case_intervals_resnext},
        {"intervals_search", case_intervals_search},
        {"intervals_rtdetr", case_intervals_rtdetr},
        {"intervals_random", case_intervals_random},
    };
    if (argc < 2) {
        fprintf(stderr, "usage: %s CASE\n", argv[0]);
        return 2;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (strcmp(argv[1], cases[i].name) == 0) {
            cases[i].fn();
            return 0;
        }
    fprintf(stderr, "unknown case '%s'\n", argv[1]);
    return 2;
}
