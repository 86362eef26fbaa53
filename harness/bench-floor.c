// SPDX-License-Identifier: GPL-2.0
/*
 * bench-floor: the floor rows of `make bench`. Not part of the series:
 * harness/bench builds it against the bench kernel as an out-of-tree
 * module and loads it in the guest.
 *
 * It attaches handlers that do nothing to the events the bench traces,
 * so that the cost of an event with ktap, bpftrace or hist can be split
 * into what the kernel's probe mechanism costs anyway (this module) and
 * what the tracer adds on top:
 *
 *   insmod bench-floor.ko kprobe=SYMBOL    an empty kprobe pre-handler
 *   insmod bench-floor.ko tp=sys_enter     an empty probe on the sys_enter
 *                                          tracepoint (raw_syscalls and
 *                                          syscalls:sys_enter_* events)
 *   insmod bench-floor.ko tp=sys_enter nr=N  the same, returning after a
 *                                          test of the syscall number
 *
 * The hits are counted in a per-CPU counter (one increment: what any
 * real handler needs at least) and printed at rmmod.
 */
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/ptrace.h>
#include <linux/string.h>
#include <linux/tracepoint.h>

static char *kprobe;
module_param(kprobe, charp, 0444);
MODULE_PARM_DESC(kprobe, "function to put an empty kprobe on");

static char *tp;
module_param(tp, charp, 0444);
MODULE_PARM_DESC(tp, "tracepoint to attach an empty probe to (sys_enter)");

static long nr = -1;
module_param(nr, long, 0444);
MODULE_PARM_DESC(nr, "count only this syscall number (tp=sys_enter)");

static DEFINE_PER_CPU(unsigned long, floor_hits);
static struct kprobe floor_kp;
static struct tracepoint *floor_tp;

static int floor_kprobe_pre(struct kprobe *p, struct pt_regs *regs)
{
	this_cpu_inc(floor_hits);
	return 0;
}

NOKPROBE_SYMBOL(floor_kprobe_pre);

static void floor_sys_enter(void *data, struct pt_regs *regs, long id)
{
	if (nr >= 0 && id != nr)
		return;
	this_cpu_inc(floor_hits);
}

static void floor_find_tp(struct tracepoint *t, void *priv)
{
	if (!strcmp(t->name, tp))
		floor_tp = t;
}

static int __init floor_init(void)
{
	int ret;

	if (!!kprobe == !!tp) {
		pr_err("bench-floor: give kprobe=SYMBOL or tp=sys_enter\n");
		return -EINVAL;
	}
	if (kprobe) {
		floor_kp.symbol_name = kprobe;
		floor_kp.pre_handler = floor_kprobe_pre;
		ret = register_kprobe(&floor_kp);
		if (ret)
			pr_err("bench-floor: kprobe %s: %d\n", kprobe, ret);
		return ret;
	}
	if (strcmp(tp, "sys_enter")) {
		pr_err("bench-floor: only tp=sys_enter is known\n");
		return -EINVAL;
	}
	for_each_kernel_tracepoint(floor_find_tp, NULL);
	if (!floor_tp)
		return -ENOENT;
	ret = tracepoint_probe_register(floor_tp, floor_sys_enter, NULL);
	if (ret)
		pr_err("bench-floor: tracepoint %s: %d\n", tp, ret);
	return ret;
}

static void __exit floor_exit(void)
{
	unsigned long hits = 0;
	int cpu;

	if (kprobe)
		unregister_kprobe(&floor_kp);
	else
		tracepoint_probe_unregister(floor_tp, floor_sys_enter, NULL);
	tracepoint_synchronize_unregister();
	for_each_possible_cpu(cpu)
		hits += per_cpu(floor_hits, cpu);
	pr_info("bench-floor: %lu hits\n", hits);
}

module_init(floor_init);
module_exit(floor_exit);
MODULE_DESCRIPTION("ktap bench: empty probes, the floor of per-event cost");
MODULE_LICENSE("GPL");
