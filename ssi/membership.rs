// SPDX-License-Identifier: GPL-2.0

//! Membership: heartbeats, failure detection, and the rebuild of
//! `zoid_proto::ssi::rebuild` run by the kernel.
//!
//! * Every CN sends the ION a heartbeat every `heartbeat_ms`; the ION (the
//!   coordinator) declares a member dead after `heartbeat_timeout_ms` of
//!   silence, or at once when treenet reports it down.  A node heard for
//!   the first time after a rebuild (a CN whose ssi was reloaded) joins
//!   through a rebuild too, so that every node accepts its messages again.
//! * A rebuild (the coordinator's `ssi_member` thread): `Freeze` to every
//!   survivor; each one waits for its local accesses to end, records,
//!   sends a `Mark` to every other survivor and keeps (without handling)
//!   the coherence messages that arrive; with every mark in, it reports
//!   what it holds of each object, counting the kept messages; the
//!   coordinator tallies and sends `Resume` with each object's owner, or
//!   that it is lost; each node resets its objects and goes on.  A
//!   survivor that does not report in time is declared dead and the
//!   rebuild starts over without it.
//! * Graceful removal (`remove_nodes` on the ION): the coordinator tells
//!   the node to leave; it refuses new accesses (`ENODEV`), finishes what
//!   it asked for, and lists the objects it owns; the coordinator takes
//!   each of them (a write access that changes nothing: the protocol moves
//!   the contents), then rebuilds without the node, which loses nothing.
//!   `add_nodes` lets it join again (at its next heartbeat).
//! * Lost objects stay lost (accesses fail with `EIO`) until ssi is
//!   reloaded everywhere: they are never recreated in silence.
//!
//! Locks: the participant's state is under the table lock (the snapshot
//! must be taken with no access starting); the coordinator's has its own
//! lock, never held while the table's is taken.

use kernel::prelude::*;
use kernel::rbtree::RBTree;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::{new_mutex, Arc, Mutex};

use crate::backlog::Outgoing;
use crate::container::{Containers, Outbox, Pending, Table, ACTION_ROOM};
use crate::treenet;
use crate::zoid_kernel::kthread::{Kicker, ThreadBody, ThreadCtx};
use crate::zoid_kernel::sysfs::{ChangeNotifier, SysfsWriter};
use crate::zoid_kernel::time::{
    deadline_after_ms, ms_to_jiffies, now_ns, ns_to_ms, random_u64, U64,
};
use crate::zoid_proto::ssi::coherence::{Access, Action, Msg, MsgKind};
use crate::zoid_proto::ssi::control::{
    self, ControlHeader, Kind, HEADER_LEN, REPORT_ENTRY_LEN, RESUME_ENTRY_LEN,
};
use crate::zoid_proto::ssi::rebuild::{Holding, Outcome, Source, Tally};

/// How long the coordinator waits for every survivor's report.
const REPORT_TIMEOUT_MS: u64 = 15_000;
/// Rebuild attempts (each drops the survivors that did not report).
const REBUILD_ATTEMPTS: u32 = 3;

/// This node's part in a rebuild (under the table lock).
#[derive(Default)]
pub(crate) struct Participant {
    /// The rebuild under way.
    epoch: Option<u32>,
    survivors: KVec<u16>,
    /// No access held any more, marks sent: what arrives is kept.
    recorded: bool,
    reported: bool,
    /// Marks received: (epoch, node).
    marks: KVec<(u32, u16)>,
    /// Coherence messages kept since recording.
    kept: KVec<Pending>,
    /// The survivors of the last rebuild (`None` before the first):
    /// coherence messages from other nodes are dropped.
    members: Option<KVec<u16>>,
    last_epoch: u32,
    /// Told to leave: local accesses are refused (`ENODEV`).
    leaving: bool,
    /// The coordinator waits for the list of the objects this node owns.
    owed_list: bool,
}

impl Participant {
    /// Whether this node was told to leave (local accesses are refused).
    pub(crate) fn is_leaving(&self) -> bool {
        self.leaving
    }

    /// Whether a rebuild is under way (no local access may start).
    pub(crate) fn is_frozen(&self) -> bool {
        self.epoch.is_some()
    }

    /// Whether the node recorded its state: coherence messages are kept.
    pub(crate) fn is_recorded(&self) -> bool {
        self.epoch.is_some() && self.recorded
    }

    /// Whether coherence messages from `node` are handled.
    pub(crate) fn accepts_from(&self, node: u16) -> bool {
        let member = self.members.as_ref().is_none_or(|m| m.contains(&node));
        let survivor = self.epoch.is_none() || self.survivors.contains(&node);
        member && survivor
    }

    /// The survivors of rebuild `epoch` other than `me` whose marks did
    /// not come (this node reports only once every one did).
    fn unmarked(&self, epoch: u32, me: u16) -> Result<KVec<u16>> {
        let mut v = KVec::new();
        if self.epoch != Some(epoch) {
            return Ok(v);
        }
        for &n in self.survivors.iter() {
            if n != me && !self.marks.contains(&(epoch, n)) {
                v.push(n, GFP_KERNEL)?;
            }
        }
        Ok(v)
    }

    /// Keeps a coherence message that arrived after recording.
    pub(crate) fn keep(&mut self, p: Pending) -> Result {
        self.kept.push(p, GFP_KERNEL)?;
        Ok(())
    }
}

/// The kept messages about one object, and where each is in `kept`.
fn kept_for(kept: &[Pending], set: u32, object: u64) -> Result<(KVec<Msg>, KVec<usize>)> {
    let (mut msgs, mut at) = (KVec::new(), KVec::new());
    for (i, (_, h, _)) in kept.iter().enumerate() {
        if h.set == set && h.object == object {
            msgs.push(h.msg, GFP_KERNEL)?;
            at.push(i, GFP_KERNEL)?;
        }
    }
    Ok((msgs, at))
}

