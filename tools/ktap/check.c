// SPDX-License-Identifier: GPL-2.0
/*
 * Checks of the syntax tree, in two parts around name resolution.
 *
 * kp_fold() runs first: it folds integer arithmetic, negation, `not`
 * and concatenation of constants the way the VM computes them (64-bit
 * wrapping integers, division truncating toward zero), so probe
 * specifications, timer periods and ansi arguments may be constant
 * expressions. A division by zero is left to fail at run time, as in
 * the original ktap.
 *
 * kp_check() runs after resolve.c, when every call knows whether it
 * reaches a builtin: argument counts of builtins, probes only in the
 * main chunk, library probe calls only as statements, `break` only in
 * a loop, sleep() only where it can wait.
 */
#include <string.h>
#include "ast.h"


/* ---- constant folding ---- */

static int is_const(const struct kp_node *n)
{
	return n->kind == KP_N_INT || n->kind == KP_N_STR;
}

/* The text of a constant as CONCAT would produce it. */
static const char *const_text(const struct kp_node *n, char *buf, size_t len,
			      uint32_t *out)
{
	if (n->kind == KP_N_STR) {
		*out = n->str.len;
		return n->str.s;
	}
	*out = (uint32_t)snprintf(buf, len, "%lld", (long long)n->ival);
	return buf;
}

static void fold_concat(struct kp_state *S, struct kp_node *n)
{
	char b1[24], b2[24], *s;
	const char *s1, *s2;
	uint32_t l1, l2;

	s1 = const_text(n->a, b1, sizeof(b1), &l1);
	s2 = const_text(n->b, b2, sizeof(b2), &l2);
	if ((uint64_t)l1 + l2 > KP_MAX_STRING)
		return;
	s = kp_alloc(&S->arena, l1 + l2 + 1);
	memcpy(s, s1, l1);
	memcpy(s + l1, s2, l2);
	n->kind = KP_N_STR;
	n->str.s = s;
	n->str.len = l1 + l2;
}

static void fold_arith(struct kp_node *n)
{
	uint64_t a = (uint64_t)n->a->ival, b = (uint64_t)n->b->ival;
	int64_t r;

	switch (n->op) {
	case KP_OP_ADD:
		r = (int64_t)(a + b);
		break;
	case KP_OP_SUB:
		r = (int64_t)(a - b);
		break;
	case KP_OP_MUL:
		r = (int64_t)(a * b);
		break;
	default:
		/* left to the VM, whose error names the line at run time */
		if (!b)
			return;
		/* INT64_MIN / -1 wraps, as in the VM */
		if (n->b->ival == -1)
			r = n->op == KP_OP_DIV ? (int64_t)(0 - a) : 0;
		else if (n->op == KP_OP_DIV)
			r = n->a->ival / n->b->ival;
		else
			r = n->a->ival % n->b->ival;
		break;
	}
	n->kind = KP_N_INT;
	n->ival = r;
}

static void fold_expr(struct kp_state *S, struct kp_node *n);
static void fold_func(struct kp_state *S, struct kp_func *fn);

static void fold_list(struct kp_state *S, struct kp_node *n)
{
	for (; n; n = n->next)
		fold_expr(S, n);
}

static void fold_expr(struct kp_state *S, struct kp_node *n)
{
	if (!n)
		return;
	switch (n->kind) {
	case KP_N_FUNC:
		fold_func(S, n->fn);
		return;
	case KP_N_UNOP:
		fold_expr(S, n->a);
		if (n->op == '-' && n->a->kind == KP_N_INT) {
			n->kind = KP_N_INT;
			n->ival = (int64_t)(0 - (uint64_t)n->a->ival);
		} else if (n->op == '!') {
			switch (n->a->kind) {
			case KP_N_NIL:
			case KP_N_FALSE:
				n->kind = KP_N_TRUE;
				break;
			case KP_N_TRUE:
			case KP_N_INT:
			case KP_N_STR:
				n->kind = KP_N_FALSE;
				break;
			default:
				break;
			}
		}
		if (n->kind != KP_N_UNOP)
			n->a = NULL;
		return;
	case KP_N_BINOP:
		fold_expr(S, n->a);
		fold_expr(S, n->b);
		if (n->op <= KP_OP_MOD && n->a->kind == KP_N_INT &&
		    n->b->kind == KP_N_INT)
			fold_arith(n);
		else if (n->op == KP_OP_CONCAT && is_const(n->a) &&
			 is_const(n->b))
			fold_concat(S, n);
		if (n->kind != KP_N_BINOP)
			n->a = n->b = NULL;
		return;
	default:
		break;
	}
	fold_expr(S, n->a);
	fold_expr(S, n->b);
	fold_expr(S, n->c);
	fold_list(S, n->list);
	fold_list(S, n->list2);
	if (n->fn)
		fold_func(S, n->fn);
}

static void fold_func(struct kp_state *S, struct kp_func *fn)
{
	fold_expr(S, fn->filter);
	fold_expr(S, fn->body);
}

int kp_fold(struct kp_state *S, struct kp_ast *ast)
{
	int before = S->nerrors;

	fold_func(S, ast->main);
	return S->nerrors - before;
}

/* ---- rules that need resolved names ---- */

struct kp_checker {
	struct kp_state	*S;
	struct kp_func	*fn;
	int		loops;		/* enclosing loops in this function */
	uint32_t	sleep_line;	/* first sleep() outside handlers */
	struct kp_var	*shared;	/* first main-chunk local captured */
};

/* Is @fn a probe handler or nested in one? */
static int in_handler(const struct kp_func *fn)
{
	for (; fn; fn = fn->parent)
		if (fn->probe)
			return 1;
	return 0;
}

