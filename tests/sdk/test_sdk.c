/* test_sdk.c — what sdk/ hands every module, tested on its own:
 * PL_MODULE_DEFINE_ENTRY as each staged module compiled it (entry_<module>:
 * the module's exported entry point called directly, with good and bad
 * arguments, hosts of another major and a host table shorter than ABI
 * 1.0's), plinth/auto_pad.h (parsing, and SAME pads against the window
 * arithmetic they must satisfy) and plinth/graph_hash.h (streamed against
 * one-shot hashing, and subgraph hashes over a small fake graph view: what
 * must and must not change them, and running out of memory).
 *
 * Usage: test_sdk <case> <stage dir>. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <plinth/auto_pad.h>
#include <plinth/graph_hash.h>
#include <plinth/module.h>
#include <plinth/work_pool.h>

#include "../harness.h"

/* ---- the entry point ------------------------------------------------------- */

/* Calls the entry point of the staged module NAME as the core would, with a
 * host table that the module only stores. */
static void check_entry(const char *name)
{
    char file[512];
    snprintf(file, sizeof file, "%s/libplinth_%s.so", th_arg(0), name);
    void *lib = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        th_skip("%s: %s", file, dlerror());
    pl_module_entry_fn entry;
    *(void **)&entry = dlsym(lib, PL_MODULE_ENTRY_SYMBOL);
    TH_CHECK(entry != NULL, "%s has no %s", file, PL_MODULE_ENTRY_SYMBOL);

    static pl_host_api host;
    host.header = (pl_abi_header)PL_ABI_HEADER_INIT(pl_host_api);
    const pl_module_api *api = (const pl_module_api *)&host; /* must be cleared */
    uint32_t major = PL_ABI_MAJOR;

    TH_CHECK(entry(NULL, &major, &api) == PL_CODE_INVALID_ARGUMENT, "NULL host accepted");
    TH_CHECK(api == NULL, "*out_api not cleared on a refusal");
    TH_CHECK(entry(&host, NULL, &api) == PL_CODE_INVALID_ARGUMENT, "NULL major accepted");
    TH_CHECK(entry(&host, &major, NULL) == PL_CODE_INVALID_ARGUMENT, "NULL out_api accepted");

    /* Another major, from the caller or in the host table: the module
     * answers its own so that the core can name both. */
    major = PL_ABI_MAJOR + 1;
    api = (const pl_module_api *)&host;
    TH_CHECK(entry(&host, &major, &api) == PL_CODE_INCOMPATIBLE, "major %u accepted",
             PL_ABI_MAJOR + 1);
    TH_CHECK(major == PL_ABI_MAJOR && api == NULL, "answered major %u", major);
    host.header.abi_major = PL_ABI_MAJOR + 1;
    TH_CHECK(entry(&host, &major, &api) == PL_CODE_INCOMPATIBLE, "host of major %u accepted",
             PL_ABI_MAJOR + 1);
    TH_CHECK(major == PL_ABI_MAJOR, "answered major %u", major);
    host.header.abi_major = PL_ABI_MAJOR;

    /* A host table that ends before ABI 1.0's does. */
    host.header.struct_size = (uint32_t)(PL_HOST_API_SIZE_1_0 - sizeof(void (*)(void)));
    TH_CHECK(entry(&host, &major, &api) == PL_CODE_INCOMPATIBLE,
             "host table of %u bytes accepted", host.header.struct_size);
    host.header.struct_size = (uint32_t)sizeof host;

    TH_CHECK(entry(&host, &major, &api) == PL_CODE_OK, "a good call refused");
    TH_CHECK(major == PL_ABI_MAJOR, "major changed to %u", major);
    TH_CHECK(api != NULL && api->name != NULL && strcmp(api->name, name) == 0,
             "table named '%s'", api != NULL && api->name != NULL ? api->name : "(null)");
    TH_CHECK(api->header.abi_major == PL_ABI_MAJOR &&
                 api->header.struct_size >= PL_MODULE_API_SIZE_1_0,
             "table of %u bytes, major %u", api->header.struct_size, api->header.abi_major);
    dlclose(lib);
}

