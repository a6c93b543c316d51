// SPDX-License-Identifier: GPL-2.0

//! The `zoidfs` plug-in's declaration and types: every function through
//! the generated client stubs and dispatcher against an in-memory model
//! of an ION filesystem (handles with generations: a removed object's
//! handle is stale, never another object).

use proptest::prelude::*;
use std::cell::RefCell;
use std::collections::BTreeMap;
use zoid_proto::zoid::marshal::{Decoder, Encoder, MarshalError, Wire};
use zoid_proto::zoid::plugin::{
    decode_reply_args, encode_args, CallError, CallResult, Reply, Transport,
};
use zoid_proto::zoid::plugins::unix::{dirents, Dirent, Stat, DT_DIR, DT_LNK, DT_REG};
use zoid_proto::zoid::plugins::zoidfs::{
    self, client, node, relaxed, rename, setattr, xattr, Handle, Recall, SetAttr, StatFs,
    MAX_HANDLE,
};

const ENOENT: i32 = 2;
const EEXIST: i32 = 17;
const ENOTDIR: i32 = 20;
const EISDIR: i32 = 21;
const EINVAL: i32 = 22;
/// The model ION's write verifier.
const VERIFIER: u64 = 0x5eed_0f1e_5500_0001;
const ENOTEMPTY: i32 = 39;
const ENODATA: i32 = 61;
const ERANGE: i32 = 34;
const EOPNOTSUPP: i32 = 95;
const ESTALE: i32 = 116;
const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;

#[derive(Clone, Debug)]
enum Kind {
    File(Vec<u8>),
    Dir(BTreeMap<Vec<u8>, u64>),
    Link(Vec<u8>),
    Node(u64),
}

#[derive(Clone, Debug)]
struct Object {
    gen: u32,
    kind: Kind,
    mode: u32,
    nlink: u32,
    mtime: (i64, u32),
    xattrs: BTreeMap<Vec<u8>, Vec<u8>>,
}

/// An ION filesystem: objects by inode number; handles are `ino (8) gen
/// (4)`.
#[derive(Debug)]
struct Model {
    objects: BTreeMap<u64, Object>,
    next_ino: u64,
    next_gen: u32,
}

impl Model {
    fn new() -> Self {
        let mut objects = BTreeMap::new();
        objects.insert(
            1,
            Object {
                gen: 1,
                kind: Kind::Dir(BTreeMap::new()),
                mode: S_IFDIR | 0o755,
                nlink: 2,
                mtime: (0, 0),
                xattrs: BTreeMap::new(),
            },
        );
        Self {
            objects,
            next_ino: 2,
            next_gen: 2,
        }
    }

    fn handle(&self, ino: u64) -> Handle {
        let mut b = [0u8; 12];
        b[..8].copy_from_slice(&ino.to_be_bytes());
        b[8..].copy_from_slice(&self.objects[&ino].gen.to_be_bytes());
        Handle::new(&b).unwrap()
    }

    fn resolve(&self, h: &Handle) -> Result<u64, i32> {
        let b = h.as_bytes();
        if b.len() != 12 {
            return Err(ESTALE);
        }
        let ino = u64::from_be_bytes(b[..8].try_into().unwrap());
        let gen = u32::from_be_bytes(b[8..].try_into().unwrap());
        match self.objects.get(&ino) {
            Some(o) if o.gen == gen => Ok(ino),
            _ => Err(ESTALE),
        }
    }

    fn stat(&self, ino: u64) -> Stat {
        let o = &self.objects[&ino];
        let size = match &o.kind {
            Kind::File(d) => d.len() as i64,
            Kind::Link(t) => t.len() as i64,
            Kind::Dir(e) => e.len() as i64,
            Kind::Node(_) => 0,
        };
        Stat {
            ino,
            rdev: match o.kind {
                Kind::Node(rdev) => rdev,
                _ => 0,
            },
            mode: o.mode,
            nlink: o.nlink,
            size,
            mtime_sec: o.mtime.0,
            mtime_nsec: o.mtime.1,
            ..Stat::default()
        }
    }

    fn dir(&self, h: &Handle) -> Result<(u64, &BTreeMap<Vec<u8>, u64>), i32> {
        let ino = self.resolve(h)?;
        match &self.objects[&ino].kind {
            Kind::Dir(e) => Ok((ino, e)),
            _ => Err(ENOTDIR),
        }
    }

    fn entries(&mut self, ino: u64) -> &mut BTreeMap<Vec<u8>, u64> {
        match &mut self.objects.get_mut(&ino).unwrap().kind {
            Kind::Dir(e) => e,
            _ => unreachable!(),
        }
    }

    fn add(&mut self, dir: &Handle, name: &[u8], kind: Kind, mode: u32) -> Result<u64, i32> {
        let (d, e) = self.dir(dir)?;
        if e.contains_key(name) {
            return Err(EEXIST);
        }
        let ino = self.next_ino;
        self.next_ino += 1;
        self.next_gen += 1;
        let nlink = if matches!(kind, Kind::Dir(_)) { 2 } else { 1 };
        self.objects.insert(
            ino,
            Object {
                gen: self.next_gen,
                kind,
                mode,
                nlink,
                mtime: (0, 0),
                xattrs: BTreeMap::new(),
            },
        );
        self.entries(d).insert(name.to_vec(), ino);
        Ok(ino)
    }
}

