// SPDX-License-Identifier: GPL-2.0

//! Containers: cluster-wide objects kept coherent over treenet.
//!
//! Every object this node knows has an [`Entry`]: its coherence state (the
//! `zoid_proto::ssi::coherence` state machine) and, when the node holds a
//! valid copy, its contents.  Objects are identified by (set, object id);
//! their home, where they are created on first touch, is the pset's ION.
//!
//! * Local accesses ([`Containers::access`]) run in the caller's context:
//!   ask the state machine, send what it says, sleep until the access is
//!   granted, run the caller's function on the contents, release.
//! * Messages from other nodes are queued by treenet's callback and
//!   handled by the `ssi_rx` thread.
//! * Every message goes out through [`Containers::send`] (`backlog.rs`),
//!   which never waits for a node's treenet queue: what finds it full
//!   waits in the backlog, which `ssi_rx` sends, each node's messages in
//!   order, as room comes.
//! * A request for an object this node does not know makes it create an
//!   entry, charged to the neighbour that sent the request
//!   (`zoid_proto::ssi::budget`): past `max_objects_per_node` objects for
//!   that neighbour the request is refused, nothing created, and the
//!   requester's access fails with `EAGAIN`.
//!
//! * `/dev/ssi` maps objects into processes ([`Containers::fault`]): a
//!   fault is an access like any other, and the page stays mapped after
//!   it (read-only after a read, writable after a write) until the state
//!   machine gives the contents or the right to write away: then every
//!   mapping of the object is zapped first, and the next access faults.
//!
//! The state machine decides; this file only moves bytes: it builds the
//! messages (header + contents) while the table is locked, so a message
//! carries the contents as they were when the state machine spoke, and
//! sends them after unlocking.

use core::fmt;

use kernel::bindings;
use kernel::prelude::*;
use kernel::rbtree::RBTree;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::{
    new_condvar, new_mutex, new_spinlock, CondVar, CondVarTimeoutResult, Mutex, MutexGuard,
    SpinLock,
};
use kernel::time::{msecs_to_jiffies, Jiffies};

// Not core's u64 formatting: it needs soft-float helpers on 32-bit kernels.
use crate::zoid_kernel::time::{ms_to_jiffies, now_ns, ns_to_ms, random_u64, U64};

use crate::backlog::{Backlog, Outgoing, FLUSH_MS, MAX_BACKLOG_PER_NODE};
use crate::treenet;
use crate::zoid_kernel::kthread::{Kicker, ThreadBody, ThreadCtx};
use crate::zoid_kernel::stats::counters;
use crate::zoid_kernel::sysfs::SysfsWriter;
use crate::zoid_kernel::vfs::{CPath, Export};
use crate::zoid_kernel::vm::{Fault, KernelPage, Mapped, MappingSpace, PAGE_SIZE};
use crate::zoid_proto::ssi::budget::{Budget, Decision, SenderCounts};
use crate::zoid_proto::ssi::checkpoint::{self, Parser, Piece, SetHeader};
use crate::zoid_proto::ssi::coherence::{
    Access, Action, Error as CohError, Msg, MsgKind, NodeId, NodeSet, Object, Request,
    RequestQueue, State,
};
use crate::zoid_proto::ssi::wire::{Header, HEADER_LEN};

use crate::linker::{ClientLinker, IoLinker, MemoryLinker, SetDef};
use crate::zoid_kernel::coherence::{Client, CoherenceProvider};
use kernel::sync::Arc;

mod mappings;

/// The treenet channel ssi speaks on.
pub(crate) const CHANNEL: u16 = 6;

/// Bytes of every object (a page, as Kerrighed's memory containers).
pub(crate) const OBJECT_SIZE: usize = 4096;

// Contents live in a page (so that `/dev/ssi` can map them).
const _: () = assert!(PAGE_SIZE >= OBJECT_SIZE);

/// An object's contents (`len` bytes, the set's object size), in a page
/// of their own.
pub(crate) struct Contents {
    pub(crate) page: KernelPage,
    len: usize,
}

impl Contents {
    /// Zero-filled contents of `len` bytes (at most a page).
    fn new(len: usize) -> Result<Self> {
        if len > PAGE_SIZE {
            return Err(EINVAL);
        }
        Ok(Self {
            page: KernelPage::new()?,
            len,
        })
    }

    fn bytes(&self) -> &[u8] {
        &self.page[..self.len]
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.page[..self.len]
    }
}

/// How long a local access waits for its grant before it gives up.
const GRANT_TIMEOUT_MS: u32 = 30_000;
/// How often a waiting access looks at its client's give-up flag.
const ABORT_POLL_MS: u32 = 250;

/// How long a fault keeps its access by default, in microseconds (see
/// [`Containers::linger`]; `linger_us` in sysfs).
pub(crate) const LINGER_US: u32 = 2_000;

/// How many objects a node creates by default for requests one neighbour
/// sends it (`max_objects_per_node`): 256 MiB of 4 KiB pages.
pub(crate) const MAX_OBJECTS_PER_NODE: u32 = 65_536;
/// The largest `max_objects_per_node` (64 GiB of 4 KiB pages).
pub(crate) const MAX_OBJECTS_PER_NODE_LIMIT: u32 = 1 << 24;

/// How many exited processes `ssi_rx` can be told about at once (more are
/// left to the linger timeout).
const EXITED_SLOTS: usize = 32;

/// Actions whose room is taken before a protocol event changes anything:
/// every event but one that invalidates or forwards to many nodes at once
/// fits, so the state machine's actions need no memory as it goes.
pub(crate) const ACTION_ROOM: usize = 8;

/// Thread groups that exited while faults lingered, for `ssi_rx` (filled
/// by the exit probe, which must not sleep or allocate).
pub(crate) struct Exited {
    tgids: [i32; EXITED_SLOTS],
    len: usize,
}

/// A fault's lingering access: set, object, which linger it is (the
/// entry's `lingering` says the same while it lasts), when it ends (ns),
/// and the thread group of the task that faulted.
#[derive(Clone, Copy)]
pub(crate) struct Linger {
    set: u32,
    object: u64,
    until: u64,
    /// `until`, or [`NOT_DUE`] while a client's fault still runs.
    due: u64,
    tgid: i32,
}

/// A linger whose fault has not ended yet ([`Containers::hold_for_fault`]).
const NOT_DUE: u64 = u64::MAX;

/// The copyset, on the heap.
#[derive(Default)]
pub(crate) struct CopySet(KVec<NodeId>);

impl NodeSet for CopySet {
    fn insert(&mut self, node: NodeId) -> Result<(), CohError> {
        if !self.0.contains(&node) {
            self.0
                .push(node, GFP_KERNEL)
                .map_err(|_| CohError::NoMemory)?;
        }
        Ok(())
    }
    fn remove(&mut self, node: NodeId) {
        self.0.retain(|n| *n != node);
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
        for &n in self.0.iter() {
            f(n);
        }
        self.0.clear();
    }
}

