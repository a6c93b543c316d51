// SPDX-License-Identifier: GPL-2.0

//! A CN's side of jobs its ION launches (`zoid-job run`): one process per
//! rank, its standard streams forwarded to and from the ION.
//!
//! A `JobLaunch` from this CN's ION ([`Ranks::launch`], zoid's receive
//! thread) starts each rank through the job runner
//! (`/sys/kernel/zoid/job_runner`, tools/zoid/zoid-job-run.c), which
//! gives up root for the job's owner, starts a session, changes to the
//! job's directory and executes the program with the job's environment
//! and `ZOID_JOB_ID`, `ZOID_JOB_RANK`, `ZOID_JOB_GLOBAL_SIZE`,
//! `ZOID_JOB_LOCAL_SIZE`.  Its descriptors 0, 1 and 2 are zoid's
//! ([`StreamFile`]): a write to 1 or 2 becomes a `JobOutput` to the ION
//! (at most [`jobs::CHUNK`] bytes each) once the stream's window has room,
//! and waits for the ION's credit otherwise; a read of 0 takes the bytes
//! of the ION's `JobInput` messages.  The rank's end is sent back as
//! `JobExit`.  `JobSignal` signals every rank of the job here (each one's
//! process group).  The ION going down kills every rank: nobody is left to
//! read what they write.
//!
//! Locks: the table's lock, then a rank's stream locks (taken one at a
//! time).  Neither is held while sending, copying user memory, or
//! starting or signalling a process.

use crate::job_launch::{JobStats, MAX_SPEC_LEN};
use crate::job_plugin::{decimal, Job};
use crate::traffic;
use crate::treenet;
use crate::zoid_kernel::anonfile::{Access, AnonFile, FileOps};
use crate::zoid_kernel::spawn::{Exited, Process, Spawner};
use crate::zoid_kernel::umh::StrList;
use crate::zoid_proto::zoid::jobs::{self, ExitReport, Launch, RankEnd, RecvWindow, SendWindow};
use crate::zoid_proto::zoid::wire::{CallHeader, MsgKind, HEADER_LEN};
use kernel::new_condvar;
use kernel::prelude::*;
use kernel::sync::atomic::Relaxed;
use kernel::sync::{Arc, CondVar, Mutex};
use kernel::uaccess::UserPtr;

/// Signal sent to every rank when the ION goes away.
const SIGKILL: i32 = 9;
/// `PATH` for a job that sets none.
const DEFAULT_PATH: &[u8] = b"PATH=/sbin:/bin:/usr/sbin:/usr/bin";

/// A rank's output stream.
struct OutState {
    window: SendWindow,
    /// Messages sent (the ION waits for as many before the rank's end).
    sent: u32,
    /// Sequence number of the next message.
    next_seq: u32,
    /// No reader any more (the ION went away): writes fail with `EPIPE`.
    broken: bool,
}

/// A rank's input stream: the ION's `JobInput` messages not yet read.
struct InState {
    queue: MsgQueue,
    window: RecvWindow,
    /// Messages received.
    received: u32,
    /// The ION said the input ends after this many messages.
    end_after: Option<u32>,
    /// No more input: it ended, the ION went away, or the rank does not
    /// read the job's input.
    eof: bool,
}

/// One rank running here.
#[pin_data]
pub(crate) struct Rank {
    job: u32,
    rank: u32,
    ion: u16,
    #[pin]
    stdout: Mutex<OutState>,
    #[pin]
    stderr: Mutex<OutState>,
    #[pin]
    out_room: CondVar,
    #[pin]
    input: Mutex<InState>,
    #[pin]
    input_ready: CondVar,
    /// Serialises readers of the input (a reader copies outside `input`).
    #[pin]
    reading: Mutex<()>,
    #[pin]
    process: Mutex<Option<Arc<Process>>>,
    table: Arc<Ranks>,
}

