/* opset.c — the schema registry and the inference driver. The registry is
 * a sorted array of schemas per runtime; every schema enters through
 * pl_opset_register, which checks it and refuses a taken key (built-in
 * ones borrowed from the static tables of opset_*.c, modules' custom ops
 * copied into one allocation each). The driver walks a validated graph in
 * topological order, checks every node against its schema, runs the
 * schema's infer function through a pl_infer_ctx and merges the result
 * with whatever type the graph already declared. Small integer values
 * that shapes are computed from ("known values") live in a side table of
 * the driver indexed by tensor id, never in the graph. */
#include "opset.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "opset_internal.h"
#include "status.h"

/* ---- dtype sets --------------------------------------------------------- */

static const struct {
    pl_dtype dtype;
    pl_dtype_set bit;
} pl_dtype_bits[] = {
    {{PL_TYPE_FLOAT, 32, 1}, PL_TS_F32}, {{PL_TYPE_FLOAT, 64, 1}, PL_TS_F64},
    {{PL_TYPE_FLOAT, 16, 1}, PL_TS_F16}, {{PL_TYPE_BFLOAT, 16, 1}, PL_TS_BF16},
    {{PL_TYPE_UINT, 8, 1}, PL_TS_U8},    {{PL_TYPE_INT, 8, 1}, PL_TS_I8},
    {{PL_TYPE_INT, 32, 1}, PL_TS_I32},   {{PL_TYPE_INT, 64, 1}, PL_TS_I64},
    {{PL_TYPE_BOOL, 8, 1}, PL_TS_BOOL},
    {{PL_TYPE_INT, 16, 1}, PL_TS_I16},   {{PL_TYPE_UINT, 16, 1}, PL_TS_U16},
    {{PL_TYPE_UINT, 32, 1}, PL_TS_U32},  {{PL_TYPE_UINT, 64, 1}, PL_TS_U64},
};

pl_dtype_set pl_dtype_set_of(pl_dtype dtype)
{
    for (size_t i = 0; i < PL_COUNT(pl_dtype_bits); i++)
        if (PL_DTYPE_EQ(pl_dtype_bits[i].dtype, dtype))
            return pl_dtype_bits[i].bit;
    return 0;
}

/* "f32, f64, f16" for a set, into BUF. */
static const char *pl_dtype_set_format(pl_dtype_set set, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < PL_COUNT(pl_dtype_bits); i++) {
        if (!(set & pl_dtype_bits[i].bit))
            continue;
        int n = snprintf(buf + used, size - used, "%s%s", used ? ", " : "",
                         pl_dtype_name(pl_dtype_bits[i].dtype));
        if (n < 0 || (size_t)n >= size - used)
            break;
        used += (size_t)n;
    }
    return buf;
}

char *pl_dims_format(const int64_t *dims, int32_t ndim, char *buf, size_t size)
{
    if (size == 0)
        return buf;
    if (ndim < 0) {
        snprintf(buf, size, "(unknown rank)");
        return buf;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (int32_t i = 0; i <= ndim; i++) {
        int n;
        if (i == ndim)
            n = snprintf(buf + used, size - used, ndim == 0 ? "[]" : "]");
        else if (dims[i] < 0)
            n = snprintf(buf + used, size - used, "%s?", i ? "," : "[");
        else
            n = snprintf(buf + used, size - used, "%s%lld", i ? "," : "[",
                         (long long)dims[i]);
        if (n < 0 || (size_t)n >= size - used)
            break;
        used += (size_t)n;
    }
    return buf;
}

/* ---- broadcasting ------------------------------------------------------- */

bool pl_opset_broadcast(const int64_t *a, int ra, const int64_t *b, int rb,
                        int64_t *out, int *out_rank)
{
    if (ra < 0 || rb < 0 || ra > PL_GRAPH_MAX_RANK || rb > PL_GRAPH_MAX_RANK)
        return false;
    int r = ra > rb ? ra : rb;
    int64_t tmp[PL_GRAPH_MAX_RANK];
    for (int i = 0; i < r; i++) {
        int64_t da = i < r - ra ? 1 : a[i - (r - ra)];
        int64_t db = i < r - rb ? 1 : b[i - (r - rb)];
        if (da == db)
            tmp[i] = da;
        else if (da == 1)
            tmp[i] = db;
        else if (db == 1)
            tmp[i] = da;
        else if (da < 0)
            tmp[i] = db;   /* the unknown side must be 1 or equal */
        else if (db < 0)
            tmp[i] = da;
        else
            return false;
    }
    memcpy(out, tmp, (size_t)r * sizeof *tmp);
    if (out_rank)
        *out_rank = r;
    return true;
}

/* ---- the registry ------------------------------------------------------- */

typedef struct pl_opset_entry {
    const pl_op_schema *schema;
    void *owned;               /* the copy's allocation, NULL for built-ins */
} pl_opset_entry;

struct pl_opset {
    pl_opset_entry *entries;   /* sorted by domain, name, since_version */
    size_t n;
    size_t cap;
};

static const char *pl_domain_norm(const char *domain)
{
    if (domain == NULL || strcmp(domain, "ai.onnx") == 0)
        return "";
    return domain;
}

static int pl_schema_key_cmp(const char *domain, const char *name,
                             int64_t since, const pl_op_schema *s)
{
    int c = strcmp(domain, pl_domain_norm(s->domain));
    if (c == 0)
        c = strcmp(name, s->name);
    if (c == 0)
        c = since < s->since_version ? -1 : since > s->since_version;
    return c;
}

/* The first entry whose key is >= (domain, name, since). */
static size_t pl_opset_lower_bound(const pl_opset *set, const char *domain,
                                   const char *name, int64_t since)
{
    size_t lo = 0, hi = set->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pl_schema_key_cmp(domain, name, since, set->entries[mid].schema) > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

pl_status *pl_opset_create(pl_opset **out_set)
{
    *out_set = NULL;
    pl_opset *set = pl_calloc(1, sizeof *set);
    if (set == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                "out of memory creating the opset");
    const struct {
        const pl_op_schema *table;
        size_t n;
    } families[] = {
        {pl_opset_elementwise_schemas, pl_opset_elementwise_count},
        {pl_opset_nn_schemas, pl_opset_nn_count},
        {pl_opset_shape_schemas, pl_opset_shape_count},
        {pl_opset_math_schemas, pl_opset_math_count},
        {pl_opset_rnn_schemas, pl_opset_rnn_count},
        {pl_opset_index_schemas, pl_opset_index_count},
        {pl_opset_loss_schemas, pl_opset_loss_count},
        {pl_opset_quant_schemas, pl_opset_quant_count},
        {pl_opset_signal_schemas, pl_opset_signal_count},
        {pl_opset_norm_schemas, pl_opset_norm_count},
        {pl_opset_sample_schemas, pl_opset_sample_count},
        {pl_opset_text_schemas, pl_opset_text_count},
        {pl_opset_control_schemas, pl_opset_control_count},
    };
    /* One allocation for every built-in entry, so that registering the
     * tables below never grows the array. */
    size_t total = 0;
    for (size_t f = 0; f < PL_COUNT(families); f++)
        total += families[f].n;
    set->entries = pl_calloc(total, sizeof *set->entries);
    if (set->entries == NULL) {
        pl_free(set);
        return pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                "out of memory creating the opset");
    }
    set->cap = total;
    /* The built-in tables enter the way a module's custom op does (checked,
     * refused when a key repeats), only borrowed instead of copied. */
    for (size_t f = 0; f < PL_COUNT(families); f++) {
        pl_status *st = pl_opset_register(set, families[f].table, families[f].n,
                                          PL_SCHEMA_STATIC);
        if (st != NULL) {
            pl_opset_destroy(set);
            return pl_status_wrap(st, "built-in opset: ");
        }
    }
    *out_set = set;
    return NULL;
}

void pl_opset_destroy(pl_opset *set)
{
    if (set == NULL)
        return;
    for (size_t i = 0; i < set->n; i++)
        pl_free(set->entries[i].owned);
    pl_free(set->entries);
    pl_free(set);
}

size_t pl_opset_count(const pl_opset *set)
{
    return set ? set->n : 0;
}

/* pl_opset_find without the history check: the newest schema of OP not
 * above OPSET_VERSION, whatever ONNX changed since. */
static const pl_op_schema *pl_opset_find_any(const pl_opset *set, const char *domain,
                                             const char *op, int64_t opset_version)
{
    if (set == NULL || op == NULL)
        return NULL;
    domain = pl_domain_norm(domain);
    /* The first entry past (domain, op, version); the one before it is the
     * newest schema not above the version, if it is the same op. */
    size_t pos = opset_version == INT64_MAX
                     ? pl_opset_lower_bound(set, domain, op, INT64_MAX)
                     : pl_opset_lower_bound(set, domain, op, opset_version + 1);
    if (opset_version == INT64_MAX && pos < set->n &&
        pl_schema_key_cmp(domain, op, INT64_MAX, set->entries[pos].schema) == 0)
        return set->entries[pos].schema;
    if (pos == 0)
        return NULL;
    const pl_op_schema *s = set->entries[pos - 1].schema;
    if (strcmp(pl_domain_norm(s->domain), domain) != 0 || strcmp(s->name, op) != 0)
        return NULL;
    return s;
}

const pl_op_schema *pl_opset_find(const pl_opset *set, const char *domain,
                                  const char *op, int64_t opset_version)
{
    const pl_op_schema *s = pl_opset_find_any(set, domain, op, opset_version);
    /* An ai.onnx schema older than a change ONNX made by this version
     * describes another op (opset_history.c). */
    if (s != NULL && pl_domain_norm(domain)[0] == '\0' && opset_version != INT64_MAX &&
        pl_opset_changed_after(op, s->since_version, opset_version) > 0)
        return NULL;
    return s;
}

int pl_opset_inplace_input(const pl_op_schema *s, size_t output_index)
{
    if (s == NULL || s->n_inplace <= 0 || output_index >= (size_t)s->n_inplace ||
        output_index >= PL_OP_MAX_FORMAL)
        return -1;
    int in = s->inplace_input[output_index];
    return in >= 0 ? in : -1;
}

/* Bytes of a string with its NUL, added to *total; false on overflow. */
static bool pl_add_str(size_t *total, const char *s)
{
    return s == NULL || pl_size_add(*total, strlen(s) + 1, total);
}

static char *pl_put_str(char **cursor, const char *s)
{
    if (s == NULL)
        return NULL;
    size_t n = strlen(s) + 1;
    char *out = *cursor;
    memcpy(out, s, n);
    *cursor += n;
    return out;
}

static pl_status *pl_schema_check(const pl_op_schema *s)
{
    if (s == NULL || s->name == NULL || s->name[0] == '\0')
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "op schema: the op name is empty");
    const char *dom = s->domain ? s->domain : "";
    if (s->min_inputs < 0 || s->max_inputs < s->min_inputs ||
        s->min_outputs < 0 || s->max_outputs < s->min_outputs ||
        s->max_outputs < 1)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "op schema %s (domain '%s'): bad arity "
                                "(inputs %d..%d, outputs %d..%d)",
                                s->name, dom, (int)s->min_inputs,
                                (int)s->max_inputs, (int)s->min_outputs,
                                (int)s->max_outputs);
    if (s->n_inplace < 0 || s->n_inplace > PL_OP_MAX_FORMAL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "op schema %s (domain '%s'): n_inplace %d out "
                                "of range", s->name, dom, (int)s->n_inplace);
    if (s->n_attrs > 0 && s->attrs == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "op schema %s (domain '%s'): %zu attributes "
                                "but no table", s->name, dom, s->n_attrs);
    for (size_t i = 0; i < s->n_attrs; i++) {
        const pl_attr_spec *a = &s->attrs[i];
        if (a->name == NULL || a->name[0] == '\0' || a->kind < PL_ATTR_INT ||
            a->kind > PL_ATTR_GRAPHS)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "op schema %s (domain '%s'): attribute %zu "
                                    "has no name or a bad kind",
                                    s->name, dom, i);
        if (a->n_default_ints > 0 && a->default_ints == NULL)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "op schema %s (domain '%s'): attribute "
                                    "'%s' has a default count but no values",
                                    s->name, dom, a->name);
    }
    return NULL;
}

