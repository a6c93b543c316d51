// SPDX-License-Identifier: GPL-2.0

//! The ION's side of launched jobs (`zoid-job run`, tools/zoid/zoid-job.c):
//! starting a program on CNs and gathering its ranks' output and ends.
//!
//! `ZOID_IOC_JOB_RUN` on `/dev/zoid` ([`Launcher::run`]) checks the
//! request (spec, CNs, identity), registers the job, gives the caller a
//! descriptor for it, and sends each CN a `JobLaunch`.  Through the
//! descriptor ([`JobFile`]) the caller reads the job's events (output,
//! rank ends, the job's end: `struct zoid_job_event` in tools/zoid/zoid.h),
//! writes its standard input, and signals it; closing it kills the ranks
//! still running.  The protocol and its windows are
//! `zoid_proto::zoid::jobs`.
//!
//! A CN is not trusted: a rank's output and end are taken only from the
//! CN the rank was launched on, while the rank runs, within its windows
//! (`refused_foreign`, `refused_overrun`), so a CN can neither end nor
//! feed another CN's ranks, nor make the ION hold more than
//! `job_stream_window` per stream of its own ranks.  Launching as another
//! identity than one's own, and signalling another owner's job, takes
//! `CAP_SYS_ADMIN`.
//!
//! Locks: the job table's lock, then one job's state lock; neither is
//! held while sending or copying user memory.

use crate::job_plugin::{Job, LaunchScripts};
use crate::job_ranks::{data_header, header, send_word, MsgQueue};
use crate::traffic;
use crate::treenet;
use crate::zoid_kernel::anonfile::{Access, AnonFile, FileOps, ReservedFd};
use crate::zoid_kernel::cred::{current_is_admin, Creds};
use crate::zoid_kernel::stats::counters;
use crate::zoid_kernel::sysfs::SysfsWriter;
use crate::zoid_kernel::time::{random_u32, U64};
use crate::zoid_kernel::umh::Wait;
use crate::zoid_proto::zoid::jobs::{
    self, ExitReport, JobError, Launch, Layout, RankEnd, RecvWindow, SendWindow, Spec, Tally,
};
use crate::zoid_proto::zoid::marshal::Encoder;
use crate::zoid_proto::zoid::wire::{CallHeader, MsgKind, HEADER_LEN};
use kernel::new_condvar;
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::{Arc, CondVar, Mutex};
use kernel::uaccess::{UserPtr, UserSlice};

/// Largest spec block `zoid-job run` may hand over.
pub(crate) const MAX_SPEC_LEN: usize = jobs::MAX_SPEC;
/// Launched jobs known at once (more: `EAGAIN`).
const MAX_JOBS: usize = 64;
/// Most CNs a request names.
const MAX_CNS: usize = 4096;
/// `job_stream_window` at load.
pub(crate) const DEFAULT_WINDOW: u32 = 256 << 10;
/// Bytes of a `struct zoid_job_run`.
pub(crate) const IOC_JOB_RUN_LEN: usize = 64;
/// Bytes of a `struct zoid_job_kill`.
pub(crate) const IOC_JOB_KILL_LEN: usize = 8;
/// `ZOID_JOB_IOC_SIGNAL` on a job's descriptor.
const JOB_IOC_SIGNAL: u32 = kernel::ioctl::_IOW::<u32>(b'Z' as u32, 6);
/// `ZOID_JOB_IOC_EOF` on a job's descriptor.
const JOB_IOC_EOF: u32 = kernel::ioctl::_IO(b'Z' as u32, 7);
/// Bytes of a `struct zoid_job_event`.
const EVENT_LEN: usize = 16;
/// Smallest read of a job's descriptor.
const MIN_READ: usize = 64;
/// `zoid_job_event.type`.
const EV_OUTPUT: u16 = 1;
const EV_EXIT: u16 = 2;
const EV_FAILED: u16 = 3;
const EV_END: u16 = 4;
/// Signal a closed job descriptor sends the ranks still running.
const SIGKILL: u32 = 9;
/// `errno` of a rank lost with its CN.
const EHOSTDOWN_NR: i32 = 112;

counters! {
    /// Launched jobs' counters, both sides (`/sys/kernel/zoid/launch_stats`).
    pub(crate) struct JobCounters {
        jobs_launched: "ION: jobs started (zoid-job run).",
        jobs_refused: "ION: zoid-job run requests refused (spec, CNs, identity, limits).",
        ranks_ended: "ION: rank ends received (exit, signal, not started).",
        ranks_failed: "ION: ranks that ended badly: non-zero status, a signal, not started.",
        ranks_lost: "ION: ranks lost with their CN (down, or its launch not sent).",
        launches_unsent: "ION: launches that could not be sent (their ranks are lost).",
        signals_sent: "ION: signal messages sent to CNs.",
        output_msgs: "Output messages of ranks: sent (CN), received (ION).",
        output_bytes: "Output bytes of ranks: sent (CN), received (ION).",
        input_msgs: "Input messages of ranks: sent (ION), received (CN).",
        input_bytes: "Input bytes of ranks: sent (ION), received (CN).",
        credits_sent: "Window credits sent.",
        credits_received: "Window credits received.",
        credits_unsent: "Window credits that could not be sent (sent with the next one).",
        output_unsent: "CN: output messages that could not be sent (the write failed).",
        refused_foreign: "Job messages refused for their sender: another CN's rank, a job not launched, a node that is not this CN's ION.",
        refused_overrun: "Stream messages beyond their window, or credits beyond what was sent.",
        malformed: "Job messages that did not decode.",
        stale: "Job messages for ranks or jobs that already ended.",
        output_discarded: "ION: output bytes of jobs whose descriptor was closed.",
        launches: "CN: launches received from the ION.",
        ranks_started: "CN: ranks started.",
        ranks_not_started: "CN: ranks that could not start (the ION is told).",
        ranks_exited: "CN: rank ends reported to the ION.",
        exits_unsent: "CN: rank ends that could not be sent to the ION.",
        signals_received: "CN: signal messages received.",
        signals_delivered: "CN: ranks signalled.",
        signals_unsent: "Signals not delivered for want of memory.",
        stream_held_peak: "ION: most output held for readers at once, all jobs (bytes, with each message's cost).",
        end_scripts_failed: "ION: launched jobs whose end scripts failed or could not start.",
        output_gaps: "ION: output streams that ended with messages missing (their sends failed on the CN): what came after went on in order.",
    }
}

