"""Plinth from Python: runtimes, devices, models and sessions.

A thin layer over libplinth's C API through ctypes (numpy for tensors)::

    import plinth
    with plinth.Runtime(config="backend.ini") as rt:
        print(rt.devices())
        model = rt.load_model("model.onnx", shapes={"input": (1, 3, 224, 224)})
        with model.session(order=["onednn", "cpu"]) as s:
            outputs = s.run({"input": x})

Every native handle is released by close() (or the with block), and when
its Python object is collected if the program forgets; libplinth counts
references itself, so a session keeps its model and runtime alive and the
order in which objects go does not matter. Failures raise plinth.Error with
the library's one-line message. docs/python.md describes the model."""
import ctypes
import json
import os
import threading
import weakref

import numpy as np

from . import _native as N

__all__ = ["Error", "Runtime", "Device", "Model", "Session", "Array", "array", "from_dlpack",
           "ops", "default_runtime", "library_path"]
__version__ = "0.1.0"

library_path = N.LIBRARY_PATH


class Error(Exception):
    """A failure reported by libplinth: .code (int), .code_name and the
    message (str(e))."""

    def __init__(self, message, code=12):
        super().__init__(message)
        self.code = code
        self.code_name = N.code_name(code).decode()


def _check(status):
    """Raises the status (a pl_status *) as Error, freeing it."""
    if status:
        code = N.status_code(status)
        message = N.status_message(status).decode(errors="replace")
        N.status_free(status)
        raise Error(message, code)


def _cstr(s):
    return s.encode() if isinstance(s, str) else s


def _cstr_array(items):
    arr = (ctypes.c_char_p * max(len(items), 1))()
    for i, s in enumerate(items):
        arr[i] = _cstr(s)
    return arr


# ---- dtypes ----------------------------------------------------------------

_TYPE_INT, _TYPE_UINT, _TYPE_FLOAT, _TYPE_BFLOAT, _TYPE_BOOL = 0, 1, 2, 4, 6
_TYPE_STRING = 128  # elements const char * (ABI 1.13); numpy object arrays of str
_TO_NUMPY = {
    (_TYPE_FLOAT, 32): np.float32, (_TYPE_FLOAT, 64): np.float64,
    (_TYPE_FLOAT, 16): np.float16, (_TYPE_INT, 8): np.int8, (_TYPE_INT, 32): np.int32,
    (_TYPE_INT, 64): np.int64, (_TYPE_UINT, 8): np.uint8, (_TYPE_BOOL, 8): np.bool_,
    (_TYPE_INT, 16): np.int16, (_TYPE_UINT, 16): np.uint16, (_TYPE_UINT, 32): np.uint32,
    (_TYPE_UINT, 64): np.uint64,
}
_NAMES = {
    (_TYPE_FLOAT, 32): "float32", (_TYPE_FLOAT, 64): "float64", (_TYPE_FLOAT, 16): "float16",
    (_TYPE_BFLOAT, 16): "bfloat16", (_TYPE_INT, 8): "int8", (_TYPE_INT, 32): "int32",
    (_TYPE_INT, 64): "int64", (_TYPE_UINT, 8): "uint8", (_TYPE_BOOL, 8): "bool",
    (_TYPE_INT, 16): "int16", (_TYPE_UINT, 16): "uint16", (_TYPE_UINT, 32): "uint32",
    (_TYPE_UINT, 64): "uint64", (_TYPE_STRING, 8 * ctypes.sizeof(ctypes.c_void_p)): "str",
}


_TENSOR_SIZE = ctypes.sizeof(N.Tensor)
_HOST = N.Device(1, 0)


def _dtype_key(dt):
    return (dt.code, dt.bits)


_c_char_from_buffer = ctypes.c_char.from_buffer
_addressof = ctypes.addressof


def _data_ptr(a):
    """The address of ndarray A's first element: through the buffer
    protocol (0.2 us), or numpy's interface dict for a read-only array
    (0.9 us, the dict made on every read)."""
    try:
        return _addressof(_c_char_from_buffer(a))
    except (TypeError, ValueError):
        return a.__array_interface__["data"][0]


def _strings_in(value):
    """A string input as (numpy array of its shape, what to keep alive, the
    address of its array of NUL-terminated UTF-8 pointers). Strings (the
    common case) are encoded as one buffer, joined by NULs, and the pointers
    computed from where the NULs fall (a string holding one adds a NUL:
    refused); other elements one by one."""
    a = np.asarray(value)
    items = a.reshape(-1).tolist()
    n = len(items)
    try:
        buf = ("\0".join(items) + "\0").encode()
    except TypeError:  # bytes or other objects among them
        buf = None
    if buf is not None:
        raw = np.frombuffer(buf, np.uint8)
        nul = np.flatnonzero(raw == 0)
        if len(nul) != max(n, 1):
            raise Error("session.run: a string input holds a NUL character", 2)
        ptrs = np.empty(max(n, 1), np.uint64)
        base = raw.__array_interface__["data"][0]
        ptrs[0] = base
        ptrs[1:n] = nul[:-1] + 1 + base
        return a, (buf, ptrs), ptrs.__array_interface__["data"][0]
    enc = [v if isinstance(v, bytes) else str(v).encode() for v in items]
    if any(b"\0" in v for v in enc):
        raise Error("session.run: a string input holds a NUL character", 2)
    arr = (ctypes.c_char_p * max(n, 1))(*enc)
    return a, arr, ctypes.addressof(arr)


