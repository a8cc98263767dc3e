/* partition.c — who runs what (partition.h has the rules).
 *
 * Verdicts are asked once per (node, backend) and kept: symbolic backends
 * answer for the whole graph up front, imperative ones lazily, when the
 * assignment walk reaches them (their kernels are kept for the session).
 * Clustering walks the nodes in topological order and lets a node join a
 * cluster of its backend that feeds it, unless another of its inputs
 * depends on that cluster through a node outside it — which is exactly the
 * case where contracting the cluster would create a cycle. Each node carries
 * the set of clusters it depends on, as a bitset, and each cluster the union
 * of its members' sets; "depends on cluster c" is the closure of a node's set
 * over those unions, taken when asked, because a cluster gains dependencies
 * as members join it after its readers were seen. Epilogue fusion runs on
 * the final assignment of imperative nodes: it walks chains of single
 * consumers and asks the head's module (kernel_fuse) to take each in turn. */
#include "partition.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <plinth/cost.h>

#include "alloc.h"
#include "status.h"

enum { PL_V_UNKNOWN = 0, PL_V_YES = 1, PL_V_NO = 2 };

struct pl_partition {
    const pl_graph *g;
    const pl_graph_view *view;
    pl_part_backend *backends;
    size_t nb;
    size_t nn;
    const pl_nid *topo;
    uint8_t *verdict;        /* nn * nb */
    char **reason;           /* nn * nb */
    pl_kernel **kernel;      /* nn * nb */
    bool *query;             /* nn * nb: kernel made to weigh the node (PL_NODE_QUERY) */
    size_t *workspace;       /* nn * nb */
    bool *excluded;          /* nn * nb */
    int32_t *pin;            /* nn */
    int min_nodes;
    bool by_cost;            /* choose = cost */
    double threads;          /* the runtime's, >= 1: compute and reorders divide by it */
    double spin_us;          /* how long an idle pool or team spins (backend.ini spin_us) */
    double step_us;          /* one kernel step dispatched (PL_COST_STEP_US, or inline) */
    double plan_runs;        /* runs the plan is expected to serve; 0: many */
    size_t *idx;             /* nn: scratch, view indices for estimate_cost */
    int32_t *assign;         /* nn */
    int32_t *cluster;        /* nn */
    pl_part_cluster *clusters;
    size_t n_clusters;
    uint32_t *pos;           /* nn: node -> topological position */
    uint64_t *deps;          /* nn * words: the clusters a node's inputs come from */
    uint64_t *cdeps;         /* nn * words: per cluster, its members' deps */
    uint64_t *reach;         /* words: scratch, pl_part_reaches */
    size_t words;
    pl_nid *fused_into;      /* nn: the head whose kernel runs the node */
    pl_nid *fused_next;      /* nn: the next node of the node's chain */
    pl_nid *offered_to;      /* nn: the head whose kernel it was offered to */
    int32_t *cluster_alt;    /* nn: scratch, pl_part_weigh */
    pl_nid *scratch;         /* nn: scratch, pl_part_weigh */
};

static pl_status *pl_part_oom(void)
{
    return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory partitioning the graph");
}

void pl_partition_describe_tensor(const pl_graph *g, pl_tid t, pl_tensor *out)
{
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    out->device.device_type = PL_DEVICE_CPU;
    if (t == PL_TID_NONE) {
        out->ndim = -1;
        return;
    }
    const pl_graph_tensor *gt = pl_graph_get_tensor(g, t);
    out->ndim = gt->ndim;
    out->dtype = gt->dtype;
    out->shape = gt->dims;
}

/* ---- verdicts ------------------------------------------------------------ */

typedef struct pl_part_sink {
    pl_partition *p;
    size_t b;
    bool oom;
} pl_part_sink;

static void pl_part_sink_fn(void *user, size_t node_index, int supported,
                            const char *reason)
{
    pl_part_sink *s = user;
    pl_partition *p = s->p;
    pl_nid n = pl_graph_view_node_id(p->view, node_index);
    if (n == PL_NID_NONE)
        return;
    size_t k = (size_t)n * p->nb + s->b;
    p->verdict[k] = supported ? PL_V_YES : PL_V_NO;
    pl_free(p->reason[k]);
    p->reason[k] = NULL;
    if (!supported) {
        p->reason[k] = pl_xstrdup(reason && reason[0] ? reason : "refused (no reason given)");
        if (p->reason[k] == NULL)
            s->oom = true;
    }
}

static pl_status *pl_part_set_reason(pl_partition *p, size_t k, const char *fmt,
                                     const char *arg)
{
    char buf[1024];
    snprintf(buf, sizeof buf, fmt, arg);
    pl_free(p->reason[k]);
    p->reason[k] = pl_xstrdup(buf);
    return p->reason[k] ? NULL : pl_part_oom();
}

/* The first dtype of node N that module M, built against an SDK before
 * ABI 1.11, does not know (its inline pl_dtype_size answers 0 for i16,
 * u16, u32 and u64), or NULL: such a node is not offered to it. */
static const char *pl_part_unknown_dtype(const pl_partition *p, pl_nid n, const pl_module *m)
{
    if (m->api.header.abi_major != 1 || m->api.header.abi_minor >= 11)
        return NULL;
    const pl_graph_node *node = pl_graph_get_node(p->g, n);
    for (size_t i = 0; i < node->n_inputs + node->n_outputs; i++) {
        pl_tid t = i < node->n_inputs ? node->inputs[i] : node->outputs[i - node->n_inputs];
        if (t == PL_TID_NONE)
            continue;
        pl_dtype dt = pl_graph_get_tensor(p->g, t)->dtype;
        if ((dt.code == PL_TYPE_INT || dt.code == PL_TYPE_UINT) && dt.lanes == 1 &&
            (dt.bits == 16 || (dt.code == PL_TYPE_UINT && dt.bits >= 32)))
            return pl_dtype_name(dt);
    }
    return NULL;
}

/* Refuses node N to backend B, built before ABI 1.11, when it has a dtype
 * that SDK did not know. True when it did. */
static bool pl_part_refuse_unknown_dtype(pl_partition *p, pl_nid n, size_t b, pl_status **st)
{
    const pl_module *m = p->backends[b].module;
    const char *dt = pl_part_unknown_dtype(p, n, m);
    *st = NULL;
    if (dt == NULL)
        return false;
    size_t k = (size_t)n * p->nb + b;
    p->verdict[k] = PL_V_NO;
    char buf[160];
    snprintf(buf, sizeof buf, "a %s tensor, a dtype of ABI 1.11; the module speaks ABI 1.%u",
             dt, (unsigned)m->api.header.abi_minor);
    *st = pl_part_set_reason(p, k, "%s", buf);
    return true;
}

static pl_status *pl_part_ask_symbolic(pl_partition *p, size_t b)
{
    const pl_part_backend *be = &p->backends[b];
    pl_module *m = be->module;
    pl_part_sink sink = {.p = p, .b = b};
    pl_status *st = m->api.supported_nodes(m->ctx, be->device, p->view,
                                           pl_part_sink_fn, &sink);
    if (sink.oom) {
        pl_status_free(st);
        return pl_part_oom();
    }
    for (size_t n = 0; n < p->nn; n++) {
        size_t k = n * p->nb + b;
        pl_status *refused;
        if (pl_part_refuse_unknown_dtype(p, (pl_nid)n, b, &refused)) {
            if (refused != NULL) {
                pl_status_free(st);
                return refused;
            }
            continue;
        }
        if (st != NULL) {
            p->verdict[k] = PL_V_NO;
            PL_RETURN_IF_ERROR(pl_part_set_reason(p, k, "supported_nodes failed: %s",
                                                  pl_status_message(st)));
        } else if (p->verdict[k] == PL_V_UNKNOWN) {
            p->verdict[k] = PL_V_NO;
            PL_RETURN_IF_ERROR(pl_part_set_reason(p, k, "%s", "no verdict given"));
        }
    }
    pl_status_free(st);
    return NULL;
}

