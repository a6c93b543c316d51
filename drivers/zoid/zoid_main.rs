// SPDX-License-Identifier: GPL-2.0

//! zoid: in-kernel function-call forwarding from compute nodes to I/O nodes.
//!
//! One module plays both roles over treenet channel [`CHANNEL`]: the CN
//! client ([`client`]: attach handshake, calls with soft/hard timeouts,
//! `/dev/zoid`) and the ION server ([`server`]: receive thread, scheduler,
//! worker pool, plug-ins).  A node serves only the CNs below it in the
//! tree, so on a CN the server refuses everything it is sent.
//! `docs/zoid.md` describes the protocol and the sysfs interface.

use kernel::prelude::*;
use kernel::sync::atomic::Relaxed;
use kernel::sync::Arc;

mod answers;
mod call_ledger;
mod client;
mod client_abi;
mod devzoid;
mod extern_plugin;
mod f2cn;
mod job_launch;
mod job_plugin;
mod job_ranks;
mod plugin;
mod plugin_abi;
mod server;
mod stats;
mod sysfs_attrs;
mod traffic;
mod unix_plugin;
mod zoidfs_plugin;
mod zoidfs_relaxed;
mod ztest_plugin;

#[path = "../treenet/abi.rs"]
mod treenet;
#[path = "../../rust/zoid_kernel/mod.rs"]
mod zoid_kernel;
#[allow(unused_attributes, unreachable_pub, dead_code)]
#[path = "../../rust/zoid_proto/src/lib.rs"]
mod zoid_proto;

use client::Client;
use plugin::Registry;
use server::{Server, ServerCore};
use stats::Stats;
use zoid_kernel::sysfs::SysfsDir;
use zoid_proto::version::{Version, SUITE_VERSION};
use zoid_proto::zoid::jobs;
use zoid_proto::zoid::wire::{CallHeader, MsgKind, HEADER_LEN as CALL_HEADER_LEN};

/// The treenet channel zoid speaks on.
pub(crate) const CHANNEL: u16 = 4;

module! {
    type: Zoid,
    name: "zoid",
    authors: ["zoid developers"],
    description: "zoid call forwarding: CN client and ION kernel-thread server",
    license: "GPL",
}

/// zoid's state, shared with its sysfs files.
pub(crate) struct ZoidState {
    /// The treenet this zoid runs on.
    pub(crate) treenet: Version,
    /// Counters and histograms.
    pub(crate) stats: Arc<Stats>,
    /// Registered plug-ins.
    pub(crate) plugins: Arc<Registry>,
    /// The CN side.
    pub(crate) client: Arc<Client>,
    /// The ION side.
    pub(crate) server: Arc<Server>,
    /// The `unix` plug-in (its export and root squash are sysfs knobs).
    pub(crate) unix: Arc<unix_plugin::Unix>,
    /// The `zoidfs` plug-in (its named exports are a sysfs knob).
    pub(crate) zoidfs: Arc<zoidfs_plugin::Zoidfs>,
    /// The `job` plug-in (its script is a sysfs knob).
    pub(crate) job: Arc<job_plugin::Job>,
    /// File broadcast.
    pub(crate) f2cn: Arc<f2cn::F2cn>,
    /// Jobs launched from this ION.
    pub(crate) launcher: Arc<job_launch::Launcher>,
    /// Ranks of launched jobs running on this CN.
    pub(crate) ranks: Arc<job_ranks::Ranks>,
}

/// treenet's callbacks: replies go to the client, f2cn's answers to its
/// sender, the rest to the server's receive thread.
struct Net {
    client: Arc<Client>,
    server: Arc<ServerCore>,
    f2cn: Arc<f2cn::F2cn>,
    launcher: Arc<job_launch::Launcher>,
    ranks: Arc<job_ranks::Ranks>,
}

