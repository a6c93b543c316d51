// SPDX-License-Identifier: GPL-2.0

//! ssi containers at scale: zoid_proto's coherence state machine
//! (`ssi::coherence`, the code ssi.ko runs) on up to thousands of
//! simulated nodes sharing one object.
//!
//! Every node runs an [`Object`] and carries the object's contents (a
//! counter) as `ssi/container.rs` carries pages: `Copy` and `Ownership`
//! messages take the sender's value, `Install` keeps it, `DropContents`
//! forgets it.  The network delivers each message after a latency with a
//! seeded jitter, in order per pair of nodes (as treenet does) and in any
//! order across pairs.  Node 0 is the home (the ION).
//!
//! What it measures: messages per write as the copyset grows and as the
//! cluster grows, and how many nodes a request visits before it reaches
//! the owner (probable-owner chains).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

use zoid_proto::ssi::coherence::{
    Access, Action, Error, Msg, MsgKind, NodeId, NodeSet, Object, Request, RequestQueue,
};

use crate::rng::Rng;

/// The copyset, sorted.
#[derive(Clone, Debug, Default)]
struct Copies(Vec<NodeId>);

impl NodeSet for Copies {
    fn insert(&mut self, node: NodeId) -> Result<(), Error> {
        if let Err(at) = self.0.binary_search(&node) {
            self.0.insert(at, node);
        }
        Ok(())
    }
    fn remove(&mut self, node: NodeId) {
        self.0.retain(|&n| n != node);
    }
    fn drain_each(&mut self, f: &mut dyn FnMut(NodeId)) {
        for n in self.0.drain(..) {
            f(n);
        }
    }
}

/// Requests waiting for a node's turn as owner.
#[derive(Clone, Debug, Default)]
struct Waiting(VecDeque<Request>);

impl RequestQueue for Waiting {
    fn push_back(&mut self, r: Request) -> Result<(), Error> {
        self.0.push_back(r);
        Ok(())
    }
    fn front(&self) -> Option<Request> {
        self.0.front().copied()
    }
    fn pop_front(&mut self) -> Option<Request> {
        self.0.pop_front()
    }
}

struct Node {
    obj: Object<Waiting, Copies>,
    /// The contents, while the node has a valid copy.
    value: Option<u64>,
    /// Messages the pending local request took to reach the node that
    /// serves it (1: straight to the owner).
    hops: u32,
}

/// A message in flight, with the contents it carries.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct InFlight {
    from: NodeId,
    to: NodeId,
    msg: Msg,
    carried: Option<u64>,
}

/// Network parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Net {
    /// One-way latency of every message.
    pub latency_ns: u64,
    /// Up to this much is added to each message's latency (seeded).
    pub jitter_ns: u64,
    /// Seed of the jitter.
    pub seed: u64,
}

impl Default for Net {
    fn default() -> Self {
        Self {
            latency_ns: 10_000,
            jitter_ns: 5_000,
            seed: 1,
        }
    }
}

/// What a run counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Messages sent, by kind (`MsgKind as usize - 1`).
    pub by_kind: [u64; 6],
    /// Accesses completed.
    pub accesses: u64,
    /// Messages each remote request took to reach the node that served
    /// it, summed (1: straight to the owner).
    pub hops_sum: u64,
    /// Remote requests (granted after at least one message).
    pub remote: u64,
    /// The most messages a request took to reach the node that served it.
    pub hops_max: u32,
}

impl Counts {
    /// Every message sent.
    pub fn messages(&self) -> u64 {
        self.by_kind.iter().sum()
    }
    /// Messages a remote request takes on average to reach the node that
    /// serves it.
    pub fn hops_mean(&self) -> f64 {
        if self.remote == 0 {
            0.0
        } else {
            self.hops_sum as f64 / self.remote as f64
        }
    }
}

/// N nodes sharing one object.
pub struct Cluster {
    nodes: Vec<Node>,
    queue: BinaryHeap<Reverse<(u64, u64, InFlight)>>,
    /// Last delivery time per (from, to): keeps each pair in order.
    last: BTreeMap<(NodeId, NodeId), u64>,
    now: u64,
    seq: u64,
    net: Net,
    rng: Rng,
    /// Writes completed (the counter must end equal to it).
    pub writes: u64,
    /// What was counted since the last [`Cluster::take_counts`].
    counts: Counts,
}

impl Cluster {
    /// `n` nodes (node 0 the home), the object not created yet.
    pub fn new(n: u32, net: Net) -> Self {
        assert!(n >= 1);
        Self {
            nodes: (0..n)
                .map(|me| Node {
                    obj: Object::new(me, 0, Copies::default(), Waiting::default()),
                    value: None,
                    hops: 0,
                })
                .collect(),
            queue: BinaryHeap::new(),
            last: BTreeMap::new(),
            now: 0,
            seq: 0,
            rng: Rng::new(net.seed),
            net,
            writes: 0,
            counts: Counts::default(),
        }
    }

    /// Simulated time now (ns).
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Returns the counts so far and starts counting again.
    pub fn take_counts(&mut self) -> Counts {
        core::mem::take(&mut self.counts)
    }

