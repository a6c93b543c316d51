// SPDX-License-Identifier: GPL-2.0

//! The ION's ledger of one CN's calls: which are running and which were
//! answered lately, so that a call the CN sends again is not run twice.
//!
//! A CN in hard mode sends a call again, under the same tag, when its
//! timeout passes without a reply (the ION may have lost it: its zoid
//! restarted while treenet stayed up).  On an ION that is only slow, the
//! first copy is still queued or running, or its reply is on the wire; a
//! second run would be a second create or remove (`EEXIST`, `ENOENT`), or
//! a write landing after a later one of the same bytes.  So the ION looks
//! each call's tag up here first:
//!
//! * [`Admit::New`]: run it; it is now in progress;
//! * [`Admit::Running`]: the first copy is queued or running, and its
//!   reply, under the same tag, answers the CN: drop this copy;
//! * [`Admit::Answered`]: the first copy's reply was handed to treenet,
//!   which nearly always delivers it while the session lasts: drop this
//!   copy, but only this one.  A copy that crossed the reply on the wire
//!   is dropped; should the reply have been lost anyway (the CN short of
//!   memory, a relay in a deeper tree losing its link), the CN's next
//!   copy runs, one timeout later, instead of the call hanging for good.
//!
//! The ledger lasts as long as the CN's treenet session: when the CN goes
//! down or detaches the ION forgets it ([`CnLedger::clear`]), because a
//! reply may have been lost with the session and the CN's next copy must
//! run.  A reply treenet could not take is not recorded as answered, for
//! the same reason.  Tags are unique among one client's calls (a counter
//! from a random start, so a reloaded client does not reuse the tags of
//! the one before it).
//!
//! # Memory
//!
//! Fixed arrays, no allocation: [`RUNNING`] calls in progress and the last
//! [`ANSWERED`] answered tags.  A call over [`RUNNING`] is run untracked
//! ([`Admit::Untracked`]): a copy of it would run again, as without a
//! ledger (the ION's per-CN limit of queued and running calls keeps a CN
//! below it unless it holds many deferred calls).  Every field
//! is an integer or an array of them, and all-zero bytes are an empty
//! ledger for node 0, so the kernel allocates one zeroed (it is over a
//! kilobyte: not for an 8 KiB stack) and [`CnLedger::reset`]s it.

/// Calls of one CN tracked while in progress (queued, running, deferred).
pub const RUNNING: usize = 256;

/// Answered tags remembered per CN (at most 64: one bit each in a mask).
/// A CN sends a copy at most one timeout after its first; this many
/// answers cover that time at any rate the CN's calls in flight allow.
pub const ANSWERED: usize = 64;
const _: () = assert!(ANSWERED <= 64);

/// What to do with a call, by its tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Not seen: run it (now in progress).
    New,
    /// Not seen, and the ledger is full: run it, untracked.
    Untracked,
    /// A copy of a call in progress: drop it.
    Running,
    /// The first copy of a call answered lately: drop it (a second copy
    /// runs).
    Answered,
}

/// One CN's calls in progress and answered lately.
#[derive(Clone)]
pub struct CnLedger {
    node: u16,
    running: [u32; RUNNING],
    n_running: usize,
    /// The last `ANSWERED` answered tags, a ring by age.
    answered: [u32; ANSWERED],
    /// Which of `answered` still absorb a copy (bit i for slot i).
    answered_live: u64,
    /// Where the next answered tag goes (the oldest).
    next_answered: usize,
}

impl CnLedger {
    /// An empty ledger for CN `node`.
    pub const fn new(node: u16) -> Self {
        Self {
            node,
            running: [0; RUNNING],
            n_running: 0,
            answered: [0; ANSWERED],
            answered_live: 0,
            next_answered: 0,
        }
    }

    /// The CN this ledger is about.
    pub const fn node(&self) -> u16 {
        self.node
    }

    /// Calls in progress.
    pub const fn running(&self) -> usize {
        self.n_running
    }

    /// Looks call `tag` up; a new one is in progress from now on (unless
    /// the ledger is full).
    pub fn admit(&mut self, tag: u32) -> Admit {
        if self.running[..self.n_running].contains(&tag) {
            return Admit::Running;
        }
        if let Some(i) =
            (0..ANSWERED).find(|&i| self.answered_live & (1 << i) != 0 && self.answered[i] == tag)
        {
            self.answered_live &= !(1 << i);
            return Admit::Answered;
        }
        if self.n_running == RUNNING {
            return Admit::Untracked;
        }
        self.running[self.n_running] = tag;
        self.n_running += 1;
        Admit::New
    }

