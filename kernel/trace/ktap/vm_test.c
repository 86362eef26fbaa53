// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the ktap VM core (not the KTAP test output format,
 * although KUnit reports in it).
 *
 * Images are built in C with a tiny assembler (struct tb); a fake
 * host captures output. Suites: verifier rejections (one row per
 * rejection path), opcode semantics (programs and their exact output),
 * runtime errors, events and probes, builtins (printf, histogram),
 * tables and strings through the object API.
 */
#include <kunit/resource.h>
#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/irq_work.h>
#include <linux/kthread.h>
#include <linux/seq_buf.h>
#include <linux/string.h>
#include <net/sock.h>
#include "vm.h"

#define TB_CODE		512
#define TB_OUT		16384
#define R_TMP		14	/* scratch registers of the main chunk */
#define NREGS		16

#define I(op, a, b, c)	KTAP_INSN(KTAP_OP_##op, a, b, c)
#define IBX(op, a, bx)	KTAP_INSN_BX(KTAP_OP_##op, a, bx)

/* The assembler: sections are filled in and laid out by tb_build(). */
struct tb {
	struct ktap_bc_header	hdr;
	struct ktap_bc_proto	protos[8];
	struct ktap_bc_const	consts[64];
	struct ktap_bc_upval	upvals[16];
	struct ktap_bc_probe	probes[4];
	u32			builtins[16];
	struct ktap_bc_field	fields[16];
	struct ktap_bc_fetch	fetch[KTAP_MAX_FETCH_ARGS + 2];
	u32			code[TB_CODE];
	u32			lines[TB_CODE];
	char			strtab[1024];
	u32			nprotos, nconsts, nupvals, nprobes;
	u32			nbuiltins, nfields, nfetch;
	u32			ncode, strtab_len, cur, line;
	bool			no_lines;
	void			*img;
	size_t			len;
};

static u32 tb_name(struct tb *tb, const char *s)
{
	u32 off = tb->strtab_len;

	strscpy(tb->strtab + off, s, sizeof(tb->strtab) - off);
	tb->strtab_len += strlen(s) + 1;
	return off;
}

static u32 tb_kint(struct tb *tb, s64 v)
{
	tb->consts[tb->nconsts] = (struct ktap_bc_const){ .type = KTAP_BC_CONST_INT,
							  .val = v };
	return tb->nconsts++;
}

static u32 tb_kstr(struct tb *tb, const char *s)
{
	u32 off = tb_name(tb, s);

	tb->consts[tb->nconsts] = (struct ktap_bc_const){ .type = KTAP_BC_CONST_STR,
							  .len = strlen(s),
							  .val = off };
	return tb->nconsts++;
}

static void tb_emit(struct tb *tb, u32 insn)
{
	tb->lines[tb->ncode] = tb->line;
	tb->code[tb->ncode++] = insn;
	tb->protos[tb->cur].ncode++;
}

/* Start function @idx (in order) nested in @parent. */
static u32 tb_func(struct tb *tb, u32 parent, u8 nparams, u8 nregs)
{
	u32 idx = tb->nprotos++;

	tb->protos[idx] = (struct ktap_bc_proto){
		.code_start = tb->ncode, .nparams = nparams, .nregs = nregs,
		.parent = parent, .name = KTAP_BC_NO_STR,
		.upval_start = tb->nupvals,
	};
	tb->cur = idx;
	return idx;
}

static void tb_upval(struct tb *tb, u8 in_stack, u8 index)
{
	tb->upvals[tb->nupvals++] = (struct ktap_bc_upval){ in_stack, index };
	tb->protos[tb->cur].nupvals++;
}

static u32 tb_probe(struct tb *tb, u32 type)
{
	tb->probes[tb->nprobes] = (struct ktap_bc_probe){
		.type = type, .spec = tb_name(tb, "tp:test"),
		.target = tb_name(tb, "test:test"),
	};
	return tb->nprobes++;
}

/* The builtins section index of builtin @name, added on first use. */
static u32 tb_builtin(struct tb *tb, const char *name)
{
	u32 i;

	for (i = 0; i < tb->nbuiltins; i++)
		if (!strcmp(tb->strtab + tb->builtins[i], name))
			return i;
	tb->builtins[tb->nbuiltins] = tb_name(tb, name);
	return tb->nbuiltins++;
}

/* The fields section index of a field of probe @probe. */
static u32 tb_field(struct tb *tb, u32 probe, const char *name)
{
	tb->fields[tb->nfields] = (struct ktap_bc_field){
		.probe = probe, .name = tb_name(tb, name),
	};
	return tb->nfields++;
}

/* A fetch argument of probe @probe: register "di" read as @type. */
static struct ktap_bc_fetch *tb_fetch(struct tb *tb, u32 probe, u8 type)
{
	struct ktap_bc_fetch *f = &tb->fetch[tb->nfetch++];

	*f = (struct ktap_bc_fetch){
		.probe = probe, .name = tb_name(tb, "x"),
		.base = KTAP_FETCH_REG, .type = type, .reg = tb_name(tb, "di"),
	};
	return f;
}

static struct tb *tb_new(struct kunit *test)
{
	struct tb *tb = kunit_kzalloc(test, sizeof(*tb), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, tb);
	tb->hdr.chunkname = tb_name(tb, "test.kp");
	tb->line = 1;
	tb_func(tb, KTAP_BC_NO_STR, 0, NREGS);
	return tb;
}

/* print(R(reg)) from the main chunk. */
static void tb_print(struct tb *tb, u8 reg)
{
	tb_emit(tb, I(MOVE, R_TMP + 1, reg, 0));
	tb_emit(tb, I(CALLB, R_TMP, 1, tb_builtin(tb, "print")));
}

static size_t tb_place(size_t *off, size_t align, size_t bytes)
{
	size_t at = ALIGN(*off, align);

	*off = at + bytes;
	return at;
}

static void tb_sect(struct ktap_bc_section *s, size_t *off, size_t align,
		    size_t elem, u32 count)
{
	s->count = count;
	s->off = count ? tb_place(off, align, elem * count) : 0;
}

static void tb_build(struct kunit *test, struct tb *tb)
{
	struct ktap_bc_header *h = &tb->hdr;
	size_t off = sizeof(*h);
	char *img;

	h->magic = KTAP_BC_MAGIC;
	h->abi_version = KTAP_ABI_VERSION;
	h->hdr_size = sizeof(*h);
	tb_sect(&h->protos, &off, 8, sizeof(tb->protos[0]), tb->nprotos);
	tb_sect(&h->consts, &off, 8, sizeof(tb->consts[0]), tb->nconsts);
	tb_sect(&h->strtab, &off, 1, 1, tb->strtab_len);
	tb_sect(&h->code, &off, 4, 4, tb->ncode);
	tb_sect(&h->lines, &off, 4, 4, tb->no_lines ? 0 : tb->ncode);
	tb_sect(&h->upvals, &off, 2, sizeof(tb->upvals[0]), tb->nupvals);
	tb_sect(&h->probes, &off, 8, sizeof(tb->probes[0]), tb->nprobes);
	tb_sect(&h->builtins, &off, 4, 4, tb->nbuiltins);
	tb_sect(&h->fields, &off, 4, sizeof(tb->fields[0]), tb->nfields);
	tb_sect(&h->fetch, &off, 8, sizeof(tb->fetch[0]), tb->nfetch);
	tb->len = ALIGN(off, 8);
	h->total_size = tb->len;
	img = kunit_kzalloc(test, tb->len, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, img);
	memcpy(img + h->protos.off, tb->protos, h->protos.count * sizeof(tb->protos[0]));
	memcpy(img + h->consts.off, tb->consts, h->consts.count * sizeof(tb->consts[0]));
	memcpy(img + h->strtab.off, tb->strtab, h->strtab.count);
	memcpy(img + h->code.off, tb->code, h->code.count * 4);
	memcpy(img + h->lines.off, tb->lines, h->lines.count * 4);
	memcpy(img + h->upvals.off, tb->upvals, h->upvals.count * sizeof(tb->upvals[0]));
	memcpy(img + h->probes.off, tb->probes, h->probes.count * sizeof(tb->probes[0]));
	memcpy(img + h->builtins.off, tb->builtins, h->builtins.count * 4);
	memcpy(img + h->fields.off, tb->fields, h->fields.count * sizeof(tb->fields[0]));
	memcpy(img + h->fetch.off, tb->fetch, h->fetch.count * sizeof(tb->fetch[0]));
	memcpy(img, h, sizeof(*h));
	tb->img = img;
}

/* The fake session. */
struct fake_host {
	struct seq_buf		out;
	char			buf[TB_OUT];
	int			exits;
	int			attached;
	u32			probe;
	struct ktap_closure	*fn;
	struct ktap_vm		*vm;
	bool			recurse;
	int			recurse_ret;
	u32			slept_ms;
	int			sleeps;
	int			sleep_fire_ret;
	int			sleep_ret;
};

static void fake_write(void *host, const char *buf, size_t len)
{
	struct fake_host *h = host;

	seq_buf_printf(&h->out, "%.*s", (int)len, buf);
	if (h->recurse) {
		h->recurse = false;
		h->recurse_ret = ktap_vm_fire(h->vm, h->fn, NULL);
	}
}

static int fake_attach(void *host, u32 probe, struct ktap_closure *fn)
{
	struct fake_host *h = host;

	h->attached++;
	h->probe = probe;
	h->fn = fn;
	return 0;
}

static void fake_exit(void *host)
{
	struct fake_host *h = host;

	h->exits++;
}

/* A handler attached before sleep() fires while the main chunk waits. */
static int fake_sleep(void *host, u32 ms)
{
	struct fake_host *h = host;

	h->sleeps++;
	h->slept_ms = ms;
	if (h->fn)
		h->sleep_fire_ret = ktap_vm_fire(h->vm, h->fn, NULL);
	return h->sleep_ret;
}

/* A printed event that the host stores is shown as [name]. */
static void fake_write_event(void *host, struct ktap_event *ev,
			     const char *pre, size_t plen,
			     const char *post, size_t qlen)
{
	struct fake_host *h = host;

	seq_buf_printf(&h->out, "%.*s[%s]%.*s", (int)plen, pre, ev->name,
		       (int)qlen, post);
}

static const struct ktap_host_ops fake_ops = {
	.attach	= fake_attach,
	.write	= fake_write,
	.write_event = fake_write_event,
	.exit	= fake_exit,
	.sleep	= fake_sleep,
};

KUNIT_DEFINE_ACTION_WRAPPER(ktap_vm_free_action, ktap_vm_free, struct ktap_vm *);

static struct fake_host *fake_new(struct kunit *test)
{
	struct fake_host *h = kunit_kzalloc(test, sizeof(*h), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, h);
	seq_buf_init(&h->out, h->buf, sizeof(h->buf) - 1);
	return h;
}

static const char *fake_text(struct fake_host *h)
{
	h->buf[seq_buf_used(&h->out)] = '\0';
	return h->buf;
}

static struct ktap_vm *t_load(struct kunit *test, struct tb *tb,
			      struct fake_host *h, u32 budget)
{
	struct ktap_vm_opts opts = { .insn_budget = budget };
	char log[256];
	struct ktap_vm *vm;

	tb_build(test, tb);
	vm = ktap_vm_load(tb->img, tb->len, &opts, &fake_ops, h, log,
			  sizeof(log));
	if (IS_ERR(vm))
		kunit_info(test, "load: %s", log);
	KUNIT_ASSERT_FALSE(test, IS_ERR(vm));
	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, ktap_vm_free_action, vm));
	h->vm = vm;
	return vm;
}

/* Load and run the main chunk; return its output. */
static const char *t_run(struct kunit *test, struct tb *tb, int *ret)
{
	struct fake_host *h = fake_new(test);
	struct ktap_vm *vm = t_load(test, tb, h, 0);
	int err = ktap_vm_run_main(vm);

	if (ret)
		*ret = err;
	else
		KUNIT_EXPECT_EQ(test, err, 0);
	return fake_text(h);
}

/*
 * Verifier: every rejection path. Each row mutates a valid image
 * (main: LOADI r0 1; RETURN r0 0) and expects -EINVAL (or the errno
 * given) with exactly this log text, or with a log containing it if
 * @sub (where the wording belongs to the name resolution, not to the
 * verifier's table).
 */
struct verr_case {
	const char	*name;
	void		(*mut)(struct tb *tb);
	void		(*post)(struct tb *tb);	/* on the built bytes */
	int		err;
	const char	*log;
	u32		insn;	/* if set: replaces the first instruction */
	bool		sub;
};

#define HDR(tb)	((struct ktap_bc_header *)(tb)->img)

static void m_magic(struct tb *tb)
{
	HDR(tb)->magic ^= 1;
}

static void m_version(struct tb *tb)
{
	HDR(tb)->abi_version = 99;
}

static void m_hdrsize(struct tb *tb)
{
	HDR(tb)->hdr_size = 8;
}

static void m_hdrbig(struct tb *tb)
{
	HDR(tb)->hdr_size = 0xfff0;
}

static void m_total(struct tb *tb)
{
	HDR(tb)->total_size += 8;
}

static void m_flags(struct tb *tb)
{
	HDR(tb)->flags = 1;
}

/* Where v0 images had two reserved words: the fetch section now. */
static void m_resv(struct tb *tb)
{
	HDR(tb)->fetch.count = 1;
}

static void m_nglob(struct tb *tb)
{
	HDR(tb)->nglobals = KTAP_MAX_GLOBALS + 1;
}

static void m_noprotos(struct tb *tb)
{
	HDR(tb)->protos.count = 0;
}

static void m_sect(struct tb *tb)
{
	HDR(tb)->code.count += 1000;
}

static void m_align(struct tb *tb)
{
	HDR(tb)->code.off += 1;
}

static void m_count(struct tb *tb)
{
	HDR(tb)->probes.count = KTAP_MAX_PROBES + 1;
}

static void m_bicount(struct tb *tb)
{
	HDR(tb)->builtins.count = KTAP_MAX_BUILTINS + 1;
}

static void m_fcount(struct tb *tb)
{
	HDR(tb)->fields.count = KTAP_MAX_FIELDS + 1;
}

static void m_chunk(struct tb *tb)
{
	HDR(tb)->chunkname = 100000;
}

static void m_lines(struct tb *tb)
{
	HDR(tb)->lines.count -= 1;
}

/* A header extension of zeros is accepted; see t_verify_hdr_ext. */
static void m_tail(struct tb *tb)
{
	struct ktap_bc_header *h = HDR(tb);

	h->hdr_size = sizeof(*h) + 8;
	((char *)h)[sizeof(*h) + 3] = 1;
}

static void m_ctype(struct tb *tb)
{
	tb->consts[tb_kint(tb, 1)].type = 7;
}

static void m_cstr(struct tb *tb)
{
	tb->consts[tb_kstr(tb, "x")].val = 5000;
}

static void m_cintlen(struct tb *tb)
{
	tb->consts[tb_kint(tb, 1)].len = 1;
}

static void m_crange(struct tb *tb)
{
	tb->protos[0].ncode = 100;
}

static void m_empty(struct tb *tb)
{
	tb_func(tb, 0, 0, 2);
}

static void m_nparams(struct tb *tb)
{
	tb->protos[0].nparams = NREGS + 1;
}

static void m_nregs(struct tb *tb)
{
	tb->protos[0].nregs = 251;
	tb->protos[0].nparams = 0;
}

static void m_p0parent(struct tb *tb)
{
	tb->protos[0].parent = 0;
}

static void m_presv(struct tb *tb)
{
	tb->protos[0].__reserved = 1;
}

static void m_pname(struct tb *tb)
{
	tb->protos[0].name = 4000;
}

static void m_order(struct tb *tb)
{
	tb_func(tb, 0, 0, 2);
	tb_emit(tb, I(RETURN, 0, 0, 0));
	tb->protos[1].code_start = 0;
	tb->protos[1].ncode = 1;
}

static void m_parent(struct tb *tb)
{
	tb_func(tb, 0, 0, 2);
	tb_emit(tb, I(RETURN, 0, 0, 0));
	tb->protos[1].parent = 1;
}

static void m_upvrange(struct tb *tb)
{
	tb_func(tb, 0, 0, 2);
	tb_emit(tb, I(RETURN, 0, 0, 0));
	tb->protos[1].nupvals = 3;
}

