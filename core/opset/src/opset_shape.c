/* opset_shape.c — schemas of the ops that move data without arithmetic or
 * that compute shapes: Reshape, Flatten, Transpose, Concat, Split, Slice,
 * Squeeze, Unsqueeze, Gather, Constant, Shape, Expand, Pad, Resize,
 * ConstantOfShape, Range and Tile. Most of them also carry known values,
 * since exported models compute the shapes they reshape to with
 * Shape -> Gather -> Unsqueeze -> Concat chains. */
#include <math.h>
#include <string.h>

#include "alloc.h"
#include "opset_internal.h"

#define SH_ALL_KNOWN(n) ((n) < 64 ? (UINT64_C(1) << (n)) - 1 : UINT64_MAX)

/* Element count of DIMS, -1 when unknown or overflowing int64. */
static int64_t sh_count(const int64_t *dims, int32_t ndim)
{
    int64_t n = 1;
    for (int32_t d = 0; d < ndim; d++) {
        if (dims[d] < 0 || __builtin_mul_overflow(n, dims[d], &n))
            return -1;
    }
    return n;
}

/* Passes the known values of input 0 on to output 0 when the output has
 * the same element count (Reshape, Squeeze, Unsqueeze, Flatten keep the
 * row-major order): shapes, and the small constant tables exporters
 * compute pads from (PyTorch's F.pad reshapes and reverses one). */
static pl_status *sh_pass_known(pl_infer_ctx *ctx, int32_t rank,
                                const int64_t *dims)
{
    const int64_t *v;
    uint64_t mask;
    size_t n;
    if (rank < 0 || !pl_infer_known_ints(ctx, 0, &v, &mask, &n))
        return NULL;
    int64_t count = 1;
    for (int32_t d = 0; d < rank; d++) {
        if (dims[d] < 0 || dims[d] > PL_KNOWN_MAX)
            return NULL;
        count *= dims[d];
    }
    if (count != (int64_t)n)
        return NULL;
    return pl_infer_set_known_ints(ctx, 0, v, mask, n);
}

/* The row-major offset in a tensor of RANK dims DIMS of the element whose
 * index along axis d is ORIGIN[d] + STEP[d] * at[d], where AT is element
 * E's index in the output of OUT_DIMS (Slice, Transpose's inverse walk). */
static int64_t sh_known_source(int32_t rank, const int64_t *dims, const int64_t *out_dims,
                               const int64_t *origin, const int64_t *step, const int64_t *axis_of,
                               int64_t e)
{
    int64_t at[PL_GRAPH_MAX_RANK];
    for (int32_t d = rank - 1; d >= 0; d--) {
        at[d] = e % out_dims[d];
        e /= out_dims[d];
    }
    int64_t off = 0;
    for (int32_t d = 0; d < rank; d++) {
        int64_t ax = axis_of[d];
        off = off * dims[d] + origin[d] + step[d] * at[ax];
    }
    return off;
}

/* Known values of output 0 gathered from input 0's (all RANK dims DIMS
 * known) as sh_known_source maps them; nothing when input 0 has none. */
static pl_status *sh_gather_known(pl_infer_ctx *ctx, int32_t rank, const int64_t *dims,
                                  const int64_t *out_dims, const int64_t *origin,
                                  const int64_t *step, const int64_t *axis_of)
{
    const int64_t *v;
    uint64_t mask;
    size_t n;
    if (rank < 1 || !pl_infer_known_ints(ctx, 0, &v, &mask, &n))
        return NULL;
    int64_t count = 1;
    for (int32_t d = 0; d < rank; d++) {
        if (dims[d] < 0 || out_dims[d] < 0 || out_dims[d] > PL_KNOWN_MAX)
            return NULL;
        count *= out_dims[d];
    }
    if (count > PL_KNOWN_MAX)
        return NULL;
    int64_t out[PL_KNOWN_MAX];
    uint64_t out_mask = 0;
    for (int64_t e = 0; e < count; e++) {
        int64_t src = sh_known_source(rank, dims, out_dims, origin, step, axis_of, e);
        bool ok = src >= 0 && (size_t)src < n && ((mask >> src) & 1);
        out[e] = ok ? v[src] : 0;
        if (ok)
            out_mask |= UINT64_C(1) << e;
    }
    return pl_infer_set_known_ints(ctx, 0, out, out_mask, (size_t)count);
}

/* ---- Reshape, Flatten, Transpose ---------------------------------------- */

static pl_status *sh_infer_reshape(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    const pl_graph_tensor *shape = pl_infer_input(ctx, 1);
    char sx[160], ss[160];
    if (shape->ndim >= 0 && shape->ndim != 1)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "shape ('%s') must be a vector, it is %s",
                              shape->name,
                              pl_dims_format(shape->dims, shape->ndim, ss, sizeof ss));
    const int64_t *v;
    uint64_t mask;
    size_t n;
    int64_t dims[PL_GRAPH_MAX_RANK];
    const char *params[PL_GRAPH_MAX_RANK] = {0};
    if (!pl_infer_known_ints(ctx, 1, &v, &mask, &n)) {
        if (shape->ndim != 1 || shape->dims[0] < 0)
            return NULL;
        if (shape->dims[0] > PL_GRAPH_MAX_RANK)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "target rank %lld exceeds %d",
                                  (long long)shape->dims[0], PL_GRAPH_MAX_RANK);
        for (int64_t d = 0; d < shape->dims[0]; d++)
            dims[d] = -1;
        return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN,
                                   (int32_t)shape->dims[0], dims, NULL);
    }
    if (n > PL_GRAPH_MAX_RANK)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "target rank %zu exceeds %d", n, PL_GRAPH_MAX_RANK);
    bool allowzero = pl_infer_attr_int(ctx, "allowzero") != 0;
    int infer_at = -1;
    bool has_zero = false;
    for (size_t i = 0; i < n; i++) {
        params[i] = NULL;
        if (!((mask >> i) & 1)) {
            dims[i] = -1;
            continue;
        }
        int64_t s = v[i];
        if (s == 0 && !allowzero) {
            if (x->ndim >= 0 && (int32_t)i >= x->ndim)
                return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                      "shape value 0 at index %zu copies a "
                                      "dimension that X %s does not have", i,
                                      pl_dims_format(x->dims, x->ndim, sx, sizeof sx));
            dims[i] = x->ndim >= 0 ? x->dims[i] : -1;
            params[i] = x->ndim >= 0 && x->dim_params ? x->dim_params[i] : NULL;
        } else if (s == -1) {
            if (infer_at >= 0)
                return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                      "shape has more than one -1 (at %d and %zu)",
                                      infer_at, i);
            infer_at = (int)i;
            dims[i] = -1;
        } else if (s < -1) {
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "shape value %lld at index %zu is invalid",
                                  (long long)s, i);
        } else {
            has_zero = has_zero || s == 0;
            dims[i] = s;
        }
    }
    if (allowzero && has_zero && infer_at >= 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "shape cannot hold both 0 and -1 with allowzero");
    int64_t total = x->ndim >= 0 ? sh_count(x->dims, x->ndim) : -1;
    int64_t known = 1;
    bool all_known = true;
    for (size_t i = 0; i < n; i++) {
        if ((int)i == infer_at)
            continue;
        if (dims[i] < 0 || __builtin_mul_overflow(known, dims[i], &known))
            all_known = false;
    }
    if (total >= 0 && all_known) {
        char so[160];
        if (infer_at >= 0) {
            if (known == 0 ? total != 0 : total % known != 0)
                return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                      "cannot reshape %s (%lld elements) into %s",
                                      pl_dims_format(x->dims, x->ndim, sx, sizeof sx),
                                      (long long)total,
                                      pl_dims_format(v, (int32_t)n, so, sizeof so));
            dims[infer_at] = known == 0 ? 0 : total / known;
        } else if (known != total) {
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "cannot reshape %s (%lld elements) into %s "
                                  "(%lld elements)",
                                  pl_dims_format(x->dims, x->ndim, sx, sizeof sx),
                                  (long long)total,
                                  pl_dims_format(dims, (int32_t)n, so, sizeof so),
                                  (long long)known);
        }
    }
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, (int32_t)n,
                                           dims, params));
    return sh_pass_known(ctx, (int32_t)n, dims);
}

