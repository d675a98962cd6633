/* fmt.c - see fmt.h. */
#include "rdl_build.h"

#include <string.h>

#include "base/fmt.h"

size_t rdl_fmt_u64(char *buf, unsigned long long v)
{
    /* Two digits per division: every request formats a few dozen numbers
     * (RESP lengths, the deadline stamp), and the digit-by-digit loop was
     * the client's largest single cost in a callgrind profile of
     * lock+unlock pairs. */
    static const char pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                   "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                   "8081828384858687888990919293949596979899";
    char tmp[20];
    size_t n = sizeof tmp, len;
    if (v < 10) { /* most are RESP lengths of one or two digits */
        buf[0] = (char)('0' + v);
        return 1;
    }
    if (v < 100) {
        buf[0] = pairs[v * 2];
        buf[1] = pairs[v * 2 + 1];
        return 2;
    }
    while (v >= 100) {
        unsigned d = (unsigned)(v % 100) * 2;
        v /= 100;
        tmp[--n] = pairs[d + 1];
        tmp[--n] = pairs[d];
    }
    if (v >= 10) {
        tmp[--n] = pairs[v * 2 + 1];
        tmp[--n] = pairs[v * 2];
    } else {
        tmp[--n] = (char)('0' + v);
    }
    len = sizeof tmp - n;
    memcpy(buf, tmp + n, len);
    return len;
}
