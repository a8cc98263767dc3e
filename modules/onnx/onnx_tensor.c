/* onnx_tensor.c — ONNX tensors (initializers, Constant values, tensor
 * attributes) turned into bytes the builder takes: the dtype mapped, the
 * shape checked with overflow-safe arithmetic, and the data taken from
 * exactly one of raw_data, a typed field (float_data, int32_data — which
 * also carries i8, u8, i16, u16, bool, f16 and bf16 — int64_data,
 * double_data, uint64_data for u32 and u64) or an
 * external file, whose size must match the shape. External files are
 * opened by the core (builder_constant_file), which keeps them inside the
 * model's folder; the checks here only give the ONNX-specific message
 * first. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* ---- dtypes ------------------------------------------------------------- */

typedef struct ox_type {
    int32_t onnx;
    const char *name; /* ONNX's name */
    int supported;    /* 2: only as an initializer, widened (ox_nibbles); 3: strings */
    pl_dtype dtype;
    const char *short_name; /* Plinth's */
} ox_type;

static const ox_type ox_types[] = {
    {ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, "FLOAT", 1, {PL_TYPE_FLOAT, 32, 1}, "f32"},
    {ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, "UINT8", 1, {PL_TYPE_UINT, 8, 1}, "u8"},
    {ONNX__TENSOR_PROTO__DATA_TYPE__INT8, "INT8", 1, {PL_TYPE_INT, 8, 1}, "i8"},
    {ONNX__TENSOR_PROTO__DATA_TYPE__UINT16, "UINT16", 1, {PL_TYPE_UINT, 16, 1}, "u16"},
    {ONNX__TENSOR_PROTO__DATA_TYPE__INT16, "INT16", 1, {PL_TYPE_INT, 16, 1}, "i16"},
    {ONNX__TENSOR_PROTO__DATA_TYPE__INT32, "INT32", 1, {PL_TYPE_INT, 32, 1}, "i32"},
    {ONNX__TENSOR_PROTO__DATA_TYPE__INT64, "INT64", 1, {PL_TYPE_INT, 64, 1}, "i64"},
    {ONNX__TENSOR_PROTO__DATA_TYPE__STRING, "STRING", 3, PL_DTYPE_STRING, "string"},
    {ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "BOOL", 1, {PL_TYPE_BOOL, 8, 1}, "bool"},
    {ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16, "FLOAT16", 1, {PL_TYPE_FLOAT, 16, 1}, "f16"},
    {ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE, "DOUBLE", 1, {PL_TYPE_FLOAT, 64, 1}, "f64"},
    {ONNX__TENSOR_PROTO__DATA_TYPE__UINT32, "UINT32", 1, {PL_TYPE_UINT, 32, 1}, "u32"},
    {ONNX__TENSOR_PROTO__DATA_TYPE__UINT64, "UINT64", 1, {PL_TYPE_UINT, 64, 1}, "u64"},
    {ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64, "COMPLEX64", 0, {0, 0, 0}, NULL},
    {ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX128, "COMPLEX128", 0, {0, 0, 0}, NULL},
    {ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16, "BFLOAT16", 1, {PL_TYPE_BFLOAT, 16, 1}, "bf16"},
    /* Newer ONNX versions than this onnx.proto: known, not supported. */
    {17, "FLOAT8E4M3FN", 0, {0, 0, 0}, NULL},
    {18, "FLOAT8E4M3FNUZ", 0, {0, 0, 0}, NULL},
    {19, "FLOAT8E5M2", 0, {0, 0, 0}, NULL},
    {20, "FLOAT8E5M2FNUZ", 0, {0, 0, 0}, NULL},
    {21, "UINT4", 2, {PL_TYPE_UINT, 8, 1}, "u8"},
    {22, "INT4", 2, {PL_TYPE_INT, 8, 1}, "i8"},
};

static const ox_type *ox_type_of(int32_t elem_type)
{
    for (size_t i = 0; i < sizeof ox_types / sizeof ox_types[0]; i++)
        if (ox_types[i].onnx == elem_type)
            return &ox_types[i];
    return NULL;
}

