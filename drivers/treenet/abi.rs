// SPDX-License-Identifier: GPL-2.0

//! treenet's cross-module interface, as its consumers (zoid, ssi) see it.
//!
//! Include with `#[path = "<...>/drivers/treenet/abi.rs"] mod treenet;`.
//! The functions are defined in Rust in treenet.ko (`api.rs`) and exported
//! by its C shim; a consumer module needs treenet.ko loaded first.  This
//! file declares them and wraps them in a small safe API: [`Channel`] (a
//! registered channel, unregistered on drop), [`Message`] (a received
//! message, released on drop), [`send`] and the topology queries.

// Each consumer uses part of the interface.
#![allow(dead_code)]

use crate::zoid_proto::version::{Version, SUITE_VERSION};
use kernel::ffi::{c_int, c_long, c_void};
use kernel::prelude::*;
use kernel::sync::{atomic::Atomic, Arc};

#[repr(C)]
struct RawMsg {
    _private: [u8; 0],
}

#[repr(C)]
struct RawBuilder {
    _private: [u8; 0],
}

type RawAnswer =
    unsafe extern "C" fn(*mut c_void, u16, u16, bool, *const u8, usize, *mut u8, usize) -> isize;

#[repr(C)]
struct RawOps {
    receive: Option<unsafe extern "C" fn(*mut c_void, u16, u16, *mut RawMsg)>,
    peer_event: Option<unsafe extern "C" fn(*mut c_void, u16, bool)>,
    answer: Option<RawAnswer>,
    flags: u32,
}

/// `RawOps::flags`: an ION does not relay the channel between CNs (api.rs's
/// `TREENET_NOT_RELAYED`).
const NOT_RELAYED: u32 = 1 << 0;

extern "C" {
    fn treenet_abi_version() -> u64;
    fn treenet_register(channel: u16, ops: *const RawOps, ctx: *mut c_void) -> c_int;
    fn treenet_unregister(channel: u16);
    fn treenet_send(channel: u16, dst: u16, data: *const u8, len: usize, block: bool) -> c_int;
    fn treenet_msg_len(msg: *const RawMsg) -> usize;
    fn treenet_msg_read(msg: *const RawMsg, offset: usize, buf: *mut u8, len: usize) -> c_int;
    fn treenet_msg_put(msg: *mut RawMsg);
    fn treenet_msg_new(len: usize) -> *mut RawBuilder;
    fn treenet_msg_new_for_filling(len: usize) -> *mut RawBuilder;
    fn treenet_msg_new_unzeroed(len: usize) -> *mut RawBuilder;
    fn treenet_msg_write(b: *mut RawBuilder, offset: usize, data: *const u8, len: usize) -> c_int;
    fn treenet_msg_write_user(
        b: *mut RawBuilder,
        offset: usize,
        src: *mut c_void,
        len: usize,
    ) -> c_int;
    fn treenet_msg_seal(b: *mut RawBuilder) -> *mut RawMsg;
    fn treenet_msg_abort(b: *mut RawBuilder);
    fn treenet_send_msg(channel: u16, dst: u16, msg: *const RawMsg, block: bool) -> c_int;
    fn treenet_msg_read_user(
        msg: *const RawMsg,
        offset: usize,
        dst: *mut c_void,
        len: usize,
    ) -> c_int;
    fn treenet_msg_map(msg: *const RawMsg) -> *const u8;
    fn treenet_msg_unmap(msg: *const RawMsg, addr: *const u8);
    fn treenet_msg_builder_map(b: *mut RawBuilder) -> *mut u8;
    fn treenet_msg_builder_unmap(b: *mut RawBuilder, addr: *mut u8);
    fn treenet_msg_truncate(b: *mut RawBuilder, len: usize) -> c_int;
    fn treenet_node_id() -> c_int;
    fn treenet_reachable(node: u16) -> bool;
    fn treenet_drive_until(channel: u16, done: *const u32, timeout: c_long) -> c_int;
    fn treenet_ion() -> c_int;
    fn treenet_is_below(node: u16) -> bool;
    fn treenet_nodes_below(out: *mut u16, cap: usize) -> c_int;
}

