// SPDX-License-Identifier: GPL-2.0

//! User mappings of a device whose pages the module fills at fault time.
//!
//! 7.3's `kernel::mm` can insert pages into a mapping at `mmap` time but
//! has no fault handlers.  This file gives a device three things:
//!
//! * [`KernelPage`]: a zero-filled page of kernel memory that a mapping
//!   may show to user space.
//! * [`MappingSpace`]: one address space for every file of the device, so
//!   the module can take a page away from every process that maps it
//!   ([`MappingSpace::zap`]), whichever device node they opened.
//! * [`FaultHandler`] and [`setup_vma`]: a shared mapping whose faults
//!   the handler answers by mapping a [`KernelPage`], read-only or
//!   writable; a write to a read-only page asks the handler again
//!   ([`FaultHandler::mkwrite`]).
//!
//! The pages are mapped raw (`VM_PFNMAP`): the mapping holds no reference
//! on them, so a module must zap a page's mappings before it frees or
//! reuses the page.  That is the contract of [`Fault::map`].

use core::ptr::NonNull;

use kernel::bindings;
use kernel::ffi::{c_int, c_uint, c_ulong, c_void};
use kernel::fs::File;
use kernel::mm::virt::VmaNew;
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow};

// The mm structures embed types bindgen marks as not FFI-safe (zero-sized
// fields); only pointers to them cross, which C declares the same way.
#[allow(improper_ctypes)]
extern "C" {
    fn zk_page_alloc() -> *mut c_void;
    fn zk_page_free(addr: *mut c_void);
    fn zk_mapping_alloc() -> *mut bindings::inode;
    fn zk_mapping_free(inode: *mut bindings::inode);
    fn zk_mapping_attach(file: *mut bindings::file, inode: *mut bindings::inode);
    fn zk_mapping_zap(inode: *mut bindings::inode, first: c_ulong, count: c_ulong);
    fn zk_vm_setup(
        vma: *mut bindings::vm_area_struct,
        ops: *const bindings::vm_operations_struct,
        owner: *mut c_void,
    ) -> c_int;
    fn zk_vm_owner(vma: *mut bindings::vm_area_struct) -> *mut c_void;
    fn zk_vmf_owner(vmf: *mut bindings::vm_fault) -> *mut c_void;
    fn zk_vmf_pgoff(vmf: *mut bindings::vm_fault) -> c_ulong;
    fn zk_vmf_is_write(vmf: *mut bindings::vm_fault) -> bool;
    fn zk_vmf_map(vmf: *mut bindings::vm_fault, addr: *mut c_void, writable: bool) -> c_uint;
    fn zk_vm_fault_error(err: c_int) -> c_uint;
}

/// Bytes of a [`KernelPage`].
pub(crate) const PAGE_SIZE: usize = kernel::page::PAGE_SIZE;

/// One page of directly mapped kernel memory, zero-filled when allocated.
pub(crate) struct KernelPage {
    addr: NonNull<u8>,
}

// SAFETY: the page is plain memory owned by this value; `&KernelPage` only
// reads it, `&mut KernelPage` is needed to write it.
unsafe impl Send for KernelPage {}
// SAFETY: as above.
unsafe impl Sync for KernelPage {}

impl KernelPage {
    /// A new zero-filled page (`ENOMEM` if none is free).
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: no preconditions; NULL when out of memory.
        let addr = unsafe { zk_page_alloc() };
        Ok(Self {
            addr: NonNull::new(addr.cast()).ok_or(ENOMEM)?,
        })
    }
}

impl core::ops::Deref for KernelPage {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `addr` is a live page of `PAGE_SIZE` bytes owned by
        // `self`, plain data (any value is valid).  A writable user
        // mapping may change it until zapped: whoever needs the bytes
        // stable zaps first (see `MappingSpace::zap`).
        unsafe { core::slice::from_raw_parts(self.addr.as_ptr(), PAGE_SIZE) }
    }
}

