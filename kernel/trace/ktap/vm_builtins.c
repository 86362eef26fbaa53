// SPDX-License-Identifier: GPL-2.0
/*
 * ktap VM builtins: the functions of the KTAP_BUILTINS X-macro (vm.h)
 * that need no tracing code. Their table (ktap_builtin_table[]: name,
 * function, arity, flags) is generated from the X-macro, so each
 * builtin is one function named ktap_bi_NAME, and images call them by
 * name (the loader maps the names). Probe-specific values reach them only through the
 * current event's ktap_event_ops.
 *
 * Every builtin may run in NMI: output is formatted into a per-CPU
 * buffer and handed to host_ops->write in one piece; strings made here
 * are temporary unless the script stores them.
 */
#include <linux/cred.h>
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/seq_buf.h>
#include <linux/sort.h>
#include <linux/stacktrace.h>
#include <linux/uaccess.h>
#include <linux/utsname.h>
#include <net/sock.h>
#include "vm.h"

#define KTAP_HIST_ROWS		20
#define KTAP_HIST_WIDTH		40
#define KTAP_FETCH_MAX		256

static int ktap_print_agg(struct ktap_exec *x, struct ktap_ptable *pt,
			  u32 rows);

static int ktap_bad_arg(struct ktap_exec *x, u32 n, const char *fn,
			const char *want, const struct ktap_value *got)
{
	return ktap_rt_error(x, "bad argument #%u to '%s' (%s expected, got %s)",
			     n, fn, want, got ? ktap_typename(got->type) : "no value");
}

static int ktap_ret_str(struct ktap_exec *x, struct ktap_value *ret,
			const char *s, size_t len)
{
	struct ktap_str *str = ktap_str_temp(x, s, min_t(size_t, len, KTAP_STR_MAX));

	if (!str)
		return ktap_obj_error(x, -ENOMEM);
	ktap_set_obj(ret, KTAP_TSTR, str);
	return 0;
}

/**
 * ktap_tostring - append the printed form of a value, as print() shows it
 * @x: the run
 * @v: the value
 * @s: output
 *
 * Return: 0 or a runtime error.
 */
int ktap_tostring(struct ktap_exec *x, const struct ktap_value *v,
		  struct seq_buf *s)
{
	struct ktap_event *ev;
	int err;

	switch (v->type) {
	case KTAP_TNIL:
		seq_buf_puts(s, "nil");
		break;
	case KTAP_TBOOL:
		seq_buf_puts(s, v->b ? "true" : "false");
		break;
	case KTAP_TINT:
		seq_buf_printf(s, "%lld", v->i);
		break;
	case KTAP_TSTR:
		seq_buf_puts(s, v->s->data);
		break;
	case KTAP_TSTAT:
		seq_buf_printf(s, "%lld", ((struct ktap_stat *)v->p)->count);
		break;
	case KTAP_TEVENT:
		ev = v->p;
		if (!ev->ops || !ev->ops->tostring)
			return ktap_rt_error(x, "event cannot be printed");
		err = ev->ops->tostring(x->vm, ev, s);
		if (err == -EPERM)
			return ktap_rt_error(x, KTAP_MSG_NMI_FORMAT, ev->name);
		if (err)
			return ktap_rt_error(x, "cannot print event (%d)", err);
		break;
	default:
		seq_buf_printf(s, "%s: %p", ktap_typename(v->type), v->p);
		break;
	}
	return 0;
}

/*
 * print(e), printf("%s", e): an event whose raw record the session can
 * store is not formatted here. Its record goes into the output with the
 * text around it, and the event's own output function formats it when
 * the line is read, in process context, never in the probe (which may
 * be NMI). One such event a line; another in the same line is
 * formatted at once.
 */
static int ktap_print_value(struct ktap_exec *x, const struct ktap_value *v,
			    struct seq_buf *s)
{
	const struct ktap_host_ops *ops = x->vm->host_ops;
	struct ktap_event *ev = v->p;

	if (v->type == KTAP_TEVENT && !x->ctx->out_ev && ev->ops &&
	    ev->ops->record && ops && ops->write_event &&
	    !seq_buf_has_overflowed(s)) {
		x->ctx->out_ev = ev;
		x->ctx->out_ev_at = seq_buf_used(s);
		return 0;
	}
	return ktap_tostring(x, v, s);
}

/* Write a record built in ctx->out, making sure it ends with @end. */
static void ktap_flush(struct ktap_exec *x, struct seq_buf *s, char end)
{
	const struct ktap_host_ops *ops = x->vm->host_ops;
	struct ktap_event *ev = x->ctx->out_ev;
	size_t n = seq_buf_used(s), at;

	if (end && seq_buf_has_overflowed(s) && n)
		x->ctx->out[n - 1] = end;
	if (!ev) {
		ktap_write(x, x->ctx->out, n);
		return;
	}
	x->ctx->out_ev = NULL;
	at = min_t(size_t, x->ctx->out_ev_at, n);
	x->budget -= n / KTAP_OUT_BYTES_PER_UNIT;
	ops->write_event(x->vm->host, ev, x->ctx->out, at,
			 x->ctx->out + at, n - at);
}

static int ktap_bi_print(struct ktap_exec *x, struct ktap_value *ret,
			 struct ktap_value *args, u32 nargs)
{
	struct seq_buf s;
	u32 i;
	int err;

	if (nargs == 1 && args[0].type == KTAP_TPTABLE)
		return ktap_print_agg(x, args[0].p, U32_MAX);
	seq_buf_init(&s, x->ctx->out, sizeof(x->ctx->out));
	x->ctx->out_ev = NULL;
	for (i = 0; i < nargs; i++) {
		if (i)
			seq_buf_putc(&s, '\t');
		err = ktap_print_value(x, &args[i], &s);
		if (err)
			return err;
	}
	seq_buf_putc(&s, '\n');
	ktap_flush(x, &s, '\n');
	return 0;
}

/*
 * printf: our own parser; each conversion is re-emitted as a validated
 * spec (flags, width and precision bounded) for vsnprintf with a
 * 64-bit argument of the right type.
 */
static int ktap_format_one(struct ktap_exec *x, struct seq_buf *s,
			   char *spec, char conv, const struct ktap_value *v,
			   u32 argn)
{
	size_t k = strlen(spec);
	struct seq_buf t;
	int err;

	switch (conv) {
	case 'd':
	case 'i':
	case 'u':
	case 'x':
	case 'X':
	case 'c':
	case 'p':
		if (!v || v->type != KTAP_TINT)
			return ktap_bad_arg(x, argn, "printf", "number", v);
		if (conv == 'c') {
			strscpy(spec + k, "c", 2);
			seq_buf_printf(s, spec, (int)(unsigned char)v->i);
			return 0;
		}
		if (conv == 'p') {
			/* hashed as the kernel's %p, unless the loader may see addresses */
			if (x->vm->raw_ptrs)
				seq_buf_printf(s, "0x%llx", v->i);
			else
				seq_buf_printf(s, "%p", (void *)(unsigned long)v->i);
			return 0;
		}
		spec[k++] = 'l';
		spec[k++] = 'l';
		spec[k++] = conv == 'i' ? 'd' : conv;
		spec[k] = '\0';
		seq_buf_printf(s, spec, v->i);
		return 0;
	case 's':
		if (!v)
			return ktap_bad_arg(x, argn, "printf", "value", v);
		if (k == 1 && v->type == KTAP_TEVENT)
			return ktap_print_value(x, v, s);
		strscpy(spec + k, "s", 2);
		if (v->type == KTAP_TSTR) {
			seq_buf_printf(s, spec, v->s->data);
			return 0;
		}
		seq_buf_init(&t, x->ctx->tmp, sizeof(x->ctx->tmp) - 1);
		err = ktap_tostring(x, v, &t);
		if (err)
			return err;
		x->ctx->tmp[seq_buf_used(&t)] = '\0';
		seq_buf_printf(s, spec, x->ctx->tmp);
		return 0;
	default:
		return ktap_rt_error(x, "printf: invalid conversion '%%%c'",
				     conv);
	}
}

