// SPDX-License-Identifier: GPL-2.0

//! How ssi sends: never waiting for a node's treenet queue.
//!
//! Every ssi message (coherence, membership) is sent by
//! [`Containers::send`], which never waits for room in its destination's
//! treenet queue: `ssi_rx` serves every node, and a thread that waited
//! for one that takes no data (a CN whose kernel acknowledges nothing)
//! would be lost to the others for up to 4 x `peer_timeout_ms` a message.
//! A message that finds the queue full waits in the backlog instead,
//! which `ssi_rx` sends as room comes (looking again every
//! [`FLUSH_MS`] ms while anything waits).
//!
//! Order: the protocol relies on treenet's order per pair of nodes
//! (docs/ssi.md, "Reordering").  A message to a node some of whose
//! messages wait, or one of which `ssi_rx` is sending, waits behind them
//! even if the queue has room now; `ssi_rx` sends each node's messages in
//! order and stops at the first that finds no room.
//!
//! Bound: a node keeps at most `max_backlog_per_node` bytes there (the
//! memory its messages hold; one message alone is always kept).  A node
//! past it has taken nothing for a long time: everything waiting for it
//! is dropped (`backlog_dropped`), and what comes next waits as before.
//! The protocol cannot make up for those messages: that node's accesses
//! time out, and an object it asked for or holds may keep waiting for it
//! (as for a node that never answers) until a rebuild resets it.  An
//! honest node drains its queue: it loses nothing unless what is sent to
//! it at once outgrows its treenet queue and `max_backlog_per_node`
//! together.  A node that goes down loses what waited for it, as treenet
//! fails what it had queued.
//!
//! The backlog's lock is a leaf: nothing is taken under it (messages
//! dropped are freed after unlocking).

use core::mem::size_of;

use kernel::prelude::*;
use kernel::sync::atomic::Relaxed;

use crate::container::{Containers, CHANNEL};
use crate::treenet;
use crate::zoid_kernel::sysfs::SysfsWriter;

/// How often `ssi_rx` tries again while messages wait (ms).
pub(crate) const FLUSH_MS: u64 = 5;

/// `max_backlog_per_node` by default (bytes).
pub(crate) const MAX_BACKLOG_PER_NODE: u32 = 8 << 20;
/// The smallest `max_backlog_per_node`.
pub(crate) const MIN_BACKLOG_PER_NODE: u32 = 64 << 10;
/// The largest `max_backlog_per_node`.
pub(crate) const MAX_BACKLOG_PER_NODE_LIMIT: u32 = 1 << 30;

/// A message to send.
pub(crate) enum Outgoing<'a> {
    /// Built for this send: kept as it is if it must wait.
    Built(KVec<u8>),
    /// The caller's (sent to several nodes): copied if it must wait.
    Borrowed(&'a [u8]),
}

impl Outgoing<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Self::Built(b) => b,
            Self::Borrowed(b) => b,
        }
    }

    /// The message as the backlog keeps it (`ENOMEM`: no room for a copy).
    fn into_kept(self) -> Result<KVec<u8>> {
        match self {
            Self::Built(b) => Ok(b),
            Self::Borrowed(b) => {
                let mut copy = KVec::with_capacity(b.len(), GFP_KERNEL)?;
                copy.extend_from_slice(b, GFP_KERNEL)?;
                Ok(copy)
            }
        }
    }
}

/// The memory a waiting message holds: its buffer and its slot.
fn weight(m: &KVec<u8>) -> usize {
    m.capacity().saturating_add(size_of::<KVec<u8>>())
}

/// What was cut from a queue: how many messages, and them (to be freed
/// after unlocking).
type Cut = (usize, KVVec<KVec<u8>>);

/// The messages waiting for one node.
struct Queue {
    to: u16,
    /// Oldest first: `msgs[sent..]` wait (those before went, leaving
    /// empty slots until [`Queue::compact`]).
    msgs: KVVec<KVec<u8>>,
    sent: usize,
    /// The weight of `msgs[sent..]`.
    weight: usize,
    /// `ssi_rx` is sending a message it took from here: what comes waits
    /// behind it, even if nothing else does.
    sending: bool,
    /// Grows each time what waited is dropped: a message taken out before
    /// is not put back.
    cuts: u32,
}

impl Queue {
    fn waiting(&self) -> usize {
        self.msgs.len() - self.sent
    }

    /// Takes out everything that waits.
    fn cut(&mut self) -> Cut {
        let n = self.waiting();
        self.sent = 0;
        self.weight = 0;
        self.cuts = self.cuts.wrapping_add(1);
        (n, core::mem::take(&mut self.msgs))
    }

