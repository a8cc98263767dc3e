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

#include <stdio.h>
#include <stdlib.h>

#include <plinth/graph_hash.h>

#include "alloc.h"
#include "status.h"

typedef struct pl_fd_entry {
    char *addr;      /* the core's copy (the graph owns the block) */
    size_t bytes;
    uint64_t offset; /* in the file */
    char *name;      /* the constant, for messages */
    int pins;        /* live sessions reading it in place */
    bool dropped;
    bool in_copy;    /* ADDR lies in the cache's copy (mapped): never read again */
    bool external;   /* another file's (external data): never read from the model file */
    const char *src; /* external, copied to ADDR (unaligned in its file): SRC in
                        the file's mapping, copied again to restore */
    bool unused;     /* no tensor of the model's graph reads it (pl_filedata_mark_used) */
    bool has_digest;
    uint64_t digest; /* pl_hash_bytes from PL_HASH_SEED */
    int ext_file;    /* external: its data file in pl_filedata.ext (-1: none known) */
} pl_fd_entry;

/* What the cache folder keeps of an external data file
 * (pl_filedata_store_digests), under a name made of the file's identity: a
 * header naming the file (device, inode, size, modification time), then
 * one entry per recorded constant, sorted by offset: its offset and length
 * in the file, its digest, and where its bytes lie in this file (0: not
 * kept). The bytes of a constant at an offset that is not 64-byte aligned,
 * which the core must copy out of the file's mapping, are kept here at a
 * page boundary, as the model copy keeps a model file's constants. A later
 * load of the same file knows every weight's digest without reading a byte
 * of it, so the cache keys and the modules' view hashes (tensor_digest)
 * touch no weight (dz_vit_b_16: 345 MB hashed twice per warm load), and
 * points the unaligned ones into a private mapping of this file instead of
 * copying them into fresh memory (dz_swin_t: 111 MB). A file changed in
 * any of those is another file: its memo is not found. */
#define PL_FD_MEMO_MAGIC "PLEXTDT1"

typedef struct pl_fd_memo_header {
    char magic[8];
    uint32_t version, count;
    uint64_t dev, ino, size;
    int64_t mtime_sec, mtime_nsec;
    uint64_t entries_digest; /* of the entries that follow */
} pl_fd_memo_header;

typedef struct pl_fd_memo_entry {
    uint64_t offset, bytes, digest;
    uint64_t at; /* the bytes in the memo file (page-aligned), 0: not kept */
} pl_fd_memo_entry;

typedef struct pl_fd_extfile {
    struct stat st;         /* the file mapped */
    const char *base;       /* its mapping (the builder's) */
    pl_fd_memo_entry *memo; /* what the cache knows of it, by offset */
    uint32_t n_memo;
    char *map;              /* the memo file mapped, when it keeps bytes */
    size_t map_bytes;
} pl_fd_extfile;

/* The cache's copy of a model's constants (filedata.h): a header, the
 * entries sorted by offset, then each constant's bytes at a page boundary.
 * Integers in the machine's order; the copy is for this machine's cache. */
#define PL_FD_COPY_MAGIC "PLMODEL1"
#define PL_FD_COPY_ALIGN ((uint64_t)4096)

typedef struct pl_fd_copy_header {
    char magic[8];
    uint32_t version, count;
    uint64_t model_size, model_ino;
    int64_t mtime_sec, mtime_nsec;
    uint64_t entries_digest; /* of the entries that follow */
} pl_fd_copy_header;

typedef struct pl_fd_copy_entry {
    uint64_t offset, bytes; /* in the model file */
    uint64_t at;            /* in the copy */
    uint64_t digest;        /* of the bytes */
} pl_fd_copy_entry;

/* A file of constants the core made (filedata.h): a header, the entries in
 * the order of the results, then each result's bytes, the big ones (those
 * recorded) at a page boundary, the others at 64 bytes. */
#define PL_FD_MADE_MAGIC "PLFOLD01"

typedef struct pl_fd_made_header {
    char magic[8];
    uint32_t version, count;
    char key[48];            /* the folding's key, terminated */
    uint64_t entries_digest; /* of the entries that follow */
} pl_fd_made_header;

typedef struct pl_fd_made_entry {
    uint64_t bytes, at, digest;
} pl_fd_made_entry;

typedef struct pl_fd_made {
    char *map; /* private, read-only in intent (a stray write copies a page) */
    size_t bytes;
} pl_fd_made;

/* The file a folding session is filling (pl_filedata_made_open). */
typedef struct pl_fd_pending {
    int fd;              /* -1: none */
    char *map;           /* shared, writable */
    size_t bytes;
    pl_fd_made_header h;
    pl_fd_made_entry *e;
    char **names;        /* the results', for messages */
    char path[4200], tmp[4300];
} pl_fd_pending;

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
    bool *droppable, *kept;
    char *cache_dir;     /* pl_filedata_open_copy: where the copy lives */
    char copy_name[64];  /* its file name there */
    char *copy;          /* the copy, mapped (NULL: none) */
    uint64_t cache_max_bytes; /* pl_filedata_store_digests: the folder's limit */
    pl_filedata_cache_hooks hooks; /* the cache's bookkeeping of the memos */
    size_t copy_bytes;
    const pl_fd_copy_entry *copy_e;
    uint32_t copy_n;
    bool read_model;     /* a recorded constant was read from the model file */
    pl_fd_extfile *ext;  /* external data files of recorded constants */
    size_t n_ext;
    uint64_t read_back;  /* bytes restored by reading or copying them again */
    pl_fd_made *made;    /* files of constants the core made (pl_filedata_made_open) */
    size_t n_made;
    pl_fd_pending pending; /* the one being filled */
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
    f->pending.fd = -1;
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
    for (size_t i = 0; i < f->n_ext; i++) {
        pl_free(f->ext[i].memo);
        if (f->ext[i].map != NULL)
            munmap(f->ext[i].map, f->ext[i].map_bytes);
    }
    pl_free(f->ext);
    pl_filedata_made_end(f, false, NULL);
    for (size_t i = 0; i < f->n_made; i++)
        munmap(f->made[i].map, f->made[i].bytes);
    pl_free(f->made);
    if (f->copy != NULL)
        munmap(f->copy, f->copy_bytes);
    pl_free(f->cache_dir);
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
    f->e[at] = (pl_fd_entry){
        .addr = addr, .bytes = bytes, .offset = offset, .name = copy, .ext_file = -1};
    f->n++;
    f->read_model = true;
    return NULL;
}

