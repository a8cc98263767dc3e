/* array.c — device arrays for applications (plinth.h, "devices and
 * arrays"): a dense tensor in one device's memory (a module's handles) or
 * in host memory, with copies between them and DLPack import and export.
 *
 * An array on a module's device holds a reference on the module (so the
 * module and its runtime outlive it; a host array needs neither) and counts
 * its own references: the application's handle and
 * one per DLPack export not yet deleted. Device memory is the module's
 * own: allocated, copied and freed only through its table, never
 * dereferenced here. Copies are synchronous. */
#include <dlfcn.h>
#include <dlpack/dlpack.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "array.h"
#include "registry.h"
#include "status.h"

struct pl_array {
    pl_module *m;          /* NULL: host memory */
    int device;
    void *data;            /* the module's handle, or a host pointer */
    bool owned;            /* freed with the array */
    bool host_mem;         /* data is a host pointer (no module, or a host-memory
                              module without memory functions) */
    DLManagedTensor *imported; /* from DLPack: its deleter runs at the end */
    pl_tensor t;           /* device, dtype, shape; data as above */
    int64_t *dims;
    size_t bytes;
    _Atomic int refs;
    /* Its variable on a runtime's engine, once an operator used it. */
    pl_runtime *var_rt;
    pl_var *var;
    pthread_mutex_t var_mu;
};

/* ---- devices ---------------------------------------------------------------- */

/* Module and device of the I-th device: every device of every loaded module
 * that runs nodes, in module order. */
static bool pl_array_nth_device(const pl_runtime *rt, size_t i, pl_module **out_m, int *out_d)
{
    for (size_t k = 0; k < rt->n_modules; k++) {
        pl_module *m = rt->modules[k];
        if (m->status != PL_MODULE_LOADED ||
            !(m->api.capabilities & (PL_CAP_IMPERATIVE | PL_CAP_SYMBOLIC)))
            continue;
        if (i < (size_t)m->device_count) {
            *out_m = m;
            *out_d = (int)i;
            return true;
        }
        i -= (size_t)m->device_count;
    }
    return false;
}

size_t pl_runtime_device_count(const pl_runtime *rt)
{
    size_t n = 0;
    for (size_t k = 0; rt != NULL && k < rt->n_modules; k++) {
        const pl_module *m = rt->modules[k];
        if (m->status == PL_MODULE_LOADED &&
            (m->api.capabilities & (PL_CAP_IMPERATIVE | PL_CAP_SYMBOLIC)))
            n += (size_t)m->device_count;
    }
    return n;
}

pl_status *pl_runtime_device_info(const pl_runtime *rt, size_t i, pl_device_info *out)
{
    if (rt == NULL || out == NULL || out->struct_size < sizeof *out)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "pl_runtime_device_info: NULL runtime or info, or "
                                "info.struct_size not set");
    pl_module *m;
    int d;
    if (!pl_array_nth_device(rt, i, &m, &d))
        return pl_status_create(PL_CODE_NOT_FOUND, "device %zu: the runtime has %zu", i,
                                pl_runtime_device_count(rt));
    uint32_t size = out->struct_size;
    memset(out, 0, sizeof *out);
    out->struct_size = size;
    out->module = m->note.name;
    out->index = d;
    out->name = m->device_names ? m->device_names[d] : m->note.name;
    out->host_memory = (m->api.capabilities & PL_CAP_HOST_MEMORY) != 0;
    pl_device_properties props;
    memset(&props, 0, sizeof props);
    props.header = (pl_abi_header)PL_ABI_HEADER_INIT(pl_device_properties);
    pl_status *st = m->api.device_properties(m->ctx, d, &props);
    pl_status_free(st);
    out->device.device_type = out->host_memory ? PL_DEVICE_CPU
                              : st == NULL && props.device_type ? props.device_type
                                                                 : PL_DEVICE_EXT;
    out->device.device_id = out->host_memory ? 0 : d;
    out->compute_units = st == NULL ? props.compute_units : 0;
    out->memory_bytes = st == NULL ? props.memory_bytes : 0;
    return NULL;
}

/* ---- arrays ---------------------------------------------------------------- */

