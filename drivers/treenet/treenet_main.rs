// SPDX-License-Identifier: GPL-2.0

//! treenet: zoid's tree-network driver.
//!
//! A reliable, message-oriented transport between the nodes of a pset (one
//! ION, its CNs) over ordinary netdevices, with its own ethertype.  See
//! `docs/treenet.md` for the protocol and the kernel API; the pure protocol
//! logic lives in `rust/zoid_proto/src/treenet/`, the engine in `core.rs`.
//!
//! Everything a user touches is under `/sys/kernel/treenet/`: identity
//! (`node_id`, `role`, `pset`), links (`bind`, `unbind`, `links`,
//! `peers`), tuning knobs, fault injection, counters (`stats`,
//! `channels`, `peer_log`) and the self-test driver (`selftest`).

use kernel::ffi::{c_char, c_int};
use kernel::prelude::*;
use kernel::str::CString;
use kernel::sync::{atomic::Relaxed, Arc};

#[path = "../../rust/zoid_kernel/mod.rs"]
mod zoid_kernel;
#[allow(unused_attributes, unreachable_pub, dead_code)]
#[path = "../../rust/zoid_proto/src/lib.rs"]
mod zoid_proto;

mod api;
mod engine;
mod selftest;

use crate::engine::{Treenet, ENGINE_NICE, MAX_TX_BATCH};
use selftest::SelfTest;
use zoid_kernel::kthread::KThread;
use zoid_kernel::sysfs::{self, Attribute, SysfsDir, SysfsWriter};
use zoid_kernel::time::U64;
use zoid_proto::siphash::SipKey;
use zoid_proto::treenet::wire::{Role, MIN_PACKET_PAYLOAD};
use zoid_proto::version::SUITE_VERSION;

module! {
    type: TreenetModule,
    name: "treenet",
    authors: ["zoid developers"],
    description: "zoid tree network: reliable in-kernel message transport between CNs and IONs",
    license: "GPL",
}

// Module parameters live in the C shim (string parameters).
extern "C" {
    fn treenet_param_devices() -> *const c_char;
    fn treenet_param_node_id() -> c_int;
    fn treenet_param_role() -> *const c_char;
    fn treenet_param_pset() -> c_int;
}

/// What the sysfs files act on.
struct Ctx {
    net: Arc<Treenet>,
    selftest: Arc<SelfTest>,
}

fn show_node_id(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(w, "{}", c.net.identity().0)
}

fn store_node_id(c: &Ctx, input: &[u8]) -> Result {
    let id = u16::try_from(sysfs::parse_u64(input)?).map_err(|_| EINVAL)?;
    if id == zoid_proto::treenet::wire::BROADCAST {
        return Err(EINVAL);
    }
    c.net.set_identity(Some(id), None, None);
    Ok(())
}

fn parse_role(input: &[u8]) -> Result<Role> {
    match core::str::from_utf8(input).map_err(|_| EINVAL)?.trim() {
        "ion" => Ok(Role::Ion),
        "cn" => Ok(Role::Cn),
        _ => Err(EINVAL),
    }
}

fn show_role(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(
        w,
        "{}",
        if c.net.identity().1 == Role::Ion {
            "ion"
        } else {
            "cn"
        }
    )
}

fn store_role(c: &Ctx, input: &[u8]) -> Result {
    c.net.set_identity(None, Some(parse_role(input)?), None);
    Ok(())
}

fn show_pset(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(w, "{}", c.net.identity().2)
}

fn store_pset(c: &Ctx, input: &[u8]) -> Result {
    let p = u16::try_from(sysfs::parse_u64(input)?).map_err(|_| EINVAL)?;
    c.net.set_identity(None, None, Some(p));
    Ok(())
}

/// A device name written by a user, as a C string.
fn ifname(input: &[u8]) -> Result<CString> {
    let name = core::str::from_utf8(input).map_err(|_| EINVAL)?.trim();
    if name.is_empty()
        || name.len() >= 16
        || name.contains(|ch: char| ch == '/' || ch.is_whitespace())
    {
        return Err(EINVAL);
    }
    CString::try_from_fmt(fmt!("{name}"))
}

fn show_links(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    let mut r = Ok(());
    c.net.for_each_link(|name, mtu, up| {
        if r.is_ok() {
            r = writeln!(
                w,
                "{} mtu={} {}",
                name.to_str().unwrap_or("?"),
                mtu,
                if up { "up" } else { "down" }
            );
        }
    });
    r
}

fn store_bind(c: &Ctx, input: &[u8]) -> Result {
    c.net.bind(&ifname(input)?)
}

fn store_unbind(c: &Ctx, input: &[u8]) -> Result {
    c.net.unbind(&ifname(input)?)
}

fn show_peers(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(
        w,
        "node link role hops state silent_ms rto_us queued_bytes below"
    )?;
    let mut r = Ok(());
    c.net.for_each_peer(|p| {
        if r.is_ok() {
            r = writeln!(
                w,
                "{} {} {} {} {} {} {} {} {}",
                p.node,
                p.link,
                if p.role == Role::Ion { "ion" } else { "cn" },
                p.hops,
                if p.up { "up" } else { "down" },
                U64(p.silent_ms),
                U64(p.rto_us),
                p.queued_bytes,
                p.below
            );
        }
    });
    r
}

fn show_peer_log(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    let mut r = Ok(());
    c.net.for_each_peer_log(|node, up, silent_ms| {
        if r.is_ok() {
            r = writeln!(
                w,
                "{} {} silent_ms={}",
                if up { "up" } else { "down" },
                node,
                U64(silent_ms)
            );
        }
    });
    r
}

fn show_stats(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    let mut r = Ok(());
    c.net.stats.each(|name, v| {
        if r.is_ok() {
            r = writeln!(w, "{name} {}", U64(v));
        }
    });
    let (rx_overflow, tx_refused) = c.net.link_drops();
    r?;
    writeln!(w, "drop_rx_queue_full {}", U64(rx_overflow))?;
    writeln!(w, "device_tx_refused {}", U64(tx_refused))?;
    let wakes = c.net.wake_counts();
    writeln!(w, "engine_kicks {}", U64(wakes.kicks))?;
    writeln!(w, "engine_thread_kicks {}", U64(wakes.thread_kicks))?;
    writeln!(w, "engine_timer_fires {}", U64(wakes.timer_fires))?;
    writeln!(w, "engine_timer_arms {}", U64(wakes.timer_arms))
}

