// SPDX-License-Identifier: GPL-2.0

//! Jobs the ION launches on its CNs, and their standard streams.
//!
//! `zoid-job run` on the ION hands zoid a [`Spec`] (program, arguments,
//! environment, directory) and the CNs to run it on.  The ION sends each
//! CN one `JobLaunch` ([`Launch`]) naming the ranks it runs; the CN starts
//! one process per rank and reports each one's end with `JobExit`.  A
//! rank's standard output and error travel to the ION as `JobOutput`
//! messages, its standard input from the ION as `JobInput`; both ways are
//! flow-controlled by a window of bytes ([`SendWindow`] at the writer,
//! [`RecvWindow`] at the reader) that the reader reopens with `JobCredit`
//! as its consumer takes the bytes, so a writer faster than its reader
//! blocks, and the reader never holds more than the window.
//!
//! The messages travel on zoid's channel behind the call header
//! ([`super::wire::CallHeader`]): `tag` is the job id, `pid` the rank,
//! `function` the stream ([`STDIN`], [`STDOUT`], [`STDERR`]), and in
//! `JobOutput` and `JobInput`, `uid` the message's sequence number in its
//! stream (from 0): treenet's control lane may deliver a small message
//! before a large one sent earlier, and the reader puts them back in
//! order.
//!
//! | kind        | direction | body                                          |
//! |-------------|-----------|-----------------------------------------------|
//! | `JobLaunch` | ION -> CN | [`Launch`] (`pid`: 0)                         |
//! | `JobOutput` | CN -> ION | the bytes (`function`: stdout or stderr)      |
//! | `JobInput`  | ION -> CN | the bytes (at least one)                      |
//! | `JobInputEnd` | ION -> CN | `u32` `JobInput` messages sent before: the input ends after them |
//! | `JobCredit` | both      | `u32` of window the reader gave back (`function`: the stream) |
//! | `JobSignal` | ION -> CN | `u32` signal for every rank of the job on the CN (`pid`: 0) |
//! | `JobExit`   | CN -> ION | [`ExitReport`]: wait status (with `errno`: the rank did not start), output messages sent |
//!
//! A rank's input window starts shut ([`SendWindow::closed`]): the CN
//! opens it with its first credit once the rank exists, so no input (nor
//! its end) reaches a CN before the launch that makes its reader.
//!
//! treenet may deliver a small message before a large one sent earlier
//! (its control lane overtakes its bulk lane), so an end says how many
//! messages came before it: the ION reports a rank's end once that many
//! output messages arrived, and a CN ends a rank's input once that many
//! input messages arrived.
//!
//! A CN is not trusted (docs/reliability.md): the ION takes a rank's
//! messages only from the CN it launched the rank on ([`RankEnd::from`]),
//! only while the rank runs, and only within the window ([`RecvWindow`]);
//! anything else is refused and counted, and leaves the job as it was.

use super::errno;
use super::marshal::{Decoder, Encoder, MarshalError, MAX_STR};

/// Stream number of standard input.
pub const STDIN: u16 = 0;
/// Stream number of standard output.
pub const STDOUT: u16 = 1;
/// Stream number of standard error.
pub const STDERR: u16 = 2;

/// Most processes per CN in one job.
pub const MAX_LOCAL: u32 = 64;
/// Most ranks in one job.
pub const MAX_RANKS: u32 = 65536;
/// Largest spec block (`zoid-job run`'s program, arguments, environment).
pub const MAX_SPEC: usize = 65536;
/// Most arguments plus environment strings in a spec.
pub const MAX_STRINGS: u32 = 4096;
/// Most bytes of stream data in one `JobOutput` or `JobInput` message.
pub const CHUNK: u32 = 64 << 10;
/// Smallest stream window.
pub const MIN_WINDOW: u32 = CHUNK;
/// Largest stream window.
pub const MAX_WINDOW: u32 = 64 << 20;
/// Environment names a job may not set: the ones zoid sets itself.
pub const RESERVED_ENV_PREFIX: &[u8] = b"ZOID_JOB_";

/// `Launch::flags`: standard input goes to every rank (not rank 0 only).
pub const FLAG_STDIN_ALL: u32 = 0x1;
/// Every `Launch::flags` bit this version knows.
pub const FLAGS_KNOWN: u32 = FLAG_STDIN_ALL;

