// SPDX-License-Identifier: GPL-2.0
/*
 * ktap code generator: expression descriptors to instructions, register
 * allocation, constant folding, jump lists patched in place, and the
 * writer of the bytecode image of include/uapi/linux/ktap.h.
 *
 * Registers are a stack: locals take the lowest ones in declaration
 * order, temporaries live above them and are freed in reverse order.
 * A jump list is a chain of JMPs whose sBx fields point to the next JMP
 * of the list until the target is known (KP_NO_JUMP ends it).
 */
#include <stdlib.h>
#include <string.h>
#include "code.h"

/* ---- hash of constants, strtab strings and globals ---- */

enum { H_INT = 1, H_STR, H_TAB, H_GLOBAL };

struct kp_hent {
	uint8_t		kind;
	uint32_t	len;
	const char	*s;
	int64_t		i;
	uint32_t	val;
};

static uint32_t h_hash(int kind, const char *s, uint32_t len, int64_t i)
{
	uint32_t h = 2166136261u ^ (uint32_t)kind;
	uint32_t n;

	if (kind == H_INT) {
		h ^= (uint32_t)i;
		h *= 16777619u;
		h ^= (uint32_t)((uint64_t)i >> 32);
		return h * 16777619u;
	}
	for (n = 0; n < len; n++) {
		h ^= (unsigned char)s[n];
		h *= 16777619u;
	}
	return h;
}

static void h_rehash(struct kp_state *S, struct kp_image *I)
{
	struct kp_hent *old = I->hash;
	uint32_t oldcap = I->hashcap, j;

	I->hashcap = oldcap ? oldcap * 2 : 256;
	I->hash = kp_alloc(&S->arena, (size_t)I->hashcap * sizeof(*I->hash));
	for (j = 0; j < oldcap; j++) {
		struct kp_hent *e = &old[j];
		uint32_t h;

		if (!e->kind)
			continue;
		h = h_hash(e->kind, e->s, e->len, e->i) & (I->hashcap - 1);
		while (I->hash[h].kind)
			h = (h + 1) & (I->hashcap - 1);
		I->hash[h] = *e;
	}
}

/* Find or insert; *found tells which. Returns the entry. */
static struct kp_hent *h_get(struct kp_state *S, int kind, const char *s,
			     uint32_t len, int64_t i, int *found)
{
	struct kp_image *I = S->img;
	uint32_t h;

	if ((I->hashused + 1) * 2 > I->hashcap)
		h_rehash(S, I);
	h = h_hash(kind, s, len, i) & (I->hashcap - 1);
	for (;; h = (h + 1) & (I->hashcap - 1)) {
		struct kp_hent *e = &I->hash[h];

		if (!e->kind) {
			e->kind = (uint8_t)kind;
			e->s = s;
			e->len = len;
			e->i = i;
			I->hashused++;
			*found = 0;
			return e;
		}
		if (e->kind == kind && e->len == len &&
		    (kind == H_INT ? e->i == i : !memcmp(e->s, s, len))) {
			*found = 1;
			return e;
		}
	}
}

void kp_image_init(struct kp_state *S)
{
	S->img = kp_alloc(&S->arena, sizeof(*S->img));
}

uint32_t kp_strtab(struct kp_state *S, const char *s, uint32_t len)
{
	struct kp_image *I = S->img;
	struct kp_hent *e;
	int found;

	e = h_get(S, H_TAB, s, len, 0, &found);
	if (found)
		return e->val;
	kp_grow(&S->arena, (void **)&I->strtab, &I->strcap,
		I->strlen + len + 1, 1);
	memcpy(I->strtab + I->strlen, s, len);
	I->strtab[I->strlen + len] = '\0';
	e->s = I->strtab + I->strlen;	/* stable copy for later compares */
	e->val = I->strlen;
	I->strlen += len + 1;
	return e->val;
}

static int kp_const_new(struct kp_state *S, struct kp_hent *e)
{
	struct kp_image *I = S->img;

	if (I->nconsts >= KTAP_MAX_CONSTS)
		kp_fatal(S, S->line, S->col, KP_E_CONSTS, KTAP_MAX_CONSTS);
	kp_grow(&S->arena, (void **)&I->consts, &I->constcap, I->nconsts + 1,
		sizeof(*I->consts));
	e->val = I->nconsts;
	return (int)I->nconsts++;
}

int kp_const_int(struct kp_state *S, int64_t v)
{
	struct kp_hent *e;
	int found, k;

	e = h_get(S, H_INT, NULL, 0, v, &found);
	if (found)
		return (int)e->val;
	k = kp_const_new(S, e);
	S->img->consts[k].type = KTAP_BC_CONST_INT;
	S->img->consts[k].val = v;
	return k;
}

