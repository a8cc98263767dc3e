/* extension.c — vendor functions (ABI 1.4, pl_module_api.extensions).
 *
 * At load the loader asks the module for its list once; every entry is
 * checked here (name, signature grammar, function, uniqueness) and a bad
 * one is dropped with a diagnostic naming it, so a call can only reach a
 * function whose signature the core has read. pl_runtime_call finds the
 * function by module and name, checks the caller's values against the
 * signature one by one, and makes the call through libffi with the
 * module's context first, under the module's configure lock. */
#include <ffi.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "registry.h"
#include "status.h"

/* Why SIG is not a signature the core can call, or NULL. */
static const char *pl_ext_signature_error(const char *sig, char *buf, size_t size)
{
    if (sig == NULL)
        return "no signature";
    if (strchr("vilfd", sig[0]) == NULL || sig[0] == '\0') {
        snprintf(buf, size, "return type '%c' is not one of v, i, l, f, d", sig[0] ? sig[0] : ' ');
        return buf;
    }
    if (sig[1] != '(')
        return "the parameters must follow the return type in parentheses";
    size_t n = 0;
    const char *p = sig + 2;
    for (; *p != '\0' && *p != ')'; p++, n++)
        if (strchr("ilfdsp", *p) == NULL) {
            snprintf(buf, size, "parameter %zu has type '%c', not one of i, l, f, d, s, p",
                     n + 1, *p);
            return buf;
        }
    if (*p != ')' || p[1] != '\0')
        return "the parameter list must end with ')' and nothing after it";
    if (n > PL_EXTENSION_MAX_PARAMS) {
        snprintf(buf, size, "%zu parameters; at most %d", n, PL_EXTENSION_MAX_PARAMS);
        return buf;
    }
    return NULL;
}

static bool pl_ext_name_ok(const char *name)
{
    if (name == NULL || name[0] == '\0' || strlen(name) > 64)
        return false;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_'))
            return false;
    return true;
}

void pl_extension_collect(pl_runtime *rt, pl_module *m)
{
    if (m->api.extensions == NULL)
        return;
    size_t n = 0;
    const pl_extension *list = m->api.extensions(m->ctx, &n);
    if (list == NULL || n == 0)
        return;
    if (n > 4096) {
        pl_runtime_add_diagnostic(rt, PL_LOG_WARN,
                                  "module %s (%s): extensions: %zu entries is not believable; "
                                  "none is used", m->name, m->path, n);
        return;
    }
    m->exts = pl_alloc_calloc(rt->alloc, n, sizeof *m->exts);
    if (m->exts == NULL) {
        pl_runtime_add_diagnostic(rt, PL_LOG_WARN,
                                  "module %s (%s): extensions: out of memory; none is used",
                                  m->name, m->path);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const pl_extension *e = &list[i];
        char buf[96];
        const char *why = NULL;
        if (!pl_ext_name_ok(e->name))
            why = "the name must be 1 to 64 of [a-z0-9_]";
        else if (e->fn == NULL)
            why = "no function";
        else
            why = pl_ext_signature_error(e->signature, buf, sizeof buf);
        for (size_t k = 0; why == NULL && k < m->n_exts; k++)
            if (strcmp(m->exts[k].name, e->name) == 0)
                why = "a second function of that name";
        if (why != NULL) {
            pl_runtime_add_diagnostic(
                rt, PL_LOG_WARN, "module %s (%s): extension %zu ('%.64s', \"%.40s\") dropped: %s",
                m->name, m->path, i, pl_ext_name_ok(e->name) ? e->name : "?",
                e->signature ? e->signature : "", why);
            continue;
        }
        m->exts[m->n_exts++] = *e;
    }
}

void pl_extension_forget(pl_module *m)
{
    pl_free(m->exts);
    m->exts = NULL;
    m->n_exts = 0;
}

size_t pl_runtime_extension_count(const pl_runtime *rt, size_t i)
{
    if (rt == NULL || i >= rt->n_modules)
        return 0;
    return rt->modules[i]->n_exts;
}

void pl_runtime_extension(const pl_runtime *rt, size_t i, size_t k, const char **out_name,
                          const char **out_signature)
{
    const char *name = "", *sig = "";
    if (rt != NULL && i < rt->n_modules && k < rt->modules[i]->n_exts) {
        name = rt->modules[i]->exts[k].name;
        sig = rt->modules[i]->exts[k].signature;
    }
    if (out_name != NULL)
        *out_name = name;
    if (out_signature != NULL)
        *out_signature = sig;
}

