/* program.h — the execution program: what a session runs.
 *
 * Lowering a partition (pl_program_lower) turns the model's graph into
 * three typed arrays and nothing else: the devices the run touches, the
 * values it holds (one per tensor per device where the core materialises
 * it, plus kernel workspaces), and the steps that read and write them, in
 * an order where every value is made before it is read. Values and steps
 * refer to each other by index; nothing is named for the sake of another
 * stage. The planner takes the values' lifetime intervals from it
 * (pl_program_plan), compile fills in the subgraph steps
 * (pl_program_compile), the run walks the steps (run.h), and
 * pl_program_describe describes it for the tools.
 *
 * A program borrows the model's graph, the partition and the runtime; they
 * must outlive it. It is immutable once compiled, apart from the per-step
 * timing counters, so any number of runs may read it at once. */
#ifndef PL_CORE_PROGRAM_H
#define PL_CORE_PROGRAM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "graph.h"
#include "graph_view.h"
#include "log.h"
#include "optimize.h"
#include "partition.h"
#include "plan.h"
#include "registry.h"

/* A device the program uses. Device 0 is always the host (CPU memory);
 * there is no limit on the number of others. */
typedef struct pl_prog_device {
    pl_module *module;   /* NULL for the host */
    int32_t device;      /* the module's device index */
    int32_t device_type; /* pl_device_type of its memory */
    int32_t engine_key;  /* its worker queue in the engine (pl_engine_device_key) */
    char name[96];       /* "host", "example_acc:3": for messages */
} pl_prog_device;

typedef enum pl_value_kind {
    PL_VAL_ARENA,        /* planned in its device's arena */
    PL_VAL_WORKSPACE,    /* a host kernel's workspace, planned likewise */
    PL_VAL_INPUT,        /* a graph input: the caller's host buffer */
    PL_VAL_OUTPUT,       /* a graph output on the host: the caller's buffer */
    PL_VAL_CONST,        /* a constant, read where the graph holds it */
    PL_VAL_PERSIST       /* a constant uploaded to a device at creation */
} pl_value_kind;

/* A value: one tensor's bytes on one device, or a workspace. */
typedef struct pl_prog_value {
    pl_tid tensor;       /* the model's tensor (PL_TID_NONE: a workspace) */
    int32_t dev;         /* index into the program's devices */
    pl_value_kind kind;
    pl_dtype dtype;
    int32_t ndim;
    const int64_t *dims; /* the model's dims, or &ws_dim for a workspace */
    int64_t ws_dim;
    size_t bytes;
    int32_t producer;    /* the step that writes it, -1 for none */
    int32_t next;        /* the next value of the same tensor, -1 at the end */
    void *persist;       /* PL_VAL_PERSIST: the module's handle */
    size_t offset;       /* arena offset, once planned */
} pl_prog_value;

typedef enum pl_step_kind {
    PL_STEP_KERNEL,      /* an imperative module's kernel (or fused chain) */
    PL_STEP_SUBGRAPH,    /* a symbolic module's compiled subgraph */
    PL_STEP_COPY,        /* a value from one device to another */
    /* A step whose bodies are nested programs (If, Loop, Scan). A designed
     * slot: lowering makes none yet, and a run refuses one. */
    PL_STEP_CONTROL
} pl_step_kind;

typedef struct pl_prog_step {
    pl_step_kind kind;
    int32_t dev;                 /* where it runs */
    int32_t backend;             /* partition backend, -1 for copies */
    pl_module *module;           /* kernel/subgraph: the module */
    pl_nid node;                 /* kernel: the node (a fused chain's head) */
    pl_kernel *kernel;           /* kernel: borrowed from the partition */
    size_t cluster;              /* subgraph: the partition's cluster */
    pl_graph_view *view;         /* subgraph: owned */
    pl_compiled *compiled;       /* subgraph: owned, after compile */
    pl_var *compiled_var;        /* serialises runs of one compiled subgraph */
    pthread_mutex_t *run_mu;     /* ... and so does this, in sequential runs */
    const char *cache;           /* subgraph: "off", "hit", "stored", "miss" */
    const void *blob;            /* a hit of a PL_CAP_KEEPS_BLOB module: the */
    size_t blob_bytes;           /* cache entry, mapped until compiled's release */
    int32_t queue_key;           /* PL_CAP_PINNED_THREAD host step: its worker */
    int32_t *in;                 /* value per input (-1: absent) */
    size_t n_in;
    int32_t *out;                /* value per output (-1: not wanted) */
    size_t n_out;
    pl_output_request *requests; /* kernel: per output */
    int32_t workspace;           /* value, -1 none (host kernels only) */
    size_t device_workspace;     /* bytes, for kernels on accelerators */
    int32_t *reuse;              /* earlier values whose bytes its outputs reuse */
    size_t n_reuse;
    char *name;                  /* names the model's nodes, for timings and errors */
    atomic_ullong total_ns;
    atomic_ullong runs;
    atomic_ullong min_ns;        /* its fastest run that succeeded; UINT64_MAX none
                                    (a synchronous step's: measure.h) */
} pl_prog_step;

