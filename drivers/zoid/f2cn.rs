// SPDX-License-Identifier: GPL-2.0

//! f2cn: copying a file from the ION to the same path on every CN of its
//! pset with treenet broadcast (ZOID's file broadcast).
//!
//! * ION ([`F2cn::send_file`], run by `ZOID_IOC_F2CN` in the caller's
//!   process): broadcasts `FileBegin`, waits until every target answered,
//!   streams the file in [`CHUNK`]-byte broadcasts read straight into the
//!   message buffer, broadcasts `FileCommit` and waits for every target's
//!   answer.  A target that is down, silent past the timeout, or fails
//!   (no such directory, disk full) ends the transfer for everyone with a
//!   `FileAbort`, and the caller learns which CN failed and why.
//! * CN ([`F2cn::receive`], in zoid's receive thread): writes the chunks at
//!   their offsets into a temporary file next to the destination, checks
//!   the digest, and renames it into place: the destination is replaced
//!   whole or not at all.
//!
//! The pure parts (message bodies, chunk accounting, answer tracking) are
//! `zoid_proto::zoid::f2cn`, tested on the host.

use crate::traffic;
use crate::treenet;
use crate::zoid_kernel::stats::counters;
use crate::zoid_kernel::time::{deadline_after_ms, ms_to_jiffies, now_ns, random_u32};
use crate::zoid_kernel::vfs::{CPath, Export, File};
use crate::zoid_proto::zoid::f2cn::{
    self, chunk_digest, data_header, data_offset, outcome, record, Ack, Begin, Commit, F2cnError,
    Outcome, Plan, Progress, Step, TargetState, DATA_HEADER, MAX_TARGETS, PHASE_BEGIN,
    PHASE_COMMIT, PHASE_DATA,
};
use crate::zoid_proto::zoid::marshal::{Decoder, Encoder};
use crate::zoid_proto::zoid::wire::{CallHeader, MsgKind, HEADER_LEN};
use kernel::bindings;
use kernel::new_condvar;
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::{CondVar, CondVarTimeoutResult, Mutex};

/// Bytes per chunk (one treenet message each, well under its 4 MiB limit).
pub(crate) const CHUNK: u32 = 1 << 20;
/// Largest `FileBegin` body: four integers, the targets, the path.
const MAX_BEGIN: usize = 4 * 5 + 2 * MAX_TARGETS + 4096;
/// "No node" in reports.
pub(crate) const NO_NODE: u16 = 0xffff;

counters! {
    /// f2cn's counters (`/sys/kernel/zoid/f2cn`).
    pub(crate) struct F2cnStats {
        transfers: "ION: transfers completed on every target.",
        transfers_failed: "ION: transfers refused or aborted.",
        bytes_sent: "ION: file bytes broadcast.",
        files_received: "CN: files received and put in place.",
        bytes_received: "CN: file bytes written.",
        receive_failures: "CN: transfers this CN failed (answered with an errno).",
        aborted: "CN: transfers the ION aborted, or whose ION went down.",
        ignored: "CN: messages of transfers not for this CN, or stale.",
        malformed: "CN: transfer messages that did not decode.",
        sends_failed: "Transfer messages that could not be built or sent (ION: aborts, CN: acks): a CN not told of an abort keeps its temporary file until the next transfer; an ION missing a CN's ack fails the transfer at its timeout.",
        down_unrecorded: "ION: CNs that went down but could not be noted for want of memory: a transfer to every CN leaves them out instead of failing with EHOSTDOWN.",
    }
}

/// How a transfer ended, for the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Report {
    /// CNs that have the file (all targets on success).
    pub(crate) cns: u32,
    /// File bytes.
    pub(crate) bytes: u64,
    /// The CN that failed the transfer, or [`NO_NODE`].
    pub(crate) node: u16,
    /// 0, or the positive errno the transfer failed with.
    pub(crate) errno: i32,
}

impl Report {
    fn failed(node: u16, errno: i32) -> Self {
        Self {
            cns: 0,
            bytes: 0,
            node,
            errno,
        }
    }
}

/// What `ZOID_IOC_F2CN` asks for.
pub(crate) struct Request<'a> {
    /// The source, open for reading.
    pub(crate) file: &'a File,
    /// Destination path on the CNs (absolute).
    pub(crate) dest: &'a [u8],
    /// Permission bits on the CNs; `None`: the source's.
    pub(crate) mode: Option<u32>,
    /// Target CNs; `None`: every CN of the pset.
    pub(crate) nodes: Option<&'a [u16]>,
    /// How long each phase may wait for the CNs' answers.
    pub(crate) timeout_ms: u32,
}

