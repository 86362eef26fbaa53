// SPDX-License-Identifier: GPL-2.0
/*
 * ktap parser: a recursive-descent parser in the spirit of Lua's
 * lparser.c over the token array of lex.c. It describes expressions
 * with struct kp_exp and leaves instructions to code.c.
 *
 * Error recovery is panic mode: each statement is parsed under its own
 * jmp_buf; an error unwinds to it, restores the register and scope
 * state, and skips to the next statement boundary, so one run reports
 * several errors. Names: locals (and upvalues), then globals (any name
 * assigned anywhere in the script), then built-ins (`pid`, `print(...)`),
 * then, inside a trace filter, fields of the event.
 */
#include <string.h>
#include "lex.h"
#include "code.h"
#include "events.h"

struct kp_blockcnt {
	struct kp_blockcnt	*prev;
	int			breaklist;
	int			nactvar;
	int			isloop;
};

struct kp_parser {
	struct kp_state		*S;
	struct kp_fstate	*fs;
	int			depth;
	int			no_slash;	/* '/' closes a trace filter */
	struct kp_evinfo	*filter;	/* resolving filter names */
	int			npending;	/* locals declared, not active */
	int			special;	/* last call was a statement-only library call */
	int			ansi;		/* last call was an ansi.* helper */
	int			nretval;	/* `.set_retval`s seen so far */
};

/* Builtins callable by name (KTAP_BUILTINS). */
#define __KP_BI(bname, lo, hi, fl)	{ #bname, lo, hi, KTAP_BI_##bname },
static const struct kp_bi {
	const char	*name;
	uint8_t		min, max;
	int		id;
} kp_bi[] = {
	KTAP_BUILTINS(__KP_BI)
};
#undef __KP_BI

#define NBI	((int)ARRAY_SIZE(kp_bi))

/* Builtins that are not values when written bare (side effects). */
static const char *const kp_not_bare[] = {
	"print", "printf", "exit", "print_backtrace", "print_trace_clock",
	"kdebug_dumpstack", "ptable",
};

static const char *const kp_libs[] = { "kdebug", "timer", "ansi" };

static const struct kp_bi *find_bi(const char *name)
{
	int i;

	for (i = 0; i < NBI; i++)
		if (!strcmp(kp_bi[i].name, name))
			return &kp_bi[i];
	return NULL;
}

static int bare_ok(const struct kp_bi *b)
{
	size_t i;

	if (b->min)
		return 0;
	for (i = 0; i < ARRAY_SIZE(kp_not_bare); i++)
		if (!strcmp(kp_not_bare[i], b->name))
			return 0;
	return 1;
}

static int is_lib(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(kp_libs); i++)
		if (!strcmp(kp_libs[i], name))
			return 1;
	return 0;
}

/* argN: returns N (0..9) or -1. */
static int argn(const char *name)
{
	if (!strncmp(name, "arg", 3) && name[3] >= '0' && name[3] <= '9' &&
	    !name[4])
		return name[3] - '0';
	return -1;
}

/* ---- tokens ---- */

#define TOK(P)	(&(P)->S->toks[(P)->S->tk])

static struct kp_token *peek(struct kp_parser *P, uint32_t n)
{
	uint32_t i = P->S->tk + n;

	if (i >= P->S->ntoks)
		i = P->S->ntoks - 1;
	return &P->S->toks[i];
}

static void next(struct kp_parser *P)
{
	struct kp_state *S = P->S;

	S->line = TOK(P)->line;
	S->col = TOK(P)->col;
	if (S->tk + 1 < S->ntoks)
		S->tk++;
}

/* Unwind; TK_ERROR tokens were reported by the lexer already. */
static void __attribute__((noreturn)) bail(struct kp_parser *P)
{
	longjmp(*P->S->recover, 1);
}

static void __attribute__((noreturn)) error_expected(struct kp_parser *P,
						     const char *what)
{
	struct kp_token *t = TOK(P);

	if (t->type == TK_ERROR)
		bail(P);
	kp_fatal(P->S, t->line, t->col, KP_E_EXPECTED, what,
		 kp_tkdesc(P->S, t));
}

static void __attribute__((noreturn)) error_unexpected(struct kp_parser *P)
{
	struct kp_token *t = TOK(P);

	if (t->type == TK_ERROR)
		bail(P);
	kp_fatal(P->S, t->line, t->col, KP_E_UNEXPECTED, kp_tkdesc(P->S, t));
}

static int testnext(struct kp_parser *P, int type)
{
	if (TOK(P)->type == type) {
		next(P);
		return 1;
	}
	return 0;
}

static void checknext(struct kp_parser *P, int type)
{
	if (!testnext(P, type))
		error_expected(P, kp_tkname[type]);
}

static const char *checkname(struct kp_parser *P)
{
	const char *s;

	if (TOK(P)->type != TK_NAME)
		error_expected(P, "a name");
	s = TOK(P)->str.s;
	next(P);
	return s;
}

static void enter(struct kp_parser *P)
{
	if (++P->depth > KP_MAX_DEPTH) {
		P->depth = 0;	/* let the report itself through */
		kp_fatal(P->S, TOK(P)->line, TOK(P)->col, KP_E_DEPTH,
			 KP_MAX_DEPTH);
	}
}

static void leave(struct kp_parser *P)
{
	P->depth--;
}

/* ---- scopes ---- */

static void new_localvar(struct kp_parser *P, const char *name)
{
	struct kp_fstate *fs = P->fs;

	if (fs->nactvar + P->npending >= KP_MAX_LOCALS)
		kp_fatal(P->S, P->S->line, P->S->col, KP_E_LOCALS,
			 KP_MAX_LOCALS);
	fs->actvar[fs->nactvar + P->npending++] = name;
}

static void adjustlocalvars(struct kp_parser *P, int n)
{
	int i;

	for (i = 0; i < n && P->fs->nactvar + i < KP_MAX_LOCALS; i++)
		P->fs->captured[P->fs->nactvar + i] = 0;
	P->fs->nactvar += n;
	P->npending -= n;
	if (P->npending < 0)
		P->npending = 0;
}

static void enterblock(struct kp_fstate *fs, struct kp_blockcnt *bl,
		       int isloop)
{
	bl->breaklist = KP_NO_JUMP;
	bl->isloop = isloop;
	bl->nactvar = fs->nactvar;
	bl->prev = fs->bl;
	fs->bl = bl;
}

/*
 * Leaving a block ends its locals. There is no instruction that closes
 * upvalues at a block's end (only RETURN does), and in the main chunk a
 * closure keeps sharing its variable's register until the function
 * returns; so a local captured by a closure keeps its register, hidden,
 * until the end of the function rather than being reused.
 */
static void leaveblock(struct kp_parser *P)
{
	struct kp_fstate *fs = P->fs;
	struct kp_blockcnt *bl = fs->bl;
	int keep = bl->nactvar, i;

	for (i = fs->nactvar - 1; i >= bl->nactvar; i--) {
		if (fs->captured[i]) {
			keep = i + 1;
			break;
		}
	}
	for (i = bl->nactvar; i < keep; i++)
		fs->actvar[i] = "(captured)";
	fs->bl = bl->prev;
	fs->nactvar = keep;
	fs->freereg = fs->nactvar;
	kp_patchtohere(P->S, fs, bl->breaklist);
}

static void open_func(struct kp_parser *P, struct kp_fstate *fs,
		      const char *name, uint32_t line)
{
	memset(fs, 0, sizeof(*fs));
	fs->f = kp_proto_new(P->S, &fs->idx);
	fs->f->parent = P->fs ? P->fs->idx : KTAP_BC_NO_STR;
	fs->f->name = name;
	fs->f->line = line;
	fs->prev = P->fs;
	fs->depth = P->fs ? P->fs->depth + 1 : 0;
	fs->saved_pending = P->npending;
	P->fs = fs;
	P->npending = 0;
}

static void close_func(struct kp_parser *P)
{
	struct kp_fstate *fs = P->fs;

	kp_code_abc(P->S, fs, KTAP_OP_RETURN, 0, 0, 0);
	if (fs->f->maxregs < 1)
		fs->f->maxregs = 1;
	P->fs = fs->prev;
	P->npending = fs->saved_pending;
}

/* ---- names ---- */

static int searchvar(struct kp_fstate *fs, const char *name)
{
	int i;

	for (i = fs->nactvar - 1; i >= 0; i--)
		if (!strcmp(fs->actvar[i], name))
			return i;
	return -1;
}

