/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ktap compiler: state shared by every stage.
 *
 * The pipeline is lex.c (tokens) -> parse.c (syntax tree, ast.h) ->
 * check.c (constant folding) -> resolve.c (names, probes, globals) ->
 * check.c (arity, placement rules) -> gen.c (registers, jumps) into
 * the image of image.c, driven by compile.c. events.c resolves probe
 * specifications against tracefs and disasm.c prints an image. ktap.c
 * is the command line and the runtime loop; it is the only file that
 * talks to the kernel.
 *
 * Memory: everything the compiler allocates comes from one arena
 * (struct kp_arena) freed in one go, so no error path can leak.
 * Errors: every diagnostic comes from the KP_ERRORS table below.
 */
#ifndef KP_H
#define KP_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/ktap.h>

#define KP_VERSION		"0.5"

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#endif

/* Limits of the compiler, checked before the kernel's. */
#define KP_MAX_SOURCE		(1 << 20)	/* script bytes */
#define KP_MAX_STRING		4096		/* KTAP_STR_MAX of the VM */
#define KP_MAX_DEPTH		1000		/* AST depth: nesting, a+b+.., elseif */
#define KP_MAX_LOCALS		200		/* active locals per function */
#define KP_MAX_PARAMS		32
#define KP_MAX_RETURNS		16		/* values of one return */
#define KP_MAX_ERRORS		20		/* then stop */
#define KP_MAX_KPROBE_GLOB	KTAP_MAX_PROBES	/* kprobes one wildcard may add */
#define KP_MAX_UPROBE_GLOB	KTAP_MAX_PROBES	/* uprobes one wildcard may add */
#define KP_MAX_ARGS		64		/* script arguments */

/*
 * Compiler diagnostics, declared once: the enum and the message table
 * derive from this list (the trace_events_hist.c way).
 */
