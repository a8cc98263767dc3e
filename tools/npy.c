/* npy.c — reading and writing NumPy's .npy format (a magic string, a
 * version, a Python-literal header with descr, fortran_order and shape, then
 * the raw bytes). Only what the runtime's dtypes need, checked strictly:
 * a header that is not what NumPy writes is refused with the reason. */
#define _POSIX_C_SOURCE 200809L
#include "npy.h"

#include "float16.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *descr;
    pl_dtype dtype;
} npy_types[] = {
    {"<f4", {PL_TYPE_FLOAT, 32, 1}}, {"<f8", {PL_TYPE_FLOAT, 64, 1}},
    {"<f2", {PL_TYPE_FLOAT, 16, 1}}, {"|i1", {PL_TYPE_INT, 8, 1}},
    {"|u1", {PL_TYPE_UINT, 8, 1}},   {"<i4", {PL_TYPE_INT, 32, 1}},
    {"<i8", {PL_TYPE_INT, 64, 1}},   {"|b1", {PL_TYPE_BOOL, 8, 1}},
    {"<i2", {PL_TYPE_INT, 16, 1}},   {"<u2", {PL_TYPE_UINT, 16, 1}},
    {"<u4", {PL_TYPE_UINT, 32, 1}},  {"<u8", {PL_TYPE_UINT, 64, 1}},
};

static const char *npy_descr_of(pl_dtype dt)
{
    if (PL_DTYPE_EQ(dt, PL_DTYPE_BF16))
        return "<f4";
    for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
        if (PL_DTYPE_EQ(dt, npy_types[i].dtype))
            return npy_types[i].descr;
    return NULL;
}

void npy_free(npy_array *a)
{
    if (a != NULL) {
        free(a->data);
        a->data = NULL;
    }
}

/* Appends code point C as UTF-8 at P; returns the bytes written (0 for
 * one that is no Unicode scalar value). */
