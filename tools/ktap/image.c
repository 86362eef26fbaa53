// SPDX-License-Identifier: GPL-2.0
/*
 * The image being built: constants and strings (deduplicated through
 * one open-addressing hash), global slots, the probe table, function
 * prototypes, and the writer that lays them out as the bytecode image
 * of include/uapi/linux/ktap.h. gen.c fills the prototypes' code.
 */
#include <stdlib.h>
#include <string.h>
#include "image.h"

/* ---- hash of constants, strtab strings and globals ---- */

enum { H_INT = 1, H_STR, H_TAB, H_GLOBAL };

struct kp_hent {
	uint8_t		kind;
	uint32_t	len;
	const char	*s;
	int64_t		i;
	uint32_t	val;
};

static uint32_t h_hash(int kind, const char *s, uint32_t len, int64_t i)
{
	uint32_t h = 2166136261u ^ (uint32_t)kind;
	uint32_t n;

	if (kind == H_INT) {
		h ^= (uint32_t)i;
		h *= 16777619u;
		h ^= (uint32_t)((uint64_t)i >> 32);
		return h * 16777619u;
	}
	for (n = 0; n < len; n++) {
		h ^= (unsigned char)s[n];
		h *= 16777619u;
	}
	return h;
}

static void h_rehash(struct kp_state *S, struct kp_image *I)
{
	struct kp_hent *old = I->hash;
	uint32_t oldcap = I->hashcap, j;

	I->hashcap = oldcap ? oldcap * 2 : 256;
	I->hash = kp_alloc(&S->arena, (size_t)I->hashcap * sizeof(*I->hash));
	for (j = 0; j < oldcap; j++) {
		struct kp_hent *e = &old[j];
		uint32_t h;

		if (!e->kind)
			continue;
		h = h_hash(e->kind, e->s, e->len, e->i) & (I->hashcap - 1);
		while (I->hash[h].kind)
			h = (h + 1) & (I->hashcap - 1);
		I->hash[h] = *e;
	}
}

/* Find or insert; *found tells which. Returns the entry. */
static struct kp_hent *h_get(struct kp_state *S, int kind, const char *s,
			     uint32_t len, int64_t i, int *found)
{
	struct kp_image *I = S->img;
	uint32_t h;

	if ((I->hashused + 1) * 2 > I->hashcap)
		h_rehash(S, I);
	h = h_hash(kind, s, len, i) & (I->hashcap - 1);
	for (;; h = (h + 1) & (I->hashcap - 1)) {
		struct kp_hent *e = &I->hash[h];

		if (!e->kind) {
			e->kind = (uint8_t)kind;
			e->s = s;
			e->len = len;
			e->i = i;
			I->hashused++;
			*found = 0;
			return e;
		}
		if (e->kind == kind && e->len == len &&
		    (kind == H_INT ? e->i == i : !memcmp(e->s, s, len))) {
			*found = 1;
			return e;
		}
	}
}

void kp_image_init(struct kp_state *S)
{
	S->img = kp_alloc(&S->arena, sizeof(*S->img));
}

uint32_t kp_strtab(struct kp_state *S, const char *s, uint32_t len)
{
	struct kp_image *I = S->img;
	struct kp_hent *e;
	int found;

	e = h_get(S, H_TAB, s, len, 0, &found);
	if (found)
		return e->val;
	kp_grow(&S->arena, (void **)&I->strtab, &I->strcap,
		I->strlen + len + 1, 1);
	memcpy(I->strtab + I->strlen, s, len);
	I->strtab[I->strlen + len] = '\0';
	e->s = I->strtab + I->strlen;	/* stable copy for later compares */
	e->val = I->strlen;
	I->strlen += len + 1;
	return e->val;
}

static int kp_const_new(struct kp_state *S, struct kp_hent *e)
{
	struct kp_image *I = S->img;

	if (I->nconsts >= KTAP_MAX_CONSTS)
		kp_fatal(S, S->line, S->col, KP_E_CONSTS, KTAP_MAX_CONSTS);
	kp_grow(&S->arena, (void **)&I->consts, &I->constcap, I->nconsts + 1,
		sizeof(*I->consts));
	e->val = I->nconsts;
	return (int)I->nconsts++;
}

