// SPDX-License-Identifier: GPL-2.0

//! Rendezvous grants, in ZOID's terms: a message larger than
//! `ack_threshold` frames is announced first (request to send); the
//! receiver grants large messages one at a time per sending peer (the
//! next one early, once the one arriving is draining) and at most `slots`
//! at once, so a far node's request is not starved by near nodes and
//! receive memory stays bounded.
//!
//! # Order: weighted round robin
//!
//! Peers take turns, in proportion to their weights: a relay that carries
//! the traffic of `n` nodes below it is pushed with weight `1 + n`, so
//! every node behind it gets the share a leaf neighbour gets, not `1 / n`
//! of it (start-time fair queueing, Goyal et al., 1996).  Each request gets
//! a start tag, the later of the queue's virtual time and the finish tag of
//! its peer's previous request (which the caller keeps per peer, so a peer
//! that pauses between requests does not come back ahead of the others);
//! its finish tag is its start plus `UNIT / weight`.  [`GrantQueue::next_grant`] grants the smallest start
//! tag among the peers without an active grant (the oldest request on a
//! tie), and the virtual time moves to that tag.  With equal weights the
//! peers alternate, each peer's requests in the order they came.
//!
//! # Early grants
//!
//! A peer's next message would wait a round trip after each of its large
//! messages (the grant travels while the link idles).  The receiver marks
//! a granted message *draining* once most of it has arrived
//! ([`GrantQueue::draining`], [`nearly_received`]); a peer whose only
//! grant is draining may then be granted its next request, in a free slot
//! and only when no peer without a grant is waiting, so a peer holds at
//! most [`MAX_GRANTS_PER_PEER`] grants and `slots` still bounds them all.
//!
//! The queue never drops a request silently: a request it cannot hold is
//! refused with a [`GrantError`], and the receiver answers the sender with a
//! reject, so no sender waits for a grant that will never come.

use core::borrow::BorrowMut;
use core::ops::DerefMut;

/// Requests one peer may have waiting at once; a sender keeps at most this
/// many requests to send outstanding per neighbour.  A queue holding
/// `MAX_WAITING_PER_PEER` entries per neighbour is never full.
pub const MAX_WAITING_PER_PEER: usize = 2;

/// Most grants that can be active at once (the upper bound of `slots`).
pub const MAX_SLOTS: usize = 64;

/// Most grants one peer holds at once: one it is sending and, once that
/// one is draining, the next (see "Early grants" above).
pub const MAX_GRANTS_PER_PEER: usize = 2;

/// Whether a granted message of `len` bytes of which `received` have
/// arrived is far enough along to grant its sender's next one: at least
/// half of it arrived, or what is left fits in `in_flight` bytes (twice
/// the sender's window, say), so the grant reaches the sender before its
/// link runs dry.
pub fn nearly_received(len: usize, received: usize, in_flight: usize) -> bool {
    let left = len.saturating_sub(received);
    left <= len / 2 || left <= in_flight
}

/// Virtual-time cost of one grant at weight 1 (see the module
/// documentation); a weight `w` costs `UNIT / w`.
pub const UNIT: u64 = 1 << 20;

/// Largest weight (more is treated as this).
pub const MAX_WEIGHT: u32 = 1 << 10;

/// A request to send one large message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Request {
    /// Requesting neighbour.
    pub peer: u16,
    /// Sender's message id.
    pub id: u32,
    /// Message length in bytes.
    pub len: u32,
}

/// A request in the queue (or granted) with its fair-queueing tags.  The
/// queue's storage is made of these; `Default` is an unused entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Waiting {
    request: Request,
    start: u64,
    finish: u64,
    /// (Granted) most of the message arrived: see [`GrantQueue::draining`].
    draining: bool,
}

/// Why a request was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrantError {
    /// The queue is full (more waiting requests than it can hold).
    Full,
    /// The same (peer, id) is already queued or granted.
    Duplicate,
    /// The peer already has [`MAX_WAITING_PER_PEER`] requests waiting (it
    /// does not follow the protocol).
    PeerLimit,
}

