/* error.c - rdlock_strerror() and rdlock_version().  One table lists every
 * code the library returns with its text (libuv's UV_ERRNO_MAP habit), so a
 * new code cannot be returned without a message. */
#include "rdl_build.h"

#include <errno.h>

#include "rdlock.h"

#define RDL_ERRNO_MAP(X)                                                          \
    X(0, "success")                                                               \
    X(EINVAL, "invalid argument, name, attribute, deadline or configuration")    \
    X(EBUSY, "lock is held (try) or still in use (destroy, client close)")        \
    X(ETIMEDOUT, "deadline passed while the lock stayed held by others")          \
    X(EDEADLK, "the caller already holds this lock")                              \
    X(EPERM, "the caller does not hold this lock")                                \
    X(EAGAIN, "recursion or read re-entry count would overflow")                  \
    X(ENOLCK, "the lease was lost before unlock: the critical section was not protected to its end") \
    X(EIO, "Redis unreachable, timed out or answered with an error")              \
    X(EACCES, "Redis refused authentication, or a file is unreadable")           \
    X(ENOENT, "configuration file does not exist")                                \
    X(ENOMEM, "out of memory")                                                    \
    X(EOWNERDEAD, "previous owner died holding the lock; state may be inconsistent") \
    X(ENOTRECOVERABLE, "lock is not recoverable; clear it with rdlock --reset")

const char *rdlock_strerror(int code)
{
    switch (code) {
#define RDL_STRERROR_CASE(c, text) \
    case c:                        \
        return text;
        RDL_ERRNO_MAP(RDL_STRERROR_CASE)
#undef RDL_STRERROR_CASE
    default:
        return "unknown rdlock error code";
    }
}

#define RDL_STR2(x) #x
#define RDL_STR(x) RDL_STR2(x)

const char *rdlock_version(void)
{
    return RDL_STR(RDLOCK_VERSION_MAJOR) "." RDL_STR(RDLOCK_VERSION_MINOR) "." RDL_STR(
        RDLOCK_VERSION_PATCH);
}
