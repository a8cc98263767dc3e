/* graph_builder.c — the graph builder a format module fills during
 * import_model. Each call maps onto graph.h, which checks names, types and
 * sizes; data files (ONNX external data, the sidecar of Plinth's JSON
 * format) go through datafile.c, which keeps the model from reading outside
 * its folder: the one confinement rule for every format. A file named by
 * several constants is mapped once. A body (a GRAPH attribute) gets a builder of its own, owned by the
 * model's builder, that shares its folder and its mapped files. */
#include "graph_builder.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "alloc.h"
#include "cache.h"
#include "datafile.h"
#include "filedata.h"
#include "status.h"
#include "strtab.h"
#include "threadpool.h"

typedef struct pl_builder_file {
    char *location;
    void *addr;
    size_t size;
    struct stat st; /* the file mapped: its digests' memo is keyed by it */
} pl_builder_file;

struct pl_graph_builder {
    pl_graph *g;
    pl_graph_builder *root;     /* the model's builder (itself for the model) */
    char *model_dir;
    pl_builder_file *files;     /* the root's */
    size_t n_files;
    pl_graph_builder **bodies;  /* the root's: every body builder made */
    size_t n_bodies;
    char *path;                 /* the root's: the model file */
    pl_filedata *filedata;      /* the root's: opened on first use, then the graph's */
    char *cache_dir;            /* the root's: where the model's constants are kept */
    bool defer_reads;           /* the root's: constants read by pl_graph_builder_read_constants */
    struct pl_builder_read *reads; /* the root's deferred reads */
    size_t n_reads, cap_reads;
};

/* A constant of the model file to read into the graph's copy. */
typedef struct pl_builder_read {
    char *dst;
    uint64_t offset;
    size_t len;
    pl_tid t;
} pl_builder_read;

pl_status *pl_graph_builder_create(pl_graph *g, const char *path,
                                   pl_graph_builder **out_builder)
{
    *out_builder = NULL;
    pl_allocator alloc = pl_graph_allocator(g);
    pl_graph_builder *b = pl_alloc_calloc(alloc, 1, sizeof *b);
    if (b == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    b->g = g;
    b->root = b;
    const char *slash = strrchr(path, '/');
    b->model_dir = slash ? pl_alloc_strndup(alloc, path,
                                            slash == path ? 1 : (size_t)(slash - path))
                         : pl_alloc_strdup(alloc, ".");
    b->path = pl_alloc_strdup(alloc, path);
    if (b->model_dir == NULL || b->path == NULL) {
        pl_free(b->model_dir);
        pl_free(b->path);
        pl_free(b);
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    }
    *out_builder = b;
    return NULL;
}

void pl_graph_builder_destroy(pl_graph_builder *b)
{
    if (b == NULL)
        return;
    for (size_t i = 0; i < b->n_bodies; i++)
        pl_free(b->bodies[i]);
    pl_free(b->bodies);
    for (size_t i = 0; i < b->n_files; i++)
        pl_free(b->files[i].location);
    pl_free(b->files);
    pl_free(b->reads);
    pl_free(b->model_dir);
    pl_free(b->path);
    pl_free(b->cache_dir);
    pl_free(b);
}

void pl_graph_builder_set_cache_dir(pl_graph_builder *b, const char *dir)
{
    if (b == NULL || b->root != b || dir == NULL || dir[0] == '\0' || b->cache_dir != NULL)
        return;
    pl_status *st = pl_cache_check_dir(dir);
    if (st != NULL) { /* the compile cache reports an unusable folder */
        pl_status_free(st);
        return;
    }
    b->cache_dir = pl_xstrdup(dir); /* out of memory: no copy, that is all */
}

const char *pl_builder_model_dir(pl_graph_builder *b)
{
    return b ? b->root->model_dir : NULL;
}

pl_status *pl_builder_opset(pl_graph_builder *b, const char *domain, int64_t version)
{
    if (b->root != b)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "opset import of domain '%s' in a body: a body speaks its "
                                "model's opsets",
                                domain ? domain : "");
    if (version < 1)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "opset import of domain '%s' has version %lld; versions "
                                "start at 1",
                                domain ? domain : "", (long long)version);
    return pl_graph_set_opset(b->g, domain, version);
}

