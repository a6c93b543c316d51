// SPDX-License-Identifier: GPL-2.0
/*
 * zoid_kernel C shim: raw frames of one ethertype on one netdevice.
 *
 * `linux/netdevice.h` has no Rust bindings in 7.3, so registration of the
 * packet_type and transmission live here; the Rust side is
 * rust/zoid_kernel/netlink.rs.  Received frames are linearised and queued
 * (bounded) in softirq context, and the owner's thread is kicked; the
 * owner dequeues and parses them in process context.
 */
#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <linux/if_arp.h>
#include <linux/pkt_sched.h>
#include <linux/skbuff.h>
#include <net/busy_poll.h>
#include <net/sch_generic.h>

#include "zoid_kernel_shim.h"


struct zk_netlink {
	struct packet_type pt;
	/* NULL once the device is unregistered (see zk_netlink_event). */
	struct net_device __rcu *dev;
	struct net_device *held;
	netdevice_tracker tracker;
	struct notifier_block nb;
	char name[IFNAMSIZ];
	unsigned int mtu;
	struct sk_buff_head rxq;
	unsigned int rxq_limit;
	struct zk_thread *kick;
	atomic64_t rx_overflow;
	atomic64_t tx_errors;
	/*
	 * Frames held between zk_netlink_tx_hold and zk_netlink_tx_flush,
	 * handed to the driver together (see zk_netlink_tx_flush).  Its own
	 * lock orders the owner against zk_netlink_release.
	 */
	struct sk_buff_head tx_batch;
	bool holding;
};

static int zk_netlink_rcv(struct sk_buff *skb, struct net_device *dev,
			  struct packet_type *pt, struct net_device *orig_dev)
{
	struct zk_netlink *l = container_of(pt, struct zk_netlink, pt);

	if (skb->pkt_type == PACKET_OTHERHOST || skb->pkt_type == PACKET_LOOPBACK)
		goto drop;
	skb = skb_share_check(skb, GFP_ATOMIC);
	if (!skb)
		return NET_RX_DROP;
	if (skb_queue_len_lockless(&l->rxq) >= l->rxq_limit ||
	    skb_linearize(skb)) {
		atomic64_inc(&l->rx_overflow);
		goto drop;
	}
	skb_queue_tail(&l->rxq, skb);
	zk_thread_kick(l->kick);
	return NET_RX_SUCCESS;
drop:
	kfree_skb(skb);
	return NET_RX_DROP;
}

/* Lets go of the device: no more frames in or out, reference dropped. */
static void zk_netlink_release(struct zk_netlink *l)
{
	if (!l->held)
		return;
	dev_remove_pack(&l->pt); /* waits for receivers in flight */
	RCU_INIT_POINTER(l->dev, NULL);
	synchronize_net(); /* and for transmitters */
	skb_queue_purge(&l->rxq);
	skb_queue_purge(&l->tx_batch); /* held frames, after their senders */
	netdev_put(l->held, &l->tracker);
	l->held = NULL;
}

/*
 * The device goes away (hot unplug, `ip link del`, its driver unloads):
 * release it at once, or unregister_netdevice would wait for our reference
 * forever.  The link stays bound but dead (`running` is false); treenet's
 * neighbours on it time out.
 */
static int zk_netlink_event(struct notifier_block *nb, unsigned long event, void *ptr)
{
	struct zk_netlink *l = container_of(nb, struct zk_netlink, nb);
	struct net_device *dev = netdev_notifier_info_to_dev(ptr);

	if (dev == l->held) {
		if (event == NETDEV_UNREGISTER) {
			pr_info("zoid: %s is going away, releasing it\n", l->name);
			zk_netlink_release(l);
		} else if (event == NETDEV_CHANGEMTU) {
			WRITE_ONCE(l->mtu, dev->mtu);
		}
	}
	return NOTIFY_DONE;
}

/* Binds to ifname; frames of `ethertype` are queued and `kick` woken. */
struct zk_netlink *zk_netlink_open(const char *ifname, u16 ethertype,
				   unsigned int rxq_limit,
				   struct zk_thread *kick, int *err)
{
	struct zk_netlink *l = kzalloc(sizeof(*l), GFP_KERNEL);

