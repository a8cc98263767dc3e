/* conformance_runner.c — runs the ONNX backend tests (the node tests and
 * the PyTorch-converted and -operator models of ONNX's test data) through
 * Plinth's public API on the modules a backend.ini selects, and compares
 * every output with ONNX's tolerances.
 *
 *   conformance_runner run CONFIG TESTDIR
 *       one test: exit 0 pass, 1 fail, 77 unsupported (the reason is
 *       printed), 2 usage or configuration error.
 *   conformance_runner list CONFIG ROOT...
 *       one line per test directory under the roots, sorted:
 *       "<name> <claimed|unsupported|error> <ops>". claimed: a session
 *       could be made; error: loading or session creation failed for a
 *       reason that is not "unsupported" (a bug the test should show).
 *       CTest registers a test for every claimed and error line.
 *   conformance_runner suite CONFIG OUT_SUMMARY ROOT...
 *       every test, in this process on one runtime; writes a summary (a
 *       table op x passed/failed/unsupported per root, the failures with
 *       their messages) whose last line is
 *       "conformance: passed=N failed=N unsupported=N claimed_ops=N",
 *       and prints that line. Exit 0 once the summary is written, whatever
 *       it says; 1 when it cannot be written.
 *   conformance_runner run-frozen CONFIG BACKEND TESTDIR
 *       the test with every input but the first frozen into an initializer
 *       (freeze.c), as a real model has its weights: exit 77 when it has
 *       fewer than two inputs or BACKEND takes none of its nodes (the
 *       backend's reason is printed), else as `run`.
 *   conformance_runner list-frozen CONFIG BACKEND ROOT...
 *       one line per test directory: "<name> <frozen|unsupported> <ops>";
 *       frozen: BACKEND takes at least one node of the frozen copy.
 *
 * Test layout (ONNX's backend test data): TESTDIR/model.onnx and
 * TESTDIR/test_data_set_K/{input_I.pb,output_I.pb}, serialized
 * TensorProtos numbered in the order of the graph's inputs (initializers
 * excluded) and outputs (bfloat16 values stored as UINT16 bit patterns). An optional TESTDIR/data.json may set rtol and
 * atol, as in ONNX's loader. */
#define _DEFAULT_SOURCE

#include <dirent.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <plinth/plinth.h>

#include "compare.h"
#include "freeze.h"
#include "model_info.h"
#include "tensor_file.h"

#define CF_EXIT_PASS 0
#define CF_EXIT_FAIL 1
#define CF_EXIT_USAGE 2
#define CF_EXIT_UNSUPPORTED 77

typedef enum cf_verdict { CF_PASS = 0, CF_FAIL = 1, CF_UNSUPPORTED = 2 } cf_verdict;

/* The outcome of one test directory. */
typedef struct cf_result {
    cf_verdict verdict;
    bool claimed;        /* a session was made: some module runs every node */
    char *ops;           /* the model's distinct ops, joined with ',' */
    char **op_list;      /* the same, one by one */
    size_t n_ops;
    char message[2048];  /* why it failed or is unsupported; "" on a pass */
} cf_result;

static void cf_result_free(cf_result *r)
{
    free(r->ops);
    for (size_t i = 0; i < r->n_ops; i++)
        free(r->op_list[i]);
    free(r->op_list);
    memset(r, 0, sizeof *r);
}

static void cf_set(cf_result *r, cf_verdict v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void cf_set(cf_result *r, cf_verdict v, const char *fmt, ...)
{
    r->verdict = v;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof r->message, fmt, ap);
    va_end(ap);
}

/* A failure of loading or session creation that means "Plinth cannot run
 * this (yet)" rather than "something is wrong": no schema or kernel for an
 * op, an opset or dtype nobody supports, shapes only known at run time. */
static bool cf_is_unsupported(const pl_status *st)
{
    pl_code c = pl_status_code(st);
    if (c == PL_CODE_UNSUPPORTED || c == PL_CODE_INCOMPATIBLE)
        return true;
    const char *m = pl_status_message(st);
    static const char *const marks[] = {
        "no module can run it", "no schema", "unsupported", "not supported",
        "must be fully known", "no loaded format module"};
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        if (strstr(m, marks[i]) != NULL)
            return true;
    return false;
}

