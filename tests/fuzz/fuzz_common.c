/* fuzz_common.c — the runtime and the scratch files of the fuzz targets. */
#define _GNU_SOURCE
#include "fuzz_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef PLINTH_FUZZ_MODULES
#define PLINTH_FUZZ_MODULES ""
#endif

static void fz_quiet(void *user, int level, const char *line)
{
    (void)user;
    (void)level;
    (void)line;
}

pl_runtime *fz_runtime(void)
{
    static pl_runtime *rt;
    if (rt != NULL)
        return rt;
    const char *mods = getenv("PLINTH_FUZZ_MODULES");
    if (mods == NULL || mods[0] == '\0')
        mods = PLINTH_FUZZ_MODULES;
    char ini[256];
    snprintf(ini, sizeof ini, "/tmp/plinth-fuzz-%ld.ini", (long)getpid());
    FILE *f = fopen(ini, "w");
    if (f == NULL)
        abort();
    /* Naive engine and one thread: every input runs the same way, and a
     * finding replays exactly. No probe: a fork per module per process
     * would only slow the start. */
    fprintf(f,
            "[runtime]\nmodules = %s/libplinth_cpu.so,\n  %s/libplinth_onnx.so,\n"
            "  %s/libplinth_json.so,\n  %s/libplinth_example_acc.so\n"
            "engine = naive\nthreads = 1\nprobe = none\nlog = error\n"
            "[placement]\norder = example_acc, cpu\n[example_acc]\nmax_nodes_per_subgraph = 3\n",
            mods, mods, mods, mods);
    fclose(f);
    pl_runtime_options o = {.struct_size = sizeof o,
                            .config_path = ini,
                            .ignore_environment = true,
                            .log_sink = fz_quiet};
    pl_status *st = pl_runtime_create(&o, &rt);
    unlink(ini);
    if (st != NULL) {
        fprintf(stderr, "fuzz: cannot make the runtime over %s: %s\n", mods,
                pl_status_message(st));
        abort();
    }
    return rt;
}

const char *fz_write(const uint8_t *data, size_t size, const char *ext)
{
    static char path[256];
    snprintf(path, sizeof path, "/tmp/plinth-fuzz-%ld%s", (long)getpid(), ext);
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        abort();
    if (size > 0 && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);
    return path;
}
