/* harness.h — the little the test programs share: case dispatch with a
 * watchdog, checks that print the runtime's state when they fail, temporary
 * directories that are removed at exit, file helpers, and a runtime created
 * with its log captured.
 *
 * Everything here is for single-threaded test programs, except the log sink,
 * which the core may call from any thread. */
#ifndef PLINTH_TESTS_HARNESS_H
#define PLINTH_TESTS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <plinth/plinth.h>

/* Exit status that CTest reads as "skipped" (SKIP_RETURN_CODE 77). */
#define TH_SKIP 77

/* One named case of a test program. */
typedef struct th_case {
    const char *name;
    void (*run)(void);
} th_case;

/* Runs the case named argv[1] with a 60-second watchdog, keeping argv[2..]
 * for th_arg. Returns the process exit status: 0 pass, 1 fail, 2 usage. */
int th_main(int argc, char **argv, const th_case *cases, size_t n_cases,
            int n_args, const char *args_usage);

/* The I-th argument after the case name (0-based). */
const char *th_arg(int i);

/* Fails the running case: prints FILE:LINE, the message and, when a runtime
 * is registered with th_watch, its diagnostics, modules and captured log;
 * then exits 1 (temporary directories are removed at exit). */
void th_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

/* Ends the running case as skipped, with a reason on stderr. */
void th_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#define TH_CHECK(cond, ...)                            \
    do {                                               \
        if (!(cond))                                   \
            th_fail(__FILE__, __LINE__, __VA_ARGS__);  \
    } while (0)

/* Checks that string S contains SUB (case-sensitive). */
#define TH_CHECK_CONTAINS(s, sub)                                             \
    do {                                                                      \
        const char *th_s_ = (s);                                              \
        const char *th_sub_ = (sub);                                          \
        if (th_s_ == NULL || strstr(th_s_, th_sub_) == NULL)                  \
            th_fail(__FILE__, __LINE__, "expected \"%s\" to contain \"%s\"",  \
                    th_s_ ? th_s_ : "(null)", th_sub_);                       \
    } while (0)

/* Checks that a call returned success, printing the status otherwise. */
#define TH_CHECK_OK(expr)                                                     \
    do {                                                                      \
        pl_status *th_st_ = (expr);                                           \
        if (th_st_ != NULL)                                                   \
            th_fail(__FILE__, __LINE__, "%s failed: %s: %s", #expr,           \
                    pl_code_name(pl_status_code(th_st_)),                     \
                    pl_status_message(th_st_));                               \
    } while (0)

/* ---- files ------------------------------------------------------------ */

/* Makes a fresh directory under $TMPDIR (or /tmp) with mode 0700 and
 * registers it for removal at exit. Returns a string owned by the harness. */
const char *th_tempdir(void);

/* Joins A and B with a '/'; the string lives until exit. */
const char *th_path(const char *a, const char *b);

/* mkdir with exactly MODE (the umask is overridden). */
void th_mkdir(const char *path, mode_t mode);
/* Writes TEXT to PATH (created or truncated) with exactly MODE. */
void th_write_file(const char *path, const char *text, mode_t mode);
/* Copies SRC to DST (created, must not exist) with exactly MODE. */
void th_copy_file(const char *src, const char *dst, mode_t mode);
/* Sets the mode of PATH exactly. */
void th_chmod(const char *path, mode_t mode);
/* True when PATH exists (lstat). */
bool th_exists(const char *path);

/* ---- runtimes --------------------------------------------------------- */

/* Options for a test runtime: CONFIG_PATH, ignore_environment, and the
 * harness's capturing log sink. */
pl_runtime_options th_options(const char *config_path);

/* Creates a runtime from OPTS and fails the case unless that succeeds. The
 * runtime is registered with th_watch. */
pl_runtime *th_runtime_create(const pl_runtime_options *opts);

/* Registers RT so that a failing check prints its state (NULL: none). */
void th_watch(const pl_runtime *rt);

/* Fills INFO for module I, failing the case on error. */
void th_module_info(const pl_runtime *rt, size_t i, pl_module_info *info);

/* The index of the module whose path's last component is FILE_NAME, or -1. */
long th_find_by_file(const pl_runtime *rt, const char *file_name);
/* The index of the first module named NAME, whatever its status, or -1. */
long th_find_by_name(const pl_runtime *rt, const char *name);

/* The index of the first diagnostic that contains every one of the
 * NULL-terminated substrings, or -1. */
long th_find_diagnostic(const pl_runtime *rt, ...);
#define TH_FIND_DIAG(rt, ...) \
    th_find_diagnostic((rt), __VA_ARGS__, (const char *)NULL)

/* Fails the case unless some diagnostic contains all the substrings. */
#define TH_CHECK_DIAG(rt, ...)                                               \
    TH_CHECK(TH_FIND_DIAG(rt, __VA_ARGS__) >= 0,                             \
             "no diagnostic contains all of: %s", #__VA_ARGS__)

/* The value of configure output KEY of module I, or NULL. */
const char *th_module_output(const pl_runtime *rt, size_t i, const char *key);

/* Number of log lines captured since the last th_options call, and one. */
size_t th_log_count(void);
const char *th_log_line(size_t i);

/* Prints RT's diagnostics, modules and the captured log to stderr. */
void th_dump(const pl_runtime *rt);

#endif /* PLINTH_TESTS_HARNESS_H */
