// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness for the ktap VM core: the kernel's own loader,
 * verifier and interpreter (kernel/trace/ktap/vm_*.c), built in user
 * space over the shim in include/.
 *
 * Every input is a bytecode image and goes through the session's life
 * as kernel/trace/ktap/session.c drives it:
 *   LOAD   ktap_vm_load() with a 64 or 256 KiB pool and a handler
 *          budget of 20000 or 300 instructions (from a hash of the
 *          input); a rejection must leave a terminated log and -EINVAL,
 *          -E2BIG or -ENOMEM;
 *   START  ktap_vm_run_main(); ATTACH records handlers through a stub
 *          host_ops->attach;
 *   fire   ktap_vm_fire() of every recorded handler (the first
 *          FUZZ_MAX_FIRED), FUZZ_ROUNDS times, with a fake event whose
 *          accessors return small values, on alternating fake CPUs and
 *          in the context of the probe kind (task, softirq, hardirq,
 *          NMI); a probe that fires inside the VM (from an event
 *          accessor) must be refused as recursion, and the accessor
 *          of field "cpu2" runs a handler on the other fake CPU, as a
 *          concurrent firing would. A tracepoint's event answers
 *          EVFIELD by index (field_at) for the fields of its own probe
 *          except in round 1; the VM reads the others by name;
 *   STOP   the END handlers, then ktap_vm_stats() and ktap_vm_free().
 * Then, for an accepted image, LOAD again with one allocation failing
 * (chosen from the input), to check the error paths for leaks.
 *
 * The main chunk's budget is KTAP_MAIN_BUDGET (1e8) instructions; the
 * kernel stops it early only through a signal, which the VM checks every
 * KTAP_MAIN_SLICE instructions. The shim delivers one at the
 * KTAP_FUZZ_MAIN_SLICES-th check (default 8), as a user's Ctrl-C would,
 * so that one input costs milliseconds, not seconds.
 *
 * Crashes, leaks (ASan), undefined behaviour (UBSan), WARN/BUG, lock or
 * preemption imbalance, sleeping in atomic context, broken API contracts
 * and a VM call that takes more than FUZZ_SLOW_SECONDS of CPU time (work
 * its budget does not bound) all abort. KTAP_FUZZ_VM_VERBOSE=1 prints
 * what happens.
 */
#include <time.h>
#include <linux/kernel.h>
#include <linux/seq_buf.h>
#include "ktap.h"
#ifdef KTAP_FUZZ_STALE_CHECK
#include "vm.h"
#endif

#ifndef KTAP_FUZZ_MAIN_SLICES
#define KTAP_FUZZ_MAIN_SLICES	8
#endif
#define FUZZ_BUDGET		20000
#define FUZZ_SMALL_BUDGET	300
#define FUZZ_MAX_HANDLERS	64
#define FUZZ_MAX_FIRED		8
#define FUZZ_ROUNDS		3
#define FUZZ_LOG_SIZE		256
/*
 * CPU time one VM call may take: the budgets bound it far below this.
 * Not below: a main chunk that spends its 8 slices (524,288
 * instructions) growing a table took 2.3 s under clang's ASan, UBSan
 * and libFuzzer instrumentation on a busy 2-core machine (0.3 s in the
 * gcc replay build); unbounded work still takes far longer.
 */
#ifndef FUZZ_SLOW_SECONDS
#define FUZZ_SLOW_SECONDS	10
#endif

int LLVMFuzzerTestOneInput(const u8 *data, size_t size);

struct fuzz_handler {
	u32			probe;
	struct ktap_closure	*fn;
};

struct fuzz_host {
	struct ktap_vm		*vm;
	struct fuzz_handler	h[FUZZ_MAX_HANDLERS];
	u32			nh;
	u32			attached;
	bool			exited;
	bool			recursed;
	bool			crossed;
	u64			out_bytes;
	u32			out_sum;
};

struct fuzz_event {
	struct ktap_event	ev;
	struct fuzz_host	*host;
	u32			type;
	u32			flags;
	u32			round;
};

static bool verbose;

/* Memory that scripts may read with kernel_string()/user_string(). */
static char readable[2 * 4096] __aligned(4096);

static void fuzz_bug(const char *fmt, ...) __printf(1, 2) __noreturn;

