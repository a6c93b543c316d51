// SPDX-License-Identifier: GPL-2.0

//! f2cn: copying a file from an ION to the same path on its CNs over
//! treenet broadcast (ZOID's file broadcast).
//!
//! The messages travel on zoid's channel behind the usual call header
//! ([`super::wire::CallHeader`]), whose `tag` is the transfer id and whose
//! `errno` carries failures:
//!
//! | kind         | direction  | body                                         |
//! |--------------|------------|----------------------------------------------|
//! | `FileBegin`  | ION -> all | [`Begin`]: size, chunk, mode, targets, path  |
//! | `FileData`   | ION -> all | offset `u64`, then the chunk up to the end   |
//! | `FileCommit` | ION -> all | [`Commit`]: size and digest                  |
//! | `FileAbort`  | ION -> all | none (`errno`: why)                          |
//! | `FileAck`    | CN -> ION  | [`Ack`]: the phase answered (`errno`: result) |
//!
//! The ION broadcasts `FileBegin` and waits until every target answered it
//! (a target that is down or silent fails the transfer before any data
//! moves).  Then come the chunks, each broadcast once, and `FileCommit`.
//! A target answers the commit once it has every chunk, the digest
//! matches and the file is in place.  A target that fails at any point
//! answers at once with its errno; the ION then aborts the transfer for
//! everyone.
//!
//! Chunks may arrive in any order (treenet's control lane can overtake its
//! bulk lane, so a short last chunk or the commit may come early): a
//! receiver writes each chunk at its offset, marks it in a bitmap
//! ([`Progress`]) and sums an order-independent digest ([`chunk_digest`]).
//! Everything here is allocation-free: the bitmap is the caller's.

use super::super::crc32c::Crc32c;
use super::errno;
use super::marshal::{Decoder, Encoder, MarshalError, MAX_STR};

/// Smallest chunk a transfer may use.
pub const MIN_CHUNK: u32 = 4096;
/// Largest chunk a transfer may use (a treenet message must hold it).
pub const MAX_CHUNK: u32 = 4 << 20;
/// Most chunks in one transfer (bounds a receiver's bitmap to 128 KiB).
pub const MAX_CHUNKS: u64 = 1 << 20;
/// Most target nodes one transfer names.
pub const MAX_TARGETS: usize = 4096;
/// Bytes in front of a chunk's data in a `FileData` body (its offset).
pub const DATA_HEADER: usize = 8;

/// `Ack::phase`: the answer to `FileBegin` (ready to receive).
pub const PHASE_BEGIN: u32 = 1;
/// `Ack::phase`: a failure while receiving chunks (always with an errno).
pub const PHASE_DATA: u32 = 2;
/// `Ack::phase`: the answer to `FileCommit` (the file is in place).
pub const PHASE_COMMIT: u32 = 3;

/// Why a transfer message or step was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum F2cnError {
    /// A body that does not decode (short, long, bad string).
    Malformed,
    /// Chunk size outside [`MIN_CHUNK`]..=[`MAX_CHUNK`] or not a power of
    /// two, or more than [`MAX_CHUNKS`] chunks.
    BadPlan,
    /// A destination that is empty, relative, or holds a NUL.
    BadPath,
    /// Permission bits outside `0o7777`.
    BadMode,
    /// More than [`MAX_TARGETS`] targets.
    TooManyTargets,
    /// A chunk whose offset or length is not one of the plan's chunks.
    BadChunk,
    /// A chunk or commit seen twice.
    Duplicate,
    /// A commit whose size is not the plan's.
    SizeMismatch,
    /// Every chunk arrived but the digest differs from the commit's.
    DigestMismatch,
    /// The caller's bitmap is shorter than [`Plan::bitmap_words`].
    BitmapTooSmall,
}