/// The ION's transfer in progress: whom it waits for.
struct Sending {
    xfer: u32,
    /// The phase whose answers count ([`PHASE_BEGIN`], [`PHASE_COMMIT`];
    /// failures count in any phase).
    phase: u32,
    targets: KVec<u16>,
    states: KVec<TargetState>,
}

/// A CN's transfer in progress.
struct Incoming {
    ion: u16,
    xfer: u32,
    mode: u32,
    root: Export,
    dest: CPath,
    tmp: CPath,
    file: Option<File>,
    progress: Progress,
    got: KVVec<u64>,
    buf: KVVec<u8>,
}

/// f2cn on both sides.
#[pin_data]
pub(crate) struct F2cn {
    /// ION: one transfer at a time.
    #[pin]
    serial: Mutex<()>,
    #[pin]
    sending: Mutex<Option<Sending>>,
    #[pin]
    answered: CondVar,
    /// ION: CNs that went down and have not come back (a transfer to
    /// every CN refuses to start while one is down).
    #[pin]
    down: Mutex<KVec<u16>>,
    /// CN: the transfer being received (only the receive thread works on
    /// it; the lock makes `F2cn` shareable).
    #[pin]
    receiving: Mutex<Option<Incoming>>,
    next_xfer: Atomic<u32>,
    pub(crate) stats: F2cnStats,
}

fn pos(e: Error) -> i32 {
    -e.to_errno()
}

/// A message: header of `kind` for transfer `xfer` with `errno`, and room
/// for `body` bytes after it.
fn message(kind: MsgKind, xfer: u32, errno: i32, body: usize) -> Result<KVVec<u8>> {
    let mut m = KVVec::new();
    m.resize(HEADER_LEN + body, 0u8, GFP_KERNEL)?;
    let mut h = [0u8; HEADER_LEN];
    CallHeader {
        arg_len: body as u32,
        errno,
        ..CallHeader::new(kind, xfer)
    }
    .encode(&mut h);
    m[..HEADER_LEN].copy_from_slice(&h);
    Ok(m)
}

