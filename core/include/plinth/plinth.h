/* plinth/plinth.h — the public C API of libplinth for applications.
 *
 * A pl_runtime is one configuration (backend.ini) and the modules it loaded.
 * Several runtimes may exist in one process; each has its own instance of
 * every module (modules are shared libraries, loaded once, instantiated per
 * runtime). Unless a comment says otherwise, functions on one runtime may be
 * called from any thread but not concurrently with pl_runtime_destroy. */
#ifndef PLINTH_PLINTH_H
#define PLINTH_PLINTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plinth/abi.h"
#include "plinth/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PL_VERSION_STRING "0.1.0"

/* Marks the functions libplinth exports. */
#if defined(__GNUC__) || defined(__clang__)
#define PL_API __attribute__((visibility("default")))
#else
#define PL_API
#endif

/* ---- statuses --------------------------------------------------------- */

/* The code of a status (PL_CODE_OK for NULL). */
PL_API pl_code pl_status_code(const pl_status *status);
/* The message of a status, valid until it is freed ("" for NULL). */
PL_API const char *pl_status_message(const pl_status *status);
/* Frees a status; NULL is a no-op. */
PL_API void pl_status_free(pl_status *status);
/* Makes a status; NULL for PL_CODE_OK. Never NULL otherwise, even out of
 * memory (a static status is returned, which pl_status_free ignores). */
PL_API pl_status *pl_status_create(pl_code code, const char *fmt, ...)
    PL_PRINTF_LIKE(2, 3);
/* A short name of a code: "invalid argument", "no device", … */
PL_API const char *pl_code_name(pl_code code);

/* ---- allocators ------------------------------------------------------- */

/* What an allocator is asked to do. */
typedef enum pl_allocator_command {
    /* *inout_ptr = a new block of `bytes` bytes, suitably aligned for any
     * type (as malloc's), uninitialised. */
    PL_ALLOCATOR_MALLOC = 0,
    /* The same, zero-filled. */
    PL_ALLOCATOR_CALLOC = 1,
    /* Resizes the block *inout_ptr (one this allocator made) to `bytes`,
     * keeping its contents, and stores the (possibly moved) block there. On
     * failure the old block is left as it was. */
    PL_ALLOCATOR_REALLOC = 2,
    /* Frees the block *inout_ptr (one this allocator made); bytes is 0. */
    PL_ALLOCATOR_FREE = 3,
} pl_allocator_command;

/* The one function of an allocator. Returns false when the block cannot be
 * had (out of memory, or a test's allocator refusing on purpose); FREE
 * never fails. bytes is 0 only for FREE. Called from any thread the
 * runtime runs on (the engine's workers included), so it must be
 * thread-safe. */
typedef bool (*pl_allocator_ctl_fn)(void *self, pl_allocator_command command,
                                    size_t bytes, void **inout_ptr);

/* An allocator: a function and its context, passed by value (the model is
 * IREE's iree_allocator_t). A runtime allocates everything of its own
 * through the allocator it was created with: its configuration, module
 * records, engine, and the models and sessions made from it inherit it.
 * ctl NULL means the system allocator (malloc). The context must stay
 * valid until the runtime and everything made from it (models, sessions,
 * strings returned to the caller) are gone. */
typedef struct pl_allocator {
    void *self;
    pl_allocator_ctl_fn ctl;
} pl_allocator;

/* The system allocator (malloc, calloc, realloc, free). */
PL_API pl_allocator pl_allocator_system(void);

/* ---- runtime ---------------------------------------------------------- */

typedef struct pl_runtime pl_runtime;

/* Where log lines go. The default prints to stderr. Called from any thread;
 * line has no trailing newline. */
typedef void (*pl_log_sink)(void *user, int level, const char *line);

/* Options for pl_runtime_create. Zero-initialise, then set struct_size:
 * `pl_runtime_options o = {.struct_size = sizeof o};`. */
