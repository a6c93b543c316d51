// SPDX-License-Identifier: GPL-2.0

//! Messages as scatter-gather lists of kernel pages.
//!
//! A [`MsgBuf`] holds `len` bytes in order-0 pages (no large contiguous
//! allocation, even for 4 MiB messages), with bounds-checked copies in and
//! out at any offset, and [`MsgBuf::map`], a contiguous view of its pages
//! (a `vmap`) for code that wants the message as one slice without
//! copying it.

use core::marker::PhantomData;
use core::ptr::NonNull;
use kernel::page::{Page, PAGE_SIZE};
use kernel::prelude::*;
use kernel::uaccess::{UserPtr, UserSliceReader};

extern "C" {
    fn zk_page_copy_to_user(
        page: *mut core::ffi::c_void,
        offset: usize,
        dst: *mut core::ffi::c_void,
        len: usize,
    ) -> core::ffi::c_ulong;
    fn zk_vmap_pages(pages: *mut *mut core::ffi::c_void, count: u32) -> *mut u8;
    fn zk_vunmap(addr: *const u8);
}

/// A message buffer.
pub(crate) struct MsgBuf {
    pages: KVec<Page>,
    len: usize,
}

impl MsgBuf {
    /// A zero-filled buffer of `len` bytes.
    pub(crate) fn new(len: usize, flags: kernel::alloc::Flags) -> Result<Self> {
        Self::alloc(len, flags | kernel::alloc::flags::__GFP_ZERO)
    }

    /// A buffer of `len` bytes that is not zero-filled, for a caller that
    /// writes every byte before the buffer is read or sent: a page may hold
    /// an earlier user's data until then.  (Page contents are only ever
    /// copied, so this is not uninitialised memory to Rust.)  treenet
    /// reassembles messages into such buffers: its reassembler completes a
    /// message only after the frames' bytes covered it from offset 0 to
    /// its end without a gap.  Zeroing a page per message cost 6 to 9 % of
    /// a streaming node's time (docs/treenet.md).
    pub(crate) fn for_filling(len: usize, flags: kernel::alloc::Flags) -> Result<Self> {
        Self::alloc(len, flags)
    }

    fn alloc(len: usize, flags: kernel::alloc::Flags) -> Result<Self> {
        let n = len.div_ceil(PAGE_SIZE);
        let mut pages = KVec::with_capacity(n, flags)?;
        for _ in 0..n {
            pages.push(Page::alloc_page(flags)?, flags)?;
        }
        Ok(Self { pages, len })
    }

    /// A buffer holding a copy of `data`.
    pub(crate) fn from_slice(data: &[u8], flags: kernel::alloc::Flags) -> Result<Self> {
        let mut b = Self::for_filling(data.len(), flags)?;
        b.write_at(0, data)?;
        Ok(b)
    }

    /// Length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Memory the buffer holds (its pages), in bytes: what a queue of
    /// messages is charged, so that many small messages, a page each,
    /// weigh what they cost and not only what they carry.
    pub(crate) fn footprint(&self) -> usize {
        self.pages.len() * PAGE_SIZE
    }