/// Node id meaning "every node below this one" (broadcast).
pub(crate) const BROADCAST: u16 = 0xffff;

/// The version of the loaded treenet.ko, checked against this module's.
///
/// Fails with `EPROTO` (and says why in the log) when the two cannot work
/// together, so a mismatched suite refuses to load instead of misbehaving.
pub(crate) fn attach() -> Result<Version> {
    // SAFETY: `treenet_abi_version` takes no arguments, has no
    // preconditions, and is resolved by the module loader from treenet.ko.
    check_compatible(unsafe { treenet_abi_version() })
}

/// Decodes treenet's wire version and checks it against this module's.
pub(crate) fn check_compatible(wire: u64) -> Result<Version> {
    let Some(theirs) = Version::from_wire(wire) else {
        pr_err!("treenet reports a malformed version {wire:#x}\n");
        return Err(EPROTO);
    };
    if !SUITE_VERSION.is_compatible_with(&theirs) {
        pr_err!("treenet {theirs} is not compatible with this module ({SUITE_VERSION})\n");
        return Err(EPROTO);
    }
    Ok(theirs)
}

fn to_result(rc: c_int) -> Result {
    if rc < 0 {
        Err(Error::from_errno(rc))
    } else {
        Ok(())
    }
}

/// A message being filled before it is sent: treenet's pages, written in
/// place (from kernel or user memory), so sending copies nothing more.
pub(crate) struct MessageBuilder {
    raw: *mut RawBuilder,
    len: usize,
}

// SAFETY: the builder is exclusively owned; treenet's functions on it may
// be called from any thread.
unsafe impl Send for MessageBuilder {}

impl MessageBuilder {
    /// A zero-filled message of `len` bytes (`ENOMEM`; `EMSGSIZE` over
    /// treenet's `max_msg_size` is reported as `ENOMEM` too).
    pub(crate) fn new(len: usize) -> Result<Self> {
        // SAFETY: no preconditions.
        let raw = unsafe { treenet_msg_new(len) };
        if raw.is_null() {
            return Err(ENOMEM);
        }
        Ok(Self { raw, len })
    }

    /// A message of `len` bytes that the caller writes whole, in order
    /// from offset 0 ([`MessageBuilder::write_at`],
    /// [`MessageBuilder::write_user_at`]): no zero-filling, which cost a
    /// CN 16 % of its busy time in 1 MiB calls (docs/zoid.md).  Until
    /// every byte is written it cannot be mapped, and [`seal`] fails
    /// (`ENOMEM`).  Errors as [`MessageBuilder::new`].
    ///
    /// [`seal`]: MessageBuilder::seal
    pub(crate) fn for_filling(len: usize) -> Result<Self> {
        // SAFETY: no preconditions.
        let raw = unsafe { treenet_msg_new_for_filling(len) };
        if raw.is_null() {
            return Err(ENOMEM);
        }
        Ok(Self { raw, len })
    }

    /// A message of at most `len` bytes that the caller maps
    /// ([`MessageBuilder::map`]), writes a prefix of and shortens to that
    /// prefix ([`MessageBuilder::truncate`]) before it seals it ([`seal`]
    /// fails until then): no zero-filling, so bytes it does not write hold
    /// whatever freed kernel memory the pages held, and the caller must
    /// write every byte up to the length it keeps.  Errors as
    /// [`MessageBuilder::new`].
    ///
    /// [`seal`]: MessageBuilder::seal
    pub(crate) fn unzeroed(len: usize) -> Result<Self> {
        // SAFETY: no preconditions.
        let raw = unsafe { treenet_msg_new_unzeroed(len) };
        if raw.is_null() {
            return Err(ENOMEM);
        }
        Ok(Self { raw, len })
    }

    /// Shortens it to `len` bytes (`EINVAL` if it is shorter).
    pub(crate) fn truncate(&mut self, len: usize) -> Result {
        // SAFETY: `raw` is live and ours, and not mapped (a mapping
        // borrows `self`).
        to_result(unsafe { treenet_msg_truncate(self.raw, len) })?;
        self.len = len;
        Ok(())
    }

