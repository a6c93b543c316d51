// SPDX-License-Identifier: GPL-2.0

//! `/dev/zoid`: user programs issue forwarded calls through ioctls, with no
//! daemon in the path.
//!
//! `ZOID_IOC_CALL` takes a [`IocCall`] (see `include/uapi/zoid.h` in
//! `tools/zoid/`): the plug-in and function ids and the arguments already
//! marshalled (the user library uses the same wire encoding as the
//! kernel's generated stubs).  The calling task's pid and filesystem
//! credentials go with the call.  When the file is closed (the process
//! ended), the ION is told, so it releases what the process held.
//!
//! On an ION, `ZOID_IOC_F2CN` ([`IocF2cn`]) copies a file to every CN
//! (f2cn, [`crate::f2cn`]); it needs `CAP_SYS_ADMIN`.

use crate::client::{Args, Client};
use crate::f2cn::{self, F2cn};
use crate::job_launch::{Launcher, IOC_JOB_KILL_LEN, IOC_JOB_RUN_LEN};
use crate::zoid_kernel::cred::{current_is_admin, Creds};
use crate::zoid_kernel::vfs;
use kernel::fs::File;
use kernel::ioctl::{_IOW, _IOWR};
use kernel::miscdevice::{MiscDevice, MiscDeviceRegistration};
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::Arc;
use kernel::uaccess::{UserPtr, UserSlice};

/// Bytes of `struct zoid_ioc_call`.
pub(crate) const IOC_CALL_LEN: usize = 48;
/// `_IOWR('Z', 1, struct zoid_ioc_call)`.
pub(crate) const ZOID_IOC_CALL: u32 = _IOWR::<[u8; IOC_CALL_LEN]>(b'Z' as u32, 1);
/// `_IOWR('Z', 2, struct zoid_ioc_info)`: the attach limits.
pub(crate) const ZOID_IOC_INFO: u32 = _IOWR::<[u8; IOC_INFO_LEN]>(b'Z' as u32, 2);
/// Bytes of `struct zoid_ioc_info`.
pub(crate) const IOC_INFO_LEN: usize = 24;
/// `_IOWR('Z', 3, struct zoid_ioc_f2cn)`: file broadcast (ION).
pub(crate) const ZOID_IOC_F2CN: u32 = _IOWR::<[u8; IOC_F2CN_LEN]>(b'Z' as u32, 3);
/// `ZOID_IOC_JOB_RUN`: launches a job on CNs (an ION's `zoid-job run`).
pub(crate) const ZOID_IOC_JOB_RUN: u32 = _IOWR::<[u8; IOC_JOB_RUN_LEN]>(b'Z' as u32, 4);
/// `ZOID_IOC_JOB_KILL`: signals a launched job.
pub(crate) const ZOID_IOC_JOB_KILL: u32 = _IOW::<[u8; IOC_JOB_KILL_LEN]>(b'Z' as u32, 5);
/// Bytes of `struct zoid_ioc_f2cn`.
pub(crate) const IOC_F2CN_LEN: usize = 48;
/// `zoid_ioc_f2cn.mode` meaning "the source's permission bits".
pub(crate) const F2CN_MODE_KEEP: u32 = u32::MAX;
/// Most target CNs one `ZOID_IOC_F2CN` names.
const F2CN_MAX_NODES: u32 = 4096;

