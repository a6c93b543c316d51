// SPDX-License-Identifier: GPL-2.0

//! The ION's side of zoidfs's relaxed consistency (ZOID's model): which
//! CNs have which files open, which one may cache a file, and the recalls
//! that take a grant back when a second CN opens the file.
//!
//! The decisions are `zoid_proto`'s [`relaxed`] functions (host-tested);
//! here they get their table, their messages and a clock.  An open that
//! must wait for a recall is deferred ([`Caller::defer`]), so no worker
//! sleeps while the holder writes its dirty data back (which needs
//! workers).  A holder that does not answer within [`RECALL_TIMEOUT_MS`]
//! (and did not go down, which ends its recalls at once) is given up on,
//! counted in `recall_timeouts`, and the waiting opens are answered.

use crate::plugin::{Caller, Deferred};
use crate::zoid_kernel::kthread::{KThread, Kicker, ThreadBody, ThreadCtx};
use crate::zoid_kernel::stats::counters;
use crate::zoid_kernel::time::{ms_to_jiffies, now_ns};
use crate::zoid_proto::zoid::marshal::{Encoder, Wire};
use crate::zoid_proto::zoid::plugin::CallResult;
use crate::zoid_proto::zoid::plugins::zoidfs::{
    self, relaxed, relaxed::Admit, relaxed::Opener, Handle, Recall, UPCALL_RECALL,
};
use kernel::alloc::kvec::PushError;
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::{Arc, Mutex};

/// How long an open waits for a holder's answer to a recall.
pub(crate) const RECALL_TIMEOUT_MS: u64 = 30_000;

counters! {
    /// Relaxed consistency's counters (`/sys/kernel/zoid/zoidfs_relaxed`).
    pub(crate) struct RelaxedStats {
        opens: "First opens of a file by a CN.",
        grants: "Opens answered with a grant (the CN's the only opener: it caches).",
        shared: "Opens answered without one (other CNs have the file open).",
        closes: "Last closes of a file by a CN.",
        recalls_sent: "Grants recalled because another CN opened the file.",
        recalls_answered: "Recalls the holder answered (dirty data written back).",
        recall_waits: "Opens that waited for recalls.",
        recall_timeouts: "Recalls given up on after the timeout.",
        recall_send_failed: "Recalls that could not be sent (the holder's gone).",
        refused_budget: "Opens refused with EAGAIN: their CN had max_relaxed_per_cn files open already.",
    }
}

/// One file some CN has open.
struct OpenFile {
    handle: Handle,
    /// The inode number CNs know it by (from the first open).
    ino: u64,
    openers: KVec<Opener>,
    /// Opens waiting for recalls.
    waiting: KVec<Deferred>,
    /// When the outstanding recalls were sent (ns), 0 if none.
    recall_since: u64,
}

/// The table of open files and the recall timer's state.
#[pin_data]
pub(crate) struct OpenTable {
    kicker: Kicker,
    #[pin]
    files: Mutex<Table>,
    pub(crate) stats: RelaxedStats,
    /// Files one CN may have open in the table (its budget; past it,
    /// opens fail with `EAGAIN`).
    pub(crate) max_per_cn: Atomic<u32>,
}

/// `max_relaxed_per_cn` at load.
const DEFAULT_MAX_PER_CN: u32 = 4096;

struct Table {
    files: KVec<OpenFile>,
    last_grant: u32,
}

/// A recall to send once the table is unlocked.
struct RecallTo {
    node: u16,
    grant: u32,
}

impl OpenTable {
    /// An empty table.
    pub(crate) fn new() -> Result<impl PinInit<Self>> {
        let kicker = Kicker::new()?;
        Ok(pin_init!(Self {
            kicker,
            files <- kernel::new_mutex!(
                Table { files: KVec::new(), last_grant: 0 },
                "zoid::zoidfs::relaxed"
            ),
            stats: RelaxedStats::new(),
            max_per_cn: Atomic::new(DEFAULT_MAX_PER_CN),
        }))
    }

    /// Starts the recall timer (stopped when the returned thread drops).
    pub(crate) fn start_timer(this: &Arc<Self>) -> Result<KThread<Self>> {
        KThread::spawn(c"zoidfs_recall", this.clone())
    }

    /// Files open on some CN.
    pub(crate) fn files_open(&self) -> usize {
        self.files.lock().files.len()
    }

