// SPDX-License-Identifier: GPL-2.0

//! treenet's engine: neighbours, lanes, routing, rendezvous, and the one
//! kernel thread that runs them.
//!
//! All protocol state sits in [`Inner`] behind one mutex.  Senders (upper
//! layers) only queue messages and kick the engine thread; received frames
//! are queued by the netdevice shim in softirq context and kick it too.  The
//! thread parses frames, runs the reliability state machines of
//! `zoid_proto::treenet`, transmits, and calls upper layers' receive
//! callbacks with the lock dropped.

use crate::zoid_kernel::fifo::Fifo;
use crate::zoid_kernel::hooks::{ssi_hook, Hook};
use crate::zoid_kernel::kthread::{
    stack_left, Kicker, ThreadBody, ThreadCtx, WakeCounts, DRIVE_STACK_MIN,
};
use crate::zoid_kernel::msgbuf::MsgBuf;
use crate::zoid_kernel::netlink::{busy_poll, FastRx, Mac, NetLink, RxFrameRef, BROADCAST_MAC};
use crate::zoid_kernel::ownlock::OwnLock;
use crate::zoid_kernel::stats::counters;
use crate::zoid_kernel::time::{
    div_u64, jiffies_to_ns, ms_to_jiffies, now_ns, ns_to_jiffies, ns_to_ms, random_u32,
};
use crate::zoid_proto::siphash::SipKey;
use crate::zoid_proto::treenet::arq::{
    FrameSlot, RecvWindow, RtoEstimator, RxClass, SendWindow, DEFAULT_WINDOW, MAX_WINDOW,
};
use crate::zoid_proto::treenet::frag::{
    first_room, frame_count, frame_spec, ReasmError, Reassembler,
};
use crate::zoid_proto::treenet::grant::{
    nearly_received, GrantError, GrantQueue, Request, Waiting, MAX_GRANTS_PER_PEER, MAX_SLOTS,
    MAX_WAITING_PER_PEER,
};
use crate::zoid_proto::treenet::wire::{
    self, Checksum, FrameError, FrameHeader, Hello, Kind, Lane, MsgHeader, PiggyAck, Role, Seal,
    Session, BROADCAST, FEATURE_ION_ID, FEATURE_PIGGY_ACK, FEATURE_XXH64, HEADER_LEN,
    HELLO_MAX_BELOW, MAC_TRAILER_LEN, MIN_PACKET_PAYLOAD, MSG_HEADER_LEN, NO_ION, PIGGY_ACK_LEN,
    WIRE_VERSION_XXH64,
};
use crate::zoid_proto::treenet::wire::{FLAG_FIRST, FLAG_LAST};
use kernel::prelude::*;
use kernel::sync::{
    atomic::{Acquire, Atomic, Relaxed},
    Arc, CondVar, CondVarTimeoutResult, Mutex, UniqueArc,
};
use kernel::{new_condvar, new_mutex};

/// Queue room beyond the bound that only control-lane messages may take
/// (see `Inner::queue_bound`).
pub(crate) const CONTROL_RESERVE: usize = 1 << 20;

/// Entries `peer_log` keeps (the newest).
const PEER_LOG_LEN: usize = 32;

/// treenet's own channel (rendezvous control messages).
pub(crate) const CHANNEL_TREENET: u16 = 0;
/// Largest channel id.
pub(crate) const MAX_CHANNELS: usize = 64;
/// The channel a task passes to [`Treenet::drive_until`] to deliver every
/// channel's messages, as the engine thread does (an ION's idle zoid
/// worker, which has nothing of its own to wait for).
pub(crate) const ALL_CHANNELS: u16 = u16::MAX;

/// What [`Inner::send_next`] did.
enum Next {
    /// A frame went.
    Sent,
    /// One would have gone, but the caller's budget was spent.
    Waiting,
    /// None: nothing new queued, or the window is full.
    Nothing,
}

/// Who runs an engine pass, and what it delivers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum PassBy {
    /// The engine thread: every event.
    Thread,
    /// A task in [`Treenet::drive_until`]: the messages of its channel at
    /// the head of the queue ([`ALL_CHANNELS`]: every event).
    Driver(u16),
}

impl PassBy {
    /// The channel whose messages alone this pass delivers, if only one's.
    fn only(self) -> Option<u16> {
        match self {
            PassBy::Driver(ch) if ch != ALL_CHANNELS => Some(ch),
            _ => None,
        }
    }
}
/// Largest message size the `max_msg_size` knob accepts.
pub(crate) const MAX_MSG_LIMIT: usize = 64 << 20;
/// Loopback link: MTU of the in-memory wire.
const LOOPBACK_MTU: usize = 1500;
/// Frames a link may have queued from softirq before dropping.
const RXQ_LIMIT: u32 = 4096;
/// Largest `tx_batch`, and its default: most frames handed to a device
/// driver at once (virtio-net's rings hold 256).  Batches of 32 moved 64 KiB
/// streams slower than none; docs/treenet.md, "Batched transmit".
pub(crate) const MAX_TX_BATCH: u32 = 256;
/// `tx_batch` at load.
pub(crate) const DEFAULT_TX_BATCH: u32 = MAX_TX_BATCH;
/// Frames handled per engine pass before transmitting (fairness).
const RX_BUDGET: usize = 256;
/// Frames one link may hand in per round of a pass (see `pass`).
const RX_ROUND: usize = 32;
/// Frames sent per engine pass per neighbour.
const TX_BUDGET: usize = 128;
/// Longest an engine pass receives, and then transmits, before it moves
/// on (ns); what is left goes to the next pass, which follows at once.
/// Acks go out between passes: a pass that ran on for seconds (a flood on
/// a kernel where a frame costs milliseconds, as a KASAN kernel under
/// emulation does) held them past the senders' retransmission timeouts,
/// and the retransmissions it drew made every later pass longer still.
const PASS_TIME_NS: u64 = 2_000_000;

/// Lines [`Inner::log_refused_tag`] writes per window at most.
const REFUSED_LOG_BURST: u32 = 5;

/// [`REFUSED_LOG_BURST`]'s window.
const REFUSED_LOG_WINDOW_NS: u64 = 10_000_000_000;

/// A node id after a space, or nothing (log lines).
struct OptNode(Option<u16>);

impl kernel::fmt::Display for OptNode {
    fn fmt(&self, f: &mut kernel::fmt::Formatter<'_>) -> kernel::fmt::Result {
        match self.0 {
            Some(n) => write!(f, " {n}"),
            None => Ok(()),
        }
    }
}

/// Frames after which an ack goes without waiting for `ack_delay_us`: a
/// quarter of this node's window, from 2 to 16 frames (16 with the default
/// window).  An ack for every 2 frames, as before 2026-11-29, put 47
/// ack frames on the wire per MiB of a stream and made a 1 MiB stream 1.4
/// times slower under TCG (docs/treenet.md, "Where the time goes"); a
/// quarter of the window keeps a sender whose window is as large as ours
/// from waiting for acks.  A frame out of order or a duplicate is acked at
/// once whatever this says.
fn ack_every(k: &Knobs) -> u32 {
    (k.window.load(Relaxed) / 4).clamp(2, 16)
}
/// Initial grant queue capacity; it grows to hold
/// [`MAX_WAITING_PER_PEER`] requests per neighbour.
const GRANT_QUEUE_MIN: usize = 16;
/// Neighbours whose session is not established yet (hellos heard, ours not
/// echoed) kept at once; hellos from further new nodes are dropped
/// (`drop_hello_flood`), so forged hellos cannot fill memory.  They expire
/// after `peer_timeout_ms` of silence.
const MAX_PENDING_NEIGHBORS: usize = 16;

/// Forged origins are logged at most this often (ns); all are counted.
const FORGED_LOG_INTERVAL_NS: u64 = 5_000_000_000;

/// Rendezvous control message types (channel 0).
const CTL_RTS: u8 = 1;
const CTL_CTS: u8 = 2;
const CTL_REJECT: u8 = 3;

/// Tuning knobs (sysfs).  Written by users, read by the engine.
pub(crate) struct Knobs {
    /// Payload bytes per frame; 0 = largest the link MTU allows.
    pub(crate) packet_size: Atomic<u32>,
    /// Messages of more frames than this use rendezvous; 0 = never.
    pub(crate) ack_threshold: Atomic<u32>,
    /// Frames in flight per lane.
    pub(crate) window: Atomic<u32>,
    /// Retransmission timeout bounds (ms).
    pub(crate) rto_min_ms: Atomic<u32>,
    /// Longest an ack waits for more frames to cover (µs; 0: ack every
    /// engine pass).
    pub(crate) ack_delay_us: Atomic<u32>,
    /// Whether acks ride on data frames to neighbours that understand them
    /// (1) or always go in frames of their own (0).
    pub(crate) piggyback_acks: Atomic<u32>,
    /// Whether frames to neighbours that accept it carry the XXH64
    /// checksum of wire version 2 (1) or always CRC-32C (0).
    pub(crate) fast_checksum: Atomic<u32>,
    /// Most frames of one engine pass or one send handed to the device
    /// driver together (one notification of the device per batch, no
    /// qdisc per frame); 0: each frame on its own through the qdisc.
    pub(crate) tx_batch: Atomic<u32>,
    /// Upper RTO bound (ms).
    pub(crate) rto_max_ms: Atomic<u32>,
    /// Busy polling (µs; 0: off): a task waiting for a reply polls the
    /// device for up to this long before it sleeps, and the engine thread
    /// polls for up to this long after the last frame it received.
    pub(crate) busy_poll_us: Atomic<u32>,
    /// Silence after which a neighbour is down (ms).
    pub(crate) peer_timeout_ms: Atomic<u32>,
    /// Largest message accepted or sent (bytes).
    pub(crate) max_msg_size: Atomic<u32>,
    /// Concurrent rendezvous grants this node gives.
    pub(crate) grant_slots: Atomic<u32>,
    /// Fault injection on transmit, parts per million.
    pub(crate) drop_ppm: Atomic<u32>,
    /// Frames lost in a row each time `drop_ppm` drops one (burst loss).
    pub(crate) drop_burst: Atomic<u32>,
    /// Duplicated frames, parts per million.
    pub(crate) dup_ppm: Atomic<u32>,
    /// Reordered frames, parts per million.
    pub(crate) reorder_ppm: Atomic<u32>,
    /// Fault injection on receive: data and ack frames dropped, parts per
    /// million; hellos pass (a neighbour that stays up but takes no data).
    pub(crate) deaf_ppm: Atomic<u32>,
    /// Whether the receive softirq answers the small messages a channel
    /// answers at once (the self-test's pings), without waking the
    /// engine thread (1), or leaves every frame to the engine (0).
    pub(crate) softirq_rx: Atomic<u32>,
    /// Fault injection for tests of the other nodes' defences: the
    /// messages this node originates claim to come from this node id
    /// (a hostile CN's kernel); `BROADCAST` (65535, the default): from
    /// this node.
    pub(crate) forge_origin: Atomic<u32>,
    /// Fault injection for tests of the other nodes' defences: 1, this
    /// node acknowledges nothing it receives (a hostile CN that keeps
    /// sending requests and never lets its answers go); 0 (default): it
    /// acks as the protocol says.
    pub(crate) mute_acks: Atomic<u32>,
}

/// The engine thread's nice value at load: -20, as the kernel's high
/// priority workqueues (`WQ_HIGHPRI`) that block and network transports
/// run their work on.  Receive work in softirq is charged to whatever task
/// it interrupts; under a flood of frames the ION of an x86_64 KASAN pset
/// spent 70 % of its CPU there, and an engine at nice 0 lost the scheduler
/// for up to 13 s at a time (one pass of it took that long), so that its
/// hellos went out 10 s late and a CN took its ION for down
/// (docs/reliability.md, "Long runs").  At -20 its longest pass was 1.5 s.
pub(crate) const ENGINE_NICE: i32 = -20;

impl Knobs {
    fn new() -> Self {
        Self {
            packet_size: Atomic::new(0),
            ack_threshold: Atomic::new(16),
            window: Atomic::new(DEFAULT_WINDOW as u32),
            rto_min_ms: Atomic::new(20),
            ack_delay_us: Atomic::new(2000),
            piggyback_acks: Atomic::new(1),
            fast_checksum: Atomic::new(1),
            tx_batch: Atomic::new(DEFAULT_TX_BATCH),
            rto_max_ms: Atomic::new(2000),
            busy_poll_us: Atomic::new(0),
            peer_timeout_ms: Atomic::new(5000),
            max_msg_size: Atomic::new((4 << 20) + 1024),
            grant_slots: Atomic::new(2),
            drop_ppm: Atomic::new(0),
            drop_burst: Atomic::new(1),
            dup_ppm: Atomic::new(0),
            reorder_ppm: Atomic::new(0),
            deaf_ppm: Atomic::new(0),
            softirq_rx: Atomic::new(1),
            forge_origin: Atomic::new(u32::from(BROADCAST)),
            mute_acks: Atomic::new(0),
        }
    }
}

counters! {
    /// treenet's 64-bit counters (sysfs, one file each).
    pub(crate) struct Stats {
        frames_sent: "Frames transmitted (retransmissions included).",
        frames_received: "Frames received and accepted.",
        msgs_sent: "Messages handed to treenet by local senders.",
        msgs_received: "Messages delivered to local channels.",
        bytes_sent: "Message bytes handed to treenet by local senders.",
        bytes_received: "Message bytes delivered to local channels.",
        msgs_forwarded: "Messages relayed for other nodes.",
        bcast_sent: "Broadcast messages originated here.",
        bcast_received: "Broadcast messages delivered here.",
        bcast_bytes_sent: "Bytes of the broadcast messages originated here.",
        bcast_bytes_received: "Bytes of the broadcast messages delivered here.",
        below_up: "Nodes that appeared below an up neighbour (a relay's child came up): reported up.",
        below_down: "Nodes that left the subtree of an up neighbour (a relay's child went down): reported down.",
        retransmits: "Frames sent again (timeout or selective-ack hole).",
        rto_expired: "Retransmission timeouts.",
        duplicates: "Duplicate frames received (suppressed).",
        rendezvous_waits: "Large messages that waited for a grant.",
        grants_given: "Rendezvous grants given to senders.",
        grants_early: "Of those, grants given while the peer's previous message was still arriving.",
        grants_refused: "Rendezvous requests refused (queue full or peer over its limit).",
        acks_sent: "Ack frames sent.",
        acks_piggybacked: "Acks sent in data frames (no frame of their own).",
        acks_piggy_received: "Acks received in data frames.",
        frames_xxh64_received: "Frames received and accepted that carried an XXH64 checksum (wire version 2; the rest carried CRC-32C or a tag).",
        kicks_saved: "Sends that did not need to wake the engine thread.",
        drives: "Waits in which the waiting task did the engine's work (see drive_until).",
        drive_passes: "Engine passes run by waiting tasks instead of the engine thread.",
        drive_refused: "Waits that could not drive (another task drove, or too little stack).",
        busy_polls: "Busy polls of the device (busy_poll_us): by waiting tasks and the engine thread.",
        busy_poll_hits: "Busy polls that ended on a frame or the awaited reply (no interrupt, no wake-up), not on time.",
        engine_passes: "Engine passes run by the engine thread.",
        engine_idle_passes: "Engine thread passes that received, sent and delivered nothing (a deadline whose work was done meanwhile, or a kick for a frame an earlier pass took).",
        hellos_sent: "Hello frames sent.",
        peer_up: "Neighbours that came up (or restarted).",
        peer_down: "Neighbours that went silent past peer_timeout_ms.",
        msgs_failed: "Queued messages dropped: peer down or request refused.",
        send_waits: "Blocking sends that waited for room: the destination's queue was over its bound (2 x max_msg_size + 1 MiB, and 1 MiB more for control-lane messages).",
        send_stalls: "Blocking sends failed (ETIMEDOUT): the destination's queue stayed over its bound while frames to it went unacknowledged for 4 x peer_timeout_ms.",
        handler_sends_refused: "Sends from a receive handler refused (EAGAIN): the destination's queue held twice its bound (a neighbour that takes no data while its messages keep asking for answers).",
        drop_truncated: "Frames dropped: truncated.",
        drop_oversized: "Frames dropped: payload over the local limit.",
        drop_bad_version: "Frames dropped: unknown wire version.",
        drop_bad_checksum: "Frames dropped: checksum mismatch.",
        drop_bad_kind: "Frames dropped: unknown frame type.",
        drop_no_auth: "Frames dropped: unauthenticated while auth_key is set, or authenticated while it is not.",
        drop_bad_auth: "Frames dropped: authentication tag mismatch (forged, altered, another key or session).",
        drop_unknown_node: "Frames dropped: sender is not a known neighbour.",
        drop_not_for_us: "Frames dropped: addressed to another node.",
        drop_out_of_window: "Frames dropped: sequence outside the window.",
        drop_msg_too_long: "Messages dropped: longer than max_msg_size.",
        drop_reassembly: "Messages dropped: malformed fragment sequence.",
        drop_no_route: "Messages dropped: destination unreachable.",
        drop_no_channel: "Messages dropped: no receiver on the channel.",
        drop_nomem: "Messages dropped: out of memory.",
        drop_bad_hello: "Hellos dropped: malformed or from another pset.",
        drop_hello_flood: "Hellos dropped: too many new neighbours not up yet.",
        drop_hello_moved: "Hellos dropped: a live neighbour's id heard on another link.",
        drop_bad_control: "Rendezvous messages dropped: malformed or unexpected.",
        peer_events_lost: "Peer events (a neighbour, or a node below one, up or down) upper layers were not told of for want of memory (logged at most every 5 s).",
        engine_nomem: "Engine bookkeeping that could not grow for want of memory: a node below a neighbour left out of its routes or hellos, a retransmission put off to the next timeout, a rendezvous request or answer put off to the next pass, a peer log entry, a channel not told of a pass's events (logged at most every 5 s).",
        drop_forged_origin: "Messages dropped: their origin is not the neighbour that passed them on nor a node its side of the tree holds (a forged sender).",
        drop_relay_refused: "Messages an ION did not pass on from one CN to others: their channel's messages end at the ION (zoid's).",
        inject_drop: "Frames dropped by fault injection.",
        inject_dup: "Frames duplicated by fault injection.",
        inject_reorder: "Frames reordered by fault injection.",
        inject_deaf: "Data and ack frames dropped on receive by fault injection (deaf_ppm).",
        inject_muted_acks: "Acks not sent by fault injection (mute_acks).",
        tx_errors: "Frames the device refused.",
        tx_batches: "Batches of frames handed to a device driver at once (tx_batch).",
        tx_batch_frames: "Frames in those batches.",
        tx_batch_via_qdisc: "Frames held for a batch that went through the device's qdisc instead: it had frames queued, may not be bypassed (a shaping qdisc, egress hooks, several tx queues, no carrier), or the driver's queue was stopped or busy.",
        softirq_answers: "Messages answered in the receive softirq (softirq_rx): no engine thread woken.",
        softirq_busy: "Frames the receive softirq left to the engine because a task held the engine (it queued them).",
        softirq_nomem: "Answers the receive softirq could not allocate (the message went to the engine instead).",
    }
}

