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

/// `a / b` for 64-bit values on every arch (32-bit kernels have no
/// `__udivdi3`: there it is `div64_u64`).  Division by zero gives 0.
pub(crate) fn div_u64(a: u64, b: u64) -> u64 {
    if b == 0 {
        return 0;
    }
    #[cfg(target_pointer_width = "32")]
    {
        // SAFETY: `div64_u64` has no preconditions beyond `b != 0`.
        unsafe { kernel::bindings::div64_u64(a, b) }
    }
    #[cfg(not(target_pointer_width = "32"))]
    {
        a / b
    }
}

/// Nanoseconds to milliseconds.
pub(crate) fn ns_to_ms(ns: u64) -> u64 {
    div_u64(ns, 1_000_000)
}
