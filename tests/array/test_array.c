/* Devices and arrays of the application API (core/src/array.c): device
 * enumeration, arrays on host memory and on example_acc's opaque device
 * memory, copies between them, DLPack export and import. Runs on the
 * staged modules (argv[1]). */
#include <dlpack/dlpack.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../harness.h"

static pl_runtime *rt_with(const char *extra)
{
    const char *ini = th_path(th_tempdir(), "backend.ini");
    FILE *f = fopen(ini, "w");
    TH_CHECK(f != NULL, "cannot write %s", ini);
    fprintf(f, "[runtime]\nmodules = %s\nthreads = 2\ncache_dir =\n%s\n", th_arg(0), extra);
    fclose(f);
    pl_runtime_options o = {.struct_size = sizeof o, .config_path = ini,
                            .ignore_environment = true};
    pl_runtime *rt = NULL;
    TH_CHECK_OK(pl_runtime_create(&o, &rt));
    return rt;
}

static void case_devices(void)
{
    pl_runtime *rt = rt_with("[example_acc]\ndevices = 2\n");
    size_t n = pl_runtime_device_count(rt);
    bool cpu = false, acc1 = false, onednn = false;
    for (size_t i = 0; i < n; i++) {
        pl_device_info d = {.struct_size = sizeof d};
        TH_CHECK_OK(pl_runtime_device_info(rt, i, &d));
        TH_CHECK(strcmp(d.module, "onnx") != 0 && strcmp(d.module, "json") != 0,
                 "format module %s listed as a device", d.module);
        if (strcmp(d.module, "cpu") == 0) {
            cpu = true;
            TH_CHECK(d.host_memory && d.device.device_type == PL_DEVICE_CPU,
                     "cpu is not host memory");
        } else if (strcmp(d.module, "example_acc") == 0 && d.index == 1) {
            acc1 = true;
            TH_CHECK(!d.host_memory, "example_acc claims host memory");
            TH_CHECK(strcmp(d.name, "Simulated accelerator 1") == 0, "name %s", d.name);
            TH_CHECK(d.device.device_type == PL_DEVICE_EXT && d.device.device_id == 1,
                     "example_acc:1 is DLPack device %d:%d", d.device.device_type,
                     d.device.device_id);
        } else if (strcmp(d.module, "onednn") == 0) {
            onednn = d.host_memory;
        }
    }
    TH_CHECK(cpu && acc1 && onednn, "cpu %d, example_acc:1 %d, onednn (host) %d", cpu, acc1,
             onednn);
    pl_device_info d = {.struct_size = sizeof d};
    pl_status *st = pl_runtime_device_info(rt, n, &d);
    TH_CHECK_CONTAINS(pl_status_message(st), "the runtime has");
    pl_status_free(st);
    pl_device_info small = {.struct_size = 4};
    st = pl_runtime_device_info(rt, 0, &small);
    TH_CHECK_CONTAINS(pl_status_message(st), "struct_size");
    pl_status_free(st);
    pl_runtime_destroy(rt);
}

static void fill(float *v, size_t n, float base)
{
    for (size_t i = 0; i < n; i++)
        v[i] = base + (float)i * 0.5f;
}

/* Host, example_acc:0, example_acc:1 and cpu arrays: every copy path gives
 * the data back unchanged; example_acc's data is a handle, not the host
 * buffer. */