static pl_status *pl_builder_typed(pl_graph_builder *b, const char *name, pl_dtype dtype,
                                   int32_t ndim, const int64_t *dims,
                                   const char *const *dim_params, pl_tid *out)
{
    PL_RETURN_IF_ERROR(pl_graph_tensor_get_or_add(b->g, name, out));
    return pl_graph_set_type(b->g, *out, dtype, ndim, dims, dim_params);
}

/* Whether DTYPE is a string tensor's (strtab.h): then, for tensor NAME
 * of B, *err says why it cannot be one, or nothing. */
static bool pl_builder_is_string(const pl_graph_builder *b, pl_dtype dtype, const char *name,
                                 pl_status **err)
{
    *err = NULL;
    if (dtype.code != PL_TYPE_STRING || dtype.lanes == 0)
        return false;
    if (b->root != b)
        *err = pl_status_create(PL_CODE_UNSUPPORTED,
                                "tensor '%s': a string tensor inside a control-flow body "
                                "(If, Loop, Scan); Plinth carries strings only in the main "
                                "graph",
                                name ? name : "");
    else if (pl_dtype_size(dtype) == 0)
        *err = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "tensor '%s': a string dtype of %u bits (elements are "
                                "const char *)",
                                name ? name : "", dtype.bits);
    return true;
}

/* The ids (strtab.h) of the COUNT strings at DATA (const char *, each
 * NUL-terminated; NULL reads as ""), interned in B's model's table, into a
 * new block *OUT the caller frees. WHAT names them in messages. */
static pl_status *pl_builder_string_ids(pl_graph_builder *b, const char *what, int32_t ndim,
                                        const int64_t *dims, const void *data, size_t nbytes,
                                        int64_t **out)
{
    *out = NULL;
    size_t count;
    if (ndim < 0 || ndim > PL_GRAPH_MAX_RANK || (ndim > 0 && dims == NULL) ||
        !pl_dims_elements(dims, ndim, &count))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "%s: bad shape of rank %d", what,
                                (int)ndim);
    if (count > nbytes / sizeof(const char *) || nbytes != count * sizeof(const char *))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "%s: %zu bytes given for %zu strings (a const char * each)",
                                what, nbytes, count);
    pl_strtab *tab = pl_graph_strtab_make(b->root->g);
    int64_t *ids = pl_malloc((count ? count : 1) * sizeof *ids);
    if (tab == NULL || ids == NULL) {
        pl_free(ids);
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory for %s", what);
    }
    const char *const *strs = data;
    for (size_t i = 0; i < count; i++) {
        const char *s = strs[i] ? strs[i] : "";
        ids[i] = pl_strtab_intern(tab, s, strlen(s));
        if (ids[i] < 0) {
            pl_free(ids);
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory for %s", what);
        }
    }
    *out = ids;
    return NULL;
}

pl_status *pl_builder_tensor(pl_graph_builder *b, const char *name, pl_dtype dtype,
                             int32_t ndim, const int64_t *dims,
                             const char *const *dim_params)
{
    pl_status *err;
    bool is_string = pl_builder_is_string(b, dtype, name, &err);
    PL_RETURN_IF_ERROR(err);
    pl_tid t;
    PL_RETURN_IF_ERROR(pl_graph_tensor_get_or_add(b->g, name, &t));
    pl_graph_tensor *gt = pl_graph_get_tensor_mut(b->g, t);
    gt->is_string = gt->is_string || is_string;
    if (gt->data != NULL)
        return NULL; /* a constant's type is its data's */
    return pl_graph_set_type(b->g, t, is_string ? PL_DTYPE_I64 : dtype, ndim, dims,
                             dim_params);
}

