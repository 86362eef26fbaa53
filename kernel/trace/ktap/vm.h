/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ktap VM core: private definitions shared by vm_load.c (loader and
 * verifier), vm_exec.c (interpreter), vm_obj.c (pool, strings, tables)
 * and vm_builtins.c. Nothing here depends on tracing; the tracing side
 * only sees ktap.h.
 *
 * Concurrency model (see also vm_obj.c):
 *  - Handlers run on every CPU at once, possibly in NMI. A per-CPU
 *    guard in ktap_vm_fire() lets at most one VM run per CPU, so a lock
 *    the VM takes can only be held by *another* CPU: plain spinning is
 *    deadlock-free, and NMI still only trylocks (and counts a drop) so
 *    lockdep stays quiet.
 *  - Every object that can be stored lives in a bump-allocated
 *    per-session pool and is only freed with the session, so a pointer
 *    read under any lock stays valid for the whole session.
 *  - A handler firing (not the main chunk, not an END handler) takes its
 *    short-lived objects (temporary strings, pairs() snapshots, statistic
 *    reads, tables and closures it creates) from its CPU's temporary
 *    arena, which is reset when the next firing starts on that CPU. Such
 *    objects cannot be stored where they would outlive the firing
 *    (ktap_value_persist() copies or refuses them), so a session's memory
 *    does not grow with the number of firings.
 *  - A ktap_value is 16 bytes: values in shared slots (globals, closed
 *    upvalues) are read under a seqcount and written under a raw lock.
 *    Tables read and increment lock-free through immutable-type value
 *    cells (see struct ktap_table); only writers take the table lock.
 */
#ifndef _KTAP_VM_H
#define _KTAP_VM_H

#include <linux/atomic.h>
#include <linux/cleanup.h>
#include <linux/cpumask.h>
#include <linux/hardirq.h>
#include <linux/seqlock.h>
#include <linux/spinlock.h>
#include "ktap.h"

/* Per-CPU execution area: register stack, call frames, scratch memory. */
#define KTAP_STACK_SLOTS	2048
#define KTAP_OUT_SIZE		2048	/* one printf/print record */
/*
 * Frames saved for stack()/ustack(): the deepest a script gets (32) and
 * room for the frames of a tracepoint's delivery above its caller.
 */
#define KTAP_STACK_DEPTH	32
#define KTAP_STACK_SAVE		(KTAP_STACK_DEPTH + 32)
/* Per-CPU temporary arena: session memory / (2 * CPUs), within these. */
#define KTAP_TEMP_MIN		(64 * 1024)
#define KTAP_TEMP_MAX		(1024 * 1024)
#define KTAP_ERR_SIZE		160
#define KTAP_OUT_BYTES_PER_UNIT	8	/* output bytes charged as one insn */

/*
 * Script calls use the VM's frames, but every ktap_vm_call() nests a
 * ktap_execute() and lib/sort.c on the kernel stack (about 600 bytes,
 * more with KASAN), possibly in an interrupt: bound that nesting.
 */
#define KTAP_MAX_CALLBACK_DEPTH	4

#define KTAP_STR_MAX		4096	/* longest string the VM builds */
#define KTAP_MIN_MEM		(64 * 1024)

/**
 * struct ktap_str - an immutable string
 * @len: length in bytes, without the trailing NUL
 * @hash: hash of the bytes (seeded per session)
 * @interned: lives in the pool and is the unique copy of its bytes, so
 *	      two interned strings are equal iff their pointers are. A
 *	      temporary (per-firing scratch) string is not, and is interned
 *	      when it is stored anywhere that outlives the firing.
 * @data: the bytes, NUL-terminated
 */
struct ktap_str {
	u32	len;
	u32	hash;
	bool	interned;
	char	data[];
};

/* Bump allocator over one preallocated region; never frees. */
struct ktap_pool {
	char		*base;
	size_t		size;
	atomic_long_t	used;
};

/* Lock-free open-addressing set of interned strings (insert-only). */
struct ktap_strset {
	struct ktap_str	**slots;
	u32		mask;
	u32		seed;
};