static void case_copies(void)
{
    pl_runtime *rt = rt_with("[example_acc]\ndevices = 2\n");
    const int64_t dims[3] = {2, 3, 5};
    float src[30], back[30];
    fill(src, 30, -3.0f);
    pl_array *host = NULL, *acc0 = NULL, *acc1 = NULL, *cpu = NULL;
    TH_CHECK_OK(pl_array_create(rt, NULL, 0, PL_DTYPE_F32, 3, dims, &host));
    TH_CHECK_OK(pl_array_create(rt, "example_acc", 0, PL_DTYPE_F32, 3, dims, &acc0));
    TH_CHECK_OK(pl_array_create(rt, "example_acc", 1, PL_DTYPE_F32, 3, dims, &acc1));
    TH_CHECK_OK(pl_array_create(rt, "cpu", 0, PL_DTYPE_F32, 3, dims, &cpu));
    TH_CHECK(pl_array_bytes(acc0) == sizeof src, "bytes %zu", pl_array_bytes(acc0));
    TH_CHECK(strcmp(pl_array_module(host), "host") == 0, "host module %s",
             pl_array_module(host));
    TH_CHECK(strcmp(pl_array_module(acc1), "example_acc") == 0 && pl_array_device(acc1) == 1,
             "acc1 on %s:%d", pl_array_module(acc1), pl_array_device(acc1));
    const pl_tensor *t = pl_array_tensor(acc0);
    TH_CHECK(t->ndim == 3 && t->shape[2] == 5 && PL_DTYPE_EQ(t->dtype, PL_DTYPE_F32),
             "acc0's tensor is wrong");
    TH_CHECK(t->device.device_type == PL_DEVICE_EXT, "acc0 device type %d",
             t->device.device_type);
    TH_CHECK_OK(pl_array_copy_from_host(host, src, sizeof src));
    TH_CHECK_OK(pl_array_copy(acc0, host));  /* host -> device */
    TH_CHECK_OK(pl_array_copy(acc1, acc0));  /* device -> device, one module */
    TH_CHECK_OK(pl_array_copy(cpu, acc1));   /* between modules, through host */
    memset(back, 0, sizeof back);
    TH_CHECK_OK(pl_array_copy_to_host(cpu, back, sizeof back));
    TH_CHECK(memcmp(src, back, sizeof src) == 0, "cpu <- acc1 <- acc0 <- host changed data");
    memset(back, 0, sizeof back);
    TH_CHECK_OK(pl_array_copy_to_host(acc1, back, sizeof back));
    TH_CHECK(memcmp(src, back, sizeof src) == 0, "acc1 changed data");
    pl_array *host2 = NULL;
    TH_CHECK_OK(pl_array_create(rt, "host", 0, PL_DTYPE_F32, 3, dims, &host2));
    TH_CHECK_OK(pl_array_copy(host2, acc0)); /* device -> host */
    TH_CHECK(memcmp(pl_array_tensor(host2)->data, src, sizeof src) == 0,
             "host2 <- acc0 changed data");
    /* Wrong sizes and shapes. */
    pl_status *st = pl_array_copy_from_host(acc0, src, sizeof src - 4);
    TH_CHECK_CONTAINS(pl_status_message(st), "116 bytes given, the array holds 120");
    pl_status_free(st);
    pl_array *other = NULL;
    const int64_t flat[1] = {30};
    TH_CHECK_OK(pl_array_create(rt, "example_acc", 0, PL_DTYPE_F32, 1, flat, &other));
    st = pl_array_copy(other, acc0);
    TH_CHECK_CONTAINS(pl_status_message(st), "differ in dtype or shape");
    pl_status_free(st);
    pl_array_destroy(other);
    pl_array_destroy(host2);
    pl_array_destroy(host);
    pl_array_destroy(acc0);
    pl_array_destroy(acc1);
    pl_array_destroy(cpu);
    pl_runtime_destroy(rt);
}