typedef struct pl_runtime_options {
    uint32_t struct_size;
    /* backend.ini to read. NULL: $PLINTH_CONFIG, then ./backend.ini, then
     * the installed default; when none exists the runtime starts with
     * defaults and only $PLINTH_MODULE_PATH. A path given here or in
     * PLINTH_CONFIG that does not exist is an error. */
    const char *config_path;
    /* Treat the process as privileged: environment variables
     * (PLINTH_CONFIG, PLINTH_MODULE_PATH) are ignored, ./backend.ini in the
     * working folder is not read, and module paths that backend.ini writes
     * as relative paths are skipped. A setuid or setgid process is always
     * treated so. */
    bool secure_mode;
    /* Skip the environment entirely (tests, embedding). */
    bool ignore_environment;
    /* Log sink and its user pointer; NULL for stderr. */
    pl_log_sink log_sink;
    void *log_user;
    /* The CPU thread budget; 0 keeps backend.ini's `threads`. */
    int threads;
    /* The allocator of the runtime and of every model and session made
     * from it; zero (ctl NULL) for the system allocator. Statuses are not
     * counted: they are malloc'd, so that one can always be made. */
    pl_allocator allocator;
} pl_runtime_options;

/* Reads the configuration, loads every module on the module path and
 * initialises and configures each. Only a configuration that cannot be used
 * (missing file, syntax error, bad value) fails creation; a module that
 * cannot be loaded is recorded with its reason and the others still load,
 * and a runtime with no module at all is still created (it says so in its
 * diagnostics). options may be NULL. */
PL_API pl_status *pl_runtime_create(const pl_runtime_options *options,
                             pl_runtime **out_runtime);

/* Shuts every module instance down. A module library is unloaded only once
 * nothing it created is alive. NULL is a no-op. */
PL_API void pl_runtime_destroy(pl_runtime *runtime);

/* The allocator the runtime was created with (the system one when none
 * was given). */
PL_API pl_allocator pl_runtime_allocator(const pl_runtime *runtime);

/* The configuration file the runtime read, or NULL when none. */
PL_API const char *pl_runtime_config_path(const pl_runtime *runtime);

/* Diagnostics gathered while the runtime was created, one line each, in
 * order: configuration warnings ("backend.ini:12: unknown key 'thread' in
 * [runtime]") and one line per module that was not loaded ("module cuda
 * (modules.d/libplinth_cuda.so): no-device: ..."). Valid until destroy. */
PL_API size_t pl_runtime_diagnostic_count(const pl_runtime *runtime);
PL_API const char *pl_runtime_diagnostic(const pl_runtime *runtime, size_t i);

/* ---- modules ---------------------------------------------------------- */

typedef enum pl_module_status {
    PL_MODULE_LOADED = 0,    /* initialised, with at least one device */
    PL_MODULE_DISABLED = 1,  /* enabled = no in backend.ini: never opened */
    PL_MODULE_REJECTED = 2,  /* refused or failed; see reason */
    PL_MODULE_NO_DEVICE = 3  /* sound, but no usable device; see reason */
} pl_module_status;

/* "loaded", "disabled", "rejected", "no-device". */
PL_API const char *pl_module_status_name(pl_module_status status);

/* One module the runtime found. Strings are valid until the runtime is
 * destroyed. name is the identity note's name when it could be read,
 * otherwise the file name. */
typedef struct pl_module_info {
    uint32_t struct_size;
    pl_module_status status;
    const char *name;
    const char *version;       /* "" when unknown */
    const char *vendor;        /* "" when unknown */
    const char *path;          /* the file as found on the module path */
    const char *reason;        /* "" when loaded */
    uint64_t capabilities;     /* pl_capability flags (plinth/module.h) */
    int device_count;
    uint32_t abi_major;        /* from the identity note, 0 when unknown */
    uint32_t abi_minor;
} pl_module_info;

/* Number of module files found (loaded or not), in search order. */
PL_API size_t pl_runtime_module_count(const pl_runtime *runtime);

/* Fills *out_info for the I-th module. out_info->struct_size must be set. */
PL_API pl_status *pl_runtime_module_info(const pl_runtime *runtime, size_t i,
                                  pl_module_info *out_info);

/* Loads the module file PATH into the running runtime (the seeds'
 * load_acc), with every check discovery makes: owner and modes of the file
 * and its folders, the identity note, the ABI, its [NAME] section of the
 * configuration, CPU features, a sha256 pin, and the probe in a child
 * process (probe = fork). The module is listed (pl_runtime_module_info,
 * *out_index, which may be NULL) whether it loaded or not; a module that
 * did not load is an error that names the file and the reason, and
 * nothing already loaded changes. A second module of a loaded module's
 * name is refused as a duplicate. Sessions reach the module through
 * pl_session_options.order. Not concurrently with other calls on the
 * runtime. */
