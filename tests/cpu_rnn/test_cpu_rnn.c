/* test_cpu_rnn.c — what the CLI cannot reach of the cpu module's RNN, GRU
 * and LSTM kernels (modules/cpu/rnn.c), driven through the module's table
 * as the core drives it (the shared harness of tests/cpu_harness): the
 * output requests (PL_REQ_NULL, PL_REQ_ADD_TO, and a refused in-place
 * request), one kernel run from several threads at once, run-time errors
 * (missing data, sequence_lens out of range) and get_kernel's refusals.
 * The numerical checks against a reference live in rnn_reference.py; here
 * every result is compared with a plain PL_REQ_WRITE run of the same
 * kernel, bit for bit. Usage: test_cpu_rnn CASE STAGE_DIR. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_harness.h"

/* A bidirectional GRU with linear_before_reset: X [4,5,3], hidden 7, with
 * B, sequence_lens and initial_h; outputs Y and Y_h. */
#define TR_T 4
#define TR_B 5
#define TR_I 3
#define TR_H 7
static const ch_spec tr_gru = {
    .op = "GRU",
    .opset = 14,
    .n_in = 6,
    .in = {T(3, TR_T, TR_B, TR_I), T(3, 2, 3 * TR_H, TR_I), T(3, 2, 3 * TR_H, TR_H),
           T(2, 2, 6 * TR_H), TD(PL_DTYPE_I32, 1, TR_B), T(3, 2, TR_B, TR_H)},
    .attrs = {AS("direction", "bidirectional"), AI("hidden_size", TR_H),
              AI("linear_before_reset", 1)},
    .n_attrs = 3,
    .n_out = 2,
};

static const int32_t tr_lens[TR_B] = {4, 0, 2, 3, 1};

/* A node built, its kernel, and input buffers filled with random values
 * (sequence_lens from tr_lens). */
typedef struct tr_fixture {
    ch_node n;
    pl_kernel *k;
    ch_buf in_buf[CH_MAX_IN];
    pl_tensor ins[CH_MAX_IN];
} tr_fixture;

static void tr_setup(tr_fixture *f, const ch_spec *spec)
{
    ch_node_build(spec, &f->n);
    size_t ws = 0;
    f->k = NULL;
    CHECK_OK(ch_mod->api.get_kernel(ch_mod->ctx, 0, &f->n.desc, &f->k, &ws));
    CHECK(f->k != NULL && ws > 0, "get_kernel gave no kernel or no workspace (%zu)", ws);
    for (int i = 0; i < spec->n_in; i++) {
        const pl_tensor *d = &f->n.in[i];
        size_t cnt = ch_count(d->shape, d->ndim);
        ch_buf_make(&f->in_buf[i], cnt * pl_dtype_size(d->dtype), 4 * (size_t)(i + 1));
        for (size_t e = 0; e < cnt; e++)
            ch_store(f->in_buf[i].data, d->dtype, e,
                     PL_DTYPE_EQ(d->dtype, PL_DTYPE_I32) ? tr_lens[e] : ch_random() / 2);
        f->ins[i] = ch_host_tensor(d, &f->in_buf[i]);
    }
}

static void tr_teardown(tr_fixture *f)
{
    for (int i = 0; i < f->n.spec->n_in; i++)
        free(f->in_buf[i].base);
    ch_mod->api.kernel_release(ch_mod->ctx, f->k);
    ch_node_free(&f->n);
}

/* Runs F's kernel with REQS into fresh outputs filled with FILL; the
 * outputs' buffers go to BUFS (free their base). */
static pl_status *tr_run(const tr_fixture *f, const pl_output_request *reqs, float fill,
                         ch_buf *bufs)
{
    pl_tensor outs[CH_MAX_OUT];
    for (int o = 0; o < f->n.n_out; o++) {
        const pl_tensor *d = &f->n.out[o];
        size_t cnt = ch_count(d->shape, d->ndim);
        ch_buf_make(&bufs[o], cnt * sizeof(float), 8);
        for (size_t e = 0; e < cnt; e++)
            ((float *)(void *)bufs[o].data)[e] = fill;
        outs[o] = ch_host_tensor(d, &bufs[o]);
    }
    return ch_run(f->k, (size_t)f->n.spec->n_in, f->ins, (size_t)f->n.n_out, outs, reqs);
}

static size_t tr_out_count(const tr_fixture *f, int o)
{
    return ch_count(f->n.out[o].shape, f->n.out[o].ndim);
}

