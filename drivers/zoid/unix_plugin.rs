// SPDX-License-Identifier: GPL-2.0

//! The `unix` plug-in's ION side: POSIX file calls from CN processes, run
//! by ION workers through the kernel VFS under the exported directory
//! (`/sys/kernel/zoid/export`), with the caller's credentials.
//!
//! - Identity: the caller's uid, gid and groups as the CN sent them, mapped
//!   through `/sys/kernel/zoid/idmap` (ranges; ids no range covers pass
//!   through, or become 65534 with `unmapped squash`), and with
//!   `root_squash` (on by default) an unmapped uid 0 becomes 65534
//!   (nobody) and gid 0 65534 (nogroup), as NFS does.  Only a caller that
//!   ends up as uid 0 keeps capabilities.  See `zoid_proto::zoid::idmap`.
//! - Confinement: paths resolve with the export as root, rename-safe (see
//!   `rust/zoid_kernel/vfs.rs`); `..` components are refused.  Only
//!   regular files and directories are opened (`ENXIO`: a FIFO would hold
//!   a worker, a device would reach past the export), with open(2)'s
//!   permission checks under the caller's credentials (a CN's own checks
//!   are not trusted); `O_TMPFILE` is not supported.
//! - Descriptors: per CN process (node, pid), numbered from 3, at most
//!   [`MAX_FDS`] a process (`EMFILE`) and `max_fds_per_cn` a CN, whatever
//!   pids it claims (`EAGAIN`); they close when the process ends (its
//!   `/dev/zoid` is closed), when the CN goes away, or when the export
//!   changes.
//! - Open flags travel in x86_64 numbering (`oflag`) and are translated to
//!   this kernel's (powerpc numbers four of them differently).

use crate::plugin::{declared_plugin, Caller};
use crate::zoid_kernel::cred::MAX_GROUPS;
use crate::zoid_kernel::vfs::{CPath, Creds, Export, File, Stat as VfsStat};
use crate::zoid_proto::zoid::idmap::{IdKind, IdMap, IdMapError};
use crate::zoid_proto::zoid::plugin::CallResult;
use crate::zoid_proto::zoid::plugins::unix::{self, oflag, Stat, AT_FDCWD};
use kernel::bindings;
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::{Arc, Mutex};

/// Descriptors one CN process may hold.
pub(crate) const MAX_FDS: usize = 1024;
/// Descriptors all the processes of one CN may hold, at load
/// (`max_fds_per_cn`).
const DEFAULT_MAX_FDS_PER_CN: u32 = 4096;
/// First descriptor number handed out.
const FIRST_FD: i32 = 3;

struct OpenFile {
    node: u16,
    pid: u32,
    fd: i32,
    file: Arc<File>,
}

/// The `unix` plug-in.
#[pin_data]
pub(crate) struct Unix {
    #[pin]
    export: Mutex<Option<(Arc<Export>, KVec<u8>)>>,
    #[pin]
    files: Mutex<KVec<OpenFile>>,
    /// 1: an unmapped uid/gid 0 becomes 65534 (default); 0: root stays
    /// root.
    pub(crate) root_squash: Atomic<u32>,
    /// Descriptors all the processes of one CN may hold: a CN's budget,
    /// whatever pids it uses (past it, opens fail with `EAGAIN`).
    pub(crate) max_fds_per_cn: Atomic<u32>,
    /// Opens refused by `max_fds_per_cn`.
    pub(crate) fds_refused: Atomic<u64>,
    /// CN ids to ION ids.
    #[pin]
    idmap: Mutex<IdMap>,
}

fn errno(e: Error) -> i32 {
    -e.to_errno()
}

