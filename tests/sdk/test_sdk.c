/* test_sdk.c — what sdk/ hands every module, tested on its own:
 * PL_MODULE_DEFINE_ENTRY as each staged module compiled it (entry_<module>:
 * the module's exported entry point called directly, with good and bad
 * arguments, hosts of another major and a host table shorter than ABI
 * 1.0's).
 *
 * Usage: test_sdk <case> <stage dir>. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <plinth/module.h>

#include "../harness.h"

/* ---- the entry point ------------------------------------------------------- */

/* Calls the entry point of the staged module NAME as the core would, with a
 * host table that the module only stores. */
static void check_entry(const char *name)
{
    char file[512];
    snprintf(file, sizeof file, "%s/libplinth_%s.so", th_arg(0), name);
    void *lib = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        th_skip("%s: %s", file, dlerror());
    pl_module_entry_fn entry;
    *(void **)&entry = dlsym(lib, PL_MODULE_ENTRY_SYMBOL);
    TH_CHECK(entry != NULL, "%s has no %s", file, PL_MODULE_ENTRY_SYMBOL);

    static pl_host_api host;
    host.header = (pl_abi_header)PL_ABI_HEADER_INIT(pl_host_api);
    const pl_module_api *api = (const pl_module_api *)&host; /* must be cleared */
    uint32_t major = PL_ABI_MAJOR;

    TH_CHECK(entry(NULL, &major, &api) == PL_CODE_INVALID_ARGUMENT, "NULL host accepted");
    TH_CHECK(api == NULL, "*out_api not cleared on a refusal");
    TH_CHECK(entry(&host, NULL, &api) == PL_CODE_INVALID_ARGUMENT, "NULL major accepted");
    TH_CHECK(entry(&host, &major, NULL) == PL_CODE_INVALID_ARGUMENT, "NULL out_api accepted");

    /* Another major, from the caller or in the host table: the module
     * answers its own so that the core can name both. */
    major = PL_ABI_MAJOR + 1;
    api = (const pl_module_api *)&host;
    TH_CHECK(entry(&host, &major, &api) == PL_CODE_INCOMPATIBLE, "major %u accepted",
             PL_ABI_MAJOR + 1);
    TH_CHECK(major == PL_ABI_MAJOR && api == NULL, "answered major %u", major);
    host.header.abi_major = PL_ABI_MAJOR + 1;
    TH_CHECK(entry(&host, &major, &api) == PL_CODE_INCOMPATIBLE, "host of major %u accepted",
             PL_ABI_MAJOR + 1);
    TH_CHECK(major == PL_ABI_MAJOR, "answered major %u", major);
    host.header.abi_major = PL_ABI_MAJOR;

    /* A host table that ends before ABI 1.0's does. */
    host.header.struct_size = (uint32_t)(PL_HOST_API_SIZE_1_0 - sizeof(void (*)(void)));
    TH_CHECK(entry(&host, &major, &api) == PL_CODE_INCOMPATIBLE,
             "host table of %u bytes accepted", host.header.struct_size);
    host.header.struct_size = (uint32_t)sizeof host;

    TH_CHECK(entry(&host, &major, &api) == PL_CODE_OK, "a good call refused");
    TH_CHECK(major == PL_ABI_MAJOR, "major changed to %u", major);
    TH_CHECK(api != NULL && api->name != NULL && strcmp(api->name, name) == 0,
             "table named '%s'", api != NULL && api->name != NULL ? api->name : "(null)");
    TH_CHECK(api->header.abi_major == PL_ABI_MAJOR &&
                 api->header.struct_size >= PL_MODULE_API_SIZE_1_0,
             "table of %u bytes, major %u", api->header.struct_size, api->header.abi_major);
    dlclose(lib);
}

static void case_entry_cpu(void) { check_entry("cpu"); }
static void case_entry_onnx(void) { check_entry("onnx"); }
static void case_entry_example_acc(void) { check_entry("example_acc"); }
static void case_entry_onednn(void) { check_entry("onednn"); }
static void case_entry_cuda(void) { check_entry("cuda"); }

int main(int argc, char **argv)
{
    static const th_case cases[] = {
        {"entry_cpu", case_entry_cpu},
        {"entry_onnx", case_entry_onnx},
        {"entry_example_acc", case_entry_example_acc},
        {"entry_onednn", case_entry_onednn},
        {"entry_cuda", case_entry_cuda},
    };
    return th_main(argc, argv, cases, sizeof cases / sizeof cases[0], 1, "<stage dir>");
}
