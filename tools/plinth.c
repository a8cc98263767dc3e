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
#include <limits.h>
#ifndef PATH_MAX
#define PATH_MAX 4096
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plinth/module.h"
#include "plinth/plinth.h"

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2, EXIT_REJECTED = 3 };

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
            "  explain MODEL [--json]        load a model (Plinth JSON graph), infer every\n"
            "                                shape, and show the execution order with output\n"
            "                                types and the memory plan against its lower bound\n"
            "\n"
            "options:\n"
            "  --config FILE   backend.ini to use (default: $PLINTH_CONFIG, ./backend.ini,\n"
            "                  then the installed default)\n"
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
        {PL_CAP_MODEL_IMPORT, "import"},   {PL_CAP_HOST_MEMORY, "host-memory"}};
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

/* The log sink of the CLI: diagnostics are printed with the table, so only
 * errors go to stderr as they happen. */
static void cli_log(void *user, int level, const char *line)
{
    (void)user;
    if (level <= PL_LOG_ERROR)
        fprintf(stderr, "plinth: error: %s\n", line);
}

static int cmd_explain(const char *config, const char *model_path, bool json)
{
    pl_runtime_options o = {.struct_size = sizeof o,
                            .config_path = config,
                            .log_sink = cli_log};
    pl_runtime *rt = NULL;
    pl_status *st = pl_runtime_create(&o, &rt);
    if (st != NULL) {
        fprintf(stderr, "plinth: %s\n", pl_status_message(st));
        pl_status_free(st);
        return EXIT_RUNTIME;
    }
    pl_model *model = NULL;
    char *text = NULL;
    st = pl_model_load(rt, model_path, &model);
    if (st == NULL)
        st = pl_model_explain(model, json, &text);
    int rc = 0;
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
    pl_model_destroy(model);
    pl_runtime_destroy(rt);
    return rc;
}

static int cmd_modules(const char *config, bool json, bool strict)
{
    pl_runtime_options o = {.struct_size = sizeof o,
                            .config_path = config,
                            .log_sink = cli_log};
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
        } else if (strcmp(a, "--json") == 0) {
            json = true;
        } else if (strcmp(a, "--strict") == 0) {
            strict = true;
        } else if (a[0] == '-') {
            fprintf(stderr, "plinth: unknown option '%s' (see plinth --help)\n", a);
            return EXIT_USAGE;
        } else if (command == NULL) {
            command = a;
        } else if (operand == NULL && strcmp(command, "explain") == 0) {
            operand = a;
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
    fprintf(stderr, "plinth: unknown command '%s' (see plinth --help)\n", command);
    return EXIT_USAGE;
}
