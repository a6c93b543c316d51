// SPDX-License-Identifier: GPL-2.0
/*
 * zoidnet C shim: the shared rust/zoid_kernel shims (the network device,
 * kernel threads), module-local, and the interface name parameter.
 */
#include <linux/moduleparam.h>

#include "../../rust/zoid_kernel/shim/all.c"

ZK_STRING_PARAM(ifname, "zn0", "Name of the IP-over-treenet interface (default zn0)");