static int indexupvalue(struct kp_parser *P, struct kp_fstate *fs,
			const char *name, struct kp_exp *v)
{
	struct kp_proto *f = fs->f;
	uint8_t in_stack = v->k == VLOCAL;
	uint32_t i;

	for (i = 0; i < f->nupv; i++)
		if (f->upv[i].in_stack == in_stack &&
		    f->upv[i].index == v->u.info)
			return (int)i;
	if (f->nupv >= KTAP_MAX_UPVALS)
		kp_fatal(P->S, P->S->line, P->S->col, KP_E_UPVALS,
			 KTAP_MAX_UPVALS);
	kp_grow(&P->S->arena, (void **)&f->upv, &f->upvcap, f->nupv + 1,
		sizeof(*f->upv));
	kp_grow(&P->S->arena, (void **)&f->upvname, &f->upvnamecap,
		f->nupv + 1, sizeof(*f->upvname));
	if (in_stack && fs->prev && v->u.info < KP_MAX_LOCALS)
		fs->prev->captured[v->u.info] = 1;
	f->upv[f->nupv].in_stack = in_stack;
	f->upv[f->nupv].index = (uint8_t)v->u.info;
	f->upvname[f->nupv] = name;
	return (int)f->nupv++;
}

/* Local or upvalue: 1 if found, with *v set. */
static int singlevaraux(struct kp_parser *P, struct kp_fstate *fs,
			const char *name, struct kp_exp *v)
{
	int r;

	if (!fs)
		return 0;
	r = searchvar(fs, name);
	if (r >= 0) {
		kp_init_exp(v, VLOCAL, r);
		return 1;
	}
	if (!singlevaraux(P, fs->prev, name, v))
		return 0;
	kp_init_exp(v, VUPVAL, indexupvalue(P, fs, name, v));
	return 1;
}

/* "did you mean": the closest local, global or builtin name. */
static void suggest_name(struct kp_parser *P, const char *name, char *buf,
			 size_t n)
{
	const char *best = NULL;
	int bd = 1000, d, i;
	struct kp_fstate *fs;
	uint32_t g;

	for (fs = P->fs; fs; fs = fs->prev)
		for (i = 0; i < fs->nactvar; i++) {
			if (fs->actvar[i][0] == '(')
				continue;
			d = kp_distance(name, fs->actvar[i]);
			if (d < bd) {
				bd = d;
				best = fs->actvar[i];
			}
		}
	for (g = 0; g < P->S->img->nglobals; g++) {
		d = kp_distance(name, P->S->img->globals[g]);
		if (d < bd) {
			bd = d;
			best = P->S->img->globals[g];
		}
	}
	for (i = 0; i < NBI; i++) {
		d = kp_distance(name, kp_bi[i].name);
		if (d < bd) {
			bd = d;
			best = kp_bi[i].name;
		}
	}
	kp_suggest(buf, n, name, best);
}

static void builtin_call0(struct kp_parser *P, const struct kp_bi *b,
			  struct kp_exp *e, int nimm, int64_t imm)
{
	struct kp_fstate *fs = P->fs;
	int base = fs->freereg;

	kp_reserve(P->S, fs, 1 + nimm);
	if (nimm)
		kp_code_asbx(P->S, fs, KTAP_OP_LOADI, base + 1, (int)imm);
	kp_init_exp(e, VCALL, kp_code_abc(P->S, fs, KTAP_OP_CALLB, base,
					  nimm, b->id));
	fs->freereg = base + 1;
}

/* Report @t if it names no field of the events in @ev (when known). */
static void check_field(struct kp_parser *P, struct kp_evinfo *ev,
			const struct kp_token *t)
{
	const char *name = t->str.s, *best = NULL;
	uint32_t i;
	int bd = 1000, d;

	if (ev && ev->fields && strcmp(name, "tostring") &&
	    strcmp(name, "set_retval")) {
		for (i = 0; i < ev->nfields; i++) {
			if (!strcmp(ev->fields[i], name))
				break;
			d = kp_distance(name, ev->fields[i]);
			if (d < bd) {
				bd = d;
				best = ev->fields[i];
			}
		}
		if (i == ev->nfields) {
			char sug[300];

			kp_suggest(sug, sizeof(sug), name, best);
			kp_error(P->S, t->line, t->col, KP_E_UNKNOWN_FIELD,
				 ev->first ? ev->first : "?", name, sug);
		}
	}
}

/* Field @name of the event being filtered (the handler's register 0). */
static void event_field(struct kp_parser *P, const struct kp_token *t,
			struct kp_exp *e)
{
	const char *name = t->str.s;
	struct kp_exp k;

	check_field(P, P->filter, t);
	kp_init_exp(e, VNONRELOC, 0);
	kp_init_exp(&k, VKSTR, 0);
	k.u.str.s = name;
	k.u.str.len = t->str.len;
	kp_indexed(P->S, P->fs, e, &k);
}

/* A name read as a value. */
static void singlevar(struct kp_parser *P, struct kp_exp *e)
{
	struct kp_token *t = TOK(P);
	const char *name = t->str.s;
	const struct kp_bi *b;
	char sug[300];
	int g, n;

	next(P);
	if (singlevaraux(P, P->fs, name, e))
		return;
	b = find_bi(name);
	g = kp_global_find(P->S, name);
	if (g < 0 && !b && !strcmp(name, "arg"))
		g = kp_global(P->S, name);
	if (g >= 0) {
		kp_init_exp(e, VGLOBAL, g);
		return;
	}
	if (b && bare_ok(b)) {
		builtin_call0(P, b, e, 0, 0);
		return;
	}
	if (b) {
		kp_error(P->S, t->line, t->col, KP_E_BUILTIN_VALUE, name);
		kp_init_exp(e, VNIL, 0);
		return;
	}
	n = argn(name);
	if (n >= 0) {
		builtin_call0(P, find_bi("argn"), e, 1, n);
		return;
	}
	if (P->filter) {
		event_field(P, t, e);
		return;
	}
	suggest_name(P, name, sug, sizeof(sug));
	kp_error(P->S, t->line, t->col, KP_E_UNKNOWN_NAME, name, sug);
	kp_init_exp(e, VNIL, 0);
}

/* A name as an assignment target. */
static void singlevar_write(struct kp_parser *P, struct kp_exp *e)
{
	struct kp_token *t = TOK(P);
	const char *name = t->str.s;

	next(P);
	if (singlevaraux(P, P->fs, name, e))
		return;
	if (find_bi(name) || is_lib(name) || argn(name) >= 0) {
		kp_error(P->S, t->line, t->col, KP_E_ASSIGN_BUILTIN, name);
		kp_init_exp(e, VGLOBAL, kp_global(P->S, "(invalid)"));
		return;
	}
	kp_init_exp(e, VGLOBAL, kp_global(P->S, name));
}

/* ---- expressions ---- */

static void expr(struct kp_parser *P, struct kp_exp *v);
static void block(struct kp_parser *P);
static void statlist(struct kp_parser *P);
static void suffixedexp(struct kp_parser *P, struct kp_exp *v);

static void set_const_str(struct kp_exp *e, const char *s, uint32_t len)
{
	kp_init_exp(e, VKSTR, 0);
	e->u.str.s = s;
	e->u.str.len = len;
}

/* Parse a nested expression where '/' is division again. */
static void expr_nested(struct kp_parser *P, struct kp_exp *v)
{
	int saved = P->no_slash;

	P->no_slash = 0;
	expr(P, v);
	P->no_slash = saved;
}

static void check_match(struct kp_parser *P, int what, int who,
			uint32_t line)
{
	char buf[64];

	if (testnext(P, what))
		return;
	if (line == TOK(P)->line)
		error_expected(P, kp_tkname[what]);
	snprintf(buf, sizeof(buf), "%s (to close %s at line %u)",
		 kp_tkname[what], kp_tkname[who], line);
	error_expected(P, kp_strndup(&P->S->arena, buf, strlen(buf)));
}