int ox_dtype(int32_t elem_type, pl_dtype *out, const char **out_name)
{
    const ox_type *t = ox_type_of(elem_type);
    *out_name = t ? t->name : NULL;
    if (t == NULL || (t->supported != 1 && t->supported != 3))
        return 0;
    *out = t->dtype;
    return 1;
}

void ox_format_dims(char *buf, size_t cap, const int64_t *dims, size_t ndim)
{
    size_t len = (size_t)snprintf(buf, cap, "[");
    for (size_t i = 0; i < ndim && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%" PRId64, i ? "," : "", dims[i]);
    if (len < cap)
        snprintf(buf + len, cap - len, "]");
}

/* ---- decoding ----------------------------------------------------------- */

/* Where a tensor's bytes are. */
typedef struct ox_data {
    const ox_type *type;
    size_t count, bytes;
    const void *data; /* raw_data (borrowed) or owned */
    void *owned;      /* free() */
    bool external;
    const char *location;
    int64_t offset, length; /* length -1: not given */
} ox_data;

/* Element count and byte size of T's shape, overflow-checked. */
static pl_status *ox_tensor_size(const ox_import *imp, const Onnx__TensorProto *t,
                                 const char *what, size_t elem, size_t *out_count,
                                 size_t *out_bytes)
{
    if (t->n_dims > OX_MAX_RANK)
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT, "%s: rank %zu, at most %d", what,
                        t->n_dims, OX_MAX_RANK);
    bool empty = false;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0)
            return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                            "%s: dimension %zu is %" PRId64 "; a tensor's dims are >= 0",
                            what, i, t->dims[i]);
        empty = empty || t->dims[i] == 0;
    }
    /* A zero dim makes the tensor empty whatever the others say. */
    size_t count = empty ? 0 : 1;
    bool overflow = false;
    for (size_t i = 0; i < t->n_dims && !empty && !overflow; i++) {
        if (count > SIZE_MAX / (uint64_t)t->dims[i])
            overflow = true;
        else
            count *= (size_t)t->dims[i];
    }
    if (overflow || count > SIZE_MAX / elem) {
        char shape[256];
        ox_format_dims(shape, sizeof shape, t->dims, t->n_dims);
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                        "%s: shape %s overflows: its byte size does not fit in memory", what,
                        shape);
    }
    *out_count = count;
    *out_bytes = count * elem;
    return NULL;
}

/* Parses a non-negative decimal int64 (external_data offset and length). */
static int ox_parse_i64(const char *s, int64_t *out)
{
    if (s == NULL || *s == '\0')
        return 0;
    int64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (INT64_MAX - 9) / 10)
            return 0;
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return 1;
}

static pl_status *ox_external(const ox_import *imp, const Onnx__TensorProto *t,
                              const char *what, ox_data *d)
{
    d->external = true;
    d->length = -1;
    for (size_t i = 0; i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = t->external_data[i];
        const char *key = e->key ? e->key : "";
        const char *value = e->value ? e->value : "";
        if (strcmp(key, "location") == 0)
            d->location = value;
        else if (strcmp(key, "offset") == 0 || strcmp(key, "length") == 0) {
            int64_t *slot = key[0] == 'o' ? &d->offset : &d->length;
            if (!ox_parse_i64(value, slot))
                return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                                "%s: external data %s '%.64s' is not a non-negative "
                                "integer",
                                what, key, value);
        } else if (strcmp(key, "checksum") != 0 && strcmp(key, "basepath") != 0)
            return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                            "%s: unknown external_data key '%.64s' (known: location, offset, "
                            "length, checksum)",
                            what, key);
    }
    if (d->location == NULL || d->location[0] == '\0')
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                        "%s: data_location is EXTERNAL but external_data has no location",
                        what);
    if (d->location[0] == '/')
        return ox_error(imp, PL_CODE_PERMISSION_DENIED,
                        "%s: external data location '%.200s' is absolute; it must be "
                        "relative to the model's folder",
                        what, d->location);
    for (const char *c = d->location; *c;) {
        size_t len = strcspn(c, "/");
        if (len == 2 && c[0] == '.' && c[1] == '.')
            return ox_error(imp, PL_CODE_PERMISSION_DENIED,
                            "%s: external data location '%.200s' has a '..' component; it "
                            "must lie inside the model's folder",
                            what, d->location);
        c += len + (c[len] == '/');
    }
    if (d->length >= 0 && (uint64_t)d->length != d->bytes) {
        char shape[256];
        ox_format_dims(shape, sizeof shape, t->dims, t->n_dims);
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                        "%s: external data length is %" PRId64 " bytes, shape %s of %s needs %zu",
                        what, d->length, shape, d->type->short_name, d->bytes);
    }
    if (t->has_raw_data || t->n_float_data || t->n_int32_data || t->n_int64_data ||
        t->n_double_data || t->n_uint64_data || t->n_string_data)
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                        "%s: data_location is EXTERNAL but the tensor also carries data "
                        "of its own",
                        what);
    return NULL;
}

