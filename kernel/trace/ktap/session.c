// SPDX-License-Identifier: GPL-2.0
/*
 * ktap sessions: the tracefs control file, its ioctls and the output.
 *
 * Every open() of tracing/ktap/control creates one session; the file
 * descriptor is the session. The tool loads a verified image (LOAD),
 * runs its main chunk and attaches the probes it recorded (START),
 * streams the output with read()/poll() on the same descriptor, and
 * detaches and runs the end handlers (STOP). close() tears everything
 * down, also when the tool dies by SIGKILL.
 *
 * The output of a session goes into a tracing instance of its own,
 * tracing/instances/ktap-<id> by default (output.c): cat, trace-cmd and
 * the instance's controls work on it, and the control descriptor reads
 * the same records. A full buffer drops and counts the record.
 *
 * Locking:
 *  - ktap_sessions_lock protects the session count and ids.
 *  - sess->lock serializes the ioctls and release() of one session, and
 *    with it the handler list and every attach and detach.
 *  - sess->read_lock serializes the readers and the partly copied record.
 *  - Probe handlers take no lock: they read sess->hot (atomic state and
 *    constant filters) and write the instance's ring buffer, which is
 *    lockless and NMI-safe. Readers are woken through an irq_work, never directly
 *    from probe context.
 */

#define pr_fmt(fmt) "ktap: " fmt

#include <linux/capability.h>
#include <linux/cleanup.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/irq_work.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/security.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/tracefs.h>
#include <linux/uaccess.h>
#include <linux/utsname.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>

#include "events.h"
#include "../trace.h"

/*
 * Output ring buffer per CPU, in KiB, when LOAD does not say. A ftrace
 * record of a short printf line takes some 40 bytes; make bench's
 * printf rows (a getppid() loop at full speed, the reader on the same
 * two CPUs) lost up to a quarter of their records in 512 KiB when the
 * reader was scheduled late, and lose few in 1 MiB.
 */
static unsigned int buffer_kb = 1024;
module_param(buffer_kb, uint, 0644);
MODULE_PARM_DESC(buffer_kb, "default output ring buffer per CPU, KiB (LOAD's buffer_kb overrides)");

/*
 * Sessions that may exist at once: each holds a VM heap (4 MiB by
 * default) and a ring buffer per CPU.
 */
static unsigned int max_sessions = 16;
module_param(max_sessions, uint, 0644);
MODULE_PARM_DESC(max_sessions, "sessions (opens of tracing/ktap/control) at once");
/* Largest verifier log we copy back. */
#define KTAP_MAX_LOG		SZ_1M
/* Log kept for tracing/error_log when the caller asks for none. */
#define KTAP_MIN_LOG		256

/* Text a read() formats under the consumers' lock before copying it out */
#define KTAP_READ_BUF		SZ_16K

/**
 * struct ktap_session - one open of tracing/ktap/control
 * @hot: what probe handlers read on every firing (see events.h)
 * @lock: serializes ioctls and release; protects the handler list
 * @id: number of the session, names the default instance ktap-<id>
 * @handlers: struct ktap_handler list, in ATTACH order
 * @nr_handlers: entries in @handlers
 * @nr_attached: handlers currently attached
 * @started: the main chunk ran (END handlers are due at STOP)
 * @verbose: LOAD asked for KTAP_LOAD_F_VERBOSE
 * @nr_skipped: events or functions of wildcards that were not attached
 * @out: the tracing instance receiving the output, once LOADed
 * @drops: output records lost (buffer full or nested too deep)
 * @wq: readers and pollers wait here
 * @wake_work: wakes @wq from any context
 * @waiters_pending: a reader may sleep on @wq
 * @read_lock: serializes readers
 * @rbuf: the records being copied to a reader
 * @rsize: bytes at @rbuf
 * @rpos: bytes of @rbuf already copied
 * @rlen: bytes in @rbuf
 */
struct ktap_session {
	struct ktap_session_hot	hot;
	struct mutex		lock;	/* ioctls, release, handlers */
	u32			id;
	struct list_head	handlers;
	u32			nr_handlers;
	u32			nr_attached;
	bool			started;
	bool			verbose;
	u32			nr_skipped;
	struct ktap_output	*out;
	atomic_long_t		drops;
	wait_queue_head_t	wq;
	struct irq_work		wake_work;
	bool			waiters_pending;
	struct mutex		read_lock;	/* readers, @rbuf */
	char			*rbuf;
	u32			rsize;
	u32			rpos;
	u32			rlen;
};

static DEFINE_MUTEX(ktap_sessions_lock);
static unsigned int ktap_nr_sessions;
static u32 ktap_next_id;
static struct dentry *ktap_dir;

static int ktap_state(struct ktap_session *sess)
{
	return atomic_read(&sess->hot.state);
}

static bool ktap_done(struct ktap_session *sess)
{
	return ktap_state(sess) >= KTAP_STATE_EXITING;
}

static void ktap_wake_work(struct irq_work *work)
{
	struct ktap_session *sess = container_of(work, struct ktap_session,
						 wake_work);

	WRITE_ONCE(sess->waiters_pending, false);
	wake_up_all(&sess->wq);
}

/* Wake readers from any context. */
static void ktap_wake_readers(struct ktap_session *sess)
{
	/* Pairs with the barrier in ktap_prepare_wait(). */
	smp_mb();
	if (READ_ONCE(sess->waiters_pending))
		irq_work_queue(&sess->wake_work);
}

