/* strings.c — the cpu module's ops on text. Inside a graph a string tensor
 * is an int64 tensor of string ids; a kernel reads the text of an id and
 * gets the id of a string it makes through the run's table
 * (pl_run_context.strings, ABI 1.14), and refuses a run without one.
 *
 *   StringNormalizer 10    case change (LOWER, UPPER: each code point
 *                          mapped as towlower/towupper map it in the locale
 *                          the attribute names, where the system has it, else
 *                          in C.UTF-8, as ONNX Runtime's wide ctype does in
 *                          its default locale),
 *                          without stopwords (the core lowers their form to
 *                          StringNormalizerPadded and a Slice)
 *   ai.plinth StringNormalizerPadded   the kept strings (not a stopword,
 *                          compared exactly, or lowercased with
 *                          is_case_sensitive = 0) normalised first, "" after,
 *                          and how many to keep (at least one: ONNX's ""
 *                          when nothing is kept)
 *   StringConcat 20        broadcast concatenation
 *   RegexFullMatch 20      RE2's syntax (regex.h), the whole string
 *   ai.plinth StringSplitCounts, StringSplitPadded   StringSplit 20: with a
 *                          delimiter Python's str.split(sep, maxsplit), without
 *                          one str.split(None, maxsplit) (runs of white space,
 *                          ends trimmed), as ONNX's reference; parts padded
 *                          with ""
 *   ai.plinth TokenizerWidth, TokenizerPadded   com.microsoft Tokenizer, as
 *                          ONNX Runtime's: characters (separators [""] or
 *                          tokenexp "."), separators (each a regex, applied
 *                          in turn, leftmost-longest, keeping the pieces of
 *                          at least mincharnum characters) or tokenexp (its
 *                          leftmost-longest matches of at least mincharnum
 *                          characters); each row [\x02] tokens [\x03] then
 *                          pad_value, the width the most tokens with the
 *                          marks, 0 when no string has one
 *   ai.plinth StringToNumber   Cast from strings as ONNX Runtime: floats by
 *                          strtod (C locale; hex, inf, nan; trailing text
 *                          ignored), signed integers by strtoll, unsigned and
 *                          bool by strtoull, then C's conversion; a string
 *                          with no number, or beyond f64's or int64's range,
 *                          fails (an f64 underflow reads as its subnormal)
 *   ai.plinth MurmurHash3, StringMurmurHash3   com.microsoft MurmurHash3 (scikit-
 *                          learn's FeatureHasher): MurmurHash3_x86_32 of each
 *                          int32 or uint32 key's 4 bytes, or of each string's
 *                          bytes, with the seed, as uint32 (positive = 1) or
 *                          int32, as ONNX Runtime computes it
 *   ai.plinth NumberToString   Cast to strings: floats the shortest
 *                          decimal that reads back as the value, as NumPy
 *                          writes it and ONNX's test data expects (NaN, INF,
 *                          -INF; ONNX Runtime writes "%.8g"), integers in
 *                          decimal, bool 1 or 0
 *
 * Invalid UTF-8 fails the ops that read characters (case change,
 * Tokenizer), as in ONNX Runtime. */
#define _GNU_SOURCE /* newlocale, towlower_l, strtod_l, uselocale */
#include <errno.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wctype.h>

#include "index_kernel.h"
#include "regex.h"

static pl_status *st_build_normalizer(pl_module_ctx *ctx, const pl_node_desc *node,
                                      pl_kernel **out_kernel);
static pl_status *st_build_concat(pl_module_ctx *ctx, const pl_node_desc *node,
                                  pl_kernel **out_kernel);
static pl_status *st_build_regex(pl_module_ctx *ctx, const pl_node_desc *node,
                                 pl_kernel **out_kernel);
static pl_status *st_build_split(pl_module_ctx *ctx, const pl_node_desc *node,
                                 pl_kernel **out_kernel);
static pl_status *st_build_tokenizer(pl_module_ctx *ctx, const pl_node_desc *node,
                                     pl_kernel **out_kernel);
static pl_status *st_build_to_number(pl_module_ctx *ctx, const pl_node_desc *node,
                                     pl_kernel **out_kernel);
static pl_status *st_build_to_string(pl_module_ctx *ctx, const pl_node_desc *node,
                                     pl_kernel **out_kernel);
static pl_status *st_build_murmur(pl_module_ctx *ctx, const pl_node_desc *node,
                                  pl_kernel **out_kernel);

#define ST_ANY CPU_OP_ANY_DTYPE
#define ST_PL (CPU_OP_ANY_DTYPE | CPU_OP_PLINTH_DOMAIN)

const cpu_op_entry cpu_ops_strings[] = {
    {"StringNormalizer", st_build_normalizer, 1, 1, 0, ST_ANY},
    {"StringConcat", st_build_concat, 2, 2, 0, ST_ANY},
    {"RegexFullMatch", st_build_regex, 1, 1, 0, ST_ANY},
    {"StringNormalizerPadded", st_build_normalizer, 1, 1, 0, ST_PL | CPU_OP_MULTI_OUTPUT},
    {"StringSplitCounts", st_build_split, 1, 1, 0, ST_PL},
    {"StringSplitPadded", st_build_split, 2, 2, 0, ST_PL},
    {"TokenizerWidth", st_build_tokenizer, 1, 1, 0, ST_PL},
    {"TokenizerPadded", st_build_tokenizer, 2, 2, 0, ST_PL},
    {"StringToNumber", st_build_to_number, 1, 1, 0, ST_PL},
    {"NumberToString", st_build_to_string, 1, 1, 0, ST_PL},
    {"MurmurHash3", st_build_murmur, 1, 1, 0, ST_PL},
    {"StringMurmurHash3", st_build_murmur, 1, 1, 0, ST_PL},
    {NULL, NULL, 0, 0, 0, 0},
};

/* ---- what the kernels share ---------------------------------------------------- */

/* The run's strings, or a refusal naming OP. */
static pl_status *st_strings(const pl_run_args *args, const char *op,
                             const pl_run_strings **out)
{
    const pl_run_context *rc = args->run;
    *out = PL_ABI_HAS_FIELD(pl_run_context, rc, strings) ? rc->strings : NULL;
    if (*out == NULL)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "this run has no string table (a core before ABI 1.14, or the op "
                         "run outside a session)");
    return NULL;
}

