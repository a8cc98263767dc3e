/* test_alloc_sweep.c — allocation-failure sweeps over the load paths, as
 * SQLite tests itself: for N = 1, 2, … a failing allocator
 * (tests/failing_allocator.h) refuses the Nth allocation and every later
 * one, the call under test must fail with PL_CODE_OUT_OF_MEMORY and leave
 * nothing behind (the ASan build checks for leaks at exit), and the sweep
 * ends at the first N the call never reached, which must succeed and work.
 *
 * The failing allocator is a runtime's own (pl_runtime_options.allocator):
 * runtime creation (configuration, loader, module records, engine), model
 * load (JSON and ONNX) and session creation (partition, plan, steps) are
 * each swept through it. Session, plan and partition do not take the
 * runtime's allocator yet; until they do, the session sweep also makes the
 * failing allocator the thread's current one, which is what they allocate
 * through (alloc.h). Each case prints how many allocations it swept.
 *
 * Usage: test_alloc_sweep CASE STAGE_DIR SOURCE_DIR ONNX_TESTDATA_DIR */
#define _GNU_SOURCE
#include <jansson.h>
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "../failing_allocator.h"
#include "../harness.h"

#define SWEEP_LIMIT 100000

static pl_failing_allocator fa;

/* Fails the case unless ST is an out-of-memory status; frees it. */
static void expect_oom(pl_status *st, const char *what, long n)
{
    TH_CHECK(st != NULL, "%s: allocation %d refused, yet it succeeded", what, (int)n);
    if (pl_status_code(st) != PL_CODE_OUT_OF_MEMORY)
        th_fail(__FILE__, __LINE__, "%s: allocation %ld refused: got %s: %s", what, n,
                pl_code_name(pl_status_code(st)), pl_status_message(st));
    pl_status_free(st);
}

/* A configuration that reaches every part of the reader and the loader:
 * four modules by file (json reads the JSON models), placement with a pin,
 * a module section with keys, a probe of each module in a child, a pin
 * naming no module, a duplicate key, a continuation line, and unknown keys
 * (warnings). */
static const char *write_config(const char *acc_first)
{
    const char *stage = th_arg(0);
    const char *dir = th_tempdir();
    const char *ini = th_path(dir, "backend.ini");
    char text[4096];
    snprintf(text, sizeof text,
             "[runtime]\n"
             "modules = %s/libplinth_cpu.so, %s/libplinth_onnx.so,\n"
             "  %s/libplinth_example_acc.so, %s/libplinth_json.so\n"
             "threads = 2\n"
             "threads = 2\n"
             "colour = blue\n"
             "probe = fork\n"
             "probe_timeout_ms = 5000\n"
             "[placement]\n"
             "order = %s\n"
             "min_subgraph_nodes = 1\n"
             "[example_acc]\n"
             "devices = 2\n"
             "[modules]\n"
             "sha256.nosuchmodule = "
             "0000000000000000000000000000000000000000000000000000000000000000\n"
             "[cpu]\n"
             "enabled = yes\n"
             "[nosuchmodule]\n"
             "enabled = auto\n",
             stage, stage, stage, stage, acc_first ? acc_first : "cpu, example_acc");
    th_write_file(ini, text, 0644);
    return ini;
}

/* Sets up the failing allocator; with PL_SWEEP_TRACE=FILE in the
 * environment, the stack of each sweep step's refused allocation is
 * appended to FILE (see failing_allocator.h). */
static void fa_init(void)
{
    pl_failing_allocator_init(&fa, pl_allocator_system());
    const char *trace = getenv("PL_SWEEP_TRACE");
    if (trace != NULL && trace[0] != '\0') {
        fa.trace = fopen(trace, "a");
        TH_CHECK(fa.trace != NULL, "cannot open %s", trace);
        setvbuf(fa.trace, NULL, _IOLBF, 0);
    }
}

static pl_runtime_options options_for(const char *ini)
{
    pl_runtime_options o = {.struct_size = sizeof o,
                            .config_path = ini,
                            .ignore_environment = true,
                            .allocator = pl_failing_allocator_value(&fa)};
    return o;
}

static void need_stage(void)
{
    /* A sweep makes hundreds of runtimes or sessions; under ASan that is
     * longer than the harness's 60-second watchdog (CTest's timeout still
     * applies). */
    alarm(540);
    const char *stage = th_arg(0);
    const char *libs[] = {"libplinth_cpu.so", "libplinth_onnx.so",
                          "libplinth_example_acc.so", "libplinth_json.so"};
    for (size_t i = 0; i < 4; i++)
        if (access(th_path(stage, libs[i]), R_OK) != 0)
            th_skip("%s is not staged in %s", libs[i], stage);
}

/* ---- runtime creation ----------------------------------------------------- */