static void ktap_prepare_wait(struct ktap_session *sess)
{
	WRITE_ONCE(sess->waiters_pending, true);
	/* Pairs with the barrier in ktap_wake_readers(). */
	smp_mb();
}

/* Move to EXITING unless already there or beyond. Any context. */
static void ktap_set_exiting(struct ktap_session *sess)
{
	int old = atomic_read(&sess->hot.state);

	do {
		if (old >= KTAP_STATE_EXITING)
			return;
	} while (!atomic_try_cmpxchg(&sess->hot.state, &old,
				     KTAP_STATE_EXITING));
	/* once per session: also wakes the EPOLLPRI pollers, never armed */
	irq_work_queue(&sess->wake_work);
}

DEFINE_PER_CPU(int, ktap_probe_depth);

/*
 * A record's final newline is a flag, not text, since ftrace's readers
 * print a record as a line. Output of a probe handler always ends its
 * line. Takes the newline off @buf's @len; returns the flag.
 */
static bool ktap_line_end(const char *buf, size_t *len)
{
	if (*len && buf[*len - 1] == '\n') {
		(*len)--;
		return true;
	}
	return this_cpu_read(ktap_probe_depth);
}

/**
 * ktap_host_write - host_ops->write: append output
 * @host: the session
 * @buf: bytes to write
 * @len: how many
 *
 * Any context, NMI included; never sleeps. A record that does not fit
 * is counted in the session's drops.
 *
 * Output written by a probe handler ends its line: like the trace records
 * of ktap 0.1, every printf() of a handler is a line of its own, so the
 * seed scripts' printf("%s", e.tostring()) prints one event per line.
 * The main chunk and END handlers write exactly what they print.
 */
static void ktap_host_write(void *host, const char *buf, size_t len)
{
	struct ktap_session *sess = host;
	u32 n, max = ktap_output_max(sess->out);
	bool nl;

	if (!len)
		return;
	nl = ktap_line_end(buf, &len);
	/* once, for a line that was only its newline */
	do {
		n = min_t(size_t, len, max);
		if (!ktap_output_write(sess->out, buf, n, nl && n == len))
			atomic_long_inc(&sess->drops);
		buf += n;
		len -= n;
	} while (len);
	ktap_wake_readers(sess);
}

/**
 * ktap_host_write_event - host_ops->write_event: a line printing an event
 * @host: the session
 * @ev: the event, whose raw record is stored
 * @pre: text before it
 * @plen: its length
 * @post: text after it, ending the line
 * @qlen: its length
 *
 * Any context, NMI included; never sleeps. The event's output function
 * runs when the line is read (output.c). A line that does not fit one
 * record is counted in the session's drops.
 */
static void ktap_host_write_event(void *host, struct ktap_event *ev,
				  const char *pre, size_t plen,
				  const char *post, size_t qlen)
{
	struct ktap_session *sess = host;
	bool nl = ktap_line_end(post, &qlen);
	const void *rec;
	u32 rlen;

	ev->ops->record(ev, &rec, &rlen);
	if (!ktap_output_write_event(sess->out, rec, rlen, pre, plen, post,
				     qlen, nl))
		atomic_long_inc(&sess->drops);
	ktap_wake_readers(sess);
}

static void ktap_host_exit(void *host)
{
	ktap_set_exiting(host);
}

/**
 * ktap_host_attach - host_ops->attach: record a handler
 * @host: the session
 * @probe: index in the probe table
 * @fn: the handler closure
 *
 * Runs in the main chunk, in process context, under sess->lock (START).
 * The probe is attached once the main chunk has returned.
 *
 * Return: 0, -E2BIG past KTAP_MAX_PROBES handlers, -EINVAL for a bad
 * probe index, -ENOMEM.
 */
static int ktap_host_attach(void *host, u32 probe, struct ktap_closure *fn)
{
	struct ktap_session *sess = host;
	const struct ktap_bc_probe *bp;
	struct ktap_handler *h;

	lockdep_assert_held(&sess->lock);
	if (sess->nr_handlers >= KTAP_MAX_PROBES)
		return -E2BIG;
	bp = ktap_vm_probe(sess->hot.vm, probe);
	if (!bp || bp->type >= KTAP_PROBE__COUNT)
		return -EINVAL;
	h = kzalloc(sizeof(*h), GFP_KERNEL_ACCOUNT);
	if (!h)
		return -ENOMEM;
	h->sess = sess;
	h->hot = &sess->hot;
	h->fn = fn;
	h->bp = bp;
	h->probe = probe;
	/* LOAD set the filters: a session without them tests none per event */
	h->filter = bp->type != KTAP_PROBE_TIMER && bp->type != KTAP_PROBE_END &&
		    (sess->hot.cpu >= 0 || sess->hot.tgid >= 0);
	list_add_tail(&h->node, &sess->handlers);
	sess->nr_handlers++;
	return 0;
}

static int ktap_attach_all(struct ktap_session *sess);

/*
 * Attach the handlers recorded so far and mark the session RUNNING; on
 * failure the session is EXITING. START does this when the main chunk
 * returns, sleep() before it waits.
 */
static int ktap_go_live(struct ktap_session *sess)
{
	int ret = ktap_attach_all(sess);

	if (ret) {
		ktap_set_exiting(sess);
		return ret;
	}
	atomic_cmpxchg(&sess->hot.state, KTAP_STATE_LOADED, KTAP_STATE_RUNNING);
	return 0;
}

