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
//! * Relaxed consistency (ZOID's model, mount option `consistency=relaxed`):
//!   a CN announces its first open of a file with `open` and its last
//!   close with `close`.  The CN that is the file's only opener gets a
//!   grant and may cache it (write-back, reads from its page cache); when
//!   another CN opens the file the ION sends the holder a [`Recall`]
//!   ([`UPCALL_RECALL`], an upcall), the holder writes its dirty data
//!   back, drops its cache and answers with `recalled`, and only then does
//!   the second open return.  [`relaxed`] is the ION's bookkeeping.
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

wire_struct! {
    zoid = super::super;
    /// The body of a [`UPCALL_RECALL`] upcall: stop caching `handle`.
    pub struct Recall {
        /// The file.
        pub handle: Handle,
        /// The inode number the CN gave in `open` (it finds its inode by it).
        pub ino: u64,
        /// The grant recalled (a CN ignores a recall of an older grant,
        /// but still answers it).
        pub grant: u32,
    }
}

/// Upcall function (ION -> CN, plug-in 4): a [`Recall`].
pub const UPCALL_RECALL: u16 = 1;

/// Flag bits a `zoidfs` attribute carries above its mode's 16 bits (the
/// `unix` plug-in's [`Stat`] never sets them): the object has an access
/// ACL ([`xattr::ACL_ACCESS`]).  A CN caches "no ACL" from attributes
/// without it, so permission checks cost no call.
pub const MODE_HAS_ACL: u32 = 1 << 16;
/// The directory has a default ACL: its new entries inherit it, and the
/// creator's umask does not apply (POSIX 1003.1e).
pub const MODE_HAS_DEFAULT_ACL: u32 = 1 << 17;
/// The mode proper of an attribute: file type and permission bits.
pub const MODE_BITS: u32 = 0xffff;

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
    /// stable storage before the reply); the attributes after the write
    /// and the ION's write verifier (see `commit`).  Returns the bytes
    /// written.
    fn write(h: in Handle, offset: in i64, data: in bytes, sync: in bool, attr: out Stat, verf: out u64) = 14;

    /// Flushes `h` to stable storage (`datasync`: data and what is needed
    /// to read it back, as fdatasync).  `verf` is the ION's write
    /// verifier, as NFS's: it changes when the ION boots again, so a CN
    /// whose unsynced writes went to another verifier than its commit
    /// knows those writes may be lost and sends them again.  Returns 0.
    fn commit(h: in Handle, datasync: in bool, verf: out u64) = 15;

    /// Statistics of the filesystem holding `h`.  Returns 0.
    fn statfs(h: in Handle, st: out StatFs) = 16;

    /// Relaxed consistency: the CN opened `h` (its first open; `ino` is
    /// the inode number it knows the file by).  Returns the grant: > 0
    /// when the CN may cache the file until recalled or closed, 0 when
    /// another CN has it open (reads and writes go to the ION).  Waits
    /// until every other CN's grant on the file has been recalled.
    fn open(h: in Handle, ino: in u64) = 17;

    /// Relaxed consistency: the CN's last open of `h` closed (dirty data
    /// written back first); its grant ends.  Returns 0.
    fn close(h: in Handle) = 18;

    /// Relaxed consistency: the CN answers a [`Recall`] of `grant` on `h`
    /// (its dirty data is on the ION, its cache dropped).  Returns 0.
    fn recalled(h: in Handle, grant: in u32) = 19;

    /// Creates special file `name` in `dir`: `mode` is a [`node`] type
    /// and permission bits, `rdev` a device's number (Linux's
    /// `new_encode_dev`, 0 for fifos and sockets).  Returns 0; `EINVAL`
    /// for another type, `EPERM` for a device without `CAP_MKNOD`.
    fn mknod(dir: in Handle, name: in str, mode: in u32, rdev: in u64, made: out Handle, attr: out Stat) = 20;

    /// Extended attribute `name` of `h` (a whole [`xattr`] name): up to
    /// `cap` bytes of its value.  Returns the value's length (`cap` 0:
    /// only the length, as getxattr(2) with size 0); `ERANGE` when it is
    /// longer than a non-zero `cap`, `ENODATA` when there is none,
    /// `EOPNOTSUPP` for a name zoidfs does not forward.
    fn getxattr(h: in Handle, name: in str, value: out bytes[cap, len = ret], cap: in u32) = 21;

    /// Sets extended attribute `name` of `h` to `value` ([`xattr`]
    /// `CREATE` / `REPLACE` in `flags`).  Returns 0.
    fn setxattr(h: in Handle, name: in str, value: in bytes, flags: in u32) = 22;

    /// The names of `h`'s extended attributes that zoidfs forwards, each
    /// ending with a NUL, filling at most `cap` bytes.  Returns their
    /// length (`cap` 0: only the length); `ERANGE` when `cap` is too
    /// small.
    fn listxattr(h: in Handle, names: out bytes[cap, len = ret], cap: in u32) = 23;

    /// Removes extended attribute `name` of `h`.  Returns 0; `ENODATA`
    /// when there is none.
    fn removexattr(h: in Handle, name: in str) = 24;
}

