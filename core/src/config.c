/* config.c — reads backend.ini. inih does the tokenising; this file adds what
 * inih lacks for a good error: the line of every key and section (a reader
 * callback counts lines, so it works with any build of inih), validation of
 * [runtime] and [placement] with the accepted values in the message, and
 * warnings with file:line for unknown sections and keys. Module sections are
 * kept whole: their keys belong to the module's configure(). */
#include "config.h"

#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "optimize.h"
#include "status.h"
#include "threadpool.h"

/* inih's line buffer is 200 bytes in Debian's build (3 for "\r\n\0"). */
#define PL_CONFIG_MAX_LINE 196

typedef struct pl_config_parse {
    pl_config *config;
    const char *shown_path;  /* the path as the user gave it */
    FILE *file;
    int line;
    int first_error_line;    /* 0: none */
    char *first_error;       /* message of our own first error */
    bool continuation;       /* the current line continues the previous value */
    bool oom;
} pl_config_parse;

static char *pl_trim(char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' ||
                     s[n - 1] == '\n'))
        s[--n] = '\0';
    return s;
}

bool pl_config_add_warning(pl_config *config, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *line = pl_alloc_vstrdupf(config->alloc, fmt, ap);
    va_end(ap);
    if (line == NULL)
        return false;
    char **grown = pl_alloc_realloc(config->alloc, config->warnings,
                                    (config->n_warnings + 1) * sizeof *grown);
    if (grown == NULL) {
        pl_free(line);
        return false;
    }
    config->warnings = grown;
    config->warnings[config->n_warnings++] = line;
    return true;
}