/* The session ended, or ktap_wake_readers() fired and must be re-armed. */
static bool ktap_sleep_woken(struct ktap_session *sess)
{
	return ktap_done(sess) || !READ_ONCE(sess->waiters_pending);
}

/**
 * ktap_host_sleep - host_ops->sleep: the main chunk waits, probes live
 * @host: the session
 * @ms: milliseconds
 *
 * Runs in the main chunk, in process context, under sess->lock (START).
 * The handlers recorded so far are attached and the session is RUNNING
 * from here on; STOP from another thread waits for START to return, so
 * the wait ends early when a handler calls exit() or hits an error.
 *
 * Return: 0, -EINTR on a signal, or the attach error (the session is
 * then EXITING with a message in its output).
 */
static int ktap_host_sleep(void *host, u32 ms)
{
	struct ktap_session *sess = host;
	unsigned long deadline = jiffies + msecs_to_jiffies(ms);
	long left;
	int ret;

	lockdep_assert_held(&sess->lock);
	if (ktap_done(sess))
		return 0;
	ret = ktap_go_live(sess);
	if (ret)
		return ret;
	/*
	 * ktap_wake_readers() wakes sess->wq once per ktap_prepare_wait():
	 * after each wakeup (output, most often) arm it again.
	 */
	while (!ktap_done(sess)) {
		left = (long)(deadline - jiffies);
		if (left <= 0)
			break;
		ktap_prepare_wait(sess);
		left = wait_event_interruptible_timeout(sess->wq,
							ktap_sleep_woken(sess),
							left);
		if (left < 0)
			return -EINTR;
	}
	return 0;
}

static const struct ktap_host_ops ktap_host_ops = {
	.attach	= ktap_host_attach,
	.write	= ktap_host_write,
	.write_event = ktap_host_write_event,
	.exit	= ktap_host_exit,
	.sleep	= ktap_host_sleep,
};

static __printf(2, 0) void ktap_session_vprintf(struct ktap_session *sess,
						const char *fmt, va_list ap)
{
	char *msg = kvasprintf(GFP_KERNEL, fmt, ap);

	if (!msg) {
		atomic_long_inc(&sess->drops);
		return;
	}
	ktap_host_write(sess, msg, strlen(msg));
	kfree(msg);
}

/**
 * ktap_session_printf - write a message into the session output
 * @sess: the session
 * @fmt: printf format
 *
 * Process context (attach errors and the like).
 */
void ktap_session_printf(struct ktap_session *sess, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ktap_session_vprintf(sess, fmt, ap);
	va_end(ap);
}

/**
 * ktap_session_skipped - count an event a wildcard could not attach
 * @sess: the session
 * @fmt: printf format of the line naming it, written into the output
 *	 when LOAD asked for KTAP_LOAD_F_VERBOSE
 *
 * Process context, under the session lock (attach).
 */
void ktap_session_skipped(struct ktap_session *sess, const char *fmt, ...)
{
	va_list ap;

	sess->nr_skipped++;
	if (!sess->verbose)
		return;
	va_start(ap, fmt);
	ktap_session_vprintf(sess, fmt, ap);
	va_end(ap);
}

/* What tracing/error_log says; the command line carries the details. */
enum ktap_err {
	KTAP_ERR_LOAD,
	KTAP_ERR_PROBE,
	KTAP_ERR_ATTACH,
};

static const char *ktap_err_text[] = {
	[KTAP_ERR_LOAD]		= "bytecode image rejected",
	[KTAP_ERR_PROBE]	= "probe not attachable here",
	[KTAP_ERR_ATTACH]	= "probe failed to attach",
};

/**
 * ktap_log_err - report a load or attach error in tracing/error_log
 * @err: what kind of error
 * @where: "FILE:LINE" of the script, or NULL when unknown
 * @detail: the message, as the ioctl log or the session output has it
 *
 * Appears as "ktap: error: <kind>" with "Command: FILE:LINE: <detail>"
 * and the caret under the detail, the way kprobe_events and hist
 * triggers report theirs. Process context: tracing_log_err() takes a
 * mutex.
 */
static void ktap_log_err(enum ktap_err err, const char *where,
			 const char *detail)
{
	size_t len = strcspn(detail, "\n");
	char *cmd;

	cmd = kasprintf(GFP_KERNEL, "%s%s%.*s", where ?: "", where ? ": " : "",
			(int)len, detail);
	if (!cmd)
		return;
	tracing_log_err(NULL, "ktap", cmd, ktap_err_text, err,
			where ? strlen(where) + 2 : 0);
	kfree(cmd);
}

/*
 * Detach every attached handler and wait until none of them can still be
 * running. Called under sess->lock.
 */
static void ktap_detach_all(struct ktap_session *sess)
{
	struct ktap_handler *h;

	lockdep_assert_held(&sess->lock);
	if (!sess->nr_attached)
		return;
	list_for_each_entry(h, &sess->handlers, node) {
		if (h->priv) {
			ktap_handler_detach(h);
			h->priv = NULL;
		}
	}
	ktap_handlers_sync();
	sess->nr_attached = 0;
}

static void ktap_free_handlers(struct ktap_session *sess)
{
	struct ktap_handler *h, *tmp;

	list_for_each_entry_safe(h, tmp, &sess->handlers, node) {
		list_del(&h->node);
		kfree(h);
	}
	sess->nr_handlers = 0;
}

/*
 * Read the leading size of an ioctl argument: the caller's struct, at
 * least @min bytes (its first published size) and at most a page, as
 * perf and bpf bound theirs.
 */
