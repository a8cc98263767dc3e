/* onednn.h — what the parts of the onednn module share: the instance, the
 * host table, and the symbolic-mode entry points that onednn.c's table
 * points at. Internal to the module; nothing here crosses the ABI. */
#ifndef PLINTH_ONEDNN_H
#define PLINTH_ONEDNN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include <plinth/module.h>
#include <plinth/work_pool.h>

#define ONEDNN_NAME "onednn"
#define ONEDNN_VERSION_STRING "0.2.0"

/* The host table handed to pl_module_entry: one static table of the core,
 * valid until the module is unloaded, shared by every instance. */
extern const pl_host_api *onednn_host;

/* One runtime's instance, made by init and freed by shutdown. configure is
 * the only writer of the settings and is never concurrent with other calls;
 * the engine is made on first use under engine_lock, because compile may
 * run on several threads and oneDNN's ISA cap must be applied before it. */
/* A node whose work takes less than this many microseconds on one thread
 * (the core's default rates, plinth/cost.h's PL_COST_GFLOPS and
 * PL_COST_GBPS) runs on one: OpenMP's fork and join, and waking the team's
 * other thread, cost more than halving a few microseconds saves. The
 * default of `one_thread_us`. */
#define ONEDNN_ONE_THREAD_US 4.0
/* The memory rate that decision assumes, GB/s: a small node's bytes are in
 * cache, not in memory (PL_COST_GBPS's 15). A C harness at 2 threads, one
 * against two (oneDNN 2.6, AVX-512): an eltwise or scalar binary on
 * [48, 256] 1.4 / 2.3 us, [64, 512] 3.6 / 4.2, [64, 1024] 7.0 / 5.6: two
 * threads pay from about 256 KB moved, 4 us at 64 GB/s; half that rate
 * (128 KB) measured no worse on the PyTorch zoo, 64 cost efficientnet_s 7%. */
#define ONEDNN_ONE_THREAD_GBPS 32.0
/* A recurrent node whose time step takes less than this on one thread runs
 * on one: its team joins once per step. Unless its weights W and R pass one
 * core's cache (PL_COST_CACHE_BYTES): a team splits them over its cores'
 * caches (an LSTM of hidden 256 and 384 inputs, 2.6 MB, one step: 87 us
 * on one thread, 18 on the cpu module's two). */
#define ONEDNN_RNN_ONE_THREAD_STEP_US 20.0

/* Weights laid out once for every compiled subgraph that reads them the
 * same way (onednn_share.c). */
#define ONEDNN_SHARE_SEEN 512
struct onednn_shared_weight;
struct onednn_share {
    pthread_mutex_t mu;
    struct onednn_shared_weight *head;
    struct {
        const void *data;
        dnnl_memory_desc_t src_md, md;
    } seen[ONEDNN_SHARE_SEEN]; /* source addresses laid out once (a ring) */
    size_t n_seen, next_seen;
    struct {
        uint64_t digest;
        size_t bytes;
        int denormals;
    } scanned[ONEDNN_SHARE_SEEN]; /* constants scanned for denormals (a ring) */
    size_t n_scanned, next_scanned;
    struct {
        const void *data;
        size_t bytes;
        int denormals; /* the verdict where the view compiles again (ABI 1.16), else -1 */
    } scan_at[ONEDNN_SHARE_SEEN]; /* addresses scanned for denormals (a ring) */
    size_t n_scan_at, next_scan_at;
};

struct pl_module_ctx {
    pl_host_ctx *host_ctx;
    int compute_units;       /* online CPUs when init ran */
    const char *max_cpu_isa; /* the cap this instance asked for, or "default" */
    int bf16;                /* precision = bf16 is in effect */
    int bf16_asked;          /* precision = bf16 was asked for (the CPU may lack it) */
    int winograd;            /* winograd = auto (1: within a weight budget), all (2), no (0) */
    int direct;              /* direct_conv = auto (1) or no (0): onednn_direct.c */
    double one_thread_us;    /* one_thread_us: nodes below this run on one thread */
    int solo;                /* solo = auto, off, on (enum odnn_pace_policy, onednn_pace.h) */
    pthread_mutex_t engine_lock;
    dnnl_engine_t engine;    /* NULL until the first compile */
    /* Run memory (a subgraph's intermediate values and primitives'
     * scratchpad) is not kept per compiled subgraph but taken from here
     * for the length of a run (onednn_sg_run; plinth/work_pool.h). */
    pl_work_pool work;
    struct onednn_share share;
};

/* A compiled subgraph's weight block (one mapping, onednn_subgraph.c's
 * odnn_block_reserve) that shared copies laid out in it keep mapped: the
 * last of the subgraph and those copies to let go unmaps it. */
