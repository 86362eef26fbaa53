// SPDX-License-Identifier: GPL-2.0
/*
 * Parser: the token array of lex.c to the syntax tree of ast.h.
 *
 * Recursive descent, one function per construct of the grammar below,
 * with binary operators parsed by precedence climbing over one table.
 * The parser knows nothing about names, registers or probes: it only
 * records what was written and where, for the passes that follow.
 *
 *	chunk	:= stmt*
 *	stmt	:= ';' | if | while | for | function | var | return | break
 *		 | trace EVENTDEF ['/' expr '/'] block | trace_end block
 *		 | PERIOD block | block | exprstat
 *	exprstat := suffixed ( (',' target)* '=' exprs | OP= expr
 *		 | '<<<' expr | )		(a call when alone)
 *	expr	:= unary (binop unary)*
 *	unary	:= ('not' | '!' | '-') unary | simple
 *	simple	:= INT | STRING | nil | true | false | table | function
 *		 | suffixed
 *	suffixed := (NAME | '(' expr ')') ('.' NAME | '[' expr ']'
 *		 | '(' args ')' | ':' NAME '(' args ')')*
 *
 * Errors: a statement that fails is abandoned through the jmp_buf of
 * kp_fatal(), dropped from the tree, and parsing resumes at the next
 * statement boundary, so one run reports several errors.
 *
 * Positions: a node is where its first token is, except BINOP, INDEX,
 * FIELD, CALL and METHOD, which are where their operator or suffix is
 * ('+', '[', '.', '(', ':'); a FIELD's name token follows its '.'.
 */
#include <string.h>
#include "ast.h"
#include "events.h"
#include "lex.h"

struct kp_parser {
	struct kp_state	*S;
	struct kp_func	*fn;		/* function being parsed */
	struct kp_ast	*ast;
	int		depth;
	int		in_filter;	/* '/' ends a trace filter */
};

#define MAX_TARGETS	16

/* ---- tokens ---- */

static struct kp_token *tok(struct kp_parser *P)
{
	return &P->S->toks[P->S->tk];
}

static struct kp_token *ahead(struct kp_parser *P, uint32_t n)
{
	uint32_t i = P->S->tk + n;

	return &P->S->toks[i < P->S->ntoks ? i : P->S->ntoks - 1];
}

static struct kp_token *advance(struct kp_parser *P)
{
	struct kp_state *S = P->S;
	struct kp_token *t = tok(P);

	S->line = t->line;
	S->col = t->col;
	if (S->tk + 1 < S->ntoks)
		S->tk++;
	return t;
}

static int is(struct kp_parser *P, int type)
{
	return tok(P)->type == type;
}

static int accept(struct kp_parser *P, int type)
{
	if (!is(P, type))
		return 0;
	advance(P);
	return 1;
}

static void __attribute__((noreturn)) fail_at(struct kp_parser *P,
					      struct kp_token *t,
					      enum kp_err e, const char *what)
{
	/* the lexer reported its own bad tokens */
	if (t->type == TK_ERROR)
		longjmp(*P->S->recover, 1);
	if (e == KP_E_EXPECTED)
		kp_fatal(P->S, t->line, t->col, e, what, kp_tkdesc(P->S, t));
	kp_fatal(P->S, t->line, t->col, e, kp_tkdesc(P->S, t));
}

static void __attribute__((noreturn)) expected(struct kp_parser *P,
					       const char *what)
{
	fail_at(P, tok(P), KP_E_EXPECTED, what);
}

static void __attribute__((noreturn)) unexpected(struct kp_parser *P)
{
	fail_at(P, tok(P), KP_E_UNEXPECTED, NULL);
}

static struct kp_token *expect(struct kp_parser *P, int type)
{
	if (!is(P, type))
		expected(P, kp_tkname[type]);
	return advance(P);
}

/* The closing @type of an @open token seen at @line. */
static void expect_close(struct kp_parser *P, int type, int open,
			 uint32_t line)
{
	char what[80];

	if (accept(P, type))
		return;
	if (line == tok(P)->line)
		expected(P, kp_tkname[type]);
	snprintf(what, sizeof(what), "%s (to close %s at line %u)",
		 kp_tkname[type], kp_tkname[open], line);
	expected(P, kp_strndup(&P->S->arena, what, strlen(what)));
}

