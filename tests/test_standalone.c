/* test_standalone.c — the vendor's promise: a module builds from sdk/ alone.
 * Copies sdk/ and modules/example_acc/ (and nothing of core/) into a fresh
 * directory, configures and builds the module there with CMake, checks that
 * the library neither needs libplinth nor exports anything but the entry
 * point, and loads it into a runtime.
 *
 * usage: test_standalone CASE SOURCE_DIR CMAKE_COMMAND C_COMPILER */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* Runs ARGV (NULL-terminated) and fails the case unless it exits 0. */
static void st_run(char *const argv[])
{
    fprintf(stderr, "+");
    for (size_t i = 0; argv[i] != NULL; i++)
        fprintf(stderr, " %s", argv[i]);
    fputc('\n', stderr);
    fflush(stderr);
    pid_t pid = fork();
    TH_CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        /* The build's output goes to stderr, beside the case's own. */
        dup2(STDERR_FILENO, STDOUT_FILENO);
        execvp(argv[0], argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        TH_CHECK(errno == EINTR, "waitpid: %s", strerror(errno));
    TH_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
             "%s failed (status 0x%x)", argv[0], status);
}

/* Reads the whole of PATH; *out_size receives its length. */
static unsigned char *st_read_file(const char *path, size_t *out_size)
{
    FILE *f = fopen(path, "rb");
    TH_CHECK(f != NULL, "open %s: %s", path, strerror(errno));
    TH_CHECK(fseek(f, 0, SEEK_END) == 0, "seek %s", path);
    long n = ftell(f);
    TH_CHECK(n > 0, "%s is empty", path);
    rewind(f);
    unsigned char *bytes = malloc((size_t)n);
    TH_CHECK(bytes != NULL, "out of memory");
    TH_CHECK(fread(bytes, 1, (size_t)n, f) == (size_t)n, "read %s", path);
    fclose(f);
    *out_size = (size_t)n;
    return bytes;
}

/* The NUL-terminated string at OFF in string table section STR, or NULL. */
static const char *st_string(const unsigned char *elf, size_t size,
                             const Elf64_Shdr *str, uint64_t off)
{
    if (str->sh_offset > size || str->sh_size > size - str->sh_offset ||
        off >= str->sh_size)
        return NULL;
    const char *s = (const char *)elf + str->sh_offset + off;
    if (memchr(s, '\0', str->sh_size - off) == NULL)
        return NULL;
    return s;
}

/* Checks the dynamic section and symbol table of a 64-bit ELF shared
 * library: no DT_NEEDED on libplinth, and pl_module_entry the only symbol it
 * defines for others. */
static void st_check_elf(const char *path)
{
    size_t size = 0;
    unsigned char *elf = st_read_file(path, &size);
    TH_CHECK(size >= sizeof(Elf64_Ehdr) && memcmp(elf, ELFMAG, SELFMAG) == 0,
             "%s is not an ELF file", path);
    if (elf[EI_CLASS] != ELFCLASS64) {
        free(elf);
        th_skip("only 64-bit ELF is inspected");
    }
    Elf64_Ehdr eh;
    memcpy(&eh, elf, sizeof eh);
    TH_CHECK(eh.e_shentsize == sizeof(Elf64_Shdr) && eh.e_shoff <= size &&
                 (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) <= size - eh.e_shoff,
             "%s: bad section header table", path);
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(elf + eh.e_shoff);
    size_t needed = 0, exported = 0;
    bool has_entry = false, has_dynamic = false;
    for (size_t s = 0; s < eh.e_shnum; s++) {
        if (sh[s].sh_type != SHT_DYNAMIC && sh[s].sh_type != SHT_DYNSYM)
            continue;
        TH_CHECK(sh[s].sh_link < eh.e_shnum && sh[s].sh_offset <= size &&
                     sh[s].sh_size <= size - sh[s].sh_offset,
                 "%s: bad section %zu", path, s);
        const Elf64_Shdr *str = &sh[sh[s].sh_link];
        const unsigned char *base = elf + sh[s].sh_offset;
        if (sh[s].sh_type == SHT_DYNAMIC) {
            has_dynamic = true;
            for (size_t k = 0; k + 1 <= sh[s].sh_size / sizeof(Elf64_Dyn); k++) {
                Elf64_Dyn d;
                memcpy(&d, base + k * sizeof d, sizeof d);
                if (d.d_tag == DT_NULL)
                    break;
                if (d.d_tag != DT_NEEDED)
                    continue;
                const char *name = st_string(elf, size, str, d.d_un.d_val);
                TH_CHECK(name != NULL, "%s: bad DT_NEEDED", path);
                fprintf(stderr, "NEEDED %s\n", name);
                TH_CHECK(strncmp(name, "libplinth.", 10) != 0,
                         "%s needs the core library %s", path, name);
                needed++;
            }
        } else {
            for (size_t k = 1; k < sh[s].sh_size / sizeof(Elf64_Sym); k++) {
                Elf64_Sym sym;
                memcpy(&sym, base + k * sizeof sym, sizeof sym);
                int bind = ELF64_ST_BIND(sym.st_info);
                if (sym.st_shndx == SHN_UNDEF ||
                    (bind != STB_GLOBAL && bind != STB_WEAK) ||
                    ELF64_ST_VISIBILITY(sym.st_other) != STV_DEFAULT)
                    continue;
                const char *name = st_string(elf, size, str, sym.st_name);
                TH_CHECK(name != NULL, "%s: bad symbol name", path);
                if (strcmp(name, "pl_module_entry") == 0) {
                    has_entry = true;
                    continue;
                }
                /* The linker's own markers are not the module's exports. */
                if (strcmp(name, "_init") == 0 || strcmp(name, "_fini") == 0 ||
                    strcmp(name, "_edata") == 0 || strcmp(name, "_end") == 0 ||
                    strcmp(name, "__bss_start") == 0)
                    continue;
                fprintf(stderr, "exported: %s\n", name);
                exported++;
            }
        }
    }
    free(elf);
    TH_CHECK(has_dynamic, "%s has no dynamic section", path);
    TH_CHECK(has_entry, "%s does not export pl_module_entry", path);
    TH_CHECK(exported == 0, "%s exports %zu symbols besides pl_module_entry",
             path, exported);
    fprintf(stderr, "%zu NEEDED entries, none on libplinth\n", needed);
}