/// Every rank running on this CN.
#[pin_data]
pub(crate) struct Ranks {
    #[pin]
    ranks: Mutex<KVec<Arc<Rank>>>,
    /// Waits for ranks' ends; `None` once shut down.
    #[pin]
    spawner: Mutex<Option<Arc<Spawner>>>,
    stats: Arc<JobStats>,
    /// The `job` plug-in: its job runner starts the ranks.
    job: Arc<Job>,
}

/// A job message's header: `tag` the job, `pid` the rank, `function`
/// the stream.
pub(crate) fn header(
    kind: MsgKind,
    job: u32,
    rank: u32,
    stream: u16,
    arg_len: usize,
    errno: i32,
) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    CallHeader {
        function: stream,
        pid: rank,
        arg_len: arg_len as u32,
        errno,
        ..CallHeader::new(kind, job)
    }
    .encode(&mut h);
    h
}

/// The header of a stream's data message number `seq` (`uid` carries it).
pub(crate) fn data_header(
    kind: MsgKind,
    (job, rank, stream): (u32, u32, u16),
    seq: u32,
    len: usize,
) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    CallHeader {
        function: stream,
        pid: rank,
        uid: seq,
        arg_len: len as u32,
        ..CallHeader::new(kind, job)
    }
    .encode(&mut h);
    h
}

/// Sends a header and a `u32` or `i32` body (`block`: waits for room in
/// treenet's queue; never from treenet's own thread).
pub(crate) fn send_word(
    dst: u16,
    kind: MsgKind,
    (job, rank, stream): (u32, u32, u16),
    word: [u8; 4],
    block: bool,
) -> Result {
    let mut m = [0u8; HEADER_LEN + 4];
    m[..HEADER_LEN].copy_from_slice(&header(kind, job, rank, stream, 4, 0));
    m[HEADER_LEN..].copy_from_slice(&word);
    traffic::send(dst, &m, block)
}

/// Tells the ION how `rank` ended.
fn send_exit(ion: u16, job: u32, rank: u32, report: &ExitReport) -> Result {
    let mut m = [0u8; HEADER_LEN + ExitReport::LEN];
    let h = header(
        MsgKind::JobExit,
        job,
        rank,
        0,
        ExitReport::LEN,
        report.errno(),
    );
    m[..HEADER_LEN].copy_from_slice(&h);
    m[HEADER_LEN..].copy_from_slice(&report.encode());
    traffic::send(ion, &m, true)
}

/// Tells the ION that `rank` did not start (`errno` > 0).
fn send_not_started(ion: u16, job: u32, rank: u32, errno: i32) -> Result {
    let report = ExitReport {
        end: RankEnd::NotStarted(errno),
        sent: [0, 0],
    };
    send_exit(ion, job, rank, &report)
}

impl Ranks {
    /// No ranks; processes are waited for on a workqueue of their own.
    pub(crate) fn new(stats: Arc<JobStats>, job: Arc<Job>) -> Result<Arc<Self>> {
        let spawner = Arc::new(Spawner::new(c"zoid-ranks")?, GFP_KERNEL)?;
        Arc::pin_init(
            try_pin_init!(Self {
                ranks <- kernel::new_mutex!(KVec::new(), "zoid::ranks"),
                spawner <- kernel::new_mutex!(Some(spawner), "zoid::ranks_spawner"),
                stats,
                job,
            }? Error),
            GFP_KERNEL,
        )
    }

    fn find(&self, job: u32, rank: u32) -> Option<Arc<Rank>> {
        self.ranks
            .lock()
            .iter()
            .find(|r| r.job == job && r.rank == rank)
            .cloned()
    }

    /// Ranks running here now.
    pub(crate) fn running(&self) -> usize {
        self.ranks.lock().len()
    }