/// The counters, and what the peak is taken over.
pub(crate) struct JobStats {
    pub(crate) c: JobCounters,
    held: Atomic<u64>,
}

impl JobStats {
    pub(crate) fn new() -> Self {
        Self {
            c: JobCounters::new(),
            held: Atomic::new(0),
        }
    }

    fn hold(&self, n: u64) {
        let h = self.held.fetch_add(n, Relaxed) + n;
        let mut peak = self.c.stream_held_peak.load(Relaxed);
        while h > peak {
            match self.c.stream_held_peak.cmpxchg(peak, h, Relaxed) {
                Ok(_) => break,
                Err(p) => peak = p,
            }
        }
    }

    fn release(&self, n: u64) {
        self.held.fetch_sub(n, Relaxed);
    }
}

/// One output stream of a rank, as the ION holds it for the reader.
struct OutQueue {
    q: MsgQueue,
    window: RecvWindow,
}

impl OutQueue {
    fn new(window: u32) -> Result<Self> {
        let w = RecvWindow::new(window);
        Ok(Self {
            q: MsgQueue::new(w.max_messages() as usize)?,
            window: w,
        })
    }

    /// Drops what is held unread: its bytes, what it cost, and the credit
    /// that reopens the writer's window.
    fn discard(&mut self) -> (u64, u32, u32) {
        let bytes = self.q.clear();
        let held = self.window.held();
        (bytes, held, self.window.discard())
    }
}

struct RankSlot {
    /// The CN that runs it.
    node: u16,
    /// Its end as its CN reported it, until every output message it
    /// counts arrived.
    pending: Option<ExitReport>,
    /// Output messages received (stdout, stderr).
    received: [u32; 2],
    /// Input messages sent (the next one's sequence number).
    input_sent: u32,
    /// Its CN opened its input window (the rank exists there).
    input_open: bool,
    end: Option<RankEnd>,
    end_reported: bool,
    out: [OutQueue; 2],
    input: SendWindow,
    /// In the ready FIFO.
    queued: bool,
}

struct JobState {
    ranks: KVec<RankSlot>,
    /// Ranks with something to report, in order; at most one entry each.
    ready: KVec<u32>,
    ready_head: usize,
    tally: Tally,
    /// The job's end was read: reads return 0.
    end_read: bool,
    /// The descriptor was closed: output is discarded.
    reader_gone: bool,
    /// Standard input ended.
    input_eof: bool,
    /// Launches were sent (before: the job goes with its descriptor).
    launched: bool,
    /// Output held for the reader now, and at most (bytes, with each
    /// message's cost).
    held: u64,
    held_peak: u64,
    /// A rank was lost with its CN: the reader kills the others (the job
    /// cannot finish whole), from process context.
    kill_pending: bool,
    /// The end scripts ran (or were started).
    end_scripts_run: bool,
}

/// What a launched job's scripts are told, kept for its end.
struct ScriptText {
    exec: KVec<u8>,
    args: KVec<u8>,
    env: KVec<u8>,
    home: KVec<u8>,
    user: KVec<u8>,
    shell: KVec<u8>,
}

impl ScriptText {
    fn new(spec: &Spec<'_>) -> Result<Self> {
        let mut t = Self {
            exec: KVec::new(),
            args: KVec::new(),
            env: KVec::new(),
            home: KVec::new(),
            user: KVec::new(),
            shell: KVec::new(),
        };
        for (i, a) in spec.argv.iter().enumerate() {
            match i {
                0 => t.exec.extend_from_slice(a, GFP_KERNEL)?,
                1 => t.args.extend_from_slice(a, GFP_KERNEL)?,
                _ => {
                    t.args.push(b':', GFP_KERNEL)?;
                    t.args.extend_from_slice(a, GFP_KERNEL)?;
                }
            }
        }
        for (i, e) in spec.env.iter().enumerate() {
            if i > 0 {
                t.env.push(b':', GFP_KERNEL)?;
            }
            t.env.extend_from_slice(e, GFP_KERNEL)?;
            for (name, into) in [
                (&b"HOME="[..], &mut t.home),
                (b"USER=", &mut t.user),
                (b"SHELL=", &mut t.shell),
            ] {
                if let Some(v) = e.strip_prefix(name) {
                    into.clear();
                    into.extend_from_slice(v, GFP_KERNEL)?;
                }
            }
        }
        Ok(t)
    }
}

impl JobState {
    fn mark_ready(&mut self, rank: u32) {
        let slot = &mut self.ranks[rank as usize];
        if slot.queued {
            return;
        }
        slot.queued = true;
        if self.ready_head > 0 && self.ready.len() == self.ready.capacity() {
            // Compact: the consumed front makes room.
            let head = self.ready_head;
            let live = self.ready.len() - head;
            for i in 0..live {
                self.ready[i] = self.ready[head + i];
            }
            self.ready.truncate(live);
            self.ready_head = 0;
        }
        // Every rank is in the FIFO at most once: there is room.
        if self.ready.push_within_capacity(rank).is_err() {
            self.ranks[rank as usize].queued = false;
        }
    }

