// SPDX-License-Identifier: GPL-2.0
/*
 * zoid_kernel C shim: kernel threads that sleep until kicked.
 *
 * The Rust side is rust/zoid_kernel/kthread.rs; #include this file from a
 * module's own shim (the functions are module-local, not exported).
 * A kick may come from any context (softirq included); it is never lost:
 * the thread marks itself sleeping before it tests the pending flag.
 *
 * A kick may also race with the thread being stopped (a server's receiver
 * kicking a worker that is being torn down).  The kicker reads the task
 * pointer inside an RCU read-side section, and the stopper clears that
 * pointer and waits for a grace period before kthread_stop() and the final
 * put_task_struct(): a kick never wakes a freed task_struct, it only finds
 * NULL and does nothing.
 */
#include <linux/err.h>
#include <linux/kthread.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/slab.h>

#include "zoid_kernel_shim.h"

struct zk_thread {
	struct task_struct *task;
	atomic_t pending;
};

struct zk_thread *zk_thread_alloc(void)
{
	return kzalloc(sizeof(struct zk_thread), GFP_KERNEL);
}

int zk_thread_start(struct zk_thread *t, int (*fn)(void *), void *data,
		    const char *name)
{
	struct task_struct *task = kthread_create(fn, data, "%s", name);

	if (IS_ERR(task))
		return PTR_ERR(task);
	get_task_struct(task);
	WRITE_ONCE(t->task, task);
	wake_up_process(task);
	return 0;
}

/* Stops the thread, if started, and waits for its function to return. */
void zk_thread_stop(struct zk_thread *t)
{
	struct task_struct *task = t->task;

	if (!task)
		return;
	/* No new kick can reach the task after this... */
	WRITE_ONCE(t->task, NULL);
	/* ...and kicks that read it before have left their RCU sections. */
	synchronize_rcu();
	kthread_stop(task);
	put_task_struct(task);
}

void zk_thread_stop_free(struct zk_thread *t)
{
	zk_thread_stop(t);
	kfree(t);
}

void zk_thread_kick(struct zk_thread *t)
{
	struct task_struct *task;

	atomic_set(&t->pending, 1);
	rcu_read_lock();
	task = READ_ONCE(t->task);
	if (task)
		wake_up_process(task);
	rcu_read_unlock();
}

bool zk_thread_should_stop(void)
{
	return kthread_should_stop();
}

/* In the thread: sleeps until kicked, stopped or timeout jiffies passed. */
void zk_thread_wait(struct zk_thread *t, long timeout)
{
	set_current_state(TASK_INTERRUPTIBLE);
	if (!atomic_xchg(&t->pending, 0) && !kthread_should_stop())
		schedule_timeout(timeout);
	__set_current_state(TASK_RUNNING);
}