int kp_const_int(struct kp_state *S, int64_t v)
{
	struct kp_hent *e;
	int found, k;

	e = h_get(S, H_INT, NULL, 0, v, &found);
	if (found)
		return (int)e->val;
	k = kp_const_new(S, e);
	S->img->consts[k].type = KTAP_BC_CONST_INT;
	S->img->consts[k].val = v;
	return k;
}

int kp_const_str(struct kp_state *S, const char *s, uint32_t len)
{
	struct kp_hent *e;
	int found, k;

	e = h_get(S, H_STR, s, len, 0, &found);
	if (found)
		return (int)e->val;
	k = kp_const_new(S, e);
	S->img->consts[k].type = KTAP_BC_CONST_STR;
	S->img->consts[k].len = len;
	S->img->consts[k].val = kp_strtab(S, s, len);
	e->s = S->img->strtab + S->img->consts[k].val;
	return k;
}

int kp_global_find(struct kp_state *S, const char *name)
{
	struct kp_hent *e;
	int found;

	/* probing inserts; an unused entry costs nothing but a slot */
	e = h_get(S, H_GLOBAL, name, (uint32_t)strlen(name), 0, &found);
	if (!found) {
		e->val = UINT32_MAX;
		return -1;
	}
	return e->val == UINT32_MAX ? -1 : (int)e->val;
}

int kp_global(struct kp_state *S, const char *name)
{
	struct kp_image *I = S->img;
	struct kp_hent *e;
	int found;

	e = h_get(S, H_GLOBAL, name, (uint32_t)strlen(name), 0, &found);
	if (found && e->val != UINT32_MAX)
		return (int)e->val;
	if (I->nglobals >= KTAP_MAX_GLOBALS)
		kp_fatal(S, S->line, S->col, KP_E_GLOBALS, KTAP_MAX_GLOBALS);
	kp_grow(&S->arena, (void **)&I->globals, &I->globalcap,
		I->nglobals + 1, sizeof(*I->globals));
	I->globals[I->nglobals] = name;
	e->val = I->nglobals;
	return (int)I->nglobals++;
}

uint32_t kp_probe_add(struct kp_state *S, const struct ktap_bc_probe *p)
{
	struct kp_image *I = S->img;

	if (I->nprobes >= KTAP_MAX_PROBES)
		kp_fatal(S, S->line, S->col, KP_E_PROBES, KTAP_MAX_PROBES);
	kp_grow(&S->arena, (void **)&I->probes, &I->probecap, I->nprobes + 1,
		sizeof(*I->probes));
	I->probes[I->nprobes] = *p;
	return I->nprobes++;
}

int kp_builtin_ref(struct kp_state *S, const char *name)
{
	struct kp_image *I = S->img;
	uint32_t off = kp_strtab(S, name, (uint32_t)strlen(name)), i;

	for (i = 0; i < I->nbuiltins; i++)
		if (I->builtins[i] == off)
			return (int)i;
	if (I->nbuiltins >= KTAP_MAX_BUILTINS)
		kp_fatal(S, S->line, S->col, KP_E_BUILTINS, KTAP_MAX_BUILTINS);
	kp_grow(&S->arena, (void **)&I->builtins, &I->builtincap,
		I->nbuiltins + 1, sizeof(*I->builtins));
	I->builtins[I->nbuiltins] = off;
	return (int)I->nbuiltins++;
}

