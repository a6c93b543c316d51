// SPDX-License-Identifier: GPL-2.0
/*
 * ssi hook points: the static keys and the dispatcher (zoid_hooks.h).
 * #include this file from treenet's shim only: the keys are defined once,
 * exported to the modules that call hooks and to the one that handles them.
 */
#include <linux/export.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>

#include "zoid_hooks.h"

#define ZOID_HOOK_DEFINE(name)						\
	struct zoid_hook_key zoid_hook_##name = { STATIC_KEY_FALSE_INIT }; \
	EXPORT_SYMBOL_GPL(zoid_hook_##name);
ZOID_HOOK_LIST(ZOID_HOOK_DEFINE)
#undef ZOID_HOOK_DEFINE

static struct zoid_hook_key *const zoid_hook_keys[ZOID_HOOK_COUNT] = {
#define ZOID_HOOK_KEY(name) &zoid_hook_##name,
	ZOID_HOOK_LIST(ZOID_HOOK_KEY)
#undef ZOID_HOOK_KEY
};

struct zoid_hook_handler {
	zoid_hook_fn fn;
	void *ctx;
};

static DEFINE_MUTEX(zoid_hooks_lock);
static struct zoid_hook_handler zoid_hook_slot;
static struct zoid_hook_handler __rcu *zoid_hook_handler;

/* Called behind a hook's key: hands the event to the handler, if any. */
void zoid_hook_call(u32 hook, u64 a, u64 b)
{
	struct zoid_hook_handler *h;

	rcu_read_lock();
	h = rcu_dereference(zoid_hook_handler);
	if (h)
		h->fn(h->ctx, hook, a, b);
	rcu_read_unlock();
}
EXPORT_SYMBOL_GPL(zoid_hook_call);

/* Registers the handler (-EBUSY if there is one); every hook stays off. */
int zoid_hooks_register(zoid_hook_fn fn, void *ctx)
{
	guard(mutex)(&zoid_hooks_lock);
	if (rcu_access_pointer(zoid_hook_handler))
		return -EBUSY;
	zoid_hook_slot.fn = fn;
	zoid_hook_slot.ctx = ctx;
	rcu_assign_pointer(zoid_hook_handler, &zoid_hook_slot);
	return 0;
}
EXPORT_SYMBOL_GPL(zoid_hooks_register);

/* Turns every hook off and removes the handler; returns once it no longer runs. */
void zoid_hooks_unregister(void)
{
	int i;

	mutex_lock(&zoid_hooks_lock);
	for (i = 0; i < ZOID_HOOK_COUNT; i++)
		static_branch_disable(&zoid_hook_keys[i]->key);
	RCU_INIT_POINTER(zoid_hook_handler, NULL);
	mutex_unlock(&zoid_hooks_lock);
	synchronize_rcu();
}
EXPORT_SYMBOL_GPL(zoid_hooks_unregister);

/* Turns hook `hook` on or off (-EINVAL: no such hook, -ENODEV: no handler). */
int zoid_hook_enable(u32 hook, bool on)
{
	if (hook >= ZOID_HOOK_COUNT)
		return -EINVAL;
	guard(mutex)(&zoid_hooks_lock);
	if (!rcu_access_pointer(zoid_hook_handler))
		return -ENODEV;
	if (on)
		static_branch_enable(&zoid_hook_keys[hook]->key);
	else
		static_branch_disable(&zoid_hook_keys[hook]->key);
	return 0;
}
EXPORT_SYMBOL_GPL(zoid_hook_enable);
