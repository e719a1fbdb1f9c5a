/* Ground truth for unwinding through the PLT into a shared library without frame pointers:
 * main -> call_lib -> lib_entry (libloupeplt.so, via the PLT) -> lib_inner (hot).
 * Runs until killed, or for argv[1] seconds. */
#include <stdlib.h>
#include <time.h>

void lib_entry(int rounds);
static volatile unsigned long sink;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void call_lib(void) {
    volatile int pad[6];
    pad[1] = 1;
    lib_entry(1000000);
    sink += pad[1];
}

int main(int argc, char **argv) {
    double limit = argc > 1 ? atof(argv[1]) : 1e18;
    double start = now();
    while (now() - start < limit) call_lib();
    return 0;
}