static void case_runtime_create(void)
{
    need_stage();
    const char *ini = write_config(NULL);
    fa_init();
    pl_runtime_options o = options_for(ini);
    long n;
    for (n = 1; n < SWEEP_LIMIT; n++) {
        pl_runtime *rt = (pl_runtime *)&o;
        pl_failing_allocator_arm(&fa, n);
        pl_status *st = pl_runtime_create(&o, &rt);
        long refused = pl_failing_allocator_refused(&fa);
        pl_failing_allocator_arm(&fa, 0);
        if (refused == 0) {
            TH_CHECK_OK(st);
            TH_CHECK(rt != NULL, "no runtime");
            TH_CHECK(pl_runtime_module_count(rt) == 4, "%zu modules",
                     pl_runtime_module_count(rt));
            for (size_t i = 0; i < 4; i++) {
                pl_module_info info = {.struct_size = sizeof info};
                TH_CHECK_OK(pl_runtime_module_info(rt, i, &info));
                TH_CHECK(info.status == PL_MODULE_LOADED, "module %s: %s", info.name,
                         info.reason);
            }
            TH_CHECK(pl_runtime_diagnostic_count(rt) >= 3, "%zu diagnostics",
                     pl_runtime_diagnostic_count(rt));
            pl_runtime_destroy(rt);
            break;
        }
        if (st == NULL) {
            for (size_t i = 0; i < pl_runtime_diagnostic_count(rt); i++)
                fprintf(stderr, "diagnostic: %s\n", pl_runtime_diagnostic(rt, i));
            th_fail(__FILE__, __LINE__,
                    "allocation %ld was refused, yet the runtime was made", n);
        }
        TH_CHECK(rt == NULL, "a runtime came back with a failure");
        expect_oom(st, "runtime creation", n);
    }
    printf("runtime creation: %ld allocations swept\n", n - 1);
    TH_CHECK(n > 50, "only %ld allocations: the sweep reached too little", n - 1);
}

/* ---- model load ----------------------------------------------------------- */

/* A runtime on the failing allocator, made while it is disarmed. */
static pl_runtime *sweep_runtime(const char *placement)
{
    need_stage();
    const char *ini = write_config(placement);
    fa_init();
    pl_runtime_options o = options_for(ini);
    pl_runtime *rt = NULL;
    TH_CHECK_OK(pl_runtime_create(&o, &rt));
    th_watch(rt);
    return rt;
}

static long sweep_model_load(pl_runtime *rt, const char *path, const char *what)
{
    long n;
    for (n = 1; n < SWEEP_LIMIT; n++) {
        pl_model *m = (pl_model *)rt;
        pl_failing_allocator_arm(&fa, n);
        pl_status *st = pl_model_load(rt, path, &m);
        long refused = pl_failing_allocator_refused(&fa);
        pl_failing_allocator_arm(&fa, 0);
        if (refused == 0) {
            TH_CHECK_OK(st);
            TH_CHECK(m != NULL && pl_model_node_count(m) > 0, "empty model");
            pl_model_destroy(m);
            break;
        }
        if (st == NULL)
            th_fail(__FILE__, __LINE__,
                    "%s: allocation %ld was refused, yet the load succeeded", what, n);
        TH_CHECK(m == NULL, "a model came back with a failure");
        expect_oom(st, what, n);
    }
    printf("%s: %ld allocations swept\n", what, n - 1);
    TH_CHECK(n > 20, "only %ld allocations: the sweep reached too little", n - 1);
    return n - 1;
}

static void case_model_load_json(void)
{
    pl_runtime *rt = sweep_runtime(NULL);
    sweep_model_load(rt, th_path(th_arg(1), "examples/cnn/model.json"), "model load (JSON)");
    th_watch(NULL);
    pl_runtime_destroy(rt);
}

/* A load that folds constants: a Constant node's value, transposed, feeds
 * a MatMul. The folding session (graph, partition, program, run) is made
 * and run inside the load, so the sweep reaches all of it. */
static void case_model_load_fold(void)
{
    char values[2048];
    size_t len = 0;
    for (int k = 0; k < 96; k++)
        len += (size_t)snprintf(values + len, sizeof values - len, "%s%d", k ? "," : "",
                                k % 7 - 3);
    char text[4096];
    snprintf(text, sizeof text,
             "{\"format\":\"plinth-graph\",\"version\":1,"
             "\"opset_import\":[{\"domain\":\"\",\"version\":13}],"
             "\"inputs\":[\"x\"],\"outputs\":[\"y\"],"
             "\"tensors\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[2,12]}],"
             "\"nodes\":[{\"name\":\"k\",\"op\":\"Constant\",\"inputs\":[],\"outputs\":[\"wt\"],"
             "\"attributes\":{\"value\":{\"tensor\":{\"dtype\":\"f32\",\"shape\":[8,12],"
             "\"values\":[%s]}}}},"
             "{\"name\":\"tr\",\"op\":\"Transpose\",\"inputs\":[\"wt\"],\"outputs\":[\"w\"]},"
             "{\"name\":\"mm\",\"op\":\"MatMul\",\"inputs\":[\"x\",\"w\"],"
             "\"outputs\":[\"y\"]}]}",
             values);
    const char *path = th_path(th_tempdir(), "fold.json");
    th_write_file(path, text, 0644);
    pl_runtime *rt = sweep_runtime("cpu");
    sweep_model_load(rt, path, "model load (constant folding)");
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, path, &m));
    TH_CHECK(pl_model_node_count(m) == 1, "%zu nodes: the constants were not folded",
             pl_model_node_count(m));
    pl_model_destroy(m);
    th_watch(NULL);
    pl_runtime_destroy(rt);
}

/* The rewrites before folding (algebra.c), every allocation failing in
 * turn: a batch norm taken into its Conv, a Gather of a known dim out of
 * a Shape of a symbolic-batch tensor, a MatMul + Add made a Gemm, a dead
 * node removed; then folding runs the arithmetic they left. */
