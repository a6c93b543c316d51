// SPDX-License-Identifier: GPL-2.0

//! Raw frames of one ethertype on one netdevice (C side: `shim/netlink.c`).
//!
//! A [`NetLink`] binds a device by name: frames of its ethertype are queued
//! in softirq context and its [`Kicker`] is woken; the owner's thread takes
//! them with [`NetLink::recv`] and sends with [`NetLink::send`].  Dropping
//! the link unregisters it, waiting for receivers in flight, and frees
//! queued frames.
//!
//! An owner may also take frames in softirq, before they are queued
//! ([`FastRx`], [`NetLink::open_fast`]): a frame it does not take is
//! queued as usual.

use super::kthread::{Kicker, RawThread};
use core::{marker::PhantomData, ptr::NonNull};
use kernel::ffi::{c_char, c_int, c_uint, c_void};
use kernel::{
    prelude::*,
    str::CStr,
    sync::{atomic::Atomic, Arc},
};

#[repr(C)]
struct RawNetLink {
    _private: [u8; 0],
}

#[repr(C)]
struct RawSkb {
    _private: [u8; 0],
}

extern "C" {
    fn zk_netlink_open(
        ifname: *const c_char,
        ethertype: u16,
        rxq_limit: c_uint,
        kick: *mut RawThread,
        fast: Option<FastFn>,
        fast_ctx: *mut c_void,
        err: *mut c_int,
    ) -> *mut RawNetLink;
    fn zk_netlink_close(l: *mut RawNetLink);
    fn zk_netlink_rx(l: *mut RawNetLink) -> *mut RawSkb;
    fn zk_skb_data(skb: *const RawSkb, len: *mut c_uint) -> *const u8;
    fn zk_skb_src_mac(skb: *const RawSkb, mac: *mut u8);
    fn zk_skb_free(skb: *mut RawSkb);
    fn zk_netlink_mtu(l: *const RawNetLink) -> c_uint;
    fn zk_netlink_ifindex(l: *const RawNetLink) -> c_int;
    fn zk_netlink_name(l: *const RawNetLink) -> *const c_char;
    fn zk_netlink_running(l: *const RawNetLink) -> bool;
    fn zk_netlink_rx_overflow(l: *const RawNetLink) -> u64;
    fn zk_netlink_tx_errors(l: *const RawNetLink) -> u64;
    fn zk_netlink_tx_alloc(l: *mut RawNetLink, len: c_uint, data: *mut *mut u8) -> *mut RawSkb;
    fn zk_netlink_tx(l: *mut RawNetLink, skb: *mut RawSkb, dst: *const u8) -> c_int;
    fn zk_netlink_tx_discard(skb: *mut RawSkb);
    fn zk_netlink_tx_hold(l: *mut RawNetLink, max: c_uint);
    fn zk_netlink_tx_flush(l: *mut RawNetLink, b: *mut c_uint);
    fn zk_skb_napi_id(skb: *const RawSkb) -> c_uint;
    fn zk_busy_poll(napi_id: c_uint, t: *mut RawThread, done: *const u32, until_ns: u64) -> bool;
}

/// The shim's fast-path callback (`zk_netlink_fast_fn`).
type FastFn = unsafe extern "C" fn(*mut c_void, *const RawNetLink, *mut RawSkb) -> bool;

