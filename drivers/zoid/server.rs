// SPDX-License-Identifier: GPL-2.0

//! The ION side: a receive thread, a scheduler and a pre-threaded pool of
//! worker kernel threads that run plug-in calls for the pset's CNs.
//!
//! ```text
//!  treenet engine ──receive()──> inbox ──> zoid-rx thread
//!        │ small calls, inbox idle: ─────────────┤ (same path, no hop)
//!                                           │ attach: answer limits
//!                                           │ call: checks (pset, size,
//!                                           │   plug-in, per-CN cap), then
//!                                           │   inline (tiny) or enqueue
//!                                           v
//!                             CallScheduler (priority classes, FIFO)
//!                                           │ idle worker kicked
//!                                           v
//!                       zoid-w0 .. zoid-wN: dispatch, reply, done
//! ```
//!
//! On an ION with no call running, one idle worker also drives treenet
//! while it waits (`idle_drive`, [`treenet::drive_until`], as a CN's
//! caller does for its reply): a frame wakes that worker instead of
//! treenet's thread, the worker's engine pass delivers the call to this
//! server, and the call it queues is the worker's own to run.  A call then
//! costs the ION one thread switch, where the way through treenet's thread
//! costs two.
//!
//! A call that blocks (a read on an empty pipe) holds one worker only: the
//! others keep serving, so one CN's blocked call never stalls another's.
//!
//! A call of at most [`DIRECT_BYTES`] (of any size in the driving idle
//! worker) is checked and queued (or, if tiny and the plug-in allows it,
//! run inline) right in treenet's delivery context when nothing waits in
//! the inbox, saving the receive thread's wake-up; everything else, and
//! anything behind a queued message, goes through the receive thread in
//! arrival order.

use crate::answers::Answers;
use crate::call_ledger::Ledgers;
use crate::f2cn::F2cn;
use crate::job_ranks::Ranks;
use crate::plugin::{Caller, Plugin, Registry};
use crate::stats::{Histogram, Stats};
use crate::traffic::{self, header_of, Direction};
use crate::treenet;
use crate::zoid_kernel::cred::{Creds, MAX_GROUPS};
use crate::zoid_kernel::hooks::{ssi_hook, Hook};
use crate::zoid_kernel::kthread::{
    stack_left, KThread, Kicker, ThreadBody, ThreadCtx, DRIVE_STACK_MIN,
};
use crate::zoid_kernel::time::{ms_to_jiffies, now_ns};
use crate::zoid_proto::zoid::ledger::Admit;
use crate::zoid_proto::zoid::plugin::{DispatchError, Reply};
use crate::zoid_proto::zoid::sched::{
    classify, CallScheduler, Priority, QueuedCall, SchedError, DEFAULT_AGING,
};
use crate::zoid_proto::zoid::wire::{
    split_call, AttachReply, AttachRequest, CallHeader, Groups, MsgKind, ATTACH_REPLY_LEN,
    ATTACH_REQUEST_LEN, FLAG_ASYNC_NOREPLY, FLAG_PRIORITY, HEADER_LEN as CALL_HEADER_LEN,
};
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed, Release};
use kernel::sync::{Arc, Mutex};

/// Calls queued at most (all CNs together).
pub(crate) const QUEUE_CAP: usize = 1024;
/// Reply buffer a worker starts with; grown up to `max_reply` on demand.
const INITIAL_REPLY_BUF: usize = 64 * 1024;
/// Most worker threads.
pub(crate) const MAX_WORKERS: u32 = 64;
/// How long an idle worker drives treenet before it looks again at
/// whether this node is an ION (ms).
const IDLE_DRIVE_MS: u32 = 1000;

/// The server's run-time knobs (sysfs).
pub(crate) struct ServerKnobs {
    /// Worker threads wanted.
    pub(crate) workers: Atomic<u32>,
    /// Largest request accepted (header included); larger gets E2BIG.
    pub(crate) max_request: Atomic<u32>,
    /// Largest reply produced (header included); larger gets E2BIG.
    pub(crate) max_reply: Atomic<u32>,
    /// Calls one CN may have queued or running; more get EAGAIN.
    pub(crate) max_per_cn: Atomic<u32>,
    /// Calls one CN may run at once (its others wait, queued); 0: one
    /// fewer than the workers (at least 1), so a CN never holds them all.
    pub(crate) max_running_per_cn: Atomic<u32>,
    /// Requests up to this size whose function allows it run in the
    /// receive path, without a worker hop (0: never).
    pub(crate) inline_bytes: Atomic<u32>,
    /// Requests up to this size are scheduled in the small class.
    pub(crate) small_bytes: Atomic<u32>,
    /// 1: on an ION, an idle worker drives treenet (see the module's
    /// documentation); 0: idle workers only sleep.
    pub(crate) idle_drive: Atomic<u32>,
    /// 1: calls up to `inline_bytes` of functions a plug-in allows
    /// ([`Plugin::softirq_ok`]) run in treenet's receive softirq, which
    /// sends their reply at once; 0: never.
    pub(crate) softirq_calls: Atomic<u32>,
    /// Bytes of one CN's messages the receive thread's inbox holds at
    /// most (each weighed in whole pages); a call past it is answered
    /// `EAGAIN`, anything else dropped (`inbox_refused`).
    pub(crate) max_inbox_per_cn: Atomic<u32>,
    /// Bytes of requests one CN's queued and running calls hold at most
    /// (a CN with none may always send one); past it its calls get
    /// `EAGAIN` (`busy_bytes`).  Its answers waiting for room in its
    /// treenet queue are held to as many bytes, its oldest dropped past
    /// it (`replies_dropped_backlog`).
    pub(crate) max_bytes_per_cn: Atomic<u32>,
}

impl ServerKnobs {
    /// The calls one CN may run at once, `max_running_per_cn` resolved.
    pub(crate) fn running_per_cn(&self) -> u32 {
        match self.max_running_per_cn.load(Relaxed) {
            0 => self.workers.load(Relaxed).saturating_sub(1).max(1),
            n => n,
        }
    }

    fn new() -> Self {
        Self {
            workers: Atomic::new(4),
            max_request: Atomic::new((4 << 20) + 1024),
            max_reply: Atomic::new((4 << 20) + 1024),
            max_per_cn: Atomic::new(64),
            max_running_per_cn: Atomic::new(0),
            inline_bytes: Atomic::new(256),
            small_bytes: Atomic::new(1024),
            idle_drive: Atomic::new(1),
            softirq_calls: Atomic::new(1),
            max_inbox_per_cn: Atomic::new(16 << 20),
            max_bytes_per_cn: Atomic::new(64 << 20),
        }
    }
}

/// What the receive thread works on.
enum Inbound {
    /// A message from a node.
    Msg(u16, treenet::Message),
    /// A node became unreachable.
    Gone(u16),
}

