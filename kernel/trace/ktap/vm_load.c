// SPDX-License-Identifier: GPL-2.0
/*
 * ktap VM loader and verifier.
 *
 * ktap_vm_load() copies a bytecode image (include/uapi/linux/ktap.h)
 * into kernel memory and checks all of it in one linear pass before
 * anything runs: header, sections, constants, the builtins the image
 * names (each mapped to the kernel's table by name), function
 * prototypes, the probe table, the fields and fetch sections, every
 * operand of every instruction. The operand
 * checks are one generic loop over the operand kinds that the
 * KTAP_OPCODES X-macro declares, so adding an opcode needs no verifier
 * change.
 *
 * Control flow is checked the same way: ktap_insn_successors() derives
 * every place control can go after an instruction from the opcode
 * flags, and each must lie inside the instruction's function. With the
 * functions tiling the code section exactly, the interpreter can only
 * ever fetch verified words of the function it is running.
 *
 * Rejections come from one error table and name the place, e.g.
 * "proto 2 insn 17 (JMP): jump target out of range".
 *
 * After loading, vm_exec.c runs the program and vm_obj.c provides its
 * objects; ktap_vm_free() releases everything.
 */
#include <linux/cpumask.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include "vm.h"

#define __KTAP_OPINFO(op, fm, a, b, c, fl)				\
	[KTAP_OP_##op] = {						\
		.name = #op, .fmt = KTAP_FMT_##fm, .flags = fl,		\
		.kind = { KTAP_OPK_##a, KTAP_OPK_##b, KTAP_OPK_##c },	\
	},
const struct ktap_opinfo ktap_opinfo[KTAP_OP__COUNT] = {
	KTAP_OPCODES(__KTAP_OPINFO)
};

#undef __KTAP_OPINFO

/* Verifier errors, declared once (the trace_events_hist.c way). */
#define KTAP_VERIFY_ERRORS						\
	C(TOO_BIG,	"image larger than the kernel accepts"),	\
	C(SHORT,	"image shorter than its header"),		\
	C(MAGIC,	"bad magic"),					\
	C(VERSION,	"unsupported ABI version"),			\
	C(HDR_SIZE,	"bad header size"),				\
	C(HDR_TAIL,	"unknown header extension is not zero"),	\
	C(TOTAL_SIZE,	"total_size does not match the image length"),	\
	C(FLAGS,	"unknown flags"),				\
	C(RESERVED,	"reserved field is not zero"),			\
	C(MEM_LIMIT,	"memory limit out of range"),			\
	C(SECTION,	"section out of bounds"),			\
	C(ALIGN,	"section misaligned"),				\
	C(COUNT,	"too many elements"),				\
	C(NGLOBALS,	"too many globals"),				\
	C(NAME,		"string reference out of bounds or unterminated"), \
	C(NO_MAIN,	"no main chunk"),				\
	C(CONST_TYPE,	"unknown constant type"),			\
	C(CONST_STR,	"constant string out of bounds"),		\
	C(CODE_RANGE,	"code range out of bounds"),			\
	C(CODE_COVER,	"functions do not cover the code section exactly, in order"), \
	C(EMPTY,	"function has no code"),			\
	C(NREGS,	"bad frame size"),				\
	C(UPV_RANGE,	"upvalue range out of bounds"),			\
	C(PARENT,	"bad enclosing function"),			\
	C(UPV_DESC,	"upvalue capture out of range of the enclosing function"), \
	C(OPCODE,	"unknown opcode"),				\
	C(NONZERO,	"unused operand is not zero"),			\
	C(REG,		"register out of range"),			\
	C(CONST,	"constant out of range"),			\
	C(KINT,		"constant is not an integer"),			\
	C(KSTR,		"constant is not a string"),			\
	C(UPV,		"upvalue out of range"),			\
	C(GLOBAL,	"global out of range"),				\
	C(PROTO,	"function out of range or not nested here"),	\
	C(JUMP,		"jump target out of range"),			\
	C(BOOL,		"operand is not 0 or 1"),			\
	C(BUILTIN,	"unknown builtin"),				\
	C(ARGC,		"wrong number of arguments to builtin"),	\
	C(PROBE,	"probe out of range"),				\
	C(FIELD,	"field out of range"),				\
	C(MAIN_ONLY,	"only valid in the main chunk"),		\
	C(ESCAPE,	"control can leave the function here"),	\
	C(PROBE_TYPE,	"unknown probe type"),				\
	C(LINES,	"line table does not match the code"),		\
	C(BUDGET,	"instruction budget above KTAP_MAX_INSN_BUDGET"), \
	C(OVERRIDE,	"only a kprobe can override a return value (KTAP_PROBE_F_OVERRIDE)"), \
	C(TARGET,	"this probe type needs a target"), \
	C(WILDCARD,	"only a kprobe or uprobe comes from a wildcard (KTAP_PROBE_F_WILDCARD)"), \
	C(WATCH,	"bad watchpoint mode or length"),		\
	C(FETCH,	"bad fetch argument"),				\
	C(FETCH_ORDER,	"fetch arguments not sorted by probe"),		\
	C(FETCH_PROBE,	"fetch arguments on a probe that is not a kprobe or uprobe"), \
	C(FETCH_MANY,	"more than KTAP_MAX_FETCH_ARGS fetch arguments on one probe"), \
	C(NOMEM,	"out of memory")

#undef C
#define C(a, ...)	KTAP_VERR_##a
enum ktap_verr { KTAP_VERIFY_ERRORS };

#undef C
#define C(a, ...)	\
	[KTAP_VERR_##a] = __VA_ARGS__
static const char * const ktap_verr_text[] = { KTAP_VERIFY_ERRORS };

#undef C

struct ktap_loader {
	struct ktap_vm	*vm;
	char		*log;
	size_t		log_size;
	u32		len;
};

/*
 * Write "WHERE: TEXT" to the caller's log and turn the error into an
 * errno: -E2BIG for an oversized image, -ENOMEM, else -EINVAL.
 */
static __printf(3, 4) int ktap_reject(struct ktap_loader *ld,
				      enum ktap_verr err,
				      const char *where, ...)
{
	va_list ap;
	size_t n;

	if (ld->log && ld->log_size) {
		va_start(ap, where);
		n = vscnprintf(ld->log, ld->log_size, where, ap);
		va_end(ap);
		scnprintf(ld->log + n, ld->log_size - n, ": %s",
			  ktap_verr_text[err]);
	}
	if (err == KTAP_VERR_TOO_BIG || err == KTAP_VERR_BUDGET)
		return -E2BIG;
	if (err == KTAP_VERR_NOMEM)
		return -ENOMEM;
	return -EINVAL;
}

static bool ktap_name_ok(const struct ktap_vm *vm, u32 off)
{
	return off < vm->strtab_len &&
	       memchr(vm->strtab + off, '\0', vm->strtab_len - off);
}

static bool ktap_optname_ok(const struct ktap_vm *vm, u32 off)
{
	return off == KTAP_BC_NO_STR || ktap_name_ok(vm, off);
}

static int ktap_check_section(struct ktap_loader *ld, const char *name,
			      const struct ktap_bc_section *s, size_t elem,
			      size_t align, u32 max)
{
	const struct ktap_bc_header *hdr = ld->vm->hdr;
	u64 end;

	if (!s->count)
		return 0;
	if (s->count > max)
		return ktap_reject(ld, KTAP_VERR_COUNT, "section %s", name);
	if (s->off % align)
		return ktap_reject(ld, KTAP_VERR_ALIGN, "section %s", name);
	end = (u64)s->off + (u64)s->count * elem;
	if (s->off < hdr->hdr_size || end > ld->len)
		return ktap_reject(ld, KTAP_VERR_SECTION, "section %s", name);
	return 0;
}

static int ktap_check_header(struct ktap_loader *ld)
{
	const struct ktap_bc_header *hdr = ld->vm->hdr;
	size_t known = sizeof(*hdr);
	int err;

	if (hdr->magic != KTAP_BC_MAGIC)
		return ktap_reject(ld, KTAP_VERR_MAGIC, "header");
	if (hdr->abi_version != KTAP_ABI_VERSION)
		return ktap_reject(ld, KTAP_VERR_VERSION, "header");
	if (hdr->hdr_size < known || hdr->hdr_size > ld->len)
		return ktap_reject(ld, KTAP_VERR_HDR_SIZE, "header");
	if (memchr_inv((const char *)hdr + known, 0, hdr->hdr_size - known))
		return ktap_reject(ld, KTAP_VERR_HDR_TAIL, "header");
	if (hdr->total_size != ld->len)
		return ktap_reject(ld, KTAP_VERR_TOTAL_SIZE, "header");
	if (hdr->flags)
		return ktap_reject(ld, KTAP_VERR_FLAGS, "header");
	if (hdr->nglobals > KTAP_MAX_GLOBALS)
		return ktap_reject(ld, KTAP_VERR_NGLOBALS, "header");
	if (!hdr->protos.count)
		return ktap_reject(ld, KTAP_VERR_NO_MAIN, "header");

	err = ktap_check_section(ld, "protos", &hdr->protos,
				 sizeof(struct ktap_bc_proto), 4,
				 KTAP_MAX_PROTOS);
	err = err ?: ktap_check_section(ld, "consts", &hdr->consts,
					sizeof(struct ktap_bc_const), 8,
					KTAP_MAX_CONSTS);
	err = err ?: ktap_check_section(ld, "strtab", &hdr->strtab, 1, 1,
					KTAP_MAX_IMAGE);
	err = err ?: ktap_check_section(ld, "code", &hdr->code, 4, 4,
					KTAP_MAX_IMAGE);
	err = err ?: ktap_check_section(ld, "lines", &hdr->lines, 4, 4,
					KTAP_MAX_IMAGE);
	err = err ?: ktap_check_section(ld, "upvals", &hdr->upvals,
					sizeof(struct ktap_bc_upval), 1,
					KTAP_MAX_IMAGE);
	err = err ?: ktap_check_section(ld, "probes", &hdr->probes,
					sizeof(struct ktap_bc_probe), 8,
					KTAP_MAX_PROBES);
	err = err ?: ktap_check_section(ld, "builtins", &hdr->builtins, 4, 4,
					KTAP_MAX_BUILTINS);
	err = err ?: ktap_check_section(ld, "fields", &hdr->fields,
					sizeof(struct ktap_bc_field), 4,
					KTAP_MAX_FIELDS);
	err = err ?: ktap_check_section(ld, "fetch", &hdr->fetch,
					sizeof(struct ktap_bc_fetch), 8,
					KTAP_MAX_FETCH);
	if (err)
		return err;
	if (hdr->lines.count && hdr->lines.count != hdr->code.count)
		return ktap_reject(ld, KTAP_VERR_LINES, "section lines");
	return 0;
}

/* Point the VM's image fields at the verified sections of the copy. */
static void ktap_map_sections(struct ktap_vm *vm)
{
	const struct ktap_bc_header *hdr = vm->hdr;
	const char *base = vm->image;

	vm->protos = (const void *)(base + hdr->protos.off);
	vm->nprotos = hdr->protos.count;
	vm->nconsts = hdr->consts.count;
	vm->strtab = base + hdr->strtab.off;
	vm->strtab_len = hdr->strtab.count;
	vm->code = (const void *)(base + hdr->code.off);
	vm->ncode = hdr->code.count;
	vm->lines = hdr->lines.count ? (const void *)(base + hdr->lines.off)
				     : NULL;
	vm->upvals = (const void *)(base + hdr->upvals.off);
	vm->probes = (const void *)(base + hdr->probes.off);
	vm->nprobes = hdr->probes.count;
	vm->nbuiltins = hdr->builtins.count;
	vm->fields = (const void *)(base + hdr->fields.off);
	vm->nfields = hdr->fields.count;
	vm->fetch = (const void *)(base + hdr->fetch.off);
	vm->nfetch = hdr->fetch.count;
	vm->nglobals = hdr->nglobals;
}

static int ktap_load_consts(struct ktap_loader *ld)
{
	struct ktap_vm *vm = ld->vm;
	const struct ktap_bc_const *bc;
	struct ktap_str *s;
	u32 i;

	bc = (const void *)((const char *)vm->image + vm->hdr->consts.off);
	vm->consts = kvcalloc(vm->nconsts ?: 1, sizeof(*vm->consts),
			      GFP_KERNEL_ACCOUNT);
	if (!vm->consts)
		return ktap_reject(ld, KTAP_VERR_NOMEM, "consts");
	for (i = 0; i < vm->nconsts; i++) {
		switch (bc[i].type) {
		case KTAP_BC_CONST_INT:
			if (bc[i].len)
				return ktap_reject(ld, KTAP_VERR_NONZERO,
						   "const %u", i);
			ktap_value_int(&vm->consts[i], bc[i].val);
			break;
		case KTAP_BC_CONST_STR:
			if (bc[i].val < 0 || bc[i].len > KTAP_STR_MAX ||
			    (u64)bc[i].val + bc[i].len > vm->strtab_len)
				return ktap_reject(ld, KTAP_VERR_CONST_STR,
						   "const %u", i);
			s = ktap_str_intern(vm, vm->strtab + bc[i].val,
					    bc[i].len);
			if (!s)
				return ktap_reject(ld, KTAP_VERR_NOMEM,
						   "const %u", i);
			ktap_set_obj(&vm->consts[i], KTAP_TSTR, s);
			break;
		default:
			return ktap_reject(ld, KTAP_VERR_CONST_TYPE,
					   "const %u", i);
		}
	}
	return 0;
}

static int ktap_check_protos(struct ktap_loader *ld)
{
	struct ktap_vm *vm = ld->vm;
	u32 i, j, next_code = 0, nupv = vm->hdr->upvals.count;

	for (i = 0; i < vm->nprotos; i++) {
		const struct ktap_bc_proto *p = &vm->protos[i], *parent;

		if (p->__reserved)
			return ktap_reject(ld, KTAP_VERR_RESERVED, "proto %u", i);
		if (!p->ncode)
			return ktap_reject(ld, KTAP_VERR_EMPTY, "proto %u", i);
		if ((u64)p->code_start + p->ncode > vm->ncode)
			return ktap_reject(ld, KTAP_VERR_CODE_RANGE,
					   "proto %u", i);
		/*
		 * No word of the code section may lie outside every
		 * function: the interpreter never runs an unverified one.
		 */
		if (p->code_start != next_code)
			return ktap_reject(ld, KTAP_VERR_CODE_COVER,
					   "proto %u", i);
		next_code = p->code_start + p->ncode;
		if (p->nregs > KTAP_MAX_REGS || p->nparams > p->nregs)
			return ktap_reject(ld, KTAP_VERR_NREGS, "proto %u", i);
		if (p->nupvals > KTAP_MAX_UPVALS ||
		    (u64)p->upval_start + p->nupvals > nupv)
			return ktap_reject(ld, KTAP_VERR_UPV_RANGE,
					   "proto %u", i);
		if (!ktap_optname_ok(vm, p->name))
			return ktap_reject(ld, KTAP_VERR_NAME, "proto %u", i);
		if (i == 0) {
			if (p->parent != KTAP_BC_NO_STR || p->nupvals)
				return ktap_reject(ld, KTAP_VERR_PARENT,
						   "proto 0");
			continue;
		}
		if (p->parent >= i)
			return ktap_reject(ld, KTAP_VERR_PARENT, "proto %u", i);
		parent = &vm->protos[p->parent];
		for (j = 0; j < p->nupvals; j++) {
			const struct ktap_bc_upval *u = &vm->upvals[p->upval_start + j];
			u32 lim = u->in_stack ? parent->nregs : parent->nupvals;

			if (u->in_stack > 1 || u->index >= lim)
				return ktap_reject(ld, KTAP_VERR_UPV_DESC,
						   "proto %u upvalue %u", i, j);
		}
	}
	if (next_code != vm->ncode)
		return ktap_reject(ld, KTAP_VERR_CODE_COVER, "code section");
	return 0;
}

/**
 * ktap_insn_successors - where control can go after one instruction
 * @insn: the instruction (its opcode must be known)
 * @pc: its index in its function
 * @next: filled with up to KTAP_MAX_SUCCESSORS indexes in the same
 *	  function's numbering (they may be out of range: that is what
 *	  the verifier checks)
 *
 * Derived from the flags column of KTAP_OPCODES only, so that the
 * verifier and the opcode table cannot disagree. Every instruction
 * names its targets: the next one, its sBx target, or both. A call
 * returns to the next instruction; RETURN has no successor inside the
 * function.
 *
 * Return: the number of successors written.
 */
u32 ktap_insn_successors(u32 insn, u32 pc, s64 next[KTAP_MAX_SUCCESSORS])
{
	u8 flags = ktap_opinfo[KTAP_OP(insn)].flags;
	u32 n = 0;

	if (flags & KTAP_OPF_END)
		return 0;
	if (!(flags & KTAP_OPF_GOTO))
		next[n++] = (s64)pc + 1;
	if (flags & (KTAP_OPF_GOTO | KTAP_OPF_BRANCH))
		next[n++] = (s64)pc + 1 + KTAP_SBX(insn);
	return n;
}

/* The checks of one operand kind; see enum ktap_operand_kind. */
static enum ktap_verr ktap_check_operand(const struct ktap_vm *vm, u32 pi,
					 u32 pc, u32 insn, u8 kind, s64 val)
{
	const struct ktap_bc_proto *p = &vm->protos[pi];
	const struct ktap_builtin_info *bi;
	s64 target;

	switch (kind) {
	case KTAP_OPK_NONE:
		return val ? KTAP_VERR_NONZERO : 0;
	case KTAP_OPK_REG:
		return val < p->nregs ? 0 : KTAP_VERR_REG;
	case KTAP_OPK_REG3:
		return val + 2 < p->nregs ? 0 : KTAP_VERR_REG;
	case KTAP_OPK_RCNT:
		return KTAP_A(insn) + val < p->nregs ? 0 : KTAP_VERR_REG;
	case KTAP_OPK_K:
		return val < vm->nconsts ? 0 : KTAP_VERR_CONST;
	case KTAP_OPK_KINT:
		if (val >= vm->nconsts)
			return KTAP_VERR_CONST;
		return vm->consts[val].type == KTAP_TINT ? 0 : KTAP_VERR_KINT;
	case KTAP_OPK_KSTR:
		if (val >= vm->nconsts)
			return KTAP_VERR_CONST;
		return vm->consts[val].type == KTAP_TSTR ? 0 : KTAP_VERR_KSTR;
	case KTAP_OPK_UPV:
		return val < p->nupvals ? 0 : KTAP_VERR_UPV;
	case KTAP_OPK_GLOBAL:
		return val < vm->nglobals ? 0 : KTAP_VERR_GLOBAL;
	case KTAP_OPK_PROTO:
		if (val >= vm->nprotos || vm->protos[val].parent != pi)
			return KTAP_VERR_PROTO;
		return 0;
	case KTAP_OPK_JUMP:
		target = (s64)pc + 1 + val;
		return target >= 0 && target < p->ncode ? 0 : KTAP_VERR_JUMP;
	case KTAP_OPK_IMM:
		return 0;
	case KTAP_OPK_BOOL:
		return val <= 1 ? 0 : KTAP_VERR_BOOL;
	case KTAP_OPK_BUILTIN:
		if (val >= vm->nbuiltins)
			return KTAP_VERR_BUILTIN;
		bi = &ktap_builtin_table[vm->builtins[val]];
		if (KTAP_B(insn) < bi->min || KTAP_B(insn) > bi->max)
			return KTAP_VERR_ARGC;
		return 0;
	case KTAP_OPK_PROBE:
		return val < vm->nprobes ? 0 : KTAP_VERR_PROBE;
	case KTAP_OPK_FIELD:
		return val < vm->nfields ? 0 : KTAP_VERR_FIELD;
	case KTAP_OPK_NVAL:
		return KTAP_A(insn) + val <= p->nregs ? 0 : KTAP_VERR_REG;
	}
	return KTAP_VERR_OPCODE;
}

static int ktap_check_code(struct ktap_loader *ld, u32 pi)
{
	const struct ktap_vm *vm = ld->vm;
	const struct ktap_bc_proto *p = &vm->protos[pi];
	const u32 *code = vm->code + p->code_start;
	const struct ktap_opinfo *info;
	s64 opnd[3], succ[KTAP_MAX_SUCCESSORS];
	enum ktap_verr err;
	u32 pc, insn, op, nsucc;
	int k;

	for (pc = 0; pc < p->ncode; pc++) {
		insn = code[pc];
		op = KTAP_OP(insn);
		if (op >= KTAP_OP__COUNT)
			return ktap_reject(ld, KTAP_VERR_OPCODE,
					   "proto %u insn %u (0x%02x)",
					   pi, pc, op);
		info = &ktap_opinfo[op];
		opnd[0] = KTAP_A(insn);
		opnd[1] = KTAP_B(insn);
		if (info->fmt == KTAP_FMT_ABX)
			opnd[1] = KTAP_BX(insn);
		else if (info->fmt == KTAP_FMT_ASBX)
			opnd[1] = KTAP_SBX(insn);	/* signed */
		opnd[2] = KTAP_C(insn);
		err = 0;
		for (k = 0; k < 3 && !err; k++) {
			if (k == 2 && info->fmt != KTAP_FMT_ABC)
				break;
			err = ktap_check_operand(vm, pi, pc, insn,
						 info->kind[k], opnd[k]);
		}
		if (!err && (info->flags & KTAP_OPF_MAIN) && pi)
			err = KTAP_VERR_MAIN_ONLY;
		/*
		 * Every successor inside the function: no instruction can
		 * fall off its end or jump out of it.
		 */
		nsucc = err ? 0 : ktap_insn_successors(insn, pc, succ);
		for (k = 0; k < nsucc; k++)
			if (succ[k] < 0 || succ[k] >= p->ncode)
				err = KTAP_VERR_ESCAPE;
		if (err)
			return ktap_reject(ld, err, "proto %u insn %u (%s)",
					   pi, pc, info->name);
	}
	return 0;
}

/*
 * The registers a straight-line instruction reads and writes, or false
 * for one that may transfer control, capture a register (CLOSURE) or
 * touch registers beyond its operands (CALL, ITERNEXT): the end of the
 * prefix ktap_frame_fill() looks at. @rd gets up to three read register
 * operands; @w0..@w1 is the written range (@w0 > @w1: none). Operands
 * were checked against the frame size before.
 */
static bool ktap_insn_regs(u32 insn, u32 rd[3], u32 *nrd, u32 *w0, u32 *w1)
{
	u32 a = KTAP_A(insn), b = KTAP_B(insn), c = KTAP_C(insn), j;

	*nrd = 0;
	*w0 = a;
	*w1 = a;
	switch (KTAP_OP(insn)) {
	case KTAP_OP_LOADK:
	case KTAP_OP_LOADI:
	case KTAP_OP_LOADBOOL:
	case KTAP_OP_GETUPVAL:
	case KTAP_OP_GETGLOBAL:
	case KTAP_OP_NEWTABLE:
	case KTAP_OP_EVFIELD:
		return true;
	case KTAP_OP_LOADNIL:
		*w1 = a + b;
		return true;
	case KTAP_OP_MOVE:
	case KTAP_OP_GETFIELD:
	case KTAP_OP_ADDK:
	case KTAP_OP_SUBK:
	case KTAP_OP_MULK:
	case KTAP_OP_DIVK:
	case KTAP_OP_MODK:
	case KTAP_OP_UNM:
	case KTAP_OP_NOT:
	case KTAP_OP_LEN:
	case KTAP_OP_EQK:
		rd[(*nrd)++] = b;
		return true;
	case KTAP_OP_GETTABLE:
	case KTAP_OP_ADD:
	case KTAP_OP_SUB:
	case KTAP_OP_MUL:
	case KTAP_OP_DIV:
	case KTAP_OP_MOD:
	case KTAP_OP_CONCAT:
	case KTAP_OP_EQ:
	case KTAP_OP_LT:
	case KTAP_OP_LE:
		rd[(*nrd)++] = b;
		rd[(*nrd)++] = c;
		return true;
	case KTAP_OP_SETUPVAL:
	case KTAP_OP_SETGLOBAL:
		rd[(*nrd)++] = a;
		break;
	case KTAP_OP_SETFIELD:
		rd[(*nrd)++] = a;
		rd[(*nrd)++] = c;
		break;
	case KTAP_OP_SETTABLE:
	case KTAP_OP_INCTABLE:
	case KTAP_OP_AGGR:
		rd[(*nrd)++] = a;
		rd[(*nrd)++] = b;
		rd[(*nrd)++] = c;
		break;
	case KTAP_OP_CALLB:
		/* reads its arguments A+1..A+B; longer lists end the prefix */
		if (b > 3)
			return false;
		for (j = 0; j < b; j++)
			rd[(*nrd)++] = a + 1 + j;
		return true;
	default:
		return false;
	}
	*w0 = 1;
	*w1 = 0;
	return true;
}

/**
 * ktap_frame_fill - work out which registers a new frame of @pi sets nil
 * @vm: the VM, its code checked
 * @pi: the function
 *
 * Nil-filling a handler's registers on every firing costs about as
 * much as a simple handler's own work, and most registers are written
 * by the function's first instructions anyway. This follows the
 * function from its entry for as long as every instruction has one
 * successor, the next (ktap_insn_regs()): every run passes through that
 * prefix in order, and no other instruction can run before its end. A
 * register written there before any read of it needs no nil: whatever
 * path reads it later comes after the write. Registers read before the
 * prefix wrote them, and those it does not write, are filled: all
 * registers up to the last of them, so that a frame is laid out with
 * one loop (a proven register below that one gets a nil it does not
 * need).
 *
 * Under CONFIG_KTAP_DEBUG_VM the registers left out start as a poison
 * integer instead (ktap_frame_init()), so that a wrong proof shows in
 * the output of the tests rather than as a stale value.
 */
static void ktap_frame_fill(struct ktap_vm *vm, u32 pi)
{
	const struct ktap_bc_proto *p = &vm->protos[pi];
	const u32 *code = vm->code + p->code_start;
	bool set[KTAP_MAX_REGS + 1] = {};
	u32 pc, rd[3], nrd, w0, w1, k, r, end;

	memset(set, 1, p->nparams);
	for (pc = 0; pc < p->ncode; pc++) {
		if (!ktap_insn_regs(code[pc], rd, &nrd, &w0, &w1))
			break;
		for (k = 0; k < nrd; k++)
			if (!set[rd[k]])
				goto done;
		for (r = w0; r <= w1; r++)
			set[r] = true;
	}
done:
	end = p->nregs;
	while (end > p->nparams && set[end - 1])
		end--;
	vm->fill_end[pi] = end;
}

/* One or two access modes, X alone, and a length the CPUs know. */
static bool ktap_watch_attr_ok(u32 attr)
{
	u32 mode = attr & ~KTAP_WATCH_LEN_MASK;
	u32 len = attr & KTAP_WATCH_LEN_MASK;

	if (mode & ~(KTAP_WATCH_R | KTAP_WATCH_W | KTAP_WATCH_X) || !mode ||
	    ((mode & KTAP_WATCH_X) && mode != KTAP_WATCH_X))
		return false;
	return len == 1 || len == 2 || len == 4 || len == 8;
}

/* What a probe attaches to is named by its target, except for these. */
static bool ktap_probe_needs_target(const struct ktap_bc_probe *pr)
{
	switch (pr->type) {
	case KTAP_PROBE_TIMER:
	case KTAP_PROBE_PROFILE:
	case KTAP_PROBE_END:
		return false;
	default:
		return true;
	}
}

static int ktap_check_probes(struct ktap_loader *ld)
{
	const struct ktap_vm *vm = ld->vm;
	u32 i;

	for (i = 0; i < vm->nprobes; i++) {
		const struct ktap_bc_probe *pr = &vm->probes[i];

		if (pr->type >= KTAP_PROBE__COUNT)
			return ktap_reject(ld, KTAP_VERR_PROBE_TYPE,
					   "probe %u", i);
		if (pr->flags & ~(KTAP_PROBE_F_RETURN | KTAP_PROBE_F_OVERRIDE |
				  KTAP_PROBE_F_WILDCARD))
			return ktap_reject(ld, KTAP_VERR_FLAGS, "probe %u", i);
		if ((pr->flags & KTAP_PROBE_F_WILDCARD) &&
		    pr->type != KTAP_PROBE_KPROBE &&
		    pr->type != KTAP_PROBE_UPROBE)
			return ktap_reject(ld, KTAP_VERR_WILDCARD, "probe %u", i);
		if ((pr->flags & KTAP_PROBE_F_OVERRIDE) &&
		    pr->type != KTAP_PROBE_KPROBE)
			return ktap_reject(ld, KTAP_VERR_OVERRIDE, "probe %u", i);
		if (memchr_inv(pr->__reserved, 0, sizeof(pr->__reserved)))
			return ktap_reject(ld, KTAP_VERR_RESERVED,
					   "probe %u", i);
		if (pr->type == KTAP_PROBE_WATCH ? !ktap_watch_attr_ok(pr->attr) :
		    pr->attr && pr->type != KTAP_PROBE_UPROBE)
			return ktap_reject(ld, KTAP_VERR_WATCH, "probe %u", i);
		if (!ktap_optname_ok(vm, pr->spec) ||
		    !ktap_optname_ok(vm, pr->target))
			return ktap_reject(ld, KTAP_VERR_NAME, "probe %u", i);
		if (pr->target == KTAP_BC_NO_STR && ktap_probe_needs_target(pr))
			return ktap_reject(ld, KTAP_VERR_TARGET, "probe %u", i);
	}
	return 0;
}

/*
 * Map the names of the builtins section to the kernel's builtins, before
 * the code is checked: CALLB's arity check needs them.
 */
static int ktap_load_builtins(struct ktap_loader *ld)
{
	struct ktap_vm *vm = ld->vm;
	const u32 *names;
	const char *name;
	u32 i;
	int id;

	names = (const void *)((const char *)vm->image + vm->hdr->builtins.off);
	vm->builtins = kcalloc(vm->nbuiltins ?: 1, sizeof(*vm->builtins),
			       GFP_KERNEL_ACCOUNT);
	if (!vm->builtins)
		return ktap_reject(ld, KTAP_VERR_NOMEM, "builtins");
	for (i = 0; i < vm->nbuiltins; i++) {
		if (!ktap_name_ok(vm, names[i]))
			return ktap_reject(ld, KTAP_VERR_NAME, "builtin %u", i);
		name = vm->strtab + names[i];
		id = ktap_builtin_lookup(name);
		if (id < 0)
			return ktap_reject(ld, KTAP_VERR_BUILTIN,
					   "builtin %u '%.*s'", i, 32, name);
		vm->builtins[i] = id;
	}
	return 0;
}

/* Fields entries: a probe of this image and a name each. */
static int ktap_check_fields(struct ktap_loader *ld)
{
	const struct ktap_vm *vm = ld->vm;
	u32 i;

	for (i = 0; i < vm->nfields; i++) {
		if (vm->fields[i].probe >= vm->nprobes)
			return ktap_reject(ld, KTAP_VERR_PROBE, "field %u", i);
		if (!ktap_name_ok(vm, vm->fields[i].name))
			return ktap_reject(ld, KTAP_VERR_NAME, "field %u", i);
	}
	return 0;
}

/*
 * One fetch argument, on its own: what each base and type allows. The
 * registers it names are the tracing side's to resolve, at attach.
 */
static bool ktap_fetch_ok(const struct ktap_vm *vm,
			  const struct ktap_bc_fetch *f, bool ret)
{
	if (!ktap_name_ok(vm, f->name) || f->base >= KTAP_FETCH_BASE__COUNT ||
	    f->type >= KTAP_FETCH_TYPE__COUNT ||
	    f->ndref > KTAP_MAX_FETCH_DEREF || f->flags & ~KTAP_FETCH_F_USER)
		return false;
	if (memchr_inv(&f->off[f->ndref], 0,
		       (KTAP_MAX_FETCH_DEREF - f->ndref) * sizeof(f->off[0])))
		return false;
	if (f->base != KTAP_FETCH_IMM && f->imm)
		return false;
	switch (f->base) {
	case KTAP_FETCH_REG:
		return ktap_name_ok(vm, f->reg);
	case KTAP_FETCH_ARG:
		/* A return probe no longer has its arguments' registers. */
		return f->reg >= 1 && f->reg <= 6 && !ret;
	case KTAP_FETCH_STACK:
		return f->reg < 4096 / sizeof(long);
	case KTAP_FETCH_RETVAL:
		return !f->reg && ret;
	case KTAP_FETCH_COMM:
		return !f->reg && !f->ndref && f->type == KTAP_FETCH_STRING;
	default:
		return !f->reg;
	}
}

/*
 * Fetch entries: sorted by probe, at most KTAP_MAX_FETCH_ARGS on a
 * kprobe or uprobe, each well formed.
 */
static int ktap_check_fetch(struct ktap_loader *ld)
{
	const struct ktap_vm *vm = ld->vm;
	u32 i, run = 0;

	for (i = 0; i < vm->nfetch; i++) {
		const struct ktap_bc_fetch *f = &vm->fetch[i];
		const struct ktap_bc_probe *pr;

		if (f->probe >= vm->nprobes)
			return ktap_reject(ld, KTAP_VERR_PROBE, "fetch %u", i);
		if (i && f->probe < vm->fetch[i - 1].probe)
			return ktap_reject(ld, KTAP_VERR_FETCH_ORDER,
					   "fetch %u", i);
		run = i && f->probe == vm->fetch[i - 1].probe ? run + 1 : 1;
		if (run > KTAP_MAX_FETCH_ARGS)
			return ktap_reject(ld, KTAP_VERR_FETCH_MANY,
					   "fetch %u", i);
		pr = &vm->probes[f->probe];
		if (pr->type != KTAP_PROBE_KPROBE &&
		    pr->type != KTAP_PROBE_UPROBE)
			return ktap_reject(ld, KTAP_VERR_FETCH_PROBE,
					   "fetch %u", i);
		if (!ktap_fetch_ok(vm, f, pr->flags & KTAP_PROBE_F_RETURN))
			return ktap_reject(ld, KTAP_VERR_FETCH, "fetch %u", i);
	}
	return 0;
}

static int ktap_vm_alloc_runtime(struct ktap_loader *ld,
				 const struct ktap_vm_opts *opts)
{
	struct ktap_vm *vm = ld->vm;
	size_t mem = opts && opts->mem_limit ? opts->mem_limit :
		     (size_t)KTAP_DEFAULT_MEM_KB * 1024;
	int cpu;

	if (mem < KTAP_MIN_MEM || mem > (size_t)KTAP_MAX_MEM_KB * 1024)
		return ktap_reject(ld, KTAP_VERR_MEM_LIMIT, "options");
	vm->insn_budget = opts && opts->insn_budget ? opts->insn_budget :
			  KTAP_DEFAULT_BUDGET;
	if (vm->insn_budget > KTAP_MAX_INSN_BUDGET)
		return ktap_reject(ld, KTAP_VERR_BUDGET, "options (%u > %u)",
				   vm->insn_budget, KTAP_MAX_INSN_BUDGET);
	vm->main_budget = KTAP_MAIN_BUDGET;
	vm->target_pid = opts ? opts->target_pid : 0;
	vm->json = opts && opts->json;
	vm->raw_ptrs = opts && opts->raw_ptrs;
	if (ktap_pool_init(&vm->pool, mem) ||
	    ktap_strset_init(&vm->strs, mem))
		return ktap_reject(ld, KTAP_VERR_NOMEM, "pool");
	vm->globals = kvcalloc(vm->nglobals ?: 1, sizeof(*vm->globals),
			       GFP_KERNEL_ACCOUNT);
	vm->cpu_ctx = kcalloc(nr_cpu_ids, sizeof(*vm->cpu_ctx),
			      GFP_KERNEL_ACCOUNT);
	if (!vm->globals || !vm->cpu_ctx)
		return ktap_reject(ld, KTAP_VERR_NOMEM, "globals");
	for_each_possible_cpu(cpu) {
		vm->cpu_ctx[cpu] = kvzalloc_node(sizeof(*vm->cpu_ctx[cpu]),
						 GFP_KERNEL_ACCOUNT,
						 cpu_to_node(cpu));
		if (!vm->cpu_ctx[cpu])
			return ktap_reject(ld, KTAP_VERR_NOMEM, "stacks");
	}
	/* One region, so that ktap_is_temp() is a range check. */
	vm->temp_size = clamp_t(size_t, mem / (2 * num_possible_cpus()),
				KTAP_TEMP_MIN, KTAP_TEMP_MAX);
	vm->temp_size = PAGE_ALIGN(vm->temp_size);
	vm->temp = __vmalloc(array_size(nr_cpu_ids, vm->temp_size),
			     GFP_KERNEL_ACCOUNT);
	if (!vm->temp)
		return ktap_reject(ld, KTAP_VERR_NOMEM, "temporary arenas");
	return 0;
}

/**
 * ktap_vm_load - copy, verify and prepare a bytecode image
 * @image: the image (kernel memory; it is copied)
 * @len: its length
 * @opts: pool size and instruction budget (0 or NULL: defaults)
 * @host_ops: session services (output, attach, exit)
 * @host: cookie passed back to @host_ops
 * @log: where a rejection is explained (may be NULL)
 * @log_size: size of @log
 *
 * Process context only: allocates with GFP_KERNEL_ACCOUNT, charged to
 * the loader's memcg.
 *
 * Return: the VM, or ERR_PTR(-EINVAL) for a rejected image (the reason
 * is in @log), -E2BIG for an oversized one, -ENOMEM.
 */
struct ktap_vm *ktap_vm_load(const void *image, size_t len,
			     const struct ktap_vm_opts *opts,
			     const struct ktap_host_ops *host_ops, void *host,
			     char *log, size_t log_size)
{
	struct ktap_loader ld = { .log = log, .log_size = log_size };
	struct ktap_vm *vm;
	int err;
	u32 i;

	if (log && log_size)
		log[0] = '\0';
	if (len > KTAP_MAX_IMAGE)
		return ERR_PTR(ktap_reject(&ld, KTAP_VERR_TOO_BIG, "image"));
	if (len < sizeof(struct ktap_bc_header))
		return ERR_PTR(ktap_reject(&ld, KTAP_VERR_SHORT, "image"));
	ld.len = len;

	vm = kzalloc(sizeof(*vm), GFP_KERNEL_ACCOUNT);
	if (!vm)
		return ERR_PTR(-ENOMEM);
	ld.vm = vm;
	raw_spin_lock_init(&vm->shared_lock);
	seqcount_init(&vm->shared_seq);
	vm->host_ops = host_ops;
	vm->host = host;
	vm->image = kvmemdup(image, len, GFP_KERNEL_ACCOUNT);
	if (!vm->image) {
		err = ktap_reject(&ld, KTAP_VERR_NOMEM, "image");
		goto fail;
	}
	vm->image_len = len;
	vm->hdr = vm->image;

	err = ktap_check_header(&ld);
	if (err)
		goto fail;
	ktap_map_sections(vm);
	if (vm->hdr->chunkname != KTAP_BC_NO_STR &&
	    !ktap_name_ok(vm, vm->hdr->chunkname)) {
		err = ktap_reject(&ld, KTAP_VERR_NAME, "header chunkname");
		goto fail;
	}
	vm->chunkname = vm->hdr->chunkname == KTAP_BC_NO_STR ? "?" :
			vm->strtab + vm->hdr->chunkname;

	err = ktap_vm_alloc_runtime(&ld, opts);
	err = err ?: ktap_load_consts(&ld);
	err = err ?: ktap_load_builtins(&ld);
	err = err ?: ktap_check_protos(&ld);
	err = err ?: ktap_check_probes(&ld);
	err = err ?: ktap_check_fields(&ld);
	err = err ?: ktap_check_fetch(&ld);
	for (i = 0; !err && i < vm->nprotos; i++)
		err = ktap_check_code(&ld, i);
	if (err)
		goto fail;
	vm->fill_end = kcalloc(vm->nprotos, sizeof(*vm->fill_end),
			       GFP_KERNEL_ACCOUNT);
	if (!vm->fill_end) {
		err = ktap_reject(&ld, KTAP_VERR_NOMEM, "frames");
		goto fail;
	}
	for (i = 0; i < vm->nprotos; i++)
		ktap_frame_fill(vm, i);
	return vm;

fail:
	ktap_vm_free(vm);
	return ERR_PTR(err);
}

/**
 * ktap_vm_free - release a VM and everything its scripts allocated
 * @vm: the VM, or NULL
 *
 * The session must have detached every probe (and waited for running
 * handlers) first.
 */
void ktap_vm_free(struct ktap_vm *vm)
{
	int cpu;

	if (!vm)
		return;
	if (vm->cpu_ctx) {
		for_each_possible_cpu(cpu)
			kvfree(vm->cpu_ctx[cpu]);
		kfree(vm->cpu_ctx);
	}
	vfree(vm->temp);
	kvfree(vm->globals);
	kvfree(vm->consts);
	kfree(vm->builtins);
	kfree(vm->fill_end);
	ktap_strset_destroy(&vm->strs);
	ktap_pool_destroy(&vm->pool);
	kvfree(vm->image);
	kfree(vm);
}

const struct ktap_bc_probe *ktap_vm_probe(struct ktap_vm *vm, u32 idx)
{
	return idx < vm->nprobes ? &vm->probes[idx] : NULL;
}

/**
 * ktap_vm_probe_where - where the script defines a probe
 * @vm: a loaded program
 * @idx: index in the probe table
 * @buf: receives "FILE:LINE", or "FILE" without line information
 * @len: size of @buf
 *
 * The line is that of the first ATTACH naming the probe. For error
 * reports only: it walks the code.
 */
void ktap_vm_probe_where(struct ktap_vm *vm, u32 idx, char *buf, size_t len)
{
	u32 pc;

	for (pc = 0; vm->lines && pc < vm->ncode; pc++) {
		if (KTAP_OP(vm->code[pc]) == KTAP_OP_ATTACH &&
		    KTAP_BX(vm->code[pc]) == idx) {
			snprintf(buf, len, "%s:%u", vm->chunkname,
				 vm->lines[pc]);
			return;
		}
	}
	snprintf(buf, len, "%s", vm->chunkname);
}

/* One handler run's instruction budget, as LOAD settled it. */
u32 ktap_vm_insn_budget(struct ktap_vm *vm)
{
	return vm->insn_budget;
}

const char *ktap_vm_str(struct ktap_vm *vm, u32 strtab_off)
{
	return ktap_name_ok(vm, strtab_off) ? vm->strtab + strtab_off : NULL;
}

/* How many entries the image's fields section has (EVFIELD's Bx). */
u32 ktap_vm_nfields(struct ktap_vm *vm)
{
	return vm->nfields;
}

/* Entry @idx of the fields section, or NULL past its end. */
const struct ktap_bc_field *ktap_vm_field(struct ktap_vm *vm, u32 idx)
{
	return idx < vm->nfields ? &vm->fields[idx] : NULL;
}

/**
 * ktap_vm_fetch - the fetch arguments of a probe
 * @vm: a loaded VM
 * @probe: probe table index
 * @n: set to how many there are
 *
 * Return: the first of @probe's entries in the fetch section, in order,
 * or NULL (and *@n 0) when it has none.
 */
const struct ktap_bc_fetch *ktap_vm_fetch(struct ktap_vm *vm, u32 probe,
					  u32 *n)
{
	u32 lo = 0, hi = vm->nfetch, end;

	/* The verifier checked the section is sorted by probe. */
	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (vm->fetch[mid].probe < probe)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (end = lo; end < vm->nfetch && vm->fetch[end].probe == probe; end++)
		;
	*n = end - lo;
	return *n ? &vm->fetch[lo] : NULL;
}