static const char *pl_ext_type_name(char t)
{
    switch (t) {
    case 'i': return "int32 (i)";
    case 'l': return "int64 (l)";
    case 'f': return "float (f)";
    case 'd': return "double (d)";
    case 's': return "string (s)";
    case 'p': return "pointer (p)";
    case 'v': return "nothing (v)";
    default: return "an unknown type";
    }
}

static ffi_type *pl_ext_ffi_type(char t)
{
    switch (t) {
    case 'i': return &ffi_type_sint32;
    case 'l': return &ffi_type_sint64;
    case 'f': return &ffi_type_float;
    case 'd': return &ffi_type_double;
    case 's':
    case 'p': return &ffi_type_pointer;
    default: return &ffi_type_void;
    }
}

pl_status *pl_runtime_call(pl_runtime *rt, const char *module, const char *name,
                           const pl_value *args, size_t n_args, pl_value *out_result)
{
    if (out_result != NULL)
        *out_result = (pl_value){.type = 'v'};
    if (rt == NULL || module == NULL || name == NULL || (n_args > 0 && args == NULL))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "pl_runtime_call: NULL runtime, module, name or arguments");
    long idx = pl_runtime_find_module(rt, module);
    if (idx < 0 || rt->modules[idx]->status != PL_MODULE_LOADED)
        return pl_status_create(PL_CODE_NOT_FOUND, "call %s.%s: module '%s' is not loaded",
                                module, name, module);
    pl_module *m = rt->modules[idx];
    const pl_extension *e = NULL;
    for (size_t k = 0; k < m->n_exts && e == NULL; k++)
        if (strcmp(m->exts[k].name, name) == 0)
            e = &m->exts[k];
    if (e == NULL) {
        char known[512] = "";
        size_t used = 0;
        for (size_t k = 0; k < m->n_exts && used < sizeof known; k++) {
            int w = snprintf(known + used, sizeof known - used, "%s%s", k ? ", " : "",
                             m->exts[k].name);
            if (w > 0)
                used += (size_t)w;
        }
        return pl_status_create(PL_CODE_NOT_FOUND,
                                "call %s.%s: the module has no function '%s' (it exports: %s)",
                                module, name, name, m->n_exts ? known : "none");
    }
    const char *params = e->signature + 2;
    size_t n_params = strlen(params) - 1;
    if (n_args != n_params)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "call %s.%s: %zu argument%s given, the signature \"%s\" takes %zu",
                                module, name, n_args, n_args == 1 ? "" : "s", e->signature,
                                n_params);
    for (size_t a = 0; a < n_args; a++) {
        if (args[a].type != params[a])
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "call %s.%s: argument %zu is %s; the signature \"%s\" wants "
                                    "%s there", module, name, a + 1,
                                    pl_ext_type_name(args[a].type), e->signature,
                                    pl_ext_type_name(params[a]));
        if (params[a] == 's' && args[a].as.s == NULL)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "call %s.%s: argument %zu is a NULL string", module, name,
                                    a + 1);
    }
    ffi_type *types[PL_EXTENSION_MAX_PARAMS + 1];
    void *values[PL_EXTENSION_MAX_PARAMS + 1];
    pl_module_ctx *ctx = m->ctx;
    types[0] = &ffi_type_pointer;
    values[0] = &ctx;
    for (size_t a = 0; a < n_args; a++) {
        types[a + 1] = pl_ext_ffi_type(params[a]);
        values[a + 1] = (void *)&args[a].as;
    }
    char ret = e->signature[0];
    ffi_cif cif;
    if (ffi_prep_cif(&cif, FFI_DEFAULT_ABI, (unsigned)(n_args + 1), pl_ext_ffi_type(ret),
                     types) != FFI_OK)
        return pl_status_create(PL_CODE_INTERNAL, "call %s.%s: libffi cannot prepare \"%s\"",
                                module, name, e->signature);
    /* Integer results come back widened to ffi_arg. */
    union {
        ffi_arg word;
        int64_t l;
        float f;
        double d;
    } result;
    memset(&result, 0, sizeof result);
    pthread_mutex_lock(&m->configure_mu);
    ffi_call(&cif, e->fn, &result, values);
    pthread_mutex_unlock(&m->configure_mu);
    if (out_result != NULL) {
        out_result->type = ret;
        switch (ret) {
        case 'i': out_result->as.i = (int32_t)result.word; break;
        case 'l': out_result->as.l = (int64_t)result.word; break;
        case 'f': out_result->as.f = result.f; break;
        case 'd': out_result->as.d = result.d; break;
        default: break;
        }
    }
    return NULL;
}
