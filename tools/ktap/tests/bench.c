// SPDX-License-Identifier: GPL-2.0
/*
 * In-process compile-time benchmark for `make bench`: compiles a script
 * N times (lexing, parsing, code generation, event resolution against
 * $KTAP_TRACEFS, image writing and self-check) and prints the mean.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../kp.h"
#include "../image.h"
#include "../verify.h"

int main(int argc, char **argv)
{
	static char src[KP_MAX_SOURCE + 1];
	struct timespec a, b;
	char why[128];
	int i, n = argc > 2 ? atoi(argv[2]) : 1000;
	size_t len;
	FILE *f;

	if (argc < 2)
		return 1;
	f = fopen(argv[1], "r");
	if (!f)
		return 1;
	len = fread(src, 1, KP_MAX_SOURCE, f);
	fclose(f);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < n; i++) {
		struct kp_state S;
		uint32_t ilen;
		void *img;

		kp_state_init(&S, argv[1], src, (uint32_t)len, stderr);
		if (kp_compile(&S))
			return 1;
		img = kp_image_write(&S, &ilen);
		if (!img || kp_verify(img, ilen, why, sizeof(why)))
			return 1;
		free(img);
		kp_state_free(&S);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("compile %s: %.1f us (mean of %d, in process)\n", argv[1],
	       ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n / 1e3,
	       n);
	return 0;
}
