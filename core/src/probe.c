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
 * where it is, which inode, its size, mtime and (CONTENT) contents, the
 * core's ABI and the configure keys of its section. The contents are read
 * only for a verdict kept in the cache folder, which outlives the process
 * and may meet a file rewritten in place: hashing the shipped modules
 * (5.5 MB) was a tenth of a cold runtime's creation. */
static pl_status *pl_probe_key(const pl_module *m, const char *real, bool content_too,
                               char out[33])
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
    if (content_too && st.st_size > 0) {
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
    case PL_PROBE_STAGE_EXTENSIONS: return "its extension list";
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

/* One probe in flight: its child, the pipe it reports its stages on, and
 * what has been seen of it. */
typedef struct pl_probe_proc {
    pid_t pid;
    int fd;              /* read end of the stage pipe; -1 once at EOF */
    long long deadline;  /* monotonic ms */
    int stage;
    bool done, timed_out, reaped;
    int status;
} pl_probe_proc;

/* Forks the child of module M. Fails (no child) only when no pipe or
 * process could be made. */
static pl_status *pl_probe_start(pl_runtime *rt, pl_module *m, const char *real,
                                 pl_probe_proc *c)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
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
    /* Read without blocking: the watch reads only what poll announced, and
     * once more at the deadline. */
    int flags = fcntl(fds[0], F_GETFL);
    if (flags >= 0)
        fcntl(fds[0], F_SETFL, flags | O_NONBLOCK);
    c->pid = pid;
    c->fd = fds[0];
    c->deadline = pl_probe_now_ms() + rt->config->probe_timeout_ms;
    return NULL;
}

/* Reads what child C reported; closes its pipe at EOF. */
static void pl_probe_read(pl_probe_proc *c)
{
    char buf[64];
    ssize_t n = read(c->fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        close(c->fd);
        c->fd = -1;
        return;
    }
    for (ssize_t i = 0; i < n; i++) {
        if (buf[i] == PL_PROBE_STAGE_DONE)
            c->done = true;
        else
            c->stage = (unsigned char)buf[i];
    }
}

/* Follows the N children at once until each has closed its pipe (exited)
 * or run out of time; every child has its own deadline. PS has room for N
 * entries. */