PL_API pl_status *pl_runtime_load_module(pl_runtime *runtime, const char *path,
                                         size_t *out_index);

/* The index of the module named NAME that is loaded or no-device, or -1. */
PL_API long pl_runtime_find_module(const pl_runtime *runtime, const char *name);

/* Name of device D of module I ("cpu", "Simulated accelerator 0"), or ""
 * when out of range. Valid until destroy. */
PL_API const char *pl_runtime_device_name(const pl_runtime *runtime, size_t i,
                                   int device);

/* The key/value outputs of module I's configure, as of its last call
 * (the one at creation, or the last pl_runtime_configure_module). Valid until
 * the next configure of that module or destroy. */
PL_API size_t pl_runtime_module_output_count(const pl_runtime *runtime, size_t i);
PL_API void pl_runtime_module_output(const pl_runtime *runtime, size_t i, size_t k,
                              const char **out_key, const char **out_value);

/* Calls module NAME's configure with N key/value pairs (N may be 0 to
 * query) and replaces its stored outputs with what it answers. Fails with
 * PL_CODE_NOT_FOUND if no loaded module has that name. Calls on one module
 * are serialised. */
PL_API pl_status *pl_runtime_configure_module(pl_runtime *runtime, const char *name,
                                       const char *const *keys,
                                       const char *const *values, size_t n);

/* ---- the compiled-subgraph cache ([runtime] cache_dir) ------------------- */

/* What the cache folder holds and what was done with it. The counters are
 * kept in the folder (its `stats` file) by every process that uses it,
 * since it was made or last cleared. */
typedef struct pl_cache_stats {
    uint32_t struct_size;
    const char *dir;    /* [runtime] cache_dir; "" when the cache is off */
    uint64_t max_bytes; /* [runtime] cache_max_mb in bytes; 0: no limit */
    uint64_t entries;   /* compiled subgraphs stored there now */
    uint64_t bytes;     /* their size */
    uint64_t hits, misses, stores, evictions, bytes_read, bytes_written;
} pl_cache_stats;

/* Fills *OUT_STATS (set struct_size first). */
PL_API pl_status *pl_runtime_cache_stats(pl_runtime *runtime, pl_cache_stats *out_stats);
/* Calls FN for each stored entry, least recently used first: its file
 * name (MODULE-KEY.blob), bytes and last use (ns since the epoch). */
typedef void (*pl_cache_entry_fn)(void *user, const char *file, uint64_t bytes,
                                  int64_t last_used_ns);
PL_API pl_status *pl_runtime_cache_list(pl_runtime *runtime, pl_cache_entry_fn fn, void *user);
/* Removes every entry, the probe verdicts and the counters; *OUT_REMOVED
 * (may be NULL) counts the entries. Not while sessions are being made. */
PL_API pl_status *pl_runtime_cache_clear(pl_runtime *runtime, uint64_t *out_removed);

/* ---- checking a module against the ABI (plinth check-module) ------------- */

/* A check's verdict. */
typedef enum pl_check_verdict {
    PL_CHECK_PASS = 0,
    PL_CHECK_FAIL = 1,
    PL_CHECK_SKIP = 2, /* does not apply to this module, or cannot run here */
    PL_CHECK_RUNNING = 3 /* no verdict: the check is about to run (so that a
                            caller that sees the module crash knows where) */
} pl_check_verdict;

/* Receives one verdict: CHECK names what was checked ("entry", "configure",
 * "memory", "kernel Relu", ...), DETAIL says what was seen, and for a
 * failure what the module did and what the ABI asks (one line). */
typedef void (*pl_check_sink)(void *user, const char *check, pl_check_verdict verdict,
                              const char *detail);

typedef struct pl_check_options {
    uint32_t struct_size;
    int device;     /* the module's device to check; -1: device 0 */
    int threads;    /* threads running one kernel at once; 0: the runtime's
                       threads + 1 (each its own engine worker number) */
    int iterations; /* runs per thread in the concurrency check; 0: 40 */
} pl_check_options;

