// SPDX-License-Identifier: GPL-2.0

//! The ION's call scheduler: which forwarded call a free worker runs next.
//!
//! Calls wait in three priority classes ([`Priority`]); [`CallScheduler::next`]
//! takes the oldest call of the highest non-empty class, FIFO within a
//! class, with aging so that lower classes are never starved (below).
//!
//! Limits: a CN has at most `max_per_cn` calls outstanding (queued or
//! running; a runtime knob, see [`CallScheduler::set_max_per_cn`]), and the
//! scheduler tracks at most `CAP` calls in all (queued plus running, so
//! `CAP` is the queue depth plus the number of workers).  A call over
//! either limit is refused ([`SchedError`]) and the ION answers it with
//! `EAGAIN`.  A CN's calls also hold at most `max_bytes_per_cn` bytes of
//! requests ([`CallScheduler::set_max_bytes_per_cn`]; 0: no limit), each
//! call weighing its [`QueuedCall::bytes`] from its queueing to its
//! [`CallScheduler::done`]: a CN with nothing outstanding may always queue
//! one call, however large, so the limit never stops a CN outright.  A CN
//! also runs at most `max_running_per_cn` calls at once
//! ([`CallScheduler::set_max_running_per_cn`]; 0: no limit): its other
//! calls wait, queued, while the next pick passes them over for another
//! CN's, so that with fewer than the workers a CN cannot hold every
//! worker (calls that sleep) while others wait.
//!
//! # Picks
//!
//! [`CallScheduler::next`] takes the class below says, then the first call
//! of that class whose CN may run one more; if it holds none, the first
//! such call of the other classes, highest first.
//!
//! # Aging
//!
//! With `aging = K > 0`, each of the two lower classes counts the picks of
//! higher classes made while it is non-empty: `Small` counts `Urgent`
//! picks, `Bulk` counts `Urgent` and `Small` picks.  When a class's count
//! reaches `K`, the next pick is its oldest call (`Small` first if both
//! counts reached `K`), and its count restarts at 0; a count also restarts
//! when its class empties.  So while `Small` or `Bulk` is non-empty, at
//! most `K + 1` picks of other classes happen between two picks of it,
//! and at most two aged picks happen in a row: under full load `Urgent`
//! still gets at least `K` of every `K + 2` picks.  With `K = 0`
//! priorities are strict.
//!
//! # Memory
//!
//! Everything lives in the struct: two arrays of `CAP` entries, no
//! allocation.  Every field is an integer (or [`Priority`], whose
//! discriminant 0 is `Urgent`) and all-zero bytes are a valid empty
//! scheduler with `max_per_cn = 0` and `aging = 0`, so the kernel can
//! allocate a large one zeroed, then call [`CallScheduler::set_max_per_cn`]
//! and [`CallScheduler::set_aging`], without building it on the stack.
//! Operations scan at most the `CAP` entries of the per-CN table (and
//! `drop_cn` / `remove` the queued calls), which is cheap at the sizes an
//! ION uses (hundreds).

use super::errno;

/// Priority classes, highest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Priority {
    /// Calls the ION wants done first: the hook for answering cache hits
    /// first, and calls whose caller set `FLAG_PRIORITY` (if the ION honours
    /// it).
    Urgent = 0,
    /// Small and metadata calls (`stat`, `open`, short reads and writes).
    Small = 1,
    /// Bulk data calls.
    Bulk = 2,
}

// Zero bytes are `Urgent` (the scheduler's all-zero state is valid).
const _: () = assert!(Priority::Urgent as u8 == 0);

impl Priority {
    /// Every class, highest first.
    pub const ALL: [Priority; 3] = [Priority::Urgent, Priority::Small, Priority::Bulk];