static void nest(struct kp_parser *P)
{
	if (++P->depth > KP_MAX_DEPTH) {
		P->depth = 0;	/* let the report itself through */
		kp_fatal(P->S, tok(P)->line, tok(P)->col, KP_E_DEPTH,
			 KP_MAX_DEPTH);
	}
}

static void unnest(struct kp_parser *P)
{
	P->depth--;
}

/* ---- nodes ---- */

static struct kp_node *node_at(struct kp_parser *P, enum kp_nodekind k,
			       const struct kp_token *t)
{
	return kp_node_new(P->S, k, t->line, t->col);
}

static struct kp_var *new_var(struct kp_parser *P, const struct kp_token *t)
{
	struct kp_var *v = kp_alloc(&P->S->arena, sizeof(*v));

	v->name = t->str.s;
	v->line = t->line;
	v->col = t->col;
	v->reg = -1;
	return v;
}

static struct kp_func *new_func(struct kp_parser *P, const char *name,
				const struct kp_token *t)
{
	struct kp_func *fn = kp_alloc(&P->S->arena, sizeof(*fn));

	fn->name = name;
	fn->line = t->line;
	fn->col = t->col;
	fn->parent = P->fn;
	return fn;
}

/* Append @n to the list whose last element is *@tail. */
static void append(struct kp_node ***tail, struct kp_node *n)
{
	**tail = n;
	*tail = &n->next;
}

/* ---- expressions ---- */

static struct kp_node *expr(struct kp_parser *P);
static struct kp_node *block(struct kp_parser *P);
static struct kp_node *func_body(struct kp_parser *P, struct kp_func *fn);

/* An expression inside brackets, where '/' divides even in a filter. */
static struct kp_node *inner_expr(struct kp_parser *P)
{
	int saved = P->in_filter;
	struct kp_node *n;

	P->in_filter = 0;
	n = expr(P);
	P->in_filter = saved;
	return n;
}

/* '(' [expr (',' expr)*] ')' */
static struct kp_node *call_args(struct kp_parser *P)
{
	struct kp_token *open = expect(P, TK_LPAREN);
	struct kp_node *list = NULL, **tail = &list;

	/* their number is bounded by the registers (gen.c) */
	if (!is(P, TK_RPAREN)) {
		do {
			append(&tail, inner_expr(P));
		} while (accept(P, TK_COMMA));
	}
	expect_close(P, TK_RPAREN, TK_LPAREN, open->line);
	return list;
}

static struct kp_node *primary(struct kp_parser *P)
{
	struct kp_token *t = tok(P);
	struct kp_node *n;

	if (t->type == TK_NAME) {
		advance(P);
		n = node_at(P, KP_N_NAME, t);
		n->str = t->str;
		if (!strcmp(t->str.s, "arg"))
			P->ast->need_arg = 1;
		return n;
	}
	if (t->type == TK_LPAREN) {
		advance(P);
		nest(P);
		n = inner_expr(P);
		unnest(P);
		expect_close(P, TK_RPAREN, TK_LPAREN, t->line);
		return n;
	}
	unexpected(P);
}

/*
 * A table key, or a tuple of them: t[a, b] indexes t by the string
 * "A, B" (each part as `..` converts it), which is also how a chart
 * prints the key.
 */
static struct kp_node *tuple_key(struct kp_parser *P)
{
	struct kp_node *key = inner_expr(P), *sep, *cat;
	struct kp_token *t;
	int links = 0;

	while (is(P, TK_COMMA)) {
		t = advance(P);
		sep = node_at(P, KP_N_STR, t);
		sep->str.s = ", ";
		sep->str.len = 2;
		cat = node_at(P, KP_N_BINOP, t);
		cat->op = KP_OP_CONCAT;
		cat->a = key;
		cat->b = sep;
		key = node_at(P, KP_N_BINOP, t);
		key->op = KP_OP_CONCAT;
		key->a = cat;
		key->b = inner_expr(P);
		/* two links deeper for the passes that recurse down it */
		nest(P);
		nest(P);
		links += 2;
	}
	P->depth -= links;
	return key;
}

