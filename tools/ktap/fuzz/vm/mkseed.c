// SPDX-License-Identifier: GPL-2.0
/*
 * Seed maker for the VM fuzzer: compile ktap scripts with the tool's
 * compiler and write each bytecode image, as the kernel receives it, to
 * OUTDIR/PREFIX-NAME.img. `make -C tools/ktap fuzz-vm-seeds` runs it
 * over the samples and the golden tests (script arguments: 1 two 333).
 *
 *	mkseed OUTDIR PREFIX FILE.kp...
 */
#include <stdlib.h>
#include <string.h>
#include "../../kp.h"
#include "../../code.h"

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

static int compile_one(const char *outdir, const char *prefix,
		       const char *path)
{
	const char *base = strrchr(path, '/');
	char out[4096], *dot;
	struct kp_state S;
	uint32_t len;
	size_t srclen;
	void *img;
	char *src;
	FILE *f;
	int err = -1;

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
	img = kp_image_write(&S, &len);
	if (!img)
		goto out;
	snprintf(out, sizeof(out), "%s/%s-%s", outdir, prefix, base);
	dot = strrchr(out, '.');
	if (dot && !strcmp(dot, ".kp"))
		*dot = '\0';
	strncat(out, ".img", sizeof(out) - strlen(out) - 1);
	f = fopen(out, "wb");
	if (f && fwrite(img, 1, len, f) == len && !fclose(f))
		err = 0;
	else
		fprintf(stderr, "mkseed: cannot write %s\n", out);
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
		if (compile_one(argv[1], argv[2], argv[i]))
			err = 1;
	return err;
}
