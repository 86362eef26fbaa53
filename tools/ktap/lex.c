// SPDX-License-Identifier: GPL-2.0
/*
 * ktap lexer. See lex.h. Errors (bad characters, strings, numbers) are
 * reported here with their position and lexing goes on, so one run
 * shows several of them; the parser then stops at TK_ERROR tokens.
 */
#include <ctype.h>
#include <string.h>
#include "lex.h"

#define __KP_TK_TEXT(name, text)					\
	[TK_##name] = text,
const char *const kp_tkname[TK__COUNT] = {
	KP_TOKENS(__KP_TK_TEXT)
};
#undef __KP_TK_TEXT

static const struct { const char *w; enum kp_tk t; } kp_keywords[] = {
	{ "and", TK_AND }, { "break", TK_BREAK }, { "else", TK_ELSE },
	{ "elseif", TK_ELSEIF }, { "false", TK_FALSE }, { "for", TK_FOR },
	{ "function", TK_FUNCTION }, { "if", TK_IF }, { "in", TK_IN },
	{ "local", TK_LOCAL }, { "nil", TK_NIL }, { "not", TK_NOT },
	{ "or", TK_OR }, { "return", TK_RETURN }, { "true", TK_TRUE },
	{ "var", TK_VAR }, { "while", TK_WHILE }, { "trace", TK_TRACE },
	{ "trace_end", TK_TRACE_END },
};

/* Three-, two-character operators, longest first. */
static const struct { const char *op; enum kp_tk t; } kp_ops[] = {
	{ "<<<", TK_AGGR }, { "..=", TK_CAT_EQ },
	{ "==", TK_EQ }, { "!=", TK_NE }, { "~=", TK_NE }, { "<=", TK_LE },
	{ ">=", TK_GE }, { "..", TK_CONCAT }, { "+=", TK_ADD_EQ },
	{ "-=", TK_SUB_EQ }, { "*=", TK_MUL_EQ }, { "/=", TK_DIV_EQ },
	{ "%=", TK_MOD_EQ }, { "&&", TK_ANDAND }, { "||", TK_OROR },
	{ "+", TK_PLUS }, { "-", TK_MINUS }, { "*", TK_STAR },
	{ "/", TK_SLASH }, { "%", TK_PERCENT }, { "<", TK_LT },
	{ ">", TK_GT }, { "=", TK_ASSIGN }, { "(", TK_LPAREN },
	{ ")", TK_RPAREN }, { "{", TK_LBRACE }, { "}", TK_RBRACE },
	{ "[", TK_LBRACKET }, { "]", TK_RBRACKET }, { ",", TK_COMMA },
	{ ";", TK_SEMI }, { ".", TK_DOT }, { ":", TK_COLON }, { "!", TK_BANG },
};

struct kp_lexer {
	struct kp_state	*S;
	const char	*p, *end, *bol;	/* cursor, end, beginning of line */
	uint32_t	line;
	int		nl;		/* a newline since the last token */
	char		*buf;		/* string literal being built */
	uint32_t	blen;
};

static uint32_t lx_col(struct kp_lexer *L, const char *at)
{
	return (uint32_t)(at - L->bol) + 1;
}

static struct kp_token *lx_push(struct kp_lexer *L, enum kp_tk t,
				const char *at)
{
	struct kp_state *S = L->S;
	struct kp_token *tok;

	kp_grow(&S->arena, (void **)&S->toks, &S->tokcap, S->ntoks + 1,
		sizeof(*S->toks));
	tok = &S->toks[S->ntoks++];
	memset(tok, 0, sizeof(*tok));
	tok->type = t;
	tok->line = L->line;
	tok->col = lx_col(L, at);
	tok->nl_before = L->nl;
	L->nl = 0;
	return tok;
}

static void lx_newline(struct kp_lexer *L)
{
	L->line++;
	L->bol = L->p;
	L->nl = 1;
}

/* Skip blanks and comments (# ..., -- ..., and C block comments). */
static void lx_skip(struct kp_lexer *L)
{
	while (L->p < L->end) {
		char c = *L->p;

		if (c == '\n') {
			L->p++;
			lx_newline(L);
		} else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' ||
			   c == '\v') {
			L->p++;
		} else if (c == '#' ||
			   (c == '-' && L->p + 1 < L->end && L->p[1] == '-')) {
			while (L->p < L->end && *L->p != '\n')
				L->p++;
		} else if (c == '/' && L->p + 1 < L->end && L->p[1] == '*') {
			const char *start = L->p;
			uint32_t line = L->line, col = lx_col(L, start);

			L->p += 2;
			while (L->p < L->end &&
			       !(*L->p == '*' && L->p + 1 < L->end &&
				 L->p[1] == '/')) {
				if (*L->p++ == '\n')
					lx_newline(L);
			}
			if (L->p >= L->end) {
				kp_error(L->S, line, col, KP_E_UNTERM_COMMENT);
				return;
			}
			L->p += 2;
		} else {
			return;
		}
	}
}