pl_status *pl_builder_constant(pl_graph_builder *b, const char *name, pl_dtype dtype,
                               int32_t ndim, const int64_t *dims, const void *data,
                               size_t nbytes)
{
    pl_status *err;
    bool is_string = pl_builder_is_string(b, dtype, name, &err);
    PL_RETURN_IF_ERROR(err);
    int64_t *ids = NULL;
    if (is_string) {
        char what[160];
        snprintf(what, sizeof what, "constant '%s'", name ? name : "");
        PL_RETURN_IF_ERROR(pl_builder_string_ids(b, what, ndim, dims, data, nbytes, &ids));
        dtype = PL_DTYPE_I64;
        data = ids;
        nbytes = nbytes / sizeof(const char *) * sizeof *ids;
    }
    pl_tid t;
    pl_status *st = pl_builder_typed(b, name, dtype, ndim, dims, NULL, &t);
    if (st == NULL)
        st = pl_graph_set_constant(b->g, t, data, nbytes);
    if (st == NULL && is_string)
        pl_graph_get_tensor_mut(b->g, t)->is_string = true;
    pl_free(ids);
    return st;
}

/* The mapping of LOCATION (relative to the model's folder), made through
 * datafile.c's confinement rule on first use and kept by the model's graph;
 * WHAT names the file in messages. */
static pl_status *pl_builder_map(pl_graph_builder *b, const char *location,
                                 const char *what, pl_builder_file **out)
{
    *out = NULL;
    b = b->root; /* files are mapped once per model, and kept by its graph */
    for (size_t i = 0; i < b->n_files; i++)
        if (strcmp(b->files[i].location, location) == 0) {
            *out = &b->files[i];
            return NULL;
        }
    void *addr = NULL;
    size_t size = 0;
    struct stat fst;
    PL_RETURN_IF_ERROR(pl_datafile_map(b->model_dir, location, what, &addr, &size, &fst));
    pl_allocator alloc = pl_graph_allocator(b->g);
    pl_builder_file *grown =
        pl_alloc_realloc(alloc, b->files, (b->n_files + 1) * sizeof *grown);
    if (grown != NULL) /* the old block is gone once realloc succeeds */
        b->files = grown;
    char *loc = pl_alloc_strdup(alloc, location);
    pl_status *st = NULL;
    if (grown == NULL || loc == NULL)
        st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    if (st == NULL && addr != NULL)
        st = pl_graph_keep_mapping(b->g, addr, size);
    if (st != NULL) {
        pl_free(loc);
        if (addr != NULL)
            munmap(addr, size);
        return st;
    }
    pl_builder_file *f = &b->files[b->n_files++];
    f->location = loc;
    f->addr = addr;
    f->size = size;
    f->st = fst;
    *out = f;
    return NULL;
}

pl_status *pl_builder_data_file(pl_graph_builder *b, const char *location,
                                const char *what, uint64_t *out_size)
{
    if (out_size != NULL)
        *out_size = 0;
    if (b == NULL || location == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "builder_data_file: NULL builder or location");
    pl_builder_file *f;
    PL_RETURN_IF_ERROR(
        pl_builder_map(b, location, what && what[0] ? what : "data file", &f));
    if (out_size != NULL)
        *out_size = f->size;
    return NULL;
}

/* True when tensor T of G already has exactly this dtype and shape. */
static bool pl_builder_same_type(const pl_graph *g, pl_tid t, pl_dtype dtype,
                                 int32_t ndim, const int64_t *dims)
{
    const pl_graph_tensor *gt = pl_graph_get_tensor(g, t);
    if (!PL_DTYPE_EQ(gt->dtype, dtype) || gt->ndim != ndim)
        return false;
    for (int32_t i = 0; i < ndim; i++)
        if (gt->dims[i] != dims[i])
            return false;
    return true;
}

/* ROOT's record of the model file's constants (filedata.h), made on first
 * use. The graph owns it from the start, so that it outlives the builder
 * and goes with a graph that fails to load. */
