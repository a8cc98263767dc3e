/* test_loader.c — the loader fault matrix. Each case builds a module folder
 * in a fresh temporary directory from the fixture modules (tests/fixtures),
 * or from files it damages itself, writes a backend.ini that points at it,
 * creates a runtime through the public API and checks what the core recorded
 * for each file: its status, its reason and its diagnostic line.
 *
 * usage: test_loader CASE FIXTURE_DIR STAGE_DIR */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

/* One case's world: the temporary directory, its modules/ folder and the
 * backend.ini beside it. */
typedef struct lt_env {
    const char *dir;
    const char *mods;
    const char *ini;
} lt_env;

static const char *lt_fixture(const char *name)
{
    size_t n = strlen(name) + 4;
    char file[64];
    TH_CHECK(n <= sizeof file, "fixture name too long");
    snprintf(file, sizeof file, "%s.so", name);
    return th_path(th_arg(0), file);
}

/* Writes backend.ini: [runtime] modules = MODULES, then EXTRA (may be ""). */
static void lt_write_ini(const lt_env *env, const char *modules,
                         const char *extra)
{
    size_t n = strlen(modules) + strlen(extra) + 64;
    char *text = malloc(n);
    TH_CHECK(text != NULL, "out of memory");
    snprintf(text, n, "[runtime]\nmodules = %s\n%s", modules, extra);
    th_write_file(env->ini, text, 0644);
    free(text);
}

static lt_env lt_setup(const char *extra)
{
    lt_env env;
    env.dir = th_tempdir();
    env.mods = th_path(env.dir, "modules");
    env.ini = th_path(env.dir, "backend.ini");
    th_mkdir(env.mods, 0755);
    lt_write_ini(&env, "modules", extra);
    return env;
}

/* Copies fixture FIXTURE into the modules folder as AS, mode 0644. */
static const char *lt_add(const lt_env *env, const char *fixture,
                          const char *as)
{
    const char *dst = th_path(env->mods, as);
    th_copy_file(lt_fixture(fixture), dst, 0644);
    return dst;
}

static pl_runtime *lt_create(const lt_env *env)
{
    pl_runtime_options o = th_options(env->ini);
    return th_runtime_create(&o);
}

/* Checks the module found as FILE: its status, that its reason contains
 * REASON (NULL: loaded, reason must be ""), and that a module that did not
 * load has a diagnostic line naming its file and reason. Returns its index. */
static size_t lt_expect(const pl_runtime *rt, const char *file,
                        pl_module_status status, const char *reason)
{
    long i = th_find_by_file(rt, file);
    TH_CHECK(i >= 0, "no module entry for %s", file);
    pl_module_info info;
    th_module_info(rt, (size_t)i, &info);
    TH_CHECK(info.status == status, "%s: status %s, expected %s", file,
             pl_module_status_name(info.status), pl_module_status_name(status));
    TH_CHECK(info.name != NULL && info.name[0] != '\0', "%s: empty name", file);
    TH_CHECK(info.path != NULL, "%s: NULL path", file);
    TH_CHECK(info.reason != NULL, "%s: NULL reason", file);
    fprintf(stderr, "%s: %s %s: %s\n", file, info.name,
            pl_module_status_name(info.status), info.reason);
    if (status == PL_MODULE_LOADED) {
        TH_CHECK(info.reason[0] == '\0', "%s: loaded with reason \"%s\"", file,
                 info.reason);
        TH_CHECK(info.device_count >= 1, "%s: loaded with %d devices", file,
                 info.device_count);
    } else if (reason != NULL) {
        TH_CHECK_CONTAINS(info.reason, reason);
        TH_CHECK_DIAG(rt, file, reason);
    }
    return (size_t)i;
}

/* The common shape: one fixture alone in the folder, which must end with
 * STATUS and REASON. */
static void lt_single(const char *fixture, pl_module_status status,
                      const char *reason)
{
    lt_env env = lt_setup("");
    lt_add(&env, fixture, "mod.so");
    pl_runtime *rt = lt_create(&env);
    TH_CHECK(pl_runtime_module_count(rt) == 1, "expected 1 module, found %zu",
             pl_runtime_module_count(rt));
    lt_expect(rt, "mod.so", status, reason);
    pl_runtime_destroy(rt);
}

/* As lt_single, and the fixture's constructor must never have run: the core
 * refused the file from its identity note alone, before dlopen. */
static void lt_single_unopened(const char *fixture, const char *reason)
{
    lt_env env = lt_setup("");
    const char *marker = th_path(env.dir, "marker");
    TH_CHECK(setenv("FIXTURE_MARKER", marker, 1) == 0, "setenv");
    lt_add(&env, fixture, "mod.so");
    pl_runtime *rt = lt_create(&env);
    TH_CHECK(pl_runtime_module_count(rt) == 1, "expected 1 module, found %zu",
             pl_runtime_module_count(rt));
    lt_expect(rt, "mod.so", PL_MODULE_REJECTED, reason);
    TH_CHECK(!th_exists(marker),
             "the core ran the code of %s (dlopen) before refusing it",
             fixture);
    pl_runtime_destroy(rt);
}

/* ---- files that are not modules --------------------------------------- */

static void case_missing_file(void)
{
    lt_env env = lt_setup("");
    lt_write_ini(&env, "modules/nothere.so", "");
    pl_runtime *rt = lt_create(&env);
    TH_CHECK(pl_runtime_module_count(rt) == 1, "expected 1 module, found %zu",
             pl_runtime_module_count(rt));
    lt_expect(rt, "nothere.so", PL_MODULE_REJECTED,
              "No such file or directory");
    pl_runtime_destroy(rt);
}

static void case_empty_file(void)
{
    lt_env env = lt_setup("");
    th_write_file(th_path(env.mods, "x.so"), "", 0644);
    pl_runtime *rt = lt_create(&env);
    lt_expect(rt, "x.so", PL_MODULE_REJECTED, "empty file");
    pl_runtime_destroy(rt);
}

static void case_not_elf(void)
{
    lt_env env = lt_setup("");
    th_write_file(th_path(env.mods, "y.so"),
                  "This is a text file that only pretends to be a module.\n",
                  0644);
    pl_runtime *rt = lt_create(&env);
    lt_expect(rt, "y.so", PL_MODULE_REJECTED, "not an ELF file");
    pl_runtime_destroy(rt);
}

static void case_other_arch(void)
{
    lt_env env = lt_setup("");
    const char *path = lt_add(&env, "fx_good", "arch.so");
    /* e_machine is the 2-byte little-endian field at offset 18. */
    int fd = open(path, O_RDWR | O_CLOEXEC);
    TH_CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    unsigned char machine[2];
    TH_CHECK(pread(fd, machine, 2, 18) == 2, "read e_machine");
    unsigned foreign = (machine[0] | machine[1] << 8) == 183 ? 62 : 183;
    unsigned char patched[2] = {(unsigned char)foreign, 0};
    TH_CHECK(pwrite(fd, patched, 2, 18) == 2, "write e_machine");
    close(fd);
    pl_runtime *rt = lt_create(&env);
    lt_expect(rt, "arch.so", PL_MODULE_REJECTED, "another architecture");
    pl_runtime_destroy(rt);
}

/* ---- libraries the dynamic loader refuses ------------------------------ */

static void case_unresolved_symbol(void)
{
    lt_single("fx_unresolved", PL_MODULE_REJECTED, "undefined symbol");
}

static void case_missing_dependency(void)
{
    lt_env env = lt_setup("");
    lt_add(&env, "fx_missing_dep", "mod.so");
    pl_runtime *rt = lt_create(&env);
    size_t i = lt_expect(rt, "mod.so", PL_MODULE_REJECTED, "libfxdep.so");
    pl_module_info info;
    th_module_info(rt, i, &info);
    TH_CHECK_CONTAINS(info.reason, "cannot open shared object file");
    pl_runtime_destroy(rt);
}