    fn pop_ready(&mut self) -> Option<u32> {
        if self.ready_head == self.ready.len() {
            return None;
        }
        let r = self.ready[self.ready_head];
        self.ready_head += 1;
        if self.ready_head == self.ready.len() {
            self.ready.clear();
            self.ready_head = 0;
        }
        self.ranks[r as usize].queued = false;
        Some(r)
    }

    /// Ends `rank` if its end was reported and every output message it
    /// sent before arrived.
    fn complete(&mut self, rank: u32, stats: &JobStats) {
        let slot = &mut self.ranks[rank as usize];
        if let Some(p) = slot.pending {
            if slot.received[0] >= p.sent[0] && slot.received[1] >= p.sent[1] {
                // Messages after one whose send failed on the CN: in order.
                for q in slot.out.iter_mut() {
                    if q.q.flush_early() > 0 {
                        stats.c.output_gaps.fetch_add(1, Relaxed);
                    }
                }
                self.end(rank, p.end, stats);
            }
        }
    }

    /// Ends `rank` (once).
    fn end(&mut self, rank: u32, end: RankEnd, stats: &JobStats) -> bool {
        let slot = &mut self.ranks[rank as usize];
        if slot.end.is_some() {
            return false;
        }
        slot.end = Some(end);
        self.tally.ended(end);
        if !end.is_success() {
            stats.c.ranks_failed.fetch_add(1, Relaxed);
        }
        self.mark_ready(rank);
        true
    }
}

/// A job launched from this ION.
#[pin_data]
pub(crate) struct LaunchedJob {
    id: u32,
    uid: u32,
    gid: u32,
    argv0: KVec<u8>,
    flags: u32,
    layout: Layout,
    scripts: ScriptText,
    #[pin]
    state: Mutex<JobState>,
    /// The reader waits here for events.
    #[pin]
    events: CondVar,
    /// Writers of input wait here for window.
    #[pin]
    input_room: CondVar,
    /// Serialises readers (a reader copies outside `state`).
    #[pin]
    reading: Mutex<()>,
    /// Serialises writers of input.
    #[pin]
    writing: Mutex<()>,
    launcher: Arc<Launcher>,
}

/// Every job launched from this ION.
#[pin_data]
pub(crate) struct Launcher {
    #[pin]
    jobs: Mutex<KVec<Arc<LaunchedJob>>>,
    next_id: Atomic<u32>,
    pub(crate) stats: Arc<JobStats>,
    /// Each stream's window (`job_stream_window`).
    pub(crate) window: Atomic<u32>,
    /// The `job` plug-in: its job script, the job runner.
    job: Arc<Job>,
}

fn script_info<'a>(
    id: u32,
    t: &'a ScriptText,
    layout: Layout,
    owner: (u32, u32),
) -> LaunchScripts<'a> {
    LaunchScripts {
        id,
        exec: &t.exec,
        args: &t.args,
        env: &t.env,
        global_size: layout.global_size(),
        local_size: layout.local_size,
        owner,
        home: &t.home,
        user: &t.user,
        shell: &t.shell,
    }
}

/// Reads native-endian `u32` at `at`.
fn ne32(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Reads native-endian `u64` at `at`.
fn ne64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_ne_bytes(w)
}

fn job_errno(e: JobError) -> Error {
    Error::from_errno(-e.errno())
}

