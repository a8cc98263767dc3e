/* freeze.h — an ONNX backend test with its graph inputs but the first made
 * initializers (see freeze.c). */
#ifndef PLINTH_CONFORMANCE_FREEZE_H
#define PLINTH_CONFORMANCE_FREEZE_H

#include <stddef.h>

#include <plinth/plinth.h>

/* Writes OUT_DIR/model.onnx (an existing, empty directory): TEST_DIR's
 * model with every graph input but the first (initializers aside) turned
 * into an initializer holding TEST_DIR/test_data_set_0/input_K.pb, and
 * OUT_DIR/test_data_set_0 with that set's input_0.pb and output files.
 * *OUT_FROZEN is the number of inputs frozen. Fails with
 * PL_CODE_UNSUPPORTED when the model has fewer than two inputs or a data
 * file's type differs from the input's. */
pl_status *cf_freeze(const char *test_dir, const char *out_dir, size_t *out_frozen);

/* Removes what cf_freeze wrote into OUT_DIR, and OUT_DIR. */
void cf_freeze_remove(const char *out_dir);

#endif /* PLINTH_CONFORMANCE_FREEZE_H */