int kp_const_str(struct kp_state *S, const char *s, uint32_t len)
{
	struct kp_hent *e;
	int found, k;

	e = h_get(S, H_STR, s, len, 0, &found);
	if (found)
		return (int)e->val;
	k = kp_const_new(S, e);
	S->img->consts[k].type = KTAP_BC_CONST_STR;
	S->img->consts[k].len = len;
	S->img->consts[k].val = kp_strtab(S, s, len);
	e->s = S->img->strtab + S->img->consts[k].val;
	return k;
}

int kp_global_find(struct kp_state *S, const char *name)
{
	struct kp_hent *e;
	int found;

	/* probing inserts; an unused entry costs nothing but a slot */
	e = h_get(S, H_GLOBAL, name, (uint32_t)strlen(name), 0, &found);
	if (!found) {
		e->val = UINT32_MAX;
		return -1;
	}
	return e->val == UINT32_MAX ? -1 : (int)e->val;
}

int kp_global(struct kp_state *S, const char *name)
{
	struct kp_image *I = S->img;
	struct kp_hent *e;
	int found;

	e = h_get(S, H_GLOBAL, name, (uint32_t)strlen(name), 0, &found);
	if (found && e->val != UINT32_MAX)
		return (int)e->val;
	if (I->nglobals >= KTAP_MAX_GLOBALS)
		kp_fatal(S, S->line, S->col, KP_E_GLOBALS, KTAP_MAX_GLOBALS);
	kp_grow(&S->arena, (void **)&I->globals, &I->globalcap,
		I->nglobals + 1, sizeof(*I->globals));
	I->globals[I->nglobals] = name;
	e->val = I->nglobals;
	return (int)I->nglobals++;
}

uint32_t kp_probe_add(struct kp_state *S, const struct ktap_bc_probe *p)
{
	struct kp_image *I = S->img;

	if (I->nprobes >= KTAP_MAX_PROBES)
		kp_fatal(S, S->line, S->col, KP_E_PROBES, KTAP_MAX_PROBES);
	kp_grow(&S->arena, (void **)&I->probes, &I->probecap, I->nprobes + 1,
		sizeof(*I->probes));
	I->probes[I->nprobes] = *p;
	return I->nprobes++;
}

uint32_t kp_words_add(struct kp_state *S, const uint32_t *w, uint32_t n)
{
	struct kp_image *I = S->img;
	uint32_t start = I->nwords;

	if (n > KTAP_MAX_IMAGE / 4 || I->nwords + n > KTAP_MAX_IMAGE / 4)
		kp_fatal(S, S->line, S->col, KP_E_IMAGE_SIZE, KTAP_MAX_IMAGE);
	kp_grow(&S->arena, (void **)&I->words, &I->wordcap, I->nwords + n,
		sizeof(*I->words));
	memcpy(I->words + start, w, (size_t)n * 4);
	I->nwords += n;
	return start;
}

struct kp_proto *kp_proto_new(struct kp_state *S, uint32_t *idx)
{
	struct kp_image *I = S->img;
	struct kp_proto *f;

	if (I->nprotos >= KTAP_MAX_PROTOS)
		kp_fatal(S, S->line, S->col, KP_E_PROTOS, KTAP_MAX_PROTOS);
	kp_grow(&S->arena, (void **)&I->protos, &I->protocap, I->nprotos + 1,
		sizeof(*I->protos));
	f = kp_alloc(&S->arena, sizeof(*f));
	*idx = I->nprotos;
	I->protos[I->nprotos++] = f;
	return f;
}

/* ---- instructions ---- */

#define MAX_CODE	(KTAP_MAX_IMAGE / 8)

int kp_code(struct kp_state *S, struct kp_fstate *fs, uint32_t insn)
{
	struct kp_proto *f = fs->f;

	if (f->ncode >= MAX_CODE)
		kp_fatal(S, S->line, S->col, KP_E_FUNC_SIZE);
	kp_grow(&S->arena, (void **)&f->code, &f->codecap, f->ncode + 1, 4);
	kp_grow(&S->arena, (void **)&f->lines, &f->linecap, f->ncode + 1, 4);
	f->code[f->ncode] = insn;
	f->lines[f->ncode] = S->line;
	return (int)f->ncode++;
}

int kp_code_abc(struct kp_state *S, struct kp_fstate *fs, int op, int a,
		int b, int c)
{
	return kp_code(S, fs, KTAP_INSN(op, a, b, c));
}