static int ktap_format(struct ktap_exec *x, struct seq_buf *s,
		       const struct ktap_str *fmt, struct ktap_value *args,
		       u32 nargs)
{
	const char *p = fmt->data, *end = p + fmt->len;
	char spec[32];
	u32 argi = 0, num;
	size_t k;
	int err;

	while (p < end) {
		if (*p != '%') {
			seq_buf_putc(s, *p++);
			continue;
		}
		if (++p < end && *p == '%') {
			seq_buf_putc(s, *p++);
			continue;
		}
		k = 0;
		spec[k++] = '%';
		while (p < end && strchr("-0+ #", *p) && k < 8)
			spec[k++] = *p++;
		for (num = 0; p < end && isdigit(*p); p++) {
			num = num * 10 + (*p - '0');
			if (num > 255)
				return ktap_rt_error(x, "printf: width too large");
		}
		if (num)
			k += scnprintf(spec + k, sizeof(spec) - k, "%u", num);
		if (p < end && *p == '.') {
			p++;
			for (num = 0; p < end && isdigit(*p); p++) {
				num = num * 10 + (*p - '0');
				if (num > 255)
					return ktap_rt_error(x, "printf: precision too large");
			}
			k += scnprintf(spec + k, sizeof(spec) - k, ".%u", num);
		}
		while (p < end && strchr("hlqjzt", *p))
			p++;
		if (p >= end)
			return ktap_rt_error(x, "printf: incomplete conversion");
		spec[k] = '\0';
		err = ktap_format_one(x, s, spec, *p++,
				      argi < nargs ? &args[argi] : NULL,
				      argi + 2);
		if (err)
			return err;
		argi++;
	}
	return 0;
}

static int ktap_bi_printf(struct ktap_exec *x, struct ktap_value *ret,
			  struct ktap_value *args, u32 nargs)
{
	struct seq_buf s;
	int err;

	if (args[0].type != KTAP_TSTR)
		return ktap_bad_arg(x, 1, "printf", "string", &args[0]);
	seq_buf_init(&s, x->ctx->out, sizeof(x->ctx->out));
	x->ctx->out_ev = NULL;
	err = ktap_format(x, &s, args[0].s, args + 1, nargs - 1);
	if (err)
		return err;
	ktap_flush(x, &s, 0);
	return 0;
}

/*
 * sprintf(fmt, ...): printf's formatting into a string value, truncated
 * at KTAP_OUT_SIZE - 1 bytes as a printf record is.
 */
static int ktap_bi_sprintf(struct ktap_exec *x, struct ktap_value *ret,
			   struct ktap_value *args, u32 nargs)
{
	char *buf = ktap_run_alloc(x, KTAP_OUT_SIZE);
	struct seq_buf s;
	int err;

	if (args[0].type != KTAP_TSTR)
		return ktap_bad_arg(x, 1, "sprintf", "string", &args[0]);
	if (!buf)
		return ktap_obj_error(x, -ENOMEM);
	seq_buf_init(&s, buf, KTAP_OUT_SIZE);
	err = ktap_format(x, &s, args[0].s, args + 1, nargs - 1);
	if (err)
		return err;
	return ktap_ret_str(x, ret, buf, min_t(size_t, seq_buf_used(&s),
					       KTAP_OUT_SIZE - 1));
}

/*
 * substr(s, start[, len]): @len bytes (default: the rest) from byte
 * @start, counted from 1 as Lua does; a negative @start counts from the
 * end (-1 is the last byte). Out-of-range parts are clipped.
 */
static int ktap_bi_substr(struct ktap_exec *x, struct ktap_value *ret,
			  struct ktap_value *args, u32 nargs)
{
	s64 len, start, n;

	if (args[0].type != KTAP_TSTR)
		return ktap_bad_arg(x, 1, "substr", "string", &args[0]);
	if (args[1].type != KTAP_TINT)
		return ktap_bad_arg(x, 2, "substr", "number", &args[1]);
	if (nargs > 2 && args[2].type != KTAP_TINT)
		return ktap_bad_arg(x, 3, "substr", "number", &args[2]);
	len = args[0].s->len;
	start = args[1].i;
	if (start < 0)
		start = max_t(s64, len + start, 0);
	else if (start > 0)
		start--;
	start = min(start, len);
	n = nargs > 2 ? clamp_t(s64, args[2].i, 0, len - start) : len - start;
	return ktap_ret_str(x, ret, args[0].s->data + start, n);
}

/* strcmp(a, b): -1, 0 or 1, comparing bytes. */
static int ktap_bi_strcmp(struct ktap_exec *x, struct ktap_value *ret,
			  struct ktap_value *args, u32 nargs)
{
	const struct ktap_str *a = args[0].s, *b = args[1].s;
	int c;

	if (args[0].type != KTAP_TSTR)
		return ktap_bad_arg(x, 1, "strcmp", "string", &args[0]);
	if (args[1].type != KTAP_TSTR)
		return ktap_bad_arg(x, 2, "strcmp", "string", &args[1]);
	c = memcmp(a->data, b->data, min(a->len, b->len));
	if (!c)
		c = a->len < b->len ? -1 : a->len > b->len;
	ktap_value_int(ret, c < 0 ? -1 : c > 0);
	return ktap_charge(x, min(a->len, b->len) / 64);
}

/* Whether the @nl bytes at @n occur in the @hl bytes at @h. */
static bool ktap_bytes_contain(const char *h, u32 hl, const char *n, u32 nl)
{
	u32 i;

	for (i = 0; i + nl <= hl; i++)
		if (!memcmp(h + i, n, nl))
			return true;
	return false;
}

/* contains(s, part): whether @part occurs in @s. */
static int ktap_bi_contains(struct ktap_exec *x, struct ktap_value *ret,
			    struct ktap_value *args, u32 nargs)
{
	const struct ktap_str *a = args[0].s, *b = args[1].s;
	int err;

	if (args[0].type != KTAP_TSTR)
		return ktap_bad_arg(x, 1, "contains", "string", &args[0]);
	if (args[1].type != KTAP_TSTR)
		return ktap_bad_arg(x, 2, "contains", "string", &args[1]);
	/* a naive search: up to len(s) * len(part) byte comparisons */
	err = ktap_charge(x, div_u64((u64)a->len * (b->len + 1), 64));
	if (err)
		return err;
	ktap_set_bool(ret, ktap_bytes_contain(a->data, a->len, b->data, b->len));
	return 0;
}

/*
 * join(t[, sep]): the values t[1], t[2]... up to the table's border, as
 * print() shows them, separated by @sep (default " "); truncated at
 * KTAP_OUT_SIZE - 1 bytes.
 */
static int ktap_bi_join(struct ktap_exec *x, struct ktap_value *ret,
			struct ktap_value *args, u32 nargs)
{
	const char *sep = " ";
	struct ktap_value v, k;
	struct seq_buf s;
	s64 n, i;
	char *buf;
	int err;

	if (args[0].type != KTAP_TTABLE)
		return ktap_bad_arg(x, 1, "join", "table", &args[0]);
	if (nargs > 1) {
		if (args[1].type != KTAP_TSTR)
			return ktap_bad_arg(x, 2, "join", "string", &args[1]);
		sep = args[1].s->data;
	}
	err = ktap_border(x, args[0].p, &n);
	err = err ?: ktap_charge(x, n);
	if (err)
		return err;
	buf = ktap_run_alloc(x, KTAP_OUT_SIZE);
	if (!buf)
		return ktap_obj_error(x, -ENOMEM);
	seq_buf_init(&s, buf, KTAP_OUT_SIZE);
	for (i = 1; i <= n && !seq_buf_has_overflowed(&s); i++) {
		ktap_value_int(&k, i);
		err = ktap_table_get(x->vm, args[0].p, &k, &v);
		if (err)
			return ktap_obj_error(x, err);
		if (i > 1)
			seq_buf_puts(&s, sep);
		err = ktap_tostring(x, &v, &s);
		if (err)
			return err;
	}
	return ktap_ret_str(x, ret, buf, min_t(size_t, seq_buf_used(&s),
					       KTAP_OUT_SIZE - 1));
}

