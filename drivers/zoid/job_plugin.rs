// SPDX-License-Identifier: GPL-2.0

//! The `job` plug-in's ION side: ZOID's job hooks.
//!
//! CN programs register job starts and ends (through `/dev/zoid`).  The ION
//! runs its job script (`/sys/kernel/zoid/job_script`, empty = off) once per
//! job: with argument `1` when the first CN process starts the job and `0`
//! when the last one ends it, ends it by exiting, or its CN goes away.  The
//! script gets `ZOID_JOB_ID`, `ZOID_JOB_EXEC`, `ZOID_JOB_ARGS`,
//! `ZOID_JOB_GLOBAL_SIZE`, `ZOID_JOB_LOCAL_SIZE`, `ZOID_JOB_MODE` and
//! `ZOID_JOB_NODE` (the CN that started or ended it).  A CN is not
//! trusted (docs/reliability.md, "Threat model"): only a CN's root may
//! start a job (`EPERM`), the script runs as the job's owner, the
//! starting caller's identity mapped as the `unix` plug-in maps it
//! (root squashed to 65534 by default: the script runs as root only when
//! the admin maps a CN's root to root; another owner's script runs
//! through the job runner, `/sys/kernel/zoid/job_runner`, which drops
//! root first), and the values a CN chose
//! (`ZOID_JOB_EXEC`, `_ARGS`, `_MODE`) must be printable ASCII without
//! quotes, backslashes, `$`, backquotes or `;&|<>()` (`EINVAL`), so that
//! even a script that hands them to `eval` runs no command of a CN's
//! choosing.  Job calls are
//! serialised, so a job's end script never runs before its start script
//! finished.  A start (and an explicit end) waits for the script, whose
//! failure fails the call; an end caused by a process exit or a CN going
//! away runs in zoid's receive thread and waits only until the script was
//! executed, so a slow script never holds up other CNs' calls.

use crate::plugin::{declared_plugin, Caller};
use crate::unix_plugin::Unix;
use crate::zoid_kernel::cred::MAX_GROUPS;
use crate::zoid_kernel::umh::{self, StrList, Wait};
use crate::zoid_proto::zoid::plugin::CallResult;
use crate::zoid_proto::zoid::plugins::job;
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::{Arc, Mutex};

/// Jobs known at once (more: `EAGAIN`).
const MAX_JOBS: usize = 64;
/// Longest job script path.
pub(crate) const MAX_SCRIPT: usize = 256;

/// What a job's scripts are told of it.
struct JobInfo {
    id: u32,
    exec: KVec<u8>,
    args: KVec<u8>,
    global_size: u32,
    local_size: u32,
    mode: KVec<u8>,
    /// Its owner's ION uid and gid (the start's caller, mapped): its
    /// scripts run as them.
    owner: (u32, u32),
}

impl JobInfo {
    fn try_clone(&self) -> Result<Self> {
        Ok(Self {
            exec: copy(&self.exec)?,
            args: copy(&self.args)?,
            mode: copy(&self.mode)?,
            ..*self
        })
    }
}

struct JobEntry {
    info: JobInfo,
    /// CN processes in the job: (node, pid).
    members: KVec<(u16, u32)>,
}

/// The job script and its runner as the knobs said when a script was due:
/// taken under the lock, run after it (a script may take its time, and
/// `zoid-rx` takes the lock at every process exit).
struct Programs {
    script: KVec<u8>,
    /// The program that runs the script as its owner (`job_runner`).
    runner: KVec<u8>,
}

struct State {
    programs: Programs,
    jobs: KVec<JobEntry>,
}

impl State {
    fn programs(&self) -> Result<Programs> {
        Ok(Programs {
            script: copy(&self.programs.script)?,
            runner: copy(&self.programs.runner)?,
        })
    }
}

