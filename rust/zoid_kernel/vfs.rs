// SPDX-License-Identifier: GPL-2.0

//! File operations under an exported directory, for ION kernel threads that
//! serve CNs: [`Export`] (the directory), [`File`] (an open file), and
//! [`Creds`] (a caller's identity to run them under).
//!
//! Every path is resolved with the export as its root, as if chrooted
//! there (see `shim/vfs.c`), and paths with a `..` component are refused
//! here with `EACCES`: a CN can name nothing outside the export.

use kernel::ffi::{c_char, c_int};
use kernel::prelude::*;

#[repr(C)]
struct RawExport {
    _private: [u8; 0],
}

/// `struct file`, opaque here.
#[repr(C)]
struct RawFile {
    _private: [u8; 0],
}

/// `struct cred`, opaque here.
#[repr(C)]
struct RawCred {
    _private: [u8; 0],
}

/// `struct zk_stat` of the shim.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) rdev: u64,
    pub(crate) blocks: u64,
    pub(crate) size: i64,
    pub(crate) atime_sec: i64,
    pub(crate) mtime_sec: i64,
    pub(crate) ctime_sec: i64,
    pub(crate) mode: u32,
    pub(crate) nlink: u32,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) blksize: u32,
    pub(crate) atime_nsec: u32,
    pub(crate) mtime_nsec: u32,
    pub(crate) ctime_nsec: u32,
}

extern "C" {
    fn zk_export_open(dir: *const c_char, err: *mut c_int) -> *mut RawExport;
    fn zk_export_put(e: *mut RawExport);
    fn zk_creds_make(
        uid: u32,
        gid: u32,
        groups: *const u32,
        ngroups: u32,
        err: *mut c_int,
    ) -> *const RawCred;
    fn zk_creds_put(c: *const RawCred);
    fn zk_creds_enter(c: *const RawCred) -> *const RawCred;
    fn zk_creds_leave(old: *const RawCred);
    fn zk_file_open(
        e: *mut RawExport,
        path: *const c_char,
        flags: c_int,
        mode: u32,
        err: *mut c_int,
    ) -> *mut RawFile;
    fn zk_file_open_below(
        dir: *mut RawFile,
        path: *const c_char,
        flags: c_int,
        mode: u32,
        err: *mut c_int,
    ) -> *mut RawFile;
    fn zk_file_put(f: *mut RawFile);
    fn zk_file_read(f: *mut RawFile, buf: *mut u8, n: usize, pos: *mut i64) -> isize;
    fn zk_file_write(f: *mut RawFile, buf: *const u8, n: usize, pos: *mut i64) -> isize;
    fn zk_file_llseek(f: *mut RawFile, off: i64, whence: c_int) -> i64;
    fn zk_file_fsync(f: *mut RawFile) -> c_int;
    fn zk_file_truncate(f: *mut RawFile, len: i64) -> c_int;
    fn zk_file_getattr(f: *mut RawFile, st: *mut Stat) -> c_int;
    fn zk_file_getdents(f: *mut RawFile, buf: *mut u8, size: u32, used: *mut u32) -> c_int;
    fn zk_file_fget(fd: c_int, err: *mut c_int) -> *mut RawFile;
    fn zk_file_chmod(f: *mut RawFile, mode: u32) -> c_int;
    fn zk_path_stat(e: *mut RawExport, path: *const c_char, follow: bool, st: *mut Stat) -> c_int;
    fn zk_path_readlink(e: *mut RawExport, path: *const c_char, buf: *mut u8, size: u32) -> c_int;
    fn zk_path_mkdir(e: *mut RawExport, path: *const c_char, mode: u32) -> c_int;
    fn zk_path_symlink(e: *mut RawExport, target: *const c_char, path: *const c_char) -> c_int;
    fn zk_path_remove(e: *mut RawExport, path: *const c_char, dir: bool) -> c_int;
    fn zk_path_rename(e: *mut RawExport, from: *const c_char, to: *const c_char) -> c_int;
}