static int ktap_bi_len(struct ktap_exec *x, struct ktap_value *ret,
		       struct ktap_value *args, u32 nargs)
{
	s64 n;
	int err;

	switch (args[0].type) {
	case KTAP_TSTR:
		ktap_value_int(ret, args[0].s->len);
		return 0;
	case KTAP_TTABLE:
		err = ktap_border(x, args[0].p, &n);
		if (err)
			return err;
		ktap_value_int(ret, n);
		return 0;
	default:
		return ktap_bad_arg(x, 1, "len", "string or table", &args[0]);
	}
}

static int ktap_bi_delete(struct ktap_exec *x, struct ktap_value *ret,
			  struct ktap_value *args, u32 nargs)
{
	struct ktap_value nil;
	int err;

	if (args[0].type == KTAP_TPTABLE)
		return ktap_ptable_clear(x, args[0].p, nargs > 1 ? &args[1] : NULL);
	if (args[0].type != KTAP_TTABLE)
		return ktap_bad_arg(x, 1, "delete", "table", &args[0]);
	ktap_set_nil(&nil);
	if (nargs == 1)
		err = ktap_table_clear(args[0].p);
	else
		err = ktap_table_set(x->vm, args[0].p, &args[1], &nil);
	return err ? ktap_obj_error(x, err) : 0;
}

static struct ktap_iter *ktap_iter_of(struct ktap_exec *x,
				      const struct ktap_value *t,
				      const char *fn, int *err)
{
	struct ktap_iter *it;

	if (t->type == KTAP_TTABLE) {
		it = ktap_table_iter(x, t->p, err);
	} else if (t->type == KTAP_TPTABLE) {
		it = ktap_ptable_iter(x, t->p, err);
	} else {
		*err = ktap_bad_arg(x, 1, fn, "table", t);
		return NULL;
	}
	if (!it && *err != -EINVAL)
		*err = ktap_obj_error(x, *err);
	return it;
}

static int ktap_bi_table_count(struct ktap_exec *x, struct ktap_value *ret,
			       struct ktap_value *args, u32 nargs)
{
	struct ktap_iter *it;
	s64 n;
	int err;

	if (args[0].type == KTAP_TTABLE) {
		ktap_table_count(args[0].p, &n);
		ktap_value_int(ret, n);
		return 0;
	}
	it = ktap_iter_of(x, &args[0], "table_count", &err);
	if (!it)
		return err;
	ktap_value_int(ret, it->n);
	return 0;
}

static int ktap_bi_pairs(struct ktap_exec *x, struct ktap_value *ret,
			 struct ktap_value *args, u32 nargs)
{
	struct ktap_iter *it;
	int err;

	it = ktap_iter_of(x, &args[0], "pairs", &err);
	if (!it)
		return err;
	ktap_set_obj(ret, KTAP_TITER, it);
	return 0;
}

/* A sort_pairs() comparison function and the first error it raised. */
struct ktap_sort_call {
	struct ktap_exec	*x;
	const struct ktap_value	*cmp;
	int			err;
};

/* cmp(a, b) is true when a sorts before b, as for Lua's table.sort(). */
static bool ktap_sort_before(struct ktap_sort_call *sc,
			     const struct ktap_value *a,
			     const struct ktap_value *b)
{
	struct ktap_value args[2] = { *a, *b }, r;

	if (sc->err)
		return false;
	sc->err = ktap_vm_call(sc->x, sc->cmp, args, 2, &r);
	return !sc->err && ktap_truthy(&r);
}

static int ktap_sort_cmp(const void *pa, const void *pb, const void *priv)
{
	struct ktap_sort_call *sc = (struct ktap_sort_call *)priv;
	const struct ktap_pair *a = pa, *b = pb;

	if (ktap_sort_before(sc, &a->val, &b->val))
		return -1;
	if (ktap_sort_before(sc, &b->val, &a->val))
		return 1;
	return 0;
}

/*
 * sort_pairs(t[, cmp]): by value, descending (statistics by count), ties
 * by key; or by cmp(a, b) of the values, called back through the
 * interpreter on the same instruction budget. lib/sort.c is a heapsort:
 * no allocation, no recursion, O(n log n) calls whatever cmp returns.
 */
static int ktap_bi_sort_pairs(struct ktap_exec *x, struct ktap_value *ret,
			      struct ktap_value *args, u32 nargs)
{
	bool custom = nargs > 1 && args[1].type != KTAP_TNIL;
	struct ktap_sort_call sc = { .x = x, .cmp = &args[1] };
	struct ktap_iter *it;
	int err;

	if (custom && args[1].type != KTAP_TFUNC)
		return ktap_bad_arg(x, 2, "sort_pairs", "function", &args[1]);
	it = ktap_iter_of(x, &args[0], "sort_pairs", &err);
	if (!it)
		return err;
	if (custom) {
		/* each call of cmp charges its own instructions */
		sort_r(it->e, it->n, sizeof(it->e[0]), ktap_sort_cmp, NULL, &sc);
		if (sc.err)
			return sc.err;
	} else {
		err = ktap_iter_sort(x, it);
		if (err)
			return err;
	}
	ktap_set_obj(ret, KTAP_TITER, it);
	return 0;
}

static int ktap_bi_exit(struct ktap_exec *x, struct ktap_value *ret,
			struct ktap_value *args, u32 nargs)
{
	struct ktap_vm *vm = x->vm;

	atomic_set(&vm->halted, 1);
	if (vm->host_ops && vm->host_ops->exit)
		vm->host_ops->exit(vm->host);
	return KTAP_HALT;
}

/*
 * sleep(ms) of the main chunk (os.sleep of ktap 0.1): the probes
 * recorded so far fire meanwhile. The wait ends early when the session
 * ends; a signal ends the main chunk.
 */
static int ktap_bi_sleep(struct ktap_exec *x, struct ktap_value *ret,
			 struct ktap_value *args, u32 nargs)
{
	if (args[0].type != KTAP_TINT || args[0].i < 0)
		return ktap_rt_error(x, "sleep() takes a number of milliseconds >= 0");
	return ktap_main_sleep(x, min_t(s64, args[0].i, U32_MAX));
}

static int ktap_bi_cpu(struct ktap_exec *x, struct ktap_value *ret,
		       struct ktap_value *args, u32 nargs)
{
	ktap_value_int(ret, raw_smp_processor_id());
	return 0;
}

static int ktap_bi_pid(struct ktap_exec *x, struct ktap_value *ret,
		       struct ktap_value *args, u32 nargs)
{
	ktap_value_int(ret, task_tgid_nr(current));
	return 0;
}

/* The process given with -p or started after --, 0 without one. */
static int ktap_bi_target_pid(struct ktap_exec *x, struct ktap_value *ret,
			      struct ktap_value *args, u32 nargs)
{
	ktap_value_int(ret, x->vm->target_pid);
	return 0;
}

static int ktap_bi_tid(struct ktap_exec *x, struct ktap_value *ret,
		       struct ktap_value *args, u32 nargs)
{
	ktap_value_int(ret, task_pid_nr(current));
	return 0;
}

static int ktap_bi_uid(struct ktap_exec *x, struct ktap_value *ret,
		       struct ktap_value *args, u32 nargs)
{
	ktap_value_int(ret, from_kuid_munged(&init_user_ns, current_uid()));
	return 0;
}

/*
 * execname is interned: the set of names is small and it keys tables.
 * The last name seen on this CPU is cached with the 16 bytes of comm it
 * came from: comparing those two words is all a hit costs (no strnlen,
 * no hash). A comm being renamed meanwhile at worst misses the cache.
 */