/* A key and its value, as iterators and snapshots hold them. */
struct ktap_pair {
	struct ktap_value	key;
	struct ktap_value	val;
};

/*
 * A table slot of the hash part. An empty slot has a nil key; a key,
 * once written, never changes. @cell is NULL for a deleted key.
 */
struct ktap_node {
	struct ktap_value	key;
	struct ktap_value	*cell;
};

struct ktap_hpart {
	u32			cap;	/* power of two */
	u32			used;	/* slots holding a key */
	struct ktap_node	n[];
};

struct ktap_apart {
	u32			cap;	/* integer keys 1..cap */
	struct ktap_value	*cell[];
};

/**
 * struct ktap_table - a Lua-like table
 * @lock: serialises writers (new keys, deletions, type changes, growth)
 * @count: non-nil entries
 * @arr: array part, or NULL
 * @hash: hash part, or NULL
 *
 * Values live in cells whose type never changes once published: a
 * store of the same type rewrites the 8-byte payload in place, a store
 * of another type publishes a new cell. Readers and `+=` on an integer
 * therefore need no lock: they find the cell through whichever parts
 * they see (growth publishes new parts; old ones stay valid in the
 * pool and point at the same cells) and read or atomically add to it.
 */
struct ktap_table {
	raw_spinlock_t		lock;
	u32			count;
	struct ktap_apart	*arr;
	struct ktap_hpart	*hash;
};

/* One statistics aggregate: what `s[k] <<< v` accumulates. */
struct ktap_stat {
	s64	count;
	s64	sum;
	s64	min;
	s64	max;
};

/* What an aggregation keeps per key besides its statistics. */
enum ktap_agg_kind {
	KTAP_AGG_STATS,		/* ptable(), stats() */
	KTAP_AGG_LOG2,		/* hist(): power-of-two buckets */
	KTAP_AGG_LINEAR,	/* lhist(min, max, step) */
};

/*
 * hist() buckets: values < 0, 0, then [2^k, 2^(k+1)) for k = 0..62;
 * lhist(): below min, (max - min) / step rounded up, and the rest.
 */
#define KTAP_LOG2_BUCKETS	65
#define KTAP_LHIST_BUCKETS_MAX	1002

/* The cell of one key of a hist() or lhist() on one CPU. */
struct ktap_agg_cell {
	struct ktap_stat	st;		/* first: read as a statistic */
	u64			bucket[];
};

/*
 * Aggregation (per-CPU statistics table): key -> struct ktap_stat or
 * struct ktap_agg_cell, one table per possible CPU. `<<<` only touches
 * the current CPU's table; readers aggregate over all CPUs.
 */
struct ktap_ptable {
	u32			kind;		/* enum ktap_agg_kind */
	u32			nbuckets;	/* 0 for KTAP_AGG_STATS */
	s64			lo, step;	/* KTAP_AGG_LINEAR */
	const struct ktap_str	*label;		/* printed before keys, or NULL */
	u32			ncpu;
	struct ktap_table	*cpu[];
};

/* An upvalue: open (points at a live register) or closed (own copy). */
struct ktap_upval {
	struct ktap_value	*v;
	struct ktap_value	closed;
	struct ktap_upval	*next;	/* open list of one execution */
};

struct ktap_closure {
	u32			proto;
	u32			nupvals;
	struct ktap_upval	*upv[];
};

/* A pairs()/sort_pairs() iterator over a snapshot of a table. */
struct ktap_iter {
	u32			n;
	u32			pos;
	struct ktap_pair	e[];
};

/* A call frame of the interpreter. */
struct ktap_frame {
	struct ktap_closure	*cl;
	const u32		*pc;		/* resume point in the caller */
	struct ktap_value	*base;
	const struct ktap_bc_proto *p;
	u8			ret_reg;	/* results go to ret_reg.. */
	u8			nret;		/* ..and the nret above it */
};