impl Launcher {
    /// No jobs.
    pub(crate) fn new(stats: Arc<JobStats>, job: Arc<Job>) -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(Self {
                jobs <- kernel::new_mutex!(KVec::new(), "zoid::launched"),
                // Ids go on from a random start: ranks of a job launched
                // before zoid was loaded again never meet a new job's id.
                next_id: Atomic::new(random_u32() | 1),
                stats,
                window: Atomic::new(DEFAULT_WINDOW),
                job,
            }? Error),
            GFP_KERNEL,
        )
    }

    fn find(&self, id: u32) -> Option<Arc<LaunchedJob>> {
        self.jobs.lock().iter().find(|j| j.id == id).cloned()
    }

    fn forget(&self, job: &LaunchedJob) {
        self.jobs
            .lock()
            .retain(|j| !core::ptr::eq::<LaunchedJob>(&**j, job));
    }

    /// `/sys/kernel/zoid/launched`: one line per job.
    pub(crate) fn show(&self, w: &mut SysfsWriter<'_>) -> Result {
        let g = self.jobs.lock();
        for j in g.iter() {
            let (running, peak) = {
                let g = j.state.lock();
                (g.tally.left(), g.held_peak)
            };
            write!(
                w,
                "{} uid {} ranks {} running {} held_peak {} ",
                j.id,
                j.uid,
                j.layout.global_size(),
                running,
                U64(peak)
            )?;
            w.write_bytes(&j.argv0)?;
            writeln!(w)?;
        }
        Ok(())
    }

    /// `ZOID_IOC_JOB_RUN`.
    pub(crate) fn run(self: &Arc<Self>, arg: UserPtr) -> Result<isize> {
        let r = self.try_run(arg);
        if r.is_err() {
            self.stats.c.jobs_refused.fetch_add(1, Relaxed);
        }
        r
    }

    fn try_run(self: &Arc<Self>, arg: UserPtr) -> Result<isize> {
        let (mut reader, mut writer) = UserSlice::new(arg, IOC_JOB_RUN_LEN).reader_writer();
        let mut req = [0u8; IOC_JOB_RUN_LEN];
        reader.read_slice(&mut req)?;
        let spec_addr = ne64(&req, 0);
        let cns_addr = ne64(&req, 8);
        let spec_len = ne32(&req, 16) as usize;
        let ncns = ne32(&req, 20) as usize;
        let flags = ne32(&req, 24);
        let (mut uid, mut gid) = (ne32(&req, 28), ne32(&req, 32));
        let local = match ne32(&req, 36) {
            0 => 1,
            n => n,
        };
        if req[52..64].iter().any(|&b| b != 0) || flags & !jobs::FLAGS_KNOWN != 0 {
            return Err(EINVAL);
        }
        // Identity: one's own, unless an administrator.
        let me = Creds::current();
        if uid == u32::MAX {
            uid = me.uid;
        }
        if gid == u32::MAX {
            gid = me.gid;
        }
        if (uid != me.uid || gid != me.gid) && !current_is_admin() {
            return Err(EPERM);
        }
        if spec_len > MAX_SPEC_LEN {
            return Err(E2BIG);
        }
        let mut spec_buf = KVec::from_elem(0u8, spec_len, GFP_KERNEL)?;
        UserSlice::new(UserPtr::from_addr(spec_addr as usize), spec_len)
            .reader()
            .read_slice(&mut spec_buf)?;
        let spec = Spec::parse(&spec_buf).map_err(job_errno)?;
        // The CNs: as named, or every CN up, by id.
        let nodes = if ncns == 0 {
            let mut v = treenet::nodes_below()?;
            v.sort_unstable();
            if v.is_empty() {
                return Err(ENODEV);
            }
            v
        } else {
            if ncns > MAX_CNS {
                return Err(EINVAL);
            }
            let mut raw = KVec::from_elem(0u8, ncns * 2, GFP_KERNEL)?;
            UserSlice::new(UserPtr::from_addr(cns_addr as usize), ncns * 2)
                .reader()
                .read_slice(&mut raw)?;
            let mut v = KVec::with_capacity(ncns, GFP_KERNEL)?;
            for c in raw.chunks_exact(2) {
                let n = u16::from_ne_bytes([c[0], c[1]]);
                if v.contains(&n) {
                    return Err(EINVAL);
                }
                if !treenet::is_below(n) || !treenet::reachable(n) {
                    return Err(EHOSTDOWN);
                }
                v.push(n, GFP_KERNEL)?;
            }
            v
        };
        let layout = Layout::new(nodes.len() as u32, local).map_err(job_errno)?;
        let window = self.window.load(Relaxed);
        let argv0 = {
            let a = spec.argv.iter().next().unwrap_or(&[]);
            let mut v = KVec::new();
            v.extend_from_slice(a, GFP_KERNEL)?;
            v
        };
        let global = layout.global_size();
        let mut ranks = KVec::with_capacity(global as usize, GFP_KERNEL)?;
        for r in 0..global {
            let node = nodes[layout.cn_of(r).unwrap_or(0) as usize];
            ranks.push(
                RankSlot {
                    node,
                    pending: None,
                    received: [0, 0],
                    input_sent: 0,
                    input_open: false,
                    end: None,
                    end_reported: false,
                    out: [OutQueue::new(window)?, OutQueue::new(window)?],
                    input: SendWindow::closed(window),
                    queued: false,
                },
                GFP_KERNEL,
            )?;
        }
        let id = self.next_id.fetch_add(1, Relaxed);
        // The job scripts' start, before anything runs (ZeptoOS's order):
        // a failing script fails the launch.
        let scripts = ScriptText::new(&spec)?;
        self.job.run_launch_scripts(
            &script_info(id, &scripts, layout, (uid, gid)),
            b"1",
            Wait::Exit,
        )?;
        let job = Arc::pin_init(
            try_pin_init!(LaunchedJob {
                id,
                uid,
                gid,
                argv0,
                flags,
                layout,
                scripts,
                state <- kernel::new_mutex!(
                    JobState {
                        ranks,
                        ready: KVec::with_capacity(global as usize, GFP_KERNEL)?,
                        ready_head: 0,
                        tally: Tally::new(global),
                        end_read: false,
                        reader_gone: false,
                        input_eof: false,
                        launched: false,
                        held: 0,
                        held_peak: 0,
                        kill_pending: false,
                        end_scripts_run: false,
                    },
                    "zoid::launched_job"
                ),
                events <- new_condvar!("zoid::launched_events"),
                input_room <- new_condvar!("zoid::launched_input"),
                reading <- kernel::new_mutex!((), "zoid::launched_reading"),
                writing <- kernel::new_mutex!((), "zoid::launched_writing"),
                launcher: self.clone(),
            }? Error),
            GFP_KERNEL,
        )?;
        let file = AnonFile::new(
            c"zoid-job",
            Arc::new(JobFile { job: job.clone() }, GFP_KERNEL)?,
            Access::ReadWrite,
        )?;
        {
            let mut g = self.jobs.lock();
            if g.len() >= MAX_JOBS {
                return Err(EAGAIN);
            }
            g.push(job.clone(), GFP_KERNEL)?;
        }
        // The caller learns the job and its descriptor before anything runs.
        let told = (|| -> Result<ReservedFd> {
            let fd = ReservedFd::new()?;
            let mut out = req;
            out[40..44].copy_from_slice(&id.to_ne_bytes());
            out[44..48].copy_from_slice(&global.to_ne_bytes());
            out[48..52].copy_from_slice(&fd.number().to_ne_bytes());
            writer.write_slice(&out)?;
            Ok(fd)
        })();
        let fd = match told {
            Ok(fd) => fd,
            Err(e) => {
                // Nothing was launched: the job goes with its file.
                job.state.lock().reader_gone = true;
                self.forget(&job);
                return Err(e);
            }
        };
        job.state.lock().launched = true;
        fd.install(&file);
        drop(file);
        self.stats.c.jobs_launched.fetch_add(1, Relaxed);
        // Launch on every CN; a CN that cannot be told loses its ranks.
        for (i, &node) in nodes.iter().enumerate() {
            let l = Launch {
                first_rank: layout.first_rank(i as u32),
                local_size: local,
                global_size: global,
                uid,
                gid,
                window,
                flags,
                spec,
            };
            if let Err(e) = send_launch(node, id, &l) {
                self.stats.c.launches_unsent.fetch_add(1, Relaxed);
                let mut g = job.state.lock();
                for r in l.first_rank..l.first_rank + local {
                    self.stats.c.ranks_lost.fetch_add(1, Relaxed);
                    g.end(r, RankEnd::Lost(-e.to_errno()), &self.stats);
                }
                drop(g);
                job.events.notify_all();
            }
        }
        Ok(0)
    }

    /// `ZOID_IOC_JOB_KILL`: signals a job (its owner, or an administrator).
    pub(crate) fn kill(&self, arg: UserPtr) -> Result<isize> {
        let mut req = [0u8; IOC_JOB_KILL_LEN];
        UserSlice::new(arg, IOC_JOB_KILL_LEN)
            .reader()
            .read_slice(&mut req)?;
        let (id, sig) = (ne32(&req, 0), ne32(&req, 4));
        let job = self.find(id).ok_or(ESRCH)?;
        if Creds::current().uid != job.uid && !current_is_admin() {
            return Err(EPERM);
        }
        job.signal(sig)?;
        Ok(0)
    }

    /// A job message from a CN (treenet's receive thread: nothing here
    /// sleeps or sends).
    pub(crate) fn receive(&self, src: u16, hdr: &CallHeader, msg: treenet::Message) {
        let s = &self.stats.c;
        let Some(job) = self.find(hdr.tag) else {
            // A job this ION never launched, or one long gone.
            s.refused_foreign.fetch_add(1, Relaxed);
            return;
        };
        let rank = hdr.pid;
        let mut g = job.state.lock();
        if g.reader_gone {
            // Its descriptor was just closed.
            s.stale.fetch_add(1, Relaxed);
            return;
        }
        let Some(slot) = g.ranks.get_mut(rank as usize) else {
            s.refused_foreign.fetch_add(1, Relaxed);
            return;
        };
        if slot.node != src {
            // Another CN's rank: a CN speaking for another.
            s.refused_foreign.fetch_add(1, Relaxed);
            return;
        }
        if slot.end.is_some() {
            s.stale.fetch_add(1, Relaxed);
            return;
        }
        let body = msg.len() - HEADER_LEN;
        match hdr.kind {
            MsgKind::JobOutput => {
                let stream = hdr.function;
                if !(jobs::STDOUT..=jobs::STDERR).contains(&stream) {
                    s.malformed.fetch_add(1, Relaxed);
                    return;
                }
                let seq = hdr.uid;
                let q = &mut slot.out[usize::from(stream - 1)];
                if !q.q.fresh(seq) {
                    s.stale.fetch_add(1, Relaxed);
                    return;
                }
                if q.window.accept(body as u32).is_err() {
                    s.refused_overrun.fetch_add(1, Relaxed);
                    return;
                }
                let in_order = match q.q.arrive(seq, msg) {
                    Ok(n) => n,
                    Err(_) => {
                        // (The window bounds the messages: cannot happen.)
                        s.refused_overrun.fetch_add(1, Relaxed);
                        return;
                    }
                };
                s.output_msgs.fetch_add(1, Relaxed);
                s.output_bytes.fetch_add(body as u64, Relaxed);
                slot.received[usize::from(stream - 1)] += 1;
                let cost = (body + jobs::MESSAGE_COST as usize) as u64;
                self.stats.hold(cost);
                g.held += cost;
                g.held_peak = g.held_peak.max(g.held);
                if in_order > 0 {
                    g.mark_ready(rank);
                }
                g.complete(rank, &self.stats);
            }
            MsgKind::JobCredit => {
                let mut w = [0u8; 4];
                if hdr.function != jobs::STDIN
                    || body != 4
                    || msg.read_at(HEADER_LEN, &mut w).is_err()
                {
                    s.malformed.fetch_add(1, Relaxed);
                    return;
                }
                s.credits_received.fetch_add(1, Relaxed);
                if slot.input.credit(u32::from_be_bytes(w)).is_err() {
                    s.refused_overrun.fetch_add(1, Relaxed);
                } else {
                    slot.input_open = true;
                }
                drop(g);
                job.input_room.notify_all();
                return;
            }
            MsgKind::JobExit => {
                let mut b = [0u8; ExitReport::LEN];
                let report = if body == ExitReport::LEN && msg.read_at(HEADER_LEN, &mut b).is_ok() {
                    ExitReport::decode(hdr.errno, &b)
                } else {
                    Err(JobError::Malformed)
                };
                let Ok(report) = report else {
                    s.malformed.fetch_add(1, Relaxed);
                    return;
                };
                if slot.pending.is_some() {
                    s.stale.fetch_add(1, Relaxed);
                    return;
                }
                s.ranks_ended.fetch_add(1, Relaxed);
                slot.pending = Some(report);
                g.complete(rank, &self.stats);
                drop(g);
                job.events.notify_all();
                job.input_room.notify_all();
                return;
            }
            _ => {
                s.malformed.fetch_add(1, Relaxed);
                return;
            }
        }
        drop(g);
        job.events.notify_all();
    }

    /// CN `node` went down: its ranks are lost.
    pub(crate) fn node_down(&self, node: u16) {
        let jobs = {
            let g = self.jobs.lock();
            let mut v = KVec::new();
            for j in g.iter() {
                if v.push(j.clone(), GFP_KERNEL).is_err() {
                    // (The job's ranks on the node then end when it is
                    // signalled or closed.)
                    self.stats.c.signals_unsent.fetch_add(1, Relaxed);
                }
            }
            v
        };
        for j in jobs.iter() {
            let mut g = j.state.lock();
            let mut lost = 0;
            for r in 0..g.ranks.len() {
                let slot = &g.ranks[r];
                if slot.node == node && slot.end.is_none() {
                    // An end reported but not yet whole stands: the rest
                    // of its output will not come.
                    let end = match slot.pending {
                        Some(p) => p.end,
                        None => {
                            lost += 1;
                            RankEnd::Lost(EHOSTDOWN_NR)
                        }
                    };
                    g.end(r as u32, end, &self.stats);
                }
            }
            if lost > 0 && !g.tally.done() {
                g.kill_pending = true;
            }
            drop(g);
            if lost > 0 {
                self.stats.c.ranks_lost.fetch_add(lost, Relaxed);
            }
            j.events.notify_all();
            j.input_room.notify_all();
        }
    }
}