/// The receive thread's inbox: messages in arrival order, and the bytes
/// each CN has in it (until the receive thread handled them).
struct Inbox {
    items: KVec<Inbound>,
    /// (CN, bytes): CNs with messages in the inbox or being handled.
    bytes: KVec<(u16, usize)>,
}

impl Inbox {
    fn bytes_of(&self, node: u16) -> usize {
        self.bytes.iter().find(|b| b.0 == node).map_or(0, |b| b.1)
    }

    /// Adds `n` to `node`'s bytes; `false` if there is no room to note it.
    fn charge(&mut self, node: u16, n: usize) -> bool {
        if let Some(b) = self.bytes.iter_mut().find(|b| b.0 == node) {
            b.1 += n;
            return true;
        }
        self.bytes.push((node, n), GFP_KERNEL).is_ok()
    }

    fn discharge(&mut self, node: u16, n: usize) {
        if let Some(i) = self.bytes.iter().position(|b| b.0 == node) {
            self.bytes[i].1 = self.bytes[i].1.saturating_sub(n);
            if self.bytes[i].1 == 0 {
                let _ = self.bytes.remove(i);
            }
        }
    }
}

/// What a message weighs in the inbox: the pages holding it.
fn inbox_weight(msg: &treenet::Message) -> usize {
    msg.len().max(1).div_ceil(kernel::page::PAGE_SIZE) * kernel::page::PAGE_SIZE
}

/// A call waiting for (or held by) a worker.
struct Work {
    caller: Caller,
    plugin: Arc<dyn Plugin>,
    function: u16,
    flags: u16,
    /// The whole request message (header, groups, arguments).
    msg: Request,
    /// Where the arguments start in `msg`.
    args_at: usize,
    enqueued_ns: u64,
}

/// How often the receive thread tries again to send the answers that
/// wait for room (ms).
const BACKLOG_RETRY_MS: u64 = 5;

/// Requests at least this long are read in place, from treenet's pages
/// mapped contiguously ([`treenet::Message::into_mapped`]), instead of
/// being copied into a buffer of their own: a 1 MiB write then costs the
/// ION no memset and no memcpy of its data before the plug-in runs.  Below
/// it a copy is cheaper than making and undoing a mapping.
const MAP_BYTES: usize = 16 * 1024;

// Mapping may sleep: the calls taken in treenet's thread's delivery
// context are always copied (the idle worker driving treenet, which runs
// what it takes, may map them).
const _: () = assert!(DIRECT_BYTES < MAP_BYTES);

/// A request's bytes: treenet's pages mapped, or a copy.
enum Request {
    Mapped(treenet::MappedMessage),
    Copied(KVVec<u8>),
}

impl Request {
    /// The bytes of `msg` (`ENOMEM`), mapped if it is large.
    fn of(msg: treenet::Message, stats: &Stats) -> Result<Self> {
        let msg = if msg.len() >= MAP_BYTES {
            match msg.into_mapped() {
                Ok(m) => {
                    stats.c.requests_mapped.fetch_add(1, Relaxed);
                    return Ok(Self::Mapped(m));
                }
                Err(msg) => {
                    stats.c.requests_map_failed.fetch_add(1, Relaxed);
                    msg
                }
            }
        } else {
            msg
        };
        let mut buf = KVVec::new();
        buf.resize(msg.len(), 0, GFP_KERNEL)?;
        msg.read_at(0, &mut buf)?;
        Ok(Self::Copied(buf))
    }
}

impl core::ops::Deref for Request {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::Mapped(m) => m,
            Self::Copied(b) => b,
        }
    }
}

/// The scheduler, on the heap (tens of KiB: never built on a kernel stack).
struct SchedBox(KBox<CallScheduler<QUEUE_CAP>>);

// SAFETY: `CallScheduler` documents that its all-zero bytes are a valid,
// empty scheduler (1-based slot links, `Priority::Urgent = 0`); every
// field is an integer, an array of integers or of such structs.
unsafe impl pin_init::Zeroable for Sched {}
type Sched = CallScheduler<QUEUE_CAP>;

impl SchedBox {
    fn new(max_per_cn: u32) -> Result<Self> {
        let mut b = KBox::init(pin_init::init_zeroed::<Sched>(), GFP_KERNEL)?;
        b.set_max_per_cn(max_per_cn);
        b.set_aging(DEFAULT_AGING);
        Ok(Self(b))
    }
}

impl core::ops::Deref for SchedBox {
    type Target = Sched;
    fn deref(&self) -> &Sched {
        &self.0
    }
}

impl core::ops::DerefMut for SchedBox {
    fn deref_mut(&mut self) -> &mut Sched {
        &mut self.0
    }
}

struct Queue {
    sched: SchedBox,
    /// Calls by scheduler handle (index).
    slots: KVec<Option<KBox<Work>>>,
    free: KVec<u32>,
    /// Workers waiting for work.
    idle: KVec<Arc<WorkerHandle>>,
    /// Workers running a call now.
    busy: u32,
}

/// State shared by the receive thread, the workers and sysfs.
#[pin_data]
pub(crate) struct ServerCore {
    pub(crate) knobs: Arc<ServerKnobs>,
    pub(crate) stats: Arc<Stats>,
    pub(crate) plugins: Arc<Registry>,
    /// File broadcast (its CN side runs in the receive thread).
    pub(crate) f2cn: Arc<F2cn>,
    /// Launched jobs' ranks here (launches and signals run in the receive
    /// thread).
    pub(crate) ranks: Arc<Ranks>,
    /// Wait time in the queue (µs, log2 buckets).
    pub(crate) queue_wait: Histogram,
    #[pin]
    inbox: Mutex<Inbox>,
    /// Messages pushed to the inbox and not handled yet.
    inbox_pending: Atomic<u32>,
    rx_kicker: Arc<Kicker>,
    #[pin]
    queue: Mutex<Queue>,
    /// The task of the idle worker driving treenet, 0 if none does
    /// ([`Worker::idle_wait`]; set and cleared under the queue's lock).
    driver: Atomic<usize>,
    /// Each CN's calls running and answered lately: a copy is not run.
    pub(crate) ledger: Arc<Ledgers>,
    /// Every answer to a CN goes out through it.
    answers: Arc<Answers>,
}

/// Calls up to this many bytes (header included) may skip the receive
/// thread: their copy is short enough for treenet's delivery context.
pub(crate) const DIRECT_BYTES: usize = 4096;

/// Sends a reply `msg` to `dst` and counts it (and a failure to send).
pub(crate) fn send_reply(stats: &Stats, dst: u16, msg: &[u8]) -> Result {
    stats.c.bytes_sent.fetch_add(msg.len() as u64, Relaxed);
    stats.c.msgs_sent.fetch_add(1, Relaxed);
    let sent = traffic::send(dst, msg, true);
    if sent.is_err() {
        stats.c.reply_send_failed.fetch_add(1, Relaxed);
    }
    sent
}

