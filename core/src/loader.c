/* loader.c — finds module files on the module path and turns each into a
 * verdict: loaded, no-device, disabled or rejected with a reason. It never
 * trusts a file: permissions and links are checked first, then the ELF
 * header and identity note are read without running anything (note.c), and
 * only then is the file dlopen'ed, its entry point asked to negotiate the ABI
 * and its table validated before init is called. One bad module never stops
 * the others: every failure is recorded as one line
 *   module <name|file> (<path>): <verdict>: <reason>
 * and the scan goes on. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "note.h"
#include "probe.h"
#include "registry.h"
#include "sha256.h"
#include "status.h"

static void pl_module_set_verdict(pl_module *m, pl_module_status status,
                                  const char *reason)
{
    char *r = pl_alloc_strdup(m->host.runtime->alloc, reason ? reason : "");
    if (r != NULL) {
        pl_free(m->reason);
        m->reason = r;
    }
    m->status = status;
}

/* Records a refusal: closes whatever was opened and writes the diagnostic. */
static void pl_module_refuse(pl_runtime *rt, pl_module *m,
                             pl_module_status status, const char *reason)
{
    if (status != PL_MODULE_NO_DEVICE)
        pl_module_unload(m);
    pl_module_set_verdict(m, status, reason);
    const pl_config_section *s = m->host.section;
    pl_log_level level = PL_LOG_WARN;
    if (status == PL_MODULE_DISABLED)
        level = PL_LOG_INFO;
    else if (status == PL_MODULE_NO_DEVICE)
        level = PL_LOG_INFO;
    if (s != NULL && s->enabled == PL_ENABLED_YES && status != PL_MODULE_DISABLED)
        level = PL_LOG_ERROR;
    pl_runtime_add_diagnostic(rt, level, "module %s (%s): %s: %s", m->name,
                              m->path, pl_module_status_name(status), m->reason);
}

static void pl_module_refuse_status(pl_runtime *rt, pl_module *m,
                                    pl_module_status verdict, pl_status *st,
                                    const char *prefix)
{
    char *reason = pl_alloc_strdupf(rt->alloc, "%s%s", prefix, pl_status_message(st));
    pl_module_refuse(rt, m, verdict, reason ? reason : pl_status_message(st));
    pl_free(reason);
    pl_status_free(st);
}

/* ---- validation --------------------------------------------------------- */

/* The functions a capability requires, and always-required ones. */
static const char *pl_loader_missing_function(const pl_module_api *a)
{
#define PL_REQUIRE(cond, field)        \
    do {                               \
        if ((cond) && a->field == NULL) \
            return #field;             \
    } while (0)
    uint64_t caps = a->capabilities;
    PL_REQUIRE(1, init);
    PL_REQUIRE(1, shutdown);
    PL_REQUIRE(1, device_count);
    PL_REQUIRE(1, device_properties);
    PL_REQUIRE(1, configure);
    PL_REQUIRE(caps & PL_CAP_IMPERATIVE, get_kernel);
    PL_REQUIRE(caps & PL_CAP_IMPERATIVE, kernel_run);
    PL_REQUIRE(caps & PL_CAP_IMPERATIVE, kernel_release);
    PL_REQUIRE(caps & PL_CAP_SYMBOLIC, supported_nodes);
    PL_REQUIRE(caps & PL_CAP_SYMBOLIC, compile);
    PL_REQUIRE(caps & PL_CAP_SYMBOLIC, run);
    PL_REQUIRE(caps & PL_CAP_SYMBOLIC, release);
    PL_REQUIRE(caps & PL_CAP_ASYNC, run_async);
    PL_REQUIRE(caps & PL_CAP_EXPORT, export_compiled);
    PL_REQUIRE(caps & PL_CAP_EXPORT, import_compiled);
    PL_REQUIRE(caps & PL_CAP_MODEL_IMPORT, can_import);
    PL_REQUIRE(caps & PL_CAP_MODEL_IMPORT, import_model);
    bool device_memory = (caps & (PL_CAP_IMPERATIVE | PL_CAP_SYMBOLIC)) &&
                         !(caps & PL_CAP_HOST_MEMORY);
    PL_REQUIRE(device_memory, mem_alloc);
    PL_REQUIRE(device_memory, mem_free);
    PL_REQUIRE(device_memory, copy_to_device);
    PL_REQUIRE(device_memory, copy_to_host);
#undef PL_REQUIRE
    return NULL;
}

