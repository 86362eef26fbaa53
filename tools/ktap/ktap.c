// SPDX-License-Identifier: GPL-2.0
/*
 * ktap: the command line tool. Compiles a script (kp_compile), then
 * either prints the bytecode (-b) or runs it through the kernel's
 * tracefs control file: LOAD, START, stream the session's output with
 * poll()+read() until Ctrl-C, exit() or the traced command ends, STOP,
 * drain, STATS. See Documentation/trace/ktap.rst.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "kp.h"
#include "ast.h"
#include "image.h"
#include "disasm.h"
#include "events.h"
#include "verify.h"
#include "usym.h"

#define KTAP_CONTROL	"/sys/kernel/tracing/ktap/control"

struct opts {
	const char	*file;		/* script path, or NULL with -e */
	const char	*src;		/* -e / -s source */
	const char	*out;		/* -o */
	int		pid, cpu;
	unsigned int	budget, mem_kb;	/* -B, -M: 0 for the defaults */
	unsigned int	buffer_kb;	/* -R: 0 for the default */
	const char	*instance;	/* -I: NULL for ktap-<id> */
	int		timestamps, verbose, quiet, dry, bytecode, tree;
	int		noread;		/* -N: the instance's readers read */
	int		nofollow;	/* -P: not the target's children */
	int		argbase;	/* -1 */
	int		json;		/* -f json */
	char		**args;		/* script arguments */
	int		nargs;
	char		**cmd;		/* after -- */
};

static volatile sig_atomic_t got_stop, got_child;

static void on_signal(int sig)
{
	if (sig == SIGCHLD)
		got_child = 1;
	else
		got_stop = 1;
}

static void usage(FILE *f)
{
	fputs("Usage: ktap [options] file [script args] [-- cmd [args]]\n"
	      "       ktap [options] -e 'one-liner' [script args] [-- cmd [args]]\n"
	      "\n"
	      "  -e SRC     run the one-liner SRC\n"
	      "  -o FILE    write output (or the -b listing) to FILE\n"
	      "  -p PID     trace only process PID and the processes it starts\n"
	      "  -P         with -p or --: not the processes it starts\n"
	      "  -C CPU     trace only CPU\n"
	      "  -T         prefix each output line with a timestamp\n"
	      "  -f FORMAT  text (default) or json: one JSON object per line\n"
	      "  -v         verbose: probes, hits, drops, memory\n"
	      "  -q         do not print \"Tracing... Hit Ctrl-C to end.\"\n"
	      "  -d         dry run: attach the probes, run no handler\n"
	      "  -B N       instruction budget of one handler run (default 100000)\n"
	      "  -M KB      session memory in KiB (default 4096)\n"
	      "  -R KB      output ring buffer per CPU in KiB (default 1024)\n"
	      "  -I NAME    name the tracing instance of the output\n"
	      "             (default ktap-<session id>); an instance that\n"
	      "             exists (mkdir, trace-cmd) is written into and kept\n"
	      "  -N         do not read the output: leave it to the readers\n"
	      "             of the instance (cat trace_pipe, trace-cmd)\n"
	      "  -s EVENT   trace EVENT { print(cpu, tid, execname, argstr) }\n"
	      "  -1         argN count from 1, as in ktap 0.2 to 0.4 (arg1 is\n"
	      "             the first field; arg0 of later versions)\n"
	      "  -A         print the resolved syntax tree and exit\n"
	      "  -b         print the bytecode and exit (needs no kernel)\n"
	      "  -le [GLOB] list events (SYSTEM:EVENT) matching GLOB\n"
	      "  -lk [GLOB] list the kernel functions probe:FUNC can trace\n"
	      "  -lp        list the perf events and watchpoint forms\n"
	      "  -lf DSO    list the functions of an ELF binary\n"
	      "  -lm DSO    list the SDT markers of an ELF binary\n"
	      "  -V         print the tool's and the kernel's versions\n"
	      "  -h         this help\n"
	      "  -- cmd     start cmd, trace it and the processes it starts,\n"
	      "             stop when it exits\n", f);
}

static long parse_int(const char *s, const char *opt)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > 0x7fffffff) {
		fprintf(stderr, "ktap: %s needs a number, not '%s'\n", opt, s);
		exit(1);
	}
	return v;
}

