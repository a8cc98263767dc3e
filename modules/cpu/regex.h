/* regex.h — the cpu module's regular expressions, for the text ops
 * (strings.c): RegexFullMatch's pattern and com.microsoft Tokenizer's
 * tokenexp and separators, all written in RE2's syntax.
 *
 * A pattern compiles to a Thompson NFA that runs as a set of states over
 * the text's code points (UTF-8; a byte that starts no valid sequence is
 * one code point U+FFFD): time proportional to text times pattern, no
 * backtracking, so no pattern takes exponential time, as with RE2. The
 * syntax is RE2's: literals and escapes (\t \n \r \f \v \a \xHH \x{H..}
 * and escaped punctuation), . (not \n unless the s flag), classes with
 * ranges, negation, the Perl classes \d \s \w and their negations and the
 * ASCII classes [[:alpha:]] etc., anchors ^ $ \A \z and word boundaries \b
 * \B (ASCII words, as RE2), groups (capturing, (?:...), (?P<name>...)),
 * flags (?i) (?s) (?m) (?U) and their scoped form (?i:...), alternation,
 * and the repetitions * + ? {n} {n,} {n,m} with their lazy forms (the
 * same language; both searches below report by length, not by
 * preference). Case folding (i) pairs each code point with its other
 * case as C.UTF-8 maps it (ASCII's letters always; beyond ASCII up to
 * 65536 code points of a pattern's classes, where the system has
 * C.UTF-8). Unicode
 * classes (\pL, \p{Greek}), backreferences and lookaround are refused
 * with the reason (RE2 has no backreferences or lookaround either).
 * Internal to the module. */
#ifndef PL_CPU_REGEX_H
#define PL_CPU_REGEX_H

#include <stdbool.h>
#include <stddef.h>

typedef struct cpu_regex cpu_regex;

/* Compiles PATTERN (LEN bytes). NULL on failure, with the reason in ERR
 * (ERR_SIZE bytes; "out of memory" when that was it). */
cpu_regex *cpu_regex_compile(const char *pattern, size_t len, char *err, size_t err_size);
void cpu_regex_free(cpu_regex *re);

/* Memory a search works in, kept between searches (one thread's): zero it
 * before the first, free it with cpu_regex_scratch_free. A search given
 * NULL makes and frees its own. */
typedef struct cpu_regex_scratch {
    void *mem;
    size_t bytes;
} cpu_regex_scratch;

void cpu_regex_scratch_free(cpu_regex_scratch *scratch);

/* Whether the whole of TEXT (LEN bytes) matches RE: 1 yes, 0 no, -1 out
 * of memory. */
int cpu_regex_full_match(const cpu_regex *re, const char *text, size_t len,
                         cpu_regex_scratch *scratch);

/* The leftmost-longest match of RE in TEXT (LEN bytes) that starts at or
 * after byte FROM (anchors and word boundaries read the text before FROM,
 * as RE2's Match with a start position does), as RE2 finds it with
 * longest_match: its bytes [*OUT_BEGIN, *OUT_END). 1 found, 0 none, -1 out
 * of memory. */
int cpu_regex_search(const cpu_regex *re, const char *text, size_t len, size_t from,
                     size_t *out_begin, size_t *out_end, cpu_regex_scratch *scratch);

/* The code point starting at TEXT[*AT] (of LEN bytes), advancing *AT past
 * it: a valid UTF-8 sequence, else U+FFFD for one byte. */
unsigned cpu_utf8_next(const char *text, size_t len, size_t *at);

/* Whether TEXT (LEN bytes) is valid UTF-8; *OUT_CHARS its code points. */
bool cpu_utf8_valid(const char *text, size_t len, size_t *out_chars);

#endif