/* Checks the module file PATH against the rules of plinth/module.h, on
 * RUNTIME: loads it there (pl_runtime_load_module: note, ABI, table, probe)
 * unless that very file is loaded already, then drives its table directly:
 * the entry point's version negotiation, the table, configure with no keys
 * and with an unknown key (refused, naming it, changing nothing),
 * statuses made through the host, its devices, device memory (zero-byte
 * allocations, copies at many offsets and sizes into poisoned buffers,
 * device-to-device copies, release_all), and for a set of probe graphs of
 * common operators: refusals carry reasons, results agree with the cpu
 * module's (when RUNTIME has one), inputs and outputs at a byte offset
 * inside poisoned buffers are honoured and nothing outside is written, one
 * kernel runs from several threads at once, and exported blobs import
 * back, while truncated and foreign blobs are refused. Every verdict goes
 * to SINK. *OUT_FAILURES counts the failed checks; *OUT_NO_DEVICE (may be
 * NULL) is set when the module is sound but has no device here, and the
 * checks that need one were skipped. An error status only when the check
 * itself cannot be made (file unreadable, a different module of that name
 * loaded, out of memory). Runs the module's code in this process: a module
 * that crashes takes the caller with it (the CLI runs it in a child). */
PL_API pl_status *pl_check_module(pl_runtime *runtime, const char *path,
                                  const pl_check_options *options, pl_check_sink sink,
                                  void *user, size_t *out_failures, bool *out_no_device);

/* ---- devices and arrays -------------------------------------------------- */

/* A device nodes can run on: every device of every loaded module that runs
 * nodes (format modules are not devices), in module order. */
typedef struct pl_device_info {
    uint32_t struct_size;
    const char *module;      /* the module's name; valid until destroy */
    int index;               /* the module's device number */
    const char *name;        /* "cpu", "Simulated accelerator 0" */
    pl_device device;        /* DLPack's device of its memory (kDLCPU for host) */
    bool host_memory;        /* its arrays are host memory */
    int32_t compute_units;   /* 0 when unknown */
    uint64_t memory_bytes;   /* 0 when unknown or host memory */
} pl_device_info;

PL_API size_t pl_runtime_device_count(const pl_runtime *runtime);
/* Fills *out_info (struct_size set) for device I. */
PL_API pl_status *pl_runtime_device_info(const pl_runtime *runtime, size_t i,
                                         pl_device_info *out_info);

/* A dense row-major tensor in one device's memory, or in host memory: what
 * MXNet calls an NDArray. Memory on a module's device is that module's
 * (allocated, copied and freed through its table; data is its handle, not
 * an address, unless the module computes on host memory). An array keeps
 * its module loaded. Copies are synchronous. Functions on one array are
 * not thread-safe against each other. */
typedef struct pl_array pl_array;

/* Allocates an array of DTYPE and shape (NDIM dims, each >= 0) on device
 * DEVICE of MODULE, or in host memory when MODULE is NULL or "host" (then
 * RUNTIME may be NULL). The contents are undefined. */
PL_API pl_status *pl_array_create(pl_runtime *runtime, const char *module, int device,
                                  pl_dtype dtype, int32_t ndim, const int64_t *dims,
                                  pl_array **out_array);
/* Drops the caller's reference; the memory goes when no DLPack export of
 * the array is alive either. NULL is a no-op. */
PL_API void pl_array_destroy(pl_array *array);
/* dtype, ndim, shape, device and data (see above), valid for the array's
 * life. */
PL_API const pl_tensor *pl_array_tensor(const pl_array *array);
/* The array's module ("host" for host memory) and device number. */
PL_API const char *pl_array_module(const pl_array *array);
PL_API int pl_array_device(const pl_array *array);
PL_API size_t pl_array_bytes(const pl_array *array);
/* Copies BYTES (exactly the array's size) from host memory into the array,
 * or out of it. */
PL_API pl_status *pl_array_copy_from_host(pl_array *array, const void *src, size_t bytes);
PL_API pl_status *pl_array_copy_to_host(const pl_array *array, void *dst, size_t bytes);
/* Copies SRC into DST (same dtype and shape) on any devices: within a
 * module by its device-to-device copy, between modules through host
 * memory. */
PL_API pl_status *pl_array_copy(pl_array *dst, const pl_array *src);

/* DLPack (v0.6 DLManagedTensor, passed as void * so this header needs no
 * DLPack). Export: a new DLManagedTensor viewing the array without a copy
 * (host memory as kDLCPU; a module's memory with the device type its
 * properties give, data its handle); the consumer calls its deleter, which
 * drops the export's reference on the array. Import: an array viewing a
 * DLManagedTensor's host memory (kDLCPU or kDLCUDAHost, row-major) without
 * a copy; the array owns the tensor and calls its deleter when it goes.
 * Other devices are refused with the reason, and the tensor stays the
 * caller's. RUNTIME may be NULL. */
