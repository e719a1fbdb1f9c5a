/* Ground truth for unwinding through a signal frame (built -O2 -fomit-frame-pointer -pthread):
 * a thread worker_thread -> worker_loop waits in pause(); SIGALRM every 10 ms (setitimer) runs
 * on_alarm -> handler_work, which spins ~8 ms on that thread. So that thread's CPU time is spent in
 * the handler, and its stack is handler_work, on_alarm, [signal trampoline], pause, worker_loop,
 * worker_thread, start_thread. The main thread blocks SIGALRM and sleeps.
 * Runs until killed, or for argv[1] seconds. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void handler_work(void) {
    double end = now() + 0.008;
    unsigned long x = sink;
    while (now() < end)
        for (int i = 0; i < 2000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}

__attribute__((noinline)) void on_alarm(int sig) {
    volatile int pad[3];
    pad[0] = sig;
    handler_work();
    sink += pad[0];
}

__attribute__((noinline)) void worker_loop(void) {
    for (;;) {
        pause();
        __asm__ volatile("" ::: "memory");
    }
}

__attribute__((noinline)) void *worker_thread(void *arg) {
    (void)arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    worker_loop();
    return NULL;
}

int main(int argc, char **argv) {
    double limit = argc > 1 ? atof(argv[1]) : 1e18;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* only the worker takes SIGALRM */
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    pthread_t t;
    pthread_create(&t, NULL, worker_thread, NULL);
    struct itimerval it = {{0, 10000}, {0, 10000}};
    setitimer(ITIMER_REAL, &it, NULL);
    double start = now();
    while (now() - start < limit) sleep(1);
    return 0;
}
