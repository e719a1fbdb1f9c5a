/* Ground truth for stack tests: main -> outer -> middle -> hot_a / hot_b with a 70/30 CPU split.
 * The split is in time, not iterations: each spins on the TSC (an inline instruction, so no extra
 * frames) for 7 and 3 units. Runs until killed, or for argv[1] seconds. */
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

static volatile unsigned long sink;
/* TSC ticks per 73.1 us: one 731 us cycle, short and incommensurate with sampling periods, so samples
 * fall at every phase of the cycle (a cycle near a multiple of the period would alias). */
static unsigned long long unit;

__attribute__((noinline)) void hot_a(void) {
    unsigned long long end = __rdtsc() + 7 * unit;
    unsigned long x = sink;
    while (__rdtsc() < end) x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}

__attribute__((noinline)) void hot_b(void) {
    unsigned long long end = __rdtsc() + 3 * unit;
    unsigned long x = sink;
    while (__rdtsc() < end) x = x * 6364136223846793005UL + 1442695040888963407UL;
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
    double t0 = now();
    unsigned long long c0 = __rdtsc();
    while (now() - t0 < 0.02) {
    }
    unit = (unsigned long long)((__rdtsc() - c0) / ((now() - t0) * (1e6 / 73.1)));
    double start = now();
    while (now() - start < limit) {
        outer();
    }
    return 0;
}