/// A member, as the coordinator knows it.
struct Member {
    node: u16,
    last_heard_ns: u64,
    alive: bool,
    /// Removed by command: not heard again until `add_nodes`.
    left: bool,
    /// Rebuilds in a row it was let in and did not report in.
    unreported: u32,
    /// Not let in again before this (after it did not report).
    readmit_ns: u64,
}

/// How long a node that did not report in a rebuild stays out, heard or
/// not: `REPORT_TIMEOUT_MS` doubled for each rebuild in a row it did not
/// report in, up to 64 times.  A node that says hello but takes nothing
/// (its kernel acknowledges nothing) would otherwise be let in again at
/// its next heartbeat and freeze every node for `REPORT_TIMEOUT_MS` each
/// time.
fn readmit_after_ns(unreported: u32) -> u64 {
    (REPORT_TIMEOUT_MS * 1_000_000) << unreported.clamp(1, 7).saturating_sub(1)
}

/// The coordinator's state (on the ION).
#[derive(Default)]
pub(crate) struct Coordinator {
    members: KVec<Member>,
    epoch: u32,
    /// A rebuild happened: a node heard for the first time joins through
    /// another one.
    rebuilt: bool,
    join_pending: bool,
    /// Members heard again after they were declared dead: what they
    /// report is stale (the rebuild that excluded them decided without
    /// it), so the next rebuild ignores it and resets them.
    rejoining: KVec<u16>,
    /// Reports of the rebuild under way: node and entries.
    reports: KVec<(u16, KVec<u8>)>,
    /// Nodes to remove gracefully (`remove_nodes`).
    removals: KVec<u16>,
    /// The list of owned objects a leaving node sent: node, message.
    owned: Option<(u16, KVec<u8>)>,
    /// Objects found lost (kept, so that nodes joining later learn it).
    lost: RBTree<(u32, u64), ()>,
    /// Grows at every membership change (for pollers).
    generation: u64,
    /// Losses an administrator acknowledged, for the `ssi_member` thread
    /// (which also runs rebuilds: the two never interleave).
    acks: KVec<(u32, u64)>,
}

/// Membership knobs and the coordinator, inside [`Containers`].
#[pin_data]
pub(crate) struct MembershipState {
    #[pin]
    coord: Mutex<Coordinator>,
    pub(crate) heartbeat_ms: Atomic<u32>,
    pub(crate) heartbeat_timeout_ms: Atomic<u32>,
    kicker: Kicker,
    /// Tells user space of changes (`members` pollers, uevents of
    /// `/dev/ssi`); set once sysfs and the device exist.
    #[pin]
    notifier: Mutex<Option<ChangeNotifier>>,
}

impl MembershipState {
    /// Sets the `ssi_member` thread's nice value (see
    /// [`crate::THREAD_NICE`]).
    pub(crate) fn set_thread_nice(&self, nice: i32) -> Result {
        self.kicker.set_nice(nice)
    }

    pub(crate) fn new() -> Result<impl PinInit<Self, Error>> {
        let kicker = Kicker::new()?;
        Ok(try_pin_init!(Self {
            coord <- new_mutex!(Coordinator::default(), "ssi::coordinator"),
            heartbeat_ms: Atomic::new(1000),
            heartbeat_timeout_ms: Atomic::new(5000),
            kicker,
            notifier <- new_mutex!(None, "ssi::notifier"),
        }? Error))
    }
}

fn header(kind: Kind, epoch: u32, count: usize) -> Result<KVec<u8>> {
    let count = u32::try_from(count).map_err(|_| E2BIG)?;
    let mut b = KVec::new();
    b.extend_from_slice(&ControlHeader { kind, epoch, count }.encode(), GFP_KERNEL)?;
    Ok(b)
}

impl Containers {
    /// Whether a message from treenet is a membership message.
    pub(crate) fn is_control(&self, msg: &treenet::Message) -> bool {
        let mut head = [0u8; 2];
        msg.read_at(0, &mut head).is_ok() && control::is_control(&head)
    }