/// Why a spec, a launch or a stream message was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobError {
    /// A body or spec block that does not decode.
    Malformed,
    /// No program, an empty one, a string with a NUL, an environment entry
    /// without `=` or with a reserved name ([`RESERVED_ENV_PREFIX`]).
    BadSpec,
    /// More than [`MAX_SPEC`] bytes or [`MAX_STRINGS`] strings.
    TooBig,
    /// Sizes or ranks out of range, unknown flags, a bad window.
    BadLayout,
    /// Stream bytes beyond the window the reader opened.
    Overrun,
    /// A credit for more bytes than were sent.
    Overcredit,
}

impl JobError {
    /// The positive errno reporting this error to a caller.
    pub const fn errno(&self) -> i32 {
        match self {
            Self::Malformed => errno::EBADMSG,
            Self::TooBig => errno::E2BIG,
            Self::BadSpec | Self::BadLayout => errno::EINVAL,
            Self::Overrun | Self::Overcredit => errno::EPROTO,
        }
    }
}

impl From<MarshalError> for JobError {
    fn from(_: MarshalError) -> Self {
        Self::Malformed
    }
}

/// NUL-terminated strings, one after the other, `count` of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CStrings<'a> {
    bytes: &'a [u8],
    count: u32,
}

impl<'a> CStrings<'a> {
    /// How many strings.
    pub const fn count(&self) -> u32 {
        self.count
    }

    /// The strings, each without its NUL.
    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let bytes = self.bytes;
        let n = self.count as usize;
        bytes.split(|&b| b == 0).take(n)
    }

    /// Their bytes, NULs included.
    pub const fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Takes `count` NUL-terminated strings from the front of `b`: the
    /// strings and what follows them.
    fn take(b: &'a [u8], count: u32) -> Result<(Self, &'a [u8]), JobError> {
        let mut end = 0;
        for _ in 0..count {
            let len = b[end..]
                .iter()
                .position(|&c| c == 0)
                .ok_or(JobError::Malformed)?;
            if len > MAX_STR {
                return Err(JobError::TooBig);
            }
            end += len + 1;
        }
        Ok((
            Self {
                bytes: &b[..end],
                count,
            },
            &b[end..],
        ))
    }
}

/// Checks an environment entry: `NAME=value`, a name that is not empty and
/// not reserved.
fn check_env(e: &[u8]) -> Result<(), JobError> {
    match e.iter().position(|&c| c == b'=') {
        Some(0) | None => Err(JobError::BadSpec),
        Some(_) if e.starts_with(RESERVED_ENV_PREFIX) => Err(JobError::BadSpec),
        Some(_) => Ok(()),
    }
}

/// What `zoid-job run` asks to run (its spec block):
///
/// ```text
/// argc: u32 (native-endian), envc: u32, cwd NUL, argc x (arg NUL), envc x (NAME=value NUL)
/// ```
///
/// `argv[0]` is the program: an absolute path, or a name the CN looks up
/// in the job's `PATH`.  An empty `cwd` means `/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec<'a> {
    /// The working directory (empty: `/`).
    pub cwd: &'a [u8],
    /// The program and its arguments.
    pub argv: CStrings<'a>,
    /// The environment asked for.
    pub env: CStrings<'a>,
}

impl<'a> Spec<'a> {
    /// Parses and checks a spec block (its counts in the host's byte order:
    /// it comes from the ION's own user space).
    pub fn parse(b: &'a [u8]) -> Result<Self, JobError> {
        if b.len() > MAX_SPEC {
            return Err(JobError::TooBig);
        }
        if b.len() < 8 {
            return Err(JobError::Malformed);
        }
        let argc = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
        let envc = u32::from_ne_bytes([b[4], b[5], b[6], b[7]]);
        if argc == 0 {
            return Err(JobError::BadSpec);
        }
        if argc.saturating_add(envc) > MAX_STRINGS {
            return Err(JobError::TooBig);
        }
        let (cwd, rest) = CStrings::take(&b[8..], 1)?;
        let (argv, rest) = CStrings::take(rest, argc)?;
        let (env, rest) = CStrings::take(rest, envc)?;
        if !rest.is_empty() {
            return Err(JobError::Malformed);
        }
        let cwd = cwd.iter().next().unwrap_or(&[]);
        Self { cwd, argv, env }.checked()
    }

