/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ktap code generator interface (code.c), used by the parser.
 *
 * The parser never emits raw instruction words: it describes each
 * pending expression with a struct kp_exp (a constant, a local's
 * register, an upvalue, a global slot, a table element, a comparison
 * waiting for its jump, an instruction whose target register is still
 * open, a call) and code.c turns descriptors into instructions. That is
 * where constant folding, register reuse and jump lists live. Jump
 * lists are chained through the sBx fields of the pending JMPs and
 * patched in place.
 */
#ifndef KP_CODE_H
#define KP_CODE_H

#include "kp.h"

#define KP_NO_JUMP	(-1)

enum kp_expkind {
	VVOID,		/* no value */
	VNIL, VTRUE, VFALSE,
	VKINT,		/* u.ival */
	VKSTR,		/* u.str */
	VNONRELOC,	/* value in register u.info */
	VLOCAL,		/* local variable in register u.info */
	VUPVAL,		/* upvalue u.info */
	VGLOBAL,	/* global slot u.info */
	VINDEXED,	/* u.ind.t[key]: key register, or string constant */
	VJMP,		/* comparison; u.info is its JMP */
	VRELOC,		/* instruction u.info can put its result anywhere */
	VCALL,		/* CALL/CALLB at u.info; result in its A */
};

struct kp_exp {
	enum kp_expkind	k;
	union {
		int64_t		ival;
		struct kp_str	str;
		int		info;
		struct {
			int	t;	/* table register */
			int	key;	/* key register or constant index */
			int	keyk;	/* key is a constant */
		} ind;
	} u;
	int	t, f;		/* patch lists: exit when true / false */
};

/* A function prototype being built. */
struct kp_proto {
	uint32_t	*code, *lines;
	uint32_t	ncode, codecap, linecap;
	struct ktap_bc_upval *upv;
	const char	**upvname;
	uint32_t	nupv, upvcap, upvnamecap;
	uint32_t	nparams, maxregs;
	uint32_t	parent, line;
	const char	*name;
};

struct kp_blockcnt;
struct kp_evinfo;

/* Per-function compile state. */
struct kp_fstate {
	struct kp_fstate	*prev;
	struct kp_proto		*f;
	uint32_t		idx;		/* proto index */
	struct kp_blockcnt	*bl;
	int			freereg;
	int			nactvar;
	const char		*actvar[KP_MAX_LOCALS];
	uint8_t			captured[KP_MAX_LOCALS]; /* by a closure */
	int			depth;		/* 0: main chunk */
	int			saved_pending;	/* parent's pending locals */
	struct kp_evinfo	*ev;		/* trace handler: its events */
};

/* Growing image parts (everything but code, which lives in protos). */
struct kp_image {
	struct kp_proto		**protos;
	uint32_t		nprotos, protocap;
	struct ktap_bc_const	*consts;
	uint32_t		nconsts, constcap;
	char			*strtab;
	uint32_t		strlen, strcap;
	struct ktap_bc_probe	*probes;
	uint32_t		nprobes, probecap;
	uint32_t		*words;
	uint32_t		nwords, wordcap;
	const char		**globals;	/* names by slot */
	uint32_t		nglobals, globalcap;
	/* hash of constants and strtab strings (open addressing) */
	struct kp_hent		*hash;
	uint32_t		hashcap, hashused;
};

void kp_image_init(struct kp_state *S);

/* Constants, strings, globals, probes. */
int kp_const_int(struct kp_state *S, int64_t v);
int kp_const_str(struct kp_state *S, const char *s, uint32_t len);
uint32_t kp_strtab(struct kp_state *S, const char *s, uint32_t len);
int kp_global(struct kp_state *S, const char *name);	/* slot, or -1 */
int kp_global_find(struct kp_state *S, const char *name);
uint32_t kp_probe_add(struct kp_state *S, const struct ktap_bc_probe *p);
uint32_t kp_words_add(struct kp_state *S, const uint32_t *w, uint32_t n);

/* Functions. */
struct kp_proto *kp_proto_new(struct kp_state *S, uint32_t *idx);

/* Instructions, attributed to source line S->line. */
int kp_code(struct kp_state *S, struct kp_fstate *fs, uint32_t insn);
int kp_code_abc(struct kp_state *S, struct kp_fstate *fs, int op, int a,
		int b, int c);
int kp_code_abx(struct kp_state *S, struct kp_fstate *fs, int op, int a,
		int bx);
int kp_code_asbx(struct kp_state *S, struct kp_fstate *fs, int op, int a,
		 int sbx);
void kp_reserve(struct kp_state *S, struct kp_fstate *fs, int n);
void kp_checkstack(struct kp_state *S, struct kp_fstate *fs, int n);

/* Jumps. */
int kp_jump(struct kp_state *S, struct kp_fstate *fs);
int kp_jumpif(struct kp_state *S, struct kp_fstate *fs, int reg, int cond);
void kp_concat(struct kp_state *S, struct kp_fstate *fs, int *l1, int l2);
void kp_patchlist(struct kp_state *S, struct kp_fstate *fs, int list,
		  int target);
void kp_patchtohere(struct kp_state *S, struct kp_fstate *fs, int list);
void kp_fixjump(struct kp_state *S, struct kp_fstate *fs, int pc, int dest);

/* Expressions. */
void kp_init_exp(struct kp_exp *e, enum kp_expkind k, int info);
void kp_dischargevars(struct kp_state *S, struct kp_fstate *fs,
		      struct kp_exp *e);
void kp_exp2nextreg(struct kp_state *S, struct kp_fstate *fs,
		    struct kp_exp *e);
int kp_exp2anyreg(struct kp_state *S, struct kp_fstate *fs,
		  struct kp_exp *e);
void kp_exp2reg(struct kp_state *S, struct kp_fstate *fs, struct kp_exp *e,
		int reg);
void kp_exp2val(struct kp_state *S, struct kp_fstate *fs, struct kp_exp *e);
void kp_freeexp(struct kp_fstate *fs, struct kp_exp *e);
void kp_freereg(struct kp_fstate *fs, int reg);
void kp_storevar(struct kp_state *S, struct kp_fstate *fs,
		 struct kp_exp *var, struct kp_exp *ex);
void kp_indexed(struct kp_state *S, struct kp_fstate *fs, struct kp_exp *t,
		struct kp_exp *k);
void kp_goiftrue(struct kp_state *S, struct kp_fstate *fs, struct kp_exp *e);
void kp_goiffalse(struct kp_state *S, struct kp_fstate *fs,
		  struct kp_exp *e);
void kp_setcallresult(struct kp_fstate *fs, struct kp_exp *e, int want);

enum kp_binop {
	OPR_ADD, OPR_SUB, OPR_MUL, OPR_DIV, OPR_MOD, OPR_CONCAT,
	OPR_EQ, OPR_NE, OPR_LT, OPR_LE, OPR_GT, OPR_GE,
	OPR_AND, OPR_OR, OPR_NOBINOPR
};

enum kp_unop { OPR_MINUS, OPR_NOT, OPR_NOUNOPR };

void kp_prefix(struct kp_state *S, struct kp_fstate *fs, enum kp_unop op,
	       struct kp_exp *e);
void kp_infix(struct kp_state *S, struct kp_fstate *fs, enum kp_binop op,
	      struct kp_exp *v);
void kp_posfix(struct kp_state *S, struct kp_fstate *fs, enum kp_binop op,
	       struct kp_exp *e1, struct kp_exp *e2);

/* Serialize everything into one image (malloc'ed; caller frees). */
void *kp_image_write(struct kp_state *S, uint32_t *len);

#endif /* KP_CODE_H */
