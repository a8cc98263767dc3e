/* cache.c — the compiled-subgraph cache. A session asks a module that can
 * export (PL_CAP_EXPORT) to import the blob stored under the subgraph's key
 * before compiling; after a compile it stores the module's export. The key
 * covers everything that makes a compiled subgraph different: module name
 * and version, device, the subgraph's JSON (ops, attributes, shapes,
 * dtypes) and its constants' bytes. What the module depends on beyond that
 * (its library's version, the CPU's ISA) it checks in its own blob header,
 * refusing a blob that does not match — so a stale entry costs one compile,
 * never a wrong result.
 *
 * Size and use. Every entry's mtime is its last use (set on store and on
 * each hit, from the real-time clock to the nanosecond: the kernel's own
 * file times are as coarse as a tick); a store beyond [runtime]
 * cache_max_mb removes the least recently used entries until the folder
 * fits. The counters (hits, misses, stores, evictions, bytes read and
 * written) live in the folder's `stats` file, updated under an flock by
 * every process that uses the folder, so `plinth cache stats` reports what
 * all of them did since the folder was made or cleared. */
#include "cache.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <plinth/graph_hash.h>

#include "alloc.h"
#include "filedata.h"
#include "graph_view.h"
#include "graph.h"
#include "status.h"

typedef struct pl_hash2 {
    uint64_t a, b;
} pl_hash2;

/* Eight bytes at a time (the weights of a model are tens of megabytes,
 * and keying them byte by byte took ~100 ms of a warm start), the last
 * N % 8 one at a time. */
static void pl_hash2_bytes(pl_hash2 *h, const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t a = h->a, b = h->b;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        a = (a ^ w) * 1099511628211ull;
        a ^= a >> 31;
        b = (b ^ w) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
        b ^= b >> 29;
    }
    for (; i < n; i++) {
        a = (a ^ p[i]) * 1099511628211ull;
        b = (b ^ p[i]) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
        b ^= b >> 29;
    }
    h->a = a;
    h->b = b;
}

static void pl_hash2_str(pl_hash2 *h, const char *s)
{
    pl_hash2_bytes(h, s, strlen(s) + 1);
}

static void pl_hash2_u64(pl_hash2 *h, uint64_t v)
{
    pl_hash2_bytes(h, &v, sizeof v);
}

/* BYTES at DATA as their four-lane digest (sdk graph_hash.h; three times
 * faster than the key's own chains over megabytes of weights). */
static void pl_hash2_digest(pl_hash2 *h, const void *data, size_t bytes)
{
    uint64_t digest = PL_HASH_SEED;
    pl_hash_bytes(&digest, data, bytes);
    pl_hash2_u64(h, bytes);
    pl_hash2_u64(h, digest);
}

static void pl_hash2_type(pl_hash2 *h, pl_dtype dt, int32_t ndim, const int64_t *dims)
{
    pl_hash2_u64(h, ((uint64_t)dt.code << 24) | ((uint64_t)dt.bits << 16) | dt.lanes);
    pl_hash2_u64(h, (uint64_t)(int64_t)ndim);
    for (int32_t d = 0; d < ndim; d++)
        pl_hash2_u64(h, (uint64_t)dims[d]);
}

/* Tensor T of G: its name and type, and a constant's bytes, the first time
 * it is met (SEEN marks it); later only its name. */
static void pl_hash2_tensor(pl_hash2 *h, const pl_graph *g, pl_tid t, unsigned char *seen)
{
    if (t == PL_TID_NONE) {
        pl_hash2_u64(h, UINT64_MAX);
        return;
    }
    const pl_graph_tensor *x = pl_graph_get_tensor(g, t);
    pl_hash2_str(h, x->name);
    if (seen[t])
        return;
    seen[t] = 1;
    pl_hash2_type(h, x->dtype, x->ndim, x->dims);
    for (int32_t d = 0; x->dim_params != NULL && d < x->ndim; d++)
        pl_hash2_str(h, x->dim_params[d] ? x->dim_params[d] : "");
    uint64_t digest;
    if (x->data != NULL &&
        pl_filedata_digest(pl_graph_filedata(g), x->data, x->nbytes, &digest)) {
        pl_hash2_u64(h, x->nbytes); /* what pl_hash2_digest folds in, known */
        pl_hash2_u64(h, digest);
    } else if (x->data != NULL)
        pl_hash2_digest(h, x->data, x->nbytes);
    else
        pl_hash2_u64(h, 0);
}

