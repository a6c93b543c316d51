// SPDX-License-Identifier: GPL-2.0

//! Driver of the `zoid_dispatch` fuzz target: zoid messages through
//! `split_call` and the `ztest` / `unix` / `zoidfs` dispatchers, replies
//! through the client stubs.
//!
//! Every call a dispatcher accepts is replayed through the matching client
//! stub with the values the server received: the stub must encode exactly
//! the request's argument bytes (the encoding is canonical), decode the
//! dispatcher's reply, and return the server's result and out values
//! without writing past the bytes the reply carried.

use std::cell::{Cell, RefCell};
use zoid_proto::zoid::errno;
use zoid_proto::zoid::f2cn;
use zoid_proto::zoid::jobs;
use zoid_proto::zoid::marshal::{Decoder, Encoder, MarshalError, Wire};
use zoid_proto::zoid::plugin::{
    decode_reply_args, encode_args, measure_args, out_len, CallError, CallResult, DispatchError,
    Reply, Transport,
};
use zoid_proto::zoid::plugins::unix::{self, Stat};
use zoid_proto::zoid::plugins::zoidfs::{self, Handle, SetAttr, StatFs, MAX_HANDLE};
use zoid_proto::zoid::plugins::ztest;
use zoid_proto::zoid::wire::{
    self, split_call, AttachReply, AttachRequest, CallHeader, MsgKind, FLAGS_KNOWN, FLAG_GROUPS,
    HEADER_LEN, MAX_GROUPS,
};

/// Record control bit: make the header valid (version, kind, known flags,
/// errno 0, groups count and `arg_len` matching the record).
pub const ZCTRL_FIX: u8 = 0x01;
/// Record control bit: make the message a `Call`.
pub const ZCTRL_CALL: u8 = 0x02;
/// Record control bit: address `ztest` (function id modulo 16).
pub const ZCTRL_ZTEST: u8 = 0x04;
/// Record control bit: address `unix` (function id modulo 32).
pub const ZCTRL_UNIX: u8 = 0x08;
/// Record control bit: address `zoidfs` (function id modulo 32), unless
/// `ZCTRL_ZTEST` or `ZCTRL_UNIX` is set too.
pub const ZCTRL_ZOIDFS: u8 = 0x10;
/// Record control bit: the record is a reply for the client stub picked by
/// its first byte (the rest are the reply's arguments).
pub const ZCTRL_CLIENT: u8 = 0x40;
/// Record control bit: restart with the record's first byte as the new
/// config byte.
pub const ZCTRL_RESTART: u8 = 0x80;

/// Reply buffer sizes, picked by the config byte's low three bits.
pub const REPLY_SIZES: [usize; 8] = [0, 8, 12, 24, 64, 300, 4096, 70_000];
/// Largest message taken from one record.
pub const MAX_MSG: usize = 65_535;
/// Byte the replayed stubs' out buffers are filled with before the call.
const CANARY: u8 = 0xee;
/// Extra bytes after the requested size in the replayed stubs' buffers.
const SLACK: usize = 8;

/// What the driver saw (lets tests check it is not vacuous).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoidStats {
    /// Records in the input.
    pub records: usize,
    /// Messages `split_call` accepted.
    pub split_ok: usize,
    /// Messages `split_call` rejected.
    pub split_errors: usize,
    /// Calls answered with results (errno 0).
    pub replies: usize,
    /// Calls answered with an errno from the server.
    pub errno_replies: usize,
    /// Calls `dispatch` refused (unknown function, malformed, too large).
    pub dispatch_errors: usize,
    /// Calls to neither plug-in.
    pub unknown_plugin: usize,
    /// Attach payloads that decoded.
    pub attach: usize,
    /// Client stubs run on fuzzed replies.
    pub client_calls: usize,
    /// Of those, the ones that succeeded.
    pub client_ok: usize,
    /// f2cn bodies that decoded.
    pub f2cn_ok: usize,
}

/// A client stub call, replayed after the server ran.
type Replay = Box<dyn FnOnce(&dyn Transport) -> Result<i64, CallError>>;

/// Per-call record of the dummy server.
#[derive(Default)]
pub struct Rec {
    calls: Cell<u32>,
    replay: RefCell<Option<Replay>>,
}

impl Rec {
    fn ran(&self, replay: Replay) {
        self.calls.set(self.calls.get() + 1);
        *self.replay.borrow_mut() = Some(replay);
    }
}

/// The dummy server's result for a seed: mostly `Ok(seed)`, sometimes an
/// errno (valid or not).
fn outcome(seed: i64) -> CallResult {
    if seed.rem_euclid(7) == 3 {
        Err(seed.wrapping_mul(31) as i32)
    } else {
        Ok(seed)
    }
}

/// Fills an out array with the pattern of `seed`.
fn fill(buf: &mut [u8], seed: i64) {
    buf.fill(seed as u8);
}

/// Length of a slice as a seed.
fn len(b: &[u8]) -> i64 {
    b.len() as i64
}

/// A `Stat` derived from a seed.
fn stat_of(seed: i64) -> Stat {
    let s = seed as u64;
    Stat {
        dev: s,
        ino: s.rotate_left(7),
        mode: s as u32,
        nlink: (s >> 3) as u32,
        uid: 1000,
        gid: 100,
        rdev: !s,
        size: seed,
        blksize: 4096,
        blocks: s >> 9,
        atime_sec: -seed,
        atime_nsec: 999_999_999,
        mtime_sec: seed.wrapping_mul(3),
        mtime_nsec: 1,
        ctime_sec: i64::MIN,
        ctime_nsec: 0,
    }
}

/// A buffer for a replayed stub's out array: `cap` bytes and some slack.
fn out_buf(cap: u32) -> Vec<u8> {
    vec![CANARY; cap as usize + SLACK]
}

/// Checks a replayed stub's out array: `sent` bytes of the pattern, the
/// rest untouched.
fn check_out(buf: &[u8], sent: usize, seed: i64) {
    assert!(
        buf[..sent].iter().all(|&b| b == seed as u8),
        "out array content"
    );
    assert!(
        buf[sent..].iter().all(|&b| b == CANARY),
        "stub wrote past the returned bytes"
    );
}

/// Bytes of a `len = ret` array the stub must have copied.
fn sent_ret(r: &Result<i64, CallError>, cap: u32) -> usize {
    match r {
        Ok(ret) => out_len(*ret, cap) as usize,
        Err(_) => 0,
    }
}

/// The fuzz server: results derived from the arguments, every call
/// recorded with its replay.
pub struct Dummy;

impl ztest::Server for Dummy {
    type Ctx = Rec;

    fn null(&self, ctx: &Rec) -> CallResult {
        ctx.ran(Box::new(|t| ztest::client::null(t)));
        Ok(0)
    }