/// How many objects this node created for requests from each neighbour.
#[derive(Default)]
pub(crate) struct Charges(RBTree<NodeId, u64>);

impl SenderCounts for Charges {
    fn get_mut(&mut self, node: NodeId) -> Option<&mut u64> {
        self.0.get_mut(&node)
    }
    fn get_or_insert(&mut self, node: NodeId) -> Result<&mut u64, CohError> {
        if self.0.get(&node).is_none() {
            self.0
                .try_create_and_insert(node, 0, GFP_KERNEL)
                .map_err(|_| CohError::NoMemory)?;
        }
        self.0.get_mut(&node).ok_or(CohError::NoMemory)
    }
    fn get(&self, node: NodeId) -> u64 {
        self.0.get(&node).copied().unwrap_or(0)
    }
}

impl Charges {
    /// Each neighbour charged, with its count, in ascending node order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (NodeId, u64)> + '_ {
        self.0.iter().map(|(&n, &c)| (n, c))
    }
}

/// Requests waiting for this node's turn as owner (at most one per node).
#[derive(Default)]
pub(crate) struct Waiting(KVec<Request>);

impl RequestQueue for Waiting {
    fn push_back(&mut self, r: Request) -> Result<(), CohError> {
        self.0.push(r, GFP_KERNEL).map_err(|_| CohError::NoMemory)
    }
    fn front(&self) -> Option<Request> {
        self.0.first().copied()
    }
    fn pop_front(&mut self) -> Option<Request> {
        if self.0.is_empty() {
            None
        } else {
            self.0.remove(0).ok()
        }
    }
}

/// One object as this node knows it.
pub(crate) struct Entry {
    pub(crate) coh: Object<Waiting, CopySet>,
    /// The contents, while the node has a valid copy.
    pub(crate) contents: Option<Contents>,
    /// The local waiter gave up: release the access as soon as it is
    /// granted.
    pub(crate) abandoned: bool,
    /// Where the local request went, until it is granted.
    pub(crate) asked: Option<u16>,
    /// A rebuild found that its only contents died with a node: accesses
    /// fail (`EIO`) instead of finding it recreated.
    pub(crate) lost: bool,
    /// The held access is a fault's, lingering until then (ns; released
    /// by `ssi_rx`, or taken over by the node's next local access).
    pub(crate) lingering: Option<u64>,
    /// Contents the set's linker filled before the home creates the
    /// object ([`Containers::prefill`]).
    pub(crate) prefilled: Option<Contents>,
    /// How many of this node's requests for the object were refused
    /// (`Refused`): a waiting access whose request was sees it grow.
    pub(crate) refusals: u32,
}

impl Entry {
    /// Whether the node the local request went to is unreachable now
    /// (treenet says it is down): its answer will not come.
    fn asked_is_gone(&self) -> bool {
        self.asked.is_some_and(|n| !treenet::reachable(n))
    }
}

counters! {
    /// ssi's counters, shown in `/sys/kernel/ssi/stats`.
    pub(crate) struct Counters {
        reads: "Local read accesses asked for.",
        writes: "Local write accesses asked for.",
        granted_locally: "Accesses granted without waiting for another node.",
        granted_remotely: "Accesses granted by a message from another node.",
        msgs_sent: "Messages handed to treenet (coherence and membership).",
        msgs_received: "Coherence messages received.",
        invalidations: "Invalidations received.",
        first_touches: "Objects created here (zero-filled) at first touch.",
        send_failed: "Messages treenet refused (or that could not be built, or kept in the backlog, for lack of memory).",
        sends_deferred: "Messages that found their node's treenet queue full, or messages to it waiting already, and waited in the backlog for ssi_rx to send them.",
        backlog_dropped: "Messages dropped from the backlog: their node's messages there passed max_backlog_per_node (it took nothing for long), or it went down.",
        malformed: "Received messages with a bad header or contents length.",
        forged: "Received coherence messages (not requests) that named another node than their sender: dropped.",
        unexpected: "Received messages the protocol never sends in that state or from that sender (a forged InvAck, Invalidate, Copy or Ownership): dropped.",
        bad_token: "Received Copy, Ownership or Refused messages, while waiting for an answer, without the token of this node's request (forged by a node the request did not pass): dropped.",
        refused_budget: "Requests for objects this node did not know refused, nothing created: the neighbour that sent them was past max_objects_per_node (the requester is answered Refused).",
        refused_answers: "Refused answers taken: the node a local access's request reached would have had to create the object and was past its budget for the node that sent it the request (the access fails with EAGAIN).",
        nomem_retries: "Events refused for lack of memory, given again later.",
        dropped_nomem: "Messages lost: no memory to queue them for ssi_rx (or to give them to it again).",
        actions_lost: "Protocol actions (a message to send, contents to keep or drop, a grant) an event gave that found no memory to be noted, past the room taken before the event: a node or a local access may then wait until its timeout.",
        timeouts: "Local accesses that gave up waiting.",
        peer_lost: "Local accesses failed because the node asked is down.",
        checkpoints: "Sets written to a checkpoint file.",
        rebuilds: "Rebuilds this node took part in (a node died, left or joined).",
        lost_objects: "Objects a rebuild found lost (their only contents died).",
        lost_accesses: "Accesses refused (EIO) because the object is lost.",
        kept: "Coherence messages kept, unhandled, during a rebuild.",
        from_excluded: "Coherence messages dropped: their sender is not a member.",
        readmits_deferred: "Heartbeats of a dead node not let in again yet: it did not report in the last rebuild that let it in (out for 15 s, doubled each time in a row, up to 16 min).",
        not_member: "Coherence messages dropped: their sender, or the node a request asks for, is outside the object's set (sets limited by members).",
        not_member_accesses: "Local accesses refused (EACCES): this node is outside the set.",
        heartbeats: "Heartbeats sent (CN) or received (ION).",
        restores: "Checkpoint files restored.",
        bad_checkpoints: "Checkpoint files refused as damaged.",
        faults: "Page faults of /dev/ssi mappings (a write to a read-only page included).",
        unmaps: "Times an object's /dev/ssi mappings were taken away.",
        forks: "Tasks created on this node (while process_events is on).",
        execs: "Programs started on this node (while process_events is on).",
        exits: "Tasks that exited on this node (while process_events is on).",
        released_at_exit: "Lingering fault accesses released because their process exited.",
        linker_errors: "First touches or flushes a set's I/O linker failed (the access fails).",
        flushes: "Objects written back to their set's store by flush.",
        losses_acknowledged: "Lost objects an administrator acknowledged (lost, on the ION).",
        clients_attached: "Modules that attached to a set to cache through it (zoidfs consistency=ssi mounts).",
        aborted: "Local accesses of a client that gave up (EIO): its zoidfs mount's umount -f.",
    }
}