static char *read_script(const char *path, uint32_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap), *nb;
	ssize_t r;
	int fd = strcmp(path, "-") ? open(path, O_RDONLY) : 0;

	if (fd < 0 || !buf) {
		fprintf(stderr, "ktap: cannot open %s: %s\n", path,
			strerror(errno));
		free(buf);
		return NULL;
	}
	for (;;) {
		if (n + 1 >= cap) {
			if (cap > 2 * KP_MAX_SOURCE) {	/* kp_compile says why */
				break;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fprintf(stderr, "ktap: cannot read %s: %s\n", path,
				strerror(errno));
			free(buf);
			buf = NULL;
			break;
		}
		if (!r)
			break;
		n += (size_t)r;
	}
	if (fd > 0)
		close(fd);
	if (buf) {
		buf[n] = '\0';
		*len = (uint32_t)n;
	}
	return buf;
}

static int print_version(void)
{
	struct ktap_version v;
	int fd;

	printf("ktap %s (bytecode ABI %u, %u opcodes, %u builtins)\n",
	       KP_VERSION, KTAP_ABI_VERSION, KTAP_OP__COUNT,
	       kp_builtin_kernel_count());
	fd = open(KTAP_CONTROL, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		printf("kernel: not available (%s: %s)\n", KTAP_CONTROL,
		       strerror(errno));
		return 0;
	}
	memset(&v, 0, sizeof(v));
	v.size = sizeof(v);
	if (ioctl(fd, KTAP_IOC_VERSION, &v)) {
		printf("kernel: not available (KTAP_IOC_VERSION: %s)\n",
		       strerror(errno));
	} else {
		v.release[sizeof(v.release) - 1] = '\0';
		printf("kernel: %s, bytecode ABI %u, %u opcodes, %u builtins%s\n",
		       v.release, v.abi_version, v.nr_opcodes, v.nr_builtins,
		       v.abi_version == KTAP_ABI_VERSION ? "" :
		       " (ABI mismatch)");
	}
	close(fd);
	return 0;
}

/* Copy session output to @out, with -T timestamps at line starts. */
/*
 * The session's output, written a whole line at a time: a line may name
 * user addresses (see usym.c), and -T stamps each line. What follows the
 * last newline of a read waits in @carry for the rest of its line, or
 * for emit_flush() when nothing more is there to read.
 */
struct kp_out {
	FILE	*f;
	int	ts;
	int	json;		/* -f json */
	int	bol;
	size_t	nread;		/* bytes the session gave us */
	size_t	ncarry;
	char	carry[8192];
};

/* Length of the valid UTF-8 sequence at @s (at most @n bytes), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 :
		     s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
	size_t i;

	if (!len || len > n)
		return 0;
	for (i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

/* @n bytes as a JSON string: valid UTF-8 kept, other bytes escaped. */
static void json_string(FILE *f, const char *p, size_t n)
{
	const unsigned char *s = (const unsigned char *)p;
	size_t i, k;

	fputc('"', f);
	for (i = 0; i < n; i++) {
		k = s[i] >= 0x80 ? utf8_len(s + i, n - i) : 0;
		if (s[i] == '"' || s[i] == '\\') {
			fprintf(f, "\\%c", s[i]);
		} else if (s[i] >= 0x20 && s[i] < 0x7f) {
			fputc(s[i], f);
		} else if (k) {
			fwrite(s + i, 1, k, f);
			i += k - 1;
		} else {
			fprintf(f, "\\u%04x", s[i]);
		}
	}
	fputc('"', f);
}

/*
 * -f json: one object per line. The kernel's own JSON (aggregations)
 * comes marked with KTAP_JSON_MARK; any other line is text a script
 * printed: {"type": "line", "data": TEXT}, with its time under -T.
 */
static void put_json_line(struct kp_out *o, const char *s, size_t len)
{
	struct timespec t;
	char *text = NULL;
	size_t tlen = 0;
	FILE *m;

	if (len && s[len - 1] == '\n')
		len--;
	if (len && s[0] == KTAP_JSON_MARK) {
		fwrite(s + 1, 1, len - 1, o->f);
		fputc('\n', o->f);
		return;
	}
	m = open_memstream(&text, &tlen);
	if (m) {
		kp_usym_write(m, s, len);
		fclose(m);
	}
	fputs("{\"type\": \"line\", ", o->f);
	if (o->ts) {
		clock_gettime(CLOCK_REALTIME, &t);
		fprintf(o->f, "\"time\": %lld.%06ld, ", (long long)t.tv_sec,
			t.tv_nsec / 1000);
	}
	fputs("\"data\": ", o->f);
	if (text)
		json_string(o->f, text, tlen);
	else
		json_string(o->f, s, len);
	fputs("}\n", o->f);
	free(text);
}

