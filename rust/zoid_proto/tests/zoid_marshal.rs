// SPDX-License-Identifier: GPL-2.0

//! zoid's call path on the host: the wire header, the marshalling codec,
//! and every `ztest` and `unix` function through its client stub, a
//! loopback transport (full messages, headers included) and `dispatch`
//! into test servers; malformed inputs on both sides.

use proptest::prelude::*;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use zoid_proto::version::SUITE_VERSION;
use zoid_proto::zoid::errno::{self, E2BIG, EBADMSG, EINVAL, EIO, ENOSYS, EPROTO};
use zoid_proto::zoid::marshal::{Decoder, Encoder, MarshalError, Wire, MAX_STR};
use zoid_proto::zoid::plugin::{
    decode_reply_args, encode_args, measure_args, CallError, CallResult, DispatchError, Reply,
    Transport,
};
use zoid_proto::zoid::plugins::unix::{
    self, dirents, oflag, Dirent, Stat, AT_FDCWD, DT_DIR, DT_LNK, DT_REG, NAME_MAX, SEEK_CUR,
    SEEK_END, SEEK_SET,
};
use zoid_proto::zoid::plugins::{job, ztest};
use zoid_proto::zoid::wire::{
    self, split_call, AttachReply, AttachRequest, CallHeader, MsgKind, WireError, ATTACH_REPLY_LEN,
    ATTACH_REQUEST_LEN, FLAG_ASYNC_NOREPLY, FLAG_GROUPS, FLAG_PRIORITY, HEADER_LEN, MAX_GROUPS,
    ZOID_WIRE_VERSION,
};

// ---------------------------------------------------------------------------
// Test servers.

/// What the ION knows about a call's caller (from the header).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Creds {
    pid: u32,
    uid: u32,
    gid: u32,
    groups: Vec<u32>,
}

/// `ztest` as documented, counting calls and remembering the last caller.
#[derive(Default)]
struct Ztest {
    calls: Cell<usize>,
    last: RefCell<Creds>,
}

impl Ztest {
    fn called(&self, ctx: &Creds) {
        self.calls.set(self.calls.get() + 1);
        *self.last.borrow_mut() = ctx.clone();
    }
}

impl ztest::Server for Ztest {
    type Ctx = Creds;

    fn null(&self, ctx: &Creds) -> CallResult {
        self.called(ctx);
        Ok(0)
    }

    fn echo(&self, ctx: &Creds, data: &[u8], out_buf: &mut [u8], cap: u32) -> CallResult {
        self.called(ctx);
        assert_eq!(out_buf.len(), cap as usize);
        let n = data.len().min(out_buf.len());
        out_buf[..n].copy_from_slice(&data[..n]);
        Ok(data.len() as i64)
    }

    fn add(&self, ctx: &Creds, a: i64, b: i64, sum: &mut i64) -> CallResult {
        self.called(ctx);
        assert_eq!(*sum, 0, "out values start zeroed");
        *sum = a.wrapping_add(b);
        Ok(0)
    }

    fn swap(&self, ctx: &Creds, x: &mut u64) -> CallResult {
        self.called(ctx);
        *x = x.rotate_left(32);
        Ok(0)
    }

    fn strlen(&self, ctx: &Creds, s: &[u8]) -> CallResult {
        self.called(ctx);
        assert!(!s.contains(&0));
        Ok(s.len() as i64)
    }

    fn maybe(&self, ctx: &Creds, s: Option<&[u8]>, v: Option<u32>) -> CallResult {
        self.called(ctx);
        Ok(match (s, v) {
            (None, None) => -1,
            _ => s.map_or(0, |s| s.len() as i64) + v.map_or(0, i64::from),
        })
    }

    fn fill(&self, ctx: &Creds, byte: u8, buf: &mut [u8], n: u32) -> CallResult {
        self.called(ctx);
        assert_eq!(buf.len(), n as usize);
        buf.fill(byte);
        Ok(i64::from(n))
    }

    fn sleep_ms(&self, ctx: &Creds, _ms: u32) -> CallResult {
        self.called(ctx);
        Ok(0)
    }

    fn fail(&self, ctx: &Creds, errno: i32) -> CallResult {
        self.called(ctx);
        Err(errno)
    }

    fn rendezvous(&self, ctx: &Creds, key: u32) -> CallResult {
        self.called(ctx);
        Ok(i64::from(key))
    }
}

const ENOENT: i32 = 2;
const EBADF: i32 = 9;
const EEXIST: i32 = 17;
const ENOTDIR: i32 = 20;
const EISDIR: i32 = 21;
const ENOTEMPTY: i32 = 39;
const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;

#[derive(Clone, Debug)]
enum Node {
    File(Vec<u8>),
    Dir,
    Link(Vec<u8>),
}

#[derive(Clone, Debug)]
struct Inode {
    ino: u64,
    node: Node,
    mode: u32,
    uid: u32,
}

#[derive(Debug)]
struct Open {
    path: Vec<u8>,
    pos: i64,
    flags: u32,
}

/// A small in-memory file system behind `unix`.  Paths are absolute (or
/// relative to `/`), without `.` or `..`.
#[derive(Debug)]
struct Fs {
    nodes: BTreeMap<Vec<u8>, Inode>,
    fds: BTreeMap<i32, Open>,
    next_fd: i32,
    next_ino: u64,
}

impl Default for Fs {
    fn default() -> Self {
        let mut nodes = BTreeMap::new();
        nodes.insert(
            b"/".to_vec(),
            Inode {
                ino: 1,
                node: Node::Dir,
                mode: S_IFDIR | 0o755,
                uid: 0,
            },
        );
        Self {
            nodes,
            fds: BTreeMap::new(),
            next_fd: 3,
            next_ino: 2,
        }
    }
}

fn abs(path: &[u8]) -> Vec<u8> {
    if path.starts_with(b"/") {
        path.to_vec()
    } else {
        [b"/", path].concat()
    }
}

fn parent(path: &[u8]) -> &[u8] {
    match path.iter().rposition(|&b| b == b'/') {
        Some(0) | None => b"/",
        Some(i) => &path[..i],
    }
}

fn base(path: &[u8]) -> &[u8] {
    &path[path.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1)..]
}

impl Fs {
    fn check_parent(&self, path: &[u8]) -> Result<(), i32> {
        match self.nodes.get(parent(path)).map(|i| &i.node) {
            Some(Node::Dir) => Ok(()),
            Some(_) => Err(ENOTDIR),
            None => Err(ENOENT),
        }
    }

    fn create(&mut self, path: Vec<u8>, node: Node, mode: u32, uid: u32) -> Result<(), i32> {
        self.check_parent(&path)?;
        if self.nodes.contains_key(&path) {
            return Err(EEXIST);
        }
        let ino = self.next_ino;
        self.next_ino += 1;
        self.nodes.insert(
            path,
            Inode {
                ino,
                node,
                mode,
                uid,
            },
        );
        Ok(())
    }

    /// Follows one level of symlink.
    fn resolve(&self, path: &[u8]) -> Result<(Vec<u8>, &Inode), i32> {
        let i = self.nodes.get(path).ok_or(ENOENT)?;
        if let Node::Link(t) = &i.node {
            let t = abs(t);
            let j = self.nodes.get(&t).ok_or(ENOENT)?;
            return Ok((t, j));
        }
        Ok((path.to_vec(), i))
    }

    fn stat_of(i: &Inode) -> Stat {
        let size = match &i.node {
            Node::File(d) => d.len() as i64,
            Node::Dir => 4096,
            Node::Link(t) => t.len() as i64,
        };
        Stat {
            dev: 0x801,
            ino: i.ino,
            mode: i.mode,
            nlink: 1,
            uid: i.uid,
            gid: 100,
            rdev: 0,
            size,
            blksize: 4096,
            blocks: (size as u64).div_ceil(512),
            atime_sec: 1_700_000_000,
            atime_nsec: 1,
            mtime_sec: 1_700_000_001,
            mtime_nsec: 2,
            ctime_sec: 1_700_000_002,
            ctime_nsec: 3,
        }
    }

    fn open(&mut self, path: Vec<u8>, flags: u32, mode: u32, uid: u32) -> CallResult {
        if !self.nodes.contains_key(&path) {
            if flags & oflag::CREAT == 0 {
                return Err(ENOENT);
            }
            self.create(path.clone(), Node::File(Vec::new()), S_IFREG | mode, uid)?;
        } else if flags & oflag::CREAT != 0 && flags & oflag::EXCL != 0 {
            return Err(EEXIST);
        }
        let (path, i) = self.resolve(&path)?;
        let is_dir = matches!(i.node, Node::Dir);
        if flags & oflag::DIRECTORY != 0 && !is_dir {
            return Err(ENOTDIR);
        }
        if is_dir && flags & oflag::ACCMODE != oflag::RDONLY {
            return Err(EISDIR);
        }
        if flags & oflag::TRUNC != 0 {
            if let Some(Inode {
                node: Node::File(d),
                ..
            }) = self.nodes.get_mut(&path)
            {
                d.clear();
            }
        }
        let fd = self.next_fd;
        self.next_fd += 1;
        self.fds.insert(
            fd,
            Open {
                path,
                pos: 0,
                flags,
            },
        );
        Ok(i64::from(fd))
    }

    fn data(&mut self, fd: i32) -> Result<(&mut Vec<u8>, &mut Open), i32> {
        let o = self.fds.get_mut(&fd).ok_or(EBADF)?;
        match self.nodes.get_mut(&o.path).map(|i| &mut i.node) {
            Some(Node::File(d)) => Ok((d, o)),
            Some(_) => Err(EISDIR),
            None => Err(EBADF),
        }
    }

    fn read_at(&mut self, fd: i32, buf: &mut [u8], at: Option<i64>) -> CallResult {
        let (d, o) = self.data(fd)?;
        let pos = (at.unwrap_or(o.pos).max(0) as usize).min(d.len());
        let n = (d.len() - pos).min(buf.len());
        buf[..n].copy_from_slice(&d[pos..pos + n]);
        if at.is_none() {
            o.pos += n as i64;
        }
        Ok(n as i64)
    }

