/* opset_harness.c — the harness shared by the opset's inference test
 * programs (tests/opset, tests/opset_more): builds small graphs through
 * graph.h, runs pl_opset_infer on them and checks what it inferred or the
 * error it gave. Each program keeps its own cases. */
#include "opset_harness.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *oh_cur_op = "";
const char *oh_cur_case = "";
int oh_failures;
pl_opset *oh_opset;

void oh_fail(int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "FAIL op %s case '%s' (line %d): ", oh_cur_op, oh_cur_case,
            line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    oh_failures++;
}

void oh_ok(pl_status *st, int line)
{
    if (st != NULL) {
        fprintf(stderr, "op %s case '%s': setup failed at line %d: %s\n",
                oh_cur_op, oh_cur_case, line, pl_status_message(st));
        exit(1);
    }
}

/* ---- graph building ------------------------------------------------------ */

pl_graph *oh_new_graph(const char *name, int64_t opset_version)
{
    oh_cur_case = name;
    pl_graph *g = NULL;
    OK(pl_graph_create(&g));
    if (opset_version > 0)
        OK(pl_graph_set_opset(g, "", opset_version));
    return g;
}

void oh_input(pl_graph *g, const char *name, pl_dtype dt, const int64_t *dims,
              int ndim)
{
    pl_tid t;
    OK(pl_graph_tensor_get_or_add(g, name, &t));
    OK(pl_graph_set_type(g, t, dt, ndim, dims, NULL));
    OK(pl_graph_add_input(g, t));
}

void oh_input_sym(pl_graph *g, const char *name, pl_dtype dt,
                  const int64_t *dims, int ndim, const char *const *params)
{
    pl_tid t;
    OK(pl_graph_tensor_get_or_add(g, name, &t));
    OK(pl_graph_set_type(g, t, dt, ndim, dims, params));
    OK(pl_graph_add_input(g, t));
}

void oh_const_i64(pl_graph *g, const char *name, const int64_t *v, int n)
{
    pl_tid t;
    int64_t dims[1] = {n};
    OK(pl_graph_tensor_get_or_add(g, name, &t));
    OK(pl_graph_set_type(g, t, I64, 1, dims, NULL));
    OK(pl_graph_set_constant(g, t, v, (size_t)n * sizeof *v));
}

void oh_const_i64_scalar(pl_graph *g, const char *name, int64_t v)
{
    pl_tid t;
    OK(pl_graph_tensor_get_or_add(g, name, &t));
    OK(pl_graph_set_type(g, t, I64, 0, NULL, NULL));
    OK(pl_graph_set_constant(g, t, &v, sizeof v));
}

void oh_const_f32(pl_graph *g, const char *name, const float *v, int n)
{
    pl_tid t;
    int64_t dims[1] = {n};
    OK(pl_graph_tensor_get_or_add(g, name, &t));
    OK(pl_graph_set_type(g, t, F32, 1, dims, NULL));
    OK(pl_graph_set_constant(g, t, v, (size_t)n * sizeof *v));
}

/* Splits a comma-separated list ("a,,b": the middle one absent). */
static size_t split_names(const char *list, char buf[][32], const char **out)
{
    size_t n = 0;
    if (list == NULL || list[0] == '\0')
        return 0;
    const char *p = list;
    for (;;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        snprintf(buf[n], 32, "%.*s", (int)len, p);
        out[n] = buf[n];
        n++;
        if (c == NULL)
            break;
        p = c + 1;
    }
    return n;
}

pl_nid oh_node_in(pl_graph *g, const char *name, const char *op,
                  const char *domain, const char *inputs, const char *outputs)
{
    char ib[16][32], ob[16][32];
    const char *in[16], *out[16];
    size_t ni = split_names(inputs, ib, in), no = split_names(outputs, ob, out);
    pl_nid n;
    OK(pl_graph_add_node(g, name, op, domain, in, ni, out, no, &n));
    for (size_t i = 0; i < no; i++) {
        pl_tid t = pl_graph_find_tensor(g, out[i]);
        OK(pl_graph_add_output(g, t));
    }
    return n;
}

pl_nid oh_node(pl_graph *g, const char *name, const char *op,
               const char *inputs, const char *outputs)
{
    return oh_node_in(g, name, op, "", inputs, outputs);
}

void oh_attr_i(pl_graph *g, pl_nid n, const char *name, int64_t v)
{
    OK(pl_graph_attr_int(g, n, name, v));
}

void oh_attr_f(pl_graph *g, pl_nid n, const char *name, double v)
{
    OK(pl_graph_attr_float(g, n, name, v));
}

void oh_attr_s(pl_graph *g, pl_nid n, const char *name, const char *v)
{
    OK(pl_graph_attr_string(g, n, name, v, strlen(v)));
}