static int ktap_get_usize(void __user *uarg, u32 min, u32 *usize)
{
	if (get_user(*usize, (u32 __user *)uarg))
		return -EFAULT;
	if (*usize > PAGE_SIZE)
		return -E2BIG;
	if (*usize < min)
		return -EINVAL;
	return 0;
}

static_assert(sizeof(struct ktap_version) >= KTAP_VERSION_SIZE_VER0);
static_assert(sizeof(struct ktap_load_attr) >= KTAP_LOAD_ATTR_SIZE_VER0);
static_assert(sizeof(struct ktap_stats) >= KTAP_STATS_SIZE_VER0);
static_assert(offsetofend(struct ktap_stats, keys_dropped) ==
	      KTAP_STATS_SIZE_VER1);

/*
 * Whether the loading task may see kernel addresses, as kptr_restrict
 * decides for %pK: 0 hashes them, 1 shows them to CAP_SYSLOG, 2 to
 * nobody. Asked of vsprintf at LOAD, in the loader's context; printf's
 * %p in a handler runs in whatever task the probe interrupted.
 */
static bool ktap_may_see_pointers(void)
{
	char restricted[24], raw[24];
	void *p = restricted;

	snprintf(restricted, sizeof(restricted), "%pK", p);
	/* how %pK prints an address it shows: zero-padded hex */
	snprintf(raw, sizeof(raw), "%0*lx", (int)(2 * sizeof(p)),
		 (unsigned long)p);
	return !strcmp(restricted, raw);
}

/**
 * ktap_put_struct - write an output struct back to a caller of any size
 * @uarg: the caller's struct
 * @usize: its size
 * @kbuf: the kernel's struct, its size field already set
 * @ksize: the kernel's size
 *
 * Copies the part both know; bytes of a larger caller struct that this
 * kernel does not know become zero.
 *
 * Return: 0 or -EFAULT.
 */
static int ktap_put_struct(void __user *uarg, u32 usize, const void *kbuf,
			   size_t ksize)
{
	if (copy_to_user(uarg, kbuf, min_t(size_t, usize, ksize)))
		return -EFAULT;
	if (usize > ksize && clear_user(uarg + ksize, usize - ksize))
		return -EFAULT;
	return 0;
}

static long ktap_ioc_version(void __user *uarg)
{
	struct ktap_version v = {
		.size		= sizeof(v),
		.abi_version	= KTAP_ABI_VERSION,
		.nr_opcodes	= KTAP_OP__COUNT,
		.nr_builtins	= ktap_vm_nr_builtins(),
	};
	u32 usize;
	int ret;

	ret = ktap_get_usize(uarg, sizeof(u32), &usize);
	if (ret)
		return ret;
	strscpy(v.release, init_utsname()->release, sizeof(v.release));
	return ktap_put_struct(uarg, usize, &v, sizeof(v));
}

/* Copy the NUL-terminated log (@size bytes at @log) to the user's log_buf. */
static int ktap_copy_log(const struct ktap_load_attr *attr, const char *log,
			 size_t size)
{
	char __user *ubuf = u64_to_user_ptr(attr->log_buf);
	size_t n;

	if (!size || !log)
		return 0;
	n = strnlen(log, size - 1);
	if (copy_to_user(ubuf, log, n) || put_user('\0', ubuf + n))
		return -EFAULT;
	return 0;
}

static int ktap_check_attr(const struct ktap_load_attr *attr)
{
	if (memchr_inv(attr->__reserved, 0, sizeof(attr->__reserved)))
		return -EINVAL;
	if (attr->flags & ~(KTAP_LOAD_F_DRY_RUN | KTAP_LOAD_F_VERBOSE |
			    KTAP_LOAD_F_NO_FOLLOW | KTAP_LOAD_F_JSON))
		return -EINVAL;
	if (!attr->image_len)
		return -EINVAL;
	if (attr->image_len > KTAP_MAX_IMAGE)
		return -E2BIG;
	if (attr->mem_limit_kb > KTAP_MAX_MEM_KB)
		return -E2BIG;
	if (attr->buffer_kb > KTAP_MAX_BUFFER_KB)
		return -E2BIG;
	if (attr->pid < -1 || attr->cpu < -1)
		return -EINVAL;
	if (attr->cpu >= 0 &&
	    (attr->cpu >= nr_cpu_ids || !cpu_possible(attr->cpu)))
		return -EINVAL;
	return 0;
}

/* The pid filter as a global tgid, looked up in the caller's namespace. */
static int ktap_filter_tgid(pid_t upid, pid_t *tgid)
{
	struct task_struct *task;
	struct pid *pid;

	*tgid = -1;
	if (upid < 0)
		return 0;
	pid = find_get_pid(upid);
	task = get_pid_task(pid, PIDTYPE_PID);
	put_pid(pid);
	if (!task)
		return -ESRCH;
	*tgid = task->tgid;
	put_task_struct(task);
	return 0;
}

/* After a successful load: every probe must be attachable here. */
static int ktap_check_probes(struct ktap_session *sess, char *log,
			     size_t log_size)
{
	const struct ktap_bc_probe *bp;
	char where[128];
	u32 i;
	int ret;

	for (i = 0; i < KTAP_MAX_PROBES; i++) {
		bp = ktap_vm_probe(sess->hot.vm, i);
		if (!bp)
			break;
		ret = ktap_probe_check(sess->hot.vm, bp, log, log_size);
		if (ret) {
			ktap_vm_probe_where(sess->hot.vm, i, where,
					    sizeof(where));
			ktap_log_err(KTAP_ERR_PROBE, where, log);
			return ret;
		}
	}
	return 0;
}

