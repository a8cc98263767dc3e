/* tensor_file.c — reads the TensorProto files of the ONNX backend tests.
 *
 * The protobuf-c code for onnx.proto is generated at build time from the
 * system's onnx.proto (see CMakeLists.txt); this file only turns a decoded
 * TensorProto into a dense host tensor. ONNX stores little-endian values
 * either in raw_data or in a typed repeated field whose element type is
 * wider than the dtype (int32_data carries int8, uint8, bool and the bit
 * patterns of float16 and bfloat16). */
#define _DEFAULT_SOURCE

#include "tensor_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"

/* The ONNX TensorProto.DataType codes this runner knows by name. */
enum {
    CF_ONNX_FLOAT = 1, CF_ONNX_UINT8 = 2, CF_ONNX_INT8 = 3, CF_ONNX_UINT16 = 4,
    CF_ONNX_INT16 = 5, CF_ONNX_INT32 = 6, CF_ONNX_INT64 = 7, CF_ONNX_STRING = 8,
    CF_ONNX_BOOL = 9, CF_ONNX_FLOAT16 = 10, CF_ONNX_DOUBLE = 11, CF_ONNX_UINT32 = 12,
    CF_ONNX_UINT64 = 13, CF_ONNX_COMPLEX64 = 14, CF_ONNX_COMPLEX128 = 15,
    CF_ONNX_BFLOAT16 = 16
};

const char *cf_onnx_type_name(int32_t t)
{
    static const char *const names[] = {
        "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64",
        "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64",
        "COMPLEX128", "BFLOAT16"};
    if (t >= 0 && (size_t)t < sizeof names / sizeof names[0])
        return names[t];
    return "an unknown type";
}

pl_status *cf_dtype_from_onnx(int32_t t, pl_dtype *out)
{
    switch (t) {
    case CF_ONNX_FLOAT: *out = PL_DTYPE_F32; return NULL;
    case CF_ONNX_DOUBLE: *out = PL_DTYPE_F64; return NULL;
    case CF_ONNX_FLOAT16: *out = PL_DTYPE_F16; return NULL;
    case CF_ONNX_BFLOAT16: *out = PL_DTYPE_BF16; return NULL;
    case CF_ONNX_UINT8: *out = PL_DTYPE_U8; return NULL;
    case CF_ONNX_INT8: *out = PL_DTYPE_I8; return NULL;
    case CF_ONNX_INT32: *out = PL_DTYPE_I32; return NULL;
    case CF_ONNX_INT64: *out = PL_DTYPE_I64; return NULL;
    case CF_ONNX_BOOL: *out = PL_DTYPE_BOOL; return NULL;
    case CF_ONNX_INT16: *out = PL_DTYPE_I16; return NULL;
    case CF_ONNX_UINT16: *out = PL_DTYPE_U16; return NULL;
    case CF_ONNX_UINT32: *out = PL_DTYPE_U32; return NULL;
    case CF_ONNX_UINT64: *out = PL_DTYPE_U64; return NULL;
    case CF_ONNX_STRING: *out = PL_DTYPE_STRING; return NULL;
    default:
        return pl_status_create(PL_CODE_UNSUPPORTED,
                                "ONNX element type %s (%d) has no Plinth dtype",
                                cf_onnx_type_name(t), (int)t);
    }
}

pl_status *cf_file_read(const char *path, uint8_t **out_bytes, size_t *out_len)
{
    *out_bytes = NULL;
    *out_len = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return pl_status_create(errno == ENOENT ? PL_CODE_NOT_FOUND : PL_CODE_IO_ERROR,
                                "%s: %s", path, strerror(errno));
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap);
    while (buf != NULL) {
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap)
            break;
        uint8_t *grown = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
        if (grown == NULL) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown;
        cap *= 2;
    }
    bool failed = ferror(f) != 0;
    fclose(f);
    if (buf == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "%s: out of memory reading it", path);
    if (failed) {
        free(buf);
        return pl_status_create(PL_CODE_IO_ERROR, "%s: read error", path);
    }
    *out_bytes = buf;
    *out_len = len;
    return NULL;
}

void cf_tensor_free(cf_tensor *t)
{
    free(t->name);
    free(t->dims);
    free(t->data);
    free(t->strings);
    memset(t, 0, sizeof *t);
}

pl_tensor cf_tensor_view(const cf_tensor *t)
{
    pl_tensor v = {.data = t->data,
                   .device = {PL_DEVICE_CPU, 0},
                   .ndim = t->ndim,
                   .dtype = t->dtype,
                   .shape = t->dims,
                   .struct_size = sizeof v};
    return v;
}

/* Copies N elements of a typed field into DST, narrowing each to the
 * dtype's width (the typed fields are wider than int8, bool and f16). */
static void cf_narrow_i32(const int32_t *src, size_t n, pl_dtype dt, void *dst)
{
    for (size_t i = 0; i < n; i++) {
        switch (pl_dtype_size(dt)) {
        case 1: ((uint8_t *)dst)[i] = (uint8_t)src[i]; break;
        case 2: ((uint16_t *)dst)[i] = (uint16_t)src[i]; break;
        default: ((int32_t *)dst)[i] = src[i]; break;
        }
    }
}

/* How many values the typed field of P's dtype holds. */
static size_t cf_typed_count(const Onnx__TensorProto *p)
{
    switch (p->data_type) {
    case CF_ONNX_FLOAT: return p->n_float_data;
    case CF_ONNX_DOUBLE: return p->n_double_data;
    case CF_ONNX_INT64: return p->n_int64_data;
    case CF_ONNX_UINT32:
    case CF_ONNX_UINT64: return p->n_uint64_data;
    case CF_ONNX_STRING: return p->n_string_data;
    default: return p->n_int32_data; /* int32, int8, uint8, (u)int16, bool, f16, bf16 */
    }
}

