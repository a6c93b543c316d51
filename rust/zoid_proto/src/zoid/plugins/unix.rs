// SPDX-License-Identifier: GPL-2.0

//! `unix` (plug-in 2): POSIX file calls, run by the ION on behalf of the
//! calling CN process (its pid and credentials come with the call header).
//!
//! Every function returns what the system call returns (a file
//! descriptor, a byte count, a new offset, 0) or fails with the positive
//! errno the system call failed with.  File descriptors are the ION's, per
//! calling CN process; the ION closes them at `ProcessExit` and `Detach`.
//!
//! Values that differ between architectures travel in zoid's own wire
//! encoding, and each side converts:
//!
//! * open flags: [`oflag`], the asm-generic values (x86_64's); powerpc's
//!   `O_DIRECTORY`, `O_NOFOLLOW`, `O_LARGEFILE` and `O_DIRECT` differ;
//! * file status: [`Stat`], fixed-width fields;
//! * directory entries: [`Dirent`] records.
//!
//! Modes (`S_IF*`, permission bits), `whence` values ([`SEEK_SET`], ...),
//! [`AT_FDCWD`] and errno values are the same on every Linux architecture
//! zoid runs on and travel unchanged.
//!
//! `readv` and `writev` are done by the CN's stubs on top of single-buffer
//! calls: the CN gathers the caller's iovecs into one buffer for `writev`
//! and scatters `readv`'s returned bytes over them; the ION does one read
//! or write at the file position, so the call keeps the atomicity of the
//! vectored system call.  They are separate functions (not `read` /
//! `write`) so the ION can account and trace them as what they are.

use super::super::marshal::MarshalError;

/// Open flags on the wire (`flags` of `open` / `openat`): the asm-generic
/// `O_*` values.
pub mod oflag {
    /// Open for reading only.
    pub const RDONLY: u32 = 0o0;
    /// Open for writing only.
    pub const WRONLY: u32 = 0o1;
    /// Open for reading and writing.
    pub const RDWR: u32 = 0o2;
    /// Mask of the access mode.
    pub const ACCMODE: u32 = 0o3;
    /// Create the file if it does not exist.
    pub const CREAT: u32 = 0o100;
    /// With `CREAT`: fail if the file exists.
    pub const EXCL: u32 = 0o200;
    /// Do not become the controlling terminal.
    pub const NOCTTY: u32 = 0o400;
    /// Truncate to length 0.
    pub const TRUNC: u32 = 0o1000;
    /// Append on every write.
    pub const APPEND: u32 = 0o2000;
    /// Non-blocking I/O.
    pub const NONBLOCK: u32 = 0o4000;
    /// Synchronised data writes.
    pub const DSYNC: u32 = 0o10000;
    /// Direct I/O.
    pub const DIRECT: u32 = 0o40000;
    /// Large file (implied on 64-bit).
    pub const LARGEFILE: u32 = 0o100000;
    /// Fail unless a directory.
    pub const DIRECTORY: u32 = 0o200000;
    /// Do not follow a final symlink.
    pub const NOFOLLOW: u32 = 0o400000;
    /// Do not update the access time.
    pub const NOATIME: u32 = 0o1000000;
    /// Close on exec (of the ION's descriptor: meaningless, accepted).
    pub const CLOEXEC: u32 = 0o2000000;
    /// Synchronised file writes (`__O_SYNC | O_DSYNC`).
    pub const SYNC: u32 = 0o4000000 | DSYNC;
    /// Path-only descriptor.
    pub const PATH: u32 = 0o10000000;
    /// Unnamed temporary file (`__O_TMPFILE | O_DIRECTORY`).
    pub const TMPFILE: u32 = 0o20000000 | DIRECTORY;
    /// Every flag above.
    pub const KNOWN: u32 = ACCMODE
        | CREAT
        | EXCL
        | NOCTTY
        | TRUNC
        | APPEND
        | NONBLOCK
        | DSYNC
        | DIRECT
        | LARGEFILE
        | DIRECTORY
        | NOFOLLOW
        | NOATIME
        | CLOEXEC
        | SYNC
        | PATH
        | TMPFILE;
}

/// `dirfd` of `openat` meaning the current directory.
pub const AT_FDCWD: i32 = -100;
/// `lseek`: from the start of the file.
pub const SEEK_SET: u32 = 0;
/// `lseek`: from the current position.
pub const SEEK_CUR: u32 = 1;
/// `lseek`: from the end of the file.
pub const SEEK_END: u32 = 2;
/// `lseek`: to the next data at or after the offset.
pub const SEEK_DATA: u32 = 3;
/// `lseek`: to the next hole at or after the offset.
pub const SEEK_HOLE: u32 = 4;

