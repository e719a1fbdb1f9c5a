/* Ground truth for frame-pointer-free unwinding (built with -O2 -fomit-frame-pointer):
 * main -> spin_forever -> recurse(DEPTH) x DEPTH -> leaf, every sample in leaf. recurse does work after
 * its call, so it is neither inlined nor a tail call; each level keeps a different stack frame size
 * (the array), so the unwinder must use each frame's CFA rule, not a fixed stride.
 * Runs until killed, or for argv[1] seconds. */
#include <stdlib.h>
#include <time.h>

#define DEPTH 60
static volatile unsigned long sink;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void leaf(void) {
    unsigned long x = sink;
    for (int i = 0; i < 2000000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}

__attribute__((noinline)) unsigned long recurse(int n) {
    volatile unsigned long pad[4];
    pad[n & 3] = (unsigned long)n;
    if (n <= 1) {
        leaf();
        return pad[n & 3];
    }
    unsigned long r = recurse(n - 1);
    return r + pad[n & 3]; /* work after the call: no tail call */
}

__attribute__((noinline)) void spin_forever(double limit) {
    double start = now();
    while (now() - start < limit) sink += recurse(DEPTH);
}

int main(int argc, char **argv) {
    spin_forever(argc > 1 ? atof(argv[1]) : 1e18);
    return 0;
}
