// SPDX-License-Identifier: GPL-2.0

//! The remote half of zoidfs: each VFS operation of `zoidfs_vfs.c` as one
//! call of the `zoidfs` plug-in on the CN's ION, through the generated
//! client stubs and zoid's client ABI.
//!
//! The `zoidfs_rs_*` functions are the C ABI of `fs/zoidfs/zoidfs.h`; all
//! their `unsafe` is turning its pointers into references and slices,
//! after which [`Remote`] does the work in safe code.

use crate::call_abi::{self, Mode, Started, ZoidTransport};
use crate::stats::{Op, STATS};
use crate::zoid_proto::zoid::marshal::Decoder;
use crate::zoid_proto::zoid::plugin::CallError;
use crate::zoid_proto::zoid::plugins::unix::{dirents, Stat};
use crate::zoid_proto::zoid::plugins::zoidfs::{
    client, xattr, Handle, Recall, SetAttr, StatFs, MAX_HANDLE, MODE_BITS, MODE_HAS_ACL,
    MODE_HAS_DEFAULT_ACL, UPCALL_RECALL,
};
use core::ffi::c_void;
use kernel::ffi::{c_char, c_int};
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};

/// `struct zoidfs_fh`.
#[repr(C)]
pub(crate) struct RawHandle {
    pub(crate) len: u8,
    pub(crate) data: [u8; MAX_HANDLE],
}

/// `struct zoidfs_attr`.
#[repr(C)]
#[derive(Default, Debug, PartialEq, Eq)]
pub(crate) struct RawAttr {
    pub(crate) ino: u64,
    pub(crate) rdev: u64,
    pub(crate) blocks: u64,
    pub(crate) size: i64,
    pub(crate) atime_sec: i64,
    pub(crate) mtime_sec: i64,
    pub(crate) ctime_sec: i64,
    pub(crate) atime_nsec: u32,
    pub(crate) mtime_nsec: u32,
    pub(crate) ctime_nsec: u32,
    pub(crate) mode: u32,
    pub(crate) nlink: u32,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) blksize: u32,
    /// `MODE_HAS_ACL` and `MODE_HAS_DEFAULT_ACL`, taken off `mode`.
    pub(crate) acl: u32,
}

impl From<&Stat> for RawAttr {
    fn from(s: &Stat) -> Self {
        Self {
            ino: s.ino,
            rdev: s.rdev,
            blocks: s.blocks,
            size: s.size,
            atime_sec: s.atime_sec,
            mtime_sec: s.mtime_sec,
            ctime_sec: s.ctime_sec,
            atime_nsec: s.atime_nsec,
            mtime_nsec: s.mtime_nsec,
            ctime_nsec: s.ctime_nsec,
            mode: s.mode & MODE_BITS,
            nlink: s.nlink,
            uid: s.uid,
            gid: s.gid,
            blksize: s.blksize,
            acl: s.mode & (MODE_HAS_ACL | MODE_HAS_DEFAULT_ACL),
        }
    }
}

/// `struct zoidfs_setattr`.
#[repr(C)]
pub(crate) struct RawSetAttr {
    size: i64,
    atime_sec: i64,
    mtime_sec: i64,
    atime_nsec: u32,
    mtime_nsec: u32,
    valid: u32,
    mode: u32,
    uid: u32,
    gid: u32,
}

/// `struct zoidfs_statfs`.
#[repr(C)]
pub(crate) struct RawStatFs {
    blocks: u64,
    bfree: u64,
    bavail: u64,
    files: u64,
    ffree: u64,
    bsize: u32,
    frsize: u32,
    namelen: u32,
}

/// `struct zoidfs_conn`.
#[repr(C)]
pub(crate) struct RawConn {
    timeout_ms: u32,
    mode: c_int,
    /// `atomic_t abort`: set by `umount -f`, then the mount's calls give
    /// up (C writes it atomically).
    abort: Atomic<i32>,
}

/// `zoidfs_emit_fn`.
type EmitFn = unsafe extern "C" fn(
    ctx: *mut c_void,
    name: *const c_char,
    len: usize,
    ino: u64,
    kind: u32,
    next: i64,
) -> bool;

/// `ZOIDFS_APPEND`: a write at the ION's end of file.
const APPEND: i64 = -1;

/// A negative errno for C.
fn neg(e: Error) -> c_int {
    e.to_errno()
}

/// `ETIMEDOUT`: a soft call the ION did not answer in time.
const ETIMEDOUT: i32 = 110;

/// `ESHUTDOWN`: a call given up by `umount -f`.
const ESHUTDOWN_ERRNO: i32 = 108;

/// A call's failure as a kernel error (counted).  A soft mount's timeout
/// and a call given up by `umount -f` reach the caller as `EIO`, as
/// NFS's do; the same errnos answered by the ION itself pass through.
fn failed(op: Op, e: CallError) -> Error {
    let errno = e.errno();
    let local = matches!(e, CallError::Transport(_));
    STATS.failed(op, errno, local);
    if local && (errno == ETIMEDOUT || errno == ESHUTDOWN_ERRNO) {
        EIO
    } else if errno > 0 && errno < 4096 {
        Error::from_errno(-errno)
    } else {
        EIO
    }
}