/*
 * The instance is only created for a program that loaded: most opens
 * (ktap -V, rejected images) never need it. Published with release
 * semantics; readers of a session without one see no output.
 */
static int ktap_alloc_output(struct ktap_session *sess,
			     const struct ktap_load_attr *attr)
{
	char name[KTAP_INSTANCE_NAME_MAX];
	struct ktap_output *out;
	u32 kb = attr->buffer_kb;
	long n;

	if (attr->instance) {
		n = strncpy_from_user(name, u64_to_user_ptr(attr->instance),
				      sizeof(name));
		if (n < 0)
			return n;
		if (n == sizeof(name))
			return -ENAMETOOLONG;
	} else {
		snprintf(name, sizeof(name), "ktap-%u", sess->id);
	}
	out = ktap_output_create(name, kb, clamp_t(u32, READ_ONCE(buffer_kb),
						   4, KTAP_MAX_BUFFER_KB));
	if (IS_ERR(out))
		return PTR_ERR(out);
	/* a batch of records per read(): one lock round trip, one copy */
	sess->rsize = max_t(u32, ktap_output_max(out) + 1, KTAP_READ_BUF);
	sess->rbuf = kvmalloc(sess->rsize, GFP_KERNEL_ACCOUNT);
	if (!sess->rbuf) {
		ktap_output_destroy(out);
		return -ENOMEM;
	}
	/* Pairs with the readers' acquire: they see rbuf set. */
	smp_store_release(&sess->out, out);
	return 0;
}

static long ktap_ioc_load(struct ktap_session *sess, void __user *uarg)
{
	struct ktap_load_attr attr;
	struct ktap_vm_opts opts;
	struct ktap_vm *vm;
	size_t log_size, klog_size;
	char *log = NULL;
	void *image;
	u32 usize;
	pid_t tgid;
	int ret;

	ret = ktap_get_usize(uarg, KTAP_LOAD_ATTR_SIZE_VER0, &usize);
	if (ret)
		return ret;
	ret = copy_struct_from_user(&attr, sizeof(attr), uarg, usize);
	if (ret)
		return ret;
	ret = ktap_check_attr(&attr);
	if (ret)
		return ret;
	if (ktap_state(sess) != KTAP_STATE_NEW)
		return -EBUSY;
	ret = ktap_filter_tgid(attr.pid, &tgid);
	if (ret)
		return ret;

	/* the log also feeds tracing/error_log, wanted by the caller or not */
	log_size = min(attr.log_size, KTAP_MAX_LOG);
	klog_size = max_t(size_t, log_size, KTAP_MIN_LOG);
	log = kvzalloc(klog_size, GFP_KERNEL_ACCOUNT);
	if (!log)
		return -ENOMEM;
	image = vmemdup_user(u64_to_user_ptr(attr.image), attr.image_len);
	if (IS_ERR(image)) {
		ret = PTR_ERR(image);
		goto out_log;
	}

	opts.mem_limit = (size_t)(attr.mem_limit_kb ?: KTAP_DEFAULT_MEM_KB) *
			 1024;
	opts.insn_budget = attr.insn_budget ?: KTAP_DEFAULT_BUDGET;
	opts.target_pid = tgid >= 0 ? attr.pid : 0;
	opts.json = attr.flags & KTAP_LOAD_F_JSON;
	opts.raw_ptrs = ktap_may_see_pointers();
	vm = ktap_vm_load(image, attr.image_len, &opts, &ktap_host_ops, sess,
			  log, klog_size);
	kvfree(image);
	if (IS_ERR(vm)) {
		ret = PTR_ERR(vm);
		if (log[0])
			ktap_log_err(KTAP_ERR_LOAD, NULL, log);
		if (ktap_copy_log(&attr, log, log_size))
			ret = -EFAULT;
		goto out_log;
	}

	sess->hot.vm = vm;
	sess->hot.tgid = tgid;
	ret = ktap_check_probes(sess, log, klog_size);
	if (!ret && tgid >= 0 && !(attr.flags & KTAP_LOAD_F_NO_FOLLOW))
		ret = ktap_follow_start(&sess->hot);
	if (!ret)
		ret = ktap_alloc_output(sess, &attr);
	if (ret) {
		ktap_follow_stop(&sess->hot);
		sess->hot.tgid = -1;
		sess->hot.vm = NULL;
		ktap_vm_free(vm);
		if (ktap_copy_log(&attr, log, log_size))
			ret = -EFAULT;
		goto out_log;
	}
	sess->hot.cpu = attr.cpu;
	sess->hot.dry_run = attr.flags & KTAP_LOAD_F_DRY_RUN;
	sess->verbose = attr.flags & KTAP_LOAD_F_VERBOSE;
	atomic_set(&sess->hot.state, KTAP_STATE_LOADED);
out_log:
	kvfree(log);
	return ret;
}

/**
 * ktap_attach_reason - what an attach error usually means for a probe type
 * @type: KTAP_PROBE_*
 * @err: negative errno of the attach
 *
 * The kernel's probe registrations say little more than -EINVAL or
 * -ENOENT; users asked what to do about them.
 *
 * Return: a phrase, or NULL when there is nothing to add to the errno.
 */