static pl_status *sh_infer_flatten(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    if (x->ndim < 0)
        return NULL;
    int64_t axis = pl_infer_attr_int(ctx, "axis");
    if (axis < -x->ndim || axis > x->ndim)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "axis %lld is out of range for rank %d",
                              (long long)axis, (int)x->ndim);
    if (axis < 0)
        axis += x->ndim;
    int64_t dims[2] = {sh_count(x->dims, (int32_t)axis),
                       sh_count(x->dims + axis, x->ndim - (int32_t)axis)};
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, 2, dims, NULL);
}

static pl_status *sh_infer_transpose(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    if (x->ndim < 0)
        return NULL;
    const int64_t *perm;
    size_t n;
    int64_t rev[PL_GRAPH_MAX_RANK];
    if (!pl_infer_attr_ints(ctx, "perm", &perm, &n)) {
        for (int32_t d = 0; d < x->ndim; d++)
            rev[d] = x->ndim - 1 - d;
        perm = rev;
        n = (size_t)x->ndim;
    }
    if (n != (size_t)x->ndim)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "perm has %zu values but the input has rank %d",
                              n, (int)x->ndim);
    bool seen[PL_GRAPH_MAX_RANK] = {false};
    int64_t dims[PL_GRAPH_MAX_RANK];
    const char *params[PL_GRAPH_MAX_RANK];
    for (size_t i = 0; i < n; i++) {
        int64_t p;
        if (!pl_infer_axis(perm[i], x->ndim, &p) || seen[p])
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "perm is not a permutation of 0..%d (value "
                                  "%lld at %zu)", (int)x->ndim - 1,
                                  (long long)perm[i], i);
        seen[p] = true;
        dims[i] = x->dims[p];
        params[i] = x->dim_params ? x->dim_params[p] : NULL;
    }
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, x->ndim, dims, params));
    /* input axis perm[i] is walked by output axis i */
    int64_t origin[PL_GRAPH_MAX_RANK] = {0}, step[PL_GRAPH_MAX_RANK], axis_of[PL_GRAPH_MAX_RANK];
    for (size_t i = 0; i < n; i++) {
        int64_t p;
        pl_infer_axis(perm[i], x->ndim, &p);
        axis_of[p] = (int64_t)i;
        step[p] = 1;
    }
    return sh_gather_known(ctx, x->ndim, x->dims, dims, origin, step, axis_of);
}

/* ---- Concat, Split -------------------------------------------------------- */

static pl_status *sh_infer_concat(pl_infer_ctx *ctx)
{
    size_t n_in = pl_infer_input_count(ctx);
    int32_t rank = -1;
    for (size_t i = 0; i < n_in; i++) {
        int32_t r = pl_infer_input_rank(ctx, i);
        if (r < 0)
            continue;
        if (rank >= 0 && r != rank) {
            char s1[160], s2[160];
            const pl_graph_tensor *a = pl_infer_input(ctx, 0);
            const pl_graph_tensor *b = pl_infer_input(ctx, i);
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "inputs have different ranks: %s and %s",
                                  pl_dims_format(a->dims, a->ndim, s1, sizeof s1),
                                  pl_dims_format(b->dims, b->ndim, s2, sizeof s2));
        }
        rank = r;
    }
    if (rank < 0)
        return NULL;
    int64_t axis = pl_infer_attr_int(ctx, "axis"), a;
    if (!pl_infer_axis(axis, rank, &a))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "axis %lld is out of range for rank %d",
                              (long long)axis, (int)rank);
    int64_t dims[PL_GRAPH_MAX_RANK];
    const char *params[PL_GRAPH_MAX_RANK] = {0};
    for (int32_t d = 0; d < rank; d++)
        dims[d] = d == a ? 0 : -1;
    bool rank_known_all = true;
    for (size_t i = 0; i < n_in; i++) {
        const pl_graph_tensor *t = pl_infer_input(ctx, i);
        if (t->ndim < 0) {
            rank_known_all = false;
            dims[a] = -1;
            continue;
        }
        for (int32_t d = 0; d < rank; d++) {
            int64_t v = t->dims[d];
            if (d == a) {
                if (dims[a] >= 0)
                    dims[a] = v < 0 ? -1 : dims[a] + v;
                continue;
            }
            if (v >= 0 && dims[d] >= 0 && v != dims[d]) {
                char s1[160];
                return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                      "input %zu ('%s') %s has dimension %d = "
                                      "%lld, other inputs have %lld", i,
                                      t->name,
                                      pl_dims_format(t->dims, t->ndim, s1, sizeof s1),
                                      (int)d, (long long)v, (long long)dims[d]);
            }
            if (v >= 0)
                dims[d] = v;
            else if (params[d] == NULL && t->dim_params)
                params[d] = t->dim_params[d];
        }
    }
    for (int32_t d = 0; d < rank; d++)
        if (dims[d] >= 0)
            params[d] = NULL;
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, rank, dims,
                                           params));
    /* Known values of concatenated vectors, element by element. */
    if (rank != 1 || !rank_known_all || dims[0] < 0 || dims[0] > PL_KNOWN_MAX)
        return NULL;
    int64_t out[PL_KNOWN_MAX];
    uint64_t mask = 0;
    size_t pos = 0;
    for (size_t i = 0; i < n_in; i++) {
        const pl_graph_tensor *t = pl_infer_input(ctx, i);
        const int64_t *v;
        uint64_t m;
        size_t n;
        bool known = pl_infer_known_ints(ctx, i, &v, &m, &n);
        for (int64_t e = 0; e < t->dims[0]; e++, pos++) {
            out[pos] = known && (size_t)e < n ? v[e] : 0;
            if (known && (size_t)e < n && ((m >> e) & 1))
                mask |= UINT64_C(1) << pos;
        }
    }
    if (mask == 0)
        return NULL;
    return pl_infer_set_known_ints(ctx, 0, out, mask, pos);
}

static pl_status *sh_infer_split(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    size_t n_out = pl_infer_output_count(ctx);
    int64_t split[PL_KNOWN_MAX];
    size_t n_split;
    int state;
    PL_RETURN_IF_ERROR(pl_infer_ints_arg(ctx, 1, "split", split, &n_split, &state));
    if (pl_infer_has_attr(ctx, "num_outputs")) {
        if (state != 0)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "split and num_outputs cannot both be given");
        if (pl_infer_attr_int(ctx, "num_outputs") != (int64_t)n_out)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "num_outputs is %lld but the node has %zu "
                                  "outputs",
                                  (long long)pl_infer_attr_int(ctx, "num_outputs"),
                                  n_out);
    }
    if (state == 1 && n_split != n_out)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "split has %zu sizes but the node has %zu outputs",
                              n_split, n_out);
    if (x->ndim < 0)
        return NULL;
    int64_t axis = pl_infer_attr_int(ctx, "axis"), a;
    if (!pl_infer_axis(axis, x->ndim, &a))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "axis %lld is out of range for rank %d",
                              (long long)axis, (int)x->ndim);
    int64_t dim = x->dims[a];
    int64_t sizes[PL_KNOWN_MAX];
    if (n_out > PL_KNOWN_MAX)
        return pl_infer_error(ctx, PL_CODE_UNSUPPORTED,
                              "%zu outputs, at most %d are supported", n_out,
                              PL_KNOWN_MAX);
    if (state == 1) {
        int64_t sum = 0;
        for (size_t i = 0; i < n_split; i++) {
            if (split[i] < 0 || __builtin_add_overflow(sum, split[i], &sum))
                return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                      "split size %lld at %zu is invalid",
                                      (long long)split[i], i);
            sizes[i] = split[i];
        }
        if (dim >= 0 && sum != dim)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "split sizes add up to %lld but axis %lld "
                                  "has %lld", (long long)sum, (long long)a,
                                  (long long)dim);
    } else if (state == 0 && dim >= 0) {
        int64_t chunk = dim / (int64_t)n_out;
        if (dim % (int64_t)n_out != 0) {
            if (pl_infer_opset_version(ctx) < 18)
                return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                      "axis %lld of size %lld does not split "
                                      "evenly into %zu outputs", (long long)a,
                                      (long long)dim, n_out);
            chunk++;   /* opset 18: the last chunk is smaller */
        }
        for (size_t i = 0; i < n_out; i++) {
            int64_t left = dim - chunk * (int64_t)i;
            sizes[i] = left < chunk ? (left > 0 ? left : 0) : chunk;
        }
    } else {
        for (size_t i = 0; i < n_out; i++)
            sizes[i] = -1;
    }
    int64_t dims[PL_GRAPH_MAX_RANK];
    memcpy(dims, x->dims, (size_t)x->ndim * sizeof *dims);
    for (size_t i = 0; i < n_out; i++) {
        dims[a] = sizes[i];
        PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, i, PL_DTYPE_UNKNOWN, x->ndim,
                                               dims, NULL));
    }
    return NULL;
}