int kp_code_abx(struct kp_state *S, struct kp_fstate *fs, int op, int a,
		int bx)
{
	return kp_code(S, fs, KTAP_INSN_BX(op, a, bx));
}

int kp_code_asbx(struct kp_state *S, struct kp_fstate *fs, int op, int a,
		 int sbx)
{
	return kp_code(S, fs, KTAP_INSN_BX(op, a, (uint32_t)sbx));
}

static void set_a(uint32_t *i, int a)
{
	*i = (*i & ~0xff00u) | ((uint32_t)a & 0xff) << 8;
}

static void set_c(uint32_t *i, int c)
{
	*i = (*i & 0x00ffffffu) | ((uint32_t)c & 0xff) << 24;
}

void kp_checkstack(struct kp_state *S, struct kp_fstate *fs, int n)
{
	int need = fs->freereg + n;

	if (need > KTAP_MAX_REGS)
		kp_fatal(S, S->line, S->col, KP_E_REGS, KTAP_MAX_REGS);
	if ((uint32_t)need > fs->f->maxregs)
		fs->f->maxregs = (uint32_t)need;
}

void kp_reserve(struct kp_state *S, struct kp_fstate *fs, int n)
{
	kp_checkstack(S, fs, n);
	fs->freereg += n;
}

void kp_freereg(struct kp_fstate *fs, int reg)
{
	if (reg >= fs->nactvar && fs->freereg > fs->nactvar)
		fs->freereg--;
}

void kp_freeexp(struct kp_fstate *fs, struct kp_exp *e)
{
	if (e->k == VNONRELOC)
		kp_freereg(fs, e->u.info);
}

static void freeregs(struct kp_fstate *fs, int r1, int r2)
{
	if (r1 > r2) {
		kp_freereg(fs, r1);
		kp_freereg(fs, r2);
	} else {
		kp_freereg(fs, r2);
		kp_freereg(fs, r1);
	}
}

/* ---- jumps ---- */

static int getjump(struct kp_fstate *fs, int pc)
{
	int off = KTAP_SBX(fs->f->code[pc]);

	return off == KP_NO_JUMP ? KP_NO_JUMP : pc + 1 + off;
}

void kp_fixjump(struct kp_state *S, struct kp_fstate *fs, int pc, int dest)
{
	int off = dest - (pc + 1);
	uint32_t *i = &fs->f->code[pc];

	if (off < -32768 || off > 32767)
		kp_fatal(S, S->line, S->col, KP_E_FUNC_SIZE);
	*i = (*i & 0xffffu) | ((uint32_t)off & 0xffffu) << 16;
}

int kp_jump(struct kp_state *S, struct kp_fstate *fs)
{
	return kp_code_asbx(S, fs, KTAP_OP_JMP, 0, KP_NO_JUMP);
}

void kp_concat(struct kp_state *S, struct kp_fstate *fs, int *l1, int l2)
{
	int list, next;

	if (l2 == KP_NO_JUMP)
		return;
	if (*l1 == KP_NO_JUMP) {
		*l1 = l2;
		return;
	}
	list = *l1;
	while ((next = getjump(fs, list)) != KP_NO_JUMP)
		list = next;
	kp_fixjump(S, fs, list, l2);
}

void kp_patchlist(struct kp_state *S, struct kp_fstate *fs, int list,
		  int target)
{
	while (list != KP_NO_JUMP) {
		int next = getjump(fs, list);

		kp_fixjump(S, fs, list, target);
		list = next;
	}
}

void kp_patchtohere(struct kp_state *S, struct kp_fstate *fs, int list)
{
	kp_patchlist(S, fs, list, (int)fs->f->ncode);
}

/* Flip the sense of the comparison before the JMP of e (a VJMP). */
static void invertjump(struct kp_fstate *fs, struct kp_exp *e)
{
	uint32_t *i = &fs->f->code[e->u.info - 1];

	set_a(i, !KTAP_A(*i));
}

/* ---- expressions ---- */

void kp_init_exp(struct kp_exp *e, enum kp_expkind k, int info)
{
	memset(e, 0, sizeof(*e));
	e->k = k;
	e->u.info = info;
	e->t = e->f = KP_NO_JUMP;
}

static int hasjumps(const struct kp_exp *e)
{
	return e->t != e->f;
}

void kp_setcallresult(struct kp_fstate *fs, struct kp_exp *e, int want)
{
	uint32_t *i;

	if (e->k != VCALL)
		return;
	i = &fs->f->code[e->u.info];
	if (KTAP_OP(*i) == KTAP_OP_CALL)
		set_c(i, want);
}

