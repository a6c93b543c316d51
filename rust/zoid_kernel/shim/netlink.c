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
	/*
	 * The owner's receive fast path (zk_netlink_open): offered each
	 * frame in softirq while the queue is empty; true if it took it.
	 */
	zk_netlink_fast_fn fast;
	void *fast_ctx;
	atomic64_t rx_overflow;
	atomic64_t tx_errors;
	/*
	 * Frames held between zk_netlink_tx_hold and zk_netlink_tx_flush,
	 * handed to the driver `batch_max` at a time (zk_netlink_tx_push).
	 * Its own lock orders the owner against zk_netlink_release.
	 */
	struct sk_buff_head tx_batch;
	bool holding;
	unsigned int batch_max;
	/* Since the last zk_netlink_tx_flush: batches, and frames sent. */
	atomic_t batches;
	atomic_t batch_direct;
	atomic_t batch_via_qdisc;
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
	/*
	 * Only while nothing is queued: a frame taken here never overtakes
	 * one the owner has yet to dequeue.
	 */
	if (l->fast && skb_queue_empty_lockless(&l->rxq) &&
	    l->fast(l->fast_ctx, l, skb)) {
		consume_skb(skb);
		return NET_RX_SUCCESS;
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

/*
 * Binds to ifname; frames of `ethertype` are queued and `kick` woken.
 * `fast` (may be NULL) is offered each frame first, in softirq, while the
 * queue is empty: if it returns true it took the frame (the skb is freed
 * when it returns).  `fast_ctx` must outlive the link.
 */
struct zk_netlink *zk_netlink_open(const char *ifname, u16 ethertype,
				   unsigned int rxq_limit,
				   struct zk_thread *kick, zk_netlink_fast_fn fast,
				   void *fast_ctx, int *err)
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
	l->fast = fast;
	l->fast_ctx = fast_ctx;
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
 * gone; with bottom halves disabled the allocation does not wait).  Frames are built for the largest link-layer header any Ethernet
 * device needs, so they stay valid whatever happens to the device.
 */
struct sk_buff *zk_netlink_tx_alloc(struct zk_netlink *l, unsigned int len, u8 **data)
{
	int hlen = LL_MAX_HEADER;
	struct sk_buff *skb;

	if (!rcu_access_pointer(l->dev))
		return NULL;
	/* Frames sent from the receive fast path (softirq) may not sleep. */
	skb = alloc_skb(hlen + len + 64, in_softirq() ? GFP_ATOMIC : GFP_KERNEL);
	if (!skb)
		return NULL;
	skb_reserve(skb, hlen);
	skb_reset_network_header(skb);
	*data = skb_put(skb, len);
	skb->protocol = l->pt.type;
	skb->priority = TC_PRIO_CONTROL;
	return skb;
}