static void case_array_errors(void)
{
    pl_runtime *rt = rt_with("");
    const int64_t dims[2] = {2, 2};
    const int64_t neg[2] = {2, -1};
    const pl_dtype f32 = PL_DTYPE_F32;
    const struct {
        const char *module;
        int device;
        pl_dtype dtype;
        const int64_t *dims;
        const char *message;
    } bad[] = {
        {"nosuch", 0, f32, dims, "module 'nosuch' is not loaded"},
        {"example_acc", 3, f32, dims, "module example_acc has 1 device"},
        {"onnx", 0, f32, dims, "runs no nodes (a format module?)"},
        {NULL, 0, {2, 24, 1}, dims, "is not one of Plinth's thirteen"},
        {NULL, 0, PL_DTYPE_STRING, dims, "arrays hold numbers; strings go through"},
        {NULL, 0, f32, neg, "dim 1 is -1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pl_array *a = NULL;
        pl_status *st = pl_array_create(rt, bad[i].module, bad[i].device, bad[i].dtype, 2,
                                        bad[i].dims, &a);
        TH_CHECK(st != NULL && a == NULL, "case %zu was accepted", i);
        TH_CHECK_CONTAINS(pl_status_message(st), bad[i].message);
        pl_status_free(st);
    }
    pl_runtime_destroy(rt);
}

/* An array keeps its module: it is still readable after the runtime's
 * handle is gone. */
static void case_array_outlives_runtime(void)
{
    pl_runtime *rt = rt_with("");
    const int64_t dims[1] = {8};
    float src[8], back[8];
    fill(src, 8, 1.0f);
    pl_array *a = NULL;
    TH_CHECK_OK(pl_array_create(rt, "example_acc", 0, PL_DTYPE_F32, 1, dims, &a));
    TH_CHECK_OK(pl_array_copy_from_host(a, src, sizeof src));
    pl_runtime_destroy(rt);
    TH_CHECK_OK(pl_array_copy_to_host(a, back, sizeof back));
    TH_CHECK(memcmp(src, back, sizeof src) == 0, "data changed after the runtime went");
    pl_array_destroy(a);
}

/* Export: a DLPack view of the array without a copy, alive after the
 * array's handle is dropped, until the consumer's deleter. */
static void case_dlpack_export(void)
{
    pl_runtime *rt = rt_with("");
    const int64_t dims[2] = {3, 4};
    int64_t src[12];
    for (int i = 0; i < 12; i++)
        src[i] = i * 1000003LL;
    pl_array *a = NULL;
    TH_CHECK_OK(pl_array_create(rt, NULL, 0, PL_DTYPE_I64, 2, dims, &a));
    TH_CHECK_OK(pl_array_copy_from_host(a, src, sizeof src));
    void *out = NULL;
    TH_CHECK_OK(pl_array_to_dlpack(a, &out));
    DLManagedTensor *mt = out;
    TH_CHECK(mt->dl_tensor.data == pl_array_tensor(a)->data, "the export copied");
    TH_CHECK(mt->dl_tensor.device.device_type == kDLCPU && mt->dl_tensor.ndim == 2 &&
                 mt->dl_tensor.shape[0] == 3 && mt->dl_tensor.shape[1] == 4 &&
                 mt->dl_tensor.dtype.code == kDLInt && mt->dl_tensor.dtype.bits == 64 &&
                 mt->dl_tensor.strides == NULL && mt->dl_tensor.byte_offset == 0,
             "the DLTensor's fields are wrong");
    pl_array_destroy(a);
    pl_runtime_destroy(rt);
    /* Still the consumer's: readable until its deleter. */
    TH_CHECK(memcmp(mt->dl_tensor.data, src, sizeof src) == 0, "the export lost its data");
    mt->deleter(mt);
    /* A device array exports its handle with its device type. */
    rt = rt_with("");
    TH_CHECK_OK(pl_array_create(rt, "example_acc", 0, PL_DTYPE_I64, 2, dims, &a));
    TH_CHECK_OK(pl_array_to_dlpack(a, &out));
    mt = out;
    TH_CHECK(mt->dl_tensor.device.device_type == kDLExtDev, "example_acc exported as %d",
             mt->dl_tensor.device.device_type);
    mt->deleter(mt);
    pl_array_destroy(a);
    pl_runtime_destroy(rt);
}

static int deleted;
static void count_delete(DLManagedTensor *mt)
{
    (void)mt;
    deleted++;
}

/* Import: host memory is viewed without a copy and the deleter runs once,
 * when the array goes; other devices and strided tensors are refused and
 * stay the caller's. */
static void case_dlpack_import(void)
{
    pl_runtime *rt = rt_with("");
    float data[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape[2] = {2, 3};
    DLManagedTensor mt = {.dl_tensor = {.data = data, .device = {kDLCPU, 0}, .ndim = 2,
                                        .dtype = {kDLFloat, 32, 1}, .shape = shape},
                          .deleter = count_delete};
    deleted = 0;
    pl_array *a = NULL;
    TH_CHECK_OK(pl_array_from_dlpack(rt, &mt, &a));
    TH_CHECK(pl_array_tensor(a)->data == (void *)data, "the import copied");
    pl_array *acc = NULL;
    TH_CHECK_OK(pl_array_create(rt, "example_acc", 0, PL_DTYPE_F32, 2, shape, &acc));
    TH_CHECK_OK(pl_array_copy(acc, a));
    float back[6] = {0};
    TH_CHECK_OK(pl_array_copy_to_host(acc, back, sizeof back));
    TH_CHECK(memcmp(back, data, sizeof data) == 0, "host(DLPack) -> example_acc changed data");
    TH_CHECK(deleted == 0, "the deleter ran while the array lives");
    pl_array_destroy(a);
    TH_CHECK(deleted == 1, "the deleter ran %d times", deleted);
    pl_array_destroy(acc);
    /* Dense strides are fine; others are refused. */
    int64_t dense[2] = {3, 1}, cols[2] = {1, 2};
    mt.dl_tensor.strides = dense;
    TH_CHECK_OK(pl_array_from_dlpack(rt, &mt, &a));
    pl_array_destroy(a);
    mt.dl_tensor.strides = cols;
    pl_status *st = pl_array_from_dlpack(rt, &mt, &a);
    TH_CHECK_CONTAINS(pl_status_message(st), "strides are not row-major");
    pl_status_free(st);
    mt.dl_tensor.strides = NULL;
    mt.dl_tensor.device.device_type = kDLCUDA;
    st = pl_array_from_dlpack(rt, &mt, &a);
    TH_CHECK_CONTAINS(pl_status_message(st), "DLPack device type 2");
    pl_status_free(st);
    TH_CHECK(deleted == 2, "a refused import ran the deleter (%d)", deleted);
    pl_runtime_destroy(rt);
}

/* ---- eager operators -------------------------------------------------------- */

static pl_array *host_f32(const int64_t *dims, int32_t ndim, const float *data)
{
    pl_array *a = NULL;
    size_t n = 1;
    for (int32_t k = 0; k < ndim; k++)
        n *= (size_t)dims[k];
    TH_CHECK_OK(pl_array_create(NULL, NULL, 0, PL_DTYPE_F32, ndim, dims, &a));
    TH_CHECK_OK(pl_array_copy_from_host(a, data, n * sizeof(float)));
    return a;
}

/* Host arrays on cpu: a chain pushed without waits (Add, Mul, Relu) gives
 * the reference; the intermediate outputs are made by the calls. */
static void case_eager_chain(void)
{
    pl_runtime *rt = rt_with("");
    const int64_t dims[2] = {3, 4};
    float x[12], y[12], want[12], got[12];
    for (int i = 0; i < 12; i++) {
        x[i] = (float)i - 5.5f;
        y[i] = 0.25f * (float)(i % 5) - 0.5f;
        float s = x[i] + y[i], p = s * x[i];
        want[i] = p > 0 ? p : 0;
    }
    pl_array *a = host_f32(dims, 2, x), *b = host_f32(dims, 2, y);
    pl_array *sum = NULL, *prod = NULL, *out = NULL;
    TH_CHECK_OK(pl_op_run(rt, "Add", NULL, 0, (pl_array *[]){a, b}, 2, &sum, 1, 0));
    TH_CHECK_OK(pl_op_run(rt, "Mul", NULL, 0, (pl_array *[]){sum, a}, 2, &prod, 1, 0));
    TH_CHECK_OK(pl_op_run(rt, "Relu", NULL, 0, &prod, 1, &out, 1, 0));
    TH_CHECK(strcmp(pl_array_module(out), "host") == 0, "host inputs gave an output on %s",
             pl_array_module(out));
    TH_CHECK_OK(pl_array_copy_to_host(out, got, sizeof got)); /* waits */
    for (int i = 0; i < 12; i++)
        TH_CHECK(got[i] == want[i], "y[%d] = %g, expected %g", i, got[i], want[i]);
    /* Broadcasting and attributes: Add of a [4] row; Transpose perm. */
    const int64_t row_dims[1] = {4};
    float row[4] = {1, 2, 3, 4};
    pl_array *r = host_f32(row_dims, 1, row), *bc = NULL, *tr = NULL;
    TH_CHECK_OK(pl_op_run(rt, "Add", NULL, 0, (pl_array *[]){a, r}, 2, &bc, 1, 0));
    pl_op_attr perm = {.name = "perm", .type = 'I', .ints = (const int64_t[]){1, 0}, .n = 2};
    TH_CHECK_OK(pl_op_run(rt, "Transpose", &perm, 1, &bc, 1, &tr, 1, 0));
    TH_CHECK_OK(pl_array_wait(tr));
    const pl_tensor *t = pl_array_tensor(tr);
    TH_CHECK(t->ndim == 2 && t->shape[0] == 4 && t->shape[1] == 3, "Transpose's shape");
    TH_CHECK_OK(pl_array_copy_to_host(tr, got, sizeof got));
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            TH_CHECK(got[j * 3 + i] == x[i * 4 + j] + row[j], "transposed [%d][%d]", j, i);
    pl_array *arrays[] = {a, b, sum, prod, out, r, bc, tr};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        pl_array_destroy(arrays[i]);
    TH_CHECK_OK(pl_runtime_wait_all(rt));
    pl_runtime_destroy(rt);
}

/* add-to: y += a + b into a given output. */
static void case_eager_add_to(void)
{
    pl_runtime *rt = rt_with("");
    const int64_t dims[1] = {6};
    float x[6] = {1, 2, 3, 4, 5, 6}, ones[6] = {1, 1, 1, 1, 1, 1}, got[6];
    pl_array *a = host_f32(dims, 1, x), *y = host_f32(dims, 1, ones);
    TH_CHECK_OK(pl_op_run(rt, "Add", NULL, 0, (pl_array *[]){a, a}, 2, &y, 1, PL_OP_ADD_TO));
    TH_CHECK_OK(pl_op_run(rt, "Add", NULL, 0, (pl_array *[]){a, a}, 2, &y, 1, PL_OP_ADD_TO));
    TH_CHECK_OK(pl_array_copy_to_host(y, got, sizeof got));
    for (int i = 0; i < 6; i++)
        TH_CHECK(got[i] == 1 + 4 * x[i], "y[%d] = %g after two add-to Adds", i, got[i]);
    pl_array_destroy(a);
    pl_array_destroy(y);
    pl_runtime_destroy(rt);
}

/* On example_acc, which only compiles: a one-node subgraph per op, the
 * arrays staying in its memory; the result equals cpu's. */
static void case_eager_device(void)
{
    pl_runtime *rt = rt_with("");
    const int64_t ad[2] = {4, 8}, bd[2] = {8, 3};
    float x[32], w[24], ref[12], got[12];
    for (int i = 0; i < 32; i++)
        x[i] = (float)((i * 7) % 11) * 0.125f - 0.5f;
    for (int i = 0; i < 24; i++)
        w[i] = (float)((i * 5) % 13) * 0.0625f - 0.375f;
    pl_array *ha = host_f32(ad, 2, x), *hb = host_f32(bd, 2, w), *href = NULL;
    TH_CHECK_OK(pl_op_run(rt, "MatMul", NULL, 0, (pl_array *[]){ha, hb}, 2, &href, 1, 0));
    TH_CHECK_OK(pl_array_copy_to_host(href, ref, sizeof ref));
    pl_array *da = NULL, *db = NULL, *dy = NULL, *dr = NULL;
    TH_CHECK_OK(pl_array_create(rt, "example_acc", 0, PL_DTYPE_F32, 2, ad, &da));
    TH_CHECK_OK(pl_array_create(rt, "example_acc", 0, PL_DTYPE_F32, 2, bd, &db));
    TH_CHECK_OK(pl_array_copy(da, ha));
    TH_CHECK_OK(pl_array_copy(db, hb));
    TH_CHECK_OK(pl_op_run(rt, "MatMul", NULL, 0, (pl_array *[]){da, db}, 2, &dy, 1, 0));
    TH_CHECK_OK(pl_op_run(rt, "Relu", NULL, 0, &dy, 1, &dr, 1, 0));
    TH_CHECK(strcmp(pl_array_module(dr), "example_acc") == 0, "the output is on %s",
             pl_array_module(dr));
    TH_CHECK_OK(pl_array_copy_to_host(dr, got, sizeof got));
    for (int i = 0; i < 12; i++) {
        float want = ref[i] > 0 ? ref[i] : 0;
        TH_CHECK(fabsf(got[i] - want) <= 1e-5f, "y[%d] = %g on example_acc, %g on cpu", i,
                 got[i], want);
    }
    pl_array *arrays[] = {ha, hb, href, da, db, dy, dr};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        pl_array_destroy(arrays[i]);
    pl_runtime_destroy(rt);
}

/* Wrong calls fail at once, naming the op and why; nothing is pushed. */
static void case_eager_errors(void)
{
    pl_runtime *rt = rt_with("");
    const int64_t dims[2] = {2, 3}, other[2] = {3, 2};
    float x[6] = {0};
    pl_array *a = host_f32(dims, 2, x), *wrong = host_f32(other, 2, x), *i32 = NULL, *acc = NULL;
    TH_CHECK_OK(pl_array_create(NULL, NULL, 0, PL_DTYPE_I32, 2, dims, &i32));
    TH_CHECK_OK(pl_array_create(rt, "example_acc", 0, PL_DTYPE_F32, 2, dims, &acc));
    pl_array *out = NULL;
    pl_status *st = pl_op_run(rt, "Frobnicate", NULL, 0, &a, 1, &out, 1, 0);
    TH_CHECK_CONTAINS(pl_status_message(st), "op Frobnicate: ");
    pl_status_free(st);
    st = pl_op_run(rt, "Add", NULL, 0, (pl_array *[]){a, i32}, 2, &out, 1, 0);
    TH_CHECK(st != NULL && out == NULL, "Add of f32 and i32 was accepted");
    TH_CHECK_CONTAINS(pl_status_message(st), "op Add: ");
    pl_status_free(st);
    st = pl_op_run(rt, "Relu", NULL, 0, &a, 1, &wrong, 1, 0);
    TH_CHECK_CONTAINS(pl_status_message(st), "output 0 is not of the type the op gives");
    pl_status_free(st);
    st = pl_op_run(rt, "Add", NULL, 0, (pl_array *[]){a, acc}, 2, &out, 1, 0);
    TH_CHECK_CONTAINS(pl_status_message(st), "host arrays with arrays on example_acc:0");
    pl_status_free(st);
    pl_array *same = a;
    st = pl_op_run(rt, "Relu", NULL, 0, &a, 1, &same, 1, 0);
    TH_CHECK_CONTAINS(pl_status_message(st), "output 0 is also input 0");
    pl_status_free(st);
    pl_op_attr bad = {.name = "alpha", .type = 'q'};
    st = pl_op_run(rt, "LeakyRelu", &bad, 1, &a, 1, &out, 1, 0);
    TH_CHECK_CONTAINS(pl_status_message(st), "type 'q' is not i, f, s, I or F");
    pl_status_free(st);
    TH_CHECK(out == NULL, "a failed call left an output");
    TH_CHECK_OK(pl_runtime_wait_all(rt));
    pl_array *arrays[] = {a, wrong, i32, acc};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        pl_array_destroy(arrays[i]);
    pl_runtime_destroy(rt);
}

/* A failure while running reaches the output's wait and every operator
 * that reads it; an overwrite from the host heals the array. */
static void case_eager_failure(void)
{
    pl_runtime *rt = rt_with("");
    const int64_t dims[2] = {3, 2}, small_dims[1] = {2}, idx_dims[1] = {70};
    float x[6] = {1, 2, 3, 4, 5, 6};
    /* A few indices enter the graph as constants, so a bad one fails the
     * call at once. */
    int64_t small[2] = {0, 7};
    pl_array *data = host_f32(dims, 2, x), *ind = NULL, *g = NULL, *r = NULL;
    TH_CHECK_OK(pl_array_create(NULL, NULL, 0, PL_DTYPE_I64, 1, small_dims, &ind));
    TH_CHECK_OK(pl_array_copy_from_host(ind, small, sizeof small));
    pl_status *early = pl_op_run(rt, "Gather", NULL, 0, (pl_array *[]){data, ind}, 2, &g, 1, 0);
    TH_CHECK_CONTAINS(pl_status_message(early), "index 7 is out of range");
    pl_status_free(early);
    pl_array_destroy(ind);
    /* 70 indices are data: the bad one (7, for 3 rows) fails the run. */
    int64_t idx[70] = {0};
    idx[69] = 7;
    TH_CHECK_OK(pl_array_create(NULL, NULL, 0, PL_DTYPE_I64, 1, idx_dims, &ind));
    TH_CHECK_OK(pl_array_copy_from_host(ind, idx, sizeof idx));
    TH_CHECK_OK(pl_op_run(rt, "Gather", NULL, 0, (pl_array *[]){data, ind}, 2, &g, 1, 0));
    TH_CHECK_OK(pl_op_run(rt, "Relu", NULL, 0, &g, 1, &r, 1, 0));
    pl_status *st = pl_array_wait(r);
    TH_CHECK(st != NULL, "Relu of a failed Gather succeeded");
    TH_CHECK_CONTAINS(pl_status_message(st), "Gather");
    pl_status_free(st);
    st = pl_runtime_wait_all(rt);
    TH_CHECK(st != NULL, "wait_all saw no failure");
    pl_status_free(st);
    TH_CHECK_OK(pl_runtime_wait_all(rt)); /* reported once */
    float healed[140], back[140];
    for (int i = 0; i < 140; i++)
        healed[i] = (float)i;
    TH_CHECK_OK(pl_array_copy_from_host(g, healed, sizeof healed));
    pl_array *r2 = NULL;
    TH_CHECK_OK(pl_op_run(rt, "Neg", NULL, 0, &g, 1, &r2, 1, 0));
    TH_CHECK_OK(pl_array_copy_to_host(r2, back, sizeof back));
    TH_CHECK(back[1] == -1 && back[139] == -139, "Neg after the overwrite gave %g", back[1]);
    pl_array *arrays[] = {data, ind, g, r, r2};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        pl_array_destroy(arrays[i]);
    pl_runtime_destroy(rt);
}

/* ---- sessions on arrays ------------------------------------------------------ */

/* y = Relu(x) * x + x on [2, 8] (every op example_acc runs); with SOFTMAX a
 * Softmax after it, which example_acc refuses, so cpu runs it between two
 * copies. */
static const char *write_io_model(bool softmax)
{
    const char *path = th_path(th_tempdir(), softmax ? "io_softmax.json" : "io.json");
    char json[2048];
    snprintf(json, sizeof json,
             "{\"format\":\"plinth-graph\",\"version\":1,"
             "\"opset_import\":[{\"domain\":\"\",\"version\":13}],"
             "\"inputs\":[\"x\"],\"outputs\":[\"y\"],"
             "\"tensors\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[2,8]}],"
             "\"nodes\":["
             "{\"name\":\"relu\",\"op\":\"Relu\",\"inputs\":[\"x\"],\"outputs\":[\"r\"]},"
             "{\"name\":\"mul\",\"op\":\"Mul\",\"inputs\":[\"r\",\"x\"],\"outputs\":[\"m\"]},"
             "{\"name\":\"add\",\"op\":\"Add\",\"inputs\":[\"m\",\"x\"],\"outputs\":[\"%s\"]}%s]}",
             softmax ? "a" : "y",
             softmax ? ",{\"name\":\"softmax\",\"op\":\"Softmax\",\"inputs\":[\"a\"],"
                       "\"outputs\":[\"y\"]}"
                     : "");
    th_write_file(path, json, 0600);
    return path;
}

static pl_session *io_session(pl_runtime *rt, const char *path, const char *io)
{
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, path, &m));
    const char *order[] = {"example_acc", "cpu"};
    pl_session_options o = {.struct_size = sizeof o, .order = order, .n_order = 2,
                            .io_device = io};
    pl_session *s = NULL;
    TH_CHECK_OK(pl_session_create(m, &o, &s));
    pl_model_destroy(m);
    return s;
}

