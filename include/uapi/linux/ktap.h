/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * ktap: a scripting dynamic tracer.
 *
 * This header is the contract between tools/ktap (the compiler and CLI)
 * and the in-kernel VM in kernel/trace/ktap/: the bytecode image format,
 * the instruction set and the ioctls of the tracefs control file
 * (tracing/ktap/control).
 *
 * What the kernel owns is named, never numbered, in an image: builtin
 * functions by name, tracepoints by their SYSTEM:EVENT pattern, event
 * fields by name. The kernel resolves each at load or attach and
 * rejects what it does not know, by name, so neither builtin ids nor
 * event ids are ABI.
 *
 * Growth rules: every ioctl argument starts with its own size (see the
 * ioctl section below); every reserved field must be zero; opcodes and
 * probe types are only ever appended.
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
 * Every control transfer names its target in the instruction itself:
 * a conditional branch goes to its sBx target or to the next
 * instruction, nowhere else.
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
	KTAP_OPK_REG3,		/* registers A..A+2, all < frame size */
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
	KTAP_OPK_BUILTIN,	/* builtins section index (arity: B) */
	KTAP_OPK_PROBE,		/* probe table index */
	KTAP_OPK_FIELD,		/* fields section index */
	KTAP_OPK_NVAL,		/* count n: values A..A+n-1 < frame size */
};

/*
 * Opcode flags. Besides the operand kinds, they say where control can
 * go after an instruction; the verifier requires every such successor
 * to lie inside the instruction's own function:
 *	(none)	the next instruction
 *	BRANCH	the next one or the sBx target
 *	GOTO	the sBx target only
 *	END	nowhere in this function (it returns)
 */
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
 *	EQ/LT/LE R(A) := R(B) op R(C)	(a boolean; LT/LE compare two
 *					 integers or two strings)
 *	EQK	 R(A) := R(B) == K(C)
 *	JMP	 pc += sBx
 *	JMPT	 if R(A) is true (neither nil nor false): pc += sBx
 *	JMPF	 if R(A) is nil or false: pc += sBx
 *	CALL	 R(A..A+C-1) := R(A)(R(A+1..A+B)): the first C values
 *		 the callee returns (nil for each it does not)
 *	CALLB	 R(A) := builtin C(R(A+1..A+B)), C indexing the image's
 *		 builtins section
 *	RETURN	 return R(A..A+B-1), B values (B = 0: none)
 *	ITERNEXT R(A) is an iterator (from pairs/sort_pairs): if it has a
 *		 next pair, R(A+1), R(A+2) := key, value; pc += sBx
 *	CLOSURE	 R(A) := closure of proto Bx
 *	ATTACH	 make closure R(A) the handler of probe Bx (main chunk only)
 *	EVFIELD	 R(A) := field Bx (fields section) of the event being
 *		 handled, read at the offset the kernel resolved when the
 *		 handler was attached; where nothing was resolved for this
 *		 event, read by name as GETFIELD reads e.NAME
 *
 * A numeric for loop is a comparison, a JMPF out of the loop, the body,
 * an add and a JMP back: there is no loop instruction.
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
	X(EQ,		ABC,  REG,  REG,     REG,     0)		\
	X(LT,		ABC,  REG,  REG,     REG,     0)		\
	X(LE,		ABC,  REG,  REG,     REG,     0)		\
	X(EQK,		ABC,  REG,  REG,     K,       0)		\
	X(JMP,		ASBX, NONE, JUMP,    NONE,    KTAP_OPF_GOTO)	\
	X(JMPT,		ASBX, REG,  JUMP,    NONE,    KTAP_OPF_BRANCH)\
	X(JMPF,		ASBX, REG,  JUMP,    NONE,    KTAP_OPF_BRANCH)\
	X(CALL,		ABC,  REG,  RCNT,    NVAL,    0)		\
	X(CALLB,	ABC,  REG,  RCNT,    BUILTIN, 0)		\
	X(RETURN,	ABC,  REG,  NVAL,    NONE,    KTAP_OPF_END)	\
	X(ITERNEXT,	ASBX, REG3, JUMP,    NONE,    KTAP_OPF_BRANCH)\
	X(CLOSURE,	ABX,  REG,  PROTO,   NONE,    0)		\
	X(ATTACH,	ABX,  REG,  PROBE,   NONE,    KTAP_OPF_MAIN)	\
	X(EVFIELD,	ABX,  REG,  FIELD,   NONE,    0)