/* PL_REQ_WRITE, then Y added to 1s with Y_h skipped, then Y_h alone: each
 * result equals the plain run's, bit for bit (1 + y for the added one). */
static void tr_requests(void)
{
    tr_fixture f;
    tr_setup(&f, &tr_gru);
    ch_buf base[CH_MAX_OUT], add[CH_MAX_OUT], only[CH_MAX_OUT];
    const pl_output_request write[2] = {PL_REQ_WRITE, PL_REQ_WRITE};
    CHECK_OK(tr_run(&f, write, 0.0f, base));
    const pl_output_request add_y[2] = {PL_REQ_ADD_TO, PL_REQ_NULL};
    CHECK_OK(tr_run(&f, add_y, 1.0f, add));
    const pl_output_request only_h[2] = {PL_REQ_NULL, PL_REQ_WRITE};
    CHECK_OK(tr_run(&f, only_h, -3.0f, only));
    const float *y = (const float *)(void *)base[0].data;
    const float *y_add = (const float *)(void *)add[0].data;
    bool nonzero = false;
    for (size_t e = 0; e < tr_out_count(&f, 0); e++) {
        CHECK(y_add[e] == 1.0f + y[e], "Y[%zu] added: %.9g, expected 1 + %.9g", e, y_add[e],
              y[e]);
        nonzero = nonzero || y[e] != 0.0f;
    }
    CHECK(nonzero, "Y is all zeros");
    /* Skipped outputs are left as they were. */
    for (size_t e = 0; e < tr_out_count(&f, 1); e++)
        CHECK(((const float *)(void *)add[1].data)[e] == 1.0f, "Y_h[%zu] written under NULL", e);
    for (size_t e = 0; e < tr_out_count(&f, 0); e++)
        CHECK(((const float *)(void *)only[0].data)[e] == -3.0f, "Y[%zu] written under NULL", e);
    CHECK(memcmp(only[1].data, base[1].data, tr_out_count(&f, 1) * sizeof(float)) == 0,
          "Y_h alone differs from Y_h with Y");
    /* Batch row 1 has length 0: zeros in Y, its initial state in Y_h. */
    const float *h0 = (const float *)(void *)f.in_buf[5].data;
    for (int d = 0; d < 2; d++)
        for (int j = 0; j < TR_H; j++) {
            CHECK(((const float *)(void *)base[1].data)[(d * TR_B + 1) * TR_H + j] ==
                      h0[(d * TR_B + 1) * TR_H + j],
                  "Y_h of an empty sequence is not its initial state");
            for (int t = 0; t < TR_T; t++)
                CHECK(y[((t * 2 + d) * TR_B + 1) * TR_H + j] == 0.0f,
                      "Y of an empty sequence is not 0");
        }
    for (int o = 0; o < 2; o++) {
        free(base[o].base);
        free(add[o].base);
        free(only[o].base);
    }
    /* In place is not an option of these ops. */
    const pl_output_request inplace[2] = {PL_REQ_INPLACE, PL_REQ_WRITE};
    ch_buf bad[CH_MAX_OUT];
    pl_status *st = tr_run(&f, inplace, 0.0f, bad);
    CHECK(st != NULL && strstr(pl_status_message(st), "in place") != NULL,
          "an in-place request was not refused: %s", st ? pl_status_message(st) : "(ok)");
    pl_status_free(st);
    for (int o = 0; o < 2; o++)
        free(bad[o].base);
    tr_teardown(&f);
}

/* ---- concurrent runs ------------------------------------------------------ */

typedef struct tr_thread {
    const tr_fixture *f;
    const float *want[2];
    int failures;
} tr_thread;

static void *tr_worker(void *arg)
{
    tr_thread *t = arg;
    const pl_output_request write[2] = {PL_REQ_WRITE, PL_REQ_WRITE};
    for (int rep = 0; rep < 25; rep++) {
        ch_buf out[CH_MAX_OUT];
        pl_status *st = tr_run(t->f, write, 0.0f, out);
        if (st != NULL) {
            pl_status_free(st);
            t->failures++;
        }
        for (int o = 0; o < 2; o++) {
            if (st == NULL &&
                memcmp(out[o].data, t->want[o], tr_out_count(t->f, o) * sizeof(float)) != 0)
                t->failures++;
            free(out[o].base);
        }
    }
    return NULL;
}

