/* test_control_threads.c — runs of models with control flow from several
 * application threads at once, each run checked against a reference.
 *
 * Two models (written next to a copy of each, with their few constants in
 * a sidecar made here):
 *   control_flow.json  a Loop with a carried value, a scan output and an If
 *                      in its body (both branches every run), an If on the
 *                      input's sign, a Scan over the Loop's rows;
 *   loop_rows.json     a Loop whose body slices row i of an input, so that
 *                      it is planned per iteration number on first use (the
 *                      control step's cache of bodies grows while runs are
 *                      in flight), then an If on the result's sign.
 * Cases:
 *   one_session    CF_THREADS threads run one session CF_RUNS times each,
 *                  starting together on a session that has never run (so
 *                  the first runs race to make the bodies' run contexts
 *                  and the per-iteration bodies);
 *   many_sessions  CF_THREADS threads, each with its own session of one
 *                  model, CF_RUNS runs each.
 * Inputs vary from run to run (both signs, so both outer branches run);
 * every output is compared bit for bit with a reference made beforehand by
 * another session. The ThreadSanitizer stage of tools/dev.sh runs these
 * (label core).
 *
 * Usage: test_control_threads CASE STAGE_DIR SOURCE_DIR */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness.h"

#define CF_THREADS 4
#define CF_RUNS 40
#define CF_INPUT_SETS 6
#define CF_MAX_IO 8
#define CF_MAX_VALUES 256

typedef struct cf_model {
    const char *file;      /* under tests/control */
    const char *sidecar;   /* its weights file's name */
    const void *weights;
    size_t n_weights;
} cf_model;

static const struct {
    int64_t trips, two;
    float half, zero;
} cf_flow_weights = {4, 2, 0.5f, 0.0f};

static const struct {
    int64_t trips, ax0, one;
    float zero;
} cf_rows_weights = {6, 0, 1, 0.0f};

static const cf_model cf_models[2] = {
    {"control_flow.json", "control_flow.weights", &cf_flow_weights, sizeof cf_flow_weights},
    {"loop_rows.json", "loop_rows.weights", &cf_rows_weights, sizeof cf_rows_weights},
};

/* One run's outputs, flattened in output order. */
typedef struct cf_values {
    float v[CF_MAX_VALUES];
    size_t n;
} cf_values;

/* What a run needs and what it must give. */
typedef struct cf_set {
    float in[CF_MAX_IO][CF_MAX_VALUES];
    cf_values want;
} cf_set;

typedef struct cf_job {
    pl_session *session;
    const cf_set *sets;
    int thread;
    pthread_barrier_t *start;
} cf_job;

static atomic_int cf_failures;
static pthread_mutex_t cf_first_mu = PTHREAD_MUTEX_INITIALIZER;
static char cf_first[1024];