wire_struct! {
    zoid = super::super;
    /// File status (`fstat`, `stat`, `lstat`), the ION's `struct kstat` in
    /// fixed-width fields.
    pub struct Stat {
        /// Device of the file system (`new_encode_dev` form).
        pub dev: u64,
        /// Inode number.
        pub ino: u64,
        /// File type and permissions (`S_IF*` and mode bits).
        pub mode: u32,
        /// Hard links.
        pub nlink: u32,
        /// Owner (on the ION).
        pub uid: u32,
        /// Group (on the ION).
        pub gid: u32,
        /// Device, for device files (`new_encode_dev` form).
        pub rdev: u64,
        /// Size in bytes.
        pub size: i64,
        /// Preferred I/O size.
        pub blksize: u32,
        /// 512-byte blocks allocated.
        pub blocks: u64,
        /// Last access, seconds since the epoch.
        pub atime_sec: i64,
        /// Last access, nanoseconds.
        pub atime_nsec: u32,
        /// Last modification, seconds.
        pub mtime_sec: i64,
        /// Last modification, nanoseconds.
        pub mtime_nsec: u32,
        /// Last status change, seconds.
        pub ctime_sec: i64,
        /// Last status change, nanoseconds.
        pub ctime_nsec: u32,
    }
}

/// Directory entry type: unknown.
pub const DT_UNKNOWN: u8 = 0;
/// Directory entry type: named pipe.
pub const DT_FIFO: u8 = 1;
/// Directory entry type: character device.
pub const DT_CHR: u8 = 2;
/// Directory entry type: directory.
pub const DT_DIR: u8 = 4;
/// Directory entry type: block device.
pub const DT_BLK: u8 = 6;
/// Directory entry type: regular file.
pub const DT_REG: u8 = 8;
/// Directory entry type: symbolic link.
pub const DT_LNK: u8 = 10;
/// Directory entry type: socket.
pub const DT_SOCK: u8 = 12;

/// Longest file name in a [`Dirent`].
pub const NAME_MAX: usize = 255;
/// Bytes of a [`Dirent`] record in front of its name.
pub const DIRENT_HEADER_LEN: usize = 19;

/// One directory entry of a `getdents` buffer.
///
/// ```text
///  0               8               16   17      19
///  |      ino      |      off      |type|name_len| name ...
/// ```
///
/// Records follow each other without padding; `name_len` is 1 to
/// [`NAME_MAX`] and the name holds no NUL and no `/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dirent<'a> {
    /// Inode number.
    pub ino: u64,
    /// Directory position after this entry (pass it to `lseek` to resume
    /// there).
    pub off: i64,
    /// Entry type, `DT_*`.
    pub kind: u8,
    /// File name.
    pub name: &'a [u8],
}

/// Checks a directory entry name.
fn check_name(name: &[u8]) -> Result<(), MarshalError> {
    if name.len() > NAME_MAX {
        return Err(MarshalError::TooLong);
    }
    if name.is_empty() || name.iter().any(|&b| b == 0 || b == b'/') {
        return Err(MarshalError::BadString);
    }
    Ok(())
}

impl<'a> Dirent<'a> {
    /// Bytes of the encoded record.
    pub fn encoded_len(&self) -> usize {
        DIRENT_HEADER_LEN + self.name.len()
    }

    /// Writes the record at the start of `out`; returns its length.
    /// `NoSpace` if it does not fit (the ION's `getdents` then stops and
    /// returns what it has), `BadString` / `TooLong` for an invalid name.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, MarshalError> {
        check_name(self.name)?;
        let len = self.encoded_len();
        let out = out.get_mut(..len).ok_or(MarshalError::NoSpace)?;
        out[0..8].copy_from_slice(&self.ino.to_be_bytes());
        out[8..16].copy_from_slice(&self.off.to_be_bytes());
        out[16] = self.kind;
        // At most NAME_MAX, checked above.
        out[17..19].copy_from_slice(&(self.name.len() as u16).to_be_bytes());
        out[DIRENT_HEADER_LEN..].copy_from_slice(self.name);
        Ok(len)
    }

    /// Decodes the record at the start of `b`; returns it and its length.
    pub fn decode(b: &'a [u8]) -> Result<(Self, usize), MarshalError> {
        let h = b.get(..DIRENT_HEADER_LEN).ok_or(MarshalError::Truncated)?;
        let mut ino = [0u8; 8];
        ino.copy_from_slice(&h[0..8]);
        let mut off = [0u8; 8];
        off.copy_from_slice(&h[8..16]);
        let name_len = usize::from(u16::from_be_bytes([h[17], h[18]]));
        if name_len > NAME_MAX {
            return Err(MarshalError::TooLong);
        }
        let len = DIRENT_HEADER_LEN + name_len;
        let name = b
            .get(DIRENT_HEADER_LEN..len)
            .ok_or(MarshalError::Truncated)?;
        check_name(name)?;
        let d = Self {
            ino: u64::from_be_bytes(ino),
            off: i64::from_be_bytes(off),
            kind: h[16],
            name,
        };
        Ok((d, len))
    }
}