impl treenet::Handler for Net {
    const ANSWERS_IN_SOFTIRQ: bool = true;
    /// Calls and replies pass between a CN and its ION only: an ION never
    /// carries one CN's message to another (a CN posing as the ION).
    const RELAYED_BY_ION: bool = false;

    /// Calls the server allows to run in treenet's receive softirq
    /// (`softirq_calls`; the rest comes to `receive`).
    fn answer_in_softirq(
        &self,
        src: u16,
        below: bool,
        msg: &[u8],
        out: Option<&mut [u8]>,
    ) -> Option<usize> {
        self.server.answer_in_softirq(src, below, msg, out)
    }

    fn receive(&self, src: u16, msg: treenet::Message) {
        let hdr = traffic::header_of(&msg);
        traffic::TRAFFIC.count(traffic::Direction::Received, hdr.as_ref(), msg.len());
        match hdr {
            Some(h) if matches!(h.kind, MsgKind::Reply | MsgKind::AttachReply) => {
                self.client.deliver(src, &h, msg);
            }
            Some(h) if h.kind == MsgKind::FileAck => self.f2cn.ack(src, &h, &msg),
            Some(h) if h.kind == MsgKind::Upcall => self.client.upcall(src, &h, &msg),
            // Launched jobs' streams and ends: quick, here.
            Some(h) if matches!(h.kind, MsgKind::JobOutput | MsgKind::JobExit) => {
                self.launcher.receive(src, &h, msg)
            }
            Some(h) if h.kind == MsgKind::JobCredit && h.function == jobs::STDIN => {
                self.launcher.receive(src, &h, msg)
            }
            Some(h)
                if matches!(
                    h.kind,
                    MsgKind::JobCredit | MsgKind::JobInput | MsgKind::JobInputEnd
                ) =>
            {
                self.ranks.receive(src, &h, msg)
            }
            // Malformed messages too: the server counts them.
            _ => self.server.deliver(src, msg),
        }
    }

    fn peer_event(&self, node: u16, up: bool) {
        self.client.peer_event(node, up);
        self.f2cn.peer_event(node, up);
        self.ranks.ion_event(node, up);
        if !up {
            self.launcher.node_down(node);
            self.server.deliver_gone(node);
        }
    }
}

/// The loaded module.
#[pin_data(PinnedDrop)]
struct Zoid {
    sysfs: Option<SysfsDir<ZoidState>>,
    #[pin]
    misc: kernel::miscdevice::MiscDeviceRegistration<devzoid::ZoidFile>,
    channel: Option<treenet::Channel<Net>>,
}

impl kernel::InPlaceModule for Zoid {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        devzoid::init_slot();
        extern_plugin::init_slot();
        extern_plugin::init_list();
        try_pin_init!(Self {
            sysfs: None,
            misc <- kernel::miscdevice::MiscDeviceRegistration::register(
                kernel::miscdevice::MiscDeviceOptions { name: c"zoid" }
            ),
            channel: None,
        }? Error)
        .pin_chain(|this| {
            // SAFETY: `sysfs` and `channel` are not structurally pinned.
            let this = unsafe { this.get_unchecked_mut() };
            let (sysfs, channel) = start()?;
            this.sysfs = Some(sysfs);
            this.channel = Some(channel);
            Ok(())
        })
    }
}

