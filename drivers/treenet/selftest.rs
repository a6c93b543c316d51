// SPDX-License-Identifier: GPL-2.0

//! treenet's self-test channels, driven from `/sys/kernel/treenet/selftest`.
//!
//! Tests and benchmarks move real messages between nodes through the same
//! API upper layers use:
//!
//! * `send <node|all> <size> <count>`: messages of a pattern derived from
//!   their length go out on channel [`CHAN_DATA`]; every receiver checks the
//!   pattern (and its CRC-32C) and answers a verdict on [`CHAN_CTL`]; the
//!   command returns once every verdict is in (or fails: `EIO` on a bad one,
//!   `ETIMEDOUT`).
//! * `sink <node|all> <size> <count>`: the same on [`CHAN_SINK`], whose
//!   receivers do not check the pattern (for benchmarks: the transport is
//!   measured, not the checker).
//! * `ping <node> <size> <count>`: round trips, one at a time.
//! * `hash <size> <count>`: times CRC-32C, SipHash-2-4 and XXH64 over
//!   `size` bytes (the per-frame cost of checksums and authentication tags).
//! * `barrier <tag> <n>`: on the ION, waits until `n` nodes below it sent
//!   the tag, then broadcasts the release; on a CN, sends the tag to its ION
//!   and waits for the release.
//! * `raw <channel> <node> <hex>`: sends those bytes once, on any channel
//!   (tests of the other nodes' defences: a forged zoid reply from a CN's
//!   kernel).
//! * `begin <test>`, `abort`: the in-guest test runner says which test it
//!   runs and, when it failed here, that this node gave it up: the other
//!   nodes' waits of that test then fail at once (`ECANCELED`) instead of
//!   waiting for this one in a barrier until they time out.
//!
//! Reading the file gives the last result, e.g.
//! `ok op=send n=4 bytes=16777216 ns=812345678`.

use crate::engine::{ChannelHandler, Treenet};
use crate::zoid_kernel::msgbuf::MsgBuf;
use crate::zoid_kernel::time::{deadline_after_ms, ms_to_jiffies, now_ns, U64};
use crate::zoid_proto::crc32c::Crc32c;
use crate::zoid_proto::siphash::{siphash24, SipKey};
use crate::zoid_proto::treenet::wire::{Role, BROADCAST};
use crate::zoid_proto::xxh64::xxh64;
use kernel::prelude::*;
use kernel::sync::{
    atomic::{Atomic, Relaxed, Release},
    Arc, CondVar, Mutex,
};
use kernel::{new_condvar, new_mutex, str::CString};

/// Channel of the test payloads.
pub(crate) const CHAN_DATA: u16 = 1;
/// Channel of verdicts, pings and barriers.
pub(crate) const CHAN_CTL: u16 = 2;
/// Channel of benchmark payloads: receivers answer without checking them
/// (frames are still checksummed), like a TCP sink.
pub(crate) const CHAN_SINK: u16 = 3;

const OP_VERDICT: u8 = 1;
const OP_PING: u8 = 2;
const OP_PONG: u8 = 3;
const OP_BARRIER: u8 = 4;
const OP_RELEASE: u8 = 5;
/// A node gave up test `a` (see [`SelfTest::abort`]).
const OP_ABORT: u8 = 6;
const CTL_LEN: usize = 16;

/// Byte `i` of the test message of length `len`.
fn pattern_byte(len: usize, i: usize) -> u8 {
    let x = (i as u32).wrapping_mul(0x9e37_79b1) ^ (len as u32).rotate_left(13) ^ (i >> 12) as u32;
    (x >> 24) as u8 ^ (x as u8)
}

/// Fills a test message of `len` bytes; returns its CRC-32C.
fn fill_pattern(buf: &mut MsgBuf) -> Result<u32> {
    let len = buf.len();
    let mut crc = Crc32c::new();
    let mut chunk = [0u8; 512];
    let mut off = 0;
    while off < len {
        let n = (len - off).min(chunk.len());
        for (j, b) in chunk[..n].iter_mut().enumerate() {
            *b = pattern_byte(len, off + j);
        }
        crc.update(&chunk[..n]);
        buf.write_at(off, &chunk[..n])?;
        off += n;
    }
    Ok(crc.finish())
}