pl_status *pl_filedata_track_copy(pl_filedata *f, void *addr, size_t bytes, uint64_t offset,
                                  uint64_t digest, const char *name)
{
    bool read_model = f->read_model;
    PL_RETURN_IF_ERROR(pl_filedata_track(f, addr, bytes, offset, name));
    f->read_model = read_model;
    long i = pl_filedata_find(f, addr);
    if (i >= 0) {
        f->e[i].in_copy = true;
        f->e[i].has_digest = true;
        f->e[i].digest = digest;
    }
    return NULL;
}

static int pl_fd_memo_cmp(const void *a, const void *b)
{
    uint64_t x = ((const pl_fd_memo_entry *)a)->offset, y = ((const pl_fd_memo_entry *)b)->offset;
    return x < y ? -1 : x > y;
}

/* The memo's file name for data file ST. */
static void pl_fd_memo_name(const struct stat *st, char *buf, size_t size)
{
    uint64_t a = PL_HASH_SEED, b = PL_HASH_SEED ^ 0x5bd1e9955bd1e995ull;
    uint64_t id[6] = {(uint64_t)st->st_dev, (uint64_t)st->st_ino, (uint64_t)st->st_size,
                      (uint64_t)st->st_mtim.tv_sec, (uint64_t)st->st_mtim.tv_nsec, 2};
    pl_hash_bytes(&a, id, sizeof id);
    pl_hash_bytes(&b, id, sizeof id);
    pl_hash_bytes(&b, "extdata", 7);
    snprintf(buf, size, "extdata-%016llx%016llx.blob", (unsigned long long)a,
             (unsigned long long)b);
}

static bool pl_fd_memo_header_ok(const pl_fd_memo_header *h, const struct stat *st)
{
    return memcmp(h->magic, PL_FD_MEMO_MAGIC, 8) == 0 && h->version == 1 &&
           h->dev == (uint64_t)st->st_dev && h->ino == (uint64_t)st->st_ino &&
           h->size == (uint64_t)st->st_size && h->mtime_sec == (int64_t)st->st_mtim.tv_sec &&
           h->mtime_nsec == (int64_t)st->st_mtim.tv_nsec;
}

enum { PL_FD_BUF = 1 << 20 };
static bool pl_fd_digest_of(int fd, uint64_t offset, uint64_t bytes, char *buf, size_t cap,
                            uint64_t *out);

/* Reads X's memo from the cache folder, if there is a valid one: header,
 * entries, and the digest of every kept constant's bytes (read through a
 * buffer, as the model copy's are: no page of the mapping is touched). */
