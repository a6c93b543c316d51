// SPDX-License-Identifier: GPL-2.0

//! Drivers shared by the cargo-fuzz targets (`fuzz/fuzz_targets/`) and the
//! corpus replay test (`tests/fuzz_corpus.rs`), so a stable `cargo test`
//! runs every corpus input through exactly the code the fuzzer ran.
//!
//! The drivers panic (assert) when an invariant breaks; they never panic on
//! merely malformed input.  zoid's call path is in [`zoid`].

pub mod ssi;
pub mod zoid;

use zoid_proto::crc32c::Crc32c;
use zoid_proto::treenet::arq::{RecvWindow, RtoEstimator, RxClass, SendWindow, MAX_WINDOW};
use zoid_proto::treenet::frag::{ReasmError, Reassembler};
use zoid_proto::treenet::grant::{
    GrantError, GrantQueue, Request, Waiting, MAX_GRANTS_PER_PEER, MAX_SLOTS, MAX_WAITING_PER_PEER,
    MAX_WEIGHT, UNIT,
};
use zoid_proto::treenet::wire::{
    self, Checksum, FrameError, FrameHeader, Hello, Kind, Lane, MsgHeader, HEADER_LEN,
    MSG_HEADER_LEN,
};
use zoid_proto::xxh64::{xxh64, Xxh64};

/// Largest payload the receive path accepts (a 1500-byte MTU link).
pub const MAX_PAYLOAD: usize = 1484;
/// Largest message the reassembler accepts.
pub const MAX_MSG: usize = 64 << 10;
/// Largest frame taken from one input record.
pub const MAX_FRAME: usize = HEADER_LEN + MAX_PAYLOAD + 16;
/// Record control bit: recompute the frame's checksum before parsing.
pub const CTRL_FIX_CRC: u8 = 0x1;
/// Record control bit: set version and payload length to match the record.
pub const CTRL_FIX_LEN: u8 = 0x2;
/// Record control bit: with [`CTRL_FIX_LEN`], the frame is of wire version
/// 2; with [`CTRL_FIX_CRC`], its checksum is XXH64's, whatever its version.
pub const CTRL_XXH64: u8 = 0x4;
/// Record control bit: the node restarts (forgets its neighbours, clock back
/// to zero) with the frame's first byte as its new config byte; the record
/// carries no frame.  Lets several inputs share one corpus file.
pub const CTRL_RESTART: u8 = 0x80;
/// Config bit: start every lane's sequence numbers just below the wrap.
pub const CFG_NEAR_WRAP: u8 = 0x80;

/// Sequence number lanes start at with [`CFG_NEAR_WRAP`].
const WRAP_START: u32 = 0xffff_ffc0;
/// Neighbours the receive driver tracks (further hellos are dropped).
const MAX_PEERS: usize = 4;
/// Ring of out-of-order frames, as in the engine.
const AHEAD: usize = MAX_WINDOW;
/// Send window of a lane (the engine's `lane_tx(64, ..)`).
const TX_WINDOW: usize = 64;
/// Frames a lane's sender transmits at most over one input.
const TX_LIMIT: u32 = 4096;
/// Simulated microseconds between two received frames.
const TICK_US: u32 = 997;

/// What the receive driver saw (lets tests check it is not vacuous).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxStats {
    /// Records in the input.
    pub records: usize,
    /// Frames `wire::parse` accepted.
    pub parsed: usize,
    /// Frames `wire::parse` rejected (any reason).
    pub parse_errors: usize,
    /// Hellos that decoded.
    pub hellos: usize,
    /// Acks that decoded and were not bogus.
    pub acks: usize,
    /// Data frames consumed in order (directly or from the ahead ring).
    pub consumed: usize,
    /// Data frames buffered ahead of the next expected one.
    pub buffered: usize,
    /// Reassembly errors.
    pub reasm_errors: usize,
    /// Messages delivered complete.
    pub delivered: usize,
}

