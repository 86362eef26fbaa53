// SPDX-License-Identifier: GPL-2.0
/*
 * The output of a ktap session is a tracing instance,
 * tracing/instances/<name>/ (ktap-<id> unless the script's user names
 * it), whose ring buffer receives ktap:output records. Everything ftrace
 * offers for an instance applies: trace, trace_pipe, per_cpu/,
 * buffer_size_kb, tracing_on (off: records are dropped and counted),
 * trace_clock, and trace-cmd's -B. The ktap tool reads the same records
 * through the control descriptor (session.c), which consumes them from
 * the instance's buffer in timestamp order across CPUs.
 *
 * Records are written straight into the instance's buffer with the
 * ktap:output event type, from any context, NMI included: reserve and
 * commit are the lockless ring buffer's. The tracepoint of that event is
 * never fired, so enabling ktap:output anywhere records nothing.
 *
 * An instance ktap made lives as long as its session. It cannot be
 * removed while a reader holds one of its files open; then a worker
 * retries once a second until the last reader is gone. An instance the
 * user made (mkdir, trace-cmd) and named at LOAD receives the records
 * and stays; ktap neither empties nor removes it, and resizes it only
 * when asked to.
 *
 * A record lost to a full buffer is counted either way the instance is
 * set: with options/overwrite on (ftrace's default) the oldest records
 * give way and the ring buffer counts them as overruns; with it off the
 * new record is refused and ktap counts it. (Off lost more records in
 * make bench's printf rows: 20,655 of 200,000 against none.)
 */

#define pr_fmt(fmt) "ktap: " fmt

#include <linux/cleanup.h>
#include <linux/ctype.h>
#include <linux/mutex.h>
#include <linux/ring_buffer.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#define CREATE_TRACE_POINTS
#include "ktap_trace.h"

#include "../trace.h"
#include "../trace_output.h"
#include "events.h"

/* The instance of the tracing core marks ours: events of this system only. */
#define KTAP_SYSTEMS		"ktap"

/**
 * struct ktap_output - a session's instance
 * @tr: the instance (we hold one reference)
 * @buffer: its ring buffer
 * @max_rec: most bytes of text one record holds
 * @owned: ktap made the instance and removes it
 * @overruns: the ring buffer's overrun count when the session began
 * @iter: the control descriptor's reader formats event records with it
 * @rd_cpu: that reader takes records from this CPU ...
 * @rd_limit: ... while they are older than this (the oldest record of
 *	      the other CPUs when it last looked) ...
 * @rd_left: ... for at most this many more
 * @node: in ktap_outputs, or ktap_doomed once the session is gone
 * @name: the instance's name
 */
struct ktap_output {
	struct trace_array	*tr;
	struct trace_buffer	*buffer;
	u32			max_rec;
	bool			owned;
	unsigned long		overruns;
	struct trace_iterator	*iter;
	int			rd_cpu;
	u64			rd_limit;
	u32			rd_left;
	struct list_head	node;
	char			name[KTAP_INSTANCE_NAME_MAX];
};

static DEFINE_MUTEX(ktap_output_lock);
static LIST_HEAD(ktap_outputs);		/* instances of live sessions */
static LIST_HEAD(ktap_doomed);		/* instances still held by readers */
static void ktap_reap_doomed(struct work_struct *work);
static DECLARE_DELAYED_WORK(ktap_reaper, ktap_reap_doomed);

/* Names as tracefs directories take them, without surprises. */
static bool ktap_instance_name_ok(const char *name)
{
	const char *p;

	if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (p = name; *p; p++)
		if (!isalnum(*p) && *p != '-' && *p != '_' && *p != '.')
			return false;
	return true;
}

static bool ktap_instance_in_use(const char *name)
{
	struct ktap_output *out;

	lockdep_assert_held(&ktap_output_lock);
	list_for_each_entry(out, &ktap_outputs, node)
		if (!strcmp(out->name, name))
			return true;
	list_for_each_entry(out, &ktap_doomed, node)
		if (!strcmp(out->name, name))
			return true;
	return false;
}

/**
 * ktap_output_create - create or take the instance of a session
 * @name: instance name (checked here)
 * @kb: ring buffer per CPU, KiB; 0: @dflt_kb for an instance ktap
 *	makes, the size as it is for one the user made
 * @dflt_kb: the default size, KiB
 *
 * Process context.
 *
 * Return: the output, ERR_PTR(-EINVAL) for a bad name, -EEXIST when
 * another session writes into that instance or readers of an ended
 * session still hold it, -ENOMEM.
 */
