/* opset_text.c — the schema of TfIdfVectorizer (opset 9), ONNX's n-gram
 * counter over integer token ids (string pools have no dtype in this
 * runtime): [C] or [N, C] tokens give f32 [K] or [N, K] counts, K one more
 * than the largest of ngram_indexes. */
#include <string.h>

#include "opset_internal.h"

static pl_status *tx_infer_tfidf(pl_infer_ctx *ctx)
{
    const char *mode = pl_infer_attr_string(ctx, "mode");
    if (strcmp(mode, "TF") != 0 && strcmp(mode, "IDF") != 0 && strcmp(mode, "TFIDF") != 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "mode '%s' is none of TF, IDF, TFIDF", mode);
    int64_t lo = pl_infer_attr_int(ctx, "min_gram_length");
    int64_t hi = pl_infer_attr_int(ctx, "max_gram_length");
    if (lo < 1 || hi < lo || pl_infer_attr_int(ctx, "max_skip_count") < 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "gram lengths %lld..%lld or max_skip_count do not make sense",
                              (long long)lo, (long long)hi);
    if (pl_infer_has_attr(ctx, "pool_strings"))
        return pl_infer_error(ctx, PL_CODE_UNSUPPORTED,
                              "pool_strings: this runtime has no string tensors");
    const int64_t *idx;
    size_t n;
    pl_infer_attr_ints(ctx, "ngram_indexes", &idx, &n);
    int64_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (idx[i] < 0)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "ngram_indexes holds %lld",
                                  (long long)idx[i]);
        k = idx[i] + 1 > k ? idx[i] + 1 : k;
    }
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    if (x->ndim < 0)
        return NULL;
    if (x->ndim != 1 && x->ndim != 2)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "the input has rank %d; it must be [C] or [N, C]", (int)x->ndim);
    int64_t dims[2] = {x->dims[0], k};
    return x->ndim == 1 ? pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, 1, &k, NULL)
                        : pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, 2, dims, NULL);
}

static const pl_attr_spec tx_tfidf_attrs[] = {
    PL_ATTR_REQ("max_gram_length", PL_ATTR_INT), PL_ATTR_REQ("max_skip_count", PL_ATTR_INT),
    PL_ATTR_REQ("min_gram_length", PL_ATTR_INT), PL_ATTR_REQ("mode", PL_ATTR_STRING),
    PL_ATTR_REQ("ngram_counts", PL_ATTR_INTS), PL_ATTR_REQ("ngram_indexes", PL_ATTR_INTS),
    PL_ATTR_IS("pool_int64s"), {.name = "pool_strings", .kind = PL_ATTR_STRINGS},
    PL_ATTR_FS("weights")};

const pl_op_schema pl_opset_text_schemas[] = {
    {.name = "TfIdfVectorizer", .domain = "", .since_version = 9, .min_inputs = 1,
     .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .attrs = tx_tfidf_attrs,
     .n_attrs = PL_COUNT(tx_tfidf_attrs),
     .types = {{"T", PL_TS_I32 | PL_TS_I64}, {"T1", PL_TS_F32}}, .input_types = {"T"},
     .output_types = {"T1"}, .infer = tx_infer_tfidf},
};
const size_t pl_opset_text_count = PL_COUNT(pl_opset_text_schemas);
