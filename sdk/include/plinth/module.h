/* plinth/module.h — the module table, the entry point and the identity note:
 * everything a backend implements to plug into Plinth. A module includes this
 * header (which brings abi.h, tensor.h and host.h) and nothing of the core.
 *
 * Life of a module, as the core drives it:
 *   1. the loader reads the identity note (PL_MODULE_IDENTITY) from the file
 *      with an ELF reader, without running any of its code, and refuses a
 *      foreign file or another ABI major;
 *   2. dlopen, then pl_module_entry negotiates the ABI major both ways and
 *      returns the module table;
 *   3. for each runtime: init (may refuse with a reason; PL_CODE_NO_DEVICE
 *      means "sound, but no usable device"), configure with the keys of the
 *      module's backend.ini section, then device, memory, kernel and subgraph
 *      calls, and finally shutdown. The library is unloaded only when nothing
 *      the module created is alive. */
#ifndef PLINTH_MODULE_H
#define PLINTH_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "plinth/abi.h"
#include "plinth/host.h"
#include "plinth/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- identity note ---------------------------------------------------- */

#define PL_NOTE_SECTION_NAME ".note.plinth.identity"
#define PL_NOTE_OWNER "Plinth"
#define PL_NOTE_TYPE_IDENTITY 0x504c4e31u /* "PLN1" */
#define PL_NOTE_NAME_MAX 32     /* bytes, NUL included */
#define PL_NOTE_VERSION_MAX 32  /* bytes, NUL included */

/* The payload of the identity note. Fixed size; both strings NUL-terminated
 * within their arrays. */
typedef struct pl_identity_desc {
    uint32_t abi_major;
    uint32_t abi_minor;
    char name[PL_NOTE_NAME_MAX];
    char version[PL_NOTE_VERSION_MAX];
} pl_identity_desc;

/* ---- CPU features a module needs ----------------------------------------
 *
 * A second note in the same section, type PL_NOTE_TYPE_REQUIRES, lists the
 * CPU features the module's code may use; the core checks them against the
 * machine before it opens the file, so a module built for AVX-512 is
 * refused with a reason on a machine without it instead of faulting in
 * init. PL_MODULE_IDENTITY writes one with the features the compiler was
 * told it may use in that file (-mavx2, -march=..., from the compiler's
 * predefined macros); PL_MODULE_REQUIRES_CPU adds features other files of
 * the module are built for. Cores that predate the note ignore it. The
 * bits are x86-64 features; on other machines a note with any bit set is
 * refused (this core cannot check them). */
#define PL_NOTE_TYPE_REQUIRES 0x504c4e32u /* "PLN2" */

#define PL_CPU_SSE4_2 (1ull << 0)
#define PL_CPU_POPCNT (1ull << 1)
#define PL_CPU_AVX (1ull << 2)
#define PL_CPU_AVX2 (1ull << 3)
#define PL_CPU_FMA (1ull << 4)
#define PL_CPU_F16C (1ull << 5)
#define PL_CPU_BMI1 (1ull << 6)
#define PL_CPU_BMI2 (1ull << 7)
#define PL_CPU_MOVBE (1ull << 8)
#define PL_CPU_AVX512F (1ull << 9)
#define PL_CPU_AVX512CD (1ull << 10)
#define PL_CPU_AVX512BW (1ull << 11)
#define PL_CPU_AVX512DQ (1ull << 12)
#define PL_CPU_AVX512VL (1ull << 13)
#define PL_CPU_AVX512_VNNI (1ull << 14)
#define PL_CPU_AVX512_BF16 (1ull << 15)
#define PL_CPU_AVX512_FP16 (1ull << 16)
#define PL_CPU_AVX_VNNI (1ull << 17)
#define PL_CPU_AMX_TILE (1ull << 18)
#define PL_CPU_AMX_BF16 (1ull << 19)
#define PL_CPU_AMX_INT8 (1ull << 20)
#define PL_CPU_KNOWN_ ((1ull << 21) - 1)
/* The x86-64 micro-architecture levels. */
#define PL_CPU_X86_64_V2 (PL_CPU_SSE4_2 | PL_CPU_POPCNT)
#define PL_CPU_X86_64_V3                                                     \
    (PL_CPU_X86_64_V2 | PL_CPU_AVX | PL_CPU_AVX2 | PL_CPU_FMA | PL_CPU_F16C | \
     PL_CPU_BMI1 | PL_CPU_BMI2 | PL_CPU_MOVBE)
#define PL_CPU_X86_64_V4                                                     \
    (PL_CPU_X86_64_V3 | PL_CPU_AVX512F | PL_CPU_AVX512CD | PL_CPU_AVX512BW |  \
     PL_CPU_AVX512DQ | PL_CPU_AVX512VL)

