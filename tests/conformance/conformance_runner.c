/* conformance_runner.c — runs the ONNX backend tests (the node tests and
 * the PyTorch-converted and -operator models of ONNX's test data) through
 * Plinth's public API, once per backend, and compares every output with
 * ONNX's tolerances.
 *
 * A backend B (every module that takes nodes: cpu, onednn, example_acc,
 * cuda…) is tested on a runtime whose placement offers B every node first
 * and leaves the rest to cpu (backend.c). A test counts for B only when
 * the session's placement puts at least one of its nodes on B: passed when
 * the outputs match, failed when they do not (or the run fails); a test
 * whose nodes all go elsewhere is "not claimed" by B, never passed. When B
 * takes no node of a test with two or more graph inputs, the test is tried
 * again with every input but the first frozen into an initializer
 * (freeze.c): ONNX feeds weights, shapes and scales as graph inputs, while
 * onednn only takes constant weights and many shape-computing ops need
 * constant operands. "unsupported" is left for a test nobody can run.
 *
 *   conformance_runner backends CONFIG
 *       one line per module that takes nodes: "<name> <status> <reason>",
 *       status as `plinth modules` (loaded, no-device, disabled, rejected).
 *   conformance_runner backend CONFIG BACKEND
 *       exit 0 when BACKEND is loaded; 77 (skipped) with the reason when it
 *       is no-device or disabled; 1 when it was rejected or is not found.
 *   conformance_runner list CONFIG ROOT...
 *       one line per test directory under the roots, sorted:
 *       "<name> <b>=<state>[,<b>=<state>...] <ops>" for every loaded
 *       backend b; state: claimed (b takes a node), frozen (b takes a node
 *       of the frozen copy), not-claimed, unsupported (no session can be
 *       made), error (loading failed for a reason that is not
 *       "unsupported": a bug the test should show).
 *   conformance_runner run CONFIG BACKEND TESTDIR
 *       one test on one backend: exit 0 passed, 1 failed, 77 not claimed,
 *       unsupported or BACKEND not loaded (the reason is printed), 2 usage
 *       or configuration error.
 *   conformance_runner batch CONFIG BACKEND KNOWN|- ROOT TEST...
 *       the TESTs (directories under ROOT) on BACKEND in this process, each
 *       as `run` runs it; a test the KNOWN file lists must fail. Exit 0
 *       when every test did, 1 otherwise (the sanitizer builds' CTest
 *       tests: conformance_tests.cmake.in).
 *   conformance_runner suite CONFIG OUT_SUMMARY [--known FILE] ROOT...
 *       every test on every backend, in this process; prints a line per
 *       failure as it goes, writes a summary (per backend and root:
 *       passed / failed / not claimed / unsupported, a table op x backend,
 *       the failures with their messages, known differences marked) and
 *       prints its last lines: one per backend,
 *       "conformance <backend>: passed=N failed=N not_claimed=N
 *       unsupported=N", and "conformance: tests=N unsupported=N".
 *       Exit 0 once the summary is written, whatever it says; 1 when it
 *       cannot be written.
 *
 * Test layout (ONNX's backend test data): TESTDIR/model.onnx and
 * TESTDIR/test_data_set_K/{input_I.pb,output_I.pb}, serialized
 * TensorProtos numbered in the order of the graph's inputs (initializers
 * excluded) and outputs (bfloat16 values stored as UINT16 bit patterns).
 * An optional TESTDIR/data.json may set rtol and atol, as in ONNX's
 * loader. */
#define _DEFAULT_SOURCE

#include <dirent.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <plinth/module.h>
#include <plinth/plinth.h>

#include "backend.h"
#include "compare.h"
#include "freeze.h"
#include "model_info.h"
#include "tensor_file.h"

#define CF_EXIT_PASS 0
#define CF_EXIT_FAIL 1
#define CF_EXIT_USAGE 2
#define CF_EXIT_SKIP 77

typedef enum cf_verdict {
    CF_PASS = 0,
    CF_FAIL = 1,
    CF_NOT_CLAIMED = 2,
    CF_UNSUPPORTED = 3
} cf_verdict;
#define CF_N_VERDICTS 4

