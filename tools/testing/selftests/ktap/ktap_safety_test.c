// SPDX-License-Identifier: GPL-2.0
/*
 * Safety of the ktap tracer (issue 8), through the real control file
 * and ioctls, with images assembled by hand (ktap_image.h):
 *
 *  - privilege is checked at LOAD and START, not only at open(): an
 *    inherited descriptor is refused to a process without CAP_SYS_ADMIN;
 *    ioctl structures are bounded in size;
 *  - the per-handler instruction budget has a ceiling,
 *    KTAP_MAX_INSN_BUDGET;
 *  - the verifier rejects images where control can leave a function
 *    (a branch target or a fall-through past its code), words of the
 *    code section that no function covers, unknown opcodes, builtins
 *    the kernel does not know by name or calls with the wrong arity,
 *    and bad fields-section entries; at START, a tracepoint pattern
 *    that matches nothing and a field that no matched event has fail;
 *  - set_retval only on an entry kprobe with KTAP_PROBE_F_OVERRIDE of a
 *    function on the error-injection list, with a value it can fail
 *    with, and the function's body is skipped;
 *  - a session's memory does not grow with the number of firings;
 *  - O(n) builtins on a 100,000-entry table are charged to the budget;
 *  - loops closed by any backward transfer the budget is charged at
 *    (JMP, JMPT, JMPF, ITERNEXT) end: the main chunk by SIGKILL, a
 *    signal or its budget, a handler by its budget.
 *
 * The tests that would hang an unfixed kernel run last. Output is KTAP,
 * the kselftest format, which has nothing to do with the tracer's name.
 *
 * KTAP_SAFETY_FIRINGS sets the handler firings of the constant-memory
 * tests (default 10,000; 1,000 on a kernel with kmemleak).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <linux/capability.h>

#include "../kselftest.h"
#include "ktap_image.h"

#define NOBODY		65534
#define LOG_SIZE	1024
/* Output kept per session: the first bytes and the last ones. */
#define HEAD_KEEP	4096
#define TAIL_KEEP	(64 * 1024)
#define PLAN		62

#define INSN(op, a, b, c)	KTAP_INSN(KTAP_OP_##op, a, b, c)
#define INSN_BX(op, a, bx)	KTAP_INSN_BX(KTAP_OP_##op, a, bx)

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int open_control(void)
{
	return open(KTAP_CONTROL, O_RDWR | O_CLOEXEC);
}

static int count_sessions(void)
{
	return ki_count_sessions();
}

/* LOAD with the options these tests vary; 0 or -errno. */
static int load_ex(int fd, const void *img, size_t len, uint32_t mem_kb,
		   uint32_t budget, int pid, char *log)
{
	struct ktap_load_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.image = (uintptr_t)img;
	a.image_len = len;
	a.log_buf = (uintptr_t)log;
	a.log_size = log ? LOG_SIZE : 0;
	a.mem_limit_kb = mem_kb;
	a.insn_budget = budget;
	a.pid = pid;
	a.cpu = -1;
	if (log)
		log[0] = '\0';
	return ioctl(fd, KTAP_IOC_LOAD, &a) ? -errno : 0;
}

static int get_stats(int fd, struct ktap_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	return ioctl(fd, KTAP_IOC_STATS, st) ? -errno : 0;
}

/* ki_build() with @nglobals global slots (it lays out none). */
static void *build(struct ki_image *im, uint32_t nglobals, size_t *len)
{
	struct ktap_bc_header *h = ki_build(im, len);

	h->nglobals = nglobals;
	return h;
}

static struct ktap_bc_proto *img_proto(void *img, uint32_t i)
{
	struct ktap_bc_header *h = img;

	return (struct ktap_bc_proto *)((char *)img + h->protos.off) + i;
}

/* Main chunk: R0 := closure of proto @f; ATTACH R0 to probe @p; return. */
static void emit_attach(struct ki_func *m, uint32_t f, uint32_t p)
{
	ki_op(m, INSN_BX(CLOSURE, 0, f));
	ki_op(m, INSN_BX(ATTACH, 0, p));
	ki_op(m, INSN(RETURN, 0, 0, 0));
}

static uint32_t timer_probe(struct ki_image *im, uint64_t ns)
{
	return ki_probe(im, KTAP_PROBE_TIMER, 0, "tick", NULL, ns);
}

/*
 * A numeric for loop as the compiler emits it (there is no loop
 * instruction): R(@cond) := R(@i) <= R(@lim); JMPF out; @body
 * instructions; R(@i) += R(@step); JMP back to the compare. for_head()
 * goes before the body, for_tail() after it.
 */
static void for_head(struct ki_func *f, uint8_t cond, uint8_t i, uint8_t lim,
		     int body)
{
	ki_op(f, INSN(LE, cond, i, lim));
	ki_op(f, INSN_BX(JMPF, cond, body + 2));
}

static void for_tail(struct ki_func *f, uint8_t i, uint8_t step, int body)
{
	ki_op(f, INSN(ADD, i, i, step));
	ki_op(f, INSN_BX(JMP, 0, -(body + 4)));
}

/* What a session printed: its first and its last bytes. */
struct out {
	char head[HEAD_KEEP + 1];
	char tail[TAIL_KEEP + 1];
	size_t nhead, ntail;
	unsigned long long total;
	int eof;
};

static void out_add(struct out *o, const char *buf, size_t n)
{
	size_t k = n < HEAD_KEEP - o->nhead ? n : HEAD_KEEP - o->nhead;

	memcpy(o->head + o->nhead, buf, k);
	o->nhead += k;
	o->head[o->nhead] = '\0';
	o->total += n;
	if (n >= TAIL_KEEP) {
		memcpy(o->tail, buf + n - TAIL_KEEP, TAIL_KEEP);
		o->ntail = TAIL_KEEP;
	} else {
		if (o->ntail + n > TAIL_KEEP) {
			size_t drop = o->ntail + n - TAIL_KEEP;

			memmove(o->tail, o->tail + drop, o->ntail - drop);
			o->ntail -= drop;
		}
		memcpy(o->tail + o->ntail, buf, n);
		o->ntail += n;
	}
	o->tail[o->ntail] = '\0';
}

static int out_has(const struct out *o, const char *s)
{
	return strstr(o->head, s) || strstr(o->tail, s);
}

/* For a failed check: what the session printed first. */
static void out_show(const struct out *o, int failed)
{
	if (failed && o->nhead)
		ksft_print_msg("output (%llu bytes): %.600s\n", o->total, o->head);
}

/* The last line of the output, for messages. */
static const char *out_last(const struct out *o, char *buf, size_t size)
{
	const char *e = o->tail + o->ntail, *s;

	while (e > o->tail && e[-1] == '\n')
		e--;
	for (s = e; s > o->tail && s[-1] != '\n'; s--)
		;
	snprintf(buf, size, "%.*s", (int)(e - s), s);
	return buf;
}

/* The line of the output that contains @needle, else the last line. */
static const char *out_line(const struct out *o, const char *needle,
			    char *buf, size_t size)
{
	const char *base = o->head, *p = strstr(o->head, needle), *s, *e;

	if (!p) {
		base = o->tail;
		p = strstr(o->tail, needle);
	}
	if (!p)
		return out_last(o, buf, size);
	for (s = p; s > base && s[-1] != '\n'; s--)
		;
	e = strchrnul(p, '\n');
	snprintf(buf, size, "%.*s", (int)(e - s), s);
	return buf;
}

/*
 * Read the session's output for up to @ms milliseconds, or until end of
 * file (the session is exiting or stopped and everything was read).
 */
static void out_drain(int fd, struct out *o, int ms)
{
	static char buf[64 * 1024];
	double end = now_ms() + ms;
	int fl = fcntl(fd, F_GETFL);

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	do {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = end - now_ms();
		ssize_t r;

		if (poll(&p, 1, left > 0 ? left : 0) <= 0)
			continue;
		r = read(fd, buf, sizeof(buf));
		if (r > 0)
			out_add(o, buf, r);
		else if (r == 0)
			o->eof = 1;
		else if (errno != EAGAIN && errno != EINTR)
			break;
	} while (!o->eof && now_ms() < end);
	fcntl(fd, F_SETFL, fl);
}

/* ---- privilege at use ---- */

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

/* uid and gid 65534 with no groups: every capability is gone. */
static int drop_to_nobody(void)
{
	if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
	    setresuid(NOBODY, NOBODY, NOBODY))
		return -1;
	return 0;
}

enum { CHILD_OK = 100, CHILD_SETUP = 101 };

/*
 * Fork; the child drops privileges (@nobody: to uid 65534, else only
 * CAP_SYS_ADMIN) and runs LOAD (@img) or START (!@img) on the inherited
 * @fd. Returns the child's errno, CHILD_OK if the ioctl succeeded.
 */