struct Srv(RefCell<Model>);

impl zoidfs::Server for Srv {
    type Ctx = ();

    fn root(&self, (): &(), export: &[u8], root: &mut Handle, attr: &mut Stat) -> CallResult {
        if !export.is_empty() {
            return Err(ENOENT);
        }
        let m = self.0.borrow();
        *root = m.handle(1);
        *attr = m.stat(1);
        Ok(0)
    }

    fn lookup(
        &self,
        (): &(),
        dir: Handle,
        name: &[u8],
        found: &mut Handle,
        attr: &mut Stat,
    ) -> CallResult {
        let m = self.0.borrow();
        let (_, e) = m.dir(&dir)?;
        let ino = *e.get(name).ok_or(ENOENT)?;
        *found = m.handle(ino);
        *attr = m.stat(ino);
        Ok(0)
    }

    fn getattr(&self, (): &(), h: Handle, attr: &mut Stat) -> CallResult {
        let m = self.0.borrow();
        *attr = m.stat(m.resolve(&h)?);
        Ok(0)
    }

    fn setattr(&self, (): &(), h: Handle, set: SetAttr, attr: &mut Stat) -> CallResult {
        if !set.is_valid() {
            return Err(EINVAL);
        }
        let mut m = self.0.borrow_mut();
        let ino = m.resolve(&h)?;
        let o = m.objects.get_mut(&ino).unwrap();
        if set.valid & setattr::MODE != 0 {
            o.mode = (o.mode & !0o7777) | (set.mode & 0o7777);
        }
        if set.valid & setattr::SIZE != 0 {
            match &mut o.kind {
                Kind::File(d) => d.resize(set.size as usize, 0),
                _ => return Err(EISDIR),
            }
        }
        if set.valid & setattr::MTIME != 0 {
            o.mtime = (set.mtime_sec, set.mtime_nsec);
        }
        *attr = m.stat(ino);
        Ok(0)
    }

    fn create(
        &self,
        (): &(),
        dir: Handle,
        name: &[u8],
        mode: u32,
        excl: bool,
        made: &mut Handle,
        attr: &mut Stat,
    ) -> CallResult {
        let mut m = self.0.borrow_mut();
        let ino = match m.add(
            &dir,
            name,
            Kind::File(Vec::new()),
            S_IFREG | (mode & 0o7777),
        ) {
            Err(EEXIST) if !excl => *m.dir(&dir)?.1.get(name).unwrap(),
            r => r?,
        };
        *made = m.handle(ino);
        *attr = m.stat(ino);
        Ok(0)
    }

    fn mkdir(
        &self,
        (): &(),
        dir: Handle,
        name: &[u8],
        mode: u32,
        made: &mut Handle,
        attr: &mut Stat,
    ) -> CallResult {
        let mut m = self.0.borrow_mut();
        let ino = m.add(
            &dir,
            name,
            Kind::Dir(BTreeMap::new()),
            S_IFDIR | (mode & 0o7777),
        )?;
        *made = m.handle(ino);
        *attr = m.stat(ino);
        Ok(0)
    }

    fn symlink(
        &self,
        (): &(),
        dir: Handle,
        name: &[u8],
        target: &[u8],
        made: &mut Handle,
        attr: &mut Stat,
    ) -> CallResult {
        let mut m = self.0.borrow_mut();
        let ino = m.add(&dir, name, Kind::Link(target.to_vec()), S_IFLNK | 0o777)?;
        *made = m.handle(ino);
        *attr = m.stat(ino);
        Ok(0)
    }

    fn link(&self, (): &(), h: Handle, dir: Handle, name: &[u8], attr: &mut Stat) -> CallResult {
        let mut m = self.0.borrow_mut();
        let ino = m.resolve(&h)?;
        let (d, e) = m.dir(&dir)?;
        if e.contains_key(name) {
            return Err(EEXIST);
        }
        m.entries(d).insert(name.to_vec(), ino);
        m.objects.get_mut(&ino).unwrap().nlink += 1;
        *attr = m.stat(ino);
        Ok(0)
    }

    fn remove(&self, (): &(), dir: Handle, name: &[u8], is_dir: bool) -> CallResult {
        let mut m = self.0.borrow_mut();
        let (d, e) = m.dir(&dir)?;
        let ino = *e.get(name).ok_or(ENOENT)?;
        match (&m.objects[&ino].kind, is_dir) {
            (Kind::Dir(c), true) if !c.is_empty() => return Err(ENOTEMPTY),
            (Kind::Dir(_), false) => return Err(EISDIR),
            (Kind::File(_) | Kind::Link(_) | Kind::Node(_), true) => return Err(ENOTDIR),
            _ => {}
        }
        m.entries(d).remove(name);
        let o = m.objects.get_mut(&ino).unwrap();
        o.nlink -= 1;
        if o.nlink == 0 || is_dir {
            m.objects.remove(&ino);
        }
        Ok(0)
    }