fn show_engine_nice(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(w, "{}", c.net.engine_nice()?)
}

fn store_engine_nice(c: &Ctx, input: &[u8]) -> Result {
    let s = core::str::from_utf8(input).map_err(|_| EINVAL)?.trim();
    let nice: i32 = s.parse().map_err(|_| EINVAL)?;
    c.net.set_engine_nice(nice)
}

fn show_peaks(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    let mut r = Ok(());
    c.net.peaks.each(|name, v| {
        if r.is_ok() {
            r = writeln!(w, "{name} {}", U64(v));
        }
    });
    r
}

/// Writing 0 to `peaks` starts them again.
fn store_peaks(c: &Ctx, input: &[u8]) -> Result {
    if sysfs::parse_u64(input)? != 0 {
        return Err(EINVAL);
    }
    c.net.peaks.reset();
    Ok(())
}

fn show_channels(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(
        w,
        "channel registered msgs_sent bytes_sent msgs_received bytes_received"
    )?;
    let mut r = Ok(());
    c.net.channel_stats(|id, s, registered| {
        if r.is_ok() {
            r = writeln!(
                w,
                "{id} {} {} {} {} {}",
                u8::from(registered),
                U64(s.msgs_sent),
                U64(s.bytes_sent),
                U64(s.msgs_received),
                U64(s.bytes_received)
            );
        }
    });
    r
}

fn show_selftest(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    let mut r = Ok(());
    c.selftest.last_result(|b| {
        r = writeln!(w, "{}", core::str::from_utf8(b).unwrap_or("?"));
    });
    r
}

fn store_selftest(c: &Ctx, input: &[u8]) -> Result {
    c.selftest.run(input)
}

fn show_selftest_events(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    let (ok, bad) = c.selftest.received();
    writeln!(w, "received_ok {}", U64(ok))?;
    writeln!(w, "received_bad {}", U64(bad))?;
    let mut r = Ok(());
    c.selftest.for_each_event(|node, up| {
        if r.is_ok() {
            r = writeln!(w, "{} {}", if up { "up" } else { "down" }, node);
        }
    });
    r
}

/// A numeric knob: `$show`/`$store` for `knobs.$field` within `$lo..=$hi`.
macro_rules! knob {
    ($show:ident, $store:ident, $field:ident, $lo:expr, $hi:expr) => {
        fn $show(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
            writeln!(w, "{}", c.net.knobs.$field.load(Relaxed))
        }
        fn $store(c: &Ctx, input: &[u8]) -> Result {
            let v = sysfs::parse_u64(input)?;
            if !($lo..=$hi).contains(&v) {
                return Err(EINVAL);
            }
            c.net.knobs.$field.store(v as u32, Relaxed);
            c.net.kick();
            Ok(())
        }
    };
}

knob!(
    show_ack_threshold,
    store_ack_threshold,
    ack_threshold,
    0,
    1_000_000
);
knob!(
    show_window,
    store_window,
    window,
    1,
    zoid_proto::treenet::arq::MAX_WINDOW as u64
);
knob!(
    show_peer_timeout,
    store_peer_timeout,
    peer_timeout_ms,
    100,
    3_600_000
);
knob!(
    show_max_msg,
    store_max_msg,
    max_msg_size,
    16,
    engine::MAX_MSG_LIMIT as u64
);
knob!(show_grant_slots, store_grant_slots, grant_slots, 1, 64);
knob!(show_drop_ppm, store_drop_ppm, drop_ppm, 0, 1_000_000);
knob!(show_drop_burst, store_drop_burst, drop_burst, 1, 1000);
knob!(show_deaf_ppm, store_deaf_ppm, deaf_ppm, 0, 1_000_000);
// 1: the receive softirq answers small messages a channel answers at once
// (the self-test's pings); 0: every frame goes to the engine thread.
knob!(show_softirq_rx, store_softirq_rx, softirq_rx, 0, 1);
knob!(show_dup_ppm, store_dup_ppm, dup_ppm, 0, 1_000_000);
// Fault injection: the node id this node's messages claim (65535: its own).
knob!(
    show_forge_origin,
    store_forge_origin,
    forge_origin,
    0,
    65535
);
// Fault injection: 1, this node sends no acks (a hostile CN's kernel).
knob!(show_mute_acks, store_mute_acks, mute_acks, 0, 1);
knob!(
    show_reorder_ppm,
    store_reorder_ppm,
    reorder_ppm,
    0,
    1_000_000
);

fn show_packet_size(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(w, "{}", c.net.knobs.packet_size.load(Relaxed))
}

/// 0 (largest the link MTU allows), or 64..65519 payload bytes per frame.
fn store_packet_size(c: &Ctx, input: &[u8]) -> Result {
    let v = sysfs::parse_u64(input)?;
    if v != 0 && !(MIN_PACKET_PAYLOAD as u64..=65519).contains(&v) {
        return Err(EINVAL);
    }
    c.net.knobs.packet_size.store(v as u32, Relaxed);
    Ok(())
}

fn show_rto_min(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(w, "{}", c.net.knobs.rto_min_ms.load(Relaxed))
}

fn store_rto_min(c: &Ctx, input: &[u8]) -> Result {
    let v = sysfs::parse_u64(input)?;
    if v == 0 || v > u64::from(c.net.knobs.rto_max_ms.load(Relaxed)) {
        return Err(EINVAL);
    }
    c.net.knobs.rto_min_ms.store(v as u32, Relaxed);
    Ok(())
}

fn show_rto_max(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(w, "{}", c.net.knobs.rto_max_ms.load(Relaxed))
}