static void pl_hash2_attr(pl_hash2 *h, const pl_attr *a)
{
    pl_hash2_str(h, a->name);
    pl_hash2_u64(h, (uint64_t)a->kind);
    switch (a->kind) {
    case PL_ATTR_INT: pl_hash2_u64(h, (uint64_t)a->i); break;
    case PL_ATTR_FLOAT: pl_hash2_bytes(h, &a->f, sizeof a->f); break;
    case PL_ATTR_STRING:
        pl_hash2_u64(h, a->s_len);
        pl_hash2_bytes(h, a->s, a->s_len);
        break;
    case PL_ATTR_INTS:
        pl_hash2_u64(h, a->n);
        pl_hash2_bytes(h, a->ints, a->n * sizeof *a->ints);
        break;
    case PL_ATTR_FLOATS:
        pl_hash2_u64(h, a->n);
        pl_hash2_bytes(h, a->floats, a->n * sizeof *a->floats);
        break;
    case PL_ATTR_STRINGS:
        pl_hash2_u64(h, a->n);
        for (size_t k = 0; k < a->n; k++)
            pl_hash2_str(h, a->strings[k]);
        break;
    case PL_ATTR_TENSOR:
        pl_hash2_type(h, a->tensor->dtype, a->tensor->ndim, a->tensor->dims);
        pl_hash2_digest(h, a->tensor->data, a->tensor->nbytes);
        break;
    default: break;
    }
}

/* Whether a node of VIEW has a body (GRAPH or GRAPHS attribute). */
static bool pl_cache_view_has_bodies(const pl_graph_view *view, const pl_graph *g)
{
    for (size_t n = 0; n < pl_graph_view_table.node_count(view); n++) {
        const pl_graph_node *node = pl_graph_get_node(g, pl_graph_view_node_id(view, n));
        for (size_t k = 0; k < node->n_attrs; k++)
            if (node->attrs[k].kind == PL_ATTR_GRAPH || node->attrs[k].kind == PL_ATTR_GRAPHS)
                return true;
    }
    return false;
}

/* The key covers what a compile can see: the graph's opsets, the view's
 * nodes in order (name, op, domain, every attribute, inputs and outputs),
 * every tensor they touch (name, dtype, shape with its symbols, and a
 * constant's bytes as their digest) and the view's inputs and outputs. It
 * is hashed from the graph's own structures: going through the view's JSON
 * text (jansson) took 2-3 ms for a small ViT, a whole compile's worth. A
 * subgraph with control-flow bodies is keyed by that text, which nests
 * them. */
pl_status *pl_cache_key_make(const pl_module *module, int32_t device,
                             const pl_graph_view *view, pl_cache_key *out_key)
{
    return pl_cache_key_make_named(module->name, module->api.version, device, view, out_key);
}

