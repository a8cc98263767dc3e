/* strtab.h — string tensors (docs/architecture.md, "String tensors").
 *
 * Inside a graph a string tensor is an int64 tensor of string ids: id k is
 * the k-th string of the model's table, interned as the model was read
 * (constants, attributes), and id 0 is always "" (what a zero fill of a
 * string tensor means in ONNX: Pad, ConstantOfShape). Modules therefore
 * run the ops that move strings (Reshape, Gather, Concat, Where, Equal, ...)
 * as int64 ops, and the ML encoders that map strings (LabelEncoder,
 * CategoryMapper, OneHotEncoder, classifiers' string labels, ZipMap,
 * TfIdfVectorizer's pool) get int64 attributes of ids. Equal ids are equal
 * strings, so comparisons hold. Text itself is read or written only at the
 * run's boundary: pl_session_run turns the caller's strings into ids (a
 * string the table lacks gets an id past it, for that run only) and the
 * ids of string outputs back into strings. The ops that compute on text
 * (StringNormalizer, StringConcat, StringSplit, RegexFullMatch,
 * com.microsoft Tokenizer, casts to and from strings) run in a module,
 * whose kernels read the text of ids and get ids for new strings through
 * the run's table (pl_run_context.strings, ABI 1.14): new strings get ids
 * past the model's, for that run only, like the caller's. */
#ifndef PL_CORE_STRTAB_H
#define PL_CORE_STRTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plinth/module.h"
#include "plinth/plinth.h"

struct pl_graph;
struct pl_session;

typedef struct pl_strtab pl_strtab;

pl_strtab *pl_strtab_create(void);
void pl_strtab_destroy(pl_strtab *tab);
/* The id of S (LEN bytes, no NUL inside), added when new; -1 when out of
 * memory. */
int64_t pl_strtab_intern(pl_strtab *tab, const char *s, size_t len);
/* The id of NUL-terminated S, or -1 when the table lacks it. */
int64_t pl_strtab_find(const pl_strtab *tab, const char *s);
size_t pl_strtab_count(const pl_strtab *tab);
/* String ID (< count), NUL-terminated. */
const char *pl_strtab_at(const pl_strtab *tab, size_t id);

/* Turns the string tensors of imported graph G (validated, not yet
 * inferred) into id tensors: rewrites the string attributes of the ops
 * that map strings, follows string values through the ops that move them,
 * refuses (naming the node) an op that would compute on text, and sets
 * *OUT_ANY when G has a string tensor at all. G's table (pl_graph_strtab)
 * must exist when it does. */
pl_status *pl_strings_encode(struct pl_graph *g, bool *out_any);

/* Whether OP of DOMAIN, after pl_strings_encode, computes on text: it
 * reads the run's strings, so it is never folded into a constant (a
 * folded id would be one run's). */
bool pl_strings_text_op(const char *domain, const char *op);

/* The strings of the run this thread is in: set by pl_strings_run for the
 * run's duration (nested sessions of a staged session run inside it), read
 * by the runner for its steps' pl_run_context. NULL outside such a run. */
const pl_run_strings *pl_strings_current(void);

/* Runs FN(ARG) with a run's strings of table TAB current and none at the
 * boundary: a run through arrays (which hold no strings) of a model whose
 * ops on text make strings inside it. */
pl_status *pl_strings_scope(const pl_strtab *tab, pl_status *(*fn)(void *), void *arg);

/* pl_session_run for a session whose model has string tensors:
 * string inputs (elements const char *) become ids, the run runs with the
 * run's strings current (pl_strings_current), and each string output comes
 * back as one buffer (freed with pl_buffer_free) of const char * pointers
 * followed by the strings they point at. */
pl_status *pl_strings_run(struct pl_session *s, const pl_strtab *tab,
                          const bool *in_string, const bool *out_string, const pl_io *inputs,
                          size_t n_inputs, pl_io *outputs, size_t n_outputs,
                          pl_status *(*run)(struct pl_session *, const pl_io *, size_t,
                                            pl_io *, size_t));

#endif
