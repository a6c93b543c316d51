// SPDX-License-Identifier: GPL-2.0
/*
 * zoid_kernel C shim: the calling task's identity as forwarded calls carry
 * it (filesystem uid/gid and supplementary groups, in the initial user
 * namespace's numbering, as a remote node understands them).
 *
 * The Rust side is rust/zoid_kernel/cred.rs.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/uidgid.h>
#include <linux/user_namespace.h>

#include "zoid_kernel_shim.h"

s32 zk_current_tgid(void)
{
	return task_tgid_nr(current);
}

void zk_current_creds(u32 *tgid, u32 *uid, u32 *gid, u32 *groups,
		      u32 max_groups, u32 *ngroups)
{
	const struct cred *cred = current_cred();
	struct group_info *gi = cred->group_info;
	u32 i, n = 0;

	*tgid = task_tgid_nr(current);
	*uid = from_kuid_munged(&init_user_ns, cred->fsuid);
	*gid = from_kgid_munged(&init_user_ns, cred->fsgid);
	if (gi) {
		n = min_t(u32, gi->ngroups, max_groups);
		for (i = 0; i < n; i++)
			groups[i] = from_kgid_munged(&init_user_ns, gi->gid[i]);
	}
	*ngroups = n;
}

/* Whether the calling task may administer the system (CAP_SYS_ADMIN). */
bool zk_current_is_admin(void)
{
	return capable(CAP_SYS_ADMIN);
}