/// An owner's receive fast path (see [`NetLink::open_fast`]).
pub(crate) trait FastRx: Sync {
    /// Offered each frame of link `link` (its [`NetLink::id`]) in
    /// softirq, or in a busy-polling task with bottom halves disabled,
    /// while none is queued: returns whether it took the frame (else it is
    /// queued and the link's kicker woken, as without a fast path).  Must
    /// not sleep.
    fn rx_fast(&self, link: usize, frame: &RxFrameRef<'_>) -> bool;
}

/// The shim calls this with the owner given to [`NetLink::open_fast`].
///
/// # Safety
///
/// `ctx` is the `&T` given to `open_fast`, still alive (its contract);
/// `skb` is a linear frame the shim holds for the duration of the call.
unsafe extern "C" fn fast_trampoline<T: FastRx>(
    ctx: *mut c_void,
    l: *const RawNetLink,
    skb: *mut RawSkb,
) -> bool {
    // SAFETY: see the function's contract.
    let owner = unsafe { &*ctx.cast::<T>() };
    let Some(skb) = NonNull::new(skb) else {
        return false;
    };
    let frame = RxFrameRef {
        skb,
        _frame: PhantomData,
    };
    owner.rx_fast(l as usize, &frame)
}

/// A MAC address.
pub(crate) type Mac = [u8; 6];

/// The broadcast MAC address.
pub(crate) const BROADCAST_MAC: Mac = [0xff; 6];

/// A netdevice bound for one ethertype.
pub(crate) struct NetLink {
    raw: NonNull<RawNetLink>,
    /// Keeps the kicked thread record alive while the link can kick it.
    _kicker: Arc<Kicker>,
}

/// What [`NetLink::flush`] reports about the frames held since the last
/// flush.
pub(crate) struct TxBatches {
    /// Batches handed to the driver directly.
    pub(crate) batches: u32,
    /// Frames in them.
    pub(crate) direct: u32,
    /// Held frames that went through the device's qdisc instead: it had
    /// frames queued, or may not be bypassed, or the driver was busy.
    pub(crate) via_qdisc: u32,
}

// SAFETY: the shim's functions may be called from any thread; the receive
// queue has its own lock.
unsafe impl Send for NetLink {}
// SAFETY: as above; every method takes `&self` and is thread-safe in C
// (the batch of held frames has its own lock, the holding flag is read and
// written with READ_ONCE/WRITE_ONCE).  That frames sent between `hold` and
// `flush` form one batch is up to the owner serialising them.
unsafe impl Sync for NetLink {}

impl NetLink {
    /// Binds device `ifname` for `ethertype`, queueing at most `rxq_limit`
    /// received frames (more are dropped and counted) and kicking `kicker`.
    pub(crate) fn open(
        ifname: &CStr,
        ethertype: u16,
        rxq_limit: u32,
        kicker: Arc<Kicker>,
    ) -> Result<Self> {
        // SAFETY: no fast path, nothing to outlive the link.
        unsafe { Self::open_raw(ifname, ethertype, rxq_limit, kicker, None) }
    }

    /// Like [`NetLink::open`], and frames are offered to `owner`'s
    /// [`FastRx::rx_fast`] first, in softirq.
    ///
    /// # Safety
    ///
    /// `owner` must stay alive (and not move) until the link is dropped:
    /// dropping it waits for the receivers in flight, after which the
    /// owner is no longer called.
    pub(crate) unsafe fn open_fast<T: FastRx>(
        ifname: &CStr,
        ethertype: u16,
        rxq_limit: u32,
        kicker: Arc<Kicker>,
        owner: &T,
    ) -> Result<Self> {
        let fast = (
            fast_trampoline::<T> as FastFn,
            core::ptr::from_ref(owner).cast_mut().cast::<c_void>(),
        );
        // SAFETY: the caller keeps `owner` alive as long as the link.
        unsafe { Self::open_raw(ifname, ethertype, rxq_limit, kicker, Some(fast)) }
    }

    /// # Safety
    ///
    /// `fast`'s context stays valid for its function as long as the link.
    unsafe fn open_raw(
        ifname: &CStr,
        ethertype: u16,
        rxq_limit: u32,
        kicker: Arc<Kicker>,
        fast: Option<(FastFn, *mut c_void)>,
    ) -> Result<Self> {
        let mut err: c_int = 0;
        let (fast, fast_ctx) = match fast {
            Some((f, c)) => (Some(f), c),
            None => (None, core::ptr::null_mut()),
        };
        // SAFETY: `ifname` is NUL-terminated; `kicker`'s record outlives the
        // link (we keep a reference); `fast_ctx` outlives it (the caller's
        // contract); `err` is writable.
        let raw = unsafe {
            zk_netlink_open(
                ifname.as_char_ptr(),
                ethertype,
                rxq_limit,
                kicker.as_raw(),
                fast,
                fast_ctx,
                &mut err,
            )
        };
        match NonNull::new(raw) {
            Some(raw) => Ok(Self {
                raw,
                _kicker: kicker,
            }),
            None => Err(Error::from_errno(err)),
        }
    }

