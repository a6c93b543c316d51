// SPDX-License-Identifier: GPL-2.0

//! Reliability of one lane between two neighbours: sequence numbers,
//! cumulative + selective acknowledgement, retransmission timeouts with
//! RTT estimation (RFC 6298, Karn's rule), duplicate suppression, a bounded
//! window.  Pure bookkeeping: the caller owns the frames and the clock.
//!
//! Time is a wrapping `u32` in microseconds (ages up to 35 minutes are
//! exact), which keeps a lane's state small: it is created at run time in a
//! kernel thread, on a stack of 8 KiB on ppc32.

use core::borrow::BorrowMut;

/// Largest window (frames in flight per lane) treenet supports.  A lane's
/// sender keeps a [`FrameSlot`] per frame of it (4 KiB).
pub const MAX_WINDOW: usize = 512;
/// The window a node sends with unless told otherwise (sysfs `window`):
/// the largest.  Under QEMU's TCG streams of 1 MiB messages and larger ran
/// 1.2 to 1.5 times faster with 512 than with 128 (docs/treenet.md, "A
/// larger window").
pub const DEFAULT_WINDOW: usize = MAX_WINDOW;
const RING: usize = MAX_WINDOW;

/// What a lane's sender keeps per frame in flight: when it was (last) sent,
/// in µs, and its flags (selectively acked, how often resent).
#[derive(Clone, Copy, Debug, Default)]
pub struct FrameSlot {
    sent_at: u32,
    flags: u8,
}

/// A sender's per-frame storage held inline (4 KiB: host code and tests).
pub type InlineRing = [FrameSlot; RING];

/// Signed distance from `b` to `a` in sequence space.
fn seq_diff(a: u32, b: u32) -> i64 {
    i64::from(a.wrapping_sub(b) as i32)
}

/// Shortest age (µs) of a hole before fast retransmission: below this,
/// reordering on the link is more likely than loss.
pub const FAST_RTX_MIN_US: u64 = 1000;

const SACKED: u8 = 2;
/// Bits 2..4 of a frame's flags: how often it was resent (saturating; 0:
/// sent once).
const RESENDS_SHIFT: u32 = 2;
const RESENDS_MAX: u8 = 7;

/// RTO estimation (RFC 6298), in microseconds.
#[derive(Clone, Copy, Debug)]
pub struct RtoEstimator {
    srtt: u64,
    rttvar: u64,
    rto: u64,
    min: u64,
    max: u64,
    sampled: bool,
}

impl RtoEstimator {
    /// A fresh estimator; `initial` is the RTO before the first sample.
    pub fn new(initial: u64, min: u64, max: u64) -> Self {
        Self {
            srtt: 0,
            rttvar: 0,
            rto: initial.clamp(min, max),
            min,
            max,
            sampled: false,
        }
    }

    /// Changes the bounds (a sysfs knob was written).
    pub fn set_bounds(&mut self, min: u64, max: u64) {
        self.min = min;
        self.max = max;
        self.rto = self.rto.clamp(min, max);
    }

    /// Current retransmission timeout.
    pub fn rto(&self) -> u64 {
        self.rto
    }

    /// Smoothed round-trip time (0 before the first sample).
    pub fn srtt(&self) -> u64 {
        self.srtt
    }

    /// Feeds one RTT measurement.
    pub fn sample(&mut self, rtt: u64) {
        if !self.sampled {
            self.srtt = rtt;
            self.rttvar = rtt / 2;
            self.sampled = true;
        } else {
            let err = self.srtt.abs_diff(rtt);
            self.rttvar = self.rttvar - self.rttvar / 4 + err / 4;
            self.srtt = self.srtt - self.srtt / 8 + rtt / 8;
        }
        self.rto = self
            .srtt
            .saturating_add(self.rttvar.saturating_mul(4))
            .clamp(self.min, self.max);
    }

    /// A timeout fired: back off exponentially.
    pub fn backoff(&mut self) {
        self.rto = self.rto.saturating_mul(2).clamp(self.min, self.max);
    }
}

/// What an ack did to the send window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckOutcome {
    /// Frames newly acknowledged cumulatively: `old_base..old_base + n`.
    pub acked: u32,
    /// First sequence number of the acked run.
    pub from: u32,
    /// The ack was for sequence numbers never sent (ignored).
    pub bogus: bool,
}