/* Stores V as N little-endian bytes at P. */
static void ox_put_le(uint8_t *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Converts int32_data to the tensor's dtype, checking each value's range. */
static pl_status *ox_from_int32(const ox_import *imp, const Onnx__TensorProto *t,
                                const char *what, ox_data *d, uint8_t *out)
{
    int64_t lo, hi;
    size_t w = pl_dtype_size(d->type->dtype);
    switch (d->type->onnx) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
        lo = -128, hi = 127;
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
        lo = 0, hi = 255;
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
        lo = 0, hi = 1;
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
        lo = INT16_MIN, hi = INT16_MAX;
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
        lo = 0, hi = 65535; /* the bits of the 16-bit value */
        break;
    default:
        lo = INT32_MIN, hi = INT32_MAX;
        break;
    }
    for (size_t i = 0; i < d->count; i++) {
        int64_t v = t->int32_data[i];
        if (v < lo || v > hi)
            return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                            "%s: int32_data[%zu] = %" PRId64 " is out of range for %s", what,
                            i, v, d->type->name);
        ox_put_le(out + i * w, (uint64_t)v, w);
    }
    return NULL;
}

/* Copies a typed field (COUNT values of SRC_WIDTH bytes) into owned bytes. */
static pl_status *ox_typed(const ox_import *imp, const Onnx__TensorProto *t,
                           const char *what, ox_data *d, const char *field, size_t n,
                           bool type_ok)
{
    if (!type_ok)
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                        "%s: %s cannot hold a %s tensor", what, field, d->type->name);
    if (n != d->count) {
        char shape[256];
        ox_format_dims(shape, sizeof shape, t->dims, t->n_dims);
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                        "%s: %s has %zu values, shape %s needs %zu", what, field, n, shape,
                        d->count);
    }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* On a little-endian host the parsed values are the tensor's bytes
     * already: read in place, as raw_data is (MXNet's exporter writes every
     * weight as float_data; converting value by value into a copy took a
     * third of loading its ResNet-18, 120 -> 75 ms, the copy most of the
     * rest). */
    if (t->n_float_data) {
        d->data = (const uint8_t *)t->float_data;
        return NULL;
    }
    if (t->n_double_data) {
        d->data = (const uint8_t *)t->double_data;
        return NULL;
    }
    if (t->n_int64_data) {
        d->data = (const uint8_t *)t->int64_data;
        return NULL;
    }
#endif
    d->owned = malloc(d->bytes ? d->bytes : 1);
    if (d->owned == NULL)
        return ox_error(imp, PL_CODE_OUT_OF_MEMORY, "%s: out of memory (%zu bytes)", what,
                        d->bytes);
    uint8_t *out = d->owned;
    d->data = out;
    if (t->n_int32_data)
        return ox_from_int32(imp, t, what, d, out);
    for (size_t i = 0; i < n; i++) {
        if (t->n_float_data) {
            uint32_t bits;
            memcpy(&bits, &t->float_data[i], 4);
            ox_put_le(out + 4 * i, bits, 4);
        } else if (t->n_double_data) {
            uint64_t bits;
            memcpy(&bits, &t->double_data[i], 8);
            ox_put_le(out + 8 * i, bits, 8);
        } else if (t->n_uint64_data) {
            /* UINT32 or UINT64 */
            size_t w = pl_dtype_size(d->type->dtype);
            uint64_t v = t->uint64_data[i];
            if (w == 4 && v > UINT32_MAX)
                return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                                "%s: uint64_data[%zu] = %" PRIu64 " is out of range for %s",
                                what, i, v, d->type->name);
            ox_put_le(out + w * i, v, w);
        } else {
            ox_put_le(out + 8 * i, (uint64_t)t->int64_data[i], 8);
        }
    }
    return NULL;
}

