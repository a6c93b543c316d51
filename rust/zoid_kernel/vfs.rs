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
    fn zk_file_fsync(f: *mut RawFile, datasync: c_int) -> c_int;
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

/// An xattr call's buffer: null for a length query (empty `buf`).
fn xattr_buf(buf: &mut [u8]) -> *mut u8 {
    if buf.is_empty() {
        core::ptr::null_mut()
    } else {
        buf.as_mut_ptr()
    }
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

    /// Reads exactly `buf.len()` bytes at `*pos` (advanced); `Ok(false)`
    /// if the file ends first.
    pub(crate) fn read_exact(&self, buf: &mut [u8], pos: &mut i64) -> Result<bool> {
        let mut done = 0;
        while done < buf.len() {
            let n = self.read(&mut buf[done..], Some(&mut *pos))?;
            if n == 0 {
                return Ok(false);
            }
            done += n;
        }
        Ok(true)
    }

    /// Writes all of `buf` at `*pos` (advanced); `EIO` if the file stops
    /// taking bytes.
    pub(crate) fn write_all(&self, buf: &[u8], pos: &mut i64) -> Result {
        let mut done = 0;
        while done < buf.len() {
            let n = self.write(&buf[done..], Some(&mut *pos))?;
            if n == 0 {
                return Err(EIO);
            }
            done += n;
        }
        Ok(())
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
        self.sync(false)
    }

    /// fsync(2), or fdatasync(2) with `datasync` (the data and what is
    /// needed to read it back, not every attribute).
    pub(crate) fn sync(&self, datasync: bool) -> Result {
        // SAFETY: `raw` is live.
        check(unsafe { zk_file_fsync(self.raw, c_int::from(datasync)) })
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

// ---------------------------------------------------------------------------
// Objects named by file handles (`shim/vfs_obj.c`): the zoidfs plug-in's
// stateless handles.

/// `struct zk_obj`, opaque here.
#[repr(C)]
struct RawObj {
    _private: [u8; 0],
}

/// `struct zk_setattr` of the shim: attribute changes, `valid` selecting
/// (the zoidfs `setattr` bits).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct SetAttr {
    pub(crate) valid: u32,
    pub(crate) mode: u32,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) size: i64,
    pub(crate) atime_sec: i64,
    pub(crate) mtime_sec: i64,
    pub(crate) atime_nsec: u32,
    pub(crate) mtime_nsec: u32,
}

/// What an object is opened for ([`Obj::open`]); the shim's
/// `ZK_ACCESS_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub(crate) enum Access {
    /// Read a regular file: who may read it, its owner whatever the
    /// mode, and who may execute it (unless the export is noexec).
    Read = 0,
    /// Write a regular file at any offset: who may write it, its owner
    /// whatever the mode; never an append-only file (`EPERM`).
    Write = 1,
    /// Write at a regular file's end (`O_APPEND`).
    Append = 2,
    /// Put a regular file on stable storage: who may read or write it.
    Commit = 3,
    /// List a directory: who may read it.
    List = 4,
}

/// `struct zk_statfs` of the shim.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct StatFs {
    pub(crate) kind: u64,
    pub(crate) blocks: u64,
    pub(crate) bfree: u64,
    pub(crate) bavail: u64,
    pub(crate) files: u64,
    pub(crate) ffree: u64,
    pub(crate) bsize: u32,
    pub(crate) frsize: u32,
    pub(crate) namelen: u32,
}