fn store_rto_max(c: &Ctx, input: &[u8]) -> Result {
    let v = sysfs::parse_u64(input)?;
    if v > 600_000 || v < u64::from(c.net.knobs.rto_min_ms.load(Relaxed)) {
        return Err(EINVAL);
    }
    c.net.knobs.rto_max_ms.store(v as u32, Relaxed);
    Ok(())
}

fn show_ack_delay(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(w, "{}", c.net.knobs.ack_delay_us.load(Relaxed))
}

/// 0 (ack every engine pass) .. 100000 µs; the engine also keeps it under
/// a quarter of `rto_min_ms`.
fn store_ack_delay(c: &Ctx, input: &[u8]) -> Result {
    let v = sysfs::parse_u64(input)?;
    if v > 100_000 {
        return Err(EINVAL);
    }
    c.net.knobs.ack_delay_us.store(v as u32, Relaxed);
    Ok(())
}

// 1: acks ride on data frames to neighbours that understand them; 0: every
// ack in a frame of its own (as before they existed, for comparison).
knob!(
    show_piggyback_acks,
    store_piggyback_acks,
    piggyback_acks,
    0,
    1
);

// 1: frames to neighbours that accept it carry XXH64 (wire version 2,
// cheaper than CRC-32C in software); 0: always CRC-32C (for comparison).
knob!(show_fast_checksum, store_fast_checksum, fast_checksum, 0, 1);
knob!(
    show_tx_batch,
    store_tx_batch,
    tx_batch,
    0,
    u64::from(MAX_TX_BATCH)
);

// Busy polling (µs, 0: off, at most 100 ms): waiting tasks and the engine
// thread poll the device instead of sleeping for an interrupt.
knob!(
    show_busy_poll_us,
    store_busy_poll_us,
    busy_poll_us,
    0,
    100_000
);

/// `on` or `off`: the key itself is never shown.
fn show_auth_key(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(w, "{}", if c.net.auth_enabled() { "on" } else { "off" })
}

/// 32 hexadecimal digits (the pset's 128-bit secret), or `off`.
fn store_auth_key(c: &Ctx, input: &[u8]) -> Result {
    let key = match input.trim_ascii() {
        b"off" => None,
        text => Some(SipKey::parse_hex(text).ok_or(EINVAL)?),
    };
    c.net.set_auth_key(key);
    Ok(())
}

fn show_version(_c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(w, "{SUITE_VERSION}")
}

fn show_nothing(_c: &Ctx, _w: &mut SysfsWriter<'_>) -> Result {
    Ok(())
}

static ATTRS: [Attribute<Ctx>; 39] = [
    Attribute::ro(c"version", show_version),
    Attribute::rw(c"node_id", show_node_id, store_node_id),
    Attribute::rw(c"role", show_role, store_role),
    Attribute::rw(c"pset", show_pset, store_pset),
    Attribute::rw(c"bind", show_links, store_bind),
    Attribute::rw(c"unbind", show_nothing, store_unbind),
    Attribute::ro(c"links", show_links),
    Attribute::ro(c"peers", show_peers),
    Attribute::ro(c"peer_log", show_peer_log),
    Attribute::ro(c"stats", show_stats),
    Attribute::rw(c"peaks", show_peaks, store_peaks),
    Attribute::ro(c"channels", show_channels),
    Attribute::rw(c"packet_size", show_packet_size, store_packet_size),
    Attribute::rw(c"ack_threshold", show_ack_threshold, store_ack_threshold),
    Attribute::rw(c"window", show_window, store_window),
    Attribute::rw(c"rto_min_ms", show_rto_min, store_rto_min),
    Attribute::rw(c"rto_max_ms", show_rto_max, store_rto_max),
    Attribute::rw(c"ack_delay_us", show_ack_delay, store_ack_delay),
    Attribute::rw(c"piggyback_acks", show_piggyback_acks, store_piggyback_acks),
    Attribute::rw(c"fast_checksum", show_fast_checksum, store_fast_checksum),
    Attribute::rw(c"tx_batch", show_tx_batch, store_tx_batch),
    Attribute::rw(c"busy_poll_us", show_busy_poll_us, store_busy_poll_us),
    Attribute::rw(c"engine_nice", show_engine_nice, store_engine_nice),
    Attribute::rw(c"peer_timeout_ms", show_peer_timeout, store_peer_timeout),
    Attribute::rw(c"max_msg_size", show_max_msg, store_max_msg),
    Attribute::rw(c"grant_slots", show_grant_slots, store_grant_slots),
    Attribute::rw(c"drop_ppm", show_drop_ppm, store_drop_ppm),
    Attribute::rw(c"drop_burst", show_drop_burst, store_drop_burst),
    Attribute::rw(c"dup_ppm", show_dup_ppm, store_dup_ppm),
    Attribute::rw(c"reorder_ppm", show_reorder_ppm, store_reorder_ppm),
    Attribute::rw(c"deaf_ppm", show_deaf_ppm, store_deaf_ppm),
    Attribute::rw(c"softirq_rx", show_softirq_rx, store_softirq_rx),
    Attribute::rw(c"forge_origin", show_forge_origin, store_forge_origin),
    Attribute::rw(c"mute_acks", show_mute_acks, store_mute_acks),
    Attribute::rw(c"selftest", show_selftest, store_selftest),
    Attribute::ro(c"selftest_events", show_selftest_events),
    Attribute::ro(c"max_window", show_max_window),
    Attribute::ro(c"ethertype", show_ethertype),
    Attribute::secret(c"auth_key", show_auth_key, store_auth_key),
];

fn show_max_window(_c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(w, "{}", zoid_proto::treenet::arq::MAX_WINDOW)
}

fn show_ethertype(_c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(w, "{:#06x}", zoid_proto::treenet::wire::ETHERTYPE)
}

/// The loaded module.
struct TreenetModule {
    sysfs: Option<SysfsDir<Ctx>>,
    selftest: Arc<SelfTest>,
    engine: Option<KThread<Treenet>>,
    net: Arc<Treenet>,
}