/* ---- Slice ----------------------------------------------------------------- */

static pl_status *sh_infer_slice(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    int64_t starts[PL_KNOWN_MAX], ends[PL_KNOWN_MAX], axes[PL_KNOWN_MAX],
        steps[PL_KNOWN_MAX];
    size_t ns, ne, na, nst;
    int ss, se, sa, sst;
    PL_RETURN_IF_ERROR(pl_infer_ints_arg(ctx, 1, "starts", starts, &ns, &ss));
    PL_RETURN_IF_ERROR(pl_infer_ints_arg(ctx, 2, "ends", ends, &ne, &se));
    PL_RETURN_IF_ERROR(pl_infer_ints_arg(ctx, 3, "axes", axes, &na, &sa));
    PL_RETURN_IF_ERROR(pl_infer_ints_arg(ctx, 4, NULL, steps, &nst, &sst));
    if (x->ndim < 0)
        return NULL;
    int64_t dims[PL_GRAPH_MAX_RANK];
    const char *params[PL_GRAPH_MAX_RANK] = {0};
    bool sliced[PL_GRAPH_MAX_RANK] = {false};
    if (ss < 0 || se < 0 || sa < 0 || sst < 0) {
        /* Bounds computed at run time: the rank is kept, and if the axes
         * are known the other dims too. */
        for (int32_t d = 0; d < x->ndim; d++)
            dims[d] = -1;
        if (sa == 1)
            for (size_t i = 0; i < na; i++) {
                int64_t a;
                if (pl_infer_axis(axes[i], x->ndim, &a))
                    sliced[a] = true;
            }
        for (int32_t d = 0; sa == 1 && d < x->ndim; d++)
            if (!sliced[d]) {
                dims[d] = x->dims[d];
                params[d] = x->dim_params ? x->dim_params[d] : NULL;
            }
        return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, x->ndim, dims, params);
    }
    if (ns != ne || (sa == 1 && na != ns) || (sst == 1 && nst != ns))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "starts, ends, axes and steps have different "
                              "lengths (%zu, %zu, %zu, %zu)", ns, ne,
                              sa == 1 ? na : ns, sst == 1 ? nst : ns);
    for (int32_t d = 0; d < x->ndim; d++) {
        dims[d] = x->dims[d];
        params[d] = x->dim_params ? x->dim_params[d] : NULL;
    }
    int64_t origin[PL_GRAPH_MAX_RANK] = {0}, stride[PL_GRAPH_MAX_RANK],
        axis_of[PL_GRAPH_MAX_RANK];  /* for known-value propagation */
    for (int32_t d = 0; d < x->ndim; d++)
        stride[d] = 1, axis_of[d] = d;
    for (size_t i = 0; i < ns; i++) {
        int64_t a;
        int64_t axis = sa == 1 ? axes[i] : (int64_t)i;
        if (!pl_infer_axis(axis, x->ndim, &a))
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "axis %lld is out of range for rank %d",
                                  (long long)axis, (int)x->ndim);
        if (sliced[a])
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "axis %lld is sliced twice", (long long)axis);
        sliced[a] = true;
        int64_t step = sst == 1 ? steps[i] : 1;
        if (step == 0)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "step on axis %lld is 0", (long long)axis);
        int64_t d = x->dims[a];
        params[a] = NULL;
        if (d < 0) {
            dims[a] = -1;
            continue;
        }
        int64_t s = starts[i], e = ends[i];
        if (s < 0)
            s += d;
        if (e < 0)
            e += d;
        int64_t len;
        if (step > 0) {
            s = s < 0 ? 0 : s > d ? d : s;
            e = e < 0 ? 0 : e > d ? d : e;
            len = e > s ? (e - s - 1) / step + 1 : 0;
        } else {
            s = s < 0 ? 0 : s > d - 1 ? d - 1 : s;
            e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
            len = s > e ? (s - e - 1) / (-step) + 1 : 0;
        }
        dims[a] = len;
        origin[a] = s;
        stride[a] = step;
    }
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, x->ndim,
                                           dims, params));
    return sh_gather_known(ctx, x->ndim, x->dims, dims, origin, stride, axis_of);
}

/* ---- Squeeze, Unsqueeze ------------------------------------------------------- */

static pl_status *sh_infer_squeeze(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    int64_t axes[PL_KNOWN_MAX];
    size_t na;
    int state;
    PL_RETURN_IF_ERROR(pl_infer_ints_arg(ctx, 1, "axes", axes, &na, &state));
    if (x->ndim < 0 || state < 0)
        return NULL;
    bool drop[PL_GRAPH_MAX_RANK] = {false};
    char sx[160];
    if (state == 1 && na > 0) {
        for (size_t i = 0; i < na; i++) {
            int64_t a;
            if (!pl_infer_axis(axes[i], x->ndim, &a))
                return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                      "axis %lld is out of range for rank %d",
                                      (long long)axes[i], (int)x->ndim);
            if (x->dims[a] >= 0 && x->dims[a] != 1)
                return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                      "cannot squeeze axis %lld of %s: its "
                                      "size is %lld, not 1", (long long)axes[i],
                                      pl_dims_format(x->dims, x->ndim, sx, sizeof sx),
                                      (long long)x->dims[a]);
            drop[a] = true;
        }
    } else {
        for (int32_t d = 0; d < x->ndim; d++) {
            if (x->dims[d] < 0)
                return NULL;   /* which dims are 1 is not known yet */
            drop[d] = x->dims[d] == 1;
        }
    }
    int64_t dims[PL_GRAPH_MAX_RANK];
    const char *params[PL_GRAPH_MAX_RANK];
    int32_t rank = 0;
    for (int32_t d = 0; d < x->ndim; d++) {
        if (drop[d])
            continue;
        params[rank] = x->dim_params ? x->dim_params[d] : NULL;
        dims[rank++] = x->dims[d];
    }
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, rank, dims,
                                           params));
    return sh_pass_known(ctx, rank, dims);
}