/* The features the compiler may use in the file being compiled. */
#if defined(__x86_64__)
#ifdef __SSE4_2__
#define PL_CPU_B0_ PL_CPU_SSE4_2
#else
#define PL_CPU_B0_ 0ull
#endif
#ifdef __POPCNT__
#define PL_CPU_B1_ PL_CPU_POPCNT
#else
#define PL_CPU_B1_ 0ull
#endif
#ifdef __AVX__
#define PL_CPU_B2_ PL_CPU_AVX
#else
#define PL_CPU_B2_ 0ull
#endif
#ifdef __AVX2__
#define PL_CPU_B3_ PL_CPU_AVX2
#else
#define PL_CPU_B3_ 0ull
#endif
#ifdef __FMA__
#define PL_CPU_B4_ PL_CPU_FMA
#else
#define PL_CPU_B4_ 0ull
#endif
#ifdef __F16C__
#define PL_CPU_B5_ PL_CPU_F16C
#else
#define PL_CPU_B5_ 0ull
#endif
#ifdef __BMI__
#define PL_CPU_B6_ PL_CPU_BMI1
#else
#define PL_CPU_B6_ 0ull
#endif
#ifdef __BMI2__
#define PL_CPU_B7_ PL_CPU_BMI2
#else
#define PL_CPU_B7_ 0ull
#endif
#ifdef __MOVBE__
#define PL_CPU_B8_ PL_CPU_MOVBE
#else
#define PL_CPU_B8_ 0ull
#endif
#ifdef __AVX512F__
#define PL_CPU_B9_ PL_CPU_AVX512F
#else
#define PL_CPU_B9_ 0ull
#endif
#ifdef __AVX512CD__
#define PL_CPU_B10_ PL_CPU_AVX512CD
#else
#define PL_CPU_B10_ 0ull
#endif
#ifdef __AVX512BW__
#define PL_CPU_B11_ PL_CPU_AVX512BW
#else
#define PL_CPU_B11_ 0ull
#endif
#ifdef __AVX512DQ__
#define PL_CPU_B12_ PL_CPU_AVX512DQ
#else
#define PL_CPU_B12_ 0ull
#endif
#ifdef __AVX512VL__
#define PL_CPU_B13_ PL_CPU_AVX512VL
#else
#define PL_CPU_B13_ 0ull
#endif
#ifdef __AVX512VNNI__
#define PL_CPU_B14_ PL_CPU_AVX512_VNNI
#else
#define PL_CPU_B14_ 0ull
#endif
#ifdef __AVX512BF16__
#define PL_CPU_B15_ PL_CPU_AVX512_BF16
#else
#define PL_CPU_B15_ 0ull
#endif
#ifdef __AVX512FP16__
#define PL_CPU_B16_ PL_CPU_AVX512_FP16
#else
#define PL_CPU_B16_ 0ull
#endif
#ifdef __AVXVNNI__
#define PL_CPU_B17_ PL_CPU_AVX_VNNI
#else
#define PL_CPU_B17_ 0ull
#endif
#ifdef __AMX_TILE__
#define PL_CPU_B18_ PL_CPU_AMX_TILE
#else
#define PL_CPU_B18_ 0ull
#endif
#ifdef __AMX_BF16__
#define PL_CPU_B19_ PL_CPU_AMX_BF16
#else
#define PL_CPU_B19_ 0ull
#endif
#ifdef __AMX_INT8__
#define PL_CPU_B20_ PL_CPU_AMX_INT8
#else
#define PL_CPU_B20_ 0ull
#endif
#define PL_CPU_OF_THIS_BUILD                                                   \
    (PL_CPU_B0_ | PL_CPU_B1_ | PL_CPU_B2_ | PL_CPU_B3_ | PL_CPU_B4_ | PL_CPU_B5_ | \
     PL_CPU_B6_ | PL_CPU_B7_ | PL_CPU_B8_ | PL_CPU_B9_ | PL_CPU_B10_ | PL_CPU_B11_ | \
     PL_CPU_B12_ | PL_CPU_B13_ | PL_CPU_B14_ | PL_CPU_B15_ | PL_CPU_B16_ |        \
     PL_CPU_B17_ | PL_CPU_B18_ | PL_CPU_B19_ | PL_CPU_B20_)
#else
#define PL_CPU_OF_THIS_BUILD 0ull
#endif

/* The payload of a requirements note: the PL_CPU_* bits, in two 32-bit
 * halves so that the record packs at 4 bytes like every ELF note. */
typedef struct pl_requires_desc {
    uint32_t cpu_lo;
    uint32_t cpu_hi;
} pl_requires_desc;

typedef struct pl_requires_note {
    uint32_t namesz;   /* sizeof(PL_NOTE_OWNER), 7 */
    uint32_t descsz;   /* sizeof(pl_requires_desc) */
    uint32_t type;     /* PL_NOTE_TYPE_REQUIRES */
    char owner[8];     /* "Plinth" and padding */
    pl_requires_desc desc;
} pl_requires_note;

/* An ELF note record (Elf_Nhdr, owner padded to 4 bytes, then desc). */
typedef struct pl_identity_note {
    uint32_t namesz;   /* sizeof(PL_NOTE_OWNER), 7 */
    uint32_t descsz;   /* sizeof(pl_identity_desc) */
    uint32_t type;     /* PL_NOTE_TYPE_IDENTITY */
    char owner[8];     /* "Plinth" and padding */
    pl_identity_desc desc;
} pl_identity_note;