/// A C string parameter as bytes (empty when unset).
fn param_str(p: *const c_char) -> &'static [u8] {
    if p.is_null() {
        return b"";
    }
    // SAFETY: module parameters are NUL-terminated strings that live as
    // long as the module.
    unsafe { CStr::from_char_ptr(p) }.to_bytes()
}

impl kernel::Module for TreenetModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        if !zoid_kernel::ownlock::layout_matches() {
            pr_err!("treenet: the owner lock's Rust and C layouts differ\n");
            return Err(EINVAL);
        }
        api::init_slot();
        // SAFETY: the accessors read module parameters set before init.
        let (node_id, role, pset) = unsafe {
            (
                treenet_param_node_id(),
                treenet_param_role(),
                treenet_param_pset(),
            )
        };
        let role = match param_str(role) {
            b"" => Role::Cn,
            r => parse_role(r)?,
        };
        let node_id = u16::try_from(node_id.max(0)).map_err(|_| EINVAL)?;
        let net = Treenet::new(node_id, role)?;
        if pset != 0 {
            net.set_identity(None, None, Some(u16::try_from(pset).map_err(|_| EINVAL)?));
        }
        let engine = KThread::spawn(c"treenet", net.clone())?;
        net.set_engine_nice(ENGINE_NICE)?;
        let selftest = SelfTest::register(net.clone())?;
        let mut this = Self {
            sysfs: None,
            selftest: selftest.clone(),
            engine: Some(engine),
            net: net.clone(),
        };
        // SAFETY: as above.
        let devices = param_str(unsafe { treenet_param_devices() });
        for dev in devices.split(|&b| b == b',').filter(|d| !d.is_empty()) {
            if let Err(e) = net.bind(&ifname(dev)?) {
                pr_err!(
                    "treenet: cannot bind {}: {e:?}\n",
                    core::str::from_utf8(dev).unwrap_or("?")
                );
                return Err(e);
            }
        }
        api::publish(Some(net.clone()));
        this.sysfs = Some(SysfsDir::new(
            c"treenet",
            Arc::new(Ctx { net, selftest }, GFP_KERNEL)?,
            &ATTRS,
        )?);
        pr_info!("treenet {SUITE_VERSION} loaded (node {node_id})\n");
        Ok(this)
    }
}

impl Drop for TreenetModule {
    fn drop(&mut self) {
        // No new commands, then no upper layers, no links, no engine.
        self.sysfs = None;
        api::publish(None);
        self.selftest.unregister();
        self.net.unbind_all();
        self.engine = None;
        pr_info!("treenet unloaded\n");
    }
}

/// treenet's ABI version, exported to zoid and ssi (see `abi.rs`).
#[no_mangle]
pub extern "C" fn treenet_abi_version() -> u64 {
    SUITE_VERSION.to_wire()
}

/// The shared abstractions (`rust/zoid_kernel`) and protocol code
/// (`rust/zoid_proto`) run here in the kernel, on every arch we build
/// (ppc32 is big-endian): once, in the module at the bottom of the stack.
#[kunit_tests(zoid_kernel)]
mod zoid_kernel_tests {
    use super::zoid_kernel::fifo::Fifo;
    use super::zoid_kernel::sysfs::{parse_u64, SysfsWriter};
    use super::zoid_proto::{crc32c, version::Version};
    use core::fmt::Write;
    use kernel::prelude::*;

    #[test]
    fn sysfs_writer_formats_within_the_page() {
        let mut page = [0u8; 8];
        let mut w = SysfsWriter::new(&mut page);
        assert!(w.write_fmt(format_args!("{}\n", 1234)).is_ok());
        assert_eq!(w.as_bytes(), b"1234\n");
        // Three more bytes fit, four do not; a failed write leaves the page alone.
        assert!(w.write_str("abcd").is_err());
        assert!(w.write_str("abc").is_ok());
        assert_eq!(w.as_bytes(), b"1234\nabc");
        assert_eq!(w.write_fmt(format_args!("x")), Err(EOVERFLOW));
    }

    #[test]
    fn sysfs_knobs_parse_like_users_write_them() {
        assert_eq!(parse_u64(b"42\n"), Ok(42));
        assert_eq!(parse_u64(b"  0x10 "), Ok(16));
        assert_eq!(parse_u64(b"-1"), Err(EINVAL));
        assert_eq!(parse_u64(b""), Err(EINVAL));
        assert_eq!(parse_u64(b"\xff"), Err(EINVAL));
    }

    #[test]
    fn fifo_keeps_order_across_refills() -> Result {
        let mut q = Fifo::new();
        assert!(q.is_empty() && q.front().is_none() && q.pop_front().is_none());
        for i in 0..5u32 {
            q.push_back(i, GFP_KERNEL)?;
        }
        assert_eq!(q.pop_front(), Some(0));
        // 1..=4 now sit reversed in `front`; 5 and 6 go to `back`.
        q.push_back(5, GFP_KERNEL)?;
        q.push_back(6, GFP_KERNEL)?;
        assert_eq!(q.len(), 6);
        assert_eq!(q.front(), Some(&1));
        assert_eq!(
            (q.get(0), q.get(3), q.get(4), q.get(5)),
            (Some(&1), Some(&4), Some(&5), Some(&6))
        );
        assert_eq!(q.get(6), None);
        let mut sum = 0;
        for (i, v) in q.iter().enumerate() {
            assert_eq!(*v, i as u32 + 1);
            sum += *v;
        }
        assert_eq!(sum, 21);
        for v in q.iter_mut() {
            *v *= 10;
        }
        for want in [10, 20, 30, 40, 50, 60] {
            assert_eq!(q.pop_front(), Some(want));
        }
        assert!(q.is_empty());
        q.push_back(7, GFP_KERNEL)?;
        q.clear();
        assert_eq!(q.len(), 0);
        Ok(())
    }

    #[test]
    fn crc32c_matches_the_host_vectors() {
        assert_eq!(crc32c::checksum(b"123456789"), 0xe306_9283);
        let inc: [u8; 32] = core::array::from_fn(|i| i as u8);
        assert_eq!(crc32c::checksum(&inc), 0x46dd_794e);
        let mut c = crc32c::Crc32c::new();
        c.update(b"1234");
        c.update(b"56789");
        assert_eq!(c.finish(), 0xe306_9283);
    }