PL_API pl_status *pl_array_to_dlpack(pl_array *array, void **out_managed_tensor);
/* For Python bindings without C of their own (python/plinth): the
 * destructor of a PyCapsule named "dltensor" holding a DLManagedTensor,
 * which deletes the tensor unless a consumer took it (renamed the capsule
 * "used_dltensor"). Safe while a Python error is pending. The capsule API
 * is looked up in the running interpreter; outside one it does nothing. */
PL_API void pl_dlpack_capsule_destructor(void *capsule);
PL_API pl_status *pl_array_from_dlpack(pl_runtime *runtime, void *managed_tensor,
                                       pl_array **out_array);

/* ---- eager operators -------------------------------------------------------
 *
 * One ONNX operator on arrays, as MXNet runs NDArray operators: checked at
 * once (the op, its attributes and the inputs' types, with the opset's
 * inference; opset 17 semantics), then pushed on the dependency engine and
 * run by the arrays' device: its module's imperative kernel, or a one-node
 * compiled subgraph for a module that only compiles (kernels are cached
 * per runtime). Calls on the same arrays keep their order; others
 * overlap. Errors of the run reach pl_array_wait on an output and
 * pl_runtime_wait_all; later operators that read a failed array fail too.
 * Copies and pl_array_copy_to_host wait for the array first. */

/* An attribute: TYPE 'i' (i), 'f' (f), 's' (s), 'I' (ints, n) or 'F'
 * (floats, n). */
typedef struct pl_op_attr {
    const char *name;
    char type;
    int64_t i;
    double f;
    const char *s;
    const int64_t *ints;
    const double *floats;
    size_t n;
} pl_op_attr;

/* The outputs accumulate: y += op(inputs) (the kernel's add-to request). */
#define PL_OP_ADD_TO 1u

/* Runs OP (an ONNX operator of the default domain) on N_IN input arrays
 * (NULL for an absent optional input) into N_OUT outputs: outputs[k] is an
 * array of the inferred dtype and shape, written, or NULL, and then a new
 * array on the call's device is stored there (the caller destroys it).
 * Every array must be on one device; host arrays run on cpu, or join a
 * device whose module computes on host memory. An output may not also be
 * an input. Returns at once; a status here means nothing was pushed. */
PL_API pl_status *pl_op_run(pl_runtime *runtime, const char *op, const pl_op_attr *attrs,
                            size_t n_attrs, pl_array *const *inputs, size_t n_inputs,
                            pl_array **outputs, size_t n_outputs, uint32_t flags);
/* Waits until every operator pushed on ARRAY has run; their error (the
 * first that reached it), or NULL. */
PL_API pl_status *pl_array_wait(pl_array *array);
/* Waits for everything pushed on the runtime's engine; the first failure
 * since the previous call, or NULL. */
PL_API pl_status *pl_runtime_wait_all(pl_runtime *runtime);

/* ---- vendor functions (a module's extensions, ABI 1.4) ------------------ */

/* The vendor functions module I exports, as the loader accepted them:
 * name and signature (plinth/module.h, pl_extension: "i(is)" returns an
 * int32 and takes an int32 and a string). Strings valid until destroy. */
PL_API size_t pl_runtime_extension_count(const pl_runtime *runtime, size_t i);
PL_API void pl_runtime_extension(const pl_runtime *runtime, size_t i, size_t k,
                                 const char **out_name, const char **out_signature);

/* One argument or result of a vendor call: TYPE is the signature's letter
 * ('i', 'l', 'f', 'd', 's', 'p'; 'v' for no result) and selects the member. */
typedef struct pl_value {
    char type;
    union {
        int32_t i;
        int64_t l;
        float f;
        double d;
        const char *s;
        void *p;
    } as;
} pl_value;

/* Calls vendor function NAME of loaded module MODULE with N_ARGS
 * arguments, through libffi, serialised with the module's configure. Each
 * argument's type must be the signature's letter at its place (no
 * conversions; a string may not be NULL); an unknown module or function,
 * a wrong count or a wrong type fails with a message that names the call
 * and the signature, and nothing is called. *out_result (may be NULL)
 * receives the result, type 'v' for none. */
PL_API pl_status *pl_runtime_call(pl_runtime *runtime, const char *module, const char *name,
                                  const pl_value *args, size_t n_args, pl_value *out_result);

