/* SPDX-License-Identifier: GPL-2.0 */
/* Userspace stand-in: everything is in ktap_shim.h. */
#include <ktap_shim.h>
