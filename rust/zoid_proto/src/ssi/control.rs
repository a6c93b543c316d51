// SPDX-License-Identifier: GPL-2.0

//! ssi's membership messages: heartbeats and the rebuild of
//! [`super::rebuild`] (freeze, mark, report, resume), on the same treenet
//! channel as coherence messages, told apart by their magic ("SR").
//!
//! ```text
//!  0       1       2       3       4                               8
//!  +-------+-------+-------+-------+-------------------------------+
//!  |    magic "SR" | ver.  | kind  |             epoch             |
//!  +---------------+-------+-------+-------------------------------+
//!  |             count             |          0 (reserved)         |
//!  +-------------------------------+-------------------------------+
//!  16, then `count` entries of the kind's size:
//!
//!  Freeze    node u32                                   (the survivors)
//!  Report    set u32 | object u64 | holding u8 | 0 0 0 | version u64
//!  Owned     (as Report: the objects a leaving node owns)
//!  Resume    set u32 | object u64 | outcome u8 | 0 0 0 | owner u32 | version u64
//!  Define    set u32 | object size u32 | linker u8 | name length u8 | 0 0 |
//!            name (32 bytes, zero-padded)
//!  Forget    set u32 | object u64             (lost objects acknowledged)
//!  Members   set u32 | node u32                 (a limited set's members)
//!  Mark, Heartbeat, Leave: no entries
//! ```
//!
//! Big-endian.  One message is one treenet message, so the length must be
//! exactly the header and its entries.

use super::coherence::NodeId;
use super::rebuild::{Holding, Outcome};
use super::wire::WireError;

/// First two bytes of every membership message.
pub const MAGIC: u16 = 0x5352;
/// Version of the format.
pub const CONTROL_VERSION: u8 = 1;
/// Bytes of the header.
pub const HEADER_LEN: usize = 16;
/// Bytes of a `Report` entry.
pub const REPORT_ENTRY_LEN: usize = 24;
/// Bytes of a `Resume` entry.
pub const RESUME_ENTRY_LEN: usize = 28;
/// Bytes of a `Define` entry.
pub const DEFINE_ENTRY_LEN: usize = 44;
/// Bytes of a `Forget` entry.
pub const FORGET_ENTRY_LEN: usize = 12;
/// Bytes of a `Members` entry.
pub const MEMBERS_ENTRY_LEN: usize = 8;
/// Longest set name.
pub const SET_NAME_MAX: usize = 32;

/// The kinds of membership messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Coordinator to every survivor: stop, and mark your channels to
    /// these nodes (the entries).
    Freeze = 1,
    /// Node to node: nothing more comes from me until the rebuild ends.
    Mark = 2,
    /// Node to coordinator: what I hold of each object I know.
    Report = 3,
    /// Coordinator to every survivor: each object's outcome; go on.
    Resume = 4,
    /// Node to coordinator: I am alive.
    Heartbeat = 5,
    /// Coordinator to a node being removed: take no new access, finish
    /// what you asked for, then say what you own.
    Leave = 6,
    /// Leaving node to coordinator: the objects I own (`Report` entries),
    /// for the coordinator to take before the node goes.
    Owned = 7,
    /// Coordinator to a member: sets defined on the home (name, object
    /// size, linker), so every node knows them by name.
    Define = 8,
    /// Coordinator to every member: these lost objects are acknowledged
    /// (an administrator said so): accesses create them again.
    Forget = 9,
    /// Coordinator to a member, after the `Define` of a limited set: each
    /// set named in the entries takes in only the nodes listed for it
    /// (and the home); a `Define` alone takes in every node.
    Members = 10,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Self> {
        Some(match b {
            1 => Kind::Freeze,
            2 => Kind::Mark,
            3 => Kind::Report,
            4 => Kind::Resume,
            5 => Kind::Heartbeat,
            6 => Kind::Leave,
            7 => Kind::Owned,
            8 => Kind::Define,
            9 => Kind::Forget,
            10 => Kind::Members,
            _ => return None,
        })
    }

    /// Bytes of one entry of this kind.
    pub fn entry_len(self) -> usize {
        match self {
            Kind::Freeze => 4,
            Kind::Report | Kind::Owned => REPORT_ENTRY_LEN,
            Kind::Resume => RESUME_ENTRY_LEN,
            Kind::Define => DEFINE_ENTRY_LEN,
            Kind::Forget => FORGET_ENTRY_LEN,
            Kind::Members => MEMBERS_ENTRY_LEN,
            Kind::Mark | Kind::Heartbeat | Kind::Leave => 0,
        }
    }
}