static pl_status *sh_infer_unsqueeze(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    int64_t axes[PL_KNOWN_MAX];
    size_t na;
    int state;
    PL_RETURN_IF_ERROR(pl_infer_ints_arg(ctx, 1, "axes", axes, &na, &state));
    if (state == 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "axes are required");
    if (x->ndim < 0 || state < 0)
        return NULL;
    int64_t rank = x->ndim + (int64_t)na;
    if (rank > PL_GRAPH_MAX_RANK)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "result rank %lld exceeds %d", (long long)rank,
                              PL_GRAPH_MAX_RANK);
    bool added[PL_GRAPH_MAX_RANK] = {false};
    for (size_t i = 0; i < na; i++) {
        int64_t a;
        if (!pl_infer_axis(axes[i], rank, &a))
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "axis %lld is out of range for output rank %lld",
                                  (long long)axes[i], (long long)rank);
        if (added[a])
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "axis %lld is given twice", (long long)axes[i]);
        added[a] = true;
    }
    int64_t dims[PL_GRAPH_MAX_RANK];
    const char *params[PL_GRAPH_MAX_RANK];
    int32_t k = 0;
    for (int32_t d = 0; d < rank; d++) {
        params[d] = added[d] || !x->dim_params ? NULL : x->dim_params[k];
        dims[d] = added[d] ? 1 : x->dims[k++];
    }
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN,
                                           (int32_t)rank, dims, params));
    return sh_pass_known(ctx, (int32_t)rank, dims);
}

/* ---- Gather ------------------------------------------------------------------- */

static pl_status *sh_infer_gather(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    const pl_graph_tensor *idx = pl_infer_input(ctx, 1);
    if (x->ndim == 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "data must have rank >= 1, it is a scalar");
    if (x->ndim < 0 || idx->ndim < 0)
        return NULL;
    int64_t axis = pl_infer_attr_int(ctx, "axis"), a;
    if (!pl_infer_axis(axis, x->ndim, &a))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "axis %lld is out of range for rank %d",
                              (long long)axis, (int)x->ndim);
    int32_t rank = x->ndim + idx->ndim - 1;
    if (rank > PL_GRAPH_MAX_RANK)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "result rank %d exceeds %d", (int)rank,
                              PL_GRAPH_MAX_RANK);
    int64_t dims[PL_GRAPH_MAX_RANK];
    const char *params[PL_GRAPH_MAX_RANK];
    int32_t k = 0;
    for (int32_t d = 0; d < x->ndim; d++) {
        if (d == a) {
            for (int32_t q = 0; q < idx->ndim; q++) {
                params[k] = idx->dim_params ? idx->dim_params[q] : NULL;
                dims[k++] = idx->dims[q];
            }
            continue;
        }
        params[k] = x->dim_params ? x->dim_params[d] : NULL;
        dims[k++] = x->dims[d];
    }
    const int64_t *iv;
    uint64_t imask;
    size_t ni;
    int64_t size = x->dims[a];
    bool idx_known = pl_infer_known_ints(ctx, 1, &iv, &imask, &ni);
    for (size_t i = 0; idx_known && size >= 0 && i < ni; i++)
        if (((imask >> i) & 1) && (iv[i] < -size || iv[i] >= size))
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "index %lld is out of range for axis %lld of "
                                  "size %lld", (long long)iv[i], (long long)a,
                                  (long long)size);
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, rank, dims,
                                           params));
    const int64_t *xv;
    uint64_t xmask;
    size_t nx;
    if (!idx_known || x->ndim != 1 || !pl_infer_known_ints(ctx, 0, &xv, &xmask, &nx))
        return NULL;
    int64_t out[PL_KNOWN_MAX];
    uint64_t mask = 0;
    for (size_t i = 0; i < ni; i++) {
        int64_t j = iv[i] < 0 ? iv[i] + (int64_t)nx : iv[i];
        bool ok = ((imask >> i) & 1) && j >= 0 && (size_t)j < nx &&
                  ((xmask >> j) & 1);
        out[i] = ok ? xv[j] : 0;
        if (ok)
            mask |= UINT64_C(1) << i;
    }
    if (mask == 0)
        return NULL;
    return pl_infer_set_known_ints(ctx, 0, out, mask, ni);
}

/* ---- Constant, Shape, ConstantOfShape, Range ------------------------------------ */

/* Records known values of a constant of DTYPE with N elements at DATA. */
static pl_status *sh_known_from_bytes(pl_infer_ctx *ctx, pl_dtype dtype,
                                      const void *data, size_t n)
{
    if (n > PL_KNOWN_MAX)
        return NULL;
    pl_dtype_set bit = pl_dtype_set_of(dtype);
    int64_t iv[PL_KNOWN_MAX];
    double fv[PL_KNOWN_MAX];
    const unsigned char *p = data;
    size_t es = pl_dtype_size(dtype);
    for (size_t e = 0; e < n; e++, p += es) {
        switch (bit) {
        case PL_TS_I64: { int64_t v; memcpy(&v, p, 8); iv[e] = v; break; }
        case PL_TS_I32: { int32_t v; memcpy(&v, p, 4); iv[e] = v; break; }
        case PL_TS_I8: { int8_t v; memcpy(&v, p, 1); iv[e] = v; break; }
        case PL_TS_U8:
        case PL_TS_BOOL: iv[e] = *p; break;
        case PL_TS_F32: { float v; memcpy(&v, p, 4); fv[e] = v; break; }
        case PL_TS_F64: { double v; memcpy(&v, p, 8); fv[e] = v; break; }
        default: return NULL;
        }
    }
    if (bit & (PL_TS_F32 | PL_TS_F64))
        return pl_infer_set_known_floats(ctx, 0, fv, n);
    return pl_infer_set_known_ints(ctx, 0, iv, SH_ALL_KNOWN(n), n);
}

static pl_status *sh_infer_constant(pl_infer_ctx *ctx)
{
    static const char *const kinds[] = {"value", "value_float", "value_floats",
                                        "value_int", "value_ints", "value_string",
                                        "value_strings", "sparse_value"};
    const char *which = NULL;
    for (size_t i = 0; i < PL_COUNT(kinds); i++) {
        if (!pl_infer_has_attr(ctx, kinds[i]))
            continue;
        if (which != NULL)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "attributes '%s' and '%s' are both given; "
                                  "exactly one value is allowed", which,
                                  kinds[i]);
        which = kinds[i];
    }
    if (which == NULL)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "no value attribute (value, value_float, …)");
    const pl_attr *attr = pl_graph_node_attr(pl_infer_node(ctx), which);
    if (strcmp(which, "value") == 0) {
        const pl_attr_tensor *t = attr->tensor;
        size_t n, bytes;
        if (t == NULL || t->ndim < 0 || t->ndim > PL_GRAPH_MAX_RANK ||
            pl_dtype_size(t->dtype) == 0 || !pl_dims_elements(t->dims, t->ndim, &n) ||
            !pl_size_mul(n, pl_dtype_size(t->dtype), &bytes) || bytes != t->nbytes)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "attribute 'value' is not a well-formed "
                                  "tensor of a supported dtype");
        PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, t->dtype, t->ndim,
                                               t->dims, NULL));
        if (t->ndim <= 1)
            return sh_known_from_bytes(ctx, t->dtype, t->data, n);
        return NULL;
    }
    if (strcmp(which, "value_float") == 0 || strcmp(which, "value_int") == 0) {
        bool is_int = which[6] == 'i';
        PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, is_int ? PL_DTYPE_I64
                                                              : PL_DTYPE_F32,
                                               0, NULL, NULL));
        if (is_int)
            return pl_infer_set_known_ints(ctx, 0, &attr->i, 1, 1);
        return pl_infer_set_known_floats(ctx, 0, &attr->f, 1);
    }
    if (strcmp(which, "value_floats") == 0 || strcmp(which, "value_ints") == 0) {
        bool is_int = which[6] == 'i';
        int64_t n = (int64_t)attr->n;
        PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, is_int ? PL_DTYPE_I64
                                                              : PL_DTYPE_F32,
                                               1, &n, NULL));
        if (attr->n > PL_KNOWN_MAX)
            return NULL;
        if (is_int)
            return pl_infer_set_known_ints(ctx, 0, attr->ints,
                                           SH_ALL_KNOWN(attr->n), attr->n);
        return pl_infer_set_known_floats(ctx, 0, attr->floats, attr->n);
    }
    return pl_infer_error(ctx, PL_CODE_UNSUPPORTED,
                          "attribute '%s' is not supported (no string or "
                          "sparse tensors)", which);
}