static pl_status *pl_builder_filedata(pl_graph_builder *root)
{
    if (root->filedata != NULL)
        return NULL;
    PL_RETURN_IF_ERROR(pl_filedata_create(root->path, &root->filedata));
    pl_graph_own_filedata(root->g, root->filedata);
    pl_filedata_set_cache_hooks(root->filedata, (pl_filedata_cache_hooks){
                                                    pl_cache_touch_named, pl_cache_limit_named});
    const char *kept = pl_filedata_open_copy(root->filedata, root->cache_dir);
    if (kept != NULL)
        pl_cache_touch_named(root->cache_dir, kept); /* used: not evicted first */
    return NULL;
}

pl_status *pl_builder_constant_file(pl_graph_builder *b, const char *name,
                                    pl_dtype dtype, int32_t ndim, const int64_t *dims,
                                    const char *location, int64_t offset, int64_t length)
{
    pl_graph *owner = b->g;
    pl_builder_file *f;
    PL_RETURN_IF_ERROR(pl_builder_map(b, location, "external data", &f));
    if (offset < 0 || (uint64_t)offset > f->size)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "external data of '%s': offset %lld lies past the end of "
                                "'%s' (%zu bytes)",
                                name, (long long)offset, location, f->size);
    size_t avail = f->size - (size_t)offset;
    size_t len = length < 0 ? avail : (size_t)length;
    if (length >= 0 && (uint64_t)length > avail)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "external data of '%s': offset %lld + length %lld exceeds "
                                "'%s' (%zu bytes)",
                                name, (long long)offset, (long long)length, location,
                                f->size);
    pl_tid t;
    PL_RETURN_IF_ERROR(pl_graph_tensor_get_or_add(owner, name, &t));
    /* A type declared already (builder_tensor, with its dim_params) stays. */
    if (ndim < 0 || ndim > PL_GRAPH_MAX_RANK || (ndim > 0 && dims == NULL) ||
        !pl_builder_same_type(owner, t, dtype, ndim, dims))
        PL_RETURN_IF_ERROR(pl_graph_set_type(owner, t, dtype, ndim, dims, NULL));
    /* An empty file is not mapped: its only constants are empty ones. */
    const char *data = f->addr ? (const char *)f->addr + offset : NULL;
    /* Kernels read constants in place: keep them aligned, else copy. */
    bool aligned = (uintptr_t)data % 64 == 0;
    /* The model's big ones are recorded (filedata.h): once every module
     * that reads one keeps its own copy, its pages leave the process (the
     * mapping gives them back when touched; a copy is copied again), so
     * weights in external data are not resident twice. A body's are read
     * in place by its sessions. */
    pl_graph_builder *root = b->root;
    bool record = b == root && len >= PL_FILEDATA_MIN_BYTES && root->path != NULL;
    if (record)
        PL_RETURN_IF_ERROR(pl_builder_filedata(root));
    /* An unaligned one that the cache folder keeps aligned (filedata.c):
     * its pages are the cache file's, not fresh memory filled by a copy. */
    const void *kept = record && !aligned
                           ? pl_filedata_ext_kept(root->filedata, &f->st, f->addr,
                                                  (uint64_t)offset, len)
                           : NULL;
    if (kept != NULL) {
        PL_RETURN_IF_ERROR(pl_graph_set_constant_ref(owner, t, kept, len));
        return pl_filedata_track_mapped(root->filedata, (void *)kept, len, NULL, name, &f->st,
                                        f->addr, (uint64_t)offset);
    }
    PL_RETURN_IF_ERROR(aligned ? pl_graph_set_constant_ref(owner, t, data, len)
                               : pl_graph_set_constant(owner, t, data, len));
    if (!record)
        return NULL;
    if (aligned)
        return pl_filedata_track_mapped(root->filedata, (void *)data, len, NULL, name, &f->st,
                                        f->addr, (uint64_t)offset);
    pl_fd_unmap_pages(data, len); /* copied: the mapping's pages go */
    return pl_filedata_track_mapped(root->filedata, (void *)pl_graph_get_tensor(owner, t)->data,
                                    len, data, name, &f->st, f->addr, (uint64_t)offset);
}

