/* fold.h — constant folding at model load (fold.c): the part of a graph
 * that depends only on constants runs once, through a session on the
 * loaded modules, and its results become constants. */
#ifndef PL_CORE_FOLD_H
#define PL_CORE_FOLD_H

#include "graph.h"
#include "model.h"
#include "optimize.h"
#include "registry.h"

/* Folds G (validated, types inferred) of the model at PATH on RT into a
 * new graph (*OUT_GRAPH, validated; it borrows G's constants, so G must
 * outlive it), adding a line to REWRITES for each constant made. *OUT_GRAPH
 * is NULL when nothing was folded, including when the folding session
 * failed for any reason but memory (REWRITES then says why). Errors only
 * for out of memory. */
pl_status *pl_fold_constants(pl_runtime *rt, const pl_graph *g, const char *path,
                             pl_graph **out_graph, pl_rewrites *rewrites);

/* Marks in IS_CONST (one entry per tensor of G) the tensors that are
 * constant or that pl_fold_constants would make constant (before its
 * session runs: a folding that then fails leaves them computed). False
 * when out of memory. */
bool pl_fold_mark_constants(const pl_graph *g, bool *is_const);

#endif
