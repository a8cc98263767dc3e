/* check_module.c — `plinth check-module FILE.so`: a vendor's conformance
 * check of one module file. Two parts, each in its own process so that a
 * module that crashes or hangs is a verdict, not the end of the check:
 *   1. the ABI checks of pl_check_module (core/src/check.c), in a forked
 *      child under a time limit;
 *   2. the ONNX node tests, strictly on that module (it is offered every
 *      node first, cpu takes the rest, and a test counts only when the
 *      module ran a node of it), by the conformance runner installed
 *      beside the CLI.
 * Prints one line per check and a summary; exits 0 when everything passed,
 * 1 on any failure, 2 on a usage error, 77 when the module is sound but has
 * no device here (the checks that need one were skipped). */
#define _GNU_SOURCE
#include "check_module.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plinth/plinth.h"

#define CHECK_EXIT_FAIL 1
#define CHECK_EXIT_ERROR 4
/* The ABI child's own exit codes, apart from any a module (exit()) or a
 * sanitizer (1) might end the process with. */
#define CHECK_CHILD_PASS 0
#define CHECK_CHILD_FAIL 64
#define CHECK_CHILD_ERROR 65
#define CHECK_EXIT_NO_DEVICE 77
#define CHECK_TIME_LIMIT_S 600

static const char *verdict_word(pl_check_verdict v)
{
    return v == PL_CHECK_PASS ? "PASS" : v == PL_CHECK_FAIL ? "FAIL" : "SKIP";
}

/* The check running now, in memory the parent shares: named when the
 * child dies. */
static char *check_running;
#define CHECK_RUNNING_BYTES 128

static void check_line(void *user, const char *check, pl_check_verdict v, const char *detail)
{
    (void)user;
    if (v == PL_CHECK_RUNNING) {
        if (check_running != NULL)
            snprintf(check_running, CHECK_RUNNING_BYTES, "%s", check);
        return;
    }
    printf("%s %-24s %s\n", verdict_word(v), check, detail);
    fflush(stdout);
}

static void check_quiet_log(void *user, int level, const char *line)
{
    (void)user;
    if (level >= 3) /* errors only: the checks say the rest */
        fprintf(stderr, "plinth: %s\n", line);
}

/* The child: a runtime of CONFIG, then pl_check_module. */
static int check_abi_child(const char *config, const char *path, const check_module_args *a)
{
    alarm(CHECK_TIME_LIMIT_S);
    pl_runtime_options o = {.struct_size = sizeof o, .config_path = config,
                            .log_sink = check_quiet_log, .threads = a->threads};
    pl_runtime *rt = NULL;
    pl_status *st = pl_runtime_create(&o, &rt);
    if (st != NULL) {
        fprintf(stderr, "plinth: %s\n", pl_status_message(st));
        pl_status_free(st);
        return CHECK_CHILD_ERROR;
    }
    pl_check_options co = {.struct_size = sizeof co, .device = a->device};
    size_t failures = 0;
    bool no_device = false;
    st = pl_check_module(rt, path, &co, check_line, NULL, &failures, &no_device);
    pl_runtime_destroy(rt);
    if (st != NULL) {
        fprintf(stderr, "plinth: check-module: %s\n", pl_status_message(st));
        pl_status_free(st);
        return CHECK_CHILD_ERROR;
    }
    if (failures > 0)
        return CHECK_CHILD_FAIL;
    return no_device ? CHECK_EXIT_NO_DEVICE : CHECK_CHILD_PASS;
}

/* Runs ARGV (NULL-terminated) or the ABI child; its exit status, or a
 * description of how it died in WHY. */
static int check_wait(pid_t pid, char *why, size_t size)
{
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            snprintf(why, size, "waitpid: %s", strerror(errno));
            return -1;
        }
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    int sig = WTERMSIG(status);
    if (sig == SIGALRM)
        snprintf(why, size, "did not finish within its time limit (a hang, or a deadlock "
                 "when kernels run at once)");
    else if (check_running != NULL && check_running[0] != '\0')
        snprintf(why, size, "crashed (%s) in the check '%s'", strsignal(sig), check_running);
    else
        snprintf(why, size, "crashed (%s)", strsignal(sig));
    return -1;
}

/* The conformance runner: $PLINTH_CONFORMANCE_RUNNER, beside this program
 * (the build tree), or in ../libexec/plinth (installed). */
static bool check_find_runner(char *out, size_t size)
{
    const char *env = getenv("PLINTH_CONFORMANCE_RUNNER");
    if (env != NULL && env[0] != '\0') {
        snprintf(out, size, "%s", env);
        return access(out, X_OK) == 0;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return false;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash == NULL)
        return false;
    *slash = '\0';
    const char *tries[] = {"/conformance_runner", "/../libexec/plinth/conformance_runner"};
    for (size_t i = 0; i < sizeof tries / sizeof tries[0]; i++) {
        if (strlen(self) + strlen(tries[i]) + 1 > size)
            return false;
        strcpy(out, self);
        strcat(out, tries[i]);
        if (access(out, X_OK) == 0)
            return true;
    }
    return false;
}

