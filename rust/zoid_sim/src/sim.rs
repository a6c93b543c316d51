// SPDX-License-Identifier: GPL-2.0

//! The event loop and the per-node engines.
//!
//! Each node runs a model of `drivers/treenet/engine.rs`: per neighbour two
//! lanes (control, bulk) with zoid_proto's `SendWindow` / `RecvWindow`,
//! messages cut into frames by `frag::frame_spec` and reassembled by
//! `frag::Reassembler`, rendezvous requests queued in a `GrantQueue`.  The
//! engine's own glue (which lane, when to ack, when to scan for
//! retransmissions, RTS/CTS messages) is re-implemented here following
//! engine.rs; the engine runs in zero simulated time, every frame is
//! handled in its own "pass".
//!
//! On top, zoid: each CN message is a forwarded call whose real
//! `CallHeader` the ION decodes and queues in zoid's real `CallScheduler`
//! (as `drivers/zoid/server.rs` does); CN clients follow
//! `drivers/zoid/client.rs` (tags, soft timeouts).  Nodes may die: hellos
//! keep neighbours alive, silence past `peer_timeout` takes a neighbour
//! down as engine.rs `neighbor_down` does, and the ION then drops the dead
//! CN's queued calls (server.rs `node_gone`).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, VecDeque};

use zoid_proto::treenet::arq::{RecvWindow, RtoEstimator, RxClass, SendWindow, MAX_WINDOW};
use zoid_proto::treenet::frag::{frame_count, frame_spec, ReasmError, Reassembler};
use zoid_proto::treenet::grant::{
    nearly_received, GrantError, GrantQueue, Request, Waiting, MAX_WAITING_PER_PEER,
};
use zoid_proto::treenet::wire::{
    self, Lane, MsgHeader, BROADCAST, FLAG_FIRST, HEADER_LEN, MIN_PACKET_PAYLOAD, MSG_HEADER_LEN,
};

use zoid_proto::zoid::errno::EAGAIN;
use zoid_proto::zoid::sched::{classify, CallScheduler, QueuedCall};
use zoid_proto::zoid::wire::{CallHeader, MsgKind, HEADER_LEN as CALL_HEADER_LEN};

use crate::rng::Rng;
use crate::{stats, Config, Metrics};

/// engine.rs: an ack goes out at once when this many frames are unacked.
const ACK_EVERY: u32 = 2;
/// engine.rs `GRANT_QUEUE_MIN`: initial capacity of a node's rendezvous
/// `GrantQueue` (it grows to `MAX_WAITING_PER_PEER` per neighbour).
const GRANT_QUEUE_MIN: usize = 16;
/// engine.rs `request_next`: requests to send outstanding per neighbour.
const RTS_MAX: u32 = MAX_WAITING_PER_PEER as u32;
/// engine.rs `lane_tx`: RTO before the first RTT sample, µs.
const RTO_INITIAL_US: u64 = 200_000;
/// engine.rs: treenet's own channel (RTS/CTS travel on it).
const CHANNEL_TREENET: u16 = 0;
/// The upper layer's channel (zoid's forwarded calls).
const CHANNEL_APP: u16 = 4;
const CTL_RTS: u8 = 1;
const CTL_CTS: u8 = 2;
const CTL_REJECT: u8 = 3;
/// engine.rs `max_msg_size` upper bound.
const MAX_MSG: usize = 64 << 20;
/// Node index of the ION; CNs are 1..=cns.
const ION: usize = 0;
/// server.rs `QUEUE_CAP`: calls the ION's scheduler tracks at most.
const QUEUE_CAP: usize = 1024;
/// The zoidfs plug-in's id; the sim's calls are its stand-ins.
const PLUGIN_ZOIDFS: u16 = 4;
/// Function id of the sim's small (metadata) calls.
const FN_SMALL: u16 = 1;
/// Function id of the sim's bulk (write) calls.
const FN_BULK: u16 = 2;
/// engine.rs: a hello frame's bytes after the frame header (its fixed
/// part; the `below` list is not modelled).
const HELLO_LEN: usize = 16;

/// What a message means to the simulated upper layers (the sim carries no
/// message bytes beyond the message header).
#[derive(Clone, Copy, Debug)]
enum Content {
    /// A CN's forwarded call: its encoded zoid call header.
    Call { hdr: [u8; CALL_HEADER_LEN] },
    /// A rendezvous control message (engine.rs `send_control`).
    Ctl { op: u8, id: u32, len: u32 },
    /// The ION's reply: its encoded zoid call header (tag, errno).
    Reply { hdr: [u8; CALL_HEADER_LEN] },
    /// Broadcast message number `n` (sent as a broadcast or as unicasts).
    Bcast { n: u32 },
}

/// engine.rs `OutMsg`: a message queued for one neighbour.
#[derive(Clone, Copy, Debug)]
struct OutMsg {
    header: MsgHeader,
    content: Content,
    frames: usize,
    first_seq: u32,
    sent: usize,
}

#[derive(Clone, Copy, Debug)]
enum Body {
    Data {
        lane: Lane,
        seq: u32,
        flags: u8,
        header: MsgHeader,
        len: usize,
        content: Content,
    },
    Ack {
        lane: Lane,
        next: u32,
        sack: [u8; 8],
    },
    Hello,
}

/// One frame on the wire between two neighbours.
#[derive(Clone, Copy, Debug)]
struct Frame {
    from: usize,
    to: usize,
    bytes: usize,
    /// Stage of the route (link queue) the frame is in.
    hop: u8,
    body: Body,
}

struct TxLane {
    win: SendWindow,
    msgs: VecDeque<OutMsg>,
    timer_at: u64,
    timer_gen: u64,
}

struct RxLane {
    win: RecvWindow,
    reasm: Reassembler,
    ahead: Vec<Option<Frame>>,
    buffered: usize,
    current: Option<MsgHeader>,
    /// engine.rs `RxLane::drain_told`: `current` is not a granted message
    /// or its grant queue heard it is draining.
    drain_told: bool,
    unacked: u32,
    ack_now: bool,
    ack_due: u64,
    ack_gen: u64,
}

struct Peer {
    node: usize,
    /// Nodes below it, if it is a child (engine.rs learns them from its
    /// hellos): its rendezvous weight is one more.
    below: u32,
    /// Finish tag of its last rendezvous request here (engine.rs
    /// `Neighbor::grant_finish`).
    grant_finish: u64,
    /// engine.rs `Neighbor::up`: false once silent past `peer_timeout`
    /// (for good: the sim's deaths are final).
    up: bool,
    /// When a frame last came from it, ns.
    last_rx: u64,
    tx: [TxLane; 2],
    rx: [RxLane; 2],
    rdv_wait: VecDeque<OutMsg>,
    rts_out: u32,
    granted: Option<u32>,
}