    /// Handles a membership message (in `ssi_rx`).
    pub(crate) fn handle_control(&self, src: u16, msg: &treenet::Message) {
        let mut bytes = KVec::new();
        if bytes.resize(msg.len(), 0, GFP_KERNEL).is_err() {
            self.counters.dropped_nomem.fetch_add(1, Relaxed);
            return;
        }
        let h = msg
            .read_at(0, &mut bytes)
            .ok()
            .and_then(|()| ControlHeader::decode(&bytes, bytes.len()).ok());
        let Some(h) = h else {
            self.counters.malformed.fetch_add(1, Relaxed);
            return;
        };
        let entries = &bytes[HEADER_LEN..];
        let from_coordinator = treenet::ion().is_ok_and(|ion| ion == src);
        match h.kind {
            Kind::Freeze if from_coordinator => {
                let mut survivors = KVec::new();
                for c in entries.chunks_exact(4) {
                    let n = control::decode_node(&[c[0], c[1], c[2], c[3]]);
                    if let Ok(n) = u16::try_from(n) {
                        if survivors.push(n, GFP_KERNEL).is_err() {
                            return;
                        }
                    }
                }
                self.freeze(h.epoch, survivors);
            }
            Kind::Mark => self.on_mark(h.epoch, src),
            Kind::Report => self.take_report(src, h.epoch, bytes),
            Kind::Resume if from_coordinator => self.on_resume(h.epoch, entries),
            Kind::Heartbeat => self.heard(src),
            Kind::Leave if from_coordinator => {
                let mut t = self.table.lock();
                t.rebuild.leaving = true;
                t.rebuild.owed_list = true;
                drop(t);
                self.membership.kicker.kick();
            }
            Kind::Owned => {
                let mut c = self.membership.coord.lock();
                c.owned = Some((src, bytes));
                drop(c);
                self.membership.kicker.kick();
            }
            Kind::Forget if from_coordinator => {
                let mut t = self.table.lock();
                for c in entries.chunks_exact(control::FORGET_ENTRY_LEN) {
                    let mut entry = [0u8; control::FORGET_ENTRY_LEN];
                    entry.copy_from_slice(c);
                    let key = control::decode_object(&entry);
                    if let Some(e) = t.objects.get_mut(&key) {
                        e.lost = false;
                    }
                }
                drop(t);
                self.tell_user_space(c"lost", "SSI_EPOCH", u64::from(h.epoch));
            }
            Kind::Members if from_coordinator => {
                if self.learn_members(entries).is_err() {
                    self.counters.dropped_nomem.fetch_add(1, Relaxed);
                }
            }
            Kind::Define if from_coordinator => {
                for c in entries.chunks_exact(control::DEFINE_ENTRY_LEN) {
                    let mut entry = [0u8; control::DEFINE_ENTRY_LEN];
                    entry.copy_from_slice(c);
                    match control::decode_define(&entry) {
                        Ok(d) => {
                            if self.learn_set(&d).is_err() {
                                self.counters.dropped_nomem.fetch_add(1, Relaxed);
                            }
                        }
                        Err(_) => {
                            self.counters.malformed.fetch_add(1, Relaxed);
                        }
                    }
                }
            }
            kind => {
                self.unexpected(src, format_args!("{kind:?} (epoch {})", h.epoch));
            }
        }
    }

    /// The coordinator's `Freeze` (or its own, locally): stop.
    fn freeze(&self, epoch: u32, survivors: KVec<u16>) {
        // Accesses faults left lingering end now (they may still send:
        // the node has not recorded yet).
        self.end_all_lingers();
        let mut t = self.table.lock();
        let p = &mut t.rebuild;
        if epoch <= p.last_epoch || p.epoch.is_some_and(|e| epoch <= e) {
            return;
        }
        if let Ok(me) = treenet::node_id() {
            if survivors.contains(&me) {
                // Admitted (again): accesses go on after the rebuild.
                p.leaving = false;
            }
        }
        p.epoch = Some(epoch);
        p.survivors = survivors;
        p.reported = false;
        // Already recorded (a rebuild started over): mark again.
        let out = if p.recorded {
            self.marks(&t).unwrap_or_else(|_| {
                // The other survivors wait for these marks.
                self.counters.send_failed.fetch_add(1, Relaxed);
                KVec::new()
            })
        } else {
            KVec::new()
        };
        drop(t);
        self.send_all(out);
        self.rx_kicker.kick();
        self.check_marks();
    }

    /// Marks for every other survivor.
    fn marks(&self, t: &Table) -> Result<Outbox> {
        let me = treenet::node_id()?;
        let epoch = t.rebuild.epoch.ok_or(EINVAL)?;
        let mut out = KVec::new();
        for &n in t.rebuild.survivors.iter().filter(|&&n| n != me) {
            out.push((n, header(Kind::Mark, epoch, 0)?), GFP_KERNEL)?;
        }
        Ok(out)
    }

    /// Frozen and not recorded yet: records once no access is held
    /// (`ssi_rx` calls it).  Returns whether it still waits for accesses.
    pub(crate) fn try_record(&self) -> bool {
        let mut t = self.table.lock();
        if !t.rebuild.is_frozen() || t.rebuild.recorded {
            return false;
        }
        if t.objects.values().any(|e| e.coh.held().is_some()) {
            return true;
        }
        let Ok(out) = self.marks(&t) else {
            // Recorded at a later look, marks and all (counted).
            self.counters.nomem_retries.fetch_add(1, Relaxed);
            return true;
        };
        t.rebuild.recorded = true;
        drop(t);
        self.send_all(out);
        self.check_marks();
        false
    }

    fn on_mark(&self, epoch: u32, src: u16) {
        {
            let mut t = self.table.lock();
            if epoch <= t.rebuild.last_epoch
                || t.rebuild.marks.push((epoch, src), GFP_KERNEL).is_err()
            {
                return;
            }
        }
        self.check_marks();
    }

    /// Once recorded with every other survivor's mark in: reports.
    fn check_marks(&self) {
        let Ok(me) = treenet::node_id() else {
            return;
        };
        let Ok(coordinator) = treenet::ion() else {
            return;
        };
        let mut t = self.table.lock();
        let p = &t.rebuild;
        let Some(epoch) = p.epoch else {
            return;
        };
        if !p.recorded || p.reported {
            return;
        }
        let all_in = p
            .survivors
            .iter()
            .filter(|&&n| n != me)
            .all(|n| p.marks.contains(&(epoch, *n)));
        if !all_in {
            return;
        }
        let Ok(report) = self.build_report(&t, epoch) else {
            self.counters.dropped_nomem.fetch_add(1, Relaxed);
            return;
        };
        t.rebuild.reported = true;
        drop(t);
        if me == coordinator {
            self.take_report(me, epoch, report);
        } else {
            self.send_all_one(coordinator, report);
        }
    }

    fn send_all_one(&self, to: u16, bytes: KVec<u8>) {
        self.send(to, Outgoing::Built(bytes));
    }