static int unprivileged_ioctl(int fd, const void *img, size_t len, int nobody)
{
	int status;
	pid_t pid = fork();

	if (!pid) {
		int r;

		if (nobody ? drop_to_nobody() : drop_cap_sys_admin())
			_exit(CHILD_SETUP);
		if (img)
			r = load_ex(fd, img, len, 0, 0, -1, NULL);
		else
			r = ioctl(fd, KTAP_IOC_START) ? -errno : 0;
		_exit(r ? (-r < CHILD_OK ? -r : CHILD_SETUP) : CHILD_OK);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static void test_load_unprivileged(int nobody)
{
	const char *who = nobody ? "uid/gid 65534" : "root without CAP_SYS_ADMIN";
	size_t len;
	void *img = ki_hello("privileged", &len);
	int fd = open_control(), r, again = -1;

	if (fd < 0) {
		ksft_test_result_fail("LOAD by %s: open: %s\n", who, strerror(errno));
		free(img);
		return;
	}
	r = unprivileged_ioctl(fd, img, len, nobody);
	/* the descriptor itself is fine: its privileged owner can load */
	if (r == EPERM)
		again = load_ex(fd, img, len, 0, 0, -1, NULL);
	ksft_test_result(r == EPERM && again == 0,
			 "LOAD on an inherited fd by %s: %s (want EPERM); then root's LOAD: %d\n",
			 who, r == CHILD_OK ? "succeeded" : r < 0 ? "child died" :
			 strerror(r), again);
	close(fd);
	free(img);
}

static void test_start_unprivileged(void)
{
	size_t len;
	void *img = ki_hello("started by root", &len);
	struct ktap_stats st;
	struct out o;
	int fd = open_control(), r, state = -1, again = -1;

	memset(&o, 0, sizeof(o));
	if (fd < 0 || load_ex(fd, img, len, 0, 0, -1, NULL)) {
		ksft_test_result_fail("START by uid 65534: setup: %s\n", strerror(errno));
		goto out;
	}
	r = unprivileged_ioctl(fd, NULL, 0, 1);
	if (!get_stats(fd, &st))
		state = st.state;
	if (state == KTAP_STATE_LOADED) {
		again = ioctl(fd, KTAP_IOC_START) ? -errno : 0;
		ioctl(fd, KTAP_IOC_STOP);
		out_drain(fd, &o, 5000);
	}
	ksft_test_result(r == EPERM && state == KTAP_STATE_LOADED && again == 0 &&
			 out_has(&o, "started by root\n"),
			 "START on an inherited fd by uid 65534: %s (want EPERM); state after %d; root's START %d\n",
			 r == CHILD_OK ? "succeeded" : r < 0 ? "child died" : strerror(r),
			 state, again);
out:
	if (fd >= 0)
		close(fd);
	free(img);
}

/* copy_struct_from_user() is only given sizes up to a page. */
static void test_attr_size(void)
{
	size_t len, big = 8192;
	void *img = ki_hello("x", &len);
	struct ktap_load_attr *a = calloc(1, big);
	int fd = open_control(), r, ok;

	a->size = big;
	a->image = (uintptr_t)img;
	a->image_len = len;
	a->pid = -1;
	a->cpu = -1;
	r = ioctl(fd, KTAP_IOC_LOAD, a) ? errno : 0;
	/* and the real size still loads */
	ok = load_ex(fd, img, len, 0, 0, -1, NULL);
	ksft_test_result(r == E2BIG && ok == 0,
			 "LOAD with attr.size 8192 (zero tail): %s (want E2BIG); with sizeof: %d\n",
			 r ? strerror(r) : "accepted", ok);
	close(fd);
	free(a);
	free(img);
}

/* ---- the budget ceiling ---- */

/*
 * The backward transfers the budget is charged at, each closing a loop
 * in a timer handler: JMP to itself, JMPT to itself on a true register,
 * JMPF to itself on a false one, and ITERNEXT over pairs(t) of a
 * 4,000-entry table with a 50-instruction body: 4,000 x 51 instructions
 * exceed the default budget only if ITERNEXT charges its loop.
 */
enum loop_kind { LOOP_JMP, LOOP_JMPT, LOOP_JMPF, LOOP_ITERNEXT };

#define ITER_ENTRIES	4000
#define ITER_BODY	50

static void *loop_handler_image(enum loop_kind kind, uint64_t period,
				size_t *len)
{
	struct ki_image im = { 0 };
	struct ki_func *m = ki_func(&im, 0, 6);
	struct ki_func *h = ki_func(&im, 1, 8);
	int i;

	if (kind == LOOP_ITERNEXT) {
		/* g0 = { 1, 2, ..., ITER_ENTRIES } */
		ki_op(m, INSN(NEWTABLE, 0, 0, 0));
		ki_op(m, INSN_BX(LOADI, 1, 1));
		ki_op(m, INSN_BX(LOADI, 2, ITER_ENTRIES));
		ki_op(m, INSN_BX(LOADI, 3, 1));
		for_head(m, 4, 1, 2, 1);
		ki_op(m, INSN(SETTABLE, 0, 1, 1));
		for_tail(m, 1, 3, 1);
		ki_op(m, INSN_BX(SETGLOBAL, 0, 0));
	}
	emit_attach(m, 1, timer_probe(&im, period));
	switch (kind) {
	case LOOP_JMP:
		ki_op(h, INSN_BX(JMP, 0, -1));		/* to itself */
		break;
	case LOOP_JMPT:
		ki_op(h, INSN_BX(LOADI, 1, 1));		/* 1 is true */
		ki_op(h, INSN_BX(JMPT, 1, -1));		/* to itself */
		break;
	case LOOP_JMPF:
		ki_op(h, INSN(LOADBOOL, 1, 0, 0));	/* false */
		ki_op(h, INSN_BX(JMPF, 1, -1));		/* to itself */
		break;
	case LOOP_ITERNEXT:
		/* r3 = pairs(g0); JMP to ITERNEXT; the body; ITERNEXT back */
		ki_op(h, INSN_BX(GETGLOBAL, 4, 0));
		ki_op(h, INSN(CALLB, 3, 1, ki_builtin(&im, "pairs")));
		ki_op(h, INSN_BX(JMP, 0, ITER_BODY));
		for (i = 0; i < ITER_BODY; i++)
			ki_op(h, INSN(MOVE, 7, 5, 0));
		ki_op(h, INSN_BX(ITERNEXT, 3, -(ITER_BODY + 1)));
		break;
	}
	ki_op(h, INSN(RETURN, 0, 0, 0));
	return build(&im, kind == LOOP_ITERNEXT, len);
}

static void test_budget_ceiling(void)
{
	char log[LOG_SIZE], log2[LOG_SIZE];
	size_t len;
	void *img = loop_handler_image(LOOP_JMP, 1000000, &len);
	int fd = open_control(), over, huge, max, ok;

	over = load_ex(fd, img, len, 0, KTAP_MAX_INSN_BUDGET + 1, -1, log);
	close(fd);
	fd = open_control();
	huge = load_ex(fd, img, len, 0, UINT32_MAX, -1, log2);
	close(fd);
	fd = open_control();
	max = load_ex(fd, img, len, 0, KTAP_MAX_INSN_BUDGET, -1, NULL);
	close(fd);
	ok = over == -E2BIG && huge == -E2BIG && max == 0 &&
	     strstr(log, "instruction budget above KTAP_MAX_INSN_BUDGET") &&
	     strstr(log2, "instruction budget above KTAP_MAX_INSN_BUDGET");
	if (!ok)
		ksft_print_msg("logs: '%s', '%s'\n", log, log2);
	ksft_test_result(ok, "insn_budget %u: %s, %u: %s (want E2BIG); %u: %s\n",
			 KTAP_MAX_INSN_BUDGET + 1, strerror(-over), UINT32_MAX,
			 strerror(-huge), KTAP_MAX_INSN_BUDGET,
			 max ? strerror(-max) : "accepted");
	free(img);
}

/*
 * Run a timer handler that never returns by itself: the session must
 * end with the budget error (read() reaches end of file) and STOP must
 * return promptly.
 */
static void test_handler_loop(const char *what, enum loop_kind kind,
			      uint32_t budget)
{
	char want[96], last[160];
	struct ktap_stats st = { 0 };
	double t0, t_end, t_stop;
	size_t len;
	void *img = loop_handler_image(kind, 1000000, &len);
	struct out *o = calloc(1, sizeof(*o));
	int fd = open_control(), r, ok;

	snprintf(want, sizeof(want), "instruction budget exceeded (%u)",
		 budget ? budget : 100000);
	r = load_ex(fd, img, len, 0, budget, -1, NULL);
	if (r || ioctl(fd, KTAP_IOC_START)) {
		ksft_test_result_fail("%s: LOAD/START: %s\n", what,
				      strerror(r ? -r : errno));
		goto out;
	}
	t0 = now_ms();
	out_drain(fd, o, 5000);
	t_end = now_ms() - t0;
	get_stats(fd, &st);
	t0 = now_ms();
	ioctl(fd, KTAP_IOC_STOP);
	t_stop = now_ms() - t0;
	ok = o->eof && out_has(o, "ktap: error: ") && out_has(o, want) &&
	     st.errors >= 1 && st.state == KTAP_STATE_EXITING && t_stop < 2000;
	out_show(o, !ok);
	ksft_test_result(ok, "%s: ended in %.0f ms (%s), STOP %.0f ms, errors %llu: %s\n",
			 what, t_end, o->eof ? "end of file" : "no end of file",
			 t_stop, (unsigned long long)st.errors,
			 out_last(o, last, sizeof(last)));
out:
	close(fd);
	free(o);
	free(img);
}

/*
 * A main chunk that records @n handlers of proto 1 on probe 0:
 * for i = 1, n do attach(probe 0, function ... end) end.
 */
static void emit_attach_loop(struct ki_func *m, uint32_t n)
{
	ki_op(m, INSN_BX(LOADI, 1, 1));
	ki_op(m, INSN_BX(LOADI, 2, n));
	ki_op(m, INSN_BX(LOADI, 3, 1));
	for_head(m, 4, 1, 2, 2);
	ki_op(m, INSN_BX(CLOSURE, 0, 1));
	ki_op(m, INSN_BX(ATTACH, 0, 0));
	for_tail(m, 1, 3, 2);
	ki_op(m, INSN(RETURN, 0, 0, 0));
}

/*
 * 4,096 END handlers that never return: they share one budget, so STOP
 * runs one of them to its budget and skips the rest. Unshared, STOP
 * took minutes and SIGKILL could not end it.
 */
static void test_end_handlers_share_budget(void)
{
	struct ki_image im = { 0 };
	struct ki_func *m = ki_func(&im, 0, 5);
	struct ki_func *h = ki_func(&im, 1, 2);
	struct out *o = calloc(1, sizeof(*o));
	double t0, t_stop;
	size_t len;
	void *img;
	int fd = open_control(), r, ok, n = 0;
	const char *p;

	ki_probe(&im, KTAP_PROBE_END, 0, "end", NULL, 0);
	emit_attach_loop(m, KTAP_MAX_PROBES);
	ki_op(h, INSN_BX(JMP, 0, -1));
	ki_op(h, INSN(RETURN, 0, 0, 0));
	img = build(&im, 0, &len);
	r = load_ex(fd, img, len, 0, KTAP_MAX_INSN_BUDGET, -1, NULL);
	if (r || ioctl(fd, KTAP_IOC_START)) {
		ksft_test_result_fail("END handlers: LOAD/START: %s\n",
				      strerror(r ? -r : errno));
		goto out;
	}
	t0 = now_ms();
	ioctl(fd, KTAP_IOC_STOP);
	t_stop = now_ms() - t0;
	out_drain(fd, o, 5000);
	for (p = o->head; (p = strstr(p, "instruction budget exceeded")); p++)
		n++;
	ok = t_stop < 2000 && n == 1 && o->total < HEAD_KEEP;
	out_show(o, !ok);
	ksft_test_result(ok, "%d looping END handlers: STOP took %.0f ms, %d budget error(s)\n",
			 KTAP_MAX_PROBES, t_stop, n);
out:
	close(fd);
	free(o);
	free(img);
}

/*
 * 64 timers at 1 kHz whose handlers each run 905,657 units, just under
 * the budget: far more work than a CPU has. The handlers keep at most
 * about half of a CPU; the rest of the runs are skipped and counted as
 * drops, and the process that started them can still stop them.
 */
static void test_cpu_share(void)
{
	struct ki_image im = { 0 };
	struct ki_func *m = ki_func(&im, 0, 5);
	struct ki_func *h = ki_func(&im, 1, 10);
	struct ktap_stats st = { 0 };
	double t0, t_run, t_stop;
	unsigned long calls = 0;
	size_t len;
	void *img;
	int fd = open_control(), r, ok;

	timer_probe(&im, 1000000);
	emit_attach_loop(m, 64);
	/*
	 * for i = 1, 2950 do for j = 1, 75 do end end: 4 LOADI, then per
	 * outer pass LE, JMPF, LOADI, 75 x (LE, JMPF, ADD, JMP), LE, JMPF,
	 * ADD, JMP (307), then the last LE, JMPF and RETURN: 905,657.
	 */
	ki_op(h, INSN_BX(LOADI, 1, 1));
	ki_op(h, INSN_BX(LOADI, 2, 2950));
	ki_op(h, INSN_BX(LOADI, 3, 1));
	ki_op(h, INSN_BX(LOADI, 6, 75));
	for_head(h, 4, 1, 2, 5);
	ki_op(h, INSN_BX(LOADI, 5, 1));
	for_head(h, 8, 5, 6, 0);
	for_tail(h, 5, 3, 0);
	for_tail(h, 1, 3, 5);
	ki_op(h, INSN(RETURN, 0, 0, 0));
	img = build(&im, 0, &len);
	r = load_ex(fd, img, len, 0, KTAP_MAX_INSN_BUDGET, -1, NULL);
	if (r || ioctl(fd, KTAP_IOC_START)) {
		ksft_test_result_fail("CPU share: LOAD/START: %s\n",
				      strerror(r ? -r : errno));
		goto out;
	}
	t0 = now_ms();
	while (now_ms() - t0 < 1000) {
		syscall(SYS_getppid);
		calls++;
	}
	t_run = now_ms() - t0;
	t0 = now_ms();
	ioctl(fd, KTAP_IOC_STOP);
	t_stop = now_ms() - t0;
	get_stats(fd, &st);
	ok = st.errors == 0 && st.hits > 0 && st.drops > st.hits &&
	     t_run < 3000 && t_stop < 2000;
	ksft_test_result(ok, "64 timers at 1 kHz, 905,657 units a run: %llu runs, %llu skipped, %llu errors; 1 s of getppid() took %.0f ms (%lu calls), STOP %.0f ms\n",
			 (unsigned long long)st.hits,
			 (unsigned long long)st.drops,
			 (unsigned long long)st.errors, t_run, calls, t_stop);
out:
	close(fd);
	free(img);
}

/* ---- the verifier ---- */

/* LOAD must fail with EINVAL and a log that contains @w1 and @w2. */
static void expect_reject(const char *what, void *img, size_t len,
			  const char *w1, const char *w2)
{
	char log[LOG_SIZE];
	int fd = open_control();
	int r = load_ex(fd, img, len, 0, 0, -1, log);

	close(fd);
	ksft_test_result(r == -EINVAL && strstr(log, w1) && strstr(log, w2),
			 "verifier: %s: %s, log '%s'\n", what,
			 r ? strerror(-r) : "accepted", log);
	free(img);
}

/*
 * Proto 1: a compare into R0, then a conditional branch on R0 back to
 * its first instruction as the last instruction: when the branch is not
 * taken pc would fall onto proto 2. The compares themselves no longer
 * transfer control; the branch after them is what must stay inside.
 */
static void test_cmp_branch_off_end(uint32_t op, const char *name, int jmpt)
{
	struct ki_image im = { 0 };
	struct ki_func *m = ki_func(&im, 0, 2);
	struct ki_func *f = ki_func(&im, 1, 4);
	struct ki_func *g = ki_func(&im, 0, 2);
	uint32_t k = ki_kint(&im, 1);
	const char *br = jmpt ? "JMPT" : "JMPF";
	char what[64], where[64];
	size_t len;
	void *img;

	ki_op(m, INSN(RETURN, 0, 0, 0));
	ki_op(f, INSN_BX(LOADI, 1, 1));
	ki_op(f, INSN_BX(LOADI, 2, 2));
	if (op == KTAP_OP_EQK)
		ki_op(f, KTAP_INSN(op, 0, 1, k));
	else
		ki_op(f, KTAP_INSN(op, 0, 1, 2));
	ki_op(f, KTAP_INSN_BX(jmpt ? KTAP_OP_JMPT : KTAP_OP_JMPF, 0, -4));
	ki_op(g, INSN(RETURN, 0, 0, 0));
	snprintf(what, sizeof(what), "%s then %s falling past the end", name, br);
	snprintf(where, sizeof(where), "proto 1 insn 3 (%s)", br);
	img = build(&im, 0, &len);
	expect_reject(what, img, len, where,
		      "control can leave the function here");
}

/*
 * A conditional branch whose target lies outside its function: past
 * the end (onto proto 2's code) or before the start (onto proto 0's).
 */
static void test_branch_target_out(int jmpt, int backward)
{
	struct ki_image im = { 0 };
	struct ki_func *m = ki_func(&im, 0, 2);
	struct ki_func *f = ki_func(&im, 1, 4);
	struct ki_func *g = ki_func(&im, 0, 2);
	const char *br = jmpt ? "JMPT" : "JMPF";
	char what[80], where[64];
	size_t len;
	void *img;

	ki_op(m, INSN(RETURN, 0, 0, 0));
	/* a condition that takes the branch: true for JMPT, false for JMPF */
	ki_op(f, INSN(LOADBOOL, 1, jmpt, 0));
	ki_op(f, KTAP_INSN_BX(jmpt ? KTAP_OP_JMPT : KTAP_OP_JMPF, 1,
			      backward ? -3 : 1));
	ki_op(f, INSN(RETURN, 0, 0, 0));
	ki_op(g, INSN(RETURN, 0, 0, 0));
	snprintf(what, sizeof(what), "%s to %s", br,
		 backward ? "before the function" : "past the function");
	snprintf(where, sizeof(where), "proto 1 insn 1 (%s)", br);
	img = build(&im, 0, &len);
	expect_reject(what, img, len, where, "jump target out of range");
}

/*
 * A last instruction that falls through (LOADI), or an ITERNEXT last:
 * its not-taken successor is the next function's first instruction.
 */
static void test_fall_off_end(int iternext)
{
	struct ki_image im = { 0 };
	struct ki_func *m = ki_func(&im, 0, 2);
	struct ki_func *f = ki_func(&im, 1, 6);
	struct ki_func *g = ki_func(&im, 0, 2);
	size_t len;
	void *img;

	ki_op(m, INSN(RETURN, 0, 0, 0));
	if (iternext) {
		ki_op(f, INSN_BX(LOADI, 1, 0));
		ki_op(f, INSN_BX(ITERNEXT, 1, -2));
	} else {
		ki_op(f, INSN_BX(LOADI, 1, 1));
		ki_op(f, INSN_BX(LOADI, 1, 2));
	}
	ki_op(g, INSN(RETURN, 0, 0, 0));
	img = build(&im, 0, &len);
	expect_reject(iternext ? "ITERNEXT as the last instruction" :
		      "a last instruction that falls through", img, len,
		      iternext ? "proto 1 insn 1 (ITERNEXT)" :
		      "proto 1 insn 1 (LOADI)",
		      "control can leave the function here");
}

/* A word of the code section outside every function. */
static void test_orphan_words(int after_last)
{
	struct ki_image im = { 0 };
	struct ki_func *m = ki_func(&im, 0, 2);
	struct ki_func *f = ki_func(&im, 0, 2);
	size_t len;
	void *img;

	ki_op(m, INSN(RETURN, 0, 0, 0));
	ki_op(after_last ? f : m, INSN(RETURN, 0, 0, 0));
	ki_op(f, INSN(RETURN, 0, 0, 0));
	img = build(&im, 0, &len);
	/* shorten the function that owns the extra word: it is orphaned */
	img_proto(img, after_last ? 1 : 0)->ncode = 1;
	expect_reject(after_last ? "a word after the last function" :
		      "a word between two functions", img, len,
		      "functions do not cover the code section exactly, in order", "");
}

/* The accepted neighbours of those shapes. */
static void test_verifier_accepts(void)
{
	struct ki_image im = { 0 };
	struct ki_func *m = ki_func(&im, 0, 4);
	struct ki_func *f = ki_func(&im, 1, 4);
	char log[LOG_SIZE];
	size_t len;
	void *img;
	int fd, r;

	/* main: JMPT to itself (the run must end: see below) */
	ki_op(m, INSN_BX(LOADI, 0, 1));
	ki_op(m, INSN_BX(JMPT, 0, -1));
	ki_op(m, INSN(RETURN, 0, 0, 0));
	/* a branch that lands on the last instruction; a JMP as the last */
	ki_op(f, INSN_BX(LOADI, 1, 1));
	ki_op(f, INSN_BX(LOADI, 2, 2));
	ki_op(f, INSN(EQ, 0, 1, 2));
	ki_op(f, INSN_BX(JMPF, 0, 1));
	ki_op(f, INSN(RETURN, 0, 0, 0));
	ki_op(f, INSN_BX(JMP, 0, -2));
	img = build(&im, 0, &len);
	fd = open_control();
	r = load_ex(fd, img, len, 0, 0, -1, log);
	close(fd);
	ksft_test_result(r == 0, "verifier: JMPT to itself, in-range JMPF, JMP last: %s %s\n",
			 r ? strerror(-r) : "accepted", log);
	free(img);
}

/* An opcode past the kernel's last one: "unknown opcode", by number. */
static void test_unknown_opcode(void)
{
	struct ki_image im = { 0 };
	struct ki_func *m = ki_func(&im, 0, 2);
	char where[64];
	size_t len;
	void *img;

	ki_op(m, KTAP_INSN(KTAP_OP__COUNT, 0, 0, 0));
	ki_op(m, INSN(RETURN, 0, 0, 0));
	snprintf(where, sizeof(where), "proto 0 insn 0 (0x%02x)", KTAP_OP__COUNT);
	img = build(&im, 0, &len);
	expect_reject("an opcode past the last", img, len,
		      where, "unknown opcode");
}

/*
 * Builtins are named in the image: a name the kernel does not know is
 * refused at LOAD and the log names it. gettimeofday_us was a builtin
 * of the numbered table and is gone from the kernel.
 */
static void test_unknown_builtin(const char *name)
{
	struct ki_image im = { 0 };
	struct ki_func *m = ki_func(&im, 0, 2);
	char what[80];
	size_t len;
	void *img;

	ki_op(m, INSN(CALLB, 0, 0, ki_builtin(&im, name)));
	ki_op(m, INSN(RETURN, 0, 0, 0));
	snprintf(what, sizeof(what), "unknown builtin '%s'", name);
	img = build(&im, 0, &len);
	expect_reject(what, img, len, name, "unknown builtin");
}

/* CALLB whose C indexes past the builtins section. */
static void test_builtin_index(void)
{
	struct ki_image im = { 0 };
	struct ki_func *m = ki_func(&im, 0, 2);
	size_t len;
	void *img;

	ki_op(m, INSN(CALLB, 0, 0, ki_builtin(&im, "cpu") + 1));
	ki_op(m, INSN(RETURN, 0, 0, 0));
	img = build(&im, 0, &len);
	expect_reject("CALLB past the builtins section", img,
		      len, "proto 0 insn 0 (CALLB)", "builtin");
}

/* A builtins-section entry whose name lies outside the string table. */
static void test_builtin_bad_name(void)
{
	struct ki_image im = { 0 };
	struct ki_func *m = ki_func(&im, 0, 2);
	size_t len;
	void *img;

	ki_op(m, INSN(RETURN, 0, 0, 0));
	im.b[im.nb++] = 0x7fffffff;
	img = build(&im, 0, &len);
	expect_reject("builtin name outside the string table",
		      img, len, "builtin",
		      "string reference out of bounds or unterminated");
}

/* The arity of a named builtin: len takes one argument, cpu none. */
static void test_builtin_arity(const char *name, uint8_t nargs)
{
	struct ki_image im = { 0 };
	struct ki_func *m = ki_func(&im, 0, 4);
	char what[80];
	size_t len;
	void *img;

	ki_op(m, INSN_BX(LOADI, 1, 1));
	ki_op(m, INSN_BX(LOADI, 2, 2));
	ki_op(m, INSN(CALLB, 0, nargs, ki_builtin(&im, name)));
	ki_op(m, INSN(RETURN, 0, 0, 0));
	snprintf(what, sizeof(what), "%s() with %u arguments", name, nargs);
	img = build(&im, 0, &len);
	expect_reject(what, img, len,
		      "proto 0 insn 2 (CALLB)",
		      "wrong number of arguments");
}

/*
 * A tracepoint probe on @pattern whose handler reads field @field
 * through EVFIELD: the image both field tests below start from.
 */
static void *evfield_image(const char *pattern, const char *field,
			   struct ki_image *im, size_t *len)
{
	struct ki_func *m = ki_func(im, 0, 2);
	struct ki_func *h = ki_func(im, 1, 4);
	uint32_t p = ki_probe(im, KTAP_PROBE_TRACEPOINT, 0, "tp", pattern, 0);

	emit_attach(m, 1, p);
	ki_op(h, INSN_BX(EVFIELD, 1, ki_field(im, p, field)));
	ki_op(h, INSN(RETURN, 0, 0, 0));
	return build(im, 0, len);
}

/*
 * Bad fields-section entries, refused at LOAD: a probe index past the
 * probe table, a name outside the string table, an EVFIELD whose Bx is
 * past the section.
 */
static void test_field_entry(int what)
{
	struct ki_image im = { 0 };
	const char *name = "common_pid";
	struct ktap_bc_header *h;
	struct ktap_bc_field *fl;
	size_t len;
	void *img;

	img = evfield_image("syscalls:sys_enter_getppid", name, &im, &len);
	h = img;
	fl = (struct ktap_bc_field *)((char *)img + h->fields.off);
	switch (what) {
	case 0:
		fl->probe = h->probes.count;
		expect_reject("fields entry with a probe past the table",
			      img, len, "field", "probe out of range");
		break;
	case 1:
		fl->name = h->strtab.count + 16;
		expect_reject("fields entry with a name outside the string table",
			      img, len, "field",
			      "string reference out of bounds or unterminated");
		break;
	default:
		/* EVFIELD 1, 0 -> EVFIELD 1, 1: past the one entry */
		((uint32_t *)((char *)img + h->code.off))[img_proto(img, 1)->code_start] =
			INSN_BX(EVFIELD, 1, 1);
		expect_reject("EVFIELD past the fields section", img, len,
			      "proto 1 insn 0 (EVFIELD)", "field");
		break;
	}
}

/*
 * What the kernel resolves at attach fails START, not LOAD: a
 * tracepoint pattern that matches no event (ENOENT), or a fields entry
 * naming a field none of the probe's events has in its own format
 * (EINVAL, as events.c has it).
 */
static void test_attach_fails(const char *what, const char *pattern,
			      const char *field, int want)
{
	struct ki_image im = { 0 };
	struct ktap_stats st = { 0 };
	char log[LOG_SIZE] = "";
	size_t len;
	void *img = evfield_image(pattern, field, &im, &len);
	int fd = open_control(), r, start = 0, err = 0;

	r = load_ex(fd, img, len, 0, 0, -1, log);
	if (!r) {
		start = ioctl(fd, KTAP_IOC_START);
		err = start ? errno : 0;
		get_stats(fd, &st);
	}
	ksft_test_result(!r && start == -1 && err == want &&
			 st.nr_attached == 0,
			 "attach: %s: LOAD %s, START %s (want %s), %u attached\n",
			 what, r ? strerror(-r) : "ok",
			 r ? "-" : start ? strerror(err) : "succeeded",
			 strerror(want), st.nr_attached);
	close(fd);
	free(img);
}

/*
 * A probe's reserved words (where the event id list used to be) must be
 * zero: an old image's ids_start/nids must not be silently ignored.
 */
static void test_probe_reserved(void)
{
	struct ki_image im = { 0 };
	struct ki_func *m = ki_func(&im, 0, 2);
	struct ki_func *h = ki_func(&im, 1, 2);
	size_t len;
	void *img;

	emit_attach(m, 1, timer_probe(&im, 1000000));
	ki_op(h, INSN(RETURN, 0, 0, 0));
	im.p[0].__reserved[1] = 2;
	img = build(&im, 0, &len);
	expect_reject("probe with nonzero reserved words", img,
		      len, "probe 0", "reserved field is not zero");
}

/* ---- set_retval ---- */

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

/* A kprobe whose handler calls e.set_retval(@val). */
static void *retval_image(uint32_t type, uint32_t flags, const char *spec,
			  const char *fn, uint64_t off, int val, size_t *len)
{
	struct ki_image im = { 0 };
	struct ki_func *m = ki_func(&im, 0, 2);
	struct ki_func *h = ki_func(&im, 1, 4);
	uint32_t ks = ki_kstr(&im, "set_retval");

	emit_attach(m, 1, ki_probe(&im, type, flags, spec, fn, off));
	ki_op(h, INSN(GETFIELD, 1, 0, ks));
	ki_op(h, INSN_BX(LOADI, 2, val));
	ki_op(h, INSN(CALL, 1, 1, 0));
	ki_op(h, INSN(RETURN, 0, 0, 0));
	return build(&im, 0, len);
}

static const char *getppid_fn(void)
{
	if (injectable("__x64_sys_getppid"))
		return "__x64_sys_getppid";
	if (injectable("__do_sys_getppid"))
		return "__do_sys_getppid";
	return NULL;
}

/* e.set_retval(-EIO) on an entry kprobe with F_OVERRIDE: getppid fails. */
static void test_override_getppid(const char *fn)
{
	size_t len;
	void *img = retval_image(KTAP_PROBE_KPROBE, KTAP_PROBE_F_OVERRIDE,
				 "override", fn, 0, -EIO, &len);
	char log[LOG_SIZE];
	pid_t ppid = getppid();
	int fd = open_control(), r, err = 0, after = -1, ret;

	r = load_ex(fd, img, len, 0, 0, getpid(), log);
	if (r || ioctl(fd, KTAP_IOC_START)) {
		ksft_test_result_fail("set_retval(-EIO) on %s: LOAD/START: %s %s\n",
				      fn, strerror(r ? -r : errno), log);
		goto out;
	}
	ret = syscall(SYS_getppid);
	err = errno;
	ioctl(fd, KTAP_IOC_STOP);
	after = syscall(SYS_getppid);
	ksft_test_result(ret == -1 && err == EIO && after == ppid,
			 "set_retval(-EIO) on entry of %s with F_OVERRIDE: getppid() = %d (errno %d), after STOP %d\n",
			 fn, ret, ret == -1 ? err : 0, after);
out:
	close(fd);
	free(img);
}

/* The body is skipped: mkdir() fails and creates nothing. */
static void test_override_skips_body(void)
{
	const char *fn = "__x64_sys_mkdir";
	const char *dir = "/tmp/ktap_safety_override";
	struct stat sb;
	size_t len;
	void *img;
	char log[LOG_SIZE];
	int fd, r, ret, err, exists;

	if (!injectable(fn)) {
		ksft_test_result_skip("set_retval skips the body: %s not error-injectable\n", fn);
		return;
	}
	rmdir(dir);
	img = retval_image(KTAP_PROBE_KPROBE, KTAP_PROBE_F_OVERRIDE,
			   "override", fn, 0, -EIO, &len);
	fd = open_control();
	r = load_ex(fd, img, len, 0, 0, getpid(), log);
	if (r || ioctl(fd, KTAP_IOC_START)) {
		ksft_test_result_fail("set_retval on %s: LOAD/START: %s %s\n",
				      fn, strerror(r ? -r : errno), log);
		goto out;
	}
	ret = syscall(SYS_mkdir, dir, 0700);
	err = errno;
	ioctl(fd, KTAP_IOC_STOP);
	exists = !stat(dir, &sb);
	rmdir(dir);
	ksft_test_result(ret == -1 && err == EIO && !exists,
			 "set_retval(-EIO) on %s skips the body: mkdir() = %d (errno %d), directory %s\n",
			 fn, ret, ret == -1 ? err : 0,
			 exists ? "created" : "not created");
out:
	close(fd);
	free(img);
}

/* F_OVERRIDE where it cannot work is refused at LOAD. */
static void test_override_load_refusals(const char *fn)
{
	static const struct {
		const char *what;
		uint32_t type, flags;
		uint64_t off;
		const char *word;	/* the log must say this too */
	} t[] = {
		{ "with F_RETURN", KTAP_PROBE_KPROBE,
		  KTAP_PROBE_F_OVERRIDE | KTAP_PROBE_F_RETURN, 0, "entry" },
		{ "at offset 4", KTAP_PROBE_KPROBE, KTAP_PROBE_F_OVERRIDE, 4, "" },
	};
	char log[LOG_SIZE];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		size_t len;
		void *img = retval_image(t[i].type, t[i].flags, "override",
					 fn, t[i].off, -EIO, &len);
		int fd = open_control();
		int r = load_ex(fd, img, len, 0, 0, -1, log);

		close(fd);
		ksft_test_result(r == -EINVAL && strstr(log, fn) &&
				 strstr(log, t[i].word),
				 "F_OVERRIDE %s on %s refused at LOAD: %s, log '%s'\n",
				 t[i].what, fn, r ? strerror(-r) : "accepted", log);
		free(img);
	}
}

static void test_override_timer(void)
{
	char log[LOG_SIZE];
	size_t len;
	void *img = retval_image(KTAP_PROBE_TIMER, KTAP_PROBE_F_OVERRIDE,
				 "tick", NULL, 1000000, -EIO, &len);
	int fd = open_control();
	int r = load_ex(fd, img, len, 0, 0, -1, log);

	close(fd);
	ksft_test_result(r == -EINVAL, "F_OVERRIDE on a timer probe refused at LOAD: %s, log '%s'\n",
			 r ? strerror(-r) : "accepted", log);
	free(img);
}

/* A function that is not on the error-injection list: START says so. */
static void test_override_not_listed(void)
{
	const char *fn = "vfs_read";
	char last[160];
	size_t len;
	void *img = retval_image(KTAP_PROBE_KPROBE, KTAP_PROBE_F_OVERRIDE,
				 "override", fn, 0, -EIO, &len);
	struct out *o = calloc(1, sizeof(*o));
	int fd = open_control(), r, s = 0, ok;

	r = load_ex(fd, img, len, 0, 0, getpid(), NULL);
	if (!r)
		s = ioctl(fd, KTAP_IOC_START) ? errno : 0;
	ioctl(fd, KTAP_IOC_STOP);
	out_drain(fd, o, 5000);
	ok = !r && s == EOPNOTSUPP && out_has(o, fn) &&
	     out_has(o, "error-injection list");
	out_show(o, !ok);
	ksft_test_result(ok,
			 "F_OVERRIDE on %s (not injectable): LOAD %d, START %s (want EOPNOTSUPP): %s\n",
			 fn, r, s ? strerror(s) : "succeeded",
			 out_line(o, "error-injection list", last, sizeof(last)));
	close(fd);
	free(o);
	free(img);
}

/*
 * set_retval refused at run time: without F_OVERRIDE, or with a value
 * the function cannot fail with. The syscall is not affected, and the
 * session prints an error (naming @w1 or @w2, unless @w1 is NULL).
 */
static void test_retval_runtime(const char *fn, uint32_t flags, int val,
				const char *what, const char *w1, const char *w2)
{
	char last[160];
	size_t len;
	void *img = retval_image(KTAP_PROBE_KPROBE, flags, "override", fn, 0,
				 val, &len);
	struct out *o = calloc(1, sizeof(*o));
	pid_t ppid = getppid();
	int fd = open_control(), r, ret = -2, ok;

	r = load_ex(fd, img, len, 0, 0, getpid(), NULL);
	if (!r && !ioctl(fd, KTAP_IOC_START)) {
		ret = syscall(SYS_getppid);
		ioctl(fd, KTAP_IOC_STOP);
	}
	out_drain(fd, o, 5000);
	ok = ret == ppid && out_has(o, "ktap: error: ") &&
	     (!w1 || out_has(o, w1) || out_has(o, w2));
	out_show(o, !ok);
	ksft_test_result(ok,
			 "set_retval(%d) %s: getppid() = %d (want %d): %s\n",
			 val, what, ret, ppid, out_last(o, last, sizeof(last)));
	close(fd);
	free(o);
	free(img);
}

static void test_set_retval(void)
{
	const char *fn = getppid_fn();

	if (!fn) {
		ksft_print_msg("no getppid function on the error-injection list\n");
		for (int i = 0; i < 8; i++)
			ksft_test_result_skip("set_retval: CONFIG_FUNCTION_ERROR_INJECTION?\n");
		return;
	}
	test_override_getppid(fn);
	test_override_skips_body();
	test_override_load_refusals(fn);
	test_override_timer();
	test_override_not_listed();
	test_retval_runtime(fn, 0, -EIO, "without F_OVERRIDE",
			    "KTAP_PROBE_F_OVERRIDE", "set_retval");
	test_retval_runtime(fn, KTAP_PROBE_F_OVERRIDE, 5,
			    "(not an error) with F_OVERRIDE", NULL, NULL);
}

/* ---- tables and builtins ---- */

enum work {
	W_PAIRS,	/* for (k, v in pairs(t)) s += v */
	W_SORT,		/* the same over sort_pairs(t) */
	W_SORT_CMP,	/* sort_pairs(t, function (a, b) { return a > b }) */
	W_HIST,		/* print_hist(t, 2); s = table_count(t) */
	W_LOG2HIST,	/* print_log2hist(t) */
	W_PTABLE,	/* s += count(v) over pairs(p), + count(p[500]) */
	W_LEN_LOOP,	/* 15,000 times #t (the LEN opcode) */
	W_LENF_LOOP,	/* 15,000 times len(t) */
	W_LEN_ONCE,	/* print(#t, len(t)) */
};

/*
 * Main chunk: g0 := a table with t[i] = i for i = 1..@n (or a ptable
 * with p[i] <<< i); then attach proto 1 to a timer of @period ns.
 */
static void emit_table_main(struct ki_image *im, struct ki_func *m, int n,
			    int ptable, uint64_t period)
{
	uint32_t kn = ki_kint(im, n);

	if (ptable)
		ki_op(m, INSN(CALLB, 0, 0, ki_builtin(im, "ptable")));
	else
		ki_op(m, INSN(NEWTABLE, 0, 0, 0));
	ki_op(m, INSN_BX(LOADI, 1, 1));
	ki_op(m, INSN_BX(LOADK, 2, kn));
	ki_op(m, INSN_BX(LOADI, 3, 1));
	for_head(m, 4, 1, 2, 1);
	if (ptable)
		ki_op(m, INSN(AGGR, 0, 1, 1));
	else
		ki_op(m, INSN(SETTABLE, 0, 1, 1));
	for_tail(m, 1, 3, 1);
	ki_op(m, INSN_BX(SETGLOBAL, 0, 0));
	emit_attach(m, 1, timer_probe(im, period));
}

/* The handler: r1 = g0, r2 = s; the work; print("sum=" .. s). */
static void emit_work(struct ki_image *im, struct ki_func *h, enum work w)
{
	uint32_t ksum = ki_kstr(im, "sum=");
	struct ki_func *cmp;

	ki_op(h, INSN_BX(GETGLOBAL, 1, 0));
	ki_op(h, INSN_BX(LOADI, 2, 0));
	switch (w) {
	case W_PAIRS:
	case W_SORT:
	case W_SORT_CMP:
	case W_PTABLE:
		ki_op(h, INSN(MOVE, 4, 1, 0));
		if (w == W_SORT_CMP) {
			/* proto 2, in proto 1: return a > b */
			cmp = ki_func(im, 2, 3);
			cmp->parent = 1;
			ki_op(cmp, INSN(LT, 2, 1, 0));	/* b < a */
			ki_op(cmp, INSN(RETURN, 2, 1, 0));
			ki_op(h, INSN_BX(CLOSURE, 5, 2));
			ki_op(h, INSN(CALLB, 3, 2, ki_builtin(im, "sort_pairs")));
		} else {
			ki_op(h, INSN(CALLB, 3, 1, ki_builtin(im, w == W_SORT ?
				      "sort_pairs" : "pairs")));
		}
		/* r3 the iterator; ITERNEXT sets r4, r5 = key, value */
		if (w == W_PTABLE) {
			ki_op(h, INSN_BX(JMP, 0, 3));
			ki_op(h, INSN(MOVE, 8, 5, 0));
			ki_op(h, INSN(CALLB, 7, 1, ki_builtin(im, "count")));
			ki_op(h, INSN(ADD, 2, 2, 7));
			ki_op(h, INSN_BX(ITERNEXT, 3, -4));
			ki_op(h, INSN_BX(LOADI, 6, 500));
			ki_op(h, INSN(GETTABLE, 6, 1, 6));
			ki_op(h, INSN(MOVE, 8, 6, 0));
			ki_op(h, INSN(CALLB, 7, 1, ki_builtin(im, "count")));
			ki_op(h, INSN(ADD, 2, 2, 7));
		} else {
			ki_op(h, INSN_BX(JMP, 0, 1));
			ki_op(h, INSN(ADD, 2, 2, 5));
			ki_op(h, INSN_BX(ITERNEXT, 3, -2));
		}
		break;
	case W_HIST:
		ki_op(h, INSN(MOVE, 4, 1, 0));
		ki_op(h, INSN_BX(LOADI, 5, 2));
		ki_op(h, INSN(CALLB, 3, 2, ki_builtin(im, "print_hist")));
		ki_op(h, INSN(MOVE, 3, 1, 0));
		ki_op(h, INSN(CALLB, 2, 1, ki_builtin(im, "table_count")));
		break;
	case W_LOG2HIST:
		ki_op(h, INSN(MOVE, 4, 1, 0));
		ki_op(h, INSN(CALLB, 3, 1, ki_builtin(im, "print_log2hist")));
		break;
	case W_LEN_LOOP:
	case W_LENF_LOOP:
		/*
		 * for (r5 = 1, 15000): r2 = #t or len(t). 15,000 passes of
		 * 5 or 6 instructions fit the default budget of 100,000,
		 * so only an O(n) #t or len() can exhaust it.
		 */
		ki_op(h, INSN_BX(LOADI, 3, 15000));
		ki_op(h, INSN_BX(LOADI, 4, 1));
		ki_op(h, INSN(MOVE, 5, 4, 0));
		if (w == W_LEN_LOOP) {
			for_head(h, 8, 5, 3, 1);
			ki_op(h, INSN(LEN, 2, 1, 0));
			for_tail(h, 5, 4, 1);
		} else {
			for_head(h, 8, 5, 3, 2);
			ki_op(h, INSN(MOVE, 10, 1, 0));
			ki_op(h, INSN(CALLB, 9, 1, ki_builtin(im, "len")));
			for_tail(h, 5, 4, 2);
			ki_op(h, INSN(MOVE, 2, 9, 0));
		}
		break;
	case W_LEN_ONCE:
		/* print(#t, len(t)) */
		ki_op(h, INSN(LEN, 5, 1, 0));
		ki_op(h, INSN(MOVE, 7, 1, 0));
		ki_op(h, INSN(CALLB, 6, 1, ki_builtin(im, "len")));
		ki_op(h, INSN(CALLB, 4, 2, ki_builtin(im, "print")));
		ki_op(h, INSN(RETURN, 0, 0, 0));
		return;
	}
	ki_op(h, INSN_BX(LOADK, 6, ksum));
	ki_op(h, INSN(CONCAT, 6, 6, 2));
	ki_op(h, INSN(CALLB, 5, 1, ki_builtin(im, "print")));
	ki_op(h, INSN(RETURN, 0, 0, 0));
}

static void *work_image(enum work w, int n, uint64_t period, size_t *len)
{
	struct ki_image im = { 0 };
	struct ki_func *m = ki_func(&im, 0, 6);
	struct ki_func *h = ki_func(&im, 1, 12);

	emit_table_main(&im, m, n, w == W_PTABLE, period);
	emit_work(&im, h, w);
	return build(&im, 1, len);
}

/*
 * A tick handler does O(n) work on a 100,000-entry table: the first
 * firing must end the session with the budget error (or, for #t and
 * len(), which may be O(1), print the length), promptly, and STOP must
 * return promptly.
 */
static void test_big_table(const char *what, enum work w)
{
	const char *want = "instruction budget exceeded (100000)";
	char log[LOG_SIZE], last[160];
	struct ktap_stats st = { 0 };
	double t0, t_main, t_end, t_stop;
	size_t len;
	void *img = work_image(w, 100000, 2000000, &len);
	struct out *o = calloc(1, sizeof(*o));
	int fd = open_control(), r, ok, result = 0;

	r = load_ex(fd, img, len, 64 * 1024, 0, -1, log);
	t0 = now_ms();
	if (r || ioctl(fd, KTAP_IOC_START)) {
		ksft_test_result_fail("%s on 100,000 entries: LOAD/START: %s %s\n",
				      what, strerror(r ? -r : errno), log);
		goto out;
	}
	t_main = now_ms() - t0;
	t0 = now_ms();
	out_drain(fd, o, 5000);
	t_end = now_ms() - t0;
	get_stats(fd, &st);
	t0 = now_ms();
	ioctl(fd, KTAP_IOC_STOP);
	t_stop = now_ms() - t0;
	out_drain(fd, o, 2000);
	if (w == W_LEN_LOOP || w == W_LENF_LOOP)
		result = out_has(o, "sum=100000\n") && !out_has(o, "ktap: error");
	ok = (result || (o->eof && out_has(o, "ktap: error: ") &&
			 out_has(o, want) && st.state == KTAP_STATE_EXITING)) &&
	     st.hits >= 1 && t_stop < 2000;
	out_show(o, !ok);
	ksft_test_result(ok, "%s on 100,000 entries in a tick handler: %s after %.0f ms (main chunk %.0f ms, %llu firings, STOP %.0f ms): %s\n",
			 what, result ? "result" : o->eof ? "ended" : "still running",
			 t_end, t_main, (unsigned long long)st.hits, t_stop,
			 out_last(o, last, sizeof(last)));
out:
	close(fd);
	free(o);
	free(img);
}

static void test_len_small(void)
{
	char log[LOG_SIZE], last[160];
	struct ktap_stats st = { 0 };
	size_t len;
	void *img = work_image(W_LEN_ONCE, 1000, 10000000, &len);
	struct out *o = calloc(1, sizeof(*o));
	int fd = open_control(), r, ok;

	r = load_ex(fd, img, len, 0, 0, -1, log);
	if (r || ioctl(fd, KTAP_IOC_START)) {
		ksft_test_result_fail("#t on 1,000 entries: LOAD/START: %s %s\n",
				      strerror(r ? -r : errno), log);
		goto out;
	}
	out_drain(fd, o, 300);
	get_stats(fd, &st);
	ioctl(fd, KTAP_IOC_STOP);
	out_drain(fd, o, 2000);
	ok = st.hits >= 3 && !st.errors && out_has(o, "1000\t1000\n") &&
	     !out_has(o, "ktap: error");
	out_show(o, !ok);
	ksft_test_result(ok,
			 "#t and len(t) once per tick on 1,000 entries, default budget: %llu firings, %llu errors: %s\n",
			 (unsigned long long)st.hits, (unsigned long long)st.errors,
			 out_last(o, last, sizeof(last)));
out:
	close(fd);
	free(o);
	free(img);
}

/* ---- constant memory ---- */

static unsigned long firings;

/*
 * Wait until @fd's session counted @hits firings, draining its output in
 * slices of @slice_ms.
 */
static int wait_hits(int fd, struct out *o, unsigned long long hits,
		     int slice_ms, double deadline, struct ktap_stats *st)
{
	for (;;) {
		if (get_stats(fd, st))
			return -1;
		if (st->hits >= hits)
			return 0;
		if (st->errors || st->state != KTAP_STATE_RUNNING ||
		    now_ms() > deadline)
			return -1;
		out_drain(fd, o, slice_ms);
	}
}

static void test_constant_memory(const char *what, enum work w,
				 const char *want, unsigned long n,
				 uint64_t period)
{
	char log[LOG_SIZE], last[160];
	struct ktap_stats s10 = { 0 }, sn = { 0 };
	double t0 = now_ms();
	size_t len;
	void *img = work_image(w, 1000, period, &len);
	struct out *o = calloc(1, sizeof(*o));
	int fd = open_control(), r, ok;

	r = load_ex(fd, img, len, 0, KTAP_MAX_INSN_BUDGET, -1, log);
	if (r || ioctl(fd, KTAP_IOC_START)) {
		ksft_test_result_fail("memory of %s: LOAD/START: %s %s\n",
				      what, strerror(r ? -r : errno), log);
		goto out;
	}
	if (wait_hits(fd, o, 10, 1, now_ms() + 30000, &s10) ||
	    wait_hits(fd, o, n, 50, now_ms() + 240000, &sn)) {
		ksft_test_result_fail("memory of %s: stopped after %llu firings (state %u, %llu errors, %llu bytes used): %s\n",
				      what, (unsigned long long)sn.hits, sn.state,
				      (unsigned long long)sn.errors,
				      (unsigned long long)sn.mem_used,
				      out_last(o, last, sizeof(last)));
		goto out;
	}
	ioctl(fd, KTAP_IOC_STOP);
	out_drain(fd, o, 2000);
	ok = sn.mem_used == s10.mem_used && s10.mem_used > 0 && !sn.errors &&
	     out_has(o, want) && !out_has(o, "ktap: error");
	out_show(o, !ok);
	ksft_test_result(ok, "memory of %s on 1,000 keys: %llu bytes after %llu firings, %llu after %llu (%.1f s): %s\n",
			 what, (unsigned long long)s10.mem_used,
			 (unsigned long long)s10.hits,
			 (unsigned long long)sn.mem_used,
			 (unsigned long long)sn.hits, (now_ms() - t0) / 1000,
			 out_last(o, last, sizeof(last)));
out:
	close(fd);
	free(o);
	free(img);
}

/* ---- loops in the main chunk ---- */

/* The main chunk loops forever: JMPT -1 on a true register, or JMP -1. */
static void *main_loop_image(int jmpt, size_t *len)
{
	struct ki_image im = { 0 };
	struct ki_func *m = ki_func(&im, 0, 4);

	if (jmpt) {
		ki_op(m, INSN_BX(LOADI, 0, 1));
		ki_op(m, INSN_BX(JMPT, 0, -1));
	} else {
		ki_op(m, INSN_BX(JMP, 0, -1));
	}
	ki_op(m, INSN(RETURN, 0, 0, 0));
	return build(&im, 0, len);
}

/* What a child running START reports to its parent. */
struct report {
	int loaded;		/* LOAD succeeded */
	int start_err;		/* errno of START, 0 */
	double start_ms;	/* how long START took */
	char out[512];		/* the session output */
};

static void on_alarm(int sig)
{
	(void)sig;
}

/*
 * Child: LOAD @img, say so on @sync, START (with SIGALRM after
 * @alarm_ms if nonzero), then report on @sync.
 */
static void __noreturn
start_child(void *img, size_t len, int sync, int alarm_ms)
{
	struct report rep;
	char *out;
	double t0;
	int fd = open_control();

	memset(&rep, 0, sizeof(rep));
	rep.loaded = fd >= 0 && !load_ex(fd, img, len, 0, 0, -1, NULL);
	if (write(sync, &rep.loaded, sizeof(rep.loaded)) != sizeof(rep.loaded) ||
	    !rep.loaded)
		_exit(1);
	if (alarm_ms) {
		struct sigaction sa = { .sa_handler = on_alarm };	/* no SA_RESTART */
		struct itimerval it = {
			.it_value = { alarm_ms / 1000, (alarm_ms % 1000) * 1000 },
		};

		sigaction(SIGALRM, &sa, NULL);
		setitimer(ITIMER_REAL, &it, NULL);
	}
	t0 = now_ms();
	rep.start_err = ioctl(fd, KTAP_IOC_START) ? errno : 0;
	rep.start_ms = now_ms() - t0;
	ioctl(fd, KTAP_IOC_STOP);
	out = ki_read_all(fd, sizeof(rep.out) - 1);
	snprintf(rep.out, sizeof(rep.out), "%s", out);
	if (write(sync, &rep, sizeof(rep)) != sizeof(rep))
		_exit(1);
	_exit(0);
}

/* Read exactly @n bytes from @fd within @ms; 0 on success. */
static int read_within(int fd, void *buf, size_t n, int ms)
{
	double end = now_ms() + ms;
	size_t got = 0;

	while (got < n) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = end - now_ms();
		ssize_t r;

		if (left <= 0 || poll(&p, 1, left) <= 0)
			return -1;
		r = read(fd, (char *)buf + got, n - got);
		if (r <= 0)
			return -1;
		got += r;
	}
	return 0;
}