    /// Index for per-class arrays (0 = `Urgent`).
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// The class of a call: `Urgent` if the caller asked for priority (and the
/// ION honours it: pass `hinted_priority` accordingly), `Small` if its data
/// volume is at most `small_threshold` bytes, `Bulk` otherwise.
///
/// `request_bytes` is the call's data volume as the ION knows it when
/// queueing: the request's length, plus the size of an `out bytes` array
/// if the ION decoded it.
pub const fn classify(request_bytes: u32, small_threshold: u32, hinted_priority: bool) -> Priority {
    if hinted_priority {
        Priority::Urgent
    } else if request_bytes <= small_threshold {
        Priority::Small
    } else {
        Priority::Bulk
    }
}

/// A call waiting for a worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueuedCall {
    /// The ION's handle for the call (its request buffer, tag, ...).
    pub handle: u32,
    /// The calling CN.
    pub cn: u16,
    /// Priority class.
    pub class: Priority,
    /// What the call holds on the ION until it ends (its request's
    /// length), weighed against the CN's `max_bytes_per_cn`.
    pub bytes: u32,
}

/// Why a call was not queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedError {
    /// The scheduler tracks `CAP` calls already.
    Full,
    /// The CN has `max_per_cn` calls outstanding already.
    CnOverLimit,
    /// The CN's outstanding calls hold `max_bytes_per_cn` bytes already
    /// (with this one's).
    CnOverBytes,
}

impl SchedError {
    /// The positive errno reporting this error: `EAGAIN` (try again when
    /// calls completed).
    pub const fn errno(&self) -> i32 {
        errno::EAGAIN
    }
}

/// Default aging threshold `K` (see the module documentation).
pub const DEFAULT_AGING: u32 = 8;

/// End of a list (slot indices are 1-based so that zero bytes are valid).
const NIL: usize = 0;

/// A slot of the call store: a queued call and the next slot of its list
/// (a class queue or the free list), 1-based, `NIL` at the end.
#[derive(Clone, Copy, Debug)]
struct Slot {
    call: QueuedCall,
    next: usize,
}

/// Outstanding calls of one CN; the entry is free when both are 0.
#[derive(Clone, Copy, Debug, Default)]
struct CnLoad {
    cn: u16,
    queued: u32,
    running: u32,
    /// Bytes its queued and running calls hold.
    bytes: u64,
}

impl CnLoad {
    fn outstanding(&self) -> u32 {
        self.queued.saturating_add(self.running)
    }
}

/// Priority queues of forwarded calls with per-CN and global limits.
///
/// All-zero bytes are a valid empty scheduler (see the module
/// documentation; the kernel relies on it): keep every field an integer,
/// an array of integers or of structs of them, with 0 meaning empty.
#[derive(Clone, Debug)]
pub struct CallScheduler<const CAP: usize> {
    /// Call store; `slots[i - 1]` is slot `i`.
    slots: [Slot; CAP],
    /// Slots `1..=high` have been used; the ones above are free.
    high: usize,
    /// Free list of used-then-freed slots.
    free: usize,
    /// Per class: first and last slot, number of calls.
    head: [usize; 3],
    tail: [usize; 3],
    depth: [usize; 3],
    /// Per-CN loads; entries `..cn_high` have been used.
    cns: [CnLoad; CAP],
    cn_high: usize,
    /// Queued plus running calls.
    tracked: usize,
    /// Running calls.
    running: usize,
    max_per_cn: u32,
    /// Bytes one CN's outstanding calls may hold (0: no limit).
    max_bytes_per_cn: u64,
    /// Calls one CN may run at once (0: no limit).
    max_running_per_cn: u32,
    aging: u32,
    /// Per class: picks of higher classes since this class was last
    /// picked (only counted while it is non-empty; unused for `Urgent`).
    passed: [u32; 3],
}

impl<const CAP: usize> Default for CallScheduler<CAP> {
    /// The all-zero scheduler: empty, `max_per_cn = 0` (refuses every
    /// call), `aging = 0`.
    fn default() -> Self {
        Self::new(0, 0)
    }
}

