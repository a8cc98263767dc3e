/* sha256.c — SHA-256 as FIPS 180-4 specifies it: 64-byte blocks, the
 * message padded with 0x80, zeros and its length in bits. */
#include "sha256.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "status.h"

static const uint32_t pl_sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

static uint32_t pl_rotr(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

static void pl_sha256_block(pl_sha256 *s, const unsigned char *b)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
               (uint32_t)b[4 * i + 2] << 8 | (uint32_t)b[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = pl_rotr(w[i - 15], 7) ^ pl_rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = pl_rotr(w[i - 2], 17) ^ pl_rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = s->h[0], bb = s->h[1], c = s->h[2], d = s->h[3];
    uint32_t e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = h + (pl_rotr(e, 6) ^ pl_rotr(e, 11) ^ pl_rotr(e, 25)) +
                      ((e & f) ^ (~e & g)) + pl_sha256_k[i] + w[i];
        uint32_t t2 = (pl_rotr(a, 2) ^ pl_rotr(a, 13) ^ pl_rotr(a, 22)) +
                      ((a & bb) ^ (a & c) ^ (bb & c));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = bb;
        bb = a;
        a = t1 + t2;
    }
    s->h[0] += a;
    s->h[1] += bb;
    s->h[2] += c;
    s->h[3] += d;
    s->h[4] += e;
    s->h[5] += f;
    s->h[6] += g;
    s->h[7] += h;
}

void pl_sha256_init(pl_sha256 *s)
{
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->bytes = 0;
    s->used = 0;
}

void pl_sha256_add(pl_sha256 *s, const void *data, size_t n)
{
    const unsigned char *p = data;
    s->bytes += n;
    if (s->used > 0) {
        size_t take = 64 - s->used < n ? 64 - s->used : n;
        memcpy(s->block + s->used, p, take);
        s->used += take;
        p += take;
        n -= take;
        if (s->used < 64)
            return;
        pl_sha256_block(s, s->block);
        s->used = 0;
    }
    for (; n >= 64; p += 64, n -= 64)
        pl_sha256_block(s, p);
    memcpy(s->block, p, n);
    s->used = n;
}

void pl_sha256_hex(pl_sha256 *s, char out[65])
{
    uint64_t bits = s->bytes * 8;
    unsigned char pad[72] = {0x80};
    size_t padlen = s->used < 56 ? 56 - s->used : 120 - s->used;
    unsigned char len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)(bits >> (56 - 8 * i));
    pl_sha256_add(s, pad, padlen);
    pl_sha256_add(s, len, 8);
    for (int i = 0; i < 8; i++)
        snprintf(out + 8 * i, 9, "%08x", (unsigned)s->h[i]);
}

pl_status *pl_sha256_fd(int fd, char out[65])
{
    pl_sha256 s;
    pl_sha256_init(&s);
    unsigned char buf[1 << 16];
    off_t at = 0;
    for (;;) {
        ssize_t r = pread(fd, buf, sizeof buf, at);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return pl_status_create(PL_CODE_IO_ERROR, "cannot read it: %s", strerror(errno));
        if (r == 0)
            break;
        pl_sha256_add(&s, buf, (size_t)r);
        at += r;
    }
    pl_sha256_hex(&s, out);
    return NULL;
}
