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
 *
 * A task that waits for the thread's work (a caller waiting for a reply
 * the thread would receive) may do that work itself meanwhile: it registers
 * as the driver, kicks wake it instead of the thread, and a kick it did
 * not take when it stops driving is passed on to the thread.  That saves
 * one thread switch per wait.  A kick reads the driver pointer in an RCU
 * read-side section too, and the driver clears it before it can exit; a
 * task_struct is freed only after a grace period that follows its exit.
 *
 * A thread whose work has deadlines (retransmissions, delayed acks) sets
 * its next wake-up on the record's hrtimer (zk_thread_wake_at) rather than
 * sleeping with a timeout: any task can move that deadline, earlier or
 * later, without waking the thread, and the thread wakes when it expires
 * (the timer kicks it) and not on jiffy boundaries.  A wake-up set after
 * the thread was stopped is ignored.
 *
 * That deadline moves on nearly every frame (a send moves the
 * retransmission deadline later, an ack the delayed-ack one), and moving
 * a queued hrtimer that is the CPU's next event reprograms the clock
 * event device: under emulation a trap to the hypervisor, and QEMU then
 * wakes its main loop to recompute its own timeout.  So the timer moves
 * lazily: a deadline earlier than the armed expiry re-arms it, a later one
 * (or none) is only recorded, and when the armed timer expires its
 * callback re-arms it for the recorded deadline instead of kicking the
 * thread.  The thread still wakes only when its deadline is due.
 */
#include <linux/err.h>
#include <linux/hrtimer.h>
#include <linux/kthread.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/sched/task_stack.h>
#include <linux/slab.h>

#include "zoid_kernel_shim.h"

struct zk_thread {
	struct task_struct *task;
	/*
	 * A task doing the thread's work while it waits for something of its
	 * own (zk_thread_drive_begin): kicks wake it instead of the thread.
	 */
	struct task_struct *driver;
	/* Work kicked to whoever does it (the driver or the thread). */
	atomic_t pending;
	/* Work kicked to the thread itself: a driver never takes it. */
	atomic_t thread_pending;
	/*
	 * Kicks the thread at its next deadline: armed no later than
	 * `deadline`, maybe earlier (its callback then re-arms it).
	 */
	struct hrtimer timer;
	/* Serialises the timer and `deadline` with each other and stopping. */
	spinlock_t timer_lock;
	/* The wake-up asked for (zk_thread_wake_at), ns; U64_MAX: none. */
	u64 deadline;
	/* Stopped: the timer is no longer armed. */
	bool stopped;
	/* Wake-ups asked for, by source (zk_thread_wake_counts). */
	atomic64_t n_kicks, n_thread_kicks, n_timer_fires;
	/* Times the timer was armed (by zk_thread_wake_at or its callback). */
	atomic64_t n_timer_arms;
};

/* Slack allowed on a deadline, so nearby expiries can be merged. */
#define ZK_THREAD_TIMER_SLACK_NS (50 * NSEC_PER_USEC)

static enum hrtimer_restart zk_thread_timer_fn(struct hrtimer *timer)
{
	struct zk_thread *t = container_of(timer, struct zk_thread, timer);
	u64 now = ktime_get_ns();
	u64 at;

	spin_lock(&t->timer_lock);
	if (hrtimer_is_queued(timer)) {
		/*
		 * zk_thread_wake_at armed it again while this callback waited
		 * for the lock (the timer is not queued while its callback
		 * runs): that expiry, no later than the deadline, stands.  Its
		 * expiry must not be changed here while it is queued.
		 */
		spin_unlock(&t->timer_lock);
		return HRTIMER_NORESTART;
	}
	at = t->deadline;
	if (!t->stopped && at != U64_MAX && at > now) {
		/* Moved later since it was armed: on to the deadline. */
		hrtimer_set_expires_range_ns(timer, ns_to_ktime(at),
					     ZK_THREAD_TIMER_SLACK_NS);
		atomic64_inc(&t->n_timer_arms);
		spin_unlock(&t->timer_lock);
		return HRTIMER_RESTART;
	}
	/* Due, or withdrawn: a deadline wakes the thread once. */
	t->deadline = U64_MAX;
	spin_unlock(&t->timer_lock);
	if (at != U64_MAX) {
		atomic64_inc(&t->n_timer_fires);
		zk_thread_kick_thread(t);
	}
	return HRTIMER_NORESTART;
}