/* Execution area of one CPU (or of the main chunk). */
struct ktap_ctx {
	struct ktap_frame	frames[KTAP_MAX_CALL_DEPTH];
	struct ktap_value	stack[KTAP_STACK_SLOTS];
	u64			hits;
	u64			busy_until;	/* see ktap_vm_fire() */
	struct ktap_str		*comm;		/* execname() cache ... */
	u64			comm_raw[2];	/* ... for these comm bytes */
	size_t			temp_used;	/* bytes of the temp arena */
	char			out[KTAP_OUT_SIZE];	/* print/printf record */
	struct ktap_event	*out_ev;	/* event printed in @out ... */
	u32			out_ev_at;	/* ... at this offset */
	char			tmp[KTAP_OUT_SIZE];	/* tostring and friends */
	unsigned long		trace[KTAP_STACK_SAVE];	/* stack() */
	char			err[KTAP_ERR_SIZE];
};

/* A first frame (at most 255 registers) always fits: see ktap_execute() */
static_assert(KTAP_STACK_SLOTS > 255 && KTAP_MAX_CALL_DEPTH > 1);

/* CONFIG_KTAP_DEBUG_VM: what the registers past a fill_end start as */
#define KTAP_REG_POISON		0x6b6b6b6b6b6b6b6bLL

/**
 * struct ktap_vm - one loaded program and its runtime state
 *
 * The image fields point into @image, a private verified copy.
 */
struct ktap_vm {
	void				*image;
	size_t				image_len;
	const struct ktap_bc_header	*hdr;
	const struct ktap_bc_proto	*protos;
	/*
	 * [nprotos]: a new frame sets registers nil from its first missing
	 * argument up to this one (excluded); the registers from here on
	 * are written before any read (ktap_frame_fill())
	 */
	u8				*fill_end;
	u32				nprotos;
	struct ktap_value		*consts;
	u32				nconsts;
	const char			*strtab;
	u32				strtab_len;
	const u32			*code;
	u32				ncode;
	const u32			*lines;		/* NULL: no line info */
	const struct ktap_bc_upval	*upvals;
	const struct ktap_bc_probe	*probes;
	u32				nprobes;
	u8				*builtins;	/* section index -> KTAP_BI_* */
	u32				nbuiltins;
	const struct ktap_bc_field	*fields;
	u32				nfields;
	const struct ktap_bc_fetch	*fetch;
	u32				nfetch;
	const char			*chunkname;

	/* Globals and closed upvalues: written under @shared_lock. */
	struct ktap_value		*globals;
	u32				nglobals;
	raw_spinlock_t			shared_lock;
	seqcount_t			shared_seq;

	struct ktap_pool		pool;
	struct ktap_strset		strs;
	struct ktap_ctx			**cpu_ctx;	/* [nr_cpu_ids] */
	/* temporary arenas: CPU n's is temp + n * temp_size */
	char				*temp;
	size_t				temp_size;

	const struct ktap_host_ops	*host_ops;
	void				*host;
	u32				insn_budget;
	s32				target_pid;
	u32				main_budget;
	bool				json;		/* KTAP_LOAD_F_JSON */
	bool				raw_ptrs;	/* see ktap_vm_opts */

	atomic_t			halted;		/* exit() or error */
	atomic_t			failed;		/* first error taken */
	atomic64_t			recursion;
	atomic64_t			errors;
	atomic64_t			drops;
	atomic64_t			throttled;
	atomic64_t			keys_dropped;	/* pool full: see ktap_keep_going() */
};

/*
 * An event's output function is not run in NMI context; print(e) and
 * printf("%s", e) store the event for the reader to format instead.
 */
#define KTAP_MSG_NMI_FORMAT \
	"cannot format event %s in NMI context: print(e) instead of using it as a string"

/* Result of a builtin or runtime helper that ends the run without error. */
#define KTAP_HALT	1

/**
 * struct ktap_exec - state of one run (main chunk or one firing)
 * @vm: the session's VM
 * @ctx: execution area (per-CPU, or the main chunk's own)
 * @ev: event being handled, or NULL in the main chunk
 * @main: running the main chunk (process context, preemptible)
 * @transient: a handler firing, whose short-lived objects come from the
 *	CPU's temporary arena (see the top of this file)
 * @pc: code index of the instruction being run, for error lines
 * @open: open upvalues of this run, innermost frame first
 * @budget: instructions left; the interpreter keeps it in a local and
 *	stores it here around builtin calls, so that a closure a builtin
 *	calls back (ktap_vm_call()) charges the same budget
 * @top: while a builtin runs, the first stack slot above its caller's
 *	frame, where ktap_vm_call() runs the closure
 * @depth: while a builtin runs, the call depth of its caller
 * @callbacks: ktap_vm_call()s in progress
 */
