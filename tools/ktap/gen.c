// SPDX-License-Identifier: GPL-2.0
/*
 * Code generator: the resolved syntax tree to instructions.
 *
 * Registers. Each function's frame is a stack: a variable takes the
 * register at the top when it is declared and keeps it until its block
 * ends; temporaries are taken above the variables while one statement
 * is compiled and all given back when it ends. A variable that a
 * nested function captures keeps its register until the function
 * returns, since the VM closes upvalues only on RETURN.
 *
 * Expressions are compiled either into a register the caller chose
 * (to_reg) or into whatever register already holds the value (any_reg:
 * a variable is read in place). A condition is a comparison into a
 * temporary (or the value itself) and a JMPT/JMPF on it: cond_jump()
 * jumps to a label when the condition has the wanted truth, so `and`,
 * `or` and `not` cost only jumps. No instruction skips another: every
 * branch names its target.
 *
 * Labels. A forward jump is recorded in its label's list and patched
 * when the label is placed; a backward jump is emitted complete.
 */
#include <string.h>
#include "ast.h"
#include "image.h"
#include "events.h"

#define MAX_CODE	(KTAP_MAX_IMAGE / 8)

struct kp_label {
	int		pc;		/* -1 until placed */
	uint32_t	*pcs;		/* jumps waiting for it */
	uint32_t	n, cap;
};

struct kp_gen {
	struct kp_state	*S;
	struct kp_ast	*ast;
	struct kp_func	*fn;
	struct kp_proto	*f;
	int		top;		/* first free register */
	int		vtop;		/* registers held by variables */
	struct kp_label	*brk;		/* innermost loop's exit */
	uint32_t	line, col;	/* node being compiled */
	struct kp_var	**vars;		/* declared, innermost last */
	uint32_t	nvars, varcap;
};

/* ---- instructions and registers ---- */

static int emit(struct kp_gen *G, uint32_t insn)
{
	struct kp_proto *f = G->f;

	if (f->ncode >= MAX_CODE)
		kp_fatal(G->S, G->line, G->col, KP_E_FUNC_SIZE);
	kp_grow(&G->S->arena, (void **)&f->code, &f->codecap, f->ncode + 1, 4);
	kp_grow(&G->S->arena, (void **)&f->lines, &f->linecap, f->ncode + 1,
		4);
	f->code[f->ncode] = insn;
	f->lines[f->ncode] = G->line;
	return (int)f->ncode++;
}

static int emit_abc(struct kp_gen *G, int op, int a, int b, int c)
{
	return emit(G, KTAP_INSN(op, a, b, c));
}

static int emit_abx(struct kp_gen *G, int op, int a, int bx)
{
	return emit(G, KTAP_INSN_BX(op, a, (uint32_t)bx));
}

/* Blame @n for what follows (image.c reports limits at S->line). */
static void at(struct kp_gen *G, const struct kp_node *n)
{
	G->line = G->S->line = n->line;
	G->col = G->S->col = n->col;
}

/* Take @n registers at the top; returns the first. */
static int take(struct kp_gen *G, int n)
{
	int r = G->top;

	if (G->top + n > KTAP_MAX_REGS)
		kp_fatal(G->S, G->line, G->col, KP_E_REGS, KTAP_MAX_REGS);
	G->top += n;
	if ((uint32_t)G->top > G->f->maxregs)
		G->f->maxregs = (uint32_t)G->top;
	return r;
}

static int const_str(struct kp_gen *G, const char *s, uint32_t len)
{
	return kp_const_str(G->S, s, len);
}

static void load_int(struct kp_gen *G, int r, int64_t v)
{
	if (v >= -32768 && v <= 32767)
		emit_abx(G, KTAP_OP_LOADI, r, (int)v);
	else
		emit_abx(G, KTAP_OP_LOADK, r, kp_const_int(G->S, v));
}

/* ---- labels ---- */

static void patch(struct kp_gen *G, uint32_t pc, int target)
{
	int off = target - (int)pc - 1;
	uint32_t *i = &G->f->code[pc];

	if (off < -32768 || off > 32767)
		kp_fatal(G->S, G->line, G->col, KP_E_FUNC_SIZE);
	*i = (*i & 0xffff) | ((uint32_t)off & 0xffff) << 16;
}

/* Emit @op (JMP, JMPT, JMPF, ITERNEXT) with A = @a toward @l. */
static void jump_op(struct kp_gen *G, int op, int a, struct kp_label *l)
{
	uint32_t pc = (uint32_t)emit_abx(G, op, a, 0);

	if (l->pc >= 0) {
		patch(G, pc, l->pc);
		return;
	}
	kp_grow(&G->S->arena, (void **)&l->pcs, &l->cap, l->n + 1,
		sizeof(*l->pcs));
	l->pcs[l->n++] = pc;
}

static void jump(struct kp_gen *G, struct kp_label *l)
{
	jump_op(G, KTAP_OP_JMP, 0, l);
}

static void place(struct kp_gen *G, struct kp_label *l)
{
	uint32_t i;

	l->pc = (int)G->f->ncode;
	for (i = 0; i < l->n; i++)
		patch(G, l->pcs[i], l->pc);
	l->n = 0;
}

static void label_init(struct kp_label *l)
{
	memset(l, 0, sizeof(*l));
	l->pc = -1;
}

/* ---- variables ---- */

static void declare(struct kp_gen *G, struct kp_var *v, int reg)
{
	v->reg = reg;
	if (reg + 1 > G->vtop)
		G->vtop = reg + 1;
	kp_grow(&G->S->arena, (void **)&G->vars, &G->varcap, G->nvars + 1,
		sizeof(*G->vars));
	G->vars[G->nvars++] = v;
}

/*
 * Leave a scope opened when G->nvars was @mark and the variables' top
 * was @vtop: free the registers of its variables, except up to the
 * highest one a closure captured.
 */
static void leave(struct kp_gen *G, uint32_t mark, int vtop)
{
	uint32_t i;

	for (i = mark; i < G->nvars; i++)
		if (G->vars[i]->captured && G->vars[i]->reg + 1 > vtop)
			vtop = G->vars[i]->reg + 1;
	G->nvars = mark;
	G->vtop = vtop;
	G->top = vtop;
}

/* ---- expressions ---- */

static void to_reg(struct kp_gen *G, struct kp_node *n, int r);
static void cond_jump(struct kp_gen *G, struct kp_node *n, int truth,
		      struct kp_label *l);