static size_t npy_utf8_put(uint32_t c, char *p)
{
    if (c < 0x80) {
        p[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        p[0] = (char)(0xC0 | c >> 6);
        p[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        if (c >= 0xD800 && c < 0xE000)
            return 0;
        p[0] = (char)(0xE0 | c >> 12);
        p[1] = (char)(0x80 | (c >> 6 & 0x3F));
        p[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    if (c < 0x110000) {
        p[0] = (char)(0xF0 | c >> 18);
        p[1] = (char)(0x80 | (c >> 12 & 0x3F));
        p[2] = (char)(0x80 | (c >> 6 & 0x3F));
        p[3] = (char)(0x80 | (c & 0x3F));
        return 4;
    }
    return 0;
}

/* The next code point of UTF-8 string *S, advancing it (U+FFFD for a
 * malformed byte). */
static uint32_t npy_utf8_get(const unsigned char **s)
{
    const unsigned char *p = *s;
    uint32_t c = p[0];
    int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
    if (c >= 0x80 && extra == 0) {
        *s = p + 1;
        return 0xFFFD;
    }
    c &= extra == 3 ? 0x07 : extra == 2 ? 0x0F : extra == 1 ? 0x1F : 0x7F;
    for (int i = 1; i <= extra; i++) {
        if ((p[i] & 0xC0) != 0x80) {
            *s = p + i;
            return 0xFFFD;
        }
        c = c << 6 | (p[i] & 0x3F);
    }
    *s = p + 1 + extra;
    return c;
}

/* NumPy's '<Un' strings (N UTF-32 code units each, NUL-padded) of COUNT
 * elements at RAW as PL_DTYPE_STRING data: COUNT pointers, then the UTF-8
 * strings they point at, in one new block. NULL when out of memory or a
 * code unit is no Unicode scalar value. */
static void *npy_strings_from_utf32(const unsigned char *raw, size_t count, size_t width)
{
    size_t total = count * sizeof(const char *) + count * (width * 4 + 1);
    char *block = malloc(total ? total : 1);
    if (block == NULL)
        return NULL;
    char *p = block + count * sizeof(const char *);
    for (size_t i = 0; i < count; i++) {
        ((const char **)(void *)block)[i] = p;
        for (size_t k = 0; k < width; k++) {
            const unsigned char *u = raw + (i * width + k) * 4;
            uint32_t c = (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 |
                         (uint32_t)u[3] << 24;
            if (c == 0)
                break;
            size_t n = npy_utf8_put(c, p);
            if (n == 0) {
                free(block);
                return NULL;
            }
            p += n;
        }
        *p++ = '\0';
    }
    return block;
}

/* Finds 'key': in the header dict and returns a pointer past the colon. */
static const char *npy_key(const char *hdr, const char *key)
{
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(hdr, pat);
    if (p == NULL)
        return NULL;
    p += strlen(pat);
    while (*p == ' ')
        p++;
    if (*p != ':')
        return NULL;
    p++;
    while (*p == ' ')
        p++;
    return p;
}

int npy_read(const char *path, npy_array *out, char *err, size_t err_size)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return -1;
    }
    unsigned char head[12];
    char *hdr = NULL;
    int rc = -1;
    if (fread(head, 1, 10, f) != 10 || memcmp(head, "\x93NUMPY", 6) != 0) {
        snprintf(err, err_size, "%s: not a .npy file (bad magic)", path);
        goto done;
    }
    size_t hlen;
    if (head[6] == 1) {
        hlen = (size_t)head[8] | (size_t)head[9] << 8;
    } else if (head[6] == 2 || head[6] == 3) {
        if (fread(head + 10, 1, 2, f) != 2) {
            snprintf(err, err_size, "%s: truncated header", path);
            goto done;
        }
        hlen = (size_t)head[8] | (size_t)head[9] << 8 | (size_t)head[10] << 16 |
               (size_t)head[11] << 24;
    } else {
        snprintf(err, err_size, "%s: unsupported .npy version %u.%u", path, head[6], head[7]);
        goto done;
    }
    if (hlen > 1 << 20) {
        snprintf(err, err_size, "%s: header of %zu bytes is too large", path, hlen);
        goto done;
    }
    hdr = calloc(1, hlen + 1);
    if (hdr == NULL || fread(hdr, 1, hlen, f) != hlen) {
        snprintf(err, err_size, "%s: truncated header", path);
        goto done;
    }
    const char *d = npy_key(hdr, "descr");
    const char *fo = npy_key(hdr, "fortran_order");
    const char *sh = npy_key(hdr, "shape");
    if (d == NULL || fo == NULL || sh == NULL || *d != '\'' || *sh != '(') {
        snprintf(err, err_size, "%s: header lacks descr, fortran_order or shape", path);
        goto done;
    }
    if (strncmp(fo, "False", 5) != 0) {
        snprintf(err, err_size, "%s: Fortran-ordered arrays are not supported", path);
        goto done;
    }
    bool found = false;
    size_t uwidth = 0; /* '<Un': strings of N code points */
    if (strncmp(d + 1, "<U", 2) == 0) {
        char *end;
        unsigned long w = strtoul(d + 3, &end, 10);
        if (end != d + 3 && *end == '\'' && w > 0 && w < (1u << 20)) {
            uwidth = w;
            out->dtype = PL_DTYPE_STRING;
            found = true;
        }
    }
    for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++) {
        size_t n = strlen(npy_types[i].descr);
        if (strncmp(d + 1, npy_types[i].descr, n) == 0 && d[1 + n] == '\'') {
            out->dtype = npy_types[i].dtype;
            found = true;
        }
    }
    if (!found) {
        const char *end = strchr(d + 1, '\'');
        snprintf(err, err_size,
                 "%s: unsupported dtype %.*s (accepted: <f4 <f8 <f2 |i1 |u1 <i2 <u2 <i4 <u4 <i8 <u8 |b1 "
                 "<U (strings), <u2 also as a bf16 input's bit patterns)",
                 path, end ? (int)(end - d - 1) : 8, d + 1);
        goto done;
    }
    const char *p = sh + 1;
    size_t elements = 1;
    while (*p != ')') {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == ')')
            break;
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 0 || out->ndim >= 16) {
            snprintf(err, err_size, "%s: bad shape in header", path);
            goto done;
        }
        out->dims[out->ndim++] = v;
        if (v != 0 && elements > SIZE_MAX / (size_t)v) {
            snprintf(err, err_size, "%s: shape too large", path);
            goto done;
        }
        elements *= (size_t)v;
        p = end;
    }
    size_t esize = uwidth ? uwidth * 4 : pl_dtype_size(out->dtype);
    if (elements > SIZE_MAX / esize / 2) {
        snprintf(err, err_size, "%s: shape too large", path);
        goto done;
    }
    out->bytes = elements * esize;
    out->data = malloc(out->bytes ? out->bytes : 1);
    if (out->data == NULL) {
        snprintf(err, err_size, "%s: out of memory for %zu bytes", path, out->bytes);
        goto done;
    }
    if (fread(out->data, 1, out->bytes, f) != out->bytes) {
        snprintf(err, err_size, "%s: holds fewer bytes than its shape needs (%zu)", path,
                 out->bytes);
        npy_free(out);
        goto done;
    }
    if (uwidth) {
        void *strs = npy_strings_from_utf32(out->data, elements, uwidth);
        free(out->data);
        out->data = strs;
        out->bytes = elements * sizeof(const char *);
        if (strs == NULL) {
            snprintf(err, err_size, "%s: out of memory, or a code point that is no character",
                     path);
            goto done;
        }
    }
    rc = 0;
done:
    free(hdr);
    fclose(f);
    return rc;
}