/// What a stub call returns: its result value, or why it failed.
type CallResult = core::result::Result<i64, CallError>;

/// One mount's way to its ION.
struct Remote {
    t: ZoidTransport,
}

impl Remote {
    fn new(c: &RawConn) -> Self {
        let mode = match c.mode {
            1 => Mode::Soft,
            2 => Mode::Hard,
            _ => Mode::Default,
        };
        let abort = core::ptr::from_ref(&c.abort).cast::<c_void>();
        Self {
            // SAFETY: `c.abort` is an `atomic_t` in the mount's superblock
            // info (or a caller's copy of it), written only atomically,
            // which outlives every call of the mount: C waits for its
            // calls before it frees the conn.
            t: unsafe { ZoidTransport::new(c.timeout_ms, mode, abort) },
        }
    }

    /// Runs one stub call, counting it as `op`.
    fn run(&self, op: Op, f: impl FnOnce(&ZoidTransport) -> CallResult) -> Result<i64> {
        STATS.call(op);
        f(&self.t).map_err(|e| failed(op, e))
    }
}

/// The handle C passed in (`EINVAL` for a malformed one).
pub(crate) fn handle_in(h: &RawHandle) -> Result<Handle> {
    Handle::new(h.data.get(..usize::from(h.len)).ok_or(EINVAL)?).ok_or(EINVAL)
}

/// Runs `op` on the file `fh` names: a call whose only result is
/// success, or an error (the handle's or the call's).
fn call_on(
    c: &RawConn,
    fh: &RawHandle,
    op: Op,
    f: impl FnOnce(&ZoidTransport, Handle) -> CallResult,
) -> Result<i64> {
    let h = handle_in(fh)?;
    Remote::new(c).run(op, |t| f(t, h))
}

/// Runs `op`, which names an entry of directory `dir` (lookup, or one of
/// the calls that make one), and gives C the entry's handle and attributes.
fn entry_in(
    c: &RawConn,
    dir: &RawHandle,
    op: Op,
    fh: &mut RawHandle,
    attr: &mut RawAttr,
    f: impl FnOnce(&ZoidTransport, Handle, &mut Handle, &mut Stat) -> CallResult,
) -> Result<i64> {
    let mut h = Handle::default();
    let mut st = Stat::default();
    let r = call_on(c, dir, op, |t, dir| f(t, dir, &mut h, &mut st))?;
    handle_out(&h, fh);
    *attr = RawAttr::from(&st);
    Ok(r)
}

/// 0 or a negative errno, for C.
fn status(r: Result<i64>) -> c_int {
    r.map_or_else(neg, |_| 0)
}

/// Gives C a handle.
pub(crate) fn handle_out(h: &Handle, out: &mut RawHandle) {
    let b = h.as_bytes();
    out.len = b.len() as u8;
    out.data = [0; MAX_HANDLE];
    out.data[..b.len()].copy_from_slice(b);
}

/// # Safety
///
/// `p` is valid for `len` reads (or `len` is 0).
unsafe fn bytes<'a>(p: *const c_char, len: usize) -> &'a [u8] {
    if len == 0 {
        &[]
    } else {
        // SAFETY: the caller's guarantee.
        unsafe { core::slice::from_raw_parts(p.cast::<u8>(), len) }
    }
}

/// `zoidfs_rs_connect()`: the CN's ION and its limits.
///
/// # Safety
///
/// Every pointer is valid for one write.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_connect(
    ion: *mut u32,
    max_request: *mut u32,
    max_reply: *mut u32,
) -> c_int {
    STATS.call(Op::Connect);
    match call_abi::ion() {
        Ok(i) => {
            // SAFETY: the caller's guarantee.
            unsafe {
                *ion = u32::from(i.node);
                *max_request = i.max_request;
                *max_reply = i.max_reply;
            }
            0
        }
        Err(e) => {
            STATS.failed(Op::Connect, e.to_errno().abs(), true);
            neg(e)
        }
    }
}

/// `zoidfs_rs_root()`.
///
/// # Safety
///
/// `c`, `fh`, `attr` are valid; `export` is valid for `export_len` reads.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_root(
    c: *const RawConn,
    export: *const c_char,
    export_len: usize,
    fh: *mut RawHandle,
    attr: *mut RawAttr,
) -> c_int {
    // SAFETY: the caller's guarantees.
    let (c, export, fh, attr) = unsafe { (&*c, bytes(export, export_len), &mut *fh, &mut *attr) };
    let mut h = Handle::default();
    let mut st = Stat::default();
    match Remote::new(c).run(Op::Root, |t| client::root(t, export, &mut h, &mut st)) {
        Ok(_) => {
            handle_out(&h, fh);
            *attr = RawAttr::from(&st);
            0
        }
        Err(e) => neg(e),
    }
}