static uint32_t gen_func(struct kp_gen *G, struct kp_func *fn);

/* A register holding the value of @n: a variable's own, or a new one. */
static int any_reg(struct kp_gen *G, struct kp_node *n)
{
	int r;

	if (n->kind == KP_N_NAME && n->sym.kind == KP_SYM_LOCAL)
		return n->sym.var->reg;
	r = take(G, 1);
	to_reg(G, n, r);
	return r;
}

/* A constant-table index for a string key usable in an 8-bit operand. */
static int small_key(struct kp_gen *G, const struct kp_node *k)
{
	int idx;

	if (k->kind != KP_N_STR)
		return -1;
	idx = const_str(G, k->str.s, k->str.len);
	return idx <= 255 ? idx : -1;
}

static int name_key_reg(struct kp_gen *G, const struct kp_str *name)
{
	int r = take(G, 1);

	emit_abx(G, KTAP_OP_LOADK, r, const_str(G, name->s, name->len));
	return r;
}

/* R(r) := R(t)[name] */
static void get_field(struct kp_gen *G, int r, int t, const struct kp_str *s)
{
	int k = const_str(G, s->s, s->len), mark = G->top;

	if (k <= 255) {
		emit_abc(G, KTAP_OP_GETFIELD, r, t, k);
		return;
	}
	emit_abc(G, KTAP_OP_GETTABLE, r, t, name_key_reg(G, s));
	G->top = mark;
}

/*
 * Base register of a call whose result goes to @r: @r itself when it
 * is the topmost temporary (the arguments go right above it), never a
 * variable's register, which the callee or an argument may still read.
 */
static int call_base(struct kp_gen *G, int r)
{
	return r >= G->vtop && r + 1 == G->top ? r : take(G, 1);
}

static int is_param(const struct kp_var *v)
{
	const struct kp_var *p;

	for (p = v->fn ? v->fn->params : NULL; p; p = p->next)
		if (p == v)
			return 1;
	return 0;
}

/*
 * print(e.tostring()), printf(fmt, ..., e.tostring()): print the event
 * itself, which prints the same text. The kernel then stores the
 * event's record and ftrace's reader formats it with the event's own
 * output function, in process context, instead of the handler calling
 * that function in probe context (possibly NMI). Done for a parameter
 * the function never assigns (known once
 * every name is resolved): a handler's event, or the event of a
 * function given to kdebug.probe() by name.
 */
static void print_events(struct kp_node *call)
{
	struct kp_node *a, *o, *next;

	for (a = call->list; a; a = a->next) {
		if (a->kind == KP_N_CALL && a->a->kind == KP_N_FIELD)
			o = a->a;		/* e.tostring() */
		else if (a->kind == KP_N_METHOD)
			o = a;			/* e:tostring() */
		else
			continue;
		if (strcmp(o->str.s, "tostring") || a->list)
			continue;
		o = o->a;
		if (o->kind != KP_N_NAME || o->sym.kind != KP_SYM_LOCAL ||
		    o->sym.var->assigned ||
		    !(o->sym.var->is_event || is_param(o->sym.var)))
			continue;
		next = a->next;
		*a = *o;
		a->next = next;
	}
}

static void gen_call_n(struct kp_gen *G, struct kp_node *n, int r, int nres);

/*
 * Values of @e, the last of a list, from @r up when it is a call whose
 * values all go there (arity.c); its value count.
 */
static int spread_to_regs(struct kp_gen *G, struct kp_node *e, int r)
{
	int k = (int)e->nval;

	if (k <= 1) {
		to_reg(G, e, r);
		return 1;
	}
	gen_call_n(G, e, r, k);
	take(G, k - 1);
	return k;
}

/* A builtin taking any number of arguments takes all of a call's values. */
static int spreads(int id)
{
	int min, max;

	kp_builtin_arity(id, &min, &max);
	return max == KP_ANY_ARGS;
}

/*
 * Arguments of a call in consecutive registers; the last one passes on
 * all its values when @spread (script functions and builtins taking any
 * number, as print(f()) does in Lua).
 */
static int args_to_regs(struct kp_gen *G, struct kp_node *a, int spread)
{
	int n = 0;

	for (; a; a = a->next, n++) {
		at(G, a);
		if (spread && !a->next)
			return n + spread_to_regs(G, a, take(G, 1));
		to_reg(G, a, take(G, 1));
	}
	return n;
}

/* ansi.set_color*() of run-time values: "\033[" a ";" b ... "m" */
static void ansi_concat(struct kp_gen *G, struct kp_node *n, int r)
{
	int mark = G->top, sep;
	struct kp_node *a;

	emit_abx(G, KTAP_OP_LOADK, r, const_str(G, "\033[", 2));
	for (a = n->list; a; a = a->next) {
		emit_abc(G, KTAP_OP_CONCAT, r, r, any_reg(G, a));
		sep = take(G, 1);
		emit_abx(G, KTAP_OP_LOADK, sep,
			 const_str(G, a->next ? ";" : "m", 1));
		emit_abc(G, KTAP_OP_CONCAT, r, r, sep);
		G->top = mark;
	}
}

/* CALLB of the kernel builtin @name: R(base) := name(R(base+1..+nargs)) */
static void callb(struct kp_gen *G, const char *name, int base, int nargs)
{
	emit_abc(G, KTAP_OP_CALLB, base, nargs, kp_builtin_ref(G->S, name));
}

/* R(r) := R(r) / @div, a constant. */
static void div_const(struct kp_gen *G, int r, int64_t div)
{
	int k = kp_const_int(G->S, div), mark = G->top, t;

	if (k <= 255) {
		emit_abc(G, KTAP_OP_DIVK, r, r, k);
		return;
	}
	t = take(G, 1);
	load_int(G, t, div);
	emit_abc(G, KTAP_OP_DIV, r, r, t);
	G->top = mark;
}

/*
 * Builtin @id with its @nargs arguments in R(base+1)..: the kernel's
 * own by name, or a ktap 0.1 name lowered as kp_builtins[] says.
 */
