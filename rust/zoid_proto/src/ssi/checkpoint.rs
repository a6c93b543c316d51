// SPDX-License-Identifier: GPL-2.0

//! The checkpoint file of container sets: writing is a few encoders,
//! reading a pull parser that validates every byte before a restore
//! touches an object.
//!
//! ```text
//! file header    magic "ZOIDSSI\0" (8) | version u32 | sets u32         16 bytes
//! per set        set u32 | object_size u32 | objects u64 | crc u32 | 0   24 bytes
//!   per object   object u64 | len u32 | crc u32                        16 bytes
//!                contents (len = object_size bytes)
//! ```
//!
//! Big-endian.  A set header's CRC-32C covers its first 16 bytes; a
//! record's covers its object id, its length and its contents, so a flipped
//! bit anywhere is caught.  Objects are in strictly ascending id order
//! within a set (no duplicates), and a file ends exactly after its last
//! record (the caller checks that nothing follows).

use super::super::crc32c::Crc32c;

/// First bytes of a checkpoint file.
pub const MAGIC: [u8; 8] = *b"ZOIDSSI\0";
/// Version of the format.
pub const CHECKPOINT_VERSION: u32 = 1;
/// Bytes of the file header.
pub const FILE_HEADER_LEN: usize = 16;
/// Bytes of a set header.
pub const SET_HEADER_LEN: usize = 24;
/// Bytes of a record header.
pub const RECORD_HEADER_LEN: usize = 16;
/// Largest object a checkpoint holds (1 MiB).
pub const MAX_OBJECT_SIZE: u32 = 1 << 20;

/// Why a checkpoint file is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckpointError {
    /// Not a checkpoint file.
    BadMagic,
    /// A version this code does not read.
    BadVersion,
    /// A header or record whose checksum does not match.
    BadChecksum,
    /// An object size of 0 or over [`MAX_OBJECT_SIZE`], or a record whose
    /// length is not its set's object size.
    BadSize,
    /// Object ids not strictly ascending within a set.
    OutOfOrder,
    /// A piece of the wrong length was fed (the caller's bug), or the
    /// parser was fed after the end.
    Misuse,
}

/// Encodes the file header for `sets` sets.
pub fn encode_file_header(sets: u32) -> [u8; FILE_HEADER_LEN] {
    let mut b = [0u8; FILE_HEADER_LEN];
    b[..8].copy_from_slice(&MAGIC);
    b[8..12].copy_from_slice(&CHECKPOINT_VERSION.to_be_bytes());
    b[12..16].copy_from_slice(&sets.to_be_bytes());
    b
}

/// A set's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetHeader {
    /// The set.
    pub set: u32,
    /// Bytes of each object.
    pub object_size: u32,
    /// Records that follow.
    pub objects: u64,
}

impl SetHeader {
    /// Encodes the header with its checksum.
    pub fn encode(&self) -> [u8; SET_HEADER_LEN] {
        let mut b = [0u8; SET_HEADER_LEN];
        b[0..4].copy_from_slice(&self.set.to_be_bytes());
        b[4..8].copy_from_slice(&self.object_size.to_be_bytes());
        b[8..16].copy_from_slice(&self.objects.to_be_bytes());
        let mut crc = Crc32c::new();
        crc.update(&b[..16]);
        b[16..20].copy_from_slice(&crc.finish().to_be_bytes());
        b
    }