static void pl_fd_memo_load(pl_filedata *f, pl_fd_extfile *x)
{
    char name[64], path[4200];
    pl_fd_memo_name(&x->st, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", f->cache_dir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return;
    pl_fd_memo_header h;
    struct stat fs;
    pl_fd_memo_entry *e = NULL;
    bool ok = fstat(fd, &fs) == 0 && S_ISREG(fs.st_mode) &&
              (size_t)fs.st_size >= sizeof h && pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
              pl_fd_memo_header_ok(&h, &x->st) && h.count > 0 &&
              h.count <= ((uint64_t)fs.st_size - sizeof h) / sizeof *e;
    size_t bytes = ok ? (size_t)fs.st_size : 0, kept = 0;
    if (ok) {
        size_t n = (size_t)h.count * sizeof *e;
        e = pl_malloc(n);
        ok = e != NULL && pread(fd, e, n, sizeof h) == (ssize_t)n;
        uint64_t d = PL_HASH_SEED;
        if (ok)
            pl_hash_bytes(&d, e, n);
        ok = ok && d == h.entries_digest;
        char *buf = ok ? pl_malloc(PL_FD_BUF) : NULL;
        ok = ok && buf != NULL;
        for (uint32_t i = 0; ok && i < h.count; i++) {
            uint64_t got;
            ok = (i == 0 || e[i].offset > e[i - 1].offset) &&
                 (e[i].at == 0 ||
                  (e[i].at % PL_FD_COPY_ALIGN == 0 && e[i].at <= bytes &&
                   e[i].bytes <= bytes - e[i].at &&
                   pl_fd_digest_of(fd, e[i].at, e[i].bytes, buf, PL_FD_BUF, &got) &&
                   got == e[i].digest));
            kept += e[i].at != 0;
        }
        pl_free(buf);
    }
    if (ok && kept > 0) {
        /* private and writable: a stray write copies a page, never reaches
         * the file */
        void *c = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        ok = c != MAP_FAILED;
        if (ok) {
            x->map = c;
            x->map_bytes = bytes;
        }
    }
    close(fd);
    if (!ok) {
        pl_free(e);
        return;
    }
    x->memo = e;
    x->n_memo = h.count;
    if (f->hooks.touch != NULL)
        f->hooks.touch(f->cache_dir, name); /* used: not evicted first */
}

/* The index in F->ext of the data file ST, registered (and its memo read)
 * on first sight; -1 when out of memory. */
static int pl_fd_extfile_of(pl_filedata *f, const struct stat *st, const void *base)
{
    for (size_t i = 0; i < f->n_ext; i++)
        if (f->ext[i].st.st_dev == st->st_dev && f->ext[i].st.st_ino == st->st_ino &&
            f->ext[i].st.st_size == st->st_size &&
            f->ext[i].st.st_mtim.tv_sec == st->st_mtim.tv_sec &&
            f->ext[i].st.st_mtim.tv_nsec == st->st_mtim.tv_nsec)
            return (int)i;
    pl_fd_extfile *grown = pl_realloc(f->ext, (f->n_ext + 1) * sizeof *grown);
    if (grown == NULL)
        return -1;
    f->ext = grown;
    pl_fd_extfile *x = &f->ext[f->n_ext];
    *x = (pl_fd_extfile){.st = *st, .base = base};
    if (f->cache_dir != NULL)
        pl_fd_memo_load(f, x);
    return (int)f->n_ext++;
}

/* X's memo entry of the constant at OFFSET, BYTES long; NULL: none. */
static const pl_fd_memo_entry *pl_fd_memo_find(const pl_fd_extfile *x, uint64_t offset,
                                               size_t bytes)
{
    pl_fd_memo_entry key = {.offset = offset};
    const pl_fd_memo_entry *m =
        x != NULL && x->memo != NULL
            ? bsearch(&key, x->memo, x->n_memo, sizeof *x->memo, pl_fd_memo_cmp)
            : NULL;
    return m != NULL && m->bytes == bytes ? m : NULL;
}

const void *pl_filedata_ext_kept(pl_filedata *f, const struct stat *file, const void *base,
                                 uint64_t offset, size_t bytes)
{
    if (f == NULL || file == NULL || f->cache_dir == NULL)
        return NULL;
    int k = pl_fd_extfile_of(f, file, base);
    const pl_fd_memo_entry *m = k >= 0 ? pl_fd_memo_find(&f->ext[k], offset, bytes) : NULL;
    return m != NULL && m->at != 0 && f->ext[k].map != NULL ? f->ext[k].map + m->at : NULL;
}

pl_status *pl_filedata_track_mapped(pl_filedata *f, void *addr, size_t bytes, const void *src,
                                    const char *name, const struct stat *file,
                                    const void *base, uint64_t offset)
{
    bool read_model = f->read_model;
    PL_RETURN_IF_ERROR(pl_filedata_track(f, addr, bytes, offset, name));
    f->read_model = read_model;
    long i = pl_filedata_find(f, addr);
    if (i < 0)
        return NULL;
    pl_fd_entry *e = &f->e[i];
    e->external = true;
    e->in_copy = src == NULL;
    e->src = src;
    e->ext_file = file != NULL ? pl_fd_extfile_of(f, file, base) : -1;
    const pl_fd_memo_entry *m =
        pl_fd_memo_find(e->ext_file >= 0 ? &f->ext[e->ext_file] : NULL, offset, bytes);
    if (m != NULL) {
        e->has_digest = true;
        e->digest = m->digest;
    }
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
void pl_fd_unmap_pages(const void *addr, size_t bytes)
{
    /* (a read-only private file mapping: its pages come back on a touch,
     * so the pages it shares with neighbours may go too) */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)addr / page * page;
    uintptr_t hi = ((uintptr_t)addr + bytes + page - 1) / page * page;
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

static void pl_fd_drop(pl_filedata *f, pl_fd_entry *e)
{
    if (e->dropped)
        return;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)e->addr + page - 1) / page * page;
    uintptr_t hi = ((uintptr_t)e->addr + e->bytes) / page * page;
    if (e->in_copy) /* its last page holds nothing else (padding) */
        hi = ((uintptr_t)e->addr + e->bytes + page - 1) / page * page;
    if (hi <= lo || madvise((void *)lo, hi - lo, MADV_DONTNEED) != 0)
        return;
    e->dropped = true;
    atomic_fetch_add(&f->n_dropped, 1);
}

static pl_status *pl_fd_restore(pl_filedata *f, pl_fd_entry *e)
{
    if (!e->dropped)
        return NULL;
    if (e->in_copy) { /* its pages come back from the copy on first touch */
        e->dropped = false;
        atomic_fetch_sub(&f->n_dropped, 1);
        return NULL;
    }
    if (e->src != NULL) { /* from the external file's mapping, which lets go again */
        memcpy(e->addr, e->src, e->bytes);
        pl_fd_unmap_pages(e->src, e->bytes);
        f->read_back += e->bytes;
        e->dropped = false;
        atomic_fetch_sub(&f->n_dropped, 1);
        return NULL;
    }
    PL_RETURN_IF_ERROR(pl_fd_check(f, e->name));
    PL_RETURN_IF_ERROR(pl_filedata_read(f, e->offset, e->bytes, e->addr, e->name));
    f->read_back += e->bytes;
    e->dropped = false;
    atomic_fetch_sub(&f->n_dropped, 1);
    return NULL;
}

static pl_status *pl_fd_restore_all(pl_filedata *f)
{
    for (size_t i = 0; i < f->n && atomic_load(&f->n_dropped) > 0; i++)
        if (!f->e[i].unused)
            PL_RETURN_IF_ERROR(pl_fd_restore(f, &f->e[i]));
    return NULL;
}

void pl_filedata_mark_used(pl_filedata *f, const bool *used)
{
    if (f == NULL)
        return;
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->n; i++) {
        f->e[i].unused = !used[i];
        if (f->e[i].unused && f->users == 0 && f->e[i].pins == 0)
            pl_fd_drop(f, &f->e[i]);
    }
    pthread_mutex_unlock(&f->mu);
}

/* A user enters: ALL reads back every dropped constant, else those NEED
 * marks (NULL: none). */
static pl_status *pl_fd_enter(pl_filedata *f, const bool *need, bool all)
{
    if (f == NULL)
        return NULL;
    pthread_mutex_lock(&f->mu);
    f->users++;
    f->owner = NULL;
    f->droppable = NULL;
    pl_status *st = NULL;
    for (size_t i = 0; st == NULL && i < f->n && atomic_load(&f->n_dropped) > 0; i++)
        if (!f->e[i].unused && (all || (need != NULL && need[i])))
            st = pl_fd_restore(f, &f->e[i]);
    pthread_mutex_unlock(&f->mu);
    return st;
}