/// Sends plug-in `plugin`'s upcall `function` with `body` to CN `dst`
/// (zoidfs's recalls), in the priority class: it must not wait behind
/// bulk data.
pub(crate) fn send_upcall(dst: u16, plugin: u16, function: u16, body: &[u8]) -> Result {
    let mut msg = KVec::with_capacity(CALL_HEADER_LEN + body.len(), GFP_KERNEL)?;
    let mut head = [0u8; CALL_HEADER_LEN];
    CallHeader {
        plugin,
        function,
        arg_len: u32::try_from(body.len()).map_err(|_| E2BIG)?,
        ..CallHeader::new(MsgKind::Upcall, 0)
    }
    .encode(&mut head);
    msg.extend_from_slice(&head, GFP_KERNEL)?;
    msg.extend_from_slice(body, GFP_KERNEL)?;
    traffic::send(dst, &msg, true)
}

/// The caller's process and credentials as a call's header and groups
/// carry them.
fn creds_of(h: &CallHeader, groups: &Groups<'_>) -> Creds {
    let mut creds = Creds {
        pid: h.pid,
        uid: h.uid,
        gid: h.gid,
        groups: [0; MAX_GROUPS],
        ngroups: 0,
    };
    for (slot, g) in creds.groups.iter_mut().zip(groups.iter()) {
        *slot = g;
        creds.ngroups += 1;
    }
    creds
}

/// The positive errno of a kernel error (what a reply header carries).
fn pos(e: Error) -> i32 {
    -e.to_errno()
}

/// A reply under construction: the header room followed by the plug-in's
/// results, so the whole message is sent from one buffer.
pub(crate) fn reply_header(hdr: &CallHeader, errno: i32, arg_len: usize) -> [u8; CALL_HEADER_LEN] {
    let mut out = [0u8; CALL_HEADER_LEN];
    CallHeader {
        kind: MsgKind::Reply,
        flags: 0,
        arg_len: arg_len as u32,
        errno,
        ..*hdr
    }
    .encode(&mut out);
    out
}

impl ServerCore {
    /// Sends an answer to CN `dst` without waiting ([`Answers::answer`]):
    /// the failure to send one is counted there.
    fn answer(&self, dst: u16, bytes: &[u8], tag: Option<u32>) {
        self.answers.answer(dst, bytes, tag);
    }

    /// Answers a message with `errno` alone, from the receive path.
    fn send_error(&self, dst: u16, hdr: &CallHeader, errno: i32, tag: Option<u32>) {
        let out = reply_header(hdr, errno, 0);
        self.stats.c.errors_sent.fetch_add(1, Relaxed);
        self.answer(dst, &out, tag);
    }

    /// Answers a call admitted to the ledger with `errno` alone: the call
    /// ends there.
    fn fail_call(&self, dst: u16, hdr: &CallHeader, errno: i32) {
        self.send_error(dst, hdr, errno, Some(hdr.tag));
    }

    /// Takes a received message (treenet's delivery context, which
    /// treenet serialises): a small call is handled here when nothing waits
    /// in the inbox; the rest is queued for the receive thread.  In the
    /// idle worker that drives treenet (which has nothing else to do, and
    /// runs the call next) a call of any size is.
    pub(crate) fn deliver(&self, src: u16, msg: treenet::Message) {
        let here = msg.len() <= DIRECT_BYTES
            || self.driver.load(Relaxed) == kernel::task::Task::current_raw() as usize;
        if here && self.inbox_pending.load(Relaxed) == 0 {
            if let Some(hdr) = header_of(&msg).filter(|h| h.kind == MsgKind::Call) {
                self.stats.c.calls_direct.fetch_add(1, Relaxed);
                self.count_received(&msg);
                self.call(src, &hdr, msg);
                return;
            }
        }
        self.push(Inbound::Msg(src, msg));
    }

    /// Runs a call in treenet's receive softirq and writes its reply into
    /// `out` (`None`: only whether it would; see
    /// [`treenet::Handler::answer_in_softirq`]): a call of at most
    /// `inline_bytes` from a CN of this ION's pset to a function its
    /// plug-in allows there ([`Plugin::softirq_ok`]), while `softirq_calls`
    /// is 1 and nothing waits in the inbox (which may hold that CN's
    /// attach or exit news).  Such a function is pure and quick, so the
    /// call skips the ledger: a copy the CN sends again runs again.
    /// Anything else is left to [`ServerCore::deliver`], unchanged.
    pub(crate) fn answer_in_softirq(
        &self,
        src: u16,
        below: bool,
        msg: &[u8],
        out: Option<&mut [u8]>,
    ) -> Option<usize> {
        let k = &self.knobs;
        if k.softirq_calls.load(Relaxed) == 0
            || !below
            || self.inbox_pending.load(Relaxed) != 0
            || msg.len() > k.inline_bytes.load(Relaxed) as usize
            || msg.len() > k.max_request.load(Relaxed) as usize
        {
            return None;
        }
        let (h, groups, args) = split_call(msg).ok()?;
        if h.kind != MsgKind::Call || h.flags & FLAG_ASYNC_NOREPLY != 0 {
            return None;
        }
        self.plugins
            .with_softirq(h.plugin, |plugin| {
                if !plugin.softirq_ok(h.function) {
                    return None;
                }
                let Some(out) = out else {
                    return Some(0);
                };
                // No reply over max_reply, as on the worker's path.
                let max_reply = k.max_reply.load(Relaxed) as usize;
                let room = out.len().min(max_reply);
                let out = &mut out[..room];
                if out.len() < CALL_HEADER_LEN {
                    return None;
                }
                let start = now_ns();
                // Not deferrable, no ledger: the reply is the one below.
                let caller = Caller::new(
                    src,
                    creds_of(&h, &groups),
                    &h,
                    false,
                    self.stats.clone(),
                    None,
                );
                let (head, body) = out.split_at_mut(CALL_HEADER_LEN);
                let result = match plugin.dispatch(&caller, h.function, args, body) {
                    // The plug-in has not run: a worker runs it, with room.
                    Err(DispatchError::ReplyTooLarge { .. }) => return None,
                    r => r.map_err(|e| e.errno()),
                };
                let (errno, len) = call_done(&self.stats, &h, result, start);
                head.copy_from_slice(&reply_header(&h, errno, len));
                ssi_hook!(
                    zoid_hook_zoid_dispatch,
                    Hook::ZoidDispatch,
                    (u64::from(h.plugin) << 16) | u64::from(h.function),
                    u64::from(src)
                );
                let c = &self.stats.c;
                c.msgs_received.fetch_add(1, Relaxed);
                c.bytes_received.fetch_add(msg.len() as u64, Relaxed);
                c.calls_received.fetch_add(1, Relaxed);
                c.calls_softirq.fetch_add(1, Relaxed);
                c.msgs_sent.fetch_add(1, Relaxed);
                c.bytes_sent
                    .fetch_add((CALL_HEADER_LEN + len) as u64, Relaxed);
                // (treenet sends the answer: counted here as zoid's.)
                let traffic = &traffic::TRAFFIC;
                traffic.count(Direction::Received, Some(&h), msg.len());
                traffic.count_bytes(Direction::Sent, head, CALL_HEADER_LEN + len);
                Some(CALL_HEADER_LEN + len)
            })
            .flatten()
    }

