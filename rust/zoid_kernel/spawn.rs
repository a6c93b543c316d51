// SPDX-License-Identifier: GPL-2.0

//! Starting user-space processes with chosen standard descriptors,
//! signalling them, and learning their ends (`call_usermodehelper`, each
//! waited for on the owner's workqueue): a launched job's ranks on a CN.

use super::anonfile::AnonFile;
use super::umh::StrList;
use kernel::ffi::{c_char, c_int, c_void};
use kernel::prelude::*;
use kernel::sync::Arc;

extern "C" {
    fn zk_spawn_wq_new(name: *const c_char) -> *mut c_void;
    fn zk_spawn_wq_destroy(wq: *mut c_void);
    fn zk_spawn_new(s0: *mut c_void, s1: *mut c_void, s2: *mut c_void) -> *mut c_void;
    fn zk_spawn_put(s: *mut c_void);
    fn zk_spawn_start(
        wq: *mut c_void,
        s: *mut c_void,
        argv: *mut *mut c_char,
        envp: *mut *mut c_char,
        done: unsafe extern "C" fn(*mut c_void, c_int),
        ctx: *mut c_void,
    );
    fn zk_spawn_signal(s: *mut c_void, sig: c_int) -> c_int;
}

/// What learns a process's end: its wait status, or the errno that kept
/// it from starting.
pub(crate) trait Exited: Send + Sync + 'static {
    /// The process ended; runs on the [`Spawner`]'s workqueue.
    fn exited(&self, status: Result<i32>);
}

/// The workqueue processes are waited for on; dropping it waits for every
/// process's [`Exited::exited`] to have returned (kill them first).
pub(crate) struct Spawner {
    wq: core::ptr::NonNull<c_void>,
}

// SAFETY: a workqueue may be used and destroyed from any thread.
unsafe impl Send for Spawner {}
// SAFETY: as above; queueing is thread-safe.
unsafe impl Sync for Spawner {}

/// A process started by a [`Spawner`]: signals reach it while it runs.
pub(crate) struct Process {
    raw: core::ptr::NonNull<c_void>,
}

// SAFETY: the record is reference-counted and locked in C.
unsafe impl Send for Process {}
// SAFETY: as above.
unsafe impl Sync for Process {}

/// What a started process's end callback holds until it ran.
struct Pending<T: Exited> {
    argv: StrList,
    envp: StrList,
    argv_ptrs: KVec<*mut c_char>,
    envp_ptrs: KVec<*mut c_char>,
    on_exit: Arc<T>,
}

/// # Safety
///
/// `ctx` must be a `KBox<Pending<T>>` leaked by [`Spawner::start`]; called
/// once.
unsafe extern "C" fn done_trampoline<T: Exited>(ctx: *mut c_void, status: c_int) {
    // SAFETY: as the function's contract says: taken back once.
    let pending = unsafe { KBox::from_raw(ctx.cast::<Pending<T>>()) };
    let r = if status < 0 {
        Err(Error::from_errno(status))
    } else {
        Ok(status)
    };
    pending.on_exit.exited(r);
    // The strings go only now: the process was executed long ago.
    drop(pending);
}

impl Spawner {
    /// A workqueue named `name`.
    pub(crate) fn new(name: &CStr) -> Result<Self> {
        // SAFETY: `name` is NUL-terminated; the workqueue copies it.
        let wq = unsafe { zk_spawn_wq_new(name.as_char_ptr()) };
        Ok(Self {
            wq: core::ptr::NonNull::new(wq).ok_or(ENOMEM)?,
        })
    }

    /// Starts `argv[0]` (an absolute path) with `argv` and `envp`, its
    /// descriptors 0, 1 and 2 `stdio`; `on_exit` learns its end.
    pub(crate) fn start<T: Exited>(
        &self,
        mut argv: StrList,
        mut envp: StrList,
        stdio: [&AnonFile; 3],
        on_exit: Arc<T>,
    ) -> Result<Arc<Process>> {
        let argv_ptrs = argv.pointers()?;
        let envp_ptrs = envp.pointers()?;
        if argv_ptrs.len() < 2 {
            return Err(EINVAL);
        }
        // SAFETY: the three are live file references; the record takes
        // its own.
        let raw = unsafe { zk_spawn_new(stdio[0].as_raw(), stdio[1].as_raw(), stdio[2].as_raw()) };
        let process = Arc::new(
            Process {
                raw: core::ptr::NonNull::new(raw).ok_or(ENOMEM)?,
            },
            GFP_KERNEL,
        )?;
        let mut pending = KBox::new(
            Pending {
                argv,
                envp,
                argv_ptrs,
                envp_ptrs,
                on_exit,
            },
            GFP_KERNEL,
        )?;
        let a = pending.argv_ptrs.as_mut_ptr();
        let e = pending.envp_ptrs.as_mut_ptr();
        let ctx = KBox::into_raw(pending).cast::<c_void>();
        // SAFETY: the pointer arrays and their strings live in `pending`
        // (their heap buffers do not move with it) until the end callback,
        // which gets `pending` back once; the record and the workqueue are
        // live (`self` outlives every callback: its drop drains them).
        unsafe {
            zk_spawn_start(
                self.wq.as_ptr(),
                process.raw.as_ptr(),
                a,
                e,
                done_trampoline::<T>,
                ctx,
            )
        };
        Ok(process)
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        // SAFETY: ours; destroying drains every queued end callback.
        unsafe { zk_spawn_wq_destroy(self.wq.as_ptr()) }
    }
}

impl Process {
    /// Sends `sig` to the process's group: `ESRCH` if it is not running.
    pub(crate) fn signal(&self, sig: i32) -> Result {
        // SAFETY: the record is live while `self` holds its reference.
        let rc = unsafe { zk_spawn_signal(self.raw.as_ptr(), sig) };
        if rc < 0 {
            return Err(Error::from_errno(rc));
        }
        Ok(())
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        // SAFETY: our reference, put once.
        unsafe { zk_spawn_put(self.raw.as_ptr()) }
    }
}