pl_status *pl_filedata_enter(pl_filedata *f)
{
    return pl_fd_enter(f, NULL, true);
}

pl_status *pl_filedata_enter_only(pl_filedata *f, const bool *need)
{
    return pl_fd_enter(f, need, false);
}

pl_status *pl_filedata_enter_lazy(pl_filedata *f)
{
    return pl_fd_enter(f, NULL, false);
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

static pl_status *pl_fd_leave(pl_filedata *f, const uint32_t *pinned, size_t n, bool drop)
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
    for (size_t i = 0; drop && f->users == 0 && i < f->n; i++)
        if (f->e[i].pins == 0)
            pl_fd_drop(f, &f->e[i]);
    pthread_mutex_unlock(&f->mu);
    return st;
}

pl_status *pl_filedata_leave(pl_filedata *f, const uint32_t *pinned, size_t n)
{
    return pl_fd_leave(f, pinned, n, true);
}

pl_status *pl_filedata_leave_keep(pl_filedata *f, const uint32_t *pinned, size_t n)
{
    return pl_fd_leave(f, pinned, n, false);
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

void pl_filedata_set_compiling(pl_filedata *f, const void *owner, bool *droppable, bool *kept)
{
    if (f == NULL)
        return;
    pthread_mutex_lock(&f->mu);
    bool alone = f->users == 1;
    f->owner = alone ? owner : NULL;
    f->droppable = alone ? droppable : NULL;
    f->kept = alone ? kept : NULL;
    pthread_mutex_unlock(&f->mu);
}

bool pl_filedata_keep(pl_filedata *f, const void *owner, const void *addr)
{
    if (f == NULL)
        return true;
    pthread_mutex_lock(&f->mu);
    long i = pl_filedata_find(f, addr);
    bool ok = i < 0;
    if (i >= 0 && f->users == 1 && f->owner == owner && owner != NULL && f->kept != NULL &&
        f->droppable != NULL && f->e[i].addr == addr) {
        pl_status *st = pl_fd_restore(f, &f->e[i]);
        ok = st == NULL;
        pl_status_free(st);
        if (ok) {
            f->kept[i] = true;
            f->droppable[i] = false;
        }
    }
    pthread_mutex_unlock(&f->mu);
    return ok;
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

void pl_filedata_stats(pl_filedata *f, size_t *out_resident, size_t *out_dropped,
                       uint64_t *out_read_back)
{
    size_t r = 0, d = 0;
    uint64_t back = 0;
    if (f != NULL) {
        pthread_mutex_lock(&f->mu);
        for (size_t i = 0; i < f->n; i++)
            *(f->e[i].dropped ? &d : &r) += f->e[i].bytes;
        back = f->read_back;
        pthread_mutex_unlock(&f->mu);
    }
    *out_resident = r;
    *out_dropped = d;
    if (out_read_back != NULL)
        *out_read_back = back;
}

/* ---- the cache's copy ------------------------------------------------------ */

/* The copy's file name: a digest of the model file's path and identity. */
static void pl_fd_copy_name(const pl_filedata *f, char *buf, size_t size)
{
    char *real = realpath(f->path, NULL);
    const char *p = real != NULL ? real : f->path;
    uint64_t a = PL_HASH_SEED, b = PL_HASH_SEED ^ 0x5bd1e9955bd1e995ull;
    uint64_t id[6] = {(uint64_t)f->st.st_dev, (uint64_t)f->st.st_ino, (uint64_t)f->st.st_size,
                      (uint64_t)f->st.st_mtim.tv_sec, (uint64_t)f->st.st_mtim.tv_nsec, 1};
    pl_hash_str(&a, p);
    pl_hash_bytes(&a, id, sizeof id);
    pl_hash_bytes(&b, id, sizeof id);
    pl_hash_str(&b, p);
    free(real);
    snprintf(buf, size, "model-%016llx%016llx.blob", (unsigned long long)a,
             (unsigned long long)b);
}

/* The digest of BYTES at OFFSET of FD, read through BUF (CAP bytes); false
 * when the read fails. */
static bool pl_fd_digest_of(int fd, uint64_t offset, uint64_t bytes, char *buf, size_t cap,
                            uint64_t *out)
{
    pl_hash_stream hs;
    pl_hash_stream_init(&hs);
    while (bytes > 0) {
        size_t want = bytes < cap ? (size_t)bytes : cap;
        ssize_t got = pread(fd, buf, want, (off_t)offset);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return false;
        pl_hash_stream_add(&hs, buf, (size_t)got);
        offset += (uint64_t)got;
        bytes -= (uint64_t)got;
    }
    *out = pl_hash_stream_end(&hs);
    return true;
}

/* Whether the mapped copy C (BYTES long, open as FD) is F's: its header
 * names this model file, its entries lie inside it, and every constant's
 * bytes have their digest. */
static bool pl_fd_copy_valid(const pl_filedata *f, const char *c, size_t bytes, int fd)
{
    pl_fd_copy_header h;
    if (bytes < sizeof h)
        return false;
    memcpy(&h, c, sizeof h);
    if (memcmp(h.magic, PL_FD_COPY_MAGIC, 8) != 0 || h.version != 1 ||
        h.model_size != (uint64_t)f->st.st_size || h.model_ino != (uint64_t)f->st.st_ino ||
        h.mtime_sec != (int64_t)f->st.st_mtim.tv_sec ||
        h.mtime_nsec != (int64_t)f->st.st_mtim.tv_nsec ||
        h.count > (bytes - sizeof h) / sizeof(pl_fd_copy_entry))
        return false;
    const pl_fd_copy_entry *e = (const pl_fd_copy_entry *)(const void *)(c + sizeof h);
    uint64_t d = PL_HASH_SEED;
    pl_hash_bytes(&d, e, h.count * sizeof *e);
    if (d != h.entries_digest)
        return false;
    char *buf = pl_malloc(PL_FD_BUF);
    bool ok = buf != NULL;
    for (uint32_t i = 0; ok && i < h.count; i++) {
        uint64_t got;
        ok = e[i].at % PL_FD_COPY_ALIGN == 0 && e[i].at <= bytes &&
             e[i].bytes <= bytes - e[i].at && (i == 0 || e[i].offset > e[i - 1].offset) &&
             pl_fd_digest_of(fd, e[i].at, e[i].bytes, buf, PL_FD_BUF, &got) &&
             got == e[i].digest;
    }
    pl_free(buf);
    return ok;
}

void pl_filedata_set_cache_hooks(pl_filedata *f, pl_filedata_cache_hooks hooks)
{
    if (f != NULL)
        f->hooks = hooks;
}

const char *pl_filedata_open_copy(pl_filedata *f, const char *dir)
{
    if (f == NULL || dir == NULL || dir[0] == '\0' || f->cache_dir != NULL)
        return NULL;
    f->cache_dir = pl_xstrdup(dir);
    if (f->cache_dir == NULL)
        return NULL;
    pl_fd_copy_name(f, f->copy_name, sizeof f->copy_name);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, f->copy_name);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return NULL;
    struct stat st2;
    if (fstat(fd, &st2) == 0 && S_ISREG(st2.st_mode) && st2.st_size > 0) {
        size_t bytes = (size_t)st2.st_size;
        /* private and writable: a stray write copies a page, never reaches
         * the file */
        void *c = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (c != MAP_FAILED && pl_fd_copy_valid(f, c, bytes, fd)) {
            f->copy = c;
            f->copy_bytes = bytes;
            pl_fd_copy_header h;
            memcpy(&h, c, sizeof h);
            f->copy_e = (const pl_fd_copy_entry *)(const void *)((char *)c + sizeof h);
            f->copy_n = h.count;
            /* the check read it through a buffer: no page of it is mapped yet */
        } else if (c != MAP_FAILED) {
            munmap(c, bytes);
        }
    }
    close(fd);
    return f->copy != NULL ? f->copy_name : NULL;
}

void *pl_filedata_copy_lookup(pl_filedata *f, uint64_t offset, size_t bytes,
                              uint64_t *out_digest)
{
    if (f == NULL || f->copy == NULL)
        return NULL;
    size_t lo = 0, hi = f->copy_n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->copy_e[mid].offset < offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == f->copy_n || f->copy_e[lo].offset != offset || f->copy_e[lo].bytes != bytes)
        return NULL;
    *out_digest = f->copy_e[lo].digest;
    return f->copy + f->copy_e[lo].at;
}

