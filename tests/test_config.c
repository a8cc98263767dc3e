/* test_config.c — backend.ini as the runtime reads it: a configuration that
 * cannot be used fails pl_runtime_create with a message naming the file,
 * the line and the accepted values; one that can be used but has unknown
 * keys or sections is reported in the diagnostics; and the values of
 * [runtime] and [placement] reach the runtime's getters.
 *
 * usage: test_config CASE FIXTURE_DIR */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */

#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

/* A fresh directory with an empty modules/ folder and backend.ini holding
 * TEXT. Returns the path of backend.ini. */
static const char *ct_ini(const char *text)
{
    const char *dir = th_tempdir();
    th_mkdir(th_path(dir, "modules"), 0755);
    const char *ini = th_path(dir, "backend.ini");
    th_write_file(ini, text, 0644);
    return ini;
}

static pl_runtime *ct_create(const char *ini)
{
    pl_runtime_options o = th_options(ini);
    return th_runtime_create(&o);
}

/* Creation from TEXT must fail with CODE and a message containing every one
 * of the NULL-terminated substrings. */
static void ct_expect_failure(const char *text, pl_code code, ...)
{
    const char *ini = ct_ini(text);
    pl_runtime_options o = th_options(ini);
    pl_runtime *rt = (pl_runtime *)(uintptr_t)1;
    pl_status *st = pl_runtime_create(&o, &rt);
    if (st == NULL) {
        th_watch(rt);
        TH_CHECK(st != NULL, "pl_runtime_create accepted:\n%s", text);
    }
    TH_CHECK(rt == NULL, "a failed pl_runtime_create left *out non-NULL");
    const char *msg = pl_status_message(st);
    TH_CHECK(pl_status_code(st) == code, "code %s, expected %s; message: %s",
             pl_code_name(pl_status_code(st)), pl_code_name(code), msg);
    va_list ap;
    va_start(ap, code);
    for (const char *sub; (sub = va_arg(ap, const char *)) != NULL;)
        TH_CHECK_CONTAINS(msg, sub);
    va_end(ap);
    fprintf(stderr, "message: %s\n", msg);
    pl_status_free(st);
}

#define CT_EXPECT_FAILURE(text, code, ...) \
    ct_expect_failure((text), (code), __VA_ARGS__, (const char *)NULL)

static void case_syntax_error(void)
{
    CT_EXPECT_FAILURE("[runtime]\nmodules = modules\nthis is not ini\n",
                      PL_CODE_INVALID_ARGUMENT, "backend.ini:3:",
                      "syntax error");
}

static void case_unknown_key(void)
{
    pl_runtime *rt = ct_create(ct_ini("[runtime]\nthread = 2\nmodules = modules\n"));
    TH_CHECK_DIAG(rt, "backend.ini:2:", "unknown key 'thread'");
    pl_runtime_destroy(rt);
}

static void case_unknown_section(void)
{
    pl_runtime *rt =
        ct_create(ct_ini("[nonsense]\nkey = value\n[runtime]\nmodules = modules\n"));
    TH_CHECK_DIAG(rt, "backend.ini:1:", "nonsense");
    pl_runtime_destroy(rt);
}

static void case_bad_enum(void)
{
    CT_EXPECT_FAILURE("[runtime]\nengine = turbo\nmodules = modules\n",
                      PL_CODE_INVALID_ARGUMENT, "backend.ini:2:", "engine",
                      "threaded", "naive");
}

static void case_bad_threads_negative(void)
{
    CT_EXPECT_FAILURE("[runtime]\nthreads = -3\nmodules = modules\n",
                      PL_CODE_INVALID_ARGUMENT, "backend.ini:2:", "threads");
}

static void case_bad_threads_word(void)
{
    CT_EXPECT_FAILURE("[runtime]\nthreads = lots\nmodules = modules\n",
                      PL_CODE_INVALID_ARGUMENT, "backend.ini:2:", "threads");
}

