/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * ktap: a scripting dynamic tracer.
 *
 * This header is the contract between tools/ktap (the compiler and CLI)
 * and the in-kernel VM in kernel/trace/ktap/: the bytecode image format,
 * the instruction set, the builtin function table and the ioctls of the
 * tracefs control file (tracing/ktap/control).
 *
 * Growth rules: every ioctl argument starts with its own size and is read
 * with copy_struct_from_user(); every reserved field must be zero; opcodes,
 * builtins and probe types are only ever appended.
 *
 * Not to be confused with the KTAP test output format used by kselftest
 * and KUnit (Documentation/dev-tools/ktap.rst).
 */
#ifndef _UAPI_LINUX_KTAP_H
#define _UAPI_LINUX_KTAP_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define KTAP_ABI_VERSION	1

/* "KTAP" read as a little-endian __u32 */
#define KTAP_BC_MAGIC		0x5041544bU

/* Marks an absent string-table reference (anonymous function, no name). */
#define KTAP_BC_NO_STR		0xffffffffU

/*
 * Instructions are 32-bit words:
 *
 *	ABC:	op:8 | A:8 | B:8 | C:8
 *	ABx:	op:8 | A:8 | Bx:16		(unsigned)
 *	AsBx:	op:8 | A:8 | sBx:16		(two's complement)
 *
 * Jump offsets (sBx) are relative to the instruction after the jump.
 */
#define KTAP_INSN(op, a, b, c)	((__u32)(op) | (__u32)(a) << 8 | \
				 (__u32)(b) << 16 | (__u32)(c) << 24)
#define KTAP_INSN_BX(op, a, bx)	((__u32)(op) | (__u32)(a) << 8 | \
				 ((__u32)(bx) & 0xffff) << 16)
#define KTAP_OP(i)		((i) & 0xff)
#define KTAP_A(i)		(((i) >> 8) & 0xff)
#define KTAP_B(i)		(((i) >> 16) & 0xff)
#define KTAP_C(i)		(((i) >> 24) & 0xff)
#define KTAP_BX(i)		(((i) >> 16) & 0xffff)
#define KTAP_SBX(i)		((__s32)(__s16)(((i) >> 16) & 0xffff))

#define KTAP_MAX_REGS		250	/* registers in one frame */
#define KTAP_MAX_UPVALS		255	/* upvalues of one function */

/* Instruction formats. */
enum ktap_insn_fmt {
	KTAP_FMT_ABC,
	KTAP_FMT_ABX,
	KTAP_FMT_ASBX,
};

/*
 * Operand kinds: what the verifier checks each operand against, and how
 * the disassembler prints it. "Range" kinds are relative to operand A.
 */
enum ktap_operand_kind {
	KTAP_OPK_NONE,		/* unused: must be zero */
	KTAP_OPK_REG,		/* register, < frame size */
	KTAP_OPK_REG4,		/* registers A..A+3, all < frame size */
	KTAP_OPK_RCNT,		/* count n: registers A..A+n < frame size */
	KTAP_OPK_K,		/* constant of any type */
	KTAP_OPK_KINT,		/* integer constant */
	KTAP_OPK_KSTR,		/* string constant */
	KTAP_OPK_UPV,		/* upvalue of the current function */
	KTAP_OPK_GLOBAL,	/* global slot, < header nglobals */
	KTAP_OPK_PROTO,		/* prototype whose parent is the current one */
	KTAP_OPK_JUMP,		/* sBx: target inside the current function */
	KTAP_OPK_IMM,		/* any immediate */
	KTAP_OPK_BOOL,		/* 0 or 1 */
	KTAP_OPK_BUILTIN,	/* builtin id; arity checked against count B */
	KTAP_OPK_PROBE,		/* probe table index */
};

/*
 * Opcode flags. Besides the operand kinds, they say where control can
 * go after an instruction; the verifier requires every such successor
 * to lie inside the instruction's own function:
 *	(none)	the next instruction
 *	SKIP	the next one or the one after it
 *	BRANCH	the next one or the sBx target
 *	GOTO	the sBx target only
 *	END	nowhere in this function (it returns)
 */
#define KTAP_OPF_SKIP	0x1	/* conditional skip: next insn must be JMP */
#define KTAP_OPF_MAIN	0x2	/* only valid in the main chunk (proto 0) */
#define KTAP_OPF_BRANCH	0x4	/* conditional jump to the sBx target */
#define KTAP_OPF_GOTO	0x8	/* unconditional jump to the sBx target */
#define KTAP_OPF_END	0x10	/* leaves the function */