struct ktap_output *ktap_output_create(const char *name, u32 kb,
				       u32 dflt_kb)
{
	struct ktap_output *out;
	struct trace_array *tr;
	ssize_t ret;

	if (strlen(name) >= KTAP_INSTANCE_NAME_MAX ||
	    !ktap_instance_name_ok(name))
		return ERR_PTR(-EINVAL);
	out = kzalloc(sizeof(*out), GFP_KERNEL_ACCOUNT);
	if (!out)
		return ERR_PTR(-ENOMEM);
	strscpy(out->name, name, sizeof(out->name));

	guard(mutex)(&ktap_output_lock);
	if (ktap_instance_in_use(name)) {
		kfree(out);
		return ERR_PTR(-EEXIST);
	}
	/* Finds an existing instance of that name, or creates ours. */
	tr = trace_array_get_by_name(name, KTAP_SYSTEMS);
	if (!tr) {
		kfree(out);
		return ERR_PTR(-ENOMEM);
	}
	/* a user's mkdir has no system list; ours lists only "ktap" */
	out->owned = tr->system_names &&
		     !strcmp(tr->system_names, KTAP_SYSTEMS);
	if (out->owned)
		kb = kb ?: dflt_kb;
	if (kb) {
		ret = tracing_resize_ring_buffer(tr, (unsigned long)kb * 1024,
						 RING_BUFFER_ALL_CPUS);
		if (ret < 0)
			goto err_put;
	}
	ret = -ENOMEM;
	out->iter = kvzalloc(sizeof(*out->iter), GFP_KERNEL_ACCOUNT);
	if (!out->iter)
		goto err_put;
	out->iter->tr = tr;
	out->iter->array_buffer = &tr->array_buffer;
	out->tr = tr;
	out->buffer = tr->array_buffer.buffer;
	/* an instance left by an earlier ktap module may still hold records */
	if (out->owned)
		ring_buffer_reset(out->buffer);
	out->overruns = ring_buffer_overruns(out->buffer);
	/* text of either record type, with the larger header */
	out->max_rec = min_t(unsigned long, PAGE_SIZE,
			     ring_buffer_max_event_size(out->buffer)) -
		       sizeof(struct trace_event_raw_output_event);
	list_add_tail(&out->node, &ktap_outputs);
	return out;

err_put:
	trace_array_put(tr);
	if (out->owned)
		trace_array_destroy(tr);
	kfree(out);
	return ERR_PTR(ret);
}

/*
 * Reserve a record of @size bytes of event type @type and fill in its
 * ftrace header; the caller fills the rest and commits. Any context.
 */
static void *ktap_reserve(struct ktap_output *out, u16 type, u32 size)
{
	struct ring_buffer_event *rbe;
	struct trace_entry *ent;

	rbe = ring_buffer_lock_reserve(out->buffer, size);
	if (!rbe)
		return NULL;
	ent = ring_buffer_event_data(rbe);
	tracing_generic_entry_update(ent, type, tracing_gen_ctx());
	return ent;
}

/*
 * Fill a __dynamic_array of @ent at byte @off: its data_loc (length in
 * the high half, offset in the low) and @len bytes of @src; @off moves
 * past them. ktap_dyn() reads it back.
 */
static void ktap_put_dyn(void *ent, u32 *loc, u32 *off, const void *src,
			 u32 len)
{
	*loc = (len << 16) | *off;
	memcpy((char *)ent + *off, src, len);
	*off += len;
}

/**
 * ktap_output_write - append one record
 * @out: the session's output
 * @text: the bytes
 * @len: how many, at most ktap_output_max(@out)
 * @nl: a newline ends the record
 *
 * Any context, NMI included; never sleeps.
 *
 * Return: false when the record was dropped (buffer full, tracing_on
 * off, or nested too deep in the ring buffer).
 */
bool ktap_output_write(struct ktap_output *out, const char *text, u32 len,
		       bool nl)
{
	u32 off = offsetof(struct trace_event_raw_output, __data);
	struct trace_event_raw_output *entry;

	entry = ktap_reserve(out, event_output.event.type, off + len);
	if (!entry)
		return false;
	entry->nl = nl;
	ktap_put_dyn(entry, &entry->__data_loc_text, &off, text, len);
	ring_buffer_unlock_commit(out->buffer);
	return true;
}