/* The text of ID (its length in *OUT_LEN), or an error naming OP. */
static pl_status *st_text(const pl_run_strings *rs, const char *op, int64_t id,
                          const char **out, size_t *out_len)
{
    *out = rs->get(rs->self, id, out_len);
    if (*out == NULL)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "%" PRId64 " is no string's id", id);
    return NULL;
}

static pl_status *st_intern(const pl_run_strings *rs, const char *op, const char *s,
                            size_t len, int64_t *out)
{
    *out = rs->intern(rs->self, s, len);
    if (*out < 0)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory for a string");
    return NULL;
}

/* A growing byte buffer (host memory). */
typedef struct st_buf {
    char *p;
    size_t n, cap;
    bool oom;
} st_buf;

static void st_put(st_buf *b, const char *s, size_t len)
{
    if (b->oom)
        return;
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        while (cap < b->n + len + 1)
            cap *= 2;
        char *g = realloc(b->p, cap);
        if (g == NULL) {
            b->oom = true;
            return;
        }
        b->p = g;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, len);
    b->n += len;
    b->p[b->n] = '\0';
}

static void st_put_cp(st_buf *b, unsigned cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | cp >> 6);
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | cp >> 12);
        u[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | cp >> 18);
        u[1] = (char)(0x80 | (cp >> 12 & 0x3F));
        u[2] = (char)(0x80 | (cp >> 6 & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    st_put(b, u, n);
}

/* A kernel's locale (newlocale of NAME for CATEGORY_MASK, freed with the
 * kernel: a module-wide one made once would outlive the module's
 * unloading), (locale_t)0 where the system has none. */
static void st_locale_release(locale_t loc)
{
    if (loc != (locale_t)0)
        freelocale(loc);
}

typedef enum st_case { ST_CASE_NONE, ST_CASE_LOWER, ST_CASE_UPPER } st_case;

/* S (LEN bytes) with each code point's case changed into B through LOC
 * (beyond ASCII only, unless NAMED: a locale the model named, whose ASCII
 * may map otherwise, as Turkish's I to dotless i; ASCII only when LOC is
 * (locale_t)0); false for invalid UTF-8. */
static bool st_change_case(st_buf *b, const char *s, size_t len, st_case c, locale_t loc,
                           bool named)
{
    b->n = 0;
    st_put(b, "", 0);
    for (size_t at = 0; at < len;) {
        size_t was = at;
        unsigned cp = cpu_utf8_next(s, len, &at);
        if (cp == 0xFFFD && at - was == 1)
            return false;
        if (cp < 0x80 && !(named && loc != (locale_t)0))
            cp = c == ST_CASE_LOWER ? (unsigned)((cp >= 'A' && cp <= 'Z') ? cp + 32 : cp)
                                    : (unsigned)((cp >= 'a' && cp <= 'z') ? cp - 32 : cp);
        else if (loc != (locale_t)0)
            cp = c == ST_CASE_LOWER ? (unsigned)towlower_l((wint_t)cp, loc)
                                    : (unsigned)towupper_l((wint_t)cp, loc);
        st_put_cp(b, cp);
    }
    return true;
}

/* The element count of tensor T. */
static size_t st_count(const pl_tensor *t)
{
    return cpu_elements(t->shape, t->ndim);
}

/* ---- StringNormalizer ------------------------------------------------------------- */

typedef struct st_norm {
    shp_kernel k;
    locale_t ctype; /* the locale attribute's, else C.UTF-8's: case mapping */
    bool named;     /* ctype is the attribute's */
    st_case action;
    bool sensitive, padded;
    size_t n_stop;
    char **stop; /* stopwords (lowercased when not case-sensitive), in the block */
} st_norm;

/* Whether S is a stopword of K (LOW: S lowercased, for the insensitive
 * compare). */
static bool st_is_stop(const st_norm *k, const char *s, const char *low)
{
    const char *key = k->sensitive ? s : low;
    for (size_t i = 0; i < k->n_stop; i++)
        if (strcmp(key, k->stop[i]) == 0)
            return true;
    return false;
}

static pl_status *st_norm_write(pl_module_ctx *ctx, const shp_kernel *sk, const pl_run_args *args,
                                size_t o, void *dst, pl_output_request req)
{
    (void)ctx, (void)req;
    const st_norm *k = (const st_norm *)sk;
    const char *op = sk->base.op;
    const pl_run_strings *rs;
    SHP_TRY(st_strings(args, op, &rs));
    const int64_t *x = (const int64_t *)shp_in(args, 0);
    size_t n = st_count(&args->inputs[0]);
    int64_t *y = dst;
    st_buf low = {0}, out = {0};
    pl_status *st = NULL;
    size_t kept = 0;
    if (k->padded && o == 0)
        memset(y, 0, n * sizeof *y); /* "" after the kept ones */
    for (size_t i = 0; st == NULL && i < n; i++) {
        const char *s;
        size_t len;
        if ((st = st_text(rs, op, x[i], &s, &len)) != NULL)
            break;
        if (k->n_stop > 0) {
            if (!k->sensitive && !st_change_case(&low, s, len, ST_CASE_LOWER, k->ctype, k->named)) {
                st = cpu_error(PL_CODE_INVALID_ARGUMENT, op, "element %zu is not valid UTF-8", i);
                break;
            }
            if (st_is_stop(k, s, low.p))
                continue;
        }
        if (o == 1) {
            kept++;
            continue;
        }
        int64_t id = x[i];
        if (k->action != ST_CASE_NONE) {
            if (!st_change_case(&out, s, len, k->action, k->ctype, k->named)) {
                st = cpu_error(PL_CODE_INVALID_ARGUMENT, op, "element %zu is not valid UTF-8", i);
                break;
            }
            if (out.oom)
                break;
            st = st_intern(rs, op, out.p, out.n, &id);
        }
        y[k->padded ? kept : i] = id;
        kept++;
    }
    if (st == NULL && (low.oom || out.oom))
        st = cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory");
    if (st == NULL && o == 1)
        *y = kept > 0 ? (int64_t)kept : 1;
    free(low.p);
    free(out.p);
    return st;
}

static void st_norm_release(pl_module_ctx *ctx, pl_kernel *kernel)
{
    (void)ctx;
    st_locale_release(((st_norm *)kernel)->ctype);
}

static pl_status *st_build_normalizer(pl_module_ctx *ctx, const pl_node_desc *node,
                                      pl_kernel **out_kernel)
{
    const char *op = node->op;
    bool padded = strcmp(op, "StringNormalizerPadded") == 0;
    if (!PL_DTYPE_EQ(node->inputs[0].dtype, PL_DTYPE_I64) ||
        !PL_DTYPE_EQ(node->outputs[0].dtype, PL_DTYPE_I64) ||
        (padded && (node->n_outputs != 2 || !PL_DTYPE_EQ(node->outputs[1].dtype, PL_DTYPE_I64))))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "takes and gives string ids (int64)");
    char action[16];
    SHP_TRY(shp_attr_string(node, "case_change_action", "NONE", action, sizeof action));
    int64_t sensitive = 0;
    SHP_TRY(cpu_attr_int(node, "is_case_sensitive", 0, &sensitive));
    const char *const *stop = NULL;
    size_t n_stop = 0;
    cpu_host->graph->attr_strings(node->graph, node->node_index, "stopwords", &stop, &n_stop);
    if (n_stop > 0 && !padded)
        return cpu_error(PL_CODE_UNSUPPORTED, op,
                         "stopwords change the shape: the core writes this node as "
                         "ai.plinth StringNormalizerPadded");
    size_t bytes = sizeof(st_norm) + n_stop * sizeof(char *);
    st_buf low = {0};
    /* the locale the model names when this system has it (ONNX Runtime
     * fails without it), else C.UTF-8's code point mapping */
    char name[64];
    SHP_TRY(shp_attr_string(node, "locale", "", name, sizeof name));
    locale_t ctype = name[0] ? newlocale(LC_CTYPE_MASK, name, (locale_t)0) : (locale_t)0;
    bool named = ctype != (locale_t)0;
    if (!named)
        ctype = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    for (size_t i = 0; i < n_stop; i++) {
        if (!st_change_case(&low, stop[i], strlen(stop[i]), ST_CASE_LOWER, ctype, named)) {
            free(low.p);
            st_locale_release(ctype);
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "stopword %zu is not valid UTF-8", i);
        }
        bytes += (sensitive ? strlen(stop[i]) : low.n) + 1;
    }
    st_norm *k;
    pl_status *st = shp_kernel_alloc(ctx, node, bytes, st_norm_write, (shp_kernel **)&k);
    if (st != NULL) {
        free(low.p);
        st_locale_release(ctype);
        return st;
    }
    k->ctype = ctype;
    k->named = named;
    k->k.base.release = st_norm_release;
    k->action = strcmp(action, "LOWER") == 0   ? ST_CASE_LOWER
                : strcmp(action, "UPPER") == 0 ? ST_CASE_UPPER
                                               : ST_CASE_NONE;
    k->sensitive = sensitive != 0;
    k->padded = padded;
    k->n_stop = n_stop;
    k->stop = (char **)(k + 1);
    char *p = (char *)(k->stop + n_stop);
    for (size_t i = 0; i < n_stop; i++) {
        st_change_case(&low, stop[i], strlen(stop[i]), ST_CASE_LOWER, ctype, named);
        const char *w = sensitive ? stop[i] : low.p;
        size_t len = strlen(w) + 1;
        memcpy(p, w, len);
        k->stop[i] = p;
        p += len;
    }
    free(low.p);
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- StringConcat --------------------------------------------------------------------- */