static void put_lines(struct kp_out *o, const char *s, size_t n)
{
	struct timespec t;
	const char *nl;
	size_t len;

	if (o->json) {
		for (; n; s += len, n -= len) {
			nl = memchr(s, '\n', n);
			len = nl ? (size_t)(nl - s) + 1 : n;
			put_json_line(o, s, len);
		}
		return;
	}
	if (!o->ts && !memmem(s, n, " (pid ", 6)) {
		fwrite(s, 1, n, o->f);
		o->bol = n && s[n - 1] == '\n';
		return;
	}
	for (; n; s += len, n -= len) {
		nl = memchr(s, '\n', n);
		len = nl ? (size_t)(nl - s) + 1 : n;
		if (o->ts && o->bol) {
			clock_gettime(CLOCK_REALTIME, &t);
			fprintf(o->f, "%lld.%06ld ", (long long)t.tv_sec,
				t.tv_nsec / 1000);
		}
		kp_usym_write(o->f, s, len);
		o->bol = !!nl;
	}
}

static void emit_flush(struct kp_out *o)
{
	put_lines(o, o->carry, o->ncarry);
	o->ncarry = 0;
}

static void emit(struct kp_out *o, const char *buf, size_t n)
{
	const char *nl = memchr(buf, '\n', n);
	size_t len;

	if (o->ncarry && nl) {
		/* complete the carried line */
		len = (size_t)(nl - buf) + 1;
		if (o->ncarry + len <= sizeof(o->carry)) {
			memcpy(o->carry + o->ncarry, buf, len);
			o->ncarry += len;
			emit_flush(o);
			buf += len;
			n -= len;
		} else {
			emit_flush(o);
		}
	}
	for (len = n; len && buf[len - 1] != '\n'; len--)
		;
	if (len)
		put_lines(o, buf, len);
	if (n - len > sizeof(o->carry) - o->ncarry) {
		emit_flush(o);
		put_lines(o, buf + len, n - len);
		return;
	}
	memcpy(o->carry + o->ncarry, buf + len, n - len);
	o->ncarry += n - len;
}

/*
 * Can @file be executed, looked up in PATH as execvp() would? Checked
 * before anything is traced: a command that cannot start should leave
 * no session output behind, only its error.
 *
 * Return: 0 or an errno.
 */
static int cmd_check(const char *file)
{
	const char *path = getenv("PATH"), *p, *end;
	char buf[4096];
	struct stat sb;
	int err = ENOENT;

	if (!*file)
		return ENOENT;
	if (strchr(file, '/')) {
		if (stat(file, &sb))
			return errno;
		if (!S_ISREG(sb.st_mode) || access(file, X_OK))
			return EACCES;
		return 0;
	}
	if (!path)
		path = "/usr/local/bin:/bin:/usr/bin";
	for (p = path; ; p = end + 1) {
		size_t dlen;

		end = strchr(p, ':');
		if (!end)
			end = p + strlen(p);
		dlen = (size_t)(end - p);
		if (snprintf(buf, sizeof(buf), "%.*s%s%s", (int)dlen, p,
			     dlen ? "/" : "", file) < (int)sizeof(buf) &&
		    !stat(buf, &sb)) {
			if (S_ISREG(sb.st_mode) && !access(buf, X_OK))
				return 0;
			err = EACCES;
		}
		if (!*end)
			break;
	}
	return err;
}

/*
 * Start @cmd stopped: it waits for a byte on @release before exec. If
 * the exec fails all the same, the child writes its errno to
 * @exec_status (close-on-exec: a successful exec closes it unwritten).
 */