pl_status *pl_cache_key_make_named(const char *name, const char *name_version, int32_t device,
                                   const pl_graph_view *view, pl_cache_key *out_key)
{
    pl_hash2 h = {1469598103934665603ull, 0x6a09e667f3bcc909ull};
    const pl_graph_api *api = &pl_graph_view_table;
    const pl_graph *g = pl_graph_view_graph(view);
    pl_hash2_str(&h, name);
    pl_hash2_str(&h, name_version ? name_version : "");
    pl_hash2_bytes(&h, &device, sizeof device);
    if (pl_cache_view_has_bodies(view, g)) {
        const char *json = api->json(view);
        if (json == NULL)
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory keying a subgraph");
        pl_hash2_str(&h, json);
        for (size_t n = 0; n < api->node_count(view); n++)
            for (size_t i = 0; i < api->node_input_count(view, n); i++) {
                size_t bytes;
                int64_t t = api->node_input(view, n, i);
                uint64_t digest;
                if (t >= 0 && api->tensor_digest(view, t, &bytes, &digest)) {
                    pl_hash2_u64(&h, bytes); /* what pl_hash2_digest folds in */
                    pl_hash2_u64(&h, digest);
                }
            }
    } else {
        size_t nt = pl_graph_tensor_count(g);
        unsigned char *seen = pl_calloc(nt ? nt : 1, 1);
        if (seen == NULL)
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory keying a subgraph");
        for (size_t i = 0; i < pl_graph_opset_count(g); i++) {
            const char *domain;
            int64_t version;
            pl_graph_opset_at(g, i, &domain, &version);
            pl_hash2_str(&h, domain);
            pl_hash2_u64(&h, (uint64_t)version);
        }
        for (size_t n = 0; n < api->node_count(view); n++) {
            const pl_graph_node *node = pl_graph_get_node(g, pl_graph_view_node_id(view, n));
            pl_hash2_str(&h, node->name);
            pl_hash2_str(&h, node->op);
            pl_hash2_str(&h, node->domain);
            pl_hash2_u64(&h, node->n_attrs);
            for (size_t k = 0; k < node->n_attrs; k++)
                pl_hash2_attr(&h, &node->attrs[k]);
            pl_hash2_u64(&h, node->n_inputs);
            for (size_t k = 0; k < node->n_inputs; k++)
                pl_hash2_tensor(&h, g, node->inputs[k], seen);
            pl_hash2_u64(&h, node->n_outputs);
            for (size_t k = 0; k < node->n_outputs; k++)
                pl_hash2_tensor(&h, g, node->outputs[k], seen);
        }
        pl_hash2_u64(&h, api->input_count(view));
        for (size_t i = 0; i < api->input_count(view); i++)
            pl_hash2_tensor(&h, g, (pl_tid)api->input(view, i), seen);
        pl_hash2_u64(&h, api->output_count(view));
        for (size_t i = 0; i < api->output_count(view); i++)
            pl_hash2_tensor(&h, g, (pl_tid)api->output(view, i), seen);
        pl_free(seen);
    }
    snprintf(out_key->hex, sizeof out_key->hex, "%016llx%016llx", (unsigned long long)h.a,
             (unsigned long long)h.b);
    return NULL;
}

static void pl_cache_path(char *buf, size_t size, const char *dir, const pl_module *module,
                          const pl_cache_key *key, const char *suffix)
{
    snprintf(buf, size, "%s/%s-%s.blob%s", dir, module->name, key->hex, suffix);
}

pl_status *pl_cache_check_dir(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        if (errno != ENOENT)
            return pl_status_create(PL_CODE_IO_ERROR, "cache_dir %s: %s", dir, strerror(errno));
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            return pl_status_create(PL_CODE_IO_ERROR, "cache_dir %s: cannot create it: %s", dir,
                                    strerror(errno));
        if (stat(dir, &st) != 0)
            return pl_status_create(PL_CODE_IO_ERROR, "cache_dir %s: %s", dir, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "cache_dir %s is not a directory", dir);
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return pl_status_create(PL_CODE_PERMISSION_DENIED,
                                "cache_dir %s is writable by group or others (mode %04o); "
                                "compiled subgraphs are not cached there",
                                dir, (unsigned)(st.st_mode & 07777));
    return NULL;
}

pl_status *pl_cache_map(const char *dir, const pl_module *module, const pl_cache_key *key,
                        const void **out_blob, size_t *out_bytes)
{
    *out_blob = NULL;
    *out_bytes = 0;
    char path[4096];
    pl_cache_path(path, sizeof path, dir, module, key, "");
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return pl_status_create(errno == ENOENT ? PL_CODE_NOT_FOUND : PL_CODE_IO_ERROR,
                                "cache %s: %s", path, strerror(errno));
    struct stat st;
    pl_status *result = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0 ||
        (uint64_t)st.st_size > ((uint64_t)1 << 36)) {
        result = pl_status_create(PL_CODE_IO_ERROR, "cache %s: not a usable file", path);
    } else if (st.st_size == 0) {
        static const char empty[1];
        *out_blob = empty;
    } else {
        /* Mapped, not read: the module reads the blob once, straight from
         * the page cache, and no fresh pages are faulted in for a copy.
         * Entries are replaced by rename, never rewritten in place. */
        void *addr = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (addr == MAP_FAILED) {
            result = pl_status_create(PL_CODE_IO_ERROR, "cache %s: cannot map: %s", path,
                                      strerror(errno));
        } else {
            *out_blob = addr;
            *out_bytes = (size_t)st.st_size;
        }
    }
    close(fd);
    return result;
}