    /// Whether the message is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn check(&self, offset: usize, n: usize) -> Result {
        match offset.checked_add(n) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(EINVAL),
        }
    }

    /// Copies `data` into the buffer at `offset`.
    pub(crate) fn write_at(&mut self, mut offset: usize, mut data: &[u8]) -> Result {
        self.check(offset, data.len())?;
        while !data.is_empty() {
            let (page, in_page) = (offset / PAGE_SIZE, offset % PAGE_SIZE);
            let n = data.len().min(PAGE_SIZE - in_page);
            // SAFETY: `data` has `n` readable bytes; `in_page + n` is within
            // the page, which `check` guarantees exists.
            unsafe { self.pages[page].write_raw(data.as_ptr(), in_page, n)? };
            data = &data[n..];
            offset += n;
        }
        Ok(())
    }

    /// Copies `n` bytes from user memory (`reader`, which advances) into
    /// the buffer at `offset`: one copy, straight into the pages.
    pub(crate) fn write_from_user(
        &mut self,
        mut offset: usize,
        reader: &mut UserSliceReader,
        mut n: usize,
    ) -> Result {
        self.check(offset, n)?;
        while n > 0 {
            let (page, in_page) = (offset / PAGE_SIZE, offset % PAGE_SIZE);
            let k = n.min(PAGE_SIZE - in_page);
            // SAFETY: `&mut self`: nothing else reads or writes the page;
            // `in_page + k` is within it, which `check` guarantees exists.
            unsafe { self.pages[page].copy_from_user_slice_raw(reader, in_page, k)? };
            n -= k;
            offset += k;
        }
        Ok(())
    }

    /// Copies `n` bytes at `offset` to user memory at `dst`: one copy,
    /// straight from the pages (`EFAULT` if `dst` is not writable).
    pub(crate) fn read_to_user(&self, mut offset: usize, dst: UserPtr, n: usize) -> Result {
        self.check(offset, n)?;
        let mut done = 0;
        while done < n {
            let (page, in_page) = (offset / PAGE_SIZE, offset % PAGE_SIZE);
            let k = (n - done).min(PAGE_SIZE - in_page);
            // SAFETY: the page exists (`check`) and lives as long as `self`;
            // `in_page + k` is within it; `dst` is a user address, which
            // copy_to_user checks.
            let left = unsafe {
                zk_page_copy_to_user(
                    self.pages[page].as_ptr().cast(),
                    in_page,
                    dst.wrapping_byte_add(done).as_mut_ptr(),
                    k,
                )
            };
            if left != 0 {
                return Err(EFAULT);
            }
            done += k;
            offset += k;
        }
        Ok(())
    }

    /// Copies bytes at `offset` into `out` (filling it).
    pub(crate) fn read_at(&self, mut offset: usize, out: &mut [u8]) -> Result {
        self.check(offset, out.len())?;
        let mut done = 0;
        while done < out.len() {
            let (page, in_page) = (offset / PAGE_SIZE, offset % PAGE_SIZE);
            let n = (out.len() - done).min(PAGE_SIZE - in_page);
            // SAFETY: `out[done..]` has `n` writable bytes; `in_page + n` is
            // within the page, which `check` guarantees exists.
            unsafe { self.pages[page].read_raw(out[done..].as_mut_ptr(), in_page, n)? };
            done += n;
            offset += n;
        }
        Ok(())
    }
}

impl MsgBuf {
    /// The buffer's bytes as one slice, mapped (not copied) into a
    /// contiguous range of kernel addresses; `ENOMEM` when the mapping
    /// cannot be made (fall back to [`MsgBuf::read_at`]).  May sleep.
    ///
    /// Map only a buffer whose bytes were all written (a zero-filled one,
    /// or a reassembled message), or, writable ([`MsgBuf::map_mut`]), one
    /// whose writer sends only the prefix it wrote (treenet's
    /// `treenet_msg_new_unzeroed`): a [`MsgBuf::for_filling`] page may
    /// still hold an earlier user's bytes.  (They are plain bytes to Rust
    /// either way: page contents are initialised memory.)
    pub(crate) fn map(&self) -> Result<MsgMap<'_>> {
        if self.len == 0 {
            return Ok(MsgMap {
                addr: NonNull::dangling(),
                len: 0,
                _buf: PhantomData,
            });
        }
        let n = self.len.div_ceil(PAGE_SIZE);
        let count = u32::try_from(n).map_err(|_| ENOMEM)?;
        let mut ptrs = KVec::with_capacity(n, GFP_KERNEL)?;
        for page in self.pages.iter().take(n) {
            ptrs.push(page.as_ptr().cast::<core::ffi::c_void>(), GFP_KERNEL)?;
        }
        // SAFETY: `ptrs` holds `count` live pages, which `self` keeps
        // allocated for the mapping's lifetime (it borrows `self`); vmap
        // does not keep the array (VM_MAP).
        let addr = unsafe { zk_vmap_pages(ptrs.as_mut_ptr(), count) };
        Ok(MsgMap {
            addr: NonNull::new(addr).ok_or(ENOMEM)?,
            len: self.len,
            _buf: PhantomData,
        })
    }
}

