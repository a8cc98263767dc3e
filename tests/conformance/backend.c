/* backend.c — one backend at a time for the conformance runner. A test
 * "passes on onednn" only when onednn ran its node: the runtime made here
 * offers every node to that one backend first (cpu takes what it refuses),
 * and the session's explain says which nodes it really took, so a node that
 * fell back to cpu is never counted for it. */
#define _DEFAULT_SOURCE

#include "backend.h"

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <plinth/module.h>

#include "tensor_file.h"

void cf_backends_list(const pl_runtime *rt, cf_backend **out_list, size_t *out_n)
{
    *out_list = NULL;
    *out_n = 0;
    size_t n_modules = pl_runtime_module_count(rt);
    cf_backend *list = calloc(n_modules ? n_modules : 1, sizeof *list);
    if (list == NULL)
        return;
    size_t n = 0;
    for (size_t i = 0; i < n_modules; i++) {
        pl_module_info info = {.struct_size = sizeof info};
        pl_status *st = pl_runtime_module_info(rt, i, &info);
        if (st != NULL) {
            pl_status_free(st);
            continue;
        }
        bool takes_nodes = (info.capabilities & (PL_CAP_IMPERATIVE | PL_CAP_SYMBOLIC)) != 0;
        bool unknown = info.status != PL_MODULE_LOADED && info.capabilities == 0;
        if (!takes_nodes && !unknown)
            continue;
        snprintf(list[n].name, sizeof list[n].name, "%s", info.name);
        list[n].status = info.status;
        snprintf(list[n].reason, sizeof list[n].reason, "%s",
                 info.status == PL_MODULE_LOADED ? "" : info.reason);
        n++;
    }
    *out_list = list;
    *out_n = n;
}

/* CONFIG's text without its [placement] section, then ours. */
static char *cf_derived_config(const uint8_t *text, size_t len, const char *backend)
{
    char tail[256];
    int tail_len = snprintf(tail, sizeof tail,
                            "\n; added by conformance_runner: %s first, cpu for the rest\n"
                            "[placement]\norder = %s\nmin_subgraph_nodes = 1\nstrict = no\nchoose = first\n",
                            backend, backend);
    if (tail_len < 0 || (size_t)tail_len >= sizeof tail)
        return NULL;
    char *out = malloc(len + (size_t)tail_len + 1);
    if (out == NULL)
        return NULL;
    size_t o = 0;
    bool skipping = false;
    for (size_t i = 0; i < len;) {
        size_t end = i;
        while (end < len && text[end] != '\n')
            end++;
        if (end < len)
            end++; /* the newline belongs to the line */
        size_t k = i;
        while (k < end && (text[k] == ' ' || text[k] == '\t'))
            k++;
        if (k < end && text[k] == '[') {
            static const char header[] = "[placement]";
            skipping = end - k >= sizeof header - 1 &&
                       memcmp(text + k, header, sizeof header - 1) == 0;
        }
        if (!skipping) {
            memcpy(out + o, text + i, end - i);
            o += end - i;
        }
        i = end;
    }
    memcpy(out + o, tail, (size_t)tail_len + 1);
    return out;
}

static void cf_quiet_sink(void *user, int level, const char *line)
{
    (void)user;
    (void)level;
    (void)line;
}

pl_runtime *cf_backend_runtime(const char *config, const char *backend, bool quiet)
{
    uint8_t *text = NULL;
    size_t len = 0;
    pl_status *st = cf_file_read(config, &text, &len);
    if (st != NULL) {
        fprintf(stderr, "conformance_runner: %s: %s\n", config, pl_status_message(st));
        pl_status_free(st);
        return NULL;
    }
    char *derived = cf_derived_config(text, len, backend);
    free(text);
    char path[4096];
    int plen = snprintf(path, sizeof path, "%s.%s.%ld.ini", config, backend, (long)getpid());
    if (derived == NULL || plen < 0 || (size_t)plen >= sizeof path) {
        fprintf(stderr, "conformance_runner: %s: out of memory or path too long\n", config);
        free(derived);
        return NULL;
    }
    FILE *f = fopen(path, "w");
    bool written = f != NULL && fputs(derived, f) >= 0;
    written = (f != NULL && fclose(f) == 0) && written;
    free(derived);
    if (!written) {
        fprintf(stderr, "conformance_runner: %s: cannot write the configuration for %s: %s\n",
                path, backend, strerror(errno));
        unlink(path);
        return NULL;
    }
    pl_runtime_options o = {.struct_size = sizeof o,
                            .config_path = path,
                            .ignore_environment = true,
                            .log_sink = quiet ? cf_quiet_sink : NULL};
    pl_runtime *rt = NULL;
    st = pl_runtime_create(&o, &rt);
    unlink(path);
    if (st != NULL) {
        fprintf(stderr, "conformance_runner: %s (for %s): %s\n", config, backend,
                pl_status_message(st));
        pl_status_free(st);
        return NULL;
    }
    return rt;
}

/* Counts the nodes of the placement array P (and, for a control-flow node,
 * of its bodies, which the session's explain nests under "bodies") into
 * *on and *total. A control-flow node itself counts as on BACKEND when
 * every node of its bodies is (the core runs the node; the bodies are what
 * a backend computes). Returns whether every node counted is on BACKEND. */
static bool cf_count_placement(json_t *p, const char *backend, size_t *on, size_t *total,
                               char *why, size_t why_size)
{
    bool all = true;
    for (size_t i = 0; i < json_array_size(p); i++) {
        json_t *e = json_array_get(p, i);
        const char *b = json_string_value(json_object_get(e, "backend"));
        json_t *bodies = json_object_get(e, "bodies");
        bool here = b != NULL && strcmp(b, backend) == 0;
        if (json_is_array(bodies)) {
            here = true;
            for (size_t k = 0; k < json_array_size(bodies); k++)
                here = cf_count_placement(json_object_get(json_array_get(bodies, k), "placement"),
                                          backend, on, total, why, why_size) &&
                       here;
        }
        (*total)++;
        if (here) {
            (*on)++;
            continue;
        }
        all = false;
        if (why[0] == '\0') {
            const char *node = json_string_value(json_object_get(e, "node"));
            const char *op = json_string_value(json_object_get(e, "op"));
            const char *reason =
                json_string_value(json_object_get(json_object_get(e, "reasons"), backend));
            snprintf(why, why_size, "node '%s' (%s) on %s: %s", node ? node : "?",
                     op ? op : "?", b ? b : "?", reason ? reason : "(no reason given)");
        }
    }
    return all;
}

pl_status *cf_backend_count(const pl_session *s, const char *backend, size_t *out_on,
                            size_t *out_total, char *why, size_t why_size)
{
    *out_on = *out_total = 0;
    why[0] = '\0';
    char *text = NULL;
    pl_status *st = pl_session_describe(s, &text);
    if (st != NULL)
        return st;
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    pl_string_free(text);
    json_t *placement = json_object_get(root, "placement");
    if (!json_is_array(placement)) {
        json_decref(root);
        return pl_status_create(PL_CODE_INTERNAL,
                                "the session's explain has no placement array");
    }
    cf_count_placement(placement, backend, out_on, out_total, why, why_size);
    json_decref(root);
    return NULL;
}
