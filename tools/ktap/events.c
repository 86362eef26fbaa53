// SPDX-License-Identifier: GPL-2.0
/*
 * ktap probe-spec resolution against tracefs, kallsyms and ELF files.
 * See events.h. Everything user space can resolve is resolved here so
 * the kernel only checks: tracepoint wildcards become sorted event-id
 * lists, kprobe wildcards become one kprobe per matching function, and
 * uprobe symbols become file offsets.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <elf.h>
#include "events.h"
#include "fetch.h"
#include "lex.h"
#include "image.h"

#define KP_MAX_EVENTS_FIELDS	64	/* read formats of at most this many */

const char *kp_tracefs(struct kp_state *S)
{
	static const char *const roots[] = {
		"/sys/kernel/tracing", "/sys/kernel/debug/tracing",
	};
	const char *env = S ? S->tracefs : getenv("KTAP_TRACEFS");
	char path[512];
	size_t i;

	if (env && *env)
		return env;
	for (i = 0; i < ARRAY_SIZE(roots); i++) {
		snprintf(path, sizeof(path), "%s/events", roots[i]);
		if (!access(path, X_OK))
			return roots[i];
	}
	return roots[0];
}

/*
 * Add a probe of @type for @spec with @flags (KTAP_PROBE_F_*); @target
 * (@tlen bytes) or none.
 */
static uint32_t probe_add(struct kp_state *S, enum ktap_probe_type type,
			  uint32_t flags, const char *spec, const char *target,
			  size_t tlen, uint64_t arg, uint32_t attr)
{
	struct ktap_bc_probe p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	p.flags = flags;
	p.spec = kp_strtab(S, spec, (uint32_t)strlen(spec));
	p.target = target ? kp_strtab(S, target, (uint32_t)tlen) :
			    KTAP_BC_NO_STR;
	p.arg = arg;
	p.attr = attr;
	return kp_probe_add(S, &p);
}

/* A sorted list of names. */
struct kp_names {
	char		**v;
	uint32_t	n, cap;
};

static void names_add(struct kp_arena *a, struct kp_names *l, const char *s)
{
	kp_grow(a, (void **)&l->v, &l->cap, l->n + 1, sizeof(*l->v));
	l->v[l->n++] = kp_strndup(a, s, strlen(s));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_sort(struct kp_names *l)
{
	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), cmp_str);
}

static const char *closest(const struct kp_names *l, const char *name)
{
	const char *best = NULL;
	int bd = 1000, d;
	uint32_t i;

	for (i = 0; i < l->n; i++) {
		d = kp_distance(name, l->v[i]);
		if (d < bd) {
			bd = d;
			best = l->v[i];
		}
	}
	return best;
}

static int has_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* Subdirectories (dirs only) of @dir matching @glob; -1 if unreadable. */
static int list_dirs(struct kp_arena *a, const char *dir, const char *glob,
		     struct kp_names *out, struct kp_names *all)
{
	struct dirent *de;
	char path[1024];
	struct stat st;
	DIR *d = opendir(dir);

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &st) || !S_ISDIR(st.st_mode))
			continue;
		if (all)
			names_add(a, all, de->d_name);
		if (!fnmatch(glob, de->d_name, 0))
			names_add(a, out, de->d_name);
	}
	closedir(d);
	names_sort(out);
	if (all)
		names_sort(all);
	return 0;
}

