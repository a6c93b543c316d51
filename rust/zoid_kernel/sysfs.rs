// SPDX-License-Identifier: GPL-2.0

//! sysfs directories with typed attributes.
//!
//! A [`SysfsDir`] is a directory under `/sys/kernel/` whose files are
//! described by [`Attribute`]s: a name, a `show` function and, for writable
//! knobs, a `store` function.  Both receive the directory's shared context
//! (an `Arc<T>`), so a knob reads and writes the module's live state.
//!
//! ```ignore
//! static ATTRS: [Attribute<State>; 1] = [Attribute::ro(c"version", show_version)];
//! let dir = SysfsDir::new(c"treenet", state, &ATTRS)?;
//! ```
//!
//! Dropping the directory removes its files (waiting for running `show` and
//! `store` calls to finish) before the context and the attributes are freed.

use core::{fmt, ptr::NonNull};
use kernel::{bindings, prelude::*, sync::Arc};

/// Prints an attribute's value into the page sysfs hands to `show`.
pub(crate) struct SysfsWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> SysfsWriter<'a> {
    /// A writer over `buf`.
    pub(crate) fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, len: 0 }
    }

    /// What has been written so far.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// Bytes left in the page.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.len
    }

    /// Appends raw bytes (a path, say); `EOVERFLOW` beyond the page.
    pub(crate) fn write_bytes(&mut self, b: &[u8]) -> Result {
        let end = self.len.checked_add(b.len()).ok_or(EOVERFLOW)?;
        let dst = self.buf.get_mut(self.len..end).ok_or(EOVERFLOW)?;
        dst.copy_from_slice(b);
        self.len = end;
        Ok(())
    }

    /// Formats into the page, so `writeln!(w, ...)?` works in `show`
    /// functions.  Output beyond the page fails with `EOVERFLOW`.
    pub(crate) fn write_fmt(&mut self, args: fmt::Arguments<'_>) -> Result {
        fmt::Write::write_fmt(self, args).map_err(|_| EOVERFLOW)
    }
}

impl fmt::Write for SysfsWriter<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(fmt::Error)?;
        let dst = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Parses what a user wrote to a knob as an unsigned integer (decimal, or hex
/// with `0x`), ignoring surrounding whitespace and a trailing newline.
pub(crate) fn parse_u64(input: &[u8]) -> Result<u64> {
    let s = core::str::from_utf8(input).map_err(|_| EINVAL)?.trim();
    let (digits, radix) = match s.strip_prefix("0x") {
        Some(hex) => (hex, 16),
        None => (s, 10),
    };
    u64::from_str_radix(digits, radix).map_err(|_| EINVAL)
}

/// Shows an attribute: writes its current value.
pub(crate) type ShowFn<T> = fn(&T, &mut SysfsWriter<'_>) -> Result;
/// Stores into an attribute: parses and applies what a user wrote.
pub(crate) type StoreFn<T> = fn(&T, &[u8]) -> Result;

/// The description of one file of a [`SysfsDir`].
pub(crate) struct Attribute<T: 'static> {
    name: &'static CStr,
    show: ShowFn<T>,
    store: Option<StoreFn<T>>,
    /// Readable by root only (mode 0600 or 0400).
    secret: bool,
}

impl<T> Attribute<T> {
    /// A read-only file (mode 0444).
    pub(crate) const fn ro(name: &'static CStr, show: ShowFn<T>) -> Self {
        Self {
            name,
            show,
            store: None,
            secret: false,
        }
    }

    /// A knob readable by all and writable by root (mode 0644).
    pub(crate) const fn rw(name: &'static CStr, show: ShowFn<T>, store: StoreFn<T>) -> Self {
        Self {
            name,
            show,
            store: Some(store),
            secret: false,
        }
    }

    /// A knob only root may read or write (mode 0600): for secrets, and
    /// for anything whose value should not be visible to other users.
    pub(crate) const fn secret(name: &'static CStr, show: ShowFn<T>, store: StoreFn<T>) -> Self {
        Self {
            name,
            show,
            store: Some(store),
            secret: true,
        }
    }
}

/// The C-visible attribute, with what the trampolines need to find the Rust
/// side.  `kattr` must stay the first field: the trampolines turn the
/// `kobj_attribute` pointer sysfs gives them back into a `RawAttribute<T>`.
#[repr(C)]
struct RawAttribute<T: 'static> {
    kattr: bindings::kobj_attribute,
    ctx: *const T,
    show: ShowFn<T>,
    store: Option<StoreFn<T>>,
}

/// A directory `/sys/kernel/<name>/` whose files are [`Attribute`]s of a
/// shared context `T`.
pub(crate) struct SysfsDir<T: Send + Sync + 'static> {
    kobj: NonNull<bindings::kobject>,
    // The group and the attributes are referenced by sysfs until `drop`
    // removes the group: they are heap-allocated once and never moved.
    group: KBox<bindings::attribute_group>,
    attrs: KVec<RawAttribute<T>>,
    attr_ptrs: KVec<*mut bindings::attribute>,
    ctx: Arc<T>,
}

