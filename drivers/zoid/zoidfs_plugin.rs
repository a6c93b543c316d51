// SPDX-License-Identifier: GPL-2.0

//! The `zoidfs` plug-in's ION side: the operations `fs/zoidfs` forwards,
//! on stateless handles, run by ION workers through the kernel VFS with the
//! caller's mapped credentials (the `unix` plug-in's `idmap` and
//! `root_squash`).
//!
//! Exports: the default one (`""`) is the `unix` plug-in's
//! (`/sys/kernel/zoid/export`); more are added by name in
//! `/sys/kernel/zoid/zoidfs_exports` (`NAME /path` adds, `-NAME` removes).
//!
//! A handle is `[export id: be32][exportfs file handle]`.  The export id is
//! stable (the export's filesystem and root inode), so a handle is
//! self-contained: it stays valid across calls, CN restarts and an ION that
//! reloads zoid and exports the same directory again.  One whose export is
//! gone, or that no longer names an object at or below the export's root,
//! fails with `ESTALE` (see `rust/zoid_kernel/shim/vfs_obj.c`).  Every call
//! opens what it needs and closes it again.  The one per-CN state is
//! relaxed consistency's table of who has which file open
//! ([`crate::zoidfs_relaxed`]), fed by `open`, `close` and `recalled`.
//!
//! Writes are unstable unless the CN asks for `sync`: they reach the ION's
//! page cache, and `commit` (the CN's fsync) puts them on stable storage.
//! Both answer with the write verifier, an identity of this kernel's boot
//! ([`boot_verifier`]): a CN whose unstable writes went to another boot
//! than its commit (the ION crashed in between, losing its page cache)
//! sends them again, as an NFS client does.

use crate::plugin::{declared_plugin, Caller};
use crate::unix_plugin::{wire_stat, Unix};
use crate::zoid_kernel::kthread::KThread;
use crate::zoid_kernel::time::{boot_time_ns, random_u32};
use crate::zoid_kernel::vfs::{self, Access, CPath, Export, Make, Name, Obj};
use crate::zoid_proto::zoid::plugin::CallResult;
use crate::zoid_proto::zoid::plugins::unix::{Dirent, Stat};
use crate::zoid_proto::zoid::plugins::zoidfs::{
    self, node, rename, setattr, xattr, Handle, SetAttr, StatFs, APPEND, MAX_HANDLE,
};
use crate::zoidfs_relaxed::OpenTable;
use kernel::bindings;
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::{Arc, Mutex};
use kernel::time::{delay::fsleep, Delta};

/// Bytes of the export id in front of a handle's file handle.
const ID_LEN: usize = 4;
/// Named exports at most.
const MAX_EXPORTS: usize = 16;
/// Longest export name.
const MAX_NAME: usize = 32;

/// An export added by name.
struct Named {
    name: KVec<u8>,
    path: KVec<u8>,
    export: Arc<Export>,
}

/// The `zoidfs` plug-in.
#[pin_data]
pub(crate) struct Zoidfs {
    /// The default export, identity mapping and squashing.
    unix: Arc<Unix>,
    #[pin]
    named: Mutex<KVec<Named>>,
    /// Relaxed consistency: who has which file open.
    pub(crate) relaxed: Arc<OpenTable>,
    /// Its recall timer.
    _recall_timer: KThread<OpenTable>,
    /// The write verifier `write` and `commit` answer with: this boot's.
    verifier: u64,
    /// Fault injection for tests (`zoidfs_commit_delay_ms`): every
    /// commit waits this long before it syncs, so that a test can cut
    /// the ION's power between a write and its commit.
    pub(crate) commit_delay_ms: Atomic<u32>,
}

