// SPDX-License-Identifier: GPL-2.0

//! The `zoidfs` plug-in's ION side: the operations `fs/zoidfs` forwards,
//! on stateless handles, run by ION workers through the kernel VFS on the
//! `unix` plug-in's export, with the caller's mapped credentials (the same
//! export, `idmap` and `root_squash`).
//!
//! A handle is `[EXPORT_TAG][exportfs file handle]`: self-contained, so it
//! stays valid across calls, CN restarts and an ION that reloads zoid; one
//! that no longer names an object at or below the export's root fails with
//! `ESTALE` (see `rust/zoid_kernel/shim/vfs_obj.c`).  Every call opens what
//! it needs and closes it again (no per-CN state): read and write open the
//! file for the call.

use crate::plugin::{declared_plugin, Caller};
use crate::unix_plugin::{wire_stat, Unix};
use crate::zoid_kernel::vfs::{self, CPath, Export, Make, Name, Obj};
use crate::zoid_proto::zoid::plugin::CallResult;
use crate::zoid_proto::zoid::plugins::unix::{Dirent, Stat};
use crate::zoid_proto::zoid::plugins::zoidfs::{
    self, rename, setattr, Handle, SetAttr, StatFs, MAX_HANDLE,
};
use kernel::bindings;
use kernel::prelude::*;
use kernel::sync::Arc;

/// First byte of every handle: the export it belongs to (the one export
/// there is today).
const EXPORT_TAG: u8 = 1;

/// The `zoidfs` plug-in.
pub(crate) struct Zoidfs {
    /// Whose export, identity mapping and squashing apply.
    pub(crate) unix: Arc<Unix>,
}

fn errno(e: Error) -> i32 {
    -e.to_errno()
}

/// The object `h` names in export `e`.
fn resolve(e: &Export, h: &Handle) -> core::result::Result<Obj, i32> {
    match h.as_bytes().split_first() {
        Some((&EXPORT_TAG, fh)) => e.resolve(fh).map_err(errno),
        _ => Err(errno(ESTALE)),
    }
}

/// `o`'s handle and attributes into the reply.
fn describe(o: &Obj, h: &mut Handle, attr: &mut Stat) -> CallResult {
    let mut buf = [0u8; MAX_HANDLE];
    buf[0] = EXPORT_TAG;
    let n = o.file_handle(&mut buf[1..]).map_err(errno)?;
    *h = Handle::new(&buf[..1 + n]).ok_or(errno(EOVERFLOW))?;
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

impl zoidfs::Server for Zoidfs {
    type Ctx = Caller;

    fn root(&self, ctx: &Caller, export: &[u8], root: &mut Handle, attr: &mut Stat) -> CallResult {
        if !export.is_empty() {
            return Err(errno(ENOENT));
        }
        self.unix.as_caller(ctx, |e| {
            let r = e.root().map_err(errno)?;
            describe(&r, root, attr)
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
        self.unix.as_caller(ctx, |e| {
            let o = resolve(e, &dir)?.lookup(n).map_err(errno)?;
            describe(&o, found, attr)
        })
    }

    fn getattr(&self, ctx: &Caller, h: Handle, attr: &mut Stat) -> CallResult {
        self.unix.as_caller(ctx, |e| {
            *attr = wire_stat(&resolve(e, &h)?.stat().map_err(errno)?);
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
        self.unix.as_caller(ctx, |e| {
            let o = resolve(e, &h)?;
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
        let n = name(n)?;
        let what = if excl { Make::FileExcl } else { Make::File };
        self.unix.as_caller(ctx, |e| {
            let o = resolve(e, &dir)?.create(n, mode, what).map_err(errno)?;
            describe(&o, made, attr)
        })
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
        let n = name(n)?;
        self.unix.as_caller(ctx, |e| {
            let o = resolve(e, &dir)?
                .create(n, mode, Make::Dir)
                .map_err(errno)?;
            describe(&o, made, attr)
        })
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
        let n = name(n)?;
        let target = CPath::target(target).map_err(errno)?;
        self.unix.as_caller(ctx, |e| {
            let d = resolve(e, &dir)?;
            let o = d.create(n, 0o777, Make::Symlink(&target)).map_err(errno)?;
            describe(&o, made, attr)
        })
    }

    fn link(&self, ctx: &Caller, h: Handle, dir: Handle, n: &[u8], attr: &mut Stat) -> CallResult {
        let n = name(n)?;
        self.unix.as_caller(ctx, |e| {
            let o = resolve(e, &h)?;
            o.link(&resolve(e, &dir)?, n).map_err(errno)?;
            *attr = wire_stat(&o.stat().map_err(errno)?);
            Ok(0)
        })
    }

    fn remove(&self, ctx: &Caller, dir: Handle, n: &[u8], is_dir: bool) -> CallResult {
        let n = name(n)?;
        self.unix.as_caller(ctx, |e| {
            resolve(e, &dir)?.remove(n, is_dir).map_err(errno)?;
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
        self.unix.as_caller(ctx, |e| {
            let (fd, td) = (resolve(e, &from_dir)?, resolve(e, &to_dir)?);
            fd.rename(from, &td, to, flags).map_err(errno)?;
            Ok(0)
        })
    }

    fn readlink(&self, ctx: &Caller, h: Handle, target: &mut [u8], _cap: u32) -> CallResult {
        self.unix.as_caller(ctx, |e| {
            let n = resolve(e, &h)?.readlink(target).map_err(errno)?;
            Ok(n as i64)
        })
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
        self.unix.as_caller(ctx, |e| {
            let f = resolve(e, &dir)?
                .open(bindings::O_RDONLY | bindings::O_DIRECTORY)
                .map_err(errno)?;
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
        self.unix.as_caller(ctx, |e| {
            let f = resolve(e, &h)?.open(bindings::O_RDONLY).map_err(errno)?;
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
    ) -> CallResult {
        if offset < 0 {
            return Err(errno(EINVAL));
        }
        self.unix.as_caller(ctx, |e| {
            let o = resolve(e, &h)?;
            let f = o.open(bindings::O_WRONLY).map_err(errno)?;
            let mut pos = offset;
            let n = f.write(data, Some(&mut pos)).map_err(errno)?;
            if sync {
                f.fsync().map_err(errno)?;
            }
            *attr = wire_stat(&o.stat().map_err(errno)?);
            Ok(n as i64)
        })
    }

    fn commit(&self, ctx: &Caller, h: Handle, _datasync: bool) -> CallResult {
        self.unix.as_caller(ctx, |e| {
            let f = resolve(e, &h)?.open(bindings::O_RDONLY).map_err(errno)?;
            f.fsync().map_err(errno)?;
            Ok(0)
        })
    }

    fn statfs(&self, ctx: &Caller, h: Handle, st: &mut StatFs) -> CallResult {
        self.unix.as_caller(ctx, |e| {
            let s = resolve(e, &h)?.statfs().map_err(errno)?;
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

declared_plugin!(Zoidfs, zoidfs, {});
