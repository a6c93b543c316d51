// SPDX-License-Identifier: GPL-2.0

//! Plug-ins: what an ION executes for its CNs.
//!
//! A plug-in's interface is declared once with `zoid_plugin!` in
//! `rust/zoid_proto/src/zoid/plugins/`; the macro generates the ION-side
//! `dispatch` (argument decoding with bounds checks, reply layout) and the
//! CN-side stubs.  Here a plug-in is the type-erased [`Plugin`] object the
//! ION's workers call, kept in the [`Registry`] under its id.  Which
//! plug-ins are active is visible and switchable through
//! `/sys/kernel/zoid/modules` (ZOID's `ZOID_MODULES`).

use crate::answers::Answers;
use crate::stats::Stats;
use crate::zoid_kernel::cred::Creds;
use crate::zoid_proto::zoid::plugin::{ret_reply, CallResult, DispatchError, Reply, REPLY_RET_LEN};
use crate::zoid_proto::zoid::sched::Priority;
use crate::zoid_proto::zoid::wire::{CallHeader, FLAG_ASYNC_NOREPLY, HEADER_LEN};
use core::cell::Cell;
use kernel::prelude::*;
use kernel::sync::atomic::Relaxed;
use kernel::sync::{Arc, Mutex, SpinLockIrq};

/// Who called: the implementation API's view of a forwarded call.
pub(crate) struct Caller {
    /// The CN's node id.
    pub(crate) node: u16,
    /// Process id and credentials on the CN, as received (before any
    /// mapping a plug-in applies, such as root squash).
    pub(crate) creds: Creds,
    /// The request's header, which a deferred reply echoes.
    call: CallHeader,
    /// Whether the function's reply is `ret` alone, so it may be deferred.
    deferrable: bool,
    /// Set by [`Caller::defer`]: the worker sends no reply.
    deferred: Cell<bool>,
    stats: Arc<Stats>,
    /// How a deferred answer goes out, and where the call ends once
    /// answered (none in KUnit tests and treenet's softirq, where no call
    /// is deferred).
    answers: Option<Arc<Answers>>,
}

impl Caller {
    /// The caller of the call `call` from `node`; `deferrable` says whether
    /// the function's reply is `ret` alone (the declaration's
    /// `reply_is_ret_only`); `answers`, the ION's, sends a deferred call's
    /// answer and ends the call in the ledger.
    pub(crate) fn new(
        node: u16,
        creds: Creds,
        call: &CallHeader,
        deferrable: bool,
        stats: Arc<Stats>,
        answers: Option<Arc<Answers>>,
    ) -> Self {
        Self {
            node,
            creds,
            call: *call,
            deferrable,
            deferred: Cell::new(false),
            stats,
            answers,
        }
    }

    /// Takes the reply over: the worker returns without answering (what the
    /// server function returns is ignored) and the caller waits until the
    /// returned [`Deferred`] answers, from any thread.  The worker is free
    /// meanwhile, so a call that waits for an event should defer rather
    /// than sleep.  Only functions whose reply is `ret` alone can be
    /// deferred (`EINVAL` otherwise); a call defers once (`EBUSY`).
    pub(crate) fn defer(&self) -> Result<Deferred> {
        if !self.deferrable {
            return Err(EINVAL);
        }
        if self.deferred.replace(true) {
            return Err(EBUSY);
        }
        self.stats.c.calls_deferred.fetch_add(1, Relaxed);
        Ok(Deferred {
            node: self.node,
            call: self.call,
            stats: self.stats.clone(),
            answers: self.answers.clone(),
            answered: false,
        })
    }

    /// The call's tag (unique among the CN's calls in flight).
    pub(crate) fn tag(&self) -> u32 {
        self.call.tag
    }

    /// Whether the call was deferred.
    pub(crate) fn is_deferred(&self) -> bool {
        self.deferred.get()
    }
}

