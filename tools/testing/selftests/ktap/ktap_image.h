/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A tiny assembler for ktap bytecode images, built on the UAPI header
 * only, so the kernel-facing tests do not depend on the compiler.
 * (ktap here is the tracer, not the KTAP test output format.)
 */
#ifndef KTAP_IMAGE_H
#define KTAP_IMAGE_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/ktap.h>

#define KTAP_CONTROL	"/sys/kernel/tracing/ktap/control"
#define KTAP_INSTANCES	"/sys/kernel/tracing/instances"

/*
 * Capacities. A test that needs larger images defines them before it
 * includes this file (ktap_gen_fuzz.c does).
 */
#ifndef KI_MAX
#define KI_MAX		64	/* code words of a function, consts */
#endif
#ifndef KI_FUNCS
#define KI_FUNCS	8	/* functions */
#endif
#ifndef KI_PROBES
#define KI_PROBES	8	/* probes */
#endif
#ifndef KI_STRTAB
#define KI_STRTAB	1024	/* bytes of string table */
#endif
#ifndef KI_BUILTINS
#define KI_BUILTINS	16	/* names in the builtins section */
#endif
#ifndef KI_FIELDS
#define KI_FIELDS	16	/* entries of the fields section */
#endif
#ifndef KI_GAPS
#define KI_GAPS		16	/* code words that no function covers */
#endif

/*
 * Fields past nregs are zero unless a test sets them: upvalues (see
 * ki_upval()) and @ngap words of ki_image.gap laid out just before this
 * function's code, inside the code section but in no function.
 */
struct ki_func {
	uint32_t code[KI_MAX];
	uint32_t ncode;
	uint8_t nparams;
	uint8_t nregs;
	uint32_t parent;
	uint32_t upval_start;
	uint16_t nupvals;
	uint32_t ngap;
};

/*
 * Fields past nw are zero unless a test sets them: upvalue descriptors,
 * the gap words (ki_gap()), how many of them go after the last function
 * (@ntail), the header's nglobals, and @lines: emit a line table.
 */
struct ki_image {
	struct ki_func f[KI_FUNCS];
	uint32_t nf;
	struct ktap_bc_const k[KI_MAX];
	uint32_t nk;
	char str[KI_STRTAB];
	uint32_t nstr;
	struct ktap_bc_probe p[KI_PROBES];
	uint32_t np;
	uint32_t b[KI_BUILTINS];	/* builtins section: strtab offsets */
	uint32_t nb;
	struct ktap_bc_field fl[KI_FIELDS];
	uint32_t nfl;
	struct ktap_bc_upval uv[KI_MAX];
	uint32_t nuv;
	uint32_t gap[KI_GAPS];
	uint32_t ngap;
	uint32_t ntail;
	uint32_t nglobals;
	int lines;
};

static inline uint32_t ki_str(struct ki_image *im, const char *s)
{
	uint32_t off = im->nstr;
	size_t n = strlen(s) + 1;

	if (im->nstr + n > sizeof(im->str))
		abort();
	memcpy(im->str + im->nstr, s, n);
	im->nstr += n;
	return off;
}

static inline uint32_t ki_kstr(struct ki_image *im, const char *s)
{
	struct ktap_bc_const *k = &im->k[im->nk];

	if (im->nk >= KI_MAX)
		abort();

	k->type = KTAP_BC_CONST_STR;
	k->len = strlen(s);
	k->val = ki_str(im, s);
	return im->nk++;
}

static inline uint32_t ki_kint(struct ki_image *im, int64_t v)
{
	struct ktap_bc_const *k = &im->k[im->nk];

	if (im->nk >= KI_MAX)
		abort();

	k->type = KTAP_BC_CONST_INT;
	k->len = 0;
	k->val = v;
	return im->nk++;
}

/*
 * The builtins-section index of builtin @name, adding it on first use:
 * CALLB's C operand. Names are interned so a test that calls print
 * twice names it once, as the compiler does; a test that wants a
 * duplicate or a bogus entry writes im->b directly.
 */
static inline uint8_t ki_builtin(struct ki_image *im, const char *name)
{
	uint32_t i;

	for (i = 0; i < im->nb; i++)	/* skipping bogus offsets a test set */
		if (im->b[i] < im->nstr && !strcmp(im->str + im->b[i], name))
			return i;
	if (im->nb >= KI_BUILTINS)
		abort();
	im->b[im->nb] = ki_str(im, name);
	return im->nb++;
}