/// `zoidfs_rs_lookup()`.
///
/// # Safety
///
/// `c`, `dir`, `fh`, `attr` are valid; `name` is valid for `len` reads.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_lookup(
    c: *const RawConn,
    dir: *const RawHandle,
    name: *const c_char,
    len: usize,
    fh: *mut RawHandle,
    attr: *mut RawAttr,
) -> c_int {
    // SAFETY: the caller's guarantees.
    let (c, dir, name, fh, attr) = unsafe { (&*c, &*dir, bytes(name, len), &mut *fh, &mut *attr) };
    status(entry_in(c, dir, Op::Lookup, fh, attr, |t, dir, h, st| {
        client::lookup(t, dir, name, h, st)
    }))
}

/// `zoidfs_rs_getattr()`.
///
/// # Safety
///
/// Every pointer is valid.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_getattr(
    c: *const RawConn,
    fh: *const RawHandle,
    attr: *mut RawAttr,
) -> c_int {
    // SAFETY: the caller's guarantees.
    let (c, fh, attr) = unsafe { (&*c, &*fh, &mut *attr) };
    let r = (|| -> Result {
        let h = handle_in(fh)?;
        let mut st = Stat::default();
        Remote::new(c).run(Op::Getattr, |t| client::getattr(t, h, &mut st))?;
        *attr = RawAttr::from(&st);
        Ok(())
    })();
    r.map_or_else(neg, |()| 0)
}

/// `zoidfs_rs_setattr()`.
///
/// # Safety
///
/// Every pointer is valid.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_setattr(
    c: *const RawConn,
    fh: *const RawHandle,
    set: *const RawSetAttr,
    attr: *mut RawAttr,
) -> c_int {
    // SAFETY: the caller's guarantees.
    let (c, fh, set, attr) = unsafe { (&*c, &*fh, &*set, &mut *attr) };
    let r = (|| -> Result {
        let h = handle_in(fh)?;
        let s = SetAttr {
            valid: set.valid,
            mode: set.mode,
            uid: set.uid,
            gid: set.gid,
            size: set.size,
            atime_sec: set.atime_sec,
            atime_nsec: set.atime_nsec,
            mtime_sec: set.mtime_sec,
            mtime_nsec: set.mtime_nsec,
        };
        let mut st = Stat::default();
        Remote::new(c).run(Op::Setattr, |t| client::setattr(t, h, s, &mut st))?;
        *attr = RawAttr::from(&st);
        Ok(())
    })();
    r.map_or_else(neg, |()| 0)
}

/// `zoidfs_rs_create()`.
///
/// # Safety
///
/// `c`, `dir`, `fh`, `attr` are valid; `name` is valid for `len` reads.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_create(
    c: *const RawConn,
    dir: *const RawHandle,
    name: *const c_char,
    len: usize,
    mode: u32,
    excl: bool,
    fh: *mut RawHandle,
    attr: *mut RawAttr,
) -> c_int {
    // SAFETY: the caller's guarantees.
    let (c, dir, name, fh, attr) = unsafe { (&*c, &*dir, bytes(name, len), &mut *fh, &mut *attr) };
    status(entry_in(c, dir, Op::Create, fh, attr, |t, dir, h, st| {
        client::create(t, dir, name, mode, excl, h, st)
    }))
}

/// `zoidfs_rs_mkdir()`.
///
/// # Safety
///
/// `c`, `dir`, `fh`, `attr` are valid; `name` is valid for `len` reads.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_mkdir(
    c: *const RawConn,
    dir: *const RawHandle,
    name: *const c_char,
    len: usize,
    mode: u32,
    fh: *mut RawHandle,
    attr: *mut RawAttr,
) -> c_int {
    // SAFETY: the caller's guarantees.
    let (c, dir, name, fh, attr) = unsafe { (&*c, &*dir, bytes(name, len), &mut *fh, &mut *attr) };
    status(entry_in(c, dir, Op::Mkdir, fh, attr, |t, dir, h, st| {
        client::mkdir(t, dir, name, mode, h, st)
    }))
}

/// `zoidfs_rs_symlink()`.
///
/// # Safety
///
/// `c`, `dir`, `fh`, `attr` are valid; `name` and `target` are valid for
/// `len` and `target_len` reads.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_symlink(
    c: *const RawConn,
    dir: *const RawHandle,
    name: *const c_char,
    len: usize,
    target: *const c_char,
    target_len: usize,
    fh: *mut RawHandle,
    attr: *mut RawAttr,
) -> c_int {
    // SAFETY: the caller's guarantees.
    let (c, dir, name, target, fh, attr) = unsafe {
        (
            &*c,
            &*dir,
            bytes(name, len),
            bytes(target, target_len),
            &mut *fh,
            &mut *attr,
        )
    };
    status(entry_in(c, dir, Op::Symlink, fh, attr, |t, dir, h, st| {
        client::symlink(t, dir, name, target, h, st)
    }))
}

