/* check.c — `plinth check-module`: a module file checked against the rules
 * of plinth/module.h, by driving its table directly, as the core would and
 * in the ways the core is allowed to that a plain session seldom does:
 * version negotiation, configure with no and with unknown keys, statuses
 * made through the host, device memory at every offset with poisoned
 * surroundings, release_all, one kernel from several threads at once,
 * export/import round trips and bad blobs, refusals with reasons. The
 * probes are one-node graphs of common operators; their results are
 * compared with the cpu module's. The ONNX node tests for the ops a module
 * claims are run by the CLI, on sessions (tools/plinth.c).
 *
 * Everything runs in the calling process: a module that crashes here takes
 * the caller down, so the CLI calls this in a child process. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph.h"
#include "graph_builder.h"
#include "graph_view.h"
#include "note.h"
#include "partition.h"
#include "registry.h"
#include "status.h"

#define CHK_GUARD 64         /* poisoned bytes after every tensor */
#define CHK_POISON 0xff      /* a NaN in every float lane */
#define CHK_OFFSET 72        /* the byte offset of the offset runs */
#define CHK_MAX_IO 4
#define CHK_MAX_THREADS 16
#define CHK_RTOL 1e-3
#define CHK_ATOL 1e-4

typedef struct chk {
    pl_runtime *rt;
    pl_module *m;
    pl_module *ref;      /* cpu, when loaded and not the module checked */
    int device;
    int threads;
    int iterations;
    bool host_memory;
    int32_t device_type;
    pl_check_sink sink;
    void *user;
    size_t failures;
} chk;

static void chk_say(chk *c, const char *check, pl_check_verdict v, const char *fmt, ...)
    PL_PRINTF_LIKE(4, 5);

static void chk_say(chk *c, const char *check, pl_check_verdict v, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (v == PL_CHECK_FAIL)
        c->failures++;
    if (c->sink != NULL)
        c->sink(c->user, check, v, line);
}

/* Tells the sink that CHECK is about to run (no verdict: a caller that
 * sees the process die knows where). */
static void chk_begin(chk *c, const char *check)
{
    if (c->sink != NULL)
        c->sink(c->user, check, PL_CHECK_RUNNING, "");
}

/* A status the module returned from CALL: kept when the core made it;
 * otherwise a failure of CHECK (a status not made through the host table
 * cannot be freed by the core) and a core status in its place. */
static pl_status *chk_own(chk *c, const char *check, const char *call, pl_status *st)
{
    if (pl_status_is_core(st))
        return st;
    chk_say(c, check, PL_CHECK_FAIL,
            "%s returned a status the host did not make: make every status with "
            "host->status_create (the core frees them)", call);
    return pl_status_create(PL_CODE_INTERNAL, "%s: a status not made by the host", call);
}

/* ---- memory on the module's device, or host memory ------------------------ */

static pl_status *chk_alloc(chk *c, pl_module *m, size_t bytes, void **out)
{
    *out = NULL;
    if (m->api.capabilities & PL_CAP_HOST_MEMORY) {
        *out = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
        return *out ? NULL : pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    }
    pl_status *st = chk_own(c, "memory", "mem_alloc",
                            m->api.mem_alloc(m->ctx, m == c->m ? c->device : 0, bytes, 0, out));
    if (st == NULL && *out == NULL)
        st = pl_status_create(PL_CODE_INTERNAL, "mem_alloc of %zu bytes returned NULL", bytes);
    return st;
}

static void chk_free(chk *c, pl_module *m, void *p)
{
    if (m->api.capabilities & PL_CAP_HOST_MEMORY)
        free(p);
    else if (p != NULL)
        m->api.mem_free(m->ctx, m == c->m ? c->device : 0, p);
}

static pl_status *chk_put(chk *c, pl_module *m, void *dst, size_t off, const void *src,
                          size_t n)
{
    if (m->api.capabilities & PL_CAP_HOST_MEMORY) {
        memcpy((char *)dst + off, src, n);
        return NULL;
    }
    return chk_own(c, "memory", "copy_to_device",
                   m->api.copy_to_device(m->ctx, m == c->m ? c->device : 0, dst, off, src, n));
}

static pl_status *chk_get(chk *c, pl_module *m, void *dst, const void *src, size_t off,
                          size_t n)
{
    if (m->api.capabilities & PL_CAP_HOST_MEMORY) {
        memcpy(dst, (const char *)src + off, n);
        return NULL;
    }
    return chk_own(c, "memory", "copy_to_host",
                   m->api.copy_to_host(m->ctx, m == c->m ? c->device : 0, dst, src, off, n));
}

/* ---- identity, entry point, table ----------------------------------------- */

static void chk_entry(chk *c)
{
    chk_begin(c, "entry");
    pl_module_entry_fn entry =
        (pl_module_entry_fn)(uintptr_t)dlsym(c->m->handle, PL_MODULE_ENTRY_SYMBOL);
    if (entry == NULL) {
        chk_say(c, "entry", PL_CHECK_FAIL, "no exported %s", PL_MODULE_ENTRY_SYMBOL);
        return;
    }
    uint32_t major = PL_ABI_MAJOR + 1;
    const pl_module_api *api = NULL;
    pl_code code = entry(&pl_host_table, &major, &api);
    if (code != PL_CODE_INCOMPATIBLE || major != c->m->note.abi_major) {
        chk_say(c, "entry", PL_CHECK_FAIL,
                "offered ABI major %u, it answered %s with major %u: it must answer "
                "incompatible and name its own major (%u)", PL_ABI_MAJOR + 1,
                pl_code_name(code), major, c->m->note.abi_major);
        return;
    }
    major = PL_ABI_MAJOR;
    code = entry(NULL, &major, &api);
    if (code == PL_CODE_OK) {
        chk_say(c, "entry", PL_CHECK_FAIL, "accepted a NULL host table");
        return;
    }
    major = PL_ABI_MAJOR;
    const pl_module_api *again = NULL;
    code = entry(&pl_host_table, &major, &again);
    if (code != PL_CODE_OK || again == NULL) {
        chk_say(c, "entry", PL_CHECK_FAIL, "a second call answered %s", pl_code_name(code));
        return;
    }
    chk_say(c, "entry", PL_CHECK_PASS,
            "negotiates: refuses major %u naming %u, refuses a NULL host table",
            PL_ABI_MAJOR + 1, major);
}

static void chk_table(chk *c)
{
    const pl_module_api *a = &c->m->api;
    if (a->version == NULL || a->version[0] == '\0' || a->vendor == NULL) {
        chk_say(c, "table", PL_CHECK_FAIL, "the table has no version or no vendor string");
        return;
    }
    chk_say(c, "table", PL_CHECK_PASS,
            "%s %s by %s, ABI %u.%u, capabilities 0x%llx, every required function set",
            a->name, a->version, a->vendor, c->m->note.abi_major, c->m->note.abi_minor,
            (unsigned long long)a->capabilities);
}

/* ---- configure ------------------------------------------------------------- */

typedef struct chk_text {
    char s[4096];
    size_t n;
} chk_text;

static void chk_text_kv(void *user, const char *key, const char *value)
{
    chk_text *t = user;
    int k = snprintf(t->s + t->n, sizeof t->s - t->n, "%s=%s;", key ? key : "(null)",
                     value ? value : "(null)");
    if (k > 0 && t->n + (size_t)k < sizeof t->s)
        t->n += (size_t)k;
}

