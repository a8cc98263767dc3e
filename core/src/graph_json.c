/* graph_json.c — Plinth's native model format (graph_json.h,
 * docs/graph-format.md). A model is a JSON file read with jansson plus a
 * sidecar of constants that is mapped read-only and lent to the graph. The
 * loader checks every field against what the format allows and reports the
 * first problem with the file and either the parser's line and column or
 * the JSON path of the value ("nodes[3] ('conv1').attributes.kernel_shape").
 * The writer produces the same format (and, for modules, the same JSON for a
 * subgraph without a sidecar); a saved graph loads back identical and saves
 * again to the same bytes.
 *
 * Memory: everything of the core's is allocated through alloc.h, so the
 * allocation-failure tests can fail each allocation in turn; every such
 * failure comes back as PL_CODE_OUT_OF_MEMORY. Jansson's tree comes from
 * jansson's global allocator, which an application embedding the core may
 * have set itself: the core never replaces it. Its failures are not
 * counted by the sweeps, but every jansson call that can fail is checked. */
#include "graph_json.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "datafile.h"
#include "status.h"

/* Room for a JSON path in a message; names in it are cut to keep it so. */
#define GJ_WHERE 640
#define GJ_NAME_FMT "%.160s"

/* Formats a JSON path into BUF (GJ_WHERE bytes); paths longer than that are
 * cut, which only shortens a message. */
static void gj_path(char *buf, const char *fmt, ...) PL_PRINTF_LIKE(2, 3);
static void gj_path(char *buf, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, GJ_WHERE, fmt, ap);
    va_end(ap);
}

/* ==== shared helpers ===================================================== */

static pl_status *gj_oom(const char *what)
{
    return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory %s", what);
}

/* jansson drops some allocation failures on the floor and reports a
 * syntax-looking error instead; when a failed parse or dump coincides with
 * an allocator that refuses even one byte, memory is what failed. */
static bool gj_memory_exhausted(void)
{
    void *p = pl_malloc(1);
    if (p == NULL)
        return true;
    pl_free(p);
    return false;
}

/* Strict UTF-8 as JSON needs it: no overlong forms, no surrogates, nothing
 * above U+10FFFF. NUL bytes pass here; callers that cannot hold them check. */
static bool gj_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        unsigned c = p[i];
        size_t n;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            n = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (len - i - 1 < n)
            return false;
        for (size_t k = 1; k <= n; k++) {
            if ((p[i + k] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (p[i + k] & 0x3f);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
            cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += n + 1;
    }
    return true;
}

/* True when S (LEN bytes) can be a JSON string of the format: UTF-8 and no
 * NUL (jansson is used without JSON_ALLOW_NUL). */
static bool gj_json_safe(const char *s, size_t len)
{
    return memchr(s, '\0', len) == NULL && gj_utf8_valid(s, len);
}

static const char gj_hex_digits[] = "0123456789abcdef";

static int gj_hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The directory part of PATH ("." when it has none), from pl_malloc. */
static char *gj_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        return pl_xstrdup(".");
    if (slash == path)
        return pl_xstrdup("/");
    return pl_xstrndup(path, (size_t)(slash - path));
}

/* DIR + "/" + NAME, from pl_malloc; NULL when out of memory. */
static char *gj_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name), total;
    if (!pl_size_add(a, b, &total) || !pl_size_add(total, 2, &total))
        return NULL;
    char *out = pl_malloc(total);
    if (out == NULL)
        return NULL;
    memcpy(out, dir, a);
    out[a] = '/';
    memcpy(out + a + 1, name, b);
    out[a + 1 + b] = '\0';
    return out;
}

/* The byte size of a fully known shape; false on overflow. */
static bool gj_shape_bytes(pl_dtype dtype, const int64_t *dims, int32_t ndim,
                           size_t *out_bytes)
{
    size_t elements;
    return pl_dims_elements(dims, ndim, &elements) &&
           pl_size_mul(elements, pl_dtype_size(dtype), out_bytes);
}

/* ==== loading ============================================================ */

typedef struct gj_load {
    const char *src;            /* the file, or "(string)", for messages */
    const char *base_dir;       /* where the sidecar is looked up; may be NULL */
    pl_graph *g;
    const unsigned char *weights; /* the mapped sidecar, NULL when empty */
    size_t weights_size;
    const char *weights_name;   /* as the JSON names it; NULL when none */
    /* Inside a body: the JSON path of its object with a trailing '.',
     * put before every path; NULL at the top level. */
    const char *scope;
} gj_load;

/* "SRC: WHERE: message" (or "SRC: message" when WHERE is empty). */
static pl_status *gj_error(const gj_load *L, pl_code code, const char *where,
                           const char *fmt, ...) PL_PRINTF_LIKE(4, 5);
static pl_status *gj_error(const gj_load *L, pl_code code, const char *where,
                           const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *scope = L->scope ? L->scope : "";
    if (where == NULL || where[0] == '\0')
        return scope[0] ? pl_status_create(code, "%s: %.*s: %s", L->src,
                                           (int)strlen(scope) - 1, scope, msg)
                        : pl_status_create(code, "%s: %s", L->src, msg);
    return pl_status_create(code, "%s: %s%s: %s", L->src, scope, where, msg);
}

/* Same as gj_error for element INDEX of the array at PATH. */
static pl_status *gj_error_at(const gj_load *L, const char *path, size_t index,
                              const char *fmt, ...) PL_PRINTF_LIKE(4, 5);
static pl_status *gj_error_at(const gj_load *L, const char *path, size_t index,
                              const char *fmt, ...)
{
    char where[GJ_WHERE], msg[1024];
    gj_path(where, "%s[%zu]", path, index);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return gj_error(L, PL_CODE_INVALID_ARGUMENT, where, "%s", msg);
}

/* Prefixes a status from graph.c with the file and JSON path. */
static pl_status *gj_wrap(const gj_load *L, const char *where, pl_status *st)
{
    if (st == NULL)
        return NULL;
    const char *scope = L->scope ? L->scope : "";
    if (where == NULL || where[0] == '\0')
        return scope[0] ? pl_status_wrap(st, "%s: %.*s: ", L->src, (int)strlen(scope) - 1,
                                         scope)
                        : pl_status_wrap(st, "%s: ", L->src);
    return pl_status_wrap(st, "%s: %s%s: ", L->src, scope, where);
}

static const char *gj_kind_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE: return "true";
    case JSON_FALSE: return "false";
    case JSON_NULL: return "null";
    }
    return "a value";
}

/* WHERE.KEY, or KEY at the top level. */
static void gj_path_key(char *buf, const char *where, const char *key)
{
    if (where[0] == '\0')
        gj_path(buf, "%.200s", key);
    else
        gj_path(buf, "%s.%.200s", where, key);
}

/* Refuses keys of OBJ that are not in ALLOWED (NULL-terminated): a typo in
 * an optional key must not silently drop what it was meant to say. */
static pl_status *gj_only_keys(const gj_load *L, const char *where,
                               json_t *obj, const char *const *allowed)
{
    const char *key;
    json_t *value;
    json_object_foreach(obj, key, value) {
        (void)value;
        bool known = false;
        for (size_t i = 0; allowed[i] && !known; i++)
            known = strcmp(key, allowed[i]) == 0;
        if (!known)
            return gj_error(L, PL_CODE_INVALID_ARGUMENT, where,
                            "unknown key '%.200s'", key);
    }
    return NULL;
}

/* The value of KEY in OBJ, which must exist when REQUIRED. */
static pl_status *gj_member(const gj_load *L, const char *where, json_t *obj,
                            const char *key, bool required, json_t **out)
{
    *out = json_object_get(obj, key);
    if (*out == NULL && required)
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, where,
                        "missing required key '%s'", key);
    return NULL;
}

/* A string member; *out stays NULL when it is absent and optional. */
static pl_status *gj_string_member(const gj_load *L, const char *where,
                                   json_t *obj, const char *key, bool required,
                                   bool nonempty, const char **out)
{
    *out = NULL;
    json_t *v;
    PL_RETURN_IF_ERROR(gj_member(L, where, obj, key, required, &v));
    if (v == NULL)
        return NULL;
    char path[GJ_WHERE];
    gj_path_key(path, where, key);
    if (!json_is_string(v))
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected a string, got %s", gj_kind_name(v));
    if (nonempty && json_string_length(v) == 0)
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path, "must not be empty");
    *out = json_string_value(v);
    return NULL;
}

/* An array member whose size must not exceed MAX. */
static pl_status *gj_array_member(const gj_load *L, const char *where,
                                  json_t *obj, const char *key, bool required,
                                  size_t max, const char *expected,
                                  json_t **out)
{
    PL_RETURN_IF_ERROR(gj_member(L, where, obj, key, required, out));
    if (*out == NULL)
        return NULL;
    char path[GJ_WHERE];
    gj_path_key(path, where, key);
    if (!json_is_array(*out))
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path, "expected %s, got %s",
                        expected, gj_kind_name(*out));
    if (json_array_size(*out) > max)
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "%zu entries exceed the limit of %zu",
                        json_array_size(*out), max);
    return NULL;
}

/* A number as a double: JSON integers and reals, and the strings the writer
 * uses for values JSON cannot spell ("inf", "-inf", "nan", "nan:0x<bits>"). */
static bool gj_get_double(const json_t *v, double *out)
{
    if (json_is_real(v)) {
        *out = json_real_value(v);
        return true;
    }
    if (json_is_integer(v)) {
        *out = (double)json_integer_value(v);
        return true;
    }
    if (!json_is_string(v))
        return false;
    const char *s = json_string_value(v);
    if (strcmp(s, "inf") == 0) {
        *out = INFINITY;
        return true;
    }
    if (strcmp(s, "-inf") == 0) {
        *out = -INFINITY;
        return true;
    }
    if (strcmp(s, "nan") == 0) {
        *out = NAN;
        return true;
    }
    if (strncmp(s, "nan:0x", 6) == 0 && strlen(s) == 22) {
        uint64_t bits = 0;
        for (int i = 6; i < 22; i++) {
            int d = gj_hex_value(s[i]);
            if (d < 0)
                return false;
            bits = bits << 4 | (uint64_t)d;
        }
        double d;
        memcpy(&d, &bits, sizeof d);
        if (!isnan(d))
            return false;
        *out = d;
        return true;
    }
    return false;
}

/* Decodes the hex string V (checked to be EXPECT bytes, or any length when
 * EXPECT is SIZE_MAX) into a new pl_malloc buffer (one byte more, NUL, so
 * that string attributes can use it directly). */
static pl_status *gj_hex_member(const gj_load *L, const char *path,
                                const json_t *v, size_t expect,
                                unsigned char **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    if (!json_is_string(v))
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected a string of hex digits, got %s",
                        gj_kind_name(v));
    size_t hex_len = json_string_length(v);
    const char *hex = json_string_value(v);
    if (hex_len % 2 != 0)
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "odd number of hex digits (%zu)", hex_len);
    size_t n = hex_len / 2;
    if (expect != SIZE_MAX && n != expect)
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "%zu bytes of hex data, the dtype and shape need %zu",
                        n, expect);
    unsigned char *buf = pl_malloc(n + 1);
    if (buf == NULL)
        return gj_oom("decoding hex data");
    for (size_t i = 0; i < n; i++) {
        int hi = gj_hex_value(hex[2 * i]), lo = gj_hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            pl_free(buf);
            return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                            "'%c%c' at character %zu is not a hex byte",
                            hex[2 * i], hex[2 * i + 1], 2 * i);
        }
        buf[i] = (unsigned char)(hi << 4 | lo);
    }
    buf[n] = '\0';
    *out = buf;
    *out_len = n;
    return NULL;
}

