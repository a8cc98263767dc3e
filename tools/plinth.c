/* plinth — the command-line face of the runtime: `plinth modules` tells an
 * operator what was found on the module path, what loaded and, for
 * everything else, exactly why; `plinth explain MODEL` shows what the runtime
 * makes of a model. Uses only the public API (plinth.h).
 *
 * Exit codes: 0 success; 1 the runtime could not be created (bad or missing
 * configuration) or the model could not be loaded; 2 usage error; 3 `modules --strict` and some module found
 * was rejected. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <jansson.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <limits.h>
#include <math.h>
#ifndef PATH_MAX
#define PATH_MAX 4096
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plinth/module.h"
#include "plinth/plinth.h"
#include "check_module.h"
#include "explain_text.h"
#include "float16.h"
#include "npy.h"

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2, EXIT_REJECTED = 3 };

/* --threads: the CPU budget for every runtime this process makes (0: keep
 * backend.ini's). */
static int g_threads;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: plinth [--config FILE] <command> [options]\n"
            "\n"
            "commands:\n"
            "  modules [--json] [--strict]   list the modules found on the module path:\n"
            "                                name, version, status (loaded, disabled,\n"
            "                                rejected, no-device), devices, capabilities,\n"
            "                                file, and the reason for each one not loaded\n"
            "  explain MODEL [--shape NAME=D0,D1,...] [--json]\n"
            "                                load a model and show what a session makes of it:\n"
            "                                node -> backend with every refusal reason,\n"
            "                                subgraphs, copies and their bytes, steps, and the\n"
            "                                memory plan per device against its lower bound\n"
            "  bench MODEL [--threads N] [--runs N] [--warmup N] [--input NAME=FILE]\n"
            "              [--shape NAME=D0,D1,...] [--json]\n"
            "                                time runs after a warm-up: median and p90 latency,\n"
            "                                peak RSS, load time (runtime + model + session);\n"
            "                                MODEL.input.bin / MODEL.output.bin beside the model\n"
            "                                are used as input and reference when present;\n"
            "                                --json ends with one JSON object\n"
            "  convert MODEL OUT.json        write a model (e.g. .onnx) in Plinth's JSON format,\n"
            "                                weights in OUT.weights beside it\n"
            "  run MODEL [--input NAME=FILE.npy|FILE.bin ...] [--shape NAME=D0,D1,...]\n"
            "            [--output-dir DIR] [--runs N] [--warmup N] [--nodes]\n"
            "                                run a model: inputs from .npy (or raw .bin of the\n"
            "                                declared type), random with a fixed seed when not\n"
            "                                given; prints each output's dtype, shape and first\n"
            "                                values and the time of each step; --output-dir\n"
            "                                (made if missing) writes <output name>.npy\n"
            "                                (bf16 as float32); --warmup runs first, left\n"
            "                                out of the step times; --nodes also times the\n"
            "                                nodes inside compiled subgraphs whose module\n"
            "                                can say (onednn) and lists them under their step\n"
            "  configure MODULE [KEY=VALUE ...]\n"
            "                                call the module's configure with those keys (none:\n"
            "                                a query) and print every key = value it reports\n"
            "  call MODULE [NAME [ARG ...]]  call a vendor function of the module, its\n"
            "                                arguments read by its signature, and print the\n"
            "                                result; without NAME, list its functions\n"
            "                                (put options before configure and call)\n"
            "  cache list|stats|clear        the compiled-subgraph cache of [runtime] cache_dir:\n"
            "                                its entries (least recently used first), its\n"
            "                                size against cache_max_mb and the hits, misses,\n"
            "                                stores and evictions of every program that used\n"
            "                                it, or empty it (entries, probe verdicts, counters)\n"
            "  check-module FILE.so [--device N] [--tests DIR ...] [--known FILE]\n"
            "               [--no-node-tests]\n"
            "                                check a module file against the module ABI: entry\n"
            "                                point, table, configure, statuses, device memory\n"
            "                                at every offset, release_all, kernels at offsets\n"
            "                                and from several threads, export/import, refusal\n"
            "                                reasons; then the ONNX node tests (DIR: a folder\n"
            "                                of test_* or one test; default Debian's\n"
            "                                libonnx-testdata) strictly on that module; --known\n"
            "                                lists accepted differences (backend/set/test why);\n"
            "                                exit 1 on any failure, 77 when it has no device\n"
            "\n"
            "options:\n"
            "  --shape NAME=D0,D1,...  (run, explain, bench) binds the symbolic dims of\n"
            "                  input NAME; an .npy --input binds its own\n"
            "  --config FILE   backend.ini to use (default: $PLINTH_CONFIG, ./backend.ini,\n"
            "                  then the installed default)\n"
            "  --threads N     the CPU thread budget (default: backend.ini's threads)\n"
            "  --help          this text\n"
            "  --version       the version of plinth and of the module ABI\n"
            "\n"
            "exit codes: 0 success, 1 runtime error (configuration, model), 2 usage,\n"
            "            3 --strict and a module was rejected, 77 check-module: no device\n");
}

/* A path shown relative to the working directory when it lies below it. */
static const char *display_path(const char *path)
{
    static char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == NULL)
        return path;
    size_t n = strlen(cwd);
    if (strncmp(path, cwd, n) == 0 && path[n] == '/')
        return path + n + 1;
    return path;
}

static void capability_text(uint64_t caps, char *buf, size_t cap)
{
    static const struct { uint64_t bit; const char *name; } names[] = {
        {PL_CAP_IMPERATIVE, "imperative"}, {PL_CAP_SYMBOLIC, "symbolic"},
        {PL_CAP_ASYNC, "async"},           {PL_CAP_EXPORT, "export"},
        {PL_CAP_MODEL_IMPORT, "import"},   {PL_CAP_HOST_MEMORY, "host-memory"},
        {PL_CAP_PINNED_THREAD, "pinned-thread"}};
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(caps & names[i].bit))
            continue;
        size_t len = strlen(buf);
        snprintf(buf + len, cap - len, "%s%s", len ? "," : "", names[i].name);
    }
    if (buf[0] == '\0')
        snprintf(buf, cap, "-");
}

static int print_json(const pl_runtime *rt)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < pl_runtime_module_count(rt); i++) {
        pl_module_info info = {.struct_size = sizeof info};
        pl_status *st = pl_runtime_module_info(rt, i, &info);
        if (st != NULL) {
            pl_status_free(st);
            continue;
        }
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(info.name));
        json_object_set_new(o, "version", json_string(info.version));
        json_object_set_new(o, "vendor", json_string(info.vendor));
        json_object_set_new(o, "status", json_string(pl_module_status_name(info.status)));
        json_object_set_new(o, "devices", json_integer(info.device_count));
        json_t *names = json_array();
        for (int d = 0; d < info.device_count; d++)
            json_array_append_new(names, json_string(pl_runtime_device_name(rt, i, d)));
        json_object_set_new(o, "device_names", names);
        json_t *caps = json_array();
        char text[128];
        capability_text(info.capabilities, text, sizeof text);
        char *save = NULL;
        for (char *tok = strtok_r(text, ",", &save); tok;
             tok = strtok_r(NULL, ",", &save))
            if (strcmp(tok, "-") != 0)
                json_array_append_new(caps, json_string(tok));
        json_object_set_new(o, "capabilities", caps);
        char abi[32];
        snprintf(abi, sizeof abi, "%u.%u", info.abi_major, info.abi_minor);
        json_object_set_new(o, "abi", info.abi_major ? json_string(abi) : json_null());
        json_object_set_new(o, "path", json_string(info.path));
        json_object_set_new(o, "reason", json_string(info.reason));
        json_t *outputs = json_object();
        for (size_t k = 0; k < pl_runtime_module_output_count(rt, i); k++) {
            const char *key, *value;
            pl_runtime_module_output(rt, i, k, &key, &value);
            json_object_set_new(outputs, key, json_string(value));
        }
        json_object_set_new(o, "outputs", outputs);
        json_array_append_new(arr, o);
    }
    char *text = json_dumps(arr, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(arr);
    if (text == NULL)
        return EXIT_RUNTIME;
    puts(text);
    free(text);
    return 0;
}

