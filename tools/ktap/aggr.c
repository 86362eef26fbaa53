// SPDX-License-Identifier: GPL-2.0
/*
 * Aggregations: what the compiler knows about hist(), lhist(), stats()
 * and ptable() before the kernel sees them.
 *
 * kp_aggr_lower() runs on the parsed tree, before names are resolved.
 * For each aggregation the main chunk stores into a name at its top
 * level (`var h = hist()`, `h = lhist(0, 100, 10)`):
 *   - the constructor gets the name as its label argument, so that the
 *     kernel prints h[KEY]: before each key's chart;
 *   - when the script has probes but no end handler, a `trace_end`
 *     printing each aggregation is added: a script that aggregates
 *     prints its results when tracing stops, as bpftrace does.
 * A script that defines a function or variable named like one of the
 * constructors keeps its own meaning: nothing is lowered for that name.
 *
 * kp_aggr_check() runs after kp_resolve(): `t[k] <<< v` where every
 * store into t is a table constructor is an error at compile time.
 */
#include <string.h>
#include <linux/ktap.h>
#include "ast.h"

static const char *const kp_agg_ctors[] = { "hist", "lhist", "stats", "ptable" };
/* arguments before the label, per constructor */
static const int kp_agg_nargs[] = { 0, 3, 0, 0 };

#define KP_AGG_MAX	64

struct kp_agglower {
	struct kp_state	*S;
	uint8_t		shadowed[ARRAY_SIZE(kp_agg_ctors)];	/* the script defines it */
	const char	*names[KP_AGG_MAX];
	int		nnames;
	int		nprobes;	/* probes other than end handlers */
	int		has_end;
};

static int ctor_index(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(kp_agg_ctors); i++)
		if (!strcmp(name, kp_agg_ctors[i]))
			return (int)i;
	return -1;
}

static void shadow(struct kp_agglower *L, const char *name)
{
	int i = ctor_index(name);

	if (i >= 0)
		L->shadowed[i] = 1;
}

/* Names the script defines at any depth: they hide the constructors. */
static void find_shadows(struct kp_agglower *L, const struct kp_node *n)
{
	const struct kp_var *v;

	for (; n; n = n->next) {
		switch (n->kind) {
		case KP_N_ASSIGN:
			for (const struct kp_node *t = n->list; t; t = t->next)
				if (t->kind == KP_N_NAME)
					shadow(L, t->str.s);
			break;
		case KP_N_FUNCSTAT:
		case KP_N_COMPOUND:
			if (n->a && n->a->kind == KP_N_NAME)
				shadow(L, n->a->str.s);
			break;
		case KP_N_LOCAL:
		case KP_N_LOCALFUNC:
		case KP_N_FORNUM:
		case KP_N_FORIN:
			for (v = n->vars; v; v = v->next)
				shadow(L, v->name);
			break;
		default:
			break;
		}
		find_shadows(L, n->a);
		find_shadows(L, n->b);
		find_shadows(L, n->c);
		find_shadows(L, n->list);
		find_shadows(L, n->list2);
		if (n->fn) {
			for (v = n->fn->params; v; v = v->next)
				shadow(L, v->name);
			find_shadows(L, n->fn->filter);
			find_shadows(L, n->fn->body);
		}
	}
}

/* The constructor @value calls (an index of kp_agg_ctors), or -1. */
static int ctor_call(const struct kp_agglower *L, const struct kp_node *value)
{
	int i;

	if (!value || value->kind != KP_N_CALL || value->a->kind != KP_N_NAME)
		return -1;
	i = ctor_index(value->a->str.s);
	return i >= 0 && !L->shadowed[i] ? i : -1;
}

/* `NAME = ctor(...)`: give the call its label and remember NAME. */
static void label(struct kp_agglower *L, const char *name,
		  struct kp_node *call)
{
	int i = ctor_call(L, call), k, nargs = 0;
	struct kp_node **tail = &call->list, *s;

