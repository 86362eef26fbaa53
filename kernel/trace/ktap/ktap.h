/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ktap internal interfaces.
 *
 * The VM core (vm_load.c: loader and verifier, vm_exec.c: interpreter,
 * vm_obj.c: strings, tables, pool, vm_builtins.c: builtins without
 * tracing dependencies) knows nothing about tracing: it sees events
 * through struct ktap_event_ops and the session through struct
 * ktap_host_ops. That keeps it testable by KUnit and by userspace
 * fuzzers. The tracing side (session.c: tracefs control file, ioctls,
 * output ring buffer; events.c: tracepoints, kprobes, uprobes, timers)
 * implements both ops tables.
 *
 * Pipeline: load/verify -> run main chunk (ATTACH records handlers) ->
 * session attaches probes -> probes fire ktap_vm_fire() -> STOP detaches
 * and runs END handlers -> ktap_vm_free().
 */
#ifndef _KTAP_H
#define _KTAP_H

#include <linux/types.h>
#include <linux/seq_buf.h>
#include <linux/unaligned.h>
#include <uapi/linux/ktap.h>

struct ktap_vm;
struct ktap_closure;
struct ktap_event;

/* Default per-session pool and per-run instruction budget. */
#define KTAP_DEFAULT_MEM_KB	(4 * 1024)
#define KTAP_MAX_MEM_KB		(256 * 1024)
#define KTAP_DEFAULT_BUDGET	100000
#define KTAP_MAIN_BUDGET	100000000	/* main chunk, preemptible */

enum ktap_type {
	KTAP_TNIL,
	KTAP_TBOOL,
	KTAP_TINT,
	KTAP_TSTR,
	KTAP_TTABLE,
	KTAP_TPTABLE,	/* per-CPU statistics table */
	KTAP_TSTAT,	/* one aggregate read from a ptable */
	KTAP_TFUNC,	/* script closure */
	KTAP_TNATIVE,	/* bound native method, e.g. e.tostring */
	KTAP_TEVENT,
	KTAP_TITER,	/* pairs()/sort_pairs() iterator */
};

/* A script value. Heap objects live in the session pool. */
struct ktap_value {
	union {
		s64		i;
		bool		b;
		struct ktap_str	*s;
		void		*p;
	};
	u32 type;	/* enum ktap_type */
};

/**
 * struct ktap_event_ops - how the VM reads the event being handled
 * @field: e.NAME: store field @name (@len bytes) of @ev in @out; return
 *	   0, or -ENOENT if the event has no such field. Also answers the
 *	   synthetic fields (name, sc_nr, sc_is_enter, sc_argN, retval).
 * @field_at: EVFIELD: store field @idx of the image's fields section
 *	      (ktap_vm_field()) of @ev in @out, from what was resolved when
 *	      the handler was attached; -ENOENT when nothing was resolved
 *	      for this event, and the VM then asks @field by name. May be
 *	      NULL.
 * @tostring: print @ev the way ftrace's output function prints it;
 *	      -EPERM where that cannot be done now (an output function in
 *	      NMI context).
 * @record: the raw ftrace record of @ev (struct trace_entry first), for
 *	    the session to store so that the event's own output function
 *	    formats it when read; NULL for kinds without one.
 * @arg: argN: the N-th positional field (0..9) of @ev.
 * @set_retval: e.set_retval(v): make the probed function return @v
 *		without running; -EPERM where the probe cannot do it, -EDOM
 *		for a value the function cannot fail with; @why says why.
 * @stack: save up to @size return addresses of the kernel stack, or of
 *	   the user stack when @user, as the probe saw them, innermost
 *	   first; return how many. NULL: the VM takes its own stack.
 *
 * All callbacks run in probe context (possibly NMI): no sleeping, no
 * locks that a probe could already hold.
 */
struct ktap_event_ops {
	int (*field)(struct ktap_vm *vm, struct ktap_event *ev,
		     const char *name, u32 len, struct ktap_value *out);
	int (*field_at)(struct ktap_vm *vm, struct ktap_event *ev, u32 idx,
			struct ktap_value *out);
	int (*tostring)(struct ktap_vm *vm, struct ktap_event *ev,
			struct seq_buf *s);
	void (*record)(struct ktap_event *ev, const void **rec, u32 *size);
	int (*arg)(struct ktap_vm *vm, struct ktap_event *ev, int n,
		   struct ktap_value *out);
	int (*set_retval)(struct ktap_vm *vm, struct ktap_event *ev, s64 v,
			  const char **why);
	unsigned int (*stack)(struct ktap_event *ev, unsigned long *store,
			      unsigned int size, bool user);
};