static void case_model_load_prefold(void)
{
#define PF_CONST(name, dtype, shape, values)                                                    \
    "{\"name\":\"" name "\",\"op\":\"Constant\",\"inputs\":[],\"outputs\":[\"" name "\"],"     \
    "\"attributes\":{\"value\":{\"tensor\":{\"dtype\":\"" dtype "\",\"shape\":" shape ","      \
    "\"values\":" values "}}}},"
    static const char text[] =
        "{\"format\":\"plinth-graph\",\"version\":1,"
        "\"opset_import\":[{\"domain\":\"\",\"version\":13}],"
        "\"inputs\":[\"x\"],\"outputs\":[\"out\"],"
        "\"tensors\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[-1,2,3,3],"
        "\"dim_params\":[\"b\",null,null,null]}],"
        "\"nodes\":["
        PF_CONST("w", "f32", "[4,2,1,1]", "[1,2,3,4,5,6,7,8]")
        PF_CONST("s", "f32", "[4]", "[1,2,0.5,1]")
        PF_CONST("sh", "f32", "[4]", "[0,1,0,-1]")
        PF_CONST("mu", "f32", "[4]", "[0.5,0,0,1]")
        PF_CONST("var", "f32", "[4]", "[1,4,1,2]")
        PF_CONST("one", "i64", "[]", "[1]")
        PF_CONST("ax", "i64", "[1]", "[0]")
        PF_CONST("m1", "i64", "[1]", "[-1]")
        PF_CONST("w2", "f32", "[4,3]", "[1,0,0,0,1,0,0,0,1,1,1,1]")
        PF_CONST("bias", "f32", "[3]", "[0.5,-0.5,0]")
        "{\"name\":\"conv\",\"op\":\"Conv\",\"inputs\":[\"x\",\"w\"],\"outputs\":[\"c\"]},"
        "{\"name\":\"bn\",\"op\":\"BatchNormalization\","
        "\"inputs\":[\"c\",\"s\",\"sh\",\"mu\",\"var\"],\"outputs\":[\"n\"]},"
        "{\"name\":\"shape\",\"op\":\"Shape\",\"inputs\":[\"n\"],\"outputs\":[\"s1\"]},"
        "{\"name\":\"g\",\"op\":\"Gather\",\"inputs\":[\"s1\",\"one\"],\"outputs\":[\"d\"]},"
        "{\"name\":\"un\",\"op\":\"Unsqueeze\",\"inputs\":[\"d\",\"ax\"],\"outputs\":[\"u\"]},"
        "{\"name\":\"cat\",\"op\":\"Concat\",\"inputs\":[\"m1\",\"u\"],\"outputs\":[\"tgt\"],"
        "\"attributes\":{\"axis\":{\"int\":0}}},"
        "{\"name\":\"rs\",\"op\":\"Reshape\",\"inputs\":[\"n\",\"tgt\"],\"outputs\":[\"flat\"]},"
        "{\"name\":\"mm\",\"op\":\"MatMul\",\"inputs\":[\"flat\",\"w2\"],\"outputs\":[\"p\"]},"
        "{\"name\":\"add\",\"op\":\"Add\",\"inputs\":[\"p\",\"bias\"],\"outputs\":[\"out\"]},"
        "{\"name\":\"dead\",\"op\":\"Neg\",\"inputs\":[\"x\"],\"outputs\":[\"unread\"]}]}";
#undef PF_CONST
    const char *path = th_path(th_tempdir(), "prefold.json");
    th_write_file(path, text, 0644);
    pl_runtime *rt = sweep_runtime("cpu");
    sweep_model_load(rt, path, "model load (rewrites before folding)");
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, path, &m));
    /* conv (the batch norm in it), rs (Shape, Gather, Unsqueeze and
     * Concat became its constant shape), mm (a Gemm with the Add). */
    TH_CHECK(pl_model_node_count(m) == 3, "%zu nodes: want conv, rs and mm",
             pl_model_node_count(m));
    pl_model_destroy(m);
    th_watch(NULL);
    pl_runtime_destroy(rt);
}

static void case_model_load_onnx(void)
{
    const char *model = th_path(th_arg(2), "pytorch-converted/test_Conv2d/model.onnx");
    if (access(model, R_OK) != 0)
        th_skip("%s is missing (Debian's libonnx-testdata)", model);
    pl_runtime *rt = sweep_runtime(NULL);
    sweep_model_load(rt, model, "model load (ONNX)");
    th_watch(NULL);
    pl_runtime_destroy(rt);
}

/* ---- session creation ----------------------------------------------------- */

/* Runs S once on a fixed input; returns the first output (caller frees with
 * pl_buffer_free) and its element count. */
static float *run_once(pl_session *s, size_t *out_count)
{
    TH_CHECK(pl_session_input_count(s) == 1, "one input expected");
    pl_dtype dt;
    int32_t ndim;
    const int64_t *dims;
    pl_session_input_type(s, 0, &dt, &ndim, &dims);
    size_t count = 1;
    for (int32_t d = 0; d < ndim; d++)
        count *= (size_t)dims[d];
    float *x = malloc(count * sizeof *x);
    TH_CHECK(x != NULL, "out of memory");
    for (size_t i = 0; i < count; i++)
        x[i] = (float)((i * 7919u) % 101u) / 50.0f - 1.0f;
    pl_io in = {.name = pl_session_input_name(s, 0),
                .tensor = {.data = x, .ndim = ndim, .dtype = dt,
                           .shape = (int64_t *)dims, .struct_size = sizeof(pl_tensor)}};
    pl_io out = {.name = pl_session_output_name(s, 0),
                 .tensor = {.struct_size = sizeof(pl_tensor)}};
    TH_CHECK_OK(pl_session_run(s, &in, 1, &out, 1));
    free(x);
    size_t n = 1;
    for (int32_t d = 0; d < out.tensor.ndim; d++)
        n *= (size_t)out.tensor.shape[d];
    *out_count = n;
    return out.tensor.data;
}

