// SPDX-License-Identifier: GPL-2.0

//! A network device whose packets the owner moves (C side:
//! `shim/netdev.c`).
//!
//! [`NetDev::register`] creates an IP device without a link-layer header
//! (like a tun device): what the stack transmits is queued by the C side
//! and the owner's [`NetDevOps::kick`] is called; the owner's thread takes
//! the packets with [`NetDev::dequeue`] in process context, sends them its
//! own way and wakes the queue ([`NetDev::wake_queue`]) once it has room.
//! Packets the owner receives go up the stack with [`NetDev::receive`].
//! Dropping the device unregisters and frees it.
//!
//! The device offloads checksums: a packet may leave the stack with its
//! transport checksum unfinished (as for a NIC that fills it in).  The
//! owner finishes it ([`SkBuff::finish_checksum`]) for any packet that
//! leaves through a router; the receiving end of the owner's transport
//! takes packets as verified (its frames are checksummed).

use core::ptr::NonNull;
use kernel::ffi::{c_char, c_int, c_uint, c_void};
use kernel::{prelude::*, str::CStr, sync::Arc};

#[repr(C)]
struct RawNetDev {
    _private: [u8; 0],
}

#[repr(C)]
struct RawSkb {
    _private: [u8; 0],
}

/// The C side's `struct zk_netdev_ops`.
#[repr(C)]
struct RawOps {
    kick: unsafe extern "C" fn(*mut c_void),
    stats: unsafe extern "C" fn(*mut c_void, *mut Stats64),
}

extern "C" {
    fn zk_netdev_register(
        name: *const c_char,
        mtu: c_uint,
        tx_limit: c_uint,
        ops: *const RawOps,
        ctx: *mut c_void,
        err: *mut c_int,
    ) -> *mut RawNetDev;
    fn zk_netdev_unregister(nd: *mut RawNetDev);
    fn zk_netdev_dequeue(nd: *mut RawNetDev) -> *mut RawSkb;
    fn zk_netdev_queued(nd: *const RawNetDev) -> c_uint;
    fn zk_netdev_wake_queue(nd: *mut RawNetDev);
    fn zk_netdev_set_carrier(nd: *mut RawNetDev, on: bool);
    fn zk_netdev_running(nd: *const RawNetDev) -> bool;
    fn zk_netdev_name(nd: *mut RawNetDev, buf: *mut c_char);
    fn zk_netdev_rx(nd: *mut RawNetDev, data: *const u8, len: c_uint) -> c_int;
    fn zk_skb_len(skb: *const RawSkb) -> c_uint;
    fn zk_skb_copy(skb: *const RawSkb, offset: c_uint, to: *mut u8, len: c_uint) -> c_int;
    fn zk_skb_finish_checksum(skb: *mut RawSkb) -> c_int;
    fn zk_skb_drop(skb: *mut RawSkb);
    fn zk_skb_consume(skb: *mut RawSkb);
}

/// The largest MTU a device takes (`ZK_NETDEV_MAX_MTU`: IPv4's largest
/// packet).
pub(crate) const MAX_MTU: u32 = 65535;

/// The smallest MTU a device takes (IPv6's minimum).
pub(crate) const MIN_MTU: u32 = 1280;

/// Bytes of a device name, its NUL included (`IFNAMSIZ`).
pub(crate) const NAME_BYTES: usize = 16;

/// A device's counters, as `ip -s link` shows them (the C side's
/// `struct zk_netdev_stats`).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct Stats64 {
    /// Packets handed to the stack.
    pub(crate) rx_packets: u64,
    /// Packets sent.
    pub(crate) tx_packets: u64,
    /// Bytes handed to the stack.
    pub(crate) rx_bytes: u64,
    /// Bytes sent.
    pub(crate) tx_bytes: u64,
    /// Received packets refused or lost.
    pub(crate) rx_dropped: u64,
    /// Packets to send that were refused or lost (those dropped from the
    /// queue when the device went down are added by the C side).
    pub(crate) tx_dropped: u64,
    /// Receive errors.
    pub(crate) rx_errors: u64,
    /// Transmit errors.
    pub(crate) tx_errors: u64,
}

/// What the owner of a [`NetDev`] does for it.
pub(crate) trait NetDevOps: Send + Sync + 'static {
    /// Packets wait in the device's transmit queue: wake whoever takes
    /// them with [`NetDev::dequeue`].  Called from `ndo_start_xmit`, with
    /// bottom halves disabled: must not sleep or allocate.
    fn kick(&self);
    /// The device's counters now.  Any context (a reader under RCU, or
    /// with bottom halves disabled): must not sleep.
    fn stats(&self) -> Stats64;
}