int npy_to_bf16(npy_array *a)
{
    if (!PL_DTYPE_EQ(a->dtype, PL_DTYPE_F32))
        return -1;
    size_t n = a->bytes / sizeof(float);
    const float *src = a->data;
    uint16_t *dst = a->data;
    /* In place: element i is read before anything at or after 2i is written. */
    for (size_t i = 0; i < n; i++) {
        float f;
        memcpy(&f, src + i, sizeof f);
        dst[i] = cli_bf16_from_float(f);
    }
    a->dtype = PL_DTYPE_BF16;
    a->bytes = n * sizeof(uint16_t);
    return 0;
}

/* Writes the data part of a bf16 tensor as float32. */
static bool npy_write_bf16_as_f32(FILE *f, const void *data, size_t bytes)
{
    const uint16_t *src = data;
    float buf[1024];
    size_t n = bytes / sizeof(uint16_t);
    for (size_t i = 0; i < n;) {
        size_t k = 0;
        for (; k < sizeof buf / sizeof buf[0] && i < n; k++, i++) {
            uint16_t b;
            memcpy(&b, src + i, sizeof b);
            buf[k] = cli_bf16_to_float(b);
        }
        if (fwrite(buf, sizeof buf[0], k, f) != k)
            return false;
    }
    return true;
}

/* A string tensor's COUNT UTF-8 strings as NumPy's '<Un': *WIDTH the most
 * code points of one, the UTF-32 data a new block (NULL: out of memory). */
static void *npy_strings_to_utf32(const char *const *strs, size_t count, size_t *width)
{
    size_t w = 1;
    for (size_t i = 0; i < count; i++) {
        size_t n = 0;
        for (const unsigned char *p = (const unsigned char *)strs[i]; *p; n++)
            npy_utf8_get(&p);
        w = n > w ? n : w;
    }
    *width = w;
    uint32_t *out = calloc(count ? count * w : 1, 4);
    for (size_t i = 0; out != NULL && i < count; i++) {
        const unsigned char *p = (const unsigned char *)strs[i];
        for (size_t k = 0; *p; k++) {
            uint32_t c = npy_utf8_get(&p);
            unsigned char *u = (unsigned char *)&out[i * w + k];
            u[0] = (unsigned char)c, u[1] = (unsigned char)(c >> 8);
            u[2] = (unsigned char)(c >> 16), u[3] = (unsigned char)(c >> 24);
        }
    }
    return out;
}

int npy_write(const char *path, pl_dtype dtype, int32_t ndim, const int64_t *dims,
              const void *data, size_t bytes, char *err, size_t err_size)
{
    char sdescr[32];
    void *utf32 = NULL;
    const char *descr = npy_descr_of(dtype);
    if (PL_DTYPE_EQ(dtype, PL_DTYPE_STRING)) {
        size_t width, count = bytes / sizeof(const char *);
        utf32 = npy_strings_to_utf32(data, count, &width);
        if (utf32 == NULL) {
            snprintf(err, err_size, "%s: out of memory", path);
            return -1;
        }
        snprintf(sdescr, sizeof sdescr, "<U%zu", width);
        descr = sdescr;
        data = utf32;
        bytes = count * width * 4;
    }
    if (descr == NULL) {
        snprintf(err, err_size, "%s: dtype has no .npy equivalent", path);
        return -1;
    }
    bool widen = PL_DTYPE_EQ(dtype, PL_DTYPE_BF16);
    char dict[512];
    size_t n = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int32_t i = 0; i < ndim && n < sizeof dict; i++)
        n += (size_t)snprintf(dict + n, sizeof dict - n, "%lld%s", (long long)dims[i],
                              ndim == 1 ? "," : (i + 1 < ndim ? ", " : ""));
    n += (size_t)snprintf(dict + n, sizeof dict - n, "), }");
    /* Pad so that the data starts at a multiple of 64, header ends in \n. */
    size_t total = 10 + n + 1;
    size_t pad = (64 - total % 64) % 64;
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        free(utf32);
        return -1;
    }
    size_t hlen = n + pad + 1;
    unsigned char head[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                              (unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
    bool ok = fwrite(head, 1, 10, f) == 10 && fwrite(dict, 1, n, f) == n;
    for (size_t i = 0; ok && i < pad; i++)
        ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    if (widen)
        ok = ok && npy_write_bf16_as_f32(f, data, bytes);
    else
        ok = ok && fwrite(data, 1, bytes, f) == bytes;
    int saved = ok ? 0 : errno;
    free(utf32);
    if (fclose(f) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    if (!ok) {
        snprintf(err, err_size, "%s: write failed: %s", path,
                 saved ? strerror(saved) : "short write");
        return -1;
    }
    return 0;
}
