// SPDX-License-Identifier: GPL-2.0
/*
 * How many values a call yields where all of them are wanted: as the
 * last value of a `return`, or the last argument of a call.
 *
 * The instruction set has no variable value counts: CALL names how many
 * results it keeps and RETURN how many it gives, and the verifier bounds
 * both by the frame sizes. So `return f()` and `print(f())` pass on all
 * of f's values only when the compiler knows f's count. This pass works
 * it out for every function whose definition a call can name for sure:
 *   - a `local function f` or `var f = function ...` never assigned again;
 *   - a global stored exactly once, by `function f()` or `f = function`.
 * A function's count is the most values any of its `return`s gives
 * (a call of such a function in the last place counts its own count),
 * found by iterating to a fixed point; a function that returns fewer on
 * some path has nils in the rest, as `var a, b = f()` already has.
 * Anything else yields one value: builtins, methods, calls of a value.
 *
 * Runs after kp_check(); fills kp_func.nret and kp_node.nval (CALL,
 * METHOD) for gen.c.
 */
#include <string.h>
#include "ast.h"
#include "image.h"

struct kp_arity {
	struct kp_func	**fns;		/* every function of the script */
	uint32_t	nfns, fncap;
	struct kp_func	**gfn;		/* per global: the function stored */
	uint32_t	*gstores;	/* per global: how many stores */
	struct kp_state	*S;
};

static void collect(struct kp_arity *A, struct kp_node *n);

static void collect_func(struct kp_arity *A, struct kp_func *fn)
{
	kp_grow(&A->S->arena, (void **)&A->fns, &A->fncap, A->nfns + 1,
		sizeof(*A->fns));
	A->fns[A->nfns++] = fn;
	fn->nret = 0;
	collect(A, fn->filter);
	collect(A, fn->body);
}

/* Record a store of @val (NULL: not a function) into NAME @target. */
static void store(struct kp_arity *A, const struct kp_node *target,
		  struct kp_func *val)
{
	int g;

	if (target->kind != KP_N_NAME)
		return;
	if (target->sym.kind == KP_SYM_GLOBAL) {
		g = target->sym.global;
		A->gstores[g]++;
		A->gfn[g] = val;
	}
	/* a variable stored again has ->assigned set by resolve.c */
}

static struct kp_func *func_value(const struct kp_node *v)
{
	return v && v->kind == KP_N_FUNC ? v->fn : NULL;
}

/* Every node of a list, and what hangs below it. */
static void collect(struct kp_arity *A, struct kp_node *n)
{
	struct kp_node *t, *v;
	struct kp_var *var;

	for (; n; n = n->next) {
		switch (n->kind) {
		case KP_N_LOCALFUNC:
			n->vars->fnval = n->fn;
			break;
		case KP_N_LOCAL:
			for (var = n->vars, v = n->list; var;
			     var = var->next, v = v ? v->next : NULL)
				var->fnval = func_value(v);
			break;
		case KP_N_ASSIGN:
			for (t = n->list, v = n->list2; t;
			     t = t->next, v = v ? v->next : NULL)
				store(A, t, func_value(v));
			break;
		case KP_N_COMPOUND:
			store(A, n->a, NULL);
			break;
		case KP_N_FUNCSTAT:
			store(A, n->a, n->fn);
			break;
		default:
			break;
		}
		collect(A, n->a);
		collect(A, n->b);
		collect(A, n->c);
		collect(A, n->list);
		collect(A, n->list2);
		if (n->fn)
			collect_func(A, n->fn);
	}
}

/* The function @call certainly calls, or NULL. */
static const struct kp_func *callee(const struct kp_arity *A,
				    const struct kp_node *call)
{
	const struct kp_node *f = call->a;
	const struct kp_var *v;

	if (call->kind != KP_N_CALL || call->builtin >= 0 || call->ansi ||
	    call->ansi_args || call->probe || f->kind != KP_N_NAME)
		return NULL;
	switch (f->sym.kind) {
	case KP_SYM_LOCAL:
	case KP_SYM_UPVAL:
		v = f->sym.var;
		return v && !v->assigned ? v->fnval : NULL;
	case KP_SYM_GLOBAL:
		return A->gstores[f->sym.global] == 1 ?
		       A->gfn[f->sym.global] : NULL;
	default:
		return NULL;
	}
}

static uint32_t yields(const struct kp_arity *A, const struct kp_node *n)
{
	const struct kp_func *fn;

	if (n->kind != KP_N_CALL)
		return 1;
	fn = callee(A, n);
	return fn && fn->nret > 1 ? fn->nret : 1;
}

/* The most values a `return` of @n's statements gives (not nested ones). */
static uint32_t returns(const struct kp_arity *A, const struct kp_node *n)
{
	const struct kp_node *e;
	uint32_t most = 0, k, e_k;

	for (; n; n = n->next) {
		switch (n->kind) {
		case KP_N_RETURN:
			k = 0;
			for (e = n->list; e; e = e->next)
				k += e->next ? 1 : yields(A, e);
			break;
		case KP_N_BLOCK:
		case KP_N_FORNUM:
			k = returns(A, n->list);
			break;
		case KP_N_IF:
			k = returns(A, n->b);
			e_k = returns(A, n->c);
			if (e_k > k)
				k = e_k;
			break;
		case KP_N_WHILE:
		case KP_N_FORIN:
			k = returns(A, n->b);
			break;
		default:
			k = 0;
			break;
		}
		if (k > most)
			most = k;
	}
	return most > KP_MAX_RETURNS ? KP_MAX_RETURNS : most;
}

/* Mark every call below @n with its count. */
static void annotate(const struct kp_arity *A, struct kp_node *n)
{
	for (; n; n = n->next) {
		n->nval = yields(A, n);
		annotate(A, n->a);
		annotate(A, n->b);
		annotate(A, n->c);
		annotate(A, n->list);
		annotate(A, n->list2);
		if (n->fn) {
			annotate(A, n->fn->filter);
			annotate(A, n->fn->body);
		}
	}
}

int kp_arity(struct kp_state *S, struct kp_ast *ast)
{
	uint32_t i, k, rounds, ng = S->img->nglobals;
	struct kp_arity *A;
	int changed = 1;

	A = kp_alloc(&S->arena, sizeof(*A));
	memset(A, 0, sizeof(*A));
	A->S = S;
	A->gfn = kp_alloc(&S->arena, (ng + 1) * sizeof(*A->gfn));
	A->gstores = kp_alloc(&S->arena, (ng + 1) * sizeof(*A->gstores));
	memset(A->gfn, 0, (ng + 1) * sizeof(*A->gfn));
	memset(A->gstores, 0, (ng + 1) * sizeof(*A->gstores));
	collect_func(A, ast->main);
	/*
	 * Counts only grow and stop at KP_MAX_RETURNS, so this ends; a
	 * chain of n functions needs about n rounds.
	 */
	for (rounds = 0; changed && rounds <= A->nfns * KP_MAX_RETURNS;
	     rounds++) {
		changed = 0;
		for (i = 0; i < A->nfns; i++) {
			k = returns(A, A->fns[i]->body);
			if (k > A->fns[i]->nret) {
				A->fns[i]->nret = k;
				changed = 1;
			}
		}
	}
	annotate(A, ast->main->filter);
	annotate(A, ast->main->body);
	return 0;
}