/* An INT4 or UINT4 initializer (ONNX 1.16, opset 21): two values a byte,
 * the first in the low nibble, in raw_data or in int32_data (one byte per
 * entry). Held as i8 or u8, one value a byte (INT4 sign-extended), which
 * DequantizeLinear reads as it would the 4-bit values: weight-only 4-bit
 * quantisation (a blocked DequantizeLinear of a weight) folds at load into
 * the float weight. Nothing computes in 4 bits, so a 4-bit tensor that is
 * not an initializer is refused, and so is an initializer any op but
 * DequantizeLinear reads (onnx_graph.c). */
static pl_status *ox_nibbles(const ox_import *imp, const Onnx__TensorProto *t,
                             const char *what, ox_data *d)
{
    if (!imp->nibbles_ok)
        return ox_error(imp, PL_CODE_UNSUPPORTED,
                        "%s: elem_type %s is supported in initializers only (the weights of "
                        "4-bit quantisation)",
                        what, d->type->name);
    OX_RETURN_IF_ERROR(ox_tensor_size(imp, t, what, 1, &d->count, &d->bytes));
    if ((t->has_data_location &&
         t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) ||
        t->n_external_data)
        return ox_error(imp, PL_CODE_UNSUPPORTED,
                        "%s: %s in external data is not supported", what, d->type->name);
    size_t packed = (d->count + 1) / 2;
    const uint8_t *raw = NULL;
    if (t->has_raw_data) {
        if (t->raw_data.len != packed)
            return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                            "%s: raw_data has %zu bytes, %zu %s values need %zu", what,
                            t->raw_data.len, d->count, d->type->name, packed);
        raw = t->raw_data.data;
    } else if (t->n_int32_data != packed || t->n_float_data || t->n_int64_data ||
               t->n_double_data || t->n_uint64_data || t->n_string_data) {
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                        "%s: %zu %s values need raw_data of %zu bytes or %zu int32_data "
                        "entries",
                        what, d->count, d->type->name, packed, packed);
    }
    uint8_t *out = malloc(d->count ? d->count : 1);
    if (out == NULL)
        return ox_error(imp, PL_CODE_OUT_OF_MEMORY, "%s: out of memory (%zu bytes)", what,
                        d->count);
    d->owned = out;
    d->data = out;
    bool is_signed = d->type->onnx == 22;
    for (size_t i = 0; i < d->count; i++) {
        int32_t byte = raw != NULL ? raw[i / 2] : t->int32_data[i / 2];
        if (byte < 0 || byte > 255)
            return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                            "%s: int32_data[%zu] = %" PRId32 " is not a byte of two %s values",
                            what, i / 2, byte, d->type->name);
        int v = i % 2 == 0 ? byte & 15 : byte >> 4;
        out[i] = (uint8_t)(is_signed ? (v ^ 8) - 8 : v);
    }
    return NULL;
}

pl_status *ox_string_block(const ox_import *imp, const ProtobufCBinaryData *v, size_t count,
                           const char *what, char **out)
{
    *out = NULL;
    size_t total = count * sizeof(const char *);
    for (size_t i = 0; i < count; i++) {
        if (v[i].len && memchr(v[i].data, 0, v[i].len) != NULL)
            return ox_error(imp, PL_CODE_UNSUPPORTED,
                            "%s: string %zu holds a NUL byte (Plinth's strings are "
                            "NUL-terminated)",
                            what, i);
        total += v[i].len + 1;
    }
    char *block = malloc(total ? total : 1);
    if (block == NULL)
        return ox_error(imp, PL_CODE_OUT_OF_MEMORY, "%s: out of memory (%zu bytes)", what,
                        total);
    const char **ptrs = (const char **)(void *)block;
    char *p = block + count * sizeof(const char *);
    for (size_t i = 0; i < count; i++) {
        if (v[i].len)
            memcpy(p, v[i].data, v[i].len);
        p[v[i].len] = '\0';
        ptrs[i] = p;
        p += v[i].len + 1;
    }
    *out = block;
    return NULL;
}