void kp_dischargevars(struct kp_state *S, struct kp_fstate *fs,
		      struct kp_exp *e)
{
	switch (e->k) {
	case VLOCAL:
		e->k = VNONRELOC;
		break;
	case VUPVAL:
		e->u.info = kp_code_abc(S, fs, KTAP_OP_GETUPVAL, 0, e->u.info, 0);
		e->k = VRELOC;
		break;
	case VGLOBAL:
		e->u.info = kp_code_abx(S, fs, KTAP_OP_GETGLOBAL, 0, e->u.info);
		e->k = VRELOC;
		break;
	case VINDEXED: {
		int t = e->u.ind.t, key = e->u.ind.key, keyk = e->u.ind.keyk;

		if (keyk)
			kp_freereg(fs, t);
		else
			freeregs(fs, t, key);
		e->u.info = kp_code_abc(S, fs, keyk ? KTAP_OP_GETFIELD :
					KTAP_OP_GETTABLE, 0, t, key);
		e->k = VRELOC;
		break;
	}
	case VCALL:
		kp_setcallresult(fs, e, 1);
		e->u.info = KTAP_A(fs->f->code[e->u.info]);
		e->k = VNONRELOC;
		break;
	default:
		break;
	}
}

static void loadint(struct kp_state *S, struct kp_fstate *fs, int reg,
		    int64_t v)
{
	if (v >= -32768 && v <= 32767)
		kp_code_asbx(S, fs, KTAP_OP_LOADI, reg, (int)v);
	else
		kp_code_abx(S, fs, KTAP_OP_LOADK, reg, kp_const_int(S, v));
}

static void discharge2reg(struct kp_state *S, struct kp_fstate *fs,
			  struct kp_exp *e, int reg)
{
	kp_dischargevars(S, fs, e);
	switch (e->k) {
	case VVOID:	/* a statement-only call used as a value: nil */
	case VNIL:
		kp_code_abc(S, fs, KTAP_OP_LOADNIL, reg, 0, 0);
		break;
	case VTRUE:
	case VFALSE:
		kp_code_abc(S, fs, KTAP_OP_LOADBOOL, reg, e->k == VTRUE, 0);
		break;
	case VKINT:
		loadint(S, fs, reg, e->u.ival);
		break;
	case VKSTR:
		kp_code_abx(S, fs, KTAP_OP_LOADK, reg,
			    kp_const_str(S, e->u.str.s, e->u.str.len));
		break;
	case VRELOC:
		set_a(&fs->f->code[e->u.info], reg);
		break;
	case VNONRELOC:
		if (reg != e->u.info)
			kp_code_abc(S, fs, KTAP_OP_MOVE, reg, e->u.info, 0);
		break;
	default:	/* VJMP: nothing to do */
		return;
	}
	e->u.info = reg;
	e->k = VNONRELOC;
}

void kp_exp2reg(struct kp_state *S, struct kp_fstate *fs, struct kp_exp *e,
		int reg)
{
	discharge2reg(S, fs, e, reg);
	if (e->k == VJMP)
		kp_concat(S, fs, &e->t, e->u.info);
	if (hasjumps(e)) {
		int fj = e->k == VJMP ? KP_NO_JUMP : kp_jump(S, fs);
		int p_f = (int)fs->f->ncode, p_t;

		kp_code_abc(S, fs, KTAP_OP_LOADBOOL, reg, 0, 0);
		kp_code_asbx(S, fs, KTAP_OP_JMP, 0, 1);
		p_t = (int)fs->f->ncode;
		kp_code_abc(S, fs, KTAP_OP_LOADBOOL, reg, 1, 0);
		kp_patchtohere(S, fs, fj);
		kp_patchlist(S, fs, e->f, p_f);
		kp_patchlist(S, fs, e->t, p_t);
	}
	e->f = e->t = KP_NO_JUMP;
	e->u.info = reg;
	e->k = VNONRELOC;
}

void kp_exp2nextreg(struct kp_state *S, struct kp_fstate *fs,
		    struct kp_exp *e)
{
	kp_dischargevars(S, fs, e);
	kp_freeexp(fs, e);
	kp_reserve(S, fs, 1);
	kp_exp2reg(S, fs, e, fs->freereg - 1);
}

int kp_exp2anyreg(struct kp_state *S, struct kp_fstate *fs,
		  struct kp_exp *e)
{
	kp_dischargevars(S, fs, e);
	if (e->k == VNONRELOC) {
		if (!hasjumps(e))
			return e->u.info;
		if (e->u.info >= fs->nactvar) {
			kp_exp2reg(S, fs, e, e->u.info);
			return e->u.info;
		}
	}
	kp_exp2nextreg(S, fs, e);
	return e->u.info;
}

