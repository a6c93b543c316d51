// SPDX-License-Identifier: GPL-2.0

//! treenet's wire format: one 16-byte frame header in front of every payload.
//!
//! ```text
//!  0       1       2               4               6               8
//!  +-------+-------+---------------+---------------+---------------+
//!  |version| kind  |   src node    |   dst node    |  payload len  |
//!  +-------+-------+---------------+---------------+---------------+
//!  |            seq / ack          |      crc32c(header + payload) |
//!  +-------------------------------+-------------------------------+
//!  8                              12                              16
//! ```
//!
//! All fields are big-endian.  `kind` holds the frame type in its high nibble
//! and flags in its low nibble: for data frames `FIRST`, `LAST` (message
//! boundaries) and the lane bit (control or bulk), for acks the lane bit.
//! The checksum covers the first 12 header bytes and the payload, so a frame
//! is either intact or dropped; the 16 bytes match ZOID's software header, so
//! `packet_size=240` frames are exactly Blue Gene's 256-byte tree packets.
//!
//! The first data frame of every message starts with a 16-byte
//! [`MsgHeader`] (origin, final destination, channel, length, id).
//!
//! ## Piggybacked acks
//!
//! A data frame may carry the cumulative ack of one of the reverse lanes,
//! so a request and its reply cost two frames, not four: its kind is
//! `KIND_DATA_ACK_CONTROL` or `KIND_DATA_ACK_BULK` (which lane is acked)
//! instead of `KIND_DATA`, and the last [`PIGGY_ACK_LEN`] bytes of its
//! payload (counted in the payload length, covered by the checksum or
//! tag) are the next sequence number expected on that lane ([`PiggyAck`]).
//! Only a lane with nothing out of order is acked so (no selective bits);
//! the frame still fits its `packet_size` (a full 240-byte packet carries
//! none).  A node sends them only to neighbours whose hello lists
//! [`FEATURE_PIGGY_ACK`], so a node that predates them still interoperates.
//!
//! ## Fast checksums (wire version 2)
//!
//! A frame of wire version 2 is a version 1 frame whose checksum field holds
//! the low 32 bits of XXH64 ([`super::super::xxh64`]) over the same bytes
//! instead of their CRC-32C ([`Checksum`]).  CRC-32C in software costs a
//! table load per byte, which made it the largest cost of a streaming
//! sender under emulation; XXH64 works on registers, 32 bytes per step.
//! Every node parses both versions; a node sends version 2 only to
//! neighbours whose hello lists [`FEATURE_XXH64`] (hellos themselves, sent
//! before any neighbour is known, stay version 1), so a node that predates
//! it still interoperates.  Authenticated frames are always version 1.
//!
//! ## Authenticated frames
//!
//! On an untrusted network every node of a pset is given the same 128-bit
//! secret (`/sys/kernel/treenet/mac_key`) and frames carry a SipHash-2-4 tag
//! instead of the CRC: the kind byte's `FLAG_MAC` bit is set, the checksum
//! field holds the tag's low 32 bits and [`MAC_TRAILER_LEN`] bytes after the
//! payload its high 32 bits (a 64-bit tag for 4 extra bytes per frame).  The
//! tag covers the session's two epochs ([`Session`]), the first 12 header
//! bytes and the payload, so a frame can be neither forged nor altered, and a
//! frame recorded in an earlier session does not verify in a later one.

use super::super::crc32c::Crc32c;
use super::super::siphash::{tags_equal, SipHasher24, SipKey};
use super::super::xxh64::Xxh64;

/// Ethertype of treenet frames (IEEE 802 local experimental 1).
pub const ETHERTYPE: u16 = 0x88b5;
/// Wire format version carried in every frame checksummed by CRC-32C (and
/// every authenticated one).
pub const WIRE_VERSION: u8 = 1;
/// Wire format version of frames checksummed by XXH64 (see "Fast
/// checksums").
pub const WIRE_VERSION_XXH64: u8 = 2;

/// Which checksum an unauthenticated frame carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checksum {
    /// CRC-32C, wire version 1: what every node accepts.
    Crc32c,
    /// The low 32 bits of XXH64, wire version 2: only for neighbours whose
    /// hello lists [`FEATURE_XXH64`].
    Xxh64,
}