/* Room for one more entry; NAME is the schema that needs it, for the
 * error. */
static pl_status *pl_opset_reserve(pl_opset *set, const char *name)
{
    if (set->n < set->cap)
        return NULL;
    size_t cap = set->cap ? set->cap * 2 : 16;
    size_t grow_bytes;
    if (!pl_size_mul(cap, sizeof *set->entries, &grow_bytes))
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "too many op schemas");
    pl_opset_entry *grown = pl_realloc(set->entries, grow_bytes);
    if (grown == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                "out of memory registering op schema %s", name);
    set->entries = grown;
    set->cap = cap;
    return NULL;
}

/* Removes the entry keyed like SCHEMA (one this call of pl_opset_register
 * added) and frees its copy. */
static void pl_opset_unregister(pl_opset *set, const pl_op_schema *schema)
{
    const char *domain = pl_domain_norm(schema->domain);
    size_t pos = pl_opset_lower_bound(set, domain, schema->name,
                                      schema->since_version);
    if (pos >= set->n || pl_schema_key_cmp(domain, schema->name,
                                           schema->since_version,
                                           set->entries[pos].schema) != 0)
        return;
    pl_free(set->entries[pos].owned);
    memmove(&set->entries[pos], &set->entries[pos + 1],
            (set->n - pos - 1) * sizeof *set->entries);
    set->n--;
}

/* Adds one schema: checked, refused when its key is taken, then inserted
 * in order, borrowed or copied as STORAGE says. */
static pl_status *pl_opset_register_one(pl_opset *set, const pl_op_schema *schema,
                                        pl_schema_storage storage)
{
    PL_RETURN_IF_ERROR(pl_schema_check(schema));
    const char *domain = pl_domain_norm(schema->domain);
    size_t pos = pl_opset_lower_bound(set, domain, schema->name,
                                      schema->since_version);
    if (pos < set->n && pl_schema_key_cmp(domain, schema->name,
                                          schema->since_version,
                                          set->entries[pos].schema) == 0)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "op schema %s (domain '%s', since version "
                                "%lld) is already registered",
                                schema->name, domain,
                                (long long)schema->since_version);
    if (storage == PL_SCHEMA_STATIC) {
        PL_RETURN_IF_ERROR(pl_opset_reserve(set, schema->name));
        memmove(&set->entries[pos + 1], &set->entries[pos],
                (set->n - pos) * sizeof *set->entries);
        set->entries[pos].schema = schema;
        set->entries[pos].owned = NULL;
        set->n++;
        return NULL;
    }

    /* One allocation: the schema, its attribute table, default int arrays,
     * then every string. */
    size_t total = sizeof(pl_op_schema), bytes;
    bool ok = pl_size_mul(schema->n_attrs, sizeof(pl_attr_spec), &bytes) &&
              pl_size_add(total, bytes, &total);
    for (size_t i = 0; ok && i < schema->n_attrs; i++) {
        const pl_attr_spec *a = &schema->attrs[i];
        ok = pl_size_mul(a->n_default_ints, sizeof(int64_t), &bytes) &&
             pl_size_add(total, bytes, &total) && pl_add_str(&total, a->name) &&
             pl_add_str(&total, a->default_string);
    }
    ok = ok && pl_add_str(&total, schema->name) && pl_add_str(&total, domain);
    for (size_t i = 0; ok && i < PL_OP_MAX_TYPES; i++)
        ok = pl_add_str(&total, schema->types[i].name);
    for (size_t i = 0; ok && i < PL_OP_MAX_FORMAL; i++)
        ok = pl_add_str(&total, schema->input_types[i]) &&
             pl_add_str(&total, schema->output_types[i]);
    if (!ok)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "op schema %s: too large", schema->name);

    PL_RETURN_IF_ERROR(pl_opset_reserve(set, schema->name));
    char *block = pl_malloc(total);
    if (block == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                "out of memory registering op schema %s",
                                schema->name);
    pl_op_schema *copy = (pl_op_schema *)(void *)block;
    *copy = *schema;
    char *cursor = block + sizeof *copy;
    pl_attr_spec *attrs = (pl_attr_spec *)(void *)cursor;
    cursor += schema->n_attrs * sizeof *attrs;
    for (size_t i = 0; i < schema->n_attrs; i++) {
        attrs[i] = schema->attrs[i];
        if (attrs[i].n_default_ints > 0) {
            size_t nb = attrs[i].n_default_ints * sizeof(int64_t);
            memcpy(cursor, schema->attrs[i].default_ints, nb);
            attrs[i].default_ints = (const int64_t *)(void *)cursor;
            cursor += nb;
        } else {
            attrs[i].default_ints = NULL;
        }
    }
    for (size_t i = 0; i < schema->n_attrs; i++) {
        attrs[i].name = pl_put_str(&cursor, schema->attrs[i].name);
        attrs[i].default_string =
            pl_put_str(&cursor, schema->attrs[i].default_string);
    }
    copy->attrs = schema->n_attrs ? attrs : NULL;
    copy->name = pl_put_str(&cursor, schema->name);
    copy->domain = pl_put_str(&cursor, domain);
    for (size_t i = 0; i < PL_OP_MAX_TYPES; i++)
        copy->types[i].name = pl_put_str(&cursor, schema->types[i].name);
    for (size_t i = 0; i < PL_OP_MAX_FORMAL; i++) {
        copy->input_types[i] = pl_put_str(&cursor, schema->input_types[i]);
        copy->output_types[i] = pl_put_str(&cursor, schema->output_types[i]);
    }
    memmove(&set->entries[pos + 1], &set->entries[pos],
            (set->n - pos) * sizeof *set->entries);
    set->entries[pos].schema = copy;
    set->entries[pos].owned = block;
    set->n++;
    return NULL;
}