static void case_bad_enabled(void)
{
    /* A module of that name exists, so only the value is wrong. */
    const char *ini = ct_ini("[fx_good]\nenabled = maybe\n[runtime]\n"
                             "modules = modules\n");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", ini);
    *strrchr(dir, '/') = '\0';
    th_copy_file(th_path(th_arg(0), "fx_good.so"),
                 th_path(th_path(dir, "modules"), "fx_good.so"), 0644);
    pl_runtime_options o = th_options(ini);
    pl_runtime *rt = (pl_runtime *)(uintptr_t)1;
    pl_status *st = pl_runtime_create(&o, &rt);
    if (st == NULL)
        th_watch(rt);
    TH_CHECK(st != NULL, "enabled = maybe was accepted");
    TH_CHECK(rt == NULL, "a failed pl_runtime_create left *out non-NULL");
    TH_CHECK(pl_status_code(st) == PL_CODE_INVALID_ARGUMENT, "code %s: %s",
             pl_code_name(pl_status_code(st)), pl_status_message(st));
    TH_CHECK_CONTAINS(pl_status_message(st), "backend.ini:2:");
    TH_CHECK_CONTAINS(pl_status_message(st), "yes, no or auto");
    pl_status_free(st);
}

static void case_missing_file(void)
{
    const char *dir = th_tempdir();
    const char *ini = th_path(dir, "absent.ini");
    pl_runtime_options o = th_options(ini);
    pl_runtime *rt = (pl_runtime *)(uintptr_t)1;
    pl_status *st = pl_runtime_create(&o, &rt);
    if (st == NULL)
        th_watch(rt);
    TH_CHECK(st != NULL, "a missing configuration file was accepted");
    TH_CHECK(rt == NULL, "a failed pl_runtime_create left *out non-NULL");
    TH_CHECK(pl_status_code(st) == PL_CODE_NOT_FOUND, "code %s: %s",
             pl_code_name(pl_status_code(st)), pl_status_message(st));
    TH_CHECK_CONTAINS(pl_status_message(st), ini);
    pl_status_free(st);
}

static void case_bom(void)
{
    pl_runtime *rt = ct_create(
        ct_ini("\xEF\xBB\xBF[runtime]\nthreads = 2\nmodules = modules\n"));
    TH_CHECK(pl_runtime_thread_count(rt) == 2, "threads %d, expected 2",
             pl_runtime_thread_count(rt));
    TH_CHECK(TH_FIND_DIAG(rt, "backend.ini:1:") < 0,
             "the BOM line drew a diagnostic");
    pl_runtime_destroy(rt);
}

static void case_empty_file(void)
{
    pl_runtime *rt = ct_create(ct_ini(""));
    TH_CHECK(pl_runtime_engine_kind(rt) == PL_ENGINE_THREADED,
             "default engine is not threaded");
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    long usable = sched_getaffinity(0, sizeof set, &set) == 0
                      ? CPU_COUNT(&set) : online;
    int threads = pl_runtime_thread_count(rt);
    /* "All cores": online CPUs, or those this process may run on. */
    TH_CHECK(threads == online || threads == usable,
             "default threads %d, expected %ld (online) or %ld (affinity)",
             threads, online, usable);
    TH_CHECK(pl_runtime_placement_count(rt) == 0,
             "default placement has %zu entries",
             pl_runtime_placement_count(rt));
    pl_runtime_destroy(rt);
}

static void case_values(void)
{
    const char *ini = ct_ini("[runtime]\nengine = naive\nthreads = 3\n"
                             "cache_dir = cache\nlog = debug\n"
                             "modules = modules\n"
                             "[placement]\norder = example_acc, cpu\n");
    pl_runtime *rt = ct_create(ini);
    TH_CHECK(pl_runtime_engine_kind(rt) == PL_ENGINE_NAIVE, "engine not naive");
    TH_CHECK(pl_runtime_thread_count(rt) == 3, "threads %d, expected 3",
             pl_runtime_thread_count(rt));
    const char *cache = pl_runtime_cache_dir(rt);
    TH_CHECK(cache != NULL && cache[0] == '/', "cache_dir \"%s\" not absolute",
             cache ? cache : "(null)");
    size_t n = strlen(cache);
    TH_CHECK(n >= 6 && strcmp(cache + n - 6, "/cache") == 0,
             "cache_dir \"%s\" does not end with /cache", cache);
    TH_CHECK(pl_runtime_placement_count(rt) == 2, "placement has %zu entries",
             pl_runtime_placement_count(rt));
    TH_CHECK(strcmp(pl_runtime_placement(rt, 0), "example_acc") == 0 &&
                 strcmp(pl_runtime_placement(rt, 1), "cpu") == 0,
             "placement is [%s, %s]", pl_runtime_placement(rt, 0),
             pl_runtime_placement(rt, 1));
    const char *cfg = pl_runtime_config_path(rt);
    TH_CHECK(cfg != NULL && strstr(cfg, "backend.ini") != NULL,
             "config path %s", cfg ? cfg : "(null)");
    pl_runtime_destroy(rt);
}

