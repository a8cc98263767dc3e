/* einsum.c — the cpu module's Einsum: any equation of ONNX's grammar
 * (explicit "ij,jk->ik" or implicit "ij,jk" output, repeated labels within
 * a term for diagonals, one ellipsis per term whose dims broadcast), for
 * float and integer dtypes.
 *
 * The kernel gives every label, and every dim of the ellipsis, a number and
 * a size, and each input a stride per label (strides of a label repeated
 * in one term add up: that walks the diagonal; a broadcast ellipsis dim
 * of size 1 has stride 0, and so has a label's dim of size 1 where another
 * input's is larger, as numpy's einsum broadcasts it). A run converts the
 * inputs to double (floats) or int64 (integers, which wrap), then computes
 * every output element as the sum, over all values of the labels the
 * output lacks, of the product of the inputs. That is the definition
 * itself: exact and general.
 *
 * The equations of attention and batched projections ("bhqd,bhkd->bhqk",
 * "bij,bjk->bik") are batched matrix products, and for f32 they take a
 * faster road: when two inputs' labels are each batch (in both inputs and
 * the output), M (first input and output), N (second input and output) or
 * K (both inputs, summed), with no label repeated in a term, the inputs are
 * gathered into [batch, M, K] and [batch, K, N], multiplied by OpenBLAS's
 * sgemm in row blocks over the pool, and the [batch, M, N] result is
 * scattered into the output's order. */
#include <string.h>

#include "blas.h"

#include "index_kernel.h"

#define ES_MAX_INPUTS 8
#define ES_LETTERS 52
#define ES_MAX_LABELS (ES_LETTERS + CPU_MAX_RANK)

typedef struct es_kernel {
    shp_kernel k;
    size_t n_in;
    int n_out, n_sum;                 /* output labels, summed labels */
    int64_t out_dims[ES_MAX_LABELS];
    int64_t sum_dims[ES_MAX_LABELS];
    /* Per input: element strides along each output and each summed label. */
    int64_t out_st[ES_MAX_INPUTS][ES_MAX_LABELS];
    int64_t sum_st[ES_MAX_INPUTS][ES_MAX_LABELS];
    size_t in_elems[ES_MAX_INPUTS];
    size_t sum_count;                 /* elements of the summed space */
    bool integer;
    /* The matrix-product road (f32, two inputs): label groups in the order
     * batch, M, K for A, batch, K, N for B and batch, M, N for the output,
     * with each operand's strides along them. */
    bool gemm;
    int ga_n, gb_n, gc_n;
    int64_t ga_dims[ES_MAX_LABELS], ga_st[ES_MAX_LABELS];
    int64_t gb_dims[ES_MAX_LABELS], gb_st[ES_MAX_LABELS];
    int64_t gc_dims[ES_MAX_LABELS], gc_st[ES_MAX_LABELS];
    size_t batch, m, n, kk;
} es_kernel;

/* Label numbers: 'A'..'Z' 0..25, 'a'..'z' 26..51 (ASCII order, the order
 * of an implicit output), ellipsis dim e is ES_LETTERS + e. */
static int es_slot(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return 26 + (c - 'a');
    return -1;
}

/* A parsed term: label numbers, -2 for the ellipsis. */
typedef struct es_term {
    int labels[CPU_MAX_RANK + 1];
    int n;
    bool ellipsis;
} es_term;

/* Parses one term of EQ from *POS up to ',', '-' or the end. */
static bool es_term_parse(const char *eq, size_t *pos, es_term *t)
{
    memset(t, 0, sizeof *t);
    size_t i = *pos;
    for (;; i++) {
        char c = eq[i];
        if (c == ' ')
            continue;
        if (c == '\0' || c == ',' || c == '-')
            break;
        if (t->n > CPU_MAX_RANK)
            return false;
        if (c == '.') {
            if (t->ellipsis || eq[i + 1] != '.' || eq[i + 2] != '.')
                return false;
            t->ellipsis = true;
            t->labels[t->n++] = -2;
            i += 2;
            continue;
        }
        if (es_slot(c) < 0)
            return false;
        t->labels[t->n++] = es_slot(c);
    }
    *pos = i;
    return true;
}

/* ---- the run ------------------------------------------------------------------ */

typedef struct es_call {
    const es_kernel *k;
    const void *const *x; /* converted inputs: double or int64 */
    void *y;              /* double or int64 results */
} es_call;