/// `zoidfs_rs_link()`.
///
/// # Safety
///
/// `c`, `fh`, `dir`, `attr` are valid; `name` is valid for `len` reads.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_link(
    c: *const RawConn,
    fh: *const RawHandle,
    dir: *const RawHandle,
    name: *const c_char,
    len: usize,
    attr: *mut RawAttr,
) -> c_int {
    // SAFETY: the caller's guarantees.
    let (c, fh, dir, name, attr) = unsafe { (&*c, &*fh, &*dir, bytes(name, len), &mut *attr) };
    let r = (|| -> Result {
        let (h, dir) = (handle_in(fh)?, handle_in(dir)?);
        let mut st = Stat::default();
        Remote::new(c).run(Op::Link, |t| client::link(t, h, dir, name, &mut st))?;
        *attr = RawAttr::from(&st);
        Ok(())
    })();
    r.map_or_else(neg, |()| 0)
}

/// `zoidfs_rs_remove()`.
///
/// # Safety
///
/// `c`, `dir` are valid; `name` is valid for `len` reads.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_remove(
    c: *const RawConn,
    dir: *const RawHandle,
    name: *const c_char,
    len: usize,
    is_dir: bool,
) -> c_int {
    // SAFETY: the caller's guarantees.
    let (c, dir, name) = unsafe { (&*c, &*dir, bytes(name, len)) };
    status(call_on(c, dir, Op::Remove, |t, dir| {
        client::remove(t, dir, name, is_dir)
    }))
}

/// `zoidfs_rs_rename()`.
///
/// # Safety
///
/// `c`, `from_dir`, `to_dir` are valid; `from` and `to` are valid for
/// `from_len` and `to_len` reads.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_rename(
    c: *const RawConn,
    from_dir: *const RawHandle,
    from: *const c_char,
    from_len: usize,
    to_dir: *const RawHandle,
    to: *const c_char,
    to_len: usize,
    flags: u32,
) -> c_int {
    // SAFETY: the caller's guarantees.
    let (c, from_dir, from, to_dir, to) = unsafe {
        (
            &*c,
            &*from_dir,
            bytes(from, from_len),
            &*to_dir,
            bytes(to, to_len),
        )
    };
    let r = (|| -> Result {
        let (fd, td) = (handle_in(from_dir)?, handle_in(to_dir)?);
        Remote::new(c).run(Op::Rename, |t| client::rename(t, fd, from, td, to, flags))?;
        Ok(())
    })();
    r.map_or_else(neg, |()| 0)
}

/// `zoidfs_rs_readlink()`: the target's length.
///
/// # Safety
///
/// `c`, `fh` are valid; `buf` is valid for `cap` writes.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_readlink(
    c: *const RawConn,
    fh: *const RawHandle,
    buf: *mut c_char,
    cap: usize,
) -> isize {
    // SAFETY: the caller's guarantees.
    let (c, fh, buf) = unsafe {
        (
            &*c,
            &*fh,
            core::slice::from_raw_parts_mut(buf.cast::<u8>(), cap),
        )
    };
    let r = (|| -> Result<isize> {
        let h = handle_in(fh)?;
        let cap = u32::try_from(buf.len()).map_err(|_| EINVAL)?;
        let n = Remote::new(c).run(Op::Readlink, |t| client::readlink(t, h, buf, cap))?;
        isize::try_from(n).map_err(|_| EIO)
    })();
    r.unwrap_or_else(|e| neg(e) as isize)
}

/// `zoidfs_rs_mknod()`.
///
/// # Safety
///
/// `c`, `dir`, `fh`, `attr` are valid; `name` is valid for `len` reads.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_mknod(
    c: *const RawConn,
    dir: *const RawHandle,
    name: *const c_char,
    len: usize,
    mode: u32,
    rdev: u32,
    fh: *mut RawHandle,
    attr: *mut RawAttr,
) -> c_int {
    // SAFETY: the caller's guarantees.
    let (c, dir, name, fh, attr) = unsafe { (&*c, &*dir, bytes(name, len), &mut *fh, &mut *attr) };
    let r = entry_in(c, dir, Op::Mknod, fh, attr, |t, dir, h, st| {
        client::mknod(t, dir, name, mode, rdev.into(), h, st)
    });
    // An ION without mknod: as a filesystem that cannot make one.
    status(r.map_err(|e| if e == ENOSYS { EPERM } else { e }))
}

/// An ION without the xattr calls answers as a filesystem without
/// extended attributes.
fn no_xattrs(e: Error) -> Error {
    if e == ENOSYS {
        EOPNOTSUPP
    } else {
        e
    }
}

/// An xattr call that fills `buf` (getxattr, listxattr; empty `buf`: a
/// length query).  Returns the length the ION answered, checked against
/// `buf` and Linux's `limit` (the VFS copies that many bytes to user
/// space), or a negative errno.
fn xattr_read(
    c: &RawConn,
    fh: &RawHandle,
    op: Op,
    buf: &mut [u8],
    limit: usize,
    call: impl FnOnce(&ZoidTransport, Handle, &mut [u8], u32) -> CallResult,
) -> isize {
    let size = buf.len();
    let r = (|| -> Result<isize> {
        let cap = u32::try_from(size).map_err(|_| E2BIG)?;
        let n = call_on(c, fh, op, |t, h| call(t, h, buf, cap)).map_err(no_xattrs)?;
        let n = usize::try_from(n).map_err(|_| EIO)?;
        if n > limit || (size != 0 && n > size) {
            return Err(EIO);
        }
        isize::try_from(n).map_err(|_| EIO)
    })();
    r.unwrap_or_else(|e| neg(e) as isize)
}

