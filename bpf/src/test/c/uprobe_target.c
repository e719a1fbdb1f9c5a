/* Calls work() argv[1] times; work's body is one lea and a ret at -O2, so a probe at its RET offset is
 * hit once per call too. */
#include <stdlib.h>

__attribute__((noinline)) int work(int x) { return 3 * x + 1; }

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1;
    volatile int sink = 0;
    for (int i = 0; i < n; i++) sink += work(i);
    return 0;
}