/// Upper-layer receiver of one channel.
pub(crate) trait ChannelHandler: Send + Sync {
    /// A whole message from node `src` on `channel`.  Runs in the engine
    /// thread with no treenet lock held: it may call [`Treenet::send`]
    /// (non-blocking) but must not sleep for long.
    fn receive(&self, channel: u16, src: u16, msg: Arc<MsgBuf>);
    /// Node `node` became reachable (`up`) or unreachable.
    fn peer_event(&self, node: u16, up: bool);
    /// Whether [`ChannelHandler::answer_in_softirq`] may answer anything
    /// (asked once, when the channel is registered).
    fn answers_in_softirq(&self) -> bool {
        false
    }
    /// Whether an ION passes this channel's messages from one CN on to
    /// others (asked once, when the channel is registered).  `false`: the
    /// channel's messages end at the ION (zoid's calls and replies), and
    /// one a CN addresses to another CN, or broadcasts, is dropped there
    /// (`drop_relay_refused`).
    fn relayed_by_ion(&self) -> bool {
        true
    }
    /// Whether `msg` (a whole message of one frame from node `src` on
    /// `channel`; `below`: `src` is in this node's subtree) is one
    /// [`ChannelHandler::answer_in_softirq`] answers.  A quick, pure look,
    /// asked in the receive softirq under the engine's lock before treenet
    /// makes room for an answer.
    fn would_answer_in_softirq(&self, _channel: u16, _src: u16, _below: bool, _msg: &[u8]) -> bool {
        false
    }
    /// Answers `msg` into `out` (at most [`SOFTIRQ_ANSWER_MAX`] bytes) and
    /// returns the answer's length, which treenet sends back to `src` on
    /// `channel` at once (softirq_rx, the way ICMP echo is answered); then
    /// `receive` is not called for `msg`.  Asked only after
    /// [`ChannelHandler::would_answer_in_softirq`] said yes and room for the
    /// answer was made, so an answer returned is always sent.  Runs in the
    /// receive softirq under the engine's lock: it must not sleep, allocate
    /// (but with `GFP_ATOMIC`) or call treenet.  `None` gives `msg` to
    /// `receive` as usual, so it must then have changed nothing.
    fn answer_in_softirq(
        &self,
        _channel: u16,
        _src: u16,
        _below: bool,
        _msg: &[u8],
        _out: &mut [u8],
    ) -> Option<usize> {
        None
    }
}

/// A frame the receive softirq may take (see [`Inner::fast_candidate`]):
/// data, in order, a whole message of one frame for this node.
struct FastFrame<'a> {
    ni: usize,
    lane: Lane,
    ack: Option<PiggyAck>,
    xxh64: bool,
    header: MsgHeader,
    /// The message.
    body: &'a [u8],
    /// The lane's reassembler once the frame is taken.
    reasm: Reassembler,
}

/// Largest frame the receive softirq looks at: answers are for small
/// messages, and a frame not taken is parsed again by the engine.
const SOFTIRQ_FRAME_MAX: usize = 512;

/// Longest answer [`ChannelHandler::answer_in_softirq`] may give.
pub(crate) const SOFTIRQ_ANSWER_MAX: usize = 256;

/// Per-channel statistics.
#[derive(Clone, Copy, Default)]
pub(crate) struct ChannelStats {
    pub(crate) msgs_sent: u64,
    pub(crate) bytes_sent: u64,
    pub(crate) msgs_received: u64,
    pub(crate) bytes_received: u64,
}

struct Channel {
    id: u16,
    handler: Arc<dyn ChannelHandler>,
    /// [`ChannelHandler::relayed_by_ion`].
    relayed_by_ion: bool,
}

/// A message queued for one neighbour.
struct OutMsg {
    header: MsgHeader,
    buf: Arc<MsgBuf>,
    /// Payload bytes per frame (fixed when the message starts).
    payload: usize,
    frames: usize,
    /// Sequence number of frame 0 once started.
    first_seq: u32,
    sent: usize,
}

impl OutMsg {
    /// What the message weighs against its neighbour's queue bound: the
    /// memory it holds (a page at least, whatever its length) and its
    /// header, so that a flood of small answers to a neighbour that
    /// acknowledges nothing is bounded in memory, not only in bytes.
    fn charge(&self) -> usize {
        self.buf.footprint().max(self.buf.len()) + MSG_HEADER_LEN + core::mem::size_of::<Self>()
    }
}

/// A lane's send window with its per-frame ring on the heap (4 KiB: see
/// [`new_tx_ring`]).
type TxWindow = SendWindow<KVec<FrameSlot>>;

struct TxLane {
    win: TxWindow,
    /// Messages started or waiting, in order; dropped once fully acked.
    msgs: Fifo<OutMsg>,
}

struct RxLane {
    win: RecvWindow,
    reasm: Reassembler,
    /// Frames received ahead of the next expected one, by
    /// `seq % MAX_WINDOW`: empty until the lane's first such frame.
    ahead: KVVec<Option<(u32, u8, KVec<u8>)>>,
    /// Message being received and its header.
    current: Option<(MsgHeader, MsgBuf)>,
    /// `current` is a granted message whose sender may be granted its next
    /// one (the grant queue was told it is draining).
    drain_told: bool,
    /// Frames received since the last ack.
    unacked: u32,
    /// The next ack goes at the end of this pass (a frame out of order, a
    /// duplicate: the sender needs to know now).
    ack_now: bool,
    /// When the delayed ack of `unacked` frames is due (`u64::MAX`: none).
    ack_due_ns: u64,
}

impl RxLane {
    /// Gives the lane its ring for frames out of order (see [`lane_rx`]).
    fn grow_ahead(&mut self) -> Result {
        self.ahead.reserve(MAX_WINDOW, GFP_KERNEL)?;
        while self.ahead.len() < MAX_WINDOW {
            self.ahead.push(None, GFP_KERNEL)?;
        }
        Ok(())
    }

    /// Whether this lane owes its sender an ack (frames unacknowledged, or
    /// one that must go now).
    fn owes_ack(&self) -> bool {
        self.unacked != 0 || self.ack_now
    }

    /// When this lane's ack is due (ns): 0 for at once (a frame out of
    /// order or a duplicate, or `ack_every` ([`ack_every`]) frames
    /// unacknowledged), its delayed-ack deadline otherwise, `u64::MAX`
    /// when it owes none.  [`Inner::next_deadline`] plans the engine's
    /// wake-up with it and [`Inner::send_acks`] sends what it says is due.
    fn ack_due(&self, ack_every: u32) -> u64 {
        if self.ack_now || self.unacked >= ack_every {
            0
        } else if self.unacked > 0 {
            self.ack_due_ns
        } else {
            u64::MAX
        }
    }

    /// Takes the ack this lane owes: nothing is owed afterwards.  Returns
    /// the cumulative ack to send (the next sequence number expected).
    fn take_ack(&mut self) -> u32 {
        self.unacked = 0;
        self.ack_now = false;
        self.ack_due_ns = u64::MAX;
        self.win.next_seq()
    }
}

struct Neighbor {
    node: u16,
    link: usize,
    mac: Mac,
    epoch: u32,
    role: Role,
    hops: u8,
    /// The ION its hellos announce (`NO_ION`: none, or a node that
    /// predates `FEATURE_ION_ID`).
    ion: u16,
    below: KVec<u16>,
    last_rx_ns: u64,
    up: bool,
    tx: [TxLane; 2],
    rx: [RxLane; 2],
    /// Large messages waiting for a grant (head has a request out).
    rdv_wait: KVec<OutMsg>,
    /// Requests sent for these ids, not yet granted.
    rts_out: u32,
    /// Answers to its requests (op, id, len) that could not be queued for
    /// want of memory: sent at a later pass ([`Inner::retry_controls`]).
    owed: [Option<(u8, u32, u32)>; MAX_WAITING_PER_PEER],
    /// Granted incoming bulk messages (id, buffer allocated in advance):
    /// the one arriving and, once that one is draining, the next.
    granted: [Option<(u32, MsgBuf)>; MAX_GRANTS_PER_PEER],
    /// Finish tag of its last request in our grant queue (weighted round
    /// robin, see `grant.rs`).
    grant_finish: u64,
    queued_bytes: usize,
    /// Acks that advanced a lane and grants (or refusals) received: it only
    /// goes up, so a blocked sender sees whether the neighbour takes data.
    acks_seen: u64,
    /// Its hello says it understands acks in data frames.
    takes_piggy_acks: bool,
    /// Its hello says it accepts XXH64-checksummed frames (wire version 2).
    takes_xxh64: bool,
}

impl Neighbor {
    /// Whether frames sent to it wait for an ack.
    fn in_flight(&self) -> bool {
        self.tx.iter().any(|l| l.win.in_flight() > 0)
    }
}

/// One bound link.
enum Link {
    Net(NetLink),
    /// In-memory wire back to this node.
    Loopback,
}

impl Link {
    fn mtu(&self) -> usize {
        match self {
            Link::Net(n) => n.mtu(),
            Link::Loopback => LOOPBACK_MTU,
        }
    }
}

/// Something to tell upper layers once the lock is dropped.
enum Event {
    Deliver {
        channel: u16,
        src: u16,
        msg: Arc<MsgBuf>,
    },
    Peer {
        node: u16,
        up: bool,
    },
}

/// The protocol state.
struct Inner {
    node_id: u16,
    role: Role,
    pset: u16,
    epoch: u32,
    links: KVec<Option<Link>>,
    /// Our session id on each link, announced in hellos; renewed when we
    /// lose the neighbour there, so it resets its side too.
    link_epoch: KVec<u32>,
    /// Boxed: a `Neighbor` is ~1.8 KiB (its lanes' windows), too big to
    /// move through the engine thread's 8 KiB stack on ppc32.
    neighbors: KVec<KBox<Neighbor>>,
    channels: KVec<Channel>,
    chan_stats: KVec<ChannelStats>,
    /// Its waiting requests and active grants both on the heap (see
    /// [`new_grants`]).
    grants: Grants,
    next_msg_id: u32,
    /// When a forged origin was last logged (ns; 0: never).
    forged_logged_ns: u64,
    /// When a lack of memory was last logged (`peer_events_lost`,
    /// `engine_nomem`; at most every [`FORGED_LOG_INTERVAL_NS`]).
    nomem_logged_ns: u64,
    /// The ION upper layers were last told of, when it is no neighbour
    /// (a CN below a relay): `NO_ION` if none.
    far_ion: u16,
    loop_frames: KVec<KVec<u8>>,
    held: Option<(usize, Mac, KVec<u8>)>,
    /// Frames still to drop in the current injected loss burst.
    burst_left: u32,
    last_hello_ns: u64,
    hello_now: bool,
    events: KVec<Event>,
    /// An emptied events vector, kept for its capacity: the next batch is
    /// collected into it (no allocation per engine pass).
    spare_events: KVec<Event>,
    /// The link an engine pass receives from first: each pass starts one
    /// further, so a pass cut short by its time budget (one frame, in a
    /// slow debug kernel) does not serve the first link only.
    rx_first_link: usize,
    /// The neighbour `transmit` serves first (they take turns).
    tx_first_neighbor: usize,
    /// Recent neighbour transitions: (node, up, silence before it, ms).
    peer_log: KVec<(u16, bool, u64)>,
    /// Senders sleeping until a queue drains.
    blocked_senders: u32,
    /// Tasks in [`Treenet::wait_progress`]: deliveries notify `progress`
    /// only while there are some (a blocked sender waits for queue space,
    /// which `wake_senders` announces, not for deliveries).
    progress_waiters: u32,
    /// Earliest time (ns) a retransmission may be due: the lanes are only
    /// scanned then, or at once after an ack reporting holes.
    rtx_at: u64,
    rtx_now: bool,
    /// An ack advanced a lane since `rtx_at` was planned: it may be later.
    rtx_acked: bool,
    /// When the next hello is due and dead neighbours are looked for (ns).
    periodic_at: u64,
    /// The engine thread's wake-up set on its timer (ns; `u64::MAX`:
    /// none): [`Treenet::rearm`] moves it only when the next deadline
    /// changed.
    timer_at: u64,
    /// Queue space was freed while senders sleep: wake them.
    wake_senders: bool,
    /// Bumped (under the lock) before every notification of `progress`:
    /// a waiter that read it before checking its condition cannot miss the
    /// notification that follows a change (see [`Treenet::wait_progress`]).
    progress_gen: u64,
    /// The pset's shared secret: when set, every frame sent carries a
    /// SipHash-2-4 tag and every frame received must (see `wire.rs`).
    auth: Option<SipKey>,
}

/// A treenet instance: what sysfs, the engine thread and upper layers share.
#[pin_data]
pub(crate) struct Treenet {
    pub(crate) knobs: Knobs,
    pub(crate) stats: Stats,
    kicker: Arc<Kicker>,
    /// The engine's state.  An owner lock (the socket lock's model): the
    /// task that holds it may sleep, as under a mutex, and code with bottom
    /// halves disabled may take it without waiting while no task owns it.
    #[pin]
    inner: OwnLock<Inner>,
    /// Notified when queue space was freed or a neighbour went down
    /// (blocked senders wait on it), and on deliveries while a task waits
    /// in [`Treenet::wait_progress`].
    #[pin]
    progress: CondVar,
    /// Held while upper-layer handlers run.
    #[pin]
    dispatch: Mutex<()>,
    /// Channels whose handlers may answer in the receive softirq (bit
    /// per channel; [`ChannelHandler::answers_in_softirq`]): the softirq
    /// parses no frame for the others.
    softirq_channels: Atomic<u64>,
    /// The task running upper-layer handlers now (0: none).  Its sends
    /// never wait for queue space: only the engine makes that space, and a
    /// handler may run on the engine thread.
    delivering: Atomic<usize>,
    /// The NAPI context the last frame came in on (0: none): what busy
    /// polling polls.
    busy_napi: Atomic<u32>,
    /// When a pass of the engine thread last received a frame (`now_ns`):
    /// it busy-polls for `busy_poll_us` after that.  Frames a driving task
    /// takes do not count: that task polls for them itself.
    last_rx_ns: Atomic<u64>,
    /// The longest passes and waits of the engine (sysfs `peaks`).
    pub(crate) peaks: Peaks,
}

counters! {
    /// The longest passes and waits of the engine since load or the last
    /// reset (sysfs `peaks`, all in µs): whether a node that fell silent
    /// towards its neighbours was slow to run its engine, or ran it and
    /// sent nothing.  Raised with [`raise_us`].
    pub(crate) struct Peaks {
        engine_pass_max_us: "Longest pass of the engine thread, deliveries included.",
        engine_run_delay_max_us: "Longest the engine thread took to start a pass after one \
            that left work to do at once: time it could run but did not (interrupts, \
            softirqs, other tasks).",
        hello_late_max_us: "Longest a round of hellos went out after it was due.",
        lock_wait_max_us: "Longest wait for the engine's lock at the start of a pass.",
        frame_max_us: "Longest handling of one received frame.",
        timers_max_us: "Longest run of a pass's timers and transmissions: hellos, dead \
            neighbours, grants, retransmissions, new frames.",
        deliver_max_us: "Longest delivery of a pass's messages and events to upper layers.",
    }
}

/// Raises `peak` to `ns` (in µs) if that is higher (the engine thread
/// and driving tasks raise the same peaks).
fn raise_us(peak: &Atomic<u64>, ns: u64) {
    let us = div_u64(ns, 1000);
    let mut seen = peak.load(Relaxed);
    while us > seen {
        match peak.cmpxchg(seen, us, Relaxed) {
            Ok(_) => break,
            Err(now) => seen = now,
        }
    }
}

/// A neighbour as `/sys/kernel/treenet/peers` shows it.
pub(crate) struct PeerInfo {
    pub(crate) node: u16,
    pub(crate) link: usize,
    pub(crate) role: Role,
    pub(crate) hops: u8,
    pub(crate) up: bool,
    pub(crate) silent_ms: u64,
    pub(crate) rto_us: u64,
    pub(crate) queued_bytes: usize,
    pub(crate) below: usize,
}

/// A send window's ring of [`MAX_WINDOW`] frame slots, on the heap: inline
/// it would take 4 KiB of an 8 KiB ppc32 stack while a lane is built.
pub(crate) fn new_tx_ring() -> Result<KVec<FrameSlot>> {
    let mut ring = KVec::with_capacity(MAX_WINDOW, GFP_KERNEL)?;
    ring.resize(MAX_WINDOW, FrameSlot::default(), GFP_KERNEL)?;
    Ok(ring)
}

fn lane_tx(win: usize, rto_min: u64, rto_max: u64) -> Result<TxLane> {
    let rto = RtoEstimator::new(200_000, rto_min, rto_max);
    Ok(TxLane {
        win: SendWindow::with_ring(new_tx_ring()?, 0, win, rto).ok_or(EINVAL)?,
        msgs: Fifo::new(),
    })
}

/// How long a receiver holds an ack back (µs): `ack_delay_us`, well
/// inside the sender's shortest retransmission timeout.
fn ack_delay_us(k: &Knobs) -> u64 {
    let rto_min_us = u64::from(k.rto_min_ms.load(Relaxed)) * 1000;
    u64::from(k.ack_delay_us.load(Relaxed)).min(rto_min_us / 4)
}