static pl_status *chk_configure_call(chk *c, const pl_kv *in, size_t n, chk_text *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&c->m->configure_mu);
    pl_status *st = c->m->api.configure(c->m->ctx, in, n, chk_text_kv, out);
    pthread_mutex_unlock(&c->m->configure_mu);
    return chk_own(c, "configure", "configure", st);
}

static void chk_configure(chk *c)
{
    chk_begin(c, "configure");
    if (c->m->api.configure == NULL) {
        chk_say(c, "configure", PL_CHECK_SKIP, "no configure function");
        return;
    }
    chk_text before, after, junk;
    pl_status *st = chk_configure_call(c, NULL, 0, &before);
    if (st != NULL) {
        chk_say(c, "configure", PL_CHECK_FAIL, "a query (no keys) failed: %s",
                pl_status_message(st));
        pl_status_free(st);
        return;
    }
    const char *key = "plinth_check_no_such_key";
    pl_kv kv = {key, "1"};
    st = chk_configure_call(c, &kv, 1, &junk);
    if (st == NULL) {
        chk_say(c, "configure", PL_CHECK_FAIL,
                "accepted the unknown key '%s': an unknown key must be an error naming it",
                key);
        return;
    }
    bool named = strstr(pl_status_message(st), key) != NULL;
    char msg[256];
    snprintf(msg, sizeof msg, "%s", pl_status_message(st));
    pl_status_free(st);
    if (!named) {
        chk_say(c, "configure", PL_CHECK_FAIL,
                "refused the unknown key '%s' without naming it: \"%s\"", key, msg);
        return;
    }
    st = chk_configure_call(c, NULL, 0, &after);
    if (st != NULL || strcmp(before.s, after.s) != 0) {
        chk_say(c, "configure", PL_CHECK_FAIL,
                "a failed configure changed its settings: \"%s\" became \"%s\"", before.s,
                st ? pl_status_message(st) : after.s);
        pl_status_free(st);
        return;
    }
    chk_say(c, "configure", PL_CHECK_PASS,
            "queries with no keys; refuses an unknown key naming it (\"%s\"), changing "
            "nothing", msg);
}

/* ---- devices and memory ------------------------------------------------------ */

static void chk_devices(chk *c)
{
    chk_begin(c, "devices");
    int n = c->m->api.device_count ? c->m->api.device_count(c->m->ctx) : 0;
    for (int d = 0; d < n; d++) {
        pl_device_properties p = {.header = PL_ABI_HEADER_INIT(pl_device_properties)};
        pl_status *st = c->m->api.device_properties
                            ? chk_own(c, "devices", "device_properties",
                                      c->m->api.device_properties(c->m->ctx, d, &p))
                            : NULL;
        if (st != NULL || memchr(p.name, '\0', sizeof p.name) == NULL) {
            chk_say(c, "devices", PL_CHECK_FAIL, "device_properties(%d): %s", d,
                    st ? pl_status_message(st) : "name not NUL-terminated");
            pl_status_free(st);
            return;
        }
        if (d == c->device)
            c->device_type = p.device_type ? p.device_type : PL_DEVICE_EXT;
    }
    chk_say(c, "devices", PL_CHECK_PASS, "%d device(s); checking device %d", n, c->device);
}

/* Fills N bytes at P with a pattern that depends on SEED. */
static void chk_pattern(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)((i * 131u + seed * 17u + 1u) % 251u);
}

/* Checks that IMAGE (the whole buffer read back) holds PAYLOAD at OFF and
 * poison everywhere else. */
static bool chk_image_ok(const unsigned char *image, size_t size, size_t off,
                         const unsigned char *payload, size_t n, size_t *out_bad)
{
    for (size_t i = 0; i < size; i++) {
        bool inside = i >= off && i < off + n;
        if (image[i] != (inside ? payload[i - off] : CHK_POISON)) {
            *out_bad = i;
            return false;
        }
    }
    return true;
}

#define CHK_MEM_BYTES 4096

static bool chk_memory_copies(chk *c, void *buf, unsigned char *poison, unsigned char *image,
                              unsigned char *payload)
{
    static const size_t offs[] = {0, 1, 3, 7, 8, 63, 64, 65, 1000, 4031, 4095};
    static const size_t sizes[] = {0, 1, 2, 5, 16, 64, 100, 1025, 4096};
    pl_module *m = c->m;
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
        for (size_t j = 0; j < sizeof sizes / sizeof sizes[0]; j++) {
            size_t off = offs[i], n = sizes[j], bad = 0;
            if (off + n > CHK_MEM_BYTES)
                continue;
            chk_pattern(payload, n, (unsigned)(i * 16 + j));
            pl_status *st = chk_put(c, m, buf, 0, poison, CHK_MEM_BYTES);
            if (st == NULL)
                st = chk_put(c, m, buf, off, payload, n);
            if (st == NULL)
                st = chk_get(c, m, image, buf, 0, CHK_MEM_BYTES);
            if (st != NULL) {
                chk_say(c, "memory", PL_CHECK_FAIL, "copy of %zu bytes at offset %zu: %s", n,
                        off, pl_status_message(st));
                pl_status_free(st);
                return false;
            }
            if (!chk_image_ok(image, CHK_MEM_BYTES, off, payload, n, &bad)) {
                chk_say(c, "memory", PL_CHECK_FAIL,
                        "copy_to_device of %zu bytes at dst_offset %zu: byte %zu of the "
                        "buffer is wrong (offsets are byte offsets into the handle)", n, off,
                        bad);
                return false;
            }
            /* Read back a part at an offset, into a poisoned host buffer
             * (IMAGE has two bytes more than the device buffer). */
            memset(image, CHK_POISON, CHK_MEM_BYTES + 2);
            st = chk_get(c, m, image + 1, buf, off, n);
            if (st == NULL && (memcmp(image + 1, payload, n) != 0 || image[0] != CHK_POISON ||
                               image[n + 1] != CHK_POISON)) {
                chk_say(c, "memory", PL_CHECK_FAIL,
                        "copy_to_host of %zu bytes at src_offset %zu read the wrong bytes or "
                        "wrote outside the destination", n, off);
                return false;
            }
            pl_status_free(st);
        }
    }
    return true;
}