/* Arguments into consecutive registers after the current top. */
static int explist_args(struct kp_parser *P, uint32_t line)
{
	struct kp_exp e;
	int n = 0;

	checknext(P, TK_LPAREN);
	if (TOK(P)->type != TK_RPAREN) {
		do {
			if (n >= 255)
				kp_fatal(P->S, TOK(P)->line, TOK(P)->col,
					 KP_E_ARGS, 255);
			expr_nested(P, &e);
			kp_exp2nextreg(P->S, P->fs, &e);
			n++;
		} while (testnext(P, TK_COMMA));
	}
	check_match(P, TK_RPAREN, TK_LPAREN, line);
	return n;
}

static void builtin_call(struct kp_parser *P, const struct kp_bi *b,
			 struct kp_exp *e, const struct kp_token *at)
{
	struct kp_fstate *fs = P->fs;
	int base = fs->freereg, n;

	kp_reserve(P->S, fs, 1);
	n = explist_args(P, at->line);
	if (n < b->min || n > b->max) {
		char want[64];

		if (b->min == b->max)
			snprintf(want, sizeof(want), "%d argument%s", b->min,
				 b->min == 1 ? "" : "s");
		else if (b->max == KTAP_MAX_ARGS)
			snprintf(want, sizeof(want), "at least %d argument%s",
				 b->min, b->min == 1 ? "" : "s");
		else
			snprintf(want, sizeof(want), "%d to %d arguments",
				 b->min, b->max);
		kp_error(P->S, at->line, at->col, KP_E_BUILTIN_ARGS, b->name,
			 want);
	}
	kp_init_exp(e, VCALL, kp_code_abc(P->S, fs, KTAP_OP_CALLB, base, n,
					  b->id));
	fs->freereg = base + 1;
}

/* f(args): the function value goes to the next register first. */
static void funcargs(struct kp_parser *P, struct kp_exp *f, uint32_t line,
		     int self)
{
	struct kp_fstate *fs = P->fs;
	int base, n;

	base = f->u.info;
	n = explist_args(P, line) + self;
	if (n > 255)
		kp_fatal(P->S, P->S->line, P->S->col, KP_E_ARGS, 255);
	kp_init_exp(f, VCALL, kp_code_abc(P->S, fs, KTAP_OP_CALL, base, n, 0));
	fs->freereg = base + 1;
}

/* ---- library calls: kdebug.*, timer.*, ansi.* ---- */

/*
 * A handler that may call e.set_retval() asks, through the probe flag,
 * for the right to skip the probed function: the kernel grants it only
 * to a kprobe at the entry of an error-injectable function and refuses
 * the image otherwise, naming the function.
 */
static void mark_override(struct kp_parser *P, uint32_t first, uint32_t n)
{
	uint32_t i;

	for (i = first; i < first + n && i < P->S->img->nprobes; i++) {
		if (P->S->img->probes[i].type == KTAP_PROBE_KPROBE)
			P->S->img->probes[i].flags |= KTAP_PROBE_F_OVERRIDE;
	}
}

/* Parse "(spec, fn)" or "(fn)" of a probe call and emit the ATTACHes. */
static void attach_call(struct kp_parser *P, const char *what,
			const struct kp_token *at, int nspec,
			enum ktap_probe_type type, uint64_t mult)
{
	struct kp_fstate *fs = P->fs;
	struct kp_token *st = NULL;
	struct kp_exp spec, fn;
	struct kp_evinfo ev;
	uint32_t first = 0, n = 0, i;
	uint32_t line = at->line;
	int r, ok = 1, nretval, override;

	memset(&ev, 0, sizeof(ev));
	if (fs->prev)
		kp_error(P->S, at->line, at->col, KP_E_PROBE_MAIN);
	checknext(P, TK_LPAREN);
	if (nspec) {
		st = TOK(P);
		expr_nested(P, &spec);
		if (type == KTAP_PROBE_TRACEPOINT && spec.k != VKSTR) {
			kp_error(P->S, st->line, st->col, KP_E_PROBE_SPEC);
			ok = 0;
		} else if (type != KTAP_PROBE_TRACEPOINT &&
			   ((spec.k != VKINT && spec.k != VKSTR) ||
			    (spec.k == VKINT && spec.u.ival <= 0))) {
			kp_error(P->S, st->line, st->col, KP_E_TIMER_ARG, what);
			ok = 0;
		}
		if (TOK(P)->type != TK_COMMA) {
			char need[64];

			snprintf(need, sizeof(need), "a %s and a function",
				 type == KTAP_PROBE_TRACEPOINT ?
				 "probe specification" : "period");
			kp_fatal(P->S, TOK(P)->line, TOK(P)->col,
				 KP_E_PROBE_ARGS, what, need);
		}
		next(P);
	}
	nretval = P->nretval;
	expr_nested(P, &fn);
	check_match(P, TK_RPAREN, TK_LPAREN, line);
	/* a function literal shows what it does; a name may be any function */
	override = P->nretval > nretval || (P->nretval && fn.k != VRELOC);
	r = kp_exp2anyreg(P->S, fs, &fn);
	if (!ok)
		return;
	if (type == KTAP_PROBE_TRACEPOINT) {
		char *s = kp_strndup(&P->S->arena, spec.u.str.s, spec.u.str.len);

		if (strlen(s) != spec.u.str.len) {
			kp_error(P->S, st->line, st->col, KP_E_PROBE_SPEC);
			return;
		}
		n = kp_events_resolve(P->S, s, KP_FORM_KDEBUG, st->line,
				      st->col, &first, &ev);
	} else if (type == KTAP_PROBE_END) {
		first = kp_events_simple(P->S, type, "kdebug.probe_end", 0);
		n = 1;
	} else {
		uint64_t ns;
		char text[96];

		if (spec.k == VKSTR) {
			/* timer.profile("100us", f): parse like profile-100us */
			kp_error(P->S, st->line, st->col, KP_E_TIMER_ARG, what);
			return;
		}
		ns = (uint64_t)spec.u.ival > UINT64_MAX / mult ? UINT64_MAX :
		     (uint64_t)spec.u.ival * mult;
		snprintf(text, sizeof(text), "%s(%lld)", what,
			 (long long)spec.u.ival);
		if (ns < 10000 || ns > 3600ULL * 1000000000ULL) {
			kp_error(P->S, st->line, st->col, KP_E_PERIOD_RANGE,
				 text);
			return;
		}
		first = kp_events_simple(P->S, type,
					 kp_strndup(&P->S->arena, text,
						    strlen(text)), ns);
		n = 1;
	}
	if (override)
		mark_override(P, first, n);
	for (i = 0; i < n; i++)
		kp_code_abx(P->S, fs, KTAP_OP_ATTACH, r, (int)(first + i));
}

static const struct {
	const char	*name;
	const char	*fmt;	/* escape sequence; %d per argument */
	int		nargs;
} kp_ansi[] = {
	{ "clear_screen", "\033[1;1H\033[2J", 0 },
	{ "set_color", "\033[%dm", 1 },
	{ "set_color2", "\033[%d;%dm", 2 },
	{ "set_color3", "\033[%d;%d;%dm", 3 },
	{ "reset_color", "\033[0m", 0 },
	{ "new_line", "\n", 0 },
};

static void ansi_call(struct kp_parser *P, const char *member,
		      const struct kp_token *at, struct kp_exp *e)
{
	char buf[64], what[64];
	struct kp_exp a;
	int64_t v[3] = { 0, 0, 0 };
	int n = 0, bad = 0;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(kp_ansi); i++)
		if (!strcmp(kp_ansi[i].name, member))
			break;
	checknext(P, TK_LPAREN);
	if (TOK(P)->type != TK_RPAREN) {
		do {
			expr_nested(P, &a);
			if (a.k != VKINT)
				bad = 1;
			else if (n < 3)
				v[n] = a.u.ival;
			n++;
		} while (testnext(P, TK_COMMA));
	}
	check_match(P, TK_RPAREN, TK_LPAREN, at->line);
	snprintf(what, sizeof(what), "ansi.%s", member);
	if (bad || n != kp_ansi[i].nargs ||
	    v[0] < 0 || v[0] > 255 || v[1] < 0 || v[1] > 255 ||
	    v[2] < 0 || v[2] > 255) {
		kp_error(P->S, at->line, at->col, KP_E_ANSI_ARG, what);
		kp_init_exp(e, VVOID, 0);
		P->special = 1;
		return;
	}
	snprintf(buf, sizeof(buf), kp_ansi[i].fmt, (int)v[0], (int)v[1],
		 (int)v[2]);
	set_const_str(e, kp_strndup(&P->S->arena, buf, strlen(buf)),
		      (uint32_t)strlen(buf));
	P->ansi = 1;
}