/* Reap @pid within @ms; returns the time it took, or -1. */
static double reap_within(pid_t pid, int *status, int ms)
{
	double t0 = now_ms();

	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid)
			return now_ms() - t0;
		if (r < 0 || now_ms() - t0 > ms)
			return -1;
		sleep_ms(5);
	}
}

/*
 * A child STARTs a main chunk that loops forever; 200 ms later the
 * parent sends SIGKILL: the child must be gone within a second.
 */
static void test_main_sigkill(const char *what, int jmpt)
{
	struct report rep;
	size_t len;
	void *img = main_loop_image(jmpt, &len);
	int sync[2], loaded = 0, status = 0, early;
	double reaped = -1;
	pid_t pid;

	if (pipe(sync))
		ksft_exit_fail_msg("pipe: %s\n", strerror(errno));
	pid = fork();
	if (!pid) {
		close(sync[0]);
		start_child(img, len, sync[1], 0);
	}
	close(sync[1]);
	if (read_within(sync[0], &loaded, sizeof(loaded), 10000) || !loaded) {
		reap_within(pid, &status, 10000);
		ksft_test_result_fail("%s: the child could not LOAD\n", what);
		goto out;
	}
	sleep_ms(200);
	early = waitpid(pid, &status, WNOHANG) == pid;
	if (!early) {
		kill(pid, SIGKILL);
		reaped = reap_within(pid, &status, 10000);
	}
	if (early) {
		/* START ended before the signal: only its budget can do that */
		int rep_ok = !read_within(sync[0], &rep, sizeof(rep), 1000);

		ksft_test_result(rep_ok && strstr(rep.out, "instruction budget exceeded"),
				 "%s: START returned by itself in %.0f ms: %s\n",
				 what, rep_ok ? rep.start_ms : -1.0,
				 rep_ok ? rep.out : "(no report)");
	} else {
		ksft_test_result(reaped >= 0 && reaped <= 1000 &&
				 WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
				 "%s: SIGKILL 200 ms into START reaped after %.0f ms (want <= 1000)\n",
				 what, reaped);
	}
out:
	close(sync[0]);
	free(img);
}

