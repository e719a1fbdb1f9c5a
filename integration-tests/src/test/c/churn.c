/* A process of a busy host, for ./loupe bench unwind's 200-process phase (built -O2 -fomit-frame-pointer):
 * busy for argv[2] ms after start (so the agent samples it soon and registers it), then argv[3] ms of work
 * every second through a few frames and libc's qsort, until argv[1] seconds have passed. */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b) {
    unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;
    return x < y ? -1 : x > y;
}

__attribute__((noinline)) void sort_some(void) {
    unsigned long v[256];
    unsigned long x = sink + 1;
    for (int i = 0; i < 256; i++) v[i] = x = x * 6364136223846793005UL + 1442695040888963407UL;
    qsort(v, 256, sizeof v[0], cmp);
    sink += v[17];
}

__attribute__((noinline)) unsigned long work(int depth, double until) {
    volatile unsigned long pad[3];
    pad[depth % 3] = (unsigned long)depth;
    if (depth > 0) {
        unsigned long r = work(depth - 1, until);
        return r + pad[depth % 3];
    }
    while (now() < until) sort_some();
    return pad[0];
}

int main(int argc, char **argv) {
    double life = argc > 1 ? atof(argv[1]) : 60;
    double first = (argc > 2 ? atof(argv[2]) : 300) / 1000;
    double duty = (argc > 3 ? atof(argv[3]) : 1) / 1000;
    double start = now();
    sink += work(12, start + first);
    while (now() - start < life) {
        struct timespec pause = {1, 0};
        nanosleep(&pause, NULL);
        sink += work(12, now() + duty);
    }
    return (int)(sink & 0);
}
