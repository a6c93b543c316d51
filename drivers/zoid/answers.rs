// SPDX-License-Identifier: GPL-2.0

//! How the ION answers its CNs: never waiting for a CN's treenet queue.
//!
//! Every answer (a worker's reply, an error of the receive path, an
//! attach reply, a deferred call's answer) is sent without waiting for
//! room in its CN's treenet queue: the ION serves every CN, and a thread
//! that waited for one that takes no data (a CN acknowledging nothing)
//! would be lost to the others for up to 4 x `peer_timeout_ms`.  An
//! answer that finds the queue full waits in the backlog instead, which
//! the receive thread sends as room comes, each CN's answers in their
//! order.  A CN keeps at most `max_per_cn` answers of at most
//! `max_bytes_per_cn` bytes there; past either its oldest are dropped
//! (`replies_dropped_backlog`), the ones its callers most likely gave up
//! on, and their calls end in the ledger as not delivered, so a copy the
//! CN sends again runs again.  An honest CN has at most `max_per_cn`
//! calls in flight, each answer at most `max_reply` bytes, and drains its
//! queue: it loses none unless its answers outgrow treenet's queue and
//! `max_bytes_per_cn` together.
//!
//! The backlog's lock is a leaf: nothing, not even the ledger, is taken
//! under it.

use crate::call_ledger::Ledgers;
use crate::server::ServerKnobs;
use crate::stats::Stats;
use crate::traffic;
use crate::treenet;
use crate::zoid_kernel::kthread::Kicker;
use kernel::prelude::*;
use kernel::sync::atomic::Relaxed;
use kernel::sync::{Arc, Mutex};

/// An answer's bytes: a copy, or the treenet message a worker built it in.
enum Answer {
    Copy(KVVec<u8>),
    Message(treenet::Message),
}

impl Answer {
    fn len(&self) -> usize {
        match self {
            Self::Copy(b) => b.len(),
            Self::Message(m) => m.len(),
        }
    }

    /// Sends it to `dst` without waiting (`EAGAIN` if its queue is full).
    fn send(&self, dst: u16) -> Result {
        match self {
            Self::Copy(b) => traffic::send(dst, b, false),
            Self::Message(m) => traffic::send_message(dst, m, false),
        }
    }
}

/// An answer waiting for room in its CN's treenet queue.
struct Backlogged {
    dst: u16,
    /// The call it ends in the ledger once sent or dropped (`None`: an
    /// attach reply or an answer outside the ledger).
    tag: Option<u32>,
    answer: Answer,
}

/// The ION's answers to its CNs (see the module documentation).
#[pin_data]
pub(crate) struct Answers {
    knobs: Arc<ServerKnobs>,
    stats: Arc<Stats>,
    /// Each CN's calls running and answered lately: an answer ends its
    /// call there.
    ledger: Arc<Ledgers>,
    /// Wakes the receive thread, which sends the backlog.
    kicker: Arc<Kicker>,
    /// A leaf lock: nothing is taken under it.
    #[pin]
    backlog: Mutex<KVec<Backlogged>>,
}

