/* opset_rnn.c — schemas of ONNX's recurrent layers, RNN, GRU and LSTM, at
 * opset 7 (the form every later version extends) and opset 14 (which adds
 * `layout`: batch-major X, Y and states). Inference checks the weights
 * against X and each other (directions, gates times hidden size, input
 * size), and gives Y [seq, dirs, batch, hidden] (layout 1: [batch, seq,
 * dirs, hidden]) and Y_h / Y_c [dirs, batch, hidden] (layout 1: [batch,
 * dirs, hidden]). Attributes that only the kernel reads (activations,
 * clip, …) are declared for their kinds; the kernel checks their values. */
#include <stdio.h>
#include <string.h>

#include "opset_internal.h"

/* Gates of each op: RNN one, GRU three (z, r, h), LSTM four (i, o, f, c). */
static int64_t rnn_gates(const char *op)
{
    if (strcmp(op, "LSTM") == 0)
        return 4;
    if (strcmp(op, "GRU") == 0)
        return 3;
    return 1;
}

/* Dim D of T, or -1 when T is absent or its rank is not RANK. */
static int64_t rnn_dim(const pl_graph_tensor *t, int32_t rank, int d)
{
    return t != NULL && t->ndim == rank ? t->dims[d] : -1;
}

/* Fails unless A and B agree (either may be unknown, -1). */
static pl_status *rnn_agree(pl_infer_ctx *ctx, int64_t a, const char *what_a, int64_t b,
                            const char *what_b)
{
    if (a < 0 || b < 0 || a == b)
        return NULL;
    return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "%s is %lld but %s is %lld", what_a,
                          (long long)a, what_b, (long long)b);
}

/* Input I, when present, must have rank RANK. */
static pl_status *rnn_rank(pl_infer_ctx *ctx, size_t i, const char *name, int32_t rank)
{
    const pl_graph_tensor *t = pl_infer_input(ctx, i);
    if (t == NULL || t->ndim < 0 || t->ndim == rank)
        return NULL;
    char s[160];
    return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "%s must have rank %d, got %s", name,
                          (int)rank, pl_dims_format(t->dims, t->ndim, s, sizeof s));
}