/*
 * The instruction set, declared once. Columns: name, format, kinds of
 * A, B (or Bx/sBx) and C, flags. R() is a register, K() a constant,
 * U() an upvalue, G() a global.
 *
 *	MOVE	 R(A) := R(B)
 *	LOADK	 R(A) := K(Bx)
 *	LOADI	 R(A) := sBx
 *	LOADBOOL R(A) := B
 *	LOADNIL	 R(A..A+B) := nil
 *	GETUPVAL R(A) := U(B)
 *	SETUPVAL U(B) := R(A)
 *	GETGLOBAL R(A) := G(Bx)
 *	SETGLOBAL G(Bx) := R(A)
 *	NEWTABLE R(A) := {} (B: array size hint, C: hash size hint)
 *	GETTABLE R(A) := R(B)[R(C)]
 *	GETFIELD R(A) := R(B)[K(C)]	(also event fields and methods)
 *	SETTABLE R(A)[R(B)] := R(C)
 *	SETFIELD R(A)[K(B)] := R(C)
 *	INCTABLE R(A)[R(B)] += R(C)	(absent key counts as 0; one atomic
 *					 update, safe against other CPUs)
 *	AGGR	 R(A)[R(B)] <<< R(C)	(R(A) must be a ptable)
 *	ADD..MOD R(A) := R(B) op R(C)	(64-bit integers, wrapping)
 *	ADDK..MODK R(A) := R(B) op K(C)
 *	UNM/NOT/LEN R(A) := op R(B)
 *	CONCAT	 R(A) := R(B) .. R(C)
 *	JMP	 pc += sBx
 *	EQ/LT/LE if ((R(B) op R(C)) != A) skip the next instruction (a JMP)
 *	EQK	 if ((R(B) == K(C)) != A) skip the next instruction
 *	TEST	 if (truth(R(A)) != C) skip the next instruction
 *	CALL	 R(A) := R(A)(R(A+1..A+B)); the result is kept only if C
 *	CALLB	 R(A) := builtin[C](R(A+1..A+B))
 *	RETURN	 return R(A) if B, else nothing
 *	FORPREP	 R(A) -= R(A+2); pc += sBx
 *	FORLOOP	 R(A) += R(A+2); if R(A) <= R(A+1) (>= for negative steps)
 *		 { R(A+3) := R(A); pc += sBx }
 *	ITERNEXT R(A) is an iterator (from pairs/sort_pairs): if it has a
 *		 next pair, R(A+1), R(A+2) := key, value; pc += sBx
 *	CLOSURE	 R(A) := closure of proto Bx
 *	ATTACH	 make closure R(A) the handler of probe Bx (main chunk only)
 */