/* A string tensor's string_data as the builder takes it (PL_DTYPE_STRING),
 * in d->owned (ox_string_block). */
static pl_status *ox_strings(const ox_import *imp, const Onnx__TensorProto *t,
                             const char *what, ox_data *d)
{
    OX_RETURN_IF_ERROR(ox_tensor_size(imp, t, what, sizeof(const char *), &d->count,
                                      &d->bytes));
    if (t->has_raw_data || (t->has_data_location &&
                            t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL))
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                        "%s: a STRING tensor keeps its values in string_data, not in %s", what,
                        t->has_raw_data ? "raw_data" : "external data");
    if (t->n_string_data != d->count)
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                        "%s: string_data has %zu strings, the shape needs %zu", what,
                        t->n_string_data, d->count);
    char *block;
    OX_RETURN_IF_ERROR(ox_string_block(imp, t->string_data, d->count, what, &block));
    d->owned = block;
    d->data = block;
    return NULL;
}

/* Finds T's dtype, size and bytes; on success the caller frees d->owned. */
static pl_status *ox_decode(const ox_import *imp, const Onnx__TensorProto *t,
                            const char *what, ox_data *d)
{
    memset(d, 0, sizeof *d);
    if (!t->has_data_type || t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__UNDEFINED)
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT, "%s: no data_type", what);
    d->type = ox_type_of(t->data_type);
    if (d->type == NULL)
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT, "%s: unknown elem_type %" PRId32, what,
                        t->data_type);
    if (!d->type->supported)
        return ox_error(imp, PL_CODE_UNSUPPORTED,
                        "%s: elem_type %s is not supported (Plinth has FLOAT, DOUBLE, "
                        "FLOAT16, BFLOAT16, INT8, UINT8, INT16, UINT16, INT32, UINT32, INT64, UINT64, BOOL, "
                        "STRING)",
                        what, d->type->name);
    if (d->type->supported == 2)
        return ox_nibbles(imp, t, what, d);
    if (d->type->supported == 3)
        return ox_strings(imp, t, what, d);
    OX_RETURN_IF_ERROR(ox_tensor_size(imp, t, what, pl_dtype_size(d->type->dtype), &d->count,
                                      &d->bytes));
    if (t->has_data_location &&
        t->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT &&
        t->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT, "%s: unknown data_location %d", what,
                        (int)t->data_location);
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return ox_external(imp, t, what, d);
    if (t->n_external_data)
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                        "%s: has external_data entries but data_location is not EXTERNAL",
                        what);
    int sources = (t->has_raw_data != 0) + (t->n_float_data != 0) + (t->n_int32_data != 0) +
                  (t->n_int64_data != 0) + (t->n_double_data != 0) +
                  (t->n_uint64_data != 0) + (t->n_string_data != 0);
    if (sources > 1)
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                        "%s: data is given in more than one field (raw_data and typed "
                        "fields exclude each other)",
                        what);
    int32_t ty = d->type->onnx;
    if (t->has_raw_data) {
        if (t->raw_data.len != d->bytes) {
            char shape[256];
            ox_format_dims(shape, sizeof shape, t->dims, t->n_dims);
            return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                            "%s: raw_data has %zu bytes, shape %s of %s needs %zu", what,
                            t->raw_data.len, shape, d->type->short_name, d->bytes);
        }
        d->data = t->raw_data.data;
        return NULL;
    }
    if (t->n_float_data)
        return ox_typed(imp, t, what, d, "float_data", t->n_float_data,
                        ty == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
    if (t->n_int32_data)
        return ox_typed(imp, t, what, d, "int32_data", t->n_int32_data,
                        ty == ONNX__TENSOR_PROTO__DATA_TYPE__INT32 ||
                            ty == ONNX__TENSOR_PROTO__DATA_TYPE__INT8 ||
                            ty == ONNX__TENSOR_PROTO__DATA_TYPE__UINT8 ||
                            ty == ONNX__TENSOR_PROTO__DATA_TYPE__INT16 ||
                            ty == ONNX__TENSOR_PROTO__DATA_TYPE__UINT16 ||
                            ty == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL ||
                            ty == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 ||
                            ty == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16);
    if (t->n_int64_data)
        return ox_typed(imp, t, what, d, "int64_data", t->n_int64_data,
                        ty == ONNX__TENSOR_PROTO__DATA_TYPE__INT64);
    if (t->n_double_data)
        return ox_typed(imp, t, what, d, "double_data", t->n_double_data,
                        ty == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE);
    if (t->n_uint64_data)
        return ox_typed(imp, t, what, d, "uint64_data", t->n_uint64_data,
                        ty == ONNX__TENSOR_PROTO__DATA_TYPE__UINT32 ||
                            ty == ONNX__TENSOR_PROTO__DATA_TYPE__UINT64);
    if (t->n_string_data)
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT, "%s: %s cannot hold a %s tensor", what,
                        "string_data", d->type->name);
    if (d->count != 0)
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                        "%s: no data (no raw_data, typed values or external data) for %zu "
                        "elements",
                        what, d->count);
    static const uint8_t empty[1];
    d->data = empty;
    return NULL;
}

