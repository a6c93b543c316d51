// SPDX-License-Identifier: GPL-2.0

//! Versions of the zoid suite and of its wire protocols.
//!
//! Every node reports the suite version in `/sys/kernel/<module>/version`;
//! handshakes between nodes compare [`Version`]s with
//! [`Version::is_compatible_with`].

use core::fmt;

/// A `major.minor.patch` version.
///
/// Two nodes can talk when their major versions match and, for a major
/// version of 0 (pre-release), when their minor versions match too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Incompatible protocol changes.
    pub major: u16,
    /// Compatible additions.
    pub minor: u16,
    /// Fixes.
    pub patch: u16,
}

/// The version of the zoid suite (all four modules share it).
pub const SUITE_VERSION: Version = Version::new(0, 1, 0);

impl Version {
    /// Builds a version.
    pub const fn new(major: u16, minor: u16, patch: u16) -> Self {
        Self {
            major,
            minor,
            patch,
        }
    }

    /// Whether a peer running `other` speaks a protocol this version understands.
    pub const fn is_compatible_with(&self, other: &Version) -> bool {
        if self.major != other.major {
            return false;
        }
        self.major != 0 || self.minor == other.minor
    }

    /// Packs the version into 48 bits of a `u64` (`major << 32 | minor << 16 | patch`),
    /// the form it travels in on the wire.
    pub const fn to_wire(self) -> u64 {
        (self.major as u64) << 32 | (self.minor as u64) << 16 | self.patch as u64
    }

    /// Unpacks [`Version::to_wire`]; `None` if bits above 48 are set.
    pub const fn from_wire(v: u64) -> Option<Self> {
        if v >> 48 != 0 {
            return None;
        }
        Some(Self::new((v >> 32) as u16, (v >> 16) as u16, v as u16))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}