extern "C" {
    fn zk_export_id(e: *mut RawExport) -> u32;
    fn zk_obj_put(o: *mut RawObj);
    fn zk_export_root_obj(e: *mut RawExport, err: *mut c_int) -> *mut RawObj;
    fn zk_obj_fh(o: *mut RawObj, buf: *mut u8, cap: u32) -> c_int;
    fn zk_fh_resolve(e: *mut RawExport, fh: *const u8, len: u32, err: *mut c_int) -> *mut RawObj;
    fn zk_obj_stat(o: *mut RawObj, st: *mut Stat) -> c_int;
    fn zk_obj_lookup(dir: *mut RawObj, name: *const u8, len: u32, err: *mut c_int) -> *mut RawObj;
    fn zk_obj_create(
        dir: *mut RawObj,
        name: *const u8,
        len: u32,
        mode: u32,
        kind: c_int,
        target: *const c_char,
        rdev: u32,
        err: *mut c_int,
    ) -> *mut RawObj;
    fn zk_obj_getxattr(o: *mut RawObj, name: *const c_char, buf: *mut u8, size: u32) -> isize;
    fn zk_obj_listxattr(o: *mut RawObj, buf: *mut u8, size: u32) -> isize;
    fn zk_obj_setxattr(
        o: *mut RawObj,
        name: *const c_char,
        value: *const u8,
        size: u32,
        flags: c_int,
    ) -> c_int;
    fn zk_obj_removexattr(o: *mut RawObj, name: *const c_char) -> c_int;
    fn zk_obj_link(o: *mut RawObj, dir: *mut RawObj, name: *const u8, len: u32) -> c_int;
    fn zk_obj_remove(dir: *mut RawObj, name: *const u8, len: u32, is_dir: bool) -> c_int;
    fn zk_obj_rename(
        from_dir: *mut RawObj,
        from: *const u8,
        from_len: u32,
        to_dir: *mut RawObj,
        to: *const u8,
        to_len: u32,
        flags: u32,
    ) -> c_int;
    fn zk_obj_readlink(o: *mut RawObj, buf: *mut u8, size: u32) -> c_int;
    fn zk_obj_open(o: *mut RawObj, access: c_int, err: *mut c_int) -> *mut RawFile;
    fn zk_obj_setattr(o: *mut RawObj, s: *const SetAttr) -> c_int;
    fn zk_obj_statfs(o: *mut RawObj, out: *mut StatFs) -> c_int;
}

/// One component of a path: 1 to 255 bytes, no `/` or NUL (`EINVAL`),
/// not `.` or `..` (`EACCES`: a handle's walk never goes up).
#[derive(Clone, Copy)]
pub(crate) struct Name<'a>(&'a [u8]);

impl<'a> Name<'a> {
    /// Checks `name`.
    pub(crate) fn new(name: &'a [u8]) -> Result<Self> {
        if name.is_empty() {
            return Err(ENOENT);
        }
        if name.len() > 255 {
            return Err(ENAMETOOLONG);
        }
        if name.iter().any(|&c| c == 0 || c == b'/') {
            return Err(EINVAL);
        }
        if name == b"." || name == b".." {
            return Err(EACCES);
        }
        Ok(Self(name))
    }

    fn raw(&self) -> (*const u8, u32) {
        // At most 255 bytes (checked).
        (self.0.as_ptr(), self.0.len() as u32)
    }
}

/// What [`Obj::create`] makes.
#[derive(Clone, Copy)]
pub(crate) enum Make<'a> {
    /// A regular file; an existing one is returned as it is.
    File,
    /// A regular file that must not exist yet (`EEXIST`).
    FileExcl,
    /// A directory.
    Dir,
    /// A symbolic link to this target.
    Symlink(&'a CPath),
    /// A special file: `kind` its `S_IF*` type (fifo, socket, character
    /// or block device), `rdev` a device's number (`new_encode_dev`).
    Node {
        /// The type bits.
        kind: u32,
        /// The device number.
        rdev: u32,
    },
}

/// An object of an export: a file, directory or link it holds, named by a
/// file handle.
pub(crate) struct Obj {
    raw: *mut RawObj,
}

// SAFETY: a `struct path` reference, usable and released from any thread;
// the shim takes the locks each operation needs.
unsafe impl Send for Obj {}
// SAFETY: as above; no operation changes the reference itself.
unsafe impl Sync for Obj {}

fn obj_or(raw: *mut RawObj, err: c_int) -> Result<Obj> {
    if raw.is_null() {
        Err(Error::from_errno(err))
    } else {
        Ok(Obj { raw })
    }
}

impl Export {
    /// A stable number for the export (its filesystem and root inode):
    /// the same after an ION restart, different for another export.
    pub(crate) fn id(&self) -> u32 {
        // SAFETY: `raw` is live.
        unsafe { zk_export_id(self.raw) }
    }

