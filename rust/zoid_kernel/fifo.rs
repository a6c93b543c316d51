// SPDX-License-Identifier: GPL-2.0

//! A first-in first-out queue over two [`KVec`]s, for queues that are
//! consumed from the front: 7.3's `kernel` crate has no `VecDeque`, and
//! `KVec::remove(0)` moves every element behind the first, which made a
//! queue of thousands of messages quadratic (treenet's send lanes: 77 % of a
//! streaming CN's time went to that `memmove`, docs/treenet.md).
//!
//! Elements are pushed on `back`; `front` holds the oldest ones in reverse
//! order, so taking the first is a `pop` from its end.  When `front` runs
//! out, `back` becomes the new `front`, reversed in place: every element is
//! moved once on its way through, and no operation allocates except
//! [`Fifo::push_back`].

use kernel::alloc::{AllocError, Flags, KVec};

/// A FIFO queue; see the module documentation.
pub(crate) struct Fifo<T> {
    /// The oldest elements, newest first (the next to leave is last).
    front: KVec<T>,
    /// The newest elements, oldest first.
    back: KVec<T>,
}

impl<T> Default for Fifo<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Fifo<T> {
    /// An empty queue (allocates nothing).
    pub(crate) const fn new() -> Self {
        Self {
            front: KVec::new(),
            back: KVec::new(),
        }
    }

    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        self.front.len() + self.back.len()
    }

    /// Whether the queue is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends `value` at the back.
    pub(crate) fn push_back(&mut self, value: T, flags: Flags) -> Result<(), AllocError> {
        self.back.push(value, flags)
    }

    /// Makes room for one more element, so that the next
    /// [`Fifo::push_back`] does not allocate.
    pub(crate) fn reserve_one(&mut self, flags: Flags) -> Result<(), AllocError> {
        self.back.reserve(1, flags)
    }

    /// The first (oldest) element.
    pub(crate) fn front(&self) -> Option<&T> {
        self.front.last().or_else(|| self.back.first())
    }

    /// Takes the first (oldest) element out.
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        if self.front.is_empty() {
            core::mem::swap(&mut self.front, &mut self.back);
            self.front.reverse();
        }
        self.front.pop()
    }

    /// The element at position `i` (0: the first).
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        let f = self.front.len();
        if i < f {
            self.front.get(f - 1 - i)
        } else {
            self.back.get(i - f)
        }
    }

    /// The elements, first to last.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.front.iter().rev().chain(self.back.iter())
    }

    /// The elements, first to last, mutably.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.front.iter_mut().rev().chain(self.back.iter_mut())
    }

    /// Drops every element.
    pub(crate) fn clear(&mut self) {
        self.front.clear();
        self.back.clear();
    }
}
