// SPDX-License-Identifier: GPL-2.0
/*
 * Sessions of the ktap tracer through tracing/ktap/control: the ioctls,
 * the output stream and its tracing instance, several sessions at once,
 * teardown on SIGKILL and the permission checks. Output is KTAP (the
 * kselftest format, which has nothing to do with the tracer's name).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <linux/capability.h>

#include "../kselftest.h"
#include "ktap_image.h"

/* A failed condition of a test is printed and counted in its `fails`. */
#define CHECK(cond, ...) do {					\
		if (!(cond)) {					\
			ksft_print_msg(__VA_ARGS__);		\
			fails++;				\
		}						\
	} while (0)

static int open_control(void)
{
	return open(KTAP_CONTROL, O_RDWR | O_CLOEXEC);
}

static int count_sessions(void)
{
	return ki_count_sessions();
}

/*
 * Builtin ids are no ABI, so the kernel's count is only checked to cover
 * the builtins it must know by name (print ... print_log2hist): it may
 * grow.
 */
#define KI_NR_BUILTINS	39

static void test_version(void)
{
	struct ktap_version v = { .size = sizeof(v) };
	struct utsname u;
	int fd = open_control();

	if (fd < 0) {
		ksft_test_result_fail("version: open: %s\n", strerror(errno));
		return;
	}
	uname(&u);
	if (ioctl(fd, KTAP_IOC_VERSION, &v) ||
	    v.abi_version != KTAP_ABI_VERSION ||
	    v.nr_opcodes != KTAP_OP__COUNT || v.nr_builtins < KI_NR_BUILTINS ||
	    strcmp(v.release, u.release))
		ksft_test_result_fail("version: abi %u ops %u builtins %u release '%s'\n",
				      v.abi_version, v.nr_opcodes,
				      v.nr_builtins, v.release);
	else
		ksft_test_result_pass("version: abi %u on %s\n",
				      v.abi_version, v.release);
	close(fd);
}

static int load_attr(struct ktap_load_attr *a)
{
	int fd = open_control(), ret;

	ret = ioctl(fd, KTAP_IOC_LOAD, a) ? -errno : 0;
	close(fd);
	return ret;
}

static void test_bad_attr(void)
{
	size_t len;
	void *img = ki_hello("x", &len);
	struct {
		struct ktap_load_attr a;
		char tail[8];
	} big;
	struct ktap_load_attr a;
	int fails = 0, r;

#define BASE() do {						\
		memset(&a, 0, sizeof(a));			\
		a.size = sizeof(a);				\
		a.image = (uintptr_t)img;			\
		a.image_len = len;				\
		a.pid = -1;					\
		a.cpu = -1;					\
	} while (0)
#define EXPECT(what, want) do {					\
		r = load_attr(&a);				\
		if (r != (want)) {				\
			ksft_print_msg("%s: got %d want %d\n",	\
				       what, r, want);		\
			fails++;				\
		}						\
	} while (0)

	BASE(); a.__reserved[2] = 1;		EXPECT("reserved", -EINVAL);
	BASE(); a.flags = 0x80;			EXPECT("flags", -EINVAL);
	BASE(); a.image_len = 0;		EXPECT("empty image", -EINVAL);
	BASE(); a.image_len = KTAP_MAX_IMAGE + 1; EXPECT("huge image", -E2BIG);
	BASE(); a.mem_limit_kb = 1U << 30;	EXPECT("huge pool", -E2BIG);
	BASE(); a.buffer_kb = KTAP_MAX_BUFFER_KB + 1; EXPECT("huge buffer", -E2BIG);
	BASE(); a.cpu = -5;			EXPECT("cpu -5", -EINVAL);
	BASE(); a.image = 16;			EXPECT("bad pointer", -EFAULT);
	BASE(); a.size = 4;			EXPECT("short size", -EINVAL);

	memset(&big, 0, sizeof(big));
	BASE();
	big.a = a;
	big.a.size = sizeof(big);
	big.tail[3] = 1;
	r = load_attr(&big.a);
	if (r != -E2BIG) {
		ksft_print_msg("nonzero tail: got %d want %d\n", r, -E2BIG);
		fails++;
	}
	BASE();
	EXPECT("valid", 0);
	free(img);
	ksft_test_result(!fails, "load attribute checks\n");
}

/* Index of the first nonzero byte of @p, or @n. */
static size_t first_nonzero(const unsigned char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n && !p[i]; i++)
		;
	return i;
}