fn send_launch(node: u16, id: u32, l: &Launch<'_>) -> Result {
    let len = l.encoded_len();
    let mut m = KVec::from_elem(0u8, HEADER_LEN + len, GFP_KERNEL)?;
    m[..HEADER_LEN].copy_from_slice(&header(MsgKind::JobLaunch, id, 0, 0, len, 0));
    let mut e = Encoder::new(&mut m[HEADER_LEN..]);
    l.encode(&mut e).map_err(|_| E2BIG)?;
    traffic::send(node, &m, true)
}

/// One event for the reader, found under the state lock.
enum Next {
    /// Output of `rank` on `stream`: the message taken out of its queue,
    /// and the bytes of it already read.
    Output(u32, u16, treenet::Message, usize),
    /// `rank` ended.
    End(u32, RankEnd),
    /// Every rank ended: the job's exit code.
    JobEnd(u8),
}

impl LaunchedJob {
    /// Runs the job scripts' end, once (a failure is counted in `jobs`'s
    /// `script_failures`).
    fn end_scripts(&self, wait: Wait) {
        {
            let mut g = self.state.lock();
            if g.end_scripts_run {
                return;
            }
            g.end_scripts_run = true;
        }
        let info = script_info(self.id, &self.scripts, self.layout, (self.uid, self.gid));
        // (Counted by the job plug-in.)
        if self
            .launcher
            .job
            .run_launch_scripts(&info, b"0", wait)
            .is_err()
        {
            self.launcher
                .stats
                .c
                .end_scripts_failed
                .fetch_add(1, Relaxed);
        }
    }

