// SPDX-License-Identifier: GPL-2.0

//! treenet's kernel API for upper modules (zoid, ssi), as C-ABI functions
//! exported by `treenet_shim.c`.  The consumer side (declarations and a safe
//! wrapper) is `abi.rs`; `docs/treenet.md` describes the contract.
//!
//! Messages handed to a receive callback are references to treenet's page
//! lists (no copy): read them with `treenet_msg_len`/`treenet_msg_read`
//! and release each with `treenet_msg_put`.

use crate::engine::{ChannelHandler, Treenet};
use crate::zoid_kernel::msgbuf::{MsgBuf, MsgMap, MsgMapMut};
use kernel::ffi::{c_int, c_long, c_void};
use kernel::prelude::*;
use kernel::sync::{atomic::Atomic, global_lock, Arc};
use kernel::uaccess::{UserPtr, UserSlice};

global_lock! {
    // SAFETY: initialised in the module initialiser before any use.
    unsafe(uninit) static INSTANCE: Mutex<Option<Arc<Treenet>>> = None;
}

/// Initialises the instance slot; called once, first thing in module init.
pub(crate) fn init_slot() {
    // SAFETY: called once, before any other use of `INSTANCE`.
    unsafe { INSTANCE.init() };
}

/// Publishes (or, with `None`, withdraws) the instance the C API acts on.
pub(crate) fn publish(net: Option<Arc<Treenet>>) {
    *INSTANCE.lock() = net;
}

fn instance() -> Result<Arc<Treenet>> {
    INSTANCE.lock().clone().ok_or(ENODEV)
}

/// A received message, as C sees it (an `Arc<MsgBuf>` behind the pointer).
#[repr(C)]
pub(crate) struct TreenetMsg {
    _private: [u8; 0],
}

/// Callbacks of one channel.
#[repr(C)]
pub(crate) struct TreenetOps {
    /// A whole message: `(ctx, channel, src, msg)`; the callee owns `msg`.
    pub(crate) receive: Option<unsafe extern "C" fn(*mut c_void, u16, u16, *mut TreenetMsg)>,
    /// Node reachability changed: `(ctx, node, up)`.
    pub(crate) peer_event: Option<unsafe extern "C" fn(*mut c_void, u16, bool)>,
    /// Optional: answers a one-frame message in the receive softirq,
    /// `(ctx, channel, src, below, msg, len, out, cap)`.  With `out` null,
    /// only whether it would (>= 0: yes); else writes the answer (at most
    /// `cap` bytes) at `out` and returns its length, or a negative value:
    /// not answered, and nothing changed ([`AnswerFn`]).
    pub(crate) answer: Option<AnswerFn>,
    /// `TREENET_NOT_RELAYED`: an ION does not pass the channel's messages
    /// from one CN on to others ([`ChannelHandler::relayed_by_ion`]).
    pub(crate) flags: u32,
}

/// [`TreenetOps::flags`]: the channel's messages end at the ION.
pub(crate) const TREENET_NOT_RELAYED: u32 = 1 << 0;

/// A channel's softirq answer callback ([`TreenetOps::answer`]; the
/// contract of [`ChannelHandler::answer_in_softirq`]).
pub(crate) type AnswerFn =
    unsafe extern "C" fn(*mut c_void, u16, u16, bool, *const u8, usize, *mut u8, usize) -> isize;

struct CChannel {
    receive: Option<unsafe extern "C" fn(*mut c_void, u16, u16, *mut TreenetMsg)>,
    peer_event: Option<unsafe extern "C" fn(*mut c_void, u16, bool)>,
    answer: Option<AnswerFn>,
    flags: u32,
    ctx: *mut c_void,
}