static void call_builtin(struct kp_gen *G, int id, int base, int nargs)
{
	const struct kp_builtin *b = kp_builtin_get(id);

	switch (b->how) {
	case KP_BI_CALL:
		callb(G, b->name, base, nargs);
		break;
	case KP_BI_ALIAS:
		callb(G, b->kname, base, nargs);
		break;
	case KP_BI_DIVK:
		callb(G, b->kname, base, nargs);
		div_const(G, base, b->div);
		break;
	default:
		/* inplace_inc(t, k[, n]): one atomic update; no value */
		if (nargs < 3)
			load_int(G, take(G, 1), 1);
		emit_abc(G, KTAP_OP_INCTABLE, base + 1, base + 2, base + 3);
		emit_abc(G, KTAP_OP_LOADNIL, base, 0, 0);
		break;
	}
}

/*
 * A call whose first @nres values land in @r and up (@r is best the
 * topmost register: the call then needs no moves), or nowhere when
 * @r < 0 (@nres 0).
 */
static void gen_call_n(struct kp_gen *G, struct kp_node *n, int r, int nres)
{
	int mark = G->top, base, nargs, k;

	if (n->ansi_args) {
		if (r >= 0) {
			ansi_concat(G, n, r);
			return;
		}
		base = take(G, 2);
		ansi_concat(G, n, base + 1);
		callb(G, "printf", base, 1);
		G->top = mark;
		return;
	}
	if (n->ansi) {
		if (r >= 0) {
			emit_abx(G, KTAP_OP_LOADK, r,
				 const_str(G, n->ansi, n->ansi_len));
			return;
		}
		base = take(G, 2);
		emit_abx(G, KTAP_OP_LOADK, base + 1,
			 const_str(G, n->ansi, n->ansi_len));
		callb(G, "printf", base, 1);
		G->top = mark;
		return;
	}
	base = r >= 0 ? call_base(G, r) : take(G, 1);
	if (n->kind == KP_N_METHOD) {
		take(G, 1);
		to_reg(G, n->a, base + 1);
		get_field(G, base, base + 1, &n->str);
		nargs = 1 + args_to_regs(G, n->list, 1);
		at(G, n);
		emit_abc(G, KTAP_OP_CALL, base, nargs, nres);
	} else if (n->builtin >= 0) {
		if (!strcmp(kp_builtin_name(n->builtin), "print") ||
		    !strcmp(kp_builtin_name(n->builtin), "printf"))
			print_events(n);
		nargs = args_to_regs(G, n->list, spreads(n->builtin));
		at(G, n);
		call_builtin(G, n->builtin, base, nargs);
		if (nres > 1)	/* a builtin has one value */
			emit_abc(G, KTAP_OP_LOADNIL, base + 1, nres - 2, 0);
	} else {
		to_reg(G, n->a, base);
		nargs = args_to_regs(G, n->list, 1);
		at(G, n);
		emit_abc(G, KTAP_OP_CALL, base, nargs, nres);
	}
	if (nres > 1 && G->top < base + nres)
		take(G, base + nres - G->top);	/* the frame holds them all */
	/* in order: r + k can only be a source already moved */
	for (k = 0; r >= 0 && r != base && k < nres; k++)
		emit_abc(G, KTAP_OP_MOVE, r + k, base + k, 0);
	G->top = mark;
}

static void gen_call(struct kp_gen *G, struct kp_node *n, int r)
{
	gen_call_n(G, n, r, r >= 0);
}

/*
 * Whether @n, the last expression of a list that has targets left, fills
 * them all: a call of a script function can return several values. A
 * builtin, an ansi helper or a probe has one value (or none).
 */
static int fills_rest(const struct kp_node *n)
{
	if (n->kind == KP_N_METHOD)
		return 1;
	return n->kind == KP_N_CALL && n->builtin < 0 && !n->ansi &&
	       !n->ansi_args && !n->probe;
}

/*
 * The probe entry of this handler whose own events have format field
 * @name, or -1: the kernel resolves an EVFIELD's name against that
 * probe's tracepoints at attach and fails the attach if none has it.
 */
static int field_probe(const struct kp_evinfo *ev, const char *name)
{
	uint32_t i, j;

	if (!ev || !ev->fields || !ev->tracepoint ||
	    !strncmp(name, "common_", 7))
		return -1;
	for (i = 0; i < ev->nparts; i++)
		for (j = 0; j < ev->parts[i].nfields; j++)
			if (!strcmp(ev->parts[i].fields[j], name))
				return (int)ev->parts[i].probe;
	return -1;
}

/*
 * R(r) := field @name of the event, by EVFIELD when @e is this trace
 * handler's own event argument, never assigned, and the field is one
 * the kernel can resolve at attach; 0 when the caller must read it by
 * name instead.
 */
static int ev_field(struct kp_gen *G, int r, const struct kp_var *e,
		    const struct kp_str *name)
{
	const struct kp_probe *p = G->fn->probe;
	int probe, idx;

	if (!e->is_event || e->assigned || e->fn != G->fn || !p ||
	    p->kind != KP_PROBE_TRACE || strlen(name->s) != name->len)
		return 0;
	probe = field_probe(p->ev, name->s);
	if (probe < 0)
		return 0;
	idx = kp_field_ref(G->S, (uint32_t)probe, name->s);
	emit_abx(G, KTAP_OP_EVFIELD, r, idx);
	return 1;
}

static void gen_name(struct kp_gen *G, struct kp_node *n, int r)
{
	int base;

	switch (n->sym.kind) {
	case KP_SYM_LOCAL:
		if (n->sym.var->reg != r)
			emit_abc(G, KTAP_OP_MOVE, r, n->sym.var->reg, 0);
		break;
	case KP_SYM_UPVAL:
		emit_abc(G, KTAP_OP_GETUPVAL, r, n->sym.upval, 0);
		break;
	case KP_SYM_GLOBAL:
		emit_abx(G, KTAP_OP_GETGLOBAL, r, n->sym.global);
		break;
	case KP_SYM_BUILTIN:
		call_builtin(G, n->sym.builtin, r, 0);
		break;
	case KP_SYM_ARGN:
		base = call_base(G, r);
		load_int(G, take(G, 1), n->sym.argn);
		callb(G, "argn", base, 1);
		if (base != r)
			emit_abc(G, KTAP_OP_MOVE, r, base, 0);
		break;
	case KP_SYM_FIELD:
		if (!ev_field(G, r, n->sym.event, &n->sym.field))
			get_field(G, r, n->sym.event->reg, &n->sym.field);
		break;
	default:
		emit_abc(G, KTAP_OP_LOADNIL, r, 0, 0);
		break;
	}
}

