/* The cpu module's regular expressions (modules/cpu/regex.c), compiled in
 * and tested on their own: 1500 generated cases (cases.h: random patterns
 * whose language Python's re shares, their full match and leftmost-longest
 * match found by brute force), hand-written cases for what those cannot
 * cover (anchors, word boundaries, flags, escapes, searches from an
 * offset), the refusals, and patterns a backtracking engine takes
 * exponential time on. One CTest test per group. */
#define _GNU_SOURCE /* regex.c: newlocale, towlower_l */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "regex.c"

typedef struct rx_case {
    const char *pattern, *text;
    int full;
    long begin, end;
} rx_case;

#include "cases.h"

static int failures;
/* one scratch for every search of the generated cases: memory kept from a
 * search of another pattern must not change an answer */
static cpu_regex_scratch shared;

#define CHECK(cond, ...)                                 \
    do {                                                 \
        if (!(cond)) {                                   \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                \
            fputc('\n', stderr);                         \
            failures++;                                  \
        }                                                \
    } while (0)

static cpu_regex *compile_ok(const char *p)
{
    char err[256];
    cpu_regex *re = cpu_regex_compile(p, strlen(p), err, sizeof err);
    CHECK(re != NULL, "pattern '%s' refused: %s", p, err);
    return re;
}

/* The match from FROM as [b, e), or b = e = -1. */
static void search(const cpu_regex *re, const char *t, size_t from, long *b, long *e)
{
    size_t sb = 0, se = 0;
    int got = cpu_regex_search(re, t, strlen(t), from, &sb, &se, &shared);
    *b = got == 1 ? (long)sb : -1;
    *e = got == 1 ? (long)se : -1;
}

static void test_generated(void)
{
    size_t n = sizeof rx_cases / sizeof rx_cases[0];
    for (size_t i = 0; i < n; i++) {
        const rx_case *c = &rx_cases[i];
        cpu_regex *re = compile_ok(c->pattern);
        if (re == NULL)
            continue;
        int full = cpu_regex_full_match(re, c->text, strlen(c->text), &shared);
        CHECK(full == c->full, "full match of '%s' on '%s': %d, expected %d", c->pattern,
              c->text, full, c->full);
        long b, e;
        search(re, c->text, 0, &b, &e);
        CHECK(b == c->begin && e == c->end, "search '%s' in '%s': [%ld, %ld), expected [%ld, %ld)",
              c->pattern, c->text, b, e, c->begin, c->end);
        cpu_regex_free(re);
    }
    printf("%zu generated cases\n", n);
}

