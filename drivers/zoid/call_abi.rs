// SPDX-License-Identifier: GPL-2.0

//! The consumer side of zoid's client ABI (`drivers/zoid/zoid_client.h`),
//! for Rust modules that forward calls through a loaded zoid.ko (zoidfs
//! includes this file by path).  [`ZoidTransport`] is a [`Transport`] for
//! the client stubs `zoid_plugin!` generates.

use crate::zoid_proto::zoid::marshal::{Decoder, Encoder, MarshalError};
use crate::zoid_proto::zoid::plugin::{
    decode_reply_args, encode_args, measure_args, CallError, Transport,
};
use core::ptr::NonNull;
use kernel::error::to_result;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;

/// The ABI this file speaks (`ZOID_CLIENT_ABI`).
const ZOID_CLIENT_ABI: u32 = 1;

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
        reply: *mut *mut c_void,
    ) -> c_int;
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

/// Calls `function` of `plugin` with marshalled `args`, with the calling
/// task's credentials.
pub(crate) fn call(
    plugin: u16,
    function: u16,
    args: &[u8],
    timeout_ms: u32,
    mode: Mode,
) -> core::result::Result<Reply, CallFailure> {
    let mut raw: *mut c_void = core::ptr::null_mut();
    // SAFETY: `args` is valid for its length; `raw` for one write.
    let r = unsafe {
        zoid_call(
            plugin,
            function,
            args.as_ptr().cast(),
            args.len(),
            timeout_ms,
            mode as c_int,
            &mut raw,
        )
    };
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

/// A [`Transport`] over zoid's client with one mount's timeout and mode.
pub(crate) struct ZoidTransport {
    /// Per-call timeout in ms (0: zoid's `timeout_ms` knob).
    pub(crate) timeout_ms: u32,
    /// Soft, hard or zoid's default.
    pub(crate) mode: Mode,
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
        let reply = match call(plugin, function, &args, self.timeout_ms, self.mode) {
            Ok(r) => r,
            Err(CallFailure::Ion(errno)) => return Err(CallError::Errno(errno)),
            Err(CallFailure::Local(e)) => return Err(local(e)),
        };
        let mut data = KVVec::new();
        data.resize(reply.len(), 0, GFP_KERNEL)
            .map_err(|_| local(ENOMEM))?;
        reply.read_at(0, &mut data).map_err(local)?;
        decode_reply_args(&data, decode)
    }
}
