/* shape_strided.c — the cpu module's strided copies, for every dtype:
 * Transpose, Slice, Expand and Tile all read their input at an affine
 * function of the output index (see shp_strided), so one engine copies
 * them all. A run walks chunks of the flat output; rows whose input is
 * contiguous are copied with memcpy, and a transpose that swaps the input's
 * contiguous dim to the second-to-last place (matrix transposes, the K^T of
 * attention) goes through cache-sized tiles instead. */
#include <string.h>

#include "shape_kernel.h"

/* Elements a tile of the blocked transpose has on each side. */
#define SHP_TILE 32

/* ---- the engine ---------------------------------------------------------- */

void shp_strided_collapse(shp_strided *s)
{
    int n = 0;
    for (int d = 0; d < s->ndim; d++) {
        int64_t dim = s->dims[d], st = s->stride[d];
        if (dim == 1)
            continue;
        if (n > 0 && s->stride[n - 1] == st * dim) {
            s->dims[n - 1] *= dim;
            s->stride[n - 1] = st;
            continue;
        }
        s->dims[n] = dim;
        s->stride[n] = st;
        n++;
    }
    if (n == 0) {
        s->dims[0] = 1;
        s->stride[0] = 1;
        n = 1;
    }
    s->ndim = n;
}

typedef struct shp_strided_call {
    const shp_strided *s;
    const char *x;
    char *y;
} shp_strided_call;

/* Copies SPAN elements of ES bytes to Y from X, which steps ST elements. */
static inline void shp_strided_row(char *y, const char *x, int64_t st, size_t span, size_t es)
{
    if (st == 1) {
        memcpy(y, x, span * es);
        return;
    }
    const int64_t step = st * (int64_t)es;
    switch (es) {
    case 1:
        for (size_t i = 0; i < span; i++)
            y[i] = x[(int64_t)i * step];
        break;
    case 2:
        for (size_t i = 0; i < span; i++)
            memcpy(y + i * 2, x + (int64_t)i * step, 2);
        break;
    case 4:
        for (size_t i = 0; i < span; i++)
            memcpy(y + i * 4, x + (int64_t)i * step, 4);
        break;
    default:
        for (size_t i = 0; i < span; i++)
            memcpy(y + i * 8, x + (int64_t)i * step, 8);
        break;
    }
}

static void shp_strided_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const shp_strided_call *c = arg;
    const shp_strided *s = c->s;
    const int last = s->ndim - 1;
    const size_t es = s->esize;
    int64_t idx[SHP_MAX_STRIDED], off = s->base;
    size_t rest = begin;
    for (int d = last; d >= 0; d--) {
        idx[d] = (int64_t)(rest % (size_t)s->dims[d]);
        rest /= (size_t)s->dims[d];
        off += idx[d] * s->stride[d];
    }
    const int64_t st = s->stride[last];
    size_t pos = begin;
    while (pos < end) {
        size_t span = (size_t)(s->dims[last] - idx[last]);
        if (span > end - pos)
            span = end - pos;
        shp_strided_row(c->y + pos * es, c->x + off * (int64_t)es, st, span, es);
        pos += span;
        idx[last] += (int64_t)span;
        off += (int64_t)span * st;
        for (int d = last; d > 0 && idx[d] == s->dims[d]; d--) {
            off += s->stride[d - 1] - idx[d] * s->stride[d];
            idx[d] = 0;
            idx[d - 1]++;
        }
    }
}

/* The blocked transpose: the output's last two dims (R rows, C columns)
 * read the input at r * 1 + c * S; tasks are tiles of every batch. */
typedef struct shp_tiled_call {
    const shp_strided *s;
    const char *x;
    char *y;
    size_t tiles_r, tiles_c;
} shp_tiled_call;