/*
 * Extensible arguments (the rules in <linux/ktap.h>): the command's
 * encoded size is the caller's, so a tool built against a larger or
 * smaller struct reaches the same ioctl; output structs come back with
 * the common part and zeros beyond it, input structs may grow by zeros.
 */
static void test_abi_sizes(void)
{
	struct {
		struct ktap_version v;
		unsigned char tail[24];
	} bigv;
	struct {
		__u32 size, abi_version, guard[2];
	} smallv;
	struct {
		struct ktap_stats st;
		unsigned char tail[16];
	} bigs;
	struct {
		struct ktap_load_attr a;
		unsigned char tail[16];
	} biga;
	struct {
		__u32 size, state, guard[2];
	} smalls;
	size_t len, i;
	void *img = ki_hello("sizes", &len);
	int fd = open_control(), fails = 0, r;

	memset(&bigv, 0xff, sizeof(bigv));
	bigv.v.size = sizeof(bigv);
	r = ioctl(fd, _IOWR(KTAP_IOC_MAGIC, 0x00, typeof(bigv)), &bigv);
	CHECK(!r && bigv.v.size == sizeof(bigv.v) &&
	      bigv.v.abi_version == KTAP_ABI_VERSION,
	      "larger VERSION: r %d size %u abi %u\n", r, bigv.v.size,
	      bigv.v.abi_version);
	i = first_nonzero(bigv.tail, sizeof(bigv.tail));
	CHECK(i == sizeof(bigv.tail), "larger VERSION: tail[%zu] = %#x\n", i,
	      bigv.tail[i]);

	memset(&smallv, 0xaa, sizeof(smallv));
	smallv.size = 8;
	r = ioctl(fd, _IOWR(KTAP_IOC_MAGIC, 0x00, typeof(smallv)), &smallv);
	CHECK(!r && smallv.size == sizeof(struct ktap_version) &&
	      smallv.abi_version == KTAP_ABI_VERSION &&
	      smallv.guard[0] == 0xaaaaaaaa && smallv.guard[1] == 0xaaaaaaaa,
	      "smaller VERSION: r %d size %u abi %u guard %#x\n", r,
	      smallv.size, smallv.abi_version, smallv.guard[0]);

	/* LOAD through a command that encodes the larger size */
	memset(&biga, 0, sizeof(biga));
	biga.a.size = sizeof(biga);
	biga.a.image = (uintptr_t)img;
	biga.a.image_len = len;
	biga.a.pid = -1;
	biga.a.cpu = -1;
	biga.tail[5] = 1;
	r = ioctl(fd, _IOW(KTAP_IOC_MAGIC, 0x01, typeof(biga)), &biga);
	CHECK(r == -1 && errno == E2BIG,
	      "larger LOAD, unknown field set: r %d %s\n", r, strerror(errno));
	biga.a.size = KTAP_LOAD_ATTR_SIZE_VER0 - 4;
	r = ioctl(fd, _IOW(KTAP_IOC_MAGIC, 0x01, typeof(biga)), &biga);
	CHECK(r == -1 && errno == EINVAL,
	      "LOAD below its first size: r %d %s\n", r, strerror(errno));
	biga.a.size = sizeof(biga);
	biga.tail[5] = 0;
	r = ioctl(fd, _IOW(KTAP_IOC_MAGIC, 0x01, typeof(biga)), &biga);
	CHECK(!r, "larger LOAD, zero tail: %s\n", strerror(errno));

	memset(&bigs, 0xff, sizeof(bigs));
	bigs.st.size = sizeof(bigs);
	r = ioctl(fd, _IOWR(KTAP_IOC_MAGIC, 0x04, typeof(bigs)), &bigs);
	CHECK(!r && bigs.st.size == sizeof(bigs.st) &&
	      bigs.st.state == KTAP_STATE_LOADED && !bigs.st.nr_skipped,
	      "larger STATS: r %d size %u state %u\n", r, bigs.st.size,
	      bigs.st.state);
	i = first_nonzero(bigs.tail, sizeof(bigs.tail));
	CHECK(i == sizeof(bigs.tail), "larger STATS: tail[%zu] = %#x\n", i,
	      bigs.tail[i]);
	memset(&smalls, 0xaa, sizeof(smalls));
	smalls.size = 8;
	r = ioctl(fd, _IOWR(KTAP_IOC_MAGIC, 0x04, typeof(smalls)), &smalls);
	CHECK(!r && smalls.size == sizeof(struct ktap_stats) &&
	      smalls.state == KTAP_STATE_LOADED &&
	      smalls.guard[0] == 0xaaaaaaaa,
	      "smaller STATS: r %d size %u state %u guard %#x\n", r,
	      smalls.size, smalls.state, smalls.guard[0]);
	smalls.size = 2;
	r = ioctl(fd, KTAP_IOC_STATS, &smalls);
	CHECK(r == -1 && errno == EINVAL, "STATS of 2 bytes: r %d\n", r);
	smalls.size = 2 * 4096;
	r = ioctl(fd, KTAP_IOC_STATS, &smalls);
	CHECK(r == -1 && errno == E2BIG, "STATS of 8 KB: r %d\n", r);

	r = ioctl(fd, _IO(KTAP_IOC_MAGIC, 0x3f));
	CHECK(r == -1 && errno == ENOTTY, "unknown number: r %d\n", r);
	r = ioctl(fd, _IO(KTAP_IOC_MAGIC + 1, 0x02));
	CHECK(r == -1 && errno == ENOTTY, "other magic: r %d\n", r);
	close(fd);
	free(img);
	ksft_test_result(!fails,
			 "extensible ioctl arguments: larger and smaller VERSION, LOAD, STATS\n");
}