    /// What this node holds of every object it knows, counting the kept
    /// messages.
    fn build_report(&self, t: &Table, epoch: u32) -> Result<KVec<u8>> {
        let mut b = header(Kind::Report, epoch, t.objects.iter().count())?;
        for (&(set, object), e) in t.objects.iter() {
            let (msgs, _) = kept_for(&t.rebuild.kept, set, object)?;
            let (holding, _) = e.coh.holding(&msgs);
            b.extend_from_slice(&control::encode_report(set, object, holding), GFP_KERNEL)?;
        }
        Ok(b)
    }

    /// A report, at the coordinator.
    fn take_report(&self, src: u16, epoch: u32, bytes: KVec<u8>) {
        let m = &self.membership;
        let mut c = m.coord.lock();
        if epoch != c.epoch {
            let now = c.epoch;
            drop(c);
            self.unexpected(src, format_args!("Report of epoch {epoch} (now {now})"));
            return;
        }
        c.reports.retain(|(n, _)| *n != src);
        if c.reports.push((src, bytes), GFP_KERNEL).is_err() {
            self.counters.dropped_nomem.fetch_add(1, Relaxed);
        }
        drop(c);
        m.kicker.kick();
    }

    /// The coordinator's `Resume` (or its own, locally): reset every
    /// object to its outcome and go on.
    fn on_resume(&self, epoch: u32, entries: &[u8]) {
        let (Ok(me), Ok(home)) = (treenet::node_id(), treenet::ion()) else {
            return;
        };
        let mut t = self.table.lock();
        if t.rebuild.epoch != Some(epoch) || !t.rebuild.reported {
            let (now, reported) = (t.rebuild.epoch, t.rebuild.reported);
            drop(t);
            self.unexpected(
                home,
                format_args!("Resume of epoch {epoch} (rebuilding {now:?}, reported {reported})"),
            );
            return;
        }
        let mut kept = core::mem::take(&mut t.rebuild.kept);
        let mut out = KVec::new();
        for chunk in entries.chunks_exact(RESUME_ENTRY_LEN) {
            let mut entry = [0u8; RESUME_ENTRY_LEN];
            entry.copy_from_slice(chunk);
            let Ok((set, object, outcome)) = control::decode_resume(&entry) else {
                self.counters.malformed.fetch_add(1, Relaxed);
                continue;
            };
            let key = (set, object);
            let mine = matches!(outcome, Outcome::Owner { owner, .. } if owner == u32::from(me));
            if t.objects.get(&key).is_none() {
                // An object this node does not know needs no entry unless
                // it is this node's now, or lost.
                if !mine && outcome != Outcome::Lost {
                    continue;
                }
                let Ok(e) = Self::new_entry() else {
                    continue;
                };
                if t.objects.try_create_and_insert(key, e, GFP_KERNEL).is_err() {
                    self.counters.dropped_nomem.fetch_add(1, Relaxed);
                    continue;
                }
            }
            let Ok((msgs, at)) = kept_for(&kept, set, object) else {
                continue;
            };
            let Some(e) = t.objects.get_mut(&key) else {
                continue;
            };
            let (_, source) = e.coh.holding(&msgs);
            if mine {
                if let Source::Kept(k) = source {
                    e.contents = kept[at[k]].2.take();
                }
            }
            self.unmap(object);
            // Every object is reset, room or not: without it each action
            // finds memory as it comes, or is counted lost.
            let mut actions: KVec<Action> =
                KVec::with_capacity(ACTION_ROOM, GFP_KERNEL).unwrap_or_default();
            // An access asked for is asked again, with a new token.
            let r = e.coh.reset(
                outcome,
                u32::from(home),
                random_u64(),
                &mut self.action_sink(&mut actions),
            );
            if let Err(e) = r {
                self.unexpected(
                    home,
                    format_args!("reset of object {set} {} ({e:?})", U64(object)),
                );
                continue;
            }
            if outcome == Outcome::Lost && !e.lost {
                e.lost = true;
                self.counters.lost_objects.fetch_add(1, Relaxed);
            }
            for a in actions.iter() {
                if let Action::Send { to, msg } = a {
                    if matches!(msg.kind, MsgKind::ReadReq | MsgKind::WriteReq) {
                        e.asked = u16::try_from(*to).ok();
                    }
                }
            }
            let granted = match self.apply(set, object, e, &actions, &mut None, &mut out) {
                Ok(g) => g,
                Err(_) => {
                    self.counters.send_failed.fetch_add(1, Relaxed);
                    false
                }
            };
            if granted && e.abandoned {
                e.abandoned = false;
                for m in self.release(set, object, e) {
                    if out.push(m, GFP_KERNEL).is_err() {
                        self.counters.send_failed.fetch_add(1, Relaxed);
                    }
                }
            }
        }
        drop(kept);
        let p = &mut t.rebuild;
        p.members = Some(core::mem::take(&mut p.survivors));
        p.last_epoch = epoch;
        p.epoch = None;
        p.recorded = false;
        p.reported = false;
        p.marks.retain(|(e, _)| *e > epoch);
        drop(t);
        self.counters.rebuilds.fetch_add(1, Relaxed);
        self.changed.notify_all();
        self.send_all(out);
        self.tell_user_space(c"lost", "SSI_EPOCH", u64::from(epoch));
    }