    /// A job message from `src` (zoid's receive thread for launches and
    /// signals, treenet's for input and credits).
    pub(crate) fn receive(self: &Arc<Self>, src: u16, hdr: &CallHeader, msg: treenet::Message) {
        let s = &self.stats.c;
        // Only this CN's ION launches, signals and feeds ranks here.
        if treenet::ion().ok() != Some(src) || treenet::node_id().ok() == Some(src) {
            s.refused_foreign.fetch_add(1, Relaxed);
            return;
        }
        match hdr.kind {
            MsgKind::JobLaunch => self.launch(src, hdr, &msg),
            MsgKind::JobSignal => {
                let mut w = [0u8; 4];
                if msg.len() != HEADER_LEN + 4 || msg.read_at(HEADER_LEN, &mut w).is_err() {
                    s.malformed.fetch_add(1, Relaxed);
                    return;
                }
                let sig = u32::from_be_bytes(w);
                if !(1..=64).contains(&sig) {
                    s.malformed.fetch_add(1, Relaxed);
                    return;
                }
                s.signals_received.fetch_add(1, Relaxed);
                self.signal(hdr.tag, sig as i32);
            }
            MsgKind::JobCredit => {
                let mut w = [0u8; 4];
                let stream = hdr.function;
                if msg.len() != HEADER_LEN + 4
                    || msg.read_at(HEADER_LEN, &mut w).is_err()
                    || !(jobs::STDOUT..=jobs::STDERR).contains(&stream)
                {
                    s.malformed.fetch_add(1, Relaxed);
                    return;
                }
                let Some(r) = self.find(hdr.tag, hdr.pid) else {
                    s.stale.fetch_add(1, Relaxed);
                    return;
                };
                s.credits_received.fetch_add(1, Relaxed);
                let ok = r.out(stream).lock().window.credit(u32::from_be_bytes(w));
                if ok.is_err() {
                    s.refused_overrun.fetch_add(1, Relaxed);
                }
                r.out_room.notify_all();
            }
            MsgKind::JobInput => {
                let Some(r) = self.find(hdr.tag, hdr.pid) else {
                    s.stale.fetch_add(1, Relaxed);
                    return;
                };
                r.input_arrived(hdr.uid, msg, &self.stats);
            }
            MsgKind::JobInputEnd => {
                let mut w = [0u8; 4];
                if msg.len() != HEADER_LEN + 4 || msg.read_at(HEADER_LEN, &mut w).is_err() {
                    s.malformed.fetch_add(1, Relaxed);
                    return;
                }
                let Some(r) = self.find(hdr.tag, hdr.pid) else {
                    s.stale.fetch_add(1, Relaxed);
                    return;
                };
                r.input.lock().end_after = Some(u32::from_be_bytes(w));
                r.input_ready.notify_all();
            }
            _ => {
                s.malformed.fetch_add(1, Relaxed);
            }
        }
    }

    fn signal(&self, job: u32, sig: i32) {
        let mut procs = KVec::new();
        {
            let g = self.ranks.lock();
            for r in g.iter().filter(|r| r.job == job) {
                if let Some(p) = r.process.lock().clone() {
                    if procs.push(p, GFP_KERNEL).is_err() {
                        self.stats.c.signals_unsent.fetch_add(1, Relaxed);
                    }
                }
            }
        }
        for p in procs.iter() {
            // (ESRCH: it ended meanwhile.)
            if p.signal(sig).is_ok() {
                self.stats.c.signals_delivered.fetch_add(1, Relaxed);
            }
        }
    }

    /// The ION went down (`up` false) or came up: with it gone, every
    /// rank is killed and its streams broken.
    pub(crate) fn ion_event(&self, node: u16, up: bool) {
        if up || treenet::ion().ok() != Some(node) {
            return;
        }
        let ranks = {
            let g = self.ranks.lock();
            let mut v = KVec::new();
            for r in g.iter() {
                if v.push(r.clone(), GFP_KERNEL).is_err() {
                    self.stats.c.signals_unsent.fetch_add(1, Relaxed);
                }
            }
            v
        };
        for r in ranks.iter() {
            r.break_streams();
            if let Some(p) = r.process.lock().clone() {
                if p.signal(SIGKILL).is_ok() {
                    self.stats.c.signals_delivered.fetch_add(1, Relaxed);
                }
            }
        }
    }

