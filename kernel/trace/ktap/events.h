/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ktap tracing side: what session.c and events.c share.
 *
 * session.c owns the session (control file, ioctls, output ring buffer,
 * per-session trace_pipe); events.c attaches the handlers the main chunk
 * recorded to tracepoints, kprobes, uprobes, timers and perf events.
 * Neither is visible to the VM core, which only sees ktap.h.
 */
#ifndef _KTAP_EVENTS_H
#define _KTAP_EVENTS_H

#include <linux/atomic.h>
#include <linux/list.h>
#include <linux/percpu.h>
#include <linux/smp.h>
#include <linux/sched.h>
#include "ktap.h"

struct ktap_session;
struct ktap_follow;

/*
 * The part of a session that the probe handlers read on every firing.
 * Kept separate from the rest of struct ktap_session (session.c) so the
 * hot path touches one small, read-mostly cache line.
 */
struct ktap_session_hot {
	struct ktap_vm	*vm;
	atomic_t	state;		/* enum ktap_session_state */
	pid_t		tgid;		/* global tgid filter, or -1 */
	int		cpu;		/* cpu filter, or -1 */
	bool		dry_run;
	struct ktap_follow *follow;	/* @tgid's descendants, or NULL */
};

bool ktap_follows(const struct ktap_session_hot *hot, pid_t tgid);
int ktap_follow_start(struct ktap_session_hot *hot);
u32 ktap_follow_stop(struct ktap_session_hot *hot);

/**
 * struct ktap_handler - one ATTACH of the main chunk
 * @node: in the session's handler list
 * @sess: owning session
 * @hot: the session's hot-path state (see struct ktap_session_hot)
 * @fn: the closure to run (owned by the VM)
 * @bp: the probe table entry (owned by the VM's image)
 * @probe: index of @bp in the probe table
 * @filter: apply the session's pid/cpu filters before firing (false
 *	    when the session has none)
 * @skipped: a wildcard's kprobe that could not be attached, left out
 * @priv: per-kind attachment state, set by ktap_handler_attach()
 */
struct ktap_handler {
	struct list_head		node;
	struct ktap_session		*sess;
	struct ktap_session_hot		*hot;
	struct ktap_closure		*fn;
	const struct ktap_bc_probe	*bp;
	u32				probe;
	bool				filter;
	bool				skipped;
	void				*priv;
};

/* Nesting depth of probe handlers running on this CPU (see session.c). */
DECLARE_PER_CPU(int, ktap_probe_depth);

/**
 * ktap_handler_fire - run a handler for an event, honouring the filters
 * @h: the handler
 * @ev: the event, on the caller's stack
 *
 * Any context (NMI included); never sleeps. Preemption must be disabled.
 */
static __always_inline void ktap_handler_fire(struct ktap_handler *h,
					      struct ktap_event *ev)
{
	struct ktap_session_hot *hot = h->hot;

	if (atomic_read(&hot->state) != KTAP_STATE_RUNNING || hot->dry_run)
		return;
	if (h->filter) {
		if (hot->cpu >= 0 && hot->cpu != raw_smp_processor_id())
			return;
		if (hot->tgid >= 0 && hot->tgid != current->tgid &&
		    !ktap_follows(hot, current->tgid))
			return;
	}
	ev->probe = h->probe;
	__this_cpu_inc(ktap_probe_depth);
	ktap_vm_fire(hot->vm, h->fn, ev);
	__this_cpu_dec(ktap_probe_depth);
}

/* Write a message from the tracing side into the session output. */
__printf(2, 3)
void ktap_session_printf(struct ktap_session *sess, const char *fmt, ...);
/* Count an event a wildcard could not attach; name it when verbose. */
__printf(2, 3)
void ktap_session_skipped(struct ktap_session *sess, const char *fmt, ...);

/* events.c */
int ktap_handler_attach(struct ktap_handler *h);
void ktap_handler_detach(struct ktap_handler *h);
void ktap_handlers_sync(void);
void ktap_handler_run_end(struct ktap_handler *h, s64 *budget);
int ktap_probe_check(struct ktap_vm *vm, const struct ktap_bc_probe *bp,
		     char *log, size_t log_size);
int ktap_events_get(void);
void ktap_events_put(void);

/* output.c: the session's tracing instance and its records */
struct ktap_output;

struct ktap_output *ktap_output_create(const char *name, u32 kb,
				       u32 dflt_kb);
unsigned long ktap_output_overruns(struct ktap_output *out);
void ktap_output_destroy(struct ktap_output *out);
bool ktap_output_write(struct ktap_output *out, const char *text, u32 len,
		       bool nl);
u32 ktap_output_read(struct ktap_output *out, char *buf, u32 size);
bool ktap_output_empty(struct ktap_output *out);
u32 ktap_output_max(struct ktap_output *out);
const char *ktap_output_name(struct ktap_output *out);
bool ktap_output_write_event(struct ktap_output *out, const void *rec,
			     u32 rlen, const char *pre, u32 plen,
			     const char *post, u32 qlen, bool nl);
void ktap_output_init(void);
void ktap_output_exit(void);

#endif /* _KTAP_EVENTS_H */
