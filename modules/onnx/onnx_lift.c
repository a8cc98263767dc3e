/* onnx_lift.c — takes the initializers' raw_data out of a model before
 * protobuf-c decodes it, so that the weights are read in place from the
 * mapped file instead of being copied twice.
 *
 * protobuf-c copies every bytes field into memory of its own; the builder
 * then copies each constant again into the graph. On this project's 2-core
 * machines a fresh page costs about 3 us to fault in, and a 6 MB model spent
 * 15 ms of its load in those two copies. The lift writes a second, small
 * wire buffer: the ModelProto with its graph's initializers rewritten
 * without field 9 (raw_data), every enclosing length recomputed, and
 * remembers where each initializer's raw_data lies in the file. After
 * decoding, the raw_data fields are pointed there (attach) and cleared
 * again before protobuf-c frees the message (detach); the file stays mapped
 * in between.
 *
 * A FLOAT tensor's packed float_data (a DOUBLE's double_data) is lifted
 * the same way on a little-endian host, and attached as raw_data: the same
 * bytes (ox_lift_tensor).
 *
 * It runs after ox_scan, so the wire format is known to be sound. Anything
 * unusual — a second graph field (protobuf would merge the two), an
 * initializer with raw_data twice (the last would win), no initializers
 * with raw_data at all — and it lifts nothing: the model decodes as it
 * is. Bodies of control-flow nodes and Constant nodes keep their copies;
 * exporters put weights in the initializers. */
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

enum { OX_MODEL_GRAPH = 7, OX_GRAPH_INITIALIZER = 5, OX_TENSOR_RAW_DATA = 9 };

/* One field of a message: its number, wire type, and the bytes it spans. */
typedef struct ox_field {
    uint64_t number;
    unsigned wire;
    const uint8_t *start, *body, *end; /* tag .. payload .. next field */
} ox_field;

