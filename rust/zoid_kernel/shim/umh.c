// SPDX-License-Identifier: GPL-2.0
/*
 * zoid_kernel C shim: running a user-space program from the kernel
 * (call_usermodehelper), waiting for it.  The Rust side is
 * rust/zoid_kernel/umh.rs.
 */
#include <linux/umh.h>

#include "zoid_kernel_shim.h"

/* @wait: until the program exited (its wait status is returned), else only
 * until it was executed (0, or the exec's error). */
int zk_run_helper(const char *path, char **argv, char **envp, bool wait)
{
	return call_usermodehelper(path, argv, envp, wait ? UMH_WAIT_PROC : UMH_WAIT_EXEC);
}