/*
 * Run START in a child with SIGALRM after @alarm_ms (0: none); wait up
 * to @limit_ms for its report, else kill it.
 */
static int start_in_child(void *img, size_t len, int alarm_ms, int limit_ms,
			  struct report *rep)
{
	int sync[2], loaded = 0, status, ret = -1;
	pid_t pid;

	memset(rep, 0, sizeof(*rep));
	if (pipe(sync))
		ksft_exit_fail_msg("pipe: %s\n", strerror(errno));
	pid = fork();
	if (!pid) {
		close(sync[0]);
		start_child(img, len, sync[1], alarm_ms);
	}
	close(sync[1]);
	if (!read_within(sync[0], &loaded, sizeof(loaded), 10000) && loaded &&
	    !read_within(sync[0], rep, sizeof(*rep), limit_ms))
		ret = 0;
	if (ret)
		kill(pid, SIGKILL);
	if (reap_within(pid, &status, 10000) < 0)
		ksft_print_msg("child %d still not reaped after SIGKILL\n", pid);
	close(sync[0]);
	return ret;
}

/* A pending signal ends the loop within KTAP_MAIN_SLICE instructions. */
static void test_main_signal(void)
{
	struct report rep;
	size_t len;
	void *img = main_loop_image(1, &len);
	int r = start_in_child(img, len, 300, 30000, &rep);

	ksft_test_result(!r && rep.start_ms >= 250 && rep.start_ms <= 1300 &&
			 (rep.start_err == EINTR || strstr(rep.out, "interrupted")),
			 "main chunk JMPT to itself, SIGALRM after 300 ms: START returned after %.0f ms (%s): %s\n",
			 r ? -1.0 : rep.start_ms,
			 rep.start_err ? strerror(rep.start_err) : "0", rep.out);
	free(img);
}

