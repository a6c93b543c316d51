// SPDX-License-Identifier: GPL-2.0

//! The plug-in ABI's types, the Rust mirror of `drivers/zoid/zoid_plugin.h`
//! (shared by zoid.ko and plug-in modules written in Rust, which include
//! this file by path).

use kernel::ffi::{c_char, c_int, c_void};

/// The ABI version a plug-in declares in [`ZoidPluginOps::abi`]: 2 adds
/// [`ZoidFunction::flags`], [`ZoidCaller::zoid_private`] and deferred
/// replies; a plug-in built for 1 still registers.
pub(crate) const ZOID_PLUGIN_ABI: u32 = 2;

/// [`ZoidFunction::flags`]: the function's reply is `ret` alone, so
/// `zoid_defer()` may take it over.
pub(crate) const ZOID_FN_DEFERRABLE: u16 = 0x1;

/// `struct zoid_deferred`: a deferred call's reply, opaque to plug-ins.
#[repr(C)]
pub(crate) struct ZoidDeferred {
    _opaque: [u8; 0],
}

/// `struct zoid_caller`: who called.
#[repr(C)]
pub(crate) struct ZoidCaller {
    /// The CN's node id.
    pub(crate) node: u16,
    /// Entries at `groups`.
    pub(crate) ngroups: u16,
    /// Process id on the CN.
    pub(crate) pid: u32,
    /// The caller's uid, as the CN sent it.
    pub(crate) uid: u32,
    /// The caller's gid, as the CN sent it.
    pub(crate) gid: u32,
    /// The call's tag.
    pub(crate) tag: u32,
    /// Supplementary groups (`ngroups` of them).
    pub(crate) groups: *const u32,
    /// zoid's, for `zoid_defer()` (ABI 2).
    pub(crate) zoid_private: *const c_void,
}

/// `struct zoid_function`: one function's id and name.
#[repr(C)]
pub(crate) struct ZoidFunction {
    /// Function id.
    pub(crate) id: u16,
    /// `ZOID_FN_*` bits (ABI 2; read as 0 from a plug-in built for 1).
    pub(crate) flags: u16,
    /// NUL-terminated name.
    pub(crate) name: *const c_char,
}

/// `dispatch` of [`ZoidPluginOps`].
pub(crate) type DispatchFn = unsafe extern "C" fn(
    ctx: *mut c_void,
    caller: *const ZoidCaller,
    function: u16,
    args: *const u8,
    args_len: usize,
    reply: *mut u8,
    reply_cap: usize,
    reply_len: *mut usize,
    reply_errno: *mut c_int,
) -> c_int;

/// `struct zoid_plugin_ops`: a plug-in registered by another module.
#[repr(C)]
pub(crate) struct ZoidPluginOps {
    /// [`ZOID_PLUGIN_ABI`].
    pub(crate) abi: u32,
    /// Plug-in id.
    pub(crate) id: u16,
    /// Entries at `functions`.
    pub(crate) nfunctions: u16,
    /// NUL-terminated name.
    pub(crate) name: *const c_char,
    /// The functions.
    pub(crate) functions: *const ZoidFunction,
    /// Runs one call.
    pub(crate) dispatch: Option<DispatchFn>,
    /// A CN process ended (optional).
    pub(crate) process_exit: Option<unsafe extern "C" fn(ctx: *mut c_void, node: u16, pid: u32)>,
    /// A CN went away (optional).
    pub(crate) node_gone: Option<unsafe extern "C" fn(ctx: *mut c_void, node: u16)>,
}