pl_status *pl_builder_constant_model_file(pl_graph_builder *b, const char *name,
                                          pl_dtype dtype, int32_t ndim, const int64_t *dims,
                                          int64_t offset, int64_t length)
{
    pl_graph_builder *root = b->root;
    PL_RETURN_IF_ERROR(pl_builder_filedata(root));
    pl_filedata *f = root->filedata;
    uint64_t size = pl_filedata_size(f);
    if (offset < 0 || length < 0 || (uint64_t)offset > size ||
        (uint64_t)length > size - (uint64_t)offset)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "constant '%s': offset %lld + length %lld lies past the end "
                                "of the model file (%llu bytes)",
                                name, (long long)offset, (long long)length,
                                (unsigned long long)size);
    pl_tid t;
    PL_RETURN_IF_ERROR(pl_builder_typed(b, name, dtype, ndim, dims, NULL, &t));
    size_t len = (size_t)length;
    uint64_t digest = 0;
    void *kept = b == root && len >= PL_FILEDATA_MIN_BYTES
                     ? pl_filedata_copy_lookup(f, (uint64_t)offset, len, &digest)
                     : NULL;
    if (kept != NULL) { /* the cache's copy, mapped: no fresh memory */
        PL_RETURN_IF_ERROR(pl_graph_set_constant_ref(b->g, t, kept, len));
        return pl_filedata_track_copy(f, kept, len, (uint64_t)offset, digest, name);
    }
    void *data = pl_alloc_malloc(pl_graph_allocator(b->g), len ? len : 1);
    if (data == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory reading constant '%s'",
                                name);
    if (b == root && root->defer_reads && len > 0) {
        if (root->n_reads == root->cap_reads) {
            size_t cap = root->cap_reads ? 2 * root->cap_reads : 64;
            pl_builder_read *grown = pl_realloc(root->reads, cap * sizeof *grown);
            if (grown == NULL) {
                pl_free(data);
                return pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                        "out of memory reading constant '%s'", name);
            }
            root->reads = grown;
            root->cap_reads = cap;
        }
        pl_status *st = pl_graph_set_constant_owned(b->g, t, data, len);
        if (st != NULL) {
            pl_free(data);
            return st;
        }
        root->reads[root->n_reads++] = (pl_builder_read){data, (uint64_t)offset, len, t};
        return pl_filedata_track(f, data, len, (uint64_t)offset, name);
    }
    pl_status *st = pl_filedata_read(f, (uint64_t)offset, len, data, name);
    if (st != NULL) {
        pl_free(data);
        return st;
    }
    PL_RETURN_IF_ERROR(pl_graph_set_constant_owned(b->g, t, data, len));
    /* A body's constants are read in place by its own sessions: only the
     * model's graph drops any. */
    return b == root ? pl_filedata_track(f, data, len, (uint64_t)offset, name) : NULL;
}

void pl_graph_builder_defer_reads(pl_graph_builder *b)
{
    if (b != NULL && b->root == b)
        b->defer_reads = true;
}

/* Pieces of at most this many bytes are read as one item of the pool. */
#define PL_BUILDER_READ_PIECE ((size_t)4 << 20)

typedef struct pl_builder_read_job {
    pl_graph_builder *b;
    size_t *first_piece; /* per read: its first piece's index (n_reads + 1 entries) */
    pthread_mutex_t lock;
    pl_status *error;    /* the first failure */
} pl_builder_read_job;

static void pl_builder_read_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    pl_builder_read_job *job = arg;
    pl_graph_builder *b = job->b;
    size_t r = 0;
    for (size_t p = begin; p < end; p++) {
        while (job->first_piece[r + 1] <= p)
            r++;
        const pl_builder_read *rd = &b->reads[r];
        size_t at = (p - job->first_piece[r]) * PL_BUILDER_READ_PIECE;
        size_t len = rd->len - at < PL_BUILDER_READ_PIECE ? rd->len - at : PL_BUILDER_READ_PIECE;
        pl_status *st = pl_filedata_read(b->filedata, rd->offset + at, len, rd->dst + at,
                                         pl_graph_get_tensor(b->g, rd->t)->name);
        if (st != NULL) {
            pthread_mutex_lock(&job->lock);
            if (job->error == NULL)
                job->error = st, st = NULL;
            pthread_mutex_unlock(&job->lock);
            pl_status_free(st);
        }
    }
}