static void libcall(struct kp_parser *P, struct kp_exp *e)
{
	struct kp_token *lt = TOK(P), *mt;
	const char *lib = lt->str.s, *member;
	static const struct {
		const char *name;
		uint64_t mult;
		enum ktap_probe_type type;
	} timers[] = {
		{ "s", 1000000000ULL, KTAP_PROBE_TIMER },
		{ "ms", 1000000ULL, KTAP_PROBE_TIMER },
		{ "us", 1000ULL, KTAP_PROBE_TIMER },
		{ "ns", 1ULL, KTAP_PROBE_TIMER },
		{ "sec", 1000000000ULL, KTAP_PROBE_TIMER },
		{ "msec", 1000000ULL, KTAP_PROBE_TIMER },
		{ "usec", 1000ULL, KTAP_PROBE_TIMER },
		{ "nsec", 1ULL, KTAP_PROBE_TIMER },
		{ "profile", 1000000ULL, KTAP_PROBE_PROFILE },
	};
	char what[64], sug[128];
	size_t i;

	next(P);
	if (TOK(P)->type != TK_DOT)
		kp_fatal(P->S, lt->line, lt->col, KP_E_LIBRARY, lib, lib);
	next(P);
	mt = TOK(P);
	member = checkname(P);
	snprintf(what, sizeof(what), "%s.%s", lib, member);
	if (TOK(P)->type != TK_LPAREN)
		error_expected(P, "'('");
	kp_init_exp(e, VVOID, 0);
	P->special = 1;
	if (!strcmp(lib, "kdebug")) {
		if (!strcmp(member, "probe")) {
			attach_call(P, "kdebug.probe", mt, 1,
				    KTAP_PROBE_TRACEPOINT, 1);
			P->special = 1;
			return;
		}
		if (!strcmp(member, "probe_end")) {
			attach_call(P, "kdebug.probe_end", mt, 0,
				    KTAP_PROBE_END, 1);
			P->special = 1;
			return;
		}
		if (!strcmp(member, "dumpstack")) {
			P->special = 0;
			builtin_call(P, find_bi("kdebug_dumpstack"), e, mt);
			return;
		}
		kp_suggest(sug, sizeof(sug), member, "probe");
	} else if (!strcmp(lib, "timer")) {
		for (i = 0; i < ARRAY_SIZE(timers); i++)
			if (!strcmp(member, timers[i].name)) {
				attach_call(P, kp_strndup(&P->S->arena, what,
							  strlen(what)),
					    mt, 1, timers[i].type,
					    timers[i].mult);
				P->special = 1;
				return;
			}
		sug[0] = '\0';
	} else {
		for (i = 0; i < ARRAY_SIZE(kp_ansi); i++)
			if (!strcmp(member, kp_ansi[i].name)) {
				P->special = 0;
				ansi_call(P, member, mt, e);
				return;
			}
		kp_suggest(sug, sizeof(sug), member, "set_color");
	}
	kp_fatal(P->S, mt->line, mt->col, KP_E_LIB_MEMBER, lib, member, sug);
}

/* ---- primary and suffixed expressions ---- */

static void primaryexp(struct kp_parser *P, struct kp_exp *v)
{
	struct kp_token *t = TOK(P);
	const struct kp_bi *b;

	switch (t->type) {
	case TK_LPAREN: {
		uint32_t line = t->line;

		next(P);
		enter(P);
		expr_nested(P, v);
		leave(P);
		check_match(P, TK_RPAREN, TK_LPAREN, line);
		kp_dischargevars(P->S, P->fs, v);
		return;
	}
	case TK_NAME: {
		struct kp_exp tmp;

		if (is_lib(t->str.s) && !singlevaraux(P, P->fs, t->str.s, &tmp) &&
		    kp_global_find(P->S, t->str.s) < 0) {
			libcall(P, v);
			return;
		}
		b = find_bi(t->str.s);
		if (b && peek(P, 1)->type == TK_LPAREN &&
		    !singlevaraux(P, P->fs, t->str.s, &tmp)) {
			next(P);
			builtin_call(P, b, v, t);
			return;
		}
		singlevar(P, v);
		return;
	}
	default:
		error_unexpected(P);
	}
}

static void fieldkey(struct kp_parser *P, struct kp_exp *k)
{
	struct kp_token *t = TOK(P);

	if (t->type != TK_NAME)
		error_expected(P, "a field name");
	if (t->str.len == 10 && !memcmp(t->str.s, "set_retval", 10))
		P->nretval++;
	set_const_str(k, t->str.s, t->str.len);
	next(P);
}

static void suffixedexp(struct kp_parser *P, struct kp_exp *v)
{
	struct kp_fstate *fs = P->fs;
	struct kp_exp key;
	uint32_t line;
	int n = 0;

	primaryexp(P, v);
	for (;; n++) {
		if (n > KP_MAX_DEPTH)
			kp_fatal(P->S, TOK(P)->line, TOK(P)->col, KP_E_DEPTH,
				 KP_MAX_DEPTH);
		line = TOK(P)->line;
		switch (TOK(P)->type) {
		case TK_DOT:
			next(P);
			if (v->k == VLOCAL && v->u.info == 0 && fs->ev &&
			    TOK(P)->type == TK_NAME)
				check_field(P, fs->ev, TOK(P));
			kp_exp2anyreg(P->S, fs, v);
			fieldkey(P, &key);
			kp_indexed(P->S, fs, v, &key);
			break;
		case TK_LBRACKET:
			next(P);
			kp_exp2anyreg(P->S, fs, v);
			enter(P);
			expr_nested(P, &key);
			leave(P);
			kp_exp2val(P->S, fs, &key);
			kp_indexed(P->S, fs, v, &key);
			check_match(P, TK_RBRACKET, TK_LBRACKET, line);
			break;
		case TK_COLON: {
			int obj, base, k;

			next(P);
			obj = kp_exp2anyreg(P->S, fs, v);
			fieldkey(P, &key);
			kp_freeexp(fs, v);
			base = fs->freereg;
			kp_reserve(P->S, fs, 2);
			kp_code_abc(P->S, fs, KTAP_OP_MOVE, base + 1, obj, 0);
			k = kp_const_str(P->S, key.u.str.s, key.u.str.len);
			if (k <= 255) {
				kp_code_abc(P->S, fs, KTAP_OP_GETFIELD, base,
					    base + 1, k);
			} else {
				kp_code_abx(P->S, fs, KTAP_OP_LOADK, base, k);
				kp_code_abc(P->S, fs, KTAP_OP_GETTABLE, base,
					    base + 1, base);
			}
			kp_init_exp(v, VNONRELOC, base);
			if (TOK(P)->type != TK_LPAREN)
				error_expected(P, "'('");
			funcargs(P, v, line, 1);
			break;
		}
		case TK_LPAREN:
			kp_exp2nextreg(P->S, fs, v);
			funcargs(P, v, line, 0);
			break;
		default:
			return;
		}
	}
}

static void constructor(struct kp_parser *P, struct kp_exp *t)
{
	struct kp_fstate *fs = P->fs;
	uint32_t line = TOK(P)->line;
	int pc, tr, narr = 0, nhash = 0;
	struct kp_exp tab, key, val;

	pc = kp_code_abc(P->S, fs, KTAP_OP_NEWTABLE, 0, 0, 0);
	kp_init_exp(t, VRELOC, pc);
	kp_exp2nextreg(P->S, fs, t);
	tr = t->u.info;
	checknext(P, TK_LBRACE);
	enter(P);
	while (TOK(P)->type != TK_RBRACE) {
		kp_init_exp(&tab, VNONRELOC, tr);
		if (TOK(P)->type == TK_NAME && peek(P, 1)->type == TK_ASSIGN) {
			fieldkey(P, &key);
			next(P);
			nhash++;
		} else if (TOK(P)->type == TK_LBRACKET) {
			uint32_t l = TOK(P)->line;

			next(P);
			expr_nested(P, &key);
			check_match(P, TK_RBRACKET, TK_LBRACKET, l);
			checknext(P, TK_ASSIGN);
			nhash++;
		} else {
			kp_init_exp(&key, VKINT, 0);
			key.u.ival = ++narr;
		}
		kp_exp2val(P->S, fs, &key);
		kp_indexed(P->S, fs, &tab, &key);
		expr_nested(P, &val);
		kp_storevar(P->S, fs, &tab, &val);
		fs->freereg = tr + 1;
		if (!testnext(P, TK_COMMA) && !testnext(P, TK_SEMI))
			break;
	}
	leave(P);
	check_match(P, TK_RBRACE, TK_LBRACE, line);
	fs->f->code[pc] = KTAP_INSN(KTAP_OP_NEWTABLE, tr,
				    narr > 255 ? 255 : narr,
				    nhash > 255 ? 255 : nhash);
}