static pl_status *rnn_infer(pl_infer_ctx *ctx)
{
    const char *op = pl_infer_node(ctx)->op;
    const int64_t gates = rnn_gates(op);
    const char *direction = pl_infer_attr_string(ctx, "direction");
    int64_t dirs;
    if (strcmp(direction, "forward") == 0 || strcmp(direction, "reverse") == 0)
        dirs = 1;
    else if (strcmp(direction, "bidirectional") == 0)
        dirs = 2;
    else
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "direction '%s' is not forward, reverse or bidirectional",
                              direction);
    int64_t layout = pl_infer_attr_int(ctx, "layout");
    if (layout != 0 && layout != 1)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "layout %lld is not 0 or 1",
                              (long long)layout);
    static const char *const names[] = {"X", "W", "R", "B", "sequence_lens", "initial_h",
                                        "initial_c", "P"};
    static const int32_t ranks[] = {3, 3, 3, 2, 1, 3, 3, 2};
    for (size_t i = 0; i < PL_COUNT(names); i++)
        PL_RETURN_IF_ERROR(rnn_rank(ctx, i, names[i], ranks[i]));

    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    const pl_graph_tensor *w = pl_infer_input(ctx, 1);
    const pl_graph_tensor *r = pl_infer_input(ctx, 2);
    int64_t seq = rnn_dim(x, 3, layout ? 1 : 0), batch = rnn_dim(x, 3, layout ? 0 : 1);
    int64_t input = rnn_dim(x, 3, 2);
    int64_t hidden = -1;
    if (pl_infer_has_attr(ctx, "hidden_size")) {
        hidden = pl_infer_attr_int(ctx, "hidden_size");
        if (hidden <= 0)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "hidden_size %lld is not positive",
                                  (long long)hidden);
    }
    /* R is [dirs, gates*hidden, hidden]: it fixes the hidden size when the
     * attribute is absent. */
    PL_RETURN_IF_ERROR(rnn_agree(ctx, rnn_dim(r, 3, 2), "R's last dim", hidden, "hidden_size"));
    if (hidden < 0)
        hidden = rnn_dim(r, 3, 2);
    int64_t gh = hidden >= 0 ? gates * hidden : -1;
    PL_RETURN_IF_ERROR(rnn_agree(ctx, rnn_dim(w, 3, 0), "W's first dim", dirs, "the directions"));
    PL_RETURN_IF_ERROR(rnn_agree(ctx, rnn_dim(r, 3, 0), "R's first dim", dirs, "the directions"));
    PL_RETURN_IF_ERROR(rnn_agree(ctx, rnn_dim(w, 3, 1), "W's second dim", gh,
                                 "gates x hidden_size"));
    PL_RETURN_IF_ERROR(rnn_agree(ctx, rnn_dim(r, 3, 1), "R's second dim", gh,
                                 "gates x hidden_size"));
    PL_RETURN_IF_ERROR(rnn_agree(ctx, rnn_dim(w, 3, 2), "W's last dim", input,
                                 "X's input size"));
    if (hidden < 0 && rnn_dim(w, 3, 1) >= 0) {
        if (rnn_dim(w, 3, 1) % gates != 0)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "W's second dim %lld is not a multiple of the %lld gates",
                                  (long long)rnn_dim(w, 3, 1), (long long)gates);
        hidden = rnn_dim(w, 3, 1) / gates;
        gh = gates * hidden;
    }
    const pl_graph_tensor *b = pl_infer_input(ctx, 3);
    PL_RETURN_IF_ERROR(rnn_agree(ctx, rnn_dim(b, 2, 0), "B's first dim", dirs, "the directions"));
    PL_RETURN_IF_ERROR(rnn_agree(ctx, rnn_dim(b, 2, 1), "B's second dim",
                                 gh >= 0 ? 2 * gh : -1, "2 x gates x hidden_size"));
    PL_RETURN_IF_ERROR(rnn_agree(ctx, rnn_dim(pl_infer_input(ctx, 4), 1, 0),
                                 "sequence_lens' length", batch, "the batch"));
    /* Initial states are [dirs, batch, hidden] (layout 1: [batch, dirs,
     * hidden]). */
    for (size_t i = 5; i <= 6; i++) {
        const pl_graph_tensor *s = pl_infer_input(ctx, i);
        char what[64];
        snprintf(what, sizeof what, "%s's %s dim", names[i], layout ? "first" : "second");
        PL_RETURN_IF_ERROR(rnn_agree(ctx, rnn_dim(s, 3, layout ? 0 : 1), what, batch,
                                     "the batch"));
        snprintf(what, sizeof what, "%s's %s dim", names[i], layout ? "second" : "first");
        PL_RETURN_IF_ERROR(rnn_agree(ctx, rnn_dim(s, 3, layout ? 1 : 0), what, dirs,
                                     "the directions"));
        snprintf(what, sizeof what, "%s's last dim", names[i]);
        PL_RETURN_IF_ERROR(rnn_agree(ctx, rnn_dim(s, 3, 2), what, hidden, "hidden_size"));
    }
    const pl_graph_tensor *p = pl_infer_input(ctx, 7);
    PL_RETURN_IF_ERROR(rnn_agree(ctx, rnn_dim(p, 2, 0), "P's first dim", dirs, "the directions"));
    PL_RETURN_IF_ERROR(rnn_agree(ctx, rnn_dim(p, 2, 1), "P's second dim",
                                 hidden >= 0 ? 3 * hidden : -1, "3 x hidden_size"));

    const char *seq_p = x && x->ndim == 3 && x->dim_params ? x->dim_params[layout ? 1 : 0] : NULL;
    const char *batch_p = x && x->ndim == 3 && x->dim_params ? x->dim_params[layout ? 0 : 1]
                                                             : NULL;
    size_t n_out = pl_infer_output_count(ctx);
    if (n_out > 0) {
        int64_t dims[4] = {seq, dirs, batch, hidden};
        const char *params[4] = {seq_p, NULL, batch_p, NULL};
        if (layout) {
            int64_t d1[4] = {batch, seq, dirs, hidden};
            const char *p1[4] = {batch_p, seq_p, NULL, NULL};
            memcpy(dims, d1, sizeof dims);
            memcpy(params, p1, sizeof params);
        }
        PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, 4, dims, params));
    }
    for (size_t o = 1; o < n_out && o < 3; o++) {
        int64_t dims[3] = {dirs, batch, hidden};
        const char *params[3] = {NULL, batch_p, NULL};
        if (layout) {
            dims[0] = batch;
            dims[1] = dirs;
            params[0] = batch_p;
            params[1] = NULL;
        }
        PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, o, PL_DTYPE_UNKNOWN, 3, dims, params));
    }
    return NULL;
}

