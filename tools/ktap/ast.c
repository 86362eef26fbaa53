// SPDX-License-Identifier: GPL-2.0
/*
 * Syntax tree helpers: node allocation and the dump of `ktap -A`, which
 * shows the tree with what resolve.c found for every name, so tests can
 * pin each pass's result.
 */
#include <string.h>
#include "ast.h"
#include "lex.h"

#define __KP_NODE_NAME(name)						\
	[KP_N_##name] = #name,
const char *const kp_nodename[KP_N__COUNT] = {
	KP_NODES(__KP_NODE_NAME)
};
#undef __KP_NODE_NAME

const char *const kp_binopname[KP_OP__COUNT] = {
	[KP_OP_ADD] = "+", [KP_OP_SUB] = "-", [KP_OP_MUL] = "*",
	[KP_OP_DIV] = "/", [KP_OP_MOD] = "%", [KP_OP_CONCAT] = "..",
	[KP_OP_EQ] = "==", [KP_OP_NE] = "!=", [KP_OP_LT] = "<",
	[KP_OP_LE] = "<=", [KP_OP_GT] = ">", [KP_OP_GE] = ">=",
	[KP_OP_AND] = "and", [KP_OP_OR] = "or",
};

struct kp_node *kp_node_new(struct kp_state *S, enum kp_nodekind kind,
			    uint32_t line, uint32_t col)
{
	struct kp_node *n = kp_alloc(&S->arena, sizeof(*n));

	n->kind = (uint8_t)kind;
	n->line = line;
	n->col = col;
	n->builtin = -1;
	return n;
}

static void indent(FILE *out, int depth)
{
	fprintf(out, "%*s", depth * 2, "");
}

static void quoted(FILE *out, const struct kp_str *s)
{
	uint32_t i;

	fputc('"', out);
	for (i = 0; i < s->len; i++) {
		unsigned char c = (unsigned char)s->s[i];

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\x%02x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void dump_node(FILE *out, const struct kp_node *n, int depth,
		      const char *role);
static void dump_func(FILE *out, const struct kp_func *fn, int depth);

static void dump_list(FILE *out, const struct kp_node *n, int depth,
		      const char *role)
{
	for (; n; n = n->next)
		dump_node(out, n, depth, role);
}

static void dump_vars(FILE *out, const struct kp_var *v)
{
	for (; v; v = v->next)
		fprintf(out, " %s%s", v->name, v->captured ? "(captured)" : "");
}

static const char *const kp_symname[] = {
	[KP_SYM_NONE] = "?", [KP_SYM_LOCAL] = "local",
	[KP_SYM_UPVAL] = "upvalue", [KP_SYM_GLOBAL] = "global",
	[KP_SYM_BUILTIN] = "builtin", [KP_SYM_ARGN] = "argN",
	[KP_SYM_FIELD] = "event field", [KP_SYM_LIB] = "library",
};

static void dump_sym(FILE *out, const struct kp_node *n)
{
	const struct kp_sym *s = &n->sym;

	fprintf(out, " -> %s", kp_symname[s->kind]);
	switch (s->kind) {
	case KP_SYM_UPVAL:
		fprintf(out, " %d", s->upval);
		break;
	case KP_SYM_GLOBAL:
		fprintf(out, " %d", s->global);
		break;
	case KP_SYM_BUILTIN:
		fprintf(out, " %s", kp_builtin_name(s->builtin));
		break;
	case KP_SYM_ARGN:
		fprintf(out, " %d", s->argn);
		break;
	default:
		break;
	}
}

static const char *const kp_probekind[] = {
	[KP_PROBE_TRACE] = "trace", [KP_PROBE_TRACE_END] = "trace_end",
	[KP_PROBE_PERIOD] = "period", [KP_PROBE_KDEBUG] = "kdebug.probe",
	[KP_PROBE_KDEBUG_END] = "kdebug.probe_end",
	[KP_PROBE_TIMER] = "timer",
};

static void dump_node(FILE *out, const struct kp_node *n, int depth,
		      const char *role)
{
	if (!n)
		return;
	indent(out, depth);
	if (role)
		fprintf(out, "%s: ", role);
	fprintf(out, "%s %u:%u", kp_nodename[n->kind], n->line, n->col);
	switch (n->kind) {
	case KP_N_INT:
		fprintf(out, " %lld", (long long)n->ival);
		break;
	case KP_N_STR:
		fputc(' ', out);
		quoted(out, &n->str);
		break;
	case KP_N_NAME:
		fprintf(out, " %s", n->str.s);
		dump_sym(out, n);
		break;
	case KP_N_FIELD:
	case KP_N_METHOD:
		fprintf(out, " .%s", n->str.s);
		break;
	case KP_N_UNOP:
		fprintf(out, " %s", n->op == '-' ? "-" : "not");
		break;
	case KP_N_BINOP:
	case KP_N_COMPOUND:
		fprintf(out, " %s", kp_binopname[n->op]);
		break;
	case KP_N_LOCAL:
	case KP_N_LOCALFUNC:
	case KP_N_FORNUM:
	case KP_N_FORIN:
		dump_vars(out, n->vars);
		break;
	default:
		break;
	}
	if (n->kind == KP_N_CALL && n->builtin >= 0)
		fprintf(out, " builtin %s", kp_builtin_name(n->builtin));
	if (n->ansi) {
		struct kp_str s = { n->ansi, n->ansi_len };

		fputs(" ansi ", out);
		quoted(out, &s);
	}
	if (n->probe) {
		const struct kp_probe *p = n->probe;

		fprintf(out, " %s", p->what ? p->what :
			kp_probekind[p->kind]);
		if (p->tok && p->kind == KP_PROBE_TRACE)
			fprintf(out, " \"%s\"", p->tok->str.s);
		else if (p->tok)
			fprintf(out, " %s", p->tok->text);
		if (p->n)
			fprintf(out, " probes %u..%u", p->first,
				p->first + p->n - 1);
		if (p->override)
			fputs(" override", out);
	}
	fputc('\n', out);
	if (n->kind == KP_N_TITEM) {
		dump_node(out, n->a, depth + 1, "key");
		dump_node(out, n->b, depth + 1, "value");
		return;
	}
	dump_node(out, n->a, depth + 1, NULL);
	dump_node(out, n->b, depth + 1, NULL);
	dump_node(out, n->c, depth + 1, NULL);
	dump_list(out, n->list, depth + 1, NULL);
	dump_list(out, n->list2, depth + 1, n->kind == KP_N_ASSIGN ?
		  "value" : NULL);
	if (n->fn)
		dump_func(out, n->fn, depth + 1);
}

static void dump_func(FILE *out, const struct kp_func *fn, int depth)
{
	uint32_t i;

	indent(out, depth);
	fprintf(out, "function %s %u:%u params", fn->name ? fn->name : "-",
		fn->line, fn->col);
	dump_vars(out, fn->params);
	if (fn->nupv) {
		fputs(" upvalues", out);
		for (i = 0; i < fn->nupv; i++)
			fprintf(out, " %s%s", fn->upv[i].name,
				fn->upv[i].parent_upval < 0 ? "" : "^");
	}
	fputc('\n', out);
	dump_node(out, fn->filter, depth + 1, "filter");
	dump_node(out, fn->body, depth + 1, NULL);
}

void kp_ast_dump(FILE *out, const struct kp_ast *ast)
{
	dump_func(out, ast->main, 0);
}