static void print_table(const pl_runtime *rt)
{
    size_t n = pl_runtime_module_count(rt);
    const char *cfg = pl_runtime_config_path(rt);
    printf("configuration: %s\n", cfg ? display_path(cfg) : "(none; defaults)");
    printf("%-14s %-10s %-10s %-7s %-28s %s\n", "NAME", "VERSION", "STATUS",
           "DEVICES", "CAPABILITIES", "FILE");
    for (size_t i = 0; i < n; i++) {
        pl_module_info info = {.struct_size = sizeof info};
        pl_status *st = pl_runtime_module_info(rt, i, &info);
        if (st != NULL) {
            pl_status_free(st);
            continue;
        }
        char caps[128];
        capability_text(info.capabilities, caps, sizeof caps);
        printf("%-14s %-10s %-10s %-7d %-28s %s\n", info.name,
               info.version[0] ? info.version : "-",
               pl_module_status_name(info.status), info.device_count, caps,
               display_path(info.path));
    }
    if (n == 0)
        printf("(no module files found on the module path)\n");
    size_t nd = pl_runtime_diagnostic_count(rt);
    if (nd > 0) {
        printf("\n");
        for (size_t i = 0; i < nd; i++)
            printf("%s\n", pl_runtime_diagnostic(rt, i));
    }
    bool header = false;
    for (size_t i = 0; i < n; i++) {
        size_t nk = pl_runtime_module_output_count(rt, i);
        int devices = 0;
        pl_module_info info = {.struct_size = sizeof info};
        pl_status_free(pl_runtime_module_info(rt, i, &info));
        devices = info.device_count;
        if (nk == 0 && devices == 0)
            continue;
        if (!header) {
            printf("\ndetails:\n");
            header = true;
        }
        printf("  %s:", info.name);
        for (int d = 0; d < devices; d++)
            printf(" [%d] %s%s", d, pl_runtime_device_name(rt, i, d),
                   d + 1 < devices ? ";" : "");
        printf("\n");
        for (size_t k = 0; k < nk; k++) {
            const char *key, *value;
            pl_runtime_module_output(rt, i, k, &key, &value);
            printf("    %s = %s\n", key, value);
        }
        for (size_t k = 0; k < pl_runtime_extension_count(rt, i); k++) {
            const char *name, *sig;
            pl_runtime_extension(rt, i, k, &name, &sig);
            printf("    function %s %s\n", name, sig);
        }
    }
}

/* The log sink of the CLI: warnings are printed with the table, so they
 * are not repeated; errors, and the info and debug lines the runtime only
 * passes on when backend.ini asks for them (`log = info|debug`), go to
 * stderr as they happen. */
static void cli_log(void *user, int level, const char *line)
{
    (void)user;
    if (level <= PL_LOG_ERROR)
        fprintf(stderr, "plinth: error: %s\n", line);
    else if (level >= PL_LOG_INFO)
        fprintf(stderr, "plinth: %s: %s\n", level == PL_LOG_INFO ? "info" : "debug", line);
}

/* ---- what run, explain and bench share ------------------------------------ */

/* Prints the warnings of SESSION from the FROM-th on: those of its runs
 * (a subgraph that ran far slower than estimated and was planned again,
 * core/src/measure.h). */
static void print_warnings_from(const pl_session *session, size_t from)
{
    for (size_t i = from; i < pl_session_warning_count(session); i++)
        fprintf(stderr, "plinth: warning: %s\n", pl_session_warning(session, i));
}

/* The options of run, explain and bench. */
typedef struct model_args {
    const char *config;
    const char *model_path;
    const char **input_args;     /* NAME=FILE */
    size_t n_input_args;
    const char **shape_args;     /* NAME=D0,D1,... */
    size_t n_shape_args;
    const char *output_dir;      /* run: NULL when not given */
    int runs, warmup;
    bool warmup_given;           /* run: warm-up runs only when asked */
    bool json;
    bool nodes;                  /* run: node times inside compiled subgraphs */
} model_args;

/* An input shape to bind before the session is made. */
typedef struct shape_bind {
    const char *name;
    size_t name_len;
    int32_t ndim;
    int64_t dims[16];
} shape_bind;

/* Parses "NAME=D0,D1,..." into B; false when malformed. */
static bool parse_shape_arg(const char *arg, shape_bind *b)
{
    const char *eq = strchr(arg, '=');
    if (eq == NULL || eq == arg)
        return false;
    b->name = arg;
    b->name_len = (size_t)(eq - arg);
    b->ndim = 0;
    const char *p = eq + 1;
    while (*p) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno != 0 || v < 0 || b->ndim >= 16)
            return false;
        b->dims[b->ndim++] = v;
        p = end;
        if (*p == ',')
            p++;
        else if (*p != '\0')
            return false;
    }
    return true;
}

/* The shapes to bind: every --shape, then the shape of every .npy --input.
 * BINDS has room for n_shape_args + n_input_args entries. Returns an exit
 * code, having printed the reason. */
static int collect_binds(const model_args *a, shape_bind *binds, size_t *out_n)
{
    size_t n = 0;
    char err[512];
    for (size_t i = 0; i < a->n_shape_args; i++) {
        if (!parse_shape_arg(a->shape_args[i], &binds[n])) {
            fprintf(stderr, "plinth: --shape %s: expected NAME=D0,D1,... with dims >= 0\n",
                    a->shape_args[i]);
            return EXIT_USAGE;
        }
        n++;
    }
    for (size_t i = 0; i < a->n_input_args; i++) {
        const char *eq = strchr(a->input_args[i], '=');
        size_t fl = eq ? strlen(eq + 1) : 0;
        if (eq == NULL || fl <= 4 || strcmp(eq + 1 + fl - 4, ".npy") != 0)
            continue;
        npy_array probe;
        if (npy_read(eq + 1, &probe, err, sizeof err) != 0) {
            fprintf(stderr, "plinth: %s\n", err);
            return EXIT_RUNTIME;
        }
        shape_bind *b = &binds[n++];
        b->name = a->input_args[i];
        b->name_len = (size_t)(eq - a->input_args[i]);
        b->ndim = probe.ndim;
        memcpy(b->dims, probe.dims, sizeof b->dims);
        npy_free(&probe);
    }
    *out_n = n;
    return 0;
}

/* Loads the model, binds the input shapes that --shape and .npy inputs
 * give, and makes a session; prints the reason and returns EXIT_RUNTIME
 * (EXIT_USAGE for a malformed --shape) on failure. */
static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Milliseconds the last open_session spent creating the runtime (module
 * discovery and loading), loading the model, and creating the session. */
static double g_open_ms[3];

static int open_session(const model_args *a, pl_runtime **out_rt, pl_model **out_model,
                        pl_session **out_session)
{
    *out_rt = NULL;
    *out_model = NULL;
    *out_session = NULL;
    size_t cap = a->n_shape_args + a->n_input_args;
    shape_bind *binds = calloc(cap ? cap : 1, sizeof *binds);
    size_t n_binds = 0;
    if (binds == NULL) {
        fprintf(stderr, "plinth: out of memory\n");
        return EXIT_RUNTIME;
    }
    int rc = collect_binds(a, binds, &n_binds);
    if (rc != 0) {
        free(binds);
        return rc;
    }
    pl_runtime_options o = {.struct_size = sizeof o,
                            .config_path = a->config,
                            .log_sink = cli_log,
                            .threads = g_threads};
    double t0 = now_ms();
    pl_status *st = pl_runtime_create(&o, out_rt);
    double t1 = now_ms();
    if (st == NULL)
        st = pl_model_load(*out_rt, a->model_path, out_model);
    for (size_t i = 0; st == NULL && i < n_binds; i++) {
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)binds[i].name_len, binds[i].name);
        st = pl_model_bind_input(*out_model, name, binds[i].ndim, binds[i].dims);
    }
    free(binds);
    double t2 = now_ms();
    if (st == NULL)
        st = pl_session_create(*out_model, NULL, out_session);
    g_open_ms[0] = t1 - t0;
    g_open_ms[1] = t2 - t1;
    g_open_ms[2] = now_ms() - t2;
    if (st != NULL) {
        fprintf(stderr, "plinth: %s\n", pl_status_message(st));
        pl_status_free(st);
        pl_model_destroy(*out_model);
        pl_runtime_destroy(*out_rt);
        *out_model = NULL;
        *out_rt = NULL;
        return EXIT_RUNTIME;
    }
    /* A session can take any shape of an input whose dims are open, but
     * the command needs one: to make random inputs, to show a plan. */
    for (size_t i = 0; i < pl_session_input_count(*out_session); i++) {
        int32_t ndim;
        const int64_t *dims;
        pl_session_input_type(*out_session, i, NULL, &ndim, &dims);
        bool open_dims = ndim < 0;
        for (int32_t d = 0; d < ndim; d++)
            open_dims |= dims[d] < 0;
        if (!open_dims)
            continue;
        const char *name = pl_session_input_name(*out_session, i);
        fprintf(stderr, "plinth: input '%s' has dims known only at run time: give its shape "
                        "with --shape %s=D0,D1,... or a .npy file with --input\n",
                name, name);
        pl_session_destroy(*out_session);
        pl_model_destroy(*out_model);
        pl_runtime_destroy(*out_rt);
        *out_session = NULL;
        *out_model = NULL;
        *out_rt = NULL;
        return EXIT_RUNTIME;
    }
    return 0;
}