static void pl_config_parse_error(pl_config_parse *p, int line,
                                  const char *fmt, ...)
{
    if (p->first_error_line != 0 && p->first_error_line <= line)
        return;
    char body[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    pl_free(p->first_error);
    p->first_error = pl_alloc_strdupf(p->config->alloc, "%s:%d: %s", p->shown_path,
                                      line, body);
    p->first_error_line = line;
    if (p->first_error == NULL)
        p->oom = true;
}

static pl_config_section *pl_config_section_get_or_add(pl_config_parse *p,
                                                       const char *name,
                                                       int line)
{
    pl_config *c = p->config;
    for (size_t i = 0; i < c->n_sections; i++)
        if (strcmp(c->sections[i].name, name) == 0)
            return &c->sections[i];
    if (c->n_sections == c->cap_sections) {
        size_t cap = c->cap_sections ? c->cap_sections * 2 : 8;
        pl_config_section *grown = pl_alloc_realloc(c->alloc, c->sections, cap * sizeof *grown);
        if (grown == NULL) {
            p->oom = true;
            return NULL;
        }
        c->sections = grown;
        c->cap_sections = cap;
    }
    pl_config_section *s = &c->sections[c->n_sections];
    memset(s, 0, sizeof *s);
    s->name = pl_alloc_strdup(c->alloc, name);
    if (s->name == NULL) {
        p->oom = true;
        return NULL;
    }
    s->line = line;
    s->is_module = strcmp(name, "runtime") != 0 && strcmp(name, "placement") != 0 &&
                   strcmp(name, "graph") != 0 && strcmp(name, "modules") != 0 &&
                   name[0] != '\0';
    c->n_sections++;
    return s;
}

/* inih's reader: one line per call, like fgets. Counting here gives every
 * handler call its line, and lets us see section headers that have no keys. */
static char *pl_config_reader(char *str, int num, void *stream)
{
    pl_config_parse *p = stream;
    char buf[4096];
    if (fgets(buf, sizeof buf, p->file) == NULL)
        return NULL;
    p->line++;
    size_t len = strlen(buf);
    bool complete = len > 0 && buf[len - 1] == '\n';
    if (!complete && !feof(p->file)) {
        /* Longer than our buffer: swallow the rest of the line. */
        int ch;
        while ((ch = fgetc(p->file)) != EOF && ch != '\n')
            ;
    }
    size_t content = len - (complete ? 1 : 0);
    if (content > 0 && buf[content - 1] == '\r')
        content--;
    if (content > PL_CONFIG_MAX_LINE || (!complete && !feof(p->file))) {
        pl_config_parse_error(p, p->line,
                              "line too long (at most %d characters)",
                              PL_CONFIG_MAX_LINE);
        buf[0] = '\0';
        snprintf(str, (size_t)num, "\n");
        return str;
    }
    char *text = buf;
    if (p->line == 1 && (unsigned char)text[0] == 0xEF &&
        (unsigned char)text[1] == 0xBB && (unsigned char)text[2] == 0xBF)
        text += 3;
    char probe[sizeof buf];
    snprintf(probe, sizeof probe, "%s", text);
    char *t = pl_trim(probe);
    p->continuation = (text[0] == ' ' || text[0] == '\t') && t[0] != '\0' &&
                      t[0] != ';' && t[0] != '#';
    if (t[0] == '[') {
        char *end = strchr(t, ']');
        if (end != NULL) {
            *end = '\0';
            pl_config_section_get_or_add(p, pl_trim(t + 1), p->line);
        }
    }
    snprintf(str, (size_t)num, "%s", buf);
    return str;
}

static int pl_config_handler(void *user, const char *section, const char *name,
                             const char *value)
{
    pl_config_parse *p = user;
    if (name == NULL)
        return 1;
    pl_config_section *s = pl_config_section_get_or_add(p, section, p->line);
    if (s == NULL)
        return 1;
    for (size_t i = 0; i < s->n_entries; i++) {
        if (strcmp(s->entries[i].key, name) == 0) {
            if (p->continuation) {
                /* A continuation line of a multi-line value. */
                char *joined = pl_alloc_strdupf(p->config->alloc, "%s\n%s",
                                                s->entries[i].value,
                                                value ? value : "");
                if (joined == NULL) {
                    p->oom = true;
                    return 1;
                }
                pl_free(s->entries[i].value);
                s->entries[i].value = joined;
                return 1;
            }
            if (!pl_config_add_warning(p->config,
                                       "%s:%d: duplicate key '%s' in [%s]; "
                                       "line %d is overridden",
                                       p->shown_path, p->line, name, section,
                                       s->entries[i].line))
                p->oom = true;
            char *v = pl_alloc_strdup(p->config->alloc, value ? value : "");
            if (v == NULL) {
                p->oom = true;
                return 1;
            }
            pl_free(s->entries[i].value);
            s->entries[i].value = v;
            s->entries[i].line = p->line;
            return 1;
        }
    }
    if (s->n_entries == s->cap_entries) {
        size_t cap = s->cap_entries ? s->cap_entries * 2 : 8;
        pl_config_entry *grown = pl_alloc_realloc(p->config->alloc, s->entries,
                                                 cap * sizeof *grown);
        if (grown == NULL) {
            p->oom = true;
            return 1;
        }
        s->entries = grown;
        s->cap_entries = cap;
    }
    pl_config_entry *e = &s->entries[s->n_entries];
    e->key = pl_alloc_strdup(p->config->alloc, name);
    e->value = pl_alloc_strdup(p->config->alloc, value ? value : "");
    e->line = p->line;
    if (e->key == NULL || e->value == NULL) {
        pl_free(e->key);
        pl_free(e->value);
        p->oom = true;
        return 1;
    }
    s->n_entries++;
    return 1;
}

const pl_config_section *pl_config_find_section(const pl_config *config,
                                                const char *name)
{
    for (size_t i = 0; config && i < config->n_sections; i++)
        if (strcmp(config->sections[i].name, name) == 0)
            return &config->sections[i];
    return NULL;
}

static const pl_config_entry *pl_config_entry_find(const pl_config_section *s,
                                                   const char *key)
{
    for (size_t i = 0; s && i < s->n_entries; i++)
        if (strcmp(s->entries[i].key, key) == 0)
            return &s->entries[i];
    return NULL;
}

const char *pl_config_section_get(const pl_config_section *section,
                                  const char *key)
{
    const pl_config_entry *e = pl_config_entry_find(section, key);
    return e ? e->value : NULL;
}

/* Resolves PATH against the ini file's directory. */
static char *pl_config_resolve(const pl_config *c, const char *path)
{
    if (path[0] == '/')
        return pl_alloc_strdup(c->alloc, path);
    return pl_alloc_strdupf(c->alloc, "%s/%s", c->dir, path);
}

/* Splits a comma-separated list into trimmed, non-empty items. */
static pl_status *pl_config_split_list(const pl_config *c, const char *value,
                                       char ***out_items, size_t *out_n)
{
    *out_items = NULL;
    *out_n = 0;
    char *copy = pl_alloc_strdup(c->alloc, value);
    if (copy == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    char **items = NULL;
    size_t n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",\n", &save); tok != NULL;
         tok = strtok_r(NULL, ",\n", &save)) {
        char *t = pl_trim(tok);
        if (t[0] == '\0')
            continue;
        char **grown = pl_alloc_realloc(c->alloc, items, (n + 1) * sizeof *grown);
        char *dup = pl_alloc_strdup(c->alloc, t);
        if (grown == NULL || dup == NULL) {
            pl_free(dup);
            if (grown != NULL)
                items = grown;
            for (size_t i = 0; i < n; i++)
                pl_free(items[i]);
            pl_free(items);
            pl_free(copy);
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
        }
        items = grown;
        items[n++] = dup;
    }
    pl_free(copy);
    *out_items = items;
    *out_n = n;
    return NULL;
}