/// Encodes one record of a [`treenet_rx`] input.
pub fn rx_record(ctrl: u8, frame: &[u8]) -> Vec<u8> {
    let len = u16::try_from(frame.len()).expect("frame too long for a record");
    let mut r = vec![ctrl];
    r.extend_from_slice(&len.to_be_bytes());
    r.extend_from_slice(frame);
    r
}

/// Builds a frame with a correct checksum (for seeds and tests).
pub fn build_frame(h: &FrameHeader, payload: &[u8]) -> Vec<u8> {
    let mut hdr = [0u8; HEADER_LEN];
    h.encode(&[payload], &mut hdr);
    let mut f = hdr.to_vec();
    f.extend_from_slice(payload);
    let (ack, n) = h.ack_bytes();
    f.extend_from_slice(&ack[..n]);
    f
}

/// One lane's receive state, as the engine's `RxLane`.
struct RxLane {
    win: RecvWindow,
    reasm: Reassembler,
    ahead: Vec<Option<(u32, u8, Vec<u8>)>>,
    /// Message in progress: header, buffer, bytes written so far.
    current: Option<(MsgHeader, Vec<u8>, usize)>,
}

impl RxLane {
    fn new(seq: u32, window: usize) -> Self {
        Self {
            win: RecvWindow::new(seq, window),
            reasm: Reassembler::new(),
            ahead: (0..AHEAD).map(|_| None).collect(),
            current: None,
        }
    }
}

/// One lane's send state: a window with frames in flight.
struct TxLane {
    win: SendWindow,
    sent: u32,
}

impl TxLane {
    fn new(seq: u32, now: u32) -> Self {
        let mut l = Self {
            win: SendWindow::new(
                seq,
                TX_WINDOW,
                RtoEstimator::new(200_000, 20_000, 2_000_000),
            ),
            sent: 0,
        };
        l.fill(now);
        l
    }

    /// Sends new frames while the window allows (the engine's transmit).
    fn fill(&mut self, now: u32) {
        while self.win.can_send() && self.sent < TX_LIMIT {
            let seq = self.win.on_send(now);
            assert_eq!(seq, self.win.next_seq().wrapping_sub(1));
            self.sent += 1;
        }
    }
}

struct Peer {
    node: u16,
    epoch: u32,
    rx: [RxLane; 2],
    tx: [TxLane; 2],
}

impl Peer {
    fn new(node: u16, epoch: u32, start: u32, window: usize, now: u32) -> Self {
        Self {
            node,
            epoch,
            rx: [RxLane::new(start, window), RxLane::new(start, window)],
            tx: [TxLane::new(start, now), TxLane::new(start, now)],
        }
    }
}

/// Reference CRC-32C, one bit at a time (no tables to get wrong).
fn crc32c_bitwise(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0x82f6_3b78 & (crc & 1).wrapping_neg());
        }
    }
    crc
}

/// Applies a record's control bits to its frame.
fn fix_up(ctrl: u8, frame: &mut [u8]) {
    if frame.len() < HEADER_LEN {
        return;
    }
    let xxh = ctrl & CTRL_XXH64 != 0;
    if ctrl & CTRL_FIX_LEN != 0 {
        frame[0] = if xxh {
            wire::WIRE_VERSION_XXH64
        } else {
            wire::WIRE_VERSION
        };
        let len = u16::try_from(frame.len() - HEADER_LEN).unwrap_or(u16::MAX);
        frame[6..8].copy_from_slice(&len.to_be_bytes());
    }
    if ctrl & CTRL_FIX_CRC != 0 {
        // Raw bytes, not `FrameHeader::encode`: invalid kinds keep a valid
        // checksum too, so `parse`'s later checks are reachable.
        let len = usize::from(u16::from_be_bytes([frame[6], frame[7]]));
        let end = (HEADER_LEN + len).min(frame.len());
        if xxh {
            let mut h = Xxh64::new();
            h.update(&frame[..12]);
            h.update(&frame[HEADER_LEN..end]);
            let mut whole = frame[..12].to_vec();
            whole.extend_from_slice(&frame[HEADER_LEN..end]);
            let sum = h.finish();
            assert_eq!(sum, xxh64(&whole), "Xxh64 in pieces differs from one piece");
            frame[12..16].copy_from_slice(&(sum as u32).to_be_bytes());
            return;
        }
        let mut crc = Crc32c::new();
        crc.update(&frame[..12]);
        crc.update(&frame[HEADER_LEN..end]);
        let sum = crc.finish();
        let slow = !crc32c_bitwise(crc32c_bitwise(!0, &frame[..12]), &frame[HEADER_LEN..end]);
        assert_eq!(sum, slow, "Crc32c differs from the bitwise reference");
        frame[12..16].copy_from_slice(&sum.to_be_bytes());
    }
}