/* A shape: an array of at most PL_GRAPH_MAX_RANK integers, each >= MIN_DIM
 * (-1 for tensor types, 0 for tensor attributes). */
static pl_status *gj_shape(const gj_load *L, const char *path, const json_t *v,
                           int64_t min_dim, int64_t *dims, int32_t *out_ndim)
{
    if (!json_is_array(v))
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected an array of integers%s, got %s",
                        min_dim < 0 ? " or null" : "", gj_kind_name(v));
    size_t n = json_array_size(v);
    if (n > PL_GRAPH_MAX_RANK)
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "rank %zu exceeds the maximum of %d", n,
                        PL_GRAPH_MAX_RANK);
    for (size_t i = 0; i < n; i++) {
        json_t *d = json_array_get(v, i);
        char epath[GJ_WHERE];
        gj_path(epath, "%s[%zu]", path, i);
        if (!json_is_integer(d))
            return gj_error(L, PL_CODE_INVALID_ARGUMENT, epath,
                            "expected an integer, got %s", gj_kind_name(d));
        json_int_t x = json_integer_value(d);
        if (x < min_dim)
            return gj_error(L, PL_CODE_INVALID_ARGUMENT, epath,
                            "%lld is not a dim (expected an integer >= %lld%s)",
                            (long long)x, (long long)min_dim,
                            min_dim < 0 ? ", -1 meaning unknown" : "");
        dims[i] = (int64_t)x;
    }
    *out_ndim = (int32_t)n;
    return NULL;
}

static pl_status *gj_dtype(const gj_load *L, const char *path, const json_t *v,
                           pl_dtype *out)
{
    if (!json_is_string(v))
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected a dtype name, got %s", gj_kind_name(v));
    if (!pl_dtype_parse(json_string_value(v), out))
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "unknown dtype '%.40s' (known: f32 f64 f16 bf16 u8 i8 "
                        "i32 i64 bool)",
                        json_string_value(v));
    return NULL;
}

/* ---- the sidecar -------------------------------------------------------- */

/* Maps NAME (the "weights" value) through the one file-confinement rule
 * (datafile.c: relative, no '..', inside the model's directory once links
 * are resolved, a regular file) and hands the mapping to the graph. */
static pl_status *gj_map_weights(gj_load *L, const char *name)
{
    const char *where = "weights";
    L->weights_name = name;
    if (L->base_dir == NULL)
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, where,
                        "'%.200s' cannot be found: the text was loaded "
                        "without a base directory",
                        name);
    void *addr = NULL;
    size_t size = 0;
    pl_status *st = pl_datafile_map(L->base_dir, name, "sidecar", &addr, &size);
    if (st != NULL)
        return gj_wrap(L, where, st);
    if (addr == NULL)
        return NULL;
    st = pl_graph_keep_mapping(L->g, addr, size);
    if (st != NULL) {
        /* The graph did not take it. */
        munmap(addr, size);
        return gj_wrap(L, where, st);
    }
    L->weights = addr;
    L->weights_size = size;
    return NULL;
}

/* ---- tensors ------------------------------------------------------------ */

static pl_status *gj_tensor_data(gj_load *L, const char *where, pl_tid id,
                                 const json_t *data)
{
    char path[GJ_WHERE];
    gj_path_key(path, where, "data");
    if (!json_is_object(data))
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected an object {\"offset\", \"length\"}, got %s",
                        gj_kind_name(data));
    static const char *const keys[] = {"offset", "length", NULL};
    PL_RETURN_IF_ERROR(gj_only_keys(L, path, (json_t *)data, keys));
    json_t *joff = json_object_get(data, "offset");
    json_t *jlen = json_object_get(data, "length");
    if (jlen == NULL)
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "missing required key 'length'");
    if (joff == NULL)
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "missing required key 'offset' (a constant without "
                        "an offset only appears in the JSON of a graph view, "
                        "which no sidecar accompanies)");
    if (!json_is_integer(joff) || json_integer_value(joff) < 0)
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "offset: expected an integer >= 0");
    if (!json_is_integer(jlen) || json_integer_value(jlen) < 0)
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "length: expected an integer >= 0");
    uint64_t off64 = (uint64_t)json_integer_value(joff);
    uint64_t len64 = (uint64_t)json_integer_value(jlen);

    const pl_graph_tensor *t = pl_graph_get_tensor(L->g, id);
    bool known = t->dtype.lanes != 0 && t->ndim >= 0;
    for (int32_t i = 0; known && i < t->ndim; i++)
        known = t->dims[i] >= 0;
    if (!known)
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "a constant needs a known dtype and a fully known shape");
    size_t expect;
    if (!pl_graph_tensor_bytes(t, &expect))
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "the byte size of the shape overflows size_t");
    if (len64 != (uint64_t)expect)
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "length %" PRIu64 " does not match the %zu bytes its "
                        "dtype (%s) and shape need",
                        len64, expect, pl_dtype_name(t->dtype));
    if (L->weights_name == NULL)
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "a constant, but the model names no \"weights\" file");
    size_t end;
    if (off64 > SIZE_MAX || !pl_size_add((size_t)off64, expect, &end) ||
        end > L->weights_size)
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "offset %" PRIu64 " + length %" PRIu64 " lies past "
                        "the end of '%.200s' (%zu bytes)",
                        off64, len64, L->weights_name, L->weights_size);
    size_t off = (size_t)off64;
    pl_status *st;
    if (expect == 0)
        st = pl_graph_set_constant_ref(L->g, id, NULL, 0);
    else if (off % PL_GRAPH_JSON_ALIGN == 0)
        st = pl_graph_set_constant_ref(L->g, id, L->weights + off, expect);
    else /* misaligned for SIMD loads (or even for the element): copy */
        st = pl_graph_set_constant(L->g, id, L->weights + off, expect);
    return gj_wrap(L, path, st);
}

static pl_status *gj_load_tensor(gj_load *L, size_t i, json_t *jt)
{
    char where[GJ_WHERE], path[GJ_WHERE];
    gj_path(where, "tensors[%zu]", i);
    if (!json_is_object(jt))
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, where,
                        "expected an object, got %s", gj_kind_name(jt));
    const char *name;
    PL_RETURN_IF_ERROR(gj_string_member(L, where, jt, "name", true, true, &name));
    gj_path(where, "tensors[%zu] ('" GJ_NAME_FMT "')", i, name);
    static const char *const keys[] = {"name", "dtype", "shape", "dim_params",
                                       "data", NULL};
    PL_RETURN_IF_ERROR(gj_only_keys(L, where, jt, keys));
    pl_tid first = pl_graph_find_tensor(L->g, name);
    if (first != PL_TID_NONE)
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, where,
                        "duplicate tensor name (first at tensors[%u])", first);

    pl_dtype dtype = {0, 0, 0};
    json_t *v = json_object_get(jt, "dtype");
    if (v != NULL && !json_is_null(v)) {
        gj_path_key(path, where, "dtype");
        PL_RETURN_IF_ERROR(gj_dtype(L, path, v, &dtype));
    }
    int64_t dims[PL_GRAPH_MAX_RANK];
    int32_t ndim = -1;
    v = json_object_get(jt, "shape");
    if (v != NULL && !json_is_null(v)) {
        gj_path_key(path, where, "shape");
        PL_RETURN_IF_ERROR(gj_shape(L, path, v, -1, dims, &ndim));
    }
    const char *params[PL_GRAPH_MAX_RANK];
    bool have_params = false;
    v = json_object_get(jt, "dim_params");
    if (v != NULL && !json_is_null(v)) {
        gj_path_key(path, where, "dim_params");
        if (ndim < 0)
            return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                            "given, but the shape (rank) is unknown");
        if (!json_is_array(v) || json_array_size(v) != (size_t)ndim)
            return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                            "expected an array of %d strings or nulls, one "
                            "per dim",
                            (int)ndim);
        for (int32_t k = 0; k < ndim; k++) {
            json_t *p = json_array_get(v, (size_t)k);
            if (json_is_null(p))
                params[k] = NULL;
            else if (json_is_string(p) && json_string_length(p) > 0)
                params[k] = json_string_value(p);
            else
                return gj_error_at(L, path, (size_t)k,
                                   "expected a non-empty string or null, got %s",
                                   gj_kind_name(p));
        }
        have_params = true;
    }
    /* A fully known shape whose bytes cannot be counted describes nothing
     * that can exist. */
    bool full = ndim >= 0;
    for (int32_t k = 0; full && k < ndim; k++)
        full = dims[k] >= 0;
    size_t bytes;
    if (full && dtype.lanes != 0 && !gj_shape_bytes(dtype, dims, ndim, &bytes)) {
        gj_path_key(path, where, "shape");
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "the byte size of this %s shape overflows size_t",
                        pl_dtype_name(dtype));
    }

    pl_tid id;
    PL_RETURN_IF_ERROR(gj_wrap(L, where, pl_graph_tensor_get_or_add(L->g, name, &id)));
    PL_RETURN_IF_ERROR(gj_wrap(L, where,
                               pl_graph_set_type(L->g, id, dtype, ndim,
                                                 ndim > 0 ? dims : NULL,
                                                 have_params ? params : NULL)));
    v = json_object_get(jt, "data");
    if (v != NULL && !json_is_null(v))
        PL_RETURN_IF_ERROR(gj_tensor_data(L, where, id, v));
    return NULL;
}

/* ---- attributes --------------------------------------------------------- */

static pl_status *gj_attr_ints(gj_load *L, const char *path, pl_nid n,
                               const char *name, const json_t *v)
{
    if (!json_is_array(v))
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected an array of integers, got %s", gj_kind_name(v));
    size_t count = json_array_size(v);
    int64_t *vals = pl_malloc((count ? count : 1) * sizeof *vals);
    if (vals == NULL)
        return gj_oom("reading an attribute");
    for (size_t i = 0; i < count; i++) {
        json_t *e = json_array_get(v, i);
        if (!json_is_integer(e)) {
            pl_free(vals);
            return gj_error_at(L, path, i, "expected an integer, got %s",
                               gj_kind_name(e));
        }
        vals[i] = (int64_t)json_integer_value(e);
    }
    pl_status *st = gj_wrap(L, path, pl_graph_attr_ints(L->g, n, name, vals, count));
    pl_free(vals);
    return st;
}

static pl_status *gj_attr_floats(gj_load *L, const char *path, pl_nid n,
                                 const char *name, const json_t *v)
{
    if (!json_is_array(v))
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected an array of numbers, got %s", gj_kind_name(v));
    size_t count = json_array_size(v);
    double *vals = pl_malloc((count ? count : 1) * sizeof *vals);
    if (vals == NULL)
        return gj_oom("reading an attribute");
    for (size_t i = 0; i < count; i++) {
        json_t *e = json_array_get(v, i);
        if (!gj_get_double(e, &vals[i])) {
            pl_free(vals);
            return gj_error_at(L, path, i,
                               "expected a number (or \"inf\", \"-inf\", "
                               "\"nan\", \"nan:0x<16 hex digits>\"), got %s",
                               gj_kind_name(e));
        }
    }
    pl_status *st = gj_wrap(L, path, pl_graph_attr_floats(L->g, n, name, vals, count));
    pl_free(vals);
    return st;
}

