// SPDX-License-Identifier: GPL-2.0
/*
 * ktap VM interpreter.
 *
 * A register machine over verified bytecode (vm_load.c) with
 * computed-goto dispatch; the jump table is generated from the
 * KTAP_OPCODES X-macro. Each opcode body is a line or two; slow paths
 * (errors, table access, concatenation, calls into native code) are out
 * of line.
 *
 * Runs:
 *  - ktap_vm_run_main(): the main chunk, in process context, with its
 *    own register stack, KTAP_MAIN_BUDGET instructions, rescheduling
 *    and signal checks every KTAP_MAIN_SLICE instructions.
 *  - ktap_vm_fire(): a handler, in probe context (any context up to
 *    NMI), on the per-CPU register stack, with the session's budget.
 *    A per-CPU guard admits one run per CPU: a probe that fires while
 *    ktap runs on that CPU is counted in stats.recursion and skipped.
 *  - ktap_vm_call(): a script function called back by a builtin
 *    (sort_pairs() with a comparison), inside either run, on the stack
 *    above the builtin's caller and on the run's budget.
 *
 * The budget is charged where control can go back, not per
 * instruction: entering a function costs its length, every backward
 * transfer (JMP, JMPT, JMPF, ITERNEXT with a negative offset) the
 * length of the loop it closes, at least one. Between two charges
 * execution only moves forward, and the differences telescope, so the
 * charges bound the instructions run. Builtins and operators whose work
 * grows with their input (#t, pairs, sort_pairs, histograms) charge
 * the elements they touch before touching them (ktap_charge()). The
 * dispatch stays two instructions long (plus the pc check of
 * CONFIG_KTAP_DEBUG_VM), and the main chunk reschedules and checks
 * signals at the same points, so a pending SIGKILL ends it within
 * KTAP_MAIN_SLICE instructions.
 *
 * Runtime errors record the session's first error, print one line
 * "ktap: error: FILE:LINE: message" through host_ops->write and ask the
 * session to stop through host_ops->exit; they never WARN.
 */
#include <linux/compiler.h>
#include <linux/math64.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/seq_buf.h>
#include <linux/timekeeping.h>
#include <linux/unaligned.h>
#include <linux/vmalloc.h>
#include "vm.h"

#define KTAP_MAIN_SLICE		65536

/* The run (if any) on this CPU; also the recursion guard. */
static DEFINE_PER_CPU(struct ktap_exec *, ktap_running);

/**
 * ktap_rt_error - record a runtime error message for the current run
 * @x: the run
 * @fmt: message format
 *
 * Return: -EINVAL, for the caller to pass up to the interpreter, which
 * reports it with the script position.
 */