    /// Unload: kills every rank and waits for their ends.
    pub(crate) fn shutdown(&self) {
        let spawner = self.spawner.lock().take();
        let procs = {
            let g = self.ranks.lock();
            let mut v = KVec::new();
            for r in g.iter() {
                r.break_streams();
                if let Some(p) = r.process.lock().clone() {
                    if v.push(p, GFP_KERNEL).is_err() {
                        self.stats.c.signals_unsent.fetch_add(1, Relaxed);
                    }
                }
            }
            v
        };
        for p in procs.iter() {
            // (ESRCH: ended meanwhile.)
            if p.signal(SIGKILL).is_ok() {
                self.stats.c.signals_delivered.fetch_add(1, Relaxed);
            }
        }
        // Dropping the last reference drains the workqueue: every end seen.
        drop(spawner);
    }

    fn launch(self: &Arc<Self>, ion: u16, hdr: &CallHeader, msg: &treenet::Message) {
        let s = &self.stats.c;
        let body_len = msg.len().saturating_sub(HEADER_LEN);
        if body_len > MAX_SPEC_LEN * 2 {
            s.malformed.fetch_add(1, Relaxed);
            return;
        }
        let r = (|| -> Result<()> {
            let mut body = KVec::from_elem(0u8, body_len, GFP_KERNEL)?;
            msg.read_at(HEADER_LEN, &mut body)?;
            let mut scratch = KVec::from_elem(0u8, body_len, GFP_KERNEL)?;
            let launch = Launch::decode(&body, &mut scratch).map_err(|_| EBADMSG)?;
            s.launches.fetch_add(1, Relaxed);
            for i in 0..launch.local_size {
                let rank = launch.first_rank + i;
                if let Err(e) = self.start_rank(ion, hdr.tag, rank, &launch) {
                    s.ranks_not_started.fetch_add(1, Relaxed);
                    // The ION learns it, as it would learn an exit.
                    if send_not_started(ion, hdr.tag, rank, -e.to_errno()).is_err() {
                        s.exits_unsent.fetch_add(1, Relaxed);
                    }
                }
            }
            Ok(())
        })();
        if r.is_err() {
            s.malformed.fetch_add(1, Relaxed);
        }
    }

