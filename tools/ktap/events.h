/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ktap probe-spec resolution (events.c): turns the event definition of
 * `trace EVENTDEF`, the spec strings of kdebug.probe() and the period
 * probes into entries of the image's probe table. Tracepoint wildcards
 * are checked against tracefs (events/SYSTEM/EVENT) and left to the
 * kernel to expand as a SYSTEM:EVENT target, kprobe
 * wildcards are expanded against available_filter_functions, uprobe
 * symbols are looked up in the binary's ELF symbol tables. The tracefs
 * root is $KTAP_TRACEFS, else /sys/kernel/tracing.
 */
#ifndef KP_EVENTS_H
#define KP_EVENTS_H

#include "kp.h"

/* The real format fields of one tracepoint probe entry's events. */
struct kp_evpart {
	uint32_t	probe;		/* probe table index */
	const char	**fields;
	uint32_t	nfields;
};

/* What the resolver learned about the matched events. */
struct kp_evinfo {
	int		tracepoint;	/* all entries are tracepoints */
	int		syscalls;	/* some are syscall events */
	const char	**fields;	/* union of their fields, or NULL */
	uint32_t	nfields, fieldcap;
	const char	*first;		/* first matched event, SYS:EVENT */
	/* per tracepoint probe entry, in probe order, when all are known */
	struct kp_evpart *parts;
	uint32_t	nparts, partcap;
};

enum kp_spec_form {
	KP_FORM_TRACE,		/* trace EVENTDEF { } */
	KP_FORM_KDEBUG,		/* kdebug.probe("...", fn) */
};

/*
 * Add probe-table entries for @spec. Returns how many were added (the
 * first index in *first), or 0 after reporting an error at @line:@col.
 */
uint32_t kp_events_resolve(struct kp_state *S, const char *spec,
			   enum kp_spec_form form, uint32_t line,
			   uint32_t col, uint32_t *first,
			   struct kp_evinfo *ev);

/* Add one timer/profile/end probe. */
uint32_t kp_events_simple(struct kp_state *S, enum ktap_probe_type type,
			  const char *spec, uint64_t arg);

/* The tracefs root in use. */
const char *kp_tracefs(struct kp_state *S);
struct kp_token;
uint64_t kp_ksym_addr(struct kp_state *S, const struct kp_token *t);
/* The address of kernel symbol @name (@len bytes), or 0 after an error. */
uint64_t kp_ksym_lookup(struct kp_state *S, const char *name, size_t len,
			uint32_t line, uint32_t col);

/* ktap -le [GLOB]: print matching SYSTEM:EVENT names. */
int kp_events_list(const char *glob);
/* Report the deferred kprobe targets that name no kernel function. */
int kp_check_kfuncs(struct kp_state *S);
/* ktap -lf DSO: print function symbols of an ELF binary. */
int kp_elf_list(const char *path);
/* ktap -lp: the perf events and the watchpoint forms */
int kp_perf_list(void);
/* ktap -lk: the kernel functions a kprobe wildcard expands over */
int kp_kfunc_list(const char *glob);

/* An ELF file mapped read-only; see events.c. */
struct kp_elf {
	const unsigned char	*map;
	size_t			size;
};

int kp_elf_open(struct kp_elf *e, const char *path, const char **why);
void kp_elf_close(struct kp_elf *e);
int kp_elf_syms(struct kp_elf *e,
		int (*fn)(void *arg, const char *name, uint64_t value,
			  uint64_t size),
		void *arg);
/* ktap -lm DSO: print the SDT markers (.note.stapsdt) of a binary. */
int kp_sdt_list(const char *path);

#endif /* KP_EVENTS_H */