/// How to set a device up.
#[derive(Clone, Copy)]
pub(crate) struct Config {
    /// The MTU ([`MIN_MTU`]..=[`MAX_MTU`]; users may change it within
    /// that range later).
    pub(crate) mtu: u32,
    /// The transmit queue stops once this many packets wait for the
    /// owner (at least 1).
    pub(crate) tx_queue_limit: u32,
}

/// A registered network device; unregistered and freed on drop.
pub(crate) struct NetDev<T: NetDevOps> {
    raw: NonNull<RawNetDev>,
    /// The callbacks' context: kept alive until the device is gone.
    ops: Arc<T>,
}

// SAFETY: the shim's functions on a registered device may be called from
// any thread (the transmit queue has its own lock, carrier and queue
// state are atomic bit operations); `T` is `Send + Sync`.
unsafe impl<T: NetDevOps> Send for NetDev<T> {}
// SAFETY: as above; every method takes `&self` and is thread-safe in C.
unsafe impl<T: NetDevOps> Sync for NetDev<T> {}

/// # Safety
///
/// `ctx` must be the `Arc<T>` pointer a live [`NetDev<T>`] registered.
unsafe extern "C" fn kick_trampoline<T: NetDevOps>(ctx: *mut c_void) {
    // SAFETY: `ctx` points to the `T` the `NetDev` keeps alive until the
    // device is unregistered, after which no callback runs.
    let ops = unsafe { &*ctx.cast_const().cast::<T>() };
    ops.kick();
}

/// # Safety
///
/// As [`kick_trampoline`]; `out` must be valid for a write of a
/// [`Stats64`].
unsafe extern "C" fn stats_trampoline<T: NetDevOps>(ctx: *mut c_void, out: *mut Stats64) {
    // SAFETY: as in `kick_trampoline`.
    let ops = unsafe { &*ctx.cast_const().cast::<T>() };
    // SAFETY: the C side passes a writable `struct zk_netdev_stats`, whose
    // layout `Stats64` has.
    unsafe { out.write(ops.stats()) };
}

impl<T: NetDevOps> NetDev<T> {
    const OPS: RawOps = RawOps {
        kick: kick_trampoline::<T>,
        stats: stats_trampoline::<T>,
    };

    /// Registers device `name` (a `%d` in it is numbered by the kernel)
    /// with `ops` as its owner's callbacks.  The device starts down and
    /// without carrier.  `EINVAL` for a bad name or configuration,
    /// `EEXIST` if the name is taken.  Process context (takes RTNL).
    pub(crate) fn register(name: &CStr, config: Config, ops: Arc<T>) -> Result<Self> {
        let ctx = Arc::as_ptr(&ops).cast_mut().cast::<c_void>();
        let mut err: c_int = 0;
        // SAFETY: `name` is NUL-terminated (copied by the kernel); `OPS`
        // is valid for the call (the shim copies it) and its functions are
        // `T`'s trampolines; `ctx` is the `T` they expect, valid while
        // `ops` lives, which `self` keeps until `drop` unregistered the
        // device; `err` is writable.
        let raw = unsafe {
            zk_netdev_register(
                name.as_char_ptr(),
                config.mtu,
                config.tx_queue_limit,
                &Self::OPS,
                ctx,
                &mut err,
            )
        };
        match NonNull::new(raw) {
            Some(raw) => Ok(Self { raw, ops }),
            None => Err(Error::from_errno(err)),
        }
    }

    /// The owner's callbacks.
    pub(crate) fn ops(&self) -> &Arc<T> {
        &self.ops
    }

    /// Takes the oldest packet waiting for transmission.
    pub(crate) fn dequeue(&self) -> Option<SkBuff> {
        // SAFETY: `raw` is live while `self` is.
        let skb = unsafe { zk_netdev_dequeue(self.raw.as_ptr()) };
        NonNull::new(skb).map(|raw| SkBuff { raw })
    }

    /// How many packets wait for transmission.
    pub(crate) fn queued(&self) -> usize {
        // SAFETY: `raw` is live while `self` is.
        unsafe { zk_netdev_queued(self.raw.as_ptr()) as usize }
    }

    /// Restarts the transmit queue if it was stopped (it stops once
    /// [`Config::tx_queue_limit`] packets wait) and the device is up.
    pub(crate) fn wake_queue(&self) {
        // SAFETY: `raw` is live while `self` is.
        unsafe { zk_netdev_wake_queue(self.raw.as_ptr()) }
    }

    /// Says whether the link is there (carrier on) or not.
    pub(crate) fn set_carrier(&self, on: bool) {
        // SAFETY: `raw` is live while `self` is.
        unsafe { zk_netdev_set_carrier(self.raw.as_ptr(), on) }
    }

