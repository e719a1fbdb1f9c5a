/* Spends its time in libc's C code (rand -> random -> random_r): lines come from Debian's libc6-dbg. */
#include <stdlib.h>

int main(void) {
    volatile long s = 0;
    for (;;) {
        s += rand();
    }
}
