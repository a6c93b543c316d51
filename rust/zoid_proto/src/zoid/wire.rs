// SPDX-License-Identifier: GPL-2.0

//! zoid's wire format: one 32-byte call header in front of every message.
//!
//! ```text
//!  0       1       2               4               6               8
//!  +-------+-------+---------------+---------------+---------------+
//!  |version| kind  |     flags     |    plugin     |   function    |
//!  +-------+-------+---------------+---------------+---------------+
//!  |              tag              |              pid              |
//!  +-------------------------------+-------------------------------+
//!  |              uid              |              gid              |
//!  +-------------------------------+-------------------------------+
//!  |            arg_len            |             errno             |
//!  +-------------------------------+-------------------------------+
//!  24                              28                             32
//! ```
//!
//! All fields are big-endian.  A message is the header, then (with
//! [`FLAG_GROUPS`]) a groups block `count: u32, count x gid: u32` with at
//! most [`MAX_GROUPS`] entries, then exactly `arg_len` bytes of marshalled
//! arguments ([`super::marshal`]).  One message travels as one treenet
//! message, so its end is known: [`split_call`] checks that `arg_len`
//! agrees with it exactly.
//!
//! Messages ([`MsgKind`]) and what their arguments hold:
//!
//! | kind          | direction | args                                  |
//! |---------------|-----------|---------------------------------------|
//! | `Attach`      | CN -> ION | [`AttachRequest`]                     |
//! | `AttachReply` | ION -> CN | [`AttachReply`] (none if `errno` != 0) |
//! | `Call`        | CN -> ION | the function's marshalled arguments   |
//! | `Reply`       | ION -> CN | the function's results (none if `errno` != 0) |
//! | `ProcessExit` | CN -> ION | the exited process's pid, `u32` ([`encode_u32_args`]) |
//! | `Detach`      | CN -> ION | none                                  |
//! | `Cancel`      | CN -> ION | the tag of the call to cancel, `u32`  |
//! | `FileBegin`, `FileData`, `FileCommit`, `FileAbort` | ION -> CNs | file broadcast ([`super::f2cn`]; `tag`: transfer id) |
//! | `FileAck`     | CN -> ION | [`super::f2cn::Ack`] (`errno`: result) |
//! | `Upcall`      | ION -> CN | the plug-in's body for `function` (zoidfs: [`super::plugins::zoidfs::Recall`]) |
//! | `JobLaunch`, `JobOutput`, `JobInput`, `JobInputEnd`, `JobCredit`, `JobSignal`, `JobExit` | both | launched jobs and their streams ([`super::jobs`]; `tag`: job id, `pid`: rank, `function`: stream) |
//!
//! `tag` is chosen by the CN and echoed in the reply; `plugin` and
//! `function` are echoed too.  `pid`, `uid`, `gid` (and the groups) are the
//! caller's on the CN: its thread group id and credentials.  `errno` is 0
//! in requests; in replies it is 0 or a positive errno, and a reply with
//! an errno carries no arguments.

use super::super::version::Version;
use super::errno;

/// Version of the call header format, carried in every message.
pub const ZOID_WIRE_VERSION: u8 = 1;
/// Bytes of the call header.
pub const HEADER_LEN: usize = 32;
/// Most supplementary groups a message carries.
pub const MAX_GROUPS: usize = 32;

/// Flag: the header is followed by a groups block.
pub const FLAG_GROUPS: u16 = 0x1;
/// Flag: the caller wants no reply (the ION sends none, errors included).
pub const FLAG_ASYNC_NOREPLY: u16 = 0x2;
/// Flag: the caller asks for the priority class
/// ([`super::sched::Priority::Urgent`]); the ION may ignore it.
pub const FLAG_PRIORITY: u16 = 0x4;
/// Every flag this version knows; other bits are rejected on decode.
pub const FLAGS_KNOWN: u16 = FLAG_GROUPS | FLAG_ASYNC_NOREPLY | FLAG_PRIORITY;

