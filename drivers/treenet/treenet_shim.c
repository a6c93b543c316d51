// SPDX-License-Identifier: GPL-2.0
/*
 * treenet C shim: exports treenet's cross-module interface.
 *
 * zoid modules cross .ko boundaries through C-ABI functions: the provider
 * defines them in Rust (#[no_mangle] extern "C") and exports them here; a
 * consumer declares them in the provider's abi.rs and links through
 * KBUILD_EXTRA_SYMBOLS.  See docs/architecture.md.
 */
#include <linux/export.h>
#include <linux/types.h>

u64 treenet_abi_version(void);
EXPORT_SYMBOL_GPL(treenet_abi_version);
