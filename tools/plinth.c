/* plinth — the command-line face of the runtime: `plinth modules` tells an
 * operator what was found on the module path, what loaded and, for
 * everything else, exactly why; `plinth explain MODEL` shows what the runtime
 * makes of a model. Uses only the public API (plinth.h).
 *
 * Exit codes: 0 success; 1 the runtime could not be created (bad or missing
 * configuration) or the model could not be loaded; 2 usage error; 3 `modules --strict` and some module found
 * was rejected. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <sys/resource.h>
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
            "  explain MODEL [--json]        load a model (Plinth JSON graph) and show what a\n"
            "                                session makes of it: node -> backend with every\n"
            "                                refusal reason, subgraphs, copies and their bytes,\n"
            "                                steps, and the memory plan per device against its\n"
            "                                lower bound\n"
            "  bench MODEL [--threads N] [--runs N] [--warmup N] [--input NAME=FILE] [--json]\n"
            "                                time runs after a warm-up: median and p90 latency,\n"
            "                                peak RSS, load time (runtime + model + session);\n"
            "                                MODEL.input.bin / MODEL.output.bin beside the model\n"
            "                                are used as input and reference when present;\n"
            "                                --json ends with one JSON object\n"
            "  convert MODEL OUT.json        write a model (e.g. .onnx) in Plinth's JSON format,\n"
            "                                weights in OUT.weights beside it\n"
            "  run MODEL [--input NAME=FILE.npy|FILE.bin ...] [--shape NAME=D0,D1,...]\n"
            "            [--output-dir DIR] [--runs N]\n"
            "                                run a model: inputs from .npy (or raw .bin of the\n"
            "                                declared type), random with a fixed seed when not\n"
            "                                given; prints each output's shape and first values\n"
            "                                and the time of each step; --output-dir writes\n"
            "                                <output name>.npy; --shape binds an input's\n"
            "                                symbolic dims (an .npy input binds its own)\n"
            "\n"
            "options:\n"
            "  --config FILE   backend.ini to use (default: $PLINTH_CONFIG, ./backend.ini,\n"
            "                  then the installed default)\n"
            "  --threads N     the CPU thread budget (default: backend.ini's threads)\n"
            "  --help          this text\n"
            "  --version       the version of plinth and of the module ABI\n"
            "\n"
            "exit codes: 0 success, 1 runtime error (configuration, model), 2 usage,\n"
            "            3 --strict and a module was rejected\n");
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

/* Loads MODEL_PATH and makes a session; prints the reason and returns
 * EXIT_RUNTIME on failure. */
/* An input shape to bind before the session is made. */
typedef struct shape_bind {
    const char *name;
    size_t name_len;
    int32_t ndim;
    int64_t dims[16];
} shape_bind;

static int open_session_bound(const char *config, const char *model_path,
                              const shape_bind *binds, size_t n_binds, pl_runtime **out_rt,
                              pl_model **out_model, pl_session **out_session);

static int open_session(const char *config, const char *model_path, pl_runtime **out_rt,
                        pl_model **out_model, pl_session **out_session)
{
    return open_session_bound(config, model_path, NULL, 0, out_rt, out_model, out_session);
}