/// Checks what `wire::parse` returned against the raw frame.
fn check_parsed(frame: &[u8], h: &FrameHeader, payload: &[u8]) {
    assert!(payload.len() <= MAX_PAYLOAD);
    assert_eq!(&frame[HEADER_LEN..HEADER_LEN + payload.len()], payload);
    // A frame `parse` accepts is canonical: re-encoding (with the checksum
    // of its version) gives its header.
    let sum = if frame[0] == wire::WIRE_VERSION_XXH64 {
        Checksum::Xxh64
    } else {
        Checksum::Crc32c
    };
    let mut hdr = [0u8; HEADER_LEN];
    h.encode_with(sum, &[payload], &mut hdr);
    assert_eq!(&hdr[..], &frame[..HEADER_LEN], "re-encoded header differs");
    // A piggybacked ack's bytes follow the payload.
    let (ack, n) = h.ack_bytes();
    assert_eq!(&frame[HEADER_LEN + payload.len()..][..n], &ack[..n]);
    match h.kind {
        Kind::Hello => assert!(h.flags == 0 && h.lane == Lane::Control),
        Kind::Ack => assert_eq!(h.flags, 0),
        Kind::Data => assert_eq!(h.flags & !(wire::FLAG_FIRST | wire::FLAG_LAST), 0),
    }
}

/// Receive state of one node.
struct Rx {
    start: u32,
    window: usize,
    now: u32,
    peers: Vec<Peer>,
    stats: RxStats,
}

impl Rx {
    fn new(cfg: u8) -> Self {
        Self {
            start: if cfg & CFG_NEAR_WRAP != 0 {
                WRAP_START
            } else {
                0
            },
            window: usize::from(cfg & 0x7f) + 1,
            now: 0,
            peers: Vec::new(),
            stats: RxStats::default(),
        }
    }

    fn peer(&self, node: u16) -> Option<usize> {
        self.peers.iter().position(|p| p.node == node)
    }

