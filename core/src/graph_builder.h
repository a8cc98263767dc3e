/* graph_builder.h — the core's side of the SDK's graph builder: what a
 * format module's import_model fills. */
#ifndef PL_CORE_GRAPH_BUILDER_H
#define PL_CORE_GRAPH_BUILDER_H

#include "graph.h"
#include "plinth/host.h"

/* A builder filling G (borrowed) for the model file at PATH. */
pl_status *pl_graph_builder_create(pl_graph *g, const char *path,
                                   pl_graph_builder **out_builder);
void pl_graph_builder_destroy(pl_graph_builder *b);

/* The compile cache's folder: the model's big constants are read from the
 * copy kept there, and written there after the load (filedata.h). */
void pl_graph_builder_set_cache_dir(pl_graph_builder *b, const char *dir);

/* The model file's constants that the core copies (builder_constant_model_file)
 * are read later, all at once by pl_graph_builder_read_constants, not one
 * by one as the import declares them: their bytes must not be read before.
 * The format module never reads them back (it handed over an offset). */
void pl_graph_builder_defer_reads(pl_graph_builder *b);
/* Reads the deferred constants, their pieces spread over POOL (NULL: the
 * caller alone): a model's weights are fresh memory, and its page faults,
 * most of the copy on a virtual machine, go as fast as there are threads.
 * The first failure is returned. */
struct pl_threadpool;
pl_status *pl_graph_builder_read_constants(pl_graph_builder *b, struct pl_threadpool *pool);

/* The builder functions of the graph table (graph_view.c puts them there). */
const char *pl_builder_model_dir(pl_graph_builder *b);
pl_status *pl_builder_opset(pl_graph_builder *b, const char *domain, int64_t version);
pl_status *pl_builder_tensor(pl_graph_builder *b, const char *name, pl_dtype dtype,
                             int32_t ndim, const int64_t *dims,
                             const char *const *dim_params);
pl_status *pl_builder_constant(pl_graph_builder *b, const char *name, pl_dtype dtype,
                               int32_t ndim, const int64_t *dims, const void *data,
                               size_t nbytes);
pl_status *pl_builder_constant_file(pl_graph_builder *b, const char *name,
                                    pl_dtype dtype, int32_t ndim, const int64_t *dims,
                                    const char *location, int64_t offset,
                                    int64_t length);
pl_status *pl_builder_constant_model_file(pl_graph_builder *b, const char *name,
                                          pl_dtype dtype, int32_t ndim, const int64_t *dims,
                                          int64_t offset, int64_t length);
pl_status *pl_builder_data_file(pl_graph_builder *b, const char *location,
                                const char *what, uint64_t *out_size);
pl_status *pl_builder_input(pl_graph_builder *b, const char *name);
pl_status *pl_builder_output(pl_graph_builder *b, const char *name);
pl_status *pl_builder_node(pl_graph_builder *b, const char *name, const char *op,
                           const char *domain, const char *const *inputs,
                           size_t n_inputs, const char *const *outputs,
                           size_t n_outputs, size_t *out_node);
pl_status *pl_builder_attr_int(pl_graph_builder *b, size_t node, const char *name,
                               int64_t value);
pl_status *pl_builder_attr_float(pl_graph_builder *b, size_t node, const char *name,
                                 double value);
pl_status *pl_builder_attr_string(pl_graph_builder *b, size_t node, const char *name,
                                  const char *value, size_t len);
pl_status *pl_builder_attr_ints(pl_graph_builder *b, size_t node, const char *name,
                                const int64_t *values, size_t count);
pl_status *pl_builder_attr_floats(pl_graph_builder *b, size_t node, const char *name,
                                  const double *values, size_t count);
pl_status *pl_builder_attr_strings(pl_graph_builder *b, size_t node, const char *name,
                                   const char *const *values, size_t count);
pl_status *pl_builder_attr_tensor(pl_graph_builder *b, size_t node, const char *name,
                                  pl_dtype dtype, int32_t ndim, const int64_t *dims,
                                  const void *data, size_t nbytes);

pl_status *pl_builder_attr_graph(pl_graph_builder *b, size_t node, const char *name,
                                 pl_graph_builder **out_body);
pl_status *pl_builder_attr_graphs(pl_graph_builder *b, size_t node, const char *name,
                                  size_t count, pl_graph_builder **out_bodies);

#endif
