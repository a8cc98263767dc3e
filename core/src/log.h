/* log.h — the runtime's logger: a level and a sink, shared by the core and
 * (through the host table) by every module instance. */
#ifndef PL_CORE_LOG_H
#define PL_CORE_LOG_H

#include <stdarg.h>

#include "plinth/host.h"
#include "plinth/plinth.h"

typedef struct pl_logger {
    pl_log_level level;  /* lines above this level are dropped */
    pl_log_sink sink;    /* NULL: stderr */
    void *user;
} pl_logger;

/* Writes "plinth: <who>: <message>" (who may be NULL) if level passes. */
void pl_log(const pl_logger *logger, pl_log_level level, const char *who,
            const char *fmt, ...) PL_PRINTF_LIKE(4, 5);
void pl_logv(const pl_logger *logger, pl_log_level level, const char *who,
             const char *fmt, va_list ap);

#endif