/* Describes node N for a module call (get_kernel, kernel_fuse): its
 * tensors go to INLINE_T (16 entries) or, for a node with more, to a new
 * array; *out_t is the one used, which the caller frees if it is not
 * INLINE_T. False when out of memory. */
static bool pl_part_describe_node(const pl_partition *p, pl_nid n,
                                  pl_tensor *inline_t, pl_tensor **out_t,
                                  pl_node_desc *out_desc)
{
    const pl_graph_node *node = pl_graph_get_node(p->g, n);
    size_t nt = node->n_inputs + node->n_outputs;
    pl_tensor *t = nt <= 16 ? inline_t : pl_calloc(nt, sizeof *t);
    *out_t = t;
    if (t == NULL)
        return false;
    for (size_t i = 0; i < node->n_inputs; i++)
        pl_partition_describe_tensor(p->g, node->inputs[i], &t[i]);
    for (size_t i = 0; i < node->n_outputs; i++)
        pl_partition_describe_tensor(p->g, node->outputs[i], &t[node->n_inputs + i]);
    *out_desc = (pl_node_desc){
        .header = PL_ABI_HEADER_INIT(pl_node_desc),
        .name = node->name,
        .op = node->op,
        .domain = node->domain,
        .opset_version = pl_graph_opset(p->g, node->domain),
        .graph = p->view,
        .node_index = p->pos[n],
        .n_inputs = node->n_inputs,
        .inputs = t,
        .n_outputs = node->n_outputs,
        .outputs = t + node->n_inputs,
    };
    return true;
}

/* Asks imperative backend B for node N's kernel, unless its verdict is
 * known. QUERY: only to weigh N against the backend that has it
 * (PL_NODE_QUERY), so that a module may skip packing weights for a kernel
 * that never runs: a cpu Gemm asked while onednn had VGG-19's 25088x4096
 * layer packed 411 MB that nothing used (pl_part_settle_kernels makes the
 * real one when the node is placed there). */
static pl_status *pl_part_ask_kernel(pl_partition *p, pl_nid n, size_t b, bool query)
{
    size_t k = (size_t)n * p->nb + b;
    if (p->verdict[k] != PL_V_UNKNOWN)
        return NULL;
    pl_status *refused;
    if (pl_part_refuse_unknown_dtype(p, n, b, &refused))
        return refused;
    const pl_part_backend *be = &p->backends[b];
    pl_module *m = be->module;
    pl_tensor inline_t[16];
    pl_tensor *t = NULL;
    pl_node_desc desc;
    if (!pl_part_describe_node(p, n, inline_t, &t, &desc))
        return pl_part_oom();
    desc.flags = query ? PL_NODE_QUERY : 0;
    pl_kernel *kernel = NULL;
    size_t ws = 0;
    pl_status *st = m->api.get_kernel(m->ctx, be->device, &desc, &kernel, &ws);
    if (t != inline_t)
        pl_free(t);
    if (st == NULL && kernel != NULL) {
        p->verdict[k] = PL_V_YES;
        p->kernel[k] = kernel;
        p->query[k] = query;
        p->workspace[k] = ws;
        return NULL;
    }
    p->verdict[k] = PL_V_NO;
    pl_status *r = pl_part_set_reason(p, k, "%s",
                                      st ? pl_status_message(st)
                                         : "get_kernel returned no kernel");
    pl_status_free(st);
    return r;
}

/* ---- assignment ---------------------------------------------------------- */

static pl_status *pl_part_no_backend(const pl_partition *p, pl_nid n)
{
    const pl_graph_node *node = pl_graph_get_node(p->g, n);
    char buf[4096];
    size_t len = 0;
    for (size_t b = 0; b < p->nb && len < sizeof buf; b++) {
        const char *r = p->reason[(size_t)n * p->nb + b];
        const char *name = p->backends[b].module->name;
        size_t nl = strlen(name);
        /* Modules start their reasons with their name; add it if not. */
        bool named = r != NULL && strncmp(r, name, nl) == 0 && r[nl] == ':';
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s%s%s",
                                b ? "; " : "", named ? "" : name, named ? "" : ": ",
                                r ? r : "refused");
    }
    if (p->nb == 0)
        snprintf(buf, sizeof buf, "no backend is loaded and placed");
    return pl_status_create(PL_CODE_UNSUPPORTED,
                            "node '%s' (%s%s%s): no module can run it: %s",
                            node->name, node->domain[0] ? node->domain : "",
                            node->domain[0] ? ":" : "", node->op, buf);
}

static void pl_part_clear_clusters(pl_partition *p)
{
    for (size_t c = 0; c < p->n_clusters; c++)
        pl_free(p->clusters[c].nodes);
    pl_free(p->clusters);
    p->clusters = NULL;
    p->n_clusters = 0;
}

static bool pl_bit(const uint64_t *set, size_t i)
{
    return (set[i / 64] >> (i % 64)) & 1;
}

/* Whether NODE depends on cluster C once the clusters are contracted: C is
 * in its set (or its own cluster's) or in the set of a cluster those reach,
 * transitively. A cluster's set grows as members join it, so
 * the closure is taken now: the set a reader of the cluster copied when it
 * was visited may predate a member (a rotary-embedding graph's two
 * Slice/Mul branches made a cycle that way). */
static bool pl_part_reaches(const pl_partition *p, pl_nid node, size_t c)
{
    uint64_t *r = p->reach;
    memcpy(r, p->deps + (size_t)node * p->words, p->words * sizeof *r);
    /* A member of a cluster is the whole cluster once contracted. */
    if (p->cluster[node] >= 0)
        r[p->cluster[node] / 64] |= 1ull << (p->cluster[node] % 64);
    for (bool grew = true; grew;) {
        if (pl_bit(r, c))
            return true;
        grew = false;
        for (size_t w = 0; w < p->words; w++) {
            uint64_t bits = r[w];
            while (bits) {
                size_t k = w * 64 + (size_t)__builtin_ctzll(bits);
                bits &= bits - 1;
                const uint64_t *ck = p->cdeps + k * p->words;
                for (size_t v = 0; v < p->words; v++) {
                    uint64_t add = ck[v] & ~r[v];
                    if (add) {
                        r[v] |= add;
                        grew = true;
                    }
                }
            }
        }
    }
    return pl_bit(r, c);
}

/* In the set SET of clusters, FROM's bit becomes INTO's. */
static void pl_part_rename_bit(uint64_t *set, int32_t from, int32_t into)
{
    uint64_t fb = 1ull << (from % 64);
    if (set[from / 64] & fb) {
        set[from / 64] &= ~fb;
        set[into / 64] |= 1ull << (into % 64);
    }
}

/* Merges cluster FROM into INTO (neither reaches the other), the nodes
 * so far (the first DONE of the topological order) and every cluster's
 * set then naming INTO where they named FROM; FROM is left empty. */