static void es_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const es_call *c = arg;
    const es_kernel *k = c->k;
    size_t n_in = k->n_in;
    for (size_t t = begin; t < end; t++) {
        int64_t base[ES_MAX_INPUTS];
        for (size_t i = 0; i < n_in; i++)
            base[i] = ix_offset(t, k->n_out, k->out_dims, k->out_st[i]);
        int64_t idx[ES_MAX_LABELS] = {0}, off[ES_MAX_INPUTS];
        memcpy(off, base, n_in * sizeof *off);
        double fsum = 0;
        int64_t isum = 0;
        for (size_t s = 0; s < k->sum_count; s++) {
            if (k->integer) {
                uint64_t p = 1;
                for (size_t i = 0; i < n_in; i++)
                    p *= (uint64_t)((const int64_t *)c->x[i])[off[i]];
                isum = (int64_t)((uint64_t)isum + p);
            } else {
                double p = 1;
                for (size_t i = 0; i < n_in; i++)
                    p *= ((const double *)c->x[i])[off[i]];
                fsum += p;
            }
            /* The odometer over the summed labels, last fastest. */
            for (int d = k->n_sum - 1; d >= 0; d--) {
                for (size_t i = 0; i < n_in; i++)
                    off[i] += k->sum_st[i][d];
                if (++idx[d] < k->sum_dims[d])
                    break;
                for (size_t i = 0; i < n_in; i++)
                    off[i] -= k->sum_st[i][d] * k->sum_dims[d];
                idx[d] = 0;
            }
        }
        if (k->integer)
            ((int64_t *)c->y)[t] = isum;
        else
            ((double *)c->y)[t] = fsum;
    }
}

/* ---- the matrix-product road ---------------------------------------------------- */

/* Gathers the N elements of a tensor at X walked by DIMS/ST (rank R) into
 * the dense OUT, or scatters dense IN into Y by them (SCATTER): a row of
 * the last dim at a time, the others by an odometer (an offset computed
 * per element, with a division per dim, took 70% of a GPT-OSS MoE block's
 * run: 5 ms for a [3, 8, 2, 128, 64] operand). */
static void es_gather(const float *x, float *out, size_t n, int r, const int64_t *dims,
                      const int64_t *st, bool scatter)
{
    if (n == 0)
        return;
    if (r == 0) {
        out[0] = x[0];
        return;
    }
    int64_t inner = dims[r - 1], is = st[r - 1], idx[ES_MAX_LABELS] = {0}, off = 0;
    for (size_t i = 0; i < n; i += (size_t)inner) {
        if (scatter) {
            for (int64_t j = 0; j < inner; j++)
                out[off + j * is] = x[i + (size_t)j];
        } else if (is == 1) {
            memcpy(out + i, x + off, (size_t)inner * sizeof *out);
        } else {
            for (int64_t j = 0; j < inner; j++)
                out[i + (size_t)j] = x[off + j * is];
        }
        for (int d = r - 2; d >= 0; d--) { /* the odometer, last dim fastest */
            off += st[d];
            if (++idx[d] < dims[d])
                break;
            off -= st[d] * dims[d];
            idx[d] = 0;
        }
    }
}

/* Whether DIMS/ST (rank R) walk a tensor in its own dense row-major order:
 * the gather would copy it as it is. */
static bool es_dense(int r, const int64_t *dims, const int64_t *st)
{
    int64_t step = 1;
    for (int d = r - 1; d >= 0; d--) {
        if (dims[d] != 1 && st[d] != step)
            return false;
        step *= dims[d];
    }
    return true;
}

#define ES_ROWS 64

typedef struct es_gemm_call {
    const es_kernel *k;
    const float *a, *b;
    float *c;
    size_t row_blocks;
    const cpu_blas *blas;
} es_gemm_call;

