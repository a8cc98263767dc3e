/* datafile.c — the one place that decides whether a file a model names may
 * be read: relative, no '..', really inside the model's folder after links
 * are resolved, a regular file, opened without following a link that
 * appeared in between. Then mapped read-only. */
#include "datafile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "status.h"

pl_code pl_datafile_code(int err)
{
    switch (err) {
    case ENOENT:
    case ENOTDIR:
        return PL_CODE_NOT_FOUND;
    case EACCES:
    case EPERM:
    case ELOOP:
        return PL_CODE_PERMISSION_DENIED;
    case ENOMEM:
        return PL_CODE_OUT_OF_MEMORY;
    default:
        return PL_CODE_IO_ERROR;
    }
}

pl_status *pl_datafile_map(const char *base_dir, const char *name,
                           const char *what, void **out_addr, size_t *out_size,
                           struct stat *out_st)
{
    *out_addr = NULL;
    *out_size = 0;
    if (name == NULL || name[0] == '\0')
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "%s: empty file name", what);
    if (name[0] == '/')
        return pl_status_create(PL_CODE_PERMISSION_DENIED,
                                "%s '%.200s' is an absolute path; it must be relative "
                                "to the model's folder",
                                what, name);
    for (const char *c = name; *c;) {
        size_t len = strcspn(c, "/");
        if (len == 2 && c[0] == '.' && c[1] == '.')
            return pl_status_create(PL_CODE_PERMISSION_DENIED,
                                    "%s '%.200s' has a '..' component; it must lie "
                                    "inside the model's folder",
                                    what, name);
        c += len;
        if (*c == '/')
            c++;
    }
    char joined[PATH_MAX], real_dir[PATH_MAX], real_file[PATH_MAX];
    if (snprintf(joined, sizeof joined, "%s/%s", base_dir, name) >= (int)sizeof joined)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "%s '%.200s': path too long", what,
                                name);
    if (realpath(base_dir, real_dir) == NULL)
        return pl_status_create(pl_datafile_code(errno), "%s '%.200s': model folder %s: %s",
                                what, name, base_dir, strerror(errno));
    if (realpath(joined, real_file) == NULL)
        return pl_status_create(pl_datafile_code(errno), "%s '%.200s': %s", what, name,
                                strerror(errno));
    size_t dl = strlen(real_dir);
    bool inside = strcmp(real_dir, "/") == 0
                      ? real_file[0] == '/' && real_file[1] != '\0'
                      : strncmp(real_file, real_dir, dl) == 0 && real_file[dl] == '/';
    if (!inside)
        return pl_status_create(PL_CODE_PERMISSION_DENIED,
                                "%s '%.200s' resolves to %.300s, outside the model's "
                                "folder %.300s",
                                what, name, real_file, real_dir);
    int fd = open(real_file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat sb;
    pl_status *st = NULL;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        st = pl_status_create(pl_datafile_code(errno), "%s '%.200s': %s", what, name,
                              strerror(errno));
    } else if (!S_ISREG(sb.st_mode)) {
        st = pl_status_create(PL_CODE_INVALID_ARGUMENT, "%s '%.200s' is not a regular file",
                              what, name);
    } else if ((uint64_t)sb.st_size > SIZE_MAX) {
        st = pl_status_create(PL_CODE_INVALID_ARGUMENT, "%s '%.200s' is too large to map",
                              what, name);
    } else if (sb.st_size > 0) {
        void *addr = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (addr == MAP_FAILED)
            st = pl_status_create(pl_datafile_code(errno), "%s '%.200s': cannot map: %s",
                                  what, name, strerror(errno));
        else {
            *out_addr = addr;
            *out_size = (size_t)sb.st_size;
        }
    }
    if (st == NULL && out_st != NULL)
        *out_st = sb;
    if (fd >= 0)
        close(fd);
    return st;
}