/* ---- the runtime's settings (from [runtime] and [placement]) ------------ */

typedef enum pl_engine_kind {
    PL_ENGINE_THREADED = 0,
    PL_ENGINE_NAIVE = 1
} pl_engine_kind;

PL_API pl_engine_kind pl_runtime_engine_kind(const pl_runtime *runtime);
/* CPU threads the pool uses (the `threads` key resolved: 0 = all cores). */
PL_API int pl_runtime_thread_count(const pl_runtime *runtime);
/* The cache directory, or "" when caching is off. */
PL_API const char *pl_runtime_cache_dir(const pl_runtime *runtime);
/* [placement] order: module names in the order backends are offered nodes. */
PL_API size_t pl_runtime_placement_count(const pl_runtime *runtime);
PL_API const char *pl_runtime_placement(const pl_runtime *runtime, size_t i);

/* ---- models ------------------------------------------------------------ */

typedef struct pl_model pl_model;

/* Loads a model: Plinth's JSON graph format (docs/graph-format.md; weights in
 * a sidecar file), or any format a loaded format module reads (ONNX through
 * modules/onnx). The graph is validated and every tensor's dtype and shape
 * inferred with the runtime's opset (built-in ops and modules' custom ops).
 * Errors name the file and the node or JSON position. The model keeps the
 * runtime alive until pl_model_destroy. */
PL_API pl_status *pl_model_load(pl_runtime *runtime, const char *path,
                                pl_model **out_model);

/* Drops the caller's reference to a model; sessions keep their own. NULL is
 * a no-op. */
PL_API void pl_model_destroy(pl_model *model);

/* Gives input NAME, declared with symbolic or unknown dims, a concrete
 * shape (NDIM dims, each >= 0; fixed dims must match) and infers every type
 * again. Only before sessions are made from the model. The graph
 * optimisations then run again once, for all the inputs bound, when the
 * next session is made (or the model's counts or JSON are asked for). */
PL_API pl_status *pl_model_bind_input(pl_model *model, const char *name,
                                      int32_t ndim, const int64_t *dims);

/* Writes the model in Plinth's JSON graph format: PATH and, beside it, a
 * sidecar named like PATH with ".weights" for ".json". */
PL_API pl_status *pl_model_save_json(const pl_model *model, const char *path);

/* Number of nodes and tensors of the model's graph. */
PL_API size_t pl_model_node_count(const pl_model *model);
PL_API size_t pl_model_tensor_count(const pl_model *model);

/* Frees a string the library returned. */
PL_API void pl_string_free(char *text);

/* ---- sessions ------------------------------------------------------------
 *
 * A session is a model made ready to run: partitioned between the loaded
 * backends in [placement] order (nodes nobody takes fall back to cpu),
 * symbolic subgraphs compiled, kernels fetched for imperative nodes, copies
 * inserted where data crosses devices, and memory planned per device. Nodes
 * that no graph output depends on are placed (explain shows them) but
 * pruned: a run never runs them.
 *
 * Runs: pl_session_run may be called from several threads at once on one
 * session; the runs overlap. Each run in flight uses a run context of its
 * own (its own arenas, made on first need and kept for reuse), and the
 * engine orders the work: one compiled subgraph never runs twice at once,
 * so a second run's early subgraphs proceed while the first run's later
 * ones finish. */

typedef struct pl_session pl_session;

/* A yes/no option that zero leaves as the configuration says. */
typedef enum pl_option_flag {
    PL_OPTION_KEEP = 0, /* as [placement] says */
    PL_OPTION_NO = 1,
    PL_OPTION_YES = 2
} pl_option_flag;

/* Options for pl_session_create. Zero-initialise, then set struct_size:
 * `pl_session_options o = {.struct_size = sizeof o};`. Every field left
 * zero keeps what the runtime's [placement] section says, so placement can
 * be chosen from code without an ini file. Strings are read during
 * pl_session_create only. */