#if defined(__GNUC__) || defined(__clang__)
#define PL_NOTE_ATTRS __attribute__((used, aligned(4), section(PL_NOTE_SECTION_NAME)))
#else
#error "Plinth modules are ELF shared objects built with GCC or Clang"
#endif
#if defined(__has_attribute)
#if __has_attribute(retain)
#define PL_NOTE_RETAIN __attribute__((retain))
#endif
#endif
#ifndef PL_NOTE_RETAIN
#define PL_NOTE_RETAIN
#endif

/* Embeds the module's identity note. Use once, at file scope, in one source
 * file of the module. NAME is the module's short name (the backend.ini section
 * and [placement] name, [a-z0-9_], at most 31 bytes) and must equal the
 * module table's name; VERSION its own version string. Both are string
 * literals; a longer one fails to compile. */
#define PL_MODULE_IDENTITY(NAME, VERSION)                                    \
    typedef char pl_identity_name_fits_[(sizeof(NAME) <= PL_NOTE_NAME_MAX) ? 1 : -1]; \
    typedef char pl_identity_version_fits_[(sizeof(VERSION) <= PL_NOTE_VERSION_MAX) ? 1 : -1]; \
    PL_NOTE_ATTRS                                                            \
    PL_NOTE_RETAIN static const pl_identity_note pl_identity_note_ = {      \
        sizeof(PL_NOTE_OWNER), sizeof(pl_identity_desc),                     \
        PL_NOTE_TYPE_IDENTITY, PL_NOTE_OWNER,                                \
        {PL_ABI_MAJOR, PL_ABI_MINOR, NAME, VERSION}};                        \
    PL_MODULE_REQUIRES_CPU_AS_(pl_requires_build_note_, PL_CPU_OF_THIS_BUILD)

/* Adds CPU features (PL_CPU_* bits or'ed) to what the module needs: use
 * once, at file scope, for features that files other than the one with
 * PL_MODULE_IDENTITY are built for (-mavx512f on a kernel file, say). */
#define PL_MODULE_REQUIRES_CPU(FEATURES)                                      \
    PL_MODULE_REQUIRES_CPU_AS_(pl_requires_note_, FEATURES)

#define PL_MODULE_REQUIRES_CPU_AS_(VAR, FEATURES)                             \
    PL_NOTE_ATTRS                                                            \
    PL_NOTE_RETAIN static const pl_requires_note VAR = {                     \
        sizeof(PL_NOTE_OWNER), sizeof(pl_requires_desc),                     \
        PL_NOTE_TYPE_REQUIRES, PL_NOTE_OWNER,                                \
        {(uint32_t)((FEATURES) & 0xffffffffu), (uint32_t)((FEATURES) >> 32)}}

/* ---- types the table uses --------------------------------------------- */

/* A module's state for one runtime, created by init. Opaque to the core;
 * each module defines struct pl_module_ctx as it likes. */
typedef struct pl_module_ctx pl_module_ctx;
/* A kernel for one node (imperative mode), owned by the module. */
typedef struct pl_kernel pl_kernel;
/* A compiled subgraph (symbolic mode), owned by the module. */
typedef struct pl_compiled pl_compiled;

/* One node's share of a compiled subgraph's timed runs (ABI 1.17,
 * compiled_times). The module gives each piece of its work (a primitive,
 * a reorder, a kernel of its own) to the node it computes; a node whose
 * work is folded into another's (a fused activation, a reshape of a view)
 * has 0 in both times. */
typedef struct pl_node_time {
    uint64_t min_ns;   /* its work's time in the fastest of the timed runs */
    uint64_t total_ns; /* its work's time over all timed runs */
    uint64_t runs;     /* the timed runs (the same for every node) */
} pl_node_time;

/* compiled_times' operations. */
typedef enum pl_times_op {
    PL_TIMES_START = 1,
    PL_TIMES_READ = 2,
    PL_TIMES_STOP = 3
} pl_times_op;