static void m_upvdesc(struct tb *tb)
{
	tb_func(tb, 0, 0, 2);
	tb_upval(tb, 1, NREGS);
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static void m_upvdesc2(struct tb *tb)
{
	tb_func(tb, 0, 0, 2);
	tb_upval(tb, 0, 0);	/* the main chunk has no upvalues */
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static void m_kint(struct tb *tb)
{
	tb->code[0] = I(ADDK, 0, 0, tb_kstr(tb, "s"));
}

static void m_kstr(struct tb *tb)
{
	tb->code[0] = I(GETFIELD, 0, 0, tb_kint(tb, 3));
}

static void m_last2(struct tb *tb)
{
	tb->code[1] = I(LOADI, 0, 0, 0);
}

/*
 * The last instruction is not END or GOTO: it falls off the end of the
 * function, even when its own branch target is inside.
 */
static void m_fall_end(struct tb *tb, u32 insn)
{
	tb->code[1] = insn;
}

static void m_eq_end(struct tb *tb)
{
	m_fall_end(tb, I(EQ, 0, 0, 0));
}

static void m_eqk_end(struct tb *tb)
{
	m_fall_end(tb, I(EQK, 0, 0, tb_kint(tb, 1)));
}

static void m_jmpt_end(struct tb *tb)
{
	m_fall_end(tb, IBX(JMPT, 0, -2));
}

static void m_jmpf_end(struct tb *tb)
{
	m_fall_end(tb, IBX(JMPF, 0, -2));
}

static void m_iter_end(struct tb *tb)
{
	m_fall_end(tb, IBX(ITERNEXT, 0, -2));
}

static void m_callb_end(struct tb *tb)
{
	m_fall_end(tb, I(CALLB, 0, 0, tb_builtin(tb, "print")));
}

/* Proto 1 of two (LOADI; JMPF; RETURN), mutated. */
static void m_two_funcs(struct tb *tb, u32 insn1, u32 insn2)
{
	tb_func(tb, 0, 0, 2);
	tb_emit(tb, I(LOADI, 0, 0, 0));
	tb_emit(tb, insn1);
	tb_emit(tb, insn2);
	tb_func(tb, 0, 0, 2);
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

/* A branch whose target is the first instruction of the next function. */
static void m_branch_into_next(struct tb *tb)
{
	m_two_funcs(tb, IBX(JMPF, 0, 1), I(RETURN, 0, 0, 0));
}

/* A conditional last: not taken, it falls into the next function. */
static void m_fall_into_next(struct tb *tb)
{
	m_two_funcs(tb, I(RETURN, 0, 0, 0), IBX(JMPT, 0, -3));
}

/* A word after the last function, run by nobody, checked by nobody. */
static void m_orphan_tail(struct tb *tb)
{
	tb->lines[tb->ncode] = 1;
	tb->code[tb->ncode++] = IBX(LOADI, 101, 0);
}

/* A word between two functions. */
static void m_orphan_gap(struct tb *tb)
{
	tb_func(tb, 0, 0, 2);
	tb_emit(tb, IBX(GETUPVAL, 0, 0));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	tb->protos[1].code_start++;
	tb->protos[1].ncode--;
}

/* A backward ITERNEXT whose target is in the function before. */
static void m_iter_out(struct tb *tb)
{
	tb_func(tb, 0, 0, 8);
	tb_emit(tb, IBX(ITERNEXT, 0, -2));
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static void m_override_tp(struct tb *tb)
{
	tb->probes[tb_probe(tb, KTAP_PROBE_TRACEPOINT)].flags =
		KTAP_PROBE_F_OVERRIDE;
}

static void m_wildcard_timer(struct tb *tb)
{
	tb->probes[tb_probe(tb, KTAP_PROBE_TIMER)].flags =
		KTAP_PROBE_F_WILDCARD;
}

static void m_notarget(struct tb *tb)
{
	tb->probes[tb_probe(tb, KTAP_PROBE_TRACEPOINT)].target = KTAP_BC_NO_STR;
}

static void m_attr_tp(struct tb *tb)
{
	tb->probes[tb_probe(tb, KTAP_PROBE_TRACEPOINT)].attr = KTAP_WATCH_W | 4;
}

static void m_watch_len(struct tb *tb)
{
	tb->probes[tb_probe(tb, KTAP_PROBE_WATCH)].attr = KTAP_WATCH_W | 3;
}

static void m_watch_rx(struct tb *tb)
{
	tb->probes[tb_probe(tb, KTAP_PROBE_WATCH)].attr =
		KTAP_WATCH_R | KTAP_WATCH_X | 8;
}

static void m_fetch_timer(struct tb *tb)
{
	tb_fetch(tb, tb_probe(tb, KTAP_PROBE_TIMER), KTAP_FETCH_U64);
}

static void m_fetch_order(struct tb *tb)
{
	u32 a = tb_probe(tb, KTAP_PROBE_KPROBE);
	u32 b = tb_probe(tb, KTAP_PROBE_KPROBE);

	tb_fetch(tb, b, KTAP_FETCH_U64);
	tb_fetch(tb, a, KTAP_FETCH_U64);
}

static void m_fetch_probe(struct tb *tb)
{
	tb_fetch(tb, 3, KTAP_FETCH_U64);
}

static void m_fetch_base(struct tb *tb)
{
	tb_fetch(tb, tb_probe(tb, KTAP_PROBE_KPROBE), 0)->base =
		KTAP_FETCH_BASE__COUNT;
}

static void m_fetch_type(struct tb *tb)
{
	tb_fetch(tb, tb_probe(tb, KTAP_PROBE_UPROBE), KTAP_FETCH_TYPE__COUNT);
}

/* A return probe no longer has its arguments. */
static void m_fetch_ret_arg(struct tb *tb)
{
	u32 p = tb_probe(tb, KTAP_PROBE_KPROBE);
	struct ktap_bc_fetch *f = tb_fetch(tb, p, KTAP_FETCH_U64);

	tb->probes[p].flags = KTAP_PROBE_F_RETURN;
	f->base = KTAP_FETCH_ARG;
	f->reg = 1;
}

static void m_fetch_entry_retval(struct tb *tb)
{
	struct ktap_bc_fetch *f =
		tb_fetch(tb, tb_probe(tb, KTAP_PROBE_KPROBE), KTAP_FETCH_U64);

	f->base = KTAP_FETCH_RETVAL;
	f->reg = 0;
}

static void m_fetch_arg7(struct tb *tb)
{
	struct ktap_bc_fetch *f =
		tb_fetch(tb, tb_probe(tb, KTAP_PROBE_KPROBE), KTAP_FETCH_U64);

	f->base = KTAP_FETCH_ARG;
	f->reg = 7;
}

/* An offset past ndref would be ignored: it must be 0. */
static void m_fetch_off(struct tb *tb)
{
	struct ktap_bc_fetch *f =
		tb_fetch(tb, tb_probe(tb, KTAP_PROBE_KPROBE), KTAP_FETCH_U64);

	f->ndref = 1;
	f->off[2] = 8;
}

static void m_fetch_deep(struct tb *tb)
{
	tb_fetch(tb, tb_probe(tb, KTAP_PROBE_KPROBE), KTAP_FETCH_U64)->ndref =
		KTAP_MAX_FETCH_DEREF + 1;
}

static void m_fetch_comm(struct tb *tb)
{
	struct ktap_bc_fetch *f =
		tb_fetch(tb, tb_probe(tb, KTAP_PROBE_KPROBE), KTAP_FETCH_U32);

	f->base = KTAP_FETCH_COMM;
	f->reg = 0;
}

static void m_fetch_reg(struct tb *tb)
{
	tb_fetch(tb, tb_probe(tb, KTAP_PROBE_KPROBE), KTAP_FETCH_U64)->reg =
		9999;
}

static void m_fetch_flags(struct tb *tb)
{
	tb_fetch(tb, tb_probe(tb, KTAP_PROBE_KPROBE), KTAP_FETCH_U64)->flags =
		0x80;
}

static void m_fetch_many(struct tb *tb)
{
	u32 p = tb_probe(tb, KTAP_PROBE_KPROBE), i;

	for (i = 0; i <= KTAP_MAX_FETCH_ARGS; i++)
		tb_fetch(tb, p, KTAP_FETCH_U64);
}

static void m_notarget_uprobe(struct tb *tb)
{
	tb->probes[tb_probe(tb, KTAP_PROBE_UPROBE)].target = KTAP_BC_NO_STR;
}

static void m_mainonly(struct tb *tb)
{
	tb_probe(tb, KTAP_PROBE_END);
	tb_func(tb, 0, 0, 2);
	tb_emit(tb, IBX(ATTACH, 0, 0));
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static void m_notchild(struct tb *tb)
{
	tb_func(tb, 0, 0, 2);
	tb_emit(tb, I(RETURN, 0, 0, 0));
	tb_func(tb, 1, 0, 2);
	tb_emit(tb, I(RETURN, 0, 0, 0));
	tb->code[0] = IBX(CLOSURE, 0, 2);
}

static void m_ptype(struct tb *tb)
{
	tb->probes[tb_probe(tb, 0)].type = KTAP_PROBE__COUNT;
}

static void m_pflags(struct tb *tb)
{
	tb->probes[tb_probe(tb, 0)].flags = 0x80;
}

static void m_presv2(struct tb *tb)
{
	tb->probes[tb_probe(tb, 0)].__reserved[1] = 1;
}

static void m_pspec(struct tb *tb)
{
	tb->probes[tb_probe(tb, 0)].spec = 9999;
}

/* Where v0 images had the event id list: reserved now. */
static void m_pids(struct tb *tb)
{
	tb->probes[tb_probe(tb, 0)].__reserved[2] = 3;
}

static void m_biname(struct tb *tb)
{
	tb->builtins[tb_builtin(tb, "print")] = 9999;
}

/* CALLB's C past the builtins section. */
static void m_birange(struct tb *tb)
{
	tb->code[0] = I(CALLB, 0, 0, tb_builtin(tb, "print") + 1);
}

static void m_argc_min(struct tb *tb)
{
	tb->code[0] = I(CALLB, 0, 0, tb_builtin(tb, "printf"));
}

static void m_argc_max(struct tb *tb)
{
	tb->code[0] = I(CALLB, 0, 2, tb_builtin(tb, "len"));
}

/* EVFIELD's Bx past the fields section (which has one entry). */
static void m_frange(struct tb *tb)
{
	tb_probe(tb, KTAP_PROBE_TRACEPOINT);
	tb->code[0] = IBX(EVFIELD, 0, tb_field(tb, 0, "foo") + 1);
}

static void m_fprobe(struct tb *tb)
{
	tb_field(tb, 0, "foo");		/* no probe 0 */
}

static void m_fname(struct tb *tb)
{
	tb_probe(tb, KTAP_PROBE_TRACEPOINT);
	tb->fields[tb_field(tb, 0, "foo")].name = 9999;
}

static void m_unterm(struct tb *tb)
{
	u32 idx = tb_probe(tb, 0);

	/* the last strtab byte is the NUL of "tp:test": drop it */
	tb->probes[idx].spec = tb->strtab_len - 3;
	tb->strtab_len--;
}

static void p_toobig(struct tb *tb)
{
	tb->len = KTAP_MAX_IMAGE + 1;
}

static void p_short(struct tb *tb)
{
	tb->len = sizeof(struct ktap_bc_header) - 1;
}

static const struct verr_case verr_cases[] = {
	{ "magic", NULL, m_magic, -EINVAL, "header: bad magic" },
	{ "version", NULL, m_version, -EINVAL, "header: unsupported ABI version" },
	{ "hdr_size small", NULL, m_hdrsize, -EINVAL, "header: bad header size" },
	{ "hdr_size beyond image", NULL, m_hdrbig, -EINVAL, "header: bad header size" },
	{ "hdr tail", NULL, m_tail, -EINVAL, "header: unknown header extension is not zero" },
	{ "total_size", NULL, m_total, -EINVAL,
	  "header: total_size does not match the image length" },
	{ "flags", NULL, m_flags, -EINVAL, "header: unknown flags" },
	{ "reserved", NULL, m_resv, -EINVAL, "section fetch: section out of bounds" },
	{ "nglobals", NULL, m_nglob, -EINVAL, "header: too many globals" },
	{ "no main", NULL, m_noprotos, -EINVAL, "header: no main chunk" },
	{ "section bounds", NULL, m_sect, -EINVAL, "section code: section out of bounds" },
	{ "section align", NULL, m_align, -EINVAL, "section code: section misaligned" },
	{ "section count", NULL, m_count, -EINVAL, "section probes: too many elements" },
	{ "builtins count", NULL, m_bicount, -EINVAL, "section builtins: too many elements" },
	{ "fields count", NULL, m_fcount, -EINVAL, "section fields: too many elements" },
	{ "lines", NULL, m_lines, -EINVAL, "section lines: line table does not match the code" },
	{ "chunkname", NULL, m_chunk, -EINVAL,
	  "header chunkname: string reference out of bounds or unterminated" },
	{ "too big", NULL, p_toobig, -E2BIG, "image: image larger than the kernel accepts" },
	{ "short", NULL, p_short, -EINVAL, "image: image shorter than its header" },
	{ "const type", m_ctype, NULL, -EINVAL, "const 0: unknown constant type" },
	{ "const str", m_cstr, NULL, -EINVAL, "const 0: constant string out of bounds" },
	{ "const int len", m_cintlen, NULL, -EINVAL, "const 0: unused operand is not zero" },
	{ "code range", m_crange, NULL, -EINVAL, "proto 0: code range out of bounds" },
	{ "code order", m_order, NULL, -EINVAL,
	  "proto 1: functions do not cover the code section exactly, in order" },
	{ "orphan tail", m_orphan_tail, NULL, -EINVAL,
	  "code section: functions do not cover the code section exactly, in order" },
	{ "orphan gap", m_orphan_gap, NULL, -EINVAL,
	  "proto 1: functions do not cover the code section exactly, in order" },
	{ "empty", m_empty, NULL, -EINVAL, "proto 1: function has no code" },
	{ "nparams", m_nparams, NULL, -EINVAL, "proto 0: bad frame size" },
	{ "nregs", m_nregs, NULL, -EINVAL, "proto 0: bad frame size" },
	{ "proto reserved", m_presv, NULL, -EINVAL, "proto 0: reserved field is not zero" },
	{ "proto name", m_pname, NULL, -EINVAL,
	  "proto 0: string reference out of bounds or unterminated" },
	{ "main parent", m_p0parent, NULL, -EINVAL, "proto 0: bad enclosing function" },
	{ "parent", m_parent, NULL, -EINVAL, "proto 1: bad enclosing function" },
	{ "upval range", m_upvrange, NULL, -EINVAL, "proto 1: upvalue range out of bounds" },
	{ "upval reg", m_upvdesc, NULL, -EINVAL,
	  "proto 1 upvalue 0: upvalue capture out of range of the enclosing function" },
	{ "upval upval", m_upvdesc2, NULL, -EINVAL,
	  "proto 1 upvalue 0: upvalue capture out of range of the enclosing function" },
	{ "opcode 0xff", NULL, NULL, -EINVAL, "proto 0 insn 0 (0xff): unknown opcode",
	  0xff },
	{ "opcode count", NULL, NULL, -EINVAL, "): unknown opcode", KTAP_OP__COUNT, true },
	{ "reg B", NULL, NULL, -EINVAL, "proto 0 insn 0 (MOVE): register out of range",
	  I(MOVE, 0, NREGS, 0) },
	{ "reg A", NULL, NULL, -EINVAL, "proto 0 insn 0 (LOADI): register out of range",
	  I(LOADI, NREGS, 0, 0) },
	{ "none", NULL, NULL, -EINVAL, "proto 0 insn 0 (MOVE): unused operand is not zero",
	  I(MOVE, 0, 1, 5) },
	{ "rcnt", NULL, NULL, -EINVAL, "proto 0 insn 0 (LOADNIL): register out of range",
	  I(LOADNIL, 10, 6, 0) },
	{ "reg3", NULL, NULL, -EINVAL, "proto 0 insn 0 (ITERNEXT): register out of range",
	  IBX(ITERNEXT, NREGS - 2, 0) },
	{ "compare A", NULL, NULL, -EINVAL, "proto 0 insn 0 (EQ): register out of range",
	  I(EQ, NREGS, 0, 0) },
	{ "jmpt A", NULL, NULL, -EINVAL, "proto 0 insn 0 (JMPT): register out of range",
	  IBX(JMPT, NREGS, 0) },
	{ "const", NULL, NULL, -EINVAL, "proto 0 insn 0 (LOADK): constant out of range",
	  IBX(LOADK, 0, 60) },
	{ "kint", m_kint, NULL, -EINVAL, "proto 0 insn 0 (ADDK): constant is not an integer" },
	{ "kstr", m_kstr, NULL, -EINVAL, "proto 0 insn 0 (GETFIELD): constant is not a string" },
	{ "upv", NULL, NULL, -EINVAL, "proto 0 insn 0 (GETUPVAL): upvalue out of range",
	  I(GETUPVAL, 0, 0, 0) },
	{ "global", NULL, NULL, -EINVAL, "proto 0 insn 0 (GETGLOBAL): global out of range",
	  IBX(GETGLOBAL, 0, 0) },
	{ "proto", NULL, NULL, -EINVAL,
	  "proto 0 insn 0 (CLOSURE): function out of range or not nested here",
	  IBX(CLOSURE, 0, 1) },
	{ "not child", m_notchild, NULL, -EINVAL,
	  "proto 0 insn 0 (CLOSURE): function out of range or not nested here" },
	{ "jump fwd", NULL, NULL, -EINVAL, "proto 0 insn 0 (JMP): jump target out of range",
	  IBX(JMP, 0, 5) },
	{ "jump back", NULL, NULL, -EINVAL,
	  "proto 0 insn 0 (JMP): jump target out of range",
	  IBX(JMP, 0, -2) },
	{ "jump to ncode", NULL, NULL, -EINVAL,
	  "proto 0 insn 0 (JMP): jump target out of range",
	  IBX(JMP, 0, 1) },
	{ "jmpt fwd", NULL, NULL, -EINVAL, "proto 0 insn 0 (JMPT): jump target out of range",
	  IBX(JMPT, 0, 5) },
	{ "jmpf back", NULL, NULL, -EINVAL, "proto 0 insn 0 (JMPF): jump target out of range",
	  IBX(JMPF, 0, -2) },
	{ "iternext to ncode", NULL, NULL, -EINVAL,
	  "proto 0 insn 0 (ITERNEXT): jump target out of range",
	  IBX(ITERNEXT, 0, 1) },
	{ "jmp A", NULL, NULL, -EINVAL, "proto 0 insn 0 (JMP): unused operand is not zero",
	  IBX(JMP, 1, 0) },
	{ "bool", NULL, NULL, -EINVAL, "proto 0 insn 0 (LOADBOOL): operand is not 0 or 1",
	  I(LOADBOOL, 0, 2, 0) },
	{ "return values past the frame", NULL, NULL, -EINVAL,
	  "proto 0 insn 0 (RETURN): register out of range",
	  I(RETURN, NREGS - 1, 2, 0) },
	{ "call results past the frame", NULL, NULL, -EINVAL,
	  "proto 0 insn 0 (CALL): register out of range",
	  I(CALL, NREGS - 2, 0, 3) },
	{ "builtin, none named", NULL, NULL, -EINVAL, "proto 0 insn 0 (CALLB): unknown builtin",
	  I(CALLB, 0, 0, 0) },
	{ "builtin index", m_birange, NULL, -EINVAL,
	  "proto 0 insn 0 (CALLB): unknown builtin" },
	{ "builtin name ref", m_biname, NULL, -EINVAL, "builtin 0", 0, true },
	{ "argc min", m_argc_min, NULL, -EINVAL,
	  "proto 0 insn 0 (CALLB): wrong number of arguments to builtin" },
	{ "argc max", m_argc_max, NULL, -EINVAL,
	  "proto 0 insn 0 (CALLB): wrong number of arguments to builtin" },
	{ "field index", m_frange, NULL, -EINVAL, "proto 0 insn 0 (EVFIELD): field", 0, true },
	{ "field, none", NULL, NULL, -EINVAL, "proto 0 insn 0 (EVFIELD): field",
	  IBX(EVFIELD, 0, 0), true },
	{ "field probe", m_fprobe, NULL, -EINVAL, "field 0", 0, true },
	{ "field name", m_fname, NULL, -EINVAL, "field 0", 0, true },
	{ "probe", NULL, NULL, -EINVAL, "proto 0 insn 0 (ATTACH): probe out of range",
	  IBX(ATTACH, 0, 0) },
	{ "main only", m_mainonly, NULL, -EINVAL,
	  "proto 1 insn 0 (ATTACH): only valid in the main chunk" },
	{ "no return", m_last2, NULL, -EINVAL,
	  "proto 0 insn 1 (LOADI): control can leave the function here" },
	{ "EQ last", m_eq_end, NULL, -EINVAL,
	  "proto 0 insn 1 (EQ): control can leave the function here" },
	{ "EQK last", m_eqk_end, NULL, -EINVAL,
	  "proto 0 insn 1 (EQK): control can leave the function here" },
	{ "CALLB last", m_callb_end, NULL, -EINVAL,
	  "proto 0 insn 1 (CALLB): control can leave the function here" },
	{ "JMPT falls past the end", m_jmpt_end, NULL, -EINVAL,
	  "proto 0 insn 1 (JMPT): control can leave the function here" },
	{ "JMPF falls past the end", m_jmpf_end, NULL, -EINVAL,
	  "proto 0 insn 1 (JMPF): control can leave the function here" },
	{ "ITERNEXT falls past the end", m_iter_end, NULL, -EINVAL,
	  "proto 0 insn 1 (ITERNEXT): control can leave the function here" },
	{ "branch into the next function", m_branch_into_next, NULL, -EINVAL,
	  "proto 1 insn 1 (JMPF): jump target out of range" },
	{ "fall into the next function", m_fall_into_next, NULL, -EINVAL,
	  "proto 1 insn 2 (JMPT): control can leave the function here" },
	{ "ITERNEXT before the function", m_iter_out, NULL, -EINVAL,
	  "proto 1 insn 0 (ITERNEXT): jump target out of range" },
	{ "override on a tracepoint", m_override_tp, NULL, -EINVAL,
	  "probe 0: only a kprobe can override a return value (KTAP_PROBE_F_OVERRIDE)" },
	{ "wildcard flag on a timer", m_wildcard_timer, NULL, -EINVAL,
	  "probe 0: only a kprobe or uprobe comes from a wildcard (KTAP_PROBE_F_WILDCARD)" },
	{ "tracepoint without a target", m_notarget, NULL, -EINVAL,
	  "probe 0: this probe type needs a target" },
	{ "uprobe without a target", m_notarget_uprobe, NULL, -EINVAL,
	  "probe 0: this probe type needs a target" },
	{ "fetch on a timer", m_fetch_timer, NULL, -EINVAL,
	  "fetch 0: fetch arguments on a probe that is not a kprobe or uprobe" },
	{ "fetch unsorted", m_fetch_order, NULL, -EINVAL,
	  "fetch 1: fetch arguments not sorted by probe" },
	{ "fetch probe", m_fetch_probe, NULL, -EINVAL, "fetch 0: probe out of range" },
	{ "fetch base", m_fetch_base, NULL, -EINVAL, "fetch 0: bad fetch argument" },
	{ "fetch type", m_fetch_type, NULL, -EINVAL, "fetch 0: bad fetch argument" },
	{ "fetch $arg in a return probe", m_fetch_ret_arg, NULL, -EINVAL,
	  "fetch 0: bad fetch argument" },
	{ "fetch $retval at entry", m_fetch_entry_retval, NULL, -EINVAL,
	  "fetch 0: bad fetch argument" },
	{ "fetch $arg7", m_fetch_arg7, NULL, -EINVAL, "fetch 0: bad fetch argument" },
	{ "fetch offset past ndref", m_fetch_off, NULL, -EINVAL,
	  "fetch 0: bad fetch argument" },
	{ "fetch five reads", m_fetch_deep, NULL, -EINVAL, "fetch 0: bad fetch argument" },
	{ "fetch $comm as a number", m_fetch_comm, NULL, -EINVAL,
	  "fetch 0: bad fetch argument" },
	{ "fetch register name", m_fetch_reg, NULL, -EINVAL, "fetch 0: bad fetch argument" },
	{ "fetch flags", m_fetch_flags, NULL, -EINVAL, "fetch 0: bad fetch argument" },
	{ "fetch 17 on a probe", m_fetch_many, NULL, -EINVAL,
	  "fetch 16: more than KTAP_MAX_FETCH_ARGS fetch arguments on one probe" },
	{ "attr on a tracepoint", m_attr_tp, NULL, -EINVAL,
	  "probe 0: bad watchpoint mode or length" },
	{ "watchpoint length 3", m_watch_len, NULL, -EINVAL,
	  "probe 0: bad watchpoint mode or length" },
	{ "watchpoint rx", m_watch_rx, NULL, -EINVAL,
	  "probe 0: bad watchpoint mode or length" },
	{ "probe type", m_ptype, NULL, -EINVAL, "probe 0: unknown probe type" },
	{ "probe flags", m_pflags, NULL, -EINVAL, "probe 0: unknown flags" },
	{ "probe reserved", m_presv2, NULL, -EINVAL, "probe 0: reserved field is not zero" },
	{ "probe spec", m_pspec, NULL, -EINVAL,
	  "probe 0: string reference out of bounds or unterminated" },
	{ "probe unterminated", m_unterm, NULL, -EINVAL,
	  "probe 0: string reference out of bounds or unterminated" },
	{ "probe ids", m_pids, NULL, -EINVAL, "probe 0: reserved field is not zero" },
};

static void verr_desc(const struct verr_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(verr, verr_cases, verr_desc);

static struct tb *tb_valid(struct kunit *test)
{
	struct tb *tb = tb_new(test);

	tb_emit(tb, I(LOADI, 0, 1, 0));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	return tb;
}

static void t_verify_reject(struct kunit *test)
{
	const struct verr_case *c = test->param_value;
	struct tb *tb = tb_valid(test);
	struct ktap_vm *vm;
	char log[256];

	if (c->mut)
		c->mut(tb);
	if (c->insn)
		tb->code[0] = c->insn;
	tb_build(test, tb);
	if (c->post)
		c->post(tb);
	vm = ktap_vm_load(tb->img, tb->len, NULL, &fake_ops, NULL, log,
			  sizeof(log));
	KUNIT_ASSERT_TRUE(test, IS_ERR(vm));
	KUNIT_EXPECT_EQ(test, PTR_ERR(vm), c->err);
	if (c->sub)
		KUNIT_EXPECT_NOT_NULL_MSG(test, strstr(log, c->log), "log: %s", log);
	else
		KUNIT_EXPECT_STREQ(test, log, c->log);
}

static void t_verify_valid(struct kunit *test)
{
	struct fake_host *h = fake_new(test);
	struct tb *tb = tb_valid(test);
	struct ktap_vm *vm = t_load(test, tb, h, 0);

	KUNIT_EXPECT_EQ(test, ktap_vm_run_main(vm), 0);
	KUNIT_EXPECT_STREQ(test, fake_text(h), "");
}

/*
 * A valid fetch section loads, and each probe finds exactly its own
 * entries (the lookup is a binary search over the sorted section).
 */
/*
 * ktap_frame_fill(): up to which register a new frame sets nil.
 * Function 1 of each image: the prefix up to its first branch, call or
 * RETURN.
 */
static void t_frame_fill(struct kunit *test)
{
	static const struct {
		const char	*name;
		u32		code[5];
		u8		nparams, nregs, end;
	} cases[] = {
		/* t[execname] += 1: every register written first */
		{ "count", { IBX(GETUPVAL, 1, 0), I(CALLB, 2, 0, 0),
			     IBX(LOADI, 3, 1), I(INCTABLE, 1, 2, 3),
			     I(RETURN, 0, 0, 0) }, 1, 4, 1 },
		{ "branch first", { IBX(JMPT, 0, 1), IBX(LOADI, 1, 5),
				    I(RETURN, 1, 1, 0) }, 1, 3, 3 },
		{ "read first", { I(MOVE, 2, 1, 0), IBX(LOADI, 1, 7),
				  I(RETURN, 2, 1, 0) }, 0, 3, 3 },
		/* r2 and r5 never written: up to r5 */
		{ "gap", { IBX(LOADI, 1, 1), IBX(LOADI, 3, 2),
			   I(ADD, 4, 1, 3), I(RETURN, 4, 1, 0) }, 1, 6, 6 },
		/* r2 only: r1 gets a nil it does not need */
		{ "hole", { IBX(LOADI, 1, 1), IBX(LOADI, 3, 2),
			    I(ADD, 4, 1, 3), I(RETURN, 4, 1, 0) }, 1, 5, 3 },
		{ "loadnil range", { I(LOADNIL, 1, 2, 0), I(ADD, 4, 1, 3),
				     I(RETURN, 4, 1, 0) }, 1, 5, 1 },
		{ "callb argument unset", { I(CALLB, 1, 1, 1),
					    I(RETURN, 1, 1, 0) }, 1, 3, 3 },
	};
	int k, j;

	for (k = 0; k < ARRAY_SIZE(cases); k++) {
		struct fake_host *h = fake_new(test);
		struct tb *tb = tb_new(test);
		struct ktap_vm *vm;

		tb_emit(tb, I(RETURN, 0, 0, 0));
		tb_func(tb, 0, cases[k].nparams, cases[k].nregs);
		tb_upval(tb, 1, 0);
		tb_builtin(tb, "pid");
		tb_builtin(tb, "print");
		for (j = 0; j < ARRAY_SIZE(cases[k].code) && cases[k].code[j]; j++)
			tb_emit(tb, cases[k].code[j]);
		vm = t_load(test, tb, h, 0);
		KUNIT_EXPECT_EQ_MSG(test, vm->fill_end[1], cases[k].end, "%s",
				    cases[k].name);
	}
}

static void t_fetch_lookup(struct kunit *test)
{
	struct fake_host *h = fake_new(test);
	struct tb *tb = tb_valid(test);
	const struct ktap_bc_fetch *f;
	struct ktap_bc_fetch *s;
	u32 k0, k1, k2, u, n;
	struct ktap_vm *vm;

	k0 = tb_probe(tb, KTAP_PROBE_KPROBE);
	k1 = tb_probe(tb, KTAP_PROBE_KPROBE);
	k2 = tb_probe(tb, KTAP_PROBE_KPROBE);
	u = tb_probe(tb, KTAP_PROBE_UPROBE);
	tb->probes[k2].flags = KTAP_PROBE_F_RETURN;
	tb_fetch(tb, k0, KTAP_FETCH_S32);
	s = tb_fetch(tb, k0, KTAP_FETCH_STRING);
	s->ndref = 2;
	s->off[0] = 40;
	s->flags = KTAP_FETCH_F_USER;
	tb_fetch(tb, k2, KTAP_FETCH_U64)->base = KTAP_FETCH_RETVAL;
	tb->fetch[2].reg = 0;
	tb_fetch(tb, u, KTAP_FETCH_X16)->base = KTAP_FETCH_STACKP;
	tb->fetch[3].reg = 0;
	vm = t_load(test, tb, h, 0);

	f = ktap_vm_fetch(vm, k0, &n);
	KUNIT_ASSERT_EQ(test, n, 2);
	KUNIT_EXPECT_EQ(test, f[0].type, KTAP_FETCH_S32);
	KUNIT_EXPECT_EQ(test, f[1].off[0], 40);
	KUNIT_EXPECT_NULL(test, ktap_vm_fetch(vm, k1, &n));
	KUNIT_EXPECT_EQ(test, n, 0);
	f = ktap_vm_fetch(vm, k2, &n);
	KUNIT_ASSERT_EQ(test, n, 1);
	KUNIT_EXPECT_EQ(test, f->base, KTAP_FETCH_RETVAL);
	f = ktap_vm_fetch(vm, u, &n);
	KUNIT_ASSERT_EQ(test, n, 1);
	KUNIT_EXPECT_EQ(test, f->type, KTAP_FETCH_X16);
	KUNIT_EXPECT_NULL(test, ktap_vm_fetch(vm, u + 1, &n));
}

/*
 * Builtins are named in the image: each name of the kernel's (the ABI
 * the compiler writes) loads, with its arity; the names v0 had and the
 * compiler now lowers, and names never known, are rejected by name.
 */
static const struct {
	const char	*name;
	u8		min, max;
} bi_names[] = {
	{ "print", 0, 255 }, { "printf", 1, 255 }, { "len", 1, 1 },
	{ "delete", 1, 2 }, { "table_count", 1, 1 }, { "pairs", 1, 1 },
	{ "sort_pairs", 1, 2 }, { "exit", 0, 1 }, { "cpu", 0, 0 },
	{ "pid", 0, 0 }, { "target_pid", 0, 0 }, { "tid", 0, 0 }, { "uid", 0, 0 },
	{ "execname", 0, 0 }, { "arch", 0, 0 }, { "kernel_v", 0, 0 },
	{ "num_cpus", 0, 0 }, { "in_interrupt", 0, 0 }, { "in_iowait", 0, 0 },
	{ "gettimeofday_ns", 0, 0 }, { "print_hist", 1, 2 }, { "ptable", 0, 1 },
	{ "count", 1, 1 }, { "sum", 1, 1 }, { "avg", 1, 1 }, { "min", 1, 1 },
	{ "max", 1, 1 }, { "stack", 0, 2 }, { "print_backtrace", 0, 0 },
	{ "ustack", 0, 1 }, { "ksym", 1, 1 }, { "usym", 1, 1 },
	{ "kernel_string", 1, 1 }, { "user_string", 1, 1 },
	{ "curr_taskinfo", 1, 2 }, { "print_trace_clock", 0, 0 },
	{ "probename", 0, 0 }, { "argstr", 0, 0 }, { "argn", 1, 1 },
	{ "tostring", 1, 1 }, { "tonumber", 1, 1 }, { "log2", 1, 1 },
	{ "print_log2hist", 1, 1 }, { "hist", 0, 1 }, { "lhist", 3, 4 },
	{ "stats", 0, 1 }, { "clear", 1, 1 }, { "sprintf", 1, 255 },
	{ "substr", 2, 3 }, { "strcmp", 2, 2 }, { "contains", 2, 2 },
	{ "join", 1, 2 }, { "sk_saddr", 1, 1 }, { "sk_daddr", 1, 1 },
	{ "ntop", 1, 1 },
};

static const char * const bi_unknown[] = {
	"gettimeofday_us", "gettimeofday_ms", "gettimeofday_s", "inplace_inc",
	"histogram", "kdebug_dumpstack", "kdebug.dumpstack", "Print", "",
};

/* Main: CALLB of builtin @name with @argc arguments, never run. */
static struct ktap_vm *t_load_callb(struct kunit *test, const char *name,
				    u8 argc, char *log, size_t log_size)
{
	struct tb *tb = tb_new(test);

	tb_emit(tb, IBX(JMP, 0, 1));
	tb_emit(tb, I(CALLB, 0, argc, tb_builtin(tb, name)));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	tb_build(test, tb);
	return ktap_vm_load(tb->img, tb->len, NULL, &fake_ops, NULL, log,
			    log_size);
}

static void t_verify_builtin_names(struct kunit *test)
{
	struct ktap_vm *vm;
	char log[256];
	u32 i, argc;

	for (i = 0; i < ARRAY_SIZE(bi_names); i++) {
		argc = min_t(u32, bi_names[i].max, NREGS - 1);
		vm = t_load_callb(test, bi_names[i].name, bi_names[i].min, log,
				  sizeof(log));
		KUNIT_EXPECT_FALSE_MSG(test, IS_ERR(vm), "%s: %s",
				       bi_names[i].name, log);
		if (!IS_ERR(vm))
			ktap_vm_free(vm);
		vm = t_load_callb(test, bi_names[i].name, argc, log, sizeof(log));
		KUNIT_EXPECT_FALSE_MSG(test, IS_ERR(vm), "%s: %s",
				       bi_names[i].name, log);
		if (!IS_ERR(vm))
			ktap_vm_free(vm);
		if (bi_names[i].max == 255)
			continue;
		vm = t_load_callb(test, bi_names[i].name, bi_names[i].max + 1,
				  log, sizeof(log));
		KUNIT_EXPECT_EQ_MSG(test, PTR_ERR(vm), -EINVAL, "%s",
				    bi_names[i].name);
		KUNIT_EXPECT_NOT_NULL_MSG(test, strstr(log, "wrong number of arguments"),
					  "%s: %s", bi_names[i].name, log);
	}
	for (i = 0; i < ARRAY_SIZE(bi_unknown); i++) {
		vm = t_load_callb(test, bi_unknown[i], 0, log, sizeof(log));
		KUNIT_EXPECT_EQ_MSG(test, PTR_ERR(vm), -EINVAL, "%s",
				    bi_unknown[i]);
		KUNIT_EXPECT_NOT_NULL_MSG(test, strstr(log, "unknown builtin"),
					  "%s: %s", bi_unknown[i], log);
		KUNIT_EXPECT_NOT_NULL_MSG(test, strstr(log, bi_unknown[i]),
					  "%s: %s", bi_unknown[i], log);
	}
}

/* A zero header extension is accepted, like copy_struct_from_user(). */
static void t_verify_hdr_ext(struct kunit *test)
{
	struct tb *tb = tb_valid(test);
	struct ktap_bc_header *h;
	struct ktap_vm *vm;
	char *img;

	tb_build(test, tb);
	img = kunit_kzalloc(test, tb->len + 8, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, img);
	memcpy(img + 8, tb->img, tb->len);
	memcpy(img, tb->img, sizeof(*h));
	memset(img + sizeof(*h), 0, 8);
	h = (void *)img;
	h->hdr_size += 8;
	h->total_size += 8;
	h->protos.off += 8;
	h->consts.off += h->consts.count ? 8 : 0;
	h->strtab.off += 8;
	h->code.off += 8;
	h->lines.off += 8;
	vm = ktap_vm_load(img, tb->len + 8, NULL, &fake_ops, NULL, NULL, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(vm));
	ktap_vm_free(vm);
}

/* The memory limit is checked; a tiny pool fails cleanly. */
static void t_verify_mem_limit(struct kunit *test)
{
	struct ktap_vm_opts opts = { .mem_limit = 1024 };
	struct tb *tb = tb_valid(test);
	struct ktap_vm *vm;
	char log[128];

	tb_build(test, tb);
	vm = ktap_vm_load(tb->img, tb->len, &opts, &fake_ops, NULL, log,
			  sizeof(log));
	KUNIT_EXPECT_EQ(test, PTR_ERR(vm), -EINVAL);
	KUNIT_EXPECT_STREQ(test, log, "options: memory limit out of range");
}

/* Every truncation of a valid image is rejected, never crashes. */
static void t_verify_truncated(struct kunit *test)
{
	struct tb *tb = tb_valid(test);
	struct ktap_vm *vm;
	size_t len;

	tb_kstr(tb, "hello");
	tb_field(tb, tb_probe(tb, KTAP_PROBE_END), "foo");
	tb_builtin(tb, "print");
	tb_build(test, tb);
	for (len = 0; len < tb->len; len++) {
		vm = ktap_vm_load(tb->img, len, NULL, &fake_ops, NULL, NULL, 0);
		KUNIT_EXPECT_TRUE(test, IS_ERR(vm));
		if (!IS_ERR(vm))
			ktap_vm_free(vm);
	}
}

/* Every single-bit flip is either rejected or loads and runs cleanly. */
static void t_verify_bitflips(struct kunit *test)
{
	struct ktap_vm_opts opts = { .mem_limit = KTAP_MIN_MEM };
	struct fake_host *h = fake_new(test);
	struct tb *tb = tb_new(test);
	struct ktap_vm *vm;
	size_t bit;
	char *img;

	tb_field(tb, tb_probe(tb, KTAP_PROBE_TRACEPOINT), "f");
	tb_emit(tb, IBX(LOADK, 0, tb_kstr(tb, "hi")));
	tb_print(tb, 0);
	tb_emit(tb, IBX(JMPT, 0, 0));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	tb_build(test, tb);
	img = kunit_kmalloc(test, tb->len, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, img);
	for (bit = 0; bit < tb->len * 8; bit++) {
		memcpy(img, tb->img, tb->len);
		img[bit / 8] ^= 1 << (bit % 8);
		vm = ktap_vm_load(img, tb->len, &opts, &fake_ops, h, NULL, 0);
		if (IS_ERR(vm))
			continue;
		vm->main_budget = 10000;
		seq_buf_clear(&h->out);
		ktap_vm_run_main(vm);
		ktap_vm_free(vm);
	}
}

/* Opcode semantics: each program prints; the output is compared. */
struct prog_case {
	const char	*name;
	void		(*build)(struct tb *tb);
	const char	*out;
};

static void p_arith(struct tb *tb)
{
	static const u8 ops[] = { KTAP_OP_ADD, KTAP_OP_SUB, KTAP_OP_MUL,
				  KTAP_OP_DIV, KTAP_OP_MOD };
	int k;

	tb_emit(tb, IBX(LOADI, 0, 7));
	tb_emit(tb, IBX(LOADI, 1, -2));
	for (k = 0; k < ARRAY_SIZE(ops); k++) {
		tb_emit(tb, KTAP_INSN(ops[k], 2, 0, 1));
		tb_print(tb, 2);
	}
	tb_emit(tb, I(UNM, 2, 0, 0));
	tb_print(tb, 2);
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static void p_arithk(struct tb *tb)
{
	static const u8 ops[] = { KTAP_OP_ADDK, KTAP_OP_SUBK, KTAP_OP_MULK,
				  KTAP_OP_DIVK, KTAP_OP_MODK };
	u32 k3 = tb_kint(tb, -3);
	int k;

	tb_emit(tb, IBX(LOADI, 0, -10));
	for (k = 0; k < ARRAY_SIZE(ops); k++) {
		tb_emit(tb, KTAP_INSN(ops[k], 2, 0, k3));
		tb_print(tb, 2);
	}
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static void p_wrap(struct tb *tb)
{
	tb_emit(tb, IBX(LOADK, 0, tb_kint(tb, S64_MAX)));
	tb_emit(tb, IBX(LOADI, 1, 1));
	tb_emit(tb, I(ADD, 2, 0, 1));
	tb_print(tb, 2);
	tb_emit(tb, I(MUL, 2, 0, 0));
	tb_print(tb, 2);
	tb_emit(tb, IBX(LOADK, 0, tb_kint(tb, S64_MIN)));
	tb_emit(tb, IBX(LOADI, 1, -1));
	tb_emit(tb, I(DIV, 2, 0, 1));
	tb_print(tb, 2);
	tb_emit(tb, I(MOD, 2, 0, 1));
	tb_print(tb, 2);
	tb_emit(tb, I(UNM, 2, 0, 0));
	tb_print(tb, 2);
	tb_emit(tb, I(SUB, 2, 0, 1));
	tb_print(tb, 2);
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static void p_loads(struct tb *tb)
{
	tb_emit(tb, IBX(LOADK, 0, tb_kstr(tb, "str")));
	tb_print(tb, 0);
	tb_emit(tb, I(LOADBOOL, 1, 1, 0));
	tb_print(tb, 1);
	tb_emit(tb, I(LOADBOOL, 1, 0, 0));
	tb_print(tb, 1);
	tb_emit(tb, I(MOVE, 2, 0, 0));
	tb_print(tb, 2);
	tb_emit(tb, I(LOADNIL, 0, 2, 0));
	tb_print(tb, 0);
	tb_print(tb, 2);
	tb_emit(tb, I(NOT, 3, 0, 0));		/* not nil */
	tb_print(tb, 3);
	tb_emit(tb, IBX(LOADI, 4, 0));
	tb_emit(tb, I(NOT, 3, 4, 0));		/* not 0: 0 is true */
	tb_print(tb, 3);
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

/*
 * Prints the boolean "R(b) op R(c)" stores; for JMPT and JMPF, whether
 * the jump on R(b) is taken.
 */
static void tb_cond(struct tb *tb, u32 op, u8 b, u8 c)
{
	if (op == KTAP_OP_JMPT || op == KTAP_OP_JMPF) {
		tb_emit(tb, I(LOADBOOL, 12, 1, 0));
		tb_emit(tb, KTAP_INSN_BX(op, b, 1));
		tb_emit(tb, I(LOADBOOL, 12, 0, 0));
	} else {
		tb_emit(tb, IBX(LOADI, 12, 7));		/* overwritten */
		tb_emit(tb, KTAP_INSN(op, 12, b, c));
	}
	tb_print(tb, 12);
}

static void p_compare(struct tb *tb)
{
	u32 k1 = tb_kint(tb, 1);

	tb_emit(tb, IBX(LOADI, 0, 1));
	tb_emit(tb, IBX(LOADI, 1, 2));
	tb_emit(tb, IBX(LOADK, 2, tb_kstr(tb, "a")));
	tb_emit(tb, IBX(LOADK, 3, tb_kstr(tb, "b")));
	tb_emit(tb, IBX(LOADK, 4, tb_kstr(tb, "ab")));
	tb_emit(tb, I(CONCAT, 5, 2, 3));	/* a temporary "ab" */
	tb_emit(tb, I(LOADNIL, 6, 0, 0));
	tb_emit(tb, I(LOADBOOL, 7, 0, 0));
	tb_emit(tb, IBX(LOADI, 8, 0));
	tb_emit(tb, IBX(LOADK, 9, tb_kstr(tb, "")));
	tb_cond(tb, KTAP_OP_LT, 0, 1);		/* true */
	tb_cond(tb, KTAP_OP_LT, 1, 0);		/* false */
	tb_cond(tb, KTAP_OP_LE, 1, 1);		/* true */
	tb_cond(tb, KTAP_OP_EQ, 0, 0);		/* true */
	tb_cond(tb, KTAP_OP_EQ, 0, 2);		/* false: int vs string */
	tb_cond(tb, KTAP_OP_LT, 2, 3);		/* true: "a" < "b" */
	tb_cond(tb, KTAP_OP_LE, 4, 2);		/* false: "ab" <= "a" */
	tb_cond(tb, KTAP_OP_EQ, 4, 5);		/* true: by contents */
	tb_cond(tb, KTAP_OP_EQK, 0, k1);	/* true */
	tb_cond(tb, KTAP_OP_EQK, 1, k1);	/* false */
	tb_cond(tb, KTAP_OP_EQ, 6, 7);		/* false: nil vs false */
	tb_cond(tb, KTAP_OP_JMPT, 0, 0);	/* 1 is true: taken */
	tb_cond(tb, KTAP_OP_JMPT, 6, 0);	/* nil is false */
	tb_cond(tb, KTAP_OP_JMPT, 7, 0);	/* false is false */
	tb_cond(tb, KTAP_OP_JMPT, 8, 0);	/* 0 is true */
	tb_cond(tb, KTAP_OP_JMPT, 9, 0);	/* "" is true */
	tb_cond(tb, KTAP_OP_JMPF, 6, 0);	/* taken on nil */
	tb_cond(tb, KTAP_OP_JMPF, 7, 0);	/* taken on false */
	tb_cond(tb, KTAP_OP_JMPF, 8, 0);	/* not on 0 */
	tb_cond(tb, KTAP_OP_JMPF, 9, 0);	/* not on "" */
	tb_cond(tb, KTAP_OP_JMPF, 2, 0);	/* not on "a" */
	/* the register compared may be the one written */
	tb_emit(tb, I(LT, 0, 0, 1));
	tb_print(tb, 0);
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static void p_concat(struct tb *tb)
{
	tb_emit(tb, IBX(LOADK, 0, tb_kstr(tb, "x=")));
	tb_emit(tb, IBX(LOADI, 1, -42));
	tb_emit(tb, I(CONCAT, 2, 0, 1));
	tb_print(tb, 2);
	tb_emit(tb, I(CONCAT, 2, 1, 0));
	tb_print(tb, 2);
	tb_emit(tb, I(LEN, 3, 2, 0));
	tb_print(tb, 3);
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static void p_globals(struct tb *tb)
{
	tb->hdr.nglobals = 2;
	tb_emit(tb, IBX(GETGLOBAL, 0, 1));
	tb_print(tb, 0);
	tb_emit(tb, IBX(LOADI, 0, 5));
	tb_emit(tb, IBX(SETGLOBAL, 0, 1));
	tb_emit(tb, IBX(GETGLOBAL, 1, 1));
	tb_print(tb, 1);
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static void p_table(struct tb *tb)
{
	u32 kk = tb_kstr(tb, "k");

	tb_emit(tb, I(NEWTABLE, 0, 0, 0));
	tb_emit(tb, IBX(LOADI, 1, 1));
	tb_emit(tb, IBX(LOADK, 2, tb_kstr(tb, "one")));
	tb_emit(tb, I(SETTABLE, 0, 1, 2));	/* t[1] = "one" */
	tb_emit(tb, I(SETFIELD, 0, kk, 1));	/* t.k = 1 */
	tb_emit(tb, I(GETTABLE, 3, 0, 1));
	tb_print(tb, 3);
	tb_emit(tb, I(GETFIELD, 3, 0, kk));
	tb_print(tb, 3);
	tb_emit(tb, IBX(LOADK, 4, tb_kstr(tb, "c")));
	tb_emit(tb, IBX(LOADI, 5, 3));
	tb_emit(tb, I(INCTABLE, 0, 4, 5));	/* t.c += 3 from nil */
	tb_emit(tb, I(INCTABLE, 0, 4, 5));
	tb_emit(tb, I(GETTABLE, 3, 0, 4));
	tb_print(tb, 3);
	tb_emit(tb, I(LEN, 3, 0, 0));
	tb_print(tb, 3);
	tb_emit(tb, I(MOVE, 7, 0, 0));
	tb_emit(tb, I(CALLB, 6, 1, tb_builtin(tb, "table_count")));
	tb_print(tb, 6);
	tb_emit(tb, I(LOADNIL, 5, 0, 0));
	tb_emit(tb, I(SETTABLE, 0, 4, 5));	/* t.c = nil deletes */
	tb_emit(tb, I(CALLB, 6, 1, tb_builtin(tb, "table_count")));
	tb_print(tb, 6);
	tb_emit(tb, I(GETTABLE, 3, 0, 5));	/* t[nil] reads nil */
	tb_print(tb, 3);
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

/* A numeric for loop: LE, JMPF out, the body, ADDK, JMP back. */
static void p_for(struct tb *tb)
{
	/* for i = 1, 10: s += i */
	tb_emit(tb, IBX(LOADI, 0, 1));
	tb_emit(tb, IBX(LOADI, 1, 10));
	tb_emit(tb, IBX(LOADI, 4, 0));
	tb_emit(tb, I(LE, 3, 0, 1));
	tb_emit(tb, IBX(JMPF, 3, 3));
	tb_emit(tb, I(ADD, 4, 4, 0));
	tb_emit(tb, I(ADDK, 0, 0, tb_kint(tb, 1)));
	tb_emit(tb, IBX(JMP, 0, -5));
	tb_print(tb, 4);
	/* for i = 10, 1, -3: 10 7 4 1 */
	tb_emit(tb, IBX(LOADI, 0, 10));
	tb_emit(tb, IBX(LOADI, 1, 1));
	tb_emit(tb, I(LE, 3, 1, 0));
	tb_emit(tb, IBX(JMPF, 3, 4));
	tb_print(tb, 0);
	tb_emit(tb, I(ADDK, 0, 0, tb_kint(tb, -3)));
	tb_emit(tb, IBX(JMP, 0, -6));
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

/* r0 = { 10, 20, x = 5 }; r2 = r0 (sort_pairs' first argument) */
static void tb_pairs_table(struct tb *tb)
{
	tb_emit(tb, I(NEWTABLE, 0, 0, 0));
	tb_emit(tb, IBX(LOADI, 5, 1));
	tb_emit(tb, IBX(LOADI, 6, 10));
	tb_emit(tb, I(SETTABLE, 0, 5, 6));
	tb_emit(tb, IBX(LOADI, 5, 2));
	tb_emit(tb, IBX(LOADI, 6, 20));
	tb_emit(tb, I(SETTABLE, 0, 5, 6));
	tb_emit(tb, IBX(LOADK, 5, tb_kstr(tb, "x")));
	tb_emit(tb, IBX(LOADI, 6, 5));
	tb_emit(tb, I(SETTABLE, 0, 5, 6));
	tb_emit(tb, I(MOVE, 2, 0, 0));
}

/* for (k, v in r1) print(k, v); return */
static void tb_pairs_loop(struct tb *tb)
{
	tb_emit(tb, IBX(ITERNEXT, 1, 1));
	tb_emit(tb, IBX(JMP, 0, 5));
	tb_print(tb, 2);
	tb_print(tb, 3);
	tb_emit(tb, IBX(JMP, 0, -7));
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static void p_pairs(struct tb *tb)
{
	tb_pairs_table(tb);
	tb_emit(tb, I(CALLB, 1, 1, tb_builtin(tb, "sort_pairs")));
	tb_pairs_loop(tb);
}

/* n = 0; s = 0; for (k, v in pairs(t)) { n += 1; s += v }: any order */
static void p_pairs_sum(struct tb *tb)
{
	tb_pairs_table(tb);
	tb_emit(tb, I(CALLB, 1, 1, tb_builtin(tb, "pairs")));
	tb_emit(tb, IBX(LOADI, 4, 0));
	tb_emit(tb, IBX(LOADI, 5, 0));
	tb_emit(tb, IBX(ITERNEXT, 1, 1));
	tb_emit(tb, IBX(JMP, 0, 3));
	tb_emit(tb, I(ADD, 4, 4, 3));
	tb_emit(tb, I(ADDK, 5, 5, tb_kint(tb, 1)));
	tb_emit(tb, IBX(JMP, 0, -5));
	tb_print(tb, 5);
	tb_print(tb, 4);
	/* an exhausted iterator goes on to the next insn, writing nothing */
	tb_emit(tb, IBX(LOADK, 2, tb_kstr(tb, "done")));
	tb_emit(tb, IBX(ITERNEXT, 1, 0));
	tb_print(tb, 2);
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

/* cmp(a, b) { return a < b }: ascending values, called back per compare */
static void tb_cmp_less(struct tb *tb)
{
	tb_func(tb, 0, 2, 3);
	tb_emit(tb, I(LT, 2, 0, 1));
	tb_emit(tb, I(RETURN, 2, 1, 0));
}

/* for (k, v in sort_pairs(t, cmp)) print(k, v), t = { 10, 20, x = 5 } */
static void p_pairs_cmp(struct tb *tb)
{
	tb_pairs_table(tb);
	tb_emit(tb, IBX(CLOSURE, 3, 1));
	tb_emit(tb, I(CALLB, 1, 2, tb_builtin(tb, "sort_pairs")));
	tb_pairs_loop(tb);
	tb_cmp_less(tb);
}

/* function counter() { n = n + 1; return n } over main's register 0 */
static void p_closure(struct tb *tb)
{
	tb_emit(tb, IBX(LOADI, 0, 0));
	tb_emit(tb, IBX(CLOSURE, 1, 1));
	tb_emit(tb, I(MOVE, 2, 1, 0));
	tb_emit(tb, I(CALL, 2, 0, 1));
	tb_print(tb, 2);
	tb_emit(tb, I(MOVE, 2, 1, 0));
	tb_emit(tb, I(CALL, 2, 0, 1));
	tb_print(tb, 2);
	tb_print(tb, 0);		/* the shared local changed too */
	tb_emit(tb, I(RETURN, 0, 0, 0));
	tb_func(tb, 0, 0, 2);
	tb_upval(tb, 1, 0);
	tb_emit(tb, I(GETUPVAL, 0, 0, 0));
	tb_emit(tb, I(ADDK, 0, 0, tb_kint(tb, 1)));
	tb_emit(tb, I(SETUPVAL, 0, 0, 0));
	tb_emit(tb, I(RETURN, 0, 1, 0));
}

/*
 * function f(a) { return a, a + 1, a + 2 }: the caller keeps two of the
 * values, then four (the last is nil), then none; the callee returns
 * from the top of its frame (A + B == nregs).
 */
static void p_multiret(struct tb *tb)
{
	tb_emit(tb, IBX(CLOSURE, 0, 1));
	tb_emit(tb, I(MOVE, 1, 0, 0));
	tb_emit(tb, IBX(LOADI, 2, 10));
	tb_emit(tb, I(CALL, 1, 1, 2));
	tb_print(tb, 1);
	tb_print(tb, 2);
	tb_emit(tb, I(MOVE, 1, 0, 0));
	tb_emit(tb, IBX(LOADI, 2, 20));
	tb_emit(tb, IBX(LOADI, 4, 7));
	tb_emit(tb, I(CALL, 1, 1, 4));
	tb_print(tb, 1);
	tb_print(tb, 2);
	tb_print(tb, 3);
	tb_print(tb, 4);
	tb_emit(tb, I(MOVE, 1, 0, 0));
	tb_emit(tb, IBX(LOADI, 2, 30));
	tb_emit(tb, I(CALL, 1, 1, 0));
	tb_print(tb, 2);	/* untouched: no value kept */
	tb_emit(tb, I(RETURN, 0, 0, 0));
	tb_func(tb, 0, 1, 3);
	tb_emit(tb, I(ADDK, 1, 0, tb_kint(tb, 1)));
	tb_emit(tb, I(ADDK, 2, 0, tb_kint(tb, 2)));
	tb_emit(tb, I(RETURN, 0, 3, 0));
}

/*
 * function f() { print("in f"); return 5 }; print(f()); print(6): a
 * function that calls a builtin returns to its caller, not out of the
 * run (CALLB leaves its depth in the run for ktap_vm_call()).
 */
static void p_call_builtin(struct tb *tb)
{
	tb_emit(tb, IBX(CLOSURE, 0, 1));
	tb_emit(tb, I(CALL, 0, 0, 1));
	tb_print(tb, 0);
	tb_emit(tb, IBX(LOADI, 0, 6));
	tb_print(tb, 0);
	tb_emit(tb, I(RETURN, 0, 0, 0));
	tb_func(tb, 0, 0, 3);
	tb_emit(tb, IBX(LOADK, 2, tb_kstr(tb, "in f")));
	tb_emit(tb, I(CALLB, 1, 1, tb_builtin(tb, "print")));
	tb_emit(tb, IBX(LOADI, 0, 5));
	tb_emit(tb, I(RETURN, 0, 1, 0));
}

/*
 * f(a) { if (!a) r = 5; return r }; print(f(false)); print(f(true)):
 * both calls use one frame, so the second finds the first's 5 in r1
 * unless it starts nil. The write comes after a branch: it is no proof.
 */
static void p_fill_branch(struct tb *tb)
{
	int k;

	for (k = 0; k < 2; k++) {
		tb_emit(tb, IBX(CLOSURE, 0, 1));
		tb_emit(tb, I(LOADBOOL, 1, k, 0));
		tb_emit(tb, I(CALL, 0, 1, 1));
		tb_print(tb, 0);
	}
	tb_emit(tb, I(RETURN, 0, 0, 0));
	tb_func(tb, 0, 1, 3);
	tb_emit(tb, IBX(JMPT, 0, 1));
	tb_emit(tb, IBX(LOADI, 1, 5));
	tb_emit(tb, I(RETURN, 1, 1, 0));
}

/* f() { var b = a; a = 7; return b }, twice: a is read before written */
static void p_fill_read_first(struct tb *tb)
{
	int k;

	for (k = 0; k < 2; k++) {
		tb_emit(tb, IBX(CLOSURE, 0, 1));
		tb_emit(tb, I(CALL, 0, 0, 1));
		tb_print(tb, 0);
	}
	tb_emit(tb, I(RETURN, 0, 0, 0));
	tb_func(tb, 0, 0, 3);
	tb_emit(tb, I(MOVE, 2, 1, 0));
	tb_emit(tb, IBX(LOADI, 1, 7));
	tb_emit(tb, I(RETURN, 2, 1, 0));
}

/* function add(a, b) { return a + b }; print(add(3, 4)); add(1) fails */
static void p_call(struct tb *tb)
{
	tb_emit(tb, IBX(CLOSURE, 1, 1));
	tb_emit(tb, IBX(LOADI, 2, 3));
	tb_emit(tb, IBX(LOADI, 3, 4));
	tb_emit(tb, IBX(LOADI, 4, 99));		/* extra argument: dropped */
	tb_emit(tb, I(CALL, 1, 3, 1));
	tb_print(tb, 1);
	tb_emit(tb, I(RETURN, 0, 0, 0));
	tb_func(tb, 0, 2, 3);
	tb_emit(tb, I(ADD, 2, 0, 1));
	tb_emit(tb, I(RETURN, 2, 1, 0));
}

static void p_ptable(struct tb *tb)
{
	static const char * const readers[] = { "count", "sum", "avg", "min", "max" };
	int k;

	tb_emit(tb, I(CALLB, 0, 0, tb_builtin(tb, "ptable")));
	tb_emit(tb, IBX(LOADK, 1, tb_kstr(tb, "k")));
	tb_emit(tb, IBX(LOADI, 2, 5));
	tb_emit(tb, I(AGGR, 0, 1, 2));
	tb_emit(tb, IBX(LOADI, 2, 15));
	tb_emit(tb, I(AGGR, 0, 1, 2));
	tb_emit(tb, IBX(LOADI, 2, 1));
	tb_emit(tb, I(AGGR, 0, 1, 2));
	tb_emit(tb, I(GETTABLE, 5, 0, 1));
	for (k = 0; k < ARRAY_SIZE(readers); k++) {
		tb_emit(tb, I(CALLB, 4, 1, tb_builtin(tb, readers[k])));
		tb_print(tb, 4);
	}
	tb_emit(tb, I(GETTABLE, 5, 0, 2));	/* absent key: count 0 */
	tb_emit(tb, I(CALLB, 4, 1, tb_builtin(tb, "count")));
	tb_print(tb, 4);
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static void p_convert(struct tb *tb)
{
	tb_emit(tb, IBX(LOADI, 2, 12));
	tb_emit(tb, I(CALLB, 1, 1, tb_builtin(tb, "tostring")));
	tb_emit(tb, IBX(LOADK, 2, tb_kstr(tb, "x")));
	tb_emit(tb, I(CONCAT, 3, 1, 2));
	tb_print(tb, 3);
	tb_emit(tb, IBX(LOADK, 2, tb_kstr(tb, "0x10")));
	tb_emit(tb, I(CALLB, 1, 1, tb_builtin(tb, "tonumber")));
	tb_print(tb, 1);
	tb_emit(tb, IBX(LOADK, 2, tb_kstr(tb, "zz")));
	tb_emit(tb, I(CALLB, 1, 1, tb_builtin(tb, "tonumber")));
	tb_print(tb, 1);
	tb_emit(tb, IBX(LOADI, 2, 7));
	tb_emit(tb, IBX(LOADK, 3, tb_kstr(tb, "b")));
	tb_emit(tb, I(LOADBOOL, 4, 1, 0));
	tb_emit(tb, I(CALLB, 1, 3, tb_builtin(tb, "print")));
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

/*
 * sk_saddr/sk_daddr read a socket the script names by address, and only
 * an AF_INET one; ntop prints the __be32 as it lies in memory.
 */
static struct sock t_inet_sock, t_inet6_sock;

static void t_sock_addr(struct tb *tb, struct sock *sk, const char *fn)
{
	tb_emit(tb, IBX(LOADK, 3, tb_kint(tb, (s64)(unsigned long)sk)));
	tb_emit(tb, I(CALLB, 2, 1, tb_builtin(tb, fn)));
	tb_emit(tb, I(CALLB, 1, 1, tb_builtin(tb, "ntop")));
	tb_print(tb, 1);
}

static void p_sock(struct tb *tb)
{
	t_inet_sock.sk_family = AF_INET;
	t_inet_sock.sk_rcv_saddr = htonl(0x7f000001);
	t_inet_sock.sk_daddr = htonl(0x0a000102);
	t_inet6_sock.sk_family = AF_INET6;
	t_inet6_sock.sk_rcv_saddr = htonl(0x7f000001);
	t_sock_addr(tb, &t_inet_sock, "sk_saddr");
	t_sock_addr(tb, &t_inet_sock, "sk_daddr");
	/* not AF_INET, and not readable: nil */
	tb_emit(tb, IBX(LOADK, 2, tb_kint(tb, (s64)(unsigned long)&t_inet6_sock)));
	tb_emit(tb, I(CALLB, 1, 1, tb_builtin(tb, "sk_saddr")));
	tb_print(tb, 1);
	tb_emit(tb, IBX(LOADI, 2, 16));
	tb_emit(tb, I(CALLB, 1, 1, tb_builtin(tb, "sk_daddr")));
	tb_print(tb, 1);
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static void p_log2(struct tb *tb)
{
	static const s16 in[] = { 0, 1, 5, 4096, -3 }, vals[] = { 1, 5, 6, 40 };
	u32 k;

	for (k = 0; k < ARRAY_SIZE(in); k++) {
		tb_emit(tb, IBX(LOADI, 2, in[k]));
		tb_emit(tb, I(CALLB, 1, 1, tb_builtin(tb, "log2")));
		tb_print(tb, 1);
	}
	tb_emit(tb, I(NEWTABLE, 0, 0, 0));
	tb_emit(tb, IBX(LOADI, 3, 1));
	for (k = 0; k < ARRAY_SIZE(vals); k++) {
		tb_emit(tb, IBX(LOADI, 2, vals[k]));
		tb_emit(tb, I(CALLB, 1, 1, tb_builtin(tb, "log2")));
		tb_emit(tb, I(INCTABLE, 0, 1, 3));	/* t[log2(v)] += 1 */
	}
	tb_emit(tb, I(MOVE, 2, 0, 0));
	tb_emit(tb, I(CALLB, 1, 1, tb_builtin(tb, "print_log2hist")));
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static const struct prog_case prog_cases[] = {
	{ "arith", p_arith, "5\n9\n-14\n-3\n1\n-7\n" },
	{ "arith K", p_arithk, "-13\n-7\n30\n3\n-1\n" },
	{ "wrapping", p_wrap,
	  "-9223372036854775808\n1\n-9223372036854775808\n0\n"
	  "-9223372036854775808\n-9223372036854775807\n" },
	{ "loads and not", p_loads, "str\ntrue\nfalse\nstr\nnil\nnil\ntrue\nfalse\n" },
	{ "compare and branch", p_compare,
	  "true\nfalse\ntrue\ntrue\nfalse\ntrue\nfalse\ntrue\ntrue\nfalse\nfalse\n"
	  "true\nfalse\nfalse\ntrue\ntrue\ntrue\ntrue\nfalse\nfalse\nfalse\ntrue\n" },
	{ "concat and len", p_concat, "x=-42\n-42x=\n5\n" },
	{ "globals", p_globals, "nil\n5\n" },
	{ "tables", p_table, "one\n1\n6\n1\n3\n2\nnil\n" },
	{ "numeric for", p_for, "55\n10\n7\n4\n1\n" },
	{ "sort_pairs and iterate", p_pairs, "2\n20\n1\n10\nx\n5\n" },
	{ "pairs and iterate", p_pairs_sum, "3\n35\ndone\n" },
	{ "sort_pairs with a cmp function", p_pairs_cmp,
	  "x\n5\n1\n10\n2\n20\n" },
	{ "closure and upvalues", p_closure, "1\n2\n2\n" },
	{ "call with arguments", p_call, "7\n" },
	{ "a register written after a branch starts nil", p_fill_branch,
	  "5\nnil\n" },
	{ "a register read before its write starts nil", p_fill_read_first,
	  "nil\nnil\n" },
	{ "call returns after a builtin", p_call_builtin, "in f\n5\n6\n" },
	{ "several return values", p_multiret, "10\n11\n20\n21\n22\nnil\n30\n" },
	{ "ptable and readers", p_ptable, "3\n21\n7\n1\n15\n0\n" },
	{ "tostring tonumber print", p_convert, "12x\n16\nnil\n7\tb\ttrue\n" },
	{ "sk_saddr sk_daddr ntop", p_sock, "127.0.0.1\n10.0.1.2\nnil\nnil\n" },
	{ "log2 and print_log2hist", p_log2,
	  "-1\n"
	  "0\n"
	  "2\n"
	  "12\n"
	  "-1\n"
	  "            value ------------- Distribution ------------- count\n"
	  "                 1 |@@@@@@@@@@                               1\n"
	  "                 2 |                                         0\n"
	  "                 4 |@@@@@@@@@@@@@@@@@@@@                     2\n"
	  "                 8 |                                         0\n"
	  "                16 |                                         0\n"
	  "                32 |@@@@@@@@@@                               1\n" },
};

static void prog_desc(const struct prog_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(prog, prog_cases, prog_desc);

static void t_prog(struct kunit *test)
{
	const struct prog_case *c = test->param_value;
	struct tb *tb = tb_new(test);

	c->build(tb);
	KUNIT_EXPECT_STREQ(test, t_run(test, tb, NULL), c->out);
}

/* Runtime errors: message with file and line, session stopped. */
struct rterr_case {
	const char	*name;
	void		(*build)(struct tb *tb);
	const char	*out;
};

static void e_div0(struct tb *tb)
{
	tb_emit(tb, IBX(LOADI, 0, 1));
	tb_emit(tb, IBX(LOADI, 1, 0));
	tb->line = 3;
	tb_emit(tb, I(DIV, 2, 0, 1));
	tb_print(tb, 2);
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static void e_mod0(struct tb *tb)
{
	tb_emit(tb, IBX(LOADI, 0, 1));
	tb->line = 4;
	tb_emit(tb, I(MODK, 2, 0, tb_kint(tb, 0)));
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static void e_index_nil(struct tb *tb)
{
	tb->line = 7;
	tb_emit(tb, I(GETTABLE, 0, 1, 2));
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static void e_arith(struct tb *tb)
{
	tb_emit(tb, IBX(LOADK, 0, tb_kstr(tb, "s")));
	tb->line = 2;
	tb_emit(tb, I(ADD, 1, 1, 0));		/* nil + "s": nil is blamed */
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static void e_compare(struct tb *tb)
{
	tb_emit(tb, IBX(LOADI, 0, 1));
	tb_emit(tb, IBX(LOADK, 1, tb_kstr(tb, "s")));
	tb_emit(tb, I(LT, 2, 0, 1));
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static void e_call(struct tb *tb)
{
	tb_emit(tb, IBX(LOADI, 0, 1));
	tb_emit(tb, I(CALL, 0, 0, 0));
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static void e_key(struct tb *tb)
{
	tb_emit(tb, I(NEWTABLE, 0, 0, 0));
	tb_emit(tb, I(NEWTABLE, 1, 0, 0));
	tb_emit(tb, I(SETTABLE, 0, 1, 1));	/* a table as key */
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static void e_depth(struct tb *tb)
{
	tb->hdr.nglobals = 1;
	tb_emit(tb, IBX(CLOSURE, 0, 1));
	tb_emit(tb, IBX(SETGLOBAL, 0, 0));
	tb_emit(tb, I(CALL, 0, 0, 0));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	tb_func(tb, 0, 0, 1);
	tb->line = 9;
	tb_emit(tb, IBX(GETGLOBAL, 0, 0));
	tb_emit(tb, I(CALL, 0, 0, 0));
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static void e_event_in_main(struct tb *tb)
{
	tb_emit(tb, I(CALLB, 0, 0, tb_builtin(tb, "probename")));
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static void e_printf(struct tb *tb)
{
	tb_emit(tb, IBX(LOADK, 1, tb_kstr(tb, "%d\n")));
	tb_emit(tb, IBX(LOADK, 2, tb_kstr(tb, "notanumber")));
	tb_emit(tb, I(CALLB, 0, 2, tb_builtin(tb, "printf")));
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

/* sort_pairs({ true, false }, cmp): cmp's compare fails, on cmp's line */
static void e_sort_cmp(struct tb *tb)
{
	tb_emit(tb, I(NEWTABLE, 1, 0, 0));
	tb_emit(tb, IBX(LOADI, 3, 1));
	tb_emit(tb, I(LOADBOOL, 4, 1, 0));
	tb_emit(tb, I(SETTABLE, 1, 3, 4));
	tb_emit(tb, IBX(LOADI, 3, 2));
	tb_emit(tb, I(LOADBOOL, 4, 0, 0));
	tb_emit(tb, I(SETTABLE, 1, 3, 4));
	tb_emit(tb, IBX(CLOSURE, 2, 1));
	tb_emit(tb, I(CALLB, 0, 2, tb_builtin(tb, "sort_pairs")));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	tb->line = 2;
	tb_cmp_less(tb);
}

/*
 * g0 = { 1, 1 }; g1 = cmp; sort_pairs(g0, g1), where cmp(a, b) itself
 * calls sort_pairs(g0, g1): the nesting of callbacks is bounded.
 */
static void e_sort_nested(struct tb *tb)
{
	tb->hdr.nglobals = 2;
	tb_emit(tb, I(NEWTABLE, 0, 0, 0));
	tb_emit(tb, IBX(LOADI, 1, 1));
	tb_emit(tb, I(SETTABLE, 0, 1, 1));
	tb_emit(tb, IBX(LOADI, 2, 2));
	tb_emit(tb, I(SETTABLE, 0, 2, 1));
	tb_emit(tb, IBX(SETGLOBAL, 0, 0));
	tb_emit(tb, IBX(CLOSURE, 1, 1));
	tb_emit(tb, IBX(SETGLOBAL, 1, 1));
	tb_emit(tb, I(MOVE, 3, 0, 0));
	tb_emit(tb, I(MOVE, 4, 1, 0));
	tb_emit(tb, I(CALLB, 2, 2, tb_builtin(tb, "sort_pairs")));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	tb->line = 2;
	tb_func(tb, 0, 2, 5);
	tb_emit(tb, IBX(GETGLOBAL, 3, 0));
	tb_emit(tb, IBX(GETGLOBAL, 4, 1));
	tb_emit(tb, I(CALLB, 2, 2, tb_builtin(tb, "sort_pairs")));
	tb_emit(tb, I(LOADBOOL, 2, 0, 0));
	tb_emit(tb, I(RETURN, 2, 1, 0));
}

static void e_sort_notfn(struct tb *tb)
{
	tb_emit(tb, I(NEWTABLE, 1, 0, 0));
	tb_emit(tb, IBX(LOADI, 2, 3));
	tb_emit(tb, I(CALLB, 0, 2, tb_builtin(tb, "sort_pairs")));
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static const struct rterr_case rterr_cases[] = {
	{ "division by zero", e_div0, "ktap: error: test.kp:3: division by zero\n" },
	{ "modulo by zero", e_mod0, "ktap: error: test.kp:4: modulo by zero\n" },
	{ "index nil", e_index_nil, "ktap: error: test.kp:7: attempt to index a nil value\n" },
	{ "arith on nil", e_arith,
	  "ktap: error: test.kp:2: attempt to perform arithmetic on a nil value\n" },
	{ "compare", e_compare, "ktap: error: test.kp:1: attempt to compare number with string\n" },
	{ "call number", e_call, "ktap: error: test.kp:1: attempt to call a number value\n" },
	{ "table key", e_key, "ktap: error: test.kp:1: invalid table key (a table value)\n" },
	{ "call depth", e_depth, "ktap: error: test.kp:9: call depth exceeded (32)\n" },
	{ "event builtin in main", e_event_in_main,
	  "ktap: error: test.kp:1: probename() needs an event: not in the main chunk\n" },
	{ "printf type", e_printf,
	  "ktap: error: test.kp:1: bad argument #2 to 'printf' (number expected, got string)\n" },
	{ "sort_pairs cmp fails", e_sort_cmp,
	  "ktap: error: test.kp:2: attempt to compare boolean with boolean\n" },
	{ "sort_pairs cmp nested", e_sort_nested,
	  "ktap: error: test.kp:2: callbacks nested too deeply (4)\n" },
	{ "sort_pairs cmp not a function", e_sort_notfn,
	  "ktap: error: test.kp:1: bad argument #2 to 'sort_pairs' (function expected, got number)\n" },
};

static void rterr_desc(const struct rterr_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(rterr, rterr_cases, rterr_desc);

static void t_rterr(struct kunit *test)
{
	const struct rterr_case *c = test->param_value;
	struct fake_host *h = fake_new(test);
	struct tb *tb = tb_new(test);
	struct ktap_vm_stats st;
	struct ktap_vm *vm;

	c->build(tb);
	vm = t_load(test, tb, h, 0);
	KUNIT_EXPECT_EQ(test, ktap_vm_run_main(vm), -EINVAL);
	KUNIT_EXPECT_STREQ(test, fake_text(h), c->out);
	KUNIT_EXPECT_EQ(test, h->exits, 1);
	ktap_vm_stats(vm, &st);
	KUNIT_EXPECT_EQ(test, st.errors, 1);
}

/* Events and probes. */
struct fake_event {
	struct ktap_event	ev;
	s64			retval;
	bool			nmi;	/* tostring refuses, as in NMI */
};

static int fe_field(struct ktap_vm *vm, struct ktap_event *ev,
		    const char *name, u32 len, struct ktap_value *out)
{
	if (!strcmp(name, "foo")) {
		ktap_value_int(out, 42);
		return 0;
	}
	if (!strcmp(name, "name"))
		return ktap_value_str(vm, out, ev->name, strlen(ev->name));
	return -ENOENT;
}

/* EVFIELD: field 1 was resolved at attach, the others were not. */
static int fe_field_at(struct ktap_vm *vm, struct ktap_event *ev, u32 idx,
		       struct ktap_value *out)
{
	if (idx != 1)
		return -ENOENT;
	ktap_value_int(out, 7);
	return 0;
}

static int fe_tostring(struct ktap_vm *vm, struct ktap_event *ev,
		       struct seq_buf *s)
{
	seq_buf_printf(s, "%s(a: 1)", ev->name);
	return 0;
}

static int fe_arg(struct ktap_vm *vm, struct ktap_event *ev, int n,
		  struct ktap_value *out)
{
	ktap_value_int(out, n * 10);
	return 0;
}

static int fe_set_retval(struct ktap_vm *vm, struct ktap_event *ev, s64 v,
			 const char **why)
{
	container_of(ev, struct fake_event, ev)->retval = v;
	return 0;
}

static const struct ktap_event_ops fe_ops = {
	.field		= fe_field,
	.field_at	= fe_field_at,
	.tostring	= fe_tostring,
	.arg		= fe_arg,
	.set_retval	= fe_set_retval,
};

static int fe_rec_tostring(struct ktap_vm *vm, struct ktap_event *ev,
			   struct seq_buf *s)
{
	if (container_of(ev, struct fake_event, ev)->nmi)
		return -EPERM;
	return fe_tostring(vm, ev, s);
}

static void fe_record(struct ktap_event *ev, const void **rec, u32 *size)
{
	*rec = ev->name;
	*size = strlen(ev->name);
}

/* An event with a raw record, as tracepoints have. */
static const struct ktap_event_ops fe_rec_ops = {
	.field		= fe_field,
	.tostring	= fe_rec_tostring,
	.record		= fe_record,
	.arg		= fe_arg,
	.set_retval	= fe_set_retval,
};

/* Main attaches proto 1 to probe 0; returns the loaded VM. */
static struct ktap_vm *t_attach(struct kunit *test, struct tb *tb,
				struct fake_host *h, u32 budget)
{
	struct ktap_vm *vm = t_load(test, tb, h, budget);

	KUNIT_ASSERT_EQ(test, ktap_vm_run_main(vm), 0);
	KUNIT_ASSERT_EQ(test, h->attached, 1);
	KUNIT_ASSERT_EQ(test, h->probe, 0);
	return vm;
}

static void tb_main_attach(struct tb *tb, u32 type)
{
	tb_probe(tb, type);
	tb_emit(tb, IBX(CLOSURE, 0, 1));
	tb_emit(tb, IBX(ATTACH, 0, 0));
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

static void t_event(struct kunit *test)
{
	struct fake_event fe = { .ev = { .ops = &fe_ops, .name = "sys_x" } };
	struct fake_host *h = fake_new(test);
	struct tb *tb = tb_new(test);
	struct ktap_vm *vm;

	tb->hdr.nglobals = 1;
	tb_main_attach(tb, KTAP_PROBE_TRACEPOINT);
	tb_func(tb, 0, 1, 8);
	/* EVFIELD: by name (foo), resolved at attach (bar) */
	tb_emit(tb, IBX(EVFIELD, 6, tb_field(tb, 0, "foo")));
	tb_emit(tb, IBX(EVFIELD, 7, tb_field(tb, 0, "bar")));
	tb_emit(tb, I(CALLB, 5, 2, tb_builtin(tb, "print")));
	tb_emit(tb, I(GETFIELD, 1, 0, tb_kstr(tb, "foo")));
	tb_emit(tb, I(MOVE, 7, 1, 0));
	tb_emit(tb, I(CALLB, 6, 1, tb_builtin(tb, "print")));
	tb_emit(tb, I(GETFIELD, 1, 0, tb_kstr(tb, "tostring")));
	tb_emit(tb, I(CALL, 1, 0, 1));
	tb_emit(tb, I(MOVE, 7, 1, 0));
	tb_emit(tb, I(CALLB, 6, 1, tb_builtin(tb, "print")));
	tb_emit(tb, I(GETFIELD, 1, 0, tb_kstr(tb, "set_retval")));
	tb_emit(tb, IBX(LOADI, 2, -5));
	tb_emit(tb, I(CALL, 1, 1, 0));
	tb_emit(tb, I(GETFIELD, 1, 0, tb_kstr(tb, "name")));
	tb_emit(tb, IBX(SETGLOBAL, 1, 0));	/* a field string is kept */
	tb_emit(tb, I(CALLB, 3, 0, tb_builtin(tb, "probename")));
	tb_emit(tb, I(CALLB, 4, 0, tb_builtin(tb, "argstr")));
	tb_emit(tb, IBX(LOADI, 6, 3));
	tb_emit(tb, I(CALLB, 5, 1, tb_builtin(tb, "argn")));
	tb_emit(tb, I(CALLB, 2, 3, tb_builtin(tb, "print")));
	tb_emit(tb, I(MOVE, 7, 0, 0));
	tb_emit(tb, I(CALLB, 6, 1, tb_builtin(tb, "print")));
	tb_emit(tb, I(RETURN, 0, 0, 0));

	vm = t_attach(test, tb, h, 0);
	KUNIT_EXPECT_EQ(test, ktap_vm_fire(vm, h->fn, &fe.ev), 0);
	KUNIT_EXPECT_STREQ(test, fake_text(h),
			   "42\t7\n"
			   "42\nsys_x(a: 1)\nsys_x\tsys_x(a: 1)\t30\nsys_x(a: 1)\n");
	KUNIT_EXPECT_EQ(test, fe.retval, -5);
	KUNIT_EXPECT_EQ(test, vm->globals[0].type, KTAP_TSTR);
	KUNIT_EXPECT_TRUE(test, vm->globals[0].s->interned);
	KUNIT_EXPECT_STREQ(test, vm->globals[0].s->data, "sys_x");
}

/*
 * EVFIELD with direct loads (struct ktap_field_loads): each width and
 * sign from an unaligned record, a load past the record's end that must
 * fall back to the event's ops (field "foo" by name), and the registers.
 */
static void t_event_loads(struct kunit *test)
{
	static const u8 rec[16] = {
		0xff, 0, 0xfe, 0xff, 0xfd, 0xff, 0xff, 0xff, 0xfc, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	};
	static const char * const names[] = {
		"u8", "s8", "u16", "s16", "u32", "s32", "s64", "foo", "reg",
	};
	unsigned long regs[4] = { 0, 0, -12345, 0 };
	struct ktap_field_loads *fl;
	struct fake_event fe = { .ev = { .ops = &fe_ops, .name = "sys_x" } };
	struct fake_host *h = fake_new(test);
	struct tb *tb = tb_new(test);
	struct ktap_vm *vm;
	u32 k;

	fl = kunit_kzalloc(test, struct_size(fl, l, ARRAY_SIZE(names)),
			   GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, fl);
	fl->n = ARRAY_SIZE(names);
	fl->l[0] = (struct ktap_field_load){ 0, 1, KTAP_FL_U8, KTAP_FL_REC };
	fl->l[1] = (struct ktap_field_load){ 0, 1, KTAP_FL_S8, KTAP_FL_REC };
	fl->l[2] = (struct ktap_field_load){ 2, 4, KTAP_FL_U16, KTAP_FL_REC };
	fl->l[3] = (struct ktap_field_load){ 2, 4, KTAP_FL_S16, KTAP_FL_REC };
	fl->l[4] = (struct ktap_field_load){ 3, 7, KTAP_FL_U32, KTAP_FL_REC };
	fl->l[5] = (struct ktap_field_load){ 4, 8, KTAP_FL_S32, KTAP_FL_REC };
	fl->l[6] = (struct ktap_field_load){ 7, 15, KTAP_FL_64, KTAP_FL_REC };
	fl->l[7] = (struct ktap_field_load){ 12, 20, KTAP_FL_64, KTAP_FL_REC };
	fl->l[8] = (struct ktap_field_load){ 2 * sizeof(long), 0, KTAP_FL_64,
					     KTAP_FL_REGS };
	fe.ev.loads = fl;
	fe.ev.rec = (void *)rec;
	fe.ev.rec_size = sizeof(rec);
	fe.ev.regs = (struct pt_regs *)regs;

	tb_main_attach(tb, KTAP_PROBE_TRACEPOINT);
	tb_func(tb, 0, 1, 12);
	tb->line = 3;
	for (k = 0; k < ARRAY_SIZE(names); k++)
		tb_emit(tb, IBX(EVFIELD, 2 + k, tb_field(tb, 0, names[k])));
	tb_emit(tb, I(CALLB, 1, ARRAY_SIZE(names), tb_builtin(tb, "print")));
	tb_emit(tb, I(RETURN, 0, 0, 0));

	vm = t_attach(test, tb, h, 0);
	KUNIT_EXPECT_EQ(test, ktap_vm_fire(vm, h->fn, &fe.ev), 0);
	KUNIT_EXPECT_STREQ(test, fake_text(h),
			   "255\t-1\t65534\t-2\t4294966783\t-3\t-769\t42\t-12345\n");

	/* no record: a record load asks the ops, which know no "u8" */
	fe.ev.rec = NULL;
	seq_buf_clear(&h->out);
	KUNIT_EXPECT_EQ(test, ktap_vm_fire(vm, h->fn, &fe.ev), -EINVAL);
	KUNIT_EXPECT_STREQ(test, fake_text(h),
			   "ktap: error: test.kp:3: event has no field 'u8'\n");
}

/*
 * print(e) and printf("%s", e) of an event with a raw record hand it to
 * the host with the text around it instead of formatting it; a second
 * one in the same line, and a width, are formatted at once; formatting
 * refused (NMI) is a runtime error that says what to do.
 */
static void t_event_deferred(struct kunit *test)
{
	struct fake_event fe = { .ev = { .ops = &fe_rec_ops, .name = "tp" } };
	struct fake_host *h = fake_new(test);
	struct tb *tb = tb_new(test);
	struct ktap_vm *vm;

	tb_main_attach(tb, KTAP_PROBE_TRACEPOINT);
	tb_func(tb, 0, 1, 8);
	tb_emit(tb, IBX(LOADK, 2, tb_kstr(tb, "p")));
	tb_emit(tb, I(MOVE, 3, 0, 0));
	tb_emit(tb, IBX(LOADK, 4, tb_kstr(tb, "q")));
	tb_emit(tb, I(MOVE, 5, 0, 0));
	tb_emit(tb, I(CALLB, 1, 4, tb_builtin(tb, "print")));
	tb_emit(tb, IBX(LOADK, 2, tb_kstr(tb, "%d %s|%6s!\n")));
	tb_emit(tb, IBX(LOADI, 3, 5));
	tb_emit(tb, I(MOVE, 4, 0, 0));
	tb_emit(tb, IBX(LOADK, 5, tb_kstr(tb, "ab")));
	tb_emit(tb, I(CALLB, 1, 4, tb_builtin(tb, "printf")));
	tb_emit(tb, I(GETFIELD, 1, 0, tb_kstr(tb, "tostring")));
	tb_emit(tb, I(CALL, 1, 0, 1));
	tb_emit(tb, I(MOVE, 3, 1, 0));
	tb_emit(tb, I(CALLB, 2, 1, tb_builtin(tb, "print")));
	tb_emit(tb, I(RETURN, 0, 0, 0));

	vm = t_attach(test, tb, h, 0);
	KUNIT_EXPECT_EQ(test, ktap_vm_fire(vm, h->fn, &fe.ev), 0);
	KUNIT_EXPECT_STREQ(test, fake_text(h),
			   "p\t[tp]\tq\ttp(a: 1)\n5 [tp]|    ab!\ntp(a: 1)\n");

	/* in NMI the second event of the first line cannot be formatted */
	seq_buf_clear(&h->out);
	fe.nmi = true;
	KUNIT_EXPECT_LT(test, ktap_vm_fire(vm, h->fn, &fe.ev), 0);
	KUNIT_EXPECT_NOT_NULL(test, strstr(fake_text(h),
					   "cannot format event tp in NMI context"));
}

static void t_event_errors(struct kunit *test)
{
	struct fake_event fe = { .ev = { .ops = &fe_ops, .name = "ev" } };
	struct fake_host *h = fake_new(test);
	struct tb *tb = tb_new(test);
	struct ktap_vm_stats st;
	struct ktap_vm *vm;

	tb->hdr.nglobals = 1;
	tb_main_attach(tb, KTAP_PROBE_TRACEPOINT);
	tb_func(tb, 0, 1, 4);
	tb_emit(tb, IBX(SETGLOBAL, 0, 0));	/* storing the event fails */
	tb_emit(tb, I(RETURN, 0, 0, 0));

	vm = t_attach(test, tb, h, 0);
	KUNIT_EXPECT_EQ(test, ktap_vm_fire(vm, h->fn, &fe.ev), -EINVAL);
	KUNIT_EXPECT_STREQ(test, fake_text(h),
			   "ktap: error: test.kp:1: an event can only be used while its handler runs\n");
	KUNIT_EXPECT_EQ(test, h->exits, 1);
	/* halted: later firings are skipped */
	KUNIT_EXPECT_EQ(test, ktap_vm_fire(vm, h->fn, &fe.ev), -ESHUTDOWN);
	ktap_vm_stats(vm, &st);
	KUNIT_EXPECT_EQ(test, st.hits, 1);
	KUNIT_EXPECT_EQ(test, st.errors, 1);
}

static void t_event_nofield(struct kunit *test)
{
	struct fake_event fe = { .ev = { .ops = &fe_ops, .name = "ev" } };
	struct fake_host *h = fake_new(test);
	struct tb *tb = tb_new(test);
	struct ktap_vm *vm;

	tb_main_attach(tb, KTAP_PROBE_TRACEPOINT);
	tb_func(tb, 0, 1, 4);
	tb->line = 5;
	tb_emit(tb, I(GETFIELD, 1, 0, tb_kstr(tb, "nope")));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	vm = t_attach(test, tb, h, 0);
	KUNIT_EXPECT_EQ(test, ktap_vm_fire(vm, h->fn, &fe.ev), -EINVAL);
	KUNIT_EXPECT_STREQ(test, fake_text(h),
			   "ktap: error: test.kp:5: event has no field 'nope'\n");
}

/* `while (1) {}` in a handler ends with the budget error. */
static void t_budget_handler(struct kunit *test)
{
	struct fake_host *h = fake_new(test);
	struct tb *tb = tb_new(test);
	struct ktap_vm *vm;

	tb_main_attach(tb, KTAP_PROBE_TIMER);
	tb_func(tb, 0, 0, 1);
	tb->line = 2;
	tb_emit(tb, IBX(JMP, 0, -1));
	vm = t_attach(test, tb, h, 5000);
	KUNIT_EXPECT_EQ(test, ktap_vm_fire(vm, h->fn, NULL), -EINVAL);
	KUNIT_EXPECT_STREQ(test, fake_text(h),
			   "ktap: error: test.kp:2: instruction budget exceeded (5000)\n");
}

/* The same in the main chunk: preemptible, ends with the error too. */
static void t_budget_main(struct kunit *test)
{
	struct tb *tb = tb_new(test);
	int ret;

	tb->line = 4;
	tb_emit(tb, IBX(JMP, 0, -1));
	KUNIT_EXPECT_STREQ(test, t_run(test, tb, &ret),
			   "ktap: error: test.kp:4: instruction budget exceeded (100000000)\n");
	KUNIT_EXPECT_EQ(test, ret, -EINVAL);
}

/* A conditional branch to itself is a loop like any other: charged. */
static void t_budget_branch(struct kunit *test)
{
	struct fake_event fe = { .ev = { .ops = &fe_ops, .name = "ev" } };
	struct fake_host *h = fake_new(test);
	struct tb *tb = tb_new(test);
	struct ktap_vm *vm;

	tb_main_attach(tb, KTAP_PROBE_TIMER);
	tb_func(tb, 0, 1, 8);
	tb->line = 3;
	tb_emit(tb, I(LOADBOOL, 1, 1, 0));
	tb_emit(tb, IBX(JMPT, 1, -1));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	vm = t_attach(test, tb, h, 1000);
	KUNIT_EXPECT_EQ(test, ktap_vm_fire(vm, h->fn, &fe.ev), -EINVAL);
	KUNIT_EXPECT_STREQ(test, fake_text(h),
			   "ktap: error: test.kp:3: instruction budget exceeded (1000)\n");
}

/* One ktap_vm_fire() in hardirq context, as a timer or perf event runs it. */
struct throttle_fire {
	struct irq_work		work;
	struct ktap_vm		*vm;
	struct ktap_closure	*fn;
	struct ktap_event	*ev;
	int			ret;
};

static void throttle_fire_irq(struct irq_work *work)
{
	struct throttle_fire *tf = container_of(work, struct throttle_fire, work);

	tf->ret = ktap_vm_fire(tf->vm, tf->fn, tf->ev);
}

static int throttle_fire_hardirq(struct throttle_fire *tf)
{
	tf->ret = -ENOENT;
	irq_work_queue(&tf->work);
	irq_work_sync(&tf->work);
	return tf->ret;
}

/*
 * Runs in interrupt context that come close to their budget, back to
 * back, use up the CPU's share: ktap_vm_fire() then skips them and
 * counts each skip. The same runs in task context are the firing
 * task's own time and are never skipped.
 */
static void t_throttle(struct kunit *test)
{
	struct fake_event fe = { .ev = { .ops = &fe_ops, .name = "ev" } };
	struct fake_host *h = fake_new(test);
	struct tb *tb = tb_new(test);
	struct throttle_fire tf = {
		.work = IRQ_WORK_INIT_HARD(throttle_fire_irq),
		.ev = &fe.ev,
	};
	struct ktap_vm_stats st;
	struct ktap_vm *vm;
	int i, r = 0, runs = 0;

	tb_main_attach(tb, KTAP_PROBE_TIMER);
	tb_func(tb, 0, 1, 10);
	/* for i = 1, 1000 do for j = 1, 75 do end end: 307,000 units */
	tb_emit(tb, IBX(LOADI, 1, 1));
	tb_emit(tb, IBX(LOADI, 2, 1000));
	tb_emit(tb, IBX(LOADI, 7, 75));
	tb_emit(tb, I(LE, 4, 1, 2));
	tb_emit(tb, IBX(JMPF, 4, 7));
	tb_emit(tb, IBX(LOADI, 5, 1));
	tb_emit(tb, I(LE, 6, 5, 7));
	tb_emit(tb, IBX(JMPF, 6, 2));
	tb_emit(tb, I(ADDK, 5, 5, tb_kint(tb, 1)));
	tb_emit(tb, IBX(JMP, 0, -4));
	tb_emit(tb, I(ADDK, 1, 1, tb_kint(tb, 1)));
	tb_emit(tb, IBX(JMP, 0, -9));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	vm = t_attach(test, tb, h, KTAP_MAX_INSN_BUDGET);
	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_EQ(test, ktap_vm_fire(vm, h->fn, &fe.ev), 0);
	ktap_vm_stats(vm, &st);
	KUNIT_EXPECT_EQ(test, st.throttled, 0);

	tf.vm = vm;
	tf.fn = h->fn;
	for (i = 0; i < 2000; i++) {
		r = throttle_fire_hardirq(&tf);
		if (r)
			break;
		runs++;
	}
	KUNIT_EXPECT_EQ(test, r, -EBUSY);
	KUNIT_EXPECT_GT(test, runs, 0);
	KUNIT_EXPECT_STREQ(test, fake_text(h), "");
	ktap_vm_stats(vm, &st);
	KUNIT_EXPECT_EQ(test, st.throttled, 1);
	KUNIT_EXPECT_EQ(test, st.hits, 4 + runs);
	KUNIT_EXPECT_EQ(test, st.recursion, 0);
}

/*
 * END handlers share one budget: the first that loops spends it, the
 * others are skipped, so STOP takes one handler run however many the
 * main chunk recorded.
 */
static void t_end_budget(struct kunit *test)
{
	struct fake_event fe = { .ev = { .ops = &fe_ops, .name = "end" } };
	struct fake_host *h = fake_new(test);
	struct tb *tb = tb_new(test);
	struct ktap_vm *vm;
	s64 budget = 1000;

	tb_main_attach(tb, KTAP_PROBE_END);
	tb_func(tb, 0, 1, 2);
	tb->line = 2;
	tb_emit(tb, IBX(JMP, 0, -1));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	vm = t_attach(test, tb, h, 1000);
	KUNIT_EXPECT_EQ(test, ktap_vm_fire_end(vm, h->fn, &fe.ev, &budget),
			-EINVAL);
	KUNIT_EXPECT_LT(test, budget, 0);
	KUNIT_EXPECT_EQ(test, ktap_vm_fire_end(vm, h->fn, &fe.ev, &budget),
			-E2BIG);
	KUNIT_EXPECT_STREQ(test, fake_text(h),
			   "ktap: error: test.kp:2: instruction budget exceeded (1000)\n");
}

/* The budget has a ceiling: a handler's time in probe context is bounded. */
static void t_budget_ceiling(struct kunit *test)
{
	struct ktap_vm_opts opts = { .insn_budget = KTAP_MAX_INSN_BUDGET + 1 };
	struct tb *tb = tb_valid(test);
	struct ktap_vm *vm;
	char log[128];

	tb_build(test, tb);
	vm = ktap_vm_load(tb->img, tb->len, &opts, &fake_ops, NULL, log,
			  sizeof(log));
	KUNIT_EXPECT_EQ(test, PTR_ERR(vm), -E2BIG);
	KUNIT_EXPECT_STREQ(test, log,
			   "options (1000001 > 1000000): instruction budget above KTAP_MAX_INSN_BUDGET");
	opts.insn_budget = KTAP_MAX_INSN_BUDGET;
	vm = ktap_vm_load(tb->img, tb->len, &opts, &fake_ops, NULL, log,
			  sizeof(log));
	KUNIT_ASSERT_FALSE(test, IS_ERR(vm));
	ktap_vm_free(vm);
}

/*
 * The flags column gives every opcode with a jump target a way to take
 * it, and none to an opcode without one; ktap_insn_successors() follows.
 */
static void t_successors(struct kunit *test)
{
	s64 next[KTAP_MAX_SUCCESSORS];
	u32 op, n;

	for (op = 0; op < KTAP_OP__COUNT; op++) {
		const struct ktap_opinfo *info = &ktap_opinfo[op];
		bool jumps = info->kind[1] == KTAP_OPK_JUMP;
		u8 f = info->flags;

		KUNIT_EXPECT_EQ_MSG(test, jumps,
				    !!(f & (KTAP_OPF_GOTO | KTAP_OPF_BRANCH)),
				    "%s", info->name);
		KUNIT_EXPECT_FALSE_MSG(test, (f & KTAP_OPF_GOTO) &&
				       (f & KTAP_OPF_BRANCH), "%s", info->name);
		n = ktap_insn_successors(KTAP_INSN_BX(op, 0, -5), 10, next);
		KUNIT_EXPECT_LE(test, n, KTAP_MAX_SUCCESSORS);
		if (f & KTAP_OPF_END)
			KUNIT_EXPECT_EQ_MSG(test, n, 0, "%s", info->name);
		else if (f & KTAP_OPF_GOTO)
			KUNIT_EXPECT_TRUE_MSG(test, n == 1 && next[0] == 6,
					      "%s", info->name);
		else if (f & KTAP_OPF_BRANCH)
			KUNIT_EXPECT_TRUE_MSG(test, n == 2 && next[0] == 11 &&
					      next[1] == 6, "%s", info->name);
		else
			KUNIT_EXPECT_TRUE_MSG(test, n == 1 && next[0] == 11,
					      "%s", info->name);
	}
}

/* Main: g0 = { 1..1000 }; attach proto 1 to a timer probe. */
static void tb_main_seq(struct tb *tb, int n)
{
	tb_probe(tb, KTAP_PROBE_TIMER);
	tb_emit(tb, I(NEWTABLE, 0, 0, 0));
	tb_emit(tb, IBX(LOADI, 1, 1));
	tb_emit(tb, IBX(LOADI, 2, n));
	tb_emit(tb, I(LE, 3, 1, 2));
	tb_emit(tb, IBX(JMPF, 3, 3));
	tb_emit(tb, I(SETTABLE, 0, 1, 1));
	tb_emit(tb, I(ADDK, 1, 1, tb_kint(tb, 1)));
	tb_emit(tb, IBX(JMP, 0, -5));
	tb_emit(tb, IBX(SETGLOBAL, 0, 0));
	tb_emit(tb, IBX(CLOSURE, 0, 1));
	tb_emit(tb, IBX(ATTACH, 0, 0));
	tb_emit(tb, I(RETURN, 0, 0, 0));
}

/* #t walks the sequence: each key looked at is charged. */
static void t_budget_len(struct kunit *test)
{
	struct fake_event fe = { .ev = { .ops = &fe_ops, .name = "ev" } };
	struct fake_host *h = fake_new(test);
	struct tb *tb = tb_new(test);
	struct ktap_vm *vm;

	tb->hdr.nglobals = 1;
	tb_main_seq(tb, 1000);
	tb_func(tb, 0, 1, 8);
	tb->line = 5;
	tb_emit(tb, IBX(GETGLOBAL, 1, 0));
	tb_emit(tb, I(LEN, 3, 1, 0));
	tb_emit(tb, I(CALLB, 2, 1, tb_builtin(tb, "print")));
	tb_emit(tb, I(MOVE, 3, 1, 0));
	tb_emit(tb, I(CALLB, 2, 1, tb_builtin(tb, "pairs")));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	vm = t_attach(test, tb, h, 5000);
	KUNIT_EXPECT_EQ(test, ktap_vm_fire(vm, h->fn, &fe.ev), 0);
	KUNIT_EXPECT_STREQ(test, fake_text(h), "1000\n");
	vm->insn_budget = 900;
	KUNIT_EXPECT_EQ(test, ktap_vm_fire(vm, h->fn, &fe.ev), -EINVAL);
	KUNIT_EXPECT_STREQ(test, fake_text(h),
			   "1000\nktap: error: test.kp:5: instruction budget exceeded (900)\n");
}

/*
 * Snapshots, sorted snapshots, statistic reads, tables, closures and
 * strings a handler makes die with its firing: the pool stays the same.
 */
static void t_temp_constant_memory(struct kunit *test)
{
	struct fake_event fe = { .ev = { .ops = &fe_ops, .name = "ev" } };
	struct fake_host *h = fake_new(test);
	struct tb *tb = tb_new(test);
	struct ktap_vm_stats st1, st2;
	struct ktap_vm *vm;
	int i;

	tb->hdr.nglobals = 1;
	tb_main_seq(tb, 1000);
	tb_func(tb, 0, 1, 12);
	tb_emit(tb, IBX(GETGLOBAL, 1, 0));
	tb_emit(tb, I(MOVE, 3, 1, 0));
	tb_emit(tb, I(CALLB, 2, 1, tb_builtin(tb, "pairs")));
	tb_emit(tb, I(MOVE, 4, 1, 0));
	tb_emit(tb, I(CALLB, 3, 1, tb_builtin(tb, "sort_pairs")));
	tb_emit(tb, I(NEWTABLE, 4, 0, 0));
	tb_emit(tb, IBX(LOADI, 5, 1));
	tb_emit(tb, I(SETTABLE, 4, 5, 1));	/* t2[1] = t: temp table */
	tb_emit(tb, IBX(LOADK, 5, tb_kstr(tb, "ab")));
	tb_emit(tb, I(CONCAT, 5, 5, 5));
	tb_emit(tb, I(CONCAT, 5, 5, 5));
	tb_emit(tb, IBX(CLOSURE, 6, 2));
	tb_emit(tb, I(MOVE, 8, 1, 0));
	tb_emit(tb, I(MOVE, 9, 6, 0));
	tb_emit(tb, I(CALLB, 7, 2, tb_builtin(tb, "sort_pairs")));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	tb_func(tb, 1, 2, 3);		/* function (a, b) return a < b end */
	tb_emit(tb, I(LT, 2, 0, 1));
	tb_emit(tb, I(RETURN, 2, 1, 0));
	vm = t_attach(test, tb, h, KTAP_MAX_INSN_BUDGET);
	KUNIT_ASSERT_EQ_MSG(test, ktap_vm_fire(vm, h->fn, &fe.ev), 0, "%s",
			    fake_text(h));
	ktap_vm_stats(vm, &st1);
	for (i = 0; i < 100; i++)
		KUNIT_ASSERT_EQ_MSG(test, ktap_vm_fire(vm, h->fn, &fe.ev), 0,
				    "%s", fake_text(h));
	ktap_vm_stats(vm, &st2);
	KUNIT_EXPECT_EQ(test, st2.mem_used, st1.mem_used);
	KUNIT_EXPECT_STREQ(test, fake_text(h), "");
}

/* What a firing made in its arena cannot be kept beyond it. */
static void t_temp_store_refused(struct kunit *test)
{
	struct fake_event fe = { .ev = { .ops = &fe_ops, .name = "ev" } };
	struct fake_host *h = fake_new(test);
	struct tb *tb = tb_new(test);
	struct ktap_vm *vm;

	tb->hdr.nglobals = 1;
	tb_main_attach(tb, KTAP_PROBE_TIMER);
	tb_func(tb, 0, 1, 4);
	tb->line = 7;
	tb_emit(tb, I(NEWTABLE, 1, 0, 0));
	tb_emit(tb, IBX(SETGLOBAL, 1, 0));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	vm = t_attach(test, tb, h, 0);
	KUNIT_EXPECT_EQ(test, ktap_vm_fire(vm, h->fn, &fe.ev), -EINVAL);
	KUNIT_EXPECT_STREQ(test, fake_text(h),
			   "ktap: error: test.kp:7: a table, function or iterator created by a handler cannot be kept beyond its run\n");
	KUNIT_EXPECT_EQ(test, vm->globals[0].type, KTAP_TNIL);
}

/* A handler exactly within budget completes. */
static void t_budget_exact(struct kunit *test)
{
	struct fake_host *h = fake_new(test);
	struct tb *tb = tb_new(test);
	struct ktap_vm *vm;

	tb_main_attach(tb, KTAP_PROBE_TIMER);
	tb_func(tb, 0, 0, 1);
	tb_emit(tb, IBX(LOADI, 0, 1));
	tb_emit(tb, IBX(LOADI, 0, 2));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	vm = t_attach(test, tb, h, 3);
	KUNIT_EXPECT_EQ(test, ktap_vm_fire(vm, h->fn, NULL), 0);
	vm->insn_budget = 2;
	KUNIT_EXPECT_EQ(test, ktap_vm_fire(vm, h->fn, NULL), -EINVAL);
}

/* Handlers on all CPUs at once: counts stay exact, keys interned once. */
struct stress {
	struct ktap_vm		*vm;
	struct ktap_closure	*fn;
	int			loops;
	int			errs;
	struct completion	done;
};

static int stress_thread(void *arg)
{
	struct stress *st = arg;
	int i;

	for (i = 0; i < st->loops; i++) {
		if (ktap_vm_fire(st->vm, st->fn, NULL))
			st->errs++;
		if (!(i % 256))
			cond_resched();
	}
	complete(&st->done);
	return 0;
}

static void t_concurrency(struct kunit *test)
{
	struct fake_host *h = fake_new(test);
	struct tb *tb = tb_new(test);
	struct ktap_exec x = { .main = true };
	struct ktap_value key, out;
	struct stress *st;
	struct ktap_vm *vm;
	int n = num_online_cpus() + 1, k, loops = 20000;
	s64 total = 0;

	tb->hdr.nglobals = 2;
	tb_probe(tb, KTAP_PROBE_TIMER);
	tb_emit(tb, I(NEWTABLE, 0, 0, 0));
	tb_emit(tb, IBX(SETGLOBAL, 0, 0));
	tb_emit(tb, I(CALLB, 0, 0, tb_builtin(tb, "ptable")));
	tb_emit(tb, IBX(SETGLOBAL, 0, 1));
	tb_emit(tb, IBX(CLOSURE, 1, 1));
	tb_emit(tb, IBX(ATTACH, 1, 0));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	tb_func(tb, 0, 0, 6);
	tb_emit(tb, IBX(GETGLOBAL, 0, 0));
	tb_emit(tb, IBX(LOADK, 1, tb_kstr(tb, "k")));
	tb_emit(tb, IBX(LOADI, 2, 1));
	tb_emit(tb, I(INCTABLE, 0, 1, 2));	/* t.k += 1 */
	tb_emit(tb, IBX(LOADK, 3, tb_kstr(tb, "cpu")));
	tb_emit(tb, I(CALLB, 4, 0, tb_builtin(tb, "cpu")));
	tb_emit(tb, I(CONCAT, 5, 3, 4));	/* a temporary key */
	tb_emit(tb, I(INCTABLE, 0, 5, 2));	/* t["cpu" .. cpu()] += 1 */
	tb_emit(tb, IBX(GETGLOBAL, 0, 1));
	tb_emit(tb, IBX(LOADI, 2, 3));
	tb_emit(tb, I(AGGR, 0, 1, 2));		/* s.k <<< 3 */
	tb_emit(tb, I(RETURN, 0, 0, 0));
	vm = t_attach(test, tb, h, 0);

	st = kunit_kcalloc(test, n, sizeof(*st), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, st);
	for (k = 0; k < n; k++) {
		st[k] = (struct stress){ .vm = vm, .fn = h->fn, .loops = loops };
		init_completion(&st[k].done);
		KUNIT_ASSERT_FALSE(test, IS_ERR(kthread_run(stress_thread, &st[k],
							    "ktap_stress/%d", k)));
	}
	for (k = 0; k < n; k++) {
		wait_for_completion(&st[k].done);
		KUNIT_EXPECT_EQ(test, st[k].errs, 0);
	}
	ktap_value_str(vm, &key, "k", 1);
	ktap_table_get(vm, vm->globals[0].p, &key, &out);
	KUNIT_EXPECT_EQ(test, out.type, KTAP_TINT);
	KUNIT_EXPECT_EQ(test, out.i, (s64)n * loops);
	for_each_possible_cpu(k) {
		char name[16];

		snprintf(name, sizeof(name), "cpu%d", k);
		ktap_value_str(vm, &key, name, strlen(name));
		ktap_table_get(vm, vm->globals[0].p, &key, &out);
		if (out.type == KTAP_TINT)
			total += out.i;
	}
	KUNIT_EXPECT_EQ(test, total, (s64)n * loops);
	ktap_value_str(vm, &key, "k", 1);
	x.vm = vm;
	x.budget = KTAP_MAX_INSN_BUDGET;
	KUNIT_ASSERT_EQ(test, ktap_ptable_get(&x, vm->globals[1].p, &key, &out), 0);
	KUNIT_ASSERT_EQ(test, out.type, KTAP_TSTAT);
	KUNIT_EXPECT_EQ(test, ((struct ktap_stat *)out.p)->count, (s64)n * loops);
	KUNIT_EXPECT_EQ(test, ((struct ktap_stat *)out.p)->sum, (s64)3 * n * loops);
	KUNIT_EXPECT_EQ(test, ((struct ktap_stat *)out.p)->max, 3);
	KUNIT_EXPECT_STREQ(test, fake_text(h), "");
}

/* Concurrent `+=` on new keys while both table parts grow. */
static void t_concurrency_growth(struct kunit *test)
{
	struct fake_host *h = fake_new(test);
	struct tb *tb = tb_new(test);
	int n = num_online_cpus() + 1, k, loops = 1000, j;
	struct ktap_value key, out;
	struct stress *st;
	struct ktap_vm *vm;
	char name[16];

	tb->hdr.nglobals = 1;
	tb_probe(tb, KTAP_PROBE_TIMER);
	tb_emit(tb, I(NEWTABLE, 0, 0, 0));
	tb_emit(tb, IBX(SETGLOBAL, 0, 0));
	tb_emit(tb, IBX(CLOSURE, 1, 1));
	tb_emit(tb, IBX(ATTACH, 1, 0));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	/* for (j = 1, 200) { t[j] += 1; t["s" .. j] += 1 } */
	tb_func(tb, 0, 0, 10);
	tb_emit(tb, IBX(GETGLOBAL, 0, 0));
	tb_emit(tb, IBX(LOADI, 1, 1));
	tb_emit(tb, IBX(LOADI, 2, 1));
	tb_emit(tb, IBX(LOADI, 3, 200));
	tb_emit(tb, IBX(LOADK, 7, tb_kstr(tb, "s")));
	tb_emit(tb, I(LE, 4, 2, 3));
	tb_emit(tb, IBX(JMPF, 4, 5));
	tb_emit(tb, I(INCTABLE, 0, 2, 1));
	tb_emit(tb, I(CONCAT, 8, 7, 2));
	tb_emit(tb, I(INCTABLE, 0, 8, 1));
	tb_emit(tb, I(ADD, 2, 2, 1));
	tb_emit(tb, IBX(JMP, 0, -7));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	vm = t_attach(test, tb, h, 0);

	st = kunit_kcalloc(test, n, sizeof(*st), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, st);
	for (k = 0; k < n; k++) {
		st[k] = (struct stress){ .vm = vm, .fn = h->fn, .loops = loops };
		init_completion(&st[k].done);
		KUNIT_ASSERT_FALSE(test, IS_ERR(kthread_run(stress_thread, &st[k],
							    "ktap_grow/%d", k)));
	}
	for (k = 0; k < n; k++) {
		wait_for_completion(&st[k].done);
		KUNIT_EXPECT_EQ(test, st[k].errs, 0);
	}
	for (j = 1; j <= 200; j++) {
		ktap_value_int(&key, j);
		ktap_table_get(vm, vm->globals[0].p, &key, &out);
		KUNIT_EXPECT_EQ(test, out.i, (s64)n * loops);
		snprintf(name, sizeof(name), "s%d", j);
		ktap_value_str(vm, &key, name, strlen(name));
		ktap_table_get(vm, vm->globals[0].p, &key, &out);
		KUNIT_EXPECT_EQ(test, out.i, (s64)n * loops);
	}
	KUNIT_EXPECT_STREQ(test, fake_text(h), "");
}

/*
 * Not a pass/fail test: prints the cost of one firing for the shapes
 * make bench measures end to end (empty handler, count by key, <<<).
 */
static void t_speed(struct kunit *test)
{
	static const char * const names[] = { "empty", "t[k] += 1", "s[k] <<< 7",
					      "execname()", "t.c += 1", "1 + 1" };
	struct fake_host *h;
	struct ktap_vm *vm;
	struct tb *tb;
	int shape, i, loops = 100000;
	u64 t0;

	for (shape = 0; shape < ARRAY_SIZE(names); shape++) {
		h = fake_new(test);
		tb = tb_new(test);
		tb->hdr.nglobals = 1;
		tb_probe(tb, KTAP_PROBE_TIMER);
		tb_emit(tb, I(NEWTABLE, 0, 0, 0));
		if (shape == 2)
			tb_emit(tb, I(CALLB, 0, 0, tb_builtin(tb, "ptable")));
		tb_emit(tb, IBX(SETGLOBAL, 0, 0));
		tb_emit(tb, IBX(CLOSURE, 1, 1));
		tb_emit(tb, IBX(ATTACH, 1, 0));
		tb_emit(tb, I(RETURN, 0, 0, 0));
		tb_func(tb, 0, 1, 4);
		if (shape == 1 || shape == 2) {
			tb_emit(tb, IBX(GETGLOBAL, 1, 0));
			tb_emit(tb, I(CALLB, 2, 0, tb_builtin(tb, "execname")));
			tb_emit(tb, IBX(LOADI, 3, shape == 1 ? 1 : 7));
			tb_emit(tb, shape == 1 ? I(INCTABLE, 1, 2, 3) : I(AGGR, 1, 2, 3));
		} else if (shape == 3) {
			tb_emit(tb, I(CALLB, 2, 0, tb_builtin(tb, "execname")));
		} else if (shape == 4) {
			tb_emit(tb, IBX(GETGLOBAL, 1, 0));
			tb_emit(tb, IBX(LOADK, 2, tb_kstr(tb, "c")));
			tb_emit(tb, IBX(LOADI, 3, 1));
			tb_emit(tb, I(INCTABLE, 1, 2, 3));
		} else if (shape == 5) {
			tb_emit(tb, IBX(LOADI, 3, 1));
			tb_emit(tb, I(ADD, 2, 3, 3));
		}
		tb_emit(tb, I(RETURN, 0, 0, 0));
		vm = t_attach(test, tb, h, 0);
		t0 = ktime_get_ns();
		for (i = 0; i < loops; i++)
			ktap_vm_fire(vm, h->fn, NULL);
		kunit_info(test, "%-12s %llu ns per firing\n", names[shape],
			   div_u64(ktime_get_ns() - t0, loops));
	}
}

/* A probe firing inside ktap (here: from output) is counted, skipped. */
static void t_recursion(struct kunit *test)
{
	struct fake_host *h = fake_new(test);
	struct tb *tb = tb_new(test);
	struct ktap_vm_stats st;
	struct ktap_vm *vm;

	tb_main_attach(tb, KTAP_PROBE_TIMER);
	tb_func(tb, 0, 0, 3);
	tb_emit(tb, IBX(LOADK, 2, tb_kstr(tb, "hit")));
	tb_emit(tb, I(CALLB, 1, 1, tb_builtin(tb, "print")));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	vm = t_attach(test, tb, h, 0);
	h->recurse = true;
	KUNIT_EXPECT_EQ(test, ktap_vm_fire(vm, h->fn, NULL), 0);
	KUNIT_EXPECT_EQ(test, h->recurse_ret, -EBUSY);
	KUNIT_EXPECT_STREQ(test, fake_text(h), "hit\n");
	ktap_vm_stats(vm, &st);
	KUNIT_EXPECT_EQ(test, st.recursion, 1);
	KUNIT_EXPECT_EQ(test, st.hits, 1);
	/* the guard is released: the next firing runs */
	KUNIT_EXPECT_EQ(test, ktap_vm_fire(vm, h->fn, NULL), 0);
	KUNIT_EXPECT_STREQ(test, fake_text(h), "hit\nhit\n");
}

/*
 * exit() halts; END handlers (ktap_vm_fire_end()) and runs without an
 * event still run afterwards, other handlers do not.
 */
static void t_exit(struct kunit *test)
{
	struct fake_host *h = fake_new(test);
	struct tb *tb = tb_new(test);
	struct ktap_event end = { .probe = 1 };
	struct ktap_closure *fn;
	struct ktap_vm *vm;
	s64 budget = 1000;

	tb_probe(tb, KTAP_PROBE_TIMER);
	tb_probe(tb, KTAP_PROBE_END);
	tb_emit(tb, IBX(CLOSURE, 0, 1));
	tb_emit(tb, IBX(ATTACH, 0, 0));
	tb_emit(tb, I(CALLB, 1, 0, tb_builtin(tb, "exit")));
	tb_print(tb, 0);			/* not reached */
	tb_emit(tb, I(RETURN, 0, 0, 0));
	tb_func(tb, 0, 0, 3);
	tb_emit(tb, IBX(LOADK, 2, tb_kstr(tb, "end")));
	tb_emit(tb, I(CALLB, 1, 1, tb_builtin(tb, "print")));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	vm = t_load(test, tb, h, 0);
	KUNIT_EXPECT_EQ(test, ktap_vm_run_main(vm), 0);
	KUNIT_EXPECT_EQ(test, h->exits, 1);
	fn = h->fn;
	KUNIT_EXPECT_EQ(test, ktap_vm_fire(vm, fn, NULL), 0);
	KUNIT_EXPECT_EQ(test, ktap_vm_fire_end(vm, fn, &end, &budget), 0);
	end.probe = 0;
	KUNIT_EXPECT_EQ(test, ktap_vm_fire(vm, fn, &end), -ESHUTDOWN);
	KUNIT_EXPECT_STREQ(test, fake_text(h), "end\nend\n");
}

/*
 * local n = 5; attach(function () { print(n) }); sleep(250); n = 6:
 * the handler runs during the sleep and sees 5; the upvalue was closed
 * before the wait, so the main chunk's later write to its register
 * (unsynchronised with handlers) is not what the handler reads. A
 * handler that calls sleep() gets a runtime error; a signal during the
 * wait halts the main chunk.
 */
static void t_sleep(struct kunit *test)
{
	struct fake_host *h = fake_new(test);
	struct tb *tb = tb_new(test);
	struct ktap_vm *vm;

	tb_probe(tb, KTAP_PROBE_TIMER);
	tb_emit(tb, IBX(LOADI, 0, 5));
	tb_emit(tb, IBX(CLOSURE, 1, 1));
	tb_emit(tb, IBX(ATTACH, 1, 0));
	tb_emit(tb, IBX(LOADI, 3, 250));
	tb_emit(tb, I(CALLB, 2, 1, tb_builtin(tb, "sleep")));
	tb_emit(tb, IBX(LOADI, 0, 6));
	tb_print(tb, 0);
	tb_emit(tb, I(RETURN, 0, 0, 0));
	tb_func(tb, 0, 0, 3);
	tb_upval(tb, 1, 0);
	tb_emit(tb, I(GETUPVAL, 2, 0, 0));
	tb_emit(tb, I(CALLB, 1, 1, tb_builtin(tb, "print")));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	vm = t_load(test, tb, h, 0);
	h->vm = vm;
	KUNIT_EXPECT_EQ(test, ktap_vm_run_main(vm), 0);
	KUNIT_EXPECT_EQ(test, h->sleeps, 1);
	KUNIT_EXPECT_EQ(test, h->slept_ms, 250);
	KUNIT_EXPECT_EQ(test, h->sleep_fire_ret, 0);
	KUNIT_EXPECT_EQ(test, ktap_vm_fire(vm, h->fn, NULL), 0);
	KUNIT_EXPECT_STREQ(test, fake_text(h), "5\n6\n5\n");

	/* the second proto as a handler: sleep() is for the main chunk */
	h = fake_new(test);
	tb = tb_new(test);
	tb_probe(tb, KTAP_PROBE_TIMER);
	tb_emit(tb, IBX(CLOSURE, 0, 1));
	tb_emit(tb, IBX(ATTACH, 0, 0));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	tb_func(tb, 0, 0, 3);
	tb_emit(tb, IBX(LOADI, 2, 1));
	tb_emit(tb, I(CALLB, 1, 1, tb_builtin(tb, "sleep")));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	vm = t_load(test, tb, h, 0);
	KUNIT_EXPECT_EQ(test, ktap_vm_run_main(vm), 0);
	KUNIT_EXPECT_EQ(test, ktap_vm_fire(vm, h->fn, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, h->sleeps, 0);
	KUNIT_EXPECT_NOT_NULL(test, strstr(fake_text(h),
					   "sleep() only works in the main chunk"));

	/* a signal during the wait ends the main chunk as exit() does */
	h = fake_new(test);
	h->sleep_ret = -EINTR;
	tb = tb_new(test);
	tb_emit(tb, IBX(LOADI, 3, 10));
	tb_emit(tb, I(CALLB, 2, 1, tb_builtin(tb, "sleep")));
	tb_print(tb, 3);			/* not reached */
	tb_emit(tb, I(RETURN, 0, 0, 0));
	vm = t_load(test, tb, h, 0);
	KUNIT_EXPECT_EQ(test, ktap_vm_run_main(vm), 0);
	KUNIT_EXPECT_EQ(test, h->sleeps, 1);
	KUNIT_EXPECT_EQ(test, h->exits, 1);
	KUNIT_EXPECT_STREQ(test, fake_text(h), "");
}

/* printf conversions. */
struct printf_case {
	const char	*fmt;
	s64		arg;
	const char	*sarg;
	const char	*out;
};

static const struct printf_case printf_cases[] = {
	{ "%d", -42, NULL, "-42" },
	{ "%i|%5d|%-5d|", 7, NULL, "7|    7|7    |" },
	{ "%05d", -42, NULL, "-0042" },
	{ "%+d % d", 5, NULL, "+5  5" },
	{ "%u", -1, NULL, "18446744073709551615" },
	{ "%x %X", 255, NULL, "ff FF" },
	{ "%08x", 0xbeef, NULL, "0000beef" },
	{ "%c%c", 'k', NULL, "kk" },
	{ "%p", 0x1000, NULL, NULL },	/* as the kernel's %p prints it */
	{ "100%%", 0, NULL, "100%" },
	{ "%lld %ld", 9, NULL, "9 9" },
	{ "[%s]", 0, "str", "[str]" },
	{ "[%6s][%-4s]", 0, "ab", "[    ab][ab  ]" },
	{ "[%.2s]", 0, "abcdef", "[ab]" },
	{ "%s", 12, NULL, "12" },
	{ "%d\n", 1, NULL, "1\n" },
};

static void printf_desc(const struct printf_case *c, char *desc)
{
	strscpy(desc, c->fmt, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(printf, printf_cases, printf_desc);

static void t_printf(struct kunit *test)
{
	const struct printf_case *c = test->param_value;
	struct tb *tb = tb_new(test);
	int k, n = 0;

	/* as many copies of the argument as the format has conversions */
	for (k = 0; c->fmt[k]; k++)
		if (c->fmt[k] == '%' && c->fmt[k + 1] != '%')
			n++;
		else if (c->fmt[k] == '%')
			k++;
	tb_emit(tb, IBX(LOADK, 1, tb_kstr(tb, c->fmt)));
	for (k = 0; k < n; k++) {
		if (c->sarg)
			tb_emit(tb, IBX(LOADK, 2 + k, tb_kstr(tb, c->sarg)));
		else
			tb_emit(tb, IBX(LOADK, 2 + k, tb_kint(tb, c->arg)));
	}
	tb_emit(tb, I(CALLB, 0, 1 + n, tb_builtin(tb, "printf")));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	if (!c->out) {
		char hashed[32];

		snprintf(hashed, sizeof(hashed), "%p", (void *)(unsigned long)c->arg);
		KUNIT_EXPECT_STREQ(test, t_run(test, tb, NULL), hashed);
		return;
	}
	KUNIT_EXPECT_STREQ(test, t_run(test, tb, NULL), c->out);
}

/*
 * print_hist(t) (histogram(t) in scripts, which the compiler lowers):
 * the chart of the LWN article, by count, descending.
 */
static void t_histogram(struct kunit *test)
{
	static const char * const keys[] = { "sys_enter_open", "sys_enter_close",
					     "sys_enter_newfstat", "sys_enter_read" };
	static const s64 counts[] = { 40, 20, 20, 1 };
	struct tb *tb = tb_new(test);
	int k;

	tb_emit(tb, I(NEWTABLE, 1, 0, 0));
	for (k = 0; k < ARRAY_SIZE(keys); k++) {
		tb_emit(tb, IBX(LOADK, 2, tb_kstr(tb, keys[k])));
		tb_emit(tb, IBX(LOADK, 3, tb_kint(tb, counts[k])));
		tb_emit(tb, I(INCTABLE, 1, 2, 3));
	}
	tb_emit(tb, I(CALLB, 0, 1, tb_builtin(tb, "print_hist")));
	tb_emit(tb, IBX(LOADI, 2, 2));
	tb_emit(tb, I(CALLB, 0, 2, tb_builtin(tb, "print_hist")));	/* 2 rows */
	tb_emit(tb, IBX(LOADK, 2, tb_kstr(tb, "sys_enter_newfstatat")));
	tb_emit(tb, IBX(LOADK, 3, tb_kint(tb, 19)));
	tb_emit(tb, I(INCTABLE, 1, 2, 3));	/* a longer key widens */
	tb_emit(tb, IBX(LOADI, 2, 4));
	tb_emit(tb, I(CALLB, 0, 2, tb_builtin(tb, "print_hist")));
	tb_emit(tb, I(RETURN, 0, 0, 0));
	KUNIT_EXPECT_STREQ(test, t_run(test, tb, NULL),
			   "            value ------------- Distribution ------------- count\n"
			   "    sys_enter_open |@@@@@@@@@@@@@@@@@@@                    40\n"
			   "   sys_enter_close |@@@@@@@@@                              20\n"
			   "sys_enter_newfstat |@@@@@@@@@                              20\n"
			   "    sys_enter_read |                                       1\n"
			   "            value ------------- Distribution ------------- count\n"
			   "    sys_enter_open |@@@@@@@@@@@@@@@@@@@                    40\n"
			   "   sys_enter_close |@@@@@@@@@                              20\n"
			   "              value ------------- Distribution ------------- count\n"
			   "      sys_enter_open |@@@@@@@@@@@@@@@@                       40\n"
			   "     sys_enter_close |@@@@@@@@                               20\n"
			   "  sys_enter_newfstat |@@@@@@@@                               20\n"
			   "sys_enter_newfstatat |@@@@@@@                                19\n");
}

/* Tables and strings through the object API. */
static struct ktap_vm *t_empty_vm(struct kunit *test, size_t mem)
{
	struct ktap_vm_opts opts = { .mem_limit = mem };
	struct tb *tb = tb_valid(test);
	struct ktap_vm *vm;

	tb_build(test, tb);
	vm = ktap_vm_load(tb->img, tb->len, &opts, &fake_ops, NULL, NULL, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(vm));
	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, ktap_vm_free_action, vm));
	return vm;
}

static void t_table_growth(struct kunit *test)
{
	struct ktap_vm *vm = t_empty_vm(test, 16 << 20);
	struct ktap_table *t = ktap_table_new(vm, 0, 0);
	struct ktap_value k, v, out;
	char name[16];
	s64 n;
	int i;

	KUNIT_ASSERT_NOT_NULL(test, t);
	/* integer keys 2..3000 first: they land in the hash part */
	for (i = 3000; i >= 2; i--) {
		ktap_value_int(&k, i);
		ktap_value_int(&v, i * 2);
		KUNIT_ASSERT_EQ(test, ktap_table_set(vm, t, &k, &v), 0);
	}
	KUNIT_EXPECT_NULL(test, t->arr);
	/* key 1 starts the array part, which pulls 2..n out of the hash */
	ktap_value_int(&k, 1);
	ktap_value_int(&v, 2);
	KUNIT_ASSERT_EQ(test, ktap_table_set(vm, t, &k, &v), 0);
	KUNIT_ASSERT_NOT_NULL(test, t->arr);
	KUNIT_EXPECT_GE(test, t->arr->cap, 4);
	for (i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "key%d", i);
		ktap_value_str(vm, &k, name, strlen(name));
		KUNIT_ASSERT_EQ(test, ktap_table_inc(vm, t, &k, i), 0);
	}
	ktap_table_count(t, &n);
	KUNIT_EXPECT_EQ(test, n, 3000 + 5000);
	KUNIT_EXPECT_EQ(test, ktap_table_len(vm, t, &n, 3000), -E2BIG);
	KUNIT_EXPECT_EQ(test, ktap_table_len(vm, t, &n, 3001), 0);
	KUNIT_EXPECT_EQ(test, n, 3000);
	for (i = 1; i <= 3000; i++) {
		ktap_value_int(&k, i);
		ktap_table_get(vm, t, &k, &out);
		KUNIT_ASSERT_EQ(test, out.type, KTAP_TINT);
		KUNIT_ASSERT_EQ(test, out.i, i * 2);
	}
	for (i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "key%d", i);
		ktap_value_str(vm, &k, name, strlen(name));
		ktap_table_get(vm, t, &k, &out);
		KUNIT_ASSERT_EQ(test, out.i, i);
	}
	/* delete every other string key, then re-add: counts stay right */
	for (i = 0; i < 5000; i += 2) {
		snprintf(name, sizeof(name), "key%d", i);
		ktap_value_str(vm, &k, name, strlen(name));
		ktap_set_nil(&v);
		KUNIT_ASSERT_EQ(test, ktap_table_set(vm, t, &k, &v), 0);
	}
	ktap_table_count(t, &n);
	KUNIT_EXPECT_EQ(test, n, 3000 + 2500);
	ktap_value_str(vm, &k, "key0", 4);
	ktap_table_get(vm, t, &k, &out);
	KUNIT_EXPECT_EQ(test, out.type, KTAP_TNIL);
	ktap_value_str(vm, &k, "never-seen", 10);
	ktap_table_get(vm, t, &k, &out);
	KUNIT_EXPECT_EQ(test, out.type, KTAP_TNIL);
	KUNIT_EXPECT_EQ(test, ktap_table_clear(t), 0);
	ktap_table_count(t, &n);
	KUNIT_EXPECT_EQ(test, n, 0);
}

/* hist() and lhist() buckets at their edges; lhist() bounds checked. */
static void t_agg_buckets(struct kunit *test)
{
	struct ktap_vm *vm = t_empty_vm(test, 0);
	struct ktap_ptable *h, *l;

	h = ktap_ptable_new(vm, KTAP_AGG_LOG2, 0, 0, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(h));
	KUNIT_EXPECT_EQ(test, h->nbuckets, KTAP_LOG2_BUCKETS);
	KUNIT_EXPECT_EQ(test, ktap_agg_bucket(h, S64_MIN), 0);
	KUNIT_EXPECT_EQ(test, ktap_agg_bucket(h, -1), 0);
	KUNIT_EXPECT_EQ(test, ktap_agg_bucket(h, 0), 1);
	KUNIT_EXPECT_EQ(test, ktap_agg_bucket(h, 1), 2);
	KUNIT_EXPECT_EQ(test, ktap_agg_bucket(h, 2), 3);
	KUNIT_EXPECT_EQ(test, ktap_agg_bucket(h, 3), 3);
	KUNIT_EXPECT_EQ(test, ktap_agg_bucket(h, 4), 4);
	KUNIT_EXPECT_EQ(test, ktap_agg_bucket(h, 1023), 11);
	KUNIT_EXPECT_EQ(test, ktap_agg_bucket(h, 1024), 12);
	KUNIT_EXPECT_EQ(test, ktap_agg_bucket(h, S64_MAX), KTAP_LOG2_BUCKETS - 1);

	/* 0..100 by 30: [0,30) [30,60) [60,90) [90,120), below, above */
	l = ktap_ptable_new(vm, KTAP_AGG_LINEAR, 0, 100, 30);
	KUNIT_ASSERT_FALSE(test, IS_ERR(l));
	KUNIT_EXPECT_EQ(test, l->nbuckets, 6);
	KUNIT_EXPECT_EQ(test, ktap_agg_bucket(l, S64_MIN), 0);
	KUNIT_EXPECT_EQ(test, ktap_agg_bucket(l, -1), 0);
	KUNIT_EXPECT_EQ(test, ktap_agg_bucket(l, 0), 1);
	KUNIT_EXPECT_EQ(test, ktap_agg_bucket(l, 29), 1);
	KUNIT_EXPECT_EQ(test, ktap_agg_bucket(l, 30), 2);
	KUNIT_EXPECT_EQ(test, ktap_agg_bucket(l, 119), 4);
	KUNIT_EXPECT_EQ(test, ktap_agg_bucket(l, 120), 5);
	KUNIT_EXPECT_EQ(test, ktap_agg_bucket(l, S64_MAX), 5);
	l = ktap_ptable_new(vm, KTAP_AGG_LINEAR, S64_MIN, S64_MAX,
			    (S64_MAX / (KTAP_LHIST_BUCKETS_MAX - 2)) * 2 + 2);
	KUNIT_ASSERT_FALSE(test, IS_ERR(l));
	KUNIT_EXPECT_EQ(test, ktap_agg_bucket(l, S64_MIN), 1);
	KUNIT_EXPECT_LT(test, ktap_agg_bucket(l, S64_MAX), l->nbuckets);

	KUNIT_EXPECT_EQ(test, PTR_ERR(ktap_ptable_new(vm, KTAP_AGG_LINEAR, 0, 0, 1)),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(ktap_ptable_new(vm, KTAP_AGG_LINEAR, 0, 10, 0)),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(ktap_ptable_new(vm, KTAP_AGG_LINEAR, 0, 10, -1)),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(ktap_ptable_new(vm, KTAP_AGG_LINEAR, 0,
						      KTAP_LHIST_BUCKETS_MAX, 1)),
			-EINVAL);
	KUNIT_EXPECT_FALSE(test, IS_ERR(ktap_ptable_new(vm, KTAP_AGG_LINEAR, 0,
							KTAP_LHIST_BUCKETS_MAX - 2, 1)));
}

static void t_table_oom(struct kunit *test)
{
	struct ktap_vm *vm = t_empty_vm(test, KTAP_MIN_MEM);
	struct ktap_table *t = ktap_table_new(vm, 0, 0);
	struct ktap_value k, v;
	int i, err = 0;

	KUNIT_ASSERT_NOT_NULL(test, t);
	ktap_value_int(&v, 1);
	for (i = 0; i < 100000 && !err; i++) {
		ktap_value_int(&k, -i);
		err = ktap_table_set(vm, t, &k, &v);
	}
	KUNIT_EXPECT_EQ(test, err, -ENOMEM);
	KUNIT_EXPECT_LE(test, atomic_long_read(&vm->pool.used), KTAP_MIN_MEM);
}

static void t_strings(struct kunit *test)
{
	struct ktap_vm *vm = t_empty_vm(test, 0);
	struct ktap_str *a = ktap_str_intern(vm, "hello", 5);
	struct ktap_str *b = ktap_str_intern(vm, "hellox", 5);
	struct ktap_str *c = ktap_str_intern(vm, "world", 5);
	struct ktap_value x, y;
	char name[16];
	int i;

	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_EXPECT_PTR_EQ(test, a, b);
	KUNIT_EXPECT_PTR_NE(test, a, c);
	KUNIT_EXPECT_STREQ(test, a->data, "hello");
	KUNIT_EXPECT_EQ(test, a->len, 5);
	KUNIT_EXPECT_PTR_EQ(test, ktap_str_find(vm, a), a);
	/* outside a handler ktap_value_str interns */
	KUNIT_ASSERT_EQ(test, ktap_value_str(vm, &x, "hello", 5), 0);
	KUNIT_EXPECT_PTR_EQ(test, x.s, a);
	ktap_set_obj(&y, KTAP_TSTR, c);
	KUNIT_EXPECT_FALSE(test, ktap_value_equal(&x, &y));
	/* many strings: all distinct and all found again */
	for (i = 0; i < 2000; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		KUNIT_ASSERT_NOT_NULL(test, ktap_str_intern(vm, name, strlen(name)));
	}
	for (i = 0; i < 2000; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		a = ktap_str_intern(vm, name, strlen(name));
		KUNIT_ASSERT_EQ(test, (int)a->len, (int)strlen(name));
		KUNIT_ASSERT_EQ(test, memcmp(a->data, name, a->len), 0);
		KUNIT_ASSERT_PTR_EQ(test, a, ktap_str_intern(vm, name, strlen(name)));
	}
}

static struct kunit_case ktap_vm_test_cases[] = {
	KUNIT_CASE_PARAM(t_verify_reject, verr_gen_params),
	KUNIT_CASE(t_verify_valid),
	KUNIT_CASE(t_frame_fill),
	KUNIT_CASE(t_fetch_lookup),
	KUNIT_CASE(t_verify_builtin_names),
	KUNIT_CASE(t_verify_hdr_ext),
	KUNIT_CASE(t_verify_mem_limit),
	KUNIT_CASE(t_budget_ceiling),
	KUNIT_CASE(t_successors),
	KUNIT_CASE(t_verify_truncated),
	KUNIT_CASE(t_verify_bitflips),
	KUNIT_CASE_PARAM(t_prog, prog_gen_params),
	KUNIT_CASE_PARAM(t_rterr, rterr_gen_params),
	KUNIT_CASE(t_event),
	KUNIT_CASE(t_event_loads),
	KUNIT_CASE(t_event_deferred),
	KUNIT_CASE(t_event_errors),
	KUNIT_CASE(t_event_nofield),
	KUNIT_CASE(t_budget_handler),
	KUNIT_CASE_SLOW(t_budget_main),
	KUNIT_CASE(t_budget_exact),
	KUNIT_CASE(t_budget_branch),
	KUNIT_CASE(t_throttle),
	KUNIT_CASE(t_end_budget),
	KUNIT_CASE(t_budget_len),
	KUNIT_CASE(t_temp_constant_memory),
	KUNIT_CASE(t_temp_store_refused),
	KUNIT_CASE(t_recursion),
	KUNIT_CASE(t_concurrency),
	KUNIT_CASE(t_concurrency_growth),
	KUNIT_CASE_SLOW(t_speed),
	KUNIT_CASE(t_exit),
	KUNIT_CASE(t_sleep),
	KUNIT_CASE_PARAM(t_printf, printf_gen_params),
	KUNIT_CASE(t_histogram),
	KUNIT_CASE(t_table_growth),
	KUNIT_CASE(t_table_oom),
	KUNIT_CASE(t_agg_buckets),
	KUNIT_CASE(t_strings),
	{}
};

static struct kunit_suite ktap_vm_test_suite = {
	.name = "ktap_vm",
	.test_cases = ktap_vm_test_cases,
};

kunit_test_suite(ktap_vm_test_suite);
