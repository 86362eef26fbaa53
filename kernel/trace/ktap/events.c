// SPDX-License-Identifier: GPL-2.0
/*
 * ktap probes: attach the handlers a script's main chunk recorded, and
 * give the VM access to the event being handled.
 *
 *  - Tracepoints (any ftrace event, syscalls included) are reached
 *    through kernel perf counters, one per event and online CPU, which
 *    works from a module without touching ftrace internals. The overflow
 *    handler may run in NMI. The raw record perf hands over is the same
 *    record ftrace writes, so fields are read by name through the
 *    event's field list and printed by the event's own output function.
 *  - Kprobes and kretprobes; e.set_retval() only from a probe the image
 *    marks KTAP_PROBE_F_OVERRIDE: a kprobe at the entry of a function
 *    the kernel lists as error-injectable. The function's body is then
 *    skipped, as bpf_override_return() does, so callers never see a
 *    failure after its side effects happened.
 *  - Uprobes and uretprobes on a path and file offset.
 *  - Timers (tick-N: one hrtimer) and profile-N (a cpu-clock perf event
 *    on every online CPU, so the handler sees the interrupted context).
 *  - END handlers run at STOP, in process context.
 *
 * CPUs that come online after START are not traced (the per-CPU kinds
 * create their counters for the CPUs online at START).
 */

#define pr_fmt(fmt) "ktap: " fmt

#include <linux/cleanup.h>
#include <linux/cpu.h>
#include <linux/err.h>
#include <linux/error-injection.h>
#include <linux/hrtimer.h>
#include <linux/kprobes.h>
#include <linux/namei.h>
#include <linux/perf_event.h>
#include <linux/ptrace.h>
#include <linux/security.h>
#include <linux/slab.h>
#include <linux/trace_events.h>
#include <linux/tracepoint.h>
#include <linux/unaligned.h>
#include <linux/uprobes.h>
#include <trace/syscall.h>
#include <asm/irq_regs.h>
#include <asm/syscall.h>
#include <asm/unistd.h>

#include "../trace.h"
#include "../trace_output.h"
#include "events.h"

/* Shortest timer or profile period a script may ask for. */
#define KTAP_MIN_PERIOD_NS	(10 * NSEC_PER_USEC)
/* Perf counters one tracepoint probe may create. */
#define KTAP_MAX_PERF_EVENTS	65536

/* Event-name buffer of the synthetic kinds (timers, profile, end). */
#define KTAP_NAME_LEN		32

static bool ktap_name_is(const char *name, u32 len, const char *lit)
{
	return strlen(lit) == len && !memcmp(name, lit, len);
}

static int ktap_no_set_retval(struct ktap_vm *vm, struct ktap_event *ev,
			      s64 v, const char **why)
{
	*why = "only a kprobe at the entry of an error-injectable function can set a return value";
	return -EPERM;
}

/* The raw syscall tracepoints, for the syscall fast path. */
static struct tracepoint *ktap_tp_sys_enter, *ktap_tp_sys_exit;

static void ktap_find_sys_tp(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "sys_enter"))
		ktap_tp_sys_enter = tp;
	else if (!strcmp(tp->name, "sys_exit"))
		ktap_tp_sys_exit = tp;
}

/*
 * Scratch trace iterators, one per CPU, for printing records with the
 * events' own output functions. Allocated while a session exists.
 */
static struct trace_iterator **ktap_iters;
static unsigned int ktap_users;
static DEFINE_MUTEX(ktap_users_lock);
static DEFINE_PER_CPU(int, ktap_iter_busy);

static void ktap_free_iters(void)
{
	int cpu;

	if (!ktap_iters)
		return;
	for_each_possible_cpu(cpu)
		kvfree(ktap_iters[cpu]);
	kfree(ktap_iters);
	ktap_iters = NULL;
}

/**
 * ktap_events_get - take a reference on the shared probe state
 *
 * Called when a session is created; allocates the per-CPU scratch
 * iterators for the first one.
 *
 * Return: 0 or -ENOMEM.
 */
int ktap_events_get(void)
{
	int cpu;

	guard(mutex)(&ktap_users_lock);
	if (ktap_users++)
		return 0;
	if (!ktap_tp_sys_enter)
		for_each_kernel_tracepoint(ktap_find_sys_tp, NULL);
	ktap_iters = kcalloc(nr_cpu_ids, sizeof(*ktap_iters), GFP_KERNEL);
	if (!ktap_iters)
		goto err;
	for_each_possible_cpu(cpu) {
		ktap_iters[cpu] = kvzalloc_node(sizeof(*ktap_iters[cpu]),
						GFP_KERNEL, cpu_to_node(cpu));
		if (!ktap_iters[cpu])
			goto err;
	}
	return 0;
err:
	ktap_free_iters();
	ktap_users--;
	return -ENOMEM;
}

/* Drop the reference taken by ktap_events_get(). */
void ktap_events_put(void)
{
	guard(mutex)(&ktap_users_lock);
	if (!--ktap_users)
		ktap_free_iters();
}

/* ---- tracepoints ---- */

/**
 * struct ktap_tp_event - a tracepoint firing
 * @ev: what the VM sees
 * @call: the ftrace event
 * @rec: the raw record (struct trace_entry first)
 * @size: bytes at @rec
 */
struct ktap_tp_event {
	struct ktap_event	ev;
	struct trace_event_call	*call;
	void			*rec;
	u32			size;
};

struct ktap_sc;

/*
 * Attachment of a tracepoint probe: the syscall events it reaches
 * directly (@sc, or NULL) and perf counters for all other events.
 */
struct ktap_tp {
	struct ktap_sc		*sc;
	u32			nr;
	struct perf_event	*events[] __counted_by(nr);
};

enum ktap_sc_kind {
	KTAP_SC_NONE,
	KTAP_SC_ENTER,		/* syscalls:sys_enter_* */
	KTAP_SC_EXIT,		/* syscalls:sys_exit_* */
	KTAP_SC_RAW_ENTER,	/* raw_syscalls:sys_enter */
	KTAP_SC_RAW_EXIT,	/* raw_syscalls:sys_exit */
};

/* raw_syscalls records, as include/trace/events/syscalls.h lays them out */
struct ktap_raw_sys_enter {
	struct trace_entry	ent;
	long			id;
	unsigned long		args[6];
};

struct ktap_raw_sys_exit {
	struct trace_entry	ent;
	long			id;
	long			ret;
};

static enum ktap_sc_kind ktap_sc_kind(struct ktap_tp_event *tev)
{
	struct trace_event_call *call = tev->call;
	const char *sys = call->class->system;
	struct syscall_metadata *meta;

