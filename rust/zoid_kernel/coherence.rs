// SPDX-License-Identifier: GPL-2.0

//! Page coherence for modules loaded before ssi: the provider's side of
//! `shim/zoid_coherence.h`.
//!
//! zoidfs caches file pages only while ssi says this node may: each page
//! has a container object, held to read or to write around every access.
//! ssi implements [`CoherenceProvider`] and registers it with
//! [`Provision::provide`]; zoidfs attaches to a set by name with its
//! callbacks ([`Client`]), which ssi calls when this node's copy of an
//! object arrives, leaves or is sent.

use super::abort::AbortFlag;
use kernel::ffi::{c_char, c_int, c_void};
use kernel::prelude::*;
use kernel::sync::Arc;

/// A client's callback: `(ctx, object)`.
pub(crate) type ObjectFn = Option<unsafe extern "C" fn(*mut c_void, u64)>;

/// `struct zoid_coherence_client`.
#[repr(C)]
#[derive(Clone, Copy)]
struct RawClient {
    ctx: *mut c_void,
    insert: ObjectFn,
    invalidate: ObjectFn,
    export: ObjectFn,
    abort: *const c_void,
}

/// A client's callbacks (zoidfs's), valid until the provider's `detach`
/// for it returns.
pub(crate) struct Client(RawClient);

// SAFETY: the client's contract (zoid_coherence.h): its callbacks may be
// called from any thread, until `detach` returns, and `ctx` stays valid
// that long.
unsafe impl Send for Client {}
// SAFETY: as for `Send`: the callbacks are safe to call concurrently.
unsafe impl Sync for Client {}

impl Client {
    /// A client from its parts (what `zoid_coherence_attach` passes, as
    /// one struct).
    ///
    /// # Safety
    ///
    /// The callbacks are safe to call from any thread with `ctx` and any
    /// object id, until the provider has detached the client; `abort` is
    /// null or an `atomic_t`, written only atomically, valid that long.
    pub(crate) unsafe fn new(
        ctx: *mut c_void,
        insert: ObjectFn,
        invalidate: ObjectFn,
        export: ObjectFn,
        abort: *const c_void,
    ) -> Self {
        Self(RawClient {
            ctx,
            insert,
            invalidate,
            export,
            abort,
        })
    }

    /// The client's give-up flag (`umount -f`), if it has one.  Valid,
    /// like the callbacks, until the provider has detached the client:
    /// the provider reads it only while the client is attached.
    pub(crate) fn abort_flag(&self) -> Option<AbortFlag> {
        // SAFETY: the client's contract (`Client::new`, zoid_coherence.h):
        // null or an atomic `atomic_t` valid until it detaches.
        unsafe { AbortFlag::new(self.0.abort) }
    }

    fn call(&self, f: ObjectFn, object: u64) {
        if let Some(f) = f {
            // SAFETY: the client gave `f` and `ctx` together, valid until
            // it detaches; the provider calls no callback after `detach`.
            unsafe { f(self.0.ctx, object) }
        }
    }

    /// A copy of `object` arrived on this node.
    pub(crate) fn insert(&self, object: u64) {
        self.call(self.0.insert, object);
    }

    /// This node's copy of `object` is going away.
    pub(crate) fn invalidate(&self, object: u64) {
        self.call(self.0.invalidate, object);
    }

    /// `object` is being sent to another node.
    pub(crate) fn export(&self, object: u64) {
        self.call(self.0.export, object);
    }
}

/// What ssi offers its clients.  Every method may sleep.
pub(crate) trait CoherenceProvider: Send + Sync + 'static {
    /// Attaches `client` to the set named `name`; returns the set's id.
    fn attach(&self, name: &[u8], client: Client) -> Result<u32>;
    /// Detaches the set's client: no callback of it runs after this.
    fn detach(&self, set: u32);
    /// Waits until this node holds `object` (to write, or to read).
    fn hold(&self, set: u32, object: u64, write: bool) -> Result;
    /// Ends a [`CoherenceProvider::hold`].
    fn unhold(&self, set: u32, object: u64);
    /// Holds `object` for a page fault (to write, or to read); returns a
    /// token for [`CoherenceProvider::fault_done`].
    fn hold_fault(&self, set: u32, object: u64, write: bool) -> Result<u64>;
    /// The fault ended (its page may still be locked): the hold ends a
    /// little later, from another context.  Takes no lock a callback may
    /// wait behind.
    fn fault_done(&self, set: u32, object: u64, token: u64);
    /// Copies a held object's first `buf.len()` bytes out.
    fn read(&self, set: u32, object: u64, buf: &mut [u8]) -> Result;
    /// Copies `buf` over a held object's first bytes.
    fn write(&self, set: u32, object: u64, buf: &[u8]) -> Result;
}