/**
 * ktap_output_write_event - append a line that prints an event
 * @out: the session's output
 * @rec: the event's raw record, struct trace_entry first
 * @rlen: its size
 * @pre: text before the event
 * @plen: its length
 * @post: text after it
 * @qlen: its length
 * @nl: a newline ends the line
 *
 * The record is stored as it is; the event's own output function
 * formats it when the line is read, in the reader's context, never in
 * the probe's (which may be NMI). Any context; never sleeps.
 *
 * Return: false when the line was dropped (too long for one record,
 * buffer full, tracing_on off, or nested too deep in the ring buffer).
 */
bool ktap_output_write_event(struct ktap_output *out, const void *rec,
			     u32 rlen, const char *pre, u32 plen,
			     const char *post, u32 qlen, bool nl)
{
	u32 off = offsetof(struct trace_event_raw_output_event, __data);
	struct trace_event_raw_output_event *entry;

	if ((u64)rlen + plen + qlen > out->max_rec)
		return false;
	entry = ktap_reserve(out, event_output_event.event.type,
			     off + rlen + plen + qlen);
	if (!entry)
		return false;
	entry->nl = nl;
	ktap_put_dyn(entry, &entry->__data_loc_rec, &off, rec, rlen);
	ktap_put_dyn(entry, &entry->__data_loc_pre, &off, pre, plen);
	ktap_put_dyn(entry, &entry->__data_loc_post, &off, post, qlen);
	ring_buffer_unlock_commit(out->buffer);
	return true;
}

/* The bytes of a __dynamic_array of @ent (@size bytes), bounds checked. */
static const char *ktap_dyn(const void *ent, u32 size, u32 loc, u32 *len)
{
	u32 off = loc & 0xffff, n = loc >> 16;

	if (off > size || n > size - off) {
		*len = 0;
		return "";
	}
	*len = n;
	return (const char *)ent + off;
}

/**
 * ktap_format_event - print a ktap:output_event record into iter->seq
 * @iter: the reader's iterator (ftrace's, or the session's own)
 * @flags: what ftrace's reader passes to output functions
 * @entry: the record
 * @size: its size
 *
 * Process context, trace_event_read_lock() held: the type of the event
 * record inside is looked up and its output function run as ftrace's
 * reader runs it, with @iter pointing at that record for the call.
 */
static void ktap_format_event(struct trace_iterator *iter, int flags,
			      const struct trace_event_raw_output_event *entry,
			      u32 size)
{
	struct trace_seq *s = &iter->seq;
	struct trace_entry *saved_ent = iter->ent;
	int saved_size = iter->ent_size;
	const struct trace_entry *rec;
	struct trace_event *te = NULL;
	const char *text;
	u32 len, start;

	/* putmem, not "%.*s": the reader has to keep up with the probes */
	text = ktap_dyn(entry, size, entry->__data_loc_pre, &len);
	trace_seq_putmem(s, text, len);
	rec = (const void *)ktap_dyn(entry, size, entry->__data_loc_rec, &len);
	if (len >= sizeof(*rec))
		te = ftrace_find_event(rec->type);
	/* our own types hold no event: never recurse into them */
	if (te && te->funcs && te->funcs->trace &&
	    te != &event_output_event.event && te != &event_output.event) {
		iter->ent = (struct trace_entry *)rec;
		iter->ent_size = len;
		start = trace_seq_used(s);
		te->funcs->trace(iter, flags, te);
		iter->ent = saved_ent;
		iter->ent_size = saved_size;
		/* the line goes on after the event: drop its newline */
		while (trace_seq_used(s) > start &&
		       s->buffer[trace_seq_used(s) - 1] == '\n')
			s->seq.len--;
	} else {
		trace_seq_printf(s, "<event type %u>",
				 len >= sizeof(*rec) ? rec->type : 0);
	}
	text = ktap_dyn(entry, size, entry->__data_loc_post, &len);
	trace_seq_putmem(s, text, len);
}

/* ftrace's readers (trace, trace_pipe): "output: " as for ktap:output */
static enum print_line_t ktap_output_event_trace(struct trace_iterator *iter,
						 int flags,
						 struct trace_event *event)
{
	trace_seq_puts(&iter->seq, "output: ");
	ktap_format_event(iter, flags, (const void *)iter->ent,
			  iter->ent_size);
	trace_seq_putc(&iter->seq, '\n');
	return trace_handle_return(&iter->seq);
}

