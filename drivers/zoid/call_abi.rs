// SPDX-License-Identifier: GPL-2.0

//! The consumer side of zoid's client ABI (`drivers/zoid/zoid_client.h`),
//! for Rust modules that forward calls through a loaded zoid.ko (zoidfs
//! includes this file by path).  [`ZoidTransport`] is a [`Transport`] for
//! the client stubs `zoid_plugin!` generates; [`ZoidTransport::start`] and
//! [`Started::finish`] run one stub call in two halves, so that several
//! calls are in flight at once.

use crate::zoid_proto::zoid::marshal::{Decoder, Encoder, MarshalError};
use crate::zoid_proto::zoid::plugin::{
    decode_reply_args, encode_args, measure_args, CallError, Transport,
};
use core::cell::Cell;
use core::ptr::NonNull;
use kernel::error::to_result;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;

/// The ABI this file speaks (`ZOID_CLIENT_ABI`).
const ZOID_CLIENT_ABI: u32 = 5;

extern "C" {
    fn zoid_client_abi() -> u32;
    fn zoid_client_ion(max_request: *mut u32, max_reply: *mut u32) -> c_int;
    fn zoid_call(
        plugin: u16,
        function: u16,
        args: *const c_void,
        args_len: usize,
        timeout_ms: u32,
        mode: c_int,
        abort: *const c_void,
        reply: *mut *mut c_void,
    ) -> c_int;
    fn zoid_call_start(
        plugin: u16,
        function: u16,
        args: *const c_void,
        args_len: usize,
        timeout_ms: u32,
        mode: c_int,
        abort: *const c_void,
        call: *mut *mut c_void,
    ) -> c_int;
    fn zoid_call_wait(call: *mut c_void, reply: *mut *mut c_void) -> c_int;
    fn zoid_reply_len(r: *const c_void) -> usize;
    fn zoid_reply_read(r: *const c_void, off: usize, dst: *mut c_void, len: usize) -> c_int;
    fn zoid_reply_free(r: *mut c_void);
}

/// Checks that the loaded zoid.ko speaks this ABI (`EPROTO` otherwise).
pub(crate) fn check_abi() -> Result {
    // SAFETY: no preconditions.
    if unsafe { zoid_client_abi() } == ZOID_CLIENT_ABI {
        Ok(())
    } else {
        Err(EPROTO)
    }
}

/// The CN's ION as the client attached to it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ion {
    /// Its node id.
    pub(crate) node: u16,
    /// Largest request it accepts (bytes, headers included).
    pub(crate) max_request: u32,
    /// Largest reply it sends (bytes, headers included).
    pub(crate) max_reply: u32,
}

/// Attaches to the CN's ION if needed; `ETIMEDOUT` when none answers.
pub(crate) fn ion() -> Result<Ion> {
    let (mut max_request, mut max_reply) = (0u32, 0u32);
    // SAFETY: both pointers are valid for one write.
    let r = unsafe { zoid_client_ion(&mut max_request, &mut max_reply) };
    to_result(r)?;
    Ok(Ion {
        node: u16::try_from(r).map_err(|_| EINVAL)?,
        max_request,
        max_reply,
    })
}

/// How a call waits for an ION that does not answer (`enum
/// zoid_call_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// zoid's `hard` knob decides.
    Default = 0,
    /// Fail with `ETIMEDOUT` after the timeout.
    Soft = 1,
    /// Wait for the ION (and send again) until a fatal signal.
    Hard = 2,
}

/// A call's results, held in zoid's received message until dropped.
pub(crate) struct Reply(NonNull<c_void>);

impl Reply {
    /// Bytes of results.
    pub(crate) fn len(&self) -> usize {
        // SAFETY: `self.0` is a live reply.
        unsafe { zoid_reply_len(self.0.as_ptr()) }
    }

    /// Copies results at `off` to `out` (`EINVAL` outside the results).
    pub(crate) fn read_at(&self, off: usize, out: &mut [u8]) -> Result {
        // SAFETY: `self.0` is a live reply; `out` is valid for its length.
        to_result(unsafe {
            zoid_reply_read(self.0.as_ptr(), off, out.as_mut_ptr().cast(), out.len())
        })
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        // SAFETY: `self.0` came from `zoid_call` and is not used again.
        unsafe { zoid_reply_free(self.0.as_ptr()) };
    }
}

/// Why a call has no results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CallFailure {
    /// The ION answered with this (positive) errno.
    Ion(i32),
    /// No answer (timeout, signal, a request too large, no zoid).
    Local(Error),
}

