// SPDX-License-Identifier: GPL-2.0
/*
 * zoid-job-run: runs an ION job script as the job's owner.
 *
 *   zoid-job-run UID GID SCRIPT ARGS...
 *
 * zoid's job plug-in starts it (as root, through the kernel's usermode
 * helper: /sys/kernel/zoid/job_runner names it, /sbin/zoid-job-run by
 * default) for every job whose owner, the CN caller mapped and squashed,
 * is not root.  It gives up root for good before anything else happens:
 * no supplementary groups, group GID, user UID (real, effective and
 * saved, so no capability survives the exec), then executes SCRIPT with
 * ARGS and the environment it got (ZOID_JOB_*).  A module cannot do this
 * itself: a helper's uid must change through setresuid(2) for the
 * kernel's per-user process counts to stay right.  It fails, with the
 * script never run, if any step fails or root could be regained.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int id_of(const char *s, unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > 0xfffffffeUL)
		return -1;
	*out = (unsigned int)v;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int uid, gid;

	if (argc < 4 || id_of(argv[1], &uid) || id_of(argv[2], &gid) || argv[3][0] != '/') {
		fprintf(stderr, "usage: zoid-job-run UID GID /SCRIPT ARGS...\n");
		return 2;
	}
	if (setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid)) {
		perror("zoid-job-run: dropping root");
		return 126;
	}
	/* Root must be gone for good (unless the owner is root). */
	if (uid != 0 && (setuid(0) == 0 || geteuid() != uid)) {
		fprintf(stderr, "zoid-job-run: root could be regained\n");
		return 126;
	}
	execv(argv[3], argv + 3);
	perror("zoid-job-run: exec");
	return 127;
}
