/* json.c — the json format module: its table and entry point, the cheap
 * probe (can_import), the import of a model file up to jansson's tree, and
 * the helpers the other files share (messages, the name table). Plinth's
 * own model format (docs/graph-format.md) enters the runtime here, through
 * the same graph builder as ONNX: the file is read and parsed
 * (json_text.c), its tree checked and turned into builder calls
 * (json_graph.c, json_attr.c), and the sidecar of constants is mapped by
 * the core (builder_data_file, builder_constant_file), whose one
 * confinement rule decides which files a model may name.
 *
 * Memory: the module's own blocks come from malloc, as the onnx module's
 * do; the graph itself is the core's, allocated through the runtime's
 * allocator by the builder, so allocation-failure sweeps of a model load
 * reach every block the graph holds. Jansson's tree comes from jansson's
 * global allocator, which the module never replaces (the core and an
 * application share it). Every failure is an error, never an abort.
 *
 * The module computes nothing; it has one nominal device only because the
 * loader counts a module without devices as "no-device" and the core then
 * offers it no files. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json_internal.h"

PL_MODULE_IDENTITY("json", "0.1.0");

const pl_host_api *js_host;

struct pl_module_ctx {
    pl_host_ctx *host_ctx;
};

/* ---- messages ------------------------------------------------------------- */

void js_path(char *buf, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, JS_WHERE, fmt, ap);
    va_end(ap);
}

void js_path_key(char *buf, const char *where, const char *key)
{
    if (where[0] == '\0')
        js_path(buf, "%.200s", key);
    else
        js_path(buf, "%s.%.200s", where, key);
}

static pl_status *js_errorv(const js_load *L, pl_code code, const char *where,
                            const char *fmt, va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    const char *scope = L->scope ? L->scope : "";
    if (where == NULL || where[0] == '\0')
        return scope[0] ? js_host->status_create(code, "%s: %.*s: %s", L->src,
                                                 (int)strlen(scope) - 1, scope, msg)
                        : js_host->status_create(code, "%s: %s", L->src, msg);
    return js_host->status_create(code, "%s: %s%s: %s", L->src, scope, where, msg);
}

pl_status *js_error(const js_load *L, pl_code code, const char *where, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pl_status *st = js_errorv(L, code, where, fmt, ap);
    va_end(ap);
    return st;
}

pl_status *js_error_at(const js_load *L, const char *path, size_t index, const char *fmt,
                       ...)
{
    char where[JS_WHERE];
    js_path(where, "%s[%zu]", path, index);
    va_list ap;
    va_start(ap, fmt);
    pl_status *st = js_errorv(L, PL_CODE_INVALID_ARGUMENT, where, fmt, ap);
    va_end(ap);
    return st;
}

pl_status *js_wrap(const js_load *L, const char *where, pl_status *st)
{
    if (st == NULL)
        return NULL;
    pl_status *out = js_error(L, js_host->status_code(st), where, "%s",
                              js_host->status_message(st));
    js_host->status_free(st);
    return out;
}

pl_status *js_oom(const js_load *L, const char *what)
{
    return js_host->status_create(PL_CODE_OUT_OF_MEMORY, "%s: out of memory %s", L->src,
                                  what);
}

/* ---- the name table ---------------------------------------------------------- */

