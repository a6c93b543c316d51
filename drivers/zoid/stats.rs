// SPDX-License-Identifier: GPL-2.0

//! zoid's statistics (ZOID's statquery, under `/sys/kernel/zoid/stats`):
//! 64-bit counters, calls per plug-in function and latency histograms.

use crate::zoid_kernel::stats::counters;
use crate::zoid_kernel::sysfs::SysfsWriter;
use crate::zoid_kernel::time::U64;
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::{Arc, UniqueArc};

counters! {
    /// Both sides' counters.
    pub(crate) struct ZoidStats {
        msgs_sent: "Messages sent (calls on a CN, replies on an ION).",
        msgs_received: "Messages received.",
        bytes_sent: "Bytes of the messages sent.",
        bytes_received: "Bytes of the messages received.",
        attaches: "ION: CN attach handshakes answered.",
        calls_received: "ION: calls received.",
        calls_done: "ION: calls executed (reply sent or suppressed).",
        calls_inline: "ION: calls run in the receive path (inline_bytes).",
        calls_softirq: "ION: calls run and answered in treenet's receive softirq (softirq_calls).",
        calls_direct: "ION: calls taken in treenet's delivery context (no receive-thread hop).",
        idle_drives: "ION: idle waits of a worker that drove treenet (idle_drive) and ended with a call or its time slice.",
        calls_to_driver: "ION: calls received by the idle worker driving treenet, which ran them itself (no thread woken).",
        calls_dropped: "ION: queued calls dropped (their CN went away).",
        refused_foreign: "ION: messages refused from nodes outside the pset.",
        malformed: "Messages rejected as malformed.",
        e2big: "Calls refused with E2BIG (request or reply over the limit).",
        enosys: "Calls refused with ENOSYS (no such plug-in or function).",
        busy: "ION: calls refused with EAGAIN (queue or per-CN cap full).",
        busy_bytes: "ION: calls answered EAGAIN because their CN's queued and running calls held max_bytes_per_cn bytes of requests (also counted in busy).",
        dispatch_errors: "ION: calls refused by argument checks.",
        calls_deferred: "ION: calls a plug-in answers later (deferred replies).",
        deferred_replies: "ION: deferred replies sent.",
        deferred_cancelled: "ION: deferred calls a plug-in dropped (answered ECANCELED).",
        errors_sent: "ION: error replies sent.",
        reply_send_failed: "ION: replies treenet could not send.",
        inbox_refused: "ION: messages of a CN over its share of the receive thread's inbox (max_inbox_per_cn): calls answered EAGAIN, the rest dropped.",
        replies_deferred: "ION: answers of the receive path (errors, attach replies, inline calls) that found their CN's treenet queue full and waited for the receive thread to send them.",
        replies_dropped_backlog: "ION: such answers dropped: the oldest of a CN's once it had max_per_cn of them waiting (a CN that takes no data), or for want of memory.",
        dropped_nomem: "Messages dropped for lack of memory.",
        requests_mapped: "ION: requests read in place (treenet's pages mapped, not copied).",
        requests_map_failed: "ION: large requests copied because their pages could not be mapped.",
        replies_mapped: "ION: replies written in place into treenet's pages (large results, no copy).",
        replies_map_failed: "ION: large replies built in the worker's buffer because no message could be mapped.",
        process_exits: "ION: process-exit notices received.",
        cancels: "ION: cancel notices received.",
        copies_running: "ION: calls sent again while their first copy ran (dropped: its reply answers).",
        copies_answered: "ION: calls sent again after their first copy was answered (dropped).",
        ledger_untracked: "ION: calls run untracked (a CN's ledger full): a copy of one would run again.",
        calls_sent: "CN: calls sent.",
        replies_received: "CN: replies matched to a waiting call.",
        replies_stale: "CN: replies that matched no waiting call.",
        replies_foreign: "CN: replies and attach replies refused: not from the ION this client attached (or attaches) to.",
        timeouts: "CN: calls failed with ETIMEDOUT (soft mode).",
        interrupted: "CN: calls abandoned by a signal.",
        aborted: "CN: calls given up because their caller asked (zoidfs's umount -f).",
        resent: "CN: calls sent again after the ION came back (hard mode), or after a failed send.",
        queue_full: "CN: sends of soft calls that found treenet's queue to the ION full (tried again until their timeout).",
        notices_unsent: "CN: process-exit and cancel notices treenet could not send (queue full, no memory, ION unreachable); without its process-exit, what a process held on the ION stays until the CN detaches or goes down.",
        inflight_peak: "CN: most calls in flight at once (every caller together).",
        upcalls: "CN: upcalls from the ION handed to a plug-in's CN side (zoidfs recalls).",
        upcalls_dropped: "CN: upcalls nobody took (no handler, not from our ION, malformed).",
    }
}

/// Buckets of a latency histogram: < 1 µs, < 2 µs, ... < 2^30 µs (log2).
pub(crate) const BUCKETS: usize = 24;

/// A log2 latency histogram in microseconds.
pub(crate) struct Histogram {
    buckets: [Atomic<u64>; BUCKETS],
}

impl Histogram {
    /// All zero.
    pub(crate) fn new() -> Self {
        Self {
            buckets: [const { Atomic::new(0) }; BUCKETS],
        }
    }

