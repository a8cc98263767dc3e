/* plinth/auto_pad.h — ONNX's auto_pad attribute (Conv, ConvTranspose, the
 * pooling ops, QLinearConv, ConvInteger) read and turned into explicit pads,
 * so that every module splits SAME padding the same way.
 *
 * Header-only (static inline) and standard C only: nothing crosses the
 * module boundary, so it adds nothing to the ABI and a module may include it
 * or not. The core's shape inference follows the same rules. */
#ifndef PLINTH_AUTO_PAD_H
#define PLINTH_AUTO_PAD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The values of auto_pad. PL_AUTO_PAD_INVALID marks a string that is none
 * of ONNX's, which the caller refuses with a message naming it. */
typedef enum pl_auto_pad {
    PL_AUTO_PAD_INVALID = -1,
    PL_AUTO_PAD_NOTSET = 0,     /* the `pads` attribute says */
    PL_AUTO_PAD_SAME_UPPER = 1, /* output = ceil(in / stride), odd pad at the end */
    PL_AUTO_PAD_SAME_LOWER = 2, /* the same, odd pad at the start */
    PL_AUTO_PAD_VALID = 3       /* no padding */
} pl_auto_pad;

/* The auto_pad value spelt by the LEN bytes at S (not NUL-terminated; S may
 * be NULL when LEN is 0). An empty string is NOTSET, as an absent
 * attribute is. */
static inline pl_auto_pad pl_auto_pad_parse(const char *s, size_t len)
{
    if (len == 0 || (len == 6 && memcmp(s, "NOTSET", 6) == 0))
        return PL_AUTO_PAD_NOTSET;
    if (len == 10 && memcmp(s, "SAME_UPPER", 10) == 0)
        return PL_AUTO_PAD_SAME_UPPER;
    if (len == 10 && memcmp(s, "SAME_LOWER", 10) == 0)
        return PL_AUTO_PAD_SAME_LOWER;
    if (len == 5 && memcmp(s, "VALID", 5) == 0)
        return PL_AUTO_PAD_VALID;
    return PL_AUTO_PAD_INVALID;
}

/* The same for a NUL-terminated string; NULL is NOTSET. */
static inline pl_auto_pad pl_auto_pad_parse_cstr(const char *s)
{
    return pl_auto_pad_parse(s, s != NULL ? strlen(s) : 0);
}

/* True for SAME_UPPER and SAME_LOWER. */
static inline int pl_auto_pad_is_same(pl_auto_pad mode)
{
    return mode == PL_AUTO_PAD_SAME_UPPER || mode == PL_AUTO_PAD_SAME_LOWER;
}

/* Splits TOTAL padding of one spatial axis as MODE says: SAME_UPPER puts
 * the odd element at the end, every other mode (SAME_LOWER, and
 * ConvTranspose's output_shape) at the start. */
static inline void pl_auto_pad_split(pl_auto_pad mode, int64_t total, int64_t *out_begin,
                                     int64_t *out_end)
{
    *out_begin = mode == PL_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
    *out_end = total - *out_begin;
}

/* SAME padding of one spatial axis of a convolution or pooling window: the
 * output has ceil(IN / STRIDE) elements (returned), and the pads that make
 * a window of EXTENT input elements ((kernel - 1) * dilation + 1) fit, never
 * negative, are split by MODE into *out_begin and *out_end. IN >= 0 and
 * STRIDE >= 1; the caller checks both. */
static inline int64_t pl_auto_pad_same(pl_auto_pad mode, int64_t in, int64_t stride,
                                       int64_t extent, int64_t *out_begin, int64_t *out_end)
{
    int64_t out = in / stride + (in % stride != 0);
    int64_t total = (out - 1) * stride + extent - in;
    pl_auto_pad_split(mode, total > 0 ? total : 0, out_begin, out_end);
    return out;
}

#ifdef __cplusplus
}
#endif

#endif /* PLINTH_AUTO_PAD_H */