static pl_status *pl_array_check_shape(pl_dtype dtype, int32_t ndim, const int64_t *dims,
                                       size_t *out_bytes)
{
    size_t esize = pl_dtype_size(dtype);
    if (dtype.code == PL_TYPE_STRING)
        return pl_status_create(PL_CODE_UNSUPPORTED,
                                "array: arrays hold numbers; strings go through "
                                "pl_session_run");
    if (esize == 0)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "array: dtype (code %u, %u bits, %u lanes) is not one of "
                                "Plinth's thirteen", dtype.code, dtype.bits, dtype.lanes);
    if (ndim < 0 || ndim > 32 || (ndim > 0 && dims == NULL))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "array: %d dims (0 to 32, and the dims given)", (int)ndim);
    size_t bytes = esize;
    for (int32_t k = 0; k < ndim; k++) {
        if (dims[k] < 0)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT, "array: dim %d is %lld",
                                    (int)k, (long long)dims[k]);
        if (dims[k] > 0 && bytes > SIZE_MAX / (size_t)dims[k])
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "array: the shape's bytes overflow");
        bytes *= (size_t)dims[k];
    }
    *out_bytes = bytes;
    return NULL;
}

static pl_status *pl_array_new(pl_runtime *rt, pl_module *m, int device, pl_dtype dtype,
                               int32_t ndim, const int64_t *dims, pl_array **out)
{
    size_t bytes = 0;
    PL_RETURN_IF_ERROR(pl_array_check_shape(dtype, ndim, dims, &bytes));
    pl_array *a = calloc(1, sizeof *a);
    int64_t *copy = calloc((size_t)(ndim ? ndim : 1), sizeof *copy);
    if (a == NULL || copy == NULL) {
        free(a);
        free(copy);
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "array: out of memory");
    }
    if (ndim > 0)
        memcpy(copy, dims, (size_t)ndim * sizeof *copy);
    (void)rt;
    a->m = m;
    a->device = device;
    a->dims = copy;
    a->bytes = bytes;
    a->t.struct_size = sizeof a->t;
    a->t.ndim = ndim;
    a->t.dtype = dtype;
    a->t.shape = copy;
    atomic_init(&a->refs, 1);
    pthread_mutex_init(&a->var_mu, NULL);
    if (m != NULL)
        pl_module_retain(m);
    *out = a;
    return NULL;
}

static void pl_array_free(pl_array *a)
{
    if (a->owned && !a->host_mem && a->data != NULL)
        a->m->api.mem_free(a->m->ctx, a->device, a->data);
    else if (a->owned)
        free(a->data);
    if (a->imported != NULL && a->imported->deleter != NULL)
        a->imported->deleter(a->imported);
    pl_module *m = a->m;
    pl_runtime *var_rt = a->var_rt;
    if (a->var != NULL)
        pl_engine_delete_var(var_rt->engine, a->var);
    pthread_mutex_destroy(&a->var_mu);
    free(a->dims);
    free(a);
    if (m != NULL)
        pl_module_release(m);
    if (var_rt != NULL)
        pl_runtime_unref(var_rt);
}

static void pl_array_unref(pl_array *a)
{
    if (atomic_fetch_sub_explicit(&a->refs, 1, memory_order_acq_rel) == 1)
        pl_array_free(a);
}

/* The loaded module named MODULE with DEVICE, or a status. NULL/"host":
 * *out_m NULL (host memory). */
static pl_status *pl_array_find_device(pl_runtime *rt, const char *module, int device,
                                       pl_module **out_m)
{
    *out_m = NULL;
    if (module == NULL || strcmp(module, "host") == 0)
        return NULL;
    long idx = pl_runtime_find_module(rt, module);
    if (idx < 0 || rt->modules[idx]->status != PL_MODULE_LOADED)
        return pl_status_create(PL_CODE_NOT_FOUND, "array on %s:%d: module '%s' is not loaded",
                                module, device, module);
    pl_module *m = rt->modules[idx];
    if (device < 0 || device >= m->device_count)
        return pl_status_create(PL_CODE_NOT_FOUND, "array on %s:%d: module %s has %d device%s",
                                module, device, module, m->device_count,
                                m->device_count == 1 ? "" : "s");
    if (!(m->api.capabilities & (PL_CAP_IMPERATIVE | PL_CAP_SYMBOLIC)))
        return pl_status_create(PL_CODE_UNSUPPORTED,
                                "array on %s:%d: the module runs no nodes (a format module?)",
                                module, device);
    if (m->api.mem_alloc == NULL && !(m->api.capabilities & PL_CAP_HOST_MEMORY))
        return pl_status_create(PL_CODE_UNSUPPORTED,
                                "array on %s:%d: the module has no memory functions", module,
                                device);
    *out_m = m;
    return NULL;
}