/* Capability flags of a module. */
typedef enum pl_capability {
    PL_CAP_IMPERATIVE = 1u << 0,   /* get_kernel, kernel_run, kernel_release */
    PL_CAP_SYMBOLIC = 1u << 1,     /* supported_nodes, compile, run, release */
    PL_CAP_ASYNC = 1u << 2,        /* run_async */
    PL_CAP_EXPORT = 1u << 3,       /* export_compiled, import_compiled */
    PL_CAP_MODEL_IMPORT = 1u << 4, /* can_import, import_model */
    PL_CAP_HOST_MEMORY = 1u << 5,  /* its devices compute on host memory:
                                      no mem_* or copy functions needed */
    PL_CAP_PINNED_THREAD = 1u << 6, /* run its work (kernel_run, run) from one
                                       dedicated thread per device, e.g. because
                                       its library keeps a thread team per
                                       calling thread (OpenMP); the core's CPU
                                       pool then idles while it runs */
    /* ABI 1.5: a compiled subgraph (compile or import_compiled) holds no
     * pointer into the view's constant bytes once the call returns: the
     * module copied what it keeps. The core may then drop its own copy of
     * a constant that only such subgraphs read (see tensor_constant_done
     * in plinth/host.h). Imperative kernels read constants as inputs, so
     * the flag says nothing about them. */
    PL_CAP_OWNS_CONSTANTS = 1u << 7,
    /* ABI 1.6: a compiled subgraph made by import_compiled may keep
     * pointers into the blob it was given (its weights, read in place from
     * the cache entry instead of copied). A core of 1.6 or later (the host
     * table's abi_minor) then keeps the blob readable and unchanged until
     * release of that compiled subgraph returns: a cache entry stays mapped
     * (page-aligned, read-only), so the weights are the page cache's pages
     * and no fresh memory is written for them. Without the flag, or with an
     * older core, the blob is gone when import_compiled returns. */
    PL_CAP_KEEPS_BLOB = 1u << 8,
    /* ABI 1.8, with PL_CAP_PINNED_THREAD: the core may run the module's
     * steps in the application thread that runs a model, instead of handing
     * each to the dedicated thread and waiting for it. The core still makes
     * one call into the module's work (kernel_run, run) at a time, and
     * those calls come from at most two threads: the dedicated one, and
     * the first application thread that ran one of its steps in a model
     * the core runs step after step in its caller (its "home"; other
     * threads' runs still go to the dedicated thread). An OpenMP module
     * then has at most two teams, and a run of alternating backends no
     * cross-thread hand-off per step (a wake-up each way, and the caller
     * and the dedicated thread's team queued on one core: a quantized OCR
     * model ran 7.3-14 ms per process instead of 6.9). A 1.7 core ignores
     * the flag. */
    PL_CAP_RUNS_IN_CALLER = 1u << 9
} pl_capability;

/* A key/value pair of strings, borrowed for the call. */
typedef struct pl_kv {
    const char *key;
    const char *value;
} pl_kv;

/* Receives one key/value output of configure; the core copies both strings
 * before it returns. */
typedef void (*pl_kv_sink)(void *sink_ctx, const char *key, const char *value);

/* Receives the verdict on one node of supported_nodes. reason is required
 * when supported is 0 ("Conv: auto_pad SAME_LOWER not supported") and copied
 * by the core. */
typedef void (*pl_support_sink)(void *sink_ctx, size_t node_index,
                                int supported, const char *reason);

/* What running some nodes would cost on one device, in microseconds of one
 * run, split so that the core can show where the time goes (ABI 1.3,
 * estimate_cost). The core zeroes it and sets header.struct_size to its own
 * size before the call; a module fills the fields its SDK has. */
typedef struct pl_cost {
    pl_abi_header header;
    double compute_us;  /* the nodes' own work */
    double launch_us;   /* fixed per run: dispatch, binding, primitive calls */
    double boundary_us; /* bringing the inputs from, and the outputs back to,
                           the core's plain host layout (reorders, copies) */
    /* ABI 1.12: once, not per run: making the nodes' kernels or compiling
     * them as one subgraph when a session is created (JIT code generation,
     * kernel selection), in wall-clock microseconds at the runtime's
     * threads. The partitioner weighs it only for plans expected to serve
     * few runs (a staged session's tail planned for a shape that rarely
     * repeats: docs/architecture.md, "Shapes known only at run time"),
     * divided by those runs; 0 (a module of an older SDK): free. Write it
     * only when PL_ABI_HAS_FIELD(pl_cost, out, prepare_us): an older
     * core's struct ends before it. */
    double prepare_us;
} pl_cost;

/* Receives a piece of an exported binary; called any number of times, the
 * pieces concatenated make the blob. The core copies the bytes. */
typedef void (*pl_blob_sink)(void *sink_ctx, const void *bytes, size_t n);

/* What a device is. The core zeroes it and sets header.struct_size to its own
 * sizeof; the module writes only fields that struct_size covers. */
typedef struct pl_device_properties {
    pl_abi_header header;
    char name[64];          /* "Simulated accelerator 0", "NVIDIA H100" */
    int32_t device_type;    /* pl_device_type of the device's memory */
    int32_t compute_units;  /* cores, SMs, …; 0 if unknown */
    uint64_t memory_bytes;  /* device memory; 0 if unknown or host memory */
    uint64_t flags;         /* reserved, 0 */
} pl_device_properties;

/* What the caller wants written to an output of a kernel. */
typedef enum pl_output_request {
    PL_REQ_NULL = 0,    /* nobody reads it: the kernel may skip it */
    PL_REQ_WRITE = 1,   /* overwrite the buffer */
    PL_REQ_INPLACE = 2, /* the buffer aliases an input the schema allows */
    PL_REQ_ADD_TO = 3   /* accumulate: out += result */
} pl_output_request;

/* The strings of one run (ABI 1.14). Inside a graph a string tensor is an
 * int64 tensor of string ids (plinth/tensor.h, PL_TYPE_STRING): the ids of
 * the model's strings, and ids the run gives the strings it meets. A kernel
 * of an op that computes on text (StringNormalizer, StringConcat,
 * StringSplit, RegexFullMatch, com.microsoft Tokenizer, casts to and from
 * strings) reads the text of its input ids and gets ids for the strings it
 * makes through this table. Equal strings have one id in a run. Both
 * functions may be called from any thread at once. */