    fn start_rank(self: &Arc<Self>, ion: u16, job: u32, rank: u32, l: &Launch<'_>) -> Result {
        let Some(spawner) = self.spawner.lock().clone() else {
            return Err(ESHUTDOWN);
        };
        if self.find(job, rank).is_some() {
            return Err(EEXIST);
        }
        let runner = self.job.runner()?;
        if runner.is_empty() {
            return Err(ENOENT);
        }
        let mut argv = StrList::new();
        let mut num = [0u8; 10];
        argv.push(&[&runner])?;
        argv.push(&[b"-s"])?;
        argv.push(&[b"-C"])?;
        argv.push(&[if l.spec.cwd.is_empty() {
            b"/"
        } else {
            l.spec.cwd
        }])?;
        argv.push(&[decimal(l.uid, &mut num)])?;
        argv.push(&[decimal(l.gid, &mut num)])?;
        for a in l.spec.argv.iter() {
            argv.push(&[a])?;
        }
        let mut envp = StrList::new();
        let mut has_path = false;
        for e in l.spec.env.iter() {
            has_path |= e.starts_with(b"PATH=");
            envp.push(&[e])?;
        }
        if !has_path {
            envp.push(&[DEFAULT_PATH])?;
        }
        envp.push(&[b"ZOID_JOB_ID=", decimal(job, &mut num)])?;
        envp.push(&[b"ZOID_JOB_RANK=", decimal(rank, &mut num)])?;
        envp.push(&[b"ZOID_JOB_GLOBAL_SIZE=", decimal(l.global_size, &mut num)])?;
        envp.push(&[b"ZOID_JOB_LOCAL_SIZE=", decimal(l.local_size, &mut num)])?;

        let reads_stdin = l.reads_stdin(rank);
        // Room for every input message the window allows: arrivals never
        // allocate.
        let in_queue = MsgQueue::new(RecvWindow::new(l.window).max_messages() as usize)?;
        let r = Arc::pin_init(
            try_pin_init!(Rank {
                job,
                rank,
                ion,
                stdout <- kernel::new_mutex!(
                    OutState {
                        window: SendWindow::new(l.window),
                        sent: 0,
                        next_seq: 0,
                        broken: false,
                    },
                    "zoid::rank_stdout"
                ),
                stderr <- kernel::new_mutex!(
                    OutState {
                        window: SendWindow::new(l.window),
                        sent: 0,
                        next_seq: 0,
                        broken: false,
                    },
                    "zoid::rank_stderr"
                ),
                out_room <- new_condvar!("zoid::rank_out_room"),
                input <- kernel::new_mutex!(
                    InState {
                        queue: in_queue,
                        window: RecvWindow::closed(l.window),
                        received: 0,
                        end_after: None,
                        eof: !reads_stdin,
                    },
                    "zoid::rank_in"
                ),
                input_ready <- new_condvar!("zoid::rank_in_ready"),
                reading <- kernel::new_mutex!((), "zoid::rank_reading"),
                process <- kernel::new_mutex!(None, "zoid::rank_process"),
                table: self.clone(),
            }? Error),
            GFP_KERNEL,
        )?;
        let file = |stream: u16, access| {
            let f = Arc::new(
                StreamFile {
                    rank: r.clone(),
                    stream,
                },
                GFP_KERNEL,
            )?;
            AnonFile::new(c"zoid-job-stream", f, access)
        };
        let stdin = file(jobs::STDIN, Access::Read)?;
        let stdout = file(jobs::STDOUT, Access::Write)?;
        let stderr = file(jobs::STDERR, Access::Write)?;
        self.ranks.lock().push(r.clone(), GFP_KERNEL)?;
        let started = Arc::new(RankExit { rank: r.clone() }, GFP_KERNEL)
            .map_err(Error::from)
            .and_then(|exit| spawner.start(argv, envp, [&stdin, &stdout, &stderr], exit));
        match started {
            Ok(p) => {
                *r.process.lock() = Some(p);
                self.stats.c.ranks_started.fetch_add(1, Relaxed);
                if reads_stdin {
                    // The rank exists: its input may come.
                    let c = r.input.lock().window.take_credit();
                    r.send_credit(jobs::STDIN, c);
                }
                Ok(())
            }
            Err(e) => {
                self.remove(&r);
                Err(e)
            }
        }
    }

    fn remove(&self, r: &Arc<Rank>) {
        self.ranks.lock().retain(|x| !Arc::ptr_eq(x, r));
    }
}

impl Rank {
    /// Output stream `stream` (stdout, or else stderr).
    fn out(&self, stream: u16) -> &Mutex<OutState> {
        if stream == jobs::STDOUT {
            &self.stdout
        } else {
            &self.stderr
        }
    }

    fn break_streams(&self) {
        self.stdout.lock().broken = true;
        self.stderr.lock().broken = true;
        self.out_room.notify_all();
        self.input.lock().eof = true;
        self.input_ready.notify_all();
    }