pl_status *pl_array_create(pl_runtime *rt, const char *module, int device, pl_dtype dtype,
                           int32_t ndim, const int64_t *dims, pl_array **out)
{
    if (out == NULL || (rt == NULL && module != NULL && strcmp(module, "host") != 0))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "pl_array_create: NULL out, or a device array without a "
                                "runtime");
    *out = NULL;
    pl_module *m;
    PL_RETURN_IF_ERROR(pl_array_find_device(rt, module, device, &m));
    pl_array *a;
    PL_RETURN_IF_ERROR(pl_array_new(rt, m, m ? device : 0, dtype, ndim, dims, &a));
    pl_status *st = NULL;
    /* A host-memory module without memory functions computes on plain host
     * memory: the array is host memory that belongs to its device. */
    a->host_mem = m == NULL || m->api.mem_alloc == NULL;
    if (m != NULL && !a->host_mem) {
        st = m->api.mem_alloc(m->ctx, device, a->bytes, 64, &a->data);
        if (st == NULL && a->data == NULL)
            st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "no memory returned");
        if (st != NULL)
            st = pl_status_wrap(st, "array of %zu bytes on %s:%d: ", a->bytes, module, device);
        a->t.device = (pl_device){(m->api.capabilities & PL_CAP_HOST_MEMORY) ? PL_DEVICE_CPU
                                                                               : PL_DEVICE_EXT,
                                  (m->api.capabilities & PL_CAP_HOST_MEMORY) ? 0 : device};
        pl_device_properties props;
        memset(&props, 0, sizeof props);
        props.header = (pl_abi_header)PL_ABI_HEADER_INIT(pl_device_properties);
        pl_status *pst = m->api.device_properties(m->ctx, device, &props);
        if (pst == NULL && props.device_type && !(m->api.capabilities & PL_CAP_HOST_MEMORY))
            a->t.device.device_type = props.device_type;
        pl_status_free(pst);
    } else {
        if (posix_memalign(&a->data, 64, a->bytes ? a->bytes : 1) != 0) {
            a->data = NULL;
            st = pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                  "array of %zu bytes in host memory: out of memory", a->bytes);
        }
        a->t.device = (pl_device){PL_DEVICE_CPU, 0};
    }
    a->owned = a->data != NULL;
    a->t.data = a->data;
    if (st != NULL) {
        pl_array_free(a);
        return st;
    }
    *out = a;
    return NULL;
}

void pl_array_destroy(pl_array *a)
{
    if (a == NULL)
        return;
    /* Calls on it that finished may still hold it: let them go first. */
    if (a->var_rt != NULL)
        pl_eager_drain(a->var_rt);
    pl_array_unref(a);
}

pl_module *pl_array_module_internal(const pl_array *a)
{
    return a->m;
}

void pl_array_retain_internal(pl_array *a)
{
    atomic_fetch_add_explicit(&a->refs, 1, memory_order_relaxed);
}

void pl_array_release_internal(pl_array *a)
{
    pl_array_unref(a);
}

pl_status *pl_array_var_internal(pl_array *a, pl_runtime *rt, pl_var **out_var)
{
    pthread_mutex_lock(&a->var_mu);
    pl_status *st = NULL;
    if (a->var_rt != NULL && a->var_rt != rt) {
        st = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                              "an array is used with one runtime only, and this one was "
                              "used with another");
    } else if (a->var == NULL) {
        a->var = pl_engine_new_var(rt->engine);
        if (a->var == NULL) {
            st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
        } else {
            a->var_rt = rt;
            atomic_fetch_add(&rt->refs, 1);
        }
    }
    *out_var = a->var;
    pthread_mutex_unlock(&a->var_mu);
    return st;
}

static pl_status *pl_array_noop(void *arg, const pl_run_context *rc)
{
    (void)arg;
    (void)rc;
    return NULL;
}

/* After a synchronous full overwrite of A: the engine learns that A was
 * written (an operation that only writes a failed variable heals it), so
 * operators that read A no longer fail for an error it had before. */
static void pl_array_mark_written(pl_array *a)
{
    pthread_mutex_lock(&a->var_mu);
    pl_var *v = a->var;
    pl_runtime *rt = a->var_rt;
    pthread_mutex_unlock(&a->var_mu);
    if (v == NULL)
        return;
    pl_exec_ctx inl = {.kind = PL_EXEC_INLINE};
    pl_status *st = pl_engine_push(rt->engine, pl_array_noop, NULL, inl, NULL, 0, &v, 1, 0,
                                   "array overwritten from the host");
    if (st == NULL)
        st = pl_engine_wait_var(rt->engine, v);
    pl_status_free(st);
}

/* Waits for the operators pushed on A to finish; their error, or NULL. */
pl_status *pl_array_wait(pl_array *a)
{
    if (a == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "pl_array_wait: NULL array");
    pthread_mutex_lock(&a->var_mu);
    pl_var *v = a->var;
    pl_runtime *rt = a->var_rt;
    pthread_mutex_unlock(&a->var_mu);
    if (v == NULL)
        return NULL;
    pl_status *st = pl_engine_wait_var(rt->engine, v);
    pl_eager_drain(rt);
    return st;
}

