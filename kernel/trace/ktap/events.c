// SPDX-License-Identifier: GPL-2.0
/*
 * ktap probes: attach the handlers a script's main chunk recorded, and
 * give the VM access to the event being handled.
 *
 *  - Tracepoints (any ftrace event, syscalls included): the probe names
 *    a SYSTEM:EVENT glob pattern, expanded here at attach. Syscall
 *    events go through the raw syscall tracepoints (the syscall fast
 *    path below); every other event is reached through kernel perf
 *    counters, one per event and online CPU, which works from a module
 *    without touching ftrace internals. The overflow handler may run in
 *    NMI. The raw record perf hands over is the same record ftrace
 *    writes, so fields are read through the event's field list (looked
 *    up once at attach for the image's fields section, else by name)
 *    and printed by the event's own output function.
 *  - Kprobes and kretprobes; e.set_retval() only from a probe the image
 *    marks KTAP_PROBE_F_OVERRIDE: a kprobe at the entry of a function
 *    the kernel lists as error-injectable. The function's body is then
 *    skipped, as bpf_override_return() does, so callers never see a
 *    failure after its side effects happened.
 *  - Uprobes and uretprobes on a path and file offset, USDT probes
 *    (uprobes with a semaphore).
 *  - Kprobes and uprobes may carry fetch arguments: values the image
 *    describes as a register, argument, stack slot or return value and
 *    a chain of memory reads, read when the handler asks for them.
 *  - Timers (tick-N: one hrtimer) and profile-N (a cpu-clock perf event
 *    on every online CPU, so the handler sees the interrupted context).
 *  - END handlers run at STOP, in process context.
 *
 * The per-CPU kinds (tracepoints off the syscall path, profile, perf
 * events, watchpoints) follow CPU hotplug: a CPU that comes online gets
 * its counters from a work item (struct ktap_cpus).
 */

#define pr_fmt(fmt) "ktap: " fmt

#include <linux/cleanup.h>
#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/err.h>
#include <linux/error-injection.h>
#include <linux/ftrace.h>
#include <linux/glob.h>
#include <linux/hash.h>
#include <linux/hrtimer.h>
#include <linux/hw_breakpoint.h>
#include <linux/kprobes.h>
#include <linux/namei.h>
#include <linux/perf_event.h>
#include <linux/ptrace.h>
#include <linux/security.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/trace_events.h>
#include <linux/tracepoint.h>
#include <linux/unaligned.h>
#include <linux/uprobes.h>
#include <linux/workqueue.h>
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
/*
 * Bytes of resolved-field arrays one tracepoint probe may allocate; the
 * fields of events beyond that are read by name, which is slower but
 * reads the same values.
 */
#define KTAP_MAX_SLOT_BYTES	(4 << 20)

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

/*
 * Whether @tp calls its probes through its iterator: with more than one
 * probe, or without static calls. With one, its static call goes
 * straight to the probe. Read in the probe, under the tracepoint's RCU.
 */
static bool ktap_tp_iterated(struct tracepoint *tp)
{
	struct tracepoint_func *funcs;

	if (!IS_ENABLED(CONFIG_HAVE_STATIC_CALL) || !tp->static_call_key)
		return true;
	funcs = rcu_dereference_raw(tp->funcs);
	return funcs && funcs[0].func && funcs[1].func;
}

/**
 * ktap_event_stack() - the kernel or user stack a probe saw
 * @ev: the event being handled
 * @store: where the return addresses go, innermost first
 * @size: room in @store
 * @user: the user stack instead of the kernel one
 *
 * A tracepoint's kernel stack starts at the code that hit it
 * (@ev->caller), so that the frames of the event's delivery to ktap are
 * left out; a
 * probe with kernel registers (kprobe, an interrupted kernel) unwinds
 * from them; one with user registers (uprobe, an interrupted user
 * task) has no kernel stack. The user stack is the current task's,
 * walked by frame pointer without faulting; none in NMI, which may have
 * come in while the CPU switches between address spaces (perf checks
 * nmi_uaccess_okay(), which modules cannot call).
 *
 * Return: the number of addresses stored.
 */
static unsigned int ktap_event_stack(struct ktap_event *ev,
				     unsigned long *store, unsigned int size,
				     bool user)
{
	unsigned int n, k;

	if (user) {
		if (!IS_ENABLED(CONFIG_USER_STACKTRACE_SUPPORT) ||
		    !current->mm || (current->flags & PF_KTHREAD) || in_nmi())
			return 0;
		return stack_trace_save_user(store, size);
	}
	if (ev->caller) {
		n = stack_trace_save(store, size, 0);
		for (k = 0; k < n; k++) {
			if (store[k] != ev->caller)
				continue;
			k += ev->iterated;
			n -= k;
			memmove(store, store + k, n * sizeof(*store));
			break;
		}
		return n;
	}
	if (!ev->regs)
		return stack_trace_save(store, size, 0);
	if (user_mode(ev->regs))
		return 0;
	return stack_trace_save_regs(ev->regs, store, size, 0);
}

static struct tracepoint *ktap_tp_fork, *ktap_tp_exit;

static void ktap_find_sys_tp(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "sys_enter"))
		ktap_tp_sys_enter = tp;
	else if (!strcmp(tp->name, "sys_exit"))
		ktap_tp_sys_exit = tp;
	else if (!strcmp(tp->name, "sched_process_fork"))
		ktap_tp_fork = tp;
	else if (!strcmp(tp->name, "sched_process_exit"))
		ktap_tp_exit = tp;
}

/*
 * The processes a session with a target follows: the target's
 * descendants, by global tgid, added when their parent forks them and
 * removed when their last thread exits. An open-addressing set that
 * fork and exit change without a lock (cmpxchg on a slot) and handlers
 * read in any context. A removed tgid leaves a tombstone that a later
 * one may take; a set without a free slot follows no more processes
 * and counts them in @missed.
 */
#define KTAP_FOLLOW_BITS	12
#define KTAP_FOLLOW_SLOTS	BIT(KTAP_FOLLOW_BITS)
#define KTAP_FOLLOW_GONE	((u32)-1)

struct ktap_follow {
	pid_t		root;
	atomic_t	missed;
	u32		slot[KTAP_FOLLOW_SLOTS];
};

/**
 * ktap_follows - whether @tgid is a descendant the session follows
 * @hot: the session's hot state (its follow set, if any)
 * @tgid: a global tgid
 *
 * Any context, lockless.
 *
 * Return: true if @tgid is in the set.
 */
bool ktap_follows(const struct ktap_session_hot *hot, pid_t tgid)
{
	const struct ktap_follow *f = READ_ONCE(hot->follow);
	u32 i, n, v;

	if (!f || tgid <= 0)
		return false;
	i = hash_32(tgid, KTAP_FOLLOW_BITS);
	for (n = 0; n < KTAP_FOLLOW_SLOTS; n++, i = (i + 1) % KTAP_FOLLOW_SLOTS) {
		v = READ_ONCE(f->slot[i]);
		if (v == (u32)tgid)
			return true;
		if (!v)
			return false;
	}
	return false;
}

static void ktap_follow_add(struct ktap_follow *f, pid_t tgid)
{
	u32 i = hash_32(tgid, KTAP_FOLLOW_BITS), n, v;

	/* a new process: its tgid is in no slot, a tombstone can be reused */
	for (n = 0; n < KTAP_FOLLOW_SLOTS; n++, i = (i + 1) % KTAP_FOLLOW_SLOTS) {
		v = READ_ONCE(f->slot[i]);
		if ((!v || v == KTAP_FOLLOW_GONE) &&
		    cmpxchg(&f->slot[i], v, (u32)tgid) == v)
			return;
	}
	atomic_inc(&f->missed);
}

/* sched_process_fork: a new process of a followed one is followed. */
static void ktap_follow_fork(void *data, struct task_struct *parent,
			     struct task_struct *child)
{
	struct ktap_session_hot *hot = data;
	struct ktap_follow *f = hot->follow;

	if (child->tgid == parent->tgid)
		return;		/* a thread */
	if (parent->tgid == f->root || ktap_follows(hot, parent->tgid))
		ktap_follow_add(f, child->tgid);
}

/*
 * sched_process_exit: the last thread of a followed process is gone
 * (do_exit() took it off signal->live before this tracepoint), so that
 * its tgid, once reused, is not traced.
 */
static void ktap_follow_exit(void *data, struct task_struct *p)
{
	struct ktap_session_hot *hot = data;
	struct ktap_follow *f = hot->follow;
	u32 i = hash_32(p->tgid, KTAP_FOLLOW_BITS), n, v;

	if (p->tgid == f->root || atomic_read(&p->signal->live))
		return;
	for (n = 0; n < KTAP_FOLLOW_SLOTS; n++, i = (i + 1) % KTAP_FOLLOW_SLOTS) {
		v = READ_ONCE(f->slot[i]);
		if (!v)
			return;
		if (v == (u32)p->tgid) {
			cmpxchg(&f->slot[i], v, KTAP_FOLLOW_GONE);
			return;
		}
	}
}

/**
 * ktap_follow_start - follow the descendants of the session's target
 * @hot: the session's hot state; @hot->tgid is the target
 *
 * Process context, at LOAD, before the target can fork (a command the
 * tool starts waits until START).
 *
 * Return: 0, -ENOMEM, or the error of registering on the fork and exit
 * tracepoints (-ENOENT when the kernel has none).
 */
int ktap_follow_start(struct ktap_session_hot *hot)
{
	struct ktap_follow *f;
	int ret;

	if (!ktap_tp_fork || !ktap_tp_exit)
		return -ENOENT;
	f = kvzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);
	if (!f)
		return -ENOMEM;
	f->root = hot->tgid;
	hot->follow = f;
	ret = tracepoint_probe_register(ktap_tp_fork, ktap_follow_fork, hot);
	if (ret)
		goto err;
	ret = tracepoint_probe_register(ktap_tp_exit, ktap_follow_exit, hot);
	if (ret) {
		tracepoint_probe_unregister(ktap_tp_fork, ktap_follow_fork, hot);
		goto err;
	}
	return 0;
err:
	tracepoint_synchronize_unregister();
	hot->follow = NULL;
	kvfree(f);
	return ret;
}

/**
 * ktap_follow_stop - stop following; free the set
 * @hot: the session's hot state
 *
 * Process context, when the session is freed: no handler runs.
 *
 * Return: the number of processes that were not followed for want of
 * room in the set.
 */