static void sweep_session(const char *placement, const char *model_path, const char *what)
{
    pl_runtime *rt = sweep_runtime(placement);
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, model_path, &m));
    pl_session *ref = NULL;
    TH_CHECK_OK(pl_session_create(m, NULL, &ref));
    size_t n_ref = 0;
    float *want = run_once(ref, &n_ref);
    long n;
    for (n = 1; n < SWEEP_LIMIT; n++) {
        pl_session *s = (pl_session *)rt;
        pl_failing_allocator_arm(&fa, n);
        /* Nothing made current here: the session must take the model's
         * allocator on its own. */
        pl_status *st = pl_session_create(m, NULL, &s);
        long refused = pl_failing_allocator_refused(&fa);
        pl_failing_allocator_arm(&fa, 0);
        if (refused == 0) {
            TH_CHECK_OK(st);
            size_t n_got = 0;
            float *got = run_once(s, &n_got);
            TH_CHECK(n_got == n_ref, "%zu outputs, want %zu", n_got, n_ref);
            for (size_t i = 0; i < n_ref; i++)
                TH_CHECK(fabsf(got[i] - want[i]) <= 1e-5f * (1.0f + fabsf(want[i])),
                         "output %zu: %g, want %g", i, got[i], want[i]);
            pl_buffer_free(got);
            pl_session_destroy(s);
            break;
        }
        if (st == NULL)
            th_fail(__FILE__, __LINE__,
                    "%s: allocation %ld was refused, yet the session was made", what, n);
        TH_CHECK(s == NULL, "a session came back with a failure");
        expect_oom(st, what, n);
    }
    printf("%s: %ld allocations swept\n", what, n - 1);
    TH_CHECK(n > 50, "only %ld allocations: the sweep reached too little", n - 1);
    pl_buffer_free(want);
    pl_session_destroy(ref);
    pl_model_destroy(m);
    th_watch(NULL);
    pl_runtime_destroy(rt);
}

static void case_session_create_cpu(void)
{
    sweep_session("cpu", th_path(th_arg(1), "examples/cnn/model.json"),
                  "session creation (cpu)");
}

/* Spread over the simulated accelerator and cpu: subgraphs, copies at the
 * boundaries, two devices' plans. */
static void case_session_create_acc(void)
{
    sweep_session("example_acc, cpu", th_path(th_arg(1), "examples/mlp/model.json"),
                  "session creation (example_acc + cpu)");
}

/* Another runtime in the process allocates normally while one runtime's
 * allocator refuses everything: the failure switch is per runtime. */
static void case_per_runtime(void)
{
    pl_runtime *rt = sweep_runtime(NULL);
    pl_runtime *plain = NULL;
    /* Options as an application built before the allocator field passes
     * them: the runtime takes the system allocator. */
    pl_runtime_options o = {.struct_size = offsetof(pl_runtime_options, allocator),
                            .config_path = th_path(th_tempdir(), "x.ini"),
                            .ignore_environment = true,
                            .allocator = pl_failing_allocator_value(&fa)};
    char plain_ini[4096];
    snprintf(plain_ini, sizeof plain_ini, "[runtime]\nmodules = %s/libplinth_json.so\n",
             th_arg(0));
    th_write_file(o.config_path, plain_ini, 0644);
    TH_CHECK_OK(pl_runtime_create(&o, &plain));
    const char *json = th_path(th_arg(1), "examples/mlp/model.json");
    pl_failing_allocator_arm(&fa, 1);
    pl_model *m = NULL;
    expect_oom(pl_model_load(rt, json, &m), "load on the failing runtime", 1);
    TH_CHECK(pl_failing_allocator_refused(&fa) > 0, "nothing was refused");
    long before = pl_failing_allocator_count(&fa);
    TH_CHECK_OK(pl_model_load(plain, json, &m));
    TH_CHECK(pl_failing_allocator_count(&fa) == before,
             "the plain runtime's load went through the other runtime's allocator");
    pl_failing_allocator_arm(&fa, 0);
    pl_model_destroy(m);
    TH_CHECK(pl_runtime_allocator(plain).ctl == pl_allocator_system().ctl,
             "an old-sized options struct did not get the system allocator");
    TH_CHECK(pl_runtime_allocator(rt).self == &fa, "the runtime lost its allocator");
    pl_runtime_destroy(plain);
    th_watch(NULL);
    pl_runtime_destroy(rt);
}

/* Runs fail cleanly too: the engine's ops and variables come from the
 * runtime's allocator, run contexts from the current one. After each
 * failed run the session still runs correctly. */