fn check(rc: c_int) -> Result {
    if rc < 0 {
        Err(Error::from_errno(rc))
    } else {
        Ok(())
    }
}

fn check_len(rc: isize) -> Result<usize> {
    if rc < 0 {
        Err(Error::from_errno(rc as c_int))
    } else {
        Ok(rc as usize)
    }
}

/// A path from a CN, NUL-terminated for C, checked: not empty, no NUL
/// inside, no `..` component (`EACCES`), at most 4096 bytes.
pub(crate) struct CPath(KVec<u8>);

impl CPath {
    /// Checks and copies `path`.
    pub(crate) fn new(path: &[u8]) -> Result<Self> {
        if path.is_empty() {
            return Err(ENOENT);
        }
        if path.len() >= 4096 {
            return Err(ENAMETOOLONG);
        }
        if path.contains(&0) {
            return Err(EINVAL);
        }
        if path.split(|&c| c == b'/').any(|part| part == b"..") {
            return Err(EACCES);
        }
        let mut v = KVec::with_capacity(path.len() + 1, GFP_KERNEL)?;
        v.extend_from_slice(path, GFP_KERNEL)?;
        v.push(0, GFP_KERNEL)?;
        Ok(Self(v))
    }

    /// Checks and copies a symlink target: stored as given, so `..` is
    /// allowed (it cannot leave the export when the link is followed).
    pub(crate) fn target(target: &[u8]) -> Result<Self> {
        if target.is_empty() {
            return Err(ENOENT);
        }
        if target.len() >= 4096 {
            return Err(ENAMETOOLONG);
        }
        if target.contains(&0) {
            return Err(EINVAL);
        }
        let mut v = KVec::with_capacity(target.len() + 1, GFP_KERNEL)?;
        v.extend_from_slice(target, GFP_KERNEL)?;
        v.push(0, GFP_KERNEL)?;
        Ok(Self(v))
    }

    fn ptr(&self) -> *const c_char {
        self.0.as_ptr().cast()
    }
}

/// A directory exported to CNs (a reference to its path).
pub(crate) struct Export {
    raw: *mut RawExport,
}

// SAFETY: the shim's export holds a `struct path` reference, usable from
// any thread; it is only read after creation.
unsafe impl Send for Export {}
// SAFETY: as above.
unsafe impl Sync for Export {}

impl Export {
    /// Looks up directory `dir` (an absolute path on this node, as the
    /// caller sees it; from a kernel thread, as userspace init sees it).
    pub(crate) fn open(dir: &CStr) -> Result<Self> {
        let mut err = 0;
        // SAFETY: `dir` is NUL-terminated; `err` is valid for one write.
        let raw = unsafe { zk_export_open(dir.as_char_ptr(), &mut err) };
        if raw.is_null() {
            return Err(Error::from_errno(err));
        }
        Ok(Self { raw })
    }

    /// Opens `path` (open(2) `flags` and `mode`, kernel numbering).
    pub(crate) fn open_file(&self, path: &CPath, flags: u32, mode: u32) -> Result<File> {
        let mut err = 0;
        // SAFETY: `raw` is live, `path` NUL-terminated, `err` writable.
        let f = unsafe { zk_file_open(self.raw, path.ptr(), flags as c_int, mode, &mut err) };
        if f.is_null() {
            return Err(Error::from_errno(err));
        }
        Ok(File { raw: f })
    }

    /// stat(2) (`follow`) or lstat(2).
    pub(crate) fn stat(&self, path: &CPath, follow: bool) -> Result<Stat> {
        let mut st = Stat::default();
        // SAFETY: `raw` is live, `path` NUL-terminated, `st` writable.
        check(unsafe { zk_path_stat(self.raw, path.ptr(), follow, &mut st) })?;
        Ok(st)
    }