static size_t copy_steps(const pl_session *s)
{
    size_t n = 0;
    for (size_t i = 0; i < pl_session_step_count(s); i++) {
        const char *backend = NULL;
        pl_session_step_info(s, i, NULL, &backend, NULL, NULL);
        n += strcmp(backend, "copy") == 0;
    }
    return n;
}

/* io_device = example_acc:0: arrays on the device go in and come out with
 * no copy step when example_acc runs the whole graph (a host session of the
 * same model has two: in and out), the values equal a host session's, an
 * output array is made on the device when none is given, and a Softmax on
 * cpu in between gets its copies there and back. */
static void case_session_arrays(void)
{
    pl_runtime *rt = rt_with("");
    const int64_t dims[2] = {2, 8};
    float x[16], want[16], got[16];
    for (int i = 0; i < 16; i++)
        x[i] = (float)((i * 7) % 11) * 0.25f - 1.25f;
    for (int softmax = 0; softmax < 2; softmax++) {
        const char *path = write_io_model(softmax);
        pl_session *host = io_session(rt, path, NULL), *dev = io_session(rt, path, "example_acc:0");
        TH_CHECK(strcmp(pl_session_io_device(host), "host") == 0 &&
                     strcmp(pl_session_io_device(dev), "example_acc:0") == 0,
                 "io devices %s and %s", pl_session_io_device(host), pl_session_io_device(dev));
        size_t host_copies = copy_steps(host), dev_copies = copy_steps(dev);
        TH_CHECK(softmax ? host_copies == 2 && dev_copies == 2 : host_copies == 2 && dev_copies == 0,
                 "softmax %d: %zu copy steps on a host session, %zu with io on the device",
                 softmax, host_copies, dev_copies);
        pl_io hin = {.name = "x", .tensor = {.struct_size = sizeof(pl_tensor), .data = x,
                                             .ndim = 2, .shape = (int64_t *)dims,
                                             .dtype = PL_DTYPE_F32}};
        pl_io hout = {.name = "y", .tensor = {.struct_size = sizeof(pl_tensor), .data = want,
                                              .ndim = 2, .shape = (int64_t *)dims,
                                              .dtype = PL_DTYPE_F32}};
        TH_CHECK_OK(pl_session_run(host, &hin, 1, &hout, 1));
        pl_array *dx = NULL, *dy = NULL;
        TH_CHECK_OK(pl_array_create(rt, "example_acc", 0, PL_DTYPE_F32, 2, dims, &dx));
        TH_CHECK_OK(pl_array_copy_from_host(dx, x, sizeof x));
        for (int given = 0; given < 2; given++) {
            pl_array_io in = {"x", dx}, out = {"y", given ? dy : NULL};
            TH_CHECK_OK(pl_session_run_arrays(dev, &in, 1, &out, 1));
            TH_CHECK(out.array != NULL && strcmp(pl_array_module(out.array), "example_acc") == 0,
                     "the output is on %s", out.array ? pl_array_module(out.array) : "nothing");
            dy = out.array;
            memset(got, 0, sizeof got);
            TH_CHECK_OK(pl_array_copy_to_host(dy, got, sizeof got));
            for (int i = 0; i < 16; i++)
                TH_CHECK(fabsf(got[i] - want[i]) <= 1e-6f, "softmax %d: y[%d] = %g, host %g",
                         softmax, i, got[i], want[i]);
        }
        pl_array_destroy(dx);
        pl_array_destroy(dy);
        pl_session_destroy(host);
        pl_session_destroy(dev);
    }
    pl_runtime_destroy(rt);
}