/* Task t: row block t % row_blocks of batch entry t / row_blocks. */
static void es_gemm_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const es_gemm_call *c = arg;
    const es_kernel *k = c->k;
    for (size_t t = begin; t < end; t++) {
        size_t b = t / c->row_blocks, r0 = (t % c->row_blocks) * ES_ROWS;
        size_t rows = k->m - r0 < ES_ROWS ? k->m - r0 : ES_ROWS;
        if (k->n == 1) { /* matrix by vector (an MoE's experts by tokens): dot products */
            const float *v = c->b + b * k->kk;
            for (size_t i = 0; i < rows; i++) {
                const float *row = c->a + (b * k->m + r0 + i) * k->kk;
                float acc[8] = {0};
                size_t j = 0;
                for (; j + 8 <= k->kk; j += 8) /* eight sums: the loop vectorises */
                    for (int l = 0; l < 8; l++)
                        acc[l] += row[j + (size_t)l] * v[j + (size_t)l];
                float sum = ((acc[0] + acc[4]) + (acc[1] + acc[5])) +
                            ((acc[2] + acc[6]) + (acc[3] + acc[7]));
                for (; j < k->kk; j++)
                    sum += row[j] * v[j];
                c->c[b * k->m + r0 + i] = sum;
            }
            continue;
        }
        c->blas->sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)k->n, (int)k->kk,
                    1.0f, c->a + (b * k->m + r0) * k->kk, (int)k->kk, c->b + b * k->kk * k->n,
                    (int)k->n, 0.0f, c->c + (b * k->m + r0) * k->n, (int)k->n);
    }
}

static pl_status *es_gemm_write(pl_module_ctx *ctx, const es_kernel *k, const pl_run_args *args,
                                float *dst)
{
    size_t na = k->batch * k->m * k->kk, nb = k->batch * k->kk * k->n;
    size_t nc = k->batch * k->m * k->n;
    /* operands already in the order the products read them are read in
     * place, and a result in the output's order written there */
    const float *a = (const float *)(const void *)shp_in(args, 0);
    const float *b = (const float *)(const void *)shp_in(args, 1);
    bool a_in = es_dense(k->ga_n, k->ga_dims, k->ga_st);
    bool b_in = es_dense(k->gb_n, k->gb_dims, k->gb_st);
    bool c_in = es_dense(k->gc_n, k->gc_dims, k->gc_st);
    size_t floats = (a_in ? 0 : na) + (b_in ? 0 : nb) + (c_in ? 0 : nc);
    float *buf = floats > 0 ? cpu_host->host_alloc(ctx->host_ctx, floats * sizeof(float), 64)
                            : NULL;
    if (floats > 0 && buf == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, k->k.base.op,
                         "out of memory for %zu floats of packed operands", floats);
    float *next = buf;
    if (!a_in) {
        es_gather(a, next, na, k->ga_n, k->ga_dims, k->ga_st, false);
        a = next;
        next += na;
    }
    if (!b_in) {
        es_gather(b, next, nb, k->gb_n, k->gb_dims, k->gb_st, false);
        b = next;
        next += nb;
    }
    es_gemm_call c = {.k = k, .a = a, .b = b, .c = c_in ? dst : next,
                      .row_blocks = (k->m + ES_ROWS - 1) / ES_ROWS,
                      .blas = cpu_blas_loaded()};
    cpu_host->parallel_for(ctx->host_ctx, k->batch * c.row_blocks, 1, es_gemm_chunk, &c);
    if (!c_in)
        es_gather(c.c, dst, nc, k->gc_n, k->gc_dims, k->gc_st, true);
    if (buf != NULL)
        cpu_host->host_free(ctx->host_ctx, buf);
    return NULL;
}

static pl_status *es_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                           const pl_run_args *args, size_t o, void *dst,
                           pl_output_request req)
{
    (void)o, (void)req;
    const es_kernel *k = (const es_kernel *)kernel;
    if (k->gemm)
        return es_gemm_write(ctx, k, args, dst);
    pl_dtype wide = k->integer ? PL_DTYPE_I64 : PL_DTYPE_F64, dt = kernel->outs[0].dtype;
    size_t n_out = kernel->outs[0].elements, total = n_out;
    for (size_t i = 0; i < k->n_in; i++)
        total += k->in_elems[i];
    char *buf = cpu_host->host_alloc(ctx->host_ctx, total * 8, 0);
    if (buf == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, kernel->base.op,
                         "out of memory for %zu bytes of work space", total * 8);
    const void *x[ES_MAX_INPUTS];
    char *p = buf + n_out * 8;
    for (size_t i = 0; i < k->n_in; i++) {
        shp_convert(dt, shp_in(args, i), wide, p, k->in_elems[i]);
        x[i] = p;
        p += k->in_elems[i] * 8;
    }
    es_call c = {.k = k, .x = x, .y = buf};
    size_t grain = k->sum_count >= 4096 ? 1 : 4096 / (k->sum_count + 1) + 1;
    cpu_host->parallel_for(ctx->host_ctx, n_out, grain, es_chunk, &c);
    shp_convert(wide, buf, dt, dst, n_out);
    cpu_host->host_free(ctx->host_ctx, buf);
    return NULL;
}

