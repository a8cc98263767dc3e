/* rnn.h — what the cpu module's recurrent-layer files share (rnn.c runs a
 * kernel, rnn_build.c makes it, rnn_act.c holds the activations): the
 * kernel object of RNN, GRU and LSTM and the activation functions of ONNX's
 * recurrent ops. Internal to the module. */
#ifndef PL_CPU_RNN_H
#define PL_CPU_RNN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu_kernel.h"

/* ---- activations (rnn_act.c) -------------------------------------------- */

typedef enum rnn_fn {
    RNN_RELU,
    RNN_TANH,
    RNN_SIGMOID,
    RNN_AFFINE,
    RNN_LEAKY_RELU,
    RNN_THRESHOLDED_RELU,
    RNN_SCALED_TANH,
    RNN_HARD_SIGMOID,
    RNN_ELU,
    RNN_SOFTSIGN,
    RNN_SOFTPLUS
} rnn_fn;

typedef struct rnn_act {
    rnn_fn fn;
    float alpha, beta;
} rnn_act;

/* The activation ONNX names NAME (any case) with its default alpha and
 * beta into *out, and whether it takes alpha and beta. False when there is
 * no such activation. */
bool rnn_act_named(const char *name, rnn_act *out, bool *out_takes_alpha, bool *out_takes_beta);

/* X[i] = A(X[i]) for i < N, in place (vectorised; any thread). */
void rnn_act_apply(const rnn_act *a, float *x, int64_t n);

/* X[i] = min(bound, max(-bound, X[i])) for i < N (NaN stays NaN). */
void rnn_clip(float *x, int64_t n, float bound);

/* ---- the kernel ------------------------------------------------------------ */

typedef enum rnn_kind { RNN_KIND_RNN = 0, RNN_KIND_GRU = 1, RNN_KIND_LSTM = 2 } rnn_kind;

/* Inputs by position. */
enum { RNN_X, RNN_W, RNN_R, RNN_B, RNN_LENS, RNN_H0, RNN_C0, RNN_P };

/* A kernel: one host block made at get_kernel time (rnn_build.c), with the
 * packed constant weights after it; immutable afterwards, so any number of
 * runs may read it at once. */
typedef struct rnn_kernel {
    pl_kernel base;
    rnn_kind kind;
    int64_t gates;           /* 1, 3, 4 */
    int64_t seq, batch, input, hidden, dirs;
    int64_t gh;              /* gates * hidden */
    bool reverse;            /* one direction, reverse */
    bool layout;             /* batch-major X, Y, states (layout 1) */
    bool has_b, has_lens, has_h0, has_c0, has_p;
    bool lbr;                /* GRU linear_before_reset */
    bool input_forget;       /* LSTM */
    bool has_clip;
    float clip;
    rnn_act act[2][3];       /* per direction: f, g, h */
    int64_t n_rec;           /* columns of the first recurrent GEMM */
    const float *packed_w;   /* W^T of all directions packed, or NULL */
    const float *packed_r[2]; /* per direction: R^T (GRU lbr 0: [Rz;Rr]^T) */
    const float *packed_rh[2]; /* GRU lbr 0: Rh^T */
    /* The projection: tasks of proj_rows rows of X by proj_cols columns
     * of the result (proj_col_tasks of them across), one scratch slice per
     * worker of the thread count of get_kernel time. */
    int64_t proj_rows, proj_tasks, proj_cols, proj_col_tasks;
    int threads;
    size_t proj_slice;       /* bytes */
    /* The recurrence: dirs * blocks tasks of block_rows batch rows. */
    int64_t blocks, block_rows;
    size_t task_bytes;       /* one task's area */
    size_t off_h, off_c, off_gates, off_rh, off_rec2, off_scratch; /* inside it */
    /* Or the recurrence split by hidden units (rnn_build.c, rnn_split):
     * the directions one after the other, each step `slices` tasks of
     * slice_units units (the last may have fewer), each a GEMM of every
     * batch row by its units' rows of R, gate by gate (packed per slice
     * into packed_slices, slice_floats apart), then its units' cells. Each
     * task re-reads only its part of R every step, which stays in its
     * core's cache; one task per direction re-read all of it from memory.
     * 0 slices: the tasks above. */
    int64_t slices, slice_units;
    size_t slice_floats;
    const float *packed_slices[2];
    size_t sp_h[2], sp_c, sp_tasks; /* inside the area: h (two), c, tasks */
    size_t sp_task_bytes, sp_off_scratch; /* a task: its gates, then scratch */
    /* The workspace: projection, bias, then proj slices or task areas. */
    size_t ws_bias, ws_area;
    size_t ws_rpack;         /* R packed per run when it is not a constant */
    size_t rpack_r, rpack_rh; /* bytes of one direction's two packings */
    size_t ws_total;
} rnn_kernel;