static pl_status *pl_part_merge(pl_partition *p, int32_t into, int32_t from, size_t done)
{
    pl_part_cluster *a = &p->clusters[into], *b = &p->clusters[from];
    pl_nid *merged = pl_malloc((a->n_nodes + b->n_nodes) * sizeof *merged);
    if (merged == NULL)
        return pl_part_oom();
    size_t i = 0, j = 0, k = 0;
    while (i < a->n_nodes || j < b->n_nodes) /* both in topological order */
        merged[k++] = j == b->n_nodes || (i < a->n_nodes && p->pos[a->nodes[i]] <
                                                                  p->pos[b->nodes[j]])
                          ? a->nodes[i++]
                          : b->nodes[j++];
    for (j = 0; j < b->n_nodes; j++)
        p->cluster[b->nodes[j]] = into;
    pl_free(a->nodes);
    pl_free(b->nodes);
    a->nodes = merged;
    a->n_nodes = k;
    b->nodes = NULL;
    b->n_nodes = 0;
    for (size_t idx = 0; idx < done; idx++)
        pl_part_rename_bit(p->deps + (size_t)p->topo[idx] * p->words, from, into);
    uint64_t *ca = p->cdeps + (size_t)into * p->words, *cb = p->cdeps + (size_t)from * p->words;
    for (size_t w = 0; w < p->words; w++)
        ca[w] |= cb[w], cb[w] = 0;
    for (size_t c = 0; c < p->n_clusters; c++)
        pl_part_rename_bit(p->cdeps + c * p->words, from, into);
    ca[into / 64] &= ~(1ull << (into % 64));
    return NULL;
}

/* Groups the nodes of symbolic backends into convex clusters. A node
 * joins the cluster of an input's producer when no other input depends on
 * that cluster; the cluster of another of its inputs of the same backend
 * joins too when neither cluster reaches the other and no third input
 * depends on it (the products of Q, K and V of one graph input each start
 * a cluster, and the attention that reads them all made three subgraphs
 * with copies between them). */
static pl_status *pl_part_make_clusters(pl_partition *p)
{
    pl_part_clear_clusters(p);
    p->clusters = pl_calloc(p->nn ? p->nn : 1, sizeof *p->clusters);
    if (p->clusters == NULL)
        return pl_part_oom();
    memset(p->deps, 0, p->nn * p->words * sizeof *p->deps);
    memset(p->cdeps, 0, p->nn * p->words * sizeof *p->cdeps);
    for (size_t idx = 0; idx < p->nn; idx++) {
        pl_nid n = p->topo[idx];
        const pl_graph_node *node = pl_graph_get_node(p->g, n);
        uint64_t *dn = p->deps + (size_t)n * p->words;
        for (size_t i = 0; i < node->n_inputs; i++) {
            if (node->inputs[i] == PL_TID_NONE)
                continue;
            pl_nid q = pl_graph_get_tensor(p->g, node->inputs[i])->producer;
            if (q == PL_NID_NONE)
                continue;
            const uint64_t *dq = p->deps + (size_t)q * p->words;
            for (size_t w = 0; w < p->words; w++)
                dn[w] |= dq[w];
            if (p->cluster[q] >= 0)
                dn[p->cluster[q] / 64] |= 1ull << (p->cluster[q] % 64);
        }
        p->cluster[n] = -1;
        int32_t b = p->assign[n];
        if (!p->backends[b].symbolic)
            continue;
        int32_t chosen = -1;
        for (size_t i = 0; i < node->n_inputs && chosen < 0; i++) {
            if (node->inputs[i] == PL_TID_NONE)
                continue;
            pl_nid q = pl_graph_get_tensor(p->g, node->inputs[i])->producer;
            if (q == PL_NID_NONE || p->cluster[q] < 0 ||
                p->clusters[p->cluster[q]].backend != b)
                continue;
            int32_t c = p->cluster[q];
            bool ok = true;
            for (size_t j = 0; j < node->n_inputs && ok; j++) {
                if (node->inputs[j] == PL_TID_NONE)
                    continue;
                pl_nid r = pl_graph_get_tensor(p->g, node->inputs[j])->producer;
                if (r == PL_NID_NONE || p->cluster[r] == c)
                    continue;
                if (pl_part_reaches(p, r, (size_t)c))
                    ok = false;
            }
            if (ok)
                chosen = c;
        }
        for (size_t i = 0; i < node->n_inputs && chosen >= 0; i++) {
            if (node->inputs[i] == PL_TID_NONE)
                continue;
            pl_nid q = pl_graph_get_tensor(p->g, node->inputs[i])->producer;
            if (q == PL_NID_NONE || p->cluster[q] < 0 || p->cluster[q] == chosen ||
                p->clusters[p->cluster[q]].backend != b)
                continue;
            int32_t c2 = p->cluster[q];
            /* q does not reach CHOSEN (checked above); CHOSEN must not reach
             * C2, nor any input outside both */
            bool ok = !pl_part_reaches(p, p->clusters[chosen].nodes[0], (size_t)c2);
            for (size_t j = 0; j < node->n_inputs && ok; j++) {
                if (node->inputs[j] == PL_TID_NONE)
                    continue;
                pl_nid r = pl_graph_get_tensor(p->g, node->inputs[j])->producer;
                if (r != PL_NID_NONE && p->cluster[r] != chosen && p->cluster[r] != c2 &&
                    pl_part_reaches(p, r, (size_t)c2))
                    ok = false;
            }
            if (ok) {
                PL_RETURN_IF_ERROR(pl_part_merge(p, chosen, c2, idx));
                pl_part_rename_bit(p->deps + (size_t)n * p->words, c2, chosen); /* n's own */
            }
        }
        if (chosen < 0) {
            chosen = (int32_t)p->n_clusters++;
            p->clusters[chosen].backend = b;
            p->clusters[chosen].est_us = -1;
            p->clusters[chosen].alt_us = -1;
            p->clusters[chosen].alt_backend = -1;
        }
        pl_part_cluster *cl = &p->clusters[chosen];
        pl_nid *grown = pl_realloc(cl->nodes, (cl->n_nodes + 1) * sizeof *grown);
        if (grown == NULL)
            return pl_part_oom();
        cl->nodes = grown;
        cl->nodes[cl->n_nodes++] = n;
        p->cluster[n] = chosen;
        uint64_t *cd = p->cdeps + (size_t)chosen * p->words;
        for (size_t w = 0; w < p->words; w++)
            cd[w] |= dn[w];
        cd[chosen / 64] &= ~(1ull << (chosen % 64));
    }
    /* Clusters merged into others are dropped, the rest renumbered in
     * order (their sets are not used past this point). */
    size_t kept = 0;
    for (size_t c = 0; c < p->n_clusters; c++) {
        if (p->clusters[c].n_nodes == 0)
            continue;
        if (kept != c) {
            p->clusters[kept] = p->clusters[c];
            for (size_t i = 0; i < p->clusters[kept].n_nodes; i++)
                p->cluster[p->clusters[kept].nodes[i]] = (int32_t)kept;
        }
        kept++;
    }
    p->n_clusters = kept;
    return NULL;
}

/* ---- cost-aware placement -------------------------------------------------- */

/* Backend B's estimate for nodes NODES[0..N) into *OUT; false when its
 * module gives none (or an unusable one). */
static bool pl_part_estimate_in(const pl_partition *p, size_t b, const pl_nid *nodes, size_t n,
                                size_t *idx, pl_cost *out);

