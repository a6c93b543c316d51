// SPDX-License-Identifier: GPL-2.0

//! An owner lock: a lock a task may sleep under and that a softirq may
//! take without waiting, in the spirit of the socket lock (`lock_sock`,
//! `bh_lock_sock`) with a mutex's fast path, as a
//! [`kernel::sync::lock::Backend`] (C side: `shim/ownlock.c`).
//!
//! [`OwnLock::lock`] takes it (one compare-and-exchange when it is free,
//! else the task sleeps until it is let go).  The task holding it may
//! sleep, allocate with `GFP_KERNEL` and wait on a
//! [`kernel::sync::CondVar`], as under a [`kernel::sync::Mutex`].
//!
//! Code that cannot sleep (a softirq, a busy-polling task: bottom halves
//! disabled) calls [`OwnLock::try_lock`] instead.  There it never waits:
//! it gets `None` while the lock is held, or else a guard for a section
//! that must not sleep.  Called with bottom halves enabled, `try_lock`
//! tries to take it as `lock` would, like a mutex's.
//!
//! So one lock serialises a thread that sleeps while it holds it and a
//! softirq that must not wait, and the softirq defers its work whenever
//! the lock is held.

use core::mem::offset_of;
use kernel::bindings;
use kernel::ffi::{c_char, c_int, c_void};
use kernel::sync::lock::{Backend, Guard, Lock};

/// The lock's state, laid out as the shim's `struct zk_ownlock`
/// ([`layout_matches`] checks that).
#[repr(C)]
pub(crate) struct OwnLockState {
    state: bindings::atomic_t,
    wq: bindings::wait_queue_head,
    dep_map: bindings::lockdep_map,
}

/// The shim's `struct zk_ownlock`, as its functions take it (the Rust
/// struct may hold a zero-sized `lockdep_map`, which is not FFI-safe).
#[repr(C)]
struct RawOwnLock {
    _private: [u8; 0],
}

fn raw(ptr: *mut OwnLockState) -> *mut RawOwnLock {
    ptr.cast()
}

extern "C" {
    fn zk_ownlock_layout(v: *mut usize);
    fn zk_ownlock_init(l: *mut RawOwnLock, name: *const c_char, key: *mut c_void);
    fn zk_ownlock_lock(l: *mut RawOwnLock);
    fn zk_ownlock_unlock(l: *mut RawOwnLock);
    fn zk_ownlock_trylock(l: *mut RawOwnLock) -> c_int;
    fn zk_ownlock_unlock_atomic(l: *mut RawOwnLock);
    fn zk_ownlock_relock_atomic(l: *mut RawOwnLock);
    fn zk_ownlock_assert_held(l: *mut RawOwnLock);
    fn zk_local_bh_disable();
    fn zk_local_bh_enable();
}

/// Whether [`OwnLockState`] has the C struct's size and field offsets.
/// A module checks it once at load, before it creates a lock.
pub(crate) fn layout_matches() -> bool {
    let mut v = [0usize; 3];
    // SAFETY: the shim writes three `size_t`s to `v`, which has room for them.
    unsafe { zk_ownlock_layout(v.as_mut_ptr()) };
    v == [
        core::mem::size_of::<OwnLockState>(),
        offset_of!(OwnLockState, wq),
        offset_of!(OwnLockState, dep_map),
    ]
}

/// How a guard holds the lock.
pub(crate) enum OwnGuard {
    /// A task holds the lock (it may sleep).
    Owner,
    /// Taken with bottom halves disabled (no sleeping).
    Atomic,
}

/// The [`Backend`] of an [`OwnLock`].
pub(crate) struct OwnLockBackend;

// SAFETY: `lock` and a successful `try_lock` set the state's HELD bit by a
// compare-and-exchange (with acquire ordering) from a state without it,
// and `unlock` clears it (with release ordering): one holder at a time,
// whatever its kind.  `relock` takes the lock the way the guard state says
// it was taken.
unsafe impl Backend for OwnLockBackend {
    type State = OwnLockState;
    type GuardState = OwnGuard;

