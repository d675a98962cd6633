/* error.c - rdlock_strerror(), rdlock_errname() and rdlock_version().  One
 * public table, RDLOCK_ERRNO_MAP in rdlock.h, lists every code the library
 * returns with its text (libuv's UV_ERRNO_MAP habit), so a new code cannot
 * be returned without a name and a message. */
#include "rdl_build.h"

#include <errno.h>

#include "rdlock.h"

const char *rdlock_strerror(int code)
{
    switch (code) {
    case 0:
        return "success";
#define RDL_STRERROR_CASE(c, text) \
    case c:                        \
        return text;
        RDLOCK_ERRNO_MAP(RDL_STRERROR_CASE)
#undef RDL_STRERROR_CASE
    default:
        return "unknown rdlock error code";
    }
}

const char *rdlock_errname(int code)
{
    switch (code) {
    case 0:
        return "0";
#define RDL_ERRNAME_CASE(c, text) \
    case c:                       \
        return #c;
        RDLOCK_ERRNO_MAP(RDL_ERRNAME_CASE)
#undef RDL_ERRNAME_CASE
    default:
        return "unknown";
    }
}

#define RDL_STR2(x) #x
#define RDL_STR(x) RDL_STR2(x)

const char *rdlock_version(void)
{
    return RDL_STR(RDLOCK_VERSION_MAJOR) "." RDL_STR(RDLOCK_VERSION_MINOR) "." RDL_STR(
        RDLOCK_VERSION_PATCH);
}