/* Entry E (of the file SHOWN) says yes or no, into *OUT. */
static pl_status *pl_config_yes_no(const pl_config_entry *e, const char *shown, bool *out)
{
    if (strcmp(e->value, "yes") == 0 || strcmp(e->value, "no") == 0) {
        *out = e->value[0] == 'y';
        return NULL;
    }
    return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                            "%s:%d: bad value '%s' for %s; accepted: yes, no", shown, e->line,
                            e->value, e->key);
}

static bool pl_config_parse_int(const char *s, long lo, long hi, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *pl_trim(end) != '\0' || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static pl_status *pl_config_apply_runtime(pl_config *c, const char *shown,
                                          const pl_config_section *s)
{
    for (size_t i = 0; s && i < s->n_entries; i++) {
        const pl_config_entry *e = &s->entries[i];
        if (strcmp(e->key, "modules") == 0) {
            char **items = NULL;
            size_t n = 0;
            PL_RETURN_IF_ERROR(pl_config_split_list(c, e->value, &items, &n));
            bool *relative = pl_alloc_calloc(c->alloc, n ? n : 1, sizeof *relative);
            if (relative == NULL) {
                for (size_t k = 0; k < n; k++)
                    pl_free(items[k]);
                pl_free(items);
                return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
            }
            for (size_t k = 0; k < n; k++) {
                relative[k] = items[k][0] != '/';
                char *abs = pl_config_resolve(c, items[k]);
                pl_free(items[k]);
                items[k] = abs;
            }
            for (size_t k = 0; k < c->n_module_paths; k++)
                pl_free(c->module_paths[k]);
            pl_free(c->module_paths);
            pl_free(c->module_path_relative);
            c->module_paths = items;
            c->module_path_relative = relative;
            c->n_module_paths = n;
            c->modules_by_path = n == 0;
            for (size_t k = 0; k < n; k++)
                if (items[k] == NULL)
                    return pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                            "out of memory");
        } else if (strcmp(e->key, "engine") == 0) {
            if (strcmp(e->value, "threaded") == 0)
                c->engine = PL_ENGINE_THREADED;
            else if (strcmp(e->value, "naive") == 0)
                c->engine = PL_ENGINE_NAIVE;
            else
                return pl_status_create(
                    PL_CODE_INVALID_ARGUMENT,
                    "%s:%d: bad value '%s' for engine; accepted: threaded, naive",
                    shown, e->line, e->value);
        } else if (strcmp(e->key, "threads") == 0) {
            long v = 0;
            if (!pl_config_parse_int(e->value, 0, 4096, &v))
                return pl_status_create(
                    PL_CODE_INVALID_ARGUMENT,
                    "%s:%d: bad value '%s' for threads; accepted: an integer "
                    "from 0 (all cores) to 4096",
                    shown, e->line, e->value);
            c->threads = (int)v;
        } else if (strcmp(e->key, "spin_us") == 0) {
            long v = 0;
            if (!pl_config_parse_int(e->value, 0, PL_THREADPOOL_SPIN_US_MAX, &v))
                return pl_status_create(
                    PL_CODE_INVALID_ARGUMENT,
                    "%s:%d: bad value '%s' for spin_us; accepted: an integer "
                    "from 0 (sleep at once) to %d microseconds",
                    shown, e->line, e->value, PL_THREADPOOL_SPIN_US_MAX);
            c->spin_us = (int)v;
        } else if (strcmp(e->key, "cache_dir") == 0) {
            pl_free(c->cache_dir);
            c->cache_dir = e->value[0] ? pl_config_resolve(c, e->value)
                                       : pl_alloc_strdup(c->alloc, "");
            if (c->cache_dir == NULL)
                return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
        } else if (strcmp(e->key, "cache_max_mb") == 0) {
            char *end = NULL;
            double mb = strtod(e->value, &end);
            if (end == e->value || *end != '\0' || !(mb >= 0 && mb <= 1e9))
                return pl_status_create(
                    PL_CODE_INVALID_ARGUMENT,
                    "%s:%d: bad value '%s' for cache_max_mb; accepted: megabytes "
                    "from 0 (no limit) to 1e9, fractions allowed",
                    shown, e->line, e->value);
            c->cache_max_bytes = (uint64_t)(mb * 1048576.0);
            if (mb > 0 && c->cache_max_bytes == 0)
                c->cache_max_bytes = 1;
        } else if (strcmp(e->key, "log") == 0) {
            static const char *const names[] = {"error", "warn", "info",
                                                "debug"};
            bool found = false;
            for (int k = 0; k < 4; k++)
                if (strcmp(e->value, names[k]) == 0) {
                    c->log_level = (pl_log_level)k;
                    found = true;
                }
            if (!found)
                return pl_status_create(
                    PL_CODE_INVALID_ARGUMENT,
                    "%s:%d: bad value '%s' for log; accepted: error, warn, "
                    "info, debug",
                    shown, e->line, e->value);
        } else if (strcmp(e->key, "probe") == 0) {
            if (strcmp(e->value, "fork") == 0)
                c->probe = PL_PROBE_FORK;
            else if (strcmp(e->value, "none") == 0)
                c->probe = PL_PROBE_NONE;
            else
                return pl_status_create(
                    PL_CODE_INVALID_ARGUMENT,
                    "%s:%d: bad value '%s' for probe; accepted: fork, none",
                    shown, e->line, e->value);
        } else if (strcmp(e->key, "probe_timeout_ms") == 0) {
            long v = 0;
            if (!pl_config_parse_int(e->value, 10, 3600000, &v))
                return pl_status_create(
                    PL_CODE_INVALID_ARGUMENT,
                    "%s:%d: bad value '%s' for probe_timeout_ms; accepted: an "
                    "integer from 10 to 3600000 milliseconds",
                    shown, e->line, e->value);
            c->probe_timeout_ms = (int)v;
        } else if (!pl_config_add_warning(
                       c, "%s:%d: unknown key '%s' in [runtime] (known: "
                          "modules, engine, threads, spin_us, cache_dir, "
                          "cache_max_mb, log, probe, probe_timeout_ms)",
                       shown, e->line, e->key)) {
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
        }
    }
    return NULL;
}

