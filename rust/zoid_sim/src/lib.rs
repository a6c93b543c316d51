// SPDX-License-Identifier: GPL-2.0

//! A deterministic discrete-event simulator of treenet at scale, on the host.
//!
//! N compute nodes (CNs) send messages to one I/O node (ION) over a tree of
//! links.  Per-hop reliability, fragmentation, reassembly and rendezvous
//! grants are zoid_proto's real code (`treenet::arq`, `treenet::frag`,
//! `treenet::grant`, `treenet::wire`), called the way
//! `drivers/treenet/engine.rs` calls them; the links, the clock and the
//! workload are simulated.  See `docs/sim.md`.
//!
//! Every message a CN sends is a forwarded call: a real zoid
//! `CallHeader` (`zoid::wire`) that the ION decodes, classifies and queues
//! in zoid's real `CallScheduler` (`zoid::sched`) for a pool of workers;
//! the reply echoes the call's tag and carries its errno.  Nodes can die
//! ([`Config::deaths`]): neighbours find out through hellos and
//! `peer_timeout`, the ION drops the dead CN's queued calls, and callers
//! get `ETIMEDOUT` in soft mode, as `drivers/zoid/client.rs` does.
//!
//! [`ssi`] runs ssi's coherence protocol the same way, on up to thousands
//! of nodes sharing one object.
//!
//! Everything derives from [`Config::seed`]: the same configuration gives
//! bit-identical [`Metrics`].

#![forbid(unsafe_code)]

pub mod rng;
mod sim;
pub mod ssi;
pub mod stats;

pub use sim::run;

/// Largest `window` treenet supports (zoid_proto's constant).
pub use zoid_proto::treenet::arq::MAX_WINDOW;

/// One simulation's parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Seed of every random choice (loss, start jitter, message ids).
    pub seed: u64,
    /// Compute nodes, 1..=256.
    pub cns: usize,
    /// Children per node in the tree: `>= cns` is a star (every CN a
    /// neighbour of the ION), smaller values make CNs relay for CNs below.
    pub fanout: usize,
    /// Messages each CN sends to the ION.
    pub messages: usize,
    /// Bytes per message.
    pub size: usize,
    /// Draw each message's length uniformly from `1..=size` (seeded)
    /// instead of sending `size` bytes every time.
    pub random_sizes: bool,
    /// Messages a CN has outstanding (sent, reply not yet received); 1 is
    /// ZOID's synchronous forwarded call.
    pub outstanding: usize,
    /// Payload bytes per frame (`packet_size`): 240 is ZOID's packet mode,
    /// 1484 an MTU of 1500, 8984 an MTU of 9000.
    pub payload: usize,
    /// Link-layer bytes per frame besides treenet's header and payload
    /// (0 for tree packets; 38 for Ethernet's preamble, header, FCS, gap).
    pub frame_overhead: usize,
    /// Messages of more frames than this go by rendezvous; `None` is eager
    /// only (the kernel's `ack_threshold=0`).
    pub ack_threshold: Option<usize>,
    /// Frames in flight per lane (`window`, at most [`MAX_WINDOW`]).
    pub window: usize,
    /// Large messages a receiver grants at once (`grant_slots`).
    pub grant_slots: usize,
    /// Bandwidth of every CN link, bytes per second (each direction).
    pub link_bw: u64,
    /// Bandwidth of the ION's port, bytes per second (each direction):
    /// every frame to or from the ION crosses it; the bottleneck.
    pub ion_bw: u64,
    /// Propagation plus per-hop processing latency, ns.
    pub latency_ns: u64,
    /// Loss probability of a frame on one hop, parts per million.
    pub loss_ppm: u32,
    /// ION worker threads serving calls (0: every call served at once).
    pub workers: usize,
    /// Service time of one call on a worker, ns, besides its bytes.
    pub service_ns: u64,
    /// Bytes per second a worker moves (the export's disk, per thread);
    /// 0: bytes cost no time.
    pub service_bw: u64,
    /// Bytes of the ION's reply to each bulk call.
    pub reply_size: usize,
    /// Percentage of calls that are small metadata calls (a `stat`, an
    /// `open`) instead of bulk writes of `size` bytes.
    pub small_percent: u32,
    /// Argument bytes of a small call.
    pub small_size: usize,
    /// Reply bytes of a small call.
    pub small_reply: usize,
    /// The ION's `small_bytes` knob: calls with at most this many argument
    /// bytes are scheduled in the small class, ahead of bulk calls; 0
    /// puts every call in one class (FIFO).
    pub small_bytes: u32,
    /// The scheduler's aging threshold (0: strict priorities).
    pub aging: u32,
    /// The ION's `max_per_cn` knob: calls one CN may have queued or
    /// running; more are refused with `EAGAIN`.
    pub max_per_cn: u32,
    /// The CN client's `timeout_ms` in soft mode, ns: a call not answered
    /// by then fails with `ETIMEDOUT`.  `None`: hard mode (wait forever).
    pub call_timeout_ns: Option<u64>,
    /// treenet's `peer_timeout_ms`, ns: a neighbour silent this long is
    /// down.  Hellos (every quarter of it, at least 10 ms) are simulated
    /// only when [`Config::deaths`] is not empty.
    pub peer_timeout_ns: u64,
    /// Nodes that die (stop sending and receiving for good), and when, ns.
    /// Node 0 is the ION.
    pub deaths: Vec<(usize, u64)>,
    /// `rto_min_ms`, in µs.
    pub rto_min_us: u64,
    /// `rto_max_ms`, in µs.
    pub rto_max_us: u64,
    /// `ack_delay_us`.
    pub ack_delay_us: u64,
    /// Messages of `size` bytes the ION sends to every CN at time 0
    /// (file broadcast, ssi invalidations); 0: none.
    pub broadcasts: usize,
    /// Send each broadcast as one unicast per CN instead of one treenet
    /// broadcast (`dst=0xffff`, copied by every node to its children).
    pub broadcast_as_unicast: bool,
    /// Simulated time after which the run stops (a stuck run is reported,
    /// not looped on forever), ns.
    pub time_limit_ns: u64,
}

