/* cache.c — the compiled-subgraph cache. A session asks a module that can
 * export (PL_CAP_EXPORT) to import the blob stored under the subgraph's key
 * before compiling; after a compile it stores the module's export. The key
 * covers everything that makes a compiled subgraph different: module name
 * and version, device, the subgraph's JSON (ops, attributes, shapes,
 * dtypes) and its constants' bytes. What the module depends on beyond that
 * (its library's version, the CPU's ISA) it checks in its own blob header,
 * refusing a blob that does not match — so a stale entry costs one compile,
 * never a wrong result. */
#include "cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <plinth/graph_hash.h>

#include "alloc.h"
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

pl_status *pl_cache_key_make(const pl_module *module, int32_t device,
                             const pl_graph_view *view, pl_cache_key *out_key)
{
    pl_hash2 h = {1469598103934665603ull, 0x6a09e667f3bcc909ull};
    const pl_graph_api *api = &pl_graph_view_table;
    pl_hash2_str(&h, module->name);
    pl_hash2_str(&h, module->api.version ? module->api.version : "");
    pl_hash2_bytes(&h, &device, sizeof device);
    const char *json = api->json(view);
    if (json == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory keying a subgraph");
    pl_hash2_str(&h, json);
    /* The constants the subgraph's nodes read, in node order. */
    for (size_t n = 0; n < api->node_count(view); n++) {
        for (size_t i = 0; i < api->node_input_count(view, n); i++) {
            const void *data;
            size_t bytes;
            int64_t t = api->node_input(view, n, i);
            if (t >= 0 && api->tensor_constant(view, t, &data, &bytes)) {
                /* The bytes go through the SDK's four-lane hash (three
                 * times faster over megabytes of weights); its digest
                 * joins the key. */
                uint64_t digest = PL_HASH_SEED;
                pl_hash_bytes(&digest, data, bytes);
                pl_hash2_bytes(&h, &bytes, sizeof bytes);
                pl_hash2_bytes(&h, &digest, sizeof digest);
            }
        }
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

pl_status *pl_cache_write(const char *dir, const pl_module *module, const pl_cache_key *key,
                          const void *blob, size_t bytes)
{
    PL_RETURN_IF_ERROR(pl_cache_check_dir(dir));
    char path[4096], tmp[4200];
    pl_cache_path(path, sizeof path, dir, module, key, "");
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return pl_status_create(PL_CODE_IO_ERROR, "cache %s: %s", tmp, strerror(errno));
    size_t done = 0;
    while (done < bytes) {
        ssize_t w = write(fd, (const char *)blob + done, bytes - done);
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
