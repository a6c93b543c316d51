// SPDX-License-Identifier: GPL-2.0

//! Files with no name whose operations are a Rust object's
//! (`anon_inode_getfile`): a job's descriptor on the ION, a rank's standard
//! streams on a CN.  7.3's `kernel` crate has misc devices but no
//! anonymous files; the operations table is C (shim/anonfile.c).

use kernel::ffi::{c_char, c_int, c_long, c_uint, c_ulong, c_void};
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::uaccess::UserPtr;

/// The table the C side calls (`struct zk_anon_ops`).
#[repr(C)]
pub(crate) struct RawOps {
    read: unsafe extern "C" fn(*mut c_void, *mut c_char, usize, bool) -> isize,
    write: unsafe extern "C" fn(*mut c_void, *const c_char, usize, bool) -> isize,
    ioctl: unsafe extern "C" fn(*mut c_void, c_uint, c_ulong) -> c_long,
    release: unsafe extern "C" fn(*mut c_void),
}

extern "C" {
    fn zk_anon_file(
        name: *const c_char,
        ops: *const RawOps,
        ctx: *mut c_void,
        flags: c_int,
    ) -> *mut c_void;
    fn zk_file_install(f: *mut c_void, cloexec: bool) -> c_int;
    fn zk_anon_put(f: *mut c_void);
    fn zk_fd_reserve() -> c_int;
    fn zk_fd_install(fd: c_int, f: *mut c_void);
    fn zk_fd_unreserve(fd: c_int);
}

/// A descriptor number reserved in the calling process (close-on-exec):
/// [`ReservedFd::install`] puts a file there; dropped, it is given back.
/// Its number can be told to user space before anything is installed.
pub(crate) struct ReservedFd {
    fd: c_int,
}

impl ReservedFd {
    /// Reserves the lowest free descriptor (`EMFILE`).
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: no preconditions; reserves in the calling process.
        let fd = unsafe { zk_fd_reserve() };
        if fd < 0 {
            return Err(Error::from_errno(fd));
        }
        Ok(Self { fd })
    }

    /// The number.
    pub(crate) fn number(&self) -> i32 {
        self.fd
    }

    /// Puts a new reference to `file` there: the descriptor is live.
    pub(crate) fn install(self, file: &AnonFile) {
        let fd = self.fd;
        core::mem::forget(self);
        // SAFETY: `fd` was reserved in this process and not installed;
        // `file` is a live reference.
        unsafe { zk_fd_install(fd, file.as_raw()) }
    }
}

impl Drop for ReservedFd {
    fn drop(&mut self) {
        // SAFETY: reserved in this process, never installed.
        unsafe { zk_fd_unreserve(self.fd) }
    }
}

/// What a file does; every operation runs in the calling process.
pub(crate) trait FileOps: Send + Sync + 'static {
    /// `read(2)` into `len` bytes of user memory at `buf`.
    fn read(&self, _buf: UserPtr, _len: usize, _nonblock: bool) -> Result<usize> {
        Err(EINVAL)
    }
    /// `write(2)` of `len` bytes of user memory at `buf`.
    fn write(&self, _buf: UserPtr, _len: usize, _nonblock: bool) -> Result<usize> {
        Err(EINVAL)
    }
    /// `ioctl(2)`.
    fn ioctl(&self, _cmd: u32, _arg: usize) -> Result<isize> {
        Err(ENOTTY)
    }
    /// The file's last reference went (its last descriptor closed).
    fn release(&self) {}
}

/// How a file is open.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Read only.
    Read,
    /// Write only.
    Write,
    /// Both.
    ReadWrite,
}

fn result(r: Result<usize>) -> isize {
    match r {
        Ok(n) => isize::try_from(n).unwrap_or(isize::MAX),
        Err(e) => e.to_errno() as isize,
    }
}

/// # Safety
///
/// `ctx` must be the `Arc<T>` pointer a file was made with, alive until
/// its release; `buf` a user address.
unsafe extern "C" fn read_trampoline<T: FileOps>(
    ctx: *mut c_void,
    buf: *mut c_char,
    len: usize,
    nonblock: bool,
) -> isize {
    // SAFETY: as the function's contract says.
    let obj = unsafe { &*ctx.cast_const().cast::<T>() };
    result(obj.read(UserPtr::from_ptr(buf.cast()), len, nonblock))
}

