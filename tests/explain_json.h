/* explain_json.h — a session's description (pl_session_describe) for the
 * test programs that link jansson: the parsed document, and one node's
 * placement entry. Include after harness.h. */
#ifndef PLINTH_TESTS_EXPLAIN_JSON_H
#define PLINTH_TESTS_EXPLAIN_JSON_H

#include <jansson.h>
#include <string.h>

#include <plinth/plinth.h>

#include "harness.h"

/* S's explain as JSON; the caller json_decref's it. */
static inline json_t *th_explain(pl_session *s)
{
    char *text = NULL;
    TH_CHECK_OK(pl_session_describe(s, &text));
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    TH_CHECK(root != NULL, "explain JSON: %s", err.text);
    pl_string_free(text);
    return root;
}

/* The placement entry of node NODE in ROOT (fails the test without one). */
static inline json_t *th_placement_of(json_t *root, const char *node)
{
    json_t *p;
    size_t i;
    json_array_foreach(json_object_get(root, "placement"), i, p)
        if (strcmp(json_string_value(json_object_get(p, "node")), node) == 0)
            return p;
    th_fail(__FILE__, __LINE__, "node %s not in placement", node);
}

#endif /* PLINTH_TESTS_EXPLAIN_JSON_H */
