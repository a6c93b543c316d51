// SPDX-License-Identifier: GPL-2.0

//! How many objects a node creates on behalf of each neighbour.
//!
//! A node keeps an entry for every object it knows, for as long as it
//! runs, and a request for an object it does not know yet makes it create
//! one (the home creates the object itself, with its contents).  Without
//! a bound, one node could make another allocate without end by asking
//! for ever new object ids.  So every node counts, per neighbour, the
//! objects it created for requests that neighbour sent it (the node that
//! sent the message, not the one that asked: a forwarded request is
//! charged to the node that forwarded it, whose link made this node
//! allocate), and refuses a request past `max` objects: it creates
//! nothing and answers the requester with a `Refused`
//! ([`super::coherence::MsgKind::Refused`]).  Local accesses are not
//! charged; nor are requests for objects the node knows already.
//!
//! Entries are never removed, so the counts only grow (until the node
//! starts over); `max` may change at any time and applies to the next
//! request.  Storage for the counts is the caller's ([`SenderCounts`]):
//! when it cannot grow, the request is refused with
//! [`Error::NoMemory`] before anything changes, and can be given again.

use super::coherence::{Error, NodeId};

/// The number of objects created for each neighbour so far.
pub trait SenderCounts {
    /// `node`'s count, if it has one.
    fn get_mut(&mut self, node: NodeId) -> Option<&mut u64>;
    /// `node`'s count, added at 0 if it has none; `Err(NoMemory)` if the
    /// storage cannot grow.
    fn get_or_insert(&mut self, node: NodeId) -> Result<&mut u64, Error>;
    /// `node`'s count (0 if it has none).
    fn get(&self, node: NodeId) -> u64;
}

/// What to do with a request for an object this node does not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Create the object: the sender's count grew by one.
    Create,
    /// The sender is past its budget: create nothing, answer `Refused`.
    Refuse,
}

/// The per-neighbour budget of objects of one node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Budget<S> {
    counts: S,
}

impl<S: SenderCounts> Budget<S> {
    /// A budget with nothing charged yet (`counts` empty).
    pub fn new(counts: S) -> Self {
        Self { counts }
    }

    /// A request from neighbour `src` for an object this node does not
    /// know, with at most `max` objects per neighbour: [`Decision::Create`]
    /// charges it (give it back with [`Budget::uncharge`] if the object
    /// cannot be created after all), [`Decision::Refuse`] changes nothing;
    /// `Err(NoMemory)` changes nothing either.
    pub fn charge(&mut self, src: NodeId, max: u64) -> Result<Decision, Error> {
        if self.counts.get(src) >= max {
            return Ok(Decision::Refuse);
        }
        let count = self.counts.get_or_insert(src)?;
        *count += 1;
        Ok(Decision::Create)
    }

    /// Gives back the charge of an object that could not be created for
    /// `src` (nothing if `src` was never charged).
    pub fn uncharge(&mut self, src: NodeId) {
        if let Some(count) = self.counts.get_mut(src) {
            *count = count.saturating_sub(1);
        }
    }

    /// The objects created for `src` so far.
    pub fn charged(&self, src: NodeId) -> u64 {
        self.counts.get(src)
    }

    /// The counts.
    pub fn counts(&self) -> &S {
        &self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts for up to four nodes, in a fixed array; `full` refuses to
    /// add one.
    #[derive(Default)]
    struct Four {
        slots: [(NodeId, u64); 4],
        used: usize,
        full: bool,
    }

    impl SenderCounts for Four {
        fn get_mut(&mut self, node: NodeId) -> Option<&mut u64> {
            self.slots[..self.used]
                .iter_mut()
                .find(|(n, _)| *n == node)
                .map(|(_, c)| c)
        }
        fn get_or_insert(&mut self, node: NodeId) -> Result<&mut u64, Error> {
            if let Some(i) = self.slots[..self.used].iter().position(|(n, _)| *n == node) {
                return Ok(&mut self.slots[i].1);
            }
            if self.full || self.used == self.slots.len() {
                return Err(Error::NoMemory);
            }
            self.slots[self.used] = (node, 0);
            self.used += 1;
            Ok(&mut self.slots[self.used - 1].1)
        }
        fn get(&self, node: NodeId) -> u64 {
            self.slots[..self.used]
                .iter()
                .find(|(n, _)| *n == node)
                .map_or(0, |(_, c)| *c)
        }
    }

    #[test]
    fn each_neighbour_gets_max_objects_then_refusals() {
        let mut b = Budget::new(Four::default());
        for i in 0..8 {
            assert_eq!(b.charge(1, 8), Ok(Decision::Create), "object {i}");
        }
        for _ in 0..3 {
            assert_eq!(b.charge(1, 8), Ok(Decision::Refuse));
        }
        assert_eq!(b.charged(1), 8);
        // Another neighbour has its own budget.
        assert_eq!(b.charge(2, 8), Ok(Decision::Create));
        assert_eq!((b.charged(1), b.charged(2), b.charged(3)), (8, 1, 0));
    }

    #[test]
    fn a_budget_of_zero_refuses_everything_and_a_raised_one_admits_again() {
        let mut b = Budget::new(Four::default());
        assert_eq!(b.charge(5, 0), Ok(Decision::Refuse));
        assert_eq!(b.charged(5), 0);
        assert_eq!(b.counts().used, 0, "a refusal stores nothing");
        assert_eq!(b.charge(5, 2), Ok(Decision::Create));
        assert_eq!(b.charge(5, 2), Ok(Decision::Create));
        assert_eq!(b.charge(5, 2), Ok(Decision::Refuse));
        // Lowered below what was created: refused, counts kept.
        assert_eq!(b.charge(5, 1), Ok(Decision::Refuse));
        assert_eq!(b.charged(5), 2);
        assert_eq!(b.charge(5, 3), Ok(Decision::Create));
        assert_eq!(b.charge(5, u64::MAX), Ok(Decision::Create));
        assert_eq!(b.charged(5), 4);
    }

    #[test]
    fn an_object_not_created_after_all_is_given_back() {
        let mut b = Budget::new(Four::default());
        assert_eq!(b.charge(1, 1), Ok(Decision::Create));
        assert_eq!(b.charge(1, 1), Ok(Decision::Refuse));
        b.uncharge(1);
        assert_eq!(b.charged(1), 0);
        assert_eq!(b.charge(1, 1), Ok(Decision::Create));
        // Never below zero, and nothing for a node never charged.
        b.uncharge(1);
        b.uncharge(1);
        b.uncharge(7);
        assert_eq!((b.charged(1), b.charged(7)), (0, 0));
        assert_eq!(b.counts().used, 1);
    }

    #[test]
    fn storage_that_cannot_grow_changes_nothing() {
        let mut b = Budget::new(Four::default());
        assert_eq!(b.charge(1, 4), Ok(Decision::Create));
        b.counts.full = true;
        assert_eq!(b.charge(2, 4), Err(Error::NoMemory));
        assert_eq!(b.charged(2), 0);
        // A node with a count needs no room.
        assert_eq!(b.charge(1, 4), Ok(Decision::Create));
        // Past the budget it is refused before any room is needed.
        assert_eq!(b.charge(3, 0), Ok(Decision::Refuse));
        b.counts.full = false;
        assert_eq!(b.charge(2, 4), Ok(Decision::Create));
        assert_eq!((b.charged(1), b.charged(2)), (2, 1));
    }
}