#define KTAP_OPCODES(X)							\
	X(MOVE,		ABC,  REG,  REG,     NONE,    0)		\
	X(LOADK,	ABX,  REG,  K,       NONE,    0)		\
	X(LOADI,	ASBX, REG,  IMM,     NONE,    0)		\
	X(LOADBOOL,	ABC,  REG,  BOOL,    NONE,    0)		\
	X(LOADNIL,	ABC,  REG,  RCNT,    NONE,    0)		\
	X(GETUPVAL,	ABC,  REG,  UPV,     NONE,    0)		\
	X(SETUPVAL,	ABC,  REG,  UPV,     NONE,    0)		\
	X(GETGLOBAL,	ABX,  REG,  GLOBAL,  NONE,    0)		\
	X(SETGLOBAL,	ABX,  REG,  GLOBAL,  NONE,    0)		\
	X(NEWTABLE,	ABC,  REG,  IMM,     IMM,     0)		\
	X(GETTABLE,	ABC,  REG,  REG,     REG,     0)		\
	X(GETFIELD,	ABC,  REG,  REG,     KSTR,    0)		\
	X(SETTABLE,	ABC,  REG,  REG,     REG,     0)		\
	X(SETFIELD,	ABC,  REG,  KSTR,    REG,     0)		\
	X(INCTABLE,	ABC,  REG,  REG,     REG,     0)		\
	X(AGGR,		ABC,  REG,  REG,     REG,     0)		\
	X(ADD,		ABC,  REG,  REG,     REG,     0)		\
	X(SUB,		ABC,  REG,  REG,     REG,     0)		\
	X(MUL,		ABC,  REG,  REG,     REG,     0)		\
	X(DIV,		ABC,  REG,  REG,     REG,     0)		\
	X(MOD,		ABC,  REG,  REG,     REG,     0)		\
	X(ADDK,		ABC,  REG,  REG,     KINT,    0)		\
	X(SUBK,		ABC,  REG,  REG,     KINT,    0)		\
	X(MULK,		ABC,  REG,  REG,     KINT,    0)		\
	X(DIVK,		ABC,  REG,  REG,     KINT,    0)		\
	X(MODK,		ABC,  REG,  REG,     KINT,    0)		\
	X(UNM,		ABC,  REG,  REG,     NONE,    0)		\
	X(NOT,		ABC,  REG,  REG,     NONE,    0)		\
	X(LEN,		ABC,  REG,  REG,     NONE,    0)		\
	X(CONCAT,	ABC,  REG,  REG,     REG,     0)		\
	X(JMP,		ASBX, NONE, JUMP,    NONE,    KTAP_OPF_GOTO)	\
	X(EQ,		ABC,  BOOL, REG,     REG,     KTAP_OPF_SKIP)	\
	X(LT,		ABC,  BOOL, REG,     REG,     KTAP_OPF_SKIP)	\
	X(LE,		ABC,  BOOL, REG,     REG,     KTAP_OPF_SKIP)	\
	X(EQK,		ABC,  BOOL, REG,     K,       KTAP_OPF_SKIP)	\
	X(TEST,		ABC,  REG,  NONE,    BOOL,    KTAP_OPF_SKIP)	\
	X(CALL,		ABC,  REG,  RCNT,    BOOL,    0)		\
	X(CALLB,	ABC,  REG,  RCNT,    BUILTIN, 0)		\
	X(RETURN,	ABC,  REG,  BOOL,    NONE,    KTAP_OPF_END)	\
	X(FORPREP,	ASBX, REG4, JUMP,    NONE,    KTAP_OPF_GOTO)	\
	X(FORLOOP,	ASBX, REG4, JUMP,    NONE,    KTAP_OPF_BRANCH)\
	X(ITERNEXT,	ASBX, REG4, JUMP,    NONE,    KTAP_OPF_BRANCH)\
	X(CLOSURE,	ABX,  REG,  PROTO,   NONE,    0)		\
	X(ATTACH,	ABX,  REG,  PROBE,   NONE,    KTAP_OPF_MAIN)

#define __KTAP_OP_ENUM(name, fmt, a, b, c, flags)	KTAP_OP_##name,
enum ktap_opcode {
	KTAP_OPCODES(__KTAP_OP_ENUM)
	KTAP_OP__COUNT
};
#undef __KTAP_OP_ENUM

/* Builtin behaviour flags. */
#define KTAP_BF_EVENT	0x1	/* reads the event being handled */
#define KTAP_BF_MAIN	0x2	/* main chunk and end handlers only */

#define KTAP_MAX_ARGS	0xff	/* "any number" in the max-args column */

/*
 * Builtin functions called with CALLB, declared once: name as the
 * script writes it, minimum and maximum argument count, flags.
 * Library-qualified names (kdebug.dumpstack) use their full spelling.
 */
#define KTAP_BUILTINS(X)						\
	X(print,		0, KTAP_MAX_ARGS, 0)				\
	X(printf,		1, KTAP_MAX_ARGS, 0)				\
	X(len,			1, 1, 0)					\
	X(delete,		1, 2, 0)					\
	X(table_count,		1, 1, 0)					\
	X(pairs,		1, 1, 0)					\
	X(sort_pairs,		1, 2, 0)					\
	X(exit,			0, 1, 0)					\
	X(cpu,			0, 0, 0)					\
	X(pid,			0, 0, 0)					\
	X(tid,			0, 0, 0)					\
	X(uid,			0, 0, 0)					\
	X(execname,		0, 0, 0)					\
	X(arch,			0, 0, 0)					\
	X(kernel_v,		0, 0, 0)					\
	X(num_cpus,		0, 0, 0)					\
	X(in_interrupt,		0, 0, 0)					\
	X(in_iowait,		0, 0, 0)					\
	X(gettimeofday_ns,	0, 0, 0)					\
	X(gettimeofday_us,	0, 0, 0)					\
	X(gettimeofday_ms,	0, 0, 0)					\
	X(gettimeofday_s,	0, 0, 0)					\
	X(inplace_inc,		2, 3, 0)					\
	X(histogram,		1, 2, 0)					\
	X(print_hist,		1, 2, 0)					\
	X(ptable,		0, 0, KTAP_BF_MAIN)			\
	X(count,		1, 1, 0)					\
	X(sum,			1, 1, 0)					\
	X(avg,			1, 1, 0)					\
	X(min,			1, 1, 0)					\
	X(max,			1, 1, 0)					\
	X(stack,		0, 1, 0)					\
	X(print_backtrace,	0, 0, 0)					\
	X(kdebug_dumpstack,	0, 0, 0)					\
	X(kernel_string,	1, 1, 0)					\
	X(user_string,		1, 1, 0)					\
	X(curr_taskinfo,	1, 2, 0)					\
	X(print_trace_clock,	0, 0, 0)					\
	X(probename,		0, 0, KTAP_BF_EVENT)				\
	X(argstr,		0, 0, KTAP_BF_EVENT)				\
	X(argn,			1, 1, KTAP_BF_EVENT)				\
	X(tostring,		1, 1, 0)					\
	X(tonumber,		1, 1, 0)					\
	X(log2,			1, 1, 0)					\
	X(print_log2hist,	1, 1, 0)