/* Read a whole (text) file into the arena; NULL if unreadable. */
static char *read_file(struct kp_arena *a, const char *path, size_t max)
{
	size_t cap = 65536, len = 0;
	char *buf, *nb;
	ssize_t r;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return NULL;
	buf = malloc(cap);
	while (buf) {
		if (len + 1 >= cap) {
			if (cap >= max)
				break;
			nb = realloc(buf, cap * 2);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (!buf)
		return NULL;
	nb = kp_strndup(a, buf, len);
	free(buf);
	return nb;
}

static void add_field(struct kp_state *S, struct kp_evinfo *ev,
		      const char *name, size_t len)
{
	uint32_t i;

	for (i = 0; i < ev->nfields; i++)
		if (strlen(ev->fields[i]) == len &&
		    !memcmp(ev->fields[i], name, len))
			return;
	kp_grow(&S->arena, (void **)&ev->fields, &ev->fieldcap,
		ev->nfields + 1, sizeof(*ev->fields));
	ev->fields[ev->nfields++] = kp_strndup(&S->arena, name, len);
}

/* Field names of an event from its format file. */
static void read_fields(struct kp_state *S, struct kp_evinfo *ev,
			const char *dir)
{
	char path[1400], *text, *p;

	snprintf(path, sizeof(path), "%s/format", dir);
	text = read_file(&S->arena, path, 1 << 16);
	if (!text)
		return;
	for (p = text; (p = strstr(p, "field:")); ) {
		char *semi = strchr(p, ';'), *e, *b;

		if (!semi)
			break;
		e = semi;
		if (e > p && e[-1] == ']') {
			while (e > p && *e != '[')
				e--;
		}
		b = e;
		while (b > p && (b[-1] == '_' || (b[-1] >= 'a' && b[-1] <= 'z') ||
				 (b[-1] >= 'A' && b[-1] <= 'Z') ||
				 (b[-1] >= '0' && b[-1] <= '9')))
			b--;
		if (e > b)
			add_field(S, ev, b, (size_t)(e - b));
		p = semi;
	}
}

/*
 * The fields of tracepoint probe @probe: its events' format fields
 * @real (when few enough events to read them all), plus the synthetic
 * ones the VM answers by name. Only @real are recorded per probe, for
 * EVFIELD (gen.c), since only those does the kernel resolve at attach.
 */
static void tp_fields(struct kp_state *S, struct kp_evinfo *ev,
		      const struct kp_evinfo *real, uint32_t nevents,
		      uint32_t probe)
{
	static const char *const synth[] = {
		"name", "sc_nr", "sc_is_enter", "sc_arg1", "sc_arg2",
		"sc_arg3", "sc_arg4", "sc_arg5", "sc_arg6", "retval",
	};
	struct kp_evpart *part;
	uint32_t i;

	if (nevents > KP_MAX_EVENTS_FIELDS || !real->nfields) {
		ev->fields = NULL;	/* too many to check: the kernel will */
		ev->nfields = 0;
		return;
	}
	for (i = 0; i < real->nfields; i++)
		add_field(S, ev, real->fields[i], strlen(real->fields[i]));
	for (i = 0; i < (ev->syscalls ? 10 : 1); i++)
		add_field(S, ev, synth[i], strlen(synth[i]));
	kp_grow(&S->arena, (void **)&ev->parts, &ev->partcap, ev->nparts + 1,
		sizeof(*ev->parts));
	part = &ev->parts[ev->nparts++];
	part->probe = probe;
	part->fields = real->fields;
	part->nfields = real->nfields;
}

static uint32_t tp_resolve(struct kp_state *S, const char *spec,
			   const char *pat, uint32_t line, uint32_t col,
			   uint32_t *first, struct kp_evinfo *ev)
{
	struct kp_names systems = { 0 }, allsys = { 0 };
	const char *root = kp_tracefs(S);
	char sysglob[256], evglob[256], dir[1024], path[1200];
	char sug[600];
	const char *colon = strchr(pat, ':'), *c;
	uint32_t nevents = 0, i, j;
	struct kp_evinfo real = { 0 };

	if (colon) {
		snprintf(sysglob, sizeof(sysglob), "%.*s",
			 (int)(colon - pat), pat);
		snprintf(evglob, sizeof(evglob), "%s", colon + 1);
	} else {
		snprintf(sysglob, sizeof(sysglob), "%s", pat);
		snprintf(evglob, sizeof(evglob), "*");
	}
	for (c = pat; *c; c++) {
		if (!(*c == '_' || *c == '*' || *c == '?' || *c == ':' ||
		      *c == '-' || *c == '.' ||
		      (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9')) ||
		    (*c == ':' && c != colon)) {
			kp_error(S, line, col, KP_E_BAD_EVENTDEF, spec,
				 "expected SYSTEM:EVENT (letters, digits, _ and * ? wildcards)");
			return 0;
		}
	}
	if (!*sysglob || !*evglob) {
		kp_error(S, line, col, KP_E_BAD_EVENTDEF, spec,
			 "expected SYSTEM:EVENT");
		return 0;
	}
	snprintf(dir, sizeof(dir), "%s/events", root);
	if (list_dirs(&S->arena, dir, sysglob, &systems, &allsys) < 0) {
		kp_error(S, line, col, KP_E_NO_TRACEFS, dir, strerror(errno));
		return 0;
	}
	if (!systems.n) {
		if (has_glob(sysglob)) {
			kp_error(S, line, col, KP_E_NO_MATCH, pat);
		} else {
			kp_suggest(sug, sizeof(sug), sysglob,
				   closest(&allsys, sysglob));
			kp_error(S, line, col, KP_E_UNKNOWN_SYSTEM, sysglob, sug);
		}
		return 0;
	}
	ev->tracepoint = 1;
	for (i = 0; i < systems.n; i++) {
		struct kp_names evs = { 0 }, allev = { 0 };

		snprintf(dir, sizeof(dir), "%s/events/%s", root, systems.v[i]);
		if (list_dirs(&S->arena, dir, evglob, &evs, &allev) < 0)
			continue;
		if (!evs.n && !has_glob(evglob) && systems.n == 1) {
			const char *best = closest(&allev, evglob);
			char full[600];

			sug[0] = '\0';
			if (best) {
				kp_suggest(sug, sizeof(sug), evglob, best);
				if (sug[0])
					snprintf(sug, sizeof(sug),
						 " (did you mean '%s:%s'?)",
						 systems.v[i], best);
			}
			snprintf(full, sizeof(full), "%s:%s", systems.v[i],
				 evglob);
			kp_error(S, line, col, KP_E_UNKNOWN_EVENT, full, sug);
			return 0;
		}
		if (!strcmp(systems.v[i], "syscalls") && evs.n)
			ev->syscalls = 1;
		for (j = 0; j < evs.n; j++) {
			nevents++;
			if (!ev->first) {
				snprintf(path, sizeof(path), "%s:%s",
					 systems.v[i], evs.v[j]);
				ev->first = kp_strndup(&S->arena, path,
						       strlen(path));
			}
			if (nevents <= KP_MAX_EVENTS_FIELDS) {
				snprintf(path, sizeof(path), "%s/%s", dir,
					 evs.v[j]);
				read_fields(S, &real, path);
			}
		}
	}
	if (!nevents) {
		kp_error(S, line, col, KP_E_NO_MATCH, pat);
		return 0;
	}
	/* the kernel expands the pattern itself, as split here */
	snprintf(path, sizeof(path), "%s:%s", sysglob, evglob);
	*first = probe_add(S, KTAP_PROBE_TRACEPOINT, 0, spec, path,
			   strlen(path), 0, 0);
	tp_fields(S, ev, &real, nevents, *first);
	return 1;
}

/* ---- kernel functions ---- */

/*
 * One of the kernel's function lists: tracefs available_filter_functions
 * (one name per line, maybe followed by a module) or kallsyms (text
 * symbols only). Read and split once per compilation, however many
 * probes ask; an unreadable list is empty. The names point into the
 * file's text, NUL-terminated in place, in the arena.
 */
static const struct kp_names *function_list(struct kp_state *S, int kallsyms)
{
	struct kp_names *l = S->fnlists[kallsyms];
	char path[1024], *text, *p, *nl;

	if (l)
		return l;
	l = kp_alloc(&S->arena, sizeof(*l));
	memset(l, 0, sizeof(*l));
	S->fnlists[kallsyms] = l;
	if (kallsyms) {
		snprintf(path, sizeof(path), "%s",
			 S->kallsyms ? S->kallsyms : "/proc/kallsyms");
		text = read_file(&S->arena, path, 256 << 20);
	} else {
		snprintf(path, sizeof(path), "%s/available_filter_functions",
			 kp_tracefs(S));
		text = read_file(&S->arena, path, 64 << 20);
	}
	for (p = text; p && *p; p = nl) {
		char *name = p, *end;

		nl = strchr(p, '\n');
		nl = nl ? nl + 1 : p + strlen(p);
		if (kallsyms) {		/* "addr type name [module]" */
			char *t = strchr(p, ' ');

			if (!t || t + 3 >= nl || t[2] != ' ' ||
			    !strchr("tTwW", t[1]))
				continue;
			name = t + 3;
		}
		for (end = name; end < nl && *end != ' ' && *end != '\t' &&
		     *end != '\n'; end++)
			;
		if (end == name)
			continue;
		*end = '\0';
		kp_grow(&S->arena, (void **)&l->v, &l->cap, l->n + 1,
			sizeof(*l->v));
		l->v[l->n++] = name;
	}
	return l;
}

/**
 * kp_ksym_addr() - the address of the kernel symbol a `name` token names
 * @S: compiler state (kallsyms is read once, from KTAP_KALLSYMS or
 *     /proc/kallsyms)
 * @t: the TK_KSYM token
 *
 * Any symbol type counts (functions and data, ktap 0.4 read both); the
 * first match wins. An unknown name, or a kallsyms that shows only zero
 * addresses (not root, or kptr_restrict), is an error at @t.
 *
 * Return: the address, or 0 after reporting an error.
 */
uint64_t kp_ksym_addr(struct kp_state *S, const struct kp_token *t)
{
	return kp_ksym_lookup(S, t->str.s, t->str.len, t->line, t->col);
}

uint64_t kp_ksym_lookup(struct kp_state *S, const char *name, size_t len,
			uint32_t line, uint32_t col)
{
	const char *path = S->kallsyms ? S->kallsyms : "/proc/kallsyms";
	char sym[256];
	int seen = 0;
	char *p, *nl;

	if (!S->ksyms) {
		S->ksyms = read_file(&S->arena, path, 256 << 20);
		if (!S->ksyms)
			S->ksyms = "";
	}
	for (p = S->ksyms; *p; p = nl) {
		unsigned long long addr;
		char *sp;

		nl = strchr(p, '\n');
		nl = nl ? nl + 1 : p + strlen(p);
		/* "addr type name [module]" */
		sp = strchr(p, ' ');
		if (!sp || sp + 3 >= nl || sp[2] != ' ')
			continue;
		addr = strtoull(p, NULL, 16);
		seen |= addr != 0;
		if (!strncmp(sp + 3, name, len) &&
		    strchr(" \t\n", sp[3 + len] ? sp[3 + len] : '\n') && addr)
			return addr;
	}
	snprintf(sym, sizeof(sym), "%.*s", (int)len, name);
	if (!seen)
		kp_error(S, line, col, KP_E_KSYM_HIDDEN, sym, path);
	else
		kp_error(S, line, col, KP_E_KSYM_UNKNOWN, sym, path);
	return 0;
}

/* Every kernel function name: available_filter_functions, else kallsyms. */
static const struct kp_names *kernel_functions(struct kp_state *S)
{
	const struct kp_names *l = function_list(S, 0);

	return l->n ? l : function_list(S, 1);
}

static int names_has(const struct kp_names *l, const char *name)
{
	uint32_t i;

	for (i = 0; i < l->n; i++) {
		if (!strcmp(l->v[i], name))
			return 1;
	}
	return 0;
}

static int valid_sym(const char *s, int glob)
{
	if (!*s)
		return 0;
	for (; *s; s++) {
		if (!(*s == '_' || *s == '.' || (*s >= 'a' && *s <= 'z') ||
		      (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      (glob && (*s == '*' || *s == '?'))))
			return 0;
	}
	return 1;
}

/* A kprobe on @sym+@off; @flags are KTAP_PROBE_F_*. */
static uint32_t kp_add_kprobe(struct kp_state *S, const char *spec,
			      const char *sym, uint64_t off, uint32_t flags)
{
	return probe_add(S, KTAP_PROBE_KPROBE, flags, spec, sym, strlen(sym),
			 off, 0);
}

/*
 * Is @sym a kernel function a kprobe can name? Functions ftrace cannot
 * trace (the syscall wrappers __x64_sys_*, for one) are missing from
 * available_filter_functions yet kprobe fine, so kallsyms is asked too.
 * With neither list readable, the kernel decides at attach time. Reports
 * an unknown name, with the closest one, at @line:@col.
 */
static int kfunc_check(struct kp_state *S, const char *sym, uint32_t line,
		       uint32_t col)
{
	const struct kp_names *ftrace = function_list(S, 0), *ksyms;
	char sug[600];

	if (names_has(ftrace, sym))
		return 1;
	ksyms = function_list(S, 1);
	if (names_has(ksyms, sym) || (!ftrace->n && !ksyms->n))
		return 1;
	kp_suggest(sug, sizeof(sug), sym,
		   closest(ftrace->n ? ftrace : ksyms, sym));
	kp_error(S, line, col, KP_E_UNKNOWN_FUNC, sym, sug);
	return 0;
}

/**
 * kp_check_kfuncs - check the kprobe targets left to the kernel
 * @S: a compilation with kfunc_defer set
 *
 * Reading the kernel's function lists costs most of the start-up of a
 * script with a kprobe, so a run leaves exact names to register_kprobe().
 * When attaching failed, this says which name was wrong, where, and what
 * the closest existing one is.
 *
 * Return: the number of unknown function names reported.
 */
int kp_check_kfuncs(struct kp_state *S)
{
	int before = S->nerrors;
	uint32_t i;

	for (i = 0; i < S->nkfuncs; i++)
		kfunc_check(S, S->kfuncs[i].sym, S->kfuncs[i].line,
			    S->kfuncs[i].col);
	kp_flush_errors(S);
	return S->nerrors - before;
}

static uint32_t kprobe_resolve(struct kp_state *S, const char *spec,
			       const char *rest, uint32_t line, uint32_t col,
			       uint32_t *first)
{
	char sym[256];
	const char *end = rest;
	const struct kp_names *funcs;
	struct kp_names found = { 0 };
	uint64_t off = 0;
	uint32_t i, n = 0;
	int ret = 0;
	size_t len;
	char *plus, *pct;

	while (*end && *end != ' ' && *end != '\t')
		end++;
	len = (size_t)(end - rest);
	if (len >= sizeof(sym)) {
		kp_error(S, line, col, KP_E_BAD_EVENTDEF, spec,
			 "function name too long");
		return 0;
	}
	memcpy(sym, rest, len);
	sym[len] = '\0';
	pct = strchr(sym, '%');
	if (pct) {
		if (strcmp(pct, "%return")) {
			kp_error(S, line, col, KP_E_BAD_EVENTDEF, spec,
				 "only %return may follow the function");
			return 0;
		}
		*pct = '\0';
		ret = 1;
	}
	len = strlen(sym);
	if (len && sym[len - 1] == '!') {
		sym[len - 1] = '\0';
		ret = 1;
	}
	plus = strchr(sym, '+');
	if (plus) {
		char *e;

		*plus = '\0';
		off = strtoull(plus + 1, &e, 0);
		if (e == plus + 1 || *e || ret || off > 0x7fffffff) {
			kp_error(S, line, col, KP_E_BAD_EVENTDEF, spec,
				 ret ? "a return probe takes no offset" :
				 "bad offset after '+'");
			return 0;
		}
	}
	if (!valid_sym(sym, 1)) {
		kp_error(S, line, col, KP_E_BAD_EVENTDEF, spec,
			 "expected a kernel function name");
		return 0;
	}
	if (!has_glob(sym)) {
		if (S->kfunc_defer) {
			struct kp_kfunc *k;

			kp_grow(&S->arena, (void **)&S->kfuncs, &S->kfunccap,
				S->nkfuncs + 1, sizeof(*S->kfuncs));
			k = &S->kfuncs[S->nkfuncs++];
			k->sym = kp_strndup(&S->arena, sym, strlen(sym));
			k->line = line;
			k->col = col;
		} else if (!kfunc_check(S, sym, line, col)) {
			return 0;
		}
		*first = kp_add_kprobe(S, spec, sym, off,
				       ret ? KTAP_PROBE_F_RETURN : 0);
		return 1;
	}
	funcs = kernel_functions(S);
	if (!funcs->n) {
		char path[600];

		snprintf(path, sizeof(path), "%s/available_filter_functions",
			 kp_tracefs(S));
		kp_error(S, line, col, KP_E_NO_TRACEFS, path,
			 "needed to expand the wildcard");
		return 0;
	}
	for (i = 0; i < funcs->n; i++) {
		if (fnmatch(sym, funcs->v[i], 0))
			continue;
		if (found.n <= KP_MAX_KPROBE_GLOB)
			names_add(&S->arena, &found, funcs->v[i]);
		else
			found.n++;	/* count only: over the limit */
	}
	if (!found.n) {
		kp_error(S, line, col, KP_E_NO_MATCH, sym);
		return 0;
	}
	if (found.n > KP_MAX_KPROBE_GLOB) {
		/*
		 * Too many for one kprobe each (the original's "probe:*"
		 * sample); a plain entry wildcard is what the function
		 * tracer does with a single ftrace_ops and filter, so that
		 * is what it becomes. An offset, a return probe or fetch
		 * arguments need kprobes.
		 */
		if (!plus && !ret && !end[strspn(end, " \t")]) {
			kp_warn(S, line, col, KP_E_GLOB_FTRACE, sym,
				(int)found.n, KP_MAX_KPROBE_GLOB, sym);
			*first = probe_add(S, KTAP_PROBE_FTRACE, 0, spec, sym,
					   strlen(sym), 0, 0);
			return 1;
		}
		kp_error(S, line, col, KP_E_GLOB_MANY, sym, (int)found.n,
			 KP_MAX_KPROBE_GLOB);
		return 0;
	}
	names_sort(&found);
	for (i = 0; i < found.n; i++) {
		uint32_t idx;

		if (i && !strcmp(found.v[i], found.v[i - 1]))
			continue;
		idx = kp_add_kprobe(S, spec, found.v[i], off,
				    KTAP_PROBE_F_WILDCARD |
				    (ret ? KTAP_PROBE_F_RETURN : 0));
		if (!n++)
			*first = idx;
	}
	return n;
}

/* ---- ELF symbols for uprobes ---- */

int kp_elf_open(struct kp_elf *e, const char *path, const char **why)
{
	struct stat st;
	int fd = open(path, O_RDONLY);
	const Elf64_Ehdr *h;

	e->map = NULL;
	if (fd < 0) {
		*why = strerror(errno);
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		*why = "not an ELF file";
		return -1;
	}
	e->size = (size_t)st.st_size;
	e->map = mmap(NULL, e->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (e->map == MAP_FAILED) {
		e->map = NULL;
		*why = strerror(errno);
		return -1;
	}
	h = (const Elf64_Ehdr *)e->map;
	if (memcmp(h->e_ident, ELFMAG, SELFMAG) ||
	    h->e_ident[EI_CLASS] != ELFCLASS64 ||
	    h->e_ident[EI_DATA] != ELFDATA2LSB ||
	    h->e_shentsize != sizeof(Elf64_Shdr) ||
	    h->e_shoff > e->size ||
	    (uint64_t)h->e_shnum * sizeof(Elf64_Shdr) > e->size - h->e_shoff ||
	    h->e_phoff > e->size ||
	    (uint64_t)h->e_phnum * sizeof(Elf64_Phdr) > e->size - h->e_phoff) {
		munmap((void *)e->map, e->size);
		e->map = NULL;
		*why = "not a 64-bit little-endian ELF file";
		return -1;
	}
	return 0;
}

void kp_elf_close(struct kp_elf *e)
{
	if (e->map)
		munmap((void *)e->map, e->size);
}

/*
 * Walk the function symbols of .symtab and .dynsym. @fn returns nonzero
 * to stop. Every offset is bounds-checked: the file may be hostile.
 */
int kp_elf_syms(struct kp_elf *e,
		int (*fn)(void *arg, const char *name, uint64_t value,
			  uint64_t size),
		void *arg)
{
	const Elf64_Ehdr *h = (const Elf64_Ehdr *)e->map;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(e->map + h->e_shoff);
	uint32_t i, j;

	for (i = 0; i < h->e_shnum; i++) {
		const Elf64_Shdr *s = &sh[i], *str;
		const Elf64_Sym *sym;
		uint64_t n;

		if (s->sh_type != SHT_SYMTAB && s->sh_type != SHT_DYNSYM)
			continue;
		if (s->sh_link >= h->e_shnum || s->sh_offset > e->size ||
		    s->sh_size > e->size - s->sh_offset ||
		    s->sh_entsize != sizeof(Elf64_Sym))
			continue;
		str = &sh[s->sh_link];
		if (str->sh_offset > e->size ||
		    str->sh_size > e->size - str->sh_offset)
			continue;
		sym = (const Elf64_Sym *)(e->map + s->sh_offset);
		n = s->sh_size / sizeof(Elf64_Sym);
		for (j = 0; j < n; j++) {
			const char *name;

			if (ELF64_ST_TYPE(sym[j].st_info) != STT_FUNC ||
			    !sym[j].st_value || sym[j].st_name >= str->sh_size)
				continue;
			name = (const char *)e->map + str->sh_offset +
			       sym[j].st_name;
			if (!memchr(name, '\0', str->sh_size - sym[j].st_name))
				continue;
			if (fn(arg, name, sym[j].st_value, sym[j].st_size))
				return 1;
		}
	}
	return 0;
}

/*
 * Virtual address to file offset through the PT_LOAD segments; @exec:
 * only executable ones (code), else any (a USDT semaphore's data).
 */
static int elf_va_to_off(struct kp_elf *e, uint64_t va, uint64_t *off,
			 int exec)
{
	const Elf64_Ehdr *h = (const Elf64_Ehdr *)e->map;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(e->map + h->e_phoff);
	uint32_t i;

	for (i = 0; i < h->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD ||
		    (exec && !(ph[i].p_flags & PF_X)))
			continue;
		if (va >= ph[i].p_vaddr && va - ph[i].p_vaddr < ph[i].p_filesz) {
			*off = va - ph[i].p_vaddr + ph[i].p_offset;
			return 0;
		}
	}
	return -1;
}

struct sym_find {
	const char	*want;
	uint64_t	value;
	const char	*best;
	int		bd;
	int		suggest;	/* second pass: find the closest name */
};

static int sym_find_cb(void *arg, const char *name, uint64_t value,
		       uint64_t size)
{
	struct sym_find *f = arg;
	int d;

	(void)size;
	if (!strcmp(name, f->want)) {
		f->value = value;
		return 1;
	}
	if (f->suggest && strlen(name) < 100) {
		d = kp_distance(f->want, name);
		if (d < f->bd) {
			f->bd = d;
			f->best = name;
		}
	}
	return 0;
}

/* A uprobe at @path's @off (semaphore @sema); @flags are KTAP_PROBE_F_*. */
static uint32_t add_uprobe(struct kp_state *S, const char *spec,
			   const char *path, uint64_t off, uint32_t sema,
			   uint32_t flags)
{
	return probe_add(S, KTAP_PROBE_UPROBE, flags, spec, path,
			 strlen(path), off, sema);
}

/* A function symbol a uprobe wildcard matched. */
struct usym_match {
	const char	*name;
	uint64_t	value;
};

struct usym_glob {
	struct kp_arena		*arena;
	const char		*glob;
	struct usym_match	*v;
	uint32_t		n, cap;
};

static int usym_glob_cb(void *arg, const char *name, uint64_t value,
			uint64_t size)
{
	struct usym_glob *g = arg;

	(void)size;
	if (fnmatch(g->glob, name, 0))
		return 0;
	kp_grow(g->arena, (void **)&g->v, &g->cap, g->n + 1, sizeof(*g->v));
	g->v[g->n].name = name;
	g->v[g->n++].value = value;
	return 0;
}

static int cmp_usym(const void *a, const void *b)
{
	const struct usym_match *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return strcmp(x->name, y->name);
}

/*
 * probe:/PATH:GLOB: one uprobe per matching function of the binary's
 * symbol tables. Aliases (one address, several names: malloc and
 * __libc_malloc) are probed once, under the first name in order.
 */
static uint32_t uprobe_glob(struct kp_state *S, const char *spec,
			    struct kp_elf *elf, const char *path,
			    const char *glob, int ret, uint32_t line,
			    uint32_t col, uint32_t *first)
{
	struct usym_glob g = { .arena = &S->arena, .glob = glob };
	char one[1400];
	uint32_t i, n = 0, idx;
	uint64_t off;

	kp_elf_syms(elf, usym_glob_cb, &g);
	if (!g.n) {
		kp_error(S, line, col, KP_E_NO_MATCH, spec);
		return 0;
	}
	qsort(g.v, g.n, sizeof(*g.v), cmp_usym);
	for (i = 0; i < g.n; i++) {
		if (i && g.v[i].value == g.v[i - 1].value)
			continue;
		if (elf_va_to_off(elf, g.v[i].value, &off, 1))
			continue;
		if (n == KP_MAX_UPROBE_GLOB) {
			kp_error(S, line, col, KP_E_GLOB_MANY, glob, (int)g.n,
				 KP_MAX_UPROBE_GLOB);
			return 0;
		}
		/* the event is named after the function it hit */
		snprintf(one, sizeof(one), "probe:%s:%s%s", path, g.v[i].name,
			 ret ? "%return" : "");
		idx = add_uprobe(S, one, path, off, 0, KTAP_PROBE_F_WILDCARD |
				 (ret ? KTAP_PROBE_F_RETURN : 0));
		if (!n++)
			*first = idx;
	}
	if (!n)
		kp_error(S, line, col, KP_E_UPROBE, spec,
			 "no matching function is in an executable segment");
	return n;
}

/*
 * Scripts name libraries where their distribution keeps them (the
 * original's samples say /lib64/libc.so.6, a Fedora path; Debian has
 * /lib/x86_64-linux-gnu/libc.so.6). When @path (@size bytes) is a
 * missing shared library, look for the same file name in the usual
 * library directories and, found, use it with a warning at @line:@col.
 */
static void lib_fallback(struct kp_state *S, char *path, size_t size,
			 uint32_t line, uint32_t col)
{
	static const char *const dirs[] = {
#if defined(__x86_64__)
		"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
#elif defined(__aarch64__)
		"/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
#endif
		"/lib64", "/usr/lib64", "/lib", "/usr/lib",
	};
	const char *base = strrchr(path, '/');
	char found[1024];
	size_t i;

	if (!base || !strstr(base, ".so") || !access(path, F_OK) ||
	    errno != ENOENT)
		return;
	for (i = 0; i < ARRAY_SIZE(dirs); i++) {
		snprintf(found, sizeof(found), "%s%s", dirs[i], base);
		if (strlen(found) < size && !access(found, R_OK)) {
			kp_warn(S, line, col, KP_E_LIB_MOVED, path, found);
			strcpy(path, found);
			return;
		}
	}
}

static uint32_t uprobe_resolve(struct kp_state *S, const char *spec,
			       const char *rest, uint32_t line, uint32_t col,
			       uint32_t *first)
{
	char path[1024], sym[256], msg[1700], sug[300];
	const char *colon, *end = rest, *why;
	struct kp_elf elf;
	uint64_t off;
	uint32_t n;
	size_t len;
	int ret = 0;
	char *pct;

	while (*end && *end != ' ' && *end != '\t')
		end++;
	colon = NULL;
	for (const char *c = rest; c < end; c++)
		if (*c == ':')
			colon = c;
	if (!colon || colon == rest || colon + 1 == end ||
	    (size_t)(colon - rest) >= sizeof(path) ||
	    (size_t)(end - colon) >= sizeof(sym)) {
		kp_error(S, line, col, KP_E_BAD_EVENTDEF, spec,
			 "expected /PATH:SYMBOL or /PATH:0xOFFSET");
		return 0;
	}
	memcpy(path, rest, (size_t)(colon - rest));
	path[colon - rest] = '\0';
	lib_fallback(S, path, sizeof(path), line, col);
	len = (size_t)(end - colon - 1);
	memcpy(sym, colon + 1, len);
	sym[len] = '\0';
	pct = strchr(sym, '%');
	if (pct) {
		if (strcmp(pct, "%return")) {
			kp_error(S, line, col, KP_E_BAD_EVENTDEF, spec,
				 "only %return may follow the symbol");
			return 0;
		}
		*pct = '\0';
		ret = 1;
	}
	if (sym[0] && sym[strlen(sym) - 1] == '!') {
		sym[strlen(sym) - 1] = '\0';
		ret = 1;
	}
	if (!strncmp(sym, "0x", 2)) {
		char *e;

		off = strtoull(sym + 2, &e, 16);
		if (e == sym + 2 || *e) {
			kp_error(S, line, col, KP_E_BAD_EVENTDEF, spec,
				 "bad hexadecimal offset");
			return 0;
		}
		*first = add_uprobe(S, spec, path, off, 0,
				    ret ? KTAP_PROBE_F_RETURN : 0);
		return 1;
	}
	if (!valid_sym(sym, 1)) {
		kp_error(S, line, col, KP_E_BAD_EVENTDEF, spec,
			 "expected a symbol name, * ? wildcards, or 0xOFFSET");
		return 0;
	}
	if (kp_elf_open(&elf, path, &why)) {
		snprintf(msg, sizeof(msg), "%s: %s", path, why);
		kp_error(S, line, col, KP_E_UPROBE, spec, msg);
		return 0;
	}
	if (has_glob(sym)) {
		n = uprobe_glob(S, spec, &elf, path, sym, ret, line, col,
				first);
		kp_elf_close(&elf);
		return n;
	}
	{
		struct sym_find f = { .want = sym, .bd = 1000 };

		if (!kp_elf_syms(&elf, sym_find_cb, &f)) {
			f.suggest = 1;
			kp_elf_syms(&elf, sym_find_cb, &f);
			kp_suggest(sug, sizeof(sug), sym, f.best);
			snprintf(msg, sizeof(msg), "no function '%s' in %s%s",
				 sym, path, sug);
			kp_elf_close(&elf);
			kp_error(S, line, col, KP_E_UPROBE, spec, msg);
			return 0;
		}
		if (elf_va_to_off(&elf, f.value, &off, 1)) {
			kp_elf_close(&elf);
			kp_error(S, line, col, KP_E_UPROBE, spec,
				 "symbol is not in an executable segment");
			return 0;
		}
	}
	kp_elf_close(&elf);
	*first = add_uprobe(S, spec, path, off, 0,
			    ret ? KTAP_PROBE_F_RETURN : 0);
	return 1;
}

/* ---- USDT (SystemTap SDT) probes ---- */

/* One probe site of a .note.stapsdt note, addresses as the note has them. */
struct sdt_note {
	uint64_t	pc, base, sema;
	const char	*provider, *name, *args;
};

/* The address of section @want, or 0 when the file has none. */
static uint64_t elf_section_addr(struct kp_elf *e, const char *want)
{
	const Elf64_Ehdr *h = (const Elf64_Ehdr *)e->map;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(e->map + h->e_shoff);
	const Elf64_Shdr *str;
	uint32_t i;

	if (h->e_shstrndx >= h->e_shnum)
		return 0;
	str = &sh[h->e_shstrndx];
	if (str->sh_offset > e->size || str->sh_size > e->size - str->sh_offset)
		return 0;
	for (i = 0; i < h->e_shnum; i++) {
		const char *name;

		if (sh[i].sh_name >= str->sh_size)
			continue;
		name = (const char *)e->map + str->sh_offset + sh[i].sh_name;
		if (memchr(name, '\0', str->sh_size - sh[i].sh_name) &&
		    !strcmp(name, want))
			return sh[i].sh_addr;
	}
	return 0;
}

/*
 * Call @fn for every SDT note of @e, the addresses already adjusted for
 * a prelinked file (the note records where .stapsdt.base was when it
 * was written). @fn returns nonzero to stop. The file may be hostile:
 * every length is checked.
 */
static int sdt_notes(struct kp_elf *e,
		     int (*fn)(void *arg, const struct sdt_note *n), void *arg)
{
	const Elf64_Ehdr *h = (const Elf64_Ehdr *)e->map;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(e->map + h->e_shoff);
	uint64_t base = elf_section_addr(e, ".stapsdt.base");
	uint32_t i;

	for (i = 0; i < h->e_shnum; i++) {
		const unsigned char *p, *end;

		if (sh[i].sh_type != SHT_NOTE || sh[i].sh_offset > e->size ||
		    sh[i].sh_size > e->size - sh[i].sh_offset)
			continue;
		p = e->map + sh[i].sh_offset;
		end = p + sh[i].sh_size;
		while ((size_t)(end - p) >= sizeof(Elf64_Nhdr)) {
			const Elf64_Nhdr *nh = (const void *)p;
			const unsigned char *name = p + sizeof(*nh), *desc;
			size_t nsz = (nh->n_namesz + 3) & ~3u;
			size_t dsz = (nh->n_descsz + 3) & ~3u;
			const char *d, *dend, *pn, *an;
			struct sdt_note n;

			if (nsz > (size_t)(end - name) ||
			    dsz > (size_t)(end - name) - nsz)
				break;
			desc = name + nsz;
			p = desc + dsz;
			if (nh->n_type != 3 || nh->n_namesz != 8 ||
			    memcmp(name, "stapsdt", 8) || nh->n_descsz <= 24)
				continue;
			memcpy(&n.pc, desc, 8);
			memcpy(&n.base, desc + 8, 8);
			memcpy(&n.sema, desc + 16, 8);
			d = (const char *)desc + 24;
			dend = (const char *)desc + nh->n_descsz;
			pn = memchr(d, '\0', (size_t)(dend - d));
			if (!pn)
				continue;
			an = memchr(pn + 1, '\0', (size_t)(dend - pn - 1));
			if (!an)
				continue;
			n.provider = d;
			n.name = pn + 1;
			n.args = an + 1 < dend && memchr(an + 1, '\0',
					(size_t)(dend - an - 1)) ? an + 1 : "";
			if (base && n.base) {
				n.pc += base - n.base;
				if (n.sema)
					n.sema += base - n.base;
			}
			if (fn(arg, &n))
				return 1;
		}
	}
	return 0;
}

struct sdt_match {
	struct kp_state	*S;
	struct kp_elf	*elf;
	const char	*path, *spec;
	const char	*prov_glob, *name_glob;	/* prov_glob NULL: any */
	uint32_t	line, col;
	uint32_t	n, first;
	int		failed;
};

static int sdt_match_cb(void *arg, const struct sdt_note *note)
{
	struct sdt_match *m = arg;
	struct kp_state *S = m->S;
	uint64_t off, sema = 0;
	char one[1400], msg[300];
	const char *why;
	uint32_t idx;
	int nargs;

	if (fnmatch(m->name_glob, note->name, 0) ||
	    (m->prov_glob && fnmatch(m->prov_glob, note->provider, 0)))
		return 0;
	if (elf_va_to_off(m->elf, note->pc, &off, 1) ||
	    (note->sema && elf_va_to_off(m->elf, note->sema, &sema, 0)) ||
	    sema > UINT32_MAX) {
		snprintf(msg, sizeof(msg),
			 "%s:%s: the note's addresses are not in the file",
			 note->provider, note->name);
		kp_error(S, m->line, m->col, KP_E_USDT, m->spec, msg);
		m->failed = 1;
		return 1;
	}
	if (m->n == KTAP_MAX_PROBES) {
		kp_error(S, m->line, m->col, KP_E_USDT, m->spec,
			 "matches more probe sites than a script may have");
		m->failed = 1;
		return 1;
	}
	snprintf(one, sizeof(one), "sdt:%s:%s:%s", m->path, note->provider,
		 note->name);
	idx = add_uprobe(S, one, m->path, off, (uint32_t)sema, 0);
	if (!m->n++)
		m->first = idx;
	nargs = kp_fetch_usdt(S, note->args, idx, &why);
	if (why) {
		snprintf(msg, sizeof(msg),
			 "%s:%s: argument %d not decoded (%s); arg%d and later read nil",
			 note->provider, note->name, nargs + 1, why, nargs + 1);
		kp_warn(S, m->line, m->col, KP_E_USDT, m->spec, msg);
	}
	return 0;
}

/*
 * sdt:/PATH:PROVIDER:NAME or, as ktap 0.4 wrote it, sdt:/PATH:NAME (any
 * provider); * and ? match. Each matching site (a probe may be compiled
 * in at several places) becomes a uprobe of its own, with the note's
 * arguments as arg1..argN and its semaphore counted while attached.
 */
static uint32_t sdt_resolve(struct kp_state *S, const char *spec,
			    uint32_t line, uint32_t col, uint32_t *first)
{
	char buf[1400], path[1400], msg[1500];
	struct sdt_match m = {
		.S = S, .spec = spec, .line = line, .col = col,
	};
	struct kp_elf elf;
	const char *why;
	char *c1, *c2;

	if (strlen(spec + 4) >= sizeof(buf) || spec[4] != '/') {
		kp_error(S, line, col, KP_E_BAD_EVENTDEF, spec,
			 "expected sdt:/PATH:PROVIDER:NAME or sdt:/PATH:NAME");
		return 0;
	}
	strcpy(buf, spec + 4);
	c1 = strchr(buf, ':');
	c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (!c1 || !c1[1] || (c2 && (!c2[1] || c2 == c1 + 1 ||
				      strchr(c2 + 1, ':')))) {
		kp_error(S, line, col, KP_E_BAD_EVENTDEF, spec,
			 "expected sdt:/PATH:PROVIDER:NAME or sdt:/PATH:NAME");
		return 0;
	}
	*c1 = '\0';
	if (c2) {
		*c2 = '\0';
		m.prov_glob = c1 + 1;
		m.name_glob = c2 + 1;
	} else {
		m.name_glob = c1 + 1;
	}
	snprintf(path, sizeof(path), "%s", buf);
	lib_fallback(S, path, sizeof(path), line, col);
	m.path = path;
	if (kp_elf_open(&elf, path, &why)) {
		snprintf(msg, sizeof(msg), "%s: %s", path, why);
		kp_error(S, line, col, KP_E_USDT, spec, msg);
		return 0;
	}
	m.elf = &elf;
	sdt_notes(&elf, sdt_match_cb, &m);
	kp_elf_close(&elf);
	if (m.failed)
		return 0;
	if (!m.n) {
		snprintf(msg, sizeof(msg),
			 "no such probe in %.600s (ktap -lm %.600s lists them)", path,
			 path);
		kp_error(S, line, col, KP_E_USDT, spec, msg);
		return 0;
	}
	*first = m.first;
	return m.n;
}

/* ---- perf events and watchpoints ---- */

/* The perf events the kernel's KTAP_PROBE_PERF knows, as perf names them. */
static const char *const perf_events[] = {
	"software:cpu-clock", "software:task-clock", "software:page-faults",
	"software:faults", "software:minor-faults", "software:major-faults",
	"software:context-switches", "software:cs", "software:cpu-migrations",
	"software:migrations", "software:alignment-faults",
	"software:emulation-faults",
	"hardware:cycles", "hardware:cpu-cycles", "hardware:instructions",
	"hardware:cache-references", "hardware:cache-misses",
	"hardware:branch-instructions", "hardware:branches",
	"hardware:branch-misses", "hardware:bus-cycles", "hardware:ref-cycles",
};

int kp_kfunc_list(const char *glob)
{
	char path[600], line[512];
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/available_filter_functions",
		 kp_tracefs(NULL));
	f = fopen(path, "re");
	if (!f) {
		fprintf(stderr, "ktap: cannot read %s: %s\n", path,
			strerror(errno));
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, " \t\n")] = '\0';
		if (*line && !fnmatch(glob, line, 0)) {
			printf("probe:%s\n", line);
			found = 1;
		}
	}
	fclose(f);
	return !found;
}

int kp_perf_list(void)
{
	size_t i;

	for (i = 0; i < sizeof(perf_events) / sizeof(perf_events[0]); i++)
		printf("%s\n", perf_events[i]);
	printf("watchpoint:SYMBOL[+OFF]:LEN:MODE\nwatchpoint:0xADDR:LEN:MODE\n");
	return 0;
}

/* software:NAME[:PERIOD] and hardware:NAME[:PERIOD] */
static uint32_t perf_resolve(struct kp_state *S, const char *spec,
			     uint32_t line, uint32_t col, uint32_t *first)
{
	const char *colon = strchr(spec + 9, ':');
	size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
	unsigned long long period = 0;
	char name[64], *end;
	size_t i;

	if (len >= sizeof(name))
		len = sizeof(name) - 1;
	memcpy(name, spec, len);
	name[len] = '\0';
	for (i = 0; i < sizeof(perf_events) / sizeof(perf_events[0]); i++)
		if (!strcmp(name, perf_events[i]))
			break;
	if (i == sizeof(perf_events) / sizeof(perf_events[0])) {
		kp_error(S, line, col, KP_E_BAD_EVENTDEF, spec,
			 "unknown perf event (ktap -lp lists them)");
		return 0;
	}
	if (colon) {
		errno = 0;
		period = strtoull(colon + 1, &end, 10);
		if (errno || end == colon + 1 || *end || !period) {
			kp_error(S, line, col, KP_E_BAD_EVENTDEF, spec,
				 "the sample period after the name must be a positive number");
			return 0;
		}
	}
	*first = probe_add(S, KTAP_PROBE_PERF, 0, spec, name, strlen(name),
			   period, 0);
	return 1;
}

/* watchpoint:SYMBOL[+OFF]:LEN:MODE or watchpoint:0xADDR:LEN:MODE */
static uint32_t watch_resolve(struct kp_state *S, const char *spec,
			      uint32_t line, uint32_t col, uint32_t *first)
{
	const char *what = spec + 11, *c1 = strchr(what, ':'), *c2, *m;
	unsigned long long addr, off = 0;
	uint32_t mode = 0;
	char *end;
	long len;

	c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (!c1 || !c2 || c1 == what || strchr(c2 + 1, ':')) {
		kp_error(S, line, col, KP_E_BAD_EVENTDEF, spec,
			 "expected watchpoint:SYMBOL[+OFF]:LEN:MODE or watchpoint:0xADDR:LEN:MODE");
		return 0;
	}
	len = strtol(c1 + 1, &end, 10);
	if (end != c2 || (len != 1 && len != 2 && len != 4 && len != 8)) {
		kp_error(S, line, col, KP_E_BAD_EVENTDEF, spec,
			 "the length must be 1, 2, 4 or 8 bytes");
		return 0;
	}
	for (m = c2 + 1; *m; m++)
		mode |= *m == 'r' ? KTAP_WATCH_R : *m == 'w' ? KTAP_WATCH_W :
			*m == 'x' ? KTAP_WATCH_X : 0x80000000;
	if (!mode || (mode & 0x80000000) ||
	    ((mode & KTAP_WATCH_X) && mode != KTAP_WATCH_X)) {
		kp_error(S, line, col, KP_E_BAD_EVENTDEF, spec,
			 "the mode must be r, w, rw or x");
		return 0;
	}
	if (!strncmp(what, "0x", 2)) {
		errno = 0;
		addr = strtoull(what, &end, 16);
		if (errno || end != c1 || !addr) {
			kp_error(S, line, col, KP_E_BAD_EVENTDEF, spec,
				 "bad address");
			return 0;
		}
	} else {
		const char *plus = memchr(what, '+', (size_t)(c1 - what));

		if (plus) {
			errno = 0;
			off = strtoull(plus + 1, &end, 0);
			if (errno || end != c1) {
				kp_error(S, line, col, KP_E_BAD_EVENTDEF, spec,
					 "bad offset after the symbol");
				return 0;
			}
		}
		addr = kp_ksym_lookup(S, what,
				      (size_t)((plus ? plus : c1) - what),
				      line, col);
		if (!addr)
			return 0;
	}
	*first = probe_add(S, KTAP_PROBE_WATCH, 0, spec, what,
			   (size_t)(c1 - what), addr + off, mode | (uint32_t)len);
	return 1;
}

static uint32_t resolve_one(struct kp_state *S, const char *spec,
			    enum kp_spec_form form, uint32_t line,
			    uint32_t col, uint32_t *first,
			    struct kp_evinfo *ev);

/*
 * `trace a, b { }` (the original's event lists): each definition in
 * turn, their probe entries consecutive, their fields merged. A field
 * list stays checkable only when every part's is known.
 */
static uint32_t resolve_list(struct kp_state *S, const char *spec,
			     enum kp_spec_form form, uint32_t line,
			     uint32_t col, uint32_t *first,
			     struct kp_evinfo *ev)
{
	const char *p = spec, *end;
	uint32_t total = 0, n, f, i;
	int unknown = 0;

	memset(ev, 0, sizeof(*ev));
	ev->tracepoint = 1;
	for (;;) {
		struct kp_evinfo part;
		size_t len;
		char *one;

		while (*p == ' ' || *p == '\t')
			p++;
		end = strchr(p, ',');
		len = end ? (size_t)(end - p) : strlen(p);
		while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		one = kp_strndup(&S->arena, p, len);
		memset(&part, 0, sizeof(part));
		n = resolve_one(S, one, form, line, col, &f, &part);
		if (!n)
			return 0;
		if (!total)
			*first = f;
		total += n;
		ev->tracepoint &= part.tracepoint;
		ev->syscalls |= part.syscalls;
		if (!ev->first)
			ev->first = part.first;
		if (!part.fields)
			unknown = 1;
		for (i = 0; i < part.nfields; i++)
			add_field(S, ev, part.fields[i],
				  strlen(part.fields[i]));
		for (i = 0; i < part.nparts; i++) {
			kp_grow(&S->arena, (void **)&ev->parts, &ev->partcap,
				ev->nparts + 1, sizeof(*ev->parts));
			ev->parts[ev->nparts++] = part.parts[i];
		}
		if (!end)
			break;
		p = end + 1;
	}
	if (unknown) {
		ev->fields = NULL;
		ev->nfields = 0;
		ev->nparts = 0;
	}
	return total;
}

uint32_t kp_events_resolve(struct kp_state *S, const char *spec,
			   enum kp_spec_form form, uint32_t line,
			   uint32_t col, uint32_t *first,
			   struct kp_evinfo *ev)
{
	if (strchr(spec, ','))
		return resolve_list(S, spec, form, line, col, first, ev);
	return resolve_one(S, spec, form, line, col, first, ev);
}

static uint32_t resolve_one(struct kp_state *S, const char *spec,
			    enum kp_spec_form form, uint32_t line,
			    uint32_t col, uint32_t *first,
			    struct kp_evinfo *ev)
{
	const char *rest, *args;
	uint32_t n;
	int user;

	if (!strncmp(spec, "probe:", 6) || !strncmp(spec, "kprobe:", 7) ||
	    !strncmp(spec, "uprobe:", 7)) {
		rest = strchr(spec, ':') + 1;
		user = *rest == '/';
		if (user)
			n = uprobe_resolve(S, spec, rest, line, col, first);
		else if (!strncmp(spec, "uprobe:", 7)) {
			kp_error(S, line, col, KP_E_BAD_EVENTDEF, spec,
				 "expected uprobe:/PATH:SYMBOL");
			return 0;
		} else {
			n = kprobe_resolve(S, spec, rest, line, col, first);
		}
		/* FETCHARGS after the name, as in kprobe_events */
		args = rest + strcspn(rest, " \t");
		if (n && *args &&
		    kp_fetch_parse(S, spec, args, *first, n,
				   S->img->probes[*first].flags &
				   KTAP_PROBE_F_RETURN, user, line, col))
			return 0;
		return n;
	}
	if (!strncmp(spec, "software:", 9) || !strncmp(spec, "hardware:", 9))
		return perf_resolve(S, spec, line, col, first);
	if (!strncmp(spec, "watchpoint:", 11))
		return watch_resolve(S, spec, line, col, first);
	if (!strcmp(spec, "ftrace:function") ||
	    !strncmp(spec, "ftrace:function:", 16)) {
		const char *glob = spec[15] ? spec + 16 : "*";

		if (!*glob || !valid_sym(glob, 1)) {
			kp_error(S, line, col, KP_E_BAD_EVENTDEF, spec,
				 "expected ftrace:function[:GLOB] (function names, * ? wildcards)");
			return 0;
		}
		*first = probe_add(S, KTAP_PROBE_FTRACE, 0, spec, glob,
				   strlen(glob), 0, 0);
		return 1;
	}
	if (!strncmp(spec, "ftrace:", 7)) {
		kp_error(S, line, col, KP_E_BAD_EVENTDEF, spec,
			 "the ftrace probe is ftrace:function[:GLOB]");
		return 0;
	}
	if (!strncmp(spec, "sdt:", 4))
		return sdt_resolve(S, spec, line, col, first);
	/* ktap 0.1: "tp:" alone is every tracepoint */
	if (!strcmp(spec, "tp:"))
		return tp_resolve(S, spec, "*:*", line, col, first, ev);
	if (!strncmp(spec, "tp:", 3))
		return tp_resolve(S, spec, spec + 3, line, col, first, ev);
	if (!strchr(spec, ':')) {
		kp_error(S, line, col, KP_E_BAD_EVENTDEF, spec,
			 form == KP_FORM_KDEBUG ?
			 "expected tp:SYSTEM[:EVENT] or kprobe:FUNCTION" :
			 "expected SYSTEM:EVENT or probe:FUNCTION");
		return 0;
	}
	return tp_resolve(S, spec, spec, line, col, first, ev);
}

uint32_t kp_events_simple(struct kp_state *S, enum ktap_probe_type type,
			  const char *spec, uint64_t arg)
{
	return probe_add(S, type, 0, spec, NULL, 0, arg, 0);
}

int kp_events_list(const char *glob)
{
	struct kp_arena a = { 0 };
	struct kp_names systems = { 0 };
	const char *root = kp_tracefs(NULL);
	char dir[1024], full[600];
	uint32_t i, j;
	int found = 0;

	snprintf(dir, sizeof(dir), "%s/events", root);
	if (list_dirs(&a, dir, "*", &systems, NULL) < 0) {
		fprintf(stderr, "ktap: cannot read %s: %s\n", dir,
			strerror(errno));
		kp_arena_free(&a);
		return 1;
	}
	for (i = 0; i < systems.n; i++) {
		struct kp_names evs = { 0 };

		snprintf(dir, sizeof(dir), "%s/events/%s", root, systems.v[i]);
		list_dirs(&a, dir, "*", &evs, NULL);
		for (j = 0; j < evs.n; j++) {
			snprintf(full, sizeof(full), "%s:%s", systems.v[i],
				 evs.v[j]);
			if (glob && fnmatch(glob, full, 0))
				continue;
			puts(full);
			found++;
		}
	}
	kp_arena_free(&a);
	return found ? 0 : 1;
}

struct kp_symlist {
	struct kp_names	l;
	struct kp_arena	a;
};

static int list_cb(void *arg, const char *name, uint64_t value,
		   uint64_t size)
{
	struct kp_symlist *sl = arg;

	(void)value;
	(void)size;
	names_add(&sl->a, &sl->l, name);
	return 0;
}

int kp_elf_list(const char *path)
{
	struct kp_symlist st = { { 0 }, { 0 } };
	struct kp_elf elf;
	const char *why;
	uint32_t i;

	if (kp_elf_open(&elf, path, &why)) {
		fprintf(stderr, "ktap: %s: %s\n", path, why);
		return 1;
	}
	kp_elf_syms(&elf, list_cb, &st);
	kp_elf_close(&elf);
	names_sort(&st.l);
	for (i = 0; i < st.l.n; i++)
		if (!i || strcmp(st.l.v[i], st.l.v[i - 1]))
			puts(st.l.v[i]);
	kp_arena_free(&st.a);
	return 0;
}

struct sdt_list {
	const char	*path;
	int		found;
};

static int sdt_list_cb(void *arg, const struct sdt_note *n)
{
	struct sdt_list *l = arg;

	printf("sdt:%s:%s:%s", l->path, n->provider, n->name);
	if (*n->args)
		printf(" %s", n->args);
	putchar('\n');
	l->found++;
	return 0;
}

/* ktap -lm: the SDT markers (.note.stapsdt) of an ELF file, as probes. */
int kp_sdt_list(const char *path)
{
	struct sdt_list l = { .path = path };
	struct kp_elf elf;
	const char *why;

	if (kp_elf_open(&elf, path, &why)) {
		fprintf(stderr, "ktap: %s: %s\n", path, why);
		return 1;
	}
	sdt_notes(&elf, sdt_list_cb, &l);
	kp_elf_close(&elf);
	if (!l.found)
		fprintf(stderr, "ktap: %s: no SDT markers\n", path);
	return 0;
}