struct zk_thread *zk_thread_alloc(void)
{
	struct zk_thread *t = kzalloc(sizeof(struct zk_thread), GFP_KERNEL);

	if (!t)
		return NULL;
	hrtimer_setup(&t->timer, zk_thread_timer_fn, CLOCK_MONOTONIC,
		      HRTIMER_MODE_ABS);
	spin_lock_init(&t->timer_lock);
	t->deadline = U64_MAX;
	return t;
}

/*
 * Sets the thread's next wake-up to the monotonic time at_ns (ktime_get()
 * nanoseconds), replacing the one set before; U64_MAX: none.  Callable from
 * any context but the timer's own callback.  Only a deadline earlier than
 * the armed expiry touches the timer (see the top of this file).
 */
void zk_thread_wake_at(struct zk_thread *t, u64 at_ns)
{
	unsigned long flags;

	if (at_ns > (u64)KTIME_MAX)
		at_ns = U64_MAX;
	spin_lock_irqsave(&t->timer_lock, flags);
	if (t->stopped)
		goto out;
	t->deadline = at_ns;
	/*
	 * Arm it if it is not queued (idle; or its callback runs: that one
	 * then finds it queued and leaves it be) or queued for later than
	 * asked.
	 */
	if (at_ns != U64_MAX &&
	    (!hrtimer_is_queued(&t->timer) ||
	     at_ns < (u64)ktime_to_ns(hrtimer_get_softexpires(&t->timer)))) {
		hrtimer_start_range_ns(&t->timer, ns_to_ktime(at_ns),
				       ZK_THREAD_TIMER_SLACK_NS, HRTIMER_MODE_ABS);
		atomic64_inc(&t->n_timer_arms);
	}
out:
	spin_unlock_irqrestore(&t->timer_lock, flags);
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

/*
 * Sets the thread's nice value (MIN_NICE..MAX_NICE): -EINVAL outside it,
 * -ESRCH if the thread is not running.  The task is pinned under RCU, as
 * zk_thread_stop clears t->task and waits for RCU readers before it puts
 * its reference.
 */
int zk_thread_set_nice(struct zk_thread *t, int nice)
{
	struct task_struct *task;

	if (nice < MIN_NICE || nice > MAX_NICE)
		return -EINVAL;
	rcu_read_lock();
	task = READ_ONCE(t->task);
	if (task)
		get_task_struct(task);
	rcu_read_unlock();
	if (!task)
		return -ESRCH;
	set_user_nice(task, nice);
	put_task_struct(task);
	return 0;
}

/*
 * Stores the thread's nice value in *nice (what set_user_nice or a user's
 * renice left): 0, or -ESRCH if the thread is not running.  Pinned as in
 * zk_thread_set_nice.
 */
int zk_thread_nice(struct zk_thread *t, int *nice)
{
	struct task_struct *task;

	rcu_read_lock();
	task = READ_ONCE(t->task);
	if (task)
		*nice = task_nice(task);
	rcu_read_unlock();
	return task ? 0 : -ESRCH;
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
	unsigned long flags;

	zk_thread_stop(t);
	/* No wake-up is armed after this; one pending is cancelled. */
	spin_lock_irqsave(&t->timer_lock, flags);
	t->stopped = true;
	spin_unlock_irqrestore(&t->timer_lock, flags);
	hrtimer_cancel(&t->timer);
	kfree(t);
}

/*
 * Marks work pending and wakes whoever does it: the driver if one is
 * registered, else the thread.  A task's memory outlives the RCU read
 * sections that may still see it (tasks are freed after a grace period).
 */
void zk_thread_kick(struct zk_thread *t)
{
	struct task_struct *task;

	atomic64_inc(&t->n_kicks);
	atomic_set(&t->pending, 1);
	/* Pairs with zk_thread_drive_end: one of us sees the other. */
	smp_mb();
	rcu_read_lock();
	task = READ_ONCE(t->driver);
	if (!task)
		task = READ_ONCE(t->task);
	if (task)
		wake_up_process(task);
	rcu_read_unlock();
}

/* Wakes the thread itself, even while a task drives. */
void zk_thread_kick_thread(struct zk_thread *t)
{
	struct task_struct *task;

	atomic64_inc(&t->n_thread_kicks);
	atomic_set(&t->thread_pending, 1);
	rcu_read_lock();
	task = READ_ONCE(t->task);
	if (task)
		wake_up_process(task);
	rcu_read_unlock();
}

/*
 * Wake-ups asked for so far: kicks (to the driver or the thread), kicks to
 * the thread itself, and of those the timer's; and how often the timer was
 * armed.
 */
void zk_thread_wake_counts(struct zk_thread *t, u64 *kicks, u64 *thread_kicks,
			   u64 *timer_fires, u64 *timer_arms)
{
	*kicks = atomic64_read(&t->n_kicks);
	*thread_kicks = atomic64_read(&t->n_thread_kicks);
	*timer_fires = atomic64_read(&t->n_timer_fires);
	*timer_arms = atomic64_read(&t->n_timer_arms);
}

/* Registers the current task as the driver; false if another one is. */
bool zk_thread_drive_begin(struct zk_thread *t)
{
	return cmpxchg(&t->driver, NULL, current) == NULL;
}

/*
 * The current task stops driving.  Work kicked to it and not taken goes to
 * the thread.
 */
void zk_thread_drive_end(struct zk_thread *t)
{
	WRITE_ONCE(t->driver, NULL);
	smp_mb();
	if (atomic_read(&t->pending))
		zk_thread_kick(t);
}

/*
 * The driver sleeps until kicked, *done is nonzero, a signal or timeout
 * jiffies passed.  Returns the jiffies left; *kicked says whether work is
 * pending (and is now the caller's to do).
 */
long zk_thread_drive_wait(struct zk_thread *t, const u32 *done, long timeout,
			  bool *kicked)
{
	set_current_state(TASK_INTERRUPTIBLE);
	if (!atomic_read(&t->pending) && !READ_ONCE(*done) &&
	    !signal_pending(current))
		timeout = schedule_timeout(timeout);
	__set_current_state(TASK_RUNNING);
	*kicked = atomic_xchg(&t->pending, 0);
	return timeout;
}

/*
 * Whether work waits for the calling task: work kicked to whoever does it,
 * and, for the thread itself, work kicked to the thread (its deadline).
 */
bool zk_thread_has_work(struct zk_thread *t)
{
	return atomic_read(&t->pending) ||
	       (current == READ_ONCE(t->task) && atomic_read(&t->thread_pending));
}

/* Wakes the driver (if any, and not the caller): its wait may be over. */
void zk_thread_wake_driver(struct zk_thread *t)
{
	struct task_struct *task;

	rcu_read_lock();
	task = READ_ONCE(t->driver);
	if (task && task != current)
		wake_up_process(task);
	rcu_read_unlock();
}

/* Bytes of kernel stack left below the caller's frame. */
unsigned long zk_stack_left(void)
{
	unsigned long here = (unsigned long)__builtin_frame_address(0);
	unsigned long base = (unsigned long)task_stack_page(current);

	return here > base ? here - base : 0;
}

bool zk_thread_should_stop(void)
{
	return kthread_should_stop();
}

/* In the thread: sleeps until kicked, stopped or timeout jiffies passed. */
void zk_thread_wait(struct zk_thread *t, long timeout)
{
	set_current_state(TASK_INTERRUPTIBLE);
	/* Both flags are taken: one pass does the work either asked for. */
	if (!(atomic_xchg(&t->pending, 0) | atomic_xchg(&t->thread_pending, 0)) &&
	    !kthread_should_stop()) {
		schedule_timeout(timeout);
		/*
		 * The kicks that woke us are the coming pass's work: every
		 * kicker changes what the pass looks at before it kicks, so
		 * taking their flags now loses nothing and saves the empty
		 * pass they would otherwise cause after this one.
		 */
		atomic_set(&t->pending, 0);
		atomic_set(&t->thread_pending, 0);
	}
	__set_current_state(TASK_RUNNING);
}