/// A call's outcome from the C ABI: 0 with `raw` set, the ION's errno, or
/// a negative errno.
fn reply_in(r: c_int, raw: *mut c_void) -> core::result::Result<Reply, CallFailure> {
    if r > 0 {
        return Err(CallFailure::Ion(r));
    }
    if r < 0 {
        return Err(CallFailure::Local(Error::from_errno(r)));
    }
    NonNull::new(raw)
        .map(Reply)
        .ok_or(CallFailure::Local(EPROTO))
}

/// Calls `function` of `plugin` with marshalled `args`, with the calling
/// task's credentials.
///
/// # Safety
///
/// `abort` is null or an `atomic_t` that stays valid until this returns.
pub(crate) unsafe fn call(
    plugin: u16,
    function: u16,
    args: &[u8],
    timeout_ms: u32,
    mode: Mode,
    abort: *const c_void,
) -> core::result::Result<Reply, CallFailure> {
    let mut raw: *mut c_void = core::ptr::null_mut();
    // SAFETY: `args` is valid for its length; `raw` for one write;
    // `abort` as the caller guarantees.
    let r = unsafe {
        zoid_call(
            plugin,
            function,
            args.as_ptr().cast(),
            args.len(),
            timeout_ms,
            mode as c_int,
            abort,
            &mut raw,
        )
    };
    reply_in(r, raw)
}

/// A call in flight (`struct zoid_call`): [`InFlight::wait`] collects its
/// reply; dropped, it is abandoned.
pub(crate) struct InFlight(NonNull<c_void>);

impl InFlight {
    /// Sends a call like [`call`] without waiting for it (its arguments
    /// are copied before this returns).
    ///
    /// # Safety
    ///
    /// `abort` is null or an `atomic_t` that stays valid until the call is
    /// waited for or dropped.
    pub(crate) unsafe fn start(
        plugin: u16,
        function: u16,
        args: &[u8],
        timeout_ms: u32,
        mode: Mode,
        abort: *const c_void,
    ) -> Result<Self> {
        let mut raw: *mut c_void = core::ptr::null_mut();
        // SAFETY: `args` is valid for its length; `raw` for one write;
        // `abort` as the caller guarantees.
        to_result(unsafe {
            zoid_call_start(
                plugin,
                function,
                args.as_ptr().cast(),
                args.len(),
                timeout_ms,
                mode as c_int,
                abort,
                &mut raw,
            )
        })?;
        NonNull::new(raw).map(Self).ok_or(EPROTO)
    }

    /// Waits for the reply.
    pub(crate) fn wait(self) -> core::result::Result<Reply, CallFailure> {
        let call = core::mem::ManuallyDrop::new(self);
        let mut raw: *mut c_void = core::ptr::null_mut();
        // SAFETY: `call.0` came from `zoid_call_start` and is handed over
        // (not dropped: `ManuallyDrop`); `raw` is valid for one write.
        let r = unsafe { zoid_call_wait(call.0.as_ptr(), &mut raw) };
        reply_in(r, raw)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        // SAFETY: `self.0` came from `zoid_call_start` and is not used
        // again; a null `reply` abandons the call.
        unsafe { zoid_call_wait(self.0.as_ptr(), core::ptr::null_mut()) };
    }
}

/// A [`Transport`] over zoid's client with one mount's timeout and mode.
pub(crate) struct ZoidTransport {
    /// Per-call timeout in ms (0: zoid's `timeout_ms` knob).
    timeout_ms: u32,
    /// Soft, hard or zoid's default.
    mode: Mode,
    /// Null or the owner's abort flag (a C `atomic_t`).
    abort: *const c_void,
}

impl ZoidTransport {
    /// A transport whose calls have `timeout_ms` and `mode`, and give up
    /// with `ESHUTDOWN` once the `atomic_t` at `abort` (if not null) is
    /// nonzero.
    ///
    /// # Safety
    ///
    /// `abort` is null or an `atomic_t`, written only atomically, that
    /// stays valid until every call made through this transport (and
    /// every [`Started`] call) has been waited for or dropped.
    pub(crate) unsafe fn new(timeout_ms: u32, mode: Mode, abort: *const c_void) -> Self {
        Self {
            timeout_ms,
            mode,
            abort,
        }
    }
}

fn local(e: Error) -> CallError {
    CallError::Transport(e.to_errno().abs())
}

