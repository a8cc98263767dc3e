/* fuzz_model.c — the model importers: each input is a model file (.onnx
 * for the ONNX importer, .json for Plinth's own format, chosen by
 * FUZZ_MODEL_EXT at build time), loaded through the runtime; a model that
 * loads is also partitioned and planned (session creation). Any result is
 * fine but a crash, a leak or a sanitizer report. */
#define _GNU_SOURCE
#include "fuzz_common.h"

#include <stdio.h>
#include <unistd.h>

#ifndef FUZZ_MODEL_EXT
#define FUZZ_MODEL_EXT ".onnx"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pl_runtime *rt = fz_runtime();
    const char *path = fz_write(data, size, FUZZ_MODEL_EXT);
    pl_model *model = NULL;
    pl_status *st = pl_model_load(rt, path, &model);
    unlink(path);
    if (st != NULL) {
        pl_status_free(st);
        return 0;
    }
    pl_session *s = NULL;
    st = pl_session_create(model, NULL, &s);
    if (st == NULL)
        pl_session_destroy(s);
    pl_status_free(st);
    pl_model_destroy(model);
    return 0;
}