/// Checks a received test message; returns (intact, CRC-32C).
fn check_pattern(buf: &MsgBuf) -> (bool, u32) {
    let len = buf.len();
    let mut crc = Crc32c::new();
    let mut chunk = [0u8; 512];
    let mut off = 0;
    let mut ok = true;
    while off < len {
        let n = (len - off).min(chunk.len());
        if buf.read_at(off, &mut chunk[..n]).is_err() {
            return (false, 0);
        }
        crc.update(&chunk[..n]);
        ok &= chunk[..n]
            .iter()
            .enumerate()
            .all(|(j, &b)| b == pattern_byte(len, off + j));
        off += n;
    }
    (ok, crc.finish())
}

fn ctl(op: u8, a: u32, b: u32, c: u32, extra: usize) -> Result<MsgBuf> {
    // Every byte is written below (the header, then `extra` zeros), so the
    // page is not zeroed first: one page per control message (a ping, a
    // verdict per message of a stream), zeroed whole for a few bytes.
    let mut m = MsgBuf::for_filling(CTL_LEN + extra, GFP_KERNEL)?;
    let mut h = [0u8; CTL_LEN];
    h[0] = op;
    h[4..8].copy_from_slice(&a.to_be_bytes());
    h[8..12].copy_from_slice(&b.to_be_bytes());
    h[12..16].copy_from_slice(&c.to_be_bytes());
    m.write_at(0, &h)?;
    let zeros = [0u8; 256];
    let mut off = CTL_LEN;
    while off < m.len() {
        let n = (m.len() - off).min(zeros.len());
        m.write_at(off, &zeros[..n])?;
        off += n;
    }
    Ok(m)
}

#[derive(Default)]
struct State {
    verdicts_ok: u64,
    verdicts_bad: u64,
    received_ok: u64,
    received_bad: u64,
    /// Verdicts that could not be sent (logged at 1, 2, 4, ...).
    verdicts_unsent: u32,
    last_pong: u32,
    /// (tag, node) barrier arrivals (ION side).
    arrivals: KVec<(u32, u16)>,
    /// Released barrier tags (CN side).
    released: KVec<u32>,
    /// Tags this ION released recently (late arrivals get a direct release).
    done_tags: KVec<u32>,
    /// The in-guest test this node runs (`begin <n>`; 0: none said).
    test: u32,
    /// The latest test some node of the pset gave up (`abort`): waits of
    /// that test fail at once instead of waiting for that node.
    aborted: u32,
    /// Peer notifications, oldest first (bounded).
    events: KVec<(u16, bool)>,
    last_result: KVec<u8>,
}

impl State {
    /// Whether some node gave up the test this node runs (`abort`).
    fn gave_up(&self) -> bool {
        self.test != 0 && self.aborted == self.test
    }
}

/// The self-test endpoint of this node.
#[pin_data]
pub(crate) struct SelfTest {
    net: Arc<Treenet>,
    #[pin]
    state: Mutex<State>,
    /// Notified after a change of `state` that a wait may be for (a
    /// verdict, a barrier check-in or release, an abort, a peer event).
    /// Waits sleep here, not on the engine's progress, which every
    /// delivered message notifies: an ION waiting in a barrier while its
    /// CN pings it was woken for every ping (and every message of a
    /// stream), one thread switch per message on the node measured.
    #[pin]
    changed: CondVar,
    /// The ping whose pong [`SelfTest::ping`] waits for, and whether it
    /// came (nonzero): the flag a driving wait polls (see
    /// [`Treenet::drive_until`]).
    pong_want: Atomic<u32>,
    pong_done: Atomic<u32>,
}

impl SelfTest {
    /// Registers the self-test channels on `net`.
    pub(crate) fn register(net: Arc<Treenet>) -> Result<Arc<Self>> {
        let own = net.clone();
        let st = Arc::pin_init(
            try_pin_init!(Self {
                net: own,
                state <- new_mutex!(State::default(), "treenet::selftest"),
                changed <- new_condvar!("treenet::selftest::changed"),
                pong_want: Atomic::new(0),
                pong_done: Atomic::new(0),
            }),
            GFP_KERNEL,
        )?;
        for (i, ch) in [CHAN_DATA, CHAN_CTL, CHAN_SINK].into_iter().enumerate() {
            if let Err(e) = net.register_channel(ch, st.clone()) {
                for done in [CHAN_DATA, CHAN_CTL, CHAN_SINK].into_iter().take(i) {
                    net.unregister_channel(done);
                }
                return Err(e);
            }
        }
        Ok(st)
    }