static const struct {
    const char *pattern, *text;
    size_t from;
    long begin, end;
} hand[] = {
    {"[a-zA-Z0-9_]+", "Hello, world_1!", 0, 0, 5},
    {"[a-zA-Z0-9_]+", "Hello, world_1!", 5, 7, 14},
    {"[a-zA-Z0-9_]+", "!!!", 0, -1, -1},
    {"^a", "aa", 1, -1, -1},        /* ^ is the text's start, not FROM */
    {"^a", "aa", 0, 0, 1},
    {"a$", "aa", 0, 1, 2},
    {"a$", "a\n", 0, -1, -1},       /* RE2's $ without m: the text's end only */
    {"(?m)a$", "a\nb", 0, 0, 1},
    {"(?m)^b", "a\nb", 0, 2, 3},
    {"\\ba", "ba a", 1, 3, 4},      /* \b reads the text before FROM */
    {"\\Ba", "ba a", 0, 1, 2},
    {"\\bfoo\\b", "foobar foo", 0, 7, 10},
    {"\\Afoo", "xfoo", 0, -1, -1},
    {"foo\\z", "foo\n", 0, -1, -1},
    {"a|ab|abc", "xabcd", 0, 1, 4}, /* longest, not first */
    {"(a|ab)(c|bcd)", "abcd", 0, 0, 4},
    {"a*", "bbb", 0, 0, 0},         /* an empty match where it starts */
    {"x*", "", 0, 0, 0},
    {"(?i)hello", "say HeLLo", 0, 4, 9},
    {"(?i)[^a]", "Ab", 0, 1, 2},
    {"(?i)\xc3\xa9t\xc3\xa9", "un \xc3\x89T\xc3\x89", 0, 3, 8},   /* (?i)ete matches ETE, accented */
    {"(?i)[\xc3\xa0-\xc3\xbf]+", "x\xc3\x80\xc3\x89y", 0, 1, 5}, /* a-acute range, capitals */
    {"(?i)\xcf\x89", "\xce\xa9", 0, 0, 2},                          /* omega, capital */
    {"(?i)[^\xc3\xa9]", "\xc3\x89x", 0, 2, 3},                      /* neither case of e-acute */
    {"(?i:a)b", "AB Ab", 0, 3, 5},
    {"(?i)a(?-i)b", "AB Ab", 0, 3, 5},
    {"(?s).+", "a\nb", 0, 0, 3},
    {".+", "a\nb", 0, 0, 1},
    {"\\x41\\x{e9}", "A\xc3\xa9", 0, 0, 3},
    {"\\Qa.b\\E+", "a.bb axb", 0, 0, 4},
    {"[[:^digit:]]+", "12ab3", 0, 2, 4},
    {"[\\D]", "1a", 0, 1, 2},
    {"[^\\s]+", " \t ab ", 0, 3, 5},
    {"\\s+", "a \t\n\f\rb", 0, 1, 6},
    {"\\d{3}-\\d{4}", "call 555-1234 now", 0, 5, 13},
    {"(?P<word>\\w+)@(?<host>\\w+)\\.com", "mail joe@site.com.", 0, 5, 17},
    {"[\xce\xb1-\xcf\x89]+", "x\xce\xb1\xce\xb2\xcf\x89y", 0, 1, 7}, /* Greek, by code point */
    {".", "\xff", 0, 0, 1},         /* an invalid byte is one U+FFFD */
    /* one class repeated: searched by a scan (skl2onnx's tokenexp) */
    {"[a-z]+", "12 ab3", 0, 3, 5},
    {"[a-z]+", "12 ab3", 4, 4, 5},
    {"[a-z]+", "1234", 0, -1, -1},
    {"[a-z]+", "", 0, -1, -1},
    {"(?i)[a-z]+", "xyZW1", 0, 0, 4},
    {"[^ ]+", " \xc3\xa9t\xc3\xa9 x", 0, 1, 6},
    {"(\\d)+", "ab 42", 0, 3, 5},
    /* \b, a word class, \b: whole word runs, searched by a scan */
    {"\\b\\w+\\b", "  foo_1, bar", 0, 2, 7},
    {"\\b\\w+\\b", "  foo_1, bar", 3, 9, 12},   /* from inside a word: the next one */
    {"\\b\\w\\w+\\b", "a bc d", 0, 2, 4},        /* at least two */
    {"\\b[a-z]+\\b", "Ab cd", 0, 3, 5},            /* every character in the class */
    {"\\b[a-z]+\\b", "ab\xc3\xa9 cd", 0, 0, 2},  /* a non-ASCII letter ends a word */
    {"(?i)\\b[a-z]{2,}\\b", "x Yz", 0, 2, 4},
    {"\\b\\w+\\b", "!?", 0, -1, -1},
    {"a{,2}", "a{,2}", 0, 0, 5},    /* not a repetition: literal */
    {"a{2}{", "aa{", 0, 0, 3},
};

static void test_hand(void)
{
    for (size_t i = 0; i < sizeof hand / sizeof hand[0]; i++) {
        cpu_regex *re = compile_ok(hand[i].pattern);
        if (re == NULL)
            continue;
        long b, e;
        search(re, hand[i].text, hand[i].from, &b, &e);
        CHECK(b == hand[i].begin && e == hand[i].end,
              "search '%s' in '%s' from %zu: [%ld, %ld), expected [%ld, %ld)", hand[i].pattern,
              hand[i].text, hand[i].from, b, e, hand[i].begin, hand[i].end);
        cpu_regex_free(re);
    }
    static const struct {
        const char *pattern, *text;
        int full;
    } full[] = {
        {"[a-z]+@[a-z]+\\.com", "joe@site.com", 1}, {"[a-z]+@[a-z]+\\.com", "joe@site.com ", 0},
        {"", "", 1},                                 {"", "a", 0},
        {"^abc$", "abc", 1},                         {"(?i)ABC", "abc", 1},
        {"a{3}", "aaa", 1},                          {"a{3}", "aaaa", 0},
        {"a{2,}", "aaaaaa", 1},                      {"(ab|cd){1,3}", "abcdab", 1},
        {"(ab|cd){1,3}", "abcdabcd", 0},             {"\xc3\xa9+", "\xc3\xa9\xc3\xa9", 1},
        {".", "\xc3\xa9", 1},                        {"..", "\xc3\xa9", 0},
        {"[a-z]+", "abc", 1},                        {"[a-z]+", "ab1", 0},
        {"[a-z]+", "", 0},                           {"[0-9]+", "1a", 0},
        {"\\b\\w+\\b", "word_1", 1},                 {"\\b\\w+\\b", "two words", 0},
    };
    for (size_t i = 0; i < sizeof full / sizeof full[0]; i++) {
        cpu_regex *re = compile_ok(full[i].pattern);
        if (re == NULL)
            continue;
        int got = cpu_regex_full_match(re, full[i].text, strlen(full[i].text), NULL);
        CHECK(got == full[i].full, "full match '%s' on '%s': %d", full[i].pattern, full[i].text,
              got);
        cpu_regex_free(re);
    }
    size_t chars;
    CHECK(cpu_utf8_valid("a\xc3\xa9", 3, &chars) && chars == 2, "utf8 valid");
    CHECK(!cpu_utf8_valid("a\xc3", 2, &chars), "utf8 truncated");
    CHECK(!cpu_utf8_valid("\xed\xa0\x80", 3, &chars), "utf8 surrogate");
    CHECK(!cpu_utf8_valid("\xc0\x80", 2, &chars), "utf8 overlong");
    CHECK(cpu_utf8_valid("\xef\xbf\xbd", 3, &chars) && chars == 1, "utf8 U+FFFD itself");
}