/* Records a failure status ST of STEP in R (unsupported or failed) and
 * frees it. */
static void cf_set_status(cf_result *r, const char *step, pl_status *st)
{
    cf_set(r, cf_is_unsupported(st) ? CF_UNSUPPORTED : CF_FAIL, "%s: %s: %s", step,
           pl_code_name(pl_status_code(st)), pl_status_message(st));
    pl_status_free(st);
}

/* ---- test directories ------------------------------------------------------- */

static bool cf_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool cf_is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int cf_strcmp_p(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of the entries of DIR that start with PREFIX and are
 * directories, sorted; NULL-terminated, freed with cf_names_free. With
 * NEED_MODEL only directories holding a model.onnx. */
static char **cf_list_dirs(const char *dir, const char *prefix, bool need_model,
                           size_t *out_n)
{
    *out_n = 0;
    DIR *d = opendir(dir);
    if (d == NULL)
        return NULL;
    size_t n = 0, cap = 64;
    char **names = malloc(cap * sizeof *names);
    struct dirent *e;
    while (names != NULL && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        char *full = cf_join_path(dir, e->d_name);
        bool keep = full != NULL && cf_is_dir(full);
        if (keep && need_model) {
            char *model = cf_join_path(full, "model.onnx");
            keep = model != NULL && cf_is_file(model);
            free(model);
        }
        free(full);
        if (!keep)
            continue;
        if (n + 1 >= cap) {
            char **grown = realloc(names, cap * 2 * sizeof *names);
            if (grown == NULL)
                break;
            names = grown;
            cap *= 2;
        }
        names[n] = strdup(e->d_name);
        if (names[n] != NULL)
            n++;
    }
    closedir(d);
    if (names == NULL)
        return NULL;
    names[n] = NULL;
    if (n > 1)
        qsort(names, n, sizeof *names, cf_strcmp_p);
    *out_n = n;
    return names;
}

static void cf_names_free(char **names)
{
    for (size_t i = 0; names != NULL && names[i] != NULL; i++)
        free(names[i]);
    free(names);
}

/* rtol and atol from DIR/data.json when it sets them. */
static void cf_read_tolerances(const char *dir, double *rtol, double *atol)
{
    *rtol = CF_DEFAULT_RTOL;
    *atol = CF_DEFAULT_ATOL;
    char *path = cf_join_path(dir, "data.json");
    json_t *root = path != NULL && cf_is_file(path) ? json_load_file(path, 0, NULL) : NULL;
    free(path);
    if (root == NULL)
        return;
    json_t *v = json_object_get(root, "rtol");
    if (json_is_number(v))
        *rtol = json_number_value(v);
    v = json_object_get(root, "atol");
    if (json_is_number(v))
        *atol = json_number_value(v);
    json_decref(root);
}

/* The tensors of one test_data_set_K directory: PREFIX_0.pb, PREFIX_1.pb…
 * ("input" or "output"), exactly WANT of them. */
static pl_status *cf_read_set(const char *set_dir, const char *prefix, size_t want,
                              const int32_t *declared, cf_tensor **out)
{
    *out = NULL;
    char file[64];
    snprintf(file, sizeof file, "%s_%zu.pb", prefix, want);
    char *extra = cf_join_path(set_dir, file);
    bool more = extra != NULL && cf_is_file(extra);
    free(extra);
    if (more)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "%s has more %s files than the model has %ss (%zu)", set_dir,
                                prefix, prefix, want);
    cf_tensor *ts = calloc(want ? want : 1, sizeof *ts);
    if (ts == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < want; i++) {
        snprintf(file, sizeof file, "%s_%zu.pb", prefix, i);
        char *path = cf_join_path(set_dir, file);
        pl_status *st = path ? cf_tensor_read(path, declared[i], &ts[i])
                             : pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
        free(path);
        if (st != NULL) {
            for (size_t k = 0; k < i; k++)
                cf_tensor_free(&ts[k]);
            free(ts);
            return st;
        }
    }
    *out = ts;
    return NULL;
}

