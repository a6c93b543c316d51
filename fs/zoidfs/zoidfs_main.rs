// SPDX-License-Identifier: GPL-2.0

//! zoidfs: a POSIX filesystem on compute nodes whose every operation is
//! executed by ION kernel threads.
//!
//! `mount -t zoidfs [-o ion=N,export=NAME,...] zoidfs /mnt` on a CN: the
//! VFS glue is C (`zoidfs_vfs.c`), each operation one call of the `zoidfs`
//! plug-in through zoid.ko's client ABI ([`remote`], [`call_abi`]).
//! `/sys/kernel/zoidfs/` has `version` and `stats`; `docs/zoidfs.md`
//! describes mount options and semantics.

use kernel::prelude::*;
use kernel::sync::Arc;

#[path = "../../drivers/zoid/call_abi.rs"]
mod call_abi;
mod remote;
mod stats;
#[path = "../../rust/zoid_kernel/mod.rs"]
mod zoid_kernel;
#[allow(unused_attributes, unreachable_pub, dead_code)]
#[path = "../../rust/zoid_proto/src/lib.rs"]
mod zoid_proto;

use zoid_kernel::sysfs::{Attribute, SysfsDir, SysfsWriter};
use zoid_kernel::time::U64;
use zoid_proto::version::SUITE_VERSION;

module! {
    type: Zoidfs,
    name: "zoidfs",
    authors: ["zoid developers"],
    description: "zoidfs: POSIX filesystem forwarded from CNs to ION kernel threads",
    license: "GPL",
}

/// zoidfs's state, shared with its sysfs files (the counters are a
/// static, [`stats::STATS`]).
struct ZoidfsState;

/// `stats`: every counter, `name value`.
fn show_stats(_: &ZoidfsState, w: &mut SysfsWriter<'_>) -> Result {
    let mut r = Ok(());
    stats::STATS.each(|name, v| {
        if r.is_ok() {
            r = writeln!(w, "{name} {}", U64(v));
        }
    });
    r
}

static ATTRS: [Attribute<ZoidfsState>; 2] = [
    Attribute::ro(c"version", zoid_kernel::suite::show_version),
    Attribute::ro(c"stats", show_stats),
];

extern "C" {
    fn zoidfs_register() -> kernel::ffi::c_int;
    fn zoidfs_unregister();
}

/// The loaded module: the registered filesystem type and the sysfs files.
struct Zoidfs {
    _sysfs: SysfsDir<ZoidfsState>,
}

impl kernel::Module for Zoidfs {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        call_abi::check_abi()?;
        let sysfs = SysfsDir::new(c"zoidfs", Arc::new(ZoidfsState, GFP_KERNEL)?, &ATTRS)?;
        // SAFETY: called once; undone in `drop`.
        kernel::error::to_result(unsafe { zoidfs_register() })?;
        pr_info!("zoidfs {SUITE_VERSION} loaded\n");
        Ok(Self { _sysfs: sysfs })
    }
}

impl Drop for Zoidfs {
    fn drop(&mut self) {
        // SAFETY: registered in `init`; no mount remains (each holds a
        // module reference).
        unsafe { zoidfs_unregister() };
        pr_info!("zoidfs unloaded\n");
    }
}

#[kunit_tests(zoidfs_foundation)]
mod tests {
    use super::remote::{handle_in, handle_out, RawAttr, RawHandle};
    use super::zoid_kernel::sysfs::SysfsWriter;
    use super::zoid_proto::zoid::plugins::unix::Stat;
    use super::zoid_proto::zoid::plugins::zoidfs::{
        Handle, MAX_HANDLE, MODE_HAS_ACL, MODE_HAS_DEFAULT_ACL,
    };
    use super::*;

    #[test]
    fn handles_cross_to_c_and_back() -> Result {
        let h = Handle::new(&[1, 2, 3, 0xfe]).ok_or(EINVAL)?;
        let mut raw = RawHandle {
            len: 0,
            data: [0xaa; MAX_HANDLE],
        };
        handle_out(&h, &mut raw);
        assert_eq!(raw.len, 4);
        // The unused bytes are zero, as the wire encoding wants.
        assert!(raw.data[4..].iter().all(|&b| b == 0));
        assert_eq!(handle_in(&raw)?, h);
        let full = Handle::new(&[7; MAX_HANDLE]).ok_or(EINVAL)?;
        handle_out(&full, &mut raw);
        assert_eq!(handle_in(&raw)?, full);
        Ok(())
    }

    #[test]
    fn malformed_handles_from_c_are_refused() {
        let mut raw = RawHandle {
            len: 0,
            data: [1; MAX_HANDLE],
        };
        assert_eq!(handle_in(&raw), Err(EINVAL));
        raw.len = MAX_HANDLE as u8 + 1;
        assert_eq!(handle_in(&raw), Err(EINVAL));
    }

    #[test]
    fn attributes_keep_every_field() {
        let st = Stat {
            dev: 9,
            ino: 1 << 40,
            // The ION's ACL flags ride above the mode's 16 bits.
            mode: 0o100644 | MODE_HAS_ACL | MODE_HAS_DEFAULT_ACL,
            nlink: 3,
            uid: 1000,
            gid: 100,
            rdev: 0x0801,
            size: 5 << 30,
            blksize: 4096,
            blocks: 8,
            atime_sec: -1,
            atime_nsec: 999_999_999,
            mtime_sec: 1_700_000_000,
            mtime_nsec: 123_456_789,
            ctime_sec: 1_700_000_001,
            ctime_nsec: 1,
        };
        let a = RawAttr::from(&st);
        assert_eq!(
            a,
            RawAttr {
                ino: 1 << 40,
                rdev: 0x0801,
                blocks: 8,
                size: 5 << 30,
                atime_sec: -1,
                mtime_sec: 1_700_000_000,
                ctime_sec: 1_700_000_001,
                atime_nsec: 999_999_999,
                mtime_nsec: 123_456_789,
                ctime_nsec: 1,
                mode: 0o100644,
                nlink: 3,
                uid: 1000,
                gid: 100,
                blksize: 4096,
                acl: MODE_HAS_ACL | MODE_HAS_DEFAULT_ACL,
            }
        );
    }

    #[test]
    fn version_file_shows_the_suite_version() -> Result {
        let mut page = [0u8; 32];
        let mut w = SysfsWriter::new(&mut page);
        zoid_kernel::suite::show_version(&ZoidfsState, &mut w)?;
        let mut expect = [0u8; 32];
        let mut e = SysfsWriter::new(&mut expect);
        writeln!(
            e,
            "{}.{}.{}",
            SUITE_VERSION.major, SUITE_VERSION.minor, SUITE_VERSION.patch
        )?;
        assert_eq!(w.as_bytes(), e.as_bytes());
        Ok(())
    }
}