static bool pl_part_estimate(pl_partition *p, size_t b, const pl_nid *nodes, size_t n,
                             pl_cost *out)
{
    return pl_part_estimate_in(p, b, nodes, n, p->idx, out);
}

/* pl_part_estimate with IDX (N entries) for the view's node indices. */
static bool pl_part_estimate_in(const pl_partition *p, size_t b, const pl_nid *nodes, size_t n,
                                size_t *idx, pl_cost *out)
{
    const pl_part_backend *be = &p->backends[b];
    pl_module *m = be->module;
    if (!PL_ABI_HAS_FN(pl_module_api, &m->api, estimate_cost))
        return false;
    for (size_t i = 0; i < n; i++)
        idx[i] = p->pos[nodes[i]];
    memset(out, 0, sizeof *out);
    out->header = (pl_abi_header)PL_ABI_HEADER_INIT(pl_cost);
    if (m->api.estimate_cost(m->ctx, be->device, p->view, idx, n, out) != 1)
        return false;
    double parts[4] = {out->compute_us, out->launch_us, out->boundary_us, out->prepare_us};
    for (int i = 0; i < 4; i++)
        if (!isfinite(parts[i]) || parts[i] < 0 || parts[i] > 1e12)
            return false;
    /* Estimates are for one thread; the work and the reorders spread over
     * the runtime's threads, the fixed costs do not. */
    out->compute_us /= p->threads;
    out->boundary_us /= p->threads;
    return true;
}

/* The share of C's one-off cost (prepare_us: making kernels, compiling)
 * that each run of a plan expected to serve few runs carries; none for a
 * plan that serves many (every session but a staged one's tails). */
static double pl_part_prepare_share(const pl_partition *p, const pl_cost *c)
{
    return p->plan_runs > 0 ? c->prepare_us / p->plan_runs : 0.0;
}

static double pl_cost_total(const pl_partition *p, const pl_cost *c)
{
    return c->compute_us + c->launch_us + c->boundary_us + pl_part_prepare_share(p, c);
}

/* The core's default for nodes NODES[0..N) run as one subgraph (SYMBOLIC)
 * or one kernel each: their default times plus one dispatch per kernel or
 * for the subgraph, plus copies when the backend's device has its own
 * memory. */
static double pl_part_default(const pl_partition *p, size_t b, const pl_nid *nodes, size_t n)
{
    const pl_part_backend *be = &p->backends[b];
    double us = 0;
    for (size_t i = 0; i < n; i++)
        us += pl_cost_default_us(&pl_graph_view_table, p->view, p->pos[nodes[i]]);
    us = us / p->threads + (be->symbolic ? p->step_us : (double)n * p->step_us);
    if (!(be->module->api.capabilities & PL_CAP_HOST_MEMORY))
        us += PL_COST_COPY_US; /* at least one copy in and one out */
    return us;
}

/* The first backend other than SKIP that takes node N, or -1. With ASK an
 * imperative backend not yet asked about N is asked (get_kernel makes the
 * kernel, which may pack weights); without, it counts as taking it, so that
 * weighing a subgraph that stays where it is makes no kernels. */
static pl_status *pl_part_next_backend(pl_partition *p, pl_nid n, size_t skip, bool ask,
                                       int32_t *out)
{
    *out = -1;
    for (size_t b = 0; b < p->nb; b++) {
        size_t k = (size_t)n * p->nb + b;
        if (b == skip || p->excluded[k])
            continue;
        if (!p->backends[b].symbolic && p->verdict[k] == PL_V_UNKNOWN) {
            if (!ask) {
                *out = (int32_t)b;
                return NULL;
            }
            PL_RETURN_IF_ERROR(pl_part_ask_kernel(p, n, b, true));
        }
        if (p->verdict[k] == PL_V_YES) {
            *out = (int32_t)b;
            return NULL;
        }
    }
    return NULL;
}

/* What a pinned-thread team's spin after a subgraph costs the backend
 * that reads its results (pl_part_handoff). */
static double pl_part_spin_tax(const pl_partition *p)
{
    return p->spin_us * (p->threads - 1.0);
}

/* What handing work between threads costs cluster CL per run: a
 * pinned-thread or device backend runs on a worker of its own, and each
 * side of the subgraph that meets a step of another backend, or the run's
 * caller (which runs CPU steps itself while it waits, so a graph input or
 * output is a hand-off too), is one wake-up of a sleeping thread (measured
 * with `plinth bench` on a chain of [1,64] ops alternating between onednn
 * and cpu: 5 to 9 us a transition; a one-subgraph model of two tiny nodes:
 * 13 us on onednn, 2 us on cpu; on the AVX-512 Xeon of 2026-11-30, three
 * tiny nodes: 18 us on onednn, 1 on cpu, the onednn step itself 2).
 * And where a step of another backend reads its results, the subgraph's
 * own team keeps spinning for up to spin_us after it (the OpenMP spin the
 * runtime sets, runtime.c), its threads - 1 workers on cores the next
 * backend's threads want: spin_us * (threads - 1) of the run
 * (pl_part_spin_tax). One onednn MaxPool between two of the cpu module's
 * int8 layers (resnet50_s_qdq) made the run 0.84 ms against 0.68 with it
 * on cpu (5 alternating rounds of 300, loaded machine); asr_kaldi_conv's
 * onednn Transpose + MatMul + Clip (78 us a run against 104 on cpu) made
 * the cpu Conv after it 104 us slower (spin_us 100, 2 threads): the whole
 * spin, where (threads - 1) / threads of it had been priced and the
 * subgraph kept (default 0.72 ms a run against 0.63 on order = cpu). */
static double pl_part_handoff(const pl_partition *p, const pl_part_cluster *cl)
{
    const pl_module *m = p->backends[cl->backend].module;
    if ((m->api.capabilities & PL_CAP_HOST_MEMORY) &&
        !(m->api.capabilities & PL_CAP_PINNED_THREAD))
        return 0;
    bool in = false, out = false;
    for (size_t i = 0; i < cl->n_nodes; i++) {
        const pl_graph_node *node = pl_graph_get_node(p->g, cl->nodes[i]);
        for (size_t k = 0; k < node->n_inputs && !in; k++) {
            if (node->inputs[k] == PL_TID_NONE)
                continue;
            const pl_graph_tensor *t = pl_graph_get_tensor(p->g, node->inputs[k]);
            in = t->producer != PL_NID_NONE ? p->assign[t->producer] != cl->backend
                                            : t->data == NULL;
        }
        for (size_t k = 0; k < node->n_outputs && !out; k++) {
            if (node->outputs[k] == PL_TID_NONE)
                continue;
            const pl_graph_tensor *t = pl_graph_get_tensor(p->g, node->outputs[k]);
            out = t->is_output;
            for (size_t r = 0; r < t->n_consumers && !out; r++)
                out = p->assign[t->consumers[r]] != cl->backend;
        }
    }
    bool next = false;
    for (size_t i = 0; i < cl->n_nodes && !next; i++) {
        const pl_graph_node *node = pl_graph_get_node(p->g, cl->nodes[i]);
        for (size_t k = 0; k < node->n_outputs && !next; k++) {
            if (node->outputs[k] == PL_TID_NONE)
                continue;
            const pl_graph_tensor *t = pl_graph_get_tensor(p->g, node->outputs[k]);
            for (size_t r = 0; r < t->n_consumers && !next; r++)
                next = p->assign[t->consumers[r]] != cl->backend;
        }
    }
    return (in ? PL_COST_HANDOFF_US : 0) + (out ? PL_COST_HANDOFF_US : 0) +
           (next ? pl_part_spin_tax(p) : 0.0);
}