/// Message kinds (the header's `kind` byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MsgKind {
    /// A CN introduces itself to its ION.
    Attach = 1,
    /// The ION's answer to `Attach`.
    AttachReply = 2,
    /// A forwarded call.
    Call = 3,
    /// The result of a `Call`.
    Reply = 4,
    /// A process on the CN exited: the ION releases its state (open files).
    ProcessExit = 5,
    /// The CN leaves (unload, shutdown): the ION releases all its state.
    Detach = 6,
    /// The CN gave up waiting for a call: drop it if still queued.
    Cancel = 7,
    /// f2cn: a file transfer starts ([`super::f2cn::Begin`]).
    FileBegin = 8,
    /// f2cn: one chunk of the file.
    FileData = 9,
    /// f2cn: every chunk was sent ([`super::f2cn::Commit`]).
    FileCommit = 10,
    /// f2cn: the ION gave the transfer up.
    FileAbort = 11,
    /// f2cn: a CN's answer ([`super::f2cn::Ack`]).
    FileAck = 12,
    /// A plug-in's message from the ION to its CN side (`plugin`,
    /// `function`: what it is; zoidfs's recalls).  Nobody answers it.
    Upcall = 13,
    /// A job's ranks to start on a CN ([`super::jobs::Launch`]).
    JobLaunch = 14,
    /// A rank's standard output or error ([`super::jobs`]).
    JobOutput = 15,
    /// A rank's standard input; empty: its end.
    JobInput = 16,
    /// A stream's reader consumed bytes: the writer may send as many more.
    JobCredit = 17,
    /// A signal for a job's ranks on a CN.
    JobSignal = 18,
    /// A rank ended (wait status), or did not start (`errno`).
    JobExit = 19,
    /// A rank's standard input ends (after how many `JobInput`).
    JobInputEnd = 20,
}

impl MsgKind {
    /// The kind for a `kind` byte, `None` if unknown.
    pub const fn from_u8(b: u8) -> Option<Self> {
        Some(match b {
            1 => Self::Attach,
            2 => Self::AttachReply,
            3 => Self::Call,
            4 => Self::Reply,
            5 => Self::ProcessExit,
            6 => Self::Detach,
            7 => Self::Cancel,
            8 => Self::FileBegin,
            9 => Self::FileData,
            10 => Self::FileCommit,
            11 => Self::FileAbort,
            12 => Self::FileAck,
            13 => Self::Upcall,
            14 => Self::JobLaunch,
            15 => Self::JobOutput,
            16 => Self::JobInput,
            17 => Self::JobCredit,
            18 => Self::JobSignal,
            19 => Self::JobExit,
            20 => Self::JobInputEnd,
            _ => return None,
        })
    }

    /// The kind of the answer to this kind of request: `AttachReply` for
    /// `Attach`, `Reply` for `Call`, `None` for messages nobody answers.
    pub const fn reply_kind(self) -> Option<Self> {
        match self {
            Self::Attach => Some(Self::AttachReply),
            Self::Call => Some(Self::Reply),
            _ => None,
        }
    }
}

/// Why a message was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// Shorter than the header, the groups block or a fixed-size payload.
    Truncated,
    /// A header version this node does not speak.
    BadVersion(u8),
    /// Unknown message kind.
    BadKind(u8),
    /// Flag bits this version does not know.
    BadFlags(u16),
    /// `arg_len` disagrees with the bytes that follow, or a fixed-size
    /// payload is followed by extra bytes.
    LengthMismatch,
    /// A groups block with more than [`MAX_GROUPS`] entries.
    TooManyGroups,
    /// An `errno` field outside `0..=MAX_ERRNO` (an addition to the
    /// original design: a negative or huge errno must never reach a caller).
    BadErrno(i32),
}

