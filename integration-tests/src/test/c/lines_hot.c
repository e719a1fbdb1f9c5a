/* The native source-lines target (issue 28): hot's loop body is line 8 (SourceLinesProfileTest.C_HOT_LINE); noipa keeps gcc
   from seeing that hot is pure and calling it once. */
static volatile unsigned long sink;

__attribute__((noinline, noipa)) unsigned long hot(unsigned long n) {
    unsigned long s = 0;
    for (unsigned long i = 0; i < n; i++) {
        s += i * i ^ (i >> 3);
    }
    return s;
}

int main(void) {
    for (;;) {
        sink += hot(1UL << 20);
    }
}