static const char *pl_loader_capability_of(const char *fn)
{
    static const struct { const char *fn, *cap; } map[] = {
        {"get_kernel", "imperative"}, {"kernel_run", "imperative"},
        {"kernel_release", "imperative"}, {"supported_nodes", "symbolic"},
        {"compile", "symbolic"}, {"run", "symbolic"}, {"release", "symbolic"},
        {"run_async", "async"}, {"export_compiled", "export"},
        {"import_compiled", "export"}, {"can_import", "model import"},
        {"import_model", "model import"}, {"mem_alloc", "device memory"},
        {"mem_free", "device memory"}, {"copy_to_device", "device memory"},
        {"copy_to_host", "device memory"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(map[i].fn, fn) == 0)
            return map[i].cap;
    return NULL;
}

/* Copies the module's table into m->api, zero-extending an older minor's
 * table and ignoring a newer minor's tail, then checks it. */
static pl_status *pl_loader_validate_table(pl_module *m, const pl_module_api *t)
{
    if (t->header.abi_major != PL_ABI_MAJOR)
        return pl_status_create(PL_CODE_INCOMPATIBLE,
                                "module table says ABI major %u, core speaks %u",
                                (unsigned)t->header.abi_major, PL_ABI_MAJOR);
    if (t->header.struct_size < PL_MODULE_API_SIZE_1_0)
        return pl_status_create(PL_CODE_INCOMPATIBLE,
                                "module table too small (%u bytes; ABI 1.0 "
                                "needs %zu)",
                                (unsigned)t->header.struct_size,
                                (size_t)PL_MODULE_API_SIZE_1_0);
    size_t n = t->header.struct_size < sizeof m->api ? t->header.struct_size
                                                     : sizeof m->api;
    memset(&m->api, 0, sizeof m->api);
    memcpy(&m->api, t, n);
    const pl_module_api *a = &m->api;
    if (a->name == NULL || a->version == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "module table has no %s",
                                a->name == NULL ? "name" : "version");
    if (strcmp(a->name, m->note.name) != 0)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "identity note says '%s', module table says "
                                "'%.64s'",
                                m->note.name, a->name);
    const char *missing = pl_loader_missing_function(a);
    if (missing != NULL) {
        const char *cap = pl_loader_capability_of(missing);
        if (cap != NULL)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "module table lacks %s, which its %s "
                                    "capability requires",
                                    missing, cap);
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "module table lacks %s, which every module "
                                "needs",
                                missing);
    }
    return NULL;
}

/* ---- file checks -------------------------------------------------------- */

/* Whoever owns a module file or its folder can change what runs: only
 * root and the user the process runs as are trusted. */
static bool pl_loader_owner_ok(uid_t uid)
{
    return uid == 0 || uid == geteuid();
}

/* Refuses a file that others could have changed: writable by group or
 * others or owned by another user, in a directory that is, or a link that leads
 * out of the directory it was found in. On success *out_real is the file's
 * real path (the caller frees it). */