static void close_session(pl_runtime *rt, pl_model *model, pl_session *session)
{
    pl_session_destroy(session);
    pl_model_destroy(model);
    pl_runtime_destroy(rt);
}

static int cmd_explain(const model_args *a)
{
    pl_runtime *rt;
    pl_model *model;
    pl_session *session;
    int rc = open_session(a, &rt, &model, &session);
    if (rc != 0)
        return rc;
    char *text = NULL;
    pl_status *st = pl_session_describe(session, &text);
    if (st != NULL) {
        fprintf(stderr, "plinth: %s\n", pl_status_message(st));
        pl_status_free(st);
        rc = EXIT_RUNTIME;
    } else if (!a->json) {
        if (pl_explain_text_write(stdout, text) != 0)
            rc = EXIT_RUNTIME;
    } else {
        fputs(text, stdout);
        if (text[0] && text[strlen(text) - 1] != '\n')
            fputc('\n', stdout);
    }
    pl_string_free(text);
    close_session(rt, model, session);
    return rc;
}

/* ---- tensors on the host ---------------------------------------------------- */

/* The dtype's name as the graph format spells it ("f32", "bool"). */
static const char *dtype_name(pl_dtype dt)
{
    static const struct { pl_dtype dt; const char *name; } names[] = {
        {PL_DTYPE_F32, "f32"}, {PL_DTYPE_F64, "f64"},   {PL_DTYPE_F16, "f16"},
        {PL_DTYPE_BF16, "bf16"}, {PL_DTYPE_U8, "u8"},   {PL_DTYPE_I8, "i8"},
        {PL_DTYPE_I32, "i32"}, {PL_DTYPE_I64, "i64"},   {PL_DTYPE_BOOL, "bool"},
        {PL_DTYPE_I16, "i16"}, {PL_DTYPE_U16, "u16"},   {PL_DTYPE_U32, "u32"},
        {PL_DTYPE_U64, "u64"}, {PL_DTYPE_STRING, "string"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (PL_DTYPE_EQ(dt, names[i].dt))
            return names[i].name;
    return "?";
}

/* What a string input is filled with: ten words. */
static const char *const cli_words[] = {"a",   "b",   "c",    "red",  "green",
                                        "blue", "yes", "no",  "zero", "one"};

/* Fills COUNT elements of dtype DT with reproducible values: floats (f16
 * and bf16 encoded as such) in [-1, 1), integers in [0, 10), booleans 0/1,
 * strings among cli_words.
 * False for a dtype the runtime does not have. */
static bool fill_random(pl_dtype dt, void *data, size_t count, uint64_t *state)
{
    for (size_t i = 0; i < count; i++) {
        *state = *state * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t r = (uint32_t)(*state >> 33);
        double u = (double)r / 2147483648.0 * 2.0 - 1.0;
        if (PL_DTYPE_EQ(dt, PL_DTYPE_F32))
            ((float *)data)[i] = (float)u;
        else if (PL_DTYPE_EQ(dt, PL_DTYPE_F64))
            ((double *)data)[i] = u;
        else if (PL_DTYPE_EQ(dt, PL_DTYPE_F16))
            ((uint16_t *)data)[i] = cli_f16_from_float((float)u);
        else if (PL_DTYPE_EQ(dt, PL_DTYPE_BF16))
            ((uint16_t *)data)[i] = cli_bf16_from_float((float)u);
        else if (PL_DTYPE_EQ(dt, PL_DTYPE_I64))
            ((int64_t *)data)[i] = r % 10;
        else if (PL_DTYPE_EQ(dt, PL_DTYPE_I32))
            ((int32_t *)data)[i] = (int32_t)(r % 10);
        else if (PL_DTYPE_EQ(dt, PL_DTYPE_I8))
            ((int8_t *)data)[i] = (int8_t)(r % 10);
        else if (PL_DTYPE_EQ(dt, PL_DTYPE_U8))
            ((uint8_t *)data)[i] = (uint8_t)(r % 10);
        else if (PL_DTYPE_EQ(dt, PL_DTYPE_I16) || PL_DTYPE_EQ(dt, PL_DTYPE_U16))
            ((uint16_t *)data)[i] = (uint16_t)(r % 10);
        else if (PL_DTYPE_EQ(dt, PL_DTYPE_U32))
            ((uint32_t *)data)[i] = (uint32_t)(r % 10);
        else if (PL_DTYPE_EQ(dt, PL_DTYPE_U64))
            ((uint64_t *)data)[i] = r % 10;
        else if (PL_DTYPE_EQ(dt, PL_DTYPE_BOOL))
            ((uint8_t *)data)[i] = (uint8_t)(r % 2);
        else if (PL_DTYPE_EQ(dt, PL_DTYPE_STRING))
            ((const char **)data)[i] = cli_words[r % 10];
        else
            return false;
    }
    return true;
}

/* Prints element I of T (a dense host tensor) as its dtype reads. */
static void print_element(const pl_tensor *t, size_t i)
{
    const char *p = (const char *)t->data + t->byte_offset;
    pl_dtype dt = t->dtype;
    if (PL_DTYPE_EQ(dt, PL_DTYPE_F32)) {
        float v;
        memcpy(&v, p + i * sizeof v, sizeof v);
        printf("%.6g", v);
    } else if (PL_DTYPE_EQ(dt, PL_DTYPE_F64)) {
        double v;
        memcpy(&v, p + i * sizeof v, sizeof v);
        printf("%.6g", v);
    } else if (PL_DTYPE_EQ(dt, PL_DTYPE_F16) || PL_DTYPE_EQ(dt, PL_DTYPE_BF16)) {
        uint16_t h;
        memcpy(&h, p + i * sizeof h, sizeof h);
        printf("%.6g", PL_DTYPE_EQ(dt, PL_DTYPE_F16) ? cli_f16_to_float(h) : cli_bf16_to_float(h));
    } else if (PL_DTYPE_EQ(dt, PL_DTYPE_I64)) {
        int64_t v;
        memcpy(&v, p + i * sizeof v, sizeof v);
        printf("%lld", (long long)v);
    } else if (PL_DTYPE_EQ(dt, PL_DTYPE_I32)) {
        int32_t v;
        memcpy(&v, p + i * sizeof v, sizeof v);
        printf("%d", (int)v);
    } else if (PL_DTYPE_EQ(dt, PL_DTYPE_I8)) {
        printf("%d", (int)((const int8_t *)p)[i]);
    } else if (PL_DTYPE_EQ(dt, PL_DTYPE_U8)) {
        printf("%u", (unsigned)((const uint8_t *)p)[i]);
    } else if (PL_DTYPE_EQ(dt, PL_DTYPE_I16)) {
        int16_t v;
        memcpy(&v, p + i * sizeof v, sizeof v);
        printf("%d", (int)v);
    } else if (PL_DTYPE_EQ(dt, PL_DTYPE_U16)) {
        uint16_t v;
        memcpy(&v, p + i * sizeof v, sizeof v);
        printf("%u", (unsigned)v);
    } else if (PL_DTYPE_EQ(dt, PL_DTYPE_U32)) {
        uint32_t v;
        memcpy(&v, p + i * sizeof v, sizeof v);
        printf("%lu", (unsigned long)v);
    } else if (PL_DTYPE_EQ(dt, PL_DTYPE_U64)) {
        uint64_t v;
        memcpy(&v, p + i * sizeof v, sizeof v);
        printf("%llu", (unsigned long long)v);
    } else if (PL_DTYPE_EQ(dt, PL_DTYPE_BOOL)) {
        printf("%s", ((const uint8_t *)p)[i] ? "true" : "false");
    } else if (PL_DTYPE_EQ(dt, PL_DTYPE_STRING)) {
        const char *v;
        memcpy(&v, p + i * sizeof v, sizeof v);
        printf("\"%s\"", v);
    } else {
        printf("?");
    }
}

/* Prints the first values of T, which holds COUNT elements. */
static void print_values(const pl_tensor *t, size_t count)
{
    size_t n = count < 8 ? count : 8;
    printf("  [");
    for (size_t i = 0; i < n; i++) {
        printf("%s", i ? ", " : "");
        print_element(t, i);
    }
    printf("%s]\n", count > n ? ", ..." : "");
}

static size_t elements_of(int32_t ndim, const int64_t *dims)
{
    size_t n = 1;
    for (int32_t d = 0; d < ndim; d++)
        n *= (size_t)dims[d];
    return n;
}

/* Reads the .npy FILE for input NAME of dtype WANT into *OUT_ARRAY. A bf16
 * input also takes a float32 file, rounded to bf16 (NumPy has no bf16).
 * Returns an exit code, having printed the reason. */
static int load_npy_input(const char *file, const char *name, pl_dtype want,
                          npy_array *out_array)
{
    char err[512];
    if (npy_read(file, out_array, err, sizeof err) != 0) {
        fprintf(stderr, "plinth: %s\n", err);
        return EXIT_RUNTIME;
    }
    if (PL_DTYPE_EQ(want, PL_DTYPE_BF16) && PL_DTYPE_EQ(out_array->dtype, PL_DTYPE_F32))
        npy_to_bf16(out_array);
    /* <u2 is u16, or a bf16 input's bit patterns */
    if (PL_DTYPE_EQ(want, PL_DTYPE_BF16) && PL_DTYPE_EQ(out_array->dtype, PL_DTYPE_U16))
        out_array->dtype = PL_DTYPE_BF16;
    if (!PL_DTYPE_EQ(out_array->dtype, want)) {
        fprintf(stderr, "plinth: %s: holds %s, but input '%s' is %s%s\n", file,
                dtype_name(out_array->dtype), name, dtype_name(want),
                PL_DTYPE_EQ(want, PL_DTYPE_BF16) ? " (give <f4, or <u2 bf16 bit patterns)" : "");
        npy_free(out_array);
        return EXIT_RUNTIME;
    }
    return 0;
}

/* The file that --input gives for input NAME, or NULL. */
static const char *input_file(const char **input_args, size_t n_input_args, const char *name)
{
    const char *file = NULL;
    size_t len = strlen(name);
    for (size_t a = 0; a < n_input_args; a++) {
        const char *eq = strchr(input_args[a], '=');
        if (eq && (size_t)(eq - input_args[a]) == len && strncmp(input_args[a], name, len) == 0)
            file = eq + 1;
    }
    return file;
}

/* Fills INPUTS (one per session input, in order) from --input arguments
 * (.npy, or raw .bin of the declared type) or with reproducible random
 * values; LOADED owns the buffers (free each .data). Returns an exit code. */
static int prepare_inputs(pl_session *session, const char **input_args, size_t n_input_args,
                          pl_io *inputs, npy_array *loaded)
{
    size_t n_in = pl_session_input_count(session);
    int rc = 0;
    uint64_t seed = 42;
    for (size_t a = 0; a < n_input_args && rc == 0; a++) {
        const char *eq = strchr(input_args[a], '=');
        size_t len = eq ? (size_t)(eq - input_args[a]) : 0;
        bool known = false;
        for (size_t i = 0; eq && i < n_in; i++)
            known = known || (strlen(pl_session_input_name(session, i)) == len &&
                              strncmp(pl_session_input_name(session, i), input_args[a], len) == 0);
        if (!known) {
            fprintf(stderr, "plinth: --input %s: the model has no such input (or NAME=FILE is malformed)\n",
                    input_args[a]);
            rc = EXIT_USAGE;
        }
    }
    for (size_t i = 0; i < n_in && rc == 0; i++) {
        const char *name = pl_session_input_name(session, i);
        pl_dtype dt;
        int32_t ndim;
        const int64_t *dims;
        pl_session_input_type(session, i, &dt, &ndim, &dims);
        inputs[i].name = name;
        pl_tensor *t = &inputs[i].tensor;
        t->struct_size = sizeof *t;
        t->dtype = dt;
        t->ndim = ndim;
        t->shape = (int64_t *)dims;
        const char *file = input_file(input_args, n_input_args, name);
        size_t fl = file ? strlen(file) : 0;
        size_t count = elements_of(ndim, dims);
        size_t bytes = count * pl_dtype_size(dt);
        if (file && fl > 4 && strcmp(file + fl - 4, ".npy") == 0) {
            rc = load_npy_input(file, name, dt, &loaded[i]);
            if (rc != 0)
                break;
            t->ndim = loaded[i].ndim;
            t->shape = loaded[i].dims;
            t->data = loaded[i].data;
        } else if (file && PL_DTYPE_EQ(dt, PL_DTYPE_STRING)) {
            fprintf(stderr, "plinth: %s: input '%s' is a string tensor: give it as .npy (<U)\n",
                    file, name);
            rc = EXIT_RUNTIME;
            break;
        } else if (file) {
            FILE *f = fopen(file, "rb");
            loaded[i].data = malloc(bytes ? bytes : 1);
            size_t got = f && loaded[i].data ? fread(loaded[i].data, 1, bytes, f) : 0;
            int extra = f ? fgetc(f) : EOF;
            if (f)
                fclose(f);
            if (f == NULL || got != bytes || extra != EOF) {
                fprintf(stderr, "plinth: %s: input '%s' needs exactly %zu bytes of %s (raw .bin)\n",
                        file, name, bytes, dtype_name(dt));
                rc = EXIT_RUNTIME;
                break;
            }
            t->data = loaded[i].data;
        } else {
            loaded[i].data = malloc(bytes ? bytes : 1);
            if (loaded[i].data == NULL) {
                fprintf(stderr, "plinth: out of memory for input '%s' (%zu bytes)\n", name, bytes);
                rc = EXIT_RUNTIME;
                break;
            }
            if (!fill_random(dt, loaded[i].data, count, &seed)) {
                fprintf(stderr, "plinth: input '%s': no random values for its dtype\n", name);
                rc = EXIT_RUNTIME;
                break;
            }
            t->data = loaded[i].data;
        }
    }
    return rc;
}

/* mkdir -p: makes DIR and every missing parent. Returns an exit code,
 * having printed the reason. */
static int make_output_dir(const char *dir)
{
    size_t len = strlen(dir);
    char *path = malloc(len + 1);
    if (path == NULL) {
        fprintf(stderr, "plinth: out of memory\n");
        return EXIT_RUNTIME;
    }
    memcpy(path, dir, len + 1);
    int rc = 0;
    /* Each prefix that ends a component, then the whole path. */
    for (size_t i = 1; i <= len && rc == 0; i++) {
        if (i < len && path[i] != '/')
            continue;
        if (i < len && path[i - 1] == '/')
            continue;
        char saved = path[i];
        path[i] = '\0';
        struct stat sb;
        if (mkdir(path, 0777) != 0) {
            int err = errno;
            if (err != EEXIST) {
                fprintf(stderr, "plinth: --output-dir %s: cannot create %s: %s\n", dir, path,
                        strerror(err));
                rc = EXIT_RUNTIME;
            } else if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
                fprintf(stderr, "plinth: --output-dir %s: %s exists and is not a directory\n",
                        dir, path);
                rc = EXIT_RUNTIME;
            }
        }
        path[i] = saved;
    }
    free(path);
    return rc;
}

/* Writes output O as DIR/<name>.npy, '/' in the name made '_'. */
static int write_output(const char *dir, const pl_io *o)
{
    char path[4096], safe[256], err[512];
    snprintf(safe, sizeof safe, "%s", o->name);
    for (char *c = safe; *c; c++)
        if (*c == '/')
            *c = '_';
    snprintf(path, sizeof path, "%s/%s.npy", dir, safe);
    const pl_tensor *t = &o->tensor;
    if (npy_write(path, t->dtype, t->ndim, t->shape, (const char *)t->data + t->byte_offset,
                  elements_of(t->ndim, t->shape) * pl_dtype_size(t->dtype), err,
                  sizeof err) != 0) {
        fprintf(stderr, "plinth: %s\n", err);
        return EXIT_RUNTIME;
    }
    return 0;
}

static int cmp_node_total(const void *a, const void *b)
{
    const pl_node_profile *x = a, *y = b;
    return x->total_ns < y->total_ns ? 1 : x->total_ns > y->total_ns ? -1 : 0;
}

/* Step I's nodes, the slowest first, by their mean time a timed run (run
 * --nodes); the nodes folded into others' work are counted, and what the
 * step took beyond its nodes' work (STEP_MS a run: the module's own work
 * around them, handing the step to its thread) is shown. */
static void print_step_nodes(const pl_session *session, size_t i, double step_ms)
{
    size_t n = pl_session_step_nodes(session, i, NULL, 0);
    pl_node_profile *t = n ? calloc(n, sizeof *t) : NULL;
    if (t == NULL)
        return;
    size_t got = pl_session_step_nodes(session, i, t, n);
    n = got < n ? got : n;
    qsort(t, n, sizeof *t, cmp_node_total);
    size_t folded = 0;
    double nodes_ms = 0;
    for (size_t k = 0; k < n; k++) {
        if (t[k].total_ns == 0) {
            folded++;
            continue;
        }
        double ms = t[k].runs ? (double)t[k].total_ns / 1e6 / (double)t[k].runs : 0.0;
        nodes_ms += ms;
        printf("    %8.3f ms    %s (%s)\n", ms, t[k].node, t[k].op);
    }
    if (step_ms > nodes_ms)
        printf("    %8.3f ms    (the step beyond its nodes' work)\n", step_ms - nodes_ms);
    if (folded > 0)
        printf("    %zu node(s) folded into the others' work\n", folded);
    free(t);
}

static int cmd_run(const model_args *a)
{
    pl_runtime *rt;
    pl_model *model;
    pl_session *session;
    /* Made first, so that a directory that cannot be made costs no run. */
    if (a->output_dir != NULL && make_output_dir(a->output_dir) != 0)
        return EXIT_RUNTIME;
    int rc = open_session(a, &rt, &model, &session);
    if (rc != 0)
        return rc;
    print_warnings_from(session, 0);
    size_t n_warned = pl_session_warning_count(session), n_seen = n_warned;
    int replanned = -1; /* the last run after which the session planned again */
    size_t n_in = pl_session_input_count(session);
    size_t n_out = pl_session_output_count(session);
    pl_io *inputs = calloc(n_in ? n_in : 1, sizeof *inputs);
    pl_io *outputs = calloc(n_out ? n_out : 1, sizeof *outputs);
    npy_array *loaded = calloc(n_in ? n_in : 1, sizeof *loaded);
    if (inputs == NULL || outputs == NULL || loaded == NULL) {
        fprintf(stderr, "plinth: out of memory\n");
        rc = EXIT_RUNTIME;
    }
    if (rc == 0)
        rc = prepare_inputs(session, a->input_args, a->n_input_args, inputs, loaded);
    /* Step times of the warm-up runs, taken off the totals printed. */
    size_t n_steps = pl_session_step_count(session);
    uint64_t *warm_ns = calloc(n_steps ? n_steps : 1, sizeof *warm_ns);
    uint64_t *warm_runs = calloc(n_steps ? n_steps : 1, sizeof *warm_runs);
    if (rc == 0 && (warm_ns == NULL || warm_runs == NULL)) {
        fprintf(stderr, "plinth: out of memory\n");
        rc = EXIT_RUNTIME;
    }
    int warmup = a->warmup_given ? a->warmup : 0;
    for (int r = 0; rc == 0 && r < warmup + a->runs; r++) {
        if (r == warmup && pl_session_step_count(session) > n_steps) {
            /* a staged session's run-time part, planned by the warm-up */
            size_t more = pl_session_step_count(session);
            uint64_t *ns = realloc(warm_ns, more * sizeof *ns);
            if (ns != NULL)
                warm_ns = ns;
            uint64_t *wr = ns != NULL ? realloc(warm_runs, more * sizeof *wr) : NULL;
            if (wr != NULL)
                warm_runs = wr;
            if (ns != NULL && wr != NULL)
                n_steps = more;
        }
        if (r == warmup)
            for (size_t i = 0; i < n_steps; i++)
                pl_session_step_info(session, i, NULL, NULL, &warm_ns[i], &warm_runs[i]);
        if (r == warmup && a->nodes && pl_session_profile_nodes(session, true) == 0)
            fprintf(stderr, "plinth: --nodes: no compiled subgraph of this plan times its "
                            "nodes\n");
        for (size_t o = 0; o < n_out; o++) {
            pl_buffer_free(outputs[o].tensor.data);
            memset(&outputs[o], 0, sizeof outputs[o]);
            outputs[o].name = pl_session_output_name(session, o);
            outputs[o].tensor.struct_size = sizeof outputs[o].tensor;
        }
        pl_status *st = pl_session_run(session, inputs, n_in, outputs, n_out);
        if (st != NULL) {
            fprintf(stderr, "plinth: %s\n", pl_status_message(st));
            pl_status_free(st);
            rc = EXIT_RUNTIME;
        }
        if (pl_session_warning_count(session) > n_seen) {
            n_seen = pl_session_warning_count(session);
            replanned = r;
        }
    }
    print_warnings_from(session, n_warned);
    /* planned again after a timed run (and maybe back after a trial): each
     * step's counters cover the runs of its own plan */
    bool fresh = replanned >= warmup;
    for (size_t o = 0; rc == 0 && o < n_out; o++) {
        const pl_tensor *t = &outputs[o].tensor;
        char shape[256] = "";
        size_t len = 0;
        for (int32_t d = 0; d < t->ndim && len < sizeof shape; d++)
            len += (size_t)snprintf(shape + len, sizeof shape - len, "%s%lld", d ? "," : "",
                                    (long long)t->shape[d]);
        printf("output %s: %s[%s]\n", outputs[o].name, dtype_name(t->dtype), shape);
        print_values(t, elements_of(t->ndim, t->shape));
        if (a->output_dir != NULL && write_output(a->output_dir, &outputs[o]) != 0)
            rc = EXIT_RUNTIME;
    }
    if (rc == 0) {
        if (fresh)
            printf("\nsteps (the session planned again after run %d: each step's mean over "
                   "the runs of its plan):\n",
                   replanned + 1);
        else
            printf("\nsteps (%d run%s):\n", a->runs, a->runs == 1 ? "" : "s");
        for (size_t i = 0; i < pl_session_step_count(session); i++) {
            const char *name, *backend;
            uint64_t ns, count;
            pl_session_step_info(session, i, &name, &backend, &ns, &count);
            if (i < n_steps && !fresh) {
                ns -= warm_ns[i];
                count -= warm_runs[i];
            }
            double ms = count ? (double)ns / 1e6 / (double)count : 0.0;
            printf("  %8.3f ms  %-10s %s\n", ms, backend, name);
            if (a->nodes)
                print_step_nodes(session, i, ms);
        }
    }
    free(warm_ns);
    free(warm_runs);
    for (size_t o = 0; outputs && o < n_out; o++)
        pl_buffer_free(outputs[o].tensor.data);
    for (size_t i = 0; loaded && i < n_in; i++)
        npy_free(&loaded[i]);
    free(loaded);
    free(inputs);
    free(outputs);
    close_session(rt, model, session);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The model's path without its extension, for MODEL.input.bin and
 * MODEL.output.bin beside it (the convention of the reference models). */
static void model_base(const char *path, char *buf, size_t size)
{
    snprintf(buf, size, "%s", path);
    char *dot = strrchr(buf, '.');
    char *slash = strrchr(buf, '/');
    if (dot != NULL && (slash == NULL || dot > slash))
        *dot = '\0';
}

/* This process's peak resident set in MiB: VmHWM, which starts afresh at
 * exec. (getrusage's ru_maxrss keeps the high-water mark of the process
 * that exec'd us: under a Python harness it reported Python's 29 MiB for a
 * model that peaks at 8.) */
static double peak_rss_mb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
            break;
    if (f != NULL)
        fclose(f);
    if (kb < 0) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        kb = ru.ru_maxrss;
    }
    return (double)kb / 1024.0;
}