    /// Whether the device is up (`ip link set ... up`).
    pub(crate) fn is_up(&self) -> bool {
        // SAFETY: `raw` is live while `self` is.
        unsafe { zk_netdev_running(self.raw.as_ptr()) }
    }

    /// The device's name now (users may rename it).  Takes RTNL.
    pub(crate) fn name(&self) -> DeviceName {
        let mut bytes = [0u8; NAME_BYTES];
        // SAFETY: `raw` is live; `bytes` has room for `IFNAMSIZ` bytes.
        unsafe { zk_netdev_name(self.raw.as_ptr(), bytes.as_mut_ptr().cast()) };
        DeviceName { bytes }
    }

    /// Hands a received IP packet (starting with its IP header) to the
    /// stack, its checksums taken as verified.  `EINVAL`: neither IPv4
    /// nor IPv6; `ENETDOWN`: the device is down; `ENOMEM`; `ENOBUFS`: this
    /// CPU's receive backlog is full.  Process context: may sleep for
    /// memory.
    pub(crate) fn receive(&self, packet: &[u8]) -> Result {
        let len = c_uint::try_from(packet.len()).map_err(|_| EMSGSIZE)?;
        // SAFETY: `raw` is live; `packet` is valid for `len` reads, copied
        // before the call returns.
        let rc = unsafe { zk_netdev_rx(self.raw.as_ptr(), packet.as_ptr(), len) };
        if rc < 0 {
            return Err(Error::from_errno(rc));
        }
        Ok(())
    }
}

impl<T: NetDevOps> Drop for NetDev<T> {
    fn drop(&mut self) {
        // SAFETY: `raw` came from `zk_netdev_register` and is not used
        // again; when this returns, no callback runs, so `ops` may go.
        unsafe { zk_netdev_unregister(self.raw.as_ptr()) }
    }
}

/// A device name, as [`NetDev::name`] read it.
pub(crate) struct DeviceName {
    bytes: [u8; NAME_BYTES],
}

impl DeviceName {
    /// The name's bytes (without the NUL).
    pub(crate) fn as_bytes(&self) -> &[u8] {
        let end = self
            .bytes
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(NAME_BYTES);
        &self.bytes[..end]
    }
}

/// A packet taken from a [`NetDev`]'s transmit queue, owned: dropped
/// (`kfree_skb`, seen by drop monitors) unless [`SkBuff::consume`]d.
pub(crate) struct SkBuff {
    raw: NonNull<RawSkb>,
}

// SAFETY: a dequeued skb is exclusively ours and may be used and freed on
// any thread.
unsafe impl Send for SkBuff {}

impl SkBuff {
    /// The packet's length in bytes.
    pub(crate) fn len(&self) -> usize {
        // SAFETY: the skb is live and ours.
        unsafe { zk_skb_len(self.raw.as_ptr()) as usize }
    }

    /// Whether the packet is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies `buf.len()` bytes of the packet from `offset` into `buf`,
    /// wherever they lie (the head, page fragments, a fragment list):
    /// contiguous bytes without linearising, which for a large packet
    /// would be a high-order atomic allocation.  `EINVAL` past the end.
    pub(crate) fn copy_to(&self, offset: usize, buf: &mut [u8]) -> Result {
        let off = c_uint::try_from(offset).map_err(|_| EINVAL)?;
        let len = c_uint::try_from(buf.len()).map_err(|_| EINVAL)?;
        // SAFETY: the skb is live and ours; `buf` is valid for `len`
        // writes; the shim checks the range against the packet.
        let rc = unsafe { zk_skb_copy(self.raw.as_ptr(), off, buf.as_mut_ptr(), len) };
        if rc < 0 {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// Fills in a transport checksum the stack left to the device, if
    /// any (`skb_checksum_help`): for a packet that leaves through a
    /// router, which forwards it as it is.  `ENOMEM` (unsharing a cloned
    /// packet allocates).
    pub(crate) fn finish_checksum(&mut self) -> Result {
        // SAFETY: the skb is live and ours (`&mut`: nobody reads it now).
        let rc = unsafe { zk_skb_finish_checksum(self.raw.as_ptr()) };
        if rc < 0 {
            return Err(Error::from_errno(rc));
        }
        Ok(())
    }

    /// Frees a packet that was sent (`consume_skb`: not a drop).
    pub(crate) fn consume(self) {
        let raw = self.raw;
        core::mem::forget(self);
        // SAFETY: the skb is ours and not used again (`self` is forgotten).
        unsafe { zk_skb_consume(raw.as_ptr()) }
    }
}

impl Drop for SkBuff {
    fn drop(&mut self) {
        // SAFETY: the skb is ours and not used again.
        unsafe { zk_skb_drop(self.raw.as_ptr()) }
    }
}