/// FIFO of rendezvous requests with per-peer and global limits.
///
/// The waiting requests live in caller-provided storage `S` (an array-like
/// buffer: a `Vec` on the host, a `KVec` in the kernel), so a large queue
/// is allocated on the heap and can grow with the number of neighbours
/// ([`GrantQueue::replace_storage`]).  Its length is the capacity.
///
/// The active grants live in `A`: an array by default; the kernel gives a
/// `KVec` of [`MAX_SLOTS`] (2.5 KiB that must not sit on its 8 KiB stacks
/// nor move with the engine's state).
#[derive(Clone, Debug)]
pub struct GrantQueue<S, A = [Option<Waiting>; MAX_SLOTS]> {
    queue: S,
    head: usize,
    len: usize,
    active: A,
    slots: usize,
    /// Start tag of the last grant.
    vtime: u64,
}

impl<S: DerefMut<Target = [Waiting]>> GrantQueue<S> {
    /// An empty queue holding up to `storage.len()` waiting requests and
    /// granting at most `slots` messages at once.
    pub fn with_storage(storage: S, slots: usize) -> Self {
        Self::with_slot_storage(storage, [None; MAX_SLOTS], slots)
    }
}

impl<S: DerefMut<Target = [Waiting]>, A: BorrowMut<[Option<Waiting>]>> GrantQueue<S, A> {
    /// Like [`GrantQueue::with_storage`], the active grants kept in
    /// `active` (all `None`; its length, at most [`MAX_SLOTS`], bounds
    /// `slots`).
    pub fn with_slot_storage(storage: S, mut active: A, slots: usize) -> Self {
        active.borrow_mut().iter_mut().for_each(|a| *a = None);
        let mut q = Self {
            queue: storage,
            head: 0,
            len: 0,
            active,
            slots: 1,
            vtime: 0,
        };
        q.set_slots(slots);
        q
    }

    /// Most grants `active` can hold.
    fn max_slots(&self) -> usize {
        self.slots_ref().len().clamp(1, MAX_SLOTS)
    }

    fn slots_ref(&self) -> &[Option<Waiting>] {
        self.active.borrow()
    }

    fn slots_mut(&mut self) -> &mut [Option<Waiting>] {
        self.active.borrow_mut()
    }

    /// How many requests the queue can hold.
    pub fn capacity(&self) -> usize {
        self.queue.len()
    }

    /// Moves the waiting requests (in FIFO order) into `storage` and
    /// returns the old storage; gives `storage` back if it is too small.
    pub fn replace_storage(&mut self, mut storage: S) -> Result<S, S> {
        if storage.len() < self.len {
            return Err(storage);
        }
        for (i, slot) in storage.iter_mut().enumerate().take(self.len) {
            *slot = self.queue[(self.head + i) % self.queue.len()];
        }
        self.head = 0;
        Ok(core::mem::replace(&mut self.queue, storage))
    }

    /// Changes the number of concurrent grants.
    pub fn set_slots(&mut self, slots: usize) {
        self.slots = slots.clamp(1, self.max_slots());
    }

    /// Requests waiting for a grant.
    pub fn waiting(&self) -> usize {
        self.len
    }

    /// Grants currently active.
    pub fn active(&self) -> usize {
        self.slots_ref().iter().filter(|a| a.is_some()).count()
    }

