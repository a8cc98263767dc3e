/* onnx.c — the onnx format module: its table and entry point, its
 * settings, the cheap probe (can_import) and the import itself up to the
 * decoded message: the file is mapped read-only, its wire format checked
 * (onnx_scan.c), decoded by protobuf-c under a memory budget, and handed to
 * onnx_graph.c, which makes the graph through the host's builder.
 *
 * The module computes nothing; it has one nominal device only because the
 * loader counts a module without devices as "no-device" and the core then
 * offers it no files. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx_internal.h"

PL_MODULE_IDENTITY("onnx", "0.1.0");

const pl_host_api *ox_host;

struct pl_module_ctx {
    pl_host_ctx *host_ctx;
    ox_limits limits;
};

static const ox_limits ox_default_limits = {
    .max_file_bytes = (uint64_t)2 << 30,
    .max_nodes = 10000000,
    .max_name_bytes = 4096,
};

/* ---- errors ------------------------------------------------------------- */

pl_status *ox_error(const ox_import *imp, pl_code code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ox_host->status_create(code, "%s: %s%s", imp->path, imp->scope ? imp->scope : "",
                                  msg);
}

pl_status *ox_wrap(const ox_import *imp, pl_status *st, const char *where_fmt, ...)
{
    if (st == NULL)
        return NULL;
    char where[512];
    va_list ap;
    va_start(ap, where_fmt);
    vsnprintf(where, sizeof where, where_fmt, ap);
    va_end(ap);
    /* The core's message may already name the place ("node 'n' (Op): ..."). */
    const char *msg = ox_host->status_message(st);
    size_t wl = strlen(where);
    const char *scope = imp->scope ? imp->scope : "";
    pl_status *out =
        strncmp(msg, where, wl) == 0
            ? ox_host->status_create(ox_host->status_code(st), "%s: %s%s", imp->path, scope,
                                     msg)
            : ox_host->status_create(ox_host->status_code(st), "%s: %s%s: %s", imp->path,
                                     scope, where, msg);
    ox_host->status_free(st);
    return out;
}

/* ---- life, devices, settings --------------------------------------------- */

static pl_status *ox_init(pl_host_ctx *host_ctx, pl_module_ctx **out_ctx)
{
    *out_ctx = NULL;
    pl_module_ctx *ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL)
        return ox_host->status_create(PL_CODE_OUT_OF_MEMORY, "onnx: out of memory");
    ctx->host_ctx = host_ctx;
    ctx->limits = ox_default_limits;
    *out_ctx = ctx;
    return NULL;
}

static void ox_shutdown(pl_module_ctx *ctx)
{
    free(ctx);
}

static int ox_device_count(pl_module_ctx *ctx)
{
    (void)ctx;
    return 1;
}

static pl_status *ox_device_properties(pl_module_ctx *ctx, int device,
                                       pl_device_properties *inout_props)
{
    (void)ctx;
    if (device != 0)
        return ox_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                      "onnx: no device %d (it has one)", device);
    if (PL_ABI_HAS_FIELD(pl_device_properties, inout_props, name))
        snprintf(inout_props->name, sizeof inout_props->name, "onnx importer");
    PL_ABI_SET(pl_device_properties, inout_props, device_type, PL_DEVICE_CPU);
    return NULL;
}

/* A setting: its key and where it lives in ox_limits. */
typedef struct ox_setting {
    const char *key;
    size_t offset;
    uint64_t min, max;
} ox_setting;

static const ox_setting ox_settings[] = {
    {"max_file_bytes", offsetof(ox_limits, max_file_bytes), 1, (uint64_t)1 << 40},
    {"max_nodes", offsetof(ox_limits, max_nodes), 1, (uint64_t)1 << 32},
    {"max_name_bytes", offsetof(ox_limits, max_name_bytes), 1, (uint64_t)1 << 20},
};
#define OX_N_SETTINGS (sizeof ox_settings / sizeof ox_settings[0])

/* Parses a decimal integer in [min, max]; 1 on success. */
static int ox_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    if (s == NULL || *s < '0' || *s > '9')
        return 0;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
            return 0;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    if (v < min || v > max)
        return 0;
    *out = v;
    return 1;
}