    /// The spec if its directory is absolute (or empty), its program named
    /// and its environment entries `NAME=value` with names not reserved.
    fn checked(self) -> Result<Self, JobError> {
        if !self.cwd.is_empty() && self.cwd[0] != b'/' {
            return Err(JobError::BadSpec);
        }
        if self.argv.iter().next().is_none_or(|p| p.is_empty()) {
            return Err(JobError::BadSpec);
        }
        for e in self.env.iter() {
            check_env(e)?;
        }
        Ok(self)
    }
}

/// Where a job's ranks run: `local_size` ranks on each CN of a list, the
/// CN at index `i` running ranks `i * local_size ..`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// CNs in the job.
    pub cns: u32,
    /// Ranks per CN.
    pub local_size: u32,
}

impl Layout {
    /// A layout, checked: 1..=[`MAX_LOCAL`] ranks per CN, at most
    /// [`MAX_RANKS`] in all, at least one CN.
    pub fn new(cns: u32, local_size: u32) -> Result<Self, JobError> {
        if cns == 0 || local_size == 0 || local_size > MAX_LOCAL {
            return Err(JobError::BadLayout);
        }
        if u64::from(cns) * u64::from(local_size) > u64::from(MAX_RANKS) {
            return Err(JobError::BadLayout);
        }
        Ok(Self { cns, local_size })
    }

    /// Ranks in all.
    pub const fn global_size(&self) -> u32 {
        self.cns * self.local_size
    }

    /// The first rank of the CN at `index`.
    pub const fn first_rank(&self, index: u32) -> u32 {
        index * self.local_size
    }

    /// The index of the CN that runs `rank`, if it is one of the job's.
    pub const fn cn_of(&self, rank: u32) -> Option<u32> {
        if rank < self.global_size() {
            Some(rank / self.local_size)
        } else {
            None
        }
    }
}

/// A `JobLaunch` body: what one CN runs.
///
/// ```text
/// first_rank u32, local_size u32, global_size u32, uid u32, gid u32,
/// window u32, flags u32, argc u32, envc u32,
/// cwd: string, argv: argc x string, env: envc x string   (marshal strings)
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch<'a> {
    /// The CN's first rank; it runs `first_rank .. first_rank + local_size`.
    pub first_rank: u32,
    /// Ranks on this CN.
    pub local_size: u32,
    /// Ranks in the job.
    pub global_size: u32,
    /// The identity the ranks run as.
    pub uid: u32,
    /// Their group.
    pub gid: u32,
    /// Each output stream's window (bytes in flight before the writer waits).
    pub window: u32,
    /// `FLAG_*` bits.
    pub flags: u32,
    /// The spec, as `zoid-job run` gave it.
    pub spec: Spec<'a>,
}

impl<'a> Launch<'a> {
    /// Whether rank `rank` reads the job's standard input.
    pub const fn reads_stdin(&self, rank: u32) -> bool {
        rank == 0 || self.flags & FLAG_STDIN_ALL != 0
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder<'_>) -> Result<(), MarshalError> {
        for v in [
            self.first_rank,
            self.local_size,
            self.global_size,
            self.uid,
            self.gid,
            self.window,
            self.flags,
            self.spec.argv.count(),
            self.spec.env.count(),
        ] {
            e.put_u32(v)?;
        }
        e.put_str(self.spec.cwd)?;
        for s in self.spec.argv.iter().chain(self.spec.env.iter()) {
            e.put_str(s)?;
        }
        Ok(())
    }

    /// Bytes of the encoded body.
    pub fn encoded_len(&self) -> usize {
        let mut e = Encoder::measuring();
        match self.encode(&mut e) {
            Ok(()) => e.len(),
            Err(_) => usize::MAX,
        }
    }

