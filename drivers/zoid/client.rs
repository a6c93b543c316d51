// SPDX-License-Identifier: GPL-2.0

//! The CN side: attaches to the pset's ION and forwards calls to it.
//!
//! A call is a message `[CallHeader][groups][arguments]` on treenet channel
//! [`CHANNEL`]; the ION answers `[CallHeader (errno)][results]` with the
//! same tag.  Callers wait on their own [`PendingCall`] (the receive path
//! only files the reply and wakes them).  A caller may also start several
//! calls and collect their replies later ([`Client::start`],
//! [`InFlight::wait`]): zoidfs keeps its reads and writes in flight that
//! way.  Timeouts follow the mount-style `soft`/`hard` choice: soft calls
//! fail with `ETIMEDOUT` once their timeout (the caller's, else the
//! `timeout_ms` knob) has passed since they started, waiting for an
//! attach included; hard calls keep waiting, and
//! are sent again when the ION comes back (a new attach), until a fatal
//! signal.  A caller may pass an [`AbortFlag`] (zoidfs's `umount -f`):
//! once it is set, its calls give up with `ESHUTDOWN`, hard or not.

use crate::stats::Stats;
use crate::traffic;
use crate::treenet;
use crate::zoid_kernel::abort::AbortFlag;
use crate::zoid_kernel::cred::{Creds, MAX_GROUPS};
use crate::zoid_kernel::time::{
    deadline_after_ms, ms_to_jiffies, now_ns, random_u32, sleep_ms_interruptible,
};
use crate::zoid_proto::version::SUITE_VERSION;
use crate::zoid_proto::zoid::wire::{
    AttachReply, AttachRequest, CallHeader, MsgKind, ATTACH_REPLY_LEN, ATTACH_REQUEST_LEN,
    FLAG_GROUPS, HEADER_LEN as CALL_HEADER_LEN,
};
use crate::CHANNEL;
use kernel::ffi::c_void;
use kernel::new_condvar;
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed, Release};
use kernel::sync::{Arc, CondVar, CondVarTimeoutResult, Mutex};
use kernel::uaccess::UserPtr;

/// How long an attach request waits for its answer before another is sent.
const ATTACH_RETRY_NS: u64 = 1_000_000_000;

/// The last attach's number, over every client this module made: an
/// attach's epoch names it alone while zoid is loaded (0 names none).
static ATTACHES: Atomic<u32> = Atomic::new(0);

/// A number for a new attach, never 0.
fn next_epoch() -> u32 {
    loop {
        let e = ATTACHES.fetch_add(1, Relaxed).wrapping_add(1);
        if e != 0 {
            return e;
        }
    }
}

/// How often a soft call tries treenet again while its queue to the ION
/// is full (ms).
const QUEUE_FULL_POLL_MS: u32 = 10;

/// The client's knobs (sysfs).
pub(crate) struct ClientKnobs {
    /// Per-call timeout (ms) in soft mode; attach timeout in both modes.
    pub(crate) timeout_ms: Atomic<u32>,
    /// 1: hard mode (wait for the ION), 0: soft.
    pub(crate) hard: Atomic<u32>,
}

/// How a call ended.
enum CallState {
    Waiting,
    Done { errno: i32, reply: treenet::Message },
}

/// Where a call's marshalled arguments are.
pub(crate) enum Args<'a> {
    /// Kernel memory.
    Kernel(&'a [u8]),
    /// `len` bytes of the calling process's memory: copied once, straight
    /// into the message treenet sends.
    User(UserPtr, usize),
}

impl Args<'_> {
    fn len(&self) -> usize {
        match self {
            Args::Kernel(a) => a.len(),
            Args::User(_, n) => *n,
        }
    }
}

/// Whether `abort` is there and set.
fn aborted(abort: Option<AbortFlag>) -> bool {
    abort.is_some_and(|a| a.is_set())
}

/// One call in flight.
#[pin_data]
pub(crate) struct PendingCall {
    tag: u32,
    #[pin]
    state: Mutex<CallState>,
    #[pin]
    done: CondVar,
    /// Set (after `state`) when the reply is filed: a caller that drives
    /// treenet while it waits (see `wait_reply`) watches this.
    finished: Atomic<u32>,
}