typedef struct st_concat {
    shp_kernel k;
    int r;
    int64_t dims[CPU_MAX_RANK];
    int64_t sa[CPU_MAX_RANK], sb[CPU_MAX_RANK]; /* input strides over the output's dims */
} st_concat;

static pl_status *st_concat_write(pl_module_ctx *ctx, const shp_kernel *sk,
                                  const pl_run_args *args, size_t o, void *dst,
                                  pl_output_request req)
{
    (void)ctx, (void)o, (void)req;
    const st_concat *k = (const st_concat *)sk;
    const char *op = sk->base.op;
    const pl_run_strings *rs;
    SHP_TRY(st_strings(args, op, &rs));
    const int64_t *a = (const int64_t *)shp_in(args, 0), *b = (const int64_t *)shp_in(args, 1);
    int64_t *y = dst;
    size_t n = sk->outs[0].elements;
    st_buf buf = {0};
    pl_status *st = NULL;
    for (size_t i = 0; st == NULL && i < n; i++) {
        const char *s, *t;
        size_t ls, lt;
        int64_t ia = ix_offset(i, k->r, k->dims, k->sa), ib = ix_offset(i, k->r, k->dims, k->sb);
        if ((st = st_text(rs, op, a[ia], &s, &ls)) != NULL ||
            (st = st_text(rs, op, b[ib], &t, &lt)) != NULL)
            break;
        buf.n = 0;
        st_put(&buf, s, ls);
        st_put(&buf, t, lt);
        if (buf.oom)
            st = cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory");
        else
            st = st_intern(rs, op, buf.p, buf.n, &y[i]);
    }
    free(buf.p);
    return st;
}

static pl_status *st_build_concat(pl_module_ctx *ctx, const pl_node_desc *node,
                                  pl_kernel **out_kernel)
{
    const char *op = node->op;
    const pl_tensor *y = &node->outputs[0];
    if (!PL_DTYPE_EQ(node->inputs[0].dtype, PL_DTYPE_I64) ||
        !PL_DTYPE_EQ(node->inputs[1].dtype, PL_DTYPE_I64) || !PL_DTYPE_EQ(y->dtype, PL_DTYPE_I64))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "takes and gives string ids (int64)");
    if (y->ndim > CPU_MAX_RANK || node->inputs[0].ndim > y->ndim ||
        node->inputs[1].ndim > y->ndim)
        return cpu_error(PL_CODE_UNSUPPORTED, op, "ranks do not fit");
    st_concat *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, st_concat_write, (shp_kernel **)&k));
    k->r = y->ndim;
    memcpy(k->dims, y->shape, (size_t)y->ndim * sizeof *k->dims);
    if (!cpu_broadcast_strides(node->inputs[0].shape, node->inputs[0].ndim, y->shape, y->ndim,
                               k->sa) ||
        !cpu_broadcast_strides(node->inputs[1].shape, node->inputs[1].ndim, y->shape, y->ndim,
                               k->sb)) {
        cpu_kernel_release(ctx, &k->k.base);
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "the inputs do not broadcast to Y");
    }
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- RegexFullMatch ---------------------------------------------------------------- */

typedef struct st_regex {
    shp_kernel k;
    cpu_regex *re;
} st_regex;