static void body(struct kp_parser *P, struct kp_exp *e, const char *name,
		 uint32_t line)
{
	struct kp_fstate nfs;
	int np = 0;

	open_func(P, &nfs, name, line);
	checknext(P, TK_LPAREN);
	if (TOK(P)->type != TK_RPAREN) {
		do {
			if (np >= KP_MAX_PARAMS)
				kp_fatal(P->S, TOK(P)->line, TOK(P)->col,
					 KP_E_PARAMS, KP_MAX_PARAMS);
			new_localvar(P, checkname(P));
			np++;
		} while (testnext(P, TK_COMMA));
	}
	adjustlocalvars(P, np);
	nfs.f->nparams = (uint32_t)np;
	kp_reserve(P->S, &nfs, np);
	checknext(P, TK_RPAREN);
	block(P);
	close_func(P);
	kp_init_exp(e, VRELOC, kp_code_abx(P->S, P->fs, KTAP_OP_CLOSURE, 0,
					   (int)nfs.idx));
}

static void simpleexp(struct kp_parser *P, struct kp_exp *v)
{
	struct kp_token *t = TOK(P);

	switch (t->type) {
	case TK_INT:
		kp_init_exp(v, VKINT, 0);
		v->u.ival = t->i;
		break;
	case TK_STRING:
		set_const_str(v, t->str.s, t->str.len);
		break;
	case TK_NIL:
		kp_init_exp(v, VNIL, 0);
		break;
	case TK_TRUE:
		kp_init_exp(v, VTRUE, 0);
		break;
	case TK_FALSE:
		kp_init_exp(v, VFALSE, 0);
		break;
	case TK_LBRACE:
		constructor(P, v);
		return;
	case TK_FUNCTION:
		next(P);
		body(P, v, NULL, t->line);
		return;
	default:
		suffixedexp(P, v);
		return;
	}
	next(P);
}

static const struct { uint8_t left, right; } priority[] = {
	[OPR_ADD] = { 6, 6 }, [OPR_SUB] = { 6, 6 }, [OPR_MUL] = { 7, 7 },
	[OPR_DIV] = { 7, 7 }, [OPR_MOD] = { 7, 7 },
	[OPR_CONCAT] = { 5, 4 },
	[OPR_EQ] = { 3, 3 }, [OPR_NE] = { 3, 3 }, [OPR_LT] = { 3, 3 },
	[OPR_LE] = { 3, 3 }, [OPR_GT] = { 3, 3 }, [OPR_GE] = { 3, 3 },
	[OPR_AND] = { 2, 2 }, [OPR_OR] = { 1, 1 },
};

#define UNARY_PRIORITY	8

static enum kp_binop getbinopr(struct kp_parser *P)
{
	switch (TOK(P)->type) {
	case TK_PLUS: return OPR_ADD;
	case TK_MINUS: return OPR_SUB;
	case TK_STAR: return OPR_MUL;
	case TK_SLASH:
		return P->no_slash ? OPR_NOBINOPR : OPR_DIV;
	case TK_PERCENT: return OPR_MOD;
	case TK_CONCAT: return OPR_CONCAT;
	case TK_EQ: return OPR_EQ;
	case TK_NE: return OPR_NE;
	case TK_LT: return OPR_LT;
	case TK_LE: return OPR_LE;
	case TK_GT: return OPR_GT;
	case TK_GE: return OPR_GE;
	case TK_AND: case TK_ANDAND: return OPR_AND;
	case TK_OR: case TK_OROR: return OPR_OR;
	default: return OPR_NOBINOPR;
	}
}

/*
 * `cond`: the expression is a condition (if, while, trace filter), so
 * `and`/`or` may compile to pure jump lists; elsewhere they keep the
 * deciding operand's value, as in Lua.
 */
static enum kp_binop subexpr(struct kp_parser *P, struct kp_exp *v,
			     int limit, int cond)
{
	struct kp_fstate *fs = P->fs;
	enum kp_binop op, nextop;
	struct kp_exp v2;
	int tt;

	enter(P);
	tt = TOK(P)->type;
	if (tt == TK_NOT || tt == TK_BANG || tt == TK_MINUS) {
		next(P);
		subexpr(P, v, UNARY_PRIORITY, 0);
		kp_prefix(P->S, fs, tt == TK_MINUS ? OPR_MINUS : OPR_NOT, v);
	} else {
		simpleexp(P, v);
	}
	op = getbinopr(P);
	while (op != OPR_NOBINOPR && priority[op].left > limit) {
		next(P);
		if ((op == OPR_AND || op == OPR_OR) && !cond) {
			int r, j;

			kp_exp2nextreg(P->S, fs, v);
			r = v->u.info;
			j = kp_jumpif(P->S, fs, r, op == OPR_OR);
			nextop = subexpr(P, &v2, priority[op].right, 0);
			kp_dischargevars(P->S, fs, &v2);
			kp_freeexp(fs, &v2);
			kp_exp2reg(P->S, fs, &v2, r);
			kp_patchtohere(P->S, fs, j);
			kp_init_exp(v, VNONRELOC, r);
		} else {
			kp_infix(P->S, fs, op, v);
			nextop = subexpr(P, &v2, priority[op].right,
					 cond && (op == OPR_AND || op == OPR_OR));
			kp_posfix(P->S, fs, op, v, &v2);
		}
		op = nextop;
	}
	leave(P);
	return op;
}

static void expr(struct kp_parser *P, struct kp_exp *v)
{
	subexpr(P, v, 0, 0);
}

/* A condition; returns its false-exit list. */
static int cond(struct kp_parser *P)
{
	struct kp_exp v;

	subexpr(P, &v, 0, 1);
	if (v.k == VNIL)
		v.k = VFALSE;
	kp_goiftrue(P->S, P->fs, &v);
	return v.f;
}

/* ---- statements ---- */

static int block_follow(struct kp_parser *P)
{
	int t = TOK(P)->type;

	return t == TK_EOF || t == TK_RBRACE;
}

/* { statlist } with its own scope. */
static void block(struct kp_parser *P)
{
	struct kp_blockcnt bl;
	uint32_t line = TOK(P)->line;

	checknext(P, TK_LBRACE);
	enterblock(P->fs, &bl, 0);
	statlist(P);
	leaveblock(P);
	check_match(P, TK_RBRACE, TK_LBRACE, line);
}

static void ifstat(struct kp_parser *P)
{
	struct kp_fstate *fs = P->fs;
	int escape = KP_NO_JUMP, flist;
	uint32_t line;

	for (;;) {
		line = TOK(P)->line;
		checknext(P, TK_LPAREN);
		flist = cond(P);
		check_match(P, TK_RPAREN, TK_LPAREN, line);
		block(P);
		if (TOK(P)->type == TK_ELSEIF ||
		    (TOK(P)->type == TK_ELSE && peek(P, 1)->type == TK_IF)) {
			kp_concat(P->S, fs, &escape, kp_jump(P->S, fs));
			kp_patchtohere(P->S, fs, flist);
			if (testnext(P, TK_ELSE))
				next(P);
			else
				next(P);
			continue;
		}
		break;
	}
	if (TOK(P)->type == TK_ELSE) {
		kp_concat(P->S, fs, &escape, kp_jump(P->S, fs));
		kp_patchtohere(P->S, fs, flist);
		next(P);
		block(P);
	} else {
		kp_concat(P->S, fs, &escape, flist);
	}
	kp_patchtohere(P->S, fs, escape);
}

static void whilestat(struct kp_parser *P)
{
	struct kp_fstate *fs = P->fs;
	struct kp_blockcnt bl;
	int init = (int)fs->f->ncode, exit;
	uint32_t line = TOK(P)->line;

	checknext(P, TK_LPAREN);
	exit = cond(P);
	check_match(P, TK_RPAREN, TK_LPAREN, line);
	enterblock(fs, &bl, 1);
	block(P);
	kp_patchlist(P->S, fs, kp_jump(P->S, fs), init);
	leaveblock(P);
	kp_patchtohere(P->S, fs, exit);
}

