// SPDX-License-Identifier: GPL-2.0

//! zoid: in-kernel function-call forwarding from compute nodes to I/O nodes.
//!
//! At this stage zoid attaches to treenet (checking that the two speak the
//! same protocol) and publishes `/sys/kernel/zoid/`.  The CN client, the ION
//! server and the plug-ins arrive with the zoid issue.

use kernel::prelude::*;
use kernel::sync::Arc;

#[path = "../treenet/abi.rs"]
mod treenet;
#[path = "../../rust/zoid_kernel/mod.rs"]
mod zoid_kernel;
#[allow(unused_attributes, unreachable_pub, dead_code)]
#[path = "../../rust/zoid_proto/src/lib.rs"]
mod zoid_proto;

use zoid_kernel::sysfs::{Attribute, SysfsDir, SysfsWriter};
use zoid_proto::version::{Version, SUITE_VERSION};

module! {
    type: Zoid,
    name: "zoid",
    authors: ["zoid developers"],
    description: "zoid call forwarding: CN client and ION kernel-thread server",
    license: "GPL",
}

/// zoid's state, shared with its sysfs files.
struct ZoidState {
    /// The treenet this zoid runs on.
    treenet: Version,
}

fn show_treenet_version(s: &ZoidState, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(w, "{}", s.treenet)
}

static ATTRS: [Attribute<ZoidState>; 2] = [
    Attribute::ro(c"version", zoid_kernel::suite::show_version),
    Attribute::ro(c"treenet_version", show_treenet_version),
];

/// The loaded module.
struct Zoid {
    _sysfs: SysfsDir<ZoidState>,
}

impl kernel::Module for Zoid {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let treenet = treenet::attach()?;
        let state = Arc::new(ZoidState { treenet }, GFP_KERNEL)?;
        let sysfs = SysfsDir::new(c"zoid", state, &ATTRS)?;
        pr_info!("zoid {SUITE_VERSION} loaded (treenet {treenet})\n");
        Ok(Self { _sysfs: sysfs })
    }
}

impl Drop for Zoid {
    fn drop(&mut self) {
        pr_info!("zoid unloaded\n");
    }
}

#[kunit_tests(zoid_foundation)]
mod tests {
    use super::*;

    #[test]
    fn treenet_is_attached_and_compatible() -> Result {
        let theirs = treenet::attach()?;
        assert!(SUITE_VERSION.is_compatible_with(&theirs));
        Ok(())
    }

    /// A sysfs directory disappears with its owner: creating the same one
    /// again succeeds (a leftover would fail with EEXIST and a kernel
    /// warning, which the harness reports).
    #[test]
    fn sysfs_dir_is_removed_on_drop() -> Result {
        for _ in 0..3 {
            let state = Arc::new(
                ZoidState {
                    treenet: SUITE_VERSION,
                },
                GFP_KERNEL,
            )?;
            let dir = SysfsDir::new(c"zoid_kunit_probe", state, &ATTRS)?;
            assert_eq!(dir.context().treenet, SUITE_VERSION);
        }
        Ok(())
    }

    #[test]
    fn treenet_version_file_shows_one_line() -> Result {
        let s = ZoidState {
            treenet: Version::new(0, 1, 9),
        };
        let mut page = [0u8; 32];
        let mut w = SysfsWriter::new(&mut page);
        show_treenet_version(&s, &mut w)?;
        assert_eq!(w.as_bytes(), b"0.1.9\n");
        Ok(())
    }
}
