// SPDX-License-Identifier: GPL-2.0
/*
 * Fetch arguments: see fetch.h and struct ktap_bc_fetch. The syntax is
 * kprobe_events' (Documentation/trace/kprobetrace.rst), so that a probe
 * written for ftrace reads the same values here:
 *
 *	[NAME=]FETCHARG[:TYPE]
 *	FETCHARG: %REG | $argN | $stackN | $stack | $retval | $comm |
 *		  @ADDR | @SYM[+|-OFF] | \IMM | +|-[u]OFF(FETCHARG)
 *	TYPE:	  u8..u64, s8..s64, x8..x64 (the default: x64), string,
 *		  ustring
 *
 * An unnamed argument is argN, N its position. The kernel resolves the
 * register names; x86-64 also takes the assembler's (%rdi, %esi), which
 * USDT notes use.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "events.h"
#include "fetch.h"
#include "image.h"

struct fetch_ctx {
	struct kp_state	*S;
	const char	*spec;
	const char	*arg;		/* the argument as written */
	int		user;		/* a uprobe */
	const char	*why;
	uint32_t	line, col;
};

static const char *const type_names[KTAP_FETCH_TYPE__COUNT] = {
	[KTAP_FETCH_U8] = "u8", [KTAP_FETCH_U16] = "u16",
	[KTAP_FETCH_U32] = "u32", [KTAP_FETCH_U64] = "u64",
	[KTAP_FETCH_S8] = "s8", [KTAP_FETCH_S16] = "s16",
	[KTAP_FETCH_S32] = "s32", [KTAP_FETCH_S64] = "s64",
	[KTAP_FETCH_X8] = "x8", [KTAP_FETCH_X16] = "x16",
	[KTAP_FETCH_X32] = "x32", [KTAP_FETCH_X64] = "x64",
	[KTAP_FETCH_STRING] = "string",
};

/* Names the event already answers (see the kernel's ktap_kp_field()). */
static const char *const reserved_names[] = {
	"name", "ip", "func", "retval", "ret_ip",
};

/*
 * The pt_regs name of an x86-64 register as the assembler writes it:
 * %rdi, %edi, %di and %dil are all "di". Other names pass unchanged.
 */
static const char *reg_name(const char *r, char *buf, size_t n)
{
#if defined(__x86_64__)
	static const char *const legacy[][5] = {
		{ "ax", "rax", "eax", "al", NULL },
		{ "bx", "rbx", "ebx", "bl", NULL },
		{ "cx", "rcx", "ecx", "cl", NULL },
		{ "dx", "rdx", "edx", "dl", NULL },
		{ "si", "rsi", "esi", "sil", NULL },
		{ "di", "rdi", "edi", "dil", NULL },
		{ "bp", "rbp", "ebp", "bpl", NULL },
		{ "sp", "rsp", "esp", "spl", NULL },
		{ "ip", "rip", "eip", NULL, NULL },
	};
	size_t i, j, len = strlen(r);

	for (i = 0; i < sizeof(legacy) / sizeof(legacy[0]); i++)
		for (j = 1; legacy[i][j]; j++)
			if (!strcmp(r, legacy[i][j]))
				return legacy[i][0];
	/* r8d, r8w, r8b: the low parts of r8 */
	if (len >= 3 && r[0] == 'r' && strchr("dwb", r[len - 1]) &&
	    strspn(r + 1, "0123456789") == len - 2 && len - 2 <= 2) {
		snprintf(buf, n, "%.*s", (int)(len - 1), r);
		return buf;
	}
#endif
	(void)buf;
	(void)n;
	return r;
}

static int parse_num(const char **pp, int64_t *v)
{
	const char *p = *pp;
	char *end;
	int neg = 0;

	if (*p == '-' || *p == '+')
		neg = *p++ == '-';
	if (*p < '0' || *p > '9')
		return -1;
	errno = 0;
	*v = (int64_t)strtoull(p, &end, 0);
	if (errno)
		return -1;
	if (neg)
		*v = -*v;
	*pp = end;
	return 0;
}

/* FETCHARG at *pp into @f; derefs are appended innermost first. */
static int parse_fetcharg(struct fetch_ctx *c, const char **pp,
			  struct ktap_bc_fetch *f, int depth)
{
	const char *p = *pp;
	char name[64], rbuf[16];
	const char *reg;
	size_t len;
	int64_t v;
	int ret;

