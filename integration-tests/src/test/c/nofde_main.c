/* Ground truth for code without unwind info in a binary that has it (V8's builtins, hand-written assembly):
 * nofde_asm.S's functions have no CFI, so no FDE covers them. Built with -O2 -fno-omit-frame-pointer, with
 * nofde_a.c (-fomit-frame-pointer) and nofde_asm.S. argv[1] chooses the chain; every sample is in c_spin:
 *   fp       main -> a (no frame pointer, FDE) -> asm_fp_trampoline (frame pointer, no FDE) -> c_spin
 *   nofp     main -> a_fp (frame pointer, FDE) -> asm_nofp_trampoline (no frame pointer, no FDE) -> c_spin
 *   garbage  main -> a_fp -> asm_garbage_trampoline (rbp points at a fake frame in .data, no FDE) -> c_spin
 * Runs until killed. */
#include <string.h>

void a(void);
void asm_nofp_trampoline(void);
void asm_garbage_trampoline(void);
volatile unsigned long sink;

__attribute__((noinline)) void c_spin(void) {
    unsigned long x = sink;
    for (;;) {
        for (int i = 0; i < 1000000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
        sink = x;
    }
}

__attribute__((noinline)) void a_fp(int garbage) {
    volatile int pad = 1;
    if (garbage)
        asm_garbage_trampoline();
    else
        asm_nofp_trampoline();
    sink += pad; /* work after the call: no tail call */
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "fp";
    if (strcmp(mode, "fp") == 0)
        a();
    else
        a_fp(strcmp(mode, "garbage") == 0);
    return (int)sink;
}