    /// readlink(2) into `buf`: the bytes written (truncated like readlink).
    pub(crate) fn readlink(&self, path: &CPath, buf: &mut [u8]) -> Result<usize> {
        let size = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        // SAFETY: `raw` is live, `path` NUL-terminated, `buf` writable for
        // `size` bytes.
        let rc = unsafe { zk_path_readlink(self.raw, path.ptr(), buf.as_mut_ptr(), size) };
        check(rc)?;
        Ok(rc as usize)
    }

    /// mkdir(2).
    pub(crate) fn mkdir(&self, path: &CPath, mode: u32) -> Result {
        // SAFETY: `raw` is live, `path` NUL-terminated.
        check(unsafe { zk_path_mkdir(self.raw, path.ptr(), mode) })
    }

    /// symlink(2): `path` pointing to `target` (stored as given).
    pub(crate) fn symlink(&self, target: &CPath, path: &CPath) -> Result {
        // SAFETY: `raw` is live, both strings NUL-terminated.
        check(unsafe { zk_path_symlink(self.raw, target.ptr(), path.ptr()) })
    }

    /// rmdir(2) (`dir`) or unlink(2).
    pub(crate) fn remove(&self, path: &CPath, dir: bool) -> Result {
        // SAFETY: `raw` is live, `path` NUL-terminated.
        check(unsafe { zk_path_remove(self.raw, path.ptr(), dir) })
    }

    /// rename(2) within the export.
    pub(crate) fn rename(&self, from: &CPath, to: &CPath) -> Result {
        // SAFETY: `raw` is live, both strings NUL-terminated.
        check(unsafe { zk_path_rename(self.raw, from.ptr(), to.ptr()) })
    }
}

impl Drop for Export {
    fn drop(&mut self) {
        // SAFETY: `raw` came from `zk_export_open`; this is its one release.
        unsafe { zk_export_put(self.raw) }
    }
}

/// An open file (a `struct file` reference).
pub(crate) struct File {
    raw: *mut RawFile,
}

// SAFETY: a `struct file` reference may be used and released from any
// thread; the shim's operations take the locks the VFS needs.
unsafe impl Send for File {}
// SAFETY: as above (concurrent reads at the file position race on the
// position only, as for threads sharing a descriptor).
unsafe impl Sync for File {}

impl File {
    /// The file behind the calling process's descriptor `fd`, which must
    /// be open for reading (`EBADF` otherwise).
    pub(crate) fn from_fd(fd: i32) -> Result<Self> {
        let mut err = 0;
        // SAFETY: `err` is valid for one write; the shim takes its own
        // reference to the file.
        let f = unsafe { zk_file_fget(fd, &mut err) };
        if f.is_null() {
            return Err(Error::from_errno(err));
        }
        Ok(File { raw: f })
    }

    /// openat(2) with this file as the directory: opens `path` (flags and
    /// mode as [`Export::open_file`]) with this directory as the root of
    /// the walk, so the result never lies outside it.  `ENOTDIR` if this
    /// is not a directory.
    pub(crate) fn open_below(&self, path: &CPath, flags: u32, mode: u32) -> Result<File> {
        let mut err = 0;
        // SAFETY: `raw` is live, `path` NUL-terminated, `err` writable.
        let f = unsafe { zk_file_open_below(self.raw, path.ptr(), flags as c_int, mode, &mut err) };
        if f.is_null() {
            return Err(Error::from_errno(err));
        }
        Ok(File { raw: f })
    }

    /// fchmod(2): sets the permission bits (`mode & 0o7777`).
    pub(crate) fn chmod(&self, mode: u32) -> Result {
        // SAFETY: `raw` is live.
        check(unsafe { zk_file_chmod(self.raw, mode & 0o7777) })
    }