static int ktap_bi_execname(struct ktap_exec *x, struct ktap_value *ret,
			    struct ktap_value *args, u32 nargs)
{
	const char *comm = current->comm;
	struct ktap_ctx *ctx = x->ctx;
	u64 w[2];
	size_t len;
	struct ktap_str *s;

	BUILD_BUG_ON(sizeof(current->comm) != sizeof(w));
	/* two loads; a u64 cast of comm made GCC see an 8-byte object */
	memcpy(w, comm, sizeof(w));
	s = ctx->comm;
	if (likely(s && ctx->comm_raw[0] == w[0] && ctx->comm_raw[1] == w[1])) {
		ktap_set_obj(ret, KTAP_TSTR, s);
		return 0;
	}
	len = strnlen(comm, TASK_COMM_LEN);
	s = ktap_str_intern(x->vm, comm, len);
	if (!s)
		return ktap_ret_str(x, ret, comm, len);
	ctx->comm = s;
	ctx->comm_raw[0] = w[0];
	ctx->comm_raw[1] = w[1];
	ktap_set_obj(ret, KTAP_TSTR, s);
	return 0;
}

static int ktap_bi_arch(struct ktap_exec *x, struct ktap_value *ret,
			struct ktap_value *args, u32 nargs)
{
	const char *m = init_utsname()->machine;

	return ktap_ret_str(x, ret, m, strlen(m));
}

static int ktap_bi_kernel_v(struct ktap_exec *x, struct ktap_value *ret,
			    struct ktap_value *args, u32 nargs)
{
	const char *r = init_utsname()->release;

	return ktap_ret_str(x, ret, r, strlen(r));
}

static int ktap_bi_num_cpus(struct ktap_exec *x, struct ktap_value *ret,
			    struct ktap_value *args, u32 nargs)
{
	ktap_value_int(ret, num_online_cpus());
	return 0;
}

static int ktap_bi_in_interrupt(struct ktap_exec *x, struct ktap_value *ret,
				struct ktap_value *args, u32 nargs)
{
	ktap_set_bool(ret, in_interrupt());
	return 0;
}

static int ktap_bi_in_iowait(struct ktap_exec *x, struct ktap_value *ret,
			     struct ktap_value *args, u32 nargs)
{
	ktap_set_bool(ret, current->in_iowait);
	return 0;
}

static int ktap_bi_gettimeofday_ns(struct ktap_exec *x, struct ktap_value *ret,
				   struct ktap_value *args, u32 nargs)
{
	ktap_value_int(ret, ktime_get_real_fast_ns());
	return 0;
}

/*
 * The count a chart shows for @val: an integer (negative as 0) or a
 * statistic's count; false for any other value.
 */
static bool ktap_hist_count(const struct ktap_value *val, u64 *v)
{
	if (val->type == KTAP_TINT)
		*v = val->i > 0 ? val->i : 0;
	else if (val->type == KTAP_TSTAT)
		*v = ((struct ktap_stat *)val->p)->count;
	else
		return false;
	return true;
}

/* Fill @bar with @v's share of @total as at most KTAP_HIST_WIDTH '@'. */
static void ktap_bar(char bar[KTAP_HIST_WIDTH + 1], u64 v, u64 total)
{
	u64 w = total ? div64_u64(v > U64_MAX / KTAP_HIST_WIDTH ?
				  U64_MAX : v * KTAP_HIST_WIDTH, total) : 0;

	w = min_t(u64, w, KTAP_HIST_WIDTH);
	memset(bar, '@', w);
	bar[w] = '\0';
}

/*
 * The DTrace-style chart of the original ktap:
 *
 *            value ------------- Distribution ------------- count
 *    sys_enter_open |@@@@@@@@                               587779
 *
 * rows sorted by count, descending; the bar is count * 40 / total,
 * where total counts every entry, shown or not. Keys are right-aligned
 * to 18 columns, or to the longest key shown.
 */
static int ktap_histogram(struct ktap_exec *x, struct ktap_value *args,
			  u32 nargs, const char *fn)
{
	u32 rows = KTAP_HIST_ROWS, r, n, width = 18;
	char bar[KTAP_HIST_WIDTH + 1];
	struct ktap_iter *it;
	struct seq_buf s, key;
	u64 total = 0, v;
	int err;

	if (nargs > 1) {
		if (args[1].type != KTAP_TINT || args[1].i < 1)
			return ktap_bad_arg(x, 2, fn, "positive number", &args[1]);
		rows = min_t(s64, args[1].i, U32_MAX);
	}
	it = ktap_iter_of(x, &args[0], fn, &err);
	if (!it)
		return err;
	err = ktap_iter_sort(x, it);
	err = err ?: ktap_charge(x, it->n);
	if (err)
		return err;
	for (r = 0; r < it->n; r++) {
		if (ktap_hist_count(&it->e[r].val, &v))
			total += v;
	}
	for (r = 0, n = 0; r < it->n && n < rows; r++) {
		if (!ktap_hist_count(&it->e[r].val, &v))
			continue;
		seq_buf_init(&key, x->ctx->tmp, sizeof(x->ctx->tmp));
		err = ktap_tostring(x, &it->e[r].key, &key);
		if (err)
			return err;
		width = clamp_t(u32, seq_buf_used(&key), width, 64);
		n++;
	}
	seq_buf_init(&s, x->ctx->out, sizeof(x->ctx->out));
	seq_buf_printf(&s, "%*s ------------- Distribution ------------- count\n",
		       width - 1, "value");
	ktap_flush(x, &s, '\n');
	for (r = 0, n = 0; r < it->n && n < rows; r++) {
		if (!ktap_hist_count(&it->e[r].val, &v))
			continue;
		ktap_bar(bar, v, total);
		seq_buf_init(&key, x->ctx->tmp, sizeof(x->ctx->tmp) - 1);
		err = ktap_tostring(x, &it->e[r].key, &key);
		if (err)
			return err;
		x->ctx->tmp[seq_buf_used(&key)] = '\0';
		seq_buf_init(&s, x->ctx->out, sizeof(x->ctx->out));
		seq_buf_printf(&s, "%*s |%-38s %llu\n", width, x->ctx->tmp, bar, v);
		ktap_flush(x, &s, '\n');
		n++;
	}
	return 0;
}

#define KTAP_AGG_WIDTH		50	/* '@'s of the largest bucket */

/* @v as a chart prints it: 1K, 2M... for powers of two from 1024. */
static void ktap_agg_num(char *buf, size_t size, s64 v)
{
	static const char units[] = "KMGTPE";
	int u;

	for (u = 5; u >= 0; u--) {
		u64 unit = 1ULL << (10 * (u + 1));

		if (v >= (s64)unit && !((u64)v & ((u64)v - 1))) {
			snprintf(buf, size, "%llu%c", (u64)v / unit, units[u]);
			return;
		}
	}
	snprintf(buf, size, "%lld", v);
}

/* The range bucket @i of @pt covers, as "[lo, hi)". */
static void ktap_agg_label(const struct ktap_ptable *pt, u32 i, char *buf,
			   size_t size)
{
	char lo[24], hi[24];
	s64 a;

	if (pt->kind == KTAP_AGG_LOG2) {
		if (i == 0) {
			strscpy(buf, "(..., 0)", size);
		} else if (i <= 2) {
			snprintf(buf, size, "[%u]", i - 1);
		} else {
			ktap_agg_num(lo, sizeof(lo), 1LL << (i - 2));
			ktap_agg_num(hi, sizeof(hi), i - 1 < 63 ?
				     1LL << (i - 1) : S64_MAX);
			snprintf(buf, size, "[%s, %s)", lo, hi);
		}
		return;
	}
	a = (s64)((u64)pt->lo + (u64)pt->step * (i - 1));
	if (i == 0)
		snprintf(buf, size, "(..., %lld)", pt->lo);
	else if (i == pt->nbuckets - 1)
		snprintf(buf, size, "[%lld, ...)", a);
	else
		snprintf(buf, size, "[%lld, %lld)", a,
			 (s64)((u64)a + (u64)pt->step));
}

