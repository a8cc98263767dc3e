/* nn.c — the cpu module's convolution and pooling kernels (see cpu_kernel.h: each family keeps its own op table). */
#include "cpu_kernel.h"

const cpu_op_entry cpu_ops_nn[] = {
    {NULL, NULL, 0, 0, 0, 0},
};