    #[test]
    fn msgbuf_maps_its_pages_as_one_slice() -> Result {
        use super::zoid_kernel::msgbuf::MsgBuf;
        // Three pages and a bit, with bytes that tell their offset.
        let len = 3 * kernel::page::PAGE_SIZE + 100;
        let mut data = KVVec::new();
        for i in 0..len {
            data.push((i % 251) as u8, GFP_KERNEL)?;
        }
        let mut buf = MsgBuf::from_slice(&data, GFP_KERNEL)?;
        {
            let map = buf.map()?;
            assert_eq!(map.len(), len);
            assert!(map[..] == data[..]);
        }
        // Written through a writable mapping, read back by copy.
        {
            let mut map = buf.map_mut()?;
            map[kernel::page::PAGE_SIZE - 1..kernel::page::PAGE_SIZE + 1].copy_from_slice(b"zo");
        }
        let mut two = [0u8; 2];
        buf.read_at(kernel::page::PAGE_SIZE - 1, &mut two)?;
        assert_eq!(&two, b"zo");
        // Truncated to one page and a byte: mapped and read as long.
        buf.truncate(kernel::page::PAGE_SIZE + 1)?;
        assert_eq!(buf.len(), kernel::page::PAGE_SIZE + 1);
        assert_eq!(buf.map()?.len(), kernel::page::PAGE_SIZE + 1);
        assert!(buf.truncate(kernel::page::PAGE_SIZE + 2).is_err());
        assert!(buf.read_at(kernel::page::PAGE_SIZE, &mut two).is_err());
        // Empty: an empty slice, no mapping.
        buf.truncate(0)?;
        assert!(buf.map()?.is_empty());
        Ok(())
    }

    #[test]
    fn ownlock_layout_matches_the_shim() {
        assert!(super::zoid_kernel::ownlock::layout_matches());
    }

    /// An owner lock and a condition variable, for the owner lock's test.
    #[pin_data]
    struct Locked {
        #[pin]
        lock: super::zoid_kernel::ownlock::OwnLock<u32>,
        #[pin]
        cv: kernel::sync::CondVar,
    }

    #[test]
    fn ownlock_owner_excludes_atomic_holders() -> Result {
        use super::zoid_kernel::ownlock::BhDisabled;
        let t = KBox::pin_init(
            pin_init!(Locked {
                lock <- crate::new_ownlock!(7u32, "zoid_kernel::test_ownlock"),
                cv <- kernel::new_condvar!("zoid_kernel::test_ownlock_cv"),
            }),
            GFP_KERNEL,
        )?;
        {
            let mut g = t.lock.lock();
            *g += 1;
            // Owned: neither a section with bottom halves off (a softirq)
            // nor another try gets it.
            {
                let _bh = BhDisabled::new();
                assert!(t.lock.try_lock().is_none());
            }
            assert!(t.lock.try_lock().is_none());
            // The owner may sleep: a wait gives the lock up and takes it again.
            let _ = t.cv.wait_interruptible_timeout(&mut g, 1);
            assert_eq!(*g, 8);
            let _bh = BhDisabled::new();
            assert!(t.lock.try_lock().is_none());
        }
        // Free: a section with bottom halves off takes it without waiting...
        {
            let _bh = BhDisabled::new();
            let mut g = t.lock.try_lock().ok_or(EBUSY)?;
            *g += 1;
        }
        // ... and a task's try makes it the owner, which may sleep.
        {
            let mut g = t.lock.try_lock().ok_or(EBUSY)?;
            *g += 1;
            let _ = t.cv.wait_interruptible_timeout(&mut g, 1);
        }
        assert_eq!(*t.lock.lock(), 10);
        Ok(())
    }

    #[test]
    fn version_wire_form_is_arch_independent() {
        let v = Version::new(1, 2, 3);
        assert_eq!(v.to_wire(), 0x0001_0002_0003);
        assert_eq!(Version::from_wire(0x0001_0002_0003), Some(v));
        assert_eq!(Version::from_wire(1 << 48), None);
    }
}

#[kunit_tests(treenet_sysfs)]
mod tests {
    use super::*;

    fn ctx() -> Result<Ctx> {
        let net = Treenet::new(0, Role::Cn)?;
        let selftest = SelfTest::register(net.clone())?;
        Ok(Ctx { net, selftest })
    }

    #[test]
    fn identity_knobs_accept_valid_values_only() -> Result {
        let c = ctx()?;
        assert_eq!(store_node_id(&c, b"7\n"), Ok(()));
        assert_eq!(store_node_id(&c, b"65535"), Err(EINVAL));
        assert_eq!(store_node_id(&c, b"seven"), Err(EINVAL));
        assert_eq!(c.net.identity().0, 7);
        assert_eq!(store_role(&c, b"ion\n"), Ok(()));
        assert_eq!(store_role(&c, b"boss"), Err(EINVAL));
        assert!(c.net.identity().1 == Role::Ion);
        let mut page = [0u8; 16];
        let mut w = SysfsWriter::new(&mut page);
        assert_eq!(show_node_id(&c, &mut w), Ok(()));
        assert_eq!(w.as_bytes(), b"7\n");
        c.selftest.unregister();
        Ok(())
    }

    #[test]
    fn bad_knob_values_change_nothing() -> Result {
        let c = ctx()?;
        assert_eq!(store_packet_size(&c, b"240"), Ok(()));
        assert_eq!(store_packet_size(&c, b"10"), Err(EINVAL));
        assert_eq!(store_packet_size(&c, b"100000"), Err(EINVAL));
        assert_eq!(c.net.knobs.packet_size.load(Relaxed), 240);
        assert_eq!(store_window(&c, b"0"), Err(EINVAL));
        assert_eq!(store_window(&c, b"513"), Err(EINVAL));
        assert_eq!(
            c.net.knobs.window.load(Relaxed) as usize,
            zoid_proto::treenet::arq::DEFAULT_WINDOW
        );
        assert_eq!(store_drop_ppm(&c, b"1000001"), Err(EINVAL));
        assert_eq!(store_rto_min(&c, b"999999"), Err(EINVAL));
        assert_eq!(store_rto_max(&c, b"1"), Err(EINVAL));
        assert_eq!(store_bind(&c, b"no/such"), Err(EINVAL));
        assert_eq!(store_bind(&c, b"nosuchdev0"), Err(ENODEV));
        assert_eq!(c.selftest.run(b"launch rockets"), Err(EINVAL));
        assert_eq!(c.selftest.run(b"send 1 10"), Err(EINVAL));
        c.selftest.unregister();
        Ok(())
    }
}

