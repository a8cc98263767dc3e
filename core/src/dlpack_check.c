/* dlpack_check.c — proves at compile time that pl_tensor (sdk/) begins with
 * exactly DLPack's DLTensor, so a pl_tensor * can be handed to any DLPack
 * consumer. The SDK cannot include DLPack (vendors get standard headers
 * only); this file, built with the core, is where the promise is checked. */
#include <dlpack/dlpack.h>
#include <stddef.h>

#include "plinth/tensor.h"

#define PL_SAME_FIELD(a, b)                                          \
    _Static_assert(offsetof(pl_tensor, a) == offsetof(DLTensor, b) && \
                       sizeof(((pl_tensor *)0)->a) == sizeof(((DLTensor *)0)->b), \
                   "pl_tensor." #a " must match DLTensor." #b)

PL_SAME_FIELD(data, data);
PL_SAME_FIELD(device, device);
PL_SAME_FIELD(ndim, ndim);
PL_SAME_FIELD(dtype, dtype);
PL_SAME_FIELD(shape, shape);
PL_SAME_FIELD(strides, strides);
PL_SAME_FIELD(byte_offset, byte_offset);
_Static_assert(sizeof(DLTensor) <= offsetof(pl_tensor, struct_size),
               "Plinth's fields must follow the DLTensor prefix");
_Static_assert(offsetof(pl_device, device_type) == offsetof(DLDevice, device_type) &&
                   offsetof(pl_device, device_id) == offsetof(DLDevice, device_id) &&
                   sizeof(pl_device) == sizeof(DLDevice),
               "pl_device must match DLDevice");
_Static_assert(offsetof(pl_dtype, code) == offsetof(DLDataType, code) &&
                   offsetof(pl_dtype, bits) == offsetof(DLDataType, bits) &&
                   offsetof(pl_dtype, lanes) == offsetof(DLDataType, lanes) &&
                   sizeof(pl_dtype) == sizeof(DLDataType),
               "pl_dtype must match DLDataType");
_Static_assert((int)PL_DEVICE_CPU == (int)kDLCPU &&
                   (int)PL_DEVICE_CUDA == (int)kDLCUDA &&
                   (int)PL_DEVICE_CUDA_HOST == (int)kDLCUDAHost &&
                   (int)PL_DEVICE_EXT == (int)kDLExtDev,
               "device types are DLPack's");
_Static_assert((int)PL_TYPE_INT == (int)kDLInt &&
                   (int)PL_TYPE_UINT == (int)kDLUInt &&
                   (int)PL_TYPE_FLOAT == (int)kDLFloat &&
                   (int)PL_TYPE_BFLOAT == (int)kDLBfloat,
               "type codes are DLPack's");

/* ISO C forbids an empty translation unit. */
typedef int pl_dlpack_check_nonempty;