    /// Bucket of a duration: floor(log2(µs)) + 1, 0 under 1 µs.
    pub(crate) fn bucket_of(ns: u64) -> usize {
        let us = (ns >> 10) as u32; // ~µs without a 64-bit division
        let b = (u32::BITS - us.leading_zeros()) as usize;
        b.min(BUCKETS - 1)
    }

    /// Counts one duration.
    pub(crate) fn record_ns(&self, ns: u64) {
        self.buckets[Self::bucket_of(ns)].fetch_add(1, Relaxed);
    }

    /// `le_<upper µs> <count>` lines, non-empty buckets only.
    pub(crate) fn show(&self, w: &mut SysfsWriter<'_>) -> Result {
        for (i, b) in self.buckets.iter().enumerate() {
            let n = b.load(Relaxed);
            if n != 0 {
                writeln!(w, "lt_{}us {}", U64(1u64 << i), U64(n))?;
            }
        }
        Ok(())
    }
}

/// Calls per (plug-in, function) slot: the first `PLUGIN_SLOTS` plug-ins
/// called each get a slot (claimed by id at their first call, whatever the
/// id), functions below `FUNCTION_SLOTS` (others are counted together).
pub(crate) const PLUGIN_SLOTS: usize = 8;
/// See [`PLUGIN_SLOTS`].
pub(crate) const FUNCTION_SLOTS: usize = 32;

/// Which plug-in owns each of `PLUGIN_SLOTS` per-plug-in counter slots:
/// claimed by id at the plug-in's first count, in order, never released.
pub(crate) struct PluginSlots {
    /// Plug-in id + 1 owning each slot (0: free).
    ids: [Atomic<u32>; PLUGIN_SLOTS],
}

impl PluginSlots {
    /// Every slot free.
    pub(crate) const fn new() -> Self {
        Self {
            ids: [const { Atomic::new(0) }; PLUGIN_SLOTS],
        }
    }

    /// The slot of `plugin`, claiming a free one with `claim`; `None` when
    /// it has none (and every slot is taken, or `claim` is false).
    pub(crate) fn slot(&self, plugin: u16, claim: bool) -> Option<usize> {
        let want = u32::from(plugin) + 1;
        for (i, s) in self.ids.iter().enumerate() {
            match s.load(Relaxed) {
                v if v == want => return Some(i),
                0 if !claim => return None,
                0 => match s.cmpxchg(0, want, Relaxed) {
                    Ok(_) => return Some(i),
                    Err(v) if v == want => return Some(i),
                    Err(_) => {}
                },
                _ => {}
            }
        }
        None
    }

    /// The plug-in owning slot `i`, if claimed.
    pub(crate) fn owner(&self, i: usize) -> Option<u16> {
        let v = self.ids.get(i)?.load(Relaxed);
        u16::try_from(v.checked_sub(1)?).ok()
    }
}

/// Calls per plug-in function.
pub(crate) struct CallCounts {
    slots: PluginSlots,
    per_function: [[Atomic<u64>; FUNCTION_SLOTS]; PLUGIN_SLOTS],
    other: Atomic<u64>,
}

impl CallCounts {
    /// All zero.
    pub(crate) fn new() -> Self {
        Self {
            slots: PluginSlots::new(),
            per_function: [const { [const { Atomic::new(0) }; FUNCTION_SLOTS] }; PLUGIN_SLOTS],
            other: Atomic::new(0),
        }
    }

    /// Counts one call of `function` of `plugin`.
    pub(crate) fn count(&self, plugin: u16, function: u16) {
        match self
            .slots
            .slot(plugin, true)
            .and_then(|p| self.per_function[p].get(function as usize))
        {
            Some(c) => c.fetch_add(1, Relaxed),
            None => self.other.fetch_add(1, Relaxed),
        };
    }

    /// Calls of `function` of `plugin` (0 when outside the slots).
    pub(crate) fn get(&self, plugin: u16, function: u16) -> u64 {
        self.slots
            .slot(plugin, false)
            .and_then(|p| self.per_function[p].get(function as usize))
            .map_or(0, |c| c.load(Relaxed))
    }

    /// Calls outside the slots.
    pub(crate) fn other(&self) -> u64 {
        self.other.load(Relaxed)
    }
}

/// Everything zoid counts, shared by the client, the server and sysfs.
pub(crate) struct Stats {
    /// Plain counters.
    pub(crate) c: ZoidStats,
    /// ION: time from dispatch to reply sent.
    pub(crate) call_latency: Histogram,
    /// CN: time from call sent to reply received.
    pub(crate) round_trip: Histogram,
    /// ION: calls per plug-in function.
    pub(crate) calls: CallCounts,
}

impl Stats {
    /// All zero, in a new `Arc`: written in place, not built on the stack
    /// and copied (it is ~2.7 KiB; module init runs on an 8 KiB stack on
    /// ppc32).
    pub(crate) fn new_arc() -> Result<Arc<Self>> {
        let slot = UniqueArc::<Self>::new_uninit(GFP_KERNEL)?;
        Ok(slot.write(Self::new()).into())
    }

    /// All zero.
    pub(crate) fn new() -> Self {
        Self {
            c: ZoidStats::new(),
            call_latency: Histogram::new(),
            round_trip: Histogram::new(),
            calls: CallCounts::new(),
        }
    }
}