impl F2cn {
    /// No transfer, no CN known down.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            serial <- kernel::new_mutex!((), "zoid::f2cn_serial"),
            sending <- kernel::new_mutex!(None, "zoid::f2cn_sending"),
            answered <- new_condvar!("zoid::f2cn_answered"),
            down <- kernel::new_mutex!(KVec::new(), "zoid::f2cn_down"),
            receiving <- kernel::new_mutex!(None, "zoid::f2cn_receiving"),
            next_xfer: Atomic::new(random_u32()),
            stats: F2cnStats::new(),
        })
    }

    // ---------------------------------------------------------------- ION

    /// Sends `req.file` to every target CN (see the module doc).  Never
    /// fails halfway silently: the report names the CN that failed.
    pub(crate) fn send_file(&self, req: &Request<'_>) -> Report {
        let _one = self.serial.lock();
        let r = self.send_locked(req);
        let c = if r.errno == 0 {
            &self.stats.transfers
        } else {
            &self.stats.transfers_failed
        };
        c.fetch_add(1, Relaxed);
        r
    }

    fn send_locked(&self, req: &Request<'_>) -> Report {
        let st = match req.file.stat() {
            Ok(st) => st,
            Err(e) => return Report::failed(NO_NODE, pos(e)),
        };
        if st.mode & bindings::S_IFMT != bindings::S_IFREG {
            return Report::failed(NO_NODE, pos(EINVAL));
        }
        let plan = match Plan::new(st.size.max(0) as u64, CHUNK) {
            Ok(p) => p,
            Err(_) => return Report::failed(NO_NODE, pos(EFBIG)),
        };
        let mode = req.mode.unwrap_or(st.mode) & 0o7777;
        let targets = match self.targets(req.nodes) {
            Ok(t) => t,
            Err((node, e)) => return Report::failed(node, pos(e)),
        };
        let xfer = self.next_xfer.fetch_add(1, Relaxed);
        let mut states = KVec::new();
        for _ in 0..targets.len() {
            if states.push(TargetState::Waiting, GFP_KERNEL).is_err() {
                return Report::failed(NO_NODE, pos(ENOMEM));
            }
        }
        // The Begin message, encoded before the targets move into `sending`.
        let begin = (|| -> Result<KVVec<u8>> {
            let mut m = Encoder::measuring();
            Begin::encode(&mut m, plan, mode, &targets, req.dest).map_err(f2cn_errno)?;
            let mut msg = message(MsgKind::FileBegin, xfer, 0, m.len())?;
            let mut e = Encoder::new(&mut msg[HEADER_LEN..]);
            Begin::encode(&mut e, plan, mode, &targets, req.dest).map_err(f2cn_errno)?;
            Ok(msg)
        })();
        let begin = match begin {
            Ok(b) => b,
            Err(e) => return Report::failed(NO_NODE, pos(e)),
        };
        let cns = targets.len() as u32;
        *self.sending.lock() = Some(Sending {
            xfer,
            phase: PHASE_BEGIN,
            targets,
            states,
        });
        let r = self.run(req, plan, xfer, &begin);
        *self.sending.lock() = None;
        match r {
            Ok(()) => Report {
                cns,
                bytes: plan.size,
                node: NO_NODE,
                errno: 0,
            },
            Err((node, errno)) => {
                // Tell every CN to drop what it has.
                let sent = message(MsgKind::FileAbort, xfer, errno, 0)
                    .and_then(|m| traffic::send(treenet::BROADCAST, &m, true));
                if sent.is_err() {
                    self.stats.sends_failed.fetch_add(1, Relaxed);
                }
                Report::failed(node, errno)
            }
        }
    }

    /// The target CNs, sorted: `nodes` (each must be up), or every CN below
    /// this ION (none of those known to be down).
    fn targets(&self, nodes: Option<&[u16]>) -> core::result::Result<KVec<u16>, (u16, Error)> {
        let mut t = KVec::new();
        match nodes {
            Some(list) => {
                for &n in list {
                    if !treenet::is_below(n) {
                        return Err((n, EHOSTDOWN));
                    }
                    t.push(n, GFP_KERNEL).map_err(|_| (NO_NODE, ENOMEM))?;
                }
            }
            None => {
                if let Some(n) = self.first_down() {
                    return Err((n, EHOSTDOWN));
                }
                t = treenet::nodes_below().map_err(|e| (NO_NODE, e))?;
            }
        }
        t.sort_unstable();
        let mut i = 1;
        while i < t.len() {
            if t[i] == t[i - 1] {
                let _ = t.remove(i);
            } else {
                i += 1;
            }
        }
        if t.is_empty() {
            return Err((NO_NODE, ENXIO));
        }
        if t.len() > MAX_TARGETS {
            return Err((NO_NODE, E2BIG));
        }
        Ok(t)
    }

    /// The transfer proper; `Err((node, errno))` names who failed it.
    fn run(
        &self,
        req: &Request<'_>,
        plan: Plan,
        xfer: u32,
        begin: &[u8],
    ) -> core::result::Result<(), (u16, i32)> {
        let local = |e: Error| (NO_NODE, pos(e));
        traffic::send(treenet::BROADCAST, begin, true).map_err(local)?;
        self.wait_phase(req.timeout_ms)?;

        let mut msg = KVVec::new();
        // The largest chunk (never the whole of a file over 4 GiB on 32-bit).
        let room = HEADER_LEN + DATA_HEADER + u64::from(CHUNK).min(plan.size) as usize;
        msg.resize(room, 0u8, GFP_KERNEL)
            .map_err(|_| local(ENOMEM))?;
        let mut digest = 0u64;
        for index in 0..plan.chunks() {
            let (offset, len) = plan.chunk_range(index);
            let m = &mut msg[..HEADER_LEN + DATA_HEADER + len];
            let body = DATA_HEADER + len;
            let mut h = [0u8; HEADER_LEN];
            CallHeader {
                arg_len: body as u32,
                ..CallHeader::new(MsgKind::FileData, xfer)
            }
            .encode(&mut h);
            m[..HEADER_LEN].copy_from_slice(&h);
            m[HEADER_LEN..HEADER_LEN + DATA_HEADER].copy_from_slice(&data_header(offset));
            let data = &mut m[HEADER_LEN + DATA_HEADER..];
            // The file ending early: it shrank during the transfer.
            if !req
                .file
                .read_exact(data, &mut (offset as i64))
                .map_err(local)?
            {
                return Err(local(EIO));
            }
            digest = digest.wrapping_add(chunk_digest(index, data));
            traffic::send(treenet::BROADCAST, m, true).map_err(local)?;
            self.stats.bytes_sent.fetch_add(len as u64, Relaxed);
            // A CN that failed or went down ends it now, not at the commit.
            if let Some(Outcome::Failed { node, errno }) = self.current() {
                return Err((node, errno));
            }
            if kernel::current!().signal_pending() {
                return Err(local(EINTR));
            }
        }

        if let Some(s) = (*self.sending.lock()).as_mut() {
            s.phase = PHASE_COMMIT;
            f2cn::next_phase(&mut s.states);
        }
        let mut commit = message(MsgKind::FileCommit, xfer, 0, 16).map_err(local)?;
        Encoder::new(&mut commit[HEADER_LEN..])
            .put(&Commit {
                size: plan.size,
                digest,
            })
            .map_err(|_| local(EINVAL))?;
        traffic::send(treenet::BROADCAST, &commit, true).map_err(local)?;
        self.wait_phase(req.timeout_ms)
    }

    fn current(&self) -> Option<Outcome> {
        let g = self.sending.lock();
        g.as_ref().map(|s| outcome(&s.targets, &s.states))
    }

    /// Waits until every target answered the current phase, one failed, the
    /// timeout passed (the first silent target: `ETIMEDOUT`) or a signal.
    fn wait_phase(&self, timeout_ms: u32) -> core::result::Result<(), (u16, i32)> {
        let deadline = deadline_after_ms(timeout_ms.into());
        let mut g = self.sending.lock();
        loop {
            let Some(s) = g.as_ref() else {
                return Err((NO_NODE, pos(EINVAL)));
            };
            match outcome(&s.targets, &s.states) {
                Outcome::AllDone => return Ok(()),
                Outcome::Failed { node, errno } => return Err((node, errno)),
                Outcome::Waiting => {}
            }
            if now_ns() >= deadline {
                let silent = s
                    .targets
                    .iter()
                    .zip(s.states.iter())
                    .find(|(_, st)| **st == TargetState::Waiting)
                    .map_or(NO_NODE, |(n, _)| *n);
                return Err((silent, pos(ETIMEDOUT)));
            }
            let r = self
                .answered
                .wait_interruptible_timeout(&mut g, ms_to_jiffies(100));
            if let CondVarTimeoutResult::Signal { .. } = r {
                return Err((NO_NODE, pos(EINTR)));
            }
        }
    }

    /// A CN's answer (engine context: files it and wakes the sender).
    pub(crate) fn ack(&self, src: u16, hdr: &CallHeader, msg: &treenet::Message) {
        let mut body = [0u8; 4];
        let ack = msg
            .read_at(HEADER_LEN, &mut body)
            .ok()
            .and_then(|()| Decoder::new(&body).get::<Ack>().ok());
        let Some(ack) = ack else {
            self.stats.malformed.fetch_add(1, Relaxed);
            return;
        };
        let mut g = self.sending.lock();
        if let Some(s) = (*g).as_mut() {
            if s.xfer == hdr.tag && (hdr.errno != 0 || ack.phase == s.phase) {
                record(&s.targets, &mut s.states, src, hdr.errno);
            }
        }
        drop(g);
        self.answered.notify_all();
    }

    /// treenet's news about `node` (engine context).
    pub(crate) fn peer_event(&self, node: u16, up: bool) {
        {
            let mut d = self.down.lock();
            d.retain(|n| *n != node);
            // Only an ION keeps the list (its CNs are the nodes below it),
            // and never with itself (its loopback link's peer).
            let me = treenet::node_id().ok();
            if !up
                && treenet::ion().ok() == me
                && Some(node) != me
                && d.push(node, GFP_ATOMIC).is_err()
            {
                self.stats.down_unrecorded.fetch_add(1, Relaxed);
            }
        }
        if !up {
            if let Some(s) = (*self.sending.lock()).as_mut() {
                record(&s.targets, &mut s.states, node, pos(EHOSTDOWN));
            }
            self.answered.notify_all();
        }
    }

    /// Forgets CNs known to be down (`None`: all), so a transfer to every
    /// CN no longer waits for them (a CN taken out of service).
    pub(crate) fn forget(&self, node: Option<u16>) {
        self.down.lock().retain(|n| node.is_some_and(|x| x != *n));
    }

    /// Drops from the down list the CNs treenet reaches below this ION now
    /// (a neighbour that went down takes the nodes it listed below it
    /// along, though they may still be reached over their own links).
    fn prune_down(&self) {
        self.down.lock().retain(|n| !treenet::is_below(*n));
    }

    /// The first CN known to be down, if any.
    fn first_down(&self) -> Option<u16> {
        self.prune_down();
        self.down.lock().first().copied()
    }

    /// Calls `f` with each CN known to be down.
    pub(crate) fn for_each_down(&self, mut f: impl FnMut(u16) -> Result) -> Result {
        self.prune_down();
        for &n in self.down.lock().iter() {
            f(n)?;
        }
        Ok(())
    }

    // ----------------------------------------------------------------- CN

    /// A transfer message from `src` (zoid's receive thread).
    pub(crate) fn receive(&self, src: u16, hdr: &CallHeader, msg: &treenet::Message) {
        if treenet::ion().ok() != Some(src) {
            self.stats.ignored.fetch_add(1, Relaxed);
            return;
        }
        let mut g = self.receiving.lock();
        let ours = g
            .as_ref()
            .is_some_and(|i| i.xfer == hdr.tag && i.ion == src);
        match hdr.kind {
            MsgKind::FileBegin => {
                if let Some(old) = g.take() {
                    self.stats.aborted.fetch_add(1, Relaxed);
                    old.discard();
                }
                *g = self.begin(src, hdr, msg);
            }
            MsgKind::FileData | MsgKind::FileCommit if ours => {
                let Some(inc) = (*g).as_mut() else { return };
                let step = if hdr.kind == MsgKind::FileData {
                    self.data(inc, msg)
                } else {
                    commit_step(inc, msg)
                };
                match step {
                    Ok(Step::More) => {}
                    Ok(Step::Complete) => {
                        if let Some(inc) = g.take() {
                            self.finish(inc);
                        }
                    }
                    Err(e) => {
                        if let Some(inc) = g.take() {
                            self.fail(inc, PHASE_DATA, pos(e));
                        }
                    }
                }
            }
            MsgKind::FileAbort if ours => {
                if let Some(inc) = g.take() {
                    self.stats.aborted.fetch_add(1, Relaxed);
                    inc.discard();
                }
            }
            _ => {
                self.stats.ignored.fetch_add(1, Relaxed);
            }
        }
    }

    /// `node` went away: a transfer from it is dropped (receive thread).
    pub(crate) fn node_gone(&self, node: u16) {
        let mut g = self.receiving.lock();
        if g.as_ref().is_some_and(|i| i.ion == node) {
            if let Some(inc) = g.take() {
                self.stats.aborted.fetch_add(1, Relaxed);
                inc.discard();
            }
        }
    }

    fn begin(&self, ion: u16, hdr: &CallHeader, msg: &treenet::Message) -> Option<Incoming> {
        let len = msg.len().saturating_sub(HEADER_LEN);
        if len > MAX_BEGIN {
            self.stats.malformed.fetch_add(1, Relaxed);
            return None;
        }
        let mut body = KVec::new();
        if body.resize(len, 0u8, GFP_KERNEL).is_err() || msg.read_at(HEADER_LEN, &mut body).is_err()
        {
            self.stats.malformed.fetch_add(1, Relaxed);
            return None;
        }
        // A Begin that does not decode names no targets we could trust:
        // counted, not answered (the ION times out and names this CN).
        let Ok(b) = Begin::decode(&body) else {
            self.stats.malformed.fetch_add(1, Relaxed);
            return None;
        };
        let me = treenet::node_id().unwrap_or(NO_NODE);
        if !b.has_target(me) {
            self.stats.ignored.fetch_add(1, Relaxed);
            return None;
        }
        match Incoming::open(ion, hdr.tag, &b) {
            Ok(inc) => {
                send_ack(&self.stats, ion, hdr.tag, PHASE_BEGIN, 0);
                Some(inc)
            }
            Err(e) => {
                self.stats.receive_failures.fetch_add(1, Relaxed);
                send_ack(&self.stats, ion, hdr.tag, PHASE_BEGIN, pos(e));
                None
            }
        }
    }

    fn data(&self, inc: &mut Incoming, msg: &treenet::Message) -> Result<Step> {
        let len = msg
            .len()
            .checked_sub(HEADER_LEN + DATA_HEADER)
            .ok_or(EBADMSG)?;
        let mut head = [0u8; DATA_HEADER];
        msg.read_at(HEADER_LEN, &mut head)?;
        let offset = data_offset(&head).map_err(f2cn_errno)?;
        match inc.progress.check(&inc.got, offset, len) {
            Ok(_) => {}
            Err(F2cnError::Duplicate) => {
                self.stats.ignored.fetch_add(1, Relaxed);
                return Ok(Step::More);
            }
            Err(e) => return Err(f2cn_errno(e)),
        }
        let buf = inc.buf.get_mut(..len).ok_or(EBADMSG)?;
        msg.read_at(HEADER_LEN + DATA_HEADER, buf)?;
        let file = inc.file.as_ref().ok_or(EBADF)?;
        file.write_all(buf, &mut (offset as i64))?;
        self.stats.bytes_received.fetch_add(len as u64, Relaxed);
        inc.progress
            .data(&mut inc.got, offset, buf)
            .map_err(f2cn_errno)
    }

    /// Every chunk is in and checked: flush, set the mode, put in place.
    fn finish(&self, mut inc: Incoming) {
        let r = (|| -> Result {
            let file = inc.file.take().ok_or(EBADF)?;
            file.fsync()?;
            file.chmod(inc.mode)?;
            drop(file);
            inc.root.rename(&inc.tmp, &inc.dest)
        })();
        match r {
            Ok(()) => {
                self.stats.files_received.fetch_add(1, Relaxed);
                send_ack(&self.stats, inc.ion, inc.xfer, PHASE_COMMIT, 0);
            }
            Err(e) => self.fail(inc, PHASE_COMMIT, pos(e)),
        }
    }

    fn fail(&self, inc: Incoming, phase: u32, errno: i32) {
        self.stats.receive_failures.fetch_add(1, Relaxed);
        send_ack(&self.stats, inc.ion, inc.xfer, phase, errno);
        inc.discard();
    }
}