/// `struct zoid_ioc_call`, native-endian like every ioctl argument.
///
/// ```c
/// struct zoid_ioc_call {
///     __u16 plugin, function; __u32 flags;
///     __u32 timeout_ms;       /* 0: the client's timeout_ms knob */
///     __u32 args_len;
///     __u64 args;             /* marshalled arguments */
///     __u64 reply;            /* buffer for the marshalled results */
///     __u32 reply_cap;
///     __u32 reply_len;        /* out: bytes of results */
///     __s32 error;            /* out: 0 or the ION's positive errno */
///     __u32 reserved;         /* must be 0 */
/// };
/// ```
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct IocCall {
    pub(crate) plugin: u16,
    pub(crate) function: u16,
    pub(crate) flags: u32,
    pub(crate) timeout_ms: u32,
    pub(crate) args_len: u32,
    pub(crate) args: u64,
    pub(crate) reply: u64,
    pub(crate) reply_cap: u32,
    pub(crate) reply_len: u32,
    pub(crate) error: i32,
    pub(crate) reserved: u32,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
impl IocCall {
    /// Decodes the user's bytes.
    pub(crate) fn decode(b: &[u8; IOC_CALL_LEN]) -> Self {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[16..24]);
        let args = u64::from_ne_bytes(w);
        w.copy_from_slice(&b[24..32]);
        let reply = u64::from_ne_bytes(w);
        Self {
            plugin: u16_at(b, 0),
            function: u16_at(b, 2),
            flags: u32_at(b, 4),
            timeout_ms: u32_at(b, 8),
            args_len: u32_at(b, 12),
            args,
            reply,
            reply_cap: u32_at(b, 32),
            reply_len: u32_at(b, 36),
            error: u32_at(b, 40) as i32,
            reserved: u32_at(b, 44),
        }
    }

    /// The out fields, at their offsets.
    pub(crate) fn encode_out(&self, b: &mut [u8; IOC_CALL_LEN]) {
        b[36..40].copy_from_slice(&self.reply_len.to_ne_bytes());
        b[40..44].copy_from_slice(&self.error.to_ne_bytes());
    }
}

/// `struct zoid_ioc_f2cn`, native-endian.
///
/// ```c
/// struct zoid_ioc_f2cn {
///     __s32 fd;               /* source, open for reading */
///     __u32 mode;             /* bits on the CNs; ~0: the source's */
///     __u64 path;             /* destination (absolute, NUL-terminated) */
///     __u64 nodes;            /* __u16 target CNs, or 0: every CN */
///     __u32 nnodes;
///     __u32 timeout_ms;       /* per phase; 0: the timeout_ms knob */
///     __u64 bytes;            /* out: file bytes sent */
///     __u32 cns;              /* out: CNs that have the file */
///     __u16 failed_node;      /* out: the CN that failed, or 0xffff */
///     __u16 reserved;         /* must be 0 */
/// };
/// ```
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct IocF2cn {
    pub(crate) fd: i32,
    pub(crate) mode: u32,
    pub(crate) path: u64,
    pub(crate) nodes: u64,
    pub(crate) nnodes: u32,
    pub(crate) timeout_ms: u32,
    pub(crate) bytes: u64,
    pub(crate) cns: u32,
    pub(crate) failed_node: u16,
    pub(crate) reserved: u16,
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_ne_bytes(w)
}

impl IocF2cn {
    /// Decodes the user's bytes.
    pub(crate) fn decode(b: &[u8; IOC_F2CN_LEN]) -> Self {
        Self {
            fd: u32_at(b, 0) as i32,
            mode: u32_at(b, 4),
            path: u64_at(b, 8),
            nodes: u64_at(b, 16),
            nnodes: u32_at(b, 24),
            timeout_ms: u32_at(b, 28),
            bytes: u64_at(b, 32),
            cns: u32_at(b, 40),
            failed_node: u16_at(b, 44),
            reserved: u16_at(b, 46),
        }
    }

    /// The out fields, at their offsets.
    pub(crate) fn encode_out(&self, b: &mut [u8; IOC_F2CN_LEN]) {
        b[32..40].copy_from_slice(&self.bytes.to_ne_bytes());
        b[40..44].copy_from_slice(&self.cns.to_ne_bytes());
        b[44..46].copy_from_slice(&self.failed_node.to_ne_bytes());
    }
}