def _strings_out(ptr, count):
    """The COUNT strings of a run's string output buffer at PTR (pointers,
    then the strings one after another in element order) as a flat object
    array: the bytes decoded at once and split at the NULs."""
    arr = np.empty(count, dtype=object)
    if count == 0:
        return arr
    ptrs = ctypes.cast(ptr, ctypes.POINTER(ctypes.c_void_p))
    first, last = ptrs[0], ptrs[count - 1]
    end = last + len(ctypes.string_at(last))
    parts = ctypes.string_at(first, end - first).decode("utf-8", "replace").split("\0")
    arr[:] = parts
    return arr


def _to_bf16_bits(a):
    """float32 -> bfloat16 bit patterns (uint16), rounding to nearest even."""
    u = np.require(a, dtype=np.float32, requirements="C").view(np.uint32)
    rounded = u + (np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))
    bits = (rounded >> np.uint32(16)).astype(np.uint16)
    nan = np.isnan(a)
    if nan.any():
        bits[nan] = np.uint16(0x7FC0)
    return bits


class TensorInfo:
    """A graph input or output: name, dtype (a numpy dtype name, or
    "bfloat16") and shape."""

    def __init__(self, name, dtype, shape):
        self.name, self.dtype, self.shape = name, dtype, shape

    def __repr__(self):
        return f"TensorInfo({self.name!r}, {self.dtype}, {self.shape})"


# ---- runtime and devices ---------------------------------------------------------

class _Handle:
    """Owns one native handle, released once by close() or collection."""

    def _own(self, handle, release):
        self._h = handle
        self._finalizer = weakref.finalize(self, release, handle)

    def close(self):
        """Releases the native handle now (idempotent)."""
        if getattr(self, "_finalizer", None) is not None:
            self._finalizer()
        self._h = None

    @property
    def closed(self):
        return getattr(self, "_h", None) is None

    def _handle(self):
        if self.closed:
            raise Error(f"{type(self).__name__} is closed", 10)
        return self._h

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Device:
    """One device of a loaded module: .module, .index, .name."""

    def __init__(self, runtime, module, index, name):
        self.runtime, self.module, self.index, self.name = runtime, module, index, name

    @property
    def spec(self):
        """"module:index", as [placement] order spells it."""
        return f"{self.module}:{self.index}"

    def configure(self, **keys):
        """Calls the device's module's configure with KEYS (values as text;
        none to query) and returns every key/value it answers as a dict."""
        return self.runtime.configure(self.module, **keys)

    def __repr__(self):
        return f"Device({self.module!r}, {self.index}, {self.name!r})"

    def __eq__(self, other):
        return (isinstance(other, Device) and other.runtime is self.runtime and
                (other.module, other.index) == (self.module, self.index))

    def __hash__(self):
        return hash((self.module, self.index))


def _default_config():
    """The tree's backend.ini when nothing else would be found and this
    package is used from a checkout, so a built tree works as is."""
    if os.environ.get("PLINTH_CONFIG") or os.path.exists("backend.ini"):
        return None
    tree_ini = os.path.join(N.TREE, "backend.ini")
    if os.path.exists(tree_ini) and os.path.exists(os.path.join(N.TREE, "modules.d")):
        return tree_ini
    return None


