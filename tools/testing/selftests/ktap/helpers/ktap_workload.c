// SPDX-License-Identifier: GPL-2.0
/*
 * A process for ktap_scripts.sh to trace, with functions of known names:
 *
 *   ktap_workload spin SECS   burn a CPU in ktap_workload_spin() for SECS
 *   ktap_workload touch N     fault in N fresh anonymous pages, one each
 *   ktap_workload usdt N MS   hit the USDT probe ktap_workload:tick N
 *                             times, MS milliseconds apart, and say how
 *                             many times its semaphore showed it traced
 *   ktap_workload wait SECS   sleep in main(), calling none of the
 *                             functions below: the program is mapped,
 *                             so uprobes on it are installed at once
 *   ktap_workload reads FD    on every online CPU in turn, read
 *                             /dev/zero through descriptor FD: once 1
 *                             byte, twice 2, 3 times 3, 4 times 100
 *                             and 5 times 1000 (sizes the aggregation
 *                             tests know)
 *
 * Built with frame pointers so that user stacks walk through it. The
 * USDT probe needs <sys/sdt.h> (Debian: systemtap-sdt-dev); without it
 * "usdt" exits 4 and the tests that need it skip.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include("sys/sdt.h")
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
#define HAVE_SDT 1
/* Nonzero while a tracer has the probe attached (uprobe ref_ctr). */
unsigned short ktap_workload_tick_semaphore
	__attribute__((section(".probes")));
#endif
#endif

static volatile unsigned long sink;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

#ifdef __x86_64__
/*
 * Never called. It starts with a lock-prefixed instruction, which x86
 * uprobes refuse to step (-ENOTSUPP), as glibc's pthread_spin_lock()
 * does: a uprobe wildcard over this program matches it and must skip it.
 */
__asm__(".text\n"
	".globl ktap_workload_locked\n"
	".type ktap_workload_locked, @function\n"
	"ktap_workload_locked:\n"
	"	lock incl (%rdi)\n"
	"	ret\n"
	".size ktap_workload_locked, .-ktap_workload_locked\n");
#endif

/* Nearly all of its time is spent in this function's own loop. */
__attribute__((noinline)) void ktap_workload_spin(double secs)
{
	double end = now() + secs;
	unsigned long i;

	do {
		for (i = 0; i < 2000000; i++)
			sink += i;
	} while (now() < end);
}

/* One page fault per page: no huge pages, no fault-around for anon. */
__attribute__((noinline)) int ktap_workload_touch(long n)
{
	long page = sysconf(_SC_PAGESIZE), i;
	char *p = mmap(NULL, n * page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	madvise(p, n * page, MADV_NOHUGEPAGE);
	for (i = 0; i < n; i++)
		p[i * page] = 1;
	return munmap(p, n * page) != 0;
}

#ifdef HAVE_SDT
struct point {
	long	x;
	int	y;
};

/* arg1 i, arg2 a string, arg3 -i, arg4 a struct, by address */
__attribute__((noinline)) int ktap_workload_usdt(long n, long ms)
{
	struct point pt = { 0, -7 };
	long i, traced = 0;
	char name[32];

	for (i = 1; i <= n; i++) {
		pt.x = i * 10;
		snprintf(name, sizeof(name), "tick%ld", i);
		if (ktap_workload_tick_semaphore)
			traced++;
		STAP_PROBE4(ktap_workload, tick, i, name, -i, &pt);
		usleep(ms * 1000);
	}
	printf("semaphore set in %ld of %ld\n", traced, n);
	return 0;
}
#else
__attribute__((noinline)) int ktap_workload_usdt(long n, long ms)
{
	(void)n;
	(void)ms;
	fprintf(stderr, "ktap_workload: built without <sys/sdt.h>\n");
	return 4;
}
#endif

/* The reads on each CPU, pinned there; prints how many CPUs it used. */
__attribute__((noinline)) int ktap_workload_reads(int fd)
{
	static const struct { int size, times; } plan[] = {
		{ 1, 1 }, { 2, 2 }, { 3, 3 }, { 100, 4 }, { 1000, 5 },
	};
	long ncpu = sysconf(_SC_NPROCESSORS_CONF), cpu, used = 0;
	char buf[1000];
	cpu_set_t set;
	size_t i;
	int t, z;

	z = open("/dev/zero", O_RDONLY);
	if (z < 0 || dup2(z, fd) != fd) {
		perror("/dev/zero");
		return 1;
	}
	for (cpu = 0; cpu < ncpu; cpu++) {
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			continue;	/* offline */
		used++;
		for (i = 0; i < sizeof(plan) / sizeof(plan[0]); i++)
			for (t = 0; t < plan[i].times; t++)
				if (read(fd, buf, plan[i].size) != plan[i].size)
					return 1;
	}
	printf("cpus %ld\n", used);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "spin")) {
		ktap_workload_spin(atof(argv[2]));
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "touch"))
		return ktap_workload_touch(atol(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "usdt"))
		return ktap_workload_usdt(atol(argv[2]), atol(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "wait")) {
		sleep(atoi(argv[2]));
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "reads"))
		return ktap_workload_reads(atoi(argv[2]));
	fprintf(stderr,
		"usage: ktap_workload spin SECS | touch PAGES | usdt N MS | wait SECS | reads FD\n");
	return 2;
}
