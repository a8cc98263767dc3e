/* plinth/abi.h — the versioning rules every struct that crosses the module
 * boundary follows, status codes, and the portability macros of the SDK.
 *
 * Rules of ABI 1.x (append-only within a major):
 *   - every table and every struct that may grow opens with pl_abi_header;
 *   - fields are only ever appended, never inserted, reordered or retyped;
 *   - a reader trusts a field only if the writer's struct_size covers it
 *     (PL_ABI_HAS_FIELD), and an optional function only if it is also non-NULL
 *     (PL_ABI_HAS_FN);
 *   - the major must match; the minor is negotiated down: each side uses only
 *     what both know.
 *
 * This header includes only standard C99 headers. */
#ifndef PLINTH_ABI_H
#define PLINTH_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI this SDK describes. A module built against this SDK announces these
 * numbers in its identity note and its module table; the core announces them
 * in its host and graph tables. Every minor appended something (sdk/README.md,
 * "ABI versions"):
 *   1.0  the foundation;
 *   1.1  pl_module_api.kernel_fuse (epilogue fusion, optional);
 *   1.2  pl_graph_api.builder_attr_graph and builder_attr_graphs (bodies of
 *        If, Loop and Scan for format modules) and builder_data_file (a
 *        format's data file mapped and checked up front);
 *   1.3  pl_module_api.estimate_cost and pl_cost (cost-aware placement,
 *        optional);
 *   1.4  pl_module_api.extensions and pl_extension (vendor functions that
 *        applications call through the core, optional);
 *   1.5  PL_CAP_OWNS_CONSTANTS, pl_graph_api.builder_constant_model_file
 *        and tensor_constant_done (the core drops its copy of a weight
 *        that modules keep their own copies of);
 *   1.6  PL_CAP_KEEPS_BLOB (an imported compiled subgraph reads the cache
 *        entry in place: the core keeps it mapped until release);
 *   1.7  pl_graph_api.constant_bytes (how much a run reads of weights:
 *        plinth/cost.h's estimates of weights that stay in cache);
 *   1.8  PL_CAP_RUNS_IN_CALLER (a pinned-thread module's steps run in the
 *        application thread of a sequential run, one call at a time);
 *   1.9  pl_node_desc.flags and PL_NODE_QUERY (get_kernel asked only to
 *        weigh a node: the kernel may skip packing weights);
 *   1.10 pl_graph_api.tensor_constant_keep (a compiled subgraph reads a
 *        weight in place: the core keeps it resident for the session);
 *   1.11 the dtypes i16, u16, u32 and u64 (plinth/tensor.h): a node with
 *        one of them is offered only to modules of 1.11 or later;
 *   1.12 pl_cost.prepare_us (what making the kernels or the compile costs
 *        once, weighed for plans that serve few runs, optional);
 *   1.13 PL_TYPE_STRING (plinth/tensor.h): string tensors at the
 *        application boundary and in the graph builder (a format module
 *        declares and fills them); modules still see only int64 ids;
 *   1.14 pl_run_context.strings and pl_run_strings (plinth/module.h): the
 *        text of a run's string ids, for the kernels of the ops that
 *        compute on text;
 *   1.15 pl_graph_api.compile_exported (whether the core will export what
 *        compile makes of a view: a compile may skip hashing it when not);
 *   1.16 pl_graph_api.compile_repeated (whether the core will compile views
 *        of the same constants again: a staged session's tails);
 *   1.17 pl_module_api.compiled_times and pl_node_time (where a compiled
 *        subgraph's time goes, node by node). */
#define PL_ABI_MAJOR 1
#define PL_ABI_MINOR 17

/* The header that opens every versioned struct. struct_size is sizeof the
 * struct as its writer compiled it; abi_major/abi_minor is the writer's SDK. */
typedef struct pl_abi_header {
    uint32_t struct_size;
    uint16_t abi_major;
    uint16_t abi_minor;
} pl_abi_header;

/* Initialiser for the header of a struct of type T, e.g.
 * `.header = PL_ABI_HEADER_INIT(pl_module_api)`. */
#define PL_ABI_HEADER_INIT(T) \
    { (uint32_t)sizeof(T), (uint16_t)PL_ABI_MAJOR, (uint16_t)PL_ABI_MINOR }

/* True when the struct pointed to by P (which opens with `header`) is large
 * enough, by its writer's struct_size, to contain FIELD of type T. */
#define PL_ABI_HAS_FIELD(T, P, FIELD)                                     \
    ((P) != NULL && (size_t)(P)->header.struct_size >=                    \
                        offsetof(T, FIELD) + sizeof(((T *)0)->FIELD))

/* True when the optional function pointer FIELD is both covered by the
 * writer's struct_size and non-NULL. */
#define PL_ABI_HAS_FN(T, P, FIELD) \
    (PL_ABI_HAS_FIELD(T, P, FIELD) && (P)->FIELD != NULL)

/* True when the struct P (which opens with `header`) was written by a side
 * that speaks ABI MAJOR.MINOR or a later minor of that major. A reader still
 * checks each field or function it uses with PL_ABI_HAS_FIELD / PL_ABI_HAS_FN:
 * the minor says what the writer knew of, the size what it filled in. */
#define PL_ABI_AT_LEAST(P, MAJOR, MINOR)                         \
    ((P) != NULL && (P)->header.abi_major == (MAJOR) &&          \
     (P)->header.abi_minor >= (MINOR))

/* Status codes. Stable numbers: new codes are appended. */
typedef enum pl_code {
    PL_CODE_OK = 0,
    PL_CODE_CANCELLED = 1,          /* the work was cancelled before it ran */
    PL_CODE_INVALID_ARGUMENT = 2,   /* bad input: malformed file, bad value */
    PL_CODE_NOT_FOUND = 3,          /* a file, module, key or node is absent */
    PL_CODE_UNSUPPORTED = 4,        /* valid, but this backend cannot do it */
    PL_CODE_INCOMPATIBLE = 5,       /* wrong ABI, architecture or format version */
    PL_CODE_OUT_OF_MEMORY = 6,      /* host or device allocation failed */
    PL_CODE_DEVICE_ERROR = 7,       /* the device or its driver failed */
    PL_CODE_NO_DEVICE = 8,          /* the module is sound but has no usable device */
    PL_CODE_PERMISSION_DENIED = 9,  /* refused for safety (file modes, links) */
    PL_CODE_FAILED_PRECONDITION = 10, /* called in the wrong state */
    PL_CODE_IO_ERROR = 11,          /* reading or writing a file failed */
    PL_CODE_INTERNAL = 12           /* a bug: an invariant did not hold */
} pl_code;

/* An error: a code and a message a user can act on. Opaque; always created by
 * the core (the host table's status_create for modules), so the core frees
 * every status with the allocator that made it. NULL means success. */
typedef struct pl_status pl_status;

/* Marks the one symbol a module exports. Modules are built with
 * -fvisibility=hidden so that nothing else leaks out. */
#if defined(__GNUC__) || defined(__clang__)
#define PL_MODULE_EXPORT __attribute__((visibility("default")))
#define PL_PRINTF_LIKE(fmt_index, first_arg) \
    __attribute__((format(printf, fmt_index, first_arg)))
#else
#define PL_MODULE_EXPORT
#define PL_PRINTF_LIKE(fmt_index, first_arg)
#endif

#ifdef __cplusplus
}
#endif

#endif /* PLINTH_ABI_H */