/// The write verifier of this boot: the kernel's `boot_id` (random,
/// fixed for the whole boot, so a reload of zoid keeps it) folded to 64
/// bits.  Not the boot time: that moves with every clock step.  Without
/// a readable `boot_id` (no /proc), the boot time and a random value: a
/// reload of zoid then looks like a reboot to the CNs (they send their
/// cached unsynced writes again, and fsyncs of uncached ones fail).
/// Never 0 (a CN's "no unstable writes").
fn boot_verifier() -> u64 {
    let boot_id = (|| -> Result<u64> {
        let dir = Export::open(c"/proc/sys/kernel/random")?;
        let f = dir.open_file(&CPath::new(b"boot_id")?, bindings::O_RDONLY, 0)?;
        let mut buf = [0u8; 64];
        let n = f.read(&mut buf, None)?;
        let read = buf.get(..n).ok_or(EINVAL)?;
        let digits = read.iter().filter_map(|&c| char::from(c).to_digit(16));
        let (v, count) = digits.fold((0u64, 0), |(v, k), d| {
            (v.rotate_left(4) ^ u64::from(d), k + 1)
        });
        if count < 32 {
            return Err(EINVAL);
        }
        Ok(v)
    })();
    let v = match boot_id {
        Ok(id) => id,
        Err(_) => boot_time_ns() ^ (u64::from(random_u32()) << 32),
    };
    v | 1
}

impl Zoidfs {
    /// The plug-in, serving `unix`'s export as the default one.
    pub(crate) fn new(unix: Arc<Unix>) -> Result<impl PinInit<Self, Error>> {
        let relaxed = Arc::pin_init(OpenTable::new()?, GFP_KERNEL)?;
        let timer = OpenTable::start_timer(&relaxed)?;
        Ok(try_pin_init!(Self {
            unix,
            named <- kernel::new_mutex!(KVec::new(), "zoid::zoidfs::exports"),
            relaxed,
            _recall_timer: timer,
            verifier: boot_verifier(),
            commit_delay_ms: Atomic::new(0),
        }? Error))
    }

    /// The write verifier (see [`boot_verifier`]).
    pub(crate) fn verifier(&self) -> u64 {
        self.verifier
    }

    /// The export called `name` (`""`: the default one).
    fn by_name(&self, name: &[u8]) -> Option<Arc<Export>> {
        if name.is_empty() {
            return self.unix.current_export();
        }
        let g = self.named.lock();
        g.iter().find(|n| n.name == name).map(|n| n.export.clone())
    }

    /// The export whose id is `id`.
    fn by_id(&self, id: u32) -> Option<Arc<Export>> {
        if let Some(e) = self.unix.current_export().filter(|e| e.id() == id) {
            return Some(e);
        }
        let g = self.named.lock();
        g.iter()
            .find(|n| n.export.id() == id)
            .map(|n| n.export.clone())
    }

    /// Applies a `zoidfs_exports` command: `NAME /path` adds an export,
    /// `-NAME` removes one (its handles go stale).
    pub(crate) fn command(&self, input: &[u8]) -> Result {
        let s = input.trim_ascii();
        let valid_name = |n: &[u8]| {
            !n.is_empty()
                && n.len() <= MAX_NAME
                && n.iter()
                    .all(|c| c.is_ascii_alphanumeric() || b"_.-".contains(c))
        };
        if let Some(name) = s.strip_prefix(b"-") {
            let mut g = self.named.lock();
            let i = g.iter().position(|n| n.name == name).ok_or(ENOENT)?;
            let gone = g.remove(i).map_err(|_| ENOENT)?;
            drop(g);
            drop(gone);
            return Ok(());
        }
        let mut words = s
            .split(|c| c.is_ascii_whitespace())
            .filter(|w| !w.is_empty());
        let (Some(name), Some(path), None) = (words.next(), words.next(), words.next()) else {
            return Err(EINVAL);
        };
        if !valid_name(name) || !path.starts_with(b"/") {
            return Err(EINVAL);
        }
        let mut cpath = KVec::with_capacity(path.len() + 1, GFP_KERNEL)?;
        cpath.extend_from_slice(path, GFP_KERNEL)?;
        cpath.push(0, GFP_KERNEL)?;
        let c = CStr::from_bytes_with_nul(&cpath).map_err(|_| EINVAL)?;
        let export = Arc::new(Export::open(c)?, GFP_KERNEL)?;
        cpath.pop();
        let mut n = KVec::with_capacity(name.len(), GFP_KERNEL)?;
        n.extend_from_slice(name, GFP_KERNEL)?;
        let mut g = self.named.lock();
        // One name, one id: a handle must name exactly one export.
        if g.len() >= MAX_EXPORTS {
            return Err(ENOSPC);
        }
        if g.iter()
            .any(|x| x.name == name || x.export.id() == export.id())
        {
            return Err(EEXIST);
        }
        g.push(
            Named {
                name: n,
                path: cpath,
                export,
            },
            GFP_KERNEL,
        )?;
        Ok(())
    }