struct ktap_exec {
	struct ktap_vm		*vm;
	struct ktap_ctx		*ctx;
	struct ktap_event	*ev;
	bool			main;
	bool			transient;
	u32			pc;
	struct ktap_upval	*open;
	s64			budget;
	s64			check;		/* main chunk: next slice at */
	struct ktap_value	*top;
	u32			depth;
	u32			callbacks;
};

int ktap_vm_call(struct ktap_exec *x, const struct ktap_value *fn,
		 const struct ktap_value *args, u32 nargs,
		 struct ktap_value *ret);

/*
 * Table and shared-slot lock. Outside NMI it spins with interrupts off
 * (the holder is always on another CPU, see the top of this file); in
 * NMI it only tries, and the caller counts a drop when that fails.
 */
static inline bool ktap_spin_trylock_any(raw_spinlock_t *lock,
					 unsigned long *flags)
{
	local_irq_save(*flags);
	if (unlikely(in_nmi())) {
		if (raw_spin_trylock(lock))
			return true;
		local_irq_restore(*flags);
		return false;
	}
	raw_spin_lock(lock);
	return true;
}

DEFINE_LOCK_GUARD_1(ktap_spin, raw_spinlock_t,
		    raw_spin_lock_irqsave(_T->lock, _T->flags),
		    raw_spin_unlock_irqrestore(_T->lock, _T->flags),
		    unsigned long flags)
DEFINE_LOCK_GUARD_1_COND(ktap_spin, _try,
			 ktap_spin_trylock_any(_T->lock, &_T->flags))

/* Values. */
static inline void ktap_set_nil(struct ktap_value *v)
{
	v->i = 0;
	v->type = KTAP_TNIL;
}

static inline void ktap_set_bool(struct ktap_value *v, bool b)
{
	ktap_value_bool(v, b);
}

static inline void ktap_set_obj(struct ktap_value *v, u32 type, void *p)
{
	v->p = p;
	v->type = type;
}

static inline bool ktap_truthy(const struct ktap_value *v)
{
	/*
	 * Test the whole word, never the bool member: for a non-boolean
	 * value its byte is not 0 or 1, and GCC may merge a speculative
	 * load of it into the result (it did: 7 tested false).
	 */
	return v->type != KTAP_TNIL && (v->type != KTAP_TBOOL || v->i != 0);
}

/* Event and bound-method values only live for one firing. */
static inline bool ktap_is_ephemeral(const struct ktap_value *v)
{
	return v->type == KTAP_TEVENT || v->type == KTAP_TNATIVE;
}

const char *ktap_typename(u32 type);
bool ktap_value_equal(const struct ktap_value *a, const struct ktap_value *b);

/* vm_obj.c */
int ktap_pool_init(struct ktap_pool *pool, size_t size);
void ktap_pool_destroy(struct ktap_pool *pool);
void *ktap_alloc(struct ktap_vm *vm, size_t size);
void *ktap_temp_alloc(struct ktap_vm *vm, size_t size);
void *ktap_run_alloc(struct ktap_exec *x, size_t size);

/* Is @p in a temporary arena (an object that dies with its firing)? */
static inline bool ktap_is_temp(const struct ktap_vm *vm, const void *p)
{
	return vm->temp && (const char *)p >= vm->temp &&
	       (const char *)p < vm->temp + vm->temp_size * nr_cpu_ids;
}

