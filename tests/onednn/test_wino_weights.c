/* test_wino_weights.c — weight layouts the onednn module makes itself,
 * against oneDNN's own reorders: Winograd weights
 * (modules/onednn/onednn_wino_weights.c, case wino_weights) and int8 product
 * weights with a zero point's compensation (onednn_zp_weights.c, case
 * zp_weights).
 *
 * wino_weights: for convolutions of several shapes (channels that fill their blocks and
 * ones that do not, spatial sizes that make oneDNN pick its F(4x4, 3x3)
 * kernel and its F(2x2, 3x3) one), asks oneDNN which Winograd weight
 * layout its primitive wants, lays random OIHW weights out with oneDNN's
 * reorder and with odnn_wino_weights, and compares every float (padding
 * included). It fails when an offset, a block or the transform differs;
 * each layout format must be met at least once where the CPU has the
 * kernels, else the test would pass by checking nothing. Exit 77 (skip)
 * where oneDNN has no Winograd kernel on this CPU (below AVX-512).
 *
 * zp_weights: for K x N products of several shapes (columns that fill the layout's
 * blocks and ones that do not, more than the module's 512-column pass),
 * asks oneDNN which weights layout its u8 x s8 matmul with a run-time
 * source zero point wants, lays random weights out with oneDNN's reorder and
 * with odnn_zp_weights into buffers filled with different bytes, and
 * compares the weights and the compensation (padding included); oneDNN's
 * reorder must leave the bytes past them as they were, else the module's
 * idea of where the compensation ends is wrong. Layouts the module does not
 * make must be refused. Exit 77 (skip) where no shape gets a compensated
 * layout on this CPU. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "onednn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static uint32_t rng = 12345u;
static float frand(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* The weights layout oneDNN's Winograd convolution picks for OC x IC 3x3
 * filters on an H x W map, or format_kind undef when it has none. */
static dnnl_memory_desc_t wino_layout(dnnl_engine_t eng, int64_t oc, int64_t ic, int64_t h,
                                      int64_t w)
{
    dnnl_memory_desc_t src, wei, dst, out;
    memset(&out, 0, sizeof out);
    dnnl_dims_t sd = {1, ic, h, w}, wd = {oc, ic, 3, 3}, dd = {1, oc, h, w};
    dnnl_memory_desc_init_by_tag(&src, 4, sd, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&wei, 4, wd, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&dst, 4, dd, dnnl_f32, dnnl_format_tag_any);
    dnnl_convolution_desc_t cd;
    dnnl_dims_t strides = {1, 1}, pad = {1, 1};
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_winograd,
                                           &src, &wei, NULL, &dst, strides, pad,
                                           pad) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &cd, NULL, eng, NULL) != dnnl_success)
        return out;
    out = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_primitive_desc_destroy(pd);
    return out;
}

/* Checks one shape: 1 + the layout's wino_format when oneDNN has a
 * Winograd layout for it (failures counted), 0 when it has none. */
