/* onednn_zp_weights.c — int8 product weights with a source zero point's
 * compensation laid out by the module: oneDNN's fast reorder for the
 * weights themselves, the compensation summed here.
 *
 * Why: a MatMulInteger (or an integer product the core formed from QDQ)
 * whose source has a zero point runs on oneDNN's AMX or VNNI kernels with
 * weights that carry, after the blocked data, one int32 per output column:
 * -sum_k w[k][n] (memory extra flag compensation_conv_asymmetric_src). oneDNN
 * 2.6 makes that layout only with its generic "simple:any" reorder, which
 * converts every weight through float and nearbyintf: 6-7 ms a 768 x 2304
 * matrix of GPT-2's, 227 ms of GPT-2 int8's 173 ms session over two threads,
 * more than ONNX Runtime's whole load. The same layout without the extra
 * part is its jit:uni reorder, 0.2 ms; the sums are a pass over the bytes.
 *
 * The extra part starts where the weights' own bytes end (the size of the
 * descriptor without the flag) and holds the padded columns' sums, zero past
 * the last real column; what oneDNN reserves beyond it is left as is (its
 * reorder does not write it). tests/onednn/test_wino_weights.c's case
 * zp_weights checks the bytes against oneDNN's own reorder for the layouts
 * this CPU's kernels pick. */
#include "onednn.h"

#include <stdint.h>
#include <string.h>

/* Whether MD is a layout this file makes from SRC_MD: s8 K x N weights
 * read row-major, with only the asymmetric-source compensation over N. */
static int odnn_zpw_takes(const dnnl_memory_desc_t *src_md, const dnnl_memory_desc_t *md)
{
    if (md->ndims != 2 || md->data_type != dnnl_s8 || md->format_kind != dnnl_blocked ||
        md->extra.flags != dnnl_memory_extra_flag_compensation_conv_asymmetric_src ||
        md->extra.asymm_compensation_mask != 2 || md->offset0 != 0)
        return 0;
    if (src_md->ndims != 2 || src_md->data_type != dnnl_s8 ||
        src_md->format_kind != dnnl_blocked || src_md->format_desc.blocking.inner_nblks != 0 ||
        src_md->extra.flags != 0 || src_md->offset0 != 0)
        return 0;
    const dnnl_dims_t *s = &src_md->format_desc.blocking.strides;
    return src_md->dims[0] == md->dims[0] && src_md->dims[1] == md->dims[1] &&
           (*s)[1] == 1 && (*s)[0] == src_md->dims[1];
}

dnnl_status_t odnn_reorder_plain(dnnl_engine_t engine, const dnnl_memory_desc_t *src_md,
                                 const void *src, const dnnl_memory_desc_t *md, void *dst)
{
    dnnl_memory_t from = NULL, to = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_stream_t stream = NULL;
    dnnl_status_t ds = dnnl_memory_create(&from, src_md, engine, (void *)(uintptr_t)src);
    if (ds == dnnl_success)
        ds = dnnl_memory_create(&to, md, engine, dst);
    if (ds == dnnl_success)
        ds = dnnl_reorder_primitive_desc_create(&pd, src_md, engine, md, engine, NULL);
    if (ds == dnnl_success)
        ds = dnnl_primitive_create(&prim, pd);
    if (ds == dnnl_success)
        ds = dnnl_stream_create(&stream, engine, dnnl_stream_default_flags);
    if (ds == dnnl_success) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, from}, {DNNL_ARG_DST, to}};
        ds = dnnl_primitive_execute(prim, stream, 2, args);
        if (ds == dnnl_success)
            ds = dnnl_stream_wait(stream);
    }
    if (stream)
        dnnl_stream_destroy(stream);
    if (prim)
        dnnl_primitive_destroy(prim);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (to)
        dnnl_memory_destroy(to);
    if (from)
        dnnl_memory_destroy(from);
    return ds;
}

int odnn_zp_weights(dnnl_engine_t engine, const dnnl_memory_desc_t *src_md, const void *src,
                    const dnnl_memory_desc_t *md, void *dst)
{
    if (!odnn_zpw_takes(src_md, md))
        return 1;
    dnnl_memory_desc_t body = *md;
    body.extra.flags = 0;
    body.extra.asymm_compensation_mask = 0;
    size_t body_bytes = dnnl_memory_desc_get_size(&body), all = dnnl_memory_desc_get_size(md);
    int64_t k = md->dims[0], n = md->dims[1], padded = md->padded_dims[1];
    if (padded < n || body_bytes + (size_t)padded * sizeof(int32_t) > all)
        return 1;
    if (odnn_reorder_plain(engine, src_md, src, &body, dst) != dnnl_success)
        return 1;
    int32_t comp[512];
    unsigned char *extra = (unsigned char *)dst + body_bytes;
    for (int64_t c0 = 0; c0 < padded; c0 += 512) {
        int64_t cols = padded - c0 < 512 ? padded - c0 : 512;
        int64_t real = n - c0 < cols ? (n - c0 > 0 ? n - c0 : 0) : cols;
        if (real > 0) {
            /* the sums of a block of columns stay in L1 while the rows pass */
            memset(comp, 0, sizeof comp);
            for (int64_t r = 0; r < k; r++) {
                const int8_t *row = (const int8_t *)src + r * n + c0;
                for (int64_t c = 0; c < real; c++)
                    comp[c] += row[c];
            }
            for (int64_t c = 0; c < real; c++)
                comp[c] = -comp[c];
        }
        for (int64_t c = real; c < cols; c++)
            comp[c] = 0;
        memcpy(extra + (size_t)c0 * sizeof(int32_t), comp, (size_t)cols * sizeof(int32_t));
    }
    return 0;
}