impl Checksum {
    fn version(self) -> u8 {
        match self {
            Checksum::Crc32c => WIRE_VERSION,
            Checksum::Xxh64 => WIRE_VERSION_XXH64,
        }
    }

    /// The checksum field of a frame whose bytes are `head` (the first 12
    /// header bytes), then `payload`'s pieces, then `tail`.
    fn of(self, head: &[u8], payload: &[&[u8]], tail: &[u8]) -> u32 {
        match self {
            Checksum::Crc32c => {
                let mut crc = Crc32c::new();
                pieces(head, payload, tail).for_each(|b| crc.update(b));
                crc.finish()
            }
            Checksum::Xxh64 => {
                let mut h = Xxh64::new();
                pieces(head, payload, tail).for_each(|b| h.update(b));
                h.finish() as u32
            }
        }
    }
}

/// The bytes a frame's checksum or tag covers, in order: `head`, each piece
/// of `payload`, then `tail` (a piggybacked ack).
fn pieces<'a>(
    head: &'a [u8],
    payload: &'a [&'a [u8]],
    tail: &'a [u8],
) -> impl Iterator<Item = &'a [u8]> {
    core::iter::once(head)
        .chain(payload.iter().copied())
        .chain(core::iter::once(tail))
}
/// Bytes of the frame header.
pub const HEADER_LEN: usize = 16;
/// Bytes of the message header at the start of a message's first frame.
pub const MSG_HEADER_LEN: usize = 16;
/// ZOID's tree packet payload size: `packet_size=240` mode.
pub const ZOID_PACKET_PAYLOAD: usize = 240;
/// Smallest payload per frame treenet accepts as a `packet_size`.
pub const MIN_PACKET_PAYLOAD: usize = 64;
/// Node id meaning "every node below the sender" (broadcast).
pub const BROADCAST: u16 = 0xffff;

/// Bytes a piggybacked ack adds at the end of a data frame's payload.
pub const PIGGY_ACK_LEN: usize = 4;

/// A cumulative ack carried by a data frame (see "Piggybacked acks").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PiggyAck {
    /// The lane acknowledged (a lane from the frame's receiver to its sender).
    pub lane: Lane,
    /// Next sequence number expected on that lane.
    pub next: u32,
}

impl PiggyAck {
    /// The bytes that end the frame's payload.
    pub fn encode(&self) -> [u8; PIGGY_ACK_LEN] {
        self.next.to_be_bytes()
    }
}

/// Frame types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Neighbour discovery and liveness: sent to every link periodically.
    Hello,
    /// Cumulative + selective acknowledgement of one lane.
    Ack,
    /// A fragment of a message on one lane.
    Data,
}

/// The two independent sequence spaces between two neighbours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// Small messages and treenet's own control messages: never waits
    /// behind bulk data.
    Control = 0,
    /// Large (rendezvous) messages.
    Bulk = 1,
}

impl Lane {
    /// Both lanes, control first (the transmit priority order).
    pub const ALL: [Lane; 2] = [Lane::Control, Lane::Bulk];

    /// Index for per-lane arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Data frame flag: the first frame of a message (carries a [`MsgHeader`]).
pub const FLAG_FIRST: u8 = 0x1;
/// Data frame flag: the last frame of a message.
pub const FLAG_LAST: u8 = 0x2;
const FLAG_BULK: u8 = 0x4;
const FLAGS_MASK: u8 = 0x7;
/// Kind byte flag (any frame type): the frame is authenticated by a tag.
const FLAG_MAC: u8 = 0x8;
/// Bytes after the payload of an authenticated frame (the tag's high half).
pub const MAC_TRAILER_LEN: usize = 4;

/// What a frame's tag binds it to besides its bytes: the epochs of the two
/// ends of the session it belongs to (see `Hello`).  Hellos, which open
/// sessions, use [`Session::NONE`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Session {
    /// The sender's epoch on the link.
    pub src_epoch: u32,
    /// The receiver's epoch on the link.
    pub dst_epoch: u32,
}

impl Session {
    /// No session (hellos).
    pub const NONE: Session = Session {
        src_epoch: 0,
        dst_epoch: 0,
    };
}

/// How a received frame proved its integrity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seal {
    /// Its checksum (CRC-32C or XXH64, by its version) matched (already
    /// checked by [`parse_frame`]).
    Checksum,
    /// It carries a tag, still to be checked with [`verify_tag`] once the
    /// receiver knows the frame's [`Session`].
    Tag(u64),
}