static pid_t spawn(char **cmd, int *release, int *exec_status)
{
	int p[2], st[2];
	pid_t pid;
	char c;

	if (pipe(p)) {
		perror("ktap: pipe");
		return -1;
	}
	if (pipe2(st, O_CLOEXEC)) {
		perror("ktap: pipe");
		close(p[0]);
		close(p[1]);
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		perror("ktap: fork");
		close(p[0]);
		close(p[1]);
		close(st[0]);
		close(st[1]);
		return -1;
	}
	if (!pid) {
		int err;

		close(p[1]);
		close(st[0]);
		if (read(p[0], &c, 1) != 1)
			_exit(127);
		close(p[0]);
		execvp(cmd[0], cmd);
		err = errno;
		fprintf(stderr, "ktap: cannot run %s: %s\n", cmd[0],
			strerror(err));
		if (write(st[1], &err, sizeof(err)) != sizeof(err))
			_exit(127);
		_exit(127);
	}
	close(p[0]);
	close(st[1]);
	*release = p[1];
	*exec_status = st[0];
	return pid;
}

/*
 * Does a script that failed to compile look like bpftrace's language?
 * Its probe prefixes at the start of a line, BEGIN/END blocks, or an
 * '@' map outside strings and comments (ktap has no '@').
 */
static int looks_like_bpftrace(const char *src, size_t len)
{
	static const char *const heads[] = {
		"tracepoint:", "kprobe:", "kretprobe:", "uprobe:", "uretprobe:",
		"usdt:", "kfunc:", "kretfunc:", "fentry:", "fexit:",
		"rawtracepoint:", "interval:", "BEGIN", "END",
	};
	int bol = 1, instr = 0, incomment = 0;
	size_t i, k;

	for (i = 0; i < len; i++) {
		char c = src[i];

		if (c == '\n') {
			bol = 1;
			incomment = 0;
			instr = 0;
			continue;
		}
		if (incomment)
			continue;
		if (instr) {
			if (c == '\\')
				i++;
			else if (c == '"')
				instr = 0;
			continue;
		}
		if (bol && (c == ' ' || c == '\t'))
			continue;
		if (bol) {
			for (k = 0; k < ARRAY_SIZE(heads); k++) {
				size_t n = strlen(heads[k]);

				if (len - i >= n && !memcmp(src + i, heads[k], n) &&
				    (heads[k][n - 1] == ':' || i + n == len ||
				     strchr(" \t{\n", src[i + n])))
					return 1;
			}
		}
		bol = 0;
		if (c == '#')
			incomment = 1;
		else if (c == '"')
			instr = 1;
		else if (c == '@')
			return 1;
	}
	return 0;
}

