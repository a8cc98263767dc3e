/* note.c — the loader's first, cheapest look at a candidate module: the ELF
 * header and the identity note (PL_MODULE_IDENTITY in sdk/), read with
 * libelf before dlopen. A foreign file, a file for another machine or a
 * module for another ABI major is refused here, before any of its code (its
 * constructors included) could run. */
#include "note.h"

#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "status.h"

#if defined(__x86_64__)
#define PL_HOST_MACHINE EM_X86_64
#define PL_HOST_CLASS ELFCLASS64
#elif defined(__aarch64__)
#define PL_HOST_MACHINE EM_AARCH64
#define PL_HOST_CLASS ELFCLASS64
#elif defined(__i386__)
#define PL_HOST_MACHINE EM_386
#define PL_HOST_CLASS ELFCLASS32
#elif defined(__powerpc64__)
#define PL_HOST_MACHINE EM_PPC64
#define PL_HOST_CLASS ELFCLASS64
#elif defined(__riscv) && __riscv_xlen == 64
#define PL_HOST_MACHINE EM_RISCV
#define PL_HOST_CLASS ELFCLASS64
#else
#define PL_HOST_MACHINE EM_NONE
#define PL_HOST_CLASS ELFCLASSNONE
#endif

static pthread_once_t pl_note_elf_once = PTHREAD_ONCE_INIT;
static void pl_note_elf_init(void)
{
    elf_version(EV_CURRENT);
}

static const char *pl_note_machine_name(unsigned machine)
{
    switch (machine) {
    case EM_X86_64: return "x86-64";
    case EM_386: return "i386";
    case EM_AARCH64: return "AArch64";
    case EM_ARM: return "ARM";
    case EM_PPC64: return "PowerPC64";
    case EM_RISCV: return "RISC-V";
    case EM_S390: return "S/390";
    default: return "unknown";
    }
}

/* A fixed-size string field is valid when NUL-terminated inside its array
 * and non-empty. */
static bool pl_note_string_ok(const char *s, size_t cap)
{
    return memchr(s, '\0', cap) != NULL && s[0] != '\0';
}

/* The module name rule (sdk/README.md, rule 5): [a-z0-9_] only, since the
 * name is also a backend.ini section, a placement entry ("name:1"), a
 * cache file's prefix and a C identifier's part in the tools. */
static pl_status *pl_note_name_check(const char *name)
{
    for (const char *c = name; *c != '\0'; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_'))
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "module name '%s' breaks the name rule: only lowercase "
                                    "letters, digits and '_' (sdk/README.md, rule 5)",
                                    name);
    return NULL;
}

