/* SPDX-License-Identifier: GPL-2.0 */
/*
 * zoid's plug-in ABI: how a separate module (C or Rust) adds a plug-in to
 * a loaded zoid.ko.  The Rust side of these types is
 * drivers/zoid/plugin_abi.rs; docs/zoid.md describes the contract.
 *
 * A plug-in module registers in its init and unregisters in its exit:
 *
 *	static const struct zoid_function fns[] = { { 1, "upper" }, ... };
 *	static const struct zoid_plugin_ops ops = {
 *		.abi = ZOID_PLUGIN_ABI, .id = 16, .name = "sample",
 *		.functions = fns, .nfunctions = ARRAY_SIZE(fns),
 *		.dispatch = sample_dispatch,
 *	};
 *	err = zoid_plugin_register(&ops, ctx);
 *	...
 *	zoid_plugin_unregister(16);
 *
 * zoid copies the name and the function table; `ops` and `ctx` must stay
 * valid until zoid_plugin_unregister() returns, which waits until no call
 * runs in the plug-in.  Calls that arrive afterwards fail with ENOSYS.
 */
#ifndef ZOID_PLUGIN_H
#define ZOID_PLUGIN_H

#include <linux/types.h>

/*
 * 2: zoid_function.flags, zoid_caller.zoid_private and deferred replies
 * (zoid_defer()).  A plug-in built for 1 (no flags: nothing deferrable)
 * still registers.
 */
#define ZOID_PLUGIN_ABI 2

/* Who called: a CN process and its credentials as the CN sent them. */
struct zoid_caller {
	u16 node;
	u16 ngroups;
	u32 pid;
	u32 uid;
	u32 gid;
	u32 tag;
	const u32 *groups;
	const void *zoid_private;	/* zoid's, for zoid_defer() (ABI 2) */
};

/* The function's reply is `ret` alone: zoid_defer() may take it over. */
#define ZOID_FN_DEFERRABLE 0x1

struct zoid_function {
	u16 id;
	u16 flags;			/* ZOID_FN_* (ABI 2; read as 0 for 1) */
	const char *name;
};

struct zoid_plugin_ops {
	u32 abi;			/* ZOID_PLUGIN_ABI */
	u16 id;				/* unique; a collision fails with EEXIST */
	u16 nfunctions;
	const char *name;		/* unique, no white space */
	const struct zoid_function *functions;
	/*
	 * Runs `function` with the marshalled `args` (process context, may
	 * sleep) and lays the reply's arguments out in reply[0..reply_cap]
	 * (the zoid_plugin! layout: ret first).  Returns 0 with *reply_len
	 * set and *reply_errno 0 or a positive errno; -ENOSYS for an unknown
	 * function; -E2BIG if the reply does not fit (zoid retries once with
	 * its largest buffer); another negative errno for malformed args.
	 * reply[] is reused between calls and may hold an earlier reply,
	 * another node's: every one of the *reply_len bytes must be written.
	 */
	int (*dispatch)(void *ctx, const struct zoid_caller *caller, u16 function,
			const u8 *args, size_t args_len, u8 *reply, size_t reply_cap,
			size_t *reply_len, int *reply_errno);
	/* Optional: a CN process ended / a CN went away. */
	void (*process_exit)(void *ctx, u16 node, u32 pid);
	void (*node_gone)(void *ctx, u16 node);
};

int zoid_plugin_register(const struct zoid_plugin_ops *ops, void *ctx);
void zoid_plugin_unregister(u16 id);

/*
 * Deferred replies (ABI 2).  Inside dispatch, for a ZOID_FN_DEFERRABLE
 * function, zoid_defer() takes the call's reply over: dispatch returns 0
 * (its reply is ignored), the worker is free at once, and the caller waits
 * until zoid_deferred_reply() answers, from any thread that may sleep (not
 * under a spinlock).  `caller` must be the one dispatch was given, while
 * dispatch runs: it points into zoid's state of the running call, gone
 * once dispatch returns.  zoid_defer() sets *out and returns 0, or -EINVAL
 * (not a deferrable function), -EBUSY (deferred already) or -ENOMEM
 * (nothing deferred: dispatch answers as usual).  Every deferred call must be answered exactly once, before the
 * plug-in's module goes (ECANCELED for those it gives up): the answer
 * frees `d`.  zoid_deferred_reply() returns 0, or a negative errno if the
 * reply could not be sent (the CN is gone).
 */
struct zoid_deferred;
int zoid_defer(const struct zoid_caller *caller, struct zoid_deferred **out);
int zoid_deferred_reply(struct zoid_deferred *d, s64 ret, int errno_value);

#endif