/// The 64-bit tag of a frame whose first 12 header bytes are `head`.
pub fn frame_tag(key: &SipKey, session: Session, head: &[u8], payload: &[&[u8]]) -> u64 {
    tag_of(key, session, head, payload, &[])
}

/// [`frame_tag`] of a payload given in pieces and a tail.
fn tag_of(key: &SipKey, session: Session, head: &[u8], payload: &[&[u8]], tail: &[u8]) -> u64 {
    let mut h = SipHasher24::new(key);
    let mut epochs = [0u8; 8];
    epochs[..4].copy_from_slice(&session.src_epoch.to_be_bytes());
    epochs[4..].copy_from_slice(&session.dst_epoch.to_be_bytes());
    h.update(&epochs);
    pieces(head.get(..12).unwrap_or(head), payload, tail).for_each(|b| h.update(b));
    h.finish()
}

/// Checks the tag `parse_frame` found in `frame` (the whole frame as
/// received) against `key` and `session`.
pub fn verify_tag(key: &SipKey, session: Session, frame: &[u8], tag: u64) -> bool {
    let len = usize::from(u16::from_be_bytes([frame[6], frame[7]]));
    let Some(payload) = frame.get(HEADER_LEN..HEADER_LEN + len) else {
        return false;
    };
    let want = frame_tag(key, session, &frame[..12], &[payload]);
    tags_equal(&want.to_le_bytes(), &tag.to_le_bytes())
}

/// Whether a parsed frame's `seal` is what this node accepts: a CRC when
/// it has no key (`key` is `None`), a tag that matches `session` when it
/// has one; else [`FrameError::NoMac`] (the wrong kind of seal) or
/// [`FrameError::BadMac`] (a tag that does not match).
pub fn check_seal(
    key: Option<&SipKey>,
    seal: Seal,
    session: Session,
    frame: &[u8],
) -> Result<(), FrameError> {
    match (key, seal) {
        (None, Seal::Checksum) => Ok(()),
        (Some(key), Seal::Tag(tag)) if verify_tag(key, session, frame, tag) => Ok(()),
        (Some(_), Seal::Tag(_)) => Err(FrameError::BadMac),
        _ => Err(FrameError::NoMac),
    }
}

const KIND_HELLO: u8 = 1;
const KIND_ACK: u8 = 2;
const KIND_DATA: u8 = 3;
const KIND_DATA_ACK_CONTROL: u8 = 4;
const KIND_DATA_ACK_BULK: u8 = 5;

/// Why a received frame was dropped.  Each reason has its own counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// Shorter than a header, or than the payload length it announces.
    Truncated,
    /// Payload longer than this node accepts.
    Oversized,
    /// A wire version this node does not speak.
    BadVersion,
    /// Header or payload corrupted.
    BadChecksum,
    /// Unknown frame type or flags.
    BadKind,
    /// Carries a tag but this node has no key, or carries none but this
    /// node requires one.
    NoMac,
    /// Its tag does not match: forged, altered, or from another session.
    BadMac,
}

/// A decoded frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    /// Frame type.
    pub kind: Kind,
    /// Lane (data and ack frames; `Control` for hellos).
    pub lane: Lane,
    /// `FLAG_FIRST` / `FLAG_LAST` of a data frame.
    pub flags: u8,
    /// Sending neighbour.
    pub src: u16,
    /// Receiving neighbour (`BROADCAST` for hellos).
    pub dst: u16,
    /// Data: sequence number in the lane.  Ack: next sequence expected.
    pub seq: u32,
    /// Data: the ack it carries, if any (its bytes are not part of the
    /// payload [`parse_frame`] returns, and [`FrameHeader::encode`] counts
    /// and checksums them after the payload it is given).
    pub ack: Option<PiggyAck>,
}

impl FrameHeader {
    /// A data frame header.
    pub fn data(src: u16, dst: u16, lane: Lane, seq: u32, flags: u8) -> Self {
        Self {
            kind: Kind::Data,
            lane,
            flags: flags & (FLAG_FIRST | FLAG_LAST),
            src,
            dst,
            seq,
            ack: None,
        }
    }

    /// This data frame header carrying `ack` (see "Piggybacked acks"); its
    /// bytes ([`FrameHeader::ack_bytes`]) go on the wire after the payload.
    pub fn with_ack(mut self, ack: PiggyAck) -> Self {
        if self.kind == Kind::Data {
            self.ack = Some(ack);
        }
        self
    }

