/* fuzz_common.h — what the fuzz targets share: one runtime for the whole
 * run (made from the staged modules before the first input), and a file
 * per process into which each input is written, since the loaders read
 * paths. Nothing is printed: the log goes nowhere, errors are statuses the
 * targets drop. The libFuzzer build (PLINTH_FUZZ) and the replay build
 * (fuzz_replay.c, any compiler) link the same targets. */
#ifndef PL_FUZZ_COMMON_H
#define PL_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <plinth/plinth.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The runtime over the staged modules (PLINTH_FUZZ_MODULES at build time,
 * or $PLINTH_FUZZ_MODULES), made once; abort()s if it cannot be made, as
 * the target could test nothing. */
pl_runtime *fz_runtime(void);

/* Writes DATA to this process's scratch file with the extension EXT
 * (".onnx") and returns its path (the same path on every call). */
const char *fz_write(const uint8_t *data, size_t size, const char *ext);

#endif