impl WireError {
    /// The positive errno reporting this error: `EBADMSG` for malformed
    /// messages (`Truncated`, `LengthMismatch`), `EPROTO` for a peer
    /// speaking another protocol (`BadVersion`, `BadKind`, `BadFlags`,
    /// `BadErrno`), `EINVAL` for `TooManyGroups`.
    pub const fn errno(&self) -> i32 {
        match self {
            Self::Truncated | Self::LengthMismatch => errno::EBADMSG,
            Self::BadVersion(_) | Self::BadKind(_) | Self::BadFlags(_) | Self::BadErrno(_) => {
                errno::EPROTO
            }
            Self::TooManyGroups => errno::EINVAL,
        }
    }
}

/// Reads a big-endian `u16` at `at` (the caller checked the length).
fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// Reads a big-endian `u32` at `at` (the caller checked the length).
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Reads a big-endian `u64` at `at` (the caller checked the length).
fn be64(b: &[u8], at: usize) -> u64 {
    (u64::from(be32(b, at)) << 32) | u64::from(be32(b, at + 4))
}

/// A decoded call header.  The version is implicit ([`ZOID_WIRE_VERSION`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallHeader {
    /// Message kind.
    pub kind: MsgKind,
    /// `FLAG_*` bits.
    pub flags: u16,
    /// Plug-in id (`Call` / `Reply`; 0 otherwise).
    pub plugin: u16,
    /// Function id within the plug-in (`Call` / `Reply`; 0 otherwise).
    pub function: u16,
    /// Call tag chosen by the CN, echoed in the reply.
    pub tag: u32,
    /// Caller's thread group id on the CN.
    pub pid: u32,
    /// Caller's user id.
    pub uid: u32,
    /// Caller's group id.
    pub gid: u32,
    /// Bytes of arguments after the header and the groups block.
    pub arg_len: u32,
    /// Replies: 0 or a positive errno.  Requests: 0.
    pub errno: i32,
}

impl CallHeader {
    /// A header of `kind` with `tag`, every other field zero.
    pub const fn new(kind: MsgKind, tag: u32) -> Self {
        Self {
            kind,
            flags: 0,
            plugin: 0,
            function: 0,
            tag,
            pid: 0,
            uid: 0,
            gid: 0,
            arg_len: 0,
            errno: 0,
        }
    }

    /// The header answering this request: kind from
    /// [`MsgKind::reply_kind`], the same tag, plug-in, function, pid, uid
    /// and gid, no flags.  `None` for messages nobody answers.
    pub const fn reply_to(&self, arg_len: u32, errno: i32) -> Option<Self> {
        let Some(kind) = self.kind.reply_kind() else {
            return None;
        };
        Some(Self {
            kind,
            flags: 0,
            arg_len,
            errno,
            ..*self
        })
    }

    /// Whether a groups block follows the header.
    pub const fn has_groups(&self) -> bool {
        self.flags & FLAG_GROUPS != 0
    }

    /// Whether the caller wants a reply.
    pub const fn wants_reply(&self) -> bool {
        self.flags & FLAG_ASYNC_NOREPLY == 0
    }

    /// Whether the caller asks for the priority class.
    pub const fn wants_priority(&self) -> bool {
        self.flags & FLAG_PRIORITY != 0
    }

    /// Writes the header.
    pub fn encode(&self, out: &mut [u8; HEADER_LEN]) {
        out[0] = ZOID_WIRE_VERSION;
        out[1] = self.kind as u8;
        out[2..4].copy_from_slice(&self.flags.to_be_bytes());
        out[4..6].copy_from_slice(&self.plugin.to_be_bytes());
        out[6..8].copy_from_slice(&self.function.to_be_bytes());
        out[8..12].copy_from_slice(&self.tag.to_be_bytes());
        out[12..16].copy_from_slice(&self.pid.to_be_bytes());
        out[16..20].copy_from_slice(&self.uid.to_be_bytes());
        out[20..24].copy_from_slice(&self.gid.to_be_bytes());
        out[24..28].copy_from_slice(&self.arg_len.to_be_bytes());
        out[28..32].copy_from_slice(&self.errno.to_be_bytes());
    }

