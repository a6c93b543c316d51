// SPDX-License-Identifier: GPL-2.0

//! A caller's "give up" flag: a C `atomic_t` owned by the caller.
//!
//! zoidfs keeps one per mount and sets it on `umount -f`; zoid's client
//! (its calls) and ssi's coherence (its holds) poll it while they wait, so
//! that nothing of a forcibly unmounted mount waits for a dead peer.

use core::ptr::NonNull;
use kernel::ffi::c_void;
use kernel::sync::atomic::{atomic_load, Relaxed};

/// A caller's flag (a C `atomic_t`) that makes its waits give up once it
/// is nonzero.
#[derive(Clone, Copy)]
pub(crate) struct AbortFlag(NonNull<i32>);

// SAFETY: the flag is only read, atomically (`atomic_load`), from any
// thread; its owner keeps it alive while waits that use it may run (the
// contract of `AbortFlag::new`).
unsafe impl Send for AbortFlag {}
// SAFETY: as for `Send`: shared access is atomic reads only.
unsafe impl Sync for AbortFlag {}

impl AbortFlag {
    /// The flag at `ptr` (a C `atomic_t`), or `None` for a null pointer.
    ///
    /// # Safety
    ///
    /// `ptr` is null or points to an `atomic_t` that is only written
    /// atomically and stays valid as long as this flag (or a copy) may be
    /// read: for zoid's calls, until every call given it has been waited
    /// for or dropped; for ssi's holds, until the client detaches.
    pub(crate) unsafe fn new(ptr: *const c_void) -> Option<Self> {
        NonNull::new(ptr.cast_mut().cast::<i32>()).map(Self)
    }

    /// Whether the owner asked its waits to give up.
    pub(crate) fn is_set(&self) -> bool {
        // SAFETY: `self.0` is valid, aligned and written only atomically
        // (`AbortFlag::new`'s contract).
        unsafe { atomic_load(self.0.as_ptr(), Relaxed) != 0 }
    }
}