int ktap_strset_init(struct ktap_strset *set, size_t mem_limit);
void ktap_strset_destroy(struct ktap_strset *set);
u32 ktap_str_hash(struct ktap_vm *vm, const char *s, u32 len);
struct ktap_str *ktap_str_intern(struct ktap_vm *vm, const char *s, u32 len);
struct ktap_str *ktap_str_find(struct ktap_vm *vm, const struct ktap_str *s);
struct ktap_str *ktap_str_temp(struct ktap_exec *x, const char *s, u32 len);
int ktap_value_persist(struct ktap_vm *vm, struct ktap_value *v);

struct ktap_table *ktap_table_new(struct ktap_vm *vm, u32 narr, u32 nhash);
struct ktap_table *ktap_table_new_temp(struct ktap_vm *vm, u32 narr,
				       u32 nhash);
int ktap_table_get(struct ktap_vm *vm, struct ktap_table *t,
		   const struct ktap_value *key, struct ktap_value *out);
int ktap_table_set(struct ktap_vm *vm, struct ktap_table *t,
		   const struct ktap_value *key, const struct ktap_value *val);
int ktap_table_inc(struct ktap_vm *vm, struct ktap_table *t,
		   const struct ktap_value *key, s64 n);
int ktap_table_len(struct ktap_vm *vm, struct ktap_table *t, s64 *len,
		   s64 max);
int ktap_table_count(struct ktap_table *t, s64 *count);
int ktap_table_clear(struct ktap_table *t);
struct ktap_iter *ktap_table_iter(struct ktap_exec *x, struct ktap_table *t,
				  int *err);

struct ktap_ptable *ktap_ptable_new(struct ktap_vm *vm, u32 kind, s64 lo,
				    s64 hi, s64 step);
u32 ktap_agg_bucket(const struct ktap_ptable *pt, s64 v);
int ktap_ptable_buckets(struct ktap_exec *x, struct ktap_ptable *pt,
			const struct ktap_value *key, u64 *bucket);
int ktap_ptable_clear(struct ktap_exec *x, struct ktap_ptable *pt,
		      const struct ktap_value *key);
int ktap_ptable_add(struct ktap_vm *vm, struct ktap_ptable *pt,
		    const struct ktap_value *key, s64 v);
int ktap_ptable_get(struct ktap_exec *x, struct ktap_ptable *pt,
		    const struct ktap_value *key, struct ktap_value *out);
struct ktap_iter *ktap_ptable_iter(struct ktap_exec *x, struct ktap_ptable *pt,
				   int *err);
int ktap_iter_sort(struct ktap_exec *x, struct ktap_iter *it);

void ktap_shared_read(struct ktap_vm *vm, const struct ktap_value *slot,
		      struct ktap_value *out);
int ktap_shared_write(struct ktap_vm *vm, struct ktap_value *slot,
		      const struct ktap_value *v);

/* vm_exec.c */
int ktap_rt_error(struct ktap_exec *x, const char *fmt, ...) __printf(2, 3);
int ktap_charge(struct ktap_exec *x, u64 n);
int ktap_border(struct ktap_exec *x, struct ktap_table *t, s64 *n);
int ktap_obj_error(struct ktap_exec *x, int err);
void ktap_write(struct ktap_exec *x, const char *buf, size_t len);
int ktap_main_sleep(struct ktap_exec *x, u32 ms);

/*
 * Builtin functions, declared once: name as scripts and images spell
 * it, minimum and maximum argument count (KTAP_ANY_ARGS: no maximum),
 * flags. Images name the builtins they call (the builtins section) and
 * the loader maps each name to this table, so the order here is not
 * ABI: a builtin can be added anywhere, and one is never renumbered.
 */
#define KTAP_BF_EVENT	0x1	/* reads the event being handled */
#define KTAP_BF_MAIN	0x2	/* main chunk and end handlers only */
#define KTAP_ANY_ARGS	0xff

