// SPDX-License-Identifier: GPL-2.0
/*
 * Every C shim of rust/zoid_kernel, for a module's own shim to #include
 * (each module links its own module-local copy: they are not exported).
 */
#include "anonfile.c"
#include "cred.c"
#include "kthread.c"
#include "msgbuf.c"
#include "netdev.c"
#include "netlink.c"
#include "ownlock.c"
#include "procevents.c"
#include "spawn.c"
#include "umh.c"
#include "vfs.c"
#include "vfs_obj.c"
#include "vm.c"