/* A fields-section entry: field @name of probe @probe's events. */
static inline uint32_t ki_field(struct ki_image *im, uint32_t probe,
				const char *name)
{
	if (im->nfl >= KI_FIELDS)
		abort();
	im->fl[im->nfl].probe = probe;
	im->fl[im->nfl].name = ki_str(im, name);
	return im->nfl++;
}

/* A new function; function 0 is the main chunk. */
static inline struct ki_func *ki_func(struct ki_image *im, uint8_t nparams,
				      uint8_t nregs)
{
	struct ki_func *f = &im->f[im->nf];

	if (im->nf >= KI_FUNCS)
		abort();
	f->nparams = nparams;
	f->nregs = nregs;
	f->parent = im->nf ? 0 : KTAP_BC_NO_STR;
	im->nf++;
	return f;
}

static inline void ki_op(struct ki_func *f, uint32_t insn)
{
	if (f->ncode >= KI_MAX)
		abort();
	f->code[f->ncode++] = insn;
}

/*
 * A probe. For a tracepoint @target is the "SYSTEM:EVENT" pattern (globs
 * allowed) the kernel resolves at attach.
 */
static inline uint32_t ki_probe(struct ki_image *im, uint32_t type,
				uint32_t flags, const char *spec,
				const char *target, uint64_t arg)
{
	struct ktap_bc_probe *p = &im->p[im->np];

	if (im->np >= KI_PROBES)
		abort();
	p->type = type;
	p->flags = flags;
	p->spec = ki_str(im, spec);
	p->target = target ? ki_str(im, target) : KTAP_BC_NO_STR;
	p->arg = arg;
	return im->np++;
}

/*
 * Give function @f one more upvalue: capture register @index of the
 * enclosing function (@in_stack 1) or its upvalue @index (0). A
 * function's upvalues are contiguous: add them before the next one's.
 */
static inline void ki_upval(struct ki_image *im, struct ki_func *f,
			    uint8_t in_stack, uint8_t index)
{
	if (im->nuv >= KI_MAX)
		abort();
	if (!f->nupvals)
		f->upval_start = im->nuv;
	else if (f->upval_start + f->nupvals != im->nuv)
		abort();
	im->uv[im->nuv].in_stack = in_stack;
	im->uv[im->nuv].index = index;
	im->nuv++;
	f->nupvals++;
}

/*
 * A code word that belongs to no function: before @f's code, or after
 * the last function's when @f is NULL. Add them in layout order.
 */
static inline void ki_gap(struct ki_image *im, struct ki_func *f,
			  uint32_t word)
{
	if (im->ngap >= KI_GAPS)
		abort();
	im->gap[im->ngap++] = word;
	if (f)
		f->ngap++;
	else
		im->ntail++;
}