impl Answers {
    /// The answers of a server with `knobs`, whose receive thread
    /// `kicker` wakes.
    pub(crate) fn new(
        knobs: Arc<ServerKnobs>,
        stats: Arc<Stats>,
        ledger: Arc<Ledgers>,
        kicker: Arc<Kicker>,
    ) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                knobs,
                stats,
                ledger,
                kicker,
                backlog <- kernel::new_mutex!(KVec::new(), "zoid::backlog"),
            }),
            GFP_KERNEL,
        )
    }

    /// Sends `bytes`, an answer to CN `dst`, without waiting, and counts
    /// it; if `dst`'s queue is full it waits in the backlog.  `tag`, a
    /// call admitted to the ledger, ends there once the answer is sent or
    /// dropped.  `false` if treenet refused it outright (the CN is gone;
    /// counted in `reply_send_failed`): one that waits, even if it is
    /// dropped later, is `true`.
    pub(crate) fn answer(&self, dst: u16, bytes: &[u8], tag: Option<u32>) -> bool {
        self.count_sent(bytes.len());
        match traffic::send(dst, bytes, false) {
            Ok(()) => self.answered(dst, tag, true),
            Err(e) if e == EAGAIN => {
                let mut copy = KVVec::new();
                if copy.extend_from_slice(bytes, GFP_KERNEL).is_err() {
                    self.stats.c.dropped_nomem.fetch_add(1, Relaxed);
                    self.drop_answer(dst, tag);
                } else {
                    self.defer(dst, Answer::Copy(copy), tag);
                }
            }
            Err(_) => {
                self.stats.c.reply_send_failed.fetch_add(1, Relaxed);
                self.answered(dst, tag, false);
                return false;
            }
        }
        true
    }

    /// [`Answers::answer`] for an answer built in a treenet message (a
    /// worker's large reply), kept as it is if it must wait.
    pub(crate) fn answer_message(&self, dst: u16, msg: treenet::Message, tag: Option<u32>) -> bool {
        self.count_sent(msg.len());
        match traffic::send_message(dst, &msg, false) {
            Ok(()) => self.answered(dst, tag, true),
            Err(e) if e == EAGAIN => self.defer(dst, Answer::Message(msg), tag),
            Err(_) => {
                self.stats.c.reply_send_failed.fetch_add(1, Relaxed);
                self.answered(dst, tag, false);
                return false;
            }
        }
        true
    }

    fn count_sent(&self, len: usize) {
        self.stats.c.bytes_sent.fetch_add(len as u64, Relaxed);
        self.stats.c.msgs_sent.fetch_add(1, Relaxed);
    }

    /// Ends call `tag` of `dst` in the ledger: a copy the CN sends again
    /// runs again unless the answer was `sent`.
    pub(crate) fn answered(&self, dst: u16, tag: Option<u32>, sent: bool) {
        if let Some(tag) = tag {
            self.ledger.finish(dst, tag, sent);
        }
    }

    /// Keeps an answer that found `dst`'s queue full for the receive
    /// thread.  `dst` keeps at most `max_per_cn` answers of at most
    /// `max_bytes_per_cn` bytes there (this one counted; alone, it is
    /// always kept): its oldest make room.
    fn defer(&self, dst: u16, answer: Answer, tag: Option<u32>) {
        let cap = self.knobs.max_per_cn.load(Relaxed).max(1) as usize;
        let max_bytes = self.knobs.max_bytes_per_cn.load(Relaxed) as usize;
        let pushed = loop {
            let mut b = self.backlog.lock();
            let mut count = 0;
            let mut bytes = answer.len();
            for a in b.iter().filter(|a| a.dst == dst) {
                count += 1;
                bytes = bytes.saturating_add(a.answer.len());
            }
            if count == 0 || (count < cap && bytes <= max_bytes) {
                break b.push(Backlogged { dst, tag, answer }, GFP_KERNEL).is_ok();
            }
            let oldest = b
                .iter()
                .position(|a| a.dst == dst)
                .and_then(|i| b.remove(i).ok());
            // The ledger is not taken under the backlog's lock.
            drop(b);
            // (Always one: `count` found it.)
            let Some(old) = oldest else {
                break false;
            };
            self.drop_answer(old.dst, old.tag);
        };
        if pushed {
            self.stats.c.replies_deferred.fetch_add(1, Relaxed);
            self.kicker.kick();
        } else {
            self.stats.c.dropped_nomem.fetch_add(1, Relaxed);
            self.drop_answer(dst, tag);
        }
    }

    /// An answer given up: counted, and its call ended in the ledger as
    /// not delivered (a copy runs again).
    fn drop_answer(&self, dst: u16, tag: Option<u32>) {
        self.stats.c.replies_dropped_backlog.fetch_add(1, Relaxed);
        self.stats.c.reply_send_failed.fetch_add(1, Relaxed);
        self.answered(dst, tag, false);
    }

    /// Sends what the backlog holds, as room allows (receive thread):
    /// whether answers are left waiting.
    // Not inlined into the receive thread's loop: its frame would pass
    // the 440's budget (scripts/check-stack-frames.py).
    #[inline(never)]
    pub(crate) fn flush(&self) -> bool {
        let waiting = core::mem::take(&mut *self.backlog.lock());
        if waiting.is_empty() {
            return false;
        }
        let mut left = KVec::new();
        let mut full: KVec<u16> = KVec::new();
        for a in waiting {
            // Answers to one CN keep their order.
            let r = if full.contains(&a.dst) {
                Err(EAGAIN)
            } else {
                a.answer.send(a.dst)
            };
            match r {
                Ok(()) => self.answered(a.dst, a.tag, true),
                Err(e) if e == EAGAIN => {
                    if !full.contains(&a.dst) && full.push(a.dst, GFP_KERNEL).is_err() {
                        self.stats.c.dropped_nomem.fetch_add(1, Relaxed);
                    }
                    self.keep(&mut left, a);
                }
                Err(_) => {
                    self.stats.c.reply_send_failed.fetch_add(1, Relaxed);
                    self.answered(a.dst, a.tag, false);
                }
            }
        }
        if left.is_empty() {
            return false;
        }
        self.put_back(left);
        true
    }

    /// Puts `left`, answers taken out of the backlog, back in front of
    /// those deferred meanwhile.  They are moved outside the lock: a
    /// failure to keep one takes the ledger.
    fn put_back(&self, mut left: KVec<Backlogged>) {
        loop {
            let newer = core::mem::take(&mut *self.backlog.lock());
            for a in newer {
                self.keep(&mut left, a);
            }
            let mut b = self.backlog.lock();
            if b.is_empty() {
                *b = left;
                return;
            }
        }
    }

    /// Appends `a` to `list` (not under the backlog's lock): if there is
    /// no room it is dropped.
    fn keep(&self, list: &mut KVec<Backlogged>, a: Backlogged) {
        let (dst, tag) = (a.dst, a.tag);
        if list.push(a, GFP_KERNEL).is_err() {
            self.stats.c.dropped_nomem.fetch_add(1, Relaxed);
            self.drop_answer(dst, tag);
        }
    }

    /// Drops the answers waiting for `node`, gone (its ledger is
    /// forgotten with it).  They are freed outside the lock.
    pub(crate) fn drop_node(&self, node: u16) {
        let waiting = core::mem::take(&mut *self.backlog.lock());
        let mut left = KVec::new();
        let mut gone = 0u64;
        for a in waiting {
            if a.dst == node {
                gone += 1;
            } else {
                self.keep(&mut left, a);
            }
        }
        self.stats.c.reply_send_failed.fetch_add(gone, Relaxed);
        if !left.is_empty() {
            self.put_back(left);
        }
    }
}