impl Default for Config {
    /// 16 CNs in a star, 8 forwarded writes of 64 KiB each, ZOID's 240-byte
    /// packets on 350 MB/s links (Blue Gene/L's tree), the kernel's knob
    /// defaults (`ack_threshold=16`, `grant_slots=2`, `rto_min_ms=20`,
    /// `rto_max_ms=2000`, `ack_delay_us=2000`) but `window=128`, its default
    /// until 2026-12-04: 128 frames of 256 bytes cover this tree's round
    /// trip many times over (the kernel's 512 is for round trips of
    /// milliseconds under TCG), and the tables of docs/sim.md are made
    /// with it.
    fn default() -> Self {
        Self {
            seed: 1,
            cns: 16,
            fanout: 256,
            messages: 8,
            size: 64 << 10,
            random_sizes: false,
            outstanding: 1,
            payload: zoid_proto::treenet::wire::ZOID_PACKET_PAYLOAD,
            frame_overhead: 0,
            ack_threshold: Some(16),
            window: 128,
            grant_slots: 2,
            link_bw: 350_000_000,
            ion_bw: 350_000_000,
            latency_ns: 2_000,
            loss_ppm: 0,
            workers: 0,
            service_ns: 0,
            service_bw: 0,
            reply_size: 32,
            small_percent: 0,
            small_size: 64,
            small_reply: 128,
            small_bytes: 1024,
            aging: zoid_proto::zoid::sched::DEFAULT_AGING,
            max_per_cn: 64,
            call_timeout_ns: Some(30_000_000_000),
            peer_timeout_ns: 5_000_000_000,
            deaths: Vec::new(),
            rto_min_us: 20_000,
            rto_max_us: 2_000_000,
            ack_delay_us: 2_000,
            broadcasts: 0,
            broadcast_as_unicast: false,
            time_limit_ns: 600_000_000_000,
        }
    }
}