    fn echo(&self, ctx: &Rec, data: &[u8], out_buf: &mut [u8], cap: u32) -> CallResult {
        assert_eq!(out_buf.len(), cap as usize);
        let seed = len(data) - i64::from(cap % 3);
        fill(out_buf, seed);
        let data = data.to_vec();
        ctx.ran(Box::new(move |t| {
            let mut buf = self::out_buf(cap);
            let r = ztest::client::echo(t, &data, &mut buf, cap);
            check_out(&buf, sent_ret(&r, cap), seed);
            r
        }));
        outcome(seed)
    }

    fn add(&self, ctx: &Rec, a: i64, b: i64, sum: &mut i64) -> CallResult {
        *sum = a.wrapping_add(b);
        let want = *sum;
        ctx.ran(Box::new(move |t| {
            let mut sum = 0;
            let r = ztest::client::add(t, a, b, &mut sum);
            if r.is_ok() {
                assert_eq!(sum, want);
            }
            r
        }));
        outcome(a)
    }

    fn swap(&self, ctx: &Rec, x: &mut u64) -> CallResult {
        let orig = *x;
        *x = x.rotate_left(32);
        let want = *x;
        ctx.ran(Box::new(move |t| {
            let mut x = orig;
            let r = ztest::client::swap(t, &mut x);
            if r.is_ok() {
                assert_eq!(x, want);
            }
            r
        }));
        outcome((orig & 0xff) as i64)
    }

    fn strlen(&self, ctx: &Rec, s: &[u8]) -> CallResult {
        let s = s.to_vec();
        let seed = len(&s);
        ctx.ran(Box::new(move |t| ztest::client::strlen(t, &s)));
        outcome(seed)
    }

    fn maybe(&self, ctx: &Rec, s: Option<&[u8]>, v: Option<u32>) -> CallResult {
        let s = s.map(<[u8]>::to_vec);
        let seed = s.as_deref().map_or(-1, len) + v.map_or(0, i64::from);
        ctx.ran(Box::new(move |t| ztest::client::maybe(t, s.as_deref(), v)));
        outcome(seed)
    }

    fn fill(&self, ctx: &Rec, byte: u8, buf: &mut [u8], n: u32) -> CallResult {
        assert_eq!(buf.len(), n as usize);
        let seed = i64::from(byte);
        fill(buf, seed);
        ctx.ran(Box::new(move |t| {
            let mut buf = out_buf(n);
            let r = ztest::client::fill(t, byte, &mut buf, n);
            check_out(&buf, if r.is_ok() { n as usize } else { 0 }, seed);
            r
        }));
        outcome(seed)
    }

    fn sleep_ms(&self, ctx: &Rec, ms: u32) -> CallResult {
        ctx.ran(Box::new(move |t| ztest::client::sleep_ms(t, ms)));
        outcome(i64::from(ms))
    }

    fn fail(&self, ctx: &Rec, errno: i32) -> CallResult {
        ctx.ran(Box::new(move |t| ztest::client::fail(t, errno)));
        Err(errno)
    }

    fn rendezvous(&self, ctx: &Rec, key: u32) -> CallResult {
        ctx.ran(Box::new(move |t| ztest::client::rendezvous(t, key)));
        outcome(i64::from(key))
    }
}

impl unix::Server for Dummy {
    type Ctx = Rec;

    fn open(&self, ctx: &Rec, path: &[u8], flags: u32, mode: u32) -> CallResult {
        let p = path.to_vec();
        ctx.ran(Box::new(move |t| unix::client::open(t, &p, flags, mode)));
        outcome(len(path) + i64::from(flags ^ mode))
    }

    fn openat(&self, ctx: &Rec, dirfd: i32, path: &[u8], flags: u32, mode: u32) -> CallResult {
        let p = path.to_vec();
        ctx.ran(Box::new(move |t| {
            unix::client::openat(t, dirfd, &p, flags, mode)
        }));
        outcome(i64::from(dirfd) + len(path))
    }

    fn close(&self, ctx: &Rec, fd: i32) -> CallResult {
        ctx.ran(Box::new(move |t| unix::client::close(t, fd)));
        outcome(i64::from(fd))
    }

    fn read(&self, ctx: &Rec, fd: i32, buf: &mut [u8], count: u32) -> CallResult {
        assert_eq!(buf.len(), count as usize);
        let seed = i64::from(fd);
        fill(buf, seed);
        ctx.ran(Box::new(move |t| {
            let mut buf = out_buf(count);
            let r = unix::client::read(t, fd, &mut buf, count);
            check_out(&buf, sent_ret(&r, count), seed);
            r
        }));
        outcome(seed)
    }

    fn write(&self, ctx: &Rec, fd: i32, buf: &[u8]) -> CallResult {
        let b = buf.to_vec();
        ctx.ran(Box::new(move |t| unix::client::write(t, fd, &b)));
        outcome(len(buf) - i64::from(fd))
    }

    fn pread(&self, ctx: &Rec, fd: i32, buf: &mut [u8], count: u32, offset: i64) -> CallResult {
        assert_eq!(buf.len(), count as usize);
        let seed = offset.wrapping_sub(i64::from(fd));
        fill(buf, seed);
        ctx.ran(Box::new(move |t| {
            let mut buf = out_buf(count);
            let r = unix::client::pread(t, fd, &mut buf, count, offset);
            check_out(&buf, sent_ret(&r, count), seed);
            r
        }));
        outcome(seed)
    }

    fn pwrite(&self, ctx: &Rec, fd: i32, buf: &[u8], offset: i64) -> CallResult {
        let b = buf.to_vec();
        ctx.ran(Box::new(move |t| unix::client::pwrite(t, fd, &b, offset)));
        outcome(offset)
    }

    fn lseek(&self, ctx: &Rec, fd: i32, offset: i64, whence: u32) -> CallResult {
        ctx.ran(Box::new(move |t| {
            unix::client::lseek(t, fd, offset, whence)
        }));
        outcome(offset ^ i64::from(whence) ^ i64::from(fd))
    }

    fn fstat(&self, ctx: &Rec, fd: i32, st: &mut Stat) -> CallResult {
        *st = stat_of(i64::from(fd));
        let want = *st;
        ctx.ran(Box::new(move |t| {
            let mut st = Stat::default();
            let r = unix::client::fstat(t, fd, &mut st);
            if r.is_ok() {
                assert_eq!(st, want);
            }
            r
        }));
        outcome(i64::from(fd))
    }

    fn stat(&self, ctx: &Rec, path: &[u8], st: &mut Stat) -> CallResult {
        *st = stat_of(len(path));
        let (want, p) = (*st, path.to_vec());
        ctx.ran(Box::new(move |t| {
            let mut st = Stat::default();
            let r = unix::client::stat(t, &p, &mut st);
            if r.is_ok() {
                assert_eq!(st, want);
            }
            r
        }));
        outcome(len(path))
    }

