/* opset_text.c — the schemas of the text ops: TfIdfVectorizer (opset 9),
 * ONNX's n-gram counter over token ids ([C] or [N, C] tokens give f32 [K]
 * or [N, K] counts, K one more than the largest of ngram_indexes), and the
 * ops that compute on strings. Inside a graph a string tensor is an int64
 * tensor of string ids (core/src/strtab.h), so their string inputs and
 * outputs are int64 here; the strings themselves are read and made by the
 * kernel through the run's table (pl_run_context.strings, ABI 1.14).
 *
 * StringNormalizer 10 (without stopwords: the same shape; with them the
 * lowering writes ai.plinth StringNormalizerPadded and a Slice),
 * StringConcat 20, RegexFullMatch 20, and Plinth's forms of the ops whose
 * output width depends on the text (the lowering, opset_lower.c): ai.plinth
 * StringSplitCounts and StringSplitPadded for StringSplit 20, TokenizerWidth
 * and TokenizerPadded for com.microsoft Tokenizer (the width, an int64
 * [1], is computed first, and the padded op's last dim is its value, known
 * once a staged session binds it), StringToNumber and NumberToString for
 * Cast and CastLike to and from strings, and com.microsoft MurmurHash3 as
 * StringMurmurHash3 of strings or MurmurHash3 of int32 and uint32 keys. */
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

/* [C] or [1, C] (ONNX's StringNormalizer takes no other shape); the
 * stopwords' form ends in a Slice, so here the output is the input's
 * shape (ai.plinth StringNormalizerPadded: and a count [1]). */
static pl_status *tx_infer_normalizer(pl_infer_ctx *ctx)
{
    const char *action = pl_infer_attr_string(ctx, "case_change_action");
    if (strcmp(action, "LOWER") != 0 && strcmp(action, "UPPER") != 0 &&
        strcmp(action, "NONE") != 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "case_change_action '%s' is none of LOWER, UPPER, NONE", action);
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    if (x->ndim >= 0 && x->ndim != 1 && !(x->ndim == 2 && (x->dims[0] == 1 || x->dims[0] < 0)))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "the input must be [C] or [1, C] (it has rank %d, first dim %lld)",
                              (int)x->ndim, x->ndim > 0 ? (long long)x->dims[0] : 0LL);
    if (pl_infer_output_count(ctx) > 1)
        PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 1, PL_DTYPE_I64, 1, (int64_t[]){1}, NULL));
    return pl_infer_copy_input(ctx, 0, 0);
}

/* X's shape and one more dim: input 1's known value (the width), else
 * unknown. */
static pl_status *tx_infer_padded(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    const pl_graph_tensor *w = pl_infer_input(ctx, 1);
    if (w->ndim >= 0 && (w->ndim != 1 || (w->dims[0] >= 0 && w->dims[0] != 1)))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "the width must be an int64 [1]");
    if (x->ndim < 0)
        return NULL;
    if (x->ndim >= PL_GRAPH_MAX_RANK)
        return pl_infer_error(ctx, PL_CODE_UNSUPPORTED, "the input has rank %d", (int)x->ndim);
    int64_t dims[PL_GRAPH_MAX_RANK];
    memcpy(dims, x->dims, (size_t)x->ndim * sizeof *dims);
    const int64_t *v;
    uint64_t mask;
    size_t n;
    dims[x->ndim] = pl_infer_known_ints(ctx, 1, &v, &mask, &n) && n == 1 && (mask & 1) ? v[0] : -1;
    if (dims[x->ndim] < -1)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "the width is %lld",
                              (long long)dims[x->ndim]);
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, x->ndim + 1, dims, NULL);
}

/* Tokenizer's input is [C] or [N, C], as ONNX Runtime's. */
static pl_status *tx_tokenizer_input(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    if (x->ndim >= 0 && x->ndim != 1 && x->ndim != 2)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "the input must be [C] or [N, C] (it has rank %d)", (int)x->ndim);
    if (pl_infer_attr_int(ctx, "mincharnum") < 1)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "mincharnum must be positive");
    const char *exp = pl_infer_attr_string(ctx, "tokenexp");
    if (!pl_infer_has_attr(ctx, "separators") && exp[0] == '\0')
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "needs separators or a non-empty tokenexp");
    return NULL;
}

