/* nms.c — the cpu module's non-maximum suppression: ai.plinth
 * NonMaxSuppressionPadded, the form the core lowers ONNX's
 * NonMaxSuppression to (the selection in rows of a buffer of the most it
 * can select, then their count; the core slices the rows). Selection as
 * ONNX Runtime makes it: per batch and class, the boxes above
 * score_threshold in descending score (equal scores: lower index first),
 * each kept unless its IoU with a box kept before exceeds iou_threshold,
 * at most max_output_boxes_per_class; coordinates in f32, corners in
 * either order, a box of no area suppressing nothing. */
#include <stdlib.h>
#include <string.h>

#include "fastmath.h"
#include "index_kernel.h"

static pl_status *nms_build(pl_module_ctx *ctx, const pl_node_desc *node,
                            pl_kernel **out_kernel);

const cpu_op_entry cpu_ops_detect[] = {
    {"NonMaxSuppressionPadded", nms_build, 2, 5, 0, CPU_OP_ANY_DTYPE | CPU_OP_MULTI_OUTPUT |
                                                    CPU_OP_PLINTH_DOMAIN},
    {NULL, NULL, 0, 0, 0, 0},
};

typedef struct nms_kernel {
    shp_kernel k;
    size_t batches, classes, boxes, rows;
    bool center;
} nms_kernel;

typedef struct nms_box {
    float x0, y0, x1, y1, area;
} nms_box;

/* A candidate's sort key: higher score first, then lower index. */
static inline uint64_t nms_key(float score, uint32_t index)
{
    return (uint64_t)ix_f32_order(score) << 32 | (UINT32_MAX - index);
}

static nms_box nms_corners(const float *b, bool center)
{
    nms_box r;
    if (center) {
        float hw = b[2] / 2, hh = b[3] / 2;
        r = (nms_box){b[0] - hw, b[1] - hh, b[0] + hw, b[1] + hh, 0};
    } else { /* [y1, x1, y2, x2], either corner first */
        r = (nms_box){b[1] < b[3] ? b[1] : b[3], b[0] < b[2] ? b[0] : b[2],
                      b[1] < b[3] ? b[3] : b[1], b[0] < b[2] ? b[2] : b[0], 0};
    }
    r.area = (r.x1 - r.x0) * (r.y1 - r.y0);
    return r;
}

/* The boxes kept so far, one array per coordinate (the test below runs
 * over them in vector lanes). */
typedef struct nms_kept {
    float *x0, *y0, *x1, *y1, *area;
    size_t n;
} nms_kept;

/* Whether kept box J overlaps A by more than THRESHOLD (IoU): the
 * intersection's sides positive, both areas positive, the union positive
 * and intersection / union above it, in f32 as ONNX Runtime computes it.
 * Without branches, so that the loop below vectorises. */
static inline bool nms_overlaps(const nms_box *a, const nms_kept *k, size_t j, float threshold)
{
    float x0 = a->x0 > k->x0[j] ? a->x0 : k->x0[j];
    float x1 = a->x1 < k->x1[j] ? a->x1 : k->x1[j];
    float y0 = a->y0 > k->y0[j] ? a->y0 : k->y0[j];
    float y1 = a->y1 < k->y1[j] ? a->y1 : k->y1[j];
    float inter = (x1 - x0) * (y1 - y0), uni = a->area + k->area[j] - inter;
    return (x1 > x0) & (y1 > y0) & (a->area > 0) & (k->area[j] > 0) & (uni > 0) &
           (inter / uni > threshold);
}

/* Whether a kept box overlaps A by more than THRESHOLD (nms_overlaps), in
 * blocks of 64 without an early exit inside. */
CPU_CLONES static bool nms_suppressed(const nms_box *a, const nms_kept *k, float threshold)
{
    for (size_t j0 = 0; j0 < k->n; j0 += 64) {
        size_t end = j0 + 64 < k->n ? j0 + 64 : k->n;
        int any = 0;
        for (size_t j = j0; j < end; j++)
            any |= nms_overlaps(a, k, j, threshold);
        if (any)
            return true;
    }
    return false;
}

