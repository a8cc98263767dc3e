/* opset_harness.h — the graph-building and checking harness shared by the
 * opset's inference test programs (tests/opset, tests/opset_more): small
 * graphs built with graph.h (typed inputs, constants, nodes with
 * attributes), pl_opset_infer run on them, and the output's dtype and
 * shape, or the error's code and message, checked. A failed check prints
 * the current op, case and line, and counts in oh_failures; a failure of
 * the test's own scaffolding prints and exits 1. Everything here is
 * single-threaded test code. */
#ifndef PLINTH_TESTS_OPSET_HARNESS_H
#define PLINTH_TESTS_OPSET_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "opset.h"
#include "status.h"

/* The op and the case being run: named in every failure message. */
extern const char *oh_cur_op;
extern const char *oh_cur_case;

/* The number of failed checks so far. */
extern int oh_failures;

/* The opset that oh_run infers with; created and destroyed by the program. */
extern pl_opset *oh_opset;

/* Prints "FAIL op OP case 'CASE' (line LINE): " and the formatted message
 * to stderr, and counts one failure. */
void oh_fail(int line, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define FAIL(...) oh_fail(__LINE__, __VA_ARGS__)

/* Aborts the program when ST, a step of the test's own scaffolding at LINE,
 * failed. */
void oh_ok(pl_status *st, int line);

#define OK(expr) oh_ok((expr), __LINE__)

#define F32 PL_DTYPE_F32
#define I64 PL_DTYPE_I64
#define I32 PL_DTYPE_I32
#define BOOL PL_DTYPE_BOOL
#define F16 PL_DTYPE_F16
/* A shape as the (dims, ndim) argument pair. */
#define D(...) (const int64_t[]){__VA_ARGS__}, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define SCALAR NULL, 0
#define UNRANKED NULL, -1

/* ---- graph building ------------------------------------------------------ */

/* Starts case NAME: a new graph importing the default domain at
 * OPSET_VERSION (none when 0). The caller owns the graph; oh_expect and
 * oh_expect_error destroy it. */
pl_graph *oh_new_graph(const char *name, int64_t opset_version);

/* A graph input of DT and shape. */
void oh_input(pl_graph *g, const char *name, pl_dtype dt, const int64_t *dims,
              int ndim);

/* A graph input whose dims have symbolic names (NULL for a fixed dim). */
void oh_input_sym(pl_graph *g, const char *name, pl_dtype dt,
                  const int64_t *dims, int ndim, const char *const *params);

/* An i64 vector initializer of the N values V. */
void oh_const_i64(pl_graph *g, const char *name, const int64_t *v, int n);

/* An i64 scalar initializer. */
void oh_const_i64_scalar(pl_graph *g, const char *name, int64_t v);

/* An f32 vector initializer of the N values V. */
void oh_const_f32(pl_graph *g, const char *name, const float *v, int n);

/* A node of OP in DOMAIN; INPUTS and OUTPUTS are comma-separated tensor
 * names ("a,,b": the middle one absent), at most 16 of 31 characters each.
 * Every output becomes a graph output. */
pl_nid oh_node_in(pl_graph *g, const char *name, const char *op,
                  const char *domain, const char *inputs, const char *outputs);

/* oh_node_in in the default domain. */
pl_nid oh_node(pl_graph *g, const char *name, const char *op,
               const char *inputs, const char *outputs);

/* Attributes of node N: an int, a float, a string, a list of COUNT ints. */
void oh_attr_i(pl_graph *g, pl_nid n, const char *name, int64_t v);
void oh_attr_f(pl_graph *g, pl_nid n, const char *name, double v);
void oh_attr_s(pl_graph *g, pl_nid n, const char *name, const char *v);
void oh_attr_is(pl_graph *g, pl_nid n, const char *name, const int64_t *v,
                int count);

/* ---- checking ------------------------------------------------------------ */

/* Validates G (exits 1 if it is malformed) and runs inference with
 * oh_opset; the caller frees the returned status. */
pl_status *oh_run(pl_graph *g);

/* Checks that tensor NAME of G has DT and shape DIMS. */
void oh_check_tensor(pl_graph *g, const char *name, pl_dtype dt,
                     const int64_t *dims, int ndim);

/* Runs inference, expects success and output NAME of DT and DIMS, and
 * destroys G. */
void oh_expect(pl_graph *g, const char *name, pl_dtype dt,
               const int64_t *dims, int ndim);

/* Runs inference and expects CODE with a message containing each of the
 * NULL-terminated fragments, and destroys G. */
void oh_expect_error(pl_graph *g, pl_code code, ...);

/* ---- the program ----------------------------------------------------------- */

/* One CTest case: NAME, an op or a whole-graph case, run by FN. */
typedef struct oh_case {
    const char *name;
    void (*fn)(void);
} oh_case;

/* The shape cases every unary op shares, at OPSET: DT's shape [2,3,4] is
 * carried over, a symbolic dim (input of SYM_DT [batch, 7]) is kept, and an
 * unknown rank stays unknown. */
void oh_unary_shape_cases(const char *op, int64_t opset, pl_dtype dt, pl_dtype sym_dt);

/* The test program's main: creates oh_opset, runs the case of CASES named
 * by ARGV[1] (every one for "all") with oh_cur_op set to its name, and
 * destroys oh_opset. Returns 0 when every check passed, 1 after a failed
 * check, 2 on a bad usage or an unknown case. */
int oh_main(int argc, char **argv, const oh_case *cases, size_t count);

#endif /* PLINTH_TESTS_OPSET_HARNESS_H */