    /// Decodes and checks a body.  The strings are copied into `scratch`
    /// (NUL-terminated, as [`Spec`] holds them), which must be as long as
    /// `b`.
    pub fn decode(b: &[u8], scratch: &'a mut [u8]) -> Result<Self, JobError> {
        let mut d = Decoder::new(b);
        let mut v = [0u32; 9];
        for x in v.iter_mut() {
            *x = d.get_u32()?;
        }
        let [first_rank, local_size, global_size, uid, gid, window, flags, argc, envc] = v;
        if argc == 0 || argc.saturating_add(envc) > MAX_STRINGS {
            return Err(JobError::BadSpec);
        }
        if flags & !FLAGS_KNOWN != 0
            || !(MIN_WINDOW..=MAX_WINDOW).contains(&window)
            || local_size == 0
            || local_size > MAX_LOCAL
            || global_size > MAX_RANKS
            || first_rank
                .checked_add(local_size)
                .is_none_or(|end| end > global_size)
        {
            return Err(JobError::BadLayout);
        }
        // Each string goes behind its NUL, as the spec block has them.
        let mut at = copy_str(&mut d, scratch, 0)?;
        let argv_start = at;
        for _ in 0..argc {
            at = copy_str(&mut d, scratch, at)?;
        }
        let env_start = at;
        for _ in 0..envc {
            at = copy_str(&mut d, scratch, at)?;
        }
        d.finish()?;
        let scratch: &'a [u8] = scratch;
        let cwd = &scratch[..argv_start - 1];
        let argv = CStrings {
            bytes: &scratch[argv_start..env_start],
            count: argc,
        };
        let env = CStrings {
            bytes: &scratch[env_start..at],
            count: envc,
        };
        let spec = Spec { cwd, argv, env }.checked()?;
        Ok(Self {
            first_rank,
            local_size,
            global_size,
            uid,
            gid,
            window,
            flags,
            spec,
        })
    }
}

/// Copies the next string of `d` to `scratch` at `at`, NUL-terminated:
/// where the next one goes.
fn copy_str(d: &mut Decoder<'_>, scratch: &mut [u8], at: usize) -> Result<usize, JobError> {
    let s = d.get_str()?;
    let end = at + s.len();
    if end >= scratch.len() {
        return Err(JobError::Malformed);
    }
    scratch[at..end].copy_from_slice(s);
    scratch[end] = 0;
    Ok(end + 1)
}

/// What one message costs in a window beyond its bytes: the reader holds
/// each message whole until it is consumed, and a message of a few bytes
/// still takes a page of memory, so a writer of tiny messages cannot make
/// the reader hold more than the window.
pub const MESSAGE_COST: u32 = 4096;

/// The writer's side of a stream's window: the cost of the messages sent
/// and not yet credited back stays at most `window`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWindow {
    window: u32,
    in_flight: u32,
}

impl SendWindow {
    /// A window of `window` bytes, none in flight.
    pub const fn new(window: u32) -> Self {
        Self {
            window,
            in_flight: 0,
        }
    }

    /// A window of `window` bytes that stays shut until the reader's first
    /// credit opens it whole ([`RecvWindow::closed`]): a stream whose
    /// reader does not exist yet (a rank's input before its CN started
    /// it).
    pub const fn closed(window: u32) -> Self {
        Self {
            window,
            in_flight: window,
        }
    }

    /// Window left.
    pub const fn room(&self) -> u32 {
        self.window - self.in_flight
    }

    /// Window taken by messages not yet credited.
    pub const fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// Takes room for a message of exactly `n` bytes (1..=[`CHUNK`]):
    /// `false` (and nothing taken) if there is not room for all of it.
    pub fn take_exact(&mut self, n: u32) -> bool {
        if n == 0 || n > CHUNK || n.saturating_add(MESSAGE_COST) > self.room() {
            return false;
        }
        self.in_flight += n + MESSAGE_COST;
        true
    }

    /// Takes room for the next message of at most `want` bytes (and at
    /// most [`CHUNK`]): how many bytes to send, 0 if the writer must wait.
    pub fn take(&mut self, want: usize) -> u32 {
        let room = self.room().saturating_sub(MESSAGE_COST);
        let n = u32::try_from(want).unwrap_or(u32::MAX).min(CHUNK).min(room);
        if n > 0 {
            self.in_flight += n + MESSAGE_COST;
        }
        n
    }

    /// Gives back what [`SendWindow::take`] took for `n` bytes that were
    /// not sent (the message could not be built or sent).
    pub fn untake(&mut self, n: u32) {
        self.in_flight = self
            .in_flight
            .saturating_sub(n.saturating_add(MESSAGE_COST));
    }

    /// The reader gave back `c` of the window.  `Overcredit` (and nothing
    /// changed) for more than is in flight: a reader that lies.
    pub fn credit(&mut self, c: u32) -> Result<(), JobError> {
        if c > self.in_flight {
            return Err(JobError::Overcredit);
        }
        self.in_flight -= c;
        Ok(())
    }
}