static const char *ktap_attach_reason(u32 type, int err)
{
	switch (err) {
	case -ENOMEM:
		return "out of memory";
	case -EBUSY:
		return "in use by another tracer";
	}
	switch (type) {
	case KTAP_PROBE_KPROBE:
		if (err == -ENOENT)
			return "no such function in the kernel or its modules";
		if (err == -EINVAL)
			return "kprobes refuse this function (blacklisted, noinstr or entry code)";
		if (err == -EILSEQ)
			return "the offset is not at an instruction boundary";
		if (err == -EPERM)
			return "not permitted (kernel lockdown?)";
		break;
	case KTAP_PROBE_UPROBE:
		if (err == -ENOENT)
			return "no such file";
		if (err == -EINVAL)
			return "not an instruction of an executable mapping";
		if (err == -ENOTSUPP)
			return "uprobes cannot step the instruction there (a lock prefix, for one)";
		break;
	case KTAP_PROBE_TRACEPOINT:
		if (err == -ENOENT)
			return "no such event";
		if (err == -EPERM)
			return "perf does not let this event be traced (one of ftrace's own)";
		break;
	case KTAP_PROBE_FTRACE:
		if (err == -ENOENT || err == -EINVAL)
			return "no function ftrace can trace matches";
		break;
	}
	return NULL;
}

/* Say in the output and in tracing/error_log which probe failed, where. */
static void ktap_attach_failed(struct ktap_session *sess,
			       struct ktap_handler *h, int err)
{
	const char *spec = ktap_vm_str(sess->hot.vm, h->bp->spec) ?: "?";
	const char *why = ktap_attach_reason(h->bp->type, err);
	char where[128], *msg;

	ktap_vm_probe_where(sess->hot.vm, h->probe, where, sizeof(where));
	msg = kasprintf(GFP_KERNEL, "probe %u (%s): error %pe%s%s", h->probe,
			spec, ERR_PTR(err), why ? ": " : "", why ?: "");
	if (!msg) {
		atomic_long_inc(&sess->drops);
		return;
	}
	ktap_log_err(KTAP_ERR_ATTACH, where, msg);
	ktap_session_printf(sess, "ktap: %s: cannot attach %s\n", where, msg);
	kfree(msg);
}

/*
 * A kprobe or uprobe the compiler expanded from a wildcard
 * (KTAP_PROBE_F_WILDCARD): a function that cannot be probed (on the
 * kprobe blacklist, in an entry section, starting with an instruction
 * uprobes cannot step) is skipped and counted, not an error.
 */
static bool ktap_probe_wild(const struct ktap_handler *h)
{
	return h->bp->flags & KTAP_PROBE_F_WILDCARD;
}

/*
 * Attach every recorded handler not yet attached (sleep() in the main
 * chunk attaches those recorded before it); on failure detach them all.
 */
static int ktap_attach_all(struct ktap_session *sess)
{
	u32 tried = 0, skipped = 0;
	struct ktap_handler *h;
	int ret;

	list_for_each_entry(h, &sess->handlers, node) {
		if (h->bp->type == KTAP_PROBE_END || h->priv || h->skipped)
			continue;
		/* thousands of kprobes take a while: let Ctrl-C through */
		if (signal_pending(current)) {
			ktap_detach_all(sess);
			return -EINTR;
		}
		tried++;
		ret = ktap_handler_attach(h);
		if (ret && ktap_probe_wild(h) && ret != -ENOMEM) {
			/* a uprobe's target is the path, already in the spec */
			bool name = h->bp->type != KTAP_PROBE_UPROBE;

			h->skipped = true;
			skipped++;
			ktap_session_skipped(sess,
					     "ktap: probe '%s'%s%s skipped (error %pe)\n",
					     ktap_vm_str(sess->hot.vm, h->bp->spec),
					     name ? ": " : "",
					     name ? ktap_vm_str(sess->hot.vm, h->bp->target) : "",
					     ERR_PTR(ret));
			continue;
		}
		if (ret) {
			ktap_attach_failed(sess, h, ret);
			ktap_detach_all(sess);
			return ret;
		}
		sess->nr_attached++;
	}
	if (tried && skipped == tried) {
		ktap_session_printf(sess,
				    "ktap: none of the %u functions the wildcards matched can be probed\n",
				    skipped);
		return -ENOENT;
	}
	return 0;
}

/*
 * START: run the main chunk (ATTACH records handlers, sleep() attaches
 * those recorded so far and waits), then attach the rest. A
 * runtime error or exit() in the main chunk is not an ioctl error: the
 * session is EXITING and its output says why. An attach failure is
 * returned, with a message in the output, and leaves the session EXITING.
 */
static long ktap_ioc_start(struct ktap_session *sess)
{
	int ret;

	if (ktap_state(sess) != KTAP_STATE_LOADED)
		return -EINVAL;
	sess->started = true;
	ret = ktap_vm_run_main(sess->hot.vm);
	if (ret < 0 || ktap_done(sess)) {
		ktap_set_exiting(sess);
		return 0;
	}
	return ktap_go_live(sess);
}

/*
 * The main chunk may record up to KTAP_MAX_PROBES END handlers; they
 * share one instruction budget, so STOP (and close) take at most one
 * handler run's time, and a fatal signal ends the walk.
 */
static void ktap_run_end_handlers(struct ktap_session *sess)
{
	s64 budget = ktap_vm_insn_budget(sess->hot.vm);
	struct ktap_handler *h;

	list_for_each_entry(h, &sess->handlers, node) {
		if (h->bp->type != KTAP_PROBE_END)
			continue;
		if (budget <= 0 || fatal_signal_pending(current))
			break;
		ktap_handler_run_end(h, &budget);
		cond_resched();
	}
}

