/* Fixed CPU-bound work for the overhead benchmark; prints its wall time in seconds.
 * Built with frame pointers so the agent walks real stacks while it runs. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) unsigned long mix(unsigned long x, long n) {
    for (long i = 0; i < n; i++) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9UL + (unsigned long)i;
    return x;
}

__attribute__((noinline)) void work(long rounds) {
    unsigned long x = 1;
    for (long r = 0; r < rounds; r++) x = mix(x, 100000);
    sink = x;
}

int main(int argc, char **argv) {
    long rounds = argc > 1 ? atol(argv[1]) : 20000;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    work(rounds);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.6f\n", (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
    return 0;
}