    /// Calls `f(name, path, id)` for every named export.
    pub(crate) fn for_each_export(&self, mut f: impl FnMut(&[u8], &[u8], u32) -> Result) -> Result {
        let g = self.named.lock();
        for n in g.iter() {
            f(&n.name, &n.path, n.export.id())?;
        }
        Ok(())
    }

    /// Runs `f` with the caller's credentials on the object `h` names.
    fn on(&self, ctx: &Caller, h: &Handle, f: impl FnOnce(&Obj) -> CallResult) -> CallResult {
        let (e, fh) = self.export_of(h)?;
        self.unix.run_as(ctx, || f(&e.resolve(fh).map_err(errno)?))
    }

    /// Runs `f` with the caller's credentials on the objects `a` and `b`
    /// name (link, rename), which must be of one export: two exports may
    /// share a filesystem, and a link or rename never joins them (a way
    /// out of an export), `EXDEV` as across filesystems.
    fn on_pair(
        &self,
        ctx: &Caller,
        a: &Handle,
        b: &Handle,
        f: impl FnOnce(&Obj, &Obj) -> CallResult,
    ) -> CallResult {
        let (e, afh) = self.export_of(a)?;
        let (be, bfh) = self.export_of(b)?;
        if e.id() != be.id() {
            return Err(errno(EXDEV));
        }
        self.unix.run_as(ctx, || {
            let (x, y) = (
                e.resolve(afh).map_err(errno)?,
                e.resolve(bfh).map_err(errno)?,
            );
            f(&x, &y)
        })
    }

    /// The export a handle belongs to and its file handle part.
    fn export_of<'a>(&self, h: &'a Handle) -> core::result::Result<(Arc<Export>, &'a [u8]), i32> {
        let b = h.as_bytes();
        if b.len() <= ID_LEN {
            return Err(errno(ESTALE));
        }
        let id = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        let e = self.by_id(id).ok_or(errno(ESTALE))?;
        Ok((e, &b[ID_LEN..]))
    }
}

fn errno(e: Error) -> i32 {
    -e.to_errno()
}

/// `o`'s handle (in the export with id `id`) and attributes into the
/// reply.
fn describe(id: u32, o: &Obj, h: &mut Handle, attr: &mut Stat) -> CallResult {
    let mut buf = [0u8; MAX_HANDLE];
    buf[..ID_LEN].copy_from_slice(&id.to_be_bytes());
    let n = o.file_handle(&mut buf[ID_LEN..]).map_err(errno)?;
    *h = Handle::new(&buf[..ID_LEN + n]).ok_or(errno(EOVERFLOW))?;
    *attr = wire_stat(&o.stat().map_err(errno)?);
    Ok(0)
}

/// Removes the `.` and `..` records from the first `n` bytes of `buf`
/// (`unix` [`Dirent`] records), moving the others down; returns the bytes
/// kept.
fn drop_dots(buf: &mut [u8], n: usize) -> core::result::Result<usize, i32> {
    let (mut read, mut kept) = (0, 0);
    while read < n {
        let (len, dot) = {
            let (d, len) = Dirent::decode(&buf[read..n]).map_err(|e| e.errno())?;
            (len, d.name == b"." || d.name == b"..")
        };
        if !dot {
            buf.copy_within(read..read + len, kept);
            kept += len;
        }
        read += len;
    }
    Ok(kept)
}

fn name(n: &[u8]) -> core::result::Result<Name<'_>, i32> {
    Name::new(n).map_err(errno)
}

/// An extended attribute's name, NUL-terminated in `buf`: only the
/// namespaces zoidfs forwards (`EOPNOTSUPP` for the others).
fn xattr_name<'a>(
    n: &[u8],
    buf: &'a mut [u8; xattr::MAX_NAME + 1],
) -> core::result::Result<&'a CStr, i32> {
    if !xattr::name_ok(n) {
        return Err(errno(EOPNOTSUPP));
    }
    buf[..n.len()].copy_from_slice(n);
    buf[n.len()] = 0;
    CStr::from_bytes_with_nul(&buf[..=n.len()]).map_err(|_| errno(EINVAL))
}

