/* SPDX-License-Identifier: GPL-2.0 */
/*
 * zoid's client ABI: how another module on a CN (zoidfs) forwards calls to
 * the CN's ION through a loaded zoid.ko.  The Rust side of these
 * declarations is drivers/zoid/client_abi.rs (the implementation) and
 * drivers/zoid/call_abi.rs (a Transport for the generated client stubs,
 * which Rust consumers include by path); docs/zoid.md describes the
 * contract.
 *
 *	struct zoid_reply *r;
 *	int errno_ion;
 *	err = zoid_call(4, 2, args, args_len, 0, ZOID_CALL_DEFAULT, NULL, &r);
 *	if (err > 0)		   the ION answered with errno `err`
 *	else if (err < 0)	   no answer: -ETIMEDOUT, -EINTR, -ESHUTDOWN, -E2BIG, ...
 *	else {			   zoid_reply_read(r, 0, buf, zoid_reply_len(r));
 *		zoid_reply_free(r);
 *	}
 *
 * zoid_call_start() and zoid_call_wait() split a call in two, so that a
 * caller keeps several in flight (zoidfs's pipelined reads and writes).
 *
 * Calls carry the calling task's credentials (pid, fsuid, fsgid, groups).
 */
#ifndef ZOID_CLIENT_H
#define ZOID_CLIENT_H

#include <linux/types.h>

#define ZOID_CLIENT_ABI 5

/* How a call waits for an ION that does not answer. */
enum zoid_call_mode {
	ZOID_CALL_DEFAULT = 0,	/* zoid's `hard` knob */
	ZOID_CALL_SOFT = 1,	/* fail with -ETIMEDOUT after the timeout */
	ZOID_CALL_HARD = 2,	/* wait (and resend) until a fatal signal */
};

struct zoid_reply;
struct zoid_call;

/*
 * The ABI version of the loaded zoid.ko (a consumer refuses to load with
 * another).
 */
u32 zoid_client_abi(void);

/*
 * The CN's ION, attaching first if needed (waits at most zoid's
 * `timeout_ms`): its node id, or a negative errno (-ETIMEDOUT when no ION
 * answers, -ENODEV while zoid is not up).  *max_request and *max_reply
 * receive the ION's message limits (bytes, headers included).
 */
int zoid_client_ion(u32 *max_request, u32 *max_reply);

/*
 * The CN's current attach to its ION: a number that names it alone while
 * zoid is loaded, or 0 while the CN is not attached (the ION was lost).
 * What the ION granted under one attach (zoidfs's relaxed grants) is void
 * under any other: the ION forgot it when it lost this CN.  Does not
 * attach (it may sleep on the client's lock).
 */
u32 zoid_client_session(void);

/*
 * Upcalls: messages a plug-in's ION side sends its CN side (zoidfs's
 * recalls).  The handler runs in treenet's engine thread with `body`
 * (`len` bytes, at most 512) valid only during the call: it must not
 * sleep (copy what it needs and queue work).  Only upcalls from this CN's
 * ION arrive.
 */
typedef void (*zoid_upcall_fn)(u16 function, const void *body, size_t len);

/*
 * Sets plug-in `plugin`'s upcall handler, or removes it with a NULL `fn`
 * (waiting for a handler that is running).  0, -EBUSY (the plug-in has
 * one), -ENOENT (nothing to remove), -ENODEV (zoid is not up).
 */
int zoid_client_set_upcall(u16 plugin, zoid_upcall_fn fn);

/*
 * Calls `function` of plug-in `plugin` with marshalled `args` and waits
 * (`timeout_ms` 0: zoid's `timeout_ms` knob; `mode` a zoid_call_mode).
 * Returns 0 with *reply set to the results (free with zoid_reply_free()),
 * a positive errno the ION answered (no reply), or a negative errno when
 * there is no answer.
 *
 * `abort` is NULL or a flag that stays valid until the call is waited
 * for: once it is nonzero the call gives up with -ESHUTDOWN within 250 ms
 * (even a hard one: zoidfs's `umount -f`; a send waiting for treenet
 * queue space first waits for that space or for the ION to be declared
 * down), and is not sent at all if it was set before.
 */
int zoid_call(u16 plugin, u16 function, const void *args, size_t args_len,
	      u32 timeout_ms, int mode, const atomic_t *abort, struct zoid_reply **reply);

/*
 * Sends a call like zoid_call() and returns without waiting: 0 with *call
 * set, or a negative errno (nothing was sent).  The arguments are copied
 * before it returns; the timeout runs from now.  Several calls may be in
 * flight; each must be passed to zoid_call_wait() exactly once.
 */
int zoid_call_start(u16 plugin, u16 function, const void *args, size_t args_len,
		    u32 timeout_ms, int mode, const atomic_t *abort, struct zoid_call **call);

/*
 * Waits for a started call and frees it: returns as zoid_call() (with a
 * NULL `reply` the call is abandoned and its reply dropped).
 */
int zoid_call_wait(struct zoid_call *call, struct zoid_reply **reply);

/* Bytes of results in `r`. */
size_t zoid_reply_len(const struct zoid_reply *r);

/* Copies `len` bytes of results at `off` to `dst`: 0 or -EINVAL. */
int zoid_reply_read(const struct zoid_reply *r, size_t off, void *dst, size_t len);

void zoid_reply_free(struct zoid_reply *r);

#endif
