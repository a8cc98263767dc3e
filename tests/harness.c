/* harness.c — the shared scaffolding of the test programs (see harness.h):
 * dispatch to one named case under a watchdog, failure reports that show
 * what the runtime saw, temporary directories removed at exit, and a log
 * sink that keeps every line for the checks. */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE

#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TH_MAX_TEMPDIRS 256
#define TH_MAX_STRINGS 256

static char **th_args;
static int th_n_args;
static const char *th_case_name = "?";
static const pl_runtime *th_watched;

static char *th_tempdirs[TH_MAX_TEMPDIRS];
static size_t th_n_tempdirs;
static char *th_strings[TH_MAX_STRINGS];
static size_t th_n_strings;

static pthread_mutex_t th_log_lock = PTHREAD_MUTEX_INITIALIZER;
static char **th_log_lines;
static size_t th_log_n, th_log_cap;

/* ---- dispatch and failure --------------------------------------------- */

static int th_remove_entry(const char *path, const struct stat *st, int flag,
                           struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    if (remove(path) != 0 && errno != ENOENT)
        fprintf(stderr, "warning: cannot remove %s: %s\n", path,
                strerror(errno));
    return 0;
}

static void th_cleanup(void)
{
    for (size_t i = 0; i < th_n_tempdirs; i++) {
        /* A case may leave a directory without search or write permission
         * for its owner; give it back first. */
        chmod(th_tempdirs[i], 0700);
        nftw(th_tempdirs[i], th_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(th_tempdirs[i]);
    }
    th_n_tempdirs = 0;
    for (size_t i = 0; i < th_n_strings; i++)
        free(th_strings[i]);
    th_n_strings = 0;
    pthread_mutex_lock(&th_log_lock);
    for (size_t i = 0; i < th_log_n; i++)
        free(th_log_lines[i]);
    free(th_log_lines);
    th_log_lines = NULL;
    th_log_n = th_log_cap = 0;
    pthread_mutex_unlock(&th_log_lock);
}

int th_main(int argc, char **argv, const th_case *cases, size_t n_cases,
            int n_args, const char *args_usage)
{
    if (argc < 2 + n_args) {
        fprintf(stderr, "usage: %s CASE %s\ncases:", argv[0], args_usage);
        for (size_t i = 0; i < n_cases; i++)
            fprintf(stderr, " %s", cases[i].name);
        fputc('\n', stderr);
        return 2;
    }
    for (size_t i = 0; i < n_cases; i++) {
        if (strcmp(cases[i].name, argv[1]) != 0)
            continue;
        th_case_name = cases[i].name;
        th_args = argv + 2;
        th_n_args = argc - 2;
        atexit(th_cleanup);
        alarm(60);
        cases[i].run();
        th_watch(NULL);
        fprintf(stderr, "%s: passed\n", th_case_name);
        return 0;
    }
    fprintf(stderr, "%s: no case named %s\n", argv[0], argv[1]);
    return 2;
}

const char *th_arg(int i)
{
    if (i < 0 || i >= th_n_args) {
        fprintf(stderr, "%s: missing argument %d\n", th_case_name, i);
        exit(2);
    }
    return th_args[i];
}

void th_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: FAILED at %s:%d: ", th_case_name, file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (th_watched != NULL)
        th_dump(th_watched);
    exit(1);
}

void th_skip(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: skipped: ", th_case_name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(TH_SKIP);
}

/* ---- files ------------------------------------------------------------ */

static const char *th_keep(char *s)
{
    if (s == NULL)
        th_fail(__FILE__, __LINE__, "out of memory");
    if (th_n_strings == TH_MAX_STRINGS)
        th_fail(__FILE__, __LINE__, "harness: too many strings");
    th_strings[th_n_strings++] = s;
    return s;
}

const char *th_tempdir(void)
{
    const char *base = getenv("TMPDIR");
    if (base == NULL || base[0] == '\0')
        base = "/tmp";
    size_t n = strlen(base) + sizeof "/plinth-test-XXXXXX";
    char *path = malloc(n);
    if (path == NULL)
        th_fail(__FILE__, __LINE__, "out of memory");
    snprintf(path, n, "%s/plinth-test-XXXXXX", base);
    if (mkdtemp(path) == NULL)
        th_fail(__FILE__, __LINE__, "mkdtemp %s: %s", path, strerror(errno));
    if (th_n_tempdirs == TH_MAX_TEMPDIRS)
        th_fail(__FILE__, __LINE__, "harness: too many temporary directories");
    th_tempdirs[th_n_tempdirs++] = path;
    th_chmod(path, 0700);
    return path;
}

