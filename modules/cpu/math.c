/* math.c — the cpu module's elementwise math, normalisation and reduction kernels (see cpu_kernel.h: each family keeps its own op table). */
#include "cpu_kernel.h"

const cpu_op_entry cpu_ops_math[] = {
    {NULL, NULL, 0, 0, 0, 0},
};