/// `buf` as a slice of `size` bytes (empty when `size` is 0, whatever
/// `buf` is).
///
/// # Safety
///
/// With `size` > 0, `buf` is valid for `size` writes.
unsafe fn out_slice<'a>(buf: *mut c_void, size: usize) -> &'a mut [u8] {
    if size == 0 {
        return &mut [];
    }
    // SAFETY: the caller's guarantee.
    unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), size) }
}

/// `zoidfs_rs_getxattr()`: the value's length (`size` 0: the length
/// only), or a negative errno.
///
/// # Safety
///
/// `c`, `fh` are valid; `name` is valid for `name_len` reads; with `size`
/// > 0, `buf` is valid for `size` writes.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_getxattr(
    c: *const RawConn,
    fh: *const RawHandle,
    name: *const c_char,
    name_len: usize,
    buf: *mut c_void,
    size: usize,
) -> isize {
    // SAFETY: the caller's guarantees.
    let (c, fh, name, buf) = unsafe { (&*c, &*fh, bytes(name, name_len), out_slice(buf, size)) };
    xattr_read(
        c,
        fh,
        Op::Getxattr,
        buf,
        xattr::MAX_VALUE,
        |t, h, b, cap| client::getxattr(t, h, name, b, cap),
    )
}

/// `zoidfs_rs_setxattr()`.
///
/// # Safety
///
/// `c`, `fh` are valid; `name` and `value` are valid for `name_len` and
/// `size` reads (`value` may be anything when `size` is 0).
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_setxattr(
    c: *const RawConn,
    fh: *const RawHandle,
    name: *const c_char,
    name_len: usize,
    value: *const c_void,
    size: usize,
    flags: u32,
) -> c_int {
    // SAFETY: the caller's guarantees.
    let (c, fh, name, value) = unsafe {
        (
            &*c,
            &*fh,
            bytes(name, name_len),
            bytes(value.cast::<c_char>(), size),
        )
    };
    status(
        call_on(c, fh, Op::Setxattr, |t, h| {
            client::setxattr(t, h, name, value, flags)
        })
        .map_err(no_xattrs),
    )
}

/// `zoidfs_rs_listxattr()`: the names' length (`size` 0: the length
/// only), or a negative errno.
///
/// # Safety
///
/// `c`, `fh` are valid; with `size` > 0, `buf` is valid for `size`
/// writes.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_listxattr(
    c: *const RawConn,
    fh: *const RawHandle,
    buf: *mut c_void,
    size: usize,
) -> isize {
    // SAFETY: the caller's guarantees.
    let (c, fh, buf) = unsafe { (&*c, &*fh, out_slice(buf, size)) };
    xattr_read(
        c,
        fh,
        Op::Listxattr,
        buf,
        xattr::MAX_LIST,
        client::listxattr,
    )
}

/// `zoidfs_rs_removexattr()`.
///
/// # Safety
///
/// `c`, `fh` are valid; `name` is valid for `name_len` reads.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_removexattr(
    c: *const RawConn,
    fh: *const RawHandle,
    name: *const c_char,
    name_len: usize,
) -> c_int {
    // SAFETY: the caller's guarantees.
    let (c, fh, name) = unsafe { (&*c, &*fh, bytes(name, name_len)) };
    status(
        call_on(c, fh, Op::Removexattr, |t, h| {
            client::removexattr(t, h, name)
        })
        .map_err(no_xattrs),
    )
}

/// `zoidfs_rs_readdir()`: entries after `cookie` handed to `emit` until it
/// is full; the number handed (0 at the end of the directory).
///
/// # Safety
///
/// `c`, `dir` are valid; `emit` may be called with `ctx`.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_readdir(
    c: *const RawConn,
    dir: *const RawHandle,
    cookie: i64,
    cap: u32,
    emit: EmitFn,
    ctx: *mut c_void,
) -> isize {
    // SAFETY: the caller's guarantees.
    let (c, dir) = unsafe { (&*c, &*dir) };
    let r = (|| -> Result<isize> {
        let h = handle_in(dir)?;
        let mut buf = KVVec::new();
        buf.resize(cap as usize, 0, GFP_KERNEL)?;
        let n = Remote::new(c).run(Op::Readdir, |t| {
            client::readdir(t, h, cookie, &mut buf, cap)
        })?;
        let used = buf.get(..usize::try_from(n).map_err(|_| EIO)?).ok_or(EIO)?;
        let mut handed = 0isize;
        for d in dirents(used) {
            let d = d.map_err(|_| EIO)?;
            // SAFETY: `emit` and `ctx` are the caller's; the name is valid
            // for its length during the call.
            let more = unsafe {
                emit(
                    ctx,
                    d.name.as_ptr().cast(),
                    d.name.len(),
                    d.ino,
                    u32::from(d.kind),
                    d.off,
                )
            };
            if !more {
                break;
            }
            handed += 1;
        }
        Ok(handed)
    })();
    r.unwrap_or_else(|e| neg(e) as isize)
}

