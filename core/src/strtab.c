/* strtab.c — string tensors as ids (strtab.h): the table, the import
 * pass that turns string tensors and attributes into ids, and the run's
 * boundary that turns the caller's strings into ids and ids back. */
#include "strtab.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "graph.h"
#include "status.h"
#include "strmap.h"

struct pl_strtab {
    pl_strmap ids;  /* string -> id, keys borrowed from strs */
    char **strs;
    size_t n, cap;
};

pl_strtab *pl_strtab_create(void)
{
    pl_strtab *tab = pl_calloc(1, sizeof *tab);
    if (tab != NULL && pl_strtab_intern(tab, "", 0) != 0) { /* id 0 is "" */
        pl_strtab_destroy(tab);
        return NULL;
    }
    return tab;
}

void pl_strtab_destroy(pl_strtab *tab)
{
    if (tab == NULL)
        return;
    pl_strmap_free(&tab->ids);
    for (size_t i = 0; i < tab->n; i++)
        pl_free(tab->strs[i]);
    pl_free(tab->strs);
    pl_free(tab);
}

int64_t pl_strtab_intern(pl_strtab *tab, const char *s, size_t len)
{
    char *copy = pl_xstrndup(s, len);
    if (copy == NULL)
        return -1;
    uint32_t id;
    if (pl_strmap_get(&tab->ids, copy, &id)) {
        pl_free(copy);
        return id;
    }
    if (tab->n >= UINT32_MAX - 1)
        goto fail;
    if (tab->n == tab->cap) {
        size_t cap = tab->cap ? tab->cap * 2 : 64;
        char **grown = pl_realloc(tab->strs, cap * sizeof *grown);
        if (grown == NULL)
            goto fail;
        tab->strs = grown;
        tab->cap = cap;
    }
    if (!pl_strmap_put(&tab->ids, copy, (uint32_t)tab->n))
        goto fail;
    tab->strs[tab->n] = copy;
    return (int64_t)tab->n++;
fail:
    pl_free(copy);
    return -1;
}

int64_t pl_strtab_find(const pl_strtab *tab, const char *s)
{
    uint32_t id;
    return tab != NULL && pl_strmap_get(&tab->ids, s, &id) ? (int64_t)id : -1;
}

size_t pl_strtab_count(const pl_strtab *tab)
{
    return tab ? tab->n : 0;
}

const char *pl_strtab_at(const pl_strtab *tab, size_t id)
{
    return tab != NULL && id < tab->n ? tab->strs[id] : NULL;
}

/* ---- the import pass ---------------------------------------------------- */

typedef struct enc {
    pl_graph *g;
    pl_strtab *tab;
    bool *str;      /* per tensor: holds string ids */
    pl_nid id;      /* the node at hand */
} enc;

static const pl_graph_node *enc_node(const enc *e)
{
    return pl_graph_get_node(e->g, e->id);
}

