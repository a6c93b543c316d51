// SPDX-License-Identifier: GPL-2.0

//! Property tests of the pure protocol logic.

use proptest::prelude::*;
use zoid_proto::crc32c::{checksum, Crc32c};
use zoid_proto::version::{Version, SUITE_VERSION};
use zoid_proto::xxh64::{xxh64, Xxh64};

proptest! {
    /// Checksumming in fragments equals checksumming in one piece.
    #[test]
    fn crc32c_is_incremental(data in proptest::collection::vec(any::<u8>(), 0..4096),
                             cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
        points.sort_unstable();
        let mut c = Crc32c::new();
        let mut start = 0;
        for p in points {
            c.update(&data[start..p]);
            start = p;
        }
        c.update(&data[start..]);
        prop_assert_eq!(c.finish(), checksum(&data));
    }

    /// Any single flipped bit changes the checksum.
    #[test]
    fn crc32c_detects_single_bit_flips(data in proptest::collection::vec(any::<u8>(), 1..1024),
                                       bit in any::<usize>()) {
        let mut flipped = data.clone();
        let bit = bit % (data.len() * 8);
        flipped[bit / 8] ^= 1 << (bit % 8);
        prop_assert_ne!(checksum(&data), checksum(&flipped));
    }

    /// XXH64 fed in fragments equals XXH64 of the whole.
    #[test]
    fn xxh64_is_incremental(data in proptest::collection::vec(any::<u8>(), 0..4096),
                            cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
        points.sort_unstable();
        let mut h = Xxh64::new();
        let mut start = 0;
        for p in points {
            h.update(&data[start..p]);
            start = p;
        }
        h.update(&data[start..]);
        prop_assert_eq!(h.finish(), xxh64(&data));
    }

    /// A flipped bit changes XXH64's low 32 bits (the frame checksum field).
    #[test]
    fn xxh64_low_half_sees_single_bit_flips(data in proptest::collection::vec(any::<u8>(), 1..1024),
                                            bit in any::<usize>()) {
        let mut flipped = data.clone();
        let bit = bit % (data.len() * 8);
        flipped[bit / 8] ^= 1 << (bit % 8);
        prop_assert_ne!(xxh64(&data) as u32, xxh64(&flipped) as u32);
    }

    /// The wire form of a version round-trips, and garbage above 48 bits is refused.
    #[test]
    fn version_wire_round_trip(major: u16, minor: u16, patch: u16, junk in 1u64..0xffff) {
        let v = Version::new(major, minor, patch);
        prop_assert_eq!(Version::from_wire(v.to_wire()), Some(v));
        prop_assert_eq!(Version::from_wire(v.to_wire() | junk << 48), None);
    }

    /// Compatibility is symmetric and reflexive.
    #[test]
    fn version_compatibility_is_symmetric(a: (u16, u16, u16), b: (u16, u16, u16)) {
        let a = Version::new(a.0 % 3, a.1 % 3, a.2);
        let b = Version::new(b.0 % 3, b.1 % 3, b.2);
        prop_assert!(a.is_compatible_with(&a));
        prop_assert_eq!(a.is_compatible_with(&b), b.is_compatible_with(&a));
    }
}

#[test]
fn version_rules() {
    let v = |a, b, c| Version::new(a, b, c);
    assert!(v(1, 2, 3).is_compatible_with(&v(1, 0, 0)));
    assert!(!v(1, 2, 3).is_compatible_with(&v(2, 2, 3)));
    assert!(v(0, 1, 0).is_compatible_with(&v(0, 1, 7)));
    assert!(!v(0, 1, 0).is_compatible_with(&v(0, 2, 0)));
    // The crate version and the suite version are one number.
    assert_eq!(format!("{SUITE_VERSION}"), env!("CARGO_PKG_VERSION"));
}
