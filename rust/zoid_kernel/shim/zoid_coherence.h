/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Coherence through ssi containers, for modules loaded before ssi.
 *
 * zoidfs (a client) caches file pages and asks ssi (the provider) for the
 * right to: every page has a container object, and the page may be cached
 * on this node only while the node holds a copy of it (read) or owns it
 * (write).  Kerrighed's write-invalidate protocol then keeps the caches of
 * every node coherent, page by page.  ssi loads after zoidfs, so the two
 * meet here, in treenet.ko (every zoid module depends on it):
 *
 *  - ssi provides (zoid_coherence_provide) and withdraws at unload;
 *  - a client attaches to a set by name (zoid_coherence_attach: the set is
 *    defined on the ION, /sys/kernel/ssi/sets) with its callbacks, which
 *    holds a reference on the provider's module until it detaches;
 *  - the client holds objects around its accesses (zoid_coherence_hold and
 *    unhold; a page fault, which ends with its page locked, uses hold_fault
 *    and fault_done: the hold ends a little later, from the provider's
 *    thread), and may read or write a held object's contents.
 *
 * Callbacks run in the provider's context (its receive thread, or the
 * task that releases an object) before the message that lets another node
 * go on is sent: they write back, drop pages, may sleep, and must not call
 * the provider.
 */
#ifndef ZOID_COHERENCE_H
#define ZOID_COHERENCE_H

#include <linux/types.h>

struct module;

/* What a client does when its objects come and go (ctx: the client's). */
struct zoid_coherence_client {
	void *ctx;
	/* A copy of `object` arrived on this node. */
	void (*insert)(void *ctx, u64 object);
	/* This node's copy of `object` is going away. */
	void (*invalidate)(void *ctx, u64 object);
	/* `object` is being sent to another node (this node may keep a copy). */
	void (*export)(void *ctx, u64 object);
	/*
	 * NULL, or the client's give-up flag (zoidfs: the mount's umount -f),
	 * valid until the client detaches: once it is nonzero, the client's
	 * holds fail with -EIO instead of waiting (within 250 ms).
	 */
	const atomic_t *abort;
};

/* The provider's side (ssi).  Every function may sleep. */
struct zoid_coherence_ops {
	struct module *owner;
	/* Attaches `client` to the set named `name`: its id, or -errno. */
	int (*attach)(void *ctx, const char *name, size_t len,
		      const struct zoid_coherence_client *client, u32 *set);
	/* After it returns, no callback of the client runs any more. */
	void (*detach)(void *ctx, u32 set);
	/* Waits until this node holds `object` (to write, or to read). */
	int (*hold)(void *ctx, u32 set, u64 object, bool write);
	void (*unhold)(void *ctx, u32 set, u64 object);
	/* Holds for a page fault: *token is for fault_done. */
	int (*hold_fault)(void *ctx, u32 set, u64 object, bool write, u64 *token);
	/* The fault ended: released a little later, from another context. */
	void (*fault_done)(void *ctx, u32 set, u64 object, u64 token);
	/* Copies a held object's first `len` bytes out, or in. */
	int (*read)(void *ctx, u32 set, u64 object, void *buf, size_t len);
	int (*write)(void *ctx, u32 set, u64 object, const void *buf, size_t len);
};

int zoid_coherence_provide(const struct zoid_coherence_ops *ops, void *ctx);
void zoid_coherence_withdraw(void);

/* A client's attachment. */
struct zoid_coherence_set {
	const struct zoid_coherence_ops *ops;
	void *ctx;
	u32 set;
};

/* -ENODEV: no provider (ssi not loaded); else what the provider says. */
int zoid_coherence_attach(const char *name, size_t len,
			  const struct zoid_coherence_client *client,
			  struct zoid_coherence_set *out);
void zoid_coherence_detach(struct zoid_coherence_set *s);

static inline int zoid_coherence_hold(const struct zoid_coherence_set *s, u64 object,
				      bool write)
{
	return s->ops->hold(s->ctx, s->set, object, write);
}

static inline void zoid_coherence_unhold(const struct zoid_coherence_set *s, u64 object)
{
	s->ops->unhold(s->ctx, s->set, object);
}

static inline int zoid_coherence_hold_fault(const struct zoid_coherence_set *s, u64 object,
					    bool write, u64 *token)
{
	return s->ops->hold_fault(s->ctx, s->set, object, write, token);
}

static inline void zoid_coherence_fault_done(const struct zoid_coherence_set *s, u64 object,
					     u64 token)
{
	s->ops->fault_done(s->ctx, s->set, object, token);
}

static inline int zoid_coherence_read(const struct zoid_coherence_set *s, u64 object,
				      void *buf, size_t len)
{
	return s->ops->read(s->ctx, s->set, object, buf, len);
}

static inline int zoid_coherence_write(const struct zoid_coherence_set *s, u64 object,
				       const void *buf, size_t len)
{
	return s->ops->write(s->ctx, s->set, object, buf, len);
}

#endif /* ZOID_COHERENCE_H */