impl CChannel {
    /// The `answer` callback, if any: with `out`, for the answer; with
    /// `None`, only whether it would answer.
    fn call_answer(
        &self,
        channel: u16,
        src: u16,
        below: bool,
        msg: &[u8],
        out: Option<&mut [u8]>,
    ) -> Option<isize> {
        let f = self.answer?;
        let (ptr, cap) = match out {
            Some(out) => (out.as_mut_ptr(), out.len()),
            None => (core::ptr::null_mut(), 0),
        };
        // SAFETY: registered callback with its context; `msg` is valid for
        // reads of its length and `ptr`, unless null (asking only), for
        // writes of `cap` bytes during the call.
        Some(unsafe {
            f(
                self.ctx,
                channel,
                src,
                below,
                msg.as_ptr(),
                msg.len(),
                ptr,
                cap,
            )
        })
    }
}

// SAFETY: the registrant promises (see `treenet_register`) that its
// callbacks and `ctx` may be used from treenet's engine thread (and
// `answer` from its receive softirq).
unsafe impl Send for CChannel {}
// SAFETY: as above; treenet calls `receive` from one thread at a time, and
// `answer` under its engine lock (possibly while `receive` runs), which
// the registrant's `ctx` allows.
unsafe impl Sync for CChannel {}

impl ChannelHandler for CChannel {
    fn receive(&self, channel: u16, src: u16, msg: Arc<MsgBuf>) {
        if let Some(f) = self.receive {
            let raw = Arc::into_raw(msg).cast_mut().cast::<TreenetMsg>();
            // SAFETY: registered callback with its context; ownership of
            // `raw` passes to the callee (released by `treenet_msg_put`).
            unsafe { f(self.ctx, channel, src, raw) }
        }
    }

    fn peer_event(&self, node: u16, up: bool) {
        if let Some(f) = self.peer_event {
            // SAFETY: registered callback with its context.
            unsafe { f(self.ctx, node, up) }
        }
    }

    fn answers_in_softirq(&self) -> bool {
        self.answer.is_some()
    }

    fn relayed_by_ion(&self) -> bool {
        self.flags & TREENET_NOT_RELAYED == 0
    }

    fn would_answer_in_softirq(&self, channel: u16, src: u16, below: bool, msg: &[u8]) -> bool {
        self.call_answer(channel, src, below, msg, None)
            .is_some_and(|r| r >= 0)
    }

    fn answer_in_softirq(
        &self,
        channel: u16,
        src: u16,
        below: bool,
        msg: &[u8],
        out: &mut [u8],
    ) -> Option<usize> {
        let cap = out.len();
        let r = self.call_answer(channel, src, below, msg, Some(out))?;
        usize::try_from(r).ok().filter(|&n| n <= cap)
    }
}

