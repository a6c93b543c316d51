// SPDX-License-Identifier: GPL-2.0

//! Clocks and randomness for protocol code.

use kernel::bindings;

/// Monotonic time in nanoseconds.
pub(crate) fn now_ns() -> u64 {
    // SAFETY: `ktime_get` has no preconditions.
    let t = unsafe { bindings::ktime_get() };
    u64::try_from(t).unwrap_or(0)
}

/// The monotonic time `ms` milliseconds from now, in nanoseconds (a
/// deadline for [`now_ns`]).
pub(crate) fn deadline_after_ms(ms: u64) -> u64 {
    now_ns().saturating_add(ms.saturating_mul(1_000_000))
}

/// The wall-clock time this kernel booted, in nanoseconds since the
/// epoch, as the kernel now reckons it: a step of the wall clock
/// (settimeofday, NTP) moves it, so it names a boot only together with
/// something that does not move (zoidfs's verifier uses `boot_id` first).
pub(crate) fn boot_time_ns() -> u64 {
    let mut ts = bindings::timespec64::default();
    // SAFETY: `ts` is valid for writes; `getboottime64` has no other
    // preconditions.
    unsafe { bindings::getboottime64(&mut ts) };
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nsecs = u64::try_from(ts.tv_nsec).unwrap_or(0);
    secs.wrapping_mul(1_000_000_000).wrapping_add(nsecs)
}

/// Milliseconds to jiffies (rounded up, at least 1).
pub(crate) fn ms_to_jiffies(ms: u64) -> usize {
    let ms = u32::try_from(ms).unwrap_or(u32::MAX);
    (kernel::time::msecs_to_jiffies(ms) as usize).max(1)
}

/// Sleeps `ms` milliseconds (process context) unless a signal comes
/// first: `false` if one did.
pub(crate) fn sleep_ms_interruptible(ms: u32) -> bool {
    // SAFETY: `msleep_interruptible` has no memory-safety preconditions;
    // it sleeps, which the callers (process context) allow.
    unsafe { bindings::msleep_interruptible(ms) == 0 }
}

/// A random 32-bit value.
pub(crate) fn random_u32() -> u32 {
    // SAFETY: `get_random_u32` has no preconditions.
    unsafe { bindings::get_random_u32() }
}

/// A random 64-bit value from the kernel's CRNG (unguessable: fit for
/// tokens a peer must not be able to forge).
pub(crate) fn random_u64() -> u64 {
    // SAFETY: `get_random_u64` has no preconditions (it may be called in
    // any context, before the CRNG is seeded too).
    unsafe { bindings::get_random_u64() }
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

/// Nanoseconds per jiffy (`CONFIG_HZ` is at most 1000 and divides 10^9).
const NS_PER_JIFFY: u64 = 1_000_000_000 / bindings::CONFIG_HZ as u64;

/// Jiffies to nanoseconds.
pub(crate) fn jiffies_to_ns(jiffies: usize) -> u64 {
    (jiffies as u64).saturating_mul(NS_PER_JIFFY)
}

/// Nanoseconds to jiffies, rounded up.
pub(crate) fn ns_to_jiffies(ns: u64) -> usize {
    let j = div_u64(ns.saturating_add(NS_PER_JIFFY - 1), NS_PER_JIFFY);
    usize::try_from(j).unwrap_or(usize::MAX)
}

/// Nanoseconds to milliseconds.
pub(crate) fn ns_to_ms(ns: u64) -> u64 {
    div_u64(ns, 1_000_000)
}

/// Displays a `u64` without core's 64-bit integer formatting, which on
/// 32-bit kernels reaches for soft-float helpers the kernel does not have
/// (an oops on ppc32): everything is printed in 32-bit pieces.
#[derive(Clone, Copy)]
pub(crate) struct U64(pub(crate) u64);

impl core::fmt::Display for U64 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        const E9: u64 = 1_000_000_000;
        let v = self.0;
        if let Ok(small) = u32::try_from(v) {
            return write!(f, "{small}");
        }
        let hi = div_u64(v, E9);
        let lo = (v - hi * E9) as u32;
        match u32::try_from(hi) {
            Ok(hi) => write!(f, "{hi}{lo:09}"),
            Err(_) => {
                let top = div_u64(hi, E9) as u32;
                let mid = (hi - u64::from(top) * E9) as u32;
                write!(f, "{top}{mid:09}{lo:09}")
            }
        }
    }
}