static size_t js_hash(const char *s)
{
    size_t h = 1469598103934665603u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

void js_names_free(js_names *t)
{
    free(t->keys);
    free(t->values);
    memset(t, 0, sizeof *t);
}

bool js_names_get(const js_names *t, const char *key, uint32_t *out_value)
{
    if (t->cap == 0)
        return false;
    for (size_t i = js_hash(key) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        if (t->keys[i] == NULL)
            return false;
        if (strcmp(t->keys[i], key) == 0) {
            *out_value = t->values[i];
            return true;
        }
    }
}

static void js_names_insert(js_names *t, const char *key, uint32_t value)
{
    size_t i = js_hash(key) & (t->cap - 1);
    while (t->keys[i] != NULL)
        i = (i + 1) & (t->cap - 1);
    t->keys[i] = key;
    t->values[i] = value;
    t->count++;
}

bool js_names_put(js_names *t, const char *key, uint32_t value)
{
    if ((t->count + 1) * 2 > t->cap) { /* at most half full */
        size_t cap = t->cap ? t->cap * 2 : 16;
        if (cap > SIZE_MAX / sizeof(const char *))
            return false;
        js_names grown = {.keys = calloc(cap, sizeof *grown.keys),
                          .values = calloc(cap, sizeof *grown.values),
                          .cap = cap};
        if (grown.keys == NULL || grown.values == NULL) {
            js_names_free(&grown);
            return false;
        }
        for (size_t i = 0; i < t->cap; i++)
            if (t->keys[i] != NULL)
                js_names_insert(&grown, t->keys[i], t->values[i]);
        js_names_free(t);
        *t = grown;
    }
    js_names_insert(t, key, value);
    return true;
}

void js_graph_free(js_graph *G)
{
    js_names_free(&G->tensor_index);
    js_names_free(&G->node_index);
    free(G->tensors);
    for (size_t i = 0; i < G->n_nodes; i++)
        free(G->node_names[i]);
    free(G->node_names);
    free(G->domains);
    memset(G, 0, sizeof *G);
}

/* ---- life, devices, settings ----------------------------------------------- */

static pl_status *js_init(pl_host_ctx *host_ctx, pl_module_ctx **out_ctx)
{
    *out_ctx = NULL;
    pl_module_ctx *ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL)
        return js_host->status_create(PL_CODE_OUT_OF_MEMORY, "json: out of memory");
    ctx->host_ctx = host_ctx;
    *out_ctx = ctx;
    return NULL;
}

static void js_shutdown(pl_module_ctx *ctx)
{
    free(ctx);
}

static int js_device_count(pl_module_ctx *ctx)
{
    (void)ctx;
    return 1;
}

static pl_status *js_device_properties(pl_module_ctx *ctx, int device,
                                       pl_device_properties *inout_props)
{
    (void)ctx;
    if (device != 0)
        return js_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                      "json: no device %d (it has one)", device);
    if (PL_ABI_HAS_FIELD(pl_device_properties, inout_props, name))
        snprintf(inout_props->name, sizeof inout_props->name, "json importer");
    PL_ABI_SET(pl_device_properties, inout_props, device_type, PL_DEVICE_CPU);
    return NULL;
}

/* The format's limits are the format's, not a setting: the module takes no
 * keys. */
static pl_status *js_configure(pl_module_ctx *ctx, const pl_kv *in, size_t n_in,
                               pl_kv_sink out, void *out_ctx)
{
    (void)ctx;
    (void)out;
    (void)out_ctx;
    if (n_in > 0)
        return js_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                      "json: unknown key '%s' (the module takes none)",
                                      in[0].key);
    return NULL;
}

/* ---- the probe ---------------------------------------------------------------- */

/* A name ending in ".json", or text whose first non-blank byte is '{'. */
static int js_can_import(pl_module_ctx *ctx, const char *path, const void *head,
                         size_t head_bytes)
{
    (void)ctx;
    size_t len = path ? strlen(path) : 0;
    if (len >= 5 && strcmp(path + len - 5, ".json") == 0)
        return 1;
    const unsigned char *h = head;
    size_t i = 0;
    while (h != NULL && i < head_bytes &&
           (h[i] == ' ' || h[i] == '\n' || h[i] == '\r' || h[i] == '\t'))
        i++;
    return h != NULL && i < head_bytes && h[i] == '{';
}

/* ---- the import ----------------------------------------------------------------- */

