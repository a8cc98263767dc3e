/* fuzz_ini.c — the backend.ini reader: each input is a configuration file,
 * read and validated ([runtime], [placement], [graph], [modules] and module
 * sections, with every value checked) as pl_runtime_create reads it,
 * without making a runtime. Any result but a crash, a leak or a sanitizer
 * report is fine; a failure must carry a message. */
#define _GNU_SOURCE
#include "fuzz_common.h"

#include <stdlib.h>
#include <unistd.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_write(data, size, ".ini");
    pl_config *c = NULL;
    pl_status *st = pl_config_load(pl_allocator_system(), path, &c);
    unlink(path);
    if (st != NULL) {
        if (pl_status_message(st)[0] == '\0')
            abort(); /* an error the user cannot read */
        pl_status_free(st);
        return 0;
    }
    for (size_t i = 0; i < c->n_sections; i++)
        (void)pl_config_pin(c, c->sections[i].name);
    pl_config_destroy(c);
    return 0;
}