/* ---- identity and ABI -------------------------------------------------- */

static void case_no_entry(void)
{
    lt_single("fx_no_entry", PL_MODULE_REJECTED,
              "no entry symbol pl_module_entry");
}

static void case_no_note(void)
{
    lt_single_unopened("fx_no_note", "no Plinth identity note");
}

static void case_garbled_note(void)
{
    lt_single_unopened("fx_garbled_note", "malformed identity note");
}

static void case_garbled_note_name(void)
{
    lt_single_unopened("fx_garbled_name", "malformed identity note");
}

static void case_abi_newer(void)
{
    lt_single_unopened("fx_abi_newer", "ABI major 2, core speaks 1");
}

static void case_abi_older(void)
{
    lt_single_unopened("fx_abi_older", "ABI major 0, core speaks 1");
}

static void case_entry_refuses(void)
{
    lt_single("fx_entry_refuses", PL_MODULE_REJECTED,
              "speaks ABI major 2, core speaks 1");
}

static void case_table_too_small(void)
{
    lt_single("fx_table_small", PL_MODULE_REJECTED, "module table too small");
}

static void case_minor_newer(void)
{
    lt_env env = lt_setup("");
    lt_add(&env, "fx_minor_newer", "mod.so");
    pl_runtime *rt = lt_create(&env);
    size_t i = lt_expect(rt, "mod.so", PL_MODULE_LOADED, NULL);
    pl_module_info info;
    th_module_info(rt, i, &info);
    TH_CHECK(info.abi_major == 1, "abi_major %u", info.abi_major);
    TH_CHECK(info.abi_minor == 99, "abi_minor %u, expected 99", info.abi_minor);
    TH_CHECK(info.device_count == 1, "device_count %d", info.device_count);
    TH_CHECK(strcmp(info.name, "fx_minor_newer") == 0, "name %s", info.name);
    pl_runtime_destroy(rt);
}

/* A module built against ABI 1.1, before the graph table gained the
 * builders of control-flow bodies (1.2), still loads and is listed with its
 * own minor. */
static void case_minor_older(void)
{
    TH_CHECK(PL_ABI_MINOR >= 2, "this SDK is ABI 1.%d; the test wants 1.2 or later",
             PL_ABI_MINOR);
    lt_env env = lt_setup("");
    lt_add(&env, "fx_minor_older", "mod.so");
    pl_runtime *rt = lt_create(&env);
    size_t i = lt_expect(rt, "mod.so", PL_MODULE_LOADED, NULL);
    pl_module_info info;
    th_module_info(rt, i, &info);
    TH_CHECK(info.abi_major == 1 && info.abi_minor == 1, "ABI %u.%u, expected 1.1",
             info.abi_major, info.abi_minor);
    TH_CHECK(info.device_count == 1, "device_count %d", info.device_count);
    pl_runtime_destroy(rt);
}

/* A module that needs the 1.2 graph builders checks the core's graph table
 * (minor and size) before using them; this core's table passes. */
static void case_needs_bodies(void)
{
    lt_env env = lt_setup("");
    lt_add(&env, "fx_needs_bodies", "mod.so");
    pl_runtime *rt = lt_create(&env);
    size_t i = lt_expect(rt, "mod.so", PL_MODULE_LOADED, NULL);
    pl_module_info info;
    th_module_info(rt, i, &info);
    TH_CHECK(info.abi_minor == PL_ABI_MINOR, "ABI minor %u", info.abi_minor);
    pl_runtime_destroy(rt);
}

static void case_name_mismatch(void)
{
    lt_single("fx_name_mismatch", PL_MODULE_REJECTED, "identity note says");
}

/* A note naming the module "VAcc-1" (sdk/README.md rule 5 allows
 * [a-z0-9_]): rejected before any of its code runs, naming the rule. */
static void case_bad_name(void)
{
    lt_single("fx_bad_name", PL_MODULE_REJECTED, "module name 'VAcc-1' breaks the name rule");
}

static void case_missing_capability_fn(void)
{
    lt_single("fx_missing_cap", PL_MODULE_REJECTED, "get_kernel");
}

/* ---- init -------------------------------------------------------------- */

static void case_init_fails(void)
{
    lt_single("fx_init_fails", PL_MODULE_REJECTED,
              "fixture init refused: simulated firmware mismatch");
}

static void case_no_device(void)
{
    lt_env env = lt_setup("");
    lt_add(&env, "fx_no_device", "mod.so");
    pl_runtime *rt = lt_create(&env);
    size_t i = lt_expect(rt, "mod.so", PL_MODULE_NO_DEVICE,
                         "fixture: no board present");
    TH_CHECK(pl_runtime_find_module(rt, "fx_no_device") == (long)i,
             "pl_runtime_find_module does not find a no-device module");
    pl_module_info info;
    th_module_info(rt, i, &info);
    TH_CHECK(info.device_count == 0, "device_count %d", info.device_count);
    pl_runtime_destroy(rt);
}

/* ---- several modules --------------------------------------------------- */

static void case_duplicate_name(void)
{
    lt_env env = lt_setup("");
    lt_add(&env, "fx_good", "a_good.so");
    lt_add(&env, "fx_good", "b_good.so");
    pl_runtime *rt = lt_create(&env);
    TH_CHECK(pl_runtime_module_count(rt) == 2, "expected 2 modules, found %zu",
             pl_runtime_module_count(rt));
    size_t a = lt_expect(rt, "a_good.so", PL_MODULE_LOADED, NULL);
    lt_expect(rt, "b_good.so", PL_MODULE_REJECTED, "duplicate");
    TH_CHECK(pl_runtime_find_module(rt, "fx_good") == (long)a,
             "pl_runtime_find_module(fx_good) is not a_good.so");
    pl_runtime_destroy(rt);
}

static void case_all_fail(void)
{
    lt_env env = lt_setup("");
    th_write_file(th_path(env.mods, "x.so"), "", 0644);
    th_write_file(th_path(env.mods, "y.so"), "not a module\n", 0644);
    lt_add(&env, "fx_no_note", "z.so");
    pl_runtime *rt = lt_create(&env);
    TH_CHECK(pl_runtime_module_count(rt) == 3, "expected 3 modules, found %zu",
             pl_runtime_module_count(rt));
    for (size_t i = 0; i < 3; i++) {
        pl_module_info info;
        th_module_info(rt, i, &info);
        TH_CHECK(info.status == PL_MODULE_REJECTED, "module %zu (%s) is %s", i,
                 info.path, pl_module_status_name(info.status));
    }
    TH_CHECK_DIAG(rt, "no module loaded");
    pl_runtime_destroy(rt);
}

/* ---- file safety ------------------------------------------------------- */

static void lt_writable_file(mode_t mode)
{
    lt_env env = lt_setup("");
    const char *bad = lt_add(&env, "fx_good", "a_writable.so");
    lt_add(&env, "fx_good2", "b_ok.so");
    th_chmod(bad, mode);
    pl_runtime *rt = lt_create(&env);
    lt_expect(rt, "a_writable.so", PL_MODULE_REJECTED,
              "writable by group or others");
    lt_expect(rt, "b_ok.so", PL_MODULE_LOADED, NULL);
    pl_runtime_destroy(rt);
}

static void case_world_writable_file(void)
{
    lt_writable_file(0666);
}

static void case_group_writable_file(void)
{
    lt_writable_file(0664);
}

static void case_world_writable_dir(void)
{
    lt_env env = lt_setup("");
    lt_add(&env, "fx_good", "mod.so");
    th_chmod(env.mods, 0777);
    pl_runtime *rt = lt_create(&env);
    lt_expect(rt, "mod.so", PL_MODULE_REJECTED, "writable by group or others");
    pl_runtime_destroy(rt);
}