/* ---- the kernel --------------------------------------------------------------- */

/* What the build learns of the labels. */
typedef struct es_plan {
    int64_t size[ES_MAX_LABELS];   /* -1: not seen */
    int count[ES_MAX_LABELS];      /* uses in the inputs */
    int ell_rank;
    es_term in[ES_MAX_INPUTS];
    es_term out;
} es_plan;

/* Sizes every label of the inputs of NODE into P. */
static pl_status *es_size_labels(const pl_node_desc *node, es_plan *p)
{
    const char *op = node->op;
    for (int l = 0; l < ES_MAX_LABELS; l++)
        p->size[l] = -1;
    p->ell_rank = 0;
    for (size_t i = 0; i < node->n_inputs; i++) {
        const es_term *t = &p->in[i];
        int letters = t->n - (t->ellipsis ? 1 : 0), r = node->inputs[i].ndim;
        if (t->ellipsis ? r < letters : r != letters)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "input %zu has rank %d but its term has %d labels", i, r, letters);
        if (t->ellipsis && r - letters > p->ell_rank)
            p->ell_rank = r - letters;
    }
    for (size_t i = 0; i < node->n_inputs; i++) {
        const es_term *t = &p->in[i];
        const int64_t *dims = node->inputs[i].shape;
        int ne = node->inputs[i].ndim - (t->n - (t->ellipsis ? 1 : 0)), d = 0;
        for (int j = 0; j < t->n; j++) {
            if (t->labels[j] == -2) {
                for (int e = 0; e < ne; e++, d++) {
                    int l = ES_LETTERS + p->ell_rank - ne + e;
                    if (p->size[l] <= 1)
                        p->size[l] = dims[d];
                    else if (dims[d] != 1 && dims[d] != p->size[l])
                        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                                         "the ellipsis dims of input %zu do not broadcast", i);
                    p->count[l]++;
                }
                continue;
            }
            int l = t->labels[j];
            if (p->size[l] >= 0 && p->size[l] != dims[d] && p->size[l] != 1 && dims[d] != 1)
                return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                                 "a label has sizes %lld and %lld", (long long)p->size[l],
                                 (long long)dims[d]);
            if (p->size[l] < 0 || p->size[l] == 1) /* a size of 1 broadcasts */
                p->size[l] = dims[d];
            d++;
            p->count[l]++;
        }
    }
    return NULL;
}

/* Parses the equation of NODE into P (terms and the output's labels). */
static pl_status *es_parse(const pl_node_desc *node, es_plan *p)
{
    char eq[512];
    SHP_TRY(shp_attr_string(node, "equation", "", eq, sizeof eq));
    size_t pos = 0;
    memset(p, 0, sizeof *p);
    for (size_t i = 0; i < node->n_inputs; i++) {
        if (!es_term_parse(eq, &pos, &p->in[i]) ||
            (i + 1 < node->n_inputs ? eq[pos] != ',' : eq[pos] == ','))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "equation '%s' does not have %zu well-formed input terms", eq,
                             node->n_inputs);
        if (eq[pos] == ',')
            pos++;
    }
    SHP_TRY(es_size_labels(node, p));
    if (eq[pos] == '-') {
        pos++;
        if (eq[pos++] != '>' || !es_term_parse(eq, &pos, &p->out) || eq[pos] != '\0')
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "equation '%s' has a malformed output term", eq);
        bool seen[ES_MAX_LABELS] = {false};
        for (int j = 0; j < p->out.n; j++) {
            int l = p->out.labels[j];
            if (l >= 0 && (p->count[l] == 0 || seen[l]))
                return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                                 "equation '%s': an output label is repeated or in no input",
                                 eq);
            if (l >= 0)
                seen[l] = true;
        }
        return NULL;
    }
    if (eq[pos] != '\0')
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "equation '%s' has more terms than inputs", eq);
    p->out.labels[p->out.n++] = -2;
    p->out.ellipsis = true;
    for (int l = 0; l < ES_LETTERS; l++)
        if (p->count[l] == 1 && p->out.n <= CPU_MAX_RANK)
            p->out.labels[p->out.n++] = l;
    return NULL;
}