    /// Unregisters the channels (breaks the reference cycle with `net`).
    pub(crate) fn unregister(&self) {
        self.net.unregister_channel(CHAN_DATA);
        self.net.unregister_channel(CHAN_CTL);
        self.net.unregister_channel(CHAN_SINK);
    }

    /// The last command's result line.
    pub(crate) fn last_result(&self, f: impl FnOnce(&[u8])) {
        f(&self.state.lock().last_result);
    }

    /// Received test messages: (intact, corrupt).
    pub(crate) fn received(&self) -> (u64, u64) {
        let s = self.state.lock();
        (s.received_ok, s.received_bad)
    }

    /// Peer notifications seen, oldest first.
    pub(crate) fn for_each_event(&self, mut f: impl FnMut(u16, bool)) {
        for &(n, up) in self.state.lock().events.iter() {
            f(n, up);
        }
    }

    /// Records the result line; without memory for it the line is left
    /// empty and the kernel log says why.
    fn set_result(&self, args: core::fmt::Arguments<'_>) {
        let mut st = self.state.lock();
        st.last_result.clear();
        let kept = CString::try_from_fmt(args).and_then(|s| {
            st.last_result
                .extend_from_slice(s.to_bytes(), GFP_KERNEL)
                .map_err(Error::from)
        });
        if kept.is_err() {
            st.last_result.clear();
            pr_warn!("treenet selftest: no memory for the result line\n");
        }
    }

    /// Wakes the waits of [`SelfTest::wait_until`]: `state` changed.
    fn changed(&self) {
        self.changed.notify_all();
    }

    /// Waits until `done(state)` or `ms` passed; `Err(ETIMEDOUT)` then.
    /// Woken by [`SelfTest::changed`], and every 100 ms for conditions on
    /// the engine (`done` may look at it): a neighbour coming up is a peer
    /// event, which notifies; a change of identity or of a neighbour's
    /// role is not, and is seen at the next 100 ms look.
    fn wait_until(&self, ms: u64, mut done: impl FnMut(&State) -> bool) -> Result {
        let deadline = deadline_after_ms(ms);
        let mut s = self.state.lock();
        loop {
            // (First: a check-in sent by a node whose own wait of the
            // aborted test then failed must not complete a barrier.)
            if s.gave_up() {
                return Err(ECANCELED);
            }
            if done(&s) {
                return Ok(());
            }
            if now_ns() > deadline {
                return Err(ETIMEDOUT);
            }
            if kernel::current!().signal_pending() {
                return Err(EINTR);
            }
            let _ = self
                .changed
                .wait_interruptible_timeout(&mut s, ms_to_jiffies(100));
        }
    }

    /// Runs one command written to the `selftest` file.
    pub(crate) fn run(&self, cmd: &[u8]) -> Result {
        let cmd = core::str::from_utf8(cmd).map_err(|_| EINVAL)?;
        let mut words = cmd.split_whitespace();
        let op = words.next().ok_or(EINVAL)?;
        let mut num = |max: u64| -> Result<u64> {
            let w = words.next().ok_or(EINVAL)?;
            let v: u64 = w.parse().map_err(|_| EINVAL)?;
            if v > max {
                return Err(EINVAL);
            }
            Ok(v)
        };
        let r = match op {
            "send" | "sink" => {
                // The destination may be "all".
                let rest: KVec<&str> = {
                    let mut v = KVec::new();
                    for w in cmd.split_whitespace().skip(1) {
                        v.push(w, GFP_KERNEL)?;
                    }
                    v
                };
                if rest.len() != 3 {
                    return Err(EINVAL);
                }
                let dst = if rest[0] == "all" {
                    BROADCAST
                } else {
                    rest[0].parse::<u16>().map_err(|_| EINVAL)?
                };
                let size: usize = rest[1].parse().map_err(|_| EINVAL)?;
                let count: u64 = rest[2].parse().map_err(|_| EINVAL)?;
                if count == 0 || count > 1_000_000 {
                    return Err(EINVAL);
                }
                let chan = if op == "sink" { CHAN_SINK } else { CHAN_DATA };
                self.send(chan, dst, size, count)
            }
            "ping" => {
                let dst = num(u64::from(u16::MAX) - 1)? as u16;
                let size = num(1 << 20)? as usize;
                let count = num(1_000_000)?;
                self.ping(dst, size, count)
            }
            "barrier" => {
                let tag = num(u64::from(u32::MAX))? as u32;
                let n = num(4096)? as usize;
                self.barrier(tag, n)
            }
            "begin" => {
                let test = num(u64::from(u32::MAX))? as u32;
                {
                    let mut s = self.state.lock();
                    if test <= s.test {
                        // A new run of the tests: earlier aborts are history.
                        s.aborted = 0;
                    }
                    s.test = test;
                }
                self.changed();
                Ok(())
            }
            "abort" => self.abort(),
            "raw" => {
                let chan = num(u64::from(u16::MAX))? as u16;
                let dst = num(u64::from(u16::MAX))? as u16;
                let hex = cmd.split_whitespace().nth(3).ok_or(EINVAL)?;
                self.raw(chan, dst, hex.as_bytes())
            }
            "hash" => {
                let size = num(65536)? as usize;
                let count = num(1_000_000)?;
                self.hash(size, count)
            }
            _ => Err(EINVAL),
        };
        if let Err(e) = r {
            self.set_result(format_args!("error op={op} errno={}", e.to_errno()));
        }
        r
    }