/// Wire open flags (x86_64 numbering) to this kernel's.
fn kernel_oflags(wire: u32) -> core::result::Result<u32, i32> {
    const MAP: [(u32, u32); 16] = [
        (oflag::CREAT, bindings::O_CREAT),
        (oflag::EXCL, bindings::O_EXCL),
        (oflag::NOCTTY, bindings::O_NOCTTY),
        (oflag::TRUNC, bindings::O_TRUNC),
        (oflag::APPEND, bindings::O_APPEND),
        (oflag::NONBLOCK, bindings::O_NONBLOCK),
        (oflag::DSYNC, bindings::O_DSYNC),
        (oflag::DIRECT, bindings::O_DIRECT),
        (oflag::LARGEFILE, bindings::O_LARGEFILE),
        (oflag::DIRECTORY, bindings::O_DIRECTORY),
        (oflag::NOFOLLOW, bindings::O_NOFOLLOW),
        (oflag::NOATIME, bindings::O_NOATIME),
        (oflag::CLOEXEC, bindings::O_CLOEXEC),
        (
            oflag::SYNC & !oflag::DSYNC,
            bindings::O_SYNC & !bindings::O_DSYNC,
        ),
        (oflag::PATH, bindings::O_PATH),
        (
            oflag::TMPFILE & !oflag::DIRECTORY,
            bindings::O_TMPFILE & !bindings::O_DIRECTORY,
        ),
    ];
    if wire & !oflag::KNOWN != 0 {
        return Err(errno(EINVAL));
    }
    let mut k = wire & oflag::ACCMODE;
    for (w, kf) in MAP {
        if wire & w == w && w != 0 {
            k |= kf;
        }
    }
    Ok(k)
}

/// A VFS `stat` in the wire's [`Stat`] (the `zoidfs` plug-in's too).
pub(crate) fn wire_stat(s: &VfsStat) -> Stat {
    Stat {
        dev: s.dev,
        ino: s.ino,
        mode: s.mode,
        nlink: s.nlink,
        uid: s.uid,
        gid: s.gid,
        rdev: s.rdev,
        size: s.size,
        blksize: s.blksize,
        blocks: s.blocks,
        atime_sec: s.atime_sec,
        atime_nsec: s.atime_nsec,
        mtime_sec: s.mtime_sec,
        mtime_nsec: s.mtime_nsec,
        ctime_sec: s.ctime_sec,
        ctime_nsec: s.ctime_nsec,
    }
}

fn ok_len(r: Result<usize>) -> CallResult {
    r.map(|n| n as i64).map_err(errno)
}

fn ok0(r: Result) -> CallResult {
    r.map(|()| 0).map_err(errno)
}