/// Messages to send once the table is unlocked.
pub(crate) type Outbox = KVec<(u16, KVec<u8>)>;

/// What the table lock guards: the objects, the objects created for each
/// neighbour, and this node's part in a rebuild (`membership.rs`).
///
/// Entries are never removed (a rebuild resets them in place, a restore
/// writes them, an acknowledged loss only clears `lost`), so the counts of
/// `budget` only grow until the module is unloaded.  Entries a rebuild
/// creates (the objects this node owns from then on, lost ones) are the
/// coordinator's decision and charged to no one; nor are local accesses.
#[derive(Default)]
pub(crate) struct Table {
    pub(crate) objects: RBTree<(u32, u64), Entry>,
    pub(crate) budget: Budget<Charges>,
    pub(crate) rebuild: crate::membership::Participant,
}

/// The table, locked.
type TableGuard<'a> = MutexGuard<'a, Table>;

/// A decoded message waiting to be handled (again): sender, header and
/// the contents it carries.
pub(crate) type Pending = (u16, Header, Option<Contents>);

/// The objects of all sets on this node.
#[pin_data]
pub(crate) struct Containers {
    pub(crate) counters: Counters,
    #[pin]
    pub(crate) table: Mutex<Table>,
    /// Signalled when an access is granted or an object settles.
    #[pin]
    pub(crate) changed: CondVar,
    /// Messages from treenet, for the `ssi_rx` thread.
    #[pin]
    inbox: Mutex<KVec<(u16, treenet::Message)>>,
    /// Messages refused for lack of memory, given again later.
    #[pin]
    retry: Mutex<KVec<Pending>>,
    /// Accesses faults took, with when `ssi_rx` releases them.
    #[pin]
    pub(crate) lingering: Mutex<KVec<Linger>>,
    /// How many accesses linger (read without the lock by the exit probe).
    lingers: Atomic<u32>,
    /// How long a fault's access lingers (`linger_us`).
    pub(crate) linger_us: Atomic<u32>,
    /// How many objects this node creates for requests one neighbour
    /// sends it (`max_objects_per_node`).
    pub(crate) max_objects_per_node: Atomic<u32>,
    /// Processes that exited with faults lingering (`process_events`).
    #[pin]
    exited: SpinLock<Exited>,
    /// Messages waiting for room in their node's treenet queue
    /// (`backlog.rs`; a leaf lock).
    #[pin]
    pub(crate) backlog: Mutex<Backlog>,
    /// How many bytes of messages wait for one node at most
    /// (`max_backlog_per_node`).
    pub(crate) max_backlog_per_node: Atomic<u32>,
    /// When an unexpected message was last logged (ms, wrapping; 0:
    /// never).
    unexpected_logged_ms: Atomic<u32>,
    pub(crate) rx_kicker: Kicker,
    /// Heartbeats, the coordinator and its knobs (`membership.rs`).
    #[pin]
    pub(crate) membership: crate::membership::MembershipState,
    /// Defined sets (`sets`; undefined ones are memory sets of 4 KiB
    /// objects).
    #[pin]
    pub(crate) sets: Mutex<RBTree<u32, SetDef>>,
    /// The linker of undefined sets.
    pub(crate) memory: Arc<dyn IoLinker>,
    /// Where `/dev/ssi` maps objects: page offset = object id, whatever
    /// the set (zapping an object zaps that id in every set: an extra
    /// fault at worst).
    mappings: MappingSpace,
}

impl Containers {
    /// Containers of this node (which treenet says when the first object
    /// is touched: at load time, its links may not be up yet).
    pub(crate) fn new() -> Result<impl PinInit<Self, Error>> {
        let rx_kicker = Kicker::new()?;
        let mappings = MappingSpace::new()?;
        let membership = crate::membership::MembershipState::new()?;
        let memory: Arc<dyn IoLinker> = Arc::new(MemoryLinker, GFP_KERNEL)?;
        Ok(try_pin_init!(Self {
            counters: Counters::new(),
            table <- new_mutex!(Table::default(), "ssi::table"),
            changed <- new_condvar!("ssi::changed"),
            inbox <- new_mutex!(KVec::new(), "ssi::inbox"),
            retry <- new_mutex!(KVec::new(), "ssi::retry"),
            lingering <- new_mutex!(KVec::new(), "ssi::lingering"),
            lingers: Atomic::new(0),
            linger_us: Atomic::new(LINGER_US),
            max_objects_per_node: Atomic::new(MAX_OBJECTS_PER_NODE),
            exited <- new_spinlock!(
                Exited {
                    tgids: [0; EXITED_SLOTS],
                    len: 0
                },
                "ssi::exited"
            ),
            backlog <- new_mutex!(Backlog::default(), "ssi::backlog"),
            max_backlog_per_node: Atomic::new(MAX_BACKLOG_PER_NODE),
            unexpected_logged_ms: Atomic::new(0),
            rx_kicker,
            membership <- membership,
            sets <- new_mutex!(RBTree::new(), "ssi::sets"),
            memory,
            mappings,
        }? Error))
    }

    /// treenet's news that `node` went up or down: waiters look again
    /// whether the node they asked is still there.  What waited to be
    /// sent to a node that went down is dropped.
    pub(crate) fn peer_event(&self, node: u16, up: bool) {
        if !up {
            self.drop_backlog(node);
            self.member_down(node);
        }
        self.changed.notify_all();
    }

    /// treenet's callback: queue for the `ssi_rx` thread.
    pub(crate) fn deliver(&self, src: u16, msg: treenet::Message) {
        if self.inbox.lock().push((src, msg), GFP_KERNEL).is_err() {
            // Lost: the protocol cannot recover a lost message; count it.
            self.counters.dropped_nomem.fetch_add(1, Relaxed);
            pr_err!("ssi: out of memory queueing a message from node {src}\n");
            return;
        }
        self.rx_kicker.kick();
    }