/// `zoidfs_rs_read()`: bytes read (0 at the end of the file).
///
/// # Safety
///
/// `c`, `fh` are valid; `buf` is valid for `count` writes.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_read(
    c: *const RawConn,
    fh: *const RawHandle,
    offset: i64,
    buf: *mut c_void,
    count: usize,
) -> isize {
    // SAFETY: the caller's guarantees.
    let (c, fh, buf) = unsafe {
        (
            &*c,
            &*fh,
            core::slice::from_raw_parts_mut(buf.cast::<u8>(), count),
        )
    };
    let r = (|| -> Result<isize> {
        let h = handle_in(fh)?;
        let count = u32::try_from(buf.len()).map_err(|_| EINVAL)?;
        let n = Remote::new(c).run(Op::Read, |t| client::read(t, h, offset, buf, count))?;
        STATS.bytes_read(n);
        isize::try_from(n).map_err(|_| EIO)
    })();
    r.unwrap_or_else(|e| neg(e) as isize)
}

/// `zoidfs_rs_write()`: bytes written; `offset` [`APPEND`] writes at the
/// end of the file.  The ION's write verifier goes to `*verf`.
///
/// # Safety
///
/// `c`, `fh`, `attr`, `verf` are valid; `buf` is valid for `count` reads.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_write(
    c: *const RawConn,
    fh: *const RawHandle,
    offset: i64,
    buf: *const c_void,
    count: usize,
    sync: bool,
    attr: *mut RawAttr,
    verf: *mut u64,
) -> isize {
    // SAFETY: the caller's guarantees.
    let (c, fh, data, attr, verf) =
        unsafe { (&*c, &*fh, bytes(buf.cast(), count), &mut *attr, &mut *verf) };
    let r = (|| -> Result<isize> {
        if offset < 0 && offset != APPEND {
            return Err(EINVAL);
        }
        let h = handle_in(fh)?;
        let mut st = Stat::default();
        let n = Remote::new(c).run(Op::Write, |t| {
            client::write(t, h, offset, data, sync, &mut st, verf)
        })?;
        *attr = RawAttr::from(&st);
        STATS.bytes_written(n);
        isize::try_from(n).map_err(|_| EIO)
    })();
    r.unwrap_or_else(|e| neg(e) as isize)
}

/// A read or write in flight (`struct zoidfs_io`).
pub(crate) struct Io {
    started: Started,
    op: Op,
    h: Handle,
    offset: i64,
    /// A read's destination (valid for `len` writes until its finish).
    buf: *mut u8,
    len: usize,
}

/// Hands a started I/O to C.
///
/// # Safety
///
/// `out` is valid for one write.
unsafe fn io_out(io: Result<Io>, out: *mut *mut c_void) -> c_int {
    match io.and_then(|io| Ok(KBox::new(io, GFP_KERNEL)?)) {
        Ok(b) => {
            // SAFETY: the caller's guarantee.
            unsafe { *out = KBox::into_raw(b).cast() };
            0
        }
        Err(e) => neg(e),
    }
}

/// `zoidfs_rs_read_start()`.
///
/// # Safety
///
/// `c`, `fh` are valid; `buf` is valid for `count` writes and not
/// otherwise used until [`zoidfs_rs_read_finish`]; `io` is valid for one
/// write.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_read_start(
    c: *const RawConn,
    fh: *const RawHandle,
    offset: i64,
    buf: *mut c_void,
    count: usize,
    io: *mut *mut c_void,
) -> c_int {
    // SAFETY: the caller's guarantees.
    let (c, fh) = unsafe { (&*c, &*fh) };
    let buf = buf.cast::<u8>();
    let r = (|| -> Result<Io> {
        let h = handle_in(fh)?;
        let n = u32::try_from(count).map_err(|_| EINVAL)?;
        let remote = Remote::new(c);
        STATS.call(Op::Read);
        let started = remote
            .t
            .start(|t| {
                // SAFETY: the caller's guarantee on `buf`; nothing else
                // uses it until the finish.
                let data = unsafe { core::slice::from_raw_parts_mut(buf, count) };
                client::read(t, h, offset, data, n)
            })
            .map_err(|e| failed(Op::Read, e))?;
        Ok(Io {
            started,
            op: Op::Read,
            h,
            offset,
            buf,
            len: count,
        })
    })();
    // SAFETY: `io` is valid for one write (the caller's guarantee).
    unsafe { io_out(r, io) }
}

/// Takes back an `io` from C.
///
/// # Safety
///
/// `io` came from a `*_start` function and was not finished.
unsafe fn io_in(io: *mut c_void) -> Io {
    // SAFETY: the caller's guarantee: a `KBox<Io>` from `io_out`.
    KBox::into_inner(unsafe { KBox::from_raw(io.cast::<Io>()) })
}

