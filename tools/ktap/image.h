/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The bytecode image under construction (image.c): prototypes filled
 * by gen.c, constants, strings, globals and probes shared by every
 * pass, and the writer of the final image.
 */
#ifndef KP_IMAGE_H
#define KP_IMAGE_H

#include "kp.h"

/* A function prototype being built. */
struct kp_proto {
	uint32_t	*code, *lines;
	uint32_t	ncode, codecap, linecap;
	struct ktap_bc_upval *upv;
	uint32_t	nupv;
	uint32_t	nparams, maxregs;
	uint32_t	parent, line;
	const char	*name;
};

struct kp_hent;

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
	uint32_t		*builtins;	/* strtab offsets of names */
	uint32_t		nbuiltins, builtincap;
	struct ktap_bc_field	*fields;
	uint32_t		nfields, fieldcap;
	struct ktap_bc_fetch	*fetch;		/* in probe order */
	uint32_t		nfetch, fetchcap;
	const char		**globals;	/* names by slot */
	uint32_t		nglobals, globalcap;
	/* hash of constants and strtab strings (open addressing) */
	struct kp_hent		*hash;
	uint32_t		hashcap, hashused;
};

void kp_image_init(struct kp_state *S);

/* Constants, strings, globals, probes: indexes, deduplicated. */
int kp_const_int(struct kp_state *S, int64_t v);
int kp_const_str(struct kp_state *S, const char *s, uint32_t len);
uint32_t kp_strtab(struct kp_state *S, const char *s, uint32_t len);
int kp_global(struct kp_state *S, const char *name);	/* finds or adds */
int kp_global_find(struct kp_state *S, const char *name); /* or -1 */
uint32_t kp_probe_add(struct kp_state *S, const struct ktap_bc_probe *p);
/* Builtins section index of the kernel builtin @name. */
int kp_builtin_ref(struct kp_state *S, const char *name);
/* Fields section index of field @name read for probe @probe. */
int kp_field_ref(struct kp_state *S, uint32_t probe, const char *name);

/* Append a fetch argument of the probe added last (or an earlier one). */
void kp_fetch_add(struct kp_state *S, const struct ktap_bc_fetch *f);

/* A new prototype, appended; *idx is its index (0: the main chunk). */
struct kp_proto *kp_proto_new(struct kp_state *S, uint32_t *idx);

/* Serialize everything into one image (malloc'ed; caller frees). */
void *kp_image_write(struct kp_state *S, uint32_t *len);

#endif /* KP_IMAGE_H */