static void cf_tensors_free(cf_tensor *ts, size_t n)
{
    for (size_t i = 0; ts != NULL && i < n; i++)
        cf_tensor_free(&ts[i]);
    free(ts);
}

static bool cf_same_shapes(const cf_tensor *a, const cf_tensor *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (a[i].ndim != b[i].ndim)
            return false;
        for (int32_t d = 0; d < a[i].ndim; d++)
            if (a[i].dims[d] != b[i].dims[d])
                return false;
    }
    return true;
}

/* ---- one test ---------------------------------------------------------------- */

/* Loads MODEL_PATH on RT, binds every input to the shape of INPUTS (the
 * first data set; NULL when the test has none) and makes a session. On
 * failure records the verdict in R and returns NULL. */
static pl_session *cf_prepare(pl_runtime *rt, const char *model_path,
                              const cf_model_info *info, const cf_tensor *inputs,
                              cf_result *r)
{
    pl_model *m = NULL;
    pl_status *st = pl_model_load(rt, model_path, &m);
    if (st != NULL) {
        cf_set_status(r, "loading the model", st);
        return NULL;
    }
    for (size_t i = 0; inputs != NULL && i < info->n_inputs; i++) {
        st = pl_model_bind_input(m, info->inputs[i], inputs[i].ndim, inputs[i].dims);
        if (st != NULL) {
            char step[512];
            snprintf(step, sizeof step, "binding input '%s'", info->inputs[i]);
            cf_set_status(r, step, st);
            pl_model_destroy(m);
            return NULL;
        }
    }
    pl_session *s = NULL;
    st = pl_session_create(m, NULL, &s);
    pl_model_destroy(m);
    if (st != NULL) {
        cf_set_status(r, "creating a session", st);
        return NULL;
    }
    return s;
}

/* Runs S once on INPUTS and compares with EXPECTED. */
static void cf_run_set(pl_session *s, const cf_model_info *info, const cf_tensor *inputs,
                       const cf_tensor *expected, const char *set_name, double rtol,
                       double atol, cf_result *r)
{
    pl_io *in = calloc(info->n_inputs + 1, sizeof *in);
    pl_io *out = calloc(info->n_outputs + 1, sizeof *out);
    if (in == NULL || out == NULL) {
        free(in);
        free(out);
        cf_set(r, CF_FAIL, "out of memory");
        return;
    }
    for (size_t i = 0; i < info->n_inputs; i++) {
        in[i].name = info->inputs[i];
        in[i].tensor = cf_tensor_view(&inputs[i]);
    }
    for (size_t i = 0; i < info->n_outputs; i++)
        out[i].name = info->outputs[i];
    pl_status *st = pl_session_run(s, in, info->n_inputs, out, info->n_outputs);
    if (st != NULL) {
        cf_set(r, CF_FAIL, "%s: run failed: %s: %s", set_name,
               pl_code_name(pl_status_code(st)), pl_status_message(st));
        pl_status_free(st);
    }
    for (size_t i = 0; st == NULL && i < info->n_outputs && r->verdict == CF_PASS; i++) {
        pl_status *cmp = cf_compare(info->outputs[i], &out[i].tensor, &expected[i], rtol, atol);
        if (cmp != NULL) {
            cf_set(r, CF_FAIL, "%s: %s", set_name, pl_status_message(cmp));
            pl_status_free(cmp);
        }
    }
    for (size_t i = 0; i < info->n_outputs; i++)
        pl_buffer_free(out[i].tensor.data);
    free(in);
    free(out);
}

/* Runs the test in DIR on RT (or, with ONLY_CLAIM, only finds out whether
 * a session can be made) and fills R. */