static void case_example_acc(void)
{
    /* Building takes a while; the case's watchdog is longer than the
     * harness's default. */
    alarm(280);
    umask(022);
    const char *source = th_arg(0);
    const char *cmake = th_arg(1);
    const char *cc = th_arg(2);
    const char *tmp = th_tempdir();
    const char *modules = th_path(tmp, "modules");
    th_mkdir(modules, 0755);

    char *cp_sdk[] = {"cp", "-R", (char *)th_path(source, "sdk"),
                      (char *)tmp, NULL};
    st_run(cp_sdk);
    char *cp_mod[] = {"cp", "-R",
                      (char *)th_path(source, "modules/example_acc"),
                      (char *)modules, NULL};
    st_run(cp_mod);
    TH_CHECK(!th_exists(th_path(tmp, "core")), "core/ was copied");

    const char *build = th_path(tmp, "build");
    const char *stage = th_path(tmp, "mods");
    char stage_def[4096], cc_def[4096];
    snprintf(stage_def, sizeof stage_def, "-DPLINTH_STAGE_DIR=%s", stage);
    snprintf(cc_def, sizeof cc_def, "-DCMAKE_C_COMPILER=%s", cc);
    char *configure[] = {(char *)cmake, "-S",
                         (char *)th_path(modules, "example_acc"), "-B",
                         (char *)build, stage_def, cc_def,
                         "-DCMAKE_BUILD_TYPE=Release", NULL};
    st_run(configure);
    char *make[] = {(char *)cmake, "--build", (char *)build, NULL};
    st_run(make);

    const char *lib = th_path(stage, "libplinth_example_acc.so");
    TH_CHECK(th_exists(lib), "%s was not staged", lib);
    st_check_elf(lib);

    const char *ini = th_path(tmp, "backend.ini");
    th_write_file(ini, "[runtime]\nmodules = mods\n", 0644);
    pl_runtime_options o = th_options(ini);
    pl_runtime *rt = th_runtime_create(&o);
    long i = th_find_by_file(rt, "libplinth_example_acc.so");
    TH_CHECK(i >= 0, "the standalone module was not found");
    pl_module_info info;
    th_module_info(rt, (size_t)i, &info);
    TH_CHECK(info.status == PL_MODULE_LOADED, "example_acc is %s: %s",
             pl_module_status_name(info.status), info.reason);
    TH_CHECK(strcmp(info.name, "example_acc") == 0, "named %s", info.name);
    pl_runtime_destroy(rt);
}

static const th_case cases[] = {
    {"example_acc", case_example_acc},
};

int main(int argc, char **argv)
{
    return th_main(argc, argv, cases, sizeof cases / sizeof cases[0], 3,
                   "SOURCE_DIR CMAKE_COMMAND C_COMPILER");
}