static void case_session_run(void)
{
    pl_runtime *rt = sweep_runtime("example_acc, cpu");
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, th_path(th_arg(1), "examples/mlp/model.json"), &m));
    pl_session *s = NULL;
    TH_CHECK_OK(pl_session_create(m, NULL, &s));
    pl_dtype dt;
    int32_t ndim;
    const int64_t *dims;
    pl_session_input_type(s, 0, &dt, &ndim, &dims);
    size_t count = 1;
    for (int32_t d = 0; d < ndim; d++)
        count *= (size_t)dims[d];
    float *x = calloc(count, sizeof *x);
    TH_CHECK(x != NULL, "out of memory");
    for (size_t i = 0; i < count; i++)
        x[i] = (float)(i % 13) / 6.0f - 1.0f;
    pl_io in = {.name = pl_session_input_name(s, 0),
                .tensor = {.data = x, .ndim = ndim, .dtype = dt,
                           .shape = (int64_t *)dims, .struct_size = sizeof(pl_tensor)}};
    size_t n_want = 0;
    float *want = NULL;
    long n;
    for (n = 0; n < SWEEP_LIMIT; n++) {
        pl_io out = {.name = pl_session_output_name(s, 0),
                     .tensor = {.struct_size = sizeof(pl_tensor)}};
        /* n = 0: the reference run, which also makes the first run
         * context; later runs reuse it, so the sweep reaches what every
         * run allocates. */
        pl_failing_allocator_arm(&fa, n);
        pl_status *st = pl_session_run(s, &in, 1, &out, 1);
        long refused = pl_failing_allocator_refused(&fa);
        pl_failing_allocator_arm(&fa, 0);
        if (refused == 0) {
            TH_CHECK_OK(st);
            size_t got = 1;
            for (int32_t d = 0; d < out.tensor.ndim; d++)
                got *= (size_t)out.tensor.shape[d];
            if (want == NULL) {
                want = out.tensor.data;
                n_want = got;
                continue;
            }
            TH_CHECK(got == n_want, "%zu outputs, want %zu", got, n_want);
            TH_CHECK(memcmp(out.tensor.data, want, got * sizeof *want) == 0,
                     "the output differs from the reference run");
            pl_buffer_free(out.tensor.data);
            break;
        }
        if (st == NULL)
            th_fail(__FILE__, __LINE__, "run: allocation %ld was refused, yet it succeeded", n);
        TH_CHECK(out.tensor.data == NULL, "an output buffer came back with a failure");
        expect_oom(st, "session run", n);
    }
    printf("session run: %ld allocations swept\n", n - 1);
    TH_CHECK(n > 2, "only %ld allocations: the sweep reached too little", n - 1);
    pl_buffer_free(want);
    free(x);
    pl_session_destroy(s);
    pl_model_destroy(m);
    th_watch(NULL);
    pl_runtime_destroy(rt);
}

/* ---- control flow ----------------------------------------------------------- */

/* tests/control/control_flow.json: a Loop of 4 trips (trip count a constant)
 * carrying a value, with a scan output and in its body an If that takes
 * then_branch for the first 2 trips and else_branch after; an If on the
 * sign of sum(x) (then_branch for x_pos, else_branch for x_neg); and a Scan
 * over the Loop's rows. Bodies read tensors one and two scopes out. Its 24
 * bytes of constants are written next to a copy of it, so nothing binary
 * is committed. */
#define CF_OUTPUTS 4
static const char *const cf_outputs[CF_OUTPUTS] = {"y", "rows", "s", "ys"};
static const float cf_x_pos[3] = {1.0f, -0.5f, 2.0f};
static const float cf_x_neg[3] = {-1.0f, 0.25f, -2.0f};

static const char *control_model(void)
{
    const char *dir = th_tempdir();
    const char *json = th_path(dir, "control_flow.json");
    th_copy_file(th_path(th_arg(1), "tests/control/control_flow.json"), json, 0644);
    struct {
        int64_t trips, two;
        float half, zero;
    } w = {4, 2, 0.5f, 0.0f};
    _Static_assert(sizeof w == 24, "the sidecar is 24 bytes");
    FILE *f = fopen(th_path(dir, "control_flow.weights"), "wb");
    TH_CHECK(f != NULL && fwrite(&w, sizeof w, 1, f) == 1 && fclose(f) == 0,
             "cannot write the sidecar");
    return json;
}

/* The outputs of one run of the control-flow model, flattened. */
typedef struct cf_result {
    float v[64];
    size_t n;
} cf_result;

/* Runs S on X; on success fills *OUT. Returns the run's status; an output
 * buffer never survives a failure. */
static pl_status *cf_run(pl_session *s, const float *x, cf_result *out)
{
    int64_t dims[1] = {3};
    pl_io in = {.name = "x",
                .tensor = {.data = (void *)x, .ndim = 1, .dtype = PL_DTYPE_F32,
                           .shape = dims, .struct_size = sizeof(pl_tensor)}};
    pl_io outs[CF_OUTPUTS];
    for (int k = 0; k < CF_OUTPUTS; k++)
        outs[k] = (pl_io){.name = cf_outputs[k], .tensor = {.struct_size = sizeof(pl_tensor)}};
    pl_status *st = pl_session_run(s, &in, 1, outs, CF_OUTPUTS);
    if (st != NULL) {
        for (int k = 0; k < CF_OUTPUTS; k++)
            TH_CHECK(outs[k].tensor.data == NULL,
                     "output %s came back with a failed run", cf_outputs[k]);
        return st;
    }
    out->n = 0;
    for (int k = 0; k < CF_OUTPUTS; k++) {
        size_t n = 1;
        for (int32_t d = 0; d < outs[k].tensor.ndim; d++)
            n *= (size_t)outs[k].tensor.shape[d];
        TH_CHECK(outs[k].tensor.dtype.code == PL_TYPE_FLOAT && outs[k].tensor.dtype.bits == 32 &&
                     out->n + n <= 64,
                 "output %s: %zu values", cf_outputs[k], n);
        memcpy(out->v + out->n, outs[k].tensor.data, n * sizeof(float));
        out->n += n;
        pl_buffer_free(outs[k].tensor.data);
    }
    return NULL;
}