static bool chk_memory_d2d(chk *c, void *a, void *b, unsigned char *poison,
                           unsigned char *image, unsigned char *payload)
{
    pl_module *m = c->m;
    if (m->api.copy_device_to_device == NULL)
        return true;
    static const size_t cases[][3] = {{0, 0, 4096}, {5, 0, 100}, {0, 9, 100},
                                      {64, 1000, 1025}, {4095, 4095, 1}, {7, 3, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t so = cases[i][0], d_o = cases[i][1], n = cases[i][2], bad = 0;
        chk_pattern(payload, CHK_MEM_BYTES, (unsigned)(100 + i));
        pl_status *st = chk_put(c, m, a, 0, payload, CHK_MEM_BYTES);
        if (st == NULL)
            st = chk_put(c, m, b, 0, poison, CHK_MEM_BYTES);
        if (st == NULL)
            st = chk_own(c, "memory", "copy_device_to_device",
                         m->api.copy_device_to_device(m->ctx, c->device, a, so, c->device, b,
                                                      d_o, n));
        if (st == NULL)
            st = chk_get(c, m, image, b, 0, CHK_MEM_BYTES);
        if (st != NULL) {
            chk_say(c, "memory", PL_CHECK_FAIL, "device-to-device copy: %s",
                    pl_status_message(st));
            pl_status_free(st);
            return false;
        }
        if (!chk_image_ok(image, CHK_MEM_BYTES, d_o, payload + so, n, &bad)) {
            chk_say(c, "memory", PL_CHECK_FAIL,
                    "copy_device_to_device of %zu bytes from offset %zu to offset %zu: byte "
                    "%zu of the destination is wrong", n, so, d_o, bad);
            return false;
        }
    }
    return true;
}

static void chk_memory(chk *c)
{
    chk_begin(c, "memory");
    pl_module *m = c->m;
    if (m->api.capabilities & PL_CAP_HOST_MEMORY) {
        chk_say(c, "memory", PL_CHECK_SKIP, "computes on host memory (PL_CAP_HOST_MEMORY)");
        return;
    }
    if (m->api.mem_alloc == NULL) {
        chk_say(c, "memory", PL_CHECK_SKIP, "runs no nodes and has no memory functions");
        return;
    }
    void *z1 = NULL, *z2 = NULL, *a = NULL, *b = NULL;
    unsigned char *poison = malloc(CHK_MEM_BYTES), *image = malloc(CHK_MEM_BYTES + 2),
                  *payload = malloc(CHK_MEM_BYTES);
    bool ok = poison && image && payload;
    if (ok)
        memset(poison, CHK_POISON, CHK_MEM_BYTES);
    pl_status *st = ok ? chk_alloc(c, m, 0, &z1) : NULL;
    if (st == NULL && ok)
        st = chk_alloc(c, m, 0, &z2);
    if (ok && st == NULL && z1 == z2) {
        chk_say(c, "memory", PL_CHECK_FAIL,
                "two zero-byte allocations returned the same handle: each must be distinct");
        ok = false;
    }
    if (ok && st == NULL)
        st = chk_alloc(c, m, CHK_MEM_BYTES, &a);
    if (ok && st == NULL)
        st = chk_alloc(c, m, CHK_MEM_BYTES, &b);
    if (st != NULL) {
        chk_say(c, "memory", PL_CHECK_FAIL, "%s", pl_status_message(st));
        pl_status_free(st);
        ok = false;
    }
    if (ok)
        ok = chk_memory_copies(c, a, poison, image, payload);
    if (ok)
        ok = chk_memory_d2d(c, a, b, poison, image, payload);
    m->api.mem_free(m->ctx, c->device, NULL);
    chk_free(c, m, z1);
    chk_free(c, m, z2);
    chk_free(c, m, a);
    chk_free(c, m, b);
    if (ok)
        chk_say(c, "memory", PL_CHECK_PASS,
                "zero-byte handles distinct; copies to, from and between handles at 11 "
                "offsets and 9 sizes land exactly, poison around them intact");
    /* release_all: everything goes, and the device is usable after. */
    if (ok && m->api.mem_release_all != NULL) {
        chk_begin(c, "release_all");
        void *x = NULL, *y = NULL;
        st = chk_alloc(c, m, 1000, &x);
        if (st == NULL)
            st = chk_alloc(c, m, 0, &y);
        if (st == NULL) {
            m->api.mem_release_all(m->ctx, c->device);
            x = y = NULL;
            st = chk_alloc(c, m, CHK_MEM_BYTES, &a);
        }
        if (st == NULL) {
            chk_pattern(payload, CHK_MEM_BYTES, 7);
            st = chk_put(c, m, a, 0, payload, CHK_MEM_BYTES);
            if (st == NULL)
                st = chk_get(c, m, image, a, 0, CHK_MEM_BYTES);
            if (st == NULL && memcmp(image, payload, CHK_MEM_BYTES) != 0)
                st = pl_status_create(PL_CODE_INTERNAL, "a buffer made after it reads back "
                                                        "wrong");
            chk_free(c, m, a);
        }
        if (st != NULL)
            chk_say(c, "release_all", PL_CHECK_FAIL, "mem_release_all: %s",
                    pl_status_message(st));
        else
            chk_say(c, "release_all", PL_CHECK_PASS,
                    "frees every buffer; the device allocates and copies after it");
        pl_status_free(st);
    }
    free(poison);
    free(image);
    free(payload);
}

/* ---- probes: one-node graphs ---------------------------------------------------- */

typedef struct chk_attr {
    const char *name;
    char type;            /* 'i' or 'I' */
    int64_t v[4];
    size_t n;
} chk_attr;

typedef struct chk_probe {
    const char *label;
    const char *op;
    size_t n_in;
    int32_t rank[CHK_MAX_IO];
    int64_t dims[CHK_MAX_IO][4];
    unsigned constants;   /* bit i: input i is a constant of the graph */
    chk_attr attrs[3];
    /* CHK_TWICE: the node reads input 0 as its input 1 too (one view
     * input, two node inputs); CHK_REVERSED: the graph declares its inputs
     * last first, so the view's input order is not the node's. */
    unsigned shape_of_io;
} chk_probe;

#define CHK_TWICE 1u
#define CHK_REVERSED 2u

static const chk_probe chk_probes[] = {
    {"Relu", "Relu", 1, {4}, {{2, 3, 5, 7}}, 0, {{0}}, 0},
    {"Add", "Add", 2, {4, 4}, {{2, 3, 4, 5}, {2, 3, 4, 5}}, 0, {{0}}, 0},
    {"Add (broadcast)", "Add", 2, {4, 1}, {{2, 3, 4, 5}, {5}}, 0, {{0}}, 0},
    {"Mul", "Mul", 2, {2, 2}, {{64, 17}, {64, 17}}, 0, {{0}}, 0},
    {"Sigmoid", "Sigmoid", 1, {2}, {{4, 33}}, 0, {{0}}, 0},
    {"Tanh", "Tanh", 1, {2}, {{7, 9}}, 0, {{0}}, 0},
    {"MatMul", "MatMul", 2, {2, 2}, {{8, 16}, {16, 12}}, 0, {{0}}, 0},
    {"MatMul (constant B)", "MatMul", 2, {2, 2}, {{8, 16}, {16, 12}}, 2u, {{0}}, 0},
    {"Gemm", "Gemm", 3, {2, 2, 1}, {{8, 16}, {12, 16}, {12}}, 6u,
     {{"transB", 'i', {1}, 1}}, 0},
    {"Conv", "Conv", 3, {4, 4, 1}, {{1, 16, 9, 9}, {16, 16, 3, 3}, {16}}, 6u,
     {{"pads", 'I', {1, 1, 1, 1}, 4}}, 0},
    {"MaxPool", "MaxPool", 1, {4}, {{1, 8, 10, 10}}, 0,
     {{"kernel_shape", 'I', {2, 2}, 2}, {"strides", 'I', {2, 2}, 2}}, 0},
    {"Softmax", "Softmax", 1, {2}, {{3, 10}}, 0, {{"axis", 'i', {-1}, 1}}, 0},
    {"Transpose", "Transpose", 1, {3}, {{2, 3, 4}}, 0, {{"perm", 'I', {2, 0, 1}, 3}}, 0},
    {"Concat", "Concat", 2, {2, 2}, {{2, 3}, {2, 5}}, 0, {{"axis", 'i', {1}, 1}}, 0},
    {"Add (one input twice)", "Add", 2, {3, 3}, {{4, 5, 6}, {4, 5, 6}}, 0, {{0}}, CHK_TWICE},
    {"Mul (one input twice)", "Mul", 2, {2, 2}, {{9, 7}, {9, 7}}, 0, {{0}}, CHK_TWICE},
    {"Sub (inputs reversed)", "Sub", 2, {2, 2}, {{6, 10}, {6, 10}}, 0, {{0}}, CHK_REVERSED},
    {"Add (inputs reversed)", "Add", 2, {2, 2}, {{6, 10}, {1, 10}}, 0, {{0}}, CHK_REVERSED},
    {"Add (zero elements)", "Add", 2, {2, 2}, {{0, 5}, {0, 5}}, 0, {{0}}, 0},
    {"Relu (zero elements)", "Relu", 1, {3}, {{4, 0, 3}}, 0, {{0}}, 0},
};
#define CHK_N_PROBES (sizeof chk_probes / sizeof chk_probes[0])

static size_t chk_count(int32_t rank, const int64_t *dims)
{
    size_t n = 1;
    for (int32_t i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    return n;
}

/* Deterministic values in [-2, 2). */
static void chk_values(float *v, size_t n, unsigned seed)
{
    uint32_t s = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = (float)((s >> 8) & 0xffff) / 16384.0f - 2.0f;
    }
}

/* The probe's graph: inputs x0.. (constants for the bits of CONSTANTS,
 * with values from seed 99), output y. */
static pl_status *chk_graph(chk *c, const chk_probe *p, pl_graph **out)
{
    *out = NULL;
    pl_graph *g = NULL;
    PL_RETURN_IF_ERROR(pl_graph_create(&g));
    pl_graph_builder *b = NULL;
    pl_status *st = pl_graph_builder_create(g, "check", &b);
    char names[CHK_MAX_IO][24] = {{0}};
    const char *ins[CHK_MAX_IO], *outs[1] = {"y"};
    if (st == NULL)
        st = pl_builder_opset(b, "", 17);
    for (size_t k = 0; st == NULL && k < p->n_in; k++) {
        size_t i = (p->shape_of_io & CHK_REVERSED) ? p->n_in - 1 - k : k;
        snprintf(names[i], sizeof names[i], "x%zu", i);
        ins[i] = names[i];
        if (i == 1 && (p->shape_of_io & CHK_TWICE)) {
            ins[1] = names[0];
            continue;
        }
        if (p->constants & (1u << i)) {
            size_t n = chk_count(p->rank[i], p->dims[i]);
            float *v = malloc(n * sizeof *v);
            if (v == NULL) {
                st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
                break;
            }
            chk_values(v, n, 99u + (unsigned)i);
            st = pl_builder_constant(b, names[i], PL_DTYPE_F32, p->rank[i], p->dims[i], v,
                                     n * sizeof *v);
            free(v);
            continue;
        }
        st = pl_builder_tensor(b, names[i], PL_DTYPE_F32, p->rank[i], p->dims[i], NULL);
        if (st == NULL)
            st = pl_builder_input(b, names[i]);
    }
    size_t node = 0;
    if (st == NULL)
        st = pl_builder_node(b, p->label, p->op, "", ins, p->n_in, outs, 1, &node);
    for (size_t a = 0; st == NULL && a < 3 && p->attrs[a].name != NULL; a++) {
        const chk_attr *at = &p->attrs[a];
        st = at->type == 'i' ? pl_builder_attr_int(b, node, at->name, at->v[0])
                             : pl_builder_attr_ints(b, node, at->name, at->v, at->n);
    }
    if (st == NULL)
        st = pl_builder_output(b, "y");
    pl_graph_builder_destroy(b);
    if (st == NULL)
        st = pl_runtime_type_graph(c->rt, g);
    if (st != NULL) {
        pl_graph_destroy(g);
        return st;
    }
    *out = g;
    return NULL;
}

/* A probe made ready on one module: its graph, view, and a kernel or a
 * compiled subgraph. */
typedef struct chk_ready {
    const chk_probe *p;
    pl_module *m;
    int device;
    pl_graph *g;
    pl_graph_view *view;
    pl_kernel *kernel;
    pl_compiled *compiled;
    size_t workspace;
} chk_ready;

static void chk_unready(chk_ready *r)
{
    if (r->kernel != NULL && r->m->api.kernel_release != NULL)
        r->m->api.kernel_release(r->m->ctx, r->kernel);
    if (r->compiled != NULL && r->m->api.release != NULL)
        r->m->api.release(r->m->ctx, r->compiled);
    r->kernel = NULL;
    r->compiled = NULL;
}

typedef struct chk_verdict {
    bool seen, supported;
    char reason[512];
} chk_verdict;

static void chk_support_sink(void *user, size_t node, int supported, const char *reason)
{
    chk_verdict *v = user;
    if (node != 0)
        return;
    v->seen = true;
    v->supported = supported != 0;
    snprintf(v->reason, sizeof v->reason, "%s", reason ? reason : "");
}

/* Asks M about R's node: imperative modules get_kernel, symbolic ones
 * supported_nodes then compile. NULL with a kernel or compiled subgraph;
 * PL_CODE_UNSUPPORTED with the module's reason; another error when the
 * module broke a rule (WHY then says which, and the caller reports it). */
static pl_status *chk_prepare(chk *c, pl_module *m, int device, chk_ready *r)
{
    r->m = m;
    r->device = device;
    const char *check = r->p->label;
    if (m->api.capabilities & PL_CAP_IMPERATIVE) {
        const pl_graph_node *n = pl_graph_get_node(r->g, 0);
        pl_tensor t[2 * CHK_MAX_IO];
        for (size_t i = 0; i < n->n_inputs; i++)
            pl_partition_describe_tensor(r->g, n->inputs[i], &t[i]);
        pl_partition_describe_tensor(r->g, n->outputs[0], &t[n->n_inputs]);
        pl_node_desc desc = {
            .header = PL_ABI_HEADER_INIT(pl_node_desc),
            .name = n->name, .op = n->op, .domain = n->domain,
            .opset_version = pl_graph_opset(r->g, n->domain),
            .graph = r->view, .node_index = 0,
            .n_inputs = n->n_inputs, .inputs = t,
            .n_outputs = 1, .outputs = t + n->n_inputs,
        };
        pl_status *st = chk_own(c, check, "get_kernel",
                                m->api.get_kernel(m->ctx, device, &desc, &r->kernel,
                                                  &r->workspace));
        if (st == NULL && r->kernel == NULL)
            return pl_status_create(PL_CODE_INTERNAL, "get_kernel returned neither a kernel "
                                                      "nor a status");
        if (st != NULL && pl_status_message(st)[0] == '\0') {
            pl_status_free(st);
            return pl_status_create(PL_CODE_INTERNAL, "get_kernel refused with an empty "
                                                      "message: a refusal needs a reason");
        }
        return st;
    }
    if (!(m->api.capabilities & PL_CAP_SYMBOLIC))
        return pl_status_create(PL_CODE_UNSUPPORTED, "the module runs no nodes");
    chk_verdict v = {0};
    pl_status *st = chk_own(c, check, "supported_nodes",
                            m->api.supported_nodes(m->ctx, device, r->view, chk_support_sink,
                                                   &v));
    if (st != NULL)
        return pl_status_wrap(st, "supported_nodes failed: ");
    if (!v.seen)
        return pl_status_create(PL_CODE_INTERNAL, "supported_nodes gave no verdict for the "
                                                  "node");
    if (!v.supported)
        return v.reason[0] ? pl_status_create(PL_CODE_UNSUPPORTED, "%s", v.reason)
                           : pl_status_create(PL_CODE_INTERNAL,
                                              "supported_nodes refused without a reason: a "
                                              "refusal needs one");
    st = chk_own(c, check, "compile", m->api.compile(m->ctx, device, r->view, &r->compiled));
    if (st == NULL && r->compiled == NULL)
        st = pl_status_create(PL_CODE_INTERNAL, "compile returned nothing");
    return st == NULL ? NULL : pl_status_wrap(st, "accepted, then compile failed: ");
}

/* One run of R: IN holds the host values of every input of the node (NULL
 * for a constant), placed OFFSET bytes into poisoned buffers of R's module;
 * OUT receives the output. *OUT_GUARD is false when a byte outside the
 * output was written. */
static pl_status *chk_run(chk *c, const chk_ready *r, float *const *in, float *out,
                          size_t offset, int worker, bool *out_guard)
{
    const pl_graph_node *n = pl_graph_get_node(r->g, 0);
    pl_module *m = r->m;
    bool symbolic = r->compiled != NULL;
    pl_tensor t[CHK_MAX_IO + 1];
    void *buf[CHK_MAX_IO + 1] = {0};
    size_t bytes[CHK_MAX_IO + 1] = {0};
    void *ws = NULL;
    size_t nt = 0;
    pl_device dev = {PL_DEVICE_CPU, 0};
    if (!(m->api.capabilities & PL_CAP_HOST_MEMORY))
        dev = (pl_device){m == c->m ? c->device_type : PL_DEVICE_EXT, r->device};
    unsigned char *poison = NULL;
    pl_status *st = NULL;
    *out_guard = true;
    /* The tensors the run gets: for a kernel the node's inputs in its
     * order (constants too), for a compiled subgraph the view's inputs in
     * the view's order (each once, constants not); then the output. Each
     * in its own poisoned buffer. */
    size_t n_args = symbolic ? pl_graph_view_table.input_count(r->view) : n->n_inputs;
    if (n_args > CHK_MAX_IO)
        return pl_status_create(PL_CODE_INTERNAL, "a probe with too many inputs");
    for (size_t i = 0; i <= n_args && st == NULL; i++) {
        bool is_out = i == n_args;
        size_t k = i; /* the node input whose host values these are */
        if (!is_out && symbolic) {
            int64_t vt = pl_graph_view_table.input(r->view, i);
            for (k = 0; k < n->n_inputs && (int64_t)n->inputs[k] != vt; k++)
                ;
        }
        pl_tid tid = is_out ? n->outputs[0] : n->inputs[k];
        const pl_graph_tensor *gt = pl_graph_get_tensor(r->g, tid);
        const void *src = is_out ? NULL : (gt->data ? gt->data : in[k]);
        size_t nb = chk_count(gt->ndim, gt->dims) * sizeof(float);
        if (nb == 0) { /* a zero-element tensor: NULL data, as the core may pass */
            bytes[nt] = 0;
            t[nt] = (pl_tensor){.device = dev, .ndim = gt->ndim, .dtype = gt->dtype,
                                .shape = gt->dims, .struct_size = sizeof(pl_tensor)};
            nt++;
            continue;
        }
        size_t total = offset + nb + CHK_GUARD;
        free(poison);
        poison = malloc(total);
        if (poison == NULL) {
            st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
            break;
        }
        memset(poison, CHK_POISON, total);
        st = chk_alloc(c, m, total, &buf[nt]);
        if (st == NULL)
            st = chk_put(c, m, buf[nt], 0, poison, total);
        if (st == NULL && src != NULL)
            st = chk_put(c, m, buf[nt], offset, src, nb);
        bytes[nt] = nb;
        t[nt] = (pl_tensor){
            .data = buf[nt], .device = dev, .ndim = gt->ndim, .dtype = gt->dtype,
            .shape = gt->dims, .byte_offset = offset, .struct_size = sizeof(pl_tensor),
        };
        nt++;
    }
    if (st == NULL && r->workspace > 0)
        st = chk_alloc(c, m, r->workspace, &ws);
    if (st == NULL) {
        pl_run_context run = {.header = PL_ABI_HEADER_INIT(pl_run_context),
                              .device = r->device, .worker = worker};
        pl_output_request req = PL_REQ_WRITE;
        pl_run_args args = {
            .header = PL_ABI_HEADER_INIT(pl_run_args), .run = &run,
            .n_inputs = nt - 1, .inputs = t, .n_outputs = 1, .outputs = &t[nt - 1],
            .requests = symbolic ? NULL : &req, .workspace = ws,
            .workspace_bytes = r->workspace,
        };
        st = symbolic ? chk_own(c, r->p->label, "run", m->api.run(m->ctx, r->compiled, &args))
                      : chk_own(c, r->p->label, "kernel_run",
                                m->api.kernel_run(m->ctx, r->kernel, &args));
    }
    if (st == NULL && nt > 0 && bytes[nt - 1] > 0) {
        size_t total = offset + bytes[nt - 1] + CHK_GUARD;
        unsigned char *image = malloc(total);
        st = image ? chk_get(c, m, image, buf[nt - 1], 0, total)
                   : pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
        if (st == NULL) {
            memcpy(out, image + offset, bytes[nt - 1]);
            for (size_t k = 0; k < total; k++)
                if ((k < offset || k >= offset + bytes[nt - 1]) && image[k] != CHK_POISON)
                    *out_guard = false;
        }
        free(image);
    }
    for (size_t i = 0; i < nt; i++)
        chk_free(c, m, buf[i]);
    chk_free(c, m, ws);
    free(poison);
    return st;
}

/* The first element where GOT and WANT differ beyond the tolerance, or -1. */
static long chk_compare(const float *got, const float *want, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        if (isnan(g) || fabs(g - w) > CHK_ATOL + CHK_RTOL * fabs(w))
            return (long)i;
    }
    return -1;
}