static pl_status *st_regex_write(pl_module_ctx *ctx, const shp_kernel *sk,
                                 const pl_run_args *args, size_t o, void *dst,
                                 pl_output_request req)
{
    (void)ctx, (void)o, (void)req;
    const st_regex *k = (const st_regex *)sk;
    const char *op = sk->base.op;
    const pl_run_strings *rs;
    SHP_TRY(st_strings(args, op, &rs));
    const int64_t *x = (const int64_t *)shp_in(args, 0);
    bool *y = dst;
    size_t n = sk->outs[0].elements;
    cpu_regex_scratch scratch = {0};
    for (size_t i = 0; i < n; i++) {
        const char *s;
        size_t len;
        pl_status *st = st_text(rs, op, x[i], &s, &len);
        if (st != NULL) {
            cpu_regex_scratch_free(&scratch);
            return st;
        }
        int m = cpu_regex_full_match(k->re, s, len, &scratch);
        if (m < 0) {
            cpu_regex_scratch_free(&scratch);
            return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory");
        }
        y[i] = m == 1;
    }
    cpu_regex_scratch_free(&scratch);
    return NULL;
}

static void st_regex_release(pl_module_ctx *ctx, pl_kernel *kernel)
{
    (void)ctx;
    cpu_regex_free(((st_regex *)kernel)->re);
}

/* Compiles attribute NAME of NODE (a string) into *OUT. */
static pl_status *st_compile(const pl_node_desc *node, const char *what, const char *pattern,
                             cpu_regex **out)
{
    char err[256];
    *out = cpu_regex_compile(pattern, strlen(pattern), err, sizeof err);
    if (*out == NULL)
        return cpu_error(strcmp(err, "out of memory") == 0 ? PL_CODE_OUT_OF_MEMORY
                                                           : PL_CODE_INVALID_ARGUMENT,
                         node->op, "%s '%s': %s", what, pattern, err);
    return NULL;
}

static pl_status *st_build_regex(pl_module_ctx *ctx, const pl_node_desc *node,
                                 pl_kernel **out_kernel)
{
    const char *op = node->op;
    if (!PL_DTYPE_EQ(node->inputs[0].dtype, PL_DTYPE_I64) ||
        !PL_DTYPE_EQ(node->outputs[0].dtype, PL_DTYPE_BOOL))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "takes string ids (int64) and gives bool");
    const char *pattern;
    size_t len;
    if (!cpu_host->graph->attr_string(node->graph, node->node_index, "pattern", &pattern, &len))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "the pattern attribute is missing");
    char *copy = malloc(len + 1);
    if (copy == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory");
    memcpy(copy, pattern, len);
    copy[len] = '\0';
    cpu_regex *re;
    pl_status *st = st_compile(node, "pattern", copy, &re);
    free(copy);
    SHP_TRY(st);
    st_regex *k;
    st = shp_kernel_alloc(ctx, node, sizeof *k, st_regex_write, (shp_kernel **)&k);
    if (st != NULL) {
        cpu_regex_free(re);
        return st;
    }
    k->re = re;
    k->k.base.release = st_regex_release;
    *out_kernel = &k->k.base;
    return NULL;
}

/* For the ops on string ids whose padded form's last dim is a width
 * (PADDED): ids in and out, and the width (0 for the other form). */
static pl_status *st_padded_width(const pl_node_desc *node, bool padded, size_t *out_width)
{
    const pl_tensor *x = &node->inputs[0], *y = &node->outputs[0];
    *out_width = 0;
    if (!PL_DTYPE_EQ(x->dtype, PL_DTYPE_I64) || !PL_DTYPE_EQ(y->dtype, PL_DTYPE_I64))
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "takes and gives string ids (int64)");
    if (padded) {
        if (y->ndim != x->ndim + 1 || y->shape[y->ndim - 1] < 0)
            return cpu_error(PL_CODE_UNSUPPORTED, node->op, "the width must be known");
        *out_width = (size_t)y->shape[y->ndim - 1];
    }
    return NULL;
}

/* ---- StringSplit ----------------------------------------------------------------------- */

typedef struct st_split {
    shp_kernel k;
    bool padded;
    int64_t maxsplit; /* -1: no limit */
    size_t width;     /* StringSplitPadded: parts a row */
    size_t dlen;      /* 0: split on white space */
    char delim[];
} st_split;

