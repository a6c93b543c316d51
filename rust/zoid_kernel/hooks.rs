// SPDX-License-Identifier: GPL-2.0

//! ssi hook points, from Rust: [`ssi_hook!`] at a call site, [`Hooks`] for
//! the one handler (ssi).
//!
//! Each hook point has a static key defined in treenet's C shim
//! (`shim/zoid_hooks.{h,c}`, which also has the C `zoid_hook()` macro).  A
//! call site costs a jump-label nop while its hook is off, and nothing at
//! all when the suite is built with `ZOID_HOOKS=n` (`--cfg zoid_no_hooks`).
//!
//! ```ignore
//! ssi_hook!(zoid_hook_zoid_dispatch, Hook::ZoidDispatch, a, b);
//! ```

use kernel::bindings;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;

/// A hook point's static key (`struct zoid_hook_key`).
#[repr(C)]
pub(crate) struct HookKey {
    /// The key `static_branch_unlikely!` reads.
    pub(crate) key: bindings::static_key_false,
}

/// The hook points, numbered as `enum zoid_hook_id` in `zoid_hooks.h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Hook {
    /// A peer went up or down (a: node, b: 1 up / 0 down).
    TreenetPeer = 0,
    /// The ION dispatches a call (a: plug-in << 16 | function, b: node).
    ZoidDispatch = 1,
    /// zoidfs opens a file (a: inode number, b: open flags).
    ZoidfsOpen = 2,
    /// A zoidfs file descriptor is closed (a: inode number).
    ZoidfsClose = 3,
    /// zoidfs reads a page (a: inode number, b: page index).
    ZoidfsReadFolio = 4,
    /// zoidfs writes pages back (a: inode number, b: pages).
    ZoidfsWriteback = 5,
}

impl Hook {
    /// Every hook point, in order.
    pub(crate) const ALL: [Hook; 6] = [
        Hook::TreenetPeer,
        Hook::ZoidDispatch,
        Hook::ZoidfsOpen,
        Hook::ZoidfsClose,
        Hook::ZoidfsReadFolio,
        Hook::ZoidfsWriteback,
    ];

    /// The hook's name (its key is `zoid_hook_<name>`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Hook::TreenetPeer => "treenet_peer",
            Hook::ZoidDispatch => "zoid_dispatch",
            Hook::ZoidfsOpen => "zoidfs_open",
            Hook::ZoidfsClose => "zoidfs_close",
            Hook::ZoidfsReadFolio => "zoidfs_read_folio",
            Hook::ZoidfsWriteback => "zoidfs_writeback",
        }
    }

    /// The hook named `name`.
    pub(crate) fn from_name(name: &[u8]) -> Option<Hook> {
        Self::ALL.into_iter().find(|h| h.name().as_bytes() == name)
    }
}

extern "C" {
    pub(crate) static zoid_hook_treenet_peer: HookKey;
    pub(crate) static zoid_hook_zoid_dispatch: HookKey;
    fn zoid_hook_call(hook: u32, a: u64, b: u64);
    fn zoid_hooks_register(
        f: unsafe extern "C" fn(*mut c_void, u32, u64, u64),
        ctx: *mut c_void,
    ) -> c_int;
    fn zoid_hooks_unregister();
    fn zoid_hook_enable(hook: u32, on: bool) -> c_int;
}

/// Calls the handler of `hook` (what [`ssi_hook!`] does once the key is on).
#[doc(hidden)]
pub(crate) fn call(hook: Hook, a: u64, b: u64) {
    // SAFETY: no preconditions; the handler is looked up under RCU.
    unsafe { zoid_hook_call(hook as u32, a, b) }
}

/// Calls hook `$hook` with `$a`, `$b` if its key `$key` (the static
/// `zoid_hook_<name>` of [`crate::zoid_kernel::hooks`]) is on.
#[allow(unused_macros)]
macro_rules! ssi_hook {
    ($key:ident, $hook:expr, $a:expr, $b:expr) => {{
        #[cfg(not(zoid_no_hooks))]
        {
            // SAFETY: `$key` is a static key defined by C (treenet's shim),
            // live as long as treenet, which this module depends on.
            let on = unsafe {
                kernel::jump_label::static_branch_unlikely!(
                    $crate::zoid_kernel::hooks::$key,
                    $crate::zoid_kernel::hooks::HookKey,
                    key
                )
            };
            if on {
                $crate::zoid_kernel::hooks::call($hook, $a, $b);
            }
        }
        // Compiled out: the arguments are named (no unused warnings at the
        // call site) but never evaluated.
        #[cfg(zoid_no_hooks)]
        {
            let _ = || ($hook, $a, $b);
        }
    }};
}
#[allow(unused_imports)]
pub(crate) use ssi_hook;

/// What a hook handler does with an event: `(hook, a, b)`.  Runs under
/// RCU on the hooked path: it must not sleep.
pub(crate) trait HookHandler: Send + Sync + 'static {
    /// Hook `hook` fired with `a`, `b`.
    fn event(&self, hook: Hook, a: u64, b: u64);
}

/// The registered handler; every hook off and the handler gone on drop.
pub(crate) struct Hooks<H: HookHandler> {
    handler: kernel::sync::Arc<H>,
}

/// # Safety
///
/// `ctx` must be the handler pointer registered by [`Hooks::register`].
unsafe extern "C" fn hook_trampoline<H: HookHandler>(ctx: *mut c_void, hook: u32, a: u64, b: u64) {
    // SAFETY: `ctx` is the `Arc<H>` pointer of a live registration
    // (unregistering waits for running handlers).
    let h = unsafe { &*ctx.cast_const().cast::<H>() };
    if let Some(hook) = Hook::ALL.get(hook as usize) {
        h.event(*hook, a, b);
    }
}

impl<H: HookHandler> Hooks<H> {
    /// Registers `handler` (`EBUSY` if another is); every hook starts off.
    pub(crate) fn register(handler: kernel::sync::Arc<H>) -> Result<Self> {
        let ctx = kernel::sync::Arc::as_ptr(&handler)
            .cast_mut()
            .cast::<c_void>();
        // SAFETY: `ctx` stays valid until `drop` unregistered (we hold the
        // Arc), and the trampoline is `H`'s.
        let rc = unsafe { zoid_hooks_register(hook_trampoline::<H>, ctx) };
        if rc < 0 {
            return Err(Error::from_errno(rc));
        }
        Ok(Self { handler })
    }

    /// Turns `hook` on or off.
    pub(crate) fn enable(&self, hook: Hook, on: bool) -> Result {
        // SAFETY: no preconditions.
        let rc = unsafe { zoid_hook_enable(hook as u32, on) };
        if rc < 0 {
            return Err(Error::from_errno(rc));
        }
        Ok(())
    }

    /// The handler.
    pub(crate) fn handler(&self) -> &kernel::sync::Arc<H> {
        &self.handler
    }
}

impl<H: HookHandler> Drop for Hooks<H> {
    fn drop(&mut self) {
        // SAFETY: no preconditions; returns once the handler no longer runs.
        unsafe { zoid_hooks_unregister() }
    }
}