/* Sets up the matrix-product road in K when the equation is one: f32, two
 * inputs, every label batch, M, N or K (see the file comment), none
 * repeated in a term, and no dim of size 0. BY_LABEL holds each input's
 * stride per label, IN_TERM whether the label is in its term (an ellipsis
 * dim counts as in every term with an ellipsis), OUT_L the output's
 * labels in order. */
static void es_plan_gemm(es_kernel *k, const es_plan *p, const pl_tensor *o,
                         int64_t (*by_label)[ES_MAX_LABELS], bool (*in_term)[ES_MAX_LABELS],
                         const int *out_l, int n_out)
{
    if (k->n_in != 2 || k->integer || !PL_DTYPE_EQ(o->dtype, PL_DTYPE_F32))
        return;
    bool in_out[ES_MAX_LABELS] = {false};
    int64_t out_st[ES_MAX_LABELS] = {0}, step = 1;
    for (int j = n_out - 1; j >= 0; j--) {
        in_out[out_l[j]] = true;
        out_st[out_l[j]] = step;
        step *= o->shape[j];
    }
    int cat[ES_MAX_LABELS]; /* 0 none, 1 batch, 2 M, 3 N, 4 K */
    k->batch = k->m = k->n = k->kk = 1;
    for (int l = 0; l < ES_MAX_LABELS; l++) {
        bool a = in_term[0][l], b = in_term[1][l];
        cat[l] = 0;
        if (!a && !b)
            continue;
        if (p->size[l] == 0 || (!in_out[l] && !(a && b)))
            return;
        cat[l] = a && b ? (in_out[l] ? 1 : 4) : a ? 2 : 3;
        size_t sz = (size_t)p->size[l];
        if (cat[l] == 1)
            k->batch *= sz;
        else if (cat[l] == 2)
            k->m *= sz;
        else if (cat[l] == 3)
            k->n *= sz;
        else
            k->kk *= sz;
    }
    for (size_t i = 0; i < 2; i++)
        for (int j = 0; j < p->in[i].n; j++)
            for (int q = j + 1; q < p->in[i].n; q++)
                if (p->in[i].labels[j] >= 0 && p->in[i].labels[j] == p->in[i].labels[q])
                    return; /* a diagonal */
    static const int order_a[3] = {1, 2, 4}, order_b[3] = {1, 4, 3}, order_c[3] = {1, 2, 3};
    k->ga_n = k->gb_n = k->gc_n = 0;
    for (int g = 0; g < 3; g++)
        for (int l = 0; l < ES_MAX_LABELS; l++) {
            if (cat[l] == order_a[g]) {
                k->ga_dims[k->ga_n] = p->size[l];
                k->ga_st[k->ga_n++] = by_label[0][l];
            }
            if (cat[l] == order_b[g]) {
                k->gb_dims[k->gb_n] = p->size[l];
                k->gb_st[k->gb_n++] = by_label[1][l];
            }
            if (cat[l] == order_c[g]) {
                k->gc_dims[k->gc_n] = p->size[l];
                k->gc_st[k->gc_n++] = out_st[l];
            }
        }
    /* Without OpenBLAS the general loop computes it. */
    k->gemm = k->m <= INT32_MAX && k->n <= INT32_MAX && k->kk <= INT32_MAX &&
              cpu_blas_get(NULL) != NULL;
}