    fn frame(&mut self, frame: &[u8]) {
        // A keyed node's path: whatever the bytes, no panic, and no tag
        // the fuzzer wrote verifies under a key it does not know.
        if let Ok((_, _, wire::Seal::Tag(t))) = wire::parse_frame(frame, MAX_PAYLOAD) {
            let key = zoid_proto::siphash::SipKey([0x5eed, 0xfeed]);
            let _ = wire::verify_tag(&key, wire::Session::NONE, frame, t);
        }
        let (h, payload) = match wire::parse(frame, MAX_PAYLOAD) {
            Ok(x) => x,
            Err(e) => {
                let known = [wire::WIRE_VERSION, wire::WIRE_VERSION_XXH64];
                if frame.len() >= HEADER_LEN && known.contains(&frame[0]) {
                    let len = usize::from(u16::from_be_bytes([frame[6], frame[7]]));
                    if len <= MAX_PAYLOAD && HEADER_LEN + len <= frame.len() {
                        if frame[1] & 0x08 != 0 {
                            // Sealed: no key here, or its trailer is cut
                            // (or of version 2, which sealed frames never are).
                            assert!(matches!(
                                e,
                                FrameError::NoMac | FrameError::Truncated | FrameError::BadVersion
                            ));
                        } else {
                            // (Truncated: a data frame too short for the ack
                            // its kind announces.)
                            assert!(matches!(
                                e,
                                FrameError::BadChecksum
                                    | FrameError::BadKind
                                    | FrameError::Truncated
                            ));
                        }
                    }
                }
                self.stats.parse_errors += 1;
                return;
            }
        };
        self.stats.parsed += 1;
        check_parsed(frame, &h, payload);
        // The softirq's unchecked look agrees with the parse: a data frame
        // that is a whole message carries what it says.
        if let Some(m) = wire::peek_message(frame) {
            assert_eq!(h.kind, Kind::Data);
            assert_eq!(h.flags, wire::FLAG_FIRST | wire::FLAG_LAST);
            let mh = wire::MsgHeader::decode(payload).expect("a peeked message has a header");
            assert_eq!((mh.origin, mh.channel), (m.origin, m.channel));
            assert_eq!(&payload[wire::MSG_HEADER_LEN..], m.body);
        }
        if h.kind == Kind::Hello {
            self.hello(h.src, payload);
            return;
        }
        // The engine also drops frames for another node, from a neighbour
        // on another link or whose session is not established yet (its
        // hello did not echo our epoch); none of that touches zoid_proto,
        // so any hello makes a neighbour here.
        let Some(pi) = self.peer(h.src) else {
            return;
        };
        match h.kind {
            Kind::Ack => {
                let Some(sack) = wire::decode_ack(payload) else {
                    assert!(payload.len() < 8);
                    return;
                };
                assert_eq!(&wire::encode_ack(sack)[..], &payload[..8]);
                self.ack(pi, h.lane, h.seq, sack);
            }
            Kind::Data => {
                // As the engine: the ack it carries first, then its data.
                if let Some(a) = h.ack {
                    self.ack(pi, a.lane, a.next, 0);
                }
                self.data(pi, h.lane, h.seq, h.flags, payload)
            }
            Kind::Hello => {}
        }
    }

    fn hello(&mut self, src: u16, payload: &[u8]) {
        let Some(hello) = Hello::decode(payload) else {
            return;
        };
        self.stats.hellos += 1;
        let n = usize::from(hello.n_below);
        assert!(n <= wire::HELLO_MAX_BELOW);
        assert_eq!(hello.encoded_len(), 14 + 2 * n);
        let mut out = [0u8; 14 + 2 * wire::HELLO_MAX_BELOW];
        let len = hello.encode(&mut out);
        assert_eq!(len, hello.encoded_len());
        assert_eq!(&out[..len], &payload[..len], "hello does not round-trip");
        assert_eq!(Hello::decode(&out[..len]), Some(hello));
        if let Some(pi) = self.peer(src) {
            if self.peers[pi].epoch != hello.epoch {
                // Restarted: a new session, all lane state forgotten.
                self.peers.remove(pi);
            }
        }
        if self.peer(src).is_none() && self.peers.len() < MAX_PEERS {
            let p = Peer::new(src, hello.epoch, self.start, self.window, self.now);
            self.peers.push(p);
        }
    }

    fn ack(&mut self, pi: usize, lane: Lane, next: u32, sack: u64) {
        let now = self.now;
        let l = &mut self.peers[pi].tx[lane.index()];
        let (base, sent_next, in_flight) = (l.win.base(), l.win.next_seq(), l.win.in_flight());
        let out = l.win.on_ack(next, sack, now);
        assert_eq!(l.win.next_seq(), sent_next);
        let rto = l.win.rto.rto();
        assert!(
            (20_000..=2_000_000).contains(&rto),
            "rto {rto} out of bounds"
        );
        let outside = next.wrapping_sub(base) as usize > in_flight;
        assert_eq!(out.bogus, outside, "ack {next}, window {base}+{in_flight}");
        if out.bogus {
            assert_eq!(l.win.base(), base, "bogus ack moved the window");
            return;
        }
        self.stats.acks += 1;
        assert_eq!(out.from, base);
        assert_eq!(l.win.base(), next);
        assert!(out.acked as usize <= in_flight);
        assert_eq!(base.wrapping_add(out.acked), next);
        assert_eq!(l.win.in_flight(), in_flight - out.acked as usize);
        let mut due = Vec::new();
        l.win.due(now, 50_000, |seq| due.push(seq));
        for &seq in &due {
            let d = seq.wrapping_sub(l.win.base()) as usize;
            assert!(d < l.win.in_flight(), "due frame {seq} not in flight");
            l.win.on_retransmit(seq, now);
        }
        match l.win.next_due_in(now, 50_000) {
            None => assert!(l.win.in_flight() == 0 || sack != 0),
            Some(t) => assert!(l.win.in_flight() > 0 && t <= l.win.rto.rto()),
        }
        l.fill(now);
        assert!(l.win.in_flight() <= TX_WINDOW);
    }