static pl_status *gj_attr_strings(gj_load *L, const char *path, pl_nid n,
                                  const char *name, const json_t *v)
{
    if (!json_is_array(v))
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected an array of strings, got %s", gj_kind_name(v));
    size_t count = json_array_size(v);
    size_t slots = count ? count : 1;
    const char **vals = pl_malloc(slots * sizeof *vals);
    unsigned char **owned = pl_calloc(slots, sizeof *owned);
    pl_status *st = NULL;
    if (vals == NULL || owned == NULL)
        st = gj_oom("reading an attribute");
    for (size_t i = 0; st == NULL && i < count; i++) {
        json_t *e = json_array_get(v, i);
        char epath[GJ_WHERE];
        gj_path(epath, "%s[%zu]", path, i);
        if (json_is_string(e)) {
            vals[i] = json_string_value(e);
            continue;
        }
        json_t *hex = json_is_object(e) && json_object_size(e) == 1
                          ? json_object_get(e, "string_hex")
                          : NULL;
        if (hex == NULL) {
            st = gj_error(L, PL_CODE_INVALID_ARGUMENT, epath,
                          "expected a string or {\"string_hex\": ...}, got %s",
                          gj_kind_name(e));
            break;
        }
        size_t len;
        char hpath[GJ_WHERE];
        gj_path_key(hpath, epath, "string_hex");
        st = gj_hex_member(L, hpath, hex, SIZE_MAX, &owned[i], &len);
        if (st == NULL && memchr(owned[i], '\0', len) != NULL)
            st = gj_error(L, PL_CODE_INVALID_ARGUMENT, hpath,
                          "contains a NUL byte, which an element of a strings "
                          "attribute cannot hold");
        if (st == NULL)
            vals[i] = (const char *)owned[i];
    }
    if (st == NULL)
        st = gj_wrap(L, path, pl_graph_attr_strings(L->g, n, name, vals, count));
    for (size_t i = 0; owned && i < count; i++)
        pl_free(owned[i]);
    pl_free(owned);
    pl_free(vals);
    return st;
}

/* Fills DST (ELEMENTS values of DTYPE) from the JSON array VALUES. */
static pl_status *gj_tensor_values(const gj_load *L, const char *path,
                                   pl_dtype dtype, const json_t *values,
                                   size_t elements, unsigned char *dst)
{
    size_t esize = pl_dtype_size(dtype);
    for (size_t i = 0; i < elements; i++) {
        json_t *e = json_array_get(values, i);
        unsigned char *p = dst + i * esize;
        if (dtype.code == PL_TYPE_FLOAT && (dtype.bits == 32 || dtype.bits == 64)) {
            double d;
            if (!gj_get_double(e, &d))
                return gj_error_at(L, path, i, "expected a number, got %s",
                                   gj_kind_name(e));
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
                !(json_is_integer(e) && (json_integer_value(e) == 0 ||
                                         json_integer_value(e) == 1)))
                return gj_error_at(L, path, i,
                                   "expected true, false, 0 or 1, got %s",
                                   gj_kind_name(e));
            *p = json_is_true(e) || (json_is_integer(e) && json_integer_value(e));
            continue;
        }
        if (!json_is_integer(e))
            return gj_error_at(L, path, i, "expected an integer, got %s",
                               gj_kind_name(e));
        int64_t x = (int64_t)json_integer_value(e);
        int64_t lo, hi;
        if (dtype.code == PL_TYPE_UINT) {
            lo = 0;
            hi = 255;
        } else if (dtype.bits == 8) {
            lo = INT8_MIN;
            hi = INT8_MAX;
        } else if (dtype.bits == 32) {
            lo = INT32_MIN;
            hi = INT32_MAX;
        } else {
            lo = INT64_MIN;
            hi = INT64_MAX;
        }
        if (x < lo || x > hi)
            return gj_error_at(L, path, i, "%" PRId64 " is out of range for %s",
                               x, pl_dtype_name(dtype));
        if (esize == 1) {
            uint8_t b = (uint8_t)(x & 0xff);
            memcpy(p, &b, 1);
        } else if (esize == 4) {
            int32_t w = (int32_t)x;
            memcpy(p, &w, 4);
        } else {
            memcpy(p, &x, 8);
        }
    }
    return NULL;
}

static pl_status *gj_attr_tensor(gj_load *L, const char *path, pl_nid n,
                                 const char *name, const json_t *v)
{
    if (!json_is_object(v))
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected an object {\"dtype\", \"shape\", "
                        "\"data_hex\" or \"values\"}, got %s",
                        gj_kind_name(v));
    static const char *const keys[] = {"dtype", "shape", "data_hex", "values",
                                       NULL};
    PL_RETURN_IF_ERROR(gj_only_keys(L, path, (json_t *)v, keys));
    char sub[GJ_WHERE];
    json_t *m;
    pl_dtype dtype;
    PL_RETURN_IF_ERROR(gj_member(L, path, (json_t *)v, "dtype", true, &m));
    gj_path_key(sub, path, "dtype");
    PL_RETURN_IF_ERROR(gj_dtype(L, sub, m, &dtype));
    int64_t dims[PL_GRAPH_MAX_RANK];
    int32_t ndim;
    PL_RETURN_IF_ERROR(gj_member(L, path, (json_t *)v, "shape", true, &m));
    gj_path_key(sub, path, "shape");
    PL_RETURN_IF_ERROR(gj_shape(L, sub, m, 0, dims, &ndim));
    size_t bytes, elements;
    if (!pl_dims_elements(dims, ndim, &elements) ||
        !gj_shape_bytes(dtype, dims, ndim, &bytes))
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, sub,
                        "the byte size of this %s shape overflows size_t",
                        pl_dtype_name(dtype));
    json_t *hex = json_object_get(v, "data_hex");
    json_t *values = json_object_get(v, "values");
    if ((hex == NULL) == (values == NULL))
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected exactly one of 'data_hex' and 'values'");
    unsigned char *data = NULL;
    size_t len;
    if (hex != NULL) {
        gj_path_key(sub, path, "data_hex");
        PL_RETURN_IF_ERROR(gj_hex_member(L, sub, hex, bytes, &data, &len));
    } else {
        gj_path_key(sub, path, "values");
        if (dtype.code == PL_TYPE_BFLOAT ||
            (dtype.code == PL_TYPE_FLOAT && dtype.bits == 16))
            return gj_error(L, PL_CODE_INVALID_ARGUMENT, sub,
                            "not supported for %s; give the bytes as data_hex",
                            pl_dtype_name(dtype));
        if (!json_is_array(values) || json_array_size(values) != elements)
            return gj_error(L, PL_CODE_INVALID_ARGUMENT, sub,
                            "expected an array of %zu values (the shape's "
                            "element count)",
                            elements);
        data = pl_malloc(bytes ? bytes : 1);
        if (data == NULL)
            return gj_oom("reading a tensor attribute");
        pl_status *st = gj_tensor_values(L, sub, dtype, values, elements, data);
        if (st != NULL) {
            pl_free(data);
            return st;
        }
    }
    pl_status *st = gj_wrap(L, path, pl_graph_attr_tensor(L->g, n, name, dtype,
                                                          ndim, dims, data, bytes));
    pl_free(data);
    return st;
}

static const char gj_attr_kinds[] =
    "int, float, string, string_hex, ints, floats, strings, tensor, graph, graphs";

static pl_status *gj_load_node(gj_load *L, size_t i, json_t *jn);
static pl_status *gj_load_io(gj_load *L, json_t *arr, bool input);

/* A body (a GRAPH attribute's value): an object with "inputs", "outputs",
 * "tensors" and "nodes" as at the top level, read into a new graph. Its
 * constants lie in the model's sidecar. Names it does not define are left
 * to pl_graph_validate, which resolves them in the enclosing graphs. */
static pl_status *gj_load_body(gj_load *L, const char *path, json_t *v, pl_graph **out)
{
    *out = NULL;
    if (!json_is_object(v))
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected a graph object {\"inputs\", \"outputs\", \"tensors\", "
                        "\"nodes\"}, got %s",
                        gj_kind_name(v));
    static const char *const keys[] = {"inputs", "outputs", "tensors", "nodes", NULL};
    PL_RETURN_IF_ERROR(gj_only_keys(L, path, v, keys));
    json_t *inputs, *outputs, *tensors, *nodes;
    PL_RETURN_IF_ERROR(gj_array_member(L, path, v, "inputs", true, PL_GRAPH_JSON_MAX_ITEMS,
                                       "an array of tensor names", &inputs));
    PL_RETURN_IF_ERROR(gj_array_member(L, path, v, "outputs", true, PL_GRAPH_JSON_MAX_ITEMS,
                                       "an array of tensor names", &outputs));
    PL_RETURN_IF_ERROR(gj_array_member(L, path, v, "tensors", false, PL_GRAPH_JSON_MAX_ITEMS,
                                       "an array of tensor objects", &tensors));
    PL_RETURN_IF_ERROR(gj_array_member(L, path, v, "nodes", true, PL_GRAPH_JSON_MAX_ITEMS,
                                       "an array of node objects", &nodes));
    char scope[GJ_WHERE + 8];
    snprintf(scope, sizeof scope, "%s%s.", L->scope ? L->scope : "", path);
    gj_load sub = *L;
    sub.scope = scope;
    PL_RETURN_IF_ERROR(pl_graph_create(&sub.g));
    pl_status *st = NULL;
    for (size_t i = 0; st == NULL && i < json_array_size(tensors); i++)
        st = gj_load_tensor(&sub, i, json_array_get(tensors, i));
    for (size_t i = 0; st == NULL && i < json_array_size(nodes); i++)
        st = gj_load_node(&sub, i, json_array_get(nodes, i));
    if (st == NULL)
        st = gj_load_io(&sub, inputs, true);
    if (st == NULL)
        st = gj_load_io(&sub, outputs, false);
    if (st != NULL) {
        pl_graph_destroy(sub.g);
        return st;
    }
    *out = sub.g;
    return NULL;
}

static pl_status *gj_attr_graphs(gj_load *L, const char *path, pl_nid n, const char *name,
                                 json_t *val, bool many)
{
    if (many && !json_is_array(val))
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected an array of graph objects, got %s", gj_kind_name(val));
    size_t count = many ? json_array_size(val) : 1;
    pl_graph **bodies = pl_calloc(count ? count : 1, sizeof *bodies);
    if (bodies == NULL)
        return gj_oom("reading a graph attribute");
    pl_status *st = NULL;
    for (size_t i = 0; st == NULL && i < count; i++) {
        char where[GJ_WHERE];
        if (many)
            gj_path(where, "%s[%zu]", path, i);
        else
            gj_path(where, "%s", path);
        st = gj_load_body(L, where, many ? json_array_get(val, i) : val, &bodies[i]);
    }
    if (st != NULL) {
        for (size_t i = 0; i < count; i++)
            pl_graph_destroy(bodies[i]);
        pl_free(bodies);
        return st;
    }
    st = many ? pl_graph_attr_graphs(L->g, n, name, bodies, count)
              : pl_graph_attr_graph(L->g, n, name, bodies[0]);
    pl_free(bodies);
    return gj_wrap(L, path, st);
}