static void case_entry_cpu(void) { check_entry("cpu"); }
static void case_entry_onnx(void) { check_entry("onnx"); }
static void case_entry_example_acc(void) { check_entry("example_acc"); }
static void case_entry_onednn(void) { check_entry("onednn"); }
static void case_entry_cuda(void) { check_entry("cuda"); }

/* ---- auto_pad -------------------------------------------------------------- */

static void case_auto_pad_parse(void)
{
    static const struct {
        const char *s;
        pl_auto_pad want;
    } cases[] = {
        {"", PL_AUTO_PAD_NOTSET},          {"NOTSET", PL_AUTO_PAD_NOTSET},
        {"SAME_UPPER", PL_AUTO_PAD_SAME_UPPER}, {"SAME_LOWER", PL_AUTO_PAD_SAME_LOWER},
        {"VALID", PL_AUTO_PAD_VALID},      {"SAME", PL_AUTO_PAD_INVALID},
        {"same_upper", PL_AUTO_PAD_INVALID}, {"VALID ", PL_AUTO_PAD_INVALID},
        {"SAME_UPPERX", PL_AUTO_PAD_INVALID}, {"NOTSE", PL_AUTO_PAD_INVALID},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pl_auto_pad got = pl_auto_pad_parse_cstr(cases[i].s);
        TH_CHECK(got == cases[i].want, "'%s' parsed as %d, not %d", cases[i].s, (int)got,
                 (int)cases[i].want);
    }
    /* Only the first LEN bytes count: an attribute string is not
     * NUL-terminated. */
    TH_CHECK(pl_auto_pad_parse("VALIDATE", 5) == PL_AUTO_PAD_VALID, "prefix of 5 bytes");
    TH_CHECK(pl_auto_pad_parse(NULL, 0) == PL_AUTO_PAD_NOTSET, "NULL, 0");
    TH_CHECK(pl_auto_pad_parse_cstr(NULL) == PL_AUTO_PAD_NOTSET, "NULL");
    TH_CHECK(pl_auto_pad_is_same(PL_AUTO_PAD_SAME_LOWER) &&
                 !pl_auto_pad_is_same(PL_AUTO_PAD_VALID),
             "is_same");
}

/* Every small geometry: SAME gives ceil(in / stride) outputs, and its pads
 * are the least that make the windows fit, split by the mode. */
static void case_auto_pad_same(void)
{
    for (int mode = PL_AUTO_PAD_SAME_UPPER; mode <= PL_AUTO_PAD_SAME_LOWER; mode++)
        for (int64_t in = 1; in <= 24; in++)
            for (int64_t s = 1; s <= 5; s++)
                for (int64_t ext = 1; ext <= 9; ext++) {
                    int64_t b = -1, e = -1;
                    int64_t out = pl_auto_pad_same((pl_auto_pad)mode, in, s, ext, &b, &e);
                    int64_t want_total = (out - 1) * s + ext - in;
                    want_total = want_total > 0 ? want_total : 0;
                    TH_CHECK(out == (in + s - 1) / s, "in %lld stride %lld: %lld outputs",
                             (long long)in, (long long)s, (long long)out);
                    TH_CHECK(b >= 0 && e >= 0 && b + e == want_total,
                             "in %lld stride %lld extent %lld: pads %lld+%lld, want %lld",
                             (long long)in, (long long)s, (long long)ext, (long long)b,
                             (long long)e, (long long)want_total);
                    TH_CHECK(mode == PL_AUTO_PAD_SAME_UPPER ? e - b == want_total % 2
                                                            : b - e == want_total % 2,
                             "mode %d split %lld as %lld+%lld", mode, (long long)want_total,
                             (long long)b, (long long)e);
                    TH_CHECK((in + b + e - ext) / s + 1 >= out,
                             "the pads leave fewer than %lld windows", (long long)out);
                }
    int64_t b, e;
    pl_auto_pad_split(PL_AUTO_PAD_NOTSET, 5, &b, &e);
    TH_CHECK(b == 3 && e == 2, "NOTSET split 5 as %lld+%lld", (long long)b, (long long)e);
}