static const int kp_arith_op[] = {
	[KP_OP_ADD] = KTAP_OP_ADD, [KP_OP_SUB] = KTAP_OP_SUB,
	[KP_OP_MUL] = KTAP_OP_MUL, [KP_OP_DIV] = KTAP_OP_DIV,
	[KP_OP_MOD] = KTAP_OP_MOD, [KP_OP_CONCAT] = KTAP_OP_CONCAT,
};

/* The constant index of integer @n if it fits an 8-bit operand, else -1. */
static int small_int(struct kp_gen *G, const struct kp_node *n)
{
	int k;

	if (n->kind != KP_N_INT)
		return -1;
	k = kp_const_int(G->S, n->ival);
	return k <= 255 ? k : -1;
}

/* R(r) := R(ra) op b, with the constant form when b is a small integer. */
static void arith_reg(struct kp_gen *G, int op, int r, int ra,
		      struct kp_node *b)
{
	int k = op == KP_OP_CONCAT ? -1 : small_int(G, b);
	int o = kp_arith_op[op];

	if (k >= 0) {
		emit_abc(G, o - KTAP_OP_ADD + KTAP_OP_ADDK, r, ra, k);
		return;
	}
	emit_abc(G, o, r, ra, any_reg(G, b));
}

/* A comparison, or `not` of one: its value is made by jumps. */
static int is_condition(const struct kp_node *n)
{
	if (n->kind == KP_N_UNOP && n->op == '!')
		return is_condition(n->a);
	return n->kind == KP_N_BINOP && n->op >= KP_OP_EQ &&
	       n->op <= KP_OP_GE;
}

static void compare_to(struct kp_gen *G, struct kp_node *n, int r);

/* R(r) := true or false, the truth of condition @n. */
static void bool_from_cond(struct kp_gen *G, struct kp_node *n, int r)
{
	if (n->kind == KP_N_UNOP) {
		bool_from_cond(G, n->a, r);
		emit_abc(G, KTAP_OP_NOT, r, r, 0);
		return;
	}
	compare_to(G, n, r);
	if (n->op == KP_OP_NE)
		emit_abc(G, KTAP_OP_NOT, r, r, 0);
}

static void gen_binop(struct kp_gen *G, struct kp_node *n, int r)
{
	struct kp_label l;
	int k, ra;

	switch (n->op) {
	case KP_OP_AND:
	case KP_OP_OR:
		label_init(&l);
		to_reg(G, n->a, r);
		at(G, n);
		/* the left value stands when it decides the result */
		jump_op(G, n->op == KP_OP_OR ? KTAP_OP_JMPT : KTAP_OP_JMPF, r,
			&l);
		to_reg(G, n->b, r);
		place(G, &l);
		return;
	case KP_OP_ADD: case KP_OP_SUB: case KP_OP_MUL: case KP_OP_DIV:
	case KP_OP_MOD: case KP_OP_CONCAT:
		/* a commutative operation takes a small constant on either side */
		k = n->op == KP_OP_ADD || n->op == KP_OP_MUL ?
		    small_int(G, n->a) : -1;
		if (k >= 0 && n->b->kind != KP_N_INT) {
			ra = any_reg(G, n->b);
			at(G, n);
			emit_abc(G, kp_arith_op[n->op] - KTAP_OP_ADD +
				 KTAP_OP_ADDK, r, ra, k);
			return;
		}
		/* a temporary target may hold the left operand first */
		if (r >= G->vtop && !(n->a->kind == KP_N_NAME &&
				      n->a->sym.kind == KP_SYM_LOCAL)) {
			to_reg(G, n->a, r);
			ra = r;
		} else {
			ra = any_reg(G, n->a);
		}
		at(G, n);
		arith_reg(G, n->op, r, ra, n->b);
		return;
	default:
		bool_from_cond(G, n, r);
		return;
	}
}

static void gen_table(struct kp_gen *G, struct kp_node *n, int r)
{
	int narr = 0, nhash = 0, pos = 0, pc, mark;
	struct kp_node *it;

	pc = emit_abc(G, KTAP_OP_NEWTABLE, r, 0, 0);
	for (it = n->list; it; it = it->next) {
		mark = G->top;
		at(G, it);
		if (!it->a) {
			int kr = take(G, 1);

			narr++;
			load_int(G, kr, ++pos);
			emit_abc(G, KTAP_OP_SETTABLE, r, kr, any_reg(G, it->b));
		} else if (small_key(G, it->a) >= 0) {
			nhash++;
			emit_abc(G, KTAP_OP_SETFIELD, r, small_key(G, it->a),
				 any_reg(G, it->b));
		} else {
			int kr = any_reg(G, it->a);

			nhash++;
			emit_abc(G, KTAP_OP_SETTABLE, r, kr, any_reg(G, it->b));
		}
		G->top = mark;
	}
	G->f->code[pc] = KTAP_INSN(KTAP_OP_NEWTABLE, r, narr > 255 ? 255 : narr,
				   nhash > 255 ? 255 : nhash);
}

/* Compile @n so its value ends up in register @r. */
static void to_reg(struct kp_gen *G, struct kp_node *n, int r)
{
	int mark = G->top, t, k;

	if (r >= G->top)
		take(G, r + 1 - G->top);
	mark = G->top;
	at(G, n);
	switch (n->kind) {
	case KP_N_NIL:
		emit_abc(G, KTAP_OP_LOADNIL, r, 0, 0);
		break;
	case KP_N_TRUE:
	case KP_N_FALSE:
		emit_abc(G, KTAP_OP_LOADBOOL, r, n->kind == KP_N_TRUE, 0);
		break;
	case KP_N_INT:
		load_int(G, r, n->ival);
		break;
	case KP_N_STR:
		emit_abx(G, KTAP_OP_LOADK, r, const_str(G, n->str.s, n->str.len));
		break;
	case KP_N_NAME:
		gen_name(G, n, r);
		break;
	case KP_N_INDEX:
		t = any_reg(G, n->a);
		at(G, n);
		k = small_key(G, n->b);
		if (k >= 0)
			emit_abc(G, KTAP_OP_GETFIELD, r, t, k);
		else
			emit_abc(G, KTAP_OP_GETTABLE, r, t, any_reg(G, n->b));
		break;
	case KP_N_FIELD:
		if (n->a->kind == KP_N_NAME && n->a->sym.kind == KP_SYM_LOCAL &&
		    ev_field(G, r, n->a->sym.var, &n->str))
			break;
		t = any_reg(G, n->a);
		at(G, n);
		get_field(G, r, t, &n->str);
		break;
	case KP_N_CALL:
	case KP_N_METHOD:
		gen_call(G, n, r);
		break;
	case KP_N_FUNC:
		emit_abx(G, KTAP_OP_CLOSURE, r, (int)gen_func(G, n->fn));
		break;
	case KP_N_TABLE:
		gen_table(G, n, r);
		break;
	case KP_N_UNOP:
		if (n->op == '!' && is_condition(n->a)) {
			bool_from_cond(G, n, r);
			break;
		}
		t = any_reg(G, n->a);
		at(G, n);
		emit_abc(G, n->op == '-' ? KTAP_OP_UNM : KTAP_OP_NOT, r, t, 0);
		break;
	case KP_N_BINOP:
		gen_binop(G, n, r);
		break;
	default:
		break;
	}
	G->top = mark;
}