static void shp_tiled_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const shp_tiled_call *c = arg;
    const shp_strided *s = c->s;
    const int nb = s->ndim - 2;
    const size_t es = s->esize;
    const int64_t rows = s->dims[nb], cols = s->dims[nb + 1], cs = s->stride[nb + 1];
    const size_t per_batch = c->tiles_r * c->tiles_c;
    for (size_t t = begin; t < end; t++) {
        size_t b = t / per_batch, tile = t % per_batch;
        int64_t r0 = (int64_t)(tile / c->tiles_c) * SHP_TILE;
        int64_t c0 = (int64_t)(tile % c->tiles_c) * SHP_TILE;
        int64_t r1 = r0 + SHP_TILE < rows ? r0 + SHP_TILE : rows;
        int64_t c1 = c0 + SHP_TILE < cols ? c0 + SHP_TILE : cols;
        int64_t off = s->base;
        size_t rest = b;
        for (int d = nb - 1; d >= 0; d--) {
            off += (int64_t)(rest % (size_t)s->dims[d]) * s->stride[d];
            rest /= (size_t)s->dims[d];
        }
        const char *x = c->x + off * (int64_t)es;
        char *y = c->y + (size_t)b * (size_t)(rows * cols) * es;
        for (int64_t r = r0; r < r1; r++) {
            char *yr = y + (size_t)(r * cols + c0) * es;
            const char *xr = x + (r + c0 * cs) * (int64_t)es;
            shp_strided_row(yr, xr, cs, (size_t)(c1 - c0), es);
        }
    }
}

void shp_strided_run(pl_module_ctx *ctx, const shp_strided *s, const void *x, void *y)
{
    size_t n = 1;
    for (int d = 0; d < s->ndim; d++)
        n *= (size_t)s->dims[d];
    if (n == 0)
        return;
    const int last = s->ndim - 1;
    if (s->ndim >= 2 && s->stride[last] != 1 && s->stride[last - 1] == 1 &&
        s->dims[last] >= 8 && s->dims[last - 1] >= 8) {
        shp_tiled_call c = {.s = s, .x = x, .y = y};
        c.tiles_r = (size_t)(s->dims[last - 1] + SHP_TILE - 1) / SHP_TILE;
        c.tiles_c = (size_t)(s->dims[last] + SHP_TILE - 1) / SHP_TILE;
        size_t batches = n / (size_t)(s->dims[last - 1] * s->dims[last]);
        size_t tile_bytes = SHP_TILE * SHP_TILE * s->esize;
        size_t grain = tile_bytes >= SHP_GRAIN_BYTES ? 1 : SHP_GRAIN_BYTES / tile_bytes;
        cpu_host->parallel_for(ctx->host_ctx, batches * c.tiles_r * c.tiles_c, grain,
                               shp_tiled_chunk, &c);
        return;
    }
    shp_strided_call c = {.s = s, .x = x, .y = y};
    cpu_host->parallel_for(ctx->host_ctx, n, SHP_GRAIN_BYTES / s->esize, shp_strided_chunk, &c);
}

/* ---- kernels with a fixed plan ---------------------------------------------- */

typedef struct shp_strided_kernel {
    shp_kernel k;
    shp_strided plan;
    /* Slice with bounds known only at run time. */
    bool dynamic;
    int rank;
    int64_t x_dims[CPU_MAX_RANK];
    int64_t o_dims[CPU_MAX_RANK];
    pl_dtype arg_dtype[5]; /* inputs 1..4; lanes 0 when absent */
} shp_strided_kernel;

static pl_status *shp_strided_write(pl_module_ctx *ctx, const shp_kernel *k,
                                    const pl_run_args *args, size_t o, void *dst,
                                    pl_output_request req)
{
    (void)o, (void)req;
    const shp_strided_kernel *s = (const shp_strided_kernel *)k;
    shp_strided_run(ctx, &s->plan, shp_in(args, 0), dst);
    return NULL;
}

static void shp_in_strides(const int64_t *dims, int r, int64_t *st)
{
    int64_t step = 1;
    for (int d = r - 1; d >= 0; d--) {
        st[d] = step;
        step *= dims[d];
    }
}

/* Allocates a strided kernel for NODE after the dtype check. */
static pl_status *shp_strided_alloc(pl_module_ctx *ctx, const pl_node_desc *node,
                                    shp_strided_kernel **out)
{
    SHP_TRY(shp_same_dtype(node));
    return shp_kernel_alloc(ctx, node, sizeof **out, shp_strided_write, (shp_kernel **)out);
}

