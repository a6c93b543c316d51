// SPDX-License-Identifier: GPL-2.0

//! Kernel threads that sleep until kicked (C side: `shim/kthread.c`).
//!
//! A [`Kicker`] is created first, so the state the thread will run on can
//! hold it (and hand it to interrupt-side producers such as
//! [`super::netlink::NetLink`]); [`KThread::spawn`] then starts the thread.
//! Dropping the [`KThread`] stops the thread and waits for it.

use core::{marker::PhantomData, ptr::NonNull};
use kernel::ffi::{c_char, c_int, c_long, c_void};
use kernel::{
    prelude::*,
    sync::{atomic::Atomic, Arc},
};

/// The C shim's thread record (opaque).
#[repr(C)]
pub(crate) struct RawThread {
    _private: [u8; 0],
}

extern "C" {
    fn zk_thread_alloc() -> *mut RawThread;
    fn zk_thread_start(
        t: *mut RawThread,
        f: unsafe extern "C" fn(*mut c_void) -> c_int,
        data: *mut c_void,
        name: *const c_char,
    ) -> c_int;
    fn zk_thread_stop_free(t: *mut RawThread);
    fn zk_thread_stop(t: *mut RawThread);
    fn zk_thread_kick(t: *mut RawThread);
    fn zk_thread_kick_thread(t: *mut RawThread);
    fn zk_thread_wake_at(t: *mut RawThread, at_ns: u64);
    fn zk_thread_wake_counts(
        t: *mut RawThread,
        kicks: *mut u64,
        thread_kicks: *mut u64,
        timer_fires: *mut u64,
        timer_arms: *mut u64,
    );
    fn zk_thread_drive_begin(t: *mut RawThread) -> bool;
    fn zk_thread_drive_end(t: *mut RawThread);
    fn zk_thread_drive_wait(
        t: *mut RawThread,
        done: *const u32,
        timeout: c_long,
        kicked: *mut bool,
    ) -> c_long;
    fn zk_thread_wake_driver(t: *mut RawThread);
    fn zk_thread_set_nice(t: *mut RawThread, nice: c_int) -> c_int;
    fn zk_thread_nice(t: *mut RawThread, nice: *mut c_int) -> c_int;
    fn zk_stack_left() -> usize;
    fn zk_thread_should_stop() -> bool;
    fn zk_thread_wait(t: *mut RawThread, timeout: c_long);
}

/// Wakes a [`KThread`]; usable from any context, kicks are never lost.
pub(crate) struct Kicker {
    raw: NonNull<RawThread>,
}

// SAFETY: the shim's kick is safe from any context and any CPU; the record
// is only freed by its single owner.
unsafe impl Send for Kicker {}
// SAFETY: as above, `kick` takes `&self` and is thread-safe in C.
unsafe impl Sync for Kicker {}