    /// The piggybacked ack's bytes and how many of them there are (0: none).
    pub fn ack_bytes(&self) -> ([u8; PIGGY_ACK_LEN], usize) {
        match self.ack {
            Some(a) => (a.encode(), PIGGY_ACK_LEN),
            None => ([0; PIGGY_ACK_LEN], 0),
        }
    }

    /// An ack frame header (`next` = next sequence number expected).
    pub fn ack(src: u16, dst: u16, lane: Lane, next: u32) -> Self {
        Self {
            kind: Kind::Ack,
            lane,
            flags: 0,
            src,
            dst,
            seq: next,
            ack: None,
        }
    }

    /// A hello frame header.
    pub fn hello(src: u16) -> Self {
        Self {
            kind: Kind::Hello,
            lane: Lane::Control,
            flags: 0,
            src,
            dst: BROADCAST,
            seq: 0,
            ack: None,
        }
    }

    fn kind_byte(&self) -> u8 {
        let (kind, flags) = match self.kind {
            Kind::Hello => (KIND_HELLO, 0),
            Kind::Ack => (KIND_ACK, 0),
            Kind::Data => {
                let kind = match self.ack {
                    None => KIND_DATA,
                    Some(PiggyAck {
                        lane: Lane::Control,
                        ..
                    }) => KIND_DATA_ACK_CONTROL,
                    Some(PiggyAck {
                        lane: Lane::Bulk, ..
                    }) => KIND_DATA_ACK_BULK,
                };
                (kind, self.flags & (FLAG_FIRST | FLAG_LAST))
            }
        };
        let lane = if self.lane == Lane::Bulk {
            FLAG_BULK
        } else {
            0
        };
        (kind << 4) | flags | lane
    }

    /// Writes header bytes 0..12 for `payload` into `out` (`kind_flags`:
    /// [`Self::kind_byte`], with [`FLAG_MAC`] for a sealed frame) and returns
    /// the piggybacked ack's bytes that follow the payload, which the
    /// checksum or tag must cover as well.
    fn write_head(
        &self,
        version: u8,
        kind_flags: u8,
        payload: &[&[u8]],
        out: &mut [u8; HEADER_LEN],
    ) -> ([u8; PIGGY_ACK_LEN], usize) {
        let (ack, ack_len) = self.ack_bytes();
        let len: usize = payload.iter().map(|p| p.len()).sum::<usize>() + ack_len;
        let len = u16::try_from(len).unwrap_or(u16::MAX);
        out[0] = version;
        out[1] = kind_flags;
        out[2..4].copy_from_slice(&self.src.to_be_bytes());
        out[4..6].copy_from_slice(&self.dst.to_be_bytes());
        out[6..8].copy_from_slice(&len.to_be_bytes());
        out[8..12].copy_from_slice(&self.seq.to_be_bytes());
        (ack, ack_len)
    }

    /// Writes the header for `payload` into `out`, checksum included.
    ///
    /// `payload` may be given in pieces (a scatter-gather frame); their total
    /// length, with a piggybacked ack's bytes, must fit in 16 bits.
    pub fn encode(&self, payload: &[&[u8]], out: &mut [u8; HEADER_LEN]) {
        self.encode_with(Checksum::Crc32c, payload, out)
    }

    /// [`FrameHeader::encode`] with the checksum `sum` (and its wire
    /// version).
    pub fn encode_with(&self, sum: Checksum, payload: &[&[u8]], out: &mut [u8; HEADER_LEN]) {
        let (ack, ack_len) = self.write_head(sum.version(), self.kind_byte(), payload, out);
        let field = sum.of(&out[..12], payload, &ack[..ack_len]);
        out[12..16].copy_from_slice(&field.to_be_bytes());
    }

    /// Writes the header of an authenticated frame into `out` and the tag's
    /// high half into `trailer` (to follow the payload on the wire).
    pub fn encode_sealed(
        &self,
        payload: &[&[u8]],
        key: &SipKey,
        session: Session,
        out: &mut [u8; HEADER_LEN],
        trailer: &mut [u8; MAC_TRAILER_LEN],
    ) {
        let (ack, ack_len) =
            self.write_head(WIRE_VERSION, self.kind_byte() | FLAG_MAC, payload, out);
        let tag = tag_of(key, session, &out[..12], payload, &ack[..ack_len]);
        out[12..16].copy_from_slice(&(tag as u32).to_be_bytes());
        trailer.copy_from_slice(&((tag >> 32) as u32).to_be_bytes());
    }
}