static struct kp_node *suffixed(struct kp_parser *P)
{
	struct kp_node *n = primary(P), *s;
	struct kp_token *t, *name;
	int count = 0;

	for (;;) {
		t = tok(P);
		if (++count > KP_MAX_DEPTH)
			kp_fatal(P->S, t->line, t->col, KP_E_DEPTH,
				 KP_MAX_DEPTH);
		switch (t->type) {
		case TK_DOT:
			advance(P);
			if (!is(P, TK_NAME))
				expected(P, "a field name");
			name = advance(P);
			s = node_at(P, KP_N_FIELD, name);
			s->str = name->str;
			break;
		case TK_LBRACKET:
			advance(P);
			s = node_at(P, KP_N_INDEX, t);
			nest(P);
			s->b = tuple_key(P);
			unnest(P);
			expect_close(P, TK_RBRACKET, TK_LBRACKET, t->line);
			break;
		case TK_LPAREN:
			s = node_at(P, KP_N_CALL, t);
			s->list = call_args(P);
			break;
		case TK_COLON:
			advance(P);
			if (!is(P, TK_NAME))
				expected(P, "a field name");
			name = advance(P);
			s = node_at(P, KP_N_METHOD, t);
			s->str = name->str;
			if (!is(P, TK_LPAREN))
				expected(P, "'('");
			s->list = call_args(P);
			break;
		default:
			return n;
		}
		s->a = n;
		n = s;
	}
}

/* '{' [item ((',' | ';') item)* [',' | ';']] '}' */
static struct kp_node *table(struct kp_parser *P)
{
	struct kp_token *open = expect(P, TK_LBRACE);
	struct kp_node *t = node_at(P, KP_N_TABLE, open), **tail = &t->list;
	struct kp_node *it;

	nest(P);
	while (!is(P, TK_RBRACE)) {
		struct kp_token *at = tok(P);

		it = node_at(P, KP_N_TITEM, at);
		if (at->type == TK_NAME && ahead(P, 1)->type == TK_ASSIGN) {
			advance(P);
			advance(P);
			it->a = node_at(P, KP_N_STR, at);
			it->a->str = at->str;
		} else if (at->type == TK_LBRACKET) {
			advance(P);
			it->a = inner_expr(P);
			expect_close(P, TK_RBRACKET, TK_LBRACKET, at->line);
			expect(P, TK_ASSIGN);
		}
		it->b = inner_expr(P);
		append(&tail, it);
		if (!accept(P, TK_COMMA) && !accept(P, TK_SEMI))
			break;
	}
	unnest(P);
	expect_close(P, TK_RBRACE, TK_LBRACE, open->line);
	return t;
}

static struct kp_node *simple(struct kp_parser *P)
{
	struct kp_token *t = tok(P);
	struct kp_node *n;

	switch (t->type) {
	case TK_INT:
		n = node_at(P, KP_N_INT, t);
		n->ival = t->i;
		break;
	case TK_STRING:
		n = node_at(P, KP_N_STR, t);
		n->str = t->str;
		break;
	case TK_KSYM:
		n = node_at(P, KP_N_INT, t);
		n->ival = (int64_t)kp_ksym_addr(P->S, t);
		break;
	case TK_NIL:
		n = node_at(P, KP_N_NIL, t);
		break;
	case TK_TRUE:
		n = node_at(P, KP_N_TRUE, t);
		break;
	case TK_FALSE:
		n = node_at(P, KP_N_FALSE, t);
		break;
	case TK_LBRACE:
		return table(P);
	case TK_FUNCTION:
		advance(P);
		n = node_at(P, KP_N_FUNC, t);
		n->fn = new_func(P, NULL, t);
		func_body(P, n->fn);
		return n;
	default:
		return suffixed(P);
	}
	advance(P);
	return n;
}

