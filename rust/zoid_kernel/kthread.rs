// SPDX-License-Identifier: GPL-2.0

//! Kernel threads that sleep until kicked (C side: `shim/kthread.c`).
//!
//! A [`Kicker`] is created first, so the state the thread will run on can
//! hold it (and hand it to interrupt-side producers such as
//! [`super::netlink::NetLink`]); [`KThread::spawn`] then starts the thread.
//! Dropping the [`KThread`] stops the thread and waits for it.

use core::ptr::NonNull;
use kernel::ffi::{c_char, c_int, c_long, c_void};
use kernel::{prelude::*, sync::Arc};

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

    /// Wakes the thread (no-op before it started).
    pub(crate) fn kick(&self) {
        // SAFETY: `raw` is a live record (freed only when `self` is
        // dropped, after the thread stopped).
        unsafe { zk_thread_kick(self.raw.as_ptr()) }
    }

    /// The raw record, for C producers (`NetLink`) that kick it.
    pub(crate) fn as_raw(&self) -> *mut RawThread {
        self.raw.as_ptr()
    }
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