/// The reply of a deferred call ([`Caller::defer`]).  Dropping it
/// unanswered answers `ECANCELED`, so a caller never waits on a reply a
/// plug-in forgot.  Answering never waits for the CN ([`Answers`]) but
/// may allocate: never answer or drop one under a spinlock.
pub(crate) struct Deferred {
    node: u16,
    call: CallHeader,
    stats: Arc<Stats>,
    answers: Option<Arc<Answers>>,
    answered: bool,
}

impl Deferred {
    /// The calling CN.
    pub(crate) fn node(&self) -> u16 {
        self.node
    }

    /// The calling process on that CN.
    pub(crate) fn pid(&self) -> u32 {
        self.call.pid
    }

    /// Answers the call with `result` (`Ok(ret)` or `Err(positive errno)`).
    /// Fails if treenet refuses the answer (the CN is gone, for
    /// instance); one waiting for room in the CN's queue is sent later.
    pub(crate) fn reply(mut self, result: CallResult) -> Result {
        self.answer(result)
    }

    fn answer(&mut self, result: CallResult) -> Result {
        self.answered = true;
        let tag = self.call.tag;
        if self.call.flags & FLAG_ASYNC_NOREPLY != 0 {
            if let Some(answers) = &self.answers {
                answers.answered(self.node, Some(tag), true);
            }
            return Ok(());
        }
        let mut msg = [0u8; HEADER_LEN + REPLY_RET_LEN];
        let (head, body) = msg.split_at_mut(HEADER_LEN);
        let r = match ret_reply(result, body) {
            Ok(r) => r,
            Err(_) => {
                if let Some(answers) = &self.answers {
                    answers.answered(self.node, Some(tag), false);
                }
                return Err(EINVAL);
            }
        };
        head.copy_from_slice(&crate::server::reply_header(&self.call, r.errno, r.len));
        let msg = &msg[..HEADER_LEN + r.len];
        match &self.answers {
            Some(answers) => {
                if !answers.answer(self.node, msg, Some(tag)) {
                    return Err(EHOSTUNREACH);
                }
            }
            None => crate::server::send_reply(&self.stats, self.node, msg)?,
        }
        self.stats.c.deferred_replies.fetch_add(1, Relaxed);
        Ok(())
    }
}

impl Drop for Deferred {
    fn drop(&mut self) {
        if !self.answered {
            self.stats.c.deferred_cancelled.fetch_add(1, Relaxed);
            let _ = self.answer(Err(-ECANCELED.to_errno()));
        }
    }
}

/// Implements [`Plugin`] for `$ty`, the server of the interface declared in
/// `zoid_proto::zoid::plugins::$decl`: id, name, functions and dispatch come
/// from the declaration; the optional hooks are given in the braces.
macro_rules! declared_plugin {
    ($ty:ty, $decl:ident, { $($hooks:tt)* }) => {
        impl $crate::plugin::Plugin for $ty {
            fn id(&self) -> u16 {
                $decl::ID
            }

            fn name(&self) -> &str {
                $decl::NAME
            }

            fn for_each_function(
                &self,
                f: &mut dyn FnMut(u16, &str) -> kernel::error::Result,
            ) -> kernel::error::Result {
                for &(id, name) in $decl::FUNCTIONS {
                    f(id, name)?;
                }
                Ok(())
            }

            fn reply_is_ret_only(&self, function: u16) -> bool {
                $decl::reply_is_ret_only(function)
            }

            fn dispatch(
                &self,
                caller: &$crate::plugin::Caller,
                function: u16,
                args: &[u8],
                reply: &mut [u8],
            ) -> core::result::Result<
                $crate::zoid_proto::zoid::plugin::Reply,
                $crate::zoid_proto::zoid::plugin::DispatchError,
            > {
                $decl::dispatch(self, caller, function, args, reply)
            }

            $($hooks)*
        }
    };
}
pub(crate) use declared_plugin;