/* STOP: detach, run the END handlers, mark STOPPED; idempotent. */
static long ktap_ioc_stop(struct ktap_session *sess)
{
	if (ktap_state(sess) == KTAP_STATE_STOPPED)
		return 0;
	ktap_set_exiting(sess);
	ktap_detach_all(sess);
	if (sess->started)
		ktap_run_end_handlers(sess);
	atomic_set(&sess->hot.state, KTAP_STATE_STOPPED);
	WRITE_ONCE(sess->waiters_pending, false);
	wake_up_all(&sess->wq);
	return 0;
}

static long ktap_ioc_stats(struct ktap_session *sess, void __user *uarg)
{
	struct ktap_vm_stats vst = {};
	struct ktap_stats st = {};
	u32 usize;
	int ret;

	ret = ktap_get_usize(uarg, sizeof(u32), &usize);
	if (ret)
		return ret;
	if (sess->hot.vm)
		ktap_vm_stats(sess->hot.vm, &vst);
	st.size = sizeof(st);
	st.state = ktap_state(sess);
	st.hits = vst.hits;
	/* Lost output and handler runs abandoned on a busy table in NMI. */
	st.drops = atomic_long_read(&sess->drops) + vst.drops + vst.throttled;
	if (sess->out)
		st.drops += ktap_output_overruns(sess->out);
	st.recursion = vst.recursion;
	st.errors = vst.errors;
	st.mem_used = vst.mem_used;
	st.mem_limit = vst.mem_limit;
	st.nr_attached = sess->nr_attached;
	st.nr_skipped = sess->nr_skipped;
	st.keys_dropped = vst.keys_dropped;
	if (sess->out)
		strscpy(st.instance, ktap_output_name(sess->out),
			sizeof(st.instance));
	return ktap_put_struct(uarg, usize, &st, sizeof(st));
}

/*
 * Privilege is checked where it is used, not only at open(): the
 * descriptor may have been inherited by, or passed over SCM_RIGHTS to,
 * a process that could never have opened the control file. Loading and
 * starting a program (attaching probes, reading kernel memory) need
 * what open() needs, from the caller; STOP, STATS and read() only act
 * on what a privileged caller already set up.
 */
static int ktap_may_trace(void)
{
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	return security_locked_down(LOCKDOWN_TRACEFS);
}

static long ktap_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct ktap_session *sess = file->private_data;
	void __user *uarg = (void __user *)arg;
	unsigned int nr;
	int ret;

	/*
	 * By number only: the size in the command is the caller's struct
	 * size, which may differ from ours (see the UAPI header).
	 */
	if (_IOC_TYPE(cmd) != KTAP_IOC_MAGIC)
		return -ENOTTY;
	nr = _IOC_NR(cmd);
	if (nr == _IOC_NR(KTAP_IOC_VERSION))
		return ktap_ioc_version(uarg);
	if (nr == _IOC_NR(KTAP_IOC_LOAD) || nr == _IOC_NR(KTAP_IOC_START)) {
		ret = ktap_may_trace();
		if (ret)
			return ret;
	}

	/* START may run a main chunk for a while: waiters stay killable */
	scoped_cond_guard(mutex_intr, return -EINTR, &sess->lock) {
		switch (nr) {
		case _IOC_NR(KTAP_IOC_LOAD):
			return ktap_ioc_load(sess, uarg);
		case _IOC_NR(KTAP_IOC_START):
			return ktap_ioc_start(sess);
		case _IOC_NR(KTAP_IOC_STOP):
			return ktap_ioc_stop(sess);
		case _IOC_NR(KTAP_IOC_STATS):
			return ktap_ioc_stats(sess, uarg);
		default:
			return -ENOTTY;
		}
	}
	return -ENOTTY;
}

/*
 * Take the oldest records of all CPUs into sess->rbuf. Returns false
 * when there is none. Called under sess->read_lock.
 */
static bool ktap_fetch(struct ktap_session *sess)
{
	/* Pairs with ktap_alloc_output(). */
	struct ktap_output *out = smp_load_acquire(&sess->out);

	if (!out)
		return false;
	sess->rpos = 0;
	sess->rlen = ktap_output_read(out, sess->rbuf, sess->rsize);
	return sess->rlen != 0;
}

static bool ktap_readable(struct ktap_session *sess)
{
	/* Pairs with ktap_alloc_output(). */
	struct ktap_output *out = smp_load_acquire(&sess->out);

	return (out && !ktap_output_empty(out)) || ktap_done(sess);
}

/**
 * ktap_session_read - read the session output
 * @sess: the session
 * @file: the control file, for O_NONBLOCK
 * @ubuf: user buffer
 * @count: its size
 *
 * Blocks until there is output (unless O_NONBLOCK). Returns 0 (end of
 * file) once the session is EXITING or STOPPED and the buffer is empty.
 *
 * Return: bytes copied, 0 at end of file, or a negative error.
 */