/// What `/dev/zoid` serves: the client and f2cn.
type Published = (Arc<Client>, Arc<F2cn>, Arc<Launcher>);

kernel::sync::global_lock! {
    // SAFETY: initialised in the module initialiser before any use.
    unsafe(uninit) static CLIENT: Mutex<Option<Published>> = None;
}

/// Initialises the client slot; called once, first thing in module init.
pub(crate) fn init_slot() {
    // SAFETY: called once, before any other use of `CLIENT`.
    unsafe { CLIENT.init() };
}

/// Publishes (or, with `None`, withdraws) what `/dev/zoid` uses.
pub(crate) fn publish(p: Option<Published>) {
    *CLIENT.lock() = p;
}

/// The published client (`ENODEV` while zoid is not up).
pub(crate) fn client() -> Result<Arc<Client>> {
    CLIENT.lock().as_ref().map(|p| p.0.clone()).ok_or(ENODEV)
}

fn launcher() -> Result<Arc<Launcher>> {
    CLIENT.lock().as_ref().map(|p| p.2.clone()).ok_or(ENODEV)
}

fn f2cn_side() -> Result<Arc<F2cn>> {
    CLIENT.lock().as_ref().map(|p| p.1.clone()).ok_or(ENODEV)
}

/// One open `/dev/zoid`.
pub(crate) struct ZoidFile {
    /// Process that opened it (told to the ION on close).
    pid: u32,
    /// Calls issued through this file.
    calls: Atomic<u64>,
}

#[vtable]
impl MiscDevice for ZoidFile {
    type Ptr = KBox<Self>;

    fn open(_file: &File, _misc: &MiscDeviceRegistration<Self>) -> Result<KBox<Self>> {
        client()?;
        Ok(KBox::new(
            ZoidFile {
                pid: Creds::current().pid,
                calls: Atomic::new(0),
            },
            GFP_KERNEL,
        )?)
    }

    fn release(me: KBox<Self>, _file: &File) {
        if me.calls.load(Relaxed) != 0 {
            if let Ok(client) = client() {
                client.process_exit(me.pid);
            }
        }
    }

    fn ioctl(me: &ZoidFile, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        let client = client()?;
        match cmd {
            ZOID_IOC_CALL => me.call(&client, UserPtr::from_addr(arg)),
            ZOID_IOC_INFO => info(&client, UserPtr::from_addr(arg)),
            ZOID_IOC_F2CN => f2cn_ioctl(&client, UserPtr::from_addr(arg)),
            ZOID_IOC_JOB_RUN => launcher()?.run(UserPtr::from_addr(arg)),
            ZOID_IOC_JOB_KILL => launcher()?.kill(UserPtr::from_addr(arg)),
            _ => Err(ENOTTY),
        }
    }
}

impl ZoidFile {
    fn call(&self, client: &Arc<Client>, arg: UserPtr) -> Result<isize> {
        let (mut reader, mut writer) = UserSlice::new(arg, IOC_CALL_LEN).reader_writer();
        let mut raw = [0u8; IOC_CALL_LEN];
        reader.read_slice(&mut raw)?;
        let mut c = IocCall::decode(&raw);
        if c.reserved != 0 || c.flags > u32::from(u16::MAX) {
            return Err(EINVAL);
        }
        let max = client
            .limits()
            .map_or((4 << 20) + 1024, |(_, l)| l.max_request);
        if c.args_len > max {
            return Err(E2BIG);
        }
        // One copy each way: the arguments go from user memory straight
        // into treenet's pages, the results from the received pages
        // straight to user memory.
        self.calls.fetch_add(1, Relaxed);
        let reply = client.call(
            &Creds::current(),
            c.plugin,
            c.function,
            c.flags as u16,
            Args::User(UserPtr::from_addr(c.args as usize), c.args_len as usize),
            c.timeout_ms,
            None,
            None,
        )?;
        if reply.len() > c.reply_cap as usize {
            return Err(EOVERFLOW);
        }
        reply.copy_to_user(UserPtr::from_addr(c.reply as usize))?;
        c.reply_len = reply.len() as u32;
        c.error = reply.errno;
        c.encode_out(&mut raw);
        writer.write_slice(&raw)?;
        Ok(0)
    }
}