static inline size_t ki_align(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* Lay the image out; returns a malloc'd buffer and its size. */
static inline void *ki_build(struct ki_image *im, size_t *lenp)
{
	struct ktap_bc_header h = { 0 };
	struct ktap_bc_proto pr[KI_FUNCS];
	uint32_t code[KI_FUNCS * KI_MAX + KI_GAPS], lines[KI_FUNCS * KI_MAX + KI_GAPS];
	uint32_t ncode = 0, ngap = 0, nlines, i, j;
	size_t off = ki_align(sizeof(h));
	char *buf;

	memset(pr, 0, sizeof(pr));
	h.chunkname = ki_str(im, "selftest");
	for (i = 0; i < im->nf; i++) {
		for (j = 0; j < im->f[i].ngap && ngap < im->ngap; j++)
			code[ncode++] = im->gap[ngap++];
		pr[i].code_start = ncode;
		pr[i].ncode = im->f[i].ncode;
		pr[i].upval_start = im->f[i].upval_start;
		pr[i].nupvals = im->f[i].nupvals;
		pr[i].nparams = im->f[i].nparams;
		pr[i].nregs = im->f[i].nregs;
		pr[i].parent = im->f[i].parent;
		pr[i].name = KTAP_BC_NO_STR;
		pr[i].line = 1;
		memcpy(code + ncode, im->f[i].code, im->f[i].ncode * 4);
		ncode += im->f[i].ncode;
	}
	while (ngap < im->ngap)
		code[ncode++] = im->gap[ngap++];
	nlines = im->lines ? ncode : 0;
	for (i = 0; i < nlines; i++)
		lines[i] = i + 1;
#define KI_SECT(field, cnt, sz) do {				\
		h.field.off = (cnt) ? off : 0;			\
		h.field.count = (cnt);				\
		off = ki_align(off + (size_t)(cnt) * (sz));	\
	} while (0)
	KI_SECT(protos, im->nf, sizeof(struct ktap_bc_proto));
	KI_SECT(consts, im->nk, sizeof(struct ktap_bc_const));
	KI_SECT(strtab, im->nstr, 1);
	KI_SECT(code, ncode, 4);
	KI_SECT(lines, nlines, 4);
	KI_SECT(upvals, im->nuv, sizeof(struct ktap_bc_upval));
	KI_SECT(probes, im->np, sizeof(struct ktap_bc_probe));
	KI_SECT(builtins, im->nb, 4);
	KI_SECT(fields, im->nfl, sizeof(struct ktap_bc_field));
#undef KI_SECT
	h.magic = KTAP_BC_MAGIC;
	h.abi_version = KTAP_ABI_VERSION;
	h.hdr_size = sizeof(h);
	h.total_size = off;
	h.nglobals = im->nglobals;
	buf = calloc(1, off);
	if (!buf)
		abort();
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + h.protos.off, pr, im->nf * sizeof(*pr));
	if (im->nk)
		memcpy(buf + h.consts.off, im->k, im->nk * sizeof(*im->k));
	memcpy(buf + h.strtab.off, im->str, im->nstr);
	memcpy(buf + h.code.off, code, ncode * 4);
	if (nlines)
		memcpy(buf + h.lines.off, lines, nlines * 4);
	if (im->nuv)
		memcpy(buf + h.upvals.off, im->uv, im->nuv * sizeof(*im->uv));
	if (im->np)
		memcpy(buf + h.probes.off, im->p, im->np * sizeof(*im->p));
	if (im->nb)
		memcpy(buf + h.builtins.off, im->b, im->nb * 4);
	if (im->nfl)
		memcpy(buf + h.fields.off, im->fl, im->nfl * sizeof(*im->fl));
	*lenp = off;
	return buf;
}

/* print("hello"); exit-free main chunk. */
static inline void *ki_hello(const char *msg, size_t *len)
{
	struct ki_image im = { 0 };
	struct ki_func *m = ki_func(&im, 0, 4);
	uint32_t k = ki_kstr(&im, msg);

	ki_op(m, KTAP_INSN_BX(KTAP_OP_LOADK, 1, k));
	ki_op(m, KTAP_INSN(KTAP_OP_CALLB, 0, 1, ki_builtin(&im, "print")));
	ki_op(m, KTAP_INSN(KTAP_OP_RETURN, 0, 0, 0));
	return ki_build(&im, len);
}

/*
 * One probe whose handler prints e.tostring() (tracepoints, kprobes) or
 * a fixed word, plus an END handler that prints @end_msg.
 */
static inline void *ki_probe_prog(uint32_t type, uint32_t flags,
				  const char *spec, const char *target,
				  uint64_t arg, const char *end_msg,
				  size_t *len)
{
	struct ki_image im = { 0 };
	struct ki_func *m = ki_func(&im, 0, 4);
	struct ki_func *h = ki_func(&im, 1, 4);
	struct ki_func *e = ki_func(&im, 0, 4);
	uint32_t kts = ki_kstr(&im, "tostring");
	uint32_t kend = ki_kstr(&im, end_msg);
	uint32_t p = ki_probe(&im, type, flags, spec, target, arg);
	uint32_t pe = ki_probe(&im, KTAP_PROBE_END, 0, "end", NULL, 0);
	uint8_t bprint = ki_builtin(&im, "print");

	ki_op(m, KTAP_INSN_BX(KTAP_OP_CLOSURE, 0, 1));
	ki_op(m, KTAP_INSN_BX(KTAP_OP_ATTACH, 0, p));
	ki_op(m, KTAP_INSN_BX(KTAP_OP_CLOSURE, 0, 2));
	ki_op(m, KTAP_INSN_BX(KTAP_OP_ATTACH, 0, pe));
	ki_op(m, KTAP_INSN(KTAP_OP_RETURN, 0, 0, 0));

	/* print(e.tostring()) -- R0 is e */
	ki_op(h, KTAP_INSN(KTAP_OP_GETFIELD, 1, 0, kts));
	ki_op(h, KTAP_INSN(KTAP_OP_CALL, 1, 0, 1));
	ki_op(h, KTAP_INSN(KTAP_OP_MOVE, 3, 1, 0));
	ki_op(h, KTAP_INSN(KTAP_OP_CALLB, 2, 1, bprint));
	ki_op(h, KTAP_INSN(KTAP_OP_RETURN, 0, 0, 0));

	ki_op(e, KTAP_INSN_BX(KTAP_OP_LOADK, 1, kend));
	ki_op(e, KTAP_INSN(KTAP_OP_CALLB, 0, 1, bprint));
	ki_op(e, KTAP_INSN(KTAP_OP_RETURN, 0, 0, 0));
	return ki_build(&im, len);
}

