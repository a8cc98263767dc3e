/* sha256.h — SHA-256 (FIPS 180-4), for pinning module files to their
 * contents ([modules] sha256.NAME in backend.ini). */
#ifndef PL_CORE_SHA256_H
#define PL_CORE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "plinth/plinth.h"

typedef struct pl_sha256 {
    uint32_t h[8];
    uint64_t bytes;
    unsigned char block[64];
    size_t used;
} pl_sha256;

void pl_sha256_init(pl_sha256 *s);
void pl_sha256_add(pl_sha256 *s, const void *data, size_t n);
/* Writes the digest as 64 lowercase hex digits and a NUL. */
void pl_sha256_hex(pl_sha256 *s, char out[65]);

/* The digest of the open file FD, read from its start. */
pl_status *pl_sha256_fd(int fd, char out[65]);

#endif