    /// What [`FastRx::rx_fast`] is told the link is: unique among live
    /// links.
    pub(crate) fn id(&self) -> usize {
        self.raw.as_ptr() as usize
    }

    /// Takes the oldest received frame.
    pub(crate) fn recv(&self) -> Option<RxFrame> {
        // SAFETY: `raw` is live while `self` is.
        let skb = unsafe { zk_netlink_rx(self.raw.as_ptr()) };
        NonNull::new(skb).map(|skb| RxFrame { skb })
    }

    /// The device's MTU.
    pub(crate) fn mtu(&self) -> usize {
        // SAFETY: `raw` is live while `self` is.
        unsafe { zk_netlink_mtu(self.raw.as_ptr()) as usize }
    }

    /// The device's interface index.
    pub(crate) fn ifindex(&self) -> i32 {
        // SAFETY: `raw` is live while `self` is.
        unsafe { zk_netlink_ifindex(self.raw.as_ptr()) }
    }

    /// The device's name.
    pub(crate) fn name(&self) -> &CStr {
        // SAFETY: `raw` is live; the device name is NUL-terminated and
        // lives as long as our device reference (renames keep the buffer).
        unsafe { CStr::from_char_ptr(zk_netlink_name(self.raw.as_ptr())) }
    }

    /// Whether the device is up with carrier.
    pub(crate) fn running(&self) -> bool {
        // SAFETY: `raw` is live while `self` is.
        unsafe { zk_netlink_running(self.raw.as_ptr()) }
    }

    /// Frames dropped because the receive queue was full.
    pub(crate) fn rx_overflow(&self) -> u64 {
        // SAFETY: `raw` is live while `self` is.
        unsafe { zk_netlink_rx_overflow(self.raw.as_ptr()) }
    }

    /// Frames the device refused.
    pub(crate) fn tx_errors(&self) -> u64 {
        // SAFETY: `raw` is live while `self` is.
        unsafe { zk_netlink_tx_errors(self.raw.as_ptr()) }
    }

    /// Holds the frames [`NetLink::send`] sends from now on, until
    /// [`NetLink::flush`], and hands them to the driver `max` at a time (a
    /// full batch goes at once), so that it notifies its device once per
    /// batch.  The owner serialises `hold`, `send` and `flush` (`&self`
    /// methods, called under its lock).
    pub(crate) fn hold(&self, max: u32) {
        // SAFETY: `raw` is live while `self` is.
        unsafe { zk_netlink_tx_hold(self.raw.as_ptr(), max) }
    }

    /// Sends the frames still held since [`NetLink::hold`] and stops
    /// holding.  Returns what went out since the last flush.
    pub(crate) fn flush(&self) -> TxBatches {
        let mut b: [c_uint; 3] = [0; 3];
        // SAFETY: `raw` is live while `self` is; `b` has the 3 writable
        // values the shim fills.
        unsafe { zk_netlink_tx_flush(self.raw.as_ptr(), b.as_mut_ptr()) };
        TxBatches {
            batches: b[0],
            direct: b[1],
            via_qdisc: b[2],
        }
    }

    /// Sends one frame of `len` bytes to `dst`; `fill` writes its contents.
    pub(crate) fn send(&self, dst: &Mac, len: usize, fill: impl FnOnce(&mut [u8])) -> Result {
        let clen = c_uint::try_from(len).map_err(|_| EMSGSIZE)?;
        let mut data: *mut u8 = core::ptr::null_mut();
        // SAFETY: `raw` is live; `data` is writable.
        let skb = unsafe { zk_netlink_tx_alloc(self.raw.as_ptr(), clen, &mut data) };
        if skb.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: the shim returned `len` writable bytes at `data`, owned by
        // the skb we hold exclusively until we send or discard it.
        let buf = unsafe { core::slice::from_raw_parts_mut(data, len) };
        fill(buf);
        // SAFETY: `skb` came from `zk_netlink_tx_alloc` on this link and is
        // consumed by the call; `dst` is 6 readable bytes.
        let err = unsafe { zk_netlink_tx(self.raw.as_ptr(), skb, dst.as_ptr()) };
        if err != 0 {
            return Err(Error::from_errno(err));
        }
        Ok(())
    }
}

impl Drop for NetLink {
    fn drop(&mut self) {
        // SAFETY: `raw` came from `zk_netlink_open` and is not used again.
        unsafe { zk_netlink_close(self.raw.as_ptr()) }
    }
}

/// A received frame (its link-layer header already pulled).
pub(crate) struct RxFrame {
    skb: NonNull<RawSkb>,
}

// SAFETY: a dequeued skb is exclusively ours and may be freed anywhere.
unsafe impl Send for RxFrame {}

impl RxFrame {
    /// The frame, borrowed.
    pub(crate) fn as_ref(&self) -> RxFrameRef<'_> {
        RxFrameRef {
            skb: self.skb,
            _frame: PhantomData,
        }
    }