/* ---- hashing --------------------------------------------------------------- */

static uint64_t tx_seed = 0x9e3779b97f4a7c15ull;
static uint32_t tx_random(void)
{
    tx_seed = tx_seed * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(tx_seed >> 33);
}

static void case_hash_stream(void)
{
    unsigned char bytes[1003];
    for (size_t i = 0; i < sizeof bytes; i++)
        bytes[i] = (unsigned char)tx_random();
    for (size_t n = 0; n <= sizeof bytes; n += n < 40 ? 1 : 97) {
        uint64_t whole = PL_HASH_SEED;
        pl_hash_bytes(&whole, bytes, n);
        for (int trial = 0; trial < 20; trial++) {
            pl_hash_stream s;
            pl_hash_stream_init(&s);
            size_t at = 0;
            while (at < n) {
                size_t piece = tx_random() % 13;
                if (piece > n - at)
                    piece = n - at;
                pl_hash_stream_add(&s, bytes + at, piece);
                at += piece;
            }
            uint64_t streamed = pl_hash_stream_end(&s);
            TH_CHECK(streamed == whole, "%zu bytes in pieces hash %016llx, whole %016llx", n,
                     (unsigned long long)streamed, (unsigned long long)whole);
        }
        if (n > 0) {
            uint64_t flipped = PL_HASH_SEED;
            bytes[n / 2] ^= 1;
            pl_hash_bytes(&flipped, bytes, n);
            bytes[n / 2] ^= 1;
            TH_CHECK(flipped != whole, "a flipped bit of %zu bytes hashes the same", n);
        }
    }
}

/* A fake graph view: two nodes, Y = Gemm(X, W) and Z = Relu(Y), with W a
 * constant; tensor ids are BASE + 0..3, so two views may number them
 * differently. */
struct pl_graph_view {
    int64_t base;
    int64_t alpha_bits;  /* Gemm's alpha, as an int attribute here */
    float w[4];
};

static int64_t tv_id(const pl_graph_view *v, int i) { return v->base + i; }
static size_t tv_node_count(const pl_graph_view *v) { (void)v; return 2; }
static const char *tv_node_op(const pl_graph_view *v, size_t n)
{
    (void)v;
    return n == 0 ? "Gemm" : "Relu";
}
static const char *tv_node_domain(const pl_graph_view *v, size_t n) { (void)v, (void)n; return ""; }
static int64_t tv_node_opset(const pl_graph_view *v, size_t n) { (void)v, (void)n; return 13; }
static size_t tv_node_input_count(const pl_graph_view *v, size_t n)
{
    (void)v;
    return n == 0 ? 2 : 1;
}
static size_t tv_node_output_count(const pl_graph_view *v, size_t n) { (void)v, (void)n; return 1; }
static int64_t tv_node_input(const pl_graph_view *v, size_t n, size_t i)
{
    return n == 0 ? tv_id(v, (int)i) : tv_id(v, 2); /* X W ; Y */
}
static int64_t tv_node_output(const pl_graph_view *v, size_t n, size_t i)
{
    (void)i;
    return tv_id(v, n == 0 ? 2 : 3);
}
static pl_graph_attr_kind tv_attr_kind(const pl_graph_view *v, size_t n, const char *name)
{
    (void)v;
    return n == 0 && strcmp(name, "alpha") == 0 ? PL_GRAPH_ATTR_INT : PL_GRAPH_ATTR_NONE;
}
static int tv_attr_int(const pl_graph_view *v, size_t n, const char *name, int64_t *out)
{
    if (n != 0 || strcmp(name, "alpha") != 0)
        return 0;
    *out = v->alpha_bits;
    return 1;
}
static int tv_tensor_type(const pl_graph_view *v, int64_t t, pl_dtype *dt, int32_t *ndim,
                          const int64_t **dims)
{
    static const int64_t shape[2] = {2, 2};
    if (t < v->base || t > v->base + 3)
        return 0;
    *dt = PL_DTYPE_F32;
    *ndim = 2;
    *dims = shape;
    return 1;
}
static int tv_tensor_constant(const pl_graph_view *v, int64_t t, const void **data,
                              size_t *bytes)
{
    if (t != tv_id(v, 1))
        return 0;
    *data = v->w;
    *bytes = sizeof v->w;
    return 1;
}
static size_t tv_one(const pl_graph_view *v) { (void)v; return 1; }
static int64_t tv_input(const pl_graph_view *v, size_t i) { (void)i; return tv_id(v, 0); }
static int64_t tv_output(const pl_graph_view *v, size_t i) { (void)i; return tv_id(v, 3); }