/// Registers the callbacks of `channel` (4..63; 0 is treenet's own, 1 to
/// 3 are its self-test's).  Returns 0 or a negative errno (`-EBUSY` if taken).
///
/// # Safety
///
/// `ops` must point to a valid `TreenetOps`; its callbacks and `ctx` must
/// stay usable, from any thread, until `treenet_unregister(channel)`
/// returned.  Callbacks must not sleep for long nor call
/// `treenet_unregister`; `answer` runs in the receive softirq and must
/// not sleep at all nor call treenet.
#[no_mangle]
pub(crate) unsafe extern "C" fn treenet_register(
    channel: u16,
    ops: *const TreenetOps,
    ctx: *mut c_void,
) -> c_int {
    if ops.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: the caller guarantees `ops` is valid.
    let ops = unsafe { &*ops };
    let r = (|| -> Result {
        let ch = Arc::new(
            CChannel {
                receive: ops.receive,
                peer_event: ops.peer_event,
                answer: ops.answer,
                flags: ops.flags,
                ctx,
            },
            GFP_KERNEL,
        )?;
        instance()?.register_channel(channel, ch)
    })();
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// Unregisters `channel`; when it returns, no callback runs or will run.
#[no_mangle]
pub(crate) extern "C" fn treenet_unregister(channel: u16) {
    if let Ok(net) = instance() {
        net.unregister_channel(channel);
    }
}

/// Sends `len` bytes at `data` on `channel` to node `dst` (0xffff: every
/// node below this one).  With `block`, may sleep while the destination's
/// queue is full (`-EINTR` on a signal, `-ETIMEDOUT` if frames to it go
/// unacknowledged for 4 x `peer_timeout_ms` meanwhile); otherwise fails
/// with `-EAGAIN`.  Returns 0 or -errno (`-EHOSTUNREACH`, `-EMSGSIZE`,
/// `-ENOMEM`, ...).
///
/// # Safety
///
/// `data` must be valid for reads of `len` bytes.
#[no_mangle]
pub(crate) unsafe extern "C" fn treenet_send(
    channel: u16,
    dst: u16,
    data: *const u8,
    len: usize,
    block: bool,
) -> c_int {
    let r = (|| -> Result {
        let slice = if len == 0 {
            &[][..]
        } else {
            // SAFETY: the caller guarantees `len` readable bytes at `data`.
            unsafe { core::slice::from_raw_parts(data, len) }
        };
        let net = instance()?;
        if len > net.knobs.max_msg_size.load(kernel::sync::atomic::Relaxed) as usize {
            return Err(EMSGSIZE);
        }
        net.send(channel, dst, MsgBuf::from_slice(slice, GFP_KERNEL)?, block)
    })();
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// A message being filled by its sender (a `KBox<Builder>` behind the
/// pointer), before `treenet_msg_seal` turns it into a [`TreenetMsg`].
#[repr(C)]
pub(crate) struct TreenetMsgBuilder {
    _private: [u8; 0],
}

/// What a [`TreenetMsgBuilder`] points to.
struct Builder {
    buf: MsgBuf,
    state: FillState,
}

/// Which of a builder's bytes may be read (mapped or sent).
#[derive(Clone, Copy)]
enum FillState {
    /// Every byte: the pages were zero-filled, or their writer has
    /// shortened the message to what it wrote.
    Readable,
    /// The pages were not zero-filled (`treenet_msg_new_for_filling`) and
    /// bytes `0..n` are known written (writes in order extend it): the
    /// builder is not mapped, and not sealed, before all are.
    WrittenUpTo(usize),
    /// From `treenet_msg_new_unzeroed`, and not yet shortened by its
    /// writer to what it wrote (`treenet_msg_truncate`): it may be mapped
    /// (to be written), but it does not seal.
    Unshortened,
}

impl Builder {
    /// Notes that bytes `offset..offset + len` were written.
    fn wrote(&mut self, offset: usize, len: usize) {
        if let FillState::WrittenUpTo(n) = self.state {
            if offset <= n {
                self.state = FillState::WrittenUpTo(n.max(offset + len));
            }
        }
    }

    /// Whether the builder may be mapped: not one written in order that
    /// is not written whole yet.
    fn mappable(&self) -> bool {
        !matches!(self.state, FillState::WrittenUpTo(n) if n < self.buf.len())
    }

    /// Whether every byte may be sent.
    fn sealable(&self) -> bool {
        match self.state {
            FillState::Readable => true,
            FillState::WrittenUpTo(n) => n >= self.buf.len(),
            FillState::Unshortened => false,
        }
    }

    /// # Safety
    ///
    /// `b` is a live builder, exclusively the caller's for `'a`.
    unsafe fn of<'a>(b: *mut TreenetMsgBuilder) -> &'a mut Builder {
        // SAFETY: per the contract.
        unsafe { &mut *b.cast::<Builder>() }
    }
}

/// A builder of `len` bytes in `state`; its pages are zero-filled only
/// when every byte may be read from the start ([`FillState::Readable`]).
/// Null past `max_msg_size` or out of memory.
fn new_builder(len: usize, state: FillState) -> *mut TreenetMsgBuilder {
    let max = instance().map_or(0, |net| {
        net.knobs.max_msg_size.load(kernel::sync::atomic::Relaxed) as usize
    });
    if len > max {
        return core::ptr::null_mut();
    }
    let buf = if let FillState::Readable = state {
        MsgBuf::new(len, GFP_KERNEL)
    } else {
        MsgBuf::for_filling(len, GFP_KERNEL)
    };
    let Ok(buf) = buf else {
        return core::ptr::null_mut();
    };
    match KBox::new(Builder { buf, state }, GFP_KERNEL) {
        Ok(b) => KBox::into_raw(b).cast(),
        Err(_) => core::ptr::null_mut(),
    }
}

/// A zero-filled message of `len` bytes to fill, or null (no memory, or
/// longer than `max_msg_size`).
#[no_mangle]
pub(crate) extern "C" fn treenet_msg_new(len: usize) -> *mut TreenetMsgBuilder {
    new_builder(len, FillState::Readable)
}

/// A message of `len` bytes that its sender writes whole, in order from
/// offset 0 (`treenet_msg_write`, `treenet_msg_write_user`): its pages are
/// not zero-filled, so it cannot be mapped, and `treenet_msg_seal` fails,
/// until every byte was written.  Null as for `treenet_msg_new`.
#[no_mangle]
pub(crate) extern "C" fn treenet_msg_new_for_filling(len: usize) -> *mut TreenetMsgBuilder {
    new_builder(len, FillState::WrittenUpTo(0))
}

/// A message of at most `len` bytes for a writer that maps it at once
/// (`treenet_msg_builder_map`), writes a prefix of unknown length (a
/// read's bytes) and then shortens it to that prefix
/// (`treenet_msg_truncate`) before it seals it (`treenet_msg_seal` fails
/// until it was shortened).  Its pages are not zero-filled: they hold
/// whatever freed kernel memory they held, so the writer must write every
/// byte up to the length it shortens it to.  Zeroing them cost an ION
/// 10 % of its time in 1 MiB zoidfs reads (docs/zoid.md).  Null as for
/// `treenet_msg_new`.
#[no_mangle]
pub(crate) extern "C" fn treenet_msg_new_unzeroed(len: usize) -> *mut TreenetMsgBuilder {
    new_builder(len, FillState::Unshortened)
}

/// Copies `len` bytes at `data` into a message being filled, at `offset`;
/// 0 or `-EINVAL` (past its end).
///
/// # Safety
///
/// `b` is a live builder from `treenet_msg_new`; `data` is valid for `len`
/// reads.
#[no_mangle]
pub(crate) unsafe extern "C" fn treenet_msg_write(
    b: *mut TreenetMsgBuilder,
    offset: usize,
    data: *const u8,
    len: usize,
) -> c_int {
    if len == 0 {
        return 0;
    }
    // SAFETY: per the contract, `b` is a live, exclusively owned builder.
    let m = unsafe { Builder::of(b) };
    // SAFETY: the caller guarantees `len` readable bytes at `data`.
    let src = unsafe { core::slice::from_raw_parts(data, len) };
    match m.buf.write_at(offset, src) {
        Ok(()) => {
            m.wrote(offset, len);
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// Copies `len` bytes of the calling process's memory at `src` into a
/// message being filled, at `offset`; 0, `-EFAULT` or `-EINVAL`.
///
/// # Safety
///
/// `b` as for `treenet_msg_write`; `src` is a user address (checked).
#[no_mangle]
pub(crate) unsafe extern "C" fn treenet_msg_write_user(
    b: *mut TreenetMsgBuilder,
    offset: usize,
    src: *mut c_void,
    len: usize,
) -> c_int {
    // SAFETY: per the contract, `b` is a live, exclusively owned builder.
    let m = unsafe { Builder::of(b) };
    let mut reader = UserSlice::new(UserPtr::from_ptr(src), len).reader();
    match m.buf.write_from_user(offset, &mut reader, len) {
        Ok(()) => {
            m.wrote(offset, len);
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// Maps a message being filled contiguously and writable: a pointer to
/// its bytes (as many as `treenet_msg_new` was given, or
/// `treenet_msg_truncate` left), valid until `treenet_msg_builder_unmap`,
/// or null when the mapping cannot be made (or the builder, from
/// `treenet_msg_new_for_filling`, is not written whole yet).  May sleep.
///
/// # Safety
///
/// `b` as for `treenet_msg_write`; until the unmap, it is used by nothing
/// but the mapping.
#[no_mangle]
pub(crate) unsafe extern "C" fn treenet_msg_builder_map(b: *mut TreenetMsgBuilder) -> *mut u8 {
    // SAFETY: per the contract, `b` is a live, exclusively owned builder.
    let m = unsafe { Builder::of(b) };
    if !m.mappable() {
        return core::ptr::null_mut();
    }
    match m.buf.map_mut() {
        Ok(map) => map.into_raw(),
        Err(_) => core::ptr::null_mut(),
    }
}

/// Undoes `treenet_msg_builder_map`.
///
/// # Safety
///
/// `addr` came from `treenet_msg_builder_map(b)`, `b` is still live, and
/// no pointer into the mapping is used afterwards.
#[no_mangle]
pub(crate) unsafe extern "C" fn treenet_msg_builder_unmap(
    b: *mut TreenetMsgBuilder,
    addr: *mut u8,
) {
    // SAFETY: per the contract, `b` is a live builder.
    let m = unsafe { Builder::of(b) };
    // SAFETY: per the contract, `addr` is `m`'s mapping, taken back once.
    drop(unsafe { MsgMapMut::from_raw(addr, m.buf.len()) });
}

/// Shortens a message being filled to `len` bytes: 0, or `-EINVAL` if it
/// is shorter.
///
/// # Safety
///
/// `b` as for `treenet_msg_write`, not mapped.
#[no_mangle]
pub(crate) unsafe extern "C" fn treenet_msg_truncate(
    b: *mut TreenetMsgBuilder,
    len: usize,
) -> c_int {
    // SAFETY: per the contract, `b` is a live, exclusively owned builder.
    let m = unsafe { Builder::of(b) };
    match m.buf.truncate(len) {
        Ok(()) => {
            if let FillState::Unshortened = m.state {
                m.state = FillState::Readable;
            }
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// Ends filling: the message becomes immutable and shareable (send it with
/// `treenet_send_msg`, release it with `treenet_msg_put`).  Null when out
/// of memory, when a builder from `treenet_msg_new_for_filling` was not
/// written whole, or when one from `treenet_msg_new_unzeroed` was not
/// shortened to what was written (the builder is freed either way).
///
/// # Safety
///
/// `b` is a live builder; it must not be used afterwards.
#[no_mangle]
pub(crate) unsafe extern "C" fn treenet_msg_seal(b: *mut TreenetMsgBuilder) -> *mut TreenetMsg {
    // SAFETY: per the contract, `b` came from `KBox::into_raw` and this is
    // its one release.
    let m = unsafe { KBox::from_raw(b.cast::<Builder>()) };
    if !m.sealable() {
        return core::ptr::null_mut();
    }
    match Arc::new(KBox::into_inner(m).buf, GFP_KERNEL) {
        Ok(a) => Arc::into_raw(a).cast_mut().cast(),
        Err(_) => core::ptr::null_mut(),
    }
}

/// Frees a builder that will not be sealed.
///
/// # Safety
///
/// `b` is a live builder; it must not be used afterwards.
#[no_mangle]
pub(crate) unsafe extern "C" fn treenet_msg_abort(b: *mut TreenetMsgBuilder) {
    // SAFETY: per the contract, `b` came from `KBox::into_raw` and this is
    // its one release.
    drop(unsafe { KBox::from_raw(b.cast::<Builder>()) });
}

/// Sends a sealed message (which the caller keeps: it may send it again,
/// and releases it with `treenet_msg_put`) on `channel` to `dst`; as
/// `treenet_send` otherwise, without copying the message.
///
/// # Safety
///
/// `msg` is a live message from `treenet_msg_seal`.
#[no_mangle]
pub(crate) unsafe extern "C" fn treenet_send_msg(
    channel: u16,
    dst: u16,
    msg: *const TreenetMsg,
    block: bool,
) -> c_int {
    // SAFETY: per the contract, `msg` came from `Arc::into_raw`; the
    // reference taken here is the caller's, given back below.
    let mine = unsafe { Arc::from_raw(msg.cast::<MsgBuf>()) };
    let shared = mine.clone();
    let _ = Arc::into_raw(mine);
    let r = instance().and_then(|net| net.send_shared(channel, dst, shared, block));
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// Copies `len` bytes at `offset` of a message to the calling process's
/// memory at `dst`; 0, `-EFAULT` or `-EINVAL`.
///
/// # Safety
///
/// `msg` as for `treenet_msg_len`; `dst` is a user address (checked).
#[no_mangle]
pub(crate) unsafe extern "C" fn treenet_msg_read_user(
    msg: *const TreenetMsg,
    offset: usize,
    dst: *mut c_void,
    len: usize,
) -> c_int {
    // SAFETY: per the contract, `msg` is a live `Arc<MsgBuf>` pointer.
    let m = unsafe { &*msg.cast::<MsgBuf>() };
    match m.read_to_user(offset, UserPtr::from_ptr(dst), len) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// Length of a received message.
///
/// # Safety
///
/// `msg` must be a message passed to a receive callback, not yet put.
#[no_mangle]
pub(crate) unsafe extern "C" fn treenet_msg_len(msg: *const TreenetMsg) -> usize {
    // SAFETY: per the contract, `msg` is a live `Arc<MsgBuf>` pointer.
    unsafe { &*msg.cast::<MsgBuf>() }.len()
}

/// Copies `len` bytes at `offset` of a message into `buf`; 0 or `-EINVAL`.
///
/// # Safety
///
/// `msg` as for `treenet_msg_len`; `buf` valid for writes of `len` bytes.
#[no_mangle]
pub(crate) unsafe extern "C" fn treenet_msg_read(
    msg: *const TreenetMsg,
    offset: usize,
    buf: *mut u8,
    len: usize,
) -> c_int {
    if len == 0 {
        return 0;
    }
    // SAFETY: per the contract, `msg` is a live `Arc<MsgBuf>` pointer.
    let m = unsafe { &*msg.cast::<MsgBuf>() };
    // SAFETY: the caller guarantees `len` writable bytes at `buf`.
    let out = unsafe { core::slice::from_raw_parts_mut(buf, len) };
    match m.read_at(offset, out) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// Maps a message's bytes contiguously, without copying them: a pointer to
/// its `treenet_msg_len` bytes, valid until `treenet_msg_unmap`, or null
/// when the mapping cannot be made (read with `treenet_msg_read` instead).
/// May sleep.
///
/// # Safety
///
/// `msg` as for `treenet_msg_len`, and it must outlive the mapping.
#[no_mangle]
pub(crate) unsafe extern "C" fn treenet_msg_map(msg: *const TreenetMsg) -> *const u8 {
    // SAFETY: per the contract, `msg` is a live `Arc<MsgBuf>` pointer,
    // alive until the mapping is undone.
    let m = unsafe { &*msg.cast::<MsgBuf>() };
    match m.map() {
        Ok(map) => map.into_raw(),
        Err(_) => core::ptr::null(),
    }
}

/// Undoes `treenet_msg_map`.
///
/// # Safety
///
/// `addr` came from `treenet_msg_map(msg)`, `msg` is still live, and
/// neither `addr` nor any pointer into the mapping is used afterwards.
#[no_mangle]
pub(crate) unsafe extern "C" fn treenet_msg_unmap(msg: *const TreenetMsg, addr: *const u8) {
    // SAFETY: per the contract, `msg` is a live `Arc<MsgBuf>` pointer.
    let m = unsafe { &*msg.cast::<MsgBuf>() };
    // SAFETY: per the contract, `addr` is `m`'s mapping, taken back once.
    drop(unsafe { MsgMap::from_raw(addr, m.len()) });
}

/// Releases a received message.
///
/// # Safety
///
/// `msg` as for `treenet_msg_len`; it must not be used afterwards.
#[no_mangle]
pub(crate) unsafe extern "C" fn treenet_msg_put(msg: *mut TreenetMsg) {
    // SAFETY: per the contract, `msg` came from `Arc::into_raw` and this
    // is its one release.
    drop(unsafe { Arc::from_raw(msg.cast::<MsgBuf>().cast_const()) });
}

/// This node's id, or -ENODEV before treenet is up.
#[no_mangle]
pub(crate) extern "C" fn treenet_node_id() -> c_int {
    match instance() {
        Ok(net) => c_int::from(net.node_id()),
        Err(e) => e.to_errno(),
    }
}

/// Waits until `*done` is nonzero (returns 1), `timeout` jiffies passed
/// (0) or a signal (-EINTR), doing treenet's receive work in the calling
/// task meanwhile and delivering messages on `channel` in it: a reply on
/// that channel reaches its waiter without a thread switch.  -EBUSY: the
/// caller waits its usual way (another task drives, or this one has too
/// little stack left).  The handler of `channel` must not depend on
/// running in treenet's thread.  `channel` `0xffff` delivers every
/// channel's messages and peer events (engine's `ALL_CHANNELS`).
///
/// # Safety
///
/// `done` points to an aligned `u32` valid for the whole call, which
/// others access only atomically.
#[no_mangle]
pub(crate) unsafe extern "C" fn treenet_drive_until(
    channel: u16,
    done: *const u32,
    timeout: c_long,
) -> c_int {
    let net = match instance() {
        Ok(net) => net,
        Err(e) => return e.to_errno(),
    };
    // SAFETY: per the contract, `done` is aligned, valid for the call and
    // accessed atomically by everyone (treenet only reads it).
    let done = unsafe { Atomic::<u32>::from_ptr(done.cast_mut()) };
    let timeout = usize::try_from(timeout).unwrap_or(0);
    match net.drive_until(channel, done, timeout) {
        Ok(d) => c_int::from(d),
        Err(e) => e.to_errno(),
    }
}

/// Whether `node` is reachable now.
#[no_mangle]
pub(crate) extern "C" fn treenet_reachable(node: u16) -> bool {
    instance().is_ok_and(|net| net.reachable(node))
}

/// The ION of this node's pset: this node's id on an ION, the ION's id on a
/// CN that has one up, or -ENODEV / -EHOSTUNREACH.
#[no_mangle]
pub(crate) extern "C" fn treenet_ion() -> c_int {
    match instance() {
        Ok(net) => net.ion().map_or(EHOSTUNREACH.to_errno(), c_int::from),
        Err(e) => e.to_errno(),
    }
}

/// Whether `node` is in this node's subtree now (on an ION: one of its CNs).
#[no_mangle]
pub(crate) extern "C" fn treenet_is_below(node: u16) -> bool {
    instance().is_ok_and(|net| net.is_below(node))
}

/// Writes the ids of the nodes in this node's subtree now (on an ION: its
/// CNs that are up) to `out`, at most `cap` of them; returns how many there
/// are (which may exceed `cap`), or -ENODEV before treenet is up.
///
/// # Safety
///
/// `out` must be valid for `cap` writes of `u16` (or `cap` be 0).
#[no_mangle]
pub(crate) unsafe extern "C" fn treenet_nodes_below(out: *mut u16, cap: usize) -> c_int {
    let net = match instance() {
        Ok(net) => net,
        Err(e) => return e.to_errno(),
    };
    let mut n = 0usize;
    net.for_each_below(|node| {
        if n < cap {
            // SAFETY: `n < cap` and `out` is valid for `cap` writes.
            unsafe { out.add(n).write(node) };
        }
        n += 1;
    });
    c_int::try_from(n).unwrap_or(c_int::MAX)
}