#define KTAP_BUILTINS(X)					\
	X(print,		0, KTAP_ANY_ARGS, 0)		\
	X(printf,		1, KTAP_ANY_ARGS, 0)		\
	X(len,			1, 1, 0)			\
	X(delete,		1, 2, 0)			\
	X(table_count,		1, 1, 0)			\
	X(pairs,		1, 1, 0)			\
	X(sort_pairs,		1, 2, 0)			\
	X(exit,			0, 1, 0)			\
	X(cpu,			0, 0, 0)			\
	X(pid,			0, 0, 0)			\
	X(target_pid,		0, 0, 0)			\
	X(tid,			0, 0, 0)			\
	X(uid,			0, 0, 0)			\
	X(execname,		0, 0, 0)			\
	X(arch,			0, 0, 0)			\
	X(kernel_v,		0, 0, 0)			\
	X(num_cpus,		0, 0, 0)			\
	X(in_interrupt,		0, 0, 0)			\
	X(in_iowait,		0, 0, 0)			\
	X(gettimeofday_ns,	0, 0, 0)			\
	X(print_hist,		1, 2, 0)			\
	X(ptable,		0, 1, KTAP_BF_MAIN)		\
	X(sleep,		1, 1, KTAP_BF_MAIN)		\
	X(count,		1, 1, 0)			\
	X(sum,			1, 1, 0)			\
	X(avg,			1, 1, 0)			\
	X(min,			1, 1, 0)			\
	X(max,			1, 1, 0)			\
	X(stack,		0, 2, 0)			\
	X(print_backtrace,	0, 0, 0)			\
	X(ustack,		0, 1, 0)			\
	X(ksym,			1, 1, 0)			\
	X(usym,			1, 1, 0)			\
	X(kernel_string,	1, 1, 0)			\
	X(user_string,		1, 1, 0)			\
	X(curr_taskinfo,	1, 2, 0)			\
	X(print_trace_clock,	0, 0, 0)			\
	X(probename,		0, 0, KTAP_BF_EVENT)		\
	X(argstr,		0, 0, KTAP_BF_EVENT)		\
	X(argn,			1, 1, KTAP_BF_EVENT)		\
	X(tostring,		1, 1, 0)			\
	X(tonumber,		1, 1, 0)			\
	X(log2,			1, 1, 0)			\
	X(print_log2hist,	1, 1, 0)			\
	X(hist,			0, 1, KTAP_BF_MAIN)		\
	X(lhist,		3, 4, KTAP_BF_MAIN)		\
	X(stats,		0, 1, KTAP_BF_MAIN)		\
	X(clear,		1, 1, 0)			\
	X(sprintf,		1, KTAP_ANY_ARGS, 0)		\
	X(substr,		2, 3, 0)			\
	X(strcmp,		2, 2, 0)			\
	X(contains,		2, 2, 0)			\
	X(join,			1, 2, 0)			\
	X(sk_saddr,		1, 1, 0)			\
	X(sk_daddr,		1, 1, 0)			\
	X(ntop,			1, 1, 0)

#define __KTAP_BI_ENUM(name, ...)	KTAP_BI_##name,
enum ktap_builtin {
	KTAP_BUILTINS(__KTAP_BI_ENUM)
	KTAP_BI__COUNT
};
#undef __KTAP_BI_ENUM

/* vm_builtins.c */
typedef int (*ktap_builtin_fn)(struct ktap_exec *x, struct ktap_value *ret,
			       struct ktap_value *args, u32 nargs);

/* One row of KTAP_BUILTINS. */
struct ktap_builtin_info {
	const char	*name;
	ktap_builtin_fn	fn;
	u8		min;
	u8		max;
	u8		flags;
};

extern const struct ktap_builtin_info ktap_builtin_table[KTAP_BI__COUNT];
int ktap_builtin_lookup(const char *name);
int ktap_tostring(struct ktap_exec *x, const struct ktap_value *v,
		  struct seq_buf *s);
int ktap_event_tostring(struct ktap_exec *x, struct ktap_event *ev,
			struct ktap_value *ret);

/* Operand table derived from KTAP_OPCODES, for verifier and dispatch. */
struct ktap_opinfo {
	const char	*name;
	u8		fmt;
	u8		kind[3];
	u8		flags;
};

extern const struct ktap_opinfo ktap_opinfo[KTAP_OP__COUNT];

#define KTAP_MAX_SUCCESSORS	2
u32 ktap_insn_successors(u32 insn, u32 pc, s64 next[KTAP_MAX_SUCCESSORS]);

#endif /* _KTAP_VM_H */