/* The kept boxes bucketed by x (nms_grid): a box overlaps another only
 * where their x ranges do, so a candidate is tested only against the kept
 * boxes of the buckets its own range covers, with the same test and so the
 * same selection. torchvision's batched NMS shifts each class's boxes
 * apart (its coordinate trick) and sends thousands at once: SSDlite's
 * selection tested every candidate against every kept box of every class,
 * 30% of its run. Boxes with a coordinate that is not finite, or wider
 * than NMS_GRID_WIDE buckets, are tested against every candidate. */
#define NMS_GRID_MIN 256 /* candidates below which every kept box is tested */
#define NMS_GRID_WIDE 64

typedef struct nms_grid {
    size_t buckets, cap_buckets; /* in use for this class; allocated */
    float lo, inv; /* bucket of x: (x - lo) * inv */
    int32_t *head; /* per bucket: the last entry, -1: none */
    int32_t *next, *item; /* entries: the one before in the bucket, the kept box */
    size_t n_entries, cap;
    uint32_t *wide; /* kept boxes tested against every candidate */
    size_t n_wide;
    uint32_t *seen; /* per kept box: the last candidate it was tested against, + 1 */
} nms_grid;

static inline bool nms_finite(const nms_box *a)
{
    return a->x0 - a->x0 == 0 && a->x1 - a->x1 == 0 && a->y0 - a->y0 == 0 &&
           a->y1 - a->y1 == 0;
}

static inline size_t nms_bucket(const nms_grid *g, float x)
{
    float f = (x - g->lo) * g->inv;
    return f <= 0 ? 0 : f >= (float)(g->buckets - 1) ? g->buckets - 1 : (size_t)f;
}

/* Whether box A (not finite or wider than the grid takes: WIDE) is to be
 * tested against every kept box. */
static inline bool nms_wide(const nms_grid *g, const nms_box *a)
{
    return !nms_finite(a) || nms_bucket(g, a->x1) - nms_bucket(g, a->x0) >= NMS_GRID_WIDE;
}

/* nms_suppressed through the grid: candidate number STAMP (from 1). */
static bool nms_grid_suppressed(nms_grid *g, const nms_box *a, const nms_kept *k,
                                float threshold, uint32_t stamp)
{
    if (!(a->area > 0))
        return false; /* the test needs A's area positive */
    for (size_t w = 0; w < g->n_wide; w++) {
        g->seen[g->wide[w]] = stamp;
        if (nms_overlaps(a, k, g->wide[w], threshold))
            return true;
    }
    if (nms_wide(g, a)) { /* every kept box */
        for (size_t j = 0; j < k->n; j++)
            if (g->seen[j] != stamp && nms_overlaps(a, k, j, threshold))
                return true;
        return false;
    }
    size_t b1 = nms_bucket(g, a->x1);
    for (size_t b = nms_bucket(g, a->x0); b <= b1; b++)
        for (int32_t e = g->head[b]; e >= 0; e = g->next[e]) {
            uint32_t j = (uint32_t)g->item[e];
            if (g->seen[j] == stamp)
                continue;
            g->seen[j] = stamp;
            if (nms_overlaps(a, k, j, threshold))
                return true;
        }
    return false;
}

