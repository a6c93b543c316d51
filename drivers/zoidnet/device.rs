// SPDX-License-Identifier: GPL-2.0

//! `zn0` and the packets it moves: the transmit thread, treenet's receive
//! callback and what both need to know (the address plan, this node and
//! its ION).
//!
//! Transmit: the device queues what the stack sends and kicks the
//! `zoidnet_tx` thread, which asks `zoid_proto::zoidnet::transmit` where
//! each packet goes and sends it as one treenet message without waiting:
//! a destination whose treenet queue is full (a neighbour that takes
//! nothing) loses the packet (`tx_queue_full`), so it cannot stall the
//! traffic to the others.
//!
//! Receive: treenet's engine thread hands over each message; the trust
//! check (`zoid_proto::zoidnet::receive`) runs on its first bytes before
//! the rest is copied, and what passes goes up the stack.

use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::{Arc, Mutex, SpinLock};
use kernel::{new_mutex, new_spinlock};

use crate::treenet;
use crate::zoid_kernel::kthread::{Kicker, ThreadBody, ThreadCtx};
use crate::zoid_kernel::netdev::{Config, NetDev, NetDevOps, SkBuff, Stats64};
use crate::zoid_kernel::stats::counters;
use crate::zoid_kernel::sysfs::SysfsWriter;
use crate::zoid_kernel::time::U64;
use crate::zoid_proto::zoidnet::{
    self, DropReason, Local, Plan, Rx, Tx, DEFAULT_PLAN, HEADER_BYTES, MAX_PACKET_BYTES,
};

/// The treenet channel zoidnet's packets travel on.
pub(crate) const CHANNEL: u16 = 7;

/// Packets that wait for `zoidnet_tx` before the device's queue stops
/// (and the qdisc above it holds the rest).
pub(crate) const TX_QUEUE_LIMIT: u32 = 128;

/// Packets `zoidnet_tx` sends in a row before it looks whether it is to
/// stop.
const TX_BUDGET: usize = 64;

counters! {
    /// What zoidnet moved and refused (`/sys/kernel/zoidnet/stats`; the
    /// device's own counters, `ip -s link`, are made of them).
    pub(crate) struct Counters {
        tx_packets: "Packets sent to another node.",
        tx_bytes: "Bytes of those packets.",
        tx_dropped: "Packets to send that were not sent (any reason below).",
        rx_packets: "Packets received and handed to the IP stack.",
        rx_bytes: "Bytes of those packets.",
        rx_dropped: "Received packets not handed to the IP stack (any reason below).",
        malformed: "Packets that are not IPv4 or IPv6 of the length they say.",
        spoofed_source: "Received packets whose source is not their sender's address.",
        not_for_us: "Received packets for an address this node neither has nor forwards.",
        no_route: "Packets to send with no node to go to (nobody's address, no ION up, unreachable).",
        multicast: "Multicast and broadcast packets to send (not carried).",
        to_self: "Packets to send to this node's own address.",
        tx_queue_full: "Packets to send whose destination's treenet queue was full.",
        nomem: "Packets lost for lack of memory (either way).",
        too_big: "Packets larger than treenet's max_msg_size or than an IP packet can be.",
        rx_backlog_full: "Received packets the CPU's input backlog had no room for.",
        rx_device_down: "Received packets while the device was down.",
    }
}

/// What the device's callbacks reach: the transmit thread's kicker and the
/// counters.
pub(crate) struct DeviceOwner {
    kicker: Kicker,
    pub(crate) counters: Counters,
}

impl NetDevOps for DeviceOwner {
    fn kick(&self) {
        self.kicker.kick();
    }

    fn stats(&self) -> Stats64 {
        let c = &self.counters;
        Stats64 {
            rx_packets: c.rx_packets.load(Relaxed),
            tx_packets: c.tx_packets.load(Relaxed),
            rx_bytes: c.rx_bytes.load(Relaxed),
            tx_bytes: c.tx_bytes.load(Relaxed),
            rx_dropped: c.rx_dropped.load(Relaxed),
            tx_dropped: c.tx_dropped.load(Relaxed),
            rx_errors: 0,
            tx_errors: 0,
        }
    }
}

/// "No node" in [`Topology`]'s fields.
const NO_NODE: u32 = u32::MAX;

/// This node and its ION, as treenet last said (refreshed at load, on
/// every peer event and when sysfs shows addresses).
struct Topology {
    /// This node's id; [`NO_NODE`] while treenet has none.
    node: Atomic<u32>,
    /// The ION's id (this node's on the ION); [`NO_NODE`] while a CN's ION
    /// is down.
    ion: Atomic<u32>,
    /// The last ION a CN had: its gateway, still shown while it is down.
    last_ion: Atomic<u32>,
}

/// A node id from a [`Topology`] field.
fn node_from(v: u32) -> Option<u16> {
    u16::try_from(v).ok()
}

impl Topology {
    const fn new() -> Self {
        Self {
            node: Atomic::new(NO_NODE),
            ion: Atomic::new(NO_NODE),
            last_ion: Atomic::new(NO_NODE),
        }
    }