/* The estimate for the nodes of CL on the backends p->cluster_alt names
 * (their estimates, or the core's default); sets CL's alt_backend to the
 * one that gets most of them. */
static double pl_part_alternative(pl_partition *p, pl_part_cluster *cl, pl_nid *scratch)
{
    const int32_t *alt = p->cluster_alt;
    double alt_us = 0;
    size_t count_best = 0;
    for (size_t a = 0; a < p->nb; a++) {
        size_t m = 0;
        for (size_t i = 0; i < cl->n_nodes; i++)
            if (alt[i] == (int32_t)a)
                scratch[m++] = cl->nodes[i];
        if (m == 0)
            continue;
        if (m > count_best) {
            count_best = m;
            cl->alt_backend = (int32_t)a;
        }
        if (p->backends[a].symbolic) {
            pl_cost e;
            alt_us += pl_part_estimate(p, a, scratch, m, &e) ? pl_cost_total(p, &e)
                                                             : pl_part_default(p, a, scratch, m);
            continue;
        }
        for (size_t i = 0; i < m; i++) {
            pl_cost e;
            alt_us += pl_part_estimate(p, a, &scratch[i], 1, &e)
                          ? pl_cost_total(p, &e)
                          : pl_part_default(p, a, &scratch[i], 1);
        }
    }
    return alt_us;
}

/* Estimates cluster C and its alternative, and offers it to the next
 * backends when the alternative is cheaper (*CHANGED). Without ACT (choose
 * = first) only the estimates are made, for the description: the
 * alternative as the verdicts known so far say, no backend asked. */
static pl_status *pl_part_weigh(pl_partition *p, size_t c, pl_nid *scratch, bool *changed,
                                bool act)
{
    pl_part_cluster *cl = &p->clusters[c];
    size_t b = (size_t)cl->backend;
    cl->est_us = -1;
    cl->alt_us = -1;
    cl->alt_backend = -1;
    if (!cl->est_made && !pl_part_estimate(p, b, cl->nodes, cl->n_nodes, &cl->est))
        return NULL;
    cl->est_made = true;
    cl->handoff_us = pl_part_handoff(p, cl);
    cl->est_us = pl_cost_total(p, &cl->est) + cl->handoff_us;
    /* Where each node would go instead, first as the verdicts known so far
     * say; only when that alternative wins are the imperative backends asked
     * for their kernels, and the sum redone if one of them refuses. */
    for (int pass = 0; pass < 2; pass++) {
        bool changed_alt = false;
        for (size_t i = 0; i < cl->n_nodes; i++) {
            int32_t was = p->cluster_alt[i];
            PL_RETURN_IF_ERROR(
                pl_part_next_backend(p, cl->nodes[i], b, pass == 1, &p->cluster_alt[i]));
            if (p->cluster_alt[i] < 0 || p->pin[cl->nodes[i]] >= 0) {
                cl->alt_backend = -1; /* nowhere else to go, or placed by the user */
                cl->alt_us = -1;
                return NULL;
            }
            changed_alt |= pass == 1 && was != p->cluster_alt[i];
        }
        if (pass == 0 || changed_alt)
            cl->alt_us = pl_part_alternative(p, cl, scratch);
        if (!act || !(cl->est_us > cl->alt_us))
            return NULL;
    }
    double alt_us = cl->alt_us;
    char prepare[96] = "";
    if (p->plan_runs > 0)
        snprintf(prepare, sizeof prepare, ", compile %.1f over the %.1f runs a plan serves",
                 cl->est.prepare_us, p->plan_runs);
    char reason[420];
    snprintf(reason, sizeof reason,
             "cost: about %.1f us here (compute %.1f, launch %.1f, boundary %.1f, thread "
             "handoff %.1f%s) against %.1f us on %s for the subgraph of %zu node(s) it was part "
             "of (choose = cost)",
             cl->est_us, cl->est.compute_us, cl->est.launch_us, cl->est.boundary_us,
             cl->handoff_us, prepare, alt_us,
             p->backends[cl->alt_backend].module->name, cl->n_nodes);
    for (size_t i = 0; i < cl->n_nodes; i++) {
        size_t k = (size_t)cl->nodes[i] * p->nb + b;
        p->excluded[k] = true;
        PL_RETURN_IF_ERROR(pl_part_set_reason(p, k, "%s", reason));
    }
    *changed = true;
    return NULL;
}

/* A node that costs a symbolic backend far more than the backend that would
 * take it otherwise leaves its subgraph there, when the gain beats cutting
 * the subgraph at it: the layout conversions its neighbours then make (its
 * own boundary estimate) and the hand-offs to and from a pinned-thread
 * backend's worker (as pl_part_handoff counts them, both sides). The
 * whole-subgraph weighing cannot see it: a bidirectional LSTM 512 wide took
 * 7.1 of an OCR model's 11.4 ms on onednn (its recurrence re-reads 4 MB a
 * step) and 2.5 ms on cpu, while the model's convolutions were faster on
 * onednn. Only nodes whose default estimate is at least
 * PL_PART_CARVE_SHARE of the subgraph's are weighed, each alone on both
 * backends: a few per subgraph, whatever its size. Backends with memory
 * of their own are left alone (their copies are not modelled here). */
#define PL_PART_CARVE_SHARE 0.05

static pl_status *pl_part_carve(pl_partition *p, size_t c, bool *changed)
{
    pl_part_cluster *cl = &p->clusters[c];
    size_t b = (size_t)cl->backend;
    const pl_module *m = p->backends[b].module;
    if (cl->n_nodes < 2 || !p->backends[b].symbolic ||
        !(m->api.capabilities & PL_CAP_HOST_MEMORY))
        return NULL;
    pl_cost whole;
    if (!pl_part_estimate(p, b, cl->nodes, cl->n_nodes, &whole))
        return NULL;
    /* (the subgraph's own: pl_part_weigh reads it when nothing is cut) */
    cl->est = whole;
    cl->est_made = true;
    double whole_us = pl_cost_total(p, &whole);
    double cut = 0;
    if (m->api.capabilities & PL_CAP_PINNED_THREAD)
        cut = 2.0 * PL_COST_HANDOFF_US + pl_part_spin_tax(p);
    for (size_t i = 0; i < cl->n_nodes; i++) {
        pl_nid n = cl->nodes[i];
        if (p->pin[n] >= 0 ||
            pl_cost_default_us(&pl_graph_view_table, p->view, p->pos[n]) / p->threads <
                PL_PART_CARVE_SHARE * whole_us)
            continue;
        pl_cost here, there;
        if (!pl_part_estimate(p, b, &n, 1, &here))
            continue;
        int32_t a;
        PL_RETURN_IF_ERROR(pl_part_next_backend(p, n, b, true, &a));
        if (a < 0)
            continue;
        /* Inside the subgraph the node has no boundary of its own; cut out,
         * its neighbours there convert what it reads and writes instead. */
        double here_us = here.compute_us + here.launch_us + pl_part_prepare_share(p, &here);
        double alt_us = pl_part_estimate(p, (size_t)a, &n, 1, &there)
                            ? pl_cost_total(p, &there)
                            : pl_part_default(p, (size_t)a, &n, 1);
        if (alt_us + here.boundary_us + cut >= here_us)
            continue;
        size_t k = (size_t)n * p->nb + b;
        p->excluded[k] = true;
        char reason[320];
        snprintf(reason, sizeof reason,
                 "cost: about %.1f us here alone against %.1f us on %s, more than the %.1f us "
                 "of cutting its subgraph of %zu node(s) there (layout conversions %.1f, thread "
                 "handoffs %.1f; choose = cost)",
                 here_us, alt_us, p->backends[a].module->name, here.boundary_us + cut,
                 cl->n_nodes, here.boundary_us, cut);
        PL_RETURN_IF_ERROR(pl_part_set_reason(p, k, "%s", reason));
        *changed = true;
    }
    return NULL;
}

