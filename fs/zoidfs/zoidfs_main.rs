// SPDX-License-Identifier: GPL-2.0

//! zoidfs: a POSIX filesystem on compute nodes whose every operation is
//! executed by ION kernel threads.
//!
//! At this stage zoidfs publishes `/sys/kernel/zoidfs/`; the filesystem
//! arrives with the zoidfs issue.

use kernel::prelude::*;
use kernel::sync::Arc;

#[path = "../../rust/zoid_kernel/mod.rs"]
mod zoid_kernel;
#[allow(unused_attributes, unreachable_pub, dead_code)]
#[path = "../../rust/zoid_proto/src/lib.rs"]
mod zoid_proto;

use zoid_kernel::sysfs::{Attribute, SysfsDir};
use zoid_proto::version::SUITE_VERSION;

module! {
    type: Zoidfs,
    name: "zoidfs",
    authors: ["zoid developers"],
    description: "zoidfs: POSIX filesystem forwarded from CNs to ION kernel threads",
    license: "GPL",
}

/// zoidfs's state, shared with its sysfs files (nothing yet).
struct ZoidfsState;

static ATTRS: [Attribute<ZoidfsState>; 1] =
    [Attribute::ro(c"version", zoid_kernel::suite::show_version)];

/// The loaded module.
struct Zoidfs {
    _sysfs: SysfsDir<ZoidfsState>,
}

impl kernel::Module for Zoidfs {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let sysfs = SysfsDir::new(c"zoidfs", Arc::new(ZoidfsState, GFP_KERNEL)?, &ATTRS)?;
        pr_info!("zoidfs {SUITE_VERSION} loaded\n");
        Ok(Self { _sysfs: sysfs })
    }
}

impl Drop for Zoidfs {
    fn drop(&mut self) {
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