static bool pl_config_valid_module_name(const char *name)
{
    if (name[0] == '\0' || strlen(name) >= 32)
        return false;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
    return true;
}

/* [modules]: sha256.NAME = <64 hex digits> pins module NAME to its
 * contents. */
static pl_status *pl_config_apply_modules(pl_config *c, const char *shown,
                                          const pl_config_section *s)
{
    for (size_t i = 0; s && i < s->n_entries; i++) {
        const pl_config_entry *e = &s->entries[i];
        if (strncmp(e->key, "sha256.", 7) != 0) {
            if (!pl_config_add_warning(c, "%s:%d: unknown key '%s' in [modules] "
                                          "(known: sha256.MODULE)",
                                       shown, e->line, e->key))
                return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
            continue;
        }
        if (!pl_config_valid_module_name(e->key + 7))
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "%s:%d: bad key '%s'; accepted: sha256.MODULE, "
                                    "MODULE a module's name (a-z, 0-9 and _)",
                                    shown, e->line, e->key);
        bool hex = strlen(e->value) == 64;
        for (const char *p = e->value; hex && *p; p++)
            hex = (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') ||
                  (*p >= 'A' && *p <= 'F');
        if (!hex)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "%s:%d: bad value for %s; accepted: the file's "
                                    "SHA-256 as 64 hex digits (sha256sum prints it)",
                                    shown, e->line, e->key);
    }
    return NULL;
}

