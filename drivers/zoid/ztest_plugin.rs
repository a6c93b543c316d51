// SPDX-License-Identifier: GPL-2.0

//! The built-in `ztest` plug-in: null calls, echoes and a call that blocks,
//! for the tests and `make bench-zoid` (declared in
//! `rust/zoid_proto/src/zoid/plugins/ztest.rs`).

use crate::plugin::{declared_plugin, Caller};
use crate::zoid_proto::zoid::plugin::CallResult;
use crate::zoid_proto::zoid::plugins::ztest;
use kernel::bindings;

/// Longest `sleep_ms` honoured (a test call must not pin a worker for long).
const MAX_SLEEP_MS: u32 = 60_000;

/// The `ztest` implementation.
pub(crate) struct Ztest;

impl ztest::Server for Ztest {
    type Ctx = Caller;

    fn null(&self, _ctx: &Caller) -> CallResult {
        Ok(0)
    }

    fn echo(&self, _ctx: &Caller, data: &[u8], out_buf: &mut [u8], _cap: u32) -> CallResult {
        let n = data.len().min(out_buf.len());
        out_buf[..n].copy_from_slice(&data[..n]);
        Ok(data.len() as i64)
    }

    fn add(&self, _ctx: &Caller, a: i64, b: i64, sum: &mut i64) -> CallResult {
        *sum = a.wrapping_add(b);
        Ok(0)
    }

    fn swap(&self, _ctx: &Caller, x: &mut u64) -> CallResult {
        *x = x.rotate_left(32);
        Ok(0)
    }

    fn strlen(&self, _ctx: &Caller, s: &[u8]) -> CallResult {
        Ok(s.len() as i64)
    }

    fn maybe(&self, _ctx: &Caller, s: Option<&[u8]>, v: Option<u32>) -> CallResult {
        match (s, v) {
            (None, None) => Ok(-1),
            (s, v) => Ok(s.map_or(0, |s| s.len() as i64) + i64::from(v.unwrap_or(0))),
        }
    }

    fn fill(&self, _ctx: &Caller, byte: u8, buf: &mut [u8], _n: u32) -> CallResult {
        buf.fill(byte);
        Ok(buf.len() as i64)
    }

    fn sleep_ms(&self, _ctx: &Caller, ms: u32) -> CallResult {
        // SAFETY: `msleep_interruptible` may sleep; workers are kthreads.
        unsafe { bindings::msleep_interruptible(ms.min(MAX_SLEEP_MS)) };
        Ok(0)
    }

    fn fail(&self, _ctx: &Caller, errno: i32) -> CallResult {
        Err(errno)
    }
}

declared_plugin!(Ztest, ztest, {
    fn inline_ok(&self, function: u16) -> bool {
        function != ztest::func::sleep_ms
    }
});