fn commit_step(inc: &mut Incoming, msg: &treenet::Message) -> Result<Step> {
    let mut body = [0u8; 16];
    if msg.len() != HEADER_LEN + body.len() {
        return Err(EBADMSG);
    }
    msg.read_at(HEADER_LEN, &mut body)?;
    let c = Decoder::new(&body).get::<Commit>().map_err(|_| EBADMSG)?;
    inc.progress.commit(c.size, c.digest).map_err(f2cn_errno)
}

impl Incoming {
    /// Creates the temporary file for transfer `xfer` described by `b`.
    fn open(ion: u16, xfer: u32, b: &Begin<'_>) -> Result<Self> {
        let root = Export::open(c"/")?;
        let dest = CPath::new(b.path)?;
        let mut tmp_name = KVec::new();
        tmp_name.extend_from_slice(b.path, GFP_KERNEL)?;
        tmp_name.extend_from_slice(b".f2cn-", GFP_KERNEL)?;
        for shift in (0..8).rev() {
            let d = ((xfer >> (4 * shift)) & 0xf) as u8;
            tmp_name.push(if d < 10 { b'0' + d } else { b'a' + d - 10 }, GFP_KERNEL)?;
        }
        let tmp = CPath::new(&tmp_name)?;
        // A leftover of an earlier attempt with the same id.
        let _ = root.remove(&tmp, false);
        let flags = bindings::O_WRONLY | bindings::O_CREAT | bindings::O_EXCL;
        let file = root.open_file(&tmp, flags, 0o600)?;
        let plan = b.plan;
        let mut got = KVVec::new();
        got.resize(plan.bitmap_words(), 0u64, GFP_KERNEL)?;
        let mut buf = KVVec::new();
        buf.resize(
            u64::from(plan.chunk).min(plan.size) as usize,
            0u8,
            GFP_KERNEL,
        )?;
        let progress = Progress::new(plan, &mut got).map_err(f2cn_errno)?;
        Ok(Self {
            ion,
            xfer,
            mode: b.mode,
            root,
            dest,
            tmp,
            file: Some(file),
            progress,
            got,
            buf,
        })
    }

    /// Drops the transfer and its temporary file.
    fn discard(mut self) {
        self.file.take();
        let _ = self.root.remove(&self.tmp, false);
    }
}

fn f2cn_errno(e: F2cnError) -> Error {
    Error::from_errno(-e.errno())
}

fn send_ack(stats: &F2cnStats, ion: u16, xfer: u32, phase: u32, errno: i32) {
    let sent = message(MsgKind::FileAck, xfer, errno, 4).and_then(|mut m| {
        m[HEADER_LEN..].copy_from_slice(&phase.to_be_bytes());
        traffic::send(ion, &m, true)
    });
    if sent.is_err() {
        stats.sends_failed.fetch_add(1, Relaxed);
    }
}