/// The rendezvous grant queue, its storage on the heap.
pub(crate) type Grants = GrantQueue<KVec<Waiting>, KVec<Option<Waiting>>>;

/// A grant queue holding `storage.len()` waiting requests, its
/// `MAX_SLOTS` active grants on the heap too: as an array they would take
/// 2.5 KiB of the state, moved through 8 KiB kernel stacks (ppc32) when it
/// is built.
pub(crate) fn new_grants(storage: KVec<Waiting>, slots: usize) -> Result<Grants> {
    let mut active = KVec::with_capacity(MAX_SLOTS, GFP_KERNEL)?;
    active.resize(MAX_SLOTS, None, GFP_KERNEL)?;
    Ok(GrantQueue::with_slot_storage(storage, active, slots))
}

/// Heap storage for `len` waiting rendezvous requests.
fn grant_storage(len: usize) -> Result<KVec<Waiting>> {
    let mut v = KVec::with_capacity(len, GFP_KERNEL)?;
    v.resize(len, Waiting::default(), GFP_KERNEL)?;
    Ok(v)
}

/// A lane's receive side, accepting the largest window a sender may use.
/// Its ring for frames out of order comes with the first such frame
/// ([`Inner::handle_data`]): on a link that does not reorder or lose, it
/// never does (it is [`MAX_WINDOW`] entries, 16 KiB on 64-bit, so it may
/// come from vmalloc).
fn lane_rx() -> RxLane {
    RxLane {
        win: RecvWindow::new(0, MAX_WINDOW),
        reasm: Reassembler::new(),
        ahead: KVVec::new(),
        current: None,
        drain_told: false,
        unacked: 0,
        ack_now: false,
        ack_due_ns: u64::MAX,
    }
}

/// How an outgoing frame is sealed: a checksum (CRC-32C, or XXH64 for a
/// neighbour that accepts it), or a tag under the pset's key for one
/// session.  See [`Inner::sealing_to`].
#[derive(Clone, Copy)]
enum Sealing {
    Checksum(Checksum),
    Tag(SipKey, Session),
}

impl Sealing {
    /// Sealing for a hello (no session, no neighbour known: CRC-32C) under
    /// `auth`.
    fn hello(auth: &Option<SipKey>) -> Self {
        match auth {
            Some(key) => Sealing::Tag(*key, Session::NONE),
            None => Sealing::Checksum(Checksum::Crc32c),
        }
    }

    /// Bytes after the payload.
    fn trailer_len(&self) -> usize {
        match self {
            Sealing::Checksum(_) => 0,
            Sealing::Tag(..) => MAC_TRAILER_LEN,
        }
    }

    /// Writes the header for `payload` into `h` and the trailer (if any)
    /// into `t`, which is `trailer_len()` bytes long.
    fn seal(&self, hdr: &FrameHeader, payload: &[&[u8]], h: &mut [u8; HEADER_LEN], t: &mut [u8]) {
        match self {
            Sealing::Checksum(sum) => hdr.encode_with(*sum, payload, h),
            Sealing::Tag(key, session) => {
                let mut trailer = [0u8; MAC_TRAILER_LEN];
                hdr.encode_sealed(payload, key, *session, h, &mut trailer);
                if let Some(t) = t.get_mut(..MAC_TRAILER_LEN) {
                    t.copy_from_slice(&trailer);
                }
            }
        }
    }
}

/// A frame (header + payload pieces + trailer) in a fresh buffer; `None`
/// (counted) when out of memory.
fn build_frame(
    s: &Stats,
    sealing: Sealing,
    hdr: &FrameHeader,
    p1: &[u8],
    p2: &[u8],
) -> Option<KVec<u8>> {
    let mut frame = KVec::new();
    let tl = sealing.trailer_len();
    let (ack, al) = hdr.ack_bytes();
    if frame
        .reserve(HEADER_LEN + p1.len() + p2.len() + al + tl, GFP_KERNEL)
        .is_err()
    {
        count(&s.drop_nomem);
        return None;
    }
    let mut h = [0u8; HEADER_LEN];
    let mut t = [0u8; MAC_TRAILER_LEN];
    sealing.seal(hdr, &[p1, p2], &mut h, &mut t);
    // Within the reserved capacity: these do not allocate.  Should one
    // fail all the same, the frame is dropped whole (counted): a frame
    // missing a piece is never sent.
    for piece in [&h[..], p1, p2, &ack[..al], &t[..tl]] {
        if frame.extend_from_slice(piece, GFP_KERNEL).is_err() {
            count(&s.drop_nomem);
            return None;
        }
    }
    Some(frame)
}

fn now_us() -> u32 {
    div_u64(now_ns(), 1000) as u32
}

fn count(c: &Atomic<u64>) {
    c.fetch_add(1, Relaxed);
}

/// The drop counter of a frame refused for `e`.
fn drop_counter(s: &Stats, e: FrameError) -> &Atomic<u64> {
    match e {
        FrameError::Truncated => &s.drop_truncated,
        FrameError::Oversized => &s.drop_oversized,
        FrameError::BadVersion => &s.drop_bad_version,
        FrameError::BadChecksum => &s.drop_bad_checksum,
        FrameError::BadKind => &s.drop_bad_kind,
        FrameError::NoMac => &s.drop_no_auth,
        FrameError::BadMac => &s.drop_bad_auth,
    }
}

impl Treenet {
    /// A treenet instance with no links (bind some with [`Treenet::bind`]).
    pub(crate) fn new(node_id: u16, role: Role) -> Result<Arc<Self>> {
        let kicker = Arc::new(Kicker::new()?, GFP_KERNEL)?;
        let mut chan_stats = KVec::with_capacity(MAX_CHANNELS, GFP_KERNEL)?;
        for _ in 0..MAX_CHANNELS {
            chan_stats.push(ChannelStats::default(), GFP_KERNEL)?;
        }
        let inner = Inner {
            node_id,
            role,
            pset: 0,
            epoch: random_u32() | 1,
            links: KVec::new(),
            link_epoch: KVec::new(),
            neighbors: KVec::new(),
            channels: KVec::new(),
            chan_stats,
            grants: new_grants(grant_storage(GRANT_QUEUE_MIN)?, 2)?,
            next_msg_id: random_u32(),
            forged_logged_ns: 0,
            nomem_logged_ns: 0,
            far_ion: NO_ION,
            loop_frames: KVec::new(),
            held: None,
            burst_left: 0,
            last_hello_ns: 0,
            hello_now: true,
            events: KVec::new(),
            spare_events: KVec::new(),
            rx_first_link: 0,
            tx_first_neighbor: 0,
            // Its room taken at once: a log entry never waits for memory.
            peer_log: KVec::with_capacity(PEER_LOG_LEN, GFP_KERNEL)?,
            blocked_senders: 0,
            progress_waiters: 0,
            rtx_at: u64::MAX,
            rtx_acked: false,
            periodic_at: 0,
            timer_at: u64::MAX,
            auth: None,
            rtx_now: false,
            wake_senders: false,
            progress_gen: 0,
        };
        Arc::pin_init(
            try_pin_init!(Self {
                knobs: Knobs::new(),
                stats: Stats::new(),
                kicker,
                inner <- crate::new_ownlock!(inner, "treenet::inner"),
                progress <- new_condvar!("treenet::progress"),
                dispatch <- new_mutex!((), "treenet::dispatch"),
                delivering: Atomic::new(0),
                softirq_channels: Atomic::new(0),
                busy_napi: Atomic::new(0),
                last_rx_ns: Atomic::new(0),
                peaks: Peaks::new(),
            }),
            GFP_KERNEL,
        )
    }

    /// Sets the engine thread's nice value (-20..19): `EINVAL` outside
    /// that range, `ESRCH` if the thread is not running.
    pub(crate) fn set_engine_nice(&self, nice: i32) -> Result {
        self.kicker.set_nice(nice)
    }

    /// The engine thread's nice value now (a user's `renice` shows here
    /// too); `ESRCH` if the thread is not running.
    pub(crate) fn engine_nice(&self) -> Result<i32> {
        self.kicker.nice()
    }

    /// Wakes the engine.
    pub(crate) fn kick(&self) {
        self.kicker.kick();
    }

    /// How often the engine was asked to wake, by source.
    pub(crate) fn wake_counts(&self) -> WakeCounts {
        self.kicker.wake_counts()
    }

    /// This node's id.
    pub(crate) fn node_id(&self) -> u16 {
        self.inner.lock().node_id
    }

    /// Changes this node's id, role or pset (neighbours see it in the next
    /// hello; sessions restart).
    pub(crate) fn set_identity(&self, node_id: Option<u16>, role: Option<Role>, pset: Option<u16>) {
        let mut g = self.inner.lock();
        if let Some(id) = node_id {
            g.node_id = id;
        }
        if let Some(r) = role {
            g.role = r;
        }
        if let Some(p) = pset {
            g.pset = p;
        }
        g.epoch = random_u32() | 1;
        for e in g.link_epoch.iter_mut() {
            *e = random_u32() | 1;
        }
        g.hello_now = true;
        drop(g);
        self.kick();
    }

    /// Sets (or with `None` clears) the pset's shared secret.  Frames are
    /// sealed and checked with it from the next one on; sessions are kept,
    /// so setting the same key on every node within `peer_timeout_ms` loses
    /// nothing (frames refused meanwhile are retransmitted).
    pub(crate) fn set_auth_key(&self, key: Option<SipKey>) {
        let mut g = self.inner.lock();
        g.auth = key;
        // Say hello under the new key at once: neighbours of that key hear
        // this node again without waiting for the hello timer.
        g.hello_now = true;
        drop(g);
        self.kick();
    }

    /// Whether a shared secret is set.
    pub(crate) fn auth_enabled(&self) -> bool {
        self.inner.lock().auth.is_some()
    }

    /// Role and pset.
    pub(crate) fn identity(&self) -> (u16, Role, u16) {
        let g = self.inner.lock();
        (g.node_id, g.role, g.pset)
    }

    /// Binds a netdevice by name, or the loopback wire for `"loopback"`.
    pub(crate) fn bind(&self, name: &CStr) -> Result {
        let link = if name.to_bytes() == b"loopback" {
            Link::Loopback
        } else {
            // SAFETY: the link lives in `self.inner` and is dropped before
            // `self` (`unbind_at`, which module unload runs for every link
            // before the engine goes), and `self` is pinned in its `Arc`.
            Link::Net(unsafe {
                NetLink::open_fast(name, wire::ETHERTYPE, RXQ_LIMIT, self.kicker.clone(), self)
            }?)
        };
        let mut g = self.inner.lock();
        let dup = g.links.iter().flatten().any(|l| match (l, &link) {
            (Link::Loopback, Link::Loopback) => true,
            (Link::Net(a), Link::Net(b)) => a.ifindex() == b.ifindex(),
            _ => false,
        });
        if dup {
            return Err(EEXIST);
        }
        let i = match g.links.iter().position(|l| l.is_none()) {
            Some(i) => {
                g.links[i] = Some(link);
                i
            }
            None => {
                g.links.push(Some(link), GFP_KERNEL)?;
                g.links.len() - 1
            }
        };
        while g.link_epoch.len() <= i {
            g.link_epoch.push(0, GFP_KERNEL)?;
        }
        g.link_epoch[i] = random_u32() | 1;
        g.hello_now = true;
        drop(g);
        self.kick();
        Ok(())
    }

    /// Unbinds a link by name (its neighbours go down).
    pub(crate) fn unbind(&self, name: &CStr) -> Result {
        let idx = self
            .inner
            .lock()
            .links
            .iter()
            .position(|l| match l {
                Some(Link::Loopback) => name.to_bytes() == b"loopback",
                Some(Link::Net(n)) => n.name().to_bytes() == name.to_bytes(),
                None => false,
            })
            .ok_or(ENODEV)?;
        self.unbind_at(idx);
        Ok(())
    }

    /// Unbinds every link (module unload).
    pub(crate) fn unbind_all(&self) {
        let n = self.inner.lock().links.len();
        for idx in 0..n {
            self.unbind_at(idx);
        }
    }

    /// Unbinds link slot `idx` (if bound): its neighbours go down.
    #[inline(never)]
    fn unbind_at(&self, idx: usize) {
        let mut g = self.inner.lock();
        let Some(link) = g.links.get_mut(idx).and_then(|l| l.take()) else {
            return;
        };
        let stats = &self.stats;
        let mut i = 0;
        while i < g.neighbors.len() {
            if g.neighbors[i].link == idx {
                g.neighbor_down(i, stats);
                let _ = g.neighbors.remove(i);
            } else {
                i += 1;
            }
        }
        g.loop_frames.clear();
        g.held = None;
        drop(g);
        // Unregisters the packet handler outside the lock.
        drop(link);
        self.flush_events(None);
    }

    /// Recent neighbour transitions, oldest first.
    pub(crate) fn for_each_peer_log(&self, mut f: impl FnMut(u16, bool, u64)) {
        for &(n, up, silent) in self.inner.lock().peer_log.iter() {
            f(n, up, silent);
        }
    }

    /// Names of the bound links.
    pub(crate) fn for_each_link(&self, mut f: impl FnMut(&CStr, usize, bool)) {
        let g = self.inner.lock();
        for l in g.links.iter().flatten() {
            match l {
                Link::Net(n) => f(n.name(), n.mtu(), n.running()),
                Link::Loopback => f(c"loopback", LOOPBACK_MTU, true),
            }
        }
    }

    /// Frames the links dropped on receive (queue full) and refused on send.
    pub(crate) fn link_drops(&self) -> (u64, u64) {
        let g = self.inner.lock();
        let mut r = (0, 0);
        for l in g.links.iter().flatten() {
            if let Link::Net(n) = l {
                r.0 += n.rx_overflow();
                r.1 += n.tx_errors();
            }
        }
        r
    }

    /// Calls `f` for every neighbour.
    pub(crate) fn for_each_peer(&self, mut f: impl FnMut(&PeerInfo)) {
        let g = self.inner.lock();
        let now = now_ns();
        for n in g.neighbors.iter() {
            f(&PeerInfo {
                node: n.node,
                link: n.link,
                role: n.role,
                hops: n.hops,
                up: n.up,
                silent_ms: ns_to_ms(now.saturating_sub(n.last_rx_ns)),
                rto_us: n.tx[0].win.rto.rto(),
                queued_bytes: n.queued_bytes,
                below: n.below.len(),
            });
        }
    }

    /// Per-channel statistics.
    pub(crate) fn channel_stats(&self, mut f: impl FnMut(u16, &ChannelStats, bool)) {
        let g = self.inner.lock();
        for (i, s) in g.chan_stats.iter().enumerate() {
            let registered = g.channels.iter().any(|c| usize::from(c.id) == i);
            if registered || s.msgs_sent != 0 || s.msgs_received != 0 {
                f(i as u16, s, registered);
            }
        }
    }

    /// Registers the receiver of a channel (ids 1..64; 0 is treenet's).
    pub(crate) fn register_channel(&self, id: u16, handler: Arc<dyn ChannelHandler>) -> Result {
        if id == CHANNEL_TREENET || usize::from(id) >= MAX_CHANNELS {
            return Err(EINVAL);
        }
        let mut g = self.inner.lock();
        if g.channels.iter().any(|c| c.id == id) {
            return Err(EBUSY);
        }
        let answers = handler.answers_in_softirq();
        let relayed_by_ion = handler.relayed_by_ion();
        g.channels.push(
            Channel {
                id,
                handler,
                relayed_by_ion,
            },
            GFP_KERNEL,
        )?;
        if answers {
            let m = self.softirq_channels.load(Relaxed);
            self.softirq_channels.store(m | (1 << id), Relaxed);
        }
        Ok(())
    }

    /// Removes a channel's receiver.  Once this returns, no call into the
    /// handler is running or will be made (so its module may unload).  Must
    /// not be called from a handler.
    pub(crate) fn unregister_channel(&self, id: u16) {
        {
            let mut g = self.inner.lock();
            g.channels.retain(|c| c.id != id);
            if usize::from(id) < MAX_CHANNELS {
                let m = self.softirq_channels.load(Relaxed);
                self.softirq_channels.store(m & !(1 << id), Relaxed);
            }
        }
        // Handler calls run under `dispatch`: wait for those in flight.
        drop(self.dispatch.lock());
    }

    /// Whether `node` is currently reachable.
    pub(crate) fn reachable(&self, node: u16) -> bool {
        let g = self.inner.lock();
        g.route(node).is_some()
    }

    /// Nodes below this one (broadcast reaches them).
    pub(crate) fn nodes_below(&self) -> usize {
        let g = self.inner.lock();
        g.children().map(|i| 1 + g.neighbors[i].below.len()).sum()
    }

    /// Calls `f` with every node of this node's subtree reachable now
    /// (each child, then the nodes it lists below itself).  Runs under the
    /// engine's lock: `f` must not call back into treenet.
    pub(crate) fn for_each_below(&self, mut f: impl FnMut(u16)) {
        let g = self.inner.lock();
        for i in g.children() {
            f(g.neighbors[i].node);
            for &b in g.neighbors[i].below.iter() {
                f(b);
            }
        }
    }

    /// Whether `node` is a node of this node's subtree (on an ION: a CN of
    /// its pset), reachable now through one of its children.
    pub(crate) fn is_below(&self, node: u16) -> bool {
        self.inner.lock().is_below(node)
    }

    /// The ION of this pset as far as this node knows (itself on an ION).
    pub(crate) fn ion(&self) -> Option<u16> {
        self.inner.lock().ion()
    }

    /// Sends `msg` on `channel` to node `dst` (or [`BROADCAST`]: every node
    /// below this one).  With `block`, waits while the destination's queue
    /// is over its memory bound (and fails with `ETIMEDOUT` if frames to it
    /// go unacknowledged for 4 x `peer_timeout_ms` meanwhile); otherwise
    /// fails with `EAGAIN`.  A send from an upper layer's receive handler
    /// never waits (the engine that makes the space may be the one running
    /// the handler): it may go past the bound, up to twice it, and fails
    /// with `EAGAIN` beyond, so that a neighbour that keeps sending while
    /// it acknowledges nothing cannot make the answers queued for it grow
    /// without end.
    pub(crate) fn send(&self, channel: u16, dst: u16, msg: MsgBuf, block: bool) -> Result {
        self.send_shared(channel, dst, Arc::new(msg, GFP_KERNEL)?, block)
    }