impl zoidfs::Server for Zoidfs {
    type Ctx = Caller;

    fn root(&self, ctx: &Caller, export: &[u8], root: &mut Handle, attr: &mut Stat) -> CallResult {
        let e = self.by_name(export).ok_or(errno(ENOENT))?;
        self.unix.run_as(ctx, || {
            let r = e.root().map_err(errno)?;
            describe(e.id(), &r, root, attr)
        })
    }

    fn lookup(
        &self,
        ctx: &Caller,
        dir: Handle,
        n: &[u8],
        found: &mut Handle,
        attr: &mut Stat,
    ) -> CallResult {
        let n = name(n)?;
        let (e, fh) = self.export_of(&dir)?;
        self.unix.run_as(ctx, || {
            let o = e.resolve(fh).map_err(errno)?.lookup(n).map_err(errno)?;
            describe(e.id(), &o, found, attr)
        })
    }

    fn getattr(&self, ctx: &Caller, h: Handle, attr: &mut Stat) -> CallResult {
        self.on(ctx, &h, |o| {
            *attr = wire_stat(&o.stat().map_err(errno)?);
            Ok(0)
        })
    }

    fn setattr(&self, ctx: &Caller, h: Handle, set: SetAttr, attr: &mut Stat) -> CallResult {
        if !set.is_valid() {
            return Err(errno(EINVAL));
        }
        // The shim's bits are zoidfs's.
        const _: () = assert!(setattr::MTIME_NOW == 1 << 7 && setattr::KNOWN == 0xff);
        let s = vfs::SetAttr {
            valid: set.valid,
            mode: set.mode,
            uid: set.uid,
            gid: set.gid,
            size: set.size,
            atime_sec: set.atime_sec,
            mtime_sec: set.mtime_sec,
            atime_nsec: set.atime_nsec,
            mtime_nsec: set.mtime_nsec,
        };
        self.on(ctx, &h, |o| {
            o.setattr(&s).map_err(errno)?;
            *attr = wire_stat(&o.stat().map_err(errno)?);
            Ok(0)
        })
    }

    fn create(
        &self,
        ctx: &Caller,
        dir: Handle,
        n: &[u8],
        mode: u32,
        excl: bool,
        made: &mut Handle,
        attr: &mut Stat,
    ) -> CallResult {
        let what = if excl { Make::FileExcl } else { Make::File };
        self.make(ctx, &dir, n, mode, what, made, attr)
    }

    fn mkdir(
        &self,
        ctx: &Caller,
        dir: Handle,
        n: &[u8],
        mode: u32,
        made: &mut Handle,
        attr: &mut Stat,
    ) -> CallResult {
        self.make(ctx, &dir, n, mode, Make::Dir, made, attr)
    }

    fn symlink(
        &self,
        ctx: &Caller,
        dir: Handle,
        n: &[u8],
        target: &[u8],
        made: &mut Handle,
        attr: &mut Stat,
    ) -> CallResult {
        let target = CPath::target(target).map_err(errno)?;
        self.make(ctx, &dir, n, 0o777, Make::Symlink(&target), made, attr)
    }

    fn link(&self, ctx: &Caller, h: Handle, dir: Handle, n: &[u8], attr: &mut Stat) -> CallResult {
        let n = name(n)?;
        self.on_pair(ctx, &h, &dir, |o, d| {
            o.link(d, n).map_err(errno)?;
            *attr = wire_stat(&o.stat().map_err(errno)?);
            Ok(0)
        })
    }

    fn remove(&self, ctx: &Caller, dir: Handle, n: &[u8], is_dir: bool) -> CallResult {
        let n = name(n)?;
        self.on(ctx, &dir, |d| {
            d.remove(n, is_dir).map_err(errno)?;
            Ok(0)
        })
    }