impl Transport for ZoidTransport {
    fn call(
        &self,
        plugin: u16,
        function: u16,
        encode: &dyn Fn(&mut Encoder<'_>) -> core::result::Result<(), MarshalError>,
        decode: &mut dyn FnMut(&mut Decoder<'_>) -> core::result::Result<(), MarshalError>,
    ) -> core::result::Result<(), CallError> {
        let mut args = KVVec::new();
        args.resize(measure_args(encode)?, 0, GFP_KERNEL)
            .map_err(|_| local(ENOMEM))?;
        encode_args(encode, &mut args)?;
        // SAFETY: `self.abort` outlives the call (`ZoidTransport::new`).
        let r = unsafe {
            call(
                plugin,
                function,
                &args,
                self.timeout_ms,
                self.mode,
                self.abort,
            )
        };
        let reply = match r {
            Ok(r) => r,
            Err(CallFailure::Ion(errno)) => return Err(CallError::Errno(errno)),
            Err(CallFailure::Local(e)) => return Err(local(e)),
        };
        decode_reply(&reply, decode)
    }
}

/// `EINPROGRESS`: the first half of a two-half stub call stops here.
const EINPROGRESS: i32 = 115;

/// The first half of a stub call: marshals and sends it, keeps it.
struct Starter<'a> {
    base: &'a ZoidTransport,
    call: Cell<Option<InFlight>>,
}

impl Transport for Starter<'_> {
    fn call(
        &self,
        plugin: u16,
        function: u16,
        encode: &dyn Fn(&mut Encoder<'_>) -> core::result::Result<(), MarshalError>,
        _decode: &mut dyn FnMut(&mut Decoder<'_>) -> core::result::Result<(), MarshalError>,
    ) -> core::result::Result<(), CallError> {
        let mut args = KVVec::new();
        args.resize(measure_args(encode)?, 0, GFP_KERNEL)
            .map_err(|_| local(ENOMEM))?;
        encode_args(encode, &mut args)?;
        // SAFETY: `abort` outlives the started call (`ZoidTransport::new`).
        let call = unsafe {
            InFlight::start(
                plugin,
                function,
                &args,
                self.base.timeout_ms,
                self.base.mode,
                self.base.abort,
            )
        }
        .map_err(local)?;
        self.call.set(Some(call));
        // The stub must not go on to its results: they come in `finish`.
        Err(CallError::Transport(EINPROGRESS))
    }
}

/// The second half: waits for the started call and decodes its reply.
struct Finisher {
    call: Cell<Option<InFlight>>,
}

impl Transport for Finisher {
    fn call(
        &self,
        _plugin: u16,
        _function: u16,
        _encode: &dyn Fn(&mut Encoder<'_>) -> core::result::Result<(), MarshalError>,
        decode: &mut dyn FnMut(&mut Decoder<'_>) -> core::result::Result<(), MarshalError>,
    ) -> core::result::Result<(), CallError> {
        let call = self
            .call
            .take()
            .ok_or(CallError::Transport(EINVAL.to_errno().abs()))?;
        let reply = match call.wait() {
            Ok(r) => r,
            Err(CallFailure::Ion(errno)) => return Err(CallError::Errno(errno)),
            Err(CallFailure::Local(e)) => return Err(local(e)),
        };
        decode_reply(&reply, decode)
    }
}

/// Decodes a reply's results.
fn decode_reply(
    reply: &Reply,
    decode: &mut dyn FnMut(&mut Decoder<'_>) -> core::result::Result<(), MarshalError>,
) -> core::result::Result<(), CallError> {
    let mut data = KVVec::new();
    data.resize(reply.len(), 0, GFP_KERNEL)
        .map_err(|_| local(ENOMEM))?;
    reply.read_at(0, &mut data).map_err(local)?;
    decode_reply_args(&data, decode)
}

/// A stub call sent by [`ZoidTransport::start`], its results not yet
/// collected (dropped: abandoned).
pub(crate) struct Started(InFlight);

impl ZoidTransport {
    /// Sends the call that `stub` makes (a generated client stub given the
    /// transport) and returns without waiting.  `stub` runs again in
    /// [`Started::finish`] with the same `in` arguments (whose values no
    /// longer matter then: they were sent here) and the `out` arguments
    /// that receive the results.
    pub(crate) fn start(
        &self,
        stub: impl FnOnce(&dyn Transport) -> core::result::Result<i64, CallError>,
    ) -> core::result::Result<Started, CallError> {
        let starter = Starter {
            base: self,
            call: Cell::new(None),
        };
        let r = stub(&starter);
        match (starter.call.take(), r) {
            (Some(call), Err(CallError::Transport(EINPROGRESS))) => Ok(Started(call)),
            (_, Err(e)) => Err(e),
            // A stub that returned without calling: cannot happen.
            (_, Ok(_)) => Err(local(EPROTO)),
        }
    }
}

impl Started {
    /// Waits for the call and decodes its results through `stub` (the same
    /// stub as in [`ZoidTransport::start`]); returns what it returns.
    pub(crate) fn finish(
        self,
        stub: impl FnOnce(&dyn Transport) -> core::result::Result<i64, CallError>,
    ) -> core::result::Result<i64, CallError> {
        stub(&Finisher {
            call: Cell::new(Some(self.0)),
        })
    }
}