static const struct {
	int	op;
	int	swap;		/* operands exchanged: a > b is b < a */
	int	negate;		/* NE is EQ with the wanted truth inverted */
} kp_compare[] = {
	[KP_OP_EQ] = { KTAP_OP_EQ, 0, 0 }, [KP_OP_NE] = { KTAP_OP_EQ, 0, 1 },
	[KP_OP_LT] = { KTAP_OP_LT, 0, 0 }, [KP_OP_LE] = { KTAP_OP_LE, 0, 0 },
	[KP_OP_GT] = { KTAP_OP_LT, 1, 0 }, [KP_OP_GE] = { KTAP_OP_LE, 1, 0 },
};

/* A constant-table index for an EQK operand @n, or -1. */
static int eq_const(struct kp_gen *G, const struct kp_node *n)
{
	int k;

	if (n->kind == KP_N_INT)
		k = kp_const_int(G->S, n->ival);
	else if (n->kind == KP_N_STR)
		k = const_str(G, n->str.s, n->str.len);
	else
		return -1;
	return k <= 255 ? k : -1;
}

/*
 * R(r) := the comparison @n without its negation: NE leaves R(r) as
 * EQ would, for the caller to invert.
 */
static void compare_to(struct kp_gen *G, struct kp_node *n, int r)
{
	struct kp_node *x = n->a, *y = n->b;
	int mark = G->top, rb, rc, k = -1;

	if (n->op == KP_OP_EQ || n->op == KP_OP_NE) {
		k = eq_const(G, y);
		if (k < 0) {
			k = eq_const(G, x);
			x = y;
		}
		if (k >= 0) {
			rb = any_reg(G, x);
			at(G, n);
			emit_abc(G, KTAP_OP_EQK, r, rb, k);
			G->top = mark;
			return;
		}
		x = n->a;
	}
	rb = any_reg(G, x);
	rc = any_reg(G, y);
	at(G, n);
	if (kp_compare[n->op].swap)
		emit_abc(G, kp_compare[n->op].op, r, rc, rb);
	else
		emit_abc(G, kp_compare[n->op].op, r, rb, rc);
	G->top = mark;
}

/* Jump to @l when the comparison @n is @truth. */
static void compare_jump(struct kp_gen *G, struct kp_node *n, int truth,
			 struct kp_label *l)
{
	int want = kp_compare[n->op].negate ? !truth : truth;
	int mark = G->top, t = take(G, 1);

	compare_to(G, n, t);
	jump_op(G, want ? KTAP_OP_JMPT : KTAP_OP_JMPF, t, l);
	G->top = mark;
}

/* Jump to @l when the truth of @n is @truth; fall through otherwise. */
static void cond_jump(struct kp_gen *G, struct kp_node *n, int truth,
		      struct kp_label *l)
{
	struct kp_label skip;
	int mark = G->top, r;

	switch (n->kind) {
	case KP_N_NIL:
	case KP_N_FALSE:
		if (!truth)
			jump(G, l);
		return;
	case KP_N_TRUE:
	case KP_N_INT:
	case KP_N_STR:
		if (truth)
			jump(G, l);
		return;
	case KP_N_UNOP:
		if (n->op == '!') {
			cond_jump(G, n->a, !truth, l);
			return;
		}
		break;
	case KP_N_BINOP:
		switch (n->op) {
		case KP_OP_AND:
		case KP_OP_OR:
			/* and: false if either is; or: true if either is */
			if (truth == (n->op == KP_OP_OR)) {
				cond_jump(G, n->a, truth, l);
				cond_jump(G, n->b, truth, l);
				return;
			}
			label_init(&skip);
			cond_jump(G, n->a, !truth, &skip);
			cond_jump(G, n->b, truth, l);
			place(G, &skip);
			return;
		case KP_OP_EQ: case KP_OP_NE: case KP_OP_LT: case KP_OP_LE:
		case KP_OP_GT: case KP_OP_GE:
			compare_jump(G, n, truth, l);
			return;
		default:
			break;
		}
		break;
	default:
		break;
	}
	r = any_reg(G, n);
	at(G, n);
	jump_op(G, truth ? KTAP_OP_JMPT : KTAP_OP_JMPF, r, l);
	G->top = mark;
}

/* ---- stores ---- */

/* Store register @v into @target (NAME, INDEX or FIELD). */
static void store_reg(struct kp_gen *G, struct kp_node *target, int v)
{
	int t, k;

	switch (target->kind) {
	case KP_N_NAME:
		switch (target->sym.kind) {
		case KP_SYM_LOCAL:
			if (target->sym.var->reg != v)
				emit_abc(G, KTAP_OP_MOVE, target->sym.var->reg,
					 v, 0);
			break;
		case KP_SYM_UPVAL:
			emit_abc(G, KTAP_OP_SETUPVAL, v, target->sym.upval, 0);
			break;
		default:
			emit_abx(G, KTAP_OP_SETGLOBAL, v, target->sym.global);
			break;
		}
		return;
	case KP_N_INDEX:
		t = any_reg(G, target->a);
		k = small_key(G, target->b);
		if (k >= 0)
			emit_abc(G, KTAP_OP_SETFIELD, t, k, v);
		else
			emit_abc(G, KTAP_OP_SETTABLE, t,
				 any_reg(G, target->b), v);
		return;
	default:
		t = any_reg(G, target->a);
		k = const_str(G, target->str.s, target->str.len);
		if (k <= 255)
			emit_abc(G, KTAP_OP_SETFIELD, t, k, v);
		else
			emit_abc(G, KTAP_OP_SETTABLE, t,
				 name_key_reg(G, &target->str), v);
		return;
	}
}