    /// Sends the definitions of every set (or only of `only`) to `to`.
    pub(crate) fn send_definitions(&self, to: u16, only: Option<u32>) {
        let r = (|| -> Result<KVec<u8>> {
            let defs = self.set_definitions(only)?;
            let mut msg = header(Kind::Define, 0, defs.len())?;
            for d in defs.iter() {
                msg.extend_from_slice(&control::encode_define(d), GFP_KERNEL)?;
            }
            Ok(msg)
        })();
        match r {
            Ok(msg) if msg.len() > HEADER_LEN => self.send_all_one(to, msg),
            Ok(_) => {}
            Err(_) => {
                self.counters.send_failed.fetch_add(1, Relaxed);
            }
        }
        // A `Define` takes in every node: the limited sets' members
        // follow (treenet keeps the order).
        let r = (|| -> Result<KVec<u8>> {
            let pairs = self.set_members(only)?;
            let mut msg = header(Kind::Members, 0, pairs.len())?;
            for &(set, node) in pairs.iter() {
                msg.extend_from_slice(&control::encode_member(set, node), GFP_KERNEL)?;
            }
            Ok(msg)
        })();
        match r {
            Ok(msg) if msg.len() > HEADER_LEN => self.send_all_one(to, msg),
            Ok(_) => {}
            Err(_) => {
                self.counters.send_failed.fetch_add(1, Relaxed);
            }
        }
    }

    /// Tells every alive member about set `set` (just defined here).
    pub(crate) fn announce_set(&self, set: u32) {
        let members: KVec<u16> = {
            let c = self.membership.coord.lock();
            let mut v = KVec::new();
            for m in c.members.iter().filter(|m| m.alive) {
                if v.push(m.node, GFP_KERNEL).is_err() {
                    // That member is not told of the set.
                    self.counters.send_failed.fetch_add(1, Relaxed);
                }
            }
            v
        };
        for &n in members.iter() {
            self.send_definitions(n, Some(set));
        }
    }

    /// Sets (or, at unload, clears) what tells user space of changes.
    pub(crate) fn set_change_notifier(&self, n: Option<ChangeNotifier>) {
        *self.membership.notifier.lock() = n;
    }

    /// Membership changed: pollers of `attr` wake up, and `/dev/ssi`
    /// sends a `change` uevent with `key=value`.
    pub(crate) fn tell_user_space(&self, attr: &CStr, key: &str, value: u64) {
        let mut buf = [0u8; 48];
        let mut w = SysfsWriter::new(&mut buf);
        if write!(w, "{key}={}\0", U64(value)).is_err() {
            return;
        }
        let Ok(env) = CStr::from_bytes_with_nul(w.as_bytes()) else {
            return;
        };
        if let Some(n) = self.membership.notifier.lock().as_ref() {
            n.changed(attr, env);
        }
    }

    /// A heartbeat, at the coordinator.
    fn heard(&self, src: u16) {
        self.counters.heartbeats.fetch_add(1, Relaxed);
        let mut c = self.membership.coord.lock();
        let now = now_ns();
        let mut changed = None;
        let mut tell_sets = false;
        let co = &mut *c;
        if let Some(m) = co.members.iter_mut().find(|m| m.node == src) {
            if m.left {
                // Removed: ignored until `add_nodes`.
                return;
            }
            m.last_heard_ns = now;
            if !m.alive && now < m.readmit_ns {
                // It did not report last time: not yet.
                self.counters.readmits_deferred.fetch_add(1, Relaxed);
                return;
            }
            if !m.alive {
                // Back (ssi reloaded there, or a false suspicion): joins
                // through a rebuild that forgets what it held.  Noted
                // first: without memory the heartbeat is refused (counted)
                // and the next one tries again.
                if !co.rejoining.contains(&src) && co.rejoining.push(src, GFP_KERNEL).is_err() {
                    self.counters.nomem_retries.fetch_add(1, Relaxed);
                    return;
                }
                m.alive = true;
                tell_sets = true;
                co.join_pending = true;
            }
        } else {
            let member = Member {
                node: src,
                last_heard_ns: now,
                alive: true,
                left: false,
                unreported: 0,
                readmit_ns: 0,
            };
            if co.members.push(member, GFP_KERNEL).is_err() {
                // Refused (counted): the next heartbeat tries again.
                self.counters.nomem_retries.fetch_add(1, Relaxed);
                return;
            }
            tell_sets = true;
            if co.rebuilt {
                co.join_pending = true;
            } else {
                co.generation += 1;
                changed = Some(co.generation);
            }
        }
        let kick = c.join_pending;
        drop(c);
        if tell_sets {
            // A new (or returning) member learns the sets defined so far.
            self.send_definitions(src, None);
        }
        if let Some(g) = changed {
            self.tell_user_space(c"members", "SSI_GENERATION", g);
        }
        if kick {
            self.membership.kicker.kick();
        }
    }

    /// treenet says `node` is down: at the coordinator, a member that is
    /// down is dead now.
    pub(crate) fn member_down(&self, node: u16) {
        let mut c = self.membership.coord.lock();
        if let Some(m) = c.members.iter_mut().find(|m| m.node == node && m.alive) {
            m.last_heard_ns = 0;
            drop(c);
            self.membership.kicker.kick();
        }
    }

    /// `lost` (on the ION): an administrator acknowledges that object
    /// (`set`, `object`) is lost: every node forgets the loss, and the next
    /// access creates the object again (zeros, or what its set's file
    /// says).  Done by the `ssi_member` thread between rebuilds (`lost`
    /// lists the object until then).  `EINVAL` elsewhere, `ENOENT` if it
    /// is not lost, `EBUSY` during a rebuild.
    pub(crate) fn acknowledge_loss(&self, set: u32, object: u64) -> Result {
        if treenet::node_id()? != treenet::ion()? {
            return Err(EINVAL);
        }
        {
            let t = self.table.lock();
            if t.rebuild.is_frozen() {
                return Err(EBUSY);
            }
            let e = t.objects.get(&(set, object)).ok_or(ENOENT)?;
            if !e.lost {
                return Err(ENOENT);
            }
        }
        self.membership
            .coord
            .lock()
            .acks
            .push((set, object), GFP_KERNEL)?;
        self.membership.kicker.kick();
        Ok(())
    }

