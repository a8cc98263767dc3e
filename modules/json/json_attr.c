/* json_attr.c — a node's attributes: each is an object with one key naming
 * its kind (int, float, string, string_hex, ints, floats, strings, tensor,
 * graph, graphs), checked and handed to the builder's attribute functions.
 * Bodies of control flow get a builder of their own from the core and are
 * read by json_graph.c. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json_internal.h"

static const char js_attr_kinds[] =
    "int, float, string, string_hex, ints, floats, strings, tensor, graph, graphs";

/* Decodes the hex string V (checked to be EXPECT bytes, or any length when
 * EXPECT is SIZE_MAX) into a new malloc buffer (one byte more, NUL, so that
 * string attributes can use it directly). */
static pl_status *js_hex_member(const js_load *L, const char *path, const json_t *v,
                                size_t expect, unsigned char **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    if (!json_is_string(v))
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected a string of hex digits, got %s", js_kind_name(v));
    size_t hex_len = json_string_length(v);
    const char *hex = json_string_value(v);
    if (hex_len % 2 != 0)
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path, "odd number of hex digits (%zu)",
                        hex_len);
    size_t n = hex_len / 2;
    if (expect != SIZE_MAX && n != expect)
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "%zu bytes of hex data, the dtype and shape need %zu", n, expect);
    unsigned char *buf = malloc(n + 1);
    if (buf == NULL)
        return js_oom(L, "decoding hex data");
    for (size_t i = 0; i < n; i++) {
        int hi = js_hex_value(hex[2 * i]), lo = js_hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            free(buf);
            return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                            "'%c%c' at character %zu is not a hex byte", hex[2 * i],
                            hex[2 * i + 1], 2 * i);
        }
        buf[i] = (unsigned char)(hi << 4 | lo);
    }
    buf[n] = '\0';
    *out = buf;
    *out_len = n;
    return NULL;
}

static pl_status *js_attr_ints(js_load *L, const char *path, size_t n, const char *name,
                               const json_t *v)
{
    if (!json_is_array(v))
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected an array of integers, got %s", js_kind_name(v));
    size_t count = json_array_size(v);
    int64_t *vals = malloc((count ? count : 1) * sizeof *vals);
    if (vals == NULL)
        return js_oom(L, "reading an attribute");
    for (size_t i = 0; i < count; i++) {
        json_t *e = json_array_get(v, i);
        if (!json_is_integer(e)) {
            free(vals);
            return js_error_at(L, path, i, "expected an integer, got %s", js_kind_name(e));
        }
        vals[i] = (int64_t)json_integer_value(e);
    }
    pl_status *st = js_wrap(L, path, L->api->builder_attr_ints(L->b, n, name, vals, count));
    free(vals);
    return st;
}

static pl_status *js_attr_floats(js_load *L, const char *path, size_t n, const char *name,
                                 const json_t *v)
{
    if (!json_is_array(v))
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected an array of numbers, got %s", js_kind_name(v));
    size_t count = json_array_size(v);
    double *vals = malloc((count ? count : 1) * sizeof *vals);
    if (vals == NULL)
        return js_oom(L, "reading an attribute");
    for (size_t i = 0; i < count; i++) {
        json_t *e = json_array_get(v, i);
        if (!js_get_double(e, &vals[i])) {
            free(vals);
            return js_error_at(L, path, i,
                               "expected a number (or \"inf\", \"-inf\", \"nan\", "
                               "\"nan:0x<16 hex digits>\"), got %s",
                               js_kind_name(e));
        }
    }
    pl_status *st = js_wrap(L, path, L->api->builder_attr_floats(L->b, n, name, vals, count));
    free(vals);
    return st;
}