static int cmd_bench(const model_args *a)
{
    const char *model_path = a->model_path;
    int runs = a->runs, warmup = a->warmup;
    bool json = a->json;
    double t0 = now_ms();
    pl_runtime *rt;
    pl_model *model;
    pl_session *session;
    int rc = open_session(a, &rt, &model, &session);
    if (rc != 0)
        return rc;
    double load_ms = now_ms() - t0;
    size_t n_warned = pl_session_warning_count(session);
    size_t n_in = pl_session_input_count(session);
    size_t n_out = pl_session_output_count(session);
    pl_io *inputs = calloc(n_in ? n_in : 1, sizeof *inputs);
    pl_io *outputs = calloc(n_out ? n_out : 1, sizeof *outputs);
    npy_array *loaded = calloc(n_in ? n_in : 1, sizeof *loaded);
    /* The reference models ship MODEL.input.bin: use it for the first input
     * unless --input says otherwise. */
    char base[4096], path[4200];
    model_base(model_path, base, sizeof base);
    const char *args[257];
    size_t n_args = 0;
    for (size_t i = 0; i < a->n_input_args && n_args < 256; i++)
        args[n_args++] = a->input_args[i];
    char implicit[4400];
    snprintf(path, sizeof path, "%s.input.bin", base);
    if (a->n_input_args == 0 && n_in > 0 && access(path, R_OK) == 0) {
        snprintf(implicit, sizeof implicit, "%s=%s", pl_session_input_name(session, 0), path);
        args[n_args++] = implicit;
    }
    rc = prepare_inputs(session, args, n_args, inputs, loaded);
    double *times = calloc((size_t)runs, sizeof *times);
    double max_diff = -1.0, first_ms = 0.0;
    for (int r = 0; rc == 0 && r < warmup + runs; r++) {
        for (size_t o = 0; o < n_out; o++) {
            pl_buffer_free(outputs[o].tensor.data);
            memset(&outputs[o], 0, sizeof outputs[o]);
            outputs[o].name = pl_session_output_name(session, o);
            outputs[o].tensor.struct_size = sizeof outputs[o].tensor;
        }
        double start = now_ms();
        pl_status *st = pl_session_run(session, inputs, n_in, outputs, n_out);
        double took = now_ms() - start;
        if (st != NULL) {
            fprintf(stderr, "plinth: %s\n", pl_status_message(st));
            pl_status_free(st);
            rc = EXIT_RUNTIME;
            break;
        }
        if (r == 0) {
            first_ms = took; /* what a staged session plans, and cold caches, cost once */
            snprintf(path, sizeof path, "%s.output.bin", base);
            FILE *f = fopen(path, "rb");
            const pl_tensor *t = &outputs[0].tensor;
            if (f != NULL && n_out > 0 && t->dtype.code == PL_TYPE_FLOAT && t->dtype.bits == 32) {
                size_t count = elements_of(t->ndim, t->shape);
                float *ref = malloc(count * sizeof *ref + 1);
                if (ref && fread(ref, sizeof *ref, count, f) == count && fgetc(f) == EOF) {
                    max_diff = 0;
                    for (size_t i = 0; i < count; i++) {
                        double d = fabs((double)((const float *)t->data)[i] - ref[i]);
                        max_diff = d > max_diff ? d : max_diff;
                    }
                } else {
                    fprintf(stderr, "plinth: %s does not hold the %zu floats of output '%s'\n",
                            path, count, outputs[0].name);
                }
                free(ref);
            }
            if (f)
                fclose(f);
        }
        if (r >= warmup)
            times[r - warmup] = took;
        if (!json && isatty(2) && (r % 10 == 9 || r + 1 == warmup + runs))
            fprintf(stderr, "\rbench: %d/%d runs (%d warm-up)", r + 1, warmup + runs, warmup);
    }
    if (!json && isatty(2))
        fprintf(stderr, "\n");
    print_warnings_from(session, n_warned);
    if (rc == 0) {
        qsort(times, (size_t)runs, sizeof *times, cmp_double);
        double median = runs % 2 ? times[runs / 2] : (times[runs / 2 - 1] + times[runs / 2]) / 2;
        int k = (int)ceil(0.9 * runs) - 1;
        double p90 = times[k < 0 ? 0 : k];
        double rss_mb = peak_rss_mb();
        printf("model %s, %d threads, %d runs after %d warm-up\n", model_path,
               pl_runtime_thread_count(rt), runs, warmup);
        printf("  median %.3f ms, p90 %.3f ms, min %.3f ms, max %.3f ms\n", median, p90,
               times[0], times[runs - 1]);
        printf("  load %.1f ms (runtime %.1f, model %.1f, session %.1f), first run %.3f ms, "
               "peak RSS %.1f MiB",
               load_ms, g_open_ms[0], g_open_ms[1], g_open_ms[2], first_ms, rss_mb);
        if (max_diff >= 0)
            printf(", max |diff| vs %s.output.bin %.3g", base, max_diff);
        printf("\n");
        if (json) {
            json_t *o = json_pack("{s:s, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f}", "model",
                                  model_path, "threads", pl_runtime_thread_count(rt), "runs",
                                  runs, "warmup", warmup, "median_ms", median, "p90_ms", p90,
                                  "min_ms", times[0], "max_ms", times[runs - 1], "peak_rss_mb",
                                  rss_mb, "load_ms", load_ms);
            json_object_set_new(o, "runtime_ms", json_real(g_open_ms[0]));
            json_object_set_new(o, "model_ms", json_real(g_open_ms[1]));
            json_object_set_new(o, "session_ms", json_real(g_open_ms[2]));
            json_object_set_new(o, "first_run_ms", json_real(first_ms));
            json_object_set_new(o, "max_abs_diff", max_diff >= 0 ? json_real(max_diff) : json_null());
            char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
            if (text != NULL)
                printf("%s\n", text);
            free(text);
            json_decref(o);
        }
    }
    for (size_t o = 0; o < n_out; o++)
        pl_buffer_free(outputs[o].tensor.data);
    for (size_t i = 0; i < n_in; i++)
        npy_free(&loaded[i]);
    free(loaded);
    free(inputs);
    free(outputs);
    free(times);
    close_session(rt, model, session);
    return rc;
}