static int check_shape(dnnl_engine_t eng, dnnl_stream_t stream, int64_t oc, int64_t ic, int64_t h,
                       int64_t w, int *seen)
{
    dnnl_memory_desc_t md = wino_layout(eng, oc, ic, h, w);
    if (md.format_kind != dnnl_format_kind_wino)
        return 0;
    const dnnl_wino_desc_t *wd = &md.format_desc.wino_desc;
    seen[wd->wino_format] = 1;
    dnnl_memory_desc_t plain;
    dnnl_dims_t dims = {oc, ic, 3, 3};
    dnnl_memory_desc_init_by_tag(&plain, 4, dims, dnnl_f32, dnnl_oihw);
    size_t n = (size_t)(oc * ic * 9), bytes = dnnl_memory_desc_get_size(&md);
    float *x = malloc(n * sizeof *x), *ref = malloc(bytes), *got = malloc(bytes);
    if (x == NULL || ref == NULL || got == NULL) {
        CHECK(0, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        x[i] = frand();
    memset(ref, 0x5a, bytes);
    memset(got, 0xa5, bytes); /* a float the layout leaves unwritten differs */
    dnnl_memory_t msrc, mdst;
    dnnl_primitive_desc_t rpd;
    dnnl_primitive_t r;
    dnnl_memory_create(&msrc, &plain, eng, x);
    dnnl_memory_create(&mdst, &md, eng, ref);
    CHECK(dnnl_reorder_primitive_desc_create(&rpd, &plain, eng, &md, eng, NULL) == dnnl_success,
          "no reorder");
    dnnl_primitive_create(&r, rpd);
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, msrc}, {DNNL_ARG_DST, mdst}};
    double t0 = now_ms();
    dnnl_primitive_execute(r, stream, 2, args);
    dnnl_stream_wait(stream);
    double t1 = now_ms();
    int made = odnn_wino_weights(&plain, x, &md, got);
    double t2 = now_ms();
    CHECK(made == 0, "%lldx%lld at %lldx%lld: format %d not made", (long long)oc, (long long)ic,
          (long long)h, (long long)w, (int)wd->wino_format);
    double worst = 0;
    size_t at = 0, nf = bytes / sizeof(float);
    for (size_t i = 0; i < nf; i++) {
        double e = fabs((double)got[i] - (double)ref[i]) / (1.0 + fabs((double)ref[i]));
        if (!(e <= worst)) {
            worst = isnan(e) ? INFINITY : e;
            at = i;
        }
    }
    CHECK(worst <= 1e-6,
          "%lldx%lld at %lldx%lld, format %d (alpha %d, blocks ic %d oc %d, ic2 "
          "%d, "
          "oc2 %d): float %zu is %.9g, oneDNN's %.9g",
          (long long)oc, (long long)ic, (long long)h, (long long)w, (int)wd->wino_format, wd->alpha,
          wd->ic_block, wd->oc_block, wd->ic2_block, wd->oc2_block, at, got[at], ref[at]);
    printf("%4lld x %4lld at %3lldx%-3lld format %d alpha %d: %zu floats, worst %.2g; oneDNN's "
           "reorder %.2f ms, the module's %.2f ms\n",
           (long long)oc, (long long)ic, (long long)h, (long long)w, (int)wd->wino_format,
           wd->alpha, nf, worst, t1 - t0, t2 - t1);
    dnnl_primitive_destroy(r);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(msrc);
    dnnl_memory_destroy(mdst);
    free(x);
    free(ref);
    free(got);
    return 1 + (int)wd->wino_format;
}

static int8_t irand(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (int8_t)(rng >> 24);
}

/* The weights layout oneDNN's matmul of M x K u8 by K x N s8 with a
 * run-time source zero point picks (format_kind undef when it has none). */
static dnnl_memory_desc_t zp_layout(dnnl_engine_t eng, int64_t k, int64_t n)
{
    dnnl_memory_desc_t a, w, y, out;
    memset(&out, 0, sizeof out);
    dnnl_dims_t ad = {16, k}, wd = {k, n}, yd = {16, n};
    dnnl_memory_desc_init_by_strides(&a, 2, ad, dnnl_u8, NULL);
    dnnl_memory_desc_init_by_tag(&w, 2, wd, dnnl_s8, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_strides(&y, 2, yd, dnnl_f32, NULL);
    dnnl_matmul_desc_t md;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    int32_t zp = DNNL_RUNTIME_S32_VAL;
    if (dnnl_matmul_desc_init(&md, &a, &w, NULL, &y) == dnnl_success &&
        dnnl_primitive_attr_create(&attr) == dnnl_success &&
        dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &zp) == dnnl_success &&
        dnnl_primitive_desc_create(&pd, &md, attr, eng, NULL) == dnnl_success)
        out = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return out;
}

/* 1 when K x N got a layout the module made and checked, 0 when oneDNN
 * picked one without a compensation. */