static pl_status *js_attr_strings(js_load *L, const char *path, size_t n, const char *name,
                                  const json_t *v)
{
    if (!json_is_array(v))
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected an array of strings, got %s", js_kind_name(v));
    size_t count = json_array_size(v);
    size_t slots = count ? count : 1;
    const char **vals = malloc(slots * sizeof *vals);
    unsigned char **owned = calloc(slots, sizeof *owned);
    pl_status *st = NULL;
    if (vals == NULL || owned == NULL)
        st = js_oom(L, "reading an attribute");
    for (size_t i = 0; st == NULL && i < count; i++) {
        json_t *e = json_array_get(v, i);
        char epath[JS_WHERE];
        js_path(epath, "%s[%zu]", path, i);
        if (json_is_string(e)) {
            vals[i] = json_string_value(e);
            continue;
        }
        json_t *hex = json_is_object(e) && json_object_size(e) == 1
                          ? json_object_get(e, "string_hex")
                          : NULL;
        if (hex == NULL) {
            st = js_error(L, PL_CODE_INVALID_ARGUMENT, epath,
                          "expected a string or {\"string_hex\": ...}, got %s",
                          js_kind_name(e));
            break;
        }
        size_t len;
        char hpath[JS_WHERE];
        js_path_key(hpath, epath, "string_hex");
        st = js_hex_member(L, hpath, hex, SIZE_MAX, &owned[i], &len);
        if (st == NULL && memchr(owned[i], '\0', len) != NULL)
            st = js_error(L, PL_CODE_INVALID_ARGUMENT, hpath,
                          "contains a NUL byte, which an element of a strings attribute "
                          "cannot hold");
        if (st == NULL)
            vals[i] = (const char *)owned[i];
    }
    if (st == NULL)
        st = js_wrap(L, path, L->api->builder_attr_strings(L->b, n, name, vals, count));
    for (size_t i = 0; owned && i < count; i++)
        free(owned[i]);
    free(owned);
    free(vals);
    return st;
}

/* Fills DST (ELEMENTS values of DTYPE) from the JSON array VALUES. */
static pl_status *js_tensor_values(const js_load *L, const char *path, pl_dtype dtype,
                                   const json_t *values, size_t elements,
                                   unsigned char *dst)
{
    size_t esize = pl_dtype_size(dtype);
    for (size_t i = 0; i < elements; i++) {
        json_t *e = json_array_get(values, i);
        unsigned char *p = dst + i * esize;
        if (dtype.code == PL_TYPE_FLOAT && (dtype.bits == 32 || dtype.bits == 64)) {
            double d;
            if (!js_get_double(e, &d))
                return js_error_at(L, path, i, "expected a number, got %s",
                                   js_kind_name(e));
            if (dtype.bits == 32) {
                float f = (float)d;
                memcpy(p, &f, sizeof f);
            } else {
                memcpy(p, &d, sizeof d);
            }
            continue;
        }
        if (dtype.code == PL_TYPE_BOOL) {
            if (!json_is_boolean(e) &&
                !(json_is_integer(e) &&
                  (json_integer_value(e) == 0 || json_integer_value(e) == 1)))
                return js_error_at(L, path, i, "expected true, false, 0 or 1, got %s",
                                   js_kind_name(e));
            *p = json_is_true(e) || (json_is_integer(e) && json_integer_value(e));
            continue;
        }
        if (!json_is_integer(e))
            return js_error_at(L, path, i, "expected an integer, got %s", js_kind_name(e));
        int64_t x = (int64_t)json_integer_value(e);
        int64_t lo, hi;
        if (dtype.code == PL_TYPE_UINT) {
            /* u64 beyond INT64_MAX: JSON's integers stop there; data_hex */
            lo = 0;
            hi = dtype.bits == 8    ? UINT8_MAX
                 : dtype.bits == 16 ? UINT16_MAX
                 : dtype.bits == 32 ? (int64_t)UINT32_MAX
                                    : INT64_MAX;
        } else if (dtype.bits == 8) {
            lo = INT8_MIN;
            hi = INT8_MAX;
        } else if (dtype.bits == 16) {
            lo = INT16_MIN;
            hi = INT16_MAX;
        } else if (dtype.bits == 32) {
            lo = INT32_MIN;
            hi = INT32_MAX;
        } else {
            lo = INT64_MIN;
            hi = INT64_MAX;
        }
        if (x < lo || x > hi)
            return js_error_at(L, path, i, "%" PRId64 " is out of range for %s", x,
                               js_dtype_name(dtype));
        if (esize == 1) {
            uint8_t b = (uint8_t)(x & 0xff);
            memcpy(p, &b, 1);
        } else if (esize == 2) {
            uint16_t h = (uint16_t)(x & 0xffff);
            memcpy(p, &h, 2);
        } else if (esize == 4) {
            uint32_t w = (uint32_t)(x & 0xffffffff);
            memcpy(p, &w, 4);
        } else {
            memcpy(p, &x, 8);
        }
    }
    return NULL;
}