/// A decoded header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControlHeader {
    /// What it is.
    pub kind: Kind,
    /// The rebuild it belongs to (heartbeats: the sender's last one).
    pub epoch: u32,
    /// Entries after the header.
    pub count: u32,
}

/// Whether a message (its first bytes) is a membership message.
pub fn is_control(b: &[u8]) -> bool {
    b.len() >= 2 && u16::from_be_bytes([b[0], b[1]]) == MAGIC
}

impl ControlHeader {
    /// The header's bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..2].copy_from_slice(&MAGIC.to_be_bytes());
        b[2] = CONTROL_VERSION;
        b[3] = self.kind as u8;
        b[4..8].copy_from_slice(&self.epoch.to_be_bytes());
        b[8..12].copy_from_slice(&self.count.to_be_bytes());
        b
    }

    /// Decodes the header of a message of `msg_len` bytes (`b`: at least
    /// its first [`HEADER_LEN`] bytes); the length must be exactly the
    /// header and its entries.
    pub fn decode(b: &[u8], msg_len: usize) -> Result<Self, WireError> {
        if b.len() < HEADER_LEN || msg_len < HEADER_LEN {
            return Err(WireError::Short);
        }
        if !is_control(b) {
            return Err(WireError::BadMagic);
        }
        if b[2] != CONTROL_VERSION {
            return Err(WireError::BadVersion);
        }
        let kind = Kind::from_u8(b[3]).ok_or(WireError::BadKind)?;
        let word = |at: usize| u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        let (epoch, count) = (word(4), word(8));
        if word(12) != 0 {
            return Err(WireError::BadLength);
        }
        let expected = (count as usize)
            .checked_mul(kind.entry_len())
            .and_then(|n| n.checked_add(HEADER_LEN));
        if expected != Some(msg_len) {
            return Err(WireError::BadLength);
        }
        Ok(Self { kind, epoch, count })
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(w)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(w)
}

/// A `Freeze` entry: a survivor.
pub fn encode_node(node: NodeId) -> [u8; 4] {
    node.to_be_bytes()
}

/// Decodes a `Freeze` entry.
pub fn decode_node(b: &[u8; 4]) -> NodeId {
    u32::from_be_bytes(*b)
}

/// A `Report` entry.
pub fn encode_report(set: u32, object: u64, holding: Holding) -> [u8; REPORT_ENTRY_LEN] {
    let (code, version) = match holding {
        Holding::Nothing => (0u8, 0),
        Holding::Copy { version } => (1, version),
        Holding::Owner {
            version,
            created: false,
        } => (2, version),
        Holding::Owner {
            version,
            created: true,
        } => (3, version),
    };
    let mut b = [0u8; REPORT_ENTRY_LEN];
    b[0..4].copy_from_slice(&set.to_be_bytes());
    b[4..12].copy_from_slice(&object.to_be_bytes());
    b[12] = code;
    b[16..24].copy_from_slice(&version.to_be_bytes());
    b
}

/// Decodes a `Report` entry: (set, object, holding).
pub fn decode_report(b: &[u8; REPORT_ENTRY_LEN]) -> Result<(u32, u64, Holding), WireError> {
    if b[13..16] != [0, 0, 0] {
        return Err(WireError::BadLength);
    }
    let version = u64_at(b, 16);
    let holding = match b[12] {
        0 if version == 0 => Holding::Nothing,
        1 => Holding::Copy { version },
        2 => Holding::Owner {
            version,
            created: false,
        },
        3 => Holding::Owner {
            version,
            created: true,
        },
        _ => return Err(WireError::BadKind),
    };
    Ok((u32_at(b, 0), u64_at(b, 4), holding))
}

/// A `Resume` entry.
pub fn encode_resume(set: u32, object: u64, outcome: Outcome) -> [u8; RESUME_ENTRY_LEN] {
    let (code, owner, version) = match outcome {
        Outcome::Lost => (0u8, 0, 0),
        Outcome::Owner {
            owner,
            version,
            created: false,
        } => (1, owner, version),
        Outcome::Owner {
            owner,
            version,
            created: true,
        } => (2, owner, version),
    };
    let mut b = [0u8; RESUME_ENTRY_LEN];
    b[0..4].copy_from_slice(&set.to_be_bytes());
    b[4..12].copy_from_slice(&object.to_be_bytes());
    b[12] = code;
    b[16..20].copy_from_slice(&owner.to_be_bytes());
    b[20..28].copy_from_slice(&version.to_be_bytes());
    b
}