impl<const CAP: usize> CallScheduler<CAP> {
    /// An empty scheduler.  `max_per_cn` and `aging` as in the setters.
    pub const fn new(max_per_cn: u32, aging: u32) -> Self {
        const EMPTY: Slot = Slot {
            call: QueuedCall {
                handle: 0,
                cn: 0,
                class: Priority::Urgent,
                bytes: 0,
            },
            next: NIL,
        };
        const FREE: CnLoad = CnLoad {
            cn: 0,
            queued: 0,
            running: 0,
            bytes: 0,
        };
        Self {
            slots: [EMPTY; CAP],
            high: 0,
            free: NIL,
            head: [NIL; 3],
            tail: [NIL; 3],
            depth: [0; 3],
            cns: [FREE; CAP],
            cn_high: 0,
            tracked: 0,
            running: 0,
            max_per_cn,
            max_bytes_per_cn: 0,
            max_running_per_cn: 0,
            aging,
            passed: [0; 3],
        }
    }

    /// Calls the scheduler can track (queued plus running).
    pub const fn capacity(&self) -> usize {
        CAP
    }

    /// Sets how many calls one CN may have outstanding (queued or
    /// running).  Lowering it keeps the calls already accepted; the CN's
    /// new calls are refused until it is below the limit.  0 refuses every
    /// call.
    pub fn set_max_per_cn(&mut self, max: u32) {
        self.max_per_cn = max;
    }

    /// The per-CN limit.
    pub const fn max_per_cn(&self) -> u32 {
        self.max_per_cn
    }

    /// Sets how many bytes one CN's outstanding calls may hold (0: no
    /// limit).  Lowering it keeps the calls already accepted.
    pub fn set_max_bytes_per_cn(&mut self, max: u64) {
        self.max_bytes_per_cn = max;
    }

    /// The per-CN limit of bytes held (0: none).
    pub const fn max_bytes_per_cn(&self) -> u64 {
        self.max_bytes_per_cn
    }

    /// Sets how many calls one CN may run at once (0: no limit).
    /// Lowering it stops no running call; the CN's queued calls wait until
    /// it runs fewer.
    pub fn set_max_running_per_cn(&mut self, max: u32) {
        self.max_running_per_cn = max;
    }

    /// The per-CN limit of running calls (0: none).
    pub const fn max_running_per_cn(&self) -> u32 {
        self.max_running_per_cn
    }

    /// Sets the aging threshold `K` (see the module documentation; 0:
    /// strict priorities).
    pub fn set_aging(&mut self, k: u32) {
        self.aging = k;
    }

    /// The aging threshold.
    pub const fn aging(&self) -> u32 {
        self.aging
    }

    /// Calls queued in `class`.
    pub const fn depth(&self, class: Priority) -> usize {
        self.depth[class.index()]
    }

    /// Calls queued in all classes.
    pub const fn queued(&self) -> usize {
        self.depth[0] + self.depth[1] + self.depth[2]
    }

    /// Calls handed out by [`next`](Self::next) and not yet [`done`](Self::done).
    pub const fn running(&self) -> usize {
        self.running
    }

    /// Whether no call is queued.
    pub const fn is_empty(&self) -> bool {
        self.queued() == 0
    }

    /// Calls of `cn` queued or running.
    pub fn outstanding(&self, cn: u16) -> u32 {
        self.find_cn(cn).map_or(0, |i| self.cns[i].outstanding())
    }

    /// Bytes the queued and running calls of `cn` hold.
    pub fn bytes_held(&self, cn: u16) -> u64 {
        self.find_cn(cn).map_or(0, |i| self.cns[i].bytes)
    }

    /// Index of `cn`'s load entry.
    fn find_cn(&self, cn: u16) -> Option<usize> {
        self.cns[..self.cn_high]
            .iter()
            .position(|l| l.cn == cn && l.outstanding() > 0)
    }