/* One key's chart: its non-empty range of buckets, bars scaled to the largest. */
static void ktap_agg_chart(struct ktap_exec *x, const struct ktap_ptable *pt,
			   const u64 *bucket)
{
	char label[64], bar[KTAP_AGG_WIDTH + 1];
	u32 i, first = U32_MAX, last = 0;
	u64 top = 0, w;
	struct seq_buf s;

	for (i = 0; i < pt->nbuckets; i++) {
		if (!bucket[i])
			continue;
		first = min(first, i);
		last = i;
		top = max(top, bucket[i]);
	}
	for (i = first; first != U32_MAX && i <= last; i++) {
		w = div64_u64(bucket[i] > U64_MAX / KTAP_AGG_WIDTH ? U64_MAX :
			      bucket[i] * KTAP_AGG_WIDTH, top);
		memset(bar, '@', w);
		bar[w] = '\0';
		ktap_agg_label(pt, i, label, sizeof(label));
		seq_buf_init(&s, x->ctx->out, sizeof(x->ctx->out));
		seq_buf_printf(&s, "%-20s %8llu |%-*s|\n", label, bucket[i],
			       KTAP_AGG_WIDTH, bar);
		ktap_flush(x, &s, '\n');
	}
}

static void ktap_json_room(struct ktap_exec *x, struct seq_buf *s);