/* Binary operators: precedence (higher binds tighter), associativity. */
static const struct {
	uint8_t		prec;
	uint8_t		right;
	uint8_t		op;
} kp_binops[TK__COUNT] = {
	[TK_OR] = { 1, 0, KP_OP_OR }, [TK_OROR] = { 1, 0, KP_OP_OR },
	[TK_AND] = { 2, 0, KP_OP_AND }, [TK_ANDAND] = { 2, 0, KP_OP_AND },
	[TK_EQ] = { 3, 0, KP_OP_EQ }, [TK_NE] = { 3, 0, KP_OP_NE },
	[TK_LT] = { 3, 0, KP_OP_LT }, [TK_LE] = { 3, 0, KP_OP_LE },
	[TK_GT] = { 3, 0, KP_OP_GT }, [TK_GE] = { 3, 0, KP_OP_GE },
	[TK_CONCAT] = { 4, 1, KP_OP_CONCAT },
	[TK_PLUS] = { 5, 0, KP_OP_ADD }, [TK_MINUS] = { 5, 0, KP_OP_SUB },
	[TK_STAR] = { 6, 0, KP_OP_MUL }, [TK_SLASH] = { 6, 0, KP_OP_DIV },
	[TK_PERCENT] = { 6, 0, KP_OP_MOD },
};

#define UNARY_PREC	7

static int binop_prec(struct kp_parser *P)
{
	int t = tok(P)->type;

	if (t == TK_SLASH && P->in_filter)
		return 0;	/* the end of the filter */
	return kp_binops[t].prec;
}

/* Operators binding tighter than @min, by precedence climbing. */
static struct kp_node *binary(struct kp_parser *P, int min)
{
	struct kp_token *t = tok(P);
	struct kp_node *n, *b;
	int prec, links = 0;

	nest(P);
	if (t->type == TK_NOT || t->type == TK_BANG || t->type == TK_MINUS) {
		advance(P);
		n = node_at(P, KP_N_UNOP, t);
		n->op = t->type == TK_MINUS ? '-' : '!';
		n->a = binary(P, UNARY_PREC - 1);
	} else {
		n = simple(P);
	}
	while ((prec = binop_prec(P)) > min) {
		t = advance(P);
		b = node_at(P, KP_N_BINOP, t);
		b->op = kp_binops[t->type].op;
		b->a = n;
		b->b = binary(P, kp_binops[t->type].right ? prec - 1 : prec);
		n = b;
		/*
		 * a + b + c ... grows the tree on the left without
		 * recursing here, but every later pass recurses down it:
		 * each link counts as a level of nesting.
		 */
		nest(P);
		links++;
	}
	P->depth -= links;
	unnest(P);
	return n;
}

static struct kp_node *expr(struct kp_parser *P)
{
	return binary(P, 0);
}

/* ---- statements ---- */

static struct kp_node *statement(struct kp_parser *P);
static void statements(struct kp_parser *P, struct kp_node **tail);

/* '{' stmt* '}' */
static struct kp_node *block(struct kp_parser *P)
{
	struct kp_token *open = expect(P, TK_LBRACE);
	struct kp_node *b = node_at(P, KP_N_BLOCK, open);

	statements(P, &b->list);
	expect_close(P, TK_RBRACE, TK_LBRACE, open->line);
	return b;
}

/* '(' [NAME (',' NAME)*] ')' block, after `function [name]` */
static struct kp_node *func_body(struct kp_parser *P, struct kp_func *fn)
{
	struct kp_func *saved = P->fn;
	struct kp_var **tail = &fn->params;

	P->fn = fn;
	expect(P, TK_LPAREN);
	if (!is(P, TK_RPAREN)) {
		do {
			if (fn->nparams >= KP_MAX_PARAMS)
				kp_fatal(P->S, tok(P)->line, tok(P)->col,
					 KP_E_PARAMS, KP_MAX_PARAMS);
			if (!is(P, TK_NAME))
				expected(P, "a name");
			*tail = new_var(P, advance(P));
			tail = &(*tail)->next;
			fn->nparams++;
		} while (accept(P, TK_COMMA));
	}
	expect(P, TK_RPAREN);
	fn->body = block(P);
	fn->end_line = P->S->line;
	P->fn = saved;
	return fn->body;
}

/* '(' expr ')' of if and while */
static struct kp_node *condition(struct kp_parser *P)
{
	struct kp_token *open = expect(P, TK_LPAREN);
	struct kp_node *c = inner_expr(P);

	expect_close(P, TK_RPAREN, TK_LPAREN, open->line);
	return c;
}

