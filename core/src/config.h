/* config.h — backend.ini, read with inih into sections of key/value entries
 * that remember their line, plus the validated [runtime] and [placement]
 * settings. */
#ifndef PL_CORE_CONFIG_H
#define PL_CORE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "plinth/host.h"
#include "plinth/plinth.h"

/* [runtime] probe: how a module file seen for the first time is tried. */
typedef enum pl_probe_mode {
    PL_PROBE_FORK = 0,  /* in a forked child first (probe.c) */
    PL_PROBE_NONE = 1   /* straight into the process */
} pl_probe_mode;
#define PL_PROBE_TIMEOUT_MS_DEFAULT 5000

typedef struct pl_config_entry {
    char *key;
    char *value;
    int line;
} pl_config_entry;

typedef enum pl_enabled {
    PL_ENABLED_AUTO = 0,  /* load it; no device is not an error */
    PL_ENABLED_YES = 1,   /* load it; anything but loaded is an error line */
    PL_ENABLED_NO = 2     /* never open the file */
} pl_enabled;

typedef struct pl_config_section {
    char *name;
    int line;
    pl_config_entry *entries;
    size_t n_entries;
    size_t cap_entries;
    pl_enabled enabled;   /* module sections only */
    bool is_module;       /* not [runtime] or [placement] */
} pl_config_section;

typedef struct pl_config {
    pl_allocator alloc;   /* everything below is made with it */
    char *path;           /* absolute path of the file read, NULL if none */
    char *dir;            /* its directory (or the working directory) */
    pl_config_section *sections;
    size_t n_sections;
    size_t cap_sections;
    /* [runtime] */
    char **module_paths;  /* absolute; files or directories */
    bool *module_path_relative; /* each as written (secure mode skips these) */
    size_t n_module_paths;
    bool modules_by_path;  /* `modules =` written empty: the application
                              loads its modules itself (pl_runtime_load_module) */
    pl_engine_kind engine;
    int threads;          /* as written: 0 = all cores */
    int spin_us;          /* idle CPU threads spin this long before sleeping */
    char *cache_dir;      /* absolute, or "" when off */
    uint64_t cache_max_bytes; /* [runtime] cache_max_mb; 0: no limit */
    pl_log_level log_level;
    pl_probe_mode probe;      /* how a module file is tried first (probe.h) */
    int probe_timeout_ms;     /* how long one probe may take */
    /* [placement] */
    char **placement;         /* "module" or "module:device", checked */
    size_t n_placement;
    int placement_line;       /* of the order key, 0 if none */
    int min_subgraph_nodes;   /* >= 1 */
    bool strict;              /* a failed compile fails the session */
    bool choose_by_cost;      /* choose = cost (else first): partition.h */
    bool measure;             /* measure = yes: measure.h */
    char **pins;              /* "node=backend" */
    size_t n_pins;
    /* [graph] */
    int optimize;             /* pl_optimize_level: 0 none, 1 basic, 2 all */
    bool qdq_int8;            /* [graph] qdq = int8 (true) or float */
    bool f16_as_f32;          /* [graph] f16 = f32 (true) or keep (widen.c) */
    /* "file:line: warning" lines, in order */
    char **warnings;
    size_t n_warnings;
} pl_config;

/* Reads PATH (NULL: an empty configuration rooted at the working directory).
 * A missing file, a syntax error or a bad value fails with a message
 * "<file>:<line>: <what>, accepted: <values>"; unknown sections and keys
 * become warnings. Everything the configuration holds is allocated with
 * ALLOC (ctl NULL: the system allocator). */
pl_status *pl_config_load(pl_allocator alloc, const char *path,
                          pl_config **out_config);
void pl_config_destroy(pl_config *config);

/* The section named NAME, or NULL. */
const pl_config_section *pl_config_find_section(const pl_config *config,
                                                const char *name);
/* The value of KEY in SECTION, or NULL. */
const char *pl_config_section_get(const pl_config_section *section,
                                  const char *key);

/* The [modules] entry sha256.MODULE that pins MODULE's file, or NULL. Its
 * value is 64 hex digits (checked when the file was read). */
const pl_config_entry *pl_config_pin(const pl_config *c, const char *module);

/* Appends a formatted warning line; false when out of memory. */
bool pl_config_add_warning(pl_config *config, const char *fmt, ...)
    PL_PRINTF_LIKE(2, 3);

#endif