    /// `abort`: this node gave up its current test (`begin <n>`), which
    /// the other nodes run in step with it: their waits of that test
    /// (barriers above all) fail at once with `ECANCELED` rather than wait
    /// up to 600 s for it, and the pset meets again in the next test.  A CN
    /// tells its ION, an ION all its CNs.
    fn abort(&self) -> Result {
        let test = {
            let mut s = self.state.lock();
            s.aborted = s.aborted.max(s.test);
            s.test
        };
        self.changed();
        if test == 0 {
            return Err(EINVAL);
        }
        let to = if self.net.identity().1 == Role::Ion {
            BROADCAST
        } else {
            self.net.ion().ok_or(EHOSTUNREACH)?
        };
        self.net
            .send(CHAN_CTL, to, ctl(OP_ABORT, test, 0, 0, 0)?, false)
    }

    /// `raw <channel> <node> <hex>`: the bytes `hex` spells, sent once on
    /// `channel` to `node`.
    fn raw(&self, chan: u16, dst: u16, hex: &[u8]) -> Result {
        if hex.is_empty() || hex.len() % 2 != 0 || hex.len() > 2 * 4096 {
            return Err(EINVAL);
        }
        let nibble = |c: u8| -> Result<u8> {
            match c {
                b'0'..=b'9' => Ok(c - b'0'),
                b'a'..=b'f' => Ok(c - b'a' + 10),
                b'A'..=b'F' => Ok(c - b'A' + 10),
                _ => Err(EINVAL),
            }
        };
        let mut bytes = KVec::with_capacity(hex.len() / 2, GFP_KERNEL)?;
        for pair in hex.chunks_exact(2) {
            bytes.push((nibble(pair[0])? << 4) | nibble(pair[1])?, GFP_KERNEL)?;
        }
        self.net
            .send(chan, dst, MsgBuf::from_slice(&bytes, GFP_KERNEL)?, true)?;
        self.set_result(format_args!("ok op=raw bytes={}", bytes.len()));
        Ok(())
    }

    /// `hash <size> <count>`: what checksumming and authenticating a
    /// frame cost on this node, in this kernel: CRC-32C and SipHash-2-4
    /// over `size` bytes, `count` times each.
    fn hash(&self, size: usize, count: u64) -> Result {
        let mut buf = KVec::new();
        buf.resize(size, 0x5a, GFP_KERNEL)?;
        let key = SipKey([0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908]);
        let mut acc = 0u64;
        let t0 = now_ns();
        for i in 0..count {
            let mut c = Crc32c::new();
            c.update(&buf[..size - (i as usize & 1).min(size)]);
            acc ^= u64::from(c.finish());
        }
        let t1 = now_ns();
        for i in 0..count {
            acc ^= siphash24(&key, &[&buf[..size - (i as usize & 1).min(size)]]);
        }
        let t2 = now_ns();
        for i in 0..count {
            acc ^= xxh64(&buf[..size - (i as usize & 1).min(size)]);
        }
        let t3 = now_ns();
        self.set_result(format_args!(
            "ok op=hash size={size} n={} crc32c_ns={} siphash_ns={} xxh64_ns={} acc={}",
            U64(count),
            U64(t1 - t0),
            U64(t2 - t1),
            U64(t3 - t2),
            U64(acc & 1)
        ));
        Ok(())
    }