void pl_cache_unmap(const void *blob, size_t bytes)
{
    if (blob != NULL && bytes > 0)
        munmap((void *)blob, bytes);
}

pl_status *pl_cache_write_named(const char *dir, const char *name, const void *data,
                                size_t bytes)
{
    PL_RETURN_IF_ERROR(pl_cache_check_dir(dir));
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    /* Unique per write, not per process: two threads (two sessions of one
     * model) may store the same entry at once, and each must get its own
     * temporary file; the second rename simply replaces the first. */
    static _Atomic unsigned long serial;
    unsigned long n = atomic_fetch_add_explicit(&serial, 1, memory_order_relaxed);
    snprintf(tmp, sizeof tmp, "%s.%ld.%lu.tmp", path, (long)getpid(), n);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return pl_status_create(PL_CODE_IO_ERROR, "cache %s: %s", tmp, strerror(errno));
    size_t done = 0;
    while (done < bytes) {
        ssize_t w = write(fd, (const char *)data + done, bytes - done);
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    bool ok = done == bytes && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        int err = errno;
        unlink(tmp);
        return pl_status_create(PL_CODE_IO_ERROR, "cache %s: cannot write: %s", path,
                                strerror(err));
    }
    return NULL;
}

/* ---- a blob written as it is exported ------------------------------------ */

enum { PL_CACHE_WRITER_BUF = 1 << 20 };

struct pl_cache_writer {
    int fd;
    bool failed;
    int err;           /* errno of the first failure */
    uint64_t bytes;    /* written so far */
    size_t n;          /* staged in BUF */
    char buf[PL_CACHE_WRITER_BUF];
    char path[4096], tmp[4200];
};

/* Writes N bytes at P to W's file; false (W failed) when it refuses them. */
static bool pl_cache_writer_put(pl_cache_writer *w, const char *p, size_t n)
{
    size_t done = 0;
    while (!w->failed && done < n) {
        ssize_t got = write(w->fd, p + done, n - done);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            w->failed = true;
            w->err = got < 0 ? errno : ENOSPC;
        } else
            done += (size_t)got;
    }
    return !w->failed;
}

/* Writes what W has staged. */
static bool pl_cache_writer_flush(pl_cache_writer *w)
{
    bool ok = pl_cache_writer_put(w, w->buf, w->n);
    w->n = 0;
    return ok;
}