pl_status *ix_build_einsum(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const char *op = node->op;
    const pl_tensor *o = &node->outputs[0];
    pl_dtype dt = o->dtype;
    if (node->n_inputs > ES_MAX_INPUTS)
        return cpu_error(PL_CODE_UNSUPPORTED, op, "%zu inputs (at most %d)", node->n_inputs,
                         ES_MAX_INPUTS);
    if (PL_DTYPE_EQ(dt, PL_DTYPE_BOOL))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "bool inputs");
    for (size_t i = 0; i < node->n_inputs; i++)
        if (!PL_DTYPE_EQ(node->inputs[i].dtype, dt))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "input %zu differs from the output "
                             "in dtype", i);
    es_plan *p = cpu_host->host_alloc(ctx->host_ctx, sizeof *p, 0);
    if (p == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory parsing the equation");
    pl_status *st = es_parse(node, p);
    /* The output's labels, in order, with the ellipsis expanded. */
    int out_l[ES_MAX_LABELS], n_out = 0;
    bool in_out[ES_MAX_LABELS] = {false};
    for (int j = 0; st == NULL && j < p->out.n; j++) {
        if (p->out.labels[j] != -2) {
            out_l[n_out++] = p->out.labels[j];
            continue;
        }
        for (int e = 0; e < p->ell_rank; e++)
            out_l[n_out++] = ES_LETTERS + e;
    }
    bool ok = st == NULL && o->ndim == n_out;
    for (int j = 0; ok && j < n_out; j++) {
        ok = o->shape[j] == (p->size[out_l[j]] < 0 ? 1 : p->size[out_l[j]]);
        in_out[out_l[j]] = true;
    }
    if (st == NULL && !ok) {
        char to[128];
        st = cpu_error(PL_CODE_INVALID_ARGUMENT, op, "the output %s is not what the equation gives",
                       cpu_dims_text(o->shape, o->ndim, to, sizeof to));
    }
    es_kernel *k = NULL;
    if (st == NULL)
        st = shp_kernel_alloc(ctx, node, sizeof *k, es_write, (shp_kernel **)&k);
    if (st != NULL) {
        cpu_host->host_free(ctx->host_ctx, p);
        return st;
    }
    k->n_in = node->n_inputs;
    k->integer = !(PL_DTYPE_EQ(dt, PL_DTYPE_F32) || PL_DTYPE_EQ(dt, PL_DTYPE_F64) ||
                   PL_DTYPE_EQ(dt, PL_DTYPE_F16) || PL_DTYPE_EQ(dt, PL_DTYPE_BF16));
    int sum_l[ES_MAX_LABELS];
    k->n_out = n_out;
    for (int j = 0; j < n_out; j++)
        k->out_dims[j] = o->shape[j];
    k->sum_count = 1;
    bool overflow = false;
    for (int l = 0; l < ES_MAX_LABELS; l++)
        if (p->count[l] > 0 && !in_out[l]) {
            sum_l[k->n_sum] = l;
            k->sum_dims[k->n_sum++] = p->size[l];
            overflow |= __builtin_mul_overflow(k->sum_count, (size_t)p->size[l], &k->sum_count);
        }
    if (overflow) {
        cpu_host->host_free(ctx->host_ctx, p);
        cpu_kernel_release(ctx, &k->k.base);
        return cpu_error(PL_CODE_UNSUPPORTED, op, "the summed labels span more than 2^64 terms");
    }
    int64_t by_label[ES_MAX_INPUTS][ES_MAX_LABELS];
    bool in_term[ES_MAX_INPUTS][ES_MAX_LABELS];
    memset(by_label, 0, sizeof by_label);
    memset(in_term, 0, sizeof in_term);
    for (size_t i = 0; i < node->n_inputs; i++) {
        const pl_tensor *x = &node->inputs[i];
        const es_term *t = &p->in[i];
        int64_t st_in[CPU_MAX_RANK];
        ix_strides(x->shape, x->ndim, st_in);
        k->in_elems[i] = cpu_elements(x->shape, x->ndim);
        int ne = x->ndim - (t->n - (t->ellipsis ? 1 : 0)), d = 0;
        for (int j = 0; j < t->n; j++) {
            if (t->labels[j] != -2) {
                int l = t->labels[j];
                in_term[i][l] = true;
                if (x->shape[d] != 1 || p->size[l] == 1) /* else broadcast: stride 0 */
                    by_label[i][l] += st_in[d];
                d++;
                continue;
            }
            for (int e = 0; e < p->ell_rank; e++)
                in_term[i][ES_LETTERS + e] = true;
            for (int e = 0; e < ne; e++, d++)
                if (x->shape[d] != 1)
                    by_label[i][ES_LETTERS + p->ell_rank - ne + e] += st_in[d];
        }
        for (int j = 0; j < n_out; j++)
            k->out_st[i][j] = by_label[i][out_l[j]];
        for (int j = 0; j < k->n_sum; j++)
            k->sum_st[i][j] = by_label[i][sum_l[j]];
    }
    es_plan_gemm(k, p, o, by_label, in_term, out_l, n_out);
    cpu_host->host_free(ctx->host_ctx, p);
    *out_kernel = &k->k.base;
    return NULL;
}
