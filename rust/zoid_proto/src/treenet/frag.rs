// SPDX-License-Identifier: GPL-2.0

//! Messages to frames and back.
//!
//! A message of `len` bytes goes out as a run of consecutive frames of one
//! lane: the first carries the [`MsgHeader`] and the first bytes, every frame
//! carries at most `payload` bytes, the last is flagged `LAST`.  Frames can
//! be (re)built in any order from their index, so retransmission needs no
//! copy of the frames, only the message.
//!
//! The [`Reassembler`] consumes one lane's frames in order (the lane's
//! reliability layer guarantees the order) and tells the caller where each
//! payload goes; it stores nothing, so it is allocation-free and can be fed
//! arbitrary bytes by a fuzzer.

use super::wire::{MsgHeader, FLAG_FIRST, FLAG_LAST, MSG_HEADER_LEN};

/// Where one frame of a message comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameSpec {
    /// `FLAG_FIRST` / `FLAG_LAST`.
    pub flags: u8,
    /// Offset of the frame's message bytes in the message.
    pub offset: usize,
    /// Number of message bytes in the frame (after the header, if first).
    pub len: usize,
}

/// Message bytes in a first frame of `payload` bytes: the longest message
/// that goes in one frame.
pub fn first_room(payload: usize) -> usize {
    payload.saturating_sub(MSG_HEADER_LEN)
}

/// Number of frames a message of `len` bytes needs with `payload`-byte frames.
///
/// `payload` must exceed [`MSG_HEADER_LEN`] (treenet enforces at least 64).
pub fn frame_count(len: usize, payload: usize) -> usize {
    let first = first_room(payload);
    if len <= first || payload == 0 {
        1
    } else {
        1 + (len - first).div_ceil(payload)
    }
}

/// The `index`-th frame of a message of `len` bytes, `None` past the end.
pub fn frame_spec(index: usize, len: usize, payload: usize) -> Option<FrameSpec> {
    let count = frame_count(len, payload);
    if index >= count {
        return None;
    }
    let first = first_room(payload);
    let (offset, room) = if index == 0 {
        (0, first)
    } else {
        (first + (index - 1) * payload, payload)
    };
    let mut flags = 0;
    if index == 0 {
        flags |= FLAG_FIRST;
    }
    if index + 1 == count {
        flags |= FLAG_LAST;
    }
    Some(FrameSpec {
        flags,
        offset,
        len: room.min(len - offset.min(len)),
    })
}

/// Why the reassembler dropped a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReasmError {
    /// A continuation frame without a first frame.
    NoStart,
    /// A first frame too short for a message header.
    BadHeader,
    /// The message announces more bytes than this node accepts.
    TooLong,
    /// More bytes arrived than the header announced.
    Overrun,
    /// The last frame came before the announced length was complete.
    Short,
    /// A new message started before the previous one was complete.
    Interrupted,
}

/// What one frame contributed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step<'a> {
    /// Set on a message's first frame: allocate a buffer of `len` bytes.
    pub start: Option<MsgHeader>,
    /// Offset of `data` in the message.
    pub offset: usize,
    /// Message bytes carried by this frame.
    pub data: &'a [u8],
    /// The message is complete: deliver it.
    pub complete: bool,
}

/// Reassembly state of one lane.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reassembler {
    /// Header of the message in progress and bytes received so far.
    current: Option<(MsgHeader, usize)>,
}

impl Reassembler {
    /// A reassembler between messages.
    pub const fn new() -> Self {
        Self { current: None }
    }

    /// Whether a message is partly received.
    pub fn in_message(&self) -> bool {
        self.current.is_some()
    }

    /// Forgets a partly received message (peer reset).
    pub fn reset(&mut self) {
        self.current = None;
    }

    /// Consumes the next in-order frame of the lane.
    ///
    /// On error the message in progress (if any) is dropped and the
    /// reassembler is ready for the next first frame.  An `Interrupted`
    /// error still leaves the new message started: feed the frame again.
    pub fn feed<'a>(
        &mut self,
        flags: u8,
        payload: &'a [u8],
        max_len: usize,
    ) -> Result<Step<'a>, ReasmError> {
        let (start, offset, data) = if flags & FLAG_FIRST != 0 {
            if self.current.take().is_some() {
                return Err(ReasmError::Interrupted);
            }
            let header = MsgHeader::decode(payload).ok_or(ReasmError::BadHeader)?;
            let len = usize::try_from(header.len).map_err(|_| ReasmError::TooLong)?;
            if len > max_len {
                return Err(ReasmError::TooLong);
            }
            self.current = Some((header, 0));
            (Some(header), 0, &payload[MSG_HEADER_LEN..])
        } else {
            let (_, received) = self.current.ok_or(ReasmError::NoStart)?;
            (None, received, payload)
        };
        let (header, received) = self.current.as_mut().ok_or(ReasmError::NoStart)?;
        let total = header.len as usize;
        if data.len() > total - *received {
            self.current = None;
            return Err(ReasmError::Overrun);
        }
        *received += data.len();
        let complete = flags & FLAG_LAST != 0;
        if complete {
            let done = *received == total;
            self.current = None;
            if !done {
                return Err(ReasmError::Short);
            }
        }
        Ok(Step {
            start,
            offset,
            data,
            complete,
        })
    }
}
