// SPDX-License-Identifier: GPL-2.0
/*
 * zoid-job-run: runs a job's program as the job's owner.
 *
 *   zoid-job-run [-s] [-o] [-C DIR] UID GID PROGRAM ARGS...
 *
 * zoid starts it as root through the kernel's usermode helper
 * (/sys/kernel/zoid/job_runner names it, /sbin/zoid-job-run by default):
 * on an ION for every job script whose owner, the CN caller mapped and
 * squashed, is not root; on a CN for every rank of a job its ION launched
 * (`zoid-job run`), with -s and -C.  It gives up root for good before
 * anything else happens: no supplementary groups, group GID, user UID
 * (real, effective and saved, so no capability survives the exec); with
 * -s it starts a session (so that a signal for the rank reaches its whole
 * process group), with -C it changes to DIR as the owner; with -o a
 * PROGRAM that does not exist is no failure (exit 0: a job owner's
 * $HOME/zoid-user-script.sh, looked for as the owner); then it executes
 * PROGRAM with ARGS and the environment it got (ZOID_JOB_*): a PROGRAM
 * without a slash is looked up in that environment's PATH.  A module
 * cannot do this itself: a helper's uid must change through setresuid(2)
 * for the kernel's per-user process counts to stay right.  It fails, with
 * PROGRAM never run, if any step fails or root could be regained: 126, or
 * 127 if PROGRAM cannot be executed.
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
	const char *dir = NULL;
	int session = 0, optional = 0, i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-s"))
			session = 1;
		else if (!strcmp(argv[i], "-o"))
			optional = 1;
		else if (!strcmp(argv[i], "-C") && i + 1 < argc)
			dir = argv[++i];
		else
			break;
	}
	if (argc - i < 3 || id_of(argv[i], &uid) || id_of(argv[i + 1], &gid) ||
	    !argv[i + 2][0] || (!session && argv[i + 2][0] != '/')) {
		fprintf(stderr, "usage: zoid-job-run [-s] [-o] [-C DIR] UID GID PROGRAM ARGS...\n");
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
	if (session && setsid() < 0) {
		perror("zoid-job-run: setsid");
		return 126;
	}
	if (dir && chdir(dir)) {
		fprintf(stderr, "zoid-job-run: %s: %s\n", dir, strerror(errno));
		return 126;
	}
	if (optional && access(argv[i + 2], F_OK) && errno == ENOENT)
		return 0;
	if (strchr(argv[i + 2], '/'))
		execv(argv[i + 2], argv + i + 2);
	else
		execvp(argv[i + 2], argv + i + 2);
	fprintf(stderr, "zoid-job-run: %s: %s\n", argv[i + 2], strerror(errno));
	return 127;
}