/* Adds kept box J (A) to the grid; false when out of memory. */
static bool nms_grid_add(pl_module_ctx *ctx, nms_grid *g, const nms_box *a, uint32_t j)
{
    if (nms_wide(g, a)) {
        g->wide[g->n_wide++] = j;
        return true;
    }
    size_t b0 = nms_bucket(g, a->x0), b1 = nms_bucket(g, a->x1);
    if (g->n_entries + (b1 - b0 + 1) > g->cap) {
        size_t cap = 2 * g->cap + (b1 - b0 + 1);
        int32_t *next = cpu_host->host_alloc(ctx->host_ctx, cap * sizeof *next, 0);
        int32_t *item = cpu_host->host_alloc(ctx->host_ctx, cap * sizeof *item, 0);
        if (next == NULL || item == NULL) {
            cpu_host->host_free(ctx->host_ctx, next);
            cpu_host->host_free(ctx->host_ctx, item);
            return false;
        }
        if (g->n_entries > 0) {
            memcpy(next, g->next, g->n_entries * sizeof *next);
            memcpy(item, g->item, g->n_entries * sizeof *item);
        }
        cpu_host->host_free(ctx->host_ctx, g->next);
        cpu_host->host_free(ctx->host_ctx, g->item);
        g->next = next;
        g->item = item;
        g->cap = cap;
    }
    for (size_t b = b0; b <= b1; b++) {
        g->item[g->n_entries] = (int32_t)j;
        g->next[g->n_entries] = g->head[b];
        g->head[b] = (int32_t)g->n_entries++;
    }
    return true;
}

/* Empties G for the candidates CAND (NC of them, boxes BOX) of one class:
 * buckets over the x range of their finite boxes; false when they are too
 * few to be worth it or their range is not usable. */
static bool nms_grid_reset(nms_grid *g, const nms_box *box, const uint64_t *cand, size_t nc)
{
    if (g->head == NULL || nc < NMS_GRID_MIN)
        return false;
    float lo = 0, hi = 0;
    double width = 0;
    size_t finite = 0;
    for (size_t i = 0; i < nc; i++) {
        const nms_box *a = &box[UINT32_MAX - (uint32_t)cand[i]];
        if (!nms_finite(a))
            continue;
        lo = finite == 0 || a->x0 < lo ? a->x0 : lo;
        hi = finite == 0 || a->x1 > hi ? a->x1 : hi;
        width += (double)a->x1 - (double)a->x0;
        finite++;
    }
    float span = hi - lo;
    if (finite == 0 || !(span > 0) || span - span != 0)
        return false;
    /* buckets about as wide as the boxes on average, so that a box falls
     * in one or two of them: narrower ones put a big box in many buckets
     * and a candidate walks all of their entries (Mask R-CNN's proposals,
     * at a fifth of the image each, took 2.1 s more with 4096 buckets) */
    double mean = width / (double)finite, fit = mean > 0 ? (double)span / mean : 1.0;
    size_t buckets = fit < 1.0 ? 1 : fit > (double)g->cap_buckets ? g->cap_buckets : (size_t)fit;
    g->buckets = buckets;
    g->lo = lo;
    g->inv = (float)g->buckets / span;
    if (g->inv - g->inv != 0 || !(g->inv > 0))
        return false;
    for (size_t b = 0; b < g->buckets; b++)
        g->head[b] = -1;
    g->n_entries = 0;
    g->n_wide = 0;
    return true;
}

static float nms_scalar(const pl_run_args *args, size_t i, float def)
{
    if (i >= args->n_inputs || args->inputs[i].data == NULL)
        return def;
    float v;
    memcpy(&v, shp_in(args, i), sizeof v);
    return v;
}