int kp_field_ref(struct kp_state *S, uint32_t probe, const char *name)
{
	struct kp_image *I = S->img;
	uint32_t off = kp_strtab(S, name, (uint32_t)strlen(name)), i;

	for (i = 0; i < I->nfields; i++)
		if (I->fields[i].probe == probe && I->fields[i].name == off)
			return (int)i;
	if (I->nfields >= KTAP_MAX_FIELDS)
		kp_fatal(S, S->line, S->col, KP_E_FIELDS, KTAP_MAX_FIELDS);
	kp_grow(&S->arena, (void **)&I->fields, &I->fieldcap, I->nfields + 1,
		sizeof(*I->fields));
	I->fields[I->nfields].probe = probe;
	I->fields[I->nfields].name = off;
	return (int)I->nfields++;
}

void kp_fetch_add(struct kp_state *S, const struct ktap_bc_fetch *f)
{
	struct kp_image *I = S->img;

	if (I->nfetch >= KTAP_MAX_FETCH)
		kp_fatal(S, S->line, S->col, KP_E_FETCH_MANY, KTAP_MAX_FETCH);
	/* The kernel wants the section sorted by probe; probes only grow. */
	if (I->nfetch && I->fetch[I->nfetch - 1].probe > f->probe)
		abort();
	kp_grow(&S->arena, (void **)&I->fetch, &I->fetchcap, I->nfetch + 1,
		sizeof(*I->fetch));
	I->fetch[I->nfetch++] = *f;
}

struct kp_proto *kp_proto_new(struct kp_state *S, uint32_t *idx)
{
	struct kp_image *I = S->img;
	struct kp_proto *f;

	if (I->nprotos >= KTAP_MAX_PROTOS)
		kp_fatal(S, S->line, S->col, KP_E_PROTOS, KTAP_MAX_PROTOS);
	kp_grow(&S->arena, (void **)&I->protos, &I->protocap, I->nprotos + 1,
		sizeof(*I->protos));
	f = kp_alloc(&S->arena, sizeof(*f));
	*idx = I->nprotos;
	I->protos[I->nprotos++] = f;
	return f;
}

/* ---- the image ---- */

static uint32_t align_up(uint32_t v, uint32_t a)
{
	return (v + a - 1) & ~(a - 1);
}