pl_status *pl_cache_writer_open(const char *dir, const pl_module *module,
                                const pl_cache_key *key, pl_cache_writer **out)
{
    *out = NULL;
    PL_RETURN_IF_ERROR(pl_cache_check_dir(dir));
    pl_cache_writer *w = pl_malloc(sizeof *w);
    if (w == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory writing to the cache");
    pl_cache_path(w->path, sizeof w->path, dir, module, key, "");
    static _Atomic unsigned long serial; /* as pl_cache_write_named's */
    unsigned long n = atomic_fetch_add_explicit(&serial, 1, memory_order_relaxed);
    snprintf(w->tmp, sizeof w->tmp, "%s.%ld.%lu.tmp", w->path, (long)getpid(), n);
    w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (w->fd < 0) {
        pl_status *st = pl_status_create(PL_CODE_IO_ERROR, "cache %s: %s", w->tmp,
                                         strerror(errno));
        pl_free(w);
        return st;
    }
    w->failed = false;
    w->err = 0;
    w->bytes = 0;
    w->n = 0;
    *out = w;
    return NULL;
}

void pl_cache_writer_sink(void *user, const void *bytes, size_t n)
{
    pl_cache_writer *w = user;
    w->bytes += n;
    if (w->n + n > PL_CACHE_WRITER_BUF) {
        pl_cache_writer_flush(w);
        if (n >= PL_CACHE_WRITER_BUF) { /* a big piece goes straight to the file */
            pl_cache_writer_put(w, bytes, n);
            return;
        }
    }
    if (!w->failed) {
        memcpy(w->buf + w->n, bytes, n);
        w->n += n;
    }
}

pl_status *pl_cache_writer_close(pl_cache_writer *w, bool ok, uint64_t *out_bytes)
{
    *out_bytes = 0;
    if (w == NULL)
        return NULL;
    ok = ok && pl_cache_writer_flush(w);
    int err = w->failed ? w->err : 0;
    if (close(w->fd) != 0 && ok) {
        ok = false;
        err = errno;
    }
    pl_status *st = NULL;
    if (ok && rename(w->tmp, w->path) != 0) {
        ok = false;
        err = errno;
    }
    if (!ok) {
        unlink(w->tmp);
        if (err != 0)
            st = pl_status_create(PL_CODE_IO_ERROR, "cache %s: cannot write: %s", w->path,
                                  strerror(err));
    } else
        *out_bytes = w->bytes;
    pl_free(w);
    return st;
}

pl_status *pl_cache_read_small(const char *dir, const char *name, char *buf, size_t size)
{
    buf[0] = '\0';
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return pl_status_create(errno == ENOENT ? PL_CODE_NOT_FOUND : PL_CODE_IO_ERROR,
                                "cache %s: %s", path, strerror(errno));
    size_t done = 0;
    while (done + 1 < size) {
        ssize_t r = read(fd, buf + done, size - 1 - done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        done += (size_t)r;
    }
    close(fd);
    buf[done] = '\0';
    return NULL;
}


/* ---- size, use and counters ---------------------------------------------- */

/* Sets the mtime of PATH to now, to the nanosecond. */
static void pl_cache_stamp(const char *path)
{
    struct timespec now[2];
    clock_gettime(CLOCK_REALTIME, &now[1]);
    now[0] = now[1];
    utimensat(AT_FDCWD, path, now, AT_SYMLINK_NOFOLLOW);
}

void pl_cache_touch(const char *dir, const pl_module *module, const pl_cache_key *key)
{
    char path[4096];
    pl_cache_path(path, sizeof path, dir, module, key, "");
    pl_cache_stamp(path);
}

void pl_cache_touch_named(const char *dir, const char *name)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    pl_cache_stamp(path);
}

static const char *const pl_cache_count_names[PL_CACHE_COUNTS] = {
    "hits", "misses", "stores", "evictions", "bytes_read", "bytes_written"};

/* Reads the counters from the open stats file FD (zeros for what is not
 * there). */
static void pl_cache_counts_parse(int fd, uint64_t *counts)
{
    char text[1024];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    for (int k = 0; k < PL_CACHE_COUNTS; k++) {
        counts[k] = 0;
        const char *at = text;
        size_t len = strlen(pl_cache_count_names[k]);
        while ((at = strstr(at, pl_cache_count_names[k])) != NULL) {
            bool line_start = at == text || at[-1] == '\n';
            if (line_start && at[len] == ' ') {
                counts[k] = strtoull(at + len + 1, NULL, 10);
                break;
            }
            at += len;
        }
    }
}

void pl_cache_count(const char *dir, const uint64_t *delta)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/stats", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return; /* counting is best effort: the cache works without it */
    if (flock(fd, LOCK_EX) == 0) {
        uint64_t counts[PL_CACHE_COUNTS];
        pl_cache_counts_parse(fd, counts);
        char text[1024];
        int len = snprintf(text, sizeof text, "plinth-cache-stats 1\n");
        for (int k = 0; k < PL_CACHE_COUNTS; k++)
            len += snprintf(text + len, sizeof text - (size_t)len, "%s %llu\n",
                            pl_cache_count_names[k],
                            (unsigned long long)(counts[k] + delta[k]));
        if (pwrite(fd, text, (size_t)len, 0) == len)
            (void)ftruncate(fd, len);
        flock(fd, LOCK_UN);
    }
    close(fd);
}

void pl_cache_read_counts(const char *dir, uint64_t *counts)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/stats", dir);
    for (int k = 0; k < PL_CACHE_COUNTS; k++)
        counts[k] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return;
    if (flock(fd, LOCK_SH) == 0) {
        pl_cache_counts_parse(fd, counts);
        flock(fd, LOCK_UN);
    }
    close(fd);
}

/* An entry of the folder: a regular file named *.blob. */
typedef struct pl_cache_file {
    char name[256];
    uint64_t bytes;
    int64_t used_ns;
} pl_cache_file;