static pl_code js_errno_code(int err)
{
    switch (err) {
    case ENOENT:
    case ENOTDIR:
        return PL_CODE_NOT_FOUND;
    case EACCES:
    case EPERM:
    case ELOOP:
        return PL_CODE_PERMISSION_DENIED;
    case ENOMEM:
        return PL_CODE_OUT_OF_MEMORY;
    default:
        return PL_CODE_IO_ERROR;
    }
}

/* Reads the whole regular file PATH into a malloc buffer. */
static pl_status *js_read_file(const char *path, char **out_text, size_t *out_len)
{
    *out_text = NULL;
    *out_len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        return js_host->status_create(js_errno_code(err), "%s: cannot open: %s", path,
                                      strerror(err));
    }
    struct stat sb;
    pl_status *st = NULL;
    if (fstat(fd, &sb) != 0) {
        int err = errno;
        st = js_host->status_create(js_errno_code(err), "%s: cannot stat: %s", path,
                                    strerror(err));
    } else if (!S_ISREG(sb.st_mode)) {
        st = js_host->status_create(PL_CODE_INVALID_ARGUMENT, "%s: not a regular file",
                                    path);
    } else if ((uint64_t)sb.st_size > JS_MAX_TEXT) {
        st = js_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                    "%s: %lld bytes of JSON exceed the limit of %zu", path,
                                    (long long)sb.st_size, JS_MAX_TEXT);
    }
    if (st != NULL) {
        close(fd);
        return st;
    }
    size_t size = (size_t)sb.st_size, got = 0;
    char *text = malloc(size + 1);
    if (text == NULL) {
        close(fd);
        return js_host->status_create(PL_CODE_OUT_OF_MEMORY,
                                      "%s: out of memory reading a model file", path);
    }
    while (got < size) {
        ssize_t n = read(fd, text + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int err = errno;
            st = js_host->status_create(PL_CODE_IO_ERROR, "%s: read failed: %s", path,
                                        strerror(err));
            break;
        }
        if (n == 0) /* shrank while we read: take what is there */
            break;
        got += (size_t)n;
    }
    close(fd);
    if (st != NULL) {
        free(text);
        return st;
    }
    text[got] = '\0';
    *out_text = text;
    *out_len = got;
    return NULL;
}

static pl_status *js_import_entry(pl_module_ctx *ctx, const char *path,
                                  pl_graph_builder *builder)
{
    if (ctx == NULL || path == NULL || builder == NULL)
        return js_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                      "json: import_model: NULL argument");
    if (!PL_ABI_HAS_FN(pl_graph_api, js_host->graph, builder_attr_graphs))
        return js_host->status_create(PL_CODE_INCOMPATIBLE,
                                      "json: the core's graph API has no builder for "
                                      "bodies of control flow");
    char *text;
    size_t len;
    JS_RETURN_IF_ERROR(js_read_file(path, &text, &len));
    json_t *root = NULL;
    pl_status *st = js_parse(path, text, len, &root);
    free(text);
    if (st != NULL)
        return st;
    js_graph G = {0};
    js_load L = {.src = path, .api = js_host->graph, .b = builder, .G = &G};
    st = js_load_root(&L, root);
    js_graph_free(&G);
    json_decref(root);
    return st;
}

/* ---- the table ------------------------------------------------------------------ */

static const pl_module_api js_api = {
    .header = PL_ABI_HEADER_INIT(pl_module_api),
    .name = "json",
    .version = "0.1.0",
    .vendor = "Plinth",
    .capabilities = PL_CAP_MODEL_IMPORT,
    .init = js_init,
    .shutdown = js_shutdown,
    .device_count = js_device_count,
    .device_properties = js_device_properties,
    .configure = js_configure,
    .can_import = js_can_import,
    .import_model = js_import_entry,
};

/* The one exported symbol (see PL_MODULE_DEFINE_ENTRY in module.h). */
PL_MODULE_DEFINE_ENTRY(js_host, js_api);