static pl_status *pl_loader_check_file(pl_allocator alloc, const char *path,
                                       const char *dir, char **out_real)
{
    *out_real = NULL;
    struct stat lst;
    if (lstat(path, &lst) != 0)
        return pl_status_create(errno == ENOENT ? PL_CODE_NOT_FOUND : PL_CODE_IO_ERROR,
                                "%s", strerror(errno));
    char real[PATH_MAX];
    if (realpath(path, real) == NULL)
        return pl_status_create(PL_CODE_NOT_FOUND, "%s%s",
                                S_ISLNK(lst.st_mode) ? "dangling link: " : "",
                                strerror(errno));
    char real_dir[PATH_MAX];
    if (realpath(dir, real_dir) == NULL)
        return pl_status_create(PL_CODE_NOT_FOUND, "module directory %s: %s",
                                dir, strerror(errno));
    size_t dl = strlen(real_dir);
    bool inside = strncmp(real, real_dir, dl) == 0 &&
                  (real[dl] == '/' || (dl == 1 && real_dir[0] == '/'));
    if (!inside)
        return pl_status_create(PL_CODE_PERMISSION_DENIED,
                                "link resolves to %s, outside the module "
                                "directory %s",
                                real, real_dir);
    struct stat st;
    if (stat(real, &st) != 0)
        return pl_status_create(PL_CODE_IO_ERROR, "%s", strerror(errno));
    if (!S_ISREG(st.st_mode))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "not a regular file");
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return pl_status_create(PL_CODE_PERMISSION_DENIED,
                                "file is writable by group or others (mode "
                                "%04o); refusing to load it",
                                (unsigned)(st.st_mode & 07777));
    if (!pl_loader_owner_ok(st.st_uid))
        return pl_status_create(PL_CODE_PERMISSION_DENIED,
                                "file is owned by uid %u, neither root nor the "
                                "running user (uid %u); refusing to load it",
                                (unsigned)st.st_uid, (unsigned)geteuid());
    /* The directory that holds the real file, which is inside real_dir. */
    char holder[PATH_MAX];
    snprintf(holder, sizeof holder, "%s", real);
    char *slash = strrchr(holder, '/');
    if (slash != NULL)
        *slash = '\0';
    const char *dirs[2] = {real_dir, holder[0] ? holder : "/"};
    for (int i = 0; i < 2; i++) {
        struct stat dst;
        if (stat(dirs[i], &dst) != 0)
            return pl_status_create(PL_CODE_IO_ERROR, "%s: %s", dirs[i],
                                    strerror(errno));
        if (dst.st_mode & (S_IWGRP | S_IWOTH))
            return pl_status_create(PL_CODE_PERMISSION_DENIED,
                                    "directory %s is writable by group or "
                                    "others (mode %04o); refusing to load from it",
                                    dirs[i], (unsigned)(dst.st_mode & 07777));
        if (!pl_loader_owner_ok(dst.st_uid))
            return pl_status_create(PL_CODE_PERMISSION_DENIED,
                                    "directory %s is owned by uid %u, neither root "
                                    "nor the running user (uid %u); refusing to "
                                    "load from it",
                                    dirs[i], (unsigned)dst.st_uid, (unsigned)geteuid());
    }
    *out_real = pl_alloc_strdup(alloc, real);
    if (*out_real == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    return NULL;
}

/* ---- loading one file --------------------------------------------------- */