/// `mknod`'s file types (`S_IF*`, the same on every architecture).
pub mod node {
    /// The type bits of a mode.
    pub const TYPE_MASK: u32 = 0o170000;
    /// A named pipe.
    pub const FIFO: u32 = 0o010000;
    /// A character device.
    pub const CHR: u32 = 0o020000;
    /// A block device.
    pub const BLK: u32 = 0o060000;
    /// A unix-domain socket.
    pub const SOCK: u32 = 0o140000;

    /// Whether `mode` is a type `mknod` makes, with permission bits only
    /// besides.
    pub fn is_valid(mode: u32) -> bool {
        mode & !(TYPE_MASK | 0o7777) == 0 && matches!(mode & TYPE_MASK, FIFO | CHR | BLK | SOCK)
    }
}

/// Extended attributes: which names zoidfs forwards (the `user.` and
/// `trusted.` namespaces; not `security.`, which belongs to each node's
/// LSM, nor `system.`, whose POSIX ACLs zoidfs does not carry) and
/// Linux's limits.
pub mod xattr {
    /// `setxattr` flag: fail with `EEXIST` if the attribute exists.
    pub const CREATE: u32 = 1;
    /// `setxattr` flag: fail with `ENODATA` if it does not.
    pub const REPLACE: u32 = 2;
    /// Longest name (`XATTR_NAME_MAX`).
    pub const MAX_NAME: usize = 255;
    /// Largest value (`XATTR_SIZE_MAX`).
    pub const MAX_VALUE: usize = 65536;
    /// Largest list of names (`XATTR_LIST_MAX`).
    pub const MAX_LIST: usize = 65536;
    /// The namespaces zoidfs forwards.
    pub const PREFIXES: [&[u8]; 2] = [b"user.", b"trusted."];
    /// A file's POSIX access ACL, in the kernel's `posix_acl_xattr`
    /// format (little-endian version 2 header, then 8-byte entries: tag,
    /// permissions, id).  The ION applies it as setfacl(1) does (the mode's
    /// group bits follow the mask); ids travel unmapped, as file owners do.
    pub const ACL_ACCESS: &[u8] = b"system.posix_acl_access";
    /// A directory's default ACL (what its new entries inherit).
    pub const ACL_DEFAULT: &[u8] = b"system.posix_acl_default";

    /// Whether `name` is one of the two POSIX ACL names.
    pub fn is_acl(name: &[u8]) -> bool {
        name == ACL_ACCESS || name == ACL_DEFAULT
    }

