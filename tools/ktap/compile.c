// SPDX-License-Identifier: GPL-2.0
/*
 * The compiler's passes, in order: lex.c (tokens), parse.c (syntax
 * tree), aggr.c's lowering (aggregation labels, the implicit trace_end),
 * check.c's folding, resolve.c (names, probes), check.c's rules and
 * aggr.c's, arity.c (value counts of calls), gen.c (instructions). Every pass
 * reports what it finds and the next one still runs, so one run shows
 * the errors of all passes; only arity and code generation need an
 * error-free tree.
 */
#include <string.h>
#include "ast.h"
#include "image.h"
#include "lex.h"

int kp_compile_ast(struct kp_state *S, struct kp_ast *ast, int gen)
{
	jmp_buf top;

	memset(ast, 0, sizeof(*ast));
	kp_image_init(S);
	if (S->srclen > KP_MAX_SOURCE) {
		kp_error(S, 0, 0, KP_E_SOURCE_SIZE, KP_MAX_SOURCE);
		kp_flush_errors(S);
		return S->nerrors;
	}
	S->recover = &top;
	if (setjmp(top)) {
		S->recover = NULL;
		kp_flush_errors(S);
		return S->nerrors ? S->nerrors : 1;
	}
	kp_lex(S);
	S->tk = 0;
	kp_parse(S, ast);
	if (ast->main) {
		kp_aggr_lower(S, ast);
		kp_fold(S, ast);
		kp_resolve(S, ast);
		kp_check(S, ast);
		kp_aggr_check(S, ast);
		if (!S->nerrors && gen) {
			kp_arity(S, ast);
			kp_gen(S, ast);
		}
	}
	S->recover = NULL;
	kp_flush_errors(S);
	return S->nerrors;
}

int kp_compile(struct kp_state *S)
{
	struct kp_ast ast;

	return kp_compile_ast(S, &ast, 1);
}