    fn lstat(&self, ctx: &Rec, path: &[u8], st: &mut Stat) -> CallResult {
        *st = stat_of(-len(path));
        let (want, p) = (*st, path.to_vec());
        ctx.ran(Box::new(move |t| {
            let mut st = Stat::default();
            let r = unix::client::lstat(t, &p, &mut st);
            if r.is_ok() {
                assert_eq!(st, want);
            }
            r
        }));
        outcome(len(path) + 1)
    }

    fn fsync(&self, ctx: &Rec, fd: i32) -> CallResult {
        ctx.ran(Box::new(move |t| unix::client::fsync(t, fd)));
        outcome(i64::from(fd))
    }

    fn ftruncate(&self, ctx: &Rec, fd: i32, length: i64) -> CallResult {
        ctx.ran(Box::new(move |t| unix::client::ftruncate(t, fd, length)));
        outcome(length)
    }

    fn mkdir(&self, ctx: &Rec, path: &[u8], mode: u32) -> CallResult {
        let p = path.to_vec();
        ctx.ran(Box::new(move |t| unix::client::mkdir(t, &p, mode)));
        outcome(i64::from(mode))
    }

    fn rmdir(&self, ctx: &Rec, path: &[u8]) -> CallResult {
        let p = path.to_vec();
        ctx.ran(Box::new(move |t| unix::client::rmdir(t, &p)));
        outcome(len(path))
    }

    fn unlink(&self, ctx: &Rec, path: &[u8]) -> CallResult {
        let p = path.to_vec();
        ctx.ran(Box::new(move |t| unix::client::unlink(t, &p)));
        outcome(len(path) * 2)
    }

    fn rename(&self, ctx: &Rec, from: &[u8], to: &[u8]) -> CallResult {
        let (f, o) = (from.to_vec(), to.to_vec());
        ctx.ran(Box::new(move |t| unix::client::rename(t, &f, &o)));
        outcome(len(from) - len(to))
    }

    fn readlink(&self, ctx: &Rec, path: &[u8], buf: &mut [u8], size: u32) -> CallResult {
        assert_eq!(buf.len(), size as usize);
        let seed = len(path) * 3 - i64::from(size);
        fill(buf, seed);
        let p = path.to_vec();
        ctx.ran(Box::new(move |t| {
            let mut buf = out_buf(size);
            let r = unix::client::readlink(t, &p, &mut buf, size);
            check_out(&buf, sent_ret(&r, size), seed);
            r
        }));
        outcome(seed)
    }

    fn symlink(&self, ctx: &Rec, target: &[u8], linkpath: &[u8]) -> CallResult {
        let (a, b) = (target.to_vec(), linkpath.to_vec());
        ctx.ran(Box::new(move |t| unix::client::symlink(t, &a, &b)));
        outcome(len(target))
    }

    fn getdents(&self, ctx: &Rec, fd: i32, buf: &mut [u8], count: u32) -> CallResult {
        assert_eq!(buf.len(), count as usize);
        let seed = i64::from(fd) + 1;
        fill(buf, seed);
        ctx.ran(Box::new(move |t| {
            let mut buf = out_buf(count);
            let r = unix::client::getdents(t, fd, &mut buf, count);
            check_out(&buf, sent_ret(&r, count), seed);
            r
        }));
        outcome(seed)
    }

    fn readv(&self, ctx: &Rec, fd: i32, buf: &mut [u8], count: u32) -> CallResult {
        assert_eq!(buf.len(), count as usize);
        let seed = i64::from(fd) - 1;
        fill(buf, seed);
        ctx.ran(Box::new(move |t| {
            let mut buf = out_buf(count);
            let r = unix::client::readv(t, fd, &mut buf, count);
            check_out(&buf, sent_ret(&r, count), seed);
            r
        }));
        outcome(seed)
    }

    fn writev(&self, ctx: &Rec, fd: i32, buf: &[u8]) -> CallResult {
        let b = buf.to_vec();
        ctx.ran(Box::new(move |t| unix::client::writev(t, fd, &b)));
        outcome(len(buf) + i64::from(fd))
    }
}

/// A handle derived from a seed (1 to [`MAX_HANDLE`] bytes).
fn handle_of(seed: i64) -> Handle {
    let n = (seed.unsigned_abs() as usize % MAX_HANDLE) + 1;
    let bytes: Vec<u8> = (0..n).map(|i| (seed as u8).wrapping_add(i as u8)).collect();
    Handle::new(&bytes).unwrap()
}

/// A seed from a handle.
fn seed_of(h: &Handle) -> i64 {
    h.as_bytes().iter().map(|&b| i64::from(b)).sum::<i64>() + h.as_bytes().len() as i64
}

/// Replays a stub whose outs are a handle and a `Stat`, checking both.
macro_rules! made {
    ($ctx:ident, $seed:expr, $made:ident, $attr:ident, |$t:ident, $h:ident, $st:ident| $call:expr) => {{
        let seed: i64 = $seed;
        *$made = handle_of(seed);
        *$attr = stat_of(seed);
        let (want_h, want_st) = (*$made, *$attr);
        $ctx.ran(Box::new(move |$t| {
            let (mut $h, mut $st) = (Handle::default(), Stat::default());
            let r = $call;
            if r.is_ok() {
                assert_eq!(($h, $st), (want_h, want_st));
            }
            r
        }));
        outcome(seed)
    }};
}

impl zoidfs::Server for Dummy {
    type Ctx = Rec;

    fn root(&self, ctx: &Rec, export: &[u8], root: &mut Handle, attr: &mut Stat) -> CallResult {
        let e = export.to_vec();
        made!(ctx, len(export), root, attr, |t, h, st| {
            zoidfs::client::root(t, &e, &mut h, &mut st)
        })
    }

    fn lookup(
        &self,
        ctx: &Rec,
        dir: Handle,
        name: &[u8],
        found: &mut Handle,
        attr: &mut Stat,
    ) -> CallResult {
        let n = name.to_vec();
        made!(ctx, seed_of(&dir) + len(name), found, attr, |t, h, st| {
            zoidfs::client::lookup(t, dir, &n, &mut h, &mut st)
        })
    }

    fn getattr(&self, ctx: &Rec, h: Handle, attr: &mut Stat) -> CallResult {
        let seed = seed_of(&h);
        *attr = stat_of(seed);
        let want = *attr;
        ctx.ran(Box::new(move |t| {
            let mut st = Stat::default();
            let r = zoidfs::client::getattr(t, h, &mut st);
            if r.is_ok() {
                assert_eq!(st, want);
            }
            r
        }));
        outcome(seed)
    }

    fn setattr(&self, ctx: &Rec, h: Handle, set: SetAttr, attr: &mut Stat) -> CallResult {
        let seed = seed_of(&h) ^ i64::from(set.valid);
        *attr = stat_of(seed);
        let want = *attr;
        ctx.ran(Box::new(move |t| {
            let mut st = Stat::default();
            let r = zoidfs::client::setattr(t, h, set, &mut st);
            if r.is_ok() {
                assert_eq!(st, want);
            }
            r
        }));
        outcome(seed)
    }