void kp_exp2val(struct kp_state *S, struct kp_fstate *fs, struct kp_exp *e)
{
	if (hasjumps(e))
		kp_exp2anyreg(S, fs, e);
	else
		kp_dischargevars(S, fs, e);
}

void kp_storevar(struct kp_state *S, struct kp_fstate *fs,
		 struct kp_exp *var, struct kp_exp *ex)
{
	int r;

	switch (var->k) {
	case VLOCAL:
		kp_freeexp(fs, ex);
		kp_exp2reg(S, fs, ex, var->u.info);
		return;
	case VUPVAL:
		r = kp_exp2anyreg(S, fs, ex);
		kp_code_abc(S, fs, KTAP_OP_SETUPVAL, r, var->u.info, 0);
		break;
	case VGLOBAL:
		r = kp_exp2anyreg(S, fs, ex);
		kp_code_abx(S, fs, KTAP_OP_SETGLOBAL, r, var->u.info);
		break;
	case VINDEXED:
		r = kp_exp2anyreg(S, fs, ex);
		kp_code_abc(S, fs, var->u.ind.keyk ? KTAP_OP_SETFIELD :
			    KTAP_OP_SETTABLE, var->u.ind.t, var->u.ind.key, r);
		break;
	default:
		kp_fatal(S, S->line, S->col, KP_E_BAD_TARGET);
	}
	kp_freeexp(fs, ex);
}

void kp_indexed(struct kp_state *S, struct kp_fstate *fs, struct kp_exp *t,
		struct kp_exp *k)
{
	int tr = t->u.info;

	if (k->k == VKSTR && !hasjumps(k)) {
		int c = kp_const_str(S, k->u.str.s, k->u.str.len);

		if (c <= 255) {
			t->u.ind.t = tr;
			t->u.ind.key = c;
			t->u.ind.keyk = 1;
			t->k = VINDEXED;
			return;
		}
	}
	t->u.ind.key = kp_exp2anyreg(S, fs, k);
	t->u.ind.t = tr;
	t->u.ind.keyk = 0;
	t->k = VINDEXED;
}

/*
 * Emit a jump taken when the truth of register @reg equals @cond and
 * return it: TEST reg cond skips the jump when the truth differs.
 */
int kp_jumpif(struct kp_state *S, struct kp_fstate *fs, int reg, int cond)
{
	kp_code_abc(S, fs, KTAP_OP_TEST, reg, 0, cond);
	return kp_jump(S, fs);
}

/* Jump when the truth of e equals cond. */
static int jumponcond(struct kp_state *S, struct kp_fstate *fs,
		      struct kp_exp *e, int cond)
{
	if (e->k != VNONRELOC) {
		kp_reserve(S, fs, 1);
		discharge2reg(S, fs, e, fs->freereg - 1);
	}
	kp_freeexp(fs, e);
	return kp_jumpif(S, fs, e->u.info, cond);
}

void kp_goiftrue(struct kp_state *S, struct kp_fstate *fs, struct kp_exp *e)
{
	int pc;

	kp_dischargevars(S, fs, e);
	switch (e->k) {
	case VKINT:
	case VKSTR:
	case VTRUE:
		pc = KP_NO_JUMP;
		break;
	case VNIL:
	case VFALSE:
		pc = kp_jump(S, fs);
		break;
	case VJMP:
		invertjump(fs, e);
		pc = e->u.info;
		break;
	default:
		pc = jumponcond(S, fs, e, 0);
	}
	kp_concat(S, fs, &e->f, pc);
	kp_patchtohere(S, fs, e->t);
	e->t = KP_NO_JUMP;
}

void kp_goiffalse(struct kp_state *S, struct kp_fstate *fs,
		  struct kp_exp *e)
{
	int pc;

	kp_dischargevars(S, fs, e);
	switch (e->k) {
	case VNIL:
	case VFALSE:
		pc = KP_NO_JUMP;
		break;
	case VKINT:
	case VKSTR:
	case VTRUE:
		pc = kp_jump(S, fs);
		break;
	case VJMP:
		pc = e->u.info;
		break;
	default:
		pc = jumponcond(S, fs, e, 1);
	}
	kp_concat(S, fs, &e->t, pc);
	kp_patchtohere(S, fs, e->f);
	e->f = KP_NO_JUMP;
}

static int isconst(const struct kp_exp *e)
{
	return (e->k == VKINT || e->k == VKSTR) && !hasjumps(e);
}

void kp_prefix(struct kp_state *S, struct kp_fstate *fs, enum kp_unop op,
	       struct kp_exp *e)
{
	int r, tmp;

