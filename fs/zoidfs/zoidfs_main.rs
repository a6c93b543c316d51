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
    use super::zoid_kernel::sysfs::SysfsWriter;
    use super::*;

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