    fn input_arrived(&self, seq: u32, msg: treenet::Message, stats: &JobStats) {
        let s = &stats.c;
        let n = msg.len().saturating_sub(HEADER_LEN);
        let mut g = self.input.lock();
        if n == 0 {
            s.malformed.fetch_add(1, Relaxed);
            return;
        }
        if g.eof || !g.queue.fresh(seq) {
            s.stale.fetch_add(1, Relaxed);
            return;
        }
        if g.window.accept(n as u32).is_err() || g.queue.arrive(seq, msg).is_err() {
            // (The second cannot happen: the window bounds the messages.)
            s.refused_overrun.fetch_add(1, Relaxed);
            return;
        }
        g.received += 1;
        s.input_msgs.fetch_add(1, Relaxed);
        s.input_bytes.fetch_add(n as u64, Relaxed);
        drop(g);
        self.input_ready.notify_all();
    }

    /// Reads input for the rank's process.
    fn read_input(&self, buf: UserPtr, len: usize, nonblock: bool) -> Result<usize> {
        let _reader = self.reading.lock();
        let (msg, offset) = {
            let mut g = self.input.lock();
            loop {
                // (Taken out to copy it without the lock, as arrivals go on
                // meanwhile; back before anyone else reads: `reading`.)
                if let Some(m) = g.queue.take_head() {
                    break m;
                }
                if g.eof || g.end_after.is_some_and(|n| n <= g.received) {
                    return Ok(0);
                }
                if nonblock {
                    return Err(EAGAIN);
                }
                if self.input_ready.wait_interruptible(&mut g) {
                    return Err(ERESTARTSYS);
                }
            }
        };
        let data = msg.len() - HEADER_LEN;
        let n = len.min(data - offset);
        let copied = msg.read_to_user(HEADER_LEN + offset, buf, n);
        let mut g = self.input.lock();
        let whole = copied.is_ok() && offset + n == data;
        let credit = if copied.is_ok() {
            g.window.consume(n as u32, whole)
        } else {
            None
        };
        g.queue
            .put_back(msg, if copied.is_ok() { n } else { 0 }, whole);
        drop(g);
        copied?;
        if let Some(c) = credit {
            self.send_credit(jobs::STDIN, c);
        }
        Ok(n)
    }

    fn send_credit(&self, stream: u16, c: u32) {
        let stats = &self.table.stats.c;
        let id = (self.job, self.rank, stream);
        if send_word(self.ion, MsgKind::JobCredit, id, c.to_be_bytes(), true).is_ok() {
            stats.credits_sent.fetch_add(1, Relaxed);
        } else {
            // Sent with the next one.
            self.input.lock().window.uncredit(c);
            stats.credits_unsent.fetch_add(1, Relaxed);
        }
    }

    /// Writes output of the rank's process: at most one message's worth.
    fn write_output(&self, stream: u16, buf: UserPtr, len: usize, nonblock: bool) -> Result<usize> {
        if len == 0 {
            return Ok(0);
        }
        let out = self.out(stream);
        let n = {
            let mut g = out.lock();
            loop {
                if g.broken {
                    return Err(EPIPE);
                }
                let n = g.window.take(len);
                if n > 0 {
                    break n;
                }
                if nonblock {
                    return Err(EAGAIN);
                }
                if self.out_room.wait_interruptible(&mut g) {
                    return Err(ERESTARTSYS);
                }
            }
        };
        let stats = &self.table.stats.c;
        // The bytes first (a bad buffer costs no sequence number), then
        // the header with the next number.
        let built = (|| -> Result<treenet::MessageBuilder> {
            let mut b = treenet::MessageBuilder::new(HEADER_LEN + n as usize)?;
            b.write_user_at(HEADER_LEN, buf, n as usize)?;
            Ok(b)
        })();
        let mut b = match built {
            Ok(b) => b,
            Err(e) => {
                out.lock().window.untake(n);
                return Err(e);
            }
        };
        let seq = {
            let mut g = out.lock();
            let seq = g.next_seq;
            g.next_seq = seq.wrapping_add(1);
            seq
        };
        let h = data_header(
            MsgKind::JobOutput,
            (self.job, self.rank, stream),
            seq,
            n as usize,
        );
        let sent = b
            .write_at(0, &h)
            .and_then(|()| b.seal())
            .and_then(|m| traffic::send_message(self.ion, &m, true));
        match sent {
            Ok(()) => {
                out.lock().sent += 1;
                stats.output_msgs.fetch_add(1, Relaxed);
                stats.output_bytes.fetch_add(u64::from(n), Relaxed);
                Ok(n as usize)
            }
            Err(_) => {
                // A number was lost: the ION takes what comes after it
                // once the rank ends.  The stream is over.
                let mut g = out.lock();
                g.window.untake(n);
                g.broken = true;
                stats.output_unsent.fetch_add(1, Relaxed);
                Err(EIO)
            }
        }
    }
}