impl F2cnError {
    /// The positive errno reporting this error.
    pub const fn errno(&self) -> i32 {
        match self {
            Self::Malformed | Self::BadChunk | Self::Duplicate => errno::EBADMSG,
            Self::BadPlan | Self::BadPath | Self::BadMode | Self::BitmapTooSmall => errno::EINVAL,
            Self::TooManyTargets => errno::E2BIG,
            Self::SizeMismatch | Self::DigestMismatch => errno::EIO,
        }
    }
}

impl From<MarshalError> for F2cnError {
    fn from(_: MarshalError) -> Self {
        Self::Malformed
    }
}

/// How a file is cut into chunks.  Chunks are a power of two in size, so
/// offsets turn into indexes by shifting (32-bit kernels have no 64-bit
/// division).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// File size in bytes.
    pub size: u64,
    /// Bytes per chunk (the last one may be shorter).
    pub chunk: u32,
}

impl Plan {
    /// A plan for `size` bytes in chunks of `chunk` (a power of two).
    pub fn new(size: u64, chunk: u32) -> Result<Self, F2cnError> {
        if !(MIN_CHUNK..=MAX_CHUNK).contains(&chunk) || !chunk.is_power_of_two() {
            return Err(F2cnError::BadPlan);
        }
        let plan = Self { size, chunk };
        if plan.chunks() > MAX_CHUNKS {
            return Err(F2cnError::BadPlan);
        }
        Ok(plan)
    }

    /// log2 of the chunk size.
    const fn shift(&self) -> u32 {
        self.chunk.trailing_zeros()
    }

    /// Number of chunks (0 for an empty file).
    pub const fn chunks(&self) -> u64 {
        let full = self.size >> self.shift();
        if self.size & (self.chunk as u64 - 1) != 0 {
            full + 1
        } else {
            full
        }
    }

    /// Offset and length of chunk `index` (`index < chunks()`).
    pub fn chunk_range(&self, index: u64) -> (u64, usize) {
        let offset = index << self.shift();
        let len = (self.size - offset).min(u64::from(self.chunk));
        // At most `chunk`, a u32.
        (offset, len as usize)
    }

    /// `u64` words a receiver's bitmap needs.
    pub fn bitmap_words(&self) -> usize {
        // At most MAX_CHUNKS / 64.
        self.chunks().div_ceil(64) as usize
    }

    /// The index of the chunk at `offset` with `len` bytes: `BadChunk`
    /// unless it is exactly one of the plan's chunks.
    pub fn index_of(&self, offset: u64, len: usize) -> Result<u64, F2cnError> {
        if offset & (u64::from(self.chunk) - 1) != 0 || offset >= self.size {
            return Err(F2cnError::BadChunk);
        }
        let index = offset >> self.shift();
        if self.chunk_range(index).1 != len {
            return Err(F2cnError::BadChunk);
        }
        Ok(index)
    }
}

/// Chunk `index`'s share of the transfer digest: the CRC-32C of its index
/// (big-endian) followed by its bytes.  The digest is the wrapping sum of
/// the shares, so it does not depend on the order chunks arrive in, yet a
/// chunk's bytes count only at their own index.
pub fn chunk_digest(index: u64, data: &[u8]) -> u64 {
    let mut c = Crc32c::new();
    c.update(&index.to_be_bytes());
    c.update(data);
    u64::from(c.finish())
}

/// What a receiver does after a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Chunks or the commit are still missing.
    More,
    /// Every chunk arrived, the commit too, and the digest matches: the
    /// file is complete.
    Complete,
}

/// A receiver's account of one transfer.  The chunk bitmap is kept by the
/// caller (at least [`Plan::bitmap_words`] words, zeroed by [`Self::new`])
/// and passed to every step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    plan: Plan,
    received: u64,
    digest: u64,
    commit: Option<u64>,
}

impl Progress {
    /// A transfer following `plan`; clears the first `plan.bitmap_words()`
    /// words of `got`.
    pub fn new(plan: Plan, got: &mut [u64]) -> Result<Self, F2cnError> {
        let words = got
            .get_mut(..plan.bitmap_words())
            .ok_or(F2cnError::BitmapTooSmall)?;
        words.fill(0);
        Ok(Self {
            plan,
            received: 0,
            digest: 0,
            commit: None,
        })
    }