static int run(const struct opts *o, struct kp_state *S, const void *img,
	       uint32_t len)
{
	uint32_t nprobes = S->img->nprobes;
	struct ktap_load_attr attr;
	struct ktap_stats st;
	char log[4096], buf[65536];
	FILE *out = stdout;
	struct kp_out ko = { .ts = o->timestamps, .json = o->json, .bol = 1 };
	int fd, release = -1, exec_status = -1, stopped = 0, rc = 0;
	int start_err = 0;
	pid_t child = -1;

	if (o->cmd) {
		int err = cmd_check(o->cmd[0]);

		if (err) {
			fprintf(stderr, "ktap: cannot run %s: %s\n", o->cmd[0],
				strerror(err));
			return 127;
		}
	}
	fd = open(KTAP_CONTROL, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		int err = errno;

		fprintf(stderr, "ktap: cannot open %s: %s%s\n", KTAP_CONTROL,
			strerror(err), err == ENOENT ?
			" (is CONFIG_KTAP enabled and tracefs mounted?)" :
			err == EBUSY ?
			" (the kernel's session limit is reached: see /sys/module/ktapvm/parameters/max_sessions)" :
			(err == EACCES || err == EPERM) && geteuid() ?
			" (ktap needs root: run it as root, or with CAP_SYS_ADMIN)" :
			err == EPERM ?
			" (refused without CAP_SYS_ADMIN, or by kernel lockdown: see /sys/kernel/security/lockdown)" :
			"");
		return 1;
	}
	if (o->out) {
		out = fopen(o->out, "w");
		if (!out) {
			fprintf(stderr, "ktap: cannot write %s: %s\n", o->out,
				strerror(errno));
			close(fd);
			return 1;
		}
	}
	ko.f = out;
	if (o->cmd) {
		child = spawn(o->cmd, &release, &exec_status);
		if (child < 0) {
			rc = 1;
			goto out;
		}
	}

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.flags = (o->dry ? KTAP_LOAD_F_DRY_RUN : 0) |
		     (o->json ? KTAP_LOAD_F_JSON : 0) |
		     (o->verbose ? KTAP_LOAD_F_VERBOSE : 0) |
		     (o->nofollow ? KTAP_LOAD_F_NO_FOLLOW : 0);
	attr.image = (uintptr_t)img;
	attr.image_len = len;
	attr.log_size = sizeof(log);
	attr.log_buf = (uintptr_t)log;
	attr.pid = o->pid >= 0 ? o->pid : child > 0 ? child : -1;
	attr.insn_budget = o->budget;
	attr.mem_limit_kb = o->mem_kb;
	attr.buffer_kb = o->buffer_kb;
	attr.instance = (uintptr_t)o->instance;
	attr.cpu = o->cpu;
	log[0] = '\0';
	if (ioctl(fd, KTAP_IOC_LOAD, &attr)) {
		log[sizeof(log) - 1] = '\0';
		while (log[0] && log[strlen(log) - 1] == '\n')
			log[strlen(log) - 1] = '\0';
		if (log[0])
			fprintf(stderr, "ktap: kernel rejected bytecode: %s\n",
				log);
		else if (o->instance && (errno == EEXIST || errno == EINVAL ||
					 errno == ENAMETOOLONG))
			fprintf(stderr, "ktap: cannot use tracing instance '%s': %s%s\n",
				o->instance, strerror(errno),
				errno == EEXIST ?
				" (another ktap session writes into it, or a reader of an\n"
				"  ended session still holds it open)" :
				" (use up to 63 letters, digits, '-', '_', '.')");
		else if (errno == ESRCH && o->pid >= 0)
			fprintf(stderr, "ktap: no process with pid %d\n",
				o->pid);
		else
			fprintf(stderr, "ktap: KTAP_IOC_LOAD: %s\n",
				strerror(errno));
		rc = 1;
		goto out;
	}
	if (ioctl(fd, KTAP_IOC_START)) {
		int err = errno;

		/* a kprobe target the kernel did not know: say where */
		if ((err != ENOENT && err != EINVAL) || !kp_check_kfuncs(S))
			start_err = err;
		rc = 1;
		/* the session output says why; drain it after STOP */
	}
	if (release >= 0) {
		if (write(release, "g", 1) != 1)
			perror("ktap: releasing the command");
		close(release);
		release = -1;
	}
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	if (!ioctl(fd, KTAP_IOC_STATS, &st)) {
		st.instance[sizeof(st.instance) - 1] = '\0';
		if (o->verbose)
			fprintf(stderr, "ktap: %u of %u probes attached\n",
				st.nr_attached, nprobes);
		if (st.nr_skipped && !o->quiet)
			fprintf(stderr,
				"ktap: %u events matched by wildcards could not be attached%s\n",
				st.nr_skipped,
				o->verbose ? "" : " (-v names them)");
		if (o->verbose || o->noread)
			fprintf(stderr, "ktap: output in tracing/instances/%s\n",
				st.instance);
	}
	if (!nprobes) {
		ioctl(fd, KTAP_IOC_STOP);
		stopped = 1;
	} else if (!o->quiet && !rc) {
		fputs("Tracing... Hit Ctrl-C to end.\n", stderr);
	}
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (got_child && child > 0 &&
		    waitpid(child, NULL, WNOHANG) == child) {
			child = -1;
			got_stop = 1;
		}
		got_child = 0;
		if (got_stop && !stopped) {
			ioctl(fd, KTAP_IOC_STOP);
			stopped = 1;
		}
		if (o->noread) {
			struct pollfd pri = { .fd = fd, .events = POLLPRI };

			/* POLLPRI: the session ended (exit(), error, STOP) */
			if (poll(&pri, 1, 200) > 0 && (pri.revents & POLLPRI)) {
				if (stopped)
					break;
				ioctl(fd, KTAP_IOC_STOP);
				stopped = 1;
			} else if (pri.revents & (POLLERR | POLLNVAL)) {
				break;
			}
			continue;
		}
		n = read(fd, buf, sizeof(buf));
		if (n > 0) {
			ko.nread += (size_t)n;
			emit(&ko, buf, (size_t)n);
			continue;
		}
		if (n == 0) {
			if (stopped)
				break;
			/* exit() or an error: stop, then drain */
			ioctl(fd, KTAP_IOC_STOP);
			stopped = 1;
			continue;
		}
		if (errno != EAGAIN && errno != EINTR) {
			fprintf(stderr, "ktap: read: %s\n", strerror(errno));
			rc = 1;
			break;
		}
		emit_flush(&ko);
		fflush(out);
		if (poll(&pfd, 1, 200) < 0 && errno != EINTR)
			break;
	}
	emit_flush(&ko);
	fflush(out);
	/* the kernel explains a failed START in the output; else say it */
	if (start_err && !ko.nread)
		fprintf(stderr, "ktap: KTAP_IOC_START: %s\n", strerror(start_err));
	if (exec_status >= 0) {
		int err;

		/* the command could not be executed after all: like a shell */
		if (read(exec_status, &err, sizeof(err)) == sizeof(err))
			rc = 127;
	}
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	if (!ioctl(fd, KTAP_IOC_STATS, &st)) {
		if (st.drops)
			fprintf(stderr, "ktap: %llu events dropped\n",
				(unsigned long long)st.drops);
		if (st.keys_dropped)
			fprintf(stderr, "ktap: %llu new table keys dropped: the session's memory (%llu KB) was full; -M KB gives it more\n",
				(unsigned long long)st.keys_dropped,
				(unsigned long long)st.mem_limit >> 10);
		if (o->verbose)
			fprintf(stderr, "ktap: %llu hits, "
				"%llu drops, %llu skipped (recursion), "
				"%llu errors, memory %llu of %llu bytes\n",
				(unsigned long long)st.hits,
				(unsigned long long)st.drops,
				(unsigned long long)st.recursion,
				(unsigned long long)st.errors,
				(unsigned long long)st.mem_used,
				(unsigned long long)st.mem_limit);
		if (st.errors)
			rc = 1;
	}