#define ERROR_LOG	"/sys/kernel/tracing/error_log"

/* tracing/error_log as text (at most 64 KB), after emptying it if @clear. */
static char *error_log(int clear)
{
	int fd = open(ERROR_LOG, clear ? O_WRONLY | O_TRUNC : O_RDONLY);
	char *out;

	if (fd < 0)
		return NULL;
	if (clear) {
		close(fd);
		return NULL;
	}
	out = ki_read_all(fd, 1 << 16);
	close(fd);
	return out;
}

/*
 * A rejected image: -EINVAL with the reason in the caller's log, and in
 * tracing/error_log, also when the caller passes no log buffer.
 */
static void test_reject_log(void)
{
	char junk[64], log[512] = "", cmd[600];
	int fd = open_control(), r, r2;
	char *el;

	memset(junk, 0x5a, sizeof(junk));
	error_log(1);
	r = ki_load(fd, junk, sizeof(junk), log, sizeof(log));
	r2 = ki_load(fd, junk, sizeof(junk), NULL, 0);
	el = error_log(0);
	snprintf(cmd, sizeof(cmd), "  Command: %.*s\n", (int)strcspn(log, "\n"),
		 log);
	ksft_test_result(r == -1 && errno == EINVAL && r2 == -1 && log[0] && el &&
			 strstr(el, "ktap: error: bytecode image rejected") &&
			 strstr(el, cmd) &&
			 strstr(strstr(el, cmd) + 1, cmd),
			 "garbage image rejected with a log and in error_log: %s\n",
			 log[0] ? log : "(empty log)");
	if (el && !strstr(el, cmd))
		ksft_print_msg("error_log: %s", el);
	free(el);
	close(fd);
}

/* LOAD, START, run @work, STOP, read to EOF. */
static char *run_prog(void *img, size_t len, void (*work)(void),
		      struct ktap_stats *st)
{
	char log[1024] = "";
	char *out;
	int fd = open_control();

	if (fd < 0)
		return NULL;
	if (ki_load(fd, img, len, log, sizeof(log))) {
		ksft_print_msg("load: %s: %s\n", strerror(errno), log);
		close(fd);
		return NULL;
	}
	if (ioctl(fd, KTAP_IOC_START)) {
		ksft_print_msg("start: %s\n", strerror(errno));
		close(fd);
		return NULL;
	}
	if (work)
		work();
	if (st) {
		memset(st, 0, sizeof(*st));
		st->size = sizeof(*st);
		ioctl(fd, KTAP_IOC_STATS, st);
	}
	ioctl(fd, KTAP_IOC_STOP);
	out = ki_read_all(fd, 1 << 20);
	close(fd);
	return out;
}

static void test_hello(void)
{
	size_t len;
	void *img = ki_hello("hello", &len);
	char *out = run_prog(img, len, NULL, NULL);

	ksft_test_result(out && strstr(out, "hello\n"),
			 "print(\"hello\") reaches read(): '%s'\n",
			 out ? out : "(null)");
	free(out);
	free(img);
}

static void getppid_x20(void)
{
	for (int i = 0; i < 20; i++)
		syscall(SYS_getppid);
}

static void fork_one(void)
{
	pid_t pid = fork();

	if (!pid)
		_exit(0);
	waitpid(pid, NULL, 0);
}