static void cf_run_test(pl_runtime *rt, const char *dir, bool only_claim, cf_result *r)
{
    memset(r, 0, sizeof *r);
    char *model_path = cf_join_path(dir, "model.onnx");
    cf_model_info info;
    pl_status *st = model_path ? cf_model_info_read(model_path, &info)
                               : pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    if (st != NULL) {
        cf_set_status(r, "reading the model", st);
        free(model_path);
        return;
    }
    r->ops = strdup(info.n_ops ? info.ops : "-");
    r->op_list = info.op_list;
    r->n_ops = info.n_ops;
    info.op_list = NULL;
    info.n_ops = 0;
    if (info.unsupported[0] != '\0') {
        cf_set(r, CF_UNSUPPORTED, "%s", info.unsupported);
        cf_model_info_free(&info);
        free(model_path);
        return;
    }
    double rtol, atol;
    cf_read_tolerances(dir, &rtol, &atol);
    size_t n_sets = 0;
    char **sets = cf_list_dirs(dir, "test_data_set_", false, &n_sets);
    pl_session *s = NULL;
    cf_tensor *bound = NULL; /* the inputs whose shapes S was made for */
    if (n_sets == 0) {
        if (only_claim && (s = cf_prepare(rt, model_path, &info, NULL, r)) != NULL)
            r->claimed = true;
        else if (!only_claim)
            cf_set(r, CF_UNSUPPORTED, "%s has no test_data_set_* directory", dir);
    }
    for (size_t k = 0; k < n_sets && r->verdict == CF_PASS; k++) {
        cf_tensor *inputs = NULL, *expected = NULL;
        char *set_dir = cf_join_path(dir, sets[k]);
        st = set_dir ? cf_read_set(set_dir, "input", info.n_inputs, info.input_types, &inputs)
                     : pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
        if (st == NULL && !only_claim)
            st = cf_read_set(set_dir, "output", info.n_outputs, info.output_types, &expected);
        free(set_dir);
        if (st != NULL) {
            cf_set_status(r, "reading the test data", st);
            cf_tensors_free(inputs, info.n_inputs);
            break;
        }
        char why[512];
        for (size_t i = 0; i < info.n_inputs && r->verdict == CF_PASS; i++)
            if (!cf_model_info_input_fits(&info, i, inputs[i].ndim, inputs[i].dims, why,
                                          sizeof why))
                cf_set(r, CF_UNSUPPORTED, "%s: %s", sets[k], why);
        if (r->verdict != CF_PASS) {
            cf_tensors_free(inputs, info.n_inputs);
            cf_tensors_free(expected, info.n_outputs);
            break;
        }
        /* Shapes are bound before a session is made, so a data set whose
         * inputs have other shapes needs a session of its own. */
        if (s != NULL && !cf_same_shapes(bound, inputs, info.n_inputs)) {
            pl_session_destroy(s);
            s = NULL;
        }
        if (s == NULL) {
            s = cf_prepare(rt, model_path, &info, inputs, r);
            r->claimed = r->claimed || s != NULL;
            cf_tensors_free(bound, info.n_inputs);
            bound = NULL;
            if (s != NULL) {
                bound = inputs;
                inputs = NULL;
            }
        }
        if (s != NULL && !only_claim)
            cf_run_set(s, &info, inputs ? inputs : bound, expected, sets[k], rtol, atol, r);
        cf_tensors_free(inputs, info.n_inputs);
        cf_tensors_free(expected, info.n_outputs);
        if (only_claim)
            break;
    }
    cf_tensors_free(bound, info.n_inputs);
    pl_session_destroy(s);
    cf_names_free(sets);
    cf_model_info_free(&info);
    free(model_path);
}

/* ---- runtime ------------------------------------------------------------------ */

static void cf_quiet_sink(void *user, int level, const char *line)
{
    (void)user;
    (void)level;
    (void)line;
}

static pl_runtime *cf_runtime(const char *config, bool quiet)
{
    pl_runtime_options o = {.struct_size = sizeof o,
                            .config_path = config,
                            .ignore_environment = true,
                            .log_sink = quiet ? cf_quiet_sink : NULL};
    pl_runtime *rt = NULL;
    pl_status *st = pl_runtime_create(&o, &rt);
    if (st != NULL) {
        fprintf(stderr, "conformance_runner: %s: %s\n", config, pl_status_message(st));
        pl_status_free(st);
        return NULL;
    }
    return rt;
}

/* ---- commands ---------------------------------------------------------------- */

