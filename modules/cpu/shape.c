/* shape.c — the cpu module's shape and index kernels, for every dtype (see cpu_kernel.h: each family keeps its own op table). */
#include "cpu_kernel.h"

const cpu_op_entry cpu_ops_shape[] = {
    {NULL, NULL, 0, 0, 0, 0},
};