    /// Reads at `pos` (advanced), or at the file position with `None`.
    pub(crate) fn read(&self, buf: &mut [u8], pos: Option<&mut i64>) -> Result<usize> {
        let p = pos.map_or(core::ptr::null_mut(), core::ptr::from_mut::<i64>);
        // SAFETY: `raw` is live; `buf` writable; `p` null or valid.
        check_len(unsafe { zk_file_read(self.raw, buf.as_mut_ptr(), buf.len(), p) })
    }

    /// Writes at `pos` (advanced), or at the file position with `None`.
    pub(crate) fn write(&self, buf: &[u8], pos: Option<&mut i64>) -> Result<usize> {
        let p = pos.map_or(core::ptr::null_mut(), core::ptr::from_mut::<i64>);
        // SAFETY: `raw` is live; `buf` readable; `p` null or valid.
        check_len(unsafe { zk_file_write(self.raw, buf.as_ptr(), buf.len(), p) })
    }

    /// lseek(2) (kernel `SEEK_*` values); the new position.
    pub(crate) fn llseek(&self, off: i64, whence: u32) -> Result<i64> {
        // SAFETY: `raw` is live.
        let r = unsafe { zk_file_llseek(self.raw, off, whence as c_int) };
        if r < 0 {
            return Err(Error::from_errno(r as c_int));
        }
        Ok(r)
    }

    /// fsync(2).
    pub(crate) fn fsync(&self) -> Result {
        // SAFETY: `raw` is live.
        check(unsafe { zk_file_fsync(self.raw) })
    }

    /// ftruncate(2).
    pub(crate) fn truncate(&self, len: i64) -> Result {
        if len < 0 {
            return Err(EINVAL);
        }
        // SAFETY: `raw` is live.
        check(unsafe { zk_file_truncate(self.raw, len) })
    }

    /// fstat(2).
    pub(crate) fn stat(&self) -> Result<Stat> {
        let mut st = Stat::default();
        // SAFETY: `raw` is live; `st` writable.
        check(unsafe { zk_file_getattr(self.raw, &mut st) })?;
        Ok(st)
    }

    /// Directory entries from the file position, in zoid's `Dirent` wire
    /// format, into `buf`; the bytes used (0 at the end).
    pub(crate) fn getdents(&self, buf: &mut [u8]) -> Result<usize> {
        let size = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        let mut used = 0u32;
        // SAFETY: `raw` is live; `buf` writable for `size` bytes.
        check(unsafe { zk_file_getdents(self.raw, buf.as_mut_ptr(), size, &mut used) })?;
        Ok(used as usize)
    }
}

impl Drop for File {
    fn drop(&mut self) {
        // SAFETY: `raw` is our reference; this is its one release.
        unsafe { zk_file_put(self.raw) }
    }
}

/// A caller's identity: file operations run under it with [`Creds::run`].
pub(crate) struct Creds {
    raw: *const RawCred,
}

impl Creds {
    /// Credentials with `uid`, `gid` and `groups` (initial user namespace
    /// numbering).  Any uid but 0 has no capabilities.
    pub(crate) fn new(uid: u32, gid: u32, groups: &[u32]) -> Result<Self> {
        let mut err = 0;
        // SAFETY: `groups` is readable for its length; `err` writable.
        let raw =
            unsafe { zk_creds_make(uid, gid, groups.as_ptr(), groups.len() as u32, &mut err) };
        if raw.is_null() {
            return Err(Error::from_errno(err));
        }
        Ok(Self { raw })
    }

    /// Runs `f` with these credentials as the current task's.
    pub(crate) fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        // SAFETY: `raw` is a live cred; the previous one is restored below
        // on this same task before returning.
        let old = unsafe { zk_creds_enter(self.raw) };
        let r = f();
        // SAFETY: `old` is what `zk_creds_enter` returned on this task.
        unsafe { zk_creds_leave(old) };
        r
    }
}

impl Drop for Creds {
    fn drop(&mut self) {
        // SAFETY: `raw` is our reference; this is its one release.
        unsafe { zk_creds_put(self.raw) }
    }
}