    fn create(
        &self,
        ctx: &Rec,
        dir: Handle,
        name: &[u8],
        mode: u32,
        excl: bool,
        made: &mut Handle,
        attr: &mut Stat,
    ) -> CallResult {
        let n = name.to_vec();
        made!(
            ctx,
            seed_of(&dir) + i64::from(mode),
            made,
            attr,
            |t, h, st| { zoidfs::client::create(t, dir, &n, mode, excl, &mut h, &mut st) }
        )
    }

    fn mkdir(
        &self,
        ctx: &Rec,
        dir: Handle,
        name: &[u8],
        mode: u32,
        made: &mut Handle,
        attr: &mut Stat,
    ) -> CallResult {
        let n = name.to_vec();
        made!(
            ctx,
            seed_of(&dir) - i64::from(mode),
            made,
            attr,
            |t, h, st| { zoidfs::client::mkdir(t, dir, &n, mode, &mut h, &mut st) }
        )
    }

    fn symlink(
        &self,
        ctx: &Rec,
        dir: Handle,
        name: &[u8],
        target: &[u8],
        made: &mut Handle,
        attr: &mut Stat,
    ) -> CallResult {
        let (n, g) = (name.to_vec(), target.to_vec());
        made!(ctx, seed_of(&dir) + len(target), made, attr, |t, h, st| {
            zoidfs::client::symlink(t, dir, &n, &g, &mut h, &mut st)
        })
    }

    fn link(&self, ctx: &Rec, h: Handle, dir: Handle, name: &[u8], attr: &mut Stat) -> CallResult {
        let seed = seed_of(&h) * 2 + seed_of(&dir);
        *attr = stat_of(seed);
        let (want, n) = (*attr, name.to_vec());
        ctx.ran(Box::new(move |t| {
            let mut st = Stat::default();
            let r = zoidfs::client::link(t, h, dir, &n, &mut st);
            if r.is_ok() {
                assert_eq!(st, want);
            }
            r
        }));
        outcome(seed)
    }

    fn remove(&self, ctx: &Rec, dir: Handle, name: &[u8], is_dir: bool) -> CallResult {
        let n = name.to_vec();
        ctx.ran(Box::new(move |t| {
            zoidfs::client::remove(t, dir, &n, is_dir)
        }));
        outcome(seed_of(&dir) + i64::from(is_dir))
    }

    fn rename(
        &self,
        ctx: &Rec,
        from_dir: Handle,
        from: &[u8],
        to_dir: Handle,
        to: &[u8],
        flags: u32,
    ) -> CallResult {
        let (f, o) = (from.to_vec(), to.to_vec());
        ctx.ran(Box::new(move |t| {
            zoidfs::client::rename(t, from_dir, &f, to_dir, &o, flags)
        }));
        outcome(seed_of(&from_dir) - seed_of(&to_dir) + i64::from(flags))
    }

    fn readlink(&self, ctx: &Rec, h: Handle, target: &mut [u8], cap: u32) -> CallResult {
        assert_eq!(target.len(), cap as usize);
        let seed = seed_of(&h) - i64::from(cap);
        fill(target, seed);
        ctx.ran(Box::new(move |t| {
            let mut buf = out_buf(cap);
            let r = zoidfs::client::readlink(t, h, &mut buf, cap);
            check_out(&buf, sent_ret(&r, cap), seed);
            r
        }));
        outcome(seed)
    }

    fn readdir(
        &self,
        ctx: &Rec,
        dir: Handle,
        cookie: i64,
        entries: &mut [u8],
        cap: u32,
    ) -> CallResult {
        assert_eq!(entries.len(), cap as usize);
        let seed = seed_of(&dir) ^ cookie;
        fill(entries, seed);
        ctx.ran(Box::new(move |t| {
            let mut buf = out_buf(cap);
            let r = zoidfs::client::readdir(t, dir, cookie, &mut buf, cap);
            check_out(&buf, sent_ret(&r, cap), seed);
            r
        }));
        outcome(seed)
    }

    fn read(&self, ctx: &Rec, h: Handle, offset: i64, data: &mut [u8], count: u32) -> CallResult {
        assert_eq!(data.len(), count as usize);
        let seed = seed_of(&h).wrapping_add(offset);
        fill(data, seed);
        ctx.ran(Box::new(move |t| {
            let mut buf = out_buf(count);
            let r = zoidfs::client::read(t, h, offset, &mut buf, count);
            check_out(&buf, sent_ret(&r, count), seed);
            r
        }));
        outcome(seed)
    }

    fn write(
        &self,
        ctx: &Rec,
        h: Handle,
        offset: i64,
        data: &[u8],
        sync: bool,
        attr: &mut Stat,
        verf: &mut u64,
    ) -> CallResult {
        let seed = seed_of(&h).wrapping_sub(offset) + len(data);
        *attr = stat_of(seed);
        *verf = seed as u64;
        let (want, d) = (*attr, data.to_vec());
        ctx.ran(Box::new(move |t| {
            let (mut st, mut v) = (Stat::default(), 0);
            let r = zoidfs::client::write(t, h, offset, &d, sync, &mut st, &mut v);
            if r.is_ok() {
                assert_eq!((st, v), (want, seed as u64));
            }
            r
        }));
        outcome(seed)
    }

    fn commit(&self, ctx: &Rec, h: Handle, datasync: bool, verf: &mut u64) -> CallResult {
        let seed = seed_of(&h) + i64::from(datasync);
        *verf = seed as u64;
        ctx.ran(Box::new(move |t| {
            let mut v = 0;
            let r = zoidfs::client::commit(t, h, datasync, &mut v);
            if r.is_ok() {
                assert_eq!(v, seed as u64);
            }
            r
        }));
        outcome(seed)
    }

    fn open(&self, ctx: &Rec, h: Handle, ino: u64) -> CallResult {
        ctx.ran(Box::new(move |t| zoidfs::client::open(t, h, ino)));
        outcome(seed_of(&h) ^ ino as i64)
    }

    fn close(&self, ctx: &Rec, h: Handle) -> CallResult {
        ctx.ran(Box::new(move |t| zoidfs::client::close(t, h)));
        outcome(seed_of(&h))
    }

    fn recalled(&self, ctx: &Rec, h: Handle, grant: u32) -> CallResult {
        ctx.ran(Box::new(move |t| zoidfs::client::recalled(t, h, grant)));
        outcome(seed_of(&h) + i64::from(grant))
    }

    fn mknod(
        &self,
        ctx: &Rec,
        dir: Handle,
        name: &[u8],
        mode: u32,
        rdev: u64,
        made: &mut Handle,
        attr: &mut Stat,
    ) -> CallResult {
        let n = name.to_vec();
        made!(
            ctx,
            seed_of(&dir) + i64::from(mode) - rdev as i64,
            made,
            attr,
            |t, h, st| { zoidfs::client::mknod(t, dir, &n, mode, rdev, &mut h, &mut st) }
        )
    }

