/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Prototypes of the zoid_kernel C shims; the Rust side declares the same
 * functions in rust/zoid_kernel/{kthread,netlink}.rs.
 */
#ifndef ZOID_KERNEL_SHIM_H
#define ZOID_KERNEL_SHIM_H

#include <linux/types.h>

struct sk_buff;
struct zk_thread;
struct zk_netlink;

void zk_current_creds(u32 *tgid, u32 *uid, u32 *gid, u32 *groups,
		      u32 max_groups, u32 *ngroups);

struct zk_thread *zk_thread_alloc(void);
int zk_thread_start(struct zk_thread *t, int (*fn)(void *), void *data,
		    const char *name);
void zk_thread_stop(struct zk_thread *t);
void zk_thread_stop_free(struct zk_thread *t);
void zk_thread_kick(struct zk_thread *t);
bool zk_thread_should_stop(void);
void zk_thread_wait(struct zk_thread *t, long timeout);

struct zk_netlink *zk_netlink_open(const char *ifname, u16 ethertype,
				   unsigned int rxq_limit,
				   struct zk_thread *kick, int *err);
void zk_netlink_close(struct zk_netlink *l);
struct sk_buff *zk_netlink_rx(struct zk_netlink *l);
const u8 *zk_skb_data(const struct sk_buff *skb, unsigned int *len);
void zk_skb_src_mac(const struct sk_buff *skb, u8 *mac);
void zk_skb_free(struct sk_buff *skb);
unsigned int zk_netlink_mtu(const struct zk_netlink *l);
int zk_netlink_ifindex(const struct zk_netlink *l);
const char *zk_netlink_name(const struct zk_netlink *l);
bool zk_netlink_running(const struct zk_netlink *l);
u64 zk_netlink_rx_overflow(const struct zk_netlink *l);
u64 zk_netlink_tx_errors(const struct zk_netlink *l);
struct sk_buff *zk_netlink_tx_alloc(struct zk_netlink *l, unsigned int len, u8 **data);
int zk_netlink_tx(struct zk_netlink *l, struct sk_buff *skb, const u8 *dst);
void zk_netlink_tx_discard(struct sk_buff *skb);

#endif