    /// Turns the state machine's actions into messages and contents
    /// changes on `entry` (`carried`: the contents of the message being
    /// handled).  Returns whether an access was granted.
    pub(crate) fn apply(
        &self,
        set: u32,
        object: u64,
        entry: &mut Entry,
        actions: &[Action],
        carried: &mut Option<Contents>,
        out: &mut Outbox,
    ) -> Result<bool> {
        let mut granted = false;
        if actions.iter().any(takes_mapping_away) {
            self.unmap(object);
        }
        let (size, linker) = self.set_info(set);
        for a in actions {
            match *a {
                Action::Send { to, msg } => {
                    let Ok(to) = u16::try_from(to) else {
                        self.counters.send_failed.fetch_add(1, Relaxed);
                        continue;
                    };
                    let mut bytes = KVec::with_capacity(HEADER_LEN + size, GFP_KERNEL)?;
                    bytes.extend_from_slice(&[0u8; HEADER_LEN], GFP_KERNEL)?;
                    if msg.kind.carries_contents() {
                        if let Some(c) = entry.contents.as_ref() {
                            linker.export(object, c.bytes(), &mut bytes)?;
                        }
                    }
                    let h = Header {
                        set,
                        object,
                        msg,
                        contents_len: (bytes.len() - HEADER_LEN) as u32,
                    };
                    bytes[..HEADER_LEN].copy_from_slice(&h.encode());
                    out.push((to, bytes), GFP_KERNEL)?;
                }
                Action::Install => {
                    entry.contents = carried.take();
                    linker.insert(object);
                }
                Action::DropContents => {
                    entry.contents = None;
                    linker.invalidate(object);
                }
                Action::FirstTouch => {
                    self.counters.first_touches.fetch_add(1, Relaxed);
                    let c = match entry.prefilled.take() {
                        Some(c) => c,
                        None => {
                            let mut c = Contents::new(size)?;
                            linker.first_touch(object, c.bytes_mut()).inspect_err(|_| {
                                self.counters.linker_errors.fetch_add(1, Relaxed);
                            })?;
                            c
                        }
                    };
                    entry.contents = Some(c);
                }
                Action::Granted(_) => {
                    entry.asked = None;
                    granted = true;
                }
                Action::Refused(_) => {
                    self.counters.refused_answers.fetch_add(1, Relaxed);
                    entry.asked = None;
                    // The waiting access sees it and fails; one that gave
                    // up has nothing to release.
                    entry.refusals = entry.refusals.wrapping_add(1);
                    entry.abandoned = false;
                }
            }
        }
        Ok(granted)
    }

    /// The ids of the objects of set `set` this node knows, ascending.
    fn objects_of(&self, set: u32) -> Result<KVec<u64>> {
        let t = self.table.lock();
        let mut ids = KVec::new();
        // Keys come in order: objects in ascending id.
        for &(s, o) in t.objects.keys() {
            if s == set {
                ids.push(o, GFP_KERNEL)?;
            }
        }
        Ok(ids)
    }

    /// `flush` (on the ION): writes every object of set `set` back to its
    /// linker's store, each under a read access (a coherent value: the
    /// owner's latest write).  Returns the objects written.
    pub(crate) fn flush(&self, set: u32) -> Result<u64> {
        if treenet::node_id()? != treenet::ion()? {
            return Err(EINVAL);
        }
        let (_, linker) = self.set_info(set);
        let ids = self.objects_of(set)?;
        let mut done = 0;
        for &id in ids.iter() {
            self.access(set, id, Access::Read, |c| linker.flush(id, c))?
                .inspect_err(|_| {
                    self.counters.linker_errors.fetch_add(1, Relaxed);
                })?;
            done += 1;
            self.counters.flushes.fetch_add(1, Relaxed);
        }
        Ok(done)
    }