/// One of a rank's standard streams, as its process sees it.
struct StreamFile {
    rank: Arc<Rank>,
    stream: u16,
}

impl FileOps for StreamFile {
    fn read(&self, buf: UserPtr, len: usize, nonblock: bool) -> Result<usize> {
        if self.stream != jobs::STDIN {
            return Err(EBADF);
        }
        self.rank.read_input(buf, len, nonblock)
    }

    fn write(&self, buf: UserPtr, len: usize, nonblock: bool) -> Result<usize> {
        if self.stream == jobs::STDIN {
            return Err(EBADF);
        }
        self.rank.write_output(self.stream, buf, len, nonblock)
    }
}

/// Learns a rank's end, tells the ION, forgets the rank.
struct RankExit {
    rank: Arc<Rank>,
}

impl Exited for RankExit {
    fn exited(&self, status: Result<i32>) {
        let r = &self.rank;
        let t = &r.table;
        t.remove(r);
        *r.process.lock() = None;
        let s = &t.stats.c;
        let sent = match status {
            Ok(st) => {
                s.ranks_exited.fetch_add(1, Relaxed);
                let report = ExitReport {
                    end: RankEnd::Status(st),
                    sent: [r.stdout.lock().sent, r.stderr.lock().sent],
                };
                send_exit(r.ion, r.job, r.rank, &report)
            }
            Err(e) => {
                s.ranks_not_started.fetch_add(1, Relaxed);
                send_not_started(r.ion, r.job, r.rank, -e.to_errno())
            }
        };
        if sent.is_err() {
            s.exits_unsent.fetch_add(1, Relaxed);
        }
    }
}

/// One stream's messages as their reader holds them, in their order:
/// treenet's control lane may deliver a small message before a large one
/// sent earlier, so each carries its sequence number (the header's `uid`)
/// and one that comes early waits for those before it.  Both sides' storage
/// is reserved for as many messages as the stream's window allows, so an
/// arrival never allocates.
pub(crate) struct MsgQueue {
    msgs: KVec<Option<treenet::Message>>,
    head: usize,
    /// Bytes of the head message already read.
    offset: usize,
    /// Sequence number of the next message in order.
    next_seq: u32,
    /// Messages that came before some sent earlier.
    early: KVec<(u32, treenet::Message)>,
}

impl MsgQueue {
    /// Room for `cap` messages in order and as many early.
    pub(crate) fn new(cap: usize) -> Result<Self> {
        Ok(Self {
            msgs: KVec::with_capacity(cap, GFP_KERNEL)?,
            head: 0,
            offset: 0,
            next_seq: 0,
            early: KVec::with_capacity(cap, GFP_KERNEL)?,
        })
    }

    /// Whether a message numbered `seq` may come: neither seen nor behind.
    pub(crate) fn fresh(&self, seq: u32) -> bool {
        (seq.wrapping_sub(self.next_seq) as usize) < self.msgs.capacity()
            && !self.early.iter().any(|(s, _)| *s == seq)
    }