out:
	if (release >= 0)
		close(release);
	if (exec_status >= 0)
		close(exec_status);
	if (out != stdout)
		fclose(out);
	close(fd);
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o = { .pid = -1, .cpu = -1 };
	struct kp_state S;
	char *src = NULL;
	uint32_t len = 0, imglen;
	void *img;
	int i, rc;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (a[0] != '-' || !strcmp(a, "-"))
			break;
		if (!strcmp(a, "--")) {
			break;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			return print_version();
		} else if (!strcmp(a, "-le")) {
			const char *glob = i + 1 < argc && argv[i + 1][0] != '-' ?
					   argv[i + 1] : NULL;

			return kp_events_list(glob);
		} else if (!strcmp(a, "-lp")) {
			return kp_perf_list();
		} else if (!strcmp(a, "-lk")) {
			const char *glob = i + 1 < argc && argv[i + 1][0] != '-' ?
					   argv[i + 1] : "*";

			return kp_kfunc_list(glob);
		} else if (!strcmp(a, "-lf") || !strcmp(a, "-lm")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "ktap: %s needs a binary\n", a);
				return 1;
			}
			if (!strcmp(a, "-lm"))
				return kp_sdt_list(argv[i + 1]);
			return kp_elf_list(argv[i + 1]);
		} else if (!strcmp(a, "-T")) {
			o.timestamps = 1;
		} else if (!strcmp(a, "-v")) {
			o.verbose = 1;
		} else if (!strcmp(a, "-q")) {
			o.quiet = 1;
		} else if (!strcmp(a, "-N")) {
			o.noread = 1;
		} else if (!strcmp(a, "-P")) {
			o.nofollow = 1;
		} else if (!strcmp(a, "-d")) {
			o.dry = 1;
		} else if (!strcmp(a, "-b")) {
			o.bytecode = 1;
		} else if (!strcmp(a, "-A")) {
			o.bytecode = 1;
			o.tree = 1;
		} else if (!strcmp(a, "-1") || !strcmp(a, "--args-from-1")) {
			o.argbase = 1;
		} else if (!strcmp(a, "-e") || !strcmp(a, "-o") ||
			   !strcmp(a, "-p") || !strcmp(a, "-C") ||
			   !strcmp(a, "-s") || !strcmp(a, "-B") ||
			   !strcmp(a, "-M") || !strcmp(a, "-R") ||
			   !strcmp(a, "-I") || !strcmp(a, "-f")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "ktap: %s needs an argument\n", a);
				usage(stderr);
				return 1;
			}
			i++;
			if (a[1] == 'e') {
				o.src = argv[i];
			} else if (a[1] == 'o') {
				o.out = argv[i];
			} else if (a[1] == 'p') {
				o.pid = (int)parse_int(argv[i], a);
			} else if (a[1] == 'C') {
				o.cpu = (int)parse_int(argv[i], a);
			} else if (a[1] == 'B') {
				o.budget = (unsigned int)parse_int(argv[i], a);
			} else if (a[1] == 'M') {
				o.mem_kb = (unsigned int)parse_int(argv[i], a);
			} else if (a[1] == 'R') {
				o.buffer_kb = (unsigned int)parse_int(argv[i], a);
			} else if (a[1] == 'I') {
				o.instance = argv[i];
			} else if (a[1] == 'f') {
				if (strcmp(argv[i], "json") && strcmp(argv[i], "text")) {
					fprintf(stderr, "ktap: -f takes text or json, not '%s'\n",
						argv[i]);
					return 1;
				}
				o.json = !strcmp(argv[i], "json");
			} else {
				size_t n = strlen(argv[i]) + 64;
				char *s = malloc(n);

				if (!s)
					return 2;
				snprintf(s, n, "trace %s { print(cpu, tid, execname, argstr) }",
					 argv[i]);
				o.src = s;	/* freed at exit */
			}
		} else {
			fprintf(stderr, "ktap: unknown option %s\n", a);
			usage(stderr);
			return 1;
		}
	}
	if (!o.src) {
		if (i >= argc || !strcmp(argv[i], "--")) {
			usage(stderr);
			return 1;
		}
		o.file = argv[i++];
	}
	o.args = argv + i;
	for (; i < argc && strcmp(argv[i], "--"); i++)
		o.nargs++;
	if (i < argc) {
		if (i + 1 >= argc) {
			fprintf(stderr, "ktap: -- needs a command\n");
			return 1;
		}
		o.cmd = argv + i + 1;
	}
	if (o.file) {
		src = read_script(o.file, &len);
		if (!src)
			return 1;
	} else {
		len = (uint32_t)strlen(o.src);
	}
	if (!o.bytecode) {
		struct sigaction sa;

		/*
		 * From here on Ctrl-C ends the session cleanly, end handlers
		 * included, even when it arrives while the script compiles.
		 */
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGCHLD, &sa, NULL);
	}
	kp_state_init(&S, o.file ? o.file : "<command line>",
		      o.file ? src : o.src, len, stderr);
	/* the kernel checks kprobe targets; reading its lists costs ms */
	S.kfunc_defer = !o.bytecode;
	S.argbase = o.argbase;
	S.args = o.args;
	S.nargs = o.nargs > KP_MAX_ARGS ? KP_MAX_ARGS : o.nargs;
	if (o.tree) {
		struct kp_ast ast;

		rc = kp_compile_ast(&S, &ast, 0) ? 1 : 0;
		if (!rc)
			kp_ast_dump(stdout, &ast);
		kp_state_free(&S);
		free(src);
		return rc;
	}
	rc = kp_compile(&S) ? 1 : 0;
	if (rc && looks_like_bpftrace(o.file ? src : o.src, len))
		fputs("ktap: hint: this looks like bpftrace; ktap writes `trace syscalls:sys_enter_openat { t[execname] += 1 }` (see \"Coming from bpftrace\" in Documentation/trace/ktap.rst)\n",
		      stderr);
	img = rc ? NULL : kp_image_write(&S, &imglen);
	if (img) {
		char why[128];

		if (kp_verify(img, imglen, why, sizeof(why))) {
			fprintf(stderr, "ktap: internal error: generated bytecode fails its check: %s\n",
				why);
			free(img);
			kp_state_free(&S);
			free(src);
			return 2;
		}
	}
	if (!img) {
		rc = 1;
	} else if (o.bytecode) {
		FILE *out = o.out ? fopen(o.out, "w") : stdout;

		if (!out) {
			fprintf(stderr, "ktap: cannot write %s: %s\n", o.out,
				strerror(errno));
			rc = 1;
		} else {
			rc = kp_disasm(out, img, imglen,
				       (const char *const *)S.img->globals,
				       S.img->nglobals);
			if (out != stdout)
				fclose(out);
		}
	} else {
		rc = run(&o, &S, img, imglen);
	}
	free(img);
	kp_state_free(&S);
	free(src);
	return rc;
}