static void test_refused(void)
{
    static const struct {
        const char *pattern, *why;
    } bad[] = {
        {"(", "missing )"},
        {"a)", "unexpected )"},
        {"a**", "repetition"},
        {"*a", "missing argument"},
        {"\\pL", "Unicode classes"},
        {"\\p{Greek}", "Unicode classes"},
        {"(a)\\1", "backreferences"},
        {"(?=a)", "lookaround"},
        {"(?<!a)b", "lookaround"},
        {"[a", "missing ]"},
        {"[b-a]", "range"},
        {"a{2,1}", "repetition"},
        {"a{1001}", "repetition"},
        {"\\", "trailing"},
        {"\\q", "invalid escape"},
        {"[[:bogus:]]", "invalid character class"},
        {"(?z)", "flag"},
        {"\\x{110000}", "invalid escape"},
        {"((((a{100}){100}){100}){100})", "too large"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[256] = "";
        cpu_regex *re = cpu_regex_compile(bad[i].pattern, strlen(bad[i].pattern), err, sizeof err);
        CHECK(re == NULL, "pattern '%s' compiled", bad[i].pattern);
        CHECK(re != NULL || strstr(err, bad[i].why) != NULL, "pattern '%s': '%s' lacks '%s'",
              bad[i].pattern, err, bad[i].why);
        cpu_regex_free(re);
    }
    /* nesting a thousand groups deep is fine; deeper is refused */
    char deep[4100];
    size_t n = 0;
    for (int i = 0; i < 1500; i++)
        deep[n++] = '(';
    deep[n++] = 'a';
    for (int i = 0; i < 1500; i++)
        deep[n++] = ')';
    char err[256];
    cpu_regex *re = cpu_regex_compile(deep, n, err, sizeof err);
    CHECK(re == NULL && strstr(err, "nested") != NULL, "1500 nested groups: %s",
          re ? "compiled" : err);
    cpu_regex_free(re);
}

/* Patterns that take a backtracking engine exponential time finish at
 * once here (the test would time out otherwise). */
static void test_linear(void)
{
    size_t n = 20000;
    char *text = malloc(n + 2);
    memset(text, 'a', n);
    text[n] = '\0';
    cpu_regex *re = compile_ok("(a*)*b");
    if (re != NULL) {
        long b, e;
        search(re, text, 0, &b, &e);
        CHECK(b == -1, "(a*)*b found a match in a's");
        CHECK(cpu_regex_full_match(re, text, n, NULL) == 0, "(a*)*b full");
        cpu_regex_free(re);
    }
    re = compile_ok("(a|aa)+$");
    if (re != NULL) {
        CHECK(cpu_regex_full_match(re, text, n, NULL) == 1, "(a|aa)+$ full");
        cpu_regex_free(re);
    }
    /* a long literal and a long alternation compile without deep recursion */
    char *lit = malloc(60001);
    for (size_t i = 0; i < 40000; i++)
        lit[i] = i % 2 ? '|' : 'x';
    lit[39999] = '\0'; /* 20000 alternatives */
    re = compile_ok(lit);
    if (re != NULL) {
        CHECK(cpu_regex_full_match(re, "x", 1, NULL) == 1, "long alternation");
        cpu_regex_free(re);
    }
    memset(lit, 'y', 60000);
    lit[60000] = '\0';
    re = compile_ok(lit);
    if (re != NULL) {
        CHECK(cpu_regex_full_match(re, lit, 60000, NULL) == 1, "long literal");
        cpu_regex_free(re);
    }
    free(lit);
    free(text);
}

int main(int argc, char **argv)
{
    const char *group = argc > 1 ? argv[1] : "all";
    bool all = strcmp(group, "all") == 0;
    if (all || strcmp(group, "generated") == 0)
        test_generated();
    if (all || strcmp(group, "hand") == 0)
        test_hand();
    if (all || strcmp(group, "refused") == 0)
        test_refused();
    if (all || strcmp(group, "linear") == 0)
        test_linear();
    cpu_regex_scratch_free(&shared);
    if (failures)
        fprintf(stderr, "%d failures\n", failures);
    return failures ? 1 : 0;
}