static int tv_fail_alloc;
static void *tv_alloc(pl_host_ctx *ctx, size_t bytes, size_t alignment)
{
    (void)ctx, (void)alignment;
    return tv_fail_alloc ? NULL : malloc(bytes);
}
static void tv_free(pl_host_ctx *ctx, void *p)
{
    (void)ctx;
    free(p);
}

static size_t tv_tensor_count(const pl_graph_view *v) { return (size_t)v->base + 4; }

/* With COUNTED, the table says how many tensors there are, and the hash
 * maps them to ordinals through an index; without, it scans: the same
 * hash either way. */
static uint64_t tv_hash_with(const pl_graph_view *v, const char *salt, int counted)
{
    static pl_graph_api g;
    static pl_host_api host;
    g.header = (pl_abi_header)PL_ABI_HEADER_INIT(pl_graph_api);
    g.node_count = tv_node_count;
    g.node_op = tv_node_op;
    g.node_domain = tv_node_domain;
    g.node_opset = tv_node_opset;
    g.node_input_count = tv_node_input_count;
    g.node_output_count = tv_node_output_count;
    g.node_input = tv_node_input;
    g.node_output = tv_node_output;
    g.attr_kind = tv_attr_kind;
    g.attr_int = tv_attr_int;
    g.tensor_type = tv_tensor_type;
    g.tensor_constant = tv_tensor_constant;
    g.input_count = tv_one;
    g.input = tv_input;
    g.output_count = tv_one;
    g.output = tv_output;
    g.tensor_count = counted ? tv_tensor_count : NULL;
    host.header = (pl_abi_header)PL_ABI_HEADER_INIT(pl_host_api);
    host.graph = &g;
    host.host_alloc = tv_alloc;
    host.host_free = tv_free;
    static const char *const attrs[] = {"alpha", "beta"};
    uint64_t h = 0;
    TH_CHECK(pl_hash_view(&host, NULL, v, salt, attrs, 2, &h) == 1, "pl_hash_view failed");
    return h;
}

static uint64_t tv_hash(const pl_graph_view *v, const char *salt)
{
    uint64_t h = tv_hash_with(v, salt, 1);
    TH_CHECK(tv_hash_with(v, salt, 0) == h, "the ordinal index and the scan hash differently");
    return h;
}

static void case_hash_view(void)
{
    pl_graph_view a = {.base = 0, .alpha_bits = 1, .w = {1, 2, 3, 4}};
    pl_graph_view b = a;
    b.base = 40; /* the same subgraph, numbered otherwise in another graph */
    uint64_t ha = tv_hash(&a, "test 1");
    TH_CHECK(tv_hash(&b, "test 1") == ha, "renumbered tensors change the hash");
    TH_CHECK(tv_hash(&a, "test 2") != ha, "the salt does not count");
    b = a;
    b.alpha_bits = 2;
    TH_CHECK(tv_hash(&b, "test 1") != ha, "an attribute value does not count");
    b = a;
    b.w[3] = 5;
    TH_CHECK(tv_hash(&b, "test 1") != ha, "a constant's bytes do not count");

    tv_fail_alloc = 1;
    uint64_t h = 42;
    static pl_host_api host;
    host.header = (pl_abi_header)PL_ABI_HEADER_INIT(pl_host_api);
    host.host_alloc = tv_alloc;
    host.host_free = tv_free;
    pl_graph_api g = {.header = PL_ABI_HEADER_INIT(pl_graph_api),
                      .node_count = tv_node_count,
                      .node_input_count = tv_node_input_count,
                      .node_output_count = tv_node_output_count,
                      .input_count = tv_one,
                      .output_count = tv_one};
    host.graph = &g;
    TH_CHECK(pl_hash_view(&host, NULL, &a, "test 1", NULL, 0, &h) == 0 && h == 42,
             "out of memory: not reported, or the hash written");
    tv_fail_alloc = 0;
}