    /// Forgets the acknowledged loss of (`set`, `object`) here and on every
    /// member (in the `ssi_member` thread, between rebuilds).
    fn forget_loss(&self, set: u32, object: u64) -> Result {
        if let Some(e) = self.table.lock().objects.get_mut(&(set, object)) {
            e.lost = false;
        }
        let (epoch, members) = {
            let mut c = self.membership.coord.lock();
            c.lost.remove(&(set, object));
            let mut v = KVec::new();
            for m in c.members.iter().filter(|m| m.alive) {
                v.push(m.node, GFP_KERNEL)?;
            }
            (c.epoch, v)
        };
        self.counters.losses_acknowledged.fetch_add(1, Relaxed);
        for &n in members.iter() {
            let mut msg = header(Kind::Forget, epoch, 1)?;
            msg.extend_from_slice(&control::encode_object(set, object), GFP_KERNEL)?;
            self.send_all_one(n, msg);
        }
        self.tell_user_space(c"lost", "SSI_EPOCH", u64::from(epoch));
        Ok(())
    }

    /// `members`: `generation G epoch E`, then one line per member: node,
    /// `alive` or `dead`, milliseconds since last heard.
    pub(crate) fn show_members(&self, w: &mut SysfsWriter<'_>) -> Result {
        let c = self.membership.coord.lock();
        writeln!(w, "generation {} epoch {}", U64(c.generation), c.epoch)?;
        let now = now_ns();
        for m in c.members.iter() {
            let state = match (m.alive, m.left) {
                (true, _) => "alive",
                (false, true) => "left",
                (false, false) => "dead",
            };
            let ago = ns_to_ms(now.saturating_sub(m.last_heard_ns));
            writeln!(w, "{} {state} {}", m.node, U64(ago))?;
        }
        Ok(())
    }

    /// `remove_nodes` (on the ION): removes `node` gracefully, in the
    /// background (`members` shows it `left` once done).  `EINVAL` for the
    /// ION itself, a node that is not an alive member, or elsewhere than
    /// on the ION.
    pub(crate) fn remove_node(&self, node: u16) -> Result {
        if treenet::node_id()? != treenet::ion()? || node == treenet::ion()? {
            return Err(EINVAL);
        }
        let mut c = self.membership.coord.lock();
        if !c.members.iter().any(|m| m.node == node && m.alive) {
            return Err(EINVAL);
        }
        if !c.removals.contains(&node) {
            c.removals.push(node, GFP_KERNEL)?;
        }
        drop(c);
        self.membership.kicker.kick();
        Ok(())
    }

    /// `add_nodes` (on the ION): lets a removed node join again at its
    /// next heartbeat (a node never removed joins by being heard).
    pub(crate) fn add_node(&self, node: u16) -> Result {
        if treenet::node_id()? != treenet::ion()? {
            return Err(EINVAL);
        }
        let mut c = self.membership.coord.lock();
        if let Some(m) = c.members.iter_mut().find(|m| m.node == node) {
            m.left = false;
        }
        Ok(())
    }

    /// The objects this node owns, as an `Owned` message, once nothing it
    /// asked for is pending (`None` while something is).
    fn owned_list(&self) -> Option<Result<KVec<u8>>> {
        let t = self.table.lock();
        if t.objects
            .values()
            .any(|e| e.coh.held().is_some() || e.coh.wanted().is_some())
        {
            return None;
        }
        Some((|| {
            let mut entries = KVec::new();
            let mut count = 0;
            for (&(set, object), e) in t.objects.iter() {
                if let (h @ Holding::Owner { created: true, .. }, _) = e.coh.holding(&[]) {
                    entries
                        .extend_from_slice(&control::encode_report(set, object, h), GFP_KERNEL)?;
                    count += 1;
                }
            }
            let mut b = header(Kind::Owned, 0, count)?;
            b.extend_from_slice(&entries, GFP_KERNEL)?;
            Ok(b)
        })())
    }

    /// `lost`: one line per lost object this node knows (`set object`).
    pub(crate) fn show_lost(&self, w: &mut SysfsWriter<'_>) -> Result {
        let t = self.table.lock();
        for (&(set, object), e) in t.objects.iter() {
            if e.lost {
                writeln!(w, "{set} {}", U64(object))?;
            }
        }
        Ok(())
    }
}

/// The `ssi_member` thread: heartbeats (CNs), failure detection and
/// rebuilds (ION).
pub(crate) struct Membership {
    pub(crate) containers: Arc<Containers>,
}

impl ThreadBody for Membership {
    fn kicker(&self) -> &Kicker {
        &self.containers.membership.kicker
    }

    fn run(&self, ctx: &ThreadCtx<'_>) {
        while !ctx.should_stop() {
            let period = self
                .containers
                .membership
                .heartbeat_ms
                .load(Relaxed)
                .max(10);
            match (treenet::node_id(), treenet::ion()) {
                (Ok(me), Ok(ion)) if me == ion => self.coordinate(ctx, me),
                (Ok(_), Ok(ion)) => {
                    self.send_owned_list(ion);
                    let c = &self.containers;
                    match header(Kind::Heartbeat, 0, 0) {
                        Ok(hb) => {
                            if c.send(ion, Outgoing::Built(hb)) {
                                c.counters.heartbeats.fetch_add(1, Relaxed);
                            }
                        }
                        Err(_) => {
                            c.counters.send_failed.fetch_add(1, Relaxed);
                        }
                    }
                }
                _ => {}
            }
            ctx.wait(ms_to_jiffies(u64::from(period)));
        }
    }
}

