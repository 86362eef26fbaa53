// SPDX-License-Identifier: GPL-2.0
/*
 * User addresses in the output, named.
 *
 * The kernel cannot name a user address from probe context: that needs
 * the task's memory map (a sleeping lock) and the symbol table of the
 * file mapped there. It prints "0x<addr> (pid <tgid>)" instead, for
 * ustack() and usym(), and the tool, which reads the output in process
 * context, rewrites each such token as "sym+0xoff/0xsize [file]" from
 * /proc/<tgid>/maps and the file's .symtab or .dynsym, the way the
 * kernel prints "func+0xoff/0xsize [module]". An address that cannot be
 * named (the process is gone, the file has no symbols) is left as the
 * kernel printed it, or becomes "0x<addr> [file]" when only its file is
 * known.
 */
#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "usym.h"

#define USYM_PIDS	32	/* processes whose maps are kept */
#define USYM_FILES	64	/* files whose symbols are kept */
#define USYM_MAPS	4096	/* mappings read of one process */

struct usym_map {
	uint64_t	start, end, pgoff;
	int		file;		/* index in files[], -1: none */
};

struct usym_pid {
	int		pid;
	int		reread;		/* maps read again after a miss */
	struct usym_map	*maps;
	size_t		nmaps;
};

struct usym_sym {
	uint64_t	value, size;
	const char	*name;
};

struct usym_file {
	char		*path;
	struct kp_elf	elf;
	int		ok;		/* mapped and an ELF file */
	struct usym_sym	*syms;		/* sorted by value */
	size_t		nsyms, cap;
};

static struct usym_pid pids[USYM_PIDS];
static unsigned int npids, next_pid;
static struct usym_file files[USYM_FILES];
static unsigned int nfiles;

static int file_sym_cb(void *arg, const char *name, uint64_t value,
		       uint64_t size)
{
	struct usym_file *f = arg;
	struct usym_sym *n;

	if (f->nsyms == f->cap) {
		f->cap = f->cap ? 2 * f->cap : 256;
		n = realloc(f->syms, f->cap * sizeof(*n));
		if (!n)
			return 1;
		f->syms = n;
	}
	f->syms[f->nsyms++] = (struct usym_sym){ value, size, name };
	return 0;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct usym_sym *x = a, *y = b;

	return x->value < y->value ? -1 : x->value > y->value;
}

static int file_get(const char *path)
{
	struct usym_file *f;
	const char *why;
	unsigned int i;

	for (i = 0; i < nfiles; i++)
		if (!strcmp(files[i].path, path))
			return (int)i;
	if (nfiles == USYM_FILES)
		return -1;
	f = &files[nfiles];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	if (!f->path)
		return -1;
	/* "[vdso]" and the like are named, but have no file to read */
	if (path[0] == '/' && !kp_elf_open(&f->elf, path, &why)) {
		f->ok = 1;
		kp_elf_syms(&f->elf, file_sym_cb, f);
		qsort(f->syms, f->nsyms, sizeof(*f->syms), sym_cmp);
	}
	return (int)nfiles++;
}

static void pid_read_maps(struct usym_pid *p)
{
	char path[64], line[4200], file[4096];
	unsigned long long start, end, pgoff;
	FILE *fp;

	p->nmaps = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", p->pid);
	fp = fopen(path, "re");
	if (!fp)
		return;
	if (!p->maps)
		p->maps = calloc(USYM_MAPS, sizeof(*p->maps));
	while (p->maps && p->nmaps < USYM_MAPS && fgets(line, sizeof(line), fp)) {
		struct usym_map *m = &p->maps[p->nmaps];
		char perm[8];

		file[0] = '\0';
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095[^\n]",
			   &start, &end, perm, &pgoff, file) < 4 ||
		    perm[2] != 'x')
			continue;
		m->start = start;
		m->end = end;
		m->pgoff = pgoff;
		m->file = file[0] == '/' || file[0] == '[' ? file_get(file) : -1;
		p->nmaps++;
	}
	fclose(fp);
}

static struct usym_pid *pid_get(int pid)
{
	struct usym_pid *p;
	unsigned int i;

	for (i = 0; i < npids; i++)
		if (pids[i].pid == pid)
			return &pids[i];
	if (npids < USYM_PIDS) {
		p = &pids[npids++];
	} else {
		p = &pids[next_pid];
		next_pid = (next_pid + 1) % USYM_PIDS;
	}
	p->pid = pid;
	p->reread = 0;
	pid_read_maps(p);
	return p;
}