/// `struct zoid_coherence_ops`.
#[repr(C)]
struct RawOps {
    /// `struct module *` (opaque here: its fields are no FFI types).
    owner: *mut c_void,
    attach: unsafe extern "C" fn(
        *mut c_void,
        *const c_char,
        usize,
        *const RawClient,
        *mut u32,
    ) -> c_int,
    detach: unsafe extern "C" fn(*mut c_void, u32),
    hold: unsafe extern "C" fn(*mut c_void, u32, u64, bool) -> c_int,
    unhold: unsafe extern "C" fn(*mut c_void, u32, u64),
    hold_fault: unsafe extern "C" fn(*mut c_void, u32, u64, bool, *mut u64) -> c_int,
    fault_done: unsafe extern "C" fn(*mut c_void, u32, u64, u64),
    read: unsafe extern "C" fn(*mut c_void, u32, u64, *mut c_void, usize) -> c_int,
    write: unsafe extern "C" fn(*mut c_void, u32, u64, *const c_void, usize) -> c_int,
}

extern "C" {
    fn zoid_coherence_provide(ops: *const RawOps, ctx: *mut c_void) -> c_int;
    fn zoid_coherence_withdraw();
}

/// # Safety
///
/// `ctx` is the `Arc<P>` pointer [`Provision::provide`] registered, alive
/// while registered.
unsafe fn provider<'a, P>(ctx: *mut c_void) -> &'a P {
    // SAFETY: per the function's contract.
    unsafe { &*ctx.cast_const().cast::<P>() }
}