class Runtime(_Handle):
    """One configuration (backend.ini) and the modules it loaded.

    config: the backend.ini to read; None looks where the C library does
    ($PLINTH_CONFIG, ./backend.ini, the installed default) and, from a
    checkout, falls back to the tree's backend.ini. threads: the CPU
    thread budget (0 keeps the file's). secure_mode: ignore the environment
    and ./backend.ini, as a privileged process must."""

    def __init__(self, config=None, threads=0, secure_mode=False):
        if config is None:
            config = _default_config()
        opts = N.RuntimeOptions()
        opts.struct_size = ctypes.sizeof(opts)
        opts.config_path = _cstr(os.fspath(config)) if config is not None else None
        opts.secure_mode = bool(secure_mode)
        opts.threads = int(threads)
        h = ctypes.c_void_p()
        _check(N.runtime_create(ctypes.byref(opts), ctypes.byref(h)))
        self._own(h.value, N.runtime_destroy)

    @property
    def config_path(self):
        p = N.runtime_config_path(self._handle())
        return p.decode() if p else None

    @property
    def threads(self):
        return N.runtime_thread_count(self._handle())

    @property
    def placement(self):
        """[placement] order as the configuration gives it."""
        h = self._handle()
        return [N.runtime_placement(h, i).decode() for i in range(N.runtime_placement_count(h))]

    @property
    def diagnostics(self):
        """Lines about the configuration and every module not loaded."""
        h = self._handle()
        return [N.runtime_diagnostic(h, i).decode(errors="replace")
                for i in range(N.runtime_diagnostic_count(h))]

    def modules(self):
        """Every module file found: dicts with name, status ("loaded",
        "disabled", "rejected", "no-device"), version, vendor, path,
        reason, capabilities (names) and devices (a count)."""
        h = self._handle()
        out = []
        for i in range(N.runtime_module_count(h)):
            info = N.ModuleInfo()
            info.struct_size = ctypes.sizeof(info)
            _check(N.runtime_module_info(h, i, ctypes.byref(info)))
            caps = [n for b, n in enumerate(N.CAP_NAMES) if info.capabilities & (1 << b)]
            out.append({"name": info.name.decode(), "status": N.MODULE_STATUS.get(info.status, "?"),
                        "version": info.version.decode(), "vendor": info.vendor.decode(),
                        "path": info.path.decode(), "reason": info.reason.decode(errors="replace"),
                        "capabilities": caps, "devices": info.device_count})
        return out

    def devices(self):
        """The devices nodes can run on: every device of every loaded module
        that runs nodes (format modules such as onnx are not devices)."""
        h = self._handle()
        out = []
        for i, m in enumerate(self.modules()):
            if m["status"] != "loaded":
                continue
            if not {"imperative", "symbolic"} & set(m["capabilities"]):
                continue
            for d in range(m["devices"]):
                out.append(Device(self, m["name"], d, N.runtime_device_name(h, i, d).decode()))
        return out

    def device(self, module, index=0):
        """Device INDEX of MODULE; Error when there is none."""
        for d in self.devices():
            if d.module == module and d.index == index:
                return d
        known = ", ".join(d.spec for d in self.devices()) or "none"
        raise Error(f"no device {module}:{index} (devices: {known})", 3)

    def configure(self, module, **keys):
        """Calls MODULE's configure with KEYS and returns its outputs."""
        h = self._handle()
        names = list(keys)
        values = [str(v).lower() if isinstance(v, bool) else str(v) for v in keys.values()]
        _check(N.runtime_configure_module(h, _cstr(module), _cstr_array(names),
                                          _cstr_array(values), len(names)))
        i = N.runtime_find_module(h, _cstr(module))
        out = {}
        k, v = ctypes.c_char_p(), ctypes.c_char_p()
        for j in range(N.runtime_module_output_count(h, i)):
            N.runtime_module_output(h, i, j, ctypes.byref(k), ctypes.byref(v))
            out[k.value.decode()] = v.value.decode(errors="replace")
        return out

    def extensions(self, module):
        """MODULE's vendor functions: {name: signature} ("i(is)": returns an
        int, takes an int and a string; plinth/module.h, pl_extension)."""
        h = self._handle()
        i = N.runtime_find_module(h, _cstr(module))
        if i < 0:
            raise Error(f"module '{module}' is not loaded", 3)
        out = {}
        name, sig = ctypes.c_char_p(), ctypes.c_char_p()
        for k in range(N.runtime_extension_count(h, i)):
            N.runtime_extension(h, i, k, ctypes.byref(name), ctypes.byref(sig))
            out[name.value.decode()] = sig.value.decode()
        return out

    def call(self, module, name, *args):
        """Calls vendor function NAME of MODULE with ARGS, converted by its
        signature (i, l: int; f, d: float; s: str; p: None, an int address,
        a numpy array or a ctypes object, passed by address) and returns
        its result (None for v). A wrong name, count or type raises Error
        from the library, and nothing is called."""
        h = self._handle()
        sig = self.extensions(module).get(name)
        values = (N.Value * max(len(args), 1))()
        keep = []
        params = sig[2:-1] if sig else ""
        for k, a in enumerate(args):
            t = params[k] if k < len(params) else "?"
            v = values[k]
            try:
                if t in "il" and isinstance(a, (int, np.integer)) and not isinstance(a, bool):
                    v.type = t.encode()
                    setattr(v.as_, t, int(a))
                elif t in "fd" and isinstance(a, (int, float, np.number)) and not isinstance(a, bool):
                    v.type = t.encode()
                    setattr(v.as_, t, float(a))
                elif t == "s" and isinstance(a, (str, bytes)):
                    b = _cstr(a)
                    keep.append(b)
                    v.type, v.as_.s = b"s", b
                elif t == "p" and (a is None or isinstance(a, int)):
                    v.type, v.as_.p = b"p", a
                elif t == "p" and isinstance(a, np.ndarray):
                    keep.append(a)
                    v.type, v.as_.p = b"p", a.ctypes.data
                elif t == "p" and isinstance(a, ctypes._SimpleCData + (ctypes.Structure, ctypes.Array)):
                    keep.append(a)
                    v.type, v.as_.p = b"p", ctypes.addressof(a)
                else:
                    raise TypeError
            except (TypeError, OverflowError, ctypes.ArgumentError):
                raise Error(f"call {module}.{name}: argument {k + 1} ({type(a).__name__} "
                            f"{a!r}) does not fit the signature {sig!r}", 2) from None
        result = N.Value()
        _check(N.runtime_call(h, _cstr(module), _cstr(name), values, len(args),
                              ctypes.byref(result)))
        t = result.type.decode()
        return None if t == "v" else getattr(result.as_, t)

    def load_module(self, path):
        """Loads the module file PATH into this runtime, with every check
        discovery makes (owner and modes, identity note, pin, the probe in
        a child process); returns its devices. Error names the file and the
        reason when it does not load; nothing loaded before changes."""
        idx = ctypes.c_size_t()
        _check(N.runtime_load_module(self._handle(), _cstr(os.fspath(path)), ctypes.byref(idx)))
        name = self.modules()[idx.value]["name"]
        return [d for d in self.devices() if d.module == name]

    def wait_all(self):
        """Waits for every operator pushed on this runtime; raises the
        first failure since the last wait_all."""
        _check(N.runtime_wait_all(self._handle()))

    def load_model(self, path, shapes=None):
        """Loads a model (ONNX, or Plinth's JSON graph). shapes: {input:
        dims} binds inputs declared with symbolic dims."""
        return Model(self, path, shapes)