struct onednn_block {
    void *base;
    size_t len;
    atomic_size_t refs;
};
/* Takes one hold of B (NULL: nothing). */
void onednn_block_ref(struct onednn_block *b);
/* Lets go of one hold of B (NULL: nothing): the last unmaps it. */
void onednn_block_unref(pl_module_ctx *ctx, struct onednn_block *b);

void onednn_share_init(struct onednn_share *s);
void onednn_share_destroy(pl_module_ctx *ctx);
/* The shared copy of the weight laid out as MD from source bytes DATA in
 * layout SRC_MD (a constant node NODE of VIEW reads, or bytes of the
 * build's own), held (release it with onednn_share_release), or NULL.
 * With NULL, *OUT_WANT says the weight should become shared (its address
 * came back, no copy exists yet; 1), or become shared keyed by DATA's
 * address (2: VIEW compiles again, ABI 1.16's compile_repeated, and the
 * core keeps the constant there, tensor_constant_keep; *OUT_DIGEST then
 * holds the address): the caller lays it out into memory of its own from
 * host_alloc and hands it to onednn_share_add with *OUT_WANT and
 * *OUT_DIGEST. SALT tells apart copies the module packs itself (how it
 * packed them: MD, a run of floats, does not say); 0 for oneDNN's
 * layouts. */
struct onednn_shared_weight *onednn_share_find(pl_module_ctx *ctx, const pl_graph_view *view,
                                               int64_t node, const void *data,
                                               const dnnl_memory_desc_t *src_md,
                                               const dnnl_memory_desc_t *md, uint64_t salt,
                                               int *out_want, uint64_t *out_digest);
/* Makes DATA (host_alloc; taken; or, with BLOCK, bytes in that block,
 * which the copy then holds) the shared copy, held once; NULL when out of
 * memory (DATA is then still the caller's). */
struct onednn_shared_weight *onednn_share_add(pl_module_ctx *ctx, int want, uint64_t digest,
                                              uint64_t salt, const dnnl_memory_desc_t *src_md,
                                              const dnnl_memory_desc_t *md, void *data,
                                              struct onednn_block *block);
void *onednn_share_data(const struct onednn_shared_weight *w);
/* Lets go of W (NULL: nothing); the last hold frees the copy. */
void onednn_share_release(pl_module_ctx *ctx, struct onednn_shared_weight *w);
/* Shared copies alive (configure reports it). */
size_t onednn_share_count(pl_module_ctx *ctx);
/* Whether the BYTES of a constant whose content digest is DIGEST hold a
 * denormal float, as an earlier scan found (1 or 0), or -1 when none
 * scanned it; and recording a scan. */
int onednn_share_denormals(pl_module_ctx *ctx, uint64_t digest, size_t bytes);
/* Where a view's constants compile again (ABI 1.16's compile_repeated): the
 * verdict of an earlier scan of the BYTES at DATA for denormals (1 or 0),
 * or -1; and noting one. By address, no digest: a verdict gone stale (the
 * address reused by other bytes) only misjudges speed, since a weight read
 * in place with its denormals computes the same values, more slowly. */
int onednn_share_denormals_at(pl_module_ctx *ctx, const void *data, size_t bytes);
void onednn_share_note_denormals_at(pl_module_ctx *ctx, const void *data, size_t bytes,
                                    int denormals);
/* Whether BYTES at DATA were scanned for denormals before (1), else records
 * them (0): a constant is looked up by digest only when its address comes
 * back, as weights are shared (the digest is a pass over the bytes as long
 * as the scan). */
int onednn_share_scan_again(pl_module_ctx *ctx, const void *data, size_t bytes);
void onednn_share_note_denormals(pl_module_ctx *ctx, uint64_t digest, size_t bytes,
                                 int denormals);

/* Allocates and frees the run buffers of pl_module_ctx.work (CTX is
 * the module's context). */
void *onednn_work_alloc(void *ctx, size_t bytes);
void onednn_work_release(void *ctx, void *p);

/* The name of the ISA oneDNN dispatches to ("avx512_core"), written into
 * buf when it has no name of its own. */
const char *onednn_effective_isa(char *buf, size_t size);

/* Symbolic mode (onednn_subgraph.c). supported_nodes gives a verdict, with
 * a reason on refusal, for every node of GRAPH. compile turns SUBGRAPH into
 * a pl_compiled; with BLOB non-NULL it is import_compiled: the fusion plan
 * and the already reordered weights come from the blob, which is refused
 * when it was written for another subgraph, module, oneDNN or ISA. */
pl_status *onednn_sg_supported(pl_module_ctx *ctx, const pl_graph_view *graph,
                               pl_support_sink sink, void *sink_ctx);