#define __KTAP_BUILTIN_ENUM(name, min, max, flags)	KTAP_BI_##name,
enum ktap_builtin {
	KTAP_BUILTINS(__KTAP_BUILTIN_ENUM)
	KTAP_BI__COUNT
};
#undef __KTAP_BUILTIN_ENUM

/* A section of the image: byte offset from the image start, element count. */
struct ktap_bc_section {
	__u32	off;
	__u32	count;
};

/*
 * The bytecode image. All offsets are from the start of the image and
 * all multi-byte fields are in the host's byte order. Sections, by
 * element type:
 *	protos	struct ktap_bc_proto; proto 0 is the main chunk
 *	consts	struct ktap_bc_const
 *	strtab	bytes; names referenced by offset are NUL-terminated,
 *		constant strings carry their length
 *	code	__u32 instructions of all protos, back to back
 *	lines	__u32 source line per instruction (count 0 or code.count)
 *	upvals	struct ktap_bc_upval
 *	probes	struct ktap_bc_probe
 *	words	__u32 lists referenced by probes (tracepoint event ids)
 */
struct ktap_bc_header {
	__u32	magic;			/* KTAP_BC_MAGIC */
	__u16	abi_version;		/* KTAP_ABI_VERSION */
	__u16	hdr_size;		/* sizeof(struct ktap_bc_header) */
	__u32	total_size;		/* whole image, header included */
	__u32	flags;			/* none defined yet: must be 0 */
	__u32	nglobals;		/* global variable slots */
	__u32	chunkname;		/* strtab: script file name */
	struct ktap_bc_section protos;
	struct ktap_bc_section consts;
	struct ktap_bc_section strtab;
	struct ktap_bc_section code;
	struct ktap_bc_section lines;
	struct ktap_bc_section upvals;
	struct ktap_bc_section probes;
	struct ktap_bc_section words;
	__u32	__reserved[4];		/* must be 0 */
};

struct ktap_bc_proto {
	__u32	code_start;		/* index into the code section */
	__u32	ncode;
	__u32	upval_start;		/* index into the upvals section */
	__u16	nupvals;
	__u8	nparams;
	__u8	nregs;			/* frame size, >= nparams */
	__u32	parent;			/* enclosing proto; KTAP_BC_NO_STR for 0 */
	__u32	name;			/* strtab, or KTAP_BC_NO_STR */
	__u32	line;			/* where the function starts */
	__u32	__reserved;		/* must be 0 */
};

/* How a closure captures an upvalue when it is created. */
struct ktap_bc_upval {
	__u8	in_stack;		/* 1: parent's register, 0: parent's upvalue */
	__u8	index;
};

enum ktap_bc_const_type {
	KTAP_BC_CONST_INT,
	KTAP_BC_CONST_STR,
};

struct ktap_bc_const {
	__u32	type;			/* enum ktap_bc_const_type */
	__u32	len;			/* string length; 0 for integers */
	__s64	val;			/* integer, or strtab offset */
};

enum ktap_probe_type {
	KTAP_PROBE_TRACEPOINT,		/* ftrace events, by id (words) */
	KTAP_PROBE_KPROBE,		/* target: symbol, arg: offset */
	KTAP_PROBE_UPROBE,		/* target: path, arg: file offset */
	KTAP_PROBE_TIMER,		/* arg: period in ns, one CPU */
	KTAP_PROBE_PROFILE,		/* arg: period in ns, every CPU */
	KTAP_PROBE_END,			/* runs once when tracing stops */
	KTAP_PROBE__COUNT
};