static void case_bad_log(void)
{
    CT_EXPECT_FAILURE("[runtime]\nlog = chatty\nmodules = modules\n",
                      PL_CODE_INVALID_ARGUMENT, "backend.ini:2:", "log",
                      "error", "warn", "info", "debug");
}

static void case_log_levels(void)
{
    static const char *const levels[] = {"error", "warn", "info", "debug"};
    for (size_t i = 0; i < 4; i++) {
        char text[128];
        snprintf(text, sizeof text, "[runtime]\nlog = %s\nmodules = modules\n",
                 levels[i]);
        pl_runtime *rt = ct_create(ct_ini(text));
        pl_runtime_destroy(rt);
        th_watch(NULL);
    }
}

/* spin_us takes 0 (sleep at once) to 100000 microseconds; the runtime
 * starts with either end and draws no diagnostic for the key. */
static void case_spin_us_values(void)
{
    static const char *const values[] = {"0", "1", "100", "100000"};
    for (size_t i = 0; i < 4; i++) {
        char text[128];
        snprintf(text, sizeof text,
                 "[runtime]\nspin_us = %s\nthreads = 2\nmodules = modules\n",
                 values[i]);
        pl_runtime *rt = ct_create(ct_ini(text));
        TH_CHECK(TH_FIND_DIAG(rt, "spin_us") < 0,
                 "spin_us = %s drew a diagnostic", values[i]);
        pl_runtime_destroy(rt);
        th_watch(NULL);
    }
}

/* An OpenMP runtime loaded after the runtime is made spins as long as the
 * pool: GOMP_SPINCOUNT, unset, becomes spin_us in pauses of this CPU (0
 * for 0), set before the first module opens; a value the environment
 * gives is kept, and OMP_WAIT_POLICY leaves it unset. Each case in its own
 * process: the spin is set once per process. Makes a runtime with
 * spin_us = SPIN_US, the environment first given GOMP_SPINCOUNT and
 * OMP_WAIT_POLICY (NULL: unset), and returns GOMP_SPINCOUNT after it
 * ("(unset)" when it is not set). */
static const char *ct_openmp_spin(int spin_us, const char *count, const char *policy)
{
    if (count != NULL)
        setenv("GOMP_SPINCOUNT", count, 1);
    else
        unsetenv("GOMP_SPINCOUNT");
    if (policy != NULL)
        setenv("OMP_WAIT_POLICY", policy, 1);
    else
        unsetenv("OMP_WAIT_POLICY");
    char text[96];
    snprintf(text, sizeof text, "[runtime]\nspin_us = %d\nmodules = modules\n", spin_us);
    pl_runtime *rt = ct_create(ct_ini(text));
    pl_runtime_destroy(rt);
    th_watch(NULL);
    const char *v = getenv("GOMP_SPINCOUNT");
    fprintf(stderr, "spin_us = %d: GOMP_SPINCOUNT=%s\n", spin_us, v ? v : "(unset)");
    return v ? v : "(unset)";
}

static void case_openmp_spin(void)
{
    const char *v = ct_openmp_spin(0, NULL, NULL);
    TH_CHECK(strcmp(v, "0") == 0, "spin_us = 0 gave GOMP_SPINCOUNT=%s", v);
}

static void case_openmp_spin_scaled(void)
{
    const char *v = ct_openmp_spin(1000, NULL, NULL);
    long n = strtol(v, NULL, 10);
    /* a pause is 1 to 200 ns on the CPUs this runs on (none on others:
     * libgomp's default, 300000) */
    TH_CHECK(n >= 5000 && n <= 300000, "spin_us = 1000 gave GOMP_SPINCOUNT=%s", v);
}

