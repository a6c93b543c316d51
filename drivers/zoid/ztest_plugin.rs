// SPDX-License-Identifier: GPL-2.0

//! The built-in `ztest` plug-in: null calls, echoes, a call that blocks and
//! one answered later (deferred), for the tests and `make bench-zoid`
//! (declared in `rust/zoid_proto/src/zoid/plugins/ztest.rs`).

use crate::plugin::{declared_plugin, Caller, Deferred};
use crate::zoid_proto::zoid::plugin::CallResult;
use crate::zoid_proto::zoid::plugins::ztest;
use kernel::alloc::kvec::PushError;
use kernel::bindings;
use kernel::prelude::*;
use kernel::sync::Mutex;

/// Longest `sleep_ms` honoured (a test call must not pin a worker for long).
const MAX_SLEEP_MS: u32 = 60_000;

/// Calls that may wait in `rendezvous` at once.
const MAX_WAITERS: usize = 64;

/// A positive errno.
fn pos(e: Error) -> i32 {
    -e.to_errno()
}

/// A `rendezvous` call waiting for its partner.
struct Waiter {
    key: u32,
    later: Deferred,
}

/// The `ztest` implementation.
#[pin_data]
pub(crate) struct Ztest {
    #[pin]
    waiting: Mutex<KVec<Waiter>>,
}

impl Ztest {
    /// No call waiting.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            waiting <- kernel::new_mutex!(KVec::new(), "zoid::ztest::waiting"),
        })
    }

    /// Takes the waiters `gone` selects out of the list; they are answered
    /// (`ECANCELED`, see [`Deferred`]) when the caller drops them, outside
    /// the lock.
    fn take_waiters(&self, gone: impl Fn(&Deferred) -> bool) -> KVec<Waiter> {
        let mut waiting = self.waiting.lock();
        let mut taken = KVec::new();
        let mut i = 0;
        while i < waiting.len() {
            if gone(&waiting[i].later) {
                if let Ok(w) = waiting.remove(i) {
                    // Without memory the waiter is dropped (answered) here.
                    let _ = taken.push(w, GFP_ATOMIC);
                }
            } else {
                i += 1;
            }
        }
        taken
    }
}

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

    fn rendezvous(&self, ctx: &Caller, key: u32) -> CallResult {
        let mut waiting = self.waiting.lock();
        if let Some(i) = waiting.iter().position(|w| w.key == key) {
            let first = waiting.remove(i).map_err(|_| pos(EINVAL))?;
            drop(waiting);
            let partner = first.later.node();
            // If the first caller is gone, this one still met it.
            let _ = first.later.reply(Ok(i64::from(ctx.node)));
            return Ok(i64::from(partner));
        }
        if waiting.len() >= MAX_WAITERS {
            return Err(pos(EAGAIN));
        }
        waiting.reserve(1, GFP_KERNEL).map_err(|_| pos(ENOMEM))?;
        let later = ctx.defer().map_err(pos)?;
        // Cannot fail: room was reserved.  Were it to, the call is
        // answered `ECANCELED` (its `Deferred` dropped, counted in
        // `deferred_cancelled`) outside the lock.
        if let Err(PushError(w)) = waiting.push_within_capacity(Waiter { key, later }) {
            drop(waiting);
            drop(w);
        }
        Ok(0)
    }
}

declared_plugin!(Ztest, ztest, {
    fn inline_ok(&self, function: u16) -> bool {
        function != ztest::func::sleep_ms
    }

    fn runs_in_softirq(&self) -> bool {
        true
    }

    /// Everything but the calls that sleep or wait for a partner: they
    /// touch nothing but their arguments and reply.
    fn softirq_ok(&self, function: u16) -> bool {
        function != ztest::func::sleep_ms && function != ztest::func::rendezvous
    }

    fn process_exit(&self, node: u16, pid: u32) {
        drop(self.take_waiters(|d| d.node() == node && d.pid() == pid));
    }

    fn node_gone(&self, node: u16) {
        drop(self.take_waiters(|d| d.node() == node));
    }
});
