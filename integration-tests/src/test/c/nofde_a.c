/* Part of the nofde target (see nofde_main.c), built with -fomit-frame-pointer: a keeps no frame pointer
 * and is unwound by its FDE. */
void asm_fp_trampoline(void);
extern volatile unsigned long sink;

__attribute__((noinline)) void a(void) {
    volatile int pad = 1;
    asm_fp_trampoline();
    sink += pad; /* work after the call: no tail call */
}
