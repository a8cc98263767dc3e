/* probe.c — runs a module file's code for the first time in a forked child
 * (probe.h). The child does exactly what the loader would do in the
 * process (pl_loader_open: dlopen, entry point, init, configure, device
 * queries), then shutdown and dlclose, and tells the parent over a pipe
 * which stage it is entering. The parent waits up to probe_timeout_ms for
 * it to finish; a signal, an exit or the time running out in some stage
 * becomes the module's reason for rejection, and the module is never
 * opened in the parent. Verdicts are remembered per version of the file
 * and its configure keys: in memory for the process and, when there is a
 * cache folder, in <cache_dir>/<module>-<key>.probe (hangs excepted), so a
 * normal start pays for a probe once per file version. */
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <plinth/graph_hash.h>

#include "alloc.h"
#include "cache.h"
#include "status.h"

/* The write end of the pipe to the parent, in a probe child only. A child
 * is single-threaded and owns its copy of this variable. */
static int pl_probe_report_fd = -1;

void pl_probe_stage(pl_probe_stage_id stage)
{
    if (pl_probe_report_fd < 0)
        return;
    char c = (char)stage;
    while (write(pl_probe_report_fd, &c, 1) < 0 && errno == EINTR) {
    }
}

/* ---- remembered verdicts ------------------------------------------------ */

/* One verdict the process has seen: "" when the module came through. The
 * list only grows, by one entry per module file version, and lives as
 * long as the process (plain malloc: no runtime owns it). */
typedef struct pl_probe_memo {
    char key[33];
    char *verdict;
    struct pl_probe_memo *next;
} pl_probe_memo;

static pthread_mutex_t pl_probe_mu = PTHREAD_MUTEX_INITIALIZER;
static pl_probe_memo *pl_probe_memos;

/* Copies the remembered verdict of KEY into a new string (NULL: none). */
static char *pl_probe_recall(const char *key)
{
    char *found = NULL;
    pthread_mutex_lock(&pl_probe_mu);
    for (pl_probe_memo *p = pl_probe_memos; p != NULL; p = p->next)
        if (strcmp(p->key, key) == 0) {
            found = strdup(p->verdict);
            break;
        }
    pthread_mutex_unlock(&pl_probe_mu);
    return found;
}

static void pl_probe_remember(const char *key, const char *verdict)
{
    pl_probe_memo *p = malloc(sizeof *p);
    char *v = strdup(verdict);
    if (p == NULL || v == NULL) {
        free(p);
        free(v);
        return;
    }
    snprintf(p->key, sizeof p->key, "%s", key);
    p->verdict = v;
    pthread_mutex_lock(&pl_probe_mu);
    p->next = pl_probe_memos;
    pl_probe_memos = p;
    pthread_mutex_unlock(&pl_probe_mu);
}

/* The key of this version of the file and of what the probe gives it:
 * where it is, which inode, its size, mtime and contents, the core's ABI
 * and the configure keys of its section. */
static pl_status *pl_probe_key(const pl_module *m, const char *real, char out[33])
{
    int fd = open(real, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return pl_status_create(PL_CODE_IO_ERROR, "%s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return pl_status_create(PL_CODE_IO_ERROR, "%s", strerror(err));
    }
    uint64_t content = 0x706c696e74685f70ull;
    if (st.st_size > 0) {
        void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            int err = errno;
            close(fd);
            return pl_status_create(PL_CODE_IO_ERROR, "cannot map it: %s", strerror(err));
        }
        pl_hash_bytes(&content, map, (size_t)st.st_size);
        munmap(map, (size_t)st.st_size);
    }
    close(fd);
    uint64_t h[2] = {0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full};
    for (int k = 0; k < 2; k++) {
        pl_hash_str(&h[k], real);
        pl_hash_u64(&h[k], (uint64_t)st.st_dev);
        pl_hash_u64(&h[k], (uint64_t)st.st_ino);
        pl_hash_u64(&h[k], (uint64_t)st.st_size);
        pl_hash_u64(&h[k], (uint64_t)st.st_mtim.tv_sec);
        pl_hash_u64(&h[k], (uint64_t)st.st_mtim.tv_nsec);
        pl_hash_u64(&h[k], content);
        pl_hash_u64(&h[k], ((uint64_t)PL_ABI_MAJOR << 32) | PL_ABI_MINOR);
        const pl_config_section *s = m->host.section;
        for (size_t i = 0; s != NULL && i < s->n_entries; i++) {
            pl_hash_str(&h[k], s->entries[i].key);
            pl_hash_str(&h[k], s->entries[i].value);
        }
    }
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)h[0],
             (unsigned long long)h[1]);
    return NULL;
}