impl Unix {
    /// A `unix` plug-in with no export (every call fails with `ENOENT`
    /// until one is set).
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            export <- kernel::new_mutex!(None, "zoid::unix::export"),
            files <- kernel::new_mutex!(KVec::new(), "zoid::unix::files"),
            root_squash: Atomic::new(1),
            max_fds_per_cn: Atomic::new(DEFAULT_MAX_FDS_PER_CN),
            fds_refused: Atomic::new(0),
            idmap <- kernel::new_mutex!(IdMap::new(), "zoid::unix::idmap"),
        })
    }

    /// Exports directory `dir` (closing every descriptor of the old
    /// export); an empty `dir` withdraws the export.
    pub(crate) fn set_export(&self, dir: &[u8]) -> Result {
        let new = if dir.is_empty() {
            None
        } else {
            let mut path = KVec::with_capacity(dir.len() + 1, GFP_KERNEL)?;
            path.extend_from_slice(dir, GFP_KERNEL)?;
            path.push(0, GFP_KERNEL)?;
            let c = CStr::from_bytes_with_nul(&path).map_err(|_| EINVAL)?;
            let e = Arc::new(Export::open(c)?, GFP_KERNEL)?;
            path.pop();
            Some((e, path))
        };
        let old = core::mem::replace(&mut *self.export.lock(), new);
        let closed = core::mem::take(&mut *self.files.lock());
        drop(closed);
        drop(old);
        Ok(())
    }

    /// The exported directory (empty if none).
    pub(crate) fn export_path(&self, f: impl FnOnce(&[u8]) -> Result) -> Result {
        match &*self.export.lock() {
            Some((_, p)) => f(p),
            None => f(b""),
        }
    }

    /// Applies `/sys/kernel/zoid/idmap` commands (all or none).  Calls
    /// that follow run as the new mapping; open descriptors keep the
    /// identity they were opened with.
    pub(crate) fn update_idmap(&self, input: &[u8]) -> Result {
        self.idmap.lock().apply(input).map_err(|e| match e {
            IdMapError::Invalid => EINVAL,
            IdMapError::Overlap => EEXIST,
            IdMapError::Full => ENOSPC,
            IdMapError::NotFound => ENOENT,
        })
    }

    /// Calls `f` with the current mapping.
    pub(crate) fn with_idmap(&self, f: impl FnOnce(&IdMap) -> Result) -> Result {
        f(&self.idmap.lock())
    }

    /// Descriptors open now.
    pub(crate) fn open_files(&self) -> usize {
        self.files.lock().len()
    }

    fn export(&self) -> core::result::Result<Arc<Export>, i32> {
        self.export
            .lock()
            .as_ref()
            .map(|(e, _)| e.clone())
            .ok_or(errno(ENOENT))
    }

    /// The exported directory, if any.
    pub(crate) fn current_export(&self) -> Option<Arc<Export>> {
        self.export.lock().as_ref().map(|(e, _)| e.clone())
    }

    /// Runs `f` on the export with the caller's (mapped) credentials.
    pub(crate) fn as_caller(
        &self,
        ctx: &Caller,
        f: impl FnOnce(&Export) -> CallResult,
    ) -> CallResult {
        let export = self.export()?;
        self.run_as(ctx, || f(&export))
    }

    /// Runs `f` with the caller's credentials, mapped through `idmap` and
    /// squashed as configured.
    pub(crate) fn run_as(&self, ctx: &Caller, f: impl FnOnce() -> CallResult) -> CallResult {
        let mut groups = [0u32; MAX_GROUPS];
        let (uid, gid) = self.mapped_ids(ctx, &mut groups);
        let creds = Creds::new(uid, gid, &groups[..ctx.creds.groups().len()]).map_err(errno)?;
        creds.run(f)
    }

    /// The caller's ION uid and gid, mapped through `idmap` and squashed
    /// as configured, and its groups mapped into `groups` (as many as it
    /// has).
    pub(crate) fn mapped_ids(&self, ctx: &Caller, groups: &mut [u32; MAX_GROUPS]) -> (u32, u32) {
        let squash = self.root_squash.load(Relaxed) != 0;
        let c = &ctx.creds;
        let m = self.idmap.lock();
        for (g, &cn) in groups.iter_mut().zip(c.groups()) {
            *g = m.map(IdKind::Gid, cn, squash);
        }
        (
            m.map(IdKind::Uid, c.uid, squash),
            m.map(IdKind::Gid, c.gid, squash),
        )
    }

    fn file(&self, ctx: &Caller, fd: i32) -> core::result::Result<Arc<File>, i32> {
        let files = self.files.lock();
        files
            .iter()
            .find(|f| f.node == ctx.node && f.pid == ctx.creds.pid && f.fd == fd)
            .map(|f| f.file.clone())
            .ok_or(errno(EBADF))
    }

    /// Runs `f` on descriptor `fd` with the caller's credentials.
    fn with_file(&self, ctx: &Caller, fd: i32, f: impl FnOnce(&File) -> CallResult) -> CallResult {
        let file = self.file(ctx, fd)?;
        self.as_caller(ctx, |_| f(&file))
    }

    fn install(&self, ctx: &Caller, file: File) -> CallResult {
        let file = Arc::new(file, GFP_KERNEL).map_err(|_| errno(ENOMEM))?;
        let mut files = self.files.lock();
        let cn = files.iter().filter(|f| f.node == ctx.node).count();
        if cn >= self.max_fds_per_cn.load(Relaxed) as usize {
            self.fds_refused.fetch_add(1, Relaxed);
            return Err(errno(EAGAIN));
        }
        let mine = |f: &&OpenFile| f.node == ctx.node && f.pid == ctx.creds.pid;
        if files.iter().filter(mine).count() >= MAX_FDS {
            return Err(errno(EMFILE));
        }
        let mut fd = FIRST_FD;
        while files.iter().filter(mine).any(|f| f.fd == fd) {
            fd += 1;
        }
        files
            .push(
                OpenFile {
                    node: ctx.node,
                    pid: ctx.creds.pid,
                    fd,
                    file,
                },
                GFP_KERNEL,
            )
            .map_err(|_| errno(ENOMEM))?;
        Ok(i64::from(fd))
    }

    fn open_at(&self, ctx: &Caller, path: &[u8], flags: u32, mode: u32) -> CallResult {
        let kflags = kernel_oflags(flags)?;
        let path = CPath::new(path).map_err(errno)?;
        let file = self.as_caller(ctx, |e| {
            let f = e.open_file(&path, kflags, mode & 0o7777).map_err(errno)?;
            // Hand the file out of the closure through the table.
            self.install(ctx, f)
        })?;
        Ok(file)
    }

    fn stat_path(&self, ctx: &Caller, path: &[u8], st: &mut Stat, follow: bool) -> CallResult {
        let path = CPath::new(path).map_err(errno)?;
        self.as_caller(ctx, |e| {
            *st = wire_stat(&e.stat(&path, follow).map_err(errno)?);
            Ok(0)
        })
    }
}