void oh_attr_is(pl_graph *g, pl_nid n, const char *name, const int64_t *v,
                int count)
{
    OK(pl_graph_attr_ints(g, n, name, v, (size_t)count));
}

/* ---- checking ------------------------------------------------------------ */

pl_status *oh_run(pl_graph *g)
{
    pl_status *st = pl_graph_validate(g);
    if (st != NULL) {
        fprintf(stderr, "op %s case '%s': validate failed: %s\n", oh_cur_op,
                oh_cur_case, pl_status_message(st));
        exit(1);
    }
    return pl_opset_infer(oh_opset, g);
}

void oh_check_tensor(pl_graph *g, const char *name, pl_dtype dt,
                     const int64_t *dims, int ndim)
{
    const pl_graph_tensor *t = pl_graph_get_tensor(g, pl_graph_find_tensor(g, name));
    char a[160], b[160];
    if (t == NULL) {
        FAIL("no tensor '%s'", name);
        return;
    }
    if (!PL_DTYPE_EQ(t->dtype, dt))
        FAIL("'%s' dtype %s, expected %s", name, pl_dtype_name(t->dtype),
             pl_dtype_name(dt));
    bool same = t->ndim == ndim;
    for (int d = 0; same && d < ndim; d++)
        same = t->dims[d] == dims[d];
    if (!same)
        FAIL("'%s' shape %s, expected %s", name,
             pl_dims_format(t->dims, t->ndim, a, sizeof a),
             pl_dims_format(dims, ndim, b, sizeof b));
}

void oh_expect(pl_graph *g, const char *name, pl_dtype dt,
               const int64_t *dims, int ndim)
{
    pl_status *st = oh_run(g);
    if (st != NULL)
        FAIL("inference failed: %s", pl_status_message(st));
    else
        oh_check_tensor(g, name, dt, dims, ndim);
    pl_status_free(st);
    pl_graph_destroy(g);
}

void oh_expect_error(pl_graph *g, pl_code code, ...)
{
    pl_status *st = oh_run(g);
    if (st == NULL) {
        FAIL("inference succeeded, an error was expected");
    } else {
        if (pl_status_code(st) != code)
            FAIL("code %s, expected %s (%s)", pl_code_name(pl_status_code(st)),
                 pl_code_name(code), pl_status_message(st));
        va_list ap;
        va_start(ap, code);
        for (const char *frag; (frag = va_arg(ap, const char *)) != NULL;)
            if (strstr(pl_status_message(st), frag) == NULL)
                FAIL("message '%s' lacks '%s'", pl_status_message(st), frag);
        va_end(ap);
    }
    pl_status_free(st);
    pl_graph_destroy(g);
}

void oh_unary_shape_cases(const char *op, int64_t opset, pl_dtype dt, pl_dtype sym_dt)
{
    pl_graph *g = oh_new_graph("same shape", opset);
    oh_input(g, "x", dt, D(2, 3, 4));
    oh_node(g, "n", op, "x", "y");
    oh_expect(g, "y", dt, D(2, 3, 4));

    const char *params[] = {"batch", NULL};
    g = oh_new_graph("symbolic dim kept", opset);
    oh_input_sym(g, "x", sym_dt, D(-1, 7), params);
    oh_node(g, "n", op, "x", "y");
    OK(oh_run(g));
    const pl_graph_tensor *t = pl_graph_get_tensor(g, pl_graph_find_tensor(g, "y"));
    if (t->ndim != 2 || t->dims[0] != -1 || t->dims[1] != 7 || !t->dim_params ||
        !t->dim_params[0] || strcmp(t->dim_params[0], "batch") != 0)
        FAIL("%s: symbolic dim 'batch' was not kept", op);
    pl_graph_destroy(g);

    g = oh_new_graph("unknown rank", opset);
    oh_input(g, "x", dt, UNRANKED);
    oh_node(g, "n", op, "x", "y");
    oh_expect(g, "y", dt, UNRANKED);
}

/* ---- the program ----------------------------------------------------------- */

int oh_main(int argc, char **argv, const oh_case *cases, size_t count)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s OP|all\n", argv[0]);
        return 2;
    }
    OK(pl_opset_create(&oh_opset));
    bool found = false;
    for (size_t i = 0; i < count; i++) {
        if (strcmp(argv[1], "all") != 0 && strcmp(argv[1], cases[i].name) != 0)
            continue;
        found = true;
        oh_cur_op = cases[i].name;
        cases[i].fn();
    }
    pl_opset_destroy(oh_opset);
    if (!found) {
        fprintf(stderr, "unknown case '%s'\n", argv[1]);
        return 2;
    }
    if (oh_failures)
        fprintf(stderr, "%d failure(s)\n", oh_failures);
    return oh_failures ? 1 : 0;
}