    /// A sink for a protocol event's actions, into `actions`: one that
    /// finds no memory (past the room taken before the event) is counted
    /// lost.
    pub(crate) fn action_sink<'a>(
        &'a self,
        actions: &'a mut KVec<Action>,
    ) -> impl FnMut(Action) + 'a {
        move |a| {
            if actions.push(a, GFP_KERNEL).is_err() {
                self.counters.actions_lost.fetch_add(1, Relaxed);
            }
        }
    }

    /// Puts `m` on `list`, to be handled again later; one that finds no
    /// memory is lost, counted.
    fn give_again(&self, list: &mut KVec<Pending>, m: Pending) {
        if list.push(m, GFP_KERNEL).is_err() {
            self.counters.dropped_nomem.fetch_add(1, Relaxed);
        }
    }

    /// Counts a message the protocol never sends in that state or from
    /// that sender (`unexpected`), dropped, and says which in the log at
    /// most once a second.
    pub(crate) fn unexpected(&self, src: u16, what: fmt::Arguments<'_>) {
        self.counters.unexpected.fetch_add(1, Relaxed);
        // (Truncated to 32 bits: only differences of a second matter.)
        let now = (ns_to_ms(now_ns()) as u32).max(1);
        let last = self.unexpected_logged_ms.load(Relaxed);
        if last == 0 || now.wrapping_sub(last) >= 1000 {
            self.unexpected_logged_ms.store(now, Relaxed);
            pr_notice!("ssi: unexpected {what} from node {src}: dropped (counted in unexpected)\n");
        }
    }

    /// Sends every message of `out` ([`Containers::send`]: without
    /// waiting; one refused is counted).  Call it without the table.
    pub(crate) fn send_all(&self, out: Outbox) {
        for (to, bytes) in out {
            self.send(to, Outgoing::Built(bytes));
        }
    }

    /// Fills an object the home has not created yet from its set's
    /// linker, before the state machine creates it: a store that fails
    /// (a read error, an offset past what a file can hold) leaves the
    /// object uncreated and the access refused, instead of created and
    /// held without contents.
    fn prefill(&self, set: u32, object: u64, e: &mut Entry) -> Result {
        if e.coh.state() != State::InvOwner || e.contents.is_some() || e.prefilled.is_some() {
            return Ok(());
        }
        let (size, linker) = self.set_info(set);
        let mut c = Contents::new(size)?;
        linker.first_touch(object, c.bytes_mut()).inspect_err(|_| {
            self.counters.linker_errors.fetch_add(1, Relaxed);
        })?;
        e.prefilled = Some(c);
        Ok(())
    }

    /// A first-known object: its home is the pset's ION (`EHOSTUNREACH`
    /// while a CN's ION is not up, `ENODEV` before treenet is).
    pub(crate) fn new_entry() -> Result<Entry> {
        let me = NodeId::from(treenet::node_id()?);
        let home = NodeId::from(treenet::ion()?);
        Ok(Entry {
            coh: Object::new(
                me,
                home,
                CopySet::default(),
                CopySet::default(),
                Waiting::default(),
            ),
            contents: None,
            abandoned: false,
            asked: None,
            lingering: None,
            lost: false,
            prefilled: None,
            refusals: 0,
        })
    }

    /// Answers `h`, a request for an object this node does not create (its
    /// sender is past `max_objects_per_node`): `Refused` to the node that
    /// asked, with the request's token.  Call it without the table.  (Not
    /// inlined: its header stays out of `ssi_rx`'s frame.)
    #[inline(never)]
    fn refuse(&self, h: &Header) {
        let Ok(me) = treenet::node_id() else {
            self.counters.send_failed.fetch_add(1, Relaxed);
            return;
        };
        let Ok(to) = u16::try_from(h.msg.node) else {
            self.counters.send_failed.fetch_add(1, Relaxed);
            return;
        };
        if to == me {
            // A request in this node's name: not its own (it would know
            // the object).
            self.unexpected(to, format_args!("{:?} in this node's name", h.msg.kind));
            return;
        }
        let refusal = Header {
            set: h.set,
            object: h.object,
            msg: Msg {
                kind: MsgKind::Refused,
                node: NodeId::from(me),
                version: 0,
                token: h.msg.token,
            },
            contents_len: 0,
        };
        self.send(to, Outgoing::Borrowed(&refusal.encode()));
    }

    /// Runs `f` on the contents of object (`set`, `object`) with `access`:
    /// waits for the object to be here (a copy to read, ownership to
    /// write), cluster-wide coherent.  `ETIMEDOUT` if it does not come.
    pub(crate) fn access<R>(
        &self,
        set: u32,
        object: u64,
        access: Access,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> Result<R> {
        self.hold(set, object, access)?;
        let r = self.with_held(set, object, f);
        self.unhold(set, object);
        r
    }

    /// Waits until this node holds `access` on the object; until
    /// [`Containers::unhold`], the object stays here (other nodes' requests
    /// for it wait).
    fn hold(&self, set: u32, object: u64, access: Access) -> Result {
        match access {
            Access::Read => self.counters.reads.fetch_add(1, Relaxed),
            Access::Write => self.counters.writes.fetch_add(1, Relaxed),
        };
        let key = (set, object);
        let mut left = msecs_to_jiffies(GRANT_TIMEOUT_MS);
        if !self.member_here(set) {
            self.counters.not_member_accesses.fetch_add(1, Relaxed);
            return Err(EACCES);
        }
        if self.client_aborted(set) {
            self.counters.aborted.fetch_add(1, Relaxed);
            return Err(EIO);
        }
        let mut t = self.table.lock();
        // Ask (once nothing else of this node holds or wants the object,
        // and no rebuild is under way).  The entry's refusals when this
        // access asked: one more, and its request was refused.
        let refusals = loop {
            if t.objects.get(&key).is_none() {
                t.objects
                    .try_create_and_insert(key, Self::new_entry()?, GFP_KERNEL)?;
            }
            let frozen = t.rebuild.is_frozen();
            let leaving = t.rebuild.is_leaving();
            let Some(e) = t.objects.get_mut(&key) else {
                return Err(ENOMEM);
            };
            if e.lost {
                self.counters.lost_accesses.fetch_add(1, Relaxed);
                return Err(EIO);
            }
            if leaving {
                // This node is leaving the cluster (or left it).
                return Err(ENODEV);
            }
            // Room before anything changes: without it the access fails.
            let mut actions = KVec::with_capacity(ACTION_ROOM, GFP_KERNEL)?;
            if !frozen {
                self.prefill(set, object, e)?;
            }
            let asked = if frozen {
                Err(CohError::Busy)
            } else {
                // The request's token: only the answer that carries it
                // back is taken.
                e.coh
                    .acquire(access, random_u64(), &mut self.action_sink(&mut actions))
            };
            match asked {
                Ok(()) => {
                    let refusals = e.refusals;
                    for a in actions.iter() {
                        if let Action::Send { to, msg } = a {
                            if matches!(msg.kind, MsgKind::ReadReq | MsgKind::WriteReq) {
                                e.asked = u16::try_from(*to).ok();
                            }
                        }
                    }
                    let mut out = KVec::new();
                    let now = self.apply(set, object, e, &actions, &mut None, &mut out)?;
                    if now {
                        self.counters.granted_locally.fetch_add(1, Relaxed);
                    }
                    drop(t);
                    self.send_all(out);
                    t = self.table.lock();
                    break refusals;
                }
                Err(CohError::Busy) if e.lingering.is_some() && !frozen => {
                    // A fault of this node lingers: its task has gone on.
                    e.lingering = None;
                    if access == Access::Read || e.coh.held() == Some(Access::Write) {
                        // Its access serves this one too: take it over
                        // (releasing it could let a waiting request take
                        // the page before either task used it).
                        self.counters.granted_locally.fetch_add(1, Relaxed);
                        return Ok(());
                    }
                    // A read lingers, a write is wanted: end it and ask.
                    let out = self.release(set, object, e);
                    drop(t);
                    self.changed.notify_all();
                    self.send_all(out);
                    t = self.table.lock();
                    continue;
                }
                Err(CohError::Busy) => {
                    if e.abandoned && e.asked_is_gone() {
                        // An earlier request is lost with its node.
                        self.counters.peer_lost.fetch_add(1, Relaxed);
                        return Err(EHOSTUNREACH);
                    }
                }
                Err(_) => return Err(EIO),
            }
            if let Err(e) = self.wait_for_change(&mut t, set, &mut left) {
                self.count_give_up(e);
                return Err(e);
            }
        };
        // Wait for the grant.  Once asked, the request cannot be taken
        // back: a waiter that gives up leaves the grant to be released by
        // whoever receives it.
        loop {
            let Some(e) = t.objects.get_mut(&key) else {
                return Err(EIO);
            };
            if e.refusals != refusals {
                // Refused by the node that would have created the object
                // (past its budget for the node that sent it the request):
                // nothing is asked for any more (another access of this
                // node may have asked, and be granted, since).
                return Err(EAGAIN);
            }
            if e.coh.held() == Some(access) {
                break;
            }
            if e.lost {
                // A rebuild found it lost while this access waited.
                self.counters.lost_accesses.fetch_add(1, Relaxed);
                e.abandoned = true;
                return Err(EIO);
            }
            if e.asked_is_gone() {
                // No answer will come (treenet said the node is down).
                self.counters.peer_lost.fetch_add(1, Relaxed);
                e.abandoned = true;
                return Err(EHOSTUNREACH);
            }
            if let Err(err) = self.wait_for_change(&mut t, set, &mut left) {
                let Some(e) = t.objects.get_mut(&key) else {
                    return Err(err);
                };
                if e.refusals != refusals {
                    // Nothing left to give back.
                    return Err(EAGAIN);
                }
                if e.coh.held() == Some(access) {
                    break;
                }
                e.abandoned = true;
                self.count_give_up(err);
                return Err(err);
            }
        }
        Ok(())
    }

    /// One wait of an access for `changed`: at most `left` jiffies (what
    /// is left of them is written back), in slices of `ABORT_POLL_MS` so
    /// that a client's give-up is seen.  `ETIMEDOUT` once `left` ran out,
    /// `EINTR` on a signal, `EIO` once the client gave up (the caller
    /// counts, with [`Containers::count_give_up`], if it does give up).
    fn wait_for_change(&self, t: &mut TableGuard<'_>, set: u32, left: &mut Jiffies) -> Result {
        let slice = (*left).min(msecs_to_jiffies(ABORT_POLL_MS));
        let unslept = match self.changed.wait_interruptible_timeout(t, slice) {
            CondVarTimeoutResult::Signal { .. } => return Err(EINTR),
            CondVarTimeoutResult::Timeout => 0,
            CondVarTimeoutResult::Woken { jiffies } => jiffies,
        };
        *left = left.saturating_sub(slice.saturating_sub(unslept));
        if self.client_aborted(set) {
            return Err(EIO);
        }
        if *left == 0 {
            return Err(ETIMEDOUT);
        }
        Ok(())
    }

    /// Counts an access that gave up waiting with `err`.
    fn count_give_up(&self, err: Error) {
        if err == ETIMEDOUT {
            self.counters.timeouts.fetch_add(1, Relaxed);
        } else if err == EIO {
            self.counters.aborted.fetch_add(1, Relaxed);
        }
    }

    /// Whether the client attached to `set` (a zoidfs mount) gave up.
    /// Takes `sets` (after the table, if the caller holds it).
    fn client_aborted(&self, set: u32) -> bool {
        let client = self.sets.lock().get(&set).and_then(|d| d.client.clone());
        client.is_some_and(|c| c.aborted())
    }

    /// Runs `f` on the contents of a held object (taken from processes
    /// that map it first, so they cannot change them meanwhile: their next
    /// access faults and waits for the object).
    fn with_held<R>(&self, set: u32, object: u64, f: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        let mut t = self.table.lock();
        let e = t.objects.get_mut(&(set, object)).ok_or(EIO)?;
        if e.coh.held().is_none() {
            return Err(EIO);
        }
        self.unmap(object);
        e.contents.as_mut().map(|c| f(c.bytes_mut())).ok_or(EIO)
    }

    /// Writes set `set` to the file `path` (absolute; created or
    /// truncated): every object of the set, read coherently while all of
    /// them are held, so the file is one consistent state of the set (a
    /// write elsewhere waits until the dump ends).  Only the home (the ION)
    /// knows every object (`EINVAL` elsewhere).  Returns the objects and
    /// bytes written.
    pub(crate) fn checkpoint(&self, set: u32, path: &[u8]) -> Result<(u64, u64)> {
        if treenet::node_id()? != treenet::ion()? {
            return Err(EINVAL);
        }
        let ids = self.objects_of(set)?;
        let file = Export::open(c"/")?.open_file(
            &CPath::new(path)?,
            bindings::O_WRONLY | bindings::O_CREAT | bindings::O_TRUNC,
            0o600,
        )?;
        let mut held = 0;
        let r = (|| {
            for &id in ids.iter() {
                self.hold(set, id, Access::Read)?;
                held += 1;
            }
            let mut pos = 0i64;
            file.write_all(&checkpoint::encode_file_header(1), &mut pos)?;
            let size = self.set_info(set).0;
            let h = SetHeader {
                set,
                object_size: size as u32,
                objects: ids.len() as u64,
            };
            file.write_all(&h.encode(), &mut pos)?;
            let mut buf = KVec::with_capacity(size, GFP_KERNEL)?;
            buf.resize(size, 0, GFP_KERNEL)?;
            for &id in ids.iter() {
                self.with_held(set, id, |c| {
                    if c.len() == buf.len() {
                        buf.copy_from_slice(c);
                        Ok(())
                    } else {
                        // Not the set's size (a definition came late).
                        Err(EINVAL)
                    }
                })??;
                file.write_all(&checkpoint::encode_record_header(id, &buf), &mut pos)?;
                file.write_all(&buf, &mut pos)?;
            }
            file.fsync()?;
            Ok((ids.len() as u64, pos as u64))
        })();
        for &id in ids.iter().take(held) {
            self.unhold(set, id);
        }
        if r.is_ok() {
            self.counters.checkpoints.fetch_add(1, Relaxed);
        }
        r
    }

    /// Restores every set of the checkpoint file `path`: the whole file is
    /// checked first (`EBADMSG` if damaged, `EINVAL` for objects of another
    /// size), then each object is written (a write access: every copy
    /// elsewhere is invalidated).  Returns the sets and objects restored.
    pub(crate) fn restore(&self, path: &[u8]) -> Result<(u32, u64)> {
        let file = Export::open(c"/")?.open_file(&CPath::new(path)?, bindings::O_RDONLY, 0)?;
        let mut buf = KVec::with_capacity(OBJECT_SIZE, GFP_KERNEL)?;
        let mut done = (0, 0);
        for apply in [false, true] {
            let mut p = Parser::new();
            let mut pos = 0i64;
            let (mut sets, mut objects) = (0u32, 0u64);
            while !p.is_done() {
                let n = p.need();
                buf.resize(n, 0, GFP_KERNEL)?;
                if !file.read_exact(&mut buf, &mut pos)? {
                    // Truncated.
                    self.counters.bad_checkpoints.fetch_add(1, Relaxed);
                    return Err(EBADMSG);
                }
                let piece = p.feed(&buf).map_err(|_| {
                    self.counters.bad_checkpoints.fetch_add(1, Relaxed);
                    EBADMSG
                })?;
                match piece {
                    Piece::Set(h) => {
                        if h.object_size as usize != self.set_info(h.set).0 {
                            // Defined with another object size here.
                            return Err(EINVAL);
                        }
                        sets += 1;
                    }
                    Piece::Record { set, object } => {
                        objects += 1;
                        if apply {
                            self.access(set, object, Access::Write, |c| {
                                if c.len() == buf.len() {
                                    c.copy_from_slice(&buf);
                                    Ok(())
                                } else {
                                    // The set's size changed meanwhile.
                                    Err(EINVAL)
                                }
                            })??;
                        }
                    }
                    Piece::File { .. } | Piece::RecordHeader => {}
                }
            }
            // Nothing may follow the last record.
            let mut more = [0u8; 1];
            if file.read(&mut more, Some(&mut pos))? != 0 {
                self.counters.bad_checkpoints.fetch_add(1, Relaxed);
                return Err(EBADMSG);
            }
            done = (sets, objects);
        }
        self.counters.restores.fetch_add(1, Relaxed);
        Ok(done)
    }

    /// Releases the held access of `e`.
    pub(crate) fn release(&self, set: u32, object: u64, e: &mut Entry) -> Outbox {
        // The access ends whether or not there is room: without it each
        // action finds memory as it comes, or is counted lost.
        let mut actions: KVec<Action> =
            KVec::with_capacity(ACTION_ROOM, GFP_KERNEL).unwrap_or_default();
        let released = e.coh.release(&mut self.action_sink(&mut actions));
        if let Err(err) = released {
            if err == CohError::NoMemory {
                self.counters.nomem_retries.fetch_add(1, Relaxed);
            }
        }
        let mut out = KVec::new();
        if self
            .apply(set, object, e, &actions, &mut None, &mut out)
            .is_err()
        {
            self.counters.send_failed.fetch_add(1, Relaxed);
        }
        out
    }

    /// Handles one message from `src` (in the `ssi_rx` thread).  Returns
    /// it when it must be given again later (no memory).
    fn handle(&self, src: u16, h: Header, mut carried: Option<Contents>) -> Option<Pending> {
        let key = (h.set, h.object);
        let mut t = self.table.lock();
        if !t.rebuild.accepts_from(src) {
            self.counters.from_excluded.fetch_add(1, Relaxed);
            return None;
        }
        if t.rebuild.is_recorded() {
            // Frozen: in flight to this node at the snapshot.
            self.counters.kept.fetch_add(1, Relaxed);
            if t.rebuild.keep((src, h, carried)).is_err() {
                self.counters.dropped_nomem.fetch_add(1, Relaxed);
            }
            return None;
        }
        if t.objects.get(&key).is_none() {
            if !h.msg.kind.is_request() {
                // Nothing else concerns an object this node does not
                // know (a new one waits for nothing): no entry for it.
                self.unexpected(
                    src,
                    format_args!(
                        "{:?} for unknown object {} {}",
                        h.msg.kind,
                        h.set,
                        U64(h.object)
                    ),
                );
                return None;
            }
            let Ok(entry) = Self::new_entry() else {
                // treenet delivered it, so it is up: not from our pset.
                self.unexpected(
                    src,
                    format_args!("{:?} outside this node's pset", h.msg.kind),
                );
                return None;
            };
            // Charged to the neighbour that sent it (whose link makes
            // this node allocate), a forwarder included.
            let max = u64::from(self.max_objects_per_node.load(Relaxed));
            match t.budget.charge(NodeId::from(src), max) {
                Ok(Decision::Create) => {}
                Ok(Decision::Refuse) => {
                    self.counters.refused_budget.fetch_add(1, Relaxed);
                    drop(t);
                    self.refuse(&h);
                    return None;
                }
                Err(_) => return Some((src, h, carried)),
            }
            if t.objects
                .try_create_and_insert(key, entry, GFP_KERNEL)
                .is_err()
            {
                t.budget.uncharge(NodeId::from(src));
                return Some((src, h, carried));
            }
        }
        let e = t.objects.get_mut(&key)?;
        if matches!(h.msg.kind, MsgKind::ReadReq | MsgKind::WriteReq)
            && self.prefill(h.set, h.object, e).is_err()
        {
            // The object cannot be created (counted): the requester's
            // access times out.
            return None;
        }
        // Room before anything changes: without it the message is given
        // again later.
        let Ok(mut actions) = KVec::with_capacity(ACTION_ROOM, GFP_KERNEL) else {
            return Some((src, h, carried));
        };
        let handled = e.coh.on_message(h.msg, &mut self.action_sink(&mut actions));
        match handled {
            Ok(()) => {}
            Err(CohError::NoMemory) => return Some((src, h, carried)),
            Err(CohError::BadToken) => {
                self.counters.bad_token.fetch_add(1, Relaxed);
                return None;
            }
            Err(e) => {
                self.unexpected(
                    src,
                    format_args!(
                        "{:?} for object {} {} ({e:?})",
                        h.msg.kind,
                        h.set,
                        U64(h.object)
                    ),
                );
                return None;
            }
        }
        if h.msg.kind == MsgKind::Invalidate {
            self.counters.invalidations.fetch_add(1, Relaxed);
        }
        let mut out = KVec::new();
        let granted = match self.apply(h.set, h.object, e, &actions, &mut carried, &mut out) {
            Ok(g) => g,
            Err(_) => {
                self.counters.send_failed.fetch_add(1, Relaxed);
                false
            }
        };
        let mut more = None;
        if granted {
            self.counters.granted_remotely.fetch_add(1, Relaxed);
            if e.abandoned {
                // Nobody waits for it any more: give it back.
                e.abandoned = false;
                more = Some(self.release(h.set, h.object, e));
            }
        }
        drop(t);
        self.changed.notify_all();
        self.send_all(out);
        if let Some(more) = more {
            self.send_all(more);
        }
        None
    }

    /// Decodes a message from treenet; `None` (counted) if malformed.
    fn decode(&self, msg: &treenet::Message) -> Option<(Header, Option<Contents>)> {
        let mut head = [0u8; HEADER_LEN];
        msg.read_at(0, &mut head).ok()?;
        let h = Header::decode(&head, msg.len()).ok()?;
        let len = h.contents_len as usize;
        let (size, linker) = self.set_info_of_message(h.set, len)?;
        if h.msg.kind.carries_contents() != (len > 0) || (len > 0 && len != size) {
            return None;
        }
        let carried = if len > 0 {
            let mut bytes = KVec::with_capacity(len, GFP_KERNEL).ok()?;
            bytes.resize(len, 0, GFP_KERNEL).ok()?;
            msg.read_at(HEADER_LEN, &mut bytes).ok()?;
            let mut c = Contents::new(size).ok()?;
            linker.import(h.object, &bytes, c.bytes_mut()).ok()?;
            Some(c)
        } else {
            None
        };
        Some((h, carried))
    }

    /// Writes one line per known object (`set object state probable_owner
    /// version held`) for `/sys/kernel/ssi/objects`, as many as the page
    /// holds, then how many more there are.
    pub(crate) fn show_objects(&self, w: &mut SysfsWriter<'_>) -> Result {
        // The longest line, and the last one's room.
        const LINE: usize = 96;
        let t = self.table.lock();
        for (i, (&(set, object), e)) in t.objects.iter().enumerate() {
            if w.remaining() < 2 * LINE {
                // A page holds a few dozen objects: say how many are left.
                let more = t.objects.iter().count() - i;
                writeln!(w, "... {more} more")?;
                break;
            }
            let held = match e.coh.held() {
                Some(Access::Read) => "read",
                Some(Access::Write) => "write",
                None => "-",
            };
            writeln!(
                w,
                "{set} {} {} {} {} {held}",
                U64(object),
                e.coh.state().kerrighed_name(),
                e.coh.probable_owner(),
                U64(e.coh.version())
            )?;
        }
        Ok(())
    }

    /// Writes, for `/sys/kernel/ssi/objects_per_node`, one line per
    /// neighbour this node created objects for (`node objects`).
    pub(crate) fn show_objects_per_node(&self, w: &mut SysfsWriter<'_>) -> Result {
        // The longest line, and the last one's room.
        const LINE: usize = 32;
        let t = self.table.lock();
        for (i, (node, count)) in t.budget.counts().iter().enumerate() {
            if w.remaining() < 2 * LINE {
                let more = t.budget.counts().iter().count() - i;
                writeln!(w, "... {more} more")?;
                break;
            }
            writeln!(w, "{node} {}", U64(count))?;
        }
        Ok(())
    }

    /// Writes the counters for `/sys/kernel/ssi/stats`.
    pub(crate) fn show_stats(&self, w: &mut SysfsWriter<'_>) -> Result {
        let mut r = Ok(());
        self.counters.each(|name, v| {
            if r.is_ok() {
                r = writeln!(w, "{name} {}", U64(v));
            }
        });
        r
    }
}