    fn write_at(&mut self, fd: i32, buf: &[u8], at: Option<i64>) -> CallResult {
        let (d, o) = self.data(fd)?;
        let append = o.flags & oflag::APPEND != 0;
        let pos = match at {
            Some(p) => p as usize,
            None if append => d.len(),
            None => o.pos as usize,
        };
        if d.len() < pos + buf.len() {
            d.resize(pos + buf.len(), 0);
        }
        d[pos..pos + buf.len()].copy_from_slice(buf);
        if at.is_none() {
            o.pos = (pos + buf.len()) as i64;
        }
        Ok(buf.len() as i64)
    }
}

#[derive(Default)]
struct UnixSrv {
    fs: RefCell<Fs>,
    calls: Cell<usize>,
}

impl UnixSrv {
    fn fs(&self) -> std::cell::RefMut<'_, Fs> {
        self.calls.set(self.calls.get() + 1);
        self.fs.borrow_mut()
    }
}

impl unix::Server for UnixSrv {
    type Ctx = Creds;

    fn open(&self, ctx: &Creds, path: &[u8], flags: u32, mode: u32) -> CallResult {
        self.fs().open(abs(path), flags, mode, ctx.uid)
    }

    fn openat(&self, ctx: &Creds, dirfd: i32, path: &[u8], flags: u32, mode: u32) -> CallResult {
        let mut fs = self.fs();
        let full = if dirfd == AT_FDCWD || path.starts_with(b"/") {
            abs(path)
        } else {
            let dir = &fs.fds.get(&dirfd).ok_or(EBADF)?.path;
            [dir.as_slice(), b"/", path].concat()
        };
        fs.open(full, flags, mode, ctx.uid)
    }

    fn close(&self, _ctx: &Creds, fd: i32) -> CallResult {
        self.fs().fds.remove(&fd).map(|_| 0).ok_or(EBADF)
    }

    fn read(&self, _ctx: &Creds, fd: i32, buf: &mut [u8], count: u32) -> CallResult {
        assert_eq!(buf.len(), count as usize);
        self.fs().read_at(fd, buf, None)
    }

    fn write(&self, _ctx: &Creds, fd: i32, buf: &[u8]) -> CallResult {
        self.fs().write_at(fd, buf, None)
    }

    fn pread(&self, _ctx: &Creds, fd: i32, buf: &mut [u8], _count: u32, offset: i64) -> CallResult {
        self.fs().read_at(fd, buf, Some(offset))
    }

    fn pwrite(&self, _ctx: &Creds, fd: i32, buf: &[u8], offset: i64) -> CallResult {
        self.fs().write_at(fd, buf, Some(offset))
    }

    fn lseek(&self, _ctx: &Creds, fd: i32, offset: i64, whence: u32) -> CallResult {
        let mut fs = self.fs();
        let (d, o) = fs.data(fd)?;
        let base = match whence {
            SEEK_SET => 0,
            SEEK_CUR => o.pos,
            SEEK_END => d.len() as i64,
            _ => return Err(EINVAL),
        };
        let pos = base.checked_add(offset).filter(|&p| p >= 0).ok_or(EINVAL)?;
        o.pos = pos;
        Ok(pos)
    }

    fn fstat(&self, _ctx: &Creds, fd: i32, st: &mut Stat) -> CallResult {
        let fs = self.fs();
        let o = fs.fds.get(&fd).ok_or(EBADF)?;
        *st = Fs::stat_of(&fs.nodes[&o.path]);
        Ok(0)
    }

    fn stat(&self, _ctx: &Creds, path: &[u8], st: &mut Stat) -> CallResult {
        let fs = self.fs();
        let (_, i) = fs.resolve(&abs(path))?;
        *st = Fs::stat_of(i);
        Ok(0)
    }

    fn lstat(&self, _ctx: &Creds, path: &[u8], st: &mut Stat) -> CallResult {
        let fs = self.fs();
        *st = Fs::stat_of(fs.nodes.get(&abs(path)).ok_or(ENOENT)?);
        Ok(0)
    }

    fn fsync(&self, _ctx: &Creds, fd: i32) -> CallResult {
        self.fs().fds.get(&fd).map(|_| 0).ok_or(EBADF)
    }

    fn ftruncate(&self, _ctx: &Creds, fd: i32, length: i64) -> CallResult {
        let mut fs = self.fs();
        let (d, _) = fs.data(fd)?;
        d.resize(usize::try_from(length).map_err(|_| EINVAL)?, 0);
        Ok(0)
    }

    fn mkdir(&self, ctx: &Creds, path: &[u8], mode: u32) -> CallResult {
        self.fs()
            .create(abs(path), Node::Dir, S_IFDIR | mode, ctx.uid)
            .map(|()| 0)
    }

    fn rmdir(&self, _ctx: &Creds, path: &[u8]) -> CallResult {
        let mut fs = self.fs();
        let path = abs(path);
        match fs.nodes.get(&path).map(|i| &i.node) {
            Some(Node::Dir) => {}
            Some(_) => return Err(ENOTDIR),
            None => return Err(ENOENT),
        }
        if fs.nodes.keys().any(|k| k != &path && parent(k) == path) {
            return Err(ENOTEMPTY);
        }
        fs.nodes.remove(&path);
        Ok(0)
    }

    fn unlink(&self, _ctx: &Creds, path: &[u8]) -> CallResult {
        let mut fs = self.fs();
        let path = abs(path);
        match fs.nodes.get(&path).map(|i| &i.node) {
            Some(Node::Dir) => Err(EISDIR),
            Some(_) => {
                fs.nodes.remove(&path);
                Ok(0)
            }
            None => Err(ENOENT),
        }
    }

    fn rename(&self, _ctx: &Creds, from: &[u8], to: &[u8]) -> CallResult {
        let mut fs = self.fs();
        let (from, to) = (abs(from), abs(to));
        fs.check_parent(&to)?;
        let i = fs.nodes.remove(&from).ok_or(ENOENT)?;
        fs.nodes.insert(to, i);
        Ok(0)
    }

    fn readlink(&self, _ctx: &Creds, path: &[u8], buf: &mut [u8], _size: u32) -> CallResult {
        let fs = self.fs();
        match fs.nodes.get(&abs(path)).map(|i| &i.node) {
            Some(Node::Link(t)) => {
                let n = t.len().min(buf.len());
                buf[..n].copy_from_slice(&t[..n]);
                Ok(t.len() as i64)
            }
            Some(_) => Err(EINVAL),
            None => Err(ENOENT),
        }
    }

    fn symlink(&self, ctx: &Creds, target: &[u8], linkpath: &[u8]) -> CallResult {
        self.fs()
            .create(
                abs(linkpath),
                Node::Link(target.to_vec()),
                S_IFLNK | 0o777,
                ctx.uid,
            )
            .map(|()| 0)
    }

    fn getdents(&self, _ctx: &Creds, fd: i32, buf: &mut [u8], _count: u32) -> CallResult {
        let mut fs = self.fs();
        let o = fs.fds.get(&fd).ok_or(EBADF)?;
        let dir = o.path.clone();
        let start = o.pos as usize;
        let entries: Vec<(Vec<u8>, Inode)> = fs
            .nodes
            .iter()
            .filter(|(k, _)| k.as_slice() != dir && parent(k) == dir)
            .map(|(k, i)| (k.clone(), i.clone()))
            .collect();
        let mut used = 0;
        let mut next = start;
        for (path, i) in entries.iter().skip(start) {
            let d = Dirent {
                ino: i.ino,
                off: next as i64 + 1,
                kind: match i.node {
                    Node::File(_) => DT_REG,
                    Node::Dir => DT_DIR,
                    Node::Link(_) => DT_LNK,
                },
                name: base(path),
            };
            match d.encode(&mut buf[used..]) {
                Ok(n) => used += n,
                Err(MarshalError::NoSpace) if used == 0 => return Err(EINVAL),
                Err(MarshalError::NoSpace) => break,
                Err(e) => panic!("{e:?}"),
            }
            next += 1;
        }
        fs.fds.get_mut(&fd).unwrap().pos = next as i64;
        Ok(used as i64)
    }

    fn readv(&self, ctx: &Creds, fd: i32, buf: &mut [u8], count: u32) -> CallResult {
        unix::Server::read(self, ctx, fd, buf, count)
    }

    fn writev(&self, ctx: &Creds, fd: i32, buf: &[u8]) -> CallResult {
        unix::Server::write(self, ctx, fd, buf)
    }
}

// ---------------------------------------------------------------------------
// Loopback transport: whole messages, as treenet would carry them.

/// One job call as the server saw it: (start?, id, exec, args, global
/// size, local size, mode).
type JobCall = (bool, u32, Vec<u8>, Vec<u8>, u32, u32, Vec<u8>);

/// A job table as the ION keeps it: the arguments each call carried.
#[derive(Default)]
struct JobSrv {
    log: RefCell<Vec<JobCall>>,
}

impl job::Server for JobSrv {
    type Ctx = Creds;

    fn job_start(
        &self,
        _ctx: &Creds,
        id: u32,
        exec: &[u8],
        args: &[u8],
        global_size: u32,
        local_size: u32,
        mode: &[u8],
    ) -> CallResult {
        let mut log = self.log.borrow_mut();
        log.push((
            true,
            id,
            exec.to_vec(),
            args.to_vec(),
            global_size,
            local_size,
            mode.to_vec(),
        ));
        Ok(log.iter().filter(|e| e.0 && e.1 == id).count() as i64)
    }

    fn job_end(&self, _ctx: &Creds, id: u32) -> CallResult {
        let mut log = self.log.borrow_mut();
        if !log.iter().any(|e| e.0 && e.1 == id) {
            return Err(2); // ENOENT
        }
        log.push((false, id, Vec::new(), Vec::new(), 0, 0, Vec::new()));
        Ok(0)
    }
}

struct Loopback {
    job: JobSrv,
    ztest: Ztest,
    unix: UnixSrv,
    /// Bytes of the ION's reply buffer (arguments only).
    reply_cap: usize,
    creds: Creds,
    tag: Cell<u32>,
    /// Calls that reached the transport.
    calls: Cell<usize>,
}