    /// The plan.
    pub const fn plan(&self) -> Plan {
        self.plan
    }

    /// Chunks received so far.
    pub const fn received(&self) -> u64 {
        self.received
    }

    /// Checks a chunk before it is written: its index, `BadChunk` if it is
    /// not one of the plan's, `Duplicate` if it arrived already.
    pub fn check(&self, got: &[u64], offset: u64, len: usize) -> Result<u64, F2cnError> {
        let index = self.plan.index_of(offset, len)?;
        let word = got
            .get((index / 64) as usize)
            .ok_or(F2cnError::BitmapTooSmall)?;
        if word & (1 << (index % 64)) != 0 {
            return Err(F2cnError::Duplicate);
        }
        Ok(index)
    }

    /// Records the chunk at `offset` (written; see [`Self::check`]).
    pub fn data(&mut self, got: &mut [u64], offset: u64, data: &[u8]) -> Result<Step, F2cnError> {
        let index = self.check(got, offset, data.len())?;
        if let Some(w) = got.get_mut((index / 64) as usize) {
            *w |= 1 << (index % 64);
        }
        self.received += 1;
        self.digest = self.digest.wrapping_add(chunk_digest(index, data));
        self.step()
    }

    /// Records the commit (`size` and `digest` of the whole file).
    pub fn commit(&mut self, size: u64, digest: u64) -> Result<Step, F2cnError> {
        if self.commit.is_some() {
            return Err(F2cnError::Duplicate);
        }
        if size != self.plan.size {
            return Err(F2cnError::SizeMismatch);
        }
        self.commit = Some(digest);
        self.step()
    }

    fn step(&self) -> Result<Step, F2cnError> {
        match self.commit {
            Some(d) if self.received == self.plan.chunks() => {
                if d == self.digest {
                    Ok(Step::Complete)
                } else {
                    Err(F2cnError::DigestMismatch)
                }
            }
            _ => Ok(Step::More),
        }
    }
}

/// A `FileBegin` body, decoded (borrowing the message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Begin<'a> {
    /// How the file is cut.
    pub plan: Plan,
    /// Permission bits of the file on the CNs.
    pub mode: u32,
    /// Target node ids, big-endian `u16` pairs.
    targets: &'a [u8],
    /// Destination path (absolute, no NUL).
    pub path: &'a [u8],
}

impl<'a> Begin<'a> {
    /// Writes a `FileBegin` body: size `u64`, chunk `u32`, mode `u32`,
    /// target count `u32` and the targets (`u16` each), path (string).
    pub fn encode(
        e: &mut Encoder<'_>,
        plan: Plan,
        mode: u32,
        targets: &[u16],
        path: &[u8],
    ) -> Result<(), F2cnError> {
        if targets.len() > MAX_TARGETS {
            return Err(F2cnError::TooManyTargets);
        }
        check_path(path)?;
        if mode > 0o7777 {
            return Err(F2cnError::BadMode);
        }
        e.put_u64(plan.size)?;
        e.put_u32(plan.chunk)?;
        e.put_u32(mode)?;
        // At most MAX_TARGETS.
        e.put_u32(targets.len() as u32)?;
        for &t in targets {
            e.put_u16(t)?;
        }
        e.put_str(path)?;
        Ok(())
    }

    /// Decodes and checks a `FileBegin` body (exactly: no trailing bytes).
    pub fn decode(body: &'a [u8]) -> Result<Self, F2cnError> {
        let mut d = Decoder::new(body);
        let size = d.get_u64()?;
        let chunk = d.get_u32()?;
        let mode = d.get_u32()?;
        let n = d.get_u32()? as usize;
        if n > MAX_TARGETS {
            return Err(F2cnError::TooManyTargets);
        }
        let targets = d.get_raw(2 * n)?;
        let path = d.get_str()?;
        d.finish()?;
        let plan = Plan::new(size, chunk)?;
        if mode > 0o7777 {
            return Err(F2cnError::BadMode);
        }
        check_path(path)?;
        Ok(Self {
            plan,
            mode,
            targets,
            path,
        })
    }

