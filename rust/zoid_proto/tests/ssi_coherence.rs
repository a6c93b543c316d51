// SPDX-License-Identifier: GPL-2.0

//! The ssi coherence state machine checked against its invariants over
//! interleavings of simulated nodes: every interleaving of small scenarios
//! (exhaustive search of the reachable states) and random schedules of
//! larger ones.
//!
//! The model: each node runs a script of accesses (read, or write = add
//! one to a counter held in the object); the network is reliable but
//! delivers the messages in flight in any order.  Checked in every state:
//!
//! * at most one writer: one node owns the object (counting an ownership
//!   in flight), and while it may write nobody else has a copy;
//! * no stale read: every valid copy, and every granted access, sees the
//!   value of the last completed write, and keeps its contents (an
//!   invalidation waits for the read in progress);
//! * probable-owner chains are acyclic: from any node they end at a node
//!   that points to itself;
//! * every request completes: no reachable state is stuck, and from every
//!   reachable state the end (all scripts done, nothing in flight, the
//!   counter equal to the number of writes) is still reachable.
//!
//! Every access is asked for with its own token (derived from the node,
//! the access and whether a crash happened: unknown to the hostile node
//! below, which no request ever passes).
//!
//! With a hostile node on, one more node (not in the scripts, never asked
//! for anything) sends forged messages at any moment: `InvAck`,
//! `Invalidate`, `Copy` and `Ownership`, in its own name, of any version,
//! to any node.  Every one the receiver refuses must be `Unexpected` (or
//! `BadToken`, below) and change nothing, and the invariants above must
//! hold for the honest nodes whatever it accepts.  A `Copy` to a node
//! waiting for a read copy and an `Ownership` to a node waiting for
//! ownership carry a token the forger can know or guess: 0, 2^64-1, the
//! waiting node's token with one bit flipped, the token of that node's
//! previous access (a replay) or of another node's current one (which a
//! forger on that request's path would know); every one must be refused
//! as `BadToken`, and no forged `Copy` or `Ownership` is ever taken.  With
//! the set limited to the honest nodes, every message between members
//! must pass the member check too.
//!
//! With refusals on, a node that does not know the object yet (only the
//! home is ever asked while it does not) may refuse any request that
//! reaches it instead of handling it, as a node past its budget of objects
//! for the sender does (`ssi::budget`): it creates nothing and answers the
//! requester `Refused` with the request's token.  Checked besides: the
//! refused access ends with nothing held or asked for, the script goes on,
//! and every write that was not refused lands.  The hostile node forges
//! `Refused` too, with tokens it cannot know, and none is ever taken.
//! With refusals on the path besides, any node that would only pass a
//! request on may refuse it instead (a node the request passes refusing
//! in the owner's place, which ssi.ko never does): the requester must
//! cope with that too.
//!
//! With crashes on, one node (not the home) may die in any state where no
//! other node holds an access; the survivors rebuild at once
//! (`ssi::rebuild`: holdings counting the messages in flight to them, the
//! coordinator's tally, reset) and go on.  Checked besides: the object is
//! lost only if its only contents died with the node, and otherwise keeps
//! every completed write.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};

