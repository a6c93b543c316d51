// SPDX-License-Identifier: GPL-2.0

//! The Linux errno values zoid's protocol code reports.
//!
//! Errors travel as positive errno values: in a reply header's `errno`
//! field and as the `Err` of a plug-in function's [`CallResult`].  The
//! values are the generic ones (`include/uapi/asm-generic/errno-base.h`,
//! `errno.h`), identical on every architecture zoid runs on (x86_64,
//! powerpc).
//!
//! How protocol errors map onto them:
//!
//! | error                                             | errno      |
//! |---------------------------------------------------|------------|
//! | message or arguments cut short, bytes left over, lengths that disagree | `EBADMSG` |
//! | unknown wire version, message kind or flag, errno out of range | `EPROTO` |
//! | a value too large for the buffer or the protocol (strings, arrays, replies) | `E2BIG` |
//! | a malformed value (NUL inside a string, a bool that is not 0/1), too many groups | `EINVAL` |
//! | a function a plug-in does not have                | `ENOSYS`   |
//! | a scheduler queue that is full                    | `EAGAIN`   |
//! | a server that failed without a valid errno        | `EIO`      |
//!
//! [`CallResult`]: super::plugin::CallResult

/// I/O error: what a server's invalid errno (zero, negative, too large) becomes.
pub const EIO: i32 = 5;
/// Argument list too long: a value does not fit its buffer or limit.
pub const E2BIG: i32 = 7;
/// Try again: the call scheduler cannot take the call now.
pub const EAGAIN: i32 = 11;
/// Invalid argument: a malformed value.
pub const EINVAL: i32 = 22;
/// Function not implemented: unknown plug-in function.
pub const ENOSYS: i32 = 38;
/// Protocol error: a peer speaking a different version of the protocol.
pub const EPROTO: i32 = 71;
/// Not a data message: a malformed message.
pub const EBADMSG: i32 = 74;

/// Largest errno value (`MAX_ERRNO` in `include/linux/err.h`).
pub const MAX_ERRNO: i32 = 4095;

/// Whether `e` is a valid positive errno (`1..=MAX_ERRNO`).
pub const fn is_valid(e: i32) -> bool {
    e > 0 && e <= MAX_ERRNO
}

/// `e` if it is a valid errno, `EIO` otherwise (zero or negative values
/// from a buggy server must never reach the wire as "success").
pub const fn sanitize(e: i32) -> i32 {
    if is_valid(e) {
        e
    } else {
        EIO
    }
}