static int cmd_convert(const char *config, const char *model_path, const char *out_path)
{
    pl_runtime_options o = {.struct_size = sizeof o, .config_path = config, .log_sink = cli_log,
                            .threads = g_threads};
    pl_runtime *rt = NULL;
    pl_model *model = NULL;
    pl_status *st = pl_runtime_create(&o, &rt);
    if (st == NULL)
        st = pl_model_load(rt, model_path, &model);
    if (st == NULL)
        st = pl_model_save_json(model, out_path);
    int rc = 0;
    if (st != NULL) {
        fprintf(stderr, "plinth: %s\n", pl_status_message(st));
        pl_status_free(st);
        rc = EXIT_RUNTIME;
    } else {
        printf("wrote %s (%zu nodes, %zu tensors)\n", out_path, pl_model_node_count(model),
               pl_model_tensor_count(model));
    }
    pl_model_destroy(model);
    pl_runtime_destroy(rt);
    return rc;
}

/* A runtime for configure and call, or NULL with the reason printed. */
static pl_runtime *cli_runtime(const char *config)
{
    pl_runtime_options o = {.struct_size = sizeof o,
                            .config_path = config,
                            .log_sink = cli_log,
                            .threads = g_threads};
    pl_runtime *rt = NULL;
    pl_status *st = pl_runtime_create(&o, &rt);
    if (st != NULL) {
        fprintf(stderr, "plinth: %s\n", pl_status_message(st));
        pl_status_free(st);
        return NULL;
    }
    return rt;
}