/* Host inputs of probe P for SEED (NULL for constants) and its output. */
typedef struct chk_io {
    float *in[CHK_MAX_IO];
    float *out;
    float *want;
    size_t n_out;
} chk_io;

static bool chk_io_make(const chk_ready *r, unsigned seed, chk_io *io)
{
    memset(io, 0, sizeof *io);
    const pl_graph_node *n = pl_graph_get_node(r->g, 0);
    for (size_t i = 0; i < n->n_inputs; i++) {
        if (r->p->constants & (1u << i))
            continue;
        size_t k = chk_count(r->p->rank[i], r->p->dims[i]);
        io->in[i] = malloc(k * sizeof(float));
        if (io->in[i] == NULL)
            return false;
        chk_values(io->in[i], k, seed * 8u + (unsigned)i);
        if (i == 1 && (r->p->shape_of_io & CHK_TWICE))
            memcpy(io->in[1], io->in[0], k * sizeof(float));
    }
    const pl_graph_tensor *y = pl_graph_get_tensor(r->g, n->outputs[0]);
    io->n_out = chk_count(y->ndim, y->dims);
    io->out = calloc(io->n_out + 1, sizeof(float));
    io->want = calloc(io->n_out + 1, sizeof(float));
    return io->out && io->want;
}

static void chk_io_free(chk_io *io)
{
    for (size_t i = 0; i < CHK_MAX_IO; i++)
        free(io->in[i]);
    free(io->out);
    free(io->want);
}