const pl_config_entry *pl_config_pin(const pl_config *c, const char *module)
{
    const pl_config_section *s = pl_config_find_section(c, "modules");
    for (size_t i = 0; s != NULL && i < s->n_entries; i++)
        if (strncmp(s->entries[i].key, "sha256.", 7) == 0 &&
            strcmp(s->entries[i].key + 7, module) == 0)
            return &s->entries[i];
    return NULL;
}

/* [graph]: the optimisation level (optimize.h). */
static pl_status *pl_config_apply_graph(pl_config *c, const char *shown,
                                        const pl_config_section *s)
{
    for (size_t i = 0; s && i < s->n_entries; i++) {
        const pl_config_entry *e = &s->entries[i];
        if (strcmp(e->key, "optimize") == 0) {
            pl_optimize_level level;
            if (!pl_optimize_parse(e->value, &level))
                return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                        "%s:%d: bad value '%s' for optimize; accepted: none, "
                                        "basic, all",
                                        shown, e->line, e->value);
            c->optimize = (int)level;
        } else if (strcmp(e->key, "qdq") == 0) {
            if (strcmp(e->value, "int8") != 0 && strcmp(e->value, "float") != 0)
                return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                        "%s:%d: bad value '%s' for qdq; accepted: int8, float",
                                        shown, e->line, e->value);
            c->qdq_int8 = strcmp(e->value, "int8") == 0;
        } else if (strcmp(e->key, "f16") == 0) {
            if (strcmp(e->value, "f32") != 0 && strcmp(e->value, "keep") != 0)
                return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                        "%s:%d: bad value '%s' for f16; accepted: f32, keep",
                                        shown, e->line, e->value);
            c->f16_as_f32 = strcmp(e->value, "f32") == 0;
        } else if (!pl_config_add_warning(c, "%s:%d: unknown key '%s' in [graph] (known: "
                                             "optimize, qdq, f16)",
                                          shown, e->line, e->key)) {
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
        }
    }
    return NULL;
}

/* "module" or "module:device", the device a decimal number below 4096. */
static bool pl_config_valid_backend(const char *spec)
{
    char name[40];
    const char *colon = strchr(spec, ':');
    size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
    if (n >= sizeof name)
        return false;
    memcpy(name, spec, n);
    name[n] = '\0';
    if (!pl_config_valid_module_name(name))
        return false;
    if (colon == NULL)
        return true;
    long device = 0;
    const char *d = colon + 1;
    if (*d < '0' || *d > '9')
        return false;
    return pl_config_parse_int(d, 0, 4095, &device);
}