static void cf_expect_equal(const cf_result *got, const cf_result *want, const char *what)
{
    TH_CHECK(got->n == want->n, "%s: %zu values, want %zu", what, got->n, want->n);
    TH_CHECK(memcmp(got->v, want->v, want->n * sizeof(float)) == 0,
             "%s: the outputs differ from the reference run", what);
}

/* The model's own numbers, worked by hand, so that the reference run is
 * itself right: y = 1.75x or 0.25x, s = 5x or -3x + ... (see the model). */
static void cf_check_reference(const cf_result *r, const float *x, bool positive)
{
    TH_CHECK(r->n == 3 + 12 + 3 + 12, "%zu values", r->n);
    for (int i = 0; i < 3; i++) {
        float acc = 0.75f * x[i];
        float y = positive ? acc + x[i] : acc - x[i];
        TH_CHECK(r->v[i] == y, "y[%d] = %g, want %g", i, r->v[i], y);
        float rows[4] = {x[i], 2.0f * x[i], 0.5f * x[i], -0.25f * x[i]};
        float st = y;
        for (int t = 0; t < 4; t++) {
            TH_CHECK(r->v[3 + 3 * t + i] == rows[t], "rows[%d][%d] = %g, want %g", t, i,
                     r->v[3 + 3 * t + i], rows[t]);
            st += rows[t];
            TH_CHECK(r->v[18 + 3 * t + i] == 0.5f * st, "ys[%d][%d] = %g, want %g", t, i,
                     r->v[18 + 3 * t + i], 0.5f * st);
        }
        TH_CHECK(r->v[15 + i] == st, "s[%d] = %g, want %g", i, r->v[15 + i], st);
    }
}

/* Loading a model with bodies (If inside Loop, If, Scan) fails cleanly at
 * every allocation. */
static void case_model_load_control(void)
{
    pl_runtime *rt = sweep_runtime("cpu");
    sweep_model_load(rt, control_model(), "model load (control flow)");
    th_watch(NULL);
    pl_runtime_destroy(rt);
}

/* Session creation over a model with control flow: the control backend
 * compiles each body into a nested program (and an If's both branches);
 * every allocation refused in turn fails cleanly, and the first session
 * made runs both inputs to the reference outputs. */
static void case_session_create_control(void)
{
    pl_runtime *rt = sweep_runtime("cpu");
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, control_model(), &m));
    pl_session *ref = NULL;
    TH_CHECK_OK(pl_session_create(m, NULL, &ref));
    cf_result want_pos, want_neg, got;
    TH_CHECK_OK(cf_run(ref, cf_x_pos, &want_pos));
    TH_CHECK_OK(cf_run(ref, cf_x_neg, &want_neg));
    cf_check_reference(&want_pos, cf_x_pos, true);
    cf_check_reference(&want_neg, cf_x_neg, false);
    long n;
    for (n = 1; n < SWEEP_LIMIT; n++) {
        pl_session *s = (pl_session *)rt;
        pl_failing_allocator_arm(&fa, n);
        pl_status *st = pl_session_create(m, NULL, &s);
        long refused = pl_failing_allocator_refused(&fa);
        pl_failing_allocator_arm(&fa, 0);
        if (refused == 0) {
            TH_CHECK_OK(st);
            TH_CHECK_OK(cf_run(s, cf_x_pos, &got));
            cf_expect_equal(&got, &want_pos, "x_pos");
            TH_CHECK_OK(cf_run(s, cf_x_neg, &got));
            cf_expect_equal(&got, &want_neg, "x_neg");
            pl_session_destroy(s);
            break;
        }
        if (st == NULL)
            th_fail(__FILE__, __LINE__,
                    "control session: allocation %ld was refused, yet the session was made", n);
        TH_CHECK(s == NULL, "a session came back with a failure");
        expect_oom(st, "session creation (control flow)", n);
    }
    printf("session creation (control flow): %ld allocations swept\n", n - 1);
    /* The bodies' own sessions (partition, plan and steps of four bodies)
     * are made through the application's allocator too: when they went to
     * the system allocator the sweep stopped at 404. */
    TH_CHECK(n > 600, "only %ld allocations: the bodies' sessions were not swept", n - 1);
    pl_session_destroy(ref);
    pl_model_destroy(m);
    th_watch(NULL);
    pl_runtime_destroy(rt);
    /* Everything came back, the runtime included: a body's session
     * destroyed while the allocator refused used to skip releasing its
     * modules, which then kept the runtime alive. (Counted only now: the
     * engine frees its operations and variables asynchronously, so the
     * count between two steps of the sweep moves on its own.) */
    TH_CHECK(pl_failing_allocator_live(&fa) == 0, "%ld blocks never came back",
             pl_failing_allocator_live(&fa));
}

/* Runs of a model with control flow: each body's run (every Loop trip, both
 * branches of the inner If, every Scan step) allocates; every allocation of
 * a run refused in turn fails the run cleanly with out of memory, and the
 * same session then runs to the reference outputs. Swept for an input that
 * takes the outer If's then_branch and one that takes its else_branch. */