static ssize_t ktap_session_read(struct ktap_session *sess, struct file *file,
				 char __user *ubuf, size_t count)
{
	size_t done = 0;
	int ret;

	if (!count)
		return 0;
	ret = mutex_lock_interruptible(&sess->read_lock);
	if (ret)
		return ret;
	while (done < count) {
		size_t n;

		if (sess->rpos == sess->rlen && !ktap_fetch(sess)) {
			if (done || ktap_done(sess))
				break;
			if (file->f_flags & O_NONBLOCK) {
				ret = -EAGAIN;
				break;
			}
			ktap_prepare_wait(sess);
			ret = wait_event_interruptible(sess->wq,
						       ktap_readable(sess));
			if (ret)
				break;
			continue;
		}
		n = min_t(size_t, count - done, sess->rlen - sess->rpos);
		if (copy_to_user(ubuf + done, sess->rbuf + sess->rpos, n)) {
			ret = -EFAULT;
			break;
		}
		sess->rpos += n;
		done += n;
	}
	mutex_unlock(&sess->read_lock);
	return done ? done : ret;
}

static __poll_t ktap_session_poll(struct ktap_session *sess, struct file *file,
				  poll_table *wait)
{
	__poll_t mask = 0;

	poll_wait(file, &sess->wq, wait);
	/*
	 * A poller of EPOLLPRI alone (ktap -N) leaves the output to other
	 * readers of the instance: it waits for the end of the session and
	 * need not be woken by every record.
	 */
	if (poll_requested_events(wait) & EPOLLIN)
		ktap_prepare_wait(sess);
	if (ktap_readable(sess) || READ_ONCE(sess->rpos) != READ_ONCE(sess->rlen))
		mask |= EPOLLIN | EPOLLRDNORM;
	if (ktap_done(sess))
		mask |= EPOLLPRI;
	return mask;
}

static void ktap_session_free(struct ktap_session *sess)
{
	irq_work_sync(&sess->wake_work);
	ktap_follow_stop(&sess->hot);
	/* no handler runs any more: the instance can go */
	ktap_output_destroy(sess->out);
	if (sess->hot.vm)
		ktap_vm_free(sess->hot.vm);
	ktap_free_handlers(sess);
	kvfree(sess->rbuf);
	kfree(sess);
}

static struct ktap_session *ktap_session_new(void)
{
	struct ktap_session *sess;

	sess = kzalloc(sizeof(*sess), GFP_KERNEL_ACCOUNT);
	if (!sess)
		return ERR_PTR(-ENOMEM);
	mutex_init(&sess->lock);
	mutex_init(&sess->read_lock);
	INIT_LIST_HEAD(&sess->handlers);
	init_waitqueue_head(&sess->wq);
	init_irq_work(&sess->wake_work, ktap_wake_work);
	atomic_set(&sess->hot.state, KTAP_STATE_NEW);
	sess->hot.tgid = -1;
	sess->hot.cpu = -1;

	scoped_guard(mutex, &ktap_sessions_lock) {
		if (ktap_nr_sessions >= READ_ONCE(max_sessions)) {
			kfree(sess);
			return ERR_PTR(-EBUSY);
		}
		ktap_nr_sessions++;
		sess->id = ktap_next_id++;
	}
	return sess;
}

static int ktap_control_open(struct inode *inode, struct file *file)
{
	struct ktap_session *sess;
	int ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	ret = security_locked_down(LOCKDOWN_TRACEFS);
	if (ret)
		return ret;
	ret = ktap_events_get();
	if (ret)
		return ret;
	sess = ktap_session_new();
	if (IS_ERR(sess)) {
		ktap_events_put();
		return PTR_ERR(sess);
	}
	file->private_data = sess;
	return nonseekable_open(inode, file);
}

static int ktap_control_release(struct inode *inode, struct file *file)
{
	struct ktap_session *sess = file->private_data;

	scoped_guard(mutex, &sess->lock) {
		ktap_set_exiting(sess);
		ktap_detach_all(sess);
		atomic_set(&sess->hot.state, KTAP_STATE_STOPPED);
	}
	wake_up_all(&sess->wq);
	ktap_session_free(sess);
	scoped_guard(mutex, &ktap_sessions_lock)
		ktap_nr_sessions--;
	ktap_events_put();
	return 0;
}

static ssize_t ktap_control_read(struct file *file, char __user *ubuf,
				 size_t count, loff_t *ppos)
{
	return ktap_session_read(file->private_data, file, ubuf, count);
}

static __poll_t ktap_control_poll(struct file *file, poll_table *wait)
{
	return ktap_session_poll(file->private_data, file, wait);
}

static const struct file_operations ktap_control_fops = {
	.owner		= THIS_MODULE,
	.open		= ktap_control_open,
	.release	= ktap_control_release,
	.read		= ktap_control_read,
	.poll		= ktap_control_poll,
	.unlocked_ioctl	= ktap_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
};

static int __init ktap_init(void)
{
	int ret;

	ktap_output_init();
	ktap_dir = tracefs_create_dir("ktap", NULL);
	if (!ktap_dir) {
		pr_warn("cannot create tracing/ktap (tracefs unavailable or locked down)\n");
		return -ENODEV;
	}
	if (!tracefs_create_file("control", 0600, ktap_dir, NULL,
				 &ktap_control_fops)) {
		ret = -ENOMEM;
		goto err_dir;
	}
	return 0;
err_dir:
	tracefs_remove(ktap_dir);
	return ret;
}

static void __exit ktap_exit(void)
{
	/* No session can exist: each one holds a module reference. */
	tracefs_remove(ktap_dir);
	ktap_output_exit();
}

module_init(ktap_init);
module_exit(ktap_exit);

MODULE_DESCRIPTION("ktap: scripting dynamic tracer VM");
MODULE_AUTHOR("The ktap authors");
MODULE_LICENSE("GPL");
