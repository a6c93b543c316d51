// SPDX-License-Identifier: GPL-2.0
/*
 * zoid_kernel C shim: an owner lock, in the spirit of the socket lock
 * (lock_sock/release_sock/bh_lock_sock, include/net/sock.h) with a mutex's
 * fast path.
 *
 * The Rust side is rust/zoid_kernel/ownlock.rs (a kernel::sync::lock
 * Backend); #include this file from a module's own shim.
 *
 * The lock is one word: HELD, and WAITERS while tasks sleep for it.  A task
 * takes it with one compare-and-exchange when it is free, and may then
 * sleep and allocate with GFP_KERNEL as under a mutex; when it is held the
 * task sleeps on the wait queue, and whoever lets the lock go wakes the
 * sleepers if WAITERS is set.  Code running with bottom halves disabled (a
 * softirq, a busy-polling task) cannot sleep: it takes the lock only if it
 * is free at once, and holds it for a section that does not sleep.  So the
 * lock serialises both kinds, and a softirq never waits for a sleeping
 * holder: it falls back to deferring its work.
 *
 * Lockdep tracks task holders on the lock's own dep_map (a mutex-like
 * class named by the Rust side).  Holders with bottom halves disabled are
 * not tracked: they never wait, so they take no part in a deadlock.
 *
 * The Rust side defines the same struct (OwnLockState) and checks its
 * layout against zk_ownlock_layout().
 */
#include <linux/atomic.h>
#include <linux/lockdep.h>
#include <linux/sched.h>
#include <linux/wait.h>

#include "zoid_kernel_shim.h"

#define ZK_OWNLOCK_HELD 1
#define ZK_OWNLOCK_WAITERS 2

struct zk_ownlock {
	atomic_t state;
	struct wait_queue_head wq;
	struct lockdep_map dep_map;
};

/* sizeof and the offsets of wq and dep_map, for the Rust side. */
void zk_ownlock_layout(size_t *v)
{
	v[0] = sizeof(struct zk_ownlock);
	v[1] = offsetof(struct zk_ownlock, wq);
	v[2] = offsetof(struct zk_ownlock, dep_map);
}

void zk_ownlock_init(struct zk_ownlock *l, const char *name, struct lock_class_key *key)
{
	atomic_set(&l->state, 0);
	init_waitqueue_head(&l->wq);
	lockdep_init_map(&l->dep_map, name, key, 0);
}

/* Takes the lock if it is free, else marks that a task waits for it. */
static bool zk_ownlock_take_or_wait(struct zk_ownlock *l)
{
	int old = atomic_read(&l->state);

	for (;;) {
		if (!(old & ZK_OWNLOCK_HELD)) {
			if (atomic_try_cmpxchg_acquire(&l->state, &old, old | ZK_OWNLOCK_HELD))
				return true;
		} else if (old & ZK_OWNLOCK_WAITERS) {
			return false;
		} else if (atomic_try_cmpxchg(&l->state, &old, old | ZK_OWNLOCK_WAITERS)) {
			return false;
		}
	}
}

/* Process context: takes the lock, sleeping while it is held (may sleep). */
void zk_ownlock_lock(struct zk_ownlock *l)
{
	int free = 0;

	might_sleep();
	mutex_acquire(&l->dep_map, 0, 0, _RET_IP_);
	if (atomic_try_cmpxchg_acquire(&l->state, &free, ZK_OWNLOCK_HELD))
		return;
	/* Checked after queueing: a release in between wakes us. */
	wait_event(l->wq, zk_ownlock_take_or_wait(l));
}

/* Lets the lock go (either kind of holder) and wakes the sleepers. */
static void zk_ownlock_release(struct zk_ownlock *l)
{
	/*
	 * Every sleeper is woken and tries again (one takes it, the others
	 * mark WAITERS anew): the sleepers are few (the engine thread, a
	 * driving task, blocked senders).
	 */
	if (atomic_xchg_release(&l->state, 0) & ZK_OWNLOCK_WAITERS)
		wake_up_all(&l->wq);
}

/* A task's release. */
void zk_ownlock_unlock(struct zk_ownlock *l)
{
	mutex_release(&l->dep_map, _RET_IP_);
	zk_ownlock_release(l);
}

/*
 * Without waiting.  With bottom halves enabled (process context): 1 and
 * the current task holds the lock as from zk_ownlock_lock, or 0 (held).
 * With bottom halves disabled (softirq, busy poll, a BH-disabled section):
 * 2 and the caller holds it until zk_ownlock_unlock_atomic, in a section
 * that must not sleep, or 0 while it is held (or tasks wait for it).
 */
int zk_ownlock_trylock(struct zk_ownlock *l)
{
	int free = 0;

	if (!atomic_try_cmpxchg_acquire(&l->state, &free, ZK_OWNLOCK_HELD))
		return 0;
	if (in_softirq())
		return 2;
	mutex_acquire(&l->dep_map, 0, 1, _RET_IP_);
	return 1;
}

void zk_ownlock_unlock_atomic(struct zk_ownlock *l)
{
	zk_ownlock_release(l);
}

/*
 * Takes the lock again for a holder with bottom halves disabled that let
 * it go (only a CondVar wait does that, and such a holder must never
 * wait): warns, and spins until it is free.
 */
void zk_ownlock_relock_atomic(struct zk_ownlock *l)
{
	int free = 0;

	WARN_ON_ONCE(1);
	while (!atomic_try_cmpxchg_acquire(&l->state, &free, ZK_OWNLOCK_HELD)) {
		free = 0;
		cpu_relax();
	}
}

/* Whether the lock is held (checked with lockdep only). */
void zk_ownlock_assert_held(struct zk_ownlock *l)
{
	lockdep_assert(atomic_read(&l->state) & ZK_OWNLOCK_HELD);
}

/* Bottom halves off and on again, for code that must run as a softirq would. */
void zk_local_bh_disable(void)
{
	local_bh_disable();
}

void zk_local_bh_enable(void)
{
	local_bh_enable();
}