static void pl_probe_watch(pl_probe_proc *const *cs, size_t n, struct pollfd *ps)
{
    for (;;) {
        long long now = pl_probe_now_ms();
        long long wait = -1;
        size_t np = 0;
        for (size_t i = 0; i < n; i++) {
            pl_probe_proc *c = cs[i];
            if (c->fd < 0)
                continue;
            if (now >= c->deadline) {
                pl_probe_read(c); /* what it said last, if anything */
                if (c->fd >= 0) {
                    c->timed_out = true;
                    close(c->fd);
                    c->fd = -1;
                }
                continue;
            }
            long long left = c->deadline - now;
            if (wait < 0 || left < wait)
                wait = left;
            ps[np++] = (struct pollfd){.fd = c->fd, .events = POLLIN};
        }
        if (np == 0)
            return;
        int r = poll(ps, (nfds_t)np, (int)wait);
        for (size_t i = 0, k = 0; r > 0 && i < n; i++) {
            if (cs[i]->fd < 0)
                continue;
            if (ps[k++].revents != 0)
                pl_probe_read(cs[i]);
        }
        if (r < 0 && errno != EINTR) {
            /* Cannot watch: try again until the deadlines pass. */
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
    }
}

/* Collects child C's exit status within its deadline (a child that closed
 * the pipe and went on is waited for only that long), kills it if it is
 * still there, and turns what happened into a verdict: "" when it came
 * through, else the reason. Fails (no verdict) only when the child was
 * reaped by someone else. */
static pl_status *pl_probe_finish(pl_runtime *rt, pl_probe_proc *c, char *verdict,
                                  size_t size)
{
    verdict[0] = '\0';
    while (!c->timed_out) {
        pid_t w = waitpid(c->pid, &c->status, WNOHANG);
        if (w == c->pid) {
            c->reaped = true;
            break;
        }
        if (w < 0 && errno != EINTR)
            break; /* reaped by someone else (a SIGCHLD handler) */
        if (pl_probe_now_ms() >= c->deadline) {
            c->timed_out = true;
            break;
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    if (!c->reaped) {
        kill(c->pid, SIGKILL);
        while (waitpid(c->pid, &c->status, 0) < 0 && errno == EINTR) {
        }
    }
    if (c->done)
        return NULL;
    const char *where = pl_probe_stage_text(c->stage);
    if (c->timed_out) {
        snprintf(verdict, size, "%s did not return within %d ms", where,
                 rt->config->probe_timeout_ms);
    } else if (c->reaped && WIFSIGNALED(c->status)) {
        char sig[32];
        pl_probe_signal_name(WTERMSIG(c->status), sig, sizeof sig);
        snprintf(verdict, size, "crashed in %s (%s)", where, sig);
    } else if (c->reaped && WIFEXITED(c->status)) {
        snprintf(verdict, size, "exited with status %d in %s", WEXITSTATUS(c->status),
                 where);
    } else {
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

/* One module of a batch: its key, where its verdict is kept, its child. */
typedef struct pl_probe_job {
    char key[33];
    char file[128];
    bool use_dir;
    bool started;
    pl_probe_proc child;
} pl_probe_job;

/* Looks for a verdict already known for module M's file version: in this
 * process, then in the cache folder. True when one was found (*OUT is the
 * rejection, or NULL); false when the module must be probed. */
static bool pl_probe_known(pl_runtime *rt, pl_module *m, const char *real,
                           pl_probe_job *j, pl_status **out)
{
    *out = NULL;
    /* The cache folder, if it may be trusted. */
    const char *dir = rt->config->cache_dir;
    j->use_dir = dir[0] != '\0';
    if (j->use_dir) {
        pl_status *dst = pl_cache_check_dir(dir);
        j->use_dir = dst == NULL;
        pl_status_free(dst);
    }
    pl_status *st = pl_probe_key(m, real, j->use_dir, j->key);
    if (st != NULL) {
        *out = pl_probe_skipped(rt, m, st);
        return true;
    }
    char *known = pl_probe_recall(j->key);
    if (known != NULL) {
        if (known[0])
            *out = pl_status_create(PL_CODE_DEVICE_ERROR, "%s", known);
        free(known);
        return true;
    }
    snprintf(j->file, sizeof j->file, "%s-%s.probe", m->note.name, j->key);
    if (!j->use_dir)
        return false;
    char verdict[512];
    pl_status *read_st = pl_cache_read_small(dir, j->file, verdict, sizeof verdict);
    if (read_st != NULL) {
        pl_status_free(read_st);
        return false;
    }
    verdict[strcspn(verdict, "\n")] = '\0';
    if (strcmp(verdict, "ok") == 0) {
        pl_probe_remember(j->key, "");
        return true;
    }
    const char *prefix = "rejected: ";
    if (strncmp(verdict, prefix, strlen(prefix)) == 0) {
        char reason[1024];
        snprintf(reason, sizeof reason, "%s (remembered in %s/%s; delete it to probe again)",
                 verdict + strlen(prefix), dir, j->file);
        pl_probe_remember(j->key, reason);
        *out = pl_status_create(PL_CODE_DEVICE_ERROR, "%s", reason);
        return true;
    }
    /* Anything else is not a verdict: probe again, and replace it. */
    return false;
}

/* Remembers the verdict a child gave and returns it as the module's
 * rejection (NULL: it came through). */
static pl_status *pl_probe_keep(pl_runtime *rt, const pl_probe_job *j, const char *verdict)
{
    pl_probe_remember(j->key, verdict);
    /* A hang is kept for this process only: it may have been the machine
     * (a busy device, a loaded CI host), not the module, and a file that
     * says so would keep a sound module out for good. A crash is the
     * module's own. */
    if (j->use_dir && strstr(verdict, "did not return within") == NULL) {
        char line[600];
        int n = verdict[0] ? snprintf(line, sizeof line, "rejected: %s\n", verdict)
                           : snprintf(line, sizeof line, "ok\n");
        pl_status_free(pl_cache_write_named(rt->config->cache_dir, j->file, line, (size_t)n));
    }
    return verdict[0] ? pl_status_create(PL_CODE_DEVICE_ERROR, "%s", verdict) : NULL;
}

void pl_probe_modules(pl_runtime *rt, pl_module *const *mods, char *const *reals, size_t n,
                      pl_status **verdicts)
{
    for (size_t i = 0; i < n; i++)
        verdicts[i] = NULL;
    if (n == 0)
        return;
    pl_probe_job one;
    pl_probe_proc *one_child;
    struct pollfd one_poll;
    pl_probe_job *jobs = &one;
    pl_probe_proc **children = &one_child;
    struct pollfd *polls = &one_poll;
    if (n > 1) {
        jobs = pl_alloc_calloc(rt->alloc, n, sizeof *jobs);
        children = pl_alloc_calloc(rt->alloc, n, sizeof *children);
        polls = pl_alloc_calloc(rt->alloc, n, sizeof *polls);
        if (jobs == NULL || children == NULL || polls == NULL) {
            pl_free(jobs);
            pl_free(children);
            pl_free(polls);
            /* No room to run them together: one at a time. */
            for (size_t i = 0; i < n; i++)
                pl_probe_modules(rt, &mods[i], &reals[i], 1, &verdicts[i]);
            return;
        }
    }
    memset(jobs, 0, n * sizeof *jobs);
    /* Every child starts before any is waited for, so a start pays for
     * the slowest probe, not for all of them. */
    size_t nc = 0;
    for (size_t i = 0; i < n; i++) {
        if (pl_probe_known(rt, mods[i], reals[i], &jobs[i], &verdicts[i]))
            continue;
        pl_status *st = pl_probe_start(rt, mods[i], reals[i], &jobs[i].child);
        if (st != NULL) {
            verdicts[i] = pl_probe_skipped(rt, mods[i], st);
            continue;
        }
        jobs[i].started = true;
        children[nc++] = &jobs[i].child;
    }
    pl_probe_watch(children, nc, polls);
    for (size_t i = 0; i < n; i++) {
        if (!jobs[i].started)
            continue;
        char verdict[512];
        pl_status *st = pl_probe_finish(rt, &jobs[i].child, verdict, sizeof verdict);
        verdicts[i] = st != NULL ? pl_probe_skipped(rt, mods[i], st)
                                 : pl_probe_keep(rt, &jobs[i], verdict);
    }
    if (n > 1) {
        pl_free(jobs);
        pl_free(children);
        pl_free(polls);
    }
}

pl_status *pl_probe_module(pl_runtime *rt, pl_module *m, const char *real)
{
    char *r = (char *)real;
    pl_status *verdict = NULL;
    pl_probe_modules(rt, &m, &r, 1, &verdict);
    return verdict;
}