/// Brings zoid up: plug-ins, server threads, treenet channel, sysfs.
fn start() -> Result<(SysfsDir<ZoidState>, treenet::Channel<Net>)> {
    let treenet = treenet::attach()?;
    let stats = Stats::new_arc()?;
    let plugins = Arc::pin_init(Registry::new(), GFP_KERNEL)?;
    plugins.register(Arc::pin_init(ztest_plugin::Ztest::new(), GFP_KERNEL)?)?;
    // SAFETY: no preconditions.
    if !unsafe { zoid_param_test_plugins() } {
        plugins.set_enabled(b"ztest", false)?;
    }
    let unix = Arc::pin_init(unix_plugin::Unix::new(), GFP_KERNEL)?;
    plugins.register(unix.clone())?;
    let zoidfs = Arc::pin_init(zoidfs_plugin::Zoidfs::new(unix.clone())?, GFP_KERNEL)?;
    plugins.register(zoidfs.clone())?;
    let job = Arc::pin_init(job_plugin::Job::new(unix.clone())?, GFP_KERNEL)?;
    plugins.register(job.clone())?;
    let client = Arc::pin_init(Client::new(stats.clone()), GFP_KERNEL)?;
    let f2cn = Arc::pin_init(f2cn::F2cn::new(), GFP_KERNEL)?;
    let job_stats = Arc::new(job_launch::JobStats::new(), GFP_KERNEL)?;
    let launcher = job_launch::Launcher::new(job_stats.clone(), job.clone())?;
    let ranks = job_ranks::Ranks::new(job_stats, job.clone())?;
    let server = Server::start(plugins.clone(), stats.clone(), f2cn.clone(), ranks.clone())?;
    let net = Arc::new(
        Net {
            client: client.clone(),
            server: server.core().clone(),
            f2cn: f2cn.clone(),
            launcher: launcher.clone(),
            ranks: ranks.clone(),
        },
        GFP_KERNEL,
    )?;
    let export = param_export();
    if !export.is_empty() {
        if !export.starts_with(b"/") {
            pr_err!("export= must be an absolute path\n");
            return Err(EINVAL);
        }
        unix.set_export(export).inspect_err(|e| {
            pr_err!("export= cannot be exported ({:?})\n", e);
        })?;
    }
    let channel = treenet::Channel::register(CHANNEL, net)?;
    devzoid::publish(Some((client.clone(), f2cn.clone(), launcher.clone())));
    extern_plugin::publish(Some(plugins.clone()));
    let state = Arc::new(
        ZoidState {
            treenet,
            stats,
            plugins,
            client,
            server,
            unix,
            zoidfs,
            job,
            f2cn,
            launcher,
            ranks,
        },
        GFP_KERNEL,
    )?;
    let sysfs = SysfsDir::new(c"zoid", state, &sysfs_attrs::ATTRS)?;
    pr_info!(
        "zoid {SUITE_VERSION} loaded (treenet {treenet}, {} workers)\n",
        sysfs.context().server.core().knobs.workers.load(Relaxed)
    );
    Ok((sysfs, channel))
}

extern "C" {
    fn zoid_param_export() -> *const kernel::ffi::c_char;
    fn zoid_param_test_plugins() -> bool;
}

/// The `export=` module parameter (empty when unset).
fn param_export() -> &'static [u8] {
    // SAFETY: no preconditions.
    let p = unsafe { zoid_param_export() };
    if p.is_null() {
        return b"";
    }
    // SAFETY: module parameters are NUL-terminated strings that live as
    // long as the module.
    unsafe { kernel::str::CStr::from_char_ptr(p) }.to_bytes()
}

#[pinned_drop]
impl PinnedDrop for Zoid {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: `sysfs` and `channel` are not structurally pinned.
        let this = unsafe { self.get_unchecked_mut() };
        this.sysfs.take();
        devzoid::publish(None);
        extern_plugin::publish(None);
        // (No rank runs: each holds the module through its descriptors;
        // this waits for the last ends' callbacks.)
        if let Some(c) = this.channel.as_ref() {
            c.handler().ranks.shutdown();
        }
        // No callback runs once the channel is gone; the server's threads
        // stop when its last reference (held by the handler) drops.
        this.channel.take();
        pr_info!("zoid unloaded\n");
    }
}

#[kunit_tests(zoid_core)]
mod tests {
    use super::devzoid::{IocCall, IOC_CALL_LEN};
    use super::plugin::parse_modules_command;
    use super::stats::{Histogram, BUCKETS};
    use super::*;

    #[test]
    fn treenet_is_attached_and_compatible() -> Result {
        let theirs = treenet::attach()?;
        assert!(SUITE_VERSION.is_compatible_with(&theirs));
        Ok(())
    }

