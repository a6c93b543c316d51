// SPDX-License-Identifier: GPL-2.0
/*
 * zoid C shim: the shared rust/zoid_kernel shims (kernel threads,
 * netdevice frames), module-local.
 */
#include "../../rust/zoid_kernel/shim/all.c"