/// Sender side of a lane.  Its per-frame storage `R` is a ring of
/// [`MAX_WINDOW`] [`FrameSlot`]s, inline by default; the kernel keeps it on
/// the heap (see [`SendWindow::with_ring`]), as a lane is built at run time
/// on a kernel stack of 8 KiB on ppc32.
#[derive(Clone, Debug)]
pub struct SendWindow<R = InlineRing> {
    base: u32,
    next: u32,
    window: usize,
    ring: R,
    /// How long the receiver may hold an ack back (µs).
    peer_ack_delay: u64,
    /// When the latest-sent frame known to have arrived (acked or
    /// selectively acked, and sent only once) was sent: a frame in flight
    /// sent before it is lost (or reordered), one sent after it is not yet
    /// known to be either.  `None` while nothing is in flight.
    delivered_sent_at: Option<u32>,
    /// Congestion window (frames): halved by each retransmission timeout,
    /// grown by the frames each ack covers, at most `window`.  A receiver
    /// too slow for the window (an overloaded node: its acks come later
    /// than the RTO) gets fewer frames in flight instead of the whole
    /// window again at every timeout.
    cwnd: usize,
    /// When the lane's retransmission timer last restarted (µs): at the
    /// first frame of a flight, at every ack that made progress, at every
    /// timeout.  A frame's RTO runs from the later of this and its own
    /// transmission, so a receiver that acks, however slowly, draws no
    /// timeout, and one timeout does not follow another before a whole
    /// (backed-off) RTO.
    timer_from: u32,
    /// RTO estimation of this lane.
    pub rto: RtoEstimator,
}

impl SendWindow {
    /// An empty window starting at `seq`, its ring inline.
    pub fn new(seq: u32, window: usize, rto: RtoEstimator) -> Self {
        Self::build([FrameSlot::default(); RING], seq, window, rto)
    }
}

impl<R: BorrowMut<[FrameSlot]>> SendWindow<R> {
    /// An empty window starting at `seq` keeping its per-frame state in
    /// `ring`, which must hold exactly [`MAX_WINDOW`] slots (`None`
    /// otherwise: sequence numbers map onto the ring modulo its length,
    /// across their wrap too).
    pub fn with_ring(ring: R, seq: u32, window: usize, rto: RtoEstimator) -> Option<Self> {
        (ring.borrow().len() == RING).then(|| Self::build(ring, seq, window, rto))
    }

    fn build(ring: R, seq: u32, window: usize, rto: RtoEstimator) -> Self {
        Self {
            base: seq,
            next: seq,
            window: window.clamp(1, MAX_WINDOW),
            ring,
            peer_ack_delay: 0,
            delivered_sent_at: None,
            cwnd: window.clamp(1, MAX_WINDOW),
            timer_from: 0,
            rto,
        }
    }

    /// Frame `seq`'s slot.
    fn slot(&self, seq: u32) -> &FrameSlot {
        &self.ring.borrow()[seq as usize % RING]
    }

    fn slot_mut(&mut self, seq: u32) -> &mut FrameSlot {
        &mut self.ring.borrow_mut()[seq as usize % RING]
    }

    /// Tells the window how long the receiver may delay an ack (µs), so a
    /// tail-loss probe does not race a delayed ack.
    pub fn set_peer_ack_delay(&mut self, us: u64) {
        self.peer_ack_delay = us;
    }

    /// Oldest unacknowledged sequence number.
    pub fn base(&self) -> u32 {
        self.base
    }

    /// Next sequence number to be assigned.
    pub fn next_seq(&self) -> u32 {
        self.next
    }

    /// Frames in flight.
    pub fn in_flight(&self) -> usize {
        self.next.wrapping_sub(self.base) as usize
    }

    /// Changes the window (takes effect as frames drain).
    pub fn set_window(&mut self, window: usize) {
        self.window = window.clamp(1, MAX_WINDOW);
        self.cwnd = self.cwnd.min(self.window);
    }

    /// The congestion window (frames), at most the window.
    pub fn cwnd(&self) -> usize {
        self.cwnd
    }