    fn send(&self, chan: u16, dst: u16, size: usize, count: u64) -> Result {
        let receivers = if dst == BROADCAST {
            self.net.nodes_below() as u64
        } else {
            1
        };
        if receivers == 0 {
            return Err(EHOSTUNREACH);
        }
        let (ok0, bad0) = {
            let s = self.state.lock();
            (s.verdicts_ok, s.verdicts_bad)
        };
        let want = count * receivers;
        let bytes = size as u64 * count;
        // One message, sent `count` times (treenet only reads it).
        let mut m = MsgBuf::new(size, GFP_KERNEL)?;
        fill_pattern(&mut m)?;
        let m = Arc::new(m, GFP_KERNEL)?;
        let start = now_ns();
        for _ in 0..count {
            self.net.send_shared(chan, dst, m.clone(), true)?;
        }
        // A hang detector, not a speed test: the wait goes on while the
        // transport makes progress toward the receivers (acks, grants), for
        // at most 4 periods, and fails after a period without any.  (A
        // fixed limit of one period failed 1 MiB sends from two CNs at once
        // in 240-byte frames, KASAN under TCG on a loaded host, that were
        // progressing.)  Other traffic to the receivers counts as progress
        // too, hence the bound.
        let ms = 60_000 + bytes / 32;
        let mut acks = self.net.acks_seen(dst);
        let mut periods = 1;
        loop {
            match self.wait_until(ms, |s| s.verdicts_ok + s.verdicts_bad >= ok0 + bad0 + want) {
                Err(e) if e == ETIMEDOUT && periods < 4 && self.net.acks_seen(dst) != acks => {
                    acks = self.net.acks_seen(dst);
                    periods += 1;
                }
                r => break r?,
            }
        }
        let ns = now_ns() - start;
        let bad = self.state.lock().verdicts_bad - bad0;
        if bad != 0 {
            self.set_result(format_args!("error op=send bad={}", U64(bad)));
            return Err(EIO);
        }
        self.set_result(format_args!(
            "ok op=send n={} receivers={} bytes={} ns={}",
            U64(count),
            U64(receivers),
            U64(bytes),
            U64(ns)
        ));
        Ok(())
    }

    fn ping(&self, dst: u16, size: usize, count: u64) -> Result {
        let start = now_ns();
        // The slowest round trip: a stall (a lost wake-up, a retransmission)
        // shows here rather than only in the mean.
        let mut max_ns = 0;
        for i in 0..count {
            let id = (i as u32).wrapping_add(1);
            let t0 = now_ns();
            self.pong_done.store(0, Relaxed);
            self.pong_want.store(id, Relaxed);
            self.net
                .send(CHAN_CTL, dst, ctl(OP_PING, id, 0, 0, size)?, true)?;
            self.wait_pong(id)?;
            max_ns = max_ns.max(now_ns() - t0);
        }
        let ns = now_ns() - start;
        self.set_result(format_args!(
            "ok op=ping n={} ns={} rtt_ns={} max_ns={}",
            U64(count),
            U64(ns),
            U64(crate::zoid_kernel::time::div_u64(ns, count)),
            U64(max_ns)
        ));
        Ok(())
    }

    /// Waits (up to 10 s) for the pong of ping `id`, doing the engine's
    /// receive work in this task as a caller waiting for a reply does (a
    /// zoid call): the pong is handed over without waking treenet's thread
    /// first.  If another task drives, it waits its usual way.
    fn wait_pong(&self, id: u32) -> Result {
        let deadline = deadline_after_ms(10_000);
        loop {
            match self
                .net
                .drive_until(CHAN_CTL, &self.pong_done, ms_to_jiffies(100))
            {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(EBUSY) => return self.wait_until(10_000, |s| s.last_pong == id),
                Err(e) => return Err(e),
            }
            // A slice passed: the checks `wait_until` makes (the pong may
            // have come without the flag: a concurrent ping took it over).
            let s = self.state.lock();
            if s.last_pong == id {
                return Ok(());
            }
            if s.gave_up() {
                return Err(ECANCELED);
            }
            if now_ns() > deadline {
                return Err(ETIMEDOUT);
            }
        }
    }

