/* status.h — the core's pl_status: a code and a message, allocated by the
 * core only (modules make theirs through the host table), plus the overflow
 * checked size helpers every parser in the core uses. */
#ifndef PL_CORE_STATUS_H
#define PL_CORE_STATUS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plinth/plinth.h"

/* va_list form of pl_status_create. */
pl_status *pl_status_createv(pl_code code, const char *fmt, va_list ap);

/* Returns a new status whose message is PREFIX followed by the message of
 * CAUSE; takes ownership of CAUSE. NULL when CAUSE is NULL. */
pl_status *pl_status_wrap(pl_status *cause, const char *fmt, ...)
    PL_PRINTF_LIKE(2, 3);

/* True when STATUS is NULL or was made by the core (a module's through the
 * host table). Reads the first bytes STATUS points at: for checking what a
 * module returned (check.c), which must not then be freed when false. */
bool pl_status_is_core(const pl_status *status);

/* Propagates a failing status to the caller. */
#define PL_RETURN_IF_ERROR(expr)             \
    do {                                     \
        pl_status *pl_status_tmp_ = (expr);  \
        if (pl_status_tmp_ != NULL)          \
            return pl_status_tmp_;           \
    } while (0)

/* a * b and a + b into *out; false (and *out untouched) on overflow. */
static inline bool pl_size_mul(size_t a, size_t b, size_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}
static inline bool pl_size_add(size_t a, size_t b, size_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

/* strdup that returns NULL on NULL, through the thread's current allocator
 * (alloc.h); freed with pl_free. */
char *pl_strdup(const char *s);
/* printf into a new string from the thread's current allocator; NULL when
 * out of memory. Freed with pl_free. */
char *pl_strdupf(const char *fmt, ...) PL_PRINTF_LIKE(1, 2);

/* Appends a copy of TEXT to the list *ITEMS of *N strings (each and the
 * array allocated with pl_malloc); false, the list unchanged, when out of
 * memory. Session warnings and the optimiser's rewrites are such lists. */
bool pl_lines_append(char ***items, size_t *n, const char *text);

#endif