static pl_status *ox_configure(pl_module_ctx *ctx, const pl_kv *in, size_t n_in,
                               pl_kv_sink out, void *out_ctx)
{
    ox_limits next = ctx->limits;
    for (size_t i = 0; i < n_in; i++) {
        const ox_setting *s = NULL;
        for (size_t k = 0; k < OX_N_SETTINGS; k++)
            if (strcmp(in[i].key, ox_settings[k].key) == 0)
                s = &ox_settings[k];
        if (s == NULL)
            return ox_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                          "onnx: unknown key '%s' (known: max_file_bytes, "
                                          "max_nodes, max_name_bytes)",
                                          in[i].key);
        uint64_t v;
        if (!ox_parse_u64(in[i].value, s->min, s->max, &v))
            return ox_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                          "onnx: %s = '%s': expected an integer from %" PRIu64
                                          " to %" PRIu64,
                                          s->key, in[i].value ? in[i].value : "", s->min,
                                          s->max);
        memcpy((char *)&next + s->offset, &v, sizeof v);
    }
    ctx->limits = next;
    if (out != NULL)
        for (size_t k = 0; k < OX_N_SETTINGS; k++) {
            uint64_t v;
            memcpy(&v, (const char *)&ctx->limits + ox_settings[k].offset, sizeof v);
            char text[32];
            snprintf(text, sizeof text, "%" PRIu64, v);
            out(out_ctx, ox_settings[k].key, text);
        }
    return NULL;
}

/* ---- the probe ------------------------------------------------------------ */