    /// The export's root directory.
    pub(crate) fn root(&self) -> Result<Obj> {
        let mut err = 0;
        // SAFETY: `raw` is live; `err` writable.
        obj_or(unsafe { zk_export_root_obj(self.raw, &mut err) }, err)
    }

    /// The object file handle `fh` names (as [`Obj::file_handle`] wrote
    /// it): `ESTALE` if it names nothing (any more) at or below the root.
    pub(crate) fn resolve(&self, fh: &[u8]) -> Result<Obj> {
        let len = u32::try_from(fh.len()).map_err(|_| ESTALE)?;
        let mut err = 0;
        // SAFETY: `raw` is live; `fh` readable for `len` bytes; `err`
        // writable.
        obj_or(
            unsafe { zk_fh_resolve(self.raw, fh.as_ptr(), len, &mut err) },
            err,
        )
    }
}

impl Obj {
    /// Writes the object's file handle into `buf`; returns its length.
    pub(crate) fn file_handle(&self, buf: &mut [u8]) -> Result<usize> {
        let cap = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        // SAFETY: `raw` is live; `buf` writable for `cap` bytes.
        let rc = unsafe { zk_obj_fh(self.raw, buf.as_mut_ptr(), cap) };
        check(rc).map(|()| rc as usize)
    }

    /// Its attributes.
    pub(crate) fn stat(&self) -> Result<Stat> {
        let mut st = Stat::default();
        // SAFETY: `raw` is live; `st` writable.
        check(unsafe { zk_obj_stat(self.raw, &mut st) })?;
        Ok(st)
    }

    /// Entry `name` of this directory (`ENOENT`, `ENOTDIR`).
    pub(crate) fn lookup(&self, name: Name<'_>) -> Result<Obj> {
        let (p, n) = name.raw();
        let mut err = 0;
        // SAFETY: `raw` is live; `p` readable for `n` bytes.
        obj_or(unsafe { zk_obj_lookup(self.raw, p, n, &mut err) }, err)
    }

    /// Makes `name` in this directory (permission bits `mode`).
    pub(crate) fn create(&self, name: Name<'_>, mode: u32, what: Make<'_>) -> Result<Obj> {
        let mut mode = mode & 0o7777;
        let (kind, target, rdev) = match what {
            Make::File => (0, core::ptr::null(), 0),
            Make::FileExcl => (1, core::ptr::null(), 0),
            Make::Dir => (2, core::ptr::null(), 0),
            Make::Symlink(t) => (3, t.ptr(), 0),
            Make::Node { kind, rdev } => {
                // The shim refuses any type but the four special ones.
                mode |= kind & 0o170000;
                (4, core::ptr::null(), rdev)
            }
        };
        let (p, n) = name.raw();
        let mut err = 0;
        // SAFETY: `raw` is live; `p` readable for `n` bytes; `target` null
        // or NUL-terminated.
        let o = unsafe { zk_obj_create(self.raw, p, n, mode, kind, target, rdev, &mut err) };
        obj_or(o, err)
    }

    /// Makes `name` in directory `dir` a hard link to this object.
    pub(crate) fn link(&self, dir: &Obj, name: Name<'_>) -> Result {
        let (p, n) = name.raw();
        // SAFETY: both live; `p` readable for `n` bytes.
        check(unsafe { zk_obj_link(self.raw, dir.raw, p, n) })
    }

    /// Removes entry `name` of this directory (a directory with `is_dir`).
    pub(crate) fn remove(&self, name: Name<'_>, is_dir: bool) -> Result {
        let (p, n) = name.raw();
        // SAFETY: `raw` is live; `p` readable for `n` bytes.
        check(unsafe { zk_obj_remove(self.raw, p, n, is_dir) })
    }

    /// Renames entry `from` of this directory to `to` in `to_dir`
    /// (`RENAME_NOREPLACE` / `RENAME_EXCHANGE` in `flags`).
    pub(crate) fn rename(&self, from: Name<'_>, to_dir: &Obj, to: Name<'_>, flags: u32) -> Result {
        let ((fp, fl), (tp, tl)) = (from.raw(), to.raw());
        // SAFETY: both live; the names readable for their lengths.
        check(unsafe { zk_obj_rename(self.raw, fp, fl, to_dir.raw, tp, tl, flags) })
    }