static pl_status *enc_error(const enc *e, pl_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static pl_status *enc_error(const enc *e, pl_code code, const char *fmt, ...)
{
    const pl_graph_node *n = enc_node(e);
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pl_status_create(code, "node '%s' (%s%s%s): %s", n->name,
                            n->domain[0] ? n->domain : "", n->domain[0] ? ":" : "", n->op, msg);
}

static bool enc_in(const enc *e, size_t k)
{
    const pl_graph_node *n = enc_node(e);
    return k < n->n_formal_inputs && n->inputs[k] != PL_TID_NONE && e->str[n->inputs[k]];
}

static void enc_out(enc *e, size_t k, bool is_string)
{
    const pl_graph_node *n = enc_node(e);
    if (k < n->n_outputs && n->outputs[k] != PL_TID_NONE)
        e->str[n->outputs[k]] = is_string;
}

/* Input K's name ("" when absent). */
static const char *enc_in_name(const enc *e, size_t k)
{
    const pl_graph_node *n = enc_node(e);
    return k < n->n_formal_inputs && n->inputs[k] != PL_TID_NONE
               ? pl_graph_get_tensor(e->g, n->inputs[k])->name
               : "";
}

/* The first string input of the node at hand outside the positions MASK
 * allows (bit k: input k may hold strings), as an error; or NULL. */
static pl_status *enc_only(const enc *e, uint32_t mask, const char *why)
{
    const pl_graph_node *n = enc_node(e);
    for (size_t k = 0; k < n->n_formal_inputs; k++)
        if (enc_in(e, k) && (k >= 32 || !(mask >> k & 1u)))
            return enc_error(e, PL_CODE_UNSUPPORTED,
                             "input %zu ('%s') holds strings, which %s", k, enc_in_name(e, k),
                             why);
    return NULL;
}

/* Inputs A and B (present ones) both strings or both not. */
static pl_status *enc_same(const enc *e, size_t a, size_t b)
{
    const pl_graph_node *n = enc_node(e);
    if (b >= n->n_formal_inputs || n->inputs[b] == PL_TID_NONE || a >= n->n_formal_inputs ||
        n->inputs[a] == PL_TID_NONE || enc_in(e, a) == enc_in(e, b))
        return NULL;
    return enc_error(e, PL_CODE_INVALID_ARGUMENT,
                     "inputs %zu ('%s') and %zu ('%s') must both be strings or neither", a,
                     enc_in_name(e, a), b, enc_in_name(e, b));
}

static pl_status *enc_oom(void)
{
    return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory encoding string tensors");
}

/* The ids of the STRINGS attribute FROM, which is dropped: *IDS (freed by
 * the caller; NULL when FROM is absent) and *N of them. */
static pl_status *enc_take_ids(enc *e, const char *from, int64_t **ids_out, size_t *n_out)
{
    const pl_attr *a = pl_graph_node_attr(enc_node(e), from);
    *ids_out = NULL;
    *n_out = 0;
    if (a == NULL)
        return NULL;
    if (a->kind != PL_ATTR_STRINGS)
        return enc_error(e, PL_CODE_INVALID_ARGUMENT, "attribute '%s' must be strings", from);
    size_t n = a->n;
    int64_t *ids = pl_malloc((n ? n : 1) * sizeof *ids);
    if (ids == NULL)
        return enc_oom();
    for (size_t i = 0; i < n; i++)
        if ((ids[i] = pl_strtab_intern(e->tab, a->strings[i], strlen(a->strings[i]))) < 0) {
            pl_free(ids);
            return enc_oom();
        }
    pl_graph_node_remove_attr(e->g, e->id, from);
    *ids_out = ids;
    *n_out = n;
    return NULL;
}

/* Replaces the STRINGS attribute FROM by an INTS attribute TO of their ids
 * (TO replaced if there); *N gets their count (0 when FROM is absent). */
static pl_status *enc_ids_attr(enc *e, const char *from, const char *to, size_t *n_out)
{
    int64_t *ids;
    size_t n;
    if (n_out)
        *n_out = 0;
    PL_RETURN_IF_ERROR(enc_take_ids(e, from, &ids, &n));
    if (ids == NULL)
        return NULL;
    pl_graph_node_remove_attr(e->g, e->id, to);
    pl_status *st = pl_graph_attr_ints(e->g, e->id, to, ids, n);
    pl_free(ids);
    if (n_out)
        *n_out = n;
    return st;
}

/* The STRING attribute FROM (DEF when absent) as INT attribute TO, its id. */
static pl_status *enc_id_attr(enc *e, const char *from, const char *def, const char *to)
{
    const pl_attr *a = pl_graph_node_attr(enc_node(e), from);
    const char *s = a != NULL && a->kind == PL_ATTR_STRING ? a->s : def;
    int64_t id = pl_strtab_intern(e->tab, s, strlen(s));
    if (id < 0)
        return enc_oom();
    pl_graph_node_remove_attr(e->g, e->id, from);
    pl_graph_node_remove_attr(e->g, e->id, to);
    return pl_graph_attr_int(e->g, e->id, to, id);
}

static pl_status *enc_set_ints(enc *e, const char *name, const int64_t *v, size_t n)
{
    pl_graph_node_remove_attr(e->g, e->id, name);
    return pl_graph_attr_ints(e->g, e->id, name, v, n);
}

/* A TENSOR attribute FROM (LabelEncoder's keys_tensor, ...) as the list
 * attribute TO_INTS (int64 or string ids) or TO_FLOATS (f32, f64); *IS_STR
 * says whether it held strings. Absent: nothing. */
static pl_status *enc_tensor_attr(enc *e, const char *from, const char *to_ints,
                                  const char *to_floats, bool *is_str)
{
    const pl_attr *a = pl_graph_node_attr(enc_node(e), from);
    if (a == NULL)
        return NULL;
    if (a->kind != PL_ATTR_TENSOR)
        return enc_error(e, PL_CODE_INVALID_ARGUMENT, "attribute '%s' must be a tensor", from);
    pl_attr_tensor *t = a->tensor;
    size_t n = 0;
    pl_dims_elements(t->dims, t->ndim, &n);
    pl_status *st = NULL;
    if (PL_DTYPE_EQ(t->dtype, PL_DTYPE_I64)) {
        *is_str = t->is_string;
        int64_t *v = pl_malloc((n ? n : 1) * sizeof *v);
        if (v == NULL)
            return enc_oom();
        memcpy(v, t->data, n * sizeof *v);
        pl_graph_node_remove_attr(e->g, e->id, from);
        st = to_ints ? enc_set_ints(e, to_ints, v, n) : NULL;
        pl_free(v);
    } else if (PL_DTYPE_EQ(t->dtype, PL_DTYPE_F32) || PL_DTYPE_EQ(t->dtype, PL_DTYPE_F64)) {
        *is_str = false;
        double *v = pl_malloc((n ? n : 1) * sizeof *v);
        if (v == NULL)
            return enc_oom();
        for (size_t i = 0; i < n; i++)
            v[i] = PL_DTYPE_EQ(t->dtype, PL_DTYPE_F32) ? (double)((const float *)t->data)[i]
                                                       : ((const double *)t->data)[i];
        pl_graph_node_remove_attr(e->g, e->id, from);
        pl_graph_node_remove_attr(e->g, e->id, to_floats);
        st = pl_graph_attr_floats(e->g, e->id, to_floats, v, n);
        pl_free(v);
    } else {
        return enc_error(e, PL_CODE_UNSUPPORTED,
                         "attribute '%s' is a %s tensor; only strings, int64, float and "
                         "double are mapped",
                         from, pl_dtype_name(t->dtype));
    }
    return st;
}

/* LabelEncoder (ONNX-ML 2 on: keys_*, values_*, the tensor forms of 4;
 * ONNX-ML 1: classes_strings) into the numeric form the lowering reads
 * (opset_lower.c), string keys and values as ids. */
static pl_status *enc_label_encoder(enc *e)
{
    const pl_graph_node *n = enc_node(e);
    bool in_str = enc_in(e, 0);
    const pl_attr *classes = pl_graph_node_attr(n, "classes_strings");
    if (classes != NULL) { /* ONNX-ML 1: strings <-> their index */
        size_t k;
        int64_t *sid;
        PL_RETURN_IF_ERROR(enc_take_ids(e, "classes_strings", &sid, &k));
        int64_t *idx = pl_malloc((k ? k : 1) * sizeof *idx);
        pl_status *st = idx ? NULL : enc_oom();
        for (size_t i = 0; st == NULL && i < k; i++)
            idx[i] = (int64_t)i;
        if (st == NULL)
            st = enc_set_ints(e, "keys_int64s", in_str ? sid : idx, k);
        if (st == NULL)
            st = enc_set_ints(e, "values_int64s", in_str ? idx : sid, k);
        pl_free(idx);
        pl_free(sid);
        PL_RETURN_IF_ERROR(st);
        if (!in_str)
            PL_RETURN_IF_ERROR(enc_id_attr(e, "default_string", "_Unused", "default_int64"));
        enc_out(e, 0, !in_str);
        return NULL;
    }
    bool kstr = false, vstr = false, dstr = false;
    PL_RETURN_IF_ERROR(enc_tensor_attr(e, "keys_tensor", "keys_int64s", "keys_floats", &kstr));
    PL_RETURN_IF_ERROR(
        enc_tensor_attr(e, "values_tensor", "values_int64s", "values_floats", &vstr));
    const pl_attr *dt = pl_graph_node_attr(enc_node(e), "default_tensor");
    if (dt != NULL && dt->kind == PL_ATTR_TENSOR) {
        size_t cnt = 0;
        pl_dims_elements(dt->tensor->dims, dt->tensor->ndim, &cnt);
        if (cnt != 1)
            return enc_error(e, PL_CODE_INVALID_ARGUMENT,
                             "default_tensor must hold one value, not %zu", cnt);
        if (PL_DTYPE_EQ(dt->tensor->dtype, PL_DTYPE_I64)) {
            int64_t d = *(const int64_t *)dt->tensor->data;
            dstr = dt->tensor->is_string;
            pl_graph_node_remove_attr(e->g, e->id, "default_tensor");
            pl_graph_node_remove_attr(e->g, e->id, "default_int64");
            PL_RETURN_IF_ERROR(pl_graph_attr_int(e->g, e->id, "default_int64", d));
        } else if (PL_DTYPE_EQ(dt->tensor->dtype, PL_DTYPE_F32) ||
                   PL_DTYPE_EQ(dt->tensor->dtype, PL_DTYPE_F64)) {
            double d = PL_DTYPE_EQ(dt->tensor->dtype, PL_DTYPE_F32)
                           ? (double)*(const float *)dt->tensor->data
                           : *(const double *)dt->tensor->data;
            pl_graph_node_remove_attr(e->g, e->id, "default_tensor");
            pl_graph_node_remove_attr(e->g, e->id, "default_float");
            PL_RETURN_IF_ERROR(pl_graph_attr_float(e->g, e->id, "default_float", d));
        } else {
            return enc_error(e, PL_CODE_UNSUPPORTED, "default_tensor of dtype %s",
                             pl_dtype_name(dt->tensor->dtype));
        }
    }
    size_t nk = 0, nv = 0;
    PL_RETURN_IF_ERROR(enc_ids_attr(e, "keys_strings", "keys_int64s", &nk));
    kstr = kstr || nk > 0;
    PL_RETURN_IF_ERROR(enc_ids_attr(e, "values_strings", "values_int64s", &nv));
    if (nv > 0 || vstr) {
        vstr = true;
        if (!dstr)
            PL_RETURN_IF_ERROR(enc_id_attr(e, "default_string", "_Unused", "default_int64"));
    }
    pl_graph_node_remove_attr(e->g, e->id, "default_string");
    if (kstr != in_str)
        return enc_error(e, PL_CODE_INVALID_ARGUMENT,
                         "input 0 ('%s') %s strings but the keys %s", enc_in_name(e, 0),
                         in_str ? "holds" : "does not hold", kstr ? "are strings" : "are not");
    enc_out(e, 0, vstr);
    return NULL;
}

/* CategoryMapper: strings -> int64 (cats_strings[i] -> cats_int64s[i],
 * else default_int64) when X holds strings, int64 -> strings otherwise
 * (else default_string): a LabelEncoder of ids. */
static pl_status *enc_category_mapper(enc *e)
{
    bool in_str = enc_in(e, 0);
    size_t ns = 0;
    int64_t *ids;
    PL_RETURN_IF_ERROR(enc_take_ids(e, "cats_strings", &ids, &ns));
    const pl_attr *ci = pl_graph_node_attr(enc_node(e), "cats_int64s");
    if (ci == NULL || ci->kind != PL_ATTR_INTS || ci->n != ns || ns == 0) {
        pl_free(ids);
        return enc_error(e, PL_CODE_INVALID_ARGUMENT,
                         "cats_strings and cats_int64s must list the same number (>= 1) of "
                         "categories");
    }
    int64_t *ints = pl_malloc(ns * sizeof *ints);
    if (ints == NULL) {
        pl_free(ids);
        return enc_oom();
    }
    memcpy(ints, ci->ints, ns * sizeof *ints);
    pl_graph_node_remove_attr(e->g, e->id, "cats_int64s");
    pl_status *st = enc_set_ints(e, "keys_int64s", in_str ? ids : ints, ns);
    if (st == NULL)
        st = enc_set_ints(e, "values_int64s", in_str ? ints : ids, ns);
    pl_free(ints);
    pl_free(ids);
    PL_RETURN_IF_ERROR(st);
    if (!in_str)
        PL_RETURN_IF_ERROR(enc_id_attr(e, "default_string", "_Unused", "default_int64"));
    pl_graph_node_remove_attr(e->g, e->id, "default_string");
    enc_out(e, 0, !in_str);
    return pl_graph_node_set_op(e->g, e->id, "ai.onnx.ml", "LabelEncoder");
}

/* Constant's value_string / value_strings as an id tensor. */
static pl_status *enc_constant(enc *e)
{
    const pl_graph_node *n = enc_node(e);
    const pl_attr *v = pl_graph_node_attr(n, "value");
    if (v != NULL && v->kind == PL_ATTR_TENSOR) {
        enc_out(e, 0, v->tensor->is_string);
        return NULL;
    }
    const pl_attr *one = pl_graph_node_attr(n, "value_string");
    const pl_attr *many = pl_graph_node_attr(n, "value_strings");
    if (one == NULL && many == NULL)
        return NULL;
    size_t k = 1;
    int64_t id = -1, *ids = NULL;
    if (one != NULL) {
        if (one->kind != PL_ATTR_STRING)
            return enc_error(e, PL_CODE_INVALID_ARGUMENT, "value_string must be a string");
        if ((id = pl_strtab_intern(e->tab, one->s, strlen(one->s))) < 0)
            return enc_oom();
        pl_graph_node_remove_attr(e->g, e->id, "value_string");
    } else {
        PL_RETURN_IF_ERROR(enc_take_ids(e, "value_strings", &ids, &k));
    }
    int64_t dim = (int64_t)k;
    pl_status *st = pl_graph_attr_tensor(e->g, e->id, "value", PL_DTYPE_I64, one ? 0 : 1, &dim,
                                         one ? &id : ids, k * sizeof(int64_t));
    pl_free(ids);
    PL_RETURN_IF_ERROR(st);
    pl_graph_node_attr(enc_node(e), "value")->tensor->is_string = true;
    enc_out(e, 0, true);
    return NULL;
}

/* The ops that move or compare values without reading them: which inputs
 * may hold strings (bit k for input k), and whether every output holds
 * strings when input 0 (or, for Where, input 1) does. */
typedef struct enc_move {
    const char *op;
    uint32_t mask;
    bool all_outputs;
} enc_move;

static const enc_move enc_moves[] = {
    {"Identity", 1, false},       {"Reshape", 1, false},       {"Flatten", 1, false},
    {"Squeeze", 1, false},        {"Unsqueeze", 1, false},     {"Transpose", 1, false},
    {"Expand", 1, false},         {"Tile", 1, false},          {"Slice", 1, false},
    {"Gather", 1, false},         {"GatherElements", 1, false}, {"GatherND", 1, false},
    {"Compress", 1, false},       {"ReverseSequence", 1, false}, {"Split", 1, true},
    {"Pad", 1 | 4, false},        {"ScatterElements", 1 | 4, false},
    {"ScatterND", 1 | 4, false},  {"Scatter", 1 | 4, false},  {"Where", 2 | 4, false},
    {"Concat", UINT32_MAX, false}, {"ArrayFeatureExtractor", 1, false},
};

/* The ops that compute on text (their kernels read the run's strings,
 * ABI 1.14): which inputs hold strings and which outputs are strings,
 * bit k for input or output k. */
typedef struct enc_text {
    const char *domain, *op;
    uint32_t string_inputs, string_outputs;
} enc_text;

static const enc_text enc_text_ops[] = {
    {"", "StringNormalizer", 1, 1},
    {"", "StringConcat", 1 | 2, 1},
    {"", "StringSplit", 1, 1},
    {"", "RegexFullMatch", 1, 0},
    {"com.microsoft", "Tokenizer", 1, 1},
};

bool pl_strings_text_op(const char *domain, const char *op)
{
    static const char *const plinth[] = {"StringToNumber", "NumberToString", "StringMurmurHash3",
                                         "StringNormalizerPadded", "StringSplitCounts",
                                         "StringSplitPadded", "TokenizerWidth",
                                         "TokenizerPadded"};
    if (strcmp(domain, "ai.plinth") == 0) {
        for (size_t i = 0; i < sizeof plinth / sizeof plinth[0]; i++)
            if (strcmp(op, plinth[i]) == 0)
                return true;
        return false;
    }
    for (size_t i = 0; i < sizeof enc_text_ops / sizeof enc_text_ops[0]; i++)
        if (strcmp(domain, enc_text_ops[i].domain) == 0 && strcmp(op, enc_text_ops[i].op) == 0)
            return true;
    return false;
}

/* The ONNX data type of DT, 0 for none. */
static int64_t enc_onnx_type(pl_dtype dt)
{
    static const struct {
        pl_dtype dt;
        int64_t onnx;
    } map[] = {{PL_DTYPE_F32, 1},  {PL_DTYPE_U8, 2},   {PL_DTYPE_I8, 3},   {PL_DTYPE_U16, 4},
               {PL_DTYPE_I16, 5},  {PL_DTYPE_I32, 6},  {PL_DTYPE_I64, 7},  {PL_DTYPE_BOOL, 9},
               {PL_DTYPE_F16, 10}, {PL_DTYPE_F64, 11}, {PL_DTYPE_U32, 12}, {PL_DTYPE_U64, 13},
               {PL_DTYPE_BF16, 16}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (PL_DTYPE_EQ(dt, map[i].dt))
            return map[i].onnx;
    return 0;
}

/* Cast and CastLike with strings on either side: of strings to strings
 * an Identity; to strings ai.plinth NumberToString; from strings
 * ai.plinth StringToNumber with the target's ONNX type in 'to' (for
 * CastLike, the target's declared type). */
static pl_status *enc_cast(enc *e)
{
    const pl_graph_node *n = enc_node(e);
    bool like = strcmp(n->op, "CastLike") == 0;
    const pl_attr *to = pl_graph_node_attr(n, "to");
    bool to_str = like ? enc_in(e, 1) : to != NULL && to->i == 8;
    bool from_str = enc_in(e, 0);
    if (!to_str && !from_str)
        return NULL;
    pl_tid x = n->inputs[0];
    int64_t to_type = to != NULL ? to->i : 0;
    if (like && from_str && !to_str) {
        const pl_graph_tensor *target = pl_graph_get_tensor(e->g, n->inputs[1]);
        to_type = enc_onnx_type(target->dtype);
        if (to_type == 0)
            return enc_error(e, PL_CODE_UNSUPPORTED,
                             "CastLike of strings to '%s', whose type is not declared",
                             target->name);
    }
    pl_graph_node_remove_attr(e->g, e->id, "saturate");
    pl_graph_node_remove_attr(e->g, e->id, "round_mode");
    pl_graph_node_remove_attr(e->g, e->id, "to");
    if (like) /* the target only gave its type */
        PL_RETURN_IF_ERROR(pl_graph_node_set_inputs(e->g, e->id, &x, 1));
    enc_out(e, 0, to_str);
    if (to_str && from_str)
        return pl_graph_node_set_op(e->g, e->id, "", "Identity");
    if (to_str)
        return pl_graph_node_set_op(e->g, e->id, "ai.plinth", "NumberToString");
    PL_RETURN_IF_ERROR(pl_graph_attr_int(e->g, e->id, "to", to_type));
    return pl_graph_node_set_op(e->g, e->id, "ai.plinth", "StringToNumber");
}

/* The classifiers' string labels: their int64 attribute's name. */
static const struct {
    const char *op;
    const char *ints;
} enc_classifiers[] = {
    {"LinearClassifier", "classlabels_ints"},
    {"SVMClassifier", "classlabels_ints"},
    {"TreeEnsembleClassifier", "classlabels_int64s"},
    {"ZipMap", "classlabels_int64s"},
};

static pl_status *enc_node_at(enc *e)
{
    const pl_graph_node *n = enc_node(e);
    const char *op = n->op;
    bool ml = strcmp(n->domain, "ai.onnx.ml") == 0;
    bool onnx = n->domain[0] == '\0' || strcmp(n->domain, "ai.onnx") == 0;
    if (ml && strcmp(op, "LabelEncoder") == 0)
        return enc_label_encoder(e);
    if (ml && strcmp(op, "CategoryMapper") == 0)
        return enc_category_mapper(e);
    if (ml && strcmp(op, "OneHotEncoder") == 0) {
        size_t k;
        PL_RETURN_IF_ERROR(enc_ids_attr(e, "cats_strings", "cats_int64s", &k));
        if ((k > 0) != enc_in(e, 0))
            return enc_error(e, PL_CODE_INVALID_ARGUMENT,
                             "input 0 ('%s') %s strings but the categories %s",
                             enc_in_name(e, 0), enc_in(e, 0) ? "holds" : "does not hold",
                             k > 0 ? "are strings" : "are not");
        return NULL;
    }
    for (size_t i = 0; ml && i < sizeof enc_classifiers / sizeof enc_classifiers[0]; i++)
        if (strcmp(op, enc_classifiers[i].op) == 0) {
            size_t k;
            PL_RETURN_IF_ERROR(enc_only(e, 0, "a classifier reads as numbers"));
            PL_RETURN_IF_ERROR(enc_ids_attr(e, "classlabels_strings", enc_classifiers[i].ints,
                                            &k));
            enc_out(e, 0, k > 0 && strcmp(op, "ZipMap") != 0);
            return NULL;
        }
    if (onnx && strcmp(op, "TfIdfVectorizer") == 0) {
        size_t k;
        PL_RETURN_IF_ERROR(enc_ids_attr(e, "pool_strings", "pool_int64s", &k));
        if ((k > 0) != enc_in(e, 0))
            return enc_error(e, PL_CODE_INVALID_ARGUMENT,
                             "input 0 ('%s') %s strings but the pool %s", enc_in_name(e, 0),
                             enc_in(e, 0) ? "holds" : "does not hold",
                             k > 0 ? "is strings" : "is not");
        return NULL;
    }
    if (onnx && strcmp(op, "Constant") == 0)
        return enc_constant(e);
    if (onnx && strcmp(op, "ConstantOfShape") == 0) {
        const pl_attr *v = pl_graph_node_attr(n, "value");
        enc_out(e, 0, v != NULL && v->kind == PL_ATTR_TENSOR && v->tensor->is_string);
        return enc_only(e, 0, "ConstantOfShape reads as a shape");
    }
    if (onnx && (strcmp(op, "Shape") == 0 || strcmp(op, "Size") == 0))
        return NULL; /* of strings as of anything */
    if (onnx && strcmp(op, "Equal") == 0)
        return enc_same(e, 0, 1); /* equal ids are equal strings */
    if (onnx && (strcmp(op, "Cast") == 0 || strcmp(op, "CastLike") == 0))
        return enc_cast(e);
    if (strcmp(n->domain, "com.microsoft") == 0 && strcmp(op, "MurmurHash3") == 0 &&
        enc_in(e, 0)) { /* of the strings' text (scikit-learn's FeatureHasher) */
        enc_out(e, 0, false);
        return pl_graph_node_set_op(e->g, e->id, "ai.plinth", "StringMurmurHash3");
    }
    for (size_t i = 0; i < sizeof enc_text_ops / sizeof enc_text_ops[0]; i++) {
        const enc_text *t = &enc_text_ops[i];
        if (strcmp(n->domain, t->domain) != 0 || strcmp(op, t->op) != 0)
            continue;
        for (size_t k = 0; k < n->n_formal_inputs && k < 32; k++)
            if (n->inputs[k] != PL_TID_NONE && (t->string_inputs >> k & 1u) && !enc_in(e, k))
                return enc_error(e, PL_CODE_INVALID_ARGUMENT,
                                 "input %zu ('%s') must be a string tensor", k,
                                 enc_in_name(e, k));
        PL_RETURN_IF_ERROR(enc_only(e, t->string_inputs, "this op reads as numbers"));
        for (size_t k = 0; k < n->n_outputs && k < 32; k++)
            enc_out(e, k, t->string_outputs >> k & 1u);
        return NULL;
    }
    if (onnx && strcmp(op, "Unique") == 0 && enc_in(e, 0)) {
        const pl_attr *sorted = pl_graph_node_attr(n, "sorted");
        if (sorted == NULL || sorted->i != 0)
            return enc_error(e, PL_CODE_UNSUPPORTED,
                             "sorted Unique of strings (only sorted = 0 keeps their order "
                             "without reading their text)");
        enc_out(e, 0, true);
        return NULL;
    }
    for (size_t i = 0; (onnx || ml) && i < sizeof enc_moves / sizeof enc_moves[0]; i++) {
        const enc_move *m = &enc_moves[i];
        if (strcmp(op, m->op) != 0 || (ml != (strcmp(op, "ArrayFeatureExtractor") == 0)))
            continue;
        PL_RETURN_IF_ERROR(enc_only(e, m->mask, "this input reads as numbers"));
        size_t lead = m->mask == (2 | 4) ? 1 : 0;
        bool s = enc_in(e, lead);
        for (size_t k = lead + 1; k < n->n_formal_inputs && k < 32; k++)
            if (m->mask >> k & 1u)
                PL_RETURN_IF_ERROR(enc_same(e, lead, k));
        for (size_t k = 0; k < (m->all_outputs ? n->n_outputs : 1); k++)
            enc_out(e, k, s);
        return NULL;
    }
    return enc_only(e, 0,
                    "this op does not take: strings are moved, compared, mapped by the ML "
                    "encoders and computed on by the text ops (StringNormalizer, "
                    "StringConcat, StringSplit, RegexFullMatch, com.microsoft Tokenizer, "
                    "casts), not read as numbers");
}

/* Whether any node of G has a string attribute of the encoders or makes
 * strings (a cast to strings, an op on text). */
static bool enc_has_string_attrs(const pl_graph *g)
{
    static const char *const names[] = {"classlabels_strings", "keys_strings", "values_strings",
                                        "cats_strings", "pool_strings", "classes_strings",
                                        "value_string", "value_strings", "keys_tensor",
                                        "values_tensor", "default_tensor"};
    for (size_t i = 0; i < pl_graph_node_count(g); i++) {
        const pl_graph_node *n = pl_graph_get_node(g, (pl_nid)i);
        const pl_attr *to = strcmp(n->op, "Cast") == 0 ? pl_graph_node_attr(n, "to") : NULL;
        if ((to != NULL && to->kind == PL_ATTR_INT && to->i == 8) ||
            pl_strings_text_op(n->domain, n->op))
            return true; /* strings made inside the graph */
        for (size_t k = 0; k < n->n_attrs; k++) {
            for (size_t j = 0; j < sizeof names / sizeof names[0]; j++)
                if (strcmp(n->attrs[k].name, names[j]) == 0)
                    return true;
            if (n->attrs[k].kind == PL_ATTR_TENSOR && n->attrs[k].tensor->is_string)
                return true;
        }
    }
    return false;
}

pl_status *pl_strings_encode(pl_graph *g, bool *out_any)
{
    *out_any = false;
    size_t nt = pl_graph_tensor_count(g);
    bool declared = false;
    for (size_t t = 0; t < nt && !declared; t++)
        declared = pl_graph_get_tensor(g, (pl_tid)t)->is_string;
    if (!declared && !enc_has_string_attrs(g))
        return NULL;
    enc e = {.g = g, .tab = pl_graph_strtab_make(g)};
    e.str = pl_calloc(nt ? nt : 1, sizeof *e.str);
    if (e.tab == NULL || e.str == NULL) {
        pl_free(e.str);
        return enc_oom();
    }
    for (size_t t = 0; t < nt; t++) {
        const pl_graph_tensor *gt = pl_graph_get_tensor(g, (pl_tid)t);
        e.str[t] = gt->is_string && (gt->is_input || gt->data != NULL);
    }
    const pl_nid *topo = pl_graph_topo_order(g);
    pl_status *st = topo ? NULL
                         : pl_status_create(PL_CODE_INTERNAL,
                                            "string tensors: the graph is not validated");
    size_t nn = pl_graph_node_count(g);
    for (size_t i = 0; st == NULL && i < nn; i++) {
        e.id = topo[i];
        const pl_graph_node *n = enc_node(&e);
        bool body = false;
        for (size_t k = 0; k < n->n_attrs; k++)
            body = body || n->attrs[k].kind == PL_ATTR_GRAPH || n->attrs[k].kind == PL_ATTR_GRAPHS;
        if (body) {
            /* captures are listed after the formal inputs */
            for (size_t k = 0; st == NULL && k < n->n_inputs; k++)
                if (n->inputs[k] != PL_TID_NONE && e.str[n->inputs[k]])
                    st = enc_error(&e, PL_CODE_UNSUPPORTED,
                                   "'%s' holds strings; Plinth carries strings only in the "
                                   "main graph, not into control-flow bodies",
                                   pl_graph_get_tensor(g, n->inputs[k])->name);
            continue;
        }
        st = enc_node_at(&e);
        /* an output the model declares as strings that this op does not
         * make strings of */
        for (size_t k = 0; st == NULL && k < n->n_outputs; k++) {
            pl_tid t = n->outputs[k];
            if (t != PL_TID_NONE && pl_graph_get_tensor(g, t)->is_string && !e.str[t])
                st = enc_error(&e, PL_CODE_UNSUPPORTED,
                               "output '%s' is declared a string tensor, but this op does "
                               "not make strings of its inputs",
                               pl_graph_get_tensor(g, t)->name);
        }
    }
    /* an output the model declares numeric that holds strings: a
     * classifier's labels declared int64 beside classlabels_strings */
    for (size_t i = 0; st == NULL && i < pl_graph_output_count(g); i++) {
        const pl_graph_tensor *gt = pl_graph_get_tensor(g, pl_graph_output(g, i));
        if (e.str[pl_graph_output(g, i)] && !gt->is_string && gt->dtype.lanes != 0)
            st = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                  "graph output '%s' is declared %s but holds strings", gt->name,
                                  pl_dtype_name(gt->dtype));
    }
    bool any = false;
    for (size_t t = 0; st == NULL && t < nt; t++) {
        pl_graph_tensor *gt = pl_graph_get_tensor_mut(g, (pl_tid)t);
        gt->is_string = e.str[t];
        any = any || e.str[t];
    }
    pl_free(e.str);
    /* (ops renamed and attributes removed undo the validation) */
    if (st == NULL)
        st = pl_graph_validate(g);
    *out_any = st == NULL && any;
    return st;
}
