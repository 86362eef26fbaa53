// SPDX-License-Identifier: GPL-2.0
/*
 * ktap disassembler: `ktap -b` output. One header line per function,
 * then one line per instruction:
 *
 *	[pc] line OPNAME operands ; constants, globals, targets
 *
 * Operands print by kind (KTAP_OPK_*): rN register, kN constant, uN
 * upvalue, gN global, fN function, ->N jump target, builtin names
 * (from the builtins section), probeN, fieldN (the fields section).
 * The probe table, the builtins and the fields follow the functions.
 */
#include <string.h>
#include <linux/ktap.h>
#include "disasm.h"

#define __KP_OPINFO(op, fm, a, b, c, fl)				\
	{ #op, KTAP_FMT_##fm, { KTAP_OPK_##a, KTAP_OPK_##b, KTAP_OPK_##c } },
static const struct {
	const char	*name;
	int		fmt;
	int		kind[3];
} opinfo[KTAP_OP__COUNT] = {
	KTAP_OPCODES(__KP_OPINFO)
};
#undef __KP_OPINFO

static const char *const probe_type[KTAP_PROBE__COUNT] = {
	"tracepoint", "kprobe", "uprobe", "timer", "profile", "end", "perf",
	"watchpoint", "function",
};

struct dis {
	FILE				*out;
	const char			*img;
	uint32_t			len;
	const struct ktap_bc_header	*h;
	const struct ktap_bc_const	*k;
	const struct ktap_bc_proto	*p;
	const char			*str;
	const uint32_t			*builtins;
	const struct ktap_bc_field	*fields;
	const char *const		*globals;
	uint32_t			nglobals;
};

static const char *strat(struct dis *d, uint32_t off)
{
	if (off == KTAP_BC_NO_STR || off >= d->h->strtab.count ||
	    !memchr(d->str + off, '\0', d->h->strtab.count - off))
		return NULL;
	return d->str + off;
}

/* Name of builtins-section entry @i, or "?". */
static const char *biname(struct dis *d, int64_t i)
{
	const char *s = i >= 0 && i < d->h->builtins.count ?
			strat(d, d->builtins[i]) : NULL;

	return s ? s : "?";
}

static void put_quoted(FILE *out, const char *s, uint32_t len)
{
	uint32_t i;

	fputc('"', out);
	for (i = 0; i < len && i < 40; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", out);
		else if (c == '\t')
			fputs("\\t", out);
		else if (c < 32 || c > 126)
			fprintf(out, "\\x%02x", c);
		else
			fputc(c, out);
	}
	fputs(i < len ? "\"..." : "\"", out);
}

static void put_const(struct dis *d, uint32_t i)
{
	const struct ktap_bc_const *c;

	if (i >= d->h->consts.count) {
		fputs("?", d->out);
		return;
	}
	c = &d->k[i];
	if (c->type == KTAP_BC_CONST_INT)
		fprintf(d->out, "%lld", (long long)c->val);
	else if (c->val >= 0 && (uint64_t)c->val + c->len <= d->h->strtab.count)
		put_quoted(d->out, d->str + c->val, c->len);
	else
		fputs("?", d->out);
}

/* A fields-section entry: "NAME of probeN". */
static void put_field(struct dis *d, int64_t i)
{
	const char *s = i >= 0 && i < d->h->fields.count ?
			strat(d, d->fields[i].name) : NULL;

	if (!s) {
		fputs("?", d->out);
		return;
	}
	fprintf(d->out, "%s of probe%u", s, d->fields[i].probe);
}

static int check(struct dis *d, const struct ktap_bc_section *s, size_t elem)
{
	return !s->count ||
	       ((uint64_t)s->off + (uint64_t)s->count * elem <= d->len &&
		s->off >= sizeof(*d->h));
}

static void disasm_proto(struct dis *d, uint32_t pi)
{
	const struct ktap_bc_proto *p = &d->p[pi];
	const uint32_t *code = (const uint32_t *)(d->img + d->h->code.off);
	const uint32_t *lines = d->h->lines.count ?
		(const uint32_t *)(d->img + d->h->lines.off) : NULL;
	const struct ktap_bc_upval *uv =
		(const struct ktap_bc_upval *)(d->img + d->h->upvals.off);
	const char *name = strat(d, p->name);
	uint32_t pc, j;

	fprintf(d->out, "\nfunction %u %s line %u", pi,
		pi ? (name ? name : "<anonymous>") : "<main>", p->line);
	if (pi)
		fprintf(d->out, " (in %u)", p->parent);
	fprintf(d->out, ": params %u, regs %u, upvalues %u, %u instructions\n",
		p->nparams, p->nregs, p->nupvals, p->ncode);
	if (p->nupvals && (uint64_t)p->upval_start + p->nupvals <= d->h->upvals.count) {
		fputs("  upvalues:", d->out);
		for (j = 0; j < p->nupvals; j++)
			fprintf(d->out, " u%u=%s%u", j,
				uv[p->upval_start + j].in_stack ? "r" : "u",
				uv[p->upval_start + j].index);
		fputc('\n', d->out);
	}
	if ((uint64_t)p->code_start + p->ncode > d->h->code.count)
		return;
	for (pc = 0; pc < p->ncode; pc++) {
		uint32_t i = code[p->code_start + pc], op = KTAP_OP(i);
		int64_t v[3];
		char ops[64], *o = ops;
		int k, ncom = 0;

		fprintf(d->out, "  [%3u] %4u  ", pc,
			lines ? lines[p->code_start + pc] : 0);
		if (op >= KTAP_OP__COUNT) {
			fprintf(d->out, "??? 0x%08x\n", i);
			continue;
		}
		v[0] = KTAP_A(i);
		v[1] = opinfo[op].fmt == KTAP_FMT_ABC ? (int64_t)KTAP_B(i) :
		       opinfo[op].fmt == KTAP_FMT_ABX ? (int64_t)KTAP_BX(i) :
		       (int64_t)KTAP_SBX(i);
		v[2] = opinfo[op].fmt == KTAP_FMT_ABC ? KTAP_C(i) : 0;
		ops[0] = '\0';
		for (k = 0; k < 3; k++) {
			size_t room = sizeof(ops) - (size_t)(o - ops);
			int n = 0;

			switch (opinfo[op].kind[k]) {
			case KTAP_OPK_NONE:
				continue;
			case KTAP_OPK_REG:
			case KTAP_OPK_REG3:
				n = snprintf(o, room, " r%lld", (long long)v[k]);
				break;
			case KTAP_OPK_K:
			case KTAP_OPK_KINT:
			case KTAP_OPK_KSTR:
				n = snprintf(o, room, " k%lld", (long long)v[k]);
				break;
			case KTAP_OPK_UPV:
				n = snprintf(o, room, " u%lld", (long long)v[k]);
				break;
			case KTAP_OPK_GLOBAL:
				n = snprintf(o, room, " g%lld", (long long)v[k]);
				break;
			case KTAP_OPK_PROTO:
				n = snprintf(o, room, " f%lld", (long long)v[k]);
				break;
			case KTAP_OPK_JUMP:
				n = snprintf(o, room, " ->%lld",
					     (long long)(pc + 1 + v[k]));
				break;
			case KTAP_OPK_BUILTIN:
				n = snprintf(o, room, " %s", biname(d, v[k]));
				break;
			case KTAP_OPK_PROBE:
				n = snprintf(o, room, " probe%lld", (long long)v[k]);
				break;
			case KTAP_OPK_FIELD:
				n = snprintf(o, room, " field%lld", (long long)v[k]);
				break;
			default:
				n = snprintf(o, room, " %lld", (long long)v[k]);
			}
			if (n > 0 && (size_t)n < room)
				o += n;
		}
		fprintf(d->out, "%-9s%s", opinfo[op].name, ops);
		for (k = 0; k < 3; k++) {
			int kind = opinfo[op].kind[k];

			if (kind != KTAP_OPK_K && kind != KTAP_OPK_KINT &&
			    kind != KTAP_OPK_KSTR && kind != KTAP_OPK_GLOBAL &&
			    kind != KTAP_OPK_PROBE && kind != KTAP_OPK_FIELD)
				continue;
			if (kind == KTAP_OPK_GLOBAL &&
			    (!d->globals || v[k] >= d->nglobals))
				continue;
			fputs(ncom++ ? ", " : " ; ", d->out);
			if (kind == KTAP_OPK_GLOBAL) {
				fputs(d->globals[v[k]], d->out);
			} else if (kind == KTAP_OPK_FIELD) {
				put_field(d, v[k]);
			} else if (kind == KTAP_OPK_PROBE) {
				const struct ktap_bc_probe *pr =
					(const void *)(d->img + d->h->probes.off);
				const char *s = v[k] < d->h->probes.count ?
						strat(d, pr[v[k]].spec) : NULL;

				fputs(s ? s : "?", d->out);
			} else {
				put_const(d, (uint32_t)v[k]);
			}
		}
		fputc('\n', d->out);
	}
}

/* The builtins and fields sections, after the probes. */
static void disasm_names(struct dis *d)
{
	uint32_t i;

	if (d->h->builtins.count) {
		fputs("\nbuiltins:", d->out);
		for (i = 0; i < d->h->builtins.count; i++)
			fprintf(d->out, " %u=%s", i, biname(d, i));
		fputc('\n', d->out);
	}
	if (d->h->fields.count)
		fputc('\n', d->out);
	for (i = 0; i < d->h->fields.count; i++) {
		fprintf(d->out, "field %u: ", i);
		put_field(d, i);
		fputc('\n', d->out);
	}
}

/* "  arg NAME = BASE +OFF(...) TYPE" for each fetch argument of @probe. */
static void disasm_fetch(struct dis *d, uint32_t probe, FILE *out)
{
	static const char *const base[KTAP_FETCH_BASE__COUNT] = {
		"%", "$arg", "$stack", "$stack", "$retval", "\\", "$comm",
	};
	static const char *const type[KTAP_FETCH_TYPE__COUNT] = {
		"u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64",
		"x8", "x16", "x32", "x64", "string",
	};
	const struct ktap_bc_fetch *f =
		(const void *)((const char *)d->h + d->h->fetch.off);
	uint32_t i, j;

	for (i = 0; i < d->h->fetch.count; i++) {
		const char *name = strat(d, f[i].name), *reg;

		if (f[i].probe != probe || f[i].base >= KTAP_FETCH_BASE__COUNT ||
		    f[i].type >= KTAP_FETCH_TYPE__COUNT)
			continue;
		fprintf(out, "  arg %s = ", name ? name : "?");
		for (j = 0; j < f[i].ndref && j < KTAP_MAX_FETCH_DEREF; j++)
			fprintf(out, "%+lld(", (long long)f[i].off[f[i].ndref - 1 - j]);
		fputs(base[f[i].base], out);
		if (f[i].base == KTAP_FETCH_REG) {
			reg = strat(d, f[i].reg);
			fputs(reg ? reg : "?", out);
		} else if (f[i].base == KTAP_FETCH_ARG ||
			   f[i].base == KTAP_FETCH_STACK) {
			fprintf(out, "%u", f[i].reg);
		} else if (f[i].base == KTAP_FETCH_IMM) {
			fprintf(out, "0x%llx", (unsigned long long)f[i].imm);
		}
		for (j = 0; j < f[i].ndref && j < KTAP_MAX_FETCH_DEREF; j++)
			fputc(')', out);
		fprintf(out, ":%s%s\n", f[i].flags & KTAP_FETCH_F_USER ? "u" : "",
			type[f[i].type]);
	}
}

int kp_disasm(FILE *out, const void *image, uint32_t len,
	      const char *const *globals, uint32_t nglobals)
{
	struct dis d = { .out = out, .img = image, .len = len,
			 .globals = globals, .nglobals = nglobals };
	const struct ktap_bc_probe *pr;
	uint32_t i;

	d.h = image;
	if (len < sizeof(*d.h) || d.h->magic != KTAP_BC_MAGIC ||
	    !check(&d, &d.h->protos, sizeof(*d.p)) ||
	    !check(&d, &d.h->consts, sizeof(*d.k)) ||
	    !check(&d, &d.h->strtab, 1) || !check(&d, &d.h->code, 4) ||
	    !check(&d, &d.h->lines, 4) || !check(&d, &d.h->upvals, 2) ||
	    !check(&d, &d.h->probes, sizeof(*pr)) ||
	    !check(&d, &d.h->builtins, 4) ||
	    !check(&d, &d.h->fields, sizeof(*d.fields))) {
		fputs("ktap: not a valid bytecode image\n", stderr);
		return 1;
	}
	d.p = (const void *)(d.img + d.h->protos.off);
	d.k = (const void *)(d.img + d.h->consts.off);
	d.str = d.img + d.h->strtab.off;
	d.builtins = (const void *)(d.img + d.h->builtins.off);
	d.fields = (const void *)(d.img + d.h->fields.off);
	fprintf(out, "; %s: ktap bytecode ABI %u, %u bytes, %u functions, "
		"%u constants, %u globals, %u probes\n",
		strat(&d, d.h->chunkname) ? strat(&d, d.h->chunkname) : "?",
		d.h->abi_version, d.h->total_size, d.h->protos.count,
		d.h->consts.count, d.h->nglobals, d.h->probes.count);
	for (i = 0; i < d.h->protos.count; i++)
		disasm_proto(&d, i);
	pr = (const void *)(d.img + d.h->probes.off);
	if (d.h->probes.count)
		fputc('\n', out);
	for (i = 0; i < d.h->probes.count; i++) {
		const char *spec = strat(&d, pr[i].spec);
		const char *target = strat(&d, pr[i].target);

		fprintf(out, "probe %u: %s%s%s%s \"%s\"", i,
			pr[i].type < KTAP_PROBE__COUNT ? probe_type[pr[i].type] : "?",
			pr[i].flags & KTAP_PROBE_F_RETURN ? " return" : "",
			pr[i].flags & KTAP_PROBE_F_OVERRIDE ? " override" : "",
			pr[i].flags & KTAP_PROBE_F_WILDCARD ? " wildcard" : "",
			spec ? spec : "?");
		if (target)
			fprintf(out, " target \"%s\"", target);
		if (pr[i].type == KTAP_PROBE_TIMER ||
		    pr[i].type == KTAP_PROBE_PROFILE)
			fprintf(out, " period %lluns",
				(unsigned long long)pr[i].arg);
		else if (pr[i].type == KTAP_PROBE_PERF)
			fprintf(out, " period %llu",
				(unsigned long long)pr[i].arg);
		else if (pr[i].type == KTAP_PROBE_WATCH)
			fprintf(out, " address 0x%llx length %u%s%s%s",
				(unsigned long long)pr[i].arg,
				pr[i].attr & KTAP_WATCH_LEN_MASK,
				pr[i].attr & KTAP_WATCH_R ? " r" : "",
				pr[i].attr & KTAP_WATCH_W ? " w" : "",
				pr[i].attr & KTAP_WATCH_X ? " x" : "");
		else if (pr[i].arg)
			fprintf(out, " offset 0x%llx",
				(unsigned long long)pr[i].arg);
		if (pr[i].type == KTAP_PROBE_UPROBE && pr[i].attr)
			fprintf(out, " semaphore 0x%x", pr[i].attr);
		fputc('\n', out);
		disasm_fetch(&d, i, out);
	}
	disasm_names(&d);
	return 0;
}