	if (!l) {
		*err = -ENOMEM;
		return NULL;
	}
	l->held = netdev_get_by_name(&init_net, ifname, &l->tracker, GFP_KERNEL);
	if (!l->held) {
		kfree(l);
		*err = -ENODEV;
		return NULL;
	}
	if (l->held->type != ARPHRD_ETHER) {
		netdev_put(l->held, &l->tracker);
		kfree(l);
		*err = -EPROTONOSUPPORT;
		return NULL;
	}
	strscpy(l->name, l->held->name, sizeof(l->name));
	l->mtu = READ_ONCE(l->held->mtu);
	RCU_INIT_POINTER(l->dev, l->held);
	skb_queue_head_init(&l->rxq);
	skb_queue_head_init(&l->tx_batch);
	l->rxq_limit = rxq_limit;
	l->kick = kick;
	l->pt.type = htons(ethertype);
	l->pt.dev = l->held;
	l->pt.func = zk_netlink_rcv;
	dev_add_pack(&l->pt);
	l->nb.notifier_call = zk_netlink_event;
	*err = register_netdevice_notifier(&l->nb);
	if (*err) {
		zk_netlink_release(l);
		kfree(l);
		return NULL;
	}
	return l;
}

void zk_netlink_close(struct zk_netlink *l)
{
	/* Under RTNL, like the notifier: no event runs concurrently. */
	unregister_netdevice_notifier(&l->nb);
	zk_netlink_release(l);
	kfree(l);
}

struct sk_buff *zk_netlink_rx(struct zk_netlink *l)
{
	return skb_dequeue(&l->rxq);
}

const u8 *zk_skb_data(const struct sk_buff *skb, unsigned int *len)
{
	*len = skb->len;
	return skb->data;
}

void zk_skb_src_mac(const struct sk_buff *skb, u8 *mac)
{
	ether_addr_copy(mac, eth_hdr(skb)->h_source);
}

/* The NAPI context the frame came in on (0: none, or no busy polling). */
unsigned int zk_skb_napi_id(const struct sk_buff *skb)
{
#ifdef CONFIG_NET_RX_BUSY_POLL
	return napi_id_valid(skb->napi_id) ? skb->napi_id : 0;
#else
	return 0;
#endif
}

#ifdef CONFIG_NET_RX_BUSY_POLL
struct zk_busy_poll {
	struct zk_thread *t;
	const u32 *done;
	u64 until_ns;
	bool got;
};

static bool zk_busy_poll_end(void *arg, unsigned long start_time)
{
	struct zk_busy_poll *b = arg;

	b->got = zk_thread_has_work(b->t) || (b->done && READ_ONCE(*b->done));
	return b->got || ktime_get_ns() >= b->until_ns || signal_pending(current);
}
#endif

/*
 * Busy polling: the calling task runs the NAPI poll of context `napi_id`
 * (from zk_skb_napi_id) itself, as a socket's SO_BUSY_POLL does, until
 * work is kicked to it through `t` (a frame queued by zk_netlink_rcv, a
 * deadline), *done (if given) is nonzero, a signal, or ktime `until_ns`.
 * Frames then need no interrupt and no wake-up.  Returns whether it ended
 * on work or *done (false: time, a signal, or no such context).  Process
 * context, no locks held; bounded by `until_ns` (on need_resched() it
 * yields the CPU and then polls on).
 */
bool zk_busy_poll(unsigned int napi_id, struct zk_thread *t, const u32 *done,
		  u64 until_ns)
{
#ifdef CONFIG_NET_RX_BUSY_POLL
	struct zk_busy_poll b = { .t = t, .done = done, .until_ns = until_ns };

	if (!napi_id_valid(napi_id) || zk_busy_poll_end(&b, 0))
		return b.got;
	napi_busy_loop(napi_id, zk_busy_poll_end, &b, false, BUSY_POLL_BUDGET);
	return b.got;
#else
	return false;
#endif
}

void zk_skb_free(struct sk_buff *skb)
{
	consume_skb(skb);
}

unsigned int zk_netlink_mtu(const struct zk_netlink *l)
{
	return READ_ONCE(l->mtu);
}

int zk_netlink_ifindex(const struct zk_netlink *l)
{
	struct net_device *dev;
	int ifindex = 0;

	rcu_read_lock();
	dev = rcu_dereference(l->dev);
	if (dev)
		ifindex = dev->ifindex;
	rcu_read_unlock();
	return ifindex;
}

/* The name it had when bound (stays valid for the link's lifetime). */
const char *zk_netlink_name(const struct zk_netlink *l)
{
	return l->name;
}

bool zk_netlink_running(const struct zk_netlink *l)
{
	struct net_device *dev;
	bool running = false;

	rcu_read_lock();
	dev = rcu_dereference(l->dev);
	if (dev)
		running = netif_running(dev) && netif_carrier_ok(dev);
	rcu_read_unlock();
	return running;
}

u64 zk_netlink_rx_overflow(const struct zk_netlink *l)
{
	return atomic64_read(&l->rx_overflow);
}

u64 zk_netlink_tx_errors(const struct zk_netlink *l)
{
	return atomic64_read(&l->tx_errors);
}

