/* filedata.h — constants the core copied out of the model file itself
 * (the graph builder's builder_constant_model_file: an ONNX initializer's
 * raw_data, say), which the core may drop and read again.
 *
 * A symbolic module that declares PL_CAP_OWNS_CONSTANTS keeps its own copy
 * of every constant it compiles (in its own layout: blocked, packed,
 * uploaded). Once every reader of a constant is such a module, the core's
 * copy is dead weight: the model's weights would stay resident twice. So
 * the core drops its copy (the pages go back to the system, the address
 * stays) and reads the bytes again from the file before anything else
 * needs them: at the start of every session creation, of a save, and when
 * a module asks for a dropped constant through the view.
 *
 * The bookkeeping, all under one lock:
 *   - users: session creations (and saves) in progress; they see every
 *     constant resident (acquire reads the dropped ones back), or, a
 *     part of the model's creation, every constant its graph reads, and a
 *     weighing at run time what it asks for (pl_filedata_need);
 *   - pins: live sessions whose steps read a constant in place at run time
 *     (kernels of imperative modules, symbolic modules without the
 *     capability, copies, graph outputs); a pinned constant stays;
 *   - when the last user leaves, every constant nobody pins is dropped.
 * During a session creation with no other user, a module may say it is
 * done with a constant (pl_graph_api.tensor_constant_done); the core drops
 * it at once when that session marked it as read by that one compiled
 * subgraph and nothing else, so that compiling one big subgraph does not
 * hold two copies of every weight at its end.
 *
 * Reading again checks the file: a model file rewritten in place since the
 * load (another size or modification time) is refused by name rather than
 * read. A file replaced by a new one (rename) is still the old one here:
 * the core keeps it open. */
#ifndef PL_CORE_FILEDATA_H
#define PL_CORE_FILEDATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "plinth/plinth.h"

typedef struct pl_filedata pl_filedata;

/* Constants smaller than this are never dropped (their pages are shared
 * with neighbours' and the bookkeeping would cost more than they do). */
#define PL_FILEDATA_MIN_BYTES ((size_t)64 << 10)

/* Opens PATH (the model file) for reading constants out of it. */
pl_status *pl_filedata_create(const char *path, pl_filedata **out);
void pl_filedata_destroy(pl_filedata *f);

/* The file's size in bytes. */
uint64_t pl_filedata_size(const pl_filedata *f);

/* Reads BYTES at OFFSET of the file into DST; NAME (the constant) for
 * messages. */
pl_status *pl_filedata_read(pl_filedata *f, uint64_t offset, size_t bytes, void *dst,
                            const char *name);

/* Records that ADDR holds BYTES read from OFFSET, for constant NAME: the
 * core may drop and read them again. Constants under PL_FILEDATA_MIN_BYTES
 * are not recorded. */
pl_status *pl_filedata_track(pl_filedata *f, void *addr, size_t bytes, uint64_t offset,
                             const char *name);

/* Records, like pl_filedata_track, a constant of another file's read-only
 * mapping (ONNX external data), never read from the model file nor kept in
 * the cache's copy: SRC NULL, ADDR lies in the mapping, and dropping it
 * unmaps its pages, which the mapping gives back on the next touch; else
 * ADDR is the core's aligned copy of SRC (in the mapping), dropped like a
 * model file's constant and copied from SRC again to restore. FILE (the
 * data file's identity, may be NULL), BASE (its mapping) and OFFSET (in
 * it) find the constant's digest in what a cached load kept
 * (pl_filedata_store_digests). */
pl_status *pl_filedata_track_mapped(pl_filedata *f, void *addr, size_t bytes, const void *src,
                                    const char *name, const struct stat *file,
                                    const void *base, uint64_t offset);

/* Where the cache folder keeps, aligned, the BYTES at OFFSET of external
 * data file FILE (mapped at BASE; a constant at an unaligned offset), from
 * pl_filedata_store_digests at an earlier load; NULL: nowhere. The pages
 * are a private mapping of the cache's file, valid while F lives; record
 * the constant there with pl_filedata_track_mapped (SRC NULL). */
const void *pl_filedata_ext_kept(pl_filedata *f, const struct stat *file, const void *base,
                                 uint64_t offset, size_t bytes);
/* Lets the pages of a read-only private file mapping holding ADDR..+BYTES
 * go (a touch brings them back). */
void pl_fd_unmap_pages(const void *addr, size_t bytes);

/* The number of constants recorded, and the recorded one holding the byte
 * at ADDR (-1: none). */
size_t pl_filedata_count(const pl_filedata *f);
long pl_filedata_find(const pl_filedata *f, const void *addr);

/* A session creation (or save) starts: every dropped constant is read back.
 * Always pair with pl_filedata_leave, also after a failure. */
pl_status *pl_filedata_enter(pl_filedata *f);

