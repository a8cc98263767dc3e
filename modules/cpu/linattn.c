/* linattn.c — the cpu module's LinearAttention (opset 27): the recurrence
 * of linear attention, token after token, as ONNX's reference defines it.
 * Per batch entry and key/value head a state S of d_k x d_v is carried
 * (from past_state, else zeros): at token t it decays by exp(decay) (gated
 * rules; one value a head or one a key dim), takes the delta correction
 * v - S^T k scaled by beta (delta rules), adds k (x) v, and each query
 * head of the group reads scale * q^T S. Queries, keys and values are
 * packed [B, T, H * D]; the output is [B, T, Hq * d_v] and present_state
 * the last S, [B, Hkv, d_k, d_v]. f32 (f16 and bf16 through the dtype
 * wrapper); (batch, head) pairs spread over the pool. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "shape_kernel.h"

static pl_status *la_build(pl_module_ctx *ctx, const pl_node_desc *node,
                           pl_kernel **out_kernel);

const cpu_op_entry cpu_ops_linattn[] = {
    {"LinearAttention", la_build, 3, 6, 0, CPU_OP_ANY_DTYPE | CPU_OP_MULTI_OUTPUT},
    {NULL, NULL, 0, 0, 0, 0},
};

typedef struct la_kernel {
    shp_kernel k;
    int64_t b, t, hq, hkv, dk, dv;
    float scale;
    bool gated, delta, past;
    bool decay_per_key;   /* decay [B, T, Hkv * dk], else [B, T, Hkv] */
    bool beta_shared;     /* beta [B, T, 1], else [B, T, Hkv] */
    bool state_out;       /* the node gives present_state */
} la_kernel;

typedef struct la_call {
    const la_kernel *k;
    const float *q, *key, *v, *past, *decay, *beta;
    float *y, *state;     /* state: present_state, or a scratch of the same size */
} la_call;

static void la_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const la_call *c = arg;
    const la_kernel *k = c->k;
    int64_t dk = k->dk, dv = k->dv, g = k->hq / k->hkv;
    float u[4096];
    for (size_t p = begin; p < end; p++) {
        int64_t b = (int64_t)p / k->hkv, h = (int64_t)p % k->hkv;
        float *s = c->state + (size_t)p * (size_t)(dk * dv);
        if (k->past)
            memcpy(s, c->past + (size_t)p * (size_t)(dk * dv), (size_t)(dk * dv) * sizeof *s);
        else
            memset(s, 0, (size_t)(dk * dv) * sizeof *s);
        for (int64_t t = 0; t < k->t; t++) {
            size_t bt = (size_t)(b * k->t + t);
            const float *kt = c->key + bt * (size_t)(k->hkv * dk) + (size_t)(h * dk);
            const float *vt = c->v + bt * (size_t)(k->hkv * dv) + (size_t)(h * dv);
            if (k->gated) {
                const float *gt = c->decay + (k->decay_per_key ? bt * (size_t)(k->hkv * dk) +
                                                                     (size_t)(h * dk)
                                                               : bt * (size_t)k->hkv + (size_t)h);
                for (int64_t i = 0; i < dk; i++) {
                    float e = expf(gt[k->decay_per_key ? i : 0]);
                    for (int64_t m = 0; m < dv; m++)
                        s[i * dv + m] *= e;
                }
            }
            if (k->delta) {
                float beta = c->beta[k->beta_shared ? bt : bt * (size_t)k->hkv + (size_t)h];
                for (int64_t m = 0; m < dv; m++) {
                    float r = 0;
                    for (int64_t i = 0; i < dk; i++)
                        r += s[i * dv + m] * kt[i];
                    u[m] = beta * (vt[m] - r);
                }
            } else {
                memcpy(u, vt, (size_t)dv * sizeof *u);
            }
            for (int64_t i = 0; i < dk; i++)
                for (int64_t m = 0; m < dv; m++)
                    s[i * dv + m] += kt[i] * u[m];
            for (int64_t j = 0; j < g; j++) {
                int64_t qh = h * g + j;
                const float *qt = c->q + bt * (size_t)(k->hq * dk) + (size_t)(qh * dk);
                float *yt = c->y + bt * (size_t)(k->hq * dv) + (size_t)(qh * dv);
                for (int64_t m = 0; m < dv; m++) {
                    float o = 0;
                    for (int64_t i = 0; i < dk; i++)
                        o += qt[i] * s[i * dv + m];
                    yt[m] = k->scale * o;
                }
            }
        }
    }
}

