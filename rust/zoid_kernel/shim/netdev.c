// SPDX-License-Identifier: GPL-2.0
/*
 * zoid_kernel C shim: a network device whose packets a Rust owner moves
 * (zoidnet's zn0).
 *
 * `linux/netdevice.h` has no Rust bindings in 7.3, so the device's life
 * (alloc_netdev, register_netdev, unregister_netdev, free_netdev), its
 * net_device_ops and the packet plumbing live here; the Rust side is
 * rust/zoid_kernel/netdev.rs.
 *
 * Transmit: ndo_start_xmit runs with bottom halves disabled (softirq
 * context is possible) and may not sleep, while the owner's transport
 * allocates with GFP_KERNEL.  So xmit only queues the packet on an
 * sk_buff_head of the device's private area (its own irq-safe lock, no
 * allocation), stops the device's queue once `tx_limit` packets wait, and
 * calls the owner's `kick`; the owner's thread dequeues in process context
 * and wakes the queue when it has room again.  A stopped queue makes the
 * qdisc hold packets, and the sockets above it wait: backpressure, as
 * with a NIC whose ring is full.
 *
 * Receive: the owner hands over a packet's bytes in process context; an
 * skb is built (page fragments beyond the first bytes, so no high-order
 * allocation) and given to netif_rx.  Its checksums are taken as verified
 * (CHECKSUM_UNNECESSARY): the transport checksums every frame.
 *
 * The device has no link-layer header and no addresses of its own
 * (ARPHRD_NONE, point-to-point, no ARP), like a tun device.  It offloads
 * checksums (NETIF_F_HW_CSUM): a packet for a node of the same transport
 * travels with the checksum the stack left unfinished, and the owner
 * finishes it (zk_skb_finish_checksum) for a packet that leaves through a
 * router.
 */
#include <linux/etherdevice.h>
#include <linux/if_arp.h>
#include <linux/ipv6.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/skbuff.h>

#include "zoid_kernel_shim.h"

/* Packets at most this long are received into one linear buffer. */
#define ZK_NETDEV_RX_LINEAR_MAX 1024
/* Bytes of a longer packet in the linear part (the rest in pages). */
#define ZK_NETDEV_RX_HEAD 256

/* The device's private area. */
struct zk_netdev {
	struct net_device *dev;
	/* Packets from ndo_start_xmit, for the owner's thread. */
	struct sk_buff_head txq;
	/* The queue stops once this many packets wait in txq. */
	unsigned int tx_limit;
	/* Packets dropped from txq when the device went down. */
	atomic64_t tx_purged;
	/* The owner's callbacks (a copy) and their context. */
	struct zk_netdev_ops ops;
	void *ctx;
};

static int zk_netdev_open(struct net_device *dev)
{
	netif_start_queue(dev);
	return 0;
}

/*
 * Down: what waits in txq is dropped, as a NIC drops its ring; the
 * packets held no references the unregistration would wait for (their
 * dst went at xmit), so this is only tidiness.
 */
static int zk_netdev_stop(struct net_device *dev)
{
	struct zk_netdev *nd = netdev_priv(dev);

	netif_stop_queue(dev);
	atomic64_add(skb_queue_len(&nd->txq), &nd->tx_purged);
	skb_queue_purge(&nd->txq);
	return 0;
}

/* BH disabled, under the queue's tx lock: no sleeping, no allocation. */
static netdev_tx_t zk_netdev_xmit(struct sk_buff *skb, struct net_device *dev)
{
	struct zk_netdev *nd = netdev_priv(dev);

	/*
	 * The packet may wait for the owner's thread: it keeps no route
	 * (which pins the device) nor conntrack entry meanwhile.
	 */
	skb_dst_drop(skb);
	nf_reset_ct(skb);
	skb_tx_timestamp(skb);
	skb_queue_tail(&nd->txq, skb);
	if (skb_queue_len_lockless(&nd->txq) >= READ_ONCE(nd->tx_limit))
		netif_stop_queue(dev);
	/* After the stop: the owner then sees a stopped queue to wake. */
	nd->ops.kick(nd->ctx);
	return NETDEV_TX_OK;
}

