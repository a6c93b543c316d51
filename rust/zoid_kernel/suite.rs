// SPDX-License-Identifier: GPL-2.0

//! What every zoid module shows the same way: its sysfs `version` file.

use super::sysfs::SysfsWriter;
use crate::zoid_proto::version::SUITE_VERSION;
use kernel::prelude::*;

/// `show` for `/sys/kernel/<module>/version`: the suite version, one line.
pub(crate) fn show_version<T>(_: &T, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(w, "{SUITE_VERSION}")
}