/// What a launched job's scripts are told of it
/// ([`Job::run_launch_scripts`]).
pub(crate) struct LaunchScripts<'a> {
    pub(crate) id: u32,
    /// The program (`ZOID_JOB_EXEC`).
    pub(crate) exec: &'a [u8],
    /// Its arguments, `:`-separated (`ZOID_JOB_ARGS`).
    pub(crate) args: &'a [u8],
    /// Its environment, `:`-separated (`ZOID_JOB_ENV`).
    pub(crate) env: &'a [u8],
    pub(crate) global_size: u32,
    pub(crate) local_size: u32,
    /// Its owner's uid and gid: the scripts run as them.
    pub(crate) owner: (u32, u32),
    /// The owner's home (the job's `HOME`), user name and shell.
    pub(crate) home: &'a [u8],
    pub(crate) user: &'a [u8],
    pub(crate) shell: &'a [u8],
}

/// `job_runner` at load: tools/zoid/zoid-job-run.c, installed there.
const DEFAULT_RUNNER: &[u8] = b"/sbin/zoid-job-run";

/// The `job` plug-in.
#[pin_data]
pub(crate) struct Job {
    #[pin]
    state: Mutex<State>,
    /// The identity mapping and squashing of the `unix` plug-in.
    unix: Arc<Unix>,
    /// Job script runs (start and end).
    pub(crate) script_runs: Atomic<u64>,
    /// Job script runs that failed (could not start, or non-zero exit).
    pub(crate) script_failures: Atomic<u64>,
}

fn errno(e: Error) -> i32 {
    -e.to_errno()
}

/// Decimal digits of `v` in `buf`.
pub(crate) fn decimal(v: u32, buf: &mut [u8; 10]) -> &[u8] {
    let mut i = buf.len();
    let mut v = v;
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            return &buf[i..];
        }
    }
}

/// Whether a value a CN chose may go into a script's environment:
/// printable ASCII but for the characters with which a shell would make a
/// command of it (quotes, backslash, `$`, backquote, `;&|<>()`), at most
/// [`MAX_VALUE`] bytes.
fn clean_value(v: &[u8]) -> bool {
    v.len() <= MAX_VALUE
        && v.iter()
            .all(|&c| (b' '..=b'~').contains(&c) && !b"\"'`$\\;&|<>()".contains(&c))
}

/// Longest value of `ZOID_JOB_EXEC`, `_ARGS` or `_MODE`.
const MAX_VALUE: usize = 1024;

/// A program's path as the knobs take it: absolute, at most
/// [`MAX_SCRIPT`] bytes, or empty (none).
fn program_path(path: &[u8]) -> Result<KVec<u8>> {
    if path.len() > MAX_SCRIPT || (!path.is_empty() && !path.starts_with(b"/")) {
        return Err(EINVAL);
    }
    copy(path)
}

fn copy(b: &[u8]) -> Result<KVec<u8>> {
    let mut v = KVec::with_capacity(b.len(), GFP_KERNEL)?;
    v.extend_from_slice(b, GFP_KERNEL)?;
    Ok(v)
}

impl Job {
    /// A `job` plug-in with no script, mapping identities as `unix` does.
    pub(crate) fn new(unix: Arc<Unix>) -> Result<impl PinInit<Self, Error>> {
        let runner = copy(DEFAULT_RUNNER)?;
        Ok(try_pin_init!(Self {
            unix,
            state <- kernel::new_mutex!(
                State {
                    programs: Programs {
                        script: KVec::new(),
                        runner,
                    },
                    jobs: KVec::new(),
                },
                "zoid::job"
            ),
            script_runs: Atomic::new(0),
            script_failures: Atomic::new(0),
        }? Error))
    }

    /// Sets the job runner (absolute path; empty: none, and only jobs
    /// owned by root run their script).
    pub(crate) fn set_runner(&self, path: &[u8]) -> Result {
        self.state.lock().programs.runner = program_path(path)?;
        Ok(())
    }

    /// The job runner's path (empty: none).
    pub(crate) fn runner(&self) -> Result<KVec<u8>> {
        copy(&self.state.lock().programs.runner)
    }