static pl_status *pl_config_apply_placement(pl_config *c, const char *shown,
                                            const pl_config_section *s)
{
    for (size_t i = 0; s && i < s->n_entries; i++) {
        const pl_config_entry *e = &s->entries[i];
        if (strcmp(e->key, "order") == 0) {
            for (size_t k = 0; k < c->n_placement; k++)
                pl_free(c->placement[k]);
            pl_free(c->placement);
            PL_RETURN_IF_ERROR(
                pl_config_split_list(c, e->value, &c->placement, &c->n_placement));
            c->placement_line = e->line;
            for (size_t k = 0; k < c->n_placement; k++)
                if (!pl_config_valid_backend(c->placement[k]))
                    return pl_status_create(
                        PL_CODE_INVALID_ARGUMENT,
                        "%s:%d: bad [placement] order entry '%s'; accepted: "
                        "module or module:device (a-z, 0-9 and _; the device a "
                        "number from 0)",
                        shown, e->line, c->placement[k]);
        } else if (strcmp(e->key, "min_subgraph_nodes") == 0) {
            long v = 0;
            if (!pl_config_parse_int(e->value, 1, 1000000, &v))
                return pl_status_create(
                    PL_CODE_INVALID_ARGUMENT,
                    "%s:%d: bad value '%s' for min_subgraph_nodes; accepted: an "
                    "integer from 1 to 1000000",
                    shown, e->line, e->value);
            c->min_subgraph_nodes = (int)v;
        } else if (strcmp(e->key, "strict") == 0) {
            PL_RETURN_IF_ERROR(pl_config_yes_no(e, shown, &c->strict));
        } else if (strcmp(e->key, "choose") == 0) {
            if (strcmp(e->value, "cost") == 0)
                c->choose_by_cost = true;
            else if (strcmp(e->value, "first") == 0)
                c->choose_by_cost = false;
            else
                return pl_status_create(
                    PL_CODE_INVALID_ARGUMENT,
                    "%s:%d: bad value '%s' for choose; accepted: cost, first",
                    shown, e->line, e->value);
        } else if (strcmp(e->key, "measure") == 0) {
            PL_RETURN_IF_ERROR(pl_config_yes_no(e, shown, &c->measure));
        } else if (strcmp(e->key, "pin") == 0) {
            for (size_t k = 0; k < c->n_pins; k++)
                pl_free(c->pins[k]);
            pl_free(c->pins);
            PL_RETURN_IF_ERROR(
                pl_config_split_list(c, e->value, &c->pins, &c->n_pins));
            for (size_t k = 0; k < c->n_pins; k++) {
                const char *eq = strrchr(c->pins[k], '=');
                if (eq == NULL || eq == c->pins[k] || !pl_config_valid_backend(eq + 1))
                    return pl_status_create(
                        PL_CODE_INVALID_ARGUMENT,
                        "%s:%d: bad pin '%s'; accepted: a comma-separated list "
                        "of node=backend (backend: module or module:device)",
                        shown, e->line, c->pins[k]);
            }
        } else if (!pl_config_add_warning(
                       c, "%s:%d: unknown key '%s' in [placement] (known: order, "
                          "min_subgraph_nodes, strict, choose, measure, pin)",
                       shown, e->line, e->key)) {
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
        }
    }
    return NULL;
}

static pl_status *pl_config_apply_module(const char *shown,
                                         pl_config_section *s)
{
    if (!pl_config_valid_module_name(s->name))
        return pl_status_create(
            PL_CODE_INVALID_ARGUMENT,
            "%s:%d: bad section name [%s]; a module section is named like its "
            "module: a-z, 0-9 and _, at most 31 characters",
            shown, s->line, s->name);
    const pl_config_entry *e = pl_config_entry_find(s, "enabled");
    if (e == NULL)
        return NULL;
    if (strcmp(e->value, "yes") == 0)
        s->enabled = PL_ENABLED_YES;
    else if (strcmp(e->value, "no") == 0)
        s->enabled = PL_ENABLED_NO;
    else if (strcmp(e->value, "auto") == 0)
        s->enabled = PL_ENABLED_AUTO;
    else
        return pl_status_create(
            PL_CODE_INVALID_ARGUMENT,
            "%s:%d: bad value '%s' for enabled in [%s]; accepted: yes, no or auto",
            shown, e->line, e->value, s->name);
    return NULL;
}