/* Once the assignment is stable: the kernels of backends a node is not
 * placed on go (made to weigh it; were a failed compile to move it there,
 * it is asked again), so that they do not stay through the compiles, and a
 * node placed on an imperative backend gets a kernel made to run. Sets
 * *OUT_REFUSED when a module refuses to run a node it took when weighed. */
static pl_status *pl_part_settle_kernels(pl_partition *p, bool *out_refused)
{
    *out_refused = false;
    for (size_t n = 0; n < p->nn; n++) {
        for (size_t b = 0; b < p->nb; b++) {
            size_t k = n * p->nb + b;
            bool placed = p->assign[n] == (int32_t)b;
            if (p->kernel[k] == NULL || (placed && !p->query[k]))
                continue;
            pl_module *m = p->backends[b].module;
            m->api.kernel_release(m->ctx, p->kernel[k]);
            p->kernel[k] = NULL;
            p->query[k] = false;
        }
        int32_t b = p->assign[n];
        size_t k = n * p->nb + (size_t)(b >= 0 ? b : 0);
        if (b < 0 || p->backends[b].symbolic || p->kernel[k] != NULL)
            continue;
        p->verdict[k] = PL_V_UNKNOWN;
        PL_RETURN_IF_ERROR(pl_part_ask_kernel(p, (pl_nid)n, (size_t)b, false));
        *out_refused |= p->verdict[k] != PL_V_YES;
    }
    return NULL;
}

/* Assigns every node, clusters, and offers clusters below the minimum size
 * to the next backend, until stable. */
static pl_status *pl_part_assign(pl_partition *p)
{
    for (;;) {
        for (size_t idx = 0; idx < p->nn; idx++) {
            pl_nid n = p->topo[idx];
            p->assign[n] = -1;
            if (p->pin[n] >= 0) {
                size_t b = (size_t)p->pin[n];
                if (!p->backends[b].symbolic)
                    PL_RETURN_IF_ERROR(pl_part_ask_kernel(p, n, b, false));
                size_t k = (size_t)n * p->nb + b;
                if (p->verdict[k] != PL_V_YES || p->excluded[k]) {
                    const pl_graph_node *node = pl_graph_get_node(p->g, n);
                    return pl_status_create(PL_CODE_UNSUPPORTED,
                                            "node '%s' (%s) is pinned to %s, which "
                                            "refuses it: %s",
                                            node->name, node->op,
                                            p->backends[b].module->name,
                                            p->reason[k] ? p->reason[k] : "refused");
                }
                p->assign[n] = (int32_t)b;
                continue;
            }
            for (size_t b = 0; b < p->nb && p->assign[n] < 0; b++) {
                size_t k = (size_t)n * p->nb + b;
                if (p->excluded[k])
                    continue;
                if (!p->backends[b].symbolic)
                    PL_RETURN_IF_ERROR(pl_part_ask_kernel(p, n, b, false));
                if (p->verdict[k] == PL_V_YES)
                    p->assign[n] = (int32_t)b;
            }
            if (p->assign[n] < 0)
                return pl_part_no_backend(p, n);
        }
        PL_RETURN_IF_ERROR(pl_part_make_clusters(p));
        bool changed = false;
        for (size_t c = 0; c < p->n_clusters; c++) {
            const pl_part_cluster *cl = &p->clusters[c];
            if ((int)cl->n_nodes >= p->min_nodes)
                continue;
            char reason[160];
            snprintf(reason, sizeof reason,
                     "subgraph of %zu node(s) is below min_subgraph_nodes = %d",
                     cl->n_nodes, p->min_nodes);
            for (size_t i = 0; i < cl->n_nodes; i++) {
                pl_nid n = cl->nodes[i];
                if (p->pin[n] >= 0)
                    continue;
                size_t k = (size_t)n * p->nb + (size_t)cl->backend;
                p->excluded[k] = true;
                PL_RETURN_IF_ERROR(pl_part_set_reason(p, k, "%s", reason));
                changed = true;
            }
        }
        /* Nodes that cost this backend far more than another leave their
         * subgraph first, so that what remains is weighed without them. */
        for (size_t c = 0; p->by_cost && c < p->n_clusters; c++)
            PL_RETURN_IF_ERROR(pl_part_carve(p, c, &changed));
        if (changed)
            continue;
        for (size_t c = 0; p->by_cost && c < p->n_clusters; c++)
            PL_RETURN_IF_ERROR(pl_part_weigh(p, c, p->scratch, &changed, true));
        if (changed)
            continue;
        for (size_t c = 0; !p->by_cost && c < p->n_clusters; c++)
            PL_RETURN_IF_ERROR(pl_part_weigh(p, c, p->scratch, &changed, false));
        PL_RETURN_IF_ERROR(pl_part_settle_kernels(p, &changed));
        if (!changed)
            return NULL;
    }
}