static void case_link_outside(void)
{
    lt_env env = lt_setup("");
    const char *elsewhere = th_tempdir();
    const char *target = th_path(elsewhere, "fx_good.so");
    th_copy_file(lt_fixture("fx_good"), target, 0644);
    const char *link = th_path(env.mods, "ext.so");
    TH_CHECK(symlink(target, link) == 0, "symlink: %s", strerror(errno));
    pl_runtime *rt = lt_create(&env);
    lt_expect(rt, "ext.so", PL_MODULE_REJECTED, "outside the module directory");
    pl_runtime_destroy(rt);
}

static void case_link_inside(void)
{
    lt_env env = lt_setup("");
    lt_add(&env, "fx_good", "fx_good.so.1");
    const char *link = th_path(env.mods, "fx_good.so");
    TH_CHECK(symlink("fx_good.so.1", link) == 0, "symlink: %s",
             strerror(errno));
    pl_runtime *rt = lt_create(&env);
    lt_expect(rt, "fx_good.so", PL_MODULE_LOADED, NULL);
    pl_runtime_destroy(rt);
}

/* ---- environment and configuration ------------------------------------ */

static void case_secure_mode_env(void)
{
    lt_env env = lt_setup("");
    th_write_file(env.ini, "[runtime]\n", 0644);
    const char *envdir = th_tempdir();
    th_copy_file(lt_fixture("fx_good"), th_path(envdir, "fx_good.so"), 0644);
    TH_CHECK(setenv("PLINTH_MODULE_PATH", envdir, 1) == 0, "setenv");
    unsetenv("PLINTH_CONFIG");

    pl_runtime_options o = th_options(env.ini);
    o.ignore_environment = false;
    o.secure_mode = true;
    pl_runtime *rt = th_runtime_create(&o);
    TH_CHECK(th_find_by_name(rt, "fx_good") < 0,
             "secure mode loaded a module from PLINTH_MODULE_PATH");
    TH_CHECK(pl_runtime_module_count(rt) == 0, "expected 0 modules, found %zu",
             pl_runtime_module_count(rt));
    TH_CHECK_DIAG(rt, "PLINTH_MODULE_PATH ignored");
    pl_runtime_destroy(rt);

    o = th_options(env.ini);
    o.ignore_environment = false;
    o.secure_mode = false;
    rt = th_runtime_create(&o);
    long i = th_find_by_name(rt, "fx_good");
    TH_CHECK(i >= 0, "PLINTH_MODULE_PATH was not used outside secure mode");
    pl_module_info info;
    th_module_info(rt, (size_t)i, &info);
    TH_CHECK(info.status == PL_MODULE_LOADED, "fx_good is %s: %s",
             pl_module_status_name(info.status), info.reason);
    pl_runtime_destroy(rt);
}

static void case_disabled(void)
{
    lt_env env = lt_setup("[fx_good]\nenabled = no\n");
    const char *marker = th_path(env.dir, "marker");
    TH_CHECK(setenv("FIXTURE_MARKER", marker, 1) == 0, "setenv");
    lt_add(&env, "fx_good", "mod.so");
    pl_runtime *rt = lt_create(&env);
    size_t i = lt_expect(rt, "mod.so", PL_MODULE_DISABLED, NULL);
    pl_module_info info;
    th_module_info(rt, i, &info);
    TH_CHECK(strcmp(info.name, "fx_good") == 0,
             "a disabled module is named \"%s\", not by its note", info.name);
    TH_CHECK(pl_runtime_find_module(rt, "fx_good") < 0,
             "pl_runtime_find_module finds a disabled module");
    TH_CHECK(!th_exists(marker), "a disabled module was opened (dlopen)");
    pl_runtime_destroy(rt);

    /* The marker does work: enabled, the same file leaves it. */
    lt_write_ini(&env, "modules", "[fx_good]\nenabled = yes\n");
    rt = lt_create(&env);
    lt_expect(rt, "mod.so", PL_MODULE_LOADED, NULL);
    TH_CHECK(th_exists(marker), "the fixture marker was not written");
    pl_runtime_destroy(rt);
}

static void case_diagnostic_format(void)
{
    lt_env env = lt_setup("");
    lt_add(&env, "fx_no_entry", "noentry.so");
    th_write_file(th_path(env.mods, "x.so"), "", 0644);
    pl_runtime *rt = lt_create(&env);

    static const struct {
        const char *file;
        const char *name;
    } expect[] = {{"noentry.so", "fx_no_entry"}, {"x.so", "x.so"}};
    for (size_t k = 0; k < sizeof expect / sizeof expect[0]; k++) {
        long i = th_find_by_file(rt, expect[k].file);
        TH_CHECK(i >= 0, "no module entry for %s", expect[k].file);
        pl_module_info info;
        th_module_info(rt, (size_t)i, &info);
        TH_CHECK(info.status == PL_MODULE_REJECTED, "%s is %s", expect[k].file,
                 pl_module_status_name(info.status));
        TH_CHECK(strcmp(info.name, expect[k].name) == 0,
                 "%s is named \"%s\", expected \"%s\"", expect[k].file,
                 info.name, expect[k].name);
        TH_CHECK(info.reason[0] != '\0', "%s: empty reason", expect[k].file);
        char line[4096];
        snprintf(line, sizeof line, "module %s (%s): rejected: %s", info.name,
                 info.path, info.reason);
        bool found = false;
        for (size_t d = 0; d < pl_runtime_diagnostic_count(rt); d++)
            if (strcmp(pl_runtime_diagnostic(rt, d), line) == 0)
                found = true;
        TH_CHECK(found, "no diagnostic line is exactly \"%s\"", line);
    }
    pl_runtime_destroy(rt);
}

static void case_configure_roundtrip(void)
{
    lt_env env = lt_setup("[fx_good]\nenabled = yes\nalpha = 1\n");
    lt_add(&env, "fx_good", "mod.so");
    pl_runtime *rt = lt_create(&env);
    long i = pl_runtime_find_module(rt, "fx_good");
    TH_CHECK(i >= 0, "fx_good not found");
    const char *alpha = th_module_output(rt, (size_t)i, "alpha");
    TH_CHECK(alpha != NULL && strcmp(alpha, "1") == 0,
             "output alpha is %s, expected 1", alpha ? alpha : "absent");
    TH_CHECK(th_module_output(rt, (size_t)i, "enabled") == NULL,
             "the core passed 'enabled' to the module's configure");

    const char *keys[] = {"beta"}, *values[] = {"2"};
    TH_CHECK_OK(pl_runtime_configure_module(rt, "fx_good", keys, values, 1));
    const char *beta = th_module_output(rt, (size_t)i, "beta");
    TH_CHECK(beta != NULL && strcmp(beta, "2") == 0,
             "output beta is %s, expected 2", beta ? beta : "absent");
    TH_CHECK(th_module_output(rt, (size_t)i, "alpha") == NULL,
             "outputs of the earlier configure were not replaced");

    TH_CHECK_OK(pl_runtime_configure_module(rt, "fx_good", NULL, NULL, 0));
    TH_CHECK(pl_runtime_module_output_count(rt, (size_t)i) == 0,
             "a query of an echoing module has %zu outputs",
             pl_runtime_module_output_count(rt, (size_t)i));

    pl_status *st =
        pl_runtime_configure_module(rt, "no_such_module", keys, values, 1);
    TH_CHECK(pl_status_code(st) == PL_CODE_NOT_FOUND,
             "configure of an unknown module: %s: %s",
             pl_code_name(pl_status_code(st)), pl_status_message(st));
    pl_status_free(st);
    pl_runtime_destroy(rt);
}