static int pl_fd_offset_cmp(const void *a, const void *b)
{
    uint64_t x = ((const pl_fd_copy_entry *)a)->offset, y = ((const pl_fd_copy_entry *)b)->offset;
    return x < y ? -1 : x > y;
}

static bool pl_fd_write_all(int fd, const void *data, size_t n, uint64_t at)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = pwrite(fd, p, n, (off_t)at);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
        at += (uint64_t)w;
    }
    return true;
}

/* A new file for the cache folder's entry PATH, written under a temporary
 * name (TMP, SIZE bytes) that pl_fd_publish renames to PATH: readers see
 * a whole entry or none. -1 when it cannot be made. */
static int pl_fd_tmp_open(const char *path, char *tmp, size_t size)
{
    static atomic_ulong serial; /* two loads of one model in one process */
    snprintf(tmp, size, "%s.%ld.%lu.tmp", path, (long)getpid(), atomic_fetch_add(&serial, 1));
    return open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
}

/* Closes FD (from pl_fd_tmp_open) and, when OK (everything written), puts
 * TMP in place as PATH; else removes it. Whether the entry is in place. */
static bool pl_fd_publish(int fd, bool ok, const char *tmp, const char *path)
{
    if (fd < 0)
        return false;
    ok = close(fd) == 0 && ok;
    ok = ok && rename(tmp, path) == 0;
    if (!ok)
        unlink(tmp);
    return ok;
}

const char *pl_filedata_store_copy(pl_filedata *f)
{
    if (f == NULL || f->cache_dir == NULL || !f->read_model || f->n == 0)
        return NULL;
    pl_fd_copy_entry *e = pl_calloc(f->n, sizeof *e);
    char *buf = pl_malloc(PL_FD_BUF);
    size_t n = 0;
    for (size_t i = 0; e != NULL && i < f->n; i++) {
        if (f->e[i].external)
            continue; /* another file's */
        bool dup = false; /* one range of the file named by two constants */
        for (size_t k = 0; k < n && !dup; k++)
            dup = e[k].offset == f->e[i].offset && e[k].bytes == f->e[i].bytes;
        if (!dup)
            e[n++] = (pl_fd_copy_entry){.offset = f->e[i].offset, .bytes = f->e[i].bytes};
    }
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s/%s", f->cache_dir, f->copy_name);
    int fd = e != NULL && buf != NULL ? pl_fd_tmp_open(path, tmp, sizeof tmp) : -1;
    bool ok = fd >= 0;
    if (ok) {
        qsort(e, n, sizeof *e, pl_fd_offset_cmp);
        pl_fd_copy_header h = {.version = 1, .count = (uint32_t)n,
                               .model_size = (uint64_t)f->st.st_size,
                               .model_ino = (uint64_t)f->st.st_ino,
                               .mtime_sec = (int64_t)f->st.st_mtim.tv_sec,
                               .mtime_nsec = (int64_t)f->st.st_mtim.tv_nsec};
        memcpy(h.magic, PL_FD_COPY_MAGIC, 8);
        uint64_t at = (sizeof h + n * sizeof *e + PL_FD_COPY_ALIGN - 1) / PL_FD_COPY_ALIGN *
                      PL_FD_COPY_ALIGN;
        /* the bytes straight from the model file, whatever the load made
         * of its own copies */
        for (size_t i = 0; ok && i < n; i++) {
            e[i].at = at;
            pl_hash_stream hs;
            pl_hash_stream_init(&hs);
            uint64_t done = 0;
            while (ok && done < e[i].bytes) {
                size_t want = e[i].bytes - done < PL_FD_BUF ? (size_t)(e[i].bytes - done)
                                                            : (size_t)PL_FD_BUF;
                ok = pl_filedata_read(f, e[i].offset + done, want, buf, f->path) == NULL;
                if (ok) {
                    pl_hash_stream_add(&hs, buf, want);
                    ok = pl_fd_write_all(fd, buf, want, at + done);
                }
                done += want;
            }
            e[i].digest = pl_hash_stream_end(&hs);
            at += (e[i].bytes + PL_FD_COPY_ALIGN - 1) / PL_FD_COPY_ALIGN * PL_FD_COPY_ALIGN;
        }
        h.entries_digest = PL_HASH_SEED;
        pl_hash_bytes(&h.entries_digest, e, n * sizeof *e);
        ok = ok && ftruncate(fd, (off_t)at) == 0 && pl_fd_write_all(fd, &h, sizeof h, 0) &&
             pl_fd_write_all(fd, e, n * sizeof *e, sizeof h);
        ok = pl_fd_publish(fd, ok, tmp, path);
    }
    if (ok) {
        for (size_t i = 0; i < f->n; i++) /* the digests the cache keys need */
            for (size_t k = 0; k < n; k++)
                if (e[k].offset == f->e[i].offset && e[k].bytes == f->e[i].bytes) {
                    f->e[i].digest = e[k].digest;
                    f->e[i].has_digest = true;
                }
    }
    pl_free(buf);
    pl_free(e);
    return ok ? f->copy_name : NULL;
}