static void case_session_run_control(void)
{
    pl_runtime *rt = sweep_runtime("cpu");
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, control_model(), &m));
    pl_session *s = NULL;
    TH_CHECK_OK(pl_session_create(m, NULL, &s));
    for (int which = 0; which < 2; which++) {
        const float *x = which == 0 ? cf_x_pos : cf_x_neg;
        const char *what = which == 0 ? "session run (control flow, then)"
                                      : "session run (control flow, else)";
        cf_result want, got;
        /* The reference run, which also makes the run contexts later runs
         * reuse, so that the sweep reaches what every run allocates. */
        TH_CHECK_OK(cf_run(s, x, &want));
        cf_check_reference(&want, x, which == 0);
        long n;
        for (n = 1; n < SWEEP_LIMIT; n++) {
            pl_failing_allocator_arm(&fa, n);
            pl_status *st = cf_run(s, x, &got);
            long refused = pl_failing_allocator_refused(&fa);
            pl_failing_allocator_arm(&fa, 0);
            if (refused == 0) {
                TH_CHECK_OK(st);
                cf_expect_equal(&got, &want, what);
                break;
            }
            if (st == NULL)
                th_fail(__FILE__, __LINE__, "%s: allocation %ld was refused, yet it succeeded",
                        what, n);
            expect_oom(st, what, n);
            /* The session is still whole: a run without failures gives the
             * reference outputs. */
            TH_CHECK_OK(cf_run(s, x, &got));
            cf_expect_equal(&got, &want, what);
        }
        printf("%s: %ld allocations swept\n", what, n - 1);
        /* The run itself makes 3 (its host steps run in the caller, with
         * no engine operation each); the control steps allocate their
         * buffers (Loop's carried values and rows, Scan's states and
         * slices) through the application's allocator as well, where they
         * used to reach the system allocator unseen. */
        TH_CHECK(n > 10, "%s: only %ld allocations: the control steps' buffers were not swept",
                 what, n - 1);
    }
    pl_session_destroy(s);
    pl_model_destroy(m);
    th_watch(NULL);
    pl_runtime_destroy(rt);
    TH_CHECK(pl_failing_allocator_live(&fa) == 0, "%ld blocks never came back",
             pl_failing_allocator_live(&fa));
}

/* tests/control/loop_rows.json: a Loop whose body slices row i of X, so it
 * is planned per iteration number on its first run (ctl_spec makes each
 * iteration's body session while the run is in flight), then an If. */
static const char *rows_model(void)
{
    const char *dir = th_tempdir();
    const char *json = th_path(dir, "loop_rows.json");
    th_copy_file(th_path(th_arg(1), "tests/control/loop_rows.json"), json, 0644);
    struct {
        int64_t trips, ax0, one;
        float zero;
    } w = {6, 0, 1, 0.0f};
    _Static_assert(sizeof w == 32, "the sidecar is 32 bytes");
    FILE *f = fopen(th_path(dir, "loop_rows.weights"), "wb");
    TH_CHECK(f != NULL && fwrite(&w, sizeof w, 1, f) == 1 && fclose(f) == 0,
             "cannot write the sidecar");
    return json;
}

/* Runs S (inputs X f32[6,2], acc0 f32[1,2]; outputs acc, y, each f32[1,2]). */
static pl_status *rows_run(pl_session *s, float out[4])
{
    float X[12], a0[2] = {0.5f, -1.0f};
    for (int i = 0; i < 12; i++)
        X[i] = (float)i - 5.0f;
    int64_t xd[2] = {6, 2}, ad[2] = {1, 2};
    pl_io in[2] = {
        {.name = "X", .tensor = {.struct_size = sizeof(pl_tensor), .data = X, .ndim = 2,
                                 .dtype = PL_DTYPE_F32, .shape = xd}},
        {.name = "acc0", .tensor = {.struct_size = sizeof(pl_tensor), .data = a0, .ndim = 2,
                                    .dtype = PL_DTYPE_F32, .shape = ad}}};
    pl_io outs[2] = {{.name = "acc", .tensor = {.struct_size = sizeof(pl_tensor)}},
                     {.name = "y", .tensor = {.struct_size = sizeof(pl_tensor)}}};
    pl_status *st = pl_session_run(s, in, 2, outs, 2);
    if (st != NULL) {
        TH_CHECK(outs[0].tensor.data == NULL && outs[1].tensor.data == NULL,
                 "an output came back with a failed run");
        return st;
    }
    memcpy(out, outs[0].tensor.data, 2 * sizeof(float));
    memcpy(out + 2, outs[1].tensor.data, 2 * sizeof(float));
    pl_buffer_free(outs[0].tensor.data);
    pl_buffer_free(outs[1].tensor.data);
    return NULL;
}

/* The first run of a fresh session, swept: it makes the run contexts and,
 * for the Loop planned per iteration, the bodies of iterations 1 to 5.
 * Each refusal fails the run with out of memory; the session then runs to
 * the reference (acc = a0 + column sums of X = [0.5, 5], y = 2 acc); and
 * once the runtime is destroyed every block has come back (not earlier: the
 * engine deletes a session's variables asynchronously). */