/* ---- the schemas ----------------------------------------------------------------- */

/* activations, activation_alpha/beta and clip have no default the core
 * needs: the kernel applies ONNX's (per op, per direction). */
#define RNN_COMMON_ATTRS                                                          \
    PL_ATTR_FS("activation_alpha"), PL_ATTR_FS("activation_beta"),                \
        {.name = "activations", .kind = PL_ATTR_STRINGS},                         \
        {.name = "clip", .kind = PL_ATTR_FLOAT}, PL_ATTR_S("direction", "forward"), \
        {.name = "hidden_size", .kind = PL_ATTR_INT}

static const pl_attr_spec rnn7_attrs[] = {RNN_COMMON_ATTRS};
static const pl_attr_spec rnn14_attrs[] = {RNN_COMMON_ATTRS, PL_ATTR_I("layout", 0)};
static const pl_attr_spec gru7_attrs[] = {RNN_COMMON_ATTRS, PL_ATTR_I("linear_before_reset", 0)};
static const pl_attr_spec gru14_attrs[] = {RNN_COMMON_ATTRS, PL_ATTR_I("layout", 0),
                                           PL_ATTR_I("linear_before_reset", 0)};
static const pl_attr_spec lstm7_attrs[] = {RNN_COMMON_ATTRS, PL_ATTR_I("input_forget", 0)};
static const pl_attr_spec lstm14_attrs[] = {RNN_COMMON_ATTRS, PL_ATTR_I("input_forget", 0),
                                            PL_ATTR_I("layout", 0)};

/* Opset 14 added bfloat16 to T. */
#define RNN_T7 (PL_TS_F16 | PL_TS_F32 | PL_TS_F64)
#define RNN_T14 (RNN_T7 | PL_TS_BF16)

#define RNN_SCHEMA(op, since, in_max, out_max, attr_table, t)                           \
    {.name = op, .domain = "", .since_version = since, .min_inputs = 3,                  \
     .max_inputs = in_max, .min_outputs = 0, .max_outputs = out_max,                    \
     .attrs = attr_table, .n_attrs = PL_COUNT(attr_table), .infer = rnn_infer,          \
     .types = {{"T", t}, {"T1", PL_TS_I32}},                                            \
     .input_types = {"T", "T", "T", "T", "T1", "T", "T", "T"},                          \
     .output_types = {"T", "T", "T"}}

/* LinearAttention 27: the recurrence of linear attention over packed
 * [B, T, H * D] queries, keys and values; output [B, T, Hq * dv] and the
 * state [B, Hkv, dk, dv]. */