    #[test]
    fn modules_commands_parse() -> Result {
        assert_eq!(parse_modules_command(b"unix\n")?, (&b"unix"[..], true));
        assert_eq!(parse_modules_command(b"+ztest")?, (&b"ztest"[..], true));
        assert_eq!(parse_modules_command(b"-ztest\n")?, (&b"ztest"[..], false));
        assert!(parse_modules_command(b"-").is_err());
        assert!(parse_modules_command(b"a b").is_err());
        assert!(parse_modules_command(b"\n").is_err());
        Ok(())
    }

    #[test]
    fn softirq_table_follows_the_enabled_plugins() -> Result {
        use super::plugin::Registry;
        use super::zoid_proto::zoid::plugins::ztest;
        let plugins = Arc::pin_init(Registry::new(), GFP_KERNEL)?;
        let ok = |f: u16| plugins.with_softirq(ztest::ID, |p| p.softirq_ok(f));
        assert_eq!(ok(ztest::func::null), None);
        plugins.register(Arc::pin_init(ztest_plugin::Ztest::new(), GFP_KERNEL)?)?;
        assert_eq!(ok(ztest::func::null), Some(true));
        // A second plug-in with the same id is refused, the first kept.
        let again = plugins.register(Arc::pin_init(ztest_plugin::Ztest::new(), GFP_KERNEL)?);
        assert!(again == Err(EEXIST));
        assert_eq!(ok(ztest::func::null), Some(true));
        assert_eq!(ok(ztest::func::sleep_ms), Some(false));
        assert_eq!(ok(ztest::func::rendezvous), Some(false));
        // Switched off, the plug-in runs nowhere, softirq included.
        plugins.set_enabled(b"ztest", false)?;
        assert_eq!(ok(ztest::func::null), None);
        plugins.set_enabled(b"ztest", true)?;
        assert_eq!(ok(ztest::func::null), Some(true));
        plugins.unregister(ztest::ID);
        assert_eq!(ok(ztest::func::null), None);
        Ok(())
    }

    #[test]
    fn traffic_counts_by_category_and_plugin() {
        use super::traffic::{Category, Direction::*, Traffic};
        let t = Traffic::new();
        let call = CallHeader {
            plugin: 1,
            function: 2,
            ..CallHeader::new(MsgKind::Call, 7)
        };
        let reply = CallHeader {
            plugin: 1,
            ..CallHeader::new(MsgKind::Reply, 7)
        };
        t.count(Sent, Some(&call), 100);
        t.count(Received, Some(&reply), 40);
        t.count(Sent, Some(&CallHeader::new(MsgKind::Attach, 0)), 64);
        t.count(Received, Some(&CallHeader::new(MsgKind::Cancel, 3)), 32);
        t.count(Sent, Some(&CallHeader::new(MsgKind::FileData, 3)), 1000);
        t.count(Received, Some(&CallHeader::new(MsgKind::FileAck, 3)), 36);
        t.count(Received, None, 5);
        assert_eq!(t.of(Category::Call), [1, 1, 100, 40]);
        assert_eq!(t.of(Category::Internal), [1, 1, 64, 32]);
        assert_eq!(t.of(Category::Broadcast), [1, 1, 1000, 36]);
        assert_eq!(t.of(Category::Malformed), [0, 1, 0, 5]);
        assert_eq!(t.of(Category::Upcall), [0; 4]);
        assert_eq!(t.of_plugin(1), Some([1, 1, 100, 40]));
        assert_eq!(t.of_plugin(2), None);
        // From the bytes as sent: the header decodes.
        let mut head = [0u8; CALL_HEADER_LEN];
        CallHeader {
            plugin: 9,
            ..CallHeader::new(MsgKind::Upcall, 0)
        }
        .encode(&mut head);
        t.count_bytes(Received, &head, 48);
        assert_eq!(t.of(Category::Upcall), [0, 1, 0, 48]);
        assert_eq!(t.of_plugin(9), Some([0, 1, 0, 48]));
        // Plug-ins beyond the slots are counted, together.
        for id in 100..120 {
            t.count(Sent, Some(&CallHeader { plugin: id, ..call }), 1);
        }
        assert_eq!(t.of(Category::Call), [21, 1, 120, 40]);
        assert_eq!(t.of_plugin(119), None);
    }