impl core::ops::DerefMut for KernelPage {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` excludes other kernel
        // references.
        unsafe { core::slice::from_raw_parts_mut(self.addr.as_ptr(), PAGE_SIZE) }
    }
}

impl Drop for KernelPage {
    fn drop(&mut self) {
        // SAFETY: allocated by `zk_page_alloc`, freed once.
        unsafe { zk_page_free(self.addr.as_ptr().cast()) };
    }
}

/// The address space every file of a device maps through: the mapping of
/// an anonymous inode of its own.
pub(crate) struct MappingSpace {
    ptr: NonNull<bindings::inode>,
}

// SAFETY: the address space is only used through kernel functions that
// take its own locks.
unsafe impl Send for MappingSpace {}
// SAFETY: as above.
unsafe impl Sync for MappingSpace {}

impl MappingSpace {
    /// A new, empty address space.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: no preconditions; NULL on failure (out of memory).
        let ptr = unsafe { zk_mapping_alloc() };
        Ok(Self {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
        })
    }

    /// Makes `file`'s future mappings part of this address space (call it
    /// when the file is opened, before it can be mapped).
    pub(crate) fn attach(&self, file: &File) {
        // SAFETY: `file` is live; the address space outlives every file of
        // the device (it is dropped when the module goes, and an open file
        // keeps the module).
        unsafe { zk_mapping_attach(file.as_ptr(), self.ptr.as_ptr()) };
    }

    /// Takes pages `first .. first + count` (page offsets in the file)
    /// away from every process that maps them; the next access faults.
    pub(crate) fn zap(&self, first: usize, count: usize) {
        // SAFETY: the address space is live; the function takes its locks.
        unsafe { zk_mapping_zap(self.ptr.as_ptr(), first as c_ulong, count as c_ulong) };
    }
}

impl Drop for MappingSpace {
    fn drop(&mut self) {
        // SAFETY: allocated by `zk_mapping_alloc`; no file uses it any
        // more (see `attach`).
        unsafe { zk_mapping_free(self.ptr.as_ptr()) };
    }
}

/// A page fault in a mapping made by [`setup_vma`].
pub(crate) struct Fault {
    vmf: *mut bindings::vm_fault,
}

/// Proof that a fault handler mapped a page (or why it could not).
pub(crate) struct Mapped(c_uint);

impl Fault {
    /// The faulting page's offset in the file, in pages.
    pub(crate) fn page_index(&self) -> usize {
        // SAFETY: `vmf` is the live fault being handled.
        unsafe { zk_vmf_pgoff(self.vmf) as usize }
    }

    /// Whether the access that faulted is a write.
    pub(crate) fn is_write(&self) -> bool {
        // SAFETY: as above.
        unsafe { zk_vmf_is_write(self.vmf) }
    }

    /// Maps `page` where the fault happened, writable or read-only (a
    /// later write to a read-only page calls [`FaultHandler::mkwrite`]).
    ///
    /// # Safety
    ///
    /// `page` must not be freed or reused while it is mapped: the caller
    /// zaps it ([`MappingSpace::zap`], in every address space it may be
    /// mapped through) first.
    pub(crate) unsafe fn map(&self, page: &KernelPage, writable: bool) -> Mapped {
        // SAFETY: `vmf` is the live fault; the page stays until zapped
        // (the caller's promise).
        Mapped(unsafe { zk_vmf_map(self.vmf, page.addr.as_ptr().cast(), writable) })
    }
}

/// Answers the page faults of a shared mapping.
pub(crate) trait FaultHandler: Send + Sync + Sized {
    /// A page with no mapping is accessed: map one with [`Fault::map`].
    /// An error gives the task `SIGBUS` (`ENOMEM`: out of memory; `EINTR`:
    /// nothing happens and the access runs again after the signal).
    fn fault(&self, fault: &Fault) -> Result<Mapped>;

    /// A write to page `page_index`, mapped read-only: `Ok` makes the
    /// mapping writable (unless it was zapped meanwhile; then the write
    /// faults again).  Errors as in [`FaultHandler::fault`].
    fn mkwrite(&self, page_index: usize) -> Result;
}

/// Makes `vma` (being set up by `mmap`) a shared mapping whose faults
/// `handler` answers (each part of the mapping, after a split or a fork,
/// keeps a reference on it).  `EINVAL` for a private mapping.
pub(crate) fn setup_vma<T: FaultHandler>(vma: &VmaNew, handler: Arc<T>) -> Result {
    let owner = Arc::into_raw(handler);
    // SAFETY: `vma` is being set up by `mmap`; `VM_OPS` is a static table
    // whose callbacks expect `owner` to be an `Arc<T>` pointer, which it
    // is, and which `close` gives back.
    let r = unsafe { zk_vm_setup(vma.as_ptr(), &VmOps::<T>::VM_OPS, owner.cast_mut().cast()) };
    if r != 0 {
        // SAFETY: not stored anywhere: the reference is still ours.
        drop(unsafe { Arc::from_raw(owner) });
        return Err(Error::from_errno(r));
    }
    Ok(())
}

struct VmOps<T>(core::marker::PhantomData<T>);

impl<T: FaultHandler> VmOps<T> {
    const VM_OPS: bindings::vm_operations_struct = bindings::vm_operations_struct {
        open: Some(Self::open),
        close: Some(Self::close),
        fault: Some(Self::fault),
        pfn_mkwrite: Some(Self::pfn_mkwrite),
        // SAFETY: all-zero is a valid `vm_operations_struct` (no callback).
        ..unsafe { core::mem::zeroed() }
    };

    /// # Safety
    ///
    /// `vma` is a mapping set up by [`setup_vma`] for `T`.
    unsafe fn handler<'a>(vma: *mut bindings::vm_area_struct) -> ArcBorrow<'a, T> {
        // SAFETY: the private data is an `Arc<T>` pointer that lives until
        // `close` (the caller's promise).
        unsafe { ArcBorrow::from_raw(zk_vm_owner(vma).cast()) }
    }

    /// A copy of the mapping (split, fork): one more reference.
    ///
    /// # Safety
    ///
    /// Called by the kernel for a copy of a mapping set up for `T`.
    unsafe extern "C" fn open(vma: *mut bindings::vm_area_struct) {
        // SAFETY: called by the kernel for a copy of one of our mappings.
        let h: Arc<T> = unsafe { Self::handler(vma) }.into();
        let _ = Arc::into_raw(h);
    }

    /// The mapping goes: its reference goes.
    ///
    /// # Safety
    ///
    /// Called by the kernel, once, for a mapping set up for `T`.
    unsafe extern "C" fn close(vma: *mut bindings::vm_area_struct) {
        // SAFETY: the private data is the mapping's own `Arc<T>` reference,
        // given back once, here.
        drop(unsafe { Arc::<T>::from_raw(zk_vm_owner(vma).cast()) });
    }

    /// A fault with no page mapped.
    ///
    /// # Safety
    ///
    /// Called by the kernel for a fault in a mapping set up for `T`.
    unsafe extern "C" fn fault(vmf: *mut bindings::vm_fault) -> bindings::vm_fault_t {
        // SAFETY: a fault in one of our mappings: its private data is the
        // handler, alive while the mapping is.
        let h = unsafe { ArcBorrow::<T>::from_raw(zk_vmf_owner(vmf).cast()) };
        match h.fault(&Fault { vmf }) {
            Ok(Mapped(code)) => code,
            // SAFETY: no preconditions.
            Err(e) => unsafe { zk_vm_fault_error(e.to_errno()) },
        }
    }

    /// A write to a page mapped read-only.
    ///
    /// # Safety
    ///
    /// Called by the kernel for a fault in a mapping set up for `T`.
    unsafe extern "C" fn pfn_mkwrite(vmf: *mut bindings::vm_fault) -> bindings::vm_fault_t {
        // SAFETY: as in `fault`.
        let h = unsafe { ArcBorrow::<T>::from_raw(zk_vmf_owner(vmf).cast()) };
        // SAFETY: `vmf` is the live fault.
        let index = unsafe { zk_vmf_pgoff(vmf) } as usize;
        match h.mkwrite(index) {
            Ok(()) => 0,
            // SAFETY: no preconditions.
            Err(e) => unsafe { zk_vm_fault_error(e.to_errno()) },
        }
    }
}