static pl_status *gj_load_attr(gj_load *L, const char *node_where, pl_nid n,
                               const char *name, json_t *v)
{
    char path[GJ_WHERE];
    gj_path(path, "%s.attributes.%.120s", node_where, name);
    if (name[0] == '\0')
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "an attribute needs a non-empty name");
    if (!json_is_object(v) || json_object_size(v) == 0)
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected an object with one key naming the kind "
                        "(%s), got %s",
                        gj_attr_kinds, json_is_object(v) ? "{}" : gj_kind_name(v));
    if (json_object_size(v) > 1) {
        void *it = json_object_iter(v);
        const char *k1 = json_object_iter_key(it);
        const char *k2 = json_object_iter_key(json_object_iter_next(v, it));
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "has %zu kinds ('%.40s', '%.40s', ...); an attribute "
                        "has exactly one",
                        json_object_size(v), k1, k2);
    }
    void *it = json_object_iter(v);
    const char *kind = json_object_iter_key(it);
    json_t *val = json_object_iter_value(it);
    char kpath[GJ_WHERE];
    gj_path_key(kpath, path, kind);
    pl_status *st;
    if (strcmp(kind, "int") == 0) {
        if (!json_is_integer(val))
            return gj_error(L, PL_CODE_INVALID_ARGUMENT, kpath,
                            "expected an integer, got %s", gj_kind_name(val));
        st = gj_wrap(L, path, pl_graph_attr_int(L->g, n, name,
                                                (int64_t)json_integer_value(val)));
    } else if (strcmp(kind, "float") == 0) {
        double d;
        if (!gj_get_double(val, &d))
            return gj_error(L, PL_CODE_INVALID_ARGUMENT, kpath,
                            "expected a number (or \"inf\", \"-inf\", \"nan\", "
                            "\"nan:0x<16 hex digits>\"), got %s",
                            gj_kind_name(val));
        st = gj_wrap(L, path, pl_graph_attr_float(L->g, n, name, d));
    } else if (strcmp(kind, "string") == 0) {
        if (!json_is_string(val))
            return gj_error(L, PL_CODE_INVALID_ARGUMENT, kpath,
                            "expected a string, got %s", gj_kind_name(val));
        st = gj_wrap(L, path, pl_graph_attr_string(L->g, n, name,
                                                   json_string_value(val),
                                                   json_string_length(val)));
    } else if (strcmp(kind, "string_hex") == 0) {
        unsigned char *bytes;
        size_t len;
        PL_RETURN_IF_ERROR(gj_hex_member(L, kpath, val, SIZE_MAX, &bytes, &len));
        st = gj_wrap(L, path, pl_graph_attr_string(L->g, n, name,
                                                   (const char *)bytes, len));
        pl_free(bytes);
    } else if (strcmp(kind, "ints") == 0) {
        st = gj_attr_ints(L, kpath, n, name, val);
    } else if (strcmp(kind, "floats") == 0) {
        st = gj_attr_floats(L, kpath, n, name, val);
    } else if (strcmp(kind, "strings") == 0) {
        st = gj_attr_strings(L, kpath, n, name, val);
    } else if (strcmp(kind, "tensor") == 0) {
        st = gj_attr_tensor(L, kpath, n, name, val);
    } else if (strcmp(kind, "graph") == 0 || strcmp(kind, "graphs") == 0) {
        st = gj_attr_graphs(L, kpath, n, name, val, strcmp(kind, "graphs") == 0);
    } else {
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "unknown attribute kind '%.40s' (expected one of %s)",
                        kind, gj_attr_kinds);
    }
    return st;
}

/* ---- nodes -------------------------------------------------------------- */

/* The names of the string array ARR (checked), in a pl_malloc array. */
static pl_status *gj_name_list(const gj_load *L, const char *path,
                               const json_t *arr, bool allow_empty,
                               const char ***out)
{
    *out = NULL;
    size_t count = json_array_size(arr);
    const char **names = pl_malloc((count ? count : 1) * sizeof *names);
    if (names == NULL)
        return gj_oom("reading a node");
    for (size_t i = 0; i < count; i++) {
        json_t *e = json_array_get(arr, i);
        if (!json_is_string(e) || (!allow_empty && json_string_length(e) == 0)) {
            pl_free(names);
            return gj_error_at(L, path, i, "expected a %stensor name, got %s",
                               allow_empty ? "" : "non-empty ",
                               json_is_string(e) ? "\"\"" : gj_kind_name(e));
        }
        names[i] = json_string_value(e);
    }
    *out = names;
    return NULL;
}

static pl_status *gj_load_node(gj_load *L, size_t i, json_t *jn)
{
    char where[GJ_WHERE], path[GJ_WHERE];
    gj_path(where, "nodes[%zu]", i);
    if (!json_is_object(jn))
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, where,
                        "expected an object, got %s", gj_kind_name(jn));
    const char *name, *op, *domain;
    PL_RETURN_IF_ERROR(gj_string_member(L, where, jn, "name", false, true, &name));
    if (name != NULL)
        gj_path(where, "nodes[%zu] ('" GJ_NAME_FMT "')", i, name);
    static const char *const keys[] = {"name", "op", "domain", "inputs",
                                       "outputs", "attributes", NULL};
    PL_RETURN_IF_ERROR(gj_only_keys(L, where, jn, keys));
    PL_RETURN_IF_ERROR(gj_string_member(L, where, jn, "op", true, true, &op));
    PL_RETURN_IF_ERROR(gj_string_member(L, where, jn, "domain", false, false, &domain));
    pl_nid first = name ? pl_graph_find_node(L->g, name) : PL_NID_NONE;
    if (first != PL_NID_NONE)
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, where,
                        "duplicate node name (first at nodes[%u])", first);
    json_t *jin, *jout, *jattrs;
    PL_RETURN_IF_ERROR(gj_array_member(L, where, jn, "inputs", true, SIZE_MAX,
                                       "an array of tensor names", &jin));
    PL_RETURN_IF_ERROR(gj_array_member(L, where, jn, "outputs", true, SIZE_MAX,
                                       "an array of tensor names", &jout));
    gj_path_key(path, where, "outputs");
    bool named = false;
    for (size_t k = 0; k < json_array_size(jout) && !named; k++)
        named = !json_is_string(json_array_get(jout, k)) ||
                json_string_length(json_array_get(jout, k)) > 0;
    if (!named)
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "a node needs at least one named output");
    jattrs = json_object_get(jn, "attributes");
    if (jattrs != NULL && !json_is_object(jattrs)) {
        gj_path_key(path, where, "attributes");
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected an object, got %s", gj_kind_name(jattrs));
    }
    const char **ins = NULL, **outs = NULL;
    gj_path_key(path, where, "inputs");
    PL_RETURN_IF_ERROR(gj_name_list(L, path, jin, true, &ins));
    gj_path_key(path, where, "outputs");
    pl_status *st = gj_name_list(L, path, jout, true, &outs);
    pl_nid id = PL_NID_NONE;
    if (st == NULL)
        st = gj_wrap(L, where,
                     pl_graph_add_node(L->g, name, op, domain ? domain : "", ins,
                                       json_array_size(jin), outs,
                                       json_array_size(jout), &id));
    pl_free(ins);
    pl_free(outs);
    if (st != NULL)
        return st;
    if (name == NULL) /* name the generated one in later messages */
        gj_path(where, "nodes[%zu] ('" GJ_NAME_FMT "')", i,
                 pl_graph_get_node(L->g, id)->name);
    const char *key;
    json_t *value;
    if (jattrs == NULL)
        return NULL;
    json_object_foreach(jattrs, key, value)
        PL_RETURN_IF_ERROR(gj_load_attr(L, where, id, key, value));
    return NULL;
}

/* ---- the top level ------------------------------------------------------ */

static pl_status *gj_load_opsets(gj_load *L, json_t *arr)
{
    for (size_t i = 0; i < json_array_size(arr); i++) {
        char where[GJ_WHERE];
        gj_path(where, "opset_import[%zu]", i);
        json_t *e = json_array_get(arr, i);
        if (!json_is_object(e))
            return gj_error(L, PL_CODE_INVALID_ARGUMENT, where,
                            "expected an object {\"domain\", \"version\"}, got %s",
                            gj_kind_name(e));
        static const char *const keys[] = {"domain", "version", NULL};
        PL_RETURN_IF_ERROR(gj_only_keys(L, where, e, keys));
        const char *domain;
        PL_RETURN_IF_ERROR(gj_string_member(L, where, e, "domain", false, false, &domain));
        if (domain == NULL)
            domain = "";
        json_t *v;
        PL_RETURN_IF_ERROR(gj_member(L, where, e, "version", true, &v));
        if (!json_is_integer(v) || json_integer_value(v) < 1)
            return gj_error(L, PL_CODE_INVALID_ARGUMENT, where,
                            "version: expected an integer >= 1");
        for (size_t k = 0; k < pl_graph_opset_count(L->g); k++) {
            const char *d;
            int64_t ver;
            pl_graph_opset_at(L->g, k, &d, &ver);
            /* ONNX spells its default domain both "" and "ai.onnx". */
            bool d_default = d[0] == '\0' || strcmp(d, "ai.onnx") == 0;
            bool domain_default = domain[0] == '\0' || strcmp(domain, "ai.onnx") == 0;
            if (strcmp(d, domain) == 0 || (d_default && domain_default))
                return gj_error(L, PL_CODE_INVALID_ARGUMENT, where,
                                "domain '%.100s' is imported twice", domain);
        }
        PL_RETURN_IF_ERROR(gj_wrap(L, where,
                                   pl_graph_set_opset(L->g, domain,
                                                      (int64_t)json_integer_value(v))));
    }
    return NULL;
}

static pl_status *gj_load_io(gj_load *L, json_t *arr, bool input)
{
    const char *list = input ? "inputs" : "outputs";
    for (size_t i = 0; i < json_array_size(arr); i++) {
        char where[GJ_WHERE];
        gj_path(where, "%s[%zu]", list, i);
        json_t *e = json_array_get(arr, i);
        if (!json_is_string(e) || json_string_length(e) == 0)
            return gj_error(L, PL_CODE_INVALID_ARGUMENT, where,
                            "expected a non-empty tensor name, got %s",
                            json_is_string(e) ? "\"\"" : gj_kind_name(e));
        pl_tid t;
        PL_RETURN_IF_ERROR(gj_wrap(L, where,
                                   pl_graph_tensor_get_or_add(L->g, json_string_value(e), &t)));
        const pl_graph_tensor *T = pl_graph_get_tensor(L->g, t);
        /* A body may list one tensor as two outputs (Loop: carried and
         * scan); the graph of a model may not. */
        if (input ? T->is_input : (T->is_output && L->scope == NULL))
            return gj_error(L, PL_CODE_INVALID_ARGUMENT, where,
                            "'" GJ_NAME_FMT "' is listed twice", T->name);
        if (input && T->data != NULL)
            return gj_error(L, PL_CODE_INVALID_ARGUMENT, where,
                            "'" GJ_NAME_FMT "' is a constant; a graph input is "
                            "given at run time",
                            T->name);
        PL_RETURN_IF_ERROR(gj_wrap(L, where, input ? pl_graph_add_input(L->g, t)
                                                   : pl_graph_add_output_again(L->g, t)));
    }
    return NULL;
}

/* Every tensor defined exactly once: checked here, before pl_graph_validate
 * checks the same, so that the message can give the JSON path. Nodes were
 * added in file order, so a node's id is its index in "nodes". */