static pl_status *js_attr_tensor(js_load *L, const char *path, size_t n, const char *name,
                                 const json_t *v)
{
    if (!json_is_object(v))
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected an object {\"dtype\", \"shape\", \"data_hex\" or "
                        "\"values\"}, got %s",
                        js_kind_name(v));
    static const char *const keys[] = {"dtype", "shape", "data_hex", "values", NULL};
    JS_RETURN_IF_ERROR(js_only_keys(L, path, (json_t *)v, keys));
    char sub[JS_WHERE];
    json_t *m;
    pl_dtype dtype;
    JS_RETURN_IF_ERROR(js_member(L, path, (json_t *)v, "dtype", true, &m));
    js_path_key(sub, path, "dtype");
    JS_RETURN_IF_ERROR(js_dtype(L, sub, m, &dtype));
    int64_t dims[JS_MAX_RANK];
    int32_t ndim;
    JS_RETURN_IF_ERROR(js_member(L, path, (json_t *)v, "shape", true, &m));
    js_path_key(sub, path, "shape");
    JS_RETURN_IF_ERROR(js_shape(L, sub, m, 0, dims, &ndim));
    size_t bytes, elements;
    if (!js_dims_elements(dims, ndim, &elements) || !js_shape_bytes(dtype, dims, ndim, &bytes))
        return js_error(L, PL_CODE_INVALID_ARGUMENT, sub,
                        "the byte size of this %s shape overflows size_t",
                        js_dtype_name(dtype));
    json_t *hex = json_object_get(v, "data_hex");
    json_t *values = json_object_get(v, "values");
    if ((hex == NULL) == (values == NULL))
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected exactly one of 'data_hex' and 'values'");
    unsigned char *data = NULL;
    size_t len;
    if (hex != NULL) {
        js_path_key(sub, path, "data_hex");
        JS_RETURN_IF_ERROR(js_hex_member(L, sub, hex, bytes, &data, &len));
    } else {
        js_path_key(sub, path, "values");
        if (dtype.code == PL_TYPE_BFLOAT || (dtype.code == PL_TYPE_FLOAT && dtype.bits == 16))
            return js_error(L, PL_CODE_INVALID_ARGUMENT, sub,
                            "not supported for %s; give the bytes as data_hex",
                            js_dtype_name(dtype));
        if (!json_is_array(values) || json_array_size(values) != elements)
            return js_error(L, PL_CODE_INVALID_ARGUMENT, sub,
                            "expected an array of %zu values (the shape's element count)",
                            elements);
        data = malloc(bytes ? bytes : 1);
        if (data == NULL)
            return js_oom(L, "reading a tensor attribute");
        pl_status *st = js_tensor_values(L, sub, dtype, values, elements, data);
        if (st != NULL) {
            free(data);
            return st;
        }
    }
    pl_status *st = js_wrap(L, path,
                            L->api->builder_attr_tensor(L->b, n, name, dtype, ndim, dims,
                                                        data, bytes));
    free(data);
    return st;
}

/* A GRAPH (one body) or GRAPHS (an array of bodies) attribute. The core
 * makes the bodies and a builder for each; their content is read into them
 * in order. */