static const struct usym_map *map_find(struct usym_pid *p, uint64_t addr)
{
	size_t i;

	for (i = 0; i < p->nmaps; i++)
		if (addr >= p->maps[i].start && addr < p->maps[i].end)
			return &p->maps[i];
	return NULL;
}

/* File offset to the virtual address it is loaded at in the ELF file. */
static int file_off_vaddr(const struct kp_elf *e, uint64_t off, uint64_t *va)
{
	const Elf64_Ehdr *h = (const Elf64_Ehdr *)e->map;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(e->map + h->e_phoff);
	uint32_t i;

	for (i = 0; i < h->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		if (off >= ph[i].p_offset && off - ph[i].p_offset < ph[i].p_filesz) {
			*va = off - ph[i].p_offset + ph[i].p_vaddr;
			return 0;
		}
	}
	return -1;
}

static const struct usym_sym *sym_find(const struct usym_file *f, uint64_t va)
{
	size_t lo = 0, hi = f->nsyms;
	const struct usym_sym *s;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->syms[mid].value <= va)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &f->syms[lo - 1];
	if (va - s->value >= (s->size ? s->size : 1))
		return NULL;
	return s;
}

/* Write the name of @addr in process @pid; 0 if it could not be named. */
static int usym_name(FILE *out, int pid, uint64_t addr)
{
	struct usym_pid *p = pid_get(pid);
	const struct usym_map *m = map_find(p, addr);
	const struct usym_file *f;
	const struct usym_sym *s;
	const char *base;
	uint64_t va;

	if (!m && !p->reread) {
		/* mapped since we looked (dlopen, a new process image) */
		p->reread = 1;
		pid_read_maps(p);
		m = map_find(p, addr);
	}
	if (!m || m->file < 0)
		return 0;
	f = &files[m->file];
	base = strrchr(f->path, '/');
	base = base ? base + 1 : f->path;
	s = NULL;
	if (f->ok && !file_off_vaddr(&f->elf, addr - m->start + m->pgoff, &va))
		s = sym_find(f, va);
	if (s)
		fprintf(out, "%s+%#" PRIx64 "/%#" PRIx64 " [%s]", s->name,
			va - s->value, s->size, base);
	else
		fprintf(out, "%#" PRIx64 " [%s]", addr, base);
	return 1;
}

/*
 * Match "0x<hex> (pid <n>)" at @s (@n bytes); return its length and the
 * address and pid, or 0.
 */
static size_t token(const char *s, size_t n, uint64_t *addr, int *pid)
{
	size_t i = 2, j;
	uint64_t a = 0;
	long p = 0;

	if (n < 2 || s[0] != '0' || s[1] != 'x')
		return 0;
	for (; i < n && isxdigit((unsigned char)s[i]) && i < 18; i++)
		a = a << 4 | (uint64_t)(isdigit((unsigned char)s[i]) ?
					s[i] - '0' :
					(tolower((unsigned char)s[i]) - 'a' + 10));
	if (i == 2 || n - i < 8 || memcmp(s + i, " (pid ", 6))
		return 0;
	j = i + 6;
	if (j >= n || !isdigit((unsigned char)s[j]))
		return 0;
	for (; j < n && isdigit((unsigned char)s[j]) && p < 1 << 30; j++)
		p = p * 10 + (s[j] - '0');
	if (j >= n || s[j] != ')')
		return 0;
	*addr = a;
	*pid = (int)p;
	return j + 1;
}

void kp_usym_write(FILE *out, const char *line, size_t n)
{
	size_t i = 0, start = 0, len;
	uint64_t addr;
	int pid;

	while (i < n) {
		const char *z = memchr(line + i, '0', n - i);

		if (!z)
			break;
		i = (size_t)(z - line);
		len = (i == 0 || !isalnum((unsigned char)line[i - 1])) ?
		      token(line + i, n - i, &addr, &pid) : 0;
		if (!len) {
			i++;
			continue;
		}
		fwrite(line + start, 1, i - start, out);
		if (!usym_name(out, pid, addr))
			fwrite(line + i, 1, len, out);
		i += len;
		start = i;
	}
	fwrite(line + start, 1, n - start, out);
}
