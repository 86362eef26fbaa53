// SPDX-License-Identifier: GPL-2.0
/*
 * Name resolution: decides what every name of the script is, finds the
 * probes, and fills the image's global and probe tables.
 *
 * A name read as a value is, in this order (the first that applies):
 *   1. a variable in scope: `var`/`local`, a parameter, a loop variable
 *      or a handler's `e`; one of an enclosing function is an upvalue;
 *   2. a global: any name the script assigns somewhere (so a script may
 *      use `count` or `max` as its own variables, shadowing builtins);
 *   3. inside a trace filter, a field of the traced event, as in the
 *      kernel's own event filters (`/count == 7/` on sys_enter_write);
 *   4. a builtin: `pid`, `execname`, ... (called without arguments),
 *      argN (a positional event argument);
 *   5. inside a trace filter on events whose fields are not known, a
 *      field checked by the kernel when the probe is attached.
 * A called name follows rules 1, 2 and 4 (a variable shadows a
 * builtin of the same name). `kdebug`, `timer` and `ansi` are libraries
 * unless a variable shadows them: their calls become probes or
 * constant strings here.
 *
 * Two walks: the first only finds the globals, since a function may
 * read a global assigned later in the file; the second resolves.
 */
#include <string.h>
#include "ast.h"
#include "image.h"
#include "events.h"
#include "lex.h"

#define KP_SCOPE_MAX	(KP_MAX_LOCALS * 8)

/*
 * Builtins callable by name. The first block is exactly what the
 * kernel knows (it resolves CALLB's names at load); the second holds
 * ktap 0.1 names that only the compiler knows, lowered by gen.c to a
 * kernel builtin (an alias, or followed by a DIVK) or to INCTABLE.
 */
#define ANY	KP_ANY_ARGS
static const struct kp_builtin kp_builtins[] = {
	{ "print", 0, ANY, 0, KP_BI_CALL, NULL, 0 },
	{ "printf", 1, ANY, 0, KP_BI_CALL, NULL, 0 },
	{ "len", 1, 1, 0, KP_BI_CALL, NULL, 0 },
	{ "delete", 1, 2, 0, KP_BI_CALL, NULL, 0 },
	{ "table_count", 1, 1, 0, KP_BI_CALL, NULL, 0 },
	{ "pairs", 1, 1, 0, KP_BI_CALL, NULL, 0 },
	{ "sort_pairs", 1, 2, 0, KP_BI_CALL, NULL, 0 },
	{ "exit", 0, 1, 0, KP_BI_CALL, NULL, 0 },
	{ "cpu", 0, 0, 0, KP_BI_CALL, NULL, 0 },
	{ "pid", 0, 0, 0, KP_BI_CALL, NULL, 0 },
	{ "target_pid", 0, 0, 0, KP_BI_CALL, NULL, 0 },
	{ "tid", 0, 0, 0, KP_BI_CALL, NULL, 0 },
	{ "uid", 0, 0, 0, KP_BI_CALL, NULL, 0 },
	{ "execname", 0, 0, 0, KP_BI_CALL, NULL, 0 },
	{ "arch", 0, 0, 0, KP_BI_CALL, NULL, 0 },
	{ "kernel_v", 0, 0, 0, KP_BI_CALL, NULL, 0 },
	{ "num_cpus", 0, 0, 0, KP_BI_CALL, NULL, 0 },
	{ "in_interrupt", 0, 0, 0, KP_BI_CALL, NULL, 0 },
	{ "in_iowait", 0, 0, 0, KP_BI_CALL, NULL, 0 },
	{ "gettimeofday_ns", 0, 0, 0, KP_BI_CALL, NULL, 0 },
	{ "print_hist", 1, 2, 0, KP_BI_CALL, NULL, 0 },
	{ "ptable", 0, 1, KP_BF_MAIN, KP_BI_CALL, NULL, 0 },
	{ "sleep", 1, 1, KP_BF_MAIN, KP_BI_CALL, NULL, 0 },
	{ "count", 1, 1, 0, KP_BI_CALL, NULL, 0 },
	{ "sum", 1, 1, 0, KP_BI_CALL, NULL, 0 },
	{ "avg", 1, 1, 0, KP_BI_CALL, NULL, 0 },
	{ "min", 1, 1, 0, KP_BI_CALL, NULL, 0 },
	{ "max", 1, 1, 0, KP_BI_CALL, NULL, 0 },
	{ "stack", 0, 2, 0, KP_BI_CALL, NULL, 0 },
	{ "print_backtrace", 0, 0, 0, KP_BI_CALL, NULL, 0 },
	{ "ustack", 0, 1, 0, KP_BI_CALL, NULL, 0 },
	{ "ksym", 1, 1, 0, KP_BI_CALL, NULL, 0 },
	{ "usym", 1, 1, 0, KP_BI_CALL, NULL, 0 },
	{ "kernel_string", 1, 1, 0, KP_BI_CALL, NULL, 0 },
	{ "user_string", 1, 1, 0, KP_BI_CALL, NULL, 0 },
	{ "curr_taskinfo", 1, 2, 0, KP_BI_CALL, NULL, 0 },
	{ "print_trace_clock", 0, 0, 0, KP_BI_CALL, NULL, 0 },
	{ "probename", 0, 0, KP_BF_EVENT, KP_BI_CALL, NULL, 0 },
	{ "argstr", 0, 0, KP_BF_EVENT, KP_BI_CALL, NULL, 0 },
	{ "argn", 1, 1, KP_BF_EVENT, KP_BI_CALL, NULL, 0 },
	{ "tostring", 1, 1, 0, KP_BI_CALL, NULL, 0 },
	{ "tonumber", 1, 1, 0, KP_BI_CALL, NULL, 0 },
	{ "log2", 1, 1, 0, KP_BI_CALL, NULL, 0 },
	{ "print_log2hist", 1, 1, 0, KP_BI_CALL, NULL, 0 },
	{ "hist", 0, 1, KP_BF_MAIN, KP_BI_CALL, NULL, 0 },
	{ "lhist", 3, 4, KP_BF_MAIN, KP_BI_CALL, NULL, 0 },
	{ "stats", 0, 1, KP_BF_MAIN, KP_BI_CALL, NULL, 0 },
	{ "clear", 1, 1, 0, KP_BI_CALL, NULL, 0 },
	{ "sprintf", 1, ANY, 0, KP_BI_CALL, NULL, 0 },
	{ "substr", 2, 3, 0, KP_BI_CALL, NULL, 0 },
	{ "strcmp", 2, 2, 0, KP_BI_CALL, NULL, 0 },
	{ "contains", 2, 2, 0, KP_BI_CALL, NULL, 0 },
	{ "join", 1, 2, 0, KP_BI_CALL, NULL, 0 },
	{ "sk_saddr", 1, 1, 0, KP_BI_CALL, NULL, 0 },
	{ "sk_daddr", 1, 1, 0, KP_BI_CALL, NULL, 0 },
	{ "ntop", 1, 1, 0, KP_BI_CALL, NULL, 0 },
	/* ktap 0.1 names: the compiler's only */
	{ "gettimeofday_us", 0, 0, 0, KP_BI_DIVK, "gettimeofday_ns", 1000 },
	{ "gettimeofday_ms", 0, 0, 0, KP_BI_DIVK, "gettimeofday_ns",
	  1000000 },
	{ "gettimeofday_s", 0, 0, 0, KP_BI_DIVK, "gettimeofday_ns",
	  1000000000 },
	{ "inplace_inc", 2, 3, 0, KP_BI_INC, NULL, 0 },
	{ "histogram", 1, 2, 0, KP_BI_ALIAS, "print_hist", 0 },
	{ "kdebug_dumpstack", 0, 0, 0, KP_BI_ALIAS, "print_backtrace", 0 },
	{ "backtrace", 0, 2, 0, KP_BI_ALIAS, "stack", 0 },	/* 0.3, 0.4 */
	{ "cpid", 0, 0, 0, KP_BI_ALIAS, "target_pid", 0 },	/* bpftrace */
	{ "ipof", 1, 1, 0, KP_BI_ALIAS, "ksym", 0 },		/* 0.4 */
};
#undef ANY