    /// `open`: `ctx`'s CN opened `h`.
    pub(crate) fn open(&self, ctx: &Caller, h: &Handle, ino: u64) -> CallResult {
        self.stats.opens.fetch_add(1, Relaxed);
        let node = ctx.node;
        let mut sends: KVec<RecallTo> = KVec::new();
        // An open that found no room to wait after all: cancelled once the
        // lock is let go.
        let mut unqueued = None;
        let mut g = self.files.lock();
        let known = g
            .files
            .iter()
            .any(|f| f.handle == *h && f.openers.iter().any(|o| o.node == node));
        if !known {
            let held = g
                .files
                .iter()
                .filter(|f| f.openers.iter().any(|o| o.node == node))
                .count();
            if held >= self.max_per_cn.load(Relaxed) as usize {
                self.stats.refused_budget.fetch_add(1, Relaxed);
                return Err(errno(EAGAIN));
            }
        }
        let i = match g.files.iter().position(|f| f.handle == *h) {
            Some(i) => i,
            None => {
                g.files
                    .push(
                        OpenFile {
                            handle: *h,
                            ino,
                            openers: KVec::new(),
                            waiting: KVec::new(),
                            recall_since: 0,
                        },
                        GFP_KERNEL,
                    )
                    .map_err(|_| errno(ENOMEM))?;
                g.files.len() - 1
            }
        };
        let grant = relaxed::next_grant(g.last_grant);
        g.last_grant = grant;
        let f = &mut g.files[i];
        if !f.openers.iter().any(|o| o.node == node) {
            if let Err(e) = f.openers.push(Opener::new(node), GFP_KERNEL) {
                if f.openers.is_empty() && f.waiting.is_empty() {
                    let _ = g.files.remove(i);
                }
                return Err(errno(e.into()));
            }
        }
        let mut oom = false;
        let admit = relaxed::admit(&mut f.openers, node, grant, |n, gr| {
            oom |= sends
                .push(RecallTo { node: n, grant: gr }, GFP_KERNEL)
                .is_err();
        });
        if oom {
            // A recall we cannot send is given up on: the holder keeps
            // caching as if it had not been asked (never seen in practice).
            relaxed::abandon(&mut f.openers);
        }
        let result = match admit {
            Admit::Grant(gr) => {
                self.stats.grants.fetch_add(1, Relaxed);
                Ok(i64::from(gr))
            }
            Admit::Shared { .. } => {
                self.stats.shared.fetch_add(1, Relaxed);
                // Recalls outstanding (just sent or earlier): wait for them.
                if relaxed::pending(&f.openers) {
                    // Room first: a deferred reply is never dropped (and
                    // so answered, a send) under the table's lock.
                    f.waiting
                        .reserve(1, GFP_KERNEL)
                        .map_err(|_| errno(ENOMEM))?;
                    let d = ctx.defer().map_err(errno)?;
                    // Within the room just made: cannot fail.  Were it to,
                    // the open is answered `ECANCELED` (its drop counts it
                    // in `deferred_cancelled`) after the lock, not under it.
                    match f.waiting.push_within_capacity(d) {
                        Ok(()) => {
                            self.stats.recall_waits.fetch_add(1, Relaxed);
                            if f.recall_since == 0 {
                                f.recall_since = now_ns().max(1);
                            }
                        }
                        Err(PushError(d)) => unqueued = Some(d),
                    }
                }
                Ok(0)
            }
        };
        let (handle, ino) = (f.handle, f.ino);
        drop(g);
        drop(unqueued);
        for s in &sends {
            self.recall(&handle, ino, s);
        }
        if !sends.is_empty() {
            self.kicker.kick();
        }
        result
    }

    /// Sends one recall; a holder that cannot be reached answers at once.
    fn recall(&self, handle: &Handle, ino: u64, s: &RecallTo) {
        self.stats.recalls_sent.fetch_add(1, Relaxed);
        let body = Recall {
            handle: *handle,
            ino,
            grant: s.grant,
        };
        let mut buf = [0u8; Recall::SIZE];
        let sent = Encoder::new(&mut buf)
            .put(&body)
            .map_err(|_| EINVAL)
            .and_then(|()| crate::server::send_upcall(s.node, zoidfs::ID, UPCALL_RECALL, &buf));
        if sent.is_err() {
            self.stats.recall_send_failed.fetch_add(1, Relaxed);
            self.settle(handle, |f| {
                relaxed::recalled(&mut f.openers, s.node, s.grant);
            });
        }
    }

    /// `close`: `node`'s last open of `h` closed.
    pub(crate) fn close(&self, node: u16, h: &Handle) -> CallResult {
        self.stats.closes.fetch_add(1, Relaxed);
        self.settle(h, |f| f.openers.retain(|o| o.node != node));
        Ok(0)
    }