static int count_lines(const char *s, const char *needle)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static void test_tracepoint(void)
{
	int id = ki_event_id("syscalls/sys_enter_getppid");
	int xid = ki_event_id("syscalls/sys_exit_getppid");
	struct ktap_stats st;
	size_t len;
	void *img;
	char *out;

	if (id < 0 || xid < 0) {
		ksft_test_result_skip("tracepoint: no syscall events\n");
		return;
	}
	/* one glob the kernel resolves to both events at attach */
	img = ki_probe_prog(KTAP_PROBE_TRACEPOINT, 0, "syscalls:sys_*_getppid",
			    "syscalls:sys_*_getppid", 0, "probe end", &len);
	out = run_prog(img, len, getppid_x20, &st);
	ksft_test_result(out && count_lines(out, "sys_getppid()\n") >= 20 &&
			 count_lines(out, "sys_getppid -> 0x") >= 20 &&
			 strstr(out, "probe end\n") && st.hits >= 40 &&
			 st.nr_attached == 1 && st.state == KTAP_STATE_RUNNING,
			 "tracepoint getppid: %d enter, %d exit lines, hits %llu, attached %u\n",
			 out ? count_lines(out, "sys_getppid()\n") : -1,
			 out ? count_lines(out, "sys_getppid -> 0x") : -1,
			 (unsigned long long)st.hits, st.nr_attached);
	free(out);
	free(img);
}

static void sleep_300ms(void)
{
	usleep(300000);
}