    /// Queues the news that `node` is unreachable (engine context).
    pub(crate) fn deliver_gone(&self, node: u16) {
        self.push(Inbound::Gone(node));
    }

    fn push(&self, item: Inbound) {
        // A CN's messages are weighed against its share of the inbox
        // (news of a node gone, and an ION's messages to a CN, are not).
        let charged = match &item {
            Inbound::Msg(src, msg) if treenet::is_below(*src) => Some((*src, inbox_weight(msg))),
            _ => None,
        };
        let mut inbox = self.inbox.lock();
        if let Some((src, n)) = charged {
            let max = self.knobs.max_inbox_per_cn.load(Relaxed) as usize;
            if inbox.bytes_of(src).saturating_add(n) > max {
                drop(inbox);
                if let Inbound::Msg(src, msg) = item {
                    self.refuse_over_budget(src, &msg);
                }
                return;
            }
        }
        let charged_ok = charged.is_none_or(|(src, n)| inbox.charge(src, n));
        if !charged_ok || inbox.items.reserve(1, GFP_KERNEL).is_err() {
            if let Some((src, n)) = charged.filter(|_| charged_ok) {
                inbox.discharge(src, n);
            }
            drop(inbox);
            self.stats.c.dropped_nomem.fetch_add(1, Relaxed);
            return;
        }
        // Within the room just made.
        if inbox.items.push_within_capacity(item).is_err() {
            if let Some((src, n)) = charged {
                inbox.discharge(src, n);
            }
            drop(inbox);
            self.stats.c.dropped_nomem.fetch_add(1, Relaxed);
            return;
        }
        self.inbox_pending.fetch_add(1, Relaxed);
        drop(inbox);
        self.rx_kicker.kick();
    }

    /// A message of a CN over its share of the inbox: a call is answered
    /// `EAGAIN` at once (without waiting), the rest dropped; counted.
    fn refuse_over_budget(&self, src: u16, msg: &treenet::Message) {
        self.stats.c.inbox_refused.fetch_add(1, Relaxed);
        if let Some(hdr) = header_of(msg).filter(|h| h.kind == MsgKind::Call) {
            if hdr.flags & FLAG_ASYNC_NOREPLY == 0 {
                self.send_error(src, &hdr, pos(EAGAIN), None);
            }
        }
    }

    /// A CN went down or detached: its queued calls are dropped and every
    /// plug-in releases what it held.
    pub(crate) fn node_gone(&self, node: u16) {
        // The calls are freed after the queue's lock (a mapped request
        // unmaps); one that finds no room in `dropped` is freed under it.
        let mut dropped = KVec::new();
        let mut nomem = 0u64;
        let n = {
            let mut q = self.queue.lock();
            let Queue {
                sched, slots, free, ..
            } = &mut *q;
            sched.drop_cn(node, |call| {
                let handle = call.handle;
                if let Some(w) = slots.get_mut(handle as usize).and_then(Option::take) {
                    if dropped.push(w, GFP_ATOMIC).is_err() {
                        nomem += 1;
                    }
                    // In the room `Queue::store` kept.
                    if free.push_within_capacity(handle).is_err() {
                        nomem += 1;
                    }
                }
            })
        };
        self.stats.c.calls_dropped.fetch_add(n as u64, Relaxed);
        self.stats.c.dropped_nomem.fetch_add(nomem, Relaxed);
        drop(dropped);
        self.answers.drop_node(node);
        // Replies may have been lost with the session: copies run.
        self.ledger.forget(node);
        self.plugins.node_gone(node);
        self.f2cn.node_gone(node);
    }

    fn count_received(&self, msg: &treenet::Message) {
        self.stats.c.msgs_received.fetch_add(1, Relaxed);
        self.stats
            .c
            .bytes_received
            .fetch_add(msg.len() as u64, Relaxed);
    }

    // Not inlined into the receive thread's loop (see `Answers::flush`).
    #[inline(never)]
    fn handle(&self, src: u16, msg: treenet::Message) {
        self.count_received(&msg);
        let Some(hdr) = header_of(&msg) else {
            self.stats.c.malformed.fetch_add(1, Relaxed);
            return;
        };
        match hdr.kind {
            MsgKind::Attach => self.attach(src, &hdr, &msg),
            MsgKind::Call => self.call(src, &hdr, msg),
            MsgKind::ProcessExit => {
                let mut pid = [0u8; 4];
                if msg.read_at(CALL_HEADER_LEN, &mut pid).is_ok() {
                    self.stats.c.process_exits.fetch_add(1, Relaxed);
                    self.plugins.process_exit(src, u32::from_be_bytes(pid));
                } else {
                    self.stats.c.malformed.fetch_add(1, Relaxed);
                }
            }
            MsgKind::Detach => self.node_gone(src),
            MsgKind::Cancel => {
                // Counted only: a cancelled call still runs, and its reply
                // is stale on the CN.  Dropping it unrun would part the
                // ION's state from the CN's when it was a close (an open
                // file left here) or a relaxed open's release.
                self.stats.c.cancels.fetch_add(1, Relaxed);
            }
            MsgKind::FileBegin | MsgKind::FileData | MsgKind::FileCommit | MsgKind::FileAbort => {
                self.f2cn.receive(src, &hdr, &msg);
            }
            MsgKind::JobLaunch | MsgKind::JobSignal => self.ranks.receive(src, &hdr, msg),
            // Stream messages and ends go to their side directly.
            MsgKind::JobOutput
            | MsgKind::JobInput
            | MsgKind::JobInputEnd
            | MsgKind::JobCredit
            | MsgKind::JobExit => {
                self.stats.c.malformed.fetch_add(1, Relaxed);
            }
            // Answers go to the client and to f2cn's sender directly.
            MsgKind::Reply | MsgKind::AttachReply | MsgKind::FileAck | MsgKind::Upcall => {
                self.stats.c.malformed.fetch_add(1, Relaxed);
            }
        }
    }