typedef struct pl_run_strings {
    pl_abi_header header;
    void *self;
    /* The string of ID, NUL-terminated, its length in *OUT_LEN (may be
     * NULL); NULL when ID is no string's. Valid until the run ends. */
    const char *(*get)(void *self, int64_t id, size_t *out_len);
    /* The id of S (LEN bytes, no NUL among them), new for the rest of the
     * run when the run has not met S; -1 when out of memory. */
    int64_t (*intern)(void *self, const char *s, size_t len);
} pl_run_strings;

/* Where a piece of work runs: the module's device index, the engine worker
 * (0 .. threads: the CPU pool's workers, or a thread that runs operations
 * while it waits for them) and, for accelerators, the stream the worker
 * owns (NULL on the CPU). strings (ABI 1.14; read it with
 * PL_ABI_HAS_FIELD(pl_run_context, run, strings)): the run's strings, NULL
 * when the model has no string tensors or for a piece of work outside a
 * session's run (constant folding never runs an op on text). */
typedef struct pl_run_context {
    pl_abi_header header;
    int32_t device;
    int32_t worker;
    void *stream;
    /* ---- ABI 1.14 ---- */
    const pl_run_strings *strings;
} pl_run_context;

/* pl_node_desc.flags (ABI 1.9). */
enum {
    /* The core asks only to weigh the node against the other backends that
     * take it (cost-aware placement): the verdict (a kernel or a refusal)
     * must be the one a call without the flag gives, but the kernel may
     * leave out what only running needs, such as packing constant weights
     * (its workspace need not be the real one's). The core never runs such a kernel nor offers it
     * kernel_fuse; it releases it, and asks again without the flag when
     * the node is placed on this module. A module that ignores the flag
     * answers as always. */
    PL_NODE_QUERY = 1u << 0,
};

/* One node offered to get_kernel. Input and output tensors describe dtype,
 * shape and layout; their data is NULL. An absent optional input has
 * ndim == -1. Attributes are read through host->graph with graph and
 * node_index. Everything is borrowed for the call. flags (ABI 1.9; read it
 * with PL_ABI_HAS_FIELD(pl_node_desc, node, flags), an older core's
 * description ends before it): PL_NODE_QUERY. */
typedef struct pl_node_desc {
    pl_abi_header header;
    const char *name;
    const char *op;
    const char *domain;        /* "" for the default ONNX domain */
    int64_t opset_version;
    const pl_graph_view *graph;
    size_t node_index;
    size_t n_inputs;
    const pl_tensor *inputs;
    size_t n_outputs;
    const pl_tensor *outputs;
    /* ---- ABI 1.9 ---- */
    uint32_t flags;
} pl_node_desc;

/* The arguments of one kernel or subgraph run. Tensors live on the device of
 * run->device: host memory for PL_CAP_HOST_MEMORY modules (data points at
 * the bytes), otherwise the module's own memory (data is a handle from its
 * mem_alloc and byte_offset the offset inside it). Every reader honours
 * byte_offset. Tensors are dense, row-major (strides NULL) and in plain
 * layout (layout NULL): a module's private layouts never cross the boundary.
 * An absent optional input has ndim -1 and data NULL.
 *
 * Kernels: inputs and outputs in the node's order; requests has n_outputs
 * entries; workspace is the temporary memory the kernel asked for (host
 * memory for host-memory modules, else a handle on the device), private to
 * this call. Subgraphs: inputs and outputs in the order of the compiled
 * view's input(i) and output(i); requests is NULL (always PL_REQ_WRITE);
 * constants are not passed, the module took them from the view at compile
 * time. */
typedef struct pl_run_args {
    pl_abi_header header;
    const pl_run_context *run;
    size_t n_inputs;
    const pl_tensor *inputs;
    size_t n_outputs;
    pl_tensor *outputs;
    const pl_output_request *requests;
    void *workspace;
    size_t workspace_bytes;
} pl_run_args;

/* A vendor function a module exports to applications (ABI 1.4). The
 * function's first parameter is always the module's context; SIGNATURE
 * gives the rest, one letter per type: the return type, then the
 * parameters in parentheses.
 *   i int32_t   l int64_t   f float   d double
 *   s const char * (NUL-terminated; valid during the call only; never NULL)
 *   p void * (an application buffer; may be NULL)
 *   v no value (return type only)
 * "i(is)" is `int32_t fn(pl_module_ctx *ctx, int32_t, const char *)`; at
 * most 16 parameters. NAME is [a-z0-9_]+ and unique in the module. FN is
 * the function, cast to void (*)(void); the core calls it through libffi
 * with exactly the signature's types, so the two must agree. */
typedef struct pl_extension {
    const char *name;
    const char *signature;
    void (*fn)(void);
} pl_extension;

#define PL_EXTENSION_MAX_PARAMS 16

/* ---- the module table ------------------------------------------------- */