pl_status *pl_opset_register(pl_opset *set, const pl_op_schema *schemas,
                             size_t n, pl_schema_storage storage)
{
    if (set == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "no opset given");
    if (n > 0 && schemas == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "%zu op schemas but no table", n);
    if (storage != PL_SCHEMA_COPY && storage != PL_SCHEMA_STATIC)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "op schema storage %d is neither copy nor "
                                "static", (int)storage);
    for (size_t i = 0; i < n; i++) {
        pl_status *st = pl_opset_register_one(set, &schemas[i], storage);
        if (st != NULL) {
            /* All or nothing: take back what this call added. */
            while (i-- > 0)
                pl_opset_unregister(set, &schemas[i]);
            return st;
        }
    }
    return NULL;
}

/* ---- the inference context ---------------------------------------------- */

/* Known values of one tensor. */
typedef struct pl_known {
    int32_t n;
    bool is_float;
    uint64_t mask;             /* ints: bit k set when element k is known */
    int64_t iv[PL_KNOWN_MAX];
    double fv[PL_KNOWN_MAX];
} pl_known;

/* What an infer function said about one output. */
typedef struct pl_infer_out {
    pl_dtype dtype;
    int32_t ndim;
    int64_t dims[PL_GRAPH_MAX_RANK];
    const char *params[PL_GRAPH_MAX_RANK];
} pl_infer_out;

struct pl_infer_ctx {
    pl_graph *g;
    const pl_opset *set;       /* for the bodies of control-flow nodes */
    const pl_op_schema *schema;
    const pl_graph_node *node;
    int64_t version;
    int64_t converted_from;    /* the ai.onnx opset the graph was converted from, or 0 */
    pl_known **known;          /* per tensor id, NULL when nothing known */
    size_t n_tensors;
    pl_infer_out *outs;        /* node outputs; grows to the widest node */
    size_t cap_outs;
    bool body;                 /* a control-flow body (its session is never staged) */
    bool open_inputs;          /* a graph input's rank or a dim of it is unknown */
};

const pl_graph *pl_infer_graph(const pl_infer_ctx *ctx)
{
    return ctx->g;
}

const pl_graph_node *pl_infer_node(const pl_infer_ctx *ctx)
{
    return ctx->node;
}

const pl_op_schema *pl_infer_schema(const pl_infer_ctx *ctx)
{
    return ctx->schema;
}

int64_t pl_infer_opset_version(const pl_infer_ctx *ctx)
{
    return ctx->version;
}

void *pl_infer_user_data(const pl_infer_ctx *ctx)
{
    return ctx->schema->infer_user;
}

size_t pl_infer_input_count(const pl_infer_ctx *ctx)
{
    return ctx->node->n_formal_inputs;
}

size_t pl_infer_output_count(const pl_infer_ctx *ctx)
{
    return ctx->node->n_outputs;
}

const pl_graph_tensor *pl_infer_input(const pl_infer_ctx *ctx, size_t i)
{
    if (i >= ctx->node->n_formal_inputs || ctx->node->inputs[i] == PL_TID_NONE)
        return NULL;
    return pl_graph_get_tensor(ctx->g, ctx->node->inputs[i]);
}

int32_t pl_infer_input_rank(const pl_infer_ctx *ctx, size_t i)
{
    const pl_graph_tensor *t = pl_infer_input(ctx, i);
    return t ? t->ndim : -1;
}

pl_dtype pl_infer_input_dtype(const pl_infer_ctx *ctx, size_t i)
{
    const pl_graph_tensor *t = pl_infer_input(ctx, i);
    return t ? t->dtype : PL_DTYPE_UNKNOWN;
}

static const pl_attr_spec *pl_schema_attr(const pl_op_schema *s, const char *name)
{
    for (size_t i = 0; i < s->n_attrs; i++)
        if (strcmp(s->attrs[i].name, name) == 0)
            return &s->attrs[i];
    return NULL;
}

bool pl_infer_has_attr(const pl_infer_ctx *ctx, const char *name)
{
    return pl_graph_node_attr(ctx->node, name) != NULL;
}

int64_t pl_infer_attr_int(const pl_infer_ctx *ctx, const char *name)
{
    const pl_attr *a = pl_graph_node_attr(ctx->node, name);
    if (a != NULL && a->kind == PL_ATTR_INT)
        return a->i;
    const pl_attr_spec *s = pl_schema_attr(ctx->schema, name);
    return s ? s->default_int : 0;
}

double pl_infer_attr_float(const pl_infer_ctx *ctx, const char *name)
{
    const pl_attr *a = pl_graph_node_attr(ctx->node, name);
    if (a != NULL && a->kind == PL_ATTR_FLOAT)
        return a->f;
    const pl_attr_spec *s = pl_schema_attr(ctx->schema, name);
    return s ? s->default_float : 0.0;
}

const char *pl_infer_attr_string(const pl_infer_ctx *ctx, const char *name)
{
    const pl_attr *a = pl_graph_node_attr(ctx->node, name);
    if (a != NULL && a->kind == PL_ATTR_STRING)
        return a->s ? a->s : "";
    const pl_attr_spec *s = pl_schema_attr(ctx->schema, name);
    return s && s->default_string ? s->default_string : "";
}

bool pl_infer_attr_ints(const pl_infer_ctx *ctx, const char *name,
                        const int64_t **out_values, size_t *out_n)
{
    *out_values = NULL;
    *out_n = 0;
    const pl_attr *a = pl_graph_node_attr(ctx->node, name);
    if (a != NULL && a->kind == PL_ATTR_INTS) {
        *out_values = a->ints;
        *out_n = a->n;
        return true;
    }
    const pl_attr_spec *s = pl_schema_attr(ctx->schema, name);
    if (s == NULL || s->default_ints == NULL)
        return false;
    *out_values = s->default_ints;
    *out_n = s->n_default_ints;
    return true;
}

bool pl_infer_attr_floats(const pl_infer_ctx *ctx, const char *name,
                          const double **out_values, size_t *out_n)
{
    *out_values = NULL;
    *out_n = 0;
    const pl_attr *a = pl_graph_node_attr(ctx->node, name);
    if (a == NULL || a->kind != PL_ATTR_FLOATS)
        return false;
    *out_values = a->floats;
    *out_n = a->n;
    return true;
}

static const pl_known *pl_input_known(const pl_infer_ctx *ctx, size_t i)
{
    if (i >= ctx->node->n_formal_inputs)
        return NULL;
    pl_tid t = ctx->node->inputs[i];
    if (t == PL_TID_NONE || t >= ctx->n_tensors)
        return NULL;
    return ctx->known[t];
}

bool pl_infer_known_tensor(const pl_infer_ctx *ctx, pl_tid t, bool *out_is_float,
                           const int64_t **out_ints, const double **out_floats,
                           uint64_t *out_mask, size_t *out_n)
{
    *out_ints = NULL;
    *out_floats = NULL;
    *out_mask = 0;
    *out_n = 0;
    if (t == PL_TID_NONE || t >= ctx->n_tensors || ctx->known[t] == NULL)
        return false;
    const pl_known *k = ctx->known[t];
    *out_is_float = k->is_float;
    if (k->is_float)
        *out_floats = k->fv;
    else
        *out_ints = k->iv;
    *out_mask = k->mask;
    *out_n = (size_t)k->n;
    return true;
}

bool pl_infer_known_ints(const pl_infer_ctx *ctx, size_t i,
                         const int64_t **out_values, uint64_t *out_mask,
                         size_t *out_n)
{
    *out_values = NULL;
    *out_mask = 0;
    *out_n = 0;
    const pl_known *k = pl_input_known(ctx, i);
    if (k == NULL || k->is_float)
        return false;
    *out_values = k->iv;
    *out_mask = k->mask;
    *out_n = (size_t)k->n;
    return true;
}