	if (depth > KTAP_MAX_FETCH_DEREF) {
		c->why = "too many nested memory reads (4 at most)";
		return -1;
	}
	if (*p == '+' || *p == '-') {
		int neg = *p == '-';

		p++;
		if (*p == 'u') {
			f->flags |= KTAP_FETCH_F_USER;
			p++;
		}
		if (parse_num(&p, &v) || *p != '(') {
			c->why = "expected +|-[u]OFFSET(FETCHARG)";
			return -1;
		}
		p++;
		ret = parse_fetcharg(c, &p, f, depth + 1);
		if (ret)
			return ret;
		if (*p != ')') {
			c->why = "expected ')'";
			return -1;
		}
		if (f->ndref >= KTAP_MAX_FETCH_DEREF) {
			c->why = "too many nested memory reads (4 at most)";
			return -1;
		}
		*pp = p + 1;
		f->off[f->ndref++] = neg ? -v : v;
		return 0;
	}
	if (*p == '%') {
		len = strspn(p + 1, "abcdefghijklmnopqrstuvwxyz0123456789");
		if (!len || len >= sizeof(name)) {
			c->why = "expected a register name after '%'";
			return -1;
		}
		memcpy(name, p + 1, len);
		name[len] = '\0';
		reg = reg_name(name, rbuf, sizeof(rbuf));
		f->base = KTAP_FETCH_REG;
		f->reg = kp_strtab(c->S, reg, (uint32_t)strlen(reg));
		*pp = p + 1 + len;
		return 0;
	}
	if (*p == '\\') {
		p++;
		if (parse_num(&p, &v)) {
			c->why = "expected a number after '\\'";
			return -1;
		}
		f->base = KTAP_FETCH_IMM;
		f->imm = v;
		*pp = p;
		return 0;
	}
	if (*p == '@') {
		p++;
		if (*p >= '0' && *p <= '9') {
			if (parse_num(&p, &v)) {
				c->why = "bad address";
				return -1;
			}
		} else {
			int64_t off = 0;

			len = strspn(p, "abcdefghijklmnopqrstuvwxyz"
				     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.");
			if (!len || c->user) {
				c->why = c->user ?
					"@SYMBOL names a kernel symbol: not in a uprobe" :
					"expected @ADDRESS or @SYMBOL";
				return -1;
			}
			v = (int64_t)kp_ksym_lookup(c->S, p, len, c->line,
						    c->col);
			/* not found: reported there */
			if (!v)
				return -2;	/* reported */
			p += len;
			if ((*p == '+' || *p == '-') && parse_num(&p, &off)) {
				c->why = "bad offset after the symbol";
				return -1;
			}
			v += off;
		}
		f->base = KTAP_FETCH_IMM;
		f->imm = v;
		f->off[f->ndref++] = 0;
		*pp = p;
		return 0;
	}
	if (*p == '$') {
		len = strspn(p + 1, "abcdefghijklmnopqrstuvwxyz0123456789");
		if (len >= sizeof(name))
			len = sizeof(name) - 1;
		memcpy(name, p + 1, len);
		name[len] = '\0';
		*pp = p + 1 + len;
		if (!strcmp(name, "retval")) {
			f->base = KTAP_FETCH_RETVAL;
			return 0;
		}
		if (!strcmp(name, "comm")) {
			f->base = KTAP_FETCH_COMM;
			f->type = KTAP_FETCH_STRING;
			return 0;
		}
		if (!strcmp(name, "stack")) {
			f->base = KTAP_FETCH_STACKP;
			return 0;
		}
		if (!strncmp(name, "stack", 5) && name[5] &&
		    strspn(name + 5, "0123456789") == strlen(name + 5)) {
			f->base = KTAP_FETCH_STACK;
			f->reg = (uint32_t)atoi(name + 5);
			if (f->reg >= 512) {
				c->why = "$stackN: N must be below 512";
				return -1;
			}
			return 0;
		}
		if (!strncmp(name, "arg", 3) && name[3] &&
		    strspn(name + 3, "0123456789") == strlen(name + 3)) {
			f->base = KTAP_FETCH_ARG;
			f->reg = (uint32_t)atoi(name + 3);
			if (f->reg < 1 || f->reg > 6) {
				c->why = "$argN: N must be 1 to 6";
				return -1;
			}
			return 0;
		}
		c->why = "unknown $variable ($argN, $stackN, $stack, $retval, $comm)";
		return -1;
	}
	c->why = "expected %REG, $VAR, @ADDR, \\IMM or +OFF(FETCHARG)";
	return -1;
}

static int valid_name(const char *s, size_t len)
{
	size_t i;

	if (!len || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (i = 0; i < len; i++)
		if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return 0;
	return 1;
}

/* One "[NAME=]FETCHARG[:TYPE]" into @f; @pos is its 1-based position. */
static int parse_one(struct fetch_ctx *c, char *arg, uint32_t pos,
		     struct ktap_bc_fetch *f, char *name, size_t namesz)
{
	char *eq = strchr(arg, '='), *colon;
	const char *p, *type = NULL;
	size_t i;
	int ret;

	memset(f, 0, sizeof(*f));
	f->type = KTAP_FETCH_X64;
	if (eq && valid_name(arg, (size_t)(eq - arg))) {
		snprintf(name, namesz, "%.*s", (int)(eq - arg), arg);
		p = eq + 1;
	} else {
		snprintf(name, namesz, "arg%u", pos);
		p = arg;
	}
	for (i = 0; i < sizeof(reserved_names) / sizeof(reserved_names[0]);
	     i++) {
		if (!strcmp(name, reserved_names[i])) {
			c->why = "the event already has a field of that name";
			return -1;
		}
	}
	/* The type follows the last ':' outside parentheses. */
	colon = strrchr(p, ':');
	if (colon && !strchr(colon, ')')) {
		*colon = '\0';
		type = colon + 1;
	}
	ret = parse_fetcharg(c, &p, f, 0);
	if (ret)
		return ret;
	if (*p) {
		c->why = "unexpected text after the argument";
		return -1;
	}
	if (!type)
		return 0;
	if (!strcmp(type, "ustring")) {
		f->type = KTAP_FETCH_STRING;
		f->flags |= KTAP_FETCH_F_USER;
		return 0;
	}
	for (i = 0; i < KTAP_FETCH_TYPE__COUNT; i++) {
		if (!strcmp(type, type_names[i])) {
			if (f->base == KTAP_FETCH_COMM &&
			    i != KTAP_FETCH_STRING) {
				c->why = "$comm is a string";
				return -1;
			}
			f->type = (uint8_t)i;
			return 0;
		}
	}
	c->why = "unknown type (u8..u64, s8..s64, x8..x64, string, ustring)";
	return -1;
}

int kp_fetch_parse(struct kp_state *S, const char *spec, const char *args,
		   uint32_t first, uint32_t n, int ret, int user,
		   uint32_t line, uint32_t col)
{
	struct fetch_ctx c = {
		.S = S, .spec = spec, .user = user, .line = line, .col = col,
	};
	struct ktap_bc_fetch f[KTAP_MAX_FETCH_ARGS];
	char names[KTAP_MAX_FETCH_ARGS][64], buf[512], orig[512];
	uint32_t nf = 0, i, j;
	const char *p = args;

	while (*p) {
		size_t len;
		int err;

		p += strspn(p, " \t");
		len = strcspn(p, " \t");
		if (!len)
			break;
		if (len >= sizeof(buf)) {
			kp_error(S, line, col, KP_E_FETCH, "?", spec,
				 "argument too long");
			return -1;
		}
		memcpy(buf, p, len);
		buf[len] = '\0';
		c.arg = p;
		if (nf == KTAP_MAX_FETCH_ARGS) {
			kp_error(S, line, col, KP_E_FETCH, buf, spec,
				 "a probe takes at most 16 arguments");
			return -1;
		}
		memcpy(orig, buf, len + 1);
		err = parse_one(&c, buf, nf + 1, &f[nf], names[nf],
				sizeof(names[nf]));
		if (!err && f[nf].base == KTAP_FETCH_RETVAL && !ret)
			c.why = "$retval needs a return probe";
		else if (!err && f[nf].base == KTAP_FETCH_ARG && ret)
			c.why = "$argN is only known at the function's entry";
		for (j = 0; !err && !c.why && j < nf; j++)
			if (!strcmp(names[j], names[nf]))
				c.why = "two arguments have this name";
		if (err == -1 || (!err && c.why))
			kp_error(S, line, col, KP_E_FETCH, orig, spec, c.why);
		if (err || c.why)
			return -1;
		nf++;
		p += len;
	}
	for (i = 0; i < n; i++) {
		for (j = 0; j < nf; j++) {
			f[j].probe = first + i;
			f[j].name = kp_strtab(S, names[j],
					      (uint32_t)strlen(names[j]));
			kp_fetch_add(S, &f[j]);
		}
	}
	return 0;
}

/* ---- USDT argument specs ---- */

/*
 * "[-]SIZE@OPERAND": OPERAND as the assembler printed it for the "nor"
 * constraint of sys/sdt.h on x86-64: %REG, $IMM, OFF(%REG) or (%REG).
 * RIP-relative and indexed operands name locations a uprobe cannot
 * compute without the load address, and are not decoded.
 */
static int usdt_one(struct kp_state *S, const char *a, struct ktap_bc_fetch *f,
		    const char **why)
{
	static const uint8_t utype[9] = {
		[1] = KTAP_FETCH_U8, [2] = KTAP_FETCH_U16,
		[4] = KTAP_FETCH_U32, [8] = KTAP_FETCH_U64,
	};
	static const uint8_t stype[9] = {
		[1] = KTAP_FETCH_S8, [2] = KTAP_FETCH_S16,
		[4] = KTAP_FETCH_S32, [8] = KTAP_FETCH_S64,
	};
	const char *at = strchr(a, '@'), *p;
	char reg[16], rbuf[16];
	int neg = 0, size;
	int64_t v = 0;
	size_t len;

	memset(f, 0, sizeof(*f));
	if (!at) {
		*why = "argument without a size (N@OPERAND)";
		return -1;
	}
	if (*a == '-') {
		neg = 1;
		a++;
	}
	size = atoi(a);
	if (size != 1 && size != 2 && size != 4 && size != 8) {
		*why = "argument size is not 1, 2, 4 or 8";
		return -1;
	}
	f->type = neg ? stype[size] : utype[size];
	p = at + 1;
	if (*p == '$') {
		p++;
		if (parse_num(&p, &v) || *p) {
			*why = "bad immediate argument";
			return -1;
		}
		f->base = KTAP_FETCH_IMM;
		f->imm = v;
		return 0;
	}
	if (*p != '%' && *p != '(') {
		if ((*p == '-' || (*p >= '0' && *p <= '9')) &&
		    !parse_num(&p, &v) && *p == '(') {
			f->off[f->ndref++] = v;
		} else {
			*why = "symbolic (RIP-relative) argument";
			return -1;
		}
	} else if (*p == '(') {
		f->off[f->ndref++] = 0;
	}
	if (*p == '(')
		p++;
	if (*p != '%') {
		*why = "expected a register";
		return -1;
	}
	len = strspn(p + 1, "abcdefghijklmnopqrstuvwxyz0123456789");
	if (!len || len >= sizeof(reg)) {
		*why = "bad register name";
		return -1;
	}
	memcpy(reg, p + 1, len);
	reg[len] = '\0';
	p += 1 + len;
	if (f->ndref && *p++ != ')') {
		*why = "indexed memory argument";
		return -1;
	}
	if (*p) {
		*why = "unexpected text in the argument";
		return -1;
	}
	f->base = KTAP_FETCH_REG;
	p = reg_name(reg, rbuf, sizeof(rbuf));
	f->reg = kp_strtab(S, p, (uint32_t)strlen(p));
	return 0;
}

int kp_fetch_usdt(struct kp_state *S, const char *args, uint32_t probe,
		  const char **why)
{
	const char *p = args;
	char buf[128], name[16];
	int n = 0;

	*why = NULL;
	while (*p) {
		struct ktap_bc_fetch f;
		size_t len;

		p += strspn(p, " \t");
		len = strcspn(p, " \t");
		if (!len)
			break;
		if (len >= sizeof(buf) || n == KTAP_MAX_FETCH_ARGS) {
			*why = len >= sizeof(buf) ? "argument too long" :
			       "more than 16 arguments";
			break;
		}
		memcpy(buf, p, len);
		buf[len] = '\0';
		if (usdt_one(S, buf, &f, why))
			break;
		snprintf(name, sizeof(name), "arg%d", n + 1);
		f.probe = probe;
		f.name = kp_strtab(S, name, (uint32_t)strlen(name));
		kp_fetch_add(S, &f);
		n++;
		p += len;
	}
	return n;
}