static pl_status *pl_note_scan(Elf *elf, pl_identity_desc *out_desc, uint64_t *out_cpu)
{
    size_t shstrndx = 0;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "not a readable ELF file: %s", elf_errmsg(-1));
    bool section_seen = false;
    int found = 0;
    const char *problem = NULL;
    const char *requires_problem = NULL;
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn != NULL;
         scn = elf_nextscn(elf, scn)) {
        GElf_Shdr shdr;
        if (gelf_getshdr(scn, &shdr) == NULL)
            continue;
        const char *name = elf_strptr(elf, shstrndx, shdr.sh_name);
        bool ours = name != NULL && strcmp(name, PL_NOTE_SECTION_NAME) == 0;
        section_seen = section_seen || ours;
        if (shdr.sh_type != SHT_NOTE) {
            if (ours)
                problem = "its section is not of type NOTE";
            continue;
        }
        Elf_Data *data = elf_getdata(scn, NULL);
        if (data == NULL || data->d_buf == NULL)
            continue;
        size_t off = 0;
        GElf_Nhdr nhdr;
        size_t name_off = 0, desc_off = 0;
        size_t next;
        while ((next = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
            off = next;
            const char *owner = (const char *)data->d_buf + name_off;
            if (nhdr.n_namesz != sizeof(PL_NOTE_OWNER) ||
                memcmp(owner, PL_NOTE_OWNER, sizeof(PL_NOTE_OWNER)) != 0)
                continue;
            if (nhdr.n_type == PL_NOTE_TYPE_REQUIRES) {
                /* Any number of them: what they name adds up. */
                if (nhdr.n_descsz != sizeof(pl_requires_desc)) {
                    requires_problem = "CPU requirements note of the wrong size";
                    continue;
                }
                pl_requires_desc req;
                memcpy(&req, (const char *)data->d_buf + desc_off, sizeof req);
                *out_cpu |= (uint64_t)req.cpu_hi << 32 | req.cpu_lo;
                continue;
            }
            if (nhdr.n_type != PL_NOTE_TYPE_IDENTITY) {
                problem = "unknown note type";
                continue;
            }
            if (nhdr.n_descsz != sizeof(pl_identity_desc)) {
                problem = "wrong payload size";
                continue;
            }
            pl_identity_desc desc;
            memcpy(&desc, (const char *)data->d_buf + desc_off, sizeof desc);
            if (!pl_note_string_ok(desc.name, sizeof desc.name)) {
                problem = "name is empty or not terminated";
                continue;
            }
            if (!pl_note_string_ok(desc.version, sizeof desc.version)) {
                problem = "version is empty or not terminated";
                continue;
            }
            if (found++ == 0)
                *out_desc = desc;
        }
        if (ours && off == 0 && problem == NULL)
            problem = "no well-formed note record";
    }
    if (found > 1)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "malformed identity note: %d notes where one "
                                "is allowed", found);
    if (found == 1 && requires_problem != NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "malformed identity note: %s",
                                requires_problem);
    if (found == 1)
        return pl_note_name_check(out_desc->name);
    if (section_seen || problem != NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "malformed identity note: %s",
                                problem ? problem : "unreadable");
    return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                            "no Plinth identity note (a module is built with "
                            "PL_MODULE_IDENTITY from the SDK)");
}

pl_status *pl_note_read(int fd, pl_identity_desc *out_desc, uint64_t *out_cpu)
{
    memset(out_desc, 0, sizeof *out_desc);
    *out_cpu = 0;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return pl_status_create(PL_CODE_IO_ERROR, "cannot stat the file");
    if (st.st_size == 0)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "empty file");
    pthread_once(&pl_note_elf_once, pl_note_elf_init);
    Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
    if (elf == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "not an ELF file: %s", elf_errmsg(-1));
    pl_status *result = NULL;
    GElf_Ehdr ehdr;
    if (elf_kind(elf) != ELF_K_ELF) {
        result = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                  "not an ELF file (no ELF header)");
    } else if (gelf_getehdr(elf, &ehdr) == NULL) {
        result = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                  "not an ELF file: %s", elf_errmsg(-1));
    } else if (PL_HOST_MACHINE != EM_NONE &&
               (ehdr.e_machine != PL_HOST_MACHINE ||
                ehdr.e_ident[EI_CLASS] != PL_HOST_CLASS)) {
        result = pl_status_create(
            PL_CODE_INCOMPATIBLE,
            "built for another architecture (ELF machine %u, %s, %d-bit); "
            "this core runs on %s",
            (unsigned)ehdr.e_machine, pl_note_machine_name(ehdr.e_machine),
            ehdr.e_ident[EI_CLASS] == ELFCLASS64 ? 64 : 32,
            pl_note_machine_name(PL_HOST_MACHINE));
    } else if (ehdr.e_type != ET_DYN) {
        result = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                  "not a shared library (ELF type %u)",
                                  (unsigned)ehdr.e_type);
    } else {
        result = pl_note_scan(elf, out_desc, out_cpu);
    }
    elf_end(elf);
    return result;
}

/* ---- the machine's CPU features ------------------------------------------ */