/* ---- one kernel from several threads ------------------------------------------ */

typedef struct chk_worker {
    chk *c;
    const chk_ready *r;
    chk_ready own;      /* symbolic: this thread's compiled subgraph */
    int worker;
    chk_io io;
    char failure[512];
} chk_worker;

static void *chk_worker_main(void *arg)
{
    chk_worker *w = arg;
    const chk_ready *r = w->own.compiled ? &w->own : w->r;
    for (int it = 0; it < w->c->iterations && w->failure[0] == '\0'; it++) {
        bool guard = true;
        size_t offset = (it % 2) ? CHK_OFFSET + 4u * (size_t)w->worker : 0;
        pl_status *st = chk_run(w->c, r, w->io.in, w->io.out, offset, w->worker, &guard);
        long bad = st ? -1 : chk_compare(w->io.out, w->io.want, w->io.n_out);
        if (st != NULL)
            snprintf(w->failure, sizeof w->failure, "run %d on thread %d failed: %s", it,
                     w->worker, pl_status_message(st));
        else if (bad >= 0 || !guard)
            snprintf(w->failure, sizeof w->failure,
                     "run %d on thread %d, concurrent with %d others on the same %s, gave "
                     "%s (element %ld: %g, alone it gives %g): kernel_run must be reentrant",
                     it, w->worker, w->c->threads - 1, r->compiled ? "module" : "kernel",
                     guard ? "a different result" : "writes outside its output", bad,
                     bad >= 0 ? w->io.out[bad] : 0.0, bad >= 0 ? w->io.want[bad] : 0.0);
        pl_status_free(st);
    }
    return NULL;
}