    /// Call `tag` ended: its reply was handed to treenet (`delivered`), or
    /// it could not be (or the call was dropped unrun), in which case a
    /// copy of it will run.  A tag not in progress changes nothing.
    pub fn finish(&mut self, tag: u32, delivered: bool) {
        let Some(at) = self.running[..self.n_running]
            .iter()
            .position(|&t| t == tag)
        else {
            return;
        };
        self.n_running -= 1;
        self.running[at] = self.running[self.n_running];
        if delivered {
            self.answered[self.next_answered] = tag;
            self.answered_live |= 1 << self.next_answered;
            self.next_answered = (self.next_answered + 1) % ANSWERED;
        }
    }

    /// Forgets everything (the CN went down or detached).
    pub fn clear(&mut self) {
        self.n_running = 0;
        self.answered_live = 0;
        self.next_answered = 0;
    }

    /// Empties the ledger and gives it to CN `node`.
    pub fn reset(&mut self, node: u16) {
        self.clear();
        self.node = node;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_of_a_running_call_is_dropped_until_it_is_answered() {
        let mut l = CnLedger::new(3);
        assert_eq!(l.node(), 3);
        assert_eq!(l.admit(7), Admit::New);
        assert_eq!(l.admit(7), Admit::Running);
        assert_eq!(l.admit(8), Admit::New);
        l.finish(7, true);
        assert_eq!(l.admit(7), Admit::Answered);
        assert_eq!(l.running(), 1);
    }

    #[test]
    fn an_answered_call_absorbs_one_copy_only() {
        let mut l = CnLedger::new(1);
        assert_eq!(l.admit(7), Admit::New);
        l.finish(7, true);
        assert_eq!(l.admit(7), Admit::Answered);
        // Its reply was lost after all: the next copy runs.
        assert_eq!(l.admit(7), Admit::New);
    }

    #[test]
    fn an_undelivered_reply_lets_a_copy_run() {
        let mut l = CnLedger::new(1);
        assert_eq!(l.admit(5), Admit::New);
        l.finish(5, false);
        assert_eq!(l.admit(5), Admit::New);
    }

    #[test]
    fn only_the_last_answers_are_remembered() {
        let mut l = CnLedger::new(1);
        for tag in 0..ANSWERED as u32 + 10 {
            assert_eq!(l.admit(tag), Admit::New);
            l.finish(tag, true);
        }
        for tag in 0..10 {
            assert_eq!(l.admit(tag), Admit::New, "tag {tag} was forgotten");
            l.finish(tag, true);
        }
        assert_eq!(l.admit(ANSWERED as u32 + 9), Admit::Answered);
        assert_eq!(l.admit(9), Admit::Answered);
    }

    #[test]
    fn a_full_ledger_runs_calls_untracked() {
        let mut l = CnLedger::new(1);
        for tag in 0..RUNNING as u32 {
            assert_eq!(l.admit(tag), Admit::New);
        }
        assert_eq!(l.admit(u32::MAX), Admit::Untracked);
        assert_eq!(l.admit(u32::MAX), Admit::Untracked);
        l.finish(u32::MAX, true);
        assert_eq!(l.admit(0), Admit::Running);
        l.finish(0, true);
        assert_eq!(l.admit(u32::MAX), Admit::New);
    }

    #[test]
    fn clear_forgets_running_and_answered_calls() {
        let mut l = CnLedger::new(1);
        l.admit(1);
        l.admit(2);
        l.finish(2, true);
        l.clear();
        assert_eq!(l.running(), 0);
        assert_eq!(l.admit(1), Admit::New);
        assert_eq!(l.admit(2), Admit::New);
    }

    #[test]
    fn reset_gives_an_empty_ledger_to_another_node() {
        let mut l = CnLedger::new(1);
        l.admit(1);
        l.reset(6);
        assert_eq!((l.node(), l.running()), (6, 0));
        assert_eq!(l.admit(1), Admit::New);
    }

    #[test]
    fn finishing_an_unknown_tag_changes_nothing() {
        let mut l = CnLedger::new(1);
        l.finish(9, true);
        assert_eq!(l.admit(9), Admit::New);
    }
}
