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
//!   handled by the `ssi_rx` thread, which may sleep to send.
//!
//! The state machine decides; this file only moves bytes: it builds the
//! messages (header + contents) while the table is locked, so a message
//! carries the contents as they were when the state machine spoke, and
//! sends them after unlocking.

use kernel::bindings;
use kernel::prelude::*;
use kernel::rbtree::RBTree;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::{new_condvar, new_mutex, CondVar, CondVarTimeoutResult, Mutex};
use kernel::time::msecs_to_jiffies;

// Not core's u64 formatting: it needs soft-float helpers on 32-bit kernels.
use crate::zoid_kernel::time::{ms_to_jiffies, U64};

use crate::treenet;
use crate::zoid_kernel::kthread::{Kicker, ThreadBody, ThreadCtx};
use crate::zoid_kernel::stats::counters;
use crate::zoid_kernel::sysfs::SysfsWriter;
use crate::zoid_kernel::vfs::{CPath, Export};
use crate::zoid_proto::ssi::checkpoint::{self, Parser, Piece, SetHeader};
use crate::zoid_proto::ssi::coherence::{
    Access, Action, Error as CohError, MsgKind, NodeId, NodeSet, Object, Request, RequestQueue,
};
use crate::zoid_proto::ssi::wire::{Header, HEADER_LEN};

/// The treenet channel ssi speaks on.
pub(crate) const CHANNEL: u16 = 6;

/// Bytes of every object (a page, as Kerrighed's memory containers).
pub(crate) const OBJECT_SIZE: usize = 4096;

/// How long a local access waits for its grant before it gives up.
const GRANT_TIMEOUT_MS: u32 = 30_000;

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
    fn drain_each(&mut self, f: &mut dyn FnMut(NodeId)) {
        for &n in self.0.iter() {
            f(n);
        }
        self.0.clear();
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
struct Entry {
    coh: Object<Waiting, CopySet>,
    /// The contents, while the node has a valid copy.
    contents: Option<KVec<u8>>,
    /// The local waiter gave up: release the access as soon as it is
    /// granted.
    abandoned: bool,
    /// Where the local request went, until it is granted.
    asked: Option<u16>,
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
        msgs_sent: "Coherence messages sent.",
        msgs_received: "Coherence messages received.",
        invalidations: "Invalidations received.",
        first_touches: "Objects created here (zero-filled) at first touch.",
        send_failed: "Messages treenet refused (or that could not be built).",
        malformed: "Received messages with a bad header or contents length.",
        unexpected: "Received messages the protocol never sends in that state.",
        nomem_retries: "Events refused for lack of memory, given again later.",
        dropped_nomem: "Messages lost: no memory to queue them for ssi_rx.",
        timeouts: "Local accesses that gave up waiting.",
        peer_lost: "Local accesses failed because the node asked is down.",
        checkpoints: "Sets written to a checkpoint file.",
        restores: "Checkpoint files restored.",
        bad_checkpoints: "Checkpoint files refused as damaged.",
    }
}

/// Messages to send once the table is unlocked.
type Outbox = KVec<(u16, KVec<u8>)>;

/// A decoded message waiting to be handled (again): sender, header and
/// the contents it carries.
type Pending = (u16, Header, Option<KVec<u8>>);

/// The objects of all sets on this node.
#[pin_data]
pub(crate) struct Containers {
    pub(crate) counters: Counters,
    #[pin]
    table: Mutex<RBTree<(u32, u64), Entry>>,
    /// Signalled when an access is granted or an object settles.
    #[pin]
    changed: CondVar,
    /// Messages from treenet, for the `ssi_rx` thread.
    #[pin]
    inbox: Mutex<KVec<(u16, treenet::Message)>>,
    /// Messages refused for lack of memory, given again later.
    #[pin]
    retry: Mutex<KVec<Pending>>,
    rx_kicker: Kicker,
}

