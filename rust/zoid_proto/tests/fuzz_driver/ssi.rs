// SPDX-License-Identifier: GPL-2.0

//! The `ssi_coherence` fuzz target: three nodes run the coherence state
//! machine over a network the input schedules.
//!
//! Input: a config byte (bits 0-1: the home node, mod 3; bit 7: hostile),
//! then operations, one byte each (`op = b & 3`, node `(b >> 2) % 3`,
//! bit 4: write):
//!
//! * 0: the node asks for a read or write access (with a token of its
//!   own, as the kernel draws one: the node and the number of accesses
//!   asked for so far);
//! * 1: the node releases its access (a write adds 1 to the counter);
//! * 2: the network delivers message number `b >> 2` (mod the number in
//!   flight);
//! * 3: hostile inputs only: the next 40 bytes are a wire header, decoded
//!   and handed to the node as if a peer sent it.
//!
//! A well-behaved run (no hostile messages) must keep the invariants of
//! `tests/ssi_coherence.rs` after every step (one owner, no writer beside
//! copies, every copy and grant current, acyclic probable owners) and,
//! once the input ends and the network drains, complete every access.  A
//! hostile run must only never panic, never send to the sender itself and
//! never take a `Copy`, an `Ownership` or a `Refused` without the token of
//! the access asked for.

use std::collections::VecDeque;

use zoid_proto::ssi::coherence::{
    Access, Action, Error, Msg, MsgKind, NodeId, NodeSet, Object, Request, RequestQueue, State,
};
use zoid_proto::ssi::wire::{Header, HEADER_LEN};

#[derive(Default)]
struct Set(Vec<NodeId>);

impl NodeSet for Set {
    fn insert(&mut self, node: NodeId) -> Result<(), Error> {
        if !self.0.contains(&node) {
            self.0.push(node);
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
        self.0.drain(..).for_each(f);
    }
}

#[derive(Default)]
struct Queue(VecDeque<Request>);

impl RequestQueue for Queue {
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

const NODES: usize = 3;

struct Net {
    objs: Vec<Object<Queue, Set>>,
    values: Vec<Option<u64>>,
    flight: Vec<(usize, Msg, Option<u64>)>,
    committed: u64,
    hostile: bool,
    /// Accesses asked for so far (the tokens' counter).
    asked: u64,
}

/// The token node `n` gives with the access it asks for as the `k`th of
/// the run.
fn token(n: usize, k: u64) -> u64 {
    (k << 8 | n as u64) ^ 0x5eed_0f70_4e45_0000
}

/// What a run did.
#[derive(Debug, Default)]
pub struct SsiStats {
    /// Accesses granted.
    pub grants: u64,
    /// Messages refused as unexpected.
    pub refused: u64,
    /// Accesses refused by a (hostile) `Refused`.
    pub refused_accesses: u64,
}

impl Net {
    fn apply(
        &mut self,
        node: usize,
        actions: Vec<Action>,
        carried: Option<u64>,
        st: &mut SsiStats,
    ) {
        for a in actions {
            match a {
                Action::Send { to, msg } => {
                    assert_ne!(to as usize, node, "node {node} sends {msg:?} to itself");
                    if (to as usize) < NODES {
                        let c = if msg.kind.carries_contents() {
                            self.values[node]
                        } else {
                            None
                        };
                        self.flight.push((to as usize, msg, c));
                    }
                }
                Action::Install => self.values[node] = carried,
                Action::DropContents => self.values[node] = None,
                Action::FirstTouch => self.values[node] = Some(0),
                Action::Refused(_) => {
                    // Only a decoded hostile `Refused` gets here: nobody
                    // else refuses.
                    assert!(self.hostile, "node {node}'s access refused");
                    st.refused_accesses += 1;
                }
                Action::Granted(_) => {
                    st.grants += 1;
                    if !self.hostile {
                        assert_eq!(self.values[node], Some(self.committed), "stale grant");
                    }
                }
            }
        }
    }