    /// Writes the header and, if `groups` is not empty, a groups block
    /// (setting [`FLAG_GROUPS`] exactly then) at the start of `out`; the
    /// arguments go right after.  Returns the bytes written:
    /// `HEADER_LEN + groups_block_len(groups.len())` or `HEADER_LEN`.
    /// `TooManyGroups` above [`MAX_GROUPS`], `Truncated` if `out` is too
    /// short.
    pub fn encode_with_groups(&self, groups: &[u32], out: &mut [u8]) -> Result<usize, WireError> {
        if groups.len() > MAX_GROUPS {
            return Err(WireError::TooManyGroups);
        }
        let block = if groups.is_empty() {
            0
        } else {
            groups_block_len(groups.len())
        };
        let out = out
            .get_mut(..HEADER_LEN + block)
            .ok_or(WireError::Truncated)?;
        let (hdr, rest) = out.split_at_mut(HEADER_LEN);
        let mut h = *self;
        h.flags = if groups.is_empty() {
            h.flags & !FLAG_GROUPS
        } else {
            h.flags | FLAG_GROUPS
        };
        let mut bytes = [0u8; HEADER_LEN];
        h.encode(&mut bytes);
        hdr.copy_from_slice(&bytes);
        if !groups.is_empty() {
            encode_groups(groups, rest)?;
        }
        Ok(HEADER_LEN + block)
    }

    /// Decodes the header at the start of `b` (trailing bytes are the
    /// message's rest and ignored here).  Checks the length, version, kind,
    /// flags and the errno range.
    pub fn decode(b: &[u8]) -> Result<Self, WireError> {
        let b = b.get(..HEADER_LEN).ok_or(WireError::Truncated)?;
        if b[0] != ZOID_WIRE_VERSION {
            return Err(WireError::BadVersion(b[0]));
        }
        let kind = MsgKind::from_u8(b[1]).ok_or(WireError::BadKind(b[1]))?;
        let flags = be16(b, 2);
        if flags & !FLAGS_KNOWN != 0 {
            return Err(WireError::BadFlags(flags));
        }
        let errno = be32(b, 28) as i32;
        if !(0..=errno::MAX_ERRNO).contains(&errno) {
            return Err(WireError::BadErrno(errno));
        }
        Ok(Self {
            kind,
            flags,
            plugin: be16(b, 4),
            function: be16(b, 6),
            tag: be32(b, 8),
            pid: be32(b, 12),
            uid: be32(b, 16),
            gid: be32(b, 20),
            arg_len: be32(b, 24),
            errno,
        })
    }
}

/// Bytes of a groups block with `n` entries.
pub const fn groups_block_len(n: usize) -> usize {
    4 + 4 * n
}

/// Writes a groups block at the start of `out`; returns its length.
/// `TooManyGroups` above [`MAX_GROUPS`], `Truncated` if `out` is too short.
pub fn encode_groups(groups: &[u32], out: &mut [u8]) -> Result<usize, WireError> {
    if groups.len() > MAX_GROUPS {
        return Err(WireError::TooManyGroups);
    }
    let len = groups_block_len(groups.len());
    let out = out.get_mut(..len).ok_or(WireError::Truncated)?;
    // At most MAX_GROUPS, so the count fits.
    out[..4].copy_from_slice(&(groups.len() as u32).to_be_bytes());
    for (chunk, g) in out[4..].chunks_exact_mut(4).zip(groups) {
        chunk.copy_from_slice(&g.to_be_bytes());
    }
    Ok(len)
}

/// The supplementary groups of a message: a borrowed view of its groups
/// block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Groups<'a> {
    /// `len() * 4` bytes of big-endian gids.
    raw: &'a [u8],
}

impl<'a> Groups<'a> {
    /// No groups.
    pub const fn empty() -> Self {
        Self { raw: &[] }
    }

