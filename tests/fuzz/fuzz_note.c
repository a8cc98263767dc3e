/* fuzz_note.c — the identity-note reader: each input is a candidate module
 * file, whose ELF header and notes the loader reads (with libelf) before it
 * opens anything. Any verdict but a crash or a sanitizer report is fine; a
 * file accepted must have a terminated, non-empty name and version. */
#define _GNU_SOURCE
#include "fuzz_common.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "note.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_write(data, size, ".so");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    unlink(path);
    if (fd < 0)
        abort();
    pl_identity_desc desc;
    uint64_t cpu = 0;
    pl_status *st = pl_note_read(fd, &desc, &cpu);
    close(fd);
    if (st == NULL) {
        if (memchr(desc.name, '\0', sizeof desc.name) == NULL || desc.name[0] == '\0' ||
            memchr(desc.version, '\0', sizeof desc.version) == NULL)
            abort();
        char names[512];
        pl_cpu_feature_names(cpu & ~pl_cpu_features(), names, sizeof names);
    } else if (pl_status_message(st)[0] == '\0') {
        abort();
    }
    pl_status_free(st);
    return 0;
}
