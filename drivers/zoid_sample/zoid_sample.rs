// SPDX-License-Identifier: GPL-2.0

//! zoid_sample.ko: a zoid plug-in that lives in its own module.
//!
//! The interface is declared once with `zoid_plugin!`
//! (`rust/zoid_proto/src/zoid/plugins/sample.rs`): the declaration's
//! `dispatch` decodes and checks arguments and lays replies out, exactly as
//! for zoid's built-in plug-ins.  What differs is how it reaches zoid: a
//! module cannot share Rust types with another, so it registers through
//! the plug-in ABI (`drivers/zoid/zoid_plugin.h`), with [`Registration`]
//! building the `zoid_plugin_ops` from the declaration.  Load it on an ION
//! (`insmod zoid_sample.ko`) and CNs can call it (`zoidcall upper TEXT`);
//! unloading it waits for calls running in it.

use core::marker::PhantomData;
use core::ptr::NonNull;
use kernel::alloc::kvec::PushError;
use kernel::error::to_result;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::Mutex;

#[path = "../zoid/plugin_abi.rs"]
mod plugin_abi;
#[allow(unused_attributes, unreachable_pub, dead_code)]
#[path = "../../rust/zoid_proto/src/lib.rs"]
mod zoid_proto;

use plugin_abi::{
    ZoidCaller, ZoidDeferred, ZoidFunction, ZoidPluginOps, ZOID_FN_DEFERRABLE, ZOID_PLUGIN_ABI,
};
use zoid_proto::zoid::plugin::{DispatchError, Reply};
use zoid_proto::zoid::plugins::sample;

extern "C" {
    fn zoid_plugin_register(ops: *const ZoidPluginOps, ctx: *mut c_void) -> c_int;
    fn zoid_plugin_unregister(id: u16);
    fn zoid_defer(caller: *const ZoidCaller, out: *mut *mut ZoidDeferred) -> c_int;
    fn zoid_deferred_reply(d: *mut ZoidDeferred, ret: i64, errno_value: c_int) -> c_int;
}

/// A call whose reply this plug-in took over (`zoid_defer()`): answered
/// once with [`Later::reply`], or `ECANCELED` when dropped unanswered.
struct Later(NonNull<ZoidDeferred>);

// SAFETY: zoid answers a deferred call from any thread.
unsafe impl Send for Later {}

impl Later {
    /// Takes over the reply of the call `caller` is running (inside
    /// `dispatch` only, for a deferrable function).
    fn take(caller: &ZoidCaller) -> Result<Self> {
        let mut d = core::ptr::null_mut();
        // SAFETY: `caller` is the running dispatch's (the only place this
        // is called from); `d` is writable.
        to_result(unsafe { zoid_defer(caller, &mut d) })?;
        NonNull::new(d).map(Self).ok_or(EINVAL)
    }

    /// Answers with `result` (`Ok(ret)` or `Err(positive errno)`).
    fn reply(self, result: core::result::Result<i64, i32>) -> Result {
        let d = self.0.as_ptr();
        core::mem::forget(self);
        let (ret, errno) = match result {
            Ok(ret) => (ret, 0),
            Err(e) => (0, e),
        };
        // SAFETY: `d` came from `zoid_defer` and is answered once (`self`
        // is forgotten, so its drop does not answer again).
        to_result(unsafe { zoid_deferred_reply(d, ret, errno) })
    }
}

impl Drop for Later {
    fn drop(&mut self) {
        // SAFETY: as in `reply`: answered this once.
        let _ = unsafe { zoid_deferred_reply(self.0.as_ptr(), 0, ECANCELED.to_errno().abs()) };
    }
}

/// Calls that may wait in `meet` at once.
const MAX_WAITERS: usize = 16;

module! {
    type: SampleModule,
    name: "zoid_sample",
    authors: ["zoid developers"],
    description: "zoid sample plug-in in its own module (plug-in ABI)",
    license: "GPL",
}

/// A `meet` call waiting for its partner: its key, its caller's node and
/// its reply.
struct Waiter {
    key: u32,
    node: u16,
    later: Later,
}

/// The `sample` implementation.
struct Sample {
    served: Atomic<u64>,
    /// `meet` calls waiting for their partner (answered `ECANCELED` if
    /// still there when the module unloads).
    waiting: Pin<KBox<Mutex<KVec<Waiter>>>>,
}

