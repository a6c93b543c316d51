// SPDX-License-Identifier: GPL-2.0

//! Messages as scatter-gather lists of kernel pages.
//!
//! A [`MsgBuf`] holds `len` bytes in order-0 pages (no large contiguous
//! allocation, even for 4 MiB messages), with bounds-checked copies in and
//! out at any offset.

use kernel::page::{Page, PAGE_SIZE};
use kernel::prelude::*;

/// A message buffer.
pub(crate) struct MsgBuf {
    pages: KVec<Page>,
    len: usize,
}

impl MsgBuf {
    /// A zero-filled buffer of `len` bytes.
    pub(crate) fn new(len: usize, flags: kernel::alloc::Flags) -> Result<Self> {
        let n = len.div_ceil(PAGE_SIZE);
        let mut pages = KVec::with_capacity(n, flags)?;
        for _ in 0..n {
            pages.push(
                Page::alloc_page(flags | kernel::alloc::flags::__GFP_ZERO)?,
                flags,
            )?;
        }
        Ok(Self { pages, len })
    }

    /// A buffer holding a copy of `data`.
    pub(crate) fn from_slice(data: &[u8], flags: kernel::alloc::Flags) -> Result<Self> {
        let mut b = Self::new(data.len(), flags)?;
        b.write_at(0, data)?;
        Ok(b)
    }

    /// Length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
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