/// # Safety
///
/// As [`read_trampoline`].
unsafe extern "C" fn write_trampoline<T: FileOps>(
    ctx: *mut c_void,
    buf: *const c_char,
    len: usize,
    nonblock: bool,
) -> isize {
    // SAFETY: as the function's contract says.
    let obj = unsafe { &*ctx.cast_const().cast::<T>() };
    result(obj.write(UserPtr::from_ptr(buf.cast_mut().cast()), len, nonblock))
}

/// # Safety
///
/// As [`read_trampoline`].
unsafe extern "C" fn ioctl_trampoline<T: FileOps>(
    ctx: *mut c_void,
    cmd: c_uint,
    arg: c_ulong,
) -> c_long {
    // SAFETY: as the function's contract says.
    let obj = unsafe { &*ctx.cast_const().cast::<T>() };
    match obj.ioctl(cmd, arg) {
        Ok(n) => n as c_long,
        Err(e) => e.to_errno() as c_long,
    }
}

/// # Safety
///
/// `ctx` must be the `Arc<T>` pointer a file was made with; called once,
/// at the file's release.
unsafe extern "C" fn release_trampoline<T: FileOps>(ctx: *mut c_void) {
    // SAFETY: the reference `AnonFile::new` leaked into the file, taken
    // back once.
    let obj = unsafe { Arc::from_raw(ctx.cast_const().cast::<T>()) };
    obj.release();
}

struct Table<T>(core::marker::PhantomData<T>);

impl<T: FileOps> Table<T> {
    const OPS: RawOps = RawOps {
        read: read_trampoline::<T>,
        write: write_trampoline::<T>,
        ioctl: ioctl_trampoline::<T>,
        release: release_trampoline::<T>,
    };
}

/// A reference to an open file; dropped: the reference goes (`fput`).
pub(crate) struct AnonFile {
    raw: core::ptr::NonNull<c_void>,
}

// SAFETY: a file reference may be used and put from any thread.
unsafe impl Send for AnonFile {}
// SAFETY: as above; `&AnonFile` only installs more references.
unsafe impl Sync for AnonFile {}

const O_WRONLY: c_int = 1;
const O_RDWR: c_int = 2;

impl AnonFile {
    /// A new file named `name` (as `/proc/*/fd` shows it: `anon_inode:name`)
    /// whose operations are `obj`'s; `obj` is released with the file's
    /// last reference.
    pub(crate) fn new<T: FileOps>(name: &CStr, obj: Arc<T>, access: Access) -> Result<Self> {
        let flags = match access {
            Access::Read => 0,
            Access::Write => O_WRONLY,
            Access::ReadWrite => O_RDWR,
        };
        let ctx = Arc::into_raw(obj).cast_mut().cast::<c_void>();
        // SAFETY: `Table::<T>::OPS` is a static table of functions for
        // `T`; `ctx` is an `Arc<T>` reference the file owns from now on.
        let f = unsafe { zk_anon_file(name.as_char_ptr(), &Table::<T>::OPS, ctx, flags) };
        match core::ptr::NonNull::new(f) {
            Some(raw) => Ok(Self { raw }),
            None => {
                // SAFETY: the file was not made: the reference is ours again.
                drop(unsafe { Arc::from_raw(ctx.cast_const().cast::<T>()) });
                Err(ENOMEM)
            }
        }
    }

    /// Installs it as a new descriptor of the calling process (another
    /// reference): the descriptor.
    pub(crate) fn install(&self, cloexec: bool) -> Result<i32> {
        // SAFETY: `raw` is a live file reference.
        let fd = unsafe { zk_file_install(self.raw.as_ptr(), cloexec) };
        if fd < 0 {
            return Err(Error::from_errno(fd));
        }
        Ok(fd)
    }

    /// The `struct file` pointer, for the shims that take more references.
    pub(crate) fn as_raw(&self) -> *mut c_void {
        self.raw.as_ptr()
    }
}

impl Drop for AnonFile {
    fn drop(&mut self) {
        // SAFETY: this reference is ours, put once.
        unsafe { zk_anon_put(self.raw.as_ptr()) }
    }
}