#define KP_ERRORS(E)							\
	E(BAD_CHAR,	"unexpected character '%s'")			\
	E(UNTERM_STR,	"unterminated string")				\
	E(KSYM_SYNTAX,	"a kernel symbol is written `name`")		\
	E(KSYM_UNKNOWN,	"unknown kernel symbol '%s' (not in %s)")	\
	E(KSYM_HIDDEN,	"cannot read kernel symbol '%s': %s shows no addresses (run as root; kptr_restrict)") \
	E(BAD_ESCAPE,	"invalid escape sequence '\\%s'")		\
	E(STR_LONG,	"string too long (limit %d bytes)")		\
	E(BAD_NUMBER,	"malformed number '%s'")			\
	E(NUM_RANGE,	"number out of range '%s'")			\
	E(BAD_PERIOD,	"bad period '%s' (use s, ms, us, ns or hz)")	\
	E(PERIOD_RANGE,	"period of '%s' must be between 10us and 1h")	\
	E(UNTERM_COMMENT, "unterminated comment")			\
	E(EXPECTED,	"expected %s before %s")			\
	E(UNEXPECTED,	"unexpected %s")				\
	E(NOT_STMT,	"expression is not a statement")		\
	E(BAD_TARGET,	"cannot assign to this expression")		\
	E(BAD_AGGR,	"'<<<' needs a table element on its left, like s[k] <<< v") \
	E(AGGR_TABLE,	"'%s' is a table: '<<<' records into an aggregation (%s = hist(), lhist(min, max, step), stats() or ptable())") \
	E(UNKNOWN_NAME,	"unknown identifier '%s'%s")			\
	E(ARG0,		"arg0 does not exist when arguments count from 1 (-1): arg1 is the first") \
	E(NEVER_SET,	"'%s' is never assigned: it reads as nil%s")	\
	E(BUILTIN_VALUE, "built-in function '%s' must be called")	\
	E(BUILTIN_ARGS,	"%s() takes %s")				\
	E(LIBRARY,	"'%s' is a library: use %s.NAME(...)")		\
	E(LIB_MEMBER,	"unknown function '%s.%s'%s")			\
	E(BREAK,	"'break' outside a loop")			\
	E(DEPTH,	"nesting too deep (limit %d)")			\
	E(LOCALS,	"too many local variables (limit %d)")		\
	E(PARAMS,	"too many parameters (limit %d)")		\
	E(REGS,		"function or expression needs too many registers (limit %d)") \
	E(UPVALS,	"too many upvalues (limit %d)")			\
	E(CONSTS,	"too many constants (limit %d)")		\
	E(PROTOS,	"too many functions (limit %d)")		\
	E(GLOBALS,	"too many global variables (limit %d)")		\
	E(PROBES,	"too many probes (limit %d)")			\
	E(BUILTINS,	"too many distinct builtin functions (limit %d)") \
	E(FIELDS,	"too many distinct event fields read (limit %d)") \
	E(FUNC_SIZE,	"function too large (jump out of range)")	\
	E(IMAGE_SIZE,	"bytecode image too large (limit %u bytes)")	\
	E(SOURCE_SIZE,	"script too large (limit %d bytes)")		\
	E(FOR_STEP,	"'for' step is zero")				\
	E(RETURNS,	"too many return values (limit %d)")		\
	E(LIB_VALUE,	"'%s' attaches a probe and has no value: use it as a statement") \
	E(NO_EVENT,	"'%s' is only available in a probe handler that receives the event") \
	E(FFI,		"the FFI is not supported: ktap cannot call kernel functions or read kernel structures safely") \
	E(PROBE_MAIN,	"probes can only be defined in the main chunk, not inside a function") \
	E(SLEEP_HANDLER, "sleep() waits in the main chunk: a probe handler cannot sleep") \
	E(SLEEP_SHARED,	"local '%s' of the main chunk is shared with a function, and the main chunk sleeps (line %u): make '%s' a global") \
	E(END_NOWAIT,	"the second argument of kdebug.probe_end must be a constant") \
	E(PROBE_SPEC,	"probe specification must be a constant string") \
	E(PROBE_ARGS,	"%s needs %s")					\
	E(TIMER_ARG,	"%s needs a constant positive integer period")	\
	E(ANSI_ARG,	"%s needs integer arguments from 0 to 255")		\
	E(NO_EVENTDEF,	"expected an event definition after 'trace'")	\
	E(BAD_EVENTDEF,	"bad event definition '%s': %s")		\
	E(UNKNOWN_EVENT, "unknown event '%s'%s")			\
	E(UNKNOWN_SYSTEM, "unknown event system '%s'%s")		\
	E(NO_MATCH,	"no event matches '%s'")			\
	E(UNKNOWN_FUNC,	"unknown kernel function '%s'%s")		\
	E(GLOB_MANY,	"'%s' matches %d functions (limit %d)")	\
	E(GLOB_FTRACE,	"'%s' matches %d functions, more than %d kprobes: " \
			"traced as ftrace:function:%s instead (one ftrace_ops; " \
			"arg0 is the function, arg1 its caller, argstr " \
			"'func <-caller')")				\
	E(NO_TRACEFS,	"cannot read %s: %s")				\
	E(UNSUPPORTED,	"'%s' is not supported: %s")			\
	E(UPROBE,	"uprobe '%s': %s")				\
	E(LIB_MOVED,	"%s does not exist: using %s, the library of that " \
			"name on this system")				\
	E(FETCH,	"argument '%s' of '%s': %s")			\
	E(FETCH_MANY,	"too many fetch arguments in the script (limit %d)") \
	E(USDT,		"USDT probe '%s': %s")				\
	E(UNKNOWN_FIELD, "event '%s' has no field '%s'%s")		\
	E(TOO_MANY_ERRORS, "too many errors, stopping")

#define __KP_ERR_ENUM(name, text)	KP_E_##name,
enum kp_err {
	KP_ERRORS(__KP_ERR_ENUM)
	KP_E__COUNT
};
#undef __KP_ERR_ENUM

extern const char *const kp_errmsg[KP_E__COUNT];

/* Arena: every compiler allocation; freed at once by kp_state_free(). */
struct kp_chunk;
struct kp_arena {
	struct kp_chunk	*head;
};

void *kp_alloc(struct kp_arena *a, size_t n);
char *kp_strndup(struct kp_arena *a, const char *s, size_t n);
/* Grow *p (element size sz) to hold at least need elements. */
void kp_grow(struct kp_arena *a, void **p, uint32_t *cap, uint32_t need,
	     size_t sz);