    fn rename(
        &self,
        (): &(),
        from_dir: Handle,
        from: &[u8],
        to_dir: Handle,
        to: &[u8],
        flags: u32,
    ) -> CallResult {
        let mut m = self.0.borrow_mut();
        let (fd, fe) = m.dir(&from_dir)?;
        let ino = *fe.get(from).ok_or(ENOENT)?;
        let (td, te) = m.dir(&to_dir)?;
        if flags & rename::NOREPLACE != 0 && te.contains_key(to) {
            return Err(EEXIST);
        }
        m.entries(fd).remove(from);
        if let Some(old) = m.entries(td).insert(to.to_vec(), ino) {
            m.objects.remove(&old);
        }
        Ok(0)
    }

    fn readlink(&self, (): &(), h: Handle, target: &mut [u8], _cap: u32) -> CallResult {
        let m = self.0.borrow();
        match &m.objects[&m.resolve(&h)?].kind {
            Kind::Link(t) => {
                let n = t.len().min(target.len());
                target[..n].copy_from_slice(&t[..n]);
                Ok(t.len() as i64)
            }
            _ => Err(EINVAL),
        }
    }

    fn readdir(
        &self,
        (): &(),
        dir: Handle,
        cookie: i64,
        entries: &mut [u8],
        _cap: u32,
    ) -> CallResult {
        let m = self.0.borrow();
        let (_, e) = m.dir(&dir)?;
        // Cookie k: resume after the k-th entry in name order.
        let mut used = 0;
        for (k, (name, ino)) in e.iter().enumerate().skip(cookie as usize) {
            let kind = match m.objects[ino].kind {
                Kind::Dir(_) => DT_DIR,
                Kind::File(_) => DT_REG,
                Kind::Link(_) => DT_LNK,
                Kind::Node(_) => 0,
            };
            let d = Dirent {
                ino: *ino,
                off: k as i64 + 1,
                kind,
                name,
            };
            match d.encode(&mut entries[used..]) {
                Ok(n) => used += n,
                Err(_) => break,
            }
        }
        Ok(used as i64)
    }

    fn read(&self, (): &(), h: Handle, offset: i64, data: &mut [u8], _count: u32) -> CallResult {
        let m = self.0.borrow();
        match &m.objects[&m.resolve(&h)?].kind {
            Kind::File(d) => {
                let start = (offset as usize).min(d.len());
                let n = (d.len() - start).min(data.len());
                data[..n].copy_from_slice(&d[start..start + n]);
                Ok(n as i64)
            }
            _ => Err(EISDIR),
        }
    }

    fn write(
        &self,
        (): &(),
        h: Handle,
        offset: i64,
        data: &[u8],
        _sync: bool,
        attr: &mut Stat,
        verf: &mut u64,
    ) -> CallResult {
        *verf = VERIFIER;
        let mut m = self.0.borrow_mut();
        let ino = m.resolve(&h)?;
        match &mut m.objects.get_mut(&ino).unwrap().kind {
            Kind::File(d) => {
                let end = offset as usize + data.len();
                if d.len() < end {
                    d.resize(end, 0);
                }
                d[offset as usize..end].copy_from_slice(data);
            }
            _ => return Err(EISDIR),
        }
        *attr = m.stat(ino);
        Ok(data.len() as i64)
    }

    fn commit(&self, (): &(), h: Handle, _datasync: bool, verf: &mut u64) -> CallResult {
        *verf = VERIFIER;
        self.0.borrow().resolve(&h).map(|_| 0)
    }

    fn open(&self, (): &(), h: Handle, _ino: u64) -> CallResult {
        self.0.borrow().resolve(&h).map(|_| 1)
    }

    fn close(&self, (): &(), h: Handle) -> CallResult {
        self.0.borrow().resolve(&h).map(|_| 0)
    }

    fn recalled(&self, (): &(), _h: Handle, _grant: u32) -> CallResult {
        Ok(0)
    }

    fn mknod(
        &self,
        (): &(),
        dir: Handle,
        name: &[u8],
        mode: u32,
        rdev: u64,
        made: &mut Handle,
        attr: &mut Stat,
    ) -> CallResult {
        if !node::is_valid(mode) {
            return Err(EINVAL);
        }
        let mut m = self.0.borrow_mut();
        let ino = m.add(&dir, name, Kind::Node(rdev), mode)?;
        *made = m.handle(ino);
        *attr = m.stat(ino);
        Ok(0)
    }

    fn getxattr(&self, (): &(), h: Handle, name: &[u8], value: &mut [u8], cap: u32) -> CallResult {
        if !xattr::name_ok(name) {
            return Err(EOPNOTSUPP);
        }
        let m = self.0.borrow();
        let v = m.objects[&m.resolve(&h)?].xattrs.get(name).ok_or(ENODATA)?;
        if cap != 0 && v.len() > value.len() {
            return Err(ERANGE);
        }
        let n = v.len().min(value.len());
        value[..n].copy_from_slice(&v[..n]);
        Ok(v.len() as i64)
    }