impl sample::Server for Sample {
    type Ctx = ZoidCaller;

    fn upper(&self, _ctx: &ZoidCaller, s: &[u8], out: &mut [u8], _cap: u32) -> Result<i64, i32> {
        self.served.fetch_add(1, Relaxed);
        for (o, c) in out.iter_mut().zip(s) {
            *o = c.to_ascii_uppercase();
        }
        Ok(s.len() as i64)
    }

    fn served(&self, _ctx: &ZoidCaller) -> Result<i64, i32> {
        Ok(self.served.fetch_add(1, Relaxed) as i64 + 1)
    }

    fn meet(&self, ctx: &ZoidCaller, key: u32) -> Result<i64, i32> {
        self.served.fetch_add(1, Relaxed);
        let mut waiting = self.waiting.lock();
        if let Some(i) = waiting.iter().position(|w| w.key == key) {
            let first = waiting.remove(i).map_err(|_| EINVAL.to_errno().abs())?;
            drop(waiting);
            // If the first caller is gone, this one still met it.
            let _ = first.later.reply(Ok(i64::from(ctx.node)));
            return Ok(i64::from(first.node));
        }
        if waiting.len() >= MAX_WAITERS {
            return Err(EAGAIN.to_errno().abs());
        }
        waiting
            .reserve(1, GFP_KERNEL)
            .map_err(|_| ENOMEM.to_errno().abs())?;
        let later = Later::take(ctx).map_err(|e| e.to_errno().abs())?;
        // Cannot fail: room was reserved.  Were it to, the call is
        // answered `ECANCELED` (its `Later` dropped) outside the lock.
        let w = Waiter {
            key,
            node: ctx.node,
            later,
        };
        if let Err(PushError(w)) = waiting.push_within_capacity(w) {
            drop(waiting);
            drop(w);
        }
        Ok(0)
    }
}

/// How a declared plug-in's server is driven through the ABI.
trait Declared: Send + Sync + 'static {
    const ID: u16;
    const FUNCTIONS: &'static [(u16, &'static str)];
    /// Whether `function`'s reply is `ret` alone (it may be deferred).
    fn reply_is_ret_only(function: u16) -> bool;
    fn dispatch(
        &self,
        caller: &ZoidCaller,
        function: u16,
        args: &[u8],
        reply: &mut [u8],
    ) -> core::result::Result<Reply, DispatchError>;
}

impl Declared for Sample {
    const ID: u16 = sample::ID;
    const FUNCTIONS: &'static [(u16, &'static str)] = sample::FUNCTIONS;

    fn reply_is_ret_only(function: u16) -> bool {
        sample::reply_is_ret_only(function)
    }

    fn dispatch(
        &self,
        caller: &ZoidCaller,
        function: u16,
        args: &[u8],
        reply: &mut [u8],
    ) -> core::result::Result<Reply, DispatchError> {
        sample::dispatch(self, caller, function, args, reply)
    }
}

/// Longest name the ABI takes, plus its NUL.
const NAME_BUF: usize = 65;

/// A NUL-terminated copy of `s` (`EINVAL` if too long).
fn c_name(s: &str) -> Result<[u8; NAME_BUF]> {
    let mut b = [0u8; NAME_BUF];
    if s.len() >= NAME_BUF {
        return Err(EINVAL);
    }
    b[..s.len()].copy_from_slice(s.as_bytes());
    Ok(b)
}

/// What zoid holds pointers to while `S` is registered: the server, its
/// names and the ops.  Boxed, so the pointers stay valid.
struct Tables<S> {
    server: S,
    name: [u8; NAME_BUF],
    names: KVec<[u8; NAME_BUF]>,
    functions: KVec<ZoidFunction>,
    ops: ZoidPluginOps,
}

/// `S` registered with zoid under `S::ID`; unregistered on drop.
struct Registration<S: Declared> {
    tables: KBox<Tables<S>>,
    _server: PhantomData<S>,
}

// SAFETY: the tables are only read (by zoid's workers, through `ops`) while
// registered; `S` is `Send + Sync`; the raw pointers point into the box.
unsafe impl<S: Declared> Send for Registration<S> {}
// SAFETY: as above.
unsafe impl<S: Declared> Sync for Registration<S> {}

