/* hostbuf.h — the host buffers a session run makes for outputs the caller
 * left without memory, which the caller returns with pl_buffer_free: large
 * ones are kept for the next runs instead of going back to the C heap. */
#ifndef PL_HOSTBUF_H
#define PL_HOSTBUF_H

#include <stddef.h>

/* A 64-byte aligned buffer of at least BYTES (a kept one when one fits),
 * or NULL when out of memory. */
void *pl_hostbuf_get(size_t bytes);

/* Takes back a buffer pl_hostbuf_get made (or any 64-byte aligned heap
 * buffer): kept for a later pl_hostbuf_get, or freed. NULL is ignored. */
void pl_hostbuf_put(void *data);

/* Frees every kept buffer (tests; the last runtime's destruction). */
void pl_hostbuf_flush(void);

#endif