/// Parses and verifies one received frame that must carry no tag (a node
/// without a key).
///
/// Returns the header and the payload (trailing link-layer padding is cut
/// off).  `max_payload` is the largest payload this node accepts.
pub fn parse(frame: &[u8], max_payload: usize) -> Result<(FrameHeader, &[u8]), FrameError> {
    match parse_frame(frame, max_payload)? {
        (h, p, Seal::Checksum) => Ok((h, p)),
        (_, _, Seal::Tag(_)) => Err(FrameError::NoMac),
    }
}

/// A whole message of one data frame, as [`peek_message`] reads it
/// without checking the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeekedMessage<'a> {
    /// The message's origin, as its header says.
    pub origin: u16,
    /// Its channel.
    pub channel: u16,
    /// Its bytes.
    pub body: &'a [u8],
}

/// The message a data frame carries whole (the frame is both its first
/// and last), read without checking the frame (its checksum or tag, its
/// sender): a filter for what is worth parsing, never a basis for
/// accepting it.  `None` for anything else, or a frame whose lengths do
/// not agree.
pub fn peek_message(frame: &[u8]) -> Option<PeekedMessage<'_>> {
    let kind_byte = *frame.get(1)? & !FLAG_MAC;
    // A piggybacked ack ends the payload.
    let ack_len = match kind_byte >> 4 {
        KIND_DATA => 0,
        KIND_DATA_ACK_CONTROL | KIND_DATA_ACK_BULK => PIGGY_ACK_LEN,
        _ => return None,
    };
    if kind_byte & (FLAG_FIRST | FLAG_LAST) != FLAG_FIRST | FLAG_LAST {
        return None;
    }
    let len = usize::from(u16::from_be_bytes([*frame.get(6)?, *frame.get(7)?]));
    let payload = frame.get(HEADER_LEN..(HEADER_LEN + len).checked_sub(ack_len)?)?;
    let header = MsgHeader::decode(payload)?;
    let body = &payload[MSG_HEADER_LEN..];
    if usize::try_from(header.len).ok()? != body.len() {
        return None;
    }
    Some(PeekedMessage {
        origin: header.origin,
        channel: header.channel,
        body,
    })
}

/// Parses one received frame: its checksum is verified here, its tag (if it
/// carries one) is returned for [`verify_tag`].
pub fn parse_frame(
    frame: &[u8],
    max_payload: usize,
) -> Result<(FrameHeader, &[u8], Seal), FrameError> {
    if frame.len() < HEADER_LEN {
        return Err(FrameError::Truncated);
    }
    let sum = match frame[0] {
        WIRE_VERSION => Checksum::Crc32c,
        WIRE_VERSION_XXH64 => Checksum::Xxh64,
        _ => return Err(FrameError::BadVersion),
    };
    let len = usize::from(u16::from_be_bytes([frame[6], frame[7]]));
    if len > max_payload {
        return Err(FrameError::Oversized);
    }
    let payload = frame
        .get(HEADER_LEN..HEADER_LEN + len)
        .ok_or(FrameError::Truncated)?;
    let field = u32::from_be_bytes([frame[12], frame[13], frame[14], frame[15]]);
    let seal = if frame[1] & FLAG_MAC != 0 {
        // Authenticated frames are version 1 only.
        if sum != Checksum::Crc32c {
            return Err(FrameError::BadVersion);
        }
        let t = frame
            .get(HEADER_LEN + len..HEADER_LEN + len + MAC_TRAILER_LEN)
            .ok_or(FrameError::Truncated)?;
        let high = u32::from_be_bytes([t[0], t[1], t[2], t[3]]);
        Seal::Tag((u64::from(high) << 32) | u64::from(field))
    } else {
        if sum.of(&frame[..12], &[payload], &[]) != field {
            return Err(FrameError::BadChecksum);
        }
        Seal::Checksum
    };
    let kind_byte = frame[1] & !FLAG_MAC;
    let flags = kind_byte & FLAGS_MASK;
    let lane = if flags & FLAG_BULK != 0 {
        Lane::Bulk
    } else {
        Lane::Control
    };
    let (kind, acked_lane) = match (kind_byte >> 4, flags) {
        (KIND_HELLO, 0) => (Kind::Hello, None),
        (KIND_ACK, f) if f & !FLAG_BULK == 0 => (Kind::Ack, None),
        (KIND_DATA, _) => (Kind::Data, None),
        (KIND_DATA_ACK_CONTROL, _) => (Kind::Data, Some(Lane::Control)),
        (KIND_DATA_ACK_BULK, _) => (Kind::Data, Some(Lane::Bulk)),
        _ => return Err(FrameError::BadKind),
    };
    let (payload, ack) = match acked_lane {
        None => (payload, None),
        Some(lane) => {
            let at = payload
                .len()
                .checked_sub(PIGGY_ACK_LEN)
                .ok_or(FrameError::Truncated)?;
            let (data, a) = payload.split_at(at);
            let next = u32::from_be_bytes([a[0], a[1], a[2], a[3]]);
            (data, Some(PiggyAck { lane, next }))
        }
    };
    let header = FrameHeader {
        kind,
        lane,
        flags: flags & (FLAG_FIRST | FLAG_LAST),
        src: u16::from_be_bytes([frame[2], frame[3]]),
        dst: u16::from_be_bytes([frame[4], frame[5]]),
        seq: u32::from_be_bytes([frame[8], frame[9], frame[10], frame[11]]),
        ack,
    };
    Ok((header, payload, seal))
}

