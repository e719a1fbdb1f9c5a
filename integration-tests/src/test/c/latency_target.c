/*
 * Latency test target for native (uretprobe) probes; prints its own ground truth:
 *   calls N / sum_ns S / bucket K C  (2^k microsecond buckets, as Loupe's)
 * "flat THREADS EACH": threads call work(), which sleeps 1.1 ms or 5 ms.
 * "rec CALLS": rec() recurses 4 levels deep; each level sleeps, then recurses, so the levels take about
 * 1.2, 5, 20 and 70 ms (distinct buckets: a wrong pairing of nested entries and exits shows). Each level
 * measures itself inside the function.
 * "jmp CALLS": jumpy() sleeps 1.1 ms and returns normally on odd calls, and leaves by longjmp on even
 * ones (no return: its uretprobe never fires). Only the returning calls are measured.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long long calls, sum_ns, hist[32];

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void record(long long d) {
    long long us = (d + 999) / 1000;
    int k = us <= 1 ? 0 : 64 - __builtin_clzll((unsigned long long)(us - 1));
    if (k > 31) k = 31;
    __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&sum_ns, d, __ATOMIC_RELAXED);
    __atomic_add_fetch(&hist[k], 1, __ATOMIC_RELAXED);
}

static void sleep_ns(long ns) {
    struct timespec ts = { ns / 1000000000L, ns % 1000000000L };
    while (nanosleep(&ts, &ts)) {}
}

__attribute__((noinline, noclone)) int work(long ns) {
    sleep_ns(ns);
    return (int)(ns & 7);
}

static int each;
static volatile int sink;

static void *flat(void *arg) {
    (void)arg;
    for (int j = 0; j < each; j++) {
        long ns = (j % 2) ? 5000000L : 1100000L;
        long long t0 = now_ns();
        int r = work(ns);
        record(now_ns() - t0);
        sink += r;
    }
    return 0;
}

static const long own_sleep[4] = { 50000000L, 15000000L, 3800000L, 1200000L };

__attribute__((noinline, noclone)) long rec(int level) {
    long long t0 = now_ns();
    sleep_ns(own_sleep[level]);
    long r = level < 3 ? rec(level + 1) + 1 : 1;
    record(now_ns() - t0);
    return r;
}

static jmp_buf escape;

__attribute__((noinline, noclone)) int jumpy(int i) {
    sleep_ns(1100000L);
    if (i % 2 == 0)
        longjmp(escape, 1);
    return i & 7;
}

/* Every call from the same frame, so each starts at the same SP as the one that never returned. */
__attribute__((noinline, noclone)) static void jumps(int n) {
    for (volatile int i = 0; i < n; i++) {
        if (setjmp(escape) == 0) {
            long long t0 = now_ns();
            int r = jumpy(i);
            record(now_ns() - t0);
            sink += r;
        }
    }
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "flat")) {
        int threads = atoi(argv[2]);
        each = atoi(argv[3]);
        pthread_t t[64];
        if (threads > 64) threads = 64;
        for (int i = 0; i < threads; i++) pthread_create(&t[i], 0, flat, 0);
        for (int i = 0; i < threads; i++) pthread_join(t[i], 0);
    } else if (argc == 3 && !strcmp(argv[1], "rec")) {
        int n = atoi(argv[2]);
        for (int i = 0; i < n; i++) sink += (int)rec(0);
    } else if (argc == 3 && !strcmp(argv[1], "jmp")) {
        jumps(atoi(argv[2]));
    } else {
        fprintf(stderr, "usage: %s flat THREADS EACH | rec CALLS | jmp CALLS\n", argv[0]);
        return 2;
    }
    printf("calls %lld\nsum_ns %lld\n", calls, sum_ns);
    for (int k = 0; k < 32; k++)
        if (hist[k]) printf("bucket %d %lld\n", k, hist[k]);
    return 0;
}