#define __KTAP_OP_ENUM(name, fmt, a, b, c, flags)	KTAP_OP_##name,
enum ktap_opcode {
	KTAP_OPCODES(__KTAP_OP_ENUM)
	KTAP_OP__COUNT
};
#undef __KTAP_OP_ENUM

/* Builtins one image may name (CALLB's C operand is 8 bits). */
#define KTAP_MAX_BUILTINS	256

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
 *	builtins __u32 strtab offsets: the builtin functions CALLB calls,
 *		by name ("print", "gettimeofday_ns"); the kernel resolves
 *		each at load and rejects an unknown name
 *	fields	struct ktap_bc_field: the event fields EVFIELD reads
 *	fetch	struct ktap_bc_fetch: the fetch arguments of kprobes and
 *		uprobes, sorted by probe
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
	struct ktap_bc_section builtins;
	struct ktap_bc_section fields;
	struct ktap_bc_section fetch;
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

/*
 * An event field read by EVFIELD. When a tracepoint handler is
 * attached, the kernel looks every field's name up in the format of
 * each tracepoint the handler covers, once; the attach of @probe fails
 * if none of its tracepoints has the field. Where a name was not
 * resolved (another kind of event), the field is read by name.
 */
struct ktap_bc_field {
	__u32	probe;			/* probe table index */
	__u32	name;			/* strtab: field name */
};

/*
 * Tracepoints, kprobes, uprobes, perf events, watchpoints and function
 * probes need a target; timers, profiles and END have none (NO_STR). A perf event's
 * target is "software:NAME" or "hardware:NAME" as perf(1) names it
 * (cpu-clock, cycles), its arg the sample period (0: a default). A
 * watchpoint's target is the symbol or address as written, for
 * messages; its arg the kernel address, its attr KTAP_WATCH_* | length.
 * A uprobe's attr is the file offset of the reference counter that
 * guards a USDT probe (its "semaphore"), 0 for none.
 */
enum ktap_probe_type {
	KTAP_PROBE_TRACEPOINT,		/* target: SYSTEM:EVENT, * ? globs */
	KTAP_PROBE_KPROBE,		/* target: symbol, arg: offset */
	KTAP_PROBE_UPROBE,		/* target: path, arg: file offset */
	KTAP_PROBE_TIMER,		/* arg: period in ns, one CPU */
	KTAP_PROBE_PROFILE,		/* arg: period in ns, every CPU */
	KTAP_PROBE_END,			/* runs once when tracing stops */
	KTAP_PROBE_PERF,		/* target: software:NAME, arg: period */
	KTAP_PROBE_WATCH,		/* arg: address, attr: mode | length */
	KTAP_PROBE_FTRACE,		/* target: function glob (ftrace) */
	KTAP_PROBE__COUNT
};

/* KTAP_PROBE_WATCH attr: an access mode or two, and 1, 2, 4 or 8 bytes */
#define KTAP_WATCH_R		0x100
#define KTAP_WATCH_W		0x200
#define KTAP_WATCH_X		0x400
#define KTAP_WATCH_LEN_MASK	0xff

#define KTAP_PROBE_F_RETURN	0x1	/* kretprobe / uretprobe */
/*
 * The handler may call e.set_retval(v): only on a kprobe at the entry of
 * a function on the kernel's error-injection list. The function's body
 * is then skipped and it returns v, which must be a value the function
 * may fail with (see get_injectable_error_type()).
 */
#define KTAP_PROBE_F_OVERRIDE	0x2
/*
 * One of the probes a wildcard of a kprobe or uprobe expanded to: when it
 * cannot be attached (a function kprobes refuse, an instruction uprobes
 * cannot step), START skips it and counts it in KTAP_IOC_STATS'
 * nr_skipped instead of failing. START still fails when nothing of any
 * such wildcard could be attached.
 */
#define KTAP_PROBE_F_WILDCARD	0x4

struct ktap_bc_probe {
	__u32	type;			/* enum ktap_probe_type */
	__u32	flags;			/* KTAP_PROBE_F_* */
	__u32	spec;			/* strtab: event definition as written */
	__u32	target;			/* strtab: see the types */
	__u64	arg;
	__u32	attr;			/* WATCH: mode, UPROBE: semaphore */
	__u32	__reserved[3];		/* must be 0 */
};

/*
 * A fetch argument: a named value of a kprobe or uprobe event, read
 * from the registers and memory the probe saw when the handler asks for
 * it (e.NAME, argN, argstr), like a FETCHARG of kprobe_events. The
 * value starts at @base; each of the @ndref memory reads then loads a
 * word at (value + off[i]), the last one a value of @type. A string
 * type instead reads the string at the final address. Memory is kernel
 * memory for a kprobe, user memory for a uprobe or with
 * KTAP_FETCH_F_USER. An event's fetch arguments are its arg1..argN.
 */