/* ---- the child ----------------------------------------------------------- */

static void pl_probe_quiet(void *user, int level, const char *line)
{
    (void)user;
    (void)level;
    (void)line;
}

/* Gives SIG its default action. AddressSanitizer's sigaction() keeps its
 * own fault handlers (which report and exit 1, hiding the signal), so on
 * Linux the kernel is asked directly. */
static void pl_probe_default_action(int sig)
{
#if defined(__linux__) && defined(SYS_rt_sigaction) && \
    (defined(__x86_64__) || defined(__aarch64__))
    struct {
        void *handler;
        unsigned long flags;
        void *restorer;
        uint64_t mask;
    } k = {NULL /* SIG_DFL */, 0, NULL, 0};
    if (syscall(SYS_rt_sigaction, sig, &k, NULL, sizeof k.mask) == 0)
        return;
#endif
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
}

/* Registered last in the child, so it runs first when the module calls
 * exit(): the program's own exit handlers (which might remove its files or
 * flush its state) and every library's destructors belong to the parent,
 * and must not run in this copy of it. */
static void pl_probe_exit_now(int status, void *arg)
{
    (void)arg;
    _exit(status);
}

static _Noreturn void pl_probe_child(pl_runtime *rt, pl_module *m, const char *real,
                                     int report_fd)
{
    pl_probe_report_fd = report_fd;
#if defined(__linux__)
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    /* Whatever the module prints belongs to the real load, not this one. */
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
    }
    /* A fault must end the child with its signal, so the parent can name
     * it, whatever handlers the program (or a sanitizer) installed. */
    static const int deadly[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT,
                                 SIGTRAP, SIGSYS, SIGPIPE};
    for (size_t i = 0; i < sizeof deadly / sizeof deadly[0]; i++)
        pl_probe_default_action(deadly[i]);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    on_exit(pl_probe_exit_now, NULL);
    /* The pool's threads do not exist here: parallel work runs inline. */
    rt->pool = NULL;
    rt->logger.sink = pl_probe_quiet;
    pl_loader_open(rt, m, real);
    pl_probe_stage(PL_PROBE_STAGE_SHUTDOWN);
    pl_module_unload(m);
    pl_probe_stage(PL_PROBE_STAGE_DONE);
    _exit(0);
}

/* ---- the parent ---------------------------------------------------------- */

static long long pl_probe_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *pl_probe_stage_text(int stage)
{
    switch (stage) {
    case PL_PROBE_STAGE_LOAD: return "its constructors";
    case PL_PROBE_STAGE_ENTRY: return "its entry point";
    case PL_PROBE_STAGE_INIT: return "init";
    case PL_PROBE_STAGE_CONFIGURE: return "configure";
    case PL_PROBE_STAGE_DEVICES: return "its device queries";
    case PL_PROBE_STAGE_SHUTDOWN: return "shutdown";
    default: return "the probe";
    }
}