	if (op == OPR_MINUS) {
		if (e->k == VKINT && !hasjumps(e)) {
			e->u.ival = (int64_t)(0 - (uint64_t)e->u.ival);
			return;
		}
		r = kp_exp2anyreg(S, fs, e);
		kp_freeexp(fs, e);
		e->u.info = kp_code_abc(S, fs, KTAP_OP_UNM, 0, r, 0);
		e->k = VRELOC;
		return;
	}
	kp_dischargevars(S, fs, e);
	switch (e->k) {
	case VNIL:
	case VFALSE:
		e->k = VTRUE;
		break;
	case VKINT:
	case VKSTR:
	case VTRUE:
		e->k = VFALSE;
		break;
	case VJMP:
		invertjump(fs, e);
		break;
	default:
		r = kp_exp2anyreg(S, fs, e);
		kp_freeexp(fs, e);
		e->u.info = kp_code_abc(S, fs, KTAP_OP_NOT, 0, r, 0);
		e->k = VRELOC;
	}
	tmp = e->f;
	e->f = e->t;
	e->t = tmp;
}

void kp_infix(struct kp_state *S, struct kp_fstate *fs, enum kp_binop op,
	      struct kp_exp *v)
{
	switch (op) {
	case OPR_AND:
		kp_goiftrue(S, fs, v);
		break;
	case OPR_OR:
		kp_goiffalse(S, fs, v);
		break;
	default:
		if (!isconst(v))
			kp_exp2anyreg(S, fs, v);
	}
}

static const int arith_op[] = {
	[OPR_ADD] = KTAP_OP_ADD, [OPR_SUB] = KTAP_OP_SUB,
	[OPR_MUL] = KTAP_OP_MUL, [OPR_DIV] = KTAP_OP_DIV,
	[OPR_MOD] = KTAP_OP_MOD,
};

#define KOP(op)	((op) - KTAP_OP_ADD + KTAP_OP_ADDK)

/* Fold e1 op e2 on integer constants the way the VM computes it. */
static int constfold(struct kp_state *S, enum kp_binop op, struct kp_exp *e1,
		     const struct kp_exp *e2)
{
	uint64_t a, b;
	int64_t r;

	if (e1->k != VKINT || e2->k != VKINT || hasjumps(e1) || hasjumps(e2))
		return 0;
	a = (uint64_t)e1->u.ival;
	b = (uint64_t)e2->u.ival;
	switch (op) {
	case OPR_ADD:
		r = (int64_t)(a + b);
		break;
	case OPR_SUB:
		r = (int64_t)(a - b);
		break;
	case OPR_MUL:
		r = (int64_t)(a * b);
		break;
	case OPR_DIV:
	case OPR_MOD:
		if (!b) {
			kp_error(S, S->line, S->col, KP_E_DIV_ZERO);
			return 0;
		}
		if (e2->u.ival == -1)
			r = op == OPR_DIV ? (int64_t)(0 - a) : 0;
		else if (op == OPR_DIV)
			r = e1->u.ival / e2->u.ival;
		else
			r = e1->u.ival % e2->u.ival;
		break;
	default:
		return 0;
	}
	e1->u.ival = r;
	return 1;
}

static void codearith(struct kp_state *S, struct kp_fstate *fs,
		      enum kp_binop op, struct kp_exp *e1, struct kp_exp *e2)
{
	int o = arith_op[op], b, c, k;

	if (e2->k == VKINT && !hasjumps(e2)) {
		k = kp_const_int(S, e2->u.ival);
		if (k <= 255) {
			b = kp_exp2anyreg(S, fs, e1);
			kp_freeexp(fs, e1);
			e1->u.info = kp_code_abc(S, fs, KOP(o), 0, b, k);
			e1->k = VRELOC;
			return;
		}
	}
	if ((op == OPR_ADD || op == OPR_MUL) && e1->k == VKINT &&
	    !hasjumps(e1)) {
		k = kp_const_int(S, e1->u.ival);
		if (k <= 255) {
			b = kp_exp2anyreg(S, fs, e2);
			kp_freeexp(fs, e2);
			e1->u.info = kp_code_abc(S, fs, KOP(o), 0, b, k);
			e1->k = VRELOC;
			return;
		}
	}
	c = kp_exp2anyreg(S, fs, e2);
	b = kp_exp2anyreg(S, fs, e1);
	freeregs(fs, b, c);
	e1->u.info = kp_code_abc(S, fs, o, 0, b, c);
	e1->k = VRELOC;
}