static struct kp_node *if_stmt(struct kp_parser *P, struct kp_token *kw)
{
	struct kp_node *n = node_at(P, KP_N_IF, kw);
	struct kp_token *t;

	n->a = condition(P);
	n->b = block(P);
	t = tok(P);
	if (t->type == TK_ELSEIF || (t->type == TK_ELSE &&
				     ahead(P, 1)->type == TK_IF)) {
		/* each elseif nests the next if in this one's else */
		nest(P);
		advance(P);
		if (t->type == TK_ELSE)
			t = advance(P);
		n->c = if_stmt(P, t);
		unnest(P);
	} else if (accept(P, TK_ELSE)) {
		n->c = block(P);
	}
	return n;
}

static struct kp_node *for_stmt(struct kp_parser *P, struct kp_token *kw)
{
	struct kp_token *open = expect(P, TK_LPAREN), *name, *t;
	struct kp_node *n;

	if (!is(P, TK_NAME))
		expected(P, "a name");
	name = advance(P);
	if (accept(P, TK_ASSIGN)) {
		n = node_at(P, KP_N_FORNUM, kw);
		n->vars = new_var(P, name);
		n->a = inner_expr(P);
		expect(P, TK_COMMA);
		n->b = inner_expr(P);
		if (accept(P, TK_COMMA)) {
			t = tok(P);
			n->c = inner_expr(P);
			if (n->c->kind == KP_N_INT && !n->c->ival)
				kp_error(P->S, t->line, t->col, KP_E_FOR_STEP);
		}
		expect_close(P, TK_RPAREN, TK_LPAREN, open->line);
		n->list = block(P);
		return n;
	}
	if (!is(P, TK_COMMA) && !is(P, TK_IN))
		expected(P, "'=' or 'in'");
	n = node_at(P, KP_N_FORIN, kw);
	n->vars = new_var(P, name);
	if (accept(P, TK_COMMA)) {
		if (!is(P, TK_NAME))
			expected(P, "a name");
		n->vars->next = new_var(P, advance(P));
	}
	expect(P, TK_IN);
	n->a = inner_expr(P);
	expect_close(P, TK_RPAREN, TK_LPAREN, open->line);
	n->b = block(P);
	return n;
}

/* `function a.b.c(params) { }` */
static struct kp_node *function_stmt(struct kp_parser *P,
				     struct kp_token *kw)
{
	struct kp_node *n = node_at(P, KP_N_FUNCSTAT, kw), *target, *f;
	struct kp_token *name;

	if (!is(P, TK_NAME))
		expected(P, "a function name");
	name = advance(P);
	target = node_at(P, KP_N_NAME, name);
	target->str = name->str;
	while (accept(P, TK_DOT)) {
		if (!is(P, TK_NAME))
			expected(P, "a field name");
		name = advance(P);
		f = node_at(P, KP_N_FIELD, name);
		f->str = name->str;
		f->a = target;
		target = f;
	}
	n->a = target;
	n->fn = new_func(P, name->str.s, kw);
	func_body(P, n->fn);
	return n;
}

/* `var a, b = x, y` and `var function f() { }` */
static struct kp_node *var_stmt(struct kp_parser *P, struct kp_token *kw)
{
	struct kp_var **tail;
	struct kp_node *n, **vtail;
	struct kp_token *name;

	if (accept(P, TK_FUNCTION)) {
		n = node_at(P, KP_N_LOCALFUNC, kw);
		if (!is(P, TK_NAME))
			expected(P, "a name");
		name = advance(P);
		n->vars = new_var(P, name);
		n->fn = new_func(P, name->str.s, name);
		func_body(P, n->fn);
		return n;
	}
	n = node_at(P, KP_N_LOCAL, kw);
	tail = &n->vars;
	do {
		if (!is(P, TK_NAME))
			expected(P, "a name");
		*tail = new_var(P, advance(P));
		tail = &(*tail)->next;
	} while (accept(P, TK_COMMA));
	if (accept(P, TK_ASSIGN)) {
		vtail = &n->list;
		do {
			append(&vtail, expr(P));
		} while (accept(P, TK_COMMA));
	}
	return n;
}

static struct kp_node *return_stmt(struct kp_parser *P, struct kp_token *kw)
{
	struct kp_node *n = node_at(P, KP_N_RETURN, kw), **tail;
	struct kp_token *t = tok(P);
	int nval = 0;

