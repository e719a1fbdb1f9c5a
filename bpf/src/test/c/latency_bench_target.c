/* Benchmark target: calls tiny() N times in a tight loop and prints the mean nanoseconds per call. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline, noclone)) int tiny(int x) { return 3 * x + 1; }

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    volatile int sink = 0;
    long long t0 = now_ns();
    for (long i = 0; i < n; i++) sink += tiny((int)i);
    printf("ns_per_call %.1f\n", (double)(now_ns() - t0) / n);
    return 0;
}