# ---- arrays ----------------------------------------------------------------------

def _dtype_of(np_dtype):
    np_dtype = np.dtype(np_dtype)
    for key, t in _TO_NUMPY.items():
        if np.dtype(t) == np_dtype:
            return N.DType(key[0], key[1], 1)
    raise Error(f"array: numpy dtype {np_dtype} is not one of Plinth's "
                f"(float32, float64, float16, int8, int16, int32, int64, uint8, uint16, "
                f"uint32, uint64, bool)", 2)


class Array(_Handle):
    """A dense array in one device's memory (a module's) or in host memory.
    Made by plinth.array() or plinth.from_dlpack(); .numpy() copies it to
    the host; numpy.from_dlpack(a) views a host array without a copy."""

    def __init__(self, handle, device):
        self._own(handle, N.array_destroy)
        self.device = device  # a Device, or None for host memory
        # The runtime whose operators used it (an array serves one).
        self.runtime = device.runtime if device is not None else None
        t = N.array_tensor(handle).contents
        self.shape = tuple(t.shape[k] for k in range(t.ndim))
        self._dtype = N.DType(t.dtype.code, t.dtype.bits, t.dtype.lanes)
        self.dtype = np.dtype(_TO_NUMPY[_dtype_key(self._dtype)])
        self._dl_device = (t.device.device_type, t.device.device_id)

    @property
    def nbytes(self):
        return N.array_bytes(self._handle())

    def wait(self):
        """Waits for the operators pushed on this array; raises their
        error."""
        _check(N.array_wait(self._handle()))
        return self

    def numpy(self):
        """A new numpy array holding a copy of the data."""
        out = np.empty(self.shape, dtype=self.dtype)
        _check(N.array_copy_to_host(self._handle(), out.ctypes.data_as(ctypes.c_void_p),
                                    out.nbytes))
        return out

    def to(self, device):
        """A copy of the array on DEVICE (a Device, or None for host)."""
        dst = _new_array(device, self._dtype, self.shape)
        _check(N.array_copy(dst._handle(), self._handle()))
        return dst

    def __dlpack_device__(self):
        return self._dl_device

    def __dlpack__(self, stream=None, **kw):
        """A DLPack capsule viewing the array (no copy). Copies are
        synchronous, so there is no stream to wait on."""
        managed = ctypes.c_void_p()
        _check(N.array_to_dlpack(self._handle(), ctypes.byref(managed)))
        return N.capsule_new(managed.value, b"dltensor", N.CAPSULE_DELETER)

    def __repr__(self):
        where = self.device.spec if self.device else "host"
        return f"plinth.Array(shape={self.shape}, dtype={self.dtype}, device={where})"


def _new_array(device, dtype, shape):
    dims = (ctypes.c_int64 * max(len(shape), 1))(*[int(d) for d in shape])
    h = ctypes.c_void_p()
    if device is None:
        _check(N.array_create(None, None, 0, dtype, len(shape), dims, ctypes.byref(h)))
    else:
        _check(N.array_create(device.runtime._handle(), _cstr(device.module), device.index,
                              dtype, len(shape), dims, ctypes.byref(h)))
    return Array(h.value, device)


def array(obj, device=None, dtype=None):
    """A new Array holding a copy of OBJ (anything numpy.asarray takes) on
    DEVICE (a Device from rt.device(); None for host memory)."""
    a = np.require(obj, dtype=dtype, requirements="C")  # (keeps a 0-d array 0-d)
    out = _new_array(device, _dtype_of(a.dtype), a.shape)
    _check(N.array_copy_from_host(out._handle(), a.ctypes.data_as(ctypes.c_void_p), a.nbytes))
    return out


def from_dlpack(obj):
    """An Array viewing OBJ's memory without a copy, through DLPack (OBJ
    has __dlpack__, or is a DLPack capsule). Only host memory (kDLCPU) is
    taken; the array keeps OBJ's memory alive."""
    capsule = obj.__dlpack__() if hasattr(obj, "__dlpack__") else obj
    ptr = N.capsule_get_pointer(capsule, b"dltensor")
    h = ctypes.c_void_p()
    _check(N.array_from_dlpack(None, ptr, ctypes.byref(h)))
    # The array owns the tensor now; the capsule must not delete it.
    N.capsule_set_name(capsule, b"used_dltensor")
    return Array(h.value, None)


# ---- eager operators ----------------------------------------------------------------

_DEFAULT_RUNTIME = None


def default_runtime():
    """The runtime that operators on host arrays use when no array names
    one: made on first use with Runtime()'s defaults."""
    global _DEFAULT_RUNTIME
    if _DEFAULT_RUNTIME is None or _DEFAULT_RUNTIME.closed:
        _DEFAULT_RUNTIME = Runtime()
    return _DEFAULT_RUNTIME