static void case_openmp_spin_kept(void)
{
    const char *v = ct_openmp_spin(1000, "7", NULL);
    TH_CHECK(strcmp(v, "7") == 0, "GOMP_SPINCOUNT=7 became %s", v);
}

static void case_openmp_spin_policy(void)
{
    const char *v = ct_openmp_spin(1000, NULL, "active");
    TH_CHECK(strcmp(v, "(unset)") == 0, "OMP_WAIT_POLICY=active drew GOMP_SPINCOUNT=%s", v);
}

static void case_bad_spin_us(void)
{
    static const char *const values[] = {"-1", "100001", "lots", "1.5", ""};
    for (size_t i = 0; i < 5; i++) {
        char text[128];
        snprintf(text, sizeof text,
                 "[runtime]\nspin_us = %s\nmodules = modules\n", values[i]);
        CT_EXPECT_FAILURE(text, PL_CODE_INVALID_ARGUMENT, "backend.ini:2:",
                          "spin_us", "from 0", "to 100000");
    }
}

/* ---- what the configuration asks of the modules -------------------------- */

/* backend.ini with TEXT, its modules/ folder holding the fixtures named
 * after it (a NULL-terminated list). */
static const char *ct_ini_with(const char *text, ...)
{
    const char *ini = ct_ini(text);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", ini);
    *strrchr(dir, '/') = '\0';
    va_list ap;
    va_start(ap, text);
    for (const char *fx; (fx = va_arg(ap, const char *)) != NULL;) {
        char file[128];
        snprintf(file, sizeof file, "%s.so", fx);
        th_copy_file(th_path(th_arg(0), file), th_path(th_path(dir, "modules"), file), 0644);
    }
    va_end(ap);
    return ini;
}

static pl_status *ct_try(const char *ini)
{
    pl_runtime_options o = th_options(ini);
    pl_runtime *rt = (pl_runtime *)(uintptr_t)1;
    pl_status *st = pl_runtime_create(&o, &rt);
    if (st == NULL)
        th_watch(rt);
    TH_CHECK(st != NULL, "pl_runtime_create accepted %s", ini);
    TH_CHECK(rt == NULL, "a failed pl_runtime_create left *out non-NULL");
    fprintf(stderr, "message: %s\n", pl_status_message(st));
    return st;
}

/* enabled = yes on a module that does not load fails the runtime, naming
 * the line, the module and its reason. */
static void case_enabled_yes_rejected(void)
{
    pl_status *st = ct_try(ct_ini_with("[runtime]\nmodules = modules\n"
                                       "[fx_init_fails]\nenabled = yes\n",
                                       "fx_init_fails", "fx_good", (const char *)NULL));
    TH_CHECK(pl_status_code(st) == PL_CODE_FAILED_PRECONDITION, "code %s",
             pl_code_name(pl_status_code(st)));
    TH_CHECK_CONTAINS(pl_status_message(st), "backend.ini:3: [fx_init_fails] says enabled = yes");
    TH_CHECK_CONTAINS(pl_status_message(st), "rejected: init failed: fixture init refused");
    pl_status_free(st);
    /* The same with auto: a warning line, and the runtime is made. */
    pl_runtime *rt = ct_create(ct_ini_with("[runtime]\nmodules = modules\n"
                                           "[fx_init_fails]\nenabled = auto\n",
                                           "fx_init_fails", "fx_good", (const char *)NULL));
    TH_CHECK_DIAG(rt, "fx_init_fails", "fixture init refused");
    pl_runtime_destroy(rt);
}

static void case_enabled_yes_missing(void)
{
    pl_status *st = ct_try(ct_ini_with("[runtime]\nmodules = modules\n"
                                       "[fx_absent]\nenabled = yes\n",
                                       "fx_good", (const char *)NULL));
    TH_CHECK(pl_status_code(st) == PL_CODE_NOT_FOUND, "code %s",
             pl_code_name(pl_status_code(st)));
    TH_CHECK_CONTAINS(pl_status_message(st), "backend.ini:3:");
    TH_CHECK_CONTAINS(pl_status_message(st), "no module named fx_absent");
    pl_status_free(st);
}