static pl_status *la_infer(pl_infer_ctx *ctx)
{
    int64_t hq = pl_infer_attr_int(ctx, "q_num_heads");
    int64_t hkv = pl_infer_attr_int(ctx, "kv_num_heads");
    const char *rule = pl_infer_attr_string(ctx, "update_rule");
    if (hq <= 0 || hkv <= 0 || hq % hkv != 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "q_num_heads (%lld) must be a positive multiple of kv_num_heads "
                              "(%lld)",
                              (long long)hq, (long long)hkv);
    bool gated = strcmp(rule, "gated") == 0 || strcmp(rule, "gated_delta") == 0;
    bool delta = strcmp(rule, "delta") == 0 || strcmp(rule, "gated_delta") == 0;
    if (!gated && !delta && strcmp(rule, "linear") != 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "update_rule '%s' is none of linear, gated, delta, gated_delta",
                              rule);
    bool has_decay = pl_infer_input(ctx, 4) != NULL, has_beta = pl_infer_input(ctx, 5) != NULL;
    if (gated != has_decay || delta != has_beta)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "update_rule '%s' %s decay and %s beta", rule,
                              gated ? "needs" : "forbids", delta ? "needs" : "forbids");
    const pl_graph_tensor *q = pl_infer_input(ctx, 0), *v = pl_infer_input(ctx, 2);
    for (size_t i = 0; i < 3; i++) {
        const pl_graph_tensor *t = pl_infer_input(ctx, i);
        if (t->ndim >= 0 && t->ndim != 3)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "query, key and value must be [B, T, H * D]");
    }
    int64_t out[3] = {-1, -1, -1}, st[4] = {-1, hkv, -1, -1};
    if (q->ndim == 3) {
        out[0] = st[0] = q->dims[0];
        out[1] = q->dims[1];
        if (q->dims[2] >= 0) {
            if (q->dims[2] % hq != 0)
                return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                      "the query's last dim %lld is not q_num_heads x d_k",
                                      (long long)q->dims[2]);
            st[2] = q->dims[2] / hq;
        }
    }
    if (v->ndim == 3 && v->dims[2] >= 0) {
        if (v->dims[2] % hkv != 0)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "the value's last dim %lld is not kv_num_heads x d_v",
                                  (long long)v->dims[2]);
        st[3] = v->dims[2] / hkv;
        out[2] = hq * st[3];
    }
    const pl_graph_tensor *past = pl_infer_input(ctx, 3);
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, q->dtype, 3, out, NULL));
    if (pl_infer_output_count(ctx) > 1)
        PL_RETURN_IF_ERROR(
            pl_infer_set_output(ctx, 1, past != NULL ? past->dtype : q->dtype, 4, st, NULL));
    return NULL;
}

static const pl_attr_spec la_attrs[] = {
    PL_ATTR_I("chunk_size", 64), PL_ATTR_REQ("kv_num_heads", PL_ATTR_INT),
    PL_ATTR_REQ("q_num_heads", PL_ATTR_INT), PL_ATTR_F("scale", 0.0),
    PL_ATTR_S("update_rule", "gated_delta")};

#define LA_T (PL_TS_F16 | PL_TS_F32 | PL_TS_BF16)

const pl_op_schema pl_opset_rnn_schemas[] = {
    {.name = "LinearAttention", .domain = "", .since_version = 27, .min_inputs = 3,
     .max_inputs = 6, .min_outputs = 1, .max_outputs = 2, .attrs = la_attrs,
     .n_attrs = PL_COUNT(la_attrs), .infer = la_infer, .types = {{"T", LA_T}, {"S", LA_T}},
     .input_types = {"T", "T", "T", "S", "T", "T"}, .output_types = {"T", "S"}},
    RNN_SCHEMA("RNN", 7, 6, 2, rnn7_attrs, RNN_T7),
    RNN_SCHEMA("RNN", 14, 6, 2, rnn14_attrs, RNN_T14),
    RNN_SCHEMA("GRU", 7, 6, 2, gru7_attrs, RNN_T7),
    RNN_SCHEMA("GRU", 14, 6, 2, gru14_attrs, RNN_T14),
    RNN_SCHEMA("LSTM", 7, 8, 3, lstm7_attrs, RNN_T7),
    RNN_SCHEMA("LSTM", 14, 8, 3, lstm14_attrs, RNN_T14),
};
const size_t pl_opset_rnn_count = PL_COUNT(pl_opset_rnn_schemas);