/// `struct zoid_ioc_info { __u16 ion; __u16 pad; __u32 max_request,
/// max_reply, workers, max_outstanding, attached; }`: attaches first.
fn info(client: &Client, arg: UserPtr) -> Result<isize> {
    let _ = client.attach_now();
    let mut out = [0u8; IOC_INFO_LEN];
    if let Some((ion, l)) = client.limits() {
        out[0..2].copy_from_slice(&ion.to_ne_bytes());
        out[4..8].copy_from_slice(&l.max_request.to_ne_bytes());
        out[8..12].copy_from_slice(&l.max_reply.to_ne_bytes());
        out[12..16].copy_from_slice(&l.workers.to_ne_bytes());
        out[16..20].copy_from_slice(&l.max_outstanding.to_ne_bytes());
        out[20..24].copy_from_slice(&1u32.to_ne_bytes());
    }
    UserSlice::new(arg, IOC_INFO_LEN)
        .writer()
        .write_slice(&out)?;
    Ok(0)
}

/// `ZOID_IOC_F2CN`: copies the file behind `fd` to `path` on the CNs.  The
/// out fields are written back on failure too (which CN failed).
fn f2cn_ioctl(client: &Client, arg: UserPtr) -> Result<isize> {
    if !current_is_admin() {
        return Err(EPERM);
    }
    let f2cn = f2cn_side()?;
    let (mut reader, mut writer) = UserSlice::new(arg, IOC_F2CN_LEN).reader_writer();
    let mut raw = [0u8; IOC_F2CN_LEN];
    reader.read_slice(&mut raw)?;
    let mut c = IocF2cn::decode(&raw);
    if c.reserved != 0 || c.nnodes > F2CN_MAX_NODES || (c.nodes == 0) != (c.nnodes == 0) {
        return Err(EINVAL);
    }
    if c.mode != F2CN_MODE_KEEP && c.mode > 0o7777 {
        return Err(EINVAL);
    }
    let mut path = KVec::new();
    path.resize(4096, 0u8, GFP_KERNEL)?;
    let dest = UserSlice::new(UserPtr::from_addr(c.path as usize), path.len())
        .reader()
        .strcpy_into_buf(&mut path)?
        .to_bytes();
    let mut nodes = KVec::new();
    if c.nnodes != 0 {
        let mut raw_nodes = KVec::new();
        raw_nodes.resize(2 * c.nnodes as usize, 0u8, GFP_KERNEL)?;
        UserSlice::new(UserPtr::from_addr(c.nodes as usize), raw_nodes.len())
            .reader()
            .read_slice(&mut raw_nodes)?;
        for p in raw_nodes.chunks_exact(2) {
            nodes.push(u16::from_ne_bytes([p[0], p[1]]), GFP_KERNEL)?;
        }
    }
    let file = vfs::File::from_fd(c.fd)?;
    let timeout_ms = if c.timeout_ms == 0 {
        client.knobs.timeout_ms.load(Relaxed)
    } else {
        c.timeout_ms
    };
    let report = f2cn.send_file(&f2cn::Request {
        file: &file,
        dest,
        mode: (c.mode != F2CN_MODE_KEEP).then_some(c.mode),
        nodes: (c.nnodes != 0).then_some(&nodes[..]),
        timeout_ms,
    });
    c.bytes = report.bytes;
    c.cns = report.cns;
    c.failed_node = report.node;
    c.encode_out(&mut raw);
    writer.write_slice(&raw)?;
    if report.errno != 0 {
        return Err(Error::from_errno(-report.errno));
    }
    Ok(0)
}