    fn attach(&self, src: u16, hdr: &CallHeader, msg: &treenet::Message) {
        if !treenet::is_below(src) {
            self.stats.c.refused_foreign.fetch_add(1, Relaxed);
            self.send_error(src, hdr, pos(EACCES), None);
            return;
        }
        let mut buf = [0u8; ATTACH_REQUEST_LEN];
        if msg.read_at(CALL_HEADER_LEN, &mut buf).is_err() || AttachRequest::decode(&buf).is_err() {
            self.stats.c.malformed.fetch_add(1, Relaxed);
            self.send_error(src, hdr, pos(EPROTO), None);
            return;
        }
        let k = &self.knobs;
        let reply = AttachReply {
            proto: crate::zoid_proto::version::SUITE_VERSION.to_wire(),
            max_request: k.max_request.load(Relaxed),
            max_reply: k.max_reply.load(Relaxed),
            ack_threshold: 0,
            workers: k.workers.load(Relaxed),
            max_outstanding: k.max_per_cn.load(Relaxed),
        };
        let mut out = [0u8; CALL_HEADER_LEN + ATTACH_REPLY_LEN];
        let h2 = CallHeader {
            kind: MsgKind::AttachReply,
            arg_len: ATTACH_REPLY_LEN as u32,
            errno: 0,
            ..*hdr
        };
        let mut hb = [0u8; CALL_HEADER_LEN];
        h2.encode(&mut hb);
        out[..CALL_HEADER_LEN].copy_from_slice(&hb);
        out[CALL_HEADER_LEN..].copy_from_slice(&reply.encode());
        self.stats.c.attaches.fetch_add(1, Relaxed);
        self.answer(src, &out, None);
    }

    fn call(&self, src: u16, hdr: &CallHeader, msg: treenet::Message) {
        self.stats.c.calls_received.fetch_add(1, Relaxed);
        ssi_hook!(
            zoid_hook_zoid_dispatch,
            Hook::ZoidDispatch,
            (u64::from(hdr.plugin) << 16) | u64::from(hdr.function),
            u64::from(src)
        );
        if !treenet::is_below(src) {
            self.stats.c.refused_foreign.fetch_add(1, Relaxed);
            self.send_error(src, hdr, pos(EACCES), None);
            return;
        }
        // A copy the CN sent again (hard mode, after its timeout): the
        // first copy's reply, under the same tag, answers it.
        match self.ledger.admit(src, hdr.tag) {
            Admit::New => {}
            Admit::Untracked => {
                self.stats.c.ledger_untracked.fetch_add(1, Relaxed);
            }
            Admit::Running => {
                self.stats.c.copies_running.fetch_add(1, Relaxed);
                return;
            }
            Admit::Answered => {
                self.stats.c.copies_answered.fetch_add(1, Relaxed);
                return;
            }
        }
        if msg.len() > self.knobs.max_request.load(Relaxed) as usize {
            self.stats.c.e2big.fetch_add(1, Relaxed);
            self.fail_call(src, hdr, pos(E2BIG));
            return;
        }
        let Some(plugin) = self.plugins.get(hdr.plugin) else {
            self.stats.c.enosys.fetch_add(1, Relaxed);
            self.fail_call(src, hdr, pos(ENOSYS));
            return;
        };
        let Ok(buf) = Request::of(msg, &self.stats) else {
            self.stats.c.dropped_nomem.fetch_add(1, Relaxed);
            self.fail_call(src, hdr, pos(ENOMEM));
            return;
        };
        let (caller, args_at) = match split_call(&buf) {
            Ok((h, groups, args)) => {
                let at = buf.len() - args.len();
                (
                    Caller::new(
                        src,
                        creds_of(&h, &groups),
                        &h,
                        plugin.reply_is_ret_only(h.function),
                        self.stats.clone(),
                        Some(self.answers.clone()),
                    ),
                    at,
                )
            }
            Err(e) => {
                self.stats.c.malformed.fetch_add(1, Relaxed);
                self.fail_call(src, hdr, e.errno());
                return;
            }
        };
        let args_len = buf.len() - args_at;
        let request_len = buf.len();
        let inline = self.knobs.inline_bytes.load(Relaxed) as usize;
        if inline > 0 && buf.len() <= inline && plugin.inline_ok(hdr.function) {
            self.stats.c.calls_inline.fetch_add(1, Relaxed);
            let mut reply = KVVec::new();
            if reply.resize(inline + 64, 0, GFP_KERNEL).is_ok() {
                run_call(self, &mut reply, &plugin, &caller, hdr, &buf[args_at..]);
                return;
            }
        }
        let class = plugin
            .priority(hdr.function, &buf[args_at..])
            .unwrap_or_else(|| {
                classify(
                    args_len as u32,
                    self.knobs.small_bytes.load(Relaxed),
                    hdr.flags & FLAG_PRIORITY != 0,
                )
            });
        let work = match KBox::new(
            Work {
                caller,
                plugin,
                function: hdr.function,
                flags: hdr.flags,
                msg: buf,
                args_at,
                enqueued_ns: now_ns(),
            },
            GFP_KERNEL,
        ) {
            Ok(w) => w,
            Err(_) => {
                self.stats.c.dropped_nomem.fetch_add(1, Relaxed);
                self.fail_call(src, hdr, pos(ENOMEM));
                return;
            }
        };
        let refused = {
            let mut q = self.queue.lock();
            q.sched.set_max_per_cn(self.knobs.max_per_cn.load(Relaxed));
            q.sched.set_max_running_per_cn(self.knobs.running_per_cn());
            q.sched
                .set_max_bytes_per_cn(u64::from(self.knobs.max_bytes_per_cn.load(Relaxed)));
            match q.store(work) {
                Err(_) => Some(pos(ENOMEM)),
                Ok(handle) => {
                    let call = QueuedCall {
                        handle,
                        cn: src,
                        class,
                        // What it holds here: its request (at most
                        // max_request, a u32).
                        bytes: request_len as u32,
                    };
                    match q.sched.enqueue(call) {
                        Ok(()) => {
                            q.give_to_idle_worker(&self.stats, self.driver.load(Relaxed));
                            None
                        }
                        Err(e) => {
                            drop(q.release(handle, &self.stats));
                            if e == SchedError::CnOverBytes {
                                self.stats.c.busy_bytes.fetch_add(1, Relaxed);
                            }
                            Some(pos(EAGAIN))
                        }
                    }
                }
            }
        };
        if let Some(e) = refused {
            self.stats.c.busy.fetch_add(1, Relaxed);
            self.fail_call(src, hdr, e);
        }
    }
}

impl Queue {
    /// Hands a call just queued to an idle worker: the one driving treenet,
    /// which runs it next with no wake-up if it received the call in its
    /// own engine pass (it is the current task), and which stops driving
    /// then (while a call runs, treenet's own thread, at its higher
    /// priority, does the receive work); else the worker that went idle
    /// last.
    fn give_to_idle_worker(&mut self, stats: &Stats, driver: usize) {
        let at = match self.idle.iter().rposition(|h| h.is_current()) {
            Some(i) => {
                stats.c.calls_to_driver.fetch_add(1, Relaxed);
                Some(i)
            }
            None => self
                .idle
                .iter()
                .rposition(|h| driver != 0 && h.task.load(Relaxed) == driver)
                .or(self.idle.len().checked_sub(1)),
        };
        if let Some(w) = at.and_then(|i| self.idle.remove(i).ok()) {
            w.give_call();
        }
    }