enum ktap_fetch_base {
	KTAP_FETCH_REG,			/* reg: strtab, pt_regs name ("di") */
	KTAP_FETCH_ARG,			/* reg: function argument, 1..6 */
	KTAP_FETCH_STACK,		/* reg: N-th word from the stack pointer */
	KTAP_FETCH_STACKP,		/* the stack pointer */
	KTAP_FETCH_RETVAL,		/* return probes only */
	KTAP_FETCH_IMM,			/* imm */
	KTAP_FETCH_COMM,		/* current->comm, KTAP_FETCH_STRING only */
	KTAP_FETCH_BASE__COUNT
};

enum ktap_fetch_type {
	KTAP_FETCH_U8, KTAP_FETCH_U16, KTAP_FETCH_U32, KTAP_FETCH_U64,
	KTAP_FETCH_S8, KTAP_FETCH_S16, KTAP_FETCH_S32, KTAP_FETCH_S64,
	KTAP_FETCH_X8, KTAP_FETCH_X16, KTAP_FETCH_X32, KTAP_FETCH_X64,
	KTAP_FETCH_STRING,
	KTAP_FETCH_TYPE__COUNT
};

#define KTAP_FETCH_F_USER	0x1	/* memory reads are of user memory */
#define KTAP_MAX_FETCH_DEREF	4
#define KTAP_MAX_FETCH_ARGS	16	/* per probe */
#define KTAP_FETCH_STR_MAX	256	/* longest string read, NUL included */

struct ktap_bc_fetch {
	__u32	probe;			/* probe table index */
	__u32	name;			/* strtab: field name */
	__u8	base;			/* enum ktap_fetch_base */
	__u8	type;			/* enum ktap_fetch_type */
	__u8	ndref;			/* memory reads, 0..KTAP_MAX_FETCH_DEREF */
	__u8	flags;			/* KTAP_FETCH_F_* */
	__u32	reg;			/* see enum ktap_fetch_base */
	__s64	imm;			/* KTAP_FETCH_IMM's value */
	__s64	off[KTAP_MAX_FETCH_DEREF];	/* offset of each read */
};

/* Limits the kernel enforces; the tool checks them first. */
#define KTAP_MAX_IMAGE		(4U << 20)
#define KTAP_MAX_PROTOS		4096
#define KTAP_MAX_CONSTS		65536
#define KTAP_MAX_PROBES		4096
#define KTAP_MAX_FIELDS		4096
#define KTAP_MAX_FETCH		65536
#define KTAP_MAX_GLOBALS	65536
#define KTAP_MAX_CALL_DEPTH	32
/*
 * Ceiling of ktap_load_attr.insn_budget: instructions (and elements
 * touched by builtins) one handler run may use. It bounds the time a
 * handler holds its CPU, possibly in hardirq or NMI context; see
 * "Safety model" in Documentation/trace/ktap.rst.
 */
#define KTAP_MAX_INSN_BUDGET	1000000

/*
 * ioctls on tracing/ktap/control; each open() is one session.
 *
 * How the arguments grow (the rules of perf_event_open() and bpf()):
 *  - Every argument starts with a __u32 size, set by the caller to the
 *    size of the struct it was built with. The kernel dispatches on the
 *    command number alone (_IOC_NR), never on the size encoded in the
 *    command, so a tool built against a newer header reaches the same
 *    ioctl.
 *  - Input (LOAD): read with copy_struct_from_user(). A struct larger
 *    than the kernel's is accepted if every byte the kernel does not
 *    know is zero (else -E2BIG); a smaller one is accepted down to the
 *    first published size, KTAP_*_SIZE_VER0 (else -EINVAL), the fields
 *    it lacks reading as zero. New fields are appended and mean "as
 *    before" when zero. No argument may exceed a page (-E2BIG).
 *  - Output (VERSION, STATS): the kernel writes back the part both
 *    sides know, min(size, its own size) bytes, with size set to its
 *    own size, and zeroes the caller's bytes beyond that, so fields a
 *    newer caller knows and this kernel does not read as zero.
 */
#define KTAP_IOC_MAGIC		0xB9

