// SPDX-License-Identifier: GPL-2.0

//! Rendezvous grants, in ZOID's terms: a message larger than
//! `ack_threshold` frames is announced first (request to send); the
//! receiver grants large messages in FIFO order of their requests, one at a
//! time per sending peer and at most `slots` at once, so a far node's
//! request is not starved by near nodes and receive memory stays bounded.

/// A request to send one large message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
}

/// FIFO of rendezvous requests with per-peer and global limits.
///
/// `N` bounds queued requests; a sender has at most one request
/// outstanding per lane, so `N` at least the number of neighbours is enough.
#[derive(Clone, Debug)]
pub struct GrantQueue<const N: usize> {
    queue: [Option<Request>; N],
    head: usize,
    len: usize,
    active: [Option<Request>; N],
    slots: usize,
}

impl<const N: usize> GrantQueue<N> {
    /// An empty queue granting at most `slots` messages at once.
    pub fn new(slots: usize) -> Self {
        Self {
            queue: [None; N],
            head: 0,
            len: 0,
            active: [None; N],
            slots: slots.clamp(1, N),
        }
    }

    /// Changes the number of concurrent grants.
    pub fn set_slots(&mut self, slots: usize) {
        self.slots = slots.clamp(1, N);
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
        (0..self.len).filter_map(move |i| {
            let at = (self.head + i) % N;
            self.queue[at].map(|r| (at, r))
        })
    }

    /// Queues a request.
    pub fn push(&mut self, r: Request) -> Result<(), GrantError> {
        let same = |x: &Request| x.peer == r.peer && x.id == r.id;
        if self.queued().any(|(_, q)| same(&q)) || self.active.iter().flatten().any(same) {
            return Err(GrantError::Duplicate);
        }
        if self.len == N {
            return Err(GrantError::Full);
        }
        self.queue[(self.head + self.len) % N] = Some(r);
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
            |p: u16, active: &[Option<Request>; N]| active.iter().flatten().any(|a| a.peer == p);
        let (at, r) = self.queued().find(|(_, r)| !busy(r.peer, &self.active))?;
        self.remove_at(at);
        let free = self.active.iter_mut().find(|a| a.is_none())?;
        *free = Some(r);
        Some(r)
    }

    /// Removes the queue entry at ring position `at`, keeping FIFO order.
    fn remove_at(&mut self, at: usize) {
        let mut i = (at + N - self.head) % N;
        while i + 1 < self.len {
            let cur = (self.head + i) % N;
            let nxt = (self.head + i + 1) % N;
            self.queue[cur] = self.queue[nxt];
            i += 1;
        }
        self.queue[(self.head + self.len - 1) % N] = None;
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