static int ox_lift_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < 10 && *p < end; i++) {
        uint8_t byte = *(*p)++;
        v |= (uint64_t)(byte & 0x7f) << (7 * i);
        if (!(byte & 0x80)) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

/* Reads the field at *P of [*P, END); 0 on anything malformed. */
static int ox_next_field(const uint8_t **p, const uint8_t *end, ox_field *f)
{
    uint64_t tag, v;
    f->start = *p;
    if (!ox_lift_varint(p, end, &tag))
        return 0;
    f->number = tag >> 3;
    f->wire = (unsigned)(tag & 7);
    switch (f->wire) {
    case 0:
        f->body = *p;
        if (!ox_lift_varint(p, end, &v))
            return 0;
        break;
    case 1:
    case 5: {
        size_t need = f->wire == 1 ? 8 : 4;
        if ((size_t)(end - *p) < need)
            return 0;
        f->body = *p;
        *p += need;
        break;
    }
    case 2:
        if (!ox_lift_varint(p, end, &v) || v > (uint64_t)(end - *p))
            return 0;
        f->body = *p;
        *p += v;
        break;
    default:
        return 0;
    }
    f->end = *p;
    return 1;
}


static uint8_t *ox_put_varint(uint8_t *o, uint64_t v)
{
    while (v >= 0x80) {
        *o++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *o++ = (uint8_t)v;
    return o;
}

/* The walk below runs twice: first with OUT NULL to size the new buffer
 * and count the initializers, then to write it and record where their
 * raw_data lies. Each function takes the offset in OUT it writes at and
 * returns the offset after what it wrote, or SIZE_MAX to lift nothing. */
typedef struct ox_lift_walk {
    uint8_t *out;        /* NULL while sizing */
    ox_lift_raw *raws;   /* NULL while sizing */
    size_t n_raws;
    size_t n_graphs;
} ox_lift_walk;

static size_t ox_put_bytes(const ox_lift_walk *w, size_t at, const uint8_t *p, size_t n)
{
    if (w->out != NULL)
        memcpy(w->out + at, p, n);
    return at + n;
}

/* A TensorProto without its raw_data, or on a little-endian host without
 * its packed float_data of a FLOAT tensor or double_data of a DOUBLE one
 * (fixed-width little-endian values: the bytes raw_data would hold; MXNet's
 * exporter writes every weight so, and each was copied into this buffer,
 * decoded into an array and copied again: two thirds of loading its
 * ResNet-18). Such a field is attached as raw_data after decoding. */
enum { OX_TENSOR_DIMS = 1, OX_TENSOR_DATA_TYPE = 2, OX_TENSOR_FLOAT_DATA = 4,
       OX_TENSOR_DOUBLE_DATA = 10, OX_FLOAT = 1, OX_DOUBLE = 11 };

/* Multiplies *COUNT by the dims in field F (a varint, or packed varints);
 * 0 when one is negative or the product passes 2^62. */
static int ox_lift_dims(const ox_field *f, uint64_t *count)
{
    if (f->wire != 0 && f->wire != 2)
        return 0;
    const uint8_t *b = f->body;
    do {
        uint64_t d;
        if (!ox_lift_varint(&b, f->end, &d) || d > ((uint64_t)1 << 62) ||
            (d != 0 && *count > ((uint64_t)1 << 62) / d))
            return 0;
        *count *= d;
    } while (f->wire == 2 && b < f->end);
    return 1;
}

static size_t ox_lift_tensor(ox_lift_walk *w, const uint8_t *p, const uint8_t *end, size_t at)
{
    /* which field holds the bytes: raw_data, else a packed typed field */
    int raws = 0, floats = 0, doubles = 0, dims_ok = 1;
    uint64_t dtype = 0, count = 1;
    size_t typed_len = 0;
    ox_field f;
    for (const uint8_t *q = p; q < end;) {
        if (!ox_next_field(&q, end, &f))
            return SIZE_MAX;
        if (f.number == OX_TENSOR_DIMS)
            dims_ok &= ox_lift_dims(&f, &count);
        if ((f.number == OX_TENSOR_FLOAT_DATA || f.number == OX_TENSOR_DOUBLE_DATA) &&
            f.wire == 2)
            typed_len = (size_t)(f.end - f.body);
        if (f.number == OX_TENSOR_RAW_DATA && f.wire == 2)
            raws++;
        else if (f.number == OX_TENSOR_FLOAT_DATA)
            floats += f.wire == 2 ? 1 : 2; /* (unpacked: never lifted) */
        else if (f.number == OX_TENSOR_DOUBLE_DATA)
            doubles += f.wire == 2 ? 1 : 2;
        else if (f.number == OX_TENSOR_DATA_TYPE && f.wire == 0) {
            const uint8_t *b = f.body;
            if (!ox_lift_varint(&b, f.end, &dtype))
                return SIZE_MAX;
        }
    }
    if (raws > 1)
        return SIZE_MAX;
    uint64_t lift = raws == 1 ? OX_TENSOR_RAW_DATA : 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* (only values that fill the shape: a wrong count keeps its message) */
    if (raws == 0 && floats == 1 && doubles == 0 && dtype == OX_FLOAT && dims_ok &&
        typed_len == count * 4)
        lift = OX_TENSOR_FLOAT_DATA;
    if (raws == 0 && doubles == 1 && floats == 0 && dtype == OX_DOUBLE && dims_ok &&
        typed_len == count * 8)
        lift = OX_TENSOR_DOUBLE_DATA;
#endif
    int lifted = 0;
    while (p < end) {
        if (!ox_next_field(&p, end, &f))
            return SIZE_MAX;
        if (lift != 0 && f.number == lift && f.wire == 2) {
            lifted = 1;
            if (w->raws != NULL)
                w->raws[w->n_raws] = (ox_lift_raw){f.body, (size_t)(f.end - f.body)};
            continue;
        }
        at = ox_put_bytes(w, at, f.start, (size_t)(f.end - f.start));
    }
    /* One record per initializer, in order; SIZE_MAX: it had no raw_data. */
    if (!lifted && w->raws != NULL)
        w->raws[w->n_raws] = (ox_lift_raw){NULL, SIZE_MAX};
    w->n_raws++;
    return at;
}

/* Field NUMBER of wire type 2 holding a message of N bytes: its tag and
 * length. */
static size_t ox_put_header(const ox_lift_walk *w, size_t at, uint64_t number, size_t n)
{
    uint8_t head[20], *h = ox_put_varint(head, number << 3 | 2);
    h = ox_put_varint(h, n);
    return ox_put_bytes(w, at, head, (size_t)(h - head));
}

typedef size_t (*ox_lift_fn)(ox_lift_walk *, const uint8_t *, const uint8_t *, size_t);

/* Rewrites the message F holds with LIFT, under a new length. */
static size_t ox_lift_nested(ox_lift_walk *w, const ox_field *f, ox_lift_fn lift, size_t at)
{
    ox_lift_walk sizing = {.n_raws = w->n_raws};
    size_t n = lift(&sizing, f->body, f->end, 0);
    if (n == SIZE_MAX)
        return SIZE_MAX;
    at = ox_put_header(w, at, f->number, n);
    size_t after = lift(w, f->body, f->end, at);
    return after == at + n ? after : SIZE_MAX;
}

/* A GraphProto with its initializers lifted. */
static size_t ox_lift_graph(ox_lift_walk *w, const uint8_t *p, const uint8_t *end, size_t at)
{
    ox_field f;
    while (p < end && at != SIZE_MAX) {
        if (!ox_next_field(&p, end, &f))
            return SIZE_MAX;
        if (f.number == OX_GRAPH_INITIALIZER && f.wire == 2)
            at = ox_lift_nested(w, &f, ox_lift_tensor, at);
        else
            at = ox_put_bytes(w, at, f.start, (size_t)(f.end - f.start));
    }
    return at;
}

static size_t ox_lift_model(ox_lift_walk *w, const uint8_t *p, const uint8_t *end, size_t at)
{
    ox_field f;
    while (p < end && at != SIZE_MAX) {
        if (!ox_next_field(&p, end, &f))
            return SIZE_MAX;
        if (f.number != OX_MODEL_GRAPH || f.wire != 2) {
            at = ox_put_bytes(w, at, f.start, (size_t)(f.end - f.start));
            continue;
        }
        if (++w->n_graphs > 1)
            return SIZE_MAX;
        at = ox_lift_nested(w, &f, ox_lift_graph, at);
    }
    return at;
}

bool ox_lift(const uint8_t *data, size_t len, ox_lifted *out)
{
    memset(out, 0, sizeof *out);
    ox_lift_walk w = {0};
    size_t n = ox_lift_model(&w, data, data + len, 0);
    size_t lifted = 0;
    if (n == SIZE_MAX || w.n_raws == 0)
        return false;
    out->raws = malloc(w.n_raws * sizeof *out->raws);
    out->buf = malloc(n ? n : 1);
    if (out->raws == NULL || out->buf == NULL) {
        ox_lift_free(out);
        return false;
    }
    w = (ox_lift_walk){.out = out->buf, .raws = out->raws};
    if (ox_lift_model(&w, data, data + len, 0) != n) {
        ox_lift_free(out);
        return false;
    }
    for (size_t i = 0; i < w.n_raws; i++)
        if (out->raws[i].len != SIZE_MAX)
            lifted += out->raws[i].len;
    if (lifted == 0) { /* nothing worth a second decode of the layout */
        ox_lift_free(out);
        return false;
    }
    out->len = n;
    out->n_raws = w.n_raws;
    return true;
}

bool ox_lift_attach(Onnx__ModelProto *m, const ox_lifted *l)
{
    if (m->graph == NULL || m->graph->n_initializer != l->n_raws)
        return false;
    for (size_t i = 0; i < l->n_raws; i++) {
        Onnx__TensorProto *t = m->graph->initializer[i];
        if (t->has_raw_data)
            return false;
    }
    for (size_t i = 0; i < l->n_raws; i++) {
        if (l->raws[i].len == SIZE_MAX)
            continue;
        Onnx__TensorProto *t = m->graph->initializer[i];
        t->has_raw_data = 1;
        t->raw_data.len = l->raws[i].len;
        t->raw_data.data = l->raws[i].len ? (uint8_t *)l->raws[i].data : NULL;
    }
    return true;
}

void ox_lift_detach(Onnx__ModelProto *m, const ox_lifted *l)
{
    if (m == NULL || m->graph == NULL || l->raws == NULL)
        return;
    for (size_t i = 0; i < l->n_raws && i < m->graph->n_initializer; i++) {
        if (l->raws[i].len == SIZE_MAX)
            continue;
        Onnx__TensorProto *t = m->graph->initializer[i];
        t->has_raw_data = 0;
        t->raw_data.len = 0;
        t->raw_data.data = NULL;
    }
}

void ox_lift_free(ox_lifted *l)
{
    free(l->buf);
    free(l->raws);
    memset(l, 0, sizeof *l);
}