/// `zoidfs_rs_read_finish()`: bytes read (0 at the end of the file).
///
/// # Safety
///
/// `io` came from [`zoidfs_rs_read_start`] and was not finished.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_read_finish(io: *mut c_void) -> isize {
    // SAFETY: the caller's guarantee.
    let io = unsafe { io_in(io) };
    if io.op != Op::Read {
        return neg(EINVAL) as isize;
    }
    // SAFETY: the read start's guarantee: `buf` is valid for `len` writes
    // and ours until now.
    let data = unsafe { core::slice::from_raw_parts_mut(io.buf, io.len) };
    let count = io.len as u32;
    let (h, offset) = (io.h, io.offset);
    let r = io
        .started
        .finish(|t| client::read(t, h, offset, data, count))
        .map_err(|e| failed(Op::Read, e))
        .and_then(|n| {
            STATS.bytes_read(n);
            isize::try_from(n).map_err(|_| EIO)
        });
    r.unwrap_or_else(|e| neg(e) as isize)
}

/// `zoidfs_rs_write_start()`.
///
/// # Safety
///
/// `c`, `fh` are valid; `buf` is valid for `count` reads; `io` is valid
/// for one write.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_write_start(
    c: *const RawConn,
    fh: *const RawHandle,
    offset: i64,
    buf: *const c_void,
    count: usize,
    sync: bool,
    io: *mut *mut c_void,
) -> c_int {
    // SAFETY: the caller's guarantees.
    let (c, fh, data) = unsafe { (&*c, &*fh, bytes(buf.cast(), count)) };
    let r = (|| -> Result<Io> {
        if offset < 0 && offset != APPEND {
            return Err(EINVAL);
        }
        let h = handle_in(fh)?;
        let remote = Remote::new(c);
        STATS.call(Op::Write);
        let (mut st, mut verf) = (Stat::default(), 0);
        let started = remote
            .t
            .start(|t| client::write(t, h, offset, data, sync, &mut st, &mut verf))
            .map_err(|e| failed(Op::Write, e))?;
        Ok(Io {
            started,
            op: Op::Write,
            h,
            offset,
            buf: core::ptr::null_mut(),
            len: count,
        })
    })();
    // SAFETY: `io` is valid for one write (the caller's guarantee).
    unsafe { io_out(r, io) }
}

/// `zoidfs_rs_write_finish()`: bytes written, the attributes after the
/// write in `*attr`, the ION's write verifier in `*verf`.
///
/// # Safety
///
/// `io` came from [`zoidfs_rs_write_start`] and was not finished; `attr`
/// and `verf` are valid for one write.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_write_finish(
    io: *mut c_void,
    attr: *mut RawAttr,
    verf: *mut u64,
) -> isize {
    // SAFETY: the caller's guarantee.
    let io = unsafe { io_in(io) };
    if io.op != Op::Write {
        return neg(EINVAL) as isize;
    }
    // SAFETY: the caller's guarantee.
    let (attr, verf) = unsafe { (&mut *attr, &mut *verf) };
    let (h, offset) = (io.h, io.offset);
    let mut st = Stat::default();
    // The data went with the start: the stub's `data` is not sent again.
    let r = io
        .started
        .finish(|t| client::write(t, h, offset, &[], false, &mut st, verf))
        .map_err(|e| failed(Op::Write, e))
        .and_then(|n| {
            *attr = RawAttr::from(&st);
            STATS.bytes_written(n);
            isize::try_from(n).map_err(|_| EIO)
        });
    r.unwrap_or_else(|e| neg(e) as isize)
}

/// `zoidfs_rs_commit()`: the ION's write verifier goes to `*verf`.
///
/// # Safety
///
/// Every pointer is valid.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_commit(
    c: *const RawConn,
    fh: *const RawHandle,
    datasync: bool,
    verf: *mut u64,
) -> c_int {
    // SAFETY: the caller's guarantees.
    let (c, fh, verf) = unsafe { (&*c, &*fh, &mut *verf) };
    status(call_on(c, fh, Op::Commit, |t, h| {
        client::commit(t, h, datasync, verf)
    }))
}

/// `zoidfs_rs_open()`: relaxed consistency's first open of a file by this
/// CN; `*grant` > 0 when the CN may cache it.
///
/// # Safety
///
/// Every pointer is valid.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_open(
    c: *const RawConn,
    fh: *const RawHandle,
    ino: u64,
    grant: *mut u32,
) -> c_int {
    // SAFETY: the caller's guarantees.
    let (c, fh, grant) = unsafe { (&*c, &*fh, &mut *grant) };
    let r = (|| -> Result {
        let h = handle_in(fh)?;
        let g = Remote::new(c).run(Op::Open, |t| client::open(t, h, ino))?;
        *grant = u32::try_from(g).map_err(|_| EIO)?;
        if *grant != 0 {
            STATS.grants.fetch_add(1, Relaxed);
        }
        Ok(())
    })();
    r.map_or_else(neg, |()| 0)
}