    fn push_in_order(&mut self, m: treenet::Message) -> core::result::Result<(), treenet::Message> {
        if self.msgs.len() == self.msgs.capacity() && self.head > 0 {
            // Move the unread ones to the front.
            let live = self.msgs.len() - self.head;
            for i in 0..live {
                self.msgs.swap(i, self.head + i);
            }
            self.msgs.truncate(live);
            self.head = 0;
        }
        match self.msgs.push_within_capacity(Some(m)) {
            Ok(()) => Ok(()),
            Err(e) => e.0.map_or(Ok(()), Err),
        }
    }

    /// A fresh message numbered `seq` arrived: the messages now in order
    /// (0 if it came early), or the message back if there is no room.
    pub(crate) fn arrive(
        &mut self,
        seq: u32,
        m: treenet::Message,
    ) -> core::result::Result<usize, treenet::Message> {
        if seq != self.next_seq {
            return self
                .early
                .push_within_capacity((seq, m))
                .map(|()| 0)
                .map_err(|e| e.0 .1);
        }
        self.push_in_order(m)?;
        self.next_seq = self.next_seq.wrapping_add(1);
        let mut n = 1;
        while let Some(i) = self.early.iter().position(|(s, _)| *s == self.next_seq) {
            let Some((_, m)) = self.early.swap_remove_within(i) else {
                break;
            };
            // (Room: the window bounds the messages held.)
            if self.push_in_order(m).is_err() {
                break;
            }
            self.next_seq = self.next_seq.wrapping_add(1);
            n += 1;
        }
        Ok(n)
    }

    /// The writer ended without some messages it counted (their sends
    /// failed): those that came after them go in order now.  How many.
    pub(crate) fn flush_early(&mut self) -> usize {
        let mut n = 0;
        while !self.early.is_empty() {
            let (i, _) = self
                .early
                .iter()
                .enumerate()
                .min_by_key(|(_, (s, _))| s.wrapping_sub(self.next_seq))
                .map(|(i, (s, _))| (i, *s))
                .unwrap_or((0, 0));
            let Some((s, m)) = self.early.swap_remove_within(i) else {
                break;
            };
            if self.push_in_order(m).is_err() {
                break;
            }
            self.next_seq = s.wrapping_add(1);
            n += 1;
        }
        n
    }

    /// Takes the head message out to read it (with the bytes of it read
    /// already); it goes back with [`MsgQueue::put_back`].
    pub(crate) fn take_head(&mut self) -> Option<(treenet::Message, usize)> {
        if self.head >= self.msgs.len() {
            return None;
        }
        let offset = self.offset;
        self.msgs[self.head].take().map(|m| (m, offset))
    }

    /// Puts the head message back after `n` more of its bytes were read
    /// (`whole`: it is done and goes).
    pub(crate) fn put_back(&mut self, m: treenet::Message, n: usize, whole: bool) {
        if whole {
            drop(m);
            self.head += 1;
            self.offset = 0;
            if self.head == self.msgs.len() {
                self.msgs.clear();
                self.head = 0;
            }
        } else {
            self.offset += n;
            self.msgs[self.head] = Some(m);
        }
    }

    /// Drops everything held: the bytes of data dropped.
    pub(crate) fn clear(&mut self) -> u64 {
        let mut bytes = 0u64;
        for m in self.msgs.iter().skip(self.head).flatten() {
            bytes += (m.len() - HEADER_LEN) as u64;
        }
        for (_, m) in self.early.iter() {
            bytes += (m.len() - HEADER_LEN) as u64;
        }
        bytes -= self.offset as u64;
        self.msgs.clear();
        self.early.clear();
        self.head = 0;
        self.offset = 0;
        bytes
    }
}

/// `swap_remove` for the early list (7.3's `KVec` has none).
trait SwapRemove<T> {
    fn swap_remove_within(&mut self, i: usize) -> Option<T>;
}

impl<T> SwapRemove<T> for KVec<T> {
    fn swap_remove_within(&mut self, i: usize) -> Option<T> {
        let last = self.len().checked_sub(1)?;
        if i > last {
            return None;
        }
        self.swap(i, last);
        self.pop()
    }
}