	if (!sys)
		return KTAP_SC_NONE;
	if (!strcmp(sys, "syscalls")) {
		meta = call->data;
		if (!meta)
			return KTAP_SC_NONE;
		if (meta->enter_event == call &&
		    tev->size >= sizeof(struct syscall_trace_enter) +
				 meta->nb_args * sizeof(unsigned long))
			return KTAP_SC_ENTER;
		if (meta->exit_event == call &&
		    tev->size >= sizeof(struct syscall_trace_exit))
			return KTAP_SC_EXIT;
		return KTAP_SC_NONE;
	}
	if (!strcmp(sys, "raw_syscalls")) {
		if (!strcmp(tev->ev.name, "sys_enter") &&
		    tev->size >= sizeof(struct ktap_raw_sys_enter))
			return KTAP_SC_RAW_ENTER;
		if (!strcmp(tev->ev.name, "sys_exit") &&
		    tev->size >= sizeof(struct ktap_raw_sys_exit))
			return KTAP_SC_RAW_EXIT;
	}
	return KTAP_SC_NONE;
}

/*
 * Syscall view of a record: number, arguments (up to 6) or return value.
 * Returns false when the record is not a syscall event.
 */
static bool ktap_sc_view(struct ktap_tp_event *tev, bool *enter, long *nr,
			 const unsigned long **args, int *nargs, long *ret)
{
	switch (ktap_sc_kind(tev)) {
	case KTAP_SC_ENTER: {
		struct syscall_trace_enter *r = tev->rec;
		struct syscall_metadata *meta = tev->call->data;

		*enter = true;
		*nr = r->nr;
		*args = r->args;
		*nargs = meta->nb_args;
		return true;
	}
	case KTAP_SC_EXIT: {
		struct syscall_trace_exit *r = tev->rec;

		*enter = false;
		*nr = r->nr;
		*ret = r->ret;
		return true;
	}
	case KTAP_SC_RAW_ENTER: {
		struct ktap_raw_sys_enter *r = tev->rec;

		*enter = true;
		*nr = r->id;
		*args = r->args;
		*nargs = ARRAY_SIZE(r->args);
		return true;
	}
	case KTAP_SC_RAW_EXIT: {
		struct ktap_raw_sys_exit *r = tev->rec;

		*enter = false;
		*nr = r->id;
		*ret = r->ret;
		return true;
	}
	default:
		return false;
	}
}

/* e.sc_nr, e.sc_is_enter, e.sc_arg1..6, e.retval */
static int ktap_sc_field(struct ktap_tp_event *tev, const char *name, u32 len,
			 struct ktap_value *out)
{
	const unsigned long *args = NULL;
	bool enter;
	long nr, ret = 0;
	int nargs = 0;

	if (len < 5 || (memcmp(name, "sc_", 3) && !ktap_name_is(name, len, "retval")))
		return -ENOENT;
	if (!ktap_sc_view(tev, &enter, &nr, &args, &nargs, &ret))
		return -ENOENT;
	if (ktap_name_is(name, len, "sc_nr")) {
		ktap_value_int(out, nr);
		return 0;
	}
	if (ktap_name_is(name, len, "sc_is_enter")) {
		ktap_value_bool(out, enter);
		return 0;
	}
	if (ktap_name_is(name, len, "retval")) {
		if (enter)
			return -ENOENT;
		ktap_value_int(out, ret);
		return 0;
	}
	if (len == 7 && !memcmp(name, "sc_arg", 6) && name[6] >= '1' &&
	    name[6] <= '6') {
		int i = name[6] - '1';

		if (!enter)
			return -ENOENT;
		ktap_value_int(out, i < nargs ? (s64)args[i] : 0);
		return 0;
	}
	return -ENOENT;
}

/* Common fields every record starts with. */
static int ktap_common_field(struct ktap_tp_event *tev, const char *name,
			     u32 len, struct ktap_value *out)
{
	struct trace_entry *ent = tev->rec;

	if (len < 7 || memcmp(name, "common_", 7))
		return -ENOENT;
	if (ktap_name_is(name, len, "common_pid"))
		ktap_value_int(out, ent->pid);
	else if (ktap_name_is(name, len, "common_type"))
		ktap_value_int(out, ent->type);
	else if (ktap_name_is(name, len, "common_flags"))
		ktap_value_int(out, ent->flags);
	else if (ktap_name_is(name, len, "common_preempt_count"))
		ktap_value_int(out, ent->preempt_count);
	else
		return -ENOENT;
	return 0;
}

/* Decode one field of a record into a script value. */
static int ktap_field_value(struct ktap_vm *vm, struct ktap_tp_event *tev,
			    struct ftrace_event_field *f,
			    struct ktap_value *out)
{
	const char *rec = tev->rec;
	const char *p = rec + f->offset;
	u32 loc, off, len;

	if (f->offset < 0 || f->size < 0 || f->offset + f->size > tev->size)
		return -ENOENT;

	switch (f->filter_type) {
	case FILTER_DYN_STRING:
	case FILTER_RDYN_STRING:
		if (f->size != sizeof(u32))
			return -ENOENT;
		loc = *(const u32 *)p;
		off = loc & 0xffff;
		len = loc >> 16;
		if (f->filter_type == FILTER_RDYN_STRING)
			off += f->offset + sizeof(u32);
		if (off > tev->size || len > tev->size - off)
			return -ENOENT;
		return ktap_value_str(vm, out, rec + off, strnlen(rec + off, len));
	case FILTER_STATIC_STRING:
	case FILTER_COMM:
		return ktap_value_str(vm, out, p, strnlen(p, f->size));
	default:
		break;
	}

	switch (f->size) {
	case 1:
		ktap_value_int(out, f->is_signed ? *(s8 *)p : *(u8 *)p);
		return 0;
	case 2:
		ktap_value_int(out, f->is_signed ? *(s16 *)p : *(u16 *)p);
		return 0;
	case 4:
		ktap_value_int(out, f->is_signed ? get_unaligned((s32 *)p) :
						   get_unaligned((u32 *)p));
		return 0;
	case 8:
		ktap_value_int(out, get_unaligned((s64 *)p));
		return 0;
	default:
		/* Arrays and structs have no script value. */
		return -ENOENT;
	}
}

static int ktap_tp_field(struct ktap_vm *vm, struct ktap_event *ev,
			 const char *name, u32 len, struct ktap_value *out)
{
	struct ktap_tp_event *tev = container_of(ev, struct ktap_tp_event, ev);
	struct ftrace_event_field *f;
	struct list_head *head;
	int ret;

	if (ktap_name_is(name, len, "name"))
		return ktap_value_str(vm, out, ev->name, strlen(ev->name));
	ret = ktap_sc_field(tev, name, len, out);
	if (ret != -ENOENT)
		return ret;
	ret = ktap_common_field(tev, name, len, out);
	if (ret != -ENOENT)
		return ret;
	head = trace_get_fields(tev->call);
	if (!head)
		return -ENOENT;
	list_for_each_entry(f, head, link) {
		if (f->name && ktap_name_is(name, len, f->name))
			return ktap_field_value(vm, tev, f, out);
	}
	return -ENOENT;
}

