// SPDX-License-Identifier: GPL-2.0
/*
 * A process for ktap_scripts.sh to trace, with functions of known names:
 *
 *   ktap_workload spin SECS   burn a CPU in ktap_workload_spin() for SECS
 *
 * Built with frame pointers so that user stacks walk through it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "spin")) {
		ktap_workload_spin(atof(argv[2]));
		return 0;
	}
	fprintf(stderr, "usage: ktap_workload spin SECS\n");
	return 2;
}
