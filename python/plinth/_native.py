"""ctypes declarations of libplinth's C API (core/include/plinth/plinth.h).

Only this file knows the C layout. The library is found, in order, at
$PLINTH_LIBRARY, in the build tree this package sits in (build/lib), then
by the dynamic loader (an installed libplinth.so.0)."""
import ctypes
import ctypes.util
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.dirname(os.path.dirname(_HERE))  # the source tree, from a checkout


def _candidates():
    env = os.environ.get("PLINTH_LIBRARY")
    if env:
        yield env
        return
    yield os.path.join(TREE, "build", "lib", "libplinth.so")
    yield "libplinth.so.0"
    found = ctypes.util.find_library("plinth")
    if found:
        yield found


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path} (no such file)")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append(f"{path} ({e})")
    raise ImportError("plinth: cannot load libplinth: tried " + "; ".join(tried) +
                      " (set PLINTH_LIBRARY to the library's path)")


lib, LIBRARY_PATH = _load()

c_char_p = ctypes.c_char_p
c_void_p = ctypes.c_void_p
c_size_t = ctypes.c_size_t


class Allocator(ctypes.Structure):
    _fields_ = [("self", c_void_p), ("ctl", c_void_p)]


LOG_SINK = ctypes.CFUNCTYPE(None, c_void_p, ctypes.c_int, c_char_p)


class RuntimeOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32),
                ("config_path", c_char_p),
                ("secure_mode", ctypes.c_bool),
                ("ignore_environment", ctypes.c_bool),
                ("log_sink", LOG_SINK),
                ("log_user", c_void_p),
                ("threads", ctypes.c_int),
                ("allocator", Allocator)]


class ModuleInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32),
                ("status", ctypes.c_int),
                ("name", c_char_p),
                ("version", c_char_p),
                ("vendor", c_char_p),
                ("path", c_char_p),
                ("reason", c_char_p),
                ("capabilities", ctypes.c_uint64),
                ("device_count", ctypes.c_int),
                ("abi_major", ctypes.c_uint32),
                ("abi_minor", ctypes.c_uint32)]


class SessionOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32),
                ("order", ctypes.POINTER(c_char_p)),
                ("n_order", c_size_t),
                ("pins", ctypes.POINTER(c_char_p)),
                ("n_pins", c_size_t),
                ("strict", ctypes.c_int),
                ("choose_by_cost", ctypes.c_int),
                ("min_subgraph_nodes", ctypes.c_int),
                ("io_device", c_char_p),
                ("measure", ctypes.c_int)]


class DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class Tensor(ctypes.Structure):
    _fields_ = [("data", c_void_p),
                ("device", Device),
                ("ndim", ctypes.c_int32),
                ("dtype", DType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64),
                ("struct_size", ctypes.c_uint32),
                ("flags", ctypes.c_uint32),
                ("layout", c_char_p),
                ("csr", c_void_p)]


class ValueUnion(ctypes.Union):
    _fields_ = [("i", ctypes.c_int32), ("l", ctypes.c_int64), ("f", ctypes.c_float),
                ("d", ctypes.c_double), ("s", c_char_p), ("p", c_void_p)]


class Value(ctypes.Structure):
    _fields_ = [("type", ctypes.c_char), ("as_", ValueUnion)]


class IO(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("tensor", Tensor)]


class ArrayIO(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("array", c_void_p)]


class NodeProfile(ctypes.Structure):
    _fields_ = [("node", c_char_p), ("op", c_char_p), ("min_ns", ctypes.c_uint64),
                ("total_ns", ctypes.c_uint64), ("runs", ctypes.c_uint64)]


# Module statuses and capabilities (plinth.h, plinth/module.h).
MODULE_STATUS = {0: "loaded", 1: "disabled", 2: "rejected", 3: "no-device"}
CAP_IMPERATIVE = 1 << 0
CAP_SYMBOLIC = 1 << 1
CAP_NAMES = ["imperative", "symbolic", "async", "export", "import", "host-memory",
             "pinned-thread"]
OPTION_KEEP, OPTION_NO, OPTION_YES = 0, 1, 2