/* The same for a session of a graph that is part of the model (a staged
 * session's prefix or tail, a control-flow body, what folding runs): only
 * the dropped constants that NEED marks (one per recorded constant: those
 * the part's graph reads) are read back. A staged session's tail, made at
 * its first run of a shape, read back every weight of the model's
 * backbone otherwise, to drop them again when it was made: RetinaNet's
 * first run peaked 130 MB above its later ones. */
pl_status *pl_filedata_enter_only(pl_filedata *f, const bool *need);

/* A use of the constants outside a creation that reads back only what it
 * asks for (pl_filedata_need: a module weighing a node at run time), to be
 * dropped at pl_filedata_leave: the measured check weighed each slow node
 * of RetinaNet's backbone at its tenth run, and the weights that brought
 * back (121 MB) stayed resident for the session's life. */
pl_status *pl_filedata_enter_lazy(pl_filedata *f);

/* The model's graph was rewritten: USED (one per recorded constant) marks
 * those its tensors read. The others (weights a rewrite replaced: a Conv
 * cut to its taps, a BatchNormalization folded in) are dropped now and no
 * longer read back by pl_filedata_enter or pl_filedata_reread (a module
 * asking for one through a view still gets it). */
void pl_filedata_mark_used(pl_filedata *f, const bool *used);

/* During a creation: reads every dropped constant back (a compile failed
 * and other backends are offered its nodes). */
pl_status *pl_filedata_reread(pl_filedata *f);

/* It ends. PINNED (N entries, indices of recorded constants, or NULL) are
 * what the new session reads in place at run time: they stay (and are read
 * back if a compile dropped them). When no other creation is in progress,
 * every constant nobody pins is dropped. Fails only when reading a pinned
 * constant back fails. */
pl_status *pl_filedata_leave(pl_filedata *f, const uint32_t *pinned, size_t n);

/* The same, but nothing is dropped now: the next creation, alone, drops
 * what it does not pin when it ends (a staged session hands over to its
 * prefix's creation this way). */
pl_status *pl_filedata_leave_keep(pl_filedata *f, const uint32_t *pinned, size_t n);

/* A session that pinned PINNED is gone. */
void pl_filedata_unpin(pl_filedata *f, const uint32_t *pinned, size_t n);

/* While one session is being created, alone: DROPPABLE (one per recorded
 * constant, or NULL to end) marks the constants a module may drop at once
 * with pl_filedata_done, and OWNER the graph its views show; KEPT (as
 * many) receives the ones a compiled subgraph reads in place
 * (pl_filedata_keep), which the session then pins. */
void pl_filedata_set_compiling(pl_filedata *f, const void *owner, bool *droppable, bool *kept);

/* A module's compiled subgraph (through a view of OWNER) will read the
 * constant at ADDR in place for the session's life (pl_graph_api's
 * tensor_constant_keep): true when that holds, the constant then marked
 * kept, no longer droppable, and resident; true also for a constant not
 * recorded here (the graph holds it for good); false when no session is
 * being created alone from OWNER. */
bool pl_filedata_keep(pl_filedata *f, const void *owner, const void *addr);

/* A module is done with the constant at ADDR (through a view of OWNER):
 * dropped when it is marked droppable for the session being created. */
void pl_filedata_done(pl_filedata *f, const void *owner, const void *addr);

/* Makes sure the recorded constant holding ADDR is resident (a module asks
 * for it again after saying it was done). */
pl_status *pl_filedata_need(pl_filedata *f, const void *addr);

/* ---- the model's constants kept in the compile cache ---------------------
 *
 * With a cache folder, the first load of a model file writes its big
 * constants (those recorded here) into the folder as one file,
 * "model-<key>.blob", each at a page boundary, with a digest of each
 * (pl_hash_bytes from PL_HASH_SEED, the digest the cache keys use). The
 * key names the model file by its path, device, inode, size and
 * modification time. Later loads map that file (private, never written)
 * and point those constants into it instead of reading them out of the
 * model file: their pages are the page cache's, not fresh memory (about
 * 1 ms per MB on the machines measured), and pages nobody reads are never
 * touched. The file's digests are checked when it is opened (read through
 * a small buffer); a copy that does not match is not used, and rewritten.
 * Dropping such a constant unmaps its pages; reading it again is a page
 * fault, never a read of the model file. */

/* Opens the copy for F's model file in DIR (checked by the caller) when
 * there is a valid one: its file name in DIR then (the caller marks it
 * used), else NULL. */
const char *pl_filedata_open_copy(pl_filedata *f, const char *dir);

/* How the cache folder's bookkeeping (cache.h) hears of the digest memos
 * (pl_filedata_store_digests): TOUCH marks an entry used, LIMIT evicts down
 * to a size keeping one. Set before pl_filedata_open_copy. */