/// The reader's side of a stream's window: what its held messages cost,
/// what its consumer took and was not yet credited, and the check that a
/// writer stays inside the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvWindow {
    window: u32,
    /// Cost received and not credited (held + consumed-uncredited).
    outstanding: u32,
    /// Cost consumed and not yet credited.
    uncredited: u32,
}

impl RecvWindow {
    /// A window of `window` bytes.
    pub const fn new(window: u32) -> Self {
        Self {
            window,
            outstanding: 0,
            uncredited: 0,
        }
    }

    /// The reader's side of [`SendWindow::closed`]: its first
    /// [`RecvWindow::take_credit`] gives the whole window.
    pub const fn closed(window: u32) -> Self {
        Self {
            window,
            outstanding: window,
            uncredited: window,
        }
    }

    /// What the messages received and not yet consumed cost.
    pub const fn held(&self) -> u32 {
        self.outstanding - self.uncredited
    }

    /// Most messages the window lets a reader hold at once.
    pub const fn max_messages(&self) -> u32 {
        self.window / (MESSAGE_COST + 1)
    }

    /// A message of `n` bytes (1..=[`CHUNK`]) arrived.  `Overrun` (and
    /// nothing changed) if the writer overstepped the window or sent an
    /// empty or oversized message.
    pub fn accept(&mut self, n: u32) -> Result<(), JobError> {
        if n == 0 || n > CHUNK {
            return Err(JobError::Overrun);
        }
        match self.outstanding.checked_add(n + MESSAGE_COST) {
            Some(o) if o <= self.window => {
                self.outstanding = o;
                Ok(())
            }
            _ => Err(JobError::Overrun),
        }
    }

    /// The consumer took `n` held bytes, the rest of their message with
    /// them if `whole`: the credit to send now, if any (a quarter of the
    /// window gathered, so that credits stay few and a writer waiting on
    /// a full window always gets one).
    pub fn consume(&mut self, n: u32, whole: bool) -> Option<u32> {
        let cost = if whole {
            n.saturating_add(MESSAGE_COST)
        } else {
            n
        };
        self.uncredited += cost.min(self.held());
        if self.uncredited == 0 || self.uncredited < self.window / 4 {
            return None;
        }
        Some(self.take_credit())
    }

    /// Everything consumed, as a credit now (one that could not be sent is
    /// given back with [`RecvWindow::uncredit`]).
    pub fn take_credit(&mut self) -> u32 {
        let c = self.uncredited;
        self.outstanding -= c;
        self.uncredited = 0;
        c
    }

    /// Everything held is dropped unread: all of it, with what was
    /// consumed, as one credit now.
    pub fn discard(&mut self) -> u32 {
        self.uncredited = self.outstanding;
        self.take_credit()
    }

    /// A credit of `c` taken from [`RecvWindow::consume`] was not sent: it
    /// goes with the next one.
    pub fn uncredit(&mut self, c: u32) {
        self.outstanding = self.outstanding.saturating_add(c);
        self.uncredited = self.uncredited.saturating_add(c);
    }
}

/// How a rank ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankEnd {
    /// It exited or was killed: its wait status.
    Status(i32),
    /// It did not start on its CN: the errno.
    NotStarted(i32),
    /// Its CN went down or lost it: the errno (`EHOSTDOWN`, ...).
    Lost(i32),
}

impl RankEnd {
    /// Whether it ended well (exit status 0).
    pub const fn is_success(&self) -> bool {
        matches!(self, Self::Status(0))
    }

    /// The exit code a shell would report: the exit status, 128 plus a
    /// killing signal, 127 for a rank that never started, 255 for one
    /// lost with its CN.
    pub const fn exit_code(&self) -> u8 {
        match *self {
            Self::Status(s) if s & 0x7f != 0 => 128 + (s & 0x7f) as u8,
            Self::Status(s) => ((s >> 8) & 0xff) as u8,
            Self::NotStarted(_) => 127,
            Self::Lost(_) => 255,
        }
    }
}

/// A `JobExit` body: how the rank ended, and how many output messages
/// (stdout, stderr) it sent before.
///
/// ```text
/// status i32 (0 with errno), stdout_msgs u32, stderr_msgs u32
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitReport {
    /// How it ended ([`RankEnd::Status`] or [`RankEnd::NotStarted`]).
    pub end: RankEnd,
    /// Output messages sent on stdout and stderr.
    pub sent: [u32; 2],
}