u32 ktap_follow_stop(struct ktap_session_hot *hot)
{
	struct ktap_follow *f = hot->follow;
	u32 missed;

	if (!f)
		return 0;
	tracepoint_probe_unregister(ktap_tp_fork, ktap_follow_fork, hot);
	tracepoint_probe_unregister(ktap_tp_exit, ktap_follow_exit, hot);
	tracepoint_synchronize_unregister();
	missed = atomic_read(&f->missed);
	WRITE_ONCE(hot->follow, NULL);
	kvfree(f);
	return missed;
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

/* The CPUs a handler's per-CPU counters go on. */
static bool ktap_handler_on_cpu(struct ktap_handler *h, int cpu)
{
	return !h->filter || h->hot->cpu < 0 || h->hot->cpu == cpu;
}

/* ---- per-CPU counters, kept across CPU hotplug ---- */

/* Dynamic cpuhp state of the counter sets (see ktap_events_get()). */
static int ktap_cpuhp_state = -1;

/**
 * struct ktap_cpus - the per-CPU perf counters of one handler
 * @node: instance of ktap_cpuhp_state
 * @work: creates the counters of the CPUs in @pending
 * @pending_lock: protects @pending; the cpuhp callback takes it
 * @pending: CPUs that came online since @work last ran
 * @lock: serialises creating and replacing the counters in @events
 * @h: the handler
 * @create: make counter @kind for @cpu; NULL when @kind is not in use
 * @nkinds: counters per CPU (one per tracepoint event, else one)
 * @ncreated: counters in @events, at most KTAP_MAX_PERF_EVENTS
 * @events: @events[kind * nr_cpu_ids + cpu]
 *
 * perf takes a CPU's counters off it when the CPU goes down and does not
 * put them back when it comes up, so a CPU that comes online gets new
 * ones. Not in the cpuhp callback: creating a counter may take
 * cpu_hotplug_lock (a software event's static key, a tracepoint's
 * first registration), which the hotplug operation holds while its
 * callbacks run. The callback queues @work instead.
 */
struct ktap_cpus {
	struct hlist_node	node;
	struct work_struct	work;
	spinlock_t		pending_lock;	/* guards pending */
	cpumask_var_t		pending;
	struct mutex		lock;		/* guards events */
	struct ktap_handler	*h;
	struct perf_event	*(*create)(struct ktap_cpus *c, u32 kind,
					   int cpu);
	u32			nkinds;
	u32			ncreated;
	struct perf_event	**events;
};

/* Slots of a counter set, a few MB at most. */
#define KTAP_MAX_PERF_SLOTS	(256 * 1024)

static struct perf_event **ktap_cpus_slot(struct ktap_cpus *c, u32 kind,
					  int cpu)
{
	return &c->events[(size_t)kind * nr_cpu_ids + cpu];
}

static void ktap_cpus_work(struct work_struct *work)
{
	struct ktap_cpus *c = container_of(work, struct ktap_cpus, work);
	struct perf_event **slot, *pe, *old;
	unsigned int cpu;
	u32 k;

	for (;;) {
		scoped_guard(spinlock_irqsave, &c->pending_lock) {
			cpu = cpumask_first(c->pending);
			if (cpu < nr_cpu_ids)
				cpumask_clear_cpu(cpu, c->pending);
		}
		if (cpu >= nr_cpu_ids)
			return;
		if (!ktap_handler_on_cpu(c->h, cpu))
			continue;
		guard(mutex)(&c->lock);
		for (k = 0; k < c->nkinds; k++) {
			slot = ktap_cpus_slot(c, k, cpu);
			if (!*slot && c->ncreated >= KTAP_MAX_PERF_EVENTS)
				break;
			/* Gone offline again: created at its next online. */
			pe = c->create(c, k, cpu);
			if (IS_ERR_OR_NULL(pe))
				continue;
			old = *slot;
			*slot = pe;
			if (old)
				perf_event_release_kernel(old);
			else
				c->ncreated++;
		}
	}
}

static int ktap_cpu_online(unsigned int cpu, struct hlist_node *node)
{
	struct ktap_cpus *c = hlist_entry(node, struct ktap_cpus, node);

	scoped_guard(spinlock_irqsave, &c->pending_lock)
		cpumask_set_cpu(cpu, c->pending);
	schedule_work(&c->work);
	return 0;
}

/**
 * ktap_cpus_init - prepare a handler's per-CPU counter set
 * @c: the set, zeroed
 * @h: the handler
 * @nkinds: counters per CPU
 * @create: makes one; see struct ktap_cpus
 *
 * The set follows CPU hotplug from here on, before any counter exists,
 * so that no CPU coming up while the counters are created is missed.
 *
 * Return: 0, -E2BIG when @nkinds counters on every possible CPU would
 * take more than KTAP_MAX_PERF_SLOTS slots, or -ENOMEM.
 */
static int ktap_cpus_init(struct ktap_cpus *c, struct ktap_handler *h,
			  u32 nkinds,
			  struct perf_event *(*create)(struct ktap_cpus *c,
						       u32 kind, int cpu))
{
	int ret;

	if ((u64)nkinds * nr_cpu_ids > KTAP_MAX_PERF_SLOTS)
		return -E2BIG;
	c->events = kvcalloc((size_t)nkinds * nr_cpu_ids, sizeof(*c->events),
			     GFP_KERNEL_ACCOUNT);
	if (!c->events)
		return -ENOMEM;
	if (!zalloc_cpumask_var(&c->pending, GFP_KERNEL_ACCOUNT)) {
		kvfree(c->events);
		return -ENOMEM;
	}
	INIT_WORK(&c->work, ktap_cpus_work);
	spin_lock_init(&c->pending_lock);
	mutex_init(&c->lock);
	c->h = h;
	c->create = create;
	c->nkinds = nkinds;
	INIT_HLIST_NODE(&c->node);
	ret = cpuhp_state_add_instance_nocalls(ktap_cpuhp_state, &c->node);
	if (ret) {
		free_cpumask_var(c->pending);
		kvfree(c->events);
	}
	return ret;
}

/**
 * ktap_cpus_create - counter @kind on every online CPU the handler allows
 * @c: the set
 * @kind: which
 *
 * Return: how many CPUs have it, or a negative error; the counters made
 * before an error stay in @c, for ktap_cpus_release_kind().
 */
static int ktap_cpus_create(struct ktap_cpus *c, u32 kind)
{
	struct perf_event **slot, *pe;
	int cpu, n = 0;

	guard(mutex)(&c->lock);
	for_each_online_cpu(cpu) {
		if (!ktap_handler_on_cpu(c->h, cpu))
			continue;
		slot = ktap_cpus_slot(c, kind, cpu);
		if (!*slot) {
			if (c->ncreated >= KTAP_MAX_PERF_EVENTS)
				return -E2BIG;
			pe = c->create(c, kind, cpu);
			if (IS_ERR_OR_NULL(pe))
				return pe ? PTR_ERR(pe) : -ENOENT;
			*slot = pe;
			c->ncreated++;
		}
		n++;
	}
	return n;
}

/* Release counter @kind on every CPU. */
static void ktap_cpus_release_kind(struct ktap_cpus *c, u32 kind)
{
	struct perf_event **slot;
	int cpu;

	guard(mutex)(&c->lock);
	for_each_possible_cpu(cpu) {
		slot = ktap_cpus_slot(c, kind, cpu);
		if (*slot) {
			perf_event_release_kernel(*slot);
			*slot = NULL;
			c->ncreated--;
		}
	}
}

/* One counter of @kind that exists, for what it is attached to. */
static struct perf_event *ktap_cpus_any(struct ktap_cpus *c, u32 kind)
{
	int cpu;

	for_each_possible_cpu(cpu)
		if (*ktap_cpus_slot(c, kind, cpu))
			return *ktap_cpus_slot(c, kind, cpu);
	return NULL;
}

/**
 * ktap_cpus_destroy - stop following hotplug and release every counter
 * @c: a set ktap_cpus_init() prepared
 *
 * Process context; the overflow handlers may still be running when this
 * returns (callers wait for them before freeing what they read).
 */
static void ktap_cpus_destroy(struct ktap_cpus *c)
{
	u32 k;

	cpuhp_state_remove_instance_nocalls(ktap_cpuhp_state, &c->node);
	cancel_work_sync(&c->work);
	for (k = 0; k < c->nkinds; k++)
		ktap_cpus_release_kind(c, k);
	free_cpumask_var(c->pending);
	kvfree(c->events);
}

/**
 * ktap_events_get - take a reference on the shared probe state
 *
 * Called when a session is created; for the first one, allocates the
 * per-CPU scratch iterators and sets up the CPU hotplug state the
 * per-CPU counters follow.
 *
 * Return: 0 or a negative error.
 */
int ktap_events_get(void)
{
	int cpu, ret = -ENOMEM;

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
	ret = cpuhp_setup_state_multi(CPUHP_AP_ONLINE_DYN, "trace/ktap:online",
				      ktap_cpu_online, NULL);
	if (ret < 0)
		goto err;
	ktap_cpuhp_state = ret;
	return 0;
err:
	ktap_free_iters();
	ktap_users--;
	return ret;
}

/* Drop the reference taken by ktap_events_get(). */
void ktap_events_put(void)
{
	guard(mutex)(&ktap_users_lock);
	if (--ktap_users)
		return;
	ktap_free_iters();
	cpuhp_remove_multi_state(ktap_cpuhp_state);
	ktap_cpuhp_state = -1;
}

/* ---- tracepoints ---- */

/**
 * struct ktap_tp_slots - the image's fields, looked up in one event
 * @loads: for each entry, the load EVFIELD does instead of calling
 *	   ktap_tp_field_at() (type KTAP_FL_NONE where it must call);
 *	   allocated with the slots, after @f
 * @n: entries at @f: ktap_vm_nfields() of the image
 * @f: @f[i] is the format field named like entry i of the image's
 *     fields section, or NULL where the event has none (or where
 *     ktap_tp_field() answers the name before the format)
 *
 * Built at attach, for each event a tracepoint handler covers that has
 * at least one of the fields; read by EVFIELD (ktap_tp_field_at()).
 */
struct ktap_tp_slots {
	struct ktap_field_loads		*loads;
	u32				n;
	struct ftrace_event_field	*f[] __counted_by(n);
};

/**
 * struct ktap_tp_event - a tracepoint firing
 * @ev: what the VM sees
 * @call: the ftrace event
 * @slots: the image's fields resolved in @call, or NULL
 * @tp: the tracepoint that fired, or NULL (a dynamic event)
 * @sc_kind: the syscall event @call is, when the syscall fast path
 *	     fired it (KTAP_SC_NONE: look it up)
 * @sc_lazy: the record (@ev.rec, struct trace_entry first) is not built
 *	     yet (ktap_tp_rec() builds it)
 * @sc_nr: the syscall number, for building the record
 * @sc_ret: the return value, for building a sys_exit record
 */
struct ktap_tp_event {
	struct ktap_event		ev;
	struct trace_event_call		*call;
	const struct ktap_tp_slots	*slots;
	struct tracepoint		*tp;
	u8				sc_kind;
	bool				sc_lazy;
	long				sc_nr;
	long				sc_ret;
};

static void ktap_sc_build(struct ktap_tp_event *tev);

/* The record of @tev, built first if the syscall fast path left it out. */
static inline void *ktap_tp_rec(struct ktap_tp_event *tev)
{
	if (unlikely(tev->sc_lazy))
		ktap_sc_build(tev);
	return tev->ev.rec;
}

/**
 * struct ktap_tp_ctx - overflow handler context of one event's counters
 * @h: the handler
 * @slots: the image's fields resolved in the event, or NULL; published
 *	   with release semantics once built
 * @call: the event the counters were created for, once known
 * @type: its event type (the counters' perf config)
 * @dead: skipped: no counter is created for it, hotplug included
 */
struct ktap_tp_ctx {
	struct ktap_handler	*h;
	struct ktap_tp_slots	*slots;
	struct trace_event_call	*call;
	unsigned int		type;
	bool			dead;
};

struct ktap_sc;

/**
 * struct ktap_tp - attachment of a tracepoint probe
 * @sc: the syscall events it reaches directly (see struct ktap_sc)
 * @ctx: one context per perf-backed event, shared by its counters
 * @nctx: entries at @ctx
 * @cpus: the counters of the perf-backed events, @ctx[k] for kind k;
 *	  prepared only when there are any (@ctx not NULL)
 */
struct ktap_tp {
	struct ktap_sc		*sc;
	struct ktap_tp_ctx	*ctx;
	u32			nctx;
	struct ktap_cpus	cpus;
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

/* Which syscall event, if any, @call is. */
static enum ktap_sc_kind ktap_sc_call_kind(struct trace_event_call *call)
{
	const char *sys = call->class->system;
	struct syscall_metadata *meta;
	const char *name;

	if (!sys)
		return KTAP_SC_NONE;
	if (!strcmp(sys, "syscalls")) {
		meta = call->data;
		if (!meta)
			return KTAP_SC_NONE;
		if (meta->enter_event == call)
			return KTAP_SC_ENTER;
		if (meta->exit_event == call)
			return KTAP_SC_EXIT;
		return KTAP_SC_NONE;
	}
	if (!strcmp(sys, "raw_syscalls")) {
		name = trace_event_name(call) ?: "";
		if (!strcmp(name, "sys_enter"))
			return KTAP_SC_RAW_ENTER;
		if (!strcmp(name, "sys_exit"))
			return KTAP_SC_RAW_EXIT;
	}
	return KTAP_SC_NONE;
}

/* As ktap_sc_call_kind(), for a record big enough to read as such. */
static enum ktap_sc_kind ktap_sc_kind(struct ktap_tp_event *tev)
{
	enum ktap_sc_kind kind = tev->sc_kind ?: ktap_sc_call_kind(tev->call);
	struct syscall_metadata *meta;
	size_t need;

	ktap_tp_rec(tev);
	switch (kind) {
	case KTAP_SC_ENTER:
		meta = tev->call->data;
		need = sizeof(struct syscall_trace_enter) +
		       meta->nb_args * sizeof(unsigned long);
		break;
	case KTAP_SC_EXIT:
		need = sizeof(struct syscall_trace_exit);
		break;
	case KTAP_SC_RAW_ENTER:
		need = sizeof(struct ktap_raw_sys_enter);
		break;
	case KTAP_SC_RAW_EXIT:
		need = sizeof(struct ktap_raw_sys_exit);
		break;
	default:
		return KTAP_SC_NONE;
	}
	return tev->ev.rec_size >= need ? kind : KTAP_SC_NONE;
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
		struct syscall_trace_enter *r = tev->ev.rec;
		struct syscall_metadata *meta = tev->call->data;

		*enter = true;
		*nr = r->nr;
		*args = r->args;
		*nargs = meta->nb_args;
		return true;
	}
	case KTAP_SC_EXIT: {
		struct syscall_trace_exit *r = tev->ev.rec;

		*enter = false;
		*nr = r->nr;
		*ret = r->ret;
		return true;
	}
	case KTAP_SC_RAW_ENTER: {
		struct ktap_raw_sys_enter *r = tev->ev.rec;

		*enter = true;
		*nr = r->id;
		*args = r->args;
		*nargs = ARRAY_SIZE(r->args);
		return true;
	}
	case KTAP_SC_RAW_EXIT: {
		struct ktap_raw_sys_exit *r = tev->ev.rec;

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
	struct trace_entry *ent;

	if (len < 7 || memcmp(name, "common_", 7))
		return -ENOENT;
	ent = ktap_tp_rec(tev);
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

/* How a format field that holds an integer is loaded; NONE for others. */
static enum ktap_field_load_type
ktap_field_int_type(const struct ftrace_event_field *f)
{
	switch (f->size) {
	case 1:
		return f->is_signed ? KTAP_FL_S8 : KTAP_FL_U8;
	case 2:
		return f->is_signed ? KTAP_FL_S16 : KTAP_FL_U16;
	case 4:
		return f->is_signed ? KTAP_FL_S32 : KTAP_FL_U32;
	case 8:
		return KTAP_FL_64;
	}
	return KTAP_FL_NONE;
}

/* Decode one field of a record into a script value. */
static int ktap_field_value(struct ktap_vm *vm, struct ktap_tp_event *tev,
			    struct ftrace_event_field *f,
			    struct ktap_value *out)
{
	const char *rec = ktap_tp_rec(tev);
	const char *p = rec + f->offset;
	u32 loc, off, len;
	s64 v;

	if (f->offset < 0 || f->size < 0 || f->offset + f->size > tev->ev.rec_size)
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
		if (off > tev->ev.rec_size || len > tev->ev.rec_size - off)
			return -ENOENT;
		return ktap_value_str(vm, out, rec + off, strnlen(rec + off, len));
	case FILTER_STATIC_STRING:
	case FILTER_COMM:
		return ktap_value_str(vm, out, p, strnlen(p, f->size));
	default:
		break;
	}

	/* arrays and structs have no script value */
	if (!ktap_field_load_value(p, ktap_field_int_type(f), &v))
		return -ENOENT;
	ktap_value_int(out, v);
	return 0;
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

/* What a syscall event's field holds, where it is one of these. */
enum ktap_sc_value {
	KTAP_SCV_NR,
	KTAP_SCV_ARG1,
	KTAP_SCV_RET = KTAP_SCV_ARG1 + 6,
};

/*
 * The syscall value (enum ktap_sc_value) that the field at @off, @size
 * bytes, of a syscall event of @kind holds, as its record lays it out;
 * -1 for any other field.
 */
static int ktap_sc_value_of(enum ktap_sc_kind kind,
			    struct trace_event_call *call, int off, int size)
{
	struct syscall_metadata *meta;
	int nargs;

	switch (kind) {
	case KTAP_SC_RAW_ENTER:
		if (size != sizeof(long))
			return -1;
		if (off == offsetof(struct ktap_raw_sys_enter, id))
			return KTAP_SCV_NR;
		off -= offsetof(struct ktap_raw_sys_enter, args);
		nargs = 6;
		break;
	case KTAP_SC_ENTER:
		if (off == offsetof(struct syscall_trace_enter, nr))
			return size == sizeof(int) ? KTAP_SCV_NR : -1;
		if (size != sizeof(long))
			return -1;
		meta = call->data;
		off -= offsetof(struct syscall_trace_enter, args);
		nargs = meta->nb_args;
		break;
	case KTAP_SC_RAW_EXIT:
		if (size != sizeof(long))
			return -1;
		if (off == offsetof(struct ktap_raw_sys_exit, id))
			return KTAP_SCV_NR;
		return off == offsetof(struct ktap_raw_sys_exit, ret) ?
		       KTAP_SCV_RET : -1;
	case KTAP_SC_EXIT:
		if (off == offsetof(struct syscall_trace_exit, nr))
			return size == sizeof(int) ? KTAP_SCV_NR : -1;
		return off == offsetof(struct syscall_trace_exit, ret) &&
		       size == sizeof(long) ? KTAP_SCV_RET : -1;
	default:
		return -1;
	}
	if (off < 0 || off % (int)sizeof(long) ||
	    off / (int)sizeof(long) >= nargs)
		return -1;
	return KTAP_SCV_ARG1 + off / (int)sizeof(long);
}

/*
 * A field of a syscall event whose record the fast path left unbuilt:
 * its number, an argument or the return value comes straight from what
 * the probe saw, as ktap_field_value() would decode it from the record.
 * False for any other field (the record is then built).
 */
static bool ktap_sc_field_direct(struct ktap_tp_event *tev,
				 const struct ftrace_event_field *f,
				 struct ktap_value *out)
{
	unsigned long args[6];
	int v = ktap_sc_value_of(tev->sc_kind, tev->call, f->offset, f->size);

	if (v < 0)
		return false;
	if (v == KTAP_SCV_NR) {
		ktap_value_int(out, f->size == sizeof(int) ? (int)tev->sc_nr :
							     tev->sc_nr);
	} else if (v == KTAP_SCV_RET) {
		ktap_value_int(out, tev->sc_ret);
	} else {
		syscall_get_arguments(current, tev->ev.regs, args);
		ktap_value_int(out, (s64)args[v - KTAP_SCV_ARG1]);
	}
	return true;
}

#ifdef CONFIG_X86_64
/*
 * Where a 64-bit task's syscall values are in the registers the
 * syscall tracepoints pass, as syscall_get_nr(), syscall_get_arguments()
 * and syscall_get_return_value() read them (the fast path leaves compat
 * syscalls alone). Lets EVFIELD read them with one load.
 */
static const u16 ktap_sc_regs_off[] = {
	[KTAP_SCV_NR]		= offsetof(struct pt_regs, orig_ax),
	[KTAP_SCV_ARG1]		= offsetof(struct pt_regs, di),
	[KTAP_SCV_ARG1 + 1]	= offsetof(struct pt_regs, si),
	[KTAP_SCV_ARG1 + 2]	= offsetof(struct pt_regs, dx),
	[KTAP_SCV_ARG1 + 3]	= offsetof(struct pt_regs, r10),
	[KTAP_SCV_ARG1 + 4]	= offsetof(struct pt_regs, r8),
	[KTAP_SCV_ARG1 + 5]	= offsetof(struct pt_regs, r9),
	[KTAP_SCV_RET]		= offsetof(struct pt_regs, ax),
};
#endif

/**
 * ktap_tp_field_load - the load EVFIELD can do for one format field
 * @sc_kind: the syscall event @call is when it fires through the
 *	     syscall fast path (registers, no record), else KTAP_SC_NONE
 * @call: the event
 * @f: the field of @call
 *
 * Integer fields of 1, 2, 4 or 8 bytes are read from the record; on the
 * syscall fast path of x86-64, the number, arguments and return value
 * from the registers. Strings and arrays keep the call.
 *
 * Return: the load, type KTAP_FL_NONE when there is none.
 */
static struct ktap_field_load ktap_tp_field_load(enum ktap_sc_kind sc_kind,
						 struct trace_event_call *call,
						 const struct ftrace_event_field *f)
{
	struct ktap_field_load ld = { .type = KTAP_FL_NONE };
#ifdef CONFIG_X86_64
	int v = ktap_sc_value_of(sc_kind, call, f->offset, f->size);

	if (v >= 0) {
		ld.base = KTAP_FL_REGS;
		ld.off = ktap_sc_regs_off[v];
		ld.type = v == KTAP_SCV_NR ? KTAP_FL_S32 : KTAP_FL_64;
		return ld;
	}
#endif
	switch (f->filter_type) {
	case FILTER_DYN_STRING:
	case FILTER_RDYN_STRING:
	case FILTER_STATIC_STRING:
	case FILTER_COMM:
		return ld;
	default:
		break;
	}
	if (f->offset < 0 || f->size <= 0 || f->offset + f->size > U16_MAX)
		return ld;
	ld.type = ktap_field_int_type(f);
	if (ld.type == KTAP_FL_NONE)
		return ld;
	ld.base = KTAP_FL_REC;
	ld.off = f->offset;
	ld.end = f->offset + f->size;
	return ld;
}

/*
 * EVFIELD: entry @idx of the image's fields section, as looked up in
 * this event's format at attach; -ENOENT sends the VM to ktap_tp_field().
 */
static int ktap_tp_field_at(struct ktap_vm *vm, struct ktap_event *ev,
			    u32 idx, struct ktap_value *out)
{
	struct ktap_tp_event *tev = container_of(ev, struct ktap_tp_event, ev);
	const struct ktap_tp_slots *s = tev->slots;
	struct ftrace_event_field *f;

	if (!s || idx >= s->n)
		return -ENOENT;
	f = s->f[idx];
	if (!f)
		return -ENOENT;
	if (tev->sc_lazy && ktap_sc_field_direct(tev, f, out))
		return 0;
	return ktap_field_value(vm, tev, f, out);
}

/* ktap_tp_arg() of a syscall event the fast path left unbuilt */
static bool ktap_sc_arg_direct(struct ktap_tp_event *tev, int n,
			       struct ktap_value *out)
{
	unsigned long args[6];
	struct syscall_metadata *meta;
	int nargs = ARRAY_SIZE(args);

	if (n == 0) {
		ktap_value_int(out, tev->sc_nr);
		return true;
	}
	switch (tev->sc_kind) {
	case KTAP_SC_ENTER:
		meta = tev->call->data;
		nargs = meta->nb_args;
		fallthrough;
	case KTAP_SC_RAW_ENTER:
		if (n > nargs)
			return false;
		syscall_get_arguments(current, tev->ev.regs, args);
		ktap_value_int(out, (s64)args[n - 1]);
		return true;
	case KTAP_SC_EXIT:
	case KTAP_SC_RAW_EXIT:
		if (n != 1)
			return false;
		ktap_value_int(out, tev->sc_ret);
		return true;
	default:
		return false;
	}
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
	if (tev->sc_lazy && ktap_sc_arg_direct(tev, n, out))
		return 0;
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
	/*
	 * Output functions were written for the reader's context and some
	 * reach helpers that take locks. print(e) stores the record for
	 * them instead (ktap_tp_record()); a string made in the handler is
	 * refused in NMI, where such a lock may be held by what we
	 * interrupted.
	 */
	if (in_nmi())
		return -EPERM;
	/* One iterator per CPU: a nested firing on this CPU goes without. */
	if (this_cpu_inc_return(ktap_iter_busy) != 1) {
		ret = -EBUSY;
		goto out;
	}
	iter = ktap_iters[smp_processor_id()];
	trace_seq_init(&iter->seq);
	trace_seq_init(&iter->tmp_seq);
	iter->tr = NULL;
	iter->ent = ktap_tp_rec(tev);
	iter->ent_size = tev->ev.rec_size;
	iter->cpu = smp_processor_id();
	te->funcs->trace(iter, 0, te);
	ktap_put_seq(s, &iter->seq);
out:
	this_cpu_dec(ktap_iter_busy);
	return ret;
}

/* The raw record, for print(e) to store and ftrace's reader to format. */
static void ktap_tp_record(struct ktap_event *ev, const void **rec, u32 *size)
{
	struct ktap_tp_event *tev = container_of(ev, struct ktap_tp_event, ev);

	*rec = ktap_tp_rec(tev);
	*size = tev->ev.rec_size;
}

/* The tracepoint's caller is one frame further when it iterated. */
static unsigned int ktap_tp_stack(struct ktap_event *ev, unsigned long *store,
				  unsigned int size, bool user)
{
	struct ktap_tp_event *tev = container_of(ev, struct ktap_tp_event, ev);

	ev->iterated = tev->tp && ktap_tp_iterated(tev->tp);
	return ktap_event_stack(ev, store, size, user);
}

static const struct ktap_event_ops ktap_tp_ops = {
	.field		= ktap_tp_field,
	.field_at	= ktap_tp_field_at,
	.tostring	= ktap_tp_tostring,
	.record		= ktap_tp_record,
	.arg		= ktap_tp_arg,
	.set_retval	= ktap_no_set_retval,
	.stack		= ktap_tp_stack,
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
 * @raw_enter_slots: the image's fields resolved in @raw_enter, or NULL
 * @raw_exit_slots: the same for @raw_exit
 * @on_enter: registered on the sys_enter tracepoint
 * @on_exit: registered on the sys_exit tracepoint
 * @enter: syscall numbers whose syscalls:sys_enter_* event is asked for
 * @exit: the same for syscalls:sys_exit_*
 * @meta: syscall metadata by number (its enter_event and exit_event)
 * @enter_slots: by syscall number, the image's fields resolved in its
 *		 syscalls:sys_enter_* event, or NULL
 * @exit_slots: the same for syscalls:sys_exit_*
 */
struct ktap_sc {
	struct ktap_handler		*h;
	struct trace_event_call		*raw_enter;
	struct trace_event_call		*raw_exit;
	struct ktap_tp_slots		*raw_enter_slots;
	struct ktap_tp_slots		*raw_exit_slots;
	bool				on_enter;
	bool				on_exit;
	DECLARE_BITMAP(enter, NR_syscalls);
	DECLARE_BITMAP(exit, NR_syscalls);
	struct syscall_metadata		*meta[NR_syscalls];
	struct ktap_tp_slots		*enter_slots[NR_syscalls];
	struct ktap_tp_slots		*exit_slots[NR_syscalls];
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

/*
 * Most handlers never read the record, so the fast path leaves it out
 * and ktap_sc_build() makes it on first use, in this CPU's buffer.
 * Only the handler run that ktap's recursion guard admitted on this CPU
 * (one at a time, NMI included) calls the event's ops, so the buffer
 * has one user at a time.
 */
static DEFINE_PER_CPU(union ktap_sc_rec, ktap_sc_recs);

static noinline void ktap_sc_build(struct ktap_tp_event *tev)
{
	union ktap_sc_rec *rec = this_cpu_ptr(&ktap_sc_recs);
	struct syscall_metadata *meta;
	struct pt_regs *regs = tev->ev.regs;
	u32 size = 0;

	/* no stale bytes in padding (after nr): print(e) stores the record */
	memset(rec, 0, sizeof(struct syscall_trace_enter));
	switch (tev->sc_kind) {
	case KTAP_SC_RAW_ENTER:
		rec->raw_enter.id = tev->sc_nr;
		syscall_get_arguments(current, regs, rec->raw_enter.args);
		size = sizeof(rec->raw_enter);
		break;
	case KTAP_SC_ENTER:
		meta = tev->call->data;
		rec->enter.nr = tev->sc_nr;
		syscall_get_arguments(current, regs, rec->enter.args);
		size = sizeof(rec->enter) + meta->nb_args * sizeof(long);
		break;
	case KTAP_SC_RAW_EXIT:
		rec->raw_exit.id = tev->sc_nr;
		rec->raw_exit.ret = tev->sc_ret;
		size = sizeof(rec->raw_exit);
		break;
	case KTAP_SC_EXIT:
		rec->exit.nr = tev->sc_nr;
		rec->exit.ret = tev->sc_ret;
		size = sizeof(rec->exit);
		break;
	}
	rec->enter.ent.type = tev->call->event.type;
	rec->enter.ent.flags = 0;
	rec->enter.ent.preempt_count = preempt_count() & 0xff;
	rec->enter.ent.pid = current->pid;
	tev->ev.rec = rec;
	tev->ev.rec_size = size;
	tev->sc_lazy = false;
}

static __always_inline void ktap_sc_fire(struct ktap_sc *sc,
					 struct trace_event_call *call,
					 const struct ktap_tp_slots *slots,
					 enum ktap_sc_kind kind, long nr,
					 long ret, struct pt_regs *regs,
					 struct tracepoint *tp,
					 unsigned long caller)
{
	struct ktap_tp_event tev = {
		.ev = { .ops = &ktap_tp_ops, .regs = regs, .caller = caller,
			.loads = slots ? slots->loads : NULL },
		.call = call,
		.slots = slots,
		.tp = tp,
		.sc_kind = kind,
		.sc_lazy = true,
		.sc_nr = nr,
		.sc_ret = ret,
	};

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

	if (id < 0 || id >= NR_syscalls || ktap_sc_compat(regs))
		return;
	if (sc->raw_enter)
		ktap_sc_fire(sc, sc->raw_enter, sc->raw_enter_slots,
			     KTAP_SC_RAW_ENTER, id, 0, regs, ktap_tp_sys_enter,
			     _RET_IP_);
	if (test_bit(id, sc->enter))
		ktap_sc_fire(sc, sc->meta[id]->enter_event,
			     sc->enter_slots[id], KTAP_SC_ENTER, id, 0, regs,
			     ktap_tp_sys_enter, _RET_IP_);
}

static void ktap_sc_exit_probe(void *data, struct pt_regs *regs, long ret)
{
	struct ktap_sc *sc = data;
	long nr;

	nr = syscall_get_nr(current, regs);
	if (nr < 0 || nr >= NR_syscalls || ktap_sc_compat(regs))
		return;
	if (sc->raw_exit)
		ktap_sc_fire(sc, sc->raw_exit, sc->raw_exit_slots,
			     KTAP_SC_RAW_EXIT, nr, ret, regs, ktap_tp_sys_exit,
			     _RET_IP_);
	if (test_bit(nr, sc->exit))
		ktap_sc_fire(sc, sc->meta[nr]->exit_event, sc->exit_slots[nr],
			     KTAP_SC_EXIT, nr, ret, regs, ktap_tp_sys_exit,
			     _RET_IP_);
}

/*
 * Take event @call onto the syscall fast path if it is a syscall event.
 * Returns false when the event needs a perf counter instead. Called with
 * trace_event_read_lock() held, so the event cannot go away meanwhile;
 * syscall events are never unregistered.
 */
static bool ktap_sc_claim(struct ktap_sc *sc, struct trace_event_call *call)
{
	struct syscall_metadata *meta;
	const char *sys;

	if (!ktap_tp_sys_enter || !ktap_tp_sys_exit)
		return false;
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
	struct ktap_tp_ctx *ctx = event->overflow_handler_context;
	struct trace_event_call *call = event->tp_event;
	struct ktap_tp_event tev = { .call = call };

	if (!(data->sample_flags & PERF_SAMPLE_RAW) || !data->raw || !call)
		return;
	/* Pairs with smp_store_release() in ktap_tp_attach_perf(). */
	tev.slots = smp_load_acquire(&ctx->slots);
	if (tev.slots)
		tev.ev.loads = tev.slots->loads;
	tev.ev.rec = data->raw->frag.data;
	tev.ev.rec_size = data->raw->frag.size;
	if (tev.ev.rec_size < sizeof(struct trace_entry))
		return;
	tev.ev.ops = &ktap_tp_ops;
	tev.ev.name = trace_event_name(call) ?: "";
	tev.ev.regs = regs;
	/*
	 * perf_trace_##call() took @regs with perf_fetch_caller_regs(): its
	 * ip is where it returns to. Dynamic events (kprobe events) pass
	 * the registers they were hit with.
	 */
	if (call->flags & TRACE_EVENT_FL_TRACEPOINT) {
		tev.ev.caller = instruction_pointer(regs);
		tev.tp = call->tp;
	}
	ktap_handler_fire(ctx->h, &tev.ev);
}

/**
 * struct ktap_tp_pat - a tracepoint probe's SYSTEM:EVENT pattern, split
 * @buf: the copy @sys and @event point into; kfree() it
 * @sys: glob the event's system must match
 * @event: glob the event's name must match
 */
struct ktap_tp_pat {
	char		*buf;
	const char	*sys;
	const char	*event;
};

/*
 * Split @target: "SYSTEM:EVENT", exactly one ':' and neither half empty,
 * either half with * and ? globs. Returns 0, -EINVAL when @target is no
 * such pattern, or -ENOMEM.
 */
static int ktap_tp_pat_parse(struct ktap_tp_pat *pat, const char *target)
{
	const char *colon;
	size_t at;

	if (!target)
		return -EINVAL;
	colon = strchr(target, ':');
	if (!colon || colon == target || !colon[1] || strchr(colon + 1, ':'))
		return -EINVAL;
	pat->buf = kstrdup(target, GFP_KERNEL);
	if (!pat->buf)
		return -ENOMEM;
	at = colon - target;
	pat->buf[at] = '\0';
	pat->sys = pat->buf;
	pat->event = pat->buf + at + 1;
	return 0;
}

/*
 * Does @call match @pat, and can it be a perf tracepoint a script
 * attaches to? ftrace's own events (ftrace:function and the like) carry
 * TRACE_EVENT_FL_IGNORE_ENABLE; perf_trace_init() wants class->reg.
 */
static bool ktap_tp_match(const struct ktap_tp_pat *pat,
			  struct trace_event_call *call)
{
	const char *name;

	if (call->flags & TRACE_EVENT_FL_IGNORE_ENABLE)
		return false;
	if (!call->class || !call->class->reg || !call->class->system)
		return false;
	name = trace_event_name(call);
	return name && glob_match(pat->sys, call->class->system) &&
	       glob_match(pat->event, name);
}

/**
 * ktap_tp_for_each - visit the events a pattern matches
 * @pat: the pattern
 * @fn: called for each matching event with its type, the id perf knows
 *	it by; a nonzero return stops the walk
 * @arg: passed to @fn
 *
 * The events are looked up by type under trace_event_read_lock(), which
 * keeps them registered meanwhile (an event is unregistered with
 * trace_event_sem held for writing). ftrace_events and event_mutex are
 * not exported and ktap may be a module, hence the walk over the types:
 * those above __TRACE_LAST_TYPE are only ever given to the event of a
 * struct trace_event_call. Process context; may sleep.
 *
 * Return: 0 when every type was visited, else what @fn returned.
 */
static int ktap_tp_for_each(const struct ktap_tp_pat *pat,
			    int (*fn)(struct trace_event_call *call, u32 type,
				      void *arg),
			    void *arg)
{
	struct trace_event_call *call;
	struct trace_event *te;
	int ret = 0;
	u32 type;

	trace_event_read_lock();
	for (type = __TRACE_LAST_TYPE + 1; type <= TRACE_EVENT_TYPE_MAX; type++) {
		if (!(type % 1024))
			cond_resched();
		te = ftrace_find_event(type);
		if (!te)
			continue;
		call = container_of(te, struct trace_event_call, event);
		if (!ktap_tp_match(pat, call))
			continue;
		ret = fn(call, type, arg);
		if (ret)
			break;
	}
	trace_event_read_unlock();
	return ret;
}

/* An image field name, in the sorted lookup table of ktap_tp_res. */
struct ktap_tp_name {
	const char	*name;
	u32		idx;
};

/**
 * struct ktap_tp_res - attach-time state of a tracepoint probe
 * @h: the handler being attached
 * @spec: its probe as written, for messages
 * @target: its pattern as written
 * @pat: the pattern, split
 * @sc: its syscall events
 * @nevents: events @pat matched
 * @perf: types of the events to reach through perf counters
 * @nperf: bits set in @perf
 * @nfields: ktap_vm_nfields(): the size of every slot array
 * @names: the image's field names, sorted by name
 * @nnames: entries at @names
 * @hit: fields found in the format of at least one of the events
 * @unseen: the format of some event was not looked at (no counter)
 * @wild: @target has globs: an event that cannot be attached is skipped
 * @nattached: events given perf counters
 * @budget: bytes of slot arrays still allowed (KTAP_MAX_SLOT_BYTES)
 */
struct ktap_tp_res {
	struct ktap_handler	*h;
	const char		*spec;
	const char		*target;
	struct ktap_tp_pat	pat;
	struct ktap_sc		*sc;
	u32			nevents;
	unsigned long		*perf;
	u32			nperf;
	u32			nfields;
	struct ktap_tp_name	*names;
	u32			nnames;
	unsigned long		*hit;
	bool			unseen;
	bool			wild;
	u32			nattached;
	size_t			budget;
};

static int ktap_tp_name_cmp(const void *a, const void *b)
{
	const struct ktap_tp_name *x = a, *y = b;

	return strcmp(x->name, y->name);
}

/* The image's field names, sorted, and the bitmaps of @rs. */
static int ktap_tp_res_init(struct ktap_tp_res *rs, struct ktap_vm *vm)
{
	const struct ktap_bc_field *fld;
	const char *name;
	u32 i;

	rs->nfields = ktap_vm_nfields(vm);
	if (rs->nfields > KTAP_MAX_FIELDS)
		return -E2BIG;
	rs->budget = KTAP_MAX_SLOT_BYTES;
	rs->perf = bitmap_zalloc(TRACE_EVENT_TYPE_MAX + 1, GFP_KERNEL);
	if (!rs->perf)
		return -ENOMEM;
	if (!rs->nfields)
		return 0;
	rs->names = kvcalloc(rs->nfields, sizeof(*rs->names), GFP_KERNEL_ACCOUNT);
	rs->hit = bitmap_zalloc(rs->nfields, GFP_KERNEL);
	if (!rs->names || !rs->hit)
		return -ENOMEM;
	for (i = 0; i < rs->nfields; i++) {
		fld = ktap_vm_field(vm, i);
		name = fld ? ktap_vm_str(vm, fld->name) : NULL;
		if (!name || !*name)
			continue;
		rs->names[rs->nnames].name = name;
		rs->names[rs->nnames++].idx = i;
	}
	sort(rs->names, rs->nnames, sizeof(*rs->names), ktap_tp_name_cmp, NULL);
	return 0;
}

static void ktap_tp_res_free(struct ktap_tp_res *rs)
{
	bitmap_free(rs->hit);
	kvfree(rs->names);
	bitmap_free(rs->perf);
	kfree(rs->pat.buf);
}

/* Index of the first of @rs->names not ordered before @name. */
static u32 ktap_tp_name_first(const struct ktap_tp_res *rs, const char *name)
{
	u32 lo = 0, hi = rs->nnames, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (strcmp(rs->names[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Names ktap_tp_field() answers before it looks at the format of an
 * event of @kind (see ktap_sc_field()): EVFIELD reads them by name too,
 * so that it reads what e.NAME reads. The common_* fields are not in an
 * event's own format.
 */
static bool ktap_tp_shadowed(enum ktap_sc_kind kind, const char *name)
{
	bool enter = kind == KTAP_SC_ENTER || kind == KTAP_SC_RAW_ENTER;

	if (!strcmp(name, "name"))
		return true;
	if (kind == KTAP_SC_NONE)
		return false;
	if (!strcmp(name, "sc_nr") || !strcmp(name, "sc_is_enter"))
		return true;
	if (!strcmp(name, "retval"))
		return !enter;
	if (strlen(name) == 7 && !strncmp(name, "sc_arg", 6) &&
	    name[6] >= '1' && name[6] <= '6')
		return enter;
	return false;
}

/**
 * ktap_tp_resolve - look the image's fields up in one event's format
 * @rs: attach-time state
 * @call: the event, which cannot go away meanwhile
 * @sc_path: @call fires through the syscall fast path (struct ktap_sc),
 *	     not through perf: its record is built only on demand
 * @out: the slot array built for @call, or NULL when no field is read
 *	 through one (none in the format, or the budget is spent)
 *
 * Marks in @rs->hit every field the format of @call has. The slot array
 * holds the first format field of each name, as ktap_tp_field() finds.
 *
 * Return: 0 or -ENOMEM.
 */
static int ktap_tp_resolve(struct ktap_tp_res *rs,
			   struct trace_event_call *call, bool sc_path,
			   struct ktap_tp_slots **out)
{
	enum ktap_sc_kind kind = ktap_sc_call_kind(call);
	struct ktap_tp_slots *s = NULL;
	struct ftrace_event_field *f;
	struct list_head *head;
	size_t size, fsize;
	bool shadowed;
	u32 i, idx;

	*out = NULL;
	if (!rs->nnames)
		return 0;
	head = trace_get_fields(call);
	if (!head)
		return 0;
	fsize = struct_size(s, f, rs->nfields);
	size = fsize + struct_size(s->loads, l, rs->nfields);
	list_for_each_entry(f, head, link) {
		if (!f->name)
			continue;
		i = ktap_tp_name_first(rs, f->name);
		if (i == rs->nnames || strcmp(rs->names[i].name, f->name))
			continue;
		shadowed = ktap_tp_shadowed(kind, f->name);
		for (; i < rs->nnames && !strcmp(rs->names[i].name, f->name); i++) {
			idx = rs->names[i].idx;
			__set_bit(idx, rs->hit);
			if (shadowed)
				continue;
			if (!s && size <= rs->budget) {
				s = kvzalloc(size, GFP_KERNEL_ACCOUNT);
				if (!s)
					return -ENOMEM;
				s->n = rs->nfields;
				s->loads = (void *)s + fsize;
				s->loads->n = rs->nfields;
				rs->budget -= size;
			}
			if (s && !s->f[idx]) {
				s->f[idx] = f;
				s->loads->l[idx] =
					ktap_tp_field_load(sc_path ? kind :
							   KTAP_SC_NONE,
							   call, f);
			}
		}
	}
	*out = s;
	return 0;
}

/* ktap_tp_for_each() callback of ktap_tp_attach(): sort the events out. */
static int ktap_tp_collect(struct trace_event_call *call, u32 type, void *arg)
{
	struct ktap_tp_res *rs = arg;

	rs->nevents++;
	if (!ktap_sc_claim(rs->sc, call)) {
		__set_bit(type, rs->perf);
		rs->nperf++;
	}
	return 0;
}

/* The image's fields in every syscall event @rs->sc claimed. */
static int ktap_sc_resolve(struct ktap_tp_res *rs)
{
	struct ktap_sc *sc = rs->sc;
	unsigned int nr;
	int ret;

	if (sc->raw_enter) {
		ret = ktap_tp_resolve(rs, sc->raw_enter, true,
				      &sc->raw_enter_slots);
		if (ret)
			return ret;
	}
	if (sc->raw_exit) {
		ret = ktap_tp_resolve(rs, sc->raw_exit, true,
				      &sc->raw_exit_slots);
		if (ret)
			return ret;
	}
	for_each_set_bit(nr, sc->enter, NR_syscalls) {
		ret = ktap_tp_resolve(rs, sc->meta[nr]->enter_event, true,
				      &sc->enter_slots[nr]);
		if (ret)
			return ret;
	}
	for_each_set_bit(nr, sc->exit, NR_syscalls) {
		ret = ktap_tp_resolve(rs, sc->meta[nr]->exit_event, true,
				      &sc->exit_slots[nr]);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * A wildcard matched event @type, which cannot be attached (@err): an
 * event perf refuses to count, such as ftrace's own, or one whose
 * registration fails. Count it and go on with the others.
 */
static void ktap_tp_skip(struct ktap_tp_res *rs, unsigned int type, int err)
{
	struct trace_event_call *call;
	struct trace_event *te;

	trace_event_read_lock();
	te = ftrace_find_event(type);
	call = te ? container_of(te, struct trace_event_call, event) : NULL;
	ktap_session_skipped(rs->h->sess,
			     "ktap: probe '%s': %s:%s skipped (error %pe)\n",
			     rs->spec, call ? call->class->system : "?",
			     call ? trace_event_name(call) : "?", ERR_PTR(err));
	trace_event_read_unlock();
}

/*
 * ktap_cpus create callback of a tracepoint probe: the counter of event
 * @kind on @cpu. An event type freed and handed to another event since
 * the probe was attached is not created again.
 */
static struct perf_event *ktap_tp_create(struct ktap_cpus *c, u32 kind,
					 int cpu)
{
	struct ktap_tp *tp = container_of(c, struct ktap_tp, cpus);
	struct ktap_tp_ctx *ctx = &tp->ctx[kind];
	struct perf_event_attr attr = {
		.type		= PERF_TYPE_TRACEPOINT,
		.size		= sizeof(attr),
		.sample_period	= 1,
		.sample_type	= PERF_SAMPLE_RAW,
	};
	struct trace_event_call *call;
	struct perf_event *pe;

	/* Pairs with smp_store_release() in ktap_tp_attach_perf(). */
	if (kind >= smp_load_acquire(&tp->nctx) || READ_ONCE(ctx->dead))
		return NULL;
	attr.config = ctx->type;
	call = READ_ONCE(ctx->call);
	pe = perf_event_create_kernel_counter(&attr, cpu, NULL,
					      ktap_tp_overflow, ctx);
	if (!IS_ERR(pe) && call && pe->tp_event != call) {
		perf_event_release_kernel(pe);
		return ERR_PTR(-EAGAIN);
	}
	return pe;
}

/**
 * ktap_tp_attach_perf - counters for the events off the syscall fast path
 * @rs: attach-time state; @rs->perf lists the event types
 * @tp: the attachment, with room for the counters and contexts
 *
 * One context per event, shared by its per-CPU counters. The image's
 * fields are looked up in the event the counters hold, which perf keeps
 * registered until they are released, not in the one the walk found: a
 * type freed and given to another event meanwhile is caught here.
 *
 * Return: 0 or a negative error; the counters created stay in @tp.
 */
static int ktap_tp_attach_perf(struct ktap_tp_res *rs, struct ktap_tp *tp)
{
	struct trace_event_call *call;
	struct ktap_tp_slots *slots;
	struct ktap_tp_ctx *ctx;
	struct perf_event *pe;
	unsigned int type;
	u32 kind;
	int n, ret;

	for_each_set_bit(type, rs->perf, TRACE_EVENT_TYPE_MAX + 1) {
		kind = tp->nctx;
		ctx = &tp->ctx[kind];
		ctx->h = rs->h;
		ctx->type = type;
		/* Pairs with smp_load_acquire() in ktap_tp_create(). */
		smp_store_release(&tp->nctx, kind + 1);
		n = ktap_cpus_create(&tp->cpus, kind);
		if (n < 0 && rs->wild && n != -E2BIG && n != -ENOMEM) {
			/* this event's counters on the CPUs done so far */
			WRITE_ONCE(ctx->dead, true);
			ktap_cpus_release_kind(&tp->cpus, kind);
			ktap_tp_skip(rs, type, n);
			continue;
		}
		if (n < 0)
			return n;
		rs->nattached++;
		call = NULL;
		scoped_guard(mutex, &tp->cpus.lock) {
			pe = ktap_cpus_any(&tp->cpus, kind);
			if (pe)
				call = pe->tp_event;
		}
		if (!pe) {
			rs->unseen = true;
			continue;
		}
		if (!call || !ktap_tp_match(&rs->pat, call)) {
			ktap_session_printf(rs->h->sess,
					    "ktap: probe '%s': event %u changed while '%s' was being attached, try again\n",
					    rs->spec, type, rs->target);
			return -EAGAIN;
		}
		WRITE_ONCE(ctx->call, call);
		ret = ktap_tp_resolve(rs, call, false, &slots);
		if (ret)
			return ret;
		/* Pairs with smp_load_acquire() in ktap_tp_overflow(). */
		smp_store_release(&ctx->slots, slots);
	}
	return 0;
}

/*
 * Each field the image reads in this probe's handler must be in the
 * format of at least one of its events.
 */
static int ktap_tp_check_fields(struct ktap_tp_res *rs)
{
	struct ktap_vm *vm = rs->h->hot->vm;
	const struct ktap_bc_field *fld;
	u32 i;

	/* The field may be in an event whose format was not looked at. */
	if (rs->unseen)
		return 0;
	for (i = 0; i < rs->nfields; i++) {
		fld = ktap_vm_field(vm, i);
		if (!fld || fld->probe != rs->h->probe || test_bit(i, rs->hit))
			continue;
		ktap_session_printf(rs->h->sess,
				    "ktap: probe '%s': no event matching '%s' has a field '%s'\n",
				    rs->spec, rs->target,
				    ktap_vm_str(vm, fld->name) ?: "?");
		return -EINVAL;
	}
	return 0;
}

/* Free a slot array or other attach-time memory; @rcu: after a grace period. */
static void ktap_tp_kvfree(void *p, bool rcu)
{
	if (rcu)
		kvfree_rcu_mightsleep(p);
	else
		kvfree(p);
}

static void ktap_sc_free(struct ktap_sc *sc, bool rcu)
{
	u32 nr;

	ktap_tp_kvfree(sc->raw_enter_slots, rcu);
	ktap_tp_kvfree(sc->raw_exit_slots, rcu);
	for (nr = 0; nr < NR_syscalls; nr++) {
		ktap_tp_kvfree(sc->enter_slots[nr], rcu);
		ktap_tp_kvfree(sc->exit_slots[nr], rcu);
	}
	ktap_tp_kvfree(sc, rcu);
}

/* @tp itself is not read by the probes: only its contexts and arrays. */
static void ktap_tp_free(struct ktap_tp *tp, bool rcu)
{
	u32 i;

	for (i = 0; i < tp->nctx; i++)
		ktap_tp_kvfree(tp->ctx[i].slots, rcu);
	ktap_tp_kvfree(tp->ctx, rcu);
	kvfree(tp);
}

/**
 * ktap_tp_attach - attach a tracepoint probe
 * @h: the handler, of a KTAP_PROBE_TRACEPOINT probe
 *
 * Expands the probe's SYSTEM:EVENT pattern: syscall events go on the
 * syscall fast path, every other event gets perf counters. Every entry
 * of the image's fields section is looked up, once, in the format of
 * each event, for EVFIELD. Fails when the pattern matches no event, or
 * when a field of this probe is in none of its events.
 *
 * Return: 0 or a negative error; nothing stays attached on error.
 */
static int ktap_tp_attach(struct ktap_handler *h)
{
	struct ktap_vm *vm = h->hot->vm;
	struct ktap_tp_res rs = { .h = h };
	struct ktap_sc *sc;
	struct ktap_tp *tp;
	int ret;

	rs.spec = ktap_vm_str(vm, h->bp->spec) ?: "?";
	rs.target = ktap_vm_str(vm, h->bp->target);
	ret = ktap_tp_pat_parse(&rs.pat, rs.target);
	if (ret)
		return ret;
	rs.wild = strpbrk(rs.target, "*?");
	ret = ktap_tp_res_init(&rs, vm);
	if (ret)
		goto out;
	sc = kvzalloc(sizeof(*sc), GFP_KERNEL_ACCOUNT);
	if (!sc) {
		ret = -ENOMEM;
		goto out;
	}
	sc->h = h;
	rs.sc = sc;

	ktap_tp_for_each(&rs.pat, ktap_tp_collect, &rs);
	if (!rs.nevents) {
		ktap_session_printf(h->sess,
				    "ktap: probe '%s': no tracepoint matches '%s'\n",
				    rs.spec, rs.target);
		ret = -ENOENT;
		goto err_sc;
	}
	tp = kvzalloc(sizeof(*tp), GFP_KERNEL_ACCOUNT);
	if (!tp) {
		ret = -ENOMEM;
		goto err_sc;
	}
	tp->sc = sc;
	ret = ktap_sc_resolve(&rs);
	if (ret)
		goto err_tp;
	if (rs.nperf) {
		tp->ctx = kvcalloc(rs.nperf, sizeof(*tp->ctx), GFP_KERNEL_ACCOUNT);
		if (!tp->ctx) {
			ret = -ENOMEM;
			goto err_tp;
		}
		ret = ktap_cpus_init(&tp->cpus, h, rs.nperf, ktap_tp_create);
		if (ret == -E2BIG)
			ktap_session_printf(h->sess,
					    "ktap: probe '%s': %u events on %u possible CPUs are more counters than ktap keeps (%u)\n",
					    rs.spec, rs.nperf, nr_cpu_ids,
					    KTAP_MAX_PERF_SLOTS);
		if (ret) {
			kvfree(tp->ctx);
			tp->ctx = NULL;
			goto err_tp;
		}
	}
	ret = ktap_tp_attach_perf(&rs, tp);
	if (ret)
		goto err_perf;
	if (!rs.nattached && rs.nperf == rs.nevents) {
		ktap_session_printf(h->sess,
				    "ktap: probe '%s': none of the %u events matching '%s' can be attached\n",
				    rs.spec, rs.nevents, rs.target);
		ret = -ENOENT;
		goto err_perf;
	}
	ret = ktap_tp_check_fields(&rs);
	if (ret)
		goto err_perf;
	ret = ktap_sc_register(sc);
	if (ret)
		goto err_sc_reg;
	h->priv = tp;
	goto out;

err_sc_reg:
	ktap_sc_unregister(sc);
err_perf:
	if (tp->ctx)
		ktap_cpus_destroy(&tp->cpus);
	/* A probe may have seen @sc or a context already. */
	tracepoint_synchronize_unregister();
err_tp:
	ktap_tp_free(tp, false);
err_sc:
	ktap_sc_free(sc, false);
out:
	ktap_tp_res_free(&rs);
	return ret;
}

static void ktap_perf_detach(struct ktap_handler *h)
{
	struct ktap_tp *tp = h->priv;

	ktap_sc_unregister(tp->sc);
	if (tp->ctx)
		ktap_cpus_destroy(&tp->cpus);
	/* Probes may still run until a grace period has passed. */
	ktap_sc_free(tp->sc, true);
	ktap_tp_free(tp, true);
}

/* ---- fetch arguments of kprobes and uprobes ---- */

/**
 * struct ktap_fetch - a probe's fetch arguments, resolved at attach
 * @user: every memory read is of user memory (a uprobe)
 * @n: how many
 * @arg: each one's image entry and, for a register, its pt_regs offset
 */
struct ktap_fetch {
	bool	user;
	u32	n;
	struct ktap_fetch_arg {
		const struct ktap_bc_fetch	*bc;
		const char			*name;
		unsigned int			regoff;
	} arg[] __counted_by(n);
};

/**
 * ktap_fetch_prepare - resolve the fetch arguments of a handler's probe
 * @h: the handler of a kprobe or uprobe
 * @user: the probe is a uprobe
 *
 * Register names are looked up here, once, so that the probe only
 * indexes struct pt_regs.
 *
 * Return: the arguments, NULL when the probe has none, or an ERR_PTR
 * (-EINVAL with a message in the session output for an unknown register).
 */
static struct ktap_fetch *ktap_fetch_prepare(struct ktap_handler *h,
					     bool user)
{
	struct ktap_vm *vm = h->hot->vm;
	const struct ktap_bc_fetch *bc;
	struct ktap_fetch *fa;
	u32 i, n;

	bc = ktap_vm_fetch(vm, h->probe, &n);
	if (!n)
		return NULL;
	fa = kzalloc(struct_size(fa, arg, n), GFP_KERNEL_ACCOUNT);
	if (!fa)
		return ERR_PTR(-ENOMEM);
	fa->n = n;
	fa->user = user;
	for (i = 0; i < n; i++) {
		struct ktap_fetch_arg *a = &fa->arg[i];
		int off;

		a->bc = &bc[i];
		a->name = ktap_vm_str(vm, bc[i].name);
		if (bc[i].base != KTAP_FETCH_REG)
			continue;
		off = regs_query_register_offset(ktap_vm_str(vm, bc[i].reg));
		if (off < 0) {
			ktap_session_printf(h->sess,
					    "ktap: probe '%s': argument '%s': this machine has no register '%s'\n",
					    ktap_vm_str(vm, h->bp->spec) ?: "?",
					    a->name, ktap_vm_str(vm, bc[i].reg));
			kfree(fa);
			return ERR_PTR(-EINVAL);
		}
		a->regoff = off;
	}
	return fa;
}

static int ktap_fetch_mem(void *dst, unsigned long addr, size_t size,
			  bool user)
{
	if (user)
		return copy_from_user_nofault(dst, (const void __user *)addr,
					      size);
	return copy_from_kernel_nofault(dst, (const void *)addr, size);
}

static const u8 ktap_fetch_size[KTAP_FETCH_TYPE__COUNT] = {
	[KTAP_FETCH_U8] = 1, [KTAP_FETCH_U16] = 2,
	[KTAP_FETCH_U32] = 4, [KTAP_FETCH_U64] = 8,
	[KTAP_FETCH_S8] = 1, [KTAP_FETCH_S16] = 2,
	[KTAP_FETCH_S32] = 4, [KTAP_FETCH_S64] = 8,
	[KTAP_FETCH_X8] = 1, [KTAP_FETCH_X16] = 2,
	[KTAP_FETCH_X32] = 4, [KTAP_FETCH_X64] = 8,
};

static bool ktap_fetch_signed(u8 type)
{
	return type >= KTAP_FETCH_S8 && type <= KTAP_FETCH_S64;
}

/* The value a fetch argument starts from. */
static int ktap_fetch_base(const struct ktap_fetch *fa,
			   const struct ktap_fetch_arg *a,
			   struct pt_regs *regs, unsigned long *v)
{
	const struct ktap_bc_fetch *bc = a->bc;

	switch (bc->base) {
	case KTAP_FETCH_REG:
		*v = regs_get_register(regs, a->regoff);
		return 0;
	case KTAP_FETCH_ARG:
		*v = regs_get_kernel_argument(regs, bc->reg - 1);
		return 0;
	case KTAP_FETCH_STACK:
		if (!fa->user) {
			*v = regs_get_kernel_stack_nth(regs, bc->reg);
			return 0;
		}
		return ktap_fetch_mem(v, user_stack_pointer(regs) +
				      bc->reg * sizeof(long), sizeof(long),
				      true);
	case KTAP_FETCH_STACKP:
		*v = fa->user ? user_stack_pointer(regs) :
				kernel_stack_pointer(regs);
		return 0;
	case KTAP_FETCH_RETVAL:
		*v = regs_return_value(regs);
		return 0;
	case KTAP_FETCH_IMM:
		*v = bc->imm;
		return 0;
	}
	return -EINVAL;
}

/**
 * ktap_fetch_eval - read one fetch argument
 * @fa: the probe's arguments
 * @i: which
 * @regs: the registers the probe saw
 * @val: a number's value
 * @str: a string's bytes, KTAP_FETCH_STR_MAX of room
 *
 * Probe context, any (NMI included): memory is read with the _nofault
 * accessors.
 *
 * Return: 0 for a number, a string's length (NUL excluded) plus one, or
 * -EFAULT when a read failed.
 */
static int ktap_fetch_eval(const struct ktap_fetch *fa, u32 i,
			   struct pt_regs *regs, u64 *val, char *str)
{
	const struct ktap_fetch_arg *a = &fa->arg[i];
	const struct ktap_bc_fetch *bc = a->bc;
	bool user = fa->user || (bc->flags & KTAP_FETCH_F_USER);
	union {
		u8	b;
		u16	h;
		u32	w;
		u64	q;
	} m;
	unsigned long v;
	u32 d, size;
	long len;
	u64 raw;

	if (bc->base == KTAP_FETCH_COMM) {
		strscpy(str, current->comm, KTAP_FETCH_STR_MAX);
		return strlen(str) + 1;
	}
	if (ktap_fetch_base(fa, a, regs, &v))
		return -EFAULT;
	if (bc->type == KTAP_FETCH_STRING) {
		/* The last read is the string itself. */
		for (d = 0; d + 1 < bc->ndref; d++)
			if (ktap_fetch_mem(&v, v + bc->off[d], sizeof(v), user))
				return -EFAULT;
		if (bc->ndref)
			v += bc->off[bc->ndref - 1];
		len = ktap_strncpy_nofault(str, v, KTAP_FETCH_STR_MAX, user);
		if (len < 0)
			return -EFAULT;
		return len + 1;
	}
	size = ktap_fetch_size[bc->type];
	for (d = 0; d + 1 < bc->ndref; d++)
		if (ktap_fetch_mem(&v, v + bc->off[d], sizeof(v), user))
			return -EFAULT;
	raw = v;
	if (bc->ndref) {
		if (ktap_fetch_mem(&m, v + bc->off[d], size, user))
			return -EFAULT;
		raw = size == 1 ? m.b : size == 2 ? m.h : size == 4 ? m.w : m.q;
	}
	/* A register is truncated to the type, as kprobe_events does. */
	switch (size) {
	case 1:
		*val = ktap_fetch_signed(bc->type) ? (u64)(s8)raw : (u8)raw;
		break;
	case 2:
		*val = ktap_fetch_signed(bc->type) ? (u64)(s16)raw : (u16)raw;
		break;
	case 4:
		*val = ktap_fetch_signed(bc->type) ? (u64)(s32)raw : (u32)raw;
		break;
	default:
		*val = raw;
	}
	return 0;
}

/* Argument @i as a VM value: a number, a string, or nil after a fault. */
static int ktap_fetch_value(struct ktap_vm *vm, const struct ktap_fetch *fa,
			    u32 i, struct pt_regs *regs,
			    struct ktap_value *out)
{
	char str[KTAP_FETCH_STR_MAX];
	u64 v;
	int ret = ktap_fetch_eval(fa, i, regs, &v, str);

	if (ret < 0) {
		out->type = KTAP_TNIL;
		return 0;
	}
	if (ret)
		return ktap_value_str(vm, out, str, ret - 1);
	ktap_value_int(out, v);
	return 0;
}

/* e.NAME of a fetch argument; -ENOENT when @fa has none by that name. */
static int ktap_fetch_field(struct ktap_vm *vm, const struct ktap_fetch *fa,
			    const char *name, u32 len, struct pt_regs *regs,
			    struct ktap_value *out)
{
	u32 i;

	for (i = 0; fa && i < fa->n; i++)
		if (ktap_name_is(name, len, fa->arg[i].name))
			return ktap_fetch_value(vm, fa, i, regs, out);
	return -ENOENT;
}

/**
 * ktap_probe_arg() - argN of a kprobe or uprobe event
 * @vm: the VM, for string arguments
 * @fa: the probe's fetch arguments, or NULL
 * @regs: registers at the probe
 * @n: N
 * @func: the probed function's address
 * @ret: a return probe
 * @ret_addr: where the function returns to (@ret only)
 * @out: the value
 *
 * Numbered as the fields of ftrace's own kprobe and uprobe events, which
 * the original ktap's argN walked: an entry probe has the address
 * (__probe_ip) then its arguments, a return probe the function
 * (__probe_func), the return address (__probe_ret_ip), then its
 * arguments. So arg0 is the function's address; arg1.. at an entry and
 * arg2.. at a return are the fetch arguments, or without any the
 * function's first six arguments (entry) or its return value (return,
 * as if "$retval" had been given).
 *
 * Return: 0, or -ENOENT when the event has no argN.
 */
static int ktap_probe_arg(struct ktap_vm *vm, const struct ktap_fetch *fa,
			  struct pt_regs *regs, int n, unsigned long func,
			  bool ret, unsigned long ret_addr,
			  struct ktap_value *out)
{
	int first = ret ? 2 : 1;

	if (n == 0 || (ret && n == 1)) {
		ktap_value_int(out, n ? ret_addr : func);
		return 0;
	}
	n -= first;
	if (fa)
		return n < fa->n ? ktap_fetch_value(vm, fa, n, regs, out) :
				   -ENOENT;
	if (ret && n == 0)
		ktap_value_int(out, regs_return_value(regs));
	else if (!ret && n < 6)
		ktap_value_int(out, regs_get_kernel_argument(regs, n));
	else
		return -ENOENT;
	return 0;
}

/* " name=value" for each argument, as kprobe_events prints them. */
static void ktap_fetch_print(const struct ktap_fetch *fa,
			     struct pt_regs *regs, struct seq_buf *s)
{
	char str[KTAP_FETCH_STR_MAX];
	u32 i;
	u64 v;

	for (i = 0; fa && i < fa->n; i++) {
		u8 type = fa->arg[i].bc->type;
		int ret = ktap_fetch_eval(fa, i, regs, &v, str);

		seq_buf_printf(s, " %s=", fa->arg[i].name);
		if (ret < 0)
			seq_buf_puts(s, "(fault)");
		else if (ret)
			seq_buf_printf(s, "\"%s\"", str);
		else if (ktap_fetch_signed(type))
			seq_buf_printf(s, "%lld", (s64)v);
		else if (type >= KTAP_FETCH_X8)
			seq_buf_printf(s, "0x%llx", v);
		else
			seq_buf_printf(s, "%llu", v);
	}
}

/* ---- kprobes ---- */

/**
 * struct ktap_kp - attachment of a kprobe or kretprobe probe
 * @h: the handler
 * @name: the probed symbol: event name
 * @ret: a kretprobe
 * @override: e.set_retval() may skip the function (KTAP_PROBE_F_OVERRIDE)
 * @etype: how the function fails (EI_ETYPE_*), when @override
 * @fetch: the probe's fetch arguments, or NULL
 * @kp: the kprobe (@ret false)
 * @rp: the kretprobe (@ret true)
 */
struct ktap_kp {
	struct ktap_handler	*h;
	const char		*name;
	bool			ret;
	bool			override;
	int			etype;
	struct ktap_fetch	*fetch;
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
	return ktap_fetch_field(vm, kev->k->fetch, name, len, ev->regs, out);
}

static int ktap_kp_arg(struct ktap_vm *vm, struct ktap_event *ev, int n,
		       struct ktap_value *out)
{
	struct ktap_kp_event *kev = container_of(ev, struct ktap_kp_event, ev);

	return ktap_probe_arg(vm, kev->k->fetch, ev->regs, n,
			      ktap_kp_addr(kev->k), kev->k->ret, kev->ret_addr,
			      out);
}

/* Like a kprobe event of ftrace: "sym: (sym+0x0/0x40) arg=value ...". */
static int ktap_kp_tostring(struct ktap_vm *vm, struct ktap_event *ev,
			    struct seq_buf *s)
{
	struct ktap_kp_event *kev = container_of(ev, struct ktap_kp_event, ev);
	void *addr = (void *)ktap_kp_addr(kev->k);

	if (kev->k->ret) {
		seq_buf_printf(s, "%s: (%pS <- %ps)", ev->name,
			       (void *)kev->ret_addr, addr);
		if (!kev->k->fetch)
			seq_buf_printf(s, " arg1=0x%lx",
				       regs_return_value(ev->regs));
	} else {
		seq_buf_printf(s, "%s: (%pS)", ev->name, addr);
	}
	ktap_fetch_print(kev->k->fetch, ev->regs, s);
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
	.stack		= ktap_event_stack,
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
		/* not -EINVAL: that reads as a function kprobes refuse */
		return -EOPNOTSUPP;
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
	k = kzalloc(sizeof(*k), GFP_KERNEL_ACCOUNT);
	if (!k)
		return -ENOMEM;
	k->h = h;
	k->name = sym;
	k->ret = bp->flags & KTAP_PROBE_F_RETURN;
	k->fetch = ktap_fetch_prepare(h, false);
	if (IS_ERR(k->fetch)) {
		ret = PTR_ERR(k->fetch);
		k->fetch = NULL;
		goto err;
	}
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
	kfree(k->fetch);
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
	kfree(k->fetch);
	kfree(k);
}

/* ---- uprobes ---- */

struct ktap_up {
	struct ktap_handler	*h;
	struct uprobe_consumer	uc;
	struct uprobe		*uprobe;
	struct path		path;
	const char		*name;
	struct ktap_fetch	*fetch;
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
	return ktap_fetch_field(vm, uev->u->fetch, name, len, ev->regs, out);
}

/* argN as for kprobes; a USDT probe's arguments are its fetch arguments. */
static int ktap_up_arg(struct ktap_vm *vm, struct ktap_event *ev, int n,
		       struct ktap_value *out)
{
	struct ktap_up_event *uev = container_of(ev, struct ktap_up_event, ev);

	return ktap_probe_arg(vm, uev->u->fetch, ev->regs, n,
			      uev->func ?: instruction_pointer(ev->regs),
			      uev->func != 0, instruction_pointer(ev->regs), out);
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
	ktap_fetch_print(uev->u->fetch, ev->regs, s);
	return 0;
}

static const struct ktap_event_ops ktap_up_ops = {
	.field		= ktap_up_field,
	.tostring	= ktap_up_tostring,
	.arg		= ktap_up_arg,
	.set_retval	= ktap_no_set_retval,
	.stack		= ktap_event_stack,
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
	u = kzalloc(sizeof(*u), GFP_KERNEL_ACCOUNT);
	if (!u)
		return -ENOMEM;
	u->h = h;
	u->name = ktap_vm_str(h->hot->vm, bp->spec) ?: file;
	u->fetch = ktap_fetch_prepare(h, true);
	if (IS_ERR(u->fetch)) {
		ret = PTR_ERR(u->fetch);
		u->fetch = NULL;
		goto err;
	}
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
	/* bp->attr: a USDT semaphore, counted while the probe is attached */
	u->uprobe = uprobe_register(inode, bp->arg, bp->attr, &u->uc);
	if (IS_ERR(u->uprobe)) {
		ret = PTR_ERR(u->uprobe);
		goto err_path;
	}
	h->priv = u;
	return 0;
err_path:
	path_put(&u->path);
err:
	kfree(u->fetch);
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
	.stack		= ktap_event_stack,
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

	t = kzalloc(sizeof(*t), GFP_KERNEL_ACCOUNT);
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

/**
 * struct ktap_counter - attachment of a profile, perf or watchpoint probe
 * @name: the event name the handler sees (the probe, as written)
 * @attr: what each CPU's counter counts
 * @cpus: one counter per allowed CPU, kept across CPU hotplug
 */
struct ktap_counter {
	char			name[KTAP_NAME_LEN];
	struct perf_event_attr	attr;
	struct ktap_cpus	cpus;
};

static void ktap_counter_overflow(struct perf_event *event,
				  struct perf_sample_data *data,
				  struct pt_regs *regs)
{
	struct ktap_handler *h = event->overflow_handler_context;
	struct ktap_counter *p = READ_ONCE(h->priv);
	struct ktap_plain_event pev = {
		.ev = { .ops = &ktap_plain_ops, .regs = regs },
	};

	if (!p)
		return;
	pev.ev.name = p->name;
	ktap_handler_fire(h, &pev.ev);
}

static struct perf_event *ktap_counter_create(struct ktap_cpus *c, u32 kind,
					      int cpu)
{
	struct ktap_counter *p = container_of(c, struct ktap_counter, cpus);

	return perf_event_create_kernel_counter(&p->attr, cpu, NULL,
						ktap_counter_overflow, c->h);
}

/* One counter per allowed CPU of @attr, firing @h; named @name. */
static int ktap_counter_attach(struct ktap_handler *h,
			       struct perf_event_attr *attr, const char *name)
{
	struct ktap_counter *p;
	int ret;

	p = kzalloc(sizeof(*p), GFP_KERNEL_ACCOUNT);
	if (!p)
		return -ENOMEM;
	strscpy(p->name, name, sizeof(p->name));
	p->attr = *attr;
	ret = ktap_cpus_init(&p->cpus, h, 1, ktap_counter_create);
	if (ret) {
		kfree(p);
		return ret;
	}
	/* Published before any counter can fire. */
	WRITE_ONCE(h->priv, p);
	ret = ktap_cpus_create(&p->cpus, 0);
	if (ret < 0) {
		ktap_cpus_destroy(&p->cpus);
		WRITE_ONCE(h->priv, NULL);
		synchronize_rcu();
		kfree(p);
		return ret;
	}
	return 0;
}

static int ktap_profile_attach(struct ktap_handler *h)
{
	struct perf_event_attr attr = {
		.type		= PERF_TYPE_SOFTWARE,
		.size		= sizeof(attr),
		.config		= PERF_COUNT_SW_CPU_CLOCK,
		.sample_period	= h->bp->arg,
	};
	char name[KTAP_NAME_LEN];

	ktap_period_name(name, "profile", h->bp->arg);
	return ktap_counter_attach(h, &attr, name);
}

/*
 * The perf events a KTAP_PROBE_PERF probe may name, as perf(1) names
 * them, with the sample period used when the probe gives none: every
 * event for the counts, a millisecond for the clocks, a million for
 * the hardware counters.
 */
static const struct ktap_perf_name {
	const char	*name;
	u32		type;
	u64		config;
	u64		period;
} ktap_perf_names[] = {
	{ "software:cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, NSEC_PER_MSEC },
	{ "software:task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, NSEC_PER_MSEC },
	{ "software:page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 1 },
	{ "software:faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 1 },
	{ "software:minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, 1 },
	{ "software:major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, 1 },
	{ "software:context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, 1 },
	{ "software:cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, 1 },
	{ "software:cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, 1 },
	{ "software:migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, 1 },
	{ "software:alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS, 1 },
	{ "software:emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS, 1 },
	{ "hardware:cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 1000000 },
	{ "hardware:cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 1000000 },
	{ "hardware:instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 1000000 },
	{ "hardware:cache-references", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_CACHE_REFERENCES, 1000000 },
	{ "hardware:cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, 1000000 },
	{ "hardware:branch-instructions", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_BRANCH_INSTRUCTIONS, 1000000 },
	{ "hardware:branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, 1000000 },
	{ "hardware:branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, 1000000 },
	{ "hardware:bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES, 1000000 },
	{ "hardware:ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, 1000000 },
};

static const struct ktap_perf_name *ktap_perf_lookup(const char *name)
{
	u32 i;

	for (i = 0; name && i < ARRAY_SIZE(ktap_perf_names); i++)
		if (!strcmp(name, ktap_perf_names[i].name))
			return &ktap_perf_names[i];
	return NULL;
}

static int ktap_perf_probe_attach(struct ktap_handler *h)
{
	const char *name = ktap_vm_str(h->hot->vm, h->bp->target);
	const struct ktap_perf_name *pn = ktap_perf_lookup(name);
	struct perf_event_attr attr = { .size = sizeof(attr) };
	int ret;

	if (!pn)
		return -EINVAL;		/* ktap_probe_check() said why */
	attr.type = pn->type;
	attr.config = pn->config;
	attr.sample_period = h->bp->arg ?: pn->period;
	ret = ktap_counter_attach(h, &attr, name);
	if (ret == -ENOENT || ret == -EOPNOTSUPP || ret == -ENODEV)
		ktap_session_printf(h->sess,
				    "ktap: probe '%s': this machine has no %s counter (error %pe)\n",
				    ktap_vm_str(h->hot->vm, h->bp->spec) ?: name,
				    name, ERR_PTR(ret));
	return ret;
}

static int ktap_watch_attach(struct ktap_handler *h)
{
	struct perf_event_attr attr;
	u32 mode = h->bp->attr & ~KTAP_WATCH_LEN_MASK;
	const char *spec = ktap_vm_str(h->hot->vm, h->bp->spec) ?: "?";
	int ret;

	hw_breakpoint_init(&attr);
	attr.bp_addr = h->bp->arg;
	attr.bp_len = h->bp->attr & KTAP_WATCH_LEN_MASK;
	attr.bp_type = (mode & KTAP_WATCH_R ? HW_BREAKPOINT_R : 0) |
		       (mode & KTAP_WATCH_W ? HW_BREAKPOINT_W : 0) |
		       (mode & KTAP_WATCH_X ? HW_BREAKPOINT_X : 0);
	ret = ktap_counter_attach(h, &attr, spec);
	if (ret == -ENOSPC)
		ktap_session_printf(h->sess,
				    "ktap: probe '%s': no debug register free (error %pe)\n",
				    spec, ERR_PTR(ret));
	else if (ret == -EINVAL)
		ktap_session_printf(h->sess,
				    "ktap: probe '%s': the CPU cannot watch %#llx for %llu bytes this way (error %pe)\n",
				    spec, h->bp->arg, attr.bp_len, ERR_PTR(ret));
	return ret;
}

/*
 * Function probes: an ftrace_ops of the handler's own, filtered to the
 * functions its glob names. ftrace keeps the callback from recursing
 * (no FTRACE_OPS_FL_RECURSION), and ktap's own code is not traced.
 */
struct ktap_ft {
	struct ftrace_ops	ops;
	struct ktap_handler	*h;
};

struct ktap_ft_event {
	struct ktap_event	ev;
	unsigned long		ip;
	unsigned long		parent_ip;
};

static int ktap_ft_field(struct ktap_vm *vm, struct ktap_event *ev,
			 const char *name, u32 len, struct ktap_value *out)
{
	struct ktap_ft_event *fev = container_of(ev, struct ktap_ft_event, ev);

	if (ktap_name_is(name, len, "ip"))
		ktap_value_int(out, fev->ip);
	else if (ktap_name_is(name, len, "parent_ip"))
		ktap_value_int(out, fev->parent_ip);
	else if (ktap_name_is(name, len, "name"))
		return ktap_value_str(vm, out, ev->name, strlen(ev->name));
	else
		return -ENOENT;
	return 0;
}

static int ktap_ft_arg(struct ktap_vm *vm, struct ktap_event *ev, int n,
		       struct ktap_value *out)
{
	struct ktap_ft_event *fev = container_of(ev, struct ktap_ft_event, ev);

	if (n > 1)
		return -ENOENT;
	ktap_value_int(out, n ? fev->parent_ip : fev->ip);
	return 0;
}

/* As the function tracer prints it: "vfs_read <-ksys_read". */
static int ktap_ft_tostring(struct ktap_vm *vm, struct ktap_event *ev,
			    struct seq_buf *s)
{
	struct ktap_ft_event *fev = container_of(ev, struct ktap_ft_event, ev);

	seq_buf_printf(s, "%ps <-%ps", (void *)fev->ip, (void *)fev->parent_ip);
	return 0;
}

static const struct ktap_event_ops ktap_ft_ops = {
	.field		= ktap_ft_field,
	.tostring	= ktap_ft_tostring,
	.arg		= ktap_ft_arg,
	.set_retval	= ktap_no_set_retval,
	.stack		= ktap_event_stack,
};

static void ktap_ft_func(unsigned long ip, unsigned long parent_ip,
			 struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct ktap_ft *ft = container_of(op, struct ktap_ft, ops);
	struct ktap_ft_event fev = {
		/* the stack starts at the caller of the traced function */
		.ev = { .ops = &ktap_ft_ops, .name = "function",
			.caller = parent_ip },
		.ip = ip,
		.parent_ip = parent_ip,
	};

	ktap_handler_fire(ft->h, &fev.ev);
}

static int ktap_ft_attach(struct ktap_handler *h)
{
	const char *glob = ktap_vm_str(h->hot->vm, h->bp->target);
	struct ktap_ft *ft;
	char *buf;
	int ret;

	ft = kzalloc(sizeof(*ft), GFP_KERNEL_ACCOUNT);
	buf = kstrdup(glob, GFP_KERNEL);
	if (!ft || !buf) {
		ret = -ENOMEM;
		goto err;
	}
	ft->h = h;
	ft->ops.func = ktap_ft_func;
	ret = ftrace_set_filter(&ft->ops, buf, strlen(buf), 1);
	if (ret) {
		ktap_session_printf(h->sess,
				    "ktap: probe '%s': no traceable function matches '%s'\n",
				    ktap_vm_str(h->hot->vm, h->bp->spec) ?: "?",
				    glob);
		goto err_filter;
	}
	ret = register_ftrace_function(&ft->ops);
	if (ret)
		goto err_filter;
	kfree(buf);
	h->priv = ft;
	return 0;

err_filter:
	ftrace_free_filter(&ft->ops);
err:
	kfree(buf);
	kfree(ft);
	return ret;
}

static void ktap_ft_detach(struct ktap_handler *h)
{
	struct ktap_ft *ft = h->priv;

	/* waits until no callback runs */
	unregister_ftrace_function(&ft->ops);
	ftrace_free_filter(&ft->ops);
	kfree(ft);
}

static void ktap_counter_detach(struct ktap_handler *h)
{
	struct ktap_counter *p = h->priv;

	ktap_cpus_destroy(&p->cpus);
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
	case KTAP_PROBE_PERF:
		return ktap_perf_probe_attach(h);
	case KTAP_PROBE_WATCH:
		return ktap_watch_attach(h);
	case KTAP_PROBE_FTRACE:
		return ktap_ft_attach(h);
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
		kfree(u->fetch);
		kfree(u);
		break;
	}
	case KTAP_PROBE_TIMER:
		ktap_timer_detach(h);
		break;
	case KTAP_PROBE_PROFILE:
	case KTAP_PROBE_PERF:
	case KTAP_PROBE_WATCH:
		ktap_counter_detach(h);
		break;
	case KTAP_PROBE_FTRACE:
		ktap_ft_detach(h);
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

/*
 * A well-formed SYSTEM:EVENT pattern. Whether it matches anything is
 * decided at START, when it is expanded: an event may come or go (a
 * module) between LOAD and START.
 */
static int ktap_tp_check(struct ktap_vm *vm, const struct ktap_bc_probe *bp,
			 const char *spec, char *log, size_t log_size)
{
	const char *target = ktap_vm_str(vm, bp->target);
	struct ktap_tp_pat pat;
	int ret;

	ret = ktap_tp_pat_parse(&pat, target);
	if (ret == -EINVAL)
		return ktap_log(log, log_size,
				"probe '%s': expected a SYSTEM:EVENT pattern, not '%s'\n",
				spec, target ?: "");
	if (ret)
		return ret;
	kfree(pat.buf);
	return 0;
}

/**
 * ktap_probe_check - can this probe be attached here?
 * @vm: the loaded program
 * @bp: one entry of its probe table
 * @log: where to say why not
 * @log_size: room at @log
 *
 * Called at LOAD, after the VM verified the image. A tracepoint probe's
 * pattern is only checked for form here; ktap_tp_attach() expands it at
 * START.
 *
 * Return: 0, -EPERM (kernel lockdown) or -EINVAL, with a message in @log;
 * -ENOMEM.
 */
int ktap_probe_check(struct ktap_vm *vm, const struct ktap_bc_probe *bp,
		     char *log, size_t log_size)
{
	const char *spec = ktap_vm_str(vm, bp->spec) ?: "?";

	switch (bp->type) {
	case KTAP_PROBE_TRACEPOINT:
		return ktap_tp_check(vm, bp, spec, log, log_size);
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
		break;
	case KTAP_PROBE_TIMER:
	case KTAP_PROBE_PROFILE:
		if (bp->arg < KTAP_MIN_PERIOD_NS || bp->arg > 3600 * NSEC_PER_SEC)
			return ktap_log(log, log_size,
					"probe '%s': period must be between 10us and 1h\n",
					spec);
		break;
	case KTAP_PROBE_PERF: {
		const struct ktap_perf_name *pn;

		pn = ktap_perf_lookup(ktap_vm_str(vm, bp->target));
		if (!pn)
			return ktap_log(log, log_size,
					"probe '%s': unknown perf event '%s' (ktap -lp lists them)\n",
					spec, ktap_vm_str(vm, bp->target));
		/* a clock's period is in ns: no faster than a profile */
		if (pn->period == NSEC_PER_MSEC && bp->arg &&
		    bp->arg < KTAP_MIN_PERIOD_NS)
			return ktap_log(log, log_size,
					"probe '%s': a clock's period must be at least 10000 ns\n",
					spec);
		break;
	}
	case KTAP_PROBE_WATCH:
		if (!bp->arg)
			return ktap_log(log, log_size,
					"probe '%s': no address to watch\n", spec);
		break;
	case KTAP_PROBE_FTRACE:
		if (!IS_ENABLED(CONFIG_DYNAMIC_FTRACE))
			return ktap_log(log, log_size,
					"probe '%s': needs CONFIG_DYNAMIC_FTRACE\n",
					spec);
		break;
	case KTAP_PROBE_UPROBE:
	case KTAP_PROBE_END:
		break;
	default:
		return ktap_log(log, log_size, "probe '%s': unknown type %u\n",
				spec, bp->type);
	}
	return 0;
}
