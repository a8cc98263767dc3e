/* status.c — errors as values. Every failure in Plinth travels as a
 * pl_status: a code plus a message that names what failed and why. Statuses
 * are allocated here, by the core, for modules too (through the host table),
 * so exactly one allocator makes and frees them: malloc, not a runtime's
 * allocator, since a status outlives the call and may outlive the runtime.
 * When memory runs out a static status is returned instead, which
 * pl_status_free leaves alone. pl_strdup and pl_strdupf allocate through
 * the thread's current allocator (alloc.h): their strings go to pl_free. */
#include "status.h"

#include "alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* magic tells a status the core made from anything else a module might
 * return in its place (pl_status_is_core, for `plinth check-module`). */
#define PL_STATUS_MAGIC 0x706c5374u /* "plSt" */

struct pl_status {
    uint32_t magic;
    pl_code code;
    bool is_static;
    char message[];
};

static struct {
    uint32_t magic;
    pl_code code;
    bool is_static;
    char message[40];
} pl_status_oom_ = {PL_STATUS_MAGIC, PL_CODE_OUT_OF_MEMORY, true,
                    "out of memory creating a status"};

static pl_status *pl_status_oom(void)
{
    return (pl_status *)(void *)&pl_status_oom_;
}

pl_status *pl_status_createv(pl_code code, const char *fmt, va_list ap)
{
    if (code == PL_CODE_OK)
        return NULL;
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt ? fmt : "", copy);
    va_end(copy);
    if (n < 0)
        n = 0;
    pl_status *st = malloc(sizeof *st + (size_t)n + 1);
    if (st == NULL)
        return pl_status_oom();
    st->magic = PL_STATUS_MAGIC;
    st->code = code;
    st->is_static = false;
    if (fmt != NULL)
        vsnprintf(st->message, (size_t)n + 1, fmt, ap);
    else
        st->message[0] = '\0';
    return st;
}

pl_status *pl_status_create(pl_code code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pl_status *st = pl_status_createv(code, fmt, ap);
    va_end(ap);
    return st;
}

pl_status *pl_status_wrap(pl_status *cause, const char *fmt, ...)
{
    if (cause == NULL)
        return NULL;
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    pl_status *st = pl_status_create(pl_status_code(cause), "%s%s", prefix,
                                     pl_status_message(cause));
    pl_status_free(cause);
    return st;
}

pl_code pl_status_code(const pl_status *status)
{
    return status ? status->code : PL_CODE_OK;
}

const char *pl_status_message(const pl_status *status)
{
    return status ? status->message : "";
}

void pl_status_free(pl_status *status)
{
    if (status != NULL && !status->is_static)
        free(status);
}

bool pl_status_is_core(const pl_status *status)
{
    return status == NULL || status->magic == PL_STATUS_MAGIC;
}

const char *pl_code_name(pl_code code)
{
    switch (code) {
    case PL_CODE_OK: return "ok";
    case PL_CODE_CANCELLED: return "cancelled";
    case PL_CODE_INVALID_ARGUMENT: return "invalid argument";
    case PL_CODE_NOT_FOUND: return "not found";
    case PL_CODE_UNSUPPORTED: return "unsupported";
    case PL_CODE_INCOMPATIBLE: return "incompatible";
    case PL_CODE_OUT_OF_MEMORY: return "out of memory";
    case PL_CODE_DEVICE_ERROR: return "device error";
    case PL_CODE_NO_DEVICE: return "no device";
    case PL_CODE_PERMISSION_DENIED: return "permission denied";
    case PL_CODE_FAILED_PRECONDITION: return "failed precondition";
    case PL_CODE_IO_ERROR: return "i/o error";
    case PL_CODE_INTERNAL: return "internal error";
    }
    return "unknown code";
}

char *pl_strdup(const char *s)
{
    return pl_xstrdup(s);
}

bool pl_lines_append(char ***items, size_t *n, const char *text)
{
    char *copy = pl_xstrdup(text);
    char **grown = copy != NULL ? pl_realloc(*items, (*n + 1) * sizeof *grown) : NULL;
    if (grown == NULL) {
        pl_free(copy);
        return false;
    }
    grown[(*n)++] = copy;
    *items = grown;
    return true;
}

char *pl_strdupf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *out = pl_alloc_vstrdupf(pl_alloc_current(), fmt, ap);
    va_end(ap);
    return out;
}