static void cache_list_line(void *user, const char *file, uint64_t bytes, int64_t used_ns)
{
    (void)user;
    time_t secs = (time_t)(used_ns / 1000000000);
    struct tm tm;
    char when[32] = "?";
    if (gmtime_r(&secs, &tm) != NULL)
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    printf("%-60s %12llu  %s UTC\n", file, (unsigned long long)bytes, when);
}

/* plinth cache list|stats|clear: the compiled-subgraph cache. */
static int cmd_cache(const char *config, const char *what)
{
    if (what == NULL || (strcmp(what, "list") != 0 && strcmp(what, "stats") != 0 &&
                         strcmp(what, "clear") != 0)) {
        fprintf(stderr, "plinth: cache needs list, stats or clear (see plinth --help)\n");
        return EXIT_USAGE;
    }
    pl_runtime *rt = cli_runtime(config);
    if (rt == NULL)
        return EXIT_RUNTIME;
    pl_cache_stats cs = {.struct_size = sizeof cs};
    pl_status *st = pl_runtime_cache_stats(rt, &cs);
    int rc = 0;
    if (st == NULL && cs.dir[0] == '\0') {
        printf("the cache is off ([runtime] cache_dir is empty)\n");
    } else if (st == NULL && strcmp(what, "list") == 0) {
        printf("%-60s %12s  %s\n", "ENTRY", "BYTES", "LAST USED");
        st = pl_runtime_cache_list(rt, cache_list_line, NULL);
    } else if (st == NULL && strcmp(what, "stats") == 0) {
        printf("cache: %s\n", cs.dir);
        printf("entries: %llu, %.2f MiB", (unsigned long long)cs.entries,
               (double)cs.bytes / 1048576.0);
        if (cs.max_bytes > 0)
            printf(" of a limit of %.2f MiB (cache_max_mb)\n", (double)cs.max_bytes / 1048576.0);
        else
            printf(", no limit (cache_max_mb = 0)\n");
        printf("hits: %llu\nmisses: %llu\nstores: %llu\nevictions: %llu\n"
               "bytes read: %llu\nbytes written: %llu\n",
               (unsigned long long)cs.hits, (unsigned long long)cs.misses,
               (unsigned long long)cs.stores, (unsigned long long)cs.evictions,
               (unsigned long long)cs.bytes_read, (unsigned long long)cs.bytes_written);
    } else if (st == NULL) {
        uint64_t removed = 0;
        st = pl_runtime_cache_clear(rt, &removed);
        if (st == NULL)
            printf("removed %llu entries from %s\n", (unsigned long long)removed, cs.dir);
    }
    if (st != NULL) {
        fprintf(stderr, "plinth: cache: %s\n", pl_status_message(st));
        pl_status_free(st);
        rc = EXIT_RUNTIME;
    }
    pl_runtime_destroy(rt);
    return rc;
}