/* One kernel run by four threads at once (kernel_run must be reentrant):
 * every result equals a serial run's. */
static void tr_concurrent(void)
{
    tr_fixture f;
    tr_setup(&f, &tr_gru);
    ch_buf base[CH_MAX_OUT];
    const pl_output_request write[2] = {PL_REQ_WRITE, PL_REQ_WRITE};
    CHECK_OK(tr_run(&f, write, 0.0f, base));
    pthread_t th[4];
    tr_thread ts[4];
    for (int i = 0; i < 4; i++) {
        ts[i] = (tr_thread){.f = &f,
                            .want = {(const float *)(void *)base[0].data,
                                     (const float *)(void *)base[1].data}};
        CHECK(pthread_create(&th[i], NULL, tr_worker, &ts[i]) == 0, "pthread_create");
    }
    int failures = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        failures += ts[i].failures;
    }
    CHECK(failures == 0, "%d concurrent runs failed or differed from the serial run", failures);
    for (int o = 0; o < 2; o++)
        free(base[o].base);
    tr_teardown(&f);
}

/* ---- errors ---------------------------------------------------------------- */

/* A run whose sequence_lens holds a length past the sequence, or whose
 * initial_h has no data, fails with a message naming it. */
static void tr_run_errors(void)
{
    tr_fixture f;
    tr_setup(&f, &tr_gru);
    const pl_output_request write[2] = {PL_REQ_WRITE, PL_REQ_WRITE};
    ch_buf out[CH_MAX_OUT];
    ((int32_t *)(void *)f.in_buf[4].data)[2] = TR_T + 1;
    pl_status *st = tr_run(&f, write, 0.0f, out);
    CHECK(st != NULL && strstr(pl_status_message(st), "sequence_lens[2] = 5 is outside [0, 4]"),
          "a length past the sequence was not refused: %s", st ? pl_status_message(st) : "(ok)");
    pl_status_free(st);
    for (int o = 0; o < 2; o++)
        free(out[o].base);
    ((int32_t *)(void *)f.in_buf[4].data)[2] = -1;
    st = tr_run(&f, write, 0.0f, out);
    CHECK(st != NULL && strstr(pl_status_message(st), "sequence_lens[2] = -1"),
          "a negative length was not refused: %s", st ? pl_status_message(st) : "(ok)");
    pl_status_free(st);
    for (int o = 0; o < 2; o++)
        free(out[o].base);
    ((int32_t *)(void *)f.in_buf[4].data)[2] = 1;
    f.ins[5].data = NULL;
    st = tr_run(&f, write, 0.0f, out);
    CHECK(st != NULL && strstr(pl_status_message(st), "input 5 has no data"),
          "missing initial_h data was not refused: %s", st ? pl_status_message(st) : "(ok)");
    pl_status_free(st);
    for (int o = 0; o < 2; o++)
        free(out[o].base);
    tr_teardown(&f);
}

/* get_kernel refuses what the kernels do not compute, with the reason. */
static void tr_refusals(void)
{
    ch_spec f64 = tr_gru;
    f64.dtype = PL_DTYPE_F64;
    ch_expect_refusal(&f64, PL_CODE_UNSUPPORTED, "X has dtype f64 (supported: f32)");
    ch_spec clip = tr_gru;
    clip.attrs[3] = (ch_attr){.name = "clip", .kind = 'f', .f = -1.0};
    clip.n_attrs = 4;
    ch_expect_refusal(&clip, PL_CODE_INVALID_ARGUMENT, "clip -1 is not a threshold >= 0");
}

static const struct {
    const char *name;
    void (*run)(void);
} tr_cases[] = {
    {"requests", tr_requests},
    {"concurrent", tr_concurrent},
    {"run_errors", tr_run_errors},
    {"refusals", tr_refusals},
};

int main(int argc, char **argv)
{
    alarm(110);
    if (argc < 3) {
        fprintf(stderr, "usage: %s CASE STAGE_DIR\n", argv[0]);
        return 2;
    }
    for (size_t i = 0; i < CH_COUNT(tr_cases); i++) {
        if (strcmp(argv[1], tr_cases[i].name) != 0)
            continue;
        ch_setup(argv[2]);
        tr_cases[i].run();
        ch_teardown();
        printf("ok %s\n", argv[1]);
        return 0;
    }
    fprintf(stderr, "unknown case %s\n", argv[1]);
    return 2;
}
