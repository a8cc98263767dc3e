/* log.c — formats log lines and hands them to the runtime's sink (stderr
 * unless the application set one). One line per call, never interleaved
 * mid-line: the line is formatted first and written with one call. */
#include "log.h"

#include <stdio.h>

static const char *pl_log_level_name(pl_log_level level)
{
    switch (level) {
    case PL_LOG_ERROR: return "error";
    case PL_LOG_WARN: return "warning";
    case PL_LOG_INFO: return "info";
    case PL_LOG_DEBUG: return "debug";
    }
    return "log";
}

void pl_logv(const pl_logger *logger, pl_log_level level, const char *who,
             const char *fmt, va_list ap)
{
    if (logger != NULL && level > logger->level)
        return;
    char body[1024];
    vsnprintf(body, sizeof body, fmt, ap);
    char line[1200];
    if (who != NULL)
        snprintf(line, sizeof line, "%s: %s", who, body);
    else
        snprintf(line, sizeof line, "%s", body);
    if (logger != NULL && logger->sink != NULL) {
        logger->sink(logger->user, (int)level, line);
        return;
    }
    fprintf(stderr, "plinth: %s: %s\n", pl_log_level_name(level), line);
}

void pl_log(const pl_logger *logger, pl_log_level level, const char *who,
            const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pl_logv(logger, level, who, fmt, ap);
    va_end(ap);
}