impl unix::Server for Unix {
    type Ctx = Caller;

    fn open(&self, ctx: &Caller, path: &[u8], flags: u32, mode: u32) -> CallResult {
        self.open_at(ctx, path, flags, mode)
    }

    fn openat(&self, ctx: &Caller, dirfd: i32, path: &[u8], flags: u32, mode: u32) -> CallResult {
        // Absolute paths and AT_FDCWD start at the export root (the CN
        // process's working directory there is the root).
        if dirfd == AT_FDCWD || path.starts_with(b"/") {
            return self.open_at(ctx, path, flags, mode);
        }
        let kflags = kernel_oflags(flags)?;
        let cpath = CPath::new(path).map_err(errno)?;
        let dir = self.file(ctx, dirfd)?;
        self.as_caller(ctx, |_| {
            let f = dir
                .open_below(&cpath, kflags, mode & 0o7777)
                .map_err(errno)?;
            self.install(ctx, f)
        })
    }

    fn close(&self, ctx: &Caller, fd: i32) -> CallResult {
        let mut files = self.files.lock();
        let i = files
            .iter()
            .position(|f| f.node == ctx.node && f.pid == ctx.creds.pid && f.fd == fd)
            .ok_or(errno(EBADF))?;
        let f = files.remove(i).map_err(|_| errno(EBADF))?;
        drop(files);
        drop(f);
        Ok(0)
    }

    fn read(&self, ctx: &Caller, fd: i32, buf: &mut [u8], _count: u32) -> CallResult {
        self.with_file(ctx, fd, |f| ok_len(f.read(buf, None)))
    }

    fn write(&self, ctx: &Caller, fd: i32, buf: &[u8]) -> CallResult {
        self.with_file(ctx, fd, |f| ok_len(f.write(buf, None)))
    }

    fn pread(&self, ctx: &Caller, fd: i32, buf: &mut [u8], _count: u32, offset: i64) -> CallResult {
        if offset < 0 {
            return Err(errno(EINVAL));
        }
        let mut pos = offset;
        self.with_file(ctx, fd, |f| ok_len(f.read(buf, Some(&mut pos))))
    }

    fn pwrite(&self, ctx: &Caller, fd: i32, buf: &[u8], offset: i64) -> CallResult {
        if offset < 0 {
            return Err(errno(EINVAL));
        }
        let mut pos = offset;
        self.with_file(ctx, fd, |f| ok_len(f.write(buf, Some(&mut pos))))
    }