impl Kicker {
    /// Allocates the thread record.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: no preconditions; returns NULL on failure.
        let raw = NonNull::new(unsafe { zk_thread_alloc() }).ok_or(ENOMEM)?;
        Ok(Self { raw })
    }

    /// Wakes the thread (no-op before it started), or the task driving it
    /// (see [`Kicker::drive`]).
    pub(crate) fn kick(&self) {
        // SAFETY: `raw` is a live record (freed only when `self` is
        // dropped, after the thread stopped).
        unsafe { zk_thread_kick(self.raw.as_ptr()) }
    }

    /// Wakes the thread itself, even while a task drives it.
    pub(crate) fn kick_thread(&self) {
        // SAFETY: as in `kick`.
        unsafe { zk_thread_kick_thread(self.raw.as_ptr()) }
    }

    /// Sets the thread's next wake-up to `at_ns` (monotonic nanoseconds, as
    /// [`super::time::now_ns`]), replacing the one set before; `u64::MAX`:
    /// none.  Nothing wakes now: the record's hrtimer kicks the thread (as
    /// [`Kicker::kick_thread`]) when the time comes.  Ignored once the
    /// thread is stopped.
    pub(crate) fn wake_at(&self, at_ns: u64) {
        // SAFETY: as in `kick`; the shim serialises this with stopping.
        unsafe { zk_thread_wake_at(self.raw.as_ptr(), at_ns) }
    }

    /// Wake-ups asked for so far: kicks (to the driver or the thread),
    /// kicks to the thread itself, and of those, by the timer; and how
    /// often the timer was armed.
    pub(crate) fn wake_counts(&self) -> WakeCounts {
        let mut c = WakeCounts::default();
        // SAFETY: as in `kick`; the four pointers are writable `u64`s.
        unsafe {
            zk_thread_wake_counts(
                self.raw.as_ptr(),
                &mut c.kicks,
                &mut c.thread_kicks,
                &mut c.timer_fires,
                &mut c.timer_arms,
            )
        };
        c
    }

    /// Sets the thread's nice value (-20..19; lower runs first and gets a
    /// larger share of a busy CPU).  `EINVAL` outside that range, `ESRCH`
    /// if the thread is not running.
    pub(crate) fn set_nice(&self, nice: i32) -> Result {
        // SAFETY: as in `kick`; the shim pins the task it changes.
        let err = unsafe { zk_thread_set_nice(self.raw.as_ptr(), nice) };
        if err != 0 {
            return Err(Error::from_errno(err));
        }
        Ok(())
    }

    /// The thread's nice value now (whoever set it, `renice` included);
    /// `ESRCH` if the thread is not running.
    pub(crate) fn nice(&self) -> Result<i32> {
        let mut nice: c_int = 0;
        // SAFETY: as in `kick`; `nice` is a valid place to write and the
        // shim pins the task it reads under RCU.
        let err = unsafe { zk_thread_nice(self.raw.as_ptr(), &mut nice) };
        if err != 0 {
            return Err(Error::from_errno(err));
        }
        Ok(nice)
    }

    /// Registers the current task as the one that does the thread's work
    /// while it waits: kicks wake it instead of the thread until the
    /// returned guard is dropped.  `None` if another task drives.
    pub(crate) fn drive(&self) -> Option<Driving<'_>> {
        // SAFETY: as in `kick`.
        unsafe { zk_thread_drive_begin(self.raw.as_ptr()) }.then_some(Driving {
            kicker: self,
            _task_bound: PhantomData,
        })
    }

    /// Wakes the driving task, if any and not the current one: what it
    /// waits for may have been done by the thread.
    pub(crate) fn wake_driver(&self) {
        // SAFETY: as in `kick`.
        unsafe { zk_thread_wake_driver(self.raw.as_ptr()) }
    }

    /// The raw record, for C producers (`NetLink`) that kick it.
    pub(crate) fn as_raw(&self) -> *mut RawThread {
        self.raw.as_ptr()
    }
}

/// What [`Kicker::wake_counts`] reports.
#[derive(Clone, Copy, Default)]
pub(crate) struct WakeCounts {
    /// [`Kicker::kick`]s (to the driver, or the thread).
    pub(crate) kicks: u64,
    /// [`Kicker::kick_thread`]s, the timer's included.
    pub(crate) thread_kicks: u64,
    /// Wake-ups set with [`Kicker::wake_at`] that came due.
    pub(crate) timer_fires: u64,
    /// Times the timer was armed: by [`Kicker::wake_at`] for a deadline
    /// earlier than the armed one, or on expiry for one moved later.
    pub(crate) timer_arms: u64,
}

/// The current task drives a [`Kicker`]'s thread (see [`Kicker::drive`]).
pub(crate) struct Driving<'a> {
    kicker: &'a Kicker,
    /// Registered for the current task: must stay on it (not `Send`).
    _task_bound: PhantomData<*mut ()>,
}

impl Driving<'_> {
    /// Sleeps until kicked, `done` is nonzero, a signal or `timeout`
    /// jiffies passed.  Returns whether the thread's work is pending (the
    /// caller now has to do it); the caller keeps its own clock.
    pub(crate) fn wait(&self, done: &Atomic<u32>, timeout: usize) -> bool {
        let t = c_long::try_from(timeout).unwrap_or(c_long::MAX);
        let mut kicked = false;
        // SAFETY: the record is live (borrowed); `done` is a valid `u32`
        // the C side only reads (once, atomically); `kicked` is writable.
        unsafe {
            zk_thread_drive_wait(
                self.kicker.raw.as_ptr(),
                done.as_ptr().cast_const(),
                t,
                &mut kicked,
            )
        };
        kicked
    }
}