    /// Like [`Treenet::send`], for a message the caller keeps a reference to
    /// (it must not change until every send of it completed).
    pub(crate) fn send_shared(
        &self,
        channel: u16,
        dst: u16,
        buf: Arc<MsgBuf>,
        block: bool,
    ) -> Result {
        if usize::from(channel) >= MAX_CHANNELS {
            return Err(EINVAL);
        }
        let max = self.knobs.max_msg_size.load(Relaxed) as usize;
        if buf.len() > max {
            return Err(EMSGSIZE);
        }
        let len = buf.len();
        let in_handler =
            self.delivering.load(Relaxed) == kernel::task::Task::current_raw() as usize;
        let mut g = self.inner.lock();
        // A blocked sender gives up when frames to its destination stay
        // unacknowledged this long: a neighbour that still says hello (so
        // it is not timed out) but takes no data must not hang its callers.
        // Waiting with nothing in flight (for a rendezvous grant, on a busy
        // ION) is not a stall, nor is a slow peer that acks.
        let stall_ns = 4 * u64::from(self.knobs.peer_timeout_ms.load(Relaxed)) * 1_000_000;
        // (acks seen, since when) while frames are in flight.
        let mut stalled: Option<(u64, u64)> = None;
        loop {
            // A handler's send may take up to twice the bound.
            let scale = if in_handler { 2 } else { 1 };
            // (over the bound, acks seen, frames in flight)
            let (over, acks, in_flight) = if dst == BROADCAST {
                g.children().fold((false, 0u64, false), |(o, a, f), i| {
                    let n = &g.neighbors[i];
                    (
                        o || n.queued_bytes > scale * g.queue_bound(&self.knobs, i, len),
                        a.wrapping_add(n.acks_seen),
                        f || n.in_flight(),
                    )
                })
            } else {
                let r = g.route(dst).ok_or(EHOSTUNREACH)?;
                let n = &g.neighbors[r];
                (
                    n.queued_bytes > scale * g.queue_bound(&self.knobs, r, len),
                    n.acks_seen,
                    n.in_flight(),
                )
            };
            if !over {
                break;
            }
            if in_handler {
                count(&self.stats.handler_sends_refused);
                return Err(EAGAIN);
            }
            if !block {
                return Err(EAGAIN);
            }
            let now = now_ns();
            if stalled.is_none() {
                count(&self.stats.send_waits);
            }
            match stalled {
                Some((a, since)) if in_flight && a == acks => {
                    if now.saturating_sub(since) > stall_ns {
                        count(&self.stats.send_stalls);
                        return Err(ETIMEDOUT);
                    }
                }
                _ => stalled = Some((acks, now)),
            }
            g.blocked_senders += 1;
            let r = self
                .progress
                .wait_interruptible_timeout(&mut g, ms_to_jiffies(1000));
            g.blocked_senders -= 1;
            if let CondVarTimeoutResult::Signal { .. } = r {
                return Err(EINTR);
            }
        }
        g.originate(&self.knobs, &self.stats, channel, dst, buf)?;
        // Start transmitting right here while the windows allow (the frames
        // leave before the engine thread runs).  The engine is woken only if
        // it has something to do now: frames left for lack of budget, or
        // looped-back frames (a thread switch per message saved).  The
        // frames' retransmission deadline, or the ack a frame took along,
        // only moves its timer.
        let held = g.hold_tx(&self.knobs);
        let more = g.transmit(&self.knobs, &self.stats);
        g.flush_held(&self.stats);
        g.flush_tx(&self.stats, held);
        self.rearm(&mut g);
        let kick = more || !g.loop_frames.is_empty();
        drop(g);
        if kick {
            self.kick();
        } else {
            count(&self.stats.kicks_saved);
        }
        Ok(())
    }

    /// Acks that advanced a lane, and grants, received from the neighbour
    /// that leads to `dst` (from every child for [`BROADCAST`]): it goes
    /// up while the transport makes progress toward `dst`.
    pub(crate) fn acks_seen(&self, dst: u16) -> u64 {
        let g = self.inner.lock();
        if dst == BROADCAST {
            g.children()
                .fold(0u64, |a, i| a.wrapping_add(g.neighbors[i].acks_seen))
        } else {
            g.route(dst).map_or(0, |r| g.neighbors[r].acks_seen)
        }
    }

    /// The engine's progress count, to pass to [`Treenet::wait_progress`].
    /// Read it before checking the condition waited for.
    pub(crate) fn progress_mark(&self) -> u64 {
        self.inner.lock().progress_gen
    }

    /// Waits (up to `ms`) for engine progress after `mark` (from
    /// [`Treenet::progress_mark`]); returns at once if there was some.
    /// Waiting for a notification alone would lose one that came between
    /// the caller's check and its sleep, and sleep the whole `ms`.
    pub(crate) fn wait_progress(&self, mark: u64, ms: u64) {
        let mut g = self.inner.lock();
        if g.progress_gen != mark {
            return;
        }
        g.progress_waiters += 1;
        let _ = self
            .progress
            .wait_interruptible_timeout(&mut g, ms_to_jiffies(ms));
        g.progress_waiters -= 1;
    }

    /// Waits until `done` is nonzero (`Ok(true)`), `timeout` jiffies passed
    /// (`Ok(false)`) or a signal (`EINTR`), doing the engine's work in this
    /// task meanwhile: frames that arrive wake it rather than the engine
    /// thread, and it delivers messages on `channel` itself (on every
    /// channel, and peer events, for [`ALL_CHANNELS`]).  A caller
    /// waiting for a reply saves a thread switch that way.  `EBUSY` if
    /// another task drives, or this one has too little stack left for an
    /// engine pass: the caller waits its usual way.
    pub(crate) fn drive_until(
        &self,
        channel: u16,
        done: &Atomic<u32>,
        timeout: usize,
    ) -> Result<bool> {
        let me = kernel::task::Task::current_raw() as usize;
        if stack_left() < DRIVE_STACK_MIN || self.delivering.load(Relaxed) == me {
            count(&self.stats.drive_refused);
            return Err(EBUSY);
        }
        let Some(driving) = self.kicker.drive() else {
            count(&self.stats.drive_refused);
            return Err(EBUSY);
        };
        count(&self.stats.drives);
        // The wait ends by the clock: engine passes in this task, and
        // kicks that end a sleep at once, count against it too (frames
        // that kept coming for other calls kept a soft zoid call driving
        // 10 s past its timeout of 2 s).
        let start = now_ns();
        let end = start.saturating_add(jiffies_to_ns(timeout));
        // Busy polling, if on, for `busy_poll_us` of the whole wait.
        let busy_until = match self.knobs.busy_poll_us.load(Relaxed) {
            0 => 0,
            us => start.saturating_add(u64::from(us) * 1000),
        };
        loop {
            if done.load(Acquire) != 0 {
                return Ok(true);
            }
            let now = now_ns();
            if now >= end {
                return Ok(false);
            }
            if kernel::current!().signal_pending() {
                return Err(EINTR);
            }
            if busy_until != 0 && now < busy_until {
                self.busy_poll(Some(done), busy_until.min(end));
            }
            let kicked = driving.wait(done, ns_to_jiffies(end.saturating_sub(now_ns())));
            if kicked {
                count(&self.stats.drive_passes);
                self.pass(PassBy::Driver(channel));
            }
        }
    }

    /// Polls the device the last frame came from (see [`busy_poll`]) until
    /// work is kicked to this task (a frame, or a deadline of the engine
    /// thread's if this is it), `done` is set, or `until_ns`.
    fn busy_poll(&self, done: Option<&Atomic<u32>>, until_ns: u64) {
        let napi = self.busy_napi.load(Relaxed);
        if napi == 0 {
            return;
        }
        count(&self.stats.busy_polls);
        if busy_poll(napi, &self.kicker, done, until_ns) {
            count(&self.stats.busy_poll_hits);
        }
    }

    /// Calls upper layers for what the engine collected: everything, or
    /// for a task driving one channel (see [`Treenet::drive_until`]) only
    /// the deliveries on its channel at the head of the queue.  Returns whether
    /// events were left (for the engine thread).
    fn flush_events(&self, only: Option<u16>) -> bool {
        let _dispatch = self.dispatch.lock();
        self.delivering
            .store(kernel::task::Task::current_raw() as usize, Relaxed);
        let mut delivered = false;
        let mut left = false;
        // A driver of one channel runs in some caller's context: it
        // delivers to its own channel only, and in order (nothing queued
        // before is skipped).
        while let Some(ch) = only {
            let (event, handler) = {
                let mut g = self.inner.lock();
                match g.events.first() {
                    Some(Event::Deliver { channel, .. }) if *channel == ch => {}
                    Some(_) => {
                        left = true;
                        break;
                    }
                    None => break,
                }
                let handler = g
                    .channels
                    .iter()
                    .find(|c| c.id == ch)
                    .map(|c| c.handler.clone());
                let Ok(event) = g.events.remove(0) else { break };
                (event, handler)
            };
            delivered = true;
            if let Event::Deliver { channel, src, msg } = event {
                match handler {
                    Some(h) => h.receive(channel, src, msg),
                    None => count(&self.stats.drop_no_channel),
                }
            }
        }
        while only.is_none() {
            let (mut events, channels) = {
                let mut g = self.inner.lock();
                if g.events.is_empty() {
                    break;
                }
                let spare = core::mem::take(&mut g.spare_events);
                let events = core::mem::replace(&mut g.events, spare);
                delivered = true;
                let mut chans =
                    KVec::with_capacity(g.channels.len(), GFP_KERNEL).unwrap_or_default();
                for c in g.channels.iter() {
                    if chans.push((c.id, c.handler.clone()), GFP_KERNEL).is_err() {
                        // The channels left out miss this pass's events.
                        g.engine_nomem(&self.stats, "a pass's list of channels");
                        break;
                    }
                }
                (events, chans)
            };
            for e in events.drain_all() {
                match e {
                    Event::Deliver { channel, src, msg } => {
                        match channels.iter().find(|c| c.0 == channel) {
                            Some((_, h)) => h.receive(channel, src, msg),
                            None => count(&self.stats.drop_no_channel),
                        }
                    }
                    Event::Peer { node, up } => {
                        ssi_hook!(
                            zoid_hook_treenet_peer,
                            Hook::TreenetPeer,
                            u64::from(node),
                            u64::from(up)
                        );
                        for (_, h) in channels.iter() {
                            h.peer_event(node, up);
                        }
                    }
                }
            }
            // Back as the spare (a vector grown large by a burst is let go).
            if events.capacity() <= 256 {
                let mut g = self.inner.lock();
                if g.spare_events.capacity() == 0 {
                    g.spare_events = events;
                }
            }
        }
        self.delivering.store(0, Relaxed);
        if delivered && only.is_none() {
            // A reply a driving task waits for may have been among them.
            self.kicker.wake_driver();
        }
        // Wake blocked callers only when there is news for them: freed
        // queue space for blocked senders, a delivery or peer event for
        // progress waiters (a blocked sender woken for every message
        // delivered would only look at its queue and sleep again).
        let notify = {
            let mut g = self.inner.lock();
            let wake = core::mem::take(&mut g.wake_senders);
            if delivered || wake {
                g.progress_gen = g.progress_gen.wrapping_add(1);
            }
            wake || (delivered && g.progress_waiters > 0)
        };
        if notify {
            self.progress.notify_all();
        }
        left
    }

    /// One engine pass; returns jiffies until the next pass is needed, and
    /// whether there is more to do at once.  A pass by a driving task (see
    /// [`Treenet::drive_until`]) wakes the engine thread for anything it
    /// leaves.
    fn pass(&self, by: PassBy) -> (usize, bool) {
        let asked = now_ns();
        let mut g = self.inner.lock();
        let start = now_ns();
        raise_us(&self.peaks.lock_wait_max_us, start.saturating_sub(asked));
        let mut now = start;
        let k = &self.knobs;
        let s = &self.stats;
        let activity = || {
            s.frames_sent.load(Relaxed)
                + s.frames_received.load(Relaxed)
                + s.msgs_received.load(Relaxed)
        };
        let active_before = activity();
        // Receive: the links take turns, at most RX_ROUND frames each per
        // round, so a busy link (a flood) cannot starve the others; at
        // most RX_BUDGET frames, or PASS_TIME_NS, in all.
        let mut budget = RX_BUDGET;
        let links = g.links.len();
        let first = g.rx_first_link % links.max(1);
        g.rx_first_link = first + 1;
        loop {
            let mut got = false;
            for turn in 0..links {
                let li = (first + turn) % links;
                let mut share = RX_ROUND;
                while share > 0 && budget > 0 {
                    let frame = match &g.links[li] {
                        Some(Link::Net(n)) => n.recv(),
                        _ => None,
                    };
                    let Some(frame) = frame else { break };
                    share -= 1;
                    budget -= 1;
                    got = true;
                    let napi = frame.napi_id();
                    if napi != 0 && self.busy_napi.load(Relaxed) != napi {
                        self.busy_napi.store(napi, Relaxed);
                    }
                    let mac = frame.src_mac();
                    let took = now;
                    g.handle_frame(k, s, li, mac, frame.data(), now);
                    now = now_ns();
                    raise_us(&self.peaks.frame_max_us, now.saturating_sub(took));
                    if now.saturating_sub(start) >= PASS_TIME_NS {
                        budget = 0;
                    }
                }
            }
            if got && by == PassBy::Thread {
                self.last_rx_ns.store(now, Relaxed);
            }
            if !got || budget == 0 {
                break;
            }
        }
        let looped = core::mem::take(&mut g.loop_frames);
        if let Some(li) = g
            .links
            .iter()
            .position(|l| matches!(l, Some(Link::Loopback)))
        {
            for f in looped.iter() {
                g.handle_frame(k, s, li, [0; 6], f, now);
            }
        }
        let more_rx = budget == 0;
        let timers_from = now_ns();
        // What this part of the pass sends (hellos, grants,
        // retransmissions, the windows' new frames) goes to the driver as
        // one batch.
        let held = g.hold_tx(k);
        // Timers: hellos, dead neighbours, retransmissions.
        let timeout_ns = u64::from(k.peer_timeout_ms.load(Relaxed)) * 1_000_000;
        let hello_every = (timeout_ns / 4).max(10_000_000);
        if g.hello_now || now.saturating_sub(g.last_hello_ns) >= hello_every {
            if !g.hello_now && g.last_hello_ns != 0 {
                let due = g.last_hello_ns.saturating_add(hello_every);
                raise_us(&self.peaks.hello_late_max_us, now.saturating_sub(due));
            }
            g.hello_now = false;
            g.last_hello_ns = now;
            g.send_hellos(k, s);
        }
        g.periodic_at = g.last_hello_ns.saturating_add(hello_every);
        let mut i = 0;
        while i < g.neighbors.len() {
            let silent = now.saturating_sub(g.neighbors[i].last_rx_ns) > timeout_ns;
            if silent && !g.neighbors[i].up {
                // A handshake that never finished (a node gone meanwhile,
                // or a forged hello): forget it; it never carried data.
                let _ = g.neighbors.remove(i);
                continue;
            }
            if g.neighbors[i].up && silent {
                pr_info!(
                    "treenet: node {} is down (silent {} ms)\n",
                    g.neighbors[i].node,
                    ns_to_ms(now.saturating_sub(g.neighbors[i].last_rx_ns)).min(u64::from(u32::MAX))
                        as u32
                );
                g.neighbor_down(i, s);
                let li = g.neighbors[i].link;
                let _ = g.neighbors.remove(i);
                // A new session on that link: the neighbour (if alive) resets too.
                if let Some(e) = g.link_epoch.get_mut(li) {
                    *e = random_u32() | 1;
                }
                g.hello_now = true;
                continue;
            }
            i += 1;
        }
        g.pump_grants(k, s);
        g.retry_controls(k, s);
        if g.rtx_now || now >= g.rtx_at {
            g.retransmit(k, s);
        } else if g.rtx_acked {
            // Acks came: the deadline set for what they acked (a request's
            // tail-loss probe, say) must not wake the thread for nothing.
            g.plan_retransmit();
        }
        let more_tx = g.transmit(k, s);
        g.flush_held(s);
        g.flush_tx(s, held);
        let more_work = more_rx || more_tx || !g.loop_frames.is_empty();
        drop(g);
        let delivery_from = now_ns();
        raise_us(
            &self.peaks.timers_max_us,
            delivery_from.saturating_sub(timers_from),
        );
        let left = self.flush_events(by.only());
        let now = now_ns();
        raise_us(
            &self.peaks.deliver_max_us,
            now.saturating_sub(delivery_from),
        );
        // Acks last: what upper layers sent while handling these frames (a
        // reply, a pong) left first, so an ack is never on a round trip's
        // critical path.
        let mut g = self.inner.lock();
        g.send_acks(k, s, now);
        // Events queued while this pass delivered (a looped-back reply).
        let more = more_work || !g.events.is_empty();
        // The next deadline (a hello or dead-neighbour scan, a
        // retransmission, a delayed ack) goes on the thread's timer: a
        // driving task sets it without waking the thread.  The thread sets
        // it anew whatever it was (its timer may just have fired).
        if by == PassBy::Thread {
            g.timer_at = u64::MAX;
        }
        self.rearm(&mut g);
        if by != PassBy::Thread {
            // Wake the thread for what this pass left (frames, events for
            // other channels, events queued while it delivered).  Events
            // this pass delivered are not left: waking the thread for them
            // would cost the very switch the driver saves.
            let kick = more_work || left || !g.events.is_empty();
            drop(g);
            if kick {
                self.kicker.kick_thread();
            }
            return (0, false);
        }
        drop(g);
        count(&s.engine_passes);
        if activity() == active_before {
            count(&s.engine_idle_passes);
        }
        // The timer wakes the thread at its next deadline; this sleep's
        // timeout is only a backstop.  While there is more to do it does
        // not sleep at all.
        (ms_to_jiffies(div_u64(hello_every, 1_000_000) + 1), more)
    }