static pl_status *gj_check_defined(gj_load *L)
{
    size_t nt = pl_graph_tensor_count(L->g), nn = pl_graph_node_count(L->g);
    pl_nid *producer = pl_malloc((nt ? nt : 1) * sizeof *producer);
    if (producer == NULL)
        return gj_oom("checking the graph");
    for (size_t t = 0; t < nt; t++)
        producer[t] = PL_NID_NONE;
    pl_status *st = NULL;
    char where[GJ_WHERE];
    for (size_t i = 0; st == NULL && i < nn; i++) {
        const pl_graph_node *n = pl_graph_get_node(L->g, (pl_nid)i);
        for (size_t k = 0; st == NULL && k < n->n_outputs; k++) {
            pl_tid t = n->outputs[k];
            if (t == PL_TID_NONE) /* an optional output left out */
                continue;
            const pl_graph_tensor *T = pl_graph_get_tensor(L->g, t);
            gj_path(where, "nodes[%zu] ('" GJ_NAME_FMT "').outputs[%zu]",
                     i, n->name, k);
            if (producer[t] != PL_NID_NONE)
                st = gj_error(L, PL_CODE_INVALID_ARGUMENT, where,
                              "tensor '" GJ_NAME_FMT "' is already produced by "
                              "nodes[%u] ('" GJ_NAME_FMT "')",
                              T->name, producer[t],
                              pl_graph_get_node(L->g, producer[t])->name);
            else if (T->data != NULL || T->is_input)
                st = gj_error(L, PL_CODE_INVALID_ARGUMENT, where,
                              "tensor '" GJ_NAME_FMT "' is a %s and cannot also "
                              "be produced by a node",
                              T->name, T->data ? "constant" : "graph input");
            producer[t] = (pl_nid)i;
        }
    }
    for (size_t i = 0; st == NULL && i < nn; i++) {
        const pl_graph_node *n = pl_graph_get_node(L->g, (pl_nid)i);
        for (size_t k = 0; st == NULL && k < n->n_inputs; k++) {
            pl_tid t = n->inputs[k];
            if (t == PL_TID_NONE)
                continue;
            const pl_graph_tensor *T = pl_graph_get_tensor(L->g, t);
            if (producer[t] == PL_NID_NONE && !T->is_input && T->data == NULL) {
                gj_path(where, "nodes[%zu] ('" GJ_NAME_FMT "').inputs[%zu]", i, n->name, k);
                st = gj_error(L, PL_CODE_INVALID_ARGUMENT, where,
                              "tensor '" GJ_NAME_FMT "' is not defined by any "
                              "node, graph input or constant",
                              T->name);
            }
        }
    }
    for (size_t i = 0; st == NULL && i < pl_graph_output_count(L->g); i++) {
        pl_tid t = pl_graph_output(L->g, i);
        const pl_graph_tensor *T = pl_graph_get_tensor(L->g, t);
        if (producer[t] == PL_NID_NONE && !T->is_input && T->data == NULL) {
            gj_path(where, "outputs[%zu]", i);
            st = gj_error(L, PL_CODE_INVALID_ARGUMENT, where,
                          "tensor '" GJ_NAME_FMT "' is not defined by any "
                          "node, graph input or constant",
                          T->name);
        }
    }
    pl_free(producer);
    return st;
}

static pl_status *gj_load_root(gj_load *L, json_t *root)
{
    if (!json_is_object(root))
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, "top level",
                        "expected an object, got %s", gj_kind_name(root));
    static const char *const keys[] = {"format", "version", "opset_import",
                                       "weights", "inputs", "outputs",
                                       "tensors", "nodes", NULL};
    const char *format;
    PL_RETURN_IF_ERROR(gj_string_member(L, "", root, "format", true, false, &format));
    if (strcmp(format, PL_GRAPH_JSON_FORMAT) != 0)
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, "format",
                        "'%.60s' is not \"" PL_GRAPH_JSON_FORMAT "\"", format);
    json_t *v;
    PL_RETURN_IF_ERROR(gj_member(L, "", root, "version", true, &v));
    if (!json_is_integer(v))
        return gj_error(L, PL_CODE_INVALID_ARGUMENT, "version",
                        "expected an integer, got %s", gj_kind_name(v));
    if (json_integer_value(v) != PL_GRAPH_JSON_VERSION)
        return gj_error(L, PL_CODE_UNSUPPORTED, "version",
                        "version %lld is not supported (this reader knows "
                        "version %d)",
                        (long long)json_integer_value(v), PL_GRAPH_JSON_VERSION);
    PL_RETURN_IF_ERROR(gj_only_keys(L, "", root, keys));

    json_t *opsets, *inputs, *outputs, *tensors, *nodes;
    const char *weights;
    PL_RETURN_IF_ERROR(gj_array_member(L, "", root, "opset_import", false, SIZE_MAX,
                                       "an array of {\"domain\", \"version\"}",
                                       &opsets));
    PL_RETURN_IF_ERROR(gj_string_member(L, "", root, "weights", false, true, &weights));
    PL_RETURN_IF_ERROR(gj_array_member(L, "", root, "inputs", true,
                                       PL_GRAPH_JSON_MAX_ITEMS,
                                       "an array of tensor names", &inputs));
    PL_RETURN_IF_ERROR(gj_array_member(L, "", root, "outputs", true,
                                       PL_GRAPH_JSON_MAX_ITEMS,
                                       "an array of tensor names", &outputs));
    PL_RETURN_IF_ERROR(gj_array_member(L, "", root, "tensors", true,
                                       PL_GRAPH_JSON_MAX_ITEMS,
                                       "an array of tensor objects", &tensors));
    PL_RETURN_IF_ERROR(gj_array_member(L, "", root, "nodes", true,
                                       PL_GRAPH_JSON_MAX_ITEMS,
                                       "an array of node objects", &nodes));

    PL_RETURN_IF_ERROR(pl_graph_create(&L->g));
    if (weights != NULL)
        PL_RETURN_IF_ERROR(gj_map_weights(L, weights));
    if (opsets != NULL)
        PL_RETURN_IF_ERROR(gj_load_opsets(L, opsets));
    for (size_t i = 0; i < json_array_size(tensors); i++)
        PL_RETURN_IF_ERROR(gj_load_tensor(L, i, json_array_get(tensors, i)));
    for (size_t i = 0; i < json_array_size(nodes); i++)
        PL_RETURN_IF_ERROR(gj_load_node(L, i, json_array_get(nodes, i)));
    PL_RETURN_IF_ERROR(gj_load_io(L, inputs, true));
    PL_RETURN_IF_ERROR(gj_load_io(L, outputs, false));
    PL_RETURN_IF_ERROR(gj_check_defined(L));
    return gj_wrap(L, "", pl_graph_validate(L->g));
}

/* The longest number or bare word (true, false, null, or a typo) accepted;
 * see gj_parse for why there is a limit at all. */
#define GJ_MAX_BARE_TOKEN 256

/* A position in the text for messages: line and column (1-based, columns
 * counting UTF-8 characters as jansson does) and byte offset. */
typedef struct gj_pos {
    int line, column;
    size_t byte;
} gj_pos;

static pl_status *gj_syntax_error(const gj_load *L, gj_pos at, const char *fmt,
                                  ...) PL_PRINTF_LIKE(3, 4);
static pl_status *gj_syntax_error(const gj_load *L, gj_pos at, const char *fmt,
                                  ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pl_status_create(PL_CODE_INVALID_ARGUMENT, "%s:%d:%d (byte %zu): %s",
                            L->src, at.line, at.column, at.byte, msg);
}

static bool gj_is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* A scan of the text's structure before jansson sees it: it must be one
 * object, complete, with nothing after it, nested at most
 * PL_GRAPH_JSON_MAX_DEPTH deep, with no number or word longer than
 * GJ_MAX_BARE_TOKEN. Everything else (tokens, commas, duplicate keys) is
 * jansson's to check. */
static pl_status *gj_prescan(const gj_load *L, const char *text, size_t len)
{
    gj_pos at = {1, 0, 0}, open_at = {1, 0, 0};
    int depth = 0;
    bool in_string = false, escaped = false, started = false;
    size_t bare = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        at.byte = i;
        if (c == '\n') {
            at.line++;
            at.column = 0;
        } else if (((unsigned char)c & 0xc0) != 0x80) {
            at.column++;
        }
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (gj_is_space(c)) {
            bare = 0;
            continue;
        }
        if (!started) {
            if (c != '{')
                return gj_syntax_error(L, at, "'{' expected: a model is a JSON "
                                              "object");
            started = true;
            open_at = at;
        } else if (depth == 0) {
            return gj_syntax_error(L, at, "end of file expected after the "
                                          "top-level object");
        }
        bool structural = true;
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > PL_GRAPH_JSON_MAX_DEPTH)
                return gj_syntax_error(L, at, "nesting deeper than %d levels "
                                              "(the format needs 7)",
                                       PL_GRAPH_JSON_MAX_DEPTH);
        } else if (c == ']' || c == '}') {
            depth--;
        } else if (c != ',' && c != ':') {
            structural = false;
            if (++bare > GJ_MAX_BARE_TOKEN)
                return gj_syntax_error(L, at, "a number or word longer than %d "
                                              "characters",
                                       GJ_MAX_BARE_TOKEN);
        }
        if (structural)
            bare = 0;
    }
    at.byte = len;
    if (!started)
        return gj_syntax_error(L, at, "no JSON object (the text is empty)");
    if (in_string || depth > 0)
        return gj_syntax_error(L, at, "premature end of input%s: the object "
                                      "that starts at %d:%d is not closed",
                               in_string ? " inside a string" : "",
                               open_at.line, open_at.column);
    return NULL;
}

/* jansson is fed a padded stream: '["<pad>",' + text + ']'. The pad makes
 * jansson's token buffer grow, once, before any token of the text: jansson
 * 2.14 aborts on an assertion when that buffer fails to grow in the middle
 * of a number (lex_unget_unsave), and numbers are at most GJ_MAX_BARE_TOKEN
 * long, so with the pad they never make it grow. Positions are shifted
 * back before they are reported. */
#define GJ_PAD_LEN (GJ_MAX_BARE_TOKEN + 64)

typedef struct gj_feed {
    const char *text;
    size_t len;
    size_t done;   /* bytes of prefix + text + suffix handed out */
} gj_feed;

static size_t gj_prefix_len(void)
{
    return GJ_PAD_LEN + 4; /* [ " pad " , */
}

static size_t gj_feed_cb(void *buffer, size_t buflen, void *data)
{
    gj_feed *f = data;
    size_t pre = gj_prefix_len(), total = pre + f->len + 1, n = 0;
    char *out = buffer;
    while (n < buflen && f->done < total) {
        size_t k = f->done;
        if (k < pre) {
            out[n++] = k == 0 ? '[' : (k == 1 || k == pre - 2) ? '"'
                                   : k == pre - 1 ? ',' : '#';
            f->done++;
        } else if (k < pre + f->len) {
            size_t chunk = pre + f->len - k;
            if (chunk > buflen - n)
                chunk = buflen - n;
            memcpy(out + n, f->text + (k - pre), chunk);
            n += chunk;
            f->done += chunk;
        } else {
            out[n++] = ']';
            f->done++;
        }
    }
    return n;
}

