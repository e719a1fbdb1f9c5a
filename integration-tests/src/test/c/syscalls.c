/* Spends most of its CPU time in the kernel: read(2) from /dev/zero into a large buffer. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static char buf[1 << 20];

__attribute__((noinline)) void read_zeros(int fd) {
    for (int i = 0; i < 64; i++) {
        if (read(fd, buf, sizeof(buf)) < 0) exit(1);
    }
    __asm__ volatile("" ::: "memory");
}

int main(void) {
    int fd = open("/dev/zero", O_RDONLY);
    if (fd < 0) return 1;
    for (;;) read_zeros(fd);
}
