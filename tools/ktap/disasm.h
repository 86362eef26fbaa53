/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ktap disassembler (disasm.c): prints a bytecode image, driven by the
 * operand kinds of the KTAP_OPCODES X-macro, so a new opcode needs no
 * change here. It reads the serialized image, not the compiler's
 * structures, so the golden tests check the writer too.
 */
#ifndef KP_DISASM_H
#define KP_DISASM_H

#include <stdint.h>
#include <stdio.h>

/* @globals (may be NULL): names of the global slots, for comments. */
int kp_disasm(FILE *out, const void *image, uint32_t len,
	      const char *const *globals, uint32_t nglobals);

#endif /* KP_DISASM_H */