/// A plug-in as the ION's workers see it.
pub(crate) trait Plugin: Send + Sync {
    /// Its id (unique; a collision fails registration).
    fn id(&self) -> u16;
    /// Its name, as `/sys/kernel/zoid/modules` shows it.
    fn name(&self) -> &str;
    /// Calls `f(function id, name)` for every function.
    fn for_each_function(&self, f: &mut dyn FnMut(u16, &str) -> Result) -> Result;
    /// Whether `function`'s reply is `ret` alone (it may be deferred).
    fn reply_is_ret_only(&self, _function: u16) -> bool {
        false
    }
    /// Decodes `args`, runs `function` for `caller` and lays its results out
    /// in `reply`.
    fn dispatch(
        &self,
        caller: &Caller,
        function: u16,
        args: &[u8],
        reply: &mut [u8],
    ) -> core::result::Result<Reply, DispatchError>;
    /// Scheduling hint for one call (`None`: classify by size).  This is
    /// the cache-hit-first hook: a plug-in that knows a call is cheap now
    /// returns [`Priority::Urgent`].
    fn priority(&self, _function: u16, _args: &[u8]) -> Option<Priority> {
        None
    }
    /// Whether `function` never blocks and is cheap enough to run in the
    /// receive path (with the `inline_bytes` knob).
    fn inline_ok(&self, _function: u16) -> bool {
        false
    }
    /// Whether some functions may run in treenet's receive softirq
    /// ([`Plugin::softirq_ok`]): asked when the plug-in is registered.
    fn runs_in_softirq(&self) -> bool {
        false
    }
    /// Whether `function` may run in treenet's receive softirq, the way
    /// ICMP echo is answered (the server's `softirq_calls` knob): with
    /// interrupts off, so it must not sleep, allocate (but `GFP_ATOMIC`),
    /// take a lock that is not irq-safe, defer its reply or call treenet,
    /// and should take a few microseconds at most.  Its caller is told
    /// nothing more than for any call; the reply must fit one small
    /// frame (a function whose reply does not fit runs as usual).
    fn softirq_ok(&self, _function: u16) -> bool {
        false
    }
    /// Process `pid` of node `node` ended: release what it held.
    fn process_exit(&self, _node: u16, _pid: u32) {}
    /// Node `node` detached or went down: release everything it held.
    fn node_gone(&self, _node: u16) {}
}

struct Entry {
    plugin: Arc<dyn Plugin>,
    enabled: bool,
}

/// The plug-ins registered with this zoid, by id.
#[pin_data]
pub(crate) struct Registry {
    #[pin]
    entries: Mutex<KVec<Entry>>,
    /// The enabled plug-ins that run some functions in softirq
    /// ([`Plugin::runs_in_softirq`]), under a lock softirq may take: a
    /// copy of part of `entries`, replaced whenever they change.
    #[pin]
    softirq: SpinLockIrq<KVec<Arc<dyn Plugin>>>,
}