    /// Signals every running rank (its CN's copy of the job).
    fn signal(&self, sig: u32) -> Result {
        if sig == 0 || sig > 64 {
            return Err(EINVAL);
        }
        let mut nodes = KVec::new();
        {
            let g = self.state.lock();
            for slot in g.ranks.iter().filter(|s| s.end.is_none()) {
                if !nodes.contains(&slot.node) {
                    nodes.push(slot.node, GFP_KERNEL)?;
                }
            }
        }
        let s = &self.launcher.stats.c;
        for &n in nodes.iter() {
            if send_word(
                n,
                MsgKind::JobSignal,
                (self.id, 0, 0),
                sig.to_be_bytes(),
                true,
            )
            .is_ok()
            {
                s.signals_sent.fetch_add(1, Relaxed);
            } else {
                s.signals_unsent.fetch_add(1, Relaxed);
            }
        }
        Ok(())
    }

    /// The next event, under the lock (`None`: nothing yet).
    fn next(&self, g: &mut JobState) -> Option<Next> {
        while let Some(r) = g.pop_ready() {
            let mut out = None;
            for (i, q) in g.ranks[r as usize].out.iter_mut().enumerate() {
                if let Some((m, off)) = q.q.take_head() {
                    out = Some((i as u16 + 1, m, off));
                    break;
                }
            }
            if let Some((stream, m, off)) = out {
                // More may follow, and the rank's end.
                g.mark_ready(r);
                return Some(Next::Output(r, stream, m, off));
            }
            let slot = &mut g.ranks[r as usize];
            if let Some(end) = slot.end {
                if !slot.end_reported {
                    slot.end_reported = true;
                    return Some(Next::End(r, end));
                }
            }
        }
        if g.tally.done() && !g.end_read {
            // Every rank's end was reported before this (each one is
            // queued when it ends, and the queue is empty).
            if g.ranks.iter().all(|s| s.end_reported) {
                g.end_read = true;
                return Some(Next::JobEnd(g.tally.exit_code()));
            }
        }
        None
    }

    /// Puts an output message back after a read of `n` of its bytes
    /// (`whole`: it is done): the credit to send, if any.
    fn put_back(
        &self,
        g: &mut JobState,
        (rank, stream): (u32, u16),
        m: treenet::Message,
        n: usize,
        whole: bool,
    ) -> Option<u32> {
        let q = &mut g.ranks[rank as usize].out[usize::from(stream - 1)];
        let before = q.window.held();
        let credit = q.window.consume(n as u32, whole);
        let after = q.window.held();
        q.q.put_back(m, n, whole);
        self.launcher.stats.release(u64::from(before - after));
        g.held = g.held.saturating_sub(u64::from(before - after));
        credit
    }