static void case_teardown_keeps_loaded(void)
{
    lt_env env = lt_setup("");
    lt_add(&env, "fx_good", "mod.so");
    pl_runtime *rt1 = lt_create(&env);
    pl_runtime *rt2 = lt_create(&env);
    const char *k1[] = {"one"}, *v1[] = {"1"};
    const char *k2[] = {"two"}, *v2[] = {"2"};
    TH_CHECK_OK(pl_runtime_configure_module(rt1, "fx_good", k1, v1, 1));
    TH_CHECK_OK(pl_runtime_configure_module(rt2, "fx_good", k2, v2, 1));
    pl_runtime_destroy(rt1);

    th_watch(rt2);
    long i = pl_runtime_find_module(rt2, "fx_good");
    TH_CHECK(i >= 0, "fx_good gone from the second runtime");
    pl_module_info info;
    th_module_info(rt2, (size_t)i, &info);
    TH_CHECK(info.status == PL_MODULE_LOADED && info.device_count == 1,
             "fx_good in the second runtime: %s, %d devices",
             pl_module_status_name(info.status), info.device_count);
    TH_CHECK(strcmp(pl_runtime_device_name(rt2, (size_t)i, 0),
                    "Fixture device 0") == 0,
             "device name \"%s\"", pl_runtime_device_name(rt2, (size_t)i, 0));
    TH_CHECK(th_module_output(rt2, (size_t)i, "two") != NULL &&
                 th_module_output(rt2, (size_t)i, "one") == NULL,
             "the second runtime's outputs are not its own");
    const char *k3[] = {"three"}, *v3[] = {"3"};
    TH_CHECK_OK(pl_runtime_configure_module(rt2, "fx_good", k3, v3, 1));
    TH_CHECK(th_module_output(rt2, (size_t)i, "three") != NULL,
             "configure after the other runtime's teardown has no output");
    pl_runtime_destroy(rt2);

    /* Everything gone, the module loads again. */
    pl_runtime *rt3 = lt_create(&env);
    lt_expect(rt3, "mod.so", PL_MODULE_LOADED, NULL);
    pl_runtime_destroy(rt3);
}

/* ---- the real modules ---------------------------------------------------- */

static lt_env lt_setup_stage(const char *extra)
{
    const char *stage = th_arg(1);
    static const char *const needed[] = {"libplinth_cpu.so",
                                         "libplinth_onednn.so",
                                         "libplinth_example_acc.so"};
    for (size_t k = 0; k < sizeof needed / sizeof needed[0]; k++)
        TH_CHECK(th_exists(th_path(stage, needed[k])), "%s is not staged in %s",
                 needed[k], stage);
    lt_env env = lt_setup("");
    lt_write_ini(&env, stage, extra);
    return env;
}

/* Lines in the fixture marker file: how many times a fixture was opened. */
static int lt_marker_lines(const char *marker)
{
    FILE *f = fopen(marker, "r");
    if (f == NULL)
        return 0;
    int n = 0;
    for (int c; (c = fgetc(f)) != EOF;)
        n += c == '\n';
    fclose(f);
    return n;
}

/* ---- owners, pins and secure mode ---------------------------------------- */

/* Module files and folders owned by someone other than root or the running
 * user are refused. Only root can give a file away, so the case skips
 * otherwise. */
static void case_owner_file(void)
{
    if (geteuid() != 0)
        th_skip("only root can chown a file to another user");
    lt_env env = lt_setup("");
    const char *bad = lt_add(&env, "fx_good", "a_foreign.so");
    lt_add(&env, "fx_good2", "b_ok.so");
    TH_CHECK(chown(bad, 65534, 65534) == 0, "chown: %s", strerror(errno));
    pl_runtime *rt = lt_create(&env);
    lt_expect(rt, "a_foreign.so", PL_MODULE_REJECTED,
              "file is owned by uid 65534, neither root nor the running user");
    lt_expect(rt, "b_ok.so", PL_MODULE_LOADED, NULL);
    pl_runtime_destroy(rt);
}

static void case_owner_dir(void)
{
    if (geteuid() != 0)
        th_skip("only root can chown a folder to another user");
    lt_env env = lt_setup("");
    lt_add(&env, "fx_good", "mod.so");
    TH_CHECK(chown(env.mods, 65534, 65534) == 0, "chown: %s", strerror(errno));
    pl_runtime *rt = lt_create(&env);
    lt_expect(rt, "mod.so", PL_MODULE_REJECTED, "is owned by uid 65534, neither root");
    pl_runtime_destroy(rt);
}

/* The file's SHA-256 as sha256sum prints it. */
static void lt_sha256sum(const char *path, char out[65])
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "sha256sum '%s'", path);
    FILE *p = popen(cmd, "r");
    TH_CHECK(p != NULL, "popen");
    TH_CHECK(fscanf(p, "%64s", out) == 1, "no output from %s", cmd);
    pclose(p);
    TH_CHECK(strlen(out) == 64, "sha256sum printed %s", out);
}

/* [modules] sha256.NAME: the pinned contents load (in either case of hex),
 * others are refused before any of their code runs. */
static void case_sha256_pin(void)
{
    lt_env env = lt_setup("");
    const char *marker = th_path(env.dir, "marker");
    TH_CHECK(setenv("FIXTURE_MARKER", marker, 1) == 0, "setenv");
    const char *mod = lt_add(&env, "fx_good", "mod.so");
    char digest[65], extra[256];
    lt_sha256sum(mod, digest);
    snprintf(extra, sizeof extra, "[modules]\nsha256.fx_good = %s\n", digest);
    lt_write_ini(&env, "modules", extra);
    pl_runtime *rt = lt_create(&env);
    lt_expect(rt, "mod.so", PL_MODULE_LOADED, NULL);
    pl_runtime_destroy(rt);
    for (char *p = digest; *p; p++)
        *p = (char)toupper((unsigned char)*p);
    snprintf(extra, sizeof extra, "[modules]\nsha256.fx_good = %s\n", digest);
    lt_write_ini(&env, "modules", extra);
    rt = lt_create(&env);
    lt_expect(rt, "mod.so", PL_MODULE_LOADED, NULL);
    pl_runtime_destroy(rt);

    /* Another build of the module under the same name: refused, unopened. */
    TH_CHECK(unlink(mod) == 0, "unlink");
    th_copy_file(lt_fixture("fx_init_fails"), mod, 0644);
    lt_add(&env, "fx_good2", "other.so");
    char text[512];
    snprintf(text, sizeof text, "[modules]\nsha256.fx_init_fails = %s\n", digest);
    lt_write_ini(&env, "modules", text);
    unlink(marker);
    rt = lt_create(&env);
    lt_expect(rt, "mod.so", PL_MODULE_REJECTED, "contents do not match the pin");
    lt_expect(rt, "mod.so", PL_MODULE_REJECTED, "backend.ini:4: SHA-256 ");
    lt_expect(rt, "other.so", PL_MODULE_LOADED, NULL);
    TH_CHECK(lt_marker_lines(marker) == 2, "the refused file was opened "
             "(%d openings, expected 2 of other.so)", lt_marker_lines(marker));
    pl_runtime_destroy(rt);

    /* A pin naming no module is a warning; a malformed pin an error. */
    lt_write_ini(&env, "modules", "[modules]\nsha256.fx_absent = "
                 "0000000000000000000000000000000000000000000000000000000000000000\n");
    rt = lt_create(&env);
    TH_CHECK_DIAG(rt, "backend.ini:4:", "sha256.fx_absent pins a module that is not");
    pl_runtime_destroy(rt);
    lt_write_ini(&env, "modules", "[modules]\nsha256.fx_good = 12ab\n");
    pl_runtime_options o = th_options(env.ini);
    pl_runtime *none = NULL;
    pl_status *st = pl_runtime_create(&o, &none);
    TH_CHECK(st != NULL && none == NULL, "a 4-digit pin was accepted");
    TH_CHECK_CONTAINS(pl_status_message(st), "backend.ini:4: bad value for sha256.fx_good");
    pl_status_free(st);
}