def _op_attr(name, value):
    a = N.OpAttr()
    a.name = _cstr(name)
    keep = []
    if isinstance(value, (bool, int, np.integer)):
        a.type, a.i = b"i", int(value)
    elif isinstance(value, (float, np.floating)):
        a.type, a.f = b"f", float(value)
    elif isinstance(value, (str, bytes)):
        b = _cstr(value)
        keep.append(b)
        a.type, a.s = b"s", b
    elif isinstance(value, (list, tuple, np.ndarray)):
        vals = list(np.asarray(value).ravel()) if isinstance(value, np.ndarray) else list(value)
        if all(isinstance(v, (bool, int, np.integer)) for v in vals):
            arr = (ctypes.c_int64 * max(len(vals), 1))(*[int(v) for v in vals])
            a.type, a.ints = b"I", arr
        else:
            arr = (ctypes.c_double * max(len(vals), 1))(*[float(v) for v in vals])
            a.type, a.floats = b"F", arr
        a.n = len(vals)
        keep.append(arr)
    else:
        raise Error(f"attribute {name}: a {type(value).__name__} is not an int, float, str or "
                    f"list of them", 2)
    return a, keep


def _run_op(op, args, kw):
    """plinth.ops.<op>(*inputs, **attributes): see the ops docstring."""
    out = kw.pop("out", None)
    add_to = bool(kw.pop("add_to", False))
    n_out = kw.pop("outputs", None)
    rt = kw.pop("runtime", None)
    inputs = []
    for a in args:
        if a is None or isinstance(a, Array):
            inputs.append(a)
        else:
            inputs.append(array(a))
    if rt is None:
        rt = next((a.device.runtime for a in inputs if a is not None and a.device), None)
    if rt is None:  # host arrays an operator used before keep its runtime
        rt = next((a.runtime for a in inputs if a is not None and a.runtime), None)
    if rt is None:
        rt = default_runtime()
    outs = list(out) if isinstance(out, (list, tuple)) else ([out] if out is not None else [])
    n_out = n_out or max(len(outs), 1)
    if outs and len(outs) != n_out:
        raise Error(f"{op}: {len(outs)} out arrays for {n_out} outputs", 2)
    keep = []
    attrs = (N.OpAttr * max(len(kw), 1))()
    for k, (name, value) in enumerate(kw.items()):
        attrs[k], kk = _op_attr(name, value)
        keep += kk
    ins = (ctypes.c_void_p * max(len(inputs), 1))(*[a._handle() if a is not None else None
                                                    for a in inputs])
    res = (ctypes.c_void_p * n_out)(*[o._handle() for o in outs] if outs else [None] * n_out)
    _check(N.op_run(rt._handle(), _cstr(op), attrs, len(kw), ins, len(inputs), res, n_out,
                    N.OP_ADD_TO if add_to else 0))
    for a in inputs + outs:
        if a is not None:
            a.runtime = rt
    if outs:
        result = outs
    else:
        device = next((a.device for a in inputs if a is not None and a.device), None)
        result = [Array(res[k], device) for k in range(n_out)]
        for a in result:
            a.runtime = rt
    return result[0] if n_out == 1 else tuple(result)


class _Ops:
    """Every ONNX operator by name: plinth.ops.Add(a, b),
    plinth.ops.Transpose(x, perm=[1, 0]), plinth.ops.TopK(x, k, outputs=2).
    Inputs are Arrays (numpy arrays and scalars become host arrays; None is
    an absent optional input), attributes keyword arguments (int, float,
    str, lists). out= writes into given arrays (with add_to=True: out +=
    op(...)); outputs=N for ops with several outputs. The call returns at
    once: the op runs on the engine, on the inputs' device (host arrays on
    cpu); a.wait(), a.numpy() or rt.wait_all() wait for it and raise what
    went wrong."""

    def __getattr__(self, op):
        if op.startswith("_"):
            raise AttributeError(op)

        def call(*args, **kw):
            return _run_op(op, args, kw)
        call.__name__ = op
        call.__doc__ = f"The ONNX operator {op} (see plinth.ops)."
        return call


ops = _Ops()


# ---- models and sessions -----------------------------------------------------------