pl_status *onednn_sg_compile(pl_module_ctx *ctx, const pl_graph_view *subgraph,
                             const void *blob, size_t blob_bytes, pl_compiled **out_compiled);
pl_status *onednn_sg_run(pl_module_ctx *ctx, pl_compiled *compiled, const pl_run_args *args);
void onednn_sg_release(pl_module_ctx *ctx, pl_compiled *compiled);
/* compiled_times (ABI 1.17): each step's time goes to the node it
 * computes; fused nodes and views get none. */
int onednn_sg_times(pl_module_ctx *ctx, pl_compiled *compiled, int op, pl_node_time *out,
                    size_t n);
pl_status *onednn_sg_export(pl_module_ctx *ctx, pl_compiled *compiled, pl_blob_sink sink,
                            void *sink_ctx);

/* Whether oneDNN dispatches to AVX-512 kernels here (onednn_cost.c; asked
 * once). Below it, oneDNN 2.6's tanh (and gelu_tanh) reads its polynomial
 * tables with gathers: 2.5 ns an element on an AVX2 EPYC, where the cpu
 * module's takes 0.8 and ONNX Runtime's 0.3. */
int onednn_has_avx512(void);

/* A mean or sum of ROWS rows of K contiguous values each (the trailing
 * axes of a plain tensor): what oneDNN 2.6's reduction primitive takes
 * for it, in microseconds, and whether a product by a constant [K, 1]
 * vector (onednn_cost.c) is the faster way. */
double onednn_reduce_us(int64_t rows, int64_t k);
int onednn_reduce_by_matmul(int64_t rows, int64_t k);
/* Whether an int8 convolution of MACS multiply-adds over PIXELS output
 * pixels takes oneDNN's AMX kernels (onednn_subgraph.c); the cost model
 * rates it so. */
int onednn_int8_amx(double macs, double pixels);
/* Whether an int8 matmul of MACS multiply-adds takes oneDNN's AMX kernel. */
int onednn_qmm_amx(double macs);

/* The time steps times directions of RNN, GRU or LSTM node N (how often
 * it joins its OpenMP team); 0 for another op or unknown dims. */
double onednn_rnn_steps(const pl_graph_api *g, const pl_graph_view *v, size_t n);
/* The bytes of RNN, GRU or LSTM node N's weights W and R (f32; 0 unknown). */
double onednn_rnn_weight_bytes(const pl_graph_api *g, const pl_graph_view *v, size_t n);

/* What the subgraph compile would make of each node of V that INSIDE
 * marks (one flag per node: the nodes of a candidate subgraph), for the
 * cost estimate: a primitive of its own, a node inside a pattern that
 * becomes one primitive (a decomposed LayerNorm, GELU, the
 * DequantizeLinear of a QDQ pair), or the head of such a pattern, as a
 * normalization (over the last axis, or over the channels of an NCHW
 * tensor, which goes through an NHWC copy and back) or an eltwise
 * primitive. Only patterns wholly inside count. OUT holds one role per
 * node; 0 when out of memory. */
enum {
    ODNN_ROLE_OWN = 0,
    ODNN_ROLE_INNER = 1,
    ODNN_ROLE_NORM = 2,
    ODNN_ROLE_NORM_NHWC = 3,
    ODNN_ROLE_ELTWISE = 4
};
int onednn_fused_roles(pl_module_ctx *ctx, const pl_graph_view *v, const unsigned char *inside,
                       unsigned char *out);

/* What NODES of V would cost per run as one subgraph (onednn_cost.c);
 * pl_module_api.estimate_cost. */
int onednn_estimate_cost(pl_module_ctx *ctx, int device, const pl_graph_view *v,
                         const size_t *nodes, size_t n_nodes, pl_cost *out);

/* The module's own direct convolution for AVX2 CPUs (onednn_direct.c): one
 * f32 convolution of N images, IC -> OC channels (both multiples of 8),
 * source and destination blocked by 8 channels (aBcd8b), with its bias and
 * at most a clip (ReLU, ReLU6) or a leaky ReLU. The caller fills the shape
 * and calls odnn_direct_setup, which allocates the zero-bordered source
 * buffer and the offsets with the host's allocator (odnn_direct_free
 * releases them). */
enum { ODNN_ACT_NONE = 0, ODNN_ACT_CLIP, ODNN_ACT_LEAKY, ODNN_ACT_SWISH, ODNN_ACT_SIGMOID };