/* Secure mode reads no ./backend.ini: one in the working folder could name
 * the folder's own modules. */
static void case_secure_mode_cwd_ini(void)
{
    lt_env env = lt_setup("");
    lt_add(&env, "fx_good", "mod.so");
    char cwd[4096];
    TH_CHECK(getcwd(cwd, sizeof cwd) != NULL, "getcwd");
    TH_CHECK(chdir(env.dir) == 0, "chdir");
    pl_runtime_options o = th_options(NULL);
    o.secure_mode = true;
    pl_runtime *rt = th_runtime_create(&o);
    TH_CHECK(th_find_by_name(rt, "fx_good") < 0, "secure mode read ./backend.ini");
    TH_CHECK_DIAG(rt, "./backend.ini ignored");
    pl_runtime_destroy(rt);
    o = th_options(NULL);
    rt = th_runtime_create(&o);
    TH_CHECK(th_find_by_name(rt, "fx_good") >= 0, "./backend.ini was not read outside "
             "secure mode");
    pl_runtime_destroy(rt);
    TH_CHECK(chdir(cwd) == 0, "chdir back");
}

/* Secure mode skips module paths written relative in backend.ini. */
static void case_secure_mode_relative_path(void)
{
    lt_env env = lt_setup("");
    lt_add(&env, "fx_good", "mod.so");
    pl_runtime_options o = th_options(env.ini);
    o.secure_mode = true;
    pl_runtime *rt = th_runtime_create(&o);
    TH_CHECK(pl_runtime_module_count(rt) == 0, "secure mode used the relative path");
    TH_CHECK_DIAG(rt, "ignored: written as a relative path");
    pl_runtime_destroy(rt);
    lt_write_ini(&env, env.mods, "");
    rt = th_runtime_create(&o);
    lt_expect(rt, "mod.so", PL_MODULE_LOADED, NULL);
    pl_runtime_destroy(rt);
}

/* ---- CPU features ---------------------------------------------------------- */

/* Whether /proc/cpuinfo lists FLAG for this machine. */
static bool lt_cpu_has(const char *flag)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "grep -m1 '^flags' /proc/cpuinfo | grep -qw %s", flag);
    return system(cmd) == 0;
}

/* A module noting a CPU feature the machine lacks is refused before it is
 * opened (its code could fault on the first such instruction), naming the
 * feature; the others load. */
static void case_cpu_bit_unknown(void)
{
    lt_env env = lt_setup("");
    const char *marker = th_path(env.dir, "marker");
    TH_CHECK(setenv("FIXTURE_MARKER", marker, 1) == 0, "setenv");
    lt_add(&env, "fx_needs_bit40", "a.so");
    lt_add(&env, "fx_good", "b.so");
    pl_runtime *rt = lt_create(&env);
    lt_expect(rt, "a.so", PL_MODULE_REJECTED,
              "built for CPU features this machine lacks: bit 40");
    lt_expect(rt, "b.so", PL_MODULE_LOADED, NULL);
    pl_runtime_destroy(rt);
    TH_CHECK(lt_marker_lines(marker) == 2, "opened %d times, expected 2 (b.so's "
             "probe and load)", lt_marker_lines(marker));
}

/* PL_MODULE_IDENTITY notes what the compiler was told it may use: a build
 * with -mavx512f loads where the machine has AVX-512F and is refused, naming
 * it, where not. */
static void case_cpu_built_avx512(void)
{
    if (!th_exists(lt_fixture("fx_built_avx512")))
        th_skip("not an x86-64 build");
    lt_env env = lt_setup("");
    lt_add(&env, "fx_built_avx512", "a.so");
    lt_add(&env, "fx_good", "b.so");
    pl_runtime *rt = lt_create(&env);
    if (lt_cpu_has("avx512f"))
        lt_expect(rt, "a.so", PL_MODULE_LOADED, NULL);
    else
        lt_expect(rt, "a.so", PL_MODULE_REJECTED,
                  "built for CPU features this machine lacks: avx512f");
    lt_expect(rt, "b.so", PL_MODULE_LOADED, NULL);
    pl_runtime_destroy(rt);
}

/* ---- probing ------------------------------------------------------------ */

/* A module that faults in FIXTURE's way, beside the real cpu module: the
 * runtime is made, the fixture is rejected with REASON, and cpu loads. */
static void lt_probe_fault(const char *fixture, const char *reason)
{
    lt_env env = lt_setup("probe_timeout_ms = 1500\n");
    lt_add(&env, fixture, "bad.so");
    th_copy_file(th_path(th_arg(1), "libplinth_cpu.so"),
                 th_path(env.mods, "libplinth_cpu.so"), 0644);
    pl_runtime *rt = lt_create(&env);
    lt_expect(rt, "bad.so", PL_MODULE_REJECTED, reason);
    lt_expect(rt, "libplinth_cpu.so", PL_MODULE_LOADED, NULL);
    pl_runtime_destroy(rt);
}

static void case_probe_init_abort(void)
{
    lt_probe_fault("fx_init_abort", "crashed in init (SIGABRT)");
}

static void case_probe_init_segv(void)
{
    lt_probe_fault("fx_init_segv", "crashed in init (SIGSEGV)");
}

static void case_probe_init_hang(void)
{
    lt_probe_fault("fx_init_hang", "init did not return within 1500 ms");
}

static void case_probe_init_exit(void)
{
    lt_probe_fault("fx_init_exit", "exited with status 3 in init");
}

static void case_probe_ctor_abort(void)
{
    lt_probe_fault("fx_ctor_abort", "crashed in its constructors (SIGABRT)");
}

static void case_probe_configure_crash(void)
{
    lt_probe_fault("fx_configure_crash", "crashed in configure (SIGSEGV)");
}

/* The probes of one start run at the same time: two modules whose init
 * waits for the other's to have begun both come through (one after the
 * other, the first would wait out its time limit and be rejected), and a
 * module that hangs beside them is still rejected. */
static void case_probe_concurrent(void)
{
    lt_env env = lt_setup("probe_timeout_ms = 10000\n");
    TH_CHECK(setenv("FIXTURE_MEET", th_path(env.dir, "meet"), 1) == 0, "setenv");
    lt_add(&env, "fx_meet_a", "a.so");
    lt_add(&env, "fx_meet_b", "b.so");
    lt_add(&env, "fx_init_abort", "c.so");
    pl_runtime *rt = lt_create(&env);
    unsetenv("FIXTURE_MEET");
    lt_expect(rt, "a.so", PL_MODULE_LOADED, NULL);
    lt_expect(rt, "b.so", PL_MODULE_LOADED, NULL);
    lt_expect(rt, "c.so", PL_MODULE_REJECTED, "crashed in init (SIGABRT)");
    pl_runtime_destroy(rt);
}

/* A verdict is kept per file version: a second runtime in the process
 * opens the module once (no probe), a changed file is probed again, and
 * probe = none opens it once. */