pl_status *pl_graph_builder_read_constants(pl_graph_builder *b, pl_threadpool *pool)
{
    if (b == NULL || b->n_reads == 0)
        return NULL;
    pl_builder_read_job job = {.b = b};
    job.first_piece = pl_malloc((b->n_reads + 1) * sizeof *job.first_piece);
    if (job.first_piece == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory reading %s", b->path);
    size_t pieces = 0;
    for (size_t r = 0; r < b->n_reads; r++) {
        job.first_piece[r] = pieces;
        pieces += (b->reads[r].len + PL_BUILDER_READ_PIECE - 1) / PL_BUILDER_READ_PIECE;
    }
    job.first_piece[b->n_reads] = pieces;
    pthread_mutex_init(&job.lock, NULL);
    pl_threadpool_parallel_for(pool, pieces, 1, pl_builder_read_chunk, &job);
    pthread_mutex_destroy(&job.lock);
    pl_free(job.first_piece);
    b->n_reads = 0;
    return job.error;
}

pl_status *pl_builder_input(pl_graph_builder *b, const char *name)
{
    pl_tid t;
    PL_RETURN_IF_ERROR(pl_graph_tensor_get_or_add(b->g, name, &t));
    return pl_graph_add_input(b->g, t);
}

pl_status *pl_builder_output(pl_graph_builder *b, const char *name)
{
    pl_tid t;
    PL_RETURN_IF_ERROR(pl_graph_tensor_get_or_add(b->g, name, &t));
    /* A graph may list one tensor as two outputs: a Loop body (carried and
     * scan), a model (ONNX Runtime returns it twice; pl_session_run copies). */
    return pl_graph_add_output_again(b->g, t);
}

pl_status *pl_builder_node(pl_graph_builder *b, const char *name, const char *op,
                           const char *domain, const char *const *inputs, size_t n_inputs,
                           const char *const *outputs, size_t n_outputs, size_t *out_node)
{
    pl_nid n = PL_NID_NONE;
    pl_status *st = pl_graph_add_node(b->g, name, op, domain, inputs, n_inputs, outputs,
                                      n_outputs, &n);
    if (out_node)
        *out_node = n;
    return st;
}

#define PL_NODE_CHECK(b, node)                                                  \
    do {                                                                        \
        if ((node) >= pl_graph_node_count((b)->g))                              \
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,                   \
                                    "attribute on node %zu, which does not exist", \
                                    (size_t)(node));                            \
    } while (0)

pl_status *pl_builder_attr_int(pl_graph_builder *b, size_t node, const char *name,
                               int64_t value)
{
    PL_NODE_CHECK(b, node);
    return pl_graph_attr_int(b->g, (pl_nid)node, name, value);
}

pl_status *pl_builder_attr_float(pl_graph_builder *b, size_t node, const char *name,
                                 double value)
{
    PL_NODE_CHECK(b, node);
    return pl_graph_attr_float(b->g, (pl_nid)node, name, value);
}

pl_status *pl_builder_attr_string(pl_graph_builder *b, size_t node, const char *name,
                                  const char *value, size_t len)
{
    PL_NODE_CHECK(b, node);
    return pl_graph_attr_string(b->g, (pl_nid)node, name, value, len);
}

pl_status *pl_builder_attr_ints(pl_graph_builder *b, size_t node, const char *name,
                                const int64_t *values, size_t count)
{
    PL_NODE_CHECK(b, node);
    return pl_graph_attr_ints(b->g, (pl_nid)node, name, values, count);
}

pl_status *pl_builder_attr_floats(pl_graph_builder *b, size_t node, const char *name,
                                  const double *values, size_t count)
{
    PL_NODE_CHECK(b, node);
    return pl_graph_attr_floats(b->g, (pl_nid)node, name, values, count);
}