static pl_status *sh_infer_shape(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    if (x->ndim < 0) {
        int64_t unknown = -1;
        return pl_infer_set_output(ctx, 0, PL_DTYPE_I64, 1, &unknown, NULL);
    }
    /* Opset 15: start and end slice the shape, clamped like Slice. */
    int64_t r = x->ndim;
    int64_t start = pl_infer_attr_int(ctx, "start");
    int64_t end = pl_infer_has_attr(ctx, "end") ? pl_infer_attr_int(ctx, "end") : r;
    if (start < 0)
        start += r;
    if (end < 0)
        end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    int64_t n = end > start ? end - start : 0;
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, PL_DTYPE_I64, 1, &n, NULL));
    int64_t v[PL_GRAPH_MAX_RANK];
    uint64_t mask = 0;
    for (int64_t i = 0; i < n; i++) {
        v[i] = x->dims[start + i];
        if (v[i] >= 0)
            mask |= UINT64_C(1) << i;
    }
    return pl_infer_set_known_ints(ctx, 0, v, mask, (size_t)n);
}

/* The target shape of input I (Expand, ConstantOfShape): rank and dims
 * with -1 for unknown elements. *out_rank -1 when even the length is
 * unknown. */
static pl_status *sh_shape_input(pl_infer_ctx *ctx, size_t i, int64_t *dims,
                                 int32_t *out_rank)
{
    *out_rank = -1;
    const pl_graph_tensor *s = pl_infer_input(ctx, i);
    char ss[160];
    if (s->ndim >= 0 && s->ndim != 1)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "shape ('%s') must be a vector, it is %s", s->name,
                              pl_dims_format(s->dims, s->ndim, ss, sizeof ss));
    const int64_t *v;
    uint64_t mask;
    size_t n;
    bool known = pl_infer_known_ints(ctx, i, &v, &mask, &n);
    int64_t len = known ? (int64_t)n : s->ndim == 1 ? s->dims[0] : -1;
    if (len < 0)
        return NULL;
    if (len > PL_GRAPH_MAX_RANK)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "shape ('%s') has %lld elements, more than rank %d",
                              s->name, (long long)len, PL_GRAPH_MAX_RANK);
    for (int64_t d = 0; d < len; d++) {
        bool k = known && ((mask >> d) & 1);
        if (k && v[d] < 0)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "shape ('%s') value %lld at %lld is negative",
                                  s->name, (long long)v[d], (long long)d);
        dims[d] = k ? v[d] : -1;
    }
    *out_rank = (int32_t)len;
    return NULL;
}

static pl_status *sh_infer_expand(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    int64_t shape[PL_GRAPH_MAX_RANK];
    int32_t sr;
    PL_RETURN_IF_ERROR(sh_shape_input(ctx, 1, shape, &sr));
    if (sr < 0 || x->ndim < 0)
        return NULL;
    int64_t dims[PL_GRAPH_MAX_RANK];
    int rank;
    if (!pl_opset_broadcast(x->dims, x->ndim, shape, sr, dims, &rank)) {
        char a[160], b[160];
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "shapes %s and %s cannot be broadcast",
                              pl_dims_format(x->dims, x->ndim, a, sizeof a),
                              pl_dims_format(shape, sr, b, sizeof b));
    }
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, rank, dims, NULL);
}

static pl_status *sh_infer_constant_of_shape(pl_infer_ctx *ctx)
{
    pl_dtype dt = PL_DTYPE_F32;
    int64_t fill = 0;
    bool fill_known = true; /* the known-ints table holds it */
    const pl_attr *value = pl_graph_node_attr(pl_infer_node(ctx), "value");
    if (value != NULL) {
        const pl_attr_tensor *t = value->tensor;
        size_t n;
        if (t == NULL || pl_dtype_size(t->dtype) == 0 ||
            !pl_dims_elements(t->dims, t->ndim, &n) || n != 1 ||
            t->nbytes != pl_dtype_size(t->dtype))
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "attribute 'value' must be a one-element "
                                  "tensor of a supported dtype");
        dt = t->dtype;
        pl_dtype_set bit = pl_dtype_set_of(dt);
        if (bit == PL_TS_I64) { int64_t v; memcpy(&v, t->data, 8); fill = v; }
        else if (bit == PL_TS_I32) { int32_t v; memcpy(&v, t->data, 4); fill = v; }
        else if (bit & (PL_TS_U8 | PL_TS_I8 | PL_TS_BOOL))
            fill = bit == PL_TS_I8 ? *(const int8_t *)t->data
                                   : *(const uint8_t *)t->data;
        else if (bit == PL_TS_I16) { int16_t v; memcpy(&v, t->data, 2); fill = v; }
        else if (bit == PL_TS_U16) { uint16_t v; memcpy(&v, t->data, 2); fill = v; }
        else if (bit == PL_TS_U32) { uint32_t v; memcpy(&v, t->data, 4); fill = v; }
        else if (bit == PL_TS_U64) {
            uint64_t v;
            memcpy(&v, t->data, 8);
            fill = (int64_t)v;
            fill_known = v <= INT64_MAX;
        }
    }
    int64_t dims[PL_GRAPH_MAX_RANK];
    int32_t rank;
    PL_RETURN_IF_ERROR(sh_shape_input(ctx, 0, dims, &rank));
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, dt, rank, dims, NULL));
    if (rank == 1 && dims[0] >= 0 && dims[0] <= PL_KNOWN_MAX && fill_known &&
        (pl_dtype_set_of(dt) & (PL_TS_INT | PL_TS_BOOL))) {
        int64_t v[PL_KNOWN_MAX];
        for (int64_t e = 0; e < dims[0]; e++)
            v[e] = fill;
        return pl_infer_set_known_ints(ctx, 0, v, SH_ALL_KNOWN((size_t)dims[0]),
                                       (size_t)dims[0]);
    }
    return NULL;
}

/* A known scalar as a double: ints from the int table, floats from the
 * float table. */
static bool sh_known_scalar(const pl_infer_ctx *ctx, size_t i, double *out,
                            int64_t *out_int, bool *out_is_int)
{
    const int64_t *v;
    const double *f;
    uint64_t mask;
    size_t n;
    if (pl_infer_known_ints(ctx, i, &v, &mask, &n) && n == 1 && (mask & 1)) {
        *out = (double)v[0];
        *out_int = v[0];
        *out_is_int = true;
        return true;
    }
    if (pl_infer_known_floats(ctx, i, &f, &n) && n == 1) {
        *out = f[0];
        *out_is_int = false;
        return true;
    }
    return false;
}

static pl_status *sh_infer_range(pl_infer_ctx *ctx)
{
    for (size_t i = 0; i < 3; i++) {
        const pl_graph_tensor *t = pl_infer_input(ctx, i);
        /* A scalar, or one element of a 1-D tensor (ONNX's own AffineGrid
         * expansion passes Split's [1] pieces, through an If whose other
         * branch leaves the length unknown: [?], checked when known). */
        if (t->ndim > 0 && !(t->ndim == 1 && (t->dims[0] == 1 || t->dims[0] < 0))) {
            char s[160];
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "input %zu ('%s') must be a scalar, it is %s",
                                  i, t->name,
                                  pl_dims_format(t->dims, t->ndim, s, sizeof s));
        }
    }
    double st, lim, dl;
    int64_t ist = 0, ilim = 0, idl = 0;
    bool i1 = false, i2 = false, i3 = false;
    int64_t n = -1;
    if (sh_known_scalar(ctx, 0, &st, &ist, &i1) &&
        sh_known_scalar(ctx, 1, &lim, &ilim, &i2) &&
        sh_known_scalar(ctx, 2, &dl, &idl, &i3)) {
        if (dl == 0)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "delta is 0");
        double q = (lim - st) / dl;
        if (!(q < 9.0e18))
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "the range has too many elements");
        /* ceil(q) for q > 0, without libm. */
        n = q > 0 ? (int64_t)q : 0;
        if (q > 0 && (double)n < q)
            n++;
    }
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, 1, &n, NULL));
    if (n >= 0 && n <= PL_KNOWN_MAX && i1 && i2 && i3) {
        int64_t v[PL_KNOWN_MAX];
        for (int64_t e = 0; e < n; e++)
            v[e] = ist + e * idl;
        return pl_infer_set_known_ints(ctx, 0, v, SH_ALL_KNOWN((size_t)n), (size_t)n);
    }
    return NULL;
}