pl_status *pl_partition_create(const pl_graph *g, const pl_graph_view *view,
                               const pl_part_backend *backends,
                               size_t n_backends, const pl_part_pin *pins,
                               size_t n_pins, int min_subgraph_nodes,
                               bool choose_by_cost, int threads, int spin_us,
                               bool inline_run, double plan_runs,
                               pl_partition **out_partition)
{
    *out_partition = NULL;
    pl_partition *p = pl_calloc(1, sizeof *p);
    if (p == NULL)
        return pl_part_oom();
    p->g = g;
    p->view = view;
    p->nb = n_backends;
    p->nn = pl_graph_node_count(g);
    p->topo = pl_graph_topo_order(g);
    p->min_nodes = min_subgraph_nodes > 0 ? min_subgraph_nodes : 1;
    p->by_cost = choose_by_cost;
    p->threads = threads > 1 ? (double)threads : 1.0;
    p->spin_us = spin_us > 0 ? (double)spin_us : 0.0;
    p->plan_runs = plan_runs > 0 && isfinite(plan_runs) ? plan_runs : 0.0;
    /* A program whose steps are all on the host runs them in its caller
     * (run.c, pl_run_is_sequential), as a body runs inline: a kernel step
     * costs PL_PART_INLINE_STEP_US there. A backend with memory of its own
     * puts the run on the engine, where a step costs PL_COST_STEP_US. */
    bool host_only = true;
    for (size_t b = 0; b < n_backends; b++)
        host_only &= (backends[b].module->api.capabilities & PL_CAP_HOST_MEMORY) != 0;
    p->step_us = inline_run || host_only ? PL_PART_INLINE_STEP_US : PL_COST_STEP_US;
    size_t cells = (p->nn ? p->nn : 1) * (p->nb ? p->nb : 1);
    p->words = (p->nn + 63) / 64 + 1;
    p->backends = pl_calloc(p->nb ? p->nb : 1, sizeof *p->backends);
    p->verdict = pl_calloc(cells, sizeof *p->verdict);
    p->reason = pl_calloc(cells, sizeof *p->reason);
    p->kernel = pl_calloc(cells, sizeof *p->kernel);
    p->query = pl_calloc(cells, sizeof *p->query);
    p->workspace = pl_calloc(cells, sizeof *p->workspace);
    p->excluded = pl_calloc(cells, sizeof *p->excluded);
    p->pin = pl_malloc((p->nn ? p->nn : 1) * sizeof *p->pin);
    p->assign = pl_calloc(p->nn ? p->nn : 1, sizeof *p->assign);
    p->cluster = pl_calloc(p->nn ? p->nn : 1, sizeof *p->cluster);
    p->pos = pl_calloc(p->nn ? p->nn : 1, sizeof *p->pos);
    p->fused_into = pl_malloc((p->nn ? p->nn : 1) * sizeof *p->fused_into);
    p->fused_next = pl_malloc((p->nn ? p->nn : 1) * sizeof *p->fused_next);
    p->offered_to = pl_malloc((p->nn ? p->nn : 1) * sizeof *p->offered_to);
    p->idx = pl_malloc((p->nn ? p->nn : 1) * sizeof *p->idx);
    p->cluster_alt = pl_malloc((p->nn ? p->nn : 1) * sizeof *p->cluster_alt);
    p->scratch = pl_malloc((p->nn ? p->nn : 1) * sizeof *p->scratch);
    size_t dep_words;
    bool sized = pl_size_mul(p->nn ? p->nn : 1, p->words, &dep_words);
    p->deps = sized ? pl_calloc(dep_words, sizeof *p->deps) : NULL;
    p->cdeps = sized ? pl_calloc(dep_words, sizeof *p->cdeps) : NULL;
    p->reach = pl_calloc(p->words, sizeof *p->reach);
    if (!p->backends || !p->verdict || !p->reason || !p->kernel || !p->query || !p->workspace ||
        !p->excluded || !p->pin || !p->assign || !p->cluster || !p->deps || !p->cdeps ||
        !p->reach ||
        !p->pos || !p->fused_into || !p->fused_next || !p->offered_to || !p->idx ||
        !p->cluster_alt || !p->scratch || p->topo == NULL) {
        bool unvalidated = p->topo == NULL;
        pl_partition_destroy(p);
        return unvalidated ? pl_status_create(PL_CODE_FAILED_PRECONDITION,
                                              "partition: the graph is not validated")
                           : pl_part_oom();
    }
    for (size_t i = 0; i < p->nn; i++)
        p->pos[p->topo[i]] = (uint32_t)i;
    memcpy(p->backends, backends, p->nb * sizeof *p->backends);
    for (size_t n = 0; n < p->nn; n++) {
        p->pin[n] = -1;
        p->fused_into[n] = PL_NID_NONE;
        p->fused_next[n] = PL_NID_NONE;
        p->offered_to[n] = PL_NID_NONE;
    }
    for (size_t i = 0; i < n_pins; i++) {
        pl_nid n = pl_graph_find_node(g, pins[i].node);
        if (n == PL_NID_NONE) {
            pl_partition_destroy(p);
            return pl_status_create(PL_CODE_NOT_FOUND,
                                    "[placement] pin names node '%s', which the "
                                    "model does not have",
                                    pins[i].node);
        }
        p->pin[n] = pins[i].backend;
    }
    pl_status *st = NULL;
    for (size_t b = 0; b < p->nb && st == NULL; b++)
        if (p->backends[b].symbolic)
            st = pl_part_ask_symbolic(p, b);
    if (st == NULL)
        st = pl_part_assign(p);
    if (st != NULL) {
        pl_partition_destroy(p);
        return st;
    }
    *out_partition = p;
    return NULL;
}

void pl_partition_destroy(pl_partition *p)
{
    if (p == NULL)
        return;
    size_t cells = p->nn * p->nb;
    for (size_t k = 0; p->reason && k < cells; k++)
        pl_free(p->reason[k]);
    for (size_t k = 0; p->kernel && k < cells; k++) {
        if (p->kernel[k] == NULL)
            continue;
        pl_module *m = p->backends[k % p->nb].module;
        m->api.kernel_release(m->ctx, p->kernel[k]);
    }
    pl_part_clear_clusters(p);
    pl_free(p->backends);
    pl_free(p->verdict);
    pl_free(p->reason);
    pl_free(p->kernel);
    pl_free(p->query);
    pl_free(p->workspace);
    pl_free(p->excluded);
    pl_free(p->pin);
    pl_free(p->assign);
    pl_free(p->cluster);
    pl_free(p->deps);
    pl_free(p->cdeps);
    pl_free(p->reach);
    pl_free(p->pos);
    pl_free(p->fused_into);
    pl_free(p->fused_next);
    pl_free(p->offered_to);
    pl_free(p->idx);
    pl_free(p->cluster_alt);
    pl_free(p->scratch);
    pl_free(p);
}

pl_status *pl_partition_exclude_cluster(pl_partition *p, size_t c,
                                        const char *reason)
{
    if (c >= p->n_clusters)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "no cluster %zu", c);
    const pl_part_cluster *cl = &p->clusters[c];
    for (size_t i = 0; i < cl->n_nodes; i++) {
        size_t k = (size_t)cl->nodes[i] * p->nb + (size_t)cl->backend;
        p->excluded[k] = true;
        PL_RETURN_IF_ERROR(pl_part_set_reason(p, k, "%s", reason));
        /* A pin cannot hold against a failed compile. */
        p->pin[cl->nodes[i]] = -1;
    }
    return pl_part_assign(p);
}

pl_status *pl_partition_exclude_node(pl_partition *p, pl_nid n, const char *reason)
{
    if (n >= p->nn || p->assign[n] < 0)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "no placed node %u", (unsigned)n);
    size_t k = (size_t)n * p->nb + (size_t)p->assign[n];
    p->excluded[k] = true;
    PL_RETURN_IF_ERROR(pl_part_set_reason(p, k, "%s", reason));
    p->pin[n] = -1;
    return pl_part_assign(p);
}

bool pl_partition_node_weigh(pl_partition *p, pl_nid n, double *own_us, double *alt_us,
                             int32_t *alt_backend)
{
    if (n >= p->nn || p->assign[n] < 0 || p->pin[n] >= 0)
        return false;
    size_t b = (size_t)p->assign[n];
    pl_cost here, there;
    if (!pl_part_estimate(p, b, &n, 1, &here))
        return false;
    int32_t a = -1;
    pl_status *st = pl_part_next_backend(p, n, b, false, &a); /* (asks nothing: never fails) */
    pl_status_free(st);
    if (a < 0)
        return false;
    /* Inside its subgraph the node has no boundary of its own; cut out,
     * its neighbours convert what it reads and writes instead, and the
     * subgraph's thread hands off on each side (as pl_part_carve weighs
     * it): a Reshape whose reorder out of oneDNN's blocked layout took 1.1
     * ms of RetinaNet's run costs nothing on cpu, but its reorder stays. */
    double cut = 0;
    if (p->backends[b].module->api.capabilities & PL_CAP_PINNED_THREAD)
        cut = 2.0 * PL_COST_HANDOFF_US + pl_part_spin_tax(p);
    *own_us = here.compute_us + here.launch_us + pl_part_prepare_share(p, &here);
    *alt_us = (pl_part_estimate(p, (size_t)a, &n, 1, &there) ? pl_cost_total(p, &there)
                                                             : pl_part_default(p, (size_t)a, &n, 1)) +
              here.boundary_us + cut;
    *alt_backend = a;
    return true;
}