/* What a module offers the core. A module returns a pointer to one static,
 * constant table; it must stay valid until the library is unloaded. Every
 * function receives the instance made by init. Functions a capability flag
 * names are required when the flag is set; the core checks. */
typedef struct pl_module_api {
    pl_abi_header header;

    /* identity */
    const char *name;          /* equals the identity note's name */
    const char *version;
    const char *vendor;
    uint64_t capabilities;     /* pl_capability flags */

    /* life. init creates this runtime's instance; host_ctx is the core's
     * handle for it, valid until shutdown. A refusal returns a status whose
     * message is the reason; PL_CODE_NO_DEVICE marks the module loaded but
     * without devices. shutdown frees everything of the instance. */
    pl_status *(*init)(pl_host_ctx *host_ctx, pl_module_ctx **out_ctx);
    void (*shutdown)(pl_module_ctx *ctx);

    /* devices */
    int (*device_count)(pl_module_ctx *ctx);
    pl_status *(*device_properties)(pl_module_ctx *ctx, int device,
                                    pl_device_properties *inout_props);

    /* configure: n_in key/value strings in (from backend.ini or an
     * application), any number out through `out`. An unknown key or a bad
     * value is an error whose message names the key and the accepted
     * values; a failing configure changes nothing and need output nothing.
     * Called once after init with the backend.ini section (without
     * `enabled`), and later whenever an application asks; n_in may be 0 to
     * query. The core serialises configure calls on one ctx; a module whose
     * settings other calls read while they run guards them itself. */
    pl_status *(*configure)(pl_module_ctx *ctx, const pl_kv *in, size_t n_in,
                            pl_kv_sink out, void *out_ctx);

    /* memory, on the module's devices. Pointers are the module's own handles:
     * the core never dereferences them and never does arithmetic on them,
     * hence the explicit offsets. mem_alloc: alignment is a power of two or 0
     * for the module's default (at least 64); bytes may be 0, and then a
     * distinct non-NULL handle is still returned; *out_ptr is NULL on
     * failure. mem_free of NULL is a no-op; freeing on another device than
     * the one allocated from, or twice, is a bug the module may log but must
     * survive. mem_release_all frees every buffer of that device still
     * allocated and drops cached pools. */
    pl_status *(*mem_alloc)(pl_module_ctx *ctx, int device, size_t bytes,
                            size_t alignment, void **out_ptr);
    void (*mem_free)(pl_module_ctx *ctx, int device, void *ptr);
    void (*mem_release_all)(pl_module_ctx *ctx, int device);
    pl_status *(*copy_to_device)(pl_module_ctx *ctx, int device, void *dst,
                                 size_t dst_offset, const void *src_host,
                                 size_t bytes);
    pl_status *(*copy_to_host)(pl_module_ctx *ctx, int device, void *dst_host,
                               const void *src, size_t src_offset,
                               size_t bytes);
    pl_status *(*copy_device_to_device)(pl_module_ctx *ctx, int src_device,
                                        const void *src, size_t src_offset,
                                        int dst_device, void *dst,
                                        size_t dst_offset, size_t bytes);

    /* imperative mode. get_kernel answers for one node: a kernel, or a
     * status with PL_CODE_UNSUPPORTED whose message is the reason ("dtype
     * i64", "attribute 'transA' = 1"). node->graph is a view holding the
     * node at node->node_index, for its attributes and constant inputs. The
     * kernel may ask for workspace bytes, handed to every run. kernel_run may
     * be called concurrently on one kernel (different args): it must be
     * reentrant. Run-time shapes are those given to get_kernel. The core
     * asks PL_REQ_INPLACE only for an output the op's schema lets overwrite
     * an input (the output then aliases exactly that input's bytes);
     * PL_REQ_ADD_TO outputs never overlap an input. A zero-element tensor
     * may have NULL data. node->opset_version equals the view's node_opset.
     * An absent optional input has ndim -1 in the description and
     * node_input() < 0 in the view; attributes the node does not set take
     * the ONNX default for that opset version. */
    pl_status *(*get_kernel)(pl_module_ctx *ctx, int device,
                             const pl_node_desc *node, pl_kernel **out_kernel,
                             size_t *out_workspace_bytes);
    pl_status *(*kernel_run)(pl_module_ctx *ctx, pl_kernel *kernel,
                             const pl_run_args *args);
    void (*kernel_release)(pl_module_ctx *ctx, pl_kernel *kernel);

    /* symbolic mode. supported_nodes gives one verdict per node of the
     * shape-annotated graph (a view of the whole graph; node_index is the
     * view's index) through sink, a reason with every refusal. compile turns
     * a subgraph (a view of the nodes the core assigned, in order) into a
     * pl_compiled; a failure's message says which node and why. run
     * executes it and returns when done; run_async (with PL_CAP_ASYNC)
     * returns at once and signals `done` through host->complete; an error
     * returned by run_async itself means nothing was started and `done`
     * will not be signalled. The core never runs one compiled subgraph twice
     * at once, so it may keep scratch state. export_compiled and
     * import_compiled (with PL_CAP_EXPORT) serialise a compiled subgraph for
     * the cache; import receives the same view and must refuse (with
     * PL_CODE_INCOMPATIBLE) a blob it did not write for it. */
    pl_status *(*supported_nodes)(pl_module_ctx *ctx, int device,
                                  const pl_graph_view *graph,
                                  pl_support_sink sink, void *sink_ctx);
    pl_status *(*compile)(pl_module_ctx *ctx, int device,
                          const pl_graph_view *subgraph,
                          pl_compiled **out_compiled);
    pl_status *(*run)(pl_module_ctx *ctx, pl_compiled *compiled,
                      const pl_run_args *args);
    pl_status *(*run_async)(pl_module_ctx *ctx, pl_compiled *compiled,
                            const pl_run_args *args, pl_completion *done);
    void (*release)(pl_module_ctx *ctx, pl_compiled *compiled);
    pl_status *(*export_compiled)(pl_module_ctx *ctx, pl_compiled *compiled,
                                  pl_blob_sink sink, void *sink_ctx);
    pl_status *(*import_compiled)(pl_module_ctx *ctx, int device,
                                  const pl_graph_view *subgraph,
                                  const void *blob, size_t blob_bytes,
                                  pl_compiled **out_compiled);

    /* model import (format modules). can_import looks at a path and the
     * file's first bytes and says whether this module reads it (1) or not
     * (0); import_model builds the graph through host->graph's builder. */
    int (*can_import)(pl_module_ctx *ctx, const char *path, const void *head,
                      size_t head_bytes);
    pl_status *(*import_model)(pl_module_ctx *ctx, const char *path,
                               pl_graph_builder *builder);

    /* ---- ABI 1.1 ---- */

    /* imperative mode, optional: epilogue fusion. After get_kernel made
     * KERNEL for a node P, the core may offer NEXT, a node that reads P's
     * only output and nothing else that runs (its other inputs are absent or
     * constants of the graph, readable through next->graph), when P's output
     * is read by NEXT alone, is not a graph output, NEXT has one output of
     * the same dtype and shape and NEXT was given to the same module and
     * device. Returning 1 means: from now on the kernel writes NEXT's output
     * (NEXT applied to P's result) into its output buffer, and NEXT does not
     * run; the kernel's output request then applies to that result. 0
     * declines and leaves the kernel as it was. Called before the kernel's
     * first run, never concurrently with runs of it; the core may offer the
     * consumer of NEXT next (a chain). NULL: the module fuses nothing. */
    int (*kernel_fuse)(pl_module_ctx *ctx, pl_kernel *kernel,
                       const pl_node_desc *next);

    /* ---- ABI 1.3 ---- */

    /* optional: what running NODES (indices of GRAPH, the shape-annotated
     * view of the whole graph that supported_nodes saw, in topological
     * order, every one of them accepted by this module) on DEVICE would
     * cost: for a symbolic module the nodes of one subgraph it would
     * compile, for an imperative one a single node. Fills *out, as on one
     * thread (the core divides compute and boundary by the runtime's
     * threads), and returns 1, or returns 0 for "no estimate". The partitioner weighs a
     * subgraph's estimate against the same nodes on the backends after
     * it (partition.h); a module that gives no estimate keeps the place
     * backend.ini's order gives it. plinth/cost.h has the FLOPs and bytes
     * of ONNX's common ops and the core's default rates, to scale from.
     * Called while a session is created, from one thread; keeps nothing.
     * NULL: no estimates. */
    int (*estimate_cost)(pl_module_ctx *ctx, int device, const pl_graph_view *graph,
                         const size_t *nodes, size_t n_nodes, pl_cost *out);

    /* ---- ABI 1.4 ---- */

    /* optional: the module's vendor functions, which applications call by
     * name through the core (pl_runtime_call, `plinth call`, Python's
     * rt.call). Returns the list (static, or owned by CTX until shutdown)
     * and sets *out_n; called once, after configure at load. The core
     * checks every entry (name, signature, function) and drops a bad one
     * with a diagnostic that names it; calls to one module are serialised
     * with its configure. NULL: no vendor functions. */
    const pl_extension *(*extensions)(pl_module_ctx *ctx, size_t *out_n);

    /* ---- ABI 1.17 ---- */

    /* optional: where a compiled subgraph's time goes, node by node, for the
     * core's check of a placement against measured runs ([placement]
     * measure) and for profiles (`plinth run --nodes`). OP is one of
     * pl_times_op: START times COMPILED's runs from the next one on,
     * forgetting what earlier timing kept; READ fills OUT[0..N), N being
     * the node count of the view COMPILED was made from (node i of the
     * view is OUT[i]), with what was kept since START; STOP ends timing.
     * Returns 1, or 0 when it cannot (OUT is then untouched: a blob it
     * cannot map to nodes, N not the view's count, READ before START). The
     * core never calls it while COMPILED runs, nor twice at once for one
     * COMPILED. Timing must cost a run little (a clock read a step) and
     * nothing once stopped. NULL: no node times. */
    int (*compiled_times)(pl_module_ctx *ctx, pl_compiled *compiled, int op,
                          pl_node_time *out, size_t n);
} pl_module_api;