/*
 * argN: for syscalls arg0 is the number and arg1.. the arguments (or
 * arg1 the return value); otherwise the N-th field in declaration order.
 */
static int ktap_tp_arg(struct ktap_vm *vm, struct ktap_event *ev, int n,
		       struct ktap_value *out)
{
	struct ktap_tp_event *tev = container_of(ev, struct ktap_tp_event, ev);
	const unsigned long *args = NULL;
	struct ftrace_event_field *f;
	struct list_head *head;
	int nargs = 0, nf = 0;
	long nr, ret = 0;
	bool enter;

	if (n < 0)
		return -ENOENT;
	if (ktap_sc_view(tev, &enter, &nr, &args, &nargs, &ret)) {
		if (n == 0)
			ktap_value_int(out, nr);
		else if (enter && n <= nargs)
			ktap_value_int(out, args[n - 1]);
		else if (!enter && n == 1)
			ktap_value_int(out, ret);
		else
			return -ENOENT;
		return 0;
	}
	head = trace_get_fields(tev->call);
	if (!head)
		return -ENOENT;
	/* The list holds the fields last declared first. */
	list_for_each_entry(f, head, link)
		nf++;
	list_for_each_entry(f, head, link) {
		if (--nf == n)
			return ktap_field_value(vm, tev, f, out);
	}
	return -ENOENT;
}

/* Copy what an output function printed, without its final newline. */
static void ktap_put_seq(struct seq_buf *s, struct trace_seq *ts)
{
	int len = trace_seq_used(ts);

	while (len > 0 && ts->buffer[len - 1] == '\n')
		len--;
	seq_buf_printf(s, "%.*s", len, ts->buffer);
}

static int ktap_tp_tostring(struct ktap_vm *vm, struct ktap_event *ev,
			    struct seq_buf *s)
{
	struct ktap_tp_event *tev = container_of(ev, struct ktap_tp_event, ev);
	struct trace_event *te = &tev->call->event;
	struct trace_iterator *iter;
	int ret = 0;

	if (!te->funcs || !te->funcs->trace) {
		seq_buf_puts(s, ev->name);
		return 0;
	}
	/* One iterator per CPU: a nested firing on this CPU goes without. */
	if (this_cpu_inc_return(ktap_iter_busy) != 1) {
		ret = -EBUSY;
		goto out;
	}
	iter = ktap_iters[smp_processor_id()];
	trace_seq_init(&iter->seq);
	trace_seq_init(&iter->tmp_seq);
	iter->tr = NULL;
	iter->ent = tev->rec;
	iter->ent_size = tev->size;
	iter->cpu = smp_processor_id();
	te->funcs->trace(iter, 0, te);
	ktap_put_seq(s, &iter->seq);
out:
	this_cpu_dec(ktap_iter_busy);
	return ret;
}

static const struct ktap_event_ops ktap_tp_ops = {
	.field		= ktap_tp_field,
	.tostring	= ktap_tp_tostring,
	.arg		= ktap_tp_arg,
	.set_retval	= ktap_no_set_retval,
};

/*
 * Syscall events on the fast path: instead of one perf counter per event
 * and CPU (perf's software-event path on every syscall), one probe on the
 * sys_enter and one on the sys_exit tracepoint per handler. The probe
 * builds the same record the syscall event would hold, on the stack, and
 * fires only for the syscalls the script asked for (a bitmap test).
 */
/**
 * struct ktap_sc - syscall events of one handler
 * @h: the handler
 * @raw_enter: raw_syscalls:sys_enter, when asked for
 * @raw_exit: raw_syscalls:sys_exit, when asked for
 * @on_enter: registered on the sys_enter tracepoint
 * @on_exit: registered on the sys_exit tracepoint
 * @enter: syscall numbers whose syscalls:sys_enter_* event is asked for
 * @exit: the same for syscalls:sys_exit_*
 * @meta: syscall metadata by number (its enter_event and exit_event)
 */
struct ktap_sc {
	struct ktap_handler		*h;
	struct trace_event_call		*raw_enter;
	struct trace_event_call		*raw_exit;
	bool				on_enter;
	bool				on_exit;
	DECLARE_BITMAP(enter, NR_syscalls);
	DECLARE_BITMAP(exit, NR_syscalls);
	struct syscall_metadata		*meta[NR_syscalls];
};

/* A record as big as the largest syscall event record. */
union ktap_sc_rec {
	struct syscall_trace_enter	enter;
	struct syscall_trace_exit	exit;
	struct ktap_raw_sys_enter	raw_enter;
	struct ktap_raw_sys_exit	raw_exit;
	unsigned long			space[(sizeof(struct syscall_trace_enter) +
					       6 * sizeof(long)) / sizeof(long) + 1];
};

static void ktap_sc_entry(struct trace_entry *ent, struct trace_event_call *call)
{
	ent->type = call->event.type;
	ent->flags = 0;
	ent->preempt_count = preempt_count() & 0xff;
	ent->pid = current->pid;
}

static void ktap_sc_fire(struct ktap_sc *sc, struct trace_event_call *call,
			 union ktap_sc_rec *rec, u32 size, struct pt_regs *regs)
{
	struct ktap_tp_event tev = {
		.ev = { .ops = &ktap_tp_ops, .regs = regs },
		.call = call,
		.rec = rec,
		.size = size,
	};

	ktap_sc_entry(&rec->enter.ent, call);
	tev.ev.name = trace_event_name(call) ?: "";
	ktap_handler_fire(sc->h, &tev.ev);
}

static bool ktap_sc_compat(struct pt_regs *regs)
{
#ifdef arch_trace_is_compat_syscall
	return arch_trace_is_compat_syscall(regs);
#else
	return false;
#endif
}

static void ktap_sc_enter_probe(void *data, struct pt_regs *regs, long id)
{
	struct ktap_sc *sc = data;
	struct syscall_metadata *meta;
	union ktap_sc_rec rec;

	if (id < 0 || id >= NR_syscalls || ktap_sc_compat(regs))
		return;
	if (sc->raw_enter) {
		rec.raw_enter.id = id;
		syscall_get_arguments(current, regs, rec.raw_enter.args);
		ktap_sc_fire(sc, sc->raw_enter, &rec, sizeof(rec.raw_enter), regs);
	}
	if (!test_bit(id, sc->enter))
		return;
	meta = sc->meta[id];
	rec.enter.nr = id;
	syscall_get_arguments(current, regs, rec.enter.args);
	ktap_sc_fire(sc, meta->enter_event, &rec,
		     sizeof(rec.enter) + meta->nb_args * sizeof(long), regs);
}