    fn lseek(&self, ctx: &Caller, fd: i32, offset: i64, whence: u32) -> CallResult {
        // SEEK_* have the same values everywhere.
        if whence > unix::SEEK_HOLE {
            return Err(errno(EINVAL));
        }
        self.with_file(ctx, fd, |f| f.llseek(offset, whence).map_err(errno))
    }

    fn fstat(&self, ctx: &Caller, fd: i32, st: &mut Stat) -> CallResult {
        self.with_file(ctx, fd, |f| {
            *st = wire_stat(&f.stat().map_err(errno)?);
            Ok(0)
        })
    }

    fn stat(&self, ctx: &Caller, path: &[u8], st: &mut Stat) -> CallResult {
        self.stat_path(ctx, path, st, true)
    }

    fn lstat(&self, ctx: &Caller, path: &[u8], st: &mut Stat) -> CallResult {
        self.stat_path(ctx, path, st, false)
    }

    fn fsync(&self, ctx: &Caller, fd: i32) -> CallResult {
        self.with_file(ctx, fd, |f| ok0(f.fsync()))
    }

    fn ftruncate(&self, ctx: &Caller, fd: i32, length: i64) -> CallResult {
        self.with_file(ctx, fd, |f| ok0(f.truncate(length)))
    }

    fn mkdir(&self, ctx: &Caller, path: &[u8], mode: u32) -> CallResult {
        let path = CPath::new(path).map_err(errno)?;
        self.as_caller(ctx, |e| ok0(e.mkdir(&path, mode)))
    }

    fn rmdir(&self, ctx: &Caller, path: &[u8]) -> CallResult {
        let path = CPath::new(path).map_err(errno)?;
        self.as_caller(ctx, |e| ok0(e.remove(&path, true)))
    }

    fn unlink(&self, ctx: &Caller, path: &[u8]) -> CallResult {
        let path = CPath::new(path).map_err(errno)?;
        self.as_caller(ctx, |e| ok0(e.remove(&path, false)))
    }

    fn rename(&self, ctx: &Caller, from: &[u8], to: &[u8]) -> CallResult {
        let from = CPath::new(from).map_err(errno)?;
        let to = CPath::new(to).map_err(errno)?;
        self.as_caller(ctx, |e| ok0(e.rename(&from, &to)))
    }

    fn readlink(&self, ctx: &Caller, path: &[u8], buf: &mut [u8], _size: u32) -> CallResult {
        let path = CPath::new(path).map_err(errno)?;
        self.as_caller(ctx, |e| ok_len(e.readlink(&path, buf)))
    }

    fn symlink(&self, ctx: &Caller, target: &[u8], linkpath: &[u8]) -> CallResult {
        // The target is stored as given; it resolves inside the export
        // whatever it says (absolute targets start at the export root).
        let target = CPath::target(target).map_err(errno)?;
        let linkpath = CPath::new(linkpath).map_err(errno)?;
        self.as_caller(ctx, |e| ok0(e.symlink(&target, &linkpath)))
    }

    fn getdents(&self, ctx: &Caller, fd: i32, buf: &mut [u8], _count: u32) -> CallResult {
        self.with_file(ctx, fd, |f| ok_len(f.getdents(buf)))
    }

    fn readv(&self, ctx: &Caller, fd: i32, buf: &mut [u8], count: u32) -> CallResult {
        unix::Server::read(self, ctx, fd, buf, count)
    }

    fn writev(&self, ctx: &Caller, fd: i32, buf: &[u8]) -> CallResult {
        unix::Server::write(self, ctx, fd, buf)
    }
}

declared_plugin!(Unix, unix, {
    fn process_exit(&self, node: u16, pid: u32) {
        let mut files = self.files.lock();
        files.retain(|f| !(f.node == node && f.pid == pid));
    }

    fn node_gone(&self, node: u16) {
        let mut files = self.files.lock();
        files.retain(|f| f.node != node);
    }
});