    /// Puts the engine's next deadline on the thread's timer if it moved
    /// (see [`Inner::next_deadline`]).  Called under the lock by whatever
    /// changed the deadlines last: a pass, a send.
    fn rearm(&self, g: &mut Inner) {
        let at = g.next_deadline(ack_every(&self.knobs));
        if at != g.timer_at {
            g.timer_at = at;
            self.kicker.wake_at(at);
        }
    }
}

impl Inner {
    /// When the engine next has work of its own (ns): the periodic hello
    /// and dead-neighbour scan, the retransmission scan, or the earliest
    /// delayed ack (0 for an ack due at once).  A deadline may be early (a
    /// retransmission scan after the frames were acked): the thread wakes
    /// and finds nothing to do; it is never late.
    fn next_deadline(&self, ack_every: u32) -> u64 {
        if self.rtx_now {
            return 0;
        }
        let mut at = self.periodic_at.min(self.rtx_at);
        for n in self.neighbors.iter() {
            for r in n.rx.iter() {
                at = at.min(r.ack_due(ack_every));
                if at == 0 {
                    return 0;
                }
            }
        }
        at
    }

    fn neighbor(&self, node: u16) -> Option<usize> {
        self.neighbors.iter().position(|n| n.node == node)
    }

    fn my_hops(&self) -> u8 {
        if self.role == Role::Ion {
            return 0;
        }
        self.neighbors
            .iter()
            .filter(|n| n.up)
            .map(|n| n.hops)
            .min()
            .map_or(0xff, |h| h.saturating_add(1))
    }

    /// This node's ION: itself on an ION; else a neighbouring ION, or
    /// the ION its parent (the up neighbour closest to the ION) announces
    /// in its hellos, for a CN below a relay.
    fn ion(&self) -> Option<u16> {
        if self.role == Role::Ion {
            return Some(self.node_id);
        }
        if let Some(n) = self.neighbors.iter().find(|n| n.up && n.role == Role::Ion) {
            return Some(n.node);
        }
        let parent = &self.neighbors[self.parent()?];
        (parent.ion != NO_ION).then_some(parent.ion)
    }

    /// Tells upper layers when an ION that is no neighbour of this node
    /// (a CN below a relay) comes or goes: a neighbouring ION's session
    /// does that itself.
    fn track_far_ion(&mut self, s: &Stats) {
        if self.role == Role::Ion {
            return;
        }
        let ion = self.ion();
        let direct = ion.is_some_and(|i| self.neighbors.iter().any(|n| n.up && n.node == i));
        let now = if direct {
            NO_ION
        } else {
            ion.unwrap_or(NO_ION)
        };
        let was = core::mem::replace(&mut self.far_ion, now);
        if was == now {
            return;
        }
        // (An ION that became a neighbour: its session said it is up.)
        if was != NO_ION && !(direct && ion == Some(was)) {
            self.push_peer_event(s, was, false);
        }
        if now != NO_ION {
            self.push_peer_event(s, now, true);
        }
    }

    /// A CN's parent: the up neighbour it reaches the ION through (the
    /// fewest hops), if any has a way there.
    fn parent(&self) -> Option<usize> {
        if self.role == Role::Ion {
            return None;
        }
        let (i, n) = self
            .neighbors
            .iter()
            .enumerate()
            .filter(|(_, n)| n.up)
            .min_by_key(|(_, n)| n.hops)?;
        (n.hops != 0xff).then_some(i)
    }