void kp_arena_free(struct kp_arena *a);

/* A string with length (may hold NUL bytes). */
struct kp_str {
	const char	*s;
	uint32_t	len;
};

struct kp_token;
struct kp_names;
struct kp_diag;

/* The whole compilation. */
struct kp_state {
	struct kp_arena	arena;
	const char	*file;		/* as shown in diagnostics */
	const char	*src;
	uint32_t	srclen;
	FILE		*err;		/* diagnostics go here */
	int		nerrors;
	uint32_t	line, col;	/* last token the parser consumed */
	jmp_buf		*recover;	/* innermost statement being parsed */
	const char	*tracefs;	/* tracefs root for event lookup */
	const char	*kallsyms;	/* symbol list for kprobe checks */
	int		argbase;	/* -1: ktap 0.2-0.4's arg1 is arg0 */

	/* tokens (lex.c) */
	struct kp_token	*toks;
	uint32_t	ntoks, tokcap, tk;

	/* script arguments for arg[] */
	int		nargs;
	char		**args;

	/* diagnostics, printed sorted by kp_flush_errors() */
	struct kp_diag	*diags;
	uint32_t	ndiags, diagcap;

	/* the image being built (image.c) */
	struct kp_image	*img;

	/* the kernel's function lists, read on first use (events.c) */
	struct kp_names	*fnlists[2];	/* ftrace's, kallsyms' */
	char		*ksyms;		/* kallsyms text, for `name` */

	/* exact kprobe targets left to the kernel to check (events.c) */
	int		kfunc_defer;
	struct kp_kfunc	*kfuncs;
	uint32_t	nkfuncs, kfunccap;
};

struct kp_kfunc {
	const char	*sym;
	uint32_t	line, col;
};

void kp_state_init(struct kp_state *S, const char *file, const char *src,
		   uint32_t len, FILE *err);
void kp_state_free(struct kp_state *S);

/* Report error @e at @line:@col; does not return control elsewhere. */
void kp_error(struct kp_state *S, uint32_t line, uint32_t col,
	      enum kp_err e, ...);
/* Report warning @e at @line:@col; the compilation goes on. */
void kp_warn(struct kp_state *S, uint32_t line, uint32_t col,
	     enum kp_err e, ...);
/* Report and unwind to the statement being parsed (panic mode). */
void kp_fatal(struct kp_state *S, uint32_t line, uint32_t col,
	      enum kp_err e, ...) __attribute__((noreturn));
void kp_verror(struct kp_state *S, uint32_t line, uint32_t col,
	       enum kp_err e, va_list ap);
/* Print the collected diagnostics, sorted by position. */
void kp_flush_errors(struct kp_state *S);

/* Edit distance, for "did you mean" suggestions. */
int kp_distance(const char *a, const char *b);
/* Fill @buf with " (did you mean 'X'?)" when @best is close to @name. */
void kp_suggest(char *buf, size_t n, const char *name, const char *best);

/*
 * Builtin functions (resolve.c). The kernel knows its builtins by name;
 * the compiler adds ktap 0.1 names that it lowers itself (@how).
 */
#define KP_BF_EVENT	0x1	/* reads the event being handled */
#define KP_BF_MAIN	0x2	/* main chunk and end handlers only */
#define KP_ANY_ARGS	0xff	/* "any number" as a maximum */

enum kp_bi_how {
	KP_BI_CALL,		/* CALLB of its own name */
	KP_BI_ALIAS,		/* CALLB of @kname */
	KP_BI_DIVK,		/* CALLB of @kname, then DIVK by @div */
	KP_BI_INC,		/* INCTABLE t[k] += n (n defaults to 1) */
};

struct kp_builtin {
	const char	*name;
	uint8_t		min, max, flags, how;
	const char	*kname;		/* ALIAS, DIVK: the kernel's name */
	int64_t		div;
};

const struct kp_builtin *kp_builtin_get(int id);
/* The id of a builtin the kernel knows, or -1. */
int kp_builtin_kernel(const char *name);
int kp_builtin_kernel_count(void);

/* Compile the source in @S; 0 on success, else the number of errors. */
int kp_compile(struct kp_state *S);

#endif /* KP_H */