/* Writes data file K's memo: every recorded constant of it with its
 * digest, and the bytes of those at unaligned offsets, straight from the
 * file's mapping. */
static bool pl_fd_memo_store(pl_filedata *f, size_t k)
{
    pl_fd_extfile *x = &f->ext[k];
    size_t n = 0;
    pl_fd_memo_entry *e = pl_malloc((f->n ? f->n : 1) * sizeof *e);
    if (e == NULL || x->base == NULL) {
        pl_free(e);
        return false;
    }
    for (size_t i = 0; i < f->n; i++)
        if (f->e[i].ext_file == (int)k && f->e[i].has_digest)
            e[n++] = (pl_fd_memo_entry){f->e[i].offset, f->e[i].bytes, f->e[i].digest, 0};
    qsort(e, n, sizeof *e, pl_fd_memo_cmp);
    size_t m = 0; /* one entry per offset */
    for (size_t i = 0; i < n; i++)
        if (m == 0 || e[i].offset != e[m - 1].offset)
            e[m++] = e[i];
    pl_fd_memo_header h = {.version = 1, .count = (uint32_t)m,
                           .dev = (uint64_t)x->st.st_dev, .ino = (uint64_t)x->st.st_ino,
                           .size = (uint64_t)x->st.st_size,
                           .mtime_sec = (int64_t)x->st.st_mtim.tv_sec,
                           .mtime_nsec = (int64_t)x->st.st_mtim.tv_nsec};
    memcpy(h.magic, PL_FD_MEMO_MAGIC, 8);
    uint64_t at = (sizeof h + m * sizeof *e + PL_FD_COPY_ALIGN - 1) / PL_FD_COPY_ALIGN *
                  PL_FD_COPY_ALIGN;
    for (size_t i = 0; i < m; i++)
        if (e[i].offset % 64 != 0) {
            e[i].at = at;
            at += (e[i].bytes + PL_FD_COPY_ALIGN - 1) / PL_FD_COPY_ALIGN * PL_FD_COPY_ALIGN;
        }
    h.entries_digest = PL_HASH_SEED;
    pl_hash_bytes(&h.entries_digest, e, m * sizeof *e);
    char name[64], path[4200], tmp[4300];
    pl_fd_memo_name(&x->st, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", f->cache_dir, name);
    int fd = pl_fd_tmp_open(path, tmp, sizeof tmp);
    bool ok = fd >= 0 && pl_fd_write_all(fd, &h, sizeof h, 0) &&
              pl_fd_write_all(fd, e, m * sizeof *e, sizeof h);
    for (size_t i = 0; ok && i < m; i++)
        if (e[i].at != 0) {
            /* (the mapping's pages it brings in go again) */
            ok = pl_fd_write_all(fd, x->base + e[i].offset, e[i].bytes, e[i].at);
            pl_fd_unmap_pages(x->base + e[i].offset, e[i].bytes);
        }
    ok = pl_fd_publish(fd, ok && ftruncate(fd, (off_t)at) == 0, tmp, path);
    pl_free(e);
    if (ok && f->hooks.touch != NULL)
        f->hooks.touch(f->cache_dir, name);
    if (ok && f->hooks.limit != NULL)
        f->hooks.limit(f->cache_dir, f->cache_max_bytes, name);
    return ok;
}

void pl_filedata_store_digests(pl_filedata *f, uint64_t cache_max_bytes)
{
    if (f == NULL || f->cache_dir == NULL || f->n_ext == 0)
        return;
    f->cache_max_bytes = cache_max_bytes;
    bool *news = pl_calloc(f->n_ext, sizeof *news);
    if (news == NULL)
        return;
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->n; i++) {
        pl_fd_entry *e = &f->e[i];
        if (e->ext_file < 0)
            continue;
        const pl_fd_extfile *x = &f->ext[e->ext_file];
        const pl_fd_memo_entry *m = pl_fd_memo_find(x, e->offset, e->bytes);
        /* written again when a digest is new, or bytes it should keep are not kept */
        if (m == NULL || (e->offset % 64 != 0 && (m->at == 0 || x->map == NULL)))
            news[e->ext_file] = true;
        if (e->has_digest)
            continue;
        /* the core's copy, or its source when dropped, or the mapping itself
         * (a dropped page of which comes back from the file): the file's
         * bytes either way */
        bool from_src = e->src != NULL && e->dropped;
        e->digest = PL_HASH_SEED;
        pl_hash_bytes(&e->digest, from_src ? e->src : e->addr, e->bytes);
        if (from_src)
            pl_fd_unmap_pages(e->src, e->bytes);
        e->has_digest = true;
    }
    for (size_t k = 0; k < f->n_ext; k++)
        if (news[k])
            (void)pl_fd_memo_store(f, k);
    pthread_mutex_unlock(&f->mu);
    pl_free(news);
}

