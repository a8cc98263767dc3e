"""dt_plinth: drives libplinth through its C API (core/include/plinth/plinth.h)
with ctypes, for the differential tester.

One Backend per placement order (`order = cpu`, `order = onednn, cpu`, ...):
each is one pl_runtime made once from a backend.ini this file writes, so a
graph costs a model load, a session and a run, not a process. run() returns
the outputs as numpy arrays and how many nodes each module took (read from
the session's explain JSON), or the status that stopped it.
"""
import ctypes
import json
import os

import numpy as np

PL_CODE_UNSUPPORTED = 4
PL_MODULE_LOADED = 0

# pl_dtype codes (DLPack's), bits -> numpy dtype and the format's name.
DTYPES = {
    "f32": (2, 32, np.float32), "f64": (2, 64, np.float64),
    "f16": (2, 16, np.float16), "bf16": (4, 16, np.uint16),
    "u8": (1, 8, np.uint8), "i8": (0, 8, np.int8), "i32": (0, 32, np.int32),
    "i64": (0, 64, np.int64), "bool": (6, 8, np.bool_),
}
CODE_TO_NAME = {(c, b): n for n, (c, b, _) in DTYPES.items()}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32),
                ("dtype", _DType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64), ("struct_size", ctypes.c_uint32),
                ("flags", ctypes.c_uint32), ("layout", ctypes.c_char_p),
                ("csr", ctypes.c_void_p)]


class _IO(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("tensor", _Tensor)]


class _RuntimeOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("config_path", ctypes.c_char_p),
                ("secure_mode", ctypes.c_bool), ("ignore_environment", ctypes.c_bool),
                ("log_sink", ctypes.c_void_p), ("log_user", ctypes.c_void_p),
                ("threads", ctypes.c_int)]


class _ModuleInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("status", ctypes.c_int),
                ("name", ctypes.c_char_p), ("version", ctypes.c_char_p),
                ("vendor", ctypes.c_char_p), ("path", ctypes.c_char_p),
                ("reason", ctypes.c_char_p), ("capabilities", ctypes.c_uint64),
                ("device_count", ctypes.c_int), ("abi_major", ctypes.c_uint32),
                ("abi_minor", ctypes.c_uint32)]


_P = ctypes.c_void_p