impl<S: Declared> Registration<S> {
    /// Registers `server` as plug-in `name`.
    fn new(server: S, name: &str) -> Result<Self> {
        let mut names = KVec::with_capacity(S::FUNCTIONS.len(), GFP_KERNEL)?;
        for (_, n) in S::FUNCTIONS {
            names.push(c_name(n)?, GFP_KERNEL)?;
        }
        let mut tables = KBox::new(
            Tables {
                server,
                name: c_name(name)?,
                names,
                functions: KVec::new(),
                ops: ZoidPluginOps {
                    abi: ZOID_PLUGIN_ABI,
                    id: S::ID,
                    nfunctions: u16::try_from(S::FUNCTIONS.len()).map_err(|_| EINVAL)?,
                    name: core::ptr::null(),
                    functions: core::ptr::null(),
                    dispatch: Some(Self::dispatch),
                    process_exit: None,
                    node_gone: None,
                },
            },
            GFP_KERNEL,
        )?;
        let t = &mut *tables;
        for ((id, _), n) in S::FUNCTIONS.iter().zip(t.names.iter()) {
            t.functions.push(
                ZoidFunction {
                    id: *id,
                    flags: if S::reply_is_ret_only(*id) {
                        ZOID_FN_DEFERRABLE
                    } else {
                        0
                    },
                    name: n.as_ptr(),
                },
                GFP_KERNEL,
            )?;
        }
        t.ops.name = t.name.as_ptr();
        t.ops.functions = t.functions.as_ptr();
        let ctx = core::ptr::from_ref(&t.server).cast_mut().cast::<c_void>();
        // SAFETY: `ops` and everything it points to live in the box, which
        // outlives the registration (`drop` unregisters first); `ctx` is
        // the server, which `dispatch` reads as `S`.
        to_result(unsafe { zoid_plugin_register(&t.ops, ctx) })?;
        Ok(Self {
            tables,
            _server: PhantomData,
        })
    }

    /// The `dispatch` callback: the declaration's dispatcher on `S`.
    ///
    /// # Safety
    ///
    /// zoid's contract: `ctx` is the `S` registered, `caller` valid, `args`
    /// readable for `args_len` bytes, `reply` writable for `reply_cap`,
    /// `reply_len` and `reply_errno` writable.
    unsafe extern "C" fn dispatch(
        ctx: *mut c_void,
        caller: *const ZoidCaller,
        function: u16,
        args: *const u8,
        args_len: usize,
        reply: *mut u8,
        reply_cap: usize,
        reply_len: *mut usize,
        reply_errno: *mut c_int,
    ) -> c_int {
        // SAFETY: `ctx` is the registered server (see `new`).
        let server = unsafe { &*ctx.cast::<S>() };
        // SAFETY: valid for the call (zoid's contract).
        let caller = unsafe { &*caller };
        let args: &[u8] = if args_len == 0 {
            &[]
        } else {
            // SAFETY: readable for `args_len` bytes.
            unsafe { core::slice::from_raw_parts(args, args_len) }
        };
        let reply: &mut [u8] = if reply_cap == 0 {
            &mut []
        } else {
            // SAFETY: writable for `reply_cap` bytes, not aliased.
            unsafe { core::slice::from_raw_parts_mut(reply, reply_cap) }
        };
        match server.dispatch(caller, function, args, reply) {
            Ok(r) => {
                // SAFETY: both writable (zoid's contract).
                unsafe {
                    *reply_len = r.len;
                    *reply_errno = r.errno;
                }
                0
            }
            Err(DispatchError::UnknownFunction) => ENOSYS.to_errno(),
            Err(DispatchError::ReplyTooLarge { .. }) => E2BIG.to_errno(),
            Err(e) => -e.errno(),
        }
    }
}

impl<S: Declared> Drop for Registration<S> {
    fn drop(&mut self) {
        // SAFETY: no preconditions; returns once no call runs in `S`, so
        // the box may be freed after it.
        unsafe { zoid_plugin_unregister(self.tables.ops.id) };
    }
}

/// The loaded module.
struct SampleModule {
    _registration: Registration<Sample>,
}

impl kernel::Module for SampleModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let server = Sample {
            served: Atomic::new(0),
            waiting: KBox::pin_init(
                kernel::new_mutex!(KVec::new(), "zoid_sample::waiting"),
                GFP_KERNEL,
            )?,
        };
        let registration = Registration::new(server, sample::NAME)?;
        Ok(Self {
            _registration: registration,
        })
    }
}