static void chk_concurrency(chk *c, const chk_ready *r)
{
    char check[96];
    snprintf(check, sizeof check, "threads %s", r->p->label);
    chk_begin(c, check);
    if (r->m->api.capabilities & PL_CAP_PINNED_THREAD) {
        chk_say(c, check, PL_CHECK_SKIP,
                "PL_CAP_PINNED_THREAD: the core runs its work one call at a time");
        return;
    }
    int nthreads = c->threads;
    chk_worker w[CHK_MAX_THREADS];
    pthread_t tid[CHK_MAX_THREADS];
    memset(w, 0, sizeof w);
    pl_status *st = NULL;
    int made = 0;
    for (int i = 0; i < nthreads && st == NULL; i++, made++) {
        w[i] = (chk_worker){.c = c, .r = r, .worker = i};
        if (!chk_io_make(r, 1000u + (unsigned)i, &w[i].io)) {
            st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
            break;
        }
        if (r->compiled != NULL) {
            w[i].own = *r;
            w[i].own.compiled = NULL;
            w[i].own.kernel = NULL;
            st = chk_prepare(c, r->m, r->device, &w[i].own);
        }
        bool guard = true;
        if (st == NULL)
            st = chk_run(c, w[i].own.compiled ? &w[i].own : r, w[i].io.in, w[i].io.want, 0,
                         i, &guard);
    }
    if (st != NULL) {
        chk_say(c, check, PL_CHECK_FAIL, "setting up: %s", pl_status_message(st));
        pl_status_free(st);
    } else {
        int started = 0;
        for (int i = 0; i < nthreads; i++)
            if (pthread_create(&tid[i], NULL, chk_worker_main, &w[i]) == 0)
                started++;
            else
                break;
        for (int i = 0; i < started; i++)
            pthread_join(tid[i], NULL);
        const char *failure = NULL;
        for (int i = 0; i < started && failure == NULL; i++)
            if (w[i].failure[0])
                failure = w[i].failure;
        if (failure != NULL)
            chk_say(c, check, PL_CHECK_FAIL, "%s", failure);
        else
            chk_say(c, check, PL_CHECK_PASS,
                    "%d threads x %d runs on one %s, each with its own data and worker "
                    "number: every result as when run alone",
                    started, c->iterations,
                    r->compiled ? "module (a compiled subgraph each)" : "kernel");
    }
    for (int i = 0; i < made; i++) {
        chk_unready(&w[i].own);
        chk_io_free(&w[i].io);
    }
}

/* ---- export and import ---------------------------------------------------- */

typedef struct chk_blob {
    unsigned char *b;
    size_t n, cap;
    bool oom;
} chk_blob;

static void chk_blob_sink(void *user, const void *bytes, size_t n)
{
    chk_blob *blob = user;
    if (blob->n + n > blob->cap) {
        size_t cap = (blob->n + n) * 2 + 64;
        unsigned char *nb = realloc(blob->b, cap);
        if (nb == NULL) {
            blob->oom = true;
            return;
        }
        blob->b = nb;
        blob->cap = cap;
    }
    memcpy(blob->b + blob->n, bytes, n);
    blob->n += n;
}

/* Imports BLOB (N bytes) for the view of R; true when the module refused. */
static bool chk_refuses(chk *c, const chk_ready *r, const pl_graph_view *view,
                        const void *blob, size_t n, pl_code *out_code)
{
    pl_compiled *x = NULL;
    pl_status *st = chk_own(c, "export", "import_compiled",
                            c->m->api.import_compiled(c->m->ctx, r->device, view, blob, n,
                                                      &x));
    *out_code = pl_status_code(st);
    pl_status_free(st);
    if (st == NULL && x != NULL) {
        c->m->api.release(c->m->ctx, x);
        return false;
    }
    return true;
}

/* ABI 1.17's compiled_times on R's compiled subgraph: nothing to read
 * before a START; after START and two runs, one entry per node of the
 * view with both runs counted and a fastest run within the total; a READ
 * with the wrong count refused and OUT untouched; no run counted after
 * STOP. */
static void chk_times(chk *c, const chk_ready *r, const chk_io *io)
{
    pl_module *m = r->m;
    if (r->compiled == NULL || !PL_ABI_HAS_FN(pl_module_api, &m->api, compiled_times))
        return;
    char check[96];
    snprintf(check, sizeof check, "node times %s", r->p->label);
    chk_begin(c, check);
    size_t n = pl_graph_view_table.node_count(r->view);
    if (n != 1) { /* (the probes are one node each; T has room for the reads below) */
        chk_say(c, check, PL_CHECK_SKIP, "the probe's view has %zu nodes", n);
        return;
    }
    pl_node_time t[3], poison = {.min_ns = 7, .total_ns = 7, .runs = 7};
    t[0] = t[2] = poison;
    bool guard = true;
    pl_status *st = NULL;
    int got = m->api.compiled_times(m->ctx, r->compiled, PL_TIMES_READ, t, n);
    if (got != 0 || memcmp(&t[0], &poison, sizeof poison) != 0) {
        chk_say(c, check, PL_CHECK_FAIL, "PL_TIMES_READ before any PL_TIMES_START answered %d "
                                         "or wrote: it must answer 0 and leave out untouched",
                got);
        return;
    }
    if (m->api.compiled_times(m->ctx, r->compiled, PL_TIMES_START, NULL, 0) != 1) {
        chk_say(c, check, PL_CHECK_SKIP, "does not time this subgraph's nodes (START gave 0)");
        return;
    }
    for (int k = 0; k < 2 && st == NULL; k++)
        st = chk_run(c, r, io->in, io->out, 0, 0, &guard);
    if (st == NULL)
        got = m->api.compiled_times(m->ctx, r->compiled, PL_TIMES_READ, t, n);
    const char *bad = NULL;
    if (st != NULL)
        bad = pl_status_message(st);
    else if (got != 1)
        bad = "PL_TIMES_READ after PL_TIMES_START and two runs answered 0";
    else if (t[0].runs != 2 || t[0].min_ns > t[0].total_ns || 2 * t[0].min_ns > t[0].total_ns)
        bad = "after two timed runs the node's times are not two runs with the fastest at "
              "most half the total";
    t[1] = poison;
    if (bad == NULL &&
        (m->api.compiled_times(m->ctx, r->compiled, PL_TIMES_READ, &t[1], n + 1) != 0 ||
         memcmp(&t[1], &poison, sizeof poison) != 0 || memcmp(&t[2], &poison, sizeof poison) != 0))
        bad = "PL_TIMES_READ with a count other than the view's nodes was not refused, or "
              "wrote";
    if (bad == NULL && m->api.compiled_times(m->ctx, r->compiled, PL_TIMES_STOP, NULL, 0) != 1)
        bad = "PL_TIMES_STOP answered 0";
    if (bad == NULL)
        st = chk_run(c, r, io->in, io->out, 0, 0, &guard);
    if (bad == NULL && st != NULL)
        bad = pl_status_message(st);
    if (bad == NULL &&
        (m->api.compiled_times(m->ctx, r->compiled, PL_TIMES_READ, t, n) != 1 || t[0].runs != 2))
        bad = "a run after PL_TIMES_STOP was timed, or the times were lost";
    if (bad != NULL)
        chk_say(c, check, PL_CHECK_FAIL, "%s", bad);
    else
        chk_say(c, check, PL_CHECK_PASS, "2 timed runs: %.3f ms at best, %.3f in all; none "
                                         "after STOP",
                (double)t[0].min_ns / 1e6, (double)t[0].total_ns / 1e6);
    pl_status_free(st);
}

