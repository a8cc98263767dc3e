/* model_info.h — what the conformance runner needs to know about an ONNX
 * model before Plinth loads it: its ops, and its graph inputs and outputs
 * in order (the test data files are numbered in that order). */
#ifndef PLINTH_CONFORMANCE_MODEL_INFO_H
#define PLINTH_CONFORMANCE_MODEL_INFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <plinth/plinth.h>

typedef struct cf_model_info {
    /* The distinct op types of the top-level graph, in order of first use
     * ("Add"; "ReduceMax,Sub,Exp"). A domain other than ONNX's prefixes the
     * op as "domain:Op". */
    char *ops;
    size_t n_ops;
    char **op_list;       /* n_ops entries, the same names one by one */
    /* Graph inputs that are not initializers, and graph outputs. */
    size_t n_inputs, n_outputs;
    char **inputs;
    char **outputs;
    /* The ONNX element type each input and output declares, 0 if none. */
    int32_t *input_types;
    int32_t *output_types;
    /* The shape each input declares: rank -1 when none is given; a dim of
     * -1 when it is symbolic or unknown. */
    int32_t *input_ranks;
    int64_t **input_dims;
    /* Empty when every input and output is a tensor; otherwise why the
     * runner cannot feed or read the model (sequences, maps, optionals). */
    char unsupported[256];
} cf_model_info;

/* Reads the ModelProto at PATH into *OUT (cleared on entry). Fails with
 * PL_CODE_INVALID_ARGUMENT when PATH is not a model with a graph. Free
 * with cf_model_info_free. */
pl_status *cf_model_info_read(const char *path, cf_model_info *out);

/* Checks that input I of the test data, of rank NDIM and dims DIMS, fits
 * the shape the model declares for it. Returns false and writes why into
 * WHY otherwise (ONNX's own test data has a few such models). */
bool cf_model_info_input_fits(const cf_model_info *info, size_t i, int32_t ndim,
                              const int64_t *dims, char *why, size_t why_len);

/* Frees what INFO owns and clears it. */
void cf_model_info_free(cf_model_info *info);

#endif /* PLINTH_CONFORMANCE_MODEL_INFO_H */
