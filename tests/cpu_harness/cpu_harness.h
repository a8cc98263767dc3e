/* cpu_harness.h — the one-node kernel harness shared by the cpu module's
 * test programs (tests/cpu_*): a runtime holding only the staged cpu
 * module, one-node graphs with shapes inferred by the core's opset, their
 * view and pl_node_desc, get_kernel and kernel_run through the module's
 * table, buffers at byte offsets, typed loads and stores, a seeded random
 * source and index helpers. Each program keeps its own reference loops and
 * cases. Everything here is single-threaded test code: a failed check
 * prints FILE:LINE and a message, and exits 1. */
#ifndef PLINTH_TESTS_CPU_HARNESS_H
#define PLINTH_TESTS_CPU_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "graph_view.h"
#include "opset.h"
#include "registry.h"

#define CH_MAX_IN 6
#define CH_MAX_OUT 6
#define CH_MAX_RANK 8
#define CH_MAX_ATTRS 6
#define CH_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Prints "FILE:LINE: " and the formatted message to stderr, and exits 1. */
void ch_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

#define CHECK(cond, ...)                                 \
    do {                                                 \
        if (!(cond))                                     \
            ch_fail(__FILE__, __LINE__, __VA_ARGS__);    \
    } while (0)

#define CHECK_OK(expr)                                                       \
    do {                                                                     \
        pl_status *ch_st_ = (expr);                                          \
        if (ch_st_ != NULL)                                                  \
            ch_fail(__FILE__, __LINE__, "%s failed: %s", #expr,              \
                    pl_status_message(ch_st_));                              \
    } while (0)

/* ---- the module ---------------------------------------------------------- */

/* The runtime of ch_setup and its cpu module; valid until ch_teardown. */
extern pl_runtime *ch_rt;
extern pl_module *ch_mod;

/* Creates a runtime whose only module is STAGE_DIR's cpu module, on 4
 * threads (more than a machine may have: chunks then interleave). */
void ch_setup(const char *stage_dir);

/* Destroys the runtime of ch_setup. */
void ch_teardown(void);

/* ---- one-node graphs ----------------------------------------------------- */

/* An input: shape and dtype (lanes 0: the spec's dtype, else f32); absent
 * (an unnamed optional input); a graph constant holding VALS (CONSTANT) or
 * the bytes VALUE (VALUE without RUNTIME); or a graph input whose run must
 * be handed VALUE (VALUE with RUNTIME). */
typedef struct ch_in {
    int ndim;
    int64_t dims[CH_MAX_RANK];
    pl_dtype dtype;
    int absent;
    int constant;
    double vals[CH_MAX_RANK];
    const void *value;
    int runtime;
} ch_in;

typedef struct ch_attr {
    const char *name;
    char kind; /* 'i' int, 'f' float, 'I' ints, 's' string, 't' one-element tensor */
    int64_t i;
    double f;
    int64_t ints[16];
    int n;
    const char *s;
    pl_dtype tdtype;
    unsigned char tbytes[8];
} ch_attr;

/* A node to test: op, opset (0: 13), default dtype (lanes 0: f32), inputs,
 * attributes, outputs (0: 1) of which those in OUT_ABSENT (bit o) are left
 * unnamed, and with OUT_NDIM > 0 every output declared as OUT_DIMS. */
typedef struct ch_spec {
    const char *op;
    int opset;
    pl_dtype dtype;
    int n_in;
    ch_in in[CH_MAX_IN];
    ch_attr attrs[CH_MAX_ATTRS];
    int n_attrs;
    int n_out;
    unsigned out_absent;
    int out_ndim;
    int64_t out_dims[CH_MAX_RANK];
} ch_spec;

/* A built node: its graph, view, tensor descriptions and pl_node_desc. The
 * descriptions point into the graph. */
typedef struct ch_node {
    const ch_spec *spec;
    pl_graph *g;
    pl_graph_view *view;
    pl_tensor in[CH_MAX_IN];
    pl_tensor out[CH_MAX_OUT];
    int n_out;
    pl_node_desc desc;
} ch_node;

/* The dtype of input IN of spec S. */
pl_dtype ch_dt(const ch_spec *s, const ch_in *in);

/* Describes graph tensor T of G as a host pl_tensor without data; an absent
 * tensor (PL_TID_NONE) gets ndim -1. */
void ch_describe(const pl_graph *g, pl_tid t, pl_tensor *out);

/* Builds SPEC as a one-node graph, infers its shapes, and describes it in N.
 * SPEC must outlive N. Free with ch_node_free. */
void ch_node_build(const ch_spec *spec, ch_node *n);
void ch_node_free(ch_node *n);

/* Sets attribute AT on node NID of G. */
void ch_attr_set(pl_graph *g, pl_nid nid, const ch_attr *at);

/* The attribute NAME of S, or NULL; its int, float or string, or DFLT. */
const ch_attr *ch_attr_find(const ch_spec *s, const char *name);
int64_t ch_attr_i(const ch_spec *s, const char *name, int64_t dflt);
double ch_attr_f(const ch_spec *s, const char *name, double dflt);
const char *ch_attr_s(const ch_spec *s, const char *name, const char *dflt);

/* The cpu module's kernel for DESC; fails unless there is one. ch_run
 * hands it the workspace it asked for. Release with
 * ch_mod->api.kernel_release. */
pl_kernel *ch_kernel(const pl_node_desc *desc);

/* get_kernel on DESC; returns the refusal (the caller frees it), failing
 * if there was none or if the refusal left outputs set. */
pl_status *ch_refusal(const pl_node_desc *desc);