/* Any context, RCU read side possibly: the owner's counters are atomics. */
static void zk_netdev_get_stats64(struct net_device *dev,
				  struct rtnl_link_stats64 *stats)
{
	struct zk_netdev *nd = netdev_priv(dev);
	struct zk_netdev_stats s = {};

	nd->ops.stats(nd->ctx, &s);
	stats->rx_packets = s.rx_packets;
	stats->tx_packets = s.tx_packets;
	stats->rx_bytes = s.rx_bytes;
	stats->tx_bytes = s.tx_bytes;
	stats->rx_dropped = s.rx_dropped;
	stats->tx_dropped = s.tx_dropped + atomic64_read(&nd->tx_purged);
	stats->rx_errors = s.rx_errors;
	stats->tx_errors = s.tx_errors;
}

static const struct net_device_ops zk_netdev_device_ops = {
	.ndo_open = zk_netdev_open,
	.ndo_stop = zk_netdev_stop,
	.ndo_start_xmit = zk_netdev_xmit,
	.ndo_get_stats64 = zk_netdev_get_stats64,
};

/* alloc_netdev's setup: a headerless, addressless IP device. */
static void zk_netdev_setup(struct net_device *dev)
{
	dev->netdev_ops = &zk_netdev_device_ops;
	dev->type = ARPHRD_NONE;
	dev->hard_header_len = 0;
	dev->addr_len = 0;
	dev->flags = IFF_POINTOPOINT | IFF_NOARP;
	dev->tx_queue_len = 1000;
	dev->min_mtu = IPV6_MIN_MTU;
	dev->max_mtu = ZK_NETDEV_MAX_MTU;
	dev->features = NETIF_F_HW_CSUM | NETIF_F_SG | NETIF_F_FRAGLIST |
			NETIF_F_HIGHDMA;
	dev->hw_features = dev->features;
	/* No carrier until the owner says so. */
	netif_carrier_off(dev);
}

/*
 * Registers device `name` (a "%d" in it is numbered by the kernel) with
 * MTU `mtu` (IPV6_MIN_MTU..ZK_NETDEV_MAX_MTU), stopping its queue once
 * `tx_limit` packets wait for the owner.  `ops` is copied; `ctx` must stay
 * valid until zk_netdev_unregister returned.  Process context (takes RTNL).
 */
struct zk_netdev *zk_netdev_register(const char *name, unsigned int mtu,
				     unsigned int tx_limit,
				     const struct zk_netdev_ops *ops, void *ctx,
				     int *err)
{
	struct net_device *dev;
	struct zk_netdev *nd;

	if (mtu < IPV6_MIN_MTU || mtu > ZK_NETDEV_MAX_MTU || !tx_limit) {
		*err = -EINVAL;
		return NULL;
	}
	dev = alloc_netdev(sizeof(*nd), name, NET_NAME_USER, zk_netdev_setup);
	if (!dev) {
		*err = -ENOMEM;
		return NULL;
	}
	dev->mtu = mtu;
	nd = netdev_priv(dev);
	nd->dev = dev;
	skb_queue_head_init(&nd->txq);
	nd->tx_limit = tx_limit;
	atomic64_set(&nd->tx_purged, 0);
	nd->ops = *ops;
	nd->ctx = ctx;
	*err = register_netdev(dev);
	if (*err) {
		free_netdev(dev);
		return NULL;
	}
	return nd;
}

/*
 * Unregisters and frees the device.  When it returns, no callback of the
 * owner runs or will run: unregister_netdev closes the device (no more
 * xmit) and waits for every user (stats readers included).  Process
 * context (takes RTNL).
 */
void zk_netdev_unregister(struct zk_netdev *nd)
{
	struct net_device *dev = nd->dev;

	unregister_netdev(dev);
	skb_queue_purge(&nd->txq);
	free_netdev(dev);
}

/* The oldest packet waiting for transmission, or NULL.  Any context. */
struct sk_buff *zk_netdev_dequeue(struct zk_netdev *nd)
{
	return skb_dequeue(&nd->txq);
}