static void chk_export(chk *c, const chk_ready *r, const chk_ready *other, const chk_io *io)
{
    char check[96];
    snprintf(check, sizeof check, "export %s", r->p->label);
    chk_begin(c, check);
    chk_blob blob = {0};
    pl_status *st = chk_own(c, check, "export_compiled",
                            c->m->api.export_compiled(c->m->ctx, r->compiled, chk_blob_sink,
                                                      &blob));
    if (st == NULL && blob.oom)
        st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    if (st != NULL) {
        chk_say(c, check, PL_CHECK_FAIL, "export_compiled: %s", pl_status_message(st));
        pl_status_free(st);
        free(blob.b);
        return;
    }
    chk_ready back = *r;
    back.compiled = NULL;
    back.kernel = NULL;
    st = chk_own(c, check, "import_compiled",
                 c->m->api.import_compiled(c->m->ctx, r->device, r->view, blob.b, blob.n,
                                           &back.compiled));
    if (st == NULL && back.compiled == NULL)
        st = pl_status_create(PL_CODE_INTERNAL, "import_compiled returned nothing");
    float *got = st ? NULL : calloc(io->n_out + 1, sizeof(float));
    bool guard = true;
    if (st == NULL)
        st = got ? chk_run(c, &back, io->in, got, 0, 0, &guard)
                 : pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    long bad = st ? -1 : chk_compare(got, io->want, io->n_out);
    chk_unready(&back);
    free(got);
    pl_code code = PL_CODE_OK;
    if (st != NULL) {
        chk_say(c, check, PL_CHECK_FAIL, "its own %zu-byte blob, imported back: %s", blob.n,
                pl_status_message(st));
        pl_status_free(st);
    } else if (bad >= 0) {
        chk_say(c, check, PL_CHECK_FAIL,
                "its own %zu-byte blob, imported back, computes something else (element "
                "%ld)", blob.n, bad);
    } else if (!chk_refuses(c, r, r->view, blob.b, blob.n / 2, &code)) {
        chk_say(c, check, PL_CHECK_FAIL,
                "accepted its blob cut to %zu of %zu bytes: import must refuse a blob it "
                "did not write for this subgraph", blob.n / 2, blob.n);
    } else if (!chk_refuses(c, r, r->view, "", 0, &code)) {
        chk_say(c, check, PL_CHECK_FAIL, "accepted an empty blob");
    } else if (other != NULL && !chk_refuses(c, r, other->view, blob.b, blob.n, &code)) {
        chk_say(c, check, PL_CHECK_FAIL,
                "accepted the blob of '%s' for the subgraph of '%s': import must refuse a "
                "blob written for another subgraph (PL_CODE_INCOMPATIBLE)", r->p->label,
                other->p->label);
    } else if (other != NULL && code != PL_CODE_INCOMPATIBLE) {
        chk_say(c, check, PL_CHECK_FAIL,
                "refused another subgraph's blob with '%s': the code must be incompatible",
                pl_code_name(code));
    } else {
        chk_say(c, check, PL_CHECK_PASS,
                "%zu-byte blob imports back and computes the same; refuses it truncated, "
                "empty%s", blob.n, other ? " and for another subgraph" : "");
    }
    free(blob.b);
}

/* ---- the probes on the module -------------------------------------------- */

static void chk_probe_one(chk *c, chk_ready *r, const chk_ready *other)
{
    const char *check = r->p->label;
    chk_begin(c, check);
    chk_io io;
    if (!chk_io_make(r, 1u, &io)) {
        chk_say(c, check, PL_CHECK_FAIL, "out of memory");
        chk_io_free(&io);
        return;
    }
    /* The reference: cpu's result, else the module's own at offset 0. */
    bool guard = true, have_ref = false;
    if (c->ref != NULL) {
        chk_ready ref = *r;
        ref.kernel = NULL;
        ref.compiled = NULL;
        ref.workspace = 0;
        pl_status *st = chk_prepare(c, c->ref, 0, &ref);
        if (st == NULL)
            st = chk_run(c, &ref, io.in, io.want, 0, 0, &guard);
        have_ref = st == NULL;
        pl_status_free(st);
        chk_unready(&ref);
    }
    pl_status *st = chk_run(c, r, io.in, io.out, 0, 0, &guard);
    long bad = -1;
    if (st == NULL && !have_ref)
        memcpy(io.want, io.out, io.n_out * sizeof(float));
    if (st == NULL)
        bad = chk_compare(io.out, io.want, io.n_out);
    if (st != NULL) {
        chk_say(c, check, PL_CHECK_FAIL, "accepted, then the run failed: %s",
                pl_status_message(st));
    } else if (!guard) {
        chk_say(c, check, PL_CHECK_FAIL, "wrote past the end of its output");
    } else if (bad >= 0) {
        chk_say(c, check, PL_CHECK_FAIL,
                "wrong result: element %ld is %g, cpu gives %g (tolerance %g + %g x |value|)",
                bad, io.out[bad], io.want[bad], CHK_ATOL, CHK_RTOL);
    } else {
        memset(io.out, 0, io.n_out * sizeof(float));
        st = chk_run(c, r, io.in, io.out, CHK_OFFSET, 0, &guard);
        bad = st ? -1 : chk_compare(io.out, io.want, io.n_out);
        if (st != NULL)
            chk_say(c, check, PL_CHECK_FAIL, "with tensors at byte_offset %d: %s",
                    CHK_OFFSET, pl_status_message(st));
        else if (!guard || bad >= 0)
            chk_say(c, check, PL_CHECK_FAIL,
                    "with every tensor at byte_offset %d of its buffer (poison around it) "
                    "the result %s: data is the buffer's handle, byte_offset where the "
                    "tensor starts", CHK_OFFSET,
                    guard ? "is wrong" : "was written outside the output");
        else
            chk_say(c, check, PL_CHECK_PASS, "%s%s; same at byte_offset %d, poison intact",
                    r->compiled ? "compiled" : "kernel",
                    have_ref ? ", agrees with cpu" : "", CHK_OFFSET);
    }
    bool ok = st == NULL && guard && bad < 0;
    pl_status_free(st);
    if (ok)
        chk_concurrency(c, r);
    if (ok)
        chk_times(c, r, &io);
    if (ok && r->compiled != NULL && (r->m->api.capabilities & PL_CAP_EXPORT))
        chk_export(c, r, other, &io);
    chk_io_free(&io);
}