    fn read(&self, buf: UserPtr, len: usize, nonblock: bool) -> Result<usize> {
        if len < MIN_READ {
            return Err(EINVAL);
        }
        let _reader = self.reading.lock();
        let mut done = 0usize;
        loop {
            let next = {
                let mut g = self.state.lock();
                loop {
                    if g.kill_pending {
                        g.kill_pending = false;
                        drop(g);
                        if self.signal(SIGKILL).is_err() {
                            self.launcher.stats.c.signals_unsent.fetch_add(1, Relaxed);
                        }
                        g = self.state.lock();
                        continue;
                    }
                    if g.end_read {
                        return Ok(done);
                    }
                    if let Some(n) = self.next(&mut g) {
                        break n;
                    }
                    if done > 0 {
                        return Ok(done);
                    }
                    if nonblock {
                        return Err(EAGAIN);
                    }
                    if self.events.wait_interruptible(&mut g) {
                        return Err(ERESTARTSYS);
                    }
                }
            };
            let at = buf.wrapping_byte_add(done);
            let room = len - done;
            match next {
                Next::Output(rank, stream, m, off) => {
                    let data = m.len() - HEADER_LEN - off;
                    let n = data.min(room - EVENT_LEN);
                    let ev = event(rank, EV_OUTPUT, stream, n as u32, 0);
                    let copied = UserSlice::new(at, EVENT_LEN)
                        .writer()
                        .write_slice(&ev)
                        .and_then(|()| {
                            m.read_to_user(HEADER_LEN + off, at.wrapping_byte_add(EVENT_LEN), n)
                        });
                    let credit = {
                        let mut g = self.state.lock();
                        if copied.is_ok() {
                            self.put_back(&mut g, (rank, stream), m, n, n == data)
                        } else {
                            self.put_back(&mut g, (rank, stream), m, 0, false)
                        }
                    };
                    if let Some(c) = credit {
                        self.send_credit(rank, stream, c);
                    }
                    if let Err(e) = copied {
                        return if done > 0 { Ok(done) } else { Err(e) };
                    }
                    done += EVENT_LEN + n;
                }
                Next::End(rank, end) => {
                    let ev = match end {
                        RankEnd::Status(st) => event(rank, EV_EXIT, 0, 0, st),
                        RankEnd::NotStarted(e) | RankEnd::Lost(e) => {
                            event(rank, EV_FAILED, 0, 0, e)
                        }
                    };
                    if let Err(e) = UserSlice::new(at, EVENT_LEN).writer().write_slice(&ev) {
                        // Reported again at the next read.
                        let mut g = self.state.lock();
                        g.ranks[rank as usize].end_reported = false;
                        g.mark_ready(rank);
                        return if done > 0 { Ok(done) } else { Err(e) };
                    }
                    done += EVENT_LEN;
                }
                Next::JobEnd(code) => {
                    // The end scripts, before the job's end is told.
                    self.end_scripts(Wait::Exit);
                    let ev = event(u32::MAX, EV_END, 0, 0, i32::from(code));
                    if let Err(e) = UserSlice::new(at, EVENT_LEN).writer().write_slice(&ev) {
                        self.state.lock().end_read = false;
                        return if done > 0 { Ok(done) } else { Err(e) };
                    }
                    return Ok(done + EVENT_LEN);
                }
            }
            if len - done < EVENT_LEN + 1 {
                return Ok(done);
            }
        }
    }

    fn send_credit(&self, rank: u32, stream: u16, c: u32) {
        let (node, s) = (
            self.state.lock().ranks[rank as usize].node,
            &self.launcher.stats.c,
        );
        if send_word(
            node,
            MsgKind::JobCredit,
            (self.id, rank, stream),
            c.to_be_bytes(),
            true,
        )
        .is_ok()
        {
            s.credits_sent.fetch_add(1, Relaxed);
        } else {
            s.credits_unsent.fetch_add(1, Relaxed);
            let mut g = self.state.lock();
            g.ranks[rank as usize].out[usize::from(stream - 1)]
                .window
                .uncredit(c);
        }
    }

    /// The ranks that read standard input.
    fn stdin_ranks(&self) -> core::ops::Range<u32> {
        if self.flags & jobs::FLAG_STDIN_ALL != 0 {
            0..self.layout.global_size()
        } else {
            0..1
        }
    }

    fn write(&self, buf: UserPtr, len: usize, nonblock: bool) -> Result<usize> {
        let _writer = self.writing.lock();
        let mut n = len.min(jobs::CHUNK as usize);
        if n == 0 {
            return Ok(0);
        }
        let mut any = false;
        for rank in self.stdin_ranks() {
            // Room in this rank's window, or its end.  Every rank gets the
            // same bytes: the first one's share.
            let (node, take) = {
                let mut g = self.state.lock();
                loop {
                    if g.input_eof {
                        return Err(EPIPE);
                    }
                    let slot = &mut g.ranks[rank as usize];
                    if slot.end.is_some() {
                        break (slot.node, 0);
                    }
                    let t = if any {
                        if slot.input.take_exact(n as u32) {
                            n as u32
                        } else {
                            0
                        }
                    } else {
                        slot.input.take(n)
                    };
                    if t > 0 {
                        break (slot.node, t);
                    }
                    if nonblock && !any {
                        return Err(EAGAIN);
                    }
                    if self.input_room.wait_interruptible(&mut g) {
                        return if any { Ok(n) } else { Err(ERESTARTSYS) };
                    }
                }
            };
            if take == 0 {
                continue;
            }
            n = take as usize;
            // (Writers are serialised: numbers go out in order, and one
            // whose message was not sent is used again.)
            let seq = self.state.lock().ranks[rank as usize].input_sent;
            let sent = (|| -> Result {
                let mut b = treenet::MessageBuilder::for_filling(HEADER_LEN + n)?;
                let id = (self.id, rank, jobs::STDIN);
                b.write_at(0, &data_header(MsgKind::JobInput, id, seq, n))?;
                b.write_user_at(HEADER_LEN, buf, n)?;
                traffic::send_message(node, &b.seal()?, true)
            })();
            let s = &self.launcher.stats.c;
            match sent {
                Ok(()) => {
                    self.state.lock().ranks[rank as usize].input_sent += 1;
                    s.input_msgs.fetch_add(1, Relaxed);
                    s.input_bytes.fetch_add(n as u64, Relaxed);
                    any = true;
                }
                Err(e) => {
                    self.state.lock().ranks[rank as usize].input.untake(take);
                    if !any {
                        return Err(e);
                    }
                }
            }
        }
        if any {
            Ok(n)
        } else {
            Err(EPIPE)
        }
    }

