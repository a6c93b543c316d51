// SPDX-License-Identifier: GPL-2.0

//! The client ABI of `drivers/zoid/zoid_client.h`: other modules on a CN
//! (zoidfs) forward calls through zoid's client with the calling task's
//! credentials.  A reply crosses the boundary as an opaque, boxed
//! [`CallReply`] that the consumer reads and frees.

use crate::client::{Args, CallReply, InFlight, UpcallFn};
use crate::devzoid;
use crate::zoid_kernel::abort::AbortFlag;
use crate::zoid_kernel::cred::Creds;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;

/// `ZOID_CLIENT_ABI`.
const ZOID_CLIENT_ABI: u32 = 5;

/// `zoid_client_abi()`.
#[no_mangle]
pub(crate) extern "C" fn zoid_client_abi() -> u32 {
    ZOID_CLIENT_ABI
}

/// `zoid_client_ion()`: the ION's node id and limits, or a negative errno.
///
/// # Safety
///
/// `max_request` and `max_reply` are each null or valid for one write.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoid_client_ion(
    max_request: *mut u32,
    max_reply: *mut u32,
) -> c_int {
    match devzoid::client().and_then(|c| c.attached()) {
        Ok((ion, limits)) => {
            if !max_request.is_null() {
                // SAFETY: the caller's guarantee.
                unsafe { *max_request = limits.max_request };
            }
            if !max_reply.is_null() {
                // SAFETY: the caller's guarantee.
                unsafe { *max_reply = limits.max_reply };
            }
            c_int::from(ion)
        }
        Err(e) => e.to_errno(),
    }
}

/// `zoid_client_session()`: the current attach to the ION, or 0 while
/// there is none (or zoid is not up).
#[no_mangle]
pub(crate) extern "C" fn zoid_client_session() -> u32 {
    devzoid::client().map_or(0, |c| c.session())
}

/// `zoid_client_set_upcall()`: sets or (with a null `handler`) removes
/// plug-in `plugin`'s upcall handler.
#[no_mangle]
pub(crate) extern "C" fn zoid_client_set_upcall(plugin: u16, handler: Option<UpcallFn>) -> c_int {
    match devzoid::client().and_then(|c| c.set_upcall(plugin, handler)) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// The mode argument of the ABI: `None` for zoid's `hard` knob.
fn hard_mode(mode: c_int) -> Result<Option<bool>> {
    match mode {
        0 => Ok(None),
        1 => Ok(Some(false)),
        2 => Ok(Some(true)),
        _ => Err(EINVAL),
    }
}

/// The arguments C passed in.
///
/// # Safety
///
/// `args` is valid for `args_len` reads (or `args_len` is 0).
unsafe fn args_in<'a>(args: *const c_void, args_len: usize) -> Result<&'a [u8]> {
    if args_len == 0 {
        Ok(&[])
    } else if args.is_null() {
        Err(EINVAL)
    } else {
        // SAFETY: the caller's guarantee.
        Ok(unsafe { core::slice::from_raw_parts(args.cast::<u8>(), args_len) })
    }
}

/// Hands a call's outcome to C: 0 with `*reply` set, the ION's positive
/// errno, or a negative errno.
///
/// # Safety
///
/// `reply` is valid for one write.
unsafe fn reply_out(r: Result<CallReply>, reply: *mut *mut c_void) -> c_int {
    match r {
        Ok(r) if r.errno != 0 => r.errno,
        Ok(r) => match KBox::new(r, GFP_KERNEL) {
            Ok(b) => {
                // SAFETY: the caller's guarantee.
                unsafe { *reply = KBox::into_raw(b).cast() };
                0
            }
            Err(_) => ENOMEM.to_errno(),
        },
        Err(e) => e.to_errno(),
    }
}

/// `zoid_call()`: 0 with `*reply` set, a positive errno from the ION, or a
/// negative errno.
///
/// # Safety
///
/// `args` is valid for `args_len` reads (or `args_len` is 0); `reply` is
/// valid for one write; `abort` is null or an `atomic_t` valid until the
/// call returns.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoid_call(
    plugin: u16,
    function: u16,
    args: *const c_void,
    args_len: usize,
    timeout_ms: u32,
    mode: c_int,
    abort: *const c_void,
    reply: *mut *mut c_void,
) -> c_int {
    if reply.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: the caller's guarantee: `abort` outlives the call.
    let abort = unsafe { AbortFlag::new(abort) };
    // SAFETY: the caller's guarantee.
    let r = unsafe { args_in(args, args_len) }.and_then(|args| {
        let hard = hard_mode(mode)?;
        devzoid::client()?.call(
            &Creds::current(),
            plugin,
            function,
            0,
            Args::Kernel(args),
            timeout_ms,
            hard,
            abort,
        )
    });
    // SAFETY: `reply` is valid for one write (the caller's guarantee).
    unsafe { reply_out(r, reply) }
}