/* The wrong arrays or calls fail with the reason and write nothing: a host
 * array for a device session, a device array for a host session, host
 * tensors for a device session, an unknown output, an io_device that is
 * not there. */
static void case_session_arrays_errors(void)
{
    pl_runtime *rt = rt_with("");
    const int64_t dims[2] = {2, 8};
    float x[16] = {0};
    const char *path = write_io_model(false);
    pl_session *host = io_session(rt, path, "host"), *dev = io_session(rt, path, "example_acc");
    pl_array *hx = host_f32(dims, 2, x), *dx = NULL;
    TH_CHECK_OK(pl_array_create(rt, "example_acc", 0, PL_DTYPE_F32, 2, dims, &dx));
    pl_array_io in = {"x", hx}, out = {"y", NULL};
    pl_status *st = pl_session_run_arrays(dev, &in, 1, &out, 1);
    TH_CHECK_CONTAINS(pl_status_message(st), "input 'x' is an array on host, but this session's "
                                             "inputs and outputs live on example_acc:0");
    TH_CHECK(out.array == NULL, "a failed run left an output array");
    pl_status_free(st);
    in.array = dx;
    st = pl_session_run_arrays(host, &in, 1, &out, 1);
    TH_CHECK_CONTAINS(pl_status_message(st), "input 'x' is an array on example_acc:0");
    pl_status_free(st);
    pl_array_io bad_out = {"nope", NULL};
    st = pl_session_run_arrays(dev, &in, 1, &bad_out, 1);
    TH_CHECK_CONTAINS(pl_status_message(st), "no output named 'nope'");
    pl_status_free(st);
    pl_io hin = {.name = "x", .tensor = *pl_array_tensor(hx)};
    st = pl_session_run(dev, &hin, 1, NULL, 0);
    TH_CHECK_CONTAINS(pl_status_message(st), "live on example_acc:0");
    pl_status_free(st);
    /* a host session still runs on host arrays, and makes its output there */
    in.array = hx;
    TH_CHECK_OK(pl_session_run_arrays(host, &in, 1, &out, 1));
    TH_CHECK(strcmp(pl_array_module(out.array), "host") == 0, "output on %s",
             pl_array_module(out.array));
    pl_array_destroy(out.array);
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, path, &m));
    static const char *const bad[3] = {"example_acc:7", "nosuch", "onnx"};
    static const char *const why[3] = {"module example_acc has 1 device",
                                       "no module named 'nosuch'", "runs no nodes"};
    for (int k = 0; k < 3; k++) {
        pl_session_options o = {.struct_size = sizeof o, .io_device = bad[k]};
        pl_session *s = NULL;
        st = pl_session_create(m, &o, &s);
        TH_CHECK(s == NULL, "io_device = %s made a session", bad[k]);
        TH_CHECK_CONTAINS(pl_status_message(st), "session option io_device");
        TH_CHECK_CONTAINS(pl_status_message(st), why[k]);
        pl_status_free(st);
    }
    pl_model_destroy(m);
    pl_array_destroy(hx);
    pl_array_destroy(dx);
    pl_session_destroy(host);
    pl_session_destroy(dev);
    pl_runtime_destroy(rt);
}

static const th_case cases[] = {
    {"devices", case_devices},
    {"copies", case_copies},
    {"errors", case_array_errors},
    {"outlives_runtime", case_array_outlives_runtime},
    {"dlpack_export", case_dlpack_export},
    {"dlpack_import", case_dlpack_import},
    {"eager_chain", case_eager_chain},
    {"eager_add_to", case_eager_add_to},
    {"eager_device", case_eager_device},
    {"eager_errors", case_eager_errors},
    {"eager_failure", case_eager_failure},
    {"session_arrays", case_session_arrays},
    {"session_arrays_errors", case_session_arrays_errors},
};

int main(int argc, char **argv)
{
    return th_main(argc, argv, cases, sizeof cases / sizeof cases[0], 1, "STAGE_DIR");
}