	/* `return` alone on its line returns nothing */
	if (t->type == TK_EOF || t->type == TK_RBRACE || t->type == TK_SEMI ||
	    t->nl_before)
		return n;
	tail = &n->list;
	do {
		if (++nval > KP_MAX_RETURNS)
			kp_fatal(P->S, tok(P)->line, tok(P)->col,
				 KP_E_RETURNS, KP_MAX_RETURNS);
		append(&tail, expr(P));
	} while (accept(P, TK_COMMA));
	return n;
}

/* A handler function of a probe statement. */
static struct kp_func *handler(struct kp_parser *P, struct kp_probe *p,
			       const char *name, struct kp_token *kw,
			       int has_event)
{
	struct kp_func *fn = new_func(P, name, kw), *saved = P->fn;

	fn->probe = p;
	if (has_event) {
		struct kp_var *e = kp_alloc(&P->S->arena, sizeof(*e));

		e->name = "e";
		e->line = kw->line;
		e->col = kw->col;
		e->reg = -1;
		e->is_event = 1;
		fn->params = e;
		fn->nparams = 1;
	}
	P->fn = fn;
	if (p->kind == KP_PROBE_TRACE && is(P, TK_SLASH)) {
		advance(P);
		P->in_filter = 1;
		fn->filter = expr(P);
		P->in_filter = 0;
		expect(P, TK_SLASH);
	}
	fn->body = block(P);
	fn->end_line = P->S->line;
	P->fn = saved;
	return fn;
}

static void resume(struct kp_parser *P, struct kp_func *fn, int depth,
		   jmp_buf *saved, uint32_t start);

/*
 * A trace block whose filter or body does not parse keeps its probe in
 * the tree (with an empty body), so what resolve.c says about the event
 * definition, often the real problem, is reported too.
 */
static struct kp_func *trace_handler(struct kp_parser *P, struct kp_probe *p,
				     const char *name, struct kp_token *kw)
{
	struct kp_state *S = P->S;
	struct kp_func *volatile fn = P->fn;
	volatile int depth = P->depth;
	volatile uint32_t start = S->tk;
	jmp_buf jb, *volatile saved = S->recover;
	struct kp_func *h;

	S->recover = &jb;
	if (!setjmp(jb)) {
		h = handler(P, p, name, kw, 1);
		S->recover = saved;
		return h;
	}
	resume(P, fn, depth, saved, start);
	h = new_func(P, name, kw);
	h->probe = p;
	h->body = kp_node_new(S, KP_N_BLOCK, kw->line, kw->col);
	return h;
}

static struct kp_node *probe_stmt(struct kp_parser *P, struct kp_token *kw)
{
	struct kp_node *n = node_at(P, KP_N_PROBE, kw);
	struct kp_probe *p = kp_alloc(&P->S->arena, sizeof(*p));
	char name[128];

	n->probe = p;
	switch (kw->type) {
	case TK_TRACE:
		p->kind = KP_PROBE_TRACE;
		p->tok = tok(P);
		if (p->tok->type != TK_EVENTDEF || !p->tok->str.len)
			kp_fatal(P->S, p->tok->line, p->tok->col,
				 KP_E_NO_EVENTDEF);
		advance(P);
		snprintf(name, sizeof(name), "trace %.100s", p->tok->str.s);
		n->fn = trace_handler(P, p, kp_strndup(&P->S->arena, name,
						       strlen(name)), kw);
		break;
	case TK_TRACE_END:
		p->kind = KP_PROBE_TRACE_END;
		n->fn = handler(P, p, "trace_end", kw, 0);
		break;
	default:
		p->kind = KP_PROBE_PERIOD;
		p->tok = kw;
		n->fn = handler(P, p, kw->text, kw, 1);
		break;
	}
	return n;
}

static int is_target(const struct kp_node *n)
{
	return n->kind == KP_N_NAME || n->kind == KP_N_INDEX ||
	       n->kind == KP_N_FIELD;
}