/*
 * Store the value of @n into @target. A local is written in place,
 * unless building the value writes its register before reading it
 * (a table constructor, `and`/`or`): x = {v = x} must see the old x.
 */
static void store(struct kp_gen *G, struct kp_node *target, struct kp_node *n)
{
	int in_place = n->kind != KP_N_TABLE &&
		       !(n->kind == KP_N_BINOP &&
			 (n->op == KP_OP_AND || n->op == KP_OP_OR));

	if (target->kind == KP_N_NAME && target->sym.kind == KP_SYM_LOCAL &&
	    in_place) {
		to_reg(G, n, target->sym.var->reg);
		return;
	}
	store_reg(G, target, any_reg(G, n));
}

/* A table element target: object and key registers. */
static void element_regs(struct kp_gen *G, struct kp_node *target, int *t,
			 int *k)
{
	*t = any_reg(G, target->a);
	if (target->kind == KP_N_FIELD)
		*k = name_key_reg(G, &target->str);
	else
		*k = any_reg(G, target->b);
}

static void gen_compound(struct kp_gen *G, struct kp_node *n)
{
	struct kp_node *target = n->a;
	int t, k, v, r;

	if ((target->kind == KP_N_INDEX || target->kind == KP_N_FIELD) &&
	    (n->op == KP_OP_ADD || n->op == KP_OP_SUB)) {
		/* one atomic update, safe against other CPUs */
		element_regs(G, target, &t, &k);
		if (n->op == KP_OP_SUB && n->b->kind == KP_N_INT) {
			v = take(G, 1);
			load_int(G, v, (int64_t)(0 - (uint64_t)n->b->ival));
		} else if (n->op == KP_OP_SUB) {
			v = take(G, 1);
			emit_abc(G, KTAP_OP_UNM, v, any_reg(G, n->b), 0);
		} else {
			v = any_reg(G, n->b);
		}
		at(G, n);
		emit_abc(G, KTAP_OP_INCTABLE, t, k, v);
		return;
	}
	if (target->kind == KP_N_INDEX || target->kind == KP_N_FIELD) {
		struct kp_str name = target->str;

		t = any_reg(G, target->a);
		k = target->kind == KP_N_FIELD ?
		    const_str(G, name.s, name.len) : small_key(G, target->b);
		r = take(G, 1);
		if (k >= 0 && k <= 255) {
			emit_abc(G, KTAP_OP_GETFIELD, r, t, k);
			arith_reg(G, n->op, r, r, n->b);
			emit_abc(G, KTAP_OP_SETFIELD, t, k, r);
			return;
		}
		k = target->kind == KP_N_FIELD ? name_key_reg(G, &name) :
		    any_reg(G, target->b);
		emit_abc(G, KTAP_OP_GETTABLE, r, t, k);
		arith_reg(G, n->op, r, r, n->b);
		emit_abc(G, KTAP_OP_SETTABLE, t, k, r);
		return;
	}
	if (target->sym.kind == KP_SYM_LOCAL) {
		r = target->sym.var->reg;
		arith_reg(G, n->op, r, r, n->b);
		return;
	}
	r = take(G, 1);
	to_reg(G, target, r);
	arith_reg(G, n->op, r, r, n->b);
	store_reg(G, target, r);
}

static void gen_assign(struct kp_gen *G, struct kp_node *n)
{
	int nt = 0, nv = 0, i, *vals, *objs, *keys;
	struct kp_node *t, *v;

	for (t = n->list; t; t = t->next)
		nt++;
	for (v = n->list2; v; v = v->next)
		nv++;
	if (nt == 1 && nv == 1) {
		store(G, n->list, n->list2);
		return;
	}
	/*
	 * Several targets: evaluate every target's table and key, then
	 * every value, then store, so `a[i], i = i + 1, 5` indexes with
	 * the old i.
	 */
	vals = kp_alloc(&G->S->arena, sizeof(int) * (size_t)(nt + nv) * 3);
	objs = vals + nt + nv;
	keys = objs + nt + nv;
	for (i = 0, t = n->list; t; t = t->next, i++) {
		if (t->kind == KP_N_NAME)
			continue;
		objs[i] = take(G, 1);
		to_reg(G, t->a, objs[i]);
		keys[i] = take(G, 1);
		if (t->kind == KP_N_FIELD)
			emit_abx(G, KTAP_OP_LOADK, keys[i],
				 const_str(G, t->str.s, t->str.len));
		else
			to_reg(G, t->b, keys[i]);
	}
	for (i = 0, v = n->list2; v; v = v->next, i++) {
		vals[i] = take(G, 1);
		if (!v->next && nv < nt && fills_rest(v)) {
			/* topmost: its values go to consecutive registers */
			gen_call_n(G, v, vals[i], nt - i);
			for (i++; i < nt; i++)
				vals[i] = take(G, 1);
			break;
		}
		to_reg(G, v, vals[i]);
	}
	for (; i < nt; i++) {
		vals[i] = take(G, 1);
		emit_abc(G, KTAP_OP_LOADNIL, vals[i], 0, 0);
	}
	for (i = 0, t = n->list; t; t = t->next, i++) {
		at(G, t);
		if (t->kind == KP_N_NAME)
			store_reg(G, t, vals[i]);
		else
			emit_abc(G, KTAP_OP_SETTABLE, objs[i], keys[i],
				 vals[i]);
	}
}

static void gen_local(struct kp_gen *G, struct kp_node *n)
{
	struct kp_node *e = n->list;
	struct kp_var *v;
	int base = G->top, nv = 0, i;

	for (v = n->vars; v; v = v->next)
		nv++;
	take(G, nv);
	for (i = 0; e; e = e->next, i++) {
		if (!e->next && i + 1 < nv && fills_rest(e)) {
			/* its values fill base + i.. */
			G->top = base + i + 1;
			gen_call_n(G, e, base + i, nv - i);
			G->top = base + nv;
			i = nv - 1;
			continue;
		}
		if (i < nv) {
			to_reg(G, e, base + i);
		} else {
			int mark = G->top;

			to_reg(G, e, take(G, 1));
			G->top = mark;
		}
	}
	if (i < nv)
		emit_abc(G, KTAP_OP_LOADNIL, base + i, nv - i - 1, 0);
	for (i = 0, v = n->vars; v; v = v->next, i++)
		declare(G, v, base + i);
	G->top = G->vtop;
}