/// Decodes a `Resume` entry: (set, object, outcome).
pub fn decode_resume(b: &[u8; RESUME_ENTRY_LEN]) -> Result<(u32, u64, Outcome), WireError> {
    if b[13..16] != [0, 0, 0] {
        return Err(WireError::BadLength);
    }
    let (owner, version) = (u32_at(b, 16), u64_at(b, 20));
    let outcome = match b[12] {
        0 if owner == 0 && version == 0 => Outcome::Lost,
        1 => Outcome::Owner {
            owner,
            version,
            created: false,
        },
        2 => Outcome::Owner {
            owner,
            version,
            created: true,
        },
        _ => return Err(WireError::BadKind),
    };
    Ok((u32_at(b, 0), u64_at(b, 4), outcome))
}

/// A `Forget` entry: an object.
pub fn encode_object(set: u32, object: u64) -> [u8; FORGET_ENTRY_LEN] {
    let mut b = [0u8; FORGET_ENTRY_LEN];
    b[0..4].copy_from_slice(&set.to_be_bytes());
    b[4..12].copy_from_slice(&object.to_be_bytes());
    b
}

/// Decodes a `Forget` entry.
pub fn decode_object(b: &[u8; FORGET_ENTRY_LEN]) -> (u32, u64) {
    (u32_at(b, 0), u64_at(b, 4))
}

/// A `Members` entry: `node` is a member of set `set`.
pub fn encode_member(set: u32, node: NodeId) -> [u8; MEMBERS_ENTRY_LEN] {
    let mut b = [0u8; MEMBERS_ENTRY_LEN];
    b[0..4].copy_from_slice(&set.to_be_bytes());
    b[4..8].copy_from_slice(&node.to_be_bytes());
    b
}

/// Decodes a `Members` entry: (set, node).
pub fn decode_member(b: &[u8; MEMBERS_ENTRY_LEN]) -> (u32, NodeId) {
    (u32_at(b, 0), u32_at(b, 4))
}

/// The linker of a defined set, as a `Define` entry names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkerKind {
    /// Memory: zero at first touch.
    Memory = 0,
    /// A file on the home.
    File = 1,
}

impl LinkerKind {
    /// Its name, as users write it.
    pub fn name(self) -> &'static str {
        match self {
            LinkerKind::Memory => "memory",
            LinkerKind::File => "file",
        }
    }
}

/// A set definition a `Define` entry carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Definition {
    /// The set.
    pub set: u32,
    /// Its object size.
    pub size: u32,
    /// Its linker.
    pub linker: LinkerKind,
    /// Its name: the first `name_len` bytes of `name`.
    pub name: [u8; SET_NAME_MAX],
    /// Bytes of `name` in use (1 to [`SET_NAME_MAX`]).
    pub name_len: u8,
}

impl Definition {
    /// A definition (`None` if the name is empty or too long).
    pub fn new(set: u32, size: u32, linker: LinkerKind, name: &[u8]) -> Option<Self> {
        if name.is_empty() || name.len() > SET_NAME_MAX {
            return None;
        }
        let mut n = [0u8; SET_NAME_MAX];
        n[..name.len()].copy_from_slice(name);
        Some(Self {
            set,
            size,
            linker,
            name: n,
            name_len: name.len() as u8,
        })
    }

    /// The name.
    pub fn name(&self) -> &[u8] {
        &self.name[..self.name_len as usize]
    }
}

/// A `Define` entry.
pub fn encode_define(d: &Definition) -> [u8; DEFINE_ENTRY_LEN] {
    let mut b = [0u8; DEFINE_ENTRY_LEN];
    b[0..4].copy_from_slice(&d.set.to_be_bytes());
    b[4..8].copy_from_slice(&d.size.to_be_bytes());
    b[8] = d.linker as u8;
    b[9] = d.name_len;
    b[12..12 + d.name_len as usize].copy_from_slice(d.name());
    b
}