/* Fills T's data from the typed field that the dtype uses (its length was
 * checked against T's element count). */
static void cf_tensor_fill_typed(const Onnx__TensorProto *p, cf_tensor *t)
{
    if (t->count == 0)
        return; /* the field may then be NULL, which memcpy must not see */
    switch (p->data_type) {
    case CF_ONNX_FLOAT:
        memcpy(t->data, p->float_data, t->count * sizeof(float));
        break;
    case CF_ONNX_DOUBLE:
        memcpy(t->data, p->double_data, t->count * sizeof(double));
        break;
    case CF_ONNX_INT64:
        memcpy(t->data, p->int64_data, t->count * sizeof(int64_t));
        break;
    case CF_ONNX_UINT64:
        memcpy(t->data, p->uint64_data, t->count * sizeof(uint64_t));
        break;
    case CF_ONNX_UINT32:
        for (size_t i = 0; i < t->count; i++)
            ((uint32_t *)t->data)[i] = (uint32_t)p->uint64_data[i];
        break;
    case CF_ONNX_STRING: /* pointers into T's strings block (filled by the caller) */
        break;
    default:
        cf_narrow_i32(p->int32_data, t->count, t->dtype, t->data);
        break;
    }
}

/* Fills T from a decoded TensorProto P. */
static pl_status *cf_tensor_from_proto(Onnx__TensorProto *p, const char *path,
                                       int32_t declared, cf_tensor *t)
{
    t->name = strdup(p->name ? p->name : "");
    if (t->name == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "%s: out of memory", path);
    if (p->has_data_location && p->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return pl_status_create(PL_CODE_UNSUPPORTED, "%s: external tensor data", path);
    if (p->segment != NULL)
        return pl_status_create(PL_CODE_UNSUPPORTED, "%s: segmented tensor", path);
    if (p->has_data_type && p->data_type == CF_ONNX_UINT16 && declared == CF_ONNX_BFLOAT16)
        p->data_type = CF_ONNX_BFLOAT16; /* the same bits, in the same field */
    pl_status *st = cf_dtype_from_onnx(p->has_data_type ? p->data_type : 0, &t->dtype);
    if (st != NULL) {
        pl_status *wrapped = pl_status_create(pl_status_code(st), "%s: %s", path,
                                              pl_status_message(st));
        pl_status_free(st);
        return wrapped;
    }
    if (p->n_dims > 64)
        return pl_status_create(PL_CODE_UNSUPPORTED, "%s: rank %zu", path, p->n_dims);
    t->ndim = (int32_t)p->n_dims;
    t->count = 1;
    if (p->n_dims > 0) {
        t->dims = malloc(p->n_dims * sizeof *t->dims);
        if (t->dims == NULL)
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    for (size_t d = 0; d < p->n_dims; d++) {
        int64_t n = p->dims[d];
        if (n < 0 || (n > 0 && t->count > SIZE_MAX / 16 / (uint64_t)n))
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "%s: dimension %zu is %lld", path, d, (long long)n);
        t->dims[d] = n;
        t->count *= (size_t)n;
    }
    size_t elem = pl_dtype_size(t->dtype);
    size_t bytes = t->count * elem;
    /* The values must be in the file: check before allocating, so that a
     * file of another message type read as a TensorProto cannot ask for
     * terabytes. */
    size_t have = p->has_raw_data ? p->raw_data.len / (elem ? elem : 1)
                                  : cf_typed_count(p);
    if (have != t->count || (p->has_raw_data && p->raw_data.len != bytes))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "%s: tensor '%s' holds %zu %s for %zu elements of %s", path,
                                t->name, p->has_raw_data ? p->raw_data.len : have,
                                p->has_raw_data ? "raw bytes" : "values", t->count,
                                cf_onnx_type_name(p->data_type));
    t->data = malloc(bytes ? bytes : 1);
    if (t->data == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "%s: out of memory (%zu bytes)", path,
                                bytes);
    if (p->has_raw_data) {
        /* ONNX raw data is little-endian, like every host Plinth runs on. */
        if (bytes)
            memcpy(t->data, p->raw_data.data, bytes);
        return NULL;
    }
    cf_tensor_fill_typed(p, t);
    if (p->data_type == CF_ONNX_STRING) {
        size_t total = 1;
        for (size_t i = 0; i < t->count; i++)
            total += p->string_data[i].len + 1;
        char *block = t->strings = malloc(total);
        if (block == NULL)
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "%s: out of memory", path);
        for (size_t i = 0; i < t->count; i++) {
            if (p->string_data[i].len)
                memcpy(block, p->string_data[i].data, p->string_data[i].len);
            block[p->string_data[i].len] = '\0';
            ((const char **)t->data)[i] = block;
            block += p->string_data[i].len + 1;
        }
    }
    return NULL;
}

pl_status *cf_tensor_read(const char *path, int32_t declared, cf_tensor *out)
{
    memset(out, 0, sizeof *out);
    uint8_t *bytes = NULL;
    size_t len = 0;
    pl_status *st = cf_file_read(path, &bytes, &len);
    if (st != NULL)
        return st;
    Onnx__TensorProto *p = onnx__tensor_proto__unpack(NULL, len, bytes);
    free(bytes);
    if (p == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "%s: not a serialized TensorProto",
                                path);
    st = cf_tensor_from_proto(p, path, declared, out);
    onnx__tensor_proto__free_unpacked(p, NULL);
    if (st != NULL)
        cf_tensor_free(out);
    return st;
}

char *cf_join_path(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = malloc(n);
    if (s != NULL)
        snprintf(s, n, "%s/%s", a, b);
    return s;
}