const pl_tensor *pl_array_tensor(const pl_array *a)
{
    return a ? &a->t : NULL;
}

const char *pl_array_module(const pl_array *a)
{
    return a == NULL ? "" : a->m ? a->m->note.name : "host";
}

int pl_array_device(const pl_array *a)
{
    return a ? a->device : -1;
}

size_t pl_array_bytes(const pl_array *a)
{
    return a ? a->bytes : 0;
}

static pl_status *pl_array_bytes_match(const pl_array *a, size_t bytes, const char *what)
{
    if (a == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "%s: NULL array", what);
    if (bytes != a->bytes)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "%s: %zu bytes given, the array holds %zu", what, bytes,
                                a->bytes);
    return NULL;
}

pl_status *pl_array_copy_from_host(pl_array *a, const void *src, size_t bytes)
{
    PL_RETURN_IF_ERROR(pl_array_bytes_match(a, bytes, "pl_array_copy_from_host"));
    /* A full overwrite: what an earlier operator left (even its error) no
     * longer matters once it is done. */
    pl_status_free(pl_array_wait(a));
    if (bytes == 0)
        return NULL;
    if (src == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "pl_array_copy_from_host: NULL source");
    pl_status *st = NULL;
    if (a->host_mem)
        memcpy(a->data, src, bytes);
    else
        st = a->m->api.copy_to_device(a->m->ctx, a->device, a->data, 0, src, bytes);
    if (st == NULL)
        pl_array_mark_written(a);
    return st;
}

pl_status *pl_array_copy_to_host(const pl_array *a, void *dst, size_t bytes)
{
    PL_RETURN_IF_ERROR(pl_array_bytes_match(a, bytes, "pl_array_copy_to_host"));
    PL_RETURN_IF_ERROR(pl_array_wait((pl_array *)a));
    if (bytes == 0)
        return NULL;
    if (dst == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "pl_array_copy_to_host: NULL target");
    if (a->host_mem) {
        memcpy(dst, a->data, bytes);
        return NULL;
    }
    return a->m->api.copy_to_host(a->m->ctx, a->device, dst, a->data, 0, bytes);
}

static pl_status *pl_array_copy_in(pl_array *dst, const pl_array *src);

pl_status *pl_array_copy(pl_array *dst, const pl_array *src)
{
    pl_status *st = pl_array_copy_in(dst, src);
    if (st == NULL && dst != NULL)
        pl_array_mark_written(dst);
    return st;
}

static pl_status *pl_array_copy_in(pl_array *dst, const pl_array *src)
{
    if (dst == NULL || src == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "pl_array_copy: NULL array");
    if (!PL_DTYPE_EQ(dst->t.dtype, src->t.dtype) || dst->bytes != src->bytes ||
        dst->t.ndim != src->t.ndim ||
        (dst->t.ndim && memcmp(dst->dims, src->dims, (size_t)dst->t.ndim * sizeof *dst->dims)))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "pl_array_copy: the arrays differ in dtype or shape");
    PL_RETURN_IF_ERROR(pl_array_wait((pl_array *)src));
    pl_status_free(pl_array_wait(dst));
    if (src->host_mem)
        return pl_array_copy_from_host(dst, src->data, src->bytes);
    if (dst->host_mem)
        return pl_array_copy_to_host(src, dst->data, dst->bytes);
    if (src->bytes == 0)
        return NULL;
    if (src->m == dst->m)
        return src->m->api.copy_device_to_device(src->m->ctx, src->device, src->data, 0,
                                                 dst->device, dst->data, 0, src->bytes);
    /* Two modules: through host memory. */
    void *stage = malloc(src->bytes);
    if (stage == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                "pl_array_copy: no host buffer of %zu bytes to stage through",
                                src->bytes);
    pl_status *st = pl_array_copy_to_host(src, stage, src->bytes);
    if (st == NULL)
        st = pl_array_copy_from_host(dst, stage, dst->bytes);
    free(stage);
    return st;
}

/* ---- DLPack ------------------------------------------------------------------ */

typedef struct pl_array_export {
    DLManagedTensor mt;
    pl_array *array;
} pl_array_export;

static void pl_array_export_delete(DLManagedTensor *mt)
{
    pl_array_export *e = mt->manager_ctx;
    pl_array_unref(e->array);
    free(e);
}