class Model(_Handle):
    """A loaded graph, validated and typed; sessions are made from it."""

    def __init__(self, runtime, path, shapes=None):
        self.runtime = runtime
        self.path = os.fspath(path)
        h = ctypes.c_void_p()
        _check(N.model_load(runtime._handle(), _cstr(self.path), ctypes.byref(h)))
        self._own(h.value, N.model_destroy)
        self._sessions = 0
        for name, dims in (shapes or {}).items():
            self.bind(name, dims)

    @property
    def node_count(self):
        return N.model_node_count(self._handle())

    def bind(self, name, dims):
        """Gives input NAME concrete dims (before any session)."""
        if self._sessions:
            raise Error(f"{self.path}: bind '{name}' before making sessions", 10)
        arr = (ctypes.c_int64 * max(len(dims), 1))(*[int(d) for d in dims])
        _check(N.model_bind_input(self._handle(), _cstr(name), len(dims), arr))

    def session(self, order=None, device=None, pins=None, strict=None, choose=None,
                min_subgraph_nodes=0, io_device=None, measure=None):
        """Makes a session. order: backends offered the nodes ("module" or
        "module:device" strings, or Device objects); device: one Device (or
        "module:index") to prefer, cpu taking the rest; pins: {node:
        backend}; strict: a failed compile fails the session; choose:
        "cost" or "first"; io_device: where inputs and outputs live (a
        Device or "module:index"; None is host memory): such a session
        runs with run_arrays on arrays there, with no copy through the
        host; measure: whether a subgraph that runs far slower than
        estimated over the first runs is planned again (choose = "cost";
        its warning is in warnings()). Anything not given is as
        [placement] says."""
        if order is not None and device is not None:
            raise Error("session: give order or device, not both", 2)
        if device is not None:
            order = [device, "cpu"]
        self._sessions += 1
        return Session(self, order, pins, strict, choose, min_subgraph_nodes, io_device,
                       measure)


def _spec(backend):
    return backend.spec if isinstance(backend, Device) else str(backend)