/* Python's str.isspace for code point CP. */
static bool st_space(unsigned cp)
{
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 ||
           cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
           cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/* The parts of S (LEN bytes) as Python's str.split: each part's bytes
 * [begin, end) to FN (when not NULL) with ARG; returns their number. */
static size_t st_split_one(const st_split *k, const char *s, size_t len,
                           pl_status *(*fn)(void *, const char *, size_t), void *arg,
                           pl_status **out_st)
{
    size_t parts = 0;
    *out_st = NULL;
    if (k->dlen > 0) {
        size_t from = 0;
        for (;;) {
            const char *hit = (k->maxsplit < 0 || (int64_t)parts < k->maxsplit)
                                  ? memmem(s + from, len - from, k->delim, k->dlen)
                                  : NULL;
            size_t end = hit ? (size_t)(hit - s) : len;
            if (fn != NULL && (*out_st = fn(arg, s + from, end - from)) != NULL)
                return parts;
            parts++;
            if (hit == NULL)
                return parts;
            from = end + k->dlen;
        }
    }
    size_t at = 0;
    for (;;) {
        /* skip white space */
        while (at < len) {
            size_t next = at;
            if (!st_space(cpu_utf8_next(s, len, &next)))
                break;
            at = next;
        }
        if (at >= len)
            return parts;
        size_t begin = at, end;
        if (k->maxsplit >= 0 && (int64_t)parts >= k->maxsplit) {
            /* the rest, trailing white space trimmed */
            end = len;
            size_t scan = begin, last = begin;
            while (scan < len) {
                size_t next = scan;
                if (!st_space(cpu_utf8_next(s, len, &next)))
                    last = next;
                scan = next;
            }
            end = last;
            at = len;
        } else {
            while (at < len) {
                size_t next = at;
                if (st_space(cpu_utf8_next(s, len, &next)))
                    break;
                at = next;
            }
            end = at;
        }
        if (fn != NULL && (*out_st = fn(arg, s + begin, end - begin)) != NULL)
            return parts;
        parts++;
    }
}

typedef struct st_emit {
    const pl_run_strings *rs;
    const char *op;
    int64_t *row;
    size_t n, width;
} st_emit;

static pl_status *st_emit_part(void *arg, const char *s, size_t len)
{
    st_emit *e = arg;
    if (e->n >= e->width)
        return cpu_error(PL_CODE_INTERNAL, e->op, "more parts than the width %zu", e->width);
    return st_intern(e->rs, e->op, s, len, &e->row[e->n++]);
}

static pl_status *st_split_write(pl_module_ctx *ctx, const shp_kernel *sk,
                                 const pl_run_args *args, size_t o, void *dst,
                                 pl_output_request req)
{
    (void)ctx, (void)o, (void)req;
    const st_split *k = (const st_split *)sk;
    const char *op = sk->base.op;
    const pl_run_strings *rs;
    SHP_TRY(st_strings(args, op, &rs));
    const int64_t *x = (const int64_t *)shp_in(args, 0);
    size_t n = st_count(&args->inputs[0]);
    int64_t *y = dst;
    if (k->padded)
        memset(y, 0, n * k->width * sizeof *y);
    for (size_t i = 0; i < n; i++) {
        const char *s;
        size_t len;
        SHP_TRY(st_text(rs, op, x[i], &s, &len));
        pl_status *st;
        if (k->padded) {
            st_emit e = {.rs = rs, .op = op, .row = y + i * k->width, .width = k->width};
            st_split_one(k, s, len, st_emit_part, &e, &st);
        } else {
            y[i] = (int64_t)st_split_one(k, s, len, NULL, NULL, &st);
        }
        SHP_TRY(st);
    }
    return NULL;
}

static pl_status *st_build_split(pl_module_ctx *ctx, const pl_node_desc *node,
                                 pl_kernel **out_kernel)
{
    const char *op = node->op;
    bool padded = strcmp(op, "StringSplitPadded") == 0;
    size_t width;
    SHP_TRY(st_padded_width(node, padded, &width));
    const char *delim = "";
    size_t dlen = 0;
    cpu_host->graph->attr_string(node->graph, node->node_index, "delimiter", &delim, &dlen);
    int64_t maxsplit;
    SHP_TRY(cpu_attr_int(node, "maxsplit", -1, &maxsplit));
    st_split *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k + dlen + 1, st_split_write,
                             (shp_kernel **)&k));
    k->padded = padded;
    k->maxsplit = maxsplit < 0 ? -1 : maxsplit;
    k->width = width;
    k->dlen = dlen;
    memcpy(k->delim, delim, dlen);
    k->delim[dlen] = '\0';
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- com.microsoft Tokenizer -------------------------------------------------------------- */

typedef enum st_tok_mode { ST_TOK_CHARS, ST_TOK_SEPARATORS, ST_TOK_EXPRESSION } st_tok_mode;

typedef struct st_tok {
    shp_kernel k;
    bool padded, mark;
    st_tok_mode mode;
    int64_t mincharnum;
    size_t width;
    cpu_regex *exp;
    size_t n_sep;
    cpu_regex **seps; /* in the block */
    char *pad;        /* in the block */
} st_tok;

typedef struct st_span {
    size_t at, len;
} st_span;

/* A growing list of spans. */
typedef struct st_spans {
    st_span *v;
    size_t n, cap;
} st_spans;

static bool st_span_add(st_spans *l, size_t at, size_t len)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        st_span *g = realloc(l->v, cap * sizeof *g);
        if (g == NULL)
            return false;
        l->v = g;
        l->cap = cap;
    }
    l->v[l->n++] = (st_span){at, len};
    return true;
}

static size_t st_chars(const char *s, size_t len)
{
    size_t n;
    cpu_utf8_valid(s, len, &n);
    return n;
}

/* The tokens of S (LEN bytes, valid UTF-8) into OUT (emptied first), as
 * ONNX Runtime's Tokenizer finds them. TMP and SCRATCH: scratch. */
static pl_status *st_tokens(const st_tok *k, const char *s, size_t len, st_spans *out,
                            st_spans *tmp, cpu_regex_scratch *scratch)
{
    const char *op = k->k.base.op;
    out->n = 0;
    if (k->mode == ST_TOK_CHARS) {
        for (size_t at = 0; at < len;) {
            size_t was = at;
            cpu_utf8_next(s, len, &at);
            if (!st_span_add(out, was, at - was))
                return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory");
        }
        return NULL;
    }
    if (k->mode == ST_TOK_EXPRESSION) {
        size_t from = 0, b, e;
        for (;;) {
            int got = cpu_regex_search(k->exp, s, len, from, &b, &e, scratch);
            if (got < 0)
                return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory");
            if (got == 0)
                return NULL;
            if (st_chars(s + b, e - b) >= (size_t)k->mincharnum) {
                if (!st_span_add(out, b, e - b))
                    return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory");
                from = e;
            } else { /* one character on from where it matched */
                size_t next = b;
                if (b >= len)
                    return NULL;
                cpu_utf8_next(s, len, &next);
                from = next;
            }
            if (from > len)
                return NULL;
        }
    }
    /* separators: each splits every piece the previous ones left */
    if (!st_span_add(out, 0, len))
        return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory");
    for (size_t si = 0; si < k->n_sep; si++) {
        tmp->n = 0;
        for (size_t p = 0; p < out->n; p++) {
            const char *t = s + out->v[p].at;
            size_t tl = out->v[p].len, start = 0, b, e;
            for (;;) {
                int got = cpu_regex_search(k->seps[si], t, tl, start, &b, &e, scratch);
                if (got < 0)
                    return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory");
                size_t end = got ? b : tl;
                if (st_chars(t + start, end - start) >= (size_t)k->mincharnum &&
                    !st_span_add(tmp, out->v[p].at + start, end - start))
                    return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory");
                if (!got)
                    break;
                if (e > b) {
                    start = e;
                } else { /* an empty match: one character on */
                    size_t next = b;
                    if (b >= tl)
                        break;
                    cpu_utf8_next(t, tl, &next);
                    start = next;
                }
                if (start > tl)
                    break;
            }
        }
        st_spans swap = *out;
        *out = *tmp;
        *tmp = swap;
    }
    return NULL;
}