    /// Neighbours below this node (broadcast goes to them).
    fn children(&self) -> impl Iterator<Item = usize> + '_ {
        let mine = self.my_hops();
        self.neighbors
            .iter()
            .enumerate()
            .filter(move |(_, n)| n.up && n.node != self.node_id && n.hops > mine)
            .map(|(i, _)| i)
    }

    /// Whether `node` is in this node's subtree (a child, or below one).
    fn is_below(&self, node: u16) -> bool {
        let mut children = self.children();
        children.any(|i| self.neighbors[i].node == node || self.neighbors[i].below.contains(&node))
    }

    /// Whether a message neighbour `ni` passed on may come from `origin`
    /// (docs/reliability.md, "A hostile CN"): a neighbour speaks for
    /// itself; a child also for the nodes its subtree holds, if no other
    /// up neighbour is or holds that node (an id claimed in two places is
    /// nobody's); the way up for any node outside this node's subtree.
    /// Never for this node itself.  So a CN cannot send in another CN's
    /// name, nor in its ION's.
    fn origin_ok(&self, ni: usize, origin: u16) -> bool {
        let n = &self.neighbors[ni];
        if origin == n.node {
            return true;
        }
        if origin == self.node_id {
            return false;
        }
        let others = || {
            self.neighbors
                .iter()
                .enumerate()
                .filter(move |&(i, m)| i != ni && m.up)
                .map(|(_, m)| m)
        };
        if others().any(|m| m.node == origin) {
            return false;
        }
        let mine = self.my_hops();
        if n.hops > mine && n.node != self.node_id {
            // A child: what its subtree holds, and no other child holds.
            n.below.contains(&origin)
                && !others().any(|m| m.hops > mine && m.below.contains(&origin))
        } else {
            // The way up: whoever is not in this node's subtree.
            n.hops < mine && !self.is_below(origin)
        }
    }

    /// Whether an ION passes `channel`'s messages from one CN on to
    /// others ([`ChannelHandler::relayed_by_ion`]; yes for a channel
    /// nobody registered here).
    fn relayed_by_ion(&self, channel: u16) -> bool {
        self.channels
            .iter()
            .find(|c| c.id == channel)
            .is_none_or(|c| c.relayed_by_ion)
    }

    /// Neighbour index that leads to `dst`.
    fn route(&self, dst: u16) -> Option<usize> {
        if let Some(i) = self.neighbor(dst) {
            if self.neighbors[i].up {
                return Some(i);
            }
        }
        if let Some(i) = self
            .neighbors
            .iter()
            .position(|n| n.up && n.below.contains(&dst))
        {
            return Some(i);
        }
        if self.role == Role::Cn {
            // Towards the ION.
            let mine = self.my_hops();
            return self.neighbors.iter().position(|n| n.up && n.hops < mine);
        }
        None
    }

    /// Queues a message for its next hop(s); `from` is the neighbour it came
    /// from (not sent back there).
    /// Queues a message of local origin: what [`Treenet::send_shared`]
    /// and the receive softirq's answers do under the lock.
    fn originate(
        &mut self,
        k: &Knobs,
        s: &Stats,
        channel: u16,
        dst: u16,
        buf: Arc<MsgBuf>,
    ) -> Result {
        let len = buf.len();
        let id = self.next_msg_id;
        self.next_msg_id = id.wrapping_add(1);
        // Fault injection (forge_origin): a hostile node's messages.
        let forged = k.forge_origin.load(Relaxed);
        let header = MsgHeader {
            origin: u16::try_from(forged)
                .ok()
                .filter(|&o| o != BROADCAST)
                .unwrap_or(self.node_id),
            dst,
            channel,
            flags: 0,
            len: len as u32,
            id,
        };
        self.route_msg(k, s, header, buf, None)?;
        let cs = &mut self.chan_stats[usize::from(channel)];
        cs.msgs_sent += 1;
        cs.bytes_sent += len as u64;
        count(&s.msgs_sent);
        s.bytes_sent.fetch_add(len as u64, Relaxed);
        if dst == BROADCAST {
            count(&s.bcast_sent);
            s.bcast_bytes_sent.fetch_add(len as u64, Relaxed);
        }
        Ok(())
    }

    /// What the receive softirq may take of `frame` (from link `li`): a
    /// data frame for this node from an up neighbour, sealed as required,
    /// the next in order on its control lane with nothing buffered behind
    /// it, carrying a whole message of one frame for a local channel, and
    /// no fault injection on.  Changes nothing: whatever it refuses goes
    /// to the engine, which counts what is wrong with it.
    fn fast_candidate<'a>(&self, k: &Knobs, li: usize, frame: &'a [u8]) -> Option<FastFrame<'a>> {
        let faults = k.drop_ppm.load(Relaxed)
            | k.dup_ppm.load(Relaxed)
            | k.reorder_ppm.load(Relaxed)
            | k.deaf_ppm.load(Relaxed);
        if faults != 0 || self.held.is_some() {
            return None;
        }
        let max_payload = self.rx_payload_max(li);
        let (h, payload, seal) = wire::parse_frame(frame, max_payload).ok()?;
        if h.kind != Kind::Data
            || h.dst != self.node_id
            || h.lane != Lane::Control
            || h.flags != FLAG_FIRST | FLAG_LAST
        {
            return None;
        }
        let ni = self
            .neighbor(h.src)
            .filter(|&i| self.neighbors[i].link == li && self.neighbors[i].up)?;
        wire::check_seal(self.auth.as_ref(), seal, self.session_from(ni), frame).ok()?;
        let r = &self.neighbors[ni].rx[h.lane.index()];
        if r.win.classify(h.seq) != RxClass::InOrder
            || r.win.next_but_one_buffered()
            || r.reasm.in_message()
            || r.current.is_some()
        {
            return None;
        }
        let mut reasm = r.reasm;
        let step = reasm
            .feed(h.flags, payload, k.max_msg_size.load(Relaxed) as usize)
            .ok()?;
        let header = step.start?;
        if !step.complete
            || step.offset != 0
            || header.dst != self.node_id
            || header.channel == CHANNEL_TREENET
            || usize::from(header.channel) >= MAX_CHANNELS
        {
            return None;
        }
        Some(FastFrame {
            ni,
            lane: h.lane,
            ack: h.ack,
            xxh64: frame.first() == Some(&WIRE_VERSION_XXH64),
            header,
            body: step.data,
            reasm,
        })
    }

    /// Whether neighbour `ni` has frames queued that were never sent.
    fn has_unsent(&self, ni: usize) -> bool {
        self.neighbors[ni]
            .tx
            .iter()
            .any(|l| l.msgs.iter().any(|m| m.sent < m.frames))
    }

    /// Takes a frame [`Inner::fast_candidate`] accepted, as
    /// [`Inner::handle_frame`] would (its ack, the lane's window and
    /// reassembly, the counters of a delivered message), except for the
    /// delivery itself.
    fn take_fast(&mut self, k: &Knobs, s: &Stats, f: &FastFrame<'_>, now: u64) {
        count(&s.frames_received);
        if f.xxh64 {
            count(&s.frames_xxh64_received);
        }
        self.neighbors[f.ni].last_rx_ns = now;
        if let Some(a) = f.ack {
            count(&s.acks_piggy_received);
            self.handle_ack(k, s, f.ni, a.lane, a.next, 0);
        }
        let r = &mut self.neighbors[f.ni].rx[f.lane.index()];
        r.unacked += 1;
        if r.ack_due_ns == u64::MAX {
            r.ack_due_ns = now.saturating_add(ack_delay_us(k) * 1000);
        }
        r.win.advance();
        r.reasm = f.reasm;
        r.drain_told = true;
        let len = u64::from(f.header.len);
        let cs = &mut self.chan_stats[usize::from(f.header.channel)];
        cs.msgs_received += 1;
        cs.bytes_received += len;
        count(&s.msgs_received);
        s.bytes_received.fetch_add(len, Relaxed);
    }

    fn route_msg(
        &mut self,
        k: &Knobs,
        s: &Stats,
        header: MsgHeader,
        buf: Arc<MsgBuf>,
        from: Option<usize>,
    ) -> Result {
        if header.dst == BROADCAST {
            let mut kids = KVec::new();
            for i in self.children() {
                if Some(i) != from {
                    kids.push(i, GFP_KERNEL)?;
                }
            }
            for i in kids {
                self.enqueue(k, s, i, header, buf.clone())?;
            }
            return Ok(());
        }
        let Some(i) = self.route(header.dst) else {
            count(&s.drop_no_route);
            return Err(EHOSTUNREACH);
        };
        self.enqueue(k, s, i, header, buf)
    }

    fn payload_for(&self, k: &Knobs, link: usize) -> usize {
        let mtu = self
            .links
            .get(link)
            .and_then(|l| l.as_ref())
            .map_or(LOOPBACK_MTU, |l| l.mtu());
        // Room for an authentication trailer is kept whether or not a key
        // is set, so a key set while messages are in flight never makes
        // their frames too long for the link.
        let max = mtu
            .saturating_sub(HEADER_LEN + MAC_TRAILER_LEN)
            .clamp(MIN_PACKET_PAYLOAD, u16::MAX as usize);
        match k.packet_size.load(Relaxed) as usize {
            0 => max,
            p => p.clamp(MIN_PACKET_PAYLOAD, max),
        }
    }

    /// How many bytes neighbour `ni`'s queue may hold for a message of
    /// `len` bytes to be admitted: twice `max_msg_size` plus 1 MiB, and
    /// for a message that goes on the control lane (eager, at most
    /// `ack_threshold` frames) [`CONTROL_RESERVE`] more, so that bulk
    /// messages that filled the queue never hold up small control
    /// messages (ssi's heartbeats, zoid's small calls) at admission either.
    fn queue_bound(&self, k: &Knobs, ni: usize, len: usize) -> usize {
        let max = k.max_msg_size.load(Relaxed) as usize;
        let bound = 2 * max + (1 << 20);
        let payload = self.payload_for(k, self.neighbors[ni].link);
        let threshold = k.ack_threshold.load(Relaxed) as usize;
        if frame_count(len, payload) <= threshold.max(1) {
            bound + CONTROL_RESERVE
        } else {
            bound
        }
    }

    fn enqueue(
        &mut self,
        k: &Knobs,
        s: &Stats,
        ni: usize,
        header: MsgHeader,
        buf: Arc<MsgBuf>,
    ) -> Result {
        let payload = self.payload_for(k, self.neighbors[ni].link);
        let frames = frame_count(buf.len(), payload);
        let threshold = k.ack_threshold.load(Relaxed) as usize;
        let msg = OutMsg {
            header,
            buf,
            payload,
            frames,
            first_seq: 0,
            sent: 0,
        };
        let n = &mut self.neighbors[ni];
        let charge = msg.charge();
        // Charged once queued (a message that could not be queued is not).
        if threshold > 0 && frames > threshold {
            count(&s.rendezvous_waits);
            n.rdv_wait.push(msg, GFP_KERNEL)?;
            n.queued_bytes += charge;
            // Queued: a request that finds no memory now goes later.
            self.request_next(k, s, ni);
        } else if frames > threshold.max(1) {
            n.tx[Lane::Bulk.index()].msgs.push_back(msg, GFP_KERNEL)?;
            n.queued_bytes += charge;
        } else {
            n.tx[Lane::Control.index()]
                .msgs
                .push_back(msg, GFP_KERNEL)?;
            n.queued_bytes += charge;
        }
        Ok(())
    }

    /// Sends a request to send for the next large message (if none is out).
    /// One that finds no memory is counted and sent at a later pass
    /// ([`Inner::retry_controls`]): only a request queued counts as out.
    fn request_next(&mut self, k: &Knobs, s: &Stats, ni: usize) {
        let n = &self.neighbors[ni];
        let waiting = n.rdv_wait.len() as u32;
        if n.rts_out >= waiting || n.rts_out as usize >= MAX_WAITING_PER_PEER {
            return;
        }
        let m = &n.rdv_wait[n.rts_out as usize];
        let (id, len) = (m.header.id, m.header.len);
        if self.send_control(k, ni, CTL_RTS, id, len).is_err() {
            self.engine_nomem(s, "a rendezvous request");
            return;
        }
        self.neighbors[ni].rts_out += 1;
    }

    /// Answers a request of neighbour `ni` (`CTL_CTS` or `CTL_REJECT`).
    /// One that finds no memory is counted and owed: sent at a later pass
    /// ([`Inner::retry_controls`]), so the sender never waits for an
    /// answer that will not come.  `false` if it could not even be owed
    /// (more answers owed than the neighbour may have requests out):
    /// lost, counted in `drop_nomem`.
    fn answer_control(
        &mut self,
        k: &Knobs,
        s: &Stats,
        ni: usize,
        op: u8,
        id: u32,
        len: u32,
    ) -> bool {
        if self.send_control(k, ni, op, id, len).is_ok() {
            return true;
        }
        self.engine_nomem(s, "a rendezvous answer");
        match self.neighbors[ni].owed.iter_mut().find(|o| o.is_none()) {
            Some(slot) => {
                *slot = Some((op, id, len));
                true
            }
            None => {
                count(&s.drop_nomem);
                false
            }
        }
    }

    /// Queues what [`Inner::answer_control`] owes and the requests
    /// [`Inner::request_next`] could not send, now that there may be
    /// memory again.
    fn retry_controls(&mut self, k: &Knobs, s: &Stats) {
        for ni in 0..self.neighbors.len() {
            for j in 0..MAX_WAITING_PER_PEER {
                let Some((op, id, len)) = self.neighbors[ni].owed[j] else {
                    continue;
                };
                if self.send_control(k, ni, op, id, len).is_err() {
                    self.engine_nomem(s, "a rendezvous answer");
                    return;
                }
                self.neighbors[ni].owed[j] = None;
            }
            self.request_next(k, s, ni);
        }
    }

    /// Queues a rendezvous control message for neighbour `ni` (`ENOMEM`:
    /// nothing queued, nothing charged).
    fn send_control(&mut self, k: &Knobs, ni: usize, op: u8, id: u32, len: u32) -> Result {
        let mut b = [0u8; 12];
        b[0] = op;
        b[4..8].copy_from_slice(&id.to_be_bytes());
        b[8..12].copy_from_slice(&len.to_be_bytes());
        let buf = Arc::new(MsgBuf::from_slice(&b, GFP_KERNEL)?, GFP_KERNEL)?;
        let header = MsgHeader {
            origin: self.node_id,
            dst: self.neighbors[ni].node,
            channel: CHANNEL_TREENET,
            flags: 0,
            len: 12,
            id: 0,
        };
        let payload = self.payload_for(k, self.neighbors[ni].link);
        let n = &mut self.neighbors[ni];
        let msg = OutMsg {
            header,
            buf,
            payload,
            frames: 1,
            first_seq: 0,
            sent: 0,
        };
        // Charged once queued (a message that could not be queued is not).
        let charge = msg.charge();
        n.tx[Lane::Control.index()]
            .msgs
            .push_back(msg, GFP_KERNEL)?;
        n.queued_bytes += charge;
        Ok(())
    }

    /// Gives grants while slots are free: allocates each granted message's
    /// buffer first, so bulk data never waits for memory.
    fn pump_grants(&mut self, k: &Knobs, s: &Stats) {
        self.grants.set_slots(k.grant_slots.load(Relaxed) as usize);
        while let Some(r) = self.grants.next_grant() {
            let Some(ni) = self.neighbor(r.peer) else {
                self.grants.complete(r.peer, r.id);
                continue;
            };
            // Granted while its previous message still arrives.
            let early = self.grants.held(r.peer) > 1;
            // The queue gives a peer no more grants than it has entries.
            let n = &mut self.neighbors[ni];
            let Some(free) = n.granted.iter_mut().find(|g| g.is_none()) else {
                self.grants.complete(r.peer, r.id);
                self.answer_control(k, s, ni, CTL_REJECT, r.id, r.len);
                continue;
            };
            // Filled by reassembly (`consume`) before anyone reads it.
            match MsgBuf::for_filling(r.len as usize, GFP_KERNEL) {
                Ok(buf) => {
                    *free = Some((r.id, buf));
                    count(&s.grants_given);
                    if early {
                        count(&s.grants_early);
                    }
                    if !self.answer_control(k, s, ni, CTL_CTS, r.id, r.len) {
                        // Lost (counted): a grant nobody will use is
                        // taken back.
                        let n = &mut self.neighbors[ni];
                        for g in n.granted.iter_mut() {
                            if g.as_ref().is_some_and(|(id, _)| *id == r.id) {
                                *g = None;
                            }
                        }
                        self.grants.complete(r.peer, r.id);
                    }
                }
                Err(_) => {
                    count(&s.drop_nomem);
                    self.grants.complete(r.peer, r.id);
                    self.answer_control(k, s, ni, CTL_REJECT, r.id, r.len);
                }
            }
        }
    }

    #[inline(never)]
    fn send_hellos(&mut self, k: &Knobs, s: &Stats) {
        let mut below = [0u16; HELLO_MAX_BELOW];
        let mut n_below = 0usize;
        let mut kids: KVec<usize> = KVec::new();
        let mut short = false;
        for i in self.children() {
            short |= kids.push(i, GFP_KERNEL).is_err();
        }
        if short {
            self.engine_nomem(s, "a hello's list of children");
        }
        for i in kids {
            let n = &self.neighbors[i];
            for id in Iterator::chain(core::iter::once(n.node), n.below.iter().copied()) {
                if n_below < HELLO_MAX_BELOW {
                    below[n_below] = id;
                    n_below += 1;
                }
            }
        }
        let hops = self.my_hops();
        let ion = self.ion().unwrap_or(NO_ION);
        // Split horizon with poison reverse: the parent hears that there
        // is no way to the ION through this node, so no node above ever
        // routes back down for the ION (when the ION goes away, a relay and
        // the CNs below it do not bounce its messages, nor count their
        // hops up to infinity, nor keep believing in it).
        let parent_link = self.parent().map(|i| self.neighbors[i].link);
        for li in 0..self.links.len() {
            if self.links[li].is_none() {
                continue;
            }
            let (hops, ion) = if parent_link == Some(li) {
                (0xff, NO_ION)
            } else {
                (hops, ion)
            };
            // The epoch we last heard on this link (point-to-point links).
            let peer_epoch = self
                .neighbors
                .iter()
                .find(|n| n.link == li)
                .map_or(0, |n| n.epoch);
            let h = Hello {
                epoch: self.link_epoch.get(li).copied().unwrap_or(self.epoch),
                peer_epoch,
                pset: self.pset,
                role: self.role,
                hops,
                features: FEATURE_PIGGY_ACK | FEATURE_XXH64 | FEATURE_ION_ID,
                n_below: n_below as u8,
                below,
                ion,
            };
            let mut p = [0u8; 256];
            let len = h.encode(&mut p);
            let hdr = FrameHeader::hello(self.node_id);
            let sealing = Sealing::hello(&self.auth);
            self.emit(k, s, li, BROADCAST_MAC, sealing, &hdr, &p[..len], &[]);
            count(&s.hellos_sent);
        }
    }

    /// Builds a frame into the scratch buffer and puts it on the wire,
    /// through fault injection.  Returns whether the frame was built (false:
    /// no memory, counted).
    #[allow(clippy::too_many_arguments)]
    fn emit(
        &mut self,
        k: &Knobs,
        s: &Stats,
        li: usize,
        mac: Mac,
        sealing: Sealing,
        hdr: &FrameHeader,
        p1: &[u8],
        p2: &[u8],
    ) -> bool {
        match build_frame(s, sealing, hdr, p1, p2) {
            Some(frame) => {
                self.put_on_wire(k, s, li, mac, frame);
                true
            }
            None => false,
        }
    }

    fn put_on_wire(&mut self, k: &Knobs, s: &Stats, li: usize, mac: Mac, frame: KVec<u8>) {
        let drop_ppm = k.drop_ppm.load(Relaxed);
        let dup_ppm = k.dup_ppm.load(Relaxed);
        let reorder_ppm = k.reorder_ppm.load(Relaxed);
        if drop_ppm | dup_ppm | reorder_ppm != 0 {
            if self.burst_left > 0 {
                self.burst_left -= 1;
                count(&s.inject_drop);
                return;
            }
            if random_u32() % 1_000_000 < drop_ppm {
                self.burst_left = k.drop_burst.load(Relaxed).saturating_sub(1);
                count(&s.inject_drop);
                return;
            }
            if random_u32() % 1_000_000 < dup_ppm {
                count(&s.inject_dup);
                let mut copy = KVec::new();
                if copy.extend_from_slice(&frame, GFP_KERNEL).is_ok() {
                    self.wire_send(s, li, &mac, copy);
                }
            }
            if self.held.is_none() && random_u32() % 1_000_000 < reorder_ppm {
                count(&s.inject_reorder);
                self.held = Some((li, mac, frame));
                return;
            }
        }
        self.wire_send(s, li, &mac, frame);
        // A held frame goes out after the one that overtook it.
        if let Some((hl, hm, hf)) = self.held.take() {
            self.wire_send(s, hl, &hm, hf);
        }
    }

    /// With `tx_batch` on, holds the frames sent from here on until
    /// [`Inner::flush_tx`] (see [`NetLink::hold`]); returns whether it did.
    /// Nothing in between may return early.
    fn hold_tx(&mut self, k: &Knobs) -> bool {
        let max = k.tx_batch.load(Relaxed);
        if max == 0 {
            return false;
        }
        for l in self.links.iter().flatten() {
            if let Link::Net(n) = l {
                n.hold(max);
            }
        }
        true
    }

    /// Sends what [`Inner::hold_tx`] held (`held`: what it returned).
    fn flush_tx(&mut self, s: &Stats, held: bool) {
        if !held {
            return;
        }
        for l in self.links.iter().flatten() {
            if let Link::Net(n) = l {
                let b = n.flush();
                if b.batches > 0 {
                    s.tx_batches.fetch_add(u64::from(b.batches), Relaxed);
                    s.tx_batch_frames.fetch_add(u64::from(b.direct), Relaxed);
                }
                if b.via_qdisc > 0 {
                    s.tx_batch_via_qdisc
                        .fetch_add(u64::from(b.via_qdisc), Relaxed);
                }
            }
        }
    }

    fn flush_held(&mut self, s: &Stats) {
        if let Some((hl, hm, hf)) = self.held.take() {
            self.wire_send(s, hl, &hm, hf);
        }
    }

    fn wire_send(&mut self, s: &Stats, li: usize, mac: &Mac, frame: KVec<u8>) {
        count(&s.frames_sent);
        match self.links.get(li).and_then(|l| l.as_ref()) {
            Some(Link::Net(n)) => {
                if n.send(mac, frame.len(), |b| b.copy_from_slice(&frame))
                    .is_err()
                {
                    count(&s.tx_errors);
                }
            }
            Some(Link::Loopback) => {
                if self.loop_frames.len() >= RXQ_LIMIT as usize
                    || self.loop_frames.push(frame, GFP_KERNEL).is_err()
                {
                    count(&s.tx_errors);
                }
            }
            None => {}
        }
    }

    /// Builds and sends frame `seq` of lane `lane` to neighbour `ni`.
    ///
    /// Without fault injection the frame is built straight into the skb:
    /// one copy from the message's pages, checksummed in place.
    fn send_frame(&mut self, k: &Knobs, s: &Stats, ni: usize, lane: Lane, seq: u32) {
        let l = &self.neighbors[ni].tx[lane.index()];
        let Some(mi) = l
            .msgs
            .iter()
            .position(|m| m.sent > 0 && seq.wrapping_sub(m.first_seq) < m.sent as u32)
        else {
            return;
        };
        let Some(m) = l.msgs.get(mi) else { return };
        let index = seq.wrapping_sub(m.first_seq) as usize;
        let Some(spec) = frame_spec(index, m.buf.len(), m.payload) else {
            return;
        };
        let first_len = if index == 0 { MSG_HEADER_LEN } else { 0 };
        // An ack rides along if the frame has room for it; it is taken from
        // the lane that owes it only once the frame is on its way.
        let room = m.payload.saturating_sub(first_len + spec.len);
        let ack = if room >= PIGGY_ACK_LEN {
            self.piggy_ack(k, ni, lane)
        } else {
            None
        };
        let n = &self.neighbors[ni];
        let mut hdr = FrameHeader::data(self.node_id, n.node, lane, seq, spec.flags);
        if let Some(a) = ack {
            hdr = hdr.with_ack(a);
        }
        let (ack_bytes, ack_len) = hdr.ack_bytes();
        let mh = m.header.encode();
        let first: &[u8] = if index == 0 { &mh } else { &[] };
        let sealing = self.sealing_to(k, ni);
        let faults =
            k.drop_ppm.load(Relaxed) | k.dup_ppm.load(Relaxed) | k.reorder_ppm.load(Relaxed);
        if faults == 0 && self.held.is_none() {
            if let Some(Some(Link::Net(link))) = self.links.get(n.link) {
                let payload_len = first.len() + spec.len;
                let total = HEADER_LEN + payload_len + ack_len + sealing.trailer_len();
                let mut ok = true;
                let sent = link.send(&n.mac, total, |b| {
                    let (h, rest) = b.split_at_mut(HEADER_LEN);
                    let (p, rest) = rest.split_at_mut(payload_len);
                    let (a, t) = rest.split_at_mut(ack_len);
                    a.copy_from_slice(&ack_bytes[..ack_len]);
                    let (p1, p2) = p.split_at_mut(first.len());
                    p1.copy_from_slice(first);
                    ok = m.buf.read_at(spec.offset, p2).is_ok();
                    if let Ok(h) = <&mut [u8; HEADER_LEN]>::try_from(h) {
                        sealing.seal(&hdr, &[p], h, t);
                    }
                });
                count(&s.frames_sent);
                if sent.is_err() || !ok {
                    count(&s.tx_errors);
                }
                if sent.is_ok() {
                    self.took_piggy_ack(s, ni, ack);
                }
                return;
            }
        }
        let mut data = KVec::new();
        if data.resize(spec.len, 0, GFP_KERNEL).is_err()
            || m.buf.read_at(spec.offset, &mut data).is_err()
        {
            count(&s.drop_nomem);
            return;
        }
        let (li, mac) = (n.link, n.mac);
        if self.emit(k, s, li, mac, sealing, &hdr, first, &data) {
            self.took_piggy_ack(s, ni, ack);
        }
    }

    fn retransmit(&mut self, k: &Knobs, s: &Stats) {
        let now = now_us();
        self.rtx_now = false;
        for ni in 0..self.neighbors.len() {
            for lane in Lane::ALL {
                let l = &self.neighbors[ni].tx[lane.index()];
                if l.win.in_flight() == 0 {
                    continue;
                }
                let mut due: KVec<u32> = KVec::new();
                let mut short = false;
                let expired = l.win.due(now, l.win.fast_after(), |q| {
                    short |= due.push(q, GFP_KERNEL).is_err();
                });
                if short {
                    // (The rest go at the next timeout.)
                    self.engine_nomem(s, "a retransmission list");
                }
                if expired {
                    count(&s.rto_expired);
                    self.neighbors[ni].tx[lane.index()].win.on_timeout(now);
                }
                for q in due {
                    count(&s.retransmits);
                    self.neighbors[ni].tx[lane.index()]
                        .win
                        .on_retransmit(q, now);
                    self.send_frame(k, s, ni, lane, q);
                }
            }
        }
        self.plan_retransmit();
    }

    /// Sets when the next retransmission scan is due: when the earliest
    /// in-flight frame's RTO expires, a hole below a selectively acked
    /// frame is due (one srtt after it was sent, so a loss costs a round
    /// trip, not an RTO) or a tail-loss probe is; never, with nothing in
    /// flight.
    fn plan_retransmit(&mut self) {
        self.rtx_acked = false;
        let now = now_us();
        let now_ns = now_ns();
        let mut next = u64::MAX;
        for n in self.neighbors.iter() {
            for l in n.tx.iter() {
                if let Some(t) = l.win.next_due_in(now, l.win.fast_after()) {
                    next = next.min(now_ns.saturating_add(t.saturating_mul(1000)));
                }
            }
        }
        self.rtx_at = next;
    }

    /// The ack a data frame to neighbour `ni` on `lane` can carry, from the
    /// pending acks (which then need no frame of their own): the same
    /// lane's first, else the other's.  Only a lane with frames
    /// unacknowledged and none out of order (no selective bits) qualifies,
    /// and only if the neighbour understands piggybacked acks.  The ack
    /// stays owed until [`Inner::took_piggy_ack`] (a frame that is never
    /// built loses no ack).
    fn piggy_ack(&self, k: &Knobs, ni: usize, lane: Lane) -> Option<PiggyAck> {
        let n = &self.neighbors[ni];
        if !n.takes_piggy_acks
            || k.piggyback_acks.load(Relaxed) == 0
            || k.mute_acks.load(Relaxed) != 0
        {
            return None;
        }
        let other = if lane == Lane::Control {
            Lane::Bulk
        } else {
            Lane::Control
        };
        [lane, other].into_iter().find_map(|l| {
            let r = &n.rx[l.index()];
            (r.owes_ack() && r.win.sack() == 0).then(|| PiggyAck {
                lane: l,
                next: r.win.next_seq(),
            })
        })
    }

    /// A data frame carrying `ack` ([`Inner::piggy_ack`]) went out: its
    /// lane no longer owes that ack.
    fn took_piggy_ack(&mut self, s: &Stats, ni: usize, ack: Option<PiggyAck>) {
        if let Some(a) = ack {
            self.neighbors[ni].rx[a.lane.index()].take_ack();
            count(&s.acks_piggybacked);
        }
    }

    /// Sends the acks that are due: every lane with a frame out of order or
    /// a duplicate, with `ack_every` ([`ack_every`]) frames unacknowledged, or whose
    /// delayed ack is due at `now` (`ack_delay_us`: an ack waits that long
    /// for more frames to cover, or for a data frame to ride on
    /// ([`Inner::piggy_ack`]), so a request/response exchange costs
    /// two frames, not four).
    fn send_acks(&mut self, k: &Knobs, s: &Stats, now: u64) {
        let ack_every = ack_every(k);
        for ni in 0..self.neighbors.len() {
            for lane in Lane::ALL {
                let n = &mut *self.neighbors[ni];
                let r = &mut n.rx[lane.index()];
                if now < r.ack_due(ack_every) {
                    continue;
                }
                let next = r.take_ack();
                if k.mute_acks.load(Relaxed) != 0 {
                    count(&s.inject_muted_acks);
                    continue;
                }
                let hdr = FrameHeader::ack(self.node_id, n.node, lane, next);
                let p = wire::encode_ack(r.win.sack());
                let (li, mac) = (n.link, n.mac);
                let sealing = self.sealing_to(k, ni);
                // Acks bypass fault injection (straight to the wire), and
                // on a netdevice are sealed in the skb (no frame buffer).
                if let Some(Some(Link::Net(link))) = self.links.get(li) {
                    let total = HEADER_LEN + p.len() + sealing.trailer_len();
                    let sent = link.send(&mac, total, |b| {
                        let (h, rest) = b.split_at_mut(HEADER_LEN);
                        let (payload, t) = rest.split_at_mut(p.len());
                        payload.copy_from_slice(&p);
                        if let Ok(h) = <&mut [u8; HEADER_LEN]>::try_from(h) {
                            sealing.seal(&hdr, &[payload], h, t);
                        }
                    });
                    count(&s.acks_sent);
                    count(&s.frames_sent);
                    if sent.is_err() {
                        count(&s.tx_errors);
                    }
                } else if let Some(frame) = build_frame(s, sealing, &hdr, &p, &[]) {
                    count(&s.acks_sent);
                    self.wire_send(s, li, &mac, frame);
                }
            }
        }
    }

    /// Sends new frames while windows allow; control lanes first, for at
    /// most [`TX_BUDGET`] frames per neighbour or [`PASS_TIME_NS`].  Returns
    /// whether frames are still waiting for budget (not for window space).
    fn transmit(&mut self, k: &Knobs, s: &Stats) -> bool {
        let now = now_us();
        let deadline = now_ns().saturating_add(PASS_TIME_NS);
        let mut more = false;
        // Neighbours take turns at being first (the rest may get only a
        // frame each when the pass runs out of time).
        let count_n = self.neighbors.len();
        let first = self.tx_first_neighbor % count_n.max(1);
        self.tx_first_neighbor = first + 1;
        for turn in 0..count_n {
            let ni = (first + turn) % count_n;
            if !self.neighbors[ni].up {
                continue;
            }
            let mut budget = TX_BUDGET;
            for lane in Lane::ALL {
                loop {
                    // Every neighbour gets a frame, however late it is.
                    if budget < TX_BUDGET && now_ns() >= deadline {
                        budget = 0;
                    }
                    match self.send_next(k, s, ni, lane, now, budget > 0) {
                        Next::Sent => budget -= 1,
                        Next::Waiting => {
                            more = true;
                            break;
                        }
                        Next::Nothing => break,
                    }
                }
            }
        }
        more
    }

    /// Sends the next new frame of neighbour `ni`'s lane if its window
    /// allows, and if `go` (the caller's budget; else tells whether one
    /// would have gone).
    fn send_next(
        &mut self,
        k: &Knobs,
        s: &Stats,
        ni: usize,
        lane: Lane,
        now: u32,
        go: bool,
    ) -> Next {
        let l = &mut self.neighbors[ni].tx[lane.index()];
        l.win.set_window(k.window.load(Relaxed) as usize);
        l.win.set_peer_ack_delay(ack_delay_us(k));
        if !l.win.can_send() {
            return Next::Nothing;
        }
        let Some(m) = l.msgs.iter_mut().find(|m| m.sent < m.frames) else {
            return Next::Nothing;
        };
        if !go {
            return Next::Waiting;
        }
        let seq = l.win.on_send(now);
        // Its tail-loss probe, the earliest it can be due.
        let wait = l.win.probe_after(l.win.fast_after());
        let probe_at = now_ns().saturating_add(wait.saturating_mul(1000));
        self.rtx_at = self.rtx_at.min(probe_at);
        if m.sent == 0 {
            m.first_seq = seq;
        }
        m.sent += 1;
        self.send_frame(k, s, ni, lane, seq);
        Next::Sent
    }

    /// The largest payload a frame received on link `li` may carry.
    fn rx_payload_max(&self, li: usize) -> usize {
        self.links
            .get(li)
            .and_then(|l| l.as_ref())
            .map_or(0, |l| l.mtu())
            .saturating_sub(HEADER_LEN)
            .max(wire::ZOID_PACKET_PAYLOAD)
    }

    fn handle_frame(&mut self, k: &Knobs, s: &Stats, li: usize, mac: Mac, frame: &[u8], now: u64) {
        let max_payload = self.rx_payload_max(li);
        let (h, payload, seal) = match wire::parse_frame(frame, max_payload) {
            Ok(x) => x,
            Err(e) => {
                count(drop_counter(s, e));
                return;
            }
        };
        if h.kind == Kind::Hello {
            if !self.authentic(s, &h, seal, Session::NONE, frame) {
                return;
            }
            let Some(hello) = self.hello_for_us(s, li, h.src, payload) else {
                return;
            };
            if self.live_on_another_link(k, h.src, li, now) {
                // A neighbour that is up and heard on its own link does not
                // move: this hello is a forgery or a second cable to the
                // same node.  Its session stays; once that link has been
                // silent for peer_timeout_ms the node may come up here.
                count(&s.drop_hello_moved);
                return;
            }
            self.handle_hello(s, li, mac, h.src, hello, now);
            self.track_far_ion(s);
            return;
        }
        if h.dst != self.node_id {
            count(&s.drop_not_for_us);
            return;
        }
        let Some(ni) = self
            .neighbor(h.src)
            .filter(|&i| self.neighbors[i].link == li && self.neighbors[i].up)
        else {
            count(&s.drop_unknown_node);
            return;
        };
        let session = self.session_from(ni);
        if !self.authentic(s, &h, seal, session, frame) {
            return;
        }
        let deaf_ppm = k.deaf_ppm.load(Relaxed);
        if deaf_ppm != 0 && random_u32() % 1_000_000 < deaf_ppm {
            count(&s.inject_deaf);
            return;
        }
        count(&s.frames_received);
        if frame[0] == WIRE_VERSION_XXH64 {
            count(&s.frames_xxh64_received);
        }
        self.neighbors[ni].last_rx_ns = now;
        match h.kind {
            Kind::Ack => {
                let Some(sack) = wire::decode_ack(payload) else {
                    count(&s.drop_truncated);
                    return;
                };
                self.handle_ack(k, s, ni, h.lane, h.seq, sack);
            }
            Kind::Data => {
                // The ack it carries first: it may free window space the
                // data's handling (a reply sent inline) can use.
                if let Some(a) = h.ack {
                    count(&s.acks_piggy_received);
                    self.handle_ack(k, s, ni, a.lane, a.next, 0);
                }
                self.handle_data(k, s, ni, h.lane, h.seq, h.flags, payload)
            }
            Kind::Hello => {}
        }
    }

    /// Whether `node` is an up neighbour on another link than `li`, heard
    /// there within `peer_timeout_ms`.
    fn live_on_another_link(&self, k: &Knobs, node: u16, li: usize, now: u64) -> bool {
        let timeout_ns = u64::from(k.peer_timeout_ms.load(Relaxed)) * 1_000_000;
        self.neighbor(node).is_some_and(|ni| {
            let n = &self.neighbors[ni];
            n.link != li && n.up && now.saturating_sub(n.last_rx_ns) <= timeout_ns
        })
    }

    /// How frames to neighbour `ni` are sealed: with a tag under the pset's
    /// key, else with the fastest checksum it accepts (XXH64 if its hello
    /// said so and `fast_checksum` is on, CRC-32C otherwise).
    fn sealing_to(&self, k: &Knobs, ni: usize) -> Sealing {
        match &self.auth {
            Some(key) => Sealing::Tag(*key, self.session_to(ni)),
            None if self.neighbors[ni].takes_xxh64 && k.fast_checksum.load(Relaxed) != 0 => {
                Sealing::Checksum(Checksum::Xxh64)
            }
            None => Sealing::Checksum(Checksum::Crc32c),
        }
    }

    /// The session of frames to neighbour `ni`: our epoch on its link, then
    /// its epoch.
    fn session_to(&self, ni: usize) -> Session {
        let n = &self.neighbors[ni];
        Session {
            src_epoch: self.link_epoch.get(n.link).copied().unwrap_or(self.epoch),
            dst_epoch: n.epoch,
        }
    }

    /// The session of frames from neighbour `ni`.
    fn session_from(&self, ni: usize) -> Session {
        let to = self.session_to(ni);
        Session {
            src_epoch: to.dst_epoch,
            dst_epoch: to.src_epoch,
        }
    }

    /// Whether a received frame is sealed as this node requires: with a
    /// key, by a tag that verifies for `session`; without, by its checksum
    /// (already verified).  A refused frame is counted.
    fn authentic(
        &self,
        s: &Stats,
        h: &FrameHeader,
        seal: Seal,
        session: Session,
        frame: &[u8],
    ) -> bool {
        match wire::check_seal(self.auth.as_ref(), seal, session, frame) {
            Ok(()) => true,
            Err(e) => {
                count(drop_counter(s, e));
                if e == FrameError::BadMac {
                    self.log_refused_tag(h, seal, session, frame);
                }
                false
            }
        }
    }

    /// Says which frame [`Inner::authentic`] refused by its tag, and under
    /// which session (if any) the tag would have verified: an admin sees
    /// which node has another key, and a refusal between nodes of one key
    /// (docs/reliability.md, 66-treenet-auth) says what it was.  At most
    /// [`REFUSED_LOG_BURST`] lines per [`REFUSED_LOG_WINDOW_NS`]: a forged
    /// flood is counted, not logged.
    #[inline(never)]
    #[cold]
    fn log_refused_tag(&self, h: &FrameHeader, seal: Seal, session: Session, frame: &[u8]) {
        static WINDOW_START: Atomic<u64> = Atomic::new(0);
        static LOGGED: Atomic<u32> = Atomic::new(0);
        let now = now_ns();
        let start = WINDOW_START.load(Relaxed);
        if start == 0 || now.saturating_sub(start) >= REFUSED_LOG_WINDOW_NS {
            WINDOW_START.store(now, Relaxed);
            LOGGED.store(0, Relaxed);
        }
        if LOGGED.fetch_add(1, Relaxed) >= REFUSED_LOG_BURST {
            return;
        }
        let (Some(key), Seal::Tag(tag)) = (self.auth.as_ref(), seal) else {
            return;
        };
        let verifies = |s: Session| wire::verify_tag(key, s, frame, tag);
        let kind = match h.kind {
            Kind::Hello => "hello",
            Kind::Ack => "ack",
            Kind::Data => "data frame",
        };
        let lane = match h.lane {
            Lane::Control => "control",
            Lane::Bulk => "bulk",
        };
        let reversed = Session {
            src_epoch: session.dst_epoch,
            dst_epoch: session.src_epoch,
        };
        let other = (0..self.neighbors.len())
            .find(|&i| verifies(self.session_from(i)))
            .map(|i| self.neighbors[i].node);
        let hint = if verifies(Session::NONE) {
            "; it verifies as sealed without a session (a hello's)"
        } else if verifies(reversed) {
            "; it verifies under the reversed session"
        } else if other.is_some() {
            "; it verifies under the session of node"
        } else {
            ""
        };
        pr_warn!(
            "refused a {kind} from node {}: its tag does not verify \
             ({lane} lane, seq {}, {} bytes, session {:08x}/{:08x}{hint}{}): \
             another key, another session, or altered on the way\n",
            h.src,
            h.seq,
            frame.len(),
            session.src_epoch,
            session.dst_epoch,
            OptNode(other)
        );
    }

    /// The hello in `payload` from `src` on link `li`, if it is well formed,
    /// of this pset and not in this node's own name; else counted and None.
    fn hello_for_us(&self, s: &Stats, li: usize, src: u16, payload: &[u8]) -> Option<Hello> {
        let hello = Hello::decode(payload).filter(|h| h.pset == self.pset);
        let loopback = matches!(self.links.get(li), Some(Some(Link::Loopback)));
        // Our own id from elsewhere is a misconfigured pset.
        if hello.is_none() || (src == self.node_id && !loopback) {
            count(&s.drop_bad_hello);
            return None;
        }
        hello
    }

    #[inline(never)]
    fn handle_hello(&mut self, s: &Stats, li: usize, mac: Mac, src: u16, hello: Hello, now: u64) {
        if let Some(ni) = self.neighbor(src) {
            if self.neighbors[ni].link != li || self.neighbors[ni].epoch != hello.epoch {
                // Restarted or moved: a new session.
                self.neighbor_down(ni, s);
                let _ = self.neighbors.remove(ni);
            }
        }
        let ni = match self.neighbor(src) {
            Some(ni) => ni,
            None if self.neighbors.iter().filter(|n| !n.up).count() >= MAX_PENDING_NEIGHBORS => {
                count(&s.drop_hello_flood);
                return;
            }
            None => match self.new_neighbor(src, li, mac, hello.epoch) {
                Ok(ni) => ni,
                Err(_) => {
                    count(&s.drop_nomem);
                    return;
                }
            },
        };
        let mine = self.link_epoch.get(li).copied().unwrap_or(self.epoch);
        // The session is established once the neighbour echoes our epoch;
        // until then no data flows (frames of an older session are dropped).
        let established = hello.peer_epoch == mine;
        if !established {
            self.hello_now = true;
        }
        let n = &mut self.neighbors[ni];
        n.last_rx_ns = now;
        n.role = hello.role;
        n.hops = hello.hops;
        n.ion = hello.ion;
        n.takes_piggy_acks = hello.features & FEATURE_PIGGY_ACK != 0;
        n.takes_xxh64 = hello.features & FEATURE_XXH64 != 0;
        let below = &hello.below[..usize::from(hello.n_below).min(HELLO_MAX_BELOW)];
        if n.up && n.below[..] != *below {
            // A relay's subtree changed (a CN below it went down or came
            // up): upper layers hear of those nodes as of any peer.
            let gone = n
                .below
                .iter()
                .filter(|b| !below.contains(b))
                .map(|&b| (b, false));
            let came = below
                .iter()
                .filter(|b| !n.below.contains(b))
                .map(|&b| (b, true));
            // (A child hears its parent's subtree, itself included.)
            let me = self.node_id;
            for (node, up) in Iterator::chain(gone, came).filter(|&(b, _)| b != me) {
                count(if up { &s.below_up } else { &s.below_down });
                if self
                    .events
                    .push(Event::Peer { node, up }, GFP_KERNEL)
                    .is_err()
                {
                    count(&s.peer_events_lost);
                }
            }
        }
        n.below.clear();
        let mut short = false;
        for &b in below {
            short |= n.below.push(b, GFP_KERNEL).is_err();
        }
        if short {
            self.engine_nomem(s, "the nodes below a neighbour");
        }
        let n = &mut self.neighbors[ni];
        if !n.up && established {
            n.up = true;
            count(&s.peer_up);
            let node = n.node;
            self.log_peer(s, node, true, 0);
            let n = &mut self.neighbors[ni];
            let role = if hello.role == Role::Ion { "ion" } else { "cn" };
            pr_info!("treenet: node {} is up ({role}, link {li})\n", n.node);
            let node = n.node;
            let mut below: KVec<u16> = KVec::new();
            if below.extend_from_slice(&n.below, GFP_KERNEL).is_err() {
                count(&s.peer_events_lost);
            }
            self.push_peer_event(s, node, true);
            let me = self.node_id;
            for b in below.into_iter().filter(|&b| b != me) {
                self.push_peer_event(s, b, true);
            }
            // Tell the new neighbour about us right away.
            self.hello_now = true;
        }
    }

    // Never inlined (nor the other rare paths marked so): its frame (a send
    // lane under construction, ~0.7 KiB) would otherwise sit in
    // `handle_frame`'s frame on every received frame's path (8 KiB stacks
    // on ppc32).
    #[inline(never)]
    fn new_neighbor(&mut self, node: u16, link: usize, mac: Mac, epoch: u32) -> Result<usize> {
        // Room for every neighbour's requests, so none is refused.
        let needed = (self.neighbors.len() + 1) * MAX_WAITING_PER_PEER;
        if self.grants.capacity() < needed {
            let bigger = grant_storage(needed.max(2 * self.grants.capacity()))?;
            self.grants.replace_storage(bigger).map_err(|_| EINVAL)?;
        }
        let rx = [lane_rx(), lane_rx()];
        let tx = [
            lane_tx(64, 20_000, 2_000_000)?,
            lane_tx(64, 20_000, 2_000_000)?,
        ];
        // Built in place on the heap: a whole `Neighbor` would not fit the
        // stack budget of this frame on 32-bit PowerPC.
        let n = KBox::init(
            init!(Neighbor {
                node,
                link,
                mac,
                epoch,
                role: Role::Cn,
                hops: 0xff,
                ion: NO_ION,
                below: KVec::new(),
                last_rx_ns: 0,
                up: false,
                tx,
                rx,
                rdv_wait: KVec::new(),
                rts_out: 0,
                owed: [None; MAX_WAITING_PER_PEER],
                granted: [None, None],
                grant_finish: 0,
                queued_bytes: 0,
                acks_seen: 0,
                takes_piggy_acks: false,
                takes_xxh64: false,
            }),
            GFP_KERNEL,
        )?;
        self.neighbors.push(n, GFP_KERNEL)?;
        Ok(self.neighbors.len() - 1)
    }

    /// Notes a neighbour's coming up or going down in the log
    /// (`peer_log`), whose room was taken at start: the oldest entry
    /// makes way.
    fn log_peer(&mut self, s: &Stats, node: u16, up: bool, silent_ms: u64) {
        if self.peer_log.len() >= PEER_LOG_LEN {
            // (Never fails: the log is not empty.)
            let _ = self.peer_log.remove(0);
        }
        // Within the capacity taken at start: never allocates.  Were that
        // room missing, the entry is lost and counted.
        if self
            .peer_log
            .push_within_capacity((node, up, silent_ms))
            .is_err()
        {
            self.engine_nomem(s, "a peer log entry");
        }
    }

    /// Neighbour `ni` went down: fail what was queued for it, forget its
    /// grants, tell upper layers (it and everything below it).
    #[inline(never)]
    fn neighbor_down(&mut self, ni: usize, s: &Stats) {
        let silent_ms = ns_to_ms(now_ns().saturating_sub(self.neighbors[ni].last_rx_ns));
        if self.neighbors[ni].up {
            self.log_peer(s, self.neighbors[ni].node, false, silent_ms);
        }
        let n = &mut self.neighbors[ni];
        let was_up = n.up;
        n.up = false;
        let mut failed = 0u64;
        for l in n.tx.iter_mut() {
            failed += l.msgs.len() as u64;
            l.msgs.clear();
        }
        failed += n.rdv_wait.len() as u64;
        n.rdv_wait.clear();
        n.granted = [None, None];
        n.owed = [None; MAX_WAITING_PER_PEER];
        n.queued_bytes = 0;
        self.wake_senders = true;
        s.msgs_failed.fetch_add(failed, Relaxed);
        let node = n.node;
        self.grants.forget_peer(node);
        if was_up {
            count(&s.peer_down);
            self.push_peer_event(s, node, false);
            let below = core::mem::take(&mut self.neighbors[ni].below);
            let me = self.node_id;
            for b in below.into_iter().filter(|&b| b != me) {
                self.push_peer_event(s, b, false);
            }
        }
        self.track_far_ion(s);
    }

    fn handle_ack(&mut self, k: &Knobs, _s: &Stats, ni: usize, lane: Lane, next: u32, sack: u64) {
        let rto_min = u64::from(k.rto_min_ms.load(Relaxed)) * 1000;
        let rto_max = u64::from(k.rto_max_ms.load(Relaxed)) * 1000;
        let l = &mut self.neighbors[ni].tx[lane.index()];
        l.win.rto.set_bounds(rto_min, rto_max.max(rto_min));
        let out = l.win.on_ack(next, sack, now_us());
        if sack != 0 {
            // Holes below selectively acked frames: fast retransmission.
            self.rtx_now = true;
        }
        if out.bogus || out.acked == 0 {
            return;
        }
        self.rtx_acked = true;
        // Drop fully acknowledged messages from the front.
        let base = l.win.base();
        let mut freed = 0usize;
        while let Some(m) = l.msgs.front() {
            let done =
                m.sent == m.frames && (base.wrapping_sub(m.first_seq) as i32) >= m.frames as i32;
            if !done {
                break;
            }
            freed += m.charge();
            let _ = l.msgs.pop_front();
        }
        let n = &mut self.neighbors[ni];
        n.queued_bytes = n.queued_bytes.saturating_sub(freed);
        n.acks_seen = n.acks_seen.wrapping_add(1);
        if freed > 0 && self.blocked_senders > 0 {
            self.wake_senders = true;
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn handle_data(
        &mut self,
        k: &Knobs,
        s: &Stats,
        ni: usize,
        lane: Lane,
        seq: u32,
        flags: u8,
        payload: &[u8],
    ) {
        let r = &mut self.neighbors[ni].rx[lane.index()];
        r.unacked += 1;
        if r.ack_due_ns == u64::MAX {
            r.ack_due_ns = now_ns().saturating_add(ack_delay_us(k) * 1000);
        }
        let class = r.win.classify(seq);
        if class != RxClass::InOrder {
            r.ack_now = true;
        }
        match class {
            RxClass::InOrder => {
                r.win.advance();
                self.consume(k, s, ni, lane, flags, payload);
                loop {
                    let r = &mut self.neighbors[ni].rx[lane.index()];
                    let Some(q) = r.win.pop_ready() else { break };
                    let slot = r.ahead.get_mut(q as usize % MAX_WINDOW);
                    let Some((bseq, bflags, bdata)) = slot.and_then(Option::take) else {
                        break;
                    };
                    if bseq != q {
                        break;
                    }
                    self.consume(k, s, ni, lane, bflags, &bdata);
                }
            }
            RxClass::Future => {
                let mut v = KVec::new();
                if (r.ahead.is_empty() && r.grow_ahead().is_err())
                    || v.extend_from_slice(payload, GFP_KERNEL).is_err()
                {
                    count(&s.drop_nomem);
                    return;
                }
                let Some(slot) = r.ahead.get_mut(seq as usize % MAX_WINDOW) else {
                    return;
                };
                r.win.mark(seq);
                *slot = Some((seq, flags, v));
            }
            RxClass::Duplicate => count(&s.duplicates),
            RxClass::OutOfWindow => count(&s.drop_out_of_window),
        }
    }

    /// One in-order frame of a lane: reassemble, deliver when complete.
    fn consume(&mut self, k: &Knobs, s: &Stats, ni: usize, lane: Lane, flags: u8, payload: &[u8]) {
        let max = k.max_msg_size.load(Relaxed) as usize;
        let r = &mut self.neighbors[ni].rx[lane.index()];
        let step = match r.reasm.feed(flags, payload, max) {
            Ok(step) => step,
            Err(e) => {
                r.current = None;
                count(match e {
                    ReasmError::TooLong => &s.drop_msg_too_long,
                    _ => &s.drop_reassembly,
                });
                if e == ReasmError::Interrupted {
                    // The new message starts with this frame.
                    self.consume(k, s, ni, lane, flags, payload);
                }
                return;
            }
        };
        if let Some(h) = step.start {
            let n = &mut self.neighbors[ni];
            // Its grant, if any, is used up either way (a buffer of the
            // wrong size is dropped).
            let granted = if lane == Lane::Bulk {
                n.granted
                    .iter_mut()
                    .find(|g| g.as_ref().is_some_and(|(id, _)| *id == h.id))
                    .and_then(Option::take)
                    .filter(|(_, buf)| buf.len() == h.len as usize)
                    .map(|(_, buf)| buf)
            } else {
                None
            };
            n.rx[lane.index()].drain_told = granted.is_none();
            let buf = match granted {
                Some(b) => b,
                // Every byte is written below before the message is
                // complete: the reassembler's steps cover it without a gap.
                None => match MsgBuf::for_filling(h.len as usize, GFP_KERNEL) {
                    Ok(b) => b,
                    Err(_) => {
                        count(&s.drop_nomem);
                        n.rx[lane.index()].reasm.reset();
                        return;
                    }
                },
            };
            n.rx[lane.index()].current = Some((h, buf));
        }
        let peer = self.neighbors[ni].node;
        let r = &mut self.neighbors[ni].rx[lane.index()];
        let Some((_, buf)) = r.current.as_mut() else {
            return;
        };
        if !step.data.is_empty() && buf.write_at(step.offset, step.data).is_err() {
            count(&s.drop_reassembly);
            r.current = None;
            r.reasm.reset();
            return;
        }
        if !r.drain_told && !step.complete {
            // Granted and mostly here: its sender's next message may be
            // granted now (grant.rs, "Early grants"), so that its grant
            // crosses the link while this one's last frames still arrive.
            let in_flight = 2 * k.window.load(Relaxed) as usize * step.data.len().max(1);
            if nearly_received(buf.len(), step.offset + step.data.len(), in_flight) {
                r.drain_told = true;
                let id = r.current.as_ref().map_or(0, |(h, _)| h.id);
                self.grants.draining(peer, id);
            }
        }
        if step.complete {
            if let Some((h, buf)) = r.current.take() {
                if lane == Lane::Bulk {
                    self.grants.complete(peer, h.id);
                }
                self.message_in(k, s, ni, h, buf);
            }
        }
    }

    /// A whole message arrived from neighbour `ni`.
    fn message_in(&mut self, k: &Knobs, s: &Stats, ni: usize, h: MsgHeader, buf: MsgBuf) {
        if !self.origin_ok(ni, h.origin) {
            self.forged_origin(s, ni, h.origin);
            return;
        }
        if h.channel == CHANNEL_TREENET && h.dst == self.node_id {
            self.control_in(k, s, ni, &buf);
            return;
        }
        let for_me = h.dst == self.node_id || h.dst == BROADCAST;
        let forward = h.dst != self.node_id;
        let Ok(buf) = Arc::new(buf, GFP_KERNEL) else {
            count(&s.drop_nomem);
            return;
        };
        // An ION relays between CNs only the channels that ask for it.
        if forward && self.role == Role::Ion && !self.relayed_by_ion(h.channel) {
            count(&s.drop_relay_refused);
        } else if forward && (h.dst == BROADCAST || h.origin != self.node_id) {
            let had_route = h.dst == BROADCAST || self.route(h.dst).is_some();
            if had_route && self.route_msg(k, s, h, buf.clone(), Some(ni)).is_ok() {
                if h.dst != BROADCAST {
                    count(&s.msgs_forwarded);
                }
            } else if h.dst != BROADCAST {
                count(&s.drop_no_route);
            }
        }
        if for_me {
            if usize::from(h.channel) < MAX_CHANNELS {
                let cs = &mut self.chan_stats[usize::from(h.channel)];
                cs.msgs_received += 1;
                cs.bytes_received += u64::from(h.len);
            }
            count(&s.msgs_received);
            s.bytes_received.fetch_add(u64::from(h.len), Relaxed);
            if h.dst == BROADCAST {
                count(&s.bcast_received);
                s.bcast_bytes_received.fetch_add(u64::from(h.len), Relaxed);
            }
            let ev = Event::Deliver {
                channel: h.channel,
                src: h.origin,
                msg: buf,
            };
            if self.events.push(ev, GFP_KERNEL).is_err() {
                count(&s.drop_nomem);
            }
        }
    }

    /// A message from neighbour `ni` claimed an origin it cannot carry
    /// ([`Inner::origin_ok`]): dropped, counted, and logged at most once
    /// every [`FORGED_LOG_INTERVAL_NS`].
    #[inline(never)]
    fn forged_origin(&mut self, s: &Stats, ni: usize, origin: u16) {
        count(&s.drop_forged_origin);
        let now = now_ns();
        if self.forged_logged_ns == 0
            || now.saturating_sub(self.forged_logged_ns) >= FORGED_LOG_INTERVAL_NS
        {
            self.forged_logged_ns = now;
            pr_warn!(
                "treenet: node {} sent a message as node {origin}, which it cannot carry: dropped (drop_forged_origin counts them)\n",
                self.neighbors[ni].node
            );
        }
    }

    /// Tells upper layers that `node` went up or down, or counts (and
    /// logs) that it could not.
    fn push_peer_event(&mut self, s: &Stats, node: u16, up: bool) {
        if self
            .events
            .push(Event::Peer { node, up }, GFP_KERNEL)
            .is_err()
        {
            count(&s.peer_events_lost);
            self.log_nomem("a peer event");
        }
    }

    /// Counts (and logs) bookkeeping that could not grow.
    fn engine_nomem(&mut self, s: &Stats, what: &str) {
        count(&s.engine_nomem);
        self.log_nomem(what);
    }

    fn log_nomem(&mut self, what: &str) {
        let now = now_ns();
        if self.nomem_logged_ns == 0
            || now.saturating_sub(self.nomem_logged_ns) >= FORGED_LOG_INTERVAL_NS
        {
            self.nomem_logged_ns = now;
            pr_warn!("treenet: no memory for {what} (peer_events_lost, engine_nomem count them)\n");
        }
    }

    /// A rendezvous control message from neighbour `ni`.
    #[inline(never)]
    fn control_in(&mut self, k: &Knobs, s: &Stats, ni: usize, buf: &MsgBuf) {
        let mut b = [0u8; 12];
        if buf.len() != 12 || buf.read_at(0, &mut b).is_err() {
            count(&s.drop_bad_control);
            return;
        }
        let id = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
        let len = u32::from_be_bytes([b[8], b[9], b[10], b[11]]);
        let peer = self.neighbors[ni].node;
        match b[0] {
            CTL_RTS => {
                if len as usize > k.max_msg_size.load(Relaxed) as usize {
                    count(&s.drop_msg_too_long);
                    self.answer_control(k, s, ni, CTL_REJECT, id, len);
                    return;
                }
                // A child carries the traffic of the nodes below it: it
                // gets their share of our grants too.
                let is_child = self.children().any(|i| i == ni);
                let n = &mut self.neighbors[ni];
                let weight = if is_child {
                    1 + u32::try_from(n.below.len()).unwrap_or(u32::MAX)
                } else {
                    1
                };
                let request = Request { peer, id, len };
                match self
                    .grants
                    .push_weighted(request, weight, &mut n.grant_finish)
                {
                    Ok(()) => {}
                    // A retransmitted request: the first one stands.
                    Err(GrantError::Duplicate) => count(&s.drop_bad_control),
                    // Never silently: the sender would wait forever.
                    Err(GrantError::Full | GrantError::PeerLimit) => {
                        count(&s.grants_refused);
                        self.answer_control(k, s, ni, CTL_REJECT, id, len);
                    }
                }
            }
            CTL_CTS | CTL_REJECT => {
                let n = &mut self.neighbors[ni];
                let Some(pos) = n.rdv_wait.iter().position(|m| m.header.id == id) else {
                    count(&s.drop_bad_control);
                    return;
                };
                let Ok(m) = n.rdv_wait.remove(pos) else {
                    return;
                };
                n.rts_out = n.rts_out.saturating_sub(1);
                n.acks_seen = n.acks_seen.wrapping_add(1);
                if b[0] == CTL_CTS {
                    if n.tx[Lane::Bulk.index()]
                        .msgs
                        .push_back(m, GFP_KERNEL)
                        .is_err()
                    {
                        count(&s.drop_nomem);
                    }
                } else {
                    n.queued_bytes = n.queued_bytes.saturating_sub(m.charge());
                    count(&s.msgs_failed);
                }
                self.request_next(k, s, ni);
            }
            _ => count(&s.drop_bad_control),
        }
    }
}

impl FastRx for Treenet {
    fn rx_fast(&self, link: usize, frame: &RxFrameRef<'_>) -> bool {
        let data = frame.data();
        if self.knobs.softirq_rx.load(Relaxed) == 0 || data.len() > SOFTIRQ_FRAME_MAX {
            return false;
        }
        // Only whole messages on channels that may answer are worth a look
        // (the rest costs no lock and no parse).
        let Some(m) = wire::peek_message(data) else {
            return false;
        };
        if usize::from(m.channel) >= MAX_CHANNELS
            || self.softirq_channels.load(Relaxed) & (1 << m.channel) == 0
        {
            return false;
        }
        self.take_in_softirq(link, frame, data, &m)
    }
}

impl Treenet {
    /// The receive softirq's part (see [`ChannelHandler::answer_in_softirq`]):
    /// a small message that its channel answers at once is taken and
    /// answered here, as the engine would, without waking the engine
    /// thread.  Everything else (and everything while a task holds the
    /// engine, or the engine has events to deliver) is left to the engine.
    /// Nothing changes before the answer and the room to queue it exist.
    /// `peeked` is the message as [`wire::peek_message`] read it from
    /// `data`: the handler looks at it first, so messages it would not
    /// answer cost no checksum.
    #[inline(never)]
    fn take_in_softirq(
        &self,
        link: usize,
        frame: &RxFrameRef<'_>,
        data: &[u8],
        peeked: &wire::PeekedMessage<'_>,
    ) -> bool {
        let k = &self.knobs;
        let s = &self.stats;
        // With bottom halves disabled (softirq, busy poll) this never
        // waits: `None` while a task owns the engine.
        let Some(mut g) = self.inner.try_lock() else {
            count(&s.softirq_busy);
            return false;
        };
        // Messages are delivered in order and to one handler at a time:
        // none while the engine has some to deliver or delivers.
        if !g.events.is_empty() || self.delivering.load(Relaxed) != 0 {
            return false;
        }
        let (channel, src) = (peeked.channel, peeked.origin);
        let Some(ci) = g.channels.iter().position(|c| c.id == channel) else {
            return false;
        };
        let below = g.is_below(src);
        let handler = &g.channels[ci].handler;
        if !handler.answers_in_softirq()
            || !handler.would_answer_in_softirq(channel, src, below, peeked.body)
        {
            return false;
        }
        let Some(li) = g
            .links
            .iter()
            .position(|l| matches!(l, Some(Link::Net(n)) if n.id() == link))
        else {
            return false;
        };
        // The frame checked now; it is the one the handler looked at.
        let Some(f) = g.fast_candidate(k, li, data) else {
            return false;
        };
        if (f.header.channel, f.header.origin) != (channel, src)
            || !core::ptr::eq(f.body, peeked.body)
        {
            return false;
        }
        // A forged origin is the engine's to count and drop.
        if !g.origin_ok(f.ni, src) {
            return false;
        }
        // Room for the longest answer (one frame), and its buffers, before
        // anything changes: an answer the handler gives is then always sent.
        let Some(ri) = g.route(src) else {
            return false;
        };
        let cap = SOFTIRQ_ANSWER_MAX.min(first_room(g.payload_for(k, g.neighbors[ri].link)));
        if g.neighbors[ri].queued_bytes > g.queue_bound(k, ri, cap) {
            return false;
        }
        let (Ok(mut buf), Ok(slot), Ok(())) = (
            MsgBuf::for_filling(cap, GFP_ATOMIC),
            UniqueArc::<MsgBuf>::new_uninit(GFP_ATOMIC),
            g.neighbors[ri].tx[Lane::Control.index()]
                .msgs
                .reserve_one(GFP_ATOMIC),
        ) else {
            count(&s.softirq_nomem);
            return false;
        };
        let mut out = [0u8; SOFTIRQ_ANSWER_MAX];
        let Some(n) =
            g.channels[ci]
                .handler
                .answer_in_softirq(channel, src, below, f.body, &mut out[..cap])
        else {
            return false;
        };
        // One page, written whole: neither step can fail.
        let n = n.min(cap);
        let _ = buf.truncate(n);
        let _ = buf.write_at(0, &out[..n]);
        let answer: Arc<MsgBuf> = slot.write(buf).into();
        let napi = frame.napi_id();
        if napi != 0 && self.busy_napi.load(Relaxed) != napi {
            self.busy_napi.store(napi, Relaxed);
        }
        g.take_fast(k, s, &f, now_ns());
        // Room was made above: queueing a one-frame message allocates
        // nothing more.
        if g.originate(k, s, channel, src, answer).is_err() {
            count(&s.drop_nomem);
        }
        count(&s.softirq_answers);
        // The answer goes now if the window allows (with the ack of the
        // frame it answers); anything else is the engine's.
        let _ = g.send_next(k, s, ri, Lane::Control, now_us(), true);
        // The rest is the engine thread's: frames the ack let go or that
        // wait for window (the answer's too, if it could not go), and
        // blocked senders for whom the ack made room.
        let more = g.has_unsent(ri) || g.has_unsent(f.ni) || !g.loop_frames.is_empty();
        // The ack the frame carried may have made the retransmission
        // deadline later (the last answer's tail-loss probe): planned
        // again, as a pass does, so the timer does not wake the thread
        // for nothing.
        if g.rtx_acked && !g.rtx_now {
            g.plan_retransmit();
        }
        let wake = core::mem::take(&mut g.wake_senders);
        if wake {
            g.progress_gen = g.progress_gen.wrapping_add(1);
        }
        self.rearm(&mut g);
        drop(g);
        if wake {
            self.progress.notify_all();
        }
        if more {
            self.kicker.kick_thread();
        }
        true
    }
}

impl ThreadBody for Treenet {
    fn kicker(&self) -> &Kicker {
        &self.kicker
    }

    fn run(&self, ctx: &ThreadCtx<'_>) {
        // When the last pass ended, if it left work to do at once.
        let mut left_work_at = None;
        while !ctx.should_stop() {
            let start = now_ns();
            if let Some(at) = left_work_at.take() {
                raise_us(
                    &self.peaks.engine_run_delay_max_us,
                    start.saturating_sub(at),
                );
            }
            let (wait, more) = self.pass(PassBy::Thread);
            let end = now_ns();
            raise_us(&self.peaks.engine_pass_max_us, end.saturating_sub(start));
            if more {
                left_work_at = Some(end);
                continue;
            }
            // Busy polling, if on: for `busy_poll_us` after the last frame
            // received, the next one is polled for rather than waited for.
            let us = self.knobs.busy_poll_us.load(Relaxed);
            if us != 0 {
                let until = self
                    .last_rx_ns
                    .load(Relaxed)
                    .saturating_add(u64::from(us) * 1000);
                if now_ns() < until {
                    self.busy_poll(None, until);
                }
            }
            ctx.wait(wait);
        }
    }
}