static void case_probe_remembered(void)
{
    lt_env env = lt_setup("");
    const char *marker = th_path(env.dir, "marker");
    TH_CHECK(setenv("FIXTURE_MARKER", marker, 1) == 0, "setenv");
    const char *mod = lt_add(&env, "fx_good", "mod.so");
    pl_runtime *rt = lt_create(&env);
    lt_expect(rt, "mod.so", PL_MODULE_LOADED, NULL);
    pl_runtime_destroy(rt);
    TH_CHECK(lt_marker_lines(marker) == 2, "first start: opened %d times, "
             "expected 2 (the probe's child and the process)", lt_marker_lines(marker));
    rt = lt_create(&env);
    lt_expect(rt, "mod.so", PL_MODULE_LOADED, NULL);
    pl_runtime_destroy(rt);
    TH_CHECK(lt_marker_lines(marker) == 3, "second start: opened %d times in all, "
             "expected 3 (the verdict is remembered)", lt_marker_lines(marker));
    /* Another version of the file (other contents): probed again. */
    TH_CHECK(unlink(mod) == 0, "unlink");
    th_copy_file(lt_fixture("fx_good2"), mod, 0644);
    rt = lt_create(&env);
    pl_runtime_destroy(rt);
    TH_CHECK(lt_marker_lines(marker) == 5, "changed file: opened %d times in all, "
             "expected 5", lt_marker_lines(marker));
    /* Other configure keys: probed again. */
    lt_write_ini(&env, "modules", "[fx_good2]\nanswer = 42\n");
    rt = lt_create(&env);
    pl_runtime_destroy(rt);
    TH_CHECK(lt_marker_lines(marker) == 7, "new keys: opened %d times in all, "
             "expected 7", lt_marker_lines(marker));
    /* probe = none: straight in. */
    TH_CHECK(unlink(mod) == 0, "unlink");
    th_copy_file(lt_fixture("fx_good"), mod, 0644);
    lt_write_ini(&env, "modules", "probe = none\n");
    rt = lt_create(&env);
    lt_expect(rt, "mod.so", PL_MODULE_LOADED, NULL);
    pl_runtime_destroy(rt);
    TH_CHECK(lt_marker_lines(marker) == 8, "probe = none: opened %d times in all, "
             "expected 8", lt_marker_lines(marker));
}

/* With a cache folder the verdict is a file there (a hang's excepted). */
static void case_probe_cache_file(void)
{
    const char *cache = th_path(th_tempdir(), "cache");
    char extra[4200];
    snprintf(extra, sizeof extra, "cache_dir = %s\nprobe_timeout_ms = 500\n", cache);
    lt_env env = lt_setup(extra);
    lt_add(&env, "fx_init_segv", "bad.so");
    lt_add(&env, "fx_init_hang", "hang.so");
    lt_add(&env, "fx_good", "good.so");
    pl_runtime *rt = lt_create(&env);
    lt_expect(rt, "bad.so", PL_MODULE_REJECTED, "crashed in init (SIGSEGV)");
    lt_expect(rt, "hang.so", PL_MODULE_REJECTED, "init did not return within 500 ms");
    lt_expect(rt, "good.so", PL_MODULE_LOADED, NULL);
    pl_runtime_destroy(rt);
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "grep -qx 'rejected: crashed in init (SIGSEGV)' %s/fx_init_segv-*.probe && "
             "grep -qx ok %s/fx_good-*.probe", cache, cache);
    TH_CHECK(system(cmd) == 0, "the verdicts are not in %s", cache);
    /* A hang may have been the machine's: not written down. */
    snprintf(cmd, sizeof cmd, "ls %s/fx_init_hang-*.probe >/dev/null 2>&1", cache);
    TH_CHECK(system(cmd) != 0, "a hang's verdict was kept in %s", cache);
}

static void case_real_modules(void)
{
    lt_env env = lt_setup_stage("");
    pl_runtime *rt = lt_create(&env);
    static const struct {
        const char *file;
        const char *name;
    } real[] = {{"libplinth_cpu.so", "cpu"},
                {"libplinth_onednn.so", "onednn"},
                {"libplinth_example_acc.so", "example_acc"}};
    for (size_t k = 0; k < sizeof real / sizeof real[0]; k++) {
        size_t i = lt_expect(rt, real[k].file, PL_MODULE_LOADED, NULL);
        pl_module_info info;
        th_module_info(rt, i, &info);
        TH_CHECK(strcmp(info.name, real[k].name) == 0, "%s is named %s",
                 real[k].file, info.name);
        TH_CHECK(info.abi_major == 1, "%s: abi_major %u", real[k].file,
                 info.abi_major);
        TH_CHECK(pl_runtime_find_module(rt, real[k].name) == (long)i,
                 "pl_runtime_find_module(%s)", real[k].name);
    }
    if (th_exists(th_path(th_arg(1), "libplinth_cuda.so"))) {
        long i = th_find_by_file(rt, "libplinth_cuda.so");
        TH_CHECK(i >= 0, "no module entry for libplinth_cuda.so");
        pl_module_info info;
        th_module_info(rt, (size_t)i, &info);
        /* No GPU here: sound but no device. On a machine with one, loaded. */
        TH_CHECK(info.status == PL_MODULE_NO_DEVICE ||
                     info.status == PL_MODULE_LOADED,
                 "cuda is %s: %s", pl_module_status_name(info.status),
                 info.reason);
        if (info.status == PL_MODULE_NO_DEVICE) {
            TH_CHECK(info.reason[0] != '\0', "cuda: no-device without reason");
            TH_CHECK_DIAG(rt, "libplinth_cuda.so", info.reason);
        }
        fprintf(stderr, "cuda: %s %s\n", pl_module_status_name(info.status),
                info.reason);
    }
    pl_runtime_destroy(rt);
}

/* ---- loading a module while the program runs ------------------------------ */

/* pl_runtime_load_module: a good module loads and is listed; a crashing
 * one is refused by its probe with the reason, and nothing loaded before
 * changes; a second copy of a loaded name, a directory and a missing file
 * are refused. */
static void case_load_at_runtime(void)
{
    lt_env env = lt_setup("probe_timeout_ms = 3000\n");
    lt_add(&env, "fx_good", "first.so");
    const char *extra = th_path(env.dir, "extra");
    th_mkdir(extra, 0755);
    const char *good2 = th_path(extra, "good2.so");
    const char *bad = th_path(extra, "bad.so");
    const char *dup = th_path(extra, "dup.so");
    th_copy_file(lt_fixture("fx_good2"), good2, 0644);
    th_copy_file(lt_fixture("fx_init_segv"), bad, 0644);
    th_copy_file(lt_fixture("fx_good"), dup, 0644);
    pl_runtime *rt = lt_create(&env);
    lt_expect(rt, "first.so", PL_MODULE_LOADED, NULL);
    size_t before = pl_runtime_module_count(rt);
    size_t idx = 99;
    TH_CHECK_OK(pl_runtime_load_module(rt, good2, &idx));
    TH_CHECK(idx == before && pl_runtime_find_module(rt, "fx_good2") == (long)idx,
             "the new module is at %zu, expected %zu", idx, before);
    pl_status *st = pl_runtime_load_module(rt, bad, &idx);
    TH_CHECK(st != NULL, "a module that crashes in init was loaded");
    TH_CHECK_CONTAINS(pl_status_message(st), "bad.so");
    TH_CHECK_CONTAINS(pl_status_message(st), "crashed in init (SIGSEGV)");
    pl_status_free(st);
    st = pl_runtime_load_module(rt, dup, NULL);
    TH_CHECK_CONTAINS(pl_status_message(st), "duplicate: module 'fx_good' already loaded");
    pl_status_free(st);
    st = pl_runtime_load_module(rt, extra, NULL);
    TH_CHECK_CONTAINS(pl_status_message(st), "not a shared library name (*.so)");
    pl_status_free(st);
    th_mkdir(th_path(extra, "dir.so"), 0755);
    st = pl_runtime_load_module(rt, th_path(extra, "dir.so"), NULL);
    TH_CHECK_CONTAINS(pl_status_message(st), "a directory, not a module file");
    pl_status_free(st);
    st = pl_runtime_load_module(rt, th_path(extra, "missing.so"), NULL);
    TH_CHECK(st != NULL, "a missing file loaded");
    TH_CHECK_CONTAINS(pl_status_message(st), "missing.so");
    pl_status_free(st);
    lt_expect(rt, "first.so", PL_MODULE_LOADED, NULL);
    lt_expect(rt, "good2.so", PL_MODULE_LOADED, NULL);
    pl_runtime_destroy(rt);
}

