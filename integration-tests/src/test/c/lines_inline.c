/* The native inlined-functions target (issue 28): gcc -O2 inlines mix into step and step into hot, so hot's loop runs
   mix's line 6, called from step's line 10, called from hot's line 16. */
static volatile unsigned long sink;

static inline __attribute__((always_inline)) unsigned long mix(unsigned long x) {
    return (x * 2654435761u) ^ (x >> 7) ^ (x << 3);
}

static inline __attribute__((always_inline)) unsigned long step(unsigned long s, unsigned long i) {
    return s + mix(i);
}

__attribute__((noinline, noipa)) unsigned long hot(unsigned long n) {
    unsigned long s = 0;
    for (unsigned long i = 0; i < n; i++) {
        s = step(s, i);
    }
    return s;
}

int main(void) {
    for (;;) {
        sink += hot(1UL << 20);
    }
}