static int lx_isname(int c)
{
	return isalnum(c) || c == '_';
}

static void lx_addc(struct kp_lexer *L, char c)
{
	if (L->blen < KP_MAX_STRING + 1)
		L->buf[L->blen] = c;
	L->blen++;
}

static int lx_hex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A quoted string with C/Lua escapes. */
static void lx_string(struct kp_lexer *L)
{
	const char *start = L->p;
	char q = *L->p++;
	struct kp_token *t = lx_push(L, TK_STRING, start);
	int bad = 0;

	L->blen = 0;
	for (;;) {
		char c;

		if (L->p >= L->end || *L->p == '\n') {
			kp_error(L->S, t->line, t->col, KP_E_UNTERM_STR);
			t->type = TK_ERROR;
			return;
		}
		c = *L->p++;
		if (c == q)
			break;
		if (c != '\\') {
			lx_addc(L, c);
			continue;
		}
		if (L->p >= L->end)
			continue;	/* reported as unterminated */
		c = *L->p++;
		switch (c) {
		case 'n':
			lx_addc(L, '\n');
			break;
		case 't':
			lx_addc(L, '\t');
			break;
		case 'r':
			lx_addc(L, '\r');
			break;
		case 'a':
			lx_addc(L, '\a');
			break;
		case 'b':
			lx_addc(L, '\b');
			break;
		case 'f':
			lx_addc(L, '\f');
			break;
		case 'v':
			lx_addc(L, '\v');
			break;
		case 'e':
			lx_addc(L, 033);
			break;
		case '\\':
		case '"':
		case '\'':
			lx_addc(L, c);
			break;
		case '\n':
			lx_addc(L, '\n');
			lx_newline(L);
			break;
		case 'x': {
			int h1 = L->p < L->end ? lx_hex(L->p[0]) : -1;
			int h2 = L->p + 1 < L->end ? lx_hex(L->p[1]) : -1;

			if (h1 < 0 || h2 < 0) {
				char e[4] = "x";

				if (h1 >= 0 || (L->p < L->end && isprint((unsigned char)L->p[0])))
					e[1] = L->p[0];
				kp_error(L->S, L->line, lx_col(L, L->p - 2),
					 KP_E_BAD_ESCAPE, e);
				bad = 1;
				break;
			}
			lx_addc(L, (char)(h1 * 16 + h2));
			L->p += 2;
			break;
		}
		default:
			if (c >= '0' && c <= '9') {
				int v = c - '0', n = 1;

				while (n < 3 && L->p < L->end &&
				       *L->p >= '0' && *L->p <= '9') {
					v = v * 10 + (*L->p++ - '0');
					n++;
				}
				if (v > 255) {
					char e[16];

					snprintf(e, sizeof(e), "%d", v);
					kp_error(L->S, L->line,
						 lx_col(L, L->p - n - 1),
						 KP_E_BAD_ESCAPE, e);
					bad = 1;
				}
				lx_addc(L, (char)v);
			} else {
				char e[2] = { c, 0 };

				if (!isprint((unsigned char)c))
					e[0] = '?';
				kp_error(L->S, L->line, lx_col(L, L->p - 2),
					 KP_E_BAD_ESCAPE, e);
				bad = 1;
			}
		}
	}
	if (L->blen > KP_MAX_STRING) {
		kp_error(L->S, t->line, t->col, KP_E_STR_LONG, KP_MAX_STRING);
		bad = 1;
	}
	if (bad) {
		t->type = TK_ERROR;
		return;
	}
	t->str.s = kp_strndup(&L->S->arena, L->buf, L->blen);
	t->str.len = L->blen;
}