impl ExitReport {
    /// Bytes of the body.
    pub const LEN: usize = 12;

    /// The body; the header's `errno` is [`ExitReport::errno`].
    pub fn encode(&self) -> [u8; Self::LEN] {
        let status = match self.end {
            RankEnd::Status(s) => s,
            _ => 0,
        };
        let mut b = [0u8; Self::LEN];
        b[0..4].copy_from_slice(&status.to_be_bytes());
        b[4..8].copy_from_slice(&self.sent[0].to_be_bytes());
        b[8..12].copy_from_slice(&self.sent[1].to_be_bytes());
        b
    }

    /// The header's `errno`: 0, or why the rank did not start.
    pub const fn errno(&self) -> i32 {
        match self.end {
            RankEnd::NotStarted(e) | RankEnd::Lost(e) => e,
            RankEnd::Status(_) => 0,
        }
    }

    /// Decodes a body with its header's `errno`.
    pub fn decode(errno: i32, b: &[u8]) -> Result<Self, JobError> {
        let b: &[u8; Self::LEN] = b.try_into().map_err(|_| JobError::Malformed)?;
        let word = |at: usize| u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        let end = match errno {
            0 => RankEnd::Status(word(0) as i32),
            e if e > 0 && word(0) == 0 => RankEnd::NotStarted(e),
            _ => return Err(JobError::Malformed),
        };
        Ok(Self {
            end,
            sent: [word(4), word(8)],
        })
    }
}

/// A job's ending, rank by rank: how many are left, and the exit code of
/// the first rank that ended badly (the job's, as `mpirun` reports).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tally {
    left: u32,
    first_bad: Option<u8>,
}

impl Tally {
    /// A job of `ranks` ranks, none ended.
    pub const fn new(ranks: u32) -> Self {
        Self {
            left: ranks,
            first_bad: None,
        }
    }

    /// A rank ended (each rank once: the caller keeps each rank's state).
    pub fn ended(&mut self, end: RankEnd) {
        self.left = self.left.saturating_sub(1);
        if self.first_bad.is_none() && !end.is_success() {
            let code = end.exit_code();
            // A rank that exits with a status whose low byte is 0 (256)
            // still failed.
            self.first_bad = Some(if code == 0 { 1 } else { code });
        }
    }

    /// Ranks still running.
    pub const fn left(&self) -> u32 {
        self.left
    }

    /// Whether every rank ended.
    pub const fn done(&self) -> bool {
        self.left == 0
    }