    /// The target node ids.
    pub fn targets(&self) -> impl Iterator<Item = u16> + 'a {
        self.targets
            .chunks_exact(2)
            .map(|p| u16::from_be_bytes([p[0], p[1]]))
    }

    /// Whether `node` is one of the targets.
    pub fn has_target(&self, node: u16) -> bool {
        self.targets().any(|t| t == node)
    }
}

/// A destination must be absolute, not `/` alone, NUL-free and at most
/// [`MAX_STR`] bytes.
fn check_path(path: &[u8]) -> Result<(), F2cnError> {
    if path.len() < 2 || path[0] != b'/' || path.len() > MAX_STR || path.contains(&0) {
        return Err(F2cnError::BadPath);
    }
    Ok(())
}

/// The 8 bytes in front of a chunk in a `FileData` body.
pub fn data_header(offset: u64) -> [u8; DATA_HEADER] {
    offset.to_be_bytes()
}

/// The offset a `FileData` body starts with (the chunk follows it).
pub fn data_offset(body: &[u8]) -> Result<u64, F2cnError> {
    let b: [u8; DATA_HEADER] = body
        .get(..DATA_HEADER)
        .and_then(|b| b.try_into().ok())
        .ok_or(F2cnError::Malformed)?;
    Ok(u64::from_be_bytes(b))
}

wire_struct! {
    zoid = super;
    /// A `FileCommit` body.
    pub struct Commit {
        /// File size (must be the plan's).
        pub size: u64,
        /// Wrapping sum of every chunk's [`chunk_digest`].
        pub digest: u64,
    }
}

wire_struct! {
    zoid = super;
    /// A `FileAck` body (the header's `errno`: 0 or why it failed).
    pub struct Ack {
        /// [`PHASE_BEGIN`], [`PHASE_DATA`] or [`PHASE_COMMIT`].
        pub phase: u32,
    }
}

/// Where one target stands in the phase the ION waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetState {
    /// No answer yet.
    Waiting,
    /// Answered the phase successfully.
    Done,
    /// Failed with this errno (or went down).
    Failed(i32),
}

/// The state of a phase over all targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Some targets have not answered and none failed.
    Waiting,
    /// Every target answered successfully.
    AllDone,
    /// This target failed with this errno (the first one in target order).
    Failed {
        /// The node.
        node: u16,
        /// Its positive errno.
        errno: i32,
    },
}

/// Files an answer from `node` for the phase being waited for: `errno` 0
/// marks it done, anything else failed.  A failure is never overwritten.
/// Returns whether `node` is a target.
pub fn record(targets: &[u16], states: &mut [TargetState], node: u16, errno: i32) -> bool {
    let Some(i) = targets.iter().position(|&t| t == node) else {
        return false;
    };
    if let Some(s) = states.get_mut(i) {
        if !matches!(s, TargetState::Failed(_)) {
            *s = if errno == 0 {
                TargetState::Done
            } else {
                TargetState::Failed(errno)
            };
        }
    }
    true
}

/// Starts a new phase: every target not failed waits again.
pub fn next_phase(states: &mut [TargetState]) {
    for s in states.iter_mut() {
        if *s == TargetState::Done {
            *s = TargetState::Waiting;
        }
    }
}

/// Where the phase stands: a failure wins over waiting.
pub fn outcome(targets: &[u16], states: &[TargetState]) -> Outcome {
    let mut waiting = false;
    for (&node, s) in targets.iter().zip(states) {
        match *s {
            TargetState::Failed(errno) => return Outcome::Failed { node, errno },
            TargetState::Waiting => waiting = true,
            TargetState::Done => {}
        }
    }
    if waiting {
        Outcome::Waiting
    } else {
        Outcome::AllDone
    }
}