    fn data(&mut self, pi: usize, lane: Lane, seq: u32, flags: u8, payload: &[u8]) {
        let r = &mut self.peers[pi].rx[lane.index()];
        match r.win.classify(seq) {
            RxClass::InOrder => {
                r.win.advance();
                assert_eq!(r.win.next_seq(), seq.wrapping_add(1));
                self.consume(pi, lane, flags, payload);
                loop {
                    let r = &mut self.peers[pi].rx[lane.index()];
                    let Some(q) = r.win.pop_ready() else { break };
                    let slot = r.ahead[q as usize % AHEAD].take();
                    let Some((bseq, bflags, bdata)) = slot else {
                        panic!("pop_ready returned {q}, nothing buffered");
                    };
                    assert_eq!(bseq, q, "pop_ready returned {q}, slot holds {bseq}");
                    self.consume(pi, lane, bflags, &bdata);
                }
            }
            RxClass::Future => {
                r.win.mark(seq);
                assert_eq!(r.win.classify(seq), RxClass::Duplicate);
                let slot = &mut r.ahead[seq as usize % AHEAD];
                assert!(
                    slot.is_none(),
                    "future frame {seq} overwrites a buffered one"
                );
                *slot = Some((seq, flags, payload.to_vec()));
                self.stats.buffered += 1;
            }
            RxClass::Duplicate | RxClass::OutOfWindow => {}
        }
        self.check_rx(pi, lane);
    }

    /// The window's bookkeeping matches the ahead ring.
    fn check_rx(&self, pi: usize, lane: Lane) {
        let r = &self.peers[pi].rx[lane.index()];
        let next = r.win.next_seq();
        assert_eq!(r.win.classify(next), RxClass::InOrder);
        assert!(
            r.ahead[next as usize % AHEAD].is_none(),
            "next expected is buffered"
        );
        let sack = r.win.sack();
        for d in 1..AHEAD as u32 {
            let seq = next.wrapping_add(d);
            let slot = &r.ahead[seq as usize % AHEAD];
            let buffered = slot.as_ref().is_some_and(|(s, _, _)| *s == seq);
            assert!(slot.is_none() || buffered, "stale frame in the ahead ring");
            let class = r.win.classify(seq);
            if (d as usize) < self.window {
                let want = if buffered {
                    RxClass::Duplicate
                } else {
                    RxClass::Future
                };
                assert_eq!(class, want, "seq {seq} (next {next})");
            } else {
                assert_eq!(class, RxClass::OutOfWindow);
                assert!(!buffered, "frame buffered beyond the window");
            }
            if d <= 64 {
                let bit = sack & (1u64 << (d - 1)) != 0;
                assert_eq!(
                    bit,
                    buffered && (d as usize) < self.window,
                    "sack bit {}",
                    d - 1
                );
            }
        }
    }