/* ---- Pad, Resize, Tile ----------------------------------------------------------- */

static pl_status *sh_infer_pad(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    const char *mode = pl_infer_attr_string(ctx, "mode");
    bool wrap = strcmp(mode, "wrap") == 0 && pl_infer_opset_version(ctx) >= 19;
    if (strcmp(mode, "constant") != 0 && strcmp(mode, "reflect") != 0 &&
        strcmp(mode, "edge") != 0 && !wrap)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "mode '%s' is not constant, reflect, edge or (from opset 19) wrap",
                              mode);
    const pl_graph_tensor *cv = pl_infer_input(ctx, 2);
    if (cv != NULL && cv->ndim > 0 && sh_count(cv->dims, cv->ndim) != 1)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "constant_value ('%s') must be a scalar", cv->name);
    int64_t pads[PL_KNOWN_MAX], axes[PL_KNOWN_MAX];
    size_t np, na;
    int sp, sa;
    PL_RETURN_IF_ERROR(pl_infer_ints_arg(ctx, 1, "pads", pads, &np, &sp));
    PL_RETURN_IF_ERROR(pl_infer_ints_arg(ctx, 3, NULL, axes, &na, &sa));
    if (x->ndim < 0)
        return NULL;
    int64_t dims[PL_GRAPH_MAX_RANK];
    const char *params[PL_GRAPH_MAX_RANK] = {0};
    if (sp != 1 || sa < 0) {
        for (int32_t d = 0; d < x->ndim; d++)
            dims[d] = -1;
        return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, x->ndim, dims, NULL);
    }
    int64_t ax[PL_GRAPH_MAX_RANK];
    size_t n_ax = sa == 1 ? na : (size_t)x->ndim;
    for (size_t i = 0; i < n_ax; i++) {
        if (sa == 1 && !pl_infer_axis(axes[i], x->ndim, &ax[i]))
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "axis %lld is out of range for rank %d",
                                  (long long)axes[i], (int)x->ndim);
        if (sa != 1)
            ax[i] = (int64_t)i;
    }
    if (np != 2 * n_ax)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "pads has %zu values, expected %zu (begin and end "
                              "for each of %zu axes)", np, 2 * n_ax, n_ax);
    for (int32_t d = 0; d < x->ndim; d++) {
        dims[d] = x->dims[d];
        params[d] = x->dim_params ? x->dim_params[d] : NULL;
    }
    for (size_t i = 0; i < n_ax; i++) {
        int64_t d = x->dims[ax[i]];
        params[ax[i]] = NULL;
        if (d < 0) {
            dims[ax[i]] = -1;
            continue;
        }
        int64_t out = d + pads[i] + pads[i + n_ax];
        if (out < 0)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "pads %lld and %lld on axis %lld of size %lld "
                                  "leave a negative size", (long long)pads[i],
                                  (long long)pads[i + n_ax], (long long)ax[i],
                                  (long long)d);
        dims[ax[i]] = out;
    }
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, x->ndim, dims, params);
}

static pl_status *sh_infer_resize(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    const char *mode = pl_infer_attr_string(ctx, "mode");
    if (strcmp(mode, "nearest") != 0 && strcmp(mode, "linear") != 0 &&
        strcmp(mode, "cubic") != 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "mode '%s' is not nearest, linear or cubic", mode);
    /* Opset 10 has (X, scales); from 11 on (X, roi, scales, sizes). */
    bool v10 = pl_infer_opset_version(ctx) < 11;
    size_t scales_at = v10 ? 1 : 2, sizes_at = 3;
    const double *scales;
    size_t n_scales = 0;
    bool has_scales = pl_infer_input(ctx, scales_at) != NULL;
    bool scales_known = has_scales &&
                        pl_infer_known_floats(ctx, scales_at, &scales, &n_scales);
    /* Upsample 7 (Resize's ancestor) has its scales as an attribute. */
    if (pl_infer_input_count(ctx) == 1 &&
        pl_infer_attr_floats(ctx, "scales", &scales, &n_scales))
        has_scales = scales_known = true;
    const pl_graph_tensor *st = pl_infer_input(ctx, scales_at);
    if (has_scales && !scales_known && st->ndim == 1 && st->dims[0] == 0)
        has_scales = false;   /* an empty scales tensor means "use sizes" */
    if (scales_known && n_scales == 0)
        has_scales = false;
    const pl_graph_tensor *sz = v10 ? NULL : pl_infer_input(ctx, sizes_at);
    if (has_scales && sz != NULL)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "scales and sizes are both given; give only one");
    if (!has_scales && sz == NULL)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "neither scales nor sizes is given");
    if (x->ndim < 0)
        return NULL;
    int64_t dims[PL_GRAPH_MAX_RANK];
    const char *params[PL_GRAPH_MAX_RANK] = {0};
    for (int32_t d = 0; d < x->ndim; d++)
        dims[d] = -1;
    if (sz != NULL) {
        const int64_t *v;
        uint64_t mask;
        size_t n;
        if (pl_infer_known_ints(ctx, sizes_at, &v, &mask, &n)) {
            if (n != (size_t)x->ndim)
                return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                      "sizes has %zu values for rank %d", n,
                                      (int)x->ndim);
            for (size_t d = 0; d < n; d++)
                dims[d] = (mask >> d) & 1 ? v[d] : -1;
        }
    } else if (scales_known) {
        if (n_scales != (size_t)x->ndim)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "scales has %zu values for rank %d", n_scales,
                                  (int)x->ndim);
        for (size_t d = 0; d < n_scales; d++) {
            if (!(scales[d] > 0))
                return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                      "scale %g on axis %zu is not positive",
                                      scales[d], d);
            if (x->dims[d] >= 0) {
                /* floor of a positive product: truncation. The product in
                 * float too, as ONNX Runtime and the exporters compute it: a
                 * scale written as f32 out/in (24 -> 40: 1.6666666) gives
                 * 39.9999991 exactly but 40.0f, and the model means 40. */
                double out = (double)x->dims[d] * scales[d];
                float outf = (float)x->dims[d] * (float)scales[d];
                if ((double)outf > out && (double)outf < out + 1.0 &&
                    (double)outf == floor((double)outf))
                    out = (double)outf;
                if (!(out < 9.0e18))
                    return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                          "output size on axis %zu overflows", d);
                dims[d] = (int64_t)out;
            }
            if (scales[d] == 1.0 && x->dims[d] < 0)
                params[d] = x->dim_params ? x->dim_params[d] : NULL;
        }
    }
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, x->ndim, dims, params);
}

static pl_status *sh_infer_tile(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    if (x->ndim < 0)
        return NULL;
    const int64_t *v;
    uint64_t mask;
    size_t n;
    int64_t dims[PL_GRAPH_MAX_RANK];
    bool known = pl_infer_known_ints(ctx, 1, &v, &mask, &n);
    if (known && n != (size_t)x->ndim)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "repeats has %zu values for rank %d", n,
                              (int)x->ndim);
    for (int32_t d = 0; d < x->ndim; d++) {
        dims[d] = -1;
        if (!known || !((mask >> d) & 1) || x->dims[d] < 0)
            continue;
        if (v[d] < 0)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "repeats value %lld at %d is negative",
                                  (long long)v[d], (int)d);
        if (__builtin_mul_overflow(x->dims[d], v[d], &dims[d]))
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "tiled size on axis %d overflows", (int)d);
    }
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, x->ndim, dims, NULL);
}