/* A module pinned by [modules] sha256.NAME loads only with those contents. */
static pl_status *pl_loader_check_pin(pl_runtime *rt, const pl_module *m, const char *real)
{
    const pl_config_entry *pin = pl_config_pin(rt->config, m->note.name);
    if (pin == NULL)
        return NULL;
    int fd = open(real, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return pl_status_create(PL_CODE_IO_ERROR, "%s", strerror(errno));
    char digest[65];
    pl_status *st = pl_sha256_fd(fd, digest);
    close(fd);
    if (st != NULL)
        return st;
    if (strcasecmp(digest, pin->value) != 0)
        return pl_status_create(PL_CODE_PERMISSION_DENIED,
                                "contents do not match the pin %s:%d: SHA-256 %s, "
                                "pinned %s",
                                rt->config->path ? rt->config->path : "backend.ini",
                                pin->line, digest, pin->value);
    return NULL;
}

/* Refuses M for the configure error ST, citing the line of the key the
 * message names ('key' in quotes, as modules write it; else the section's
 * line) and without the module's own "name: " prefix, which the verdict
 * line already carries. */
static void pl_loader_refuse_configure(pl_runtime *rt, pl_module *m, pl_status *st)
{
    const pl_config_section *s = m->host.section;
    const char *msg = pl_status_message(st);
    size_t nl = strlen(m->note.name);
    if (strncmp(msg, m->note.name, nl) == 0 && msg[nl] == ':' && msg[nl + 1] == ' ')
        msg += nl + 2;
    int line = s ? s->line : 0;
    for (size_t i = 0; s != NULL && i < s->n_entries; i++) {
        char quoted[300];
        snprintf(quoted, sizeof quoted, "'%s'", s->entries[i].key);
        if (strstr(msg, quoted) != NULL) {
            line = s->entries[i].line;
            break;
        }
    }
    char *reason;
    if (rt->config->path != NULL && s != NULL)
        reason = pl_alloc_strdupf(rt->alloc, "%s:%d: %s", rt->config->path, line, msg);
    else
        reason = pl_alloc_strdupf(rt->alloc, "configure: %s", msg);
    pl_module_refuse(rt, m, PL_MODULE_REJECTED, reason ? reason : msg);
    pl_free(reason);
    pl_status_free(st);
}


static const pl_module *pl_loader_find_live(const pl_runtime *rt,
                                            const char *name)
{
    for (size_t i = 0; i < rt->n_modules; i++) {
        const pl_module *m = rt->modules[i];
        if ((m->status == PL_MODULE_LOADED || m->status == PL_MODULE_NO_DEVICE) &&
            m->note_read && strcmp(m->note.name, name) == 0)
            return m;
    }
    return NULL;
}

/* Collects the module's devices; fails only out of memory. */
static void pl_loader_collect_devices(pl_runtime *rt, pl_module *m)
{
    int count = m->api.device_count(m->ctx);
    if (count < 0)
        count = 0;
    if (count > 4096)
        count = 4096;
    m->device_names =
        pl_alloc_calloc(rt->alloc, count ? (size_t)count : 1, sizeof *m->device_names);
    if (m->device_names == NULL)
        return;
    m->device_count = count;
    for (int d = 0; d < count; d++) {
        pl_device_properties props;
        memset(&props, 0, sizeof props);
        props.header = (pl_abi_header)PL_ABI_HEADER_INIT(pl_device_properties);
        pl_status *st = m->api.device_properties(m->ctx, d, &props);
        props.name[sizeof props.name - 1] = '\0';
        if (st != NULL || props.name[0] == '\0')
            m->device_names[d] = pl_alloc_strdupf(rt->alloc, "%s:%d", m->note.name, d);
        else
            m->device_names[d] = pl_alloc_strdup(rt->alloc, props.name);
        pl_status_free(st);
    }
}

/* Refuses M when a module of its name is loaded already. */
static bool pl_loader_refuse_duplicate(pl_runtime *rt, pl_module *m)
{
    const pl_module *first = pl_loader_find_live(rt, m->note.name);
    if (first == NULL)
        return false;
    char reason[PATH_MAX + 96];
    snprintf(reason, sizeof reason, "duplicate: module '%s' already loaded from %s",
             m->note.name, first->path);
    pl_module_refuse(rt, m, PL_MODULE_REJECTED, reason);
    return true;
}

/* Everything the loader checks before any of the module's code runs: the
 * file and its folders, its identity note, the ABI, its section, the CPU
 * features it needs, its pin. Returns the checked real path (the caller
 * frees it), or NULL with the module refused. */
static char *pl_loader_prepare(pl_runtime *rt, pl_module *m, const char *dir)
{
    char *real = NULL;
    pl_status *st = pl_loader_check_file(rt->alloc, m->path, dir, &real);
    if (st != NULL) {
        pl_module_refuse_status(rt, m, PL_MODULE_REJECTED, st, "");
        return NULL;
    }
    int fd = open(real, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        pl_module_refuse(rt, m, PL_MODULE_REJECTED, strerror(errno));
        pl_free(real);
        return NULL;
    }
    uint64_t cpu_needed = 0;
    st = pl_note_read(fd, &m->note, &cpu_needed);
    close(fd);
    if (st != NULL) {
        pl_free(real);
        pl_module_refuse_status(rt, m, PL_MODULE_REJECTED, st, "");
        return NULL;
    }
    m->note_read = true;
    char *name = pl_alloc_strdup(rt->alloc, m->note.name);
    if (name != NULL) {
        pl_free(m->name);
        m->name = name;
    }
    m->host.section = pl_config_find_section(rt->config, m->note.name);
    if (m->note.abi_major != PL_ABI_MAJOR) {
        char reason[128];
        snprintf(reason, sizeof reason, "ABI major %u, core speaks %u",
                 (unsigned)m->note.abi_major, PL_ABI_MAJOR);
        pl_free(real);
        pl_module_refuse(rt, m, PL_MODULE_REJECTED, reason);
        return NULL;
    }
    if (m->host.section != NULL && m->host.section->enabled == PL_ENABLED_NO) {
        pl_free(real);
        pl_module_refuse(rt, m, PL_MODULE_DISABLED,
                         "enabled = no in the configuration");
        return NULL;
    }
    uint64_t missing = cpu_needed & ~pl_cpu_features();
    if (missing != 0) {
        char names[512], reason[640];
        pl_cpu_feature_names(missing, names, sizeof names);
        snprintf(reason, sizeof reason,
                 "built for CPU features this machine lacks: %s", names);
        pl_free(real);
        pl_module_refuse(rt, m, PL_MODULE_REJECTED, reason);
        return NULL;
    }
    if (pl_loader_refuse_duplicate(rt, m)) {
        pl_free(real);
        return NULL;
    }

    st = pl_loader_check_pin(rt, m, real);
    if (st != NULL) {
        pl_free(real);
        pl_module_refuse_status(rt, m, PL_MODULE_REJECTED, st, "");
        return NULL;
    }
    return real;
}

/* A duplicate of a module opened before it is refused, else the probe's
 * VERDICT (taken), else the module is opened from REAL (taken). */
static void pl_loader_finish(pl_runtime *rt, pl_module *m, char *real, pl_status *verdict)
{
    /* Checked again: a module of the same name from earlier in this scan
     * has been opened since. */
    if (pl_loader_refuse_duplicate(rt, m)) {
        pl_free(real);
        pl_status_free(verdict);
        return;
    }
    if (verdict != NULL) {
        pl_free(real);
        pl_module_refuse_status(rt, m, PL_MODULE_REJECTED, verdict, "");
        return;
    }
    pl_loader_open(rt, m, real);
    pl_free(real);
}

void pl_loader_open(pl_runtime *rt, pl_module *m, const char *real)
{
    pl_probe_stage(PL_PROBE_STAGE_LOAD);
    dlerror();
    m->handle = dlopen(real, RTLD_NOW | RTLD_LOCAL);
    if (m->handle == NULL) {
        const char *err = dlerror();
        pl_module_refuse(rt, m, PL_MODULE_REJECTED, err ? err : "dlopen failed");
        return;
    }
    pl_module_entry_fn entry;
    *(void **)&entry = dlsym(m->handle, PL_MODULE_ENTRY_SYMBOL);
    if (entry == NULL) {
        pl_module_refuse(rt, m, PL_MODULE_REJECTED,
                         "no entry symbol " PL_MODULE_ENTRY_SYMBOL);
        return;
    }
    uint32_t major = PL_ABI_MAJOR;
    const pl_module_api *table = NULL;
    pl_probe_stage(PL_PROBE_STAGE_ENTRY);
    pl_code code = entry(&pl_host_table, &major, &table);
    if (code != PL_CODE_OK || major != PL_ABI_MAJOR || table == NULL) {
        char reason[160];
        if (major != PL_ABI_MAJOR)
            snprintf(reason, sizeof reason,
                     "entry point speaks ABI major %u, core speaks %u",
                     (unsigned)major, PL_ABI_MAJOR);
        else if (code != PL_CODE_OK)
            snprintf(reason, sizeof reason, "entry point refused: %s",
                     pl_code_name(code));
        else
            snprintf(reason, sizeof reason, "entry point returned no table");
        pl_module_refuse(rt, m, PL_MODULE_REJECTED, reason);
        return;
    }
    pl_status *st = pl_loader_validate_table(m, table);
    if (st != NULL) {
        pl_module_refuse_status(rt, m, PL_MODULE_REJECTED, st, "");
        return;
    }
    pl_module_ctx *ctx = NULL;
    pl_probe_stage(PL_PROBE_STAGE_INIT);
    st = m->api.init(&m->host, &ctx);
    if (st != NULL) {
        bool no_device = pl_status_code(st) == PL_CODE_NO_DEVICE;
        if (ctx != NULL && m->api.shutdown != NULL)
            m->api.shutdown(ctx);
        pl_module_refuse_status(rt, m,
                                no_device ? PL_MODULE_NO_DEVICE : PL_MODULE_REJECTED,
                                st, no_device ? "" : "init failed: ");
        return;
    }
    if (ctx == NULL) {
        pl_module_refuse(rt, m, PL_MODULE_REJECTED,
                         "init succeeded but returned no instance");
        return;
    }
    m->ctx = ctx;

    /* configure with the section's keys, `enabled` excepted. */
    const pl_config_section *s = m->host.section;
    size_t n = 0;
    pl_kv *kv = pl_alloc_calloc(rt->alloc, s && s->n_entries ? s->n_entries : 1,
                                sizeof *kv);
    if (kv == NULL) {
        pl_module_refuse(rt, m, PL_MODULE_REJECTED, "out of memory");
        return;
    }
    for (size_t i = 0; s && i < s->n_entries; i++) {
        if (strcmp(s->entries[i].key, "enabled") == 0)
            continue;
        kv[n].key = s->entries[i].key;
        kv[n].value = s->entries[i].value;
        n++;
    }
    pl_probe_stage(PL_PROBE_STAGE_CONFIGURE);
    st = pl_module_configure(m, kv, n);
    pl_free(kv);
    if (st != NULL) {
        pl_loader_refuse_configure(rt, m, st);
        return;
    }
    pl_probe_stage(PL_PROBE_STAGE_DEVICES);
    pl_loader_collect_devices(rt, m);
    if (m->device_count == 0) {
        pl_module_refuse(rt, m, PL_MODULE_NO_DEVICE,
                         "the module reports no devices");
        return;
    }
    pl_probe_stage(PL_PROBE_STAGE_EXTENSIONS);
    pl_extension_collect(rt, m);
    pl_module_set_verdict(m, PL_MODULE_LOADED, "");
    pl_log(&rt->logger, PL_LOG_DEBUG, NULL, "module %s (%s): loaded, %d device(s)",
           m->name, m->path, m->device_count);
}

/* ---- the module path ---------------------------------------------------- */

static int pl_loader_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool pl_loader_is_module_name(const char *name)
{
    size_t n = strlen(name);
    return name[0] != '.' && n > 3 && strcmp(name + n - 3, ".so") == 0;
}

/* The modules of one scan of the module path whose files passed the checks,
 * in path order, waiting for their probes (all at once) and then to be
 * opened one by one. */
typedef struct pl_loader_pending {
    pl_module **mods;
    char **reals;
    size_t n;
} pl_loader_pending;

static pl_status *pl_loader_add(pl_runtime *rt, const char *path, const char *dir,
                                pl_loader_pending *p)
{
    pl_module **grown =
        pl_alloc_realloc(rt->alloc, rt->modules, (rt->n_modules + 1) * sizeof *grown);
    if (grown == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    rt->modules = grown;
    pl_module **mods = pl_alloc_realloc(rt->alloc, p->mods, (p->n + 1) * sizeof *mods);
    if (mods != NULL)
        p->mods = mods;
    char **reals = pl_alloc_realloc(rt->alloc, p->reals, (p->n + 1) * sizeof *reals);
    if (reals != NULL)
        p->reals = reals;
    if (mods == NULL || reals == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    pl_module *m = pl_module_new(rt, path);
    if (m == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    rt->modules[rt->n_modules++] = m;
    rt->refs++;
    char *real = pl_loader_prepare(rt, m, dir);
    if (real != NULL) {
        p->mods[p->n] = m;
        p->reals[p->n++] = real;
    }
    return NULL;
}

/* Probes the pending modules together, then opens them in order. */
static void pl_loader_open_pending(pl_runtime *rt, pl_loader_pending *p)
{
    pl_status *one = NULL;
    pl_status **verdicts = &one;
    if (p->n > 1)
        verdicts = pl_alloc_calloc(rt->alloc, p->n, sizeof *verdicts);
    if (rt->config->probe == PL_PROBE_FORK && verdicts != NULL) {
        pl_probe_modules(rt, p->mods, p->reals, p->n, verdicts);
    } else if (rt->config->probe == PL_PROBE_FORK) {
        /* No room for the list of verdicts: probe as each is opened. */
        for (size_t i = 0; i < p->n; i++)
            pl_loader_finish(rt, p->mods[i], p->reals[i],
                             pl_probe_module(rt, p->mods[i], p->reals[i]));
        p->n = 0;
    }
    for (size_t i = 0; i < p->n; i++)
        pl_loader_finish(rt, p->mods[i], p->reals[i], verdicts ? verdicts[i] : NULL);
    if (verdicts != &one)
        pl_free(verdicts);
    pl_free(p->mods);
    pl_free(p->reals);
    *p = (pl_loader_pending){0};
}

/* One entry of the module path: a directory (every *.so in it, sorted) or a
 * single file. */
static pl_status *pl_loader_scan_entry(pl_runtime *rt, const char *entry,
                                      pl_loader_pending *p)
{
    struct stat st;
    errno = 0;
    if (stat(entry, &st) == 0 && S_ISDIR(st.st_mode)) {
        DIR *d = opendir(entry);
        if (d == NULL) {
            pl_runtime_add_diagnostic(rt, PL_LOG_WARN, "module path %s: %s",
                                      entry, strerror(errno));
            return NULL;
        }
        char **names = NULL;
        size_t n = 0;
        pl_status *result = NULL;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (!pl_loader_is_module_name(de->d_name))
                continue;
            char **grown = pl_alloc_realloc(rt->alloc, names, (n + 1) * sizeof *grown);
            char *copy = pl_alloc_strdup(rt->alloc, de->d_name);
            if (grown == NULL || copy == NULL) {
                pl_free(copy);
                if (grown != NULL)
                    names = grown;
                result = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
                break;
            }
            names = grown;
            names[n++] = copy;
        }
        closedir(d);
        if (n > 1)
            qsort(names, n, sizeof *names, pl_loader_cmp);
        for (size_t i = 0; i < n; i++) {
            if (result == NULL) {
                char *full = pl_alloc_strdupf(rt->alloc, "%s/%s", entry, names[i]);
                result = full ? pl_loader_add(rt, full, entry, p)
                              : pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                                 "out of memory");
                pl_free(full);
            }
            pl_free(names[i]);
        }
        pl_free(names);
        return result;
    }
    size_t len = strlen(entry);
    bool named_file = len > 3 && strcmp(entry + len - 3, ".so") == 0;
    if (!named_file) {
        pl_runtime_add_diagnostic(rt, PL_LOG_WARN,
                                  "module path %s: %s", entry,
                                  errno ? strerror(errno) : "not a directory");
        return NULL;
    }
    /* A single file: its directory is the module directory. */
    char *dir = pl_alloc_strdup(rt->alloc, entry);
    if (dir == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        slash[1] = '\0';
    else if (slash != NULL)
        *slash = '\0';
    else
        strcpy(dir, ".");
    pl_status *result = pl_loader_add(rt, entry, dir, p);
    pl_free(dir);
    return result;
}

pl_status *pl_loader_load_all(pl_runtime *rt, const char *env_path)
{
    const pl_config *c = rt->config;
    pl_loader_pending p = {0};
    pl_status *st = NULL;
    for (size_t i = 0; i < c->n_module_paths && st == NULL; i++) {
        if (rt->secure && c->module_path_relative[i]) {
            pl_runtime_add_diagnostic(rt, PL_LOG_WARN,
                                      "module path %s ignored: written as a relative "
                                      "path, and the process runs in secure mode",
                                      c->module_paths[i]);
            continue;
        }
        st = pl_loader_scan_entry(rt, c->module_paths[i], &p);
    }
    if (env_path != NULL && st == NULL) {
        char *copy = pl_alloc_strdup(rt->alloc, env_path);
        if (copy == NULL)
            st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
        char *save = NULL;
        /* Empty entries are skipped: the current directory is searched only
         * when it is named. */
        for (char *tok = copy ? strtok_r(copy, ":", &save) : NULL; tok && st == NULL;
             tok = strtok_r(NULL, ":", &save))
            st = pl_loader_scan_entry(rt, tok, &p);
        pl_free(copy);
    }
    /* What was found before a failure still loads. */
    pl_loader_open_pending(rt, &p);
    return st;
}

pl_status *pl_runtime_load_module(pl_runtime *rt, const char *path, size_t *out_index)
{
    if (rt == NULL || path == NULL || path[0] == '\0')
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "pl_runtime_load_module: NULL runtime or empty path");
    if (rt->secure && path[0] != '/')
        return pl_status_create(PL_CODE_PERMISSION_DENIED,
                                "load module %s: a relative path, and the process runs in "
                                "secure mode", path);
    size_t len = strlen(path);
    if (len < 4 || strcmp(path + len - 3, ".so") != 0)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "load module %s: not a shared library name (*.so)", path);
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "load module %s: a directory, not a module file", path);
    size_t first = rt->n_modules;
    pl_allocator outer = pl_alloc_scope_enter(rt->alloc);
    pl_loader_pending p = {0};
    pl_status *st = pl_loader_scan_entry(rt, path, &p);
    pl_loader_open_pending(rt, &p);
    pl_alloc_scope_leave(outer);
    if (st != NULL)
        return pl_status_wrap(st, "load module %s: ", path);
    if (rt->n_modules == first)
        return pl_status_create(PL_CODE_NOT_FOUND, "load module %s: not found", path);
    const pl_module *m = rt->modules[first];
    if (out_index != NULL)
        *out_index = first;
    if (m->status == PL_MODULE_LOADED)
        return NULL;
    return pl_status_create(m->status == PL_MODULE_NO_DEVICE ? PL_CODE_NO_DEVICE
                                                              : PL_CODE_INVALID_ARGUMENT,
                            "module %s (%s): %s: %s", m->name, path,
                            pl_module_status_name(m->status), m->reason);
}