static int cf_cmd_run(const char *config, const char *dir)
{
    pl_runtime *rt = cf_runtime(config, false);
    if (rt == NULL)
        return CF_EXIT_USAGE;
    cf_result r;
    cf_run_test(rt, dir, false, &r);
    int rc = CF_EXIT_PASS;
    switch (r.verdict) {
    case CF_PASS:
        printf("%s: passed (%s)\n", dir, r.ops);
        break;
    case CF_UNSUPPORTED:
        printf("%s: unsupported: %s\n", dir, r.message);
        rc = CF_EXIT_UNSUPPORTED;
        break;
    case CF_FAIL:
        printf("%s: FAILED: %s\n", dir, r.message);
        rc = CF_EXIT_FAIL;
        break;
    }
    cf_result_free(&r);
    pl_runtime_destroy(rt);
    return rc;
}

static const char *cf_list_status(const cf_result *r)
{
    if (r->claimed)
        return "claimed";
    return r->verdict == CF_FAIL ? "error" : "unsupported";
}

/* Calls FN(RT, name, dir, USER) for every test directory under ROOTS (on
 * a quiet runtime of CONFIG), in order, printing its line; returns the
 * exit status of a listing command. */
typedef void (*cf_each_fn)(pl_runtime *rt, const char *name, const char *dir, void *user);

static int cf_list_each(const char *config, char **roots, int n_roots, cf_each_fn fn,
                        void *user)
{
    pl_runtime *rt = cf_runtime(config, true);
    if (rt == NULL)
        return CF_EXIT_USAGE;
    for (int i = 0; i < n_roots; i++) {
        size_t n = 0;
        char **names = cf_list_dirs(roots[i], "test_", true, &n);
        for (size_t k = 0; k < n; k++) {
            char *dir = cf_join_path(roots[i], names[k]);
            if (dir != NULL)
                fn(rt, names[k], dir, user);
            fflush(stdout);
            free(dir);
        }
        cf_names_free(names);
    }
    pl_runtime_destroy(rt);
    return CF_EXIT_PASS;
}

static void cf_list_one(pl_runtime *rt, const char *name, const char *dir, void *user)
{
    (void)user;
    cf_result r;
    cf_run_test(rt, dir, true, &r);
    printf("%s %s %s\n", name, cf_list_status(&r), r.ops ? r.ops : "-");
    cf_result_free(&r);
}

static int cf_cmd_list(const char *config, char **roots, int n_roots)
{
    return cf_list_each(config, roots, n_roots, cf_list_one, NULL);
}

/* ---- frozen inputs ------------------------------------------------------------ */

/* Freezes the test in DIR into a new temporary directory (its path in
 * TMP) and counts the nodes of a session for it that BACKEND runs: *ON of
 * *TOTAL, WHY the first other backend's node's refusal by BACKEND. A
 * status says why no count could be made; TMP is then removed. */
static pl_status *cf_frozen_prepare(pl_runtime *rt, const char *dir, const char *backend,
                                    char *tmp, size_t tmp_size, size_t *on, size_t *total,
                                    char *why, size_t why_size)
{
    *on = *total = 0;
    why[0] = '\0';
    const char *base = getenv("TMPDIR");
    snprintf(tmp, tmp_size, "%s/plinth-frozen-XXXXXX", base != NULL && base[0] ? base : "/tmp");
    if (mkdtemp(tmp) == NULL)
        return pl_status_create(PL_CODE_IO_ERROR, "%s: cannot make a directory", tmp);
    size_t frozen = 0;
    pl_status *st = cf_freeze(dir, tmp, &frozen);
    char *model_path = cf_join_path(tmp, "model.onnx");
    char *set_dir = cf_join_path(tmp, "test_data_set_0");
    cf_model_info info;
    memset(&info, 0, sizeof info);
    if (st == NULL)
        st = model_path && set_dir ? cf_model_info_read(model_path, &info)
                                   : pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    cf_tensor *inputs = NULL;
    if (st == NULL)
        st = cf_read_set(set_dir, "input", info.n_inputs, info.input_types, &inputs);
    cf_result r;
    memset(&r, 0, sizeof r);
    pl_session *s = st == NULL ? cf_prepare(rt, model_path, &info, inputs, &r) : NULL;
    if (st == NULL && s == NULL)
        st = pl_status_create(r.verdict == CF_UNSUPPORTED ? PL_CODE_UNSUPPORTED
                                                          : PL_CODE_INTERNAL,
                              "%s", r.message);
    char *text = NULL;
    if (st == NULL)
        st = pl_session_explain(s, true, &text);
    json_t *root = text != NULL ? json_loads(text, 0, NULL) : NULL;
    json_t *placement = json_object_get(root, "placement");
    for (size_t i = 0; i < json_array_size(placement); i++) {
        json_t *p = json_array_get(placement, i);
        const char *b = json_string_value(json_object_get(p, "backend"));
        (*total)++;
        if (b != NULL && strcmp(b, backend) == 0)
            (*on)++;
        else if (why[0] == '\0') {
            const char *reason =
                json_string_value(json_object_get(json_object_get(p, "reasons"), backend));
            snprintf(why, why_size, "%s", reason != NULL ? reason : "(no reason given)");
        }
    }
    if (st == NULL && root == NULL)
        st = pl_status_create(PL_CODE_INTERNAL, "explain gave no JSON");
    json_decref(root);
    pl_string_free(text);
    pl_session_destroy(s);
    cf_tensors_free(inputs, info.n_inputs);
    cf_model_info_free(&info);
    free(model_path);
    free(set_dir);
    if (st != NULL)
        cf_freeze_remove(tmp);
    return st;
}