def _fn(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


P = ctypes.POINTER
status_code = _fn("pl_status_code", ctypes.c_int, c_void_p)
status_message = _fn("pl_status_message", c_char_p, c_void_p)
status_free = _fn("pl_status_free", None, c_void_p)
code_name = _fn("pl_code_name", c_char_p, ctypes.c_int)
runtime_create = _fn("pl_runtime_create", c_void_p, P(RuntimeOptions), P(c_void_p))
runtime_destroy = _fn("pl_runtime_destroy", None, c_void_p)
runtime_config_path = _fn("pl_runtime_config_path", c_char_p, c_void_p)
runtime_diagnostic_count = _fn("pl_runtime_diagnostic_count", c_size_t, c_void_p)
runtime_diagnostic = _fn("pl_runtime_diagnostic", c_char_p, c_void_p, c_size_t)
runtime_module_count = _fn("pl_runtime_module_count", c_size_t, c_void_p)
runtime_module_info = _fn("pl_runtime_module_info", c_void_p, c_void_p, c_size_t, P(ModuleInfo))
runtime_find_module = _fn("pl_runtime_find_module", ctypes.c_long, c_void_p, c_char_p)
runtime_device_name = _fn("pl_runtime_device_name", c_char_p, c_void_p, c_size_t, ctypes.c_int)
runtime_module_output_count = _fn("pl_runtime_module_output_count", c_size_t, c_void_p, c_size_t)
runtime_module_output = _fn("pl_runtime_module_output", None, c_void_p, c_size_t, c_size_t,
                            P(c_char_p), P(c_char_p))
runtime_configure_module = _fn("pl_runtime_configure_module", c_void_p, c_void_p, c_char_p,
                               P(c_char_p), P(c_char_p), c_size_t)
runtime_extension_count = _fn("pl_runtime_extension_count", c_size_t, c_void_p, c_size_t)
runtime_extension = _fn("pl_runtime_extension", None, c_void_p, c_size_t, c_size_t,
                        P(c_char_p), P(c_char_p))
runtime_call = _fn("pl_runtime_call", c_void_p, c_void_p, c_char_p, c_char_p, P(Value),
                   c_size_t, P(Value))
runtime_thread_count = _fn("pl_runtime_thread_count", ctypes.c_int, c_void_p)
runtime_placement_count = _fn("pl_runtime_placement_count", c_size_t, c_void_p)
runtime_placement = _fn("pl_runtime_placement", c_char_p, c_void_p, c_size_t)
runtime_load_module = _fn("pl_runtime_load_module", c_void_p, c_void_p, c_char_p, P(c_size_t))
array_create = _fn("pl_array_create", c_void_p, c_void_p, c_char_p, ctypes.c_int, DType,
                   ctypes.c_int32, P(ctypes.c_int64), P(c_void_p))
array_destroy = _fn("pl_array_destroy", None, c_void_p)
array_tensor = _fn("pl_array_tensor", P(Tensor), c_void_p)
array_module = _fn("pl_array_module", c_char_p, c_void_p)
array_device = _fn("pl_array_device", ctypes.c_int, c_void_p)
array_bytes = _fn("pl_array_bytes", c_size_t, c_void_p)
array_copy_from_host = _fn("pl_array_copy_from_host", c_void_p, c_void_p, c_void_p, c_size_t)
array_copy_to_host = _fn("pl_array_copy_to_host", c_void_p, c_void_p, c_void_p, c_size_t)
array_copy = _fn("pl_array_copy", c_void_p, c_void_p, c_void_p)
array_to_dlpack = _fn("pl_array_to_dlpack", c_void_p, c_void_p, P(c_void_p))
array_from_dlpack = _fn("pl_array_from_dlpack", c_void_p, c_void_p, c_void_p, P(c_void_p))


class OpAttr(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("type", ctypes.c_char), ("i", ctypes.c_int64),
                ("f", ctypes.c_double), ("s", c_char_p),
                ("ints", ctypes.POINTER(ctypes.c_int64)),
                ("floats", ctypes.POINTER(ctypes.c_double)), ("n", c_size_t)]


op_run = _fn("pl_op_run", c_void_p, c_void_p, c_char_p, P(OpAttr), c_size_t, P(c_void_p),
             c_size_t, P(c_void_p), c_size_t, ctypes.c_uint32)
array_wait = _fn("pl_array_wait", c_void_p, c_void_p)
runtime_wait_all = _fn("pl_runtime_wait_all", c_void_p, c_void_p)
OP_ADD_TO = 1


class DLTensor(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("device", Device), ("ndim", ctypes.c_int32),
                ("dtype", DType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


DL_DELETER = ctypes.CFUNCTYPE(None, c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", DL_DELETER)]


# The CPython capsule functions DLPack's Python protocol uses.
_py = ctypes.pythonapi
capsule_new = _py.PyCapsule_New
capsule_new.restype = ctypes.py_object
capsule_new.argtypes = [c_void_p, c_char_p, c_void_p]
capsule_get_pointer = _py.PyCapsule_GetPointer
capsule_get_pointer.restype = c_void_p
capsule_get_pointer.argtypes = [ctypes.py_object, c_char_p]
capsule_set_name = _py.PyCapsule_SetName
capsule_set_name.restype = ctypes.c_int
capsule_set_name.argtypes = [ctypes.py_object, c_char_p]
# The capsule destructor lives in libplinth (C): a Python callback cannot
# run while the consumer that refused the capsule has an error pending.
CAPSULE_DELETER = ctypes.cast(lib.pl_dlpack_capsule_destructor, c_void_p)

model_load = _fn("pl_model_load", c_void_p, c_void_p, c_char_p, P(c_void_p))
model_destroy = _fn("pl_model_destroy", None, c_void_p)
model_bind_input = _fn("pl_model_bind_input", c_void_p, c_void_p, c_char_p, ctypes.c_int32,
                       P(ctypes.c_int64))
model_node_count = _fn("pl_model_node_count", c_size_t, c_void_p)
string_free = _fn("pl_string_free", None, c_void_p)
session_create = _fn("pl_session_create", c_void_p, c_void_p, P(SessionOptions), P(c_void_p))
session_destroy = _fn("pl_session_destroy", None, c_void_p)
session_input_count = _fn("pl_session_input_count", c_size_t, c_void_p)
session_output_count = _fn("pl_session_output_count", c_size_t, c_void_p)
session_input_name = _fn("pl_session_input_name", c_char_p, c_void_p, c_size_t)
session_output_name = _fn("pl_session_output_name", c_char_p, c_void_p, c_size_t)
session_input_type = _fn("pl_session_input_type", None, c_void_p, c_size_t, P(DType),
                         P(ctypes.c_int32), P(P(ctypes.c_int64)))
session_output_type = _fn("pl_session_output_type", None, c_void_p, c_size_t, P(DType),
                          P(ctypes.c_int32), P(P(ctypes.c_int64)))
session_run = _fn("pl_session_run", c_void_p, c_void_p, P(IO), c_size_t, P(IO), c_size_t)
buffer_free = _fn("pl_buffer_free", None, c_void_p)
session_run_arrays = _fn("pl_session_run_arrays", c_void_p, c_void_p, P(ArrayIO), c_size_t,
                         P(ArrayIO), c_size_t)
session_io_device = _fn("pl_session_io_device", c_char_p, c_void_p)
session_step_count = _fn("pl_session_step_count", c_size_t, c_void_p)
session_step_info = _fn("pl_session_step_info", None, c_void_p, c_size_t, P(c_char_p),
                        P(c_char_p), P(ctypes.c_uint64), P(ctypes.c_uint64))
session_profile_nodes = _fn("pl_session_profile_nodes", c_size_t, c_void_p, ctypes.c_bool)
session_step_nodes = _fn("pl_session_step_nodes", c_size_t, c_void_p, c_size_t, P(NodeProfile),
                         c_size_t)
session_warning_count = _fn("pl_session_warning_count", c_size_t, c_void_p)
session_warning = _fn("pl_session_warning", c_char_p, c_void_p, c_size_t)
session_describe = _fn("pl_session_describe", c_void_p, c_void_p, P(c_void_p))
