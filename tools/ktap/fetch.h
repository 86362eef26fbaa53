/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fetch arguments of kprobes and uprobes (fetch.c): the kprobe_events
 * syntax written after a probe's name, and the argument specs of USDT
 * notes, both turned into entries of the image's fetch section.
 */
#ifndef KP_FETCH_H
#define KP_FETCH_H

#include "kp.h"

/*
 * Parse the FETCHARGS @args (space separated) of @spec and add them to
 * the @n probes from @first, which were just added. @ret: return probes;
 * @user: uprobes (memory reads are of user memory). Returns 0, or -1
 * after reporting an error at @line:@col.
 */
int kp_fetch_parse(struct kp_state *S, const char *spec, const char *args,
		   uint32_t first, uint32_t n, int ret, int user,
		   uint32_t line, uint32_t col);

/*
 * Add the arguments of a USDT note (@args, as "-4@%edi 8@-8(%rbp)") to
 * @probe as arg1..argN. Returns how many were added; when one cannot be
 * decoded, stops there and points *@why at the reason.
 */
int kp_fetch_usdt(struct kp_state *S, const char *args, uint32_t probe,
		  const char **why);

#endif /* KP_FETCH_H */
