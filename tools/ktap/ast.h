/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ktap syntax tree: what parse.c builds, resolve.c and check.c annotate
 * and gen.c turns into instructions.
 *
 * Every node carries the position of the token that starts it, so any
 * pass can blame the right line and column. Lists (statements of a
 * block, arguments, table items) are singly linked through ->next.
 * Nodes live in the compiler's arena and are never freed one by one.
 */
#ifndef KP_AST_H
#define KP_AST_H

#include "kp.h"

/*
 * Node kinds, declared once: the enum and the names printed by the
 * syntax tree dump (ktap -A) derive from this list.
 */
#define KP_NODES(N)							\
	/* expressions */						\
	N(NIL)		/* nil */					\
	N(TRUE)		/* true */					\
	N(FALSE)	/* false */					\
	N(INT)		/* ival */					\
	N(STR)		/* str */					\
	N(NAME)		/* str; ->sym set by resolve */			\
	N(INDEX)	/* a = object, b = key */			\
	N(FIELD)	/* a = object, str = field name */		\
	N(CALL)		/* a = callee, list = arguments */		\
	N(METHOD)	/* a = object, str = method, list = arguments */ \
	N(FUNC)		/* fn = the function */				\
	N(TABLE)	/* list = items (TITEM) */			\
	N(TITEM)	/* a = key or NULL (next array slot), b = value */ \
	N(UNOP)		/* op = '-' or '!', a = operand */		\
	N(BINOP)	/* op = enum kp_binop, a, b */			\
	/* statements */						\
	N(BLOCK)	/* list = statements */				\
	N(LOCAL)	/* vars = declared names, list = values */	\
	N(LOCALFUNC)	/* vars = the name, fn = the function */	\
	N(ASSIGN)	/* list = targets, list2 = values */		\
	N(COMPOUND)	/* op = enum kp_binop, a = target, b = value */	\
	N(AGGR)		/* a = target (INDEX or FIELD), b = value */	\
	N(EXPR)		/* a = a call used as a statement */		\
	N(IF)		/* a = condition, b = then block, c = else */	\
	N(WHILE)	/* a = condition, b = body */			\
	N(FORNUM)	/* vars = the variable, a, b, c = from, to, step, */ \
			/* list = body */				\
	N(FORIN)	/* vars = key[, value], a = iterator, b = body */ \
	N(RETURN)	/* list = values (none: NULL) */		\
	N(BREAK)							\
	N(FUNCSTAT)	/* a = target (NAME or FIELD chain), fn */	\
	N(PROBE)	/* probe = what, fn = handler */

#define __KP_NODE_ENUM(name)	KP_N_##name,
enum kp_nodekind {
	KP_NODES(__KP_NODE_ENUM)
	KP_N__COUNT
};
#undef __KP_NODE_ENUM

extern const char *const kp_nodename[KP_N__COUNT];

enum kp_binop {
	KP_OP_ADD, KP_OP_SUB, KP_OP_MUL, KP_OP_DIV, KP_OP_MOD,
	KP_OP_CONCAT,
	KP_OP_EQ, KP_OP_NE, KP_OP_LT, KP_OP_LE, KP_OP_GT, KP_OP_GE,
	KP_OP_AND, KP_OP_OR,
	KP_OP__COUNT
};

extern const char *const kp_binopname[KP_OP__COUNT];

struct kp_node;
struct kp_func;

/*
 * A variable declared by `var`/`local`, a parameter, a loop variable or
 * a handler's event argument. resolve.c creates them and links NAME
 * nodes to them; gen.c gives each its register.
 */
struct kp_var {
	const char	*name;
	uint32_t	line, col;
	struct kp_func	*fn;		/* function that declares it */
	int		reg;		/* gen.c: its register, -1 before */
	uint8_t		captured;	/* read or written by a nested function */
	uint8_t		is_event;	/* a handler's event argument `e` */
	uint8_t		assigned;	/* the script stores into it */
	struct kp_func	*fnval;		/* arity.c: function it is declared as */
	uint8_t		stores;		/* aggr.c: kinds of values stored */
	struct kp_var	*next;		/* next name of the same declaration */
};

/* What a NAME node turned out to be (resolve.c). */
enum kp_symkind {
	KP_SYM_NONE,		/* not resolved (an error was reported) */
	KP_SYM_LOCAL,		/* var of the current function */
	KP_SYM_UPVAL,		/* upval = index in the current function */
	KP_SYM_GLOBAL,		/* global = slot */
	KP_SYM_BUILTIN,		/* builtin = id, read without arguments */
	KP_SYM_ARGN,		/* argN: argn = N */
	KP_SYM_FIELD,		/* a field of the event, in a trace filter */
	KP_SYM_LIB,		/* kdebug, timer, ansi: only before '.' */
};

struct kp_sym {
	enum kp_symkind	kind;
	struct kp_var	*var;		/* LOCAL, and UPVAL's origin */
	int		upval;		/* UPVAL */
	int		global;		/* GLOBAL */
	int		builtin;	/* BUILTIN */
	int		argn;		/* ARGN */
	struct kp_var	*event;		/* FIELD: the handler's `e` */
	struct kp_str	field;		/* FIELD: its name */
};

/* One upvalue of a function, as struct ktap_bc_upval wants it. */
struct kp_upval {
	const char	*name;
	struct kp_var	*var;		/* the variable it reaches */
	int		parent_upval;	/* -1: var is a local of the parent */
};