static void cf_record(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void cf_record(const char *fmt, ...)
{
    if (atomic_fetch_add(&cf_failures, 1) != 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&cf_first_mu);
    vsnprintf(cf_first, sizeof cf_first, fmt, ap);
    pthread_mutex_unlock(&cf_first_mu);
    va_end(ap);
}

static const char *cf_write_model(const cf_model *m)
{
    const char *dir = th_tempdir();
    const char *json = th_path(dir, m->file);
    th_copy_file(th_path(th_path(th_arg(1), "tests/control"), m->file), json, 0644);
    FILE *f = fopen(th_path(dir, m->sidecar), "wb");
    TH_CHECK(f != NULL && fwrite(m->weights, m->n_weights, 1, f) == 1 && fclose(f) == 0,
             "cannot write %s", m->sidecar);
    return json;
}

static pl_runtime *cf_runtime(void)
{
    alarm(0); /* a ThreadSanitizer build is slow; CTest's timeout applies */
    const char *stage = th_arg(0);
    if (access(th_path(stage, "libplinth_cpu.so"), R_OK) != 0)
        th_skip("libplinth_cpu.so is not staged in %s", stage);
    const char *ini = th_path(th_tempdir(), "backend.ini");
    char text[4096];
    snprintf(text, sizeof text,
             "[runtime]\nmodules = %s/libplinth_cpu.so, %s/libplinth_json.so\nthreads = 4\n"
             "[placement]\norder = cpu\n",
             stage, stage);
    th_write_file(ini, text, 0644);
    pl_runtime_options o = th_options(ini);
    return th_runtime_create(&o);
}

/* Number of elements of input or output I of S. */
static size_t cf_count(const pl_session *s, size_t i, bool input)
{
    pl_dtype dt;
    int32_t ndim;
    const int64_t *dims;
    if (input)
        pl_session_input_type(s, i, &dt, &ndim, &dims);
    else
        pl_session_output_type(s, i, &dt, &ndim, &dims);
    size_t n = 1;
    for (int32_t d = 0; d < ndim; d++)
        n *= (size_t)dims[d];
    return n;
}

/* Runs S on SET's inputs; fills OUT. Returns a status the caller frees. */
static pl_status *cf_run(pl_session *s, const cf_set *set, cf_values *out)
{
    size_t ni = pl_session_input_count(s), no = pl_session_output_count(s);
    pl_io in[CF_MAX_IO], outs[CF_MAX_IO];
    for (size_t i = 0; i < ni; i++) {
        pl_dtype dt;
        int32_t ndim;
        const int64_t *dims;
        pl_session_input_type(s, i, &dt, &ndim, &dims);
        in[i] = (pl_io){.name = pl_session_input_name(s, i),
                        .tensor = {.struct_size = sizeof(pl_tensor), .data = (void *)set->in[i],
                                   .dtype = dt, .ndim = ndim, .shape = (int64_t *)dims}};
    }
    for (size_t k = 0; k < no; k++)
        outs[k] = (pl_io){.name = pl_session_output_name(s, k),
                          .tensor = {.struct_size = sizeof(pl_tensor)}};
    pl_status *st = pl_session_run(s, in, ni, outs, no);
    if (st != NULL)
        return st;
    out->n = 0;
    for (size_t k = 0; k < no; k++) {
        size_t n = 1;
        for (int32_t d = 0; d < outs[k].tensor.ndim; d++)
            n *= (size_t)outs[k].tensor.shape[d];
        if (out->n + n <= CF_MAX_VALUES)
            memcpy(out->v + out->n, outs[k].tensor.data, n * sizeof(float));
        out->n += n;
        pl_buffer_free(outs[k].tensor.data);
    }
    return NULL;
}

/* Input sets for S (input set K has the sign of (-1)^K, so both outer
 * branches run) and their reference outputs from REF. */
static cf_set *cf_make_sets(pl_session *ref)
{
    cf_set *sets = calloc(CF_INPUT_SETS, sizeof *sets);
    TH_CHECK(sets != NULL, "out of memory");
    size_t ni = pl_session_input_count(ref), no = pl_session_output_count(ref);
    TH_CHECK(ni <= CF_MAX_IO && no <= CF_MAX_IO, "%zu inputs, %zu outputs", ni, no);
    for (int k = 0; k < CF_INPUT_SETS; k++) {
        for (size_t i = 0; i < ni; i++) {
            size_t n = cf_count(ref, i, true);
            TH_CHECK(n <= CF_MAX_VALUES, "input %zu has %zu values", i, n);
            for (size_t j = 0; j < n; j++)
                sets[k].in[i][j] = (float)((j * 7 + (size_t)k * 3 + i) % 11) / 8.0f +
                                   (k % 2 ? -1.0f : 0.25f);
        }
        TH_CHECK_OK(cf_run(ref, &sets[k], &sets[k].want));
        TH_CHECK(sets[k].want.n <= CF_MAX_VALUES, "%zu output values", sets[k].want.n);
    }
    return sets;
}

static void *cf_thread_main(void *arg)
{
    cf_job *job = arg;
    pthread_barrier_wait(job->start);
    cf_values got;
    for (int r = 0; r < CF_RUNS && atomic_load(&cf_failures) == 0; r++) {
        int k = (job->thread * 5 + r) % CF_INPUT_SETS;
        pl_status *st = cf_run(job->session, &job->sets[k], &got);
        if (st != NULL) {
            cf_record("thread %d, run %d: %s", job->thread, r, pl_status_message(st));
            pl_status_free(st);
            break;
        }
        const cf_values *want = &job->sets[k].want;
        if (got.n != want->n || memcmp(got.v, want->v, want->n * sizeof(float)) != 0) {
            cf_record("thread %d, run %d (input set %d): the outputs differ from the "
                      "reference (%zu values, want %zu)",
                      job->thread, r, k, got.n, want->n);
            break;
        }
    }
    return NULL;
}

/* Runs CF_THREADS threads over SESSIONS[t] (all the same session, or one
 * each), starting together. */
static void cf_race(pl_session *const *sessions, const cf_set *sets)
{
    pthread_barrier_t start;
    TH_CHECK(pthread_barrier_init(&start, NULL, CF_THREADS) == 0, "barrier");
    pthread_t tid[CF_THREADS];
    cf_job jobs[CF_THREADS];
    for (int t = 0; t < CF_THREADS; t++) {
        jobs[t] = (cf_job){.session = sessions[t], .sets = sets, .thread = t, .start = &start};
        TH_CHECK(pthread_create(&tid[t], NULL, cf_thread_main, &jobs[t]) == 0,
                 "pthread_create");
    }
    for (int t = 0; t < CF_THREADS; t++)
        pthread_join(tid[t], NULL);
    pthread_barrier_destroy(&start);
    TH_CHECK(atomic_load(&cf_failures) == 0, "%d failures; first: %s",
             atomic_load(&cf_failures), cf_first);
}

static void cf_case(bool shared)
{
    pl_runtime *rt = cf_runtime();
    for (int mi = 0; mi < 2; mi++) {
        pl_model *m = NULL;
        TH_CHECK_OK(pl_model_load(rt, cf_write_model(&cf_models[mi]), &m));
        /* References from a session of their own: the sessions under test
         * start cold. */
        pl_session *ref = NULL;
        TH_CHECK_OK(pl_session_create(m, NULL, &ref));
        cf_set *sets = cf_make_sets(ref);
        pl_session_destroy(ref);
        pl_session *sessions[CF_THREADS];
        for (int t = 0; t < CF_THREADS; t++) {
            if (shared && t > 0)
                sessions[t] = sessions[0];
            else
                TH_CHECK_OK(pl_session_create(m, NULL, &sessions[t]));
        }
        cf_race(sessions, sets);
        for (int t = 0; t < CF_THREADS; t++)
            if (!shared || t == 0)
                pl_session_destroy(sessions[t]);
        printf("%s: %d threads x %d runs on %s, all equal to the reference\n",
               cf_models[mi].file, CF_THREADS, CF_RUNS,
               shared ? "one session" : "a session each");
        free(sets);
        pl_model_destroy(m);
    }
    th_watch(NULL);
    pl_runtime_destroy(rt);
}

static void case_one_session(void)
{
    cf_case(true);
}

static void case_many_sessions(void)
{
    cf_case(false);
}

int main(int argc, char **argv)
{
    static const th_case cases[] = {
        {"one_session", case_one_session},
        {"many_sessions", case_many_sessions},
    };
    return th_main(argc, argv, cases, sizeof cases / sizeof cases[0], 2,
                   "STAGE_DIR SOURCE_DIR");
}