static void forbody(struct kp_parser *P, int base, int nvars, int isnum)
{
	struct kp_fstate *fs = P->fs;
	struct kp_blockcnt bl;
	int prep, endfor;

	prep = isnum ? kp_code_asbx(P->S, fs, KTAP_OP_FORPREP, base,
				    KP_NO_JUMP) : kp_jump(P->S, fs);
	enterblock(fs, &bl, 0);
	adjustlocalvars(P, nvars);
	kp_reserve(P->S, fs, nvars);
	block(P);
	leaveblock(P);
	kp_patchtohere(P->S, fs, prep);
	endfor = kp_code_asbx(P->S, fs, isnum ? KTAP_OP_FORLOOP :
			      KTAP_OP_ITERNEXT, base, KP_NO_JUMP);
	kp_patchlist(P->S, fs, endfor, prep + 1);
}

static void fornum(struct kp_parser *P, const char *name, uint32_t line)
{
	struct kp_fstate *fs = P->fs;
	int base = fs->freereg;
	struct kp_exp e;

	new_localvar(P, "(for index)");
	new_localvar(P, "(for limit)");
	new_localvar(P, "(for step)");
	new_localvar(P, name);
	checknext(P, TK_ASSIGN);
	expr_nested(P, &e);
	kp_exp2nextreg(P->S, fs, &e);
	checknext(P, TK_COMMA);
	expr_nested(P, &e);
	kp_exp2nextreg(P->S, fs, &e);
	if (testnext(P, TK_COMMA)) {
		struct kp_token *t = TOK(P);

		expr_nested(P, &e);
		if (e.k == VKINT && e.u.ival == 0)
			kp_error(P->S, t->line, t->col, KP_E_FOR_STEP);
		kp_exp2nextreg(P->S, fs, &e);
	} else {
		kp_code_asbx(P->S, fs, KTAP_OP_LOADI, fs->freereg, 1);
		kp_reserve(P->S, fs, 1);
	}
	check_match(P, TK_RPAREN, TK_LPAREN, line);
	adjustlocalvars(P, 3);
	forbody(P, base, 1, 1);
}

static void forlist(struct kp_parser *P, const char *n1, uint32_t line)
{
	struct kp_fstate *fs = P->fs;
	int base = fs->freereg;
	const char *n2 = "(for value)";
	struct kp_exp e;

	new_localvar(P, "(for iterator)");
	new_localvar(P, n1);
	if (testnext(P, TK_COMMA))
		n2 = checkname(P);
	new_localvar(P, n2);
	new_localvar(P, "(for spare)");
	checknext(P, TK_IN);
	expr_nested(P, &e);
	kp_exp2nextreg(P->S, fs, &e);
	check_match(P, TK_RPAREN, TK_LPAREN, line);
	adjustlocalvars(P, 1);
	forbody(P, base, 3, 0);
}

static void forstat(struct kp_parser *P)
{
	struct kp_blockcnt bl;
	uint32_t line = TOK(P)->line;
	const char *name;

	checknext(P, TK_LPAREN);
	enterblock(P->fs, &bl, 1);
	name = checkname(P);
	if (TOK(P)->type == TK_ASSIGN)
		fornum(P, name, line);
	else if (TOK(P)->type == TK_COMMA || TOK(P)->type == TK_IN)
		forlist(P, name, line);
	else
		error_expected(P, "'=' or 'in'");
	leaveblock(P);
}

static void adjust_assign(struct kp_parser *P, int nvars, int nexps,
			  struct kp_exp *e)
{
	struct kp_fstate *fs = P->fs;
	int extra = nvars - nexps;

	if (e->k != VVOID)
		kp_exp2nextreg(P->S, fs, e);
	if (extra > 0) {
		int reg = fs->freereg;

		kp_reserve(P->S, fs, extra);
		kp_code_abc(P->S, fs, KTAP_OP_LOADNIL, reg, extra - 1, 0);
	} else if (extra < 0) {
		fs->freereg += extra;
	}
}

/* Expressions separated by commas: all but the last in registers. */
static int explist(struct kp_parser *P, struct kp_exp *e)
{
	int n = 1;

	expr(P, e);
	while (testnext(P, TK_COMMA)) {
		kp_exp2nextreg(P->S, P->fs, e);
		expr(P, e);
		n++;
		if (n > KP_MAX_LOCALS)
			kp_fatal(P->S, TOK(P)->line, TOK(P)->col, KP_E_LOCALS,
				 KP_MAX_LOCALS);
	}
	return n;
}

static void localstat(struct kp_parser *P)
{
	struct kp_exp e;
	int nvars = 0, nexps;

	do {
		new_localvar(P, checkname(P));
		nvars++;
	} while (testnext(P, TK_COMMA));
	if (testnext(P, TK_ASSIGN)) {
		nexps = explist(P, &e);
	} else {
		kp_init_exp(&e, VVOID, 0);
		nexps = 0;
	}
	adjust_assign(P, nvars, nexps, &e);
	adjustlocalvars(P, nvars);
}

static void localfunc(struct kp_parser *P)
{
	struct kp_fstate *fs = P->fs;
	uint32_t line = TOK(P)->line;
	const char *name = checkname(P);
	struct kp_exp v, b;

	new_localvar(P, name);
	kp_init_exp(&v, VLOCAL, fs->freereg);
	kp_reserve(P->S, fs, 1);
	adjustlocalvars(P, 1);
	body(P, &b, name, line);
	kp_storevar(P->S, fs, &v, &b);
}

static void funcstat(struct kp_parser *P, uint32_t line)
{
	struct kp_exp v, key, b;
	const char *name;

	if (TOK(P)->type != TK_NAME)
		error_expected(P, "a function name");
	name = TOK(P)->str.s;
	singlevar_write(P, &v);
	while (TOK(P)->type == TK_DOT) {
		next(P);
		kp_exp2anyreg(P->S, P->fs, &v);
		name = TOK(P)->type == TK_NAME ? TOK(P)->str.s : name;
		fieldkey(P, &key);
		kp_indexed(P->S, P->fs, &v, &key);
	}
	body(P, &b, name, line);
	kp_storevar(P->S, P->fs, &v, &b);
}

static void retstat(struct kp_parser *P)
{
	struct kp_fstate *fs = P->fs;
	struct kp_exp e;
	int r;

	if (block_follow(P) || TOK(P)->type == TK_SEMI || TOK(P)->nl_before) {
		kp_code_abc(P->S, fs, KTAP_OP_RETURN, 0, 0, 0);
		return;
	}
	expr(P, &e);
	if (TOK(P)->type == TK_COMMA)
		kp_fatal(P->S, TOK(P)->line, TOK(P)->col, KP_E_MULTI_RET);
	r = kp_exp2anyreg(P->S, fs, &e);
	kp_code_abc(P->S, fs, KTAP_OP_RETURN, r, 1, 0);
}

static void breakstat(struct kp_parser *P, const struct kp_token *t)
{
	struct kp_fstate *fs = P->fs;
	struct kp_blockcnt *bl = fs->bl;

	while (bl && !bl->isloop)
		bl = bl->prev;
	if (!bl) {
		kp_error(P->S, t->line, t->col, KP_E_BREAK);
		return;
	}
	kp_concat(P->S, fs, &bl->breaklist, kp_jump(P->S, fs));
}

/* A handler for a block probe: CLOSURE + ATTACH of each probe. */
static void handler(struct kp_parser *P, const char *name, uint32_t line,
		    uint32_t first, uint32_t n, struct kp_evinfo *ev,
		    int has_event)
{
	struct kp_fstate nfs, *fs = P->fs;
	int flist = KP_NO_JUMP, r, nretval;
	uint32_t i;

	open_func(P, &nfs, name, line);
	nfs.ev = ev;
	if (has_event) {
		new_localvar(P, "e");
		adjustlocalvars(P, 1);
		nfs.f->nparams = 1;
		kp_reserve(P->S, &nfs, 1);
	}
	if (TOK(P)->type == TK_SLASH) {
		struct kp_evinfo none;

		memset(&none, 0, sizeof(none));
		next(P);
		P->no_slash = 1;
		P->filter = ev ? ev : &none;
		flist = cond(P);
		P->filter = NULL;
		P->no_slash = 0;
		checknext(P, TK_SLASH);
	}
	nretval = P->nretval;
	block(P);
	if (P->nretval > nretval)
		mark_override(P, first, n);
	kp_patchtohere(P->S, &nfs, flist);
	close_func(P);
	r = fs->freereg;
	kp_reserve(P->S, fs, 1);
	kp_code_abx(P->S, fs, KTAP_OP_CLOSURE, r, (int)nfs.idx);
	for (i = 0; i < n; i++)
		kp_code_abx(P->S, fs, KTAP_OP_ATTACH, r, (int)(first + i));
	fs->freereg = r;
}

