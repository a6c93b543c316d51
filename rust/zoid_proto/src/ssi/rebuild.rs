// SPDX-License-Identifier: GPL-2.0

//! Rebuilding coherence when the membership changes (a node dies or
//! leaves): Kerrighed's adaptation mode, as a consistent snapshot.
//!
//! The coordinator (the home) freezes every remaining node.  A frozen node
//! starts no local access and handles no coherence message: it keeps what
//! arrives.  Every node then marks each channel to every other remaining
//! node (treenet delivers in order per pair), so once a node has the marks
//! of all the others, the messages it kept are exactly those that were in
//! flight to it (Chandy and Lamport's snapshot, with nodes that stop).
//! Each node reports, per object, what it holds counting those messages
//! ([`Object::holding`]); the coordinator tallies the reports
//! ([`Tally`]) and decides each object's owner, or that it is lost; every
//! node resets its objects to the decision ([`Object::reset`]) and drops
//! the messages it kept.  Requests in flight are forgotten: their
//! requesters ask again on reset.
//!
//! Why the decision is right:
//!
//! * An owner that remains (or ownership in flight to a node that
//!   remains) keeps the object: its contents are the last written.
//! * With the owner gone, any remaining copy holds the last written
//!   contents: a write happens only after every copy acknowledged its
//!   invalidation, so while one copy (or one copy in flight) remains, the
//!   write it would be lost to has not happened.  Copies of an object all
//!   have the owner's version; the highest version wins anyway.
//! * With neither, the object's only contents died: it is lost, reported,
//!   never silently recreated.
//!
//! After the reset, the owner has the only copy (the others are dropped:
//! they are a cache) and every other node points to it.

use super::coherence::{Action, Error, Msg, MsgKind, NodeId, NodeSet, Object, RequestQueue, State};

/// What a node has of an object when it froze.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Holding {
    /// Nothing valid.
    Nothing,
    /// A valid read copy at `version`.
    Copy {
        /// The contents' version.
        version: u64,
    },
    /// Ownership, with contents at `version`, or not created yet (the
    /// home before the first touch: no contents, version 0).
    Owner {
        /// The contents' version.
        version: u64,
        /// Whether the contents exist.
        created: bool,
    },
}

/// Where the contents of a [`Holding`] are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// The node's own contents (or none: [`Holding::Nothing`], or an owner
    /// not created yet).
    Local,
    /// Carried by the kept message at this index.
    Kept(usize),
}

/// The coordinator's decision for one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// `owner` keeps the object, contents at `version` (`created`: whether
    /// they exist).
    Owner {
        /// The node that owns the object from now on.
        owner: NodeId,
        /// Its contents' version.
        version: u64,
        /// Whether the contents exist.
        created: bool,
    },
    /// Nobody that remains has the contents.
    Lost,
}

impl<Q: RequestQueue, C: NodeSet> Object<Q, C> {
    /// What this node holds, counting `kept`: the messages about this
    /// object received since it froze, in order.  The ownership it waits
    /// for arriving makes it the owner; the copy it waits for (and that
    /// did not cross its invalidation) makes it a copy; either must carry
    /// the token of its request ([`Object::is_answer`]), as
    /// [`Object::on_message`] requires.  Call it with no access held.
    pub fn holding(&self, kept: &[Msg]) -> (Holding, Source) {
        for (i, m) in kept.iter().enumerate() {
            if m.kind == MsgKind::Ownership && self.is_answer(m) {
                return (
                    Holding::Owner {
                        version: m.version,
                        created: true,
                    },
                    Source::Kept(i),
                );
            }
        }
        let local = match self.state() {
            State::InvOwner => Holding::Owner {
                version: self.version(),
                created: false,
            },
            State::ReadOwner | State::WriteOwner | State::WaitAcks => Holding::Owner {
                version: self.version(),
                created: true,
            },
            State::ReadCopy => Holding::Copy {
                version: self.version(),
            },
            State::InvCopy | State::WaitRead | State::WaitWrite => Holding::Nothing,
        };
        if local != Holding::Nothing {
            return (local, Source::Local);
        }
        if self.state() == State::WaitRead {
            for (i, m) in kept.iter().enumerate() {
                if m.kind == MsgKind::Copy && self.is_answer(m) && !self.copy_is_stale(m.node) {
                    return (Holding::Copy { version: m.version }, Source::Kept(i));
                }
            }
        }
        (Holding::Nothing, Source::Local)
    }

    /// Resets the object to the coordinator's `outcome` (`home`: where a
    /// lost object will be created again: the caller must refuse accesses
    /// to it until the loss is acknowledged, or it comes back zero-filled).  The owner keeps
    /// the contents it reported (the caller installs them when they were
    /// in a kept message: [`Action::Install`] is not emitted); every other
    /// node drops its contents.  A local access that was asked for is
    /// asked again, with the new token `token` (as [`Object::acquire`];
    /// its actions go to `out`); a held access is refused (`Busy`: freeze
    /// only once accesses end).
    pub fn reset(
        &mut self,
        outcome: Outcome,
        home: NodeId,
        token: u64,
        out: &mut dyn FnMut(Action),
    ) -> Result<(), Error> {
        if self.held().is_some() {
            return Err(Error::Busy);
        }
        let wanted = self.wanted();
        let had_contents = self.state().has_copy() || self.state() == State::WaitAcks;
        match outcome {
            Outcome::Owner {
                owner,
                version,
                created,
            } if owner == self.me() => {
                let state = if created {
                    State::WriteOwner
                } else {
                    State::InvOwner
                };
                self.restart(state, owner, version);
            }
            Outcome::Owner { owner, .. } => {
                if had_contents {
                    out(Action::DropContents);
                }
                self.restart(State::InvCopy, owner, 0);
            }
            Outcome::Lost => {
                if had_contents {
                    out(Action::DropContents);
                }
                let state = if self.me() == home {
                    State::InvOwner
                } else {
                    State::InvCopy
                };
                self.restart(state, home, 0);
            }
        }
        if let Some(access) = wanted {
            self.acquire(access, token, out)?;
        }
        Ok(())
    }
}

/// The coordinator's tally of the reports about one object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    owner: Option<(NodeId, u64, bool)>,
    copy: Option<(NodeId, u64)>,
    owners: u32,
}

impl Tally {
    /// An empty tally.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts what `node` reported.
    pub fn add(&mut self, node: NodeId, holding: Holding) {
        match holding {
            Holding::Nothing => {}
            Holding::Copy { version } => {
                let better = match self.copy {
                    None => true,
                    Some((n, v)) => version > v || (version == v && node < n),
                };
                if better {
                    self.copy = Some((node, version));
                }
            }
            Holding::Owner { version, created } => {
                self.owners += 1;
                let better = match self.owner {
                    None => true,
                    Some((n, v, _)) => version > v || (version == v && node < n),
                };
                if better {
                    self.owner = Some((node, version, created));
                }
            }
        }
    }

    /// More than one node reported ownership (never, with correct peers;
    /// the highest version is kept).
    pub fn conflict(&self) -> bool {
        self.owners > 1
    }

    /// The decision: the owner that remains, else the best copy (highest
    /// version, then lowest node id), else lost.
    pub fn outcome(&self) -> Outcome {
        match (self.owner, self.copy) {
            (Some((owner, version, created)), _) => Outcome::Owner {
                owner,
                version,
                created,
            },
            (None, Some((owner, version))) => Outcome::Owner {
                owner,
                version,
                created: true,
            },
            (None, None) => Outcome::Lost,
        }
    }
}
