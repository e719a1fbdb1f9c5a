/* Shared library for the PLT ground truth (built -O2 -fomit-frame-pointer -fPIC -shared):
 * lib_entry -> lib_inner, both without frame pointers, reached from the program through the PLT. */
static volatile unsigned long lib_sink;

__attribute__((noinline)) static void lib_inner(int rounds) {
    unsigned long x = lib_sink;
    for (int i = 0; i < rounds; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    lib_sink = x;
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void lib_entry(int rounds) {
    volatile char pad[24];
    pad[rounds & 7] = 1;
    lib_inner(rounds);
    lib_sink += pad[rounds & 7]; /* no tail call */
}
