// SPDX-License-Identifier: GPL-2.0

//! ssi: Kerrighed-style single-system-image containers for zoid nodes.
//!
//! At this stage ssi attaches to treenet and publishes `/sys/kernel/ssi/`;
//! containers, linkers, membership and hook points arrive with the ssi
//! issue.

use kernel::prelude::*;
use kernel::sync::Arc;

#[path = "../drivers/treenet/abi.rs"]
mod treenet;
#[path = "../rust/zoid_kernel/mod.rs"]
mod zoid_kernel;
#[allow(unused_attributes, unreachable_pub, dead_code)]
#[path = "../rust/zoid_proto/src/lib.rs"]
mod zoid_proto;

use zoid_kernel::sysfs::{Attribute, SysfsDir};
use zoid_proto::version::SUITE_VERSION;

module! {
    type: Ssi,
    name: "ssi",
    authors: ["zoid developers"],
    description: "ssi: cluster-wide shared-object containers over treenet",
    license: "GPL",
}

/// ssi's state, shared with its sysfs files (nothing yet).
struct SsiState;

static ATTRS: [Attribute<SsiState>; 1] =
    [Attribute::ro(c"version", zoid_kernel::suite::show_version)];

/// The loaded module.
struct Ssi {
    _sysfs: SysfsDir<SsiState>,
}

impl kernel::Module for Ssi {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let treenet = treenet::attach()?;
        let sysfs = SysfsDir::new(c"ssi", Arc::new(SsiState, GFP_KERNEL)?, &ATTRS)?;
        pr_info!("ssi {SUITE_VERSION} loaded (treenet {treenet})\n");
        Ok(Self { _sysfs: sysfs })
    }
}

impl Drop for Ssi {
    fn drop(&mut self) {
        pr_info!("ssi unloaded\n");
    }
}

#[kunit_tests(ssi_foundation)]
mod tests {
    use super::*;

    use super::zoid_proto::version::Version;

    /// ssi refuses a treenet it cannot talk to, instead of misbehaving later.
    #[test]
    fn incompatible_or_malformed_treenet_is_refused() {
        let next_major = Version::new(SUITE_VERSION.major + 1, 0, 0);
        assert_eq!(treenet::check_compatible(next_major.to_wire()), Err(EPROTO));
        assert_eq!(treenet::check_compatible(u64::MAX), Err(EPROTO));
        assert_eq!(
            treenet::check_compatible(SUITE_VERSION.to_wire()),
            Ok(SUITE_VERSION)
        );
    }
}
