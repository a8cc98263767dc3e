/* det.c — the cpu module's Det: the determinant of each square matrix of a
 * [*, M, M] batch, by LU decomposition with partial pivoting in double (a
 * singular matrix gives 0), for every floating-point dtype. */
#include <math.h>
#include <string.h>

#include "index_kernel.h"

typedef struct dt_kernel {
    shp_kernel k;
    size_t batch, m;
    pl_dtype dt;
} dt_kernel;

/* The determinant of the M x M matrix A (destroyed). */
static double dt_lu(double *a, size_t m)
{
    double det = 1;
    for (size_t c = 0; c < m; c++) {
        size_t p = c;
        for (size_t r = c + 1; r < m; r++)
            if (fabs(a[r * m + c]) > fabs(a[p * m + c]))
                p = r;
        if (a[p * m + c] == 0)
            return 0;
        if (p != c) {
            for (size_t j = 0; j < m; j++) {
                double t = a[c * m + j];
                a[c * m + j] = a[p * m + j];
                a[p * m + j] = t;
            }
            det = -det;
        }
        double pivot = a[c * m + c];
        det *= pivot;
        for (size_t r = c + 1; r < m; r++) {
            double f = a[r * m + c] / pivot;
            for (size_t j = c + 1; j < m; j++)
                a[r * m + j] -= f * a[c * m + j];
        }
    }
    return det;
}

static pl_status *dt_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                           const pl_run_args *args, size_t o, void *dst,
                           pl_output_request req)
{
    (void)o, (void)req;
    const dt_kernel *k = (const dt_kernel *)kernel;
    size_t mm = k->m * k->m;
    double *a = cpu_host->host_alloc(ctx->host_ctx, (mm ? mm : 1) * sizeof *a, 0);
    if (a == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, kernel->base.op,
                         "out of memory for a %zu x %zu matrix", k->m, k->m);
    const char *x = shp_in(args, 0);
    for (size_t b = 0; b < k->batch; b++) {
        shp_convert(k->dt, x + b * mm * pl_dtype_size(k->dt), PL_DTYPE_F64, a, mm);
        ix_store(k->dt, dst, b, dt_lu(a, k->m));
    }
    cpu_host->host_free(ctx->host_ctx, a);
    return NULL;
}

pl_status *ix_build_det(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    pl_dtype dt = x->dtype;
    if (!(PL_DTYPE_EQ(dt, PL_DTYPE_F32) || PL_DTYPE_EQ(dt, PL_DTYPE_F64) ||
          PL_DTYPE_EQ(dt, PL_DTYPE_F16) || PL_DTYPE_EQ(dt, PL_DTYPE_BF16)))
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "the input must be floating point");
    SHP_TRY(shp_same_dtype(node));
    int r = x->ndim;
    bool ok = r >= 2 && x->shape[r - 1] == x->shape[r - 2] && o->ndim == r - 2;
    for (int d = 0; ok && d < r - 2; d++)
        ok = o->shape[d] == x->shape[d];
    if (!ok) {
        char tx[128];
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "the input %s is not a batch of square matrices with the output's batch",
                         cpu_dims_text(x->shape, r, tx, sizeof tx));
    }
    dt_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, dt_write, (shp_kernel **)&k));
    k->batch = cpu_elements(x->shape, r - 2);
    k->m = (size_t)x->shape[r - 1];
    k->dt = dt;
    *out_kernel = &k->k.base;
    return NULL;
}