    /// Its bytes as one writable slice, treenet's pages mapped (not
    /// copied) into contiguous kernel addresses (`ENOMEM`).  May sleep.
    pub(crate) fn map(&mut self) -> Result<MappedBuilder<'_>> {
        // SAFETY: `raw` is live and ours; the mapping borrows `self`
        // exclusively, so nothing else touches the builder until it is
        // undone.
        let addr = unsafe { treenet_msg_builder_map(self.raw) };
        if addr.is_null() {
            return Err(ENOMEM);
        }
        let len = self.len;
        Ok(MappedBuilder {
            builder: self,
            addr,
            len,
        })
    }

    /// Copies `data` in at `offset`.
    pub(crate) fn write_at(&mut self, offset: usize, data: &[u8]) -> Result {
        // SAFETY: `raw` is live and ours; `data` is valid for its length.
        to_result(unsafe { treenet_msg_write(self.raw, offset, data.as_ptr(), data.len()) })
    }

    /// Copies `len` bytes of the calling process's memory at `src` in at
    /// `offset` (`EFAULT` if unreadable).
    pub(crate) fn write_user_at(
        &mut self,
        offset: usize,
        src: kernel::uaccess::UserPtr,
        len: usize,
    ) -> Result {
        // SAFETY: `raw` is live and ours; treenet checks the user range.
        to_result(unsafe { treenet_msg_write_user(self.raw, offset, src.as_mut_ptr(), len) })
    }

    /// The finished, immutable message.
    pub(crate) fn seal(self) -> Result<Message> {
        let raw = self.raw;
        core::mem::forget(self);
        // SAFETY: `raw` is live and ours; treenet takes it over.
        let msg = unsafe { treenet_msg_seal(raw) };
        if msg.is_null() {
            return Err(ENOMEM);
        }
        Ok(Message { raw: msg })
    }
}

/// A [`MessageBuilder`] mapped contiguously ([`MessageBuilder::map`]):
/// reads and writes as `&mut [u8]`; unmapped on drop.
pub(crate) struct MappedBuilder<'a> {
    builder: &'a mut MessageBuilder,
    addr: *mut u8,
    len: usize,
}

impl core::ops::Deref for MappedBuilder<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: `addr` maps the builder's `len` bytes, borrowed
        // exclusively as long as `self`: kernel pages, zero-filled when
        // made, written whole, or (`unzeroed`) holding earlier kernel data
        // until overwritten, plain initialised bytes in every case.
        unsafe { core::slice::from_raw_parts(self.addr, self.len) }
    }
}