/* How many packets wait for transmission. */
unsigned int zk_netdev_queued(const struct zk_netdev *nd)
{
	return skb_queue_len_lockless(&nd->txq);
}

/* Restarts a queue xmit stopped, if the device is up.  Any context. */
void zk_netdev_wake_queue(struct zk_netdev *nd)
{
	if (netif_running(nd->dev) && netif_queue_stopped(nd->dev))
		netif_wake_queue(nd->dev);
}

/* Carrier on or off (the link to the peers is there or not).  Any context. */
void zk_netdev_set_carrier(struct zk_netdev *nd, bool on)
{
	if (on)
		netif_carrier_on(nd->dev);
	else
		netif_carrier_off(nd->dev);
}

/* Whether the device is up (administratively). */
bool zk_netdev_running(const struct zk_netdev *nd)
{
	return netif_running(nd->dev);
}

/* The device's name now, into `buf` (IFNAMSIZ bytes).  Takes RTNL. */
void zk_netdev_name(struct zk_netdev *nd, char *buf)
{
	rtnl_lock();
	strscpy(buf, nd->dev->name, IFNAMSIZ);
	rtnl_unlock();
}

/*
 * Hands a received IP packet (`len` bytes at `data`, starting with its IP
 * header) to the stack.  -EINVAL: not IPv4 or IPv6 (the version nibble);
 * -ENETDOWN: the device is down; -ENOMEM; -ENOBUFS: the CPU's backlog is
 * full.  Process context: it may sleep for memory.
 */
int zk_netdev_rx(struct zk_netdev *nd, const u8 *data, unsigned int len)
{
	struct net_device *dev = nd->dev;
	unsigned int linear;
	struct sk_buff *skb;
	__be16 proto;
	int err;

	if (!len)
		return -EINVAL;
	switch (data[0] >> 4) {
	case 4:
		proto = htons(ETH_P_IP);
		break;
	case 6:
		proto = htons(ETH_P_IPV6);
		break;
	default:
		return -EINVAL;
	}
	if (!netif_running(dev))
		return -ENETDOWN;
	linear = len <= ZK_NETDEV_RX_LINEAR_MAX ? len : ZK_NETDEV_RX_HEAD;
	skb = alloc_skb_with_frags(NET_IP_ALIGN + linear, len - linear,
				   PAGE_ALLOC_COSTLY_ORDER, &err, GFP_KERNEL);
	if (!skb)
		return -ENOMEM;
	skb_reserve(skb, NET_IP_ALIGN);
	skb_put(skb, linear);
	skb->data_len = len - linear;
	skb->len += len - linear;
	if (skb_store_bits(skb, 0, data, len)) {
		kfree_skb(skb);
		return -EINVAL;
	}
	skb->dev = dev;
	skb->protocol = proto;
	skb->pkt_type = PACKET_HOST;
	skb->ip_summed = CHECKSUM_UNNECESSARY;
	skb_reset_mac_header(skb);
	skb_reset_network_header(skb);
	if (netif_rx(skb) != NET_RX_SUCCESS)
		return -ENOBUFS;
	return 0;
}

/* Bytes in a packet. */
unsigned int zk_skb_len(const struct sk_buff *skb)
{
	return skb->len;
}

/* Copies `len` bytes at `offset` of a packet (linear or not) to `to`. */
int zk_skb_copy(const struct sk_buff *skb, unsigned int offset, u8 *to,
		unsigned int len)
{
	return skb_copy_bits(skb, offset, to, len);
}

/*
 * Fills in a checksum the stack left to the device (CHECKSUM_PARTIAL);
 * nothing to do otherwise.  May allocate (GFP_ATOMIC) to unshare a
 * cloned packet: -ENOMEM.
 */
int zk_skb_finish_checksum(struct sk_buff *skb)
{
	if (skb->ip_summed != CHECKSUM_PARTIAL)
		return 0;
	return skb_checksum_help(skb);
}

/* Frees a packet that was sent. */
void zk_skb_consume(struct sk_buff *skb)
{
	consume_skb(skb);
}

/* Frees a packet that was dropped (drop monitors see it). */
void zk_skb_drop(struct sk_buff *skb)
{
	kfree_skb(skb);
}