/* The struct_size of a complete ABI 1.0 module table. The core refuses a
 * table that claims ABI 1 with less. */
#define PL_MODULE_API_SIZE_1_0 \
    (offsetof(pl_module_api, import_model) + sizeof(void (*)(void)))
/* ... and of an ABI 1.1 table (kernel_fuse). A 1.0 table reads as NULL
 * there. */
#define PL_MODULE_API_SIZE_1_1 \
    (offsetof(pl_module_api, kernel_fuse) + sizeof(void (*)(void)))
/* ... and of an ABI 1.3 table (estimate_cost; 1.2 added nothing here). */
#define PL_MODULE_API_SIZE_1_3 \
    (offsetof(pl_module_api, estimate_cost) + sizeof(void (*)(void)))
/* ... and of an ABI 1.4 table (extensions). */
#define PL_MODULE_API_SIZE_1_4 \
    (offsetof(pl_module_api, extensions) + sizeof(void (*)(void)))
/* ... and of an ABI 1.17 table (compiled_times; 1.5-1.16 added nothing
 * here). */
#define PL_MODULE_API_SIZE_1_17 \
    (offsetof(pl_module_api, compiled_times) + sizeof(void (*)(void)))

/* ---- the entry point -------------------------------------------------- */

/* The one symbol a module exports, named PL_MODULE_ENTRY_SYMBOL.
 *
 * On entry *inout_abi_major is the core's ABI major; host is the host table
 * (static, valid until unload; check host->header for the core's minor). The
 * module sets *inout_abi_major to the major it speaks and, when that is the
 * core's, *out_api to its table and returns PL_CODE_OK; otherwise it returns
 * PL_CODE_INCOMPATIBLE, so the core can name both versions. The entry point
 * does no other work: it may run before the core decides to use the module. */
