// SPDX-License-Identifier: GPL-2.0

//! `zoidfs` (plug-in 4): the operations `fs/zoidfs` forwards from a CN's
//! VFS to its ION, on stateless handles.
//!
//! * Objects are named by [`Handle`]s the ION hands out (from the
//!   `root`, `lookup` and create calls).  A handle is opaque to the CN and
//!   self-contained on the ION (an export number and an exportfs file
//!   handle), so an ION that restarts resolves it again; a handle that no
//!   longer names a live object fails with `ESTALE`, never with another
//!   file.
//! * Attributes travel as the `unix` plug-in's [`Stat`] (nanosecond
//!   times); changes as a [`SetAttr`] with a [`setattr`] mask, like
//!   `struct iattr`.
//! * `readdir` returns the `unix` plug-in's [`Dirent`] records, whose `off`
//!   is the cookie to resume after that entry (0 starts a directory; the
//!   cookies are the ION filesystem's directory positions, stable across
//!   calls as long as it keeps them stable).
//! * Every call runs with the caller's credentials, mapped and squashed as
//!   for `unix` (`/sys/kernel/zoid/idmap`, `root_squash`).
//!
//! [`Stat`]: super::unix::Stat
//! [`Dirent`]: super::unix::Dirent

use super::super::marshal::{Decoder, Encoder, MarshalError, Wire};
use super::unix::Stat;

/// Most bytes of a handle (NFSv3's limit; exportfs handles of local
/// filesystems are 12 to 40 bytes).
pub const MAX_HANDLE: usize = 64;

/// An opaque object handle: `len` meaningful bytes (1 to [`MAX_HANDLE`]).
/// On the wire a `u8` length and all [`MAX_HANDLE`] bytes, the unused ones
/// zero (a fixed size keeps every call's layout fixed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handle {
    len: u8,
    bytes: [u8; MAX_HANDLE],
}

impl Default for Handle {
    fn default() -> Self {
        Self {
            len: 0,
            bytes: [0; MAX_HANDLE],
        }
    }
}

impl Handle {
    /// A handle of `bytes` (`None` if empty or longer than [`MAX_HANDLE`]).
    pub fn new(bytes: &[u8]) -> Option<Self> {
        if bytes.is_empty() || bytes.len() > MAX_HANDLE {
            return None;
        }
        let mut h = Self::default();
        h.bytes[..bytes.len()].copy_from_slice(bytes);
        h.len = bytes.len() as u8;
        Some(h)
    }

    /// The meaningful bytes (empty for the default, invalid handle).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len).min(MAX_HANDLE)]
    }
}

impl Wire for Handle {
    const SIZE: usize = 1 + MAX_HANDLE;

    fn put(&self, e: &mut Encoder<'_>) -> Result<(), MarshalError> {
        e.put_u8(self.len)?;
        e.put_raw(&self.bytes)
    }

    /// Refuses a length outside 1..=[`MAX_HANDLE`] and non-zero bytes past
    /// the length (`BadValue`): a handle has one encoding.
    fn get(d: &mut Decoder<'_>) -> Result<Self, MarshalError> {
        let len = d.get_u8()?;
        let raw = d.get_raw(MAX_HANDLE)?;
        let n = usize::from(len);
        if n == 0 || n > MAX_HANDLE || raw[n..].iter().any(|&b| b != 0) {
            return Err(MarshalError::BadValue);
        }
        let mut bytes = [0; MAX_HANDLE];
        bytes.copy_from_slice(raw);
        Ok(Self { len, bytes })
    }
}

/// [`SetAttr::valid`] bits: which attributes `setattr` changes.
pub mod setattr {
    /// Permission bits (`mode & 0o7777`).
    pub const MODE: u32 = 1 << 0;
    /// Owner.
    pub const UID: u32 = 1 << 1;
    /// Group.
    pub const GID: u32 = 1 << 2;
    /// Size (truncate or extend).
    pub const SIZE: u32 = 1 << 3;
    /// Access time: the given one.
    pub const ATIME: u32 = 1 << 4;
    /// Modification time: the given one.
    pub const MTIME: u32 = 1 << 5;
    /// Access time: the ION's clock (with `ATIME`).
    pub const ATIME_NOW: u32 = 1 << 6;
    /// Modification time: the ION's clock (with `MTIME`).
    pub const MTIME_NOW: u32 = 1 << 7;
    /// Every bit `setattr` knows.
    pub const KNOWN: u32 = (1 << 8) - 1;
}

wire_struct! {
    zoid = super::super;
    /// Attribute changes of `setattr` (only the fields `valid` selects
    /// count).
    pub struct SetAttr {
        /// [`setattr`] bits.
        pub valid: u32,
        /// New permission bits.
        pub mode: u32,
        /// New owner.
        pub uid: u32,
        /// New group.
        pub gid: u32,
        /// New size.
        pub size: i64,
        /// New access time, seconds.
        pub atime_sec: i64,
        /// Nanoseconds (below 10^9).
        pub atime_nsec: u32,
        /// New modification time, seconds.
        pub mtime_sec: i64,
        /// Nanoseconds (below 10^9).
        pub mtime_nsec: u32,
    }
}