#define KTAP_PROBE_F_RETURN	0x1	/* kretprobe / uretprobe */
/*
 * The handler may call e.set_retval(v): only on a kprobe at the entry of
 * a function on the kernel's error-injection list. The function's body
 * is then skipped and it returns v, which must be a value the function
 * may fail with (see get_injectable_error_type()).
 */
#define KTAP_PROBE_F_OVERRIDE	0x2

struct ktap_bc_probe {
	__u32	type;			/* enum ktap_probe_type */
	__u32	flags;			/* KTAP_PROBE_F_* */
	__u32	spec;			/* strtab: event definition as written */
	__u32	target;			/* strtab: symbol or path, or NO_STR */
	__u64	arg;
	__u32	ids_start;		/* words: tracepoint event ids */
	__u32	nids;
	__u32	__reserved[2];		/* must be 0 */
};

/* Limits the kernel enforces; the tool checks them first. */
#define KTAP_MAX_IMAGE		(4U << 20)
#define KTAP_MAX_PROTOS		4096
#define KTAP_MAX_CONSTS		65536
#define KTAP_MAX_PROBES		4096
#define KTAP_MAX_GLOBALS	65536
#define KTAP_MAX_CALL_DEPTH	32
/*
 * Ceiling of ktap_load_attr.insn_budget: instructions (and elements
 * touched by builtins) one handler run may use. It bounds the time a
 * handler holds its CPU, possibly in hardirq or NMI context; see
 * "Safety model" in Documentation/trace/ktap.rst.
 */
#define KTAP_MAX_INSN_BUDGET	1000000

/* ioctls on tracing/ktap/control; each open() is one session. */
#define KTAP_IOC_MAGIC		0xB9

struct ktap_version {
	__u32	size;			/* in: sizeof(struct ktap_version) */
	__u32	abi_version;		/* out */
	__u32	nr_opcodes;		/* out: KTAP_OP__COUNT of the kernel */
	__u32	nr_builtins;		/* out: KTAP_BI__COUNT of the kernel */
	char	release[64];		/* out: utsname release */
};

#define KTAP_LOAD_F_DRY_RUN	0x1	/* attach, but never run handlers */

struct ktap_load_attr {
	__u32		size;		/* sizeof(struct ktap_load_attr) */
	__u32		flags;		/* KTAP_LOAD_F_* */
	__aligned_u64	image;		/* user pointer to the bytecode image */
	__u32		image_len;
	__u32		log_size;	/* bytes at log_buf */
	__aligned_u64	log_buf;	/* out: why the image was rejected */
	__u32		mem_limit_kb;	/* session memory pool; 0: default */
	__u32		insn_budget;	/* per handler run; 0: default */
	__s32		pid;		/* only this process; -1: all */
	__s32		cpu;		/* only this CPU; -1: all */
	__u32		__reserved[4];	/* must be 0 */
};

struct ktap_stats {
	__u32		size;		/* in: sizeof(struct ktap_stats) */
	__u32		state;		/* enum ktap_session_state */
	__aligned_u64	hits;		/* handler runs */
	__aligned_u64	drops;		/* records lost, runs throttled */
	__aligned_u64	recursion;	/* firings skipped: ktap inside ktap */
	__aligned_u64	errors;		/* runtime errors */
	__aligned_u64	mem_used;	/* bytes of the session pool in use */
	__aligned_u64	mem_limit;
	__u32		nr_attached;	/* probes attached */
	__u32		__reserved;
};

enum ktap_session_state {
	KTAP_STATE_NEW,			/* opened, nothing loaded */
	KTAP_STATE_LOADED,		/* image verified */
	KTAP_STATE_RUNNING,		/* main chunk ran, probes attached */
	KTAP_STATE_EXITING,		/* exit() or an error: awaiting STOP */
	KTAP_STATE_STOPPED,		/* detached, end handlers ran */
};

#define KTAP_IOC_VERSION	_IOWR(KTAP_IOC_MAGIC, 0x00, struct ktap_version)
#define KTAP_IOC_LOAD		_IOW(KTAP_IOC_MAGIC, 0x01, struct ktap_load_attr)
#define KTAP_IOC_START		_IO(KTAP_IOC_MAGIC, 0x02)
#define KTAP_IOC_STOP		_IO(KTAP_IOC_MAGIC, 0x03)
#define KTAP_IOC_STATS		_IOWR(KTAP_IOC_MAGIC, 0x04, struct ktap_stats)

#endif /* _UAPI_LINUX_KTAP_H */