    /// Takes out the oldest message waiting, for `ssi_rx` to send (what
    /// comes meanwhile waits behind it), with the count of cuts to give
    /// it back with.
    fn take(&mut self) -> Option<(KVec<u8>, u32)> {
        let slot = self.msgs.get_mut(self.sent)?;
        let msg = core::mem::take(slot);
        self.sent += 1;
        self.weight = self.weight.saturating_sub(weight(&msg));
        self.sending = true;
        Some((msg, self.cuts))
    }

    /// The message [`Queue::take`] gave was sent (or refused for good).
    fn sent(&mut self) {
        self.sending = false;
        self.compact();
    }

    /// The message [`Queue::take`] gave found no room: back in front,
    /// unless what waited with it was cut meanwhile (then it is
    /// returned, to be dropped too).
    fn give_back(&mut self, msg: KVec<u8>, cuts: u32) -> Result<(), KVec<u8>> {
        self.sending = false;
        // Its slot is still free unless a cut emptied the queue: only
        // `ssi_rx` takes messages out and compacts.
        if self.cuts != cuts || self.sent == 0 {
            return Err(msg);
        }
        self.sent -= 1;
        self.weight = self.weight.saturating_add(weight(&msg));
        self.msgs[self.sent] = msg;
        Ok(())
    }

    /// Forgets the slots of the messages sent, once they are all sent or
    /// make half of them (so that a node that keeps draining while more
    /// come does not make `msgs` grow).
    fn compact(&mut self) {
        if self.sent == self.msgs.len() {
            self.msgs.clear();
            self.sent = 0;
        } else if self.sent >= 64 && self.sent * 2 >= self.msgs.len() {
            let sent = self.sent;
            let mut i = 0;
            self.msgs.retain(|_| {
                i += 1;
                i > sent
            });
            self.sent = 0;
        }
    }
}

/// Every node's waiting messages (under `ssi::backlog`).
#[derive(Default)]
pub(crate) struct Backlog {
    queues: KVec<Queue>,
}

impl Backlog {
    fn position(&self, to: u16) -> Option<usize> {
        self.queues.iter().position(|q| q.to == to)
    }

    fn find(&mut self, to: u16) -> Option<&mut Queue> {
        self.queues.iter_mut().find(|q| q.to == to)
    }

    /// Whether a message to `to` must wait behind others.
    fn holds(&self, to: u16) -> bool {
        self.queues
            .iter()
            .any(|q| q.to == to && (q.waiting() > 0 || q.sending))
    }

    /// Appends `msg` (of weight `w`) to `to`'s messages; if they weigh more
    /// than `max` with it, they are cut first.  Returns whether it was
    /// kept (`false`: no memory), and what was cut.
    fn push(&mut self, to: u16, msg: KVec<u8>, w: usize, max: usize) -> (bool, Option<Cut>) {
        let i = match self.position(to) {
            Some(i) => i,
            None => {
                let q = Queue {
                    to,
                    msgs: KVVec::new(),
                    sent: 0,
                    weight: 0,
                    sending: false,
                    cuts: 0,
                };
                if self.queues.push(q, GFP_KERNEL).is_err() {
                    return (false, None);
                }
                self.queues.len() - 1
            }
        };
        let q = &mut self.queues[i];
        let cut = if q.waiting() > 0 && q.weight.saturating_add(w) > max {
            Some(q.cut())
        } else {
            None
        };
        if q.msgs.push(msg, GFP_KERNEL).is_err() {
            return (false, cut);
        }
        q.weight = q.weight.saturating_add(w);
        (true, cut)
    }
}

impl Containers {
    /// Sends `msg` to `to` without waiting (see the module documentation):
    /// behind what waits for `to`, else now, else (its treenet queue full)
    /// into the backlog.  `false` if treenet refused it (the node is
    /// unreachable) or there was no memory to keep it, counted in
    /// `send_failed`; a message that waits is `true`, even if it is
    /// dropped later.  Call it without the table.
    pub(crate) fn send(&self, to: u16, msg: Outgoing<'_>) -> bool {
        if self.backlog.lock().holds(to) {
            return self.defer(to, msg);
        }
        match treenet::send(CHANNEL, to, msg.bytes(), false) {
            Ok(()) => {
                self.counters.msgs_sent.fetch_add(1, Relaxed);
                true
            }
            Err(e) if e == EAGAIN => self.defer(to, msg),
            Err(_) => {
                self.counters.send_failed.fetch_add(1, Relaxed);
                false
            }
        }
    }

