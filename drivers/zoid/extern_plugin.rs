// SPDX-License-Identifier: GPL-2.0

//! Plug-ins from other modules: `zoid_plugin_register()` and
//! `zoid_plugin_unregister()` (the C ABI of `zoid_plugin.h`).
//!
//! An [`ExternPlugin`] copies the plug-in's name and function table, and
//! calls its callbacks only between [`ExternPlugin::enter`] and
//! [`ExternPlugin::leave`].  Unregistering removes it from the registry,
//! marks it gone and waits until no call runs in it: the plug-in's module
//! may then unload, and calls still queued for it fail with `ENOSYS`.

use crate::plugin::{Caller, Deferred, Plugin, Registry};
use crate::plugin_abi::{
    ZoidCaller, ZoidDeferred, ZoidPluginOps, ZOID_FN_DEFERRABLE, ZOID_PLUGIN_ABI,
};
use crate::zoid_proto::zoid::plugin::{DispatchError, Reply};
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::sync::{Arc, CondVar, Mutex};

/// Longest plug-in or function name.
const MAX_NAME: usize = 64;

kernel::sync::global_lock! {
    // SAFETY: initialised in the module initialiser before any use.
    unsafe(uninit) static REGISTRY: Mutex<Option<Arc<Registry>>> = None;
}

/// Initialises the registry slot; called once, first thing in module init.
pub(crate) fn init_slot() {
    // SAFETY: called once, before any other use of `REGISTRY`.
    unsafe { REGISTRY.init() };
}

/// Publishes (or, with `None`, withdraws) the registry the C ABI acts on.
pub(crate) fn publish(r: Option<Arc<Registry>>) {
    if r.is_none() {
        // Statics are never dropped: free the list's buffer before zoid
        // unloads (kmemleak saw it left behind).
        *EXTERNS.lock() = KVec::new();
    }
    *REGISTRY.lock() = r;
}

/// Calls running in the plug-in and whether it is gone.
struct Use {
    active: u32,
    gone: bool,
}

/// A plug-in registered by another module.
#[pin_data]
pub(crate) struct ExternPlugin {
    id: u16,
    name: KVec<u8>,
    /// Id, name and `ZOID_FN_*` flags of each function.
    functions: KVec<(u16, KVec<u8>, u16)>,
    ops: *const ZoidPluginOps,
    ctx: *mut c_void,
    #[pin]
    state: Mutex<Use>,
    #[pin]
    idle: CondVar,
}

// SAFETY: `ops` and `ctx` belong to the plug-in, which the ABI requires to
// accept calls from any thread until it unregisters; they are used only
// between `enter` and `leave`, never after `close` returned.
unsafe impl Send for ExternPlugin {}
// SAFETY: as above.
unsafe impl Sync for ExternPlugin {}

/// A copy of a NUL-terminated name: at most [`MAX_NAME`] bytes, not
/// empty, valid UTF-8 without white space.
///
/// # Safety
///
/// `p` is null or a valid NUL-terminated string.
unsafe fn copy_name(p: *const kernel::ffi::c_char) -> Result<KVec<u8>> {
    if p.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: the caller guarantees a NUL-terminated string.
    let s = unsafe { CStr::from_char_ptr(p) }.to_bytes();
    if s.is_empty()
        || s.len() > MAX_NAME
        || core::str::from_utf8(s).is_err()
        || s.iter().any(|c| c.is_ascii_whitespace())
    {
        return Err(EINVAL);
    }
    let mut v = KVec::with_capacity(s.len(), GFP_KERNEL)?;
    v.extend_from_slice(s, GFP_KERNEL)?;
    Ok(v)
}

impl ExternPlugin {
    /// Checks and copies what `ops` declares.
    ///
    /// # Safety
    ///
    /// `ops` points to a `zoid_plugin_ops` whose pointers are valid, and
    /// `ops` and `ctx` stay valid until [`ExternPlugin::close`] returns.
    unsafe fn new(ops: *const ZoidPluginOps, ctx: *mut c_void) -> Result<Arc<Self>> {
        // SAFETY: the caller guarantees `ops` is valid.
        let o = unsafe { &*ops };
        if !(1..=ZOID_PLUGIN_ABI).contains(&o.abi) || o.dispatch.is_none() {
            return Err(EINVAL);
        }
        // SAFETY: `o.name` is a valid string (caller).
        let name = unsafe { copy_name(o.name) }?;
        let mut functions = KVec::with_capacity(usize::from(o.nfunctions), GFP_KERNEL)?;
        for i in 0..usize::from(o.nfunctions) {
            // SAFETY: `functions` holds `nfunctions` entries (caller).
            let f = unsafe { &*o.functions.add(i) };
            // SAFETY: as above; its name is a valid string.
            let fname = unsafe { copy_name(f.name) }?;
            // (ABI 1 had padding where the flags are.)
            let flags = if o.abi >= 2 { f.flags } else { 0 };
            functions.push((f.id, fname, flags), GFP_KERNEL)?;
        }
        Arc::pin_init(
            pin_init!(Self {
                id: o.id,
                name,
                functions,
                ops,
                ctx,
                state <- kernel::new_mutex!(Use { active: 0, gone: false }, "zoid::extern"),
                idle <- kernel::new_condvar!("zoid::extern_idle"),
            }),
            GFP_KERNEL,
        )
    }