    /// Whether `name` is one zoidfs forwards: a forwarded namespace's
    /// prefix and at least one more byte, at most [`MAX_NAME`] bytes, no
    /// NUL; or one of the ACL names ([`is_acl`]).
    pub fn name_ok(name: &[u8]) -> bool {
        is_acl(name)
            || (name.len() <= MAX_NAME
                && !name.contains(&0)
                && PREFIXES
                    .iter()
                    .any(|p| name.len() > p.len() && name.starts_with(p)))
    }

    /// Keeps the forwarded names of a list (names each ending with a NUL,
    /// as listxattr(2) returns them) in the first `n` bytes of `buf`,
    /// moving them down.  Returns the bytes kept, or `None` if the list
    /// is malformed (its last name has no NUL).
    pub fn filter_list(buf: &mut [u8], n: usize) -> Option<usize> {
        let n = n.min(buf.len());
        let (mut read, mut kept) = (0, 0);
        while read < n {
            let len = buf[read..n].iter().position(|&b| b == 0)?;
            if name_ok(&buf[read..read + len]) {
                buf.copy_within(read..=read + len, kept);
                kept += len + 1;
            }
            read += len + 1;
        }
        Some(kept)
    }
}

/// The ION's bookkeeping for relaxed consistency, per file: which CNs
/// have it open, which one may cache it, which recalls are outstanding.
/// The caller keeps one slice of [`Opener`]s per open file and the calls
/// waiting for recalls; these functions decide.
pub mod relaxed {
    /// One CN's state for one file.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Opener {
        /// The CN.
        pub node: u16,
        /// Its grant (> 0: it may cache the file), 0 without one.
        pub grant: u32,
        /// A recalled grant not answered yet, 0 if none.
        pub recalling: u32,
    }

    impl Opener {
        /// A CN that just opened the file (no grant yet).
        pub const fn new(node: u16) -> Self {
            Self {
                node,
                grant: 0,
                recalling: 0,
            }
        }
    }

    /// What `open` answers.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Admit {
        /// The only opener: it may cache, under this grant.
        Grant(u32),
        /// Shared: no caching; `wait` while recalls are outstanding.
        Shared {
            /// Whether the answer waits for recalls ([`pending`]).
            wait: bool,
        },
    }

    /// The next grant number after `last` (never 0).
    pub fn next_grant(last: u32) -> u32 {
        last.wrapping_add(1).max(1)
    }

    /// `node` opened the file (its entry is in `openers`): grants it
    /// `grant` when it is the only opener; otherwise every other CN's
    /// grant is recalled (`recall(node, grant)` for each) and nobody
    /// caches.
    pub fn admit(
        openers: &mut [Opener],
        node: u16,
        grant: u32,
        mut recall: impl FnMut(u16, u32),
    ) -> Admit {
        if openers.iter().all(|o| o.node == node) {
            for o in openers.iter_mut() {
                o.grant = grant;
            }
            return Admit::Grant(grant);
        }
        for o in openers.iter_mut() {
            if o.grant != 0 {
                if o.node != node {
                    recall(o.node, o.grant);
                    o.recalling = o.grant;
                }
                o.grant = 0;
            }
        }
        Admit::Shared {
            wait: pending(openers),
        }
    }

    /// `node` answered the recall of `grant`.  Returns whether it was
    /// the outstanding one.
    pub fn recalled(openers: &mut [Opener], node: u16, grant: u32) -> bool {
        match openers
            .iter_mut()
            .find(|o| o.node == node && o.recalling == grant && grant != 0)
        {
            Some(o) => {
                o.recalling = 0;
                true
            }
            None => false,
        }
    }

    /// Whether a recall is outstanding (opens wait until none is).
    pub fn pending(openers: &[Opener]) -> bool {
        openers.iter().any(|o| o.recalling != 0)
    }

    /// Gives up on outstanding recalls (the holder did not answer in
    /// time); returns how many there were.
    pub fn abandon(openers: &mut [Opener]) -> usize {
        let mut n = 0;
        for o in openers.iter_mut().filter(|o| o.recalling != 0) {
            o.recalling = 0;
            n += 1;
        }
        n
    }
}
