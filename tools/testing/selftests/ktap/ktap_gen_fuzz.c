// SPDX-License-Identifier: GPL-2.0
/*
 * Generated-image fuzzer for the ktap tracer (ktap the tracer, not the
 * KTAP test output format, which this test prints).
 *
 * Unlike ktap_load_fuzz.c, which flips bits of a few tiny images, this
 * builds every image from the opcode table of <linux/ktap.h>: each
 * operand is valid for its operand kind (registers inside the frame,
 * constants of the right type, upvalues, globals, nested functions,
 * builtins named in the image's builtins section with an argument count
 * they accept, probes, fields-section entries), while control
 * flow, types and sizes are random, biased toward the shapes that two
 * verifier rules accepted one at a time can build together:
 * conditional branches as a function's last instruction, backward and
 * self loops (JMP, JMPT, JMPF, ITERNEXT), words between and after
 * functions, compares feeding JMPT/JMPF, EVFIELD reads, tracepoints by
 * SYSTEM:EVENT pattern (some matching nothing),
 * nested functions with upvalues, recursion, tables grown in loops then
 * walked by #t and the O(n) builtins, string concatenation loops,
 * instruction budgets near and above the ceiling, small memory pools.
 * About a third of the images carry one deliberate violation (an
 * operand out of range, a jump just outside the function, an unknown
 * opcode or builtin name, a bad fields entry, a bad load attribute...);
 * those must be rejected at LOAD, and
 * one that is accepted is a verifier escape.
 *
 * Each image runs in a child process, the process under test: open
 * tracing/ktap/control, LOAD, START (a SIGALRM interrupts a looping main
 * chunk), a few ms of getppid() while timer, profile, tracepoint and
 * kprobe handlers fire, STOP, read() to end of file, close. Its parent
 * is the watchdog: a child still there after the wall-clock limit gets
 * SIGKILL, and one that SIGKILL does not end within the second limit is
 * a hang. Two workers run images in parallel.
 *
 * Each worker makes a small tracing instance of its own (mkdir under
 * tracing/instances, 64 KiB a CPU) and names it at LOAD, so that an
 * accepted image does not pay for ktap making and removing an instance:
 * on the debug kernel (KASAN, kmemleak) LOAD and close spent about
 * 0.8 s there, most of an accepted image's time. Every 16th image ("-n N":
 * every Nth) still lets ktap make its own instance, ktap-<id>, so that
 * path stays fuzzed; "-n 1" gives every image its own. A hung child
 * still holds its session, so its worker goes on with a new instance.
 *
 * The test fails on a hang, a child that dies of another signal (an
 * oops kills the task), an unexpected errno, a verifier escape, or a new
 * kernel taint (warning, oops, bad page, soft lockup). KASAN, lockdep,
 * kmemleak and RCU stall reports are caught on the console by the
 * harness (make fuzz, harness/fuzz). Every image is a pure function of
 * (seed, index): "-i INDEX SEED" regenerates one, "-x" prints it
 * without running it, and the child process of image N is named kgfN,
 * so a console report names the image.
 *
 * Usage: ktap_gen_fuzz [-s seed] [-i index] [-x] [-v] [-D shapes] [-f file]
 *                      [-j workers] [-k hangs] [-n N] [-t seconds] [-w ms]
 *                      [count [seed]]
 * Environment: KTAP_GEN_FUZZ_COUNT, KTAP_GEN_FUZZ_SEED,
 * KTAP_GEN_FUZZ_SECONDS (stop starting images after that long; default
 * 200 when neither a count nor a seed is given), KTAP_GEN_FUZZ_WATCHDOG
 * (ms before SIGKILL, default 5000).
 */
#define _GNU_SOURCE
#define KI_MAX		256
#define KI_FUNCS	12
#define KI_PROBES	8
#define KI_STRTAB	8192
#define KI_GAPS		32
#define KI_BUILTINS	64
#define KI_FIELDS	16

#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <strings.h>
#include <time.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "../kselftest.h"
#include "ktap_image.h"

/*
 * Live code patching under load: in the test guests (QEMU TCG, 2 vCPUs),
 * patching code that another vCPU is executing was seen to oops the
 * kernel without ktap too: a kprobe inserted on or removed from
 * __x64_sys_getppid through tracefs kprobe_events while other processes
 * call getppid() ("RIP: 0010:0x0", "Oops: int3"), and a second probe
 * added to the sys_enter tracepoint by bpftrace while an ftrace event
 * was on ("Oops: int3" in syscall_trace_enter). A fuzzer that hit it
 * would report TCG, not ktap, so the images whose START and STOP patch
 * code (tracepoints, kprobes) run alone: no other child of this test
 * makes syscalls meanwhile (see excl_lock()), and kprobes go on a
 * syscall that only their own child calls.
 */
#define KPROBE_TARGET	"__x64_sys_getpgid"

#define NOWHERE		0xffffffffU
#define MAX_WORKERS	4
#define NR_ERRKINDS	48
#define DEF_COUNT	2000
#define DEF_SEED	0x67656e66757aULL	/* "genfuz" */
#define DEF_SECONDS	200

/* ------------------------------------------------------------------ */
/* The instruction set and the builtins, from the UAPI X-macros.       */

struct gen_opinfo {
	const char	*name;
	uint8_t		fmt;
	uint8_t		kind[3];
	uint32_t	flags;
};