thread_local! {
    /// When non-zero, the state of a generator that makes storage fail
    /// one time in four.
    static FAILING: Cell<u64> = const { Cell::new(0) };
    /// Forged messages the honest nodes refused, and accepted.
    static FORGED_REFUSED: Cell<u64> = const { Cell::new(0) };
    static FORGED_ACCEPTED: Cell<u64> = const { Cell::new(0) };
    /// Forged `Copy` and `Ownership` refused for their token alone (to a
    /// node waiting for one).
    static FORGED_BAD_TOKEN: Cell<u64> = const { Cell::new(0) };
    /// Accesses refused (a node past its budget), reads and writes.
    static REFUSED: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// Whether this allocation fails.
fn alloc_fails() -> bool {
    FAILING.with(|f| {
        let mut x = f.get();
        if x == 0 {
            return false;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        f.set(x);
        x % 4 == 0
    })
}

use zoid_proto::ssi::coherence::{
    Access, Action, Error, Msg, MsgKind, NodeId, NodeSet, Object, Request, RequestQueue, State,
};
use zoid_proto::ssi::members::Members;
use zoid_proto::ssi::rebuild::{Holding, Outcome, Source, Tally};

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Set(Vec<NodeId>);

impl NodeSet for Set {
    fn insert(&mut self, node: NodeId) -> Result<(), Error> {
        if alloc_fails() {
            return Err(Error::NoMemory);
        }
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

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Queue(VecDeque<Request>);

impl RequestQueue for Queue {
    fn push_back(&mut self, r: Request) -> Result<(), Error> {
        if alloc_fails() {
            return Err(Error::NoMemory);
        }
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

type Obj = Object<Queue, Set>;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Node {
    obj: Obj,
    /// The local contents (`None`: no copy).
    value: Option<u64>,
    /// Next access of the script.
    pc: usize,
    /// Crashed: takes no step, messages to it are lost.
    dead: bool,
    /// Its script's current access is asked for and not granted yet (the
    /// caller waits for the grant, as the kernel's waiter does).
    asking: bool,
    /// The token given with its current access (0 before the first), and
    /// with its previous one.
    token: u64,
    last_token: u64,
    /// Whether it knows the object (has an entry, in ssi.ko's terms): it
    /// asked for it, or handled a request for it.  Only a node that does
    /// not may refuse a request.
    known: bool,
}

/// The token node `node` gives with its access number `pc`, asked for
/// again (`again`) after a crash: distinct for every (node, pc, again),
/// never 0 or 2^64-1.
fn token_for(node: usize, pc: usize, again: bool) -> u64 {
    // splitmix64's finaliser, a bijection, of distinct inputs.
    let mut z = ((node as u64) << 32 | (pc as u64) << 1 | u64::from(again))
        .wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A message in flight, with the contents it carries.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Flight {
    to: NodeId,
    msg: Msg,
    contents: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct World {
    nodes: Vec<Node>,
    /// Sorted: the network is a multiset.
    net: Vec<Flight>,
    /// Value of the last completed write.
    committed: u64,
    /// Writes completed (all nodes, the dead one's before it died).
    writes_done: u64,
    /// The object was lost in a crash (and started again from zero).
    lost: bool,
    home: NodeId,
    /// The hostile node, if any: what is sent to it is dropped.
    hostile: Option<NodeId>,
    /// Write accesses refused (they write nothing).
    refused_writes: u64,
    /// The set is limited to these nodes (and the home).
    members: Option<Vec<NodeId>>,
}

#[derive(Clone, Copy, Debug)]
enum Step {
    Acquire(usize),
    Release(usize),
    Deliver(usize),
    /// Serve what an earlier `NoMemory` left queued.
    Poll(usize),
    /// The node dies; the others rebuild.
    Crash(usize),
    /// The hostile node sends a forged message (kind, version, token)
    /// straight to a node.
    Forge(usize, MsgKind, u64, u64),
    /// The node a request in flight reaches does not know the object and
    /// refuses it: the requester is answered `Refused`.
    Refuse(usize),
}

/// The kinds the hostile node forges, and the versions it gives them.
const FORGED_KINDS: [MsgKind; 5] = [
    MsgKind::InvAck,
    MsgKind::Invalidate,
    MsgKind::Copy,
    MsgKind::Ownership,
    MsgKind::Refused,
];

/// Whether node `n` would only pass request `msg` on to another node.
fn would_forward(n: &Node, msg: &Msg) -> bool {
    // Without touching the storage failures' generator.
    let failing = FAILING.with(|f| f.replace(0));
    let mut o = n.obj.clone();
    let mut acts = Vec::new();
    let r = o.on_message(*msg, &mut |a| acts.push(a));
    FAILING.with(|f| f.set(failing));
    r.is_ok() && matches!(acts[..], [Action::Send { msg: m, .. }] if m == *msg)
}

/// Whether node `n` waits for a message of `kind` (the only time its
/// token matters).
fn waits_for(n: &Node, kind: MsgKind) -> bool {
    match kind {
        MsgKind::Copy => n.obj.state() == State::WaitRead,
        MsgKind::Ownership => n.obj.state() == State::WaitWrite,
        MsgKind::Refused => matches!(n.obj.state(), State::WaitRead | State::WaitWrite),
        _ => false,
    }
}
const FORGED_VERSIONS: [u64; 5] = [0, 1, 2, u64::MAX - 1, u64::MAX];

/// The contents a forged `Copy` or `Ownership` carries (no write makes
/// them).
const FORGED_CONTENTS: u64 = 0xbad;

/// The tokens the hostile node puts in a `Copy` or an `Ownership` to node
/// `i`, which waits for it: guesses, a near miss, the token of `i`'s
/// previous access and those of the other nodes' accesses.  Never `i`'s.
fn forged_tokens(w: &World, i: usize) -> Vec<u64> {
    let n = &w.nodes[i];
    let mut t = vec![0, u64::MAX, n.token ^ 1];
    if n.last_token != 0 {
        t.push(n.last_token);
    }
    for (j, o) in w.nodes.iter().enumerate() {
        if j != i && o.token != 0 {
            t.push(o.token);
        }
    }
    t.sort_unstable();
    t.dedup();
    assert!(!t.contains(&n.token), "node {i}'s token is not unique");
    t
}

struct Model {
    scripts: Vec<Vec<Access>>,
    /// Whether a node may crash (once per run).
    crashes: bool,
    /// Whether a hostile node forges messages.
    hostile: bool,
    /// Whether the set is limited to the honest nodes.
    limited: bool,
    /// Whether a node that does not know the object may refuse requests.
    refusals: bool,
    /// Whether a node that would pass a request on may refuse it instead
    /// (a node on the request's path refusing in the owner's place: ssi.ko
    /// never does, but the requester must cope).
    refusals_on_path: bool,
}

impl Model {
    fn new(scripts: Vec<Vec<Access>>) -> Self {
        Self {
            scripts,
            crashes: false,
            hostile: false,
            limited: false,
            refusals: false,
            refusals_on_path: false,
        }
    }

    fn with_crashes(scripts: Vec<Vec<Access>>) -> Self {
        Self {
            scripts,
            crashes: true,
            hostile: false,
            limited: false,
            refusals: false,
            refusals_on_path: false,
        }
    }

    fn with_hostile_node(scripts: Vec<Vec<Access>>) -> Self {
        Self {
            scripts,
            crashes: false,
            hostile: true,
            limited: false,
            refusals: false,
            refusals_on_path: false,
        }
    }

    /// A hostile node outside the set, which is limited to the others.
    fn with_hostile_outsider(scripts: Vec<Vec<Access>>) -> Self {
        Self {
            scripts,
            crashes: false,
            hostile: true,
            limited: true,
            refusals: false,
            refusals_on_path: false,
        }
    }

    /// The same, with refusals on.
    fn refusing(mut self) -> Self {
        self.refusals = true;
        self
    }

    /// The same, with refusals on the request's path too.
    fn refusing_on_path(mut self) -> Self {
        self.refusals = true;
        self.refusals_on_path = true;
        self
    }

    fn writes(&self) -> u64 {
        self.scripts
            .iter()
            .flatten()
            .filter(|a| **a == Access::Write)
            .count() as u64
    }

    fn initial(&self, home: NodeId) -> World {
        let nodes = (0..self.scripts.len() as NodeId)
            .map(|me| Node {
                obj: Obj::new(me, home, Set::default(), Set::default(), Queue::default()),
                value: None,
                pc: 0,
                dead: false,
                asking: false,
                token: 0,
                last_token: 0,
                known: false,
            })
            .collect();
        World {
            nodes,
            net: Vec::new(),
            committed: 0,
            writes_done: 0,
            lost: false,
            home,
            hostile: self.hostile.then_some(self.scripts.len() as NodeId),
            refused_writes: 0,
            members: self
                .limited
                .then(|| (0..self.scripts.len() as NodeId).collect()),
        }
    }

    fn steps(&self, w: &World) -> Vec<Step> {
        let mut v = Vec::new();
        for (i, n) in w.nodes.iter().enumerate() {
            if n.dead {
                continue;
            }
            if n.obj.held().is_some() {
                v.push(Step::Release(i));
            } else if !n.asking && n.pc < self.scripts[i].len() {
                v.push(Step::Acquire(i));
            }
        }
        if self.crashes && w.nodes.iter().all(|n| !n.dead) {
            for (i, n) in w.nodes.iter().enumerate() {
                let others_hold = w
                    .nodes
                    .iter()
                    .enumerate()
                    .any(|(j, o)| j != i && o.obj.held().is_some());
                // The survivors freeze once their accesses end.
                if i as NodeId != w.home && !others_hold && !n.dead {
                    v.push(Step::Crash(i));
                }
            }
        }
        for (i, n) in w.nodes.iter().enumerate() {
            if !n.dead && n.obj.has_waiting() && FAILING.with(|f| f.get() != 0) {
                v.push(Step::Poll(i));
            }
        }
        for i in 0..w.net.len() {
            // Identical messages are one choice.
            if i == 0 || w.net[i] != w.net[i - 1] {
                v.push(Step::Deliver(i));
                let f = &w.net[i];
                let to = &w.nodes[f.to as usize];
                let may_refuse = !to.known || (self.refusals_on_path && would_forward(to, &f.msg));
                if self.refusals && f.msg.kind.is_request() && may_refuse && !to.dead {
                    v.push(Step::Refuse(i));
                }
            }
        }
        if self.hostile {
            for (i, n) in w.nodes.iter().enumerate() {
                if n.dead {
                    continue;
                }
                for kind in FORGED_KINDS {
                    let waited = waits_for(n, kind);
                    // The token matters only to a node waiting for it.
                    let tokens = if waited { forged_tokens(w, i) } else { vec![0] };
                    for version in FORGED_VERSIONS {
                        for &token in &tokens {
                            v.push(Step::Forge(i, kind, version, token));
                        }
                    }
                }
            }
        }
        v
    }

    /// Applies `step`; `Err` describes a broken invariant.
    fn apply(&self, w: &mut World, step: Step) -> Result<(), String> {
        let mut actions = Vec::new();
        let (node, carried) = match step {
            Step::Acquire(i) => {
                let n = &mut w.nodes[i];
                let access = self.scripts[i][n.pc];
                n.asking = true;
                n.known = true;
                n.last_token = n.token;
                n.token = token_for(i, n.pc, false);
                n.obj
                    .acquire(access, n.token, &mut |a| actions.push(a))
                    .map_err(|e| format!("node {i}: acquire {access:?}: {e:?}"))?;
                (i, None)
            }
            Step::Release(i) => {
                let n = &mut w.nodes[i];
                if n.obj.held() == Some(Access::Write) {
                    let v = n.value.ok_or("writer without contents")? + 1;
                    n.value = Some(v);
                    w.committed = v;
                    w.writes_done += 1;
                }
                n.pc += 1;
                match n.obj.release(&mut |a| actions.push(a)) {
                    Ok(()) | Err(Error::NoMemory) => {}
                    Err(e) => return Err(format!("node {i}: release: {e:?}")),
                }
                (i, None)
            }
            Step::Deliver(k) => {
                let f = w.net.remove(k);
                let i = f.to as usize;
                if w.nodes[i].dead {
                    return check(w);
                }
                let before = w.nodes[i].obj.clone();
                // A request makes its receiver know the object (ssi.ko
                // creates the entry before the state machine runs, and
                // keeps it if the event must be given again).
                w.nodes[i].known |= f.msg.kind.is_request();
                match w.nodes[i].obj.on_message(f.msg, &mut |a| actions.push(a)) {
                    Err(Error::NoMemory) => {
                        // Refused whole: given again later.
                        if w.nodes[i].obj != before || !actions.is_empty() {
                            return Err(format!("node {i}: NoMemory changed the state"));
                        }
                        w.net.push(f);
                        w.net.sort();
                        return Ok(());
                    }
                    r => r.map_err(|e| format!("node {i}: {:?}: {e:?}", f.msg))?,
                }
                (i, f.contents)
            }
            Step::Poll(i) => {
                match w.nodes[i].obj.poll(&mut |a| actions.push(a)) {
                    Ok(()) | Err(Error::NoMemory) => {}
                    Err(e) => return Err(format!("node {i}: poll: {e:?}")),
                }
                (i, None)
            }
            Step::Crash(x) => return self.crash(w, x),
            Step::Forge(i, kind, version, token) => {
                let msg = Msg {
                    kind,
                    node: w.hostile.ok_or("a forgery without a hostile node")?,
                    version,
                    token,
                };
                let waited = waits_for(&w.nodes[i], kind);
                let before = w.nodes[i].obj.clone();
                let members = w.members.as_deref().map(|l| Members::new(Some(l), w.home));
                if members.is_some_and(|m| !m.admits(msg.node, &msg)) {
                    FORGED_REFUSED.with(|c| c.set(c.get() + 1));
                    return Ok(());
                }
                match w.nodes[i].obj.on_message(msg, &mut |a| actions.push(a)) {
                    // The forger never knows the token of a request.
                    Ok(()) if kind.answers_request() => {
                        return Err(format!("node {i}: took forged {msg:?}"));
                    }
                    Ok(()) => FORGED_ACCEPTED.with(|c| c.set(c.get() + 1)),
                    Err(e @ (Error::Unexpected | Error::NoMemory | Error::BadToken)) => {
                        if w.nodes[i].obj != before || !actions.is_empty() {
                            return Err(format!("node {i}: refused {msg:?} changed the state"));
                        }
                        // A wrong token is what gives away a forgery that
                        // comes when it is waited for (with a version that
                        // can be), and only then.
                        let bad_token = waited && version != u64::MAX;
                        if (e == Error::BadToken) != bad_token {
                            return Err(format!("node {i}: forged {msg:?} refused as {e:?}"));
                        }
                        if e == Error::BadToken {
                            FORGED_BAD_TOKEN.with(|c| c.set(c.get() + 1));
                        }
                        FORGED_REFUSED.with(|c| c.set(c.get() + 1));
                        return Ok(());
                    }
                    Err(e) => return Err(format!("node {i}: forged {msg:?}: {e:?}")),
                }
                let carried = kind.carries_contents().then_some(FORGED_CONTENTS);
                (i, carried)
            }
            Step::Refuse(k) => {
                let f = w.net.remove(k);
                let by = f.to;
                let to = &w.nodes[by as usize];
                let may_refuse = !to.known || (self.refusals_on_path && would_forward(to, &f.msg));
                if !f.msg.kind.is_request() || !may_refuse || f.msg.node == by {
                    return Err(format!("node {by} refuses {f:?}"));
                }
                // Nothing created or changed: the refusing node still
                // does not know the object, or still points where it did.
                let refusal = Msg {
                    kind: MsgKind::Refused,
                    node: by,
                    version: 0,
                    token: f.msg.token,
                };
                if let Some(l) = &w.members {
                    if !Members::new(Some(l), w.home).admits(by, &refusal) {
                        return Err(format!("member {by}'s {refusal:?} refused"));
                    }
                }
                w.net.push(Flight {
                    to: f.msg.node,
                    msg: refusal,
                    contents: None,
                });
                w.net.sort();
                return check(w);
            }
        };
        perform(w, node, actions, carried)?;
        w.net.sort();
        check(w)
    }

    /// Node `x` dies; the others freeze, report, and reset to the
    /// coordinator's decision.
    fn crash(&self, w: &mut World, x: usize) -> Result<(), String> {
        w.nodes[x].dead = true;
        let net = std::mem::take(&mut w.net);
        // What died with `x`: its ownership (with contents), or ownership
        // in flight to it.
        let xo = &w.nodes[x].obj;
        let only_at_x = (xo.state().is_owner() && xo.state() != State::InvOwner)
            || net
                .iter()
                .any(|f| f.to as usize == x && f.msg.kind == MsgKind::Ownership);
        let mut tally = Tally::new();
        let mut sources = Vec::new();
        for (i, n) in w.nodes.iter().enumerate() {
            if n.dead {
                sources.push(None);
                continue;
            }
            let kept: Vec<&Flight> = net.iter().filter(|f| f.to as usize == i).collect();
            let msgs: Vec<Msg> = kept.iter().map(|f| f.msg).collect();
            let (holding, source) = n.obj.holding(&msgs);
            tally.add(i as NodeId, holding);
            let contents = match source {
                Source::Local => n.value,
                Source::Kept(k) => kept[k].contents,
            };
            if holding != Holding::Nothing
                && !matches!(holding, Holding::Owner { created: false, .. })
            {
                // Whatever a survivor holds is the last written value.
                if contents != Some(w.committed) {
                    return Err(format!(
                        "node {i} reports {holding:?} with {contents:?}, last write {}",
                        w.committed
                    ));
                }
            }
            sources.push(Some(contents));
        }
        if tally.conflict() {
            return Err("two owners reported".into());
        }
        let outcome = tally.outcome();
        match outcome {
            Outcome::Lost if !only_at_x => {
                return Err(format!("lost although node {x} did not hold it alone"));
            }
            Outcome::Lost => {
                w.lost = true;
                w.committed = 0;
            }
            Outcome::Owner { .. } => {}
        }
        for (i, contents) in sources.into_iter().enumerate() {
            if w.nodes[i].dead {
                continue;
            }
            let mut actions = Vec::new();
            if let Outcome::Owner { owner, .. } = outcome {
                if owner as usize == i {
                    w.nodes[i].value = contents.flatten();
                }
            }
            let n = &mut w.nodes[i];
            if n.obj.wanted().is_some() {
                // Asked again, with a new token.
                n.token = token_for(i, n.pc, true);
            }
            // ssi.ko creates the entries of the objects a node owns from
            // now on, and of lost ones.
            n.known |= match outcome {
                Outcome::Owner { owner, .. } => owner as usize == i,
                Outcome::Lost => true,
            };
            n.obj
                .reset(outcome, w.home, n.token, &mut |a| actions.push(a))
                .map_err(|e| format!("node {i}: reset: {e:?}"))?;
            perform(w, i, actions, None)?;
        }
        if !w.lost && matches!(outcome, Outcome::Owner { created: true, .. }) {
            // The owner's contents are the last write.
            if let Outcome::Owner { owner, .. } = outcome {
                if w.nodes[owner as usize].value != Some(w.committed) {
                    return Err("the new owner lacks the last write".into());
                }
            }
        }
        w.net.sort();
        check(w)
    }

    fn is_end(&self, w: &World) -> bool {
        w.net.is_empty()
            && w.nodes
                .iter()
                .enumerate()
                .all(|(i, n)| n.dead || (n.pc == self.scripts[i].len() && n.obj.held().is_none()))
    }

    /// Whether the end state kept every write.
    fn all_writes_kept(&self, w: &World) -> bool {
        w.lost || w.committed == w.writes_done
    }

    /// The writes that land: every write of the scripts but those refused.
    fn writes_landed(&self, w: &World) -> u64 {
        self.writes() - w.refused_writes
    }
}

/// Carries out a node's actions (`carried`: the contents of the message
/// it handled).
fn perform(
    w: &mut World,
    node: usize,
    actions: Vec<Action>,
    carried: Option<u64>,
) -> Result<(), String> {
    {
        for a in actions {
            match a {
                Action::Send { to, msg } => {
                    if w.hostile == Some(to) {
                        // The hostile node does what it likes with it.
                        continue;
                    }
                    if to as usize == node || to as usize >= w.nodes.len() {
                        return Err(format!("node {node} sends {msg:?} to {to}"));
                    }
                    // What receivers check of a sender (a node in
                    // another's name is refused): honest nodes pass.
                    if !msg.names_sender_ok(node as NodeId) {
                        return Err(format!("node {node} sends {msg:?} in another's name"));
                    }
                    // Members take in what members send each other.
                    if let Some(l) = &w.members {
                        if !Members::new(Some(l), w.home).admits(node as NodeId, &msg) {
                            return Err(format!("member {node}'s {msg:?} refused"));
                        }
                    }
                    let contents = if msg.kind.carries_contents() {
                        Some(w.nodes[node].value.ok_or("sends contents it lacks")?)
                    } else {
                        None
                    };
                    w.net.push(Flight { to, msg, contents });
                }
                Action::Install => {
                    w.nodes[node].value = Some(carried.ok_or("install without contents")?);
                }
                Action::DropContents => w.nodes[node].value = None,
                Action::FirstTouch => {
                    if w.nodes[node].value.is_some() {
                        return Err(format!("node {node}: first touch twice"));
                    }
                    w.nodes[node].value = Some(0);
                }
                Action::Refused(access) => {
                    let n = &mut w.nodes[node];
                    if !n.asking || n.obj.held().is_some() || n.obj.wanted().is_some() {
                        return Err(format!(
                            "node {node}: {access:?} refused while asking {}, holding {:?}, \
                             wanting {:?}",
                            n.asking,
                            n.obj.held(),
                            n.obj.wanted()
                        ));
                    }
                    // The access fails; the script goes on.
                    n.asking = false;
                    n.pc += 1;
                    REFUSED.with(|c| {
                        let (r, wr) = c.get();
                        c.set((r + 1, wr + u64::from(access == Access::Write)));
                    });
                    if access == Access::Write {
                        w.refused_writes += 1;
                    }
                }
                Action::Granted(access) => {
                    w.nodes[node].asking = false;
                    if w.nodes[node].value != Some(w.committed) {
                        return Err(format!(
                            "node {node}: {access:?} granted on {:?}, last write {}",
                            w.nodes[node].value, w.committed
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

/// The invariants that hold in every state.
fn check(w: &World) -> Result<(), String> {
    let owners = w
        .nodes
        .iter()
        .filter(|n| !n.dead && n.obj.state().is_owner())
        .count();
    let in_flight = w
        .net
        .iter()
        .filter(|f| f.msg.kind == MsgKind::Ownership && !w.nodes[f.to as usize].dead)
        .count();
    if w.nodes.iter().any(|n| n.dead) && owners + in_flight == 0 {
        // Ownership in flight to the dead node: lost on delivery, the
        // crash step decided already.
        return Err("no owner after a rebuild".into());
    }
    if owners + in_flight != 1 {
        return Err(format!(
            "{owners} owners and {in_flight} ownerships in flight"
        ));
    }
    let live = || w.nodes.iter().filter(|n| !n.dead);
    let writable =
        live().any(|n| n.obj.state() == State::WriteOwner && n.obj.held() == Some(Access::Write));
    let copies = live().filter(|n| n.obj.state().has_copy()).count();
    if writable && copies > 1 {
        return Err(format!("a writer and {} other copies", copies - 1));
    }
    for (i, n) in w.nodes.iter().enumerate() {
        if n.dead {
            continue;
        }
        let valid = n.obj.state().has_copy() && n.obj.state() != State::InvOwner;
        if valid && n.value != Some(w.committed) {
            return Err(format!(
                "node {i} ({:?}) holds {:?}, last write {}",
                n.obj.state(),
                n.value,
                w.committed
            ));
        }
        // An access in progress keeps its contents, current.
        if n.obj.held().is_some() && (!n.obj.state().has_copy() || n.value != Some(w.committed)) {
            return Err(format!(
                "node {i} holds {:?} in {:?} on {:?}, last write {}",
                n.obj.held(),
                n.obj.state(),
                n.value,
                w.committed
            ));
        }
        // Probable-owner chains end at a node that points to itself.
        let mut at = i;
        for hops in 0.. {
            let next = w.nodes[at].obj.probable_owner() as usize;
            if next == at {
                break;
            }
            if hops > w.nodes.len() {
                return Err(format!("probable-owner cycle from node {i}"));
            }
            at = next;
        }
    }
    Ok(())
}

/// Explores every interleaving; returns the number of distinct states.
fn exhaustive(model: &Model, home: NodeId) -> usize {
    let start = model.initial(home);
    let mut index: HashMap<World, usize> = HashMap::new();
    let mut worlds = vec![start.clone()];
    let mut preds: Vec<Vec<usize>> = vec![Vec::new()];
    let mut ends = Vec::new();
    index.insert(start, 0);
    let mut next = 0;
    while next < worlds.len() {
        let w = worlds[next].clone();
        let steps = model.steps(&w);
        // The hostile node can always send more: an end is where the
        // honest nodes have nothing left to do.
        if steps.iter().all(|s| matches!(s, Step::Forge(..))) {
            assert!(model.is_end(&w), "stuck in {w:#?}");
            if model.crashes {
                assert!(model.all_writes_kept(&w), "lost a write: {w:#?}");
            } else {
                assert_eq!(w.committed, model.writes_landed(&w), "lost a write: {w:#?}");
                assert_eq!(w.committed, w.writes_done, "lost a write: {w:#?}");
            }
            ends.push(next);
        }
        for s in steps {
            let mut n = w.clone();
            if let Err(e) = model.apply(&mut n, s) {
                panic!("{e}\nafter {s:?} from {w:#?}");
            }
            let id = match index.get(&n) {
                Some(&id) => id,
                None => {
                    let id = worlds.len();
                    index.insert(n.clone(), id);
                    worlds.push(n);
                    preds.push(Vec::new());
                    id
                }
            };
            preds[id].push(next);
        }
        next += 1;
    }
    // Every state can still reach an end (no livelock either).
    let mut can_end = vec![false; worlds.len()];
    let mut todo = ends;
    for &e in &todo {
        can_end[e] = true;
    }
    while let Some(s) = todo.pop() {
        for &p in &preds[s] {
            if !can_end[p] {
                can_end[p] = true;
                todo.push(p);
            }
        }
    }
    if let Some(bad) = can_end.iter().position(|c| !c) {
        panic!("no way to finish from {:#?}", worlds[bad]);
    }
    worlds.len()
}

use Access::{Read as R, Write as W};

#[test]
fn two_writers_and_a_reader_in_every_order() {
    let m = Model::new(vec![vec![W], vec![W], vec![R]]);
    for home in 0..3 {
        let states = exhaustive(&m, home);
        assert!(states > 50, "{states}");
    }
}

#[test]
fn readers_upgrade_to_writers_in_every_order() {
    let m = Model::new(vec![vec![R, W], vec![R, W], vec![]]);
    exhaustive(&m, 2);
    exhaustive(&m, 0);
}

#[test]
fn a_read_copy_crossing_its_invalidation_is_asked_for_again() {
    // The owner (2) reads and writes while 0 and 1 ask for copies: copies
    // race with the owner's invalidations.
    let m = Model::new(vec![vec![R, R], vec![R], vec![W, R, W]]);
    exhaustive(&m, 2);
}

#[test]
fn four_nodes_write_after_writes() {
    let m = Model::new(vec![vec![W, W], vec![W], vec![R, W], vec![W]]);
    let states = exhaustive(&m, 3);
    eprintln!("four nodes: {states} states");
}

/// A small deterministic generator (xorshift), so failures replay.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// `nodes` scripts of `len` accesses, one in `write_one_in` a write.
fn random_scripts(
    rng: &mut Rng,
    nodes: usize,
    len: usize,
    write_one_in: usize,
) -> Vec<Vec<Access>> {
    (0..nodes)
        .map(|_| {
            (0..len)
                .map(|_| if rng.below(write_one_in) == 0 { W } else { R })
                .collect()
        })
        .collect()
}

/// Runs `m` from `w` to its end with steps drawn by `rng` (`narrow` may
/// narrow each choice); panics, naming `seed`, on a broken invariant, a
/// run without end, or a stuck state.
fn run_random(
    m: &Model,
    w: &mut World,
    rng: &mut Rng,
    seed: u64,
    mut narrow: impl FnMut(&mut Vec<Step>, &mut Rng),
) {
    let mut steps = 0;
    loop {
        let mut s = m.steps(w);
        narrow(&mut s, rng);
        if s.iter().all(|s| matches!(s, Step::Forge(..))) {
            break;
        }
        let step = s[rng.below(s.len())];
        if let Err(e) = m.apply(w, step) {
            FAILING.with(|f| f.set(0));
            panic!("seed {seed}, step {steps} ({step:?}): {e}");
        }
        steps += 1;
        assert!(steps < 100_000, "seed {seed}: no end");
    }
    FAILING.with(|f| f.set(0));
    assert!(m.is_end(w), "seed {seed}: stuck in {w:#?}");
}

#[test]
fn random_schedules_of_eight_nodes_keep_every_invariant() {
    for seed in 1..=300u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let m = Model::new(random_scripts(&mut rng, 8, 6, 3));
        let mut w = m.initial(rng.below(8) as NodeId);
        run_random(&m, &mut w, &mut rng, seed, |_, _| {});
        assert_eq!(w.committed, m.writes(), "seed {seed}");
    }
}

#[test]
fn storage_that_cannot_grow_delays_but_loses_nothing() {
    for seed in 1..=200u64 {
        FAILING.with(|f| f.set(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1));
        let mut rng = Rng(seed | 1);
        let m = Model::new(random_scripts(&mut rng, 5, 4, 2));
        let mut w = m.initial(0);
        run_random(&m, &mut w, &mut rng, seed, |_, _| {});
        assert_eq!(w.committed, m.writes(), "seed {seed}");
    }
}

#[test]
fn states_have_kerrighed_names_and_ownership() {
    assert_eq!(State::WaitAcks.kerrighed_name(), "WAIT_ACK_WRITE");
    assert!(State::WaitAcks.is_owner() && !State::WaitWrite.is_owner());
    assert!(State::ReadCopy.has_copy() && !State::InvOwner.has_copy());
    for code in 1..=7 {
        assert_eq!(MsgKind::from_u8(code).map(|k| k as u8), Some(code));
    }
    assert_eq!(MsgKind::from_u8(0), None);
    assert_eq!(MsgKind::from_u8(8), None);
}

#[test]
fn misuse_and_foreign_messages_are_refused_without_effect() {
    let mut o = Obj::new(1, 0, Set::default(), Set::default(), Queue::default());
    let mut acts = Vec::new();
    assert_eq!(o.release(&mut |a| acts.push(a)), Err(Error::NotHeld));
    let foreign = Msg {
        kind: MsgKind::Ownership,
        node: 0,
        version: 9,
        token: T,
    };
    let before = o.clone();
    assert_eq!(
        o.on_message(foreign, &mut |a| acts.push(a)),
        Err(Error::Unexpected)
    );
    let ack = Msg {
        kind: MsgKind::InvAck,
        node: 0,
        version: 0,
        token: 0,
    };
    assert_eq!(
        o.on_message(ack, &mut |a| acts.push(a)),
        Err(Error::Unexpected)
    );
    let own_request = Msg {
        kind: MsgKind::ReadReq,
        node: 1,
        version: 0,
        token: T,
    };
    assert_eq!(
        o.on_message(own_request, &mut |a| acts.push(a)),
        Err(Error::Unexpected)
    );
    assert_eq!(o, before);
    assert!(acts.is_empty());
    o.acquire(Access::Read, T, &mut |a| acts.push(a)).unwrap();
    assert_eq!(
        o.acquire(Access::Read, T + 1, &mut |a| acts.push(a)),
        Err(Error::Busy)
    );
    assert_eq!(o.state(), State::WaitRead);
}

#[test]
fn four_nodes_mixing_reads_and_writes() {
    let m = Model::new(vec![vec![R, W, R], vec![W, R], vec![R, W], vec![R]]);
    let states = exhaustive(&m, 1);
    eprintln!("four nodes mixed: {states} states");
}

mod arbitrary_input {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Event {
        Acquire(bool, u64),
        Release,
        Poll,
        Message(u8, NodeId, u64, u64),
    }

    /// Tokens: mostly those the accesses give, so that answers are taken.
    fn token() -> impl Strategy<Value = u64> {
        prop_oneof![Just(T), Just(T + 1), Just(0), Just(u64::MAX)]
    }

    fn event() -> impl Strategy<Value = Event> {
        prop_oneof![
            (any::<bool>(), prop_oneof![Just(T), Just(T + 1)])
                .prop_map(|(w, t)| Event::Acquire(w, t)),
            Just(Event::Release),
            Just(Event::Poll),
            (
                0u8..8,
                0u32..4,
                prop_oneof![0u64..4, Just(u64::MAX), Just(u64::MAX - 1)],
                token(),
            )
                .prop_map(|(k, n, v, t)| Event::Message(k, n, v, t)),
        ]
    }

    proptest! {
        /// Whatever a peer sends, in any state: no panic, no message to
        /// itself, a refused message changes nothing, and a `Copy` or an
        /// `Ownership` is taken only with the token of the access asked
        /// for.
        #[test]
        fn any_message_sequence_is_handled_or_refused_cleanly(
            home in 0u32..4,
            events in proptest::collection::vec(event(), 0..64),
        ) {
            let mut o = Obj::new(1, home, Set::default(), Set::default(), Queue::default());
            // The token of the access last asked for.
            let mut asked = None;
            for e in events {
                let before = o.clone();
                let mut acts = Vec::new();
                let mut answer = None;
                let r = match e {
                    Event::Acquire(w, token) => {
                        let r = o.acquire(if w { W } else { R }, token, &mut |a| acts.push(a));
                        if r.is_ok() {
                            asked = Some(token);
                        }
                        r
                    }
                    Event::Release => o.release(&mut |a| acts.push(a)),
                    Event::Poll => o.poll(&mut |a| acts.push(a)),
                    Event::Message(k, node, version, token) => match MsgKind::from_u8(k) {
                        Some(kind) => {
                            let msg = Msg { kind, node, version, token };
                            if kind.answers_request() {
                                answer = Some(token);
                            }
                            prop_assert_eq!(
                                o.is_answer(&msg),
                                matches!(
                                    (kind, o.state()),
                                    (MsgKind::Copy, State::WaitRead)
                                        | (MsgKind::Ownership, State::WaitWrite)
                                        | (MsgKind::Refused, State::WaitRead | State::WaitWrite)
                                ) && Some(token) == asked
                                    && version != u64::MAX
                                    && node != 1
                            );
                            o.on_message(msg, &mut |a| acts.push(a))
                        }
                        None => continue,
                    },
                };
                if matches!(r, Err(Error::Unexpected | Error::Busy | Error::BadToken)) {
                    prop_assert_eq!(&o, &before);
                    prop_assert!(acts.is_empty());
                }
                if r.is_ok() && answer.is_some() {
                    prop_assert_eq!(answer, asked, "took another token");
                }
                let refused = acts.iter().any(|a| matches!(a, Action::Refused(_)));
                if refused {
                    // Only a `Refused` with the token fails the access,
                    // and nothing is held or asked for after it.
                    prop_assert!(r.is_ok() && answer == asked);
                    prop_assert!(o.held().is_none() && o.wanted().is_none());
                    prop_assert_eq!(o.state(), State::InvCopy);
                }
                if r == Err(Error::BadToken) {
                    prop_assert_ne!(answer, asked);
                }
                for a in acts {
                    if let Action::Send { to, .. } = a {
                        prop_assert_ne!(to, 1);
                    }
                }
            }
        }
    }
}

mod wire {
    use super::*;
    use proptest::prelude::*;
    use zoid_proto::ssi::wire::{Header, WireError, HEADER_LEN};

    fn header(kind: MsgKind, len: u32) -> Header {
        Header {
            set: 7,
            object: 0x0102_0304_0506_0708,
            msg: Msg {
                kind,
                node: 0xdead_beef,
                version: 42,
                token: 0x1122_3344_5566_7788,
            },
            contents_len: len,
        }
    }

    #[test]
    fn headers_round_trip_and_lengths_must_match() {
        let h = header(MsgKind::Copy, 4096);
        assert_eq!(Header::decode(&h.encode(), HEADER_LEN + 4096), Ok(h));
        assert_eq!(
            Header::decode(&h.encode(), HEADER_LEN + 4095),
            Err(WireError::BadLength)
        );
        let r = header(MsgKind::ReadReq, 0);
        assert_eq!(Header::decode(&r.encode(), HEADER_LEN), Ok(r));
        // A request with contents, contents without a length.
        let bad = header(MsgKind::WriteReq, 8);
        assert_eq!(
            Header::decode(&bad.encode(), HEADER_LEN + 8),
            Err(WireError::BadLength)
        );
        let empty_copy = header(MsgKind::Ownership, 0);
        assert_eq!(
            Header::decode(&empty_copy.encode(), HEADER_LEN),
            Err(WireError::BadLength)
        );
        let mut b = r.encode();
        assert_eq!(Header::decode(&b[..39], 39), Err(WireError::Short));
        // The token is the header's last 8 bytes, big-endian.
        assert_eq!(HEADER_LEN, 40);
        assert_eq!(b[32..], 0x1122_3344_5566_7788u64.to_be_bytes());
        b[3] = 9;
        assert_eq!(Header::decode(&b, HEADER_LEN), Err(WireError::BadKind));
        // Version 1 (without the token), 2 (without `Refused`) and
        // unknown versions.
        for v in [1, 2, 4] {
            b[2] = v;
            assert_eq!(Header::decode(&b, HEADER_LEN), Err(WireError::BadVersion));
        }
        b[0] = 0;
        assert_eq!(Header::decode(&b, HEADER_LEN), Err(WireError::BadMagic));
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_decode_or_fail_cleanly(
            b in proptest::collection::vec(any::<u8>(), 0..56),
            extra in 0usize..5000,
        ) {
            if let Ok(h) = Header::decode(&b, b.len().saturating_add(extra)) {
                prop_assert_eq!(h.contents_len as usize + HEADER_LEN, b.len() + extra);
                prop_assert_eq!(Header::decode(&h.encode(), b.len() + extra), Ok(h));
            }
        }
    }
}

#[test]
fn a_crash_anywhere_loses_nothing_but_what_died_alone() {
    for (scripts, home) in [
        (vec![vec![W], vec![W], vec![R]], 0),
        (vec![vec![R, W], vec![R], vec![W]], 0),
        (vec![vec![W, R], vec![R, W], vec![R]], 2),
    ] {
        let m = Model::with_crashes(scripts);
        let states = exhaustive(&m, home);
        eprintln!("crashes, home {home}: {states} states");
    }
}

#[test]
fn random_crashes_of_one_node_in_eight() {
    let mut lost = 0;
    for seed in 1..=300u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let m = Model::with_crashes(random_scripts(&mut rng, 8, 6, 3));
        let mut w = m.initial(0);
        run_random(&m, &mut w, &mut rng, seed, |s, rng| {
            // Crash rarely, so that it happens at various depths.
            if rng.below(20) != 0 && s.len() > 1 {
                s.retain(|st| !matches!(st, Step::Crash(_)));
            }
        });
        assert!(m.all_writes_kept(&w), "seed {seed}: {w:#?}");
        lost += u32::from(w.lost);
    }
    eprintln!("random crashes: {lost} of 300 runs lost the object");
}

#[test]
fn only_requests_name_another_node_than_their_sender() {
    use zoid_proto::ssi::coherence::{Msg, MsgKind};
    for kind in [MsgKind::ReadReq, MsgKind::WriteReq] {
        let forwarded = Msg {
            kind,
            node: 7,
            version: 0,
            token: T,
        };
        assert!(
            forwarded.names_sender_ok(3),
            "{kind:?} forwarded for node 7"
        );
    }
    for kind in [
        MsgKind::Copy,
        MsgKind::Ownership,
        MsgKind::Invalidate,
        MsgKind::InvAck,
        MsgKind::Refused,
    ] {
        let m = Msg {
            kind,
            node: 7,
            version: 1,
            token: T,
        };
        assert!(m.names_sender_ok(7), "{kind:?} from its node");
        assert!(
            !m.names_sender_ok(3),
            "{kind:?} from node 3 in node 7's name"
        );
    }
}

/// The forged messages refused (those for their token alone among them)
/// and accepted so far on this thread.
fn forged_counts() -> (u64, u64, u64) {
    (
        FORGED_REFUSED.with(Cell::get),
        FORGED_BAD_TOKEN.with(Cell::get),
        FORGED_ACCEPTED.with(Cell::get),
    )
}

#[test]
fn a_hostile_node_forging_in_every_order_breaks_nothing() {
    for (scripts, home) in [
        (vec![vec![W], vec![W], vec![R]], 0),
        (vec![vec![W], vec![W], vec![R]], 2),
        (vec![vec![R, W], vec![R, W], vec![]], 2),
        (vec![vec![R, R], vec![R], vec![W, R, W]], 2),
        (vec![vec![W, W], vec![W], vec![R, W], vec![W]], 3),
    ] {
        let m = Model::with_hostile_node(scripts);
        let states = exhaustive(&m, home);
        eprintln!("hostile node, home {home}: {states} states");
    }
    let (refused, bad_token, accepted) = forged_counts();
    eprintln!(
        "hostile node, every order: {refused} forgeries refused \
         ({bad_token} for their token), {accepted} accepted"
    );
    assert!(refused > 0 && bad_token > 0 && accepted > 0);
}

#[test]
fn a_hostile_node_in_random_schedules_of_eight_nodes_breaks_nothing() {
    for seed in 1..=300u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let m = Model::with_hostile_node(random_scripts(&mut rng, 8, 6, 3));
        let mut w = m.initial(rng.below(8) as NodeId);
        if seed % 3 == 0 {
            // Storage fails too.
            FAILING.with(|f| f.set(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1));
        }
        run_random(&m, &mut w, &mut rng, seed, |s, rng| {
            // One step in four a forgery, while honest steps remain.
            if rng.below(4) != 0 && s.iter().any(|st| !matches!(st, Step::Forge(..))) {
                s.retain(|st| !matches!(st, Step::Forge(..)));
            }
        });
        assert_eq!(w.committed, m.writes(), "seed {seed}");
    }
    let (refused, bad_token, accepted) = forged_counts();
    eprintln!(
        "hostile node, 300 random runs: {refused} forgeries refused \
         ({bad_token} for their token), {accepted} accepted"
    );
    assert!(bad_token > 0);
}

/// Runs `f` on `o`, collecting its actions.
fn run(
    o: &mut Obj,
    f: impl FnOnce(&mut Obj, &mut dyn FnMut(Action)) -> Result<(), Error>,
) -> (Result<(), Error>, Vec<Action>) {
    let mut acts = Vec::new();
    let r = f(o, &mut |a| acts.push(a));
    (r, acts)
}

/// The token the unit tests' accesses give.
const T: u64 = 0x70c3_11a9_0b5e_44d1;

/// A message as an honest node sends it in the unit tests: requests and
/// their answers carry [`T`], the other kinds no token.
fn msg(kind: MsgKind, node: NodeId, version: u64) -> Msg {
    let token = match kind {
        MsgKind::Invalidate | MsgKind::InvAck => 0,
        _ => T,
    };
    let version = if kind == MsgKind::Refused { 0 } else { version };
    Msg {
        kind,
        node,
        version,
        token,
    }
}

/// `msg` is refused as `Unexpected`, changing nothing.
fn refused(o: &mut Obj, m: Msg) {
    let before = o.clone();
    let (r, acts) = run(o, |o, out| o.on_message(m, out));
    assert_eq!(r, Err(Error::Unexpected), "{m:?}");
    assert!(acts.is_empty(), "{m:?}: {acts:?}");
    assert_eq!(*o, before, "{m:?}");
}

#[test]
fn acknowledgements_count_once_and_only_from_invalidated_nodes() {
    // Node 0 owns the object; 1 and 2 read it; 0 writes.
    let mut o = Obj::new(0, 0, Set::default(), Set::default(), Queue::default());
    run(&mut o, |o, out| o.acquire(R, T, out)).0.unwrap();
    run(&mut o, |o, out| o.release(out)).0.unwrap();
    for reader in [1, 2] {
        let (r, _) = run(&mut o, |o, out| {
            o.on_message(msg(MsgKind::ReadReq, reader, 0), out)
        });
        r.unwrap();
    }
    let (r, acts) = run(&mut o, |o, out| o.acquire(W, T, out));
    r.unwrap();
    assert_eq!(acts.len(), 2, "{acts:?}");
    assert_eq!(o.state(), State::WaitAcks);
    // From a node never invalidated: the write would go past 1's copy.
    refused(&mut o, msg(MsgKind::InvAck, 3, 0));
    let (r, acts) = run(&mut o, |o, out| {
        o.on_message(msg(MsgKind::InvAck, 1, 0), out)
    });
    assert_eq!((r, acts), (Ok(()), vec![]));
    // Twice from the same node: 2's copy is still valid.
    refused(&mut o, msg(MsgKind::InvAck, 1, 0));
    assert_eq!(o.state(), State::WaitAcks);
    let (r, acts) = run(&mut o, |o, out| {
        o.on_message(msg(MsgKind::InvAck, 2, 0), out)
    });
    assert_eq!((r, acts), (Ok(()), vec![Action::Granted(W)]));
    refused(&mut o, msg(MsgKind::InvAck, 2, 0));
}

#[test]
fn only_the_owner_a_copy_came_from_invalidates_it() {
    // Node 1 reads from the home 0.
    let mut o = Obj::new(1, 0, Set::default(), Set::default(), Queue::default());
    run(&mut o, |o, out| o.acquire(R, T, out)).0.unwrap();
    // Invalidations while waiting mark their sender's copies stale only.
    let (r, acts) = run(&mut o, |o, out| {
        o.on_message(msg(MsgKind::Invalidate, 3, 9), out)
    });
    assert_eq!(r, Ok(()));
    assert_eq!(
        acts,
        vec![Action::Send {
            to: 3,
            msg: msg(MsgKind::InvAck, 1, 0)
        }]
    );
    assert!(o.copy_is_stale(3) && !o.copy_is_stale(0));
    let (r, _) = run(&mut o, |o, out| o.on_message(msg(MsgKind::Copy, 0, 4), out));
    r.unwrap();
    assert_eq!((o.state(), o.copy_from()), (State::ReadCopy, Some(0)));
    run(&mut o, |o, out| o.release(out)).0.unwrap();
    // A valid copy: only 0 may invalidate it.
    refused(&mut o, msg(MsgKind::Invalidate, 2, 5));
    refused(&mut o, msg(MsgKind::Copy, 2, 5));
    refused(&mut o, msg(MsgKind::Ownership, 2, 5));
    let (r, acts) = run(&mut o, |o, out| {
        o.on_message(msg(MsgKind::Invalidate, 0, 5), out)
    });
    assert_eq!(r, Ok(()));
    assert_eq!(acts[0], Action::DropContents);
    assert_eq!(o.state(), State::InvCopy);
    // Once, and never without a copy.
    refused(&mut o, msg(MsgKind::Invalidate, 0, 5));
    refused(&mut o, msg(MsgKind::InvAck, 0, 0));
}

#[test]
fn a_dropped_copy_is_invalidated_by_its_owner_while_waiting_to_write() {
    let mut o = Obj::new(1, 0, Set::default(), Set::default(), Queue::default());
    run(&mut o, |o, out| o.acquire(R, T, out)).0.unwrap();
    run(&mut o, |o, out| o.on_message(msg(MsgKind::Copy, 0, 1), out))
        .0
        .unwrap();
    run(&mut o, |o, out| o.release(out)).0.unwrap();
    run(&mut o, |o, out| o.acquire(W, T, out)).0.unwrap();
    assert_eq!(o.state(), State::WaitWrite);
    refused(&mut o, msg(MsgKind::Invalidate, 2, 2));
    refused(&mut o, msg(MsgKind::Copy, 0, 2));
    run(&mut o, |o, out| {
        o.on_message(msg(MsgKind::Invalidate, 0, 2), out)
    })
    .0
    .unwrap();
    refused(&mut o, msg(MsgKind::Invalidate, 0, 2));
    let (r, acts) = run(&mut o, |o, out| {
        o.on_message(msg(MsgKind::Ownership, 0, 2), out)
    });
    assert_eq!(
        (r, acts),
        (Ok(()), vec![Action::Install, Action::Granted(W)])
    );
    refused(&mut o, msg(MsgKind::Ownership, 0, 3));
    refused(&mut o, msg(MsgKind::Invalidate, 0, 3));
}

#[test]
fn a_hostile_node_outside_a_limited_set_is_never_heard() {
    FORGED_ACCEPTED.with(|c| c.set(0));
    for (scripts, home) in [
        (vec![vec![W], vec![W], vec![R]], 0),
        (vec![vec![R, W], vec![R, W], vec![]], 2),
    ] {
        let m = Model::with_hostile_outsider(scripts);
        let states = exhaustive(&m, home);
        eprintln!("hostile outsider, home {home}: {states} states");
    }
    for seed in 1..=100u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let m = Model::with_hostile_outsider(random_scripts(&mut rng, 8, 6, 3));
        let mut w = m.initial(rng.below(8) as NodeId);
        run_random(&m, &mut w, &mut rng, seed, |s, rng| {
            if rng.below(4) != 0 && s.iter().any(|st| !matches!(st, Step::Forge(..))) {
                s.retain(|st| !matches!(st, Step::Forge(..)));
            }
        });
        assert_eq!(w.committed, m.writes(), "seed {seed}");
    }
    // Copies and ownership to nodes waiting for them included.
    assert_eq!(FORGED_ACCEPTED.with(Cell::get), 0);
    eprintln!(
        "hostile outsider: {} forgeries refused",
        FORGED_REFUSED.with(Cell::get)
    );
}

/// The requests `acts` sends, as (to, kind, node, token).
fn requests(acts: &[Action]) -> Vec<(NodeId, MsgKind, NodeId, u64)> {
    acts.iter()
        .filter_map(|a| match a {
            Action::Send { to, msg }
                if matches!(msg.kind, MsgKind::ReadReq | MsgKind::WriteReq) =>
            {
                Some((*to, msg.kind, msg.node, msg.token))
            }
            _ => None,
        })
        .collect()
}

/// `m` is refused as `BadToken`, changing nothing.
fn refused_for_token(o: &mut Obj, m: Msg) {
    let before = o.clone();
    let (r, acts) = run(o, |o, out| o.on_message(m, out));
    assert_eq!(r, Err(Error::BadToken), "{m:?}");
    assert!(acts.is_empty(), "{m:?}: {acts:?}");
    assert_eq!(*o, before, "{m:?}");
}

#[test]
fn a_copy_or_ownership_without_the_request_token_is_refused() {
    // Node 1 asks the home 0 for a copy, with token T.
    let mut o = Obj::new(1, 0, Set::default(), Set::default(), Queue::default());
    let (r, acts) = run(&mut o, |o, out| o.acquire(R, T, out));
    r.unwrap();
    assert_eq!(requests(&acts), vec![(0, MsgKind::ReadReq, 1, T)]);
    let copy = msg(MsgKind::Copy, 0, 1);
    for token in [0, 1, T ^ 1, T ^ (1 << 63), u64::MAX] {
        refused_for_token(&mut o, Msg { token, ..copy });
        // From any member: the sender is not what gives it away.
        refused_for_token(
            &mut o,
            Msg {
                token,
                node: 2,
                ..copy
            },
        );
    }
    // Not waiting for ownership: unexpected whatever the token.
    refused(&mut o, msg(MsgKind::Ownership, 0, 1));
    let (r, acts) = run(&mut o, |o, out| o.on_message(copy, out));
    assert_eq!(
        (r, acts),
        (Ok(()), vec![Action::Install, Action::Granted(R)])
    );
    run(&mut o, |o, out| o.release(out)).0.unwrap();
    // Again, with the token of the access just done: a replay.
    refused(&mut o, copy);
    let t2 = T.wrapping_mul(3);
    let (r, acts) = run(&mut o, |o, out| o.acquire(W, t2, out));
    r.unwrap();
    assert_eq!(requests(&acts), vec![(0, MsgKind::WriteReq, 1, t2)]);
    let own = Msg {
        token: t2,
        ..msg(MsgKind::Ownership, 0, 2)
    };
    for token in [0, T, t2 ^ 1, u64::MAX] {
        refused_for_token(&mut o, Msg { token, ..own });
    }
    refused(&mut o, Msg { token: t2, ..copy });
    let (r, acts) = run(&mut o, |o, out| o.on_message(own, out));
    assert_eq!(
        (r, acts),
        (Ok(()), vec![Action::Install, Action::Granted(W)])
    );
    assert_eq!(o.state(), State::WriteOwner);
}

#[test]
fn the_token_travels_with_the_request_and_comes_back() {
    // Node 0 owns the object and writes; node 2 points to 1, 1 to 0.
    let mut owner = Obj::new(0, 0, Set::default(), Set::default(), Queue::default());
    let mut fwd = Obj::new(1, 0, Set::default(), Set::default(), Queue::default());
    run(&mut owner, |o, out| o.acquire(W, 5, out)).0.unwrap();
    // 2's read request reaches 1, which forwards it unchanged.
    let req = Msg {
        token: 0xabcd,
        ..msg(MsgKind::ReadReq, 2, 0)
    };
    let (r, acts) = run(&mut fwd, |o, out| o.on_message(req, out));
    r.unwrap();
    assert_eq!(requests(&acts), vec![(0, MsgKind::ReadReq, 2, 0xabcd)]);
    // The owner is busy: the request waits, then its copy carries the
    // token.
    run(&mut owner, |o, out| o.on_message(req, out)).0.unwrap();
    let wreq = Msg {
        token: 0xef01,
        ..msg(MsgKind::WriteReq, 3, 0)
    };
    run(&mut owner, |o, out| o.on_message(wreq, out)).0.unwrap();
    let (r, acts) = run(&mut owner, |o, out| o.release(out));
    r.unwrap();
    let sent: Vec<_> = acts
        .iter()
        .filter_map(|a| match a {
            Action::Send { to, msg } => Some((*to, msg.kind, msg.token)),
            _ => None,
        })
        .collect();
    // The copy to 2, then the write: 2's copy invalidated first.
    assert_eq!(
        sent,
        vec![(2, MsgKind::Copy, 0xabcd), (2, MsgKind::Invalidate, 0),]
    );
    let (r, acts) = run(&mut owner, |o, out| {
        o.on_message(msg(MsgKind::InvAck, 2, 0), out)
    });
    r.unwrap();
    assert_eq!(
        acts[0],
        Action::Send {
            to: 3,
            msg: Msg {
                kind: MsgKind::Ownership,
                node: 0,
                version: 1,
                token: 0xef01,
            }
        }
    );
}

#[test]
fn a_node_on_the_request_path_can_still_answer() {
    // The residual: node 2 forwards node 1's request, so it knows the
    // token, and its own Copy is taken as the answer (a node off the
    // path, 3, cannot guess it).
    let mut o = Obj::new(1, 2, Set::default(), Set::default(), Queue::default());
    let (r, acts) = run(&mut o, |o, out| o.acquire(R, T, out));
    r.unwrap();
    assert_eq!(requests(&acts), vec![(2, MsgKind::ReadReq, 1, T)]);
    refused_for_token(
        &mut o,
        Msg {
            token: 0,
            ..msg(MsgKind::Copy, 3, 7)
        },
    );
    let (r, _) = run(&mut o, |o, out| o.on_message(msg(MsgKind::Copy, 2, 7), out));
    assert_eq!(r, Ok(()));
    assert_eq!(o.state(), State::ReadCopy);
}

#[test]
fn a_stale_copy_is_asked_for_again_with_the_same_token() {
    let mut o = Obj::new(1, 0, Set::default(), Set::default(), Queue::default());
    run(&mut o, |o, out| o.acquire(R, T, out)).0.unwrap();
    // 0 serves, then writes: its invalidation overtakes the copy.
    run(&mut o, |o, out| {
        o.on_message(msg(MsgKind::Invalidate, 0, 2), out)
    })
    .0
    .unwrap();
    // A stale copy with another token is still not the answer.
    refused_for_token(
        &mut o,
        Msg {
            token: T + 1,
            ..msg(MsgKind::Copy, 0, 1)
        },
    );
    let (r, acts) = run(&mut o, |o, out| o.on_message(msg(MsgKind::Copy, 0, 1), out));
    r.unwrap();
    assert_eq!(requests(&acts), vec![(0, MsgKind::ReadReq, 1, T)]);
    assert_eq!(o.state(), State::WaitRead);
    let (r, acts) = run(&mut o, |o, out| o.on_message(msg(MsgKind::Copy, 0, 2), out));
    r.unwrap();
    assert_eq!(acts, vec![Action::Install, Action::Granted(R)]);
}

#[test]
fn a_rebuild_counts_only_the_answer_with_the_request_token() {
    let mut o = Obj::new(1, 0, Set::default(), Set::default(), Queue::default());
    run(&mut o, |o, out| o.acquire(W, T, out)).0.unwrap();
    let forged = Msg {
        token: T ^ 1,
        ..msg(MsgKind::Ownership, 2, 4)
    };
    let real = msg(MsgKind::Ownership, 0, 4);
    // A forged ownership kept during the freeze makes nobody an owner
    // (two owners would be reported otherwise).
    assert_eq!(o.holding(&[forged]), (Holding::Nothing, Source::Local));
    assert_eq!(
        o.holding(&[forged, real]),
        (
            Holding::Owner {
                version: 4,
                created: true
            },
            Source::Kept(1)
        )
    );
    // The reset asks again with the new token, and only it is taken.
    let t2 = T.rotate_left(17);
    let outcome = Outcome::Owner {
        owner: 0,
        version: 4,
        created: true,
    };
    let (r, acts) = run(&mut o, |o, out| o.reset(outcome, 0, t2, out));
    r.unwrap();
    assert_eq!(requests(&acts), vec![(0, MsgKind::WriteReq, 1, t2)]);
    refused_for_token(&mut o, real);
    let (r, _) = run(&mut o, |o, out| {
        o.on_message(Msg { token: t2, ..real }, out)
    });
    assert_eq!(r, Ok(()));
    // The same for a read copy.
    let mut o = Obj::new(1, 0, Set::default(), Set::default(), Queue::default());
    run(&mut o, |o, out| o.acquire(R, T, out)).0.unwrap();
    let forged = Msg {
        token: 0,
        ..msg(MsgKind::Copy, 2, 4)
    };
    assert_eq!(o.holding(&[forged]), (Holding::Nothing, Source::Local));
    assert_eq!(
        o.holding(&[forged, msg(MsgKind::Copy, 0, 4)]),
        (Holding::Copy { version: 4 }, Source::Kept(1))
    );
}

/// A `Refused` of node `by` for the request with token `token`.
fn refusal(by: NodeId, token: u64) -> Msg {
    Msg {
        kind: MsgKind::Refused,
        node: by,
        version: 0,
        token,
    }
}

#[test]
fn a_refused_read_fails_and_leaves_nothing_asked_for() {
    let mut o = Obj::new(1, 0, Set::default(), Set::default(), Queue::default());
    // Not waiting: nothing to refuse.
    refused(&mut o, refusal(0, T));
    run(&mut o, |o, out| o.acquire(R, T, out)).0.unwrap();
    // An invalidation while waiting is forgotten with the request.
    run(&mut o, |o, out| {
        o.on_message(msg(MsgKind::Invalidate, 2, 3), out)
    })
    .0
    .unwrap();
    for token in [0, T ^ 1, u64::MAX] {
        refused_for_token(&mut o, refusal(0, token));
    }
    // Its own node, or a version no node sends: unexpected.
    refused(&mut o, refusal(1, T));
    refused(
        &mut o,
        Msg {
            version: u64::MAX,
            ..refusal(0, T)
        },
    );
    let (r, acts) = run(&mut o, |o, out| o.on_message(refusal(0, T), out));
    assert_eq!((r, acts), (Ok(()), vec![Action::Refused(R)]));
    assert_eq!(o.state(), State::InvCopy);
    assert_eq!((o.held(), o.wanted(), o.probable_owner()), (None, None, 0));
    assert!(!o.copy_is_stale(2));
    // Once: a replay finds nothing waiting.
    refused(&mut o, refusal(0, T));
    // The next access asks again, with its own token.
    let t2 = T.rotate_left(9);
    let (r, acts) = run(&mut o, |o, out| o.acquire(R, t2, out));
    r.unwrap();
    assert_eq!(requests(&acts), vec![(0, MsgKind::ReadReq, 1, t2)]);
    refused_for_token(&mut o, refusal(0, T));
    let (r, acts) = run(&mut o, |o, out| {
        o.on_message(
            Msg {
                token: t2,
                ..msg(MsgKind::Copy, 0, 1)
            },
            out,
        )
    });
    assert_eq!(
        (r, acts),
        (Ok(()), vec![Action::Install, Action::Granted(R)])
    );
}

#[test]
fn a_refused_write_points_to_the_refuser_and_passes_on_what_queued() {
    // Node 1 asks node 2 for ownership; 3's read and 4's write queue
    // behind it at 1; the request is refused by 0, where it ended.
    let mut o = Obj::new(1, 2, Set::default(), Set::default(), Queue::default());
    let (r, acts) = run(&mut o, |o, out| o.acquire(W, T, out));
    r.unwrap();
    assert_eq!(requests(&acts), vec![(2, MsgKind::WriteReq, 1, T)]);
    assert_eq!(o.probable_owner(), 1);
    let read3 = Msg {
        token: 33,
        ..msg(MsgKind::ReadReq, 3, 0)
    };
    let write4 = Msg {
        token: 44,
        ..msg(MsgKind::WriteReq, 4, 0)
    };
    for m in [read3, write4] {
        let (r, acts) = run(&mut o, |o, out| o.on_message(m, out));
        assert_eq!((r, acts), (Ok(()), vec![]));
    }
    assert_eq!(o.probable_owner(), 4);
    refused_for_token(&mut o, refusal(0, 44));
    let (r, acts) = run(&mut o, |o, out| o.on_message(refusal(0, T), out));
    r.unwrap();
    // In order, to the refusing node; then the access fails.
    assert_eq!(
        requests(&acts),
        vec![(0, MsgKind::ReadReq, 3, 33), (0, MsgKind::WriteReq, 4, 44)]
    );
    assert_eq!(acts.last(), Some(&Action::Refused(W)));
    assert_eq!(o.state(), State::InvCopy);
    assert_eq!((o.held(), o.wanted(), o.has_waiting()), (None, None, false));
    // The last writer that queued here is where requests go now.
    assert_eq!(o.probable_owner(), 4);
    refused(&mut o, msg(MsgKind::Ownership, 2, 1));

    // Nothing queued: it points to the refusing node.
    let mut o = Obj::new(1, 2, Set::default(), Set::default(), Queue::default());
    run(&mut o, |o, out| o.acquire(W, T, out)).0.unwrap();
    let (r, acts) = run(&mut o, |o, out| o.on_message(refusal(0, T), out));
    assert_eq!((r, acts), (Ok(()), vec![Action::Refused(W)]));
    assert_eq!(o.probable_owner(), 0);
    // A request that reaches it now goes there.
    let (r, acts) = run(&mut o, |o, out| o.on_message(read3, out));
    r.unwrap();
    assert_eq!(requests(&acts), vec![(0, MsgKind::ReadReq, 3, 33)]);
}

#[test]
fn a_copy_dropped_for_a_refused_write_is_still_invalidated_by_its_owner() {
    // Node 1 reads from the owner 0, then asks to write; node 2 refuses
    // the request (a node on its path).
    let mut o = Obj::new(1, 0, Set::default(), Set::default(), Queue::default());
    run(&mut o, |o, out| o.acquire(R, T, out)).0.unwrap();
    run(&mut o, |o, out| o.on_message(msg(MsgKind::Copy, 0, 1), out))
        .0
        .unwrap();
    run(&mut o, |o, out| o.release(out)).0.unwrap();
    let t2 = T ^ 0xff00;
    run(&mut o, |o, out| o.acquire(W, t2, out)).0.unwrap();
    let (r, acts) = run(&mut o, |o, out| o.on_message(refusal(2, t2), out));
    assert_eq!((r, acts), (Ok(()), vec![Action::Refused(W)]));
    assert_eq!((o.state(), o.copy_from()), (State::InvCopy, Some(0)));
    // 0 still has 1 in its copyset: its invalidation is acknowledged,
    // once, and nobody else's is taken.
    refused(&mut o, msg(MsgKind::Invalidate, 2, 2));
    let (r, acts) = run(&mut o, |o, out| {
        o.on_message(msg(MsgKind::Invalidate, 0, 2), out)
    });
    assert_eq!(r, Ok(()));
    assert_eq!(
        acts,
        vec![Action::Send {
            to: 0,
            msg: msg(MsgKind::InvAck, 1, 0)
        }]
    );
    assert_eq!(o.copy_from(), None);
    refused(&mut o, msg(MsgKind::Invalidate, 0, 2));

    // The same invalidation while a read is asked for next.
    let mut o = Obj::new(1, 0, Set::default(), Set::default(), Queue::default());
    run(&mut o, |o, out| o.acquire(R, T, out)).0.unwrap();
    run(&mut o, |o, out| o.on_message(msg(MsgKind::Copy, 0, 1), out))
        .0
        .unwrap();
    run(&mut o, |o, out| o.release(out)).0.unwrap();
    run(&mut o, |o, out| o.acquire(W, t2, out)).0.unwrap();
    run(&mut o, |o, out| o.on_message(refusal(2, t2), out))
        .0
        .unwrap();
    let t3 = t2 ^ 1;
    run(&mut o, |o, out| o.acquire(R, t3, out)).0.unwrap();
    let (r, acts) = run(&mut o, |o, out| {
        o.on_message(msg(MsgKind::Invalidate, 0, 2), out)
    });
    r.unwrap();
    assert_eq!(acts.len(), 1);
    assert_eq!((o.state(), o.copy_from()), (State::WaitRead, None));
    assert!(o.copy_is_stale(0));
}

#[test]
fn a_node_on_the_request_path_can_still_refuse_it() {
    // The residual: node 2 forwards node 1's request and knows its token,
    // so its `Refused` makes the access fail; node 3, off the path,
    // cannot guess it.
    let mut o = Obj::new(1, 2, Set::default(), Set::default(), Queue::default());
    run(&mut o, |o, out| o.acquire(W, T, out)).0.unwrap();
    refused_for_token(&mut o, refusal(3, 0));
    let (r, acts) = run(&mut o, |o, out| o.on_message(refusal(2, T), out));
    assert_eq!((r, acts), (Ok(()), vec![Action::Refused(W)]));
    assert_eq!(o.probable_owner(), 2);
}

#[test]
fn a_rebuild_counts_no_refusal_as_a_holding() {
    let mut o = Obj::new(1, 0, Set::default(), Set::default(), Queue::default());
    run(&mut o, |o, out| o.acquire(W, T, out)).0.unwrap();
    assert!(o.is_answer(&refusal(0, T)));
    assert!(!o.is_answer(&refusal(0, T ^ 1)));
    assert_eq!(
        o.holding(&[refusal(0, T)]),
        (Holding::Nothing, Source::Local)
    );
}

#[test]
fn a_node_that_does_not_know_an_object_takes_nothing_but_requests() {
    // ssi.ko drops any other message about an object it does not know
    // without creating an entry: the state machine would refuse it.
    for (me, home) in [(0, 0), (1, 0)] {
        for code in 1..=7 {
            let kind = MsgKind::from_u8(code).unwrap();
            for node in [0, 1, 2] {
                for version in [0, 1, u64::MAX] {
                    for token in [0, T] {
                        let m = Msg {
                            kind,
                            node,
                            version,
                            token,
                        };
                        let mut o =
                            Obj::new(me, home, Set::default(), Set::default(), Queue::default());
                        let (r, _) = run(&mut o, |o, out| o.on_message(m, out));
                        if !kind.is_request() {
                            assert_eq!(r, Err(Error::Unexpected), "{m:?} to {me}");
                        }
                    }
                }
            }
        }
    }
}

/// Refusals counted so far on this thread: (accesses, writes).
fn refused_counts() -> (u64, u64) {
    REFUSED.with(Cell::get)
}

#[test]
fn refusals_in_every_order_keep_every_invariant() {
    REFUSED.with(|c| c.set((0, 0)));
    for (scripts, home) in [
        (vec![vec![W], vec![W], vec![R]], 0),
        (vec![vec![W], vec![W], vec![R]], 2),
        (vec![vec![R, W], vec![R, W], vec![]], 2),
        (vec![vec![W, R], vec![R, W], vec![W]], 1),
        (vec![vec![W, W], vec![W], vec![R, W], vec![W]], 3),
    ] {
        let m = Model::new(scripts).refusing();
        let states = exhaustive(&m, home);
        eprintln!("refusals, home {home}: {states} states");
    }
    let (accesses, writes) = refused_counts();
    eprintln!("refusals, every order: {accesses} accesses refused ({writes} writes)");
    assert!(writes > 0 && accesses > writes);
}

#[test]
fn refusals_in_random_schedules_of_eight_nodes_keep_every_invariant() {
    REFUSED.with(|c| c.set((0, 0)));
    for seed in 1..=300u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let m = Model::new(random_scripts(&mut rng, 8, 6, 3)).refusing();
        let mut w = m.initial(rng.below(8) as NodeId);
        if seed % 3 == 0 {
            // Storage fails too.
            FAILING.with(|f| f.set(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1));
        }
        run_random(&m, &mut w, &mut rng, seed, |_, _| {});
        assert_eq!(w.committed, m.writes_landed(&w), "seed {seed}");
    }
    let (accesses, writes) = refused_counts();
    eprintln!("refusals, 300 random runs: {accesses} accesses refused ({writes} writes)");
    assert!(writes > 0);
}

#[test]
fn a_hostile_node_forging_refusals_breaks_nothing() {
    FORGED_BAD_TOKEN.with(|c| c.set(0));
    REFUSED.with(|c| c.set((0, 0)));
    for (scripts, home) in [
        (vec![vec![W], vec![W], vec![R]], 0),
        (vec![vec![R, W], vec![R, W], vec![]], 2),
    ] {
        let m = Model::with_hostile_node(scripts).refusing();
        let states = exhaustive(&m, home);
        eprintln!("hostile node and refusals, home {home}: {states} states");
    }
    for seed in 1..=100u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let m = Model::with_hostile_node(random_scripts(&mut rng, 8, 6, 3)).refusing();
        let mut w = m.initial(rng.below(8) as NodeId);
        run_random(&m, &mut w, &mut rng, seed, |s, rng| {
            if rng.below(4) != 0 && s.iter().any(|st| !matches!(st, Step::Forge(..))) {
                s.retain(|st| !matches!(st, Step::Forge(..)));
            }
        });
        assert_eq!(w.committed, m.writes_landed(&w), "seed {seed}");
    }
    let (refused, bad_token, _) = forged_counts();
    let (accesses, _) = refused_counts();
    eprintln!(
        "hostile node and refusals: {refused} forgeries refused ({bad_token} for their \
         token), {accesses} accesses refused by the home"
    );
    assert!(bad_token > 0 && accesses > 0);
}

#[test]
fn refusals_on_the_request_path_keep_every_invariant() {
    REFUSED.with(|c| c.set((0, 0)));
    for (scripts, home) in [
        (vec![vec![W], vec![W], vec![R]], 0),
        (vec![vec![R, W], vec![R, W], vec![]], 2),
        (vec![vec![R, R], vec![R], vec![W, R, W]], 2),
        (vec![vec![W, R], vec![R, W], vec![W]], 1),
        (vec![vec![W, W], vec![W], vec![R, W], vec![W]], 3),
    ] {
        let m = Model::new(scripts).refusing_on_path();
        let states = exhaustive(&m, home);
        eprintln!("refusals on the path, home {home}: {states} states");
    }
    for seed in 1..=300u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let m = Model::new(random_scripts(&mut rng, 8, 6, 3)).refusing_on_path();
        let mut w = m.initial(rng.below(8) as NodeId);
        if seed % 3 == 0 {
            FAILING.with(|f| f.set(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1));
        }
        run_random(&m, &mut w, &mut rng, seed, |s, rng| {
            // Refuse rarely, so that requests also get through.
            if rng.below(4) != 0 && s.iter().any(|st| !matches!(st, Step::Refuse(..))) {
                s.retain(|st| !matches!(st, Step::Refuse(..)));
            }
        });
        assert_eq!(w.committed, m.writes_landed(&w), "seed {seed}");
    }
    let (accesses, writes) = refused_counts();
    eprintln!("refusals on the path: {accesses} accesses refused ({writes} writes)");
    assert!(writes > 0);
}

#[test]
fn refusals_and_a_crash_in_every_order() {
    REFUSED.with(|c| c.set((0, 0)));
    for (scripts, home) in [
        (vec![vec![W], vec![W], vec![R]], 0),
        (vec![vec![R, W], vec![R], vec![W]], 0),
    ] {
        let m = Model::with_crashes(scripts).refusing();
        let states = exhaustive(&m, home);
        eprintln!("refusals and crashes, home {home}: {states} states");
    }
    assert!(refused_counts().0 > 0);
}
