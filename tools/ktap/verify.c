// SPDX-License-Identifier: GPL-2.0
/*
 * ktap image self-check: the compiler's own copy of the rules the
 * kernel verifier (kernel/trace/ktap/vm_load.c) enforces, derived from
 * the same KTAP_OPCODES operand kinds. Every image is checked before it
 * is printed or loaded, so a code generator bug shows up as an internal
 * error here (and as a crash in the fuzzer) rather than as a kernel
 * rejection.
 */
#include <string.h>
#include "kp.h"
#include "verify.h"

#define __KP_VINFO(op, fm, a, b, c, fl)					\
	{ KTAP_FMT_##fm, fl, { KTAP_OPK_##a, KTAP_OPK_##b, KTAP_OPK_##c } },
static const struct {
	int	fmt, flags;
	int	kind[3];
} vinfo[KTAP_OP__COUNT] = {
	KTAP_OPCODES(__KP_VINFO)
};
#undef __KP_VINFO

#define FAIL(...)	do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

/* A NUL-terminated strtab name at @off, or NULL. */
static const char *name_at(const struct ktap_bc_header *h, const char *img,
			   uint32_t off)
{
	const char *s = img + h->strtab.off;

	if (off >= h->strtab.count || !memchr(s + off, '\0',
					      h->strtab.count - off))
		return NULL;
	return s + off;
}

/*
 * The builtins section: names the kernel knows (the tool's table of
 * them), each once; @ids gets each entry's id in that table.
 */
static int builtins_ok(const struct ktap_bc_header *h, const char *img,
		       int *ids)
{
	const uint32_t *b = (const void *)(img + h->builtins.off);
	uint32_t i, j;

	if (h->builtins.count > KTAP_MAX_BUILTINS)
		return 0;
	for (i = 0; i < h->builtins.count; i++) {
		const char *name = name_at(h, img, b[i]);

		ids[i] = name ? kp_builtin_kernel(name) : -1;
		if (ids[i] < 0)
			return 0;
		for (j = 0; j < i; j++)
			if (ids[j] == ids[i])
				return 0;
	}
	return 1;
}

/* The fields section: a probe index and a name each. */
static int fields_ok(const struct ktap_bc_header *h, const char *img)
{
	const struct ktap_bc_field *f = (const void *)(img + h->fields.off);
	uint32_t i;

	if (h->fields.count > KTAP_MAX_FIELDS)
		return 0;
	for (i = 0; i < h->fields.count; i++)
		if (f[i].probe >= h->probes.count ||
		    !name_at(h, img, f[i].name))
			return 0;
	return 1;
}

/* Fetch arguments: sorted by probe, on kprobes and uprobes, in range. */
static int fetch_ok(const struct ktap_bc_header *h, const char *img)
{
	const struct ktap_bc_fetch *f = (const void *)(img + h->fetch.off);
	const struct ktap_bc_probe *pr = (const void *)(img + h->probes.off);
	uint32_t i;

	if (h->fetch.count > KTAP_MAX_FETCH)
		return 0;
	for (i = 0; i < h->fetch.count; i++) {
		if (f[i].probe >= h->probes.count ||
		    (i && f[i].probe < f[i - 1].probe) ||
		    (pr[f[i].probe].type != KTAP_PROBE_KPROBE &&
		     pr[f[i].probe].type != KTAP_PROBE_UPROBE) ||
		    !name_at(h, img, f[i].name) ||
		    f[i].base >= KTAP_FETCH_BASE__COUNT ||
		    f[i].type >= KTAP_FETCH_TYPE__COUNT ||
		    f[i].ndref > KTAP_MAX_FETCH_DEREF ||
		    (f[i].base == KTAP_FETCH_REG &&
		     !name_at(h, img, f[i].reg)))
			return 0;
	}
	return 1;
}

/* CALLB: builtins-section entry @x exists and takes @nargs arguments. */
static int builtin_ok(const struct ktap_bc_header *h, const int *ids,
		      int64_t x, uint32_t nargs)
{
	const struct kp_builtin *b;

	if (x >= h->builtins.count)
		return 0;
	b = kp_builtin_get(ids[x]);
	return nargs >= b->min && (b->max == KP_ANY_ARGS || nargs <= b->max);
}

static int sec_ok(const struct ktap_bc_header *h, const struct ktap_bc_section *s,
		  size_t elem, size_t align, uint32_t len)
{
	if (!s->count)
		return 1;
	return s->off % align == 0 && s->off >= h->hdr_size &&
	       (uint64_t)s->off + (uint64_t)s->count * elem <= len;
}

int kp_verify(const void *image, uint32_t len, char *err, size_t errlen)
{
	const struct ktap_bc_header *h = image;
	const char *img = image;
	const struct ktap_bc_proto *p;
	const struct ktap_bc_const *k;
	const struct ktap_bc_upval *uv;
	const struct ktap_bc_probe *pr;
	const uint32_t *code;
	uint32_t i, pc, next = 0;
	int bids[KTAP_MAX_BUILTINS];

	if (len < sizeof(*h) || h->magic != KTAP_BC_MAGIC ||
	    h->abi_version != KTAP_ABI_VERSION || h->hdr_size != sizeof(*h) ||
	    h->total_size != len || h->flags || len > KTAP_MAX_IMAGE ||
	    !h->protos.count || h->nglobals > KTAP_MAX_GLOBALS)
		FAIL("header");
	if (!sec_ok(h, &h->protos, sizeof(*p), 4, len) ||
	    !sec_ok(h, &h->consts, sizeof(*k), 8, len) ||
	    !sec_ok(h, &h->strtab, 1, 1, len) ||
	    !sec_ok(h, &h->code, 4, 4, len) ||
	    !sec_ok(h, &h->lines, 4, 4, len) ||
	    !sec_ok(h, &h->upvals, 2, 1, len) ||
	    !sec_ok(h, &h->probes, sizeof(*pr), 8, len) ||
	    !sec_ok(h, &h->builtins, 4, 4, len) ||
	    !sec_ok(h, &h->fields, sizeof(struct ktap_bc_field), 4, len) ||
	    !sec_ok(h, &h->fetch, sizeof(struct ktap_bc_fetch), 8, len) ||
	    (h->lines.count && h->lines.count != h->code.count) ||
	    h->protos.count > KTAP_MAX_PROTOS ||
	    h->consts.count > KTAP_MAX_CONSTS ||
	    h->probes.count > KTAP_MAX_PROBES)
		FAIL("sections");
	if (!builtins_ok(h, img, bids))
		FAIL("builtins");
	if (!fields_ok(h, img))
		FAIL("fields");
	if (!fetch_ok(h, img))
		FAIL("fetch");
	p = (const void *)(img + h->protos.off);
	k = (const void *)(img + h->consts.off);
	uv = (const void *)(img + h->upvals.off);
	pr = (const void *)(img + h->probes.off);
	code = (const void *)(img + h->code.off);
	for (i = 0; i < h->consts.count; i++) {
		if (k[i].type == KTAP_BC_CONST_STR &&
		    (k[i].val < 0 || k[i].len > 4096 ||
		     (uint64_t)k[i].val + k[i].len > h->strtab.count))
			FAIL("const %u", i);
		if (k[i].type > KTAP_BC_CONST_STR ||
		    (k[i].type == KTAP_BC_CONST_INT && k[i].len))
			FAIL("const %u type", i);
	}
	for (i = 0; i < h->protos.count; i++) {
		uint32_t j;

		if (!p[i].ncode || p[i].code_start != next ||
		    (uint64_t)p[i].code_start + p[i].ncode > h->code.count ||
		    p[i].nregs > KTAP_MAX_REGS || p[i].nparams > p[i].nregs ||
		    p[i].__reserved ||
		    (uint64_t)p[i].upval_start + p[i].nupvals > h->upvals.count)
			FAIL("proto %u", i);
		next = p[i].code_start + p[i].ncode;
		if (!i) {
			if (p[i].parent != KTAP_BC_NO_STR || p[i].nupvals)
				FAIL("proto 0 parent");
			continue;
		}
		if (p[i].parent >= i)
			FAIL("proto %u parent", i);
		for (j = 0; j < p[i].nupvals; j++) {
			const struct ktap_bc_upval *u = &uv[p[i].upval_start + j];
			const struct ktap_bc_proto *par = &p[p[i].parent];

			if (u->in_stack > 1 || u->index >= (u->in_stack ?
			    par->nregs : par->nupvals))
				FAIL("proto %u upvalue %u", i, j);
		}
	}
	if (next != h->code.count)
		FAIL("code not covered by functions");
	for (i = 0; i < h->protos.count; i++) {
		const uint32_t *c = code + p[i].code_start;

		for (pc = 0; pc < p[i].ncode; pc++) {
			uint32_t insn = c[pc], op = KTAP_OP(insn), n;
			int64_t v[3];

			if (op >= KTAP_OP__COUNT)
				FAIL("proto %u insn %u: opcode", i, pc);
			v[0] = KTAP_A(insn);
			v[1] = vinfo[op].fmt == KTAP_FMT_ABC ? (int64_t)KTAP_B(insn) :
			       vinfo[op].fmt == KTAP_FMT_ABX ? (int64_t)KTAP_BX(insn) :
			       (int64_t)KTAP_SBX(insn);
			v[2] = KTAP_C(insn);
			n = vinfo[op].fmt == KTAP_FMT_ABC ? 3 : 2;
			for (int o = 0; o < (int)n; o++) {
				int64_t x = v[o];
				int ok;

				switch (vinfo[op].kind[o]) {
				case KTAP_OPK_NONE:
					ok = !x;
					break;
				case KTAP_OPK_REG:
					ok = x < p[i].nregs;
					break;
				case KTAP_OPK_REG3:
					ok = x + 2 < p[i].nregs;
					break;
				case KTAP_OPK_RCNT:
					ok = v[0] + x < p[i].nregs;
					break;
				case KTAP_OPK_NVAL:
					ok = v[0] + x <= p[i].nregs;
					break;
				case KTAP_OPK_K:
					ok = x < h->consts.count;
					break;
				case KTAP_OPK_KINT:
					ok = x < h->consts.count &&
					     k[x].type == KTAP_BC_CONST_INT;
					break;
				case KTAP_OPK_KSTR:
					ok = x < h->consts.count &&
					     k[x].type == KTAP_BC_CONST_STR;
					break;
				case KTAP_OPK_UPV:
					ok = x < p[i].nupvals;
					break;
				case KTAP_OPK_GLOBAL:
					ok = x < h->nglobals;
					break;
				case KTAP_OPK_PROTO:
					ok = x < h->protos.count && p[x].parent == i;
					break;
				case KTAP_OPK_JUMP:
					ok = (int64_t)pc + 1 + x >= 0 &&
					     (int64_t)pc + 1 + x < p[i].ncode;
					break;
				case KTAP_OPK_BOOL:
					ok = x <= 1;
					break;
				case KTAP_OPK_BUILTIN:
					ok = builtin_ok(h, bids, x, KTAP_B(insn));
					break;
				case KTAP_OPK_PROBE:
					ok = x < h->probes.count;
					break;
				case KTAP_OPK_FIELD:
					ok = x < h->fields.count;
					break;
				default:
					ok = 1;
				}
				if (!ok)
					FAIL("proto %u insn %u: operand %d", i, pc, o);
			}
			if ((vinfo[op].flags & KTAP_OPF_MAIN) && i)
				FAIL("proto %u insn %u: main only", i, pc);
			/* every successor inside the function (vm_load.c) */
			if (!(vinfo[op].flags & KTAP_OPF_END)) {
				int64_t t = (int64_t)pc + 1 + KTAP_SBX(insn);
				int jumps = vinfo[op].flags &
					    (KTAP_OPF_GOTO | KTAP_OPF_BRANCH);

				if ((!(vinfo[op].flags & KTAP_OPF_GOTO) &&
				     pc + 1 >= p[i].ncode) ||
				    (jumps && (t < 0 || t >= p[i].ncode)))
					FAIL("proto %u insn %u: control leaves the function",
					     i, pc);
			}
		}
	}
	for (i = 0; i < h->probes.count; i++) {
		if (pr[i].type >= KTAP_PROBE__COUNT ||
		    (pr[i].flags & ~(KTAP_PROBE_F_RETURN | KTAP_PROBE_F_OVERRIDE |
				     KTAP_PROBE_F_WILDCARD)) ||
		    ((pr[i].flags & KTAP_PROBE_F_WILDCARD) &&
		     pr[i].type != KTAP_PROBE_KPROBE &&
		     pr[i].type != KTAP_PROBE_UPROBE) ||
		    pr[i].__reserved[0] || pr[i].__reserved[1] ||
		    pr[i].__reserved[2] ||
		    (pr[i].attr && pr[i].type != KTAP_PROBE_WATCH &&
		     pr[i].type != KTAP_PROBE_UPROBE))
			FAIL("probe %u", i);
		if (pr[i].type != KTAP_PROBE_TIMER &&
		    pr[i].type != KTAP_PROBE_PROFILE &&
		    pr[i].type != KTAP_PROBE_END &&
		    !name_at(h, img, pr[i].target))
			FAIL("probe %u: no target", i);
		if ((pr[i].type == KTAP_PROBE_TIMER ||
		     pr[i].type == KTAP_PROBE_PROFILE) &&
		    (pr[i].arg < 10000 || pr[i].arg > 3600000000000ULL))
			FAIL("probe %u: period", i);
	}
	return 0;
}