struct ClientState {
    ion: Option<u16>,
    /// The ION the pending attach request went to: only its attach reply
    /// is taken.
    attach_to: Option<u16>,
    limits: Option<AttachReply>,
    /// The current attach's number ([`next_epoch`]): a new one at every
    /// successful attach (hard-mode resends, zoidfs's relaxed grants).
    epoch: u32,
    attaching: bool,
    /// When the last attach request went out (ns): unanswered, it is sent
    /// again after [`ATTACH_RETRY_NS`].
    attach_sent: u64,
    calls: KVec<Arc<PendingCall>>,
}

/// A plug-in's CN-side handler of upcalls (`zoid_upcall_fn` in
/// `zoid_client.h`): runs in treenet's engine thread, must not sleep.
pub(crate) type UpcallFn = unsafe extern "C" fn(function: u16, body: *const c_void, len: usize);

/// Longest upcall body.
pub(crate) const MAX_UPCALL: usize = 512;

/// The CN client.
#[pin_data]
pub(crate) struct Client {
    pub(crate) knobs: ClientKnobs,
    stats: Arc<Stats>,
    next_tag: Atomic<u32>,
    #[pin]
    state: Mutex<ClientState>,
    #[pin]
    attached: CondVar,
    /// Upcall handlers by plug-in id.
    #[pin]
    upcalls: Mutex<KVec<(u16, UpcallFn)>>,
}

/// The reply of a call: errno (0 on success) and the marshalled results,
/// left in the received message until the caller copies them out.
pub(crate) struct CallReply {
    /// 0 or a positive errno from the ION.
    pub(crate) errno: i32,
    /// The reply message; the results (`i64` return value first, none when
    /// `errno != 0`) follow the header.
    msg: treenet::Message,
}

impl CallReply {
    /// Bytes of results.
    pub(crate) fn len(&self) -> usize {
        self.msg.len().saturating_sub(CALL_HEADER_LEN)
    }

    /// Copies results at `offset` (from the first result byte) to `out`.
    pub(crate) fn read_at(&self, offset: usize, out: &mut [u8]) -> Result {
        let end = offset.checked_add(out.len()).ok_or(EINVAL)?;
        if end > self.len() {
            return Err(EINVAL);
        }
        self.msg.read_at(CALL_HEADER_LEN + offset, out)
    }

    /// The results, copied straight from the message to the calling
    /// process's memory at `dst` (one copy).
    pub(crate) fn copy_to_user(&self, dst: UserPtr) -> Result {
        self.msg.read_to_user(CALL_HEADER_LEN, dst, self.len())
    }
}

/// A call sent by [`Client::start`] whose reply has not been collected.
///
/// Dropping it without [`InFlight::wait`] abandons the call: the ION is
/// told to cancel it and a late reply is counted as stale.
pub(crate) struct InFlight {
    client: Arc<Client>,
    call: Arc<PendingCall>,
    /// The sent message, kept for hard-mode resends.
    msg: treenet::Message,
    ion: u16,
    /// The attach the call was sent under.
    epoch: u32,
    /// Whether treenet took the message.
    sent: bool,
    /// When the call was sent (ns).
    start: u64,
    /// Timeout (ms): a soft call's whole life, attaching included; in
    /// hard mode, how long to wait after a send before sending again.
    timeout: u32,
    /// When the call fails (soft) or is sent again (hard), in ns.
    deadline: u64,
    hard: bool,
    /// The caller's abort flag.
    abort: Option<AbortFlag>,
}

impl InFlight {
    /// Waits for the call's reply (or its failure: `ETIMEDOUT` in soft
    /// mode, `EINTR` on a signal, `ESHUTDOWN` once its abort flag is set).
    pub(crate) fn wait(mut self) -> Result<CallReply> {
        let r = self.wait_reply();
        // Answered or given up (the ION was told): nothing left to cancel.
        self.unregister();
        r
    }

    /// Forgets the call: a reply that still arrives is stale.
    fn unregister(&mut self) {
        let call = &self.call;
        self.client
            .state
            .lock()
            .calls
            .retain(|c| !Arc::ptr_eq(c, call));
    }

