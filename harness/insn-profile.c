// SPDX-License-Identifier: GPL-2.0
/*
 * insn-profile: a QEMU TCG plugin for harness/profile. Counts the guest
 * instructions executed in kernel text, per translation block, and at
 * exit writes one line per block: "ADDRESS INSNS EXECUTED", where
 * EXECUTED is the block's instructions times its executions.
 *
 *   qemu-system-x86_64 ... -plugin insn-profile.so,arg=out=FILE
 *
 * Debian ships no qemu-plugin.h: the few entry points used here are
 * declared below, as QEMU 7.2 defines them (plugin API version 1).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_info_t;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*udata_cb_t)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
					   tb_trans_cb_t cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb,
					      enum qemu_plugin_op op,
					      void *ptr, uint64_t imm);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, udata_cb_t cb,
				    void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

#define KERNEL_TEXT	0xffffffff80000000ull
#define NBLOCKS		(1u << 21)

/* A block is its start address and length: a retranslation reuses it. */
struct block {
	uint64_t	vaddr;
	uint64_t	insns;
	uint64_t	executed;	/* added to by the translated code */
};

static struct block *blocks;
static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *out_path = "insn-profile.txt";

static struct block *block_get(uint64_t vaddr, uint64_t insns)
{
	uint64_t h = (vaddr * 0x9e3779b97f4a7c15ull) >> 40;
	struct block *b;

	for (;; h++) {
		b = &blocks[h & (NBLOCKS - 1)];
		if (!b->vaddr) {
			b->vaddr = vaddr;
			b->insns = insns;
			return b;
		}
		if (b->vaddr == vaddr && b->insns == insns)
			return b;
	}
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t vaddr = qemu_plugin_tb_vaddr(tb);
	uint64_t insns = qemu_plugin_tb_n_insns(tb);
	struct block *b;

	(void)id;
	if (vaddr < KERNEL_TEXT)
		return;
	pthread_mutex_lock(&blocks_lock);
	b = block_get(vaddr, insns);
	pthread_mutex_unlock(&blocks_lock);
	/* not atomic: with several vCPUs a few counts may be lost */
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
						 &b->executed, insns);
}

static void on_qemu_exit(qemu_plugin_id_t id, void *userdata)
{
	FILE *f = fopen(out_path, "w");
	uint32_t i;

	(void)id;
	(void)userdata;
	if (!f) {
		perror(out_path);
		return;
	}
	for (i = 0; i < NBLOCKS; i++)
		if (blocks[i].executed)
			fprintf(f, "%" PRIx64 " %" PRIu64 " %" PRIu64 "\n",
				blocks[i].vaddr, blocks[i].insns,
				blocks[i].executed);
	fclose(f);
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info_t *info,
			int argc, char **argv)
{
	int i;

	(void)info;
	for (i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4))
			out_path = strdup(argv[i] + 4);
	blocks = calloc(NBLOCKS, sizeof(*blocks));
	if (!blocks)
		return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, on_qemu_exit, NULL);
	return 0;
}
