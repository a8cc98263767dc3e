/* freeze.c — an ONNX backend test with every graph input but the first
 * turned into an initializer holding its value from the test's first data
 * set. ONNX's node tests feed weights, biases, shapes and scales as graph
 * inputs; a backend that only takes constant weights (onednn's Conv, Gemm,
 * BatchNormalization, ConvTranspose…) refuses every such test, and the
 * node test would pass on the cpu fallback without exercising it. The
 * frozen copy is the same computation with the constants a real model has.
 *
 * Written with the protobuf-c code generated from onnx.proto: the model is
 * unpacked, edited and packed again, the data set's files are copied. */
#define _DEFAULT_SOURCE

#include "freeze.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx.pb-c.h"
#include "tensor_file.h"

static pl_status *cf_write_file(const char *path, const void *bytes, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return pl_status_create(PL_CODE_IO_ERROR, "%s: %s", path, strerror(errno));
    size_t put = len > 0 ? fwrite(bytes, 1, len, f) : 0;
    int closed = fclose(f);
    if (put != len || closed != 0)
        return pl_status_create(PL_CODE_IO_ERROR, "%s: write error", path);
    return NULL;
}

/* Copies FROM_DIR/NAME to TO_DIR/NAME. */
static pl_status *cf_copy_file(const char *from_dir, const char *to_dir, const char *name)
{
    char *from = cf_join_path(from_dir, name), *to = cf_join_path(to_dir, name);
    uint8_t *bytes = NULL;
    size_t len = 0;
    pl_status *st = from && to ? cf_file_read(from, &bytes, &len)
                               : pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    if (st == NULL)
        st = cf_write_file(to, bytes, len);
    free(bytes);
    free(from);
    free(to);
    return st;
}

static bool cf_is_init(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_initializer; i++)
        if (g->initializer[i]->name != NULL && strcmp(g->initializer[i]->name, name) == 0)
            return true;
    return false;
}

/* The graph's inputs that are not initializers get their values from
 * SET_DIR/input_K.pb, in order; all but the first become initializers. */
static pl_status *cf_freeze_graph(Onnx__GraphProto *g, const char *set_dir,
                                  size_t *out_frozen)
{
    *out_frozen = 0;
    size_t k = 0; /* index among fed inputs, as the data files are numbered */
    size_t n_kept = 0, n_moved = 0;
    Onnx__ValueInfoProto **kept = calloc(g->n_input + 1, sizeof *kept);
    Onnx__ValueInfoProto **moved = calloc(g->n_input + 1, sizeof *moved);
    pl_status *st = kept == NULL || moved == NULL
                        ? pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory")
                        : NULL;
    for (size_t i = 0; st == NULL && i < g->n_input; i++) {
        Onnx__ValueInfoProto *vi = g->input[i];
        const char *name = vi->name != NULL ? vi->name : "";
        if (cf_is_init(g, name) || k++ == 0) {
            kept[n_kept++] = vi;
            continue;
        }
        char file[64];
        snprintf(file, sizeof file, "input_%zu.pb", k - 1);
        char *path = cf_join_path(set_dir, file);
        uint8_t *bytes = NULL;
        size_t len = 0;
        st = path ? cf_file_read(path, &bytes, &len)
                  : pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
        Onnx__TensorProto *t = st == NULL ? onnx__tensor_proto__unpack(NULL, len, bytes) : NULL;
        free(bytes);
        if (st == NULL && t == NULL)
            st = pl_status_create(PL_CODE_INVALID_ARGUMENT, "%s: not a TensorProto", path);
        free(path);
        if (st != NULL)
            break;
        int32_t declared = vi->type != NULL && vi->type->tensor_type != NULL
                               ? vi->type->tensor_type->elem_type
                               : 0;
        if (declared != 0 && declared != t->data_type) {
            /* bfloat16 test data is stored as UINT16 bit patterns */
            if (declared == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16 &&
                t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__UINT16)
                t->data_type = declared;
            else
                st = pl_status_create(PL_CODE_UNSUPPORTED,
                                      "input '%s': the data is %s, the model declares %s", name,
                                      cf_onnx_type_name(t->data_type),
                                      cf_onnx_type_name(declared));
        }
        char *tname = strdup(name);
        Onnx__TensorProto **grown =
            realloc(g->initializer, (g->n_initializer + 1) * sizeof *grown);
        if (st == NULL && (tname == NULL || grown == NULL))
            st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
        if (grown != NULL)
            g->initializer = grown;
        if (st != NULL) {
            free(tname);
            onnx__tensor_proto__free_unpacked(t, NULL);
            break;
        }
        free(t->name);
        t->name = tname;
        g->initializer[g->n_initializer++] = t;
        moved[n_moved++] = vi;
    }
    if (st == NULL && k < 2)
        st = pl_status_create(PL_CODE_UNSUPPORTED, "fewer than two inputs: nothing to freeze");
    if (st == NULL) {
        /* The kept inputs first, then the frozen ones, out of the count
         * while the model is packed; the caller restores the count before
         * freeing, so every message is freed once. */
        memcpy(g->input, kept, n_kept * sizeof *kept);
        memcpy(g->input + n_kept, moved, n_moved * sizeof *moved);
        g->n_input = n_kept;
        *out_frozen = n_moved;
    }
    free(kept);
    free(moved);
    return st;
}

