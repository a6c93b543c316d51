// SPDX-License-Identifier: GPL-2.0

//! ssi's wire format: one 40-byte header in front of every coherence
//! message, then the object's contents for `Copy` and `Ownership`.
//!
//! ```text
//!  0       1       2       3       4                               8
//!  +-------+-------+-------+-------+-------------------------------+
//!  |    magic "SS" | ver.  | kind  |              set              |
//!  +---------------+-------+-------+-------------------------------+
//!  |                            object                             |
//!  +-------------------------------+-------------------------------+
//!  |             node              |         contents_len          |
//!  +-------------------------------+-------------------------------+
//!  |                            version                            |
//!  +---------------------------------------------------------------+
//!  |                             token                             |
//!  +---------------------------------------------------------------+
//!  40
//! ```
//!
//! All fields are big-endian; `kind`, `node`, `version` and `token` are
//! those of [`super::coherence::Msg`] (`token`: the request's, in a
//! request and in the `Copy`, `Ownership` or `Refused` that answers it; 0
//! in the others).  Version 1 had no token (a 32-byte header), version 2
//! no `Refused` (kind 7): their messages are refused
//! ([`WireError::BadVersion`]).  One message travels as one treenet
//! message, so its end is known: `contents_len` must match it exactly,
//! and only `Copy` and `Ownership` carry contents.

use super::coherence::{Msg, MsgKind, NodeId};

/// First two bytes of every ssi message.
pub const MAGIC: u16 = 0x5353;
/// Version of the header format (2: with the request token; 3: with
/// `Refused`).
pub const SSI_WIRE_VERSION: u8 = 3;
/// Bytes of the header.
pub const HEADER_LEN: usize = 40;

/// Why a message was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// Shorter than a header.
    Short,
    /// Not an ssi message.
    BadMagic,
    /// A header version this code does not speak.
    BadVersion,
    /// An unknown message kind.
    BadKind,
    /// `contents_len` disagrees with the message or the kind.
    BadLength,
}

/// A decoded header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Container set.
    pub set: u32,
    /// Object of the set.
    pub object: u64,
    /// The coherence message.
    pub msg: Msg,
    /// Bytes of contents after the header.
    pub contents_len: u32,
}

impl Header {
    /// Encodes the header.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..2].copy_from_slice(&MAGIC.to_be_bytes());
        b[2] = SSI_WIRE_VERSION;
        b[3] = self.msg.kind as u8;
        b[4..8].copy_from_slice(&self.set.to_be_bytes());
        b[8..16].copy_from_slice(&self.object.to_be_bytes());
        b[16..20].copy_from_slice(&self.msg.node.to_be_bytes());
        b[20..24].copy_from_slice(&self.contents_len.to_be_bytes());
        b[24..32].copy_from_slice(&self.msg.version.to_be_bytes());
        b[32..40].copy_from_slice(&self.msg.token.to_be_bytes());
        b
    }

    /// Decodes the header of a `msg_len`-byte message whose first bytes
    /// are `b`.
    pub fn decode(b: &[u8], msg_len: usize) -> Result<Self, WireError> {
        let b: &[u8; HEADER_LEN] = b
            .get(..HEADER_LEN)
            .and_then(|h| h.try_into().ok())
            .ok_or(WireError::Short)?;
        if u16::from_be_bytes([b[0], b[1]]) != MAGIC {
            return Err(WireError::BadMagic);
        }
        if b[2] != SSI_WIRE_VERSION {
            return Err(WireError::BadVersion);
        }
        let kind = MsgKind::from_u8(b[3]).ok_or(WireError::BadKind)?;
        let u32_at = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| (u64::from(u32_at(i)) << 32) | u64::from(u32_at(i + 4));
        let contents_len = u32_at(20);
        let expected = msg_len.checked_sub(HEADER_LEN).ok_or(WireError::Short)?;
        if contents_len as usize != expected || (contents_len != 0) != kind.carries_contents() {
            return Err(WireError::BadLength);
        }
        Ok(Self {
            set: u32_at(4),
            object: u64_at(8),
            msg: Msg {
                kind,
                node: u32_at(16) as NodeId,
                version: u64_at(24),
                token: u64_at(32),
            },
            contents_len,
        })
    }
}