/* In secure mode a relative path is refused before anything is read. */
static void case_load_at_runtime_secure(void)
{
    lt_env env = lt_setup("");
    pl_runtime_options o = th_options(env.ini);
    o.secure_mode = true;
    pl_runtime *rt = th_runtime_create(&o);
    pl_status *st = pl_runtime_load_module(rt, "modules/x.so", NULL);
    TH_CHECK_CONTAINS(pl_status_message(st), "a relative path, and the process runs in secure mode");
    pl_status_free(st);
    pl_runtime_destroy(rt);
}

/* ---- vendor functions (ABI 1.4) ----------------------------------------- */

static pl_value lt_i(int32_t v) { return (pl_value){.type = 'i', .as.i = v}; }

/* The good entries are listed with their signatures; each bad one is
 * dropped with a diagnostic naming it and why; the module still loads. */
static void case_extensions_listed(void)
{
    lt_env env = lt_setup("");
    lt_add(&env, "fx_extensions", "ext.so");
    pl_runtime *rt = lt_create(&env);
    size_t i = lt_expect(rt, "ext.so", PL_MODULE_LOADED, NULL);
    static const char *const want[][2] = {{"add", "i(ii)"},   {"mix", "d(lfdsp)"},
                                          {"poke", "v()"},    {"pokes", "i()"},
                                          {"twice", "l(l)"},  {"half", "f(f)"}};
    TH_CHECK(pl_runtime_extension_count(rt, i) == 6, "%zu functions kept, expected 6",
             pl_runtime_extension_count(rt, i));
    for (size_t k = 0; k < 6; k++) {
        const char *name, *sig;
        pl_runtime_extension(rt, i, k, &name, &sig);
        TH_CHECK(strcmp(name, want[k][0]) == 0 && strcmp(sig, want[k][1]) == 0,
                 "function %zu is %s %s, expected %s %s", k, name, sig, want[k][0],
                 want[k][1]);
    }
    static const char *const dropped[] = {
        "extension 6 ('?', \"i()\") dropped: the name must be 1 to 64 of [a-z0-9_]",
        "extension 7 ('bad_sig', \"q(i)\") dropped: return type 'q' is not one of",
        "extension 8 ('no_fn', \"v()\") dropped: no function",
        "extension 9 ('add', \"i(i)\") dropped: a second function of that name",
        "extension 10 ('too_many', \"v(iiiiiiiiiiiiiiiii)\") dropped: 17 parameters; at most 16",
    };
    for (size_t d = 0; d < sizeof dropped / sizeof dropped[0]; d++) {
        bool found = false;
        for (size_t k = 0; k < pl_runtime_diagnostic_count(rt) && !found; k++)
            found = strstr(pl_runtime_diagnostic(rt, k), dropped[d]) != NULL &&
                    strstr(pl_runtime_diagnostic(rt, k), "module fx_extensions") != NULL;
        TH_CHECK(found, "no diagnostic says: %s", dropped[d]);
    }
    pl_runtime_destroy(rt);
}

/* Calls of every type reach the function with the right values and bring
 * its result back. */
static void case_extensions_called(void)
{
    lt_env env = lt_setup("");
    lt_add(&env, "fx_extensions", "ext.so");
    pl_runtime *rt = lt_create(&env);
    lt_expect(rt, "ext.so", PL_MODULE_LOADED, NULL);
    pl_value args[5] = {lt_i(40), lt_i(2)};
    pl_value r;
    TH_CHECK_OK(pl_runtime_call(rt, "fx_extensions", "add", args, 2, &r));
    TH_CHECK(r.type == 'i' && r.as.i == 42, "add(40, 2) gave %c %d", r.type, (int)r.as.i);
    args[0] = (pl_value){.type = 'i', .as.i = -7};
    args[1] = (pl_value){.type = 'i', .as.i = INT32_MIN + 7};
    TH_CHECK_OK(pl_runtime_call(rt, "fx_extensions", "add", args, 2, &r));
    TH_CHECK(r.as.i == INT32_MIN, "add of negatives gave %d", (int)r.as.i);
    double written = 0;
    args[0] = (pl_value){.type = 'l', .as.l = 5000000000LL};
    args[1] = (pl_value){.type = 'f', .as.f = 0.5f};
    args[2] = (pl_value){.type = 'd', .as.d = 0.25};
    args[3] = (pl_value){.type = 's', .as.s = "abcd"};
    args[4] = (pl_value){.type = 'p', .as.p = &written};
    TH_CHECK_OK(pl_runtime_call(rt, "fx_extensions", "mix", args, 5, &r));
    TH_CHECK(r.type == 'd' && r.as.d == 5000000004.75 && written == 5000000004.75,
             "mix gave %c %.17g, wrote %.17g", r.type, r.as.d, written);
    for (int k = 0; k < 3; k++)
        TH_CHECK_OK(pl_runtime_call(rt, "fx_extensions", "poke", NULL, 0, &r));
    TH_CHECK(r.type == 'v', "a v() function gave type %c", r.type);
    TH_CHECK_OK(pl_runtime_call(rt, "fx_extensions", "pokes", NULL, 0, &r));
    TH_CHECK(r.as.i == 3, "pokes = %d after three pokes", (int)r.as.i);
    args[0] = (pl_value){.type = 'l', .as.l = -(1LL << 40)};
    TH_CHECK_OK(pl_runtime_call(rt, "fx_extensions", "twice", args, 1, &r));
    TH_CHECK(r.type == 'l' && r.as.l == -(1LL << 41), "twice gave %lld", (long long)r.as.l);
    args[0] = (pl_value){.type = 'f', .as.f = 3.0f};
    TH_CHECK_OK(pl_runtime_call(rt, "fx_extensions", "half", args, 1, NULL));
    TH_CHECK_OK(pl_runtime_call(rt, "fx_extensions", "half", args, 1, &r));
    TH_CHECK(r.type == 'f' && r.as.f == 1.5f, "half(3) gave %g", (double)r.as.f);
    pl_runtime_destroy(rt);
}

/* Wrong calls fail with a message naming the call and the signature, and
 * call nothing. */