static int cf_cmd_run_frozen(const char *config, const char *backend, const char *dir)
{
    pl_runtime *rt = cf_runtime(config, false);
    if (rt == NULL)
        return CF_EXIT_USAGE;
    char tmp[4096], why[1024];
    size_t on, total;
    pl_status *st = cf_frozen_prepare(rt, dir, backend, tmp, sizeof tmp, &on, &total, why,
                                      sizeof why);
    int rc = CF_EXIT_PASS;
    if (st != NULL) {
        bool unsupported = cf_is_unsupported(st);
        printf("%s (frozen): %s: %s\n", dir, unsupported ? "unsupported" : "FAILED",
               pl_status_message(st));
        pl_status_free(st);
        pl_runtime_destroy(rt);
        return unsupported ? CF_EXIT_UNSUPPORTED : CF_EXIT_FAIL;
    }
    if (on == 0) {
        printf("%s (frozen): unsupported: %s takes none of the %zu nodes: %s\n", dir, backend,
               total, why);
        rc = CF_EXIT_UNSUPPORTED;
    } else {
        cf_result r;
        cf_run_test(rt, tmp, false, &r);
        switch (r.verdict) {
        case CF_PASS:
            printf("%s (frozen): passed, %zu of %zu nodes on %s (%s)\n", dir, on, total, backend,
                   r.ops);
            break;
        case CF_UNSUPPORTED:
            printf("%s (frozen): unsupported: %s\n", dir, r.message);
            rc = CF_EXIT_UNSUPPORTED;
            break;
        case CF_FAIL:
            printf("%s (frozen): FAILED with %zu of %zu nodes on %s: %s\n", dir, on, total,
                   backend, r.message);
            rc = CF_EXIT_FAIL;
            break;
        }
        cf_result_free(&r);
    }
    cf_freeze_remove(tmp);
    pl_runtime_destroy(rt);
    return rc;
}

static void cf_list_frozen_one(pl_runtime *rt, const char *name, const char *dir, void *user)
{
    const char *backend = user;
    char tmp[4096], why[1024];
    size_t on = 0, total = 0;
    cf_model_info info;
    char *model_path = cf_join_path(dir, "model.onnx");
    bool two = model_path != NULL && cf_model_info_read(model_path, &info) == NULL &&
               (info.n_inputs >= 2 || (cf_model_info_free(&info), false));
    pl_status *st = NULL;
    if (two)
        st = cf_frozen_prepare(rt, dir, backend, tmp, sizeof tmp, &on, &total, why, sizeof why);
    if (two && st == NULL)
        cf_freeze_remove(tmp);
    printf("%s %s %s\n", name, two && st == NULL && on > 0 ? "frozen" : "unsupported",
           two && info.n_ops ? info.ops : "-");
    pl_status_free(st);
    if (two)
        cf_model_info_free(&info);
    free(model_path);
}

static int cf_cmd_list_frozen(const char *config, const char *backend, char **roots,
                              int n_roots)
{
    return cf_list_each(config, roots, n_roots, cf_list_frozen_one, (void *)backend);
}