/* Builtins with side effects or arguments are not values when bare. */
static const char *const kp_not_bare[] = {
	"print", "printf", "exit", "print_backtrace", "print_trace_clock",
	"kdebug_dumpstack", "ptable", "sleep", "hist", "lhist", "stats", "clear",
};

static const char *const kp_libs[] = {
	"kdebug", "timer", "ansi", "net", "table", "os",
};

/* ktap 0.4's net library: each member is one kernel builtin. */
static const struct {
	const char	*member;
	const char	*builtin;
} kp_net[] = {
	{ "ip_sock_saddr", "sk_saddr" },
	{ "ip_sock_daddr", "sk_daddr" },
	{ "format_ip_addr", "ntop" },
};

static int net_builtin(const char *member)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(kp_net); i++)
		if (!strcmp(member, kp_net[i].member))
			return kp_builtin_find(kp_net[i].builtin);
	return -1;
}

struct kp_resolver {
	struct kp_state	*S;
	int		collect;	/* first walk: globals only */
	struct kp_func	*fn;		/* function being walked */
	struct kp_var	*scope[KP_SCOPE_MAX];
	int		nscope;
	struct kp_evinfo *filter;	/* walking a trace filter */
	struct kp_evinfo no_fields;	/* filter of events not known */
	int		nretval;	/* set_retval mentions so far */
};

int kp_builtin_find(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(kp_builtins); i++)
		if (!strcmp(kp_builtins[i].name, name))
			return (int)i;
	return -1;
}

const char *kp_builtin_name(int id)
{
	return id >= 0 && id < (int)ARRAY_SIZE(kp_builtins) ?
	       kp_builtins[id].name : "?";
}

void kp_builtin_arity(int id, int *min, int *max)
{
	*min = kp_builtins[id].min;
	*max = kp_builtins[id].max;
}