/* @len bytes at @p as a JSON string; bytes >= 0x80 escaped one by one. */
static void ktap_json_str(struct ktap_exec *x, struct seq_buf *s,
			  const char *p, u32 len)
{
	u32 i;

	seq_buf_putc(s, '"');
	for (i = 0; i < len; i++) {
		unsigned char c = p[i];

		ktap_json_room(x, s);
		if (c == '"' || c == '\\')
			seq_buf_printf(s, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			seq_buf_printf(s, "\\u%04x", c);
		else
			seq_buf_putc(s, c);
	}
	seq_buf_putc(s, '"');
}

/* Flush @s when it nears the record size: one JSON line may span records. */
static void ktap_json_room(struct ktap_exec *x, struct seq_buf *s)
{
	if (seq_buf_used(s) < KTAP_OUT_SIZE - 128)
		return;
	ktap_flush(x, s, 0);
	seq_buf_init(s, x->ctx->out, sizeof(x->ctx->out));
}

/* A bucket's bounds for JSON: [lo, hi), null where unbounded. */
static void ktap_json_bounds(struct seq_buf *s, const struct ktap_ptable *pt,
			     u32 i)
{
	s64 a;

	if (pt->kind == KTAP_AGG_LOG2) {
		if (i == 0)
			seq_buf_puts(s, "\"min\": null, \"max\": 0");
		else if (i <= 2)
			seq_buf_printf(s, "\"min\": %u, \"max\": %u", i - 1, i);
		else
			seq_buf_printf(s, "\"min\": %llu, \"max\": %llu",
				       1ULL << (i - 2), 1ULL << (i - 1));
		return;
	}
	a = (s64)((u64)pt->lo + (u64)pt->step * (i - 1));
	if (i == 0)
		seq_buf_printf(s, "\"min\": null, \"max\": %lld", pt->lo);
	else if (i == pt->nbuckets - 1)
		seq_buf_printf(s, "\"min\": %lld, \"max\": null", a);
	else
		seq_buf_printf(s, "\"min\": %lld, \"max\": %lld", a,
			       (s64)((u64)a + (u64)pt->step));
}

/*
 * One key of @pt as a JSON object on one line, KTAP_JSON_MARK first:
 * {"type": "stats", "name": N, "key": K, "count": .., "sum": .., "avg": ..,
 * "min": .., "max": ..} or {"type": "hist", "name": N, "key": K,
 * "buckets": [{"min": .., "max": .., "count": ..}, ...]} with the
 * non-empty range of buckets.
 */
static void ktap_json_agg_key(struct ktap_exec *x,
			      const struct ktap_ptable *pt,
			      const struct ktap_pair *e, const u64 *bucket)
{
	const struct ktap_stat *st = e->val.p;
	u32 i, first = U32_MAX, last = 0;
	struct seq_buf s;

	seq_buf_init(&s, x->ctx->out, sizeof(x->ctx->out));
	seq_buf_printf(&s, "%c{\"type\": \"%s\", \"name\": ", KTAP_JSON_MARK,
		       bucket ? "hist" : "stats");
	if (pt->label)
		ktap_json_str(x, &s, pt->label->data, pt->label->len);
	else
		seq_buf_puts(&s, "null");
	seq_buf_puts(&s, ", \"key\": ");
	if (e->key.type == KTAP_TINT)
		seq_buf_printf(&s, "%lld", e->key.i);
	else if (e->key.type == KTAP_TBOOL)
		seq_buf_puts(&s, e->key.b ? "true" : "false");
	else
		ktap_json_str(x, &s, e->key.s->data, e->key.s->len);
	if (!bucket) {
		seq_buf_printf(&s,
			       ", \"count\": %lld, \"sum\": %lld, \"avg\": %lld, \"min\": %lld, \"max\": %lld}\n",
			       st->count, st->sum, div64_s64(st->sum, st->count),
			       st->min, st->max);
		ktap_flush(x, &s, '\n');
		return;
	}
	for (i = 0; i < pt->nbuckets; i++) {
		if (bucket[i]) {
			first = min(first, i);
			last = i;
		}
	}
	seq_buf_puts(&s, ", \"buckets\": [");
	for (i = first; first != U32_MAX && i <= last; i++) {
		ktap_json_room(x, &s);
		seq_buf_puts(&s, i == first ? "{" : ", {");
		ktap_json_bounds(&s, pt, i);
		seq_buf_printf(&s, ", \"count\": %llu}", bucket[i]);
	}
	seq_buf_puts(&s, "]}\n");
	ktap_flush(x, &s, '\n');
}

/**
 * ktap_print_agg - print an aggregation, one key after the other
 * @x: the run
 * @pt: the aggregation
 * @rows: the keys with the largest counts to print
 *
 * Keys in order of their counts, largest first; each as
 * ``LABEL[KEY]:`` with its statistics on the same line (stats()), or
 * followed by its chart and an empty line (hist(), lhist()).
 *
 * Return: 0 or a runtime error.
 */
static int ktap_print_agg(struct ktap_exec *x, struct ktap_ptable *pt,
			  u32 rows)
{
	const char *label = pt->label ? pt->label->data : "";
	u64 *bucket = NULL;
	struct ktap_iter *it;
	struct ktap_stat *st;
	struct seq_buf s, key;
	u32 r;
	int err;

	/* -EINVAL: the budget's error, already reported */
	it = ktap_ptable_iter(x, pt, &err);
	if (!it)
		return err == -EINVAL ? err : ktap_obj_error(x, err);
	err = ktap_iter_sort(x, it);
	if (err)
		return err;
	if (pt->nbuckets) {
		bucket = ktap_run_alloc(x, pt->nbuckets * sizeof(*bucket));
		if (!bucket)
			return ktap_obj_error(x, -ENOMEM);
	}
	x->ctx->out_ev = NULL;
	for (r = 0; r < it->n && r < rows; r++) {
		if (bucket) {
			err = ktap_ptable_buckets(x, pt, &it->e[r].key, bucket);
			if (err)
				return err == -EINVAL ? err : ktap_obj_error(x, err);
		}
		if (x->vm->json) {
			ktap_json_agg_key(x, pt, &it->e[r], bucket);
			continue;
		}
		seq_buf_init(&key, x->ctx->tmp, sizeof(x->ctx->tmp) - 1);
		err = ktap_tostring(x, &it->e[r].key, &key);
		if (err)
			return err;
		x->ctx->tmp[seq_buf_used(&key)] = '\0';
		st = it->e[r].val.p;
		seq_buf_init(&s, x->ctx->out, sizeof(x->ctx->out));
		if (!bucket) {
			seq_buf_printf(&s,
				       "%s[%s]: count %lld, sum %lld, avg %lld, min %lld, max %lld\n",
				       label, x->ctx->tmp, st->count, st->sum,
				       div64_s64(st->sum, st->count), st->min,
				       st->max);
			ktap_flush(x, &s, '\n');
			continue;
		}
		seq_buf_printf(&s, "%s[%s]:\n", label, x->ctx->tmp);
		ktap_flush(x, &s, '\n');
		ktap_agg_chart(x, pt, bucket);
		seq_buf_init(&s, x->ctx->out, sizeof(x->ctx->out));
		seq_buf_putc(&s, '\n');
		ktap_flush(x, &s, '\n');
	}
	return 0;
}

static int ktap_bi_print_hist(struct ktap_exec *x, struct ktap_value *ret,
			      struct ktap_value *args, u32 nargs)
{
	struct ktap_ptable *pt = args[0].p;

	if (args[0].type == KTAP_TPTABLE && pt->kind != KTAP_AGG_STATS) {
		if (nargs > 1 && (args[1].type != KTAP_TINT || args[1].i < 1))
			return ktap_bad_arg(x, 2, "print_hist", "positive number",
					    &args[1]);
		return ktap_print_agg(x, pt, nargs > 1 ?
				      min_t(s64, args[1].i, U32_MAX) : U32_MAX);
	}
	return ktap_histogram(x, args, nargs, "print_hist");
}

/*
 * log2(n): the power-of-two bucket of n, floor(log2(n)) for n >= 1, and
 * -1 for every n <= 0. t[log2(v)] += 1 builds a histogram of v that
 * print_log2hist(t) prints.
 */
static int ktap_bi_log2(struct ktap_exec *x, struct ktap_value *ret,
			struct ktap_value *args, u32 nargs)
{
	if (args[0].type != KTAP_TINT)
		return ktap_bad_arg(x, 1, "log2", "number", &args[0]);
	ktap_value_int(ret, args[0].i > 0 ? ilog2((u64)args[0].i) : -1);
	return 0;
}

/*
 * print_log2hist(t): t maps log2() buckets to counts. Every bucket from
 * the lowest to the highest present is printed, empty ones included, as
 * DTrace's quantize() does, labelled with its lower bound:
 *
 *            value ------------- Distribution ------------- count
 *             <= 0 |                                         0
 *                1 |@@@@@@@@@@@@@@@@@@@@                     12
 *                2 |@@@@@@@@@@@@@@@@@@@@                     12
 *
 * Keys that are not bucket numbers (-1 .. 62) are ignored.
 */
static int ktap_bi_print_log2hist(struct ktap_exec *x, struct ktap_value *ret,
				  struct ktap_value *args, u32 nargs)
{
	char bar[KTAP_HIST_WIDTH + 1], label[24];
	s64 lo = S64_MAX, hi = S64_MIN, b;
	u64 total = 0, v, bucket[64] = {};
	struct ktap_iter *it;
	struct seq_buf s;
	u32 r;
	int err;

	it = ktap_iter_of(x, &args[0], "print_log2hist", &err);
	if (!it)
		return err;
	err = ktap_charge(x, it->n);
	if (err)
		return err;
	for (r = 0; r < it->n; r++) {
		const struct ktap_value *key = &it->e[r].key;

		if (key->type != KTAP_TINT || key->i < -1 || key->i > 62)
			continue;
		lo = min(lo, key->i);
		hi = max(hi, key->i);
		if (ktap_hist_count(&it->e[r].val, &v)) {
			bucket[key->i + 1] = v;
			total += v;
		}
	}
	seq_buf_init(&s, x->ctx->out, sizeof(x->ctx->out));
	seq_buf_printf(&s, "%17s ------------- Distribution ------------- count\n",
		       "value");
	ktap_flush(x, &s, '\n');
	for (b = lo; b <= hi; b++) {
		v = bucket[b + 1];
		ktap_bar(bar, v, total);
		if (b < 0)
			strscpy(label, "<= 0", sizeof(label));
		else
			snprintf(label, sizeof(label), "%llu", 1ULL << b);
		seq_buf_init(&s, x->ctx->out, sizeof(x->ctx->out));
		seq_buf_printf(&s, "%18s |%-40s %llu\n", label, bar, v);
		ktap_flush(x, &s, '\n');
	}
	return 0;
}

/*
 * A new aggregation in @ret. @label, when given, is a string the charts
 * print before each key (the compiler passes the variable's name).
 */
static int ktap_new_agg(struct ktap_exec *x, struct ktap_value *ret,
			const char *fn, u32 kind, s64 lo, s64 hi, s64 step,
			const struct ktap_value *label, u32 labelarg)
{
	struct ktap_ptable *pt;
	int err;

	if (label && label->type != KTAP_TSTR)
		return ktap_bad_arg(x, labelarg, fn, "string", label);
	pt = ktap_ptable_new(x->vm, kind, lo, hi, step);
	if (IS_ERR(pt)) {
		if (PTR_ERR(pt) == -EINVAL)
			return ktap_rt_error(x,
					     "lhist(%lld, %lld, %lld): needs min < max, step > 0 and at most %d buckets",
					     lo, hi, step,
					     KTAP_LHIST_BUCKETS_MAX - 2);
		return ktap_obj_error(x, PTR_ERR(pt));
	}
	if (label) {
		struct ktap_value v = *label;

		err = ktap_value_persist(x->vm, &v);
		if (err)
			return ktap_obj_error(x, err);
		pt->label = v.s;
	}
	ktap_set_obj(ret, KTAP_TPTABLE, pt);
	return 0;
}

static int ktap_bi_ptable(struct ktap_exec *x, struct ktap_value *ret,
			  struct ktap_value *args, u32 nargs)
{
	return ktap_new_agg(x, ret, "ptable", KTAP_AGG_STATS, 0, 0, 0,
			    nargs ? &args[0] : NULL, 1);
}

static int ktap_bi_stats(struct ktap_exec *x, struct ktap_value *ret,
			 struct ktap_value *args, u32 nargs)
{
	return ktap_new_agg(x, ret, "stats", KTAP_AGG_STATS, 0, 0, 0,
			    nargs ? &args[0] : NULL, 1);
}

static int ktap_bi_hist(struct ktap_exec *x, struct ktap_value *ret,
			struct ktap_value *args, u32 nargs)
{
	return ktap_new_agg(x, ret, "hist", KTAP_AGG_LOG2, 0, 0, 0,
			    nargs ? &args[0] : NULL, 1);
}

static int ktap_bi_lhist(struct ktap_exec *x, struct ktap_value *ret,
			 struct ktap_value *args, u32 nargs)
{
	u32 i;

	for (i = 0; i < 3; i++)
		if (args[i].type != KTAP_TINT)
			return ktap_bad_arg(x, i + 1, "lhist", "number", &args[i]);
	return ktap_new_agg(x, ret, "lhist", KTAP_AGG_LINEAR, args[0].i,
			    args[1].i, args[2].i, nargs > 3 ? &args[3] : NULL, 4);
}

/* clear(agg) or clear(t): delete every key (an aggregation keeps its cells). */
static int ktap_bi_clear(struct ktap_exec *x, struct ktap_value *ret,
			 struct ktap_value *args, u32 nargs)
{
	if (args[0].type != KTAP_TPTABLE && args[0].type != KTAP_TTABLE)
		return ktap_bad_arg(x, 1, "clear", "table or aggregation", &args[0]);
	return ktap_bi_delete(x, ret, args, 1);
}

/* Readers of a statistic; an absent key (nil) reads as 0. */
static int ktap_stat_arg(struct ktap_exec *x, struct ktap_value *args,
			 const char *fn, struct ktap_stat *st)
{
	memset(st, 0, sizeof(*st));
	if (args[0].type == KTAP_TNIL)
		return 0;
	if (args[0].type != KTAP_TSTAT)
		return ktap_bad_arg(x, 1, fn, "statistic", &args[0]);
	*st = *(struct ktap_stat *)args[0].p;
	return 0;
}

#define KTAP_STAT_READER(name, expr)					\
static int ktap_bi_##name(struct ktap_exec *x, struct ktap_value *ret,	\
			  struct ktap_value *args, u32 nargs)		\
{									\
	struct ktap_stat st;						\
	int err = ktap_stat_arg(x, args, #name, &st);			\
									\
	if (!err)							\
		ktap_value_int(ret, expr);				\
	return err;							\
}

KTAP_STAT_READER(count, st.count)
KTAP_STAT_READER(sum, st.sum)
KTAP_STAT_READER(avg, st.count ? div64_s64(st.sum, st.count) : 0)
KTAP_STAT_READER(min, st.min)
KTAP_STAT_READER(max, st.max)

/*
 * Save the kernel or user stack of the event being handled in the
 * context's frames: the stack its probe saw, which the event's kind
 * knows. Without an event (the main chunk) the kernel stack is that of
 * the ioctl that runs it, below ktap_save_stack() and its caller.
 */
static unsigned int ktap_save_stack(struct ktap_exec *x, bool user)
{
	struct ktap_event *ev = x->ev;

	if (ev && ev->ops->stack)
		return ev->ops->stack(ev, x->ctx->trace, KTAP_STACK_SAVE, user);
	if (user)
		return 0;
	return stack_trace_save(x->ctx->trace, KTAP_STACK_SAVE, 2);
}

/*
 * A user address as the kernel can name it without the task's memory
 * map: tools/ktap turns "0x<addr> (pid <tgid>)" into the symbol and
 * file it falls in, in the reader's process context.
 */
static void ktap_user_addr(struct seq_buf *s, unsigned long addr)
{
	seq_buf_printf(s, "%#lx (pid %d)", addr, task_tgid_nr(current));
}

/*
 * The innermost @depth frames of the event's stack, one a line:
 * " func+0x12/0x80" for the kernel's, " 0x... (pid N)" for the user's.
 */
static void ktap_stack_text(struct ktap_exec *x, struct seq_buf *s,
			    u32 depth, bool user)
{
	const unsigned long *f = x->ctx->trace;
	unsigned int n = ktap_save_stack(x, user), k;

	for (k = 0; k < n && k < depth; k++) {
		if (user) {
			seq_buf_putc(s, ' ');
			ktap_user_addr(s, f[k]);
			seq_buf_putc(s, '\n');
		} else {
			seq_buf_printf(s, " %pS\n", (void *)f[k]);
		}
	}
}

/*
 * stack([depth [, skip]]) and ustack([depth]): a stack as a string.
 * ktap 0.4 wrote stack(-1, 12): a depth of -1 is the default, and the
 * skip stepped over ktap's own frames, which a stack taken from the
 * probe's context no longer has, so it is accepted and ignored.
 */
static int ktap_stack_str(struct ktap_exec *x, struct ktap_value *ret,
			  struct ktap_value *args, u32 nargs, bool user)
{
	u32 depth = KTAP_STACK_DEPTH;
	struct seq_buf s;