// SAFETY: the kobject is reference counted and sysfs may be used from any
// thread; the raw pointers only point into memory this value owns; `T` is
// `Send + Sync`.
unsafe impl<T: Send + Sync> Send for SysfsDir<T> {}
// SAFETY: `SysfsDir` has no interior mutability of its own; see `Send`.
unsafe impl<T: Send + Sync> Sync for SysfsDir<T> {}

impl<T: Send + Sync + 'static> SysfsDir<T> {
    /// Creates `/sys/kernel/<name>/` with one file per attribute.
    ///
    /// Fails with `EEXIST` if the directory exists (for instance, the same
    /// module loaded under another name).
    pub(crate) fn new(name: &CStr, ctx: Arc<T>, attrs: &[Attribute<T>]) -> Result<Self> {
        let mut raw = KVec::with_capacity(attrs.len(), GFP_KERNEL)?;
        for a in attrs {
            // SAFETY: `kobj_attribute` is plain C data: all-zero is a valid
            // value (null name, no callbacks, no lockdep key).
            let mut kattr: bindings::kobj_attribute = unsafe { core::mem::zeroed() };
            kattr.attr.name = a.name.as_char_ptr();
            kattr.attr.mode = match (a.store.is_some(), a.secret) {
                (true, true) => 0o600,
                (false, true) => 0o400,
                (true, false) => 0o644,
                (false, false) => 0o444,
            };
            // sysfs needs a static lockdep key for attributes that are not
            // themselves static (`sysfs_attr_init()` in C).
            #[cfg(CONFIG_DEBUG_LOCK_ALLOC)]
            {
                kattr.attr.key = kernel::static_lock_class!().as_ptr();
            }
            kattr.__bindgen_anon_1.show = Some(show_trampoline::<T>);
            if a.store.is_some() {
                kattr.__bindgen_anon_2.store = Some(store_trampoline::<T>);
            }
            raw.push(
                RawAttribute {
                    kattr,
                    ctx: &*ctx,
                    show: a.show,
                    store: a.store,
                },
                GFP_KERNEL,
            )?;
        }

        let mut attr_ptrs = KVec::with_capacity(raw.len() + 1, GFP_KERNEL)?;
        for r in raw.iter_mut() {
            attr_ptrs.push(&raw mut r.kattr.attr, GFP_KERNEL)?;
        }
        attr_ptrs.push(core::ptr::null_mut(), GFP_KERNEL)?;

        // SAFETY: all-zero is a valid `attribute_group` (no name: the files go
        // straight into the directory).
        let mut group: KBox<bindings::attribute_group> =
            KBox::new(unsafe { core::mem::zeroed() }, GFP_KERNEL)?;
        group.__bindgen_anon_2.attrs = attr_ptrs.as_mut_ptr();

        // SAFETY: `name` is a valid C string (copied by the kobject core) and
        // `kernel_kobj` is the `/sys/kernel` kobject, valid while the kernel runs.
        let kobj =
            unsafe { bindings::kobject_create_and_add(name.as_char_ptr(), bindings::kernel_kobj) };
        let kobj = NonNull::new(kobj).ok_or(EEXIST)?;

        // SAFETY: `kobj` is live; `group`, its attribute array and the
        // attributes stay allocated and unmoved until `drop` removes the group.
        let ret = unsafe { bindings::sysfs_create_group(kobj.as_ptr(), &*group) };
        if ret != 0 {
            // SAFETY: drops the reference `kobject_create_and_add` returned.
            unsafe { bindings::kobject_put(kobj.as_ptr()) };
            return Err(Error::from_errno(ret));
        }
        Ok(Self {
            kobj,
            group,
            attrs: raw,
            attr_ptrs,
            ctx,
        })
    }

    /// The context the attributes see.
    pub(crate) fn context(&self) -> &Arc<T> {
        &self.ctx
    }
}

impl<T: Send + Sync + 'static> Drop for SysfsDir<T> {
    fn drop(&mut self) {
        // SAFETY: the group was created on this kobject in `new`. Removal
        // waits for running show/store calls, so none can touch `attrs` or
        // `ctx` after it returns.
        unsafe { bindings::sysfs_remove_group(self.kobj.as_ptr(), &*self.group) };
        // SAFETY: drops the reference `kobject_create_and_add` returned.
        unsafe { bindings::kobject_put(self.kobj.as_ptr()) };
    }
}

/// Tells user space that something a [`SysfsDir`] shows changed: wakes
/// the `poll()`ers of one of its files (`sysfs_notify`) and, when given a
/// device, sends a `change` uevent from it (a `/sys/kernel` directory is
/// in no kset, so it cannot send uevents itself).  Holds references on
/// both kobjects.
pub(crate) struct ChangeNotifier {
    dir: NonNull<bindings::kobject>,
    device: Option<NonNull<bindings::kobject>>,
}