const struct kp_builtin *kp_builtin_get(int id)
{
	return &kp_builtins[id];
}

/* How many entries of kp_builtins[] the kernel knows: the leading CALLs. */
int kp_builtin_kernel_count(void)
{
	int n = 0;

	while (n < (int)ARRAY_SIZE(kp_builtins) &&
	       kp_builtins[n].how == KP_BI_CALL)
		n++;
	return n;
}

int kp_builtin_kernel(const char *name)
{
	int i, n = kp_builtin_kernel_count();

	for (i = 0; i < n; i++)
		if (!strcmp(kp_builtins[i].name, name))
			return i;
	return -1;
}

static int bare_ok(int id)
{
	size_t i;

	if (kp_builtins[id].min)
		return 0;
	for (i = 0; i < ARRAY_SIZE(kp_not_bare); i++)
		if (!strcmp(kp_not_bare[i], kp_builtins[id].name))
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

/* ---- scopes ---- */

static void declare(struct kp_resolver *R, struct kp_var *v)
{
	int i, n = 0;

	for (i = R->nscope - 1; i >= 0 && R->scope[i]->fn == R->fn; i--)
		n++;
	if (n >= KP_MAX_LOCALS || R->nscope >= KP_SCOPE_MAX)
		kp_fatal(R->S, v->line, v->col, KP_E_LOCALS, KP_MAX_LOCALS);
	v->fn = R->fn;
	v->reg = -1;
	R->scope[R->nscope++] = v;
}

static struct kp_var *lookup(struct kp_resolver *R, const char *name)
{
	int i;

	for (i = R->nscope - 1; i >= 0; i--)
		if (!strcmp(R->scope[i]->name, name))
			return R->scope[i];
	return NULL;
}

/* Is @name a variable of the script (in scope, or a global)? */
static int is_variable(struct kp_resolver *R, const char *name)
{
	return lookup(R, name) || kp_global_find(R->S, name) >= 0;
}

/* Index of @v among @fn's upvalues, adding it (and its path) if new. */
static int upval_of(struct kp_resolver *R, struct kp_func *fn,
		    struct kp_var *v, uint32_t line, uint32_t col)
{
	int parent_upval = -1;
	uint32_t i;

	for (i = 0; i < fn->nupv; i++)
		if (fn->upv[i].var == v)
			return (int)i;
	if (fn->parent != v->fn)
		parent_upval = upval_of(R, fn->parent, v, line, col);
	if (fn->nupv >= KTAP_MAX_UPVALS)
		kp_fatal(R->S, line, col, KP_E_UPVALS, KTAP_MAX_UPVALS);
	kp_grow(&R->S->arena, (void **)&fn->upv, &fn->upvcap, fn->nupv + 1,
		sizeof(*fn->upv));
	fn->upv[fn->nupv].name = v->name;
	fn->upv[fn->nupv].var = v;
	fn->upv[fn->nupv].parent_upval = parent_upval;
	v->captured = 1;
	return (int)fn->nupv++;
}

/* Rule 1: a variable in scope. */
static int resolve_var(struct kp_resolver *R, struct kp_node *n)
{
	struct kp_var *v = lookup(R, n->str.s);

	if (!v)
		return 0;
	n->sym.var = v;
	if (v->fn == R->fn) {
		n->sym.kind = KP_SYM_LOCAL;
	} else {
		n->sym.kind = KP_SYM_UPVAL;
		n->sym.upval = upval_of(R, R->fn, v, n->line, n->col);
	}
	return 1;
}

/* "did you mean": the closest variable, global or builtin. */
static void suggest_name(struct kp_resolver *R, const char *name, char *buf,
			 size_t len)
{
	const struct kp_image *I = R->S->img;
	const char *best = NULL;
	int bd = 1000, d, i;
	uint32_t g;

	for (i = 0; i < R->nscope; i++) {
		d = kp_distance(name, R->scope[i]->name);
		if (d < bd) {
			bd = d;
			best = R->scope[i]->name;
		}
	}
	for (g = 0; g < I->nglobals; g++) {
		d = kp_distance(name, I->globals[g]);
		if (d < bd) {
			bd = d;
			best = I->globals[g];
		}
	}
	for (i = 0; i < (int)ARRAY_SIZE(kp_builtins); i++) {
		d = kp_distance(name, kp_builtins[i].name);
		if (d < bd) {
			bd = d;
			best = kp_builtins[i].name;
		}
	}
	kp_suggest(buf, len, name, best);
}

/* Does @ev (when its fields are known) have field @name? 1, 0, or -1. */
static int has_field(const struct kp_evinfo *ev, const char *name)
{
	uint32_t i;

	if (!ev || !ev->fields)
		return -1;
	for (i = 0; i < ev->nfields; i++)
		if (!strcmp(ev->fields[i], name))
			return 1;
	return 0;
}

static void unknown_field(struct kp_resolver *R, const struct kp_evinfo *ev,
			  const char *name, uint32_t line, uint32_t col)
{
	const char *best = NULL;
	int bd = 1000, d;
	char sug[300];
	uint32_t i;

	for (i = 0; i < ev->nfields; i++) {
		d = kp_distance(name, ev->fields[i]);
		if (d < bd) {
			bd = d;
			best = ev->fields[i];
		}
	}
	kp_suggest(sug, sizeof(sug), name, best);
	kp_error(R->S, line, col, KP_E_UNKNOWN_FIELD,
		 ev->first ? ev->first : "?", name, sug);
}

/*
 * ktap 0.4's argevent (the event being handled) and argname (its
 * name): the handler's event argument and its `name` field.
 */
static void event_alias(struct kp_resolver *R, struct kp_node *n)
{
	struct kp_var *e = NULL;
	int i;

	for (i = R->nscope - 1; i >= 0 && !e; i--)
		if (R->scope[i]->is_event)
			e = R->scope[i];
	if (!e || (n->str.s[3] == 'n' && e->fn != R->fn)) {
		kp_error(R->S, n->line, n->col, KP_E_NO_EVENT, n->str.s);
		return;
	}
	if (n->str.s[3] == 'n') {
		n->sym.kind = KP_SYM_FIELD;
		n->sym.event = e;
		n->sym.field.s = "name";
		n->sym.field.len = 4;
		return;
	}
	n->sym.var = e;
	if (e->fn == R->fn) {
		n->sym.kind = KP_SYM_LOCAL;
	} else {
		n->sym.kind = KP_SYM_UPVAL;
		n->sym.upval = upval_of(R, R->fn, e, n->line, n->col);
	}
}

/*
 * A name read as a value, by the rules at the top of this file; @called
 * when it is the function of a call.
 */
static void resolve_read(struct kp_resolver *R, struct kp_node *n,
			 int called)
{
	const char *name = n->str.s;
	char sug[300];
	int g, b;

	if (resolve_var(R, n))
		return;
	g = kp_global_find(R->S, name);
	if (g >= 0) {
		n->sym.kind = KP_SYM_GLOBAL;
		n->sym.global = g;
		return;
	}
	if (R->filter && has_field(R->filter, name) == 1)
		goto field;
	b = kp_builtin_find(name);
	if (b >= 0) {
		if (!bare_ok(b)) {
			kp_error(R->S, n->line, n->col, KP_E_BUILTIN_VALUE,
				 name);
			return;
		}
		n->sym.kind = KP_SYM_BUILTIN;
		n->sym.builtin = b;
		return;
	}
	if (argn(name) >= 0) {
		if (argn(name) < R->S->argbase) {
			kp_error(R->S, n->line, n->col, KP_E_ARG0);
			return;
		}
		n->sym.kind = KP_SYM_ARGN;
		n->sym.argn = argn(name) - R->S->argbase;
		return;
	}
	if (!strcmp(name, "argevent") || !strcmp(name, "argname")) {
		event_alias(R, n);
		return;
	}
	if (R->filter) {
		if (has_field(R->filter, name) == 0) {
			unknown_field(R, R->filter, name, n->line, n->col);
			return;
		}
		goto field;
	}
	if (is_lib(name)) {
		kp_error(R->S, n->line, n->col, KP_E_LIBRARY, name, name);
		return;
	}
	if (!strcmp(name, "ffi") || !strcmp(name, "C")) {
		kp_error(R->S, n->line, n->col, KP_E_FFI);
		return;
	}
	suggest_name(R, name, sug, sizeof(sug));
	if (called) {
		kp_error(R->S, n->line, n->col, KP_E_UNKNOWN_NAME, name, sug);
		return;
	}
	/*
	 * A global nobody assigns reads as nil, as in ktap 0.4 (whose
	 * schedtimes.kp indexes such a typo on a path it rarely takes).
	 * Say so once: later reads find the global.
	 */
	kp_warn(R->S, n->line, n->col, KP_E_NEVER_SET, name, sug);
	n->sym.kind = KP_SYM_GLOBAL;
	n->sym.global = kp_global(R->S, name);
	return;
field:
	n->sym.kind = KP_SYM_FIELD;
	n->sym.event = R->fn->params;
	n->sym.field = n->str;
}

/* A name assigned to: a variable in scope, else the global of the name. */
static void resolve_write(struct kp_resolver *R, struct kp_node *n)
{
	if (R->collect) {
		if (!lookup(R, n->str.s))
			kp_global(R->S, n->str.s);
		return;
	}
	if (resolve_var(R, n)) {
		/* an event argument written to no longer reads the event */
		n->sym.var->assigned = 1;
		return;
	}
	n->sym.kind = KP_SYM_GLOBAL;
	n->sym.global = kp_global(R->S, n->str.s);
}

/* ---- probes ---- */

/* Let the kprobes among probe entries [first, first + n) skip their function. */
static void mark_override(struct kp_state *S, uint32_t first, uint32_t n)
{
	struct kp_image *I = S->img;
	uint32_t i;

	for (i = first; i < first + n && i < I->nprobes; i++)
		if (I->probes[i].type == KTAP_PROBE_KPROBE)
			I->probes[i].flags |= KTAP_PROBE_F_OVERRIDE;
}

static const struct {
	const char	*name;
	uint64_t	mult;
	enum ktap_probe_type type;
} kp_timers[] = {
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

/* The probe entries of a library probe call, once its arguments are known. */
static void library_probe_entries(struct kp_resolver *R, struct kp_probe *p,
				  uint64_t mult, enum ktap_probe_type type)
{
	struct kp_state *S = R->S;
	struct kp_node *spec = p->spec;
	char text[96], *s;
	uint64_t ns;

	switch (p->kind) {
	case KP_PROBE_KDEBUG:
		if (spec->kind != KP_N_STR ||
		    strlen(spec->str.s) != spec->str.len) {
			kp_error(S, spec->line, spec->col, KP_E_PROBE_SPEC);
			return;
		}
		if (!strcmp(p->what, "kdebug.tracepoint")) {
			/* an event named without its system */
			s = kp_alloc(&S->arena, spec->str.len + 3);
			memcpy(s, "*:", 2);
			memcpy(s + 2, spec->str.s, spec->str.len + 1);
		} else {
			s = kp_strndup(&S->arena, spec->str.s, spec->str.len);
		}
		p->ev = kp_alloc(&S->arena, sizeof(*p->ev));
		p->n = kp_events_resolve(S, s, KP_FORM_KDEBUG, spec->line,
					 spec->col, &p->first, p->ev);
		return;
	case KP_PROBE_KDEBUG_END:
		p->first = kp_events_simple(S, KTAP_PROBE_END,
					    "kdebug.probe_end", 0);
		p->n = 1;
		return;
	default:
		break;
	}
	if (spec->kind != KP_N_INT || spec->ival <= 0) {
		kp_error(S, spec->line, spec->col, KP_E_TIMER_ARG, p->what);
		return;
	}
	ns = (uint64_t)spec->ival > UINT64_MAX / mult ? UINT64_MAX :
	     (uint64_t)spec->ival * mult;
	snprintf(text, sizeof(text), "%s(%lld)", p->what,
		 (long long)spec->ival);
	if (ns < 10000 || ns > 3600ULL * 1000000000ULL) {
		kp_error(S, spec->line, spec->col, KP_E_PERIOD_RANGE, text);
		return;
	}
	p->first = kp_events_simple(S, type,
				    kp_strndup(&S->arena, text, strlen(text)),
				    ns);
	p->n = 1;
}

static void walk_expr(struct kp_resolver *R, struct kp_node *n);
static void walk_func(struct kp_resolver *R, struct kp_func *fn);

static void walk_list(struct kp_resolver *R, struct kp_node *n)
{
	for (; n; n = n->next)
		walk_expr(R, n);
}

/*
 * kdebug.probe(spec, fn), kdebug.probe_end(fn), timer.X(n, fn): the
 * call becomes a probe whose handler is the function argument.
 */
static void library_probe(struct kp_resolver *R, struct kp_node *call,
			  const char *what, enum kp_probekind kind,
			  uint64_t mult, enum ktap_probe_type type)
{
	struct kp_node *args = call->list, *m = call->a;
	int want = kind == KP_PROBE_KDEBUG_END ? 1 : 2, nargs = 0, before;
	struct kp_node *a, *nowait = NULL;
	struct kp_probe *p;

	for (a = args; a; a = a->next)
		nargs++;
	/* kdebug.probe_end(fn, 1) of ktap 0.1: end when the main chunk does */
	if (kind == KP_PROBE_KDEBUG_END && nargs == 2) {
		nowait = args->next;
		nargs = 1;
	}
	if (nargs != want) {
		char need[64];

		snprintf(need, sizeof(need), "%s", want == 1 ? "a function" :
			 kind == KP_PROBE_KDEBUG ?
			 "a probe specification and a function" :
			 "a period and a function");
		kp_error(R->S, m->line, m->col, KP_E_PROBE_ARGS, what, need);
		walk_list(R, args);
		return;
	}
	p = kp_alloc(&R->S->arena, sizeof(*p));
	p->kind = kind;
	p->what = what;
	if (nowait && !R->collect) {
		if (nowait->kind == KP_N_INT || nowait->kind == KP_N_TRUE)
			p->nowait = nowait->kind == KP_N_TRUE || nowait->ival;
		else if (nowait->kind != KP_N_FALSE && nowait->kind != KP_N_NIL)
			kp_error(R->S, nowait->line, nowait->col,
				 KP_E_END_NOWAIT);
	}
	p->spec = want == 2 ? args : NULL;
	p->handler = want == 2 ? args->next : args;
	if (kind != KP_PROBE_KDEBUG_END && p->handler->kind == KP_N_FUNC &&
	    p->handler->fn->params)
		p->handler->fn->params->is_event = 1;
	before = R->nretval;
	walk_expr(R, p->handler);
	/* a function literal shows what it does; a name may be any function */
	p->override = R->nretval > before ||
		      (R->nretval && p->handler->kind != KP_N_FUNC);
	if (R->collect)
		return;
	if (p->spec)
		walk_expr(R, p->spec);
	call->probe = p;
	R->S->line = m->line;
	R->S->col = m->col;
	library_probe_entries(R, p, mult, type);
	if (p->n && p->override)
		mark_override(R->S, p->first, p->n);
}

static void ansi_call(struct kp_resolver *R, struct kp_node *call,
		      const char *member, size_t i)
{
	int64_t v[3] = { 0, 0, 0 };
	char buf[64], what[64];
	struct kp_node *a;
	int n = 0, bad = 0;

	for (a = call->list; a; a = a->next, n++) {
		if (a->kind != KP_N_INT)
			bad = 1;
		else if (n < 3)
			v[n] = a->ival;
	}
	snprintf(what, sizeof(what), "ansi.%s", member);
	if (n != kp_ansi[i].nargs || v[0] < 0 || v[0] > 255 ||
	    v[1] < 0 || v[1] > 255 || v[2] < 0 || v[2] > 255) {
		kp_error(R->S, call->a->line, call->a->col, KP_E_ANSI_ARG,
			 what);
		return;
	}
	if (bad) {
		/* gen.c concatenates the sequence at run time */
		call->ansi_args = n;
		return;
	}
	snprintf(buf, sizeof(buf), kp_ansi[i].fmt, (int)v[0], (int)v[1],
		 (int)v[2]);
	call->ansi = kp_strndup(&R->S->arena, buf, strlen(buf));
	call->ansi_len = (uint32_t)strlen(buf);
}

/* lib.member(...) with lib a library: 1 if handled here. */
static int library_call(struct kp_resolver *R, struct kp_node *call)
{
	struct kp_node *f = call->a;
	const char *lib, *member;
	char sug[128], what[64];
	size_t i;

	if (f->kind != KP_N_FIELD || f->a->kind != KP_N_NAME ||
	    !is_lib(f->a->str.s) || is_variable(R, f->a->str.s))
		return 0;
	lib = f->a->str.s;
	member = f->str.s;
	f->a->sym.kind = KP_SYM_LIB;
	snprintf(what, sizeof(what), "%s.%s", lib, member);
	sug[0] = '\0';
	if (!strcmp(lib, "kdebug")) {
		if (!strcmp(member, "probe")) {
			library_probe(R, call, "kdebug.probe", KP_PROBE_KDEBUG,
				      1, KTAP_PROBE_TRACEPOINT);
			return 1;
		}
		if (!strcmp(member, "tracepoint")) {
			library_probe(R, call, "kdebug.tracepoint",
				      KP_PROBE_KDEBUG, 1, KTAP_PROBE_TRACEPOINT);
			return 1;
		}
		if (!strcmp(member, "probe_end")) {
			library_probe(R, call, "kdebug.probe_end",
				      KP_PROBE_KDEBUG_END, 1, KTAP_PROBE_END);
			return 1;
		}
		if (!strcmp(member, "dumpstack")) {
			call->builtin = kp_builtin_find("kdebug_dumpstack");
			walk_list(R, call->list);
			return 1;
		}
		kp_suggest(sug, sizeof(sug), member, "probe");
	} else if (!strcmp(lib, "timer")) {
		for (i = 0; i < ARRAY_SIZE(kp_timers); i++)
			if (!strcmp(member, kp_timers[i].name)) {
				library_probe(R, call,
					      kp_strndup(&R->S->arena, what,
							 strlen(what)),
					      KP_PROBE_TIMER, kp_timers[i].mult,
					      kp_timers[i].type);
				return 1;
			}
	} else if (!strcmp(lib, "table")) {
		/* table.new(narr, nhash) of ktap 0.4: the hints do not matter */
		if (!strcmp(member, "new")) {
			walk_list(R, call->list);
			call->kind = KP_N_TABLE;
			call->list = NULL;
			call->a = NULL;
			return 1;
		}
	} else if (!strcmp(lib, "os")) {
		/* os.sleep(ms) of ktap 0.1: the main chunk waits, probes live */
		if (!strcmp(member, "sleep")) {
			call->builtin = kp_builtin_find("sleep");
			walk_list(R, call->list);
			return 1;
		}
		kp_suggest(sug, sizeof(sug), member, "sleep");
	} else if (!strcmp(lib, "net")) {
		call->builtin = net_builtin(member);
		if (call->builtin >= 0) {
			walk_list(R, call->list);
			return 1;
		}
		kp_suggest(sug, sizeof(sug), member, "ip_sock_saddr");
	} else {
		for (i = 0; i < ARRAY_SIZE(kp_ansi); i++)
			if (!strcmp(member, kp_ansi[i].name)) {
				walk_list(R, call->list);
				if (!R->collect)
					ansi_call(R, call, member, i);
				return 1;
			}
		kp_suggest(sug, sizeof(sug), member, "set_color");
	}
	if (!R->collect)
		kp_error(R->S, f->line, f->col, KP_E_LIB_MEMBER, lib, member,
			 sug);
	walk_list(R, call->list);
	return 1;
}

/* ---- expressions ---- */

/* e.NAME in a handler: check NAME against the event's fields. */
static void check_event_field(struct kp_resolver *R, struct kp_node *n)
{
	struct kp_node *o = n->a;
	struct kp_evinfo *ev;

	if (o->kind != KP_N_NAME || o->sym.kind != KP_SYM_LOCAL ||
	    !o->sym.var->is_event || !R->fn->probe)
		return;
	ev = R->fn->probe->ev;
	if (!strcmp(n->str.s, "tostring") || !strcmp(n->str.s, "set_retval"))
		return;
	if (has_field(ev, n->str.s) == 0)
		unknown_field(R, ev, n->str.s, n->line, n->col);
}

static void walk_call(struct kp_resolver *R, struct kp_node *n)
{
	struct kp_node *f = n->a;
	int b;

	n->builtin = -1;
	if (library_call(R, n))
		return;
	if (f->kind == KP_N_NAME && !is_variable(R, f->str.s)) {
		b = kp_builtin_find(f->str.s);
		if (b >= 0) {
			n->builtin = b;
			f->sym.kind = KP_SYM_BUILTIN;
			f->sym.builtin = b;
			walk_list(R, n->list);
			return;
		}
	}
	if (f->kind == KP_N_NAME) {
		if (!R->collect)
			resolve_read(R, f, 1);
	} else {
		walk_expr(R, f);
	}
	walk_list(R, n->list);
}

/*
 * `net.ip_sock_saddr` as a value (0.4's tcp_ipaddr.kp keeps the net
 * functions in variables): @n becomes `function (sk) { return
 * net.ip_sock_saddr(sk) }`, an ordinary one-parameter closure, so no
 * builtin needs to be a value in the VM.
 */
static void net_function(struct kp_resolver *R, struct kp_node *n)
{
	struct kp_state *S = R->S;
	struct kp_func *fn = kp_alloc(&S->arena, sizeof(*fn));
	struct kp_var *v = kp_alloc(&S->arena, sizeof(*v));
	struct kp_node *body = kp_node_new(S, KP_N_BLOCK, n->line, n->col);
	struct kp_node *ret = kp_node_new(S, KP_N_RETURN, n->line, n->col);
	struct kp_node *call = kp_node_new(S, KP_N_CALL, n->line, n->col);
	struct kp_node *field = kp_node_new(S, KP_N_FIELD, n->line, n->col);
	struct kp_node *arg = kp_node_new(S, KP_N_NAME, n->line, n->col);
	char what[64];

	v->name = "sk";
	v->line = n->line;
	v->col = n->col;
	v->reg = -1;
	arg->str.s = v->name;
	arg->str.len = (uint32_t)strlen(v->name);
	field->a = n->a;
	field->str = n->str;
	call->a = field;
	call->list = arg;
	ret->list = call;
	body->list = ret;
	snprintf(what, sizeof(what), "net.%s", n->str.s);
	fn->name = kp_strndup(&S->arena, what, strlen(what));
	fn->line = n->line;
	fn->col = n->col;
	fn->end_line = n->line;
	fn->parent = R->fn;
	fn->params = v;
	fn->nparams = 1;
	fn->body = body;
	n->kind = KP_N_FUNC;
	n->fn = fn;
	n->a = NULL;
}

static void walk_expr(struct kp_resolver *R, struct kp_node *n)
{
	struct kp_node *t;

	if (!n)
		return;
	switch (n->kind) {
	case KP_N_NAME:
		if (!R->collect)
			resolve_read(R, n, 0);
		break;
	case KP_N_INDEX:
		walk_expr(R, n->a);
		walk_expr(R, n->b);
		break;
	case KP_N_FIELD:
		if (!strcmp(n->str.s, "set_retval"))
			R->nretval++;
		if (!R->collect && n->a->kind == KP_N_NAME &&
		    !strcmp(n->a->str.s, "net") && !is_variable(R, "net") &&
		    net_builtin(n->str.s) >= 0) {
			net_function(R, n);
			walk_func(R, n->fn);
			break;
		}
		walk_expr(R, n->a);
		if (!R->collect)
			check_event_field(R, n);
		break;
	case KP_N_METHOD:
		if (!strcmp(n->str.s, "set_retval"))
			R->nretval++;
		walk_expr(R, n->a);
		walk_list(R, n->list);
		break;
	case KP_N_CALL:
		walk_call(R, n);
		break;
	case KP_N_FUNC:
		walk_func(R, n->fn);
		break;
	case KP_N_TABLE:
		for (t = n->list; t; t = t->next) {
			walk_expr(R, t->a);
			walk_expr(R, t->b);
		}
		break;
	case KP_N_UNOP:
		walk_expr(R, n->a);
		break;
	case KP_N_BINOP:
		walk_expr(R, n->a);
		walk_expr(R, n->b);
		break;
	default:
		break;
	}
}

/* An assignment target: NAME, INDEX or FIELD. */
static void walk_target(struct kp_resolver *R, struct kp_node *n)
{
	if (n->kind == KP_N_NAME)
		resolve_write(R, n);
	else
		walk_expr(R, n);
}

/* ---- statements ---- */

static void walk_block(struct kp_resolver *R, struct kp_node *blk);

static void walk_probe(struct kp_resolver *R, struct kp_node *n)
{
	struct kp_probe *p = n->probe;
	const struct kp_token *t = p->tok;
	struct kp_state *S = R->S;
	int before;

	if (!R->collect) {
		S->line = n->line;
		S->col = n->col;
		switch (p->kind) {
		case KP_PROBE_TRACE:
			p->ev = kp_alloc(&S->arena, sizeof(*p->ev));
			p->n = kp_events_resolve(S, t->str.s, KP_FORM_TRACE,
						 t->line, t->col, &p->first,
						 p->ev);
			if (!p->n)
				p->ev = NULL;
			break;
		case KP_PROBE_PERIOD:
			p->first = kp_events_simple(S, t->pkind ==
						    KP_PERIOD_TICK ?
						    KTAP_PROBE_TIMER :
						    KTAP_PROBE_PROFILE,
						    t->text, (uint64_t)t->i);
			p->n = 1;
			break;
		default:
			p->first = kp_events_simple(S, KTAP_PROBE_END,
						    "trace_end", 0);
			p->n = 1;
			break;
		}
	}
	before = R->nretval;
	walk_func(R, n->fn);
	p->override = R->nretval > before;
	if (!R->collect && p->n && p->override)
		mark_override(S, p->first, p->n);
}

static void walk_stmt(struct kp_resolver *R, struct kp_node *n)
{
	int mark = R->nscope;
	struct kp_node *t;
	struct kp_var *v;

	switch (n->kind) {
	case KP_N_BLOCK:
		walk_block(R, n);
		break;
	case KP_N_LOCAL:
		walk_list(R, n->list);
		for (v = n->vars; v; v = v->next)
			declare(R, v);
		break;
	case KP_N_LOCALFUNC:
		declare(R, n->vars);
		walk_func(R, n->fn);
		break;
	case KP_N_ASSIGN:
		for (t = n->list; t; t = t->next)
			walk_target(R, t);
		walk_list(R, n->list2);
		break;
	case KP_N_COMPOUND:
		walk_target(R, n->a);
		walk_expr(R, n->b);
		break;
	case KP_N_AGGR:
		walk_expr(R, n->a);
		walk_expr(R, n->b);
		break;
	case KP_N_EXPR:
		walk_expr(R, n->a);
		break;
	case KP_N_IF:
		walk_expr(R, n->a);
		walk_stmt(R, n->b);
		if (n->c)
			walk_stmt(R, n->c);
		break;
	case KP_N_WHILE:
		walk_expr(R, n->a);
		walk_stmt(R, n->b);
		break;
	case KP_N_FORNUM:
		walk_expr(R, n->a);
		walk_expr(R, n->b);
		walk_expr(R, n->c);
		declare(R, n->vars);
		walk_stmt(R, n->list);
		break;
	case KP_N_FORIN:
		walk_expr(R, n->a);
		for (v = n->vars; v; v = v->next)
			declare(R, v);
		walk_stmt(R, n->b);
		break;
	case KP_N_RETURN:
		walk_list(R, n->list);
		break;
	case KP_N_FUNCSTAT:
		walk_target(R, n->a);
		walk_func(R, n->fn);
		break;
	case KP_N_PROBE:
		walk_probe(R, n);
		break;
	default:
		break;
	}
	/* LOCAL and LOCALFUNC declare into the enclosing block */
	if (n->kind != KP_N_LOCAL && n->kind != KP_N_LOCALFUNC)
		R->nscope = mark;
}

static void walk_block(struct kp_resolver *R, struct kp_node *blk)
{
	int mark = R->nscope;
	struct kp_node *s;

	for (s = blk->list; s; s = s->next)
		walk_stmt(R, s);
	R->nscope = mark;
}

static void walk_func(struct kp_resolver *R, struct kp_func *fn)
{
	struct kp_func *saved = R->fn;
	struct kp_evinfo *saved_filter = R->filter;
	int mark = R->nscope;
	struct kp_var *v;

	R->fn = fn;
	for (v = fn->params; v; v = v->next)
		declare(R, v);
	if (fn->filter) {
		struct kp_evinfo *ev = fn->probe ? fn->probe->ev : NULL;

		R->filter = ev ? ev : &R->no_fields;
		walk_expr(R, fn->filter);
	}
	R->filter = NULL;
	walk_block(R, fn->body);
	R->filter = saved_filter;
	R->nscope = mark;
	R->fn = saved;
}

int kp_resolve(struct kp_state *S, struct kp_ast *ast)
{
	struct kp_resolver R;
	int before = S->nerrors;

	memset(&R, 0, sizeof(R));
	R.S = S;
	R.collect = 1;
	if (ast->need_arg)
		kp_global(S, "arg");
	walk_func(&R, ast->main);
	R.collect = 0;
	R.nscope = 0;
	R.nretval = 0;
	walk_func(&R, ast->main);
	return S->nerrors - before;
}