    unsafe fn init(ptr: *mut Self::State, name: *const c_char, key: *mut bindings::lock_class_key) {
        // SAFETY: `ptr` is valid for writes, `name` and `key` stay valid
        // (the caller's contract).
        unsafe { zk_ownlock_init(raw(ptr), name, key.cast()) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: initialised (the caller's contract); this may sleep,
        // which `Lock::lock`'s callers accept as for a mutex.
        unsafe { zk_ownlock_lock(raw(ptr)) };
        OwnGuard::Owner
    }

    unsafe fn try_lock(ptr: *mut Self::State) -> Option<Self::GuardState> {
        // SAFETY: initialised (the caller's contract).
        match unsafe { zk_ownlock_trylock(raw(ptr)) } {
            1 => Some(OwnGuard::Owner),
            2 => Some(OwnGuard::Atomic),
            _ => None,
        }
    }

    unsafe fn unlock(ptr: *mut Self::State, guard_state: &Self::GuardState) {
        match guard_state {
            // SAFETY: the current task holds the lock (the caller's contract).
            OwnGuard::Owner => unsafe { zk_ownlock_unlock(raw(ptr)) },
            // SAFETY: the caller holds it, taken by `try_lock` with bottom
            // halves disabled.
            OwnGuard::Atomic => unsafe { zk_ownlock_unlock_atomic(raw(ptr)) },
        }
    }

    unsafe fn relock(ptr: *mut Self::State, guard_state: &mut Self::GuardState) {
        match guard_state {
            // SAFETY: initialised; it was owned and given up (the caller's contract).
            OwnGuard::Owner => unsafe { zk_ownlock_lock(raw(ptr)) },
            // SAFETY: as above; the shim warns (no such holder may wait).
            OwnGuard::Atomic => unsafe { zk_ownlock_relock_atomic(raw(ptr)) },
        }
    }

    unsafe fn assert_is_held(ptr: *mut Self::State) {
        // SAFETY: initialised (the caller's contract).
        unsafe { zk_ownlock_assert_held(raw(ptr)) }
    }
}

/// A lock that a sleeping task may own and that a softirq may take
/// without waiting (see the module's documentation).
pub(crate) type OwnLock<T> = Lock<T, OwnLockBackend>;

/// A guard of an [`OwnLock`].
pub(crate) type OwnLockGuard<'a, T> = Guard<'a, T, OwnLockBackend>;

/// Bottom halves disabled on this CPU while it lives, as in a softirq
/// (tests of code that runs there; `local_bh_disable`).
pub(crate) struct BhDisabled {
    /// Bottom halves are re-enabled on the CPU that disabled them.
    _not_send: core::marker::PhantomData<*mut ()>,
}

impl BhDisabled {
    /// Disables bottom halves until the value is dropped.
    pub(crate) fn new() -> Self {
        // SAFETY: paired with the enable in `drop`, on the same CPU (the
        // value is not `Send`, and with bottom halves off the task stays
        // on its CPU).
        unsafe { zk_local_bh_disable() };
        Self {
            _not_send: core::marker::PhantomData,
        }
    }
}

impl Drop for BhDisabled {
    fn drop(&mut self) {
        // SAFETY: `new` disabled bottom halves on this CPU.
        unsafe { zk_local_bh_enable() };
    }
}

/// Creates an [`OwnLock`] initialiser named `$name`, with a lock class of
/// its own.
#[macro_export]
macro_rules! new_ownlock {
    ($inner:expr, $name:literal $(,)?) => {
        kernel::sync::lock::Lock::<_, $crate::zoid_kernel::ownlock::OwnLockBackend>::new(
            $inner,
            kernel::c_str!($name),
            kernel::static_lock_class!(),
        )
    };
}
