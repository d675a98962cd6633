/* rdlock.c - placeholder until the tool lands: prints usage, exits 64. */
#include <stdio.h>
int main(void)
{
    fprintf(stderr, "usage: rdlock [-c FILE] [-s] [-n | -w SECONDS] [-E CODE] NAME -- COMMAND [ARG...]\n");
    return 64;
}