static pl_status *js_attr_graphs(js_load *L, const char *path, size_t n, const char *name,
                                 json_t *val, bool many)
{
    if (many && !json_is_array(val))
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected an array of graph objects, got %s", js_kind_name(val));
    if (!many && !json_is_object(val))
        return js_load_body(L, path, val, NULL); /* says what is wrong */
    size_t count = many ? json_array_size(val) : 1;
    pl_graph_builder **bodies = calloc(count ? count : 1, sizeof *bodies);
    if (bodies == NULL)
        return js_oom(L, "reading a graph attribute");
    pl_status *st = many ? L->api->builder_attr_graphs(L->b, n, name, count, bodies)
                         : L->api->builder_attr_graph(L->b, n, name, &bodies[0]);
    st = js_wrap(L, path, st);
    for (size_t i = 0; st == NULL && i < count; i++) {
        char where[JS_WHERE];
        if (many)
            js_path(where, "%s[%zu]", path, i);
        else
            js_path(where, "%s", path);
        st = js_load_body(L, where, many ? json_array_get(val, i) : val, bodies[i]);
    }
    free(bodies);
    return st;
}

pl_status *js_load_attr(js_load *L, const char *node_where, size_t n, const char *name,
                        json_t *v)
{
    char path[JS_WHERE];
    js_path(path, "%s.attributes.%.120s", node_where, name);
    if (name[0] == '\0')
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "an attribute needs a non-empty name");
    if (!json_is_object(v) || json_object_size(v) == 0)
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected an object with one key naming the kind (%s), got %s",
                        js_attr_kinds, json_is_object(v) ? "{}" : js_kind_name(v));
    if (json_object_size(v) > 1) {
        void *it = json_object_iter(v);
        const char *k1 = json_object_iter_key(it);
        const char *k2 = json_object_iter_key(json_object_iter_next(v, it));
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "has %zu kinds ('%.40s', '%.40s', ...); an attribute has exactly "
                        "one",
                        json_object_size(v), k1, k2);
    }
    void *it = json_object_iter(v);
    const char *kind = json_object_iter_key(it);
    json_t *val = json_object_iter_value(it);
    char kpath[JS_WHERE];
    js_path_key(kpath, path, kind);
    const pl_graph_api *api = L->api;
    if (strcmp(kind, "int") == 0) {
        if (!json_is_integer(val))
            return js_error(L, PL_CODE_INVALID_ARGUMENT, kpath,
                            "expected an integer, got %s", js_kind_name(val));
        return js_wrap(L, path,
                       api->builder_attr_int(L->b, n, name, (int64_t)json_integer_value(val)));
    }
    if (strcmp(kind, "float") == 0) {
        double d;
        if (!js_get_double(val, &d))
            return js_error(L, PL_CODE_INVALID_ARGUMENT, kpath,
                            "expected a number (or \"inf\", \"-inf\", \"nan\", "
                            "\"nan:0x<16 hex digits>\"), got %s",
                            js_kind_name(val));
        return js_wrap(L, path, api->builder_attr_float(L->b, n, name, d));
    }
    if (strcmp(kind, "string") == 0) {
        if (!json_is_string(val))
            return js_error(L, PL_CODE_INVALID_ARGUMENT, kpath, "expected a string, got %s",
                            js_kind_name(val));
        return js_wrap(L, path,
                       api->builder_attr_string(L->b, n, name, json_string_value(val),
                                                json_string_length(val)));
    }
    if (strcmp(kind, "string_hex") == 0) {
        unsigned char *bytes;
        size_t len;
        JS_RETURN_IF_ERROR(js_hex_member(L, kpath, val, SIZE_MAX, &bytes, &len));
        pl_status *st = js_wrap(L, path,
                                api->builder_attr_string(L->b, n, name,
                                                         (const char *)bytes, len));
        free(bytes);
        return st;
    }
    if (strcmp(kind, "ints") == 0)
        return js_attr_ints(L, kpath, n, name, val);
    if (strcmp(kind, "floats") == 0)
        return js_attr_floats(L, kpath, n, name, val);
    if (strcmp(kind, "strings") == 0)
        return js_attr_strings(L, kpath, n, name, val);
    if (strcmp(kind, "tensor") == 0)
        return js_attr_tensor(L, kpath, n, name, val);
    if (strcmp(kind, "graph") == 0 || strcmp(kind, "graphs") == 0)
        return js_attr_graphs(L, kpath, n, name, val, strcmp(kind, "graphs") == 0);
    return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                    "unknown attribute kind '%.40s' (expected one of %s)", kind,
                    js_attr_kinds);
}