static void fuzz_bug(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz_vm: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* After a VM call: locks, interrupts and preemption as they were. */
static void fuzz_check_state(const char *what, int preempt, int irqs_off)
{
	if (ktap_shim.locks || ktap_shim.preempt != preempt ||
	    ktap_shim.irqs_off != irqs_off)
		fuzz_bug("%s returned with %d locks held, preempt %d (was %d), irqs_off %d (was %d)",
			 what, ktap_shim.locks, ktap_shim.preempt, preempt,
			 ktap_shim.irqs_off, irqs_off);
}

/*
 * -DKTAP_FUZZ_STALE_CHECK: before each firing, fill the CPU's output and
 * scratch buffers with a pattern; a record that contains it was written
 * with bytes the run never wrote (needs vm.h, the VM's internals).
 */
static const char fuzz_stale[] = "\xa5stale-ktap\xa5";

static void fuzz_poison(struct ktap_vm *vm __maybe_unused)
{
#ifdef KTAP_FUZZ_STALE_CHECK
	struct ktap_ctx *ctx = vm->cpu_ctx[ktap_shim.cpu];
	size_t i, n = sizeof(fuzz_stale) - 1;

	for (i = 0; i + n <= sizeof(ctx->out); i += n)
		memcpy(ctx->out + i, fuzz_stale, n);
	memcpy(ctx->tmp, ctx->out, min(sizeof(ctx->tmp), sizeof(ctx->out)));
#endif
}

/* A VM call that runs for long does work its budget does not charge. */
static void fuzz_check_time(const char *what, clock_t start)
{
	double s = (double)(clock() - start) / CLOCKS_PER_SEC;

	if (s > FUZZ_SLOW_SECONDS)
		fuzz_bug("%s took %.1f s of CPU time: work not charged to the budget?",
			 what, s);
}

/* host_ops. */
static int fuzz_attach(void *host, u32 probe, struct ktap_closure *fn)
{
	struct fuzz_host *h = host;

	if (!h->vm || !fn)
		fuzz_bug("attach outside the main chunk or without a closure");
	if (!in_task() || in_atomic())
		fuzz_bug("attach in atomic context");
	if (!ktap_vm_probe(h->vm, probe))
		fuzz_bug("attach to probe %u, outside the probe table", probe);
	if (h->attached >= KTAP_MAX_PROBES)
		return -E2BIG;
	h->attached++;
	if (h->nh < FUZZ_MAX_HANDLERS) {
		h->h[h->nh].probe = probe;
		h->h[h->nh].fn = fn;
		h->nh++;
	}
	return 0;
}

static void fuzz_write(void *host, const char *buf, size_t len)
{
	struct fuzz_host *h = host;
	size_t i;

	if (!buf || len > (1 << 20))
		fuzz_bug("write of %zu bytes", len);
	/* read every byte: ASan checks that the record is all valid */
	for (i = 0; i < len; i++)
		h->out_sum = h->out_sum * 31 + (u8)buf[i];
	h->out_bytes += len;
	if (IS_ENABLED(KTAP_FUZZ_STALE_CHECK) &&
	    memmem(buf, len, fuzz_stale, sizeof(fuzz_stale) - 1))
		fuzz_bug("output record of %zu bytes contains stale buffer contents: %.*s",
			 len, (int)min_t(size_t, len, 200), buf);
	if (verbose) {
		fprintf(stderr, "out: ");
		fwrite(buf, 1, len, stderr);
		if (!len || buf[len - 1] != '\n')
			fputc('\n', stderr);
	}
}

static void fuzz_exit(void *host)
{
	struct fuzz_host *h = host;

	h->exited = true;
}

static const struct ktap_host_ops fuzz_host_ops = {
	.attach	= fuzz_attach,
	.write	= fuzz_write,
	.exit	= fuzz_exit,
};

/* The fake event. */
static const char fuzz_long[] =
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/* A probe firing inside the VM (e.g. a kprobe on a function it calls). */
static void fuzz_recurse(struct fuzz_event *fe)
{
	struct fuzz_host *h = fe->host;
	struct fuzz_event inner = *fe;
	int err;

	if (h->recursed || !h->nh)
		return;
	h->recursed = true;
	err = ktap_vm_fire(h->vm, h->h[0].fn, &inner.ev);
	if (err != -EBUSY && err != -ESHUTDOWN)
		fuzz_bug("nested ktap_vm_fire() on the same CPU returned %d", err);
}

/*
 * Another CPU runs a handler while this run waits in an event accessor:
 * the one interleaving of concurrent runs a single thread can produce.
 */
static void fuzz_cross(struct fuzz_event *fe)
{
	struct fuzz_host *h = fe->host;
	struct fuzz_event other = *fe;
	const struct ktap_bc_probe *bp;
	unsigned int cpu = ktap_shim.cpu;
	u32 k = h->nh;
	int err;

	if (h->crossed)
		return;
	h->crossed = true;
	/* the last handler that is not an END one (those run at STOP) */
	while (k && ktap_vm_probe(h->vm, h->h[k - 1].probe)->type ==
		    KTAP_PROBE_END)
		k--;
	if (!k)
		return;
	bp = ktap_vm_probe(h->vm, h->h[k - 1].probe);
	other.ev.probe = h->h[k - 1].probe;
	other.type = bp->type;
	other.flags = bp->flags;
	other.round = 1;
	ktap_shim.cpu = (cpu + 1) % KTAP_FUZZ_NR_CPUS;
	err = ktap_vm_fire(h->vm, h->h[k - 1].fn, &other.ev);
	if (err > 0)
		fuzz_bug("ktap_vm_fire on the other CPU returned %d", err);
	ktap_shim.cpu = cpu;
}

static int fuzz_field(struct ktap_vm *vm, struct ktap_event *ev,
		      const char *name, u32 len, struct ktap_value *out)
{
	struct fuzz_event *fe = container_of(ev, struct fuzz_event, ev);
	static char huge[5000];
	char buf[64];

	if (!strcmp(name, "name"))
		return ktap_value_str(vm, out, ev->name, strlen(ev->name));
	if (!strcmp(name, "sc_nr") || !strcmp(name, "pid") ||
	    !strcmp(name, "prev_pid") || !strcmp(name, "next_pid")) {
		ktap_value_int(out, 40 + fe->round);
		return 0;
	}
	if (!strcmp(name, "sc_is_enter")) {
		ktap_value_bool(out, fe->round & 1);
		return 0;
	}
	if (!strcmp(name, "retval") || !strcmp(name, "ret")) {
		ktap_value_int(out, fe->round ? -2 : 4096);
		return 0;
	}
	if (!strncmp(name, "sc_arg", 6) || !strncmp(name, "arg", 3)) {
		ktap_value_int(out, (s64)len * 1000 - 3);
		return 0;
	}
	if (!strcmp(name, "prev_comm") || !strcmp(name, "next_comm") ||
	    !strcmp(name, "comm")) {
		snprintf(buf, sizeof(buf), "task-%u", fe->round % 2);
		return ktap_value_str(vm, out, buf, strlen(buf));
	}
	if (!strcmp(name, "filename") || !strcmp(name, "ptr")) {
		/* a string across the page boundary of the readable region */
		ktap_value_int(out, (s64)(uintptr_t)&readable[4096 - 5]);
		return 0;
	}
	if (!strcmp(name, "buf")) {
		/* more than KTAP_FETCH_MAX bytes before the NUL */
		ktap_value_int(out, (s64)(uintptr_t)&readable[100]);
		return 0;
	}
	if (!strcmp(name, "bad")) {
		ktap_value_int(out, 4096 - 2);
		return 0;
	}
	if (!strcmp(name, "long"))
		return ktap_value_str(vm, out, fuzz_long, strlen(fuzz_long));
	if (!strcmp(name, "huge")) {
		memset(huge, 'h', sizeof(huge));
		return ktap_value_str(vm, out, huge, sizeof(huge));
	}
	if (!strcmp(name, "fail"))
		return -EFAULT;
	if (!strcmp(name, "recurse")) {
		fuzz_recurse(fe);
		ktap_value_int(out, 1);
		return 0;
	}
	if (!strcmp(name, "cpu2")) {
		fuzz_cross(fe);
		ktap_value_int(out, 2);
		return 0;
	}
	return -ENOENT;
}

static int fuzz_tostring(struct ktap_vm *vm __always_unused,
			 struct ktap_event *ev, struct seq_buf *s)
{
	struct fuzz_event *fe = container_of(ev, struct fuzz_event, ev);
	u32 i;

	seq_buf_printf(s, "%s: probe %u round %u", ev->name, ev->probe,
		       fe->round);
	if (fe->round == 2) {	/* overflow the VM's buffer, as events.c can */
		for (i = 0; i < 40; i++)
			seq_buf_printf(s, "%s", fuzz_long);
	}
	if (fe->round == 1 && ev->probe == 3)
		return -EIO;
	return 0;
}

static int fuzz_arg(struct ktap_vm *vm, struct ktap_event *ev, int n,
		    struct ktap_value *out)
{
	struct fuzz_event *fe = container_of(ev, struct fuzz_event, ev);

	if (n < 0 || n > 9)
		fuzz_bug("arg(%d) out of 0..9", n);
	if (n <= 5) {
		ktap_value_int(out, n * 7 + fe->round);
		return 0;
	}
	if (n == 6)
		return ktap_value_str(vm, out, ev->name, strlen(ev->name));
	if (n == 9)
		return -EFAULT;
	return -ENOENT;
}

static int fuzz_set_retval(struct ktap_vm *vm __always_unused,
			   struct ktap_event *ev, s64 v, const char **why)
{
	struct fuzz_event *fe = container_of(ev, struct fuzz_event, ev);

	if (fe->type != KTAP_PROBE_KPROBE || !fe->flags) {
		*why = "not a kprobe on an error-injectable function";
		return -EPERM;
	}
	if (v >= 0 || v < -MAX_ERRNO) {
		*why = "not an error value of this function";
		return -EDOM;
	}
	return 0;
}

/*
 * EVFIELD of a tracepoint's event: what the attach resolved, here the
 * fields of the event's own probe (outside round 1); any name counts as
 * a field of the format, as the compiler checked it against one.
 */
static int fuzz_field_at(struct ktap_vm *vm, struct ktap_event *ev, u32 idx,
			 struct ktap_value *out)
{
	struct fuzz_event *fe = container_of(ev, struct fuzz_event, ev);
	const struct ktap_bc_field *f = ktap_vm_field(vm, idx);
	const char *name;
	int err;

	if (!f || idx >= ktap_vm_nfields(vm))
		fuzz_bug("EVFIELD of field %u, outside the fields section (%u)",
			 idx, ktap_vm_nfields(vm));
	name = ktap_vm_str(vm, f->name);
	if (!name)
		fuzz_bug("field %u: name not readable", idx);
	if (fe->round == 1 || f->probe != ev->probe)
		return -ENOENT;
	err = fuzz_field(vm, ev, name, strlen(name), out);
	if (err == -ENOENT) {
		ktap_value_int(out, 100 + idx);
		return 0;
	}
	return err;
}

static const struct ktap_event_ops fuzz_event_ops = {
	.field		= fuzz_field,
	.tostring	= fuzz_tostring,
	.arg		= fuzz_arg,
	.set_retval	= fuzz_set_retval,
};

static const struct ktap_event_ops fuzz_tp_event_ops = {
	.field		= fuzz_field,
	.field_at	= fuzz_field_at,
	.tostring	= fuzz_tostring,
	.arg		= fuzz_arg,
	.set_retval	= fuzz_set_retval,
};

/* Read what the session reads of an accepted image. */
static void fuzz_check_image(struct ktap_vm *vm)
{
	const struct ktap_bc_probe *bp;
	const struct ktap_bc_field *f;
	const char *s;
	u32 i, k, n, sum = 0;

	for (i = 0; (bp = ktap_vm_probe(vm, i)); i++) {
		if (bp->type >= KTAP_PROBE__COUNT)
			fuzz_bug("probe %u has type %u", i, bp->type);
		s = ktap_vm_str(vm, bp->spec);
		if (bp->spec != KTAP_BC_NO_STR && !s)
			fuzz_bug("probe %u: spec not readable", i);
		sum += s ? strlen(s) : 0;
		s = ktap_vm_str(vm, bp->target);
		if (bp->type <= KTAP_PROBE_UPROBE && !s)
			fuzz_bug("probe %u: type %u and no target", i, bp->type);
		sum += s ? strlen(s) : 0;
	}
	/* what events.c reads to resolve the fields at attach */
	n = ktap_vm_nfields(vm);
	for (k = 0; k < n; k++) {
		f = ktap_vm_field(vm, k);
		if (!f)
			fuzz_bug("field %u of %u not readable", k, n);
		if (!ktap_vm_probe(vm, f->probe))
			fuzz_bug("field %u: probe %u outside the probe table",
				 k, f->probe);
		s = ktap_vm_str(vm, f->name);
		if (!s)
			fuzz_bug("field %u: name not readable", k);
		sum += strlen(s);
	}
	if (ktap_vm_field(vm, n))
		fuzz_bug("field %u past the end of the fields section", n);
	if (verbose)
		fprintf(stderr, "image: %u probes, %u fields (%u)\n", i, n,
			sum);
}

/* Fire @fn as a probe of kind @bp would, in that kind's context. */
static void fuzz_fire(struct fuzz_host *h, u32 k, u32 round, bool end)
{
	const struct ktap_bc_probe *bp = ktap_vm_probe(h->vm, h->h[k].probe);
	struct fuzz_event fe = {
		.ev = {
			.ops	= bp->type == KTAP_PROBE_TRACEPOINT ?
				  &fuzz_tp_event_ops : &fuzz_event_ops,
			.probe	= h->h[k].probe,
			.name	= end ? "end" : "sys_enter_openat",
		},
		.host	= h,
		.type	= bp->type,
		.flags	= bp->flags,
		.round	= round,
	};
	int err, preempt, irqs_off;
	clock_t start;

	ktap_shim.cpu = (round + k) % KTAP_FUZZ_NR_CPUS;
	ktap_shim.context = 0;
	if (end) {
		preempt_disable();	/* ktap_handler_run_end() */
	} else if (bp->type == KTAP_PROBE_PROFILE) {
		ktap_shim.context = KTAP_SHIM_NMI | KTAP_SHIM_HARDIRQ;
		local_irq_disable();
	} else if (bp->type == KTAP_PROBE_TIMER || round == 2) {
		ktap_shim.context = KTAP_SHIM_HARDIRQ;
		local_irq_disable();
	} else if (round == 1) {
		ktap_shim.context = KTAP_SHIM_SOFTIRQ;
		preempt_disable();
	} else {
		preempt_disable();
	}
	preempt = ktap_shim.preempt;
	irqs_off = ktap_shim.irqs_off;
	fuzz_poison(h->vm);
	start = clock();
	err = ktap_vm_fire(h->vm, h->h[k].fn, &fe.ev);
	fuzz_check_time("ktap_vm_fire", start);
	fuzz_check_state("ktap_vm_fire", preempt, irqs_off);
	if (err > 0)
		fuzz_bug("ktap_vm_fire returned %d", err);
	if (verbose)
		fprintf(stderr, "fire: handler %u probe %u round %u cpu %u: %d\n",
			k, h->h[k].probe, round, ktap_shim.cpu, err);
	ktap_shim.context = 0;
	ktap_shim.preempt = 0;
	ktap_shim.irqs_off = 0;
}

/* One session. Return: the allocations of an accepted load, else 0. */
static u64 fuzz_session(const u8 *data, size_t size,
			const struct ktap_vm_opts *opts, u64 fail_alloc_at)
{
	struct fuzz_host host = {};
	struct ktap_vm_stats st;
	char log[FUZZ_LOG_SIZE];
	struct ktap_vm *vm;
	clock_t start;
	bool started;
	u64 allocs;
	u32 k, r, nfire;
	int err;

	ktap_shim_reset();
	ktap_shim.fail_alloc_at = fail_alloc_at;
	memset(log, 'L', sizeof(log));
	vm = ktap_vm_load(data, size, opts, &fuzz_host_ops, &host, log,
			  sizeof(log));
	fuzz_check_state("ktap_vm_load", 0, 0);
	allocs = ktap_shim.allocs;
	if (!memchr(log, '\0', sizeof(log)))
		fuzz_bug("load log not terminated");
	if (!vm)
		fuzz_bug("ktap_vm_load returned NULL");
	if (IS_ERR(vm)) {
		err = PTR_ERR(vm);
		if (err != -EINVAL && err != -E2BIG && err != -ENOMEM)
			fuzz_bug("ktap_vm_load returned %d", err);
		if (err == -EINVAL && !log[0])
			fuzz_bug("image rejected without a reason in the log");
		if (verbose)
			fprintf(stderr, "load: %d: %s\n", err, log);
		return 0;
	}
	if (verbose)
		fprintf(stderr, "load: ok\n");
	host.vm = vm;
	fuzz_check_image(vm);

	ktap_shim.signal_after = KTAP_FUZZ_MAIN_SLICES;
	start = clock();
	err = ktap_vm_run_main(vm);
	fuzz_check_time("ktap_vm_run_main", start);
	ktap_shim.signal_after = 0;
	fuzz_check_state("ktap_vm_run_main", 0, 0);
	if (err > 0)
		fuzz_bug("ktap_vm_run_main returned %d", err);
	if (verbose)
		fprintf(stderr, "main: %d, %u handlers, exit %d\n", err,
			host.nh, host.exited);

	/*
	 * Probes attach only after a clean main chunk (ktap_ioc_start());
	 * after exit() or an error in a handler they still fire, and the
	 * VM refuses to run them.
	 */
	started = !err && !host.exited;
	nfire = min_t(u32, host.nh, FUZZ_MAX_FIRED);
	for (r = 0; started && r < FUZZ_ROUNDS; r++) {
		for (k = 0; k < nfire; k++) {
			if (ktap_vm_probe(vm, host.h[k].probe)->type !=
			    KTAP_PROBE_END)
				fuzz_fire(&host, k, r, false);
		}
	}
	/* A run without an event, as the KUnit tests do. */
	if (nfire && started) {
		ktap_shim.cpu = 0;
		err = ktap_vm_fire(vm, host.h[0].fn, NULL);
		fuzz_check_state("ktap_vm_fire(NULL)", 0, 0);
		if (err > 0)
			fuzz_bug("ktap_vm_fire returned %d", err);
	}
	/* STOP: END handlers recorded by the main chunk run, even after errors. */
	for (k = 0; k < nfire; k++) {
		if (ktap_vm_probe(vm, host.h[k].probe)->type == KTAP_PROBE_END)
			fuzz_fire(&host, k, 0, true);
	}

	ktap_vm_stats(vm, &st);
	if (st.mem_used > st.mem_limit)
		fuzz_bug("stats: mem_used %llu, mem_limit %llu",
			 st.mem_used, st.mem_limit);
	if (verbose)
		fprintf(stderr, "stats: hits %llu errors %llu recursion %llu drops %llu mem %llu/%llu out %llu\n",
			st.hits, st.errors, st.recursion, st.drops,
			st.mem_used, st.mem_limit, host.out_bytes);
	ktap_vm_free(vm);
	fuzz_check_state("ktap_vm_free", 0, 0);
	return allocs;
}

static u32 fuzz_hash(const u8 *data, size_t size)
{
	u32 h = 2166136261U;
	size_t i;

	for (i = 0; i < size; i++)
		h = (h ^ data[i]) * 16777619U;
	return h;
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	u32 h = fuzz_hash(data, size);
	struct ktap_vm_opts opts = {
		.mem_limit	= (h & 1) ? 64 << 10 : 256 << 10,
		.insn_budget	= (h & 6) ? FUZZ_BUDGET : FUZZ_SMALL_BUDGET,
	};
	u64 allocs;

	if (!ktap_shim_readable) {
		verbose = getenv("KTAP_FUZZ_VM_VERBOSE") != NULL;
		memset(readable, 'r', sizeof(readable));
		memcpy(&readable[4096 - 5], "page-crossing", 14);
		readable[sizeof(readable) - 1] = '\0';
		ktap_shim_readable = readable;
		ktap_shim_readable_len = sizeof(readable);
	}
	allocs = fuzz_session(data, size, &opts, 0);
	/* the same load with one allocation failing (or START's) */
	if (allocs) {
		if (verbose)
			fprintf(stderr, "again, allocation %llu of %llu failing\n",
				1 + (h >> 8) % (allocs + 1), allocs);
		fuzz_session(data, size, &opts, 1 + (h >> 8) % (allocs + 1));
	}
	return 0;
}

#ifdef KTAP_FUZZ_LIBFUZZER
/*
 * Custom mutator: most of libFuzzer's mutations change the length of
 * the input, which the header's total_size then rejects; fix it up
 * (mostly). And some structure-aware mutations: one instruction of the
 * code section (a known opcode, small operands, a builtin of the
 * image's builtins section, short jumps), the frame of a function, the
 * boundary between two functions, a word left between them, a function
 * that ends with a conditional branch (JMPT, JMPF, ITERNEXT) to just
 * before, at or past its end followed by a backward JMP, or with the
 * conditional branch last: the shapes where control-flow checks are
 * easiest to get wrong. And an entry of the builtins section renamed
 * (another builtin, a duplicate or not a builtin's name at all), or of
 * the fields section pointed at another probe or name.
 */
size_t LLVMFuzzerMutate(u8 *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(u8 *data, size_t size, size_t max_size,
			       unsigned int seed);

static u32 fuzz_rand(u32 *state)
{
	u32 x = *state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return x;
}

/* The header of @data, if it has one whose @sec lies inside @data. */
static bool fuzz_section(const u8 *data, size_t size, size_t sec_off,
			 size_t elem, struct ktap_bc_section *sec)
{
	if (size < sizeof(struct ktap_bc_header))
		return false;
	memcpy(sec, data + sec_off, sizeof(*sec));
	return sec->count && sec->off % 4 == 0 && sec->off <= size &&
	       sec->count <= (size - sec->off) / elem;
}

static bool fuzz_mutate_code(u8 *data, size_t size, u32 *rs)
{
	struct ktap_bc_section code;
	u32 insn, other, idx, sbx, nbi;
	u8 *at;

	if (!fuzz_section(data, size, offsetof(struct ktap_bc_header, code),
			  4, &code))
		return false;
	idx = fuzz_rand(rs) % code.count;
	at = data + code.off + 4 * idx;
	memcpy(&insn, at, 4);
	memcpy(&other, data + code.off + 4 * (fuzz_rand(rs) % code.count), 4);
	switch (fuzz_rand(rs) % 7) {
	case 0:
		insn = (insn & ~0xffU) | fuzz_rand(rs) % KTAP_OP__COUNT;
		break;
	case 1:
		insn = (insn & ~0xff00U) | (fuzz_rand(rs) % 8) << 8;
		break;
	case 2:
		insn = (insn & ~0xff0000U) | (fuzz_rand(rs) % 8) << 16;
		break;
	case 3:
		/* CALLB's C: an entry of the builtins section, or one past */
		memcpy(&nbi, data + offsetof(struct ktap_bc_header,
					     builtins.count), sizeof(nbi));
		insn = (insn & ~0xff000000U) |
		       (fuzz_rand(rs) % (min_t(u32, nbi, 255) + 1)) << 24;
		break;
	case 4:
		sbx = (u32)((s32)(fuzz_rand(rs) % 13) - 6);
		insn = (insn & 0xffffU) | (sbx & 0xffffU) << 16;
		break;
	case 5:
		insn = other;
		break;
	default:
		memcpy(data + code.off + 4 * (fuzz_rand(rs) % code.count),
		       &insn, 4);
		insn = other;
		break;
	}
	memcpy(at, &insn, 4);
	return true;
}

static const u8 fuzz_branch_ops[] = {
	KTAP_OP_JMPT, KTAP_OP_JMPF, KTAP_OP_ITERNEXT,
};

static const u8 fuzz_compare_ops[] = {
	KTAP_OP_EQ, KTAP_OP_LT, KTAP_OP_LE, KTAP_OP_EQK,
};

/*
 * The end of function @p: a conditional branch second to last, to the
 * last instruction, the end or past it (or backward), then a backward
 * JMP (a loop the budget ends); or a comparison, then the conditional
 * branch last, whose fall-through leaves the function.
 */
static bool fuzz_mutate_end(u8 *data, size_t size,
			    const struct ktap_bc_proto *p, u32 *rs)
{
	struct ktap_bc_section code;
	u32 op, cond, last;
	s32 off;

	if (!fuzz_section(data, size, offsetof(struct ktap_bc_header, code),
			  4, &code) || p->ncode < 2 ||
	    (u64)p->code_start + p->ncode > code.count)
		return false;
	op = fuzz_branch_ops[fuzz_rand(rs) % ARRAY_SIZE(fuzz_branch_ops)];
	if (fuzz_rand(rs) & 1) {
		/* from n - 2: 0 is the last one, 1 the end, 2 past it */
		off = (s32)(fuzz_rand(rs) % 4) - 1;
		if (off < 0)
			off = -(s32)(fuzz_rand(rs) % p->ncode) - 1;
		cond = KTAP_INSN_BX(op, fuzz_rand(rs) % 4, (u32)off);
		off = -(s32)(fuzz_rand(rs) % p->ncode) - 1;
		last = KTAP_INSN_BX(KTAP_OP_JMP, 0, (u32)off);
	} else {
		cond = KTAP_INSN(fuzz_compare_ops[fuzz_rand(rs) %
						  ARRAY_SIZE(fuzz_compare_ops)],
				 fuzz_rand(rs) % 4, fuzz_rand(rs) % 4,
				 fuzz_rand(rs) % 4);
		off = -(s32)(fuzz_rand(rs) % p->ncode) - 1;
		last = KTAP_INSN_BX(op, KTAP_A(cond), (u32)off);
	}
	memcpy(data + code.off + 4 * (p->code_start + p->ncode - 2), &cond, 4);
	memcpy(data + code.off + 4 * (p->code_start + p->ncode - 1), &last, 4);
	return true;
}

/*
 * An entry of the builtins section named by another entry's name (a
 * duplicate, or a swap of builtins under CALLB), the chunk name or an
 * offset into the middle of a string (not a builtin); or an entry of
 * the fields section moved to another probe or name.
 */
static bool fuzz_mutate_names(u8 *data, size_t size, u32 *rs)
{
	struct ktap_bc_section bis, fields;
	struct ktap_bc_field f;
	u32 i, name, nprobes;
	u8 *at;

	if (fuzz_rand(rs) & 1) {
		if (!fuzz_section(data, size,
				  offsetof(struct ktap_bc_header, builtins),
				  4, &bis))
			return false;
		i = fuzz_rand(rs) % bis.count;
		switch (fuzz_rand(rs) % 4) {
		case 0:
			memcpy(&name, data + offsetof(struct ktap_bc_header,
						      chunkname), 4);
			break;
		case 1:
			memcpy(&name, data + bis.off + 4 * i, 4);
			name += 1 + fuzz_rand(rs) % 3;
			break;
		default:
			memcpy(&name, data + bis.off +
			       4 * (fuzz_rand(rs) % bis.count), 4);
			break;
		}
		memcpy(data + bis.off + 4 * i, &name, 4);
		return true;
	}
	if (!fuzz_section(data, size, offsetof(struct ktap_bc_header, fields),
			  sizeof(f), &fields))
		return false;
	at = data + fields.off + sizeof(f) * (fuzz_rand(rs) % fields.count);
	memcpy(&f, at, sizeof(f));
	if (fuzz_rand(rs) & 1) {
		memcpy(&nprobes, data + offsetof(struct ktap_bc_header,
						 probes.count), 4);
		f.probe = fuzz_rand(rs) % (min_t(u32, nprobes, 64) + 1);
	} else {
		memcpy(&f.name, data + fields.off + sizeof(f) *
		       (fuzz_rand(rs) % fields.count) +
		       offsetof(struct ktap_bc_field, name), 4);
	}
	memcpy(at, &f, sizeof(f));
	return true;
}

static bool fuzz_mutate_proto(u8 *data, size_t size, u32 *rs)
{
	struct ktap_bc_proto p, q;
	struct ktap_bc_section protos;
	u32 i;
	u8 *at;

	if (!fuzz_section(data, size, offsetof(struct ktap_bc_header, protos),
			  sizeof(p), &protos))
		return false;
	i = fuzz_rand(rs) % protos.count;
	at = data + protos.off + i * sizeof(p);
	memcpy(&p, at, sizeof(p));
	switch (fuzz_rand(rs) % 6) {
	case 0:
		p.nregs = fuzz_rand(rs) % 12;
		break;
	case 1:
		p.nparams = fuzz_rand(rs) % 4;
		break;
	case 2:
		/* end with a conditional branch at or near the end */
		return fuzz_mutate_end(data, size, &p, rs);
	case 3:
		/* leave a word between this function and the next */
		if (p.ncode < 2)
			return false;
		p.ncode--;
		break;
	default:
		/* move the boundary with the next function by one word */
		if (i + 1 >= protos.count)
			return false;
		memcpy(&q, at + sizeof(p), sizeof(q));
		if (fuzz_rand(rs) & 1) {
			if (q.ncode < 2)
				return false;
			p.ncode++;
			q.code_start++;
			q.ncode--;
		} else {
			if (p.ncode < 2)
				return false;
			p.ncode--;
			q.code_start--;
			q.ncode++;
		}
		memcpy(at + sizeof(p), &q, sizeof(q));
		break;
	}
	memcpy(at, &p, sizeof(p));
	return true;
}

size_t LLVMFuzzerCustomMutator(u8 *data, size_t size, size_t max_size,
			       unsigned int seed)
{
	u32 rs = seed | 1, choice = fuzz_rand(&rs) % 9, len;

	if (choice < 3 && fuzz_mutate_code(data, size, &rs))
		return size;
	if (choice == 3 && fuzz_mutate_proto(data, size, &rs))
		return size;
	if (choice == 4 && fuzz_mutate_names(data, size, &rs))
		return size;
	size = LLVMFuzzerMutate(data, size, max_size);
	if (fuzz_rand(&rs) % 8 && size >= sizeof(struct ktap_bc_header)) {
		len = size;
		memcpy(data + offsetof(struct ktap_bc_header, total_size),
		       &len, sizeof(len));
	}
	return size;
}
#endif /* KTAP_FUZZ_LIBFUZZER */
