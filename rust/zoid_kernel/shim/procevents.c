// SPDX-License-Identifier: GPL-2.0
/*
 * Process events (fork, exec, exit) observed through the scheduler's
 * tracepoints, without patching the kernel: the tracepoints are found by
 * name (for_each_kernel_tracepoint) and a probe is attached to each.
 * Rust side: rust/zoid_kernel/procevents.rs.
 *
 * A kernel without CONFIG_TRACEPOINTS has nothing to attach to: starting
 * the probes fails with -EOPNOTSUPP, and callers say "unavailable".
 */
#include <linux/errno.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/tracepoint.h>

#include "zoid_kernel_shim.h"

struct linux_binprm;

struct zk_proc_probes {
	zk_proc_fn fn;
	void *ctx;
	struct tracepoint *fork, *exec, *exit;
};

#ifdef CONFIG_TRACEPOINTS

static void zk_probe_fork(void *data, struct task_struct *parent,
			  struct task_struct *child)
{
	struct zk_proc_probes *p = data;

	/* other: the parent's thread group. */
	p->fn(p->ctx, ZK_PROC_FORK, task_pid_nr(child), task_tgid_nr(child),
	      task_tgid_nr(parent));
}

static void zk_probe_exec(void *data, struct task_struct *task, pid_t old_pid,
			  struct linux_binprm *bprm)
{
	struct zk_proc_probes *p = data;

	p->fn(p->ctx, ZK_PROC_EXEC, task_pid_nr(task), task_tgid_nr(task),
	      old_pid);
}

static void zk_probe_exit(void *data, struct task_struct *task,
			  bool group_dead)
{
	struct zk_proc_probes *p = data;

	/* other: 1 when the whole thread group is gone. */
	p->fn(p->ctx, ZK_PROC_EXIT, task_pid_nr(task), task_tgid_nr(task),
	      group_dead);
}

static void zk_find_tracepoint(struct tracepoint *tp, void *priv)
{
	struct zk_proc_probes *p = priv;

	if (!strcmp(tp->name, "sched_process_fork"))
		p->fork = tp;
	else if (!strcmp(tp->name, "sched_process_exec"))
		p->exec = tp;
	else if (!strcmp(tp->name, "sched_process_exit"))
		p->exit = tp;
}

struct zk_proc_probes *zk_proc_probes_start(zk_proc_fn fn, void *ctx, int *err)
{
	struct zk_proc_probes *p = kzalloc(sizeof(*p), GFP_KERNEL);
	int rc;

	if (!p) {
		*err = -ENOMEM;
		return NULL;
	}
	p->fn = fn;
	p->ctx = ctx;
	for_each_kernel_tracepoint(zk_find_tracepoint, p);
	if (!p->fork || !p->exec || !p->exit) {
		rc = -EOPNOTSUPP;
		goto free;
	}
	rc = tracepoint_probe_register(p->fork, zk_probe_fork, p);
	if (rc)
		goto free;
	rc = tracepoint_probe_register(p->exec, zk_probe_exec, p);
	if (rc)
		goto no_exec;
	rc = tracepoint_probe_register(p->exit, zk_probe_exit, p);
	if (rc)
		goto no_exit;
	return p;
no_exit:
	tracepoint_probe_unregister(p->exec, zk_probe_exec, p);
no_exec:
	tracepoint_probe_unregister(p->fork, zk_probe_fork, p);
	tracepoint_synchronize_unregister();
free:
	kfree(p);
	*err = rc;
	return NULL;
}

void zk_proc_probes_stop(struct zk_proc_probes *p)
{
	tracepoint_probe_unregister(p->exit, zk_probe_exit, p);
	tracepoint_probe_unregister(p->exec, zk_probe_exec, p);
	tracepoint_probe_unregister(p->fork, zk_probe_fork, p);
	/* No probe runs (or will run) with p once this returns. */
	tracepoint_synchronize_unregister();
	kfree(p);
}

#else /* !CONFIG_TRACEPOINTS */

struct zk_proc_probes *zk_proc_probes_start(zk_proc_fn fn, void *ctx, int *err)
{
	*err = -EOPNOTSUPP;
	return NULL;
}

void zk_proc_probes_stop(struct zk_proc_probes *p)
{
}

#endif /* CONFIG_TRACEPOINTS */