    fn getxattr(
        &self,
        ctx: &Rec,
        h: Handle,
        name: &[u8],
        value: &mut [u8],
        cap: u32,
    ) -> CallResult {
        assert_eq!(value.len(), cap as usize);
        let seed = seed_of(&h) + len(name) - i64::from(cap);
        fill(value, seed);
        let n = name.to_vec();
        ctx.ran(Box::new(move |t| {
            let mut buf = out_buf(cap);
            let r = zoidfs::client::getxattr(t, h, &n, &mut buf, cap);
            check_out(&buf, sent_ret(&r, cap), seed);
            r
        }));
        outcome(seed)
    }

    fn setxattr(&self, ctx: &Rec, h: Handle, name: &[u8], value: &[u8], flags: u32) -> CallResult {
        let (n, v) = (name.to_vec(), value.to_vec());
        ctx.ran(Box::new(move |t| {
            zoidfs::client::setxattr(t, h, &n, &v, flags)
        }));
        outcome(seed_of(&h) + len(name) * 3 + len(value) + i64::from(flags))
    }

    fn listxattr(&self, ctx: &Rec, h: Handle, names: &mut [u8], cap: u32) -> CallResult {
        assert_eq!(names.len(), cap as usize);
        let seed = seed_of(&h) * 5 - i64::from(cap);
        fill(names, seed);
        ctx.ran(Box::new(move |t| {
            let mut buf = out_buf(cap);
            let r = zoidfs::client::listxattr(t, h, &mut buf, cap);
            check_out(&buf, sent_ret(&r, cap), seed);
            r
        }));
        outcome(seed)
    }

    fn removexattr(&self, ctx: &Rec, h: Handle, name: &[u8]) -> CallResult {
        let n = name.to_vec();
        ctx.ran(Box::new(move |t| zoidfs::client::removexattr(t, h, &n)));
        outcome(seed_of(&h) - len(name))
    }

    fn statfs(&self, ctx: &Rec, h: Handle, st: &mut StatFs) -> CallResult {
        let seed = seed_of(&h);
        let s = seed as u64;
        *st = StatFs {
            kind: s,
            bsize: 4096,
            frsize: 512,
            blocks: s << 3,
            bfree: s,
            bavail: s >> 1,
            files: !s,
            ffree: s ^ 0x55,
            namelen: 255,
        };
        let want = *st;
        ctx.ran(Box::new(move |t| {
            let mut got = StatFs::default();
            let r = zoidfs::client::statfs(t, h, &mut got);
            if r.is_ok() {
                assert_eq!(got, want);
            }
            r
        }));
        outcome(seed)
    }
}

/// Replays a call: checks the stub's request against the original and
/// hands it the dispatcher's reply.
struct ReplayTransport<'a> {
    plugin: u16,
    function: u16,
    request: &'a [u8],
    reply: &'a [u8],
    errno: i32,
}

impl Transport for ReplayTransport<'_> {
    fn call(
        &self,
        plugin: u16,
        function: u16,
        encode: &dyn Fn(&mut Encoder<'_>) -> Result<(), MarshalError>,
        decode: &mut dyn FnMut(&mut Decoder<'_>) -> Result<(), MarshalError>,
    ) -> Result<(), CallError> {
        assert_eq!((plugin, function), (self.plugin, self.function), "stub ids");
        let n = measure_args(encode).expect("stub cannot encode what dispatch accepted");
        let mut req = vec![0u8; n];
        assert_eq!(encode_args(encode, &mut req), Ok(n));
        assert_eq!(
            req, self.request,
            "stub's request differs from the original"
        );
        if self.errno != 0 {
            return Err(CallError::Errno(self.errno));
        }
        decode_reply_args(self.reply, decode)
    }
}

/// Hands fuzzed reply bytes to a stub.
struct FuzzReply<'a>(&'a [u8]);

