// SPDX-License-Identifier: GPL-2.0

//! Raw frames of one ethertype on one netdevice (C side: `shim/netlink.c`).
//!
//! A [`NetLink`] binds a device by name: frames of its ethertype are queued
//! in softirq context and its [`Kicker`] is woken; the owner's thread takes
//! them with [`NetLink::recv`] and sends with [`NetLink::send`].  Dropping
//! the link unregisters it, waiting for receivers in flight, and frees
//! queued frames.

use super::kthread::{Kicker, RawThread};
use core::ptr::NonNull;
use kernel::ffi::{c_char, c_int, c_uint};
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
        let mut err: c_int = 0;
        // SAFETY: `ifname` is NUL-terminated; `kicker`'s record outlives the
        // link (we keep a reference); `err` is writable.
        let raw = unsafe {
            zk_netlink_open(
                ifname.as_char_ptr(),
                ethertype,
                rxq_limit,
                kicker.as_raw(),
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
    /// The frame's bytes after the Ethernet header.
    pub(crate) fn data(&self) -> &[u8] {
        let mut len: c_uint = 0;
        // SAFETY: the skb is ours and linear (the shim linearised it).
        let p = unsafe { zk_skb_data(self.skb.as_ptr(), &mut len) };
        // SAFETY: a linear skb has `len` readable bytes at `data`, valid
        // until the skb is freed (which needs `self`).
        unsafe { core::slice::from_raw_parts(p, len as usize) }
    }

    /// The NAPI context the frame came in on, for [`busy_poll`] (0: none,
    /// or the kernel has no busy polling).
    pub(crate) fn napi_id(&self) -> u32 {
        // SAFETY: the skb is ours.
        unsafe { zk_skb_napi_id(self.skb.as_ptr()) }
    }

    /// The sender's MAC address.
    pub(crate) fn src_mac(&self) -> Mac {
        let mut mac = [0u8; 6];
        // SAFETY: the skb is ours; `mac` has room for 6 bytes.
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