impl SetAttr {
    /// Whether the request is well formed: known bits only, `*_NOW` only
    /// with its time bit, nanoseconds below 10^9 where a time is given, a
    /// size that is not negative.
    pub fn is_valid(&self) -> bool {
        let v = self.valid;
        let time_ok = |bit: u32, now: u32, nsec: u32| {
            (v & now == 0 || v & bit != 0) && (v & bit == 0 || v & now != 0 || nsec < 1_000_000_000)
        };
        v & !setattr::KNOWN == 0
            && time_ok(setattr::ATIME, setattr::ATIME_NOW, self.atime_nsec)
            && time_ok(setattr::MTIME, setattr::MTIME_NOW, self.mtime_nsec)
            && (v & setattr::SIZE == 0 || self.size >= 0)
    }
}

wire_struct! {
    zoid = super::super;
    /// Filesystem statistics (`statfs`), in units of `frsize` bytes.
    pub struct StatFs {
        /// Filesystem type magic of the ION's filesystem.
        pub kind: u64,
        /// Preferred I/O size.
        pub bsize: u32,
        /// Fragment size, the unit of the block counts.
        pub frsize: u32,
        /// Blocks in all.
        pub blocks: u64,
        /// Free blocks.
        pub bfree: u64,
        /// Free blocks for unprivileged users.
        pub bavail: u64,
        /// Inodes in all.
        pub files: u64,
        /// Free inodes.
        pub ffree: u64,
        /// Longest file name.
        pub namelen: u32,
    }
}

/// `write`'s `offset` for an append at the ION's end of file.
pub const APPEND: i64 = -1;

/// `rename` flags (the `renameat2` values, the same on every
/// architecture).
pub mod rename {
    /// Fail with `EEXIST` if the target exists.
    pub const NOREPLACE: u32 = 1 << 0;
    /// Swap source and target atomically.
    pub const EXCHANGE: u32 = 1 << 1;
}

zoid_plugin! {
    zoid = super::super;
    plugin(id = 4, name = "zoidfs");

    /// The root of export `export` (an ION export's name, `""` for the
    /// default one): its handle and attributes.  Returns 0; `ENOENT` for
    /// an unknown export.
    fn root(export: in str, root: out Handle, attr: out Stat) = 1;

    /// Looks `name` up in directory `dir`: its handle and attributes.
    /// Returns 0; `ENOENT`, `ENOTDIR`, `ESTALE`.
    fn lookup(dir: in Handle, name: in str, found: out Handle, attr: out Stat) = 2;

    /// The attributes of `h`.  Returns 0.
    fn getattr(h: in Handle, attr: out Stat) = 3;

    /// Changes what `set.valid` selects; the attributes after the change.
    /// Returns 0; `EINVAL` for a malformed [`SetAttr`].
    fn setattr(h: in Handle, set: in SetAttr, attr: out Stat) = 4;

    /// Creates regular file `name` in `dir` with permission bits `mode`
    /// (`excl`: fail with `EEXIST` if it exists; otherwise an existing
    /// file is returned as it is).  Returns 0.
    fn create(dir: in Handle, name: in str, mode: in u32, excl: in bool, made: out Handle, attr: out Stat) = 5;

    /// Creates directory `name` in `dir`.  Returns 0.
    fn mkdir(dir: in Handle, name: in str, mode: in u32, made: out Handle, attr: out Stat) = 6;

    /// Creates symbolic link `name` in `dir` pointing at `target` (stored
    /// as given).  Returns 0.
    fn symlink(dir: in Handle, name: in str, target: in str, made: out Handle, attr: out Stat) = 7;

    /// Makes `name` in `dir` a hard link to `h`; `h`'s attributes after.
    /// Returns 0.
    fn link(h: in Handle, dir: in Handle, name: in str, attr: out Stat) = 8;

    /// Removes `name` from `dir`: a directory (empty, else `ENOTEMPTY`)
    /// with `is_dir`, anything else without.  Returns 0.
    fn remove(dir: in Handle, name: in str, is_dir: in bool) = 9;

    /// Renames `from` in `from_dir` to `to` in `to_dir`, with [`rename`]
    /// flags.  Returns 0.
    fn rename(from_dir: in Handle, from: in str, to_dir: in Handle, to: in str, flags: in u32) = 10;

    /// The target of symbolic link `h`, at most `cap` bytes.  Returns its
    /// length.
    fn readlink(h: in Handle, target: out bytes[cap, len = ret], cap: in u32) = 11;

    /// Entries of directory `dir` after `cookie` (0: from the start), as
    /// `unix` [`Dirent`](super::unix::Dirent) records filling at most
    /// `cap` bytes.  Returns the bytes used (0: no more entries).
    fn readdir(dir: in Handle, cookie: in i64, entries: out bytes[cap, len = ret], cap: in u32) = 12;

    /// Reads up to `count` bytes at `offset`.  Returns the bytes read (0
    /// at end of file); only those travel back.
    fn read(h: in Handle, offset: in i64, data: out bytes[count, len = ret], count: in u32) = 13;

    /// Writes `data` at `offset` ([`APPEND`]: at the end of the file, as
    /// `O_APPEND`, atomically with other appends on the ION; `sync`: on
    /// stable storage before the reply); the attributes after the write.
    /// Returns the bytes written.
    fn write(h: in Handle, offset: in i64, data: in bytes, sync: in bool, attr: out Stat) = 14;

    /// Flushes `h` to stable storage (`datasync`: data and what is needed
    /// to read it back, as fdatasync).  Returns 0.
    fn commit(h: in Handle, datasync: in bool) = 15;

    /// Statistics of the filesystem holding `h`.  Returns 0.
    fn statfs(h: in Handle, st: out StatFs) = 16;
}