pl_status *pl_builder_attr_strings(pl_graph_builder *b, size_t node, const char *name,
                                   const char *const *values, size_t count)
{
    PL_NODE_CHECK(b, node);
    return pl_graph_attr_strings(b->g, (pl_nid)node, name, values, count);
}

pl_status *pl_builder_attr_tensor(pl_graph_builder *b, size_t node, const char *name,
                                  pl_dtype dtype, int32_t ndim, const int64_t *dims,
                                  const void *data, size_t nbytes)
{
    PL_NODE_CHECK(b, node);
    pl_status *err;
    bool is_string = pl_builder_is_string(b, dtype, name, &err);
    PL_RETURN_IF_ERROR(err);
    if (!is_string)
        return pl_graph_attr_tensor(b->g, (pl_nid)node, name, dtype, ndim, dims, data, nbytes);
    char what[160];
    snprintf(what, sizeof what, "attribute '%s'", name ? name : "");
    int64_t *ids = NULL;
    PL_RETURN_IF_ERROR(pl_builder_string_ids(b, what, ndim, dims, data, nbytes, &ids));
    pl_status *st = pl_graph_attr_tensor(b->g, (pl_nid)node, name, PL_DTYPE_I64, ndim, dims,
                                         ids, nbytes / sizeof(const char *) * sizeof *ids);
    pl_free(ids);
    if (st == NULL) {
        const pl_graph_node *n = pl_graph_get_node(b->g, (pl_nid)node);
        pl_graph_node_attr(n, name)->tensor->is_string = true;
    }
    return st;
}

/* A builder for BODY, owned by B's root. */
static pl_status *pl_builder_new_body(pl_graph_builder *b, pl_graph *body,
                                      pl_graph_builder **out)
{
    pl_graph_builder *root = b->root;
    pl_graph_builder **grown = pl_realloc(root->bodies, (root->n_bodies + 1) * sizeof *grown);
    if (grown == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    root->bodies = grown;
    pl_graph_builder *sub = pl_calloc(1, sizeof *sub);
    if (sub == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    sub->g = body;
    sub->root = root;
    root->bodies[root->n_bodies++] = sub;
    *out = sub;
    return NULL;
}

pl_status *pl_builder_attr_graphs(pl_graph_builder *b, size_t node, const char *name,
                                  size_t count, pl_graph_builder **out_bodies)
{
    for (size_t i = 0; out_bodies && i < count; i++)
        out_bodies[i] = NULL;
    PL_NODE_CHECK(b, node);
    if (out_bodies == NULL && count > 0)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "attribute '%s': no place for the body builders",
                                name ? name : "");
    pl_graph **bodies = pl_calloc(count ? count : 1, sizeof *bodies);
    if (bodies == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    pl_status *st = NULL;
    for (size_t i = 0; st == NULL && i < count; i++)
        st = pl_graph_create(&bodies[i]);
    if (st != NULL) {
        for (size_t i = 0; i < count; i++)
            pl_graph_destroy(bodies[i]);
        pl_free(bodies);
        return st;
    }
    /* The attribute owns the bodies from here, even on failure. */
    st = pl_graph_attr_graphs(b->g, (pl_nid)node, name, bodies, count);
    for (size_t i = 0; st == NULL && i < count; i++)
        st = pl_builder_new_body(b, bodies[i], &out_bodies[i]);
    pl_free(bodies);
    return st;
}

pl_status *pl_builder_attr_graph(pl_graph_builder *b, size_t node, const char *name,
                                 pl_graph_builder **out_body)
{
    if (out_body == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "attribute '%s': no place for the body builder",
                                name ? name : "");
    *out_body = NULL;
    PL_NODE_CHECK(b, node);
    pl_graph *body = NULL;
    PL_RETURN_IF_ERROR(pl_graph_create(&body));
    PL_RETURN_IF_ERROR(pl_graph_attr_graph(b->g, (pl_nid)node, name, body));
    return pl_builder_new_body(b, body, out_body);
}