    /// One in-order frame of a lane: the engine's `consume`.
    fn consume(&mut self, pi: usize, lane: Lane, flags: u8, payload: &[u8]) {
        self.stats.consumed += 1;
        let r = &mut self.peers[pi].rx[lane.index()];
        let was_in_message = r.reasm.in_message();
        assert_eq!(was_in_message, r.current.is_some());
        let mut result = r.reasm.feed(flags, payload, MAX_MSG);
        if result == Err(ReasmError::Interrupted) {
            self.stats.reasm_errors += 1;
            assert!(was_in_message, "interrupted outside a message");
            assert!(!r.reasm.in_message());
            r.current = None;
            // The new message starts with this frame (the engine recurses):
            // it must not be interrupted again.
            result = r.reasm.feed(flags, payload, MAX_MSG);
            assert_ne!(result, Err(ReasmError::Interrupted), "interrupted twice");
        }
        let step = match result {
            Ok(step) => step,
            Err(e) => {
                self.stats.reasm_errors += 1;
                assert!(!r.reasm.in_message(), "{e:?} left a message in progress");
                r.current = None;
                return;
            }
        };
        assert_eq!(step.start.is_some(), flags & wire::FLAG_FIRST != 0);
        assert_eq!(step.complete, flags & wire::FLAG_LAST != 0);
        if let Some(h) = step.start {
            assert!(payload.len() >= MSG_HEADER_LEN);
            assert_eq!(&h.encode()[..], &payload[..MSG_HEADER_LEN]);
            assert_eq!(step.data, &payload[MSG_HEADER_LEN..]);
            assert_eq!(step.offset, 0);
            let len = h.len as usize;
            assert!(len <= MAX_MSG, "message of {len} bytes accepted");
            r.current = Some((h, vec![0u8; len], 0));
        } else {
            assert_eq!(step.data, payload);
        }
        let Some((h, buf, written)) = r.current.as_mut() else {
            panic!("continuation step without a message in progress");
        };
        assert_eq!(buf.len(), h.len as usize);
        assert_eq!(step.offset, *written, "step not contiguous");
        let end = step.offset + step.data.len();
        assert!(
            end <= buf.len(),
            "step {}+{} beyond the announced {}",
            step.offset,
            step.data.len(),
            buf.len()
        );
        buf[step.offset..end].copy_from_slice(step.data);
        *written = end;
        if step.complete {
            let Some((h, buf, written)) = r.current.take() else {
                unreachable!()
            };
            assert_eq!(written, h.len as usize, "short message delivered");
            assert_eq!(buf.len(), h.len as usize);
            assert!(!r.reasm.in_message());
            self.stats.delivered += 1;
        } else {
            assert!(r.reasm.in_message());
        }
    }
}

/// Feeds a fuzz input to one node's receive path.
///
/// Input: one config byte (low 7 bits + 1: receive window; [`CFG_NEAR_WRAP`]:
/// sequence numbers start just below the 32-bit wrap), then records of a
/// control byte ([`CTRL_FIX_CRC`], [`CTRL_FIX_LEN`], [`CTRL_RESTART`]), a
/// big-endian 16-bit length and that many frame bytes (capped at
/// [`MAX_FRAME`] and at the input's end).  Hellos create neighbours (at most four; a new epoch resets
/// one); acks and data frames from unknown neighbours are dropped.
pub fn treenet_rx(input: &[u8]) -> RxStats {
    let Some((&cfg, mut rest)) = input.split_first() else {
        return RxStats::default();
    };
    let mut rx = Rx::new(cfg);
    while rest.len() >= 3 {
        let ctrl = rest[0];
        let len = usize::from(u16::from_be_bytes([rest[1], rest[2]]));
        let len = len.min(MAX_FRAME).min(rest.len() - 3);
        let mut frame = rest[3..3 + len].to_vec();
        rest = &rest[3 + len..];
        rx.stats.records += 1;
        if ctrl & CTRL_RESTART != 0 {
            let stats = rx.stats;
            rx = Rx::new(frame.first().copied().unwrap_or(0));
            rx.stats = stats;
            continue;
        }
        rx.now = rx.now.wrapping_add(TICK_US);
        fix_up(ctrl, &mut frame);
        rx.frame(&frame);
    }
    rx.stats
}

/// What the grant driver saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GrantStats {
    /// Operations run.
    pub ops: usize,
    /// Grants handed out.
    pub grants: usize,
    /// Grants completed.
    pub completed: usize,
}