typedef struct pl_session_options {
    uint32_t struct_size;
    /* [placement] order: the backends offered the nodes, in order, each
     * "module" or "module:device". Non-NULL replaces the configuration's
     * (cpu is still the fallback). Unlike the file's, an entry naming a
     * module that is not loaded, or a device it lacks, fails creation. */
    const char *const *order;
    size_t n_order;
    /* [placement] pin: "node=backend" entries (backend as in order).
     * Non-NULL replaces the configuration's. */
    const char *const *pins;
    size_t n_pins;
    /* [placement] strict: YES fails the session when a compile fails. */
    pl_option_flag strict;
    /* [placement] choose: YES = cost, NO = first. */
    pl_option_flag choose_by_cost;
    /* [placement] min_subgraph_nodes; 0 keeps the configuration's. */
    int min_subgraph_nodes;
    /* Where the graph's inputs and outputs live: NULL or "host" (host
     * tensors, pl_session_run), or "module" / "module:device", a device
     * whose arrays pl_session_run_arrays binds as they are: the subgraphs
     * on that device read the inputs and write the outputs there, with no
     * copy through the host; nodes elsewhere get copies. A module that
     * computes on host memory means the host. */
    const char *io_device;
    /* [placement] measure: YES times the compiled subgraphs over the first
     * runs and plans once more without one that ran far slower than
     * estimated (choose = cost only; docs/architecture.md). */
    pl_option_flag measure;
} pl_session_options;

/* Creates a session for MODEL (the session keeps the model alive; the
 * caller may pl_model_destroy it at once). Fails when a node no module can run (the message names the
 * node, its op and every backend's reason), when a compile fails and
 * strict is set, or when an option is wrong (the message names it). A
 * model whose shapes are not all known (an input dim not bound, an output
 * shape that depends on values) gets a staged session: the part with
 * known shapes is planned now, the rest per distinct shape and small
 * value at run time; its outputs of open shape are read with
 * pl_session_run letting the run allocate them. options may be NULL.
 * Control-flow bodies are placed by the runtime's configuration. */
PL_API pl_status *pl_session_create(pl_model *model,
                                    const pl_session_options *options,
                                    pl_session **out_session);

/* Waits for nothing: no run may be in flight. NULL is a no-op. */
PL_API void pl_session_destroy(pl_session *session);

/* The graph inputs and outputs, their names and types (dims valid for the
 * session's life; -1 for a dim a staged session learns per run). */
PL_API size_t pl_session_input_count(const pl_session *session);
PL_API size_t pl_session_output_count(const pl_session *session);
PL_API const char *pl_session_input_name(const pl_session *session, size_t i);
PL_API const char *pl_session_output_name(const pl_session *session, size_t i);
PL_API void pl_session_input_type(const pl_session *session, size_t i,
                                  pl_dtype *out_dtype, int32_t *out_ndim,
                                  const int64_t **out_dims);
PL_API void pl_session_output_type(const pl_session *session, size_t i,
                                   pl_dtype *out_dtype, int32_t *out_ndim,
                                   const int64_t **out_dims);

/* A named host tensor for pl_session_run. */
typedef struct pl_io {
    const char *name;
    pl_tensor tensor;
} pl_io;

/* Runs the session once. inputs: every graph input, by name, as dense host
 * tensors of exactly the declared dtype and shape. outputs: the outputs
 * wanted, by name; one whose tensor.data is set is written there (its dtype
 * and shape must match); one whose data is NULL gets a new 64-byte-aligned
 * host buffer that the caller frees with pl_buffer_free, with dtype, ndim
 * and shape (pointing at the session's dims) filled in. Returns the first
 * failure of the run, naming the step that failed. Thread-safe. */
PL_API pl_status *pl_session_run(pl_session *session, const pl_io *inputs,
                                 size_t n_inputs, pl_io *outputs,
                                 size_t n_outputs);

/* Frees an output buffer pl_session_run allocated. */
PL_API void pl_buffer_free(void *data);

/* A named array for pl_session_run_arrays. */
typedef struct pl_array_io {
    const char *name;
    pl_array *array;
} pl_array_io;

/* Runs the session once on arrays, which must live where the session's
 * inputs and outputs do (session option io_device; host arrays for a host
 * session): every graph input by name, of its declared dtype and shape;
 * the outputs wanted by name, written into the array given, or, where
 * array is NULL, into a new array there that the caller destroys (left
 * NULL when the run fails). Operators pushed on the arrays finish first.
 * Nothing is copied through the host when the subgraphs run on the I/O
 * device. Thread-safe like pl_session_run, given distinct arrays. */
PL_API pl_status *pl_session_run_arrays(pl_session *session, const pl_array_io *inputs,
                                        size_t n_inputs, pl_array_io *outputs,
                                        size_t n_outputs);