pl_status *pl_array_to_dlpack(pl_array *a, void **out_managed)
{
    if (a == NULL || out_managed == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "pl_array_to_dlpack: NULL argument");
    *out_managed = NULL;
    pl_array_export *e = calloc(1, sizeof *e);
    if (e == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "pl_array_to_dlpack: out of memory");
    atomic_fetch_add_explicit(&a->refs, 1, memory_order_relaxed);
    e->array = a;
    e->mt.dl_tensor.data = a->data;
    e->mt.dl_tensor.device.device_type = (DLDeviceType)a->t.device.device_type;
    e->mt.dl_tensor.device.device_id = a->t.device.device_id;
    e->mt.dl_tensor.ndim = a->t.ndim;
    e->mt.dl_tensor.dtype.code = a->t.dtype.code;
    e->mt.dl_tensor.dtype.bits = a->t.dtype.bits;
    e->mt.dl_tensor.dtype.lanes = a->t.dtype.lanes;
    e->mt.dl_tensor.shape = a->dims;
    e->mt.dl_tensor.strides = NULL;
    e->mt.dl_tensor.byte_offset = 0;
    e->mt.manager_ctx = e;
    e->mt.deleter = pl_array_export_delete;
    *out_managed = &e->mt;
    return NULL;
}

pl_status *pl_array_from_dlpack(pl_runtime *rt, void *managed, pl_array **out)
{
    (void)rt;
    if (managed == NULL || out == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "pl_array_from_dlpack: NULL argument");
    *out = NULL;
    DLManagedTensor *mt = managed;
    const DLTensor *t = &mt->dl_tensor;
    if (t->device.device_type != kDLCPU && t->device.device_type != kDLCUDAHost)
        return pl_status_create(PL_CODE_UNSUPPORTED,
                                "pl_array_from_dlpack: a tensor on DLPack device type %d; only "
                                "host memory (kDLCPU, kDLCUDAHost) is taken without a copy, "
                                "and the DLPack device of another module's memory is not "
                                "one Plinth can map to a module", (int)t->device.device_type);
    pl_dtype dtype = {t->dtype.code, t->dtype.bits, t->dtype.lanes};
    if (t->ndim > 0 && t->strides != NULL) {
        int64_t want = 1;
        for (int32_t k = t->ndim - 1; k >= 0; k--) {
            if (t->shape[k] != 1 && t->strides[k] != want)
                return pl_status_create(PL_CODE_UNSUPPORTED,
                                        "pl_array_from_dlpack: strides are not row-major "
                                        "(dim %d has stride %lld, dense would be %lld); "
                                        "make the tensor contiguous first", (int)k,
                                        (long long)t->strides[k], (long long)want);
            want *= t->shape[k];
        }
    }
    pl_array *a;
    PL_RETURN_IF_ERROR(pl_array_new(rt, NULL, 0, dtype, t->ndim, t->shape, &a));
    a->data = (char *)t->data + t->byte_offset;
    a->t.data = a->data;
    a->t.device = (pl_device){PL_DEVICE_CPU, 0};
    a->host_mem = true;
    a->imported = mt;
    *out = a;
    return NULL;
}

/* CPython's capsule accessors, found in the running interpreter (libplinth
 * does not link Python). */
typedef const char *(*pl_capsule_name_fn)(void *capsule);
typedef void *(*pl_capsule_pointer_fn)(void *capsule, const char *name);

void pl_dlpack_capsule_destructor(void *capsule)
{
    static _Atomic(pl_capsule_name_fn) get_name;
    static _Atomic(pl_capsule_pointer_fn) get_pointer;
    pl_capsule_name_fn name_fn = atomic_load(&get_name);
    pl_capsule_pointer_fn pointer_fn = atomic_load(&get_pointer);
    if (name_fn == NULL || pointer_fn == NULL) {
        *(void **)&name_fn = dlsym(RTLD_DEFAULT, "PyCapsule_GetName");
        *(void **)&pointer_fn = dlsym(RTLD_DEFAULT, "PyCapsule_GetPointer");
        if (name_fn == NULL || pointer_fn == NULL)
            return;
        atomic_store(&get_name, name_fn);
        atomic_store(&get_pointer, pointer_fn);
    }
    /* A consumer renames the capsule ("used_dltensor") and owns the tensor;
     * one nobody consumed still holds it. Neither call sets a Python error
     * on a capsule of that name, so this is safe while one is pending. */
    const char *name = name_fn(capsule);
    if (name == NULL || strcmp(name, "dltensor") != 0)
        return;
    DLManagedTensor *mt = pointer_fn(capsule, "dltensor");
    if (mt != NULL && mt->deleter != NULL)
        mt->deleter(mt);
}