static pl_status *tx_infer_tokenizer_width(pl_infer_ctx *ctx)
{
    PL_RETURN_IF_ERROR(tx_tokenizer_input(ctx));
    return pl_infer_set_output(ctx, 0, PL_DTYPE_I64, 1, (int64_t[]){1}, NULL);
}

static pl_status *tx_infer_tokenizer_padded(pl_infer_ctx *ctx)
{
    PL_RETURN_IF_ERROR(tx_tokenizer_input(ctx));
    return tx_infer_padded(ctx);
}

static pl_status *tx_infer_concat(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *a = pl_infer_input(ctx, 0), *b = pl_infer_input(ctx, 1);
    if (a->ndim < 0 || b->ndim < 0)
        return NULL;
    int64_t dims[PL_GRAPH_MAX_RANK];
    int r;
    if (!pl_opset_broadcast(a->dims, a->ndim, b->dims, b->ndim, dims, &r)) {
        char sa[64], sb[64];
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "shapes %s and %s cannot be broadcast",
                              pl_dims_format(a->dims, a->ndim, sa, sizeof sa),
                              pl_dims_format(b->dims, b->ndim, sb, sizeof sb));
    }
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, r, dims, NULL);
}

static pl_status *tx_infer_same_shape(pl_infer_ctx *ctx, pl_dtype dt)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    return pl_infer_set_output(ctx, 0, dt, x->ndim, x->dims, (const char *const *)x->dim_params);
}

static pl_status *tx_infer_regex(pl_infer_ctx *ctx)
{
    if (!pl_infer_has_attr(ctx, "pattern"))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "the pattern attribute is missing");
    return tx_infer_same_shape(ctx, PL_DTYPE_BOOL);
}

static pl_status *tx_infer_split_counts(pl_infer_ctx *ctx)
{
    return tx_infer_same_shape(ctx, PL_DTYPE_I64);
}

static pl_status *tx_infer_to_number(pl_infer_ctx *ctx)
{
    int64_t to = pl_infer_attr_int(ctx, "to");
    pl_dtype dt;
    if (!pl_onnx_dtype(to, &dt))
        return pl_infer_error(ctx, PL_CODE_UNSUPPORTED,
                              "a cast of strings to ONNX data type %lld is not supported",
                              (long long)to);
    return tx_infer_same_shape(ctx, dt);
}

static pl_status *tx_infer_to_string(pl_infer_ctx *ctx)
{
    return tx_infer_same_shape(ctx, PL_DTYPE_I64);
}

/* MurmurHash3 (ONNX Runtime's com.microsoft op): the input's shape,
 * uint32 with positive = 1 (the default), else int32. */
static pl_status *tx_infer_murmur(pl_infer_ctx *ctx)
{
    return tx_infer_same_shape(ctx, pl_infer_attr_int(ctx, "positive") != 0 ? PL_DTYPE_U32
                                                                            : PL_DTYPE_I32);
}

static const pl_attr_spec tx_murmur_attrs[] = {PL_ATTR_I("seed", 0), PL_ATTR_I("positive", 1)};

static const pl_attr_spec tx_normalizer_attrs[] = {
    PL_ATTR_S("case_change_action", "NONE"), PL_ATTR_I("is_case_sensitive", 0),
    {.name = "locale", .kind = PL_ATTR_STRING}, {.name = "stopwords", .kind = PL_ATTR_STRINGS}};
static const pl_attr_spec tx_tokenizer_attrs[] = {
    PL_ATTR_REQ("mark", PL_ATTR_INT), PL_ATTR_REQ("mincharnum", PL_ATTR_INT),
    PL_ATTR_REQ("pad_value", PL_ATTR_STRING), {.name = "separators", .kind = PL_ATTR_STRINGS},
    {.name = "tokenexp", .kind = PL_ATTR_STRING}};
static const pl_attr_spec tx_split_attrs[] = {{.name = "delimiter", .kind = PL_ATTR_STRING},
                                              {.name = "maxsplit", .kind = PL_ATTR_INT}};
static const pl_attr_spec tx_regex_attrs[] = {{.name = "pattern", .kind = PL_ATTR_STRING}};
static const pl_attr_spec tx_to_number_attrs[] = {PL_ATTR_REQ("to", PL_ATTR_INT)};

#define TX_SCHEMA(nm, dom, since, nin, nout, at, fn, ...)                                      \
    {.name = (nm), .domain = (dom), .since_version = (since), .min_inputs = (nin),             \
     .max_inputs = (nin), .min_outputs = (nout), .max_outputs = (nout), .attrs = (at),         \
     .n_attrs = PL_COUNT(at), .infer = (fn), __VA_ARGS__}