/* ---- the schemas -------------------------------------------------------------------- */

static const pl_attr_spec sh_reshape14_attrs[] = {PL_ATTR_I("allowzero", 0)};
static const pl_attr_spec sh_flatten_attrs[] = {PL_ATTR_I("axis", 1)};
static const pl_attr_spec sh_transpose_attrs[] = {PL_ATTR_IS("perm")};
static const pl_attr_spec sh_concat_attrs[] = {PL_ATTR_REQ("axis", PL_ATTR_INT)};
static const pl_attr_spec sh_split2_attrs[] = {PL_ATTR_I("axis", 0),
                                               PL_ATTR_IS("split")};
static const pl_attr_spec sh_split13_attrs[] = {PL_ATTR_I("axis", 0)};
static const pl_attr_spec sh_split18_attrs[] = {PL_ATTR_I("axis", 0),
                                                PL_ATTR_I("num_outputs", 0)};
static const pl_attr_spec sh_slice1_attrs[] = {
    PL_ATTR_IS("axes"), PL_ATTR_REQ("ends", PL_ATTR_INTS),
    PL_ATTR_REQ("starts", PL_ATTR_INTS)};
static const pl_attr_spec sh_axes_attr[] = {PL_ATTR_IS("axes")};
static const pl_attr_spec sh_axes_req[] = {PL_ATTR_REQ("axes", PL_ATTR_INTS)};
static const pl_attr_spec sh_gather_attrs[] = {PL_ATTR_I("axis", 0)};
static const pl_attr_spec sh_constant_attrs[] = {
    PL_ATTR_T("value"), PL_ATTR_T("sparse_value"),
    PL_ATTR_F("value_float", 0), PL_ATTR_FS("value_floats"),
    PL_ATTR_I("value_int", 0), PL_ATTR_IS("value_ints"),
    PL_ATTR_S("value_string", ""), {.name = "value_strings", .kind = PL_ATTR_STRINGS}};
static const pl_attr_spec sh_shape15_attrs[] = {PL_ATTR_I("end", 0),
                                                PL_ATTR_I("start", 0)};
static const pl_attr_spec sh_pad2_attrs[] = {
    PL_ATTR_S("mode", "constant"), PL_ATTR_REQ("pads", PL_ATTR_INTS),
    PL_ATTR_F("value", 0.0)};
static const pl_attr_spec sh_pad11_attrs[] = {PL_ATTR_S("mode", "constant")};
/* Range 27's stash_type acts on float16 and bfloat16, which opset_lower.c
 * refuses there. */
static const pl_attr_spec sh_range27_attrs[] = {PL_ATTR_I("stash_type", 1)};
static const pl_attr_spec sh_resize10_attrs[] = {PL_ATTR_S("mode", "nearest")};
static const pl_attr_spec sh_resize11_attrs[] = {
    PL_ATTR_S("coordinate_transformation_mode", "half_pixel"),
    PL_ATTR_F("cubic_coeff_a", -0.75), PL_ATTR_I("exclude_outside", 0),
    PL_ATTR_F("extrapolation_value", 0.0), PL_ATTR_S("mode", "nearest"),
    PL_ATTR_S("nearest_mode", "round_prefer_floor")};
/* Resize 18 and 19 after opset_lower.c: 11's and antialias, which stays
 * when 1 (the kernels that cannot run it refuse the node) */
static const pl_attr_spec sh_resize18_attrs[] = {
    PL_ATTR_I("antialias", 0),
    PL_ATTR_S("coordinate_transformation_mode", "half_pixel"),
    PL_ATTR_F("cubic_coeff_a", -0.75), PL_ATTR_I("exclude_outside", 0),
    PL_ATTR_F("extrapolation_value", 0.0), PL_ATTR_S("mode", "nearest"),
    PL_ATTR_S("nearest_mode", "round_prefer_floor")};
static const pl_attr_spec sh_upsample7_attrs[] = {PL_ATTR_S("mode", "nearest"),
                                                  PL_ATTR_REQ("scales", PL_ATTR_FLOATS)};
static const pl_attr_spec sh_cos_attrs[] = {PL_ATTR_T("value")};

#define SH_IDX (PL_TS_I32 | PL_TS_I64)
#define SH_SCHEMA(op, since, in_min, in_max, out_min, out_max, attr_table, fn, ...) \
    {.name = op, .domain = "", .since_version = since, .min_inputs = in_min,  \
     .max_inputs = in_max, .min_outputs = out_min, .max_outputs = out_max,    \
     .attrs = attr_table, .n_attrs = PL_COUNT(attr_table), .infer = fn,       \
     __VA_ARGS__}
#define SH_PLAIN(op, since, in_min, in_max, out_min, out_max, fn, ...)       \
    {.name = op, .domain = "", .since_version = since, .min_inputs = in_min,  \
     .max_inputs = in_max, .min_outputs = out_min, .max_outputs = out_max,    \
     .infer = fn, __VA_ARGS__}