    fn rename(
        &self,
        ctx: &Caller,
        from_dir: Handle,
        from: &[u8],
        to_dir: Handle,
        to: &[u8],
        flags: u32,
    ) -> CallResult {
        if flags & !(rename::NOREPLACE | rename::EXCHANGE) != 0 {
            return Err(errno(EINVAL));
        }
        let (from, to) = (name(from)?, name(to)?);
        self.on_pair(ctx, &from_dir, &to_dir, |fd, td| {
            fd.rename(from, td, to, flags).map_err(errno)?;
            Ok(0)
        })
    }

    fn readlink(&self, ctx: &Caller, h: Handle, target: &mut [u8], _cap: u32) -> CallResult {
        self.on(ctx, &h, |o| Ok(o.readlink(target).map_err(errno)? as i64))
    }

    fn readdir(
        &self,
        ctx: &Caller,
        dir: Handle,
        cookie: i64,
        entries: &mut [u8],
        _cap: u32,
    ) -> CallResult {
        if cookie < 0 {
            return Err(errno(EINVAL));
        }
        self.on(ctx, &dir, |d| {
            let f = d.open(Access::List).map_err(errno)?;
            if cookie != 0 {
                f.llseek(cookie, bindings::SEEK_SET).map_err(errno)?;
            }
            // "." and ".." are the CN's own business (its VFS emits them);
            // a batch that held only those is followed by the next one, so
            // 0 bytes still means the end.
            loop {
                let n = f.getdents(entries).map_err(errno)?;
                if n == 0 {
                    return Ok(0);
                }
                let kept = drop_dots(entries, n)?;
                if kept > 0 {
                    return Ok(kept as i64);
                }
            }
        })
    }

    fn read(
        &self,
        ctx: &Caller,
        h: Handle,
        offset: i64,
        data: &mut [u8],
        _count: u32,
    ) -> CallResult {
        if offset < 0 {
            return Err(errno(EINVAL));
        }
        self.on(ctx, &h, |o| {
            let f = o.open(Access::Read).map_err(errno)?;
            let mut pos = offset;
            Ok(f.read(data, Some(&mut pos)).map_err(errno)? as i64)
        })
    }

    fn write(
        &self,
        ctx: &Caller,
        h: Handle,
        offset: i64,
        data: &[u8],
        sync: bool,
        attr: &mut Stat,
        verf: &mut u64,
    ) -> CallResult {
        *verf = self.verifier;
        // `APPEND` (-1): at the end of the file, as O_APPEND.
        let access = match offset {
            APPEND => Access::Append,
            0.. => Access::Write,
            _ => return Err(errno(EINVAL)),
        };
        self.on(ctx, &h, |o| {
            let f = o.open(access).map_err(errno)?;
            let mut pos = offset.max(0);
            let n = f.write(data, Some(&mut pos)).map_err(errno)?;
            // O_SYNC or O_DSYNC on the CN (one flag: the stronger sync).
            if sync {
                f.fsync().map_err(errno)?;
            }
            *attr = wire_stat(&o.stat().map_err(errno)?);
            Ok(n as i64)
        })
    }

    fn commit(&self, ctx: &Caller, h: Handle, datasync: bool, verf: &mut u64) -> CallResult {
        *verf = self.verifier;
        let delay = self.commit_delay_ms.load(Relaxed);
        if delay > 0 {
            fsleep(Delta::from_millis(delay.into()));
        }
        self.on(ctx, &h, |o| {
            let f = o.open(Access::Commit).map_err(errno)?;
            f.sync(datasync).map_err(errno)?;
            Ok(0)
        })
    }

    fn open(&self, ctx: &Caller, h: Handle, ino: u64) -> CallResult {
        // Only handles of a live export are tracked.
        self.export_of(&h)?;
        self.relaxed.open(ctx, &h, ino)
    }

    fn close(&self, ctx: &Caller, h: Handle) -> CallResult {
        self.relaxed.close(ctx.node, &h)
    }

    fn recalled(&self, ctx: &Caller, h: Handle, grant: u32) -> CallResult {
        self.relaxed.recalled(ctx.node, &h, grant)
    }