bool pl_infer_known_floats(const pl_infer_ctx *ctx, size_t i,
                           const double **out_values, size_t *out_n)
{
    *out_values = NULL;
    *out_n = 0;
    const pl_known *k = pl_input_known(ctx, i);
    if (k == NULL || !k->is_float)
        return false;
    *out_values = k->fv;
    *out_n = (size_t)k->n;
    return true;
}

pl_status *pl_infer_error(const pl_infer_ctx *ctx, pl_code code,
                          const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const pl_graph_node *n = ctx->node;
    if (n->domain != NULL && n->domain[0] != '\0')
        return pl_status_create(code, "node '%s' (%s, domain '%s'): %s",
                                n->name, n->op, n->domain, msg);
    return pl_status_create(code, "node '%s' (%s): %s", n->name, n->op, msg);
}

static pl_status *pl_infer_oom(const pl_infer_ctx *ctx)
{
    return pl_infer_error(ctx, PL_CODE_OUT_OF_MEMORY,
                          "out of memory during shape inference");
}

pl_status *pl_infer_set_output(pl_infer_ctx *ctx, size_t i, pl_dtype dtype,
                               int32_t ndim, const int64_t *dims,
                               const char *const *dim_params)
{
    if (i >= ctx->node->n_outputs)
        return pl_infer_error(ctx, PL_CODE_INTERNAL,
                              "inference set output %zu of %zu", i,
                              ctx->node->n_outputs);
    if (ndim > PL_GRAPH_MAX_RANK)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "output %zu would have rank %d, more than %d",
                              i, (int)ndim, PL_GRAPH_MAX_RANK);
    pl_infer_out *o = &ctx->outs[i];
    if (dtype.lanes != 0)
        o->dtype = dtype;
    o->ndim = ndim < 0 ? -1 : ndim;
    for (int32_t d = 0; d < ndim; d++) {
        if (dims[d] < -1)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "output %zu would have dimension %d = %lld",
                                  i, (int)d, (long long)dims[d]);
        o->dims[d] = dims[d];
        o->params[d] = dim_params && dims[d] < 0 ? dim_params[d] : NULL;
    }
    return NULL;
}

static pl_status *pl_known_slot(pl_infer_ctx *ctx, size_t i, size_t n,
                                pl_known **out)
{
    *out = NULL;
    if (i >= ctx->node->n_outputs || n > PL_KNOWN_MAX)
        return pl_infer_error(ctx, PL_CODE_INTERNAL,
                              "known values for output %zu (%zu values)", i, n);
    pl_tid t = ctx->node->outputs[i];
    if (t == PL_TID_NONE || t >= ctx->n_tensors)
        return NULL;
    if (ctx->known[t] == NULL) {
        ctx->known[t] = pl_malloc(sizeof(pl_known));
        if (ctx->known[t] == NULL)
            return pl_infer_oom(ctx);
    }
    *out = ctx->known[t];
    (*out)->n = (int32_t)n;
    return NULL;
}

pl_status *pl_infer_set_known_ints(pl_infer_ctx *ctx, size_t i,
                                   const int64_t *values, uint64_t mask,
                                   size_t n)
{
    pl_known *k;
    PL_RETURN_IF_ERROR(pl_known_slot(ctx, i, n, &k));
    if (k == NULL)
        return NULL;
    k->is_float = false;
    k->mask = n < 64 ? mask & ((UINT64_C(1) << n) - 1) : mask;
    for (size_t e = 0; e < n; e++)
        k->iv[e] = (mask >> e) & 1 ? values[e] : 0;
    return NULL;
}

pl_status *pl_infer_set_known_floats(pl_infer_ctx *ctx, size_t i,
                                     const double *values, size_t n)
{
    pl_known *k;
    PL_RETURN_IF_ERROR(pl_known_slot(ctx, i, n, &k));
    if (k == NULL)
        return NULL;
    k->is_float = true;
    k->mask = 0;
    memcpy(k->fv, values, n * sizeof *values);
    return NULL;
}

/* ---- helpers shared by the op families ----------------------------------- */

pl_status *pl_infer_reduce_known(pl_infer_ctx *ctx, bool whole)
{
    const int64_t *v;
    uint64_t mask;
    size_t n;
    const char *op = pl_infer_node(ctx)->op;
    if (!whole || !pl_infer_known_ints(ctx, 0, &v, &mask, &n) ||
        (n < 64 ? mask != (UINT64_C(1) << n) - 1 : mask != UINT64_MAX))
        return NULL;
    int kind = strcmp(op, "ReduceProd") == 0 ? 0 : strcmp(op, "ReduceSum") == 0 ? 1
             : strcmp(op, "ReduceMin") == 0  ? 2 : strcmp(op, "ReduceMax") == 0 ? 3 : -1;
    if (kind < 0 || (n == 0 && kind >= 2))
        return NULL;
    int64_t r = kind == 0 ? 1 : kind == 1 ? 0 : v[0];
    for (size_t e = 0; e < n; e++) {
        bool overflow = false;
        if (kind == 0)
            overflow = __builtin_mul_overflow(r, v[e], &r);
        else if (kind == 1)
            overflow = __builtin_add_overflow(r, v[e], &r);
        else if (kind == 2)
            r = v[e] < r ? v[e] : r;
        else
            r = v[e] > r ? v[e] : r;
        if (overflow)
            return NULL;
    }
    return pl_infer_set_known_ints(ctx, 0, &r, 1, 1);
}

bool pl_infer_axis(int64_t axis, int64_t rank, int64_t *out_axis)
{
    if (axis < -rank || axis >= rank)
        return false;
    *out_axis = axis < 0 ? axis + rank : axis;
    return true;
}

pl_status *pl_infer_copy_input(pl_infer_ctx *ctx, size_t out, size_t in)
{
    const pl_graph_tensor *t = pl_infer_input(ctx, in);
    if (t == NULL)
        return NULL;
    return pl_infer_set_output(ctx, out, t->dtype, t->ndim, t->dims,
                               (const char *const *)t->dim_params);
}

bool pl_onnx_dtype(int64_t onnx_type, pl_dtype *out_dtype)
{
    switch (onnx_type) {
    case 1: *out_dtype = PL_DTYPE_F32; return true;
    case 2: *out_dtype = PL_DTYPE_U8; return true;
    case 3: *out_dtype = PL_DTYPE_I8; return true;
    case 4: *out_dtype = PL_DTYPE_U16; return true;
    case 5: *out_dtype = PL_DTYPE_I16; return true;
    case 6: *out_dtype = PL_DTYPE_I32; return true;
    case 7: *out_dtype = PL_DTYPE_I64; return true;
    case 9: *out_dtype = PL_DTYPE_BOOL; return true;
    case 10: *out_dtype = PL_DTYPE_F16; return true;
    case 11: *out_dtype = PL_DTYPE_F64; return true;
    case 12: *out_dtype = PL_DTYPE_U32; return true;
    case 13: *out_dtype = PL_DTYPE_U64; return true;
    case 16: *out_dtype = PL_DTYPE_BF16; return true;
    default: return false;
    }
}

pl_status *pl_infer_ints_arg(const pl_infer_ctx *ctx, size_t in,
                             const char *attr, int64_t *out, size_t *out_n,
                             int *out_state)
{
    *out_n = 0;
    *out_state = 0;
    if (pl_infer_input(ctx, in) != NULL) {
        const int64_t *v;
        uint64_t mask;
        size_t n;
        if (!pl_infer_known_ints(ctx, in, &v, &mask, &n) ||
            (n < 64 ? mask != (UINT64_C(1) << n) - 1 : mask != UINT64_MAX)) {
            *out_state = -1;
            return NULL;
        }
        memcpy(out, v, n * sizeof *v);
        *out_n = n;
        *out_state = 1;
        return NULL;
    }
    if (attr == NULL)
        return NULL;
    const int64_t *v;
    size_t n;
    if (!pl_infer_attr_ints(ctx, attr, &v, &n))
        return NULL;
    if (n > PL_KNOWN_MAX)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "attribute '%s' has %zu values, at most %d are "
                              "supported", attr, n, PL_KNOWN_MAX);
    memcpy(out, v, n * sizeof *v);
    *out_n = n;
    *out_state = 1;
    return NULL;
}

/* ---- the driver ---------------------------------------------------------- */