static pl_status *st_tok_write(pl_module_ctx *ctx, const shp_kernel *sk, const pl_run_args *args,
                               size_t o, void *dst, pl_output_request req)
{
    (void)ctx, (void)o, (void)req;
    const st_tok *k = (const st_tok *)sk;
    const char *op = sk->base.op;
    const pl_run_strings *rs;
    SHP_TRY(st_strings(args, op, &rs));
    const int64_t *x = (const int64_t *)shp_in(args, 0);
    size_t n = st_count(&args->inputs[0]);
    int64_t *y = dst;
    int64_t start_id = 0, end_id = 0, pad_id = 0;
    if (k->padded && k->width > 0) {
        SHP_TRY(st_intern(rs, op, "\x02", 1, &start_id));
        SHP_TRY(st_intern(rs, op, "\x03", 1, &end_id));
        SHP_TRY(st_intern(rs, op, k->pad, strlen(k->pad), &pad_id));
    }
    st_spans toks = {0}, tmp = {0};
    cpu_regex_scratch scratch = {0};
    pl_status *st = NULL;
    size_t most = 0;
    for (size_t i = 0; st == NULL && i < n; i++) {
        const char *s;
        size_t len, chars;
        if ((st = st_text(rs, op, x[i], &s, &len)) != NULL)
            break;
        if (!cpu_utf8_valid(s, len, &chars)) {
            st = cpu_error(PL_CODE_INVALID_ARGUMENT, op, "element %zu is not valid UTF-8", i);
            break;
        }
        if ((st = st_tokens(k, s, len, &toks, &tmp, &scratch)) != NULL)
            break;
        if (!k->padded) {
            most = toks.n > most ? toks.n : most;
            continue;
        }
        if (k->width == 0)
            continue;
        size_t need = toks.n + (k->mark ? 2 : 0);
        if (need > k->width) {
            st = cpu_error(PL_CODE_INTERNAL, op, "element %zu has %zu tokens; the width is %zu",
                           i, toks.n, k->width);
            break;
        }
        int64_t *row = y + i * k->width;
        size_t c = 0;
        if (k->mark)
            row[c++] = start_id;
        for (size_t t = 0; st == NULL && t < toks.n; t++)
            st = st_intern(rs, op, s + toks.v[t].at, toks.v[t].len, &row[c++]);
        if (k->mark)
            row[c++] = end_id;
        while (c < k->width)
            row[c++] = pad_id;
    }
    if (st == NULL && !k->padded)
        *y = most == 0 ? 0 : (int64_t)(most + (k->mark ? 2 : 0));
    free(toks.v);
    free(tmp.v);
    cpu_regex_scratch_free(&scratch);
    return st;
}

static void st_tok_release(pl_module_ctx *ctx, pl_kernel *kernel)
{
    (void)ctx;
    st_tok *k = (st_tok *)kernel;
    cpu_regex_free(k->exp);
    for (size_t i = 0; i < k->n_sep; i++)
        cpu_regex_free(k->seps[i]);
}

static pl_status *st_build_tokenizer(pl_module_ctx *ctx, const pl_node_desc *node,
                                     pl_kernel **out_kernel)
{
    const char *op = node->op;
    bool padded = strcmp(op, "TokenizerPadded") == 0;
    size_t width;
    SHP_TRY(st_padded_width(node, padded, &width));
    int64_t mark, mincharnum;
    SHP_TRY(cpu_attr_int(node, "mark", 0, &mark));
    SHP_TRY(cpu_attr_int(node, "mincharnum", 1, &mincharnum));
    const char *pad = "", *exp = NULL;
    size_t pad_len = 0, exp_len = 0;
    cpu_host->graph->attr_string(node->graph, node->node_index, "pad_value", &pad, &pad_len);
    const char *const *seps = NULL;
    size_t n_sep = 0;
    bool has_seps = cpu_host->graph->attr_strings(node->graph, node->node_index, "separators",
                                                  &seps, &n_sep);
    bool has_exp =
        cpu_host->graph->attr_string(node->graph, node->node_index, "tokenexp", &exp, &exp_len);
    if (mincharnum < 1)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "mincharnum must be positive");
    st_tok_mode mode;
    if (has_seps) {
        if (n_sep == 0)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "separators must not be empty");
        mode = n_sep == 1 && seps[0][0] == '\0' ? ST_TOK_CHARS : ST_TOK_SEPARATORS;
        for (size_t i = 0; mode == ST_TOK_SEPARATORS && i < n_sep; i++)
            if (seps[i][0] == '\0')
                return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "separator %zu is empty", i);
    } else if (has_exp && exp_len > 0) {
        mode = exp_len == 1 && exp[0] == '.' ? ST_TOK_CHARS : ST_TOK_EXPRESSION;
    } else {
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "needs separators or a non-empty tokenexp");
    }
    if (mode == ST_TOK_CHARS && mincharnum >= 2)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "mincharnum %" PRId64 " is too big for characters as tokens",
                         mincharnum);
    size_t n_re = mode == ST_TOK_SEPARATORS ? n_sep : 0;
    st_tok *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k + n_re * sizeof(cpu_regex *) + pad_len + 1 +
                                            exp_len + 1,
                             st_tok_write, (shp_kernel **)&k));
    k->k.base.release = st_tok_release;
    k->padded = padded;
    k->mark = mark != 0;
    k->mode = mode;
    k->mincharnum = mincharnum;
    k->width = width;
    k->seps = (cpu_regex **)(k + 1);
    k->pad = (char *)(k->seps + n_re);
    memcpy(k->pad, pad, pad_len);
    k->pad[pad_len] = '\0';
    char *exp_copy = k->pad + pad_len + 1;
    pl_status *st = NULL;
    if (mode == ST_TOK_EXPRESSION) {
        memcpy(exp_copy, exp, exp_len);
        exp_copy[exp_len] = '\0';
        st = st_compile(node, "tokenexp", exp_copy, &k->exp);
    }
    for (size_t i = 0; st == NULL && i < n_re; i++) {
        if ((st = st_compile(node, "separator", seps[i], &k->seps[i])) == NULL)
            k->n_sep = i + 1;
    }
    if (st != NULL) {
        cpu_kernel_release(ctx, &k->k.base);
        return st;
    }
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- casts between strings and numbers ------------------------------------------------- */

typedef struct st_cast {
    shp_kernel k;
    pl_dtype dt; /* the number's */
    locale_t c;  /* the C locale, for strtod and printf (the process's may
                    write "1,5") */
} st_cast;

static void st_cast_release(pl_module_ctx *ctx, pl_kernel *kernel)
{
    (void)ctx;
    st_locale_release(((st_cast *)kernel)->c);
}