static void check_main(struct kp_parser *P, const struct kp_token *t)
{
	if (P->fs->prev)
		kp_error(P->S, t->line, t->col, KP_E_PROBE_MAIN);
}

static void tracestat(struct kp_parser *P, const struct kp_token *kw)
{
	struct kp_token *t = TOK(P);
	struct kp_evinfo ev;
	uint32_t first = 0, n;
	char name[128];

	check_main(P, kw);
	if (t->type != TK_EVENTDEF || !t->str.len)
		kp_fatal(P->S, t->line, t->col, KP_E_NO_EVENTDEF);
	next(P);
	memset(&ev, 0, sizeof(ev));
	n = kp_events_resolve(P->S, t->str.s, KP_FORM_TRACE, t->line, t->col,
			      &first, &ev);
	snprintf(name, sizeof(name), "trace %.100s", t->str.s);
	handler(P, kp_strndup(&P->S->arena, name, strlen(name)), kw->line,
		first, n, n ? &ev : NULL, 1);
}

static void endstat(struct kp_parser *P, const struct kp_token *kw)
{
	uint32_t first;

	check_main(P, kw);
	first = kp_events_simple(P->S, KTAP_PROBE_END, "trace_end", 0);
	handler(P, "trace_end", kw->line, first, 1, NULL, 0);
}

static void periodstat(struct kp_parser *P, const struct kp_token *t)
{
	uint32_t first;

	check_main(P, t);
	first = kp_events_simple(P->S, t->pkind == KP_PERIOD_TICK ?
				 KTAP_PROBE_TIMER : KTAP_PROBE_PROFILE,
				 t->text, (uint64_t)t->i);
	handler(P, t->text, t->line, first, 1, NULL, 1);
}

static int is_assign_op(int t)
{
	return t == TK_ASSIGN || t == TK_ADD_EQ || t == TK_SUB_EQ ||
	       t == TK_MUL_EQ || t == TK_DIV_EQ || t == TK_MOD_EQ ||
	       t == TK_CAT_EQ;
}

static void target(struct kp_parser *P, struct kp_exp *v)
{
	if (TOK(P)->type == TK_NAME &&
	    (is_assign_op(peek(P, 1)->type) || peek(P, 1)->type == TK_COMMA ||
	     peek(P, 1)->type == TK_AGGR))
		singlevar_write(P, v);
	else
		suffixedexp(P, v);
}

static void check_target(struct kp_parser *P, struct kp_exp *v,
			 const struct kp_token *at)
{
	if (v->k != VLOCAL && v->k != VUPVAL && v->k != VGLOBAL &&
	    v->k != VINDEXED)
		kp_fatal(P->S, at->line, at->col, KP_E_BAD_TARGET);
}

#define MAX_TARGETS	16

static void assignment(struct kp_parser *P, struct kp_exp *first)
{
	struct kp_fstate *fs = P->fs;
	struct kp_exp t[MAX_TARGETS], e;
	int n = 1, nexps, i, j;

	t[0] = *first;
	while (testnext(P, TK_COMMA)) {
		struct kp_token *at = TOK(P);

		if (n >= MAX_TARGETS)
			kp_fatal(P->S, at->line, at->col, KP_E_LOCALS,
				 MAX_TARGETS);
		target(P, &t[n]);
		check_target(P, &t[n], at);
		/* a[i], i = ...: keep the old i for the table store */
		if (t[n].k == VLOCAL) {
			int conflict = 0;

			for (j = 0; j < n; j++) {
				if (t[j].k != VINDEXED)
					continue;
				if (t[j].u.ind.t == t[n].u.info) {
					conflict = 1;
					t[j].u.ind.t = fs->freereg;
				}
				if (!t[j].u.ind.keyk &&
				    t[j].u.ind.key == t[n].u.info) {
					conflict = 1;
					t[j].u.ind.key = fs->freereg;
				}
			}
			if (conflict) {
				kp_code_abc(P->S, fs, KTAP_OP_MOVE, fs->freereg,
					    t[n].u.info, 0);
				kp_reserve(P->S, fs, 1);
			}
		}
		n++;
	}
	checknext(P, TK_ASSIGN);
	nexps = explist(P, &e);
	if (n == 1 && nexps == 1) {
		kp_storevar(P->S, fs, &t[0], &e);
		return;
	}
	adjust_assign(P, n, nexps, &e);
	for (i = n - 1; i >= 0; i--) {
		kp_init_exp(&e, VNONRELOC, fs->freereg - 1);
		kp_storevar(P->S, fs, &t[i], &e);
	}
}

static void compound(struct kp_parser *P, struct kp_exp *v, int tt)
{
	struct kp_fstate *fs = P->fs;
	enum kp_binop op;
	struct kp_exp rv, e;
	int r;

	next(P);
	switch (tt) {
	case TK_ADD_EQ:
		op = OPR_ADD;
		break;
	case TK_SUB_EQ:
		op = OPR_SUB;
		break;
	case TK_MUL_EQ:
		op = OPR_MUL;
		break;
	case TK_DIV_EQ:
		op = OPR_DIV;
		break;
	case TK_MOD_EQ:
		op = OPR_MOD;
		break;
	default:
		op = OPR_CONCAT;
		break;
	}
	if (v->k == VINDEXED && (op == OPR_ADD || op == OPR_SUB)) {
		int key = v->u.ind.key;

		if (v->u.ind.keyk) {
			key = fs->freereg;
			kp_reserve(P->S, fs, 1);
			kp_code_abx(P->S, fs, KTAP_OP_LOADK, key, v->u.ind.key);
		}
		expr(P, &e);
		if (op == OPR_SUB)
			kp_prefix(P->S, fs, OPR_MINUS, &e);
		r = kp_exp2anyreg(P->S, fs, &e);
		kp_code_abc(P->S, fs, KTAP_OP_INCTABLE, v->u.ind.t, key, r);
		return;
	}
	rv = *v;
	if (v->k == VINDEXED) {
		r = fs->freereg;
		kp_reserve(P->S, fs, 1);
		kp_code_abc(P->S, fs, v->u.ind.keyk ? KTAP_OP_GETFIELD :
			    KTAP_OP_GETTABLE, r, v->u.ind.t, v->u.ind.key);
		kp_init_exp(&rv, VNONRELOC, r);
	}
	kp_infix(P->S, fs, op, &rv);
	expr(P, &e);
	kp_posfix(P->S, fs, op, &rv, &e);
	kp_storevar(P->S, fs, v, &rv);
}

static void aggrstat(struct kp_parser *P, struct kp_exp *v,
		     const struct kp_token *at)
{
	struct kp_fstate *fs = P->fs;
	struct kp_exp e;
	int key, r;

	if (v->k != VINDEXED)
		kp_fatal(P->S, at->line, at->col, KP_E_BAD_AGGR);
	next(P);
	key = v->u.ind.key;
	if (v->u.ind.keyk) {
		key = fs->freereg;
		kp_reserve(P->S, fs, 1);
		kp_code_abx(P->S, fs, KTAP_OP_LOADK, key, v->u.ind.key);
	}
	expr(P, &e);
	r = kp_exp2anyreg(P->S, fs, &e);
	kp_code_abc(P->S, fs, KTAP_OP_AGGR, v->u.ind.t, key, r);
}