/// Whether the node may have to stop showing the object as it does: its
/// page goes or is replaced, or another node gets a copy or the object
/// (a writable mapping must not stay), or the copy is invalidated.
fn takes_mapping_away(a: &Action) -> bool {
    match a {
        Action::Send { msg, .. } => matches!(
            msg.kind,
            MsgKind::Copy | MsgKind::Ownership | MsgKind::InvAck
        ),
        Action::Install | Action::DropContents => true,
        Action::FirstTouch | Action::Granted(_) | Action::Refused(_) => false,
    }
}

impl ThreadBody for Containers {
    fn kicker(&self) -> &Kicker {
        &self.rx_kicker
    }

    fn run(&self, ctx: &ThreadCtx<'_>) {
        while !ctx.should_stop() {
            // Messages that waited for room go first; while some still
            // wait, look again every few ms.
            let backlogged = self.flush_backlog();
            let next_linger = self.end_due_lingers();
            let recording = self.try_record();
            let batch = core::mem::take(&mut *self.inbox.lock());
            let retry = core::mem::take(&mut *self.retry.lock());
            if batch.is_empty() && retry.is_empty() {
                let mut wait = next_linger.map_or(usize::MAX, |ns| ms_to_jiffies(ns_to_ms(ns) + 1));
                if recording {
                    // Frozen, waiting for local accesses to end.
                    wait = wait.min(ms_to_jiffies(5));
                }
                if backlogged {
                    wait = wait.min(ms_to_jiffies(FLUSH_MS));
                }
                ctx.wait(wait);
                continue;
            }
            let mut again = KVec::new();
            for (src, h, carried) in retry {
                if let Some(m) = self.handle(src, h, carried) {
                    self.give_again(&mut again, m);
                }
            }
            for (src, msg) in batch {
                self.counters.msgs_received.fetch_add(1, Relaxed);
                if self.is_control(&msg) {
                    self.handle_control(src, &msg);
                    continue;
                }
                let Some((h, carried)) = self.decode(&msg) else {
                    self.counters.malformed.fetch_add(1, Relaxed);
                    continue;
                };
                drop(msg);
                // A node never acts in another's name (treenet binds
                // `src` to the link it came on).
                if !h.msg.names_sender_ok(NodeId::from(src)) {
                    self.counters.forged.fetch_add(1, Relaxed);
                    continue;
                }
                // A set limited to some nodes hears no other.
                if !self.members_admit(h.set, src, &h.msg) {
                    self.counters.not_member.fetch_add(1, Relaxed);
                    continue;
                }
                if let Some(m) = self.handle(src, h, carried) {
                    self.give_again(&mut again, m);
                }
            }
            if !again.is_empty() {
                self.counters
                    .nomem_retries
                    .fetch_add(again.len() as u64, Relaxed);
                let mut r = self.retry.lock();
                for m in again {
                    self.give_again(&mut r, m);
                }
                drop(r);
                // Try again in a little while.
                ctx.wait(ms_to_jiffies(10));
            }
        }
    }
}