/* Handlers that print e.tostring() on the other probe kinds. */
static void test_other_probes(void)
{
	static const struct {
		uint32_t type, flags;
		const char *spec, *target;
		uint64_t arg;
		void (*work)(void);
		const char *want;
		int min;
	} t[] = {
		{ KTAP_PROBE_KPROBE, 0, "kprobe:__x64_sys_getppid",
		  "__x64_sys_getppid", 0, getppid_x20,
		  "__x64_sys_getppid: (", 20 },
		{ KTAP_PROBE_KPROBE, KTAP_PROBE_F_RETURN, "kprobe:__x64_sys_getppid!",
		  "__x64_sys_getppid", 0, getppid_x20,
		  ") arg1=0x", 20 },
		{ KTAP_PROBE_TIMER, 0, "tick-10ms", NULL, 10000000, sleep_300ms,
		  "tick-10ms\n", 5 },
		{ KTAP_PROBE_PROFILE, 0, "profile-1ms", NULL, 1000000, sleep_300ms,
		  "profile-1ms\n", 5 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		size_t len;
		void *img = ki_probe_prog(t[i].type, t[i].flags, t[i].spec,
					  t[i].target, t[i].arg, "end", &len);
		char *out = run_prog(img, len, t[i].work, NULL);
		int n = out ? count_lines(out, t[i].want) : -1;

		if (n < t[i].min && out)
			ksft_print_msg("%.200s\n", out);
		ksft_test_result(n >= t[i].min, "%s: %d x '%s'\n", t[i].spec, n,
				 t[i].want);
		free(out);
		free(img);
	}
}

/*
 * e.FIELD on syscall and other events, synthetic fields included: by
 * name (GETFIELD), and for the fields the event's own format has (@fmt)
 * also through EVFIELD, whose offset the kernel resolves at attach. The
 * common_* fields are not in an event's own format: read by name only.
 */
static void test_fields(void)
{
	char ppid[32], pidline[32];
	static const struct {
		const char *event, *field;
		const char *want;	/* NULL: our parent's pid; "": our pid */
		int fmt;		/* a field of the event's format */
	} t[] = {
		{ "syscalls:sys_enter_getppid", "name", "sys_enter_getppid\n", 0 },
		{ "syscalls:sys_enter_getppid", "sc_nr", "110\n", 0 },
		{ "syscalls:sys_enter_getppid", "sc_is_enter", "true\n", 0 },
		{ "syscalls:sys_exit_getppid", "sc_is_enter", "false\n", 0 },
		{ "syscalls:sys_exit_getppid", "retval", NULL, 0 },
		{ "syscalls:sys_exit_getppid", "ret", NULL, 1 },
		{ "syscalls:sys_enter_getppid", "common_pid", "", 0 },
		{ "syscalls:sys_enter_getppid", "__syscall_nr", "110\n", 1 },
		{ "raw_syscalls:sys_enter", "id", "110\n", 1 },
		{ "raw_syscalls:sys_exit", "ret", NULL, 1 },
		{ "sched:sched_process_fork", "parent_pid", "", 1 },
		{ "sched:sched_process_fork", "parent_comm", "ktap_session_te\n", 1 },
	};
	size_t n_t = ARRAY_SIZE(t);

	snprintf(ppid, sizeof(ppid), "%d\n", getppid());
	snprintf(pidline, sizeof(pidline), "%d\n", getpid());
	for (size_t j = 0; j < 2 * n_t; j++) {
		size_t i = j % n_t;
		int evfield = j >= n_t;
		const char *want = !t[i].want ? ppid : *t[i].want ? t[i].want : pidline;
		size_t len;
		void *img;
		char *out;
		int n;

		if (evfield && !t[i].fmt)
			continue;
		img = ki_field_prog(t[i].event, t[i].field, evfield, &len);
		out = run_prog(img, len, strstr(t[i].event, "fork") ?
			       fork_one : getppid_x20, NULL);
		n = out ? count_lines(out, want) : -1;
		ksft_test_result(n >= 1, "%s: %s%s prints %.*s (%d times)\n",
				 t[i].event, evfield ? "EVFIELD " : "e.",
				 t[i].field, (int)strlen(want) - 1, want, n);
		if (n < 1 && out)
			ksft_print_msg("got: %.120s\n", out);
		free(out);
		free(img);
	}
}

/* LOAD's pid and cpu filters: events of other processes/CPUs are not seen. */
static int filtered_hits(void *img, size_t len, int pid, int cpu)
{
	struct ktap_stats st = { .size = sizeof(st) };
	int fd = open_control();

	if (fd < 0 || ki_load_filtered(fd, img, len, NULL, 0, pid, cpu) ||
	    ioctl(fd, KTAP_IOC_START)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	getppid_x20();
	ioctl(fd, KTAP_IOC_STATS, &st);
	close(fd);
	return st.hits;
}

static void test_filters(void)
{
	int mine, other, cpu0, cpu1;
	cpu_set_t set;
	size_t len;
	void *img;

	img = ki_probe_prog(KTAP_PROBE_TRACEPOINT, 0, "getppid",
			    "syscalls:sys_enter_getppid", 0, "end", &len);
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		ksft_test_result_skip("filters: cannot pin to CPU 0\n");
		free(img);
		return;
	}
	mine = filtered_hits(img, len, getpid(), -1);
	other = filtered_hits(img, len, getppid(), -1);
	cpu0 = filtered_hits(img, len, -1, 0);
	cpu1 = sysconf(_SC_NPROCESSORS_ONLN) > 1 ?
	       filtered_hits(img, len, getpid(), 1) : 0;
	CPU_ZERO(&set);
	for (int i = 0; i < CPU_SETSIZE; i++)
		CPU_SET(i, &set);
	sched_setaffinity(0, sizeof(set), &set);
	ksft_test_result(mine == 20 && other == 0 && cpu0 >= 20 && cpu1 == 0,
			 "pid filter: own %d, parent's %d; cpu filter: cpu0 %d, cpu1 %d\n",
			 mine, other, cpu0, cpu1);
	free(img);
}

static int injectable(const char *fn)
{
	FILE *f = fopen("/sys/kernel/debug/error_injection/list", "r");
	char line[256];
	int found = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, fn, strlen(fn)) && line[strlen(fn)] == '\t')
			found = 1;
	fclose(f);
	return found;
}

/*
 * e.set_retval(-EIO) in an entry kprobe with KTAP_PROBE_F_OVERRIDE of an
 * error-injectable function: its body is skipped and getppid() fails.
 */