static void pl_probe_signal_name(int sig, char *buf, size_t size)
{
    static const struct { int sig; const char *name; } names[] = {
        {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"}, {SIGFPE, "SIGFPE"},
        {SIGILL, "SIGILL"},   {SIGABRT, "SIGABRT"}, {SIGTRAP, "SIGTRAP"},
        {SIGSYS, "SIGSYS"},   {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"},
        {SIGPIPE, "SIGPIPE"}, {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"},
        {SIGHUP, "SIGHUP"},   {SIGALRM, "SIGALRM"}, {SIGUSR1, "SIGUSR1"},
        {SIGUSR2, "SIGUSR2"}, {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].sig == sig) {
            snprintf(buf, size, "%s", names[i].name);
            return;
        }
    snprintf(buf, size, "signal %d", sig);
}

/* Runs the child and turns what happened into a verdict: "" when it came
 * through, else the reason. Fails (no verdict) only when no child could be
 * run or watched. */
static pl_status *pl_probe_run(pl_runtime *rt, pl_module *m, const char *real,
                               char *verdict, size_t size)
{
    verdict[0] = '\0';
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return pl_status_create(PL_CODE_IO_ERROR, "cannot make a pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        int err = errno;
        close(fds[0]);
        close(fds[1]);
        return pl_status_create(PL_CODE_IO_ERROR, "cannot fork: %s", strerror(err));
    }
    if (pid == 0) {
        close(fds[0]);
        pl_probe_child(rt, m, real, fds[1]);
    }
    close(fds[1]);
    const int timeout = rt->config->probe_timeout_ms;
    const long long deadline = pl_probe_now_ms() + timeout;
    int stage = 0;
    bool done = false, timed_out = false, reaped = false;
    int status = 0;
    /* The stages, until the child closes its end (it exited)... */
    for (bool eof = false; !eof;) {
        long long left = deadline - pl_probe_now_ms();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno != EINTR)
            break;
        if (r <= 0)
            continue;
        char buf[64];
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            eof = true;
            break;
        }
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] == PL_PROBE_STAGE_DONE)
                done = true;
            else
                stage = (unsigned char)buf[i];
        }
    }
    close(fds[0]);
    /* ... then its exit status, within the same time. A child that closed
     * the pipe and went on is still waited for only that long. */
    while (!timed_out) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) {
            reaped = true;
            break;
        }
        if (w < 0 && errno != EINTR)
            break; /* reaped by someone else (a SIGCHLD handler) */
        if (pl_probe_now_ms() >= deadline) {
            timed_out = true;
            break;
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    if (!reaped) {
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    if (done)
        return NULL;
    const char *where = pl_probe_stage_text(stage);
    if (timed_out) {
        snprintf(verdict, size, "%s did not return within %d ms", where, timeout);
    } else if (reaped && WIFSIGNALED(status)) {
        char sig[32];
        pl_probe_signal_name(WTERMSIG(status), sig, sizeof sig);
        snprintf(verdict, size, "crashed in %s (%s)", where, sig);
    } else if (reaped && WIFEXITED(status)) {
        snprintf(verdict, size, "exited with status %d in %s", WEXITSTATUS(status), where);
    } else {
        (void)m;
        return pl_status_create(PL_CODE_INTERNAL,
                                "the probe's child was reaped elsewhere (a SIGCHLD "
                                "handler?) before it finished");
    }
    return NULL;
}

/* No child could be run or watched (no fork in this sandbox, say): not a
 * verdict on the module, which loads as it would without a probe. */
static pl_status *pl_probe_skipped(pl_runtime *rt, const pl_module *m, pl_status *why)
{
    pl_runtime_add_diagnostic(rt, PL_LOG_WARN,
                              "module %s (%s): not probed: %s; loading it directly",
                              m->name, m->path, pl_status_message(why));
    pl_status_free(why);
    return NULL;
}

pl_status *pl_probe_module(pl_runtime *rt, pl_module *m, const char *real)
{
    char key[33];
    pl_status *st = pl_probe_key(m, real, key);
    if (st != NULL) {
        return pl_probe_skipped(rt, m, st);
    }
    char *known = pl_probe_recall(key);
    if (known != NULL) {
        pl_status *r = known[0] ? pl_status_create(PL_CODE_DEVICE_ERROR, "%s", known) : NULL;
        free(known);
        return r;
    }
    /* The cache folder's verdict, if it may be trusted. */
    const char *dir = rt->config->cache_dir;
    bool use_dir = dir[0] != '\0';
    char file[128];
    snprintf(file, sizeof file, "%s-%s.probe", m->note.name, key);
    if (use_dir) {
        st = pl_cache_check_dir(dir);
        use_dir = st == NULL;
        pl_status_free(st);
    }
    char verdict[512];
    pl_status *read_st = NULL;
    if (use_dir)
        read_st = pl_cache_read_small(dir, file, verdict, sizeof verdict);
    if (use_dir && read_st == NULL) {
        verdict[strcspn(verdict, "\n")] = '\0';
        if (strcmp(verdict, "ok") == 0) {
            pl_probe_remember(key, "");
            return NULL;
        }
        const char *prefix = "rejected: ";
        if (strncmp(verdict, prefix, strlen(prefix)) == 0) {
            char reason[1024];
            snprintf(reason, sizeof reason, "%s (remembered in %s/%s; delete it to probe again)",
                     verdict + strlen(prefix), dir, file);
            pl_probe_remember(key, reason);
            return pl_status_create(PL_CODE_DEVICE_ERROR, "%s", reason);
        }
        /* Anything else is not a verdict: probe again, and replace it. */
    }
    pl_status_free(read_st);
    st = pl_probe_run(rt, m, real, verdict, sizeof verdict);
    if (st != NULL) {
        return pl_probe_skipped(rt, m, st);
    }
    pl_probe_remember(key, verdict);
    /* A hang is kept for this process only: it may have been the machine
     * (a busy device, a loaded CI host), not the module, and a file that
     * says so would keep a sound module out for good. A crash is the
     * module's own. */
    if (use_dir && strstr(verdict, "did not return within") == NULL) {
        char line[600];
        int n = verdict[0] ? snprintf(line, sizeof line, "rejected: %s\n", verdict)
                           : snprintf(line, sizeof line, "ok\n");
        pl_status_free(pl_cache_write_named(dir, file, line, (size_t)n));
    }
    return verdict[0] ? pl_status_create(PL_CODE_DEVICE_ERROR, "%s", verdict) : NULL;
}
