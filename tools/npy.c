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
                 "%s: unsupported dtype %.*s (accepted: <f4 <f8 <f2 |i1 |u1 <i2 <u2 <i4 <u4 <i8 <u8 |b1, "
                 "<u2 also as a bf16 input's bit patterns)",
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
    size_t esize = pl_dtype_size(out->dtype);
    if (elements > SIZE_MAX / esize) {
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

int npy_write(const char *path, pl_dtype dtype, int32_t ndim, const int64_t *dims,
              const void *data, size_t bytes, char *err, size_t err_size)
{
    const char *descr = npy_descr_of(dtype);
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