    /// Whether another frame may be sent.
    pub fn can_send(&self) -> bool {
        self.in_flight() < self.window.min(self.cwnd)
    }

    /// A retransmission timeout expired at `now` (see [`SendWindow::due`]):
    /// back the RTO off, halve the congestion window, restart the timer.
    pub fn on_timeout(&mut self, now: u32) {
        self.rto.backoff();
        self.cwnd = (self.cwnd / 2).max(1);
        self.timer_from = now;
    }

    /// How long `seq`'s retransmission timer has run at `now`.
    fn timer_age(&self, seq: u32, now: u32) -> u64 {
        self.age(seq, now)
            .min(u64::from(now.wrapping_sub(self.timer_from)))
    }

    /// Records the transmission of a new frame; returns its sequence number.
    pub fn on_send(&mut self, now: u32) -> u32 {
        if self.base == self.next {
            self.timer_from = now;
        }
        let seq = self.next;
        *self.slot_mut(seq) = FrameSlot {
            sent_at: now,
            flags: 0,
        };
        self.next = self.next.wrapping_add(1);
        seq
    }

    /// Records the retransmission of `seq`.
    pub fn on_retransmit(&mut self, seq: u32, now: u32) {
        let resends = (self.resends(seq) + 1).min(RESENDS_MAX);
        let slot = self.slot_mut(seq);
        slot.sent_at = now;
        slot.flags = (slot.flags & !(RESENDS_MAX << RESENDS_SHIFT)) | (resends << RESENDS_SHIFT);
    }

    /// How often `seq` was resent (at most [`RESENDS_MAX`]).
    fn resends(&self, seq: u32) -> u8 {
        (self.slot(seq).flags >> RESENDS_SHIFT) & RESENDS_MAX
    }

    /// Whether `seq` was resent at least once.
    fn retransmitted(&self, seq: u32) -> bool {
        self.resends(seq) > 0
    }

    fn age(&self, seq: u32, now: u32) -> u64 {
        u64::from(now.wrapping_sub(self.slot(seq).sent_at))
    }

    fn is(&self, seq: u32, flag: u8) -> bool {
        self.slot(seq).flags & flag != 0
    }

    /// Notes that `seq` arrived.  A retransmitted frame is left out: which
    /// of its copies arrived is unknown (Karn's rule again).
    fn delivered(&mut self, seq: u32) {
        if self.retransmitted(seq) {
            return;
        }
        let t = self.slot(seq).sent_at;
        self.delivered_sent_at = Some(match self.delivered_sent_at {
            Some(d) if seq_diff(d, t) >= 0 => d,
            _ => t,
        });
    }

    /// Whether `seq` (in flight) was last sent before a frame that arrived.
    fn overtaken(&self, seq: u32) -> bool {
        self.delivered_sent_at
            .is_some_and(|d| seq_diff(d, self.slot(seq).sent_at) > 0)
    }

    /// Processes an ack: `next` is the receiver's next expected sequence
    /// number, bit `i` of `sack` says `next + 1 + i` arrived.
    pub fn on_ack(&mut self, next: u32, sack: u64, now: u32) -> AckOutcome {
        let advance = seq_diff(next, self.base);
        if advance < 0 || seq_diff(next, self.next) > 0 {
            return AckOutcome {
                bogus: true,
                ..AckOutcome::default()
            };
        }
        let from = self.base;
        if advance > 0 {
            self.timer_from = now;
        }
        // Karn: sample only from a frame sent once; the newest acked one.
        if advance > 0 {
            let last = next.wrapping_sub(1);
            if !self.retransmitted(last) {
                self.rto.sample(self.age(last, now));
            }
        }
        let mut seq = from;
        while seq != next {
            self.delivered(seq);
            seq = seq.wrapping_add(1);
        }
        self.base = next;
        self.cwnd = self.cwnd.saturating_add(advance as usize).min(self.window);
        for i in 0..64u32 {
            if sack & (1u64 << i) == 0 {
                continue;
            }
            let seq = next.wrapping_add(1).wrapping_add(i);
            if seq_diff(seq, self.next) >= 0 {
                break;
            }
            if !self.is(seq, SACKED) {
                self.delivered(seq);
                self.timer_from = now;
            }
            self.slot_mut(seq).flags |= SACKED;
        }
        if self.base == self.next {
            // Nothing in flight: a send time that old means nothing (the
            // clock wraps after 35 minutes).
            self.delivered_sent_at = None;
        }
        AckOutcome {
            acked: advance as u32,
            from,
            bogus: false,
        }
    }