static void codeconcat(struct kp_state *S, struct kp_fstate *fs,
		       struct kp_exp *e1, struct kp_exp *e2)
{
	int b, c;

	if (isconst(e1) && isconst(e2)) {
		char n1[24], n2[24];
		const char *s1 = e1->u.str.s, *s2 = e2->u.str.s;
		uint32_t l1 = e1->u.str.len, l2 = e2->u.str.len;
		char *s;

		if (e1->k == VKINT) {
			l1 = (uint32_t)snprintf(n1, sizeof(n1), "%lld",
						(long long)e1->u.ival);
			s1 = n1;
		}
		if (e2->k == VKINT) {
			l2 = (uint32_t)snprintf(n2, sizeof(n2), "%lld",
						(long long)e2->u.ival);
			s2 = n2;
		}
		if ((uint64_t)l1 + l2 <= KP_MAX_STRING) {
			s = kp_alloc(&S->arena, l1 + l2 + 1);
			memcpy(s, s1, l1);
			memcpy(s + l1, s2, l2);
			e1->k = VKSTR;
			e1->u.str.s = s;
			e1->u.str.len = l1 + l2;
			return;
		}
	}
	c = kp_exp2anyreg(S, fs, e2);
	b = kp_exp2anyreg(S, fs, e1);
	freeregs(fs, b, c);
	e1->u.info = kp_code_abc(S, fs, KTAP_OP_CONCAT, 0, b, c);
	e1->k = VRELOC;
}

static void codecomp(struct kp_state *S, struct kp_fstate *fs,
		     enum kp_binop op, struct kp_exp *e1, struct kp_exp *e2)
{
	int b, c, k;

	if (op == OPR_EQ || op == OPR_NE) {
		struct kp_exp *ke = isconst(e2) ? e2 : isconst(e1) ? e1 : NULL;
		struct kp_exp *re = ke == e2 ? e1 : e2;

		if (ke) {
			k = ke->k == VKINT ? kp_const_int(S, ke->u.ival) :
			    kp_const_str(S, ke->u.str.s, ke->u.str.len);
			if (k <= 255) {
				b = kp_exp2anyreg(S, fs, re);
				kp_freeexp(fs, re);
				kp_code_abc(S, fs, KTAP_OP_EQK, op == OPR_EQ, b, k);
				goto done;
			}
		}
	}
	c = kp_exp2anyreg(S, fs, e2);
	b = kp_exp2anyreg(S, fs, e1);
	freeregs(fs, b, c);
	switch (op) {
	case OPR_EQ:
	case OPR_NE:
		kp_code_abc(S, fs, KTAP_OP_EQ, op == OPR_EQ, b, c);
		break;
	case OPR_LT:
		kp_code_abc(S, fs, KTAP_OP_LT, 1, b, c);
		break;
	case OPR_LE:
		kp_code_abc(S, fs, KTAP_OP_LE, 1, b, c);
		break;
	case OPR_GT:
		kp_code_abc(S, fs, KTAP_OP_LT, 1, c, b);
		break;
	default:
		kp_code_abc(S, fs, KTAP_OP_LE, 1, c, b);
		break;
	}
done:
	e1->u.info = kp_jump(S, fs);
	e1->k = VJMP;
}

void kp_posfix(struct kp_state *S, struct kp_fstate *fs, enum kp_binop op,
	       struct kp_exp *e1, struct kp_exp *e2)
{
	switch (op) {
	case OPR_AND:
		kp_dischargevars(S, fs, e2);
		kp_concat(S, fs, &e2->f, e1->f);
		*e1 = *e2;
		break;
	case OPR_OR:
		kp_dischargevars(S, fs, e2);
		kp_concat(S, fs, &e2->t, e1->t);
		*e1 = *e2;
		break;
	case OPR_CONCAT:
		codeconcat(S, fs, e1, e2);
		break;
	case OPR_ADD: case OPR_SUB: case OPR_MUL: case OPR_DIV: case OPR_MOD:
		if (!constfold(S, op, e1, e2))
			codearith(S, fs, op, e1, e2);
		break;
	default:
		codecomp(S, fs, op, e1, e2);
	}
}

/* ---- the image ---- */

static uint32_t align_up(uint32_t v, uint32_t a)
{
	return (v + a - 1) & ~(a - 1);
}