#define TX_SCHEMA0(nm, dom, since, nin, fn, ...)                                               \
    {.name = (nm), .domain = (dom), .since_version = (since), .min_inputs = (nin),             \
     .max_inputs = (nin), .min_outputs = 1, .max_outputs = 1, .infer = (fn), __VA_ARGS__}

const pl_op_schema pl_opset_text_schemas[] = {
    TX_SCHEMA("StringNormalizer", "", 10, 1, 1, tx_normalizer_attrs, tx_infer_normalizer,
              .types = {{"T", PL_TS_I64}}, .input_types = {"T"}, .output_types = {"T"}),
    TX_SCHEMA0("StringConcat", "", 20, 2, tx_infer_concat,
              .types = {{"T", PL_TS_I64}}, .input_types = {"T", "T"}, .output_types = {"T"}),
    TX_SCHEMA("RegexFullMatch", "", 20, 1, 1, tx_regex_attrs, tx_infer_regex,
              .types = {{"T", PL_TS_I64}, {"B", PL_TS_BOOL}}, .input_types = {"T"},
              .output_types = {"B"}),
    TX_SCHEMA("StringNormalizerPadded", "ai.plinth", 1, 1, 2, tx_normalizer_attrs,
              tx_infer_normalizer, .types = {{"T", PL_TS_I64}}, .input_types = {"T"},
              .output_types = {"T", "T"}),
    TX_SCHEMA("StringSplitCounts", "ai.plinth", 1, 1, 1, tx_split_attrs, tx_infer_split_counts,
              .types = {{"T", PL_TS_I64}}, .input_types = {"T"}, .output_types = {"T"}),
    TX_SCHEMA("StringSplitPadded", "ai.plinth", 1, 2, 1, tx_split_attrs, tx_infer_padded,
              .types = {{"T", PL_TS_I64}}, .input_types = {"T", "T"}, .output_types = {"T"}),
    TX_SCHEMA("TokenizerWidth", "ai.plinth", 1, 1, 1, tx_tokenizer_attrs,
              tx_infer_tokenizer_width, .types = {{"T", PL_TS_I64}}, .input_types = {"T"},
              .output_types = {"T"}),
    TX_SCHEMA("TokenizerPadded", "ai.plinth", 1, 2, 1, tx_tokenizer_attrs,
              tx_infer_tokenizer_padded, .types = {{"T", PL_TS_I64}}, .input_types = {"T", "T"},
              .output_types = {"T"}),
    TX_SCHEMA("StringToNumber", "ai.plinth", 1, 1, 1, tx_to_number_attrs, tx_infer_to_number,
              .types = {{"T", PL_TS_I64}, {"U", PL_TS_ALL}}, .input_types = {"T"},
              .output_types = {"U"}),
    TX_SCHEMA("MurmurHash3", "ai.plinth", 1, 1, 1, tx_murmur_attrs, tx_infer_murmur,
              .types = {{"T", PL_TS_I32 | PL_TS_U32}, {"U", PL_TS_I32 | PL_TS_U32}},
              .input_types = {"T"}, .output_types = {"U"}),
    TX_SCHEMA("StringMurmurHash3", "ai.plinth", 1, 1, 1, tx_murmur_attrs, tx_infer_murmur,
              .types = {{"T", PL_TS_I64}, {"U", PL_TS_I32 | PL_TS_U32}}, .input_types = {"T"},
              .output_types = {"U"}),
    TX_SCHEMA0("NumberToString", "ai.plinth", 1, 1, tx_infer_to_string,
              .types = {{"T", PL_TS_ALL}, {"U", PL_TS_I64}}, .input_types = {"T"},
              .output_types = {"U"}),
    {.name = "TfIdfVectorizer", .domain = "", .since_version = 9, .min_inputs = 1,
     .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .attrs = tx_tfidf_attrs,
     .n_attrs = PL_COUNT(tx_tfidf_attrs),
     .types = {{"T", PL_TS_I32 | PL_TS_I64}, {"T1", PL_TS_F32}}, .input_types = {"T"},
     .output_types = {"T1"}, .infer = tx_infer_tfidf},
};
const size_t pl_opset_text_count = PL_COUNT(pl_opset_text_schemas);