bool pl_filedata_digest(pl_filedata *f, const void *addr, size_t bytes, uint64_t *out)
{
    if (f == NULL || bytes < PL_FILEDATA_MIN_BYTES)
        return false;
    pthread_mutex_lock(&f->mu);
    long i = pl_filedata_find(f, addr);
    bool ok = i >= 0 && f->e[i].addr == addr && f->e[i].bytes == bytes && f->e[i].has_digest;
    if (ok)
        *out = f->e[i].digest;
    pthread_mutex_unlock(&f->mu);
    return ok;
}

void pl_filedata_set_digest(pl_filedata *f, const void *addr, size_t bytes, uint64_t digest)
{
    if (f == NULL || bytes < PL_FILEDATA_MIN_BYTES)
        return;
    pthread_mutex_lock(&f->mu);
    long i = pl_filedata_find(f, addr);
    if (i >= 0 && f->e[i].addr == addr && f->e[i].bytes == bytes && !f->e[i].has_digest) {
        f->e[i].digest = digest;
        f->e[i].has_digest = true;
    }
    pthread_mutex_unlock(&f->mu);
}

/* ---- constants the core made, kept in the cache folder ------------------ */

const char *pl_filedata_cache_dir(const pl_filedata *f)
{
    return f != NULL ? f->cache_dir : NULL;
}

/* The layout of N results of BYTES[i] in a made file: E[i].at and bytes;
 * the file's size. */
static uint64_t pl_fd_made_layout(size_t n, const size_t *bytes, pl_fd_made_entry *e)
{
    uint64_t at = (sizeof(pl_fd_made_header) + n * sizeof *e + PL_FD_COPY_ALIGN - 1) /
                  PL_FD_COPY_ALIGN * PL_FD_COPY_ALIGN;
    for (size_t i = 0; i < n; i++) {
        uint64_t align = bytes[i] >= PL_FILEDATA_MIN_BYTES ? PL_FD_COPY_ALIGN : 64;
        at = (at + align - 1) / align * align;
        e[i] = (pl_fd_made_entry){.bytes = bytes[i], .at = at};
        at += bytes[i];
    }
    return (at + PL_FD_COPY_ALIGN - 1) / PL_FD_COPY_ALIGN * PL_FD_COPY_ALIGN;
}

/* Records the big results of a made file mapped at MAP (entries E, names
 * NAMES) like the copy's constants: resident until dropped, back on a
 * touch, never read from the model file. */
static bool pl_fd_made_record(pl_filedata *f, char *map, size_t bytes, size_t n,
                              const pl_fd_made_entry *e, const char *const *names)
{
    pl_fd_made *grown = pl_realloc(f->made, (f->n_made + 1) * sizeof *grown);
    if (grown == NULL)
        return false;
    f->made = grown;
    f->made[f->n_made++] = (pl_fd_made){map, bytes};
    bool read_model = f->read_model;
    for (size_t i = 0; i < n; i++) {
        if (e[i].bytes < PL_FILEDATA_MIN_BYTES)
            continue;
        pl_status *st = pl_filedata_track(f, map + e[i].at, e[i].bytes, 0, names[i]);
        long k = st == NULL ? pl_filedata_find(f, map + e[i].at) : -1;
        pl_status_free(st);
        if (k < 0)
            continue; /* out of memory: resident for good, that is all */
        f->e[k].external = true;
        f->e[k].in_copy = true;
        f->e[k].has_digest = true;
        f->e[k].digest = e[i].digest;
    }
    f->read_model = read_model;
    return true;
}

/* Maps the made file at PATH when it holds N results of BYTES[i] under
 * KEY, with their digests; NULL otherwise. *OUT_E: its entries (in the
 * mapping). */
static char *pl_fd_made_map(const char *path, const char *key, size_t n, const size_t *bytes,
                            size_t *out_bytes, const pl_fd_made_entry **out_e)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return NULL;
    struct stat st;
    char *map = NULL;
    pl_fd_made_header h;
    pl_fd_made_entry *want = pl_calloc(n ? n : 1, sizeof *want);
    uint64_t size = want != NULL ? pl_fd_made_layout(n, bytes, want) : 0;
    if (want != NULL && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        (uint64_t)st.st_size == size && pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
        memcmp(h.magic, PL_FD_MADE_MAGIC, 8) == 0 && h.version == 1 && h.count == n &&
        strncmp(h.key, key, sizeof h.key) == 0)
        map = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED)
        map = NULL;
    /* the entries must be the layout's, and every result's bytes their
     * digest (read through a buffer: no page is mapped yet) */
    const pl_fd_made_entry *e = map != NULL ? (const void *)(map + sizeof h) : NULL;
    uint64_t d = PL_HASH_SEED;
    if (e != NULL)
        pl_hash_bytes(&d, e, n * sizeof *e);
    bool ok = e != NULL && d == h.entries_digest;
    char *buf = ok ? pl_malloc(PL_FD_BUF) : NULL;
    ok = ok && buf != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        uint64_t got;
        ok = e[i].bytes == want[i].bytes && e[i].at == want[i].at &&
             pl_fd_digest_of(fd, e[i].at, e[i].bytes, buf, PL_FD_BUF, &got) &&
             got == e[i].digest;
    }
    pl_free(buf);
    pl_free(want);
    close(fd);
    if (!ok && map != NULL) {
        munmap(map, (size_t)size);
        map = NULL;
    }
    *out_bytes = (size_t)size;
    *out_e = e;
    return map;
}