/* plinth configure MODULE [KEY=VALUE ...]: the module's configure with
 * those keys (none: a query), then every key/value it reports. */
static int cmd_configure(const char *config, const char **rest, size_t n_rest)
{
    if (n_rest < 1) {
        fprintf(stderr, "plinth: configure needs a module name (see plinth --help)\n");
        return EXIT_USAGE;
    }
    const char *keys[64], *values[64];
    char *copies[64];
    size_t n = 0;
    for (size_t i = 1; i < n_rest; i++) {
        const char *eq = strchr(rest[i], '=');
        if (eq == NULL || eq == rest[i] || n == 64) {
            fprintf(stderr, "plinth: configure: '%s' is not KEY=VALUE%s\n", rest[i],
                    n == 64 ? " (or more than 64 keys)" : "");
            for (size_t k = 0; k < n; k++)
                free(copies[k]);
            return EXIT_USAGE;
        }
        copies[n] = strndup(rest[i], (size_t)(eq - rest[i]));
        keys[n] = copies[n];
        values[n++] = eq + 1;
    }
    pl_runtime *rt = cli_runtime(config);
    int rc = rt ? 0 : EXIT_RUNTIME;
    pl_status *st = rt ? pl_runtime_configure_module(rt, rest[0], keys, values, n) : NULL;
    if (st != NULL) {
        fprintf(stderr, "plinth: configure: %s\n", pl_status_message(st));
        pl_status_free(st);
        rc = EXIT_RUNTIME;
    } else if (rt != NULL) {
        long i = pl_runtime_find_module(rt, rest[0]);
        for (size_t k = 0; k < pl_runtime_module_output_count(rt, (size_t)i); k++) {
            const char *key, *value;
            pl_runtime_module_output(rt, (size_t)i, k, &key, &value);
            printf("%s = %s\n", key, value);
        }
    }
    for (size_t k = 0; k < n; k++)
        free(copies[k]);
    pl_runtime_destroy(rt);
    return rc;
}

/* Reads TEXT as a value of signature letter TYPE into *OUT. */
static bool cli_parse_value(char type, const char *text, pl_value *out)
{
    char *end = NULL;
    errno = 0;
    out->type = type;
    switch (type) {
    case 'i': {
        long v = strtol(text, &end, 0);
        out->as.i = (int32_t)v;
        return *text && !*end && !errno && v >= INT32_MIN && v <= INT32_MAX;
    }
    case 'l':
        out->as.l = strtoll(text, &end, 0);
        return *text && !*end && !errno;
    case 'f':
        out->as.f = strtof(text, &end);
        return *text && !*end && !errno;
    case 'd':
        out->as.d = strtod(text, &end);
        return *text && !*end && !errno;
    case 's':
        out->as.s = text;
        return true;
    case 'p':
        /* No memory to point at from a command line: only a null pointer. */
        out->as.p = NULL;
        return strcmp(text, "null") == 0 || strcmp(text, "0") == 0;
    default:
        return false;
    }
}

/* plinth call MODULE [NAME [ARG ...]]: a vendor function of the module,
 * its arguments read by its signature; without NAME, the list. */
static int cmd_call(const char *config, const char **rest, size_t n_rest)
{
    if (n_rest < 1) {
        fprintf(stderr, "plinth: call needs a module name (see plinth --help)\n");
        return EXIT_USAGE;
    }
    pl_runtime *rt = cli_runtime(config);
    if (rt == NULL)
        return EXIT_RUNTIME;
    long mi = pl_runtime_find_module(rt, rest[0]);
    const char *sig = NULL;
    for (size_t k = 0; mi >= 0 && k < pl_runtime_extension_count(rt, (size_t)mi); k++) {
        const char *name, *s;
        pl_runtime_extension(rt, (size_t)mi, k, &name, &s);
        if (n_rest < 2)
            printf("%s %s\n", name, s);
        else if (strcmp(name, rest[1]) == 0)
            sig = s;
    }
    int rc = 0;
    if (n_rest < 2 && mi < 0) {
        fprintf(stderr, "plinth: call: module '%s' is not loaded\n", rest[0]);
        rc = EXIT_RUNTIME;
    } else if (n_rest >= 2) {
        pl_value args[PL_EXTENSION_MAX_PARAMS];
        size_t n = n_rest - 2;
        size_t want = sig ? strlen(sig) - 3 : 0;
        for (size_t a = 0; sig && a < n && a < want && rc == 0; a++)
            if (!cli_parse_value(sig[2 + a], rest[2 + a], &args[a])) {
                fprintf(stderr, "plinth: call %s.%s: argument %zu ('%s') is not a%s %s "
                        "(signature %s)\n", rest[0], rest[1], a + 1, rest[2 + a],
                        sig[2 + a] == 'i' ? "n" : "",
                        sig[2 + a] == 'i' ? "int32" : sig[2 + a] == 'l' ? "int64"
                        : sig[2 + a] == 'p' ? "null pointer" : "number", sig);
                rc = EXIT_USAGE;
            }
        pl_value result;
        pl_status *st = NULL;
        if (rc == 0)
            st = pl_runtime_call(rt, rest[0], rest[1], args,
                                 n > PL_EXTENSION_MAX_PARAMS ? PL_EXTENSION_MAX_PARAMS + 1 : n,
                                 &result);
        if (st != NULL) {
            fprintf(stderr, "plinth: %s\n", pl_status_message(st));
            pl_status_free(st);
            rc = EXIT_RUNTIME;
        } else if (rc == 0) {
            switch (result.type) {
            case 'i': printf("%d\n", (int)result.as.i); break;
            case 'l': printf("%lld\n", (long long)result.as.l); break;
            case 'f': printf("%.9g\n", (double)result.as.f); break;
            case 'd': printf("%.17g\n", result.as.d); break;
            default: break;
            }
        }
    }
    pl_runtime_destroy(rt);
    return rc;
}