pl_status *cf_freeze(const char *test_dir, const char *out_dir, size_t *out_frozen)
{
    *out_frozen = 0;
    char *model_path = cf_join_path(test_dir, "model.onnx");
    char *set_dir = cf_join_path(test_dir, "test_data_set_0");
    char *out_set = cf_join_path(out_dir, "test_data_set_0");
    char *out_model = cf_join_path(out_dir, "model.onnx");
    uint8_t *bytes = NULL;
    size_t len = 0;
    pl_status *st = model_path && set_dir && out_set && out_model
                        ? cf_file_read(model_path, &bytes, &len)
                        : pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    Onnx__ModelProto *m = st == NULL ? onnx__model_proto__unpack(NULL, len, bytes) : NULL;
    free(bytes);
    if (st == NULL && (m == NULL || m->graph == NULL))
        st = pl_status_create(PL_CODE_INVALID_ARGUMENT, "%s: not an ONNX model with a graph",
                              model_path);
    size_t n_input = m != NULL && m->graph != NULL ? m->graph->n_input : 0;
    if (st == NULL)
        st = cf_freeze_graph(m->graph, set_dir, out_frozen);
    if (st == NULL) {
        size_t n = onnx__model_proto__get_packed_size(m);
        uint8_t *packed = malloc(n ? n : 1);
        if (packed == NULL)
            st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
        else {
            onnx__model_proto__pack(m, packed);
            st = cf_write_file(out_model, packed, n);
            free(packed);
        }
    }
    if (m != NULL) {
        if (m->graph != NULL)
            m->graph->n_input = n_input;
        onnx__model_proto__free_unpacked(m, NULL);
    }
    if (st == NULL && mkdir(out_set, 0700) != 0)
        st = pl_status_create(PL_CODE_IO_ERROR, "%s: %s", out_set, strerror(errno));
    if (st == NULL)
        st = cf_copy_file(set_dir, out_set, "input_0.pb");
    for (int i = 0; st == NULL; i++) {
        char file[64];
        snprintf(file, sizeof file, "output_%d.pb", i);
        char *probe = cf_join_path(set_dir, file);
        struct stat sb;
        bool there = probe != NULL && stat(probe, &sb) == 0;
        free(probe);
        if (!there)
            break;
        st = cf_copy_file(set_dir, out_set, file);
    }
    free(model_path);
    free(set_dir);
    free(out_set);
    free(out_model);
    return st;
}

void cf_freeze_remove(const char *out_dir)
{
    char *set = cf_join_path(out_dir, "test_data_set_0");
    for (int i = -1; set != NULL && i < 64; i++) {
        char file[64];
        if (i < 0)
            snprintf(file, sizeof file, "input_0.pb");
        else
            snprintf(file, sizeof file, "output_%d.pb", i);
        char *p = cf_join_path(set, file);
        if (p != NULL)
            remove(p);
        free(p);
    }
    if (set != NULL)
        rmdir(set);
    free(set);
    char *model = cf_join_path(out_dir, "model.onnx");
    if (model != NULL)
        remove(model);
    free(model);
    rmdir(out_dir);
}