    fn check(&self) {
        if self.hostile {
            return;
        }
        let owners = self.objs.iter().filter(|o| o.state().is_owner()).count();
        let moving = self
            .flight
            .iter()
            .filter(|f| f.1.kind == MsgKind::Ownership)
            .count();
        assert_eq!(owners + moving, 1, "owners");
        let copies = self.objs.iter().filter(|o| o.state().has_copy()).count();
        let writing = self
            .objs
            .iter()
            .any(|o| o.state() == State::WriteOwner && o.held() == Some(Access::Write));
        assert!(!writing || copies == 1, "a writer beside copies");
        for (i, o) in self.objs.iter().enumerate() {
            if o.state().has_copy() {
                assert_eq!(self.values[i], Some(self.committed), "stale copy");
            }
            let mut at = i;
            for hops in 0.. {
                let next = self.objs[at].probable_owner() as usize;
                if next == at {
                    break;
                }
                assert!(hops <= NODES, "probable-owner cycle");
                at = next;
            }
        }
    }

    fn release(&mut self, n: usize, st: &mut SsiStats) {
        if self.objs[n].held().is_none() {
            return;
        }
        if self.objs[n].held() == Some(Access::Write) {
            let v = self.values[n].map(|v| v + 1);
            self.values[n] = v;
            if let Some(v) = v {
                self.committed = v;
            }
        }
        let mut acts = Vec::new();
        let _ = self.objs[n].release(&mut |a| acts.push(a));
        self.apply(n, acts, None, st);
    }

    fn deliver(&mut self, k: usize, st: &mut SsiStats) {
        let (to, msg, c) = self.flight.remove(k);
        let mut acts = Vec::new();
        let answer = self.objs[to].is_answer(&msg);
        match self.objs[to].on_message(msg, &mut |a| acts.push(a)) {
            Ok(()) => {
                assert!(
                    answer || !msg.kind.answers_request(),
                    "node {to} took {msg:?}, not the answer to its request"
                );
            }
            Err(e) => {
                assert!(self.hostile, "{msg:?} to node {to} refused: {e:?}");
                assert!(acts.is_empty());
                st.refused += 1;
            }
        }
        self.apply(to, acts, c, st);
    }
}

/// Runs one input.
pub fn ssi_coherence(input: &[u8]) -> SsiStats {
    let mut st = SsiStats::default();
    let Some((&cfg, mut ops)) = input.split_first() else {
        return st;
    };
    let home = NodeId::from(cfg & 3) % NODES as NodeId;
    let mut net = Net {
        objs: (0..NODES as NodeId)
            .map(|me| Object::new(me, home, Set::default(), Set::default(), Queue::default()))
            .collect(),
        values: vec![None; NODES],
        flight: Vec::new(),
        committed: 0,
        hostile: cfg & 0x80 != 0,
        asked: 0,
    };
    while let Some((&b, rest)) = ops.split_first() {
        ops = rest;
        let n = usize::from(b >> 2) % NODES;
        match b & 3 {
            0 => {
                let access = if b & 0x10 != 0 {
                    Access::Write
                } else {
                    Access::Read
                };
                let mut acts = Vec::new();
                net.asked += 1;
                let t = token(n, net.asked);
                let _ = net.objs[n].acquire(access, t, &mut |a| acts.push(a));
                net.apply(n, acts, None, &mut st);
            }
            1 => net.release(n, &mut st),
            3 if net.hostile && ops.len() >= HEADER_LEN => {
                let (h, rest) = ops.split_at(HEADER_LEN);
                ops = rest;
                if let Ok(h) = Header::decode(h, HEADER_LEN + h[23] as usize) {
                    let c = h
                        .msg
                        .kind
                        .carries_contents()
                        .then_some(u64::from(h.contents_len));
                    net.flight.push((n, h.msg, c));
                    let k = net.flight.len() - 1;
                    net.deliver(k, &mut st);
                }
            }
            _ => {
                if !net.flight.is_empty() {
                    let k = usize::from(b >> 2) % net.flight.len();
                    net.deliver(k, &mut st);
                }
            }
        }
        net.check();
    }
    if net.hostile {
        return st;
    }
    // Drain: every access asked for completes.
    for _ in 0..10_000 {
        (0..NODES).for_each(|n| net.release(n, &mut st));
        if net.flight.is_empty() {
            break;
        }
        net.deliver(0, &mut st);
        net.check();
    }
    (0..NODES).for_each(|n| net.release(n, &mut st));
    assert!(net.flight.is_empty(), "the network never drained");
    for (i, o) in net.objs.iter().enumerate() {
        assert!(o.wanted().is_none(), "node {i}'s access never came");
    }
    st
}
