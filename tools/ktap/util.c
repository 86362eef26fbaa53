// SPDX-License-Identifier: GPL-2.0
/*
 * ktap compiler support: the arena every stage allocates from, the
 * diagnostic printer (file:line:col: error: text, the source line and a
 * caret) and the edit distance behind "did you mean" suggestions.
 */
#include <stdlib.h>
#include <string.h>
#include "kp.h"

#define __KP_ERR_TEXT(name, text)					\
	[KP_E_##name] = text,
const char *const kp_errmsg[KP_E__COUNT] = {
	KP_ERRORS(__KP_ERR_TEXT)
};
#undef __KP_ERR_TEXT

struct kp_chunk {
	struct kp_chunk	*next;
	size_t		used, size;
	max_align_t	data[];
};

#define KP_CHUNK	(64 * 1024)

void *kp_alloc(struct kp_arena *a, size_t n)
{
	struct kp_chunk *c = a->head;
	void *p;

	n = (n + 15) & ~(size_t)15;
	if (!c || c->size - c->used < n) {
		size_t sz = n > KP_CHUNK / 2 ? n : KP_CHUNK;

		c = malloc(sizeof(*c) + sz);
		if (!c) {
			fputs("ktap: out of memory\n", stderr);
			exit(2);
		}
		c->size = sz;
		c->used = 0;
		if (n > KP_CHUNK / 2 && a->head) {	/* keep the open chunk */
			c->next = a->head->next;
			a->head->next = c;
		} else {
			c->next = a->head;
			a->head = c;
		}
	}
	p = (char *)c->data + c->used;
	c->used += n;
	memset(p, 0, n);
	return p;
}

char *kp_strndup(struct kp_arena *a, const char *s, size_t n)
{
	char *p = kp_alloc(a, n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

void kp_grow(struct kp_arena *a, void **p, uint32_t *cap, uint32_t need,
	     size_t sz)
{
	uint32_t ncap = *cap ? *cap : 16;
	void *np;

	if (need <= *cap)
		return;
	while (ncap < need)
		ncap *= 2;
	np = kp_alloc(a, (size_t)ncap * sz);
	if (*p)
		memcpy(np, *p, (size_t)*cap * sz);
	*p = np;
	*cap = ncap;
}

void kp_arena_free(struct kp_arena *a)
{
	struct kp_chunk *c = a->head, *n;

	for (; c; c = n) {
		n = c->next;
		free(c);
	}
	a->head = NULL;
}

void kp_state_init(struct kp_state *S, const char *file, const char *src,
		   uint32_t len, FILE *err)
{
	memset(S, 0, sizeof(*S));
	S->file = file;
	S->src = src;
	S->srclen = len;
	S->err = err;
	S->tracefs = getenv("KTAP_TRACEFS");
	S->kallsyms = getenv("KTAP_KALLSYMS");
}

void kp_state_free(struct kp_state *S)
{
	kp_arena_free(&S->arena);
}

/*
 * Write the source line @line (at most 200 bytes of it) and a caret
 * under column @col into @buf of @n bytes (n >= 420); returns the length.
 */
static int kp_show_line(struct kp_state *S, char *buf, size_t n,
			uint32_t line, uint32_t col)
{
	const char *p = S->src, *end = S->src + S->srclen, *e;
	uint32_t l = 1, i;
	size_t len;

	buf[0] = '\0';
	if (!line || n < 420)
		return 0;
	while (p < end && l < line) {
		if (*p++ == '\n')
			l++;
	}
	if (l != line)
		return 0;
	for (e = p; e < end && *e != '\n' && e - p < 200; e++)
		;
	buf[0] = ' ';
	memcpy(buf + 1, p, (size_t)(e - p));
	len = 1 + (size_t)(e - p);
	buf[len++] = '\n';
	buf[len++] = ' ';
	for (i = 1; i < col && p + i - 1 < e; i++)
		buf[len++] = p[i - 1] == '\t' ? '\t' : ' ';
	buf[len++] = '^';
	buf[len++] = '\n';
	buf[len] = '\0';
	return (int)len;
}

/*
 * Diagnostics are collected and printed sorted by position when the
 * compilation ends (the lexer runs ahead of the parser), at most
 * KP_MAX_ERRORS of them.
 */
struct kp_diag {
	uint32_t	line, col, seq;
	char		*text;
};

/*
 * One diagnostic of @kind ("error" or "warning"). Warnings share the
 * errors' table, order and limit but leave nerrors alone, so a script
 * with only warnings still compiles.
 */
static void diag(struct kp_state *S, const char *kind, uint32_t line,
		 uint32_t col, enum kp_err e, va_list ap)
{
	char buf[1600];
	struct kp_diag *d;
	size_t n;
	int r;

	if (S->ndiags >= KP_MAX_ERRORS)
		return;
	/* the message: at most 1000 bytes, then the source line */
	if (line)
		r = snprintf(buf, 1000, "%s:%u:%u: %s: ", S->file, line, col,
			     kind);
	else
		r = snprintf(buf, 1000, "%s: %s: ", S->file, kind);
	n = r < 0 ? 0 : (size_t)r >= 1000 ? 999 : (size_t)r;
	r = vsnprintf(buf + n, 1000 - n, kp_errmsg[e], ap);
	n += r < 0 ? 0 : (size_t)r >= 1000 - n ? 999 - n : (size_t)r;
	buf[n++] = '\n';
	kp_show_line(S, buf + n, sizeof(buf) - n, line, col);
	kp_grow(&S->arena, (void **)&S->diags, &S->diagcap, S->ndiags + 1,
		sizeof(*S->diags));
	d = &S->diags[S->ndiags];
	d->line = line ? line : UINT32_MAX;
	d->col = col;
	d->seq = S->ndiags++;
	d->text = kp_strndup(&S->arena, buf, strlen(buf));
}

void kp_verror(struct kp_state *S, uint32_t line, uint32_t col,
	       enum kp_err e, va_list ap)
{
	S->nerrors++;
	diag(S, "error", line, col, e, ap);
}

void kp_warn(struct kp_state *S, uint32_t line, uint32_t col,
	     enum kp_err e, ...)
{
	va_list ap;

	va_start(ap, e);
	diag(S, "warning", line, col, e, ap);
	va_end(ap);
}

static int diag_cmp(const void *a, const void *b)
{
	const struct kp_diag *x = a, *y = b;

	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->col != y->col)
		return x->col < y->col ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void kp_flush_errors(struct kp_state *S)
{
	uint32_t i;

	if (S->ndiags > 1)
		qsort(S->diags, S->ndiags, sizeof(*S->diags), diag_cmp);
	for (i = 0; i < S->ndiags; i++)
		fputs(S->diags[i].text, S->err);
	if (S->nerrors > KP_MAX_ERRORS)
		fprintf(S->err, "%s: error: %s\n", S->file,
			kp_errmsg[KP_E_TOO_MANY_ERRORS]);
	S->ndiags = 0;
	fflush(S->err);
}

void kp_error(struct kp_state *S, uint32_t line, uint32_t col,
	      enum kp_err e, ...)
{
	va_list ap;

	va_start(ap, e);
	kp_verror(S, line, col, e, ap);
	va_end(ap);
}

void kp_fatal(struct kp_state *S, uint32_t line, uint32_t col,
	      enum kp_err e, ...)
{
	va_list ap;

	va_start(ap, e);
	kp_verror(S, line, col, e, ap);
	va_end(ap);
	longjmp(*S->recover, 1);
}

int kp_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	int row[128], prev, tmp, best;

	if (la > 120 || lb > 120)
		return 1000;
	for (j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = (int)i;
		for (j = 1; j <= lb; j++) {
			tmp = row[j];
			best = prev + (a[i - 1] != b[j - 1]);
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = tmp;
		}
	}
	return row[lb];
}

void kp_suggest(char *buf, size_t n, const char *name, const char *best)
{
	size_t len = strlen(name);
	int lim = len < 4 ? 1 : len < 8 ? 2 : (int)len / 4 + 1;

	buf[0] = '\0';
	if (best && kp_distance(name, best) <= lim)
		snprintf(buf, n, " (did you mean '%s'?)", best);
}