/* Kinds of probe statements and library probe calls. */
enum kp_probekind {
	KP_PROBE_TRACE,		/* trace EVENTDEF [/filter/] { } */
	KP_PROBE_TRACE_END,	/* trace_end { } */
	KP_PROBE_PERIOD,	/* tick-1s { }, profile-100us { } */
	KP_PROBE_KDEBUG,	/* kdebug.probe(spec, fn) */
	KP_PROBE_KDEBUG_END,	/* kdebug.probe_end(fn) */
	KP_PROBE_TIMER,		/* timer.s(n, fn) and friends */
};

struct kp_evinfo;

struct kp_probe {
	enum kp_probekind kind;
	const struct kp_token *tok;	/* EVENTDEF / PERIOD token, or spec */
	struct kp_node	*spec;		/* library calls: the first argument */
	struct kp_node	*handler;	/* library calls: the function value */
	const char	*what;		/* library calls: "timer.s" ... */
	/* resolve.c */
	uint32_t	first, n;	/* probe table entries */
	struct kp_evinfo *ev;		/* trace: the events' fields */
	uint8_t		override;	/* may call e.set_retval() */
	uint8_t		nowait;		/* kdebug.probe_end(fn, 1) */
};

/* A function: the main chunk, a `function`, or a probe handler. */
struct kp_func {
	const char	*name;		/* NULL: anonymous */
	uint32_t	line, col;
	uint32_t	end_line;	/* of its closing brace */
	struct kp_func	*parent;	/* NULL: the main chunk */
	struct kp_var	*params;	/* linked through ->next */
	uint32_t	nparams;
	struct kp_node	*filter;	/* handler: trace filter, or NULL */
	struct kp_node	*body;		/* BLOCK */
	struct kp_probe	*probe;		/* a probe handler: its probe */
	/* resolve.c */
	struct kp_upval	*upv;
	uint32_t	nupv, upvcap;
	uint8_t		has_retval;	/* reads a field named set_retval */
	/* arity.c */
	uint32_t	nret;		/* most values a return gives */
	/* gen.c */
	uint32_t	idx;		/* prototype index */
};

struct kp_node {
	uint8_t		kind;		/* enum kp_nodekind */
	uint8_t		op;		/* UNOP: '-' or '!'; BINOP, COMPOUND */
	uint32_t	line, col;
	struct kp_node	*next;		/* next in its list */
	struct kp_node	*a, *b, *c;
	struct kp_node	*list, *list2;
	struct kp_var	*vars;		/* LOCAL, LOCALFUNC, FORNUM, FORIN */
	struct kp_func	*fn;		/* FUNC, LOCALFUNC, FUNCSTAT, PROBE */
	struct kp_probe	*probe;		/* PROBE */
	int64_t		ival;		/* INT */
	struct kp_str	str;		/* STR, NAME, FIELD, METHOD */
	/* resolve.c */
	struct kp_sym	sym;		/* NAME */
	int		builtin;	/* CALL: builtin id, or -1 */
	const char	*ansi;		/* CALL: ansi.* escape sequence */
	uint32_t	ansi_len;
	uint8_t		ansi_args;	/* CALL: ansi.* of run-time values */
	/* arity.c */
	uint32_t	nval;		/* CALL: values it yields, at least 1 */
};

/* The parsed script. */
struct kp_ast {
	struct kp_func	*main;
	uint8_t		need_arg;	/* the script reads arg[] */
	uint8_t		exit_at_end;	/* gen.c: the main chunk ends in exit() */
};

/* parse.c: tokens to tree; errors are reported, 0 if none. */
int kp_parse(struct kp_state *S, struct kp_ast *ast);
/* resolve.c: names, probes, builtins; 0 if no error. */
int kp_resolve(struct kp_state *S, struct kp_ast *ast);
/* check.c: constant folding, before resolve; 0 if no error. */
int kp_fold(struct kp_state *S, struct kp_ast *ast);
/* check.c: arity, probe placement, break; after resolve; 0 if no error. */
int kp_check(struct kp_state *S, struct kp_ast *ast);
/* resolve.c: the builtin table of <linux/ktap.h> by name. */
int kp_builtin_find(const char *name);		/* id, or -1 */
const char *kp_builtin_name(int id);
void kp_builtin_arity(int id, int *min, int *max);
/* aggr.c: labels and the implicit trace_end, after kp_parse(). */
void kp_aggr_lower(struct kp_state *S, struct kp_ast *ast);
/* aggr.c: '<<<' into a table, after kp_resolve(). */
void kp_aggr_check(struct kp_state *S, struct kp_ast *ast);
/* arity.c: value counts of functions and calls, after kp_check(). */
int kp_arity(struct kp_state *S, struct kp_ast *ast);
/* gen.c: instructions into S->img; 0 if no error. */
int kp_gen(struct kp_state *S, struct kp_ast *ast);
/* compile.c: all passes; code generation only when @gen. */
int kp_compile_ast(struct kp_state *S, struct kp_ast *ast, int gen);
/* ast.c: print the tree (ktap -A). */
void kp_ast_dump(FILE *out, const struct kp_ast *ast);

struct kp_node *kp_node_new(struct kp_state *S, enum kp_nodekind kind,
			    uint32_t line, uint32_t col);

#endif /* KP_AST_H */
