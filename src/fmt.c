/* fmt.c - see fmt.h. */
#include "rdl_build.h"

#include "fmt.h"

size_t rdl_fmt_u64(char *buf, unsigned long long v)
{
    char tmp[20];
    size_t n = 0, i;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    return n;
}