static pl_status *la_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    const la_kernel *k = (const la_kernel *)kernel;
    const char *op = kernel->op;
    bool has_state = k->state_out;
    for (size_t o = 0; o < (has_state ? 2u : 1u); o++)
        if (args->requests[o] != PL_REQ_WRITE)
            return cpu_error(PL_CODE_UNSUPPORTED, op, "output %zu must be written in full", o);
    size_t pairs = (size_t)(k->b * k->hkv), state_elems = pairs * (size_t)(k->dk * k->dv);
    float *state = has_state ? (float *)(void *)((char *)args->outputs[1].data +
                                                 args->outputs[1].byte_offset)
                             : cpu_host->host_alloc(ctx->host_ctx,
                                                    (state_elems ? state_elems : 1) * 4, 64);
    if (state == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory for the state");
    la_call c = {.k = k, .q = cpu_in(args, 0), .key = cpu_in(args, 1), .v = cpu_in(args, 2),
                 .past = k->past ? cpu_in(args, 3) : NULL,
                 .decay = k->gated ? cpu_in(args, 4) : NULL,
                 .beta = k->delta ? cpu_in(args, 5) : NULL,
                 .y = (float *)(void *)((char *)args->outputs[0].data +
                                        args->outputs[0].byte_offset),
                 .state = state};
    cpu_host->parallel_for(ctx->host_ctx, pairs, 1, la_chunk, &c);
    if (!has_state)
        cpu_host->host_free(ctx->host_ctx, state);
    return NULL;
}

static bool la_present(const pl_node_desc *node, size_t i)
{
    return i < node->n_inputs && shp_input_present(node, i);
}

static pl_status *la_build(pl_module_ctx *ctx, const pl_node_desc *node,
                           pl_kernel **out_kernel)
{
    const char *op = node->op;
    for (size_t i = 0; i < node->n_inputs; i++)
        if (la_present(node, i) && !PL_DTYPE_EQ(node->inputs[i].dtype, PL_DTYPE_F32))
            return cpu_error(PL_CODE_UNSUPPORTED, op, "f32 only (input %zu)", i);
    int64_t hq, hkv;
    double scale;
    char rule[16];
    SHP_TRY(cpu_attr_int(node, "q_num_heads", 0, &hq));
    SHP_TRY(cpu_attr_int(node, "kv_num_heads", 0, &hkv));
    SHP_TRY(cpu_attr_float(node, "scale", 0.0, &scale));
    SHP_TRY(shp_attr_string(node, "update_rule", "gated_delta", rule, sizeof rule));
    const pl_tensor *q = &node->inputs[0], *key = &node->inputs[1], *v = &node->inputs[2];
    if (hq <= 0 || hkv <= 0 || hq % hkv != 0 || q->ndim != 3 || key->ndim != 3 ||
        v->ndim != 3 || q->shape[2] % hq != 0 || v->shape[2] % hkv != 0)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "needs [B, T, H * D] inputs and heads that divide them");
    int64_t b = q->shape[0], t = q->shape[1], dk = q->shape[2] / hq, dv = v->shape[2] / hkv;
    if (key->shape[0] != b || key->shape[1] != t || key->shape[2] != hkv * dk ||
        v->shape[0] != b || v->shape[1] != t)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "key must be [%lld, %lld, %lld] and value [%lld, %lld, Hkv * d_v]",
                         (long long)b, (long long)t, (long long)(hkv * dk), (long long)b,
                         (long long)t);
    if (dv > 4096)
        return cpu_error(PL_CODE_UNSUPPORTED, op, "d_v %lld above 4096", (long long)dv);
    bool gated = strcmp(rule, "gated") == 0 || strcmp(rule, "gated_delta") == 0;
    bool delta = strcmp(rule, "delta") == 0 || strcmp(rule, "gated_delta") == 0;
    bool past = la_present(node, 3);
    if (past) {
        const pl_tensor *ps = &node->inputs[3];
        if (ps->ndim != 4 || ps->shape[0] != b || ps->shape[1] != hkv || ps->shape[2] != dk ||
            ps->shape[3] != dv)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "past_state must be [%lld, %lld, %lld, %lld]", (long long)b,
                             (long long)hkv, (long long)dk, (long long)dv);
    }
    bool per_key = false, shared = false;
    if (gated) {
        const pl_tensor *d = &node->inputs[4];
        per_key = d->ndim == 3 && d->shape[2] == hkv * dk;
        if (!la_present(node, 4) || d->ndim != 3 || d->shape[0] != b || d->shape[1] != t ||
            (!per_key && d->shape[2] != hkv))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "decay must be [B, T, Hkv] or [B, T, Hkv * d_k]");
    }
    if (delta) {
        const pl_tensor *be = &node->inputs[5];
        shared = be->ndim == 3 && be->shape[2] == 1;
        if (!la_present(node, 5) || be->ndim != 3 || be->shape[0] != b || be->shape[1] != t ||
            (!shared && be->shape[2] != hkv))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "beta must be [B, T, Hkv] or [B, T, 1]");
    }
    la_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, NULL, (shp_kernel **)&k));
    k->k.base.run_any = la_run;
    *k = (la_kernel){.k = k->k, .b = b, .t = t, .hq = hq, .hkv = hkv, .dk = dk, .dv = dv,
                     .scale = scale == 0.0 ? (float)(1.0 / sqrt((double)dk)) : (float)scale,
                     .gated = gated, .delta = delta, .past = past, .decay_per_key = per_key,
                     .beta_shared = shared,
                     .state_out = node->n_outputs > 1 && shp_output_present(node, 1)};
    *out_kernel = &k->k.base;
    return NULL;
}