/**
 * enum ktap_field_load_type - width and signedness of a direct field load
 * @KTAP_FL_NONE: no direct load: EVFIELD asks the event's @field_at op
 * @KTAP_FL_U8: unsigned byte
 * @KTAP_FL_S8: signed byte
 * @KTAP_FL_U16: unsigned 16 bits
 * @KTAP_FL_S16: signed 16 bits
 * @KTAP_FL_U32: unsigned 32 bits
 * @KTAP_FL_S32: signed 32 bits
 * @KTAP_FL_64: 64 bits
 */
enum ktap_field_load_type {
	KTAP_FL_NONE,
	KTAP_FL_U8,
	KTAP_FL_S8,
	KTAP_FL_U16,
	KTAP_FL_S16,
	KTAP_FL_U32,
	KTAP_FL_S32,
	KTAP_FL_64,
};

/**
 * enum ktap_field_load_base - what a direct field load reads from
 * @KTAP_FL_REC: the event's record (&struct ktap_event.rec), checked
 *		 against its size; without a record EVFIELD asks @field_at
 *		 (which may build it)
 * @KTAP_FL_REGS: the registers the probe saw (&struct ktap_event.regs)
 */
enum ktap_field_load_base {
	KTAP_FL_REC,
	KTAP_FL_REGS,
};

/**
 * struct ktap_field_load - how EVFIELD reads one field without a call
 * @off: byte offset of the value from the base
 * @end: for base KTAP_FL_REC, @off plus the width of the load: the
 *	 record must be this long; 0 for other bases
 * @type: enum ktap_field_load_type
 * @base: enum ktap_field_load_base
 *
 * Eight bytes, so that an entry is found with one scaled index.
 */
struct ktap_field_load {
	u16	off;
	u16	end;
	u8	type;
	u8	base;
} __aligned(8);

/**
 * ktap_field_load_value() - the integer a direct load of @type reads at @src
 * @src: first byte of the value, any alignment
 * @type: enum ktap_field_load_type
 * @v: the value, sign- or zero-extended
 *
 * The one decoding of a load type, for EVFIELD's fast path and for the
 * tracing side's reads of the same fields by name.
 *
 * Return: false for KTAP_FL_NONE or an unknown type (@v untouched).
 */
static __always_inline bool ktap_field_load_value(const void *src, u8 type,
						  s64 *v)
{
	switch (type) {
	case KTAP_FL_64:
		*v = get_unaligned((const s64 *)src);
		return true;
	case KTAP_FL_S32:
		*v = get_unaligned((const s32 *)src);
		return true;
	case KTAP_FL_U32:
		*v = get_unaligned((const u32 *)src);
		return true;
	case KTAP_FL_S16:
		*v = get_unaligned((const s16 *)src);
		return true;
	case KTAP_FL_U16:
		*v = get_unaligned((const u16 *)src);
		return true;
	case KTAP_FL_S8:
		*v = *(const s8 *)src;
		return true;
	case KTAP_FL_U8:
		*v = *(const u8 *)src;
		return true;
	}
	return false;
}

/**
 * struct ktap_field_loads - direct loads of the image's fields in one event
 * @n: entries at @l
 * @l: @l[i] reads entry i of the image's fields section (ktap_vm_field())
 *
 * Worked out by the tracing side when it attaches a handler to an event
 * whose fields have a fixed place (a tracepoint's format), so that the
 * interpreter reads a field with a load instead of two calls. The
 * tracing side guarantees that every load lies inside its base; the VM
 * only checks @end against a record's size.
 */
struct ktap_field_loads {
	u32			n;
	struct ktap_field_load	l[] __counted_by(n);
};

/**
 * struct ktap_event - the event a handler runs for
 * @ops: accessors, see struct ktap_event_ops
 * @probe: index of the probe in the image's probe table
 * @name: event name for e.name and probename (e.g. "sys_enter_open")
 * @regs: registers at the probe, when the probe kind has them
 * @caller: for a tracepoint, the return address of the call to ktap's
 *	    probe: its kernel stack starts there, at the code that hit the
 *	    tracepoint, or one frame further when @iterated. 0 for other
 *	    kinds, whose kernel stack starts at @regs.
 * @iterated: the tracepoint called its probes through its iterator
 *	      (several probes), not straight through its static call;
 *	      worked out by the @stack op when a stack is asked for
 * @loads: direct loads of the image's fields in this event, or NULL
 * @rec: the raw record, for @loads of base KTAP_FL_REC, or NULL
 * @rec_size: bytes at @rec
 *
 * Lives on the firing probe's stack for the duration of one handler run;
 * the tracing side embeds it in its own per-kind context.
 */
