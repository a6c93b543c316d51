/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ssi hook points: named places in zoid's modules where ssi (or another
 * observer) may be called, each behind its own static key.
 *
 * Off by default: a disabled hook is a jump-label nop (CONFIG_JUMP_LABEL)
 * on the caller's path, and building with ZOID_HOOKS=n removes the hooks
 * altogether.  The keys and the dispatcher live in treenet.ko (every zoid
 * module depends on it); one handler at a time registers
 * (zoid_hooks_register) and turns hooks on and off (zoid_hook_enable).
 * The handler runs under rcu_read_lock(): it must not sleep.
 *
 * C callers write   zoid_hook(zoidfs_open, inode->i_ino, file->f_flags);
 * Rust callers      ssi_hook!(zoid_hook_zoid_dispatch, Hook::ZoidDispatch, a, b)
 * (rust/zoid_kernel/hooks.rs).  Keep the list in step with Hook there.
 */
#ifndef ZOID_HOOKS_H
#define ZOID_HOOKS_H

#include <linux/jump_label.h>
#include <linux/types.h>

#define ZOID_HOOK_LIST(X) \
	X(treenet_peer)   /* a: node, b: 1 up / 0 down */ \
	X(zoid_dispatch)  /* a: plug-in << 16 | function, b: calling node */ \
	X(zoidfs_open)    /* a: inode number, b: open flags */ \
	X(zoidfs_close) /* a: inode number, b: 0 */ \
	X(zoidfs_read_folio) /* a: inode number, b: page index */ \
	X(zoidfs_writeback)  /* a: inode number, b: pages written */

enum zoid_hook_id {
#define ZOID_HOOK_ID(name) ZOID_HOOK_ID_##name,
	ZOID_HOOK_LIST(ZOID_HOOK_ID)
#undef ZOID_HOOK_ID
	ZOID_HOOK_COUNT
};

/* In a struct, so Rust's static_branch_unlikely! can name the key. */
struct zoid_hook_key {
	struct static_key_false key;
};

#define ZOID_HOOK_DECLARE(name) extern struct zoid_hook_key zoid_hook_##name;
ZOID_HOOK_LIST(ZOID_HOOK_DECLARE)
#undef ZOID_HOOK_DECLARE

typedef void (*zoid_hook_fn)(void *ctx, u32 hook, u64 a, u64 b);

void zoid_hook_call(u32 hook, u64 a, u64 b);
int zoid_hooks_register(zoid_hook_fn fn, void *ctx);
void zoid_hooks_unregister(void);
int zoid_hook_enable(u32 hook, bool on);

#ifdef ZOID_NO_HOOKS
#define zoid_hook(name, a, b) do { } while (0)
#else
#define zoid_hook(name, a, b)						\
	do {								\
		if (static_branch_unlikely(&zoid_hook_##name.key))	\
			zoid_hook_call(ZOID_HOOK_ID_##name, (a), (b));	\
	} while (0)
#endif

#endif /* ZOID_HOOKS_H */