void *kp_image_write(struct kp_state *S, uint32_t *lenp)
{
	struct kp_image *I = S->img;
	struct ktap_bc_header h;
	uint64_t off, ncode = 0, nupv = 0;
	struct ktap_bc_proto *bp;
	uint32_t i, cpos, upos;
	char *img;

	for (i = 0; i < I->nprotos; i++) {
		ncode += I->protos[i]->ncode;
		nupv += I->protos[i]->nupv;
	}
	memset(&h, 0, sizeof(h));
	h.magic = KTAP_BC_MAGIC;
	h.abi_version = KTAP_ABI_VERSION;
	h.hdr_size = sizeof(h);
	h.nglobals = I->nglobals;
	h.chunkname = kp_strtab(S, S->file, (uint32_t)strlen(S->file));
	for (i = 0; i < I->nprotos; i++) {
		if (I->protos[i]->name)
			kp_strtab(S, I->protos[i]->name,
				  (uint32_t)strlen(I->protos[i]->name));
	}

	off = align_up(sizeof(h), 8);
	h.protos.off = (uint32_t)off;
	h.protos.count = I->nprotos;
	off = align_up((uint32_t)(off + (uint64_t)I->nprotos * sizeof(*bp)), 8);
	h.consts.off = (uint32_t)off;
	h.consts.count = I->nconsts;
	off += (uint64_t)I->nconsts * sizeof(struct ktap_bc_const);
	h.strtab.off = (uint32_t)off;
	h.strtab.count = I->strlen;
	off = align_up((uint32_t)(off + I->strlen), 8);
	if (off + ncode * 8 + nupv * 2 + (uint64_t)I->nprobes * 40 +
	    (uint64_t)I->nbuiltins * 4 + (uint64_t)I->nfields * 8 +
	    (uint64_t)I->nfetch * sizeof(struct ktap_bc_fetch) + 64 >
	    KTAP_MAX_IMAGE) {
		kp_error(S, 0, 0, KP_E_IMAGE_SIZE, KTAP_MAX_IMAGE);
		kp_flush_errors(S);
		return NULL;
	}
	h.code.off = (uint32_t)off;
	h.code.count = (uint32_t)ncode;
	off += ncode * 4;
	h.lines.off = (uint32_t)off;
	h.lines.count = (uint32_t)ncode;
	off += ncode * 4;
	h.upvals.off = (uint32_t)off;
	h.upvals.count = (uint32_t)nupv;
	off = align_up((uint32_t)(off + nupv * 2), 8);
	h.probes.off = (uint32_t)off;
	h.probes.count = I->nprobes;
	off += (uint64_t)I->nprobes * sizeof(struct ktap_bc_probe);
	h.builtins.off = (uint32_t)off;
	h.builtins.count = I->nbuiltins;
	off += (uint64_t)I->nbuiltins * 4;
	h.fields.off = (uint32_t)off;
	h.fields.count = I->nfields;
	off += (uint64_t)I->nfields * sizeof(struct ktap_bc_field);
	if (I->nfetch)
		off = align_up((uint32_t)off, 8);
	h.fetch.off = (uint32_t)off;
	h.fetch.count = I->nfetch;
	off += (uint64_t)I->nfetch * sizeof(struct ktap_bc_fetch);
	h.total_size = (uint32_t)off;
	/* empty sections point at the header end, which is always valid */
	if (!I->nconsts)
		h.consts.off = 0;
	if (!ncode) {
		h.code.off = 0;
		h.lines.off = 0;
	}
	if (!nupv)
		h.upvals.off = 0;
	if (!I->nprobes)
		h.probes.off = 0;
	if (!I->nbuiltins)
		h.builtins.off = 0;
	if (!I->nfields)
		h.fields.off = 0;
	if (!I->nfetch)
		h.fetch.off = 0;
	if (!I->strlen)
		h.strtab.off = 0;

	img = calloc(1, (size_t)off);
	if (!img) {
		fputs("ktap: out of memory\n", stderr);
		exit(2);
	}
	memcpy(img, &h, sizeof(h));
	bp = (struct ktap_bc_proto *)(img + h.protos.off);
	cpos = upos = 0;
	for (i = 0; i < I->nprotos; i++) {
		struct kp_proto *f = I->protos[i];

		bp[i].code_start = cpos;
		bp[i].ncode = f->ncode;
		bp[i].upval_start = upos;
		bp[i].nupvals = (uint16_t)f->nupv;
		bp[i].nparams = (uint8_t)f->nparams;
		bp[i].nregs = (uint8_t)f->maxregs;
		bp[i].parent = i ? f->parent : KTAP_BC_NO_STR;
		bp[i].name = f->name ? kp_strtab(S, f->name,
				(uint32_t)strlen(f->name)) : KTAP_BC_NO_STR;
		bp[i].line = f->line;
		memcpy(img + h.code.off + cpos * 4, f->code, f->ncode * 4);
		memcpy(img + h.lines.off + cpos * 4, f->lines, f->ncode * 4);
		if (f->nupv)
			memcpy(img + h.upvals.off + upos * 2, f->upv,
			       f->nupv * 2);
		cpos += f->ncode;
		upos += f->nupv;
	}
	if (I->nconsts)
		memcpy(img + h.consts.off, I->consts,
		       I->nconsts * sizeof(*I->consts));
	if (I->strlen)
		memcpy(img + h.strtab.off, I->strtab, I->strlen);
	if (I->nprobes)
		memcpy(img + h.probes.off, I->probes,
		       I->nprobes * sizeof(*I->probes));
	if (I->nbuiltins)
		memcpy(img + h.builtins.off, I->builtins, I->nbuiltins * 4);
	if (I->nfields)
		memcpy(img + h.fields.off, I->fields,
		       I->nfields * sizeof(*I->fields));
	if (I->nfetch)
		memcpy(img + h.fetch.off, I->fetch,
		       I->nfetch * sizeof(*I->fetch));
	*lenp = (uint32_t)off;
	return img;
}