static void case_first_run_control(void)
{
    pl_runtime *rt = sweep_runtime("cpu");
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, rows_model(), &m));
    const float want[4] = {0.5f, 5.0f, 1.0f, 10.0f};
    float got[4];
    long n;
    for (n = 1; n < SWEEP_LIMIT; n++) {
        pl_session *s = NULL;
        TH_CHECK_OK(pl_session_create(m, NULL, &s));
        pl_failing_allocator_arm(&fa, n);
        pl_status *st = rows_run(s, got);
        long refused = pl_failing_allocator_refused(&fa);
        pl_failing_allocator_arm(&fa, 0);
        if (refused != 0) {
            if (st == NULL)
                th_fail(__FILE__, __LINE__,
                        "first run: allocation %ld was refused, yet it succeeded", n);
            expect_oom(st, "first run (Loop planned per iteration)", n);
        } else {
            TH_CHECK_OK(st);
        }
        TH_CHECK_OK(rows_run(s, got));
        TH_CHECK(memcmp(got, want, sizeof want) == 0,
                 "allocation %ld: got [%g %g] [%g %g], want [0.5 5] [1 10]", n, got[0], got[1],
                 got[2], got[3]);
        pl_session_destroy(s);
        if (refused == 0)
            break;
    }
    printf("first run (Loop planned per iteration): %ld allocations swept\n", n - 1);
    /* Each of iterations 1 to 5 makes a body session of its own. */
    TH_CHECK(n > 200, "only %ld allocations: the per-iteration bodies were not swept", n - 1);
    pl_model_destroy(m);
    th_watch(NULL);
    pl_runtime_destroy(rt);
    TH_CHECK(pl_failing_allocator_live(&fa) == 0, "%ld blocks never came back",
             pl_failing_allocator_live(&fa));
}

/* An application's allocator gets back every block it gave: after a
 * runtime, a model, a session, a run and an explain are made and destroyed,
 * nothing of the allocator's is live, and it was used throughout. */
static void case_blocks_returned(void)
{
    pl_runtime *rt = sweep_runtime("example_acc, cpu");
    long after_runtime = pl_failing_allocator_live(&fa);
    TH_CHECK(after_runtime > 20, "the runtime holds only %ld blocks", after_runtime);
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, th_path(th_arg(1), "examples/mlp/model.json"), &m));
    TH_CHECK(pl_failing_allocator_live(&fa) > after_runtime, "the model made no blocks");
    pl_session *s = NULL;
    TH_CHECK_OK(pl_session_create(m, NULL, &s));
    size_t n = 0;
    pl_buffer_free(run_once(s, &n));
    char *text = NULL;
    TH_CHECK_OK(pl_session_describe(s, &text));
    pl_string_free(text);
    pl_session_destroy(s);
    pl_model_destroy(m);
    th_watch(NULL);
    pl_runtime_destroy(rt);
    TH_CHECK(pl_failing_allocator_live(&fa) == 0, "%ld blocks never came back",
             pl_failing_allocator_live(&fa));
}

/* The core leaves jansson's global allocator to the application: one set
 * before the runtime exists is still in place after a JSON model is
 * loaded, saved and explained, and jansson allocated through it. (The core
 * used to replace it with its own on the first JSON load.) */
static atomic_long app_json_blocks;

static void *app_json_malloc(size_t n)
{
    atomic_fetch_add(&app_json_blocks, 1);
    return malloc(n);
}

static void app_json_free(void *p)
{
    free(p);
}

static void case_jansson_left_alone(void)
{
    json_set_alloc_funcs(app_json_malloc, app_json_free);
    pl_runtime *rt = sweep_runtime(NULL);
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, th_path(th_arg(1), "examples/mlp/model.json"), &m));
    TH_CHECK_OK(pl_model_save_json(m, th_path(th_tempdir(), "saved.json")));
    pl_session *s = NULL;
    TH_CHECK_OK(pl_session_create(m, NULL, &s));
    char *text = NULL;
    TH_CHECK_OK(pl_session_describe(s, &text));
    pl_string_free(text);
    pl_session_destroy(s);
    json_malloc_t got_malloc = NULL;
    json_free_t got_free = NULL;
    json_get_alloc_funcs(&got_malloc, &got_free);
    TH_CHECK(got_malloc == app_json_malloc && got_free == app_json_free,
             "the core replaced the application's jansson allocator");
    TH_CHECK(atomic_load(&app_json_blocks) > 10, "jansson made only %ld blocks",
             atomic_load(&app_json_blocks));
    pl_model_destroy(m);
    th_watch(NULL);
    pl_runtime_destroy(rt);
}

int main(int argc, char **argv)
{
    static const th_case cases[] = {
        {"runtime_create", case_runtime_create},
        {"model_load_json", case_model_load_json},
        {"model_load_onnx", case_model_load_onnx},
        {"model_load_fold", case_model_load_fold},
        {"model_load_prefold", case_model_load_prefold},
        {"session_create_cpu", case_session_create_cpu},
        {"session_create_acc", case_session_create_acc},
        {"per_runtime", case_per_runtime},
        {"blocks_returned", case_blocks_returned},
        {"session_run", case_session_run},
        {"jansson_left_alone", case_jansson_left_alone},
        {"model_load_control", case_model_load_control},
        {"session_create_control", case_session_create_control},
        {"session_run_control", case_session_run_control},
        {"first_run_control", case_first_run_control},
    };
    return th_main(argc, argv, cases, sizeof cases / sizeof cases[0], 3,
                   "STAGE_DIR SOURCE_DIR ONNX_TESTDATA_DIR");
}
