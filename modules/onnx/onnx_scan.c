/* onnx_scan.c — the wire check that runs before protobuf-c decodes a model.
 *
 * protobuf-c's decoder answers a malformed file with NULL and no reason,
 * recurses once per nested message with no bound, and allocates what a
 * length field claims only after checking it against the buffer. This walk
 * of the protobuf wire format, driven by the generated message descriptors,
 * finds the first thing wrong and says where: a truncated field, a wire type
 * the field cannot have, a length past the end, nesting deeper than
 * OX_MAX_DEPTH, more nodes than the limit. Fields this onnx.proto does not
 * know are skipped, as protobuf requires. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "onnx_internal.h"

typedef struct ox_scanner {
    const ox_import *imp;
    const uint8_t *base;
    uint64_t nodes;
} ox_scanner;

#define OX_CORRUPT "not a valid ONNX protobuf (truncated or corrupt)"

/* Reads a varint at *pos of [p, end). 1: read; 0: truncated; -1: longer
 * than 10 bytes. */
static int ox_varint(const uint8_t *p, size_t end, size_t *pos, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < 10; i++) {
        if (*pos >= end)
            return 0;
        uint8_t byte = p[(*pos)++];
        v |= (uint64_t)(byte & 0x7f) << (7 * i);
        if (!(byte & 0x80)) {
            *out = v;
            return 1;
        }
    }
    return -1;
}

static const char *ox_wire_name(unsigned wire)
{
    static const char *const names[] = {"varint", "64-bit", "length-delimited",
                                        "group start", "group end", "32-bit",
                                        "invalid (6)", "invalid (7)"};
    return names[wire & 7];
}

/* The wire type a field of type T is written with when not packed. */
static unsigned ox_wire_of(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
        return 5;
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return 1;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE:
        return 2;
    default:
        return 0;
    }
}

static pl_status *ox_scan_error(const ox_scanner *s, const uint8_t *at,
                                const ProtobufCMessageDescriptor *desc,
                                const ProtobufCFieldDescriptor *f, const char *fmt, ...)
    PL_PRINTF_LIKE(5, 6);

static pl_status *ox_scan_error(const ox_scanner *s, const uint8_t *at,
                                const ProtobufCMessageDescriptor *desc,
                                const ProtobufCFieldDescriptor *f, const char *fmt, ...)
{
    char why[256], field[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (f != NULL)
        snprintf(field, sizeof field, "field '%s' of %s", f->name, desc->name);
    else
        snprintf(field, sizeof field, "a field of %s", desc->name);
    return ox_error(s->imp, PL_CODE_INVALID_ARGUMENT, OX_CORRUPT ": at byte %zu, %s: %s",
                    (size_t)(at - s->base), field, why);
}

/* Checks a packed repeated field's payload [p, p+len). */
static pl_status *ox_scan_packed(const ox_scanner *s, const uint8_t *p, size_t len,
                                 const ProtobufCMessageDescriptor *desc,
                                 const ProtobufCFieldDescriptor *f)
{
    unsigned wire = ox_wire_of(f->type);
    size_t width = wire == 5 ? 4 : wire == 1 ? 8 : 0;
    if (width != 0) {
        if (len % width != 0)
            return ox_scan_error(s, p, desc, f,
                                 "packed payload of %zu bytes is not a whole number "
                                 "of %zu-byte values",
                                 len, width);
        return NULL;
    }
    size_t pos = 0;
    while (pos < len) {
        uint64_t v;
        int r = ox_varint(p, len, &pos, &v);
        if (r <= 0)
            return ox_scan_error(s, p + pos, desc, f,
                                 "%s", r == 0 ? "packed varint cut off by the end of the field"
                                              : "varint longer than 10 bytes");
    }
    return NULL;
}

static pl_status *ox_scan_message(ox_scanner *s, const ProtobufCMessageDescriptor *desc,
                                  const uint8_t *p, size_t len, int depth)
{
    size_t pos = 0;
    while (pos < len) {
        const uint8_t *at = p + pos;
        uint64_t tag, v;
        int r = ox_varint(p, len, &pos, &tag);
        if (r <= 0)
            return ox_scan_error(s, at, desc, NULL,
                                 "%s", r == 0 ? "tag cut off by the end of the data" : "tag varint longer than 10 bytes");
        uint64_t number = tag >> 3;
        unsigned wire = (unsigned)(tag & 7);
        if (number == 0 || number > 536870911u)
            return ox_scan_error(s, at, desc, NULL, "field number %" PRIu64 " is invalid", number);
        const ProtobufCFieldDescriptor *f =
            protobuf_c_message_descriptor_get_field(desc, (unsigned)number);
        if (f != NULL) {
            unsigned want = ox_wire_of(f->type);
            bool packed_ok = f->label == PROTOBUF_C_LABEL_REPEATED && want != 2 && wire == 2;
            if (wire != want && !packed_ok)
                return ox_scan_error(s, at, desc, f,
                                     "wire type %u (%s), expected %u (%s)", wire,
                                     ox_wire_name(wire), want, ox_wire_name(want));
        }
        switch (wire) {
        case 0:
            r = ox_varint(p, len, &pos, &v);
            if (r <= 0)
                return ox_scan_error(s, at, desc, f,
                                     "%s", r == 0 ? "varint cut off by the end of the data" : "varint longer than 10 bytes");
            break;
        case 1:
        case 5: {
            size_t need = wire == 1 ? 8 : 4;
            if (len - pos < need)
                return ox_scan_error(s, at, desc, f,
                                     "%zu-byte value cut off: %zu bytes remain", need,
                                     len - pos);
            pos += need;
            break;
        }
        case 2: {
            r = ox_varint(p, len, &pos, &v);
            if (r <= 0)
                return ox_scan_error(s, at, desc, f,
                                     "%s", r == 0 ? "length cut off by the end of the data" : "length varint longer than 10 bytes");
            if (v > len - pos)
                return ox_scan_error(s, at, desc, f,
                                     "claims %" PRIu64 " bytes, only %zu remain", v,
                                     len - pos);
            const uint8_t *body = p + pos;
            pos += (size_t)v;
            if (f == NULL)
                break;
            if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
                if (depth + 1 > OX_MAX_DEPTH)
                    return ox_scan_error(s, at, desc, f,
                                         "messages nested deeper than %d levels",
                                         OX_MAX_DEPTH);
                if (f->descriptor == &onnx__node_proto__descriptor &&
                    ++s->nodes > s->imp->limits.max_nodes)
                    return ox_error(s->imp, PL_CODE_INVALID_ARGUMENT,
                                    "more than %" PRIu64
                                    " nodes (the onnx module's max_nodes)",
                                    s->imp->limits.max_nodes);
                OX_RETURN_IF_ERROR(
                    ox_scan_message(s, f->descriptor, body, (size_t)v, depth + 1));
            } else if (ox_wire_of(f->type) != 2) {
                OX_RETURN_IF_ERROR(ox_scan_packed(s, body, (size_t)v, desc, f));
            }
            break;
        }
        default:
            return ox_scan_error(s, at, desc, f,
                                 "wire type %u (%s) is not used by ONNX", wire,
                                 ox_wire_name(wire));
        }
    }
    return NULL;
}

pl_status *ox_scan(const ox_import *imp, const uint8_t *data, size_t len)
{
    ox_scanner s = {.imp = imp, .base = data};
    return ox_scan_message(&s, &onnx__model_proto__descriptor, data, len, 0);
}