    /// Index of `cn`'s load entry, made if needed; `None` if the table is
    /// full (impossible while fewer than `CAP` calls are tracked).
    fn find_or_add_cn(&mut self, cn: u16) -> Option<usize> {
        if let Some(i) = self.find_cn(cn) {
            return Some(i);
        }
        let i = match self.cns[..self.cn_high]
            .iter()
            .position(|l| l.outstanding() == 0)
        {
            Some(i) => i,
            None if self.cn_high < CAP => {
                self.cn_high += 1;
                self.cn_high - 1
            }
            None => return None,
        };
        self.cns[i] = CnLoad {
            cn,
            queued: 0,
            running: 0,
            bytes: 0,
        };
        Some(i)
    }

    /// Queues `call` at the end of its class.
    ///
    /// `CnOverLimit` if its CN has `max_per_cn` calls outstanding (checked
    /// first), `CnOverBytes` if it has some whose bytes and this call's
    /// exceed `max_bytes_per_cn`, `Full` if `CAP` calls are tracked.
    pub fn enqueue(&mut self, call: QueuedCall) -> Result<(), SchedError> {
        if self.outstanding(call.cn) >= self.max_per_cn {
            return Err(SchedError::CnOverLimit);
        }
        let held = self.bytes_held(call.cn);
        if self.max_bytes_per_cn != 0
            && held != 0
            && held.saturating_add(u64::from(call.bytes)) > self.max_bytes_per_cn
        {
            return Err(SchedError::CnOverBytes);
        }
        if self.tracked >= CAP {
            return Err(SchedError::Full);
        }
        // Fewer than CAP calls are tracked, so a slot and a load entry
        // are free.
        let slot = if self.free != NIL {
            let s = self.free;
            self.free = self.slots[s - 1].next;
            s
        } else if self.high < CAP {
            self.high += 1;
            self.high
        } else {
            return Err(SchedError::Full);
        };
        let Some(load) = self.find_or_add_cn(call.cn) else {
            self.release_slot(slot);
            return Err(SchedError::Full);
        };
        self.cns[load].queued += 1;
        self.cns[load].bytes += u64::from(call.bytes);
        self.tracked += 1;
        self.slots[slot - 1] = Slot { call, next: NIL };
        let c = call.class.index();
        if self.tail[c] == NIL {
            self.head[c] = slot;
        } else {
            self.slots[self.tail[c] - 1].next = slot;
        }
        self.tail[c] = slot;
        self.depth[c] += 1;
        Ok(())
    }

    /// Puts a slot on the free list.
    fn release_slot(&mut self, slot: usize) {
        self.slots[slot - 1].next = self.free;
        self.free = slot;
    }

    /// The class the next pick takes (see the module documentation).
    fn pick_class(&self) -> Option<usize> {
        if self.aging > 0 {
            let aged = [Priority::Small.index(), Priority::Bulk.index()]
                .into_iter()
                .find(|&c| self.depth[c] > 0 && self.passed[c] >= self.aging);
            if aged.is_some() {
                return aged;
            }
        }
        (0..3).find(|&c| self.depth[c] > 0)
    }

    /// Whether `cn` may run one more call (`max_running_per_cn`).
    fn may_run(&self, cn: u16) -> bool {
        self.max_running_per_cn == 0
            || self
                .find_cn(cn)
                .is_none_or(|i| self.cns[i].running < self.max_running_per_cn)
    }

    /// The first call of class `c` whose CN may run one more: its slot
    /// and the slot before it (`NIL` at the head).
    fn first_runnable(&self, c: usize) -> Option<(usize, usize)> {
        let (mut prev, mut cur) = (NIL, self.head[c]);
        while cur != NIL {
            if self.may_run(self.slots[cur - 1].call.cn) {
                return Some((prev, cur));
            }
            prev = cur;
            cur = self.slots[cur - 1].next;
        }
        None
    }