/* Runs the selection into ROWS and gives the count. */
static pl_status *nms_select(pl_module_ctx *ctx, const nms_kernel *k, const pl_run_args *args,
                             int64_t *rows, int64_t *out_count)
{
    const char *op = k->k.base.op;
    int64_t max_out = 0;
    if (args->n_inputs > 2 && args->inputs[2].data != NULL)
        memcpy(&max_out, shp_in(args, 2), sizeof max_out);
    float iou = nms_scalar(args, 3, 0.0f);
    bool thresholded = args->n_inputs > 4 && args->inputs[4].data != NULL;
    float min_score = nms_scalar(args, 4, 0.0f);
    if (!(iou >= 0.0f && iou <= 1.0f))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "iou_threshold %g is outside [0, 1]",
                         (double)iou);
    *out_count = 0;
    size_t n = k->boxes, per = max_out <= 0 ? 0 : (uint64_t)max_out < n ? (size_t)max_out : n;
    if (per == 0 || n == 0)
        return NULL;
    nms_box *box = cpu_host->host_alloc(ctx->host_ctx, n * sizeof *box, 0);
    uint64_t *cand = cpu_host->host_alloc(ctx->host_ctx, 2 * n * sizeof *cand, 0);
    float *kf = cpu_host->host_alloc(ctx->host_ctx, per * 5 * sizeof *kf, 0);
    if (box == NULL || cand == NULL || kf == NULL) {
        cpu_host->host_free(ctx->host_ctx, box);
        cpu_host->host_free(ctx->host_ctx, cand);
        cpu_host->host_free(ctx->host_ctx, kf);
        return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory");
    }
    nms_kept kept = {kf, kf + per, kf + 2 * per, kf + 3 * per, kf + 4 * per, 0};
    /* the grid, when some class may have enough candidates for it */
    nms_grid grid = {0};
    if (n >= NMS_GRID_MIN) {
        grid.cap_buckets = n < 4096 ? n : 4096;
        grid.head = cpu_host->host_alloc(ctx->host_ctx, grid.cap_buckets * sizeof *grid.head, 0);
        grid.wide = cpu_host->host_alloc(ctx->host_ctx, per * sizeof *grid.wide, 0);
        grid.seen = cpu_host->host_alloc(ctx->host_ctx, per * sizeof *grid.seen, 0);
        if (grid.head == NULL || grid.wide == NULL || grid.seen == NULL) {
            cpu_host->host_free(ctx->host_ctx, grid.head);
            cpu_host->host_free(ctx->host_ctx, grid.wide);
            cpu_host->host_free(ctx->host_ctx, grid.seen);
            grid.head = NULL; /* every kept box tested, as below the minimum */
        }
    }
    bool oom = false;
    const float *boxes = (const float *)shp_in(args, 0);
    const float *scores = (const float *)shp_in(args, 1);
    int64_t count = 0;
    for (size_t b = 0; b < k->batches; b++) {
        for (size_t i = 0; i < n; i++)
            box[i] = nms_corners(boxes + (b * n + i) * 4, k->center);
        for (size_t c = 0; c < k->classes; c++) {
            const float *s = scores + (b * k->classes + c) * n;
            size_t nc = 0;
            for (size_t i = 0; i < n; i++)
                if (!thresholded || s[i] > min_score)
                    cand[nc++] = nms_key(s[i], (uint32_t)i);
            if (count < 0)
                break;
            ix_sort_u64_desc(cand, nc, cand + n);
            kept.n = 0;
            bool gridded = nms_grid_reset(&grid, box, cand, nc);
            if (gridded)
                memset(grid.seen, 0, per * sizeof *grid.seen);
            for (size_t i = 0; i < nc && kept.n < per; i++) {
                uint32_t index = UINT32_MAX - (uint32_t)cand[i];
                const nms_box *a = &box[index];
                if (gridded ? nms_grid_suppressed(&grid, a, &kept, iou, (uint32_t)i + 1)
                            : nms_suppressed(a, &kept, iou))
                    continue;
                if (gridded && !nms_grid_add(ctx, &grid, a, (uint32_t)kept.n)) {
                    oom = true;
                    count = -1;
                    break;
                }
                if ((size_t)count >= k->rows) { /* max_output_boxes_per_class changed */
                    count = -1;
                    break;
                }
                kept.x0[kept.n] = a->x0;
                kept.y0[kept.n] = a->y0;
                kept.x1[kept.n] = a->x1;
                kept.y1[kept.n] = a->y1;
                kept.area[kept.n++] = a->area;
                rows[count * 3] = (int64_t)b;
                rows[count * 3 + 1] = (int64_t)c;
                rows[count * 3 + 2] = (int64_t)index;
                count++;
            }
        }
    }
    cpu_host->host_free(ctx->host_ctx, box);
    cpu_host->host_free(ctx->host_ctx, cand);
    cpu_host->host_free(ctx->host_ctx, kf);
    cpu_host->host_free(ctx->host_ctx, grid.head);
    cpu_host->host_free(ctx->host_ctx, grid.wide);
    cpu_host->host_free(ctx->host_ctx, grid.seen);
    cpu_host->host_free(ctx->host_ctx, grid.next);
    cpu_host->host_free(ctx->host_ctx, grid.item);
    if (oom)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory");
    if (count < 0)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "selects more than the %zu rows planned for its "
                         "max_output_boxes_per_class",
                         k->rows);
    *out_count = count;
    return NULL;
}