/* Loads the values of a small constant (an initializer that is not also a
 * graph input, which the caller could override) into the known table. */
static pl_status *pl_known_load_constant(pl_infer_ctx *ctx, pl_tid tid)
{
    if (ctx->known[tid] != NULL)
        return NULL;
    const pl_graph_tensor *t = pl_graph_get_tensor(ctx->g, tid);
    if (t->data == NULL || t->is_input || t->ndim < 0)
        return NULL;
    size_t n;
    if (!pl_dims_elements(t->dims, t->ndim, &n) || n > PL_KNOWN_MAX)
        return NULL;
    pl_dtype_set bit = pl_dtype_set_of(t->dtype);
    if (!(bit & (PL_TS_INT | PL_TS_BOOL | PL_TS_F32 | PL_TS_F64)))
        return NULL;
    size_t esize = pl_dtype_size(t->dtype);
    if (t->nbytes < n * esize)
        return NULL;
    pl_known *k = pl_malloc(sizeof *k);
    if (k == NULL)
        return pl_infer_oom(ctx);
    k->n = (int32_t)n;
    k->is_float = (bit & PL_TS_FLOAT) != 0;
    k->mask = n < 64 ? (UINT64_C(1) << n) - 1 : UINT64_MAX;
    const unsigned char *p = t->data;
    for (size_t e = 0; e < n; e++, p += esize) {
        int64_t iv = 0;
        double fv = 0;
        switch (bit) {
        case PL_TS_I64: { int64_t v; memcpy(&v, p, 8); iv = v; break; }
        case PL_TS_I32: { int32_t v; memcpy(&v, p, 4); iv = v; break; }
        case PL_TS_I8: { int8_t v; memcpy(&v, p, 1); iv = v; break; }
        case PL_TS_I16: { int16_t v; memcpy(&v, p, 2); iv = v; break; }
        case PL_TS_U16: { uint16_t v; memcpy(&v, p, 2); iv = v; break; }
        case PL_TS_U32: { uint32_t v; memcpy(&v, p, 4); iv = v; break; }
        case PL_TS_U64: {
            /* beyond INT64_MAX: not a value the known table can hold */
            uint64_t v;
            memcpy(&v, p, 8);
            iv = v <= INT64_MAX ? (int64_t)v : 0;
            if (v > INT64_MAX && e < 64)
                k->mask &= ~(UINT64_C(1) << e);
            break;
        }
        case PL_TS_U8:
        case PL_TS_BOOL: iv = *p; break;
        case PL_TS_F32: { float v; memcpy(&v, p, 4); fv = v; break; }
        case PL_TS_F64: { double v; memcpy(&v, p, 8); fv = v; break; }
        default: break;
        }
        k->iv[e] = iv;
        k->fv[e] = fv;
    }
    if (k->is_float)
        k->mask = 0;
    ctx->known[tid] = k;
    return NULL;
}

/* The type constraint name of formal input/output I in TYPES. */
static const char *pl_formal_type(const char *const *types, size_t i)
{
    size_t described = 0;
    for (size_t k = 0; k < PL_OP_MAX_FORMAL; k++)
        if (types[k] != NULL)
            described = k + 1;
    if (described == 0)
        return NULL;
    return i < described ? types[i] : types[described - 1];
}

static int pl_constraint_index(const pl_op_schema *s, const char *name)
{
    if (name == NULL)
        return -1;
    for (int k = 0; k < PL_OP_MAX_TYPES; k++)
        if (s->types[k].name != NULL && strcmp(s->types[k].name, name) == 0)
            return k;
    return -1;
}

static const char *pl_attr_kind_name(pl_attr_kind k)
{
    switch (k) {
    case PL_ATTR_INT: return "int";
    case PL_ATTR_FLOAT: return "float";
    case PL_ATTR_STRING: return "string";
    case PL_ATTR_INTS: return "ints";
    case PL_ATTR_FLOATS: return "floats";
    case PL_ATTR_STRINGS: return "strings";
    case PL_ATTR_TENSOR: return "tensor";
    case PL_ATTR_GRAPH: return "graph";
    case PL_ATTR_GRAPHS: return "graphs";
    }
    return "unknown";
}

static const char *pl_tensor_name_of(const pl_graph *g, pl_tid t)
{
    return t == PL_TID_NONE ? "" : pl_graph_get_tensor(g, t)->name;
}

/* "opset 7", or for a node converted from an older opset "opset 7,
 * converted from opset 5", into BUF. */
static const char *pl_infer_version_text(const pl_infer_ctx *ctx, char *buf, size_t size)
{
    const char *raw = ctx->node->domain ? ctx->node->domain : "";
    if (ctx->converted_from > 0 && pl_domain_norm(raw)[0] == '\0')
        snprintf(buf, size, "opset %lld, converted from opset %lld", (long long)ctx->version,
                 (long long)ctx->converted_from);
    else
        snprintf(buf, size, "opset %lld", (long long)ctx->version);
    return buf;
}

/* Arity, attributes and input dtypes against the schema; presets output
 * dtypes from the constraints the inputs bind. */
static pl_status *pl_infer_check_node(pl_infer_ctx *ctx)
{
    const pl_op_schema *s = ctx->schema;
    const pl_graph_node *n = ctx->node;
    size_t n_in = n->n_formal_inputs;
    char ver[96]; /* written only for a message: every node of every inference passes here */
    while (n_in > 0 && n->inputs[n_in - 1] == PL_TID_NONE)
        n_in--;
    if (n_in < (size_t)s->min_inputs || n_in > (size_t)s->max_inputs) {
        if (s->min_inputs == s->max_inputs)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "expects %d input%s, got %zu (%s)",
                                  (int)s->min_inputs,
                                  s->min_inputs == 1 ? "" : "s", n_in,
                                  pl_infer_version_text(ctx, ver, sizeof ver));
        if (s->max_inputs == PL_OP_VARIADIC)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "expects at least %d inputs, got %zu",
                                  (int)s->min_inputs, n_in);
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "expects %d to %d inputs, got %zu (%s)",
                              (int)s->min_inputs, (int)s->max_inputs, n_in,
                              pl_infer_version_text(ctx, ver, sizeof ver));
    }
    /* ONNX's variadic lists (Concat, Sum, Max, Min, Mean, Einsum) have no
     * optional members: an empty name among them is an absent input, not
     * one more operand (the fuzzer's Concat of "value1" and "" read it).
     * Loop and Scan (min_inputs 0) and modules' custom ops say otherwise. */
    size_t required = (size_t)s->min_inputs;
    if (s->max_inputs == PL_OP_VARIADIC && s->min_inputs >= 1 && s->domain[0] == '\0')
        required = n->n_formal_inputs;
    for (size_t i = 0; i < required; i++)
        if (n->inputs[i] == PL_TID_NONE)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "input %zu is required but absent", i);
    if (n->n_outputs < (size_t)s->min_outputs ||
        n->n_outputs > (size_t)s->max_outputs) {
        if (s->min_outputs == s->max_outputs)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "expects %d output%s, got %zu",
                                  (int)s->min_outputs,
                                  s->min_outputs == 1 ? "" : "s", n->n_outputs);
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "expects %d to %d outputs, got %zu",
                              (int)s->min_outputs, (int)s->max_outputs,
                              n->n_outputs);
    }

    for (size_t a = 0; a < n->n_attrs; a++) {
        const pl_attr *attr = &n->attrs[a];
        const pl_attr_spec *spec = pl_schema_attr(s, attr->name);
        if (spec == NULL) {
            if (s->allow_unknown_attrs)
                continue;
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "unknown attribute '%s' (%s)", attr->name,
                                  pl_infer_version_text(ctx, ver, sizeof ver));
        }
        if (spec->kind != attr->kind)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "attribute '%s' is %s, expected %s",
                                  attr->name, pl_attr_kind_name(attr->kind),
                                  pl_attr_kind_name(spec->kind));
    }
    for (size_t a = 0; a < s->n_attrs; a++)
        if (s->attrs[a].required &&
            pl_graph_node_attr(n, s->attrs[a].name) == NULL)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "missing required attribute '%s'",
                                  s->attrs[a].name);

    pl_dtype bound[PL_OP_MAX_TYPES] = {{0}};
    size_t bound_by[PL_OP_MAX_TYPES] = {0};
    for (size_t i = 0; i < n->n_formal_inputs; i++) {
        if (n->inputs[i] == PL_TID_NONE)
            continue;
        const pl_graph_tensor *t = pl_graph_get_tensor(ctx->g, n->inputs[i]);
        int c = pl_constraint_index(s, pl_formal_type(s->input_types, i));
        if (c < 0 || t->dtype.lanes == 0)
            continue;
        if (!(pl_dtype_set_of(t->dtype) & s->types[c].allowed)) {
            char allowed[160];
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "input %zu ('%s') has dtype %s; allowed (%s): %s",
                                  i, t->name, pl_dtype_name(t->dtype),
                                  s->types[c].name,
                                  pl_dtype_set_format(s->types[c].allowed,
                                                      allowed, sizeof allowed));
        }
        if (bound[c].lanes == 0) {
            bound[c] = t->dtype;
            bound_by[c] = i;
        } else if (!PL_DTYPE_EQ(bound[c], t->dtype)) {
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "input %zu ('%s') is %s but input %zu ('%s') "
                                  "is %s; both are type %s",
                                  i, t->name, pl_dtype_name(t->dtype),
                                  bound_by[c],
                                  pl_tensor_name_of(ctx->g, n->inputs[bound_by[c]]),
                                  pl_dtype_name(bound[c]), s->types[c].name);
        }
    }
    for (size_t o = 0; o < n->n_outputs; o++) {
        pl_infer_out *out = &ctx->outs[o];
        memset(out, 0, sizeof *out);
        out->ndim = -1;
        int c = pl_constraint_index(s, pl_formal_type(s->output_types, o));
        if (c < 0)
            continue;
        out->dtype = bound[c];
        /* A constraint no input binds but that allows a single dtype
         * (comparisons' bool, Shape's int64) fixes the output. */
        pl_dtype_set allowed = s->types[c].allowed;
        if (out->dtype.lanes == 0 && allowed != 0 && (allowed & (allowed - 1)) == 0)
            for (size_t k = 0; k < PL_COUNT(pl_dtype_bits); k++)
                if (pl_dtype_bits[k].bit == allowed)
                    out->dtype = pl_dtype_bits[k].dtype;
    }
    return NULL;
}