impl Containers {
    /// Containers of this node (which treenet says when the first object
    /// is touched: at load time, its links may not be up yet).
    pub(crate) fn new() -> Result<impl PinInit<Self, Error>> {
        let rx_kicker = Kicker::new()?;
        Ok(try_pin_init!(Self {
            counters: Counters::new(),
            table <- new_mutex!(RBTree::new(), "ssi::table"),
            changed <- new_condvar!("ssi::changed"),
            inbox <- new_mutex!(KVec::new(), "ssi::inbox"),
            retry <- new_mutex!(KVec::new(), "ssi::retry"),
            rx_kicker,
        }? Error))
    }

    /// treenet's news that `node` went up or down: waiters look again
    /// whether the node they asked is still there.
    pub(crate) fn peer_event(&self, _node: u16, _up: bool) {
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
    fn apply(
        &self,
        set: u32,
        object: u64,
        entry: &mut Entry,
        actions: &[Action],
        carried: &mut Option<KVec<u8>>,
        out: &mut Outbox,
    ) -> Result<bool> {
        let mut granted = false;
        for a in actions {
            match *a {
                Action::Send { to, msg } => {
                    let Ok(to) = u16::try_from(to) else {
                        self.counters.send_failed.fetch_add(1, Relaxed);
                        continue;
                    };
                    let contents: &[u8] = if msg.kind.carries_contents() {
                        entry.contents.as_deref().unwrap_or(&[])
                    } else {
                        &[]
                    };
                    let h = Header {
                        set,
                        object,
                        msg,
                        contents_len: contents.len() as u32,
                    };
                    let mut bytes = KVec::with_capacity(HEADER_LEN + contents.len(), GFP_KERNEL)?;
                    bytes.extend_from_slice(&h.encode(), GFP_KERNEL)?;
                    bytes.extend_from_slice(contents, GFP_KERNEL)?;
                    out.push((to, bytes), GFP_KERNEL)?;
                }
                Action::Install => entry.contents = carried.take(),
                Action::DropContents => entry.contents = None,
                Action::FirstTouch => {
                    self.counters.first_touches.fetch_add(1, Relaxed);
                    let mut c = KVec::with_capacity(OBJECT_SIZE, GFP_KERNEL)?;
                    c.resize(OBJECT_SIZE, 0, GFP_KERNEL)?;
                    entry.contents = Some(c);
                }
                Action::Granted(_) => {
                    entry.asked = None;
                    granted = true;
                }
            }
        }
        Ok(granted)
    }

    fn send_all(&self, out: Outbox) {
        for (to, bytes) in out {
            match treenet::send(CHANNEL, to, &bytes, true) {
                Ok(()) => self.counters.msgs_sent.fetch_add(1, Relaxed),
                Err(_) => self.counters.send_failed.fetch_add(1, Relaxed),
            };
        }
    }

    /// A first-known object: its home is the pset's ION (`EHOSTUNREACH`
    /// while a CN's ION is not up, `ENODEV` before treenet is).
    fn new_entry() -> Result<Entry> {
        let me = NodeId::from(treenet::node_id()?);
        let home = NodeId::from(treenet::ion()?);
        Ok(Entry {
            coh: Object::new(me, home, CopySet::default(), Waiting::default()),
            contents: None,
            abandoned: false,
            asked: None,
        })
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
        let mut t = self.table.lock();
        // Ask (once nothing else of this node holds or wants the object).
        loop {
            if t.get(&key).is_none() {
                t.try_create_and_insert(key, Self::new_entry()?, GFP_KERNEL)?;
            }
            let Some(e) = t.get_mut(&key) else {
                return Err(ENOMEM);
            };
            let mut actions = KVec::new();
            let mut sink = |a| {
                let _ = actions.push(a, GFP_KERNEL);
            };
            match e.coh.acquire(access, &mut sink) {
                Ok(()) => {
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
                    break;
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
            match self.changed.wait_interruptible_timeout(&mut t, left) {
                CondVarTimeoutResult::Timeout => {
                    self.counters.timeouts.fetch_add(1, Relaxed);
                    return Err(ETIMEDOUT);
                }
                CondVarTimeoutResult::Signal { .. } => return Err(EINTR),
                CondVarTimeoutResult::Woken { jiffies } => left = jiffies,
            }
        }
        // Wait for the grant.  Once asked, the request cannot be taken
        // back: a waiter that gives up leaves the grant to be released by
        // whoever receives it.
        loop {
            let Some(e) = t.get_mut(&key) else {
                return Err(EIO);
            };
            if e.coh.held() == Some(access) {
                break;
            }
            if e.asked_is_gone() {
                // No answer will come (treenet said the node is down).
                self.counters.peer_lost.fetch_add(1, Relaxed);
                e.abandoned = true;
                return Err(EHOSTUNREACH);
            }
            let r = self.changed.wait_interruptible_timeout(&mut t, left);
            let gave_up = match r {
                CondVarTimeoutResult::Timeout => Some(ETIMEDOUT),
                CondVarTimeoutResult::Signal { .. } => Some(EINTR),
                CondVarTimeoutResult::Woken { jiffies } => {
                    left = jiffies;
                    None
                }
            };
            if let Some(err) = gave_up {
                let Some(e) = t.get_mut(&key) else {
                    return Err(err);
                };
                if e.coh.held() == Some(access) {
                    break;
                }
                if err == ETIMEDOUT {
                    self.counters.timeouts.fetch_add(1, Relaxed);
                }
                e.abandoned = true;
                return Err(err);
            }
        }
        Ok(())
    }

    /// Runs `f` on the contents of a held object.
    fn with_held<R>(&self, set: u32, object: u64, f: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        let mut t = self.table.lock();
        let e = t.get_mut(&(set, object)).ok_or(EIO)?;
        if e.coh.held().is_none() {
            return Err(EIO);
        }
        e.contents.as_deref_mut().map(f).ok_or(EIO)
    }

    /// Ends the access [`Containers::hold`] got.
    fn unhold(&self, set: u32, object: u64) {
        let mut t = self.table.lock();
        let Some(e) = t.get_mut(&(set, object)) else {
            return;
        };
        let out = self.release(set, object, e);
        drop(t);
        self.changed.notify_all();
        self.send_all(out);
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
        let ids: KVec<u64> = {
            let t = self.table.lock();
            let mut ids = KVec::new();
            // Keys come in order: objects in ascending id.
            for &(s, o) in t.keys() {
                if s == set {
                    ids.push(o, GFP_KERNEL)?;
                }
            }
            ids
        };
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
            let h = SetHeader {
                set,
                object_size: OBJECT_SIZE as u32,
                objects: ids.len() as u64,
            };
            file.write_all(&h.encode(), &mut pos)?;
            let mut buf = KVec::with_capacity(OBJECT_SIZE, GFP_KERNEL)?;
            buf.resize(OBJECT_SIZE, 0, GFP_KERNEL)?;
            for &id in ids.iter() {
                self.with_held(set, id, |c| buf.copy_from_slice(c))?;
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
                        if h.object_size as usize != OBJECT_SIZE {
                            return Err(EINVAL);
                        }
                        sets += 1;
                    }
                    Piece::Record { set, object } => {
                        objects += 1;
                        if apply {
                            self.access(set, object, Access::Write, |c| c.copy_from_slice(&buf))?;
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
    fn release(&self, set: u32, object: u64, e: &mut Entry) -> Outbox {
        let mut actions = KVec::new();
        let mut sink = |a| {
            let _ = actions.push(a, GFP_KERNEL);
        };
        if let Err(err) = e.coh.release(&mut sink) {
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
    fn handle(&self, src: u16, h: Header, mut carried: Option<KVec<u8>>) -> Option<Pending> {
        let key = (h.set, h.object);
        let mut t = self.table.lock();
        if t.get(&key).is_none() {
            let Ok(entry) = Self::new_entry() else {
                // treenet delivered it, so it is up: not from our pset.
                self.counters.unexpected.fetch_add(1, Relaxed);
                return None;
            };
            if t.try_create_and_insert(key, entry, GFP_KERNEL).is_err() {
                return Some((src, h, carried));
            }
        }
        let e = t.get_mut(&key)?;
        let mut actions = KVec::new();
        let mut sink = |a| {
            let _ = actions.push(a, GFP_KERNEL);
        };
        match e.coh.on_message(h.msg, &mut sink) {
            Ok(()) => {}
            Err(CohError::NoMemory) => return Some((src, h, carried)),
            Err(_) => {
                self.counters.unexpected.fetch_add(1, Relaxed);
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
        if granted {
            self.counters.granted_remotely.fetch_add(1, Relaxed);
            if e.abandoned {
                // Nobody waits for it any more: give it back.
                e.abandoned = false;
                let more = self.release(h.set, h.object, e);
                for m in more {
                    let _ = out.push(m, GFP_KERNEL);
                }
            }
        }
        drop(t);
        self.changed.notify_all();
        self.send_all(out);
        None
    }

    /// Decodes a message from treenet; `None` (counted) if malformed.
    fn decode(&self, msg: &treenet::Message) -> Option<(Header, Option<KVec<u8>>)> {
        let mut head = [0u8; HEADER_LEN];
        msg.read_at(0, &mut head).ok()?;
        let h = Header::decode(&head, msg.len()).ok()?;
        if h.msg.kind.carries_contents() && h.contents_len as usize != OBJECT_SIZE {
            return None;
        }
        let carried = if h.contents_len > 0 {
            let mut c = KVec::with_capacity(OBJECT_SIZE, GFP_KERNEL).ok()?;
            c.resize(OBJECT_SIZE, 0, GFP_KERNEL).ok()?;
            msg.read_at(HEADER_LEN, &mut c).ok()?;
            Some(c)
        } else {
            None
        };
        Some((h, carried))
    }

    /// Writes one line per known object (`set object state probable_owner
    /// version held`) for `/sys/kernel/ssi/objects`.
    pub(crate) fn show_objects(&self, w: &mut SysfsWriter<'_>) -> Result {
        let t = self.table.lock();
        for (&(set, object), e) in t.iter() {
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

impl ThreadBody for Containers {
    fn kicker(&self) -> &Kicker {
        &self.rx_kicker
    }

    fn run(&self, ctx: &ThreadCtx<'_>) {
        while !ctx.should_stop() {
            let batch = core::mem::take(&mut *self.inbox.lock());
            let retry = core::mem::take(&mut *self.retry.lock());
            if batch.is_empty() && retry.is_empty() {
                ctx.wait(usize::MAX);
                continue;
            }
            let mut again = KVec::new();
            for (src, h, carried) in retry {
                if let Some(m) = self.handle(src, h, carried) {
                    let _ = again.push(m, GFP_KERNEL);
                }
            }
            for (src, msg) in batch {
                self.counters.msgs_received.fetch_add(1, Relaxed);
                let Some((h, carried)) = self.decode(&msg) else {
                    self.counters.malformed.fetch_add(1, Relaxed);
                    continue;
                };
                drop(msg);
                if let Some(m) = self.handle(src, h, carried) {
                    let _ = again.push(m, GFP_KERNEL);
                }
            }
            if !again.is_empty() {
                self.counters
                    .nomem_retries
                    .fetch_add(again.len() as u64, Relaxed);
                let mut r = self.retry.lock();
                for m in again {
                    let _ = r.push(m, GFP_KERNEL);
                }
                drop(r);
                // Try again in a little while.
                ctx.wait(ms_to_jiffies(10));
            }
        }
    }
}