impl Registry {
    /// An empty registry.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            entries <- kernel::new_mutex!(KVec::new(), "zoid::plugins"),
            softirq <- kernel::new_spinlock_irq!(KVec::new(), "zoid::plugins::softirq"),
        })
    }

    /// Rebuilds the softirq table from `entries` (held by the caller).
    /// Without memory for it the table empties: those calls then run as
    /// any other, never one of a plug-in that is off.
    fn sync_softirq(&self, entries: &[Entry]) {
        let mut table = KVec::new();
        for e in entries
            .iter()
            .filter(|e| e.enabled && e.plugin.runs_in_softirq())
        {
            if table.push(e.plugin.clone(), GFP_KERNEL).is_err() {
                table.clear();
                break;
            }
        }
        let old = core::mem::replace(&mut *self.softirq.lock(), table);
        // Dropped here, with interrupts on (a plug-in's last reference may
        // be among them).
        drop(old);
    }

    /// Runs `f` on the enabled plug-in `id` if it runs functions in
    /// softirq, under the table's lock (interrupts off): for treenet's
    /// receive softirq, which may not take `entries`' mutex.
    pub(crate) fn with_softirq<R>(&self, id: u16, f: impl FnOnce(&dyn Plugin) -> R) -> Option<R> {
        let table = self.softirq.lock();
        table.iter().find(|p| p.id() == id).map(|p| f(&**p))
    }

    /// Adds `plugin`, enabled.  Fails with `EEXIST` (and says which
    /// plug-in holds the id) when its id or name is taken.
    pub(crate) fn register(&self, plugin: Arc<dyn Plugin>) -> Result {
        let mut g = self.entries.lock();
        if let Some(e) = g
            .iter()
            .find(|e| e.plugin.id() == plugin.id() || e.plugin.name() == plugin.name())
        {
            pr_err!(
                "plug-in {} (id {}) collides with registered plug-in {} (id {})\n",
                plugin.name(),
                plugin.id(),
                e.plugin.name(),
                e.plugin.id()
            );
            return Err(EEXIST);
        }
        pr_info!(
            "plug-in {} (id {}) registered\n",
            plugin.name(),
            plugin.id()
        );
        g.push(
            Entry {
                plugin,
                enabled: true,
            },
            GFP_KERNEL,
        )?;
        self.sync_softirq(&g);
        Ok(())
    }

    /// Removes the plug-in with `id` (calls already queued for it keep
    /// their reference and still run).
    pub(crate) fn unregister(&self, id: u16) {
        let mut g = self.entries.lock();
        g.retain(|e| e.plugin.id() != id);
        self.sync_softirq(&g);
    }

    /// The enabled plug-in with `id`.
    pub(crate) fn get(&self, id: u16) -> Option<Arc<dyn Plugin>> {
        let g = self.entries.lock();
        g.iter()
            .find(|e| e.enabled && e.plugin.id() == id)
            .map(|e| e.plugin.clone())
    }

    /// Enables or disables the plug-in called `name` (`ENOENT` if none).
    pub(crate) fn set_enabled(&self, name: &[u8], enabled: bool) -> Result {
        let mut g = self.entries.lock();
        let e = g
            .iter_mut()
            .find(|e| e.plugin.name().as_bytes() == name)
            .ok_or(ENOENT)?;
        e.enabled = enabled;
        self.sync_softirq(&g);
        Ok(())
    }

    /// Calls `f(plugin, enabled)` for every plug-in, in registration order.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&dyn Plugin, bool) -> Result) -> Result {
        let g = self.entries.lock();
        for e in g.iter() {
            f(&*e.plugin, e.enabled)?;
        }
        Ok(())
    }

    /// Tells every plug-in that process `pid` of `node` ended.
    pub(crate) fn process_exit(&self, node: u16, pid: u32) {
        for p in self.snapshot().iter() {
            p.process_exit(node, pid);
        }
    }

    /// Tells every plug-in that `node` is gone.
    pub(crate) fn node_gone(&self, node: u16) {
        for p in self.snapshot().iter() {
            p.node_gone(node);
        }
    }

    fn snapshot(&self) -> KVec<Arc<dyn Plugin>> {
        let g = self.entries.lock();
        let mut v = KVec::new();
        for e in g.iter() {
            if v.push(e.plugin.clone(), GFP_KERNEL).is_err() {
                break;
            }
        }
        v
    }
}

/// Parses a `/sys/kernel/zoid/modules` command: `+name` / `name` enables,
/// `-name` disables.  Returns `(name, enable)`.
pub(crate) fn parse_modules_command(input: &[u8]) -> Result<(&[u8], bool)> {
    let s = input.trim_ascii();
    let (name, enable) = match s.first() {
        Some(b'-') => (&s[1..], false),
        Some(b'+') => (&s[1..], true),
        _ => (s, true),
    };
    if name.is_empty() || name.iter().any(|c| c.is_ascii_whitespace()) {
        return Err(EINVAL);
    }
    Ok((name, enable))
}