struct Node {
    parent: Option<usize>,
    peers: Vec<Peer>,
    grants: GrantQueue<Vec<Waiting>>,
    next_id: u32,
}

/// A FIFO transmit queue with a serialisation rate.
struct Chan {
    bw: u64,
    queue: VecDeque<Frame>,
    busy: bool,
    max_len: usize,
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    Start(usize),
    Broadcast,
    TxDone(usize),
    Arrive(Frame),
    Rtx {
        node: usize,
        peer: usize,
        lane: usize,
        gen: u64,
    },
    AckDue {
        node: usize,
        peer: usize,
        lane: usize,
        gen: u64,
    },
    /// A worker finished the call in scheduler slot `handle`.
    Served {
        handle: u32,
    },
    /// A soft call's timeout (client.rs `wait_reply`).
    CallTimeout {
        cn: usize,
        tag: u32,
    },
    /// The node dies.
    Die(usize),
    /// engine.rs's timer pass: hellos out, silent neighbours down.
    Hello(usize),
}

struct Entry {
    t: u64,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.t, self.seq) == (o.t, o.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    /// Reversed: `BinaryHeap` is a max-heap, the earliest event comes first,
    /// ties in scheduling order.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.t, o.seq).cmp(&(self.t, self.seq))
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct App {
    sent: usize,
    inflight: usize,
    bytes: u64,
    finish: u64,
    /// client.rs `next_tag`.
    next_tag: u32,
}

/// A call waiting for its reply on a CN.
#[derive(Clone, Copy, Debug)]
struct Pending {
    start: u64,
    args: usize,
    small: bool,
}

/// server.rs `Work`: a call the ION holds, queued or running.
#[derive(Clone, Copy, Debug)]
struct Work {
    origin: usize,
    hdr: CallHeader,
    reply_len: usize,
}

struct Sim {
    cfg: Config,
    now: u64,
    seq: u64,
    heap: BinaryHeap<Entry>,
    rng: Rng,
    nodes: Vec<Node>,
    chans: Vec<Chan>,
    peer_idx: HashMap<(usize, usize), usize>,
    scratch: Vec<u8>,
    app: Vec<App>,
    /// Each CN's calls waiting for a reply, by (cn, tag).
    pending: HashMap<(usize, u32), Pending>,
    delivered: HashMap<(usize, u32), u32>,
    /// Broadcast messages each CN received: (cn, n) -> deliveries.
    bcast_seen: HashMap<(usize, u32), u32>,
    latencies: Vec<u64>,
    small_latencies: Vec<u64>,
    bulk_latencies: Vec<u64>,
    workers_busy: usize,
    /// The ION's scheduler (server.rs `Queue::sched`).
    sched: Box<CallScheduler<QUEUE_CAP>>,
    /// The calls it holds, by handle (server.rs `Queue::slots`).
    work: Vec<Option<Work>>,
    free_work: Vec<u32>,
    alive: Vec<bool>,
    /// When each node died (u64::MAX: alive).
    died_at: Vec<u64>,
    /// (node, dead neighbour) pairs not yet found down.
    undetected: usize,
    m: Metrics,
}

fn lane_tx(cfg: &Config) -> TxLane {
    let mut win = SendWindow::new(
        0,
        cfg.window,
        RtoEstimator::new(RTO_INITIAL_US, cfg.rto_min_us, cfg.rto_max_us),
    );
    // engine.rs `transmit`: the receiver's ack delay, for tail-loss probes.
    win.set_peer_ack_delay(cfg.ack_delay_us.min(cfg.rto_min_us / 4));
    TxLane {
        win,
        msgs: VecDeque::new(),
        timer_at: u64::MAX,
        timer_gen: 0,
    }
}

fn lane_rx(cfg: &Config) -> RxLane {
    RxLane {
        win: RecvWindow::new(0, cfg.window),
        reasm: Reassembler::new(),
        ahead: vec![None; MAX_WINDOW],
        buffered: 0,
        current: None,
        drain_told: false,
        unacked: 0,
        ack_now: false,
        ack_due: u64::MAX,
        ack_gen: 0,
    }
}

/// Runs one simulation to completion (or to `time_limit_ns`).
///
/// # Panics
///
/// If `cns` is not in 1..=256 or `payload` is below treenet's minimum.
pub fn run(cfg: &Config) -> Metrics {
    assert!((1..=256).contains(&cfg.cns), "cns must be 1..=256");
    assert!(cfg.payload >= MIN_PACKET_PAYLOAD, "payload below 64");
    let mut sim = Sim::new(cfg.clone());
    sim.run();
    sim.finish()
}

impl Sim {
    fn new(cfg: Config) -> Self {
        let n = cfg.cns;
        let fanout = cfg.fanout.max(1);
        let mut rng = Rng::new(cfg.seed);
        let mut nodes: Vec<Node> = (0..=n)
            .map(|i| Node {
                parent: (i > 0).then(|| if fanout >= n { ION } else { (i - 1) / fanout }),
                peers: Vec::new(),
                grants: GrantQueue::with_storage(
                    vec![Waiting::default(); GRANT_QUEUE_MIN],
                    cfg.grant_slots,
                ),
                next_id: rng.next_u64() as u32,
            })
            .collect();
        let mut peer_idx = HashMap::new();
        for i in 1..=n {
            let p = nodes[i].parent.unwrap_or(ION);
            for (a, b) in [(i, p), (p, i)] {
                // engine.rs `new_neighbor`: grow the grant queue first.
                let needed = (nodes[a].peers.len() + 1) * MAX_WAITING_PER_PEER;
                let g = &mut nodes[a].grants;
                if g.capacity() < needed {
                    let bigger = vec![Waiting::default(); needed.max(2 * g.capacity())];
                    let _ = g.replace_storage(bigger);
                }
                peer_idx.insert((a, b), nodes[a].peers.len());
                nodes[a].peers.push(Peer {
                    node: b,
                    below: 0,
                    grant_finish: 0,
                    up: true,
                    last_rx: 0,
                    tx: [lane_tx(&cfg), lane_tx(&cfg)],
                    rx: [lane_rx(&cfg), lane_rx(&cfg)],
                    rdv_wait: VecDeque::new(),
                    rts_out: 0,
                    granted: None,
                });
            }
        }
        // Every CN counts itself below each of its ancestors but the ION.
        for i in 1..=n {
            let mut x = i;
            while let Some(up) = nodes[x].parent {
                if x != i {
                    let at = peer_idx[&(up, x)];
                    nodes[up].peers[at].below += 1;
                }
                x = up;
            }
        }
        let chans = (0..2 * (n + 1))
            .map(|c| Chan {
                bw: if c < 2 { cfg.ion_bw } else { cfg.link_bw }.max(1),
                queue: VecDeque::new(),
                busy: false,
                max_len: 0,
            })
            .collect();
        let m = Metrics {
            expected: (n * cfg.messages) as u64,
            delivered: 0,
            duplicates: 0,
            completed: 0,
            delivered_bytes: 0,
            makespan_ns: 0,
            throughput: 0.0,
            ion_fraction: 0.0,
            per_cn: Vec::new(),
            jain: 1.0,
            p50_ns: 0,
            p99_ns: 0,
            frames_sent: 0,
            retransmits: 0,
            acks_sent: 0,
            frames_lost: 0,
            rto_expired: 0,
            rx_duplicates: 0,
            rx_out_of_window: 0,
            reasm_errors: 0,
            grants_refused: 0,
            max_ion_queue: 0,
            max_link_queue: 0,
            max_grant_waiting: 0,
            max_reorder: 0,
            max_msgs_queued: 0,
            bcast_expected: (n * cfg.broadcasts) as u64,
            bcast_delivered: 0,
            bcast_duplicates: 0,
            bcast_done_ns: 0,
            ion_out_frames: 0,
            ion_out_bytes: 0,
            events: 0,
            calls_ok: 0,
            calls_timed_out: 0,
            calls_refused: 0,
            calls_abandoned: 0,
            calls_stuck: 0,
            calls_run: 0,
            calls_dropped: 0,
            stale_replies: 0,
            max_sched_queued: 0,
            sched_left: 0,
            grants_left: 0,
            small_p50_ns: 0,
            small_p99_ns: 0,
            bulk_p50_ns: 0,
            bulk_p99_ns: 0,
            peer_down: 0,
            detect_ns: 0,
            msgs_failed: 0,
        };
        let mut sim = Self {
            scratch: vec![0; cfg.payload + MSG_HEADER_LEN],
            cfg,
            now: 0,
            seq: 0,
            heap: BinaryHeap::new(),
            rng,
            nodes,
            chans,
            peer_idx,
            app: vec![App::default(); n + 1],
            pending: HashMap::new(),
            delivered: HashMap::new(),
            bcast_seen: HashMap::new(),
            latencies: Vec::new(),
            small_latencies: Vec::new(),
            bulk_latencies: Vec::new(),
            workers_busy: 0,
            sched: Box::new(CallScheduler::new(0, 0)),
            work: Vec::new(),
            free_work: Vec::new(),
            alive: vec![true; n + 1],
            died_at: vec![u64::MAX; n + 1],
            undetected: 0,
            m,
        };
        sim.sched.set_max_per_cn(sim.cfg.max_per_cn);
        sim.sched.set_aging(sim.cfg.aging);
        for cn in 1..=n {
            let jitter = sim.rng.below(10_000);
            sim.at(jitter, Ev::Start(cn));
        }
        if sim.cfg.broadcasts > 0 {
            sim.at(0, Ev::Broadcast);
        }
        let deaths = sim.cfg.deaths.clone();
        for &(node, t) in &deaths {
            assert!(node <= n, "no such node to die");
            sim.at(t, Ev::Die(node));
        }
        if !deaths.is_empty() {
            for node in 0..=n {
                sim.at(0, Ev::Hello(node));
            }
        }
        sim
    }

    fn at(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Entry {
            t,
            seq: self.seq,
            ev,
        });
    }

    fn after(&mut self, dt: u64, ev: Ev) {
        self.at(self.now.saturating_add(dt), ev);
    }

    /// The engine's clock: wrapping µs, as `now_us()` in the kernel.
    fn now_us(&self) -> u32 {
        (self.now / 1000) as u32
    }

    fn run(&mut self) {
        while let Some(e) = self.heap.pop() {
            if e.t > self.cfg.time_limit_ns {
                break;
            }
            self.now = e.t;
            self.m.events += 1;
            match e.ev {
                Ev::Start(cn) => self.submit(cn),
                Ev::Broadcast => self.broadcast(),
                Ev::TxDone(c) => self.tx_done(c),
                Ev::Arrive(f) => self.arrive(f),
                Ev::Rtx { node, .. } | Ev::AckDue { node, .. } if !self.alive[node] => {}
                Ev::Rtx {
                    node,
                    peer,
                    lane,
                    gen,
                } => {
                    let l = &mut self.nodes[node].peers[peer].tx[lane];
                    if l.timer_gen == gen {
                        l.timer_at = u64::MAX;
                        self.retransmit(node, peer, lane);
                        self.arm_timer(node, peer, lane);
                    }
                }
                Ev::AckDue {
                    node,
                    peer,
                    lane,
                    gen,
                } => {
                    if self.nodes[node].peers[peer].rx[lane].ack_gen == gen {
                        self.maybe_ack(node, peer, lane, true);
                    }
                }
                Ev::Served { handle } => self.served(handle),
                Ev::CallTimeout { cn, tag } => self.call_timeout(cn, tag),
                Ev::Die(node) => self.die(node),
                Ev::Hello(node) => self.hello_tick(node),
            }
        }
    }

    fn finish(mut self) -> Metrics {
        let m = &mut self.m;
        m.makespan_ns = self.app.iter().map(|a| a.finish).max().unwrap_or(0);
        if m.makespan_ns > 0 {
            m.throughput = m.delivered_bytes as f64 * 1e9 / m.makespan_ns as f64;
        }
        m.ion_fraction = m.throughput / self.cfg.ion_bw as f64;
        m.per_cn = self.app[1..]
            .iter()
            .map(|a| {
                if a.finish == 0 {
                    0.0
                } else {
                    a.bytes as f64 * 1e9 / a.finish as f64
                }
            })
            .collect();
        // Fairness among the CNs that lived.
        let lived: Vec<f64> = m
            .per_cn
            .iter()
            .enumerate()
            .filter(|&(i, _)| self.alive[i + 1])
            .map(|(_, &x)| x)
            .collect();
        m.jain = stats::jain(&lived);
        for (v, p50, p99) in [
            (&mut self.latencies, &mut m.p50_ns, &mut m.p99_ns),
            (
                &mut self.small_latencies,
                &mut m.small_p50_ns,
                &mut m.small_p99_ns,
            ),
            (
                &mut self.bulk_latencies,
                &mut m.bulk_p50_ns,
                &mut m.bulk_p99_ns,
            ),
        ] {
            v.sort_unstable();
            *p50 = stats::percentile(v, 50);
            *p99 = stats::percentile(v, 99);
        }
        m.calls_stuck = self.pending.len() as u64;
        m.sched_left = if self.alive[ION] {
            self.sched.queued() + self.sched.running()
        } else {
            0
        };
        m.grants_left = self
            .nodes
            .iter()
            .enumerate()
            .filter(|&(i, _)| self.alive[i])
            .map(|(_, n)| n.grants.waiting() + n.grants.active())
            .sum();
        m.max_ion_queue = self.chans[0].max_len.max(self.chans[1].max_len);
        m.max_link_queue = self.chans[2..].iter().map(|c| c.max_len).max().unwrap_or(0);
        self.m
    }

    // ---- links -------------------------------------------------------

    fn parent(&self, n: usize) -> Option<usize> {
        self.nodes[n].parent
    }

    /// Link queues a frame crosses from `from` to its neighbour `to`:
    /// channel 0/1 are the ION's port (in/out), `2i`/`2i+1` CN `i`'s link
    /// to its parent (up/down).
    fn route_stages(&self, from: usize, to: usize) -> ([usize; 2], usize) {
        if self.parent(from) == Some(to) {
            if to == ION {
                ([2 * from, 0], 2)
            } else {
                ([2 * from, 0], 1)
            }
        } else if from == ION {
            ([1, 2 * to + 1], 2)
        } else {
            ([2 * to + 1, 0], 1)
        }
    }

    fn push_frame(&mut self, f: Frame) {
        self.m.frames_sent += 1;
        let (st, _) = self.route_stages(f.from, f.to);
        self.chan_push(st[0], f);
    }

    fn chan_push(&mut self, c: usize, f: Frame) {
        if c == 1 {
            self.m.ion_out_frames += 1;
            self.m.ion_out_bytes += f.bytes as u64;
        }
        let ch = &mut self.chans[c];
        ch.queue.push_back(f);
        ch.max_len = ch.max_len.max(ch.queue.len());
        if !ch.busy {
            self.chan_start(c);
        }
    }

    fn chan_start(&mut self, c: usize) {
        let ch = &mut self.chans[c];
        match ch.queue.front() {
            Some(f) => {
                ch.busy = true;
                let t = (f.bytes as u64 * 1_000_000_000).div_ceil(ch.bw);
                self.after(t, Ev::TxDone(c));
            }
            None => ch.busy = false,
        }
    }

    fn tx_done(&mut self, c: usize) {
        if let Some(mut f) = self.chans[c].queue.pop_front() {
            f.hop += 1;
            let (st, n) = self.route_stages(f.from, f.to);
            if f.hop == 1 && !self.alive[f.from] {
                // Still in the dead sender's own queue: gone with it.
            } else if usize::from(f.hop) < n {
                self.chan_push(st[usize::from(f.hop)], f);
            } else if self.rng.chance_ppm(self.cfg.loss_ppm) {
                self.m.frames_lost += 1;
            } else {
                self.after(self.cfg.latency_ns, Ev::Arrive(f));
            }
        }
        self.chan_start(c);
    }

    fn arrive(&mut self, f: Frame) {
        let Some(&p) = self.peer_idx.get(&(f.to, f.from)) else {
            return;
        };
        if !self.alive[f.to] {
            return;
        }
        let peer = &mut self.nodes[f.to].peers[p];
        if !peer.up {
            // engine.rs: a neighbour that went down comes back only
            // through a new session, and the sim's deaths are final.
            return;
        }
        peer.last_rx = self.now;
        match f.body {
            Body::Ack { lane, next, sack } => self.on_ack(f.to, p, lane.index(), next, &sack),
            Body::Data { .. } => self.on_data(f.to, p, f),
            Body::Hello => {}
        }
    }

    // ---- sending -----------------------------------------------------

    /// engine.rs `enqueue`: picks rendezvous, the bulk or the control lane.
    fn enqueue(&mut self, n: usize, p: usize, header: MsgHeader, content: Content) {
        if !self.nodes[n].peers[p].up {
            // engine.rs: no route, the send fails.
            self.m.msgs_failed += 1;
            return;
        }
        let frames = frame_count(header.len as usize, self.cfg.payload);
        let msg = OutMsg {
            header,
            content,
            frames,
            first_seq: 0,
            sent: 0,
        };
        let threshold = self.cfg.ack_threshold.unwrap_or(0);
        let peer = &mut self.nodes[n].peers[p];
        if threshold > 0 && frames > threshold {
            peer.rdv_wait.push_back(msg);
        } else if frames > threshold.max(1) {
            peer.tx[Lane::Bulk.index()].msgs.push_back(msg);
        } else {
            peer.tx[Lane::Control.index()].msgs.push_back(msg);
        }
        let queued = peer.rdv_wait.len() + peer.tx.iter().map(|l| l.msgs.len()).sum::<usize>();
        self.m.max_msgs_queued = self.m.max_msgs_queued.max(queued);
        self.request_next(n, p);
        self.transmit(n, p);
    }

    /// engine.rs `request_next`: a request to send for the next waiting
    /// large message, at most [`RTS_MAX`] outstanding.
    fn request_next(&mut self, n: usize, p: usize) {
        let peer = &mut self.nodes[n].peers[p];
        let waiting = peer.rdv_wait.len() as u32;
        if peer.rts_out >= waiting || peer.rts_out >= RTS_MAX {
            return;
        }
        let h = peer.rdv_wait[peer.rts_out as usize].header;
        peer.rts_out += 1;
        self.send_control(n, p, CTL_RTS, h.id, h.len);
    }

    /// engine.rs `send_control`: a 12-byte message on the control lane.
    fn send_control(&mut self, n: usize, p: usize, op: u8, id: u32, len: u32) {
        let peer = &mut self.nodes[n].peers[p];
        let header = MsgHeader {
            origin: n as u16,
            dst: peer.node as u16,
            channel: CHANNEL_TREENET,
            flags: 0,
            len: 12,
            id: 0,
        };
        peer.tx[Lane::Control.index()].msgs.push_back(OutMsg {
            header,
            content: Content::Ctl { op, id, len },
            frames: 1,
            first_seq: 0,
            sent: 0,
        });
        self.transmit(n, p);
    }

    /// engine.rs `transmit`: new frames while the windows allow, control
    /// lane first.
    fn transmit(&mut self, n: usize, p: usize) {
        let now_us = self.now_us();
        for lane in 0..2 {
            loop {
                let l = &mut self.nodes[n].peers[p].tx[lane];
                if !l.win.can_send() {
                    break;
                }
                let Some(m) = l.msgs.iter_mut().find(|m| m.sent < m.frames) else {
                    break;
                };
                let seq = l.win.on_send(now_us);
                if m.sent == 0 {
                    m.first_seq = seq;
                }
                m.sent += 1;
                if let Some(f) = self.build_frame(n, p, lane, seq) {
                    self.push_frame(f);
                }
            }
            self.arm_timer(n, p, lane);
        }
    }

    /// engine.rs `send_frame`: frame `seq` rebuilt from its message.
    fn build_frame(&self, n: usize, p: usize, lane: usize, seq: u32) -> Option<Frame> {
        let peer = &self.nodes[n].peers[p];
        let m = peer.tx[lane]
            .msgs
            .iter()
            .find(|m| m.sent > 0 && seq.wrapping_sub(m.first_seq) < m.sent as u32)?;
        let index = seq.wrapping_sub(m.first_seq) as usize;
        let spec = frame_spec(index, m.header.len as usize, self.cfg.payload)?;
        let first = if index == 0 { MSG_HEADER_LEN } else { 0 };
        Some(Frame {
            from: n,
            to: peer.node,
            bytes: HEADER_LEN + first + spec.len + self.cfg.frame_overhead,
            hop: 0,
            body: Body::Data {
                lane: Lane::ALL[lane],
                seq,
                flags: spec.flags,
                header: m.header,
                len: spec.len,
                content: m.content,
            },
        })
    }

    /// Schedules the lane's retransmission scan for its earliest deadline
    /// (an RTO, or a hole's fast retransmission), as engine.rs keeps
    /// `rtx_at` at the earliest deadline.
    fn arm_timer(&mut self, n: usize, p: usize, lane: usize) {
        let now_us = self.now_us();
        let l = &mut self.nodes[n].peers[p].tx[lane];
        let Some(d) = l.win.next_due_in(now_us, l.win.fast_after()) else {
            return;
        };
        let at = self.now + d * 1000;
        if at >= l.timer_at {
            return;
        }
        l.timer_gen += 1;
        l.timer_at = at;
        let gen = l.timer_gen;
        self.at(
            at,
            Ev::Rtx {
                node: n,
                peer: p,
                lane,
                gen,
            },
        );
    }

    /// engine.rs `retransmit` for one lane: RTO expiries and fast
    /// retransmission of holes below selectively acked frames.
    fn retransmit(&mut self, n: usize, p: usize, lane: usize) {
        let now_us = self.now_us();
        let l = &mut self.nodes[n].peers[p].tx[lane];
        if l.win.in_flight() == 0 {
            return;
        }
        let mut due = Vec::new();
        if l.win.due(now_us, l.win.fast_after(), |q| due.push(q)) {
            self.m.rto_expired += 1;
            l.win.on_timeout(now_us);
        }
        for q in due {
            self.m.retransmits += 1;
            self.nodes[n].peers[p].tx[lane].win.on_retransmit(q, now_us);
            if let Some(f) = self.build_frame(n, p, lane, q) {
                self.push_frame(f);
            }
        }
    }

    // ---- receiving ---------------------------------------------------

    /// engine.rs `handle_ack`.
    fn on_ack(&mut self, n: usize, p: usize, lane: usize, next: u32, sack: &[u8]) {
        let sack = wire::decode_ack(sack).unwrap_or(0);
        let now_us = self.now_us();
        let l = &mut self.nodes[n].peers[p].tx[lane];
        l.win.rto.set_bounds(
            self.cfg.rto_min_us,
            self.cfg.rto_max_us.max(self.cfg.rto_min_us),
        );
        let out = l.win.on_ack(next, sack, now_us);
        if !out.bogus && out.acked > 0 {
            let base = l.win.base();
            while let Some(m) = l.msgs.front() {
                let done = m.sent == m.frames
                    && (base.wrapping_sub(m.first_seq) as i32) >= m.frames as i32;
                if !done {
                    break;
                }
                l.msgs.pop_front();
            }
        }
        if sack != 0 {
            self.retransmit(n, p, lane);
            // engine.rs: the scan after it re-arms for the holes left.
            self.arm_timer(n, p, lane);
        }
        self.transmit(n, p);
    }

    /// engine.rs `handle_data`.
    fn on_data(&mut self, n: usize, p: usize, f: Frame) {
        let Body::Data { lane, seq, .. } = f.body else {
            return;
        };
        let li = lane.index();
        let delay = self.cfg.ack_delay_us.min(self.cfg.rto_min_us / 4) * 1000;
        let r = &mut self.nodes[n].peers[p].rx[li];
        r.unacked += 1;
        if r.ack_due == u64::MAX {
            r.ack_due = self.now + delay;
            r.ack_gen += 1;
            let (t, gen) = (r.ack_due, r.ack_gen);
            self.at(
                t,
                Ev::AckDue {
                    node: n,
                    peer: p,
                    lane: li,
                    gen,
                },
            );
        }
        let r = &mut self.nodes[n].peers[p].rx[li];
        let class = r.win.classify(seq);
        if class != RxClass::InOrder {
            r.ack_now = true;
        }
        match class {
            RxClass::InOrder => {
                r.win.advance();
                self.consume(n, p, li, f);
                loop {
                    let r = &mut self.nodes[n].peers[p].rx[li];
                    let Some(q) = r.win.pop_ready() else { break };
                    let Some(b) = r.ahead[q as usize % MAX_WINDOW].take() else {
                        break;
                    };
                    r.buffered -= 1;
                    self.consume(n, p, li, b);
                }
            }
            RxClass::Future => {
                r.win.mark(seq);
                r.ahead[seq as usize % MAX_WINDOW] = Some(f);
                r.buffered += 1;
                self.m.max_reorder = self.m.max_reorder.max(r.buffered);
            }
            RxClass::Duplicate => self.m.rx_duplicates += 1,
            RxClass::OutOfWindow => self.m.rx_out_of_window += 1,
        }
        self.maybe_ack(n, p, li, false);
    }

    /// engine.rs `send_acks` for one lane: at once when out of order or
    /// [`ACK_EVERY`] frames are unacked, else when the delayed ack is due.
    fn maybe_ack(&mut self, n: usize, p: usize, lane: usize, due: bool) {
        let peer = &mut self.nodes[n].peers[p];
        let to = peer.node;
        let r = &mut peer.rx[lane];
        if r.unacked == 0 && !r.ack_now {
            return;
        }
        if !due && !r.ack_now && r.unacked < ACK_EVERY {
            return;
        }
        r.unacked = 0;
        r.ack_now = false;
        r.ack_due = u64::MAX;
        r.ack_gen += 1;
        let f = Frame {
            from: n,
            to,
            bytes: HEADER_LEN + 8 + self.cfg.frame_overhead,
            hop: 0,
            body: Body::Ack {
                lane: Lane::ALL[lane],
                next: r.win.next_seq(),
                sack: wire::encode_ack(r.win.sack()),
            },
        };
        self.m.acks_sent += 1;
        self.push_frame(f);
    }

    /// engine.rs `consume`: one in-order frame through the real
    /// `Reassembler` (fed the real message header and dummy bytes).
    fn consume(&mut self, n: usize, p: usize, lane: usize, f: Frame) {
        let Body::Data {
            flags,
            header,
            len,
            content,
            ..
        } = f.body
        else {
            return;
        };
        let bytes = if flags & FLAG_FIRST != 0 {
            self.scratch[..MSG_HEADER_LEN].copy_from_slice(&header.encode());
            &self.scratch[..MSG_HEADER_LEN + len]
        } else {
            &self.scratch[..len]
        };
        let peer = &mut self.nodes[n].peers[p];
        let r = &mut peer.rx[lane];
        let step = match r.reasm.feed(flags, bytes, MAX_MSG) {
            Ok(s) => (s.start, s.complete, s.offset + s.data.len(), s.data.len()),
            Err(e) => {
                self.m.reasm_errors += 1;
                r.current = None;
                if e == ReasmError::Interrupted {
                    self.consume(n, p, lane, f);
                }
                return;
            }
        };
        if let Some(h) = step.0 {
            let granted = lane == Lane::Bulk.index() && peer.granted == Some(h.id);
            if granted {
                peer.granted = None;
            }
            peer.rx[lane].current = Some(h);
            peer.rx[lane].drain_told = !granted;
        }
        // engine.rs `consume`: a granted message mostly here lets its
        // sender's next one be granted early.
        let mut draining = None;
        if !step.1 && !peer.rx[lane].drain_told {
            if let Some(h) = peer.rx[lane].current {
                let in_flight = 2 * self.cfg.window * step.3.max(1);
                if nearly_received(h.len as usize, step.2, in_flight) {
                    peer.rx[lane].drain_told = true;
                    draining = Some((peer.node as u16, h.id));
                }
            }
        }
        if let Some((from, id)) = draining {
            self.nodes[n].grants.draining(from, id);
            self.pump_grants(n);
        }
        let peer = &mut self.nodes[n].peers[p];
        if step.1 {
            let Some(h) = peer.rx[lane].current.take() else {
                return;
            };
            if lane == Lane::Bulk.index() {
                let from = peer.node as u16;
                self.nodes[n].grants.complete(from, h.id);
                self.pump_grants(n);
            }
            self.message_in(n, p, h, content);
        }
    }

    /// engine.rs `message_in`: control, forward, or deliver.
    fn message_in(&mut self, n: usize, p: usize, h: MsgHeader, content: Content) {
        if h.dst == BROADCAST {
            // engine.rs: delivered here, and copied to the children.
            if let Content::Bcast { n: b } = content {
                self.bcast_deliver(n, b);
            }
            let from = self.nodes[n].peers[p].node;
            self.route_broadcast(n, h, content, Some(from));
        } else if h.channel == CHANNEL_TREENET && usize::from(h.dst) == n {
            self.control_in(n, p, content);
        } else if usize::from(h.dst) != n {
            self.route_msg(n, h, content);
        } else if n == ION {
            self.ion_deliver(h, content);
        } else if let Content::Reply { hdr } = content {
            self.cn_reply(n, &hdr);
        } else if let Content::Bcast { n: b } = content {
            self.bcast_deliver(n, b);
        }
    }

    /// engine.rs `control_in`: requests into the grant queue, grants move
    /// the waiting message to the bulk lane.
    fn control_in(&mut self, n: usize, p: usize, content: Content) {
        let Content::Ctl { op, id, len } = content else {
            return;
        };
        let node = &mut self.nodes[n];
        let peer = node.peers[p].node as u16;
        match op {
            CTL_RTS => {
                // engine.rs: weighted by the nodes below the requester.
                let weight = 1 + node.peers[p].below;
                let last = &mut node.peers[p].grant_finish;
                match node
                    .grants
                    .push_weighted(Request { peer, id, len }, weight, last)
                {
                    Ok(()) => {}
                    Err(GrantError::Duplicate) => {}
                    // engine.rs counts grants_refused and rejects.
                    Err(GrantError::Full | GrantError::PeerLimit) => {
                        self.m.grants_refused += 1;
                        self.send_control(n, p, CTL_REJECT, id, len);
                        self.transmit(n, p);
                    }
                }
                let node = &mut self.nodes[n];
                self.m.max_grant_waiting = self.m.max_grant_waiting.max(node.grants.waiting());
                self.pump_grants(n);
            }
            CTL_CTS | CTL_REJECT => {
                let pr = &mut node.peers[p];
                let Some(pos) = pr.rdv_wait.iter().position(|m| m.header.id == id) else {
                    return;
                };
                if let Some(m) = pr.rdv_wait.remove(pos) {
                    pr.rts_out = pr.rts_out.saturating_sub(1);
                    // A rejected message fails (engine.rs: msgs_failed).
                    if op == CTL_CTS {
                        pr.tx[Lane::Bulk.index()].msgs.push_back(m);
                    }
                }
                self.request_next(n, p);
                self.transmit(n, p);
            }
            _ => {}
        }
    }

    /// engine.rs `pump_grants`: grants while slots are free.
    fn pump_grants(&mut self, n: usize) {
        self.nodes[n].grants.set_slots(self.cfg.grant_slots);
        while let Some(r) = self.nodes[n].grants.next_grant() {
            let Some(&p) = self.peer_idx.get(&(n, usize::from(r.peer))) else {
                self.nodes[n].grants.complete(r.peer, r.id);
                continue;
            };
            self.nodes[n].peers[p].granted = Some(r.id);
            self.send_control(n, p, CTL_CTS, r.id, r.len);
        }
    }

    /// engine.rs `route` + `route_msg`: down towards a node below, else up.
    fn route_msg(&mut self, n: usize, h: MsgHeader, content: Content) {
        let dst = usize::from(h.dst);
        let mut x = dst;
        let mut next = self.parent(n);
        while let Some(up) = self.parent(x) {
            if up == n {
                next = Some(x);
                break;
            }
            x = up;
        }
        let Some(next) = next else {
            return;
        };
        if let Some(&p) = self.peer_idx.get(&(n, next)) {
            self.enqueue(n, p, h, content);
        }
    }

    /// engine.rs `route_msg` for `BROADCAST`: a copy to every child but
    /// the neighbour it came from.
    fn route_broadcast(&mut self, n: usize, h: MsgHeader, content: Content, from: Option<usize>) {
        let kids: Vec<usize> = (0..self.nodes[n].peers.len())
            .filter(|&p| {
                let node = self.nodes[n].peers[p].node;
                self.parent(node) == Some(n) && Some(node) != from
            })
            .collect();
        for p in kids {
            self.enqueue(n, p, h, content);
        }
    }

    // ---- upper layers ------------------------------------------------

    /// The ION sends every broadcast message, as one broadcast or as one
    /// unicast per CN.
    fn broadcast(&mut self) {
        for b in 0..self.cfg.broadcasts as u32 {
            let mut h = MsgHeader {
                origin: ION as u16,
                dst: BROADCAST,
                channel: CHANNEL_APP,
                flags: 0,
                len: self.cfg.size as u32,
                id: 0,
            };
            let content = Content::Bcast { n: b };
            if self.cfg.broadcast_as_unicast {
                for cn in 1..=self.cfg.cns {
                    h.dst = cn as u16;
                    h.id = self.nodes[ION].next_id;
                    self.nodes[ION].next_id = h.id.wrapping_add(1);
                    self.route_msg(ION, h, content);
                }
            } else {
                h.id = self.nodes[ION].next_id;
                self.nodes[ION].next_id = h.id.wrapping_add(1);
                self.route_broadcast(ION, h, content, None);
            }
        }
    }

    fn bcast_deliver(&mut self, cn: usize, b: u32) {
        let seen = self.bcast_seen.entry((cn, b)).or_insert(0);
        *seen += 1;
        if *seen > 1 {
            self.m.bcast_duplicates += 1;
            return;
        }
        self.m.bcast_delivered += 1;
        self.m.bcast_done_ns = self.now;
    }

    /// client.rs `start`: the CN's next calls, while fewer than
    /// `outstanding` wait.
    fn submit(&mut self, cn: usize) {
        if !self.alive[cn] {
            return;
        }
        while self.app[cn].inflight < self.cfg.outstanding.max(1)
            && self.app[cn].sent < self.cfg.messages
        {
            let app = &mut self.app[cn];
            let tag = app.next_tag;
            app.next_tag = tag.wrapping_add(1);
            app.sent += 1;
            app.inflight += 1;
            let small = self.cfg.small_percent > 0
                && self.rng.below(100) < u64::from(self.cfg.small_percent);
            let args = if small {
                self.cfg.small_size
            } else if self.cfg.random_sizes {
                1 + self.rng.below(self.cfg.size as u64) as usize
            } else {
                self.cfg.size
            };
            let call = CallHeader {
                plugin: PLUGIN_ZOIDFS,
                function: if small { FN_SMALL } else { FN_BULK },
                arg_len: args as u32,
                pid: cn as u32,
                ..CallHeader::new(MsgKind::Call, tag)
            };
            let mut hdr = [0u8; CALL_HEADER_LEN];
            call.encode(&mut hdr);
            self.pending.insert(
                (cn, tag),
                Pending {
                    start: self.now,
                    args,
                    small,
                },
            );
            if let Some(t) = self.cfg.call_timeout_ns {
                self.after(t, Ev::CallTimeout { cn, tag });
            }
            let id = self.nodes[cn].next_id;
            self.nodes[cn].next_id = id.wrapping_add(1);
            let h = MsgHeader {
                origin: cn as u16,
                dst: ION as u16,
                channel: CHANNEL_APP,
                flags: 0,
                len: (CALL_HEADER_LEN + args) as u32,
                id,
            };
            self.route_msg(cn, h, Content::Call { hdr });
        }
    }

    /// server.rs `call`: decode, classify, queue for a worker (or refuse
    /// with `EAGAIN`).
    fn ion_deliver(&mut self, h: MsgHeader, content: Content) {
        let key = (usize::from(h.origin), h.id);
        let seen = self.delivered.entry(key).or_insert(0);
        *seen += 1;
        if *seen > 1 {
            self.m.duplicates += 1;
            return;
        }
        self.m.delivered += 1;
        self.m.delivered_bytes += u64::from(h.len);
        let Content::Call { hdr } = content else {
            return;
        };
        let Ok(call) = CallHeader::decode(&hdr) else {
            return;
        };
        let origin = key.0;
        let reply_len = if call.function == FN_SMALL {
            self.cfg.small_reply
        } else {
            self.cfg.reply_size
        };
        let work = Work {
            origin,
            hdr: call,
            reply_len,
        };
        let handle = match self.free_work.pop() {
            Some(h) => {
                self.work[h as usize] = Some(work);
                h
            }
            None => {
                self.work.push(Some(work));
                (self.work.len() - 1) as u32
            }
        };
        let queued = QueuedCall {
            handle,
            cn: origin as u16,
            class: classify(call.arg_len, self.cfg.small_bytes, false),
            bytes: call.arg_len,
        };
        match self.sched.enqueue(queued) {
            Ok(()) => {
                self.m.max_sched_queued = self.m.max_sched_queued.max(self.sched.queued());
                self.start_workers();
            }
            Err(e) => {
                self.release_work(handle);
                self.send_reply(origin, &call, 0, e.errno());
            }
        }
    }

    fn release_work(&mut self, handle: u32) -> Option<Work> {
        let w = self.work.get_mut(handle as usize)?.take();
        if w.is_some() {
            self.free_work.push(handle);
        }
        w
    }

    /// server.rs workers: every idle worker takes the scheduler's next call.
    fn start_workers(&mut self) {
        while self.cfg.workers == 0 || self.workers_busy < self.cfg.workers {
            let Some(q) = self.sched.next() else {
                break;
            };
            self.workers_busy += 1;
            let bytes_ns = match self.cfg.service_bw {
                0 => 0,
                bw => (u64::from(q.bytes) * 1_000_000_000).div_ceil(bw),
            };
            self.after(
                self.cfg.service_ns + bytes_ns,
                Ev::Served { handle: q.handle },
            );
        }
    }

    /// server.rs `run_call` done: the reply goes out (treenet fails it if
    /// the CN is gone), the worker takes the next call.
    fn served(&mut self, handle: u32) {
        if !self.alive[ION] {
            return;
        }
        self.workers_busy -= 1;
        if let Some(w) = self.release_work(handle) {
            self.sched.done(w.origin as u16, w.hdr.arg_len);
            self.m.calls_run += 1;
            self.send_reply(w.origin, &w.hdr, w.reply_len, 0);
        }
        self.start_workers();
    }

    fn send_reply(&mut self, origin: usize, call: &CallHeader, len: usize, errno: i32) {
        let Some(reply) = call.reply_to(len as u32, errno) else {
            return;
        };
        let mut hdr = [0u8; CALL_HEADER_LEN];
        reply.encode(&mut hdr);
        let id = self.nodes[ION].next_id;
        self.nodes[ION].next_id = id.wrapping_add(1);
        let h = MsgHeader {
            origin: ION as u16,
            dst: origin as u16,
            channel: CHANNEL_APP,
            flags: 0,
            len: (CALL_HEADER_LEN + len) as u32,
            id,
        };
        self.route_msg(ION, h, Content::Reply { hdr });
    }

    /// client.rs: the reply wakes its caller (matched by tag); a reply to
    /// a call that already failed is stale.
    fn cn_reply(&mut self, cn: usize, hdr: &[u8; CALL_HEADER_LEN]) {
        let Ok(reply) = CallHeader::decode(hdr) else {
            return;
        };
        let Some(p) = self.pending.remove(&(cn, reply.tag)) else {
            self.m.stale_replies += 1;
            return;
        };
        self.m.completed += 1;
        if reply.errno == 0 {
            self.m.calls_ok += 1;
            let lat = self.now - p.start;
            self.latencies.push(lat);
            if p.small {
                self.small_latencies.push(lat);
            } else {
                self.bulk_latencies.push(lat);
            }
            self.app[cn].bytes += p.args as u64;
        } else if reply.errno == EAGAIN {
            self.m.calls_refused += 1;
        }
        self.call_ended(cn);
    }

    fn call_ended(&mut self, cn: usize) {
        let a = &mut self.app[cn];
        a.inflight -= 1;
        a.finish = self.now;
        self.submit(cn);
    }

    /// client.rs `wait_reply`, soft mode: no reply within the timeout.
    fn call_timeout(&mut self, cn: usize, tag: u32) {
        if !self.alive[cn] || self.pending.remove(&(cn, tag)).is_none() {
            return;
        }
        self.m.calls_timed_out += 1;
        self.call_ended(cn);
    }

    // ---- deaths ------------------------------------------------------

    /// The node stops for good: its calls die with it (a CN), or every
    /// call it held (the ION).
    fn die(&mut self, node: usize) {
        if !self.alive[node] {
            return;
        }
        self.alive[node] = false;
        self.died_at[node] = self.now;
        if node != ION {
            let mine: Vec<(usize, u32)> = self
                .pending
                .keys()
                .filter(|k| k.0 == node)
                .copied()
                .collect();
            for k in mine {
                self.pending.remove(&k);
                self.m.calls_abandoned += 1;
            }
            let a = &mut self.app[node];
            self.m.calls_abandoned += (self.cfg.messages - a.sent) as u64;
            a.sent = self.cfg.messages;
            a.inflight = 0;
        }
        self.undetected += self.nodes[node]
            .peers
            .iter()
            .filter(|p| self.alive[p.node])
            .count();
    }

    /// Whether anything is left that hellos must keep watching over.
    fn work_remaining(&self) -> bool {
        self.undetected > 0
            || (1..=self.cfg.cns).any(|cn| {
                self.alive[cn]
                    && (self.app[cn].inflight > 0 || self.app[cn].sent < self.cfg.messages)
            })
    }

    /// engine.rs timer pass: a hello to every neighbour, then every
    /// neighbour silent past `peer_timeout` goes down.
    fn hello_tick(&mut self, n: usize) {
        if !self.alive[n] {
            return;
        }
        let timeout = self.cfg.peer_timeout_ns;
        for p in 0..self.nodes[n].peers.len() {
            let peer = &self.nodes[n].peers[p];
            if !peer.up {
                continue;
            }
            if self.now.saturating_sub(peer.last_rx) > timeout {
                self.neighbor_down(n, p);
                continue;
            }
            let f = Frame {
                from: n,
                to: peer.node,
                bytes: HEADER_LEN + HELLO_LEN + self.cfg.frame_overhead,
                hop: 0,
                body: Body::Hello,
            };
            self.push_frame(f);
        }
        if self.work_remaining() {
            self.after((timeout / 4).max(10_000_000), Ev::Hello(n));
        }
    }

    /// engine.rs `neighbor_down`: its queued messages fail, its grants are
    /// forgotten, and upper layers hear that it (and every node below it)
    /// is gone: on the ION, zoid drops their queued calls.
    fn neighbor_down(&mut self, n: usize, p: usize) {
        let cfg = self.cfg.clone();
        let peer = &mut self.nodes[n].peers[p];
        peer.up = false;
        let gone = peer.node;
        let mut failed = peer.rdv_wait.len() as u64;
        peer.rdv_wait.clear();
        peer.rts_out = 0;
        peer.granted = None;
        for l in peer.tx.iter_mut() {
            failed += l.msgs.len() as u64;
            // A fresh window: nothing left to retransmit; a timer still
            // pending sees a newer generation and does nothing.
            let gen = l.timer_gen + 1;
            *l = lane_tx(&cfg);
            l.timer_gen = gen;
        }
        for r in peer.rx.iter_mut() {
            let gen = r.ack_gen + 1;
            *r = lane_rx(&cfg);
            r.ack_gen = gen;
        }
        self.m.msgs_failed += failed;
        self.m.peer_down += 1;
        self.nodes[n].grants.forget_peer(gone as u16);
        self.pump_grants(n);
        if !self.alive[gone] {
            self.undetected -= 1;
            self.m.detect_ns = self.m.detect_ns.max(self.now - self.died_at[gone]);
        }
        if n == ION {
            // The gone neighbour and every node whose route went through it.
            let lost: Vec<usize> = (1..=self.cfg.cns)
                .filter(|&x| {
                    let mut y = x;
                    loop {
                        if y == gone {
                            return true;
                        }
                        match self.parent(y) {
                            Some(up) if up != ION => y = up,
                            _ => return false,
                        }
                    }
                })
                .collect();
            for x in lost {
                self.node_gone(x);
            }
        }
    }

    /// server.rs `node_gone`: the CN's queued calls are dropped; its
    /// running calls finish and their replies fail in treenet.
    fn node_gone(&mut self, cn: usize) {
        let mut handles = Vec::new();
        self.m.calls_dropped += self.sched.drop_cn(cn as u16, |q| handles.push(q.handle)) as u64;
        for h in handles {
            self.release_work(h);
        }
    }
}