/* Merges output O as inferred with the type the graph declares and writes
 * it back. */
static pl_status *pl_infer_write_output(pl_infer_ctx *ctx, size_t o)
{
    pl_tid tid = ctx->node->outputs[o];
    if (tid == PL_TID_NONE)
        return NULL;
    const pl_graph_tensor *t = pl_graph_get_tensor(ctx->g, tid);
    pl_infer_out *inf = &ctx->outs[o];
    const pl_op_schema *s = ctx->schema;

    int c = pl_constraint_index(s, pl_formal_type(s->output_types, o));
    if (c >= 0 && inf->dtype.lanes != 0 &&
        !(pl_dtype_set_of(inf->dtype) & s->types[c].allowed)) {
        char allowed[160];
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "output %zu ('%s') would be %s; allowed (%s): %s",
                              o, t->name, pl_dtype_name(inf->dtype),
                              s->types[c].name,
                              pl_dtype_set_format(s->types[c].allowed, allowed,
                                                  sizeof allowed));
    }
    pl_dtype dtype = inf->dtype;
    if (t->dtype.lanes != 0) {
        /* A graph output's type is the model's contract; any other declared
         * type is an exporter's value_info, a hint that may be stale (a
         * float16 conversion's, for a tensor its Cast makes f32): the
         * inferred type is used, as ONNX Runtime does, and noted. */
        if (dtype.lanes != 0 && !PL_DTYPE_EQ(dtype, t->dtype) && t->is_output)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "output '%s' is declared %s but inferred %s",
                                  t->name, pl_dtype_name(t->dtype),
                                  pl_dtype_name(dtype));
        if (dtype.lanes != 0 && !PL_DTYPE_EQ(dtype, t->dtype)) {
            if (!pl_graph_note(ctx->g, "output '%s' of node '%s' is declared %s but inferred %s: "
                                       "the inferred type is used",
                               t->name, ctx->node->name, pl_dtype_name(t->dtype),
                               pl_dtype_name(dtype)))
                return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory inferring types");
        } else {
            dtype = t->dtype;
        }
    }
    int32_t ndim = inf->ndim;
    int64_t dims[PL_GRAPH_MAX_RANK];
    const char *params[PL_GRAPH_MAX_RANK];
    /* A declared shape the inferred one contradicts (an exporter's stale
     * value_info: ddddocr's output declared [1,?], computed [24,1,8210])
     * gives way to the inferred one, as in ONNX Runtime's lenient merge;
     * the model's description notes it. */
    bool lenient = ndim >= 0 && t->ndim >= 0 && ndim != t->ndim;
    for (int32_t d = 0; !lenient && ndim >= 0 && d < ndim && t->ndim >= 0; d++)
        lenient = inf->dims[d] >= 0 && t->dims[d] >= 0 && inf->dims[d] != t->dims[d];
    if (lenient) {
        char a[160], b[160];
        if (!pl_graph_note(ctx->g, "output '%s' of node '%s' is declared %s but inferred %s: "
                                   "the inferred shape is used",
                           t->name, ctx->node->name,
                           pl_dims_format(t->dims, t->ndim, a, sizeof a),
                           pl_dims_format(inf->dims, ndim, b, sizeof b)))
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory inferring types");
        for (int32_t d = 0; d < ndim; d++) {
            dims[d] = inf->dims[d];
            params[d] = dims[d] < 0 ? inf->params[d] : NULL;
        }
        return pl_graph_set_type(ctx->g, tid, dtype, ndim, dims, params);
    }
    /* A dim inference leaves unknown keeps the declared one where
     * inference knows nothing of the output (no rank), in a body, whose
     * session plans static shapes, and on a graph output of a graph whose
     * inputs' shapes are all known (the model's contract: a kernel checks
     * its value at run time). Elsewhere a declared dim is the size an
     * exporter traced (torchvision's detectors declare 150 rows after
     * NonMaxSuppression; PyThaiNLP's thai2rom decoder declares its
     * attention output [1, 11], the length of the input its export saw,
     * while the input's length is open), and the session is staged
     * instead (stage.h), planning the size the run computes, which is
     * what the caller gets (ONNX Runtime warns and returns it). */
    bool trust_declared = inf->ndim < 0 || ctx->body || (t->is_output && !ctx->open_inputs);
    if (ndim < 0)
        ndim = t->ndim;
    for (int32_t d = 0; d < ndim; d++) {
        int64_t id = inf->ndim >= 0 ? inf->dims[d] : -1;
        int64_t dd = t->ndim >= 0 && trust_declared ? t->dims[d] : -1;
        dims[d] = id >= 0 ? id : dd;
        const char *dp = t->ndim >= 0 && t->dim_params ? t->dim_params[d] : NULL;
        if (dp == NULL && inf->ndim >= 0)
            dp = inf->params[d];
        params[d] = dims[d] < 0 ? dp : NULL;
    }
    return pl_graph_set_type(ctx->g, tid, dtype, ndim, dims, params);
}

