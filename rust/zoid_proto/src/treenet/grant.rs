// SPDX-License-Identifier: GPL-2.0

//! Rendezvous grants, in ZOID's terms: a message larger than
//! `ack_threshold` frames is announced first (request to send); the
//! receiver grants large messages in FIFO order of their requests, one at a
//! time per sending peer and at most `slots` at once, so a far node's
//! request is not starved by near nodes and receive memory stays bounded.
//!
//! The queue never drops a request silently: a request it cannot hold is
//! refused with a [`GrantError`], and the receiver answers the sender with a
//! reject, so no sender waits for a grant that will never come.

use core::ops::DerefMut;

/// Requests one peer may have waiting at once; a sender keeps at most this
/// many requests to send outstanding per neighbour.  A queue holding
/// `MAX_WAITING_PER_PEER` entries per neighbour is never full.
pub const MAX_WAITING_PER_PEER: usize = 2;

/// Most grants that can be active at once (the upper bound of `slots`).
pub const MAX_SLOTS: usize = 64;

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
#[derive(Clone, Debug)]
pub struct GrantQueue<S> {
    queue: S,
    head: usize,
    len: usize,
    active: [Option<Request>; MAX_SLOTS],
    slots: usize,
}

impl<S: DerefMut<Target = [Request]>> GrantQueue<S> {
    /// An empty queue holding up to `storage.len()` waiting requests and
    /// granting at most `slots` messages at once.
    pub fn with_storage(storage: S, slots: usize) -> Self {
        Self {
            queue: storage,
            head: 0,
            len: 0,
            active: [None; MAX_SLOTS],
            slots: slots.clamp(1, MAX_SLOTS),
        }
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
        self.slots = slots.clamp(1, MAX_SLOTS);
    }

    /// Requests waiting for a grant.
    pub fn waiting(&self) -> usize {
        self.len
    }

    /// Grants currently active.
    pub fn active(&self) -> usize {
        self.active.iter().filter(|a| a.is_some()).count()
    }

    fn queued(&self) -> impl Iterator<Item = (usize, Request)> + '_ {
        let cap = self.queue.len();
        (0..self.len).map(move |i| {
            let at = (self.head + i) % cap;
            (at, self.queue[at])
        })
    }

    /// Queues a request.
    pub fn push(&mut self, r: Request) -> Result<(), GrantError> {
        let same = |x: &Request| x.peer == r.peer && x.id == r.id;
        if self.queued().any(|(_, q)| same(&q)) || self.active.iter().flatten().any(same) {
            return Err(GrantError::Duplicate);
        }
        if self.queued().filter(|(_, q)| q.peer == r.peer).count() >= MAX_WAITING_PER_PEER {
            return Err(GrantError::PeerLimit);
        }
        let cap = self.queue.len();
        if self.len == cap {
            return Err(GrantError::Full);
        }
        self.queue[(self.head + self.len) % cap] = r;
        self.len += 1;
        Ok(())
    }

    /// The next request to grant now, if any: the oldest one whose peer has
    /// no active grant, while fewer than `slots` grants are active.
    pub fn next_grant(&mut self) -> Option<Request> {
        if self.active() >= self.slots {
            return None;
        }
        let busy =
            |p: u16, active: &[Option<Request>]| active.iter().flatten().any(|a| a.peer == p);
        let (at, r) = self.queued().find(|(_, r)| !busy(r.peer, &self.active))?;
        let free = self.active.iter_mut().find(|a| a.is_none())?;
        *free = Some(r);
        self.remove_at(at);
        Some(r)
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
        for a in self.active.iter_mut() {
            if a.is_some_and(|r| r.peer == peer && r.id == id) {
                *a = None;
                return true;
            }
        }
        false
    }

    /// Drops everything from and for `peer` (it went down).
    pub fn forget_peer(&mut self, peer: u16) {
        for a in self.active.iter_mut() {
            if a.is_some_and(|r| r.peer == peer) {
                *a = None;
            }
        }
        loop {
            let found = self
                .queued()
                .find(|(_, r)| r.peer == peer)
                .map(|(at, _)| at);
            match found {
                Some(at) => self.remove_at(at),
                None => break,
            }
        }
    }
}