static int zp_check_shape(dnnl_engine_t eng, dnnl_stream_t stream, int64_t k, int64_t n)
{
    dnnl_memory_desc_t md = zp_layout(eng, k, n), plain;
    if (md.format_kind != dnnl_blocked ||
        md.extra.flags != dnnl_memory_extra_flag_compensation_conv_asymmetric_src) {
        printf("%5lld x %5lld: no compensated layout (flags %u)\n", (long long)k, (long long)n,
               (unsigned)md.extra.flags);
        return 0;
    }
    dnnl_dims_t dims = {k, n};
    dnnl_memory_desc_init_by_strides(&plain, 2, dims, dnnl_s8, NULL);
    dnnl_memory_desc_t body = md;
    body.extra.flags = 0;
    body.extra.asymm_compensation_mask = 0;
    size_t bytes = dnnl_memory_desc_get_size(&md);
    size_t made = dnnl_memory_desc_get_size(&body) + (size_t)md.padded_dims[1] * sizeof(int32_t);
    int8_t *w = malloc((size_t)(k * n));
    unsigned char *ref = malloc(bytes), *got = malloc(bytes);
    if (w == NULL || ref == NULL || got == NULL) {
        CHECK(0, "out of memory");
        return 0;
    }
    for (int64_t i = 0; i < k * n; i++)
        w[i] = irand();
    w[0] = -128; /* the extremes sum too */
    w[k * n - 1] = 127;
    memset(ref, 0xab, bytes);
    memset(got, 0x5a, bytes);
    dnnl_memory_t msrc, mdst;
    dnnl_primitive_desc_t rpd;
    dnnl_primitive_t r;
    double t0 = now_ms();
    dnnl_memory_create(&msrc, &plain, eng, w);
    dnnl_memory_create(&mdst, &md, eng, ref);
    CHECK(dnnl_reorder_primitive_desc_create(&rpd, &plain, eng, &md, eng, NULL) == dnnl_success,
          "no reorder");
    dnnl_primitive_create(&r, rpd);
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, msrc}, {DNNL_ARG_DST, mdst}};
    dnnl_primitive_execute(r, stream, 2, args);
    dnnl_stream_wait(stream);
    double t1 = now_ms();
    CHECK(odnn_zp_weights(eng, &plain, w, &md, got) == 0, "%lldx%lld: the layout was refused",
          (long long)k, (long long)n);
    double t2 = now_ms();
    CHECK(made <= bytes, "%lldx%lld: %zu bytes made of %zu", (long long)k, (long long)n, made,
          bytes);
    size_t at = 0;
    while (at < made && ref[at] == got[at])
        at++;
    CHECK(at == made, "%lldx%lld: byte %zu of %zu (weights end at %zu) is %d, oneDNN's %d",
          (long long)k, (long long)n, at, made, dnnl_memory_desc_get_size(&body), got[at],
          ref[at]);
    size_t past = made;
    while (past < bytes && ref[past] == 0xab)
        past++;
    CHECK(past == bytes, "%lldx%lld: oneDNN wrote byte %zu, past the compensation", (long long)k,
          (long long)n, past);
    printf("%5lld x %5lld: %zu bytes checked; oneDNN's reorder %.2f ms, the module's %.2f ms\n",
           (long long)k, (long long)n, made, t1 - t0, t2 - t1);
    dnnl_primitive_destroy(r);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(msrc);
    dnnl_memory_destroy(mdst);
    free(w);
    free(ref);
    free(got);
    return 1;
}