struct odnn_direct {
    int n, ic, oc, ih, iw, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl;
    int act;             /* ODNN_ACT_*: after the bias */
    float lo, hi, alpha; /* clip bounds; leaky slope, swish's alpha */
    int cg;      /* grouped: channels per group in and out (2 or 4); 0: one group */
    int groups;  /* groups of whole 8-channel blocks (odnn_direct_dense_groups): the
                    dense kernel per group; 0 or 1: one group */
    int hp, wp;  /* the padded source plane */
    float *xpad; /* n * ic/8 planes of hp x wp x 8, border zero */
    int *poff;   /* per output pixel, its window's corner in a plane of xpad */
    int *delta;  /* per tap, its offset from the corner (inside poff's block) */
    float *xe;   /* grouped: per thread, a padded plane of cg vectors per pixel */
    int xe_threads;
    int wm;         /* Winograd F(wm x wm, 3x3), 2 or 4 (onednn_winograd.c); 0: direct */
    int th, tw;     /* Winograd: output tiles down and across */
    int tblock;     /* Winograd: tiles per work item */
    int obs;        /* Winograd: 16-channel output blocks per work item */
    size_t ws_floats; /* Winograd, narrow: per thread, floats of its scratch */
    int ws_threads;   /* Winograd, narrow: the threads its scratch is sized for */
    int narrow;       /* the narrow kernel (onednn_narrow.c): at most 8 outputs channels as
                         dot products over channels-last windows; 0: not */
    int cb;           /* narrow: the source's channels per block (ic: channels last; 8 or 16:
                         blocked) */
    int kp;           /* narrow: packed floats per (kernel row, channel block, output channel):
                         kw * cb rounded up to 16 */
};

/* Whether the CPU has AVX2 and FMA and oneDNN runs below AVX-512. */
int odnn_direct_usable(void);

/* onednn_warm.c: whether a primitive of implementation IMPL runs oneDNN's
 * JIT GEMM driver, whose kernels are generated on its first use in the
 * process; and the generation started in a thread of its own (once per
 * process); and that thread joined (when a context shuts down). */
int odnn_gemm_warm_impl(const char *impl);
int odnn_gemm_warm_start(void);
void odnn_gemm_warm_join(void);
/* Whether IC -> OC channels suit the kernel (multiples of 8, enough work
 * per tap to beat oneDNN's). */
int odnn_direct_channels(int64_t ic, int64_t oc);
/* Whether a grouped convolution of IC -> OC channels in GROUP groups suits
 * the grouped kernel (2 or 4 channels per group in and out, IC a multiple
 * of 8): oneDNN 2.6 runs those as im2col + GEMM per group. */
int odnn_direct_grouped(int64_t ic, int64_t oc, int64_t group);
/* Whether a grouped convolution of IC -> OC channels in GROUP groups suits
 * the dense kernel run group by group: channels per group in and out
 * multiples of 8 that odnn_direct_channels takes (ShuffleNet v1's 1x1
 * layers, 80-320 channels a group). The subgraph takes it for 1x1
 * kernels only (odnn_direct_fits). */
int odnn_direct_dense_groups(int64_t ic, int64_t oc, int64_t group);
size_t odnn_direct_packed_floats(const struct odnn_direct *d);
/* Packs OIHW weights into the kernel's [group][oc/16][tap][ic][16] (per
 * group: its channels, 16 output channels a block, the last padded with
 * zeros) followed by the bias (BIAS or zeros) in the same blocks:
 * odnn_direct_packed_floats floats. */
void odnn_direct_pack(const struct odnn_direct *d, const float *oihw, const float *bias,
                      float *out);
int odnn_direct_setup(struct odnn_direct *d, pl_module_ctx *ctx);
void odnn_direct_free(struct odnn_direct *d, pl_module_ctx *ctx);
/* The direct kernel's register tile as a plain product: PT (1 to 6) rows
 * of V, row r's IC values (a multiple of 8) from V + ROWS[r], times U (IC
 * rows of 16), into M0 (channels 0-7) and M1 (8-15), 8 floats per row. P
 * describes the product, made once by odnn_direct_product_desc (a call
 * per register tile built it each time: 4% of the samples on 64 channels
 * at 56x56). */
void odnn_direct_product_desc(struct odnn_direct *p, int ic);
void odnn_direct_product(const struct odnn_direct *p, const float *v, const int *rows,
                         const float *u, float *m0, float *m1, int pt);
/* The scratch odnn_direct_run needs (64-byte aligned), in bytes; 0 for none.
 * Steps of one compiled subgraph run one at a time and share one. */
size_t odnn_direct_scratch_bytes(const struct odnn_direct *d);
/* Runs on an OpenMP team of THREADS; SRC and DST as the compiled shape;
 * SCRATCH of odnn_direct_scratch_bytes. */
void odnn_direct_run(const struct odnn_direct *d, const float *src, const float *w, float *dst,
                     int threads, float *scratch);