/* Parses TEXT into *OUT_ROOT, the text's top-level object. */
static pl_status *gj_parse(const gj_load *L, const char *text, size_t len,
                           json_t **out_root)
{
    *out_root = NULL;
    if (len > PL_GRAPH_JSON_MAX_TEXT)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "%s: %zu bytes of JSON exceed the limit of %zu",
                                L->src, len, PL_GRAPH_JSON_MAX_TEXT);
    PL_RETURN_IF_ERROR(gj_prescan(L, text, len));
    gj_feed feed = {.text = text, .len = len};
    json_error_t err;
    json_t *wrapped = json_load_callback(gj_feed_cb, &feed, JSON_REJECT_DUPLICATES,
                                         &err);
    if (wrapped == NULL) {
        if (json_error_code(&err) == json_error_out_of_memory ||
            gj_memory_exhausted())
            return pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                    "%s: out of memory parsing JSON", L->src);
        if (err.line < 0)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT, "%s: %s", L->src,
                                    err.text);
        size_t pre = gj_prefix_len();
        gj_pos at = {err.line, err.column, 0};
        /* jansson's position counts the bytes it read, the offending one
         * included (report that byte's offset), except for a byte that is
         * not UTF-8, which it neither counts nor gives a column. */
        size_t pos = err.position > 0 ? (size_t)err.position - 1 : 0;
        if (json_error_code(&err) == json_error_invalid_utf8) {
            pos = (size_t)err.position;
            at.column++;
        }
        at.byte = pos > pre ? pos - pre : 0;
        if (at.byte > len)
            at.byte = len;
        if (at.line == 1)
            at.column = at.column > (int)pre ? at.column - (int)pre : 0;
        return gj_syntax_error(L, at, "%s", err.text);
    }
    /* The prescan saw one complete value, so the wrapper holds two. */
    json_t *root = json_incref(json_array_get(wrapped, 1));
    json_decref(wrapped);
    if (root == NULL) /* cannot happen; do not trust it blindly */
        return pl_status_create(PL_CODE_INTERNAL, "%s: JSON text lost in parsing",
                                L->src);
    *out_root = root;
    return NULL;
}

static pl_status *gj_load_text(gj_load *L, const char *text, size_t len,
                               pl_graph **out_graph)
{
    json_t *root;
    PL_RETURN_IF_ERROR(gj_parse(L, text, len, &root));
    pl_status *st = gj_load_root(L, root);
    json_decref(root);
    if (st != NULL) {
        pl_graph_destroy(L->g);
        L->g = NULL;
        return st;
    }
    *out_graph = L->g;
    return NULL;
}

pl_status *pl_graph_load_json_string(const char *text, size_t len,
                                     const char *base_dir,
                                     pl_graph **out_graph)
{
    if (out_graph == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "pl_graph_load_json_string: out_graph is NULL");
    *out_graph = NULL;
    if (text == NULL && len > 0)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "pl_graph_load_json_string: text is NULL");
    gj_load L = {.src = "(string)", .base_dir = base_dir};
    return gj_load_text(&L, text ? text : "", len, out_graph);
}

/* Reads the whole regular file PATH into a pl_malloc buffer. */
static pl_status *gj_read_file(const char *path, char **out_text,
                               size_t *out_len)
{
    *out_text = NULL;
    *out_len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        return pl_status_create(pl_datafile_code(err), "%s: cannot open: %s", path,
                                strerror(err));
    }
    struct stat sb;
    pl_status *st = NULL;
    if (fstat(fd, &sb) != 0) {
        int err = errno;
        st = pl_status_create(pl_datafile_code(err), "%s: cannot stat: %s", path,
                              strerror(err));
    } else if (!S_ISREG(sb.st_mode)) {
        st = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                              "%s: not a regular file", path);
    } else if ((uint64_t)sb.st_size > PL_GRAPH_JSON_MAX_TEXT) {
        st = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                              "%s: %lld bytes of JSON exceed the limit of %zu",
                              path, (long long)sb.st_size, PL_GRAPH_JSON_MAX_TEXT);
    }
    if (st != NULL) {
        close(fd);
        return st;
    }
    size_t size = (size_t)sb.st_size, got = 0;
    char *text = pl_malloc(size + 1);
    if (text == NULL) {
        close(fd);
        return gj_oom("reading a model file");
    }
    while (got < size) {
        ssize_t n = read(fd, text + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int err = errno;
            st = pl_status_create(PL_CODE_IO_ERROR, "%s: read failed: %s", path,
                                  strerror(err));
            break;
        }
        if (n == 0) /* shrank while we read: take what is there */
            break;
        got += (size_t)n;
    }
    close(fd);
    if (st != NULL) {
        pl_free(text);
        return st;
    }
    text[got] = '\0';
    *out_text = text;
    *out_len = got;
    return NULL;
}

pl_status *pl_graph_load_json(const char *path, pl_graph **out_graph)
{
    if (out_graph == NULL || path == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "pl_graph_load_json: %s is NULL",
                                path ? "out_graph" : "path");
    *out_graph = NULL;
    char *text;
    size_t len;
    PL_RETURN_IF_ERROR(gj_read_file(path, &text, &len));
    char *dir = gj_dirname(path);
    if (dir == NULL) {
        pl_free(text);
        return gj_oom("loading a model");
    }
    gj_load L = {.src = path, .base_dir = dir};
    pl_status *st = gj_load_text(&L, text, len, out_graph);
    pl_free(text);
    pl_free(dir);
    return st;
}

/* ==== writing ============================================================ */

struct gj_save {
    const pl_graph *g;
    bool with_offsets;   /* a model file (true) or a graph view's text */
    size_t cursor;       /* end of the sidecar so far */
};

/* Adds VALUE (owned, may be NULL from a failed constructor) under KEY. */
static pl_status *gj_set(json_t *obj, const char *key, json_t *value)
{
    if (value == NULL || json_object_set_new_nocheck(obj, key, value) != 0)
        return gj_oom("building JSON");
    return NULL;
}

static pl_status *gj_push(json_t *arr, json_t *value)
{
    if (value == NULL || json_array_append_new(arr, value) != 0)
        return gj_oom("building JSON");
    return NULL;
}

/* A JSON string for S (LEN bytes), which must be JSON-safe; WHAT names it
 * in the error. */
static pl_status *gj_string(const char *s, size_t len, json_t **out,
                            const char *what_fmt, ...) PL_PRINTF_LIKE(4, 5);
static pl_status *gj_string(const char *s, size_t len, json_t **out,
                            const char *what_fmt, ...)
{
    *out = NULL;
    if (!gj_json_safe(s, len)) {
        char what[GJ_WHERE];
        va_list ap;
        va_start(ap, what_fmt);
        vsnprintf(what, sizeof what, what_fmt, ap);
        va_end(ap);
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "%s is not valid UTF-8 (or holds a NUL byte); "
                                "the JSON format cannot name it",
                                what);
    }
    *out = json_stringn_nocheck(s, len);
    return *out ? NULL : gj_oom("building JSON");
}

static json_t *gj_hex_string(const void *data, size_t n)
{
    size_t len;
    if (!pl_size_mul(n, 2, &len) || !pl_size_add(len, 1, &len))
        return NULL;
    char *buf = pl_malloc(len);
    if (buf == NULL)
        return NULL;
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        buf[2 * i] = gj_hex_digits[p[i] >> 4];
        buf[2 * i + 1] = gj_hex_digits[p[i] & 15];
    }
    json_t *s = json_stringn_nocheck(buf, 2 * n);
    pl_free(buf);
    return s;
}

/* A double, exactly: JSON reals for finite values (printed with 17
 * significant digits), strings for the rest. */
static json_t *gj_double(double d)
{
    if (isfinite(d))
        return json_real(d);
    if (isinf(d))
        return json_string_nocheck(d > 0 ? "inf" : "-inf");
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    if (bits == UINT64_C(0x7ff8000000000000))
        return json_string_nocheck("nan");
    char buf[32];
    snprintf(buf, sizeof buf, "nan:0x%016" PRIx64, bits);
    return json_string_nocheck(buf);
}

static json_t *gj_int_array(const int64_t *v, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++)
        if (json_array_append_new(arr, json_integer((json_int_t)v[i])) != 0) {
            json_decref(arr);
            return NULL;
        }
    return arr;
}

static pl_status *gj_dtype_json(pl_dtype dtype, json_t **out, const char *what,
                                const char *name)
{
    *out = NULL;
    if (dtype.lanes == 0) {
        *out = json_null();
        return NULL;
    }
    const char *s = pl_dtype_name(dtype);
    if (strcmp(s, "invalid") == 0)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "%s '" GJ_NAME_FMT "': dtype (code %u, %u bits, "
                                "%u lanes) has no name in the format",
                                what, name, dtype.code, dtype.bits, dtype.lanes);
    *out = json_string_nocheck(s);
    return *out ? NULL : gj_oom("building JSON");
}

typedef struct gj_save gj_save;
static pl_status *gj_body_json(gj_save *S, const pl_graph *body, json_t **out);

static pl_status *gj_attr_value(gj_save *S, const pl_graph_node *n, const pl_attr *a,
                                json_t *obj)
{
    switch (a->kind) {
    case PL_ATTR_GRAPH:
    case PL_ATTR_GRAPHS: {
        json_t *arr = NULL;
        if (a->kind == PL_ATTR_GRAPHS) {
            arr = json_array();
            PL_RETURN_IF_ERROR(gj_set(obj, "graphs", arr));
        }
        for (size_t i = 0; i < a->n; i++) {
            json_t *b = NULL;
            PL_RETURN_IF_ERROR(gj_body_json(S, a->graphs[i], &b));
            PL_RETURN_IF_ERROR(arr ? gj_push(arr, b) : gj_set(obj, "graph", b));
        }
        return NULL;
    }
    case PL_ATTR_INT:
        return gj_set(obj, "int", json_integer((json_int_t)a->i));
    case PL_ATTR_FLOAT:
        return gj_set(obj, "float", gj_double(a->f));
    case PL_ATTR_STRING:
        if (gj_json_safe(a->s, a->s_len))
            return gj_set(obj, "string", json_stringn_nocheck(a->s, a->s_len));
        return gj_set(obj, "string_hex", gj_hex_string(a->s, a->s_len));
    case PL_ATTR_INTS:
        return gj_set(obj, "ints", gj_int_array(a->ints, a->n));
    case PL_ATTR_FLOATS: {
        json_t *arr = json_array();
        PL_RETURN_IF_ERROR(gj_set(obj, "floats", arr));
        for (size_t i = 0; i < a->n; i++)
            PL_RETURN_IF_ERROR(gj_push(arr, gj_double(a->floats[i])));
        return NULL;
    }
    case PL_ATTR_STRINGS: {
        json_t *arr = json_array();
        PL_RETURN_IF_ERROR(gj_set(obj, "strings", arr));
        for (size_t i = 0; i < a->n; i++) {
            const char *s = a->strings[i];
            size_t len = strlen(s);
            if (gj_json_safe(s, len)) {
                PL_RETURN_IF_ERROR(gj_push(arr, json_stringn_nocheck(s, len)));
            } else {
                json_t *e = json_object();
                PL_RETURN_IF_ERROR(gj_push(arr, e));
                PL_RETURN_IF_ERROR(gj_set(e, "string_hex", gj_hex_string(s, len)));
            }
        }
        return NULL;
    }
    case PL_ATTR_TENSOR: {
        const pl_attr_tensor *t = a->tensor;
        json_t *jt = json_object(), *dt;
        PL_RETURN_IF_ERROR(gj_set(obj, "tensor", jt));
        PL_RETURN_IF_ERROR(gj_dtype_json(t->dtype, &dt, "tensor attribute", a->name));
        PL_RETURN_IF_ERROR(gj_set(jt, "dtype", dt));
        PL_RETURN_IF_ERROR(gj_set(jt, "shape", gj_int_array(t->dims, (size_t)t->ndim)));
        return gj_set(jt, "data_hex", gj_hex_string(t->data, t->nbytes));
    }
    }
    return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                            "node '" GJ_NAME_FMT "': attribute '" GJ_NAME_FMT
                            "' has unknown kind %d",
                            n->name, a->name, (int)a->kind);
}