/*
 * One tracepoint probe on @pattern whose handler does print(e.FIELD):
 * by name through GETFIELD, or with @evfield through EVFIELD and a
 * fields-section entry, which the kernel resolves at attach.
 */
static inline void *ki_field_prog(const char *pattern, const char *field,
				  int evfield, size_t *len)
{
	struct ki_image im = { 0 };
	struct ki_func *m = ki_func(&im, 0, 4);
	struct ki_func *h = ki_func(&im, 1, 4);
	uint32_t p = ki_probe(&im, KTAP_PROBE_TRACEPOINT, 0, "tp", pattern, 0);

	ki_op(m, KTAP_INSN_BX(KTAP_OP_CLOSURE, 0, 1));
	ki_op(m, KTAP_INSN_BX(KTAP_OP_ATTACH, 0, p));
	ki_op(m, KTAP_INSN(KTAP_OP_RETURN, 0, 0, 0));
	if (evfield)
		ki_op(h, KTAP_INSN_BX(KTAP_OP_EVFIELD, 3,
				      ki_field(&im, p, field)));
	else
		ki_op(h, KTAP_INSN(KTAP_OP_GETFIELD, 3, 0,
				   ki_kstr(&im, field)));
	ki_op(h, KTAP_INSN(KTAP_OP_CALLB, 2, 1, ki_builtin(&im, "print")));
	ki_op(h, KTAP_INSN(KTAP_OP_RETURN, 0, 0, 0));
	return ki_build(&im, len);
}

static inline int ki_load_filtered(int fd, const void *img, size_t len,
				   char *log, size_t log_size, int pid, int cpu)
{
	struct ktap_load_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.image = (uintptr_t)img;
	a.image_len = len;
	a.log_buf = (uintptr_t)log;
	a.log_size = log_size;
	a.pid = pid;
	a.cpu = cpu;
	return ioctl(fd, KTAP_IOC_LOAD, &a);
}

static inline int ki_load(int fd, const void *img, size_t len, char *log,
			  size_t log_size)
{
	return ki_load_filtered(fd, img, len, log, log_size, -1, -1);
}

/*
 * Sessions that loaded a program: each has its output in a tracing
 * instance, ktap-<id> unless named otherwise (the tests never do, but
 * for the one that checks naming).
 */
static inline int ki_count_sessions(void)
{
	DIR *d = opendir(KTAP_INSTANCES);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "ktap-", 5))
			n++;
	closedir(d);
	return n;
}

/* Read until EOF (or @max bytes) into a NUL-terminated malloc'd string. */
static inline char *ki_read_all(int fd, size_t max)
{
	size_t n = 0;
	char *buf = malloc(max + 1);
	ssize_t r;

	if (!buf)
		abort();
	while (n < max) {
		r = read(fd, buf + n, max - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += r;
	}
	buf[n] = '\0';
	return buf;
}

/* The id of a tracefs event, e.g. "syscalls/sys_enter_getppid". */
static inline int ki_event_id(const char *ev)
{
	char path[256];
	FILE *f;
	int id = -1;

	snprintf(path, sizeof(path), "/sys/kernel/tracing/events/%s/id", ev);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%d", &id) != 1)
		id = -1;
	fclose(f);
	return id;
}

#endif /* KTAP_IMAGE_H */