	if (nargs && args[0].type == KTAP_TINT && args[0].i > 0)
		depth = min_t(s64, args[0].i, KTAP_STACK_DEPTH);
	seq_buf_init(&s, x->ctx->tmp, sizeof(x->ctx->tmp));
	ktap_stack_text(x, &s, depth, user);
	return ktap_ret_str(x, ret, x->ctx->tmp, seq_buf_used(&s));
}

static int ktap_bi_stack(struct ktap_exec *x, struct ktap_value *ret,
			 struct ktap_value *args, u32 nargs)
{
	return ktap_stack_str(x, ret, args, nargs, false);
}

static int ktap_bi_ustack(struct ktap_exec *x, struct ktap_value *ret,
			  struct ktap_value *args, u32 nargs)
{
	return ktap_stack_str(x, ret, args, nargs, true);
}

static int ktap_bi_print_backtrace(struct ktap_exec *x, struct ktap_value *ret,
				   struct ktap_value *args, u32 nargs)
{
	struct seq_buf s;

	seq_buf_init(&s, x->ctx->out, sizeof(x->ctx->out));
	ktap_stack_text(x, &s, KTAP_STACK_DEPTH, false);
	ktap_flush(x, &s, '\n');
	return 0;
}

/* ksym(addr) and usym(addr): an address as a symbol. */
static int ktap_sym_str(struct ktap_exec *x, struct ktap_value *ret,
			struct ktap_value *args, bool user)
{
	struct seq_buf s;

	if (args[0].type != KTAP_TINT)
		return ktap_bad_arg(x, 1, user ? "usym" : "ksym", "number",
				    &args[0]);
	seq_buf_init(&s, x->ctx->tmp, sizeof(x->ctx->tmp));
	if (user)
		ktap_user_addr(&s, args[0].i);
	else
		seq_buf_printf(&s, "%pS", (void *)(unsigned long)args[0].i);
	return ktap_ret_str(x, ret, x->ctx->tmp, seq_buf_used(&s));
}

static int ktap_bi_ksym(struct ktap_exec *x, struct ktap_value *ret,
			struct ktap_value *args, u32 nargs)
{
	return ktap_sym_str(x, ret, args, false);
}

static int ktap_bi_usym(struct ktap_exec *x, struct ktap_value *ret,
			struct ktap_value *args, u32 nargs)
{
	return ktap_sym_str(x, ret, args, true);
}

/**
 * ktap_strncpy_nofault() - copy a NUL-terminated string without faulting
 * @dst: destination, @size bytes; always NUL-terminated on success
 * @addr: kernel or user address of the string
 * @size: size of @dst, at least 1
 * @user: @addr is a user address of the current task
 *
 * The string is read one page at a time so that a string ending just before
 * an unmapped page is still read whole; strncpy_*_nofault() would do the
 * same but is not available to modules.  Safe in any context, NMI included.
 *
 * Return: length of the copied string without its NUL (truncated to
 * @size - 1), or -EFAULT if the first page cannot be read.
 */
long ktap_strncpy_nofault(char *dst, unsigned long addr, size_t size,
			  bool user)
{
	long n = 0, chunk;
	char *nul;

	while (n < (long)size - 1) {
		chunk = min_t(long, size - 1 - n,
			      PAGE_SIZE - offset_in_page(addr + n));
		if (user ? copy_from_user_nofault(dst + n,
						  (const void __user *)(addr + n),
						  chunk) :
			   copy_from_kernel_nofault(dst + n,
						    (const void *)(addr + n),
						    chunk)) {
			if (!n)
				return -EFAULT;
			break;
		}
		nul = memchr(dst + n, '\0', chunk);
		if (nul)
			return nul - dst;
		n += chunk;
	}
	dst[n] = '\0';
	return n;
}

static int ktap_string_from(struct ktap_exec *x, struct ktap_value *ret,
			    struct ktap_value *args, bool user)
{
	long n;