static pl_status *gj_node_json(gj_save *S, const pl_graph *g, pl_nid id, json_t *arr)
{
    const pl_graph_node *n = pl_graph_get_node(g, id);
    json_t *o = json_object(), *s;
    PL_RETURN_IF_ERROR(gj_push(arr, o));
    PL_RETURN_IF_ERROR(gj_string(n->name, strlen(n->name), &s, "node %u's name", id));
    PL_RETURN_IF_ERROR(gj_set(o, "name", s));
    PL_RETURN_IF_ERROR(gj_string(n->op, strlen(n->op), &s,
                                 "node '" GJ_NAME_FMT "': op", n->name));
    PL_RETURN_IF_ERROR(gj_set(o, "op", s));
    if (n->domain && n->domain[0]) {
        PL_RETURN_IF_ERROR(gj_string(n->domain, strlen(n->domain), &s,
                                     "node '" GJ_NAME_FMT "': domain", n->name));
        PL_RETURN_IF_ERROR(gj_set(o, "domain", s));
    }
    json_t *ins = json_array(), *outs;
    PL_RETURN_IF_ERROR(gj_set(o, "inputs", ins));
    /* Captures are derived from the bodies on every validate. */
    for (size_t k = 0; k < n->n_formal_inputs; k++) {
        const char *tn = n->inputs[k] == PL_TID_NONE
                             ? "" : pl_graph_get_tensor(g, n->inputs[k])->name;
        PL_RETURN_IF_ERROR(gj_push(ins, json_string_nocheck(tn)));
    }
    outs = json_array();
    PL_RETURN_IF_ERROR(gj_set(o, "outputs", outs));
    for (size_t k = 0; k < n->n_outputs; k++) {
        const char *tn = n->outputs[k] == PL_TID_NONE
                             ? "" : pl_graph_get_tensor(g, n->outputs[k])->name;
        PL_RETURN_IF_ERROR(gj_push(outs, json_string_nocheck(tn)));
    }
    if (n->n_attrs == 0)
        return NULL;
    json_t *attrs = json_object();
    PL_RETURN_IF_ERROR(gj_set(o, "attributes", attrs));
    for (size_t k = 0; k < n->n_attrs; k++) {
        const pl_attr *a = &n->attrs[k];
        if (a->name[0] == '\0' || !gj_json_safe(a->name, strlen(a->name)))
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "node '" GJ_NAME_FMT "': attribute %zu's "
                                    "name is empty or not valid UTF-8",
                                    n->name, k);
        json_t *v = json_object();
        PL_RETURN_IF_ERROR(gj_set(attrs, a->name, v));
        PL_RETURN_IF_ERROR(gj_attr_value(S, n, a, v));
    }
    return NULL;
}

static pl_status *gj_tensor_json(gj_save *S, pl_tid id, json_t *arr)
{
    const pl_graph_tensor *t = pl_graph_get_tensor(S->g, id);
    /* Bodies are written with S->g set to them: see gj_body_json. */
    json_t *o = json_object(), *v;
    PL_RETURN_IF_ERROR(gj_push(arr, o));
    PL_RETURN_IF_ERROR(gj_set(o, "name", json_string_nocheck(t->name)));
    PL_RETURN_IF_ERROR(gj_dtype_json(t->dtype, &v, "tensor", t->name));
    PL_RETURN_IF_ERROR(gj_set(o, "dtype", v));
    if (t->ndim < 0) {
        PL_RETURN_IF_ERROR(gj_set(o, "shape", json_null()));
    } else {
        PL_RETURN_IF_ERROR(gj_set(o, "shape", gj_int_array(t->dims, (size_t)t->ndim)));
        bool any = false;
        for (int32_t k = 0; t->dim_params && k < t->ndim; k++)
            any = any || t->dim_params[k] != NULL;
        if (any) {
            json_t *ps = json_array();
            PL_RETURN_IF_ERROR(gj_set(o, "dim_params", ps));
            for (int32_t k = 0; k < t->ndim; k++) {
                const char *p = t->dim_params[k];
                if (p == NULL) {
                    PL_RETURN_IF_ERROR(gj_push(ps, json_null()));
                    continue;
                }
                PL_RETURN_IF_ERROR(gj_string(p, strlen(p), &v,
                                             "tensor '" GJ_NAME_FMT "': dim_params[%d]",
                                             t->name, (int)k));
                PL_RETURN_IF_ERROR(gj_push(ps, v));
            }
        }
    }
    if (t->data == NULL)
        return NULL;
    json_t *d = json_object();
    PL_RETURN_IF_ERROR(gj_set(o, "data", d));
    if (S->with_offsets) {
        size_t off = S->cursor, pad = (PL_GRAPH_JSON_ALIGN - off % PL_GRAPH_JSON_ALIGN) %
                                      PL_GRAPH_JSON_ALIGN;
        if (!pl_size_add(off, pad, &off) || !pl_size_add(off, t->nbytes, &S->cursor) ||
            S->cursor > (size_t)INT64_MAX)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "constant '" GJ_NAME_FMT "': the sidecar "
                                    "would exceed 2^63 bytes",
                                    t->name);
        PL_RETURN_IF_ERROR(gj_set(d, "offset", json_integer((json_int_t)off)));
    }
    return gj_set(d, "length", json_integer((json_int_t)t->nbytes));
}

static pl_status *gj_body_fill(gj_save *S, const pl_graph *body, json_t *o)
{
    json_t *ins = json_array(), *outs, *tensors, *nodes;
    PL_RETURN_IF_ERROR(gj_set(o, "inputs", ins));
    for (size_t i = 0; i < pl_graph_input_count(body); i++)
        PL_RETURN_IF_ERROR(gj_push(ins, json_string_nocheck(
                                            pl_graph_get_tensor(body, pl_graph_input(body, i))->name)));
    outs = json_array();
    PL_RETURN_IF_ERROR(gj_set(o, "outputs", outs));
    for (size_t i = 0; i < pl_graph_output_count(body); i++)
        PL_RETURN_IF_ERROR(gj_push(outs, json_string_nocheck(
                                             pl_graph_get_tensor(body, pl_graph_output(body, i))->name)));
    tensors = json_array();
    PL_RETURN_IF_ERROR(gj_set(o, "tensors", tensors));
    for (size_t t = 0; t < pl_graph_tensor_count(body); t++) {
        const char *name = pl_graph_get_tensor(body, (pl_tid)t)->name;
        if (!gj_json_safe(name, strlen(name)))
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "a body's tensor %zu has a name that is not valid UTF-8", t);
        PL_RETURN_IF_ERROR(gj_tensor_json(S, (pl_tid)t, tensors));
    }
    nodes = json_array();
    PL_RETURN_IF_ERROR(gj_set(o, "nodes", nodes));
    for (size_t i = 0; i < pl_graph_node_count(body); i++)
        PL_RETURN_IF_ERROR(gj_node_json(S, body, (pl_nid)i, nodes));
    return NULL;
}

/* A body as the value of a "graph" attribute; its constants continue the
 * sidecar's layout (gj_fill_sidecar walks the bodies in the same order). */
static pl_status *gj_body_json(gj_save *S, const pl_graph *body, json_t **out)
{
    *out = NULL;
    json_t *o = json_object();
    if (o == NULL)
        return gj_oom("building JSON");
    const pl_graph *saved = S->g;
    S->g = body;
    pl_status *st = gj_body_fill(S, body, o);
    S->g = saved;
    if (st != NULL) {
        json_decref(o);
        return st;
    }
    *out = o;
    return NULL;
}

/* Marks of the tensors while a subgraph is selected. */
enum {
    GJ_USED = 1,      /* read or written by a selected node */
    GJ_PRODUCED = 2,  /* written by a selected node */
    GJ_OUTSIDE = 4,   /* read by an unselected node, or a graph output */
    GJ_IN_LISTED = 8,
    GJ_OUT_LISTED = 16
};

/* Fills the boundary ("inputs", "outputs") and the tensor list of the
 * subgraph of NODES. */
static pl_status *gj_subgraph(gj_save *S, const pl_nid *nodes, size_t n_nodes,
                              json_t *root)
{
    const pl_graph *g = S->g;
    size_t nt = pl_graph_tensor_count(g), nn = pl_graph_node_count(g);
    unsigned char *mark = pl_calloc(nt ? nt : 1, 1);
    unsigned char *chosen = pl_calloc(nn ? nn : 1, 1);
    pl_status *st = NULL;
    if (mark == NULL || chosen == NULL)
        st = gj_oom("selecting a subgraph");
    for (size_t i = 0; st == NULL && i < n_nodes; i++) {
        if (nodes[i] >= nn)
            st = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                  "pl_graph_to_json: node id %u is out of range "
                                  "(the graph has %zu nodes)",
                                  nodes[i], nn);
        else if (chosen[nodes[i]])
            st = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                  "pl_graph_to_json: node %u ('" GJ_NAME_FMT
                                  "') is listed twice",
                                  nodes[i], pl_graph_get_node(g, nodes[i])->name);
        else
            chosen[nodes[i]] = 1;
    }
    if (st == NULL) {
        for (size_t i = 0; i < nn; i++) {
            const pl_graph_node *n = pl_graph_get_node(g, (pl_nid)i);
            for (size_t k = 0; k < n->n_inputs; k++)
                if (n->inputs[k] != PL_TID_NONE)
                    mark[n->inputs[k]] |= chosen[i] ? GJ_USED : GJ_OUTSIDE;
            for (size_t k = 0; chosen[i] && k < n->n_outputs; k++)
                if (n->outputs[k] != PL_TID_NONE)
                    mark[n->outputs[k]] |= GJ_USED | GJ_PRODUCED;
        }
        for (size_t i = 0; i < pl_graph_output_count(g); i++)
            mark[pl_graph_output(g, i)] |= GJ_OUTSIDE;
    }
    json_t *ins = json_array(), *outs = json_array(), *tensors = json_array();
    if (st == NULL)
        st = gj_set(root, "inputs", ins);
    else
        json_decref(ins);
    if (st == NULL)
        st = gj_set(root, "outputs", outs);
    else
        json_decref(outs);
    for (size_t i = 0; st == NULL && i < n_nodes; i++) {
        const pl_graph_node *n = pl_graph_get_node(g, nodes[i]);
        for (size_t k = 0; st == NULL && k < n->n_inputs; k++) {
            pl_tid t = n->inputs[k];
            if (t == PL_TID_NONE || (mark[t] & (GJ_PRODUCED | GJ_IN_LISTED)) ||
                pl_graph_get_tensor(g, t)->data != NULL)
                continue;
            mark[t] |= GJ_IN_LISTED;
            st = gj_push(ins, json_string_nocheck(pl_graph_get_tensor(g, t)->name));
        }
        for (size_t k = 0; st == NULL && k < n->n_outputs; k++) {
            pl_tid t = n->outputs[k];
            if (t != PL_TID_NONE && (mark[t] & GJ_OUTSIDE) &&
                !(mark[t] & GJ_OUT_LISTED)) {
                mark[t] |= GJ_OUT_LISTED;
                st = gj_push(outs, json_string_nocheck(pl_graph_get_tensor(g, t)->name));
            }
        }
    }
    if (st == NULL)
        st = gj_set(root, "tensors", tensors);
    else
        json_decref(tensors);
    for (size_t t = 0; st == NULL && t < nt; t++)
        if (mark[t] & GJ_USED)
            st = gj_tensor_json(S, (pl_tid)t, tensors);
    pl_free(mark);
    pl_free(chosen);
    return st;
}