    /// Node `node` starts an access: a read, or a write that adds 1.  It
    /// completes (and is released) when granted.  Panics if the node
    /// already has one going (the workloads never do that).
    pub fn start(&mut self, node: NodeId, access: Access) {
        let mut actions = Vec::new();
        self.nodes[node as usize].hops = 0;
        self.nodes[node as usize]
            .obj
            .acquire(access, &mut |a| actions.push(a))
            .expect("one access per node at a time");
        self.apply(node, actions, None);
    }

    /// Delivers messages until none is in flight.
    pub fn run(&mut self) {
        while let Some(Reverse((t, _, m))) = self.queue.pop() {
            self.now = t;
            let mut actions = Vec::new();
            self.nodes[m.to as usize]
                .obj
                .on_message(m.msg, &mut |a| actions.push(a))
                .expect("a correct peer's message");
            self.apply(m.to, actions, m.carried);
        }
    }

    /// The counter as node `node` has it (`None`: no valid copy).
    pub fn value_at(&self, node: NodeId) -> Option<u64> {
        self.nodes[node as usize].value
    }

    /// The node that owns the object.
    pub fn owner(&self) -> Option<NodeId> {
        (0..self.nodes.len() as NodeId).find(|&n| self.nodes[n as usize].obj.state().is_owner())
    }

    fn send(&mut self, from: NodeId, to: NodeId, msg: Msg) {
        self.counts.by_kind[msg.kind as usize - 1] += 1;
        let carried = if msg.kind.carries_contents() {
            self.nodes[from as usize].value
        } else {
            None
        };
        if matches!(msg.kind, MsgKind::ReadReq | MsgKind::WriteReq) {
            // Sent, or forwarded along the probable-owner chain.
            self.nodes[msg.node as usize].hops += 1;
        }
        let jitter = if self.net.jitter_ns > 0 {
            self.rng.below(self.net.jitter_ns + 1)
        } else {
            0
        };
        let last = self.last.entry((from, to)).or_insert(0);
        let at = (self.now + self.net.latency_ns + jitter).max(*last);
        *last = at;
        self.seq += 1;
        self.queue.push(Reverse((
            at,
            self.seq,
            InFlight {
                from,
                to,
                msg,
                carried,
            },
        )));
    }

    fn apply(&mut self, node: NodeId, actions: Vec<Action>, carried: Option<u64>) {
        for a in actions {
            match a {
                Action::Send { to, msg } => self.send(node, to, msg),
                Action::Install => self.nodes[node as usize].value = carried,
                Action::DropContents => self.nodes[node as usize].value = None,
                Action::FirstTouch => self.nodes[node as usize].value = Some(0),
                Action::Granted(access) => self.granted(node, access),
            }
        }
    }

    fn granted(&mut self, node: NodeId, access: Access) {
        let n = &mut self.nodes[node as usize];
        let value = n.value.expect("a granted access has the contents");
        if access == Access::Write {
            n.value = Some(value + 1);
            self.writes += 1;
        }
        self.counts.accesses += 1;
        let hops = n.hops;
        n.hops = 0;
        let mut actions = Vec::new();
        n.obj
            .release(&mut |a| actions.push(a))
            .expect("the access is held");
        if hops > 0 {
            self.counts.remote += 1;
            self.counts.hops_sum += u64::from(hops);
            self.counts.hops_max = self.counts.hops_max.max(hops);
        }
        self.apply(node, actions, None);
    }
}

/// Messages of one write when `copies` nodes hold read copies, in a
/// cluster of `nodes`: the readers read first (node 1 owns the object
/// after a first write), then node `nodes - 1` writes.
pub fn write_cost(nodes: u32, copies: u32, net: &Net) -> Counts {
    assert!(
        copies + 3 <= nodes,
        "readers are nodes 2..; the writer, the last node, is not one"
    );
    let mut c = Cluster::new(nodes, net.clone());
    c.start(1, Access::Write);
    c.run();
    for r in 0..copies {
        c.start(2 + r, Access::Read);
    }
    c.run();
    c.take_counts();
    c.start(nodes - 1, Access::Write);
    c.run();
    let counts = c.take_counts();
    assert_eq!(c.value_at(nodes - 1), Some(2));
    counts
}

/// `writes` writes one after the other by nodes drawn at random: the
/// probable-owner chains they follow.
pub fn random_writers(nodes: u32, writes: u32, net: &Net) -> Counts {
    let mut c = Cluster::new(nodes, net.clone());
    let mut rng = Rng::new(net.seed ^ 0x5353);
    for _ in 0..writes {
        let w = rng.below(u64::from(nodes)) as NodeId;
        c.start(w, Access::Write);
        c.run();
    }
    assert_eq!(c.writes, u64::from(writes));
    let owner = c.owner().expect("an owner");
    assert_eq!(c.value_at(owner), Some(u64::from(writes)));
    c.take_counts()
}

/// Every node writes once, all at the same time: the requests queue up
/// along the chains.  Returns the counts and when the last write ended.
pub fn everyone_writes(nodes: u32, net: &Net) -> (Counts, u64) {
    let mut c = Cluster::new(nodes, net.clone());
    for n in 0..nodes {
        c.start(n, Access::Write);
    }
    c.run();
    assert_eq!(c.writes, u64::from(nodes));
    let owner = c.owner().expect("an owner");
    assert_eq!(c.value_at(owner), Some(u64::from(nodes)));
    (c.take_counts(), c.now())
}