const char *th_path(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = malloc(n);
    if (s != NULL)
        snprintf(s, n, "%s/%s", a, b);
    return th_keep(s);
}

void th_chmod(const char *path, mode_t mode)
{
    if (chmod(path, mode) != 0)
        th_fail(__FILE__, __LINE__, "chmod %s: %s", path, strerror(errno));
}

void th_mkdir(const char *path, mode_t mode)
{
    if (mkdir(path, mode) != 0)
        th_fail(__FILE__, __LINE__, "mkdir %s: %s", path, strerror(errno));
    th_chmod(path, mode);
}

void th_write_file(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        th_fail(__FILE__, __LINE__, "open %s: %s", path, strerror(errno));
    size_t len = strlen(text), done = 0;
    while (done < len) {
        ssize_t n = write(fd, text + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            th_fail(__FILE__, __LINE__, "write %s: %s", path, strerror(errno));
        done += (size_t)n;
    }
    if (fchmod(fd, mode) != 0 || close(fd) != 0)
        th_fail(__FILE__, __LINE__, "finish %s: %s", path, strerror(errno));
}

void th_copy_file(const char *src, const char *dst, mode_t mode)
{
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        th_fail(__FILE__, __LINE__, "open %s: %s", src, strerror(errno));
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (out < 0)
        th_fail(__FILE__, __LINE__, "create %s: %s", dst, strerror(errno));
    char buf[65536];
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            th_fail(__FILE__, __LINE__, "read %s: %s", src, strerror(errno));
        if (n == 0)
            break;
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(out, buf + done, (size_t)(n - done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                th_fail(__FILE__, __LINE__, "write %s: %s", dst,
                        strerror(errno));
            done += w;
        }
    }
    close(in);
    if (fchmod(out, mode) != 0 || close(out) != 0)
        th_fail(__FILE__, __LINE__, "finish %s: %s", dst, strerror(errno));
}

bool th_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* ---- runtimes --------------------------------------------------------- */

static void th_log_sink(void *user, int level, const char *line)
{
    (void)user;
    size_t n = strlen(line) + 16;
    char *copy = malloc(n);
    if (copy == NULL)
        return;
    snprintf(copy, n, "[%d] %s", level, line);
    pthread_mutex_lock(&th_log_lock);
    if (th_log_n == th_log_cap) {
        size_t cap = th_log_cap ? th_log_cap * 2 : 64;
        char **lines = realloc(th_log_lines, cap * sizeof *lines);
        if (lines == NULL) {
            pthread_mutex_unlock(&th_log_lock);
            free(copy);
            return;
        }
        th_log_lines = lines;
        th_log_cap = cap;
    }
    th_log_lines[th_log_n++] = copy;
    pthread_mutex_unlock(&th_log_lock);
}

pl_runtime_options th_options(const char *config_path)
{
    pthread_mutex_lock(&th_log_lock);
    for (size_t i = 0; i < th_log_n; i++)
        free(th_log_lines[i]);
    th_log_n = 0;
    pthread_mutex_unlock(&th_log_lock);
    pl_runtime_options o = {.struct_size = sizeof o};
    o.config_path = config_path;
    o.ignore_environment = true;
    o.log_sink = th_log_sink;
    return o;
}

pl_runtime *th_runtime_create(const pl_runtime_options *opts)
{
    pl_runtime *rt = (pl_runtime *)(uintptr_t)1; /* must be cleared */
    pl_status *st = pl_runtime_create(opts, &rt);
    if (st != NULL) {
        th_dump(NULL);
        th_fail(__FILE__, __LINE__, "pl_runtime_create(%s) failed: %s: %s",
                opts->config_path ? opts->config_path : "NULL",
                pl_code_name(pl_status_code(st)), pl_status_message(st));
    }
    TH_CHECK(rt != NULL, "pl_runtime_create succeeded with a NULL runtime");
    th_watch(rt);
    return rt;
}

void th_watch(const pl_runtime *rt)
{
    th_watched = rt;
}

void th_module_info(const pl_runtime *rt, size_t i, pl_module_info *info)
{
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
    pl_status *st = pl_runtime_module_info(rt, i, info);
    if (st != NULL)
        th_fail(__FILE__, __LINE__, "pl_runtime_module_info(%zu): %s", i,
                pl_status_message(st));
}

long th_find_by_file(const pl_runtime *rt, const char *file_name)
{
    size_t n = pl_runtime_module_count(rt);
    for (size_t i = 0; i < n; i++) {
        pl_module_info info;
        th_module_info(rt, i, &info);
        if (info.path == NULL)
            continue;
        const char *slash = strrchr(info.path, '/');
        const char *base = slash ? slash + 1 : info.path;
        if (strcmp(base, file_name) == 0)
            return (long)i;
    }
    return -1;
}

long th_find_by_name(const pl_runtime *rt, const char *name)
{
    size_t n = pl_runtime_module_count(rt);
    for (size_t i = 0; i < n; i++) {
        pl_module_info info;
        th_module_info(rt, i, &info);
        if (info.name != NULL && strcmp(info.name, name) == 0)
            return (long)i;
    }
    return -1;
}

long th_find_diagnostic(const pl_runtime *rt, ...)
{
    size_t n = pl_runtime_diagnostic_count(rt);
    for (size_t i = 0; i < n; i++) {
        const char *line = pl_runtime_diagnostic(rt, i);
        if (line == NULL)
            continue;
        bool all = true;
        va_list ap;
        va_start(ap, rt);
        for (const char *sub; (sub = va_arg(ap, const char *)) != NULL;)
            if (strstr(line, sub) == NULL)
                all = false;
        va_end(ap);
        if (all)
            return (long)i;
    }
    return -1;
}

const char *th_module_output(const pl_runtime *rt, size_t i, const char *key)
{
    size_t n = pl_runtime_module_output_count(rt, i);
    for (size_t k = 0; k < n; k++) {
        const char *kk = NULL, *vv = NULL;
        pl_runtime_module_output(rt, i, k, &kk, &vv);
        if (kk != NULL && strcmp(kk, key) == 0)
            return vv;
    }
    return NULL;
}

size_t th_log_count(void)
{
    pthread_mutex_lock(&th_log_lock);
    size_t n = th_log_n;
    pthread_mutex_unlock(&th_log_lock);
    return n;
}

const char *th_log_line(size_t i)
{
    pthread_mutex_lock(&th_log_lock);
    const char *line = i < th_log_n ? th_log_lines[i] : NULL;
    pthread_mutex_unlock(&th_log_lock);
    return line;
}

static const char *th_or(const char *s)
{
    return s ? s : "(null)";
}

void th_dump(const pl_runtime *rt)
{
    if (rt != NULL) {
        size_t nd = pl_runtime_diagnostic_count(rt);
        fprintf(stderr, "-- %zu diagnostics\n", nd);
        for (size_t i = 0; i < nd; i++)
            fprintf(stderr, "   %s\n", th_or(pl_runtime_diagnostic(rt, i)));
        size_t nm = pl_runtime_module_count(rt);
        fprintf(stderr, "-- %zu modules\n", nm);
        for (size_t i = 0; i < nm; i++) {
            pl_module_info info;
            memset(&info, 0, sizeof info);
            info.struct_size = sizeof info;
            pl_status *st = pl_runtime_module_info(rt, i, &info);
            if (st != NULL) {
                fprintf(stderr, "   [%zu] info failed: %s\n", i,
                        pl_status_message(st));
                pl_status_free(st);
                continue;
            }
            fprintf(stderr,
                    "   [%zu] %s %s devices=%d abi=%u.%u path=%s reason=%s\n",
                    i, th_or(info.name), pl_module_status_name(info.status),
                    info.device_count, info.abi_major, info.abi_minor,
                    th_or(info.path), th_or(info.reason));
        }
    }
    size_t nl = th_log_count();
    fprintf(stderr, "-- %zu log lines\n", nl);
    for (size_t i = 0; i < nl; i++)
        fprintf(stderr, "   %s\n", th_or(th_log_line(i)));
}
