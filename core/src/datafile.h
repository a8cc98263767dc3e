/* datafile.h — mapping a data file that a model names (a JSON sidecar, ONNX
 * external data) without letting the model reach outside its folder. */
#ifndef PL_CORE_DATAFILE_H
#define PL_CORE_DATAFILE_H

#include <stddef.h>
#include <sys/stat.h>

#include "plinth/plinth.h"

/* Maps NAME, relative to BASE_DIR, read-only. Refused: an absolute path, a
 * '..' component, a path whose real location (links resolved) is outside
 * BASE_DIR's, anything but a regular file. An empty file maps to
 * (*out_addr NULL, *out_size 0). The caller munmaps. Messages start with
 * WHAT and the name ("external data 'w.bin': ..."). OUT_ST (may be NULL)
 * receives the mapped file's identity (fstat of the descriptor mapped). */
pl_status *pl_datafile_map(const char *base_dir, const char *name,
                           const char *what, void **out_addr, size_t *out_size,
                           struct stat *out_st);

/* The status code for an errno from opening or mapping a file: NOT_FOUND,
 * PERMISSION_DENIED (a link refused too), OUT_OF_MEMORY or IO_ERROR. */
pl_code pl_datafile_code(int err);

#endif