/// A model entry: the request, its start and finish tags.
type Tagged = (Request, u64, u64);

/// Reference model of `GrantQueue`: plain vectors, start-time fair
/// queueing written out.
struct Model {
    cap: usize,
    slots: usize,
    queue: Vec<Tagged>,
    /// Granted, and whether draining (an early grant may follow).
    active: Vec<(Tagged, bool)>,
    vtime: u64,
    /// Per peer: finish tag of its last weighted request (the caller's
    /// `last_finish`).
    last: [u64; 8],
}

impl Model {
    /// `weight` `None`: `push` (weight 1, the last finish from the peer's
    /// queued and granted requests); else `push_weighted`.
    fn push(&mut self, r: Request, weight: Option<u32>) -> Result<(), GrantError> {
        let same = |x: &Tagged| x.0.peer == r.peer && x.0.id == r.id;
        if self
            .queue
            .iter()
            .chain(self.active.iter().map(|a| &a.0))
            .any(same)
        {
            return Err(GrantError::Duplicate);
        }
        if self.queue.iter().filter(|q| q.0.peer == r.peer).count() >= MAX_WAITING_PER_PEER {
            return Err(GrantError::PeerLimit);
        }
        if self.queue.len() == self.cap {
            return Err(GrantError::Full);
        }
        let last = match weight {
            Some(_) => self.last[usize::from(r.peer)],
            None => self
                .queue
                .iter()
                .chain(self.active.iter().map(|a| &a.0))
                .filter(|q| q.0.peer == r.peer)
                .map(|q| q.2)
                .max()
                .unwrap_or(0),
        };
        let start = self.vtime.max(last);
        let finish = start + UNIT / u64::from(weight.unwrap_or(1).clamp(1, MAX_WEIGHT));
        if weight.is_some() {
            self.last[usize::from(r.peer)] = finish;
        }
        self.queue.push((r, start, finish));
        Ok(())
    }

    fn next_grant(&mut self) -> Option<Request> {
        if self.active.len() >= self.slots {
            return None;
        }
        // Peers without a grant first; then peers whose one grant drains.
        for early in [false, true] {
            let mut best: Option<usize> = None;
            for (i, q) in self.queue.iter().enumerate() {
                let held: Vec<bool> = self
                    .active
                    .iter()
                    .filter(|a| a.0 .0.peer == q.0.peer)
                    .map(|a| a.1)
                    .collect();
                let eligible = if early {
                    held == [true]
                } else {
                    held.is_empty()
                };
                if eligible && best.is_none_or(|b| q.1 < self.queue[b].1) {
                    best = Some(i);
                }
            }
            if let Some(b) = best {
                let t = self.queue.remove(b);
                self.vtime = self.vtime.max(t.1);
                self.active.push((t, false));
                return Some(t.0);
            }
        }
        None
    }

    fn draining(&mut self, peer: u16, id: u32) -> bool {
        let a = self
            .active
            .iter_mut()
            .find(|a| a.0 .0.peer == peer && a.0 .0.id == id);
        a.map(|a| a.1 = true).is_some()
    }

    fn complete(&mut self, peer: u16, id: u32) -> bool {
        let i = self
            .active
            .iter()
            .position(|a| a.0 .0.peer == peer && a.0 .0.id == id);
        i.map(|i| self.active.remove(i)).is_some()
    }

    fn forget_peer(&mut self, peer: u16) {
        self.active.retain(|a| a.0 .0.peer != peer);
        self.queue.retain(|a| a.0.peer != peer);
    }
}

/// Capacity of the fuzzed grant queue.
const GRANT_N: usize = 8;
/// Grant op flag: restart with a new queue (see [`grant_queue`]).
pub const GRANT_RESTART: u8 = 0x80;