static pl_status *pl_infer_node_run(pl_infer_ctx *ctx, const pl_opset *set,
                                    pl_nid id)
{
    const pl_graph_node *node = pl_graph_get_node(ctx->g, id);
    ctx->node = node;
    const char *raw = node->domain ? node->domain : "";
    const char *domain = pl_domain_norm(raw);
    int64_t version = pl_graph_opset(ctx->g, raw);
    /* "" and "ai.onnx" name the same domain; a model may import either. */
    if (version == 0 && domain[0] == '\0')
        version = pl_graph_opset(ctx->g, raw[0] ? "" : "ai.onnx");
    if (version == 0)
        version = domain[0] == '\0' ? PL_OPSET_DEFAULT_VERSION : INT64_MAX;
    ctx->version = version;
    if (domain[0] == '\0' && version > PL_OPSET_NEWEST)
        return pl_infer_error(ctx, PL_CODE_UNSUPPORTED,
                              "the graph imports ai.onnx opset %lld; Plinth knows the ops "
                              "of opsets up to %d",
                              (long long)version, PL_OPSET_NEWEST);
    ctx->schema = pl_opset_find(set, domain, node->op, version);
    if (ctx->schema == NULL) {
        if (version == INT64_MAX)
            return pl_infer_error(ctx, PL_CODE_UNSUPPORTED,
                                  "no schema for this op");
        char ver[96];
        pl_infer_version_text(ctx, ver, sizeof ver);
        const pl_op_schema *older = pl_opset_find_any(set, domain, node->op, version);
        if (older != NULL && domain[0] == '\0')
            return pl_infer_error(
                ctx, PL_CODE_UNSUPPORTED,
                "ai.onnx changed this op in version %lld (%s); Plinth implements "
                "version %lld, from before that change",
                (long long)pl_opset_changed_after(node->op, older->since_version, version), ver,
                (long long)older->since_version);
        if (strcmp(domain, "com.microsoft.nchwc") == 0)
            return pl_infer_error(ctx, PL_CODE_UNSUPPORTED,
                                  "no schema for this op (%s): com.microsoft.nchwc is ONNX "
                                  "Runtime's private blocked layout for the CPU it optimized "
                                  "on (a model saved at ORT_ENABLE_ALL / opt_level 99); save "
                                  "it at ORT_ENABLE_EXTENDED (opt_level 2) or below",
                                  ver);
        return pl_infer_error(ctx, PL_CODE_UNSUPPORTED, "no schema for this op (%s)", ver);
    }
    if (node->n_outputs > ctx->cap_outs) {
        size_t bytes;
        if (!pl_size_mul(node->n_outputs, sizeof *ctx->outs, &bytes))
            return pl_infer_oom(ctx);
        pl_infer_out *grown = pl_realloc(ctx->outs, bytes);
        if (grown == NULL)
            return pl_infer_oom(ctx);
        ctx->outs = grown;
        ctx->cap_outs = node->n_outputs;
    }
    for (size_t i = 0; i < node->n_inputs; i++)
        if (node->inputs[i] != PL_TID_NONE)
            PL_RETURN_IF_ERROR(pl_known_load_constant(ctx, node->inputs[i]));
    PL_RETURN_IF_ERROR(pl_infer_check_node(ctx));
    if (ctx->schema->infer != NULL)
        PL_RETURN_IF_ERROR(ctx->schema->infer(ctx));
    for (size_t o = 0; o < node->n_outputs; o++)
        PL_RETURN_IF_ERROR(pl_infer_write_output(ctx, o));
    return NULL;
}

/* The known-value table grown to the graph's tensors, after a conversion
 * step added constants. */
static pl_status *pl_infer_grow_known(pl_infer_ctx *ctx)
{
    size_t n = pl_graph_tensor_count(ctx->g), bytes;
    if (n <= ctx->n_tensors)
        return NULL;
    if (!pl_size_mul(n, sizeof *ctx->known, &bytes))
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "too many tensors");
    pl_known **grown = pl_realloc(ctx->known, bytes);
    if (grown == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                "out of memory converting the graph's opset");
    memset(grown + ctx->n_tensors, 0, (n - ctx->n_tensors) * sizeof *grown);
    ctx->known = grown;
    ctx->n_tensors = n;
    return NULL;
}

/* Whether node K reads a tensor whose type is not known yet. */
static bool pl_infer_waits(const pl_graph *g, pl_nid k)
{
    const pl_graph_node *a = pl_graph_get_node(g, k);
    for (size_t i = 0; a != NULL && i < a->n_formal_inputs; i++)
        if (a->inputs[i] != PL_TID_NONE &&
            pl_graph_get_tensor(g, a->inputs[i])->dtype.lanes == 0)
            return true;
    return false;
}

/* Lowers node ID of an opset-18-or-later graph (opset_lower.c) and infers
 * the nodes the rewrite added, which feed it. */
static pl_status *pl_infer_lower_node(pl_infer_ctx *ctx, const pl_opset *set, pl_nid id,
                                      int64_t version, bool *changed)
{
    size_t before = pl_graph_node_count(ctx->g);
    const pl_graph_node *n = pl_graph_get_node(ctx->g, id);
    ctx->node = n; /* for errors; pl_infer_node_run sets it again */
    for (size_t i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] != PL_TID_NONE)
            PL_RETURN_IF_ERROR(pl_known_load_constant(ctx, n->inputs[i]));
    /* A contrib op whose schema a loaded module registered (custom_op.c)
     * stays as written: that module runs it itself (the cpu module's int8
     * DynamicQuantizeLSTM). Built-in schemas live in ONNX's domain and
     * ai.plinth only, so a schema found here is a module's. */
    const char *dom = n->domain != NULL ? n->domain : "";
    if (dom[0] != '\0' && strcmp(dom, "ai.onnx") != 0 && strcmp(dom, "ai.plinth") != 0) {
        int64_t dv = pl_graph_opset(ctx->g, dom);
        if (pl_opset_find(set, dom, n->op, dv > 0 ? dv : INT64_MAX) != NULL)
            return NULL;
    }
    bool seq = false, walk = false;
    PL_RETURN_IF_ERROR(pl_opset_lower_sequence(ctx, id, version, &seq, &walk));
    if (seq)
        *changed = true;
    else
        PL_RETURN_IF_ERROR(pl_opset_lower_node(ctx->g, id, version, changed));
    PL_RETURN_IF_ERROR(pl_infer_grow_known(ctx));
    /* An unrolled body's nodes are walked like the graph's own: each is
     * rewritten (and what that adds inferred) before it is inferred. */
    size_t after = pl_graph_node_count(ctx->g);
    /* A node the rewrite added that reads what it added later, or the
     * lowered node's own output (the Casts back to f16 of outputs that
     * opset_lower.c's lw_widen16 computes in f32), is inferred after the
     * others and the lowered node, in the order added. */
    size_t first_deferred = SIZE_MAX;
    bool *deferred = NULL;
    pl_status *st = NULL;
    for (size_t k = before; st == NULL && k < after; k++) {
        if (walk)
            st = pl_infer_lower_node(ctx, set, (pl_nid)k, version, changed);
        if (st == NULL && pl_infer_waits(ctx->g, (pl_nid)k)) {
            if (deferred == NULL && (deferred = pl_calloc(after - before, 1)) == NULL)
                st = pl_infer_oom(ctx);
            if (st == NULL) {
                deferred[k - before] = true;
                first_deferred = first_deferred < k ? first_deferred : k;
            }
            continue;
        }
        if (st == NULL)
            st = pl_infer_node_run(ctx, set, (pl_nid)k);
    }
    if (st == NULL && deferred != NULL) {
        st = pl_infer_node_run(ctx, set, id);
        for (size_t k = first_deferred; st == NULL && k < after; k++)
            if (deferred[k - before])
                st = pl_infer_node_run(ctx, set, (pl_nid)k);
    }
    pl_free(deferred);
    return st;
}

/* A while loop with scan outputs (the Loop ID, just inferred) split in
 * two (pl_opset_loop_count_split): the graph is validated again, to link
 * the new Loop's body, which is inferred, then ID again. */
static pl_status *pl_infer_loop_count(pl_infer_ctx *ctx, const pl_opset *set, pl_nid id,
                                      bool *changed)
{
    pl_nid counter;
    PL_RETURN_IF_ERROR(pl_opset_loop_count_split(ctx, id, &counter));
    if (counter == PL_NID_NONE)
        return NULL;
    *changed = true;
    PL_RETURN_IF_ERROR(pl_graph_validate(ctx->g));
    PL_RETURN_IF_ERROR(pl_infer_grow_known(ctx));
    PL_RETURN_IF_ERROR(pl_infer_node_run(ctx, set, counter));
    return pl_infer_node_run(ctx, set, id);
}

/* Converts node ID to opset PL_OPSET_UPGRADE_TARGET and infers the nodes
 * the conversion added, which feed it. */
static pl_status *pl_infer_upgrade_node(pl_infer_ctx *ctx, const pl_opset *set, pl_nid id)
{
    size_t before = pl_graph_node_count(ctx->g);
    PL_RETURN_IF_ERROR(pl_opset_upgrade_node(ctx->g, id, ctx->converted_from));
    PL_RETURN_IF_ERROR(pl_infer_grow_known(ctx));
    for (size_t k = before; k < pl_graph_node_count(ctx->g); k++)
        PL_RETURN_IF_ERROR(pl_infer_node_run(ctx, set, (pl_nid)k));
    return NULL;
}

/* The bytes of tensor T's known values in its dtype into BUF (of
 * PL_KNOWN_MAX * 8 bytes), or 0 when T is not fully known: every element
 * of a fully known shape, ints with every mask bit set, or floats. */
