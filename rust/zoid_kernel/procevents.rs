// SPDX-License-Identifier: GPL-2.0

//! Process events (fork, exec, exit) of the whole node, observed through
//! the scheduler's tracepoints (`sched_process_fork`, `sched_process_exec`,
//! `sched_process_exit`) without patching the kernel.  C side:
//! `shim/procevents.c`.
//!
//! [`ProcessProbes::start`] attaches the probes; dropping the value
//! detaches them and waits until no probe runs.  A kernel built without
//! `CONFIG_TRACEPOINTS` has nothing to attach to: `EOPNOTSUPP`.

use core::ptr::NonNull;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::sync::Arc;

/// One process event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProcessEvent {
    /// Task `pid` (of thread group `tgid`) was created by thread group
    /// `parent`.
    Fork { pid: i32, tgid: i32, parent: i32 },
    /// Thread group `tgid` runs a new program.
    Exec { tgid: i32 },
    /// Task `pid` of `tgid` exits; `group_dead` when it is the last one.
    Exit {
        pid: i32,
        tgid: i32,
        group_dead: bool,
    },
}

impl ProcessEvent {
    /// The event the shim passes as `(kind, pid, tgid, other)`.
    fn from_raw(kind: u32, pid: i32, tgid: i32, other: i32) -> Option<Self> {
        match kind {
            0 => Some(Self::Fork {
                pid,
                tgid,
                parent: other,
            }),
            1 => Some(Self::Exec { tgid }),
            2 => Some(Self::Exit {
                pid,
                tgid,
                group_dead: other != 0,
            }),
            _ => None,
        }
    }
}

/// What observes process events.  Runs in the task's own fork, exec or
/// exit path with preemption off: it must not sleep and should be short.
pub(crate) trait ProcessObserver: Send + Sync + 'static {
    /// A process event happened.
    fn event(&self, event: ProcessEvent);
}

/// The shim's probe record (opaque).
#[repr(C)]
struct RawProbes {
    _private: [u8; 0],
}

extern "C" {
    fn zk_proc_probes_start(
        f: unsafe extern "C" fn(*mut c_void, u32, i32, i32, i32),
        ctx: *mut c_void,
        err: *mut c_int,
    ) -> *mut RawProbes;
    fn zk_proc_probes_stop(p: *mut RawProbes);
}

/// # Safety
///
/// `ctx` must be the observer pointer of a live [`ProcessProbes<O>`].
unsafe extern "C" fn probe_trampoline<O: ProcessObserver>(
    ctx: *mut c_void,
    kind: u32,
    pid: i32,
    tgid: i32,
    other: i32,
) {
    // SAFETY: `ctx` is the `Arc<O>` pointer of a registration, which
    // `ProcessProbes::drop` outlives every probe call of.
    let o = unsafe { &*ctx.cast_const().cast::<O>() };
    if let Some(e) = ProcessEvent::from_raw(kind, pid, tgid, other) {
        o.event(e);
    }
}

/// Attached probes, calling `O`; detached on drop.
pub(crate) struct ProcessProbes<O: ProcessObserver> {
    raw: NonNull<RawProbes>,
    _observer: Arc<O>,
}

// SAFETY: the record is only touched by `drop` (the probes themselves run
// on any CPU, which the shim allows); `O` is `Send + Sync`.
unsafe impl<O: ProcessObserver> Send for ProcessProbes<O> {}
// SAFETY: `&ProcessProbes` gives access to nothing.
unsafe impl<O: ProcessObserver> Sync for ProcessProbes<O> {}

impl<O: ProcessObserver> ProcessProbes<O> {
    /// Attaches the probes (`EOPNOTSUPP` without tracepoints).
    pub(crate) fn start(observer: Arc<O>) -> Result<Self> {
        let ctx = Arc::as_ptr(&observer).cast_mut().cast::<c_void>();
        let mut err: c_int = 0;
        // SAFETY: `ctx` stays valid until `drop` detached the probes (we
        // hold the Arc) and the trampoline is `O`'s; `err` is writable.
        let raw = unsafe { zk_proc_probes_start(probe_trampoline::<O>, ctx, &mut err) };
        let raw = NonNull::new(raw).ok_or_else(|| Error::from_errno(err))?;
        Ok(Self {
            raw,
            _observer: observer,
        })
    }
}

impl<O: ProcessObserver> Drop for ProcessProbes<O> {
    fn drop(&mut self) {
        // SAFETY: `raw` came from `zk_proc_probes_start` and is stopped
        // once; it returns when no probe runs any more.
        unsafe { zk_proc_probes_stop(self.raw.as_ptr()) }
    }
}