    fn setxattr(&self, (): &(), h: Handle, name: &[u8], value: &[u8], flags: u32) -> CallResult {
        if !xattr::name_ok(name) {
            return Err(EOPNOTSUPP);
        }
        if flags & !(xattr::CREATE | xattr::REPLACE) != 0 || value.len() > xattr::MAX_VALUE {
            return Err(EINVAL);
        }
        let mut m = self.0.borrow_mut();
        let ino = m.resolve(&h)?;
        let x = &mut m.objects.get_mut(&ino).unwrap().xattrs;
        match (x.contains_key(name), flags) {
            (true, xattr::CREATE) => return Err(EEXIST),
            (false, xattr::REPLACE) => return Err(ENODATA),
            _ => {}
        }
        x.insert(name.to_vec(), value.to_vec());
        Ok(0)
    }

    fn listxattr(&self, (): &(), h: Handle, names: &mut [u8], cap: u32) -> CallResult {
        let m = self.0.borrow();
        let mut all = Vec::new();
        for name in m.objects[&m.resolve(&h)?].xattrs.keys() {
            all.extend_from_slice(name);
            all.push(0);
        }
        if cap != 0 && all.len() > names.len() {
            return Err(ERANGE);
        }
        let n = all.len().min(names.len());
        names[..n].copy_from_slice(&all[..n]);
        Ok(all.len() as i64)
    }

    fn removexattr(&self, (): &(), h: Handle, name: &[u8]) -> CallResult {
        if !xattr::name_ok(name) {
            return Err(EOPNOTSUPP);
        }
        let mut m = self.0.borrow_mut();
        let ino = m.resolve(&h)?;
        let x = &mut m.objects.get_mut(&ino).unwrap().xattrs;
        x.remove(name).map(|_| 0).ok_or(ENODATA)
    }

    fn statfs(&self, (): &(), h: Handle, st: &mut StatFs) -> CallResult {
        let m = self.0.borrow();
        m.resolve(&h)?;
        *st = StatFs {
            kind: 0x0102_1994,
            bsize: 4096,
            frsize: 4096,
            blocks: 1000,
            bfree: 900,
            bavail: 900,
            files: 100,
            ffree: 100 - m.objects.len() as u64,
            namelen: 255,
        };
        Ok(0)
    }
}

/// Stubs straight into the dispatcher (what the ION does with a call).
struct Direct(Srv);