/*
 * `name` of ktap 0.4: a kernel symbol, whose address the parser looks
 * up. Symbol names may hold dots (foo.cold, foo.isra.0).
 */
static void lx_ksym(struct kp_lexer *L)
{
	const char *start = L->p++, *name = L->p;
	struct kp_token *t = lx_push(L, TK_KSYM, start);
	size_t n;

	while (L->p < L->end && (lx_isname(*L->p) || *L->p == '.'))
		L->p++;
	n = (size_t)(L->p - name);
	if (L->p >= L->end || *L->p != '`' || !n || n > 255) {
		kp_error(L->S, t->line, t->col, KP_E_KSYM_SYNTAX);
		t->type = TK_ERROR;
		return;
	}
	L->p++;
	t->str.s = kp_strndup(&L->S->arena, name, n);
	t->str.len = (uint32_t)n;
}

static void lx_number(struct kp_lexer *L)
{
	const char *start = L->p;
	struct kp_token *t = lx_push(L, TK_INT, start);
	uint64_t v = 0;
	int base = 10, ovf = 0, d;

	if (*L->p == '0' && L->p + 1 < L->end &&
	    (L->p[1] == 'x' || L->p[1] == 'X')) {
		base = 16;
		L->p += 2;
	}
	while (L->p < L->end && (d = lx_hex(*L->p)) >= 0 && d < base) {
		if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			ovf = 1;
		v = v * (uint64_t)base + (uint64_t)d;
		L->p++;
	}
	if ((base == 16 && L->p == start + 2) ||
	    (L->p < L->end && (lx_isname(*L->p) || *L->p == '.') &&
	     !(*L->p == '.' && L->p + 1 < L->end && L->p[1] == '.'))) {
		while (L->p < L->end && (lx_isname(*L->p) || *L->p == '.'))
			L->p++;
		kp_error(L->S, t->line, t->col, KP_E_BAD_NUMBER,
			 kp_strndup(&L->S->arena, start, (size_t)(L->p - start)));
		t->type = TK_ERROR;
		return;
	}
	/* a decimal beyond 64 bits saturates, as strtoll() does */
	if (base == 10 && (ovf || v > (uint64_t)INT64_MAX + 1)) {
		t->i = INT64_MAX;
		return;
	}
	if (ovf) {
		kp_error(L->S, t->line, t->col, KP_E_NUM_RANGE,
			 kp_strndup(&L->S->arena, start, (size_t)(L->p - start)));
		t->type = TK_ERROR;
		return;
	}
	t->i = (int64_t)v;
}

