// SPDX-License-Identifier: GPL-2.0

//! treenet's cross-module interface, as its consumers (zoid, ssi) see it.
//!
//! Include with `#[path = "<...>/drivers/treenet/abi.rs"] mod treenet;`.
//! The functions are defined in Rust in treenet.ko and exported by its C
//! shim; a consumer module needs treenet.ko loaded first.

use crate::zoid_proto::version::{Version, SUITE_VERSION};
use kernel::prelude::*;

extern "C" {
    fn treenet_abi_version() -> u64;
}

/// The version of the loaded treenet.ko, checked against this module's.
///
/// Fails with `EPROTO` (and says why in the log) when the two cannot work
/// together, so a mismatched suite refuses to load instead of misbehaving.
pub(crate) fn attach() -> Result<Version> {
    // SAFETY: `treenet_abi_version` takes no arguments, has no
    // preconditions, and is resolved by the module loader from treenet.ko.
    check_compatible(unsafe { treenet_abi_version() })
}

/// Decodes treenet's wire version and checks it against this module's.
pub(crate) fn check_compatible(wire: u64) -> Result<Version> {
    let Some(theirs) = Version::from_wire(wire) else {
        pr_err!("treenet reports a malformed version {wire:#x}\n");
        return Err(EPROTO);
    };
    if !SUITE_VERSION.is_compatible_with(&theirs) {
        pr_err!("treenet {theirs} is not compatible with this module ({SUITE_VERSION})\n");
        return Err(EPROTO);
    }
    Ok(theirs)
}