    fn store(&mut self, work: KBox<Work>) -> Result<u32> {
        if let Some(h) = self.free.pop() {
            self.slots[h as usize] = Some(work);
            return Ok(h);
        }
        let h = u32::try_from(self.slots.len()).map_err(|_| ENOMEM)?;
        // Room in the free list for every slot: releasing one never
        // needs memory.
        let want = (self.slots.len() + 1).saturating_sub(self.free.len());
        self.free.reserve(want, GFP_KERNEL)?;
        self.slots.push(Some(work), GFP_KERNEL)?;
        Ok(h)
    }

    /// Takes call `handle` out of its slot, which is free again.
    fn release(&mut self, handle: u32, stats: &Stats) -> Option<KBox<Work>> {
        let w = self.slots.get_mut(handle as usize)?.take();
        if w.is_some() {
            self.free_slot(handle, stats);
        }
        w
    }

    /// Puts slot `handle` on the free list, in the room [`Queue::store`]
    /// kept (were there none, the slot would only never be used again).
    fn free_slot(&mut self, handle: u32, stats: &Stats) {
        if self.free.push_within_capacity(handle).is_err() {
            stats.c.dropped_nomem.fetch_add(1, Relaxed);
        }
    }
}

/// Runs one call and sends its reply; `reply` is the worker's buffer.
///
/// A reply that needs at least [`MAP_BYTES`] more than the buffer holds (a
/// large read) is written by the plug-in straight into a treenet message
/// mapped contiguously, which is then sent as it is: no copy of the
/// results on the ION, and the worker's buffer stays small.
fn run_call(
    core: &ServerCore,
    reply: &mut KVVec<u8>,
    plugin: &Arc<dyn Plugin>,
    caller: &Caller,
    hdr: &CallHeader,
    args: &[u8],
) {
    let start = now_ns();
    let max_reply = core.knobs.max_reply.load(Relaxed) as usize;
    let mut in_message = None;
    let result = loop {
        // The buffer may have grown for an earlier call: never past the
        // limit for this one (max_reply may have been lowered since).
        let room = reply.len().min(max_reply.max(CALL_HEADER_LEN));
        let (_, body) = reply[..room].split_at_mut(CALL_HEADER_LEN);
        match plugin.dispatch(caller, hdr.function, args, body) {
            // The reply did not fit this buffer (the plug-in has not run
            // yet): into a message of its own if it is large, else into
            // this buffer grown as needed, up to the limit; else E2BIG.
            Err(DispatchError::ReplyTooLarge { need })
                if need >= MAP_BYTES && need <= max_reply.saturating_sub(CALL_HEADER_LEN) =>
            {
                match dispatch_in_message(plugin, caller, hdr, args, need) {
                    Ok((r, msg)) => {
                        core.stats.c.replies_mapped.fetch_add(1, Relaxed);
                        in_message = Some(msg);
                        break r;
                    }
                    Err(_) => {
                        core.stats.c.replies_map_failed.fetch_add(1, Relaxed);
                        if reply.resize(max_reply, 0, GFP_KERNEL).is_err() {
                            break Err(pos(ENOMEM));
                        }
                    }
                }
            }
            Err(DispatchError::ReplyTooLarge { need }) if reply.len() < max_reply => {
                let want = CALL_HEADER_LEN.saturating_add(need);
                let want = if need == 0 || want > max_reply || want <= reply.len() {
                    max_reply
                } else {
                    want
                };
                if reply.resize(want, 0, GFP_KERNEL).is_err() {
                    break Err(pos(ENOMEM));
                }
            }
            Err(e) => break Err(e.errno()),
            Ok(r) => break Ok(r),
        }
    };
    let (errno, len) = call_done(&core.stats, hdr, result, start);
    if caller.is_deferred() {
        // Its `Deferred` answers, and ends it in the ledger.
        return;
    }
    if hdr.flags & FLAG_ASYNC_NOREPLY != 0 {
        core.ledger.finish(caller.node, hdr.tag, true);
        return;
    }
    // Sent without waiting, whoever runs it ([`Answers`]); the answer
    // ends the call in the ledger.
    let answers = &core.answers;
    if let Some(mut msg) = in_message.filter(|_| errno == 0) {
        // The results, with their header, are in the message already.
        let total = CALL_HEADER_LEN + len;
        match msg.truncate(total).and_then(|()| msg.seal()) {
            Ok(m) => {
                answers.answer_message(caller.node, m, Some(hdr.tag));
            }
            Err(_) => {
                core.stats.c.reply_send_failed.fetch_add(1, Relaxed);
                answers.answered(caller.node, Some(hdr.tag), false);
            }
        }
        return;
    }
    let head = reply_header(hdr, errno, len);
    reply[..CALL_HEADER_LEN].copy_from_slice(&head);
    answers.answer(caller.node, &reply[..CALL_HEADER_LEN + len], Some(hdr.tag));
}

/// Counts a call run (since `start`, ns) whose plug-in returned `result`,
/// and gives the reply's errno and results length.
fn call_done(
    stats: &Stats,
    hdr: &CallHeader,
    result: core::result::Result<Reply, i32>,
    start: u64,
) -> (i32, usize) {
    let out = match result {
        Ok(r) if r.errno != 0 => (r.errno, 0),
        Ok(r) => (0, r.len),
        Err(e) => {
            if e == pos(E2BIG) {
                stats.c.e2big.fetch_add(1, Relaxed);
            } else {
                stats.c.dispatch_errors.fetch_add(1, Relaxed);
            }
            (e, 0)
        }
    };
    stats.call_latency.record_ns(now_ns().saturating_sub(start));
    stats.c.calls_done.fetch_add(1, Relaxed);
    stats.calls.count(hdr.plugin, hdr.function);
    out
}