impl Membership {
    /// A leaving node: sends the list of what it owns once nothing it
    /// asked for is pending.
    fn send_owned_list(&self, ion: u16) {
        let c = &self.containers;
        if !c.table.lock().rebuild.owed_list {
            return;
        }
        match c.owned_list() {
            None => {}
            Some(Ok(list)) => {
                if c.send(ion, Outgoing::Built(list)) {
                    c.table.lock().rebuild.owed_list = false;
                }
            }
            Some(Err(_)) => {
                c.counters.dropped_nomem.fetch_add(1, Relaxed);
            }
        }
    }

    /// Removes `node` gracefully: it leaves, the coordinator takes what
    /// it owns, then rebuilds without it.  A node that does not answer is
    /// dead instead.
    fn remove(&self, ctx: &ThreadCtx<'_>, me: u16, node: u16) -> Result {
        let c = &self.containers;
        let m = &c.membership;
        m.coord.lock().owned = None;
        if !c.send(node, Outgoing::Built(header(Kind::Leave, 0, 0)?)) {
            // Refused by treenet (counted): the node is unreachable.
            return Err(EHOSTUNREACH);
        }
        let deadline = deadline_after_ms(2 * REPORT_TIMEOUT_MS);
        let list = loop {
            if let Some((n, b)) = m.coord.lock().owned.take() {
                if n == node {
                    break Some(b);
                }
            }
            if now_ns() > deadline || ctx.should_stop() {
                break None;
            }
            ctx.wait(ms_to_jiffies(10));
        };
        let mut taken = 0u32;
        if let Some(list) = &list {
            if let Ok(h) = ControlHeader::decode(list, list.len()) {
                if h.kind == Kind::Owned {
                    for chunk in list[HEADER_LEN..].chunks_exact(REPORT_ENTRY_LEN) {
                        let mut entry = [0u8; REPORT_ENTRY_LEN];
                        entry.copy_from_slice(chunk);
                        let Ok((set, object, _)) = control::decode_report(&entry) else {
                            continue;
                        };
                        // A write that changes nothing moves ownership
                        // (and the contents) here.
                        match c.access(set, object, Access::Write, |_| ()) {
                            Ok(()) => taken += 1,
                            Err(e) => {
                                pr_warn!("removing node {node}: an object of set {set}: {e:?}\n")
                            }
                        }
                    }
                }
            }
        }
        let mut survivors = KVec::new();
        {
            let mut co = m.coord.lock();
            for mem in co.members.iter_mut().filter(|x| x.node == node) {
                mem.alive = false;
                mem.left = list.is_some();
            }
            survivors.push(me, GFP_KERNEL)?;
            for mem in co.members.iter().filter(|x| x.alive && x.node != me) {
                survivors.push(mem.node, GFP_KERNEL)?;
            }
        }
        if list.is_some() {
            pr_info!("node {node} leaves: {taken} objects taken over\n");
        } else {
            pr_info!("node {node} did not answer its removal: dead\n");
        }
        self.rebuild(ctx, me, survivors)
    }

    /// Declares silent members dead and rebuilds when the membership
    /// changed.
    fn coordinate(&self, ctx: &ThreadCtx<'_>, me: u16) {
        let m = &self.containers.membership;
        let acks = core::mem::take(&mut m.coord.lock().acks);
        for (set, object) in acks {
            if self.containers.forget_loss(set, object).is_err() {
                self.containers.counters.send_failed.fetch_add(1, Relaxed);
            }
        }
        let removals = core::mem::take(&mut m.coord.lock().removals);
        for node in removals {
            if let Err(e) = self.remove(ctx, me, node) {
                pr_err!("removing node {node}: {e:?}\n");
            }
        }
        let timeout_ns = u64::from(m.heartbeat_timeout_ms.load(Relaxed)) * 1_000_000;
        let now = now_ns();
        let mut c = m.coord.lock();
        let mut changed = core::mem::take(&mut c.join_pending);
        for mem in c.members.iter_mut() {
            if mem.alive && now.saturating_sub(mem.last_heard_ns) > timeout_ns {
                mem.alive = false;
                changed = true;
                pr_info!("node {} is dead (silent)\n", mem.node);
            }
        }
        if !changed {
            return;
        }
        let mut survivors = KVec::new();
        if survivors.push(me, GFP_KERNEL).is_err() {
            return;
        }
        for mem in c.members.iter().filter(|m| m.alive && m.node != me) {
            if survivors.push(mem.node, GFP_KERNEL).is_err() {
                return;
            }
        }
        drop(c);
        match self.rebuild(ctx, me, survivors) {
            Ok(()) => {}
            // The thread is stopping (ssi unloads): nothing failed.
            Err(e) if e == EINTR && ctx.should_stop() => {
                pr_info!("rebuild abandoned: ssi is stopping\n");
            }
            Err(e) => pr_err!("rebuild failed: {e:?}\n"),
        }
    }