static pl_status *shp_done(shp_strided_kernel *k, pl_kernel **out_kernel)
{
    k->plan.esize = k->k.in_esize;
    shp_strided_collapse(&k->plan);
    *out_kernel = &k->k.base;
    return NULL;
}

pl_status *shp_build_transpose(pl_module_ctx *ctx, const pl_node_desc *node,
                               pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    const int64_t *perm_attr;
    size_t n_perm;
    SHP_TRY(cpu_attr_ints(node, "perm", &perm_attr, &n_perm));
    const int r = x->ndim;
    int64_t perm[CPU_MAX_RANK];
    bool seen[CPU_MAX_RANK] = {false};
    if (perm_attr != NULL && n_perm != (size_t)r)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "perm has %zu entries for an input of rank %d", n_perm, r);
    for (int d = 0; d < r; d++) {
        perm[d] = perm_attr != NULL ? perm_attr[d] : r - 1 - d;
        if (perm[d] < 0)
            perm[d] += r;
        if (perm[d] < 0 || perm[d] >= r || seen[perm[d]])
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "perm is not a permutation of 0..%d", r - 1);
        seen[perm[d]] = true;
    }
    bool ok = o->ndim == r;
    for (int d = 0; d < r && ok; d++)
        ok = o->shape[d] == x->shape[perm[d]];
    if (!ok) {
        char tx[128], to[128];
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "input %s permuted does not give the output's %s",
                         cpu_dims_text(x->shape, r, tx, sizeof tx),
                         cpu_dims_text(o->shape, o->ndim, to, sizeof to));
    }
    shp_strided_kernel *k;
    SHP_TRY(shp_strided_alloc(ctx, node, &k));
    int64_t st[CPU_MAX_RANK];
    shp_in_strides(x->shape, r, st);
    k->plan.ndim = r;
    for (int d = 0; d < r; d++) {
        k->plan.dims[d] = o->shape[d];
        k->plan.stride[d] = st[perm[d]];
    }
    if (r == 0) {
        k->plan.ndim = 1;
        k->plan.dims[0] = 1;
        k->plan.stride[0] = 1;
    }
    return shp_done(k, out_kernel);
}

pl_status *shp_build_expand(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    const int r = o->ndim, rx = x->ndim;
    char tx[128], to[128];
    if (rx > r)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "input %s has a higher rank than %s",
                         cpu_dims_text(x->shape, rx, tx, sizeof tx),
                         cpu_dims_text(o->shape, r, to, sizeof to));
    int64_t st[CPU_MAX_RANK];
    shp_in_strides(x->shape, rx, st);
    shp_strided_kernel *k;
    SHP_TRY(shp_strided_alloc(ctx, node, &k));
    k->plan.ndim = r;
    for (int d = 0; d < r; d++) {
        int kx = d - (r - rx);
        int64_t od = o->shape[d];
        k->plan.dims[d] = od;
        if (kx < 0 || (x->shape[kx] == 1 && od != 1)) {
            k->plan.stride[d] = 0;
        } else if (x->shape[kx] == od) {
            k->plan.stride[d] = st[kx];
        } else {
            cpu_kernel_release(ctx, &k->k.base);
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "input %s does not broadcast to the output's %s",
                             cpu_dims_text(x->shape, rx, tx, sizeof tx),
                             cpu_dims_text(o->shape, r, to, sizeof to));
        }
    }
    if (r == 0) {
        k->plan.ndim = 1;
        k->plan.dims[0] = 1;
        k->plan.stride[0] = 1;
    }
    return shp_done(k, out_kernel);
}

/* Tile: output dim d of x_d * r_d is read as [r_d, x_d] with strides
 * (0, the input's), so a tile is a strided copy of twice the rank. The
 * repeats are those the output's shape implies. */