/*
 * A frame of `len` bytes to fill, or NULL (no memory, or the device is
 * gone).  Frames are built for the largest link-layer header any Ethernet
 * device needs, so they stay valid whatever happens to the device.
 */
struct sk_buff *zk_netlink_tx_alloc(struct zk_netlink *l, unsigned int len, u8 **data)
{
	int hlen = LL_MAX_HEADER;
	struct sk_buff *skb;

	if (!rcu_access_pointer(l->dev))
		return NULL;
	skb = alloc_skb(hlen + len + 64, GFP_KERNEL);
	if (!skb)
		return NULL;
	skb_reserve(skb, hlen);
	skb_reset_network_header(skb);
	*data = skb_put(skb, len);
	skb->protocol = l->pt.type;
	skb->priority = TC_PRIO_CONTROL;
	return skb;
}

/* Sends (and consumes) a frame from zk_netlink_tx_alloc to `dst` (a MAC). */
int zk_netlink_tx(struct zk_netlink *l, struct sk_buff *skb, const u8 *dst)
{
	struct net_device *dev;
	int err;

	rcu_read_lock();
	dev = rcu_dereference(l->dev);
	if (!dev) {
		rcu_read_unlock();
		kfree_skb(skb);
		return -ENODEV;
	}
	skb->dev = dev;
	err = dev_hard_header(skb, dev, ntohs(l->pt.type), dst, dev->dev_addr, skb->len);
	if (err < 0) {
		rcu_read_unlock();
		kfree_skb(skb);
		atomic64_inc(&l->tx_errors);
		return -EINVAL;
	}
	if (l->holding) {
		skb_queue_tail(&l->tx_batch, skb);
		rcu_read_unlock();
		return 0;
	}
	err = dev_queue_xmit(skb);
	rcu_read_unlock();
	if (err != NET_XMIT_SUCCESS) {
		atomic64_inc(&l->tx_errors);
		return -ENOBUFS;
	}
	return 0;
}

/*
 * Frames sent from now on are held until zk_netlink_tx_flush.  The owner
 * serialises hold, tx and flush (treenet: its engine lock).
 */
void zk_netlink_tx_hold(struct zk_netlink *l)
{
	l->holding = true;
}

/*
 * Hands the held frames to the driver in one go, as pktgen does: under the
 * queue's lock, each with `xmit_more` set but the last, so that a driver
 * like virtio-net notifies the device once per batch instead of per frame,
 * and without the qdisc's enqueue, dequeue and validation per frame.  Taps
 * (tcpdump) still see every frame.  The qdisc is used as before when it
 * has frames queued (ours would overtake them), when the driver's queue is
 * stopped, and for whatever the driver does not take: it holds them until
 * the queue wakes.  Returns how many frames went to the driver directly,
 * and in *via_qdisc how many took the qdisc.
 */
unsigned int zk_netlink_tx_flush(struct zk_netlink *l, unsigned int *via_qdisc)
{
	struct netdev_queue *txq;
	struct net_device *dev;
	struct sk_buff *skb;
	unsigned int n = 0;
	bool more;

	l->holding = false;
	*via_qdisc = 0;
	if (skb_queue_empty_lockless(&l->tx_batch))
		return 0;
	local_bh_disable();
	dev = rcu_dereference_bh(l->dev);
	if (!dev || !netif_running(dev)) {
		local_bh_enable();
		atomic64_add(skb_queue_len(&l->tx_batch), &l->tx_errors);
		skb_queue_purge(&l->tx_batch);
		return 0;
	}
	txq = netdev_get_tx_queue(dev, 0);
	if (qdisc_is_empty(rcu_dereference_bh(txq->qdisc))) {
		HARD_TX_LOCK(dev, txq, smp_processor_id());
		while (!netif_xmit_frozen_or_drv_stopped(txq) &&
		       (skb = skb_dequeue(&l->tx_batch))) {
			skb_set_queue_mapping(skb, 0);
			if (dev_nit_active_rcu(dev))
				dev_queue_xmit_nit(skb, dev);
			more = !skb_queue_empty_lockless(&l->tx_batch);
			if (!dev_xmit_complete(netdev_start_xmit(skb, dev, txq, more))) {
				/* Not taken (busy): to the qdisc, below. */
				skb_queue_head(&l->tx_batch, skb);
				break;
			}
			n++;
		}
		HARD_TX_UNLOCK(dev, txq);
	}
	while ((skb = skb_dequeue(&l->tx_batch))) {
		(*via_qdisc)++;
		if (dev_queue_xmit(skb) != NET_XMIT_SUCCESS)
			atomic64_inc(&l->tx_errors);
	}
	local_bh_enable();
	return n;
}

void zk_netlink_tx_discard(struct sk_buff *skb)
{
	kfree_skb(skb);
}