static int pl_cache_file_cmp(const void *a, const void *b)
{
    const pl_cache_file *x = a, *y = b;
    if (x->used_ns != y->used_ns)
        return x->used_ns < y->used_ns ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* The entries of DIR, least recently used first (*OUT, pl_free). */
static pl_status *pl_cache_files(const char *dir, pl_cache_file **out, size_t *out_n)
{
    *out = NULL;
    *out_n = 0;
    DIR *d = opendir(dir);
    if (d == NULL)
        return errno == ENOENT ? NULL
                               : pl_status_create(PL_CODE_IO_ERROR, "cache_dir %s: %s", dir,
                                                  strerror(errno));
    pl_cache_file *files = NULL;
    size_t n = 0, cap = 0;
    pl_status *st = NULL;
    for (struct dirent *e; st == NULL && (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (len < 6 || len >= sizeof files->name || strcmp(e->d_name + len - 5, ".blob") != 0)
            continue;
        struct stat sb;
        if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode))
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            pl_cache_file *grown = pl_realloc(files, ncap * sizeof *grown);
            if (grown == NULL) {
                st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory listing the cache");
                break;
            }
            files = grown;
            cap = ncap;
        }
        snprintf(files[n].name, sizeof files[n].name, "%s", e->d_name);
        files[n].bytes = (uint64_t)sb.st_size;
        files[n].used_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
        n++;
    }
    closedir(d);
    if (st != NULL) {
        pl_free(files);
        return st;
    }
    if (n > 1)
        qsort(files, n, sizeof *files, pl_cache_file_cmp);
    *out = files;
    *out_n = n;
    return NULL;
}

void pl_cache_limit(const char *dir, uint64_t max_bytes, const pl_module *module,
                    const pl_cache_key *keep)
{
    char kept[512];
    snprintf(kept, sizeof kept, "%s-%s.blob", module->name, keep->hex);
    pl_cache_limit_named(dir, max_bytes, kept);
}

void pl_cache_limit_named(const char *dir, uint64_t max_bytes, const char *kept)
{
    if (max_bytes == 0)
        return;
    pl_cache_file *files = NULL;
    size_t n = 0;
    pl_status *st = pl_cache_files(dir, &files, &n);
    if (st != NULL) {
        pl_status_free(st);
        return;
    }
    uint64_t total = 0, removed = 0;
    for (size_t i = 0; i < n; i++)
        total += files[i].bytes;
    for (size_t i = 0; i < n && total > max_bytes; i++) {
        if (strcmp(files[i].name, kept) == 0)
            continue;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
        if (unlink(path) == 0) {
            total -= files[i].bytes;
            removed++;
        }
    }
    pl_free(files);
    if (removed > 0) {
        uint64_t delta[PL_CACHE_COUNTS] = {0};
        delta[PL_CACHE_EVICTIONS] = removed;
        pl_cache_count(dir, delta);
    }
}

pl_status *pl_cache_scan(const char *dir, void (*fn)(void *, const char *, uint64_t, int64_t),
                         void *user, uint64_t *out_entries, uint64_t *out_bytes)
{
    pl_cache_file *files = NULL;
    size_t n = 0;
    PL_RETURN_IF_ERROR(pl_cache_files(dir, &files, &n));
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        bytes += files[i].bytes;
        if (fn != NULL)
            fn(user, files[i].name, files[i].bytes, files[i].used_ns);
    }
    pl_free(files);
    if (out_entries)
        *out_entries = n;
    if (out_bytes)
        *out_bytes = bytes;
    return NULL;
}

pl_status *pl_cache_clear(const char *dir, uint64_t *out_removed)
{
    *out_removed = 0;
    DIR *d = opendir(dir);
    if (d == NULL)
        return errno == ENOENT ? NULL
                               : pl_status_create(PL_CODE_IO_ERROR, "cache_dir %s: %s", dir,
                                                  strerror(errno));
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        bool blob = len > 5 && strcmp(e->d_name + len - 5, ".blob") == 0;
        bool ours = blob || (len > 6 && strcmp(e->d_name + len - 6, ".probe") == 0) ||
                    (len > 4 && strcmp(e->d_name + len - 4, ".tmp") == 0) ||
                    strcmp(e->d_name, "stats") == 0;
        if (ours && unlinkat(dirfd(d), e->d_name, 0) == 0 && blob)
            (*out_removed)++;
    }
    closedir(d);
    return NULL;
}