static void chk_kernels(chk *c)
{
    if (!(c->m->api.capabilities & (PL_CAP_IMPERATIVE | PL_CAP_SYMBOLIC))) {
        chk_say(c, "kernels", PL_CHECK_SKIP, "runs no nodes (a format module)");
        return;
    }
    chk_ready r[CHK_N_PROBES];
    memset(r, 0, sizeof r);
    size_t taken = 0, refused = 0;
    for (size_t i = 0; i < CHK_N_PROBES; i++) {
        r[i].p = &chk_probes[i];
        pl_status *st = chk_graph(c, r[i].p, &r[i].g);
        if (st == NULL)
            st = pl_graph_view_create(r[i].g, NULL, 0, &r[i].view);
        if (st != NULL) {
            chk_say(c, r[i].p->label, PL_CHECK_FAIL, "building the probe: %s",
                    pl_status_message(st));
            pl_status_free(st);
            continue;
        }
        chk_begin(c, r[i].p->label);
        st = chk_prepare(c, c->m, c->device, &r[i]);
        if (st == NULL) {
            taken++;
        } else if (pl_status_code(st) == PL_CODE_UNSUPPORTED) {
            refused++;
        } else {
            chk_say(c, r[i].p->label, PL_CHECK_FAIL, "%s", pl_status_message(st));
        }
        pl_status_free(st);
    }
    for (size_t i = 0; i < CHK_N_PROBES; i++) {
        if (r[i].kernel == NULL && r[i].compiled == NULL)
            continue;
        const chk_ready *other = NULL;
        for (size_t j = 1; j < CHK_N_PROBES && other == NULL; j++) {
            const chk_ready *o = &r[(i + j) % CHK_N_PROBES];
            if (o->compiled != NULL)
                other = o;
        }
        chk_probe_one(c, &r[i], other);
    }
    chk_say(c, "refusals", PL_CHECK_PASS,
            "took %zu of %zu probe ops; each of the %zu refused carried a reason", taken,
            CHK_N_PROBES, refused);
    for (size_t i = 0; i < CHK_N_PROBES; i++) {
        chk_unready(&r[i]);
        pl_graph_view_destroy(r[i].view);
        pl_graph_destroy(r[i].g);
    }
}

/* ---- the whole check ---------------------------------------------------------- */

/* The module of RT named NAME, loaded or without a device; NULL if none. */
static pl_module *chk_find(pl_runtime *rt, const char *name)
{
    long i = pl_runtime_find_module(rt, name);
    return i < 0 ? NULL : rt->modules[i];
}

static bool chk_same_file(const char *a, const char *b)
{
    char *ra = realpath(a, NULL), *rb = realpath(b, NULL);
    bool same = ra && rb && strcmp(ra, rb) == 0;
    free(ra);
    free(rb);
    return same;
}

pl_status *pl_check_module(pl_runtime *rt, const char *path, const pl_check_options *o,
                           pl_check_sink sink, void *user, size_t *out_failures,
                           bool *out_no_device)
{
    if (out_failures != NULL)
        *out_failures = 0;
    if (out_no_device != NULL)
        *out_no_device = false;
    if (rt == NULL || path == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "pl_check_module: NULL argument");
    chk c = {.rt = rt, .device = 0, .sink = sink, .user = user};
    if (o != NULL && o->struct_size >= offsetof(pl_check_options, iterations) + sizeof(int)) {
        c.device = o->device < 0 ? 0 : o->device;
        c.threads = o->threads;
        c.iterations = o->iterations;
    }
    if (c.threads <= 0)
        c.threads = (rt->threads > 0 ? rt->threads : 1) + 1;
    if (c.threads > CHK_MAX_THREADS)
        c.threads = CHK_MAX_THREADS;
    if (c.iterations <= 0)
        c.iterations = 40;

    /* The identity note, without running anything of the file. */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return pl_status_create(PL_CODE_IO_ERROR, "%s: %s", path, strerror(errno));
    pl_identity_desc note;
    uint64_t cpu = 0;
    pl_status *st = pl_note_read(fd, &note, &cpu);
    close(fd);
    if (st != NULL) {
        chk_say(&c, "note", PL_CHECK_FAIL, "%s", pl_status_message(st));
        pl_status_free(st);
        if (out_failures != NULL)
            *out_failures = c.failures;
        return NULL;
    }
    chk_say(&c, "note", PL_CHECK_PASS, "module %s %s, ABI %u.%u", note.name, note.version,
            note.abi_major, note.abi_minor);

    pl_module *m = chk_find(rt, note.name);
    if (m != NULL && !chk_same_file(m->path, path))
        return pl_status_create(PL_CODE_FAILED_PRECONDITION,
                                "%s: a module named %s is loaded already, from %s: check it "
                                "with a backend.ini that does not load that one "
                                "([%s] enabled = no)", path, note.name, m->path, note.name);
    if (m == NULL) {
        chk_begin(&c, "load");
        size_t index = 0;
        st = pl_runtime_load_module(rt, path, &index);
        if (st != NULL && pl_status_code(st) != PL_CODE_NO_DEVICE) {
            chk_say(&c, "load", PL_CHECK_FAIL, "%s", pl_status_message(st));
            pl_status_free(st);
            if (out_failures != NULL)
                *out_failures = c.failures;
            return NULL;
        }
        pl_status_free(st);
        m = rt->modules[index];
    }
    c.m = m;
    chk_say(&c, "load", PL_CHECK_PASS, "%s: %s%s%s", m->path,
            pl_module_status_name(m->status), m->reason[0] ? ": " : "", m->reason);
    chk_entry(&c);
    chk_table(&c);
    if (m->status != PL_MODULE_LOADED) {
        chk_say(&c, "devices", PL_CHECK_SKIP, "no device here: %s", m->reason);
        if (out_no_device != NULL)
            *out_no_device = true;
        if (out_failures != NULL)
            *out_failures = c.failures;
        return NULL;
    }
    chk_configure(&c);
    bool runs_nodes = (m->api.capabilities & (PL_CAP_IMPERATIVE | PL_CAP_SYMBOLIC)) != 0;
    if (runs_nodes && c.device >= m->device_count)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "%s: device %d asked for, the module has %d", path, c.device,
                                m->device_count);
    c.host_memory = (m->api.capabilities & PL_CAP_HOST_MEMORY) != 0;
    c.device_type = c.host_memory ? PL_DEVICE_CPU : PL_DEVICE_EXT;
    if (runs_nodes)
        chk_devices(&c);
    chk_memory(&c);
    pl_module *cpu_m = chk_find(rt, "cpu");
    c.ref = cpu_m != m && cpu_m != NULL && cpu_m->status == PL_MODULE_LOADED ? cpu_m : NULL;
    chk_kernels(&c);
    if (out_failures != NULL)
        *out_failures = c.failures;
    return NULL;
}