fn errno(r: Result) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// # Safety
///
/// Called by `zoid_coherence.h`'s functions only: `ctx` is the provider
/// [`Provision::provide`] registered, and pointer arguments are valid for
/// the lengths given.
unsafe extern "C" fn attach_trampoline<P: CoherenceProvider>(
    ctx: *mut c_void,
    name: *const c_char,
    len: usize,
    client: *const RawClient,
    set: *mut u32,
) -> c_int {
    if name.is_null() || client.is_null() || set.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: the caller (zoid_coherence_attach) passes `len` readable
    // bytes at `name` and a valid client and out-pointer.
    let (name, raw) = unsafe { (core::slice::from_raw_parts(name.cast::<u8>(), len), *client) };
    // SAFETY: `ctx` is the registered provider (`provider`'s contract).
    match unsafe { provider::<P>(ctx) }.attach(name, Client(raw)) {
        Ok(id) => {
            // SAFETY: `set` is valid for writes (checked non-null above).
            unsafe { *set = id };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// # Safety
///
/// Called by `zoid_coherence.h`'s functions only: `ctx` is the provider
/// [`Provision::provide`] registered, and pointer arguments are valid for
/// the lengths given.
unsafe extern "C" fn detach_trampoline<P: CoherenceProvider>(ctx: *mut c_void, set: u32) {
    // SAFETY: `ctx` is the registered provider.
    unsafe { provider::<P>(ctx) }.detach(set)
}

/// # Safety
///
/// Called by `zoid_coherence.h`'s functions only: `ctx` is the provider
/// [`Provision::provide`] registered, and pointer arguments are valid for
/// the lengths given.
unsafe extern "C" fn hold_trampoline<P: CoherenceProvider>(
    ctx: *mut c_void,
    set: u32,
    object: u64,
    write: bool,
) -> c_int {
    // SAFETY: `ctx` is the registered provider.
    errno(unsafe { provider::<P>(ctx) }.hold(set, object, write))
}

/// # Safety
///
/// Called by `zoid_coherence.h`'s functions only: `ctx` is the provider
/// [`Provision::provide`] registered, and pointer arguments are valid for
/// the lengths given.
unsafe extern "C" fn unhold_trampoline<P: CoherenceProvider>(
    ctx: *mut c_void,
    set: u32,
    object: u64,
) {
    // SAFETY: `ctx` is the registered provider.
    unsafe { provider::<P>(ctx) }.unhold(set, object)
}

/// # Safety
///
/// Called by `zoid_coherence.h`'s functions only: `ctx` is the provider
/// [`Provision::provide`] registered, and pointer arguments are valid for
/// the lengths given.
unsafe extern "C" fn hold_fault_trampoline<P: CoherenceProvider>(
    ctx: *mut c_void,
    set: u32,
    object: u64,
    write: bool,
    token: *mut u64,
) -> c_int {
    if token.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: `ctx` is the registered provider.
    match unsafe { provider::<P>(ctx) }.hold_fault(set, object, write) {
        Ok(t) => {
            // SAFETY: `token` is valid for a write (checked non-null above).
            unsafe { *token = t };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// # Safety
///
/// Called by `zoid_coherence.h`'s functions only: `ctx` is the provider
/// [`Provision::provide`] registered.
unsafe extern "C" fn fault_done_trampoline<P: CoherenceProvider>(
    ctx: *mut c_void,
    set: u32,
    object: u64,
    token: u64,
) {
    // SAFETY: `ctx` is the registered provider.
    unsafe { provider::<P>(ctx) }.fault_done(set, object, token)
}

/// # Safety
///
/// Called by `zoid_coherence.h`'s functions only: `ctx` is the provider
/// [`Provision::provide`] registered, and pointer arguments are valid for
/// the lengths given.
unsafe extern "C" fn read_trampoline<P: CoherenceProvider>(
    ctx: *mut c_void,
    set: u32,
    object: u64,
    buf: *mut c_void,
    len: usize,
) -> c_int {
    if buf.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: the caller passes `len` writable bytes at `buf`.
    let buf = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
    // SAFETY: `ctx` is the registered provider.
    errno(unsafe { provider::<P>(ctx) }.read(set, object, buf))
}

/// # Safety
///
/// Called by `zoid_coherence.h`'s functions only: `ctx` is the provider
/// [`Provision::provide`] registered, and pointer arguments are valid for
/// the lengths given.
unsafe extern "C" fn write_trampoline<P: CoherenceProvider>(
    ctx: *mut c_void,
    set: u32,
    object: u64,
    buf: *const c_void,
    len: usize,
) -> c_int {
    if buf.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: the caller passes `len` readable bytes at `buf`.
    let buf = unsafe { core::slice::from_raw_parts(buf.cast::<u8>(), len) };
    // SAFETY: `ctx` is the registered provider.
    errno(unsafe { provider::<P>(ctx) }.write(set, object, buf))
}

/// The registered provider: withdrawn when dropped.
pub(crate) struct Provision<P: CoherenceProvider> {
    ops: KBox<RawOps>,
    provider: Arc<P>,
}

// SAFETY: the ops table is immutable once built (a module pointer and
// functions); the provider is `Send + Sync`.
unsafe impl<P: CoherenceProvider> Send for Provision<P> {}
// SAFETY: as for `Send`: nothing in it changes after `provide`.
unsafe impl<P: CoherenceProvider> Sync for Provision<P> {}

impl<P: CoherenceProvider> Provision<P> {
    /// Registers `provider` (`EBUSY` if another is).  Clients that attach
    /// hold `module` until they detach.
    pub(crate) fn provide(module: &'static ThisModule, provider: Arc<P>) -> Result<Self> {
        let ops = KBox::new(
            RawOps {
                owner: module.as_ptr().cast::<c_void>(),
                attach: attach_trampoline::<P>,
                detach: detach_trampoline::<P>,
                hold: hold_trampoline::<P>,
                unhold: unhold_trampoline::<P>,
                hold_fault: hold_fault_trampoline::<P>,
                fault_done: fault_done_trampoline::<P>,
                read: read_trampoline::<P>,
                write: write_trampoline::<P>,
            },
            GFP_KERNEL,
        )?;
        let ctx = Arc::as_ptr(&provider).cast_mut().cast::<c_void>();
        // SAFETY: `ops` and the provider behind `ctx` live in the returned
        // value, which withdraws them before it frees them.
        let rc = unsafe { zoid_coherence_provide(&*ops, ctx) };
        if rc < 0 {
            return Err(Error::from_errno(rc));
        }
        Ok(Self { ops, provider })
    }
}

impl<P: CoherenceProvider> Drop for Provision<P> {
    fn drop(&mut self) {
        // SAFETY: registered by `provide`; clients hold the module, so none
        // is attached when the module's exit drops this.
        unsafe { zoid_coherence_withdraw() };
        let _ = (&self.ops, &self.provider);
    }
}