    /// The reply, if it has arrived.
    fn take_reply(&self) -> Option<CallReply> {
        let mut g = self.call.state.lock();
        match core::mem::replace(&mut *g, CallState::Waiting) {
            CallState::Done { errno, reply } => Some(CallReply { errno, msg: reply }),
            CallState::Waiting => None,
        }
    }

    fn wait_reply(&mut self) -> Result<CallReply> {
        let client = self.client.clone();
        let stats = &client.stats;
        let mut deadline = self.deadline;
        loop {
            if aborted(self.abort) {
                if let Some(reply) = self.take_reply() {
                    return Ok(reply);
                }
                stats.c.aborted.fetch_add(1, Relaxed);
                client.send_notice(self.ion, MsgKind::Cancel, self.call.tag);
                return Err(ESHUTDOWN);
            }
            // Wait doing treenet's receive work in this task: the reply is
            // handed over without waking treenet's thread first (one thread
            // switch less per call).  If another task drives, wait below.
            let slice = ms_to_jiffies(250);
            let driven = match treenet::drive_until(CHANNEL, &self.call.finished, slice) {
                Err(EINTR) => {
                    if let Some(reply) = self.take_reply() {
                        return Ok(reply);
                    }
                    stats.c.interrupted.fetch_add(1, Relaxed);
                    client.send_notice(self.ion, MsgKind::Cancel, self.call.tag);
                    return Err(EINTR);
                }
                r => r.is_ok(),
            };
            if !driven {
                let mut g = self.call.state.lock();
                if let CallState::Waiting = &*g {
                    let r = self
                        .call
                        .done
                        .wait_interruptible_timeout(&mut g, ms_to_jiffies(250));
                    if let CondVarTimeoutResult::Signal { .. } = r {
                        if let CallState::Waiting = &*g {
                            drop(g);
                            stats.c.interrupted.fetch_add(1, Relaxed);
                            client.send_notice(self.ion, MsgKind::Cancel, self.call.tag);
                            return Err(EINTR);
                        }
                    }
                }
            }
            if let Some(reply) = self.take_reply() {
                stats
                    .round_trip
                    .record_ns(now_ns().saturating_sub(self.start));
                return Ok(reply);
            }
            if now_ns() >= deadline {
                if !self.hard {
                    stats.c.timeouts.fetch_add(1, Relaxed);
                    return Err(ETIMEDOUT);
                }
                // Hard mode, no answer within the timeout: the ION may
                // have lost the call (its zoid restarted while treenet
                // stayed up).  Attach again, which sends the call again.
                let mut g = client.state.lock();
                if g.epoch == self.epoch && g.ion.is_some() {
                    g.ion = None;
                    g.limits = None;
                }
                drop(g);
                deadline = deadline_after_ms(self.timeout.into());
            }
            // Hard mode (or a send that failed): once the ION is back (a
            // new attach), send the call again.
            let lost = !self.sent || {
                let g = client.state.lock();
                g.epoch != self.epoch || g.ion.is_none()
            };
            if lost && (self.hard || now_ns() < deadline) {
                let until = (!self.hard).then_some(deadline);
                if let Ok((ion, _, epoch)) = client.ensure_attached(self.abort, until) {
                    if epoch != self.epoch || !self.sent {
                        self.ion = ion;
                        self.epoch = epoch;
                        self.sent = client.send_call(ion, &self.msg, self.hard, deadline);
                        if self.sent {
                            stats.c.resent.fetch_add(1, Relaxed);
                        }
                    }
                }
            }
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let registered = {
            let call = &self.call;
            let g = self.client.state.lock();
            g.calls.iter().any(|c| Arc::ptr_eq(c, call))
        };
        if registered {
            self.unregister();
            if self.take_reply().is_none() {
                self.client.stats.c.interrupted.fetch_add(1, Relaxed);
                self.client
                    .send_notice(self.ion, MsgKind::Cancel, self.call.tag);
            }
        }
    }
}

impl Client {
    /// A detached client.
    pub(crate) fn new(stats: Arc<Stats>) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            knobs: ClientKnobs {
                timeout_ms: Atomic::new(30_000),
                hard: Atomic::new(0),
            },
            stats,
            // From anywhere: a reloaded client's tags are not those its
            // ION's call ledger remembers of the one before it.
            next_tag: Atomic::new(random_u32()),
            state <- kernel::new_mutex!(ClientState {
                ion: None,
                limits: None,
                attach_to: None,
                epoch: 0,
                attaching: false,
                attach_sent: 0,
                calls: KVec::new(),
            }, "zoid::client"),
            attached <- new_condvar!("zoid::attached"),
            upcalls <- kernel::new_mutex!(KVec::new(), "zoid::upcalls"),
        }? Error)
    }

    /// The limits the ION announced, if attached.
    pub(crate) fn limits(&self) -> Option<(u16, AttachReply)> {
        let g = self.state.lock();
        Some((g.ion?, g.limits?))
    }

    /// Receive path: a reply or an attach reply from `src`.  Only the
    /// ION this client attaches to (or attached to) answers: anything else
    /// is a node posing as it, refused and counted (`replies_foreign`).
    pub(crate) fn deliver(&self, src: u16, hdr: &CallHeader, msg: treenet::Message) {
        let from_ion = {
            let g = self.state.lock();
            match hdr.kind {
                MsgKind::AttachReply => g.attach_to == Some(src),
                // (Between a peer-down and the next attach, `ion` is
                // unset: a late reply of the same ION is stale, not
                // foreign.)
                _ => g.ion.or(g.attach_to) == Some(src),
            }
        };
        if !from_ion && matches!(hdr.kind, MsgKind::AttachReply | MsgKind::Reply) {
            self.stats.c.replies_foreign.fetch_add(1, Relaxed);
            return;
        }
        match hdr.kind {
            MsgKind::AttachReply => {
                let mut buf = [0u8; ATTACH_REPLY_LEN];
                let mut g = self.state.lock();
                if hdr.errno == 0 && msg.read_at(CALL_HEADER_LEN, &mut buf).is_ok() && g.attaching {
                    if let Ok(r) = AttachReply::decode(&buf) {
                        g.ion = Some(src);
                        g.limits = Some(r);
                        g.epoch = next_epoch();
                    }
                } else if hdr.errno != 0 {
                    pr_warn!("ION {src} refused attach: errno {}\n", hdr.errno);
                }
                g.attaching = false;
                drop(g);
                self.attached.notify_all();
            }
            MsgKind::Reply => {
                let call = {
                    let g = self.state.lock();
                    g.calls.iter().find(|c| c.tag == hdr.tag).cloned()
                };
                let Some(call) = call else {
                    self.stats.c.replies_stale.fetch_add(1, Relaxed);
                    return;
                };
                // The message itself is filed: the caller copies the
                // results out (to user memory: the one copy).
                self.stats.c.replies_received.fetch_add(1, Relaxed);
                *call.state.lock() = CallState::Done {
                    errno: hdr.errno,
                    reply: msg,
                };
                call.finished.store(1, Release);
                call.done.notify_all();
            }
            _ => {
                self.stats.c.malformed.fetch_add(1, Relaxed);
            }
        }
    }

    /// Sets (`Some`) or removes plug-in `plugin`'s upcall handler.  A
    /// plug-in has one handler (`EBUSY`); removal waits for a running one.
    pub(crate) fn set_upcall(&self, plugin: u16, handler: Option<UpcallFn>) -> Result {
        let mut g = self.upcalls.lock();
        let at = g.iter().position(|(p, _)| *p == plugin);
        match (handler, at) {
            (Some(_), Some(_)) => Err(EBUSY),
            (Some(f), None) => g.push((plugin, f), GFP_KERNEL).map_err(Into::into),
            (None, Some(i)) => g.remove(i).map(|_| ()).map_err(|_| ENOENT),
            (None, None) => Err(ENOENT),
        }
    }

    /// Receive path: an upcall from `src`, handed to its plug-in's handler
    /// if it comes from our ION and is well formed.
    pub(crate) fn upcall(&self, src: u16, hdr: &CallHeader, msg: &treenet::Message) {
        let len = hdr.arg_len as usize;
        let mut body = [0u8; MAX_UPCALL];
        let ours = self.state.lock().ion == Some(src);
        if !ours
            || hdr.flags != 0
            || len > MAX_UPCALL
            || msg.len() != CALL_HEADER_LEN + len
            || msg.read_at(CALL_HEADER_LEN, &mut body[..len]).is_err()
        {
            self.stats.c.upcalls_dropped.fetch_add(1, Relaxed);
            return;
        }
        let g = self.upcalls.lock();
        match g.iter().find(|(p, _)| *p == hdr.plugin) {
            Some((_, f)) => {
                self.stats.c.upcalls.fetch_add(1, Relaxed);
                // SAFETY: the handler was registered through the ABI and
                // stays valid until removed, which waits for this lock;
                // `body` holds `len` bytes.
                unsafe { f(hdr.function, body.as_ptr().cast(), len) };
            }
            None => {
                self.stats.c.upcalls_dropped.fetch_add(1, Relaxed);
            }
        }
    }

    /// Treenet says `node` went up or down.
    pub(crate) fn peer_event(&self, node: u16, up: bool) {
        let mut g = self.state.lock();
        if !up && g.ion == Some(node) {
            g.ion = None;
            g.limits = None;
        }
        drop(g);
        self.attached.notify_all();
    }

    /// The current attach's epoch, or 0 while not attached (the ION was
    /// lost): what the ION granted in one attach is void in any other.
    pub(crate) fn session(&self) -> u32 {
        let g = self.state.lock();
        if g.ion.is_some() && g.limits.is_some() {
            g.epoch
        } else {
            0
        }
    }

    /// Attaches now if not attached.
    pub(crate) fn attach_now(&self) -> Result {
        self.ensure_attached(None, None).map(|_| ())
    }

    /// The ION and its limits, attaching first if needed (waits at most
    /// the `timeout_ms` knob).
    pub(crate) fn attached(&self) -> Result<(u16, AttachReply)> {
        self.ensure_attached(None, None).map(|(ion, l, _)| (ion, l))
    }

    /// Attaches to the ION if needed: its node id, limits and the attach's
    /// epoch; `ETIMEDOUT` after the `timeout_ms` knob or at `until` (ns,
    /// a soft call's own deadline) if that comes first, `EINTR` on a
    /// signal, `ESHUTDOWN` once `abort` is set.
    fn ensure_attached(
        &self,
        abort: Option<AbortFlag>,
        until: Option<u64>,
    ) -> Result<(u16, AttachReply, u32)> {
        let timeout = u64::from(self.knobs.timeout_ms.load(Relaxed));
        let knob_deadline = deadline_after_ms(timeout);
        let deadline = until.map_or(knob_deadline, |u| u.min(knob_deadline));
        let mut g = self.state.lock();
        loop {
            if let (Some(ion), Some(l)) = (g.ion, g.limits) {
                return Ok((ion, l, g.epoch));
            }
            if now_ns() >= deadline {
                return Err(ETIMEDOUT);
            }
            if aborted(abort) {
                return Err(ESHUTDOWN);
            }
            if !g.attaching {
                let Ok(ion) = treenet::ion() else {
                    // No ION yet: poll.
                    let r = self
                        .attached
                        .wait_interruptible_timeout(&mut g, ms_to_jiffies(100));
                    if let CondVarTimeoutResult::Signal { .. } = r {
                        return Err(EINTR);
                    }
                    continue;
                };
                g.attaching = true;
                g.attach_to = Some(ion);
                drop(g);
                let mut msg = [0u8; CALL_HEADER_LEN + ATTACH_REQUEST_LEN];
                let hdr = CallHeader {
                    arg_len: ATTACH_REQUEST_LEN as u32,
                    ..CallHeader::new(MsgKind::Attach, 0)
                };
                let mut hb = [0u8; CALL_HEADER_LEN];
                hdr.encode(&mut hb);
                msg[..CALL_HEADER_LEN].copy_from_slice(&hb);
                let body = AttachRequest {
                    proto: SUITE_VERSION.to_wire(),
                    node: treenet::node_id().unwrap_or(0),
                    max_reply: (4 << 20) + 1024,
                }
                .encode();
                msg[CALL_HEADER_LEN..].copy_from_slice(&body);
                let sent = traffic::send(ion, &msg, true);
                g = self.state.lock();
                g.attach_sent = now_ns();
                if sent.is_err() {
                    g.attaching = false;
                }
            }
            let r = self
                .attached
                .wait_interruptible_timeout(&mut g, ms_to_jiffies(200));
            if let CondVarTimeoutResult::Signal { .. } = r {
                return Err(EINTR);
            }
            // An attach request the ION never answered (it was down, or
            // its zoid was reloaded): send another.
            if g.attaching && now_ns() >= g.attach_sent.saturating_add(ATTACH_RETRY_NS) {
                g.attaching = false;
            }
        }
    }

    /// Sends one call (already marshalled `args`) for `creds` and waits for
    /// its reply.  `timeout_ms` 0 means the `timeout_ms` knob; `hard`
    /// `None` means the `hard` knob (a mount's `soft`/`hard` override it).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn call(
        self: &Arc<Self>,
        creds: &Creds,
        plugin: u16,
        function: u16,
        flags: u16,
        args: Args<'_>,
        timeout_ms: u32,
        hard: Option<bool>,
        abort: Option<AbortFlag>,
    ) -> Result<CallReply> {
        self.start(
            creds, plugin, function, flags, args, timeout_ms, hard, abort,
        )?
        .wait()
    }

    /// Sends one call like [`Client::call`] and returns without waiting:
    /// the reply is collected with [`InFlight::wait`], and several calls
    /// may be in flight at once (zoidfs pipelines its reads and writes).
    /// The arguments are copied into the sent message before this returns.
    /// Its timeout runs from now.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start(
        self: &Arc<Self>,
        creds: &Creds,
        plugin: u16,
        function: u16,
        flags: u16,
        args: Args<'_>,
        timeout_ms: u32,
        hard: Option<bool>,
        abort: Option<AbortFlag>,
    ) -> Result<InFlight> {
        if aborted(abort) {
            self.stats.c.aborted.fetch_add(1, Relaxed);
            return Err(ESHUTDOWN);
        }
        // Hard mode waits for an ION that does not answer the attach too;
        // a soft call's timeout counts from here, attaching included (a
        // soft mount whose ION is down fails within its timeo * (retrans
        // + 1), not the `timeout_ms` knob).
        let hard = hard.unwrap_or(self.knobs.hard.load(Relaxed) != 0);
        let timeout = if timeout_ms == 0 {
            self.knobs.timeout_ms.load(Relaxed)
        } else {
            timeout_ms
        };
        let soft_deadline = deadline_after_ms(timeout.into());
        let (ion, limits, epoch) = loop {
            match self.ensure_attached(abort, (!hard).then_some(soft_deadline)) {
                Ok(a) => break a,
                Err(e) if hard && e == ETIMEDOUT => continue,
                Err(e) => {
                    if e == ESHUTDOWN {
                        self.stats.c.aborted.fetch_add(1, Relaxed);
                    }
                    return Err(e);
                }
            }
        };
        let groups = creds.groups();
        let groups_len = if groups.is_empty() {
            0
        } else {
            4 + 4 * groups.len()
        };
        let total = CALL_HEADER_LEN + groups_len + args.len();
        if total > limits.max_request as usize {
            self.stats.c.e2big.fetch_add(1, Relaxed);
            return Err(E2BIG);
        }
        let tag = self.next_tag.fetch_add(1, Relaxed);
        let hdr = CallHeader {
            kind: MsgKind::Call,
            flags: flags | if groups.is_empty() { 0 } else { FLAG_GROUPS },
            plugin,
            function,
            tag,
            pid: creds.pid,
            uid: creds.uid,
            gid: creds.gid,
            arg_len: args.len() as u32,
            errno: 0,
        };
        // Header and groups, then the arguments, written in place into the
        // pages treenet sends (user arguments: the one copy).
        let mut head = [0u8; CALL_HEADER_LEN + 4 + 4 * MAX_GROUPS];
        let mut hb = [0u8; CALL_HEADER_LEN];
        hdr.encode(&mut hb);
        head[..CALL_HEADER_LEN].copy_from_slice(&hb);
        if !groups.is_empty() {
            head[CALL_HEADER_LEN..CALL_HEADER_LEN + 4]
                .copy_from_slice(&(groups.len() as u32).to_be_bytes());
            for (i, g) in groups.iter().enumerate() {
                let at = CALL_HEADER_LEN + 4 + 4 * i;
                head[at..at + 4].copy_from_slice(&g.to_be_bytes());
            }
        }
        let head_len = CALL_HEADER_LEN + groups_len;
        // Every byte is written below, in order: no zero-filling.
        let mut b = treenet::MessageBuilder::for_filling(total)?;
        b.write_at(0, &head[..head_len])?;
        match args {
            Args::Kernel(a) => b.write_at(head_len, a)?,
            Args::User(p, n) => b.write_user_at(head_len, p, n)?,
        }
        let msg = b.seal()?;

        let call = Arc::pin_init(
            pin_init!(PendingCall {
                tag,
                state <- kernel::new_mutex!(CallState::Waiting, "zoid::call"),
                done <- new_condvar!("zoid::call_done"),
                finished: Atomic::new(0),
            }),
            GFP_KERNEL,
        )?;
        {
            let mut g = self.state.lock();
            g.calls.push(call.clone(), GFP_KERNEL)?;
            // A high-water mark, raised under the lock: no lost update.
            let n = g.calls.len() as u64;
            if n > self.stats.c.inflight_peak.load(Relaxed) {
                self.stats.c.inflight_peak.store(n, Relaxed);
            }
        }
        let start = now_ns();
        self.stats.c.calls_sent.fetch_add(1, Relaxed);
        self.stats.c.msgs_sent.fetch_add(1, Relaxed);
        self.stats.c.bytes_sent.fetch_add(msg.len() as u64, Relaxed);
        let sent = self.send_call(ion, &msg, hard, soft_deadline);
        Ok(InFlight {
            client: self.clone(),
            call,
            msg,
            ion,
            epoch,
            sent,
            start,
            timeout,
            deadline: if hard {
                deadline_after_ms(timeout.into())
            } else {
                soft_deadline
            },
            hard,
            abort,
        })
    }

    /// Sends a call's message; whether treenet took it.  A hard call waits
    /// for room in treenet's queue to the ION as long as treenet lets it.
    /// A soft one waits no later than its `deadline` (ns), since its
    /// timeout bounds the whole call: it polls while the queue is full
    /// (`queue_full`), and gives up at the deadline or on a signal, unsent.
    fn send_call(&self, ion: u16, msg: &treenet::Message, hard: bool, deadline: u64) -> bool {
        let mut counted = false;
        loop {
            match traffic::send_message(ion, msg, hard) {
                Ok(()) => return true,
                Err(e) if e == EAGAIN => {
                    if !counted {
                        self.stats.c.queue_full.fetch_add(1, Relaxed);
                        counted = true;
                    }
                    if now_ns() >= deadline || !sleep_ms_interruptible(QUEUE_FULL_POLL_MS) {
                        return false;
                    }
                }
                Err(_) => return false,
            }
        }
    }

    /// Sends a notice (`ProcessExit` or `Cancel`) carrying `value`.
    pub(crate) fn send_notice(&self, ion: u16, kind: MsgKind, value: u32) {
        let mut msg = [0u8; CALL_HEADER_LEN + 4];
        let tag = if kind == MsgKind::Cancel { value } else { 0 };
        let hdr = CallHeader {
            pid: if kind == MsgKind::ProcessExit {
                value
            } else {
                0
            },
            arg_len: 4,
            ..CallHeader::new(kind, tag)
        };
        let mut hb = [0u8; CALL_HEADER_LEN];
        hdr.encode(&mut hb);
        msg[..CALL_HEADER_LEN].copy_from_slice(&hb);
        msg[CALL_HEADER_LEN..].copy_from_slice(&value.to_be_bytes());
        if traffic::send(ion, &msg, false).is_err() {
            self.stats.c.notices_unsent.fetch_add(1, Relaxed);
        }
    }

    /// Tells the ION that process `pid` ended (it releases what it held).
    pub(crate) fn process_exit(&self, pid: u32) {
        if let Some((ion, _)) = self.limits() {
            self.send_notice(ion, MsgKind::ProcessExit, pid);
        }
    }
}