def _load_library(path):
    lib = ctypes.CDLL(path)
    sigs = {
        "pl_status_code": (ctypes.c_int, [_P]),
        "pl_status_message": (ctypes.c_char_p, [_P]),
        "pl_status_free": (None, [_P]),
        "pl_runtime_create": (_P, [ctypes.POINTER(_RuntimeOptions), ctypes.POINTER(_P)]),
        "pl_runtime_destroy": (None, [_P]),
        "pl_runtime_module_count": (ctypes.c_size_t, [_P]),
        "pl_runtime_module_info": (_P, [_P, ctypes.c_size_t, ctypes.POINTER(_ModuleInfo)]),
        "pl_model_load": (_P, [_P, ctypes.c_char_p, ctypes.POINTER(_P)]),
        "pl_model_destroy": (None, [_P]),
        "pl_session_create": (_P, [_P, _P, ctypes.POINTER(_P)]),
        "pl_session_destroy": (None, [_P]),
        "pl_session_output_count": (ctypes.c_size_t, [_P]),
        "pl_session_output_name": (ctypes.c_char_p, [_P, ctypes.c_size_t]),
        "pl_session_run": (_P, [_P, ctypes.POINTER(_IO), ctypes.c_size_t,
                                ctypes.POINTER(_IO), ctypes.c_size_t]),
        "pl_buffer_free": (None, [_P]),
        "pl_session_describe": (_P, [_P, ctypes.POINTER(ctypes.c_void_p)]),
        "pl_string_free": (None, [_P]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    return lib


class PlinthError(Exception):
    """A status from the library: its code, message and the stage."""

    def __init__(self, stage, code, message):
        super().__init__("%s: %s" % (stage, message))
        self.stage = stage
        self.code = code
        self.message = message
        self.placed = {}   # the placement, when the session was made


class Library:
    """libplinth, loaded once per process."""

    def __init__(self, path):
        self.lib = _load_library(path)

    def check(self, status, stage):
        if status:
            code = self.lib.pl_status_code(status)
            msg = self.lib.pl_status_message(status).decode("utf-8", "replace")
            self.lib.pl_status_free(status)
            raise PlinthError(stage, code, msg)


class Backend:
    """One placement order on one runtime. NAME is the module under test
    (the first in ORDER); cpu's own config has NAME cpu."""

    def __init__(self, library, name, order, module_dir, work_dir, threads):
        self.library = library
        self.name = name
        self.order = order
        self.nodes = {}  # node name -> (backend, refusal reasons), from the last run
        ini = os.path.join(work_dir, "backend-%s.ini" % name)
        with open(ini, "w") as f:
            f.write("[runtime]\nmodules = %s\nengine = threaded\nthreads = %d\n"
                    "cache_dir =\nlog = error\n\n[placement]\norder = %s\n"
                    "min_subgraph_nodes = 1\nstrict = no\nchoose = first\n"
                    % (module_dir, threads, ", ".join(order)))
        lib = library.lib
        opts = _RuntimeOptions(struct_size=ctypes.sizeof(_RuntimeOptions),
                               config_path=ini.encode(), ignore_environment=True)
        rt = _P()
        library.check(lib.pl_runtime_create(ctypes.byref(opts), ctypes.byref(rt)),
                      "runtime")
        self.runtime = rt
        self.loaded = {}
        for i in range(lib.pl_runtime_module_count(rt)):
            info = _ModuleInfo(struct_size=ctypes.sizeof(_ModuleInfo))
            library.check(lib.pl_runtime_module_info(rt, i, ctypes.byref(info)), "module info")
            self.loaded[info.name.decode()] = (info.status == PL_MODULE_LOADED,
                                               (info.reason or b"").decode())

    def available(self):
        """(True, "") when every module of the order is loaded, else
        (False, why)."""
        for m in self.order:
            ok, why = self.loaded.get(m, (False, "not found"))
            if not ok:
                return False, "%s: %s" % (m, why or "not loaded")
        return True, ""

    def close(self):
        if self.runtime:
            self.library.lib.pl_runtime_destroy(self.runtime)
            self.runtime = None

    def run(self, json_path, inputs):
        """Loads, places, runs. INPUTS: list of (name, np.ndarray in the
        graph's dtype). Returns (outputs {name: array}, placed {module: n})
        or raises PlinthError (stage load, session, explain or run)."""
        lib = self.library.lib
        check = self.library.check
        self.nodes = {}
        model = _P()
        check(lib.pl_model_load(self.runtime, json_path.encode(), ctypes.byref(model)), "load")
        sess = _P()
        try:
            check(lib.pl_session_create(model, None, ctypes.byref(sess)), "session")
        finally:
            lib.pl_model_destroy(model)
        placed = {}
        try:
            placed = self._placement(sess)
            outs = self._run(sess, inputs)
        except PlinthError as e:
            e.placed = placed
            raise
        finally:
            lib.pl_session_destroy(sess)
        return outs, placed

    def _placement(self, sess):
        lib = self.library.lib
        text = ctypes.c_void_p()
        self.library.check(lib.pl_session_describe(sess, ctypes.byref(text)), "describe")
        doc = json.loads(ctypes.string_at(text.value).decode())
        lib.pl_string_free(text)
        placed = {}
        for p in doc.get("placement", []):
            b = p.get("backend") or "?"
            placed[b] = placed.get(b, 0) + 1
            self.nodes[p.get("node")] = (b, p.get("reasons") or {})
        return placed

    def _run(self, sess, inputs):
        lib = self.library.lib
        keep = []
        ins = (_IO * max(1, len(inputs)))()
        for i, (name, arr, dtname) in enumerate(inputs):
            arr = np.ascontiguousarray(arr)
            shape = (ctypes.c_int64 * max(1, arr.ndim))(*arr.shape)
            keep += [arr, shape]
            code, bits, _ = DTYPES[dtname]
            ins[i].name = name.encode()
            ins[i].tensor = _Tensor(data=arr.ctypes.data, device=_Device(1, 0),
                                    ndim=arr.ndim, dtype=_DType(code, bits, 1), shape=shape,
                                    struct_size=ctypes.sizeof(_Tensor))
        n_out = lib.pl_session_output_count(sess)
        names = [lib.pl_session_output_name(sess, i) for i in range(n_out)]
        outs = (_IO * max(1, n_out))()
        for i, nm in enumerate(names):
            outs[i].name = nm
            outs[i].tensor = _Tensor(struct_size=ctypes.sizeof(_Tensor))
        self.library.check(lib.pl_session_run(sess, ins, len(inputs), outs, n_out), "run")
        result = {}
        for i, nm in enumerate(names):
            t = outs[i].tensor
            dt = CODE_TO_NAME.get((t.dtype.code, t.dtype.bits))
            shape = tuple(t.shape[d] for d in range(t.ndim))
            npdt = np.dtype(DTYPES[dt][2]) if dt else np.dtype(np.uint8)
            count = int(np.prod(shape, dtype=np.int64))
            if t.data and count:
                raw = ctypes.string_at(t.data + t.byte_offset, count * npdt.itemsize)
                arr = np.frombuffer(raw, dtype=npdt).reshape(shape).copy()
            else:
                arr = np.zeros(shape, dtype=npdt)
            if t.data:
                lib.pl_buffer_free(t.data)
            result[nm.decode()] = (arr, dt)
        return result
