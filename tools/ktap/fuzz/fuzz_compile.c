// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness for the ktap compiler: every input is compiled (the
 * CLI is not linked in); a script that compiles must produce an image
 * that passes the kernel verifier's rules (verify.c) and disassembles.
 * Crashes, leaks (ASan), undefined behaviour (UBSan), hangs (-timeout)
 * and invalid bytecode all fail the run. Event lookups use the fake
 * tracefs of tests/ (KTAP_TRACEFS, set by `make fuzz-check`).
 */
#include <stdlib.h>
#include <string.h>
#include "../kp.h"
#include "../image.h"
#include "../disasm.h"
#include "../verify.h"

static FILE *devnull;

static char *arg_v[] = { "1", "two", "333" };

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct kp_state S;
	char *src, why[128];
	uint32_t len;
	void *img;

	if (size > KP_MAX_SOURCE)
		return 0;
	if (!devnull)
		devnull = fopen("/dev/null", "w");
	src = malloc(size + 1);
	if (!src)
		return 0;
	memcpy(src, data, size);
	src[size] = '\0';
	kp_state_init(&S, "fuzz.kp", src, (uint32_t)size, devnull);
	S.args = arg_v;
	S.nargs = 3;
	if (!kp_compile(&S)) {
		img = kp_image_write(&S, &len);
		if (img) {
			if (kp_verify(img, len, why, sizeof(why))) {
				fprintf(stderr, "invalid bytecode: %s\n", why);
				abort();
			}
			kp_disasm(devnull, img, len,
				  (const char *const *)S.img->globals,
				  S.img->nglobals);
			free(img);
		}
	}
	kp_state_free(&S);
	free(src);
	return 0;
}