/* tick-N<unit> and profile-N<unit>: returns 1 if one was lexed. */
static int lx_period(struct kp_lexer *L, const char *start, size_t n)
{
	const char *p = L->p, *unit;
	enum kp_period_kind kind;
	struct kp_token *t;
	uint64_t v = 0, mul;
	size_t ulen;
	char *text;

	if (n == 4 && !memcmp(start, "tick", 4))
		kind = KP_PERIOD_TICK;
	else if (n == 7 && !memcmp(start, "profile", 7))
		kind = KP_PERIOD_PROFILE;
	else
		return 0;
	if (p + 1 >= L->end || *p != '-' || !isdigit((unsigned char)p[1]))
		return 0;
	p++;
	while (p < L->end && isdigit((unsigned char)*p) && v < (1ULL << 40))
		v = v * 10 + (uint64_t)(*p++ - '0');
	unit = p;
	while (p < L->end && lx_isname(*p))
		p++;
	if (unit == p)
		return 0;	/* tick - 1: an expression */
	L->p = p;
	t = lx_push(L, TK_PERIOD, start);
	text = kp_strndup(&L->S->arena, start, (size_t)(p - start));
	t->text = text;
	t->pkind = kind;
	ulen = (size_t)(p - unit);
	if ((ulen == 1 && *unit == 's') || (ulen == 3 && !memcmp(unit, "sec", 3)))
		mul = 1000000000ULL;
	else if ((ulen == 2 && !memcmp(unit, "ms", 2)) ||
		 (ulen == 4 && !memcmp(unit, "msec", 4)))
		mul = 1000000ULL;
	else if ((ulen == 2 && !memcmp(unit, "us", 2)) ||
		 (ulen == 4 && !memcmp(unit, "usec", 4)))
		mul = 1000ULL;
	else if ((ulen == 2 && !memcmp(unit, "ns", 2)) ||
		 (ulen == 4 && !memcmp(unit, "nsec", 4)))
		mul = 1ULL;
	else if (ulen == 2 && !memcmp(unit, "hz", 2))
		mul = 0;
	else {
		kp_error(L->S, t->line, t->col, KP_E_BAD_PERIOD, text);
		t->type = TK_ERROR;
		return 1;
	}
	if (mul)
		v = v >= (1ULL << 40) ? UINT64_MAX : v * mul;
	else
		v = v ? 1000000000ULL / v : 0;
	if (v < 10000 || v > 3600ULL * 1000000000ULL) {
		kp_error(L->S, t->line, t->col, KP_E_PERIOD_RANGE, text);
		t->type = TK_ERROR;
		return 1;
	}
	t->i = (int64_t)v;
	return 1;
}

/*
 * The original's function probe, `trace ftrace:function` followed by
 * the filter "ip==GLOB" between slashes: ftrace's function filter, a
 * glob, not an expression. It becomes the event ftrace:function:GLOB.
 */
static void lx_ftrace_filter(struct kp_lexer *L, struct kp_token *t)
{
	const char *p = L->p, *glob, *gend;
	size_t n;
	char *s;

	if (p >= L->end || *p != '/')
		return;
	for (p++; p < L->end && (*p == ' ' || *p == '\t'); p++)
		;
	if (L->end - p < 4 || memcmp(p, "ip", 2))
		return;
	for (p += 2; p < L->end && (*p == ' ' || *p == '\t'); p++)
		;
	if (L->end - p < 2 || memcmp(p, "==", 2))
		return;
	for (p += 2; p < L->end && (*p == ' ' || *p == '\t'); p++)
		;
	glob = p;
	while (p < L->end && *p != '/' && *p != ' ' && *p != '\t' &&
	       *p != '\n')
		p++;
	gend = p;
	while (p < L->end && (*p == ' ' || *p == '\t'))
		p++;
	if (p >= L->end || *p != '/' || gend == glob)
		return;
	n = 16 + (size_t)(gend - glob);
	s = kp_alloc(&L->S->arena, n + 1);
	memcpy(s, "ftrace:function:", 16);
	memcpy(s + 16, glob, (size_t)(gend - glob));
	s[n] = '\0';
	t->str.s = s;
	t->str.len = (uint32_t)n;
	L->p = p + 1;
}