    /// Number of groups.
    pub const fn len(&self) -> usize {
        self.raw.len() / 4
    }

    /// Whether there are no groups.
    pub const fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// The `i`th group.
    pub fn get(&self, i: usize) -> Option<u32> {
        let b = self.raw.get(4 * i..4 * i + 4)?;
        Some(be32(b, 0))
    }

    /// Whether `gid` is one of the groups.
    pub fn contains(&self, gid: u32) -> bool {
        self.iter().any(|g| g == gid)
    }

    /// The groups in message order.
    pub fn iter(&self) -> GroupsIter<'a> {
        GroupsIter { rest: self.raw }
    }
}

impl<'a> IntoIterator for Groups<'a> {
    type Item = u32;
    type IntoIter = GroupsIter<'a>;

    fn into_iter(self) -> GroupsIter<'a> {
        self.iter()
    }
}

/// Iterator over [`Groups`].
#[derive(Clone, Debug)]
pub struct GroupsIter<'a> {
    /// Unread gids, 4 bytes each.  (Not `ChunksExact`: its `size_hint`
    /// divides by a run-time chunk size, whose division-by-zero panic
    /// path objtool flags in kernel builds.)
    rest: &'a [u8],
}

impl Iterator for GroupsIter<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        if self.rest.len() < 4 {
            return None;
        }
        let (gid, rest) = self.rest.split_at(4);
        self.rest = rest;
        Some(be32(gid, 0))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.rest.len() / 4;
        (n, Some(n))
    }
}

impl ExactSizeIterator for GroupsIter<'_> {}

/// Splits a received message into header, groups and arguments.
///
/// Checks the header ([`CallHeader::decode`]), the groups block (present
/// exactly with [`FLAG_GROUPS`], complete, at most [`MAX_GROUPS`]) and that
/// exactly `arg_len` bytes follow (`LengthMismatch` otherwise).
pub fn split_call(msg: &[u8]) -> Result<(CallHeader, Groups<'_>, &[u8]), WireError> {
    let h = CallHeader::decode(msg)?;
    let mut rest = &msg[HEADER_LEN..];
    let mut groups = Groups::empty();
    if h.has_groups() {
        if rest.len() < 4 {
            return Err(WireError::Truncated);
        }
        let n = be32(rest, 0);
        if n > MAX_GROUPS as u32 {
            return Err(WireError::TooManyGroups);
        }
        let len = groups_block_len(n as usize);
        let raw = rest.get(4..len).ok_or(WireError::Truncated)?;
        groups = Groups { raw };
        rest = &rest[len..];
    }
    if usize::try_from(h.arg_len).ok() != Some(rest.len()) {
        return Err(WireError::LengthMismatch);
    }
    Ok((h, groups, rest))
}

/// Bytes of an encoded [`AttachRequest`].
pub const ATTACH_REQUEST_LEN: usize = 16;
/// Bytes of an encoded [`AttachReply`].
pub const ATTACH_REPLY_LEN: usize = 28;
/// Bytes of a `ProcessExit` or `Cancel` message's arguments.
pub const U32_ARGS_LEN: usize = 4;

/// The arguments of an `Attach` message.
///
/// ```text
///  0               8       10      12              16
///  |     proto     | node  |  0    |   max_reply   |
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttachRequest {
    /// The CN's suite version, [`Version::to_wire`].
    pub proto: u64,
    /// The CN's treenet node id.
    pub node: u16,
    /// Largest reply message (header included) the CN accepts, bytes.
    pub max_reply: u32,
}

impl AttachRequest {
    /// Encodes the arguments (the reserved bytes are zero).
    pub fn encode(&self) -> [u8; ATTACH_REQUEST_LEN] {
        let mut b = [0u8; ATTACH_REQUEST_LEN];
        b[0..8].copy_from_slice(&self.proto.to_be_bytes());
        b[8..10].copy_from_slice(&self.node.to_be_bytes());
        b[12..16].copy_from_slice(&self.max_reply.to_be_bytes());
        b
    }