/// zoidfs's page coherence (`zoid_coherence.h`): a module loaded before
/// ssi attaches to a set by name and holds its objects around the
/// accesses it caches.
impl CoherenceProvider for Containers {
    fn attach(&self, name: &[u8], client: Client) -> Result<u32> {
        // The table first, as everywhere: no callback of the set's linker
        // runs while its linker changes.
        let _t = self.table.lock();
        let mut sets = self.sets.lock();
        let Some(id) = sets
            .iter()
            .find(|(_, d)| &d.name[..] == name)
            .map(|(&id, _)| id)
        else {
            return Err(ENOENT);
        };
        let d = sets.get_mut(&id).ok_or(ENOENT)?;
        if d.client.is_some() {
            return Err(EBUSY);
        }
        let c = ClientLinker::new(d.linker.clone(), client)?;
        d.linker = c.clone();
        d.client = Some(c);
        self.counters.clients_attached.fetch_add(1, Relaxed);
        Ok(id)
    }

    fn detach(&self, set: u32) {
        let _t = self.table.lock();
        let mut sets = self.sets.lock();
        if let Some(d) = sets.get_mut(&set) {
            if let Some(c) = d.client.take() {
                // Callers that took the linker before still hold it: it
                // calls the client no more.
                c.detach();
                d.linker = c.inner.clone();
            }
        }
    }

