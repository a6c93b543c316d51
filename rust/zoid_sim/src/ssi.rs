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

use zoid_proto::ssi::control;
use zoid_proto::ssi::rebuild::{Holding, Outcome, Tally};

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
    fn contains(&self, node: NodeId) -> bool {
        self.0.contains(&node)
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    fn for_each(&self, f: &mut dyn FnMut(NodeId)) {
        self.0.iter().for_each(|&n| f(n));
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
    /// Messages sent, by kind (`MsgKind as usize - 1`; the last,
    /// `Refused`, is never sent here: no node has a budget of objects).
    pub by_kind: [u64; 7],
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
    /// Nodes that died ([`Cluster::rebuild_without`]).
    dead: Vec<NodeId>,
    /// Request tokens given so far (ssi.ko draws random ones; distinct
    /// ones do here).
    tokens: u64,
}

impl Cluster {
    /// `n` nodes (node 0 the home), the object not created yet.
    pub fn new(n: u32, net: Net) -> Self {
        assert!(n >= 1);
        Self {
            nodes: (0..n)
                .map(|me| Node {
                    obj: Object::new(
                        me,
                        0,
                        Copies::default(),
                        Copies::default(),
                        Waiting::default(),
                    ),
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
            dead: Vec::new(),
            tokens: 0,
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
        let token = self.next_token();
        self.nodes[node as usize].hops = 0;
        self.nodes[node as usize]
            .obj
            .acquire(access, token, &mut |a| actions.push(a))
            .expect("one access per node at a time");
        self.apply(node, actions, None);
    }

    /// A token for a new request.
    fn next_token(&mut self) -> u64 {
        self.tokens += 1;
        self.tokens
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
        assert!(
            !self.dead.contains(&to) && !self.dead.contains(&from),
            "after a rebuild, nobody talks to the dead node"
        );
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
                Action::Refused(access) => {
                    unreachable!("node {node}'s {access:?} refused: nobody refuses here")
                }
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

impl Cluster {
    /// Node `dead` dies while nothing is in flight, and the survivors
    /// rebuild as ssi.ko does (`ssi/membership.rs`): each reports what it
    /// holds ([`Object::holding`]), the coordinator tallies the reports
    /// ([`Tally`]) and every survivor resets to the outcome
    /// ([`Object::reset`]).  Returns the outcome and the report entries
    /// (nodes that hold something, and the home, which knows every
    /// object).  The dead node takes no further part.
    pub fn rebuild_without(&mut self, dead: NodeId) -> (Outcome, u64) {
        assert!(
            self.queue.is_empty(),
            "a rebuild starts with nothing in flight"
        );
        let mut tally = Tally::new();
        let mut entries = 0;
        for (n, node) in self.nodes.iter().enumerate() {
            let n = n as NodeId;
            if n == dead {
                continue;
            }
            let (holding, _) = node.obj.holding(&[]);
            if holding != Holding::Nothing || n == 0 {
                entries += 1;
            }
            tally.add(n, holding);
        }
        assert!(!tally.conflict(), "one owner at most");
        let outcome = tally.outcome();
        for n in 0..self.nodes.len() as NodeId {
            if n == dead {
                continue;
            }
            let mut actions = Vec::new();
            let token = self.next_token();
            self.nodes[n as usize]
                .obj
                .reset(outcome, 0, token, &mut |a| actions.push(a))
                .expect("no access is held");
            self.apply(n, actions, None);
        }
        self.dead.push(dead);
        (outcome, entries)
    }
}

/// What one rebuild cost: node 1 of `nodes` dies while the pset shares
/// `objects` objects (see [`reconfigure`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rebuild {
    /// `Freeze` messages (coordinator to every other survivor).
    pub freezes: u64,
    /// `Mark` messages (every survivor to every other survivor).
    pub marks: u64,
    /// `Report` messages and their entries.
    pub reports: u64,
    /// Entries of all reports.
    pub report_entries: u64,
    /// `Resume` messages (one entry per object each).
    pub resumes: u64,
    /// Bytes that cross the ION's port, in and out (CN-to-CN marks cross
    /// it twice: a pset is a tree rooted at the ION).
    pub ion_bytes_in: u64,
    /// See `ion_bytes_in`.
    pub ion_bytes_out: u64,
    /// Objects whose only holder was the dead node.
    pub lost: u64,
    /// Objects that survived, each read back by a survivor afterwards.
    pub kept: u64,
}

impl Rebuild {
    /// Every membership message of the rebuild.
    pub fn messages(&self) -> u64 {
        self.freezes + self.marks + self.reports + self.resumes
    }

    /// A lower bound of the rebuild's time (ms): four message latencies
    /// (freeze, marks, reports, resume) plus the busier direction of the
    /// ION's port at `ion_bw` bytes/s (what every message crosses).
    pub fn floor_ms(&self, latency_ns: u64, ion_bw: u64) -> f64 {
        let bytes = self.ion_bytes_in.max(self.ion_bytes_out) as f64;
        (4 * latency_ns) as f64 / 1e6 + bytes / ion_bw as f64 * 1e3
    }
}

/// Bytes a membership message of `entries` entries of `entry_len` takes on
/// the wire: treenet's frames (1 456 payload bytes, 44 of headers each).
fn wire_bytes(entries: u64, entry_len: usize) -> u64 {
    let payload = control::HEADER_LEN as u64 + entries * entry_len as u64;
    let frames = payload.div_ceil(1456).max(1);
    payload + frames * 44
}

/// `nodes` nodes share `objects` objects (each written once by a node
/// drawn at random; every other one also read by another random node),
/// then node 1 dies and the survivors rebuild.  Checks that exactly the
/// objects only node 1 held are lost, and that every other one reads back
/// its value at a random survivor; counts the rebuild's messages.
pub fn reconfigure(nodes: u32, objects: u32, net: &Net) -> Rebuild {
    assert!(nodes >= 3);
    let dead: NodeId = 1;
    let mut rng = Rng::new(net.seed ^ 0x4e42);
    let mut r = Rebuild::default();
    for i in 0..objects {
        let mut c = Cluster::new(nodes, net.clone());
        let writer = rng.below(u64::from(nodes)) as NodeId;
        c.start(writer, Access::Write);
        c.run();
        let mut holders = vec![writer];
        if i % 2 == 0 {
            let reader = rng.below(u64::from(nodes)) as NodeId;
            c.start(reader, Access::Read);
            c.run();
            holders.push(reader);
        }
        let only_dead = holders.iter().all(|&h| h == dead);
        let (outcome, entries) = c.rebuild_without(dead);
        r.report_entries += entries;
        if only_dead {
            assert_eq!(outcome, Outcome::Lost, "object {i}: its only holder died");
            r.lost += 1;
            continue;
        }
        assert_ne!(outcome, Outcome::Lost, "object {i}: a survivor held it");
        let mut reader = rng.below(u64::from(nodes)) as NodeId;
        if reader == dead {
            reader = 0;
        }
        c.start(reader, Access::Read);
        c.run();
        assert_eq!(
            c.value_at(reader),
            Some(1),
            "object {i} read back after the rebuild"
        );
        r.kept += 1;
    }
    let survivors = u64::from(nodes) - 1;
    let cns = survivors - 1;
    r.freezes = cns;
    r.marks = survivors * (survivors - 1);
    r.reports = cns;
    r.resumes = cns;
    // Report entries per node are spread evenly (the ION's own stay local).
    let mark = wire_bytes(0, 0);
    let cn_to_cn_marks = cns * (cns - 1);
    let ion_marks = cns;
    let per_cn_entries = r.report_entries.saturating_sub(u64::from(objects)) / cns.max(1);
    r.ion_bytes_out = cns * wire_bytes(survivors, 4)
        + cns * wire_bytes(u64::from(objects), control::RESUME_ENTRY_LEN)
        + (cn_to_cn_marks + ion_marks) * mark;
    r.ion_bytes_in = cns * wire_bytes(per_cn_entries, control::REPORT_ENTRY_LEN)
        + (cn_to_cn_marks + ion_marks) * mark;
    r
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
