/* cache.h — compiled subgraphs kept on disk between runs of a program, so
 * that a second start skips compilation (ARCHITECTURE.md, "cache"). */
#ifndef PL_CORE_CACHE_H
#define PL_CORE_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"
#include "graph_view.h"
#include "registry.h"

/* The key of one compiled subgraph: module name and version, device, and
 * the subgraph itself (its JSON text with every shape and attribute, and
 * the bytes of the constants it reads). Two 64-bit hashes, hex. */
typedef struct pl_cache_key {
    char hex[33];
} pl_cache_key;

pl_status *pl_cache_key_make(const pl_module *module, int32_t device,
                             const pl_graph_view *view, pl_cache_key *out_key);
/* The same key for what is not one module's compile (NAME and VERSION in
 * its place: constant folding keys its results with the modules loaded). */
pl_status *pl_cache_key_make_named(const char *name, const char *version, int32_t device,
                                   const pl_graph_view *view, pl_cache_key *out_key);

/* Maps the blob of KEY for MODULE from DIR read-only into *OUT_BLOB
 * (*OUT_BYTES bytes); the caller releases it with pl_cache_unmap. NOT_FOUND
 * when there is none. */
pl_status *pl_cache_map(const char *dir, const pl_module *module, const pl_cache_key *key,
                        const void **out_blob, size_t *out_bytes);
void pl_cache_unmap(const void *blob, size_t bytes);

/* A blob written as a module exports it (export_compiled's sink), never
 * held whole in memory: VGG-19's 733 MB compile was a buffer grown to 1 GB
 * before a single write. Open, feed pl_cache_writer_sink (a pl_blob_sink
 * with the writer as its user), then close: with OK the file goes in place
 * (*OUT_BYTES written), else it is removed; an error when the folder
 * refused a write. */
typedef struct pl_cache_writer pl_cache_writer;
pl_status *pl_cache_writer_open(const char *dir, const pl_module *module,
                                const pl_cache_key *key, pl_cache_writer **out);
void pl_cache_writer_sink(void *user, const void *bytes, size_t n);
pl_status *pl_cache_writer_close(pl_cache_writer *w, bool ok, uint64_t *out_bytes);
/* Writes the file NAME in DIR atomically (a temporary file, then rename;
 * DIR made if missing): the probe's verdicts. */
pl_status *pl_cache_write_named(const char *dir, const char *name, const void *data,
                                size_t bytes);
/* Reads at most SIZE - 1 bytes of the file NAME in DIR into BUF and
 * terminates it; NOT_FOUND when there is no such file. */
pl_status *pl_cache_read_small(const char *dir, const char *name, char *buf, size_t size);

/* Whether DIR may be used: it exists or can be made, and is not writable
 * by group or others (a blob planted there would be handed to a module). */
pl_status *pl_cache_check_dir(const char *dir);

/* The counters a folder keeps in its `stats` file, in this order. */
enum {
    PL_CACHE_HITS, PL_CACHE_MISSES, PL_CACHE_STORES, PL_CACHE_EVICTIONS,
    PL_CACHE_BYTES_READ, PL_CACHE_BYTES_WRITTEN, PL_CACHE_COUNTS
};
/* Adds DELTA (PL_CACHE_COUNTS values) to DIR's counters, under an flock;
 * best effort (a folder that refuses the file loses the counts). */
void pl_cache_count(const char *dir, const uint64_t *delta);
/* DIR's counters (zeros where there are none). */
void pl_cache_read_counts(const char *dir, uint64_t *counts);

/* Marks KEY's entry as used now (eviction removes the least recently used). */
void pl_cache_touch(const char *dir, const pl_module *module, const pl_cache_key *key);
/* The same for the entry named NAME in DIR (a model's constants, filedata.h). */
void pl_cache_touch_named(const char *dir, const char *name);
/* Removes the least recently used entries of DIR, never KEEP's, until the
 * entries total at most MAX_BYTES (0: no limit); counts the evictions. */
void pl_cache_limit(const char *dir, uint64_t max_bytes, const pl_module *module,
                    const pl_cache_key *keep);
/* The same, keeping the entry named KEPT. */
void pl_cache_limit_named(const char *dir, uint64_t max_bytes, const char *kept);
/* Calls FN (may be NULL) for each entry of DIR, least recently used first:
 * file name, bytes, last use in ns since the epoch; totals in *OUT_ENTRIES
 * and *OUT_BYTES. A missing folder is empty. */
pl_status *pl_cache_scan(const char *dir, void (*fn)(void *, const char *, uint64_t, int64_t),
                         void *user, uint64_t *out_entries, uint64_t *out_bytes);
/* Removes every entry, probe verdict and temporary file and the counters
 * of DIR; *OUT_REMOVED counts the entries. */
pl_status *pl_cache_clear(const char *dir, uint64_t *out_removed);

#endif