/* Case zp_weights. */
static int zp_weights(dnnl_engine_t eng, dnnl_stream_t stream)
{
    static const int64_t shapes[][2] = {{768, 2304}, {3072, 768}, {768, 100}, {70, 50},
                                        {64, 64},    {1, 1},      {5, 1300}, {300, 513}};
    int made = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        made += zp_check_shape(eng, stream, shapes[i][0], shapes[i][1]);
    /* what the module does not make is left to oneDNN */
    dnnl_memory_desc_t md = zp_layout(eng, 64, 96), cm, wide;
    if (md.format_kind == dnnl_blocked && md.extra.flags != 0) {
        int8_t dummy[4] = {0};
        dnnl_dims_t dims = {64, 96};
        dnnl_memory_desc_init_by_tag(&cm, 2, dims, dnnl_s8, dnnl_ba);
        CHECK(odnn_zp_weights(eng, &cm, dummy, &md, dummy) != 0,
              "a column-major source was taken");
        dnnl_memory_desc_init_by_strides(&wide, 2, dims, dnnl_s8, NULL);
        wide.format_desc.blocking.strides[0] = 128;
        CHECK(odnn_zp_weights(eng, &wide, dummy, &md, dummy) != 0,
              "a source with padded rows was taken");
        dnnl_memory_desc_t other = md;
        other.extra.flags |= dnnl_memory_extra_flag_compensation_conv_s8s8;
        dnnl_memory_desc_init_by_strides(&wide, 2, dims, dnnl_s8, NULL);
        CHECK(odnn_zp_weights(eng, &wide, dummy, &other, dummy) != 0,
              "an s8 x s8 compensation was taken");
    }
    dnnl_stream_destroy(stream);
    dnnl_engine_destroy(eng);
    if (made == 0) {
        printf("oneDNN picks no compensated int8 weights layout on this CPU: skipped\n");
        return 77;
    }
    printf("%d layouts checked, %d failures\n", made, failures);
    return failures ? 1 : 0;
}

/* Case wino_weights. */
static int wino_weights(dnnl_engine_t eng, dnnl_stream_t stream)
{
    static const int64_t shapes[][4] = {{64, 64, 56, 56},   {256, 256, 40, 40}, {256, 256, 20, 20},
                                        {819, 256, 20, 20}, {128, 128, 28, 28}, {512, 512, 7, 7},
                                        {48, 40, 30, 30},   {36, 16, 12, 12},   {64, 64, 8, 8},
                                        {256, 256, 5, 5},   {32, 24, 112, 112}, {100, 72, 17, 23}};
    int seen[8] = {0}, made = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        made += check_shape(eng, stream, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3],
                            seen) > 0;
    /* a source that is not plain OIHW 3x3 is left to oneDNN */
    dnnl_memory_desc_t md = wino_layout(eng, 64, 64, 28, 28), hwio;
    if (md.format_kind == dnnl_format_kind_wino) {
        dnnl_dims_t dims = {64, 64, 3, 3};
        dnnl_memory_desc_init_by_tag(&hwio, 4, dims, dnnl_f32, dnnl_hwio);
        float dummy = 0;
        CHECK(odnn_wino_weights(&hwio, &dummy, &md, &dummy) != 0, "an HWIO source was taken");
    }
    dnnl_stream_destroy(stream);
    dnnl_engine_destroy(eng);
    if (made == 0) {
        printf("oneDNN has no Winograd convolution on this CPU: skipped\n");
        return 77;
    }
    CHECK(seen[dnnl_wino_wei_OBaaIBOIio], "no shape got oneDNN's F(4x4, 3x3) layout");
    CHECK(seen[dnnl_wino_wei_aaOio] || seen[dnnl_wino_wei_aaOBiOo],
          "no shape got an F(2x2, 3x3) layout");
    printf("%d layouts checked, %d failures\n", made, failures);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "wino_weights"; /* the case (plinth_add_cases) */
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    if (dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&stream, eng, dnnl_stream_default_flags) != dnnl_success) {
        fprintf(stderr, "no oneDNN CPU engine\n");
        return 1;
    }
    if (strcmp(name, "zp_weights") == 0)
        return zp_weights(eng, stream);
    if (strcmp(name, "wino_weights") == 0)
        return wino_weights(eng, stream);
    fprintf(stderr, "unknown case %s\n", name);
    return 1;
}