static pl_config *pl_config_new(pl_allocator alloc)
{
    pl_config *c = pl_alloc_calloc(alloc, 1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->alloc = pl_allocator_resolve(alloc);
    c->engine = PL_ENGINE_THREADED;
    c->log_level = PL_LOG_WARN;
    c->spin_us = PL_THREADPOOL_SPIN_US_DEFAULT;
    c->cache_max_bytes = (uint64_t)4096 << 20;
    c->optimize = PL_OPTIMIZE_ALL;
    c->qdq_int8 = true;
    c->f16_as_f32 = true;
    c->min_subgraph_nodes = 1;
    c->choose_by_cost = true;
    c->measure = true;
    c->cache_dir = pl_alloc_strdup(alloc, "");
    c->probe = PL_PROBE_FORK;
    c->probe_timeout_ms = PL_PROBE_TIMEOUT_MS_DEFAULT;
    if (c->cache_dir == NULL) {
        pl_free(c);
        return NULL;
    }
    return c;
}

pl_status *pl_config_load(pl_allocator alloc, const char *path,
                          pl_config **out_config)
{
    *out_config = NULL;
    pl_config *c = pl_config_new(alloc);
    if (c == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    if (path == NULL) {
        char cwd[PATH_MAX];
        c->dir = pl_alloc_strdup(alloc, getcwd(cwd, sizeof cwd) ? cwd : ".");
        if (c->dir == NULL) {
            pl_config_destroy(c);
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
        }
        *out_config = c;
        return NULL;
    }
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        int err = errno;
        pl_config_destroy(c);
        return pl_status_create(err == ENOENT ? PL_CODE_NOT_FOUND : PL_CODE_IO_ERROR,
                                "%s: cannot read the configuration: %s", path,
                                strerror(err));
    }
    char abs[PATH_MAX];
    if (realpath(path, abs) == NULL)
        snprintf(abs, sizeof abs, "%s", path);
    c->path = pl_alloc_strdup(alloc, abs);
    char *slash = c->path ? strrchr(abs, '/') : NULL;
    if (slash != NULL) {
        *slash = '\0';
        c->dir = pl_alloc_strdup(alloc, abs[0] ? abs : "/");
    } else {
        c->dir = pl_alloc_strdup(alloc, ".");
    }
    if (c->path == NULL || c->dir == NULL) {
        fclose(f);
        pl_config_destroy(c);
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    }

    pl_config_parse p = {.config = c, .shown_path = path, .file = f};
    int rc = ini_parse_stream(pl_config_reader, &p, pl_config_handler, &p);
    bool read_error = ferror(f) != 0;
    fclose(f);
    pl_status *st = NULL;
    if (p.oom || rc == -2) {
        st = pl_status_create(PL_CODE_OUT_OF_MEMORY,
                              "%s: out of memory while reading", path);
    } else if (read_error) {
        st = pl_status_create(PL_CODE_IO_ERROR, "%s: read error", path);
    } else if (rc > 0 && (p.first_error_line == 0 || rc < p.first_error_line)) {
        st = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                              "%s:%d: syntax error: expected '[section]', "
                              "'key = value' or a comment",
                              path, rc);
    } else if (p.first_error_line != 0) {
        st = pl_status_create(PL_CODE_INVALID_ARGUMENT, "%s", p.first_error);
    }
    pl_free(p.first_error);
    if (st == NULL)
        st = pl_config_apply_runtime(c, path, pl_config_find_section(c, "runtime"));
    if (st == NULL)
        st = pl_config_apply_placement(c, path,
                                       pl_config_find_section(c, "placement"));
    if (st == NULL)
        st = pl_config_apply_graph(c, path, pl_config_find_section(c, "graph"));
    if (st == NULL)
        st = pl_config_apply_modules(c, path, pl_config_find_section(c, "modules"));
    for (size_t i = 0; st == NULL && i < c->n_sections; i++) {
        pl_config_section *s = &c->sections[i];
        if (s->name[0] == '\0') {
            for (size_t k = 0; st == NULL && k < s->n_entries; k++)
                if (!pl_config_add_warning(c, "%s:%d: key '%s' is outside any "
                                              "section and is ignored",
                                           path, s->entries[k].line,
                                           s->entries[k].key))
                    st = pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                          "%s: out of memory while reading", path);
        } else if (s->is_module) {
            st = pl_config_apply_module(path, s);
        }
    }
    if (st != NULL) {
        pl_config_destroy(c);
        return st;
    }
    *out_config = c;
    return NULL;
}

void pl_config_destroy(pl_config *config)
{
    if (config == NULL)
        return;
    for (size_t i = 0; i < config->n_sections; i++) {
        pl_config_section *s = &config->sections[i];
        for (size_t k = 0; k < s->n_entries; k++) {
            pl_free(s->entries[k].key);
            pl_free(s->entries[k].value);
        }
        pl_free(s->entries);
        pl_free(s->name);
    }
    pl_free(config->sections);
    for (size_t i = 0; i < config->n_module_paths; i++)
        pl_free(config->module_paths[i]);
    pl_free(config->module_paths);
    pl_free(config->module_path_relative);
    for (size_t i = 0; i < config->n_placement; i++)
        pl_free(config->placement[i]);
    pl_free(config->placement);
    for (size_t i = 0; i < config->n_pins; i++)
        pl_free(config->pins[i]);
    pl_free(config->pins);
    for (size_t i = 0; i < config->n_warnings; i++)
        pl_free(config->warnings[i]);
    pl_free(config->warnings);
    pl_free(config->cache_dir);
    pl_free(config->path);
    pl_free(config->dir);
    pl_free(config);
}