/* The outcome of one test directory on one backend. */
typedef struct cf_result {
    cf_verdict verdict;
    bool placed;         /* a session was made, so the placement is known */
    size_t on, total;    /* nodes the backend runs, of the session's nodes */
    bool frozen;         /* the verdict is the frozen copy's */
    size_t n_inputs;     /* the model's graph inputs */
    char *ops;           /* the model's distinct ops, joined with ',' */
    char **op_list;      /* the same, one by one */
    size_t n_ops;
    char why[1024];      /* the backend's reason for a node it did not take */
    char message[2048];  /* why it failed, is unsupported or not claimed */
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


/* ---- one test on one backend ------------------------------------------------ */

/* Loads MODEL_PATH on RT, binds every input to the shape of INPUTS (the
 * first data set; NULL when the test has none) and makes a session, whose
 * placement is counted for BACKEND into R. On failure records the verdict
 * in R and returns NULL. */
static pl_session *cf_prepare(pl_runtime *rt, const char *backend, const char *model_path,
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
    size_t on = 0, total = 0;
    char why[sizeof r->why];
    st = cf_backend_count(s, backend, &on, &total, why, sizeof why);
    if (st != NULL) {
        cf_set_status(r, "explaining the session", st);
        pl_session_destroy(s);
        return NULL;
    }
    /* The first session's placement; another data set's shapes may place
     * differently, and the backend then counts if any session used it. */
    if (!r->placed || on > r->on) {
        r->on = on;
        r->total = total;
        snprintf(r->why, sizeof r->why, "%s", why);
    }
    r->placed = true;
    /* A compile of the backend's that failed fell back to cpu (strict =
     * no): the backend claimed nodes it cannot run. */
    for (size_t i = 0; i < pl_session_warning_count(s); i++) {
        const char *w = pl_session_warning(s, i);
        if (strstr(w, "compile failed") != NULL && r->verdict == CF_PASS) {
            cf_set(r, CF_FAIL, "%s took nodes it then failed to compile: %s", backend, w);
            r->on = r->on > 0 ? r->on : 1;
        }
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
    /* (info->ops: the ops joined by commas; the list went to the result) */
    const char *ops = info->ops != NULL ? info->ops : "";
    bool random = strstr(ops, "Bernoulli") != NULL || strstr(ops, "Random") != NULL ||
                  strstr(ops, "Multinomial") != NULL;
    for (size_t i = 0; st == NULL && i < info->n_outputs && r->verdict == CF_PASS; i++) {
        pl_status *cmp =
            random ? cf_compare_random(info->outputs[i], &out[i].tensor, &expected[i])
                   : cf_compare(info->outputs[i], &out[i].tensor, &expected[i], rtol, atol);
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


/* Runs the test in DIR on RT (or, with ONLY_CLAIM, only makes a session,
 * to learn whether BACKEND takes a node) and fills R, whose verdict is
 * CF_PASS, CF_FAIL or CF_UNSUPPORTED; cf_eval makes "not claimed". */
static void cf_run_test(pl_runtime *rt, const char *backend, const char *dir, bool only_claim,
                        cf_result *r)
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
    r->n_inputs = info.n_inputs;
    info.op_list = NULL;
    info.n_ops = 0;
    if (info.unsupported[0] != '\0') {
        cf_set(r, CF_UNSUPPORTED, "%s", info.unsupported);
        r->n_inputs = 0; /* nothing to freeze either */
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
        if (only_claim)
            s = cf_prepare(rt, backend, model_path, &info, NULL, r);
        else
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
            s = cf_prepare(rt, backend, model_path, &info, inputs, r);
            cf_tensors_free(bound, info.n_inputs);
            bound = NULL;
            if (s != NULL) {
                bound = inputs;
                inputs = NULL;
            }
        }
        if (s != NULL && !only_claim && r->verdict == CF_PASS)
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

/* Takes F's verdict, placement and messages into R (R keeps its ops). */
static void cf_take_frozen(cf_result *r, const cf_result *f)
{
    r->verdict = f->verdict;
    r->placed = f->placed;
    r->on = f->on;
    r->total = f->total;
    r->frozen = true;
    snprintf(r->why, sizeof r->why, "%s", f->why);
    snprintf(r->message, sizeof r->message, "%s", f->message);
}

/* The test in DIR on BACKEND (RT from cf_backend_runtime for it): run (or,
 * with ONLY_CLAIM, only placed), frozen when BACKEND takes no node of it
 * as it is, and judged: passed or failed only when BACKEND took a node. */
static void cf_eval(pl_runtime *rt, const char *backend, const char *dir, bool only_claim,
                    cf_result *r)
{
    cf_run_test(rt, backend, dir, only_claim, r);
    if (r->placed && r->on > 0)
        return;
    /* Not taken, or no session at all (shapes that depend on an input's
     * value are unknown until it is constant): try the frozen copy. A load
     * that failed for another reason stays a failure. */
    bool retry = r->n_inputs >= 2 && (r->placed || r->verdict == CF_UNSUPPORTED);
    if (retry) {
        const char *base = getenv("TMPDIR");
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s/plinth-frozen-XXXXXX",
                 base != NULL && base[0] ? base : "/tmp");
        size_t n_frozen = 0;
        bool made = mkdtemp(tmp) != NULL;
        pl_status *st = made ? cf_freeze(dir, tmp, &n_frozen)
                             : pl_status_create(PL_CODE_IO_ERROR, "%s: cannot make it", tmp);
        if (st == NULL) {
            cf_result f;
            cf_run_test(rt, backend, tmp, only_claim, &f);
            if ((f.placed && f.on > 0) || (f.placed && !r->placed))
                cf_take_frozen(r, &f);
            cf_result_free(&f);
        }
        /* A copy that could not be made leaves the test judged as it is. */
        pl_status_free(st);
        if (made)
            cf_freeze_remove(tmp);
    }
    if (r->placed && r->on == 0)
        cf_set(r, CF_NOT_CLAIMED, "%s takes none of the %zu node(s)%s; %s", backend, r->total,
               r->frozen ? " of the frozen copy" : "", r->why);
}

/* ---- runtimes and backends ------------------------------------------------------ */

static void cf_quiet_sink(void *user, int level, const char *line)
{
    (void)user;
    (void)level;
    (void)line;
}

/* A runtime of CONFIG as it is (to list the modules). */
static pl_runtime *cf_runtime(const char *config)
{
    pl_runtime_options o = {.struct_size = sizeof o,
                            .config_path = config,
                            .ignore_environment = true,
                            .log_sink = cf_quiet_sink};
    pl_runtime *rt = NULL;
    pl_status *st = pl_runtime_create(&o, &rt);
    if (st != NULL) {
        fprintf(stderr, "conformance_runner: %s: %s\n", config, pl_status_message(st));
        pl_status_free(st);
        return NULL;
    }
    return rt;
}

/* The backends of CONFIG: every one in *OUT_ALL (*OUT_N_ALL), and the
 * loaded ones' indexes in *OUT_LOADED (*OUT_N_LOADED). False (with the
 * reason printed) when CONFIG cannot be used. */
static bool cf_config_backends(const char *config, cf_backend **out_all, size_t *out_n_all,
                               size_t **out_loaded, size_t *out_n_loaded)
{
    *out_all = NULL;
    *out_loaded = NULL;
    *out_n_all = *out_n_loaded = 0;
    pl_runtime *rt = cf_runtime(config);
    if (rt == NULL)
        return false;
    cf_backends_list(rt, out_all, out_n_all);
    pl_runtime_destroy(rt);
    *out_loaded = calloc(*out_n_all ? *out_n_all : 1, sizeof **out_loaded);
    if (*out_loaded == NULL) {
        fprintf(stderr, "conformance_runner: out of memory\n");
        free(*out_all);
        *out_all = NULL;
        return false;
    }
    for (size_t i = 0; i < *out_n_all; i++)
        if ((*out_all)[i].status == PL_MODULE_LOADED)
            (*out_loaded)[(*out_n_loaded)++] = i;
    return true;
}

/* ---- commands: backends, backend, run ------------------------------------------- */

static int cf_cmd_backends(const char *config)
{
    cf_backend *all;
    size_t n_all, *loaded, n_loaded;
    if (!cf_config_backends(config, &all, &n_all, &loaded, &n_loaded))
        return CF_EXIT_USAGE;
    for (size_t i = 0; i < n_all; i++)
        printf("%s %s %s\n", all[i].name, pl_module_status_name(all[i].status),
               all[i].reason[0] ? all[i].reason : "-");
    free(all);
    free(loaded);
    return CF_EXIT_PASS;
}

static int cf_cmd_backend(const char *config, const char *name)
{
    cf_backend *all;
    size_t n_all, *loaded, n_loaded;
    if (!cf_config_backends(config, &all, &n_all, &loaded, &n_loaded))
        return CF_EXIT_USAGE;
    int rc = CF_EXIT_FAIL;
    size_t i = 0;
    while (i < n_all && strcmp(all[i].name, name) != 0)
        i++;
    if (i == n_all) {
        printf("%s: no module of that name takes nodes here\n", name);
    } else if (all[i].status == PL_MODULE_LOADED) {
        printf("%s: loaded; its tests are conformance.%s.*\n", name, name);
        rc = CF_EXIT_PASS;
    } else if (all[i].status == PL_MODULE_REJECTED) {
        printf("%s: FAILED: the module was rejected: %s\n", name, all[i].reason);
    } else {
        printf("%s: skipped, so none of its conformance tests run: %s: %s\n", name,
               pl_module_status_name(all[i].status), all[i].reason);
        rc = CF_EXIT_SKIP;
    }
    free(all);
    free(loaded);
    return rc;
}

/* "3 of 4 nodes on onednn, frozen" */
static void cf_placement_note(const cf_result *r, const char *backend, char *out, size_t size)
{
    snprintf(out, size, "%zu of %zu node%s on %s%s", r->on, r->total, r->total == 1 ? "" : "s",
             backend, r->frozen ? ", inputs but the first frozen" : "");
}

static int cf_cmd_run(const char *config, const char *backend, const char *dir)
{
    cf_backend *all;
    size_t n_all, *loaded, n_loaded;
    if (!cf_config_backends(config, &all, &n_all, &loaded, &n_loaded))
        return CF_EXIT_USAGE;
    size_t i = 0;
    while (i < n_all && strcmp(all[i].name, backend) != 0)
        i++;
    int rc = CF_EXIT_SKIP;
    if (i == n_all || all[i].status != PL_MODULE_LOADED) {
        printf("%s on %s: skipped: %s\n", dir, backend,
               i == n_all ? "no module of that name takes nodes here" : all[i].reason);
        free(all);
        free(loaded);
        return i == n_all ? CF_EXIT_USAGE : CF_EXIT_SKIP;
    }
    free(all);
    free(loaded);
    pl_runtime *rt = cf_backend_runtime(config, backend, false);
    if (rt == NULL)
        return CF_EXIT_USAGE;
    cf_result r;
    cf_eval(rt, backend, dir, false, &r);
    char note[256];
    cf_placement_note(&r, backend, note, sizeof note);
    switch (r.verdict) {
    case CF_PASS:
        printf("%s on %s: passed (%s; ops %s)\n", dir, backend, note, r.ops);
        rc = CF_EXIT_PASS;
        break;
    case CF_FAIL:
        if (r.placed)
            printf("%s on %s: FAILED (%s): %s\n", dir, backend, note, r.message);
        else
            printf("%s on %s: FAILED: %s\n", dir, backend, r.message);
        rc = CF_EXIT_FAIL;
        break;
    case CF_NOT_CLAIMED:
        printf("%s on %s: not claimed: %s\n", dir, backend, r.message);
        break;
    case CF_UNSUPPORTED:
        printf("%s on %s: unsupported: %s\n", dir, backend, r.message);
        break;
    }
    cf_result_free(&r);
    pl_runtime_destroy(rt);
    return rc;
}

/* ---- the matrix of tests x backends --------------------------------------------- */

/* One test directory under one of the roots. */
typedef struct cf_test {
    int root;
    char *name;
    char *dir;
    char *ops;
    char **op_list;
    size_t n_ops;
} cf_test;

/* One test on one backend. */
typedef struct cf_cell {
    cf_verdict verdict;
    bool placed, frozen, partial; /* partial: some nodes ran elsewhere */
    const char *state;            /* list's word for it */
    char *message;                /* failures only */
} cf_cell;

typedef struct cf_matrix {
    cf_test *tests;
    size_t n_tests;
    cf_cell *cells; /* n_tests x n_backends, test-major */
    size_t n_backends;
} cf_matrix;

static void cf_matrix_free(cf_matrix *m)
{
    for (size_t t = 0; t < m->n_tests; t++) {
        free(m->tests[t].name);
        free(m->tests[t].dir);
        free(m->tests[t].ops);
        for (size_t o = 0; o < m->tests[t].n_ops; o++)
            free(m->tests[t].op_list[o]);
        free(m->tests[t].op_list);
    }
    for (size_t i = 0; m->cells != NULL && i < m->n_tests * m->n_backends; i++)
        free(m->cells[i].message);
    free(m->tests);
    free(m->cells);
    memset(m, 0, sizeof *m);
}

/* The test directories under ROOTS, in order. */
static bool cf_matrix_tests(cf_matrix *m, char **roots, int n_roots, size_t n_backends)
{
    memset(m, 0, sizeof *m);
    for (int i = 0; i < n_roots; i++) {
        size_t n = 0;
        char **names = cf_list_dirs(roots[i], "test_", true, &n);
        if (names == NULL)
            fprintf(stderr, "conformance_runner: %s: no test directories\n", roots[i]);
        cf_test *grown = n > 0 ? realloc(m->tests, (m->n_tests + n) * sizeof *grown) : m->tests;
        if (n > 0 && grown == NULL) {
            cf_names_free(names);
            return false;
        }
        m->tests = grown;
        for (size_t k = 0; k < n; k++) {
            cf_test *t = &m->tests[m->n_tests];
            memset(t, 0, sizeof *t);
            t->root = i;
            t->name = names[k];
            names[k] = NULL;
            t->dir = cf_join_path(roots[i], t->name);
            m->n_tests++;
            if (t->dir == NULL) {
                cf_names_free(names);
                return false;
            }
        }
        cf_names_free(names);
    }
    m->n_backends = n_backends;
    m->cells = calloc(m->n_tests * n_backends + 1, sizeof *m->cells);
    return m->cells != NULL;
}

/* Called for every cell as it is filled (the suite prints failures). */
typedef void (*cf_cell_fn)(const cf_matrix *m, size_t t, const char *backend,
                           const cf_result *r, void *user);

/* Fills column B of M for BACKEND on a runtime of its own. */
static bool cf_matrix_fill(cf_matrix *m, const char *config, size_t b, const char *backend,
                           bool only_claim, cf_cell_fn fn, void *user)
{
    pl_runtime *rt = cf_backend_runtime(config, backend, true);
    if (rt == NULL)
        return false;
    for (size_t t = 0; t < m->n_tests; t++) {
        cf_test *test = &m->tests[t];
        cf_result r;
        cf_eval(rt, backend, test->dir, only_claim, &r);
        if (test->ops == NULL) {
            test->ops = r.ops;
            test->op_list = r.op_list;
            test->n_ops = r.n_ops;
            r.ops = NULL;
            r.op_list = NULL;
            r.n_ops = 0;
        }
        cf_cell *c = &m->cells[t * m->n_backends + b];
        c->verdict = r.verdict;
        c->placed = r.placed;
        c->frozen = r.frozen;
        c->partial = r.placed && r.on > 0 && r.on < r.total;
        switch (r.verdict) {
        case CF_PASS:
            c->state = r.frozen ? "frozen" : "claimed";
            break;
        case CF_FAIL:
            c->state = !r.placed ? "error" : r.frozen ? "frozen" : "claimed";
            break;
        case CF_NOT_CLAIMED:
            c->state = "not-claimed";
            break;
        case CF_UNSUPPORTED:
            c->state = "unsupported";
            break;
        }
        if (r.verdict == CF_FAIL) {
            char note[256], line[4096];
            cf_placement_note(&r, backend, note, sizeof note);
            if (r.placed)
                snprintf(line, sizeof line, "(%s): %s", note, r.message);
            else
                snprintf(line, sizeof line, "%s", r.message);
            c->message = strdup(line);
        }
        if (fn != NULL)
            fn(m, t, backend, &r, user);
        cf_result_free(&r);
    }
    pl_runtime_destroy(rt);
    return true;
}

/* True when no backend can run test T: then it is "unsupported" for all;
 * otherwise a backend that cannot is only "not claimed". */
static bool cf_matrix_unsupported(const cf_matrix *m, size_t t)
{
    for (size_t b = 0; b < m->n_backends; b++)
        if (m->cells[t * m->n_backends + b].verdict != CF_UNSUPPORTED)
            return false;
    return true;
}

static int cf_cmd_list(const char *config, char **roots, int n_roots)
{
    cf_backend *all;
    size_t n_all, *loaded, n_loaded;
    if (!cf_config_backends(config, &all, &n_all, &loaded, &n_loaded))
        return CF_EXIT_USAGE;
    cf_matrix m;
    bool ok = cf_matrix_tests(&m, roots, n_roots, n_loaded);
    for (size_t b = 0; ok && b < n_loaded; b++)
        ok = cf_matrix_fill(&m, config, b, all[loaded[b]].name, true, NULL, NULL);
    for (size_t t = 0; ok && t < m.n_tests; t++) {
        printf("%s ", m.tests[t].name);
        for (size_t b = 0; b < n_loaded; b++)
            printf("%s%s=%s", b ? "," : "", all[loaded[b]].name,
                   m.cells[t * n_loaded + b].state);
        printf("%s %s\n", n_loaded ? "" : "none", m.tests[t].ops ? m.tests[t].ops : "-");
    }
    if (!ok)
        fprintf(stderr, "conformance_runner: listing failed\n");
    cf_matrix_free(&m);
    free(all);
    free(loaded);
    return ok ? CF_EXIT_PASS : CF_EXIT_USAGE;
}

/* ---- suite -------------------------------------------------------------------- */

/* known_differences.txt: "<backend>/<set>/<test> <reason>" per line. */
typedef struct cf_known {
    char **keys;
    char **reasons;
    size_t n;
} cf_known;

static void cf_known_free(cf_known *k)
{
    for (size_t i = 0; i < k->n; i++) {
        free(k->keys[i]);
        free(k->reasons[i]);
    }
    free(k->keys);
    free(k->reasons);
    memset(k, 0, sizeof *k);
}

static bool cf_known_read(const char *path, cf_known *k)
{
    memset(k, 0, sizeof *k);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        perror(path);
        return false;
    }
    char line[2048];
    while (fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '#' || line[0] == '\0')
            continue;
        char *sp = strchr(line, ' ');
        char **keys = realloc(k->keys, (k->n + 1) * sizeof *keys);
        if (keys != NULL)
            k->keys = keys;
        char **reasons = keys ? realloc(k->reasons, (k->n + 1) * sizeof *reasons) : NULL;
        if (reasons == NULL)
            break;
        k->reasons = reasons;
        if (sp != NULL)
            *sp = '\0';
        k->keys[k->n] = strdup(line);
        k->reasons[k->n] = strdup(sp != NULL ? sp + 1 : "");
        if (k->keys[k->n] == NULL || k->reasons[k->n] == NULL) {
            free(k->keys[k->n]);
            free(k->reasons[k->n]);
            break;
        }
        k->n++;
    }
    fclose(f);
    return true;
}

static const char *cf_known_find(const cf_known *k, const char *backend, const char *set,
                                 const char *test)
{
    char key[1024];
    snprintf(key, sizeof key, "%s/%s/%s", backend, set, test);
    for (size_t i = 0; i < k->n; i++)
        if (strcmp(k->keys[i], key) == 0)
            return k->reasons[i];
    return NULL;
}

static const char *cf_basename(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    const char *p = path + n;
    while (p > path && p[-1] != '/')
        p--;
    return p;
}

/* The last component of ROOT, without a trailing slash, into OUT. */
static void cf_set_name(const char *root, char *out, size_t size)
{
    const char *b = cf_basename(root);
    size_t n = strcspn(b, "/");
    snprintf(out, size, "%.*s", (int)n, b);
}

/* Counts by verdict, and how many passes were frozen or partial. */
typedef struct cf_counts {
    int v[CF_N_VERDICTS];
    int frozen, partial;
    int known; /* failures known_differences.txt lists */
} cf_counts;

static void cf_counts_line(FILE *f, const char *lead, const char *backend, const cf_counts *c)
{
    fprintf(f, "%s%s: passed=%d failed=%d not_claimed=%d unsupported=%d", lead, backend,
            c->v[CF_PASS], c->v[CF_FAIL], c->v[CF_NOT_CLAIMED], c->v[CF_UNSUPPORTED]);
}

/* The verdict of cell (T, B) for the summary: "unsupported" only when no
 * backend can run the test. */
static cf_verdict cf_final(const cf_matrix *m, size_t t, size_t b)
{
    cf_verdict v = m->cells[t * m->n_backends + b].verdict;
    return v == CF_UNSUPPORTED && !cf_matrix_unsupported(m, t) ? CF_NOT_CLAIMED : v;
}

static void cf_suite_print_failure(const cf_matrix *m, size_t t, const char *backend,
                                   const cf_result *r, void *user)
{
    (void)user;
    if (r->verdict == CF_FAIL)
        printf("FAILED %s %s: %s\n", backend, m->tests[t].dir, r->message);
}

typedef struct cf_suite_out {
    const cf_matrix *m;
    const cf_backend *all;
    size_t n_all;
    const size_t *loaded;
    char **roots;
    int n_roots;
    const cf_known *known;
} cf_suite_out;

/* The per-backend lines over the tests of root ROOT (-1: all). */
static void cf_suite_counts(const cf_suite_out *o, int root, size_t b, cf_counts *c)
{
    memset(c, 0, sizeof *c);
    for (size_t t = 0; t < o->m->n_tests; t++) {
        if (root >= 0 && o->m->tests[t].root != root)
            continue;
        cf_verdict v = cf_final(o->m, t, b);
        const cf_cell *cell = &o->m->cells[t * o->m->n_backends + b];
        c->v[v]++;
        if (v == CF_PASS && cell->frozen)
            c->frozen++;
        if (v == CF_PASS && cell->partial)
            c->partial++;
        if (v == CF_FAIL) {
            char set[256];
            cf_set_name(o->roots[o->m->tests[t].root], set, sizeof set);
            c->known += cf_known_find(o->known, o->all[o->loaded[b]].name, set,
                                      o->m->tests[t].name) != NULL;
        }
    }
}

static int cf_suite_unsupported(const cf_suite_out *o, int root)
{
    int n = 0;
    for (size_t t = 0; t < o->m->n_tests; t++)
        if ((root < 0 || o->m->tests[t].root == root) && cf_matrix_unsupported(o->m, t))
            n++;
    return n;
}

static int cf_suite_tests(const cf_suite_out *o, int root)
{
    int n = 0;
    for (size_t t = 0; t < o->m->n_tests; t++)
        n += root < 0 || o->m->tests[t].root == root;
    return n;
}

/* The per-backend lines ("conformance cpu: passed=…") and the total, into F
 * with LEAD before each. */
static void cf_suite_lines(FILE *f, const cf_suite_out *o, int root, const char *lead)
{
    size_t nb = o->m->n_backends;
    for (size_t b = 0; b < nb; b++) {
        cf_counts c;
        cf_suite_counts(o, root, b, &c);
        cf_counts_line(f, lead, o->all[o->loaded[b]].name, &c);
        fprintf(f, " (failures known: %d; of the passes: %d frozen, %d with some nodes on cpu)\n",
                c.known, c.frozen, c.partial);
    }
    for (size_t i = 0; i < o->n_all; i++)
        if (o->all[i].status != PL_MODULE_LOADED)
            fprintf(f, "%s%s: skipped: %s: %s\n", lead, o->all[i].name,
                    pl_module_status_name(o->all[i].status), o->all[i].reason);
}

/* One root's section: its lines, the op x backend table, its failures. */
static void cf_suite_section(FILE *f, const cf_suite_out *o, int root)
{
    const cf_matrix *m = o->m;
    size_t nb = m->n_backends;
    char set[256];
    cf_set_name(o->roots[root], set, sizeof set);
    fprintf(f, "\n== %s (%s): tests=%d unsupported=%d\n", set, o->roots[root],
            cf_suite_tests(o, root), cf_suite_unsupported(o, root));
    cf_suite_lines(f, o, root, "  ");
    /* The table: one row per distinct op list, passed/failed/not claimed
     * per backend, then unsupported. */
    size_t n_rows = 0;
    const char **rows = calloc(m->n_tests + 1, sizeof *rows);
    for (size_t t = 0; rows != NULL && t < m->n_tests; t++) {
        if (m->tests[t].root != root)
            continue;
        const char *ops = m->tests[t].ops ? m->tests[t].ops : "-";
        size_t r = 0;
        while (r < n_rows && strcmp(rows[r], ops) != 0)
            r++;
        if (r == n_rows)
            rows[n_rows++] = ops;
    }
    if (n_rows > 1)
        qsort(rows, n_rows, sizeof *rows, cf_strcmp_p);
    int width = 2;
    for (size_t r = 0; r < n_rows; r++)
        if ((int)strlen(rows[r]) > width)
            width = (int)strlen(rows[r]);
    if (width > 40)
        width = 40;
    fprintf(f, "\n%-*s", width, "op");
    for (size_t b = 0; b < nb; b++)
        fprintf(f, " %14s", o->all[o->loaded[b]].name);
    fprintf(f, " %12s\n%-*s", "unsupported", width, "");
    for (size_t b = 0; b < nb; b++)
        fprintf(f, " %14s", "pass/fail/nc");
    fprintf(f, "\n");
    for (size_t r = 0; r < n_rows; r++) {
        int counts[64][CF_N_VERDICTS];
        int unsupported = 0;
        memset(counts, 0, sizeof counts);
        for (size_t t = 0; t < m->n_tests; t++) {
            const char *ops = m->tests[t].ops ? m->tests[t].ops : "-";
            if (m->tests[t].root != root || strcmp(ops, rows[r]) != 0)
                continue;
            unsupported += cf_matrix_unsupported(m, t);
            for (size_t b = 0; b < nb && b < 64; b++)
                counts[b][cf_final(m, t, b)]++;
        }
        fprintf(f, "%-*s", width, rows[r]);
        for (size_t b = 0; b < nb && b < 64; b++) {
            char cell[64];
            snprintf(cell, sizeof cell, "%d/%d/%d", counts[b][CF_PASS], counts[b][CF_FAIL],
                     counts[b][CF_NOT_CLAIMED]);
            fprintf(f, " %14s", cell);
        }
        fprintf(f, " %12d\n", unsupported);
    }
    free(rows);
    bool any = false;
    for (size_t t = 0; t < m->n_tests; t++) {
        for (size_t b = 0; m->tests[t].root == root && b < nb; b++) {
            const cf_cell *c = &m->cells[t * nb + b];
            if (c->verdict != CF_FAIL)
                continue;
            if (!any)
                fprintf(f, "\nfailures in %s:\n", set);
            any = true;
            const char *backend = o->all[o->loaded[b]].name;
            const char *known = cf_known_find(o->known, backend, set, m->tests[t].name);
            fprintf(f, "  %s %s %s%s%s%s\n", backend, m->tests[t].name,
                    c->message ? c->message : "", known ? " [known difference: " : "",
                    known ? known : "", known ? "]" : "");
        }
    }
}

static int cf_cmd_suite(const char *config, const char *summary, const char *known_path,
                        char **roots, int n_roots)
{
    cf_backend *all;
    size_t n_all, *loaded, n_loaded;
    if (!cf_config_backends(config, &all, &n_all, &loaded, &n_loaded))
        return CF_EXIT_USAGE;
    cf_known known;
    memset(&known, 0, sizeof known);
    if (known_path != NULL && !cf_known_read(known_path, &known)) {
        free(all);
        free(loaded);
        return CF_EXIT_USAGE;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cf_matrix m;
    bool ok = cf_matrix_tests(&m, roots, n_roots, n_loaded);
    for (size_t b = 0; ok && b < n_loaded; b++)
        ok = cf_matrix_fill(&m, config, b, all[loaded[b]].name, false, cf_suite_print_failure,
                            NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cf_suite_out o = {.m = &m, .all = all, .n_all = n_all, .loaded = loaded,
                      .roots = roots, .n_roots = n_roots, .known = &known};
    FILE *f = ok ? fopen(summary, "w") : NULL;
    if (ok && f == NULL)
        perror(summary);
    if (f != NULL) {
        fprintf(f, "Plinth ONNX conformance\nconfig: %s\nruntime: %.1f s\n", config,
                (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
        fprintf(f,
                "\nEvery test runs once per backend, on a placement that offers that backend\n"
                "every node first and leaves the rest to cpu. It counts for the backend only\n"
                "when the backend ran at least one of its nodes: passed or failed; otherwise\n"
                "it is not claimed. A test with two or more inputs that the backend takes no\n"
                "node of runs again with every input but the first frozen into an\n"
                "initializer (\"frozen\"). unsupported: no backend can run it.\n\n");
        cf_suite_lines(f, &o, -1, "");
        fprintf(f, "tests=%d unsupported=%d\n", cf_suite_tests(&o, -1),
                cf_suite_unsupported(&o, -1));
        for (int i = 0; i < n_roots; i++)
            cf_suite_section(f, &o, i);
        fprintf(f, "\n");
        cf_suite_lines(f, &o, -1, "conformance ");
        fprintf(f, "conformance: tests=%d unsupported=%d\n", cf_suite_tests(&o, -1),
                cf_suite_unsupported(&o, -1));
        ok = fclose(f) == 0;
    }
    if (m.cells != NULL) {
        cf_suite_lines(stdout, &o, -1, "conformance ");
        printf("conformance: tests=%d unsupported=%d (summary: %s)\n", cf_suite_tests(&o, -1),
               cf_suite_unsupported(&o, -1), summary);
    }
    cf_matrix_free(&m);
    cf_known_free(&known);
    free(all);
    free(loaded);
    /* Failures are results, reported in the summary and its last lines;
     * only a summary that could not be written is an error. */
    return ok && f != NULL ? CF_EXIT_PASS : CF_EXIT_FAIL;
}

/* ---- check: one module's node tests, for plinth check-module ------------------ */

/* The module in FILE loaded into RT unless a module of its name is there
 * already; its name into NAME. False with the reason printed. */
static bool cf_check_load(pl_runtime *rt, const char *file, char *name, size_t size,
                          uint64_t *out_caps)
{
    size_t index = (size_t)-1;
    pl_status *st = pl_runtime_load_module(rt, file, &index);
    if (st != NULL && strstr(pl_status_message(st), "duplicate") == NULL) {
        printf("node tests: %s\n", pl_status_message(st));
        pl_status_free(st);
        return false;
    }
    pl_status_free(st);
    /* A module the configuration loads already (a duplicate): that file's
     * record. */
    char *want = realpath(file, NULL);
    pl_module_info info = {.struct_size = sizeof info};
    bool found = false;
    for (size_t i = 0; !found && i < pl_runtime_module_count(rt); i++) {
        if (pl_runtime_module_info(rt, i, &info) != NULL)
            continue;
        char *have = realpath(info.path, NULL);
        found = i == index || (want && have && strcmp(want, have) == 0 &&
                               info.status == PL_MODULE_LOADED);
        free(have);
    }
    free(want);
    if (!found) {
        printf("node tests: %s: not listed after loading\n", file);
        return false;
    }
    snprintf(name, size, "%s", info.name);
    *out_caps = info.capabilities;
    return true;
}

/* Every test under ARGS (a test directory, or a folder of test_*
 * directories) on the module in FILE, offered every node first, cpu taking
 * the rest: the ONNX node tests of plinth check-module. Prints a line per
 * failure and a summary; exit 1 when a test the module claimed failed and
 * KNOWN does not list it for the module. */
static int cf_cmd_check(const char *config, const char *file, const char *known_path,
                        char **args, int n_args)
{
    cf_known known = {0};
    if (known_path != NULL && !cf_known_read(known_path, &known))
        return CF_EXIT_USAGE;
    char name[64] = "";
    uint64_t caps = 0;
    pl_runtime *probe = cf_runtime(config);
    bool ok = probe != NULL && cf_check_load(probe, file, name, sizeof name, &caps);
    pl_runtime_destroy(probe);
    if (ok && !(caps & (PL_CAP_IMPERATIVE | PL_CAP_SYMBOLIC))) {
        printf("SKIP node tests                %s runs no nodes\n", name);
        cf_known_free(&known);
        return CF_EXIT_PASS;
    }
    pl_runtime *rt = ok ? cf_backend_runtime(config, name, true) : NULL;
    if (rt != NULL && pl_runtime_find_module(rt, name) < 0 &&
        !cf_check_load(rt, file, name, sizeof name, &caps)) {
        pl_runtime_destroy(rt);
        rt = NULL;
    }
    if (rt == NULL) {
        cf_known_free(&known);
        return CF_EXIT_FAIL;
    }
    cf_counts c;
    memset(&c, 0, sizeof c);
    for (int a = 0; a < n_args; a++) {
        char *model = cf_join_path(args[a], "model.onnx");
        bool single = model != NULL && cf_is_file(model);
        free(model);
        size_t n = 0;
        char **names = single ? NULL : cf_list_dirs(args[a], "test_", true, &n);
        char set[256];
        cf_set_name(single ? "node" : args[a], set, sizeof set);
        for (size_t i = 0; i < (single ? 1 : n); i++) {
            char *dir = single ? strdup(args[a]) : cf_join_path(args[a], names[i]);
            if (dir == NULL)
                break;
            cf_result r;
            cf_eval(rt, name, dir, false, &r);
            const char *test = cf_basename(dir);
            const char *why = r.verdict == CF_FAIL ? cf_known_find(&known, name, set, test)
                                                   : NULL;
            c.v[r.verdict]++;
            if (why != NULL) {
                c.known++;
                printf("KNOWN %s: %s (%s)\n", test, r.message, why);
            } else if (r.verdict == CF_FAIL) {
                printf("FAIL node %s [%s] on %zu of %zu nodes: %s\n", test,
                       r.ops ? r.ops : "?", r.on, r.total, r.message);
            }
            cf_result_free(&r);
            free(dir);
        }
        cf_names_free(names);
    }
    pl_runtime_destroy(rt);
    cf_known_free(&known);
    cf_counts_line(stdout, "node tests on ", name, &c);
    printf(" known=%d\n", c.known);
    return c.v[CF_FAIL] > c.known ? CF_EXIT_FAIL : CF_EXIT_PASS;
}

/* `batch`: TESTS (directories under ROOT) on BACKEND in this process, as
 * `run` runs each; a test known_differences.txt lists must fail, as its
 * CTest test would (WILL_FAIL). Exit 0 when every test did what it
 * should, 1 otherwise (a line per test that did not). The sanitizer
 * builds register these instead of one process per test: under
 * AddressSanitizer a process costs 0.1 s to start and check for leaks,
 * and the 2840 tests took 190 s of CI's two cores. */
static int cf_cmd_batch(const char *config, const char *backend, const char *known_path,
                        const char *root, char **tests, int n_tests)
{
    cf_known known = {0};
    if (known_path != NULL && !cf_known_read(known_path, &known))
        return CF_EXIT_USAGE;
    pl_runtime *rt = cf_backend_runtime(config, backend, false);
    if (rt == NULL) {
        cf_known_free(&known);
        return CF_EXIT_USAGE;
    }
    char set[256];
    cf_set_name(root, set, sizeof set);
    int bad = 0;
    cf_counts c;
    memset(&c, 0, sizeof c);
    for (int i = 0; i < n_tests; i++) {
        char *dir = cf_join_path(root, tests[i]);
        if (dir == NULL) {
            bad++;
            break;
        }
        cf_result r;
        cf_eval(rt, backend, dir, false, &r);
        c.v[r.verdict]++;
        const char *why = cf_known_find(&known, backend, set, tests[i]);
        if (why != NULL && r.verdict == CF_PASS) {
            printf("%s on %s: passed, but known_differences.txt says it fails (%s)\n", dir,
                   backend, why);
            bad++;
        } else if (why == NULL && r.verdict == CF_FAIL) {
            printf("%s on %s: FAILED: %s\n", dir, backend, r.message);
            bad++;
        }
        c.known += why != NULL && r.verdict == CF_FAIL;
        cf_result_free(&r);
        free(dir);
    }
    pl_runtime_destroy(rt);
    cf_known_free(&known);
    char lead[300];
    snprintf(lead, sizeof lead, "%s tests on ", set);
    cf_counts_line(stdout, lead, backend, &c);
    printf(" known=%d\n", c.known);
    return bad > 0 ? CF_EXIT_FAIL : CF_EXIT_PASS;
}

static int cf_usage(void)
{
    fprintf(stderr,
            "usage: conformance_runner backends CONFIG\n"
            "       conformance_runner backend CONFIG BACKEND\n"
            "       conformance_runner list CONFIG ROOT...\n"
            "       conformance_runner run CONFIG BACKEND TESTDIR\n"
            "       conformance_runner suite CONFIG OUT_SUMMARY [--known FILE] ROOT...\n"
            "       conformance_runner check CONFIG MODULE.so [--known FILE] ROOT|TESTDIR...\n"
            "       conformance_runner batch CONFIG BACKEND KNOWN|- ROOT TEST...\n");
    return CF_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 3 && strcmp(argv[1], "backends") == 0)
        return cf_cmd_backends(argv[2]);
    if (argc == 4 && strcmp(argv[1], "backend") == 0)
        return cf_cmd_backend(argv[2], argv[3]);
    if (argc >= 4 && strcmp(argv[1], "list") == 0)
        return cf_cmd_list(argv[2], argv + 3, argc - 3);
    if (argc == 5 && strcmp(argv[1], "run") == 0)
        return cf_cmd_run(argv[2], argv[3], argv[4]);
    if (argc >= 5 && strcmp(argv[1], "suite") == 0) {
        bool known = argc >= 7 && strcmp(argv[4], "--known") == 0;
        return cf_cmd_suite(argv[2], argv[3], known ? argv[5] : NULL, argv + (known ? 6 : 4),
                            argc - (known ? 6 : 4));
    }
    if (argc >= 7 && strcmp(argv[1], "batch") == 0)
        return cf_cmd_batch(argv[2], argv[3], strcmp(argv[4], "-") == 0 ? NULL : argv[4], argv[5],
                            argv + 6, argc - 6);
    if (argc >= 5 && strcmp(argv[1], "check") == 0) {
        bool known = argc >= 7 && strcmp(argv[4], "--known") == 0;
        return cf_cmd_check(argv[2], argv[3], known ? argv[5] : NULL, argv + (known ? 6 : 4),
                            argc - (known ? 6 : 4));
    }
    return cf_usage();
}
