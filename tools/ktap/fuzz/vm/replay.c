// SPDX-License-Identifier: GPL-2.0
/*
 * Replay driver for fuzz_vm.c without libFuzzer: every file named on
 * the command line, and every file of every directory named there, is
 * run once through LLVMFuzzerTestOneInput(), in name order. Built with
 * gcc -fsanitize=address,undefined, so the VM fuzz corpus is checked
 * even where clang's libFuzzer is missing.
 *
 * Exit status: 0 when every input ran (a bug aborts), 1 on I/O errors.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static int replay_file(const char *path)
{
	unsigned char *buf;
	struct stat st;
	size_t got;
	FILE *f;

	f = fopen(path, "rb");
	if (!f || fstat(fileno(f), &st)) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		if (f)
			fclose(f);
		return -1;
	}
	/* exactly the file's size, so that ASan sees any over-read */
	buf = malloc(st.st_size ? st.st_size : 1);
	got = buf ? fread(buf, 1, st.st_size, f) : 0;
	fclose(f);
	if (!buf || got != (size_t)st.st_size) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		free(buf);
		return -1;
	}
	LLVMFuzzerTestOneInput(buf, got);
	free(buf);
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_dir(const char *dir, unsigned int *n)
{
	char **names = NULL, path[4096];
	struct dirent *de;
	size_t cnt = 0, cap = 0, i;
	int err = 0;
	DIR *d;

	d = opendir(dir);
	if (!d) {
		fprintf(stderr, "replay: cannot open %s\n", dir);
		return -1;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (cnt == cap) {
			char **nn;

			cap = cap ? 2 * cap : 64;
			nn = realloc(names, cap * sizeof(*names));
			if (!nn) {
				err = -1;
				break;
			}
			names = nn;
		}
		names[cnt] = strdup(de->d_name);
		if (!names[cnt]) {
			err = -1;
			break;
		}
		cnt++;
	}
	closedir(d);
	if (cnt)
		qsort(names, cnt, sizeof(*names), cmp_names);
	for (i = 0; i < cnt; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (!err && replay_file(path))
			err = -1;
		else if (!err)
			(*n)++;
		free(names[i]);
	}
	free(names);
	return err;
}

int main(int argc, char **argv)
{
	unsigned int n = 0;
	struct stat st;
	int i, err = 0;

	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &st)) {
			fprintf(stderr, "replay: cannot stat %s\n", argv[i]);
			err = 1;
		} else if (S_ISDIR(st.st_mode)) {
			if (replay_dir(argv[i], &n))
				err = 1;
		} else if (replay_file(argv[i])) {
			err = 1;
		} else {
			n++;
		}
	}
	printf("replay: %u inputs\n", n);
	return err;
}