static void test_set_retval(void)
{
	struct ki_image im = { 0 };
	struct ki_func *m = ki_func(&im, 0, 4);
	struct ki_func *h = ki_func(&im, 1, 4);
	uint32_t ks = ki_kstr(&im, "set_retval");
	uint32_t p = ki_probe(&im, KTAP_PROBE_KPROBE, KTAP_PROBE_F_OVERRIDE,
			      "kprobe:__do_sys_getppid", "__do_sys_getppid",
			      0);
	char log[512] = "";
	int fd, r, err;
	size_t len;
	void *img;

	if (!injectable("__do_sys_getppid")) {
		ksft_test_result_skip("set_retval: __do_sys_getppid not error-injectable here\n");
		return;
	}
	ki_op(m, KTAP_INSN_BX(KTAP_OP_CLOSURE, 0, 1));
	ki_op(m, KTAP_INSN_BX(KTAP_OP_ATTACH, 0, p));
	ki_op(m, KTAP_INSN(KTAP_OP_RETURN, 0, 0, 0));
	ki_op(h, KTAP_INSN(KTAP_OP_GETFIELD, 1, 0, ks));
	ki_op(h, KTAP_INSN_BX(KTAP_OP_LOADI, 2, -EIO));
	ki_op(h, KTAP_INSN(KTAP_OP_CALL, 1, 1, 0));
	ki_op(h, KTAP_INSN(KTAP_OP_RETURN, 0, 0, 0));
	img = ki_build(&im, &len);
	fd = open_control();
	/* only this process: every other getppid() of the system runs */
	if (fd < 0 || ki_load_filtered(fd, img, len, log, sizeof(log), getpid(), -1) ||
	    ioctl(fd, KTAP_IOC_START)) {
		ksft_test_result_fail("set_retval: %s %s\n", strerror(errno), log);
	} else {
		r = syscall(SYS_getppid);
		err = errno;
		ioctl(fd, KTAP_IOC_STOP);
		ksft_test_result(r == -1 && err == EIO && syscall(SYS_getppid) > 0,
				 "set_retval(-EIO) at the entry of __do_sys_getppid: getppid() = %d, errno %d\n",
				 r, err);
	}
	if (fd >= 0)
		close(fd);
	free(img);
}

/* Does @path exist? */
static int exists(const char *path)
{
	return !access(path, F_OK);
}

/* Wait up to @secs seconds for @path to be gone. */
static int gone_within(const char *path, int secs)
{
	int i;

	for (i = 0; i < secs * 10 && exists(path); i++)
		usleep(100000);
	return !exists(path);
}

/*
 * The output is a tracing instance: a named one here, read through its
 * trace and trace_pipe files, with the ktap:output format ftrace shows;
 * it goes with the session, also when a reader still holds it open at
 * close (then once the reader is done). An instance the user made is
 * written into and kept. Bad and taken names are refused.
 */