/// Runs a call whose reply needs `need` bytes with its reply buffer a
/// treenet message of that size, mapped; on success the reply header is
/// written in front.  Fails (`ENOMEM`) only before the plug-in runs.
///
/// The message is not zero-filled ([`treenet::MessageBuilder::unzeroed`]):
/// only the header and the `len` bytes the plug-in says it wrote are sent
/// ([`run_call`] shortens it to them).  A declared plug-in's
/// dispatch writes its fixed part whole, zero-fills an `out bytes[SIZE]`
/// array itself, and for `out bytes[SIZE, len = ret]` sends `min(ret,
/// SIZE)` bytes: its server function must have written that many (every
/// in-tree one does: a read's count, a readlink clamped to the buffer).
/// Pages that are not overwritten hold freed kernel memory, so that rule
/// matters more here than in the worker's reused buffer.  Extern (C)
/// plug-ins never come here (their large replies are `need: 0`).  Zeroing
/// 1 MiB replies cost the ION 10 % of its time in zoidfs reads.
fn dispatch_in_message(
    plugin: &Arc<dyn Plugin>,
    caller: &Caller,
    hdr: &CallHeader,
    args: &[u8],
    need: usize,
) -> Result<(core::result::Result<Reply, i32>, treenet::MessageBuilder)> {
    let mut msg = treenet::MessageBuilder::unzeroed(CALL_HEADER_LEN + need)?;
    let mut map = msg.map()?;
    let (head, body) = map.split_at_mut(CALL_HEADER_LEN);
    let r = match plugin.dispatch(caller, hdr.function, args, body) {
        Ok(r) => {
            if r.errno == 0 {
                head.copy_from_slice(&reply_header(hdr, 0, r.len));
            }
            Ok(r)
        }
        Err(e) => Err(e.errno()),
    };
    drop(map);
    Ok((r, msg))
}

/// The receive thread's body.
struct Receiver {
    core: Arc<ServerCore>,
}

impl ThreadBody for Receiver {
    fn kicker(&self) -> &Kicker {
        &self.core.rx_kicker
    }

    fn run(&self, ctx: &ThreadCtx<'_>) {
        while !ctx.should_stop() {
            // Answers that waited for room go first; while some still
            // wait, look again every few ms.
            let waiting = self.core.answers.flush();
            let batch = core::mem::take(&mut self.core.inbox.lock().items);
            if batch.is_empty() {
                ctx.wait(if waiting {
                    ms_to_jiffies(BACKLOG_RETRY_MS)
                } else {
                    usize::MAX
                });
                continue;
            }
            for item in batch {
                match item {
                    Inbound::Msg(src, msg) => {
                        let n = inbox_weight(&msg);
                        self.core.handle(src, msg);
                        // (A CN's bytes, or nothing if it was not charged.)
                        self.core.inbox.lock().discharge(src, n);
                    }
                    Inbound::Gone(node) => self.core.node_gone(node),
                }
                self.core.inbox_pending.fetch_sub(1, Relaxed);
            }
        }
    }
}

/// How the queue and the pool reach one worker.
struct WorkerHandle {
    kicker: Kicker,
    /// Set when the worker, idle, is handed a call (it drives treenet
    /// until then, see [`Worker::idle_wait`]).
    called: Atomic<u32>,
    /// Set once the worker is being stopped: it no longer goes idle.
    stopping: Atomic<u32>,
    /// The worker's task (`Task::current_raw`), 0 until it runs.
    task: Atomic<usize>,
}

impl WorkerHandle {
    fn new() -> Result<Arc<Self>> {
        Ok(Arc::new(
            Self {
                kicker: Kicker::new()?,
                called: Atomic::new(0),
                stopping: Atomic::new(0),
                task: Atomic::new(0),
            },
            GFP_KERNEL,
        )?)
    }

    /// Wakes the worker for a call queued for it: out of a sleep, or out
    /// of driving treenet (the worker itself, which gave itself a call in
    /// its own pass, needs no wake-up).
    fn give_call(&self) {
        self.called.store(1, Release);
        if !self.is_current() {
            self.kicker.kick();
        }
    }

    /// Whether the current task is this worker.
    fn is_current(&self) -> bool {
        self.task.load(Relaxed) == kernel::task::Task::current_raw() as usize
    }
}

/// One worker thread's body.
#[pin_data]
struct Worker {
    core: Arc<ServerCore>,
    handle: Arc<WorkerHandle>,
    #[pin]
    reply: Mutex<KVVec<u8>>,
}

impl Worker {
    fn take(&self) -> Option<(QueuedCall, KBox<Work>)> {
        let mut q = self.core.queue.lock();
        loop {
            let Some(call) = q.sched.next() else {
                let me = &self.handle;
                if me.stopping.load(Relaxed) == 0
                    && !q.idle.iter().any(|h| Arc::ptr_eq(h, me))
                    && q.idle.push_within_capacity(me.clone()).is_err()
                {
                    // The pool reserves room for each of its workers
                    // (`Server::set_workers`).
                    self.core.stats.c.dropped_nomem.fetch_add(1, Relaxed);
                }
                return None;
            };
            if let Some(w) = q.release(call.handle, &self.core.stats) {
                q.idle.retain(|h| !Arc::ptr_eq(h, &self.handle));
                q.busy += 1;
                return Some((call, w));
            }
            // A slot emptied by node_gone: nothing to run.
            q.sched.done(call.cn, call.bytes);
        }
    }

    /// Waits, idle, until a call is given to this worker (or a kick).  On
    /// an ION whose workers are all idle, one of them drives treenet
    /// meanwhile: the frames of the next call wake this worker rather than
    /// treenet's thread, and the call its pass delivers is queued for it
    /// ([`Queue::give_to_idle_worker`]).  A CN's server gets no calls, and
    /// there its callers should drive; so the role is checked again every
    /// [`IDLE_DRIVE_MS`].
    fn idle_wait(&self, ctx: &ThreadCtx<'_>) {
        let me = &self.handle;
        let core = &self.core;
        let drive = core.knobs.idle_drive.load(Relaxed) != 0
            && me.stopping.load(Relaxed) == 0
            && stack_left() >= DRIVE_STACK_MIN
            && is_ion()
            && {
                let q = core.queue.lock();
                let free = q.busy == 0 && q.sched.queued() == 0;
                free && core
                    .driver
                    .cmpxchg(0, me.task.load(Relaxed), Relaxed)
                    .is_ok()
            };
        if drive {
            let slice = ms_to_jiffies(IDLE_DRIVE_MS.into());
            let driven = treenet::drive_until(treenet::ALL_CHANNELS, &me.called, slice);
            {
                let _q = core.queue.lock();
                core.driver.store(0, Relaxed);
            }
            if driven.is_ok() {
                core.stats.c.idle_drives.fetch_add(1, Relaxed);
                return;
            }
        }
        ctx.wait(usize::MAX);
    }

    /// Makes the worker stop going idle and ends a drive of its: called
    /// before the thread is stopped, which a drive would not notice.
    fn stop_soon(&self) {
        self.handle.stopping.store(1, Relaxed);
        self.core
            .queue
            .lock()
            .idle
            .retain(|h| !Arc::ptr_eq(h, &self.handle));
        self.handle.give_call();
    }
}

/// Whether this node is its pset's ION.
fn is_ion() -> bool {
    matches!((treenet::ion(), treenet::node_id()), (Ok(ion), Ok(me)) if ion == me)
}

impl ThreadBody for Worker {
    fn kicker(&self) -> &Kicker {
        &self.handle.kicker
    }