/* An order entry that is not module or module:N is an error at its line. */
static void case_placement_bad_entry(void)
{
    static const char *const bad[] = {"fx_good:x", "fx_good:-1", "fx_good:", "Fx_good",
                                      "fx_good:1:2", "fx good", "fx_good:99999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "[runtime]\nmodules = modules\n[placement]\n"
                 "order = cpu, %s\n", bad[i]);
        CT_EXPECT_FAILURE(text, PL_CODE_INVALID_ARGUMENT, "backend.ini:4:", bad[i],
                          "module or module:device");
    }
    CT_EXPECT_FAILURE("[runtime]\nmodules = modules\n[placement]\npin = a=cpu:x\n",
                      PL_CODE_INVALID_ARGUMENT, "backend.ini:4:", "bad pin 'a=cpu:x'");
}

/* A device the loaded module does not have is an error; a module that is
 * not loaded at all only a warning (the default order names cuda). */
static void case_placement_bad_device(void)
{
    pl_status *st = ct_try(ct_ini_with("[runtime]\nmodules = modules\n[placement]\n"
                                       "order = fx_good:5, cpu\n",
                                       "fx_good", (const char *)NULL));
    TH_CHECK(pl_status_code(st) == PL_CODE_INVALID_ARGUMENT, "code %s",
             pl_code_name(pl_status_code(st)));
    TH_CHECK_CONTAINS(pl_status_message(st), "backend.ini:4:");
    TH_CHECK_CONTAINS(pl_status_message(st), "'fx_good:5', but fx_good has 1 device (0)");
    pl_status_free(st);
    pl_runtime *rt = ct_create(ct_ini_with("[runtime]\nmodules = modules\n[placement]\n"
                                           "order = fx_good:0, fx_absent:3\n",
                                           "fx_good", (const char *)NULL));
    TH_CHECK_DIAG(rt, "backend.ini:4:", "'fx_absent:3', which is not loaded");
    pl_runtime_destroy(rt);
}

/* A module that refuses a key is rejected with the key's own line, once
 * prefixed with its name. */
static void case_configure_key_line(void)
{
    pl_runtime *rt = ct_create(ct_ini_with("[runtime]\nmodules = modules\n"
                                           "[fx_good]\nalpha = 1\n\nreject_me = 2\n",
                                           "fx_good", (const char *)NULL));
    long i = th_find_by_name(rt, "fx_good");
    TH_CHECK(i >= 0, "no fx_good");
    pl_module_info info;
    th_module_info(rt, (size_t)i, &info);
    TH_CHECK(info.status == PL_MODULE_REJECTED, "fx_good is %s",
             pl_module_status_name(info.status));
    TH_CHECK_CONTAINS(info.reason, "backend.ini:6: unknown key 'reject_me'");
    TH_CHECK(strstr(info.reason, "fx_good:") == NULL,
             "the module's name is repeated in \"%s\"", info.reason);
    TH_CHECK_DIAG(rt, "module fx_good (", "): rejected: ", "backend.ini:6: unknown key");
    pl_runtime_destroy(rt);
}

static const th_case cases[] = {
    {"syntax_error", case_syntax_error},
    {"unknown_key", case_unknown_key},
    {"unknown_section", case_unknown_section},
    {"bad_enum", case_bad_enum},
    {"bad_threads_negative", case_bad_threads_negative},
    {"bad_threads_word", case_bad_threads_word},
    {"bad_enabled", case_bad_enabled},
    {"missing_file", case_missing_file},
    {"bom", case_bom},
    {"empty_file", case_empty_file},
    {"values", case_values},
    {"bad_log", case_bad_log},
    {"log_levels", case_log_levels},
    {"spin_us_values", case_spin_us_values},
    {"openmp_spin", case_openmp_spin},
    {"openmp_spin_scaled", case_openmp_spin_scaled},
    {"openmp_spin_kept", case_openmp_spin_kept},
    {"openmp_spin_policy", case_openmp_spin_policy},
    {"bad_spin_us", case_bad_spin_us},
    {"enabled_yes_rejected", case_enabled_yes_rejected},
    {"enabled_yes_missing", case_enabled_yes_missing},
    {"placement_bad_entry", case_placement_bad_entry},
    {"placement_bad_device", case_placement_bad_device},
    {"configure_key_line", case_configure_key_line},
};

int main(int argc, char **argv)
{
    return th_main(argc, argv, cases, sizeof cases / sizeof cases[0], 1,
                   "FIXTURE_DIR");
}