static pl_status *st_to_number_write(pl_module_ctx *ctx, const shp_kernel *sk,
                                     const pl_run_args *args, size_t o, void *dst,
                                     pl_output_request req)
{
    (void)ctx, (void)o, (void)req;
    const st_cast *k = (const st_cast *)sk;
    const char *op = sk->base.op;
    const pl_run_strings *rs;
    SHP_TRY(st_strings(args, op, &rs));
    const int64_t *x = (const int64_t *)shp_in(args, 0);
    size_t n = sk->outs[0].elements, es = pl_dtype_size(k->dt);
    pl_dtype dt = k->dt;
    bool fl = dt.code == PL_TYPE_FLOAT || dt.code == PL_TYPE_BFLOAT;
    bool sint = dt.code == PL_TYPE_INT;
    locale_t c = k->c;
    for (size_t i = 0; i < n; i++) {
        const char *s;
        size_t len;
        SHP_TRY(st_text(rs, op, x[i], &s, &len));
        char *end;
        errno = 0;
        char *out = (char *)dst + i * es;
        if (fl) {
            double v = c != (locale_t)0 ? strtod_l(s, &end, c) : strtod(s, &end);
            /* (an underflow reads as its subnormal or zero) */
            if (end == s || (errno == ERANGE && isinf(v)))
                return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                                 "element %zu, '%.64s', is %s a %s", i, s,
                                 end == s ? "not" : "out of the range of", "floating-point number");
            if (PL_DTYPE_EQ(dt, PL_DTYPE_F32)) {
                float f = (float)v;
                memcpy(out, &f, 4);
            } else {
                shp_convert(PL_DTYPE_F64, &v, dt, out, 1);
            }
            continue;
        }
        uint64_t u;
        if (sint) {
            long long v = strtoll(s, &end, 10);
            u = (uint64_t)v;
        } else {
            u = (uint64_t)strtoull(s, &end, 10);
        }
        if (end == s || errno == ERANGE)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "element %zu, '%.64s', is %s an integer",
                             i, s, end == s ? "not" : "out of the range of");
        if (dt.code == PL_TYPE_BOOL) {
            *(bool *)out = u != 0;
        } else {
            /* C's conversion: the low bytes (two's complement wraps) */
            for (size_t b = 0; b < es; b++)
                out[b] = (char)(u >> (8 * b));
        }
    }
    return NULL;
}

/* V as the shortest decimal that reads back as the same value (in f64
 * when WIDE, else f32, which f16 and bf16 widen into exactly), written as
 * NumPy's str writes it and ONNX's test data expects it: positional with a
 * fraction ("100.0", "0.6048455") when 1e-4 <= |v| < 1e16 (1e6 for f32),
 * else scientific ("1e-07", "1.2345679e+08"); "NaN", "INF" and "-INF" as
 * ONNX names them. (ONNX Runtime writes "%.8g": "0.60484552".) The calling
 * thread's locale is C (uselocale). */
static void st_format_float(char *buf, size_t size, double v, bool wide)
{
    if (isnan(v)) {
        snprintf(buf, size, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, size, v < 0 ? "-INF" : "INF");
        return;
    }
    char sci[40];
    int digits = wide ? 17 : 9;
    for (int p = 1; p <= (wide ? 17 : 9); p++) {
        snprintf(sci, sizeof sci, "%.*e", p - 1, v);
        double back = strtod(sci, NULL);
        if (wide ? back == v : (float)back == (float)v) {
            digits = p;
            break;
        }
    }
    snprintf(sci, sizeof sci, "%.*e", digits - 1, v); /* d.ddde+XX */
    double a = fabs(v);
    bool positional = v == 0 || (a >= 1e-4 && a < (wide ? 1e16 : 1e6));
    if (!positional) {
        snprintf(buf, size, "%s", sci);
        return;
    }
    /* the same digits, placed by the exponent */
    char mant[24];
    size_t nm = 0;
    const char *e = strchr(sci, 'e');
    for (const char *q = sci; q < e; q++)
        if (*q >= '0' && *q <= '9')
            mant[nm++] = *q;
    int exp10 = atoi(e + 1);
    char *o = buf, *end = buf + size - 1;
    if (v < 0 || (v == 0 && signbit(v)))
        *o++ = '-';
    if (exp10 < 0) {
        *o++ = '0';
        *o++ = '.';
        for (int z = 0; z < -exp10 - 1 && o < end; z++)
            *o++ = '0';
        for (size_t i = 0; i < nm && o < end; i++)
            *o++ = mant[i];
    } else {
        for (int i = 0; i <= exp10 && o < end; i++)
            *o++ = (size_t)i < nm ? mant[i] : '0';
        *o++ = '.';
        if ((size_t)exp10 + 1 >= nm)
            *o++ = '0';
        for (size_t i = (size_t)exp10 + 1; i < nm && o < end; i++)
            *o++ = mant[i];
    }
    *o = '\0';
}

static pl_status *st_to_string_write(pl_module_ctx *ctx, const shp_kernel *sk,
                                     const pl_run_args *args, size_t o, void *dst,
                                     pl_output_request req)
{
    (void)ctx, (void)o, (void)req;
    const st_cast *k = (const st_cast *)sk;
    const char *op = sk->base.op;
    const pl_run_strings *rs;
    SHP_TRY(st_strings(args, op, &rs));
    const char *x = shp_in(args, 0);
    pl_dtype dt = k->dt;
    size_t n = sk->outs[0].elements, es = pl_dtype_size(dt);
    int64_t *y = dst;
    locale_t c = k->c, old = (locale_t)0;
    if (c != (locale_t)0)
        old = uselocale(c);
    pl_status *st = NULL;
    for (size_t i = 0; st == NULL && i < n; i++) {
        char buf[64];
        const char *p = x + i * es;
        if (dt.code == PL_TYPE_FLOAT || dt.code == PL_TYPE_BFLOAT) {
            double v;
            if (PL_DTYPE_EQ(dt, PL_DTYPE_F32)) {
                float f;
                memcpy(&f, p, 4);
                v = f;
            } else {
                shp_convert(dt, p, PL_DTYPE_F64, &v, 1);
            }
            st_format_float(buf, sizeof buf, v, dt.bits == 64);
        } else if (dt.code == PL_TYPE_BOOL) {
            snprintf(buf, sizeof buf, "%d", *(const bool *)p ? 1 : 0);
        } else {
            uint64_t u = 0;
            for (size_t b = 0; b < es; b++)
                u |= (uint64_t)(unsigned char)p[b] << (8 * b);
            if (dt.code == PL_TYPE_INT) {
                int64_t sv = es < 8 && (u >> (8 * es - 1) & 1) ? (int64_t)(u | ~0ull << (8 * es))
                                                               : (int64_t)u;
                snprintf(buf, sizeof buf, "%" PRId64, sv);
            } else {
                snprintf(buf, sizeof buf, "%" PRIu64, u);
            }
        }
        st = st_intern(rs, op, buf, strlen(buf), &y[i]);
    }
    if (c != (locale_t)0)
        uselocale(old);
    return st;
}