typedef struct pl_filedata_cache_hooks {
    void (*touch)(const char *dir, const char *name);
    void (*limit)(const char *dir, uint64_t max_bytes, const char *kept);
} pl_filedata_cache_hooks;
void pl_filedata_set_cache_hooks(pl_filedata *f, pl_filedata_cache_hooks hooks);

/* The copy's bytes for the constant at OFFSET of BYTES (NULL: none), and
 * their digest. */
void *pl_filedata_copy_lookup(pl_filedata *f, uint64_t offset, size_t bytes,
                              uint64_t *out_digest);

/* Records, like pl_filedata_track, a constant at ADDR inside the copy. */
pl_status *pl_filedata_track_copy(pl_filedata *f, void *addr, size_t bytes, uint64_t offset,
                                  uint64_t digest, const char *name);

/* After a load: writes the copy into the folder given to
 * pl_filedata_open_copy when some recorded constant was read from the
 * model file (best effort: a folder that refuses it costs nothing but the
 * next load's reads), and fills in the digests of the recorded constants.
 * Its file name in the folder when written, else NULL. */
const char *pl_filedata_store_copy(pl_filedata *f);

/* The digest of the recorded constant that starts at ADDR and is BYTES
 * long, when known (from the copy); false otherwise. */
bool pl_filedata_digest(pl_filedata *f, const void *addr, size_t bytes, uint64_t *out);
/* Remembers DIGEST (pl_hash_bytes from PL_HASH_SEED) of the recorded
 * constant at ADDR of BYTES, computed by a caller from its bytes, so that
 * pl_filedata_digest knows it from then on: a module that asks a
 * constant's digest for every plan of a staged tail (the cpu module's
 * shared packed weights) hashes it once. No-op for anything else. */
void pl_filedata_set_digest(pl_filedata *f, const void *addr, size_t bytes, uint64_t digest);

/* The bytes of recorded constant I. */
size_t pl_filedata_entry_bytes(const pl_filedata *f, uint32_t i);

/* With a cache folder (pl_filedata_open_copy): the digests of the external
 * data constants recorded with their file, computed now where what was kept
 * at an earlier load had none, and kept in the folder with the bytes of
 * those at unaligned offsets (one entry per data file, within
 * CACHE_MAX_BYTES), so that the next load of the same files hashes no
 * weight for the cache keys or pl_graph_api.tensor_digest, and copies none
 * (pl_filedata_ext_kept). */
void pl_filedata_store_digests(pl_filedata *f, uint64_t cache_max_bytes);

/* Bytes of recorded constants resident now, and dropped now; and (unless
 * OUT_READ_BACK is NULL) the bytes read or copied again since the load,
 * after a drop: what dropping has cost in reads. */
void pl_filedata_stats(pl_filedata *f, size_t *out_resident, size_t *out_dropped,
                       uint64_t *out_read_back);

/* ---- constants the core made, kept in the cache folder ------------------
 *
 * Constant folding (fold.c) makes constants no file holds: f16 weights cast
 * to f32, weights a ConstantOfShape fills, a Transpose or DequantizeLinear
 * of them. Held in the core's memory they could never be dropped (nothing
 * to read them again from), stayed resident beside every module's own copy,
 * and every load computed them again. With a cache folder the folding
 * session writes its results straight into a file of the folder,
 * "fold-<key>.blob" (KEY: the compile cache's key of the folded nodes, with
 * their constants' digests and the modules loaded), mapped shared while it
 * runs and privately after; the big ones are recorded here like the copy's
 * constants: dropped by letting their pages go (the file keeps them: the
 * system writes them back), back on a touch. A later load with the same key
 * checks the file's digests, maps it, and runs nothing. */

/* Places the N results of the folding keyed KEY (BYTES[i] each, NAMES[i]
 * for messages) in the cache folder: *OUT[i] where result I lies. With
 * *OUT_MADE the folder had them from an earlier load (checked, recorded,
 * read-only); else a new file, at most MAX_BYTES (0: no limit), that the
 * caller's run fills in place and hands to pl_filedata_made_end. False,
 * with nothing done, without a cache folder or when the folder refuses the
 * file (no space, over its limit), or while a session or a session's
 * creation holds F's constants (recording moves their indices): the
 * caller makes them in memory. */
bool pl_filedata_made_open(pl_filedata *f, const char *key, size_t n, const size_t *bytes,
                           const char *const *names, uint64_t max_bytes, void **out,
                           bool *out_made);

/* The run filled the new file (OK) or failed. When OK and the file is in
 * place, its big results are recorded, *OUT[i] says where each lies now
 * (moved to the private mapping) and it returns true; otherwise the file
 * is removed and the space pl_filedata_made_open gave is gone. */
bool pl_filedata_made_end(pl_filedata *f, bool ok, void **out);

/* The cache folder F keeps its copy and made constants in (NULL: none). */
const char *pl_filedata_cache_dir(const pl_filedata *f);

#endif