/* Where the session's inputs and outputs live: "host" or "module:device". */
PL_API const char *pl_session_io_device(const pl_session *session);

/* The steps a run pushes (subgraphs, kernels, copies), with their backend
 * and the time they took over every run so far. A kernel step that runs a
 * fused chain is named for all its nodes: "conv1+relu1 (Conv+Relu, cpu)".
 * A session whose later nodes are planned at run time (a data-dependent
 * shape) lists the steps planned at creation, then the control node run to
 * learn the shapes, if any, then the steps of the part a run planned last:
 * the count grows after the first run, and those names are valid until the
 * next run that plans another part. */
PL_API size_t pl_session_step_count(const pl_session *session);
PL_API void pl_session_step_info(const pl_session *session, size_t i,
                                 const char **out_name,
                                 const char **out_backend,
                                 uint64_t *out_total_ns, uint64_t *out_runs);

/* Where the time of compiled subgraphs goes, node by node (a module with
 * ABI 1.17's compiled_times: the onednn module): with ON, each compiled
 * subgraph of the session's plan that can times its nodes from the next
 * run on, forgetting what it kept before; without, they stop. Returns how
 * many subgraphs time their nodes (0 when stopping). The times follow the
 * plan: a plan made again after measured runs ([placement] measure) times
 * its nodes from its first run. Of a staged session, the steps planned at
 * creation are timed. Call it while no run of the session is under way:
 * it does not wait for runs in flight. */
PL_API size_t pl_session_profile_nodes(pl_session *session, bool on);

/* One node's share of a compiled subgraph's timed runs. The module gives
 * each piece of its work to the node it computes; a node whose work it
 * folded into another node's (a fused activation, a reshape) has 0. */
typedef struct pl_node_profile {
    const char *node;  /* the model's node name, valid while the step is */
    const char *op;
    uint64_t min_ns;   /* its work in the fastest timed run */
    uint64_t total_ns; /* its work over all timed runs */
    uint64_t runs;     /* the timed runs */
} pl_node_profile;

/* Step I's node times (pl_session_step_info's steps), when it is a
 * compiled subgraph that times its nodes: fills OUT[0..min(count, CAP))
 * in the subgraph's node order and returns the count; 0 otherwise. CAP 0
 * asks for the count. Like pl_session_profile_nodes, not while a run of
 * the session is under way. */
PL_API size_t pl_session_step_nodes(const pl_session *session, size_t i, pl_node_profile *out,
                                    size_t cap);

/* The session's warnings, one line each: those of its creation (a compile
 * that fell back), then those its runs made (a subgraph measured slow and
 * tried elsewhere, [placement] measure). The list only grows, and a text
 * stays valid while the session lives. A staged session lists its
 * prefix's, then what the prefix and its tails planned at run time warned
 * while running, each text once (up to 64), a tail's after the shapes it
 * was planned for. */
PL_API size_t pl_session_warning_count(const pl_session *session);
PL_API const char *pl_session_warning(const pl_session *session, size_t i);

/* What the session does, as one JSON document (the core describes; the
 * tools render: `plinth explain` prints it as text, `--json` as is). Keys:
 * `model`; `optimizations`, one line per rewrite of the graph before
 * partitioning (`[graph] optimize`); `backends` in [placement] order (module, device, mode);
 * `placement`, one entry per node in execution order (node, op, backend,
 * subgraph, fused_into: the name of the node whose kernel runs it, or
 * null; reasons: every other backend's refusal, by module; outputs with
 * dtype and shape; pruned: true for a node no graph output depends on,
 * which never runs; bodies: for a control-flow node, each body's
 * placement); `subgraphs` (id, backend, nodes, inputs, outputs, cache);
 * `copies` at device boundaries (tensor, from, to, bytes); `steps` of a run
 * (name, backend, device, fused: the nodes the step runs after its own
 * node, in order); `memory.devices` (arena, lower bound and naive bytes,
 * tensors planned and in place); `warnings`. A session whose shapes are
 * known only at run time (an input dim left open, NonZero, ...) is staged:
 * its description is the part planned at creation, with `staged`
 * (tail_nodes, tails_planned, prefix, last_tail: the description of the
 * part the last run planned for its shapes, or null). Freed with
 * pl_string_free. */
PL_API pl_status *pl_session_describe(const pl_session *session, char **out_json);

#ifdef __cplusplus
}
#endif

#endif /* PLINTH_PLINTH_H */
