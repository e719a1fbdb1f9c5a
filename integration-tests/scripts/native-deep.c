#include <stdlib.h>
volatile unsigned long sink;
__attribute__((noinline)) unsigned long r(int n) {
    if (n == 0) { unsigned long s = 0; for (;;) { s = (s * 31 + 7) % 1000003; sink = s; } }
    unsigned long v = r(n - 1) + 1;
    sink = v;
    return v;
}
int main(int argc, char **argv) { return (int) r(atoi(argv[1]) - 1); }
