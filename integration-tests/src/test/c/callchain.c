/* Ground truth for stack tests: main -> outer -> middle -> hot_a / hot_b with a 70/30 CPU split.
 * Runs until killed, or for argv[1] seconds. */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void hot_a(void) {
    unsigned long x = sink;
    for (int i = 0; i < 700000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}

__attribute__((noinline)) void hot_b(void) {
    unsigned long x = sink;
    for (int i = 0; i < 300000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}

__attribute__((noinline)) void middle(void) {
    hot_a();
    hot_b();
    __asm__ volatile("" ::: "memory"); /* keep hot_b a call, not a tail jump */
}

__attribute__((noinline)) void outer(void) {
    middle();
    __asm__ volatile("" ::: "memory");
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    double limit = argc > 1 ? atof(argv[1]) : 1e18;
    double start = now();
    while (now() - start < limit) {
        outer();
    }
    return 0;
}