/* True when D's bytes lie, as they are, in the mapped model file and are
 * worth the core reading itself (smaller ones are cheaper copied from the
 * mapping). */
static bool ox_in_file(const ox_import *imp, const ox_data *d)
{
    uintptr_t p = (uintptr_t)d->data, map = (uintptr_t)imp->map;
    return d->owned == NULL && map != 0 && d->bytes >= 4096 && p >= map &&
           p - map <= imp->file_bytes && d->bytes <= imp->file_bytes - (p - map) &&
           PL_ABI_HAS_FN(pl_graph_api, imp->graph, builder_constant_model_file);
}

pl_status *ox_tensor_constant(const ox_import *imp, const Onnx__TensorProto *t,
                              const char *name, const char *what)
{
    ox_data d;
    pl_status *st = ox_decode(imp, t, what, &d);
    if (st == NULL && d.external)
        st = ox_wrap(imp,
                     imp->graph->builder_constant_file(imp->b, name, d.type->dtype,
                                                       (int32_t)t->n_dims, t->dims,
                                                       d.location, d.offset,
                                                       (int64_t)d.bytes),
                     "%s", what);
    else if (st == NULL && ox_in_file(imp, &d))
        /* The core reads it from the file itself: the pages of the mapping
         * are never touched, so the weights are not resident twice. */
        st = ox_wrap(imp,
                     imp->graph->builder_constant_model_file(
                         imp->b, name, d.type->dtype, (int32_t)t->n_dims, t->dims,
                         (int64_t)((uintptr_t)d.data - (uintptr_t)imp->map),
                         (int64_t)d.bytes),
                     "%s", what);
    else if (st == NULL)
        st = ox_wrap(imp,
                     imp->graph->builder_constant(imp->b, name, d.type->dtype,
                                                  (int32_t)t->n_dims, t->dims, d.data,
                                                  d.bytes),
                     "%s", what);
    free(d.owned);
    return st;
}

pl_status *ox_tensor_bytes(const ox_import *imp, const Onnx__TensorProto *t,
                           const char *what, pl_dtype *out_dtype, void **out_data,
                           size_t *out_bytes)
{
    *out_data = NULL;
    *out_bytes = 0;
    ox_data d;
    pl_status *st = ox_decode(imp, t, what, &d);
    if (st == NULL && d.external)
        st = ox_error(imp, PL_CODE_UNSUPPORTED,
                      "%s: external data in a tensor attribute is not supported", what);
    if (st != NULL) {
        free(d.owned);
        return st;
    }
    if (d.owned == NULL) {
        d.owned = malloc(d.bytes ? d.bytes : 1);
        if (d.owned == NULL)
            return ox_error(imp, PL_CODE_OUT_OF_MEMORY, "%s: out of memory (%zu bytes)",
                            what, d.bytes);
        if (d.bytes)
            memcpy(d.owned, d.data, d.bytes);
    }
    *out_dtype = d.type->dtype;
    *out_data = d.owned;
    *out_bytes = d.bytes;
    return NULL;
}

