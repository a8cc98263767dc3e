/* host.c — the host table: the functions the core lends every module. It is
 * one static table for the process; what concerns one runtime arrives
 * through the pl_host_ctx the module got at init. Statuses made here are the
 * core's own, so the core frees them with the allocator that made them. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "custom_op.h"
#include "graph_view.h"
#include "registry.h"
#include "status.h"

static void pl_host_log(pl_host_ctx *ctx, pl_log_level level, const char *fmt,
                        ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (ctx == NULL || ctx->runtime == NULL) {
        pl_logv(NULL, level, "module", fmt, ap);
    } else {
        char who[64];
        snprintf(who, sizeof who, "[%s]", ctx->module ? ctx->module->name : "?");
        pl_logv(&ctx->runtime->logger, level, who, fmt, ap);
    }
    va_end(ap);
}

static pl_status *pl_host_status_create(pl_code code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pl_status *st = pl_status_createv(code, fmt, ap);
    va_end(ap);
    return st;
}

static pl_status *pl_host_status_createv(pl_code code, const char *fmt,
                                         va_list ap)
{
    return pl_status_createv(code, fmt, ap);
}

static const char *pl_host_config_get(pl_host_ctx *ctx, const char *key)
{
    if (ctx == NULL || key == NULL)
        return NULL;
    return pl_config_section_get(ctx->section, key);
}

static size_t pl_host_config_count(pl_host_ctx *ctx)
{
    return ctx && ctx->section ? ctx->section->n_entries : 0;
}

static void pl_host_config_at(pl_host_ctx *ctx, size_t i, const char **out_key,
                              const char **out_value)
{
    *out_key = NULL;
    *out_value = NULL;
    if (ctx == NULL || ctx->section == NULL || i >= ctx->section->n_entries)
        return;
    *out_key = ctx->section->entries[i].key;
    *out_value = ctx->section->entries[i].value;
}

static void *pl_host_alloc(pl_host_ctx *ctx, size_t bytes, size_t alignment)
{
    (void)ctx;
    if (bytes == 0)
        return NULL;
    if (alignment == 0)
        alignment = 64;
    if ((alignment & (alignment - 1)) != 0 || alignment < sizeof(void *))
        return NULL;
    void *p = NULL;
    if (posix_memalign(&p, alignment, bytes) != 0)
        return NULL;
    return p;
}

static void pl_host_free(pl_host_ctx *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

static void pl_host_parallel_for(pl_host_ctx *ctx, size_t n, size_t grain,
                                 pl_parallel_fn fn, void *arg)
{
    pl_threadpool *pool = ctx && ctx->runtime ? ctx->runtime->pool : NULL;
    pl_threadpool_parallel_for(pool, n, grain, fn, arg);
}

static int pl_host_thread_count(pl_host_ctx *ctx)
{
    if (ctx == NULL || ctx->runtime == NULL)
        return 1;
    /* While modules load the pool does not exist yet; it will have the
     * runtime's thread budget. */
    if (ctx->runtime->pool == NULL)
        return ctx->runtime->threads > 0 ? ctx->runtime->threads : 1;
    return pl_threadpool_size(ctx->runtime->pool);
}

static void pl_host_complete(pl_completion *completion, pl_status *status)
{
    pl_engine_complete(completion, status);
}

const pl_host_api pl_host_table = {
    .header = PL_ABI_HEADER_INIT(pl_host_api),
    .log_message = pl_host_log,
    .status_create = pl_host_status_create,
    .status_createv = pl_host_status_createv,
    .status_code = pl_status_code,
    .status_message = pl_status_message,
    .status_free = pl_status_free,
    .config_get = pl_host_config_get,
    .config_count = pl_host_config_count,
    .config_at = pl_host_config_at,
    .host_alloc = pl_host_alloc,
    .host_free = pl_host_free,
    .parallel_for = pl_host_parallel_for,
    .thread_count = pl_host_thread_count,
    .complete = pl_host_complete,
    .graph = &pl_graph_view_table,
    .register_op = pl_custom_op_register,
    .shape_input_count = pl_custom_shape_input_count,
    .shape_output_count = pl_custom_shape_output_count,
    .shape_input = pl_custom_shape_input,
    .shape_node = pl_custom_shape_node,
    .shape_set_output = pl_custom_shape_set_output,
};