    /// How old a hole below a selectively acked frame must be before it is
    /// sent again: one smoothed round trip, at least [`FAST_RTX_MIN_US`].
    pub fn fast_after(&self) -> u64 {
        self.rto.srtt().max(FAST_RTX_MIN_US)
    }

    /// Highest selectively acked frame in flight: holes below it are lost.
    fn highest_sacked(&self) -> Option<u32> {
        let mut highest = None;
        let mut seq = self.base;
        while seq != self.next {
            if self.is(seq, SACKED) {
                highest = Some(seq);
            }
            seq = seq.wrapping_add(1);
        }
        highest
    }

    /// How old unacknowledged frame `seq` may get before it goes again:
    /// the RTO; `fast_after` for a hole below a selectively acked frame
    /// (fast retransmission); for a hole already resent, `fast_after` once
    /// a frame sent after the resend arrived, else `fast_after` doubled for
    /// every resend after the first (a lost resend goes again a round trip
    /// later, while a receiver slower than `fast_after` to answer, an
    /// overloaded node, does not get every hole again each `fast_after`);
    /// twice `fast_after` plus the peer's ack delay
    /// for the newest frame in flight if it was sent once (a tail-loss
    /// probe: nothing after it can be selectively acked to reveal its loss,
    /// and its answer, an ack, reveals any hole before it).
    fn resend_after(&self, seq: u32, highest_sacked: Option<u32>, fast_after: u64) -> u64 {
        let rto = self.rto.rto();
        let hole = highest_sacked.is_some_and(|h| seq_diff(h, seq) > 0);
        let newest = seq.wrapping_add(1) == self.next;
        if hole && (self.overtaken(seq) || !self.retransmitted(seq)) {
            rto.min(fast_after)
        } else if hole {
            // Resent, and nothing sent since has arrived: lost again, or
            // the receiver is slow.  The first time a round trip later,
            // then backing off (never the RTO's backoff and halved
            // window: lost retransmissions at the end of a message would
            // wait for RTOs; zoid_sim, docs/sim.md table (i)).
            let doublings = u32::from(self.resends(seq).saturating_sub(1)).min(4);
            rto.min(fast_after << doublings)
        } else if newest && !self.retransmitted(seq) {
            self.probe_after(fast_after)
        } else {
            rto
        }
    }

    /// How old the newest frame may get before a tail-loss probe resends
    /// it: twice `fast_after` plus the peer's ack delay, at most the RTO.
    /// A frame just sent is due again after this at the earliest.
    pub fn probe_after(&self, fast_after: u64) -> u64 {
        let probe = fast_after
            .saturating_mul(2)
            .saturating_add(self.peer_ack_delay);
        self.rto.rto().min(probe)
    }

    /// Calls `f(seq)` for every frame to retransmit now: unacknowledged
    /// frames older than the RTO, holes below a selectively acked frame
    /// older than `fast_after` (fast retransmit, at most once per
    /// `fast_after`), and the newest frame once as a tail-loss probe (see
    /// [`SendWindow::resend_after`]).  Of the frames an RTO expired for, at
    /// most half the congestion window go (the oldest; the others wait for
    /// the acks that reveal them or for their next RTO).  Returns whether
    /// an RTO expired (the caller calls [`SendWindow::on_timeout`]; probes
    /// and fast retransmits do not back off).
    pub fn due(&self, now: u32, fast_after: u64, mut f: impl FnMut(u32)) -> bool {
        let rto = self.rto.rto();
        let mut expired = false;
        let mut burst = (self.cwnd / 2).max(1);
        let highest_sacked = self.highest_sacked();
        let mut seq = self.base;
        while seq != self.next {
            if !self.is(seq, SACKED) {
                let limit = self.resend_after(seq, highest_sacked, fast_after);
                if self.timer_age(seq, now) >= rto {
                    expired = true;
                    if burst > 0 {
                        burst -= 1;
                        f(seq);
                    }
                } else if limit < rto && self.age(seq, now) >= limit {
                    f(seq);
                }
            }
            seq = seq.wrapping_add(1);
        }
        expired
    }