    /// Keeps `msg` for `ssi_rx`, behind what waits for `to`.  Past
    /// `max_backlog_per_node`, what waited is dropped first.
    fn defer(&self, to: u16, msg: Outgoing<'_>) -> bool {
        let Ok(msg) = msg.into_kept() else {
            self.counters.send_failed.fetch_add(1, Relaxed);
            return false;
        };
        let max = self.max_backlog_per_node.load(Relaxed) as usize;
        let w = weight(&msg);
        let (kept, cut) = self.backlog.lock().push(to, msg, w, max);
        if let Some((n, msgs)) = cut {
            self.counters.backlog_dropped.fetch_add(n as u64, Relaxed);
            drop(msgs);
        }
        if !kept {
            self.counters.send_failed.fetch_add(1, Relaxed);
            return false;
        }
        self.counters.sends_deferred.fetch_add(1, Relaxed);
        self.rx_kicker.kick();
        true
    }

    /// Sends what the backlog holds, each node's messages in order, as
    /// room allows (`ssi_rx` only: it alone takes messages out and
    /// forgets a node's queue).  Returns whether messages still wait.
    // Not inlined into `ssi_rx`'s loop, whose frame it would grow
    // (scripts/check-stack-frames.py).
    #[inline(never)]
    pub(crate) fn flush_backlog(&self) -> bool {
        let mut i = 0;
        let mut waiting = false;
        loop {
            let Some(to) = self.backlog.lock().queues.get(i).map(|q| q.to) else {
                return waiting;
            };
            // Queues are forgotten only here: one left stays at `i`.
            if self.flush_to(to) {
                waiting = true;
                i += 1;
            }
        }
    }

    /// Sends `to`'s waiting messages in order until one finds no room.
    /// Returns whether its queue is left (with messages waiting, or
    /// emptied meanwhile, forgotten at the next flush); one with nothing
    /// left is forgotten.
    fn flush_to(&self, to: u16) -> bool {
        loop {
            let (msg, cuts) = {
                let mut b = self.backlog.lock();
                let Some(i) = b.position(to) else {
                    return false;
                };
                match b.queues[i].take() {
                    Some(taken) => taken,
                    None => {
                        let gone = b.queues.remove(i);
                        drop(b);
                        drop(gone);
                        return false;
                    }
                }
            };
            let r = treenet::send(CHANNEL, to, &msg, false);
            let mut b = self.backlog.lock();
            // (Still there: only this thread forgets a queue.)
            let Some(q) = b.find(to) else {
                return false;
            };
            match r {
                Ok(()) => {
                    q.sent();
                    self.counters.msgs_sent.fetch_add(1, Relaxed);
                }
                Err(e) if e == EAGAIN => {
                    if let Err(msg) = q.give_back(msg, cuts) {
                        // What waited with it was dropped meanwhile.
                        drop(b);
                        self.counters.backlog_dropped.fetch_add(1, Relaxed);
                        drop(msg);
                    }
                    return true;
                }
                Err(_) => {
                    q.sent();
                    self.counters.send_failed.fetch_add(1, Relaxed);
                }
            }
        }
    }

    /// Drops what waits for `node`, gone (treenet failed what it had
    /// queued for it too).  Its queue stays, empty, for `ssi_rx` to
    /// forget.
    pub(crate) fn drop_backlog(&self, node: u16) {
        let cut = self.backlog.lock().find(node).map(|q| q.cut());
        if let Some((n, msgs)) = cut {
            self.counters.backlog_dropped.fetch_add(n as u64, Relaxed);
            drop(msgs);
        }
    }

    /// Writes, for `/sys/kernel/ssi/backlog`, one line per node messages
    /// wait for (`node messages bytes`), as many as the page holds.
    pub(crate) fn show_backlog(&self, w: &mut SysfsWriter<'_>) -> Result {
        // The longest line, and the last one's room.
        const LINE: usize = 40;
        let b = self.backlog.lock();
        let mut nodes = b.queues.iter().filter(|q| q.waiting() > 0);
        while let Some(q) = nodes.next() {
            if w.remaining() < 2 * LINE {
                writeln!(w, "... {} more", nodes.count() + 1)?;
                break;
            }
            writeln!(w, "{} {} {}", q.to, q.waiting(), q.weight)?;
        }
        Ok(())
    }
}

#[kunit_tests(ssi_backlog)]
mod tests {
    use super::*;

    /// A message of `len` bytes, each `tag`.
    fn msg(tag: u8, len: usize) -> Result<KVec<u8>> {
        let mut m = KVec::with_capacity(len, GFP_KERNEL)?;
        m.resize(len, tag, GFP_KERNEL)?;
        Ok(m)
    }