impl Transport for Direct {
    fn call(
        &self,
        plugin: u16,
        function: u16,
        encode: &dyn Fn(&mut Encoder<'_>) -> Result<(), MarshalError>,
        decode: &mut dyn FnMut(&mut Decoder<'_>) -> Result<(), MarshalError>,
    ) -> Result<(), CallError> {
        assert_eq!(plugin, zoidfs::ID);
        let mut req = vec![0u8; 1 << 20];
        let n = encode_args(encode, &mut req)?;
        let mut rep = vec![0u8; 1 << 20];
        match zoidfs::dispatch(&self.0, &(), function, &req[..n], &mut rep) {
            Ok(Reply { errno: 0, len }) => decode_reply_args(&rep[..len], decode),
            Ok(r) => Err(CallError::Errno(r.errno)),
            Err(e) => Err(CallError::Errno(e.errno())),
        }
    }
}

fn fs() -> Direct {
    Direct(Srv(RefCell::new(Model::new())))
}

fn errno(e: i32) -> Result<i64, CallError> {
    Err(CallError::Errno(e))
}

fn root(t: &Direct) -> Handle {
    let (mut h, mut st) = (Handle::default(), Stat::default());
    assert_eq!(client::root(t, b"", &mut h, &mut st), Ok(0));
    assert_eq!(st.mode & 0o170000, S_IFDIR);
    h
}

#[test]
fn declaration() {
    assert_eq!((zoidfs::ID, zoidfs::NAME), (4, "zoidfs"));
    assert_eq!(zoidfs::FUNCTIONS.len(), 24);
    assert_eq!(zoidfs::function_name(20), Some("mknod"));
    assert_eq!(zoidfs::function_name(24), Some("removexattr"));
    assert_eq!(zoidfs::function_name(17), Some("open"));
    assert_eq!(zoidfs::function_name(19), Some("recalled"));
    assert_eq!(Recall::SIZE, Handle::SIZE + 8 + 4);
    assert_eq!(zoidfs::function_name(12), Some("readdir"));
    assert_eq!(Handle::SIZE, 1 + MAX_HANDLE);
    assert_eq!(SetAttr::SIZE, 4 * 4 + 8 * 3 + 4 * 2);
    assert_eq!(StatFs::SIZE, 8 * 6 + 4 * 3);
    // Deferred answers fit the calls that return `ret` alone.
    assert!(zoidfs::reply_is_ret_only(zoidfs::func::remove));
    assert!(zoidfs::reply_is_ret_only(zoidfs::func::close));
    // commit answers with the ION's write verifier.
    assert!(!zoidfs::reply_is_ret_only(zoidfs::func::commit));
    // open waits for recalls: the ION defers its answer.
    assert!(zoidfs::reply_is_ret_only(zoidfs::func::open));
    assert!(!zoidfs::reply_is_ret_only(zoidfs::func::lookup));
}

#[test]
fn handles_have_one_encoding() {
    assert!(Handle::new(&[]).is_none());
    assert!(Handle::new(&[7; MAX_HANDLE + 1]).is_none());
    let h = Handle::new(&[1, 2, 3]).unwrap();
    assert_eq!(h.as_bytes(), &[1, 2, 3]);
    let mut buf = [0u8; 1 + MAX_HANDLE];
    Encoder::new(&mut buf).put(&h).unwrap();
    assert_eq!(Decoder::new(&buf).get::<Handle>(), Ok(h));
    // A zero length, a length past the bytes, bytes past the length.
    for bad in [(0usize, 0u8), (0, (MAX_HANDLE + 1) as u8), (10, 0xff)] {
        let mut b = buf;
        if bad.0 == 0 {
            b[0] = bad.1;
        } else {
            b[1 + bad.0] = bad.1;
        }
        assert_eq!(
            Decoder::new(&b).get::<Handle>(),
            Err(MarshalError::BadValue)
        );
    }
    assert_eq!(MarshalError::BadValue.errno(), EINVAL);
    assert_eq!(
        Decoder::new(&buf[..MAX_HANDLE]).get::<Handle>(),
        Err(MarshalError::Truncated)
    );
}

#[test]
fn setattr_requests_are_checked() {
    let ok = |valid, nsec| {
        SetAttr {
            valid,
            atime_nsec: nsec,
            mtime_nsec: nsec,
            ..SetAttr::default()
        }
        .is_valid()
    };
    assert!(ok(0, 0));
    assert!(ok(
        setattr::MODE | setattr::SIZE | setattr::MTIME,
        999_999_999
    ));
    assert!(!ok(setattr::MTIME, 1_000_000_000));
    // The clock's time: the nanoseconds do not matter.
    assert!(ok(setattr::MTIME | setattr::MTIME_NOW, 1_000_000_000));
    assert!(!ok(setattr::ATIME_NOW, 0));
    assert!(!ok(1 << 8, 0));
    let neg = SetAttr {
        valid: setattr::SIZE,
        size: -1,
        ..SetAttr::default()
    };
    assert!(!neg.is_valid());
    let t = fs();
    let r = root(&t);
    let mut st = Stat::default();
    assert_eq!(client::setattr(&t, r, neg, &mut st), errno(EINVAL));
}

#[test]
fn namespace_operations() {
    let t = fs();
    let r = root(&t);
    let (mut d, mut f, mut st) = (Handle::default(), Handle::default(), Stat::default());
    assert_eq!(client::mkdir(&t, r, b"d", 0o750, &mut d, &mut st), Ok(0));
    assert_eq!(st.mode, S_IFDIR | 0o750);
    assert_eq!(
        client::mkdir(&t, r, b"d", 0o750, &mut d, &mut st),
        errno(EEXIST)
    );
    assert_eq!(
        client::create(&t, d, b"f", 0o640, true, &mut f, &mut st),
        Ok(0)
    );
    assert_eq!(st.mode, S_IFREG | 0o640);
    let mut again = Handle::default();
    assert_eq!(
        client::create(&t, d, b"f", 0o600, true, &mut again, &mut st),
        errno(EEXIST)
    );
    assert_eq!(
        client::create(&t, d, b"f", 0o600, false, &mut again, &mut st),
        Ok(0)
    );
    assert_eq!(again, f);
    let mut found = Handle::default();
    assert_eq!(client::lookup(&t, d, b"f", &mut found, &mut st), Ok(0));
    assert_eq!(found, f);
    assert_eq!(
        client::lookup(&t, d, b"nope", &mut found, &mut st),
        errno(ENOENT)
    );
    assert_eq!(
        client::lookup(&t, f, b"x", &mut found, &mut st),
        errno(ENOTDIR)
    );
    // Hard link, symlink, readlink.
    assert_eq!(client::link(&t, f, r, b"f2", &mut st), Ok(0));
    assert_eq!(st.nlink, 2);
    let mut l = Handle::default();
    assert_eq!(client::symlink(&t, r, b"l", b"d/f", &mut l, &mut st), Ok(0));
    let mut target = [0u8; 16];
    assert_eq!(client::readlink(&t, l, &mut target, 16), Ok(3));
    assert_eq!(&target[..3], b"d/f");
    // rmdir of a full directory, rename with and without NOREPLACE.
    assert_eq!(client::remove(&t, r, b"d", true), errno(ENOTEMPTY));
    assert_eq!(client::remove(&t, r, b"d", false), errno(EISDIR));
    assert_eq!(
        client::rename(&t, d, b"f", r, b"f2", rename::NOREPLACE),
        errno(EEXIST)
    );
    assert_eq!(client::rename(&t, d, b"f", r, b"g", 0), Ok(0));
    assert_eq!(client::remove(&t, r, b"d", true), Ok(0));
    // The removed directory's handle is stale; so is any handle the ION
    // never gave out.
    assert_eq!(client::getattr(&t, d, &mut st), errno(ESTALE));
    let forged = Handle::new(&[0; 12]).unwrap();
    assert_eq!(client::getattr(&t, forged, &mut st), errno(ESTALE));
    let mut sfs = StatFs::default();
    assert_eq!(client::statfs(&t, r, &mut sfs), Ok(0));
    assert_eq!(sfs.namelen, 255);
}

#[test]
fn data_and_attributes() {
    let t = fs();
    let r = root(&t);
    let (mut f, mut st) = (Handle::default(), Stat::default());
    assert_eq!(
        client::create(&t, r, b"f", 0o644, true, &mut f, &mut st),
        Ok(0)
    );
    let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
    let mut verf = 0;
    assert_eq!(
        client::write(&t, f, 0, &data, false, &mut st, &mut verf),
        Ok(100_000)
    );
    assert_eq!((st.size, verf), (100_000, VERIFIER));
    assert_eq!(
        client::write(&t, f, 200_000, b"end", true, &mut st, &mut verf),
        Ok(3)
    );
    assert_eq!(st.size, 200_003);
    let mut back = vec![0u8; 65536];
    assert_eq!(client::read(&t, f, 50_000, &mut back, 65536), Ok(65536));
    assert_eq!(&back[..50_000], &data[50_000..]);
    assert!(back[50_000..].iter().all(|&b| b == 0));
    // Inside the hole: zeros; at the end: 0 bytes.
    assert_eq!(client::read(&t, f, 150_000, &mut back, 16), Ok(16));
    assert_eq!(&back[..16], &[0; 16]);
    assert_eq!(client::read(&t, f, 200_003, &mut back, 16), Ok(0));
    let set = SetAttr {
        valid: setattr::SIZE | setattr::MODE | setattr::MTIME,
        size: 10,
        mode: 0o600,
        mtime_sec: 1_700_000_000,
        mtime_nsec: 123_456_789,
        ..SetAttr::default()
    };
    assert_eq!(client::setattr(&t, f, set, &mut st), Ok(0));
    assert_eq!((st.size, st.mode), (10, S_IFREG | 0o600));
    assert_eq!((st.mtime_sec, st.mtime_nsec), (1_700_000_000, 123_456_789));
    verf = 0;
    assert_eq!(client::commit(&t, f, true, &mut verf), Ok(0));
    assert_eq!(verf, VERIFIER);
    assert_eq!(client::read(&t, r, 0, &mut back, 16), errno(EISDIR));
}

#[test]
fn special_files() {
    let t = fs();
    let r = root(&t);
    let (mut h, mut st) = (Handle::default(), Stat::default());
    assert_eq!(
        client::mknod(&t, r, b"p", node::FIFO | 0o640, 0, &mut h, &mut st),
        Ok(0)
    );
    assert_eq!((st.mode, st.rdev), (node::FIFO | 0o640, 0));
    assert_eq!(
        client::mknod(&t, r, b"c", node::CHR | 0o600, 0x103, &mut h, &mut st),
        Ok(0)
    );
    assert_eq!((st.mode, st.rdev), (node::CHR | 0o600, 0x103));
    // Regular files, directories and symlinks have calls of their own;
    // stray bits are refused.
    for bad in [
        S_IFREG | 0o644,
        S_IFDIR | 0o755,
        S_IFLNK | 0o777,
        node::FIFO | 0o1_000_000,
    ] {
        assert_eq!(
            client::mknod(&t, r, b"x", bad, 0, &mut h, &mut st),
            errno(EINVAL)
        );
    }
    assert!(node::is_valid(node::SOCK | 0o7777) && node::is_valid(node::BLK));
    assert!(!node::is_valid(0o644));
}

#[test]
fn extended_attributes() {
    let t = fs();
    let r = root(&t);
    let (mut f, mut st) = (Handle::default(), Stat::default());
    assert_eq!(
        client::create(&t, r, b"f", 0o644, true, &mut f, &mut st),
        Ok(0)
    );
    let mut buf = [0u8; 64];
    assert_eq!(
        client::getxattr(&t, f, b"user.a", &mut buf, 64),
        errno(ENODATA)
    );
    assert_eq!(
        client::setxattr(&t, f, b"user.a", b"one", xattr::REPLACE),
        errno(ENODATA)
    );
    assert_eq!(
        client::setxattr(&t, f, b"user.a", b"one", xattr::CREATE),
        Ok(0)
    );
    assert_eq!(
        client::setxattr(&t, f, b"user.a", b"two", xattr::CREATE),
        errno(EEXIST)
    );
    assert_eq!(
        client::setxattr(&t, f, b"user.a", b"three", xattr::REPLACE),
        Ok(0)
    );
    assert_eq!(client::setxattr(&t, f, b"trusted.b", b"", 0), Ok(0));
    // Size 0 asks for the length only; too small a buffer is ERANGE.
    assert_eq!(client::getxattr(&t, f, b"user.a", &mut buf, 0), Ok(5));
    assert_eq!(
        client::getxattr(&t, f, b"user.a", &mut buf[..2], 2),
        errno(ERANGE)
    );
    assert_eq!(client::getxattr(&t, f, b"user.a", &mut buf, 64), Ok(5));
    assert_eq!(&buf[..5], b"three");
    assert_eq!(client::listxattr(&t, f, &mut buf, 0), Ok(17));
    assert_eq!(client::listxattr(&t, f, &mut buf, 64), Ok(17));
    assert_eq!(&buf[..17], b"trusted.b\0user.a\0");
    assert_eq!(client::removexattr(&t, f, b"user.a"), Ok(0));
    assert_eq!(client::removexattr(&t, f, b"user.a"), errno(ENODATA));
    for name in [
        &b"security.x"[..],
        b"system.posix_acl_accesS",
        b"system.posix_acl",
        b"user.",
        b"user",
    ] {
        assert!(!xattr::name_ok(name));
        assert_eq!(
            client::getxattr(&t, f, name, &mut buf, 64),
            errno(EOPNOTSUPP)
        );
    }
    assert!(!xattr::name_ok(&[b'u'; 300]));
}

#[test]
fn acl_flags_sit_above_every_mode_bit() {
    // S_IFMT and the permission bits (0o177777) never meet the flags.
    assert_eq!(zoidfs::MODE_BITS, 0o177777);
    for flag in [zoidfs::MODE_HAS_ACL, zoidfs::MODE_HAS_DEFAULT_ACL] {
        assert_eq!(flag & zoidfs::MODE_BITS, 0);
        assert_eq!(flag.count_ones(), 1);
    }
    assert_ne!(zoidfs::MODE_HAS_ACL, zoidfs::MODE_HAS_DEFAULT_ACL);
}

#[test]
fn xattr_lists_keep_forwarded_names() {
    let mut list =
        b"security.selinux\0user.a\0system.posix_acl_access\0system.x\0trusted.t\0".to_vec();
    let n = list.len();
    assert_eq!(xattr::filter_list(&mut list, n), Some(41));
    assert_eq!(&list[..41], b"user.a\0system.posix_acl_access\0trusted.t\0");
    assert!(xattr::is_acl(xattr::ACL_ACCESS) && xattr::is_acl(xattr::ACL_DEFAULT));
    assert!(xattr::name_ok(xattr::ACL_DEFAULT));
    // A last name without its NUL is malformed.
    let mut bad = b"user.a\0user.b".to_vec();
    assert_eq!(xattr::filter_list(&mut bad, 13), None);
    assert_eq!(xattr::filter_list(&mut [], 0), Some(0));
}

proptest! {
    /// Filtering keeps exactly the forwarded names, in order.
    #[test]
    fn xattr_filter_matches_name_ok(
        names in proptest::collection::vec(
            (0usize..4, proptest::collection::vec(1u8..=255, 0..6)), 0..12)
    ) {
        let prefixes: [&[u8]; 4] = [b"user.", b"trusted.", b"security.", b"system."];
        let mut list = Vec::new();
        let mut want = Vec::new();
        for (p, rest) in &names {
            let mut name = prefixes[*p].to_vec();
            name.extend_from_slice(rest);
            list.extend_from_slice(&name);
            list.push(0);
            if xattr::name_ok(&name) {
                want.extend_from_slice(&name);
                want.push(0);
            }
        }
        let n = list.len();
        let kept = xattr::filter_list(&mut list, n).unwrap();
        prop_assert_eq!(&list[..kept], &want[..]);
    }
}

#[test]
fn readdir_resumes_at_cookies() {
    let t = fs();
    let r = root(&t);
    let (mut h, mut st) = (Handle::default(), Stat::default());
    let mut want = Vec::new();
    for i in 0..300 {
        let name = format!("entry-{i:05}");
        assert_eq!(
            client::create(&t, r, name.as_bytes(), 0o644, true, &mut h, &mut st),
            Ok(0)
        );
        want.push(name.into_bytes());
    }
    // Small batches: every call returns what fits, resumes at the last
    // cookie, and the union is every name once, in order.
    let mut got = Vec::new();
    let mut cookie = 0i64;
    let mut buf = vec![0u8; 200];
    let mut calls = 0;
    loop {
        let n = client::readdir(&t, r, cookie, &mut buf, 200).unwrap();
        calls += 1;
        if n == 0 {
            break;
        }
        for d in dirents(&buf[..n as usize]) {
            let d = d.unwrap();
            assert_eq!(d.kind, DT_REG);
            got.push(d.name.to_vec());
            cookie = d.off;
        }
    }
    assert_eq!(got, want);
    assert!(calls > 30, "{calls} calls");
}

proptest! {
    /// Any handle bytes survive the wire unchanged.
    #[test]
    fn handle_round_trip(bytes in proptest::collection::vec(any::<u8>(), 1..=MAX_HANDLE)) {
        let h = Handle::new(&bytes).unwrap();
        let mut buf = [0u8; 1 + MAX_HANDLE];
        Encoder::new(&mut buf).put(&h).unwrap();
        let back = Decoder::new(&buf).get::<Handle>().unwrap();
        prop_assert_eq!(back.as_bytes(), &bytes[..]);
    }
}

#[test]
fn recall_bodies_round_trip() {
    let r = Recall {
        handle: Handle::new(&[9, 8, 7]).unwrap(),
        ino: 1 << 40,
        grant: 77,
    };
    let mut buf = [0u8; Recall::SIZE];
    r.put(&mut Encoder::new(&mut buf)).unwrap();
    let mut d = Decoder::new(&buf);
    assert_eq!(Recall::get(&mut d).unwrap(), r);
    d.finish().unwrap();
    // A handle with garbage past its length is refused.
    buf[5] = 1;
    assert!(Recall::get(&mut Decoder::new(&buf)).is_err());
}

#[test]
fn relaxed_grants_the_only_opener_and_recalls_it_for_a_second() {
    use relaxed::{admit, pending, recalled, Admit, Opener};
    let mut sent = Vec::new();
    let mut files = vec![Opener::new(1)];
    // CN 1 alone: it may cache.
    assert_eq!(
        admit(&mut files, 1, 5, |n, g| sent.push((n, g))),
        Admit::Grant(5)
    );
    assert!(sent.is_empty());
    // CN 2 opens: CN 1's grant is recalled, CN 2 waits, nobody caches.
    files.push(Opener::new(2));
    assert_eq!(
        admit(&mut files, 2, 6, |n, g| sent.push((n, g))),
        Admit::Shared { wait: true }
    );
    assert_eq!(sent, [(1, 5)]);
    assert!(files.iter().all(|o| o.grant == 0));
    // A stale or foreign answer changes nothing; CN 1's answer frees CN 2.
    assert!(!recalled(&mut files, 1, 4));
    assert!(!recalled(&mut files, 2, 5));
    assert!(pending(&files));
    assert!(recalled(&mut files, 1, 5));
    assert!(!pending(&files));
    // CN 3 opens too: nothing to recall, no wait.
    files.push(Opener::new(3));
    sent.clear();
    assert_eq!(
        admit(&mut files, 3, 7, |n, g| sent.push((n, g))),
        Admit::Shared { wait: false }
    );
    assert!(sent.is_empty());
}

#[test]
fn relaxed_closing_holder_ends_its_recall() {
    use relaxed::{abandon, admit, pending, Admit, Opener};
    let mut files = vec![Opener::new(1)];
    assert_eq!(admit(&mut files, 1, 1, |_, _| {}), Admit::Grant(1));
    files.push(Opener::new(2));
    assert_eq!(
        admit(&mut files, 2, 2, |_, _| {}),
        Admit::Shared { wait: true }
    );
    // CN 1 closes (its entry goes) before answering: nothing is pending.
    files.retain(|o| o.node != 1);
    assert!(!pending(&files));
    // CN 2, alone again, is granted at its next first open.
    assert_eq!(admit(&mut files, 2, 3, |_, _| {}), Admit::Grant(3));
    // A holder that never answers is given up on.
    files.push(Opener::new(4));
    assert_eq!(
        admit(&mut files, 4, 4, |_, _| {}),
        Admit::Shared { wait: true }
    );
    assert_eq!(abandon(&mut files), 1);
    assert!(!pending(&files));
    assert_eq!(relaxed::next_grant(u32::MAX), 1);
}

proptest! {
    /// Whatever CNs open, close and answer, at most one CN holds a grant,
    /// and only while it is the file's only opener.
    #[test]
    fn relaxed_never_grants_two_cns(ops in proptest::collection::vec((0u8..3, 1u16..5), 0..60)) {
        use relaxed::{admit, next_grant, recalled, Opener};
        let mut files: Vec<Opener> = Vec::new();
        let mut last = 0;
        let mut outstanding: Vec<(u16, u32)> = Vec::new();
        for (op, node) in ops {
            match op {
                0 if !files.iter().any(|o| o.node == node) => {
                    files.push(Opener::new(node));
                    last = next_grant(last);
                    admit(&mut files, node, last, |n, g| outstanding.push((n, g)));
                }
                1 => files.retain(|o| o.node != node),
                _ => {
                    if let Some(i) = outstanding.iter().position(|&(n, _)| n == node) {
                        let (n, g) = outstanding.remove(i);
                        recalled(&mut files, n, g);
                    }
                }
            }
            let holders = files.iter().filter(|o| o.grant != 0).count();
            prop_assert!(holders <= 1);
            if holders == 1 {
                prop_assert_eq!(files.len(), 1);
            }
        }
    }
}
