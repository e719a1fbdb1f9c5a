/*
 * Context-switch load for OffCpuBench: two threads pass a byte back and forth over two pipes, each blocking in read
 * until the other writes, both pinned to the last CPU so every round is two switches there and nothing else (no idle
 * CPU's wake-up): ~100k switches a second. Runs until killed; once a second prints its monotonic time (ns), the
 * rounds so far and the process's context switches so far (getrusage): the bench takes rates over its windows.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int ab[2], ba[2];

static void *echo(void *arg)
{
	(void)arg;
	char c;
	while (read(ab[0], &c, 1) == 1 && write(ba[1], &c, 1) == 1)
		;
	return NULL;
}

static unsigned long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

int main(void)
{
	cpu_set_t last;
	CPU_ZERO(&last);
	CPU_SET(sysconf(_SC_NPROCESSORS_ONLN) - 1, &last);
	sched_setaffinity(0, sizeof(last), &last);
	if (pipe(ab) || pipe(ba))
		return 1;
	pthread_t t;
	pthread_create(&t, NULL, echo, NULL);
	printf("ready\n");
	fflush(stdout);
	unsigned long long next = now_ns() + 1000000000ULL;
	unsigned long rounds = 0;
	char c = 'x';
	for (;;) {
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			return 1;
		if ((++rounds & 255) == 0) {
			unsigned long long t = now_ns();
			if (t >= next) {
				struct rusage r;
				getrusage(RUSAGE_SELF, &r);
				printf("t %llu rounds %lu switches %ld\n", t, rounds, r.ru_nvcsw + r.ru_nivcsw);
				fflush(stdout);
				next = t + 1000000000ULL;
			}
		}
	}
}