// SAFETY: the kobjects are reference counted, and `sysfs_notify` and
// `kobject_uevent_env` may be called from any thread that may sleep.
unsafe impl Send for ChangeNotifier {}
// SAFETY: see `Send`; `ChangeNotifier` has no interior mutability.
unsafe impl Sync for ChangeNotifier {}

impl ChangeNotifier {
    /// A notifier for `dir`'s files and, optionally, the uevents of the
    /// registered misc device `device`.
    pub(crate) fn new<T: Send + Sync + 'static, M: kernel::miscdevice::MiscDevice>(
        dir: &SysfsDir<T>,
        device: Option<&kernel::miscdevice::MiscDeviceRegistration<M>>,
    ) -> Self {
        // SAFETY: `dir.kobj` is live while `dir` is; the reference taken
        // here is dropped in `drop`.
        unsafe { bindings::kobject_get(dir.kobj.as_ptr()) };
        let device = device.and_then(|d| {
            // SAFETY: `d` is registered, so its `this_device` is a live
            // device (or NULL); the reference taken on its kobject here is
            // dropped in `drop`.
            unsafe {
                let dev = (*d.as_raw()).this_device;
                if dev.is_null() {
                    return None;
                }
                let kobj = &raw mut (*dev).kobj;
                bindings::kobject_get(kobj);
                NonNull::new(kobj)
            }
        });
        Self {
            dir: dir.kobj,
            device,
        }
    }

    /// File `attr` of the directory changed: wake its pollers, and send a
    /// `change` uevent carrying `env` (`KEY=value`) from the device.
    pub(crate) fn changed(&self, attr: &CStr, env: &CStr) {
        // SAFETY: `dir` is live (we hold a reference); `attr` is a valid C
        // string; a file that is not there is ignored.
        unsafe { bindings::sysfs_notify(self.dir.as_ptr(), core::ptr::null(), attr.as_char_ptr()) };
        if let Some(dev) = self.device {
            let mut envp = [env.as_char_ptr().cast_mut(), core::ptr::null_mut()];
            // SAFETY: `dev` is live (we hold a reference); `envp` is a
            // NULL-terminated array of valid C strings, copied by the
            // uevent core.  A failure (no memory, no listener) only loses
            // the event: pollers still see the file change.
            let _ = unsafe {
                bindings::kobject_uevent_env(
                    dev.as_ptr(),
                    bindings::kobject_action_KOBJ_CHANGE,
                    envp.as_mut_ptr(),
                )
            };
        }
    }
}

impl Drop for ChangeNotifier {
    fn drop(&mut self) {
        if let Some(dev) = self.device {
            // SAFETY: drops the reference taken in `new`.
            unsafe { bindings::kobject_put(dev.as_ptr()) };
        }
        // SAFETY: drops the reference taken in `new`.
        unsafe { bindings::kobject_put(self.dir.as_ptr()) };
    }
}

/// # Safety
///
/// `attr` must be the `kattr` field of a live `RawAttribute<T>` and `buf` a
/// sysfs page (`PAGE_SIZE` writable bytes): sysfs guarantees both for the
/// files `SysfsDir::new` created, until `drop` removes them.
unsafe extern "C" fn show_trampoline<T: 'static>(
    _kobj: *mut bindings::kobject,
    attr: *mut bindings::kobj_attribute,
    buf: *mut kernel::ffi::c_char,
) -> isize {
    // SAFETY: `kattr` is the first field of the `#[repr(C)]` `RawAttribute<T>`
    // that contains `attr` (function contract).
    let raw = unsafe { &*attr.cast::<RawAttribute<T>>() };
    // SAFETY: `ctx` points into the `Arc<T>` the directory holds, which
    // outlives its files.
    let ctx = unsafe { &*raw.ctx };
    // SAFETY: sysfs passes a zeroed, writable page (function contract).
    let page =
        unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), kernel::page::PAGE_SIZE) };
    let mut w = SysfsWriter::new(page);
    match (raw.show)(ctx, &mut w) {
        Ok(()) => w.len as isize,
        Err(e) => e.to_errno() as isize,
    }
}

/// # Safety
///
/// `attr` as for [`show_trampoline`]; `buf` must hold `count` readable bytes.
unsafe extern "C" fn store_trampoline<T: 'static>(
    _kobj: *mut bindings::kobject,
    attr: *mut bindings::kobj_attribute,
    buf: *const kernel::ffi::c_char,
    count: usize,
) -> isize {
    // SAFETY: as in `show_trampoline`.
    let raw = unsafe { &*attr.cast::<RawAttribute<T>>() };
    // SAFETY: as in `show_trampoline`.
    let ctx = unsafe { &*raw.ctx };
    // SAFETY: sysfs passes `count` bytes at `buf` (function contract).
    let input = unsafe { core::slice::from_raw_parts(buf.cast::<u8>(), count) };
    let Some(store) = raw.store else {
        return EACCES.to_errno() as isize;
    };
    match store(ctx, input) {
        Ok(()) => count as isize,
        Err(e) => e.to_errno() as isize,
    }
}