    /// Counts a call into the plug-in; `false` once it is gone.
    fn enter(&self) -> bool {
        let mut s = self.state.lock();
        if s.gone {
            return false;
        }
        s.active += 1;
        true
    }

    fn leave(&self) {
        let mut s = self.state.lock();
        s.active -= 1;
        if s.active == 0 {
            self.idle.notify_all();
        }
    }

    /// Marks the plug-in gone and waits until no call runs in it.
    fn close(&self) {
        let mut s = self.state.lock();
        s.gone = true;
        while s.active != 0 {
            self.idle.wait(&mut s);
        }
    }

    fn ops(&self) -> &ZoidPluginOps {
        // SAFETY: valid until `close` returned (the registration contract);
        // called only between `enter` and `leave`.
        unsafe { &*self.ops }
    }
}

impl Plugin for ExternPlugin {
    fn id(&self) -> u16 {
        self.id
    }

    fn name(&self) -> &str {
        // Checked UTF-8 at registration.
        core::str::from_utf8(&self.name).unwrap_or("?")
    }

    fn for_each_function(&self, f: &mut dyn FnMut(u16, &str) -> Result) -> Result {
        for (id, name, _) in self.functions.iter() {
            f(*id, core::str::from_utf8(name).unwrap_or("?"))?;
        }
        Ok(())
    }

    fn reply_is_ret_only(&self, function: u16) -> bool {
        self.functions
            .iter()
            .any(|(id, _, flags)| *id == function && flags & ZOID_FN_DEFERRABLE != 0)
    }

    fn dispatch(
        &self,
        caller: &Caller,
        function: u16,
        args: &[u8],
        reply: &mut [u8],
    ) -> core::result::Result<Reply, DispatchError> {
        if !self.enter() {
            return Err(DispatchError::UnknownFunction);
        }
        let groups = caller.creds.groups();
        let c = ZoidCaller {
            node: caller.node,
            ngroups: groups.len() as u16,
            pid: caller.creds.pid,
            uid: caller.creds.uid,
            gid: caller.creds.gid,
            tag: caller.tag(),
            groups: groups.as_ptr(),
            zoid_private: core::ptr::from_ref(caller).cast(),
        };
        let (mut len, mut errno): (usize, c_int) = (0, 0);
        let Some(dispatch) = self.ops().dispatch else {
            self.leave();
            return Err(DispatchError::UnknownFunction);
        };
        // SAFETY: the plug-in is registered and counted in; every pointer
        // is valid for the call (`args` and `reply` for their lengths).
        let rc = unsafe {
            dispatch(
                self.ctx,
                &c,
                function,
                args.as_ptr(),
                args.len(),
                reply.as_mut_ptr(),
                reply.len(),
                &mut len,
                &mut errno,
            )
        };
        self.leave();
        match rc {
            0 if errno != 0 => Ok(Reply::error(errno)),
            0 if len <= reply.len() => Ok(Reply::ok(len)),
            0 => Err(DispatchError::Refused(-EIO.to_errno())),
            rc if rc == ENOSYS.to_errno() => Err(DispatchError::UnknownFunction),
            rc if rc == E2BIG.to_errno() => Err(DispatchError::ReplyTooLarge { need: 0 }),
            rc => Err(DispatchError::Refused(-rc)),
        }
    }

    fn process_exit(&self, node: u16, pid: u32) {
        if let Some(f) = self.ops().process_exit.filter(|_| self.enter()) {
            // SAFETY: registered and counted in.
            unsafe { f(self.ctx, node, pid) };
            self.leave();
        }
    }