/* The kind of op OP ("RNN", "GRU", "LSTM"); false for any other op. */
bool rnn_kind_of(const char *op, rnn_kind *out);

/* The split recurrence (rnn.h's kernel) from this many bytes of R a
 * direction, over at most this many batch rows. */
#define RNN_SPLIT_MIN_BYTES ((size_t)1 << 20)
#define RNN_SPLIT_MAX_BATCH 64

/* How many slices the recurrence of a layer of KIND (GRU: LBR) over BATCH
 * rows, GH gate rows of HIDDEN units, splits into on THREADS threads with
 * R a constant (R_CONST) or not; 0 when it runs a task per direction and
 * block of rows. Sets *UNITS to a slice's width (rnn_build.c; the cost
 * estimate asks too). */
int64_t rnn_split_slices(rnn_kind kind, bool lbr, int64_t batch, int64_t gh, int64_t hidden,
                         int threads, bool r_const, int64_t *units);

/* Runs kernel K (rnn.c): the run_any entry of every RNN, GRU and LSTM. */
pl_status *rnn_run(pl_module_ctx *ctx, const pl_kernel *k, const pl_run_args *args);

/* ---- what the int8 LSTM (rnn_q8.c) shares --------------------------------- */

/* The body of a run: K's layer over ARGS' inputs into OUTS (Y, Y_h, Y_c;
 * NULL when not wanted) with WS, K->ws_total bytes of workspace. */
typedef void (*rnn_body_fn)(pl_module_ctx *ctx, const rnn_kernel *k, const pl_run_args *args,
                            float *const outs[3], char *ws);

/* A run of kernel K with BODY: the outputs fetched (a PL_REQ_ADD_TO one
 * computed apart and added), inputs 0-7 checked, the workspace acquired. */
pl_status *rnn_run_outputs(pl_module_ctx *ctx, const pl_kernel *k, const pl_run_args *args,
                           rnn_body_fn body);

/* The element offset of the state of (direction D, batch row B) in
 * initial_h / Y_h, and of step T of it in Y, for K's layout. */
int64_t rnn_state_at(const rnn_kernel *k, int64_t d, int64_t b);
int64_t rnn_y_at(const rnn_kernel *k, int64_t t, int64_t d, int64_t b);

/* Row B of direction D's initial state into H and C (NULL: no cell
 * state): from initial_h / initial_c (H0, C0) when given, else zeros. */
void rnn_state_init(const rnn_kernel *k, int64_t d, int64_t b, const float *h0, const float *c0,
                    float *h, float *c);

/* One LSTM step of HS units of one row: G holds their recurrent product
 * (i, o, f, c blocks, GS apart), XW their projection (blocks XS apart), P
 * their peepholes (blocks hidden apart) or NULL; H is written, C updated in
 * place. */
void rnn_lstm_cell(const rnn_kernel *k, const rnn_act *act, const float *p, float *g, int64_t gs,
                   const float *xw, int64_t xs, float *h, float *c, int64_t hs);

/* The combined bias of the projection into BIAS ([dirs, gh]) from B
 * ([dirs, 2 * gh]): Wb + Rb per gate, except GRU's hidden gate under
 * linear_before_reset (Wbh only). */
void rnn_fill_bias(const rnn_kernel *k, const float *b, float *bias);

/* get_kernel's readers (rnn_build.c): direction, layout, hidden_size,
 * clip and the op's flags; then the activations, COUNT per direction. */
pl_status *rnn_read_attrs(const pl_node_desc *node, rnn_kernel *k);
pl_status *rnn_read_activations(const pl_node_desc *node, int count, rnn_kernel *k);

/* Checks B, sequence_lens, initial_h, initial_c and P (dtype and shape)
 * and the outputs against K's sizes (seq, batch, hidden, dirs, gh,
 * layout, kind), setting K's has_* flags (rnn_build.c). */
pl_status *rnn_check_rest(const pl_node_desc *node, rnn_kernel *k);

/* *total += bytes of FLOATS floats rounded up to a cache line, recording
 * the offset in *off; false on overflow. */
bool rnn_place(size_t *total, size_t floats, size_t *off);

/* The kernel of com.microsoft DynamicQuantizeLSTM (rnn_q8.c), and the
 * registration of its schema (from init), which keeps the core from
 * lowering the node to a float LSTM. */
pl_status *rnn_q8_build(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel);
pl_status *rnn_q8_register(pl_host_ctx *host_ctx);

#endif