/* The raw event definition after `trace`. */
static void lx_eventdef(struct kp_lexer *L)
{
	const char *start, *end;
	struct kp_token *t;

	while (L->p < L->end && (*L->p == ' ' || *L->p == '\t'))
		L->p++;
	start = L->p;
	while (L->p < L->end && *L->p != '{' && *L->p != '\n' &&
	       !(*L->p == '/' && L->p > start &&
		 (L->p[-1] == ' ' || L->p[-1] == '\t')))
		L->p++;
	end = L->p;
	while (end > start && (end[-1] == ' ' || end[-1] == '\t' ||
			       end[-1] == '\r'))
		end--;
	t = lx_push(L, TK_EVENTDEF, start);
	t->str.s = kp_strndup(&L->S->arena, start, (size_t)(end - start));
	t->str.len = (uint32_t)(end - start);
	if (t->str.len == 15 && !memcmp(start, "ftrace:function", 15))
		lx_ftrace_filter(L, t);
}

void kp_lex(struct kp_state *S)
{
	struct kp_lexer L = {
		.S = S, .p = S->src, .end = S->src + S->srclen,
		.bol = S->src, .line = 1, .nl = 1,
	};
	size_t i;

	L.buf = kp_alloc(&S->arena, KP_MAX_STRING + 2);
	for (;;) {
		const char *start;
		char c;

		lx_skip(&L);
		if (L.p >= L.end)
			break;
		start = L.p;
		c = *L.p;
		if (isalpha((unsigned char)c) || c == '_') {
			struct kp_token *t;
			size_t n;

			while (L.p < L.end && lx_isname(*L.p))
				L.p++;
			n = (size_t)(L.p - start);
			if (lx_period(&L, start, n))
				continue;
			for (i = 0; i < ARRAY_SIZE(kp_keywords); i++) {
				if (strlen(kp_keywords[i].w) == n &&
				    !memcmp(kp_keywords[i].w, start, n))
					break;
			}
			if (i < ARRAY_SIZE(kp_keywords)) {
				lx_push(&L, kp_keywords[i].t, start);
				if (kp_keywords[i].t == TK_TRACE)
					lx_eventdef(&L);
				continue;
			}
			t = lx_push(&L, TK_NAME, start);
			if (n > 255) {
				kp_error(S, t->line, t->col, KP_E_STR_LONG, 255);
				t->type = TK_ERROR;
				continue;
			}
			t->str.s = kp_strndup(&S->arena, start, n);
			t->str.len = (uint32_t)n;
			continue;
		}
		if (isdigit((unsigned char)c)) {
			lx_number(&L);
			continue;
		}
		if (c == '"' || c == '\'') {
			lx_string(&L);
			continue;
		}
		if (c == '`') {
			lx_ksym(&L);
			continue;
		}
		for (i = 0; i < ARRAY_SIZE(kp_ops); i++) {
			size_t n = strlen(kp_ops[i].op);

			if ((size_t)(L.end - L.p) >= n &&
			    !memcmp(L.p, kp_ops[i].op, n))
				break;
		}
		if (i < ARRAY_SIZE(kp_ops)) {
			L.p += strlen(kp_ops[i].op);
			lx_push(&L, kp_ops[i].t, start);
			continue;
		}
		{
			struct kp_token *t = lx_push(&L, TK_ERROR, start);
			char e[8];

			if (isprint((unsigned char)c))
				snprintf(e, sizeof(e), "%c", c);
			else
				snprintf(e, sizeof(e), "\\x%02x", (unsigned char)c);
			kp_error(S, t->line, t->col, KP_E_BAD_CHAR, e);
			L.p++;
		}
	}
	lx_push(&L, TK_EOF, L.p);
}

const char *kp_tkdesc(struct kp_state *S, const struct kp_token *t)
{
	char buf[64];

	switch (t->type) {
	case TK_NAME:
		snprintf(buf, sizeof(buf), "'%.40s'", t->str.s);
		return kp_strndup(&S->arena, buf, strlen(buf));
	case TK_INT:
		snprintf(buf, sizeof(buf), "number %lld", (long long)t->i);
		return kp_strndup(&S->arena, buf, strlen(buf));
	case TK_PERIOD:
		snprintf(buf, sizeof(buf), "'%.40s'", t->text);
		return kp_strndup(&S->arena, buf, strlen(buf));
	default:
		return kp_tkname[t->type];
	}
}
