/* wake.c - the poke of a self-pipe (wake.h). */
#include "rdl_build.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/wake.h"

void rdl_wake(int fd)
{
    char b = 1;
    /* A full pipe already means "look again". */
    if (write(fd, &b, 1) < 0 && errno != EAGAIN)
        rdl_log(RDLOCK_LOG_DEBUG, "wake-up write failed: %s", strerror(errno));
}