    /// Shows the job runner path.
    pub(crate) fn with_runner(&self, f: impl FnOnce(&[u8]) -> Result) -> Result {
        f(&self.state.lock().programs.runner)
    }

    /// Sets the job script (absolute path; empty: none).
    pub(crate) fn set_script(&self, path: &[u8]) -> Result {
        self.state.lock().programs.script = program_path(path)?;
        Ok(())
    }

    /// Shows the job script path.
    pub(crate) fn with_script(&self, f: impl FnOnce(&[u8]) -> Result) -> Result {
        f(&self.state.lock().programs.script)
    }

    /// Jobs running now.
    pub(crate) fn running(&self) -> usize {
        self.state.lock().jobs.len()
    }

    /// Runs the script for `job` with `phase` (`b"1"` or `b"0"`) as the
    /// job's owner; `Ok` if there is none.  With [`Wait::Exec`] its exit
    /// status is not known.
    ///
    /// A helper of the kernel runs as root, and a module cannot give it
    /// another user (its uid must change through `setresuid`, or the
    /// kernel's process counts of users go wrong): a job whose owner is
    /// not root has its script run by the job runner, which takes the
    /// owner's uid and gid, drops root and executes the script.  Without a
    /// runner such a job's script does not run (`EACCES`), never as root.
    fn run_script(
        &self,
        st: &Programs,
        j: &JobInfo,
        phase: &[u8],
        node: u16,
        wait: Wait,
    ) -> Result {
        if st.script.is_empty() {
            return Ok(());
        }
        self.script_runs.fetch_add(1, Relaxed);
        let r = (|| -> Result {
            let mut argv = StrList::new();
            let (mut u, mut g) = ([0u8; 10], [0u8; 10]);
            if j.owner != (0, 0) {
                if st.runner.is_empty() {
                    return Err(EACCES);
                }
                argv.push(&[&st.runner])?;
                argv.push(&[decimal(j.owner.0, &mut u)])?;
                argv.push(&[decimal(j.owner.1, &mut g)])?;
            }
            argv.push(&[&st.script])?;
            argv.push(&[phase])?;
            let (mut b1, mut b2, mut b3, mut b4) = ([0u8; 10], [0u8; 10], [0u8; 10], [0u8; 10]);
            let mut envp = StrList::new();
            envp.push(&[b"ZOID_JOB_ID=", decimal(j.id, &mut b1)])?;
            envp.push(&[b"ZOID_JOB_EXEC=", &j.exec])?;
            envp.push(&[b"ZOID_JOB_ARGS=", &j.args])?;
            envp.push(&[b"ZOID_JOB_GLOBAL_SIZE=", decimal(j.global_size, &mut b2)])?;
            envp.push(&[b"ZOID_JOB_LOCAL_SIZE=", decimal(j.local_size, &mut b3)])?;
            envp.push(&[b"ZOID_JOB_MODE=", &j.mode])?;
            envp.push(&[b"ZOID_JOB_NODE=", decimal(u32::from(node), &mut b4)])?;
            envp.push(&[b"PATH=/sbin:/bin:/usr/sbin:/usr/bin"])?;
            envp.push(&[b"HOME=/"])?;
            match umh::run(&mut argv, &mut envp, wait)? {
                0 => Ok(()),
                _ => Err(EIO),
            }
        })();
        if r.is_err() {
            self.script_failures.fetch_add(1, Relaxed);
        }
        r
    }

