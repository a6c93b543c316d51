// SPDX-License-Identifier: GPL-2.0
/*
 * zoid_kernel C shim: an owner lock, the socket lock's model
 * (lock_sock/release_sock/bh_lock_sock, include/net/sock.h).
 *
 * The Rust side is rust/zoid_kernel/ownlock.rs (a kernel::sync::lock
 * Backend); #include this file from a module's own shim.
 *
 * A task takes the lock as its owner: a short BH-safe spinlock section
 * marks it owned, and the owner then runs with the spinlock free, so it
 * may sleep and allocate with GFP_KERNEL as under a mutex.  Other tasks
 * wait for the owner on a wait queue.  Code running with bottom halves
 * disabled (a softirq, a busy-polling task) cannot wait: it takes the
 * spinlock only, and only while no task owns the lock, and holds it for
 * its whole (non-sleeping) section.  So the lock serialises both kinds,
 * and a softirq never waits for a sleeping owner: it falls back to
 * deferring its work.
 *
 * Lockdep: ownership is tracked on the lock's own dep_map (a mutex-like
 * class named by the Rust side), the spinlock in a class of its own.
 *
 * The Rust side defines the same struct (OwnLockState) and checks its
 * layout against zk_ownlock_layout().
 */
#include <linux/lockdep.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/wait.h>

#include "zoid_kernel_shim.h"

struct zk_ownlock {
	spinlock_t slock;
	struct wait_queue_head wq;
	struct lockdep_map dep_map;
	bool owned;
};

/* sizeof and the offsets of wq, dep_map and owned, for the Rust side. */
void zk_ownlock_layout(size_t *v)
{
	v[0] = sizeof(struct zk_ownlock);
	v[1] = offsetof(struct zk_ownlock, wq);
	v[2] = offsetof(struct zk_ownlock, dep_map);
	v[3] = offsetof(struct zk_ownlock, owned);
}

void zk_ownlock_init(struct zk_ownlock *l, const char *name, struct lock_class_key *key)
{
	spin_lock_init(&l->slock);
	init_waitqueue_head(&l->wq);
	lockdep_init_map(&l->dep_map, name, key, 0);
	l->owned = false;
}

/* Waits until no task owns the lock; slock held (BH off) before and after. */
static void zk_ownlock_wait_owner(struct zk_ownlock *l)
{
	DEFINE_WAIT(wait);

	for (;;) {
		prepare_to_wait_exclusive(&l->wq, &wait, TASK_UNINTERRUPTIBLE);
		spin_unlock_bh(&l->slock);
		schedule();
		spin_lock_bh(&l->slock);
		if (!l->owned)
			break;
	}
	finish_wait(&l->wq, &wait);
}

/* Process context: makes the current task the owner (may sleep). */
void zk_ownlock_lock(struct zk_ownlock *l)
{
	might_sleep();
	mutex_acquire(&l->dep_map, 0, 0, _RET_IP_);
	spin_lock_bh(&l->slock);
	if (l->owned)
		zk_ownlock_wait_owner(l);
	l->owned = true;
	spin_unlock_bh(&l->slock);
}

/* Gives up ownership and wakes one waiting task. */
void zk_ownlock_unlock(struct zk_ownlock *l)
{
	spin_lock_bh(&l->slock);
	l->owned = false;
	mutex_release(&l->dep_map, _RET_IP_);
	if (waitqueue_active(&l->wq))
		wake_up(&l->wq);
	spin_unlock_bh(&l->slock);
}

/*
 * Without waiting.  With bottom halves enabled (process context): 1 and
 * the current task owns the lock, or 0 (owned by another).  With bottom
 * halves disabled (softirq, busy poll, a BH-disabled section): 2 and the
 * caller holds the spinlock with bottom halves disabled until
 * zk_ownlock_unlock_atomic (it must not sleep), or 0 while a task owns it.
 */
int zk_ownlock_trylock(struct zk_ownlock *l)
{
	if (!in_softirq()) {
		spin_lock_bh(&l->slock);
		if (l->owned) {
			spin_unlock_bh(&l->slock);
			return 0;
		}
		l->owned = true;
		mutex_acquire(&l->dep_map, 0, 1, _RET_IP_);
		spin_unlock_bh(&l->slock);
		return 1;
	}
	spin_lock_bh(&l->slock);
	if (l->owned) {
		spin_unlock_bh(&l->slock);
		return 0;
	}
	return 2;
}

void zk_ownlock_unlock_atomic(struct zk_ownlock *l)
{
	spin_unlock_bh(&l->slock);
}

/*
 * Takes the spinlock again for an atomic holder that let it go (only a
 * CondVar wait does that, and an atomic holder must never wait): warns if
 * a task took ownership meanwhile.
 */
void zk_ownlock_relock_atomic(struct zk_ownlock *l)
{
	spin_lock_bh(&l->slock);
	WARN_ON_ONCE(l->owned);
}

/* Whether the lock is held, as an owner or atomically (lockdep only). */
void zk_ownlock_assert_held(struct zk_ownlock *l)
{
	lockdep_assert(lock_is_held(&l->dep_map) || lockdep_is_held(&l->slock));
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
