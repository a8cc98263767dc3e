/* tools/explain_text.h — the text form of `plinth explain`: a session's
 * description (pl_session_describe's JSON) rendered for people. */
#ifndef PL_TOOLS_EXPLAIN_TEXT_H
#define PL_TOOLS_EXPLAIN_TEXT_H

#include <stdio.h>

/* Writes the description JSON to F as text: the backends in order, each
 * node's placement with the other backends' refusals (and control-flow
 * bodies, indented), the copies at boundaries, the steps of a run, the
 * memory plan per device and the warnings. Returns 0, or -1 when JSON is
 * not a description (a message on stderr). */
int pl_explain_text_write(FILE *f, const char *json);

#endif
