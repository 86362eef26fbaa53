/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ktap lexer: turns the whole script into an array of tokens before
 * parsing starts, so the parser can look ahead freely and can find
 * every global name first. Two tokens are context dependent: the event
 * definition after `trace` (TK_EVENTDEF, raw text up to `{`, a
 * whitespace-led `/` or the end of the line) and the period probes
 * `tick-1s` / `profile-100us` (TK_PERIOD).
 */
#ifndef KP_LEX_H
#define KP_LEX_H

#include "kp.h"

#define KP_TOKENS(T)							\
	T(EOF, "end of file") T(NAME, "identifier") T(INT, "number")	\
	T(STRING, "string") T(EVENTDEF, "event definition")		\
	T(PERIOD, "period probe") T(KSYM, "kernel symbol")		\
	/* keywords */							\
	T(AND, "'and'") T(BREAK, "'break'") T(ELSE, "'else'")		\
	T(ELSEIF, "'elseif'") T(FALSE, "'false'") T(FOR, "'for'")	\
	T(FUNCTION, "'function'") T(IF, "'if'") T(IN, "'in'")		\
	T(LOCAL, "'local'") T(NIL, "'nil'") T(NOT, "'not'")		\
	T(OR, "'or'") T(RETURN, "'return'") T(TRUE, "'true'")		\
	T(VAR, "'var'") T(WHILE, "'while'") T(TRACE, "'trace'")	\
	T(TRACE_END, "'trace_end'")					\
	/* operators */							\
	T(EQ, "'=='") T(NE, "'!='") T(LE, "'<='") T(GE, "'>='")	\
	T(CONCAT, "'..'") T(ADD_EQ, "'+='") T(SUB_EQ, "'-='")		\
	T(MUL_EQ, "'*='") T(DIV_EQ, "'/='") T(MOD_EQ, "'%='")		\
	T(CAT_EQ, "'..='") T(AGGR, "'<<<'") T(ANDAND, "'&&'")		\
	T(OROR, "'||'")							\
	T(PLUS, "'+'") T(MINUS, "'-'") T(STAR, "'*'") T(SLASH, "'/'")	\
	T(PERCENT, "'%'") T(LT, "'<'") T(GT, "'>'") T(ASSIGN, "'='")	\
	T(LPAREN, "'('") T(RPAREN, "')'") T(LBRACE, "'{'")		\
	T(RBRACE, "'}'") T(LBRACKET, "'['") T(RBRACKET, "']'")		\
	T(COMMA, "','") T(SEMI, "';'") T(DOT, "'.'") T(COLON, "':'")	\
	T(BANG, "'!'") T(ERROR, "invalid token")

#define __KP_TK_ENUM(name, text)	TK_##name,
enum kp_tk {
	KP_TOKENS(__KP_TK_ENUM)
	TK__COUNT
};
#undef __KP_TK_ENUM

extern const char *const kp_tkname[TK__COUNT];

enum kp_period_kind { KP_PERIOD_TICK, KP_PERIOD_PROFILE };

struct kp_token {
	uint8_t		type;		/* enum kp_tk */
	uint8_t		pkind;		/* TK_PERIOD: enum kp_period_kind */
	uint8_t		nl_before;	/* first token of its line */
	uint32_t	line, col;
	union {
		int64_t		i;	/* TK_INT, TK_PERIOD (ns) */
		struct kp_str	str;	/* TK_NAME, TK_STRING, TK_EVENTDEF */
	};
	const char	*text;		/* TK_PERIOD: as written */
};

/* Tokenize S->src into S->toks; errors are reported, never fatal. */
void kp_lex(struct kp_state *S);
/* A short printable description of token @t for diagnostics. */
const char *kp_tkdesc(struct kp_state *S, const struct kp_token *t);

#endif /* KP_LEX_H */