bool pl_filedata_made_open(pl_filedata *f, const char *key, size_t n, const size_t *bytes,
                           const char *const *names, uint64_t max_bytes, void **out,
                           bool *out_made)
{
    *out_made = false;
    if (f == NULL || f->cache_dir == NULL || f->pending.fd >= 0 || n == 0 ||
        strlen(key) >= sizeof f->pending.h.key)
        return false;
    /* Only while nothing holds an entry's index (sessions' pins, a
     * creation's droppable marks): recording inserts entries, by address.
     * A model's load is such a time; a folding while it has sessions (a
     * staged one's, a shape bound later) keeps its results in memory. */
    pthread_mutex_lock(&f->mu);
    bool quiet = f->users == 0;
    for (size_t i = 0; quiet && i < f->n; i++)
        quiet = f->e[i].pins == 0;
    pthread_mutex_unlock(&f->mu);
    if (!quiet)
        return false;
    pl_fd_pending *p = &f->pending;
    char name[96];
    snprintf(name, sizeof name, "fold-%s.blob", key);
    snprintf(p->path, sizeof p->path, "%s/%s", f->cache_dir, name);
    size_t size = 0;
    const pl_fd_made_entry *e = NULL;
    char *map = pl_fd_made_map(p->path, key, n, bytes, &size, &e);
    if (map != NULL) {
        pthread_mutex_lock(&f->mu);
        bool ok = pl_fd_made_record(f, map, size, n, e, names);
        pthread_mutex_unlock(&f->mu);
        if (!ok) {
            munmap(map, size);
            return false;
        }
        for (size_t i = 0; i < n; i++)
            out[i] = map + e[i].at;
        if (f->hooks.touch != NULL)
            f->hooks.touch(f->cache_dir, name);
        *out_made = true;
        return true;
    }
    /* A new one, filled in place by the run: its blocks reserved first, so
     * that a full disk refuses it here rather than fault a write later. */
    p->e = pl_calloc(n, sizeof *p->e);
    p->names = pl_calloc(n, sizeof *p->names);
    bool ok = p->e != NULL && p->names != NULL;
    for (size_t i = 0; ok && i < n; i++)
        ok = (p->names[i] = pl_xstrdup(names[i])) != NULL;
    uint64_t total = ok ? pl_fd_made_layout(n, bytes, p->e) : 0;
    f->cache_max_bytes = max_bytes;
    ok = ok && (max_bytes == 0 || total <= max_bytes);
    snprintf(p->tmp, sizeof p->tmp, "%s.%ld.tmp", p->path, (long)getpid());
    int fd = ok ? open(p->tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644) : -1;
    ok = fd >= 0 && posix_fallocate(fd, 0, (off_t)total) == 0;
    char *w = ok ? mmap(NULL, (size_t)total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                 : MAP_FAILED;
    if (w == MAP_FAILED) {
        if (fd >= 0) {
            close(fd);
            unlink(p->tmp);
        }
        for (size_t i = 0; p->names != NULL && i < n; i++)
            pl_free(p->names[i]);
        pl_free(p->names);
        pl_free(p->e);
        p->names = NULL;
        p->e = NULL;
        return false;
    }
    p->fd = fd;
    p->map = w;
    p->bytes = (size_t)total;
    p->h = (pl_fd_made_header){.version = 1, .count = (uint32_t)n};
    memcpy(p->h.magic, PL_FD_MADE_MAGIC, 8);
    snprintf(p->h.key, sizeof p->h.key, "%s", key);
    for (size_t i = 0; i < n; i++)
        out[i] = w + p->e[i].at;
    return true;
}

bool pl_filedata_made_end(pl_filedata *f, bool ok, void **out)
{
    if (f == NULL || f->pending.fd < 0)
        return false;
    pl_fd_pending *p = &f->pending;
    size_t n = p->h.count;
    char *map = NULL;
    if (ok) {
        for (size_t i = 0; i < n; i++) {
            p->e[i].digest = PL_HASH_SEED;
            pl_hash_bytes(&p->e[i].digest, p->map + p->e[i].at, p->e[i].bytes);
        }
        p->h.entries_digest = PL_HASH_SEED;
        pl_hash_bytes(&p->h.entries_digest, p->e, n * sizeof *p->e);
        memcpy(p->map, &p->h, sizeof p->h);
        memcpy(p->map + sizeof p->h, p->e, n * sizeof *p->e);
    }
    /* The shared mapping goes (its pages stay in the page cache, written
     * back by the system); the results are read through a private one, as
     * a later load will. */
    munmap(p->map, p->bytes);
    if (ok)
        map = mmap(NULL, p->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE, p->fd, 0);
    ok = ok && map != MAP_FAILED;
    close(p->fd);
    ok = ok && rename(p->tmp, p->path) == 0;
    if (!ok)
        unlink(p->tmp);
    if (ok) {
        pthread_mutex_lock(&f->mu);
        ok = pl_fd_made_record(f, map, p->bytes, n, p->e, (const char *const *)p->names);
        pthread_mutex_unlock(&f->mu);
    }
    if (!ok && map != NULL && map != MAP_FAILED)
        munmap(map, p->bytes);
    for (size_t i = 0; ok && i < n; i++)
        out[i] = map + p->e[i].at;
    const char *name = strrchr(p->path, '/') + 1;
    if (ok && f->hooks.touch != NULL)
        f->hooks.touch(f->cache_dir, name);
    if (ok && f->hooks.limit != NULL)
        f->hooks.limit(f->cache_dir, f->cache_max_bytes, name);
    for (size_t i = 0; i < n; i++)
        pl_free(p->names[i]);
    pl_free(p->names);
    pl_free(p->e);
    p->names = NULL;
    p->e = NULL;
    p->map = NULL;
    p->fd = -1;
    return ok;
}
