// SPDX-License-Identifier: GPL-2.0

//! Clocks and randomness for protocol code.

use kernel::bindings;

/// Monotonic time in nanoseconds.
pub(crate) fn now_ns() -> u64 {
    // SAFETY: `ktime_get` has no preconditions.
    let t = unsafe { bindings::ktime_get() };
    u64::try_from(t).unwrap_or(0)
}

/// Milliseconds to jiffies (rounded up, at least 1).
pub(crate) fn ms_to_jiffies(ms: u64) -> usize {
    let ms = u32::try_from(ms).unwrap_or(u32::MAX);
    (kernel::time::msecs_to_jiffies(ms) as usize).max(1)
}

/// A random 32-bit value.
pub(crate) fn random_u32() -> u32 {
    // SAFETY: `get_random_u32` has no preconditions.
    unsafe { bindings::get_random_u32() }
}
