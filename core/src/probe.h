/* probe.h — a module file's first run, in a forked child. Loading a module
 * runs its code in the process (constructors, entry point, init,
 * configure); a module that aborts, faults or hangs there would take the
 * program down with it. So the first time the loader sees a version of a
 * file, a child process does all of that first, under a time limit, and
 * only a module that came through is loaded for real. */
#ifndef PL_CORE_PROBE_H
#define PL_CORE_PROBE_H

#include "registry.h"

/* What the child is doing, as it reports to the parent before each step. */
typedef enum pl_probe_stage_id {
    PL_PROBE_STAGE_LOAD = 'l',      /* dlopen: its constructors run */
    PL_PROBE_STAGE_ENTRY = 'e',     /* pl_module_entry */
    PL_PROBE_STAGE_INIT = 'i',
    PL_PROBE_STAGE_CONFIGURE = 'c',
    PL_PROBE_STAGE_DEVICES = 'd',   /* device_count, device_properties */
    PL_PROBE_STAGE_EXTENSIONS = 'x', /* extensions (ABI 1.4) */
    PL_PROBE_STAGE_SHUTDOWN = 's',  /* shutdown, dlclose: its destructors */
    PL_PROBE_STAGE_DONE = 'K'
} pl_probe_stage_id;

/* Tries the module of M (note read, section set, not yet opened) from its
 * checked file REAL in a child, unless a verdict for this version of the
 * file (path, inode, size, mtime and contents) and these configure keys is
 * remembered: in the cache folder when there is one, else in this process.
 * NULL: the module came through and may be loaded here. Otherwise the
 * reason, as one line: "crashed in init (SIGSEGV)", "init did not return
 * within 5000 ms", "exited with status 3 in configure". A child that cannot
 * be started is not a verdict: the module is loaded as without a probe,
 * with a warning. */
pl_status *pl_probe_module(pl_runtime *rt, pl_module *m, const char *real);

/* pl_probe_module for N modules at once: every child that is needed starts
 * before any is waited for, so a start pays for the slowest probe rather
 * than for the sum, and each child has its own time limit. VERDICTS[i]
 * receives module i's rejection, or NULL. */
void pl_probe_modules(pl_runtime *rt, pl_module *const *mods, char *const *reals, size_t n,
                      pl_status **verdicts);

/* Marks the stage the loader is about to run. In a probe child it tells
 * the parent; anywhere else it does nothing. */
void pl_probe_stage(pl_probe_stage_id stage);

#endif