    /// This node and its ION; `None` while treenet has no node id.
    fn local(&self) -> Option<Local> {
        Some(Local {
            node: node_from(self.node.load(Relaxed))?,
            ion: node_from(self.ion.load(Relaxed)),
        })
    }

    /// The ION a CN routes through (the last one it had); `None` on the
    /// ION and on a CN that never had one.
    fn gateway(&self) -> Option<u16> {
        let local = self.local()?;
        if local.is_ion() {
            return None;
        }
        node_from(self.last_ion.load(Relaxed))
    }
}

/// zoidnet's state: the device, the plan, the topology and the packet
/// buffers of the transmit thread and the receive callback.
#[pin_data]
pub(crate) struct Zoidnet {
    pub(crate) dev: NetDev<DeviceOwner>,
    #[pin]
    plan: SpinLock<Plan>,
    topology: Topology,
    /// Serialises refreshes of `topology` and the carrier, so that an
    /// older answer of treenet's never lands after a newer one.
    #[pin]
    refreshing: Mutex<()>,
    /// `zoidnet_tx`'s copy of the packet it sends.
    #[pin]
    tx_buffer: Mutex<VVec<u8>>,
    /// The receive callback's copy of the packet it hands up.
    #[pin]
    rx_buffer: Mutex<VVec<u8>>,
}

/// A buffer for the largest packet.
fn packet_buffer() -> Result<VVec<u8>> {
    Ok(VVec::from_elem(0u8, MAX_PACKET_BYTES, GFP_KERNEL)?)
}

impl Zoidnet {
    /// Registers device `name` with MTU `mtu` (it starts down, without
    /// carrier, with the default plan).
    pub(crate) fn new(name: &CStr, mtu: u32) -> Result<Arc<Self>> {
        let tx_buffer = packet_buffer()?;
        let rx_buffer = packet_buffer()?;
        let owner = Arc::new(
            DeviceOwner {
                kicker: Kicker::new()?,
                counters: Counters::new(),
            },
            GFP_KERNEL,
        )?;
        let config = Config {
            mtu,
            tx_queue_limit: TX_QUEUE_LIMIT,
        };
        let dev = NetDev::register(name, config, owner)?;
        Arc::pin_init(
            try_pin_init!(Self {
                dev,
                plan <- new_spinlock!(DEFAULT_PLAN, "zoidnet::plan"),
                topology: Topology::new(),
                refreshing <- new_mutex!((), "zoidnet::refreshing"),
                tx_buffer <- new_mutex!(tx_buffer, "zoidnet::tx_buffer"),
                rx_buffer <- new_mutex!(rx_buffer, "zoidnet::rx_buffer"),
            }? Error),
            GFP_KERNEL,
        )
    }

    /// The counters.
    pub(crate) fn counters(&self) -> &Counters {
        &self.dev.ops().counters
    }

    /// The address plan now.
    pub(crate) fn plan(&self) -> Plan {
        *self.plan.lock()
    }

    /// Changes the address plan: only while the device is down (`EBUSY`),
    /// so that the addresses it has were made from the plan it uses.
    pub(crate) fn change_plan(&self, change: impl FnOnce(&mut Plan)) -> Result {
        if self.dev.is_up() {
            return Err(EBUSY);
        }
        change(&mut self.plan.lock());
        Ok(())
    }

    /// Reads this node's id and its ION from treenet, and turns the
    /// carrier on while the node has an ION to talk to (always on the
    /// ION).  Returns the new state.
    pub(crate) fn refresh_topology(&self) -> Option<Local> {
        let _serialised = self.refreshing.lock();
        let t = &self.topology;
        let node = treenet::node_id().ok();
        let ion = node.and_then(|_| treenet::ion().ok());
        t.node.store(node.map_or(NO_NODE, u32::from), Relaxed);
        t.ion.store(ion.map_or(NO_NODE, u32::from), Relaxed);
        if let Some(i) = ion.filter(|i| Some(*i) != node) {
            t.last_ion.store(u32::from(i), Relaxed);
        }
        self.dev.set_carrier(ion.is_some());
        t.local()
    }

    /// The ION a CN routes through, as of the last refresh.
    pub(crate) fn gateway(&self) -> Option<u16> {
        self.topology.gateway()
    }

    /// Counts a packet to send that is not sent.
    fn tx_lost(&self, why: &Atomic<u64>) {
        why.fetch_add(1, Relaxed);
        self.counters().tx_dropped.fetch_add(1, Relaxed);
    }

    /// Counts a received packet that is not handed up.
    fn rx_lost(&self, why: &Atomic<u64>) {
        why.fetch_add(1, Relaxed);
        self.counters().rx_dropped.fetch_add(1, Relaxed);
    }

    /// The counter of a decision's reason.
    fn counter_of(&self, reason: DropReason) -> &Atomic<u64> {
        let c = self.counters();
        match reason {
            DropReason::Malformed => &c.malformed,
            DropReason::NoRoute => &c.no_route,
            DropReason::Multicast => &c.multicast,
            DropReason::ToSelf => &c.to_self,
            DropReason::SpoofedSource => &c.spoofed_source,
            DropReason::NotForUs => &c.not_for_us,
        }
    }

