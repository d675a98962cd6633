/*
 * fds.c - descriptors: COMMAND must not inherit the library's connections
 * (why: run.c, at the top).  scan_fds(false), at start, notes the
 * descriptors rdlock inherited; scan_fds(true), just before the fork, makes
 * every other one close-on-exec.
 */
#include "rdl_build.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "rdlock.h"
#include "rdlock_tool.h"

static unsigned char *fd_inherited; /* bitmap of descriptors open at start */
static int fd_inherited_max = -1;

void scan_fds(bool mark)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int dfd;
    if (d == NULL)
        return;
    dfd = dirfd(d);
    while ((e = readdir(d)) != NULL) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);
        if (e->d_name[0] == '.' || *end != '\0' || fd < 0 || fd > INT_MAX || fd == dfd)
            continue;
        if (!mark) {
            if (fd > fd_inherited_max) {
                unsigned char *nb = realloc(fd_inherited, (size_t)fd / 8 + 1);
                if (nb == NULL)
                    continue;
                memset(nb + (fd_inherited_max + 8) / 8, 0, (size_t)fd / 8 + 1 - (size_t)(fd_inherited_max + 8) / 8);
                fd_inherited = nb;
                fd_inherited_max = (int)fd;
            }
            fd_inherited[fd / 8] |= (unsigned char)(1u << (fd % 8));
        } else if (fd > fd_inherited_max || !(fd_inherited[fd / 8] & (1u << (fd % 8)))) {
            int fl = fcntl((int)fd, F_GETFD);
            if (fl >= 0 && !(fl & FD_CLOEXEC))
                fcntl((int)fd, F_SETFD, fl | FD_CLOEXEC);
        }
    }
    closedir(d);
}

/* At exit. */
void fds_free(void)
{
    free(fd_inherited);
}
