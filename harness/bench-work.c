// SPDX-License-Identifier: GPL-2.0
/*
 * bench-work: the syscall-heavy workload of harness/bench.
 *
 *   bench-work getppid|read CALLS [PROCS]
 *   bench-work nr getppid          prints getppid's syscall number
 *
 * Forks PROCS workers (default 1), worker i pinned to CPU i, releases
 * them together and times, with CLOCK_MONOTONIC, the span from the
 * release to the last worker's end. Each worker makes CALLS calls of
 * syscall(SYS_getppid) or of read(fd, buf, 1) on /dev/zero. Prints
 *
 *   calls=TOTAL ns=ELAPSED per_call=NS.NN
 *
 * Under QEMU -icount shift=0 one nanosecond of guest time is one guest
 * instruction (summed over all vCPUs), so per_call is then guest
 * instructions per call.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void work(int use_read, long calls)
{
	char c;
	int fd = -1;
	long i;

	if (use_read) {
		fd = open("/dev/zero", O_RDONLY);
		if (fd < 0) {
			perror("bench-work: /dev/zero");
			_exit(1);
		}
		for (i = 0; i < calls; i++)
			if (read(fd, &c, 1) != 1)
				_exit(1);
	} else {
		for (i = 0; i < calls; i++)
			syscall(SYS_getppid);
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	int go[2], ready[2], use_read, procs = 1, i, st, bad = 0;
	long long t0, t1;
	long calls;
	char c;

	if (argc == 3 && !strcmp(argv[1], "nr") && !strcmp(argv[2], "getppid")) {
		printf("%d\n", SYS_getppid);
		return 0;
	}
	if (argc < 3 || (strcmp(argv[1], "getppid") && strcmp(argv[1], "read"))) {
		fprintf(stderr, "usage: bench-work getppid|read CALLS [PROCS]\n");
		return 2;
	}
	use_read = !strcmp(argv[1], "read");
	calls = atol(argv[2]);
	if (argc > 3)
		procs = atoi(argv[3]);
	if (calls <= 0 || procs <= 0 || procs > 256 || pipe(go) || pipe(ready))
		return 2;
	for (i = 0; i < procs; i++) {
		pid_t p = fork();

		if (p < 0) {
			perror("bench-work: fork");
			return 1;
		}
		if (!p) {
			cpu_set_t set;

			CPU_ZERO(&set);
			CPU_SET(i, &set);
			sched_setaffinity(0, sizeof(set), &set);
			close(go[1]);
			if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) < 0)
				_exit(1);
			work(use_read, calls);
		}
	}
	close(go[0]);
	for (i = 0; i < procs; i++)
		if (read(ready[0], &c, 1) != 1)
			return 1;
	t0 = now_ns();
	close(go[1]);		/* EOF releases every worker */
	for (i = 0; i < procs; i++) {
		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			bad = 1;
	}
	t1 = now_ns();
	if (bad) {
		fprintf(stderr, "bench-work: a worker failed\n");
		return 1;
	}
	printf("calls=%ld ns=%lld per_call=%.2f\n", calls * procs, t1 - t0,
	       (double)(t1 - t0) / ((double)calls * procs));
	return 0;
}