    /// Sends up to `budget` queued packets; whether some may be left.
    fn transmit_queued(&self, budget: usize) -> bool {
        let mut buf = self.tx_buffer.lock();
        for _ in 0..budget {
            let Some(skb) = self.dev.dequeue() else {
                self.dev.wake_queue();
                return false;
            };
            self.transmit(skb, &mut buf);
            if self.dev.queued() <= TX_QUEUE_LIMIT as usize / 2 {
                self.dev.wake_queue();
            }
        }
        true
    }

    /// Sends one packet, or counts why not.
    fn transmit(&self, mut skb: SkBuff, buf: &mut [u8]) {
        let c = self.counters();
        let len = skb.len();
        if len > buf.len() {
            return self.tx_lost(&c.too_big);
        }
        let mut head = [0u8; HEADER_BYTES];
        let head = &mut head[..len.min(HEADER_BYTES)];
        if skb.copy_to(0, head).is_err() {
            return self.tx_lost(&c.malformed);
        }
        let decision = match self.topology.local() {
            Some(local) => zoidnet::transmit(&self.plan(), local, head, len),
            None => Tx::Drop(DropReason::NoRoute),
        };
        let node = match decision {
            Tx::Node(n) => n,
            // It leaves the pset through the ION, which forwards it as it
            // is: its checksum must be whole.
            Tx::Gateway(n) => match skb.finish_checksum() {
                Ok(()) => n,
                Err(e) if e == ENOMEM => return self.tx_lost(&c.nomem),
                Err(_) => return self.tx_lost(&c.malformed),
            },
            Tx::Drop(reason) => return self.tx_lost(self.counter_of(reason)),
        };
        let packet = &mut buf[..len];
        if skb.copy_to(0, packet).is_err() {
            return self.tx_lost(&c.malformed);
        }
        match treenet::send(CHANNEL, node, packet, false) {
            Ok(()) => {
                c.tx_packets.fetch_add(1, Relaxed);
                c.tx_bytes.fetch_add(len as u64, Relaxed);
                skb.consume();
            }
            Err(e) if e == EAGAIN => self.tx_lost(&c.tx_queue_full),
            Err(e) if e == ENOMEM => self.tx_lost(&c.nomem),
            Err(e) if e == EMSGSIZE => self.tx_lost(&c.too_big),
            // EHOSTUNREACH, ENODEV (treenet has no node id), ...
            Err(_) => self.tx_lost(&c.no_route),
        }
    }

    /// `stats`: one `name value` line per counter.
    pub(crate) fn show_stats(&self, w: &mut SysfsWriter<'_>) -> Result {
        let mut r = Ok(());
        self.counters().each(|name, v| {
            if r.is_ok() {
                r = writeln!(w, "{name} {}", U64(v));
            }
        });
        r
    }
}

impl ThreadBody for Zoidnet {
    fn kicker(&self) -> &Kicker {
        &self.dev.ops().kicker
    }

    fn run(&self, ctx: &ThreadCtx<'_>) {
        while !ctx.should_stop() {
            if !self.transmit_queued(TX_BUDGET) {
                ctx.wait(usize::MAX);
            }
        }
    }
}

impl treenet::Handler for Zoidnet {
    /// A CN's packet for another CN goes through the ION's treenet, which
    /// passes it on; the receiving CN checks its source as any other.
    const RELAYED_BY_ION: bool = true;

    fn receive(&self, src: u16, msg: treenet::Message) {
        let c = self.counters();
        let len = msg.len();
        if len > MAX_PACKET_BYTES {
            return self.rx_lost(&c.too_big);
        }
        let mut head = [0u8; HEADER_BYTES];
        let head = &mut head[..len.min(HEADER_BYTES)];
        if msg.read_at(0, head).is_err() {
            return self.rx_lost(&c.malformed);
        }
        let decision = match self.topology.local() {
            Some(local) => zoidnet::receive(&self.plan(), local, src, head, len),
            None => Rx::Drop(DropReason::NotForUs),
        };
        if let Rx::Drop(reason) = decision {
            return self.rx_lost(self.counter_of(reason));
        }
        let mut buf = self.rx_buffer.lock();
        let packet = &mut buf[..len];
        if msg.read_at(0, packet).is_err() {
            return self.rx_lost(&c.malformed);
        }
        drop(msg);
        match self.dev.receive(packet) {
            Ok(()) => {
                c.rx_packets.fetch_add(1, Relaxed);
                c.rx_bytes.fetch_add(len as u64, Relaxed);
            }
            Err(e) if e == ENOMEM => self.rx_lost(&c.nomem),
            Err(e) if e == ENOBUFS => self.rx_lost(&c.rx_backlog_full),
            Err(e) if e == ENETDOWN => self.rx_lost(&c.rx_device_down),
            Err(_) => self.rx_lost(&c.malformed),
        }
    }

    fn peer_event(&self, _node: u16, _up: bool) {
        self.refresh_topology();
    }
}
