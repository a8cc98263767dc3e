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

typedef struct nms_cand {
    float score;
    uint32_t index;
} nms_cand;

/* Higher score first; equal scores by lower index (qsort's order). */
static int nms_cmp(const void *pa, const void *pb)
{
    const nms_cand *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
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

/* Whether A and B overlap by more than THRESHOLD (IoU). */
static bool nms_suppresses(const nms_box *a, const nms_box *b, float threshold)
{
    float x0 = a->x0 > b->x0 ? a->x0 : b->x0, x1 = a->x1 < b->x1 ? a->x1 : b->x1;
    float y0 = a->y0 > b->y0 ? a->y0 : b->y0, y1 = a->y1 < b->y1 ? a->y1 : b->y1;
    if (x1 <= x0 || y1 <= y0 || a->area <= 0 || b->area <= 0)
        return false;
    float inter = (x1 - x0) * (y1 - y0), uni = a->area + b->area - inter;
    return uni > 0 && inter / uni > threshold;
}

static float nms_scalar(const pl_run_args *args, size_t i, float def)
{
    if (i >= args->n_inputs || args->inputs[i].data == NULL)
        return def;
    float v;
    memcpy(&v, shp_in(args, i), sizeof v);
    return v;
}

/* Runs the selection into ROWS (NULL: only counts) and gives the count. */
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
    nms_cand *cand = cpu_host->host_alloc(ctx->host_ctx, n * sizeof *cand, 0);
    uint32_t *kept = cpu_host->host_alloc(ctx->host_ctx, per * sizeof *kept, 0);
    if (box == NULL || cand == NULL || kept == NULL) {
        cpu_host->host_free(ctx->host_ctx, box);
        cpu_host->host_free(ctx->host_ctx, cand);
        cpu_host->host_free(ctx->host_ctx, kept);
        return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory");
    }
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
                    cand[nc++] = (nms_cand){s[i], (uint32_t)i};
            if (count < 0)
                break;
            qsort(cand, nc, sizeof *cand, nms_cmp);
            size_t nk = 0;
            for (size_t i = 0; i < nc && nk < per; i++) {
                bool keep = true;
                for (size_t j = 0; j < nk && keep; j++)
                    keep = !nms_suppresses(&box[cand[i].index], &box[kept[j]], iou);
                if (!keep)
                    continue;
                if ((size_t)count >= k->rows) { /* max_output_boxes_per_class changed */
                    count = -1;
                    break;
                }
                kept[nk++] = cand[i].index;
                if (rows != NULL) {
                    rows[count * 3] = (int64_t)b;
                    rows[count * 3 + 1] = (int64_t)c;
                    rows[count * 3 + 2] = (int64_t)cand[i].index;
                }
                count++;
            }
        }
    }
    cpu_host->host_free(ctx->host_ctx, box);
    cpu_host->host_free(ctx->host_ctx, cand);
    cpu_host->host_free(ctx->host_ctx, kept);
    if (count < 0)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "selects more than the %zu rows planned for its "
                         "max_output_boxes_per_class",
                         k->rows);
    *out_count = count;
    return NULL;
}

static pl_status *nms_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                            const pl_run_args *args, size_t o, void *dst,
                            pl_output_request req)
{
    (void)req;
    const nms_kernel *k = (const nms_kernel *)kernel;
    int64_t count = 0;
    if (o == 0) {
        /* rows past the count are left as -1 (nothing reads them: the
         * core's Slice takes count rows) */
        memset(dst, 0xff, k->rows * 3 * sizeof(int64_t));
        return nms_select(ctx, k, args, dst, &count);
    }
    pl_status *st = nms_select(ctx, k, args, NULL, &count);
    if (st == NULL)
        memcpy(dst, &count, sizeof count);
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
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, nms_write, (shp_kernel **)&k));
    k->batches = (size_t)bx->shape[0];
    k->boxes = (size_t)bx->shape[1];
    k->classes = (size_t)sc->shape[1];
    k->rows = (size_t)node->outputs[0].shape[0];
    k->center = center == 1;
    *out_kernel = &k->k.base;
    return NULL;
}
