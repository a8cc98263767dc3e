/* filedata.c — constants copied out of the model file, dropped while only
 * modules that keep their own copy read them, and read again from the file
 * before anything else does (filedata.h). */
#include "filedata.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "status.h"

typedef struct pl_fd_entry {
    char *addr;      /* the core's copy (the graph owns the block) */
    size_t bytes;
    uint64_t offset; /* in the file */
    char *name;      /* the constant, for messages */
    int pins;        /* live sessions reading it in place */
    bool dropped;
} pl_fd_entry;

struct pl_filedata {
    pthread_mutex_t mu;
    int fd;
    char *path;
    struct stat st;      /* at the load: the file must still be this one */
    pl_fd_entry *e;      /* sorted by addr */
    size_t n, cap;
    int users;           /* creations in progress */
    atomic_size_t n_dropped;
    const void *owner;   /* set_compiling: the graph of the session being made */
    const bool *droppable;
};

pl_status *pl_filedata_create(const char *path, pl_filedata **out)
{
    *out = NULL;
    pl_filedata *f = pl_calloc(1, sizeof *f);
    char *p = pl_xstrdup(path);
    if (f == NULL || p == NULL) {
        pl_free(f);
        pl_free(p);
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory opening %s", path);
    }
    f->path = p;
    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0 || fstat(f->fd, &f->st) != 0) {
        int err = errno;
        if (f->fd >= 0)
            close(f->fd);
        pl_free(f->path);
        pl_free(f);
        return pl_status_create(err == ENOENT ? PL_CODE_NOT_FOUND : PL_CODE_IO_ERROR,
                                "%s: cannot open for its constants: %s", path, strerror(err));
    }
    pthread_mutex_init(&f->mu, NULL);
    *out = f;
    return NULL;
}

void pl_filedata_destroy(pl_filedata *f)
{
    if (f == NULL)
        return;
    for (size_t i = 0; i < f->n; i++)
        pl_free(f->e[i].name);
    pl_free(f->e);
    close(f->fd);
    pl_free(f->path);
    pthread_mutex_destroy(&f->mu);
    pl_free(f);
}

uint64_t pl_filedata_size(const pl_filedata *f)
{
    return (uint64_t)f->st.st_size;
}

/* The file is still the one read at the load: same size and time. */
static pl_status *pl_fd_check(pl_filedata *f, const char *name)
{
    struct stat now;
    if (fstat(f->fd, &now) != 0)
        return pl_status_create(PL_CODE_IO_ERROR, "%s: cannot read constant '%s' again: %s",
                                f->path, name, strerror(errno));
    if (now.st_size != f->st.st_size || now.st_mtim.tv_sec != f->st.st_mtim.tv_sec ||
        now.st_mtim.tv_nsec != f->st.st_mtim.tv_nsec)
        return pl_status_create(PL_CODE_FAILED_PRECONDITION,
                                "%s: the file changed since the model was loaded, so its "
                                "constant '%s' (which the core had dropped: the modules "
                                "hold their own copies) cannot be read again; load the "
                                "model again",
                                f->path, name);
    return NULL;
}

pl_status *pl_filedata_read(pl_filedata *f, uint64_t offset, size_t bytes, void *dst,
                            const char *name)
{
    uint64_t size = (uint64_t)f->st.st_size;
    if (offset > size || bytes > size - offset)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "%s: constant '%s': offset %llu + %zu bytes lies past the "
                                "end of the file (%llu bytes)",
                                f->path, name, (unsigned long long)offset, bytes,
                                (unsigned long long)size);
    char *p = dst;
    while (bytes > 0) {
        ssize_t got = pread(f->fd, p, bytes, (off_t)offset);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return pl_status_create(PL_CODE_IO_ERROR, "%s: reading constant '%s': %s", f->path,
                                    name, got < 0 ? strerror(errno) : "unexpected end of file");
        p += got;
        bytes -= (size_t)got;
        offset += (uint64_t)got;
    }
    return NULL;
}

pl_status *pl_filedata_track(pl_filedata *f, void *addr, size_t bytes, uint64_t offset,
                             const char *name)
{
    if (bytes < PL_FILEDATA_MIN_BYTES)
        return NULL;
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 64;
        pl_fd_entry *grown = pl_realloc(f->e, cap * sizeof *grown);
        if (grown == NULL)
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory loading %s",
                                    f->path);
        f->e = grown;
        f->cap = cap;
    }
    char *copy = pl_xstrdup(name);
    if (copy == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory loading %s", f->path);
    size_t at = f->n;
    while (at > 0 && f->e[at - 1].addr > (char *)addr)
        at--;
    memmove(&f->e[at + 1], &f->e[at], (f->n - at) * sizeof *f->e);
    f->e[at] = (pl_fd_entry){.addr = addr, .bytes = bytes, .offset = offset, .name = copy};
    f->n++;
    return NULL;
}

size_t pl_filedata_count(const pl_filedata *f)
{
    return f ? f->n : 0;
}