    /// Runs a launched job's scripts (`zoid-job run`, ZeptoOS's job
    /// scripts) with `phase` (`b"1"` at its start, `b"0"` at its end):
    /// the admin's `job_script`, then the owner's
    /// `$HOME/zoid-user-script.sh` if there is one, both as the owner
    /// through the job runner (`-o`: a user script that does not exist is
    /// no failure).  `Ok` if both succeeded or do not exist; `EIO` if one
    /// exited non-zero (with [`Wait::Exec`], only whether they started).
    pub(crate) fn run_launch_scripts(
        &self,
        j: &LaunchScripts<'_>,
        phase: &[u8],
        wait: Wait,
    ) -> Result {
        let programs = self.state.lock().programs()?;
        let mut user_script = KVec::new();
        if j.home.starts_with(b"/") {
            user_script.extend_from_slice(j.home, GFP_KERNEL)?;
            user_script.extend_from_slice(b"/zoid-user-script.sh", GFP_KERNEL)?;
        }
        for (script, optional) in [(&programs.script[..], false), (&user_script[..], true)] {
            if script.is_empty() {
                continue;
            }
            self.script_runs.fetch_add(1, Relaxed);
            let r = (|| -> Result {
                let mut argv = StrList::new();
                let (mut u, mut g) = ([0u8; 10], [0u8; 10]);
                // The admin's script of a root-owned job runs as root
                // directly, as the job plug-in's; the rest as the owner.
                if optional || j.owner != (0, 0) {
                    if programs.runner.is_empty() {
                        return Err(EACCES);
                    }
                    argv.push(&[&programs.runner])?;
                    if optional {
                        argv.push(&[b"-o"])?;
                    }
                    argv.push(&[decimal(j.owner.0, &mut u)])?;
                    argv.push(&[decimal(j.owner.1, &mut g)])?;
                }
                argv.push(&[script])?;
                argv.push(&[phase])?;
                let (mut b1, mut b2, mut b3) = ([0u8; 10], [0u8; 10], [0u8; 10]);
                let mut envp = StrList::new();
                envp.push(&[b"ZOID_JOB_ID=", decimal(j.id, &mut b1)])?;
                envp.push(&[b"ZOID_JOB_EXEC=", j.exec])?;
                envp.push(&[b"ZOID_JOB_ARGS=", j.args])?;
                envp.push(&[b"ZOID_JOB_ENV=", j.env])?;
                envp.push(&[b"ZOID_JOB_GLOBAL_SIZE=", decimal(j.global_size, &mut b2)])?;
                envp.push(&[b"ZOID_JOB_LOCAL_SIZE=", decimal(j.local_size, &mut b3)])?;
                envp.push(&[
                    b"ZOID_JOB_MODE=",
                    if j.local_size == 1 { b"SMP" } else { b"VN" },
                ])?;
                envp.push(&[b"PATH=/sbin:/bin:/usr/sbin:/usr/bin"])?;
                envp.push(&[b"HOME=", if j.home.is_empty() { b"/" } else { j.home }])?;
                envp.push(&[b"USER=", j.user])?;
                envp.push(&[
                    b"SHELL=",
                    if j.shell.is_empty() {
                        b"/bin/sh"
                    } else {
                        j.shell
                    },
                ])?;
                match umh::run(&mut argv, &mut envp, wait)? {
                    0 => Ok(()),
                    _ => Err(EIO),
                }
            })();
            if let Err(e) = r {
                self.script_failures.fetch_add(1, Relaxed);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Removes the members `gone` selects from every job; a job left with
    /// none is forgotten and runs its end script, once the lock is let go
    /// (`zoid-rx` calls this: it waits for the script's start only).
    fn remove_members(&self, node: u16, mut gone: impl FnMut(&(u16, u32)) -> bool) {
        let mut ended = KVec::new();
        let programs = {
            let mut st = self.state.lock();
            let mut i = 0;
            while i < st.jobs.len() {
                let j = &mut st.jobs[i];
                let before = j.members.len();
                j.members.retain(|m| !gone(m));
                if before != 0 && j.members.is_empty() {
                    if let Ok(j) = st.jobs.remove(i) {
                        if ended.push(j.info, GFP_KERNEL).is_err() {
                            // Forgotten without its end script: counted.
                            self.script_failures.fetch_add(1, Relaxed);
                        }
                    }
                } else {
                    i += 1;
                }
            }
            if ended.is_empty() {
                return;
            }
            st.programs()
        };
        for j in ended {
            match &programs {
                // Counted as failed by run_script.
                Ok(p) => {
                    let _ = self.run_script(p, &j, b"0", node, Wait::Exec);
                }
                Err(_) => {
                    self.script_failures.fetch_add(1, Relaxed);
                }
            }
        }
    }
}

impl job::Server for Job {
    type Ctx = Caller;

    fn job_start(
        &self,
        ctx: &Caller,
        id: u32,
        exec: &[u8],
        args: &[u8],
        global_size: u32,
        local_size: u32,
        mode: &[u8],
    ) -> CallResult {
        // Only a CN's root starts jobs (as only root runs CIOD's job
        // control on a compute node).
        if ctx.creds.uid != 0 {
            return Err(errno(EPERM));
        }
        if !clean_value(exec) || !clean_value(args) || !clean_value(mode) {
            return Err(errno(EINVAL));
        }
        let me = (ctx.node, ctx.creds.pid);
        let mut groups = [0u32; MAX_GROUPS];
        let owner = self.unix.mapped_ids(ctx, &mut groups);
        let (info, programs) = {
            let mut st = self.state.lock();
            if let Some(j) = st.jobs.iter_mut().find(|j| j.info.id == id) {
                if !j.members.contains(&me) {
                    j.members.push(me, GFP_KERNEL).map_err(|_| errno(ENOMEM))?;
                }
                return Ok(j.members.len() as i64);
            }
            if st.jobs.len() >= MAX_JOBS {
                return Err(errno(EAGAIN));
            }
            let mut members = KVec::new();
            members.push(me, GFP_KERNEL).map_err(|_| errno(ENOMEM))?;
            let info = JobInfo {
                id,
                exec: copy(exec).map_err(errno)?,
                args: copy(args).map_err(errno)?,
                global_size,
                local_size,
                mode: copy(mode).map_err(errno)?,
                owner,
            };
            let programs = st.programs().map_err(errno)?;
            let entry = JobEntry {
                info: info.try_clone().map_err(errno)?,
                members,
            };
            // Known from now on (others may join it), its start script
            // run without the lock.
            st.jobs.push(entry, GFP_KERNEL).map_err(|_| errno(ENOMEM))?;
            (info, programs)
        };
        if let Err(e) = self.run_script(&programs, &info, b"1", ctx.node, Wait::Exit) {
            // The start failed: the job is not.
            let mut st = self.state.lock();
            if let Some(i) = st.jobs.iter().position(|j| j.info.id == id) {
                let _ = st.jobs.remove(i);
            }
            return Err(errno(e));
        }
        Ok(1)
    }

    fn job_end(&self, ctx: &Caller, id: u32) -> CallResult {
        let me = (ctx.node, ctx.creds.pid);
        let (ended, programs) = {
            let mut st = self.state.lock();
            let i = st
                .jobs
                .iter()
                .position(|j| j.info.id == id && j.members.contains(&me))
                .ok_or(errno(ENOENT))?;
            st.jobs[i].members.retain(|m| *m != me);
            let left = st.jobs[i].members.len();
            if left != 0 {
                return Ok(left as i64);
            }
            let programs = st.programs();
            let ended = st.jobs.remove(i).map_err(|_| errno(ENOENT))?;
            (ended, programs)
        };
        // Its end script, without the lock.
        self.run_script(
            &programs.map_err(errno)?,
            &ended.info,
            b"0",
            ctx.node,
            Wait::Exit,
        )
        .map_err(errno)?;
        Ok(0)
    }
}

declared_plugin!(Job, job, {
    fn process_exit(&self, node: u16, pid: u32) {
        self.remove_members(node, |m| *m == (node, pid));
    }

    fn node_gone(&self, node: u16) {
        self.remove_members(node, |m| m.0 == node);
    }
});