static int cmd_modules(const char *config, bool json, bool strict)
{
    pl_runtime *rt = cli_runtime(config);
    if (rt == NULL)
        return EXIT_RUNTIME;
    int rc = json ? print_json(rt) : (print_table(rt), 0);
    if (rc == 0 && strict) {
        for (size_t i = 0; i < pl_runtime_module_count(rt); i++) {
            pl_module_info info = {.struct_size = sizeof info};
            pl_status_free(pl_runtime_module_info(rt, i, &info));
            if (info.status == PL_MODULE_REJECTED)
                rc = EXIT_REJECTED;
        }
    }
    pl_runtime_destroy(rt);
    return rc;
}

int main(int argc, char **argv)
{
    const char *config = NULL;
    const char *command = NULL;
    const char *operand = NULL;
    const char *input_args[256];
    size_t n_input_args = 0;
    const char *output_dir = NULL;
    const char *shape_args[256];
    size_t n_shape_args = 0;
    const char *second = NULL;
    int runs = -1;
    int warmup = 10;
    bool warmup_given = false;
    bool json = false, strict = false, nodes = false;
    const char *rest[PL_EXTENSION_MAX_PARAMS + 68];
    check_module_args check_args = {.device = -1, .node_tests = true};
    const char *tests[64];
    size_t n_tests = 0;
    size_t n_rest = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        /* configure and call take the rest verbatim (a value may start
         * with '-'). */
        if (command != NULL && (strcmp(command, "configure") == 0 || strcmp(command, "call") == 0)) {
            if (n_rest == sizeof rest / sizeof rest[0]) {
                fprintf(stderr, "plinth: %s: too many arguments\n", command);
                return EXIT_USAGE;
            }
            rest[n_rest++] = a;
            continue;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            printf("plinth %s (module ABI %d.%d)\n", PL_VERSION_STRING,
                   PL_ABI_MAJOR, PL_ABI_MINOR);
            return 0;
        } else if (strcmp(a, "--config") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "plinth: --config needs a file\n");
                return EXIT_USAGE;
            }
            config = argv[++i];
        } else if (strncmp(a, "--config=", 9) == 0) {
            config = a + 9;
        } else if (strcmp(a, "--input") == 0 || strcmp(a, "--output-dir") == 0 ||
                   strcmp(a, "--runs") == 0 || strcmp(a, "--shape") == 0 ||
                   strcmp(a, "--warmup") == 0 || strcmp(a, "--threads") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "plinth: %s needs a value\n", a);
                return EXIT_USAGE;
            }
            const char *v = argv[++i];
            if (strcmp(a, "--input") == 0) {
                if (n_input_args == sizeof input_args / sizeof input_args[0]) {
                    fprintf(stderr, "plinth: too many --input options\n");
                    return EXIT_USAGE;
                }
                input_args[n_input_args++] = v;
            } else if (strcmp(a, "--output-dir") == 0) {
                output_dir = v;
            } else if (strcmp(a, "--warmup") == 0) {
                warmup = atoi(v);
                warmup_given = true;
                if (warmup < 0) {
                    fprintf(stderr, "plinth: --warmup needs a number >= 0\n");
                    return EXIT_USAGE;
                }
            } else if (strcmp(a, "--threads") == 0) {
                g_threads = atoi(v);
                if (g_threads < 1 || g_threads > 4096) {
                    fprintf(stderr, "plinth: --threads needs a number from 1 to 4096\n");
                    return EXIT_USAGE;
                }
            } else if (strcmp(a, "--shape") == 0) {
                if (n_shape_args == sizeof shape_args / sizeof shape_args[0]) {
                    fprintf(stderr, "plinth: too many --shape options\n");
                    return EXIT_USAGE;
                }
                shape_args[n_shape_args++] = v;
            } else {
                runs = atoi(v);
                if (runs < 1) {
                    fprintf(stderr, "plinth: --runs needs a positive number\n");
                    return EXIT_USAGE;
                }
            }
        } else if (strcmp(a, "--device") == 0 || strcmp(a, "--tests") == 0 ||
                   strcmp(a, "--known") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "plinth: %s needs a value\n", a);
                return EXIT_USAGE;
            }
            const char *v = argv[++i];
            if (strcmp(a, "--device") == 0) {
                char *end = NULL;
                long d = strtol(v, &end, 10);
                if (end == v || *end != '\0' || d < 0 || d > 4096) {
                    fprintf(stderr, "plinth: --device needs a device number\n");
                    return EXIT_USAGE;
                }
                check_args.device = (int)d;
            } else if (strcmp(a, "--known") == 0) {
                check_args.known = v;
            } else if (n_tests == sizeof tests / sizeof tests[0]) {
                fprintf(stderr, "plinth: too many --tests options\n");
                return EXIT_USAGE;
            } else {
                tests[n_tests++] = v;
            }
        } else if (strcmp(a, "--no-node-tests") == 0) {
            check_args.node_tests = false;
        } else if (strcmp(a, "--json") == 0) {
            json = true;
        } else if (strcmp(a, "--nodes") == 0) {
            nodes = true;
        } else if (strcmp(a, "--strict") == 0) {
            strict = true;
        } else if (a[0] == '-') {
            fprintf(stderr, "plinth: unknown option '%s' (see plinth --help)\n", a);
            return EXIT_USAGE;
        } else if (command == NULL) {
            command = a;
        } else if (operand == NULL &&
                   (strcmp(command, "explain") == 0 || strcmp(command, "run") == 0 ||
                    strcmp(command, "convert") == 0 || strcmp(command, "bench") == 0 ||
                    strcmp(command, "cache") == 0 || strcmp(command, "check-module") == 0)) {
            operand = a;
        } else if (second == NULL && strcmp(command, "convert") == 0) {
            second = a;
        } else {
            fprintf(stderr, "plinth: unexpected argument '%s' (see plinth --help)\n", a);
            return EXIT_USAGE;
        }
    }
    if (command == NULL) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(command, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(command, "modules") == 0)
        return cmd_modules(config, json, strict);
    if (strcmp(command, "configure") == 0)
        return cmd_configure(config, rest, n_rest);
    if (strcmp(command, "call") == 0)
        return cmd_call(config, rest, n_rest);
    if (strcmp(command, "cache") == 0)
        return cmd_cache(config, operand);
    if (strcmp(command, "check-module") == 0) {
        check_args.threads = g_threads;
        check_args.tests = tests;
        check_args.n_tests = n_tests;
        return check_module_command(config, operand, &check_args);
    }
    model_args margs = {.config = config, .model_path = operand, .input_args = input_args,
                        .n_input_args = n_input_args, .shape_args = shape_args,
                        .n_shape_args = n_shape_args, .output_dir = output_dir,
                        .runs = runs, .warmup = warmup, .warmup_given = warmup_given,
                        .json = json, .nodes = nodes};
    if (strcmp(command, "explain") == 0) {
        if (operand == NULL) {
            fprintf(stderr, "plinth: explain needs a model file (see plinth --help)\n");
            return EXIT_USAGE;
        }
        return cmd_explain(&margs);
    }
    if (strcmp(command, "run") == 0) {
        if (operand == NULL) {
            fprintf(stderr, "plinth: run needs a model file (see plinth --help)\n");
            return EXIT_USAGE;
        }
        margs.runs = runs < 0 ? 1 : runs;
        return cmd_run(&margs);
    }
    if (strcmp(command, "bench") == 0) {
        if (operand == NULL) {
            fprintf(stderr, "plinth: bench needs a model file (see plinth --help)\n");
            return EXIT_USAGE;
        }
        margs.runs = runs < 0 ? 50 : runs;
        return cmd_bench(&margs);
    }
    if (strcmp(command, "convert") == 0) {
        if (operand == NULL || second == NULL) {
            fprintf(stderr, "plinth: convert needs a model and an output .json (see plinth --help)\n");
            return EXIT_USAGE;
        }
        return cmd_convert(config, operand, second);
    }
    fprintf(stderr, "plinth: unknown command '%s' (see plinth --help)\n", command);
    return EXIT_USAGE;
}