static void ktap_sc_exit_probe(void *data, struct pt_regs *regs, long ret)
{
	struct ktap_sc *sc = data;
	union ktap_sc_rec rec;
	long nr;

	nr = syscall_get_nr(current, regs);
	if (nr < 0 || nr >= NR_syscalls || ktap_sc_compat(regs))
		return;
	if (sc->raw_exit) {
		rec.raw_exit.id = nr;
		rec.raw_exit.ret = ret;
		ktap_sc_fire(sc, sc->raw_exit, &rec, sizeof(rec.raw_exit), regs);
	}
	if (!test_bit(nr, sc->exit))
		return;
	rec.exit.nr = nr;
	rec.exit.ret = ret;
	ktap_sc_fire(sc, sc->meta[nr]->exit_event, &rec, sizeof(rec.exit), regs);
}

/*
 * Take event @id onto the syscall fast path if it is a syscall event.
 * Returns false when the event needs a perf counter instead. Called with
 * trace_event_read_lock() held, so the event cannot go away meanwhile;
 * syscall events are never unregistered.
 */
static bool __ktap_sc_claim(struct ktap_sc *sc, u32 id)
{
	struct trace_event_call *call;
	struct syscall_metadata *meta;
	struct trace_event *te;
	const char *sys;

	/* Ids up to __TRACE_LAST_TYPE are ftrace's own record types. */
	if (id <= __TRACE_LAST_TYPE || id > U16_MAX)
		return false;
	te = ftrace_find_event(id);
	if (!te)
		return false;
	call = container_of(te, struct trace_event_call, event);
	sys = call->class ? call->class->system : NULL;
	if (!sys)
		return false;
	if (!strcmp(sys, "raw_syscalls")) {
		if (call->tp == ktap_tp_sys_enter)
			sc->raw_enter = call;
		else if (call->tp == ktap_tp_sys_exit)
			sc->raw_exit = call;
		else
			return false;
		return true;
	}
	if (strcmp(sys, "syscalls"))
		return false;
	meta = call->data;
	if (!meta || meta->syscall_nr < 0 || meta->syscall_nr >= NR_syscalls ||
	    meta->nb_args > 6)
		return false;
	if (meta->enter_event == call)
		__set_bit(meta->syscall_nr, sc->enter);
	else if (meta->exit_event == call)
		__set_bit(meta->syscall_nr, sc->exit);
	else
		return false;
	sc->meta[meta->syscall_nr] = meta;
	return true;
}

static bool ktap_sc_claim(struct ktap_sc *sc, u32 id)
{
	bool ret;

	if (!ktap_tp_sys_enter || !ktap_tp_sys_exit)
		return false;
	trace_event_read_lock();
	ret = __ktap_sc_claim(sc, id);
	trace_event_read_unlock();
	return ret;
}

static int ktap_sc_register(struct ktap_sc *sc)
{
	int ret;

	if (sc->raw_enter || !bitmap_empty(sc->enter, NR_syscalls)) {
		ret = tracepoint_probe_register(ktap_tp_sys_enter,
						ktap_sc_enter_probe, sc);
		if (ret)
			return ret;
		sc->on_enter = true;
	}
	if (sc->raw_exit || !bitmap_empty(sc->exit, NR_syscalls)) {
		ret = tracepoint_probe_register(ktap_tp_sys_exit,
						ktap_sc_exit_probe, sc);
		if (ret)
			return ret;
		sc->on_exit = true;
	}
	return 0;
}

static void ktap_sc_unregister(struct ktap_sc *sc)
{
	if (sc->on_enter)
		tracepoint_probe_unregister(ktap_tp_sys_enter,
					    ktap_sc_enter_probe, sc);
	if (sc->on_exit)
		tracepoint_probe_unregister(ktap_tp_sys_exit,
					    ktap_sc_exit_probe, sc);
}

/* perf overflow handler of a tracepoint counter; may run in NMI. */
static void ktap_tp_overflow(struct perf_event *event,
			     struct perf_sample_data *data,
			     struct pt_regs *regs)
{
	struct ktap_handler *h = event->overflow_handler_context;
	struct trace_event_call *call = event->tp_event;
	struct ktap_tp_event tev;

	if (!(data->sample_flags & PERF_SAMPLE_RAW) || !data->raw || !call)
		return;
	tev.call = call;
	tev.rec = data->raw->frag.data;
	tev.size = data->raw->frag.size;
	if (tev.size < sizeof(struct trace_entry))
		return;
	tev.ev.ops = &ktap_tp_ops;
	tev.ev.name = trace_event_name(call) ?: "";
	tev.ev.regs = regs;
	ktap_handler_fire(h, &tev.ev);
}

static void ktap_perf_release(struct perf_event **events, u32 nr)
{
	u32 i;

	for (i = 0; i < nr; i++) {
		if (!IS_ERR_OR_NULL(events[i]))
			perf_event_release_kernel(events[i]);
	}
}

/* The CPUs a handler's per-CPU counters go on. */
static bool ktap_handler_on_cpu(struct ktap_handler *h, int cpu)
{
	return !h->filter || h->hot->cpu < 0 || h->hot->cpu == cpu;
}

/*
 * Create one counter per online CPU (as filtered) for @attr; store them
 * from @events. Returns the number stored or a negative error.
 */
static int ktap_perf_create(struct ktap_handler *h,
			    struct perf_event_attr *attr,
			    perf_overflow_handler_t fn,
			    struct perf_event **events, u32 room)
{
	struct perf_event *pe;
	int cpu, n = 0;

	for_each_online_cpu(cpu) {
		if (!ktap_handler_on_cpu(h, cpu))
			continue;
		if (n >= room)
			return -E2BIG;
		pe = perf_event_create_kernel_counter(attr, cpu, NULL, fn, h);
		if (IS_ERR(pe))
			return PTR_ERR(pe);
		events[n++] = pe;
	}
	return n;
}

