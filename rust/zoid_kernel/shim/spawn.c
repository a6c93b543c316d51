// SPDX-License-Identifier: GPL-2.0
/*
 * zoid_kernel C shim: starting a user-space process with given standard
 * descriptors (call_usermodehelper), signalling it while it runs and
 * learning its end, on a module's own workqueue (its destruction waits for
 * every process's end callback).  The Rust side is
 * rust/zoid_kernel/spawn.rs.
 */
#include <linux/file.h>
#include <linux/kref.h>
#include <linux/pid.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/umh.h>
#include <linux/workqueue.h>

#include "zoid_kernel_shim.h"

struct zk_spawn {
	struct work_struct work;
	struct kref ref;
	/* Guards pid. */
	spinlock_t lock;
	/* The process (its thread group), while it runs. */
	struct pid *pid;
	/* Its descriptors 0, 1, 2 (references), until it ends. */
	struct file *stdio[3];
	/* Owned by the caller until done() ran. */
	char **argv, **envp;
	void (*done)(void *ctx, int status);
	void *ctx;
};

struct workqueue_struct *zk_spawn_wq_new(const char *name)
{
	return alloc_workqueue("%s", WQ_UNBOUND, 0, name);
}

/* Waits for every started process's end callback, then frees @wq. */
void zk_spawn_wq_destroy(struct workqueue_struct *wq)
{
	destroy_workqueue(wq);
}

/* A process record holding references to @stdio; NULL without memory. */
struct zk_spawn *zk_spawn_new(struct file *stdio0, struct file *stdio1,
			      struct file *stdio2)
{
	struct zk_spawn *s = kzalloc(sizeof(*s), GFP_KERNEL);

	if (!s)
		return NULL;
	kref_init(&s->ref);
	spin_lock_init(&s->lock);
	s->stdio[0] = get_file(stdio0);
	s->stdio[1] = get_file(stdio1);
	s->stdio[2] = get_file(stdio2);
	return s;
}

static void zk_spawn_drop_files(struct zk_spawn *s)
{
	int i;

	for (i = 0; i < 3; i++) {
		if (s->stdio[i])
			fput(s->stdio[i]);
		s->stdio[i] = NULL;
	}
}

static void zk_spawn_release(struct kref *ref)
{
	struct zk_spawn *s = container_of(ref, struct zk_spawn, ref);

	zk_spawn_drop_files(s);
	put_pid(s->pid);
	kfree(s);
}

void zk_spawn_put(struct zk_spawn *s)
{
	kref_put(&s->ref, zk_spawn_release);
}

/* In the new process, before its exec: descriptors 0, 1, 2 and its pid. */
static int zk_spawn_init(struct subprocess_info *info, struct cred *new)
{
	struct zk_spawn *s = info->data;
	int i;

	for (i = 0; i < 3; i++) {
		int fd = get_unused_fd_flags(0);

		if (fd < 0)
			return fd;
		if (fd != i) {
			put_unused_fd(fd);
			return -EBUSY;
		}
		fd_install(fd, get_file(s->stdio[i]));
	}
	spin_lock(&s->lock);
	s->pid = get_pid(task_tgid(current));
	spin_unlock(&s->lock);
	return 0;
}

static void zk_spawn_work(struct work_struct *work)
{
	struct zk_spawn *s = container_of(work, struct zk_spawn, work);
	struct subprocess_info *info;
	struct pid *pid;
	int status;

	info = call_usermodehelper_setup(s->argv[0], s->argv, s->envp, GFP_KERNEL,
					 zk_spawn_init, NULL, s);
	/*
	 * Killable: a job may run for days, and the hung-task detector skips
	 * killable waits (no signal ever reaches a kworker).
	 */
	status = info ? call_usermodehelper_exec(info, UMH_WAIT_PROC | UMH_KILLABLE) : -ENOMEM;
	spin_lock(&s->lock);
	pid = s->pid;
	s->pid = NULL;
	spin_unlock(&s->lock);
	put_pid(pid);
	zk_spawn_drop_files(s);
	s->done(s->ctx, status);
	zk_spawn_put(s);
}

/*
 * Starts argv[0] with @argv and @envp (which must stay valid until @done
 * ran) on @wq; @done(@ctx, status) runs on @wq once the process ended:
 * its wait status, or a negative errno if it could not be started.
 */
void zk_spawn_start(struct workqueue_struct *wq, struct zk_spawn *s, char **argv,
		    char **envp, void (*done)(void *ctx, int status), void *ctx)
{
	s->argv = argv;
	s->envp = envp;
	s->done = done;
	s->ctx = ctx;
	kref_get(&s->ref);
	INIT_WORK(&s->work, zk_spawn_work);
	queue_work(wq, &s->work);
}

/*
 * Sends @sig to the process's group (its own, if it has none yet): 0,
 * -ESRCH if it is not running (not yet, or no more).
 */
int zk_spawn_signal(struct zk_spawn *s, int sig)
{
	struct pid *pid;
	int ret;

	spin_lock(&s->lock);
	pid = get_pid(s->pid);
	spin_unlock(&s->lock);
	if (!pid)
		return -ESRCH;
	ret = kill_pgrp(pid, sig, 1);
	if (ret == -ESRCH)
		ret = kill_pid(pid, sig, 1);
	put_pid(pid);
	return ret;
}