typedef struct pl_program {
    pl_runtime *rt;              /* borrowed */
    const pl_graph *g;           /* borrowed: the model's graph */
    const pl_partition *part;    /* borrowed */
    pl_prog_device *devs;
    size_t n_devs;
    pl_prog_value *values;
    size_t n_values;
    int32_t *first_value;        /* per tensor: its first value, -1 none */
    bool *live;                  /* per node: some graph output depends on it */
    pl_prog_step *steps;
    size_t n_steps;
    pl_plan *plan;               /* after pl_program_plan: one interval per planned value */
    size_t *arena_bytes;         /* per device, after pl_program_plan */
    int32_t io_dev;              /* where graph inputs and outputs live: 0 the host */
    int32_t full_dev;            /* pl_program_plan failed allocating on it; else -1 */
} pl_program;

/* Warnings gathered while a session is made (a refused cache entry, a
 * compile that fell back); each is logged as it is added. */
typedef struct pl_warnings {
    char **items;
    size_t n;
    const pl_logger *logger;     /* borrowed */
} pl_warnings;

/* Adds one warning; false only when out of memory. */
bool pl_warnings_add(pl_warnings *w, const char *fmt, ...) PL_PRINTF_LIKE(2, 3);
void pl_warnings_clear(pl_warnings *w);

/* Lowers partition PART of graph G into a new program (*OUT_PROGRAM; the
 * caller owns it even on failure, when it is NULL). Steps follow the
 * partition's units in dependency order; dead nodes get none. The graph's
 * inputs and outputs live on device IO_DEVICE of IO_MODULE (the caller's
 * arrays are bound there: readers elsewhere get copies, outputs made
 * elsewhere are copied there), or on the host when IO_MODULE is NULL or
 * computes on host memory. Fails with an error naming the tensor when a
 * tensor's size is not known, and out of memory. */
pl_status *pl_program_lower(pl_runtime *rt, const pl_graph *g, const pl_partition *part,
                            pl_module *io_module, int32_t io_device,
                            pl_program **out_program);

/* Plans the memory of the arena values from their lifetime intervals,
 * marks in-place outputs and records which earlier values each step's
 * outputs overwrite. Then uploads the constants device kernels read. ONE_SHOT:
 * the program runs once (pl_plan_interval_options.quick). */
pl_status *pl_program_plan(pl_program *p, bool one_shot);

/* Compiles every subgraph step, through the compile cache where the
 * module allows it. When a module's compile fails, *OUT_FAILED is that
 * step's index and the status its error; otherwise -1. */
pl_status *pl_program_compile(pl_program *p, pl_warnings *warnings, long *out_failed);

/* Frees P and everything it owns (compiled subgraphs, uploaded constants);
 * NULL is a no-op. */
void pl_program_destroy(pl_program *p);

/* The value of tensor T on device DEV, or -1. */
int32_t pl_program_value_of(const pl_program *p, pl_tid t, int32_t dev);
/* The value the caller's output buffer for tensor T is bound to (kind
 * PL_VAL_OUTPUT on the I/O device), or -1: for a graph output that is also
 * a graph input, a different value from the input's. */
int32_t pl_program_output_value(const pl_program *p, pl_tid t);

/* "copy" for copies, "control" for control flow, else the step's module
 * name. */
const char *pl_program_step_backend(const pl_prog_step *st);

/* Allocates BYTES of device DEV's memory through its module; a failure
 * names the device, the size and PURPOSE. */
pl_status *pl_program_dev_alloc(const pl_program *p, int32_t dev, size_t bytes,
                                const char *purpose, void **out_ptr);

/* Describes the program and its partition as one JSON document in a new
 * string (*OUT_JSON, freed with pl_free; keys at pl_session_describe).
 * MODEL_PATH, the optimiser's REWRITES and WARNINGS are included, and what
 * the core holds of the model file's CONSTANTS (NULL: none), PINNED
 * (N_PINNED of them) being the ones this session reads in place. */
pl_status *pl_program_describe(const pl_program *p, const char *model_path,
                               const pl_rewrites *rewrites, const pl_warnings *warnings,
                               struct pl_filedata *constants, const uint32_t *pinned,
                               size_t n_pinned, char **out_json);
/* The text of description ROOT (taken; NULL means out of memory) in a new
 * string *OUT_JSON, as pl_program_describe gives it. */
struct json_t;
pl_status *pl_describe_text(struct json_t *root, char **out_json);

#endif