/*
 * sleep() lets the handlers run while the main chunk goes on. The VM
 * gives them a copy of the main chunk's locals they capture (it cannot
 * share registers the main chunk writes unsynchronised), so a script
 * that sleeps may not share main-chunk locals with functions at all.
 */
static void note_sleep(struct kp_checker *C, const struct kp_node *call)
{
	if (strcmp(kp_builtin_name(call->builtin), "sleep"))
		return;
	if (in_handler(C->fn))
		kp_error(C->S, call->a->line, call->a->col,
			 KP_E_SLEEP_HANDLER);
	else if (!C->sleep_line)
		C->sleep_line = call->a->line;
}

static void note_locals(struct kp_checker *C, struct kp_var *v)
{
	if (C->fn->parent)
		return;
	for (; v && !C->shared; v = v->next)
		if (v->captured)
			C->shared = v;
}

static void check_expr(struct kp_checker *C, struct kp_node *n, int stmt);
static void check_func(struct kp_checker *C, struct kp_func *fn);

static void check_arity(struct kp_checker *C, struct kp_node *call)
{
	int min, max, n = 0;
	struct kp_node *a;
	char want[64];

	for (a = call->list; a; a = a->next)
		n++;
	kp_builtin_arity(call->builtin, &min, &max);
	/* "any number": the registers bound it (gen.c) */
	if (n >= min && (n <= max || max == KP_ANY_ARGS))
		return;
	if (min == max)
		snprintf(want, sizeof(want), "%d argument%s", min,
			 min == 1 ? "" : "s");
	else if (max == KP_ANY_ARGS)
		snprintf(want, sizeof(want), "at least %d argument%s", min,
			 min == 1 ? "" : "s");
	else
		snprintf(want, sizeof(want), "%d to %d arguments", min, max);
	kp_error(C->S, call->a->line, call->a->col, KP_E_BUILTIN_ARGS,
		 kp_builtin_name(call->builtin), want);
}

static void check_list(struct kp_checker *C, struct kp_node *n)
{
	for (; n; n = n->next)
		check_expr(C, n, 0);
}

static void check_expr(struct kp_checker *C, struct kp_node *n, int stmt)
{
	if (!n)
		return;
	switch (n->kind) {
	case KP_N_CALL:
		if (n->probe) {
			if (C->fn->parent)
				kp_error(C->S, n->a->line, n->a->col,
					 KP_E_PROBE_MAIN);
			else if (!stmt)
				kp_error(C->S, n->a->line, n->a->col,
					 KP_E_LIB_VALUE, n->probe->what);
			check_expr(C, n->probe->handler, 0);
			return;
		}
		if (n->builtin >= 0) {
			check_arity(C, n);
			note_sleep(C, n);
		} else
			check_expr(C, n->a, 0);
		check_list(C, n->list);
		return;
	case KP_N_FUNC:
		check_func(C, n->fn);
		return;
	case KP_N_TABLE:
		for (n = n->list; n; n = n->next) {
			check_expr(C, n->a, 0);
			check_expr(C, n->b, 0);
		}
		return;
	default:
		check_expr(C, n->a, 0);
		check_expr(C, n->b, 0);
		check_list(C, n->list);
		return;
	}
}

static void check_stmt(struct kp_checker *C, struct kp_node *n)
{
	struct kp_node *s;

	switch (n->kind) {
	case KP_N_BLOCK:
		for (s = n->list; s; s = s->next)
			check_stmt(C, s);
		return;
	case KP_N_EXPR:
		check_expr(C, n->a, 1);
		return;
	case KP_N_IF:
		check_expr(C, n->a, 0);
		check_stmt(C, n->b);
		if (n->c)
			check_stmt(C, n->c);
		return;
	case KP_N_WHILE:
	case KP_N_FORNUM:
	case KP_N_FORIN:
		note_locals(C, n->vars);
		check_expr(C, n->a, 0);
		if (n->kind == KP_N_FORNUM) {
			check_expr(C, n->b, 0);
			check_expr(C, n->c, 0);
		}
		C->loops++;
		check_stmt(C, n->kind == KP_N_FORNUM ? n->list : n->b);
		C->loops--;
		return;
	case KP_N_BREAK:
		if (!C->loops)
			kp_error(C->S, n->line, n->col, KP_E_BREAK);
		return;
	case KP_N_RETURN:
	case KP_N_LOCAL:
	case KP_N_ASSIGN:
		note_locals(C, n->vars);
		check_list(C, n->list);
		check_list(C, n->list2);
		return;
	case KP_N_LOCALFUNC:
	case KP_N_FUNCSTAT:
		note_locals(C, n->vars);
		check_expr(C, n->a, 0);
		check_func(C, n->fn);
		return;
	case KP_N_PROBE:
		if (C->fn->parent)
			kp_error(C->S, n->line, n->col, KP_E_PROBE_MAIN);
		check_func(C, n->fn);
		return;
	default:
		check_expr(C, n->a, 0);
		check_expr(C, n->b, 0);
		return;
	}
}

static void check_func(struct kp_checker *C, struct kp_func *fn)
{
	struct kp_func *saved = C->fn;
	int loops = C->loops;

	C->fn = fn;
	C->loops = 0;
	check_expr(C, fn->filter, 0);
	check_stmt(C, fn->body);
	C->fn = saved;
	C->loops = loops;
}

int kp_check(struct kp_state *S, struct kp_ast *ast)
{
	struct kp_checker C = { .S = S };
	int before = S->nerrors;

	check_func(&C, ast->main);
	if (C.sleep_line && C.shared)
		kp_error(S, C.shared->line, C.shared->col, KP_E_SLEEP_SHARED,
			 C.shared->name, C.sleep_line, C.shared->name);
	return S->nerrors - before;
}