/// Runs fuzz-chosen operations on an 8-entry `GrantQueue` and a reference
/// model.
///
/// Input: one byte of initial slots, then two bytes per operation: the
/// first's low three bits pick push (0: `push`, 1: `push_weighted` at a
/// weight of 1..=8 from the second byte's top bits) / next_grant (2, 3) /
/// complete (4) / draining (5) / forget_peer / set_slots / grow, the rest
/// pick the peer (0..8) and id
/// (0..4) or slot count.  A set_slots whose second byte has [`GRANT_RESTART`] set starts
/// a new queue instead (several inputs can share one corpus file).  Grow
/// moves the queue into storage of 0..16 entries (refused when too small).
pub fn grant_queue(input: &[u8]) -> GrantStats {
    let Some((&first, ops)) = input.split_first() else {
        return GrantStats::default();
    };
    let new = |first: u8| {
        let slots = usize::from(first % 10);
        let m = Model {
            cap: GRANT_N,
            slots: slots.clamp(1, MAX_SLOTS),
            queue: Vec::new(),
            active: Vec::new(),
            vtime: 0,
            last: [0; 8],
        };
        let q = GrantQueue::with_storage(vec![Waiting::default(); GRANT_N], slots);
        (q, m, [0u64; 8])
    };
    let (mut q, mut m, mut lasts) = new(first);
    let mut stats = GrantStats::default();
    for op in ops.chunks_exact(2) {
        stats.ops += 1;
        let peer = u16::from((op[0] >> 3) & 7);
        let id = u32::from(op[1] & 3);
        let len = u32::from(op[1]) << 10;
        match op[0] & 7 {
            0 => {
                let r = Request { peer, id, len };
                assert_eq!(q.push(r), m.push(r, None), "push {r:?}");
            }
            1 => {
                let r = Request { peer, id, len };
                let w = u32::from(op[1] >> 5) + 1;
                let last = &mut lasts[usize::from(peer)];
                assert_eq!(
                    q.push_weighted(r, w, last),
                    m.push(r, Some(w)),
                    "push {r:?} at weight {w}"
                );
                assert_eq!(*last, m.last[usize::from(peer)]);
            }
            2 | 3 => {
                let before = q.active();
                let g = q.next_grant();
                assert_eq!(g, m.next_grant(), "next_grant");
                if g.is_some() {
                    stats.grants += 1;
                    assert_eq!(q.active(), before + 1);
                    assert!(q.active() <= m.slots, "more grants than slots");
                }
            }
            4 => {
                let done = q.complete(peer, id);
                assert_eq!(done, m.complete(peer, id), "complete {peer} {id}");
                stats.completed += usize::from(done);
            }
            5 => {
                assert_eq!(
                    q.draining(peer, id),
                    m.draining(peer, id),
                    "draining {peer} {id}"
                );
            }
            6 if op[1] & GRANT_RESTART != 0 => {
                let cap = usize::from(op[1] & 15);
                let grown = q.replace_storage(vec![Waiting::default(); cap]);
                assert_eq!(grown.is_ok(), cap >= m.queue.len(), "grow to {cap}");
                if grown.is_ok() {
                    m.cap = cap;
                }
                assert_eq!(q.capacity(), m.cap);
            }
            6 => {
                q.forget_peer(peer);
                m.forget_peer(peer);
            }
            _ if op[1] & GRANT_RESTART != 0 => (q, m, lasts) = new(op[1] & !GRANT_RESTART),
            _ => {
                let s = usize::from(op[1] % 10);
                q.set_slots(s);
                m.slots = s.clamp(1, MAX_SLOTS);
            }
        }
        assert_eq!(q.waiting(), m.queue.len(), "waiting");
        assert_eq!(q.active(), m.active.len(), "active");
        assert!(q.waiting() <= q.capacity());
        assert!(q.active() <= MAX_SLOTS);
        // At most two grants per peer, and of two the older is draining.
        for a in m.active.iter() {
            let mut held = m.active.iter().filter(|b| b.0 .0.peer == a.0 .0.peer);
            assert!(
                held.clone().count() <= MAX_GRANTS_PER_PEER,
                "three grants for one peer"
            );
            if held.clone().count() == 2 {
                assert!(
                    held.next().is_some_and(|b| b.1),
                    "an early grant before draining"
                );
            }
        }
    }
    stats
}