/* ---- suite ------------------------------------------------------------------- */

/* One row of a section's table. */
typedef struct cf_row {
    char *ops;
    int counts[3]; /* by cf_verdict */
} cf_row;

typedef struct cf_section {
    const char *root;
    const char *name;    /* the root's last component */
    cf_row *rows;
    size_t n_rows;
    int totals[3];
    char **failures;     /* "name: message" */
    size_t n_failures;
} cf_section;

static const char *cf_basename(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    const char *end = path + n;
    const char *p = end;
    while (p > path && p[-1] != '/')
        p--;
    return p;
}

static bool cf_section_add(cf_section *sec, const char *test, const cf_result *r)
{
    size_t i = 0;
    while (i < sec->n_rows && strcmp(sec->rows[i].ops, r->ops ? r->ops : "-") != 0)
        i++;
    if (i == sec->n_rows) {
        cf_row *grown = realloc(sec->rows, (sec->n_rows + 1) * sizeof *grown);
        if (grown == NULL)
            return false;
        sec->rows = grown;
        memset(&sec->rows[i], 0, sizeof sec->rows[i]);
        if ((sec->rows[i].ops = strdup(r->ops ? r->ops : "-")) == NULL)
            return false;
        sec->n_rows++;
    }
    sec->rows[i].counts[r->verdict]++;
    sec->totals[r->verdict]++;
    if (r->verdict == CF_FAIL) {
        char **grown = realloc(sec->failures, (sec->n_failures + 1) * sizeof *grown);
        if (grown == NULL)
            return false;
        sec->failures = grown;
        size_t len = strlen(test) + strlen(r->message) + 4;
        char *line = malloc(len);
        if (line == NULL)
            return false;
        snprintf(line, len, "%s: %s", test, r->message);
        sec->failures[sec->n_failures++] = line;
    }
    return true;
}

static int cf_row_cmp(const void *a, const void *b)
{
    return strcmp(((const cf_row *)a)->ops, ((const cf_row *)b)->ops);
}

static void cf_section_free(cf_section *sec)
{
    for (size_t i = 0; i < sec->n_rows; i++)
        free(sec->rows[i].ops);
    free(sec->rows);
    for (size_t i = 0; i < sec->n_failures; i++)
        free(sec->failures[i]);
    free(sec->failures);
}

/* The distinct op types of claimed tests, for claimed_ops. */
typedef struct cf_opset {
    char **names;
    size_t n;
} cf_opset;

static void cf_opset_add(cf_opset *set, const char *op)
{
    for (size_t i = 0; i < set->n; i++)
        if (strcmp(set->names[i], op) == 0)
            return;
    char **grown = realloc(set->names, (set->n + 1) * sizeof *grown);
    if (grown == NULL)
        return;
    set->names = grown;
    if ((set->names[set->n] = strdup(op)) != NULL)
        set->n++;
}

static void cf_section_write(FILE *f, const cf_section *sec)
{
    fprintf(f, "\n== %s (%s): passed=%d failed=%d unsupported=%d\n\n", sec->name, sec->root,
            sec->totals[CF_PASS], sec->totals[CF_FAIL], sec->totals[CF_UNSUPPORTED]);
    int width = 2;
    for (size_t i = 0; i < sec->n_rows; i++) {
        int len = (int)strlen(sec->rows[i].ops);
        if (len > width)
            width = len;
    }
    if (width > 40)
        width = 40;
    fprintf(f, "%-*s %7s %7s %12s\n", width, "op", "passed", "failed", "unsupported");
    for (size_t i = 0; i < sec->n_rows; i++)
        fprintf(f, "%-*s %7d %7d %12d\n", width, sec->rows[i].ops,
                sec->rows[i].counts[CF_PASS], sec->rows[i].counts[CF_FAIL],
                sec->rows[i].counts[CF_UNSUPPORTED]);
    if (sec->n_failures > 0) {
        fprintf(f, "\nfailures in %s:\n", sec->name);
        for (size_t i = 0; i < sec->n_failures; i++)
            fprintf(f, "  %s\n", sec->failures[i]);
    }
}