    fn barrier(&self, tag: u32, n: usize) -> Result {
        let start = now_ns();
        if self.net.identity().1 == Role::Ion {
            // A tag of a recent barrier again (two tests sharing tags):
            // the CNs' check-ins would be taken for late ones and released
            // at once while this waits for them until it times out.
            if self.state.lock().done_tags.contains(&tag) {
                pr_err!("treenet selftest: barrier tag {tag} was used by a recent barrier\n");
                return Err(EEXIST);
            }
            self.wait_until(600_000, |s| {
                s.arrivals.iter().filter(|a| a.0 == tag).count() >= n
            })?;
            {
                let mut s = self.state.lock();
                s.arrivals.retain(|a| a.0 != tag);
                if s.done_tags.len() >= 16 {
                    let _ = s.done_tags.remove(0);
                }
                s.done_tags.push(tag, GFP_KERNEL)?;
            }
            if n > 0 {
                self.net
                    .send(CHAN_CTL, BROADCAST, ctl(OP_RELEASE, tag, 0, 0, 0)?, true)?;
            }
        } else {
            // Wait for the ION to be known, then check in.
            let mut ion = None;
            self.wait_until(600_000, |_| {
                ion = self.net.ion();
                ion.is_some()
            })?;
            let ion = ion.ok_or(EHOSTUNREACH)?;
            let me = u32::from(self.net.node_id());
            // Check in again every 2 s: a check-in or a release can be lost
            // when a neighbour flaps (its queued messages are dropped), and
            // a check-in cannot be sent while the session with the ION
            // restarts (EHOSTUNREACH): that one is sent again too.
            let mut tries = 0;
            loop {
                let _ = self
                    .net
                    .send(CHAN_CTL, ion, ctl(OP_BARRIER, tag, me, 0, 0)?, true);
                match self.wait_until(2_000, |s| s.released.contains(&tag)) {
                    Err(e) if e == ETIMEDOUT && tries < 300 => tries += 1,
                    r => break r?,
                }
            }
            self.state.lock().released.retain(|t| *t != tag);
        }
        let ns = now_ns() - start;
        self.set_result(format_args!("ok op=barrier tag={tag} ns={}", U64(ns)));
        Ok(())
    }

    fn on_ctl(&self, src: u16, msg: &MsgBuf) -> Result {
        let mut h = [0u8; CTL_LEN];
        msg.read_at(0, &mut h)?;
        let a = u32::from_be_bytes([h[4], h[5], h[6], h[7]]);
        let b = u32::from_be_bytes([h[8], h[9], h[10], h[11]]);
        match h[0] {
            OP_VERDICT => {
                {
                    let mut s = self.state.lock();
                    if b == 1 {
                        s.verdicts_ok += 1;
                    } else {
                        s.verdicts_bad += 1;
                    }
                }
                self.changed();
            }
            OP_PING => {
                // Echo the whole message back (every byte is written:
                // the header, then the rest copied).
                let mut m = MsgBuf::for_filling(msg.len(), GFP_KERNEL)?;
                let mut chunk = [0u8; 256];
                let mut off = CTL_LEN;
                while off < msg.len() {
                    let n = (msg.len() - off).min(chunk.len());
                    msg.read_at(off, &mut chunk[..n])?;
                    m.write_at(off, &chunk[..n])?;
                    off += n;
                }
                let mut hh = h;
                hh[0] = OP_PONG;
                m.write_at(0, &hh)?;
                self.net.send(CHAN_CTL, src, m, false)?;
            }
            OP_PONG => {
                self.state.lock().last_pong = a;
                // (A ping whose sender could not drive waits for this.)
                self.changed();
                if a == self.pong_want.load(Relaxed) {
                    self.pong_done.store(1, Release);
                }
            }
            OP_BARRIER => {
                let node = b as u16;
                let (late, aborted) = {
                    let mut s = self.state.lock();
                    let late = s.done_tags.contains(&a);
                    if !late && !s.arrivals.contains(&(a, node)) {
                        s.arrivals.push((a, node), GFP_KERNEL)?;
                    }
                    (late, s.gave_up().then_some(s.test))
                };
                self.changed();
                // This ION gave its test up: a CN still checking in has
                // missed the word (sent once), and hears it again now.
                if let Some(test) = aborted {
                    self.net
                        .send(CHAN_CTL, src, ctl(OP_ABORT, test, 0, 0, 0)?, false)?;
                } else if late {
                    self.net
                        .send(CHAN_CTL, src, ctl(OP_RELEASE, a, 0, 0, 0)?, false)?;
                }
            }
            OP_ABORT => {
                {
                    let mut s = self.state.lock();
                    s.aborted = s.aborted.max(a);
                }
                self.changed();
                // The ION passes a CN's word on to the others (one that
                // misses it hears it again at its next barrier check-in).
                if self.net.identity().1 == Role::Ion {
                    let r = self
                        .net
                        .send(CHAN_CTL, BROADCAST, ctl(OP_ABORT, a, 0, 0, 0)?, false);
                    if let Err(e) = r {
                        pr_warn!(
                            "treenet selftest: abort of test {a} not passed on: {}\n",
                            e.to_errno()
                        );
                    }
                }
            }
            OP_RELEASE => {
                {
                    let mut s = self.state.lock();
                    if !s.released.contains(&a) {
                        s.released.push(a, GFP_KERNEL)?;
                    }
                }
                self.changed();
            }
            _ => return Err(EINVAL),
        }
        Ok(())
    }
}