	if (i < 0)
		return;
	for (; *tail; tail = &(*tail)->next)
		nargs++;
	if (nargs == kp_agg_nargs[i]) {
		s = kp_node_new(L->S, KP_N_STR, call->line, call->col);
		s->str.s = name;
		s->str.len = (uint32_t)strlen(name);
		*tail = s;
	}
	for (k = 0; k < L->nnames; k++)
		if (!strcmp(L->names[k], name))
			return;
	if (L->nnames < KP_AGG_MAX)
		L->names[L->nnames++] = name;
}

/* kdebug.probe_end(...), kdebug.probe(...), timer.*(...) */
static const char *lib_call(const struct kp_node *n, const char *lib)
{
	if (n->kind != KP_N_EXPR || !n->a || n->a->kind != KP_N_CALL)
		return NULL;
	n = n->a->a;
	if (n->kind != KP_N_FIELD || n->a->kind != KP_N_NAME ||
	    strcmp(n->a->str.s, lib))
		return NULL;
	return n->str.s;
}

static void scan_top(struct kp_agglower *L, struct kp_node *n)
{
	const struct kp_var *v;
	struct kp_node *val;
	const char *m;

	for (; n; n = n->next) {
		switch (n->kind) {
		case KP_N_ASSIGN:
			if (n->list && !n->list->next &&
			    n->list->kind == KP_N_NAME && n->list2 &&
			    !n->list2->next)
				label(L, n->list->str.s, n->list2);
			break;
		case KP_N_LOCAL:
			for (v = n->vars, val = n->list; v && val;
			     v = v->next, val = val->next)
				label(L, v->name, val);
			break;
		case KP_N_PROBE:
			if (n->probe->kind == KP_PROBE_TRACE_END)
				L->has_end = 1;
			else
				L->nprobes++;
			break;
		case KP_N_EXPR:
			m = lib_call(n, "kdebug");
			if (m && !strcmp(m, "probe_end"))
				L->has_end = 1;
			else if (m || lib_call(n, "timer"))
				L->nprobes++;
			break;
		default:
			break;
		}
	}
}

/* trace_end { print(NAME) ... } after the last statement of the main chunk */
static void add_end(struct kp_agglower *L, struct kp_ast *ast)
{
	struct kp_func *main = ast->main, *fn;
	struct kp_node **tail = &main->body->list, *probe, *body, **btail;
	uint32_t line = main->end_line ? main->end_line : 1;
	struct kp_probe *p;
	int i;

	while (*tail)
		tail = &(*tail)->next;
	fn = kp_alloc(&L->S->arena, sizeof(*fn));
	fn->name = "trace_end";
	fn->line = line;
	fn->end_line = line;
	fn->parent = main;
	body = kp_node_new(L->S, KP_N_BLOCK, line, 1);
	btail = &body->list;
	for (i = 0; i < L->nnames; i++) {
		struct kp_node *st = kp_node_new(L->S, KP_N_EXPR, line, 1);
		struct kp_node *call = kp_node_new(L->S, KP_N_CALL, line, 1);
		struct kp_node *f = kp_node_new(L->S, KP_N_NAME, line, 1);
		struct kp_node *arg = kp_node_new(L->S, KP_N_NAME, line, 1);

		f->str.s = "print";
		f->str.len = 5;
		arg->str.s = L->names[i];
		arg->str.len = (uint32_t)strlen(L->names[i]);
		call->a = f;
		call->list = arg;
		st->a = call;
		*btail = st;
		btail = &st->next;
	}
	fn->body = body;
	p = kp_alloc(&L->S->arena, sizeof(*p));
	p->kind = KP_PROBE_TRACE_END;
	fn->probe = p;
	probe = kp_node_new(L->S, KP_N_PROBE, line, 1);
	probe->probe = p;
	probe->fn = fn;
	*tail = probe;
}

void kp_aggr_lower(struct kp_state *S, struct kp_ast *ast)
{
	struct kp_agglower L = { .S = S };

	if (!ast->main || !ast->main->body)
		return;
	find_shadows(&L, ast->main->body);
	scan_top(&L, ast->main->body->list);
	if (L.nnames && L.nprobes && !L.has_end)
		add_end(&L, ast);
}

/* ---- `<<<` into a table ---- */

enum {
	KP_STORE_TABLE	= 1,	/* a table constructor {} */
	KP_STORE_AGG	= 2,	/* an aggregation constructor */
	KP_STORE_OTHER	= 4,
};