	if (args[0].type != KTAP_TINT)
		return ktap_bad_arg(x, 1, user ? "user_string" : "kernel_string",
				    "number", &args[0]);
	n = ktap_strncpy_nofault(x->ctx->tmp, (unsigned long)args[0].i,
				 KTAP_FETCH_MAX, user);
	if (n < 0)
		return 0;	/* unreadable: nil */
	return ktap_ret_str(x, ret, x->ctx->tmp, n);
}

static int ktap_bi_kernel_string(struct ktap_exec *x, struct ktap_value *ret,
				 struct ktap_value *args, u32 nargs)
{
	return ktap_string_from(x, ret, args, false);
}

static int ktap_bi_user_string(struct ktap_exec *x, struct ktap_value *ret,
			       struct ktap_value *args, u32 nargs)
{
	return ktap_string_from(x, ret, args, true);
}

/*
 * sk_saddr(sk) and sk_daddr(sk), ktap 0.4's net.ip_sock_saddr() and
 * net.ip_sock_daddr(): an IPv4 socket's local and remote address, given
 * the struct sock pointer a probe saw. The pointer is only a number the
 * script passed, so every read is _nofault: nil when it cannot be read
 * or the socket is not AF_INET. The value is the __be32 as it lies in
 * memory, which ntop() prints.
 */
static int ktap_sk_addr(struct ktap_exec *x, struct ktap_value *ret,
			struct ktap_value *args, const char *name,
			size_t addr_off)
{
	unsigned long sk;
	unsigned short family;
	__be32 addr;

	if (args[0].type != KTAP_TINT)
		return ktap_bad_arg(x, 1, name, "number", &args[0]);
	sk = (unsigned long)args[0].i;
	if (copy_from_kernel_nofault(&family, (const void *)(sk +
				     offsetof(struct sock, sk_family)),
				     sizeof(family)) ||
	    family != AF_INET ||
	    copy_from_kernel_nofault(&addr, (const void *)(sk + addr_off),
				     sizeof(addr)))
		return 0;	/* nil */
	ktap_value_int(ret, (__force u32)addr);
	return 0;
}

static int ktap_bi_sk_saddr(struct ktap_exec *x, struct ktap_value *ret,
			    struct ktap_value *args, u32 nargs)
{
	return ktap_sk_addr(x, ret, args, "sk_saddr",
			    offsetof(struct sock, sk_rcv_saddr));
}

static int ktap_bi_sk_daddr(struct ktap_exec *x, struct ktap_value *ret,
			    struct ktap_value *args, u32 nargs)
{
	return ktap_sk_addr(x, ret, args, "sk_daddr",
			    offsetof(struct sock, sk_daddr));
}

/* ntop(addr): an IPv4 address from sk_saddr()/sk_daddr() as a.b.c.d. */
static int ktap_bi_ntop(struct ktap_exec *x, struct ktap_value *ret,
			struct ktap_value *args, u32 nargs)
{
	u8 b[4];
	u32 v;
	int n;

	if (args[0].type != KTAP_TINT || args[0].i < 0 || args[0].i > U32_MAX)
		return ktap_bad_arg(x, 1, "ntop", "IPv4 address (0..0xffffffff)",
				    &args[0]);
	v = (u32)args[0].i;
	memcpy(b, &v, sizeof(b));	/* network order, as in memory */
	n = snprintf(x->ctx->tmp, sizeof(x->ctx->tmp), "%u.%u.%u.%u",
		     b[0], b[1], b[2], b[3]);
	return ktap_ret_str(x, ret, x->ctx->tmp, n);
}

static int ktap_bi_curr_taskinfo(struct ktap_exec *x, struct ktap_value *ret,
				 struct ktap_value *args, u32 nargs)
{
	struct task_struct *t = current;
	const char *f;

	if (args[0].type != KTAP_TSTR)
		return ktap_bad_arg(x, 1, "curr_taskinfo", "string", &args[0]);
	f = args[0].s->data;
	if (!strcmp(f, "pid"))
		ktap_value_int(ret, task_pid_nr(t));
	else if (!strcmp(f, "tgid"))
		ktap_value_int(ret, task_tgid_nr(t));
	else if (!strcmp(f, "prio"))
		ktap_value_int(ret, t->prio);
	else if (!strcmp(f, "static_prio"))
		ktap_value_int(ret, t->static_prio);
	else if (!strcmp(f, "normal_prio"))
		ktap_value_int(ret, t->normal_prio);
	else if (!strcmp(f, "policy"))
		ktap_value_int(ret, t->policy);
	else if (!strcmp(f, "state"))
		ktap_value_int(ret, READ_ONCE(t->__state));
	else if (!strcmp(f, "flags"))
		ktap_value_int(ret, t->flags);
	else if (!strcmp(f, "comm"))
		return ktap_bi_execname(x, ret, args, 0);
	else
		return ktap_rt_error(x, "curr_taskinfo: unknown field '%s'", f);
	return 0;
}

static int ktap_bi_print_trace_clock(struct ktap_exec *x, struct ktap_value *ret,
				     struct ktap_value *args, u32 nargs)
{
	struct seq_buf s;

	seq_buf_init(&s, x->ctx->out, sizeof(x->ctx->out));
	seq_buf_printf(&s, "%llu\n", local_clock());
	ktap_flush(x, &s, '\n');
	return 0;
}

static int ktap_bi_probename(struct ktap_exec *x, struct ktap_value *ret,
			     struct ktap_value *args, u32 nargs)
{
	const char *name = x->ev->name ?: "";
	size_t len = strlen(name);
	struct ktap_str *s = ktap_str_intern(x->vm, name, len);

	if (!s)
		return ktap_ret_str(x, ret, name, len);
	ktap_set_obj(ret, KTAP_TSTR, s);
	return 0;
}

static int ktap_bi_argstr(struct ktap_exec *x, struct ktap_value *ret,
			  struct ktap_value *args, u32 nargs)
{
	return ktap_event_tostring(x, x->ev, ret);
}

static int ktap_bi_argn(struct ktap_exec *x, struct ktap_value *ret,
			struct ktap_value *args, u32 nargs)
{
	struct ktap_event *ev = x->ev;
	int err;

	if (args[0].type != KTAP_TINT || args[0].i < 0 || args[0].i > 9)
		return ktap_bad_arg(x, 1, "argn", "number 0..9", &args[0]);
	if (!ev->ops || !ev->ops->arg)
		return ktap_rt_error(x, "this event has no positional arguments");
	err = ev->ops->arg(x->vm, ev, args[0].i, ret);
	if (err == -ENOENT) {
		ktap_set_nil(ret);
		return 0;
	}
	return err ? ktap_rt_error(x, "cannot read arg%lld (%d)",
				   args[0].i, err) : 0;
}

static int ktap_bi_tostring(struct ktap_exec *x, struct ktap_value *ret,
			    struct ktap_value *args, u32 nargs)
{
	struct seq_buf s;
	int err;

	if (args[0].type == KTAP_TSTR) {
		*ret = args[0];
		return 0;
	}
	seq_buf_init(&s, x->ctx->tmp, sizeof(x->ctx->tmp));
	err = ktap_tostring(x, &args[0], &s);
	if (err)
		return err;
	return ktap_ret_str(x, ret, x->ctx->tmp, seq_buf_used(&s));
}

static int ktap_bi_tonumber(struct ktap_exec *x, struct ktap_value *ret,
			    struct ktap_value *args, u32 nargs)
{
	s64 v;

	if (args[0].type == KTAP_TINT)
		*ret = args[0];
	else if (args[0].type == KTAP_TSTR && !kstrtoll(args[0].s->data, 0, &v))
		ktap_value_int(ret, v);
	return 0;
}

#define __KTAP_BIROW(bi, lo, hi, fl)					\
	[KTAP_BI_##bi] = {						\
		.name = #bi, .fn = ktap_bi_##bi,			\
		.min = lo, .max = hi, .flags = fl,			\
	},
const struct ktap_builtin_info ktap_builtin_table[KTAP_BI__COUNT] = {
	KTAP_BUILTINS(__KTAP_BIROW)
};

#undef __KTAP_BIROW

/* For KTAP_IOC_VERSION: how many builtins images may name. */
u32 ktap_vm_nr_builtins(void)
{
	return KTAP_BI__COUNT;
}

/**
 * ktap_builtin_lookup - the builtin an image names
 * @name: its name, as in the image's builtins section
 *
 * Return: its KTAP_BI_* id, or -ENOENT.
 */
int ktap_builtin_lookup(const char *name)
{
	int id;

	for (id = 0; id < KTAP_BI__COUNT; id++) {
		if (!strcmp(ktap_builtin_table[id].name, name))
			return id;
	}
	return -ENOENT;
}