/**
 * struct ktap_version - KTAP_IOC_VERSION: what the kernel side speaks
 * @size: in: sizeof(struct ktap_version) of the caller; out: the
 *	kernel's
 * @abi_version: KTAP_ABI_VERSION of the kernel
 * @nr_opcodes: KTAP_OP__COUNT of the kernel
 * @nr_builtins: builtin functions the kernel knows
 * @release: utsname release, NUL-terminated
 */
struct ktap_version {
	__u32	size;
	__u32	abi_version;
	__u32	nr_opcodes;
	__u32	nr_builtins;
	char	release[64];
};

#define KTAP_VERSION_SIZE_VER0	80

#define KTAP_LOAD_F_DRY_RUN	0x1	/* attach, but never run handlers */
#define KTAP_LOAD_F_VERBOSE	0x2	/* name each event a wildcard skips */
#define KTAP_LOAD_F_NO_FOLLOW	0x4	/* @pid only, not its descendants */
/*
 * Aggregations print as JSON objects, one line each, which start with
 * KTAP_JSON_MARK (RFC 7464's record separator) so that a reader tells
 * them from a script's own text.
 */
#define KTAP_LOAD_F_JSON	0x8
#define KTAP_JSON_MARK		0x1e

/**
 * struct ktap_load_attr - KTAP_IOC_LOAD: verify and load an image
 * @size: sizeof(struct ktap_load_attr) of the caller
 * @flags: KTAP_LOAD_F_*
 * @image: user pointer to the bytecode image
 * @image_len: its length, at most KTAP_MAX_IMAGE
 * @log_size: bytes at @log_buf; 0: no log
 * @log_buf: out: why the image was rejected, NUL-terminated
 * @mem_limit_kb: session memory pool; 0: the default
 * @insn_budget: instructions per handler run, at most
 *	KTAP_MAX_INSN_BUDGET; 0: the default
 * @pid: only this process (in the caller's pid namespace); -1: all
 * @cpu: only this CPU; -1: all
 * @buffer_kb: output ring buffer per CPU, at most KTAP_MAX_BUFFER_KB;
 *	0: the default (module parameter ktapvm.buffer_kb)
 * @__reserved: must be 0
 * @instance: user pointer to the NUL-terminated name of the tracing
 *	instance that receives the output, at most KTAP_INSTANCE_NAME_MAX
 *	bytes with the NUL, of letters, digits, '-', '_' and '.'; 0:
 *	"ktap-<session id>"
 */
struct ktap_load_attr {
	__u32		size;
	__u32		flags;
	__aligned_u64	image;
	__u32		image_len;
	__u32		log_size;
	__aligned_u64	log_buf;
	__u32		mem_limit_kb;
	__u32		insn_budget;
	__s32		pid;
	__s32		cpu;
	__u32		buffer_kb;
	__u32		__reserved[3];
	__aligned_u64	instance;
};

#define KTAP_LOAD_ATTR_SIZE_VER0	64	/* up to __reserved */
#define KTAP_MAX_BUFFER_KB		(64 * 1024)
#define KTAP_INSTANCE_NAME_MAX		64

/**
 * struct ktap_stats - KTAP_IOC_STATS: counters of the session
 * @size: in: sizeof(struct ktap_stats) of the caller; out: the kernel's
 * @state: enum ktap_session_state
 * @hits: handler runs
 * @drops: output records lost, handler runs throttled
 * @recursion: firings skipped because ktap was already running there
 * @errors: runtime errors
 * @mem_used: bytes of the session pool in use
 * @mem_limit: size of the session pool
 * @nr_attached: probes attached
 * @nr_skipped: events a tracepoint wildcard matched that could not be
 *	attached (the probe attached the others); KTAP_LOAD_F_VERBOSE
 *	names each in the output
 * @instance: name of the tracing instance with the session's output
 *	(tracing/instances/<instance>), NUL-terminated; empty before LOAD
 * @keys_dropped: stores of a new key into a table or aggregation that
 *	were dropped because the session's memory (LOAD mem_limit_kb) was
 *	full; the session went on without them
 */
struct ktap_stats {
	__u32		size;
	__u32		state;
	__aligned_u64	hits;
	__aligned_u64	drops;
	__aligned_u64	recursion;
	__aligned_u64	errors;
	__aligned_u64	mem_used;
	__aligned_u64	mem_limit;
	__u32		nr_attached;
	__u32		nr_skipped;
	char		instance[KTAP_INSTANCE_NAME_MAX];
	__aligned_u64	keys_dropped;
};

#define KTAP_STATS_SIZE_VER0	64	/* up to nr_skipped */
#define KTAP_STATS_SIZE_VER1	136	/* up to keys_dropped */

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