static const uint8_t kp_compound_op[TK__COUNT] = {
	[TK_ADD_EQ] = KP_OP_ADD + 1, [TK_SUB_EQ] = KP_OP_SUB + 1,
	[TK_MUL_EQ] = KP_OP_MUL + 1, [TK_DIV_EQ] = KP_OP_DIV + 1,
	[TK_MOD_EQ] = KP_OP_MOD + 1, [TK_CAT_EQ] = KP_OP_CONCAT + 1,
};

static struct kp_node *expr_stmt(struct kp_parser *P)
{
	struct kp_token *start = tok(P), *t;
	struct kp_node *first, *n, **tail;
	int ntargets = 1;

	/* [ffi.]cdef[[ C declarations ]]: say why, not "unexpected '['" */
	if (start->type == TK_NAME &&
	    ((!strcmp(start->str.s, "ffi") && ahead(P, 1)->type == TK_DOT) ||
	     (!strcmp(start->str.s, "cdef") &&
	      ahead(P, 1)->type == TK_LBRACKET)))
		kp_fatal(P->S, start->line, start->col, KP_E_FFI);
	first = suffixed(P);

	t = tok(P);
	if (t->type == TK_ASSIGN || t->type == TK_COMMA) {
		n = node_at(P, KP_N_ASSIGN, start);
		if (!is_target(first))
			kp_fatal(P->S, start->line, start->col,
				 KP_E_BAD_TARGET);
		n->list = first;
		tail = &first->next;
		while (accept(P, TK_COMMA)) {
			struct kp_token *at = tok(P);
			struct kp_node *target;

			if (++ntargets > MAX_TARGETS)
				kp_fatal(P->S, at->line, at->col, KP_E_LOCALS,
					 MAX_TARGETS);
			target = suffixed(P);
			if (!is_target(target))
				kp_fatal(P->S, at->line, at->col,
					 KP_E_BAD_TARGET);
			append(&tail, target);
		}
		expect(P, TK_ASSIGN);
		tail = &n->list2;
		do {
			append(&tail, expr(P));
		} while (accept(P, TK_COMMA));
		return n;
	}
	if (kp_compound_op[t->type]) {
		if (!is_target(first))
			kp_fatal(P->S, start->line, start->col,
				 KP_E_BAD_TARGET);
		advance(P);
		n = node_at(P, KP_N_COMPOUND, start);
		n->op = kp_compound_op[t->type] - 1;
		n->a = first;
		n->b = expr(P);
		return n;
	}
	if (t->type == TK_AGGR) {
		if (first->kind != KP_N_INDEX && first->kind != KP_N_FIELD)
			kp_fatal(P->S, start->line, start->col, KP_E_BAD_AGGR);
		advance(P);
		n = node_at(P, KP_N_AGGR, start);
		n->a = first;
		n->b = expr(P);
		return n;
	}
	if (first->kind != KP_N_CALL && first->kind != KP_N_METHOD)
		kp_fatal(P->S, start->line, start->col, KP_E_NOT_STMT);
	n = node_at(P, KP_N_EXPR, start);
	n->a = first;
	return n;
}

/* One statement, or NULL for one that leaves nothing in the tree. */
static struct kp_node *statement(struct kp_parser *P)
{
	struct kp_token *t = tok(P);
	struct kp_node *n;

	nest(P);
	switch (t->type) {
	case TK_SEMI:
		advance(P);
		n = NULL;
		break;
	case TK_IF:
		n = if_stmt(P, advance(P));
		break;
	case TK_WHILE:
		advance(P);
		n = node_at(P, KP_N_WHILE, t);
		n->a = condition(P);
		n->b = block(P);
		break;
	case TK_FOR:
		n = for_stmt(P, advance(P));
		break;
	case TK_FUNCTION:
		n = function_stmt(P, advance(P));
		break;
	case TK_LOCAL:
	case TK_VAR:
		n = var_stmt(P, advance(P));
		break;
	case TK_RETURN:
		n = return_stmt(P, advance(P));
		break;
	case TK_BREAK:
		advance(P);
		n = node_at(P, KP_N_BREAK, t);
		break;
	case TK_TRACE:
	case TK_TRACE_END:
	case TK_PERIOD:
		n = probe_stmt(P, advance(P));
		break;
	case TK_LBRACE:
		n = block(P);
		break;
	case TK_NAME:
	case TK_LPAREN:
		n = expr_stmt(P);
		break;
	default:
		unexpected(P);
	}
	unnest(P);
	return n;
}