    /// The frame's bytes after the Ethernet header.
    pub(crate) fn data(&self) -> &[u8] {
        self.as_ref().data()
    }

    /// The NAPI context the frame came in on, for [`busy_poll`] (0: none,
    /// or the kernel has no busy polling).
    pub(crate) fn napi_id(&self) -> u32 {
        self.as_ref().napi_id()
    }

    /// The sender's MAC address.
    pub(crate) fn src_mac(&self) -> Mac {
        self.as_ref().src_mac()
    }
}

/// A received frame lent for the duration of a call ([`FastRx::rx_fast`],
/// or from an [`RxFrame`]).
pub(crate) struct RxFrameRef<'a> {
    skb: NonNull<RawSkb>,
    _frame: PhantomData<&'a RawSkb>,
}

impl<'a> RxFrameRef<'a> {
    /// The frame's bytes after the Ethernet header, for as long as the
    /// frame is lent.
    pub(crate) fn data(&self) -> &'a [u8] {
        let mut len: c_uint = 0;
        // SAFETY: the skb is live for `'a` and linear (the shim linearised it).
        let p = unsafe { zk_skb_data(self.skb.as_ptr(), &mut len) };
        // SAFETY: a linear skb has `len` readable bytes at `data`, valid
        // while the skb is lent to us (`'a`).
        unsafe { core::slice::from_raw_parts(p, len as usize) }
    }

    /// The NAPI context the frame came in on (see [`RxFrame::napi_id`]).
    pub(crate) fn napi_id(&self) -> u32 {
        // SAFETY: the skb is live.
        unsafe { zk_skb_napi_id(self.skb.as_ptr()) }
    }

    /// The sender's MAC address.
    pub(crate) fn src_mac(&self) -> Mac {
        let mut mac = [0u8; 6];
        // SAFETY: the skb is live; `mac` has room for 6 bytes.
        unsafe { zk_skb_src_mac(self.skb.as_ptr(), mac.as_mut_ptr()) };
        mac
    }
}

impl Drop for RxFrame {
    fn drop(&mut self) {
        // SAFETY: the skb is ours and not used again.
        unsafe { zk_skb_free(self.skb.as_ptr()) }
    }
}

/// Busy polling, as a socket's `SO_BUSY_POLL`: the calling task runs the
/// device's receive poll of NAPI context `napi_id` (from
/// [`RxFrame::napi_id`]) itself until work is kicked to it through
/// `kicker` (a frame a [`NetLink`] queued, or a deadline of the thread's
/// if the caller is the thread), `done` is nonzero, a signal, or
/// `until_ns` (`ktime_get_ns`).  A frame that arrives meanwhile then costs
/// no interrupt and no wake-up.  Returns whether it ended on work or
/// `done` (false: time ran out, a signal, or no such context).
///
/// Process context with no lock held; the poll runs the device's receive
/// path (every protocol's) on this task's stack.
pub(crate) fn busy_poll(
    napi_id: u32,
    kicker: &Kicker,
    done: Option<&Atomic<u32>>,
    until_ns: u64,
) -> bool {
    let done = done.map_or(core::ptr::null(), |d| d.as_ptr().cast_const());
    // SAFETY: the kicker's record is live (borrowed); `done` is null or a
    // valid `u32` the C side only reads atomically while this call lasts;
    // the caller is in process context (the function's contract).
    unsafe { zk_busy_poll(napi_id, kicker.as_raw(), done, until_ns) }
}