impl Loopback {
    fn new() -> Self {
        Self {
            job: JobSrv::default(),
            ztest: Ztest::default(),
            unix: UnixSrv::default(),
            reply_cap: 64 << 10,
            creds: Creds {
                pid: 4242,
                uid: 1000,
                gid: 100,
                groups: Vec::new(),
            },
            tag: Cell::new(1),
            calls: Cell::new(0),
        }
    }

    /// The ION: one request message in, one reply message out.
    fn ion(&self, msg: &[u8]) -> Vec<u8> {
        let (h, groups, args) = split_call(msg).expect("request rejected");
        assert_eq!(h.kind, MsgKind::Call);
        let ctx = Creds {
            pid: h.pid,
            uid: h.uid,
            gid: h.gid,
            groups: groups.iter().collect(),
        };
        let mut reply = vec![0u8; self.reply_cap];
        let r = match h.plugin {
            ztest::ID => ztest::dispatch(&self.ztest, &ctx, h.function, args, &mut reply),
            unix::ID => unix::dispatch(&self.unix, &ctx, h.function, args, &mut reply),
            job::ID => job::dispatch(&self.job, &ctx, h.function, args, &mut reply),
            _ => Err(DispatchError::UnknownFunction),
        };
        let (len, errno) = match r {
            Ok(Reply { len, errno }) => (len, errno),
            Err(e) => (0, e.errno()),
        };
        assert!(len <= reply.len());
        let rh = h.reply_to(len as u32, errno).unwrap();
        let mut out = [0u8; HEADER_LEN];
        rh.encode(&mut out);
        let mut m = out.to_vec();
        m.extend_from_slice(&reply[..len]);
        m
    }
}