/// The protocol state machines, in the kernel (both endiannesses).
#[kunit_tests(treenet_proto)]
mod proto_tests {
    use super::zoid_proto::treenet::arq::{RecvWindow, RtoEstimator, RxClass, SendWindow};
    use super::zoid_proto::treenet::frag::{frame_count, frame_spec, Reassembler};
    use super::zoid_proto::treenet::grant::{Request, Waiting};
    use super::zoid_proto::treenet::wire::*;
    use kernel::prelude::*;

    #[test]
    fn frames_round_trip_and_bad_ones_are_refused() {
        let h = FrameHeader::data(3, 0, Lane::Bulk, 0x0102_0304, FLAG_FIRST);
        let payload = [0x5au8; 40];
        let mut f = [0u8; HEADER_LEN + 40];
        let (hd, p) = f.split_at_mut(HEADER_LEN);
        p.copy_from_slice(&payload);
        if let Ok(hd) = <&mut [u8; HEADER_LEN]>::try_from(hd) {
            h.encode(&[&payload], hd);
        }
        assert_eq!(&f[8..12], &[1, 2, 3, 4]); // big-endian on every arch
        assert_eq!(parse(&f, 240), Ok((h, &payload[..])));
        assert_eq!(parse(&f[..20], 240), Err(FrameError::Truncated));
        assert_eq!(parse(&f, 16), Err(FrameError::Oversized));
        f[30] ^= 1;
        assert_eq!(parse(&f, 240), Err(FrameError::BadChecksum));
    }

    #[test]
    fn sealed_frames_verify_and_siphash_matches_the_reference() {
        use super::zoid_proto::siphash::{siphash24, SipKey};
        // The reference vectors (key 00..0f, input 00..len-1), as the host
        // tests check them all: here on this arch's endianness.
        let key_bytes: [u8; 16] = core::array::from_fn(|i| i as u8);
        let key = SipKey::from_bytes(&key_bytes);
        let input: [u8; 16] = core::array::from_fn(|i| i as u8);
        assert_eq!(siphash24(&key, &[]), 0x726f_db47_dd0e_0e31);
        assert_eq!(siphash24(&key, &[&input[..8]]), 0x93f5_f579_9a93_2462);
        assert_eq!(siphash24(&key, &[&input[..15]]), 0xa129_ca61_49be_45e5);
        let h = FrameHeader::data(3, 0, Lane::Bulk, 9, FLAG_FIRST);
        let session = Session {
            src_epoch: 5,
            dst_epoch: 7,
        };
        let payload = [0x5au8; 40];
        let mut f = [0u8; HEADER_LEN + 40 + MAC_TRAILER_LEN];
        let (hd, rest) = f.split_at_mut(HEADER_LEN);
        let (p, t) = rest.split_at_mut(40);
        p.copy_from_slice(&payload);
        if let (Ok(hd), Ok(t)) = (
            <&mut [u8; HEADER_LEN]>::try_from(hd),
            <&mut [u8; MAC_TRAILER_LEN]>::try_from(t),
        ) {
            h.encode_sealed(&[&payload], &key, session, hd, t);
        }
        let Ok((back, _, Seal::Tag(tag))) = parse_frame(&f, 240) else {
            panic!("a sealed frame does not parse");
        };
        assert_eq!(back, h);
        assert!(verify_tag(&key, session, &f, tag));
        assert!(!verify_tag(&key, Session::NONE, &f, tag));
        assert_eq!(parse(&f, 240), Err(FrameError::NoMac));
        f[30] ^= 1;
        assert!(!verify_tag(&key, session, &f, tag));
    }

    #[test]
    fn a_message_fragments_and_reassembles() {
        let len = 1000;
        let hdr = MsgHeader {
            origin: 1,
            dst: 0,
            channel: 5,
            flags: 0,
            len: len as u32,
            id: 9,
        };
        let mut r = Reassembler::new();
        let mut got = 0;
        let n = frame_count(len, ZOID_PACKET_PAYLOAD);
        assert_eq!(n, 5);
        for i in 0..n {
            let s =
                frame_spec(i, len, ZOID_PACKET_PAYLOAD).unwrap_or(frame_spec(0, 0, 240).unwrap());
            let mut p = [0u8; 256];
            let mut at = 0;
            if i == 0 {
                p[..MSG_HEADER_LEN].copy_from_slice(&hdr.encode());
                at = MSG_HEADER_LEN;
            }
            let step = r.feed(s.flags, &p[..at + s.len], 4096);
            assert!(step.is_ok());
            if let Ok(step) = step {
                assert_eq!(step.offset, got);
                got += step.data.len();
                assert_eq!(step.complete, i + 1 == n);
            }
        }
        assert_eq!(got, len);
    }

    #[test]
    fn lanes_ack_selectively_and_retransmit_holes() -> Result {
        // (Its ring on the heap, as the engine's: inline it would take
        // 4 KiB of this test's stack.)
        let ring = crate::engine::new_tx_ring()?;
        let rto = RtoEstimator::new(1000, 100, 100_000);
        let mut tx = SendWindow::with_ring(ring, 0, 8, rto).ok_or(EINVAL)?;
        for t in 0..4 {
            tx.on_send(t);
        }
        let mut rx = RecvWindow::new(0, 8);
        assert_eq!(rx.classify(0), RxClass::InOrder);
        rx.advance();
        assert_eq!(rx.classify(2), RxClass::Future);
        rx.mark(2);
        assert_eq!(rx.classify(2), RxClass::Duplicate);
        assert_eq!((rx.next_seq(), rx.sack()), (1, 0b1));
        let out = tx.on_ack(rx.next_seq(), rx.sack(), 50);
        assert_eq!(out.acked, 1);
        let mut due = [u32::MAX; 4];
        let mut n = 0;
        tx.due(60, 5, |q| {
            due[n] = q;
            n += 1;
        });
        // The hole below the selectively acked 2, and a tail-loss probe of
        // the newest frame (3), older than twice `fast_after`.
        assert_eq!(&due[..n], &[1, 3]);
        Ok(())
    }