struct kp_aggcheck {
	struct kp_state	*S;
	uint8_t		*gstore;	/* per global: KP_STORE_* seen */
	int		ctor[ARRAY_SIZE(kp_agg_ctors)];	/* their builtin ids */
};

static uint8_t store_kind(const struct kp_aggcheck *C,
			  const struct kp_node *v)
{
	size_t i;

	if (!v)
		return KP_STORE_OTHER;
	if (v->kind == KP_N_TABLE)
		return KP_STORE_TABLE;
	if (v->kind == KP_N_CALL && v->builtin >= 0)
		for (i = 0; i < ARRAY_SIZE(C->ctor); i++)
			if (v->builtin == C->ctor[i])
				return KP_STORE_AGG;
	return KP_STORE_OTHER;
}

static uint8_t *store_slot(struct kp_aggcheck *C, const struct kp_node *t)
{
	if (t->kind != KP_N_NAME)
		return NULL;
	switch (t->sym.kind) {
	case KP_SYM_GLOBAL:
		return &C->gstore[t->sym.global];
	case KP_SYM_LOCAL:
	case KP_SYM_UPVAL:
		return t->sym.var ? &t->sym.var->stores : NULL;
	default:
		return NULL;
	}
}

static void record(struct kp_aggcheck *C, const struct kp_node *target,
		   uint8_t kind)
{
	uint8_t *slot = store_slot(C, target);

	if (slot)
		*slot |= kind;
}

static void collect_stores(struct kp_aggcheck *C, const struct kp_node *n)
{
	const struct kp_node *t, *v;
	struct kp_var *var;

	for (; n; n = n->next) {
		switch (n->kind) {
		case KP_N_ASSIGN:
			for (t = n->list, v = n->list2; t;
			     t = t->next, v = v ? v->next : NULL)
				record(C, t, store_kind(C, v));
			break;
		case KP_N_LOCAL:
			for (var = n->vars, v = n->list; var;
			     var = var->next, v = v ? v->next : NULL)
				var->stores |= store_kind(C, v);
			break;
		case KP_N_COMPOUND:
		case KP_N_FUNCSTAT:
			record(C, n->a, KP_STORE_OTHER);
			break;
		default:
			break;
		}
		collect_stores(C, n->a);
		collect_stores(C, n->b);
		collect_stores(C, n->c);
		collect_stores(C, n->list);
		collect_stores(C, n->list2);
		if (n->fn) {
			for (var = n->fn->params; var; var = var->next)
				var->stores |= KP_STORE_OTHER;
			collect_stores(C, n->fn->filter);
			collect_stores(C, n->fn->body);
		}
	}
}

static void check_aggr(struct kp_aggcheck *C, const struct kp_node *n)
{
	const struct kp_node *obj;
	const uint8_t *slot;

	for (; n; n = n->next) {
		if (n->kind == KP_N_AGGR && n->a &&
		    (n->a->kind == KP_N_INDEX || n->a->kind == KP_N_FIELD)) {
			obj = n->a->a;
			slot = store_slot(C, obj);
			if (slot && *slot == KP_STORE_TABLE)
				kp_error(C->S, n->line, n->col, KP_E_AGGR_TABLE,
					 obj->str.s, obj->str.s);
		}
		check_aggr(C, n->a);
		check_aggr(C, n->b);
		check_aggr(C, n->c);
		check_aggr(C, n->list);
		check_aggr(C, n->list2);
		if (n->fn) {
			check_aggr(C, n->fn->filter);
			check_aggr(C, n->fn->body);
		}
	}
}

void kp_aggr_check(struct kp_state *S, struct kp_ast *ast)
{
	struct kp_aggcheck C = { .S = S };
	size_t i;

	if (!ast->main || !ast->main->body)
		return;
	for (i = 0; i < ARRAY_SIZE(C.ctor); i++)
		C.ctor[i] = kp_builtin_find(kp_agg_ctors[i]);
	C.gstore = kp_alloc(&S->arena, KTAP_MAX_GLOBALS);
	collect_stores(&C, ast->main->body);
	check_aggr(&C, ast->main->body);
}