/* StringToNumber (the number is the output) and NumberToString (the
 * input): every dtype but strings. */
static pl_status *st_build_cast(pl_module_ctx *ctx, const pl_node_desc *node,
                                pl_kernel **out_kernel, bool to_string)
{
    const char *op = node->op;
    pl_dtype dt = to_string ? node->inputs[0].dtype : node->outputs[0].dtype;
    pl_dtype ids = to_string ? node->outputs[0].dtype : node->inputs[0].dtype;
    bool ok = dt.lanes == 1 &&
              (PL_DTYPE_EQ(dt, PL_DTYPE_F32) || PL_DTYPE_EQ(dt, PL_DTYPE_F64) ||
               PL_DTYPE_EQ(dt, PL_DTYPE_F16) || PL_DTYPE_EQ(dt, PL_DTYPE_BF16) ||
               PL_DTYPE_EQ(dt, PL_DTYPE_BOOL) || dt.code == PL_TYPE_INT || dt.code == PL_TYPE_UINT);
    if (!PL_DTYPE_EQ(ids, PL_DTYPE_I64) || !ok)
        return cpu_error(PL_CODE_UNSUPPORTED, op,
                         "string ids and a number of dtype code %d, %d bits", (int)dt.code,
                         (int)dt.bits);
    st_cast *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k,
                             to_string ? st_to_string_write : st_to_number_write,
                             (shp_kernel **)&k));
    k->dt = dt;
    k->c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    k->k.base.release = st_cast_release;
    *out_kernel = &k->k.base;
    return NULL;
}

static pl_status *st_build_to_number(pl_module_ctx *ctx, const pl_node_desc *node,
                                     pl_kernel **out_kernel)
{
    return st_build_cast(ctx, node, out_kernel, false);
}

static pl_status *st_build_to_string(pl_module_ctx *ctx, const pl_node_desc *node,
                                     pl_kernel **out_kernel)
{
    return st_build_cast(ctx, node, out_kernel, true);
}

/* ---- MurmurHash3 ------------------------------------------------------------------------ */

typedef struct st_murmur {
    shp_kernel k;
    bool strings;
    uint32_t seed;
} st_murmur;

static uint32_t st_rotl32(uint32_t x, int r)
{
    return x << r | x >> (32 - r);
}

/* Austin Appleby's MurmurHash3_x86_32 of LEN bytes at P. */
static uint32_t st_murmur3(const unsigned char *p, size_t len, uint32_t seed)
{
    const uint32_t c1 = 0xcc9e2d51u, c2 = 0x1b873593u;
    uint32_t h = seed;
    size_t blocks = len / 4;
    for (size_t i = 0; i < blocks; i++) {
        uint32_t k;
        memcpy(&k, p + 4 * i, 4); /* (little-endian, as the reference reads it) */
        k *= c1;
        k = st_rotl32(k, 15);
        k *= c2;
        h ^= k;
        h = st_rotl32(h, 13);
        h = h * 5 + 0xe6546b64u;
    }
    const unsigned char *tail = p + 4 * blocks;
    uint32_t k = 0;
    switch (len & 3) {
    case 3:
        k ^= (uint32_t)tail[2] << 16;
        /* fall through */
    case 2:
        k ^= (uint32_t)tail[1] << 8;
        /* fall through */
    case 1:
        k ^= tail[0];
        k *= c1;
        k = st_rotl32(k, 15);
        k *= c2;
        h ^= k;
    }
    h ^= (uint32_t)len;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

static pl_status *st_murmur_write(pl_module_ctx *ctx, const shp_kernel *sk,
                                  const pl_run_args *args, size_t o, void *dst,
                                  pl_output_request req)
{
    (void)ctx, (void)o, (void)req;
    const st_murmur *k = (const st_murmur *)sk;
    const char *op = sk->base.op;
    const char *x = shp_in(args, 0);
    size_t n = sk->outs[0].elements;
    uint32_t *y = dst; /* (int32 or uint32: the same bits) */
    if (!k->strings) {
        for (size_t i = 0; i < n; i++)
            y[i] = st_murmur3((const unsigned char *)x + 4 * i, 4, k->seed);
        return NULL;
    }
    const pl_run_strings *rs;
    SHP_TRY(st_strings(args, op, &rs));
    for (size_t i = 0; i < n; i++) {
        const char *s;
        size_t len;
        int64_t id;
        memcpy(&id, x + 8 * i, 8);
        SHP_TRY(st_text(rs, op, id, &s, &len));
        y[i] = st_murmur3((const unsigned char *)s, len, k->seed);
    }
    return NULL;
}

static pl_status *st_build_murmur(pl_module_ctx *ctx, const pl_node_desc *node,
                                  pl_kernel **out_kernel)
{
    const char *op = node->op;
    bool strings = strcmp(op, "StringMurmurHash3") == 0;
    pl_dtype in = node->inputs[0].dtype, out = node->outputs[0].dtype;
    bool in_ok = strings ? PL_DTYPE_EQ(in, PL_DTYPE_I64)
                         : PL_DTYPE_EQ(in, PL_DTYPE_I32) || PL_DTYPE_EQ(in, PL_DTYPE_U32);
    if (!in_ok || !(PL_DTYPE_EQ(out, PL_DTYPE_I32) || PL_DTYPE_EQ(out, PL_DTYPE_U32)))
        return cpu_error(PL_CODE_UNSUPPORTED, op,
                         "keys of int32, uint32 or strings, hashes of int32 or uint32");
    int64_t seed;
    SHP_TRY(cpu_attr_int(node, "seed", 0, &seed));
    st_murmur *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, st_murmur_write, (shp_kernel **)&k));
    k->strings = strings;
    k->seed = (uint32_t)seed;
    *out_kernel = &k->k.base;
    return NULL;
}