/* Runs the selection once for both outputs (the rows past the count left
 * -1: nothing reads them, the core's Slice takes count rows). */
static pl_status *nms_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    const nms_kernel *k = (const nms_kernel *)kernel;
    for (size_t i = 0; i < 2; i++)
        if (args->requests[i] != PL_REQ_WRITE || args->outputs[i].data == NULL)
            return cpu_error(PL_CODE_UNSUPPORTED, kernel->op,
                             "output %zu must be written in full, once", i);
    for (size_t i = 0; i < 2; i++)
        if (args->inputs[i].data == NULL && k->boxes > 0)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->op, "input %zu has no data", i);
    int64_t *rows = (int64_t *)((char *)args->outputs[0].data + args->outputs[0].byte_offset);
    memset(rows, 0xff, k->rows * 3 * sizeof *rows);
    int64_t count = 0;
    pl_status *st = nms_select(ctx, k, args, rows, &count);
    if (st == NULL)
        memcpy((char *)args->outputs[1].data + args->outputs[1].byte_offset, &count,
               sizeof count);
    return st;
}

static pl_status *nms_build(pl_module_ctx *ctx, const pl_node_desc *node,
                            pl_kernel **out_kernel)
{
    const char *op = node->op;
    const pl_tensor *bx = &node->inputs[0], *sc = &node->inputs[1];
    int64_t center;
    SHP_TRY(cpu_attr_int(node, "center_point_box", 0, &center));
    if (center != 0 && center != 1)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "center_point_box %lld is not 0 or 1",
                         (long long)center);
    bool ok = PL_DTYPE_EQ(bx->dtype, PL_DTYPE_F32) && PL_DTYPE_EQ(sc->dtype, PL_DTYPE_F32);
    for (size_t i = 2; ok && i < node->n_inputs; i++)
        ok = !shp_input_present(node, i) ||
             (PL_DTYPE_EQ(node->inputs[i].dtype, i == 2 ? PL_DTYPE_I64 : PL_DTYPE_F32) &&
              (node->inputs[i].ndim == 0 ||
               (node->inputs[i].ndim == 1 && node->inputs[i].shape[0] == 1)));
    if (!ok)
        return cpu_error(PL_CODE_UNSUPPORTED, op,
                         "boxes and scores must be f32, max_output_boxes_per_class one i64, "
                         "the thresholds one f32 each");
    ok = bx->ndim == 3 && sc->ndim == 3 && bx->shape[2] == 4 && sc->shape[0] == bx->shape[0] &&
         sc->shape[2] == bx->shape[1] && bx->shape[1] < (int64_t)UINT32_MAX &&
         node->n_outputs == 2 && node->outputs[0].ndim == 2 && node->outputs[0].shape[1] == 3;
    if (!ok)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "boxes [B, N, 4], scores [B, C, N] and rows [R, 3] do not fit");
    nms_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, NULL, (shp_kernel **)&k));
    k->k.base.run_any = nms_run;
    k->batches = (size_t)bx->shape[0];
    k->boxes = (size_t)bx->shape[1];
    k->classes = (size_t)sc->shape[1];
    k->rows = (size_t)node->outputs[0].shape[0];
    k->center = center == 1;
    *out_kernel = &k->k.base;
    return NULL;
}