impl Transport for FuzzReply<'_> {
    fn call(
        &self,
        _plugin: u16,
        _function: u16,
        encode: &dyn Fn(&mut Encoder<'_>) -> Result<(), MarshalError>,
        decode: &mut dyn FnMut(&mut Decoder<'_>) -> Result<(), MarshalError>,
    ) -> Result<(), CallError> {
        let n = measure_args(encode)?;
        let mut req = vec![0u8; n];
        encode_args(encode, &mut req)?;
        decode_reply_args(self.0, decode)
    }
}

/// Runs stub `which` (of every `ztest` and `unix` function) on fuzzed
/// reply arguments, checking that out arrays are not written past the
/// bytes the stub accepted.
fn client_stub(which: u8, reply: &[u8]) -> bool {
    let t = &FuzzReply(reply);
    let mut buf = [CANARY; 24];
    let mut st = Stat::default();
    let mut verf = 0u64;
    let mut x = 5u64;
    let mut sum = 0i64;
    let cap = 16u32;
    let mut h = Handle::default();
    let mut sfs = StatFs::default();
    let any = Handle::new(b"h").unwrap();
    let r = match which % 47 {
        0 => ztest::client::null(t),
        1 => ztest::client::echo(t, b"abc", &mut buf, cap),
        2 => ztest::client::add(t, 1, 2, &mut sum),
        3 => ztest::client::swap(t, &mut x),
        4 => ztest::client::strlen(t, b"abc"),
        5 => ztest::client::maybe(t, Some(b"x"), None),
        6 => ztest::client::fill(t, 7, &mut buf, cap),
        7 => ztest::client::sleep_ms(t, 1),
        8 => ztest::client::fail(t, 5),
        9 => unix::client::open(t, b"/f", 0, 0),
        10 => unix::client::openat(t, unix::AT_FDCWD, b"f", 0, 0),
        11 => unix::client::close(t, 3),
        12 => unix::client::read(t, 3, &mut buf, cap),
        13 => unix::client::write(t, 3, b"data"),
        14 => unix::client::pread(t, 3, &mut buf, cap, 9),
        15 => unix::client::pwrite(t, 3, b"data", 9),
        16 => unix::client::lseek(t, 3, 0, unix::SEEK_END),
        17 => unix::client::fstat(t, 3, &mut st),
        18 => unix::client::stat(t, b"/f", &mut st),
        19 => unix::client::lstat(t, b"/f", &mut st),
        20 => unix::client::fsync(t, 3),
        21 => unix::client::ftruncate(t, 3, 0),
        22 => unix::client::mkdir(t, b"/d", 0o755),
        23 => unix::client::rmdir(t, b"/d"),
        24 => unix::client::unlink(t, b"/f"),
        25 => unix::client::rename(t, b"/f", b"/g"),
        26 => unix::client::readlink(t, b"/l", &mut buf, cap),
        27 => unix::client::symlink(t, b"/f", b"/l"),
        28 => unix::client::getdents(t, 3, &mut buf, cap),
        29 => unix::client::readv(t, 3, &mut buf, cap),
        30 => unix::client::writev(t, 3, b"data"),
        31 => zoidfs::client::root(t, b"", &mut h, &mut st),
        32 => zoidfs::client::lookup(t, any, b"n", &mut h, &mut st),
        33 => zoidfs::client::getattr(t, any, &mut st),
        34 => zoidfs::client::setattr(t, any, SetAttr::default(), &mut st),
        35 => zoidfs::client::create(t, any, b"n", 0o644, true, &mut h, &mut st),
        36 => zoidfs::client::mkdir(t, any, b"n", 0o755, &mut h, &mut st),
        37 => zoidfs::client::symlink(t, any, b"n", b"t", &mut h, &mut st),
        38 => zoidfs::client::link(t, any, any, b"n", &mut st),
        39 => zoidfs::client::remove(t, any, b"n", false),
        40 => zoidfs::client::rename(t, any, b"a", any, b"b", 0),
        41 => zoidfs::client::readlink(t, any, &mut buf, cap),
        42 => zoidfs::client::readdir(t, any, 0, &mut buf, cap),
        43 => zoidfs::client::read(t, any, 0, &mut buf, cap),
        44 => zoidfs::client::write(t, any, 0, b"data", false, &mut st, &mut verf),
        45 => zoidfs::client::commit(t, any, false, &mut verf),
        _ => zoidfs::client::statfs(t, any, &mut sfs),
    };
    // A handle a stub accepted is a valid one.
    assert!(h == Handle::default() || !h.as_bytes().is_empty());
    assert!(
        buf[cap as usize..].iter().all(|&b| b == CANARY),
        "stub wrote past its count"
    );
    if let Err(e) = r {
        assert!(errno::is_valid(e.errno()), "{e:?}");
    }
    r.is_ok()
}

/// Makes a message's header valid as far as the record allows.
fn fix_up(ctrl: u8, msg: &mut [u8]) {
    if msg.len() < HEADER_LEN {
        return;
    }
    if ctrl & ZCTRL_FIX != 0 {
        msg[0] = wire::ZOID_WIRE_VERSION;
        msg[1] = msg[1] % 7 + 1;
        let mut flags = u16::from_be_bytes([msg[2], msg[3]]) & FLAGS_KNOWN;
        if msg.len() < HEADER_LEN + 4 {
            flags &= !FLAG_GROUPS;
        }
        msg[2..4].copy_from_slice(&flags.to_be_bytes());
        msg[28..32].fill(0);
        let mut block = 0;
        if flags & FLAG_GROUPS != 0 {
            let n = u32::from_be_bytes(msg[32..36].try_into().unwrap());
            let max = (msg.len() - HEADER_LEN - 4) / 4;
            let n = (n as usize).min(MAX_GROUPS).min(max);
            msg[32..36].copy_from_slice(&(n as u32).to_be_bytes());
            block = 4 + 4 * n;
        }
        let arg_len = (msg.len() - HEADER_LEN).saturating_sub(block) as u32;
        msg[24..28].copy_from_slice(&arg_len.to_be_bytes());
    }
    if ctrl & ZCTRL_CALL != 0 {
        msg[1] = MsgKind::Call as u8;
    }
    if ctrl & (ZCTRL_ZTEST | ZCTRL_UNIX | ZCTRL_ZOIDFS) != 0 {
        let (plugin, functions) = if ctrl & ZCTRL_ZTEST != 0 {
            (ztest::ID, 16)
        } else if ctrl & ZCTRL_UNIX != 0 {
            (unix::ID, 32)
        } else {
            (zoidfs::ID, 32)
        };
        msg[4..6].copy_from_slice(&plugin.to_be_bytes());
        let f = u16::from_be_bytes([msg[6], msg[7]]) % functions;
        msg[6..8].copy_from_slice(&f.to_be_bytes());
    }
}

/// Dispatches one call and checks the outcome.
fn call(stats: &mut ZoidStats, h: &CallHeader, args: &[u8], reply_size: usize) {
    let rec = Rec::default();
    let mut reply = vec![0u8; reply_size];
    let r = match h.plugin {
        ztest::ID => ztest::dispatch(&Dummy, &rec, h.function, args, &mut reply),
        unix::ID => unix::dispatch(&Dummy, &rec, h.function, args, &mut reply),
        zoidfs::ID => zoidfs::dispatch(&Dummy, &rec, h.function, args, &mut reply),
        _ => {
            stats.unknown_plugin += 1;
            return;
        }
    };
    let known = match h.plugin {
        ztest::ID => ztest::function_name(h.function).is_some(),
        unix::ID => unix::function_name(h.function).is_some(),
        _ => zoidfs::function_name(h.function).is_some(),
    };
    match r {
        Err(e) => {
            stats.dispatch_errors += 1;
            assert_eq!(rec.calls.get(), 0, "server ran for a refused call ({e:?})");
            assert_eq!(e == DispatchError::UnknownFunction, !known);
            assert!(errno::is_valid(e.errno()));
        }
        Ok(Reply { len, errno }) => {
            assert_eq!(rec.calls.get(), 1, "server calls");
            assert!(len <= reply.len(), "reply longer than its buffer");
            assert!(errno == 0 || (errno::is_valid(errno) && len == 0));
            if errno == 0 {
                stats.replies += 1;
                assert!(len >= 8);
            } else {
                stats.errno_replies += 1;
            }
            let replay = rec.replay.borrow_mut().take().expect("no replay recorded");
            let t = ReplayTransport {
                plugin: h.plugin,
                function: h.function,
                request: args,
                reply: &reply[..len],
                errno,
            };
            match replay(&t) {
                Ok(ret) => {
                    assert_eq!(errno, 0);
                    assert_eq!(reply[..8], ret.to_be_bytes());
                }
                Err(e) => assert_eq!(e, CallError::Errno(errno), "replayed call"),
            }
        }
    }
}

/// Checks one message.
fn message(stats: &mut ZoidStats, msg: &[u8], reply_size: usize) {
    let (h, groups, args) = match split_call(msg) {
        Ok(x) => x,
        Err(e) => {
            stats.split_errors += 1;
            assert!(errno::is_valid(e.errno()));
            return;
        }
    };
    stats.split_ok += 1;
    // An accepted header is canonical.
    let mut hdr = [0u8; HEADER_LEN];
    h.encode(&mut hdr);
    assert_eq!(hdr[..], msg[..HEADER_LEN], "re-encoded header differs");
    assert_eq!(args.len(), h.arg_len as usize);
    assert!(groups.len() <= MAX_GROUPS);
    assert_eq!(groups.is_empty(), groups.iter().next().is_none());
    // A non-empty groups block is canonical too (`encode_with_groups`
    // writes no block for no groups).
    if !groups.is_empty() {
        let gids: Vec<u32> = groups.iter().collect();
        let mut again = vec![0u8; msg.len()];
        let n = h.encode_with_groups(&gids, &mut again).unwrap();
        again[n..].copy_from_slice(args);
        assert_eq!(again, msg, "re-encoded groups differ");
    }
    match h.kind {
        MsgKind::Call => call(stats, &h, args, reply_size),
        MsgKind::Attach => {
            if let Ok(a) = AttachRequest::decode(args) {
                stats.attach += 1;
                // Reserved bytes are ignored on receipt, sent as zero.
                let mut want = args[..wire::ATTACH_REQUEST_LEN].to_vec();
                want[10..12].fill(0);
                assert_eq!(a.encode()[..], want[..]);
            }
        }
        MsgKind::AttachReply => {
            if let Ok(a) = AttachReply::decode(args) {
                stats.attach += 1;
                assert_eq!(a.encode()[..], args[..wire::ATTACH_REPLY_LEN]);
            }
        }
        MsgKind::ProcessExit | MsgKind::Cancel => {
            if let Ok(v) = wire::decode_u32_args(args) {
                assert_eq!(wire::encode_u32_args(v)[..], args[..]);
            }
        }
        MsgKind::Reply | MsgKind::Detach | MsgKind::FileAbort => {}
        MsgKind::FileBegin => {
            if let Ok(b) = f2cn::Begin::decode(args) {
                stats.f2cn_ok += 1;
                // Canonical: re-encoding gives the same bytes.
                let targets: Vec<u16> = b.targets().collect();
                let mut again = vec![0u8; args.len()];
                let mut e = Encoder::new(&mut again);
                f2cn::Begin::encode(&mut e, b.plan, b.mode, &targets, b.path).unwrap();
                assert_eq!(e.len(), args.len());
                assert_eq!(again, args);
                // A receiver fed chunks named by the rest of the body never
                // marks a chunk twice or completes without every chunk.
                let mut got = vec![0u64; b.plan.bitmap_words()];
                let mut p = f2cn::Progress::new(b.plan, &mut got).unwrap();
                for w in args.chunks(8).take(64) {
                    let off = u64::from_be_bytes(w.try_into().unwrap_or([0; 8]));
                    let off = off % (b.plan.size.max(1) + u64::from(b.plan.chunk));
                    let len = b.plan.index_of(off, 0).map_or(1, |_| 0);
                    let before = p.received();
                    match p.data(&mut got, off, &args[..len.min(args.len())]) {
                        Ok(_) => assert_eq!(p.received(), before + 1),
                        Err(_) => assert_eq!(p.received(), before),
                    }
                    assert!(p.received() <= b.plan.chunks());
                }
            }
        }
        MsgKind::FileData => {
            if f2cn::data_offset(args).is_ok() {
                stats.f2cn_ok += 1;
            }
        }
        MsgKind::FileCommit => {
            let mut d = Decoder::new(args);
            if let Ok(c) = d.get::<f2cn::Commit>() {
                stats.f2cn_ok += 1;
                let mut buf = [0u8; 16];
                Encoder::new(&mut buf).put(&c).unwrap();
                assert_eq!(buf[..], args[..16]);
            }
        }
        MsgKind::FileAck => {
            let mut d = Decoder::new(args);
            if d.get::<f2cn::Ack>().is_ok() {
                stats.f2cn_ok += 1;
            }
        }
        MsgKind::JobLaunch => {
            // A CN decodes a launch into scratch as long as the body.
            let mut scratch = vec![0u8; args.len()];
            if let Ok(l) = jobs::Launch::decode(args, &mut scratch) {
                let mut buf = vec![0u8; l.encoded_len()];
                l.encode(&mut Encoder::new(&mut buf)).unwrap();
                assert_eq!(buf[..], args[..], "a launch re-encodes as it came");
            }
        }
        MsgKind::JobExit => {
            if let Ok(r) = jobs::ExitReport::decode(h.errno, args) {
                assert_eq!(r.encode()[..], args[..]);
                assert_eq!(r.errno(), h.errno);
            }
        }
        MsgKind::JobOutput
        | MsgKind::JobInput
        | MsgKind::JobInputEnd
        | MsgKind::JobCredit
        | MsgKind::JobSignal => {
            // Bytes, or one word: a window takes any length without
            // panicking and never holds more than it allows.
            let mut w = jobs::RecvWindow::new(jobs::MIN_WINDOW);
            while w.accept(args.len() as u32).is_ok() {}
            assert!(w.held() <= jobs::MIN_WINDOW);
        }
        MsgKind::Upcall => {
            // zoidfs's recall, as a CN decodes it.
            let mut d = Decoder::new(args);
            if let Ok(r) = d.get::<zoidfs::Recall>() {
                if d.finish().is_ok() {
                    let mut buf = [0u8; zoidfs::Recall::SIZE];
                    Encoder::new(&mut buf).put(&r).unwrap();
                    assert_eq!(buf[..], args[..]);
                }
            }
        }
    }
}

/// Encodes one record of a [`zoid_dispatch`] input.
pub fn zoid_record(ctrl: u8, bytes: &[u8]) -> Vec<u8> {
    let len = u16::try_from(bytes.len()).expect("record too long");
    let mut r = vec![ctrl];
    r.extend_from_slice(&len.to_be_bytes());
    r.extend_from_slice(bytes);
    r
}

/// Feeds a fuzz input through zoid's message handling.
///
/// Input: one config byte (low three bits: the reply buffer size,
/// [`REPLY_SIZES`]), then records of a control byte, a big-endian 16-bit
/// length and that many bytes (capped at the input's end).  A record is a
/// message (after [`ZCTRL_FIX`] / [`ZCTRL_CALL`] / [`ZCTRL_ZTEST`] /
/// [`ZCTRL_UNIX`] / [`ZCTRL_ZOIDFS`] fix-ups) for `split_call` and, if a
/// call to `ztest`, `unix` or `zoidfs`, their `dispatch` with a dummy
/// server; with [`ZCTRL_CLIENT`] the
/// reply arguments for a client stub; with [`ZCTRL_RESTART`] a new config
/// byte.
pub fn zoid_dispatch(input: &[u8]) -> ZoidStats {
    let mut stats = ZoidStats::default();
    let Some((&cfg, mut rest)) = input.split_first() else {
        return stats;
    };
    let mut reply_size = REPLY_SIZES[usize::from(cfg & 7)];
    while rest.len() >= 3 {
        let ctrl = rest[0];
        let len = usize::from(u16::from_be_bytes([rest[1], rest[2]]));
        let len = len.min(MAX_MSG).min(rest.len() - 3);
        let mut msg = rest[3..3 + len].to_vec();
        rest = &rest[3 + len..];
        stats.records += 1;
        if ctrl & ZCTRL_RESTART != 0 {
            reply_size = REPLY_SIZES[usize::from(msg.first().copied().unwrap_or(0) & 7)];
            continue;
        }
        if ctrl & ZCTRL_CLIENT != 0 {
            stats.client_calls += 1;
            if let Some((&which, reply)) = msg.split_first() {
                stats.client_ok += usize::from(client_stub(which, reply));
            }
            continue;
        }
        fix_up(ctrl, &mut msg);
        message(&mut stats, &msg, reply_size);
    }
    stats
}

/// Records the request a client stub makes; the stub then fails with
/// `CallError::Transport(EIO)`.
#[derive(Default)]
pub struct Capture(RefCell<Option<(u16, u16, Vec<u8>)>>);

impl Transport for Capture {
    fn call(
        &self,
        plugin: u16,
        function: u16,
        encode: &dyn Fn(&mut Encoder<'_>) -> Result<(), MarshalError>,
        _decode: &mut dyn FnMut(&mut Decoder<'_>) -> Result<(), MarshalError>,
    ) -> Result<(), CallError> {
        let mut req = vec![0u8; measure_args(encode)?];
        encode_args(encode, &mut req)?;
        *self.0.borrow_mut() = Some((plugin, function, req));
        Err(CallError::Transport(errno::EIO))
    }
}

/// The `(plugin, function, args)` of the call a client stub makes.
pub fn capture_call(
    stub: impl FnOnce(&dyn Transport) -> Result<i64, CallError>,
) -> (u16, u16, Vec<u8>) {
    let t = Capture::default();
    assert_eq!(stub(&t), Err(CallError::Transport(errno::EIO)));
    t.0.into_inner().expect("the stub made no call")
}

/// A `Call` message: header (with a groups block if `groups` is not
/// empty) and arguments.
pub fn call_message(plugin: u16, function: u16, tag: u32, groups: &[u32], args: &[u8]) -> Vec<u8> {
    let mut h = CallHeader::new(MsgKind::Call, tag);
    h.plugin = plugin;
    h.function = function;
    h.pid = 4242;
    h.uid = 1000;
    h.gid = 100;
    h.arg_len = args.len() as u32;
    let mut msg = vec![0u8; HEADER_LEN + wire::groups_block_len(groups.len()) + args.len()];
    let n = h.encode_with_groups(groups, &mut msg).unwrap();
    msg.truncate(n);
    msg.extend_from_slice(args);
    msg
}

/// One call of every `ztest` and `unix` function with plausible arguments,
/// as the stubs encode them: `(plugin, function, args)`.
pub fn sample_calls() -> Vec<(u16, u16, Vec<u8>)> {
    let mut buf = [0u8; 64];
    let mut st = Stat::default();
    let (mut x, mut sum) = (0x1122_3344_5566_7788u64, 0i64);
    let mut verf = 0u64;
    let (h1, h2) = (handle_of(1), handle_of(-77));
    let mut fh = Handle::default();
    let mut sfs = StatFs::default();
    let set = SetAttr {
        valid: zoidfs::setattr::MODE | zoidfs::setattr::MTIME,
        mode: 0o600,
        mtime_sec: 1_700_000_000,
        mtime_nsec: 5,
        ..SetAttr::default()
    };
    let b = &mut buf;
    vec![
        capture_call(|t| ztest::client::null(t)),
        capture_call(|t| ztest::client::echo(t, b"hello", b, 16)),
        capture_call(|t| ztest::client::add(t, 40, 2, &mut sum)),
        capture_call(|t| ztest::client::swap(t, &mut x)),
        capture_call(|t| ztest::client::strlen(t, b"four")),
        capture_call(|t| ztest::client::maybe(t, Some(b"s"), Some(3))),
        capture_call(|t| ztest::client::maybe(t, None, None)),
        capture_call(|t| ztest::client::fill(t, 0x5a, b, 32)),
        capture_call(|t| ztest::client::sleep_ms(t, 10)),
        capture_call(|t| ztest::client::fail(t, 2)),
        capture_call(|t| unix::client::open(t, b"/tmp/f", unix::oflag::CREAT, 0o644)),
        capture_call(|t| unix::client::openat(t, unix::AT_FDCWD, b"f", 0, 0)),
        capture_call(|t| unix::client::close(t, 3)),
        capture_call(|t| unix::client::read(t, 3, b, 64)),
        capture_call(|t| unix::client::write(t, 3, b"some data")),
        capture_call(|t| unix::client::pread(t, 4, b, 48, 4096)),
        capture_call(|t| unix::client::pwrite(t, 4, b"more", 8192)),
        capture_call(|t| unix::client::lseek(t, 3, 10, unix::SEEK_SET)),
        capture_call(|t| unix::client::fstat(t, 3, &mut st)),
        capture_call(|t| unix::client::stat(t, b"/etc/passwd", &mut st)),
        capture_call(|t| unix::client::lstat(t, b"/bin/sh", &mut st)),
        capture_call(|t| unix::client::fsync(t, 3)),
        capture_call(|t| unix::client::ftruncate(t, 3, 100)),
        capture_call(|t| unix::client::mkdir(t, b"/tmp/d", 0o755)),
        capture_call(|t| unix::client::rmdir(t, b"/tmp/d")),
        capture_call(|t| unix::client::unlink(t, b"/tmp/f")),
        capture_call(|t| unix::client::rename(t, b"/a", b"/b")),
        capture_call(|t| unix::client::readlink(t, b"/bin/sh", b, 20)),
        capture_call(|t| unix::client::symlink(t, b"/a", b"/l")),
        capture_call(|t| unix::client::getdents(t, 5, b, 64)),
        capture_call(|t| unix::client::readv(t, 3, b, 7)),
        capture_call(|t| unix::client::writev(t, 3, b"vec")),
        capture_call(|t| ztest::client::rendezvous(t, 7)),
        capture_call(|t| zoidfs::client::root(t, b"", &mut fh, &mut st)),
        capture_call(|t| zoidfs::client::lookup(t, h1, b"name", &mut fh, &mut st)),
        capture_call(|t| zoidfs::client::getattr(t, h1, &mut st)),
        capture_call(|t| zoidfs::client::setattr(t, h1, set, &mut st)),
        capture_call(|t| zoidfs::client::create(t, h1, b"f", 0o644, true, &mut fh, &mut st)),
        capture_call(|t| zoidfs::client::mkdir(t, h1, b"d", 0o755, &mut fh, &mut st)),
        capture_call(|t| zoidfs::client::symlink(t, h1, b"l", b"f", &mut fh, &mut st)),
        capture_call(|t| zoidfs::client::link(t, h2, h1, b"g", &mut st)),
        capture_call(|t| zoidfs::client::remove(t, h1, b"d", true)),
        capture_call(|t| zoidfs::client::rename(t, h1, b"f", h2, b"g", 1)),
        capture_call(|t| zoidfs::client::readlink(t, h2, b, 20)),
        capture_call(|t| zoidfs::client::readdir(t, h1, 3, b, 64)),
        capture_call(|t| zoidfs::client::read(t, h2, 4096, b, 64)),
        capture_call(|t| zoidfs::client::write(t, h2, 8192, b"data", true, &mut st, &mut verf)),
        capture_call(|t| zoidfs::client::commit(t, h2, false, &mut verf)),
        capture_call(|t| zoidfs::client::statfs(t, h1, &mut sfs)),
    ]
}