    /// Appends a message of `len` bytes tagged `tag` to `to`'s, `max`
    /// bytes at most; returns how many were cut.
    fn push(b: &mut Backlog, to: u16, tag: u8, len: usize, max: usize) -> Result<usize> {
        let m = msg(tag, len)?;
        let w = weight(&m);
        let (kept, cut) = b.push(to, m, w, max);
        if !kept {
            return Err(ENOMEM);
        }
        Ok(cut.map_or(0, |(n, _)| n))
    }

    /// The tags of the messages waiting for `to`, oldest first.
    fn waiting(b: &mut Backlog, to: u16) -> Result<KVec<u8>> {
        let mut tags = KVec::new();
        if let Some(q) = b.find(to) {
            for m in q.msgs[q.sent..].iter() {
                tags.push(m[0], GFP_KERNEL)?;
            }
        }
        Ok(tags)
    }

    /// Each node's messages leave in the order they came, whatever comes
    /// for other nodes, and one that found no room goes back in front of
    /// those that came while it was out; what comes for a node waits
    /// behind a message being sent even if nothing else waits.
    #[test]
    fn each_nodes_messages_keep_their_order() -> Result {
        let mut b = Backlog::default();
        assert!(!b.holds(1));
        for (to, tag) in [(1, 1), (2, 10), (1, 2), (1, 3), (2, 11)] {
            assert_eq!(push(&mut b, to, tag, 100, usize::MAX)?, 0);
        }
        assert!(b.holds(1) && b.holds(2) && !b.holds(3));
        let q = b.find(1).ok_or(EINVAL)?;
        let (first, cuts) = q.take().ok_or(EINVAL)?;
        assert_eq!(first[0], 1);
        q.sent();
        let (second, cuts2) = q.take().ok_or(EINVAL)?;
        assert_eq!((second[0], cuts2), (2, cuts));
        // No room for it: back in front, before one that came meanwhile.
        assert_eq!(push(&mut b, 1, 4, 100, usize::MAX)?, 0);
        let q = b.find(1).ok_or(EINVAL)?;
        assert!(q.give_back(second, cuts2).is_ok());
        assert_eq!(&waiting(&mut b, 1)?[..], &[2, 3, 4]);
        assert_eq!(&waiting(&mut b, 2)?[..], &[10, 11]);
        // The last one out: what comes waits behind it.
        let q = b.find(2).ok_or(EINVAL)?;
        for tag in [10, 11] {
            let (m, _) = q.take().ok_or(EINVAL)?;
            assert_eq!(m[0], tag);
            if tag == 10 {
                q.sent();
            }
        }
        assert!(b.holds(2));
        let q = b.find(2).ok_or(EINVAL)?;
        q.sent();
        assert!(!b.holds(2));
        Ok(())
    }

    /// Past the bound, everything that waits is cut, and the new message
    /// waits alone; one taken out before the cut is not given back.
    #[test]
    fn past_the_bound_what_waits_is_dropped() -> Result {
        let mut b = Backlog::default();
        let w = weight(&msg(0, 1000)?);
        for tag in 1..=4 {
            assert_eq!(push(&mut b, 1, tag, 1000, 4 * w)?, 0);
        }
        let q = b.find(1).ok_or(EINVAL)?;
        let (out, cuts) = q.take().ok_or(EINVAL)?;
        assert_eq!(push(&mut b, 1, 5, 1000, 4 * w)?, 0);
        assert_eq!(push(&mut b, 1, 6, 1000, 4 * w)?, 4);
        assert_eq!(&waiting(&mut b, 1)?[..], &[6]);
        let q = b.find(1).ok_or(EINVAL)?;
        assert_eq!(q.weight, w);
        assert!(q.give_back(out, cuts).is_err());
        assert_eq!(&waiting(&mut b, 1)?[..], &[6]);
        // One message alone is kept whatever its size.
        assert_eq!(push(&mut b, 2, 7, 8 * w, 4 * w)?, 0);
        assert_eq!(&waiting(&mut b, 2)?[..], &[7]);
        Ok(())
    }

    /// Compaction forgets the slots of messages sent, in order.
    #[test]
    fn compaction_keeps_the_order() -> Result {
        let mut b = Backlog::default();
        for tag in 0..200u8 {
            push(&mut b, 1, tag, 8, usize::MAX)?;
        }
        let q = b.find(1).ok_or(EINVAL)?;
        for tag in 0..100u8 {
            let (m, _) = q.take().ok_or(EINVAL)?;
            assert_eq!(m[0], tag);
            q.sent();
        }
        assert_eq!((q.sent, q.msgs.len()), (0, 100));
        let tags = waiting(&mut b, 1)?;
        assert!(tags.iter().copied().eq(100..200u8));
        Ok(())
    }
}