impl core::ops::DerefMut for MappedBuilder<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`; `&mut self`: no other slice of it lives.
        unsafe { core::slice::from_raw_parts_mut(self.addr, self.len) }
    }
}

impl Drop for MappedBuilder<'_> {
    fn drop(&mut self) {
        // SAFETY: `addr` is the builder's mapping, undone once, here.
        unsafe { treenet_msg_builder_unmap(self.builder.raw, self.addr) }
    }
}

impl Drop for MessageBuilder {
    fn drop(&mut self) {
        // SAFETY: `raw` is live and this is its one release.
        unsafe { treenet_msg_abort(self.raw) }
    }
}

/// Sends `msg` (a sealed [`MessageBuilder`]) on `channel` to `dst` without
/// copying it; the caller keeps `msg` and may send it again.  As [`send`]
/// otherwise.
pub(crate) fn send_message(channel: u16, dst: u16, msg: &Message, block: bool) -> Result {
    // SAFETY: `msg.raw` is a live message.
    to_result(unsafe { treenet_send_msg(channel, dst, msg.raw, block) })
}

/// A message: a reference to treenet's page list (received, or built and
/// sealed here), released on drop.
pub(crate) struct Message {
    raw: *mut RawMsg,
}

// SAFETY: a message is a reference-counted, immutable page list; treenet's
// functions on it may be called from any thread.
unsafe impl Send for Message {}
// SAFETY: as above; the read functions take it by shared reference.
unsafe impl Sync for Message {}

impl Message {
    /// Length in bytes.
    pub(crate) fn len(&self) -> usize {
        // SAFETY: `raw` is a live message owned by `self`.
        unsafe { treenet_msg_len(self.raw) }
    }

    /// Whether the message is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies `out.len()` bytes at `offset` into `out` (`EINVAL` past the end).
    pub(crate) fn read_at(&self, offset: usize, out: &mut [u8]) -> Result {
        if out.is_empty() {
            return Ok(());
        }
        // SAFETY: `raw` is live; `out` is valid for `out.len()` writes.
        to_result(unsafe { treenet_msg_read(self.raw, offset, out.as_mut_ptr(), out.len()) })
    }
}

impl Message {
    /// Copies `len` bytes at `offset` to the calling process's memory at
    /// `dst`, straight from treenet's pages (`EFAULT`, `EINVAL`).
    pub(crate) fn read_to_user(
        &self,
        offset: usize,
        dst: kernel::uaccess::UserPtr,
        len: usize,
    ) -> Result {
        // SAFETY: `raw` is live; treenet checks the user range.
        to_result(unsafe { treenet_msg_read_user(self.raw, offset, dst.as_mut_ptr(), len) })
    }
}

impl Drop for Message {
    fn drop(&mut self) {
        // SAFETY: `raw` was handed to us by a receive callback and this is
        // its one release.
        unsafe { treenet_msg_put(self.raw) }
    }
}

impl Message {
    /// The message as one slice, its pages mapped (not copied) into
    /// contiguous kernel addresses; the message back (`Err`) when the
    /// mapping cannot be made.  May sleep.
    pub(crate) fn into_mapped(self) -> core::result::Result<MappedMessage, Message> {
        // SAFETY: `raw` is live and stays so while the `MappedMessage`
        // holds it; it unmaps before releasing it.
        let addr = unsafe { treenet_msg_map(self.raw) };
        if addr.is_null() {
            return Err(self);
        }
        let len = self.len();
        Ok(MappedMessage {
            msg: self,
            addr,
            len,
        })
    }
}

/// A received message mapped contiguously ([`Message::into_mapped`]):
/// reads as `&[u8]` without a copy; unmapped and released on drop.
pub(crate) struct MappedMessage {
    msg: Message,
    addr: *const u8,
    len: usize,
}

// SAFETY: the mapping shows an immutable, reference-counted page list
// that `msg` keeps alive; it may be read and undone from any thread.
unsafe impl Send for MappedMessage {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for MappedMessage {}

impl core::ops::Deref for MappedMessage {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: `addr` maps the `len` bytes of `msg`, which is immutable
        // and alive as long as `self`.
        unsafe { core::slice::from_raw_parts(self.addr, self.len) }
    }
}

impl Drop for MappedMessage {
    fn drop(&mut self) {
        // SAFETY: `addr` is `msg`'s mapping, undone once, here, before
        // `msg` (a field, dropped after this) is released.
        unsafe { treenet_msg_unmap(self.msg.raw, self.addr) }
    }
}

/// What a channel's owner does with its traffic.  `receive` and
/// `peer_event` run in treenet's engine thread: they must not sleep for
/// long (queue the work).
pub(crate) trait Handler: Send + Sync + 'static {
    /// Whether [`Handler::answer_in_softirq`] answers anything.
    const ANSWERS_IN_SOFTIRQ: bool = false;
    /// Whether an ION passes this channel's messages from one CN on to
    /// others; `false`: they end at the ION, and one a CN sends to another
    /// CN is dropped there (treenet's `drop_relay_refused`).
    const RELAYED_BY_ION: bool = true;
    /// A whole message arrived from node `src`.
    fn receive(&self, src: u16, msg: Message);
    /// Node `node` became reachable (`up`) or unreachable.
    fn peer_event(&self, node: u16, up: bool);
    /// Answers `msg`, a message of one frame from `src` (`below`: a node
    /// of this node's subtree), from treenet's receive softirq, the way
    /// ICMP echo is answered (treenet's `softirq_rx`): with `out`, writes
    /// the answer (at most `out.len()` bytes) and returns its length,
    /// which treenet sends back at once, and `receive` is not called for
    /// `msg`; with `None`, only says whether it would (`Some(_)`), first,
    /// before treenet makes room for the answer.  Runs in softirq under
    /// treenet's engine lock, possibly while `receive` runs elsewhere: it
    /// must not sleep, allocate (but `GFP_ATOMIC`) or call treenet, and
    /// when it returns `None` it must have changed nothing (`msg` then
    /// goes to `receive`).
    fn answer_in_softirq(
        &self,
        _src: u16,
        _below: bool,
        _msg: &[u8],
        _out: Option<&mut [u8]>,
    ) -> Option<usize> {
        None
    }
}

/// A registered channel; unregistered (and no callback running) on drop.
pub(crate) struct Channel<H: Handler> {
    channel: u16,
    handler: Arc<H>,
}

/// # Safety
///
/// `ctx` must be the `Arc<H>` pointer of a registered [`Channel<H>`] and
/// `msg` a message treenet hands over.
unsafe extern "C" fn receive_trampoline<H: Handler>(
    ctx: *mut c_void,
    _channel: u16,
    src: u16,
    msg: *mut RawMsg,
) {
    let msg = Message { raw: msg };
    // SAFETY: `ctx` is the `Arc<H>` pointer registered by `Channel::register`,
    // alive until `treenet_unregister` returned (in `Channel::drop`).
    let handler = unsafe { &*ctx.cast_const().cast::<H>() };
    handler.receive(src, msg);
}

/// # Safety
///
/// `ctx` must be the `Arc<H>` pointer of a registered [`Channel<H>`].
unsafe extern "C" fn peer_trampoline<H: Handler>(ctx: *mut c_void, node: u16, up: bool) {
    // SAFETY: as in `receive_trampoline`.
    let handler = unsafe { &*ctx.cast_const().cast::<H>() };
    handler.peer_event(node, up);
}

/// # Safety
///
/// `ctx` must be the `Arc<H>` pointer of a registered [`Channel<H>`];
/// `msg` valid for reads of `len` bytes and `out`, unless null, for
/// writes of `cap` bytes, during the call.
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn answer_trampoline<H: Handler>(
    ctx: *mut c_void,
    _channel: u16,
    src: u16,
    below: bool,
    msg: *const u8,
    len: usize,
    out: *mut u8,
    cap: usize,
) -> isize {
    // SAFETY: as in `receive_trampoline`.
    let handler = unsafe { &*ctx.cast_const().cast::<H>() };
    // SAFETY: the caller guarantees `msg` is valid for `len` bytes.
    let msg = unsafe { core::slice::from_raw_parts(msg, len) };
    let out = if out.is_null() {
        None
    } else {
        // SAFETY: the caller guarantees `out` is valid for writes of `cap`
        // bytes, and nothing else uses them during the call.
        Some(unsafe { core::slice::from_raw_parts_mut(out, cap) })
    };
    match handler.answer_in_softirq(src, below, msg, out) {
        Some(n) => isize::try_from(n).unwrap_or(-1),
        None => -1,
    }
}

impl<H: Handler> Channel<H> {
    const OPS: RawOps = RawOps {
        receive: Some(receive_trampoline::<H>),
        peer_event: Some(peer_trampoline::<H>),
        answer: if H::ANSWERS_IN_SOFTIRQ {
            Some(answer_trampoline::<H>)
        } else {
            None
        },
        flags: if H::RELAYED_BY_ION { 0 } else { NOT_RELAYED },
    };

    /// Registers `handler` for `channel` (4..63; `EBUSY` if taken).
    pub(crate) fn register(channel: u16, handler: Arc<H>) -> Result<Self> {
        let ctx = Arc::as_ptr(&handler).cast_mut().cast::<c_void>();
        // SAFETY: `OPS` is valid for the call (treenet copies the callbacks);
        // `ctx` stays valid (we hold `handler`) until `drop` unregistered the
        // channel, and the trampolines are `H`'s.
        to_result(unsafe { treenet_register(channel, &Self::OPS, ctx) })?;
        Ok(Self { channel, handler })
    }

    /// The registered handler.
    pub(crate) fn handler(&self) -> &Arc<H> {
        &self.handler
    }

    /// Sends `data` to `dst` on this channel (see [`send`]).
    pub(crate) fn send(&self, dst: u16, data: &[u8], block: bool) -> Result {
        send(self.channel, dst, data, block)
    }
}

impl<H: Handler> Drop for Channel<H> {
    fn drop(&mut self) {
        // SAFETY: no preconditions; returns once no callback runs.
        unsafe { treenet_unregister(self.channel) }
    }
}

/// Sends `data` on `channel` to `dst` ([`BROADCAST`]: every node below).
/// With `block`, may sleep while the destination's queue is full (`EINTR`
/// on a signal, `ETIMEDOUT` if frames to it go unacknowledged for 4 x
/// `peer_timeout_ms`); otherwise fails with `EAGAIN`.
pub(crate) fn send(channel: u16, dst: u16, data: &[u8], block: bool) -> Result {
    // SAFETY: `data` is valid for `data.len()` reads.
    to_result(unsafe { treenet_send(channel, dst, data.as_ptr(), data.len(), block) })
}

/// This node's id (`ENODEV` before treenet is up).
pub(crate) fn node_id() -> Result<u16> {
    // SAFETY: no preconditions.
    let rc = unsafe { treenet_node_id() };
    to_result(rc)?;
    u16::try_from(rc).map_err(|_| EINVAL)
}

/// The ION of this node's pset (this node's own id on an ION).
pub(crate) fn ion() -> Result<u16> {
    // SAFETY: no preconditions.
    let rc = unsafe { treenet_ion() };
    to_result(rc)?;
    u16::try_from(rc).map_err(|_| EINVAL)
}

/// The `channel` of [`drive_until`] that delivers every channel's messages
/// and peer events in the driving task, as treenet's thread would: for a
/// task that has nothing else to do (an ION's idle zoid worker).
pub(crate) const ALL_CHANNELS: u16 = u16::MAX;

/// Waits until `done` is nonzero (`Ok(true)`), `timeout` jiffies passed
/// (`Ok(false)`) or a signal (`EINTR`), doing treenet's receive work in
/// this task and delivering messages on `channel` in it (no thread switch
/// between a reply and its waiter).  `EBUSY`: wait the usual way instead.
/// The channel's handler (every handler, with [`ALL_CHANNELS`]) runs in
/// the caller's task meanwhile.
pub(crate) fn drive_until(channel: u16, done: &Atomic<u32>, timeout: usize) -> Result<bool> {
    let t = c_long::try_from(timeout).unwrap_or(c_long::MAX);
    // SAFETY: `done` is a live atomic `u32`, borrowed for the call.
    let rc = unsafe { treenet_drive_until(channel, done.as_ptr().cast_const(), t) };
    to_result(rc)?;
    Ok(rc > 0)
}

/// Whether `node` is reachable now.
pub(crate) fn reachable(node: u16) -> bool {
    // SAFETY: no preconditions.
    unsafe { treenet_reachable(node) }
}

/// Whether `node` is in this node's subtree (on an ION: one of its CNs).
pub(crate) fn is_below(node: u16) -> bool {
    // SAFETY: no preconditions.
    unsafe { treenet_is_below(node) }
}

/// The nodes in this node's subtree now (on an ION: its CNs that are up).
pub(crate) fn nodes_below() -> Result<KVec<u16>> {
    let mut out = KVec::new();
    loop {
        let cap = out.capacity();
        // SAFETY: `out` has room for `cap` ids.
        let n = unsafe { treenet_nodes_below(out.as_mut_ptr(), cap) };
        to_result(n)?;
        let n = n as usize;
        if n <= cap {
            // SAFETY: treenet wrote the first `n` ids (`n <= cap`).
            unsafe { out.inc_len(n) };
            return Ok(out);
        }
        // The subtree grew between the two calls at most by a few nodes.
        out.reserve(n + 8, GFP_KERNEL)?;
    }
}