void *kp_image_write(struct kp_state *S, uint32_t *lenp)
{
	struct kp_image *I = S->img;
	struct ktap_bc_header h;
	uint64_t off, ncode = 0, nupv = 0;
	struct ktap_bc_proto *bp;
	uint32_t i, cpos, upos;
	char *img;

	for (i = 0; i < I->nprotos; i++) {
		ncode += I->protos[i]->ncode;
		nupv += I->protos[i]->nupv;
	}
	memset(&h, 0, sizeof(h));
	h.magic = KTAP_BC_MAGIC;
	h.abi_version = KTAP_ABI_VERSION;
	h.hdr_size = sizeof(h);
	h.nglobals = I->nglobals;
	h.chunkname = kp_strtab(S, S->file, (uint32_t)strlen(S->file));
	for (i = 0; i < I->nprotos; i++) {
		if (I->protos[i]->name)
			kp_strtab(S, I->protos[i]->name,
				  (uint32_t)strlen(I->protos[i]->name));
	}

	off = align_up(sizeof(h), 8);
	h.protos.off = (uint32_t)off;
	h.protos.count = I->nprotos;
	off = align_up((uint32_t)(off + (uint64_t)I->nprotos * sizeof(*bp)), 8);
	h.consts.off = (uint32_t)off;
	h.consts.count = I->nconsts;
	off += (uint64_t)I->nconsts * sizeof(struct ktap_bc_const);
	h.strtab.off = (uint32_t)off;
	h.strtab.count = I->strlen;
	off = align_up((uint32_t)(off + I->strlen), 8);
	if (off + ncode * 8 + nupv * 2 + (uint64_t)I->nprobes * 40 +
	    (uint64_t)I->nwords * 4 + 64 > KTAP_MAX_IMAGE) {
		kp_error(S, 0, 0, KP_E_IMAGE_SIZE, KTAP_MAX_IMAGE);
		kp_flush_errors(S);
		return NULL;
	}
	h.code.off = (uint32_t)off;
	h.code.count = (uint32_t)ncode;
	off += ncode * 4;
	h.lines.off = (uint32_t)off;
	h.lines.count = (uint32_t)ncode;
	off += ncode * 4;
	h.upvals.off = (uint32_t)off;
	h.upvals.count = (uint32_t)nupv;
	off = align_up((uint32_t)(off + nupv * 2), 8);
	h.probes.off = (uint32_t)off;
	h.probes.count = I->nprobes;
	off += (uint64_t)I->nprobes * sizeof(struct ktap_bc_probe);
	h.words.off = (uint32_t)off;
	h.words.count = I->nwords;
	off += (uint64_t)I->nwords * 4;
	h.total_size = (uint32_t)off;
	/* empty sections point at the header end, which is always valid */
	if (!I->nconsts)
		h.consts.off = 0;
	if (!ncode) {
		h.code.off = 0;
		h.lines.off = 0;
	}
	if (!nupv)
		h.upvals.off = 0;
	if (!I->nprobes)
		h.probes.off = 0;
	if (!I->nwords)
		h.words.off = 0;
	if (!I->strlen)
		h.strtab.off = 0;

	img = calloc(1, (size_t)off);
	if (!img) {
		fputs("ktap: out of memory\n", stderr);
		exit(2);
	}
	memcpy(img, &h, sizeof(h));
	bp = (struct ktap_bc_proto *)(img + h.protos.off);
	cpos = upos = 0;
	for (i = 0; i < I->nprotos; i++) {
		struct kp_proto *f = I->protos[i];

		bp[i].code_start = cpos;
		bp[i].ncode = f->ncode;
		bp[i].upval_start = upos;
		bp[i].nupvals = (uint16_t)f->nupv;
		bp[i].nparams = (uint8_t)f->nparams;
		bp[i].nregs = (uint8_t)f->maxregs;
		bp[i].parent = i ? f->parent : KTAP_BC_NO_STR;
		bp[i].name = f->name ? kp_strtab(S, f->name,
				(uint32_t)strlen(f->name)) : KTAP_BC_NO_STR;
		bp[i].line = f->line;
		memcpy(img + h.code.off + cpos * 4, f->code, f->ncode * 4);
		memcpy(img + h.lines.off + cpos * 4, f->lines, f->ncode * 4);
		if (f->nupv)
			memcpy(img + h.upvals.off + upos * 2, f->upv,
			       f->nupv * 2);
		cpos += f->ncode;
		upos += f->nupv;
	}
	if (I->nconsts)
		memcpy(img + h.consts.off, I->consts,
		       I->nconsts * sizeof(*I->consts));
	if (I->strlen)
		memcpy(img + h.strtab.off, I->strtab, I->strlen);
	if (I->nprobes)
		memcpy(img + h.probes.off, I->probes,
		       I->nprobes * sizeof(*I->probes));
	if (I->nwords)
		memcpy(img + h.words.off, I->words, I->nwords * 4);
	*lenp = (uint32_t)off;
	return img;
}
