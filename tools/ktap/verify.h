/* SPDX-License-Identifier: GPL-2.0 */
/* ktap image self-check (verify.c): the kernel verifier's rules. */
#ifndef KP_VERIFY_H
#define KP_VERIFY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/ktap.h>

/* 0 if @image passes, else -1 with a reason in @err. */
int kp_verify(const void *image, uint32_t len, char *err, size_t errlen);

#endif /* KP_VERIFY_H */
