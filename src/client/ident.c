/* ident.c - who is asking: this thread's number, a client's random id and
 * the owner id made of both (ident.h). */
#include "rdl_build.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "base/fmt.h"
#include "base/log.h"
#include "client/ident.h"

static unsigned thread_counter;
static __thread unsigned thread_no;

unsigned rdl_thread_no(void)
{
    if (thread_no == 0)
        thread_no = __atomic_add_fetch(&thread_counter, 1, __ATOMIC_RELAXED);
    return thread_no;
}

size_t rdl_owner(const rdlock_client_t *c, unsigned thread, char *buf)
{
    size_t n;
    memcpy(buf, c->id, RDL_ID_HEX);
    buf[RDL_ID_HEX] = ':';
    n = RDL_ID_HEX + 1 + rdl_fmt_u64(buf + RDL_ID_HEX + 1, thread);
    buf[n] = '\0';
    return n;
}

int rdl_ident_new(char *hex)
{
    unsigned char b[16];
    size_t got = 0;
    int i;
    while (got < sizeof b) {
        ssize_t n = getrandom(b + got, sizeof b - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rdl_log(RDLOCK_LOG_ERROR, "getrandom failed: %s", strerror(errno));
            return EIO;
        }
        got += (size_t)n;
    }
    for (i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", b[i]);
    return 0;
}
