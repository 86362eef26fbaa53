/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace stand-in: the members of struct sock that sk_saddr() and
 * sk_daddr() read, at the kernel's relative order (only offsets matter;
 * the reads go through copy_from_kernel_nofault()).
 */
#ifndef KTAP_SHIM_NET_SOCK_H
#define KTAP_SHIM_NET_SOCK_H
#include <ktap_shim.h>

typedef u32 __be32;

#define AF_INET		2

struct sock_common {
	__be32		skc_daddr;
	__be32		skc_rcv_saddr;
	unsigned int	skc_hash;
	unsigned short	skc_family;
};

struct sock {
	struct sock_common	__sk_common;
};

#define sk_daddr	__sk_common.skc_daddr
#define sk_rcv_saddr	__sk_common.skc_rcv_saddr
#define sk_family	__sk_common.skc_family

#endif