struct ktap_event {
	const struct ktap_event_ops	*ops;
	u32				probe;
	const char			*name;
	struct pt_regs			*regs;
	unsigned long			caller;
	bool				iterated;
	const struct ktap_field_loads	*loads;
	void				*rec;
	u32				rec_size;
};

/**
 * struct ktap_host_ops - services the session gives the VM
 * @attach: ATTACH in the main chunk: record @fn as handler of @probe.
 *	    Runs in process context; the session attaches when the main
 *	    chunk returns or sleeps.
 * @write: append @len bytes of output; any context, never sleeps,
 *	   counts a drop instead of blocking.
 * @write_event: as @write, for a line that prints @ev (which has a
 *		 @record op) between @pre and @post; the event is
 *		 formatted when the line is read. May be NULL.
 * @exit: exit() or a runtime error: ask the session to stop.
 * @sleep: sleep() in the main chunk: attach the handlers recorded so
 *	   far, then wait @ms milliseconds, less if the session ends.
 *	   Process context. Returns 0, -EINTR on a signal, or the
 *	   attach error.
 */
struct ktap_host_ops {
	int (*attach)(void *host, u32 probe, struct ktap_closure *fn);
	void (*write)(void *host, const char *buf, size_t len);
	void (*write_event)(void *host, struct ktap_event *ev,
			    const char *pre, size_t plen,
			    const char *post, size_t qlen);
	void (*exit)(void *host);
	int (*sleep)(void *host, u32 ms);
};

/**
 * struct ktap_vm_opts - load-time knobs, from struct ktap_load_attr
 * @mem_limit: pool size in bytes
 * @insn_budget: instructions one handler run may execute
 * @target_pid: what target_pid() returns: the process traced, as the
 *		caller names it, or 0
 */
struct ktap_vm_opts {
	size_t	mem_limit;
	u32	insn_budget;
	s32	target_pid;
	bool	json;		/* KTAP_LOAD_F_JSON */
	bool	raw_ptrs;	/* %p may print addresses (kptr_restrict) */
};

struct ktap_vm *ktap_vm_load(const void *image, size_t len,
			     const struct ktap_vm_opts *opts,
			     const struct ktap_host_ops *host_ops, void *host,
			     char *log, size_t log_size);
int ktap_vm_run_main(struct ktap_vm *vm);
int ktap_vm_fire(struct ktap_vm *vm, struct ktap_closure *fn,
		 struct ktap_event *ev);
int ktap_vm_fire_end(struct ktap_vm *vm, struct ktap_closure *fn,
		     struct ktap_event *ev, s64 *budget);
void ktap_vm_free(struct ktap_vm *vm);

/* Image accessors the session needs after a successful load. */
const struct ktap_bc_probe *ktap_vm_probe(struct ktap_vm *vm, u32 idx);
const char *ktap_vm_str(struct ktap_vm *vm, u32 strtab_off);
void ktap_vm_probe_where(struct ktap_vm *vm, u32 idx, char *buf, size_t len);
u32 ktap_vm_insn_budget(struct ktap_vm *vm);
u32 ktap_vm_nfields(struct ktap_vm *vm);
u32 ktap_vm_nr_builtins(void);
const struct ktap_bc_field *ktap_vm_field(struct ktap_vm *vm, u32 idx);
const struct ktap_bc_fetch *ktap_vm_fetch(struct ktap_vm *vm, u32 probe,
					  u32 *n);

/* Counters for KTAP_IOC_STATS. */
struct ktap_vm_stats {
	u64	hits;
	u64	recursion;
	u64	errors;
	u64	mem_used;
	u64	mem_limit;
	u64	drops;		/* runs abandoned: table lock busy in NMI */
	u64	throttled;	/* runs skipped: handlers over their CPU share */
	u64	keys_dropped;	/* stores of new keys refused: pool full */
};

void ktap_vm_stats(struct ktap_vm *vm, struct ktap_vm_stats *st);

long ktap_strncpy_nofault(char *dst, unsigned long addr, size_t size,
			  bool user);

/* Values the tracing side hands back from event callbacks. */
int ktap_value_str(struct ktap_vm *vm, struct ktap_value *out,
		   const char *s, size_t len);

static inline void ktap_value_int(struct ktap_value *v, s64 i)
{
	v->type = KTAP_TINT;
	v->i = i;
}

/* Booleans keep the whole word zeroed but for b: see ktap_truthy(). */
static inline void ktap_value_bool(struct ktap_value *v, bool b)
{
	v->i = 0;
	v->b = b;
	v->type = KTAP_TBOOL;
}

#endif /* _KTAP_H */