    /// Time until the earliest retransmission becomes due (for timers), as
    /// in [`SendWindow::due`]: an RTO expiry, a hole turning `fast_after`
    /// old, or a tail-loss probe.  `None` when nothing is in flight.  A
    /// timer armed for this recovers a loss about a round trip after it,
    /// not one RTO later.
    pub fn next_due_in(&self, now: u32, fast_after: u64) -> Option<u64> {
        let highest_sacked = self.highest_sacked();
        let rto = self.rto.rto();
        let mut seq = self.base;
        let mut earliest: Option<u64> = None;
        while seq != self.next {
            if !self.is(seq, SACKED) {
                let limit = self.resend_after(seq, highest_sacked, fast_after);
                let mut t = rto.saturating_sub(self.timer_age(seq, now));
                if limit < rto {
                    t = t.min(limit.saturating_sub(self.age(seq, now)));
                }
                earliest = Some(earliest.map_or(t, |e| e.min(t)));
            }
            seq = seq.wrapping_add(1);
        }
        earliest
    }
}

/// How a received data frame relates to the receive window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxClass {
    /// The next expected frame: consume it, then [`RecvWindow::pop_ready`].
    InOrder,
    /// Ahead of the next expected, inside the window: buffer it.
    Future,
    /// Already received (a retransmission): drop, but re-ack.
    Duplicate,
    /// Beyond the window: drop.
    OutOfWindow,
}

/// Receiver side of a lane.
#[derive(Clone, Debug)]
pub struct RecvWindow {
    next: u32,
    window: usize,
    have: [u64; RING / 64],
}

impl RecvWindow {
    /// A window expecting `seq` next.
    pub fn new(seq: u32, window: usize) -> Self {
        Self {
            next: seq,
            window: window.clamp(1, MAX_WINDOW),
            have: [0; RING / 64],
        }
    }

    /// Next expected sequence number (the cumulative ack).
    pub fn next_seq(&self) -> u32 {
        self.next
    }

    fn bit(seq: u32) -> (usize, u64) {
        let i = seq as usize % RING;
        (i / 64, 1u64 << (i % 64))
    }

    fn has(&self, seq: u32) -> bool {
        let (w, b) = Self::bit(seq);
        self.have[w] & b != 0
    }

    /// Classifies a received sequence number (does not record it).
    pub fn classify(&self, seq: u32) -> RxClass {
        let d = seq_diff(seq, self.next);
        if d == 0 {
            RxClass::InOrder
        } else if d < 0 {
            RxClass::Duplicate
        } else if d as usize >= self.window {
            RxClass::OutOfWindow
        } else if self.has(seq) {
            RxClass::Duplicate
        } else {
            RxClass::Future
        }
    }

    /// Records a `Future` frame as buffered.
    pub fn mark(&mut self, seq: u32) {
        if self.classify(seq) == RxClass::Future {
            let (w, b) = Self::bit(seq);
            self.have[w] |= b;
        }
    }

    /// The in-order frame was consumed: advance.
    pub fn advance(&mut self) {
        let (w, b) = Self::bit(self.next);
        self.have[w] &= !b;
        self.next = self.next.wrapping_add(1);
    }

    /// If the next expected frame is already buffered, advances past it and
    /// returns its sequence number (consume the buffered frame).
    pub fn pop_ready(&mut self) -> Option<u32> {
        if self.has(self.next) {
            let seq = self.next;
            self.advance();
            Some(seq)
        } else {
            None
        }
    }

    /// Whether the frame after the next expected one is buffered (so
    /// consuming the next one would let [`RecvWindow::pop_ready`] go on).
    pub fn next_but_one_buffered(&self) -> bool {
        self.has(self.next.wrapping_add(1))
    }

    /// Selective ack bits for the frames after the next expected one.
    pub fn sack(&self) -> u64 {
        let mut bits = 0u64;
        for i in 0..64u32 {
            if i as usize + 1 >= self.window {
                break;
            }
            if self.has(self.next.wrapping_add(1).wrapping_add(i)) {
                bits |= 1u64 << i;
            }
        }
        bits
    }
}
