// SPDX-License-Identifier: GPL-2.0
/*
 * A process for ktap_scripts.sh to trace, with functions of known names:
 *
 *   ktap_workload spin SECS   burn a CPU in ktap_workload_spin() for SECS
 *   ktap_workload touch N     fault in N fresh anonymous pages, one each
 *
 * Built with frame pointers so that user stacks walk through it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

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
static int touch(long n)
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

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "spin")) {
		ktap_workload_spin(atof(argv[2]));
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "touch"))
		return touch(atol(argv[2]));
	fprintf(stderr, "usage: ktap_workload spin SECS | touch PAGES\n");
	return 2;
}
