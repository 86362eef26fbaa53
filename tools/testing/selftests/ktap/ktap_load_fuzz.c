// SPDX-License-Identifier: GPL-2.0
/*
 * Feed the ktap tracer 10,000 hostile bytecode images through the real
 * LOAD ioctl: random bytes, and bit-flipped, truncated and spliced valid
 * images. Each must be rejected (EINVAL/E2BIG at LOAD, or an attach
 * error at START) or run to a clean stop: START, a little workload,
 * STOP, output drained to end of file. Run on the debug kernel, any
 * KASAN/lockdep/kmemleak report fails the run (the VM runner watches
 * the console). Usage: ktap_load_fuzz [count [seed]]; without a count,
 * KTAP_LOAD_FUZZ_COUNT or 10,000 (harness/check gives the debug kernel
 * fewer: its images cost about 35 times as much).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/syscall.h>
#include <sys/time.h>

#include "../kselftest.h"
#include "ktap_image.h"

struct seed {
	void *img;
	size_t len;
};

static struct seed seeds[8];
static int nseeds;
static uint64_t rng;

static uint32_t rnd(void)
{
	/* xorshift64* */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (rng * 0x2545f4914f6cdd1dULL) >> 32;
}

static void add_seed(void *img, size_t len)
{
	seeds[nseeds].img = img;
	seeds[nseeds].len = len;
	nseeds++;
}

static void make_seeds(void)
{
	size_t len;
	void *img;

	img = ki_hello("fuzz", &len);
	add_seed(img, len);
	/* a pattern the kernel resolves at attach: valid on any kernel */
	img = ki_probe_prog(KTAP_PROBE_TRACEPOINT, 0, "syscalls:getppid",
			    "syscalls:sys_*_getppid", 0, "end", &len);
	add_seed(img, len);
	img = ki_field_prog("raw_syscalls:sys_enter", "id", 1, &len);
	add_seed(img, len);
	img = ki_probe_prog(KTAP_PROBE_TIMER, 0, "tick-1ms", NULL, 1000000,
			    "end", &len);
	add_seed(img, len);
	img = ki_probe_prog(KTAP_PROBE_KPROBE, 0, "kprobe:__x64_sys_getppid",
			    "__x64_sys_getppid", 0, "end", &len);
	add_seed(img, len);
}

/* Keep the header's total_size in step with the buffer, usually. */
static void fix_total(char *buf, size_t len)
{
	struct ktap_bc_header *h = (void *)buf;

	if (len >= sizeof(*h) && rnd() % 4)
		h->total_size = len;
}

static char *mutate(size_t *lenp)
{
	const struct seed *s = &seeds[rnd() % nseeds];
	const struct seed *t = &seeds[rnd() % nseeds];
	size_t len, cut, i, n;
	char *buf;

	switch (rnd() % 5) {
	case 0:	/* random bytes, sometimes behind a valid magic */
		len = rnd() % 2048;
		buf = malloc(len + sizeof(struct ktap_bc_header));
		for (i = 0; i < len; i++)
			buf[i] = rnd();
		if (len >= sizeof(struct ktap_bc_header) && rnd() % 2) {
			memcpy(buf, s->img, 8);
			fix_total(buf, len);
		}
		break;
	case 1:	/* bit flips */
	case 2:
		len = s->len;
		buf = malloc(len);
		memcpy(buf, s->img, len);
		n = 1 + rnd() % 8;
		for (i = 0; i < n; i++) {
			size_t at = rnd() % len;

			buf[at] ^= 1 << (rnd() % 8);
		}
		break;
	case 3:	/* truncated */
		len = rnd() % s->len;
		buf = malloc(len + 1);
		memcpy(buf, s->img, len);
		fix_total(buf, len);
		break;
	default: /* spliced: the head of one, the tail of another */
		cut = rnd() % s->len;
		n = rnd() % t->len;
		len = cut + (t->len - n);
		buf = malloc(len + 1);
		memcpy(buf, s->img, cut);
		memcpy(buf + cut, (char *)t->img + n, t->len - n);
		fix_total(buf, len);
		break;
	}
	*lenp = len;
	return buf;
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* Stop a runaway main chunk: a pending signal interrupts it. */
static void arm_alarm(void)
{
	struct itimerval it = { .it_value = { .tv_usec = 200000 } };

	setitimer(ITIMER_REAL, &it, NULL);
}

static void disarm_alarm(void)
{
	struct itimerval it = { 0 };

	setitimer(ITIMER_REAL, &it, NULL);
}

int main(int argc, char **argv)
{
	const char *env = getenv("KTAP_LOAD_FUZZ_COUNT");
	unsigned long count = argc > 1 ? strtoul(argv[1], NULL, 0) :
			      env && *env ? strtoul(env, NULL, 0) : 10000;
	unsigned long i, rejected = 0, ran = 0, start_err = 0, bad = 0;
	struct sigaction sa = { .sa_handler = on_alarm };
	char log[256];

	rng = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x6b746170;
	ksft_print_header();
	if (access(KTAP_CONTROL, F_OK))
		ksft_exit_skip("%s missing (CONFIG_KTAP?)\n", KTAP_CONTROL);
	ksft_set_plan(2);
	sigaction(SIGALRM, &sa, NULL);	/* no SA_RESTART */
	make_seeds();

	for (i = 0; i < count; i++) {
		size_t len;
		char *img = mutate(&len);
		int fd = open(KTAP_CONTROL, O_RDWR | O_CLOEXEC);
		char *out;

		if (fd < 0)
			ksft_exit_fail_msg("open control: %s\n", strerror(errno));
		if (ki_load(fd, img, len, log, sizeof(log))) {
			if (errno == EINVAL || errno == E2BIG) {
				rejected++;
			} else {
				ksft_print_msg("image %lu: LOAD: %s\n", i,
					       strerror(errno));
				bad++;
			}
			goto next;
		}
		arm_alarm();
		if (ioctl(fd, KTAP_IOC_START)) {
			disarm_alarm();
			/* attach refused: pattern, field, symbol, offset */
			if (errno == EINVAL || errno == ENOENT ||
			    errno == E2BIG || errno == EPERM ||
			    errno == EILSEQ || errno == EOPNOTSUPP) {
				start_err++;
			} else {
				ksft_print_msg("image %lu: START: %s\n", i,
					       strerror(errno));
				bad++;
			}
			ioctl(fd, KTAP_IOC_STOP);
			goto next;
		}
		disarm_alarm();
		for (int j = 0; j < 5; j++)
			syscall(SYS_getppid);
		if (ioctl(fd, KTAP_IOC_STOP)) {
			ksft_print_msg("image %lu: STOP: %s\n", i, strerror(errno));
			bad++;
			goto next;
		}
		out = ki_read_all(fd, 1 << 20);	/* must reach EOF */
		free(out);
		ran++;
next:
		close(fd);
		free(img);
	}
	ksft_print_msg("%lu images: %lu rejected at LOAD, %lu refused at START, %lu ran to a stop\n",
		       count, rejected, start_err, ran);
	ksft_test_result(bad == 0, "every hostile image rejected or stopped cleanly (%lu bad)\n",
			 bad);
	ksft_test_result(rejected > count / 2 && ran > 0,
			 "the mix exercised both rejection and execution\n");
	ksft_finished();
}