pl_status *ox_sparse_constant(const ox_import *imp, const Onnx__SparseTensorProto *sp,
                              const char *name, const char *what)
{
    if (sp->values == NULL || sp->indices == NULL)
        return ox_error(imp, PL_CODE_INVALID_ARGUMENT, "%s: a sparse tensor needs values and "
                                                       "indices", what);
    /* the dense shape: sp's dims, checked as a tensor's are */
    Onnx__TensorProto shape = *sp->values;
    shape.n_dims = sp->n_dims;
    shape.dims = sp->dims;
    ox_data vd, id;
    pl_status *st = ox_decode(imp, sp->values, what, &vd);
    if (st != NULL)
        return st;
    size_t count = 0, bytes = 0, elem = pl_dtype_size(vd.type->dtype);
    if (vd.external || vd.type->supported == 2)
        st = ox_error(imp, PL_CODE_UNSUPPORTED, "%s: sparse values in external data or in "
                                                "4 bits are not supported", what);
    if (st == NULL)
        st = ox_tensor_size(imp, &shape, what, elem, &count, &bytes);
    /* its dense form is made in memory: no larger than a model file may be */
    if (st == NULL && bytes > imp->limits.max_file_bytes)
        st = ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                      "%s: its dense form takes %zu bytes, more than %" PRIu64
                      " (the onnx module's max_file_bytes)", what, bytes,
                      imp->limits.max_file_bytes);
    if (st == NULL && (sp->values->n_dims != 1 || (size_t)sp->values->dims[0] != vd.count))
        st = ox_error(imp, PL_CODE_INVALID_ARGUMENT, "%s: values must be 1-D", what);
    if (st != NULL) {
        free(vd.owned);
        return st;
    }
    memset(&id, 0, sizeof id);
    st = ox_decode(imp, sp->indices, what, &id);
    size_t nnz = vd.count, rank = sp->n_dims;
    const Onnx__TensorProto *it = sp->indices;
    bool linear = st == NULL && it->n_dims == 1 && (size_t)it->dims[0] == nnz;
    bool coords = st == NULL && it->n_dims == 2 && (size_t)it->dims[0] == nnz &&
                  (size_t)it->dims[1] == rank;
    if (st == NULL && (id.external || !PL_DTYPE_EQ(id.type->dtype, PL_DTYPE_I64)))
        st = ox_error(imp, PL_CODE_INVALID_ARGUMENT, "%s: indices must be INT64 in the file",
                      what);
    else if (st == NULL && !linear && !coords)
        st = ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                      "%s: indices must be [%zu] or [%zu, %zu] for %zu values of rank %zu",
                      what, nnz, nnz, rank, nnz, rank);
    unsigned char *dense = st == NULL ? calloc(bytes ? bytes : 1, 1) : NULL;
    if (st == NULL && dense == NULL)
        st = ox_error(imp, PL_CODE_OUT_OF_MEMORY, "%s: out of memory (%zu bytes)", what, bytes);
    for (size_t k = 0; st == NULL && k < nnz; k++) {
        int64_t at = 0;
        bool ok = true;
        if (linear) {
            memcpy(&at, (const unsigned char *)id.data + k * 8, 8);
            ok = at >= 0 && (uint64_t)at < count;
        } else {
            for (size_t d = 0; d < rank && ok; d++) {
                int64_t c;
                memcpy(&c, (const unsigned char *)id.data + (k * rank + d) * 8, 8);
                ok = c >= 0 && c < sp->dims[d];
                at = at * sp->dims[d] + c;
            }
        }
        if (!ok)
            st = ox_error(imp, PL_CODE_INVALID_ARGUMENT,
                          "%s: index %zu lies outside the dense shape", what, k);
        else
            memcpy(dense + (size_t)at * elem, (const unsigned char *)vd.data + k * elem, elem);
    }
    if (st == NULL)
        st = ox_wrap(imp,
                     imp->graph->builder_constant(imp->b, name, vd.type->dtype,
                                                  (int32_t)rank, sp->dims, dense, bytes),
                     "%s", what);
    free(dense);
    free(vd.owned);
    free(id.owned);
    return st;
}
