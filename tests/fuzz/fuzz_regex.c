/* fuzz_regex.c — the cpu module's regular expressions (modules/cpu/regex.c,
 * compiled in): each input is a pattern, a NUL, and a text. A pattern that
 * compiles is run on the text as com.microsoft Tokenizer runs it (every
 * leftmost-longest match, on from the end of each, one character on after
 * an empty one) and as RegexFullMatch does, and the answers are checked
 * against each other: a match lies inside the text and starts where the
 * search may start it; when the whole text matches, the search from 0
 * finds exactly the whole text; the fast paths (the scans of a one-class
 * pattern and of word runs, the precomputed lists of what each step
 * reaches) answer as the plain NFA does. Any crash, hang, leak or sanitizer report is a finding
 * too. */
#define _GNU_SOURCE /* regex.c: newlocale, towlower_l */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../modules/cpu/regex.c"

static void fz_fail(const char *what)
{
    fprintf(stderr, "fuzz_regex: %s\n", what);
    abort();
}

/* The matches of RE over TEXT in turn, as a tokenizer walks them; OTHER
 * (the same pattern searched the plain way) must find each one too. */
static void fz_walk(const cpu_regex *re, const cpu_regex *other, const char *text, size_t len,
                    cpu_regex_scratch *scratch)
{
    size_t from = 0;
    for (int guard = 0; guard < 4096 && from <= len; guard++) {
        size_t b = 0, e = 0, b2 = 0, e2 = 0;
        int got = cpu_regex_search(re, text, len, from, &b, &e, scratch);
        if (got < 0)
            return;
        if (other != NULL) {
            int got2 = cpu_regex_search(other, text, len, from, &b2, &e2, NULL);
            if (got2 >= 0 && (got2 != got || (got == 1 && (b2 != b || e2 != e))))
                fz_fail("the fast paths and the plain NFA disagree");
        }
        if (got == 0)
            return;
        if (b < from || e < b || e > len)
            fz_fail("a match outside [from, len]");
        if (e > b) {
            from = e;
        } else {
            if (b >= len)
                return;
            size_t next = b;
            cpu_utf8_next(text, len, &next);
            from = next;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    const char *nul = memchr(p, '\0', size);
    size_t plen = nul ? (size_t)(nul - p) : size;
    const char *text = nul ? nul + 1 : "";
    size_t len = nul ? size - plen - 1 : 0;
    char err[256];
    cpu_regex *re = cpu_regex_compile(p, plen, err, sizeof err);
    if (re == NULL) {
        if (err[0] == '\0')
            fz_fail("a refusal without a reason");
        return 0;
    }
    /* the same program searched the plain way: no scan of one class, no
     * precomputed lists (the NFA walks its splits and assertions itself) */
    cpu_regex *nfa = cpu_regex_compile(p, plen, err, sizeof err);
    if (nfa == NULL)
        fz_fail("the pattern compiled once only");
    nfa->class_run = false;
    nfa->word_run = false;
    free(nfa->clos_at), free(nfa->clos_ctx), free(nfa->clos_off), free(nfa->clos_pcs);
    nfa->clos_at = NULL, nfa->clos_ctx = NULL, nfa->clos_off = NULL, nfa->clos_pcs = NULL;
    cpu_regex_scratch scratch = {0};
    int full = cpu_regex_full_match(re, text, len, &scratch);
    size_t b = 0, e = 0;
    int got = cpu_regex_search(re, text, len, 0, &b, &e, &scratch);
    if (full == 1 && (got != 1 || b != 0 || e != len))
        fz_fail("the whole text matches, but the search from 0 finds otherwise");
    if (full >= 0) {
        int full2 = cpu_regex_full_match(nfa, text, len, NULL);
        if (full2 >= 0 && full2 != full)
            fz_fail("the fast paths and the plain NFA disagree on the full match");
    }
    fz_walk(re, nfa, text, len, &scratch);
    cpu_regex_scratch_free(&scratch);
    cpu_regex_free(nfa);
    cpu_regex_free(re);
    return 0;
}