/* Winograd (onednn_winograd.c): the output tile (2 or 4) for D's shape,
 * filled as for the direct kernel, or 0 where the direct kernel stays
 * (not 3x3 stride 1, one group; too few tiles). The caller sets wm before
 * odnn_direct_setup; packing, setup and running then go through the
 * odnn_direct_* entries as before. */
int odnn_wino_tile(const struct odnn_direct *d);

/* The narrow kernel (onednn_narrow.c), for AVX-512 CPUs: a convolution of
 * one group into at most 8 output channels, which oneDNN's kernels compute
 * in blocks of 16 (one output channel costs 16). Each output value is a dot
 * product along the window's rows, which are contiguous in a channels-last
 * or channel-blocked source. odnn_narrow_takes says whether it beats
 * oneDNN's padded blocks for IC -> OC channels through a KH x KW kernel of
 * horizontal dilation DW; odnn_narrow_ops is its work in multiply-adds per
 * output value at the FMA rate (for the cost model, against IC * KH * KW).
 * The caller fills D's shape with narrow = 1 and cb, then packs, sets up
 * and runs through the odnn_direct_* entries. */
int odnn_narrow_takes(int64_t ic, int64_t oc, int64_t kh, int64_t kw, int64_t dw, int64_t group);
double odnn_narrow_ops(int64_t ic, int64_t oc, int64_t kh, int64_t kw);
/* The floats of the kernel's per-thread strips for it at stride SW. */
int64_t odnn_narrow_strip_floats(int64_t ic, int64_t oc, int64_t kh, int64_t kw, int64_t sw);
size_t odnn_narrow_packed_floats(const struct odnn_direct *d);
void odnn_narrow_pack(const struct odnn_direct *d, const float *oihw, const float *bias,
                      float *out);
int odnn_narrow_setup(struct odnn_direct *d, pl_module_ctx *ctx);
void odnn_narrow_run(const struct odnn_direct *d, const float *src, const float *w, float *dst,
                     int threads, float *scratch);
size_t odnn_wino_packed_floats(const struct odnn_direct *d);
void odnn_wino_pack(const struct odnn_direct *d, const float *oihw, const float *bias, float *out);
int odnn_wino_setup(struct odnn_direct *d, pl_module_ctx *ctx);
void odnn_wino_run(const struct odnn_direct *d, const float *src, const float *w, float *dst,
                   int threads, float *scratch);

/* Lays float OIHW 3x3 weights (SRC in SRC_MD) out in oneDNN's Winograd
 * layout MD (format_kind wino) into DST, as oneDNN's reorder would, in one
 * pass without its scratch copy (onednn_wino_weights.c). 0 when done;
 * nonzero, with DST untouched, for a layout or source it does not make
 * (the caller runs oneDNN's reorder). */
int odnn_wino_weights(const dnnl_memory_desc_t *src_md, const void *src,
                      const dnnl_memory_desc_t *md, void *dst);

/* Lays row-major s8 K x N weights (SRC in SRC_MD) out in layout MD when MD
 * carries the compensation of a source zero point over N and nothing else
 * (onednn_zp_weights.c): oneDNN's reorder of the weights without it, the
 * compensation summed here. 0 when done; nonzero for any other layout or a
 * oneDNN failure (the caller runs oneDNN's reorder). */
int odnn_zp_weights(dnnl_engine_t engine, const dnnl_memory_desc_t *src_md, const void *src,
                    const dnnl_memory_desc_t *md, void *dst);
/* One oneDNN reorder of SRC (SRC_MD) into DST (MD), executed now. */
dnnl_status_t odnn_reorder_plain(dnnl_engine_t engine, const dnnl_memory_desc_t *src_md,
                                 const void *src, const dnnl_memory_desc_t *md, void *dst);

/* The module's own pooling for AVX2 CPUs (onednn_pool.c): max or average
 * over a 2-D window (a 1-D one has IH = KH = 1) of an f32 source whose
 * channels are read as GROUPS groups of VECS 8-lane vectors at each pixel
 * (a channel block of 8 or 16, or channels-last); strides in floats, the
 * destination's layout the source's. */
struct odnn_pool {
    int max;         /* 1: MaxPool, 0: average */
    int include_pad; /* average: divide by the whole window, else by the cells inside */
    int64_t n, groups, vecs;
    int64_t ih, iw, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw;
    int64_t xs_n, xs_g, xs_h, xs_w; /* source strides: image, group, row, column */
    int64_t ys_n, ys_g, ys_h, ys_w; /* destination strides */
};

/* Runs on an OpenMP team of up to THREADS. */
void odnn_pool_run(const struct odnn_pool *p, const float *x, float *y, int threads);