/// `zoid_call_start()`: 0 with `*call` set, or a negative errno.
///
/// # Safety
///
/// `args` is valid for `args_len` reads (or `args_len` is 0); `call` is
/// valid for one write; `abort` is null or an `atomic_t` valid until the
/// call is passed to [`zoid_call_wait`].
#[no_mangle]
pub(crate) unsafe extern "C" fn zoid_call_start(
    plugin: u16,
    function: u16,
    args: *const c_void,
    args_len: usize,
    timeout_ms: u32,
    mode: c_int,
    abort: *const c_void,
    call: *mut *mut c_void,
) -> c_int {
    if call.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: the caller's guarantee: `abort` outlives the call.
    let abort = unsafe { AbortFlag::new(abort) };
    // SAFETY: the caller's guarantee.
    let r = unsafe { args_in(args, args_len) }.and_then(|args| {
        let hard = hard_mode(mode)?;
        let started = devzoid::client()?.start(
            &Creds::current(),
            plugin,
            function,
            0,
            Args::Kernel(args),
            timeout_ms,
            hard,
            abort,
        )?;
        Ok(KBox::new(started, GFP_KERNEL)?)
    });
    match r {
        Ok(b) => {
            // SAFETY: the caller's guarantee.
            unsafe { *call = KBox::into_raw(b).cast() };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// `zoid_call_wait()`: as `zoid_call()`; `call` is gone afterwards.
///
/// # Safety
///
/// `call` came from [`zoid_call_start`] and was not waited for; `reply`
/// is valid for one write.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoid_call_wait(
    call: *mut c_void,
    reply: *mut *mut c_void,
) -> c_int {
    // SAFETY: the caller's guarantee: `call` is `zoid_call_start`'s `KBox`.
    let call = unsafe { KBox::from_raw(call.cast::<InFlight>()) };
    if reply.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: `reply` is valid for one write (the caller's guarantee).
    unsafe { reply_out(KBox::into_inner(call).wait(), reply) }
}

/// `zoid_reply_len()`.
///
/// # Safety
///
/// `r` came from [`zoid_call`] and was not freed.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoid_reply_len(r: *const c_void) -> usize {
    // SAFETY: the caller's guarantee: a live `CallReply`.
    unsafe { &*r.cast::<CallReply>() }.len()
}

/// `zoid_reply_read()`: 0 or `-EINVAL` (a range outside the results).
///
/// # Safety
///
/// `r` came from [`zoid_call`] and was not freed; `dst` is valid for
/// `len` writes.
#[no_mangle]
pub(crate) unsafe extern "C" fn zoid_reply_read(
    r: *const c_void,
    off: usize,
    dst: *mut c_void,
    len: usize,
) -> c_int {
    if len == 0 {
        return 0;
    }
    // SAFETY: the caller's guarantee: a live `CallReply`.
    let r = unsafe { &*r.cast::<CallReply>() };
    // SAFETY: the caller's guarantee.
    let out = unsafe { core::slice::from_raw_parts_mut(dst.cast::<u8>(), len) };
    match r.read_at(off, out) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `zoid_reply_free()`.
///
/// # Safety
///
/// `r` came from [`zoid_call`] and is not used afterwards (null is
/// ignored).
#[no_mangle]
pub(crate) unsafe extern "C" fn zoid_reply_free(r: *mut c_void) {
    if !r.is_null() {
        // SAFETY: the caller's guarantee: `r` is `zoid_call`'s `KBox`.
        drop(unsafe { KBox::from_raw(r.cast::<CallReply>()) });
    }
}
