/* SPDX-License-Identifier: GPL-2.0 */
#ifndef KP_USYM_H
#define KP_USYM_H

#include <stddef.h>
#include <stdio.h>

/*
 * Write @n bytes of output to @out with every "0x<addr> (pid <n>)" the
 * kernel printed for a user address replaced by its symbol and file.
 */
void kp_usym_write(FILE *out, const char *s, size_t n);

#endif