/* The module's own Resize of the spatial axes of a 4-D f32 tensor
 * (onednn_resize.c), read like odnn_pool's source; the destination in the
 * source's layout (YS_*) or, with PLAIN, row-major NCHW of CH channels.
 * The caller fills the shape, modes and strides, then odnn_resize_tables
 * fills the per-row and per-column tables in BLOCK of
 * odnn_resize_table_bytes (owned by the caller). */
enum {
    ODNN_CTM_HALF_PIXEL = 0, ODNN_CTM_PYTORCH_HALF_PIXEL, ODNN_CTM_ALIGN_CORNERS,
    ODNN_CTM_ASYMMETRIC, ODNN_CTM_TF_HALF_PIXEL
};
enum {
    ODNN_NEAREST_PREFER_FLOOR = 0, ODNN_NEAREST_PREFER_CEIL, ODNN_NEAREST_FLOOR,
    ODNN_NEAREST_CEIL
};

struct odnn_resize {
    int taps;            /* 1 nearest, 2 linear, 4 cubic */
    int ctm, nearest;    /* ODNN_CTM_*, ODNN_NEAREST_* */
    double scale_h, scale_w, cubic_a;
    int exclude_outside;
    int plain;           /* the destination is row-major NCHW */
    int64_t n, groups, vecs, ch;
    int64_t ih, iw, oh, ow;
    int64_t xs_n, xs_g, xs_h, xs_w;
    int64_t ys_n, ys_g, ys_h, ys_w; /* plain: ys_n only (CH * OH * OW) */
    int32_t *hi, *wi;    /* per output row, TAPS source rows; per column, TAPS
                            offsets in floats (index * xs_w) */
    float *hw, *ww;      /* and their weights */
};

size_t odnn_resize_table_bytes(const struct odnn_resize *r);
void odnn_resize_tables(struct odnn_resize *r, void *block);
/* Runs on an OpenMP team of up to THREADS. */
void odnn_resize_run(const struct odnn_resize *r, const float *x, float *y, int threads);

/* The module's own small matrix products (onednn_smm.c): for every entry
 * of a batch of up to ODNN_SMM_MAX_BATCH dims, C = post(A x B + bias),
 * A(i, k) at A[i * A_RS + k * A_KS], B(k, j) at B[k * B_KS + j * B_NS],
 * C(i, j) at C[i * C_RS + j], each batch dim d moving A, B and C by AS[d],
 * BS[d] and CS[d] floats (0: broadcast). B is PACKED at compile
 * (odnn_smm_pack into odnn_smm_packed_floats) or packed per entry in the
 * scratch; the bias (or NULL) holds NPAD floats. Post-ops in order: LINEAR
 * x * A + B, ACT odnn_act8's ACT (lo A, hi B, slope A), SUM x + A * C's
 * old value. */
#define ODNN_SMM_MAX_BATCH 4
#define ODNN_SMM_MAX_POST 4
enum { ODNN_SMM_LINEAR = 1, ODNN_SMM_ACT, ODNN_SMM_SUM };
struct odnn_smm_post {
    int kind, act;
    float a, b;
};
struct odnn_smm {
    int64_t m, n, k, npad; /* NPAD: N rounded up to 8 */
    int nb;
    int64_t bd[ODNN_SMM_MAX_BATCH], as[ODNN_SMM_MAX_BATCH], bs[ODNN_SMM_MAX_BATCH],
        cs[ODNN_SMM_MAX_BATCH];
    int64_t a_rs, a_ks, b_ks, b_ns, c_rs;
    int packed;
    /* One row (M = 1, no batch, A dense) by a constant B read as stored,
     * row-major [K, N] (B_NS 1) or transposed [N, K] (B_KS 1): the
     * matrix-vector kernel, odnn_gemv_usable() */
    int gemv;
    int n_post;
    struct odnn_smm_post post[ODNN_SMM_MAX_POST];
};

size_t odnn_smm_packed_floats(const struct odnn_smm *s);
void odnn_smm_pack(const struct odnn_smm *s, const float *b, float *out);
/* Scratch bytes a run on up to THREADS threads needs (64-byte aligned). */
size_t odnn_smm_scratch_bytes(const struct odnn_smm *s, int threads);
/* Whether the CPU runs the matrix-vector kernel (AVX2 and FMA). */
int odnn_gemv_usable(void);
/* Runs on an OpenMP team of up to THREADS. */
void odnn_smm_run(const struct odnn_smm *s, const float *a, const float *b, const float *bias,
                  float *c, int threads, float *scratch);