    /// `recalled`: `node` answered the recall of `grant` on `h`.
    pub(crate) fn recalled(&self, node: u16, h: &Handle, grant: u32) -> CallResult {
        self.settle(h, |f| {
            if relaxed::recalled(&mut f.openers, node, grant) {
                self.stats.recalls_answered.fetch_add(1, Relaxed);
            }
        });
        Ok(0)
    }

    /// `node` went down or detached: it has nothing open any more.
    pub(crate) fn node_gone(&self, node: u16) {
        let mut done: KVec<Deferred> = KVec::new();
        let mut g = self.files.lock();
        for f in g.files.iter_mut() {
            f.openers.retain(|o| o.node != node);
            // Its own waiting opens go too (their answers go nowhere).
            // (One without room in `done` waits on: answered, to nowhere,
            // at the next settle or expiry, never under this lock.)
            let mut i = 0;
            while i < f.waiting.len() {
                if f.waiting[i].node() == node && done.reserve(1, GFP_ATOMIC).is_ok() {
                    if let Ok(d) = f.waiting.remove(i) {
                        move_to(&mut done, d);
                    }
                } else {
                    i += 1;
                }
            }
            Self::release(f, &mut done);
        }
        g.files
            .retain(|f| !f.openers.is_empty() || !f.waiting.is_empty());
        drop(g);
        answer(done);
    }

    /// Applies `change` to `h`'s entry, then answers the opens that no
    /// longer wait and forgets a file nobody has open.
    fn settle(&self, h: &Handle, change: impl FnOnce(&mut OpenFile)) {
        let mut done: KVec<Deferred> = KVec::new();
        let mut g = self.files.lock();
        if let Some(i) = g.files.iter().position(|f| f.handle == *h) {
            let f = &mut g.files[i];
            change(f);
            Self::release(f, &mut done);
            if f.openers.is_empty() && f.waiting.is_empty() {
                let _ = g.files.remove(i);
            }
        }
        drop(g);
        answer(done);
    }

    /// Moves `f`'s waiting opens to `done` when no recall is outstanding.
    /// Those `done` has no room for wait on (answered at the next settle
    /// or expiry): a deferred reply dropped here would be answered, a
    /// send, under the table's lock.
    fn release(f: &mut OpenFile, done: &mut KVec<Deferred>) {
        if relaxed::pending(&f.openers) {
            return;
        }
        while !f.waiting.is_empty() && done.reserve(1, GFP_KERNEL).is_ok() {
            if let Some(d) = f.waiting.pop() {
                move_to(done, d);
            }
        }
        if f.waiting.is_empty() {
            f.recall_since = 0;
        }
    }

    /// Gives up on recalls older than the timeout.  Returns whether any
    /// recall is still outstanding.
    fn expire(&self) -> bool {
        let mut done: KVec<Deferred> = KVec::new();
        let now = now_ns();
        let limit = RECALL_TIMEOUT_MS * 1_000_000;
        let mut g = self.files.lock();
        let mut outstanding = false;
        for f in g.files.iter_mut() {
            if f.recall_since != 0 && now.saturating_sub(f.recall_since) >= limit {
                let n = relaxed::abandon(&mut f.openers);
                self.stats.recall_timeouts.fetch_add(n as u64, Relaxed);
            }
            Self::release(f, &mut done);
            outstanding |= f.recall_since != 0;
        }
        drop(g);
        answer(done);
        outstanding
    }
}

/// Moves the waiting open `d` to `done`, which the caller made room in:
/// cannot fail.  Were the room missing after all, `d` is cancelled here
/// (its drop answers `ECANCELED` and counts it in `deferred_cancelled`).
fn move_to(done: &mut KVec<Deferred>, d: Deferred) {
    if let Err(PushError(d)) = done.push_within_capacity(d) {
        drop(d);
    }
}

/// Answers opens that waited: shared, no grant.
fn answer(done: KVec<Deferred>) {
    for d in done {
        let _ = d.reply(Ok(0));
    }
}

impl ThreadBody for OpenTable {
    fn kicker(&self) -> &Kicker {
        &self.kicker
    }

    fn run(&self, ctx: &ThreadCtx<'_>) {
        while !ctx.should_stop() {
            let timeout = if self.expire() {
                ms_to_jiffies(1000)
            } else {
                usize::MAX
            };
            ctx.wait(timeout);
        }
    }
}

fn errno(e: Error) -> i32 {
    -e.to_errno()
}