static int open_session_bound(const char *config, const char *model_path,
                              const shape_bind *binds, size_t n_binds, pl_runtime **out_rt,
                              pl_model **out_model, pl_session **out_session)
{
    *out_rt = NULL;
    *out_model = NULL;
    *out_session = NULL;
    pl_runtime_options o = {.struct_size = sizeof o,
                            .config_path = config,
                            .log_sink = cli_log,
                            .threads = g_threads};
    pl_status *st = pl_runtime_create(&o, out_rt);
    if (st == NULL)
        st = pl_model_load(*out_rt, model_path, out_model);
    for (size_t i = 0; st == NULL && i < n_binds; i++) {
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)binds[i].name_len, binds[i].name);
        st = pl_model_bind_input(*out_model, name, binds[i].ndim, binds[i].dims);
    }
    if (st == NULL)
        st = pl_session_create(*out_model, NULL, out_session);
    if (st != NULL) {
        fprintf(stderr, "plinth: %s\n", pl_status_message(st));
        pl_status_free(st);
        pl_model_destroy(*out_model);
        pl_runtime_destroy(*out_rt);
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

static int cmd_explain(const char *config, const char *model_path, bool json)
{
    pl_runtime *rt;
    pl_model *model;
    pl_session *session;
    int rc = open_session(config, model_path, &rt, &model, &session);
    if (rc != 0)
        return rc;
    char *text = NULL;
    pl_status *st = pl_session_explain(session, json, &text);
    if (st != NULL) {
        fprintf(stderr, "plinth: %s\n", pl_status_message(st));
        pl_status_free(st);
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

/* Fills a buffer with reproducible values: floats in [-1, 1), integers in
 * [0, 10), booleans 0/1. */
static void fill_random(pl_dtype dt, void *data, size_t count, uint64_t *state)
{
    for (size_t i = 0; i < count; i++) {
        *state = *state * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t r = (uint32_t)(*state >> 33);
        double u = (double)r / 2147483648.0 * 2.0 - 1.0;
        if (dt.code == PL_TYPE_FLOAT && dt.bits == 32)
            ((float *)data)[i] = (float)u;
        else if (dt.code == PL_TYPE_FLOAT && dt.bits == 64)
            ((double *)data)[i] = u;
        else if (dt.code == PL_TYPE_INT && dt.bits == 64)
            ((int64_t *)data)[i] = r % 10;
        else if (dt.code == PL_TYPE_INT && dt.bits == 32)
            ((int32_t *)data)[i] = (int32_t)(r % 10);
        else
            ((uint8_t *)data)[i] = (uint8_t)(dt.code == PL_TYPE_BOOL ? r % 2 : r % 10);
    }
}

static void print_values(const pl_tensor *t, size_t count)
{
    size_t n = count < 8 ? count : 8;
    printf("  [");
    for (size_t i = 0; i < n; i++) {
        const char *sep = i ? ", " : "";
        if (t->dtype.code == PL_TYPE_FLOAT && t->dtype.bits == 32)
            printf("%s%.6g", sep, ((const float *)t->data)[i]);
        else if (t->dtype.code == PL_TYPE_FLOAT && t->dtype.bits == 64)
            printf("%s%.6g", sep, ((const double *)t->data)[i]);
        else if (t->dtype.code == PL_TYPE_INT && t->dtype.bits == 64)
            printf("%s%lld", sep, (long long)((const int64_t *)t->data)[i]);
        else if (t->dtype.code == PL_TYPE_INT && t->dtype.bits == 32)
            printf("%s%d", sep, ((const int32_t *)t->data)[i]);
        else
            printf("%s%u", sep, ((const uint8_t *)t->data)[i]);
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

/* Fills INPUTS (one per session input, in order) from --input arguments
 * (.npy, or raw .bin of the declared type) or with reproducible random
 * values; LOADED owns the buffers (free each .data). Returns an exit code. */
static int prepare_inputs(pl_session *session, const char **input_args, size_t n_input_args,
                          pl_io *inputs, npy_array *loaded)
{
    size_t n_in = pl_session_input_count(session);
    char err[512];
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
        size_t count = elements_of(ndim, dims);
        size_t bytes = count * pl_dtype_size(dt);
        const char *file = NULL;
        for (size_t a = 0; a < n_input_args; a++) {
            const char *eq = strchr(input_args[a], '=');
            if (eq && (size_t)(eq - input_args[a]) == strlen(name) &&
                strncmp(input_args[a], name, strlen(name)) == 0)
                file = eq + 1;
        }
        size_t fl = file ? strlen(file) : 0;
        if (file && fl > 4 && strcmp(file + fl - 4, ".npy") == 0) {
            if (npy_read(file, &loaded[i], err, sizeof err) != 0) {
                fprintf(stderr, "plinth: %s\n", err);
                rc = EXIT_RUNTIME;
                break;
            }
            t->dtype = loaded[i].dtype;
            t->ndim = loaded[i].ndim;
            t->shape = loaded[i].dims;
            t->data = loaded[i].data;
        } else if (file) {
            FILE *f = fopen(file, "rb");
            loaded[i].data = malloc(bytes ? bytes : 1);
            size_t got = f && loaded[i].data ? fread(loaded[i].data, 1, bytes, f) : 0;
            int extra = f ? fgetc(f) : EOF;
            if (f)
                fclose(f);
            if (f == NULL || got != bytes || extra != EOF) {
                fprintf(stderr, "plinth: %s: input '%s' needs exactly %zu bytes of %s (raw .bin)\n",
                        file, name, bytes, "its declared type");
                rc = EXIT_RUNTIME;
                break;
            }
            t->data = loaded[i].data;
        } else {
            loaded[i].data = malloc(bytes ? bytes : 1);
            fill_random(dt, loaded[i].data, count, &seed);
            t->data = loaded[i].data;
        }
    }
    return rc;
}

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
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 0 || b->ndim >= 16)
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

static int cmd_run(const char *config, const char *model_path, const char **input_args,
                   size_t n_input_args, const char **shape_args, size_t n_shape_args,
                   const char *output_dir, int runs)
{
    pl_runtime *rt;
    pl_model *model;
    pl_session *session;
    /* Shapes to bind: --shape, then the shape of every .npy input. */
    shape_bind binds[512];
    size_t n_binds = 0;
    char err0[512];
    for (size_t a = 0; a < n_shape_args; a++) {
        if (!parse_shape_arg(shape_args[a], &binds[n_binds])) {
            fprintf(stderr, "plinth: --shape %s: expected NAME=D0,D1,... with dims >= 0\n",
                    shape_args[a]);
            return EXIT_USAGE;
        }
        n_binds++;
    }
    for (size_t a = 0; a < n_input_args; a++) {
        const char *eq = strchr(input_args[a], '=');
        size_t fl = eq ? strlen(eq + 1) : 0;
        if (eq == NULL || fl <= 4 || strcmp(eq + 1 + fl - 4, ".npy") != 0)
            continue;
        npy_array probe;
        if (npy_read(eq + 1, &probe, err0, sizeof err0) != 0) {
            fprintf(stderr, "plinth: %s\n", err0);
            return EXIT_RUNTIME;
        }
        shape_bind *b = &binds[n_binds++];
        b->name = input_args[a];
        b->name_len = (size_t)(eq - input_args[a]);
        b->ndim = probe.ndim;
        memcpy(b->dims, probe.dims, sizeof b->dims);
        npy_free(&probe);
    }
    int rc = open_session_bound(config, model_path, binds, n_binds, &rt, &model, &session);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < pl_session_warning_count(session); i++)
        fprintf(stderr, "plinth: warning: %s\n", pl_session_warning(session, i));
    size_t n_in = pl_session_input_count(session);
    size_t n_out = pl_session_output_count(session);
    pl_io *inputs = calloc(n_in ? n_in : 1, sizeof *inputs);
    pl_io *outputs = calloc(n_out ? n_out : 1, sizeof *outputs);
    npy_array *loaded = calloc(n_in ? n_in : 1, sizeof *loaded);
    char err[512];
    rc = prepare_inputs(session, input_args, n_input_args, inputs, loaded);
    for (size_t r = 0; rc == 0 && r < (size_t)runs; r++) {
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
    }
    for (size_t o = 0; rc == 0 && o < n_out; o++) {
        const pl_tensor *t = &outputs[o].tensor;
        char shape[256] = "";
        size_t len = 0;
        for (int32_t d = 0; d < t->ndim; d++)
            len += (size_t)snprintf(shape + len, sizeof shape - len, "%s%lld", d ? "," : "",
                                    (long long)t->shape[d]);
        printf("output %s: %s[%s]\n", outputs[o].name,
               t->dtype.code == PL_TYPE_FLOAT ? (t->dtype.bits == 32 ? "f32" : "f64") : "int",
               shape);
        print_values(t, elements_of(t->ndim, t->shape));
        if (output_dir != NULL) {
            char path[4096], safe[256];
            snprintf(safe, sizeof safe, "%s", outputs[o].name);
            for (char *c = safe; *c; c++)
                if (*c == '/')
                    *c = '_';
            snprintf(path, sizeof path, "%s/%s.npy", output_dir, safe);
            if (npy_write(path, t->dtype, t->ndim, t->shape, t->data,
                          elements_of(t->ndim, t->shape) * pl_dtype_size(t->dtype), err,
                          sizeof err) != 0) {
                fprintf(stderr, "plinth: %s\n", err);
                rc = EXIT_RUNTIME;
            }
        }
    }
    if (rc == 0) {
        printf("\nsteps (%d run%s):\n", runs, runs == 1 ? "" : "s");
        for (size_t i = 0; i < pl_session_step_count(session); i++) {
            const char *name, *backend;
            uint64_t ns, count;
            pl_session_step_info(session, i, &name, &backend, &ns, &count);
            printf("  %8.3f ms  %-10s %s\n", count ? (double)ns / 1e6 / (double)count : 0.0,
                   backend, name);
        }
    }
    for (size_t o = 0; o < n_out; o++)
        pl_buffer_free(outputs[o].tensor.data);
    for (size_t i = 0; i < n_in; i++)
        free(loaded[i].data);
    free(loaded);
    free(inputs);
    free(outputs);
    close_session(rt, model, session);
    return rc;
}


static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
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

static int cmd_bench(const char *config, const char *model_path, const char **input_args,
                     size_t n_input_args, int runs, int warmup, bool json)
{
    double t0 = now_ms();
    pl_runtime *rt;
    pl_model *model;
    pl_session *session;
    int rc = open_session(config, model_path, &rt, &model, &session);
    if (rc != 0)
        return rc;
    double load_ms = now_ms() - t0;
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
    for (size_t i = 0; i < n_input_args && n_args < 256; i++)
        args[n_args++] = input_args[i];
    char implicit[4400];
    snprintf(path, sizeof path, "%s.input.bin", base);
    if (n_input_args == 0 && n_in > 0 && access(path, R_OK) == 0) {
        snprintf(implicit, sizeof implicit, "%s=%s", pl_session_input_name(session, 0), path);
        args[n_args++] = implicit;
    }
    rc = prepare_inputs(session, args, n_args, inputs, loaded);
    double *times = calloc((size_t)runs, sizeof *times);
    double max_diff = -1.0;
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
    if (rc == 0) {
        qsort(times, (size_t)runs, sizeof *times, cmp_double);
        double median = runs % 2 ? times[runs / 2] : (times[runs / 2 - 1] + times[runs / 2]) / 2;
        int k = (int)ceil(0.9 * runs) - 1;
        double p90 = times[k < 0 ? 0 : k];
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        double rss_mb = (double)ru.ru_maxrss / 1024.0;
        printf("model %s, %d threads, %d runs after %d warm-up\n", model_path,
               pl_runtime_thread_count(rt), runs, warmup);
        printf("  median %.3f ms, p90 %.3f ms, min %.3f ms, max %.3f ms\n", median, p90,
               times[0], times[runs - 1]);
        printf("  load %.1f ms, peak RSS %.1f MiB", load_ms, rss_mb);
        if (max_diff >= 0)
            printf(", max |diff| vs %s.output.bin %.3g", base, max_diff);
        printf("\n");
        if (json) {
            json_t *o = json_pack("{s:s, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f}", "model",
                                  model_path, "threads", pl_runtime_thread_count(rt), "runs",
                                  runs, "warmup", warmup, "median_ms", median, "p90_ms", p90,
                                  "min_ms", times[0], "max_ms", times[runs - 1], "peak_rss_mb",
                                  rss_mb, "load_ms", load_ms);
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
        free(loaded[i].data);
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

static int cmd_modules(const char *config, bool json, bool strict)
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
        return EXIT_RUNTIME;
    }
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
    bool json = false, strict = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
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
        } else if (strcmp(a, "--json") == 0) {
            json = true;
        } else if (strcmp(a, "--strict") == 0) {
            strict = true;
        } else if (a[0] == '-') {
            fprintf(stderr, "plinth: unknown option '%s' (see plinth --help)\n", a);
            return EXIT_USAGE;
        } else if (command == NULL) {
            command = a;
        } else if (operand == NULL &&
                   (strcmp(command, "explain") == 0 || strcmp(command, "run") == 0 ||
                    strcmp(command, "convert") == 0 || strcmp(command, "bench") == 0)) {
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
    if (strcmp(command, "explain") == 0) {
        if (operand == NULL) {
            fprintf(stderr, "plinth: explain needs a model file (see plinth --help)\n");
            return EXIT_USAGE;
        }
        return cmd_explain(config, operand, json);
    }
    if (strcmp(command, "run") == 0) {
        if (operand == NULL) {
            fprintf(stderr, "plinth: run needs a model file (see plinth --help)\n");
            return EXIT_USAGE;
        }
        return cmd_run(config, operand, input_args, n_input_args, shape_args, n_shape_args,
                       output_dir, runs < 0 ? 1 : runs);
    }
    if (strcmp(command, "bench") == 0) {
        if (operand == NULL) {
            fprintf(stderr, "plinth: bench needs a model file (see plinth --help)\n");
            return EXIT_USAGE;
        }
        return cmd_bench(config, operand, input_args, n_input_args, runs < 0 ? 50 : runs,
                         warmup, json);
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
