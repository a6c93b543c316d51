// SPDX-License-Identifier: GPL-2.0

//! `ztest` (plug-in 1): functions that exercise the call path, for tests,
//! the benchmark and the pset tests.  Every argument form of
//! `zoid_plugin!` appears at least once.
//!
//! The semantics below are what a `Server` must implement (the ION's and
//! the tests' alike), so callers can check results.

zoid_plugin! {
    zoid = super::super;
    plugin(id = 1, name = "ztest");

    /// Does nothing and returns 0 (null-call latency).
    fn null() = 1;

    /// Copies `min(data.len(), cap)` bytes of `data` into `out_buf` and
    /// returns `data.len()` (so a return value above `cap` means the echo
    /// was cut short).
    fn echo(data: in bytes, out_buf: out bytes[cap, len = ret], cap: in u32) = 2;

    /// Sets `sum` to `a + b` (wrapping) and returns 0.
    fn add(a: in i64, b: in i64, sum: out i64) = 3;

    /// Swaps the two 32-bit halves of `x` and returns 0.
    fn swap(x: inout u64) = 4;

    /// Returns the length of `s`.
    fn strlen(s: in str) = 5;

    /// Returns the length of `s` plus `v`, an absent value counting 0, or
    /// -1 if both are absent.
    fn maybe(s: in str nullok, v: in u32 nullok) = 6;

    /// Fills all `n` bytes of `buf` with `byte` and returns `n`.
    fn fill(byte: in u8, buf: out bytes[n], n: in u32) = 7;

    /// Sleeps `ms` milliseconds and returns 0 (occupies a worker: for
    /// scheduler and cancellation tests).
    fn sleep_ms(ms: in u32) = 8;

    /// Fails with `errno` (a positive errno; anything else becomes `EIO`).
    fn fail(errno: in i32) = 9;

    /// Waits for a second call with the same `key` (from any CN or
    /// process) and returns the other caller's node id; both calls return
    /// then.  The ION answers the first one with a deferred reply, so a
    /// waiting call holds no worker.  A waiter whose process ends or whose
    /// CN goes away is dropped; when 64 calls already wait, `EAGAIN`.
    fn rendezvous(key: in u32) = 10;
}