/* plinth/work_pool.h: runs one after another settle on one buffer of the
 * largest need; runs in flight at once never share one; every buffer
 * allocated is freed once (counted by the pool's own functions). */
struct wp_count {
    int live, made;
};

static void *wp_alloc(void *ctx, size_t bytes)
{
    struct wp_count *c = ctx;
    c->live++, c->made++;
    return malloc(bytes);
}

static void wp_release(void *ctx, void *p)
{
    ((struct wp_count *)ctx)->live--;
    free(p);
}

static void case_work_pool(void)
{
    struct wp_count c = {0, 0};
    pl_work_pool wp;
    pl_work_pool_init(&wp, wp_alloc, wp_release, &c);
    /* one after another: 10, 50, 20, 50, 10 bytes -> two made (10, then 50 in its place) */
    static const size_t seq[] = {10, 50, 20, 50, 10};
    void *last = NULL;
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
        pl_work_buf w = pl_work_pool_take(&wp, seq[i]);
        TH_CHECK(w.p != NULL && w.bytes >= seq[i], "take %zu gave %zu bytes", seq[i], w.bytes);
        memset(w.p, 0x5a, seq[i]);
        if (i >= 2)
            TH_CHECK(w.p == last, "run %zu got another buffer than run %zu", i, i - 1);
        last = w.p;
        pl_work_pool_give(&wp, w);
    }
    TH_CHECK(c.made == 2 && c.live == 1, "made %d, live %d (want 2 and 1)", c.made, c.live);
    /* in flight at once: distinct buffers, each big enough */
    pl_work_buf a = pl_work_pool_take(&wp, 40), b = pl_work_pool_take(&wp, 40),
                d = pl_work_pool_take(&wp, 8);
    TH_CHECK(a.p != b.p && a.p != d.p && b.p != d.p, "buffers in flight shared");
    TH_CHECK(a.bytes >= 40 && b.bytes >= 40 && d.bytes >= 8, "too small: %zu %zu %zu", a.bytes,
             b.bytes, d.bytes);
    pl_work_pool_give(&wp, a);
    pl_work_pool_give(&wp, d);
    pl_work_pool_give(&wp, b);
    /* the smallest that fits */
    pl_work_buf e = pl_work_pool_take(&wp, 5);
    TH_CHECK(e.bytes == 8, "take 5 of free 50, 40, 8 gave %zu bytes", e.bytes);
    pl_work_pool_give(&wp, e);
    pl_work_pool_destroy(&wp);
    TH_CHECK(c.live == 0, "%d buffers left after destroy", c.live);
}

int main(int argc, char **argv)
{
    static const th_case cases[] = {
        {"entry_cpu", case_entry_cpu},
        {"entry_onnx", case_entry_onnx},
        {"entry_example_acc", case_entry_example_acc},
        {"entry_onednn", case_entry_onednn},
        {"entry_cuda", case_entry_cuda},
        {"auto_pad_parse", case_auto_pad_parse},
        {"auto_pad_same", case_auto_pad_same},
        {"hash_stream", case_hash_stream},
        {"hash_view", case_hash_view},
        {"work_pool", case_work_pool},
    };
    return th_main(argc, argv, cases, sizeof cases / sizeof cases[0], 1, "<stage dir>");
}