    #[test]
    fn grants_take_turns_one_per_peer() {
        let mut storage = KVec::new();
        assert!(storage.resize(8, Waiting::default(), GFP_KERNEL).is_ok());
        let Ok(mut g) = super::engine::new_grants(storage, 4) else {
            panic!("no memory for a grant queue");
        };
        let r = |peer, id| Request { peer, id, len: 1 };
        assert!(g.push(r(1, 1)).is_ok());
        assert!(g.push(r(1, 2)).is_ok());
        assert!(g.push(r(2, 1)).is_ok());
        assert_eq!(g.next_grant(), Some(r(1, 1)));
        assert_eq!(g.next_grant(), Some(r(2, 1)));
        assert_eq!(g.next_grant(), None);
        assert!(g.complete(1, 1));
        assert_eq!(g.next_grant(), Some(r(1, 2)));
        // Early: peer 2's grant drains, so its next one may go now.
        assert!(g.push(r(2, 2)).is_ok());
        assert_eq!(g.next_grant(), None);
        assert!(g.draining(2, 1));
        assert_eq!(g.next_grant(), Some(r(2, 2)));
    }
}

/// The whole stack in one kernel: engine thread, loopback link, lanes,
/// rendezvous and a channel handler.
#[kunit_tests(treenet_loopback)]
mod loopback_tests {
    use super::engine::{ChannelHandler, Treenet};
    use super::zoid_kernel::kthread::KThread;
    use super::zoid_kernel::msgbuf::MsgBuf;
    use super::zoid_proto::treenet::wire::Role;
    use kernel::prelude::*;
    use kernel::sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    };

    struct Counter {
        msgs: Atomic<u64>,
        bytes: Atomic<u64>,
        bad: Atomic<u64>,
    }

    impl Counter {
        fn new() -> Result<Arc<Self>> {
            Ok(Arc::new(
                Self {
                    msgs: Atomic::new(0),
                    bytes: Atomic::new(0),
                    bad: Atomic::new(0),
                },
                GFP_KERNEL,
            )?)
        }
    }

    impl ChannelHandler for Counter {
        fn receive(&self, _channel: u16, _src: u16, msg: Arc<MsgBuf>) {
            let mut b = [0u8; 1];
            if !msg.is_empty() && (msg.read_at(msg.len() - 1, &mut b).is_err() || b[0] != 0xa5) {
                self.bad.fetch_add(1, Relaxed);
            }
            self.msgs.fetch_add(1, Relaxed);
            self.bytes.fetch_add(msg.len() as u64, Relaxed);
        }
        fn peer_event(&self, _node: u16, _up: bool) {}
    }

    /// Waits up to `ms` for `done`, sleeping on the engine's progress.
    fn wait_for(net: &Treenet, ms: u64, mut done: impl FnMut() -> bool) {
        let deadline = crate::zoid_kernel::time::deadline_after_ms(ms);
        loop {
            let mark = net.progress_mark();
            if done() || crate::zoid_kernel::time::now_ns() > deadline {
                return;
            }
            net.wait_progress(mark, 100);
        }
    }

    /// Node 7 with its engine thread, `handler` on channel 9 and the
    /// loopback wire bound, once it reaches itself.
    fn loopback_node(handler: Arc<dyn ChannelHandler>) -> Result<(Arc<Treenet>, KThread<Treenet>)> {
        let net = Treenet::new(7, Role::Ion)?;
        let engine = KThread::spawn(c"treenet-kunit", net.clone())?;
        net.register_channel(9, handler)?;
        net.bind(c"loopback")?;
        wait_for(&net, 120_000, || net.reachable(7));
        if !net.reachable(7) {
            return Err(ETIMEDOUT);
        }
        Ok((net, engine))
    }

    /// Undoes [`loopback_node`]: channel 9, the wire, the engine thread.
    fn stop(net: Arc<Treenet>, engine: KThread<Treenet>) {
        net.unregister_channel(9);
        net.unbind_all();
        drop(engine);
    }

    #[test]
    fn messages_loop_back_through_every_layer() -> Result {
        let counter = Counter::new()?;
        let (net, engine) = loopback_node(counter.clone())?;
        net.knobs.packet_size.store(240, Relaxed);
        let sizes = [0usize, 1, 224, 225, 5000, 300_000];
        let mut total = 0u64;
        for &len in &sizes {
            let mut m = MsgBuf::new(len, GFP_KERNEL)?;
            if len > 0 {
                m.write_at(len - 1, &[0xa5])?;
            }
            net.send(9, 7, m, true)?;
            total += len as u64;
        }
        wait_for(&net, 120_000, || {
            counter.msgs.load(Relaxed) >= sizes.len() as u64
        });
        assert_eq!(counter.msgs.load(Relaxed), sizes.len() as u64);
        assert_eq!(counter.bytes.load(Relaxed), total);
        assert_eq!(counter.bad.load(Relaxed), 0);
        assert!(net.stats.rendezvous_waits.load(Relaxed) > 0);
        // The same through sealed frames (a key on the loopback wire).
        net.set_auth_key(Some(super::zoid_proto::siphash::SipKey([1, 2])));
        for &len in &sizes {
            net.send(9, 7, MsgBuf::new(len, GFP_KERNEL)?, true)?;
            total += len as u64;
        }
        wait_for(&net, 120_000, || {
            counter.msgs.load(Relaxed) >= 2 * sizes.len() as u64
        });
        assert_eq!(counter.msgs.load(Relaxed), 2 * sizes.len() as u64);
        assert_eq!(counter.bytes.load(Relaxed), total);
        assert_eq!(net.stats.drop_bad_auth.load(Relaxed), 0);
        net.set_auth_key(None);
        assert_eq!(
            net.send(9, 7, MsgBuf::new((4 << 20) + 1025, GFP_KERNEL)?, false),
            Err(EMSGSIZE)
        );
        assert_eq!(
            net.send(9, 99, MsgBuf::new(1, GFP_KERNEL)?, false),
            Err(EHOSTUNREACH)
        );
        stop(net, engine);
        Ok(())
    }

    /// Large messages sent back to back: each after the first is granted
    /// while the one before it still arrives (`grants_early`), and all
    /// arrive whole.
    #[test]
    fn back_to_back_large_messages_are_granted_early() -> Result {
        let counter = Counter::new()?;
        let (net, engine) = loopback_node(counter.clone())?;
        // Small frames: a message takes several engine passes to arrive
        // (the loopback wire's large ones would carry it in one).
        net.knobs.packet_size.store(240, Relaxed);
        let len = 40_000;
        for _ in 0..3 {
            let mut m = MsgBuf::new(len, GFP_KERNEL)?;
            m.write_at(len - 1, &[0xa5])?;
            net.send(9, 7, m, true)?;
        }
        wait_for(&net, 120_000, || counter.msgs.load(Relaxed) >= 3);
        assert_eq!(counter.msgs.load(Relaxed), 3);
        assert_eq!(counter.bytes.load(Relaxed), 3 * len as u64);
        assert_eq!(counter.bad.load(Relaxed), 0);
        assert_eq!(net.stats.grants_given.load(Relaxed), 3);
        assert!(net.stats.grants_early.load(Relaxed) > 0);
        stop(net, engine);
        Ok(())
    }

    /// Bulk messages that filled the queue to a destination that takes no
    /// data (deaf) do not hold up small control messages: those still get
    /// in, up to a reserve of their own, and everything arrives once the
    /// destination listens again.
    #[test]
    fn control_messages_pass_a_queue_full_of_bulk() -> Result {
        let counter = Counter::new()?;
        let (net, engine) = loopback_node(counter.clone())?;
        // Frames of 1 KiB: 64 KiB messages go by rendezvous (64 frames),
        // 15 000 bytes on the control lane (15 frames, ack_threshold 16).
        net.knobs.packet_size.store(1024, Relaxed);
        net.knobs.max_msg_size.store(64 * 1024, Relaxed);
        net.knobs.deaf_ppm.store(1_000_000, Relaxed);
        let message = |len: usize| -> Result<MsgBuf> {
            let mut m = MsgBuf::new(len, GFP_KERNEL)?;
            m.write_at(len - 1, &[0xa5])?;
            Ok(m)
        };
        // Sends `len`-byte messages until the queue refuses one (at most
        // `cap`); returns how many it took.
        let fill = |len: usize, cap: u64| -> Result<u64> {
            let mut n = 0;
            while n < cap {
                match net.send(9, 7, message(len)?, false) {
                    Ok(()) => n += 1,
                    Err(e) if e == EAGAIN => return Ok(n),
                    Err(e) => return Err(e),
                }
            }
            Ok(n)
        };
        let bulk = fill(64 * 1024, 100)?;
        // The bound: 2 x 64 KiB + 1 MiB, so about 18 of them.
        assert!((10..100).contains(&bulk));
        let small = fill(15_000, 1000)?;
        // 1 MiB of reserve: about 70 of them, and then no more.
        assert!((10..1000).contains(&small));
        net.knobs.deaf_ppm.store(0, Relaxed);
        let all = bulk + small;
        wait_for(&net, 120_000, || counter.msgs.load(Relaxed) >= all);
        assert_eq!(counter.msgs.load(Relaxed), all);
        assert_eq!(
            counter.bytes.load(Relaxed),
            bulk * 64 * 1024 + small * 15_000
        );
        assert_eq!(counter.bad.load(Relaxed), 0);
        stop(net, engine);
        Ok(())
    }

    /// Counts messages and raises `flag` on each.
    struct Flagger {
        flag: Atomic<u32>,
        count: Atomic<u32>,
    }

    impl ChannelHandler for Flagger {
        fn receive(&self, _channel: u16, _src: u16, _msg: Arc<MsgBuf>) {
            self.count.fetch_add(1, Relaxed);
            self.flag.store(1, Relaxed);
        }
        fn peer_event(&self, _node: u16, _up: bool) {}
    }

    #[test]
    fn a_waiting_task_drives_the_engine() -> Result {
        let f = Arc::new(
            Flagger {
                flag: Atomic::new(0),
                count: Atomic::new(0),
            },
            GFP_KERNEL,
        )?;
        let (net, engine) = loopback_node(f.clone())?;
        // Nothing arrives: the wait times out (10 ms) with no error.
        let t = crate::zoid_kernel::time::ms_to_jiffies(10);
        if crate::zoid_kernel::kthread::stack_left() < crate::zoid_kernel::kthread::DRIVE_STACK_MIN
        {
            // Small stacks (ppc32): a task never drives.
            assert_eq!(net.drive_until(9, &f.flag, t), Err(EBUSY));
            stop(net, engine);
            return Ok(());
        }
        assert_eq!(net.drive_until(9, &f.flag, t), Ok(false));
        // A message arrives while this task drives (or just before; the
        // engine thread then wakes the driver): the wait ends with it.
        let t = crate::zoid_kernel::time::ms_to_jiffies(5000);
        for round in 1..=20u32 {
            f.flag.store(0, Relaxed);
            net.send(9, 7, MsgBuf::new(100, GFP_KERNEL)?, true)?;
            assert_eq!(net.drive_until(9, &f.flag, t), Ok(true));
            assert_eq!(f.count.load(Relaxed), round);
        }
        assert!(net.stats.drives.load(Relaxed) > 0);
        stop(net, engine);
        Ok(())
    }
}