impl MsgBuf {
    /// The buffer's bytes as one writable slice, as [`MsgBuf::map`].
    pub(crate) fn map_mut(&mut self) -> Result<MsgMapMut<'_>> {
        Ok(MsgMapMut {
            map: self.map()?,
            _buf: PhantomData,
        })
    }

    /// Shortens the buffer to `len` bytes (`EINVAL` if longer than it),
    /// freeing the pages past them.
    pub(crate) fn truncate(&mut self, len: usize) -> Result {
        if len > self.len {
            return Err(EINVAL);
        }
        self.pages.truncate(len.div_ceil(PAGE_SIZE));
        self.len = len;
        Ok(())
    }
}

/// A [`MsgBuf`]'s bytes mapped contiguously ([`MsgBuf::map`]); unmapped
/// on drop.
pub(crate) struct MsgMap<'a> {
    addr: NonNull<u8>,
    len: usize,
    _buf: PhantomData<&'a MsgBuf>,
}

// SAFETY: the mapping is of immutable pages that `'a` keeps alive; it may
// be read and unmapped from any thread.
unsafe impl Send for MsgMap<'_> {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for MsgMap<'_> {}

impl MsgMap<'_> {
    /// Gives the mapping up to a raw address (for treenet's C ABI), to be
    /// taken back with [`MsgMap::from_raw`] and unmapped by dropping it.
    pub(crate) fn into_raw(self) -> *const u8 {
        let addr = self.addr.as_ptr().cast_const();
        core::mem::forget(self);
        addr
    }

    /// Takes back a mapping of `len` bytes given up by
    /// [`MsgMap::into_raw`].
    ///
    /// # Safety
    ///
    /// `addr` came from `into_raw` of a mapping of `len` bytes whose buffer
    /// is still alive for `'a`, and is not taken back again.
    pub(crate) unsafe fn from_raw<'a>(addr: *const u8, len: usize) -> MsgMap<'a> {
        MsgMap {
            // SAFETY: per the contract, `addr` came from a `NonNull`.
            addr: unsafe { NonNull::new_unchecked(addr.cast_mut()) },
            len,
            _buf: PhantomData,
        }
    }
}

impl core::ops::Deref for MsgMap<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: `addr` maps `len` bytes of the buffer's pages (or is
        // dangling for `len == 0`), alive and unchanged while `'a` lasts
        // (the buffer is borrowed shared); the bytes were all written
        // (`map`'s contract).
        unsafe { core::slice::from_raw_parts(self.addr.as_ptr(), self.len) }
    }
}

impl Drop for MsgMap<'_> {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: `addr` is a live vmap made by `MsgBuf::map`, not
            // unmapped yet; nothing uses it after `self`.
            unsafe { zk_vunmap(self.addr.as_ptr()) };
        }
    }
}

/// A [`MsgBuf`]'s bytes mapped contiguously and writable
/// ([`MsgBuf::map_mut`]); unmapped on drop.
pub(crate) struct MsgMapMut<'a> {
    map: MsgMap<'a>,
    _buf: PhantomData<&'a mut MsgBuf>,
}

impl<'a> MsgMapMut<'a> {
    /// Gives the mapping up to a raw address (for treenet's C ABI), to be
    /// taken back with [`MsgMapMut::from_raw`] and unmapped by dropping it.
    pub(crate) fn into_raw(self) -> *mut u8 {
        self.map.into_raw().cast_mut()
    }

    /// Takes back a mapping of `len` bytes given up by
    /// [`MsgMapMut::into_raw`].
    ///
    /// # Safety
    ///
    /// `addr` came from `into_raw` of a mapping of `len` bytes whose buffer
    /// is still alive and not otherwise accessed for `'a`, and is not taken
    /// back again.
    pub(crate) unsafe fn from_raw(addr: *mut u8, len: usize) -> MsgMapMut<'a> {
        MsgMapMut {
            // SAFETY: per the contract.
            map: unsafe { MsgMap::from_raw(addr, len) },
            _buf: PhantomData,
        }
    }
}

impl core::ops::Deref for MsgMapMut<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.map
    }
}

impl core::ops::DerefMut for MsgMapMut<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `MsgMap::deref`; the buffer is borrowed exclusively
        // for `'a`, so nothing else reads or writes its pages meanwhile.
        unsafe { core::slice::from_raw_parts_mut(self.map.addr.as_ptr(), self.map.len) }
    }
}