/// Results of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Metrics {
    /// Messages the CNs were to send.
    pub expected: u64,
    /// Distinct messages delivered to the ION.
    pub delivered: u64,
    /// Deliveries of a message already delivered (must be 0).
    pub duplicates: u64,
    /// Messages whose reply reached their CN.
    pub completed: u64,
    /// Payload bytes delivered to the ION (distinct messages).
    pub delivered_bytes: u64,
    /// Time of the last reply, ns.
    pub makespan_ns: u64,
    /// `delivered_bytes / makespan`, bytes per second.
    pub throughput: f64,
    /// `throughput / ion_bw`.
    pub ion_fraction: f64,
    /// Per CN: its bytes divided by the time its last reply arrived.
    pub per_cn: Vec<f64>,
    /// Jain's fairness index over `per_cn` (1 = perfectly fair).
    pub jain: f64,
    /// Median message latency (submission to reply), ns.
    pub p50_ns: u64,
    /// 99th percentile message latency, ns.
    pub p99_ns: u64,
    /// Frames put on a link, retransmissions and acks included.
    pub frames_sent: u64,
    /// Data frames retransmitted.
    pub retransmits: u64,
    /// Ack frames sent.
    pub acks_sent: u64,
    /// Frames lost on links.
    pub frames_lost: u64,
    /// Retransmission timeouts that expired.
    pub rto_expired: u64,
    /// Duplicate data frames received (dropped by the receive window).
    pub rx_duplicates: u64,
    /// Frames beyond the receive window (dropped).
    pub rx_out_of_window: u64,
    /// Reassembly errors (must be 0: the frames come from `frame_spec`).
    pub reasm_errors: u64,
    /// Rendezvous requests refused by a `GrantQueue` (answered with a
    /// reject: the message fails).  0 unless a sender breaks the protocol.
    pub grants_refused: u64,
    /// Largest queue of the ION's inbound port, frames.
    pub max_ion_queue: usize,
    /// Largest queue of any CN link (either direction), frames.
    pub max_link_queue: usize,
    /// Most requests waiting in any node's `GrantQueue`.
    pub max_grant_waiting: usize,
    /// Most out-of-order frames buffered in any receive lane.
    pub max_reorder: usize,
    /// Most messages queued at any node for one neighbour (all lanes and
    /// the rendezvous wait list).
    pub max_msgs_queued: usize,
    /// Broadcast messages the CNs were to receive (`broadcasts × cns`).
    pub bcast_expected: u64,
    /// Distinct broadcast messages delivered to CNs.
    pub bcast_delivered: u64,
    /// Deliveries of a broadcast message a CN already had (must be 0).
    pub bcast_duplicates: u64,
    /// When the last CN received the last broadcast message, ns.
    pub bcast_done_ns: u64,
    /// Frames the ION's port sent (data, retransmissions and acks).
    pub ion_out_frames: u64,
    /// Bytes the ION's port sent.
    pub ion_out_bytes: u64,
    /// Events processed.
    pub events: u64,
    /// Calls answered with errno 0.
    pub calls_ok: u64,
    /// Calls that failed with `ETIMEDOUT` (soft mode, no answer in time).
    pub calls_timed_out: u64,
    /// Calls the ION refused with `EAGAIN` (`max_per_cn` or its queue).
    pub calls_refused: u64,
    /// Calls of CNs that died: in flight at the death or never made.
    pub calls_abandoned: u64,
    /// Calls still waiting when the run ended (hard mode, or the time
    /// limit).
    pub calls_stuck: u64,
    /// Calls the ION's workers ran.
    pub calls_run: u64,
    /// Queued calls the ION dropped because their CN went down.
    pub calls_dropped: u64,
    /// Replies that arrived after their call had failed (dropped).
    pub stale_replies: u64,
    /// Most calls queued in the ION's scheduler at once.
    pub max_sched_queued: usize,
    /// Calls the ION's scheduler still tracked at the end (must be 0).
    pub sched_left: usize,
    /// Rendezvous requests waiting or granted at the end, all nodes
    /// (must be 0).
    pub grants_left: usize,
    /// Median and 99th percentile latency of small calls, ns.
    pub small_p50_ns: u64,
    /// See `small_p50_ns`.
    pub small_p99_ns: u64,
    /// Median and 99th percentile latency of bulk calls, ns.
    pub bulk_p50_ns: u64,
    /// See `bulk_p50_ns`.
    pub bulk_p99_ns: u64,
    /// Neighbours found down (each side counts).
    pub peer_down: u64,
    /// Longest time from a death to the last neighbour finding out, ns.
    pub detect_ns: u64,
    /// Queued messages dropped because their next hop was down.
    pub msgs_failed: u64,
}

impl Metrics {
    /// Every message delivered exactly once and answered.
    pub fn exactly_once(&self) -> bool {
        self.delivered == self.expected
            && self.duplicates == 0
            && self.completed == self.expected
            && self.bcast_delivered == self.bcast_expected
            && self.bcast_duplicates == 0
    }

    /// Every call the CNs were to make completed or failed with an error
    /// its caller saw, or died with its CN; none was answered twice, none
    /// is left waiting, and the ION holds nothing afterwards.
    pub fn every_call_accounted(&self) -> bool {
        self.calls_ok + self.calls_timed_out + self.calls_refused + self.calls_abandoned
            == self.expected
            && self.duplicates == 0
            && self.calls_stuck == 0
            && self.sched_left == 0
            && self.grants_left == 0
    }
}