/* The module's own fused attention (onednn_attn.c, AVX-512 only): for
 * every entry of a batch of up to ODNN_ATTN_MAX_BATCH dims, O = softmax(
 * mask(select(scale(Q x K^T)))) x V over the N keys. Q(i, c) at Q[i *
 * Q_RS + c * Q_CS] (S rows, D columns), K^T(c, j) at K[c * K_DS + j *
 * K_NS], V(j, c) at V[j * V_NS + c * V_CS] (DV columns), the added mask
 * M(i, j) at M[i * M_RS + j * M_CS] (when HAS_MASK), the condition C(i, j)
 * (bytes) at C[i * C_RS + j * C_CS] (when HAS_SELECT), O(i, c) at O[i *
 * O_RS + c]; batch dim d moves operand t (Q, K, V, M, O, C) by BS[t][d]
 * elements (0: broadcast). SCALE_OP: none, Mul or Div of the scores by
 * SCALE; then, with HAS_BIAS, the bias B(i, j) at B[i * B_RS + j * B_CS]
 * (operand 6) is added; then, with HAS_SELECT, a score whose condition is not KEEP (0 or
 * 1) becomes FILL (Where); then the mask is added; then, with HAS_FLOOR,
 * the score is at least FLOOR (Max; NaN stays NaN). */
#define ODNN_ATTN_MAX_BATCH 4
enum { ODNN_ATTN_NONE = 0, ODNN_ATTN_MUL, ODNN_ATTN_DIV };
enum { ODNN_ATTN_Q, ODNN_ATTN_K, ODNN_ATTN_V, ODNN_ATTN_M, ODNN_ATTN_O, ODNN_ATTN_C, ODNN_ATTN_B };
struct odnn_attn {
    int64_t s, n, d, dv;
    int nb;
    int64_t bd[ODNN_ATTN_MAX_BATCH], bs[7][ODNN_ATTN_MAX_BATCH];
    int64_t q_rs, q_cs, k_ds, k_ns, v_ns, v_cs, m_rs, m_cs, c_rs, c_cs, b_rs, b_cs, o_rs;
    int has_mask, has_select, keep, scale_op, has_floor, has_bias;
    int safe; /* a row the Softmax makes NaN gives 0 (torch's safe softmax) */
    int threads; /* the scratch holds this many threads' parts */
    float scale, fill, floor;
};

/* Query rows a work item takes; scratch bytes a run on up to THREADS
 * threads needs (64-byte aligned parts). */
int64_t odnn_attn_block_rows(const struct odnn_attn *a);
size_t odnn_attn_scratch_bytes(const struct odnn_attn *a, int threads);
/* Runs on an OpenMP team of up to THREADS; M NULL without a mask, C
 * without a condition, BIAS without a bias. */
void odnn_attn_run(const struct odnn_attn *a, const float *q, const float *k, const float *v,
                   const float *m, const uint8_t *c, const float *bias, float *o, int threads,
                   float *scratch);

/* RMSNorm of ROWS dense rows of COLS values: y = x / sqrt(mean(x^2) + eps)
 * * G (G NULL: no scale), on up to THREADS OpenMP threads. */
void odnn_rms_run(const float *x, const float *g, float *y, int64_t rows, int64_t cols,
                  float eps, int threads);

/* DynamicQuantizeLinear of N f32 values X: Y their u8 values, *SCALE and
 * *ZP (and *ZP32, the same zero point as oneDNN reads it) the parameters,
 * as ONNX defines them, on up to THREADS OpenMP threads. */
void odnn_dql_run(const float *x, int64_t n, uint8_t *y, float *scale, uint8_t *zp,
                  int32_t *zp32, int threads);

/* Y = A op B for OP 0 Add, 1 Sub, 2 Mul, 3 Div, 4 Max, 5 Min (Max and Min
 * give NaN when either is NaN), A of dims AD and B of BD (rank ND, 1 where
 * they broadcast) into Y of YD, all dense plain f32, on up to THREADS
 * OpenMP threads. */
void odnn_bbin_run(int op, const float *a, const float *b, float *y, int nd, const int64_t *ad,
                   const int64_t *bd, const int64_t *yd, int threads);

/* Y = X with NaN replaced by FILL, N dense f32 values, on up to THREADS
 * OpenMP threads (Where(IsNaN(x), FILL, x)). */
void odnn_nan_fill_run(const float *x, float *y, int64_t n, float fill, int threads);

/* Erf of N dense f32 values, as the cpu module computes it, on up to
 * THREADS OpenMP threads. */
void odnn_erf_run(const float *x, float *y, int64_t n, int threads);
/* com.microsoft QLinearAdd / QLinearMul (P) of N 8-bit values at A and B
 * into C (onednn_qlinear.c). */
struct pl_qlinear;
void odnn_qbin_run(const struct pl_qlinear *p, const void *a, const void *b, void *c, int64_t n,
                   int threads);