/* Attach the closure in register @r to probes [first, first + n). */
static void attach(struct kp_gen *G, int r, const struct kp_probe *p)
{
	uint32_t i;

	for (i = 0; i < p->n; i++)
		emit_abx(G, KTAP_OP_ATTACH, r, (int)(p->first + i));
	if (p->nowait)
		G->ast->exit_at_end = 1;
}

static void gen_block(struct kp_gen *G, struct kp_node *blk);
static void gen_stmt(struct kp_gen *G, struct kp_node *n);

/*
 * for k, v in it: the iterator and the variables in R(base)..R(base+2);
 * a JMP to ITERNEXT at the bottom, which jumps back to the body while
 * there is a next pair; `break` leaves past it.
 */
static void gen_forin(struct kp_gen *G, struct kp_node *n, int base)
{
	struct kp_label top, test, exit, *saved = G->brk;

	label_init(&top);
	label_init(&test);
	label_init(&exit);
	G->vtop = base + 3;
	at(G, n);
	jump(G, &test);
	place(G, &top);
	G->brk = &exit;
	gen_stmt(G, n->b);
	G->brk = saved;
	place(G, &test);
	at(G, n);
	jump_op(G, KTAP_OP_ITERNEXT, base, &top);
	place(G, &exit);
}

/* The step of a numeric for: 1 when absent, the constant, or 0 (not known). */
static int64_t for_step(const struct kp_node *n)
{
	if (!n->c)
		return 1;
	return n->c->kind == KP_N_INT ? n->c->ival : 0;
}

/*
 * JMPF to @exit unless index R(base) has not passed limit R(base+1):
 * LE index,limit for a positive step, LE limit,index for a negative
 * one; with a step not known until run time, R(base+3) (step < 0)
 * chooses.
 */
static void for_test(struct kp_gen *G, int base, int64_t step, int t,
		     struct kp_label *exit)
{
	struct kp_label neg, test;

	if (step) {
		emit_abc(G, KTAP_OP_LE, t, step > 0 ? base : base + 1,
			 step > 0 ? base + 1 : base);
		jump_op(G, KTAP_OP_JMPF, t, exit);
		return;
	}
	label_init(&neg);
	label_init(&test);
	jump_op(G, KTAP_OP_JMPT, base + 3, &neg);
	emit_abc(G, KTAP_OP_LE, t, base, base + 1);
	jump(G, &test);
	place(G, &neg);
	emit_abc(G, KTAP_OP_LE, t, base + 1, base);
	place(G, &test);
	jump_op(G, KTAP_OP_JMPF, t, exit);
}

/*
 * for i = a, b[, s]: hidden index and limit in R(base), R(base+1), a
 * step that is not a small constant in R(base+2), and for a step known
 * only at run time its sign in R(base+3); the visible i, a copy of the index made at the top of
 * each iteration, so the body may change it without changing the loop.
 */
static void gen_fornum(struct kp_gen *G, struct kp_node *n)
{
	struct kp_label top, exit, *saved = G->brk;
	int64_t step = for_step(n);
	int base, k, var, t;

	label_init(&top);
	label_init(&exit);
	/* each at the top, so a call lands in place */
	base = take(G, 1);
	to_reg(G, n->a, base);
	to_reg(G, n->b, take(G, 1));
	/* a small constant step is added by ADDK; any other is in R(base+2) */
	k = step ? kp_const_int(G->S, step) : -1;
	if (k > 255)
		k = -1;
	if (k < 0 && n->c)
		to_reg(G, n->c, take(G, 1));
	else if (k < 0)
		load_int(G, take(G, 1), step);
	if (!step) {
		take(G, 1);
		t = take(G, 1);
		load_int(G, t, 0);
		emit_abc(G, KTAP_OP_LT, base + 3, base + 2, t);
		G->top = base + 4;
	}
	var = take(G, 1);
	declare(G, n->vars, var);
	G->vtop = var + 1;
	at(G, n);
	place(G, &top);
	t = take(G, 1);
	for_test(G, base, step, t, &exit);
	G->top = G->vtop;
	emit_abc(G, KTAP_OP_MOVE, var, base, 0);
	G->brk = &exit;
	gen_stmt(G, n->list);
	G->brk = saved;
	at(G, n);
	if (k >= 0)
		emit_abc(G, KTAP_OP_ADDK, base, base, k);
	else
		emit_abc(G, KTAP_OP_ADD, base, base, base + 2);
	jump(G, &top);
	place(G, &exit);
}

