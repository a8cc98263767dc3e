/* check_module.h — the CLI's `plinth check-module` (check_module.c). */
#ifndef PLINTH_TOOLS_CHECK_MODULE_H
#define PLINTH_TOOLS_CHECK_MODULE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct check_module_args {
    int device;              /* --device N; -1: device 0 */
    int threads;             /* --threads (0: backend.ini's) */
    const char *const *tests; /* --tests DIR ...: node test folders or tests */
    size_t n_tests;
    const char *known;       /* --known FILE: accepted differences */
    bool node_tests;         /* false with --no-node-tests */
} check_module_args;

/* Runs the check of the module file PATH with the configuration CONFIG
 * (NULL: the default search) and returns the exit code: 0 passed, 1 a
 * failure, 2 usage, 77 no device here. */
int check_module_command(const char *config, const char *path, const check_module_args *a);

#endif