size_t pl_partition_backend_count(const pl_partition *p) { return p->nb; }

const pl_part_backend *pl_partition_backend(const pl_partition *p, size_t b)
{
    return b < p->nb ? &p->backends[b] : NULL;
}

int32_t pl_partition_node_backend(const pl_partition *p, pl_nid n)
{
    return n < p->nn ? p->assign[n] : -1;
}

int32_t pl_partition_node_cluster(const pl_partition *p, pl_nid n)
{
    return n < p->nn ? p->cluster[n] : -1;
}

double pl_partition_node_estimate(const pl_partition *p, pl_nid n)
{
    if (n >= p->nn || p->assign[n] < 0 || p->cluster[n] >= 0)
        return -1;
    size_t b = (size_t)p->assign[n], idx; /* not p->idx: describing may run on two threads */
    pl_cost e;
    return pl_part_estimate_in(p, b, &n, 1, &idx, &e) ? pl_cost_total(p, &e)
                                                      : pl_part_default(p, b, &n, 1);
}

size_t pl_partition_cluster_count(const pl_partition *p) { return p->n_clusters; }

double pl_partition_plan_runs(const pl_partition *p) { return p->plan_runs; }

const pl_part_cluster *pl_partition_cluster(const pl_partition *p, size_t c)
{
    return c < p->n_clusters ? &p->clusters[c] : NULL;
}

pl_kernel *pl_partition_kernel(const pl_partition *p, pl_nid n,
                               size_t *out_workspace)
{
    if (n >= p->nn || p->assign[n] < 0) {
        if (out_workspace)
            *out_workspace = 0;
        return NULL;
    }
    size_t k = (size_t)n * p->nb + (size_t)p->assign[n];
    if (out_workspace)
        *out_workspace = p->workspace[k];
    return p->kernel[k];
}

/* ---- epilogue fusion ------------------------------------------------------ */

static bool pl_part_same_type(const pl_graph_tensor *a, const pl_graph_tensor *b)
{
    if (!PL_DTYPE_EQ(a->dtype, b->dtype) || a->ndim != b->ndim || a->ndim < 0)
        return false;
    for (int32_t d = 0; d < a->ndim; d++)
        if (a->dims[d] != b->dims[d] || a->dims[d] < 0)
            return false;
    return true;
}

/* The consumer of TAIL's only output that may be offered to the kernel of
 * backend B that ends in TAIL (pl_partition_fuse lists the rules), or
 * PL_NID_NONE. */
static pl_nid pl_part_fuse_candidate(const pl_partition *p, pl_nid tail, int32_t b)
{
    const pl_graph_node *pn = pl_graph_get_node(p->g, tail);
    pl_tid out = PL_TID_NONE;
    size_t present = 0;
    for (size_t o = 0; o < pn->n_outputs; o++)
        if (pn->outputs[o] != PL_TID_NONE) {
            out = pn->outputs[o];
            present++;
        }
    if (present != 1)
        return PL_NID_NONE;
    const pl_graph_tensor *t = pl_graph_get_tensor(p->g, out);
    if (t->is_output || t->n_consumers != 1)
        return PL_NID_NONE;
    pl_nid c = t->consumers[0];
    if (c >= p->nn || p->assign[c] != b || p->cluster[c] >= 0 ||
        p->fused_into[c] != PL_NID_NONE || p->fused_next[c] != PL_NID_NONE)
        return PL_NID_NONE;
    const pl_graph_node *cn = pl_graph_get_node(p->g, c);
    if (cn->n_outputs != 1 || cn->outputs[0] == PL_TID_NONE)
        return PL_NID_NONE;
    size_t reads = 0;
    for (size_t i = 0; i < cn->n_inputs; i++) {
        pl_tid in = cn->inputs[i];
        if (in == PL_TID_NONE)
            continue;
        if (in == out) {
            reads++;
            continue;
        }
        const pl_graph_tensor *ti = pl_graph_get_tensor(p->g, in);
        if (ti->data == NULL || ti->is_input)
            return PL_NID_NONE;
    }
    if (reads != 1 || !pl_part_same_type(t, pl_graph_get_tensor(p->g, cn->outputs[0])))
        return PL_NID_NONE;
    return c;
}

/* Checks that every fused node still sits on its head's imperative backend. */
static pl_status *pl_part_check_chains(const pl_partition *p)
{
    for (size_t n = 0; n < p->nn; n++) {
        pl_nid h = p->fused_into[n];
        if (h == PL_NID_NONE)
            continue;
        int32_t b = p->assign[h];
        if (p->assign[n] != b || b < 0 || p->backends[b].symbolic || p->cluster[n] >= 0)
            return pl_status_create(PL_CODE_INTERNAL,
                                    "partition: node '%s', fused into '%s', was "
                                    "moved to another backend",
                                    pl_graph_get_node(p->g, (pl_nid)n)->name,
                                    pl_graph_get_node(p->g, h)->name);
    }
    return NULL;
}

pl_status *pl_partition_fuse(pl_partition *p)
{
    PL_RETURN_IF_ERROR(pl_part_check_chains(p));
    for (size_t idx = 0; idx < p->nn; idx++) {
        pl_nid n = p->topo[idx];
        int32_t b = p->assign[n];
        if (b < 0 || p->fused_into[n] != PL_NID_NONE || p->backends[b].symbolic)
            continue;
        pl_module *m = p->backends[b].module;
        pl_kernel *kernel = p->kernel[(size_t)n * p->nb + (size_t)b];
        if (kernel == NULL || !PL_ABI_HAS_FN(pl_module_api, &m->api, kernel_fuse))
            continue;
        pl_nid tail = n;
        while (p->fused_next[tail] != PL_NID_NONE)
            tail = p->fused_next[tail];
        for (;;) {
            pl_nid c = pl_part_fuse_candidate(p, tail, b);
            /* A kernel that declined a node declines it for good. */
            if (c == PL_NID_NONE || p->offered_to[c] == n)
                break;
            p->offered_to[c] = n;
            pl_tensor inline_t[16];
            pl_tensor *t = NULL;
            pl_node_desc desc;
            if (!pl_part_describe_node(p, c, inline_t, &t, &desc))
                return pl_part_oom();
            int taken = m->api.kernel_fuse(m->ctx, kernel, &desc);
            if (t != inline_t)
                pl_free(t);
            /* Only 1 means fused; anything else leaves the kernel as it was. */
            if (taken != 1)
                break;
            p->fused_into[c] = n;
            p->fused_next[tail] = c;
            tail = c;
        }
    }
    return NULL;
}

pl_nid pl_partition_fused_into(const pl_partition *p, pl_nid n)
{
    return n < p->nn ? p->fused_into[n] : PL_NID_NONE;
}

pl_nid pl_partition_fused_next(const pl_partition *p, pl_nid n)
{
    return n < p->nn ? p->fused_next[n] : PL_NID_NONE;
}

const char *pl_partition_reason(const pl_partition *p, pl_nid n, size_t b)
{
    if (n >= p->nn || b >= p->nb)
        return NULL;
    return p->reason[(size_t)n * p->nb + b];
}