    fn hold(&self, set: u32, object: u64, write: bool) -> Result {
        let access = if write { Access::Write } else { Access::Read };
        self.hold(set, object, access)
    }

    fn unhold(&self, set: u32, object: u64) {
        self.unhold(set, object);
    }

    fn hold_fault(&self, set: u32, object: u64, write: bool) -> Result<u64> {
        let access = if write { Access::Write } else { Access::Read };
        self.hold_for_fault(set, object, access)
    }

    fn fault_done(&self, set: u32, object: u64, token: u64) {
        self.fault_done(set, object, token);
    }

    fn read(&self, set: u32, object: u64, buf: &mut [u8]) -> Result {
        let t = self.table.lock();
        let e = t.objects.get(&(set, object)).ok_or(EIO)?;
        if e.coh.held().is_none() {
            return Err(EINVAL);
        }
        let c = e.contents.as_ref().ok_or(EIO)?;
        let src = c.bytes().get(..buf.len()).ok_or(EINVAL)?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn write(&self, set: u32, object: u64, buf: &[u8]) -> Result {
        let mut t = self.table.lock();
        let e = t.objects.get_mut(&(set, object)).ok_or(EIO)?;
        if e.coh.held() != Some(Access::Write) {
            return Err(EINVAL);
        }
        self.unmap(object);
        let c = e.contents.as_mut().ok_or(EIO)?;
        c.bytes_mut()
            .get_mut(..buf.len())
            .ok_or(EINVAL)?
            .copy_from_slice(buf);
        Ok(())
    }
}