/* The whole document. WEIGHTS is the sidecar name for a model file, NULL
 * otherwise; NODES selects a subgraph (NULL: the graph as it is). */
static pl_status *gj_build(gj_save *S, const pl_nid *nodes, size_t n_nodes,
                           const char *weights, json_t *root)
{
    const pl_graph *g = S->g;
    json_t *v;
    PL_RETURN_IF_ERROR(gj_set(root, "format", json_string_nocheck(PL_GRAPH_JSON_FORMAT)));
    PL_RETURN_IF_ERROR(gj_set(root, "version", json_integer(PL_GRAPH_JSON_VERSION)));
    json_t *opsets = json_array();
    PL_RETURN_IF_ERROR(gj_set(root, "opset_import", opsets));
    for (size_t i = 0; i < pl_graph_opset_count(g); i++) {
        const char *domain;
        int64_t version;
        pl_graph_opset_at(g, i, &domain, &version);
        json_t *o = json_object();
        PL_RETURN_IF_ERROR(gj_push(opsets, o));
        PL_RETURN_IF_ERROR(gj_string(domain, strlen(domain), &v,
                                     "opset domain '" GJ_NAME_FMT "'", domain));
        PL_RETURN_IF_ERROR(gj_set(o, "domain", v));
        PL_RETURN_IF_ERROR(gj_set(o, "version", json_integer((json_int_t)version)));
    }
    if (weights != NULL)
        PL_RETURN_IF_ERROR(gj_set(root, "weights", json_string_nocheck(weights)));
    /* Names are checked once here; the rest of the writer uses them as
     * they are. */
    for (size_t t = 0; t < pl_graph_tensor_count(g); t++) {
        const char *name = pl_graph_get_tensor(g, (pl_tid)t)->name;
        if (!gj_json_safe(name, strlen(name)))
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "tensor %zu's name is not valid UTF-8; "
                                    "the JSON format cannot name it",
                                    t);
    }
    if (nodes != NULL) {
        PL_RETURN_IF_ERROR(gj_subgraph(S, nodes, n_nodes, root));
    } else {
        json_t *ins = json_array(), *outs, *tensors;
        PL_RETURN_IF_ERROR(gj_set(root, "inputs", ins));
        for (size_t i = 0; i < pl_graph_input_count(g); i++)
            PL_RETURN_IF_ERROR(gj_push(ins, json_string_nocheck(
                                                pl_graph_get_tensor(g, pl_graph_input(g, i))->name)));
        outs = json_array();
        PL_RETURN_IF_ERROR(gj_set(root, "outputs", outs));
        for (size_t i = 0; i < pl_graph_output_count(g); i++)
            PL_RETURN_IF_ERROR(gj_push(outs, json_string_nocheck(
                                                 pl_graph_get_tensor(g, pl_graph_output(g, i))->name)));
        tensors = json_array();
        PL_RETURN_IF_ERROR(gj_set(root, "tensors", tensors));
        for (size_t t = 0; t < pl_graph_tensor_count(g); t++)
            PL_RETURN_IF_ERROR(gj_tensor_json(S, (pl_tid)t, tensors));
    }
    json_t *jnodes = json_array();
    PL_RETURN_IF_ERROR(gj_set(root, "nodes", jnodes));
    size_t count = nodes ? n_nodes : pl_graph_node_count(g);
    for (size_t i = 0; i < count; i++)
        PL_RETURN_IF_ERROR(gj_node_json(S, g, nodes ? nodes[i] : (pl_nid)i, jnodes));
    return NULL;
}

pl_status *pl_graph_to_json(const pl_graph *g, const pl_nid *nodes,
                            size_t n_nodes, char **out_text)
{
    if (out_text == NULL || g == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "pl_graph_to_json: %s is NULL",
                                g ? "out_text" : "graph");
    *out_text = NULL;
    gj_save S = {.g = g, .with_offsets = false};
    json_t *root = json_object();
    if (root == NULL)
        return gj_oom("building JSON");
    pl_status *st = gj_build(&S, nodes, n_nodes, NULL, root);
    if (st == NULL) {
        /* json_dumps allocates with jansson's allocator (malloc): the
         * caller gets a copy from the current allocator, freed with
         * pl_free. */
        char *text = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(17));
        *out_text = pl_xstrdup(text);
        free(text);
        if (*out_text == NULL)
            st = gj_oom("printing JSON");
    }
    json_decref(root);
    return st;
}

/* ---- files -------------------------------------------------------------- */

static bool gj_write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

typedef struct gj_writer {
    int fd;
    int err;   /* errno of the first failed write, 0 when none */
} gj_writer;

/* Writes a file through a temporary name in the same directory and renames
 * it into place: readers never see half a file, and a graph still mapping
 * the file it replaces keeps the old bytes. FILL writes the content to
 * W->fd and returns a status. */
static pl_status *gj_replace_file(const char *path,
                                  pl_status *(*fill)(gj_writer *w, void *arg),
                                  void *arg)
{
    size_t len = strlen(path), total;
    if (!pl_size_add(len, 48, &total))
        return gj_oom("naming a temporary file");
    char *tmp = pl_malloc(total);
    if (tmp == NULL)
        return gj_oom("naming a temporary file");
    static unsigned long counter;
    gj_writer w = {.fd = -1};
    for (int attempt = 0; attempt < 100 && w.fd < 0; attempt++) {
        snprintf(tmp, total, "%s.tmp.%ld.%lu", path, (long)getpid(),
                 __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
        w.fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (w.fd < 0 && errno != EEXIST)
            break;
    }
    if (w.fd < 0) {
        int err = errno;
        pl_status *st = pl_status_create(pl_datafile_code(err), "%s: cannot create "
                                         "%s: %s", path, tmp, strerror(err));
        pl_free(tmp);
        return st;
    }
    pl_status *st = fill(&w, arg);
    if (st == NULL && fsync(w.fd) != 0)
        w.err = errno;
    if (close(w.fd) != 0 && w.err == 0)
        w.err = errno;
    if (st == NULL && w.err != 0)
        st = pl_status_create(pl_datafile_code(w.err), "%s: write failed: %s", path,
                              strerror(w.err));
    if (st == NULL && rename(tmp, path) != 0) {
        int err = errno;
        st = pl_status_create(pl_datafile_code(err), "%s: cannot rename %s into "
                              "place: %s", path, tmp, strerror(err));
    }
    if (st != NULL)
        unlink(tmp);
    pl_free(tmp);
    return st;
}

/* Writes the constants of G, then of its bodies node by node, in the
 * order gj_build laid them out. */
static void gj_fill_graph(gj_writer *w, const pl_graph *g, size_t *cursor_io)
{
    static const unsigned char zeros[PL_GRAPH_JSON_ALIGN];
    size_t cursor = *cursor_io;
    for (size_t i = 0; w->err == 0 && i < pl_graph_tensor_count(g); i++) {
        const pl_graph_tensor *t = pl_graph_get_tensor(g, (pl_tid)i);
        if (t->data == NULL)
            continue;
        size_t pad = (PL_GRAPH_JSON_ALIGN - cursor % PL_GRAPH_JSON_ALIGN) %
                     PL_GRAPH_JSON_ALIGN;
        if (!gj_write_all(w->fd, zeros, pad) ||
            !gj_write_all(w->fd, t->data, t->nbytes)) {
            w->err = errno ? errno : EIO;
            return;
        }
        /* The JSON was built first with the same layout and checked it. */
        cursor += pad + t->nbytes;
    }
    *cursor_io = cursor;
    for (size_t i = 0; w->err == 0 && i < pl_graph_node_count(g); i++) {
        const pl_graph_node *n = pl_graph_get_node(g, (pl_nid)i);
        for (size_t a = 0; a < n->n_attrs; a++)
            if (n->attrs[a].kind == PL_ATTR_GRAPH || n->attrs[a].kind == PL_ATTR_GRAPHS)
                for (size_t b = 0; b < n->attrs[a].n; b++)
                    gj_fill_graph(w, n->attrs[a].graphs[b], cursor_io);
    }
}

static pl_status *gj_fill_sidecar(gj_writer *w, void *arg)
{
    size_t cursor = 0;
    gj_fill_graph(w, arg, &cursor);
    return NULL;
}

static int gj_dump_cb(const char *buffer, size_t size, void *data)
{
    gj_writer *w = data;
    if (!gj_write_all(w->fd, buffer, size)) {
        w->err = errno ? errno : EIO;
        return -1;
    }
    return 0;
}

static pl_status *gj_fill_json(gj_writer *w, void *arg)
{
    json_t *root = arg;
    if (json_dump_callback(root, gj_dump_cb, w,
                           JSON_INDENT(2) | JSON_REAL_PRECISION(17)) != 0) {
        if (w->err == 0)
            return gj_oom("printing JSON");
        return NULL;
    }
    if (!gj_write_all(w->fd, "\n", 1))
        w->err = errno ? errno : EIO;
    return NULL;
}

/* Whether G or a body of it holds a constant (then a sidecar is needed). */
static bool gj_any_constant(const pl_graph *g)
{
    for (size_t i = 0; i < pl_graph_tensor_count(g); i++)
        if (pl_graph_get_tensor(g, (pl_tid)i)->data != NULL)
            return true;
    for (size_t i = 0; i < pl_graph_node_count(g); i++) {
        const pl_graph_node *n = pl_graph_get_node(g, (pl_nid)i);
        for (size_t a = 0; a < n->n_attrs; a++)
            for (size_t b = 0; (n->attrs[a].kind == PL_ATTR_GRAPH ||
                                n->attrs[a].kind == PL_ATTR_GRAPHS) &&
                               b < n->attrs[a].n;
                 b++)
                if (gj_any_constant(n->attrs[a].graphs[b]))
                    return true;
    }
    return false;
}

pl_status *pl_graph_save_json(const pl_graph *g, const char *path,
                              const char *sidecar_name)
{
    if (g == NULL || path == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "pl_graph_save_json: %s is NULL",
                                g ? "path" : "graph");
    bool any_constant = gj_any_constant(g);
    if (any_constant) {
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        if (sidecar_name == NULL || sidecar_name[0] == '\0' ||
            strchr(sidecar_name, '/') != NULL || strcmp(sidecar_name, ".") == 0 ||
            strcmp(sidecar_name, "..") == 0 ||
            !gj_json_safe(sidecar_name, strlen(sidecar_name)))
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "%s: the graph has constants, and the "
                                    "sidecar name '%.200s' is not a plain file "
                                    "name",
                                    path, sidecar_name ? sidecar_name : "(null)");
        if (strcmp(base, sidecar_name) == 0)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "%s: the sidecar cannot have the JSON "
                                    "file's own name",
                                    path);
    }
    gj_save S = {.g = g, .with_offsets = true};
    json_t *root = json_object();
    if (root == NULL)
        return gj_oom("building JSON");
    pl_status *st = gj_build(&S, NULL, 0, any_constant ? sidecar_name : NULL, root);
    if (st == NULL && any_constant) {
        char *dir = gj_dirname(path);
        char *side = dir ? gj_join(dir, sidecar_name) : NULL;
        if (side == NULL)
            st = gj_oom("naming the sidecar");
        else
            st = gj_replace_file(side, gj_fill_sidecar, (void *)g);
        pl_free(side);
        pl_free(dir);
    }
    if (st == NULL)
        st = gj_replace_file(path, gj_fill_json, root);
    json_decref(root);
    return st;
}