/// The header at the start of every message (in its first frame).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsgHeader {
    /// Node that created the message.
    pub origin: u16,
    /// Final destination (`BROADCAST`: every node below the origin).
    pub dst: u16,
    /// Upper-layer channel (0 is treenet's own).
    pub channel: u16,
    /// Reserved, zero.
    pub flags: u16,
    /// Message length in bytes (header not included).
    pub len: u32,
    /// Sender-chosen id (rendezvous matches grants with it).
    pub id: u32,
}

impl MsgHeader {
    /// Encodes the header.
    pub fn encode(&self) -> [u8; MSG_HEADER_LEN] {
        let mut b = [0u8; MSG_HEADER_LEN];
        b[0..2].copy_from_slice(&self.origin.to_be_bytes());
        b[2..4].copy_from_slice(&self.dst.to_be_bytes());
        b[4..6].copy_from_slice(&self.channel.to_be_bytes());
        b[6..8].copy_from_slice(&self.flags.to_be_bytes());
        b[8..12].copy_from_slice(&self.len.to_be_bytes());
        b[12..16].copy_from_slice(&self.id.to_be_bytes());
        b
    }

    /// Decodes the header at the start of `b`.
    pub fn decode(b: &[u8]) -> Option<Self> {
        let b = b.get(..MSG_HEADER_LEN)?;
        Some(Self {
            origin: u16::from_be_bytes([b[0], b[1]]),
            dst: u16::from_be_bytes([b[2], b[3]]),
            channel: u16::from_be_bytes([b[4], b[5]]),
            flags: u16::from_be_bytes([b[6], b[7]]),
            len: u32::from_be_bytes([b[8], b[9], b[10], b[11]]),
            id: u32::from_be_bytes([b[12], b[13], b[14], b[15]]),
        })
    }
}

/// Ack frame payload: which frames after the cumulative point arrived.
///
/// Bit `i` of `sack` set = frame `next + 1 + i` was received (frame `next`
/// itself is the hole that stops the cumulative point).
pub fn encode_ack(sack: u64) -> [u8; 8] {
    sack.to_be_bytes()
}

/// Decodes an ack payload (a short payload is a malformed frame).
pub fn decode_ack(p: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(p.get(..8)?.try_into().ok()?))
}

/// Node role in a pset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// I/O node: the root of its pset's tree.
    Ion,
    /// Compute node.
    Cn,
}

/// Hello feature bit: the sender understands piggybacked acks.
pub const FEATURE_PIGGY_ACK: u8 = 0x01;
/// Hello feature bit: the sender accepts frames of wire version 2 (XXH64
/// checksums, see "Fast checksums").
pub const FEATURE_XXH64: u8 = 0x02;

/// Hello feature bit: the two bytes after `below` carry the sender's ION
/// ([`Hello::ion`]), so a CN below a relaying CN learns which node its
/// ION is, as a neighbour of the ION learns it from the ION's own hello.
pub const FEATURE_ION_ID: u8 = 0x04;