static struct trace_event_functions ktap_output_event_funcs = {
	.trace		= ktap_output_event_trace,
};

/**
 * ktap_output_overruns - records the buffer overwrote before they were read
 * @out: the session's output
 *
 * Counts only while the instance's options/overwrite is on.
 *
 * Return: records lost since the session took the instance.
 */
unsigned long ktap_output_overruns(struct ktap_output *out)
{
	return ring_buffer_overruns(out->buffer) - out->overruns;
}

/* Most bytes of text ktap_output_write() takes in one record. */
u32 ktap_output_max(struct ktap_output *out)
{
	return out->max_rec;
}

const char *ktap_output_name(struct ktap_output *out)
{
	return out->name;
}

/*
 * Format a ktap:output_event record for the control descriptor. Under
 * trace_event_read_lock() and the consumers' trace_access_lock(): see
 * ktap_output_read().
 */
static void ktap_read_event(struct ktap_output *out,
			    struct ring_buffer_event *rbe, int cpu, u64 ts,
			    char *buf, u32 *len)
{
	const struct trace_event_raw_output_event *entry;
	struct trace_iterator *iter = out->iter;
	u32 n;

	entry = ring_buffer_event_data(rbe);
	trace_seq_init(&iter->seq);
	trace_seq_init(&iter->tmp_seq);
	iter->ent = (struct trace_entry *)entry;
	iter->ent_size = ring_buffer_event_length(rbe);
	iter->cpu = cpu;
	iter->ts = ts;
	ktap_format_event(iter, 0, entry, iter->ent_size);
	n = min_t(u32, trace_seq_used(&iter->seq), out->max_rec);
	memcpy(buf, iter->seq.buffer, n);
	if (entry->nl)
		buf[n++] = '\n';
	*len = n;
}

/*
 * Records of all CPUs in timestamp order. Peeking at every CPU for
 * every record would take each CPU's reader lock per record, so the
 * reader stays on the CPU that holds the oldest record while that CPU's
 * records are older than the oldest of the others, for up to
 * KTAP_READ_BATCH records before it looks at all CPUs again. A record
 * written on another CPU meanwhile is newer than those.
 */
#define KTAP_READ_BATCH	256

static struct ring_buffer_event *ktap_next_event(struct ktap_output *out,
						 int *cpu, u64 *ts)
{
	u64 t, best_ts = U64_MAX, next_ts = U64_MAX;
	int c, best = -1;

	if (out->rd_left) {
		out->rd_left--;
		if (ring_buffer_peek(out->buffer, out->rd_cpu, &t, NULL) &&
		    t <= out->rd_limit) {
			*cpu = out->rd_cpu;
			return ring_buffer_consume(out->buffer, *cpu, ts, NULL);
		}
	}
	for_each_possible_cpu(c) {
		if (!ring_buffer_peek(out->buffer, c, &t, NULL))
			continue;
		if (t < best_ts) {
			next_ts = best_ts;
			best_ts = t;
			best = c;
		} else if (t < next_ts) {
			next_ts = t;
		}
	}
	if (best < 0) {
		out->rd_left = 0;
		return NULL;
	}
	out->rd_cpu = best;
	out->rd_limit = next_ts;
	out->rd_left = KTAP_READ_BATCH;
	*cpu = best;
	return ring_buffer_consume(out->buffer, best, ts, NULL);
}

/* One record into @buf (ktap_output_max() + 1 bytes); false: none left. */
static bool ktap_output_read_one(struct ktap_output *out, char *buf, u32 *len)
{
	const struct trace_event_raw_output *entry;
	struct ring_buffer_event *rbe;
	const char *text;
	int cpu;
	u64 ts;
	u32 n;

	for (;;) {
		rbe = ktap_next_event(out, &cpu, &ts);
		if (!rbe)
			return false;
		entry = ring_buffer_event_data(rbe);
		if (entry->ent.type == event_output_event.event.type) {
			ktap_read_event(out, rbe, cpu, ts, buf, len);
			return true;
		}
		if (entry->ent.type != event_output.event.type)
			continue;
		text = ktap_dyn(entry, ring_buffer_event_length(rbe),
				entry->__data_loc_text, &n);
		n = min(n, out->max_rec);
		memcpy(buf, text, n);
		if (entry->nl)
			buf[n++] = '\n';
		*len = n;
		return true;
	}
}