impl ChannelHandler for SelfTest {
    fn answers_in_softirq(&self) -> bool {
        true
    }

    /// Pings are echoed from the receive softirq, as ICMP echo requests
    /// are (softirq_rx): the measure of treenet's own round trip.
    fn would_answer_in_softirq(&self, channel: u16, _src: u16, _below: bool, msg: &[u8]) -> bool {
        channel == CHAN_CTL && msg.len() >= CTL_LEN && msg[0] == OP_PING
    }

    fn answer_in_softirq(
        &self,
        channel: u16,
        src: u16,
        below: bool,
        msg: &[u8],
        out: &mut [u8],
    ) -> Option<usize> {
        if !self.would_answer_in_softirq(channel, src, below, msg) || msg.len() > out.len() {
            return None;
        }
        out[..msg.len()].copy_from_slice(msg);
        out[0] = OP_PONG;
        Some(msg.len())
    }

    fn receive(&self, channel: u16, src: u16, msg: Arc<MsgBuf>) {
        // Runs in the engine thread: only non-blocking sends from here.
        if channel == CHAN_DATA || channel == CHAN_SINK {
            let (ok, crc) = if channel == CHAN_DATA {
                check_pattern(&msg)
            } else {
                (true, 0)
            };
            {
                let mut s = self.state.lock();
                if ok {
                    s.received_ok += 1;
                } else {
                    s.received_bad += 1;
                }
            }
            if !ok {
                pr_warn!(
                    "treenet selftest: corrupt message of {} bytes from node {src}\n",
                    msg.len()
                );
            }
            let verdict = ctl(OP_VERDICT, msg.len() as u32, u32::from(ok), crc, 0);
            // The sender waits for every verdict: one not sent fails its
            // test by timeout, so the reason is logged here (sparsely: a
            // sender that takes no data would have every one refused).
            if let Err(e) = verdict.and_then(|v| self.net.send(CHAN_CTL, src, v, false)) {
                let n = {
                    let mut s = self.state.lock();
                    s.verdicts_unsent = s.verdicts_unsent.saturating_add(1);
                    s.verdicts_unsent
                };
                if n.is_power_of_two() {
                    pr_warn!(
                        "treenet selftest: verdict to node {src} not sent ({}; {} so far)\n",
                        e.to_errno(),
                        n
                    );
                }
            }
        } else if self.on_ctl(src, &msg).is_err() {
            pr_warn!("treenet selftest: bad control message from node {src}\n");
        }
    }

    fn peer_event(&self, node: u16, up: bool) {
        {
            let mut s = self.state.lock();
            if s.events.len() >= 64 {
                let _ = s.events.remove(0);
            }
            if s.events.push((node, up), GFP_KERNEL).is_err() {
                pr_warn!("treenet selftest: no memory to note node {node} up={up}\n");
            }
        }
        // (A CN's barrier waits for its ION to come up.)
        self.changed();
    }
}