/// The records of a `getdents` buffer (the bytes the call returned).
pub fn dirents(buf: &[u8]) -> DirentIter<'_> {
    DirentIter { rest: buf }
}

/// Iterator over the records of a `getdents` buffer: yields each record,
/// or one error for a malformed record and then nothing.
#[derive(Clone, Debug)]
pub struct DirentIter<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for DirentIter<'a> {
    type Item = Result<Dirent<'a>, MarshalError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        match Dirent::decode(self.rest) {
            Ok((d, len)) => {
                self.rest = &self.rest[len..];
                Some(Ok(d))
            }
            Err(e) => {
                self.rest = &[];
                Some(Err(e))
            }
        }
    }
}

zoid_plugin! {
    zoid = super::super;
    plugin(id = 2, name = "unix");

    /// Opens `path` (relative paths from the calling process's working
    /// directory on the ION); `flags` are [`oflag`] values, `mode` the
    /// permissions of a created file.  Returns the new descriptor.
    fn open(path: in str, flags: in u32, mode: in u32) = 1;

    /// Opens `path` relative to directory descriptor `dirfd` (or
    /// [`AT_FDCWD`]).  Returns the new descriptor.
    fn openat(dirfd: in i32, path: in str, flags: in u32, mode: in u32) = 2;

    /// Closes `fd`.  Returns 0.
    fn close(fd: in i32) = 3;

    /// Reads up to `count` bytes at the file position into `buf`.  Returns
    /// the bytes read (0 at end of file); only those travel back.
    fn read(fd: in i32, buf: out bytes[count, len = ret], count: in u32) = 4;

    /// Writes `buf` at the file position.  Returns the bytes written.
    fn write(fd: in i32, buf: in bytes) = 5;

    /// Reads up to `count` bytes at `offset` (the file position does not
    /// move).  Returns the bytes read.
    fn pread(fd: in i32, buf: out bytes[count, len = ret], count: in u32, offset: in i64) = 6;

    /// Writes `buf` at `offset` (the file position does not move).
    /// Returns the bytes written.
    fn pwrite(fd: in i32, buf: in bytes, offset: in i64) = 7;

    /// Moves the file position (`whence`: [`SEEK_SET`], ...).  Returns the
    /// new offset.
    fn lseek(fd: in i32, offset: in i64, whence: in u32) = 8;

    /// Status of `fd`.  Returns 0.
    fn fstat(fd: in i32, st: out Stat) = 9;

    /// Status of `path`, following symlinks.  Returns 0.
    fn stat(path: in str, st: out Stat) = 10;

    /// Status of `path`, not following a final symlink.  Returns 0.
    fn lstat(path: in str, st: out Stat) = 11;

    /// Flushes `fd` to storage.  Returns 0.
    fn fsync(fd: in i32) = 12;

    /// Sets the length of `fd`'s file.  Returns 0.
    fn ftruncate(fd: in i32, length: in i64) = 13;

    /// Creates directory `path`.  Returns 0.
    fn mkdir(path: in str, mode: in u32) = 14;

    /// Removes empty directory `path`.  Returns 0.
    fn rmdir(path: in str) = 15;

    /// Removes file `path`.  Returns 0.
    fn unlink(path: in str) = 16;

    /// Renames `from` to `to`.  Returns 0.
    fn rename(from: in str, to: in str) = 17;

    /// Reads symlink `path`'s target into `buf` (no NUL added).  Returns
    /// the target's length; `min(ret, size)` bytes travel back.
    fn readlink(path: in str, buf: out bytes[size, len = ret], size: in u32) = 18;

    /// Creates symlink `linkpath` pointing to `target`.  Returns 0.
    fn symlink(target: in str, linkpath: in str) = 19;

    /// Reads directory entries of `fd` into `buf` as [`Dirent`] records
    /// (whole records only, as many as fit).  Returns the bytes used, 0
    /// at the end of the directory.  Iterate with [`dirents`].
    fn getdents(fd: in i32, buf: out bytes[count, len = ret], count: in u32) = 20;

    /// Vectored read, flattened: reads up to `count` bytes at the file
    /// position with one read; the CN scatters them over the caller's
    /// iovecs.  Returns the bytes read.
    fn readv(fd: in i32, buf: out bytes[count, len = ret], count: in u32) = 21;

    /// Vectored write, flattened: the CN gathered the caller's iovecs into
    /// `buf`, written at the file position with one write.  Returns the
    /// bytes written.
    fn writev(fd: in i32, buf: in bytes) = 22;
}