int ktap_rt_error(struct ktap_exec *x, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vscnprintf(x->ctx->err, sizeof(x->ctx->err), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/**
 * ktap_obj_error - turn an error of vm_obj.c into a runtime error
 * @x: the run
 * @err: negative errno from a table, string or pool operation
 *
 * -EBUSY (lock contended in NMI) is passed through: the run ends
 * silently and is counted as a drop.
 *
 * Return: a negative errno.
 */
int ktap_obj_error(struct ktap_exec *x, int err)
{
	switch (err) {
	case -EBUSY:
		return err;
	case -ENOMEM:
		if (x->transient)
			return ktap_rt_error(x,
					     "out of memory (session pool of %zu KB, %zu KB per handler run)",
					     x->vm->pool.size >> 10,
					     x->vm->temp_size >> 10);
		return ktap_rt_error(x, "out of memory (session pool of %zu KB)",
				     x->vm->pool.size >> 10);
	case -EPERM:
		return ktap_rt_error(x, "an event can only be used while its handler runs");
	case -EDOM:
		return ktap_rt_error(x, "table value is not a number");
	case -EXDEV:
		return ktap_rt_error(x,
				     "a table, function or iterator created by a handler cannot be kept beyond its run");
	default:
		return ktap_rt_error(x, "invalid table key");
	}
}

/**
 * ktap_charge - charge @n units of work to the run's instruction budget
 * @x: the run, inside a builtin or operator helper
 * @n: elements about to be touched
 *
 * Called before work whose cost grows with its input, so that no run
 * does more than its budget allows, however large its tables are.
 *
 * Return: 0, or a runtime error when the budget does not cover @n.
 */
int ktap_charge(struct ktap_exec *x, u64 n)
{
	if (n > (u64)max_t(s64, x->budget, 0))
		return ktap_rt_error(x, "instruction budget exceeded (%u)",
				     x->main ? x->vm->main_budget :
					       x->vm->insn_budget);
	x->budget -= n;
	return 0;
}

/**
 * ktap_write - emit one output record of the run
 * @x: the run
 * @buf: the text
 * @len: its length
 *
 * Formatting and copying a record costs far more than an instruction, so
 * every KTAP_OUT_BYTES_PER_UNIT bytes are charged as one unit of the
 * budget (the caller's next budget check ends an overrun run).
 */
void ktap_write(struct ktap_exec *x, const char *buf, size_t len)
{
	const struct ktap_host_ops *ops = x->vm->host_ops;

	x->budget -= len / KTAP_OUT_BYTES_PER_UNIT;
	if (ops && ops->write && len)
		ops->write(x->vm->host, buf, len);
}

static void ktap_halt(struct ktap_vm *vm)
{
	atomic_set(&vm->halted, 1);
	if (vm->host_ops && vm->host_ops->exit)
		vm->host_ops->exit(vm->host);
}

/* Report the error of run @x; the first error of a session is printed. */
static void ktap_report(struct ktap_exec *x, int err)
{
	struct ktap_vm *vm = x->vm;
	u32 line = 0;
	int n;

	if (err == -EBUSY) {
		atomic64_inc(&vm->drops);
		return;
	}
	atomic64_inc(&vm->errors);
	if (!atomic_xchg(&vm->failed, 1)) {
		if (vm->lines && x->pc < vm->ncode)
			line = vm->lines[x->pc];
		n = scnprintf(x->ctx->out, sizeof(x->ctx->out),
			      "ktap: error: %s:%u: %s\n", vm->chunkname, line,
			      x->ctx->err);
		ktap_write(x, x->ctx->out, n);
	}
	ktap_halt(vm);
}

/*
 * Upvalues. In the main chunk (single-threaded, before any probe is
 * attached) a closure shares its enclosing function's live register
 * until that function returns, as in Lua. In a handler a closure
 * captures the current value: its upvalues may be read on other CPUs
 * as soon as it is stored, and a register of this CPU's stack must
 * never be visible there.
 */
static struct ktap_upval *ktap_capture(struct ktap_exec *x,
				       struct ktap_value *reg,
				       struct ktap_value *base)
{
	struct ktap_upval *uv;

	if (x->main) {
		for (uv = x->open; uv && uv->v >= base; uv = uv->next)
			if (uv->v == reg)
				return uv;
	}
	uv = ktap_run_alloc(x, sizeof(*uv));
	if (!uv)
		return NULL;
	if (x->main) {
		uv->v = reg;
		uv->next = x->open;
		x->open = uv;
		return uv;
	}
	uv->closed = *reg;
	if (ktap_value_persist(x->vm, &uv->closed))
		ktap_set_nil(&uv->closed);
	uv->v = &uv->closed;
	return uv;
}

static noinline void __ktap_close_upvals(struct ktap_exec *x,
					 struct ktap_value *base)
{
	struct ktap_upval *uv;

	while (x->open && x->open->v >= base) {
		uv = x->open;
		x->open = uv->next;
		uv->closed = *uv->v;
		if (ktap_value_persist(x->vm, &uv->closed))
			ktap_set_nil(&uv->closed);
		uv->v = &uv->closed;
	}
}

/*
 * Close the open upvalues pointing at or above @base. Only the main
 * chunk leaves upvalues open (a handler's closures copy at creation),
 * so a handler's return pays one test.
 */
static __always_inline void ktap_close_upvals(struct ktap_exec *x,
					      struct ktap_value *base)
{
	if (unlikely(x->open))
		__ktap_close_upvals(x, base);
}

/**
 * ktap_main_sleep - let the main chunk wait while its probes fire
 * @x: the main chunk's run
 * @ms: milliseconds
 *
 * The handlers recorded so far go live and may run on any CPU while the
 * main chunk waits. They reach main-chunk locals only through upvalues,
 * and an open upvalue points into the main chunk's registers, which
 * the main chunk writes without ktap_shared_write(): a handler could
 * read half a value there. So every open upvalue is closed first; from
 * here on a handler and the main chunk each see their own copy of such
 * a local (the compiler refuses scripts that would notice).
 *
 * A signal (Ctrl-C) during the wait, or exit() or an error in a handler,
 * ends the main chunk as exit() would: the session stops and its END
 * handlers run.
 *
 * Return: 0, KTAP_HALT, or the runtime error of an attach failure.
 */
int ktap_main_sleep(struct ktap_exec *x, u32 ms)
{
	struct ktap_vm *vm = x->vm;
	const struct ktap_host_ops *ops = vm->host_ops;
	int err;

	if (!x->main || x->callbacks)
		return ktap_rt_error(x, "sleep() only works in the main chunk");
	ktap_close_upvals(x, x->ctx->stack);
	if (!ops || !ops->sleep)
		return 0;
	err = ops->sleep(vm->host, ms);
	if (err && err != -EINTR)
		return ktap_rt_error(x, "cannot attach the probes (error %d)",
				     err);
	if (err || atomic_read(&vm->halted)) {
		atomic_set(&vm->halted, 1);
		if (ops->exit)
			ops->exit(vm->host);
		return KTAP_HALT;
	}
	return 0;
}

static struct ktap_closure *ktap_new_closure(struct ktap_exec *x,
					     struct ktap_closure *cl,
					     u32 proto, struct ktap_value *base)
{
	const struct ktap_bc_proto *p = &x->vm->protos[proto];
	struct ktap_closure *ncl;
	u32 j;

	ncl = ktap_run_alloc(x, struct_size(ncl, upv, p->nupvals));
	if (!ncl)
		return NULL;
	ncl->proto = proto;
	ncl->nupvals = p->nupvals;
	for (j = 0; j < p->nupvals; j++) {
		const struct ktap_bc_upval *d = &x->vm->upvals[p->upval_start + j];

		if (d->in_stack)
			ncl->upv[j] = ktap_capture(x, &base[d->index], base);
		else
			ncl->upv[j] = cl->upv[d->index];
		if (!ncl->upv[j])
			return NULL;
	}
	return ncl;
}

/* Slow paths of the interpreter. */

static noinline int ktap_arith_error(struct ktap_exec *x,
				     const struct ktap_value *b,
				     const struct ktap_value *c)
{
	const struct ktap_value *bad = b->type != KTAP_TINT ? b : c;

	return ktap_rt_error(x, "attempt to perform arithmetic on a %s value",
			     ktap_typename(bad->type));
}

static noinline int ktap_div(struct ktap_exec *x, u32 op, s64 b, s64 c,
			     s64 *res)
{
	if (!c)
		return ktap_rt_error(x, op == KTAP_OP_DIV || op == KTAP_OP_DIVK ?
				     "division by zero" : "modulo by zero");
	if (c == -1) {	/* S64_MIN / -1 overflows: wrap like the others */
		*res = op == KTAP_OP_DIV || op == KTAP_OP_DIVK ?
		       (s64)(0 - (u64)b) : 0;
		return 0;
	}
	if (op == KTAP_OP_DIV || op == KTAP_OP_DIVK)
		*res = div64_s64(b, c);
	else
		*res = b - div64_s64(b, c) * c;
	return 0;
}

static noinline int ktap_event_field(struct ktap_exec *x,
				     struct ktap_event *ev,
				     const char *name, u32 len,
				     struct ktap_value *out)
{
	int err;

	if (!strcmp(name, "tostring")) {
		ktap_set_obj(out, KTAP_TNATIVE, ev);
		return 0;
	}
	if (!strcmp(name, "set_retval")) {
		ktap_set_obj(out, KTAP_TNATIVE, (void *)((unsigned long)ev | 1));
		return 0;
	}
	if (!ev->ops || !ev->ops->field)
		return ktap_rt_error(x, "event has no field '%s'", name);
	ktap_set_nil(out);
	err = ev->ops->field(x->vm, ev, name, len, out);
	if (err == -ENOENT)
		return ktap_rt_error(x, "event has no field '%s'", name);
	if (err)
		return ktap_rt_error(x, "cannot read event field '%s' (%d)",
				     name, err);
	return 0;
}

/*
 * EVFIELD: field @idx of the fields section, from what the event
 * source resolved at attach; else by name, as e.NAME reads it.
 */
static noinline int ktap_evfield(struct ktap_exec *x, u32 idx,
				 struct ktap_value *out)
{
	struct ktap_event *ev = x->ev;
	const char *name;
	int err = -ENOENT;

	if (likely(ev && ev->ops && ev->ops->field_at)) {
		ktap_set_nil(out);
		err = ev->ops->field_at(x->vm, ev, idx, out);
		if (likely(!err))
			return 0;
	}
	name = x->vm->strtab + x->vm->fields[idx].name;
	if (!ev)
		return ktap_rt_error(x, "event field '%s' read outside a handler",
				     name);
	if (err != -ENOENT)
		return ktap_rt_error(x, "cannot read event field '%s' (%d)",
				     name, err);
	return ktap_event_field(x, ev, name, strlen(name), out);
}

/* R(A) := obj[key]; @obj, @key are copies, @out may alias registers. */
static noinline int ktap_index(struct ktap_exec *x, struct ktap_value obj,
			       struct ktap_value key, struct ktap_value *out)
{
	int err;

	switch (obj.type) {
	case KTAP_TTABLE:
		err = ktap_table_get(x->vm, obj.p, &key, out);
		break;
	case KTAP_TPTABLE:
		err = ktap_ptable_get(x, obj.p, &key, out);
		break;
	case KTAP_TEVENT:
		if (key.type != KTAP_TSTR)
			return ktap_rt_error(x, "event fields are indexed by name");
		return ktap_event_field(x, obj.p, key.s->data, key.s->len,
					out);
	default:
		return ktap_rt_error(x, "attempt to index a %s value",
				     ktap_typename(obj.type));
	}
	if (err == -EINVAL)
		return ktap_rt_error(x, "invalid table key (a %s value)",
				     ktap_typename(key.type));
	return err ? ktap_obj_error(x, err) : 0;
}

/**
 * ktap_table_full - a store into a session table failed: drop it or fail
 * @x: the run
 * @t: the table (a struct ktap_table or struct ktap_ptable)
 * @err: the store's error
 *
 * A tracer runs for days and its tables grow with what it sees: when the
 * session pool cannot hold a new key, the key is dropped and counted
 * (STATS keys_dropped, which the tool reports at the end) and the
 * session goes on. Tables of one handler run live in its temporary
 * arena; running out there is still an error.
 *
 * Return: 0 when the store was dropped, else @err.
 */
static __always_inline int ktap_table_full(struct ktap_exec *x,
					   const void *t, int err)
{
	if (err != -ENOMEM || ktap_is_temp(x->vm, t))
		return err;
	atomic64_inc(&x->vm->keys_dropped);
	return 0;
}

static noinline int ktap_newindex(struct ktap_exec *x,
				  const struct ktap_value *obj,
				  const struct ktap_value *key,
				  const struct ktap_value *val)
{
	int err;

	if (obj->type == KTAP_TPTABLE)
		return ktap_rt_error(x, "a ptable is updated with <<<");
	if (obj->type != KTAP_TTABLE)
		return ktap_rt_error(x, "attempt to index a %s value",
				     ktap_typename(obj->type));
	err = ktap_table_full(x, obj->p,
			      ktap_table_set(x->vm, obj->p, key, val));
	if (err == -EINVAL)
		return ktap_rt_error(x, "invalid table key (a %s value)",
				     ktap_typename(key->type));
	return err ? ktap_obj_error(x, err) : 0;
}

static noinline int ktap_inctable(struct ktap_exec *x,
				  const struct ktap_value *obj,
				  const struct ktap_value *key,
				  const struct ktap_value *n, bool aggr)
{
	int err;

	if (n->type != KTAP_TINT)
		return ktap_arith_error(x, n, n);
	if (aggr && obj->type != KTAP_TPTABLE)
		return ktap_rt_error(x, "<<< needs a ptable, not a %s value",
				     ktap_typename(obj->type));
	if (!aggr && obj->type != KTAP_TTABLE)
		return ktap_rt_error(x, "attempt to index a %s value",
				     ktap_typename(obj->type));
	if (aggr)
		err = ktap_ptable_add(x->vm, obj->p, key, n->i);
	else
		err = ktap_table_inc(x->vm, obj->p, key, n->i);
	err = ktap_table_full(x, obj->p, err);
	if (err == -EINVAL)
		return ktap_rt_error(x, "invalid table key (a %s value)",
				     ktap_typename(key->type));
	return err ? ktap_obj_error(x, err) : 0;
}

static int ktap_append(struct ktap_exec *x, struct seq_buf *s,
		       const struct ktap_value *v)
{
	if (v->type == KTAP_TSTR)
		seq_buf_puts(s, v->s->data);
	else if (v->type == KTAP_TINT)
		seq_buf_printf(s, "%lld", v->i);
	else
		return ktap_rt_error(x, "attempt to concatenate a %s value",
				     ktap_typename(v->type));
	return 0;
}

static noinline int ktap_concat(struct ktap_exec *x, struct ktap_value b,
				struct ktap_value c, struct ktap_value *out)
{
	struct seq_buf s;
	struct ktap_str *str;
	int err;

	seq_buf_init(&s, x->ctx->tmp, sizeof(x->ctx->tmp));
	err = ktap_append(x, &s, &b);
	err = err ?: ktap_append(x, &s, &c);
	if (err)
		return err;
	if (seq_buf_has_overflowed(&s))
		return ktap_rt_error(x, "string too long");
	str = ktap_str_temp(x, x->ctx->tmp, seq_buf_used(&s));
	if (!str)
		return ktap_obj_error(x, -ENOMEM);
	ktap_set_obj(out, KTAP_TSTR, str);
	return 0;
}

static int ktap_str_cmp(const struct ktap_str *a, const struct ktap_str *b)
{
	int r = memcmp(a->data, b->data, min(a->len, b->len));

	if (r)
		return r;
	return a->len < b->len ? -1 : a->len > b->len;
}

/* LT and LE on non-integers: strings compare bytewise. */
static noinline int ktap_compare(struct ktap_exec *x,
				 const struct ktap_value *b,
				 const struct ktap_value *c, bool le,
				 bool *res)
{
	int r;

	if (b->type == KTAP_TINT && c->type == KTAP_TINT) {
		*res = le ? b->i <= c->i : b->i < c->i;
		return 0;
	}
	if (b->type == KTAP_TSTR && c->type == KTAP_TSTR) {
		r = ktap_str_cmp(b->s, c->s);
		*res = le ? r <= 0 : r < 0;
		return 0;
	}
	return ktap_rt_error(x, "attempt to compare %s with %s",
			     ktap_typename(b->type), ktap_typename(c->type));
}

/**
 * ktap_border - #t for the run @x, charging each key looked at
 * @x: the run
 * @t: the table
 * @n: the border found
 *
 * Return: 0, or a runtime error when the walk would exceed the budget.
 */
int ktap_border(struct ktap_exec *x, struct ktap_table *t, s64 *n)
{
	int err = ktap_table_len(x->vm, t, n, max_t(s64, x->budget, 0));

	if (err == -E2BIG)
		return ktap_charge(x, U64_MAX);
	if (err)
		return ktap_obj_error(x, err);
	return ktap_charge(x, *n + 1);
}

static noinline int ktap_len(struct ktap_exec *x, struct ktap_value v,
			     struct ktap_value *out)
{
	s64 n;
	int err;

	switch (v.type) {
	case KTAP_TSTR:
		ktap_value_int(out, v.s->len);
		return 0;
	case KTAP_TTABLE:
		err = ktap_border(x, v.p, &n);
		if (err)
			return err;
		ktap_value_int(out, n);
		return 0;
	default:
		return ktap_rt_error(x, "attempt to get length of a %s value",
				     ktap_typename(v.type));
	}
}

/**
 * ktap_event_tostring - the event as ftrace prints it, as a string
 * @x: the run
 * @ev: the event
 * @ret: the string (temporary)
 *
 * Return: 0 or a runtime error.
 */
int ktap_event_tostring(struct ktap_exec *x, struct ktap_event *ev,
			struct ktap_value *ret)
{
	struct ktap_str *str;
	struct seq_buf s;
	int err;

	if (!ev->ops || !ev->ops->tostring)
		return ktap_rt_error(x, "event cannot be printed");
	seq_buf_init(&s, x->ctx->tmp, sizeof(x->ctx->tmp));
	err = ev->ops->tostring(x->vm, ev, &s);
	if (err == -EPERM)
		return ktap_rt_error(x, KTAP_MSG_NMI_FORMAT, ev->name);
	if (err)
		return ktap_rt_error(x, "cannot print event (%d)", err);
	str = ktap_str_temp(x, x->ctx->tmp, seq_buf_used(&s));
	if (!str)
		return ktap_obj_error(x, -ENOMEM);
	ktap_set_obj(ret, KTAP_TSTR, str);
	return 0;
}

/* Call a bound event method: e.tostring() or e.set_retval(v). */
static noinline int ktap_call_native(struct ktap_exec *x,
				     const struct ktap_value *f,
				     struct ktap_value *args, u32 nargs,
				     struct ktap_value *ret)
{
	unsigned long bits = (unsigned long)f->p;
	struct ktap_event *ev = (void *)(bits & ~1UL);
	const char *why;
	int err;

	if (ev != x->ev)
		return ktap_rt_error(x, "event method called outside its handler");
	if (nargs && args[0].type == KTAP_TEVENT) {	/* e:method() */
		args++;
		nargs--;
	}
	if (!(bits & 1))
		return ktap_event_tostring(x, ev, ret);
	if (!nargs || args[0].type != KTAP_TINT)
		return ktap_rt_error(x, "set_retval needs a number");
	why = "not possible on this probe";
	err = ev->ops && ev->ops->set_retval ?
	      ev->ops->set_retval(x->vm, ev, args[0].i, &why) : -EPERM;
	if (err)
		return ktap_rt_error(x, "e.set_retval(%lld) on %s refused: %s",
				     args[0].i, ev->name ?: "?", why);
	return 0;
}

static noinline int ktap_attach(struct ktap_exec *x, const struct ktap_value *f,
				u32 probe)
{
	const struct ktap_host_ops *ops = x->vm->host_ops;
	int err;

	if (!x->main)
		return ktap_rt_error(x, "probes can only be attached by the main chunk");
	if (f->type != KTAP_TFUNC)
		return ktap_rt_error(x, "probe handler is a %s value, not a function",
				     ktap_typename(f->type));
	if (!ops || !ops->attach)
		return 0;
	err = ops->attach(x->vm->host, probe, f->p);
	if (err)
		return ktap_rt_error(x, "cannot attach probe %u (error %d)",
				     probe, err);
	return 0;
}

static bool ktap_is_end_probe(struct ktap_vm *vm, struct ktap_event *ev)
{
	return !ev || (ev->probe < vm->nprobes &&
		       vm->probes[ev->probe].type == KTAP_PROBE_END);
}

/* The context rules of KTAP_BUILTINS' flags column. */
static noinline int ktap_builtin_allowed(struct ktap_exec *x,
					 const struct ktap_builtin_info *bi)
{
	if ((bi->flags & KTAP_BF_EVENT) && !x->ev)
		return ktap_rt_error(x, "%s() needs an event: not in the main chunk",
				     bi->name);
	if ((bi->flags & KTAP_BF_MAIN) && !x->main &&
	    !ktap_is_end_probe(x->vm, x->ev))
		return ktap_rt_error(x, "%s() only works in the main chunk and end handlers",
				     bi->name);
	return 0;
}

/* CONFIG_KTAP_DEBUG_VM: is @pc outside the code of proto @p? */
static inline bool ktap_pc_escaped(const struct ktap_vm *vm,
				   const struct ktap_bc_proto *p, const u32 *pc)
{
	return (u32)(pc - vm->code) - p->code_start >= p->ncode;
}

/* Register operands of instruction i in the current frame. */
#define RA	(&base[KTAP_A(i)])
#define RB	(&base[KTAP_B(i)])
#define RC	(&base[KTAP_C(i)])
#define KBX	(&vm->consts[KTAP_BX(i)])
#define KC	(&vm->consts[KTAP_C(i)])
#define KB	(&vm->consts[KTAP_B(i)])

/*
 * Lay out a frame of function @pi at @base: the arguments, then nil up
 * to the function's fill_end; the registers above it are written before
 * they are read (ktap_frame_fill()). For CALL and for the first frame
 * of a run; copying is not charged.
 */
static __always_inline void ktap_frame_init(const struct ktap_vm *vm,
					    struct ktap_value *base, u32 pi,
					    const struct ktap_value *args,
					    u32 nargs)
{
	/* locals: the stores below must not make the compiler reload them */
	u32 np = vm->protos[pi].nparams, end = vm->fill_end[pi];
	u32 j, n = min(np, nargs);

	for (j = 0; j < n; j++)
		base[j] = args[j];
	/* the rest the function writes before reading: see ktap_frame_fill() */
	for (; j < end; j++)
		ktap_set_nil(&base[j]);
	if (IS_ENABLED(CONFIG_KTAP_DEBUG_VM))
		for (; j < vm->protos[pi].nregs; j++)
			ktap_value_int(&base[j], KTAP_REG_POISON);
}

/**
 * ktap_execute - run closure @cl (or the main chunk) to completion
 * @x: the run
 * @cl: closure to run, NULL for the main chunk (proto 0)
 * @base: its frame, laid out by ktap_frame_init() on @x->ctx's stack
 * @retp: where the value it returns goes, or NULL
 *
 * Starts at call depth @x->depth with @x->budget instructions, charges
 * the function's length against them and leaves what is left there.
 * The caller checked that the frame fits the stack and the call depth:
 * a handler's frame at the bottom always does (255 registers, depth 0),
 * so the probe path pays for no check it cannot fail. A main chunk
 * checks for rescheduling and signals whenever the budget falls below
 * @x->check.
 *
 * Return: 0, KTAP_HALT after exit(), or a negative errno after a
 * runtime error (reported by the caller).
 */
static int ktap_execute(struct ktap_exec *x, struct ktap_closure *cl,
			struct ktap_value *base, struct ktap_value *retp)
{
#define __KTAP_LABEL(name, ...)	\
	[KTAP_OP_##name] = &&op_##name,
	static const void * const jumptable[KTAP_OP__COUNT] __annotate_jump_table = {
		KTAP_OPCODES(__KTAP_LABEL)
	};
#undef __KTAP_LABEL
	struct ktap_vm *vm = x->vm;
	struct ktap_ctx *ctx = x->ctx;
	struct ktap_value *stack = base;
	const struct ktap_bc_proto *p = &vm->protos[cl ? cl->proto : 0];
	const u32 *pc = vm->code + p->code_start;
	s64 budget = x->budget - p->ncode;
	/* x->depth: also where CALLB tells ktap_vm_call() the caller's */
	u32 depth0 = x->depth, depth = depth0, j, i;
	struct ktap_value ret;
	int err = 0;
	bool cond;

	if (unlikely(budget < x->check))
		goto tick;

	/*
	 * Dispatch. Kept to two instructions so that GCC can copy it into
	 * every opcode body (threaded code); -fno-gcse keeps it from
	 * merging them back, as for kernel/bpf/core.c.
	 */
next:
	if (IS_ENABLED(CONFIG_KTAP_DEBUG_VM) &&
	    unlikely(ktap_pc_escaped(vm, p, pc)))
		goto escaped;
	i = *pc++;
	goto *jumptable[KTAP_OP(i)];

op_MOVE:
	*RA = *RB;
	goto next;
op_LOADK:
	*RA = *KBX;
	goto next;
op_LOADI:
	ktap_value_int(RA, KTAP_SBX(i));
	goto next;
op_LOADBOOL:
	ktap_set_bool(RA, KTAP_B(i));
	goto next;
op_LOADNIL:
	for (j = 0; j <= KTAP_B(i); j++)
		ktap_set_nil(RA + j);
	goto next;
op_GETUPVAL:
	ktap_shared_read(vm, cl->upv[KTAP_B(i)]->v, RA);
	goto next;
op_SETUPVAL:
	err = ktap_shared_write(vm, cl->upv[KTAP_B(i)]->v, RA);
	if (unlikely(err))
		goto obj_fail;
	goto next;
op_GETGLOBAL:
	ktap_shared_read(vm, &vm->globals[KTAP_BX(i)], RA);
	goto next;
op_SETGLOBAL:
	err = ktap_shared_write(vm, &vm->globals[KTAP_BX(i)], RA);
	if (unlikely(err))
		goto obj_fail;
	goto next;
op_NEWTABLE: {
	struct ktap_table *t = x->transient ?
		ktap_table_new_temp(vm, KTAP_B(i), KTAP_C(i)) :
		ktap_table_new(vm, KTAP_B(i), KTAP_C(i));

	if (unlikely(!t)) {
		err = ktap_obj_error(x, -ENOMEM);
		goto fail;
	}
	ktap_set_obj(RA, KTAP_TTABLE, t);
	goto next;
}

op_GETTABLE:
	err = ktap_index(x, *RB, *RC, RA);
	if (unlikely(err))
		goto fail;
	goto next;
op_GETFIELD:
	err = ktap_index(x, *RB, *KC, RA);
	if (unlikely(err))
		goto fail;
	goto next;
op_SETTABLE:
	err = ktap_newindex(x, RA, RB, RC);
	if (unlikely(err))
		goto fail;
	goto next;
op_SETFIELD:
	err = ktap_newindex(x, RA, KB, RC);
	if (unlikely(err))
		goto fail;
	goto next;
op_INCTABLE:
	err = ktap_inctable(x, RA, RB, RC, false);
	if (unlikely(err))
		goto fail;
	goto next;
op_AGGR:
	err = ktap_inctable(x, RA, RB, RC, true);
	if (unlikely(err))
		goto fail;
	goto next;
op_ADD:
	if (unlikely(RB->type != KTAP_TINT || RC->type != KTAP_TINT))
		goto arith_fail;
	ktap_value_int(RA, (s64)((u64)RB->i + (u64)RC->i));
	goto next;
op_SUB:
	if (unlikely(RB->type != KTAP_TINT || RC->type != KTAP_TINT))
		goto arith_fail;
	ktap_value_int(RA, (s64)((u64)RB->i - (u64)RC->i));
	goto next;
op_MUL:
	if (unlikely(RB->type != KTAP_TINT || RC->type != KTAP_TINT))
		goto arith_fail;
	ktap_value_int(RA, (s64)((u64)RB->i * (u64)RC->i));
	goto next;
op_DIV:
op_MOD: {
	s64 res;

	if (unlikely(RB->type != KTAP_TINT || RC->type != KTAP_TINT)) {
		err = ktap_arith_error(x, RB, RC);
		goto fail;
	}
	err = ktap_div(x, KTAP_OP(i), RB->i, RC->i, &res);
	if (unlikely(err))
		goto fail;
	ktap_value_int(RA, res);
	goto next;
}

op_ADDK:
	if (unlikely(RB->type != KTAP_TINT))
		goto arith_fail;
	ktap_value_int(RA, (s64)((u64)RB->i + (u64)KC->i));
	goto next;
op_SUBK:
	if (unlikely(RB->type != KTAP_TINT))
		goto arith_fail;
	ktap_value_int(RA, (s64)((u64)RB->i - (u64)KC->i));
	goto next;
op_MULK:
	if (unlikely(RB->type != KTAP_TINT))
		goto arith_fail;
	ktap_value_int(RA, (s64)((u64)RB->i * (u64)KC->i));
	goto next;
op_DIVK:
op_MODK: {
	s64 res;

	if (unlikely(RB->type != KTAP_TINT)) {
		err = ktap_arith_error(x, RB, RB);
		goto fail;
	}
	err = ktap_div(x, KTAP_OP(i), RB->i, KC->i, &res);
	if (unlikely(err))
		goto fail;
	ktap_value_int(RA, res);
	goto next;
}

op_UNM:
	if (unlikely(RB->type != KTAP_TINT)) {
		err = ktap_arith_error(x, RB, RB);
		goto fail;
	}
	ktap_value_int(RA, (s64)(0 - (u64)RB->i));
	goto next;
op_NOT:
	ktap_set_bool(RA, !ktap_truthy(RB));
	goto next;
op_LEN:
	x->budget = budget;
	err = ktap_len(x, *RB, RA);
	budget = x->budget;
	if (unlikely(err))
		goto fail;
	if (unlikely(budget < x->check))
		goto tick;
	goto next;
op_CONCAT:
	err = ktap_concat(x, *RB, *RC, RA);
	if (unlikely(err))
		goto fail;
	goto next;
op_EQ:
	ktap_set_bool(RA, ktap_value_equal(RB, RC));
	goto next;
op_LT:
op_LE:
	err = ktap_compare(x, RB, RC, KTAP_OP(i) == KTAP_OP_LE, &cond);
	if (unlikely(err))
		goto fail;
	ktap_set_bool(RA, cond);
	goto next;
op_EQK:
	ktap_set_bool(RA, ktap_value_equal(RB, KC));
	goto next;
op_JMPT:
	if (!ktap_truthy(RA))
		goto next;
	/* taken: the JMP below */
op_JMP:
	pc += KTAP_SBX(i);
	if (KTAP_SBX(i) < 0)
		goto charge_loop;
	goto next;
op_JMPF:
	if (ktap_truthy(RA))
		goto next;
	pc += KTAP_SBX(i);
	if (KTAP_SBX(i) < 0)
		goto charge_loop;
	goto next;
op_CALL: {
	struct ktap_value *f = RA;
	const struct ktap_bc_proto *cp;
	struct ktap_closure *callee;
	struct ktap_value *nb;
	u32 nargs = KTAP_B(i);

	if (f->type == KTAP_TNATIVE) {
		ktap_set_nil(&ret);
		err = ktap_call_native(x, f, f + 1, nargs, &ret);
		if (unlikely(err))
			goto fail;
		/* a native method has one value */
		if (KTAP_C(i))
			*RA = ret;
		for (j = 1; j < KTAP_C(i); j++)
			ktap_set_nil(&RA[j]);
		goto next;
	}
	if (unlikely(f->type != KTAP_TFUNC)) {
		err = ktap_rt_error(x, "attempt to call a %s value",
				    ktap_typename(f->type));
		goto fail;
	}
	callee = f->p;
	cp = &vm->protos[callee->proto];
	nb = base + p->nregs;
	if (unlikely(depth + 1 >= KTAP_MAX_CALL_DEPTH)) {
		err = ktap_rt_error(x, "call depth exceeded (%d)",
				    KTAP_MAX_CALL_DEPTH);
		goto fail;
	}
	if (unlikely(nb + cp->nregs > ctx->stack + KTAP_STACK_SLOTS)) {
		err = ktap_rt_error(x, "stack overflow");
		goto fail;
	}
	ktap_frame_init(vm, nb, callee->proto, f + 1, nargs);
	ctx->frames[depth] = (struct ktap_frame) {
		.cl = cl, .pc = pc, .base = base, .p = p,
		.ret_reg = KTAP_A(i), .nret = KTAP_C(i),
	};
	depth++;
	cl = callee;
	p = cp;
	base = nb;
	pc = vm->code + p->code_start;
	budget -= p->ncode;
	if (unlikely(budget < x->check))
		goto tick;
	goto next;
}

op_CALLB: {
	const struct ktap_builtin_info *bi =
		&ktap_builtin_table[vm->builtins[KTAP_C(i)]];

	if (unlikely(bi->flags)) {
		err = ktap_builtin_allowed(x, bi);
		if (err)
			goto fail;
	}
	x->pc = pc - 1 - vm->code;
	x->budget = budget;
	x->top = base + p->nregs;
	x->depth = depth;
	/* the result goes straight to A: below the arguments and callbacks */
	ktap_set_nil(RA);
	err = bi->fn(x, RA, RA + 1, KTAP_B(i));
	budget = x->budget;
	if (unlikely(err)) {
		ktap_set_nil(&ret);
		goto out;	/* x->pc: this call, or a callback's error */
	}
	if (unlikely(budget < x->check))
		goto tick;
	goto next;
}

op_RETURN: {
	struct ktap_value *rv = RA, *dst;
	u32 nval = KTAP_B(i), nret;

	if (depth == depth0) {
		/* out of the run's function: a handler's every return */
		ktap_close_upvals(x, stack);
		x->budget = budget;
		if (retp) {
			if (nval)
				*retp = *rv;
			else
				ktap_set_nil(retp);
		}
		return 0;
	}
	ktap_close_upvals(x, base);
	depth--;
	cl = ctx->frames[depth].cl;
	pc = ctx->frames[depth].pc;
	base = ctx->frames[depth].base;
	p = ctx->frames[depth].p;
	/*
	 * The callee's frame lies above the caller's whole frame, so the
	 * values and their destination never overlap. The verifier
	 * bounded both counts by the frame sizes; copying them is not
	 * charged, like the arguments CALL copies.
	 */
	nret = ctx->frames[depth].nret;
	dst = base + ctx->frames[depth].ret_reg;
	for (j = 0; j < nret; j++) {
		if (j < nval)
			dst[j] = rv[j];
		else
			ktap_set_nil(&dst[j]);
	}
	goto next;
}

op_ITERNEXT: {
	struct ktap_value *ra = RA;
	struct ktap_iter *it;
	u32 pos;

	if (unlikely(ra->type != KTAP_TITER)) {
		err = ktap_rt_error(x, "for-in needs an iterator (pairs), not a %s value",
				    ktap_typename(ra->type));
		goto fail;
	}
	it = ra->p;
	pos = READ_ONCE(it->pos);
	if (pos < it->n) {
		WRITE_ONCE(it->pos, pos + 1);
		ra[1] = it->e[pos].key;
		ra[2] = it->e[pos].val;
		pc += KTAP_SBX(i);
		if (KTAP_SBX(i) < 0)
			goto charge_loop;
	}
	goto next;
}

op_CLOSURE: {
	struct ktap_closure *ncl = ktap_new_closure(x, cl, KTAP_BX(i), base);

	if (unlikely(!ncl)) {
		err = ktap_obj_error(x, -ENOMEM);
		goto fail;
	}
	ktap_set_obj(RA, KTAP_TFUNC, ncl);
	goto next;
}

op_ATTACH:
	err = ktap_attach(x, RA, KTAP_BX(i));
	if (unlikely(err))
		goto fail;
	goto next;
op_EVFIELD: {
	/*
	 * A field with a fixed place is a load, done here: two calls and
	 * an indirect one cost more than the rest of a simple handler.
	 */
	const struct ktap_event *ev = x->ev;
	const struct ktap_field_load *ld;
	const char *src;
	s64 v;

	if (unlikely(!ev || !ev->loads || KTAP_BX(i) >= ev->loads->n))
		goto evfield_call;
	ld = &ev->loads->l[KTAP_BX(i)];
	src = ld->base == KTAP_FL_REGS ? (const char *)ev->regs : ev->rec;
	if (unlikely(!src || ld->end > ev->rec_size))
		goto evfield_call;
	if (unlikely(!ktap_field_load_value(src + ld->off, ld->type, &v)))
		goto evfield_call;
	ktap_value_int(RA, v);
	goto next;
}

evfield_call:
	err = ktap_evfield(x, KTAP_BX(i), RA);
	if (unlikely(err))
		goto fail;
	goto next;

	/* A backward jump: charge the loop's length (see the top). */
charge_loop:
	budget += KTAP_SBX(i);
	if (unlikely(budget < x->check))
		goto tick;
	goto next;
obj_fail:
	err = ktap_obj_error(x, err);
	goto fail;
arith_fail:
	err = ktap_arith_error(x, RB, ktap_opinfo[KTAP_OP(i)].kind[2] ==
			       KTAP_OPK_REG ? RC : RB);
	goto fail;
tick:
	if (budget < 0) {
		err = ktap_rt_error(x, "instruction budget exceeded (%u)",
				    x->main ? vm->main_budget : vm->insn_budget);
		goto fail_here;
	}
	if (x->main) {
		cond_resched();
		if (signal_pending(current)) {
			err = ktap_rt_error(x, "interrupted");
			goto fail_here;
		}
		x->check = max_t(s64, budget - KTAP_MAIN_SLICE, 0);
	}
	goto next;

escaped:
	WARN_ONCE(1, "ktap: pc %td left proto %td [%u, +%u): verifier bug\n",
		  pc - vm->code, p - vm->protos, p->code_start, p->ncode);
	err = ktap_rt_error(x, "internal error: control left the function");
	x->pc = p->code_start;
	goto out;
fail_here:
	pc++;		/* blame the instruction about to run */
fail:
	x->pc = pc - 1 - vm->code;
out:
	ktap_close_upvals(x, stack);
	x->budget = budget;
	/* every way here without an error set ret */
	if (retp && err >= 0)
		*retp = ret;
	return err;
}

/**
 * ktap_vm_call - call a script function from a builtin
 * @x: the run the builtin was called from
 * @fn: the function (a KTAP_TFUNC value)
 * @args: its arguments
 * @nargs: how many
 * @ret: where its return value goes
 *
 * Runs @fn to completion on the stack above the builtin's caller, one
 * call level deeper, charging the run's instruction budget. Any context
 * the run itself may be in; at most KTAP_MAX_CALLBACK_DEPTH of these
 * nest, as each one recurses on the kernel stack.
 *
 * Return: 0, KTAP_HALT after exit(), or the runtime error (its message
 * in the run's context, @x->pc at the failing instruction).
 */
int ktap_vm_call(struct ktap_exec *x, const struct ktap_value *fn,
		 const struct ktap_value *args, u32 nargs,
		 struct ktap_value *ret)
{
	struct ktap_value *top = x->top;
	u32 depth = x->depth, pc = x->pc;
	const struct ktap_bc_proto *p;
	struct ktap_closure *cl;
	int err;

	if (fn->type != KTAP_TFUNC)
		return ktap_rt_error(x, "attempt to call a %s value",
				     ktap_typename(fn->type));
	if (x->callbacks >= KTAP_MAX_CALLBACK_DEPTH)
		return ktap_rt_error(x, "callbacks nested too deeply (%d)",
				     KTAP_MAX_CALLBACK_DEPTH);
	cl = fn->p;
	p = &x->vm->protos[cl->proto];
	/* mid-stack, above the builtin's caller: check what CALL checks */
	if (depth + 2 >= KTAP_MAX_CALL_DEPTH)
		return ktap_rt_error(x, "call depth exceeded (%d)",
				     KTAP_MAX_CALL_DEPTH);
	if (top + p->nregs > x->ctx->stack + KTAP_STACK_SLOTS)
		return ktap_rt_error(x, "stack overflow");
	ktap_frame_init(x->vm, top, cl->proto, args, nargs);
	x->callbacks++;
	x->depth = depth + 1;
	err = ktap_execute(x, cl, top, ret);
	x->top = top;
	x->depth = depth;
	x->callbacks--;
	if (!err)
		x->pc = pc;
	return err;
}

/**
 * ktap_vm_run_main - run the main chunk
 * @vm: a loaded VM
 *
 * Process context; preemptible. ATTACH instructions call
 * host_ops->attach. A runtime error is reported through host_ops.
 *
 * Return: 0 (also after exit()), -ENOMEM, or the runtime error.
 */
int ktap_vm_run_main(struct ktap_vm *vm)
{
	struct ktap_exec x = { .vm = vm, .main = true };
	int err;

	might_sleep();
	x.ctx = vzalloc(sizeof(*x.ctx));
	if (!x.ctx)
		return -ENOMEM;
	x.budget = vm->main_budget;
	x.check = max_t(s64, x.budget - KTAP_MAIN_SLICE, 0);
	ktap_frame_init(vm, x.ctx->stack, 0, NULL, 0);
	err = ktap_execute(&x, NULL, x.ctx->stack, NULL);
	if (err < 0)
		ktap_report(&x, err);
	vfree(x.ctx);
	return err < 0 ? err : 0;
}

/*
 * A CPU's interrupt-context handler time is bounded by charging each
 * such run twice its duration against the CPU: while the charge reaches
 * more than KTAP_BUSY_SLACK_NS into the future, the session's handlers
 * in interrupt context on that CPU are skipped (counted in stats.drops).
 * They thus use at most about half of a CPU over time, however often
 * their probes fire, however many there are and however close to its
 * budget each run comes; a burst up to the slack runs untouched. The
 * budget alone cannot give this: 4,096 timers whose handlers run just
 * under budget can fill a CPU with hardirq work and starve the task
 * that would stop them.
 *
 * Runs in task context are not charged: their time is the firing
 * task's own, and the task can be preempted between runs. Throttling
 * them would drop the events of an ordinary hot path (a loop of cheap
 * system calls traced by a handler that costs more than the call).
 *
 * The clock is ktime_get_mono_fast_ns(), not local_clock(): when
 * sched_clock is not stable (a guest whose TSC was marked unstable),
 * local_clock() advances at most one tick past this CPU's last tick,
 * and the last tick is exactly what a CPU flooded with hardirq handlers
 * does not get, so every run would measure as free. The fast
 * timekeeper reads the clocksource itself and is NMI safe.
 */
#define KTAP_BUSY_SLACK_NS	(10 * NSEC_PER_MSEC)

static __always_inline int ktap_fire(struct ktap_vm *vm,
				     struct ktap_closure *fn,
				     struct ktap_event *ev, s64 *budget,
				     bool end)
{
	struct ktap_value arg = { .type = KTAP_TEVENT, .p = ev };
	struct ktap_exec x = { .vm = vm, .ev = ev };
	bool charged = !end && !in_task();
	u64 t0 = 0, t1;
	int err;

	preempt_disable_notrace();
	if (this_cpu_cmpxchg(ktap_running, NULL, &x)) {
		atomic64_inc(&vm->recursion);
		preempt_enable_notrace();
		return -EBUSY;
	}
	x.ctx = vm->cpu_ctx[smp_processor_id()];
	if (charged) {
		t0 = ktime_get_mono_fast_ns();
		if (unlikely(t0 + KTAP_BUSY_SLACK_NS < x.ctx->busy_until)) {
			atomic64_inc(&vm->throttled);
			err = -EBUSY;
			goto out;
		}
	}
	x.ctx->hits++;
	/* the previous firing's short-lived objects are dead: reuse them */
	x.ctx->temp_used = 0;
	x.transient = !end;
	x.budget = *budget;
	ktap_frame_init(vm, x.ctx->stack, fn->proto, &arg, ev ? 1 : 0);
	err = ktap_execute(&x, fn, x.ctx->stack, NULL);
	if (err < 0)
		ktap_report(&x, err);
	*budget = x.budget;
	if (charged) {
		t1 = ktime_get_mono_fast_ns();
		if (t1 > t0)
			x.ctx->busy_until = max(x.ctx->busy_until, t0) +
					    2 * (t1 - t0);
	}
out:
	this_cpu_write(ktap_running, NULL);
	preempt_enable_notrace();
	return err < 0 ? err : 0;
}

/**
 * ktap_vm_fire - run handler @fn for event @ev
 * @vm: the session's VM
 * @fn: the closure ATTACH recorded
 * @ev: the event (its first argument), or NULL; not an END probe's:
 *	END handlers run through ktap_vm_fire_end()
 *
 * Any context, including NMI; never sleeps. After exit() or a runtime
 * error only END handlers (and @ev == NULL runs) still run. A run may
 * be skipped when the session's interrupt-context handlers used more
 * than their share of this CPU (see KTAP_BUSY_SLACK_NS).
 *
 * Return: 0, -EBUSY when skipped (ktap already runs on this CPU, or the
 * CPU's share is used up), -ESHUTDOWN when the session is halted, or the
 * runtime error.
 */
int ktap_vm_fire(struct ktap_vm *vm, struct ktap_closure *fn,
		 struct ktap_event *ev)
{
	s64 budget = vm->insn_budget;

	if (unlikely(atomic_read(&vm->halted)) && ev)
		return -ESHUTDOWN;
	return ktap_fire(vm, fn, ev, &budget, !ev);
}

/**
 * ktap_vm_fire_end - run an END handler on a budget shared with others
 * @vm: the session's VM
 * @fn: the closure ATTACH recorded for a KTAP_PROBE_END probe
 * @ev: its event
 * @budget: instructions left to the session's END handlers; updated
 *
 * Process context, once per END handler at STOP. However many END
 * handlers the main chunk recorded, together they run at most one
 * instruction budget: once it is spent the rest are skipped.
 *
 * Return: 0, -E2BIG when skipped for want of budget, or as ktap_vm_fire().
 */
int ktap_vm_fire_end(struct ktap_vm *vm, struct ktap_closure *fn,
		     struct ktap_event *ev, s64 *budget)
{
	if (*budget <= 0)
		return -E2BIG;
	return ktap_fire(vm, fn, ev, budget, true);
}

/**
 * ktap_value_str - make a string value for the VM
 * @vm: the VM
 * @out: the value
 * @s: bytes (need not be NUL-terminated)
 * @len: length, truncated to the VM's longest string
 *
 * Inside a handler the string is temporary (it becomes permanent only
 * if the script stores it); otherwise it is interned in the pool.
 *
 * Return: 0 or -ENOMEM.
 */
int ktap_value_str(struct ktap_vm *vm, struct ktap_value *out,
		   const char *s, size_t len)
{
	struct ktap_exec *x = this_cpu_read(ktap_running);
	struct ktap_str *str;

	len = min_t(size_t, len, KTAP_STR_MAX);
	if (x && x->vm == vm)
		str = ktap_str_temp(x, s, len);
	else
		str = ktap_str_intern(vm, s, len);
	if (!str)
		return -ENOMEM;
	ktap_set_obj(out, KTAP_TSTR, str);
	return 0;
}

/**
 * ktap_vm_stats - counters for KTAP_IOC_STATS
 * @vm: the VM
 * @st: filled in
 */
void ktap_vm_stats(struct ktap_vm *vm, struct ktap_vm_stats *st)
{
	int cpu;

	memset(st, 0, sizeof(*st));
	for_each_possible_cpu(cpu)
		st->hits += READ_ONCE(vm->cpu_ctx[cpu]->hits);
	st->recursion = atomic64_read(&vm->recursion);
	st->errors = atomic64_read(&vm->errors);
	st->drops = atomic64_read(&vm->drops);
	st->throttled = atomic64_read(&vm->throttled);
	st->keys_dropped = atomic64_read(&vm->keys_dropped);
	st->mem_used = min_t(u64, atomic_long_read(&vm->pool.used),
			     vm->pool.size);
	st->mem_limit = vm->pool.size;
}