    fn mknod(
        &self,
        ctx: &Caller,
        dir: Handle,
        n: &[u8],
        mode: u32,
        rdev: u64,
        made: &mut Handle,
        attr: &mut Stat,
    ) -> CallResult {
        let rdev = u32::try_from(rdev).map_err(|_| errno(EINVAL))?;
        if !node::is_valid(mode) {
            return Err(errno(EINVAL));
        }
        let what = Make::Node {
            kind: mode & node::TYPE_MASK,
            rdev,
        };
        self.make(ctx, &dir, n, mode, what, made, attr)
    }

    fn getxattr(
        &self,
        ctx: &Caller,
        h: Handle,
        n: &[u8],
        value: &mut [u8],
        _cap: u32,
    ) -> CallResult {
        let mut buf = [0u8; xattr::MAX_NAME + 1];
        let n = xattr_name(n, &mut buf)?;
        self.on(ctx, &h, |o| Ok(o.getxattr(n, value).map_err(errno)? as i64))
    }

    fn setxattr(&self, ctx: &Caller, h: Handle, n: &[u8], value: &[u8], flags: u32) -> CallResult {
        let mut buf = [0u8; xattr::MAX_NAME + 1];
        let n = xattr_name(n, &mut buf)?;
        if flags & !(xattr::CREATE | xattr::REPLACE) != 0 {
            return Err(errno(EINVAL));
        }
        if value.len() > xattr::MAX_VALUE {
            return Err(errno(E2BIG));
        }
        self.on(ctx, &h, |o| {
            o.setxattr(n, value, flags).map_err(errno)?;
            Ok(0)
        })
    }

    fn listxattr(&self, ctx: &Caller, h: Handle, names: &mut [u8], cap: u32) -> CallResult {
        // The whole list, then the forwarded names alone: their length
        // decides ERANGE, not the whole list's.
        let mut all =
            KVVec::from_elem(0u8, xattr::MAX_LIST, GFP_KERNEL).map_err(|_| errno(ENOMEM))?;
        // A whole list over XATTR_LIST_MAX: E2BIG, as listxattr(2) says
        // (ERANGE would ask for a larger buffer the caller cannot give).
        let n = self.on(ctx, &h, |o| match o.listxattr(&mut all) {
            Ok(n) => Ok(n as i64),
            Err(e) if e == ERANGE => Err(errno(E2BIG)),
            Err(e) => Err(errno(e)),
        })? as usize;
        let kept = xattr::filter_list(&mut all, n).ok_or(errno(EIO))?;
        if cap != 0 {
            names
                .get_mut(..kept)
                .ok_or(errno(ERANGE))?
                .copy_from_slice(&all[..kept]);
        }
        Ok(kept as i64)
    }

    fn removexattr(&self, ctx: &Caller, h: Handle, n: &[u8]) -> CallResult {
        let mut buf = [0u8; xattr::MAX_NAME + 1];
        let n = xattr_name(n, &mut buf)?;
        self.on(ctx, &h, |o| {
            o.removexattr(n).map_err(errno)?;
            Ok(0)
        })
    }

    fn statfs(&self, ctx: &Caller, h: Handle, st: &mut StatFs) -> CallResult {
        self.on(ctx, &h, |o| {
            let s = o.statfs().map_err(errno)?;
            *st = StatFs {
                kind: s.kind,
                bsize: s.bsize,
                frsize: s.frsize,
                blocks: s.blocks,
                bfree: s.bfree,
                bavail: s.bavail,
                files: s.files,
                ffree: s.ffree,
                namelen: s.namelen,
            };
            Ok(0)
        })
    }
}

impl Zoidfs {
    /// create, mkdir, symlink, mknod: `n` in `dir`, described into the
    /// reply.
    #[allow(clippy::too_many_arguments)]
    fn make(
        &self,
        ctx: &Caller,
        dir: &Handle,
        n: &[u8],
        mode: u32,
        what: Make<'_>,
        made: &mut Handle,
        attr: &mut Stat,
    ) -> CallResult {
        let n = name(n)?;
        let (e, fh) = self.export_of(dir)?;
        self.unix.run_as(ctx, || {
            let d = e.resolve(fh).map_err(errno)?;
            let o = d.create(n, mode, what).map_err(errno)?;
            describe(e.id(), &o, made, attr)
        })
    }
}

declared_plugin!(Zoidfs, zoidfs, {
    fn node_gone(&self, node: u16) {
        self.relaxed.node_gone(node);
    }
});