    fn queued(&self) -> impl Iterator<Item = (usize, Waiting)> + '_ {
        let cap = self.queue.len();
        (0..self.len).map(move |i| {
            let at = (self.head + i) % cap;
            (at, self.queue[at])
        })
    }

    /// Queues a request at weight 1, its peer's previous finish tag taken
    /// from its requests still queued or granted.
    pub fn push(&mut self, r: Request) -> Result<(), GrantError> {
        let mut last = self
            .queued()
            .map(|(_, q)| q)
            .chain(self.slots_ref().iter().flatten().copied())
            .filter(|q| q.request.peer == r.peer)
            .map(|q| q.finish)
            .max()
            .unwrap_or(0);
        self.push_weighted(r, 1, &mut last)
    }

    /// Queues a request of a peer of `weight` (1..=[`MAX_WEIGHT`]: the
    /// nodes whose traffic it carries, itself included).  `last_finish` is
    /// the finish tag of the peer's previous request (0 at first), kept by
    /// the caller with the peer and updated here when the request is
    /// queued.
    pub fn push_weighted(
        &mut self,
        r: Request,
        weight: u32,
        last_finish: &mut u64,
    ) -> Result<(), GrantError> {
        let same = |x: &Waiting| x.request.peer == r.peer && x.request.id == r.id;
        if self.queued().any(|(_, q)| same(&q)) || self.slots_ref().iter().flatten().any(same) {
            return Err(GrantError::Duplicate);
        }
        if self
            .queued()
            .filter(|(_, q)| q.request.peer == r.peer)
            .count()
            >= MAX_WAITING_PER_PEER
        {
            return Err(GrantError::PeerLimit);
        }
        let cap = self.queue.len();
        if self.len == cap {
            return Err(GrantError::Full);
        }
        let start = self.vtime.max(*last_finish);
        let finish = start.saturating_add(UNIT / u64::from(weight.clamp(1, MAX_WEIGHT)));
        *last_finish = finish;
        self.queue[(self.head + self.len) % cap] = Waiting {
            request: r,
            start,
            finish,
            draining: false,
        };
        self.len += 1;
        Ok(())
    }

    /// The next request to grant now, if any, while fewer than `slots`
    /// grants are active: among the peers without an active grant, the
    /// request with the smallest start tag, the oldest on a tie; when none
    /// of them waits, the same among the peers whose one grant is draining
    /// (an early grant, see the module documentation).
    pub fn next_grant(&mut self) -> Option<Request> {
        if self.active() >= self.slots {
            return None;
        }
        // 0: no grant; 1: one grant, draining; 2: not eligible.
        let tier = |p: u16, active: &[Option<Waiting>]| {
            let mut held = active.iter().flatten().filter(|a| a.request.peer == p);
            match (held.next(), held.next()) {
                (None, _) => 0u8,
                (Some(a), None) if a.draining => 1,
                _ => 2,
            }
        };
        let mut best: Option<(u8, usize, Waiting)> = None;
        for (at, w) in self.queued() {
            let t = tier(w.request.peer, self.slots_ref());
            if t == 2 {
                continue;
            }
            if best.is_none_or(|(bt, _, b)| (t, w.start) < (bt, b.start)) {
                best = Some((t, at, w));
            }
        }
        let (_, at, w) = best?;
        let free = self.slots_mut().iter_mut().find(|a| a.is_none())?;
        *free = Some(w);
        self.remove_at(at);
        self.vtime = self.vtime.max(w.start);
        Some(w.request)
    }

    /// Grants active for `peer` (at most [`MAX_GRANTS_PER_PEER`]).
    pub fn held(&self, peer: u16) -> usize {
        self.slots_ref()
            .iter()
            .flatten()
            .filter(|w| w.request.peer == peer)
            .count()
    }

    /// Most of the granted message `(peer, id)` arrived: its peer may be
    /// granted its next request before this one completes.  False if no
    /// such grant is active.
    pub fn draining(&mut self, peer: u16, id: u32) -> bool {
        for w in self.slots_mut().iter_mut().flatten() {
            if w.request.peer == peer && w.request.id == id {
                w.draining = true;
                return true;
            }
        }
        false
    }

    /// Removes the queue entry at ring position `at`, keeping FIFO order.
    fn remove_at(&mut self, at: usize) {
        let cap = self.queue.len();
        let mut i = (at + cap - self.head) % cap;
        while i + 1 < self.len {
            let cur = (self.head + i) % cap;
            let nxt = (self.head + i + 1) % cap;
            self.queue[cur] = self.queue[nxt];
            i += 1;
        }
        self.len -= 1;
    }

    /// The granted message arrived (or was abandoned): frees its slot.
    pub fn complete(&mut self, peer: u16, id: u32) -> bool {
        for a in self.slots_mut().iter_mut() {
            if a.is_some_and(|w| w.request.peer == peer && w.request.id == id) {
                *a = None;
                return true;
            }
        }
        false
    }

    /// Drops everything from and for `peer` (it went down).
    pub fn forget_peer(&mut self, peer: u16) {
        for a in self.slots_mut().iter_mut() {
            if a.is_some_and(|w| w.request.peer == peer) {
                *a = None;
            }
        }
        loop {
            let found = self
                .queued()
                .find(|(_, w)| w.request.peer == peer)
                .map(|(at, _)| at);
            match found {
                Some(at) => self.remove_at(at),
                None => break,
            }
        }
    }
}