    fn node_gone(&self, node: u16) {
        if let Some(f) = self.ops().node_gone.filter(|_| self.enter()) {
            // SAFETY: registered and counted in.
            unsafe { f(self.ctx, node) };
            self.leave();
        }
    }
}

kernel::sync::global_lock! {
    // The plug-ins registered through the C ABI.
    // SAFETY: initialised in the module initialiser before any use.
    unsafe(uninit) static EXTERNS: Mutex<KVec<Arc<ExternPlugin>>> = KVec::new();
}

/// Initialises the list of external plug-ins (module init).
pub(crate) fn init_list() {
    // SAFETY: called once, before any other use of `EXTERNS`.
    unsafe { EXTERNS.init() };
}

/// `zoid_plugin_register()`: adds a plug-in from another module; 0 or a
/// negative errno (`EEXIST` for a taken id or name, `EINVAL` for a bad
/// declaration, `ENODEV` while zoid is not up).
///
/// # Safety
///
/// `ops` points to a valid `zoid_plugin_ops`; `ops` and `ctx` stay valid
/// until `zoid_plugin_unregister(ops->id)` returned.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoid_plugin_register(
    ops: *const ZoidPluginOps,
    ctx: *mut c_void,
) -> c_int {
    let r = (|| -> Result {
        if ops.is_null() {
            return Err(EINVAL);
        }
        let registry = REGISTRY.lock().clone().ok_or(ENODEV)?;
        // SAFETY: the caller's guarantees are `new`'s.
        let p = unsafe { ExternPlugin::new(ops, ctx) }?;
        let mut list = EXTERNS.lock();
        list.reserve(1, GFP_KERNEL)?;
        let dynp: Arc<dyn Plugin> = p.clone();
        registry.register(dynp)?;
        list.push(p, GFP_KERNEL)?;
        Ok(())
    })();
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `zoid_plugin_unregister()`: removes plug-in `id` (registered through
/// the C ABI) and returns once no call runs in it.
#[no_mangle]
pub(crate) extern "C" fn zoid_plugin_unregister(id: u16) {
    let p = {
        let mut list = EXTERNS.lock();
        match list.iter().position(|p| p.id == id) {
            Some(i) => list.remove(i).ok(),
            None => None,
        }
    };
    let Some(p) = p else {
        pr_warn!("unregister of plug-in {id}, which is not an external plug-in\n");
        return;
    };
    if let Some(registry) = REGISTRY.lock().clone() {
        registry.unregister(id);
    }
    p.close();
    pr_info!("plug-in {} (id {id}) unregistered\n", p.name());
}

/// `zoid_defer()`: takes the reply of the call `caller` describes over (see
/// `zoid_plugin.h`); 0 with `*out` set, or a negative errno.
///
/// # Safety
///
/// `caller` is the `zoid_caller` zoid passed to a `dispatch` that has not
/// returned yet, and `out` is writable.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoid_defer(
    caller: *const ZoidCaller,
    out: *mut *mut ZoidDeferred,
) -> c_int {
    if caller.is_null() || out.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: a live `zoid_caller` (the caller's guarantee).
    let private = unsafe { (*caller).zoid_private };
    if private.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: `zoid_private` is the `Caller` of a dispatch still running
    // (`ExternPlugin::dispatch` set it; the caller's guarantee).
    let c = unsafe { &*private.cast::<Caller>() };
    // The room first: once deferred, a `Deferred` dropped for want of it
    // would answer ECANCELED while the plug-in is told nothing was.
    let Ok(slot) = KBox::<Deferred>::new_uninit(GFP_KERNEL) else {
        return ENOMEM.to_errno();
    };
    match c.defer() {
        Ok(d) => {
            // SAFETY: `out` is writable (the caller's guarantee).
            unsafe { *out = KBox::into_raw(slot.write(d)).cast() };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// `zoid_deferred_reply()`: answers a deferred call with `ret`, or with
/// `errno_value` if that is not 0, and frees `d`; 0 or a negative errno.
///
/// # Safety
///
/// `d` came from `zoid_defer()` and is not used again.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoid_deferred_reply(
    d: *mut ZoidDeferred,
    ret: i64,
    errno_value: c_int,
) -> c_int {
    if d.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: made by `KBox::into_raw` in `zoid_defer`, given back once.
    let d = unsafe { KBox::from_raw(d.cast::<Deferred>()) };
    let result = if errno_value != 0 {
        // A positive errno, whichever sign it came with.
        Err(errno_value.saturating_abs())
    } else {
        Ok(ret)
    };
    match KBox::into_inner(d).reply(result) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}