/* get_kernel must refuse SPEC with CODE and a message holding MESSAGE. */
void ch_expect_refusal(const ch_spec *spec, pl_code code, const char *message);

/* ---- buffers and runs ---------------------------------------------------- */

/* A buffer at a byte offset inside a larger allocation, so that kernels
 * must honour byte_offset. Free BASE. */
typedef struct ch_buf {
    char *base;
    char *data;
    size_t bytes;
    size_t offset;
} ch_buf;

void ch_buf_make(ch_buf *b, size_t bytes, size_t offset);

/* DESC with B's memory. */
pl_tensor ch_host_tensor(const pl_tensor *desc, const ch_buf *b);

/* Runs kernel K of the cpu module on the given tensors and requests. */
pl_status *ch_run(pl_kernel *k, size_t n_in, const pl_tensor *ins, size_t n_out,
                  pl_tensor *outs, const pl_output_request *reqs);

/* The elements of a tensor of DIMS (rank R). */
size_t ch_count(const int64_t *dims, int r);

/* V rounded to nearest (ties to even) in a binary float format of MBITS
 * mantissa bits and normal exponents EMIN..EMAX (subnormals below,
 * infinity beyond): the f16 and bf16 the tests expect, computed apart from
 * the module. */
double ch_round_format(double v, int mbits, int emin, int emax);
/* The bits of V rounded to f16 or bf16, and the value of such bits. */
uint16_t ch_f16_bits(double v);
double ch_f16_value(uint16_t h);
uint16_t ch_bf16_bits(double v);
double ch_bf16_value(uint16_t h);
/* What rounding a result of V once to DT may cost: half an ulp of f16 or
 * bf16 (f16's subnormal step included); 0 for other dtypes. */
double ch_rounding(pl_dtype dt, double v);

/* Element I of BYTES as dtype DT (f32, f64, f16, bf16, i64, i32, i8, else
 * u8/bool). */
void ch_store(void *bytes, pl_dtype dt, size_t i, double v);
double ch_load(const void *bytes, pl_dtype dt, size_t i);
bool ch_is_float(pl_dtype dt);

/* A fixed-seed sequence: 32 random bits, or uniform in [-2, 2). */
uint32_t ch_bits(void);
double ch_random(void);

/* ---- index helpers --------------------------------------------------------- */

/* The index IDX (rank R) of flat element I of a tensor of DIMS. */
void ch_unravel(size_t i, const int64_t *dims, int r, int64_t *idx);

/* The flat index of IDX in a tensor of DIMS (rank R). */
size_t ch_ravel(const int64_t *idx, const int64_t *dims, int r);

/* The flat index in a tensor of DIMS (rank R) of the output index IDX (rank
 * R_OUT), NumPy-broadcast: dims aligned right, size-1 dims read at 0. */
size_t ch_ravel_bcast(const int64_t *idx, int r_out, const int64_t *dims, int r);

/* ---- checking one node against a reference ------------------------------- */

/* The inputs of a reference: data, dtypes and shapes. */
typedef struct ch_data {
    const void *x[CH_MAX_IN];
    pl_dtype dt[CH_MAX_IN];
    const int64_t *dims[CH_MAX_IN];
    int ndim[CH_MAX_IN];
} ch_data;

/* The value of input I at element E. */
double ch_at(const ch_data *d, int i, size_t e);

/* Results of a node: per output, values and magnitudes for the tolerance. */
typedef struct ch_ref {
    double *v[CH_MAX_OUT];
    double *mag[CH_MAX_OUT];
} ch_ref;

/* What a program supplies to ch_check_req: how to fill input I, the
 * reference results, and the relative tolerance of an op for floats. */
typedef struct ch_oracle {
    void (*fill)(const ch_spec *s, int i, pl_dtype dt, void *x, size_t n);
    void (*reference)(const ch_node *n, const ch_data *d, ch_ref *r);
    double (*rtol)(const char *op);
} ch_oracle;

/* Runs SPEC's kernel with request REQ on every present output and compares
 * with ORACLE's reference. ADD_TO starts from random output values;
 * INPLACE hands input 0's buffer as output 0. */
void ch_check_req(const ch_oracle *oracle, const ch_spec *spec, pl_output_request req);

/* ---- spec shorthands ---------------------------------------------------- */

/* Inputs: T(ndim, dims...) a shape of the spec's dtype, TD(dtype, ndim,
 * dims...) of another, T0/TD0 scalars, ABSENT an unnamed optional input,
 * AXES an i64 constant vector, CONST_F an f32 scalar constant. Attributes:
 * AI int, AF float, AS string, AIS ints. */
#define T(r, ...) {.ndim = r, .dims = {__VA_ARGS__}}
#define TD(dt, r, ...) {.ndim = r, .dims = {__VA_ARGS__}, .dtype = dt}
#define T0 {.ndim = 0}
#define TD0(dt) {.ndim = 0, .dtype = dt}
#define ABSENT {.ndim = -1, .absent = 1}
#define AXES(cnt, ...) \
    {.ndim = 1, .dims = {cnt}, .dtype = PL_DTYPE_I64, .constant = 1, .vals = {__VA_ARGS__}}
#define CONST_F(v) {.ndim = 0, .constant = 1, .vals = {v}}
#define AI(nm, v) {.name = nm, .kind = 'i', .i = v}
#define AF(nm, v) {.name = nm, .kind = 'f', .f = v}
#define AS(nm, v) {.name = nm, .kind = 's', .s = v}
#define AIS(nm, cnt, ...) {.name = nm, .kind = 'I', .n = cnt, .ints = {__VA_ARGS__}}

#endif