impl Drop for Driving<'_> {
    fn drop(&mut self) {
        // SAFETY: the current task registered in `Kicker::drive`; a kick
        // it did not take goes to the thread.
        unsafe { zk_thread_drive_end(self.kicker.raw.as_ptr()) }
    }
}

/// Stack a task must have left to run a treenet engine pass while it waits
/// (`treenet_drive_until`: the engine thread has a whole stack to itself; a
/// deep caller, or any caller on a small-stack architecture, waits for it).
pub(crate) const DRIVE_STACK_MIN: usize = 10 * 1024;

/// Bytes of kernel stack left below the caller.
pub(crate) fn stack_left() -> usize {
    // SAFETY: no preconditions; reads the current task's stack bounds.
    unsafe { zk_stack_left() }
}

impl Drop for Kicker {
    fn drop(&mut self) {
        // SAFETY: the record came from `zk_thread_alloc`; no thread was
        // started on it (or it has been stopped), nothing else uses it now.
        unsafe { zk_thread_stop_free(self.raw.as_ptr()) }
    }
}

/// What a thread runs.
pub(crate) trait ThreadBody: Send + Sync + 'static {
    /// The thread's kicker (part of the body's state).
    fn kicker(&self) -> &Kicker;
    /// The thread's main loop: return when `ctx.should_stop()`.
    fn run(&self, ctx: &ThreadCtx<'_>);
}

/// Services available inside a running thread.
pub(crate) struct ThreadCtx<'a> {
    kicker: &'a Kicker,
}

impl ThreadCtx<'_> {
    /// Whether the owner asked the thread to stop.
    pub(crate) fn should_stop(&self) -> bool {
        // SAFETY: called from the kthread itself.
        unsafe { zk_thread_should_stop() }
    }

    /// Sleeps until kicked, asked to stop, or `timeout` jiffies passed.
    pub(crate) fn wait(&self, timeout: usize) {
        let t = c_long::try_from(timeout).unwrap_or(c_long::MAX);
        // SAFETY: called from the kthread the record belongs to.
        unsafe { zk_thread_wait(self.kicker.as_raw(), t) }
    }
}

/// A running kernel thread; stopped and joined on drop.
pub(crate) struct KThread<T: ThreadBody> {
    body: Arc<T>,
}

/// The thread function the C shim runs.
///
/// # Safety
///
/// `data` must be the pointer of an `Arc<T>` kept alive until the thread
/// has stopped.
unsafe extern "C" fn trampoline<T: ThreadBody>(data: *mut c_void) -> c_int {
    // SAFETY: `data` is the `Arc<T>` pointer given to `zk_thread_start`;
    // `KThread` keeps that reference alive until the thread has stopped.
    let body = unsafe { &*data.cast::<T>() };
    body.run(&ThreadCtx {
        kicker: body.kicker(),
    });
    0
}

impl<T: ThreadBody> KThread<T> {
    /// Starts a thread named `name` running `body.run()`.
    pub(crate) fn spawn(name: &CStr, body: Arc<T>) -> Result<Self> {
        let data = Arc::as_ptr(&body).cast_mut().cast::<c_void>();
        // SAFETY: the record is live; `data` stays valid while `self` (which
        // holds `body`) lives, and `drop` stops the thread first.
        let err = unsafe {
            zk_thread_start(
                body.kicker().as_raw(),
                trampoline::<T>,
                data,
                name.as_char_ptr(),
            )
        };
        if err != 0 {
            return Err(Error::from_errno(err));
        }
        Ok(Self { body })
    }

    /// The thread's state.
    pub(crate) fn body(&self) -> &Arc<T> {
        &self.body
    }
}

impl<T: ThreadBody> Drop for KThread<T> {
    fn drop(&mut self) {
        // Stops the thread; the record itself is freed with the Kicker.
        // SAFETY: kthread_stop on our started thread; it returns after
        // `run` returned, so `body` is no longer used by the thread.
        unsafe { zk_thread_stop(self.body.kicker().as_raw()) }
    }
}