static int ktap_tp_attach(struct ktap_handler *h)
{
	struct ktap_vm *vm = h->hot->vm;
	const struct ktap_bc_probe *bp = h->bp;
	struct ktap_sc *sc;
	const u32 *ids;
	struct ktap_tp *tp;
	u32 i, room, used = 0;
	int ret = 0;

	ids = ktap_vm_words(vm, bp->ids_start);
	if (!ids || !bp->nids)
		return -EINVAL;
	sc = kvzalloc(sizeof(*sc), GFP_KERNEL);
	if (!sc)
		return -ENOMEM;
	sc->h = h;
	room = min_t(u64, (u64)bp->nids * num_possible_cpus(),
		     KTAP_MAX_PERF_EVENTS);
	tp = kvzalloc(struct_size(tp, events, room), GFP_KERNEL);
	if (!tp) {
		kvfree(sc);
		return -ENOMEM;
	}
	tp->nr = room;
	tp->sc = sc;

	for (i = 0; i < bp->nids; i++) {
		struct perf_event_attr attr = {
			.type		= PERF_TYPE_TRACEPOINT,
			.size		= sizeof(attr),
			.config		= ids[i],
			.sample_period	= 1,
			.sample_type	= PERF_SAMPLE_RAW,
		};

		if (ktap_sc_claim(sc, ids[i]))
			continue;
		ret = ktap_perf_create(h, &attr, ktap_tp_overflow,
				       tp->events + used, room - used);
		if (ret < 0)
			break;
		used += ret;
		ret = 0;
	}
	if (!ret)
		ret = ktap_sc_register(sc);
	if (ret) {
		ktap_sc_unregister(sc);
		ktap_perf_release(tp->events, used);
		/* A probe may have seen @sc already. */
		tracepoint_synchronize_unregister();
		kvfree(sc);
		kvfree(tp);
		return ret;
	}
	h->priv = tp;
	return 0;
}

static void ktap_perf_detach(struct ktap_handler *h)
{
	struct ktap_tp *tp = h->priv;

	ktap_sc_unregister(tp->sc);
	ktap_perf_release(tp->events, tp->nr);
	/* Probes may still run until a grace period has passed. */
	kvfree_rcu_mightsleep(tp->sc);
	kvfree(tp);
}

/* ---- kprobes ---- */

/**
 * struct ktap_kp - attachment of a kprobe or kretprobe probe
 * @h: the handler
 * @name: the probed symbol: event name
 * @ret: a kretprobe
 * @override: e.set_retval() may skip the function (KTAP_PROBE_F_OVERRIDE)
 * @etype: how the function fails (EI_ETYPE_*), when @override
 * @kp: the kprobe (@ret false)
 * @rp: the kretprobe (@ret true)
 */
struct ktap_kp {
	struct ktap_handler	*h;
	const char		*name;
	bool			ret;
	bool			override;
	int			etype;
	union {
		struct kprobe		kp;
		struct kretprobe	rp;
	};
};

struct ktap_kp_event {
	struct ktap_event	ev;
	struct ktap_kp		*k;
	unsigned long		ret_addr;
};

static unsigned long ktap_kp_addr(struct ktap_kp *k)
{
	return (unsigned long)(k->ret ? k->rp.kp.addr : k->kp.addr);
}

static int ktap_kp_field(struct ktap_vm *vm, struct ktap_event *ev,
			 const char *name, u32 len, struct ktap_value *out)
{
	struct ktap_kp_event *kev = container_of(ev, struct ktap_kp_event, ev);

	if (ktap_name_is(name, len, "name"))
		return ktap_value_str(vm, out, ev->name, strlen(ev->name));
	if (ktap_name_is(name, len, "ip") || ktap_name_is(name, len, "func")) {
		ktap_value_int(out, ktap_kp_addr(kev->k));
		return 0;
	}
	if (kev->k->ret && ktap_name_is(name, len, "retval")) {
		ktap_value_int(out, regs_return_value(ev->regs));
		return 0;
	}
	if (kev->k->ret && ktap_name_is(name, len, "ret_ip")) {
		ktap_value_int(out, kev->ret_addr);
		return 0;
	}
	return -ENOENT;
}

/*
 * argN, in the spirit of syscall events (arg0 the syscall number, arg1..
 * its arguments or its return value): arg0 is the probed function's
 * address, arg1..arg6 its arguments at entry, arg1 its return value in a
 * return probe.
 */
static int ktap_kp_arg(struct ktap_vm *vm, struct ktap_event *ev, int n,
		       struct ktap_value *out)
{
	struct ktap_kp_event *kev = container_of(ev, struct ktap_kp_event, ev);

	if (n == 0)
		ktap_value_int(out, ktap_kp_addr(kev->k));
	else if (kev->k->ret && n == 1)
		ktap_value_int(out, regs_return_value(ev->regs));
	else if (!kev->k->ret && n >= 1 && n <= 6)
		ktap_value_int(out, regs_get_kernel_argument(ev->regs, n - 1));
	else
		return -ENOENT;
	return 0;
}

/* Like a kprobe event of ftrace: "sym: (sym+0x0/0x40)". */
static int ktap_kp_tostring(struct ktap_vm *vm, struct ktap_event *ev,
			    struct seq_buf *s)
{
	struct ktap_kp_event *kev = container_of(ev, struct ktap_kp_event, ev);
	void *addr = (void *)ktap_kp_addr(kev->k);

	if (kev->k->ret)
		seq_buf_printf(s, "%s: (%pS <- %ps) arg1=0x%lx", ev->name,
			       (void *)kev->ret_addr, addr,
			       regs_return_value(ev->regs));
	else
		seq_buf_printf(s, "%s: (%pS)", ev->name, addr);
	return 0;
}

/* May a function of error-injection type @etype fail with @v? */
static bool ktap_retval_ok(int etype, s64 v)
{
	bool is_errno = v < 0 && v >= -MAX_ERRNO;

	switch (etype) {
	case EI_ETYPE_NULL:
		return !v;
	case EI_ETYPE_ERRNO:
		return is_errno;
	case EI_ETYPE_ERRNO_NULL:
		return is_errno || !v;
	case EI_ETYPE_TRUE:
		return v == 1;
	}
	return false;
}

static const char *ktap_etype_rule(int etype)
{
	switch (etype) {
	case EI_ETYPE_NULL:
		return "the function fails only with 0 (NULL)";
	case EI_ETYPE_ERRNO:
		return "the function fails only with a negative errno (-4095..-1)";
	case EI_ETYPE_ERRNO_NULL:
		return "the function fails only with a negative errno (-4095..-1) or 0 (NULL)";
	case EI_ETYPE_TRUE:
		return "the function fails only with 1 (true)";
	}
	return "the function cannot fail";
}

/*
 * e.set_retval(v) at the entry of an error-injectable function: make it
 * return @v at once. The pre-handler sees the changed instruction
 * pointer and returns 1, so kprobes does not single-step the original
 * instruction and execution resumes in the return stub.
 */