impl Transport for Loopback {
    fn call(
        &self,
        plugin: u16,
        function: u16,
        encode: &dyn Fn(&mut Encoder<'_>) -> Result<(), MarshalError>,
        decode: &mut dyn FnMut(&mut Decoder<'_>) -> Result<(), MarshalError>,
    ) -> Result<(), CallError> {
        self.calls.set(self.calls.get() + 1);
        let tag = self.tag.get();
        self.tag.set(tag + 1);
        let n = measure_args(encode)?;
        let mut h = CallHeader::new(MsgKind::Call, tag);
        h.plugin = plugin;
        h.function = function;
        h.pid = self.creds.pid;
        h.uid = self.creds.uid;
        h.gid = self.creds.gid;
        h.arg_len = n as u32;
        let g = &self.creds.groups;
        let mut msg = vec![0u8; HEADER_LEN + wire::groups_block_len(g.len()) + n];
        let off = h
            .encode_with_groups(g, &mut msg)
            .map_err(|e| CallError::Transport(e.errno()))?;
        msg.truncate(off + n);
        assert_eq!(encode_args(encode, &mut msg[off..])?, n);
        let reply = self.ion(&msg);
        let (rh, groups, args) = split_call(&reply).map_err(|e| CallError::Transport(e.errno()))?;
        assert_eq!(rh.kind, MsgKind::Reply);
        assert_eq!((rh.tag, rh.plugin, rh.function), (tag, plugin, function));
        assert!(groups.is_empty());
        if rh.errno != 0 {
            assert!(args.is_empty());
            return Err(CallError::Errno(rh.errno));
        }
        decode_reply_args(args, decode)
    }
}

/// Hands a canned reply (arguments, errno) to a stub.
struct Canned(Vec<u8>, i32);

impl Transport for Canned {
    fn call(
        &self,
        _plugin: u16,
        _function: u16,
        encode: &dyn Fn(&mut Encoder<'_>) -> Result<(), MarshalError>,
        decode: &mut dyn FnMut(&mut Decoder<'_>) -> Result<(), MarshalError>,
    ) -> Result<(), CallError> {
        measure_args(encode)?;
        if self.1 != 0 {
            return Err(CallError::Errno(self.1));
        }
        decode_reply_args(&self.0, decode)
    }
}

/// Records a stub's request arguments; the call then fails with EIO.
#[derive(Default)]
struct Capture(RefCell<Option<(u16, u16, Vec<u8>)>>);

impl Transport for Capture {
    fn call(
        &self,
        plugin: u16,
        function: u16,
        encode: &dyn Fn(&mut Encoder<'_>) -> Result<(), MarshalError>,
        _decode: &mut dyn FnMut(&mut Decoder<'_>) -> Result<(), MarshalError>,
    ) -> Result<(), CallError> {
        let mut buf = vec![0u8; measure_args(encode)?];
        encode_args(encode, &mut buf)?;
        *self.0.borrow_mut() = Some((plugin, function, buf));
        Err(CallError::Transport(EIO))
    }
}

fn capture(stub: impl FnOnce(&Capture) -> Result<i64, CallError>) -> (u16, u16, Vec<u8>) {
    let t = Capture::default();
    assert_eq!(stub(&t), Err(CallError::Transport(EIO)));
    t.0.into_inner().unwrap()
}

/// One valid call of every function: `(plugin, function, args)`.
fn samples() -> Vec<(u16, u16, Vec<u8>)> {
    let mut b = [0u8; 64];
    let mut st = Stat::default();
    let (mut x, mut s) = (7u64, 0i64);
    let mut v = vec![
        capture(ztest::client::null),
        capture(|t| ztest::client::echo(t, b"hello", &mut b, 16)),
        capture(|t| ztest::client::add(t, 1, 2, &mut s)),
        capture(|t| ztest::client::swap(t, &mut x)),
        capture(|t| ztest::client::strlen(t, b"four")),
        capture(|t| ztest::client::maybe(t, Some(b"s"), Some(3))),
        capture(|t| ztest::client::fill(t, 1, &mut b, 8)),
        capture(|t| ztest::client::sleep_ms(t, 1)),
        capture(|t| ztest::client::fail(t, 2)),
        capture(|t| ztest::client::rendezvous(t, 5)),
    ];
    v.extend([
        capture(|t| unix::client::open(t, b"/f", 0, 0)),
        capture(|t| unix::client::openat(t, AT_FDCWD, b"f", 0, 0)),
        capture(|t| unix::client::close(t, 3)),
        capture(|t| unix::client::read(t, 3, &mut b, 8)),
        capture(|t| unix::client::write(t, 3, b"abc")),
        capture(|t| unix::client::pread(t, 3, &mut b, 8, 1)),
        capture(|t| unix::client::pwrite(t, 3, b"abc", 1)),
        capture(|t| unix::client::lseek(t, 3, 1, SEEK_SET)),
        capture(|t| unix::client::fstat(t, 3, &mut st)),
        capture(|t| unix::client::stat(t, b"/f", &mut st)),
        capture(|t| unix::client::lstat(t, b"/f", &mut st)),
        capture(|t| unix::client::fsync(t, 3)),
        capture(|t| unix::client::ftruncate(t, 3, 1)),
        capture(|t| unix::client::mkdir(t, b"/d", 0o700)),
        capture(|t| unix::client::rmdir(t, b"/d")),
        capture(|t| unix::client::unlink(t, b"/f")),
        capture(|t| unix::client::rename(t, b"/f", b"/g")),
        capture(|t| unix::client::readlink(t, b"/l", &mut b, 8)),
        capture(|t| unix::client::symlink(t, b"/f", b"/l")),
        capture(|t| unix::client::getdents(t, 3, &mut b, 64)),
        capture(|t| unix::client::readv(t, 3, &mut b, 8)),
        capture(|t| unix::client::writev(t, 3, b"abc")),
    ]);
    v
}

/// Dispatches to either plug-in's test server; returns the result and
/// whether the server ran.
fn dispatch(
    plugin: u16,
    function: u16,
    args: &[u8],
    reply: &mut [u8],
) -> (Result<Reply, DispatchError>, bool) {
    let ctx = Creds::default();
    match plugin {
        ztest::ID => {
            let s = Ztest::default();
            let r = ztest::dispatch(&s, &ctx, function, args, reply);
            (r, s.calls.get() > 0)
        }
        _ => {
            let s = UnixSrv::default();
            let r = unix::dispatch(&s, &ctx, function, args, reply);
            (r, s.calls.get() > 0)
        }
    }
}

// ---------------------------------------------------------------------------
// Plug-in declarations.

#[test]
fn plugin_constants() {
    assert_eq!((ztest::ID, ztest::NAME), (1, "ztest"));
    assert_eq!((unix::ID, unix::NAME), (2, "unix"));
    assert_eq!(ztest::FUNCTIONS.len(), 10);
    assert_eq!(ztest::FUNCTIONS[1], (2, "echo"));
    assert_eq!(ztest::func::sleep_ms, 8);
    assert_eq!(unix::FUNCTIONS.len(), 22);
    assert_eq!(unix::func::getdents, 20);
    assert_eq!(unix::function_name(17), Some("rename"));
    assert_eq!(unix::function_name(0), None);
    for (id, name) in unix::FUNCTIONS {
        assert_eq!(unix::function_name(*id), Some(*name));
    }
    // u64 dev, ino, rdev, blocks; i64 size and three seconds; u32 the rest.
    assert_eq!(Stat::SIZE, 4 * 8 + 4 * 8 + 8 * 4);
    assert_eq!(
        samples().len(),
        ztest::FUNCTIONS.len() + unix::FUNCTIONS.len()
    );
}

// ---------------------------------------------------------------------------
// Round trips through the loopback.

#[test]
fn ztest_round_trips() {
    let t = Loopback::new();
    assert_eq!(ztest::client::null(&t), Ok(0));

    let mut buf = [0u8; 16];
    assert_eq!(ztest::client::echo(&t, b"hello", &mut buf, 16), Ok(5));
    assert_eq!(&buf[..6], b"hello\0");
    // Cut short: ret above cap, only cap bytes travel.
    let mut buf = [0u8; 8];
    assert_eq!(ztest::client::echo(&t, b"0123456789", &mut buf, 4), Ok(10));
    assert_eq!(&buf, b"0123\0\0\0\0");
    assert_eq!(ztest::client::echo(&t, b"xyz", &mut buf, 0), Ok(3));
    assert_eq!(&buf, b"0123\0\0\0\0");
    assert_eq!(ztest::client::echo(&t, b"", &mut buf, 8), Ok(0));

    let mut sum = 5;
    assert_eq!(ztest::client::add(&t, 40, 2, &mut sum), Ok(0));
    assert_eq!(sum, 42);
    assert_eq!(ztest::client::add(&t, i64::MAX, 1, &mut sum), Ok(0));
    assert_eq!(sum, i64::MIN);

    let mut x = 0x1111_2222_3333_4444;
    assert_eq!(ztest::client::swap(&t, &mut x), Ok(0));
    assert_eq!(x, 0x3333_4444_1111_2222);

    assert_eq!(ztest::client::strlen(&t, b"four"), Ok(4));
    assert_eq!(ztest::client::strlen(&t, b""), Ok(0));
    let long = vec![b'a'; MAX_STR];
    assert_eq!(ztest::client::strlen(&t, &long), Ok(MAX_STR as i64));

    assert_eq!(ztest::client::maybe(&t, None, None), Ok(-1));
    assert_eq!(ztest::client::maybe(&t, Some(b"abc"), None), Ok(3));
    assert_eq!(ztest::client::maybe(&t, None, Some(7)), Ok(7));
    assert_eq!(ztest::client::maybe(&t, Some(b""), Some(7)), Ok(7));

    let mut buf = [0u8; 12];
    assert_eq!(ztest::client::fill(&t, 0x5a, &mut buf, 10), Ok(10));
    assert_eq!(
        buf,
        [0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0, 0]
    );
    assert_eq!(ztest::client::fill(&t, 1, &mut buf, 0), Ok(0));
    assert_eq!(buf[0], 0x5a);

    assert_eq!(ztest::client::sleep_ms(&t, 0), Ok(0));

    assert_eq!(ztest::client::fail(&t, 2), Err(CallError::Errno(2)));
    assert_eq!(ztest::client::fail(&t, 4095), Err(CallError::Errno(4095)));
    // Invalid errnos become EIO.
    for bad in [0, -1, 4096, i32::MIN] {
        assert_eq!(ztest::client::fail(&t, bad), Err(CallError::Errno(EIO)));
    }
    assert_eq!(t.ztest.calls.get(), t.calls.get());
}

#[test]
fn credentials_and_groups_reach_the_server() {
    let mut t = Loopback::new();
    assert_eq!(ztest::client::null(&t), Ok(0));
    assert_eq!(*t.ztest.last.borrow(), t.creds);
    t.creds = Creds {
        pid: 77,
        uid: 0,
        gid: 5,
        groups: vec![10, 20, 30],
    };
    assert_eq!(ztest::client::strlen(&t, b"x"), Ok(1));
    assert_eq!(*t.ztest.last.borrow(), t.creds);
    t.creds.groups = (0..MAX_GROUPS as u32).collect();
    assert_eq!(ztest::client::null(&t), Ok(0));
    assert_eq!(t.ztest.last.borrow().groups.len(), MAX_GROUPS);
    t.creds.groups.push(99);
    assert_eq!(
        ztest::client::null(&t),
        Err(CallError::Transport(WireError::TooManyGroups.errno()))
    );
}

#[test]
fn unix_round_trips() {
    use unix::client as u;
    let t = Loopback::new();
    let mut buf = [0u8; 256];
    let mut st = Stat::default();

    assert_eq!(u::mkdir(&t, b"/d", 0o750), Ok(0));
    assert_eq!(u::mkdir(&t, b"/d", 0o750), Err(CallError::Errno(EEXIST)));
    assert_eq!(u::open(&t, b"/d/none", 0, 0), Err(CallError::Errno(ENOENT)));
    let fd = u::open(&t, b"/d/f", oflag::CREAT | oflag::RDWR, 0o644).unwrap() as i32;
    assert_eq!(u::write(&t, fd, b"hello world"), Ok(11));
    assert_eq!(u::lseek(&t, fd, 0, SEEK_SET), Ok(0));
    assert_eq!(u::read(&t, fd, &mut buf, 5), Ok(5));
    assert_eq!(&buf[..5], b"hello");
    buf.fill(0);
    assert_eq!(u::read(&t, fd, &mut buf, 64), Ok(6));
    assert_eq!(&buf[..7], b" world\0");
    assert_eq!(u::read(&t, fd, &mut buf, 64), Ok(0));
    assert_eq!(u::pwrite(&t, fd, b"HELLO", 0), Ok(5));
    assert_eq!(u::pread(&t, fd, &mut buf, 8, 0), Ok(8));
    assert_eq!(&buf[..8], b"HELLO wo");
    assert_eq!(u::pread(&t, fd, &mut buf, 8, 100), Ok(0));
    assert_eq!(u::writev(&t, fd, b"!!"), Ok(2));
    assert_eq!(u::lseek(&t, fd, -3, SEEK_END), Ok(10));
    assert_eq!(u::readv(&t, fd, &mut buf, 16), Ok(3));
    assert_eq!(&buf[..3], b"d!!");
    assert_eq!(u::lseek(&t, fd, -1, SEEK_CUR), Ok(12));
    assert_eq!(
        u::lseek(&t, fd, -20, SEEK_CUR),
        Err(CallError::Errno(EINVAL))
    );
    assert_eq!(u::lseek(&t, fd, 0, 9), Err(CallError::Errno(EINVAL)));

    assert_eq!(u::fstat(&t, fd, &mut st), Ok(0));
    assert_eq!(st.size, 13);
    assert_eq!(st.mode, S_IFREG | 0o644);
    assert_eq!(st.uid, t.creds.uid);
    assert_eq!((st.atime_nsec, st.mtime_nsec, st.ctime_nsec), (1, 2, 3));
    assert_eq!(u::ftruncate(&t, fd, 4), Ok(0));
    assert_eq!(u::fsync(&t, fd), Ok(0));
    assert_eq!(u::stat(&t, b"/d/f", &mut st), Ok(0));
    assert_eq!(st.size, 4);
    let file_ino = st.ino;

    assert_eq!(u::symlink(&t, b"/d/f", b"/d/l"), Ok(0));
    assert_eq!(u::lstat(&t, b"/d/l", &mut st), Ok(0));
    assert_eq!(st.mode, S_IFLNK | 0o777);
    assert_eq!(u::stat(&t, b"/d/l", &mut st), Ok(0));
    assert_eq!((st.ino, st.mode), (file_ino, S_IFREG | 0o644));
    buf.fill(0);
    assert_eq!(u::readlink(&t, b"/d/l", &mut buf, 64), Ok(4));
    assert_eq!(&buf[..5], b"/d/f\0");
    buf.fill(0);
    assert_eq!(u::readlink(&t, b"/d/l", &mut buf, 2), Ok(4));
    assert_eq!(&buf[..3], b"/d\0");
    assert_eq!(
        u::readlink(&t, b"/d/f", &mut buf, 2),
        Err(CallError::Errno(EINVAL))
    );

    let dirfd = u::open(&t, b"/d", oflag::DIRECTORY, 0).unwrap() as i32;
    let fd2 = u::openat(&t, dirfd, b"f", oflag::RDONLY, 0).unwrap() as i32;
    assert_eq!(u::read(&t, fd2, &mut buf, 64), Ok(4));
    assert_eq!(&buf[..4], b"HELL");
    let fd3 = u::openat(&t, AT_FDCWD, b"d/f", oflag::RDONLY, 0).unwrap() as i32;
    assert_eq!(u::close(&t, fd3), Ok(0));
    assert_eq!(
        u::open(&t, b"/d/f", oflag::DIRECTORY, 0),
        Err(CallError::Errno(ENOTDIR))
    );

    // A buffer too small for the first entry, then all, then the end.
    assert_eq!(
        u::getdents(&t, dirfd, &mut buf, 10),
        Err(CallError::Errno(EINVAL))
    );
    buf.fill(0);
    let n = u::getdents(&t, dirfd, &mut buf, 256).unwrap() as usize;
    let names: Vec<(Vec<u8>, u8, i64)> = dirents(&buf[..n])
        .map(|d| d.unwrap())
        .map(|d| (d.name.to_vec(), d.kind, d.off))
        .collect();
    assert_eq!(
        names,
        vec![(b"f".to_vec(), DT_REG, 1), (b"l".to_vec(), DT_LNK, 2)]
    );
    assert_eq!(u::getdents(&t, dirfd, &mut buf, 256), Ok(0));

    assert_eq!(u::rmdir(&t, b"/d"), Err(CallError::Errno(ENOTEMPTY)));
    assert_eq!(u::rename(&t, b"/d/f", b"/d/g"), Ok(0));
    assert_eq!(u::stat(&t, b"/d/f", &mut st), Err(CallError::Errno(ENOENT)));
    assert_eq!(u::stat(&t, b"/d/g", &mut st), Ok(0));
    assert_eq!(u::unlink(&t, b"/d/g"), Ok(0));
    assert_eq!(u::unlink(&t, b"/d/l"), Ok(0));
    assert_eq!(u::unlink(&t, b"/d"), Err(CallError::Errno(EISDIR)));
    assert_eq!(u::rmdir(&t, b"/d"), Ok(0));
    assert_eq!(u::rmdir(&t, b"/d"), Err(CallError::Errno(ENOENT)));

    for fd in [fd, fd2, dirfd] {
        assert_eq!(u::close(&t, fd), Ok(0));
    }
    assert_eq!(u::close(&t, fd), Err(CallError::Errno(EBADF)));
    assert_eq!(u::read(&t, fd, &mut buf, 1), Err(CallError::Errno(EBADF)));
    assert_eq!(u::fstat(&t, fd, &mut st), Err(CallError::Errno(EBADF)));
    assert_eq!(t.unix.calls.get(), t.calls.get());
}

#[test]
fn job_round_trips() {
    let t = Loopback::new();
    assert_eq!(job::ID, 3);
    assert_eq!(job::client::job_end(&t, 7), Err(CallError::Errno(2))); // ENOENT
    assert_eq!(
        job::client::job_start(&t, 7, b"/bin/app", b"-n 4", 8, 4, b"SMP"),
        Ok(1)
    );
    assert_eq!(
        job::client::job_start(&t, 7, b"/bin/app", b"", 8, 4, b"VN"),
        Ok(2)
    );
    assert_eq!(job::client::job_end(&t, 7), Ok(0));
    let log = t.job.log.borrow();
    assert_eq!(
        log[0],
        (
            true,
            7,
            b"/bin/app".to_vec(),
            b"-n 4".to_vec(),
            8,
            4,
            b"SMP".to_vec()
        )
    );
    assert_eq!(log.len(), 3);
    // A NUL in a string never leaves the CN.
    assert!(matches!(
        job::client::job_start(&t, 8, b"a\0b", b"", 1, 1, b""),
        Err(CallError::Marshal(MarshalError::BadString))
    ));
}

#[test]
fn unknown_plugin_and_function() {
    let t = Loopback::new();
    // A transport can call anything; the ION answers ENOSYS.
    let r = t.call(9, 1, &|_| Ok(()), &mut |_| Ok(()));
    assert_eq!(r, Err(CallError::Errno(ENOSYS)));
    let r = t.call(ztest::ID, 99, &|_| Ok(()), &mut |_| Ok(()));
    assert_eq!(r, Err(CallError::Errno(ENOSYS)));
    for f in [0, 11, 0xffff] {
        let (r, ran) = dispatch(ztest::ID, f, &[], &mut [0; 64]);
        assert_eq!(r, Err(DispatchError::UnknownFunction));
        assert!(!ran);
    }
    assert_eq!(DispatchError::UnknownFunction.errno(), ENOSYS);
    let (r, _) = dispatch(unix::ID, 23, &[], &mut [0; 64]);
    assert_eq!(r.unwrap_err().errno(), ENOSYS);
}

// ---------------------------------------------------------------------------
// Malformed requests: refused before the server runs.

#[test]
fn truncated_and_trailing_arguments() {
    for (plugin, function, args) in samples() {
        let mut reply = vec![0u8; 4096];
        let (r, ran) = dispatch(plugin, function, &args, &mut reply);
        assert!(r.is_ok(), "{plugin}/{function}: {r:?}");
        assert!(ran);
        for cut in 0..args.len() {
            let (r, ran) = dispatch(plugin, function, &args[..cut], &mut reply);
            assert_eq!(
                r,
                Err(DispatchError::Marshal(MarshalError::Truncated)),
                "{plugin}/{function} cut at {cut}"
            );
            assert!(!ran);
        }
        let mut long = args.clone();
        long.push(0);
        let (r, ran) = dispatch(plugin, function, &long, &mut reply);
        assert_eq!(r, Err(DispatchError::Marshal(MarshalError::Trailing)));
        assert_eq!(r.unwrap_err().errno(), EBADMSG);
        assert!(!ran);
    }
}

#[test]
fn bad_strings_and_markers() {
    let mut reply = [0u8; 64];
    // A string of MAX_STR + 1 bytes, and one with a NUL.
    let mut args = ((MAX_STR + 1) as u32).to_be_bytes().to_vec();
    args.extend(vec![b'a'; MAX_STR + 1]);
    let (r, ran) = dispatch(ztest::ID, ztest::func::strlen, &args, &mut reply);
    assert_eq!(r, Err(DispatchError::Marshal(MarshalError::TooLong)));
    assert_eq!(r.unwrap_err().errno(), E2BIG);
    assert!(!ran);
    let args = [0, 0, 0, 3, b'a', 0, b'b'];
    let (r, ran) = dispatch(ztest::ID, ztest::func::strlen, &args, &mut reply);
    assert_eq!(r, Err(DispatchError::Marshal(MarshalError::BadString)));
    assert_eq!(r.unwrap_err().errno(), EINVAL);
    assert!(!ran);
    // A string length beyond the arguments.
    let args = [0xff, 0xff, 0xff, 0xff, b'a'];
    let (r, _) = dispatch(ztest::ID, ztest::func::strlen, &args, &mut reply);
    assert_eq!(r, Err(DispatchError::Marshal(MarshalError::TooLong)));
    let args = [0, 0, 0, 9, b'a'];
    let (r, _) = dispatch(unix::ID, unix::func::unlink, &args, &mut reply);
    assert_eq!(r, Err(DispatchError::Marshal(MarshalError::Truncated)));
    // `in bytes` longer than what follows.
    let args = [0, 0, 0, 3, 0, 0, 0, 9, 1, 2];
    let (r, _) = dispatch(unix::ID, unix::func::write, &args, &mut reply);
    assert_eq!(r, Err(DispatchError::Marshal(MarshalError::Truncated)));
    // Presence markers other than 0 / 1.
    for args in [&[2u8, 0][..], &[0, 7, 0, 0, 0, 1][..], &[0xff][..]] {
        let (r, ran) = dispatch(ztest::ID, ztest::func::maybe, args, &mut reply);
        assert_eq!(
            r,
            Err(DispatchError::Marshal(MarshalError::BadBool)),
            "{args:?}"
        );
        assert!(!ran);
    }
    let (r, _) = dispatch(ztest::ID, ztest::func::maybe, &[0, 0], &mut reply);
    assert_eq!(r, Ok(Reply { len: 8, errno: 0 }));
    assert_eq!(reply[..8], (-1i64).to_be_bytes());
}

#[test]
fn reply_too_large_is_refused_before_the_server_runs() {
    let (_, f, args) = capture(|t| ztest::client::fill(t, 9, &mut [0; 100], 100));
    // 8 (ret) + 4 (length) + 100 bytes.
    for size in [0, 8, 12, 111] {
        let mut reply = vec![0u8; size];
        let (r, ran) = dispatch(ztest::ID, f, &args, &mut reply);
        assert_eq!(r, Err(DispatchError::ReplyTooLarge { need: 112 }), "{size}");
        assert_eq!(r.unwrap_err().errno(), E2BIG);
        assert!(!ran);
    }
    let mut reply = vec![0u8; 112];
    let (r, ran) = dispatch(ztest::ID, f, &args, &mut reply);
    assert_eq!(r, Ok(Reply { len: 112, errno: 0 }));
    assert!(ran);
    assert_eq!(reply[8..12], 100u32.to_be_bytes());
    assert!(reply[12..].iter().all(|&b| b == 9));
    // A huge count.
    let (_, f, args) = capture(|t| unix::client::read(t, 3, &mut vec![0; 1 << 20], 1 << 20));
    let (r, ran) = dispatch(unix::ID, f, &args, &mut [0u8; 4096]);
    assert_eq!(
        r,
        Err(DispatchError::ReplyTooLarge {
            need: 12 + (1 << 20)
        })
    );
    assert!(!ran);
    let mut args = 3i32.to_be_bytes().to_vec();
    args.extend(u32::MAX.to_be_bytes());
    let (r, _) = dispatch(unix::ID, unix::func::read, &args, &mut [0u8; 4096]);
    let need = 12usize.saturating_add(u32::MAX as usize);
    assert_eq!(r, Err(DispatchError::ReplyTooLarge { need }));
    // Fixed out values that do not fit.
    let (_, f, args) = capture(|t| unix::client::fstat(t, 3, &mut Stat::default()));
    let (r, ran) = dispatch(unix::ID, f, &args, &mut [0u8; 8 + Stat::SIZE - 1]);
    assert_eq!(
        r,
        Err(DispatchError::ReplyTooLarge {
            need: 8 + Stat::SIZE
        })
    );
    assert!(!ran);
    let (r, _) = dispatch(unix::ID, f, &args, &mut [0u8; 8 + Stat::SIZE]);
    // EBADF from the empty file system: an errno reply carries nothing.
    assert_eq!(
        r,
        Ok(Reply {
            len: 0,
            errno: EBADF
        })
    );
    // Through the loopback: the caller sees E2BIG.
    let mut t = Loopback::new();
    t.reply_cap = 64;
    let mut buf = [0u8; 100];
    assert_eq!(
        ztest::client::fill(&t, 1, &mut buf, 100),
        Err(CallError::Errno(E2BIG))
    );
    assert_eq!(t.ztest.calls.get(), 0);
}

// ---------------------------------------------------------------------------
// Client stubs: local checks and malformed replies.

#[test]
fn stubs_check_their_arguments_locally() {
    let t = Loopback::new();
    let mut buf = [0u8; 4];
    assert_eq!(
        ztest::client::fill(&t, 1, &mut buf, 5),
        Err(CallError::Marshal(MarshalError::TooLong))
    );
    assert_eq!(
        unix::client::read(&t, 3, &mut buf, 5),
        Err(CallError::Marshal(MarshalError::TooLong))
    );
    assert_eq!(t.calls.get(), 0, "refused before the transport");
    // Strings are checked while encoding.
    assert_eq!(
        unix::client::open(&t, b"a\0b", 0, 0),
        Err(CallError::Marshal(MarshalError::BadString))
    );
    let long = vec![b'x'; MAX_STR + 1];
    assert_eq!(
        unix::client::stat(&t, &long, &mut Stat::default()),
        Err(CallError::Marshal(MarshalError::TooLong))
    );
    assert_eq!(
        ztest::client::maybe(&t, Some(b"\0"), None),
        Err(CallError::Marshal(MarshalError::BadString))
    );
    assert_eq!(t.unix.calls.get() + t.ztest.calls.get(), 0);
    assert_eq!(CallError::Marshal(MarshalError::TooLong).errno(), E2BIG);
    assert_eq!(CallError::Transport(5).errno(), 5);
}

#[test]
fn ret_only_replies_and_deferred_answers() {
    use zoid_proto::zoid::plugin::ret_reply;
    let ret_only: Vec<&str> = ztest::FUNCTIONS
        .iter()
        .filter(|(id, _)| ztest::reply_is_ret_only(*id))
        .map(|(_, name)| *name)
        .collect();
    assert_eq!(
        ret_only,
        ["null", "strlen", "maybe", "sleep_ms", "fail", "rendezvous"]
    );
    assert!(!ztest::reply_is_ret_only(0));
    for f in ["read", "fstat", "stat", "readlink", "getdents"] {
        let id = unix::FUNCTIONS.iter().find(|x| x.1 == f).unwrap().0;
        assert!(!unix::reply_is_ret_only(id), "{f}");
    }
    for f in ["open", "close", "write", "unlink", "rename"] {
        let id = unix::FUNCTIONS.iter().find(|x| x.1 == f).unwrap().0;
        assert!(unix::reply_is_ret_only(id), "{f}");
    }
    // What a deferred reply carries is what the stub expects.
    let mut rep = [0u8; 8];
    let r = ret_reply(Ok(42), &mut rep).unwrap();
    assert_eq!(r, Reply::ok(8));
    assert_eq!(
        ztest::client::rendezvous(&Canned(rep.to_vec(), 0), 7),
        Ok(42)
    );
    assert_eq!(ret_reply(Err(EBADF), &mut rep), Ok(Reply::error(EBADF)));
    assert_eq!(ret_reply(Ok(1), &mut [0u8; 7]), Err(MarshalError::NoSpace));
}

fn reply(ret: i64, tail: &[u8]) -> Vec<u8> {
    let mut v = ret.to_be_bytes().to_vec();
    v.extend_from_slice(tail);
    v
}

fn array(n: u32, bytes: &[u8]) -> Vec<u8> {
    let mut v = n.to_be_bytes().to_vec();
    v.extend_from_slice(bytes);
    v
}

#[test]
fn stubs_reject_malformed_replies() {
    let mut buf = [0u8; 8];
    let read = |r: Vec<u8>, buf: &mut [u8; 8]| unix::client::read(&Canned(r, 0), 3, buf, 4);
    // Right: min(ret, count) bytes.
    assert_eq!(read(reply(2, &array(2, b"ab")), &mut buf), Ok(2));
    assert_eq!(&buf[..3], b"ab\0");
    assert_eq!(read(reply(10, &array(4, b"wxyz")), &mut buf), Ok(10));
    assert_eq!(&buf[..5], b"wxyz\0");
    assert_eq!(read(reply(-1, &array(0, b"")), &mut buf), Ok(-1));
    // More than the server may send, fewer than it said.
    let too_long = Err(CallError::Marshal(MarshalError::TooLong));
    let truncated = Err(CallError::Marshal(MarshalError::Truncated));
    buf.fill(0);
    assert_eq!(read(reply(2, &array(3, b"abc")), &mut buf), too_long);
    assert_eq!(read(reply(10, &array(5, b"abcde")), &mut buf), too_long);
    assert_eq!(read(reply(-1, &array(1, b"a")), &mut buf), too_long);
    assert_eq!(buf, [0; 8], "nothing copied from a bad reply");
    assert_eq!(read(reply(4, &array(2, b"ab")), &mut buf), truncated);
    assert_eq!(read(reply(4, &array(4, b"ab")), &mut buf), truncated);
    assert_eq!(read(reply(4, &[]), &mut buf), truncated);
    assert_eq!(read(vec![0; 7], &mut buf), truncated);
    assert_eq!(
        read(reply(1, &array(1, b"ab")), &mut buf),
        Err(CallError::Marshal(MarshalError::Trailing))
    );
    // `out bytes[n]` without `len = ret`: exactly n bytes.
    let fill = |r: Vec<u8>| ztest::client::fill(&Canned(r, 0), 1, &mut [0u8; 8], 3);
    assert_eq!(fill(reply(0, &array(3, b"abc"))), Ok(0));
    assert_eq!(fill(reply(3, &array(2, b"ab"))), truncated);
    assert_eq!(fill(reply(3, &array(4, b"abcd"))), too_long);
    // Out values.
    let mut st = Stat::default();
    let mut r = reply(0, &[0; Stat::SIZE - 1]);
    assert_eq!(
        unix::client::fstat(&Canned(r.clone(), 0), 3, &mut st),
        truncated
    );
    r.push(0);
    assert_eq!(
        unix::client::fstat(&Canned(r.clone(), 0), 3, &mut st),
        Ok(0)
    );
    r.push(0);
    assert_eq!(
        unix::client::fstat(&Canned(r, 0), 3, &mut st),
        Err(CallError::Marshal(MarshalError::Trailing))
    );
    // An errno reply is not decoded.
    assert_eq!(
        unix::client::fstat(&Canned(Vec::new(), 13), 3, &mut st),
        Err(CallError::Errno(13))
    );
}

// ---------------------------------------------------------------------------
// Directory entries.

#[test]
fn dirent_records() {
    let mut buf = [0u8; 64];
    let a = Dirent {
        ino: 7,
        off: 1,
        kind: DT_REG,
        name: b"file",
    };
    let b = Dirent {
        ino: u64::MAX,
        off: -2,
        kind: DT_DIR,
        name: &[b'n'; NAME_MAX],
    };
    let n = a.encode(&mut buf).unwrap();
    assert_eq!(n, unix::DIRENT_HEADER_LEN + 4);
    assert_eq!(n, a.encoded_len());
    assert_eq!(b.encode(&mut buf[n..]), Err(MarshalError::NoSpace));
    let mut big = vec![0u8; 600];
    let m = a.encode(&mut big).unwrap();
    let m = m + b.encode(&mut big[m..]).unwrap();
    let got: Vec<_> = dirents(&big[..m]).collect();
    assert_eq!(got, vec![Ok(a), Ok(b)]);
    assert_eq!(dirents(&[]).count(), 0);
    // Bad names.
    for (name, e) in [
        (&b""[..], MarshalError::BadString),
        (b"a/b", MarshalError::BadString),
        (b"a\0", MarshalError::BadString),
        (&[b'x'; NAME_MAX + 1], MarshalError::TooLong),
    ] {
        let d = Dirent { name, ..a };
        assert_eq!(d.encode(&mut big), Err(e));
    }
    // Malformed buffers: one error, then the end.
    let mut bad = big[..n].to_vec();
    bad.extend_from_slice(&big[..5]);
    let got: Vec<_> = dirents(&bad).collect();
    assert_eq!(got, vec![Ok(a), Err(MarshalError::Truncated)]);
    let mut bad = big[..n].to_vec();
    bad[18] = 5; // name longer than the record
    assert_eq!(
        dirents(&bad).collect::<Vec<_>>(),
        vec![Err(MarshalError::Truncated)]
    );
    bad[17] = 1; // 261 bytes
    assert_eq!(dirents(&bad).next(), Some(Err(MarshalError::TooLong)));
    let mut bad = big[..n].to_vec();
    bad[19] = b'/';
    assert_eq!(dirents(&bad).next(), Some(Err(MarshalError::BadString)));
}

// ---------------------------------------------------------------------------
// Wire header.

fn header() -> CallHeader {
    CallHeader {
        kind: MsgKind::Call,
        flags: FLAG_PRIORITY,
        plugin: 2,
        function: 4,
        tag: 0xdead_beef,
        pid: 1234,
        uid: 1000,
        gid: 100,
        arg_len: 3,
        errno: 0,
    }
}

#[test]
fn header_layout() {
    let mut b = [0u8; HEADER_LEN];
    header().encode(&mut b);
    assert_eq!(
        b,
        [
            1, 3, 0, 4, 0, 2, 0, 4, 0xde, 0xad, 0xbe, 0xef, 0, 0, 4, 0xd2, 0, 0, 3, 0xe8, 0, 0, 0,
            100, 0, 0, 0, 3, 0, 0, 0, 0
        ]
    );
    assert_eq!(CallHeader::decode(&b), Ok(header()));
    assert!(header().wants_priority() && header().wants_reply() && !header().has_groups());
    let r = header().reply_to(9, 5).unwrap();
    assert_eq!(r.kind, MsgKind::Reply);
    assert_eq!(
        (r.tag, r.plugin, r.function, r.pid),
        (0xdead_beef, 2, 4, 1234)
    );
    assert_eq!((r.flags, r.arg_len, r.errno), (0, 9, 5));
    assert_eq!(
        CallHeader::new(MsgKind::Attach, 1)
            .reply_to(0, 0)
            .unwrap()
            .kind,
        MsgKind::AttachReply
    );
    for k in [
        MsgKind::AttachReply,
        MsgKind::Reply,
        MsgKind::ProcessExit,
        MsgKind::Detach,
        MsgKind::Cancel,
    ] {
        assert_eq!(CallHeader::new(k, 1).reply_to(0, 0), None);
    }
    for k in 1..=12 {
        assert_eq!(MsgKind::from_u8(k).unwrap() as u8, k);
    }
}

#[test]
fn header_errors() {
    let mut b = [0u8; HEADER_LEN];
    header().encode(&mut b);
    assert_eq!(CallHeader::decode(&b[..31]), Err(WireError::Truncated));
    let mut x = b;
    x[0] = 2;
    assert_eq!(CallHeader::decode(&x), Err(WireError::BadVersion(2)));
    for k in [0, 21, 0xff] {
        x = b;
        x[1] = k;
        assert_eq!(CallHeader::decode(&x), Err(WireError::BadKind(k)));
    }
    x = b;
    x[3] = 0x0c;
    assert_eq!(CallHeader::decode(&x), Err(WireError::BadFlags(0x0c)));
    x = b;
    x[2] = 0x80;
    assert_eq!(CallHeader::decode(&x), Err(WireError::BadFlags(0x8004)));
    x = b;
    x[28..32].copy_from_slice(&(-1i32).to_be_bytes());
    assert_eq!(CallHeader::decode(&x), Err(WireError::BadErrno(-1)));
    x[28..32].copy_from_slice(&4096i32.to_be_bytes());
    assert_eq!(CallHeader::decode(&x), Err(WireError::BadErrno(4096)));
    x[28..32].copy_from_slice(&4095i32.to_be_bytes());
    assert!(CallHeader::decode(&x).is_ok());
    assert_eq!(WireError::Truncated.errno(), EBADMSG);
    assert_eq!(WireError::LengthMismatch.errno(), EBADMSG);
    assert_eq!(WireError::BadVersion(0).errno(), EPROTO);
    assert_eq!(WireError::BadKind(0).errno(), EPROTO);
    assert_eq!(WireError::BadFlags(0).errno(), EPROTO);
    assert_eq!(WireError::BadErrno(0).errno(), EPROTO);
    assert_eq!(WireError::TooManyGroups.errno(), EINVAL);
}

fn message(h: &CallHeader, groups: &[u32], args: &[u8]) -> Vec<u8> {
    let mut m = vec![0u8; HEADER_LEN + wire::groups_block_len(groups.len())];
    let n = h.encode_with_groups(groups, &mut m).unwrap();
    m.truncate(n);
    m.extend_from_slice(args);
    m
}

#[test]
fn split_call_checks_lengths() {
    let h = header();
    let m = message(&h, &[], b"abc");
    let (g, groups, args) = split_call(&m).unwrap();
    assert_eq!((g, groups.len(), args), (h, 0, &b"abc"[..]));
    // arg_len disagreeing either way, and a cut header.
    assert_eq!(
        split_call(&m[..m.len() - 1]),
        Err(WireError::LengthMismatch)
    );
    let mut long = m.clone();
    long.push(0);
    assert_eq!(split_call(&long), Err(WireError::LengthMismatch));
    let mut huge = m.clone();
    huge[24..28].copy_from_slice(&u32::MAX.to_be_bytes());
    assert_eq!(split_call(&huge), Err(WireError::LengthMismatch));
    assert_eq!(split_call(&m[..HEADER_LEN - 1]), Err(WireError::Truncated));
    assert_eq!(split_call(&[]), Err(WireError::Truncated));

    // Groups.
    let m = message(&h, &[5, 6, 7], b"abc");
    assert_eq!(m.len(), HEADER_LEN + 16 + 3);
    let (g, groups, args) = split_call(&m).unwrap();
    assert!(g.has_groups());
    assert_eq!(groups.len(), 3);
    assert_eq!(groups.iter().collect::<Vec<_>>(), vec![5, 6, 7]);
    assert_eq!(groups.get(2), Some(7));
    assert_eq!(groups.get(3), None);
    assert!(groups.contains(6) && !groups.contains(8));
    assert_eq!(groups.into_iter().len(), 3);
    assert_eq!(args, b"abc");
    // Flag without a block, block cut short, too many groups.
    let mut cut = message(&h, &[], b"");
    cut[3] |= FLAG_GROUPS as u8;
    assert_eq!(split_call(&cut), Err(WireError::Truncated));
    assert_eq!(split_call(&m[..HEADER_LEN + 10]), Err(WireError::Truncated));
    let mut many = m.clone();
    many[32..36].copy_from_slice(&33u32.to_be_bytes());
    assert_eq!(split_call(&many), Err(WireError::TooManyGroups));
    many[32..36].copy_from_slice(&2u32.to_be_bytes());
    assert_eq!(split_call(&many), Err(WireError::LengthMismatch));
    many[32..36].copy_from_slice(&4u32.to_be_bytes());
    assert_eq!(split_call(&many), Err(WireError::Truncated));
    // An empty block is allowed.
    let mut empty = message(&h, &[], b"");
    empty[3] |= FLAG_GROUPS as u8;
    empty[24..28].copy_from_slice(&0u32.to_be_bytes());
    empty.extend_from_slice(&[0, 0, 0, 0]);
    let (_, g, a) = split_call(&empty).unwrap();
    assert!(g.is_empty() && a.is_empty());
    // Encoding refuses too many groups or a short buffer.
    let gids = [0u32; MAX_GROUPS + 1];
    let mut big = [0u8; 512];
    assert_eq!(
        h.encode_with_groups(&gids, &mut big),
        Err(WireError::TooManyGroups)
    );
    assert_eq!(
        h.encode_with_groups(&[1], &mut big[..39]),
        Err(WireError::Truncated)
    );
    assert_eq!(
        wire::encode_groups(&gids, &mut big),
        Err(WireError::TooManyGroups)
    );
    // FLAG_GROUPS follows the groups given.
    let mut hg = h;
    hg.flags |= FLAG_GROUPS | FLAG_ASYNC_NOREPLY;
    let m = message(&hg, &[], b"abc");
    let (g, _, _) = split_call(&m).unwrap();
    assert!(!g.has_groups() && !g.wants_reply());
}

#[test]
fn attach_payloads() {
    let req = AttachRequest {
        proto: SUITE_VERSION.to_wire(),
        node: 0x1234,
        max_reply: 1 << 20,
    };
    let b = req.encode();
    assert_eq!(b.len(), ATTACH_REQUEST_LEN);
    assert_eq!(b[10..12], [0, 0]);
    assert_eq!(AttachRequest::decode(&b), Ok(req));
    assert_eq!(req.version(), Some(SUITE_VERSION));
    assert_eq!(AttachRequest::decode(&b[..15]), Err(WireError::Truncated));
    let mut longer = b.to_vec();
    longer.extend_from_slice(b"future");
    assert_eq!(AttachRequest::decode(&longer), Ok(req));
    let rep = AttachReply {
        proto: SUITE_VERSION.to_wire(),
        max_request: 65536,
        max_reply: 1 << 20,
        ack_threshold: 4096,
        workers: 8,
        max_outstanding: 16,
    };
    let b = rep.encode();
    assert_eq!(b.len(), ATTACH_REPLY_LEN);
    assert_eq!(AttachReply::decode(&b), Ok(rep));
    assert_eq!(rep.version(), Some(SUITE_VERSION));
    assert_eq!(AttachReply::decode(&b[..27]), Err(WireError::Truncated));
    let bad = AttachReply {
        proto: u64::MAX,
        ..rep
    };
    assert_eq!(bad.version(), None);
    assert_eq!(wire::decode_u32_args(&wire::encode_u32_args(77)), Ok(77));
    assert_eq!(wire::decode_u32_args(&[0, 0, 1]), Err(WireError::Truncated));
    assert_eq!(
        wire::decode_u32_args(&[0, 0, 0, 1, 0]),
        Err(WireError::LengthMismatch)
    );
    assert_eq!(ZOID_WIRE_VERSION, 1);
}

// ---------------------------------------------------------------------------
// Codec.

#[test]
fn codec_basics() {
    let mut buf = [0u8; 64];
    let mut e = Encoder::new(&mut buf);
    e.put_u8(1).unwrap();
    e.put_u16(0x0203).unwrap();
    e.put_u32(0x0405_0607).unwrap();
    e.put_i32(-2).unwrap();
    e.put_bool(true).unwrap();
    e.put_str(b"hi").unwrap();
    e.put_opt::<u16>(None).unwrap();
    e.put_opt(Some(&9u16)).unwrap();
    e.put_opt_str(Some(b"")).unwrap();
    e.put_opt_bytes(None).unwrap();
    assert_eq!(
        e.written(),
        [
            1, 2, 3, 4, 5, 6, 7, 0xff, 0xff, 0xff, 0xfe, 1, 0, 0, 0, 2, b'h', b'i', 0, 1, 0, 9, 1,
            0, 0, 0, 0, 0
        ]
    );
    let n = e.len();
    assert!(!e.is_empty() && !e.is_measuring());
    assert_eq!(e.remaining(), 64 - n);
    let mut d = Decoder::new(&buf[..n]);
    assert_eq!(d.get_u8(), Ok(1));
    assert_eq!(d.get_u16(), Ok(0x0203));
    assert_eq!(d.get_u32(), Ok(0x0405_0607));
    assert_eq!(d.get_i32(), Ok(-2));
    assert_eq!(d.get_bool(), Ok(true));
    assert_eq!(d.get_str(), Ok(&b"hi"[..]));
    assert_eq!(d.get_opt::<u16>(), Ok(None));
    assert_eq!(d.get_opt::<u16>(), Ok(Some(9)));
    assert_eq!(d.get_opt_str(), Ok(Some(&b""[..])));
    assert_eq!(d.get_opt_bytes(10), Ok(None));
    assert_eq!(d.remaining(), 0);
    d.finish().unwrap();
    // Out of space, cut input, trailing bytes, bad bools.
    let mut small = [0u8; 3];
    let mut e = Encoder::new(&mut small);
    assert_eq!(e.put_u32(1), Err(MarshalError::NoSpace));
    assert_eq!(e.put_str(b""), Err(MarshalError::NoSpace));
    e.put_u16(1).unwrap();
    assert_eq!(e.put_u16(1), Err(MarshalError::NoSpace));
    assert_eq!(e.len(), 2);
    let mut d = Decoder::new(&[0, 1, 2]);
    assert_eq!(d.get_u32(), Err(MarshalError::Truncated));
    assert_eq!(d.get_u16(), Ok(1));
    assert_eq!(d.finish(), Err(MarshalError::Trailing));
    assert_eq!(d.get_bool(), Err(MarshalError::BadBool));
    assert_eq!(d.position(), 2);
    assert_eq!(Decoder::new(&[]).get_bool(), Err(MarshalError::Truncated));
    // Strings at and over the limit, with NUL.
    let s = vec![b'a'; MAX_STR];
    let mut m = Encoder::measuring();
    m.put_str(&s).unwrap();
    assert_eq!(m.len(), 4 + MAX_STR);
    assert!(m.written().is_empty() && m.is_measuring());
    assert_eq!(m.put_str(&[b'a'; MAX_STR + 1]), Err(MarshalError::TooLong));
    assert_eq!(m.put_str(b"a\0"), Err(MarshalError::BadString));
    assert_eq!(m.put_opt_str(Some(b"\0")), Err(MarshalError::BadString));
    assert_eq!(m.len(), 4 + MAX_STR);
    // Bytes are not strings: NUL and any length pass.
    m.put_bytes(&[0; MAX_STR + 1]).unwrap();
    let mut d = Decoder::new(&[0, 0, 0, 2, 0, 1]);
    assert_eq!(d.clone().get_bytes(2), Ok(&[0u8, 1][..]));
    assert_eq!(d.clone().get_bytes(1), Err(MarshalError::TooLong));
    assert_eq!(d.get_str(), Err(MarshalError::BadString));
    assert_eq!(d.position(), 0);
    // Wire primitives.
    assert_eq!((u8::SIZE, u16::SIZE, u32::SIZE, u64::SIZE), (1, 2, 4, 8));
    assert_eq!((i32::SIZE, i64::SIZE, bool::SIZE), (4, 8, 1));
    // Errnos.
    assert_eq!(MarshalError::NoSpace.errno(), E2BIG);
    assert_eq!(MarshalError::TooLong.errno(), E2BIG);
    assert_eq!(MarshalError::Truncated.errno(), EBADMSG);
    assert_eq!(MarshalError::Trailing.errno(), EBADMSG);
    assert_eq!(MarshalError::BadString.errno(), EINVAL);
    assert_eq!(MarshalError::BadBool.errno(), EINVAL);
    assert_eq!(errno::sanitize(0), EIO);
    assert_eq!(errno::sanitize(4095), 4095);
}

/// One value of any kind the codec has.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    I32(i32),
    I64(i64),
    Bool(bool),
    Bytes(Vec<u8>),
    Str(Vec<u8>),
    OptU32(Option<u32>),
    OptStr(Option<Vec<u8>>),
    Stat(Stat),
}

fn nul_free() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(1u8.., 0..64)
}

fn val() -> impl Strategy<Value = Val> {
    prop_oneof![
        any::<u8>().prop_map(Val::U8),
        any::<u16>().prop_map(Val::U16),
        any::<u32>().prop_map(Val::U32),
        any::<u64>().prop_map(Val::U64),
        any::<i32>().prop_map(Val::I32),
        any::<i64>().prop_map(Val::I64),
        any::<bool>().prop_map(Val::Bool),
        proptest::collection::vec(any::<u8>(), 0..64).prop_map(Val::Bytes),
        nul_free().prop_map(Val::Str),
        any::<Option<u32>>().prop_map(Val::OptU32),
        proptest::option::of(nul_free()).prop_map(Val::OptStr),
        (any::<u64>(), any::<i64>(), any::<u32>()).prop_map(|(a, b, c)| Val::Stat(Stat {
            dev: a,
            size: b,
            mode: c,
            ctime_sec: b.wrapping_neg(),
            ..Stat::default()
        })),
    ]
}

fn put(e: &mut Encoder<'_>, v: &Val) -> Result<(), MarshalError> {
    match v {
        Val::U8(x) => e.put_u8(*x),
        Val::U16(x) => e.put_u16(*x),
        Val::U32(x) => e.put_u32(*x),
        Val::U64(x) => e.put_u64(*x),
        Val::I32(x) => e.put_i32(*x),
        Val::I64(x) => e.put_i64(*x),
        Val::Bool(x) => e.put_bool(*x),
        Val::Bytes(x) => e.put_bytes(x),
        Val::Str(x) => e.put_str(x),
        Val::OptU32(x) => e.put_opt(x.as_ref()),
        Val::OptStr(x) => e.put_opt_str(x.as_deref()),
        Val::Stat(x) => e.put(x),
    }
}

/// Decodes a value of the same kind as `like`.
fn get(d: &mut Decoder<'_>, like: &Val) -> Result<Val, MarshalError> {
    Ok(match like {
        Val::U8(_) => Val::U8(d.get_u8()?),
        Val::U16(_) => Val::U16(d.get_u16()?),
        Val::U32(_) => Val::U32(d.get_u32()?),
        Val::U64(_) => Val::U64(d.get_u64()?),
        Val::I32(_) => Val::I32(d.get_i32()?),
        Val::I64(_) => Val::I64(d.get_i64()?),
        Val::Bool(_) => Val::Bool(d.get_bool()?),
        Val::Bytes(_) => Val::Bytes(d.get_bytes(usize::MAX)?.to_vec()),
        Val::Str(_) => Val::Str(d.get_str()?.to_vec()),
        Val::OptU32(_) => Val::OptU32(d.get_opt()?),
        Val::OptStr(_) => Val::OptStr(d.get_opt_str()?.map(<[u8]>::to_vec)),
        Val::Stat(_) => Val::Stat(d.get()?),
    })
}

/// Some `(plugin, function)` pairs: every function, and unknown ones.
fn target() -> impl Strategy<Value = (u16, u16)> {
    prop_oneof![
        (0u16..12).prop_map(|f| (ztest::ID, f)),
        (0u16..25).prop_map(|f| (unix::ID, f)),
    ]
}

proptest! {
    /// Values round-trip; measuring counts exactly what writing writes;
    /// a buffer one byte short fails without panicking.
    #[test]
    fn codec_round_trips(vals in proptest::collection::vec(val(), 0..24)) {
        let mut m = Encoder::measuring();
        for v in &vals {
            put(&mut m, v).unwrap();
        }
        let mut buf = vec![0u8; m.len()];
        let mut e = Encoder::new(&mut buf);
        for v in &vals {
            put(&mut e, v).unwrap();
        }
        prop_assert_eq!(e.len(), m.len());
        prop_assert_eq!(e.remaining(), 0);
        let mut d = Decoder::new(&buf);
        for v in &vals {
            prop_assert_eq!(&get(&mut d, v).unwrap(), v);
        }
        prop_assert_eq!(d.finish(), Ok(()));
        if !buf.is_empty() {
            let mut short = vec![0u8; buf.len() - 1];
            let mut e = Encoder::new(&mut short);
            let r: Result<(), MarshalError> = vals.iter().try_for_each(|v| put(&mut e, v));
            prop_assert_eq!(r, Err(MarshalError::NoSpace));
            let mut d = Decoder::new(&buf[..buf.len() - 1]);
            let r: Result<Vec<Val>, MarshalError> = vals.iter().map(|v| get(&mut d, v)).collect();
            prop_assert!(r.is_err());
        }
    }

    /// Decoding arbitrary bytes as arbitrary values never panics, and a
    /// failed get consumes nothing.
    #[test]
    fn decoder_never_panics(data in proptest::collection::vec(any::<u8>(), 0..256),
                            kinds in proptest::collection::vec(val(), 0..32)) {
        let mut d = Decoder::new(&data);
        for k in &kinds {
            let before = d.position();
            if get(&mut d, k).is_err() {
                prop_assert_eq!(d.position(), before);
            }
        }
    }

    /// `dispatch` never panics on arbitrary arguments; a refused call
    /// never reaches the server; a reply fits its buffer.
    #[test]
    fn dispatch_never_panics((plugin, function) in target(),
                             args in proptest::collection::vec(any::<u8>(), 0..128),
                             reply_len in 0usize..160) {
        let mut reply = vec![0u8; reply_len];
        let (r, ran) = dispatch(plugin, function, &args, &mut reply);
        match r {
            Ok(Reply { len, errno }) => {
                prop_assert!(ran);
                prop_assert!(len <= reply_len);
                prop_assert!(errno == 0 || len == 0);
            }
            Err(e) => {
                prop_assert!(!ran);
                prop_assert!(errno::is_valid(e.errno()));
            }
        }
    }

    /// Valid arguments with bytes flipped: still no panic.
    #[test]
    fn dispatch_survives_corrupted_calls(i in any::<prop::sample::Index>(),
                                         flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4)) {
        let calls = samples();
        let (plugin, function, mut args) = calls[i.index(calls.len())].clone();
        if !args.is_empty() {
            for (at, x) in flips {
                let at = at.index(args.len());
                args[at] ^= x;
            }
        }
        let mut reply = vec![0u8; 512];
        let (r, ran) = dispatch(plugin, function, &args, &mut reply);
        prop_assert_eq!(r.is_ok(), ran);
    }

    /// `split_call` never panics; what it accepts is canonical.
    #[test]
    fn split_call_never_panics(mut msg in proptest::collection::vec(any::<u8>(), 0..200),
                               fix in any::<bool>()) {
        if fix && msg.len() >= HEADER_LEN {
            msg[0] = ZOID_WIRE_VERSION;
            msg[1] = msg[1] % 7 + 1;
            msg[2] = 0;
            msg[3] &= 7;
            msg[28..32].fill(0);
        }
        if let Ok((h, groups, args)) = split_call(&msg) {
            let mut b = [0u8; HEADER_LEN];
            h.encode(&mut b);
            prop_assert_eq!(&b[..], &msg[..HEADER_LEN]);
            prop_assert_eq!(args.len(), h.arg_len as usize);
            prop_assert_eq!(
                HEADER_LEN + if h.has_groups() { wire::groups_block_len(groups.len()) } else { 0 } + args.len(),
                msg.len()
            );
        }
    }

    /// Stubs never panic on arbitrary replies and never write past the
    /// bytes they accept.
    #[test]
    fn stubs_never_panic_on_replies(reply in proptest::collection::vec(any::<u8>(), 0..64),
                                    count in 0u32..24) {
        let mut buf = [0xeeu8; 32];
        let r = unix::client::pread(&Canned(reply.clone(), 0), 3, &mut buf, count, 0);
        let copied = match r {
            Ok(ret) => zoid_proto::zoid::plugin::out_len(ret, count) as usize,
            Err(_) => 0,
        };
        prop_assert!(buf[copied..].iter().all(|&b| b == 0xee));
        let mut st = Stat::default();
        let _ = unix::client::stat(&Canned(reply, 0), b"/x", &mut st);
    }

    /// Echo, fill, read and write round-trip arbitrary data.
    #[test]
    fn data_round_trips(data in proptest::collection::vec(any::<u8>(), 0..2048),
                        cap in 0u32..2100, byte in any::<u8>()) {
        let t = Loopback::new();
        let mut buf = vec![0u8; 2100];
        prop_assert_eq!(ztest::client::echo(&t, &data, &mut buf, cap), Ok(data.len() as i64));
        let n = data.len().min(cap as usize);
        prop_assert_eq!(&buf[..n], &data[..n]);
        prop_assert!(buf[n..].iter().all(|&b| b == 0));
        prop_assert_eq!(ztest::client::fill(&t, byte, &mut buf, cap), Ok(i64::from(cap)));
        prop_assert!(buf[..cap as usize].iter().all(|&b| b == byte));
        let fd = unix::client::open(&t, b"/f", oflag::CREAT | oflag::RDWR, 0o600).unwrap() as i32;
        prop_assert_eq!(unix::client::write(&t, fd, &data), Ok(data.len() as i64));
        let mut back = vec![0u8; 2100];
        prop_assert_eq!(unix::client::pread(&t, fd, &mut back, cap, 0), Ok(n as i64));
        prop_assert_eq!(&back[..n], &data[..n]);
    }
}