    /// The job's exit code: the first bad rank's, or 0.
    pub const fn exit_code(&self) -> u8 {
        match self.first_bad {
            Some(c) => c,
            None => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_block(cwd: &[u8], argv: &[&[u8]], env: &[&[u8]], out: &mut [u8]) -> usize {
        let mut n = 0;
        let mut put = |b: &[u8]| {
            out[n..n + b.len()].copy_from_slice(b);
            n += b.len();
        };
        put(&(argv.len() as u32).to_ne_bytes());
        put(&(env.len() as u32).to_ne_bytes());
        put(cwd);
        put(&[0]);
        for s in argv.iter().chain(env.iter()) {
            put(s);
            put(&[0]);
        }
        n
    }

    #[test]
    fn spec_parses_and_round_trips_through_a_launch() {
        let mut blk = [0u8; 256];
        let n = spec_block(
            b"/tmp",
            &[b"/bin/echo", b"a b", b""],
            &[b"K=V", b"X="],
            &mut blk,
        );
        let spec = Spec::parse(&blk[..n]).unwrap();
        assert_eq!(spec.cwd, b"/tmp");
        let args: [&[u8]; 3] = [b"/bin/echo", b"a b", b""];
        assert!(spec.argv.iter().eq(args.iter().copied()));
        assert_eq!(spec.env.count(), 2);
        let l = Launch {
            first_rank: 2,
            local_size: 2,
            global_size: 4,
            uid: 1000,
            gid: 100,
            window: CHUNK * 4,
            flags: 0,
            spec,
        };
        let mut buf = [0u8; 512];
        let mut e = Encoder::new(&mut buf);
        l.encode(&mut e).unwrap();
        let len = e.len();
        assert_eq!(len, l.encoded_len());
        let mut scratch = [0u8; 512];
        let d = Launch::decode(&buf[..len], &mut scratch[..len]).unwrap();
        assert_eq!(d, l);
        assert!(d.reads_stdin(0) && !d.reads_stdin(2));
    }

    #[test]
    fn bad_specs_are_refused() {
        let mut blk = [0u8; 256];
        let n = spec_block(b"", &[], &[], &mut blk);
        assert_eq!(Spec::parse(&blk[..n]), Err(JobError::BadSpec));
        let n = spec_block(b"", &[b""], &[], &mut blk);
        assert_eq!(Spec::parse(&blk[..n]), Err(JobError::BadSpec));
        let n = spec_block(b"rel", &[b"x"], &[], &mut blk);
        assert_eq!(Spec::parse(&blk[..n]), Err(JobError::BadSpec));
        for env in [&b"NOEQ"[..], b"=v", b"ZOID_JOB_RANK=7"] {
            let n = spec_block(b"", &[b"x"], &[env], &mut blk);
            assert_eq!(Spec::parse(&blk[..n]), Err(JobError::BadSpec), "{env:?}");
        }
        // Counts that promise more strings than there are, trailing bytes.
        let n = spec_block(b"", &[b"x"], &[], &mut blk);
        blk[4] = 1;
        assert_eq!(Spec::parse(&blk[..n]), Err(JobError::Malformed));
        blk[4] = 0;
        blk[n] = b'z';
        assert_eq!(Spec::parse(&blk[..n + 1]), Err(JobError::Malformed));
        assert_eq!(Spec::parse(&blk[..7]), Err(JobError::Malformed));
        let big = [0u8; MAX_SPEC + 1];
        assert_eq!(Spec::parse(&big), Err(JobError::TooBig));
        blk[0..4].copy_from_slice(&MAX_STRINGS.to_ne_bytes());
        blk[4..8].copy_from_slice(&1u32.to_ne_bytes());
        assert_eq!(Spec::parse(&blk[..n]), Err(JobError::TooBig));
    }

    #[test]
    fn forged_launches_are_refused() {
        let mut blk = [0u8; 64];
        let n = spec_block(b"", &[b"x"], &[], &mut blk);
        let spec = Spec::parse(&blk[..n]).unwrap();
        let good = Launch {
            first_rank: 0,
            local_size: 1,
            global_size: 1,
            uid: 0,
            gid: 0,
            window: MIN_WINDOW,
            flags: 0,
            spec,
        };
        let bad = [
            Launch {
                first_rank: 1,
                ..good
            },
            Launch {
                local_size: 0,
                ..good
            },
            Launch {
                local_size: MAX_LOCAL + 1,
                global_size: MAX_RANKS,
                ..good
            },
            Launch {
                first_rank: u32::MAX,
                ..good
            },
            Launch {
                window: MIN_WINDOW - 1,
                ..good
            },
            Launch {
                window: MAX_WINDOW + 1,
                ..good
            },
            Launch {
                flags: 0x80,
                ..good
            },
        ];
        for l in bad {
            let mut buf = [0u8; 128];
            let mut e = Encoder::new(&mut buf);
            l.encode(&mut e).unwrap();
            let len = e.len();
            let mut scratch = [0u8; 128];
            assert_eq!(
                Launch::decode(&buf[..len], &mut scratch[..len]),
                Err(JobError::BadLayout),
                "{l:?}"
            );
        }
        // Truncated anywhere: refused, never a panic.
        let mut buf = [0u8; 128];
        let mut e = Encoder::new(&mut buf);
        good.encode(&mut e).unwrap();
        let len = e.len();
        for cut in 0..len {
            let mut scratch = [0u8; 128];
            assert!(Launch::decode(&buf[..cut], &mut scratch[..cut]).is_err());
        }
    }

    #[test]
    fn layout_assigns_ranks_by_cn() {
        let l = Layout::new(3, 2).unwrap();
        assert_eq!(l.global_size(), 6);
        assert_eq!(l.first_rank(2), 4);
        assert_eq!(l.cn_of(5), Some(2));
        assert_eq!(l.cn_of(6), None);
        assert!(Layout::new(0, 1).is_err());
        assert!(Layout::new(1, 0).is_err());
        assert!(Layout::new(1, MAX_LOCAL + 1).is_err());
        assert!(Layout::new(MAX_RANKS, 2).is_err());
    }

    #[test]
    fn window_blocks_the_writer_and_credits_reopen_it() {
        let w = 4 * CHUNK;
        let mut tx = SendWindow::new(w);
        let mut rx = RecvWindow::new(w);
        let mut sent = 0u32;
        let mut msgs = 0u32;
        // The writer fills the window, then must wait.
        loop {
            let n = tx.take(100_000);
            if n == 0 {
                break;
            }
            rx.accept(n).unwrap();
            sent += n;
            msgs += 1;
        }
        assert_eq!(sent + msgs * MESSAGE_COST, tx.in_flight());
        assert!(tx.room() <= MESSAGE_COST);
        // A byte more is an overrun, and changes nothing.
        let held = rx.held();
        assert_eq!(rx.accept(MESSAGE_COST), Err(JobError::Overrun));
        assert_eq!(rx.held(), held);
        // Small reads gather until a quarter of the window.
        assert_eq!(rx.consume(10, false), None);
        let c = rx.consume(CHUNK - 10, true).unwrap();
        assert_eq!(c, CHUNK + MESSAGE_COST);
        tx.credit(c).unwrap();
        assert!(tx.take(CHUNK as usize) > 0);
        assert_eq!(tx.credit(tx.in_flight() + 1), Err(JobError::Overcredit));
    }

    #[test]
    fn a_closed_window_opens_with_the_first_credit() {
        let mut tx = SendWindow::closed(MIN_WINDOW);
        let mut rx = RecvWindow::closed(MIN_WINDOW);
        assert_eq!(tx.take(1), 0);
        let c = rx.take_credit();
        assert_eq!(c, MIN_WINDOW);
        tx.credit(c).unwrap();
        assert_eq!(tx.take(10), 10);
        rx.accept(10).unwrap();
        assert_eq!(rx.held(), 10 + MESSAGE_COST);
    }

    #[test]
    fn tiny_messages_cannot_make_the_reader_hold_more_than_the_window() {
        let w = MIN_WINDOW;
        let mut rx = RecvWindow::new(w);
        let mut n = 0;
        while rx.accept(1).is_ok() {
            n += 1;
        }
        assert_eq!(n, rx.max_messages());
        assert!(n * (1 + MESSAGE_COST) <= w);
        assert_eq!(rx.accept(0), Err(JobError::Overrun));
        assert_eq!(RecvWindow::new(w).accept(CHUNK + 1), Err(JobError::Overrun));
    }

    #[test]
    fn exit_codes_follow_the_shell() {
        assert_eq!(RankEnd::Status(3 << 8).exit_code(), 3);
        assert_eq!(RankEnd::Status(9).exit_code(), 137);
        assert_eq!(RankEnd::NotStarted(2).exit_code(), 127);
        assert_eq!(RankEnd::Lost(112).exit_code(), 255);
        for r in [
            ExitReport {
                end: RankEnd::Status(3 << 8),
                sent: [7, 0],
            },
            ExitReport {
                end: RankEnd::NotStarted(2),
                sent: [0, 0],
            },
        ] {
            assert_eq!(ExitReport::decode(r.errno(), &r.encode()), Ok(r));
        }
        let mut b = ExitReport {
            end: RankEnd::Status(9),
            sent: [1, 2],
        }
        .encode();
        assert_eq!(ExitReport::decode(2, &b), Err(JobError::Malformed));
        assert_eq!(ExitReport::decode(-2, &b), Err(JobError::Malformed));
        assert_eq!(ExitReport::decode(0, &b[..11]), Err(JobError::Malformed));
        b[0..4].copy_from_slice(&0i32.to_be_bytes());
        assert_eq!(
            ExitReport::decode(2, &b).map(|r| r.end),
            Ok(RankEnd::NotStarted(2))
        );
        let mut t = Tally::new(3);
        t.ended(RankEnd::Status(0));
        t.ended(RankEnd::Status(3 << 8));
        assert!(!t.done());
        t.ended(RankEnd::Status(9));
        assert!(t.done());
        assert_eq!(t.exit_code(), 3);
        let mut t = Tally::new(1);
        t.ended(RankEnd::Status(256 << 8));
        assert_eq!(t.exit_code(), 1);
    }
}