static int ktap_kp_set_retval(struct ktap_vm *vm, struct ktap_event *ev,
			      s64 v, const char **why)
{
	struct ktap_kp_event *kev = container_of(ev, struct ktap_kp_event, ev);
	struct ktap_kp *k = kev->k;

	if (!k->override) {
		*why = "the probe is not marked KTAP_PROBE_F_OVERRIDE";
		if (k->ret)
			*why = "a return probe cannot change a result after the function ran";
		return -EPERM;
	}
	if (!ktap_retval_ok(k->etype, v)) {
		*why = ktap_etype_rule(k->etype);
		return -EDOM;
	}
	regs_set_return_value(ev->regs, v);
	override_function_with_return(ev->regs);
	return 0;
}

static const struct ktap_event_ops ktap_kp_ops = {
	.field		= ktap_kp_field,
	.tostring	= ktap_kp_tostring,
	.arg		= ktap_kp_arg,
	.set_retval	= ktap_kp_set_retval,
};

static int ktap_kprobe_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct ktap_kp *k = container_of(p, struct ktap_kp, kp);
	struct ktap_kp_event kev = {
		.ev = { .ops = &ktap_kp_ops, .name = k->name, .regs = regs },
		.k = k,
	};
	unsigned long ip = instruction_pointer(regs);

	ktap_handler_fire(k->h, &kev.ev);
	/* e.set_retval() skipped the function: do not single-step it */
	return k->override && instruction_pointer(regs) != ip;
}

NOKPROBE_SYMBOL(ktap_kprobe_pre);

static int ktap_kretprobe_handler(struct kretprobe_instance *ri,
				  struct pt_regs *regs)
{
	struct ktap_kp *k = container_of(get_kretprobe(ri), struct ktap_kp, rp);
	struct ktap_kp_event kev = {
		.ev = { .ops = &ktap_kp_ops, .name = k->name, .regs = regs },
		.k = k,
		.ret_addr = get_kretprobe_retaddr(ri),
	};

	ktap_handler_fire(k->h, &kev.ev);
	return 0;
}

NOKPROBE_SYMBOL(ktap_kretprobe_handler);

/*
 * KTAP_PROBE_F_OVERRIDE: the function must be on the error-injection
 * list (ktap_probe_check() already made sure the probe is an entry
 * kprobe). Checked on the kprobe registered disabled, whose address the
 * kernel resolved: kallsyms lookups by name are not available to modules.
 */
static int ktap_kp_check_override(struct ktap_handler *h, struct ktap_kp *k,
				  const char *sym)
{
	if (!IS_ENABLED(CONFIG_FUNCTION_ERROR_INJECTION)) {
		ktap_session_printf(h->sess,
				    "ktap: e.set_retval() on %s: this kernel has no CONFIG_FUNCTION_ERROR_INJECTION\n",
				    sym);
		return -EOPNOTSUPP;
	}
	k->etype = get_injectable_error_type((unsigned long)k->kp.addr);
	if (k->etype < 0) {
		ktap_session_printf(h->sess,
				    "ktap: e.set_retval() on %s: the function is not on the kernel's error-injection list\n",
				    sym);
		return -EINVAL;
	}
	return 0;
}

static int ktap_kp_attach(struct ktap_handler *h)
{
	const struct ktap_bc_probe *bp = h->bp;
	const char *sym = ktap_vm_str(h->hot->vm, bp->target);
	struct ktap_kp *k;
	int ret;

	if (!sym || !*sym || bp->arg > INT_MAX)
		return -EINVAL;
	ret = security_locked_down(LOCKDOWN_KPROBES);
	if (ret)
		return ret;
	k = kzalloc(sizeof(*k), GFP_KERNEL);
	if (!k)
		return -ENOMEM;
	k->h = h;
	k->name = sym;
	k->ret = bp->flags & KTAP_PROBE_F_RETURN;
	if (k->ret) {
		if (bp->arg) {
			ret = -EINVAL;
			goto err;
		}
		k->rp.kp.symbol_name = sym;
		k->rp.handler = ktap_kretprobe_handler;
		ret = register_kretprobe(&k->rp);
	} else {
		k->kp.symbol_name = sym;
		k->kp.offset = bp->arg;
		k->kp.pre_handler = ktap_kprobe_pre;
		k->override = bp->flags & KTAP_PROBE_F_OVERRIDE;
		if (k->override)
			k->kp.flags = KPROBE_FLAG_DISABLED;
		ret = register_kprobe(&k->kp);
		if (!ret && k->override) {
			ret = ktap_kp_check_override(h, k, sym);
			ret = ret ?: enable_kprobe(&k->kp);
			if (ret)
				unregister_kprobe(&k->kp);
		}
	}
	if (ret)
		goto err;
	h->priv = k;
	return 0;
err:
	kfree(k);
	return ret;
}

static void ktap_kp_detach(struct ktap_handler *h)
{
	struct ktap_kp *k = h->priv;

	if (k->ret)
		unregister_kretprobe(&k->rp);
	else
		unregister_kprobe(&k->kp);
	kfree(k);
}

/* ---- uprobes ---- */

struct ktap_up {
	struct ktap_handler	*h;
	struct uprobe_consumer	uc;
	struct uprobe		*uprobe;
	struct path		path;
	const char		*name;
};

struct ktap_up_event {
	struct ktap_event	ev;
	struct ktap_up		*u;
	unsigned long		func;
};

static int ktap_up_field(struct ktap_vm *vm, struct ktap_event *ev,
			 const char *name, u32 len, struct ktap_value *out)
{
	struct ktap_up_event *uev = container_of(ev, struct ktap_up_event, ev);

	if (ktap_name_is(name, len, "name"))
		return ktap_value_str(vm, out, ev->name, strlen(ev->name));
	if (ktap_name_is(name, len, "ip")) {
		ktap_value_int(out, uev->func ?: instruction_pointer(ev->regs));
		return 0;
	}
	if (uev->func && ktap_name_is(name, len, "retval")) {
		ktap_value_int(out, regs_return_value(ev->regs));
		return 0;
	}
	return -ENOENT;
}

/* argN as for kprobes: arg0 the address, arg1..6 arguments or retval. */
static int ktap_up_arg(struct ktap_vm *vm, struct ktap_event *ev, int n,
		       struct ktap_value *out)
{
	struct ktap_up_event *uev = container_of(ev, struct ktap_up_event, ev);

	if (n == 0)
		ktap_value_int(out, uev->func ?: instruction_pointer(ev->regs));
	else if (uev->func && n == 1)
		ktap_value_int(out, regs_return_value(ev->regs));
	else if (!uev->func && n >= 1 && n <= 6)
		ktap_value_int(out, regs_get_kernel_argument(ev->regs, n - 1));
	else
		return -ENOENT;
	return 0;
}