static size_t pl_known_bytes(const pl_infer_ctx *ctx, pl_tid tid, unsigned char *buf)
{
    const pl_known *k = ctx->known[tid];
    const pl_graph_tensor *t = pl_graph_get_tensor(ctx->g, tid);
    size_t n;
    if (k == NULL || t->ndim < 0 || !pl_dims_elements(t->dims, t->ndim, &n) ||
        n != (size_t)k->n || n == 0 ||
        (!k->is_float && k->mask != (n < 64 ? (UINT64_C(1) << n) - 1 : UINT64_MAX)))
        return 0;
    pl_dtype_set bit = pl_dtype_set_of(t->dtype);
    size_t esize = pl_dtype_size(t->dtype);
    for (size_t e = 0; e < n; e++) {
        unsigned char *p = buf + e * esize;
        int64_t iv = k->iv[e];
        switch (bit) {
        case PL_TS_I64: memcpy(p, &iv, 8); break;
        case PL_TS_I32: { int32_t v = (int32_t)iv; memcpy(p, &v, 4); break; }
        case PL_TS_I8: { int8_t v = (int8_t)iv; memcpy(p, &v, 1); break; }
        case PL_TS_U8:
        case PL_TS_BOOL: *p = (unsigned char)iv; break;
        case PL_TS_F32: { float v = (float)k->fv[e]; memcpy(p, &v, 4); break; }
        case PL_TS_F64: memcpy(p, &k->fv[e], 8); break;
        default: return 0;
        }
        if (k->is_float != ((bit & PL_TS_FLOAT) != 0))
            return 0;
    }
    return n * esize;
}

/* Constant folding of what inference computed: a node input whose values
 * are all known (shapes, and the small tables exporters compute pads,
 * scales and axes from) is read from a new constant instead, so that
 * kernels which need such inputs when they are made get them, and the
 * nodes that computed it, now read by nobody, are pruned by the session.
 * Returns whether the graph changed (it must be linked again). */
static pl_status *pl_infer_fold_known(pl_infer_ctx *ctx, bool *out_changed)
{
    *out_changed = false;
    pl_graph *g = ctx->g;
    size_t n_nodes = pl_graph_node_count(g);
    unsigned char buf[PL_KNOWN_MAX * 8];
    pl_tid *folded = pl_calloc(ctx->n_tensors ? ctx->n_tensors : 1, sizeof *folded);
    if (folded == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory folding constants");
    for (size_t t = 0; t < ctx->n_tensors; t++)
        folded[t] = PL_TID_NONE;
    pl_status *st = NULL;
    for (pl_nid id = 0; st == NULL && id < n_nodes; id++) {
        const pl_graph_node *n = pl_graph_get_node(g, id);
        pl_tid ins[64];
        if (n->n_inputs > 64)
            continue;
        bool changed = false;
        for (size_t i = 0; st == NULL && i < n->n_inputs; i++) {
            pl_tid t = ins[i] = n->inputs[i];
            /* Captures name what a body reads: never replaced. */
            if (t == PL_TID_NONE || t >= ctx->n_tensors || i >= n->n_formal_inputs)
                continue;
            const pl_graph_tensor *gt = pl_graph_get_tensor(g, t);
            if (gt->data != NULL || gt->is_input || gt->producer == PL_NID_NONE)
                continue;
            if (folded[t] == PL_TID_NONE) {
                size_t bytes = pl_known_bytes(ctx, t, buf);
                if (bytes == 0)
                    continue;
                char name[256];
                snprintf(name, sizeof name, "%.200s_folded", gt->name);
                for (unsigned k = 1; pl_graph_find_tensor(g, name) != PL_TID_NONE; k++)
                    snprintf(name, sizeof name, "%.200s_folded_%u", gt->name, k);
                pl_tid c;
                pl_dtype dtype = gt->dtype;
                int32_t ndim = gt->ndim;
                int64_t dims[PL_GRAPH_MAX_RANK];
                if (ndim > 0) /* a scalar has no dims array */
                    memcpy(dims, gt->dims, (size_t)ndim * sizeof dims[0]);
                st = pl_graph_tensor_get_or_add(g, name, &c);
                if (st == NULL)
                    st = pl_graph_set_type(g, c, dtype, ndim, dims, NULL);
                if (st == NULL)
                    st = pl_graph_set_constant(g, c, buf, bytes);
                if (st != NULL)
                    break;
                folded[t] = c;
            }
            ins[i] = folded[t];
            changed = true;
        }
        if (st == NULL && changed) {
            st = pl_graph_node_set_inputs(g, id, ins, n->n_inputs);
            *out_changed = true;
        }
    }
    pl_free(folded);
    return st;
}

const pl_opset *pl_infer_opset(const pl_infer_ctx *ctx)
{
    return ctx->set;
}

pl_graph *pl_infer_graph_mut(pl_infer_ctx *ctx)
{
    return ctx->g;
}

static pl_status *pl_opset_infer_in(const pl_opset *set, pl_graph *g, bool body);

pl_status *pl_opset_infer(const pl_opset *set, pl_graph *g)
{
    return pl_opset_infer_in(set, g, false);
}

pl_status *pl_opset_infer_body(const pl_opset *set, pl_graph *body)
{
    return pl_opset_infer_in(set, body, true);
}

/* BODY: a graph held by a node's attribute, whose inputs and outer-scope
 * references the caller typed. Neither converted nor folded here: both
 * rewire nodes, and a body is linked only with the graph that holds it
 * (which the caller validates again when it changes). */
static pl_status *pl_opset_infer_in(const pl_opset *set, pl_graph *g, bool body)
{
    if (set == NULL || g == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "shape inference: no opset or graph given");
    const pl_nid *topo = pl_graph_topo_order(g);
    size_t n_nodes = pl_graph_node_count(g);
    if (topo == NULL)
        return pl_status_create(PL_CODE_FAILED_PRECONDITION,
                                "shape inference: the graph is not validated");
    pl_infer_ctx ctx = {.g = g, .set = set, .n_tensors = pl_graph_tensor_count(g), .body = body};
    for (size_t i = 0; !body && i < pl_graph_input_count(g); i++) {
        const pl_graph_tensor *in = pl_graph_get_tensor(g, pl_graph_input(g, i));
        for (int32_t d = 0; d < in->ndim; d++)
            ctx.open_inputs |= in->dims[d] < 0;
        ctx.open_inputs |= in->ndim < 0;
    }
    /* A graph of ai.onnx opset 1 to 6 is converted node by node as the walk
     * reaches it, when the types of the node's inputs are known. */
    int64_t imported = pl_graph_opset(g, "");
    if (body && imported >= 1 && imported < PL_OPSET_UPGRADE_TARGET)
        return pl_status_create(PL_CODE_UNSUPPORTED,
                                "a body of a model of ai.onnx opset %lld: control flow "
                                "needs opset %d or later",
                                (long long)imported, PL_OPSET_UPGRADE_TARGET);
    if (imported >= 1 && imported < PL_OPSET_UPGRADE_TARGET) {
        ctx.converted_from = imported;
        PL_RETURN_IF_ERROR(pl_graph_set_opset(g, "", PL_OPSET_UPGRADE_TARGET));
    }
    /* The order is copied: writing types must not depend on the graph
     * keeping its topological order valid. */
    pl_nid *order = pl_malloc((n_nodes ? n_nodes : 1) * sizeof *order);
    ctx.known = pl_calloc(ctx.n_tensors ? ctx.n_tensors : 1, sizeof *ctx.known);
    pl_status *st = NULL;
    bool lowered = false;
    if (order == NULL || ctx.known == NULL) {
        st = pl_status_create(PL_CODE_OUT_OF_MEMORY,
                              "out of memory starting shape inference");
    } else {
        memcpy(order, topo, n_nodes * sizeof *order);
        for (size_t i = 0; st == NULL && i < n_nodes; i++) {
            if (ctx.converted_from > 0)
                st = pl_infer_upgrade_node(&ctx, set, order[i]);
            if (st == NULL)
                st = pl_infer_lower_node(&ctx, set, order[i],
                                         imported > 0 ? imported : PL_OPSET_DEFAULT_VERSION,
                                         &lowered);
            if (st == NULL)
                st = pl_infer_node_run(&ctx, set, order[i]);
            if (st == NULL && !body && strcmp(ctx.node->op, "Loop") == 0)
                st = pl_infer_loop_count(&ctx, set, order[i], &lowered);
        }
        /* the sequence ops are rewritten: their marks have served */
        pl_graph_clear_seqs(g);
        bool folded = false;
        if (st == NULL && !body)
            st = pl_infer_fold_known(&ctx, &folded);
        /* The conversion or the folding rewired nodes: link the graph
         * again. */
        if (st == NULL && (ctx.converted_from > 0 || folded || lowered))
            st = pl_graph_validate(g);
    }
    if (ctx.known != NULL)
        for (size_t t = 0; t < ctx.n_tensors; t++)
            pl_free(ctx.known[t]);
    pl_free(ctx.known);
    pl_free(ctx.outs);
    pl_free(order);
    return st;
}