/// Decodes a `Define` entry: a known linker, a name of 1 to 32 bytes,
/// zeros in every unused byte.
pub fn decode_define(b: &[u8; DEFINE_ENTRY_LEN]) -> Result<Definition, WireError> {
    let linker = match b[8] {
        0 => LinkerKind::Memory,
        1 => LinkerKind::File,
        _ => return Err(WireError::BadKind),
    };
    let len = b[9] as usize;
    if len == 0 || len > SET_NAME_MAX || b[10] != 0 || b[11] != 0 {
        return Err(WireError::BadLength);
    }
    if b[12 + len..].iter().any(|&c| c != 0) {
        return Err(WireError::BadLength);
    }
    Definition::new(u32_at(b, 0), u32_at(b, 4), linker, &b[12..12 + len])
        .ok_or(WireError::BadLength)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forget_entries_round_trip() {
        let b = encode_object(7, u64::MAX - 1);
        assert_eq!(decode_object(&b), (7, u64::MAX - 1));
    }

    #[test]
    fn definitions_round_trip_and_junk_is_refused() {
        let d = Definition::new(41, 4096, LinkerKind::File, b"backed").unwrap();
        let b = encode_define(&d);
        assert_eq!(decode_define(&b), Ok(d));
        assert_eq!(decode_define(&b).unwrap().name(), b"backed");
        let long = Definition::new(1, 64, LinkerKind::Memory, &[b'x'; 32]).unwrap();
        assert_eq!(decode_define(&encode_define(&long)), Ok(long));
        assert!(Definition::new(1, 64, LinkerKind::Memory, &[b'x'; 33]).is_none());
        assert!(Definition::new(1, 64, LinkerKind::Memory, b"").is_none());
        let mut bad = b;
        bad[8] = 2;
        assert_eq!(decode_define(&bad), Err(WireError::BadKind));
        let mut bad = b;
        bad[9] = 0;
        assert!(decode_define(&bad).is_err());
        let mut bad = b;
        bad[9] = 33;
        assert!(decode_define(&bad).is_err());
        let mut bad = b;
        bad[43] = b'!';
        assert!(decode_define(&bad).is_err());
        let mut bad = b;
        bad[10] = 1;
        assert!(decode_define(&bad).is_err());
    }

    #[test]
    fn headers_round_trip_and_lengths_must_match() {
        for (kind, count) in [
            (Kind::Freeze, 3u32),
            (Kind::Mark, 0),
            (Kind::Report, 2),
            (Kind::Resume, 5),
            (Kind::Heartbeat, 0),
            (Kind::Leave, 0),
            (Kind::Owned, 4),
            (Kind::Define, 2),
            (Kind::Forget, 3),
            (Kind::Members, 4),
        ] {
            let h = ControlHeader {
                kind,
                epoch: 7,
                count,
            };
            let len = HEADER_LEN + count as usize * kind.entry_len();
            assert_eq!(ControlHeader::decode(&h.encode(), len), Ok(h));
            assert_eq!(
                ControlHeader::decode(&h.encode(), len + 1),
                Err(WireError::BadLength)
            );
        }
        let mut b = ControlHeader {
            kind: Kind::Mark,
            epoch: 1,
            count: 0,
        }
        .encode();
        assert!(is_control(&b));
        b[3] = 11;
        assert_eq!(
            ControlHeader::decode(&b, HEADER_LEN),
            Err(WireError::BadKind)
        );
        b[3] = 2;
        b[12] = 1;
        assert_eq!(
            ControlHeader::decode(&b, HEADER_LEN),
            Err(WireError::BadLength)
        );
        b[0] = 0x53;
        b[1] = 0x53;
        assert!(!is_control(&b));
        // A count whose entries overflow the length is refused.
        let huge = ControlHeader {
            kind: Kind::Resume,
            epoch: 1,
            count: u32::MAX,
        };
        assert_eq!(
            ControlHeader::decode(&huge.encode(), HEADER_LEN),
            Err(WireError::BadLength)
        );
    }

    #[test]
    fn entries_round_trip() {
        for h in [
            Holding::Nothing,
            Holding::Copy { version: 9 },
            Holding::Owner {
                version: 0,
                created: false,
            },
            Holding::Owner {
                version: u64::MAX - 1,
                created: true,
            },
        ] {
            let b = encode_report(u32::MAX, 1 << 40, h);
            assert_eq!(decode_report(&b), Ok((u32::MAX, 1 << 40, h)));
        }
        for o in [
            Outcome::Lost,
            Outcome::Owner {
                owner: 3,
                version: 4,
                created: true,
            },
            Outcome::Owner {
                owner: 0,
                version: 0,
                created: false,
            },
        ] {
            let b = encode_resume(2, 5, o);
            assert_eq!(decode_resume(&b), Ok((2, 5, o)));
        }
        let mut b = encode_report(1, 1, Holding::Nothing);
        b[12] = 4;
        assert_eq!(decode_report(&b), Err(WireError::BadKind));
        let mut b = encode_resume(1, 1, Outcome::Lost);
        b[14] = 1;
        assert_eq!(decode_resume(&b), Err(WireError::BadLength));
        assert_eq!(decode_node(&encode_node(77)), 77);
        assert_eq!(decode_member(&encode_member(41, 3)), (41, 3));
    }
}