static int ktap_up_tostring(struct ktap_vm *vm, struct ktap_event *ev,
			    struct seq_buf *s)
{
	struct ktap_up_event *uev = container_of(ev, struct ktap_up_event, ev);

	if (uev->func)
		seq_buf_printf(s, "%s: (0x%lx <- 0x%lx)", ev->name,
			       instruction_pointer(ev->regs), uev->func);
	else
		seq_buf_printf(s, "%s: (0x%lx)", ev->name,
			       instruction_pointer(ev->regs));
	return 0;
}

static const struct ktap_event_ops ktap_up_ops = {
	.field		= ktap_up_field,
	.tostring	= ktap_up_tostring,
	.arg		= ktap_up_arg,
	.set_retval	= ktap_no_set_retval,
};

static void ktap_up_fire(struct ktap_up *u, struct pt_regs *regs,
			 unsigned long func)
{
	struct ktap_up_event uev = {
		.ev = { .ops = &ktap_up_ops, .name = u->name, .regs = regs },
		.u = u,
		.func = func,
	};

	/* Uprobe handlers are preemptible; the VM runs per CPU. */
	preempt_disable();
	ktap_handler_fire(u->h, &uev.ev);
	preempt_enable();
}

static int ktap_up_handler(struct uprobe_consumer *uc, struct pt_regs *regs)
{
	ktap_up_fire(container_of(uc, struct ktap_up, uc), regs, 0);
	return 0;
}

static int ktap_uret_handler(struct uprobe_consumer *uc, unsigned long func,
			     struct pt_regs *regs)
{
	ktap_up_fire(container_of(uc, struct ktap_up, uc), regs, func ?: 1);
	return 0;
}

static int ktap_up_attach(struct ktap_handler *h)
{
	const struct ktap_bc_probe *bp = h->bp;
	const char *file = ktap_vm_str(h->hot->vm, bp->target);
	struct inode *inode;
	struct ktap_up *u;
	int ret;

	if (!file || !*file || bp->arg > LLONG_MAX)
		return -EINVAL;
	u = kzalloc(sizeof(*u), GFP_KERNEL);
	if (!u)
		return -ENOMEM;
	u->h = h;
	u->name = ktap_vm_str(h->hot->vm, bp->spec) ?: file;
	ret = kern_path(file, LOOKUP_FOLLOW, &u->path);
	if (ret)
		goto err;
	inode = d_real_inode(u->path.dentry);
	if (!S_ISREG(inode->i_mode)) {
		ret = -EINVAL;
		goto err_path;
	}
	if (bp->flags & KTAP_PROBE_F_RETURN)
		u->uc.ret_handler = ktap_uret_handler;
	else
		u->uc.handler = ktap_up_handler;
	u->uprobe = uprobe_register(inode, bp->arg, 0, &u->uc);
	if (IS_ERR(u->uprobe)) {
		ret = PTR_ERR(u->uprobe);
		goto err_path;
	}
	h->priv = u;
	return 0;
err_path:
	path_put(&u->path);
err:
	kfree(u);
	return ret;
}

/* ---- timers, profile, end ---- */

struct ktap_timer {
	struct hrtimer		timer;
	struct ktap_handler	*h;
	ktime_t			period;
	char			name[KTAP_NAME_LEN];
};

struct ktap_plain_event {
	struct ktap_event	ev;
};

static int ktap_plain_field(struct ktap_vm *vm, struct ktap_event *ev,
			    const char *name, u32 len, struct ktap_value *out)
{
	if (ktap_name_is(name, len, "name"))
		return ktap_value_str(vm, out, ev->name, strlen(ev->name));
	return -ENOENT;
}

static int ktap_plain_arg(struct ktap_vm *vm, struct ktap_event *ev, int n,
			  struct ktap_value *out)
{
	return -ENOENT;
}

static int ktap_plain_tostring(struct ktap_vm *vm, struct ktap_event *ev,
			       struct seq_buf *s)
{
	seq_buf_puts(s, ev->name);
	return 0;
}

static const struct ktap_event_ops ktap_plain_ops = {
	.field		= ktap_plain_field,
	.tostring	= ktap_plain_tostring,
	.arg		= ktap_plain_arg,
	.set_retval	= ktap_no_set_retval,
};

/* "tick-1s", "profile-100ms", "tick-250us"... */
static void ktap_period_name(char *buf, const char *kind, u64 ns)
{
	if (!(ns % NSEC_PER_SEC))
		snprintf(buf, KTAP_NAME_LEN, "%s-%llus", kind, ns / NSEC_PER_SEC);
	else if (!(ns % NSEC_PER_MSEC))
		snprintf(buf, KTAP_NAME_LEN, "%s-%llums", kind, ns / NSEC_PER_MSEC);
	else if (!(ns % NSEC_PER_USEC))
		snprintf(buf, KTAP_NAME_LEN, "%s-%lluus", kind, ns / NSEC_PER_USEC);
	else
		snprintf(buf, KTAP_NAME_LEN, "%s-%lluns", kind, ns);
}

static enum hrtimer_restart ktap_timer_fn(struct hrtimer *hrt)
{
	struct ktap_timer *t = container_of(hrt, struct ktap_timer, timer);
	struct ktap_plain_event pev = {
		.ev = { .ops = &ktap_plain_ops, .name = t->name,
			.regs = get_irq_regs() },
	};

	ktap_handler_fire(t->h, &pev.ev);
	hrtimer_forward_now(hrt, t->period);
	return HRTIMER_RESTART;
}