static int starts_statement(const struct kp_token *t)
{
	switch (t->type) {
	case TK_IF: case TK_WHILE: case TK_FOR: case TK_FUNCTION:
	case TK_LOCAL: case TK_VAR: case TK_RETURN: case TK_BREAK:
	case TK_TRACE: case TK_TRACE_END: case TK_PERIOD: case TK_NAME:
		return 1;
	default:
		return 0;
	}
}

/*
 * After an error: skip to a `;`, the `}` of the current block, or a
 * token that starts a statement on a new line. Bracketed groups are
 * skipped whole, so the body of a broken `if (...) { }` adds no errors.
 */
static void resync(struct kp_parser *P, uint32_t start)
{
	int depth;

	if (P->S->tk == start && !is(P, TK_EOF) && !is(P, TK_RBRACE))
		advance(P);
	for (;;) {
		struct kp_token *t = tok(P);

		if (t->type == TK_EOF || t->type == TK_RBRACE)
			return;
		if (t->type == TK_SEMI) {
			advance(P);
			return;
		}
		if (t->nl_before && starts_statement(t))
			return;
		if (t->type != TK_LPAREN && t->type != TK_LBRACE &&
		    t->type != TK_LBRACKET) {
			advance(P);
			continue;
		}
		depth = 0;
		do {
			int ty = tok(P)->type;

			if (ty == TK_EOF)
				return;
			if (ty == TK_LPAREN || ty == TK_LBRACE ||
			    ty == TK_LBRACKET)
				depth++;
			else if (ty == TK_RPAREN || ty == TK_RBRACE ||
				 ty == TK_RBRACKET)
				depth--;
			advance(P);
		} while (depth > 0);
	}
}

/*
 * After kp_fatal() unwound to a recovery point: restore the parser as
 * it was there (@fn, @depth, the outer jmp_buf @saved), give up past
 * KP_MAX_ERRORS, else skip to the statement after the one that began
 * at token @start.
 */
static void resume(struct kp_parser *P, struct kp_func *fn, int depth,
		   jmp_buf *saved, uint32_t start)
{
	P->S->recover = saved;
	P->fn = fn;
	P->depth = depth;
	P->in_filter = 0;
	if (P->S->nerrors >= KP_MAX_ERRORS)
		longjmp(*saved, 1);
	resync(P, start);
}

/* Statements up to '}' or the end, each parsed under its own recovery. */
static void statements(struct kp_parser *P, struct kp_node **list)
{
	struct kp_node **volatile tail = list;
	struct kp_state *S = P->S;

	while (!is(P, TK_EOF) && !is(P, TK_RBRACE)) {
		struct kp_func *volatile fn = P->fn;
		volatile int depth = P->depth;
		volatile uint32_t start = S->tk;
		jmp_buf jb, *volatile saved = S->recover;
		struct kp_node *n;

		S->recover = &jb;
		if (!setjmp(jb)) {
			n = statement(P);
			S->recover = saved;
			if (n) {
				*tail = n;
				tail = &n->next;
			}
			continue;
		}
		resume(P, fn, depth, saved, start);
	}
}

int kp_parse(struct kp_state *S, struct kp_ast *ast)
{
	static const struct kp_token start = { .line = 0, .col = 0 };
	struct kp_parser P = { .S = S, .ast = ast };
	int before = S->nerrors;
	struct kp_node **tail;
	struct kp_func *main;

	main = new_func(&P, NULL, &start);
	main->body = kp_node_new(S, KP_N_BLOCK, 1, 1);
	ast->main = main;
	P.fn = main;
	S->line = 1;
	tail = &main->body->list;
	for (;;) {
		statements(&P, tail);
		while (*tail)
			tail = &(*tail)->next;
		if (is(&P, TK_EOF))
			break;
		kp_error(S, tok(&P)->line, tok(&P)->col, KP_E_UNEXPECTED,
			 kp_tkdesc(S, tok(&P)));
		if (S->nerrors >= KP_MAX_ERRORS)
			break;
		advance(&P);
	}
	main->end_line = S->line;
	return S->nerrors - before;
}