class Session(_Handle):
    """A model made ready to run: partitioned, compiled, planned."""

    def __init__(self, model, order=None, pins=None, strict=None, choose=None,
                 min_subgraph_nodes=0, io_device=None, measure=None):
        self.model = model
        opts = N.SessionOptions()
        opts.struct_size = ctypes.sizeof(opts)
        keep = []
        if order is not None:
            specs = [_spec(b) for b in order]
            arr = _cstr_array(specs)
            keep.append(arr)
            opts.order, opts.n_order = arr, len(specs)
        if pins is not None:
            items = [f"{node}={_spec(b)}" for node, b in dict(pins).items()]
            arr = _cstr_array(items)
            keep.append(arr)
            opts.pins, opts.n_pins = arr, len(items)
        if strict is not None:
            opts.strict = N.OPTION_YES if strict else N.OPTION_NO
        if choose is not None:
            if choose not in ("cost", "first"):
                raise Error(f"session: choose must be 'cost' or 'first', not {choose!r}", 2)
            opts.choose_by_cost = N.OPTION_YES if choose == "cost" else N.OPTION_NO
        opts.min_subgraph_nodes = int(min_subgraph_nodes)
        if measure is not None:
            opts.measure = N.OPTION_YES if measure else N.OPTION_NO
        if io_device is not None:
            spec = _cstr(_spec(io_device))
            keep.append(spec)
            opts.io_device = spec
        h = ctypes.c_void_p()
        _check(N.session_create(model._handle(), ctypes.byref(opts), ctypes.byref(h)))
        self._own(h.value, N.session_destroy)
        self.inputs = [self._info(N.session_input_name, N.session_input_type, i)
                       for i in range(N.session_input_count(h.value))]
        self.outputs = [self._info(N.session_output_name, N.session_output_type, i)
                        for i in range(N.session_output_count(h.value))]
        self._in_type = N.IO * max(len(self.inputs), 1)
        self._out_type = N.IO * max(len(self.outputs), 1)
        self._fast = threading.local()  # _fast_run's structs, one set per thread

    def _info(self, name_fn, type_fn, i):
        dt, nd, dims = N.DType(), ctypes.c_int32(), ctypes.POINTER(ctypes.c_int64)()
        type_fn(self._h, i, ctypes.byref(dt), ctypes.byref(nd), ctypes.byref(dims))
        shape = tuple(dims[k] for k in range(nd.value))
        info = TensorInfo(name_fn(self._h, i).decode(), _NAMES.get(_dtype_key(dt), "?"), shape)
        info._dtype = N.DType(dt.code, dt.bits, dt.lanes)
        info.rank_known = nd.value >= 0  # else: any rank, learnt per run
        # what every run needs, worked out once (run's per-call cost was
        # mostly this): the name as bytes, the numpy dtype, and for a shape
        # known in full the shape itself and a ctypes copy of it (only read)
        info._cname = info.name.encode()
        info._np = np.uint16 if info.dtype == "bfloat16" else _TO_NUMPY.get(_dtype_key(dt))
        info._fixed = info.rank_known and all(d >= 0 for d in shape)
        info._cshape = (ctypes.c_int64 * max(len(shape), 1))(*shape) if info._fixed else None
        return info

    def _tensor(self, info, data_ptr, shape_arr, ndim=None):
        # (positional: the fields' order, data to struct_size; faster than keywords)
        return N.Tensor(data_ptr, _HOST, len(info.shape) if ndim is None else ndim, info._dtype,
                        shape_arr, None, 0, _TENSOR_SIZE)

    def _wanted(self, outputs, what):
        """The TensorInfo of the outputs named (all when None), checked."""
        if outputs is not None:
            bad = [n for n in outputs if n not in {o.name for o in self.outputs}]
            if bad:
                raise Error(f"{what}: unknown output(s) {bad} "
                            f"(outputs: {[o.name for o in self.outputs]})", 2)
        return [o for o in self.outputs if outputs is None or o.name in outputs]

    def _fast_setup(self):
        """The structs of _fast_run for this thread, or False when some
        input or output is not of known rank and a plain numpy dtype
        (strings, bfloat16 and unknown ranks take run's general path)."""
        plain = lambda i: i.rank_known and i.dtype not in ("str", "bfloat16", "?")
        if not self.inputs or not all(plain(i) for i in self.inputs + self.outputs):
            self._fast.io = False
            return False
        ins, outs = self._in_type(), self._out_type()
        in_spec, out_spec = [], []
        for k, info in enumerate(self.inputs):
            # an open dim: a ctypes shape of the struct's own, filled per run
            cs = None if info._fixed else (ctypes.c_int64 * max(len(info.shape), 1))()
            ins[k].name = info._cname
            ins[k].tensor = self._tensor(info, None, info._cshape if info._fixed else cs)
            in_spec.append((info.name, np.dtype(info._np), info.shape, ins[k].tensor, cs))
        for k, info in enumerate(self.outputs):
            outs[k].name = info._cname
            outs[k].tensor = self._tensor(info, None, info._cshape)
            out_spec.append((info.name, np.dtype(info._np), info.shape, outs[k].tensor,
                             info._fixed))
        self._fast.io = (ins, outs, in_spec, out_spec)
        return self._fast.io

    def _fast_run(self, h, feeds):
        """run() for the common call, about three times cheaper: every input
        an ndarray of the declared dtype in C order whose shape fits the
        declared one, all outputs wanted; the ctypes structs are made once
        per thread and only the data pointers (and the open dims) change;
        an output of open dims comes back as the run made it. None when it
        does not apply (run's general path then converts, checks and says
        what is wrong)."""
        io = getattr(self._fast, "io", None)
        if io is None:
            io = self._fast_setup()
        if io is False or len(feeds) != len(io[2]):
            return None
        ins, outs, in_spec, out_spec = io
        for name, dt, shape, view, cs in in_spec:
            a = feeds.get(name)
            if type(a) is not np.ndarray or a.dtype is not dt or not a.flags.c_contiguous:
                return None
            if cs is None:
                if a.shape != shape:
                    return None
            else:
                got = a.shape
                if len(got) != len(shape):
                    return None
                for k, d in enumerate(shape):
                    if d >= 0 and got[k] != d:
                        return None
                    cs[k] = got[k]
            view.data = _data_ptr(a)
        res = {}
        for name, dt, shape, view, fixed in out_spec:
            if fixed:
                y = np.empty(shape, dt)
                view.data = _data_ptr(y)
                res[name] = y
            else:  # the run allocates it and says its shape
                view.data = None
                view.shape = None
                view.ndim = len(shape)
        st = N.session_run(h, ins, len(in_spec), outs, len(out_spec))
        for name, dt, shape, view, fixed in out_spec:
            if fixed:
                continue
            if view.data:
                y = np.empty(tuple(view.shape[d] for d in range(view.ndim)), dt)
                if y.nbytes:
                    ctypes.memmove(_data_ptr(y), view.data, y.nbytes)
                N.buffer_free(view.data)
                res[name] = y
            else:
                res[name] = None
            view.data = None
            view.shape = None
        _check(st)
        return res

    def run(self, feeds, outputs=None):
        """Runs once. feeds: {input name: array-like} (converted to the
        declared dtype; the shape must be the declared one). outputs: the
        names wanted (all by default). Returns {name: numpy.ndarray}; a
        bfloat16 output comes back as float32 (exact)."""
        h = self._handle()
        if outputs is None:
            fast = self._fast_run(h, feeds)
            if fast is not None:
                return fast
        if len(feeds) != len(self.inputs) or any(i.name not in feeds for i in self.inputs):
            missing = [i.name for i in self.inputs if i.name not in feeds]
            unknown = [n for n in feeds if n not in {i.name for i in self.inputs}]
            raise Error("session.run: " + "; ".join(
                ([f"missing input(s) {missing}"] if missing else []) +
                ([f"unknown input(s) {unknown}"] if unknown else [])) +
                f" (inputs: {[i.name for i in self.inputs]})", 2)
        keep = []
        ins = self._in_type()
        for k, info in enumerate(self.inputs):
            value = feeds[info.name]
            if info.dtype == "str":
                a, data, str_ptr = _strings_in(value)
                keep.append(data)
            elif info.dtype == "bfloat16":
                a = np.asarray(value)
                a = np.require(a, requirements="C") if a.dtype == np.uint16 else _to_bf16_bits(a)
            elif (type(value) is np.ndarray and value.dtype == info._np and
                  value.flags.c_contiguous):
                a = value  # as it is (the common case: no conversion, no copy)
            else:
                # (np.require, not np.ascontiguousarray: that makes a 0-d
                # array, a scalar input such as Silero VAD's sample rate, 1-d)
                a = np.require(value, dtype=info._np, requirements="C")
            if info._fixed and a.shape == info.shape:
                shape = info._cshape
            else:
                if info.rank_known and (a.ndim != len(info.shape) or any(
                        d >= 0 and d != n for d, n in zip(info.shape, a.shape))):
                    raise Error(f"session.run: input '{info.name}' has shape {tuple(a.shape)}, "
                                f"the session expects {info.shape} (-1: any size)", 2)
                shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
            keep += [a, shape]
            io = ins[k]
            io.name = info._cname
            ptr = str_ptr if info.dtype == "str" else a.__array_interface__["data"][0]
            io.tensor = self._tensor(info, ptr, shape, a.ndim)
        wanted = self.outputs if outputs is None else self._wanted(outputs, "session.run")
        outs = self._out_type() if outputs is None else (N.IO * max(len(wanted), 1))()
        results = []
        for k, info in enumerate(wanted):
            outs[k].name = info._cname
            if not info._fixed or info.dtype == "str":
                # known only once the run computed it (and strings always):
                # the run allocates
                outs[k].tensor = self._tensor(info, None, None)
                results.append(info._np if info.dtype != "str" else "str")
                continue
            a = np.empty(info.shape, dtype=info._np)
            keep.append(a)
            outs[k].tensor = self._tensor(info, a.__array_interface__["data"][0], info._cshape)
            results.append(a)
        st = N.session_run(h, ins, len(self.inputs), outs, len(wanted))
        for k, a in enumerate(results):
            if isinstance(a, np.ndarray):
                continue
            t = outs[k].tensor
            if not t.data:
                results[k] = None
                continue
            dims = tuple(t.shape[d] for d in range(t.ndim))
            if isinstance(a, str):  # strings: pointers into the run's buffer
                arr = _strings_out(t.data, int(np.prod(dims, dtype=np.int64))).reshape(dims)
            else:
                arr = np.empty(dims, dtype=a)
            if arr.dtype != object and arr.nbytes:  # one copy, out of the run's buffer
                ctypes.memmove(arr.ctypes.data, t.data, arr.nbytes)
            results[k] = arr
            N.buffer_free(t.data)
        _check(st)
        out = {}
        for info, a in zip(wanted, results):
            if info.dtype == "bfloat16":
                a = (a.astype(np.uint32) << np.uint32(16)).view(np.float32)
            out[info.name] = a
        return out

    @property
    def io_device(self):
        """Where inputs and outputs live: "host" or "module:index"."""
        return N.session_io_device(self._handle()).decode()

    def run_arrays(self, feeds, outputs=None):
        """Runs once on plinth Arrays. feeds: {input name: Array} on the
        session's io_device (host arrays for a host session). outputs: the
        names wanted (all by default). Returns {name: Array} there; nothing
        passes through host memory when the subgraphs run on that device."""
        h = self._handle()
        feeds = dict(feeds)
        bad = [n for n, a in feeds.items() if not isinstance(a, Array)]
        if bad:
            raise Error(f"session.run_arrays: input(s) {bad} are not plinth.Array "
                        "(plinth.array(x, device) makes one)", 2)
        wanted = [o.name for o in self._wanted(outputs, "session.run_arrays")]
        ins = (N.ArrayIO * max(len(feeds), 1))()
        for k, (name, a) in enumerate(feeds.items()):
            ins[k].name = _cstr(name)
            ins[k].array = a._handle()
        outs = (N.ArrayIO * max(len(wanted), 1))()
        for k, name in enumerate(wanted):
            outs[k].name = _cstr(name)
        _check(N.session_run_arrays(h, ins, len(feeds), outs, len(wanted)))
        where = self.io_device
        device = None
        if where != "host":
            module, index = where.rsplit(":", 1)
            device = self.model.runtime.device(module, int(index))
        return {name: Array(outs[k].array, device) for k, name in enumerate(wanted)}

    @property
    def warnings(self):
        h = self._handle()
        return [N.session_warning(h, i).decode(errors="replace")
                for i in range(N.session_warning_count(h))]

    def steps(self):
        """The steps of a run: dicts with name, backend, runs and total_ns; a compiled
        subgraph whose nodes are timed (profile_nodes) also has "nodes", a list of
        dicts with node, op, min_ns, total_ns and runs in the subgraph's order."""
        h = self._handle()
        out = []
        for i in range(N.session_step_count(h)):
            name, backend = ctypes.c_char_p(), ctypes.c_char_p()
            ns, runs = ctypes.c_uint64(), ctypes.c_uint64()
            N.session_step_info(h, i, ctypes.byref(name), ctypes.byref(backend),
                                ctypes.byref(ns), ctypes.byref(runs))
            step = {"name": name.value.decode(), "backend": backend.value.decode(),
                    "runs": runs.value, "total_ns": ns.value}
            count = N.session_step_nodes(h, i, None, 0)
            if count:
                buf = (N.NodeProfile * count)()
                count = min(count, N.session_step_nodes(h, i, buf, count))
                step["nodes"] = [{"node": t.node.decode(), "op": t.op.decode(),
                                  "min_ns": t.min_ns, "total_ns": t.total_ns, "runs": t.runs}
                                 for t in buf[:count]]
            out.append(step)
        return out

    def profile_nodes(self, on=True):
        """Times the nodes inside compiled subgraphs whose module can (the onednn
        module) from the next run on (on=False stops); steps() then lists them. Returns
        how many subgraphs time their nodes. Not while a run is under way."""
        return N.session_profile_nodes(self._handle(), bool(on))

    def describe(self):
        """What the session does (as `plinth explain --json` prints it)."""
        text = ctypes.c_void_p()
        _check(N.session_describe(self._handle(), ctypes.byref(text)))
        try:
            return json.loads(ctypes.string_at(text.value).decode())
        finally:
            N.string_free(text.value)
