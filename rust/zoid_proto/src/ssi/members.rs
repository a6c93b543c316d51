// SPDX-License-Identifier: GPL-2.0

//! Sets limited to some nodes: which coherence messages about a set's
//! objects a node handles, and which nodes may access them.
//!
//! A set takes in every node by default.  Limited, its members are the
//! home (always) and the nodes listed; any other node never gets a copy or
//! ownership of its objects, and nothing it says about them is believed:
//!
//! * a message from a node outside the set is dropped, whatever it is
//!   (a forged `Copy` or `Ownership` included, which the state machine
//!   cannot tell from the real one while its node waits: see
//!   [`super::coherence`]);
//! * a request that asks for a node outside the set is dropped too, even
//!   forwarded by a member: nobody serves it, so such a node never holds
//!   the object;
//! * a node outside the set refuses its own accesses at once.
//!
//! Every member decides alone from the list the home sent it, so a member
//! drops what a non-member sends it directly as the home does.

use super::coherence::{Msg, MsgKind, NodeId};

/// A set's members: `None` for every node, else the nodes listed and the
/// home.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Members<'a> {
    listed: Option<&'a [NodeId]>,
    home: NodeId,
}

impl<'a> Members<'a> {
    /// The members of a set whose home is `home`: every node (`None`), or
    /// those of `listed` and the home.
    pub fn new(listed: Option<&'a [NodeId]>, home: NodeId) -> Self {
        Self { listed, home }
    }

    /// Whether the set takes in every node.
    pub fn is_everyone(&self) -> bool {
        self.listed.is_none()
    }

    /// Whether `node` is a member.
    pub fn contains(&self, node: NodeId) -> bool {
        node == self.home || self.listed.is_none_or(|l| l.contains(&node))
    }

    /// Whether a coherence message `msg` about one of the set's objects,
    /// received from `src`, is handled: its sender must be a member and,
    /// for a request, so must the node that asks.
    pub fn admits(&self, src: NodeId, msg: &Msg) -> bool {
        let asker_ok = match msg.kind {
            MsgKind::ReadReq | MsgKind::WriteReq => self.contains(msg.node),
            _ => true,
        };
        self.contains(src) && asker_ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(kind: MsgKind, node: NodeId) -> Msg {
        Msg {
            kind,
            node,
            version: 1,
            token: 7,
        }
    }

    const ALL_KINDS: [MsgKind; 7] = [
        MsgKind::ReadReq,
        MsgKind::WriteReq,
        MsgKind::Copy,
        MsgKind::Ownership,
        MsgKind::Invalidate,
        MsgKind::InvAck,
        MsgKind::Refused,
    ];

    #[test]
    fn every_node_is_a_member_by_default() {
        let m = Members::new(None, 0);
        assert!(m.is_everyone());
        for node in [0, 1, 7, NodeId::MAX] {
            assert!(m.contains(node));
            for kind in ALL_KINDS {
                assert!(m.admits(node, &msg(kind, node)));
            }
        }
    }

    #[test]
    fn the_home_and_the_listed_nodes_are_members() {
        let listed = [2, 5];
        let m = Members::new(Some(&listed), 0);
        assert!(!m.is_everyone());
        assert!(m.contains(0) && m.contains(2) && m.contains(5));
        assert!(!m.contains(1) && !m.contains(3) && !m.contains(NodeId::MAX));
        // The home is a member even when the list is empty.
        let alone = Members::new(Some(&[]), 4);
        assert!(alone.contains(4) && !alone.contains(0));
    }

    #[test]
    fn nothing_from_a_non_member_is_handled() {
        let listed = [2, 5];
        let m = Members::new(Some(&listed), 0);
        for kind in ALL_KINDS {
            assert!(!m.admits(3, &msg(kind, 3)), "{kind:?} from node 3");
            assert!(m.admits(2, &msg(kind, 2)), "{kind:?} from node 2");
            assert!(m.admits(0, &msg(kind, 0)), "{kind:?} from the home");
        }
    }

    #[test]
    fn a_request_for_a_non_member_is_refused_even_forwarded_by_a_member() {
        let listed = [2, 5];
        let m = Members::new(Some(&listed), 0);
        for kind in [MsgKind::ReadReq, MsgKind::WriteReq] {
            assert!(!m.admits(2, &msg(kind, 3)), "{kind:?} for node 3");
            assert!(!m.admits(0, &msg(kind, 3)), "{kind:?} for node 3");
            assert!(m.admits(2, &msg(kind, 5)), "{kind:?} for node 5");
            assert!(m.admits(5, &msg(kind, 0)), "{kind:?} for the home");
        }
    }
}