    /// Runs a rebuild with `survivors` (the coordinator first).
    fn rebuild(&self, ctx: &ThreadCtx<'_>, me: u16, mut survivors: KVec<u16>) -> Result {
        let c = &self.containers;
        let m = &c.membership;
        for _ in 0..REBUILD_ATTEMPTS {
            let epoch = {
                let mut co = m.coord.lock();
                co.epoch += 1;
                co.reports.clear();
                co.epoch
            };
            let mut freeze = header(Kind::Freeze, epoch, survivors.len())?;
            for &n in survivors.iter() {
                freeze.extend_from_slice(&control::encode_node(u32::from(n)), GFP_KERNEL)?;
            }
            for &n in survivors.iter().filter(|&&n| n != me) {
                c.send(n, Outgoing::Borrowed(&freeze));
            }
            let mut local = KVec::new();
            local.extend_from_slice(&survivors, GFP_KERNEL)?;
            c.freeze(epoch, local);
            // Wait for every report.
            let deadline = deadline_after_ms(REPORT_TIMEOUT_MS);
            let missing = loop {
                let missing: KVec<u16> = {
                    let co = m.coord.lock();
                    let mut v = KVec::new();
                    for &n in survivors.iter() {
                        if !co.reports.iter().any(|(r, _)| *r == n) {
                            v.push(n, GFP_KERNEL)?;
                        }
                    }
                    v
                };
                if missing.is_empty() || now_ns() > deadline || ctx.should_stop() {
                    break missing;
                }
                ctx.wait(ms_to_jiffies(10));
            };
            if ctx.should_stop() {
                return Err(EINTR);
            }
            // The survivors that did not report are dead.  This node
            // reports once every other survivor's mark came: when its own
            // report is missing, those whose marks never came are silent
            // too (a node that says hello but takes nothing never saw the
            // Freeze, and would hold every rebuild that waits for it).
            let own_missing = missing.contains(&me);
            let mut silent = KVec::new();
            for &n in missing.iter().filter(|&&n| n != me) {
                silent.push(n, GFP_KERNEL)?;
            }
            if own_missing {
                for n in c.table.lock().rebuild.unmarked(epoch, me)? {
                    if !silent.contains(&n) {
                        silent.push(n, GFP_KERNEL)?;
                    }
                }
            }
            if !silent.is_empty() {
                let now = now_ns();
                let mut co = m.coord.lock();
                for mem in co.members.iter_mut() {
                    if silent.contains(&mem.node) {
                        mem.alive = false;
                        mem.unreported = mem.unreported.saturating_add(1);
                        let out = readmit_after_ns(mem.unreported);
                        mem.readmit_ns = now.saturating_add(out);
                        pr_info!(
                            "node {} did not report: dead, out for {} ms\n",
                            mem.node,
                            u32::try_from(ns_to_ms(out)).unwrap_or(u32::MAX)
                        );
                    }
                }
                drop(co);
                survivors.retain(|n| !silent.contains(n));
                continue;
            }
            if own_missing {
                // Every mark came: accesses stay held here.  Try again.
                continue;
            }
            for mem in m.coord.lock().members.iter_mut() {
                if survivors.contains(&mem.node) {
                    mem.unreported = 0;
                }
            }
            return self.decide_and_resume(me, epoch, &survivors);
        }
        Err(ETIMEDOUT)
    }

    /// Tallies the reports and sends every survivor the outcomes.
    fn decide_and_resume(&self, me: u16, epoch: u32, survivors: &[u16]) -> Result {
        let c = &self.containers;
        let m = &c.membership;
        let mut tallies: RBTree<(u32, u64), Tally> = RBTree::new();
        let mut co = m.coord.lock();
        for (node, bytes) in co.reports.iter() {
            let stale = co.rejoining.contains(node);
            for chunk in bytes[HEADER_LEN..].chunks_exact(REPORT_ENTRY_LEN) {
                let mut entry = [0u8; REPORT_ENTRY_LEN];
                entry.copy_from_slice(chunk);
                let Ok((set, object, holding)) = control::decode_report(&entry) else {
                    c.counters.malformed.fetch_add(1, Relaxed);
                    continue;
                };
                if tallies.get(&(set, object)).is_none() {
                    tallies.try_create_and_insert((set, object), Tally::new(), GFP_KERNEL)?;
                }
                if let Some(t) = tallies.get_mut(&(set, object)) {
                    if holding != Holding::Nothing && !stale {
                        t.add(u32::from(*node), holding);
                    }
                }
            }
        }
        // Objects lost earlier stay lost.
        let mut lost_before = KVec::new();
        for &key in co.lost.keys() {
            lost_before.push(key, GFP_KERNEL)?;
        }
        let mut entries = KVec::new();
        let mut count = 0usize;
        for (&(set, object), t) in tallies.iter() {
            let outcome = if lost_before.contains(&(set, object)) {
                Outcome::Lost
            } else {
                t.outcome()
            };
            if outcome == Outcome::Lost && co.lost.get(&(set, object)).is_none() {
                co.lost
                    .try_create_and_insert((set, object), (), GFP_KERNEL)?;
                pr_warn!("an object of set {set} is lost (see /sys/kernel/ssi/lost)\n");
            }
            entries.extend_from_slice(&control::encode_resume(set, object, outcome), GFP_KERNEL)?;
            count += 1;
        }
        for &(set, object) in lost_before.iter() {
            if tallies.get(&(set, object)).is_none() {
                entries.extend_from_slice(
                    &control::encode_resume(set, object, Outcome::Lost),
                    GFP_KERNEL,
                )?;
                count += 1;
            }
        }
        co.rebuilt = true;
        co.generation += 1;
        let generation = co.generation;
        co.rejoining.retain(|n| !survivors.contains(n));
        co.reports.clear();
        drop(co);
        c.tell_user_space(c"members", "SSI_GENERATION", generation);
        let mut resume = header(Kind::Resume, epoch, count)?;
        resume.extend_from_slice(&entries, GFP_KERNEL)?;
        for &n in survivors.iter().filter(|&&n| n != me) {
            c.send(n, Outgoing::Borrowed(&resume));
        }
        c.on_resume(epoch, &entries);
        pr_info!(
            "rebuild {epoch} done, {count} objects, {} nodes\n",
            survivors.len()
        );
        Ok(())
    }
}