/* No signal: the main chunk's budget, 100,000,000, ends the loop. */
static void test_main_budget(void)
{
	struct report rep;
	size_t len;
	void *img = main_loop_image(1, &len);
	int r = start_in_child(img, len, 0, 180000, &rep);

	ksft_test_result(!r && strstr(rep.out, "ktap: error: ") &&
			 strstr(rep.out, "instruction budget exceeded (100000000)"),
			 "main chunk JMPT to itself, no signal: START returned after %.1f s: %s\n",
			 r ? -1.0 : rep.start_ms / 1000, r ? "(no report in 180 s)" : rep.out);
	free(img);
}

int main(void)
{
	const char *env = getenv("KTAP_SAFETY_FIRINGS");
	unsigned long few;

	ksft_print_header();
	if (access(KTAP_CONTROL, F_OK))
		ksft_exit_skip("%s missing (CONFIG_KTAP?)\n", KTAP_CONTROL);
	if (geteuid())
		ksft_exit_skip("must run as root\n");
	firings = env ? strtoul(env, NULL, 0) : 10000;
	if (!env && !access("/sys/kernel/debug/kmemleak", F_OK))
		firings = 1000;		/* a debug kernel: KASAN and friends */
	if (firings < 20)
		firings = 20;
	/* a comparison function costs ~30,000 calls a firing */
	few = firings / 10 > 20 ? firings / 10 : 20;
	ksft_print_msg("constant-memory tests: %lu firings (%lu with a comparison function)\n",
		       firings, few);
	ksft_set_plan(PLAN);

	test_load_unprivileged(0);
	test_load_unprivileged(1);
	test_start_unprivileged();
	test_attr_size();
	test_budget_ceiling();

	test_cmp_branch_off_end(KTAP_OP_EQ, "EQ", 1);
	test_cmp_branch_off_end(KTAP_OP_LT, "LT", 0);
	test_cmp_branch_off_end(KTAP_OP_LE, "LE", 1);
	test_cmp_branch_off_end(KTAP_OP_EQK, "EQK", 0);
	test_branch_target_out(1, 0);
	test_branch_target_out(0, 0);
	test_branch_target_out(1, 1);
	test_fall_off_end(0);
	test_fall_off_end(1);
	test_orphan_words(0);
	test_orphan_words(1);
	test_unknown_opcode();
	test_verifier_accepts();

	test_unknown_builtin("no_such_builtin");
	test_unknown_builtin("gettimeofday_us");
	test_builtin_index();
	test_builtin_bad_name();
	test_builtin_arity("len", 0);
	test_builtin_arity("cpu", 2);
	test_field_entry(0);
	test_field_entry(1);
	test_field_entry(2);
	test_probe_reserved();
	test_attach_fails("tracepoint pattern that matches nothing",
			  "ktap_no_such_system:no_such_event*", "__syscall_nr",
			  ENOENT);
	test_attach_fails("field that the events lack",
			  "syscalls:sys_enter_getppid", "ktap_no_such_field",
			  EINVAL);

	test_set_retval();

	test_constant_memory("pairs()", W_PAIRS, "sum=500500\n", firings, 200000);
	test_constant_memory("sort_pairs()", W_SORT, "sum=500500\n", firings, 200000);
	test_constant_memory("sort_pairs() with a comparison function", W_SORT_CMP,
			     "sum=500500\n", few, 1000000);
	test_constant_memory("print_hist(t, 2)", W_HIST, "sum=1000\n", firings, 200000);
	test_constant_memory("pairs() and reads of a ptable", W_PTABLE, "sum=1001\n",
			     firings, 200000);

	test_len_small();
	test_big_table("#t x 15,000", W_LEN_LOOP);
	test_big_table("len(t) x 15,000", W_LENF_LOOP);
	test_big_table("pairs()", W_PAIRS);
	test_big_table("sort_pairs()", W_SORT);
	test_big_table("print_hist(t, 2)", W_HIST);
	test_big_table("print_log2hist()", W_LOG2HIST);

	/* These never end on an unfixed kernel. */
	test_handler_loop("tick handler JMP to itself, budget 1,000,000",
			  LOOP_JMP, KTAP_MAX_INSN_BUDGET);
	test_handler_loop("tick handler JMP to itself", LOOP_JMP, 0);
	test_main_sigkill("main chunk JMP to itself", 0);
	test_main_sigkill("main chunk JMPT to itself", 1);
	test_main_signal();
	test_main_budget();
	test_handler_loop("tick handler JMPT to itself", LOOP_JMPT, 0);
	test_handler_loop("tick handler JMPF to itself", LOOP_JMPF, 0);
	test_handler_loop("tick handler ITERNEXT loop, 4,000 x 51 instructions",
			  LOOP_ITERNEXT, 0);
	test_end_handlers_share_budget();
	test_cpu_share();

	ksft_test_result(count_sessions() == 0, "no session left behind (%d)\n",
			 count_sessions());
	ksft_finished();
}