pl_status *shp_build_tile(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    const int r = x->ndim;
    char tx[128], to[128];
    bool ok = o->ndim == r;
    for (int d = 0; d < r && ok; d++)
        ok = x->shape[d] == 0 ? true : o->shape[d] % x->shape[d] == 0;
    if (!ok)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "output %s is not a tiling of %s",
                         cpu_dims_text(o->shape, o->ndim, to, sizeof to),
                         cpu_dims_text(x->shape, r, tx, sizeof tx));
    int64_t st[CPU_MAX_RANK];
    shp_in_strides(x->shape, r, st);
    shp_strided_kernel *k;
    SHP_TRY(shp_strided_alloc(ctx, node, &k));
    k->plan.ndim = 2 * r;
    for (int d = 0; d < r; d++) {
        int64_t xd = x->shape[d];
        k->plan.dims[2 * d] = xd == 0 ? 0 : o->shape[d] / xd;
        k->plan.stride[2 * d] = 0;
        k->plan.dims[2 * d + 1] = xd;
        k->plan.stride[2 * d + 1] = st[d];
    }
    if (r == 0) {
        k->plan.ndim = 1;
        k->plan.dims[0] = 1;
        k->plan.stride[0] = 1;
    }
    return shp_done(k, out_kernel);
}

/* ---- Slice ------------------------------------------------------------------ */

/* The plan of a slice of X (dims XD, rank R) into the output (dims OD):
 * N (start, end, axis, step) entries, clamped as ONNX says. AXES and STEPS
 * may be NULL (0..N-1 and 1). */
static pl_status *shp_slice_plan(const char *op, const int64_t *xd, int r, const int64_t *od,
                                 const int64_t *starts, const int64_t *ends,
                                 const int64_t *axes, const int64_t *steps, size_t n,
                                 shp_strided *plan)
{
    int64_t start[CPU_MAX_RANK] = {0}, step[CPU_MAX_RANK], len[CPU_MAX_RANK];
    bool seen[CPU_MAX_RANK] = {false};
    for (int d = 0; d < r; d++) {
        step[d] = 1;
        len[d] = xd[d];
    }
    for (size_t i = 0; i < n; i++) {
        int64_t a = axes != NULL ? axes[i] : (int64_t)i;
        int64_t given = a;
        if (a < 0)
            a += r;
        if (a < 0 || a >= r)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "axis %lld is out of range for rank %d",
                             (long long)given, r);
        if (seen[a])
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "axis %lld is sliced twice",
                             (long long)given);
        seen[a] = true;
        int64_t sp = steps != NULL ? steps[i] : 1;
        if (sp == 0)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "step on axis %lld is 0",
                             (long long)given);
        int64_t d = xd[a], s = starts[i], e = ends[i], l;
        if (s < 0)
            s += d;
        if (e < 0)
            e += d;
        if (sp > 0) {
            s = s < 0 ? 0 : s > d ? d : s;
            e = e < 0 ? 0 : e > d ? d : e;
            l = e > s ? (e - s - 1) / sp + 1 : 0;
        } else {
            s = s < 0 ? 0 : s > d - 1 ? d - 1 : s;
            e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
            l = s > e ? (s - e - 1) / -sp + 1 : 0;
        }
        start[a] = l > 0 ? s : 0;
        step[a] = sp;
        len[a] = l;
    }
    for (int d = 0; d < r; d++)
        if (len[d] != od[d]) {
            char tl[128], to[128];
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "the bounds give %s, the output is %s",
                             cpu_dims_text(len, r, tl, sizeof tl),
                             cpu_dims_text(od, r, to, sizeof to));
        }
    int64_t st[CPU_MAX_RANK];
    shp_in_strides(xd, r, st);
    size_t es = plan->esize;
    memset(plan, 0, sizeof *plan);
    plan->esize = es;
    plan->ndim = r;
    for (int d = 0; d < r; d++) {
        plan->dims[d] = len[d];
        plan->stride[d] = st[d] * step[d];
        plan->base += start[d] * st[d];
    }
    if (r == 0) {
        plan->ndim = 1;
        plan->dims[0] = 1;
        plan->stride[0] = 1;
    }
    shp_strided_collapse(plan);
    return NULL;
}

/* Slice with bounds given as inputs that are not constants: they are read
 * from the run's tensors, and must give the output's shape. */