static void zk_netlink_tx_push(struct zk_netlink *l);

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
	skb_reset_mac_header(skb);
	if (READ_ONCE(l->holding)) {
		skb_queue_tail(&l->tx_batch, skb);
		rcu_read_unlock();
		/* A full batch goes now: the device need not wait for the rest. */
		if (skb_queue_len_lockless(&l->tx_batch) >= READ_ONCE(l->batch_max))
			zk_netlink_tx_push(l);
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
 * Frames sent from now on are held until zk_netlink_tx_flush, and go to the
 * driver `max` at a time (at least 1).  The owner serialises hold, tx and
 * flush (treenet: its engine lock).
 */
void zk_netlink_tx_hold(struct zk_netlink *l, unsigned int max)
{
	WRITE_ONCE(l->batch_max, max ? max : 1);
	WRITE_ONCE(l->holding, true);
}

/*
 * Whether held frames may bypass the qdisc of `dev`'s one tx queue `q`:
 * the device has carrier and one tx queue, no egress hook (tc's clsact or
 * tcx, netfilter), and `q` is noqueue or a lockless qdisc that lets frames
 * bypass it while it is empty (pfifo_fast, the default), whose run we then
 * own until qdisc_run_end, as __dev_xmit_skb does for one frame.  A
 * shaping qdisc, fq_codel, a multi-queue device or a device without
 * carrier keeps the qdisc path.  BH disabled.
 */
static bool zk_netlink_direct_begin(struct net_device *dev, struct Qdisc *q)
{
	if (!netif_carrier_ok(dev) || READ_ONCE(dev->real_num_tx_queues) != 1)
		return false;
#ifdef CONFIG_NET_XGRESS
	if (rcu_access_pointer(dev->tcx_egress))
		return false;
#endif
#ifdef CONFIG_NETFILTER_EGRESS
	if (rcu_access_pointer(dev->nf_hooks_egress))
		return false;
#endif
	if (!q->enqueue)
		return true;
	if (!(q->flags & TCQ_F_NOLOCK) || !(q->flags & TCQ_F_CAN_BYPASS) ||
	    !nolock_qdisc_is_empty(q) || !qdisc_run_begin(q))
		return false;
	/* Again under the qdisc's run lock: a requeue may have raced. */
	if (!nolock_qdisc_is_empty(q)) {
		qdisc_run_end(q);
		return false;
	}
	return true;
}

/*
 * Whether byte queue limits let more go to the queue now: frames sent with
 * xmit_more are counted but do not stop it (the qdisc's bulk dequeue stops
 * at the limit too).  What is left goes through the qdisc.
 */
static bool zk_netlink_bql_room(struct netdev_queue *txq)
{
#ifdef CONFIG_BQL
	return dql_avail(&txq->dql) >= 0;
#else
	return true;
#endif
}

/*
 * Hands the held frames to the driver in one go, as pktgen does: under the
 * queue's lock, each with `xmit_more` set but the last, so that a driver
 * like virtio-net notifies the device once per batch instead of per frame,
 * and without the qdisc's enqueue, dequeue and validation per frame.  Taps
 * (tcpdump) still see every frame.  The qdisc path is used as before where
 * bypassing the qdisc would change what it does (zk_netlink_direct_begin:
 * frames queued there, a shaping qdisc, egress hooks, several tx queues),
 * when the driver's queue is stopped, and for whatever the driver does
 * not take.
 */
static void zk_netlink_tx_push(struct zk_netlink *l)
{
	struct netdev_queue *txq;
	struct net_device *dev;
	unsigned int n = 0, queued = 0;
	struct sk_buff *skb;
	struct Qdisc *q;
	netdev_tx_t rc;
	bool more;

	if (skb_queue_empty_lockless(&l->tx_batch))
		return;
	local_bh_disable();
	dev = rcu_dereference_bh(l->dev);
	if (!dev || !netif_running(dev)) {
		local_bh_enable();
		atomic64_add(skb_queue_len(&l->tx_batch), &l->tx_errors);
		skb_queue_purge(&l->tx_batch);
		return;
	}
	txq = netdev_get_tx_queue(dev, 0);
	q = rcu_dereference_bh(txq->qdisc);
	if (zk_netlink_direct_begin(dev, q)) {
		HARD_TX_LOCK(dev, txq, smp_processor_id());
		while (!netif_xmit_frozen_or_stopped(txq) && zk_netlink_bql_room(txq) &&
		       (skb = skb_dequeue(&l->tx_batch))) {
			skb_set_queue_mapping(skb, 0);
			if (dev_nit_active_rcu(dev))
				dev_queue_xmit_nit(skb, dev);
			more = !skb_queue_empty_lockless(&l->tx_batch);
			rc = netdev_start_xmit(skb, dev, txq, more);
			if (rc == NETDEV_TX_BUSY) {
				/* Not taken: to the qdisc, below. */
				skb_queue_head(&l->tx_batch, skb);
				break;
			}
			if (rc == NETDEV_TX_OK)
				n++;
			else
				atomic64_inc(&l->tx_errors);
		}
		HARD_TX_UNLOCK(dev, txq);
		if (q->enqueue)
			qdisc_run_end(q); /* lockless: nothing to free */
	}
	/*
	 * The rest (the qdisc path refused above, the queue stopped, the
	 * driver busy) through the qdisc, which holds frames until the queue
	 * wakes.
	 */
	while ((skb = skb_dequeue(&l->tx_batch))) {
		queued++;
		if (dev_queue_xmit(skb) != NET_XMIT_SUCCESS)
			atomic64_inc(&l->tx_errors);
	}
	local_bh_enable();
	if (n) {
		atomic_inc(&l->batches);
		atomic_add(n, &l->batch_direct);
	}
	atomic_add(queued, &l->batch_via_qdisc);
}

/*
 * Sends what is still held and stops holding.  Returns, since the last
 * flush, in b[0] the batches handed to the driver directly, in b[1] their
 * frames and in b[2] the held frames that took the qdisc.
 */
void zk_netlink_tx_flush(struct zk_netlink *l, unsigned int *b)
{
	WRITE_ONCE(l->holding, false);
	zk_netlink_tx_push(l);
	b[0] = atomic_xchg(&l->batches, 0);
	b[1] = atomic_xchg(&l->batch_direct, 0);
	b[2] = atomic_xchg(&l->batch_via_qdisc, 0);
}

void zk_netlink_tx_discard(struct sk_buff *skb)
{
	kfree_skb(skb);
}