static void gen_stmt(struct kp_gen *G, struct kp_node *n)
{
	struct kp_label l1, l2, *saved;
	int base, r;

	at(G, n);
	switch (n->kind) {
	case KP_N_BLOCK:
		gen_block(G, n);
		break;
	case KP_N_LOCAL:
		gen_local(G, n);
		break;
	case KP_N_LOCALFUNC:
		r = take(G, 1);
		declare(G, n->vars, r);
		emit_abx(G, KTAP_OP_CLOSURE, r, (int)gen_func(G, n->fn));
		break;
	case KP_N_ASSIGN:
		gen_assign(G, n);
		break;
	case KP_N_COMPOUND:
		gen_compound(G, n);
		break;
	case KP_N_AGGR: {
		int t, k;

		element_regs(G, n->a, &t, &k);
		r = any_reg(G, n->b);
		at(G, n);
		emit_abc(G, KTAP_OP_AGGR, t, k, r);
		break;
	}
	case KP_N_EXPR:
		if (n->a->kind == KP_N_CALL && n->a->probe) {
			r = any_reg(G, n->a->probe->handler);
			at(G, n);
			attach(G, r, n->a->probe);
		} else {
			gen_call(G, n->a, -1);
		}
		break;
	case KP_N_IF:
		label_init(&l1);
		label_init(&l2);
		cond_jump(G, n->a, 0, &l1);
		gen_stmt(G, n->b);
		if (n->c) {
			jump(G, &l2);
			place(G, &l1);
			gen_stmt(G, n->c);
			place(G, &l2);
		} else {
			place(G, &l1);
		}
		break;
	case KP_N_WHILE:
		label_init(&l1);
		label_init(&l2);
		place(G, &l1);
		cond_jump(G, n->a, 0, &l2);
		saved = G->brk;
		G->brk = &l2;
		gen_stmt(G, n->b);
		G->brk = saved;
		jump(G, &l1);
		place(G, &l2);
		break;
	case KP_N_FORNUM: {
		uint32_t mark = G->nvars;
		int vtop = G->vtop;

		gen_fornum(G, n);
		leave(G, mark, vtop);
		break;
	}
	case KP_N_FORIN: {
		uint32_t mark = G->nvars;
		int vtop = G->vtop;

		base = take(G, 1);
		to_reg(G, n->a, base);
		take(G, 2);
		declare(G, n->vars, base + 1);
		if (n->vars->next)
			declare(G, n->vars->next, base + 2);
		gen_forin(G, n, base);
		leave(G, mark, vtop);
		break;
	}
	case KP_N_RETURN: {
		struct kp_node *e;
		int nval = 0;

		if (n->list && !n->list->next && n->list->nval <= 1) {
			r = any_reg(G, n->list);
			at(G, n);
			emit_abc(G, KTAP_OP_RETURN, r, 1, 0);
			break;
		}
		/* none, or several in consecutive registers */
		base = G->top;
		for (e = n->list; e; e = e->next, nval++) {
			if (!e->next) {
				nval += spread_to_regs(G, e, take(G, 1)) - 1;
				continue;
			}
			to_reg(G, e, take(G, 1));
		}
		at(G, n);
		emit_abc(G, KTAP_OP_RETURN, nval ? base : 0, nval, 0);
		break;
	}
	case KP_N_BREAK:
		jump(G, G->brk);
		break;
	case KP_N_FUNCSTAT:
		r = take(G, 1);
		emit_abx(G, KTAP_OP_CLOSURE, r, (int)gen_func(G, n->fn));
		at(G, n);
		store_reg(G, n->a, r);
		break;
	case KP_N_PROBE:
		r = take(G, 1);
		emit_abx(G, KTAP_OP_CLOSURE, r, (int)gen_func(G, n->fn));
		at(G, n);
		attach(G, r, n->probe);
		break;
	default:
		break;
	}
	G->top = G->vtop;
}

static void gen_block(struct kp_gen *G, struct kp_node *blk)
{
	uint32_t mark = G->nvars;
	int vtop = G->vtop;
	struct kp_node *s;

	for (s = blk->list; s; s = s->next)
		gen_stmt(G, s);
	leave(G, mark, vtop);
}

/* arg = { [0] = script, [1] = first argument, ... }: numbers as numbers */
static void arg_prologue(struct kp_gen *G)
{
	struct kp_state *S = G->S;
	int t = take(G, 3), i;

	emit_abc(G, KTAP_OP_NEWTABLE, t, S->nargs > 255 ? 255 : S->nargs, 1);
	for (i = 0; i <= S->nargs && i <= KP_MAX_ARGS; i++) {
		const char *a = i ? S->args[i - 1] : S->file, *p = a;
		int num = *p != '\0' && i;
		int64_t v = 0;

		for (; *p && num; p++) {
			if (*p < '0' || *p > '9' || v > INT64_MAX / 10 - 10)
				num = 0;
			else
				v = v * 10 + (*p - '0');
		}
		load_int(G, t + 1, i);
		if (num)
			load_int(G, t + 2, v);
		else
			emit_abx(G, KTAP_OP_LOADK, t + 2,
				 const_str(G, a, (uint32_t)strlen(a)));
		emit_abc(G, KTAP_OP_SETTABLE, t, t + 1, t + 2);
	}
	emit_abx(G, KTAP_OP_SETGLOBAL, t, kp_global(S, "arg"));
	G->top = G->vtop;
}

/* Compile @fn into a new prototype; returns its index. */
static uint32_t gen_func(struct kp_gen *G, struct kp_func *fn)
{
	struct kp_gen saved = *G;
	struct kp_label end;
	struct kp_var *v;
	uint32_t idx, i;
	int reg = 0;

	G->S->line = fn->line;
	G->S->col = fn->col;
	G->f = kp_proto_new(G->S, &idx);
	fn->idx = idx;
	G->f->parent = fn->parent ? fn->parent->idx : KTAP_BC_NO_STR;
	G->f->name = fn->name;
	G->f->line = fn->line;
	G->f->nparams = fn->nparams;
	G->fn = fn;
	G->top = G->vtop = 0;
	G->brk = NULL;
	G->line = fn->line;
	G->col = fn->col;
	G->vars = NULL;
	G->nvars = G->varcap = 0;
	/* how the closure finds each upvalue when it is created */
	if (fn->nupv) {
		G->f->upv = kp_alloc(&G->S->arena,
				     fn->nupv * sizeof(*G->f->upv));
		G->f->nupv = fn->nupv;
	}
	for (i = 0; i < fn->nupv; i++) {
		const struct kp_upval *u = &fn->upv[i];

		G->f->upv[i].in_stack = u->parent_upval < 0;
		G->f->upv[i].index = (uint8_t)(u->parent_upval < 0 ?
					       u->var->reg : u->parent_upval);
	}
	for (v = fn->params; v; v = v->next)
		declare(G, v, reg++);
	take(G, reg);
	if (!fn->parent && G->ast->need_arg)
		arg_prologue(G);
	label_init(&end);
	if (fn->filter) {
		cond_jump(G, fn->filter, 0, &end);
		G->top = G->vtop;
	}
	gen_block(G, fn->body);
	place(G, &end);
	G->line = fn->end_line;
	/* ktap 0.1's "do not wait": tracing ends with the main chunk */
	if (!fn->parent && G->ast->exit_at_end)
		callb(G, "exit", take(G, 1), 0);
	emit_abc(G, KTAP_OP_RETURN, 0, 0, 0);
	if (G->f->maxregs < 1)
		G->f->maxregs = 1;
	*G = saved;
	return idx;
}

int kp_gen(struct kp_state *S, struct kp_ast *ast)
{
	struct kp_gen G;
	int before = S->nerrors;

	memset(&G, 0, sizeof(G));
	G.S = S;
	G.ast = ast;
	gen_func(&G, ast->main);
	return S->nerrors - before;
}