static pl_status *shp_slice_dynamic_write(pl_module_ctx *ctx, const shp_kernel *k,
                                          const pl_run_args *args, size_t o, void *dst,
                                          pl_output_request req)
{
    (void)o, (void)req;
    const shp_strided_kernel *s = (const shp_strided_kernel *)k;
    int64_t v[4][SHP_MAX_INTS];
    size_t n = 0;
    bool have[4] = {false};
    for (size_t i = 0; i < 4; i++) {
        if (s->arg_dtype[i].lanes == 0 || 1 + i >= args->n_inputs)
            continue;
        const pl_tensor *t = &args->inputs[1 + i];
        if (t->ndim < 0)
            continue;
        size_t cnt = cpu_elements(t->shape, t->ndim);
        if (cnt > SHP_MAX_INTS || (i > 0 && cnt != n) ||
            (cnt > 0 && t->data == NULL))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, k->base.op,
                             "input %zu of the run has %zu values (expected %zu, at most %d)",
                             1 + i, cnt, n, SHP_MAX_INTS);
        n = cnt;
        shp_read_ints(s->arg_dtype[i], shp_in(args, 1 + i), cnt, v[i]);
        have[i] = true;
    }
    if (!have[0] || !have[1])
        return cpu_error(PL_CODE_INVALID_ARGUMENT, k->base.op, "the run lacks starts or ends");
    shp_strided plan = {.esize = k->in_esize};
    SHP_TRY(shp_slice_plan(k->base.op, s->x_dims, s->rank, s->o_dims, v[0], v[1],
                                      have[2] ? v[2] : NULL, have[3] ? v[3] : NULL, n, &plan));
    shp_strided_run(ctx, &plan, shp_in(args, 0), dst);
    return NULL;
}

pl_status *shp_build_slice(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    const char *op = node->op;
    const int r = x->ndim;
    if (o->ndim != r)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "the output's rank %d is not the input's %d",
                         o->ndim, r);
    bool v10 = shp_opset(node) >= 10;
    int64_t v[4][SHP_MAX_INTS];
    size_t n[4] = {0};
    int state[4] = {0};
    static const char *const attrs[4] = {"starts", "ends", "axes", NULL};
    for (size_t i = 0; i < 4; i++) {
        if (v10 && !shp_input_present(node, 1 + i))
            continue;
        if (v10 && !PL_DTYPE_EQ(node->inputs[1 + i].dtype, PL_DTYPE_I64) &&
            !PL_DTYPE_EQ(node->inputs[1 + i].dtype, PL_DTYPE_I32))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "input %zu is not i64 or i32", 1 + i);
        SHP_TRY(shp_ints_arg(node, v10 ? 1 + i : SIZE_MAX, attrs[i], v[i], &n[i],
                                        &state[i]));
    }
    if (state[0] == 0 || state[1] == 0)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "starts and ends are required");
    shp_strided_kernel *k;
    SHP_TRY(shp_strided_alloc(ctx, node, &k));
    k->plan.esize = k->k.in_esize;
    bool dynamic = false;
    for (size_t i = 0; i < 4; i++)
        dynamic = dynamic || state[i] < 0;
    if (dynamic) {
        k->dynamic = true;
        k->k.write = shp_slice_dynamic_write;
        k->rank = r;
        for (int d = 0; d < r; d++) {
            k->x_dims[d] = x->shape[d];
            k->o_dims[d] = o->shape[d];
        }
        for (size_t i = 0; i < 4; i++)
            if (shp_input_present(node, 1 + i))
                k->arg_dtype[i] = node->inputs[1 + i].dtype;
        *out_kernel = &k->k.base;
        return NULL;
    }
    pl_status *st = NULL;
    if (n[1] != n[0] || (state[2] == 1 && n[2] != n[0]) || (state[3] == 1 && n[3] != n[0]))
        st = cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                       "starts, ends, axes and steps have different lengths");
    if (st == NULL)
        st = shp_slice_plan(op, x->shape, r, o->shape, v[0], v[1], state[2] == 1 ? v[2] : NULL,
                            state[3] == 1 ? v[3] : NULL, n[0], &k->plan);
    if (st != NULL) {
        cpu_kernel_release(ctx, &k->k.base);
        return st;
    }
    k->k.base.n_reads = 1;
    *out_kernel = &k->k.base;
    return NULL;
}