static void exprstat(struct kp_parser *P)
{
	struct kp_token *at = TOK(P);
	struct kp_exp v;
	int tt;

	P->special = 0;
	P->ansi = 0;
	target(P, &v);
	tt = TOK(P)->type;
	if (tt == TK_ASSIGN || tt == TK_COMMA) {
		check_target(P, &v, at);
		assignment(P, &v);
	} else if (is_assign_op(tt)) {
		check_target(P, &v, at);
		compound(P, &v, tt);
	} else if (tt == TK_AGGR) {
		aggrstat(P, &v, at);
	} else if (v.k == VCALL) {
		kp_setcallresult(P->fs, &v, 0);
	} else if (P->ansi && v.k == VKSTR) {
		struct kp_fstate *fs = P->fs;
		int base = fs->freereg;

		kp_reserve(P->S, fs, 2);
		kp_code_abx(P->S, fs, KTAP_OP_LOADK, base + 1,
			    kp_const_str(P->S, v.u.str.s, v.u.str.len));
		kp_code_abc(P->S, fs, KTAP_OP_CALLB, base, 1, KTAP_BI_printf);
	} else if (!(P->special && v.k == VVOID)) {
		kp_fatal(P->S, at->line, at->col, KP_E_NOT_STMT);
	}
}

static void statement(struct kp_parser *P)
{
	struct kp_token *t = TOK(P);

	enter(P);
	switch (t->type) {
	case TK_SEMI:
		next(P);
		break;
	case TK_IF:
		next(P);
		ifstat(P);
		break;
	case TK_WHILE:
		next(P);
		whilestat(P);
		break;
	case TK_FOR:
		next(P);
		forstat(P);
		break;
	case TK_FUNCTION:
		next(P);
		funcstat(P, t->line);
		break;
	case TK_LOCAL:
	case TK_VAR:
		next(P);
		if (testnext(P, TK_FUNCTION))
			localfunc(P);
		else
			localstat(P);
		break;
	case TK_RETURN:
		next(P);
		retstat(P);
		break;
	case TK_BREAK:
		next(P);
		breakstat(P, t);
		break;
	case TK_TRACE:
		next(P);
		tracestat(P, t);
		break;
	case TK_TRACE_END:
		next(P);
		endstat(P, t);
		break;
	case TK_PERIOD:
		next(P);
		periodstat(P, t);
		break;
	case TK_LBRACE:
		block(P);
		break;
	case TK_NAME:
	case TK_LPAREN:
		exprstat(P);
		break;
	default:
		error_unexpected(P);
	}
	leave(P);
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

/* Skip a balanced ( ... ) or { ... } group starting at the current token. */
static void skip_group(struct kp_parser *P)
{
	int depth = 0;

	do {
		int t = TOK(P)->type;

		if (t == TK_EOF)
			return;
		if (t == TK_LPAREN || t == TK_LBRACE || t == TK_LBRACKET)
			depth++;
		else if (t == TK_RPAREN || t == TK_RBRACE || t == TK_RBRACKET)
			depth--;
		next(P);
	} while (depth > 0);
}

/*
 * Panic mode: skip to the next statement boundary: a `;`, the `}` that
 * closes the current block, or a statement keyword or name that starts
 * a line. Bracketed groups are skipped whole, so the body of a broken
 * `if (...) { }` does not produce errors of its own.
 */
static void sync(struct kp_parser *P, uint32_t start)
{
	struct kp_state *S = P->S;

	if (S->tk == start && TOK(P)->type != TK_EOF &&
	    TOK(P)->type != TK_RBRACE)
		next(P);
	for (;;) {
		struct kp_token *t = TOK(P);

		if (t->type == TK_EOF || t->type == TK_RBRACE)
			return;
		if (t->type == TK_SEMI) {
			next(P);
			return;
		}
		if (t->nl_before && starts_statement(t))
			return;
		if (t->type == TK_LPAREN || t->type == TK_LBRACE ||
		    t->type == TK_LBRACKET)
			skip_group(P);
		else
			next(P);
	}
}

static void protected_statement(struct kp_parser *P)
{
	struct kp_state *S = P->S;
	struct kp_fstate *volatile fs = P->fs;
	struct kp_blockcnt *volatile bl = fs->bl;
	volatile int nact = fs->nactvar, depth = P->depth;
	volatile uint32_t start = S->tk;
	jmp_buf jb, *volatile saved = S->recover;

	S->recover = &jb;
	if (!setjmp(jb)) {
		statement(P);
	} else {
		P->fs = fs;
		fs->bl = bl;
		fs->nactvar = nact;
		P->depth = depth;
		P->no_slash = 0;
		P->filter = NULL;
		P->npending = 0;
		S->recover = saved;
		if (S->nerrors >= KP_MAX_ERRORS)
			longjmp(*saved, 1);
		sync(P, start);
	}
	S->recover = saved;
	fs->freereg = fs->nactvar;
}

static void statlist(struct kp_parser *P)
{
	while (!block_follow(P))
		protected_statement(P);
}

/* ---- names assigned anywhere: the script's globals ---- */

/* Give every assigned or function-defined name its global slot. */
static int prescan(struct kp_state *S)
{
	int need_arg = 0;
	uint32_t i;

	for (i = 0; i + 1 < S->ntoks; i++) {
		struct kp_token *t = &S->toks[i];
		int prev = i ? S->toks[i - 1].type : TK_EOF;
		int nt = S->toks[i + 1].type;

		if (t->type != TK_NAME || prev == TK_DOT || prev == TK_COLON)
			continue;
		if (!strcmp(t->str.s, "arg"))
			need_arg = 1;
		if (prev == TK_LOCAL || prev == TK_VAR || prev == TK_COMMA ||
		    prev == TK_LBRACE)
			continue;
		if ((is_assign_op(nt) || prev == TK_FUNCTION) &&
		    !find_bi(t->str.s) && !is_lib(t->str.s) &&
		    argn(t->str.s) < 0 && kp_global_find(S, t->str.s) < 0)
			kp_global(S, t->str.s);
	}
	return need_arg;
}

/* arg = { [0] = script, [1] = first argument, ... } */
static void arg_prologue(struct kp_parser *P)
{
	struct kp_state *S = P->S;
	struct kp_fstate *fs = P->fs;
	int g = kp_global(S, "arg"), i;

	kp_reserve(S, fs, 3);
	kp_code_abc(S, fs, KTAP_OP_NEWTABLE, 0,
		    S->nargs > 255 ? 255 : S->nargs, 1);
	for (i = 0; i <= S->nargs && i <= KP_MAX_ARGS; i++) {
		const char *a = i ? S->args[i - 1] : S->file, *p = a;
		int64_t v = 0;
		int num = *p != '\0' && i;

		for (; *p && num; p++) {
			if (*p < '0' || *p > '9' || v > INT64_MAX / 10 - 10)
				num = 0;
			else
				v = v * 10 + (*p - '0');
		}
		kp_code_asbx(S, fs, KTAP_OP_LOADI, 1, i);
		if (num && v <= 32767)
			kp_code_asbx(S, fs, KTAP_OP_LOADI, 2, (int)v);
		else if (num)
			kp_code_abx(S, fs, KTAP_OP_LOADK, 2, kp_const_int(S, v));
		else
			kp_code_abx(S, fs, KTAP_OP_LOADK, 2,
				    kp_const_str(S, a, (uint32_t)strlen(a)));
		kp_code_abc(S, fs, KTAP_OP_SETTABLE, 0, 1, 2);
	}
	kp_code_abx(S, fs, KTAP_OP_SETGLOBAL, 0, g);
	fs->freereg = 0;
}

int kp_compile(struct kp_state *S)
{
	struct kp_parser P;
	struct kp_fstate main_fs;
	jmp_buf top;
	int need_arg;

	memset(&P, 0, sizeof(P));
	P.S = S;
	kp_image_init(S);
	if (S->srclen > KP_MAX_SOURCE) {
		kp_error(S, 0, 0, KP_E_SOURCE_SIZE, KP_MAX_SOURCE);
		kp_flush_errors(S);
		return S->nerrors;
	}
	kp_lex(S);
	S->tk = 0;
	S->recover = &top;
	if (setjmp(top)) {
		kp_flush_errors(S);
		return S->nerrors ? S->nerrors : 1;
	}
	need_arg = prescan(S);
	open_func(&P, &main_fs, NULL, 0);
	S->line = 1;
	if (need_arg)
		arg_prologue(&P);
	for (;;) {
		statlist(&P);
		if (TOK(&P)->type == TK_EOF)
			break;
		kp_error(S, TOK(&P)->line, TOK(&P)->col, KP_E_UNEXPECTED,
			 kp_tkdesc(S, TOK(&P)));
		if (S->nerrors >= KP_MAX_ERRORS)
			break;
		next(&P);
	}
	close_func(&P);
	S->recover = NULL;
	kp_flush_errors(S);
	return S->nerrors;
}
