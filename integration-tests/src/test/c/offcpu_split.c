/*
 * Off-CPU ground truth (OffCpuProfileTest): thread "waiter" waits 70 % of its time in sleep_part (nanosleep) and
 * 30 % in poll_part (ppoll), 2.8 ms and 1.2 ms per round (timer slack 1 ns, so both end when asked); threads
 * "spinner1" and "spinner2" burn CPU pinned to one CPU, so each waits only in the run queue (preempted by the other).
 * Built -O2 -fomit-frame-pointer: the stacks are walked by their eh_frame tables. With the argument "waiter-only" (the
 * tests of whose waits are recorded: OffCpuScopeTest) there are no spinners.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

__attribute__((noinline)) static void sleep_part(void)
{
	struct timespec ts = {0, 2800 * 1000};
	nanosleep(&ts, NULL);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void poll_part(void)
{
	struct timespec ts = {0, 1200 * 1000};
	ppoll(NULL, 0, &ts, NULL);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void *waiter_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	for (;;) {
		sleep_part();
		poll_part();
	}
	return NULL;
}

__attribute__((noinline)) static void burn(void)
{
	for (uint64_t i = 0; i < 100000; i++)
		sink += i * i;
}

__attribute__((noinline)) static void *spinner_main(void *arg)
{
	(void)arg;
	for (;;)
		burn();
	return NULL;
}

int main(int argc, char **argv)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	pthread_t w, s1, s2;
	pthread_create(&w, NULL, waiter_main, NULL);
	pthread_setname_np(w, "waiter");
	if (argc > 1 && strcmp(argv[1], "waiter-only") == 0) {
		printf("ready\n");
		fflush(stdout);
		pthread_join(w, NULL);
		return 0;
	}
	pthread_create(&s1, NULL, spinner_main, NULL);
	pthread_setname_np(s1, "spinner1");
	pthread_setaffinity_np(s1, sizeof(one), &one);
	pthread_create(&s2, NULL, spinner_main, NULL);
	pthread_setname_np(s2, "spinner2");
	pthread_setaffinity_np(s2, sizeof(one), &one);
	printf("ready\n");
	fflush(stdout);
	pthread_join(w, NULL);
	return 0;
}