    fn decode(b: &[u8]) -> Result<Self, CheckpointError> {
        let mut crc = Crc32c::new();
        crc.update(&b[..16]);
        if be32(&b[16..20]) != crc.finish() || be32(&b[20..24]) != 0 {
            return Err(CheckpointError::BadChecksum);
        }
        let h = Self {
            set: be32(&b[0..4]),
            object_size: be32(&b[4..8]),
            objects: (u64::from(be32(&b[8..12])) << 32) | u64::from(be32(&b[12..16])),
        };
        if h.object_size == 0 || h.object_size > MAX_OBJECT_SIZE {
            return Err(CheckpointError::BadSize);
        }
        Ok(h)
    }
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn record_crc(object: u64, contents: &[u8]) -> u32 {
    let mut crc = Crc32c::new();
    crc.update(&object.to_be_bytes());
    crc.update(&(contents.len() as u32).to_be_bytes());
    crc.update(contents);
    crc.finish()
}

/// Encodes the header of the record of `object` with `contents`.
pub fn encode_record_header(object: u64, contents: &[u8]) -> [u8; RECORD_HEADER_LEN] {
    let mut b = [0u8; RECORD_HEADER_LEN];
    b[0..8].copy_from_slice(&object.to_be_bytes());
    b[8..12].copy_from_slice(&(contents.len() as u32).to_be_bytes());
    b[12..16].copy_from_slice(&record_crc(object, contents).to_be_bytes());
    b
}

/// What a fed piece was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece {
    /// The file header: `sets` sets follow.
    File {
        /// Sets in the file.
        sets: u32,
    },
    /// A set begins.
    Set(SetHeader),
    /// A record header; its contents come next.
    RecordHeader,
    /// A record's contents, checked: object `object` of set `set` holds
    /// the bytes just fed.
    Record {
        /// The set.
        set: u32,
        /// The object.
        object: u64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    File,
    Set,
    RecordHeader,
    Contents { object: u64, crc: u32 },
    End,
}

/// Validates a checkpoint file fed in pieces of [`Parser::need`] bytes.
#[derive(Clone, Debug)]
pub struct Parser {
    expect: Expect,
    sets_left: u32,
    set: SetHeader,
    objects_left: u64,
    last_object: Option<u64>,
}

impl Default for Parser {
    fn default() -> Self {
        Self::new()
    }
}

impl Parser {
    /// A parser at the start of a file.
    pub fn new() -> Self {
        Self {
            expect: Expect::File,
            sets_left: 0,
            set: SetHeader {
                set: 0,
                object_size: 0,
                objects: 0,
            },
            objects_left: 0,
            last_object: None,
        }
    }

    /// Bytes of the next piece; 0 at the end of the file.
    pub fn need(&self) -> usize {
        match self.expect {
            Expect::File => FILE_HEADER_LEN,
            Expect::Set => SET_HEADER_LEN,
            Expect::RecordHeader => RECORD_HEADER_LEN,
            Expect::Contents { .. } => self.set.object_size as usize,
            Expect::End => 0,
        }
    }

    /// Whether the whole file has been fed.
    pub fn is_done(&self) -> bool {
        self.expect == Expect::End
    }

    /// After a set header or a record: the next set, or the end.
    fn next_after_records(&mut self) {
        self.expect = if self.objects_left > 0 {
            Expect::RecordHeader
        } else if self.sets_left > 0 {
            Expect::Set
        } else {
            Expect::End
        };
    }

    /// Feeds the next piece (exactly [`Parser::need`] bytes).
    pub fn feed(&mut self, b: &[u8]) -> Result<Piece, CheckpointError> {
        if b.len() != self.need() || self.is_done() {
            return Err(CheckpointError::Misuse);
        }
        match self.expect {
            Expect::File => {
                if b[..8] != MAGIC {
                    return Err(CheckpointError::BadMagic);
                }
                if be32(&b[8..12]) != CHECKPOINT_VERSION {
                    return Err(CheckpointError::BadVersion);
                }
                self.sets_left = be32(&b[12..16]);
                self.expect = if self.sets_left > 0 {
                    Expect::Set
                } else {
                    Expect::End
                };
                Ok(Piece::File {
                    sets: self.sets_left,
                })
            }
            Expect::Set => {
                let h = SetHeader::decode(b)?;
                self.sets_left -= 1;
                self.set = h;
                self.objects_left = h.objects;
                self.last_object = None;
                self.next_after_records();
                Ok(Piece::Set(h))
            }
            Expect::RecordHeader => {
                let object = (u64::from(be32(&b[0..4])) << 32) | u64::from(be32(&b[4..8]));
                if be32(&b[8..12]) != self.set.object_size {
                    return Err(CheckpointError::BadSize);
                }
                if self.last_object.is_some_and(|last| object <= last) {
                    return Err(CheckpointError::OutOfOrder);
                }
                self.expect = Expect::Contents {
                    object,
                    crc: be32(&b[12..16]),
                };
                Ok(Piece::RecordHeader)
            }
            Expect::Contents { object, crc } => {
                if record_crc(object, b) != crc {
                    return Err(CheckpointError::BadChecksum);
                }
                self.last_object = Some(object);
                self.objects_left -= 1;
                self.next_after_records();
                Ok(Piece::Record {
                    set: self.set.set,
                    object,
                })
            }
            Expect::End => Err(CheckpointError::Misuse),
        }
    }
}