static int check_node_tests(const char *config, const char *path, const check_module_args *a)
{
    static const char *fallback = "/usr/share/libonnx-testdata/data/node";
    char runner[PATH_MAX];
    if (!check_find_runner(runner, sizeof runner)) {
        printf("SKIP %-24s no conformance runner beside plinth (set "
               "PLINTH_CONFORMANCE_RUNNER)\n", "node tests");
        return 0;
    }
    struct stat sb;
    if (a->n_tests == 0 && stat(fallback, &sb) != 0) {
        printf("SKIP %-24s no ONNX node tests: give --tests DIR (Debian: libonnx-testdata)\n",
               "node tests");
        return 0;
    }
    /* The runner needs a configuration file: this one, or the one a
     * runtime finds by itself. */
    char cfg[PATH_MAX] = "";
    if (config != NULL) {
        snprintf(cfg, sizeof cfg, "%s", config);
    } else {
        pl_runtime_options o = {.struct_size = sizeof o, .log_sink = check_quiet_log};
        pl_runtime *rt = NULL;
        pl_status *st = pl_runtime_create(&o, &rt);
        if (st == NULL && pl_runtime_config_path(rt) != NULL)
            snprintf(cfg, sizeof cfg, "%s", pl_runtime_config_path(rt));
        pl_status_free(st);
        pl_runtime_destroy(rt);
    }
    if (cfg[0] == '\0') {
        printf("SKIP %-24s no backend.ini to run sessions with (give --config)\n",
               "node tests");
        return 0;
    }
    const char **argv = calloc(a->n_tests + 10, sizeof *argv);
    if (argv == NULL)
        return CHECK_EXIT_ERROR;
    size_t k = 0;
    argv[k++] = runner;
    argv[k++] = "check";
    argv[k++] = cfg;
    argv[k++] = path;
    if (a->known != NULL) {
        argv[k++] = "--known";
        argv[k++] = a->known;
    }
    for (size_t i = 0; i < a->n_tests; i++)
        argv[k++] = a->tests[i];
    if (a->n_tests == 0)
        argv[k++] = fallback;
    argv[k] = NULL;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(CHECK_TIME_LIMIT_S * 3);
        execv(runner, (char *const *)argv);
        fprintf(stderr, "plinth: %s: %s\n", runner, strerror(errno));
        _exit(CHECK_EXIT_ERROR);
    }
    free(argv);
    if (pid < 0) {
        printf("FAIL %-24s cannot start the runner: %s\n", "node tests", strerror(errno));
        return CHECK_EXIT_FAIL;
    }
    char why[256];
    int rc = check_wait(pid, why, sizeof why);
    if (rc < 0) {
        printf("FAIL %-24s the runner %s\n", "node tests", why);
        return CHECK_EXIT_FAIL;
    }
    if (rc != 0)
        printf("FAIL %-24s failures above\n", "node tests");
    return rc == 0 ? 0 : CHECK_EXIT_FAIL;
}

int check_module_command(const char *config, const char *path, const check_module_args *a)
{
    if (path == NULL) {
        fprintf(stderr, "plinth: check-module needs a module file (see plinth --help)\n");
        return 2;
    }
    printf("check-module %s\n", path);
    fflush(stdout);
    void *shared = mmap(NULL, CHECK_RUNNING_BYTES, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    check_running = shared == MAP_FAILED ? NULL : shared;
    pid_t pid = fork();
    if (pid == 0)
        _exit(check_abi_child(config, path, a));
    if (pid < 0) {
        fprintf(stderr, "plinth: check-module: fork: %s\n", strerror(errno));
        if (check_running != NULL)
            munmap(check_running, CHECK_RUNNING_BYTES);
        check_running = NULL;
        return 1;
    }
    char why[256];
    int rc = check_wait(pid, why, sizeof why);
    if (rc >= 0 && rc != CHECK_CHILD_PASS && rc != CHECK_CHILD_FAIL &&
        rc != CHECK_CHILD_ERROR && rc != CHECK_EXIT_NO_DEVICE) {
        /* exit() in the module, or a sanitizer's report (above) */
        if (check_running != NULL && check_running[0] != '\0')
            snprintf(why, sizeof why, "ended the process (exit status %d) in the check '%s'",
                     rc, check_running);
        else
            snprintf(why, sizeof why, "ended the process (exit status %d)", rc);
        rc = -1;
    }
    if (rc < 0) {
        printf("FAIL %-24s the module %s\n", "abi", why);
        rc = CHECK_CHILD_FAIL;
    }
    if (check_running != NULL)
        munmap(check_running, CHECK_RUNNING_BYTES);
    check_running = NULL;
    if (rc == CHECK_CHILD_ERROR)
        return 1;
    int tests = 0;
    if (rc != CHECK_EXIT_NO_DEVICE && a->node_tests)
        tests = check_node_tests(config, path, a);
    if (rc == CHECK_CHILD_FAIL || tests != 0) {
        printf("check-module: FAILED\n");
        return 1;
    }
    if (rc == CHECK_EXIT_NO_DEVICE) {
        printf("check-module: passed what runs without a device; no device here\n");
        return CHECK_EXIT_NO_DEVICE;
    }
    printf("check-module: passed\n");
    return 0;
}