/// `zoidfs_rs_close()`: relaxed consistency's last close.
///
/// # Safety
///
/// Every pointer is valid.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_close(c: *const RawConn, fh: *const RawHandle) -> c_int {
    // SAFETY: the caller's guarantees.
    let (c, fh) = unsafe { (&*c, &*fh) };
    status(call_on(c, fh, Op::Close, client::close))
}

/// `zoidfs_rs_recalled()`: the answer to a recall of `grant`.
///
/// # Safety
///
/// Every pointer is valid.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_recalled(
    c: *const RawConn,
    fh: *const RawHandle,
    grant: u32,
) -> c_int {
    // SAFETY: the caller's guarantees.
    let (c, fh) = unsafe { (&*c, &*fh) };
    status(call_on(c, fh, Op::Recalled, |t, h| {
        client::recalled(t, h, grant)
    }))
}

/// `zoidfs_rs_ssi_count()`: counts a `consistency=ssi` event.
#[no_mangle]
pub(crate) extern "C" fn zoidfs_rs_ssi_count(event: c_int) {
    STATS.ssi_event(event);
}

/// `zoidfs_rs_count_forced_umount()`.
#[no_mangle]
pub(crate) extern "C" fn zoidfs_rs_count_forced_umount() {
    STATS.forced_umounts.fetch_add(1, Relaxed);
}

/// `zoidfs_rs_count_unstable()`: an fsync found that the ION had booted
/// again since it took unsynced writes; `lost`: they could not be sent
/// again.
#[no_mangle]
pub(crate) extern "C" fn zoidfs_rs_count_unstable(lost: bool) {
    let c = if lost {
        &STATS.unstable_lost
    } else {
        &STATS.unstable_resent
    };
    c.fetch_add(1, Relaxed);
}

/// `zoidfs_rs_count_grant_void()`: a relaxed grant was found void and
/// dropped; `dirty`: with data cached under it.
#[no_mangle]
pub(crate) extern "C" fn zoidfs_rs_count_grant_void(dirty: bool) {
    STATS.grants_void.fetch_add(1, Relaxed);
    if dirty {
        STATS.void_data_dropped.fetch_add(1, Relaxed);
    }
}

/// `zoidfs_rs_count_void_data()`: a write-back dropped data cached under
/// a void grant.
#[no_mangle]
pub(crate) extern "C" fn zoidfs_rs_count_void_data() {
    STATS.void_data_dropped.fetch_add(1, Relaxed);
}

/// `zoidfs_rs_count_run_mapping()`: a call's folios were mapped together.
#[no_mangle]
pub(crate) extern "C" fn zoidfs_rs_count_run_mapping() {
    STATS.run_mappings.fetch_add(1, Relaxed);
}

/// `zoidfs_rs_count_reconnect()`: a stale handle looked up again by its
/// name; `ok`: the ION answered with the same handle.
#[no_mangle]
pub(crate) extern "C" fn zoidfs_rs_count_reconnect(ok: bool) {
    let c = if ok {
        &STATS.reconnects
    } else {
        &STATS.reconnects_failed
    };
    c.fetch_add(1, Relaxed);
}

/// `zoidfs_rs_parse_recall()`: decodes upcall `function`'s `body` (a
/// recall): 0, or `-EPROTO` for anything else and malformed bodies.
///
/// # Safety
///
/// `body` is valid for `len` reads; the out pointers for one write each.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_parse_recall(
    function: u16,
    body: *const c_void,
    len: usize,
    fh: *mut RawHandle,
    ino: *mut u64,
    grant: *mut u32,
) -> c_int {
    // SAFETY: the caller's guarantees.
    let (body, fh, ino, grant) =
        unsafe { (bytes(body.cast(), len), &mut *fh, &mut *ino, &mut *grant) };
    let mut d = Decoder::new(body);
    match d.get::<Recall>() {
        Ok(r) if function == UPCALL_RECALL && d.finish().is_ok() => {
            STATS.recalls.fetch_add(1, Relaxed);
            handle_out(&r.handle, fh);
            *ino = r.ino;
            *grant = r.grant;
            0
        }
        _ => {
            STATS.bad_upcalls.fetch_add(1, Relaxed);
            EPROTO.to_errno()
        }
    }
}

/// `zoidfs_rs_statfs()`.
///
/// # Safety
///
/// Every pointer is valid.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoidfs_rs_statfs(
    c: *const RawConn,
    fh: *const RawHandle,
    out: *mut RawStatFs,
) -> c_int {
    // SAFETY: the caller's guarantees.
    let (c, fh, out) = unsafe { (&*c, &*fh, &mut *out) };
    let r = (|| -> Result {
        let h = handle_in(fh)?;
        let mut st = StatFs::default();
        Remote::new(c).run(Op::Statfs, |t| client::statfs(t, h, &mut st))?;
        *out = RawStatFs {
            blocks: st.blocks,
            bfree: st.bfree,
            bavail: st.bavail,
            files: st.files,
            ffree: st.ffree,
            bsize: st.bsize,
            frsize: st.frsize,
            namelen: st.namelen,
        };
        Ok(())
    })();
    r.map_or_else(neg, |()| 0)
}