#define GEN_OPINFO(op, fm, a, b, c, fl)					\
	[KTAP_OP_##op] = {						\
		.name = #op, .fmt = KTAP_FMT_##fm, .flags = fl,		\
		.kind = { KTAP_OPK_##a, KTAP_OPK_##b, KTAP_OPK_##c },	\
	},
static const struct gen_opinfo opinfo[KTAP_OP__COUNT] = {
	KTAP_OPCODES(GEN_OPINFO)
};

#undef GEN_OPINFO

/*
 * The builtins the kernel knows by name, with their arity: no longer in
 * the UAPI (builtin ids are not ABI), so this test keeps its own copy of
 * the kernel's list. CALLB names one through the image's builtins
 * section (bslot()). GEN_MAX_ARGS is "any number".
 */
#define GEN_MAX_ARGS	0xff
#define GEN_BF_EVENT	0x1	/* reads the event being handled */
#define GEN_BF_MAIN	0x2	/* main chunk and end handlers only */

#define GEN_BUILTINS(X)							\
	X(print,		0, GEN_MAX_ARGS, 0)				\
	X(printf,		1, GEN_MAX_ARGS, 0)				\
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
	X(print_hist,		1, 2, 0)					\
	X(ptable,		0, 1, GEN_BF_MAIN)				\
	X(count,		1, 1, 0)					\
	X(sum,			1, 1, 0)					\
	X(avg,			1, 1, 0)					\
	X(min,			1, 1, 0)					\
	X(max,			1, 1, 0)					\
	X(stack,		0, 2, 0)					\
	X(print_backtrace,	0, 0, 0)					\
	X(kernel_string,	1, 1, 0)					\
	X(user_string,		1, 1, 0)					\
	X(curr_taskinfo,	1, 2, 0)					\
	X(print_trace_clock,	0, 0, 0)					\
	X(probename,		0, 0, GEN_BF_EVENT)				\
	X(argstr,		0, 0, GEN_BF_EVENT)				\
	X(argn,			1, 1, GEN_BF_EVENT)				\
	X(tostring,		1, 1, 0)					\
	X(tonumber,		1, 1, 0)					\
	X(log2,			1, 1, 0)					\
	X(print_log2hist,	1, 1, 0)					\
	X(hist,			0, 1, GEN_BF_MAIN)				\
	X(lhist,		3, 4, GEN_BF_MAIN)				\
	X(stats,		0, 1, GEN_BF_MAIN)				\
	X(clear,		1, 1, 0)					\
	X(sprintf,		1, GEN_MAX_ARGS, 0)				\
	X(substr,		2, 3, 0)					\
	X(strcmp,		2, 2, 0)					\
	X(contains,		2, 2, 0)					\
	X(join,			1, 2, 0)					\
	X(sk_saddr,		1, 1, 0)					\
	X(sk_daddr,		1, 1, 0)					\
	X(ntop,			1, 1, 0)

#define GEN_BI_ENUM(bi, lo, hi, fl)	BI_##bi,
enum { GEN_BUILTINS(GEN_BI_ENUM) BI__COUNT };
#undef GEN_BI_ENUM

struct gen_biinfo {
	const char	*name;
	uint8_t		min, max, flags;
};

#define GEN_BIINFO(bi, lo, hi, fl)	\
	[BI_##bi] = { .name = #bi, .min = lo, .max = hi, .flags = fl },
static const struct gen_biinfo biinfo[BI__COUNT] = {
	GEN_BUILTINS(GEN_BIINFO)
};

/*
 * Names the kernel must refuse: made up, or builtins of the old
 * numbered table that the kernel dropped.
 */
static const char * const bad_builtins[] = {
	"ktap_no_such_builtin", "histogram", "gettimeofday_us",
	"kdebug_dumpstack", "inplace_inc", "Print", "print ", "",
};

/* The biinfo entry named @name, or -1 when the kernel does not know it. */
static int builtin_by_name(const char *name)
{
	int i;

	for (i = 0; i < BI__COUNT; i++)
		if (!strcmp(biinfo[i].name, name))
			return i;
	return -1;
}

#undef GEN_BIINFO

/* ------------------------------------------------------------------ */
/* What an image holds, for the reports.                               */

/* Shapes an image holds (for the reports and -D). */
enum {
	SH_SKIP_END,
	SH_GAP,
	SH_TAIL,
	SH_COND_BACK,
	SH_SELF_LOOP,
	SH_BACK_JUMP,
	SH_FOR,
	SH_ITER,
	SH_RECURSION,
	SH_UPVAL,
	SH_TABLE_GROW,
	SH_BIG_TABLE,
	SH_WALK,
	SH_WALK_LOOP,
	SH_CONCAT,
	SH_EVENT,
	SH_EV_ESCAPE,
	SH_SORT_CMP,
	SH_EXIT,
	SH_PRINT_LOOP,
	SH_AGGR,
	SH_BUDGET_BIG,
	SH_MEM_SMALL,
	SH_TIMER,
	SH_PROFILE,
	SH_TP,
	SH_KPROBE,
	SH_END,
	SH_DRY_RUN,
	SH_FILTER,
	SH_UNKNOWN_OP,
	SH_EVFIELD,
	SH_TP_NOMATCH,
	SH_FIELD_MISSING,
	SH__COUNT
};

static const char * const shape_name[SH__COUNT] = {
	[SH_SKIP_END] = "SKIP_END",
	[SH_GAP] = "GAP",
	[SH_TAIL] = "TAIL",
	[SH_COND_BACK] = "COND_BACK",
	[SH_SELF_LOOP] = "SELF_LOOP",
	[SH_BACK_JUMP] = "BACK_JUMP",
	[SH_FOR] = "FOR",
	[SH_ITER] = "ITER",
	[SH_RECURSION] = "RECURSION",
	[SH_UPVAL] = "UPVAL",
	[SH_TABLE_GROW] = "TABLE_GROW",
	[SH_BIG_TABLE] = "BIG_TABLE",
	[SH_WALK] = "WALK",
	[SH_WALK_LOOP] = "WALK_LOOP",
	[SH_CONCAT] = "CONCAT",
	[SH_EVENT] = "EVENT",
	[SH_EV_ESCAPE] = "EV_ESCAPE",
	[SH_SORT_CMP] = "SORT_CMP",
	[SH_EXIT] = "EXIT",
	[SH_PRINT_LOOP] = "PRINT_LOOP",
	[SH_AGGR] = "AGGR",
	[SH_BUDGET_BIG] = "BUDGET_BIG",
	[SH_MEM_SMALL] = "MEM_SMALL",
	[SH_TIMER] = "TIMER",
	[SH_PROFILE] = "PROFILE",
	[SH_TP] = "TP",
	[SH_KPROBE] = "KPROBE",
	[SH_END] = "END",
	[SH_DRY_RUN] = "DRY_RUN",
	[SH_FILTER] = "FILTER",
	[SH_UNKNOWN_OP] = "UNKNOWN_OP",
	[SH_EVFIELD] = "EVFIELD",
	[SH_TP_NOMATCH] = "TP_NOMATCH",
	[SH_FIELD_MISSING] = "FIELD_MISSING",
};

static const char * const shape_desc[SH__COUNT] = {
	[SH_SKIP_END] = "conditional branch (JMPT/JMPF/ITERNEXT) last",
	[SH_GAP] = "words between functions",
	[SH_TAIL] = "words after the last function",
	[SH_COND_BACK] = "JMPT/JMPF with a negative offset",
	[SH_SELF_LOOP] = "instruction jumping to itself",
	[SH_BACK_JUMP] = "backward JMP/ITERNEXT",
	[SH_FOR] = "numeric for loop",
	[SH_ITER] = "pairs/sort_pairs iteration",
	[SH_RECURSION] = "call through a global closure",
	[SH_UPVAL] = "nested function with upvalues",
	[SH_TABLE_GROW] = "table grown in a loop",
	[SH_BIG_TABLE] = "10^4-10^5 entry table walked by handlers",
	[SH_WALK] = "#t/len/pairs/sort_pairs/print_hist/count",
	[SH_WALK_LOOP] = "O(n) builtin inside a loop",
	[SH_CONCAT] = "string concatenation loop",
	[SH_EVENT] = "event fields and methods",
	[SH_EV_ESCAPE] = "event or method kept past its handler",
	[SH_SORT_CMP] = "sort_pairs with a script comparator",
	[SH_EXIT] = "exit()",
	[SH_PRINT_LOOP] = "output in a loop",
	[SH_AGGR] = "ptable aggregation",
	[SH_BUDGET_BIG] = "insn_budget near/above the ceiling",
	[SH_MEM_SMALL] = "mem_limit below 1 MB",
	[SH_TIMER] = "timer probe",
	[SH_PROFILE] = "profile probe",
	[SH_TP] = "tracepoint probe",
	[SH_KPROBE] = "kprobe",
	[SH_END] = "END probe",
	[SH_DRY_RUN] = "dry run",
	[SH_FILTER] = "pid or cpu filter",
	[SH_UNKNOWN_OP] = "unknown opcode value",
	[SH_EVFIELD] = "EVFIELD over the fields section",
	[SH_TP_NOMATCH] = "tracepoint pattern matching nothing (START fails)",
	[SH_FIELD_MISSING] = "field no matched event has (START fails)",
};

/* Deliberate violations: an image with one must be refused at LOAD. */
enum {
	V_REG,
	V_CONST,
	V_KTYPE,
	V_UPV,
	V_GLOBAL,
	V_PROTO,
	V_BOOL,
	V_NONZERO,
	V_BUILTIN,
	V_ARGC,
	V_PROBE,
	V_JUMP,
	V_OPCODE,
	V_BUILTIN_NAME,
	V_LAST,
	V_MAIN_ONLY,
	V_UPV_DESC,
	V_NREGS,
	V_PARENT,
	V_SKIP_END,
	V_GAP,
	V_BUDGET,
	V_MEM,
	V_PERIOD,
	V_PROBE_TYPE,
	V_FIELD,
	V__COUNT
};

static const char * const viol_name[V__COUNT] = {
	[V_REG] = "REG",
	[V_CONST] = "CONST",
	[V_KTYPE] = "KTYPE",
	[V_UPV] = "UPV",
	[V_GLOBAL] = "GLOBAL",
	[V_PROTO] = "PROTO",
	[V_BOOL] = "BOOL",
	[V_NONZERO] = "NONZERO",
	[V_BUILTIN] = "BUILTIN",
	[V_ARGC] = "ARGC",
	[V_PROBE] = "PROBE",
	[V_JUMP] = "JUMP",
	[V_OPCODE] = "OPCODE",
	[V_BUILTIN_NAME] = "BUILTIN_NAME",
	[V_LAST] = "LAST",
	[V_MAIN_ONLY] = "MAIN_ONLY",
	[V_UPV_DESC] = "UPV_DESC",
	[V_NREGS] = "NREGS",
	[V_PARENT] = "PARENT",
	[V_SKIP_END] = "BRANCH_END",
	[V_GAP] = "GAP",
	[V_BUDGET] = "BUDGET",
	[V_MEM] = "MEM",
	[V_PERIOD] = "PERIOD",
	[V_PROBE_TYPE] = "PROBE_TYPE",
	[V_FIELD] = "FIELD",
};

static const char * const viol_desc[V__COUNT] = {
	[V_REG] = "register out of range",
	[V_CONST] = "constant out of range",
	[V_KTYPE] = "constant of the wrong type",
	[V_UPV] = "upvalue out of range",
	[V_GLOBAL] = "global out of range",
	[V_PROTO] = "function not nested here",
	[V_BOOL] = "boolean operand above 1",
	[V_NONZERO] = "unused operand not zero",
	[V_BUILTIN] = "CALLB past the builtins section",
	[V_ARGC] = "builtin argument count",
	[V_PROBE] = "probe index out of range",
	[V_JUMP] = "jump target outside the function",
	[V_OPCODE] = "unknown opcode in a function",
	[V_BUILTIN_NAME] = "a builtin name the kernel does not know",
	[V_LAST] = "function not ending in RETURN or JMP",
	[V_MAIN_ONLY] = "ATTACH outside the main chunk",
	[V_UPV_DESC] = "upvalue capture out of range",
	[V_NREGS] = "bad frame size",
	[V_PARENT] = "bad enclosing function",
	[V_SKIP_END] = "conditional branch falling past the function end",
	[V_GAP] = "code words that no function covers",
	[V_BUDGET] = "insn_budget above the ceiling",
	[V_MEM] = "mem_limit out of range",
	[V_PERIOD] = "timer or profile period out of range",
	[V_PROBE_TYPE] = "unknown probe type",
	[V_FIELD] = "fields entry or EVFIELD out of range",
};

/* Shadow types of registers: a bias for operand choice, not a rule. */
enum {
	TY_NIL, TY_INT, TY_STR, TY_TAB, TY_PTAB, TY_FN, TY_ITER, TY_EV,
	TY_BOOL, TY_ANY,
};

#define TM(t)		(1U << (t))
#define TM_ALL		0xffffU
#define TM_KEY		(TM(TY_INT) | TM(TY_STR))

enum jump_how { J_ANY, J_FWD, J_BACK, J_SELF, J_LAST, J_FIRST };

struct fixup {
	uint16_t	at;
	uint8_t		how;
};

/* Everything about one image: what was generated and how to run it. */
struct gen {
	uint64_t	s;		/* xorshift64* state */
	unsigned long	index;
	struct ki_image	*im;
	/* plan */
	uint32_t	nglobals;
	uint32_t	g_tab, g_fn, g_ev, g_ptab, g_any;
	uint32_t	kint[KI_MAX], nkint;
	uint32_t	kstr[KI_MAX], nkstr;
	uint32_t	k_tostring, k_name, k_setretval, k_fmt_d, k_fmt_s;
	uint32_t	kids[KI_FUNCS][KI_FUNCS], nkids[KI_FUNCS];
	bool		handler[KI_FUNCS];
	uint32_t	nprobes, big_n;
	/* the function being generated */
	uint32_t	pi, skip_end_fn;
	struct ki_func	*f;
	uint8_t		ty[256];
	uint8_t		prot[256];
	struct fixup	fix[KI_MAX];
	uint32_t	nfix;
	int		depth;
	/* what the image holds */
	uint64_t	shapes;
	uint32_t	viol;
	/* load and run */
	uint32_t	budget, mem_kb, flags, run_ms, alarm_ms;
	int		pid_filter, cpu;
};

/* ------------------------------------------------------------------ */
/* Random numbers: xorshift64*, one stream per image.                  */

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint32_t rnd(struct gen *g)
{
	g->s ^= g->s >> 12;
	g->s ^= g->s << 25;
	g->s ^= g->s >> 27;
	return (g->s * 0x2545f4914f6cdd1dULL) >> 32;
}

static uint32_t below(struct gen *g, uint32_t n)
{
	return n ? rnd(g) % n : 0;
}

static bool chance(struct gen *g, uint32_t pct)
{
	return below(g, 100) < pct;
}

#define PICK(g, arr)	((arr)[below(g, sizeof(arr) / sizeof((arr)[0]))])

/* ------------------------------------------------------------------ */
/* Global settings (set once in main, read by the workers).            */

/* syscall events exist: gates the tracepoint probes (see plan_probes) */
static int ev_enter = -1;
static uint32_t ceiling = UINT32_MAX;	/* largest accepted insn_budget */
static bool have_ceiling;
static int verbose;
static uint64_t disabled;		/* shapes not to generate (-D) */

static bool allowed(int shape)
{
	return !(disabled & (1ULL << shape));
}

/* ------------------------------------------------------------------ */
/* Constants.                                                          */

static uint32_t add_kint(struct gen *g, int64_t v)
{
	uint32_t i, k;

	for (i = 0; i < g->nkint; i++)
		if (g->im->k[g->kint[i]].val == v)
			return g->kint[i];
	if (g->im->nk >= KI_MAX - 1)
		return g->kint[below(g, g->nkint)];
	k = ki_kint(g->im, v);
	g->kint[g->nkint++] = k;
	return k;
}

static uint32_t add_kstr(struct gen *g, const char *s)
{
	uint32_t k;

	if (g->im->nk >= KI_MAX - 1 ||
	    g->im->nstr + strlen(s) + 64 >= KI_STRTAB)
		return g->nkstr ? g->kstr[below(g, g->nkstr)] : NOWHERE;
	k = ki_kstr(g->im, s);
	g->kstr[g->nkstr++] = k;
	return k;
}

static void make_consts(struct gen *g)
{
	static const int64_t ints[] = {
		0, 1, 2, 3, -1, 7, 10, 100, 1000, 4096, 32767, 100000,
		INT64_MAX, INT64_MIN, 1LL << 32, -100000,
	};
	static const char * const strs[] = {
		"", "x", "k", "name", "ktap", "%s %d\n", "%d %d %d\n",
		"%s", "probe end\n", "a b c", "sc_is_enter", "pid",
	};
	char buf[600];
	uint32_t i, n;

	g->k_tostring = add_kstr(g, "tostring");
	g->k_name = add_kstr(g, "name");
	g->k_setretval = add_kstr(g, "set_retval");
	g->k_fmt_d = add_kstr(g, "%d\n");
	g->k_fmt_s = add_kstr(g, "%s\n");
	add_kint(g, 1);
	add_kint(g, 0);
	n = below(g, 12);
	for (i = 0; i < n; i++)
		add_kint(g, chance(g, 70) ? PICK(g, ints) :
			 (int64_t)((uint64_t)rnd(g) << 32 | rnd(g)));
	n = below(g, 8);
	for (i = 0; i < n; i++) {
		if (chance(g, 75)) {
			add_kstr(g, PICK(g, strs));
		} else {
			uint32_t len = chance(g, 80) ? 1 + below(g, 20) :
				       200 + below(g, 400), j;

			for (j = 0; j < len; j++)
				buf[j] = 'a' + below(g, 26);
			buf[len] = '\0';
			add_kstr(g, buf);
		}
	}
}

/* ------------------------------------------------------------------ */
/* Registers and emission.                                             */

static uint32_t nregs(struct gen *g)
{
	return g->f->nregs;
}

static uint32_t any_reg(struct gen *g)
{
	uint32_t n = nregs(g);

	if (n > 12 && chance(g, 75))
		return below(g, 12);
	return below(g, n);
}

/* A destination register, sparing the ones a template loop relies on. */
static uint32_t dst_reg(struct gen *g)
{
	uint32_t r, tries;

	for (tries = 0; tries < 8; tries++) {
		r = any_reg(g);
		if (!g->prot[r])
			return r;
	}
	return r;
}

/* Base of @n consecutive unprotected registers, or NOWHERE. */
static uint32_t block(struct gen *g, uint32_t n)
{
	uint32_t base, tries, j;

	if (n > nregs(g))
		return NOWHERE;
	for (tries = 0; tries < 8; tries++) {
		base = below(g, nregs(g) - n + 1);
		for (j = 0; j < n && !g->prot[base + j]; j++)
			;
		if (j == n)
			return base;
	}
	return NOWHERE;
}

static void protect(struct gen *g, uint32_t base, uint32_t n, int on)
{
	uint32_t j;

	for (j = 0; j < n && base + j < 256; j++)
		g->prot[base + j] += on;
}

static uint32_t room(struct gen *g)
{
	return KI_MAX - g->f->ncode;
}

static uint32_t pc(struct gen *g)
{
	return g->f->ncode;
}

static uint32_t emit(struct gen *g, uint32_t insn)
{
	uint32_t at = g->f->ncode;

	ki_op(g->f, insn);
	return at;
}

static void set_sbx(struct gen *g, uint32_t at, int64_t target)
{
	int32_t off = (int32_t)(target - (int64_t)at - 1);

	g->f->code[at] = (g->f->code[at] & 0xffff) | ((uint32_t)off & 0xffff) << 16;
}

static void add_fixup(struct gen *g, uint32_t at, enum jump_how how)
{
	g->fix[g->nfix].at = at;
	g->fix[g->nfix].how = how;
	g->nfix++;
}

static enum jump_how random_how(struct gen *g)
{
	uint32_t r = below(g, 100);

	if (r < 40)
		return J_FWD;
	if (r < 65)
		return J_BACK;
	if (r < 83)
		return J_ANY;
	if (r < 88)
		return J_SELF;
	if (r < 95)
		return J_LAST;
	return J_FIRST;
}

/*
 * CALLB's C for builtin @id: its index in the image's builtins section,
 * where the name is added on first use.
 */
static uint32_t bslot(struct gen *g, uint32_t id)
{
	return ki_builtin(g->im, biinfo[id].name);
}

static void load_int(struct gen *g, uint32_t r, int64_t v)
{
	if (v >= -32768 && v <= 32767)
		emit(g, KTAP_INSN_BX(KTAP_OP_LOADI, r, v));
	else
		emit(g, KTAP_INSN_BX(KTAP_OP_LOADK, r, add_kint(g, v)));
	g->ty[r] = TY_INT;
}

/*
 * A register whose shadow type is in @mask, most of the time; when there
 * is none, often load one first (an integer or a new table), so that
 * random code runs further before a type error ends it.
 */
static uint32_t reg_of(struct gen *g, uint32_t mask)
{
	uint32_t cand[256], n = 0, r;

	if (mask == TM_ALL || !chance(g, 85))
		return any_reg(g);
	for (r = 0; r < nregs(g); r++)
		if (TM(g->ty[r]) & mask)
			cand[n++] = r;
	if (n)
		return cand[below(g, n)];
	r = dst_reg(g);
	if (g->prot[r] || room(g) < 12 || !chance(g, 70))
		return r;
	if (mask & TM(TY_INT)) {
		load_int(g, r, (int64_t)below(g, 100) - 10);
	} else if (mask & TM(TY_TAB)) {
		ki_op(g->f, KTAP_INSN(KTAP_OP_NEWTABLE, r, 0, 0));
		g->ty[r] = TY_TAB;
	}
	return r;
}

/* ------------------------------------------------------------------ */
/* One random instruction, from the opcode table.                      */

/* Shadow type an operand is best given (index 0: A, 1: B, 2: C). */
static uint32_t want(uint32_t op, int k)
{
	switch (op) {
	case KTAP_OP_GETTABLE:
		return k == 1 ? TM(TY_TAB) | TM(TY_PTAB) : TM_KEY;
	case KTAP_OP_GETFIELD:
		return TM(TY_TAB) | TM(TY_EV) | TM(TY_PTAB);
	case KTAP_OP_SETTABLE:
	case KTAP_OP_SETFIELD:
		return k == 0 ? TM(TY_TAB) : k == 1 ? TM_KEY : TM_ALL;
	case KTAP_OP_INCTABLE:
		return k == 0 ? TM(TY_TAB) : k == 1 ? TM_KEY : TM(TY_INT);
	case KTAP_OP_AGGR:
		return k == 0 ? TM(TY_PTAB) : k == 1 ? TM_KEY : TM(TY_INT);
	case KTAP_OP_ADD: case KTAP_OP_SUB: case KTAP_OP_MUL:
	case KTAP_OP_DIV: case KTAP_OP_MOD:
	case KTAP_OP_ADDK: case KTAP_OP_SUBK: case KTAP_OP_MULK:
	case KTAP_OP_DIVK: case KTAP_OP_MODK: case KTAP_OP_UNM:
	case KTAP_OP_LT: case KTAP_OP_LE:
		return TM(TY_INT);
	case KTAP_OP_LEN:
		return TM(TY_TAB) | TM(TY_STR);
	case KTAP_OP_CONCAT:
		return TM_KEY;
	case KTAP_OP_CALL:
	case KTAP_OP_ATTACH:
		return k == 0 ? TM(TY_FN) : TM_ALL;
	case KTAP_OP_JMPT:
	case KTAP_OP_JMPF:
		return TM(TY_BOOL) | TM(TY_INT) | TM(TY_NIL);
	case KTAP_OP_ITERNEXT:
		return TM(TY_ITER);
	default:
		return TM_ALL;
	}
}

/* Does operand A of @op name a register the instruction writes? */
static bool writes_a(uint32_t op)
{
	switch (op) {
	case KTAP_OP_SETUPVAL: case KTAP_OP_SETGLOBAL: case KTAP_OP_SETTABLE:
	case KTAP_OP_SETFIELD: case KTAP_OP_INCTABLE: case KTAP_OP_AGGR:
	case KTAP_OP_JMPT: case KTAP_OP_JMPF: case KTAP_OP_RETURN:
	case KTAP_OP_ATTACH: case KTAP_OP_CALL: case KTAP_OP_ITERNEXT:
		return false;
	default:
		return opinfo[op].kind[0] == KTAP_OPK_REG;
	}
}

static uint8_t builtin_type(uint32_t id)
{
	switch (id) {
	case BI_pairs: case BI_sort_pairs:
		return TY_ITER;
	case BI_ptable: case BI_hist: case BI_lhist: case BI_stats:
		return TY_PTAB;
	case BI_len: case BI_table_count: case BI_cpu:
	case BI_pid: case BI_tid: case BI_uid:
	case BI_num_cpus: case BI_gettimeofday_ns:
	case BI_log2: case BI_strcmp:
		return TY_INT;
	case BI_execname: case BI_arch: case BI_kernel_v:
	case BI_tostring: case BI_probename: case BI_argstr:
	case BI_sprintf: case BI_substr: case BI_join:
		return TY_STR;
	default:
		return TY_ANY;
	}
}

static void note_jump_shape(struct gen *g, uint32_t op, enum jump_how how)
{
	if (how == J_SELF)
		g->shapes |= 1ULL << SH_SELF_LOOP;
	if (how == J_BACK || how == J_SELF || how == J_FIRST) {
		if (op == KTAP_OP_JMPT || op == KTAP_OP_JMPF)
			g->shapes |= 1ULL << SH_COND_BACK;
		else
			g->shapes |= 1ULL << SH_BACK_JUMP;
	}
}

/*
 * Emit @op with operands valid for their kinds; false when this function
 * offers no valid operand (no upvalue, no nested function, ...).
 */
static bool gen_insn(struct gen *g, uint32_t op)
{
	const struct gen_opinfo *oi = &opinfo[op];
	uint32_t v[3] = { 0, 0, 0 }, n = nregs(g), insn, at, bi = 0;
	enum jump_how how = J_ANY;
	bool jump = false;
	int k;

	if ((oi->flags & KTAP_OPF_MAIN) && g->pi)
		return false;
	if (op == KTAP_OP_CALLB) {
		/* the builtin decides the count operand */
		uint32_t tries;

		for (tries = 0; tries < 16; tries++) {
			bi = below(g, BI__COUNT);
			/* exit() ends the session: keep it rare */
			if (bi == BI_exit && chance(g, 80))
				continue;
			if (biinfo[bi].min < n)
				break;
		}
		if (tries == 16)
			return false;
	}
	for (k = 0; k < 3; k++) {
		if (k == 2 && oi->fmt != KTAP_FMT_ABC)
			break;
		switch (oi->kind[k]) {
		case KTAP_OPK_NONE:
			v[k] = 0;
			break;
		case KTAP_OPK_REG:
			if (k == 0 && writes_a(op))
				v[k] = dst_reg(g);
			else
				v[k] = reg_of(g, want(op, k));
			break;
		case KTAP_OPK_REG3:
			if (n < 3)
				return false;
			v[k] = reg_of(g, want(op, k));
			if (v[k] + 2 >= n)
				v[k] = below(g, n - 2);
			break;
		case KTAP_OPK_RCNT: {
			uint32_t max = n - 1 - v[0], lo = 0;

			if (op == KTAP_OP_CALLB) {
				lo = biinfo[bi].min;
				if (lo > max)
					return false;
				if (biinfo[bi].max < max)
					max = biinfo[bi].max;
			}
			v[k] = lo + (chance(g, 80) ? below(g, max - lo + 1 < 4 ?
						       max - lo + 1 : 4)
					   : below(g, max - lo + 1));
			break;
		}
		case KTAP_OPK_NVAL: {
			uint32_t max = n - v[0];

			v[k] = chance(g, 80) ? below(g, max + 1 < 4 ? max + 1 : 4)
					     : below(g, max + 1);
			break;
		}
		case KTAP_OPK_K:
			v[k] = below(g, g->im->nk);
			break;
		case KTAP_OPK_KINT:
			v[k] = g->kint[below(g, g->nkint)];
			break;
		case KTAP_OPK_KSTR:
			if (op == KTAP_OP_GETFIELD && chance(g, 50))
				v[k] = chance(g, 60) ? g->k_tostring :
				       chance(g, 50) ? g->k_name : g->k_setretval;
			else
				v[k] = g->kstr[below(g, g->nkstr)];
			break;
		case KTAP_OPK_UPV:
			if (!g->f->nupvals)
				return false;
			v[k] = below(g, g->f->nupvals);
			break;
		case KTAP_OPK_GLOBAL:
			if (!g->nglobals)
				return false;
			v[k] = below(g, g->nglobals);
			break;
		case KTAP_OPK_PROTO:
			if (!g->nkids[g->pi])
				return false;
			v[k] = g->kids[g->pi][below(g, g->nkids[g->pi])];
			break;
		case KTAP_OPK_JUMP:
			jump = true;
			how = random_how(g);
			if (how == J_SELF && !allowed(SH_SELF_LOOP))
				how = J_FWD;
			if ((how == J_BACK || how == J_SELF || how == J_FIRST) &&
			    !allowed(opinfo[op].flags & KTAP_OPF_BRANCH &&
				     op != KTAP_OP_ITERNEXT ? SH_COND_BACK : SH_BACK_JUMP))
				how = J_FWD;
			v[k] = 0;
			break;
		case KTAP_OPK_IMM:
			if (oi->fmt == KTAP_FMT_ASBX)
				v[k] = chance(g, 70) ? below(g, 21) - 10 :
				       rnd(g) & 0xffff;
			else
				v[k] = chance(g, 80) ? below(g, 9) : below(g, 256);
			break;
		case KTAP_OPK_BOOL:
			v[k] = below(g, 2);
			break;
		case KTAP_OPK_BUILTIN:
			v[k] = bslot(g, bi);
			break;
		case KTAP_OPK_FIELD:
			if (!g->im->nfl)
				return false;
			v[k] = below(g, g->im->nfl);
			g->shapes |= 1ULL << SH_EVFIELD;
			break;
		case KTAP_OPK_PROBE:
			if (!g->nprobes)
				return false;
			v[k] = below(g, g->nprobes);
			break;
		default:
			/* an operand kind this test does not know yet */
			v[k] = 0;
			break;
		}
	}
	if (oi->fmt == KTAP_FMT_ABC)
		insn = KTAP_INSN(op, v[0], v[1], v[2]);
	else
		insn = KTAP_INSN_BX(op, v[0], v[1]);
	at = emit(g, insn);
	if (jump) {
		add_fixup(g, at, how);
		note_jump_shape(g, op, how);
	}

	/* shadow types of what it wrote */
	switch (op) {
	case KTAP_OP_MOVE:
		g->ty[v[0]] = g->ty[v[1]];
		break;
	case KTAP_OP_LOADK:
		g->ty[v[0]] = g->im->k[v[1]].type == KTAP_BC_CONST_INT ?
			      TY_INT : TY_STR;
		break;
	case KTAP_OP_LOADNIL:
		for (k = 0; k <= (int)v[1]; k++)
			g->ty[v[0] + k] = TY_NIL;
		break;
	case KTAP_OP_GETGLOBAL:
		g->ty[v[0]] = v[1] == g->g_tab ? TY_TAB :
			      v[1] == g->g_fn ? TY_FN :
			      v[1] == g->g_ptab ? TY_PTAB : TY_ANY;
		break;
	case KTAP_OP_CALLB:
		g->ty[v[0]] = builtin_type(bi);
		break;
	case KTAP_OP_CALL:
		for (k = 0; k < (int)v[2]; k++)
			g->ty[v[0] + k] = TY_ANY;
		break;
	case KTAP_OP_ITERNEXT:
		g->ty[v[0] + 1] = TY_ANY;
		g->ty[v[0] + 2] = TY_ANY;
		break;
	default:
		if (!writes_a(op))
			break;
		switch (op) {
		case KTAP_OP_LOADI: case KTAP_OP_ADD: case KTAP_OP_SUB:
		case KTAP_OP_MUL: case KTAP_OP_DIV: case KTAP_OP_MOD:
		case KTAP_OP_ADDK: case KTAP_OP_SUBK: case KTAP_OP_MULK:
		case KTAP_OP_DIVK: case KTAP_OP_MODK: case KTAP_OP_UNM:
		case KTAP_OP_LEN:
			g->ty[v[0]] = TY_INT;
			break;
		case KTAP_OP_LOADBOOL: case KTAP_OP_NOT: case KTAP_OP_EQ:
		case KTAP_OP_LT: case KTAP_OP_LE: case KTAP_OP_EQK:
			g->ty[v[0]] = TY_BOOL;
			break;
		case KTAP_OP_NEWTABLE:
			g->ty[v[0]] = TY_TAB;
			break;
		case KTAP_OP_CONCAT:
			g->ty[v[0]] = TY_STR;
			break;
		case KTAP_OP_CLOSURE:
			g->ty[v[0]] = TY_FN;
			break;
		default:
			g->ty[v[0]] = TY_ANY;
			break;
		}
	}
	return true;
}

/* Opcode weights for the random parts: every opcode of the table. */
static uint32_t random_op(struct gen *g)
{
	uint32_t op;

	op = below(g, KTAP_OP__COUNT);
	/* a little more of what calls, loops and touches tables */
	if (chance(g, 25)) {
		static const uint32_t hot[] = {
			KTAP_OP_CALLB, KTAP_OP_CALL, KTAP_OP_SETTABLE,
			KTAP_OP_GETTABLE, KTAP_OP_INCTABLE, KTAP_OP_JMP,
			KTAP_OP_JMPT, KTAP_OP_ADD, KTAP_OP_EQ, KTAP_OP_JMPF,
			KTAP_OP_LT, KTAP_OP_EVFIELD,
			KTAP_OP_GETGLOBAL, KTAP_OP_CLOSURE, KTAP_OP_CONCAT,
		};
		op = PICK(g, hot);
	}
	return op;
}

static void random_insns(struct gen *g, uint32_t n)
{
	uint32_t i, tries;

	for (i = 0; i < n && room(g) > 8; i++)
		for (tries = 0; tries < 16; tries++)
			if (gen_insn(g, random_op(g)))
				break;
}

/* ------------------------------------------------------------------ */
/* Templates: the shapes random code seldom builds on its own.         */

static void body(struct gen *g, uint32_t loopvar);

/* The compares: each stores a boolean that JMPT/JMPF then tests. */
static const uint32_t cmp_ops[] = {
	KTAP_OP_EQ, KTAP_OP_LT, KTAP_OP_LE, KTAP_OP_EQK,
};

/* CALLB builtin @id with the values of @args (registers); returns A. */
static uint32_t call_builtin(struct gen *g, uint32_t id, const uint32_t *args,
			     uint32_t nargs)
{
	uint32_t a = block(g, nargs + 1), j;

	if (a == NOWHERE || room(g) < nargs + 4)
		return NOWHERE;
	for (j = 0; j < nargs; j++) {
		if (args[j] != a + 1 + j)
			emit(g, KTAP_INSN(KTAP_OP_MOVE, a + 1 + j, args[j], 0));
		g->ty[a + 1 + j] = g->ty[args[j]];
	}
	emit(g, KTAP_INSN(KTAP_OP_CALLB, a, nargs, bslot(g, id)));
	g->ty[a] = builtin_type(id);
	return a;
}

/* A table register: an existing one, the global table, or a new one. */
static uint32_t get_table(struct gen *g)
{
	uint32_t r;

	if (chance(g, 50)) {
		r = reg_of(g, TM(TY_TAB));
		if (g->ty[r] == TY_TAB)
			return r;
	}
	r = dst_reg(g);
	if (g->g_tab != NOWHERE && chance(g, 50))
		emit(g, KTAP_INSN_BX(KTAP_OP_GETGLOBAL, r, g->g_tab));
	else
		emit(g, KTAP_INSN(KTAP_OP_NEWTABLE, r, chance(g, 80) ? 0 : below(g, 256),
				  chance(g, 80) ? 0 : below(g, 256)));
	g->ty[r] = TY_TAB;
	return r;
}

/* A function register: a closure of a nested function, or the global. */
static uint32_t get_function(struct gen *g)
{
	uint32_t r = dst_reg(g);

	if (g->nkids[g->pi] && chance(g, 60)) {
		emit(g, KTAP_INSN_BX(KTAP_OP_CLOSURE, r,
				     g->kids[g->pi][below(g, g->nkids[g->pi])]));
	} else if (g->g_fn != NOWHERE) {
		emit(g, KTAP_INSN_BX(KTAP_OP_GETGLOBAL, r, g->g_fn));
		g->shapes |= 1ULL << SH_RECURSION;
	} else {
		return NOWHERE;
	}
	g->ty[r] = TY_FN;
	return r;
}

/* Iterate over iterator register @it: JMP to ITERNEXT; body; ITERNEXT back. */
static void iterate(struct gen *g, uint32_t it)
{
	uint32_t a, j, top, itn;

	if (it == NOWHERE || room(g) < 16)
		return;
	a = block(g, 3);	/* ITERNEXT: A..A+2 */
	if (a == NOWHERE)
		return;
	if (a != it)
		emit(g, KTAP_INSN(KTAP_OP_MOVE, a, it, 0));
	g->ty[a] = TY_ITER;
	protect(g, a, 3, 1);
	j = emit(g, KTAP_INSN_BX(KTAP_OP_JMP, 0, 0));
	top = pc(g);
	if (chance(g, 50)) {
		uint32_t args[2] = { a + 1, a + 2 };

		call_builtin(g, BI_print, args, 2);
	} else {
		body(g, a + 1);
	}
	itn = emit(g, KTAP_INSN_BX(KTAP_OP_ITERNEXT, a, 0));
	set_sbx(g, itn, chance(g, 5) ? itn : top);
	set_sbx(g, j, itn);
	protect(g, a, 3, -1);
	g->shapes |= 1ULL << SH_ITER | 1ULL << SH_BACK_JUMP;
}

/* The O(n) operations on table register @t. */
static void walk(struct gen *g, uint32_t t)
{
	static const uint32_t ids[] = {
		BI_len, BI_table_count, BI_pairs,
		BI_sort_pairs, BI_print_hist,
		BI_print_log2hist, BI_delete,
	};
	uint32_t id, args[2], r;

	if (room(g) < 24)
		return;
	g->shapes |= 1ULL << SH_WALK;
	if (chance(g, 25)) {
		r = dst_reg(g);
		emit(g, KTAP_INSN(KTAP_OP_LEN, r, t, 0));
		g->ty[r] = TY_INT;
		return;
	}
	id = PICK(g, ids);
	args[0] = t;
	if (id == BI_sort_pairs && chance(g, 60)) {
		args[1] = get_function(g);
		if (args[1] != NOWHERE) {
			g->shapes |= 1ULL << SH_SORT_CMP;
			r = call_builtin(g, id, args, 2);
			iterate(g, r);
			return;
		}
	}
	if (id == BI_delete && chance(g, 50)) {
		args[1] = reg_of(g, TM_KEY);
		call_builtin(g, id, args, 2);
		return;
	}
	r = call_builtin(g, id, args, 1);
	if ((id == BI_pairs || id == BI_sort_pairs) && chance(g, 70))
		iterate(g, r);
}

/*
 * A counted loop as the compiler emits one (there is no loop
 * instruction): registers a (the counter, also the loop variable),
 * a + 1 (the limit), a + 2 (the step), a + 3 (the condition).
 * loop_head() emits "R(a+3) := R(a) <= R(a+1)" (>= for a negative step)
 * and the JMPF out, and returns the JMPF; loop_tail() adds the step,
 * jumps back to the compare and aims the JMPF past the loop.
 */
static uint32_t loop_head(struct gen *g, uint32_t a, bool down)
{
	if (down)
		emit(g, KTAP_INSN(KTAP_OP_LE, a + 3, a + 1, a));
	else
		emit(g, KTAP_INSN(KTAP_OP_LE, a + 3, a, a + 1));
	g->ty[a + 3] = TY_BOOL;
	return emit(g, KTAP_INSN_BX(KTAP_OP_JMPF, a + 3, 0));
}

static void loop_tail(struct gen *g, uint32_t a, uint32_t jf, bool self)
{
	uint32_t back;

	emit(g, KTAP_INSN(KTAP_OP_ADD, a, a, a + 2));
	back = emit(g, KTAP_INSN_BX(KTAP_OP_JMP, 0, 0));
	/* now and then the JMP back loops on itself: only the budget ends it */
	set_sbx(g, back, self ? back : jf - 1);
	if (self)
		g->shapes |= 1ULL << SH_SELF_LOOP;
	set_sbx(g, jf, pc(g));
	g->shapes |= 1ULL << SH_BACK_JUMP;
}

/*
 * for v = start, limit, step do body end. Sometimes a JMPT on a true
 * condition jumps backward instead (to itself or into the loads before
 * it): a conditional loop only the budget ends.
 */
static void for_loop(struct gen *g, int kind)
{
	static const int64_t limits[] = { 0, 1, 3, 10, 100, 1000, 30000, 100000 };
	int64_t limit = PICK(g, limits), step = 1, start = 1;
	uint32_t a = block(g, 4), first, jf, at, s = NOWHERE;

	if (a == NOWHERE || room(g) < 28)
		return;
	if (chance(g, 10))
		step = -1;
	else if (chance(g, 5))
		step = 0;
	else if (chance(g, 10))
		step = 1 + below(g, 7);
	if (step < 0) {
		start = limit;
		limit = 1;
	}
	first = pc(g);
	load_int(g, a, start);
	load_int(g, a + 1, limit);
	load_int(g, a + 2, step);
	protect(g, a, 4, 1);
	g->shapes |= 1ULL << SH_FOR;
	if (chance(g, 6) && allowed(SH_COND_BACK)) {
		/* R(a+3) := R(a) == R(a), always true; JMPT back */
		emit(g, KTAP_INSN(KTAP_OP_EQ, a + 3, a, a));
		at = emit(g, KTAP_INSN_BX(KTAP_OP_JMPT, a + 3, 0));
		set_sbx(g, at, chance(g, 40) ? at : first + below(g, at - first + 1));
		g->shapes |= 1ULL << SH_COND_BACK;
		if (KTAP_SBX(g->f->code[at]) == -1)
			g->shapes |= 1ULL << SH_SELF_LOOP;
	}
	if (kind == 2) {
		/* the string a concatenation loop grows starts before it */
		s = dst_reg(g);
		if (!g->prot[s]) {
			emit(g, KTAP_INSN_BX(KTAP_OP_LOADK, s,
					     g->kstr[below(g, g->nkstr)]));
			g->ty[s] = TY_STR;
		}
	}
	jf = loop_head(g, a, step < 0);
	switch (kind) {
	case 1: {	/* grow a table */
		uint32_t t = get_table(g);

		protect(g, t, 1, 1);
		emit(g, KTAP_INSN(chance(g, 80) ? KTAP_OP_SETTABLE : KTAP_OP_INCTABLE,
				  t, a, a));
		if (chance(g, 20))
			body(g, a);
		loop_tail(g, a, jf, false);
		protect(g, t, 1, -1);
		g->shapes |= 1ULL << SH_TABLE_GROW;
		walk(g, t);
		protect(g, a, 4, -1);
		return;
	}
	case 2:		/* concatenate */
		if (g->prot[s])
			break;
		emit(g, KTAP_INSN(KTAP_OP_CONCAT, s, s, chance(g, 50) ? s : a));
		g->ty[s] = TY_STR;
		g->shapes |= 1ULL << SH_CONCAT;
		break;
	case 3: {	/* an O(n) builtin per iteration */
		uint32_t t = get_table(g);

		protect(g, t, 1, 1);
		walk(g, t);
		protect(g, t, 1, -1);
		g->shapes |= 1ULL << SH_WALK_LOOP;
		break;
	}
	case 4: {	/* output */
		uint32_t args[2] = { a, a }, fmt = dst_reg(g);

		if (chance(g, 50) && !g->prot[fmt]) {
			emit(g, KTAP_INSN_BX(KTAP_OP_LOADK, fmt, g->k_fmt_d));
			g->ty[fmt] = TY_STR;
			args[0] = fmt;
			call_builtin(g, BI_printf, args, 2);
		} else {
			call_builtin(g, BI_print, args, 1 + below(g, 2));
		}
		g->shapes |= 1ULL << SH_PRINT_LOOP;
		break;
	}
	default:
		body(g, a);
		break;
	}
	loop_tail(g, a, jf, chance(g, 3));
	protect(g, a, 4, -1);
}

/* The event (register 0 of a handler): fields, methods, escapes. */
static void event_ops(struct gen *g)
{
	uint32_t r = block(g, 3), args[1];

	if (r == NOWHERE || r == 0 || g->ty[0] != TY_EV || room(g) < 10)
		return;
	g->shapes |= 1ULL << SH_EVENT;
	switch (below(g, 7)) {
	case 0:	/* print(e.tostring()) */
		emit(g, KTAP_INSN(KTAP_OP_GETFIELD, r, 0, g->k_tostring));
		emit(g, KTAP_INSN(KTAP_OP_CALL, r, 0, 1));
		g->ty[r] = TY_STR;
		args[0] = r;
		call_builtin(g, BI_print, args, 1);
		break;
	case 1:	/* e:tostring() */
		emit(g, KTAP_INSN(KTAP_OP_GETFIELD, r, 0, g->k_tostring));
		emit(g, KTAP_INSN(KTAP_OP_MOVE, r + 1, 0, 0));
		emit(g, KTAP_INSN(KTAP_OP_CALL, r, 1, 1));
		g->ty[r] = TY_STR;
		break;
	case 2:	/* e.name */
		emit(g, KTAP_INSN(KTAP_OP_GETFIELD, r, 0, g->k_name));
		g->ty[r] = TY_STR;
		break;
	case 3:	/* e.set_retval(v): not possible on these probes */
		emit(g, KTAP_INSN(KTAP_OP_GETFIELD, r, 0, g->k_setretval));
		load_int(g, r + 1, -(int64_t)below(g, 20));
		emit(g, KTAP_INSN(KTAP_OP_CALL, r, 1, 0));
		break;
	case 4:	/* keep the event past the handler */
		if (g->g_ev == NOWHERE)
			break;
		emit(g, KTAP_INSN_BX(KTAP_OP_SETGLOBAL, 0, g->g_ev));
		g->shapes |= 1ULL << SH_EV_ESCAPE;
		break;
	case 5:	/* keep a bound method past the handler */
		if (g->g_any == NOWHERE)
			break;
		emit(g, KTAP_INSN(KTAP_OP_GETFIELD, r, 0,
				  chance(g, 50) ? g->k_tostring : g->k_setretval));
		emit(g, KTAP_INSN_BX(KTAP_OP_SETGLOBAL, r, g->g_any));
		g->shapes |= 1ULL << SH_EV_ESCAPE;
		break;
	default: /* use what an earlier firing kept */
		if (g->g_ev == NOWHERE || g->g_any == NOWHERE)
			break;
		emit(g, KTAP_INSN_BX(KTAP_OP_GETGLOBAL, r, chance(g, 50) ? g->g_ev : g->g_any));
		if (chance(g, 50))
			emit(g, KTAP_INSN(KTAP_OP_GETFIELD, r + 1, r, g->k_name));
		else
			emit(g, KTAP_INSN(KTAP_OP_CALL, r, 0, 1));
		g->shapes |= 1ULL << SH_EV_ESCAPE;
		break;
	}
}

/* Call a function value: a nested closure or the global one. */
static void call_something(struct gen *g)
{
	uint32_t f = get_function(g), a, nargs, j;

	if (f == NOWHERE)
		return;
	nargs = below(g, 3);
	a = block(g, nargs + 1);
	if (a == NOWHERE || room(g) < 8)
		return;
	if (a != f)
		emit(g, KTAP_INSN(KTAP_OP_MOVE, a, f, 0));
	for (j = 0; j < nargs; j++)
		emit(g, KTAP_INSN(KTAP_OP_MOVE, a + 1 + j, reg_of(g, TM_ALL), 0));
	/* keep none, one, or several of its values */
	emit(g, KTAP_INSN(KTAP_OP_CALL, a, nargs, below(g, nargs + 2)));
	for (j = 0; j <= nargs; j++)
		g->ty[a + j] = TY_ANY;
	if (g->f->nupvals || g->nkids[g->pi])
		g->shapes |= 1ULL << SH_UPVAL;
}

static void aggregate(struct gen *g)
{
	uint32_t p, v, r, args[1];
	static const uint32_t stats[] = {
		BI_count, BI_sum, BI_avg, BI_min, BI_max,
	};

	if (room(g) < 16)
		return;
	p = dst_reg(g);
	if (g->g_ptab != NOWHERE && chance(g, 60))
		emit(g, KTAP_INSN_BX(KTAP_OP_GETGLOBAL, p, g->g_ptab));
	else
		emit(g, KTAP_INSN(KTAP_OP_CALLB, p, 0, bslot(g, BI_ptable)));
	g->ty[p] = TY_PTAB;
	v = reg_of(g, TM(TY_INT));
	r = reg_of(g, TM_KEY);
	emit(g, KTAP_INSN(KTAP_OP_AGGR, p, r, v));
	if (chance(g, 50)) {
		uint32_t x = dst_reg(g);

		emit(g, KTAP_INSN(KTAP_OP_GETTABLE, x, p, r));
		g->ty[x] = TY_ANY;
		args[0] = x;
		call_builtin(g, PICK(g, stats), args, 1);
	} else {
		walk(g, p);
	}
	g->shapes |= 1ULL << SH_AGGR;
}

static void call_exit(struct gen *g)
{
	uint32_t a = block(g, 2);

	if (a != NOWHERE && chance(g, 30)) {
		emit(g, KTAP_INSN(KTAP_OP_CALLB, a, 0, bslot(g, BI_exit)));
		g->shapes |= 1ULL << SH_EXIT;
	}
}

/*
 * if (cond) { ... }: a compare into a register, a JMPF (or, for "if
 * not", a JMPT) on it over the block, the block.
 */
static void if_block(struct gen *g)
{
	uint32_t j, c;

	if (room(g) < 8 || !gen_insn(g, PICK(g, cmp_ops)))
		return;
	c = KTAP_A(g->f->code[pc(g) - 1]);
	j = emit(g, KTAP_INSN_BX(chance(g, 75) ? KTAP_OP_JMPF : KTAP_OP_JMPT, c, 0));
	body(g, NOWHERE);
	set_sbx(g, j, pc(g));
}

/* A piece of code: a template or a few random instructions. */
static void body(struct gen *g, uint32_t loopvar)
{
	uint32_t r = below(g, 100);

	(void)loopvar;
	if (room(g) < 40 || g->depth >= 3) {
		random_insns(g, 1 + below(g, 3));
		return;
	}
	g->depth++;
	if (r < 30)
		random_insns(g, 1 + below(g, 6));
	else if (r < 42)
		for_loop(g, below(g, 6));
	else if (r < 50)
		walk(g, get_table(g));
	else if (r < 60)
		call_something(g);
	else if (r < 72 && g->handler[g->pi])
		event_ops(g);
	else if (r < 79)
		aggregate(g);
	else if (r < 80)
		call_exit(g);
	else if (r < 88)
		if_block(g);
	else
		for_loop(g, below(g, 6));
	g->depth--;
}

/* ------------------------------------------------------------------ */
/* Functions.                                                          */

/*
 * A compare whose result is known, into @r: true (R == R) or false
 * (R < R on an integer), for a conditional branch that is surely taken
 * or surely not.
 */
static void known_cond(struct gen *g, uint32_t r, bool truth)
{
	uint32_t x = any_reg(g);

	if (truth || g->prot[x] || room(g) < 4) {
		emit(g, KTAP_INSN(KTAP_OP_EQ, r, x, x));
		return;
	}
	load_int(g, x, below(g, 10));
	emit(g, KTAP_INSN(KTAP_OP_LT, r, x, x));
}

/* How functions end; decided before their body (a short body gets there). */
static bool plan_skip_end(struct gen *g, uint32_t *len)
{
	if (!chance(g, 3) || !allowed(SH_SKIP_END))
		return false;
	if (chance(g, 60))
		*len = pc(g) + below(g, 4);
	return true;
}

static void finish_function(struct gen *g, bool skip_end)
{
	uint32_t r = below(g, 100), i, n = g->f->ncode;

	if (skip_end) {
		/*
		 * A conditional branch last, aimed back into the function:
		 * not taken, control falls past the end. Often the
		 * condition makes that fall-through sure at run time.
		 */
		uint32_t c = dst_reg(g), at;
		bool jmpt = chance(g, 50);

		if (chance(g, 60))
			known_cond(g, c, !jmpt);
		else
			while (!gen_insn(g, PICK(g, cmp_ops)))
				;
		c = KTAP_A(g->f->code[pc(g) - 1]);
		if (chance(g, 15) && nregs(g) >= 3) {
			at = emit(g, KTAP_INSN_BX(KTAP_OP_ITERNEXT,
						  below(g, nregs(g) - 2), 0));
		} else {
			at = emit(g, KTAP_INSN_BX(jmpt ? KTAP_OP_JMPT : KTAP_OP_JMPF,
						  c, 0));
		}
		add_fixup(g, at, chance(g, 50) ? J_BACK : J_FIRST);
		g->shapes |= 1ULL << SH_SKIP_END;
		g->viol |= 1U << V_SKIP_END;
		g->skip_end_fn = g->pi;
	} else if (r < 8 && allowed(SH_BACK_JUMP)) {
		uint32_t at = emit(g, KTAP_INSN_BX(KTAP_OP_JMP, 0, 0));

		add_fixup(g, at, chance(g, 50) ? J_FIRST : J_BACK);
		g->shapes |= 1ULL << SH_BACK_JUMP;
	} else {
		uint32_t a = any_reg(g), room = nregs(g) - a + 1;

		/* none, one, or several values from a up */
		emit(g, KTAP_INSN(KTAP_OP_RETURN, a,
				  below(g, room < 4 ? room : 4), 0));
	}

	/* resolve the random jump targets, now that the length is known */
	n = g->f->ncode;
	for (i = 0; i < g->nfix; i++) {
		uint32_t at = g->fix[i].at, t;

		switch (g->fix[i].how) {
		case J_FWD:
			t = at + 1 < n ? at + 1 + below(g, n - at - 1) : below(g, n);
			break;
		case J_BACK:
			t = below(g, at + 1);
			break;
		case J_SELF:
			t = at;
			break;
		case J_LAST:
			t = n - 1;
			break;
		case J_FIRST:
			t = 0;
			break;
		default:
			t = below(g, n);
			break;
		}
		set_sbx(g, at, t);
	}
	g->nfix = 0;
}

static void start_function(struct gen *g, uint32_t pi)
{
	uint32_t r;

	g->pi = pi;
	g->f = &g->im->f[pi];
	memset(g->ty, TY_NIL, sizeof(g->ty));
	memset(g->prot, 0, sizeof(g->prot));
	g->nfix = 0;
	g->depth = 0;
	if (g->handler[pi] && g->f->nparams)
		g->ty[0] = TY_EV;
	else
		for (r = 0; r < g->f->nparams; r++)
			g->ty[r] = TY_ANY;
	if (g->handler[pi] && g->f->nparams)
		g->prot[0] = chance(g, 80);	/* keep the event, mostly */
}

/* Give a few registers values, so random code gets further. */
static void prologue(struct gen *g)
{
	uint32_t n = 3 + below(g, 8), i, r;

	for (i = 0; i < n && room(g) > 40; i++) {
		r = dst_reg(g);
		if (g->prot[r])
			continue;
		switch (below(g, 6)) {
		case 0:
		case 1:
		case 5:
			load_int(g, r, (int64_t)below(g, 200) - 20);
			break;
		case 2:
			emit(g, KTAP_INSN_BX(KTAP_OP_LOADK, r, g->kstr[below(g, g->nkstr)]));
			g->ty[r] = TY_STR;
			break;
		case 3:
			emit(g, KTAP_INSN(KTAP_OP_NEWTABLE, r, below(g, 4), below(g, 4)));
			g->ty[r] = TY_TAB;
			break;
		default:
			if (g->nglobals) {
				emit(g, KTAP_INSN_BX(KTAP_OP_GETGLOBAL, r, below(g, g->nglobals)));
				g->ty[r] = TY_ANY;
			}
			break;
		}
	}
}

static void gen_body(struct gen *g, uint32_t len)
{
	while (pc(g) < len && room(g) > 44)
		body(g, NOWHERE);
}

/* The main chunk: globals, the probes' closures, ATTACH, more code. */
static void gen_main(struct gen *g)
{
	uint32_t r, p, len = 8 + below(g, chance(g, 20) ? 160 : 40);
	bool skip_end;

	start_function(g, 0);
	prologue(g);
	if (g->g_tab != NOWHERE) {
		r = dst_reg(g);
		emit(g, KTAP_INSN(KTAP_OP_NEWTABLE, r, 0, 0));
		g->ty[r] = TY_TAB;
		if (g->big_n) {
			uint32_t a = block(g, 4), jf;

			if (a != NOWHERE && a != r && (a > r || a + 3 < r)) {
				load_int(g, a, 1);
				load_int(g, a + 1, g->big_n);
				load_int(g, a + 2, 1);
				jf = loop_head(g, a, false);
				emit(g, KTAP_INSN(KTAP_OP_SETTABLE, r, a, a));
				loop_tail(g, a, jf, false);
				g->shapes |= 1ULL << SH_BIG_TABLE | 1ULL << SH_TABLE_GROW;
			}
		}
		emit(g, KTAP_INSN_BX(KTAP_OP_SETGLOBAL, r, g->g_tab));
	}
	if (g->g_fn != NOWHERE && g->nkids[0]) {
		r = dst_reg(g);
		emit(g, KTAP_INSN_BX(KTAP_OP_CLOSURE, r, g->kids[0][below(g, g->nkids[0])]));
		emit(g, KTAP_INSN_BX(KTAP_OP_SETGLOBAL, r, g->g_fn));
		g->ty[r] = TY_FN;
	}
	if (g->g_ptab != NOWHERE) {
		r = dst_reg(g);
		emit(g, KTAP_INSN(KTAP_OP_CALLB, r, 0, bslot(g, BI_ptable)));
		emit(g, KTAP_INSN_BX(KTAP_OP_SETGLOBAL, r, g->g_ptab));
		g->ty[r] = TY_PTAB;
	}
	if (chance(g, 15))
		gen_body(g, pc(g) + 10);
	/* closures for the probes, then ATTACH */
	for (p = 0; p < g->nprobes; p++) {
		/* the handler planned for this probe, or another one */
		uint32_t h = chance(g, 85) ? p + 1 : 1 + below(g, g->nprobes);

		r = dst_reg(g);
		emit(g, KTAP_INSN_BX(KTAP_OP_CLOSURE, r, h));
		emit(g, KTAP_INSN_BX(KTAP_OP_ATTACH, r, p));
		g->ty[r] = TY_FN;
	}
	/* an error in the main chunk means no probe is attached: often stop here */
	if (chance(g, 50))
		len = pc(g);
	skip_end = plan_skip_end(g, &len);
	gen_body(g, len);
	finish_function(g, skip_end);
}

static void gen_function(struct gen *g, uint32_t pi)
{
	uint32_t len;
	bool skip_end;

	start_function(g, pi);
	len = g->handler[pi] ? 3 + below(g, chance(g, 25) ? 120 : 30) :
			       2 + below(g, chance(g, 20) ? 60 : 16);
	prologue(g);
	if (g->handler[pi] && g->big_n && g->g_tab != NOWHERE && chance(g, 70)) {
		/* the O(n)-per-firing shape: a loop of #t on the big table */
		uint32_t a = block(g, 6), jf, limit;

		if (a != NOWHERE && room(g) > 40) {
			limit = PICK(g, ((const uint32_t[]){ 10, 1000, 30000 }));
			/* a..a+3 the loop, a+4 the result, a+5 the table */
			emit(g, KTAP_INSN_BX(KTAP_OP_GETGLOBAL, a + 5, g->g_tab));
			load_int(g, a, 1);
			load_int(g, a + 1, limit);
			load_int(g, a + 2, 1);
			jf = loop_head(g, a, false);
			if (chance(g, 60))
				emit(g, KTAP_INSN(KTAP_OP_LEN, a + 4, a + 5, 0));
			else	/* CALLB a+4 reads its argument from a+5 */
				emit(g, KTAP_INSN(KTAP_OP_CALLB, a + 4, 1,
						  bslot(g, chance(g, 50) ? BI_len
								: BI_table_count)));
			loop_tail(g, a, jf, false);
			g->ty[a + 5] = TY_TAB;
			g->shapes |= 1ULL << SH_WALK_LOOP | 1ULL << SH_WALK;
		}
	}
	skip_end = plan_skip_end(g, &len);
	gen_body(g, len);
	finish_function(g, skip_end);
}

/* ------------------------------------------------------------------ */
/* The image plan: probes, functions, globals, load attributes.        */

/*
 * Tracepoint patterns the kernel resolves at attach, with two fields of
 * the events' own formats (so that a fields entry naming one attaches:
 * at least one matched event must have it). The common_* fields are in
 * no event's own format: an EVFIELD entry for one fails the attach.
 */
static const struct {
	const char *pattern, *field[2];
} tp_patterns[] = {
	{ "syscalls:sys_enter_getppid", { "__syscall_nr", "__syscall_nr" } },
	{ "syscalls:sys_exit_getppid", { "ret", "__syscall_nr" } },
	{ "syscalls:sys_*_getppid", { "ret", "__syscall_nr" } },
	{ "syscalls:sys_?xit_getppid", { "__syscall_nr", "ret" } },
	{ "syscalls:sys_enter_getpp?d", { "__syscall_nr", "__syscall_nr" } },
	{ "raw_syscalls:sys_enter", { "id", "args" } },
};

/*
 * The fields section: for some probes, an entry or two that EVFIELD
 * reads. On a tracepoint the name is one its events have, now and then
 * one they all lack (then START must fail); on the other probes any
 * name, which is read by name at run time.
 */
static void plan_fields(struct gen *g, const char * const *const *tp_field)
{
	static const char * const names[] = {
		"common_pid", "ret", "name", "sc_nr", "id", "pid",
	};
	struct ki_image *im = g->im;
	uint32_t i, j, n;

	for (i = 0; i < im->np; i++) {
		n = chance(g, 40) ? 1 + below(g, 2) : 0;
		for (j = 0; j < n && im->nfl < KI_FIELDS; j++) {
			if (tp_field[i] && chance(g, 4)) {
				ki_field(im, i, chance(g, 70) ?
					 "ktap_gen_fuzz_no_such_field" :
					 "common_pid");
				g->shapes |= 1ULL << SH_FIELD_MISSING;
			} else if (tp_field[i]) {
				ki_field(im, i, tp_field[i][!chance(g, 70)]);
			} else {
				ki_field(im, i, PICK(g, names));
			}
		}
	}
}

static void plan_probes(struct gen *g)
{
	uint32_t n = 1 + below(g, 3), i, t;
	const char * const *tp_field[KI_PROBES] = { NULL };
	struct ki_image *im = g->im;

	for (i = 0; i < n; i++) {
		uint32_t r = below(g, 100);
		uint64_t period = (1 + below(g, 10)) * 1000000ULL;

		if (r < 40) {
			ki_probe(im, KTAP_PROBE_TIMER, 0, "tick", NULL, period);
			g->shapes |= 1ULL << SH_TIMER;
		} else if (r < 62) {
			ki_probe(im, KTAP_PROBE_PROFILE, 0, "profile", NULL, period);
			g->shapes |= 1ULL << SH_PROFILE;
		} else if (r < 82 && ev_enter >= 0) {
			/* raw_syscalls fire on every syscall: keep them rare */
			t = below(g, ARRAY_SIZE(tp_patterns));
			if (!strncmp(tp_patterns[t].pattern, "raw_", 4) && chance(g, 70))
				t = 0;
			if (chance(g, 3)) {
				ki_probe(im, KTAP_PROBE_TRACEPOINT, 0, "tp",
					 chance(g, 50) ? "ktap_gen_fuzz:*" :
					 "syscalls:sys_enter_ktap_none", 0);
				g->shapes |= 1ULL << SH_TP_NOMATCH;
			} else {
				tp_field[im->np] = tp_patterns[t].field;
				ki_probe(im, KTAP_PROBE_TRACEPOINT, 0, "tp",
					 tp_patterns[t].pattern, 0);
			}
			g->shapes |= 1ULL << SH_TP;
		} else if (r < 87) {
			/* see KPROBE_TARGET */
			ki_probe(im, KTAP_PROBE_KPROBE, chance(g, 30) ? KTAP_PROBE_F_RETURN : 0,
				 "kprobe", chance(g, 95) ? KPROBE_TARGET
							 : "ktap_gen_fuzz_no_such_function",
				 0);
			g->shapes |= 1ULL << SH_KPROBE;
		} else {
			ki_probe(im, KTAP_PROBE_END, 0, "end", NULL, 0);
			g->shapes |= 1ULL << SH_END;
		}
	}
	if (chance(g, 30)) {
		ki_probe(im, KTAP_PROBE_END, 0, "end", NULL, 0);
		g->shapes |= 1ULL << SH_END;
	}
	g->nprobes = im->np;
	plan_fields(g, tp_field);
}

static void plan_functions(struct gen *g)
{
	struct ki_image *im = g->im;
	uint32_t nh = g->nprobes, nx = below(g, 5), i, j, parent;
	struct ki_func *f;

	if (1 + nh + nx > KI_FUNCS)
		nx = KI_FUNCS - 1 - nh;
	f = ki_func(im, 0, chance(g, 5) ? 250 : 16 + below(g, 32));
	for (i = 1; i <= nh + nx; i++) {
		bool h = i <= nh;
		uint32_t np = h ? (chance(g, 90) ? 1 : below(g, 3)) : below(g, 4);
		uint32_t nr;

		if (chance(g, 4))
			nr = 250;
		else if (chance(g, 4))
			nr = np ? np : 1;
		else
			nr = np + (h ? 8 : 2) + below(g, h ? 24 : 16);
		f = ki_func(im, np, nr);
		parent = h ? 0 : below(g, 10) < 4 ? 0 : below(g, i);
		f->parent = parent;
		g->handler[i] = h;
		g->kids[parent][g->nkids[parent]++] = i;
		/* upvalues */
		if (chance(g, 35)) {
			const struct ki_func *pf = &im->f[parent];
			uint32_t n = 1 + below(g, 4);

			for (j = 0; j < n; j++) {
				if (pf->nupvals && chance(g, 30))
					ki_upval(im, f, 0, below(g, pf->nupvals));
				else
					ki_upval(im, f, 1, below(g, pf->nregs < 12 ?
								 pf->nregs : 12));
			}
			g->shapes |= 1ULL << SH_UPVAL;
		}
	}
	g->nglobals = chance(g, 10) ? 0 : 1 + below(g, 8);
	g->g_tab = NOWHERE;
	g->g_fn = NOWHERE;
	g->g_ev = NOWHERE;
	g->g_ptab = NOWHERE;
	g->g_any = NOWHERE;
	if (g->nglobals) {
		g->g_tab = chance(g, 70) ? below(g, g->nglobals) : NOWHERE;
		g->g_fn = chance(g, 60) ? below(g, g->nglobals) : NOWHERE;
		g->g_ev = chance(g, 40) ? below(g, g->nglobals) : NOWHERE;
		g->g_ptab = chance(g, 30) ? below(g, g->nglobals) : NOWHERE;
		g->g_any = below(g, g->nglobals);
	}
	im->nglobals = g->nglobals;
	if (g->g_tab != NOWHERE && chance(g, 4) && allowed(SH_BIG_TABLE))
		g->big_n = chance(g, 50) ? 10000 : 100000;
}

/*
 * An insn_budget near the ceiling, or above it (which LOAD must refuse);
 * without a ceiling, large ones.
 */
static uint32_t big_budget(struct gen *g, bool above)
{
	uint64_t c = ceiling;
	uint64_t near[] = { c, c - 1, c / 2, c > 1000 ? c - below(g, 1000) : c };
	uint64_t over[] = { c + 1, c * 2, UINT32_MAX, c + 1 + below(g, 1000) };
	uint64_t v;

	g->shapes |= 1ULL << SH_BUDGET_BIG;
	if (!have_ceiling)
		return above ? PICK(g, ((const uint32_t[]){ 100000000, UINT32_MAX })) :
			       PICK(g, ((const uint32_t[]){ 1000000, 10000000 }));
	if (!above)
		return PICK(g, near);
	v = PICK(g, over);
	g->viol |= 1U << V_BUDGET;
	return v > UINT32_MAX ? UINT32_MAX : v;
}

static void plan_attrs(struct gen *g)
{
	static const uint32_t small[] = { 1, 2, 5, 10, 50, 100, 1000, 5000 };
	static const uint32_t mems[] = { 64, 80, 100, 128, 256, 512 };
	uint32_t r = below(g, 100);

	if (r < 30)
		g->budget = 0;
	else if (r < 62)
		g->budget = PICK(g, small);
	else if (r < 80)
		g->budget = 10000 + below(g, 90001);
	else if (!allowed(SH_BUDGET_BIG))
		g->budget = 0;
	else
		g->budget = big_budget(g, r >= 92);
	r = below(g, 100);
	if (g->big_n)
		g->mem_kb = chance(g, 50) ? 0 : 16384;
	else if (r < 30)
		g->mem_kb = 0;
	else if (r < 75)
		g->mem_kb = PICK(g, mems);
	else
		g->mem_kb = PICK(g, ((const uint32_t[]){ 1024, 2048, 8192 }));
	if (g->mem_kb && g->mem_kb < 1024)
		g->shapes |= 1ULL << SH_MEM_SMALL;
	g->flags = chance(g, 4) ? KTAP_LOAD_F_DRY_RUN : 0;
	if (g->flags)
		g->shapes |= 1ULL << SH_DRY_RUN;
	g->pid_filter = chance(g, 5);
	g->cpu = chance(g, 5) ? (int)below(g, 2) : -1;
	if (g->pid_filter || g->cpu >= 0)
		g->shapes |= 1ULL << SH_FILTER;
	g->run_ms = 2 + below(g, 19);
	g->alarm_ms = g->big_n ? 3000 : 250;
}

/* Words in no function: after a function whose last branch may fall into them. */
static void plan_gaps(struct gen *g)
{
	struct ki_image *im = g->im;
	uint32_t n, i, f;

	if (!chance(g, g->skip_end_fn != NOWHERE ? 40 : 6) ||
	    !allowed(SH_GAP) || !allowed(SH_TAIL))
		return;
	n = 1 + below(g, 4);
	/*
	 * before function f (im->nf: after the last one), often right
	 * after a function whose last branch falls off its end
	 */
	f = g->skip_end_fn != NOWHERE && chance(g, 60) ? g->skip_end_fn + 1 :
	    below(g, im->nf + 1);
	/* what a fall-through past a function's end would run */
	for (i = 0; i < n; i++) {
		uint32_t w, r = below(g, 100);

		if (r < 15) {
			w = rnd(g);
		} else if (r < 40) {
			/* an opcode past the table */
			w = KTAP_INSN(KTAP_OP__COUNT + below(g, 256 - KTAP_OP__COUNT),
				      below(g, 256), below(g, 256), below(g, 256));
			g->shapes |= 1ULL << SH_UNKNOWN_OP;
		} else if (r < 55) {
			/* a register past any frame */
			w = KTAP_INSN_BX(KTAP_OP_LOADI, 100 + below(g, 150), below(g, 100));
		} else if (r < 85) {
			/* an upvalue nobody has (the main chunk has no closure) */
			w = KTAP_INSN(KTAP_OP_GETUPVAL, below(g, 4), below(g, 256), 0);
		} else if (r < 92) {
			w = KTAP_INSN(KTAP_OP_CALLB, 0, below(g, 256), below(g, 256));
		} else {
			w = KTAP_INSN_BX(KTAP_OP_JMP, 0, -(int)below(g, 3) - 1);
		}
		ki_gap(im, f < im->nf ? &im->f[f] : NULL, w);
	}
	g->shapes |= 1ULL << (f < im->nf ? SH_GAP : SH_TAIL);
	g->viol |= 1U << V_GAP;
}

/* ------------------------------------------------------------------ */
/* Deliberate violations: exactly one, in about a third of the images. */

/* Find an instruction with an operand of @kind; returns its proto. */
static bool find_operand(struct gen *g, uint8_t kind, uint32_t *pf, uint32_t *pat,
			 int *pk)
{
	uint32_t tries, fi, at;
	int k;

	for (tries = 0; tries < 64; tries++) {
		fi = below(g, g->im->nf);
		if (!g->im->f[fi].ncode)
			continue;
		at = below(g, g->im->f[fi].ncode);
		for (k = 0; k < 3; k++) {
			uint32_t op = KTAP_OP(g->im->f[fi].code[at]);

			if (op >= KTAP_OP__COUNT)
				break;
			if (k == 2 && opinfo[op].fmt != KTAP_FMT_ABC)
				break;
			if (opinfo[op].kind[k] == kind) {
				*pf = fi;
				*pat = at;
				*pk = k;
				return true;
			}
		}
	}
	return false;
}

static void set_operand(uint32_t *w, int k, uint32_t fmt, uint32_t v)
{
	if (k == 0)
		*w = (*w & ~0xff00U) | (v & 0xff) << 8;
	else if (k == 2)
		*w = (*w & 0x00ffffffU) | (v & 0xff) << 24;
	else if (fmt == KTAP_FMT_ABC)
		*w = (*w & 0xff00ffffU) | (v & 0xff) << 16;
	else
		*w = (*w & 0xffffU) | (v & 0xffff) << 16;
}

/* Set operand @k of instruction @at of function @fi; false if @v does not fit. */
static bool put(struct gen *g, uint32_t fi, uint32_t at, int k, uint32_t v)
{
	uint32_t *w = &g->im->f[fi].code[at];
	uint32_t fmt = opinfo[KTAP_OP(*w)].fmt;

	if (v > ((k == 1 && fmt != KTAP_FMT_ABC) ? 0xffffU : 0xffU))
		return false;
	set_operand(w, k, fmt, v);
	return true;
}

static bool violate(struct gen *g, int v)
{
	struct ki_image *im = g->im;
	uint32_t fi, at, *w, op;
	struct ki_func *f;
	int k;

	switch (v) {
	case V_REG:
		if (!find_operand(g, KTAP_OPK_REG, &fi, &at, &k))
			return false;
		return put(g, fi, at, k, im->f[fi].nregs + below(g, 256 - im->f[fi].nregs));
	case V_CONST:
		if (!find_operand(g, KTAP_OPK_K, &fi, &at, &k))
			return false;
		return put(g, fi, at, k, im->nk + below(g, 3));
	case V_KTYPE:
		if (find_operand(g, KTAP_OPK_KINT, &fi, &at, &k))
			return put(g, fi, at, k, g->kstr[below(g, g->nkstr)]);
		if (find_operand(g, KTAP_OPK_KSTR, &fi, &at, &k))
			return put(g, fi, at, k, g->kint[below(g, g->nkint)]);
		return false;
	case V_UPV:
		if (!find_operand(g, KTAP_OPK_UPV, &fi, &at, &k))
			return false;
		return put(g, fi, at, k, im->f[fi].nupvals + below(g, 4));
	case V_GLOBAL:
		if (!find_operand(g, KTAP_OPK_GLOBAL, &fi, &at, &k))
			return false;
		return put(g, fi, at, k, g->nglobals + below(g, 4));
	case V_PROTO:
		if (!find_operand(g, KTAP_OPK_PROTO, &fi, &at, &k))
			return false;
		/* itself, its parent, or past the end: never its child */
		return put(g, fi, at, k, chance(g, 50) ? fi : chance(g, 50) ? im->nf :
			   (fi ? im->f[fi].parent : im->nf + 1));
	case V_BOOL:
		if (!find_operand(g, KTAP_OPK_BOOL, &fi, &at, &k))
			return false;
		return put(g, fi, at, k, 2 + below(g, 254));
	case V_NONZERO:
		if (!find_operand(g, KTAP_OPK_NONE, &fi, &at, &k))
			return false;
		return put(g, fi, at, k, 1 + below(g, 255));
	case V_BUILTIN:
		if (!find_operand(g, KTAP_OPK_BUILTIN, &fi, &at, &k))
			return false;
		if (im->nb >= 256)
			return false;
		return put(g, fi, at, k, im->nb + below(g, 256 - im->nb));
	case V_ARGC: {
		uint32_t b;
		int bi;

		if (!find_operand(g, KTAP_OPK_BUILTIN, &fi, &at, &k))
			return false;
		w = &im->f[fi].code[at];
		if (KTAP_C(*w) >= im->nb)
			return false;
		bi = builtin_by_name(im->str + im->b[KTAP_C(*w)]);
		if (bi < 0)
			return false;
		if (biinfo[bi].min > 0)
			b = biinfo[bi].min - 1;
		else if (biinfo[bi].max < GEN_MAX_ARGS &&
			 KTAP_A(*w) + biinfo[bi].max + 1 < im->f[fi].nregs)
			b = biinfo[bi].max + 1;
		else
			return false;
		return put(g, fi, at, 1, b);
	}
	case V_PROBE:
		if (!find_operand(g, KTAP_OPK_PROBE, &fi, &at, &k))
			return false;
		return put(g, fi, at, k, im->np + below(g, 3));
	case V_JUMP: {
		int64_t t;

		if (!find_operand(g, KTAP_OPK_JUMP, &fi, &at, &k))
			return false;
		f = &im->f[fi];
		t = chance(g, 40) ? -1 : chance(g, 60) ? (int64_t)f->ncode :
		    (int64_t)f->ncode + 1 + below(g, 100);
		if (t - (int64_t)at - 1 > 32767)
			return false;
		set_operand(&f->code[at], 1, KTAP_FMT_ASBX,
			    (uint32_t)(t - (int64_t)at - 1));
		return true;
	}
	case V_OPCODE:
		fi = below(g, im->nf);
		f = &im->f[fi];
		at = below(g, f->ncode);
		f->code[at] = (f->code[at] & ~0xffU) |
			      (KTAP_OP__COUNT + below(g, 256 - KTAP_OP__COUNT));
		g->shapes |= 1ULL << SH_UNKNOWN_OP;
		return true;
	case V_BUILTIN_NAME:
		/*
		 * A builtins entry the kernel cannot resolve: a name it does
		 * not know (an entry CALLB uses, or an extra one: all are
		 * resolved at load), or an offset outside the string table.
		 */
		if (im->nstr + 64 >= KI_STRTAB || im->nb >= KI_BUILTINS)
			return false;
		if (chance(g, 15)) {
			im->b[im->nb ? below(g, im->nb) : im->nb++] =
				0x80000000U + below(g, 1000);
			return true;
		}
		if (im->nb && chance(g, 70))
			im->b[below(g, im->nb)] = ki_str(im, PICK(g, bad_builtins));
		else
			im->b[im->nb++] = ki_str(im, PICK(g, bad_builtins));
		return true;
	case V_LAST:
		fi = below(g, im->nf);
		f = &im->f[fi];
		f->code[f->ncode - 1] = KTAP_INSN(KTAP_OP_LOADBOOL, 0, 1, 0);
		return true;
	case V_MAIN_ONLY:
		if (im->nf < 2 || !im->np)
			return false;
		fi = 1 + below(g, im->nf - 1);
		f = &im->f[fi];
		if (f->ncode < 2)
			return false;
		at = below(g, f->ncode - 1);
		/* replace a non-jump instruction: the rest stays valid */
		op = KTAP_OP(f->code[at]);
		if (op >= KTAP_OP__COUNT || opinfo[op].kind[1] == KTAP_OPK_JUMP)
			return false;
		f->code[at] = KTAP_INSN_BX(KTAP_OP_ATTACH, 0, below(g, im->np));
		return true;
	case V_UPV_DESC: {
		uint32_t u;

		if (!im->nuv)
			return false;
		for (fi = 1; fi < im->nf; fi++)
			if (im->f[fi].nupvals)
				break;
		if (fi == im->nf)
			return false;
		f = &im->f[fi];
		u = f->upval_start + below(g, f->nupvals);
		if (chance(g, 30)) {
			im->uv[u].in_stack = 2 + below(g, 254);
		} else if (im->uv[u].in_stack) {
			if (im->f[f->parent].nregs == 255)
				return false;
			im->uv[u].index = im->f[f->parent].nregs +
					  below(g, 256 - im->f[f->parent].nregs);
		} else {
			im->uv[u].index = im->f[f->parent].nupvals + below(g, 4);
		}
		return true;
	}
	case V_NREGS:
		fi = below(g, im->nf);
		f = &im->f[fi];
		if (chance(g, 50)) {
			f->nregs = 251 + below(g, 5);
		} else {
			if (f->nregs == 255)
				return false;
			f->nparams = f->nregs + 1 + below(g, 255 - f->nregs);
		}
		return true;
	case V_PARENT:
		if (im->nf < 2)
			return false;
		fi = 1 + below(g, im->nf - 1);
		im->f[fi].parent = chance(g, 50) ? fi : fi + below(g, 100);
		return true;
	case V_MEM:
		g->mem_kb = chance(g, 50) ? 1 + below(g, 63) :
			    chance(g, 50) ? 256 * 1024 + 1 : UINT32_MAX;
		return true;
	case V_PERIOD: {
		uint32_t i;

		for (i = 0; i < im->np; i++) {
			if (im->p[i].type == KTAP_PROBE_TIMER ||
			    im->p[i].type == KTAP_PROBE_PROFILE) {
				im->p[i].arg = chance(g, 50) ? below(g, 10000) :
					       3601ULL * 1000000000ULL;
				return true;
			}
		}
		return false;
	}
	case V_PROBE_TYPE:
		if (!im->np)
			return false;
		im->p[below(g, im->np)].type = KTAP_PROBE__COUNT + below(g, 100);
		return true;
	case V_FIELD:
		/* an EVFIELD past the section, or an entry's probe or name */
		if (find_operand(g, KTAP_OPK_FIELD, &fi, &at, &k) && chance(g, 50))
			return put(g, fi, at, k, im->nfl + below(g, 4));
		if (!im->nfl)
			return false;
		if (chance(g, 50))
			im->fl[below(g, im->nfl)].probe = im->np + below(g, 3);
		else
			im->fl[below(g, im->nfl)].name = 0x80000000U + below(g, 1000);
		return true;
	default:
		return false;
	}
}

/* The violations chosen on purpose (the others come from shapes). */
static const int chosen_violations[] = {
	V_REG, V_CONST, V_KTYPE, V_UPV, V_GLOBAL, V_PROTO, V_BOOL, V_NONZERO,
	V_BUILTIN, V_ARGC, V_PROBE, V_JUMP, V_OPCODE, V_BUILTIN_NAME, V_LAST,
	V_MAIN_ONLY, V_UPV_DESC, V_NREGS, V_PARENT, V_MEM, V_PERIOD,
	V_PROBE_TYPE, V_FIELD,
};

/* ------------------------------------------------------------------ */
/*
 * The rules an image must follow, as this test reads the UAPI header and
 * issue 8: what kernel/trace/ktap/vm_load.c checks one rule at a time,
 * plus the two that make the checks sound (no successor of an
 * instruction past its function, functions cover the code section
 * exactly), the names the kernel must resolve (builtins; fields entries
 * in range) and the budget ceiling. Returns NULL or the first broken rule; used to check the
 * generator itself (-x) and to tell the kernel's rejections of images
 * the generator meant to be valid apart.
 */
static const char *self_check(const struct gen *g)
{
	const struct ki_image *im = g->im;
	uint32_t fi, at, j;
	int k;

	if (im->ngap)
		return viol_name[V_GAP];
	if (g->mem_kb && (g->mem_kb < 64 || g->mem_kb > 256 * 1024))
		return viol_name[V_MEM];
	if (g->budget > ceiling)
		return viol_name[V_BUDGET];
	for (j = 0; j < im->np; j++) {
		const struct ktap_bc_probe *p = &im->p[j];

		if (p->type >= KTAP_PROBE__COUNT)
			return viol_name[V_PROBE_TYPE];
		if ((p->type == KTAP_PROBE_TIMER || p->type == KTAP_PROBE_PROFILE) &&
		    (p->arg < 10000 || p->arg > 3600ULL * 1000000000ULL))
			return viol_name[V_PERIOD];
	}
	for (j = 0; j < im->nb; j++)
		if (im->b[j] >= im->nstr || builtin_by_name(im->str + im->b[j]) < 0)
			return viol_name[V_BUILTIN_NAME];
	for (j = 0; j < im->nfl; j++)
		if (im->fl[j].probe >= im->np || im->fl[j].name >= im->nstr)
			return viol_name[V_FIELD];
	for (fi = 0; fi < im->nf; fi++) {
		const struct ki_func *f = &im->f[fi];
		const struct ki_func *pf;

		if (f->nregs > KTAP_MAX_REGS || f->nparams > f->nregs)
			return viol_name[V_NREGS];
		if (fi && f->parent >= fi)
			return viol_name[V_PARENT];
		pf = fi ? &im->f[f->parent] : NULL;
		for (j = 0; pf && j < f->nupvals; j++) {
			const struct ktap_bc_upval *u = &im->uv[f->upval_start + j];

			if (u->in_stack > 1 ||
			    u->index >= (u->in_stack ? pf->nregs : pf->nupvals))
				return viol_name[V_UPV_DESC];
		}
		for (at = 0; at < f->ncode; at++) {
			uint32_t w = f->code[at], op = KTAP_OP(w);
			const struct gen_opinfo *oi;
			int64_t v;

			if (op >= KTAP_OP__COUNT)
				return viol_name[V_OPCODE];
			oi = &opinfo[op];
			for (k = 0; k < 3; k++) {
				if (k == 2 && oi->fmt != KTAP_FMT_ABC)
					break;
				if (k == 0)
					v = KTAP_A(w);
				else if (k == 2)
					v = KTAP_C(w);
				else if (oi->fmt == KTAP_FMT_ABX)
					v = KTAP_BX(w);
				else if (oi->fmt == KTAP_FMT_ASBX)
					v = KTAP_SBX(w);
				else
					v = KTAP_B(w);
				switch (oi->kind[k]) {
				case KTAP_OPK_NONE:
					if (v)
						return viol_name[V_NONZERO];
					break;
				case KTAP_OPK_REG:
					if (v >= f->nregs)
						return viol_name[V_REG];
					break;
				case KTAP_OPK_REG3:
					if (v + 2 >= f->nregs)
						return viol_name[V_REG];
					break;
				case KTAP_OPK_RCNT:
					if (KTAP_A(w) + v >= f->nregs)
						return viol_name[V_REG];
					break;
				case KTAP_OPK_NVAL:
					if (KTAP_A(w) + v > f->nregs)
						return viol_name[V_REG];
					break;
				case KTAP_OPK_K:
				case KTAP_OPK_KINT:
				case KTAP_OPK_KSTR:
					if (v >= im->nk)
						return viol_name[V_CONST];
					if ((oi->kind[k] == KTAP_OPK_KINT &&
					     im->k[v].type != KTAP_BC_CONST_INT) ||
					    (oi->kind[k] == KTAP_OPK_KSTR &&
					     im->k[v].type != KTAP_BC_CONST_STR))
						return viol_name[V_KTYPE];
					break;
				case KTAP_OPK_UPV:
					if (v >= f->nupvals)
						return viol_name[V_UPV];
					break;
				case KTAP_OPK_GLOBAL:
					if (v >= im->nglobals)
						return viol_name[V_GLOBAL];
					break;
				case KTAP_OPK_PROTO:
					if (v >= im->nf || im->f[v].parent != fi || !v)
						return viol_name[V_PROTO];
					break;
				case KTAP_OPK_JUMP:
					if (at + 1 + v < 0 || at + 1 + v >= f->ncode)
						return viol_name[V_JUMP];
					break;
				case KTAP_OPK_BOOL:
					if (v > 1)
						return viol_name[V_BOOL];
					break;
				case KTAP_OPK_BUILTIN: {
					int bi;

					if (v >= im->nb)
						return viol_name[V_BUILTIN];
					/* entries were checked above */
					bi = builtin_by_name(im->str + im->b[v]);
					if (KTAP_B(w) < biinfo[bi].min ||
					    KTAP_B(w) > biinfo[bi].max)
						return viol_name[V_ARGC];
					break;
				}
				case KTAP_OPK_FIELD:
					if (v >= im->nfl)
						return viol_name[V_FIELD];
					break;
				case KTAP_OPK_PROBE:
					if (v >= im->np)
						return viol_name[V_PROBE];
					break;
				default:
					break;
				}
			}
			if ((oi->flags & KTAP_OPF_MAIN) && fi)
				return viol_name[V_MAIN_ONLY];
			/*
			 * The last instruction's successors: a conditional
			 * branch falls past the end when not taken; anything
			 * but RETURN (END) or JMP (GOTO) does.
			 */
			if (at + 1 == f->ncode && (oi->flags & KTAP_OPF_BRANCH))
				return viol_name[V_SKIP_END];
			if (at + 1 == f->ncode &&
			    !(oi->flags & (KTAP_OPF_END | KTAP_OPF_GOTO)))
				return viol_name[V_LAST];
		}
	}
	return NULL;
}

/* Generate image @index of stream @seed into @g and @im. */
static void generate(struct gen *g, struct ki_image *im, uint64_t seed,
		     unsigned long index)
{
	uint32_t i, tries;

	memset(g, 0, sizeof(*g));
	memset(im, 0, sizeof(*im));
	g->im = im;
	g->index = index;
	g->s = mix64(seed ^ mix64(index + 1)) | 1;
	g->skip_end_fn = NOWHERE;
	im->lines = chance(g, 50);
	make_consts(g);
	plan_probes(g);
	plan_functions(g);
	plan_attrs(g);
	gen_main(g);
	for (i = 1; i < im->nf; i++)
		gen_function(g, i);
	plan_gaps(g);
	if (chance(g, 25)) {
		for (tries = 0; tries < 8; tries++) {
			int v = PICK(g, chosen_violations);

			if (violate(g, v)) {
				g->viol |= 1U << v;
				break;
			}
		}
	}
}

/* ------------------------------------------------------------------ */
/* Printing images.                                                    */

static void say(const char *fmt, ...) __printf(1, 2);

/* One line to stdout in one write(), so the workers' lines do not mix. */
static void say(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	buf[0] = '#';
	buf[1] = ' ';
	va_start(ap, fmt);
	n = vsnprintf(buf + 2, sizeof(buf) - 3, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	n += 2;
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	if (buf[n - 1] != '\n')
		buf[n++] = '\n';
	if (write(1, buf, n) < 0)
		return;
}

static void bits_list(char *buf, size_t size, uint64_t bits,
		      const char * const *names, int count)
{
	size_t n = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < count && n + 1 < size; i++)
		if (bits & (1ULL << i))
			n += snprintf(buf + n, size - n, "%s%s", n ? "," : "",
				      names[i]);
	if (!n)
		snprintf(buf, size, "-");
}

static void print_hex(const char *tag, unsigned long index, const void *img,
		      size_t len)
{
	static const char hx[] = "0123456789abcdef";
	const unsigned char *p = img;
	size_t i, n;
	char *buf = malloc(len * 2 + 64);

	if (!buf)
		return;
	n = snprintf(buf, 64, "# %s %lu ", tag, index);
	for (i = 0; i < len; i++) {
		buf[n++] = hx[p[i] >> 4];
		buf[n++] = hx[p[i] & 15];
	}
	buf[n++] = '\n';
	if (write(1, buf, n) < 0)
		n = 0;
	free(buf);
}

/* A listing of the image (for -i/-x). */
static void print_listing(const struct gen *g, const struct ki_image *im)
{
	uint32_t fi, at, gap = 0, j;

	say("image %lu: insn_budget %u, mem_limit_kb %u, flags %u, pid filter %d, cpu %d, run %u ms",
	    g->index, g->budget, g->mem_kb, g->flags, g->pid_filter, g->cpu, g->run_ms);
	for (j = 0; j < im->np; j++)
		say("probe %u: type %u flags %u arg %llu target %s", j, im->p[j].type,
		    im->p[j].flags, (unsigned long long)im->p[j].arg,
		    im->p[j].target < im->nstr ? im->str + im->p[j].target : "-");
	for (j = 0; j < im->nb; j++)
		say("builtin %u: %s", j, im->b[j] < im->nstr ? im->str + im->b[j] :
		    "(name outside the string table)");
	for (j = 0; j < im->nfl; j++)
		say("field %u: probe %u %s", j, im->fl[j].probe,
		    im->fl[j].name < im->nstr ? im->str + im->fl[j].name :
		    "(name outside the string table)");
	for (fi = 0; fi < im->nf; fi++) {
		const struct ki_func *f = &im->f[fi];

		for (j = 0; j < f->ngap; j++, gap++)
			say("    gap  0x%08x", im->gap[gap]);
		say("proto %u: parent %d nparams %u nregs %u nupvals %u%s", fi,
		    (int)f->parent, f->nparams, f->nregs, f->nupvals,
		    g->handler[fi] ? " (handler)" : "");
		for (j = 0; j < f->nupvals; j++)
			say("    upval %u: %s %u", j,
			    im->uv[f->upval_start + j].in_stack == 1 ? "reg" :
			    im->uv[f->upval_start + j].in_stack ? "BAD" : "upval",
			    im->uv[f->upval_start + j].index);
		for (at = 0; at < f->ncode; at++) {
			uint32_t w = f->code[at], op = KTAP_OP(w);

			if (op >= KTAP_OP__COUNT)
				say("  %4u  0x%08x (opcode %u)", at, w, op);
			else if (opinfo[op].fmt == KTAP_FMT_ABC)
				say("  %4u  %-9s %u %u %u", at, opinfo[op].name,
				    KTAP_A(w), KTAP_B(w), KTAP_C(w));
			else if (opinfo[op].fmt == KTAP_FMT_ABX)
				say("  %4u  %-9s %u %u", at, opinfo[op].name,
				    KTAP_A(w), KTAP_BX(w));
			else
				say("  %4u  %-9s %u %d%s", at, opinfo[op].name,
				    KTAP_A(w), KTAP_SBX(w),
				    opinfo[op].kind[1] == KTAP_OPK_JUMP ? " (jump)" : "");
		}
	}
	for (; gap < im->ngap; gap++)
		say("    tail 0x%08x", im->gap[gap]);
}

/* ------------------------------------------------------------------ */
/* The process under test.                                             */

enum outcome { OUT_NONE, OUT_REJ_LOAD, OUT_REJ_START, OUT_RAN, OUT_BAD };
enum stage { ST_FORK, ST_OPEN, ST_LOAD, ST_START, ST_RUN, ST_STOP, ST_READ,
	     ST_CLOSE, ST_DONE };
static const char * const stage_name[] = {
	"fork", "open", "LOAD", "START", "workload", "STOP", "read", "close",
	"exit",
};

/* Written by the child, read by its worker after the child is gone. */
struct slot {
	int		stage, outcome, err;
	uint64_t	hits, errors, drops, mem_used;
	char		msg[256];	/* rejection log or first runtime error */
};

/*
 * The child's alarm interrupts a main chunk that runs too long. When it
 * goes off while START attaches the probes instead, START fails with
 * EINTR by design (a long attach lets Ctrl-C through): a rejection at
 * START, not a fault.
 */
static volatile sig_atomic_t alarm_fired;

static void on_alarm(int sig)
{
	(void)sig;
	alarm_fired = 1;
}

static void set_alarm(uint32_t ms)
{
	struct itimerval it = { 0 };

	it.it_value.tv_sec = ms / 1000;
	it.it_value.tv_usec = (ms % 1000) * 1000;
	setitimer(ITIMER_REAL, &it, NULL);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

/* Keep the first "ktap: error:" line of the output, read to end of file. */
static int drain(int fd, struct slot *res)
{
	static char buf[65536];
	bool have = false;
	ssize_t r;
	char *e;

	for (;;) {
		r = read(fd, buf, sizeof(buf) - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (!r)
			return 0;
		buf[r] = '\0';
		if (have)
			continue;
		e = strstr(buf, "ktap: error: ");
		if (!e && !res->msg[0])
			e = strstr(buf, "ktap: cannot attach");
		if (e) {
			char *nl = strchr(e, '\n');

			if (nl)
				*nl = '\0';
			snprintf(res->msg, sizeof(res->msg), "%s", e);
			have = !strncmp(e, "ktap: error: ", 13);
		}
	}
}

/* image i makes its own instance when i % own_every == 0 */
static unsigned long own_every = 16;
/* the worker's instance (each worker is a process); "" when none */
static char worker_inst[KTAP_INSTANCE_NAME_MAX];
static unsigned int worker_inst_gen;

static bool start_errno_ok(int e)
{
	switch (e) {
	case EINVAL: case ENOENT: case E2BIG: case EPERM: case EILSEQ:
	case EOPNOTSUPP: case ENOMEM: case ENODEV: case EACCES: case EBUSY:
	case ENOSPC: case EEXIST: case ESRCH: case EFBIG:
		return true;
	default:
		return false;
	}
}

static void __noreturn
child(const struct gen *g, const void *img, size_t len, struct slot *res)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct ktap_load_attr a;
	struct ktap_stats st;
	char name[16], log[256];
	uint64_t end;
	int fd, r;

	snprintf(name, sizeof(name), "kgf%lu", g->index);
	prctl(PR_SET_NAME, name);
	/* a child stuck in the kernel must not hold the test's output open */
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	sigaction(SIGALRM, &sa, NULL);	/* no SA_RESTART */
	memset(res, 0, sizeof(*res));
	res->stage = ST_OPEN;
	fd = open(KTAP_CONTROL, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		res->err = errno;
		res->outcome = OUT_BAD;
		snprintf(res->msg, sizeof(res->msg), "open: %s", strerror(errno));
		_exit(0);
	}
	res->stage = ST_LOAD;
	memset(&a, 0, sizeof(a));
	memset(log, 0, sizeof(log));
	a.size = sizeof(a);
	a.flags = g->flags;
	a.image = (uintptr_t)img;
	a.image_len = len;
	a.log_buf = (uintptr_t)log;
	a.log_size = sizeof(log);
	a.mem_limit_kb = g->mem_kb;
	a.insn_budget = g->budget;
	a.pid = g->pid_filter ? getpid() : -1;
	a.cpu = g->cpu;
	if (worker_inst[0] && g->index % own_every)
		a.instance = (uintptr_t)worker_inst;
	if (ioctl(fd, KTAP_IOC_LOAD, &a)) {
		res->err = errno;
		res->outcome = errno == EINVAL || errno == E2BIG ||
			       errno == ENOMEM ? OUT_REJ_LOAD : OUT_BAD;
		snprintf(res->msg, sizeof(res->msg), "%s", log);
		res->stage = ST_CLOSE;
		close(fd);
		res->stage = ST_DONE;
		_exit(0);
	}
	res->stage = ST_START;
	set_alarm(g->alarm_ms);
	r = ioctl(fd, KTAP_IOC_START);
	res->err = r ? errno : 0;
	set_alarm(0);
	if (!r) {
		res->stage = ST_RUN;
		end = now_ms() + g->run_ms;
		while (now_ms() < end) {
			syscall(SYS_getppid);
			if (g->shapes & (1ULL << SH_KPROBE))
				syscall(SYS_getpgid, 0);
		}
	}
	res->stage = ST_STOP;
	if (ioctl(fd, KTAP_IOC_STOP)) {
		res->err = errno;
		res->outcome = OUT_BAD;
		snprintf(res->msg, sizeof(res->msg), "STOP: %s", strerror(errno));
		_exit(0);
	}
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	if (!ioctl(fd, KTAP_IOC_STATS, &st)) {
		res->hits = st.hits;
		res->errors = st.errors;
		res->drops = st.drops;
		res->mem_used = st.mem_used;
	}
	res->stage = ST_READ;
	if (drain(fd, res)) {
		res->outcome = OUT_BAD;
		snprintf(res->msg, sizeof(res->msg), "read: %s", strerror(errno));
		_exit(0);
	}
	res->stage = ST_CLOSE;
	close(fd);
	res->stage = ST_DONE;
	if (r)
		res->outcome = start_errno_ok(res->err) ||
			       (res->err == EINTR && alarm_fired) ?
			       OUT_REJ_START : OUT_BAD;
	else
		res->outcome = OUT_RAN;
	if (res->outcome == OUT_BAD)
		snprintf(res->msg, sizeof(res->msg), "START: %s", strerror(res->err));
	_exit(0);
}

/* ------------------------------------------------------------------ */
/* Workers and the watchdog.                                           */

struct errkind {
	char		text[56];
	unsigned long	n;
};

struct wstats {
	unsigned long	n, rej_load, rej_start, ran, killed, hung, bad, crashed;
	unsigned long	escapes, rt_errors, hits, reports, rej_valid;
	unsigned long	esc[V__COUNT], esc_printed[V__COUNT];
	unsigned long	shape_n[SH__COUNT], shape_killed[SH__COUNT];
	unsigned long	shape_ran[SH__COUNT];
	unsigned long	killed_stage[ST_DONE + 1];
	struct errkind	err[NR_ERRKINDS];
	struct errkind	rej[NR_ERRKINDS];	/* LOAD logs of valid images */
};

struct shared {
	unsigned long	next;		/* next image index */
	unsigned long	done;
	int		stop;
	int		taint_reported;
	int		print_lock;
	uint32_t	run_lock;	/* EXCL bit | images running shared */
	unsigned long	hangs;
	struct wstats	w[MAX_WORKERS];
	struct slot	slot[MAX_WORKERS];
};

static struct shared *sh;
static uint64_t seed;
static unsigned long count, first_index;
static unsigned int nworkers = 2;
static uint32_t watchdog_ms = 5000, kill_ms = 5000;
static unsigned long max_hangs = 1;	/* stop after this many */
static uint64_t deadline_ms;		/* 0: none */
static unsigned long taint0;

static unsigned long read_taint(void)
{
	unsigned long t = 0;
	FILE *f = fopen("/proc/sys/kernel/tainted", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%lu", &t) != 1)
		t = 0;
	fclose(f);
	return t;
}

/* Taint flags that mean the kernel saw a problem: B, D, W, L. */
#define TAINT_BAD	((1UL << 5) | (1UL << 7) | (1UL << 9) | (1UL << 14))

/* Count message @m, up to its first number, quote or newline, in @tab. */
static void tally(struct errkind *tab, const char *m)
{
	char text[56];
	size_t n = 0;
	int i;

	while (*m == ' ')
		m++;
	/* numbers become N, so "error 22" and "error 2" count together */
	for (; *m && *m != '\n' && *m != '(' && n < sizeof(text) - 1; m++) {
		if (*m >= '0' && *m <= '9') {
			if (!n || text[n - 1] != 'N')
				text[n++] = 'N';
			continue;
		}
		text[n++] = *m;
	}
	while (n && text[n - 1] == ' ')
		n--;
	text[n] = '\0';
	if (!n)
		snprintf(text, sizeof(text), "(no message)");
	for (i = 0; i < NR_ERRKINDS; i++) {
		if (!tab[i].text[0]) {
			snprintf(tab[i].text, sizeof(tab[i].text), "%s", text);
			tab[i].n = 1;
			return;
		}
		if (!strcmp(tab[i].text, text)) {
			tab[i].n++;
			return;
		}
	}
}

/* Runtime errors: "ktap: error: CHUNK:LINE: message". */
static void tally_error(struct wstats *w, const char *msg)
{
	const char *m = strstr(msg, "ktap: error: ");
	int i;

	if (!m)
		return;
	m += strlen("ktap: error: ");
	for (i = 0; i < 2 && (m = strchr(m, ':')); i++)
		m++;
	if (m)
		tally(w->err, m);
}

/* LOAD refusals: "WHERE: reason" (or just an errno). */
static void tally_reject(struct wstats *w, const struct slot *slot)
{
	const char *m = strrchr(slot->msg, ':');

	if (m)
		tally(w->rej, m + 1);
	else if (slot->msg[0])
		tally(w->rej, slot->msg);
	else
		tally(w->rej, strerror(slot->err));
}

static void print_lock(void)
{
	while (sh && __atomic_exchange_n(&sh->print_lock, 1, __ATOMIC_ACQUIRE))
		usleep(100);
}

static void print_unlock(void)
{
	if (sh)
		__atomic_store_n(&sh->print_lock, 0, __ATOMIC_RELEASE);
}

/* Wait for @pid (via @pidfd when there is one) up to @ms; true if gone. */
static bool wait_exit(pid_t pid, int pidfd, uint32_t ms, int *status)
{
	uint64_t end = now_ms() + ms;
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	pid_t r;

	for (;;) {
		r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return true;
		if (r < 0 && errno != EINTR)
			return true;
		if (now_ms() >= end)
			return false;
		if (pidfd >= 0) {
			if (poll(&p, 1, end - now_ms()) < 0 && errno != EINTR)
				usleep(1000);
		} else {
			usleep(1000);
		}
	}
}

static void save_reproducer(const struct gen *g, const void *img, size_t len,
			    const char *why)
{
	char path[128], shapes[512], viol[512];
	int fd;

	snprintf(path, sizeof(path), "/tmp/ktap_gen_fuzz-%llx-%lu.bin",
		 (unsigned long long)seed, g->index);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, img, len) != (ssize_t)len)
			path[0] = '\0';
		close(fd);
	}
	bits_list(shapes, sizeof(shapes), g->shapes, shape_name, SH__COUNT);
	print_lock();
	bits_list(viol, sizeof(viol), disabled, shape_name, SH__COUNT);
	say("reproducer: image %lu (%s): ktap_gen_fuzz -s 0x%llx -i %lu%s%s -v; saved to %s",
	    g->index, why, (unsigned long long)seed, g->index,
	    disabled ? " -D " : "", disabled ? viol : "", path[0] ? path : "(not saved)");
	bits_list(viol, sizeof(viol), g->viol, viol_name, V__COUNT);
	say("  shapes %s; violations %s; insn_budget %u mem_limit_kb %u", shapes,
	    viol, g->budget, g->mem_kb);
	print_hex("repro-hex", g->index, img, len);
	print_unlock();
}

#define EXCL		0x80000000U

static void futex_wait(uint32_t *addr, uint32_t val)
{
	syscall(SYS_futex, addr, FUTEX_WAIT, val, NULL, NULL, 0);
}

static void futex_wake(uint32_t *addr)
{
	syscall(SYS_futex, addr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/*
 * Images run shared (both workers at once) or, when their START and STOP
 * patch kernel code, exclusive (alone, see KPROBE_TARGET). Writers first;
 * waiters sleep on a futex, making no syscalls until they are woken.
 */
static void run_lock(bool excl)
{
	uint32_t *l = &sh->run_lock, v;

	for (;;) {
		v = __atomic_load_n(l, __ATOMIC_ACQUIRE);
		if (v & EXCL) {
			futex_wait(l, v);
			continue;
		}
		if (__atomic_compare_exchange_n(l, &v, excl ? v | EXCL : v + 1, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			break;
	}
	while (excl && (v = __atomic_load_n(l, __ATOMIC_ACQUIRE)) != EXCL)
		futex_wait(l, v);
}

static void worker_inst_remove(void)
{
	char path[PATH_MAX];

	if (!worker_inst[0])
		return;
	snprintf(path, sizeof(path), "%s/%s", KTAP_INSTANCES, worker_inst);
	if (rmdir(path))
		say("rmdir %s: %s", path, strerror(errno));
	worker_inst[0] = '\0';
}

/*
 * Make this worker's next instance: kgf<pid>-<n>, 64 KiB a CPU (the
 * handlers' output is read, not checked). On failure the worker's
 * images make their own instances, as with "-n 1".
 */
static void worker_inst_new(void)
{
	char path[PATH_MAX];
	int fd;

	worker_inst_remove();
	snprintf(worker_inst, sizeof(worker_inst), "kgf%d-%u", getpid(),
		 worker_inst_gen++);
	snprintf(path, sizeof(path), "%s/%s", KTAP_INSTANCES, worker_inst);
	if (mkdir(path, 0700)) {
		say("mkdir %s: %s: every image makes its own instance", path,
		    strerror(errno));
		worker_inst[0] = '\0';
		return;
	}
	strcat(path, "/buffer_size_kb");
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "64", 2) != 2)
		say("%s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
}

static void run_unlock(bool excl)
{
	uint32_t *l = &sh->run_lock;

	if (excl)
		__atomic_store_n(l, 0, __ATOMIC_RELEASE);
	else if (__atomic_sub_fetch(l, 1, __ATOMIC_ACQ_REL) != EXCL)
		return;
	futex_wake(l);
}

static bool patches_code(const struct gen *g)
{
	return g->shapes & (1ULL << SH_TP | 1ULL << SH_KPROBE);
}

/*
 * Run image @g in a child; classify. Returns false when the run must
 * stop (a hang: the kernel is no longer trustworthy).
 */
static bool run_one(struct wstats *w, struct slot *slot, const struct gen *g,
		    const void *img, size_t len)
{
	int status = 0, pidfd, i;
	bool killed = false, accepted;
	uint64_t t0 = now_ms();
	unsigned long t;
	pid_t pid;

	memset(slot, 0, sizeof(*slot));
	fflush(stdout);
	run_lock(patches_code(g));
	pid = fork();
	if (pid < 0) {
		run_unlock(patches_code(g));
		say("fork: %s", strerror(errno));
		w->bad++;
		return false;
	}
	if (!pid)
		child(g, img, len, slot);
	pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (!wait_exit(pid, pidfd, watchdog_ms + g->alarm_ms, &status)) {
		kill(pid, SIGKILL);
		killed = true;
		if (!wait_exit(pid, pidfd, kill_ms, &status)) {
			w->hung++;
			say("HANG: image %lu (process %d, kgf%lu) still there %u ms after SIGKILL; it was in %s",
			    g->index, pid, g->index, kill_ms,
			    stage_name[slot->stage <= ST_DONE ? slot->stage : 0]);
			/* let the other worker see the stop */
			run_unlock(patches_code(g));
			/* the hung child keeps its session and so the instance */
			if (worker_inst[0])
				worker_inst_new();
			save_reproducer(g, img, len, "hang");
			if (pidfd >= 0)
				close(pidfd);
			/* the kernel may be stuck for good: usually stop here */
			return __atomic_add_fetch(&sh->hangs, 1, __ATOMIC_SEQ_CST) < max_hangs;
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	run_unlock(patches_code(g));
	w->n++;
	for (i = 0; i < SH__COUNT; i++)
		if (g->shapes & (1ULL << i))
			w->shape_n[i]++;

	if (killed) {
		w->killed++;
		w->killed_stage[slot->stage <= ST_DONE ? slot->stage : 0]++;
		for (i = 0; i < SH__COUNT; i++)
			if (g->shapes & (1ULL << i))
				w->shape_killed[i]++;
		if (w->reports < 20) {
			w->reports++;
			say("killed by the watchdog: image %lu after %u ms, in %s",
			    g->index, watchdog_ms, stage_name[slot->stage <= ST_DONE ?
							      slot->stage : 0]);
			save_reproducer(g, img, len, "killed");
		}
	} else if (WIFSIGNALED(status)) {
		/* not our signal: the kernel killed the process (an oops) */
		w->crashed++;
		say("CRASH: image %lu died of signal %d in %s", g->index,
		    WTERMSIG(status), stage_name[slot->stage <= ST_DONE ? slot->stage : 0]);
		save_reproducer(g, img, len, "crash");
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) || slot->outcome == OUT_NONE) {
		w->bad++;
		say("BAD: image %lu: exit status 0x%x, outcome %d, in %s", g->index,
		    status, slot->outcome, stage_name[slot->stage <= ST_DONE ? slot->stage : 0]);
		save_reproducer(g, img, len, "bad exit");
	} else {
		switch (slot->outcome) {
		case OUT_REJ_LOAD:
			w->rej_load++;
			if (!g->viol) {
				/* meant to be valid: a new kernel rule, or a bug here */
				w->rej_valid++;
				tally_reject(w, slot);
				if (verbose)
					say("image %lu (valid) rejected: %s", g->index, slot->msg);
			}
			break;
		case OUT_REJ_START:
			w->rej_start++;
			break;
		case OUT_RAN:
			w->ran++;
			w->hits += slot->hits;
			for (i = 0; i < SH__COUNT; i++)
				if (g->shapes & (1ULL << i))
					w->shape_ran[i]++;
			if (slot->msg[0] && strstr(slot->msg, "ktap: error: ")) {
				w->rt_errors++;
				tally_error(w, slot->msg);
			}
			break;
		default:
			w->bad++;
			say("BAD: image %lu: %s (errno %d) in %s", g->index, slot->msg,
			    slot->err, stage_name[slot->stage <= ST_DONE ? slot->stage : 0]);
			save_reproducer(g, img, len, "unexpected error");
			break;
		}
	}

	if (verbose)
		say("image %lu: outcome %d%s, reached %s, %llu ms, errno %d, hits %llu, errors %llu, drops %llu, mem %llu: %s",
		    g->index, slot->outcome, killed ? " (killed)" : "",
		    stage_name[slot->stage <= ST_DONE ? slot->stage : 0],
		    (unsigned long long)(now_ms() - t0), slot->err,
		    (unsigned long long)slot->hits, (unsigned long long)slot->errors,
		    (unsigned long long)slot->drops, (unsigned long long)slot->mem_used,
		    slot->msg);

	/* an image with a deliberate violation must not load */
	accepted = slot->stage > ST_LOAD && slot->outcome != OUT_REJ_LOAD;
	if (accepted && g->viol) {
		w->escapes++;
		for (i = 0; i < V__COUNT; i++) {
			if (!(g->viol & (1U << i)))
				continue;
			w->esc[i]++;
			if (w->esc_printed[i] < 2) {
				w->esc_printed[i]++;
				say("ESCAPE: image %lu was accepted with: %s", g->index,
				    viol_desc[i]);
				save_reproducer(g, img, len, viol_name[i]);
			}
		}
	}

	t = read_taint();
	if ((t & ~taint0 & TAINT_BAD) &&
	    !__atomic_exchange_n(&sh->taint_reported, 1, __ATOMIC_SEQ_CST)) {
		say("TAINT: the kernel is now tainted 0x%lx (was 0x%lx) after image %lu",
		    t, taint0, g->index);
		save_reproducer(g, img, len, "taint");
	}
	return true;
}

static void worker(unsigned int wi)
{
	struct wstats *w = &sh->w[wi];
	struct ki_image *im = calloc(1, sizeof(*im));
	struct gen *g = calloc(1, sizeof(*g));
	unsigned long i, done, step = count >= 20 ? count / 10 : 0;
	uint64_t t0 = now_ms();

	if (!im || !g)
		_exit(1);
	if (own_every > 1)
		worker_inst_new();
	for (;;) {
		size_t len;
		void *img;
		bool go;

		if (__atomic_load_n(&sh->stop, __ATOMIC_SEQ_CST))
			break;
		if (deadline_ms && now_ms() >= deadline_ms) {
			if (!__atomic_exchange_n(&sh->stop, 1, __ATOMIC_SEQ_CST))
				say("time limit reached: stopping early");
			break;
		}
		i = __atomic_fetch_add(&sh->next, 1, __ATOMIC_SEQ_CST);
		if (i >= first_index + count)
			break;
		generate(g, im, seed, i);
		img = ki_build(im, &len);
		if (verbose)
			say("image %lu: %zu bytes", i, len);
		go = run_one(w, &sh->slot[wi], g, img, len);
		free(img);
		done = __atomic_add_fetch(&sh->done, 1, __ATOMIC_SEQ_CST);
		if (step && done % step == 0)
			say("progress: %lu/%lu images, %llu s", done, count,
			    (unsigned long long)(now_ms() - t0) / 1000);
		if (!go) {
			__atomic_store_n(&sh->stop, 1, __ATOMIC_SEQ_CST);
			break;
		}
	}
	worker_inst_remove();
	fflush(stdout);
	_exit(0);
}

/* ------------------------------------------------------------------ */

/* The largest insn_budget LOAD accepts (UINT32_MAX: no ceiling). */
static void probe_ceiling(void)
{
	uint64_t lo = 1, hi = UINT32_MAX, mid;
	size_t len;
	void *img = ki_hello("ceiling", &len);
	int fd, r, e;

	/* accepted(lo) holds; find the largest accepted */
	while (lo < hi) {
		struct ktap_load_attr a;

		mid = lo + (hi - lo + 1) / 2;
		fd = open(KTAP_CONTROL, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			ksft_exit_fail_msg("open %s: %s\n", KTAP_CONTROL, strerror(errno));
		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.image = (uintptr_t)img;
		a.image_len = len;
		a.mem_limit_kb = 64;
		a.insn_budget = mid;
		a.pid = -1;
		a.cpu = -1;
		r = ioctl(fd, KTAP_IOC_LOAD, &a);
		e = errno;
		close(fd);
		if (!r) {
			lo = mid;
		} else {
			if (e != E2BIG && e != EINVAL)
				ksft_print_msg("insn_budget %llu refused with %s\n",
					       (unsigned long long)mid, strerror(e));
			hi = mid - 1;
		}
	}
	free(img);
	ceiling = lo;
	have_ceiling = lo < UINT32_MAX;
#ifdef KTAP_MAX_INSN_BUDGET
	if (!have_ceiling || ceiling != KTAP_MAX_INSN_BUDGET)
		ksft_print_msg("the kernel accepts insn_budget up to %u, the header says KTAP_MAX_INSN_BUDGET %u\n",
			       ceiling, (unsigned int)KTAP_MAX_INSN_BUDGET);
#endif
}

/* Merge the workers' tables at @off in struct wstats, print the top ones. */
static void summary_tally(size_t off)
{
	struct errkind all[NR_ERRKINDS * MAX_WORKERS];
	unsigned int n = 0, w, i, j;

	memset(all, 0, sizeof(all));
	for (w = 0; w < nworkers; w++) {
		const struct errkind *tab = (const void *)((const char *)&sh->w[w] + off);

		for (i = 0; i < NR_ERRKINDS && tab[i].text[0]; i++) {
			for (j = 0; j < n; j++)
				if (!strcmp(all[j].text, tab[i].text))
					break;
			if (j == n)
				all[n++] = tab[i];
			else
				all[j].n += tab[i].n;
		}
	}
	/* most frequent first */
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (all[j].n > all[i].n) {
				struct errkind t = all[i];

				all[i] = all[j];
				all[j] = t;
			}
	for (i = 0; i < n && i < 16; i++)
		ksft_print_msg("  %7lu  %s\n", all[i].n, all[i].text);
}

static void parse_disabled(const char *list)
{
	char *copy = strdup(list), *tok, *save = NULL;
	int i;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < SH__COUNT; i++)
			if (!strcasecmp(tok, shape_name[i]))
				break;
		if (i == SH__COUNT) {
			fprintf(stderr, "unknown shape %s; shapes:", tok);
			for (i = 0; i < SH__COUNT; i++)
				fprintf(stderr, " %s", shape_name[i]);
			fprintf(stderr, "\n");
			exit(2);
		}
		disabled |= 1ULL << i;
	}
	free(copy);
}

static void help_exit(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-s seed] [-i index] [-x] [-v] [-D shapes] [-f image] [-j workers]\n"
		"          [-k hangs] [-n N] [-t seconds] [-w watchdog_ms] [count [seed]]\n"
		"  -i N   only image N of the seed's stream\n"
		"  -k N   go on after hangs, up to N (default 1: stop at the first)\n"
		"  -n N   every Nth image makes its own tracing instance, the others\n"
		"         write into their worker's (default 16; 1: all their own)\n"
		"  -D S,S do not generate these shapes (SKIP_END, GAP, COND_BACK,\n"
		"         SELF_LOOP, BACK_JUMP, BIG_TABLE, BUDGET_BIG, TAIL)\n"
		"  -x     print the image(s), do not run them\n"
		"  -f F   run the image in file F once (default attributes)\n",
		prog);
	exit(2);
}

static int run_file(const char *path)
{
	struct gen g;
	struct slot res;
	struct stat stt;
	void *img;
	int fd = open(path, O_RDONLY), status = 0;
	pid_t pid;
	struct slot *shared_res;

	if (fd < 0 || fstat(fd, &stt))
		ksft_exit_fail_msg("%s: %s\n", path, strerror(errno));
	img = malloc(stt.st_size + 1);
	if (!img || read(fd, img, stt.st_size) != stt.st_size)
		ksft_exit_fail_msg("%s: short read\n", path);
	close(fd);
	memset(&g, 0, sizeof(g));
	g.cpu = -1;
	g.run_ms = 20;
	g.alarm_ms = 250;
	shared_res = mmap(NULL, sizeof(*shared_res), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared_res == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	fflush(stdout);
	pid = fork();
	if (!pid)
		child(&g, img, stt.st_size, shared_res);
	if (!wait_exit(pid, -1, watchdog_ms, &status)) {
		kill(pid, SIGKILL);
		if (!wait_exit(pid, -1, kill_ms, &status)) {
			ksft_print_msg("hung in %s\n", stage_name[shared_res->stage]);
			return 1;
		}
		ksft_print_msg("killed by the watchdog in %s\n", stage_name[shared_res->stage]);
		return 1;
	}
	res = *shared_res;
	ksft_print_msg("outcome %d, stage %s, errno %d, hits %llu: %s\n", res.outcome,
		       stage_name[res.stage <= ST_DONE ? res.stage : 0], res.err,
		       (unsigned long long)res.hits, res.msg);
	return WIFSIGNALED(status) || res.outcome == OUT_BAD;
}

int main(int argc, char **argv)
{
	bool only = false, print_only = false, explicit = false;
	const char *file = NULL, *env;
	struct wstats tot;
	unsigned long total_esc[V__COUNT];
	unsigned int wi;
	char buf[1024];
	int opt, i;
	bool ok;

	count = DEF_COUNT;
	seed = DEF_SEED;
	env = getenv("KTAP_GEN_FUZZ_COUNT");
	if (env && *env) {
		count = strtoul(env, NULL, 0);
		explicit = true;
	}
	env = getenv("KTAP_GEN_FUZZ_SEED");
	if (env && *env) {
		seed = strtoull(env, NULL, 0);
		explicit = true;
	}
	env = getenv("KTAP_GEN_FUZZ_DISABLE");
	if (env && *env)
		parse_disabled(env);
	env = getenv("KTAP_GEN_FUZZ_WATCHDOG");
	if (env && *env)
		watchdog_ms = strtoul(env, NULL, 0);
	while ((opt = getopt(argc, argv, "i:s:xvD:f:j:k:n:t:w:h")) != -1) {
		switch (opt) {
		case 'i':
			first_index = strtoul(optarg, NULL, 0);
			only = true;
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			explicit = true;
			break;
		case 'x':
			print_only = true;
			break;
		case 'v':
			verbose++;
			break;
		case 'f':
			file = optarg;
			break;
		case 'j':
			nworkers = strtoul(optarg, NULL, 0);
			if (nworkers < 1 || nworkers > MAX_WORKERS)
				help_exit(argv[0]);
			break;
		case 'k':
			max_hangs = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			own_every = strtoul(optarg, NULL, 0);
			if (!own_every)
				help_exit(argv[0]);
			break;
		case 'D':
			parse_disabled(optarg);
			break;
		case 't':
			deadline_ms = strtoull(optarg, NULL, 0) * 1000;
			break;
		case 'w':
			watchdog_ms = strtoul(optarg, NULL, 0);
			break;
		default:
			help_exit(argv[0]);
		}
	}
	if (optind < argc) {
		count = strtoul(argv[optind++], NULL, 0);
		explicit = true;
	}
	if (optind < argc)
		seed = strtoull(argv[optind++], NULL, 0);
	if (optind < argc)
		help_exit(argv[0]);
	if (only)
		count = 1;
	if (!deadline_ms) {
		env = getenv("KTAP_GEN_FUZZ_SECONDS");
		if (env && *env)
			deadline_ms = strtoull(env, NULL, 0) * 1000;
		else if (!explicit && !only)
			deadline_ms = DEF_SECONDS * 1000ULL;
	}
	if (deadline_ms)
		deadline_ms += now_ms();

	if (print_only) {
		struct ki_image *im = calloc(1, sizeof(*im));
		struct gen *g = calloc(1, sizeof(*g));
		unsigned long n;

		unsigned long mismatch = 0, nviol = 0;

		ev_enter = 1;	/* placeholder: no tracefs needed */
		for (n = first_index; n < first_index + count; n++) {
			const char *broken;
			size_t len;
			void *img;

			generate(g, im, seed, n);
			img = ki_build(im, &len);
			broken = self_check(g);
			nviol += !!g->viol;
			if (!broken != !g->viol) {
				bits_list(buf, sizeof(buf), g->viol, viol_name, V__COUNT);
				say("image %lu: MISMATCH: violations %s, self-check %s",
				    n, buf, broken ?: "ok");
				mismatch++;
			}
			bits_list(buf, sizeof(buf), g->shapes, shape_name, SH__COUNT);
			say("image %lu: %zu bytes, shapes %s", n, len, buf);
			bits_list(buf, sizeof(buf), g->viol, viol_name, V__COUNT);
			say("image %lu: violations %s", n, buf);
			if (only || verbose)
				print_listing(g, im);
			if (only)
				print_hex("hex", n, img, len);
			free(img);
		}
		say("%lu images, %lu with violations, %lu self-check mismatches",
		    count, nviol, mismatch);
		free(im);
		free(g);
		return !!mismatch;
	}

	ksft_print_header();
	if (access(KTAP_CONTROL, F_OK))
		ksft_exit_skip("%s missing (CONFIG_KTAP?)\n", KTAP_CONTROL);
	ksft_set_plan(1);
	if (file) {
		ok = !run_file(file);
		ksft_test_result(ok, "image %s rejected or stopped cleanly\n", file);
		ksft_finished();
	}
	ev_enter = ki_event_id("syscalls/sys_enter_getppid");
	probe_ceiling();
	taint0 = read_taint();
	ksft_print_msg("gen-fuzz: %lu images from index %lu, seed 0x%llx, %u workers, own instance every %lu, watchdog %u+%u ms, insn_budget ceiling %s%u, getppid event %d\n",
		       count, first_index, (unsigned long long)seed, only ? 1 : nworkers, own_every,
		       watchdog_ms, kill_ms, have_ceiling ? "" : "none: accepted up to ",
		       ceiling, ev_enter);
	if (only) {
		struct ki_image *im = calloc(1, sizeof(*im));
		struct gen *g = calloc(1, sizeof(*g));
		size_t len;
		void *img;

		generate(g, im, seed, first_index);
		img = ki_build(im, &len);
		bits_list(buf, sizeof(buf), g->shapes, shape_name, SH__COUNT);
		ksft_print_msg("shapes %s\n", buf);
		bits_list(buf, sizeof(buf), g->viol, viol_name, V__COUNT);
		ksft_print_msg("violations %s\n", buf);
		if (verbose) {
			print_listing(g, im);
			print_hex("hex", first_index, img, len);
		}
		free(img);
		nworkers = 1;
	}

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	memset(sh, 0, sizeof(*sh));
	sh->next = first_index;
	fflush(stdout);
	for (wi = 0; wi < nworkers; wi++) {
		pid_t pid = fork();

		if (pid < 0)
			ksft_exit_fail_msg("fork: %s\n", strerror(errno));
		if (!pid)
			worker(wi);
	}
	for (wi = 0; wi < nworkers; wi++) {
		int st;

		/* a worker stuck on a hung child waits for it forever */
		while (wait(&st) < 0 && errno == EINTR)
			;
	}

	memset(&tot, 0, sizeof(tot));
	memset(total_esc, 0, sizeof(total_esc));
	for (wi = 0; wi < nworkers; wi++) {
		struct wstats *w = &sh->w[wi];

		tot.n += w->n;
		tot.rej_load += w->rej_load;
		tot.rej_start += w->rej_start;
		tot.ran += w->ran;
		tot.killed += w->killed;
		tot.hung += w->hung;
		tot.bad += w->bad;
		tot.crashed += w->crashed;
		tot.escapes += w->escapes;
		tot.rt_errors += w->rt_errors;
		tot.rej_valid += w->rej_valid;
		tot.hits += w->hits;
		for (i = 0; i < V__COUNT; i++)
			total_esc[i] += w->esc[i];
		for (i = 0; i < SH__COUNT; i++) {
			tot.shape_n[i] += w->shape_n[i];
			tot.shape_ran[i] += w->shape_ran[i];
			tot.shape_killed[i] += w->shape_killed[i];
		}
		for (i = 0; i <= ST_DONE; i++)
			tot.killed_stage[i] += w->killed_stage[i];
	}

	ksft_print_msg("shapes: images holding it / ran to a stop / killed by the watchdog\n");
	for (i = 0; i < SH__COUNT; i++)
		ksft_print_msg("  %-13s %7lu %7lu %5lu  %s\n", shape_name[i], tot.shape_n[i],
			       tot.shape_ran[i], tot.shape_killed[i], shape_desc[i]);
	ksft_print_msg("runtime errors of the images that ran (%lu):\n", tot.rt_errors);
	summary_tally(offsetof(struct wstats, err));
	if (tot.rej_valid) {
		ksft_print_msg("images meant to be valid that LOAD refused (%lu), by reason:\n",
			       tot.rej_valid);
		summary_tally(offsetof(struct wstats, rej));
	}
	ksft_print_msg("handler runs (stats.hits) of the images that ran: %lu\n", tot.hits);
	if (tot.killed) {
		ksft_print_msg("killed by the watchdog, by where the process was:\n");
		for (i = 0; i <= ST_DONE; i++)
			if (tot.killed_stage[i])
				ksft_print_msg("  %-9s %lu\n", stage_name[i], tot.killed_stage[i]);
	}
	if (tot.escapes) {
		ksft_print_msg("verifier escapes: %lu images with a violation were accepted:\n",
			       tot.escapes);
		for (i = 0; i < V__COUNT; i++)
			if (total_esc[i])
				ksft_print_msg("  %-11s %lu  %s\n", viol_name[i], total_esc[i],
					       viol_desc[i]);
	}
	if (sh->taint_reported)
		ksft_print_msg("the kernel was tainted during the run: 0x%lx (was 0x%lx)\n",
			       read_taint(), taint0);
	ksft_print_msg("gen-fuzz: %lu images, %lu rejected at load, %lu rejected at start, %lu ran to a clean stop, %lu killed by watchdog, %lu hung; seed 0x%llx\n",
		       tot.n, tot.rej_load, tot.rej_start, tot.ran, tot.killed, tot.hung,
		       (unsigned long long)seed);
	ksft_print_msg("gen-fuzz: %lu crashed, %lu unexpected errors, %lu verifier escapes, taint %s\n",
		       tot.crashed, tot.bad, tot.escapes, sh->taint_reported ? "NEW" : "none");
	ok = !tot.hung && !tot.crashed && !tot.bad && !tot.escapes && !sh->taint_reported;
	if (tot.n >= 200 && (!tot.ran || !tot.rej_load)) {
		ksft_print_msg("the mix did not exercise both rejection and execution\n");
		ok = false;
	}
	ksft_test_result(ok, "%lu generated images rejected or run to a clean stop\n", tot.n);
	ksft_finished();
}