    /// Decodes the arguments.  `Truncated` if shorter than
    /// [`ATTACH_REQUEST_LEN`]; longer arguments (from a newer, compatible
    /// peer) are accepted and the rest ignored, as are the reserved bytes.
    pub fn decode(b: &[u8]) -> Result<Self, WireError> {
        let b = b.get(..ATTACH_REQUEST_LEN).ok_or(WireError::Truncated)?;
        Ok(Self {
            proto: be64(b, 0),
            node: be16(b, 8),
            max_reply: be32(b, 12),
        })
    }

    /// The CN's version, `None` if `proto` is not a valid version.
    pub const fn version(&self) -> Option<Version> {
        Version::from_wire(self.proto)
    }
}

/// The arguments of a successful `AttachReply` message.
///
/// ```text
///  0               8               12              16
///  |     proto     |  max_request  |   max_reply   |
///  | ack_threshold |    workers    |max_outstanding|
///  16              20              24              28
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttachReply {
    /// The ION's suite version, [`Version::to_wire`].
    pub proto: u64,
    /// Largest request message (header, groups and arguments) the ION
    /// accepts, bytes.
    pub max_request: u32,
    /// Largest reply message the ION sends to this CN: at most the CN's
    /// `max_reply`.
    pub max_reply: u32,
    /// Requests larger than this many bytes are sent with treenet's
    /// rendezvous (announced, then granted by the ION).
    pub ack_threshold: u32,
    /// The ION's worker threads.
    pub workers: u32,
    /// Calls one CN may have outstanding (queued or running) at the ION;
    /// the CN holds further calls back.
    pub max_outstanding: u32,
}

impl AttachReply {
    /// Encodes the arguments.
    pub fn encode(&self) -> [u8; ATTACH_REPLY_LEN] {
        let mut b = [0u8; ATTACH_REPLY_LEN];
        b[0..8].copy_from_slice(&self.proto.to_be_bytes());
        b[8..12].copy_from_slice(&self.max_request.to_be_bytes());
        b[12..16].copy_from_slice(&self.max_reply.to_be_bytes());
        b[16..20].copy_from_slice(&self.ack_threshold.to_be_bytes());
        b[20..24].copy_from_slice(&self.workers.to_be_bytes());
        b[24..28].copy_from_slice(&self.max_outstanding.to_be_bytes());
        b
    }

    /// Decodes the arguments.  `Truncated` if shorter than
    /// [`ATTACH_REPLY_LEN`]; longer arguments are accepted and the rest
    /// ignored.
    pub fn decode(b: &[u8]) -> Result<Self, WireError> {
        let b = b.get(..ATTACH_REPLY_LEN).ok_or(WireError::Truncated)?;
        Ok(Self {
            proto: be64(b, 0),
            max_request: be32(b, 8),
            max_reply: be32(b, 12),
            ack_threshold: be32(b, 16),
            workers: be32(b, 20),
            max_outstanding: be32(b, 24),
        })
    }

    /// The ION's version, `None` if `proto` is not a valid version.
    pub const fn version(&self) -> Option<Version> {
        Version::from_wire(self.proto)
    }
}

/// Encodes the arguments of a `ProcessExit` (the pid) or `Cancel` (the
/// tag) message.
pub fn encode_u32_args(v: u32) -> [u8; U32_ARGS_LEN] {
    v.to_be_bytes()
}

/// Decodes the arguments of a `ProcessExit` or `Cancel` message: exactly
/// four bytes (`Truncated` if fewer, `LengthMismatch` if more).
pub fn decode_u32_args(args: &[u8]) -> Result<u32, WireError> {
    if args.len() < U32_ARGS_LEN {
        return Err(WireError::Truncated);
    }
    if args.len() > U32_ARGS_LEN {
        return Err(WireError::LengthMismatch);
    }
    Ok(be32(args, 0))
}