    /// Takes queued slot `slot` (after `prev`, `NIL` at the head) out of
    /// class `c`; returns its call (still counted queued for its CN).
    fn unlink(&mut self, c: usize, prev: usize, slot: usize) -> QueuedCall {
        let Slot { call, next } = self.slots[slot - 1];
        if prev == NIL {
            self.head[c] = next;
        } else {
            self.slots[prev - 1].next = next;
        }
        if self.tail[c] == slot {
            self.tail[c] = prev;
        }
        self.depth[c] -= 1;
        self.release_slot(slot);
        call
    }

    /// Takes the next call to run (see "Picks" in the module
    /// documentation); it counts as running for its CN until
    /// [`done`](Self::done).  `None` if no call is queued whose CN may run
    /// one more.
    // Not an `Iterator`: taking a call changes what is running.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<QueuedCall> {
        let first = self.pick_class()?;
        let (c, prev, slot) = core::iter::once(first)
            .chain((0..3).filter(|&c| c != first))
            .find_map(|c| self.first_runnable(c).map(|(p, s)| (c, p, s)))?;
        let call = self.unlink(c, prev, slot);
        for x in [Priority::Small.index(), Priority::Bulk.index()] {
            if x == c || self.depth[x] == 0 {
                self.passed[x] = 0;
            } else if c < x {
                self.passed[x] = self.passed[x].saturating_add(1);
            }
        }
        if let Some(i) = self.find_cn(call.cn) {
            self.cns[i].queued -= 1;
            self.cns[i].running += 1;
        }
        self.running += 1;
        Some(call)
    }

    /// A running call of `cn` holding `bytes` ended (the `cn` and `bytes`
    /// of a call [`next`](Self::next) handed out).  Returns `false` (and
    /// changes nothing) if `cn` had no running call.
    pub fn done(&mut self, cn: u16, bytes: u32) -> bool {
        let Some(i) = self.find_cn(cn) else {
            return false;
        };
        if self.cns[i].running == 0 {
            return false;
        }
        let l = &mut self.cns[i];
        l.bytes = l.bytes.saturating_sub(u64::from(bytes));
        l.running -= 1;
        self.running -= 1;
        self.tracked -= 1;
        true
    }

    /// Unlinks the queued calls for which `matches` holds (at most `limit`),
    /// passing each to `f`; returns how many.
    fn unlink_where(
        &mut self,
        limit: usize,
        mut matches: impl FnMut(&QueuedCall) -> bool,
        mut f: impl FnMut(QueuedCall),
    ) -> usize {
        let mut removed = 0;
        for c in 0..3 {
            let mut prev = NIL;
            let mut cur = self.head[c];
            while cur != NIL && removed < limit {
                let Slot { call, next } = self.slots[cur - 1];
                if !matches(&call) {
                    prev = cur;
                    cur = next;
                    continue;
                }
                self.unlink(c, prev, cur);
                if self.depth[c] == 0 {
                    self.passed[c] = 0;
                }
                if let Some(i) = self.find_cn(call.cn) {
                    let l = &mut self.cns[i];
                    l.queued -= 1;
                    l.bytes = l.bytes.saturating_sub(u64::from(call.bytes));
                }
                self.tracked -= 1;
                removed += 1;
                f(call);
                cur = next;
            }
        }
        removed
    }

    /// Removes every queued call of `cn` (a CN that died or detached),
    /// passing each to `f` (which releases what the handle holds); returns
    /// how many.  Its running calls stay counted until their
    /// [`done`](Self::done).
    pub fn drop_cn(&mut self, cn: u16, f: impl FnMut(QueuedCall)) -> usize {
        self.unlink_where(usize::MAX, |q| q.cn == cn, f)
    }

    /// Removes the queued call `handle` of `cn` (a `Cancel`), `None` if it
    /// is not queued (running already, or unknown).
    pub fn remove(&mut self, cn: u16, handle: u32) -> Option<QueuedCall> {
        let mut found = None;
        self.unlink_where(1, |q| q.cn == cn && q.handle == handle, |q| found = Some(q));
        found
    }
}