static int cf_cmd_suite(const char *config, const char *summary, char **roots, int n_roots)
{
    pl_runtime *rt = cf_runtime(config, true);
    if (rt == NULL)
        return CF_EXIT_USAGE;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cf_section *secs = calloc((size_t)n_roots, sizeof *secs);
    cf_opset claimed = {0};
    int totals[3] = {0};
    for (int i = 0; secs != NULL && i < n_roots; i++) {
        cf_section *sec = &secs[i];
        sec->root = roots[i];
        sec->name = cf_basename(roots[i]);
        size_t n = 0;
        char **names = cf_list_dirs(roots[i], "test_", true, &n);
        if (names == NULL)
            fprintf(stderr, "conformance_runner: %s: no test directories\n", roots[i]);
        for (size_t k = 0; k < n; k++) {
            char *dir = cf_join_path(roots[i], names[k]);
            cf_result r;
            cf_run_test(rt, dir, false, &r);
            cf_section_add(sec, names[k], &r);
            totals[r.verdict]++;
            for (size_t o = 0; r.claimed && o < r.n_ops; o++)
                cf_opset_add(&claimed, r.op_list[o]);
            cf_result_free(&r);
            free(dir);
        }
        if (sec->n_rows > 1)
            qsort(sec->rows, sec->n_rows, sizeof *sec->rows, cf_row_cmp);
        cf_names_free(names);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    char last[256];
    snprintf(last, sizeof last, "conformance: passed=%d failed=%d unsupported=%d claimed_ops=%zu",
             totals[CF_PASS], totals[CF_FAIL], totals[CF_UNSUPPORTED], claimed.n);
    FILE *f = fopen(summary, "w");
    if (f == NULL) {
        perror(summary);
    } else {
        fprintf(f, "Plinth ONNX conformance\nconfig: %s\nruntime: %.1f s\n", config,
                (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
        if (claimed.n > 1)
            qsort(claimed.names, claimed.n, sizeof *claimed.names, cf_strcmp_p);
        fprintf(f, "claimed ops (%zu):", claimed.n);
        for (size_t i = 0; i < claimed.n; i++)
            fprintf(f, " %s", claimed.names[i]);
        fprintf(f, "\n");
        for (int i = 0; secs != NULL && i < n_roots; i++)
            cf_section_write(f, &secs[i]);
        fprintf(f, "\n%s\n", last);
        fclose(f);
    }
    printf("%s\n", last);
    for (int i = 0; secs != NULL && i < n_roots; i++)
        cf_section_free(&secs[i]);
    free(secs);
    for (size_t i = 0; i < claimed.n; i++)
        free(claimed.names[i]);
    free(claimed.names);
    pl_runtime_destroy(rt);
    /* Failures are results, reported in the summary and its last line;
     * only a summary that could not be written is an error. */
    return secs == NULL || f == NULL ? CF_EXIT_FAIL : CF_EXIT_PASS;
}

static int cf_usage(void)
{
    fprintf(stderr,
            "usage: conformance_runner run CONFIG TESTDIR\n"
            "       conformance_runner list CONFIG ROOT...\n"
            "       conformance_runner suite CONFIG OUT_SUMMARY ROOT...\n"
            "       conformance_runner run-frozen CONFIG BACKEND TESTDIR\n"
            "       conformance_runner list-frozen CONFIG BACKEND ROOT...\n");
    return CF_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 4 && strcmp(argv[1], "run") == 0)
        return cf_cmd_run(argv[2], argv[3]);
    if (argc >= 4 && strcmp(argv[1], "list") == 0)
        return cf_cmd_list(argv[2], argv + 3, argc - 3);
    if (argc == 5 && strcmp(argv[1], "run-frozen") == 0)
        return cf_cmd_run_frozen(argv[2], argv[3], argv[4]);
    if (argc >= 5 && strcmp(argv[1], "list-frozen") == 0)
        return cf_cmd_list_frozen(argv[2], argv[3], argv + 4, argc - 4);
    if (argc >= 5 && strcmp(argv[1], "suite") == 0)
        return cf_cmd_suite(argv[2], argv[3], argv + 4, argc - 4);
    return cf_usage();
}
