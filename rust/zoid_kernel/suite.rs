// SPDX-License-Identifier: GPL-2.0

//! What every zoid module shows the same way: its sysfs `version` file.

use super::sysfs::SysfsWriter;
use crate::zoid_proto::version::SUITE_VERSION;
use kernel::prelude::*;

/// `show` for `/sys/kernel/<module>/version`: the suite version, one line.
pub(crate) fn show_version<T>(_: &T, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(w, "{SUITE_VERSION}")
}

// The kernel's `pr_*!` macros format through `kernel::fmt::Display`.  The
// protocol types are local to each module crate (included with `#[path]`), so
// they can forward to their `core::fmt::Display`.
impl kernel::fmt::Display for crate::zoid_proto::version::Version {
    fn fmt(&self, f: &mut kernel::fmt::Formatter<'_>) -> kernel::fmt::Result {
        core::fmt::Display::fmt(self, f)
    }
}