    /// Standard input ends: every reading rank gets end-of-file.
    fn input_end(&self) -> Result {
        let _writer = self.writing.lock();
        let mut targets = KVec::new();
        {
            let mut g = self.state.lock();
            if g.input_eof {
                return Ok(());
            }
            // The end goes to ranks that exist (their window is open) or
            // never will: a CN takes no input before its launch.
            while self
                .stdin_ranks()
                .any(|r| !g.ranks[r as usize].input_open && g.ranks[r as usize].end.is_none())
            {
                if self.input_room.wait_interruptible(&mut g) {
                    return Err(ERESTARTSYS);
                }
            }
            g.input_eof = true;
            for rank in self.stdin_ranks() {
                let slot = &g.ranks[rank as usize];
                if slot.end.is_none() {
                    targets.push((rank, slot.node, slot.input_sent), GFP_KERNEL)?;
                }
            }
        }
        for &(rank, node, sent) in targets.iter() {
            let id = (self.id, rank, jobs::STDIN);
            if send_word(node, MsgKind::JobInputEnd, id, sent.to_be_bytes(), true).is_ok() {
                self.launcher.stats.c.input_msgs.fetch_add(1, Relaxed);
            } else {
                // That rank reads on until it ends.
                self.launcher.stats.c.signals_unsent.fetch_add(1, Relaxed);
            }
        }
        Ok(())
    }

    /// The descriptor was closed: ranks still running are killed, held
    /// output dropped; the job goes once every rank ended.
    fn closed(&self) {
        let mut credits = KVec::new();
        let stats = &self.launcher.stats;
        let (done, launched) = {
            let mut g = self.state.lock();
            g.reader_gone = true;
            for (r, slot) in g.ranks.iter_mut().enumerate() {
                for (i, q) in slot.out.iter_mut().enumerate() {
                    let (bytes, held, c) = q.discard();
                    stats.release(u64::from(held));
                    stats.c.output_discarded.fetch_add(bytes, Relaxed);
                    if c > 0 && slot.end.is_none() {
                        let id = (r as u32, i as u16 + 1, slot.node, c);
                        if credits.push(id, GFP_KERNEL).is_err() {
                            // Its writer waits for the kill instead.
                            stats.c.credits_unsent.fetch_add(1, Relaxed);
                        }
                    }
                }
            }
            (g.tally.done(), g.launched)
        };
        // The job goes now: whatever its ranks still send is stale.
        self.launcher.forget(self);
        if !launched {
            return;
        }
        // (Only started: a close does not wait for them.)
        self.end_scripts(Wait::Exec);
        if done {
            return;
        }
        for &(rank, stream, node, c) in credits.iter() {
            if send_word(
                node,
                MsgKind::JobCredit,
                (self.id, rank, stream),
                c.to_be_bytes(),
                true,
            )
            .is_ok()
            {
                self.launcher.stats.c.credits_sent.fetch_add(1, Relaxed);
            }
        }
        if self.signal(SIGKILL).is_err() {
            self.launcher.stats.c.signals_unsent.fetch_add(1, Relaxed);
        }
    }
}

fn event(rank: u32, kind: u16, stream: u16, len: u32, value: i32) -> [u8; EVENT_LEN] {
    let mut e = [0u8; EVENT_LEN];
    e[0..4].copy_from_slice(&rank.to_ne_bytes());
    e[4..6].copy_from_slice(&kind.to_ne_bytes());
    e[6..8].copy_from_slice(&stream.to_ne_bytes());
    e[8..12].copy_from_slice(&len.to_ne_bytes());
    e[12..16].copy_from_slice(&value.to_ne_bytes());
    e
}

/// A job's descriptor, as `zoid-job run` holds it.
struct JobFile {
    job: Arc<LaunchedJob>,
}

impl FileOps for JobFile {
    fn read(&self, buf: UserPtr, len: usize, nonblock: bool) -> Result<usize> {
        self.job.read(buf, len, nonblock)
    }

    fn write(&self, buf: UserPtr, len: usize, nonblock: bool) -> Result<usize> {
        self.job.write(buf, len, nonblock)
    }

    fn ioctl(&self, cmd: u32, arg: usize) -> Result<isize> {
        match cmd {
            JOB_IOC_SIGNAL => {
                let mut b = [0u8; 4];
                UserSlice::new(UserPtr::from_addr(arg), 4)
                    .reader()
                    .read_slice(&mut b)?;
                self.job.signal(u32::from_ne_bytes(b))?;
                Ok(0)
            }
            JOB_IOC_EOF => {
                self.job.input_end()?;
                Ok(0)
            }
            _ => Err(ENOTTY),
        }
    }

    fn release(&self) {
        self.job.closed();
    }
}

/// `launch_stats`: the counters.
pub(crate) fn show_stats(l: &Launcher, w: &mut SysfsWriter<'_>) -> Result {
    let mut r = Ok(());
    l.stats.c.each(|name, v| {
        if r.is_ok() {
            r = writeln!(w, "{name} {}", U64(v));
        }
    });
    r
}