    #[test]
    fn latency_buckets_are_log2_microseconds() {
        assert_eq!(Histogram::bucket_of(0), 0);
        assert_eq!(Histogram::bucket_of(1023), 0);
        assert_eq!(Histogram::bucket_of(1024), 1);
        assert_eq!(Histogram::bucket_of(3 * 1024), 2);
        assert_eq!(Histogram::bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn ioctl_call_struct_decodes_at_the_uapi_offsets() {
        let mut raw = [0u8; IOC_CALL_LEN];
        raw[0..2].copy_from_slice(&1u16.to_ne_bytes());
        raw[2..4].copy_from_slice(&7u16.to_ne_bytes());
        raw[8..12].copy_from_slice(&500u32.to_ne_bytes());
        raw[12..16].copy_from_slice(&12u32.to_ne_bytes());
        raw[16..24].copy_from_slice(&0x1000u64.to_ne_bytes());
        raw[24..32].copy_from_slice(&0x2000u64.to_ne_bytes());
        raw[32..36].copy_from_slice(&64u32.to_ne_bytes());
        let mut c = IocCall::decode(&raw);
        assert_eq!(
            (c.plugin, c.function, c.timeout_ms, c.args_len),
            (1, 7, 500, 12)
        );
        assert_eq!((c.args, c.reply, c.reply_cap), (0x1000, 0x2000, 64));
        c.reply_len = 9;
        c.error = 2;
        c.encode_out(&mut raw);
        let back = IocCall::decode(&raw);
        assert_eq!((back.reply_len, back.error), (9, 2));
    }
}

/// Marshalling and scheduling in the kernel build (the host crate's tests
/// cover them in depth; these check the same code compiled for this arch).
#[kunit_tests(zoid_marshal_sched)]
mod marshal_tests {
    use super::plugin::Caller;
    use super::zoid_kernel::cred::{Creds, MAX_GROUPS};
    use super::zoid_proto::zoid::marshal::{Decoder, Encoder, MarshalError};
    use super::zoid_proto::zoid::plugin::{
        decode_reply_args, encode_args, measure_args, CallError, Transport,
    };
    use super::zoid_proto::zoid::plugins::ztest;
    use super::zoid_proto::zoid::sched::{CallScheduler, Priority, QueuedCall, SchedError};
    use super::*;

    /// Client stubs straight into the ION's dispatch, in one kernel.
    struct Local;

    impl Transport for Local {
        fn call(
            &self,
            plugin: u16,
            function: u16,
            encode: &dyn Fn(&mut Encoder<'_>) -> core::result::Result<(), MarshalError>,
            decode: &mut dyn FnMut(&mut Decoder<'_>) -> core::result::Result<(), MarshalError>,
        ) -> core::result::Result<(), CallError> {
            assert_eq!(plugin, ztest::ID);
            let n = measure_args(encode)?;
            let mut args = KVec::new();
            args.resize(n, 0u8, GFP_KERNEL)
                .map_err(|_| CallError::Transport(12))?;
            encode_args(encode, &mut args)?;
            let mut reply = KVec::new();
            reply
                .resize(4096, 0u8, GFP_KERNEL)
                .map_err(|_| CallError::Transport(12))?;
            let creds = Creds {
                pid: 1,
                uid: 0,
                gid: 0,
                groups: [0; MAX_GROUPS],
                ngroups: 0,
            };
            let stats = Stats::new_arc().map_err(|_| CallError::Transport(12))?;
            let hdr = CallHeader {
                plugin,
                function,
                ..CallHeader::new(MsgKind::Call, 1)
            };
            let ret_only = ztest::reply_is_ret_only(function);
            let caller = Caller::new(1, creds, &hdr, ret_only, stats, None);
            let srv = KBox::pin_init(ztest_plugin::Ztest::new(), GFP_KERNEL)
                .map_err(|_| CallError::Transport(12))?;
            let r = ztest::dispatch(&*srv, &caller, function, &args, &mut reply)
                .map_err(|e| CallError::Transport(e.errno()))?;
            if r.errno != 0 {
                return Err(CallError::Errno(r.errno));
            }
            decode_reply_args(&reply[..r.len], decode)
        }
    }

    #[test]
    fn ztest_calls_round_trip_through_dispatch() {
        let t = Local;
        assert_eq!(ztest::client::null(&t), Ok(0));
        let mut sum = 0i64;
        assert_eq!(ztest::client::add(&t, 40, 2, &mut sum), Ok(0));
        assert_eq!(sum, 42);
        let mut x = 0x1111_2222_3333_4444u64;
        assert_eq!(ztest::client::swap(&t, &mut x), Ok(0));
        assert!(x == 0x3333_4444_1111_2222);
        let mut out = [0u8; 8];
        assert_eq!(ztest::client::echo(&t, b"zoid", &mut out, 8), Ok(4));
        assert_eq!(&out[..4], b"zoid");
        assert_eq!(ztest::client::strlen(&t, b"12345"), Ok(5));
        assert_eq!(ztest::client::fail(&t, 28), Err(CallError::Errno(28)));
    }

    #[test]
    fn f2cn_chunks_complete_in_any_order() {
        use super::zoid_proto::zoid::f2cn::{chunk_digest, Plan, Progress, Step};
        // 3 chunks of 4 KiB, the last partial; they arrive 2, 0, 1.
        static BYTES: [u8; 4096] = [0x5a; 4096];
        let plan = Plan::new(10_000, 4096).unwrap();
        let data = |i: u64| &BYTES[..plan.chunk_range(i).1];
        let mut digest = 0u64;
        for i in 0..3 {
            digest = digest.wrapping_add(chunk_digest(i, data(i)));
        }
        let mut got = [0u64; 1];
        let mut p = Progress::new(plan, &mut got).unwrap();
        assert_eq!(p.data(&mut got, 8192, data(2)), Ok(Step::More));
        assert_eq!(p.commit(10_000, digest), Ok(Step::More));
        assert_eq!(p.data(&mut got, 0, data(0)), Ok(Step::More));
        // The same bytes at another index do not match the digest.
        let mut q = p;
        let mut got2 = got;
        assert!(q.data(&mut got2, 4096, &BYTES[..100]).is_err());
        assert_eq!(p.data(&mut got, 4096, data(1)), Ok(Step::Complete));
    }

    #[test]
    fn scheduler_serves_classes_in_order_and_caps_each_cn() {
        let mut s: CallScheduler<8> = CallScheduler::new(2, 8);
        let call = |handle, cn, class| QueuedCall {
            handle,
            cn,
            class,
            bytes: 0,
        };
        assert_eq!(s.enqueue(call(1, 5, Priority::Bulk)), Ok(()));
        assert_eq!(s.enqueue(call(2, 6, Priority::Small)), Ok(()));
        assert_eq!(s.enqueue(call(3, 5, Priority::Urgent)), Ok(()));
        assert_eq!(
            s.enqueue(call(4, 5, Priority::Small)),
            Err(SchedError::CnOverLimit)
        );
        assert_eq!(s.next().map(|c| c.handle), Some(3));
        assert_eq!(s.next().map(|c| c.handle), Some(2));
        assert_eq!(s.next().map(|c| c.handle), Some(1));
        assert_eq!(s.next(), None);
        assert!(s.done(5, 0));
        assert_eq!(s.enqueue(call(4, 5, Priority::Small)), Ok(()));
    }
}