static int ktap_timer_attach(struct ktap_handler *h)
{
	struct ktap_timer *t;

	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->h = h;
	t->period = ns_to_ktime(h->bp->arg);
	ktap_period_name(t->name, "tick", h->bp->arg);
	hrtimer_init(&t->timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	t->timer.function = ktap_timer_fn;
	hrtimer_start(&t->timer, t->period, HRTIMER_MODE_REL);
	h->priv = t;
	return 0;
}

static void ktap_timer_detach(struct ktap_handler *h)
{
	struct ktap_timer *t = h->priv;

	hrtimer_cancel(&t->timer);
	kfree(t);
}

/* A profile probe: per-CPU cpu-clock counters, named like the probe. */
struct ktap_profile {
	char			name[KTAP_NAME_LEN];
	u32			nr;
	struct perf_event	*events[] __counted_by(nr);
};

static void ktap_profile_overflow(struct perf_event *event,
				  struct perf_sample_data *data,
				  struct pt_regs *regs)
{
	struct ktap_handler *h = event->overflow_handler_context;
	struct ktap_profile *p = READ_ONCE(h->priv);
	struct ktap_plain_event pev = {
		.ev = { .ops = &ktap_plain_ops, .regs = regs },
	};

	if (!p)
		return;
	pev.ev.name = p->name;
	ktap_handler_fire(h, &pev.ev);
}

static int ktap_profile_attach(struct ktap_handler *h)
{
	struct perf_event_attr attr = {
		.type		= PERF_TYPE_SOFTWARE,
		.size		= sizeof(attr),
		.config		= PERF_COUNT_SW_CPU_CLOCK,
		.sample_period	= h->bp->arg,
	};
	struct ktap_profile *p;
	u32 room = num_possible_cpus();
	int ret;

	p = kzalloc(struct_size(p, events, room), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->nr = room;
	ktap_period_name(p->name, "profile", h->bp->arg);
	/* Published before any counter can fire. */
	WRITE_ONCE(h->priv, p);
	ret = ktap_perf_create(h, &attr, ktap_profile_overflow, p->events, room);
	if (ret < 0) {
		ktap_perf_release(p->events, room);
		WRITE_ONCE(h->priv, NULL);
		synchronize_rcu();
		kfree(p);
		return ret;
	}
	return 0;
}

static void ktap_profile_detach(struct ktap_handler *h)
{
	struct ktap_profile *p = h->priv;

	ktap_perf_release(p->events, p->nr);
	/* The overflow handler may still read p->name: free after sync. */
	synchronize_rcu();
	kfree(p);
}

/**
 * ktap_handler_run_end - run an END handler
 * @h: the handler, of a KTAP_PROBE_END probe
 * @budget: what is left of the budget all END handlers share
 *
 * Process context, at STOP, after every probe was detached. The VM runs
 * on this CPU's execution area, so preemption is off while it runs; the
 * shared instruction budget bounds how long all of them take.
 */
void ktap_handler_run_end(struct ktap_handler *h, s64 *budget)
{
	struct ktap_plain_event pev = {
		.ev = { .ops = &ktap_plain_ops, .probe = h->probe,
			.name = "end" },
	};

	if (h->hot->dry_run)
		return;
	preempt_disable();
	ktap_vm_fire_end(h->hot->vm, h->fn, &pev.ev, budget);
	preempt_enable();
}

/**
 * ktap_handler_attach - attach a recorded handler to its probe
 * @h: the handler; @h->priv is set on success
 *
 * Process context, under the session lock.
 *
 * Return: 0 or a negative error; nothing stays attached on error.
 */
int ktap_handler_attach(struct ktap_handler *h)
{
	switch (h->bp->type) {
	case KTAP_PROBE_TRACEPOINT:
		return ktap_tp_attach(h);
	case KTAP_PROBE_KPROBE:
		return ktap_kp_attach(h);
	case KTAP_PROBE_UPROBE:
		return ktap_up_attach(h);
	case KTAP_PROBE_TIMER:
		return ktap_timer_attach(h);
	case KTAP_PROBE_PROFILE:
		return ktap_profile_attach(h);
	default:
		return -EINVAL;
	}
}

/**
 * ktap_handler_detach - detach an attached handler
 * @h: the handler
 *
 * The handler may still be running on another CPU when this returns;
 * ktap_handlers_sync() waits for that.
 */
void ktap_handler_detach(struct ktap_handler *h)
{
	switch (h->bp->type) {
	case KTAP_PROBE_TRACEPOINT:
		ktap_perf_detach(h);
		break;
	case KTAP_PROBE_KPROBE:
		ktap_kp_detach(h);
		break;
	case KTAP_PROBE_UPROBE: {
		struct ktap_up *u = h->priv;

		uprobe_unregister_nosync(u->uprobe, &u->uc);
		uprobe_unregister_sync();
		path_put(&u->path);
		kfree(u);
		break;
	}
	case KTAP_PROBE_TIMER:
		ktap_timer_detach(h);
		break;
	case KTAP_PROBE_PROFILE:
		ktap_profile_detach(h);
		break;
	default:
		break;
	}
}

/**
 * ktap_handlers_sync - wait until no detached handler can still run
 *
 * Tracepoint probes run under (S)RCU and kprobe, perf and timer handlers
 * with preemption off, so one tracepoint-and-RCU grace period covers all.
 */
void ktap_handlers_sync(void)
{
	tracepoint_synchronize_unregister();
}

static __printf(3, 4) int ktap_log(char *log, size_t size, const char *fmt, ...)
{
	va_list ap;

	if (log && size) {
		va_start(ap, fmt);
		vsnprintf(log, size, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/**
 * ktap_probe_check - can this probe be attached here?
 * @vm: the loaded program
 * @bp: one entry of its probe table
 * @log: where to say why not
 * @log_size: room at @log
 *
 * Called at LOAD, after the VM verified the image.
 *
 * Return: 0, -EPERM (kernel lockdown) or -EINVAL, with a message in @log.
 */
int ktap_probe_check(struct ktap_vm *vm, const struct ktap_bc_probe *bp,
		     char *log, size_t log_size)
{
	const char *spec = ktap_vm_str(vm, bp->spec) ?: "?";

	switch (bp->type) {
	case KTAP_PROBE_TRACEPOINT:
		if (!bp->nids || !ktap_vm_words(vm, bp->ids_start))
			return ktap_log(log, log_size,
					"probe '%s': no event ids\n", spec);
		break;
	case KTAP_PROBE_KPROBE:
		if ((bp->flags & KTAP_PROBE_F_OVERRIDE) &&
		    ((bp->flags & KTAP_PROBE_F_RETURN) || bp->arg))
			return ktap_log(log, log_size,
					"probe '%s': e.set_retval() needs a kprobe at the entry of %s (offset 0, not a return probe): the function's body is skipped, never undone\n",
					spec, ktap_vm_str(vm, bp->target) ?: "?");
		if (security_locked_down(LOCKDOWN_KPROBES)) {
			ktap_log(log, log_size,
				 "probe '%s': kprobes are disabled by kernel lockdown\n",
				 spec);
			return -EPERM;
		}
		fallthrough;
	case KTAP_PROBE_UPROBE:
		if (!ktap_vm_str(vm, bp->target))
			return ktap_log(log, log_size,
					"probe '%s': no target\n", spec);
		break;
	case KTAP_PROBE_TIMER:
	case KTAP_PROBE_PROFILE:
		if (bp->arg < KTAP_MIN_PERIOD_NS || bp->arg > 3600 * NSEC_PER_SEC)
			return ktap_log(log, log_size,
					"probe '%s': period must be between 10us and 1h\n",
					spec);
		break;
	case KTAP_PROBE_END:
		break;
	default:
		return ktap_log(log, log_size, "probe '%s': unknown type %u\n",
				spec, bp->type);
	}
	return 0;
}
