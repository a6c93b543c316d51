// SPDX-License-Identifier: GPL-2.0

//! `/dev/ssi`: container objects mapped into processes, so that programs
//! on different nodes share memory, kept coherent by the containers'
//! write-invalidate protocol.
//!
//! * `ioctl(fd, SSI_IOC_SET, set)` picks the set that the file's later
//!   mappings show (set 0 until then).
//! * `mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, first * 4096)`
//!   maps objects `first ..` of that set, one per page.  Private mappings
//!   are refused (`EINVAL`): a copy-on-write page would not follow the
//!   object.  Kernels whose pages are not 4 KiB refuse mappings (`ENODEV`).
//!
//! Each page fault is an access to the object (a read, or a write); the
//! page stays mapped afterwards until another node's request takes it (a
//! read keeps it read-only; the first write to it asks for ownership).  A
//! fault that cannot be served (the ION is gone: `EHOSTUNREACH`; no
//! answer within 30 s) gives the process `SIGBUS`.

use crate::container::{Containers, OBJECT_SIZE};
use crate::zoid_kernel::vm::{self, Fault, FaultHandler, Mapped, PAGE_SIZE};
use kernel::fs::File;
use kernel::ioctl::_IO;
use kernel::miscdevice::{MiscDevice, MiscDeviceRegistration};
use kernel::mm::virt::VmaNew;
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::Arc;

/// `_IO('s', 1)`: the argument is the set later mappings show.
pub(crate) const SSI_IOC_SET: u32 = _IO(b's' as u32, 1);

kernel::sync::global_lock! {
    // SAFETY: initialised in the module initialiser before any use.
    unsafe(uninit) static CONTAINERS: Mutex<Option<Arc<Containers>>> = None;
}

/// Initialises the containers' slot; called once, first thing in module
/// init.
pub(crate) fn init_slot() {
    // SAFETY: called once, before any other use of `CONTAINERS`.
    unsafe { CONTAINERS.init() };
}

/// Publishes (or, with `None`, withdraws) the containers `/dev/ssi` maps.
pub(crate) fn publish(c: Option<Arc<Containers>>) {
    *CONTAINERS.lock() = c;
}

/// An open `/dev/ssi`.
pub(crate) struct SsiFile {
    containers: Arc<Containers>,
    set: Atomic<u32>,
}

/// What one mapping shows: a set of the containers.
struct SetView {
    containers: Arc<Containers>,
    set: u32,
}

impl FaultHandler for SetView {
    fn fault(&self, fault: &Fault) -> Result<Mapped> {
        self.containers.fault(self.set, fault)
    }

    fn mkwrite(&self, page_index: usize) -> Result {
        self.containers.mkwrite(self.set, page_index)
    }
}

/// The set an `SSI_IOC_SET` argument names.
fn set_argument(arg: usize) -> Result<u32> {
    u32::try_from(arg).map_err(|_| EINVAL)
}

#[vtable]
impl MiscDevice for SsiFile {
    type Ptr = KBox<Self>;

    fn open(file: &File, _misc: &MiscDeviceRegistration<Self>) -> Result<KBox<Self>> {
        let containers = CONTAINERS.lock().clone().ok_or(ENODEV)?;
        containers.attach_file(file);
        Ok(KBox::new(
            SsiFile {
                containers,
                set: Atomic::new(0),
            },
            GFP_KERNEL,
        )?)
    }

    fn mmap(me: &SsiFile, _file: &File, vma: &VmaNew) -> Result {
        if PAGE_SIZE != OBJECT_SIZE {
            return Err(ENODEV);
        }
        if me.containers.set_info(me.set.load(Relaxed)).0 != PAGE_SIZE {
            // A set of objects smaller than a page (as far as this node
            // knows: a fault checks again).
            return Err(EINVAL);
        }
        let view = Arc::new(
            SetView {
                containers: me.containers.clone(),
                set: me.set.load(Relaxed),
            },
            GFP_KERNEL,
        )?;
        vm::setup_vma(vma, view)
    }

    fn ioctl(me: &SsiFile, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        match cmd {
            SSI_IOC_SET => {
                me.set.store(set_argument(arg)?, Relaxed);
                Ok(0)
            }
            _ => Err(ENOTTY),
        }
    }
}

#[kunit_tests(ssi_dev)]
mod tests {
    use super::*;

    /// Sets are 32-bit: a larger ioctl argument is refused.
    #[test]
    fn set_argument_is_32_bit() {
        assert_eq!(set_argument(7), Ok(7));
        assert_eq!(set_argument(u32::MAX as usize), Ok(u32::MAX));
        #[cfg(CONFIG_64BIT)]
        assert_eq!(set_argument(1 << 32), Err(EINVAL));
    }

    /// The ioctl number user space computes (`_IO('s', 1)`: type 's',
    /// number 1, no argument structure; the direction bits are the
    /// architecture's).
    #[test]
    fn ioctl_number_is_stable() {
        use kernel::ioctl::{_IOC_NR, _IOC_SIZE, _IOC_TYPE};
        assert_eq!(_IOC_TYPE(SSI_IOC_SET), u32::from(b's'));
        assert_eq!(_IOC_NR(SSI_IOC_SET), 1);
        assert_eq!(_IOC_SIZE(SSI_IOC_SET), 0);
        #[cfg(CONFIG_X86)]
        assert_eq!(SSI_IOC_SET, 0x7301);
    }
}
