// SPDX-License-Identifier: GPL-2.0
/*
 * Coherence through ssi containers: the meeting point of the provider and
 * its clients (zoid_coherence.h).  #include this file from treenet's shim
 * only: it is defined once and exported.
 */
#include <linux/errno.h>
#include <linux/export.h>
#include <linux/module.h>
#include <linux/mutex.h>

#include "zoid_coherence.h"

static DEFINE_MUTEX(zoid_coherence_lock);
static const struct zoid_coherence_ops *zoid_coherence_ops;
static void *zoid_coherence_ctx;

/* Registers the provider (-EBUSY if there is one). */
int zoid_coherence_provide(const struct zoid_coherence_ops *ops, void *ctx)
{
	guard(mutex)(&zoid_coherence_lock);
	if (zoid_coherence_ops)
		return -EBUSY;
	zoid_coherence_ops = ops;
	zoid_coherence_ctx = ctx;
	return 0;
}
EXPORT_SYMBOL_GPL(zoid_coherence_provide);

/*
 * Removes the provider.  Attached clients hold its module, so none is left
 * when its exit calls this.
 */
void zoid_coherence_withdraw(void)
{
	guard(mutex)(&zoid_coherence_lock);
	zoid_coherence_ops = NULL;
	zoid_coherence_ctx = NULL;
}
EXPORT_SYMBOL_GPL(zoid_coherence_withdraw);

int zoid_coherence_attach(const char *name, size_t len,
			  const struct zoid_coherence_client *client,
			  struct zoid_coherence_set *out)
{
	const struct zoid_coherence_ops *ops;
	u32 set;
	int err;

	guard(mutex)(&zoid_coherence_lock);
	ops = zoid_coherence_ops;
	if (!ops || !try_module_get(ops->owner))
		return -ENODEV;
	err = ops->attach(zoid_coherence_ctx, name, len, client, &set);
	if (err) {
		module_put(ops->owner);
		return err;
	}
	out->ops = ops;
	out->ctx = zoid_coherence_ctx;
	out->set = set;
	return 0;
}
EXPORT_SYMBOL_GPL(zoid_coherence_attach);

void zoid_coherence_detach(struct zoid_coherence_set *s)
{
	if (!s->ops)
		return;
	s->ops->detach(s->ctx, s->set);
	module_put(s->ops->owner);
	s->ops = NULL;
}
EXPORT_SYMBOL_GPL(zoid_coherence_detach);