static void test_instance(void)
{
	const char *dir = KTAP_INSTANCES "/ktap-selftest";
	struct ktap_load_attr a;
	struct ktap_stats st;
	char buf[4096], *tr = NULL;
	size_t len;
	void *img = ki_hello("via the instance", &len);
	int fd = open_control(), pfd = -1, fails = 0, r, tfd;
	ssize_t n = 0;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.image = (uintptr_t)img;
	a.image_len = len;
	a.pid = -1;
	a.cpu = -1;
	a.instance = (uintptr_t)"ktap-selftest";
	r = ioctl(fd, KTAP_IOC_LOAD, &a);
	CHECK(!r, "LOAD into ktap-selftest: %s\n", strerror(errno));
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	r = ioctl(fd, KTAP_IOC_STATS, &st);
	CHECK(!r && !strcmp(st.instance, "ktap-selftest"),
	      "STATS names the instance: '%s'\n", st.instance);
	CHECK(exists(KTAP_INSTANCES "/ktap-selftest/events/ktap/output/format"),
	      "no events/ktap/output/format in the instance\n");
	if (ioctl(fd, KTAP_IOC_START) || ioctl(fd, KTAP_IOC_STOP))
		CHECK(0, "START/STOP: %s\n", strerror(errno));

	tfd = open(KTAP_INSTANCES "/ktap-selftest/trace", O_RDONLY);
	if (tfd >= 0) {
		tr = ki_read_all(tfd, 1 << 16);
		close(tfd);
	}
	CHECK(tr && strstr(tr, " output: via the instance\n"),
	      "trace of the instance: %s\n", tr ? tr : strerror(errno));
	free(tr);
	pfd = open(KTAP_INSTANCES "/ktap-selftest/trace_pipe",
		   O_RDONLY | O_NONBLOCK);
	if (pfd >= 0)
		n = read(pfd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	CHECK(n > 0 && strstr(buf, "via the instance"),
	      "trace_pipe of the instance: %zd '%s'\n", n, buf);

	/* a reader holds the instance: it stays, its name still taken */
	close(fd);
	CHECK(exists(dir), "the instance went while trace_pipe was open\n");
	fd = open_control();
	r = ioctl(fd, KTAP_IOC_LOAD, &a);
	CHECK(r == -1 && errno == EEXIST,
	      "a held instance's name is refused: r %d %s\n", r,
	      strerror(errno));
	close(fd);
	if (pfd >= 0)
		close(pfd);
	CHECK(gone_within(dir, 5), "the instance stayed after its reader\n");

	/* a user's instance receives the records and stays */
	fd = open_control();
	r = mkdir(KTAP_INSTANCES "/ktap-mine", 0755);
	CHECK(!r, "mkdir instances/ktap-mine: %s\n", strerror(errno));
	a.instance = (uintptr_t)"ktap-mine";
	r = ioctl(fd, KTAP_IOC_LOAD, &a);
	CHECK(!r, "LOAD into a user's instance: %s\n", strerror(errno));
	if (ioctl(fd, KTAP_IOC_START) || ioctl(fd, KTAP_IOC_STOP))
		CHECK(0, "START/STOP: %s\n", strerror(errno));
	close(fd);
	tr = NULL;
	tfd = open(KTAP_INSTANCES "/ktap-mine/trace", O_RDONLY);
	if (tfd >= 0) {
		tr = ki_read_all(tfd, 1 << 16);
		close(tfd);
	}
	CHECK(tr && strstr(tr, " output: via the instance\n"),
	      "the user's instance kept the record: %s\n",
	      tr ? tr : strerror(errno));
	free(tr);
	CHECK(!rmdir(KTAP_INSTANCES "/ktap-mine"),
	      "rmdir of the user's instance: %s\n", strerror(errno));

	/* a name tracefs would not take */
	fd = open_control();
	a.instance = (uintptr_t)"a/b";
	r = ioctl(fd, KTAP_IOC_LOAD, &a);
	CHECK(r == -1 && errno == EINVAL, "name a/b: r %d %s\n", r,
	      strerror(errno));
	close(fd);
	free(img);
	ksft_test_result(!fails, "output in tracing/instances: trace, trace_pipe, format, removal, a user's instance kept\n");
}

static void test_poll_nonblock(void)
{
	size_t len;
	void *img = ki_hello("polled", &len);
	struct pollfd p;
	char buf[64];
	int fd = open_control(), ok = 1, r;

	ki_load(fd, img, len, NULL, 0);
	/* Nothing yet: non-blocking read says so. */
	fcntl(fd, F_SETFL, O_NONBLOCK);
	r = read(fd, buf, sizeof(buf));
	if (r != -1 || errno != EAGAIN) {
		ksft_print_msg("empty nonblocking read: %d %s\n", r, strerror(errno));
		ok = 0;
	}
	ioctl(fd, KTAP_IOC_START);
	p.fd = fd;
	p.events = POLLIN;
	if (poll(&p, 1, 5000) != 1 || !(p.revents & POLLIN)) {
		ksft_print_msg("poll did not report output\n");
		ok = 0;
	}
	r = read(fd, buf, sizeof(buf) - 1);
	if (r != 7 || memcmp(buf, "polled\n", 7)) {
		ksft_print_msg("read %d bytes\n", r);
		ok = 0;
	}
	ioctl(fd, KTAP_IOC_STOP);
	r = read(fd, buf, sizeof(buf));
	if (r != 0) {
		ksft_print_msg("read after STOP and drain: %d, want EOF\n", r);
		ok = 0;
	}
	ksft_test_result(ok, "poll, O_NONBLOCK and EOF after STOP\n");
	close(fd);
	free(img);
}

static void test_many_sessions(void)
{
	enum { N = 6 };
	int fd[N], i, ok = 1;
	void *img[N];
	size_t len[N];
	char msg[32], *out;

	for (i = 0; i < N; i++) {
		snprintf(msg, sizeof(msg), "session %d", i);
		img[i] = ki_hello(msg, &len[i]);
		fd[i] = open_control();
		if (fd[i] < 0 || ki_load(fd[i], img[i], len[i], NULL, 0))
			ok = 0;
	}
	if (ok && count_sessions() < N)
		ok = 0;
	for (i = N - 1; ok && i >= 0; i--)
		if (ioctl(fd[i], KTAP_IOC_START) || ioctl(fd[i], KTAP_IOC_STOP))
			ok = 0;
	for (i = 0; i < N; i++) {
		if (ok) {
			out = ki_read_all(fd[i], 4096);
			snprintf(msg, sizeof(msg), "session %d\n", i);
			if (strcmp(out, msg)) {
				ksft_print_msg("session %d read '%s'\n", i, out);
				ok = 0;
			}
			free(out);
		}
		close(fd[i]);
		free(img[i]);
	}
	ksft_test_result(ok, "%d sessions at once, each with its own output\n", N);
}

static void test_sigkill(void)
{
	int id = ki_event_id("syscalls/sys_enter_getppid");
	int pfd[2], status, before = count_sessions();
	char c, *out;
	size_t len;
	void *img;
	pid_t pid;

	if (id < 0) {
		ksft_test_result_skip("sigkill: no syscall events\n");
		return;
	}
	img = ki_probe_prog(KTAP_PROBE_TRACEPOINT, 0, "syscalls:sys_enter_getppid",
			    "syscalls:sys_enter_getppid", 0, "end", &len);
	if (pipe(pfd))
		ksft_exit_fail_msg("pipe\n");
	pid = fork();
	if (!pid) {
		int fd = open_control();

		if (fd < 0 || ki_load(fd, img, len, NULL, 0) ||
		    ioctl(fd, KTAP_IOC_START))
			_exit(1);
		if (write(pfd[1], "r", 1) != 1)
			_exit(1);
		for (;;)	/* fire the probe until killed, never read */
			syscall(SYS_getppid);
	}
	close(pfd[1]);
	if (read(pfd[0], &c, 1) != 1) {
		waitpid(pid, &status, 0);
		ksft_test_result_fail("sigkill: child could not start\n");
		goto out;
	}
	usleep(200000);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	getppid_x20();
	out = run_prog(img, len, getppid_x20, NULL);
	ksft_test_result(WIFSIGNALED(status) && count_sessions() == before &&
			 out && count_lines(out, "sys_getppid()\n") >= 20,
			 "SIGKILL mid-trace tears the session down (%d sessions left, was %d)\n",
			 count_sessions(), before);
	free(out);
out:
	close(pfd[0]);
	free(img);
}

static int drop_cap_sys_admin(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[CAP_SYS_ADMIN / 32].effective &= ~(1U << (CAP_SYS_ADMIN % 32));
	d[CAP_SYS_ADMIN / 32].permitted &= ~(1U << (CAP_SYS_ADMIN % 32));
	return syscall(SYS_capset, &h, d);
}

static void test_permissions(void)
{
	int status, ok;
	pid_t pid = fork();

	if (!pid) {
		/* root without CAP_SYS_ADMIN: our own check says EPERM */
		if (drop_cap_sys_admin())
			_exit(10);
		if (open_control() >= 0)
			_exit(11);
		if (errno != EPERM)
			_exit(12);
		/* an unprivileged user gets no further */
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(13);
		if (open_control() >= 0)
			_exit(14);
		_exit(errno == EPERM || errno == EACCES ? 0 : 15);
	}
	waitpid(pid, &status, 0);
	ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	ksft_test_result(ok, "no CAP_SYS_ADMIN: EPERM; nobody: refused (status %d)\n",
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static void test_state_machine(void)
{
	size_t len;
	void *img = ki_hello("x", &len);
	int fd = open_control(), ok = 1;

	if (!ioctl(fd, KTAP_IOC_START) || errno != EINVAL)
		ok = 0;		/* START before LOAD */
	if (ki_load(fd, img, len, NULL, 0))
		ok = 0;
	if (!ki_load(fd, img, len, NULL, 0) || errno != EBUSY)
		ok = 0;		/* second LOAD */
	if (ioctl(fd, KTAP_IOC_START) || !ioctl(fd, KTAP_IOC_START))
		ok = 0;		/* second START */
	if (ioctl(fd, KTAP_IOC_STOP) || ioctl(fd, KTAP_IOC_STOP))
		ok = 0;		/* STOP is idempotent */
	if (!ioctl(fd, _IO(KTAP_IOC_MAGIC, 0x7f)) || errno != ENOTTY)
		ok = 0;
	ksft_test_result(ok, "ioctl order: START before LOAD, double LOAD/START refused\n");
	close(fd);
	free(img);
}

int main(void)
{
	ksft_print_header();
	if (access(KTAP_CONTROL, F_OK))
		ksft_exit_skip("%s missing (CONFIG_KTAP?)\n", KTAP_CONTROL);
	if (geteuid())
		ksft_exit_skip("must run as root\n");
	ksft_set_plan(37);	/* 31 + the 6 EVFIELD reads of test_fields() */
	test_version();
	test_bad_attr();
	test_abi_sizes();
	test_reject_log();
	test_hello();
	test_tracepoint();
	test_other_probes();
	test_fields();
	test_filters();
	test_set_retval();
	test_instance();
	test_poll_nonblock();
	test_many_sessions();
	test_sigkill();
	test_permissions();
	test_state_machine();
	ksft_test_result(count_sessions() == 0, "no session left behind\n");
	ksft_finished();
}