typedef pl_code (*pl_module_entry_fn)(const pl_host_api *host,
                                      uint32_t *inout_abi_major,
                                      const pl_module_api **out_api);

#define PL_MODULE_ENTRY_SYMBOL "pl_module_entry"

/* Declares the entry point with the right signature and visibility. */
#define PL_MODULE_ENTRY                                                 \
    PL_MODULE_EXPORT pl_code pl_module_entry(const pl_host_api *host,   \
                                             uint32_t *inout_abi_major, \
                                             const pl_module_api **out_api)

PL_MODULE_ENTRY;

/* Defines the whole entry point for a module that keeps the host table in
 * HOST_VAR (a `const pl_host_api *` of its own) and offers the static table
 * API (a pl_module_api object, not a pointer). Use once, at file scope, in
 * one source file, as `PL_MODULE_DEFINE_ENTRY(mymod_host, mymod_api);`.
 *
 * It does what module.h asks of every entry point and nothing more: NULL
 * arguments are PL_CODE_INVALID_ARGUMENT; when the core's major (in
 * *inout_abi_major or the host table's header) is not PL_ABI_MAJOR it
 * answers PL_ABI_MAJOR and PL_CODE_INCOMPATIBLE, so the core can name both;
 * a host table shorter than ABI 1.0's (PL_HOST_API_SIZE_1_0) is
 * PL_CODE_INCOMPATIBLE too, so every ABI 1.0 host function may be called
 * without a check. Functions a later minor appended are still checked with
 * PL_ABI_HAS_FN where they are called. The exported symbol, its signature
 * and its answers are those of a hand-written entry point: a module built
 * with this macro and one built without it are the same to the core. */
#define PL_MODULE_DEFINE_ENTRY(HOST_VAR, API)                                 \
    PL_MODULE_ENTRY                                                           \
    {                                                                         \
        if (out_api != NULL)                                                  \
            *out_api = NULL;                                                  \
        if (host == NULL || inout_abi_major == NULL || out_api == NULL)       \
            return PL_CODE_INVALID_ARGUMENT;                                  \
        if (*inout_abi_major != PL_ABI_MAJOR ||                               \
            host->header.abi_major != PL_ABI_MAJOR) {                         \
            *inout_abi_major = PL_ABI_MAJOR;                                  \
            return PL_CODE_INCOMPATIBLE;                                      \
        }                                                                     \
        if (host->header.struct_size < PL_HOST_API_SIZE_1_0)                  \
            return PL_CODE_INCOMPATIBLE;                                      \
        (HOST_VAR) = host;                                                    \
        *out_api = &(API);                                                    \
        return PL_CODE_OK;                                                    \
    }                                                                         \
    typedef int pl_module_entry_defined_ /* takes the caller's semicolon */

/* Fills the field FIELD of a versioned struct P of type T that the core
 * handed over, only when the core's struct_size covers it. */
#define PL_ABI_SET(T, P, FIELD, VALUE)          \
    do {                                        \
        if (PL_ABI_HAS_FIELD(T, P, FIELD))      \
            (P)->FIELD = (VALUE);               \
    } while (0)

#ifdef __cplusplus
}
#endif

#endif /* PLINTH_MODULE_H */