static void case_extensions_refused(void)
{
    lt_env env = lt_setup("");
    lt_add(&env, "fx_extensions", "ext.so");
    lt_add(&env, "fx_init_fails", "down.so");
    pl_runtime *rt = lt_create(&env);
    pl_value args[3] = {lt_i(1), lt_i(2), lt_i(3)};
    pl_value r;
    static const struct {
        const char *module, *name;
        size_t n;
        const char *message;
    } bad[] = {
        {"fx_extensions", "add", 1, "call fx_extensions.add: 1 argument given, the signature \"i(ii)\" takes 2"},
        {"fx_extensions", "add", 3, "3 arguments given"},
        {"fx_extensions", "twice", 1, "argument 1 is int32 (i); the signature \"l(l)\" wants int64 (l) there"},
        {"fx_extensions", "nope", 0, "the module has no function 'nope' (it exports: add, mix, poke, pokes, twice, half)"},
        {"fx_extensions", "bad_sig", 1, "no function 'bad_sig'"},
        {"fx_init_fails", "add", 2, "call fx_init_fails.add: module 'fx_init_fails' is not loaded"},
        {"nosuch", "add", 2, "module 'nosuch' is not loaded"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        pl_status *st = pl_runtime_call(rt, bad[k].module, bad[k].name, args, bad[k].n, &r);
        TH_CHECK(st != NULL, "%s.%s with %zu arguments was called", bad[k].module,
                 bad[k].name, bad[k].n);
        TH_CHECK_CONTAINS(pl_status_message(st), bad[k].message);
        pl_status_free(st);
    }
    pl_value s = {.type = 's', .as.s = NULL};
    pl_value mix[5] = {{.type = 'l'}, {.type = 'f'}, {.type = 'd'}, s, {.type = 'p'}};
    pl_status *st = pl_runtime_call(rt, "fx_extensions", "mix", mix, 5, &r);
    TH_CHECK_CONTAINS(pl_status_message(st), "argument 4 is a NULL string");
    pl_status_free(st);
    TH_CHECK_OK(pl_runtime_call(rt, "fx_extensions", "pokes", NULL, 0, &r));
    TH_CHECK(r.as.i == 0, "a refused call reached the module (pokes = %d)", (int)r.as.i);
    pl_runtime_destroy(rt);
}

/* The template vendor function: example_acc's set_power_mode (0, or -1
 * for an unknown mode or device), seen in its configure outputs and in
 * temperature_c. */
static void case_example_acc_power_mode(void)
{
    lt_env env = lt_setup_stage("[example_acc]\ndevices = 2\n");
    pl_runtime *rt = lt_create(&env);
    size_t i = lt_expect(rt, "libplinth_example_acc.so", PL_MODULE_LOADED, NULL);
    TH_CHECK(strcmp(th_module_output(rt, i, "power_mode.1"), "balanced") == 0,
             "power_mode.1 starts as %s", th_module_output(rt, i, "power_mode.1"));
    pl_value r;
    pl_value args[2] = {lt_i(1), {.type = 's', .as.s = "low_power"}};
    TH_CHECK_OK(pl_runtime_call(rt, "example_acc", "set_power_mode", args, 2, &r));
    TH_CHECK(r.type == 'i' && r.as.i == 0, "set_power_mode(1, low_power) = %d", (int)r.as.i);
    args[1].as.s = "turbo";
    TH_CHECK_OK(pl_runtime_call(rt, "example_acc", "set_power_mode", args, 2, &r));
    TH_CHECK(r.as.i == -1, "an unknown mode gave %d", (int)r.as.i);
    args[0] = lt_i(2);
    args[1].as.s = "performance";
    TH_CHECK_OK(pl_runtime_call(rt, "example_acc", "set_power_mode", args, 2, &r));
    TH_CHECK(r.as.i == -1, "device 2 of 2 gave %d", (int)r.as.i);
    TH_CHECK_OK(pl_runtime_configure_module(rt, "example_acc", NULL, NULL, 0));
    TH_CHECK(strcmp(th_module_output(rt, i, "power_mode.1"), "low_power") == 0,
             "power_mode.1 is %s after set_power_mode", th_module_output(rt, i, "power_mode.1"));
    TH_CHECK(strcmp(th_module_output(rt, i, "power_mode.0"), "balanced") == 0,
             "power_mode.0 changed");
    args[0] = lt_i(1);
    TH_CHECK_OK(pl_runtime_call(rt, "example_acc", "temperature_c", args, 1, &r));
    TH_CHECK(r.type == 'd' && r.as.d == 36.0, "temperature_c(1) in low_power = %g", r.as.d);
    pl_runtime_destroy(rt);
}

static void case_real_example_acc_devices(void)
{
    lt_env env = lt_setup_stage("[example_acc]\ndevices = 3\n");
    pl_runtime *rt = lt_create(&env);
    size_t i = lt_expect(rt, "libplinth_example_acc.so", PL_MODULE_LOADED,
                         NULL);
    pl_module_info info;
    th_module_info(rt, i, &info);
    TH_CHECK(info.device_count == 3, "example_acc has %d devices, expected 3",
             info.device_count);
    for (int d = 0; d < 3; d++)
        TH_CHECK(pl_runtime_device_name(rt, i, d)[0] != '\0',
                 "device %d has no name", d);
    TH_CHECK(pl_runtime_device_name(rt, i, 3)[0] == '\0',
             "device 3 of 3 has a name");
    pl_runtime_destroy(rt);
}

static void case_real_onednn_outputs(void)
{
    lt_env env = lt_setup_stage("");
    pl_runtime *rt = lt_create(&env);
    size_t i = lt_expect(rt, "libplinth_onednn.so", PL_MODULE_LOADED, NULL);
    static const char *const keys[] = {"dnnl_version", "cpu_isa"};
    for (size_t k = 0; k < 2; k++) {
        const char *v = th_module_output(rt, i, keys[k]);
        TH_CHECK(v != NULL && v[0] != '\0', "onednn output %s is %s", keys[k],
                 v ? "empty" : "absent");
    }
    pl_runtime_destroy(rt);
}

static const th_case cases[] = {
    {"missing_file", case_missing_file},
    {"empty_file", case_empty_file},
    {"not_elf", case_not_elf},
    {"other_arch", case_other_arch},
    {"unresolved_symbol", case_unresolved_symbol},
    {"missing_dependency", case_missing_dependency},
    {"no_entry", case_no_entry},
    {"no_note", case_no_note},
    {"garbled_note", case_garbled_note},
    {"garbled_note_name", case_garbled_note_name},
    {"abi_newer", case_abi_newer},
    {"abi_older", case_abi_older},
    {"entry_refuses", case_entry_refuses},
    {"table_too_small", case_table_too_small},
    {"minor_newer", case_minor_newer},
    {"minor_older", case_minor_older},
    {"needs_bodies", case_needs_bodies},
    {"init_fails", case_init_fails},
    {"no_device", case_no_device},
    {"name_mismatch", case_name_mismatch},
    {"bad_name", case_bad_name},
    {"missing_capability_fn", case_missing_capability_fn},
    {"duplicate_name", case_duplicate_name},
    {"world_writable_file", case_world_writable_file},
    {"group_writable_file", case_group_writable_file},
    {"world_writable_dir", case_world_writable_dir},
    {"link_outside", case_link_outside},
    {"link_inside", case_link_inside},
    {"secure_mode_env", case_secure_mode_env},
    {"all_fail", case_all_fail},
    {"disabled", case_disabled},
    {"diagnostic_format", case_diagnostic_format},
    {"configure_roundtrip", case_configure_roundtrip},
    {"teardown_keeps_loaded", case_teardown_keeps_loaded},
    {"owner_file", case_owner_file},
    {"owner_dir", case_owner_dir},
    {"sha256_pin", case_sha256_pin},
    {"secure_mode_cwd_ini", case_secure_mode_cwd_ini},
    {"secure_mode_relative_path", case_secure_mode_relative_path},
    {"cpu_bit_unknown", case_cpu_bit_unknown},
    {"cpu_built_avx512", case_cpu_built_avx512},
    {"probe_init_abort", case_probe_init_abort},
    {"probe_init_segv", case_probe_init_segv},
    {"probe_init_hang", case_probe_init_hang},
    {"probe_init_exit", case_probe_init_exit},
    {"probe_ctor_abort", case_probe_ctor_abort},
    {"probe_configure_crash", case_probe_configure_crash},
    {"probe_concurrent", case_probe_concurrent},
    {"probe_remembered", case_probe_remembered},
    {"probe_cache_file", case_probe_cache_file},
    {"real_modules", case_real_modules},
    {"load_at_runtime", case_load_at_runtime},
    {"load_at_runtime_secure", case_load_at_runtime_secure},
    {"extensions_listed", case_extensions_listed},
    {"extensions_called", case_extensions_called},
    {"extensions_refused", case_extensions_refused},
    {"example_acc_power_mode", case_example_acc_power_mode},
    {"real_example_acc_devices", case_real_example_acc_devices},
    {"real_onednn_outputs", case_real_onednn_outputs},
};

int main(int argc, char **argv)
{
    return th_main(argc, argv, cases, sizeof cases / sizeof cases[0], 2,
                   "FIXTURE_DIR STAGE_DIR");
}