/// [`Hello::ion`] of a sender that knows no ION yet (or predates
/// [`FEATURE_ION_ID`]).
pub const NO_ION: u16 = 0xffff;

/// Most node ids a hello lists as reachable below its sender.
pub const HELLO_MAX_BELOW: usize = 96;

/// A hello: who the sender is and which nodes it reaches below itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hello {
    /// Sender's session id, new each time treenet loads.
    pub epoch: u32,
    /// The session id the sender last heard from the receiver (0: none).
    pub peer_epoch: u32,
    /// Sender's pset.
    pub pset: u16,
    /// Sender's role.
    pub role: Role,
    /// Hops from the sender to its pset's ION (0 for the ION, 0xff unknown).
    pub hops: u8,
    /// What the sender's treenet understands (`FEATURE_*` bits; 0 from
    /// nodes that predate them, which sent this byte as zero).
    pub features: u8,
    /// Number of valid entries in `below`.
    pub n_below: u8,
    /// Nodes the sender relays for (its subtree).
    pub below: [u16; HELLO_MAX_BELOW],
    /// The ION of the sender's tree: itself for an ION; [`NO_ION`] when
    /// unknown.  On the wire only with [`FEATURE_ION_ID`] in `features`.
    pub ion: u16,
}

/// Fixed part of an encoded hello.
const HELLO_FIXED: usize = 14;

impl Hello {
    /// Bytes of the encoded hello (fits a 240-byte packet).
    pub fn encoded_len(&self) -> usize {
        let ion = if self.features & FEATURE_ION_ID != 0 {
            2
        } else {
            0
        };
        HELLO_FIXED + 2 * usize::from(self.n_below).min(HELLO_MAX_BELOW) + ion
    }

    /// Encodes into `out` (at least `encoded_len()` bytes); returns the length.
    pub fn encode(&self, out: &mut [u8]) -> usize {
        let n = usize::from(self.n_below).min(HELLO_MAX_BELOW);
        out[0..4].copy_from_slice(&self.epoch.to_be_bytes());
        out[4..8].copy_from_slice(&self.peer_epoch.to_be_bytes());
        out[8..10].copy_from_slice(&self.pset.to_be_bytes());
        out[10] = match self.role {
            Role::Ion => 1,
            Role::Cn => 2,
        };
        out[11] = self.hops;
        out[12] = self.features;
        out[13] = n as u8;
        for (i, id) in self.below[..n].iter().enumerate() {
            out[HELLO_FIXED + 2 * i..HELLO_FIXED + 2 * i + 2].copy_from_slice(&id.to_be_bytes());
        }
        let end = HELLO_FIXED + 2 * n;
        if self.features & FEATURE_ION_ID == 0 {
            return end;
        }
        out[end..end + 2].copy_from_slice(&self.ion.to_be_bytes());
        end + 2
    }

    /// Decodes a hello payload.
    pub fn decode(p: &[u8]) -> Option<Self> {
        if p.len() < HELLO_FIXED {
            return None;
        }
        let role = match p[10] {
            1 => Role::Ion,
            2 => Role::Cn,
            _ => return None,
        };
        let n = usize::from(p[13]);
        if n > HELLO_MAX_BELOW || p.len() < HELLO_FIXED + 2 * n {
            return None;
        }
        let mut below = [0u16; HELLO_MAX_BELOW];
        for (i, b) in below[..n].iter_mut().enumerate() {
            *b = u16::from_be_bytes([p[HELLO_FIXED + 2 * i], p[HELLO_FIXED + 2 * i + 1]]);
        }
        let end = HELLO_FIXED + 2 * n;
        let ion = if p[12] & FEATURE_ION_ID != 0 {
            // Announced but cut off: not a hello this node can trust.
            let b = p.get(end..end + 2)?;
            u16::from_be_bytes([b[0], b[1]])
        } else {
            NO_ION
        };
        Some(Self {
            epoch: u32::from_be_bytes([p[0], p[1], p[2], p[3]]),
            peer_epoch: u32::from_be_bytes([p[4], p[5], p[6], p[7]]),
            pset: u16::from_be_bytes([p[8], p[9]]),
            role,
            hops: p[11],
            features: p[12],
            n_below: p[13],
            below,
            ion,
        })
    }
}
