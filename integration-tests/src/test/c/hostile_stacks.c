/* Threads whose frame-pointer chains lie (see hostile_stacks.S): a 1-cycle, a 2-cycle, a frame pointer into an
 * unmapped page and a return address into one. Each thread spins in its *_spin for ever. */
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>

void cycle1_outer(void);
void cycle2_outer(void);
void unmapped_rbp_outer(void *unmapped);
void unmapped_ret_outer(void *unmapped);

static void *unmapped;

static void *t_cycle1(void *a) { cycle1_outer(); return a; }
static void *t_cycle2(void *a) { cycle2_outer(); return a; }
static void *t_unmapped_rbp(void *a) { unmapped_rbp_outer(unmapped); return a; }
static void *t_unmapped_ret(void *a) { unmapped_ret_outer(unmapped); return a; }

int main(void) {
    unmapped = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(unmapped, 4096);
    pthread_t t[4];
    void *(*fs[4])(void *) = {t_cycle1, t_cycle2, t_unmapped_rbp, t_unmapped_ret};
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, fs[i], NULL);
    printf("ready\n");
    fflush(stdout);
    pthread_join(t[0], NULL);
    return 0;
}