/* ai.plinth TableLookup8 on N bytes: Y[i] = TABLE[X[i]] (onednn_direct.c). */
void odnn_lut_run(const uint8_t *x, const uint8_t *table, uint8_t *y, int64_t n, int threads);
/* GELU's tanh form, y = x * sigmoid(2 * sqrt(2/pi) * (x + 0.044715 x^3)),
 * on N values, on up to THREADS OpenMP threads. */
void odnn_gelu_tanh_run(const float *x, float *y, int64_t n, int threads);
/* tanh of N values below AVX-512 (oneDNN 2.6's AVX2 tanh reads its tables
 * with gathers: 5 ns a value), on up to THREADS OpenMP threads. */
void odnn_tanh_run(const float *x, float *y, int64_t n, int threads);

/* y = x * SCALE + SHIFT over ROWS planes of COLS dense values (plane r of
 * channel r % CHANS), then max(0, y) when RELU, on up to THREADS OpenMP
 * threads: inference batch normalization of a channels-first source. */
void odnn_affine_run(const float *x, const float *scale, const float *shift, float *y,
                     int64_t rows, int64_t cols, int64_t chans, int relu, int threads);

/* InstanceNormalization of ROWS planes of COLS dense values (plane r of
 * channel r % CHANS): y = (x - mean) / sqrt(var + EPS) * SCALE + BIAS, on
 * up to THREADS OpenMP threads. */
void odnn_inorm_run(const float *x, const float *scale, const float *bias, float *y,
                    int64_t rows, int64_t cols, int64_t chans, float eps, int threads);

/* Y = COND ? X : E elementwise, each of COND (bytes, nonzero = true), X and
 * E broadcast (dims CD, XD, ED of ND, right-aligned, 1 = broadcast) to Y's
 * dims YD: the module's own Where. */
void odnn_where_run(const uint8_t *cond, const float *x, const float *e, float *y, int nd,
                    const int64_t *cd, const int64_t *xd, const int64_t *ed, const int64_t *yd,
                    int threads);

/* Expand: dense X of ND dims XD (1 where it broadcasts, right-aligned to
 * YD) into dense Y of dims YD, elements of ESIZE bytes (f32, or 8-bit
 * quantized values), on up to THREADS OpenMP threads. */
void odnn_expand_run(const void *x, void *y, size_t esize, int nd, const int64_t *xd,
                     const int64_t *yd, int threads);

/* Pad (constant mode): dense X of ND dims XD into dense Y of dims YD, X's
 * element 0 at BEGIN in Y, every other element VALUE; on up to THREADS
 * OpenMP threads. */
void odnn_pad_run(const float *x, float *y, int nd, const int64_t *xd, const int64_t *yd,
                  const int64_t *begin, float value, int threads);

/* A 2-D convolution dilated along an axis, run by phase (onednn_phase.c):
 * N images of CB blocks of 16 channels (nChw16c on both sides); D the
 * dilations (1: the axis is not split) and LO the pads before of the
 * original convolution; IN the gather's source extents (H, W) or the
 * scatter's destination's (OH, OW); PH a phase image's extents, the
 * gather's destination (a split axis: its phase's outputs + 2, read with no
 * padding) or the scatter's source (a phase's outputs). Phase images are
 * batched image-major, then by row phase, then by column phase. The
 * scatter applies ACT to what it writes (Winograd's kernels take ReLU
 * only). */
struct odnn_phase {
    int64_t n, cb, d[2], lo[2], in[2], ph[2];
    int act;          /* the scatter's: ODNN_ACT_NONE, _CLIP or _LEAKY */
    float lo_v, hi_v, alpha; /* clip bounds; leaky slope */
};
void odnn_phase_gather(const float *x, float *p, const struct odnn_phase *g, int threads);
void odnn_phase_scatter(const float *o, float *y, const struct odnn_phase *g, int threads);

/* Answers of oneDNN's implementation probes, for the process
 * (onednn_memo.c): KEY (N int64s, at most ONEDNN_MEMO_MAX_KEY) names the
 * question (a kind first, the calling thread's OpenMP team among them);
 * get returns 1 and the answer (RESULT, and IMPL when non-NULL) when it was
 * put before and is still held. */
#define ONEDNN_MEMO_MAX_KEY 48
int onednn_memo_get(const int64_t *key, int n, int *result, char *impl, size_t cap);
void onednn_memo_put(const int64_t *key, int n, int result, const char *impl);
/* Questions asked of onednn_memo_get since the module loaded, and how many
 * it answered (configure's kernel_probes). */
void onednn_memo_counts(unsigned long long *asked, unsigned long long *remembered);

#endif /* PLINTH_ONEDNN_H */
