/* json_text.c — the text of a model into jansson's tree. A prescan checks
 * the structure first (one object, complete, nothing after it, bounded
 * nesting and token length), so that jansson never recurses deeply nor
 * meets a token long enough to make it grow its buffer mid-number; jansson
 * then parses with duplicate keys refused, and its error positions are
 * mapped back to the file's line, column and byte. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_internal.h"

/* jansson drops some allocation failures on the floor and reports a
 * syntax-looking error instead; when a failed parse coincides with
 * jansson's allocator (malloc, or whatever the application set) refusing
 * even one byte, memory is what failed. */
static bool js_memory_exhausted(void)
{
    json_malloc_t jmalloc = NULL;
    json_free_t jfree = NULL;
    json_get_alloc_funcs(&jmalloc, &jfree);
    void *p = jmalloc ? jmalloc(1) : malloc(1);
    if (p == NULL)
        return true;
    if (jmalloc)
        jfree(p);
    else
        free(p);
    return false;
}

/* The longest number or bare word (true, false, null, or a typo) accepted;
 * see js_parse for why there is a limit at all. */
#define JS_MAX_BARE_TOKEN 256

/* A position in the text for messages: line and column (1-based, columns
 * counting UTF-8 characters as jansson does) and byte offset. */
typedef struct js_pos {
    int line, column;
    size_t byte;
} js_pos;

static pl_status *js_syntax_error(const char *src, js_pos at, const char *fmt,
                                  ...) PL_PRINTF_LIKE(3, 4);
static pl_status *js_syntax_error(const char *src, js_pos at, const char *fmt,
                                  ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return js_host->status_create(PL_CODE_INVALID_ARGUMENT, "%s:%d:%d (byte %zu): %s",
                            src, at.line, at.column, at.byte, msg);
}

static bool js_is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* A scan of the text's structure before jansson sees it: it must be one
 * object, complete, with nothing after it, nested at most
 * JS_MAX_DEPTH deep, with no number or word longer than
 * JS_MAX_BARE_TOKEN. Everything else (tokens, commas, duplicate keys) is
 * jansson's to check. */
static pl_status *js_prescan(const char *src, const char *text, size_t len)
{
    js_pos at = {1, 0, 0}, open_at = {1, 0, 0};
    int depth = 0;
    bool in_string = false, escaped = false, started = false;
    size_t bare = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        at.byte = i;
        if (c == '\n') {
            at.line++;
            at.column = 0;
        } else if (((unsigned char)c & 0xc0) != 0x80) {
            at.column++;
        }
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (js_is_space(c)) {
            bare = 0;
            continue;
        }
        if (!started) {
            if (c != '{')
                return js_syntax_error(src, at, "'{' expected: a model is a JSON "
                                              "object");
            started = true;
            open_at = at;
        } else if (depth == 0) {
            return js_syntax_error(src, at, "end of file expected after the "
                                          "top-level object");
        }
        bool structural = true;
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > JS_MAX_DEPTH)
                return js_syntax_error(src, at, "nesting deeper than %d levels "
                                              "(the format needs 7)",
                                       JS_MAX_DEPTH);
        } else if (c == ']' || c == '}') {
            depth--;
        } else if (c != ',' && c != ':') {
            structural = false;
            if (++bare > JS_MAX_BARE_TOKEN)
                return js_syntax_error(src, at, "a number or word longer than %d "
                                              "characters",
                                       JS_MAX_BARE_TOKEN);
        }
        if (structural)
            bare = 0;
    }
    at.byte = len;
    if (!started)
        return js_syntax_error(src, at, "no JSON object (the text is empty)");
    if (in_string || depth > 0)
        return js_syntax_error(src, at, "premature end of input%s: the object "
                                      "that starts at %d:%d is not closed",
                               in_string ? " inside a string" : "",
                               open_at.line, open_at.column);
    return NULL;
}

/* jansson is fed a padded stream: '["<pad>",' + text + ']'. The pad makes
 * jansson's token buffer grow, once, before any token of the text: jansson
 * 2.14 aborts on an assertion when that buffer fails to grow in the middle
 * of a number (lex_unget_unsave), and numbers are at most JS_MAX_BARE_TOKEN
 * long, so with the pad they never make it grow. Positions are shifted
 * back before they are reported. */
#define JS_PAD_LEN (JS_MAX_BARE_TOKEN + 64)

typedef struct js_feed {
    const char *text;
    size_t len;
    size_t done;   /* bytes of prefix + text + suffix handed out */
} js_feed;

static size_t js_prefix_len(void)
{
    return JS_PAD_LEN + 4; /* [ " pad " , */
}

static size_t js_feed_cb(void *buffer, size_t buflen, void *data)
{
    js_feed *f = data;
    size_t pre = js_prefix_len(), total = pre + f->len + 1, n = 0;
    char *out = buffer;
    while (n < buflen && f->done < total) {
        size_t k = f->done;
        if (k < pre) {
            out[n++] = k == 0 ? '[' : (k == 1 || k == pre - 2) ? '"'
                                   : k == pre - 1 ? ',' : '#';
            f->done++;
        } else if (k < pre + f->len) {
            size_t chunk = pre + f->len - k;
            if (chunk > buflen - n)
                chunk = buflen - n;
            memcpy(out + n, f->text + (k - pre), chunk);
            n += chunk;
            f->done += chunk;
        } else {
            out[n++] = ']';
            f->done++;
        }
    }
    return n;
}

/* Parses TEXT into *OUT_ROOT, the text's top-level object. */
pl_status *js_parse(const char *src, const char *text, size_t len,
                           json_t **out_root)
{
    *out_root = NULL;
    if (len > JS_MAX_TEXT)
        return js_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                "%s: %zu bytes of JSON exceed the limit of %zu",
                                src, len, JS_MAX_TEXT);
    JS_RETURN_IF_ERROR(js_prescan(src, text, len));
    js_feed feed = {.text = text, .len = len};
    json_error_t err;
    json_t *wrapped = json_load_callback(js_feed_cb, &feed, JSON_REJECT_DUPLICATES,
                                         &err);
    if (wrapped == NULL) {
        if (json_error_code(&err) == json_error_out_of_memory ||
            js_memory_exhausted())
            return js_host->status_create(PL_CODE_OUT_OF_MEMORY,
                                    "%s: out of memory parsing JSON", src);
        if (err.line < 0)
            return js_host->status_create(PL_CODE_INVALID_ARGUMENT, "%s: %s", src,
                                    err.text);
        size_t pre = js_prefix_len();
        js_pos at = {err.line, err.column, 0};
        /* jansson's position counts the bytes it read, the offending one
         * included (report that byte's offset), except for a byte that is
         * not UTF-8, which it neither counts nor gives a column. */
        size_t pos = err.position > 0 ? (size_t)err.position - 1 : 0;
        if (json_error_code(&err) == json_error_invalid_utf8) {
            pos = (size_t)err.position;
            at.column++;
        }
        at.byte = pos > pre ? pos - pre : 0;
        if (at.byte > len)
            at.byte = len;
        if (at.line == 1)
            at.column = at.column > (int)pre ? at.column - (int)pre : 0;
        return js_syntax_error(src, at, "%s", err.text);
    }
    /* The prescan saw one complete value, so the wrapper holds two. */
    json_t *root = json_incref(json_array_get(wrapped, 1));
    json_decref(wrapped);
    if (root == NULL) /* cannot happen; do not trust it blindly */
        return js_host->status_create(PL_CODE_INTERNAL, "%s: JSON text lost in parsing",
                                src);
    *out_root = root;
    return NULL;
}

