/* regex.c — regular expressions in RE2's syntax as a Thompson NFA
 * (regex.h). The parser builds a small tree, the compiler lays it out as
 * instructions (a class of code points, a split, a jump, an assertion, the
 * match), and a search runs the set of live instructions over the text one
 * code point at a time. Each live instruction remembers where its match
 * started; the list stays ordered by that start, and an instruction
 * reached twice keeps the earlier one, so the first match found has the
 * leftmost start, and running on while any thread of that start lives
 * finds its longest end: RE2's longest_match, in one pass. */
#define _GNU_SOURCE /* newlocale, towlower_l */
#include "regex.h"

#include <locale.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wctype.h>

#define RX_MAX_INSTS 65536   /* instructions a pattern may compile to */
#define RX_MAX_REPEAT 1000   /* the largest count of {n,m}, as RE2 */
#define RX_MAX_DEPTH 1000    /* nested groups */
#define RX_MAX_CP 0x10FFFFu

/* ---- UTF-8 ------------------------------------------------------------------- */

unsigned cpu_utf8_next(const char *text, size_t len, size_t *at)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = *at;
    unsigned c = s[i];
    if (c < 0x80) {
        *at = i + 1;
        return c;
    }
    size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    if (n == 0 || c > 0xF4 || i + n > len) {
        *at = i + 1;
        return 0xFFFD;
    }
    unsigned cp = c & (0x7F >> n);
    for (size_t k = 1; k < n; k++) {
        if ((s[i + k] & 0xC0) != 0x80) {
            *at = i + 1;
            return 0xFFFD;
        }
        cp = cp << 6 | (s[i + k] & 0x3F);
    }
    static const unsigned least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[n] || cp > RX_MAX_CP || (cp >= 0xD800 && cp <= 0xDFFF)) {
        *at = i + 1;
        return 0xFFFD;
    }
    *at = i + n;
    return cp;
}

bool cpu_utf8_valid(const char *text, size_t len, size_t *out_chars)
{
    size_t chars = 0;
    bool ok = true;
    for (size_t at = 0; at < len; chars++) {
        size_t was = at;
        unsigned cp = cpu_utf8_next(text, len, &at);
        /* U+FFFD of one byte is an invalid byte; encoded, it takes three */
        if (cp == 0xFFFD && at - was == 1)
            ok = false;
    }
    *out_chars = chars;
    return ok;
}

/* ---- the program -------------------------------------------------------------- */

typedef enum rx_op { RX_CLASS, RX_SPLIT, RX_JMP, RX_ASSERT, RX_MATCH } rx_op;

typedef enum rx_assert {
    RX_TEXT_BEGIN, /* ^ (without m), \A */
    RX_TEXT_END,   /* $ (without m), \z */
    RX_LINE_BEGIN, /* ^ with m */
    RX_LINE_END,   /* $ with m */
    RX_WORD,       /* \b */
    RX_NOT_WORD    /* \B */
} rx_assert;

typedef struct rx_range {
    uint32_t lo, hi;
} rx_range;

typedef struct rx_inst {
    uint8_t op;
    uint8_t kind;          /* RX_ASSERT: an rx_assert */
    uint32_t x, y;         /* RX_SPLIT: both; RX_JMP: x; RX_CLASS: ranges [x, y) */
    uint64_t ascii[2];     /* RX_CLASS: the code points below 128, a bit each */
} rx_inst;

struct cpu_regex {
    rx_inst *insts;
    size_t n_insts;
    rx_range *ranges;
    size_t n_ranges;
    /* The pattern is one class repeated once or more ("[a-zA-Z0-9_]+", the
     * tokenexp skl2onnx writes): searched by a scan, class is its class
     * instruction. */
    bool class_run;
    rx_inst class;
    /* The pattern is \b, a class of ASCII word characters at least
     * WORD_MIN times, \b ("\b\w+\b", "\b\w\w+\b": scikit-learn's token
     * patterns): a match is a whole run of word characters, every one in
     * the class, searched by a scan. WORD_SET: the class, a bit per byte. */
    bool word_run;
    size_t word_min;
    uint64_t word_set[2];
    /* Each instruction a step can land on (0, and the one after each
     * class) with what it reaches without reading: the classes and the
     * match, in the order the search would add them, precomputed (NULL
     * when they would take more than RX_MEMO_MAX entries: the search
     * then walks the splits itself). One list per instruction, or 64 when
     * an assertion is on the way: one per context (rx_context). List k of
     * pc is clos_pcs[clos_off[clos_at[pc] + ctx]] up to clos_off[... + 1]. */
    uint32_t *clos_at;  /* per pc: its first list, or UINT32_MAX */
    uint8_t *clos_ctx;  /* per pc: 1 when its lists depend on the context */
    uint32_t *clos_off; /* n_lists + 1 */
    uint32_t *clos_pcs;
};

#define RX_MEMO_MAX (1u << 20)