const pl_op_schema pl_opset_shape_schemas[] = {
    SH_PLAIN("Reshape", 7, 2, 2, 1, 1, sh_infer_reshape,
             .types = {{"T", PL_TS_ALL}, {"S", PL_TS_I64}},
             .input_types = {"T", "S"}, .output_types = {"T"}, PL_INPLACE_0),
    SH_SCHEMA("Reshape", 14, 2, 2, 1, 1, sh_reshape14_attrs, sh_infer_reshape,
              .types = {{"T", PL_TS_ALL}, {"S", PL_TS_I64}},
              .input_types = {"T", "S"}, .output_types = {"T"}, PL_INPLACE_0),
    SH_SCHEMA("Flatten", 7, 1, 1, 1, 1, sh_flatten_attrs, sh_infer_flatten,
              .types = {{"T", PL_TS_ALL}}, .input_types = {"T"},
              .output_types = {"T"}, PL_INPLACE_0),
    SH_SCHEMA("Transpose", 7, 1, 1, 1, 1, sh_transpose_attrs, sh_infer_transpose,
              .types = {{"T", PL_TS_ALL}}, .input_types = {"T"},
              .output_types = {"T"}),
    SH_SCHEMA("Concat", 7, 1, PL_OP_VARIADIC, 1, 1, sh_concat_attrs,
              sh_infer_concat, .types = {{"T", PL_TS_ALL}},
              .input_types = {"T"}, .output_types = {"T"}),
    SH_SCHEMA("Split", 7, 1, 1, 1, PL_OP_VARIADIC, sh_split2_attrs,
              sh_infer_split, .types = {{"T", PL_TS_ALL}},
              .input_types = {"T"}, .output_types = {"T"}),
    SH_SCHEMA("Split", 13, 1, 2, 1, PL_OP_VARIADIC, sh_split13_attrs,
              sh_infer_split, .types = {{"T", PL_TS_ALL}, {"S", PL_TS_I64}},
              .input_types = {"T", "S"}, .output_types = {"T"}),
    SH_SCHEMA("Split", 18, 1, 2, 1, PL_OP_VARIADIC, sh_split18_attrs,
              sh_infer_split, .types = {{"T", PL_TS_ALL}, {"S", PL_TS_I64}},
              .input_types = {"T", "S"}, .output_types = {"T"}),
    SH_SCHEMA("Slice", 7, 1, 1, 1, 1, sh_slice1_attrs, sh_infer_slice,
              .types = {{"T", PL_TS_ALL}}, .input_types = {"T"},
              .output_types = {"T"}),
    SH_PLAIN("Slice", 10, 3, 5, 1, 1, sh_infer_slice,
             .types = {{"T", PL_TS_ALL}, {"Tind", SH_IDX}},
             .input_types = {"T", "Tind", "Tind", "Tind", "Tind"},
             .output_types = {"T"}),
    SH_SCHEMA("Squeeze", 7, 1, 1, 1, 1, sh_axes_attr, sh_infer_squeeze,
              .types = {{"T", PL_TS_ALL}}, .input_types = {"T"},
              .output_types = {"T"}, PL_INPLACE_0),
    SH_PLAIN("Squeeze", 13, 1, 2, 1, 1, sh_infer_squeeze,
             .types = {{"T", PL_TS_ALL}, {"I", PL_TS_I64}},
             .input_types = {"T", "I"}, .output_types = {"T"}, PL_INPLACE_0),
    SH_SCHEMA("Unsqueeze", 7, 1, 1, 1, 1, sh_axes_req, sh_infer_unsqueeze,
              .types = {{"T", PL_TS_ALL}}, .input_types = {"T"},
              .output_types = {"T"}, PL_INPLACE_0),
    SH_PLAIN("Unsqueeze", 13, 2, 2, 1, 1, sh_infer_unsqueeze,
             .types = {{"T", PL_TS_ALL}, {"I", PL_TS_I64}},
             .input_types = {"T", "I"}, .output_types = {"T"}, PL_INPLACE_0),
    SH_SCHEMA("Gather", 7, 2, 2, 1, 1, sh_gather_attrs, sh_infer_gather,
              .types = {{"T", PL_TS_ALL}, {"Tind", SH_IDX}},
              .input_types = {"T", "Tind"}, .output_types = {"T"}),
    SH_SCHEMA("Constant", 7, 0, 0, 1, 1, sh_constant_attrs, sh_infer_constant,
              .types = {{"T", PL_TS_ALL}}, .output_types = {"T"}),
    SH_PLAIN("Shape", 7, 1, 1, 1, 1, sh_infer_shape,
             .types = {{"T1", PL_TS_ALL}, {"T2", PL_TS_I64}},
             .input_types = {"T1"}, .output_types = {"T2"}),
    SH_SCHEMA("Shape", 15, 1, 1, 1, 1, sh_shape15_attrs, sh_infer_shape,
              .types = {{"T1", PL_TS_ALL}, {"T2", PL_TS_I64}},
              .input_types = {"T1"}, .output_types = {"T2"}),
    SH_PLAIN("Expand", 8, 2, 2, 1, 1, sh_infer_expand,
             .types = {{"T", PL_TS_ALL}, {"S", PL_TS_I64}},
             .input_types = {"T", "S"}, .output_types = {"T"}),
    SH_SCHEMA("ConstantOfShape", 9, 1, 1, 1, 1, sh_cos_attrs,
              sh_infer_constant_of_shape,
              .types = {{"T1", PL_TS_I64}, {"T2", PL_TS_ALL}},
              .input_types = {"T1"}, .output_types = {"T2"}),
    SH_PLAIN("Range", 11, 3, 3, 1, 1, sh_infer_range,
             .types = {{"T", PL_TS_FLOAT | PL_TS_I32 | PL_TS_I64}},
             .input_types = {"T", "T", "T"}, .output_types = {"T"}),
    SH_SCHEMA("Range", 27, 3, 3, 1, 1, sh_range27_attrs, sh_infer_range,
              .types = {{"T", PL_TS_F32 | PL_TS_F64 | PL_TS_I32 | PL_TS_I64}},
              .input_types = {"T", "T", "T"}, .output_types = {"T"}),
    SH_PLAIN("Tile", 7, 2, 2, 1, 1, sh_infer_tile,
             .types = {{"T", PL_TS_ALL}, {"T1", PL_TS_I64}},
             .input_types = {"T", "T1"}, .output_types = {"T"}),
    SH_SCHEMA("Pad", 7, 1, 1, 1, 1, sh_pad2_attrs, sh_infer_pad,
              .types = {{"T", PL_TS_FLOAT}}, .input_types = {"T"},
              .output_types = {"T"}),
    SH_SCHEMA("Pad", 11, 2, 3, 1, 1, sh_pad11_attrs, sh_infer_pad,
              .types = {{"T", PL_TS_NUM | PL_TS_BOOL}, {"P", PL_TS_I64}},
              .input_types = {"T", "P", "T"}, .output_types = {"T"}),
    SH_SCHEMA("Pad", 18, 2, 4, 1, 1, sh_pad11_attrs, sh_infer_pad,
              .types = {{"T", PL_TS_NUM | PL_TS_BOOL}, {"P", PL_TS_I64},
                        {"Tind", SH_IDX}},
              .input_types = {"T", "P", "T", "Tind"}, .output_types = {"T"}),
    /* Pad 19 added mode 'wrap', which the cpu module's Pad runs (others
     * refuse the mode). */
    SH_SCHEMA("Pad", 19, 2, 4, 1, 1, sh_pad11_attrs, sh_infer_pad,
              .types = {{"T", PL_TS_NUM | PL_TS_BOOL}, {"P", PL_TS_I64},
                        {"Tind", SH_IDX}},
              .input_types = {"T", "P", "T", "Tind"}, .output_types = {"T"}),
    /* Upsample 7 and 9: Resize 10's semantics (asymmetric, nearest rounds
     * down), with the scales an attribute, then an input. */
    SH_SCHEMA("Upsample", 7, 1, 1, 1, 1, sh_upsample7_attrs, sh_infer_resize,
              .types = {{"T", PL_TS_ALL}}, .input_types = {"T"}, .output_types = {"T"}),
    SH_SCHEMA("Upsample", 9, 2, 2, 1, 1, sh_resize10_attrs, sh_infer_resize,
              .types = {{"T", PL_TS_ALL}, {"F", PL_TS_F32}},
              .input_types = {"T", "F"}, .output_types = {"T"}),
    SH_SCHEMA("Resize", 10, 2, 2, 1, 1, sh_resize10_attrs, sh_infer_resize,
              .types = {{"T", PL_TS_ALL}, {"F", PL_TS_F32}},
              .input_types = {"T", "F"}, .output_types = {"T"}),
    SH_SCHEMA("Resize", 11, 3, 4, 1, 1, sh_resize11_attrs, sh_infer_resize,
              .types = {{"T", PL_TS_ALL}, {"T2", PL_TS_FLOAT}, {"F", PL_TS_F32},
                        {"I", PL_TS_I64}},
              .input_types = {"T", "T2", "F", "I"}, .output_types = {"T"}),
    SH_SCHEMA("Resize", 13, 1, 4, 1, 1, sh_resize11_attrs, sh_infer_resize,
              .types = {{"T", PL_TS_ALL}, {"T2", PL_TS_FLOAT}, {"F", PL_TS_F32},
                        {"I", PL_TS_I64}},
              .input_types = {"T", "T2", "F", "I"}, .output_types = {"T"}),
    /* Resize 18 and 19: 13's, once opset_lower.c has spread axes over
     * every axis, turned keep_aspect_ratio_policy into scales (or refused
     * it) and 19's half_pixel_symmetric into half_pixel (or refused it);
     * antialias stays when 1. */
    SH_SCHEMA("Resize", 18, 1, 4, 1, 1, sh_resize18_attrs, sh_infer_resize,
              .types = {{"T", PL_TS_ALL}, {"T2", PL_TS_FLOAT}, {"F", PL_TS_F32},
                        {"I", PL_TS_I64}},
              .input_types = {"T", "T2", "F", "I"}, .output_types = {"T"}),
    SH_SCHEMA("Resize", 19, 1, 4, 1, 1, sh_resize18_attrs, sh_infer_resize,
              .types = {{"T", PL_TS_ALL}, {"T2", PL_TS_FLOAT}, {"F", PL_TS_F32},
                        {"I", PL_TS_I64}},
              .input_types = {"T", "T2", "F", "I"}, .output_types = {"T"}),
};
const size_t pl_opset_shape_count = PL_COUNT(pl_opset_shape_schemas);