/* Reads a varint at *pos of HEAD; 1 on success. */
static int ox_head_varint(const uint8_t *head, size_t n, size_t *pos, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64 && *pos < n; shift += 7) {
        uint8_t byte = head[(*pos)++];
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

/* A name ending in ".onnx", or bytes that open like a ModelProto written by
 * any ONNX exporter: ir_version (field 1, varint) first, a plausible IR
 * version, then a known ModelProto field with its proper wire type. */
static int ox_can_import(pl_module_ctx *ctx, const char *path, const void *head,
                         size_t head_bytes)
{
    (void)ctx;
    size_t len = path ? strlen(path) : 0;
    if (len >= 5 && strcmp(path + len - 5, ".onnx") == 0)
        return 1;
    const uint8_t *h = head;
    size_t pos = 0;
    uint64_t ir = 0, tag = 0;
    if (h == NULL || head_bytes < 4 || h[pos++] != 0x08)
        return 0;
    if (!ox_head_varint(h, head_bytes, &pos, &ir) || ir < 3 || ir > 32)
        return 0;
    if (!ox_head_varint(h, head_bytes, &pos, &tag) || tag > UINT32_MAX)
        return 0;
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field(&onnx__model_proto__descriptor,
                                                (unsigned)(tag >> 3));
    if (f == NULL)
        return 0;
    unsigned wire = (unsigned)(tag & 7);
    bool varint = f->type == PROTOBUF_C_TYPE_INT64 || f->type == PROTOBUF_C_TYPE_INT32;
    return varint ? wire == 0 : wire == 2;
}

/* ---- decoding ------------------------------------------------------------- */

/* protobuf-c's allocations during one decode, against a budget: a small
 * file must not be able to make the decoder allocate without bound (a
 * million empty messages cost a few bytes each on the wire and a hundred in
 * memory). Each block carries its size in front. */
typedef struct ox_budget {
    size_t used, limit;
    bool exceeded;
} ox_budget;

typedef union ox_block_head {
    size_t size;
    max_align_t align;
} ox_block_head;

static void *ox_budget_alloc(void *data, size_t size)
{
    ox_budget *bud = data;
    if (size > bud->limit - bud->used || size > SIZE_MAX - sizeof(ox_block_head)) {
        bud->exceeded = true;
        return NULL;
    }
    ox_block_head *h = malloc(sizeof *h + size);
    if (h == NULL)
        return NULL;
    h->size = size;
    bud->used += size;
    return h + 1;
}

static void ox_budget_free(void *data, void *ptr)
{
    if (ptr == NULL)
        return;
    ox_budget *bud = data;
    ox_block_head *h = (ox_block_head *)ptr - 1;
    bud->used -= h->size;
    free(h);
}

/* Maps PATH read-only after checking that it is a regular file within the
 * size limit. */
static pl_status *ox_map_file(ox_import *imp, void **out_addr, size_t *out_size)
{
    *out_addr = NULL;
    *out_size = 0;
    int fd = open(imp->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ox_error(imp, errno == ENOENT ? PL_CODE_NOT_FOUND : PL_CODE_IO_ERROR,
                        "cannot open: %s", strerror(errno));
    struct stat sb;
    pl_status *st = NULL;
    if (fstat(fd, &sb) != 0)
        st = ox_error(imp, PL_CODE_IO_ERROR, "cannot stat: %s", strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        st = ox_error(imp, PL_CODE_INVALID_ARGUMENT, "not a regular file");
    else if (sb.st_size == 0)
        st = ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                      "empty file; not a valid ONNX protobuf (truncated or corrupt)");
    else if ((uint64_t)sb.st_size > imp->limits.max_file_bytes ||
             (uint64_t)sb.st_size > SIZE_MAX / 4)
        st = ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                      "file is %" PRIu64 " bytes, over the limit of %" PRIu64
                      " (the onnx module's max_file_bytes)",
                      (uint64_t)sb.st_size, imp->limits.max_file_bytes);
    if (st == NULL) {
        void *addr = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (addr == MAP_FAILED)
            st = ox_error(imp, PL_CODE_IO_ERROR, "cannot map: %s", strerror(errno));
        else {
            *out_addr = addr;
            *out_size = (size_t)sb.st_size;
        }
    }
    close(fd);
    return st;
}

static pl_status *ox_import_file(pl_module_ctx *ctx, const char *path,
                                 pl_graph_builder *builder)
{
    struct ox_inlined inlined = {0, 0};
    ox_import imp = {.graph = ox_host->graph, .b = builder, .path = path, .inlined = &inlined,
                     .limits = ctx->limits};
    void *addr = NULL;
    size_t size = 0;
    OX_RETURN_IF_ERROR(ox_map_file(&imp, &addr, &size));
    imp.file_bytes = size;
    imp.map = addr;
    pl_status *st = ox_scan(&imp, addr, size);
    Onnx__ModelProto *model = NULL;
    /* The decoded form needs a few times the file at most (varints widen
     * to 8 bytes, small messages to their structs). */
    ox_budget bud = {.limit = (size_t)64 << 20};
    bud.limit += size <= (SIZE_MAX - bud.limit) / 16 ? size * 16 : SIZE_MAX - bud.limit;
    ProtobufCAllocator alloc = {ox_budget_alloc, ox_budget_free, &bud};
    /* Weights are read in place from the mapping (onnx_lift.c). */
    ox_lifted lift = {0};
    if (st == NULL && ox_lift(addr, size, &lift)) {
        model = onnx__model_proto__unpack(&alloc, lift.len, lift.buf);
        if (model != NULL && !ox_lift_attach(model, &lift)) {
            onnx__model_proto__free_unpacked(model, &alloc);
            model = NULL;
        }
        free(lift.buf);
        lift.buf = NULL;
        if (model == NULL)
            ox_lift_free(&lift);
    }
    if (st == NULL && model == NULL) {
        model = onnx__model_proto__unpack(&alloc, size, addr);
        if (model == NULL && bud.exceeded)
            st = ox_error(&imp, PL_CODE_OUT_OF_MEMORY,
                          "decoding needs more than %zu bytes of memory for a %zu-byte "
                          "file; not a plausible ONNX model",
                          bud.limit, size);
        else if (model == NULL)
            st = ox_error(&imp, PL_CODE_INVALID_ARGUMENT,
                          "not a valid ONNX protobuf (truncated or corrupt)");
    }
    if (st == NULL)
        st = ox_import_model(&imp, model);
    if (model != NULL) {
        ox_lift_detach(model, &lift);
        onnx__model_proto__free_unpacked(model, &alloc);
    }
    ox_lift_free(&lift);
    munmap(addr, size);
    return st;
}

static pl_status *ox_import_entry(pl_module_ctx *ctx, const char *path, pl_graph_builder *builder)
{
    if (ctx == NULL || path == NULL || builder == NULL)
        return ox_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                      "onnx: import_model: NULL argument");
    if (!PL_ABI_HAS_FN(pl_graph_api, ox_host->graph, builder_attr_tensor))
        return ox_host->status_create(PL_CODE_INCOMPATIBLE,
                                      "onnx: the core's graph API has no builder");
    return ox_import_file(ctx, path, builder);
}

/* ---- the table -------------------------------------------------------------- */

static const pl_module_api ox_api = {
    .header = PL_ABI_HEADER_INIT(pl_module_api),
    .name = "onnx",
    .version = "0.1.0",
    .vendor = "Plinth",
    .capabilities = PL_CAP_MODEL_IMPORT,
    .init = ox_init,
    .shutdown = ox_shutdown,
    .device_count = ox_device_count,
    .device_properties = ox_device_properties,
    .configure = ox_configure,
    .can_import = ox_can_import,
    .import_model = ox_import_entry,
};

/* The one exported symbol (see PL_MODULE_DEFINE_ENTRY in module.h). */
PL_MODULE_DEFINE_ENTRY(ox_host, ox_api);
