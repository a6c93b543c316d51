// SPDX-License-Identifier: GPL-2.0

//! The `job` plug-in's ION side: ZOID's job hooks.
//!
//! CN programs register job starts and ends (through `/dev/zoid`).  The ION
//! runs its job script (`/sys/kernel/zoid/job_script`, empty = off) once per
//! job: with argument `1` when the first CN process starts the job and `0`
//! when the last one ends it, ends it by exiting, or its CN goes away.  The
//! script gets `ZOID_JOB_ID`, `ZOID_JOB_EXEC`, `ZOID_JOB_ARGS`,
//! `ZOID_JOB_GLOBAL_SIZE`, `ZOID_JOB_LOCAL_SIZE`, `ZOID_JOB_MODE` and
//! `ZOID_JOB_NODE` (the CN that started or ended it).  Job calls are
//! serialised, so a job's end script never runs before its start script
//! finished.  A start (and an explicit end) waits for the script, whose
//! failure fails the call; an end caused by a process exit or a CN going
//! away runs in zoid's receive thread and waits only until the script was
//! executed, so a slow script never holds up other CNs' calls.

use crate::plugin::{declared_plugin, Caller};
use crate::zoid_kernel::umh::{self, StrList, Wait};
use crate::zoid_proto::zoid::plugin::CallResult;
use crate::zoid_proto::zoid::plugins::job;
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::Mutex;

/// Jobs known at once (more: `EAGAIN`).
const MAX_JOBS: usize = 64;
/// Longest job script path.
pub(crate) const MAX_SCRIPT: usize = 256;

struct JobEntry {
    id: u32,
    exec: KVec<u8>,
    args: KVec<u8>,
    global_size: u32,
    local_size: u32,
    mode: KVec<u8>,
    /// CN processes in the job: (node, pid).
    members: KVec<(u16, u32)>,
}

struct State {
    script: KVec<u8>,
    jobs: KVec<JobEntry>,
}

/// The `job` plug-in.
#[pin_data]
pub(crate) struct Job {
    #[pin]
    state: Mutex<State>,
    /// Job script runs (start and end).
    pub(crate) script_runs: Atomic<u64>,
    /// Job script runs that failed (could not start, or non-zero exit).
    pub(crate) script_failures: Atomic<u64>,
}

fn errno(e: Error) -> i32 {
    -e.to_errno()
}

/// Decimal digits of `v` in `buf`.
fn decimal(v: u32, buf: &mut [u8; 10]) -> &[u8] {
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

fn copy(b: &[u8]) -> Result<KVec<u8>> {
    let mut v = KVec::with_capacity(b.len(), GFP_KERNEL)?;
    v.extend_from_slice(b, GFP_KERNEL)?;
    Ok(v)
}

impl Job {
    /// A `job` plug-in with no script.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            state <- kernel::new_mutex!(
                State {
                    script: KVec::new(),
                    jobs: KVec::new(),
                },
                "zoid::job"
            ),
            script_runs: Atomic::new(0),
            script_failures: Atomic::new(0),
        })
    }

    /// Sets the job script (absolute path; empty: none).
    pub(crate) fn set_script(&self, path: &[u8]) -> Result {
        if path.len() > MAX_SCRIPT || (!path.is_empty() && !path.starts_with(b"/")) {
            return Err(EINVAL);
        }
        self.state.lock().script = copy(path)?;
        Ok(())
    }

    /// Shows the job script path.
    pub(crate) fn with_script(&self, f: impl FnOnce(&[u8]) -> Result) -> Result {
        f(&self.state.lock().script)
    }

    /// Jobs running now.
    pub(crate) fn running(&self) -> usize {
        self.state.lock().jobs.len()
    }

    /// Runs the script for `job` with `phase` (`b"1"` or `b"0"`); `Ok` if
    /// there is none.  With [`Wait::Exec`] its exit status is not known.
    fn run_script(
        &self,
        script: &[u8],
        j: &JobEntry,
        phase: &[u8],
        node: u16,
        wait: Wait,
    ) -> Result {
        if script.is_empty() {
            return Ok(());
        }
        self.script_runs.fetch_add(1, Relaxed);
        let r = (|| -> Result {
            let mut argv = StrList::new();
            argv.push(&[script])?;
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

    /// Removes the members `gone` selects from every job; a job left with
    /// none runs its end script and is forgotten.
    fn remove_members(&self, node: u16, mut gone: impl FnMut(&(u16, u32)) -> bool) {
        let mut st = self.state.lock();
        let State { script, jobs } = &mut *st;
        let mut i = 0;
        while i < jobs.len() {
            let j = &mut jobs[i];
            let before = j.members.len();
            j.members.retain(|m| !gone(m));
            if before != 0 && j.members.is_empty() {
                let _ = self.run_script(script, &jobs[i], b"0", node, Wait::Exec);
                let _ = jobs.remove(i);
            } else {
                i += 1;
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
        let me = (ctx.node, ctx.creds.pid);
        let mut st = self.state.lock();
        let State { script, jobs } = &mut *st;
        if let Some(j) = jobs.iter_mut().find(|j| j.id == id) {
            if !j.members.contains(&me) {
                j.members.push(me, GFP_KERNEL).map_err(|_| errno(ENOMEM))?;
            }
            return Ok(j.members.len() as i64);
        }
        if jobs.len() >= MAX_JOBS {
            return Err(errno(EAGAIN));
        }
        let mut members = KVec::new();
        members.push(me, GFP_KERNEL).map_err(|_| errno(ENOMEM))?;
        let j = JobEntry {
            id,
            exec: copy(exec).map_err(errno)?,
            args: copy(args).map_err(errno)?,
            global_size,
            local_size,
            mode: copy(mode).map_err(errno)?,
            members,
        };
        self.run_script(script, &j, b"1", ctx.node, Wait::Exit)
            .map_err(errno)?;
        jobs.push(j, GFP_KERNEL).map_err(|_| errno(ENOMEM))?;
        Ok(1)
    }

    fn job_end(&self, ctx: &Caller, id: u32) -> CallResult {
        let me = (ctx.node, ctx.creds.pid);
        let mut st = self.state.lock();
        let State { script, jobs } = &mut *st;
        let i = jobs
            .iter()
            .position(|j| j.id == id && j.members.contains(&me))
            .ok_or(errno(ENOENT))?;
        jobs[i].members.retain(|m| *m != me);
        let left = jobs[i].members.len();
        if left == 0 {
            let r = self.run_script(script, &jobs[i], b"0", ctx.node, Wait::Exit);
            let _ = jobs.remove(i);
            r.map_err(errno)?;
        }
        Ok(left as i64)
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