/**
 * ktap_output_read - take the oldest records of all CPUs
 * @out: the session's output
 * @buf: receives their text, each record with its newline
 * @size: bytes at @buf, more than ktap_output_max(@out)
 *
 * Takes records in timestamp order while one more surely fits. Records
 * of other types (a trace_marker write into the instance) are consumed
 * and skipped.
 *
 * A consumed record is read in the reader page of its CPU buffer after
 * ring_buffer_consume() returned. Another consumer of that CPU (the
 * instance's trace_pipe, or trace_pipe_raw spliced by trace-cmd) could
 * meanwhile put the page back into the ring, where writers overwrite
 * it, or hand it to splice, which frees it; so the records are taken
 * and formatted under trace_access_lock() for all CPUs, as ftrace's own
 * readers take them, and trace_event_read_lock() first, in their order.
 *
 * Process context; the caller serializes readers of the session and
 * copies @buf to user space after this returns, with no lock held.
 *
 * Return: bytes written into @buf, 0 when the buffer holds no record.
 */
u32 ktap_output_read(struct ktap_output *out, char *buf, u32 size)
{
	u32 len = 0, n;

	trace_event_read_lock();
	trace_access_lock(RING_BUFFER_ALL_CPUS);
	while (size - len > out->max_rec &&
	       ktap_output_read_one(out, buf + len, &n))
		len += n;
	trace_access_unlock(RING_BUFFER_ALL_CPUS);
	trace_event_read_unlock();
	return len;
}

/* Whether the buffer holds nothing to read. Any context. */
bool ktap_output_empty(struct ktap_output *out)
{
	return ring_buffer_empty(out->buffer);
}

/*
 * A doomed instance is found again by name, never through a pointer
 * kept from before: once we dropped our reference, its readers' last
 * close or a user's rmdir may free it at any time. An instance of that
 * name that is not ours (a user's mkdir since) is left alone.
 */
static bool ktap_reap_one(struct ktap_output *out)
{
	struct trace_array *tr;
	bool ours;

	tr = trace_array_get_by_name(out->name, KTAP_SYSTEMS);
	if (!tr)
		return false;
	ours = tr->system_names && !strcmp(tr->system_names, KTAP_SYSTEMS);
	trace_array_put(tr);
	return !ours || trace_array_destroy(tr) != -EBUSY;
}

static void ktap_reap_doomed(struct work_struct *work)
{
	struct ktap_output *out, *tmp;

	guard(mutex)(&ktap_output_lock);
	list_for_each_entry_safe(out, tmp, &ktap_doomed, node) {
		if (ktap_reap_one(out)) {
			list_del(&out->node);
			kfree(out);
		}
	}
	if (!list_empty(&ktap_doomed))
		schedule_delayed_work(&ktap_reaper, HZ);
}

/**
 * ktap_output_destroy - remove a session's instance
 * @out: the output, or NULL; no writer may be running
 *
 * Process context. While a reader holds a file of an instance ktap made
 * open, the instance stays (its name taken) and is removed once it is
 * closed. An instance the user made is left as it is.
 */
void ktap_output_destroy(struct ktap_output *out)
{
	if (!out)
		return;
	kfree(out->iter->fmt);
	kvfree(out->iter);
	out->iter = NULL;
	guard(mutex)(&ktap_output_lock);
	trace_array_put(out->tr);
	if (!out->owned || trace_array_destroy(out->tr) != -EBUSY) {
		list_del(&out->node);
		kfree(out);
		return;
	}
	out->tr = NULL;
	out->buffer = NULL;
	list_move_tail(&out->node, &ktap_doomed);
	schedule_delayed_work(&ktap_reaper, HZ);
}

/**
 * ktap_output_init - give ktap:output_event its output function
 *
 * The generated one could only print the text around the event; ours
 * runs the inner event's output function. Set before any session can
 * write a record of the type.
 */
void ktap_output_init(void)
{
	event_output_event.event.funcs = &ktap_output_event_funcs;
}

/* Module exit: no session exists; remove what readers no longer hold. */
void ktap_output_exit(void)
{
	struct ktap_output *out, *tmp;

	cancel_delayed_work_sync(&ktap_reaper);
	guard(mutex)(&ktap_output_lock);
	list_for_each_entry_safe(out, tmp, &ktap_doomed, node) {
		if (!ktap_reap_one(out))
			pr_warn("instance %s is still open: remove it with rmdir\n",
				out->name);
		list_del(&out->node);
		kfree(out);
	}
}
