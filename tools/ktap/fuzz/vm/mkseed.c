// SPDX-License-Identifier: GPL-2.0
/*
 * Seed maker for the VM fuzzer: compile ktap scripts with the tool's
 * compiler and write each bytecode image, as the kernel receives it, to
 * OUTDIR/PREFIX-NAME.img. `make -C tools/ktap fuzz-vm-seeds` runs it
 * over the samples and the golden tests (script arguments: 1 two 333).
 *
 * Every image's builtins section names, after the builtins the script
 * calls, every other builtin the kernel knows, so that the mutator of
 * fuzz_vm.c reaches them all by changing CALLB's C operand. For every
 * eighth script, OUTDIR/PREFIX-NAME-badbuiltin.img also names a builtin
 * the kernel does not know (the chunk name), which the kernel rejects.
 *
 *	mkseed OUTDIR PREFIX FILE.kp...
 */
#include <stdlib.h>
#include <string.h>
#include "../../kp.h"
#include "../../image.h"
#include "../../verify.h"

static char *arg_v[] = { "1", "two", "333" };

static char *read_all(const char *path, size_t *len)
{
	char *buf = NULL;
	size_t cap = 0, n = 0, got;
	FILE *f = fopen(path, "rb");

	if (!f)
		return NULL;
	do {
		if (n == cap) {
			char *nb;

			cap = cap ? 2 * cap : 4096;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
	} while (got);
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
}

static int write_img(const char *outdir, const char *prefix,
		     const char *base, const char *suffix, const void *img,
		     uint32_t len)
{
	char out[4096], *dot;
	FILE *f;

	snprintf(out, sizeof(out), "%s/%s-%s", outdir, prefix, base);
	dot = strrchr(out, '.');
	if (dot && !strcmp(dot, ".kp"))
		*dot = '\0';
	strncat(out, suffix, sizeof(out) - strlen(out) - 1);
	strncat(out, ".img", sizeof(out) - strlen(out) - 1);
	f = fopen(out, "wb");
	if (f && fwrite(img, 1, len, f) == len && !fclose(f))
		return 0;
	if (f)
		fclose(f);
	fprintf(stderr, "mkseed: cannot write %s\n", out);
	return -1;
}

/* The last builtins entry renamed to the chunk name: not a builtin. */
static void bad_builtin(void *img)
{
	struct ktap_bc_header *h = img;
	uint32_t *b = (uint32_t *)((char *)img + h->builtins.off);

	b[h->builtins.count - 1] = h->chunkname;
}

static int compile_one(const char *outdir, const char *prefix,
		       const char *path, int nth)
{
	const char *base = strrchr(path, '/');
	char why[128];
	struct kp_state S;
	uint32_t len;
	size_t srclen;
	void *img;
	char *src;
	int i, err = -1;

	base = base ? base + 1 : path;
	src = read_all(path, &srclen);
	if (!src || srclen > KP_MAX_SOURCE) {
		fprintf(stderr, "mkseed: cannot read %s\n", path);
		free(src);
		return -1;
	}
	kp_state_init(&S, path, src, (uint32_t)srclen, stderr);
	S.args = arg_v;
	S.nargs = 3;
	if (kp_compile(&S)) {
		fprintf(stderr, "mkseed: %s does not compile\n", path);
		goto out;
	}
	for (i = 0; i < kp_builtin_kernel_count(); i++)
		kp_builtin_ref(&S, kp_builtin_get(i)->name);
	img = kp_image_write(&S, &len);
	if (!img)
		goto out;
	if (kp_verify(img, len, why, sizeof(why))) {
		fprintf(stderr, "mkseed: %s: invalid bytecode: %s\n", path, why);
		free(img);
		goto out;
	}
	err = write_img(outdir, prefix, base, "", img, len);
	if (!err && nth % 8 == 7) {
		bad_builtin(img);
		err = write_img(outdir, prefix, base, "-badbuiltin", img, len);
	}
	free(img);
out:
	kp_state_free(&S);
	free(src);
	return err;
}

int main(int argc, char **argv)
{
	int i, err = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: mkseed OUTDIR PREFIX FILE.kp...\n");
		return 2;
	}
	for (i = 3; i < argc; i++)
		if (compile_one(argv[1], argv[2], argv[i], i - 3))
			err = 1;
	return err;
}