    /// A symbolic link's target (up to `buf.len()` bytes copied); returns
    /// its whole length.
    pub(crate) fn readlink(&self, buf: &mut [u8]) -> Result<usize> {
        let size = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        // SAFETY: `raw` is live; `buf` writable for `size` bytes.
        let rc = unsafe { zk_obj_readlink(self.raw, buf.as_mut_ptr(), size) };
        check(rc).map(|()| rc as usize)
    }

    /// Opens the object for `access`, once the caller (whose credentials
    /// the thread runs with) may: a CN's own checks are not trusted, so
    /// the ION checks again, as nfsd does (`zk_permission` in
    /// `shim/vfs_obj.c`).  Data of a regular file only (`EISDIR`,
    /// `EINVAL`), a listing of a directory only (`ENOTDIR`): a FIFO or a
    /// device is never opened.
    pub(crate) fn open(&self, access: Access) -> Result<File> {
        let mut err = 0;
        // SAFETY: `raw` is live; `err` writable.
        let f = unsafe { zk_obj_open(self.raw, access as c_int, &mut err) };
        if f.is_null() {
            return Err(Error::from_errno(err));
        }
        Ok(File { raw: f })
    }

    /// Changes the attributes `set.valid` selects.
    pub(crate) fn setattr(&self, set: &SetAttr) -> Result {
        // SAFETY: `raw` is live; `set` readable.
        check(unsafe { zk_obj_setattr(self.raw, set) })
    }

    /// Extended attribute `name`'s value into `buf` (empty: only its
    /// length is returned); returns the value's length (`ERANGE` when
    /// `buf` is too small, `ENODATA` when there is none).
    pub(crate) fn getxattr(&self, name: &CStr, buf: &mut [u8]) -> Result<usize> {
        let size = u32::try_from(buf.len()).map_err(|_| E2BIG)?;
        // SAFETY: `raw` is live; `name` NUL-terminated; the buffer null
        // (a length query: filesystems answer ERANGE to a non-null buffer
        // of size 0) or writable for `size` bytes.
        let rc = unsafe { zk_obj_getxattr(self.raw, name.as_char_ptr(), xattr_buf(buf), size) };
        check_len(rc)
    }

    /// The names of its extended attributes (each NUL-terminated) into
    /// `buf` (empty: only their length is returned); returns their length.
    pub(crate) fn listxattr(&self, buf: &mut [u8]) -> Result<usize> {
        let size = u32::try_from(buf.len()).map_err(|_| E2BIG)?;
        // SAFETY: `raw` is live; the buffer null or writable for `size`
        // bytes.
        check_len(unsafe { zk_obj_listxattr(self.raw, xattr_buf(buf), size) })
    }

    /// Sets extended attribute `name` to `value` (`XATTR_CREATE` /
    /// `XATTR_REPLACE` in `flags`).
    pub(crate) fn setxattr(&self, name: &CStr, value: &[u8], flags: u32) -> Result {
        let size = u32::try_from(value.len()).map_err(|_| E2BIG)?;
        // SAFETY: `raw` is live; `name` NUL-terminated; `value` readable
        // for `size` bytes.
        check(unsafe {
            zk_obj_setxattr(
                self.raw,
                name.as_char_ptr(),
                value.as_ptr(),
                size,
                flags as c_int,
            )
        })
    }

    /// Removes extended attribute `name`.
    pub(crate) fn removexattr(&self, name: &CStr) -> Result {
        // SAFETY: `raw` is live; `name` NUL-terminated.
        check(unsafe { zk_obj_removexattr(self.raw, name.as_char_ptr()) })
    }

    /// Statistics of its filesystem.
    pub(crate) fn statfs(&self) -> Result<StatFs> {
        let mut out = StatFs::default();
        // SAFETY: `raw` is live; `out` writable.
        check(unsafe { zk_obj_statfs(self.raw, &mut out) })?;
        Ok(out)
    }
}

impl Drop for Obj {
    fn drop(&mut self) {
        // SAFETY: `raw` is our reference; this is its one release.
        unsafe { zk_obj_put(self.raw) }
    }
}