    fn run(&self, ctx: &ThreadCtx<'_>) {
        self.handle
            .task
            .store(kernel::task::Task::current_raw() as usize, Relaxed);
        // A stopping worker still runs what is queued (a call may have been
        // given to it just before); it only no longer goes idle or drives.
        while !ctx.should_stop() {
            // Cleared before looking at the queue, and set under its lock by
            // whoever hands this worker a call after that: never missed.
            self.handle.called.store(0, Relaxed);
            let Some((call, work)) = self.take() else {
                self.idle_wait(ctx);
                continue;
            };
            self.core
                .queue_wait
                .record_ns(now_ns().saturating_sub(work.enqueued_ns));
            let hdr = CallHeader {
                kind: MsgKind::Call,
                flags: work.flags,
                plugin: work.plugin.id(),
                function: work.function,
                tag: work.caller.tag(),
                pid: work.caller.creds.pid,
                uid: work.caller.creds.uid,
                gid: work.caller.creds.gid,
                arg_len: 0,
                errno: 0,
            };
            {
                let mut reply = self.reply.lock();
                // Without memory for it the call runs in the buffer it has,
                // which `run_call` grows on demand, or is answered ENOMEM.
                let grown = reply.len() >= INITIAL_REPLY_BUF
                    || reply.resize(INITIAL_REPLY_BUF, 0, GFP_KERNEL).is_ok();
                if grown || reply.len() >= CALL_HEADER_LEN {
                    run_call(
                        &self.core,
                        &mut reply,
                        &work.plugin,
                        &work.caller,
                        &hdr,
                        &work.msg[work.args_at..],
                    );
                } else {
                    self.core.stats.c.dropped_nomem.fetch_add(1, Relaxed);
                    self.core.fail_call(work.caller.node, &hdr, pos(ENOMEM));
                }
            }
            drop(work);
            let mut q = self.core.queue.lock();
            q.sched.done(call.cn, call.bytes);
            q.busy -= 1;
        }
    }
}

/// The ION server: owns its threads (stopped on drop).
#[pin_data(PinnedDrop)]
pub(crate) struct Server {
    core: Arc<ServerCore>,
    receiver: Option<KThread<Receiver>>,
    #[pin]
    workers: Mutex<KVec<KThread<Worker>>>,
}

impl Server {
    /// Starts the receive thread and `knobs.workers` workers.
    pub(crate) fn start(
        plugins: Arc<Registry>,
        stats: Arc<Stats>,
        f2cn: Arc<F2cn>,
        ranks: Arc<Ranks>,
    ) -> Result<Arc<Self>> {
        let rx_kicker = Arc::new(Kicker::new()?, GFP_KERNEL)?;
        let sched = SchedBox::new(64)?;
        let ledger = Arc::pin_init(Ledgers::new(), GFP_KERNEL)?;
        let knobs = Arc::new(ServerKnobs::new(), GFP_KERNEL)?;
        let answers = Answers::new(
            knobs.clone(),
            stats.clone(),
            ledger.clone(),
            rx_kicker.clone(),
        )?;
        let core = Arc::pin_init(
            try_pin_init!(ServerCore {
                knobs,
                stats,
                plugins,
                f2cn,
                ranks,
                queue_wait: Histogram::new(),
                inbox <- kernel::new_mutex!(
                    Inbox {
                        items: KVec::new(),
                        bytes: KVec::new(),
                    },
                    "zoid::inbox"
                ),
                inbox_pending: Atomic::new(0),
                rx_kicker,
                queue <- kernel::new_mutex!(Queue {
                    sched,
                    slots: KVec::new(),
                    free: KVec::new(),
                    idle: KVec::new(),
                    busy: 0,
                }, "zoid::queue"),
                driver: Atomic::new(0),
                ledger,
                answers,
            }? Error),
            GFP_KERNEL,
        )?;
        let receiver = KThread::spawn(
            c"zoid-rx",
            Arc::new(Receiver { core: core.clone() }, GFP_KERNEL)?,
        )?;
        let server = Arc::pin_init(
            try_pin_init!(Server {
                core,
                receiver: Some(receiver),
                workers <- kernel::new_mutex!(KVec::new(), "zoid::workers"),
            }? Error),
            GFP_KERNEL,
        )?;
        server.set_workers(server.core.knobs.workers.load(Relaxed))?;
        Ok(server)
    }

    /// The shared state.
    pub(crate) fn core(&self) -> &Arc<ServerCore> {
        &self.core
    }

    /// Grows or shrinks the pool to `n` workers (1..=MAX_WORKERS).  A
    /// shrinking pool waits for the stopped workers' current calls.
    pub(crate) fn set_workers(&self, n: u32) -> Result {
        if n == 0 || n > MAX_WORKERS {
            return Err(EINVAL);
        }
        let mut workers = self.workers.lock();
        while workers.len() < n as usize {
            let handle = WorkerHandle::new()?;
            let body = Arc::pin_init(
                pin_init!(Worker {
                    core: self.core.clone(),
                    handle,
                    reply <- kernel::new_mutex!(KVVec::new(), "zoid::reply"),
                }),
                GFP_KERNEL,
            )?;
            // Room for every worker in the idle list: a worker going
            // idle never needs memory.
            {
                let mut q = self.core.queue.lock();
                let want = (workers.len() + 1).saturating_sub(q.idle.len());
                q.idle.reserve(want, GFP_KERNEL)?;
            }
            workers.push(KThread::spawn(c"zoid-worker", body)?, GFP_KERNEL)?;
        }
        while workers.len() > n as usize {
            let Some(w) = workers.pop() else { break };
            w.body().stop_soon();
            drop(w);
            // A call given to it that it did not take before it stopped
            // goes to another worker.
            let mut q = self.core.queue.lock();
            if q.sched.queued() > 0 {
                q.give_to_idle_worker(&self.core.stats, self.core.driver.load(Relaxed));
            }
        }
        self.core.knobs.workers.store(n, Relaxed);
        Ok(())
    }

    /// Workers running a call now, and workers in the pool.
    pub(crate) fn utilisation(&self) -> (u32, u32) {
        let busy = self.core.queue.lock().busy;
        (busy, self.workers.lock().len() as u32)
    }

    /// Queue depth per class (urgent, small, bulk).
    pub(crate) fn queue_depths(&self) -> [usize; 3] {
        let q = self.core.queue.lock();
        [
            q.sched.depth(Priority::Urgent),
            q.sched.depth(Priority::Small),
            q.sched.depth(Priority::Bulk),
        ]
    }
}

#[pinned_drop]
impl PinnedDrop for Server {
    fn drop(self: Pin<&mut Self>) {
        // Workers first (they may send), then the receiver; queued calls
        // are freed with the queue.
        let mut workers = self.workers.lock();
        for w in workers.iter() {
            w.body().stop_soon();
        }
        workers.clear();
        drop(workers);
        // SAFETY: `receiver` is not structurally pinned.
        unsafe { self.get_unchecked_mut() }.receiver.take();
    }
}