long pl_filedata_find(const pl_filedata *f, const void *addr)
{
    if (f == NULL)
        return -1;
    const char *a = addr;
    size_t lo = 0, hi = f->n;
    while (lo < hi) { /* the first entry starting after a */
        size_t mid = lo + (hi - lo) / 2;
        if (f->e[mid].addr <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    const pl_fd_entry *e = &f->e[lo - 1];
    return a < e->addr + e->bytes ? (long)(lo - 1) : -1;
}

/* Gives E's whole pages back to the system; the address stays (anonymous
 * private memory reads as zeros until it is written again). */
static void pl_fd_drop(pl_filedata *f, pl_fd_entry *e)
{
    if (e->dropped)
        return;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)e->addr + page - 1) / page * page;
    uintptr_t hi = ((uintptr_t)e->addr + e->bytes) / page * page;
    if (hi <= lo || madvise((void *)lo, hi - lo, MADV_DONTNEED) != 0)
        return;
    e->dropped = true;
    atomic_fetch_add(&f->n_dropped, 1);
}

static pl_status *pl_fd_restore(pl_filedata *f, pl_fd_entry *e)
{
    if (!e->dropped)
        return NULL;
    PL_RETURN_IF_ERROR(pl_fd_check(f, e->name));
    PL_RETURN_IF_ERROR(pl_filedata_read(f, e->offset, e->bytes, e->addr, e->name));
    e->dropped = false;
    atomic_fetch_sub(&f->n_dropped, 1);
    return NULL;
}

static pl_status *pl_fd_restore_all(pl_filedata *f)
{
    for (size_t i = 0; i < f->n && atomic_load(&f->n_dropped) > 0; i++)
        PL_RETURN_IF_ERROR(pl_fd_restore(f, &f->e[i]));
    return NULL;
}

pl_status *pl_filedata_enter(pl_filedata *f)
{
    if (f == NULL)
        return NULL;
    pthread_mutex_lock(&f->mu);
    f->users++;
    f->owner = NULL;
    f->droppable = NULL;
    pl_status *st = pl_fd_restore_all(f);
    pthread_mutex_unlock(&f->mu);
    return st;
}

pl_status *pl_filedata_reread(pl_filedata *f)
{
    if (f == NULL)
        return NULL;
    pthread_mutex_lock(&f->mu);
    pl_status *st = pl_fd_restore_all(f);
    pthread_mutex_unlock(&f->mu);
    return st;
}

pl_status *pl_filedata_leave(pl_filedata *f, const uint32_t *pinned, size_t n)
{
    if (f == NULL)
        return NULL;
    pl_status *st = NULL;
    pthread_mutex_lock(&f->mu);
    f->users--;
    f->owner = NULL;
    f->droppable = NULL;
    for (size_t i = 0; i < n; i++) {
        pl_fd_entry *e = &f->e[pinned[i]];
        e->pins++;
        if (st == NULL)
            st = pl_fd_restore(f, e);
    }
    for (size_t i = 0; f->users == 0 && i < f->n; i++)
        if (f->e[i].pins == 0)
            pl_fd_drop(f, &f->e[i]);
    pthread_mutex_unlock(&f->mu);
    return st;
}

void pl_filedata_unpin(pl_filedata *f, const uint32_t *pinned, size_t n)
{
    if (f == NULL || n == 0)
        return;
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < n; i++) {
        pl_fd_entry *e = &f->e[pinned[i]];
        if (e->pins > 0 && --e->pins == 0 && f->users == 0)
            pl_fd_drop(f, e);
    }
    pthread_mutex_unlock(&f->mu);
}

void pl_filedata_set_compiling(pl_filedata *f, const void *owner, const bool *droppable)
{
    if (f == NULL)
        return;
    pthread_mutex_lock(&f->mu);
    bool alone = f->users == 1;
    f->owner = alone ? owner : NULL;
    f->droppable = alone ? droppable : NULL;
    pthread_mutex_unlock(&f->mu);
}

void pl_filedata_done(pl_filedata *f, const void *owner, const void *addr)
{
    if (f == NULL || owner == NULL)
        return;
    pthread_mutex_lock(&f->mu);
    long i = pl_filedata_find(f, addr);
    if (i >= 0 && f->users == 1 && f->owner == owner && f->droppable != NULL &&
        f->droppable[i] && f->e[i].pins == 0 && f->e[i].addr == addr)
        pl_fd_drop(f, &f->e[i]);
    pthread_mutex_unlock(&f->mu);
}

pl_status *pl_filedata_need(pl_filedata *f, const void *addr)
{
    if (f == NULL || atomic_load(&f->n_dropped) == 0)
        return NULL;
    pthread_mutex_lock(&f->mu);
    long i = pl_filedata_find(f, addr);
    pl_status *st = i >= 0 ? pl_fd_restore(f, &f->e[i]) : NULL;
    pthread_mutex_unlock(&f->mu);
    return st;
}

size_t pl_filedata_entry_bytes(const pl_filedata *f, uint32_t i)
{
    return f != NULL && i < f->n ? f->e[i].bytes : 0;
}

void pl_filedata_stats(pl_filedata *f, size_t *out_resident, size_t *out_dropped)
{
    size_t r = 0, d = 0;
    if (f != NULL) {
        pthread_mutex_lock(&f->mu);
        for (size_t i = 0; i < f->n; i++)
            *(f->e[i].dropped ? &d : &r) += f->e[i].bytes;
        pthread_mutex_unlock(&f->mu);
    }
    *out_resident = r;
    *out_dropped = d;
}