static bool rx_word_byte(const char *text, size_t len, size_t i)
{
    if (i >= len)
        return false;
    unsigned char c = (unsigned char)text[i];
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

/* What the assertions read at byte AT of TEXT, a bit each. */
enum {
    RX_C_BEGIN = 1,
    RX_C_END = 2,
    RX_C_PREV_NL = 4,
    RX_C_NEXT_NL = 8,
    RX_C_PREV_WORD = 16,
    RX_C_NEXT_WORD = 32,
    RX_CONTEXTS = 64
};

static unsigned rx_context(const char *text, size_t len, size_t at)
{
    return (at == 0 ? RX_C_BEGIN : 0) | (at == len ? RX_C_END : 0) |
           (at > 0 && text[at - 1] == '\n' ? RX_C_PREV_NL : 0) |
           (at < len && text[at] == '\n' ? RX_C_NEXT_NL : 0) |
           (at > 0 && rx_word_byte(text, len, at - 1) ? RX_C_PREV_WORD : 0) |
           (rx_word_byte(text, len, at) ? RX_C_NEXT_WORD : 0);
}

static bool rx_assert_holds(rx_assert k, unsigned c)
{
    switch (k) {
    case RX_TEXT_BEGIN:
        return c & RX_C_BEGIN;
    case RX_TEXT_END:
        return c & RX_C_END;
    case RX_LINE_BEGIN:
        return c & (RX_C_BEGIN | RX_C_PREV_NL);
    case RX_LINE_END:
        return c & (RX_C_END | RX_C_NEXT_NL);
    case RX_WORD:
    case RX_NOT_WORD: {
        bool w = !(c & RX_C_NEXT_WORD) != !(c & RX_C_PREV_WORD);
        return k == RX_WORD ? w : !w;
    }
    }
    return false;
}


/* ---- the parser ------------------------------------------------------------- */

typedef enum rn_kind { RN_EMPTY, RN_CLASS, RN_ASSERT, RN_CAT, RN_ALT, RN_REP } rn_kind;

/* A node of the tree: CLASS ranges [a, b) of the pool; ASSERT kind a;
 * CAT and ALT children a and b; REP child a, at least min, at most max
 * (-1: no bound). */
typedef struct rn {
    rn_kind kind;
    uint32_t a, b;
    int32_t min, max;
} rn;

typedef struct rx_parser {
    const char *p;
    size_t len, at;
    bool fold, dotnl, multiline;
    int depth;
    rn *nodes;
    size_t n_nodes, cap_nodes;
    rx_range *ranges;
    size_t n_ranges, cap_ranges;
    rx_range *tmp;           /* a class being built */
    size_t n_tmp, cap_tmp;
    uint32_t quoted;         /* the last \Q...\E chain made, or UINT32_MAX */
    locale_t ctype;          /* C.UTF-8's, for case folding beyond ASCII, once
                                a fold asks for it ((locale_t)0: ASCII only) */
    bool ctype_tried;
    char *err;
    size_t err_size;
    bool failed;
} rx_parser;

static void rx_fail(rx_parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void rx_fail(rx_parser *ps, const char *fmt, ...)
{
    if (ps->failed)
        return;
    ps->failed = true;
    if (ps->err_size == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->err, ps->err_size, fmt, ap);
    va_end(ap);
}

static bool rx_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap * 2 : 16;
    while (c < need)
        c *= 2;
    void *g = realloc(*arr, c * elem);
    if (g == NULL)
        return false;
    *arr = g;
    *cap = c;
    return true;
}

static uint32_t rx_node(rx_parser *ps, rn n)
{
    if (ps->failed)
        return 0;
    if (ps->n_nodes >= RX_MAX_INSTS * 4) {
        rx_fail(ps, "pattern too large");
        return 0;
    }
    if (!rx_grow((void **)&ps->nodes, &ps->cap_nodes, ps->n_nodes + 1, sizeof(rn))) {
        rx_fail(ps, "out of memory");
        return 0;
    }
    ps->nodes[ps->n_nodes] = n;
    return (uint32_t)ps->n_nodes++;
}

static void rx_tmp_add(rx_parser *ps, uint32_t lo, uint32_t hi)
{
    if (!rx_grow((void **)&ps->tmp, &ps->cap_tmp, ps->n_tmp + 1, sizeof(rx_range))) {
        rx_fail(ps, "out of memory");
        return;
    }
    ps->tmp[ps->n_tmp++] = (rx_range){lo, hi};
}

static int rx_range_cmp(const void *a, const void *b)
{
    const rx_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The class gathered in tmp (folded, negated when asked) as a node. */
/* Code points beyond ASCII a class's case folding looks at, at most: a
 * wider class (a negation, a script) keeps the rest as written. */
#define RX_FOLD_MAX 0x10000u

static uint32_t rx_class_node(rx_parser *ps, bool negate)
{
    if (ps->fold && !ps->ctype_tried) {
        ps->ctype_tried = true;
        ps->ctype = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    }
    if (ps->fold) { /* letters in both cases */
        size_t n = ps->n_tmp;
        uint32_t budget = RX_FOLD_MAX;
        for (size_t i = 0; i < n; i++) {
            uint32_t lo = ps->tmp[i].lo, hi = ps->tmp[i].hi;
            uint32_t a = lo > 'A' ? lo : 'A', b = hi < 'Z' ? hi : 'Z';
            if (a <= b)
                rx_tmp_add(ps, a + 32, b + 32);
            a = lo > 'a' ? lo : 'a';
            b = hi < 'z' ? hi : 'z';
            if (a <= b)
                rx_tmp_add(ps, a - 32, b - 32);
            /* beyond ASCII, each code point's other case as C.UTF-8 maps it
             * (RE2 folds Unicode's case orbits: É with é, Ω with ω) */
            a = lo > 0x80 ? lo : 0x80;
            if (ps->ctype == (locale_t)0 || a > hi || hi - a >= budget)
                continue;
            budget -= hi - a + 1;
            for (uint32_t cp = a; cp <= hi && !ps->failed; cp++) {
                uint32_t l = (uint32_t)towlower_l((wint_t)cp, ps->ctype);
                uint32_t u = (uint32_t)towupper_l((wint_t)cp, ps->ctype);
                if (l != cp)
                    rx_tmp_add(ps, l, l);
                if (u != cp)
                    rx_tmp_add(ps, u, u);
            }
        }
    }
    if (ps->failed)
        return 0;
    qsort(ps->tmp, ps->n_tmp, sizeof(rx_range), rx_range_cmp);
    size_t m = 0;
    for (size_t i = 0; i < ps->n_tmp; i++) {
        if (m > 0 && ps->tmp[i].lo <= ps->tmp[m - 1].hi + 1) {
            if (ps->tmp[i].hi > ps->tmp[m - 1].hi)
                ps->tmp[m - 1].hi = ps->tmp[i].hi;
        } else {
            ps->tmp[m++] = ps->tmp[i];
        }
    }
    ps->n_tmp = m;
    size_t first = ps->n_ranges;
    if (!rx_grow((void **)&ps->ranges, &ps->cap_ranges, ps->n_ranges + m + 1, sizeof(rx_range))) {
        rx_fail(ps, "out of memory");
        return 0;
    }
    if (negate) {
        uint32_t next = 0;
        for (size_t i = 0; i < m; i++) {
            if (ps->tmp[i].lo > next)
                ps->ranges[ps->n_ranges++] = (rx_range){next, ps->tmp[i].lo - 1};
            next = ps->tmp[i].hi + 1;
        }
        if (next <= RX_MAX_CP)
            ps->ranges[ps->n_ranges++] = (rx_range){next, RX_MAX_CP};
    } else {
        memcpy(ps->ranges + first, ps->tmp, m * sizeof(rx_range));
        ps->n_ranges += m;
    }
    ps->n_tmp = 0;
    return rx_node(ps, (rn){.kind = RN_CLASS, .a = (uint32_t)first, .b = (uint32_t)ps->n_ranges});
}

/* The sequence IDS (N nodes) as a right-leaning chain of CAT (or ALT)
 * nodes, so that the compiler walks it in a loop, not a recursion. */
static uint32_t rx_chain(rx_parser *ps, rn_kind kind, const uint32_t *ids, size_t n)
{
    if (n == 0)
        return rx_node(ps, (rn){.kind = RN_EMPTY});
    uint32_t tail = ids[n - 1];
    for (size_t i = n - 1; i-- > 0;)
        tail = rx_node(ps, (rn){.kind = kind, .a = ids[i], .b = tail});
    return tail;
}

/* Appends node ID to the list *IDS (*N of *CAP). */
static void rx_push(rx_parser *ps, uint32_t **ids, size_t *n, size_t *cap, uint32_t id)
{
    if (ps->failed)
        return;
    if (!rx_grow((void **)ids, cap, *n + 1, sizeof **ids)) {
        rx_fail(ps, "out of memory");
        return;
    }
    (*ids)[(*n)++] = id;
}

static uint32_t rx_literal(rx_parser *ps, uint32_t cp)
{
    rx_tmp_add(ps, cp, cp);
    return rx_class_node(ps, false);
}

/* A Perl class letter (d s w, upper case negated) into tmp; negated ones
 * only as a whole class (NEG_OK), as RE2 allows them in brackets too. */
static bool rx_perl_class(rx_parser *ps, char c, bool *out_negated)
{
    char l = (char)(c | 0x20);
    *out_negated = c >= 'A' && c <= 'Z';
    if (l == 'd') {
        rx_tmp_add(ps, '0', '9');
    } else if (l == 's') {
        rx_tmp_add(ps, '\t', '\n');
        rx_tmp_add(ps, '\f', '\r');
        rx_tmp_add(ps, ' ', ' ');
    } else if (l == 'w') {
        rx_tmp_add(ps, '0', '9');
        rx_tmp_add(ps, 'A', 'Z');
        rx_tmp_add(ps, 'a', 'z');
        rx_tmp_add(ps, '_', '_');
    } else {
        return false;
    }
    return true;
}

static int rx_hex(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
           : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10
                                                    : -1;
}

/* The code point of the escape after a backslash that stands for one
 * (\n, \x41, \.), advancing past it; false (nothing consumed) for the
 * others. */
static bool rx_escape_char(rx_parser *ps, uint32_t *out)
{
    if (ps->at >= ps->len) {
        rx_fail(ps, "trailing \\");
        return false;
    }
    char c = ps->p[ps->at];
    static const char ctrl[] = "ntrfva";
    static const uint32_t ctrl_cp[] = {'\n', '\t', '\r', '\f', '\v', 7};
    const char *k = c ? strchr(ctrl, c) : NULL;
    if (k != NULL) {
        ps->at++;
        *out = ctrl_cp[k - ctrl];
        return true;
    }
    if (c == 'x') {
        ps->at++;
        uint32_t v = 0;
        if (ps->at < ps->len && ps->p[ps->at] == '{') {
            size_t digits = 0;
            for (ps->at++; ps->at < ps->len && ps->p[ps->at] != '}'; ps->at++, digits++) {
                int h = rx_hex(ps->p[ps->at]);
                if (h < 0 || v > RX_MAX_CP) {
                    rx_fail(ps, "invalid escape \\x{...}");
                    return false;
                }
                v = v * 16 + (uint32_t)h;
            }
            if (ps->at >= ps->len || digits == 0 || v > RX_MAX_CP) {
                rx_fail(ps, "invalid escape \\x{...}");
                return false;
            }
            ps->at++;
        } else {
            for (int i = 0; i < 2; i++, ps->at++) {
                int h = ps->at < ps->len ? rx_hex(ps->p[ps->at]) : -1;
                if (h < 0) {
                    rx_fail(ps, "invalid escape \\x: two hex digits expected");
                    return false;
                }
                v = v * 16 + (uint32_t)h;
            }
        }
        *out = v;
        return true;
    }
    if ((unsigned char)c < 0x80 && !(c >= '0' && c <= '9') && !(c >= 'A' && c <= 'Z') &&
        !(c >= 'a' && c <= 'z') && c != '_') {
        ps->at++;
        *out = (uint32_t)(unsigned char)c;
        return true;
    }
    return false;
}

/* An escape that is no single code point, named in the refusal. */
static void rx_bad_escape(rx_parser *ps)
{
    char c = ps->p[ps->at];
    if (c == 'p' || c == 'P')
        rx_fail(ps, "Unicode classes (\\%c) are not supported", c);
    else if (c >= '0' && c <= '9')
        rx_fail(ps, "backreferences and octal escapes (\\%c) are not supported", c);
    else
        rx_fail(ps, "invalid escape \\%c", c);
}

static const struct {
    const char *name;
    const char *ranges; /* pairs lo, hi */
} rx_posix[] = {
    {"alnum", "09AZaz"}, {"alpha", "AZaz"},       {"ascii", "\x01\x7f"},
    {"blank", "\t\t  "}, {"cntrl", "\x01\x1f\x7f\x7f"}, {"digit", "09"},
    {"graph", "!~"},     {"lower", "az"},         {"print", " ~"},
    {"punct", "!/:@[`{~"}, {"space", "\t\r  "},   {"upper", "AZ"},
    {"word", "09AZaz__"}, {"xdigit", "09AFaf"},
};

/* [[:name:]] at ps->at (the first '['): adds its ranges; false when not one. */
static bool rx_posix_class(rx_parser *ps, bool *out_negated)
{
    const char *s = ps->p + ps->at;
    size_t left = ps->len - ps->at;
    if (left < 4 || s[1] != ':')
        return false;
    const char *end = NULL;
    for (size_t i = 2; i + 1 < left; i++)
        if (s[i] == ':' && s[i + 1] == ']') {
            end = s + i;
            break;
        }
    if (end == NULL)
        return false;
    const char *name = s + 2;
    bool neg = *name == '^';
    name += neg;
    size_t n = (size_t)(end - name);
    for (size_t i = 0; i < sizeof rx_posix / sizeof rx_posix[0]; i++)
        if (strlen(rx_posix[i].name) == n && memcmp(rx_posix[i].name, name, n) == 0) {
            size_t first = ps->n_tmp;
            const char *r = rx_posix[i].ranges;
            for (size_t k = 0; r[k] != '\0'; k += 2)
                rx_tmp_add(ps, (unsigned char)r[k], (unsigned char)r[k + 1]);
            /* ascii and cntrl start at NUL, which a string literal cannot hold */
            if (strcmp(rx_posix[i].name, "ascii") == 0 || strcmp(rx_posix[i].name, "cntrl") == 0)
                ps->tmp[first].lo = 0;
            *out_negated = neg;
            ps->at = (size_t)(end - ps->p) + 2;
            return true;
        }
    rx_fail(ps, "invalid character class [:%.*s:]", (int)n, name);
    return true;
}

/* Negates tmp's entries from FIRST on, in place (a negated Perl or POSIX
 * class inside brackets). */
static void rx_negate_tail(rx_parser *ps, size_t first)
{
    size_t n = ps->n_tmp - first;
    rx_range *copy = malloc((n ? n : 1) * sizeof *copy);
    if (copy == NULL) {
        rx_fail(ps, "out of memory");
        return;
    }
    memcpy(copy, ps->tmp + first, n * sizeof *copy);
    qsort(copy, n, sizeof *copy, rx_range_cmp);
    ps->n_tmp = first;
    uint32_t next = 0;
    for (size_t i = 0; i < n; i++) {
        if (copy[i].lo > next)
            rx_tmp_add(ps, next, copy[i].lo - 1);
        if (copy[i].hi + 1 > next)
            next = copy[i].hi + 1;
    }
    if (next <= RX_MAX_CP)
        rx_tmp_add(ps, next, RX_MAX_CP);
    free(copy);
}

/* One code point of a bracket class: an escape or a literal. */
static bool rx_class_char(rx_parser *ps, uint32_t *out)
{
    if (ps->p[ps->at] == '\\') {
        ps->at++;
        if (rx_escape_char(ps, out))
            return true;
        if (!ps->failed)
            rx_bad_escape(ps);
        return false;
    }
    *out = cpu_utf8_next(ps->p, ps->len, &ps->at);
    return true;
}

/* A bracket class; ps->at just past '['. */
static uint32_t rx_bracket(rx_parser *ps)
{
    bool negate = ps->at < ps->len && ps->p[ps->at] == '^';
    ps->at += negate;
    ps->n_tmp = 0;
    bool first = true;
    while (!ps->failed) {
        if (ps->at >= ps->len) {
            rx_fail(ps, "missing ]");
            break;
        }
        char c = ps->p[ps->at];
        if (c == ']' && !first) {
            ps->at++;
            break;
        }
        first = false;
        size_t mark = ps->n_tmp;
        bool neg = false;
        if (c == '[' && rx_posix_class(ps, &neg)) {
            if (neg)
                rx_negate_tail(ps, mark);
            continue;
        }
        if (c == '\\' && ps->at + 1 < ps->len && rx_perl_class(ps, ps->p[ps->at + 1], &neg)) {
            ps->at += 2;
            if (neg)
                rx_negate_tail(ps, mark);
            continue;
        }
        uint32_t lo, hi;
        if (!rx_class_char(ps, &lo))
            break;
        hi = lo;
        if (ps->at + 1 < ps->len && ps->p[ps->at] == '-' && ps->p[ps->at + 1] != ']') {
            ps->at++;
            if (!rx_class_char(ps, &hi))
                break;
            if (hi < lo) {
                rx_fail(ps, "invalid character class range");
                break;
            }
        }
        rx_tmp_add(ps, lo, hi);
    }
    return ps->failed ? 0 : rx_class_node(ps, negate);
}

static uint32_t rx_parse_alt(rx_parser *ps);

/* Flags after "(?" up to ')' or ':'; *OUT_SCOPED when ':' (a group). */
static void rx_flags(rx_parser *ps, bool *out_scoped)
{
    bool on = true, any = false;
    while (ps->at < ps->len && !ps->failed) {
        char c = ps->p[ps->at++];
        if (c == ')' || c == ':') {
            if (!any && c == ')')
                rx_fail(ps, "missing flags in (?)");
            *out_scoped = c == ':';
            return;
        }
        if (c == '-' && on) {
            on = false;
            continue;
        }
        any = true;
        if (c == 'i')
            ps->fold = on;
        else if (c == 's')
            ps->dotnl = on;
        else if (c == 'm')
            ps->multiline = on;
        else if (c == 'U')
            ; /* ungreedy: the same language */
        else
            rx_fail(ps, "invalid or unsupported group flag '%c'", c);
    }
    rx_fail(ps, "missing )");
}

static uint32_t rx_group(rx_parser *ps)
{
    if (++ps->depth > RX_MAX_DEPTH) {
        rx_fail(ps, "groups nested too deeply");
        return 0;
    }
    bool fold = ps->fold, dotnl = ps->dotnl, ml = ps->multiline;
    if (ps->at < ps->len && ps->p[ps->at] == '?') {
        ps->at++;
        char c = ps->at < ps->len ? ps->p[ps->at] : '\0';
        if (c == '=' || c == '!' || (c == '<' && ps->at + 1 < ps->len &&
                                     (ps->p[ps->at + 1] == '=' || ps->p[ps->at + 1] == '!'))) {
            rx_fail(ps, "lookaround groups are not supported (RE2 has none)");
            return 0;
        }
        if (c == 'P' || c == '<') { /* a named group */
            ps->at += c == 'P' ? 1 : 0;
            if (ps->at >= ps->len || ps->p[ps->at] != '<') {
                rx_fail(ps, "invalid named group");
                return 0;
            }
            while (ps->at < ps->len && ps->p[ps->at] != '>')
                ps->at++;
            if (ps->at >= ps->len) {
                rx_fail(ps, "invalid named group");
                return 0;
            }
            ps->at++;
        } else {
            bool scoped = false;
            rx_flags(ps, &scoped);
            if (!scoped) { /* (?i): for the rest of the enclosing group */
                ps->depth--;
                return rx_node(ps, (rn){.kind = RN_EMPTY});
            }
        }
    }
    uint32_t body = rx_parse_alt(ps);
    if (!ps->failed && (ps->at >= ps->len || ps->p[ps->at] != ')'))
        rx_fail(ps, "missing )");
    ps->at++;
    ps->fold = fold;
    ps->dotnl = dotnl;
    ps->multiline = ml;
    ps->depth--;
    return body;
}

static uint32_t rx_atom(rx_parser *ps)
{
    char c = ps->p[ps->at];
    ps->n_tmp = 0;
    if (c == '(') {
        ps->at++;
        return rx_group(ps);
    }
    if (c == '[') {
        ps->at++;
        return rx_bracket(ps);
    }
    if (c == '*' || c == '+' || c == '?') {
        rx_fail(ps, "missing argument to repetition operator %c", c);
        return 0;
    }
    ps->at++;
    if (c == '.') { /* everything, or everything but \n */
        if (ps->dotnl)
            rx_tmp_add(ps, 0, RX_MAX_CP);
        else
            rx_tmp_add(ps, '\n', '\n');
        bool fold = ps->fold;
        ps->fold = false;
        uint32_t n = rx_class_node(ps, !ps->dotnl);
        ps->fold = fold;
        return n;
    }
    if (c == '^' || c == '$')
        return rx_node(ps, (rn){.kind = RN_ASSERT,
                                .a = c == '^' ? (ps->multiline ? RX_LINE_BEGIN : RX_TEXT_BEGIN)
                                              : (ps->multiline ? RX_LINE_END : RX_TEXT_END)});
    if (c == '\\') {
        if (ps->at >= ps->len) {
            rx_fail(ps, "trailing \\");
            return 0;
        }
        char e = ps->p[ps->at];
        bool neg;
        static const char asserts[] = "bBAz";
        static const rx_assert kinds[] = {RX_WORD, RX_NOT_WORD, RX_TEXT_BEGIN, RX_TEXT_END};
        const char *k = e ? strchr(asserts, e) : NULL;
        if (k != NULL) {
            ps->at++;
            return rx_node(ps, (rn){.kind = RN_ASSERT, .a = (uint32_t)kinds[k - asserts]});
        }
        if (e == 'Q') { /* literal text up to \E */
            ps->at++;
            uint32_t *ids = NULL;
            size_t n = 0, cap = 0;
            while (ps->at < ps->len && !ps->failed) {
                if (ps->p[ps->at] == '\\' && ps->at + 1 < ps->len && ps->p[ps->at + 1] == 'E') {
                    ps->at += 2;
                    break;
                }
                uint32_t lit = rx_literal(ps, cpu_utf8_next(ps->p, ps->len, &ps->at));
                rx_push(ps, &ids, &n, &cap, lit);
            }
            uint32_t chain = ps->failed ? 0 : rx_chain(ps, RN_CAT, ids, n);
            free(ids);
            ps->quoted = chain;
            return chain;
        }
        ps->n_tmp = 0;
        if (rx_perl_class(ps, e, &neg)) {
            ps->at++;
            bool fold = ps->fold;
            ps->fold = false;
            uint32_t n = rx_class_node(ps, neg);
            ps->fold = fold;
            return n;
        }
        uint32_t cp;
        if (rx_escape_char(ps, &cp))
            return rx_literal(ps, cp);
        if (!ps->failed)
            rx_bad_escape(ps);
        return 0;
    }
    ps->at--;
    return rx_literal(ps, cpu_utf8_next(ps->p, ps->len, &ps->at));
}

/* {n}, {n,} or {n,m} at ps->at ('{'): true and the bounds, advancing;
 * false (nothing consumed) when the text is no repetition (then '{' is a
 * literal, as in RE2). */
static bool rx_counted(rx_parser *ps, int32_t *out_min, int32_t *out_max)
{
    size_t i = ps->at + 1;
    long lo = 0, hi;
    size_t d = 0;
    for (; i < ps->len && ps->p[i] >= '0' && ps->p[i] <= '9' && d < 8; i++, d++)
        lo = lo * 10 + (ps->p[i] - '0');
    if (d == 0 || i >= ps->len)
        return false;
    if (ps->p[i] == '}') {
        hi = lo;
    } else if (ps->p[i] == ',') {
        i++;
        size_t e = 0;
        hi = 0;
        for (; i < ps->len && ps->p[i] >= '0' && ps->p[i] <= '9' && e < 8; i++, e++)
            hi = hi * 10 + (ps->p[i] - '0');
        if (e == 0)
            hi = -1;
        if (i >= ps->len || ps->p[i] != '}')
            return false;
    } else {
        return false;
    }
    if (lo > RX_MAX_REPEAT || hi > RX_MAX_REPEAT || (hi >= 0 && hi < lo)) {
        rx_fail(ps, "bad repetition operator {%ld,%ld}", lo, hi);
        return true;
    }
    ps->at = i + 1;
    *out_min = (int32_t)lo;
    *out_max = (int32_t)hi;
    return true;
}

static uint32_t rx_repeat(rx_parser *ps)
{
    uint32_t a = rx_atom(ps);
    bool repeated = false;
    while (!ps->failed && ps->at < ps->len) {
        char c = ps->p[ps->at];
        int32_t lo = 0, hi = 0;
        if (c == '*' || c == '+' || c == '?') {
            ps->at++;
            lo = c == '+';
            hi = c == '?' ? 1 : -1;
        } else if (c == '{' && rx_counted(ps, &lo, &hi)) {
            if (ps->failed)
                break;
        } else {
            break;
        }
        if (repeated) {
            rx_fail(ps, "bad repetition operator: a repetition of a repetition");
            break;
        }
        repeated = true;
        if (ps->at < ps->len && ps->p[ps->at] == '?')
            ps->at++; /* lazy: the same language */
        if (a == ps->quoted && ps->nodes[a].kind == RN_CAT) {
            /* \Q..\E is a run of literals: the repetition takes the last */
            uint32_t last = a;
            while (ps->nodes[ps->nodes[last].b].kind == RN_CAT)
                last = ps->nodes[last].b;
            uint32_t rep = rx_node(ps, (rn){.kind = RN_REP, .a = ps->nodes[last].b, .min = lo,
                                            .max = hi});
            ps->nodes[last].b = rep;
            continue;
        }
        a = rx_node(ps, (rn){.kind = RN_REP, .a = a, .min = lo, .max = hi});
    }
    return a;
}

static uint32_t rx_parse_concat(rx_parser *ps)
{
    uint32_t *ids = NULL;
    size_t n = 0, cap = 0;
    while (!ps->failed && ps->at < ps->len && ps->p[ps->at] != '|' && ps->p[ps->at] != ')') {
        uint32_t a = rx_repeat(ps);
        if (!ps->failed && ps->nodes[a].kind != RN_EMPTY)
            rx_push(ps, &ids, &n, &cap, a);
    }
    uint32_t chain = rx_chain(ps, RN_CAT, ids, n);
    free(ids);
    return chain;
}

static uint32_t rx_parse_alt(rx_parser *ps)
{
    uint32_t *ids = NULL;
    size_t n = 0, cap = 0;
    rx_push(ps, &ids, &n, &cap, rx_parse_concat(ps));
    while (!ps->failed && ps->at < ps->len && ps->p[ps->at] == '|') {
        ps->at++;
        rx_push(ps, &ids, &n, &cap, rx_parse_concat(ps));
    }
    uint32_t chain = ps->failed ? 0 : rx_chain(ps, RN_ALT, ids, n);
    free(ids);
    return chain;
}

/* ---- the compiler -------------------------------------------------------------- */

typedef struct rx_compiler {
    rx_parser *ps;
    rx_inst *insts;
    size_t n, cap;
} rx_compiler;

static uint32_t rx_emit(rx_compiler *c, rx_inst in)
{
    if (c->ps->failed)
        return 0;
    if (c->n >= RX_MAX_INSTS) {
        rx_fail(c->ps, "pattern too large (over %d instructions)", RX_MAX_INSTS);
        return 0;
    }
    if (!rx_grow((void **)&c->insts, &c->cap, c->n + 1, sizeof(rx_inst))) {
        rx_fail(c->ps, "out of memory");
        return 0;
    }
    c->insts[c->n] = in;
    return (uint32_t)c->n++;
}

/* Emits node N; explicit recursion bounded by the tree's depth, which the
 * parser bounds (groups) or keeps left-leaning (concatenation). */
static void rx_gen(rx_compiler *c, uint32_t n, int depth)
{
    if (c->ps->failed)
        return;
    if (depth > 4 * RX_MAX_DEPTH + 64) {
        rx_fail(c->ps, "pattern nested too deeply");
        return;
    }
    const rn nd = c->ps->nodes[n];
    switch (nd.kind) {
    case RN_EMPTY:
        return;
    case RN_CLASS: {
        rx_inst in = {.op = RX_CLASS, .x = nd.a, .y = nd.b};
        for (uint32_t r = nd.a; r < nd.b; r++)
            for (uint32_t cp = c->ps->ranges[r].lo; cp <= c->ps->ranges[r].hi && cp < 128; cp++)
                in.ascii[cp >> 6] |= 1ull << (cp & 63);
        rx_emit(c, in);
        return;
    }
    case RN_ASSERT:
        rx_emit(c, (rx_inst){.op = RX_ASSERT, .kind = (uint8_t)nd.a});
        return;
    case RN_CAT: /* a right-leaning chain: walked in a loop */
        for (uint32_t k = n;;) {
            const rn cur = c->ps->nodes[k];
            if (cur.kind != RN_CAT) {
                rx_gen(c, k, depth + 1);
                return;
            }
            rx_gen(c, cur.a, depth + 1);
            k = cur.b;
        }
    case RN_ALT: { /* a split to each alternative in turn; each jumps to the end */
        uint32_t *jmps = NULL;
        size_t n_jmp = 0, cap = 0;
        uint32_t k = n;
        while (c->ps->nodes[k].kind == RN_ALT && !c->ps->failed) {
            const rn cur = c->ps->nodes[k];
            uint32_t split = rx_emit(c, (rx_inst){.op = RX_SPLIT});
            if (c->ps->failed)
                break;
            c->insts[split].x = (uint32_t)c->n;
            rx_gen(c, cur.a, depth + 1);
            rx_push(c->ps, &jmps, &n_jmp, &cap, rx_emit(c, (rx_inst){.op = RX_JMP}));
            if (c->ps->failed)
                break;
            c->insts[split].y = (uint32_t)c->n;
            k = cur.b;
        }
        rx_gen(c, k, depth + 1);
        for (size_t i = 0; i < n_jmp && !c->ps->failed; i++)
            c->insts[jmps[i]].x = (uint32_t)c->n;
        free(jmps);
        return;
    }
    case RN_REP: {
        for (int32_t i = 0; i < nd.min && !c->ps->failed; i++)
            rx_gen(c, nd.a, depth + 1);
        if (nd.max < 0) {
            uint32_t split = rx_emit(c, (rx_inst){.op = RX_SPLIT});
            if (c->ps->failed)
                return;
            c->insts[split].x = (uint32_t)c->n;
            rx_gen(c, nd.a, depth + 1);
            rx_emit(c, (rx_inst){.op = RX_JMP, .x = split});
            if (!c->ps->failed)
                c->insts[split].y = (uint32_t)c->n;
            return;
        }
        size_t first = c->n;
        uint32_t n_opt = (uint32_t)(nd.max - nd.min);
        for (uint32_t i = 0; i < n_opt && !c->ps->failed; i++) {
            uint32_t split = rx_emit(c, (rx_inst){.op = RX_SPLIT});
            if (c->ps->failed)
                return;
            c->insts[split].x = (uint32_t)c->n;
            rx_gen(c, nd.a, depth + 1);
        }
        /* every optional copy's split skips to the end */
        for (size_t i = first; i < c->n && !c->ps->failed; i++)
            if (c->insts[i].op == RX_SPLIT && c->insts[i].y == 0 && i != 0)
                c->insts[i].y = (uint32_t)c->n;
        return;
    }
    }
}

/* The classes and the match PC reaches without reading, in context CTX
 * (RX_CONTEXTS: none, and *OUT_READS says whether an assertion was met),
 * appended to *PCS (*N of *CAP). MARK (per pc) and STACK (2n + 2) are
 * scratch; GEN tells this walk's marks from earlier ones. False when out
 * of memory or past RX_MEMO_MAX entries. */
static bool rx_closure(const cpu_regex *re, uint32_t pc, unsigned ctx, bool *out_reads,
                       uint32_t **pcs, size_t *n, size_t *cap, uint32_t *mark, uint32_t gen,
                       uint32_t *stack)
{
    size_t sp = 0;
    stack[sp++] = pc;
    while (sp > 0) {
        pc = stack[--sp];
        if (mark[pc] == gen)
            continue;
        mark[pc] = gen;
        const rx_inst *in = &re->insts[pc];
        switch (in->op) {
        case RX_JMP:
            stack[sp++] = in->x;
            break;
        case RX_SPLIT:
            stack[sp++] = in->y;
            stack[sp++] = in->x;
            break;
        case RX_ASSERT:
            *out_reads = true;
            if (ctx < RX_CONTEXTS && rx_assert_holds((rx_assert)in->kind, ctx))
                stack[sp++] = pc + 1;
            break;
        default: /* a class or the match */
            if (*n >= RX_MEMO_MAX || !rx_grow((void **)pcs, cap, *n + 1, sizeof **pcs))
                return false;
            (*pcs)[(*n)++] = pc;
            break;
        }
    }
    return true;
}

/* RE's precomputed lists (struct cpu_regex); none when too big. */
static void rx_memoize(cpu_regex *re)
{
    size_t n = re->n_insts;
    uint32_t *mark = calloc(n, sizeof *mark), *stack = malloc((2 * n + 2) * sizeof *stack);
    re->clos_at = malloc(n * sizeof *re->clos_at);
    re->clos_ctx = calloc(n, 1);
    uint32_t *off = NULL, *pcs = NULL, gen = 0;
    size_t n_off = 0, cap_off = 0, n_pcs = 0, cap_pcs = 0;
    bool ok = mark && stack && re->clos_at && re->clos_ctx;
    for (size_t pc = 0; ok && pc < n; pc++) {
        re->clos_at[pc] = UINT32_MAX;
        bool target = pc == 0 || re->insts[pc - 1].op == RX_CLASS;
        if (!target)
            continue;
        bool reads = false;
        size_t first = n_pcs;
        ok = rx_closure(re, (uint32_t)pc, RX_CONTEXTS, &reads, &pcs, &n_pcs, &cap_pcs, mark,
                        ++gen, stack);
        re->clos_at[pc] = (uint32_t)n_off;
        re->clos_ctx[pc] = reads;
        if (reads) { /* again, once per context */
            n_pcs = first;
            for (unsigned c = 0; ok && c < RX_CONTEXTS; c++) {
                ok = rx_grow((void **)&off, &cap_off, n_off + 1, sizeof *off);
                if (ok)
                    off[n_off++] = (uint32_t)n_pcs;
                ok = ok && rx_closure(re, (uint32_t)pc, c, &reads, &pcs, &n_pcs, &cap_pcs, mark,
                                      ++gen, stack);
            }
        } else {
            ok = ok && rx_grow((void **)&off, &cap_off, n_off + 1, sizeof *off);
            if (ok)
                off[n_off++] = (uint32_t)first;
        }
    }
    ok = ok && rx_grow((void **)&off, &cap_off, n_off + 1, sizeof *off);
    if (ok)
        off[n_off++] = (uint32_t)n_pcs;
    free(mark);
    free(stack);
    if (ok) {
        re->clos_off = off;
        re->clos_pcs = pcs ? pcs : malloc(sizeof *pcs);
        ok = re->clos_pcs != NULL;
    }
    if (!ok) { /* the search walks the splits itself */
        free(off);
        free(pcs);
        free(re->clos_at);
        free(re->clos_ctx);
        re->clos_at = NULL;
        re->clos_ctx = NULL;
        re->clos_off = NULL;
        re->clos_pcs = NULL;
    }
}

/* Whether class node N of PS holds only ASCII word characters; its bits
 * into SET. */
static bool rx_word_class(const rx_parser *ps, const rn *n, uint64_t set[2])
{
    set[0] = set[1] = 0;
    for (uint32_t r = n->a; r < n->b; r++)
        for (uint32_t cp = ps->ranges[r].lo; cp <= ps->ranges[r].hi; cp++) {
            bool word = (cp >= '0' && cp <= '9') || (cp >= 'A' && cp <= 'Z') ||
                        (cp >= 'a' && cp <= 'z') || cp == '_';
            if (!word)
                return false;
            set[cp >> 6] |= 1ull << (cp & 63);
        }
    return n->a < n->b;
}

/* Sets RE's word_run when ROOT is \b, the same word class K times and
 * then repeated without bound (or K >= 1 times), \b. */
static void rx_word_run_detect(cpu_regex *re, const rx_parser *ps, uint32_t root)
{
    const rn *items[64];
    size_t n = 0;
    for (uint32_t k = root;; k = ps->nodes[k].b) {
        const rn *nd = &ps->nodes[k];
        if (n == sizeof items / sizeof items[0])
            return;
        if (nd->kind != RN_CAT) {
            items[n++] = nd;
            break;
        }
        items[n++] = &ps->nodes[nd->a];
    }
    if (n < 3 || items[0]->kind != RN_ASSERT || items[0]->a != RX_WORD ||
        items[n - 1]->kind != RN_ASSERT || items[n - 1]->a != RX_WORD)
        return;
    uint64_t set[2] = {0, 0}, each[2];
    size_t min = 0;
    for (size_t i = 1; i + 1 < n; i++) {
        const rn *c = items[i];
        bool last = i + 2 == n;
        if (c->kind == RN_REP && last && c->max < 0) {
            min += (size_t)c->min;
            c = &ps->nodes[c->a];
        } else if (c->kind == RN_CLASS) {
            min++;
        } else {
            return;
        }
        if (c->kind != RN_CLASS || !rx_word_class(ps, c, each))
            return;
        if (i > 1 && (each[0] != set[0] || each[1] != set[1]))
            return; /* one class throughout */
        set[0] = each[0];
        set[1] = each[1];
    }
    /* the last item before \b must be the unbounded repetition */
    if (items[n - 2]->kind != RN_REP || min == 0)
        return;
    re->word_run = true;
    re->word_min = min;
    re->word_set[0] = set[0];
    re->word_set[1] = set[1];
}

cpu_regex *cpu_regex_compile(const char *pattern, size_t len, char *err, size_t err_size)
{
    rx_parser ps = {.p = pattern, .len = len, .quoted = UINT32_MAX, .err = err, .err_size = err_size};
    if (err_size > 0)
        err[0] = '\0';
    uint32_t root = rx_parse_alt(&ps);
    if (!ps.failed && ps.at < ps.len)
        rx_fail(&ps, "unexpected )");
    rx_compiler c = {.ps = &ps};
    /* instruction 0 is a jump to the start, so that no split of the
     * program is at 0 (rx_gen's patching reads 0 as "not yet set") */
    rx_emit(&c, (rx_inst){.op = RX_JMP, .x = 1});
    if (!ps.failed)
        rx_gen(&c, root, 0);
    rx_emit(&c, (rx_inst){.op = RX_MATCH});
    cpu_regex *re = ps.failed ? NULL : calloc(1, sizeof *re);
    if (re == NULL) {
        rx_fail(&ps, "out of memory");
        free(c.insts);
        free(ps.ranges);
    } else {
        re->insts = c.insts;
        re->n_insts = c.n;
        re->ranges = ps.ranges;
        re->n_ranges = ps.n_ranges;
        const rn *top = &ps.nodes[root];
        if (top->kind == RN_REP && top->min == 1 && top->max < 0 &&
            ps.nodes[top->a].kind == RN_CLASS) {
            /* JMP 1; CLASS; SPLIT 1, 3; MATCH */
            re->class_run = true;
            re->class = c.insts[1];
        }
        rx_word_run_detect(re, &ps, root);
        rx_memoize(re);
    }
    free(ps.nodes);
    free(ps.tmp);
    if (ps.ctype != (locale_t)0)
        freelocale(ps.ctype);
    return re;
}

void cpu_regex_free(cpu_regex *re)
{
    if (re == NULL)
        return;
    free(re->insts);
    free(re->ranges);
    free(re->clos_at);
    free(re->clos_ctx);
    free(re->clos_off);
    free(re->clos_pcs);
    free(re);
}

/* ---- the search ------------------------------------------------------------------ */

static bool rx_class_has(const cpu_regex *re, const rx_inst *in, uint32_t cp)
{
    if (cp < 128)
        return in->ascii[cp >> 6] >> (cp & 63) & 1;
    uint32_t lo = in->x, hi = in->y;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (re->ranges[mid].hi < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < in->y && re->ranges[lo].lo <= cp;
}

typedef struct rx_thread {
    uint32_t pc;
    size_t start;
} rx_thread;

/* The live instructions at one position: a sparse set, in order of
 * insertion (of start). */
typedef struct rx_list {
    rx_thread *t;
    uint32_t *index; /* pc -> its place in t, when present */
    size_t n;
} rx_list;

typedef struct rx_run {
    const cpu_regex *re;
    const char *text;
    size_t len;
    uint32_t *stack;
    bool found;
    size_t best_start, best_end;
} rx_run;

static bool rx_has(const rx_list *l, uint32_t pc)
{
    uint32_t i = l->index[pc];
    return i < l->n && l->t[i].pc == pc;
}

/* Adds PC with START at byte AT to L with every instruction it reaches
 * without reading (splits, jumps, assertions that hold there); a match
 * reached is recorded when it is leftmost, or as long and longer. */
static void rx_add(rx_run *r, rx_list *l, uint32_t pc, size_t start, size_t at)
{
    size_t sp = 0;
    r->stack[sp++] = pc;
    while (sp > 0) {
        pc = r->stack[--sp];
        if (rx_has(l, pc))
            continue;
        l->index[pc] = (uint32_t)l->n;
        l->t[l->n++] = (rx_thread){pc, start};
        const rx_inst *in = &r->re->insts[pc];
        switch (in->op) {
        case RX_JMP:
            r->stack[sp++] = in->x;
            break;
        case RX_SPLIT:
            r->stack[sp++] = in->y;
            r->stack[sp++] = in->x;
            break;
        case RX_ASSERT:
            if (rx_assert_holds((rx_assert)in->kind, rx_context(r->text, r->len, at)))
                r->stack[sp++] = pc + 1;
            break;
        case RX_MATCH:
            if (!r->found || start < r->best_start ||
                (start == r->best_start && at > r->best_end)) {
                r->found = true;
                r->best_start = start;
                r->best_end = at;
            }
            break;
        default:
            break;
        }
    }
}

/* rx_add through the precomputed lists: CTX is AT's context. */
static void rx_add_memo(rx_run *r, rx_list *l, uint32_t pc, size_t start, size_t at,
                        unsigned ctx)
{
    const cpu_regex *re = r->re;
    uint32_t k = re->clos_at[pc] + (re->clos_ctx[pc] ? ctx : 0);
    for (uint32_t i = re->clos_off[k]; i < re->clos_off[k + 1]; i++) {
        uint32_t p = re->clos_pcs[i];
        if (rx_has(l, p))
            continue;
        l->index[p] = (uint32_t)l->n;
        l->t[l->n++] = (rx_thread){p, start};
        if (re->insts[p].op == RX_MATCH &&
            (!r->found || start < r->best_start || (start == r->best_start && at > r->best_end))) {
            r->found = true;
            r->best_start = start;
            r->best_end = at;
        }
    }
}

void cpu_regex_scratch_free(cpu_regex_scratch *scratch)
{
    if (scratch != NULL) {
        free(scratch->mem);
        scratch->mem = NULL;
        scratch->bytes = 0;
    }
}

/* rx_exec for a class repeated once or more: the first code point of the
 * class from FROM (at FROM when ANCHORED) and every one of it after. */
static int rx_class_run(const cpu_regex *re, const char *text, size_t len, size_t from,
                        bool anchored, size_t *out_begin, size_t *out_end)
{
    size_t at = from, begin = len + 1;
    while (at < len) {
        size_t next = at;
        unsigned cp = cpu_utf8_next(text, len, &next);
        if (rx_class_has(re, &re->class, cp)) {
            begin = at;
            at = next;
            break;
        }
        if (anchored)
            return 0;
        at = next;
    }
    if (begin > len)
        return 0;
    while (at < len) {
        size_t next = at;
        if (!rx_class_has(re, &re->class, cpu_utf8_next(text, len, &next)))
            break;
        at = next;
    }
    *out_begin = begin;
    *out_end = at;
    return 1;
}

/* The leftmost-longest match from FROM; ANCHORED: starting at FROM only. */
/* rx_exec for \b, a word class at least word_min times, \b: the first
 * whole run of word characters from FROM (at FROM when ANCHORED) whose
 * every byte is in the class and that is long enough. A match starts
 * where a word starts and ends where it ends: inside a run of word
 * characters there is no boundary. */
static int rx_word_run(const cpu_regex *re, const char *text, size_t len, size_t from,
                       bool anchored, size_t *out_begin, size_t *out_end)
{
    size_t at = from;
    while (at < len) {
        if (!rx_word_byte(text, len, at) || (at > 0 && rx_word_byte(text, len, at - 1))) {
            if (anchored)
                return 0;
            at++;
            continue;
        }
        size_t end = at;
        bool all = true;
        for (; end < len && rx_word_byte(text, len, end); end++) {
            unsigned char c = (unsigned char)text[end];
            all = all && (re->word_set[c >> 6] >> (c & 63) & 1);
        }
        if (all && end - at >= re->word_min) {
            *out_begin = at;
            *out_end = end;
            return 1;
        }
        if (anchored)
            return 0;
        at = end;
    }
    return 0;
}

static int rx_exec(const cpu_regex *re, const char *text, size_t len, size_t from, bool anchored,
                   size_t *out_begin, size_t *out_end, cpu_regex_scratch *scratch)
{
    if (re->class_run)
        return rx_class_run(re, text, len, from, anchored, out_begin, out_end);
    if (re->word_run)
        return rx_word_run(re, text, len, from, anchored, out_begin, out_end);
    size_t n = re->n_insts;
    /* each instruction is expanded at most once a list and pushes at most
     * two successors: the stack holds 2n + 1 at most. Memory kept from an
     * earlier search needs no clearing: a list's index is trusted only
     * where it points below the list's length at an entry of this pc, which
     * this search wrote. (Zeroed when made, for tools that track reads of
     * memory never written.) */
    size_t bytes = 2 * n * (sizeof(rx_thread) + sizeof(uint32_t)) + (2 * n + 2) * sizeof(uint32_t);
    cpu_regex_scratch own = {0};
    if (scratch == NULL)
        scratch = &own;
    if (scratch->bytes < bytes) {
        free(scratch->mem);
        scratch->mem = calloc(1, bytes);
        scratch->bytes = scratch->mem ? bytes : 0;
        if (scratch->mem == NULL)
            return -1;
    }
    void *mem = scratch->mem;
    rx_list a = {.t = mem}, b = {.t = a.t + n};
    a.index = (uint32_t *)(b.t + n);
    b.index = a.index + n;
    rx_run r = {.re = re, .text = text, .len = len, .stack = b.index + n};
    rx_list *cl = &a, *nl = &b;
    size_t at = from;
    bool memo = re->clos_pcs != NULL;
    unsigned ctx = memo ? rx_context(text, len, at) : 0;
    for (;;) {
        if (!r.found && (!anchored || at == from)) {
            if (memo)
                rx_add_memo(&r, cl, 0, at, at, ctx);
            else
                rx_add(&r, cl, 0, at, at);
        }
        if (cl->n == 0 && (r.found || anchored || at >= len))
            break;
        if (at >= len)
            break;
        size_t next = at;
        uint32_t cp = cpu_utf8_next(text, len, &next);
        nl->n = 0;
        ctx = memo ? rx_context(text, len, next) : 0;
        for (size_t i = 0; i < cl->n; i++) {
            const rx_thread *t = &cl->t[i];
            if (r.found && t->start > r.best_start)
                break; /* (the list is in order of start) */
            const rx_inst *in = &re->insts[t->pc];
            if (in->op != RX_CLASS || !rx_class_has(re, in, cp))
                continue;
            if (memo)
                rx_add_memo(&r, nl, t->pc + 1, t->start, next, ctx);
            else
                rx_add(&r, nl, t->pc + 1, t->start, next);
        }
        rx_list *tmp = cl;
        cl = nl;
        nl = tmp;
        at = next;
    }
    free(own.mem);
    if (!r.found)
        return 0;
    *out_begin = r.best_start;
    *out_end = r.best_end;
    return 1;
}

int cpu_regex_full_match(const cpu_regex *re, const char *text, size_t len,
                         cpu_regex_scratch *scratch)
{
    size_t b, e;
    int got = rx_exec(re, text, len, 0, true, &b, &e, scratch);
    return got < 0 ? -1 : got == 1 && e == len;
}

int cpu_regex_search(const cpu_regex *re, const char *text, size_t len, size_t from,
                     size_t *out_begin, size_t *out_end, cpu_regex_scratch *scratch)
{
    if (from > len)
        return 0;
    return rx_exec(re, text, len, from, false, out_begin, out_end, scratch);
}