static const char *const pl_cpu_names[] = {
    "sse4.2",     "popcnt",     "avx",         "avx2",        "fma",      "f16c",
    "bmi1",       "bmi2",       "movbe",       "avx512f",     "avx512cd", "avx512bw",
    "avx512dq",   "avx512vl",   "avx512_vnni", "avx512_bf16", "avx512_fp16",
    "avx_vnni",   "amx_tile",   "amx_bf16",    "amx_int8"};

void pl_cpu_feature_names(uint64_t bits, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int b = 0; b < 64 && at < size; b++) {
        if (!(bits & (1ull << b)))
            continue;
        const char *sep = at ? ", " : "";
        int n = b < (int)(sizeof pl_cpu_names / sizeof pl_cpu_names[0])
                    ? snprintf(buf + at, size - at, "%s%s", sep, pl_cpu_names[b])
                    : snprintf(buf + at, size - at, "%sbit %d", sep, b);
        if (n < 0)
            break;
        at += (size_t)n;
    }
}

#if defined(__x86_64__)
#include <cpuid.h>

static uint64_t pl_xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}

uint64_t pl_cpu_features(void)
{
    unsigned a, b, c, d;
    uint64_t f = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    if (c & (1u << 20)) f |= PL_CPU_SSE4_2;
    if (c & (1u << 23)) f |= PL_CPU_POPCNT;
    if (c & (1u << 22)) f |= PL_CPU_MOVBE;
    /* AVX state must be enabled by the OS (OSXSAVE, XCR0 bits 1-2), and
     * AVX-512 state (XCR0 bits 5-7) for any AVX-512 feature. */
    bool osxsave = (c & (1u << 27)) != 0;
    uint64_t xcr0 = osxsave ? pl_xgetbv0() : 0;
    bool avx_os = (xcr0 & 0x6) == 0x6;
    bool avx512_os = avx_os && (xcr0 & 0xe0) == 0xe0;
    bool amx_os = (xcr0 & (3ull << 17)) == (3ull << 17);
    if (avx_os) {
        if (c & (1u << 28)) f |= PL_CPU_AVX;
        if (c & (1u << 12)) f |= PL_CPU_FMA;
        if (c & (1u << 29)) f |= PL_CPU_F16C;
    }
    if (__get_cpuid_max(0, NULL) < 7)
        return f;
    __cpuid_count(7, 0, a, b, c, d);
    if (b & (1u << 3)) f |= PL_CPU_BMI1;
    if (b & (1u << 8)) f |= PL_CPU_BMI2;
    if (avx_os && (b & (1u << 5))) f |= PL_CPU_AVX2;
    if (avx512_os) {
        if (b & (1u << 16)) f |= PL_CPU_AVX512F;
        if (b & (1u << 17)) f |= PL_CPU_AVX512DQ;
        if (b & (1u << 28)) f |= PL_CPU_AVX512CD;
        if (b & (1u << 30)) f |= PL_CPU_AVX512BW;
        if (b & (1u << 31)) f |= PL_CPU_AVX512VL;
        if (c & (1u << 11)) f |= PL_CPU_AVX512_VNNI;
        if (d & (1u << 23)) f |= PL_CPU_AVX512_FP16;
    }
    if (amx_os) {
        if (d & (1u << 24)) f |= PL_CPU_AMX_TILE;
        if (d & (1u << 22)) f |= PL_CPU_AMX_BF16;
        if (d & (1u << 25)) f |= PL_CPU_AMX_INT8;
    }
    unsigned max_sub = a;
    if (max_sub >= 1) {
        __cpuid_count(7, 1, a, b, c, d);
        if (avx_os && (a & (1u << 4))) f |= PL_CPU_AVX_VNNI;
        if (avx512_os && (a & (1u << 5))) f |= PL_CPU_AVX512_BF16;
    }
    return f;
}
#else
uint64_t pl_cpu_features(void)
{
    return 0;
}
#endif
