// SPDX-License-Identifier: GPL-2.0

//! uid/gid mapping tables (`/sys/kernel/zoid/idmap`).

use proptest::prelude::*;
use zoid_proto::zoid::idmap::{IdKind, IdMap, IdMapError, IdRange, ANON_ID, MAX_RANGES};

#[test]
fn ranges_map_and_the_rest_passes() {
    let mut m = IdMap::new();
    m.apply(b"uid 1000 5000 10\ngid 100 200\n").unwrap();
    assert_eq!(m.map(IdKind::Uid, 1000, true), 5000);
    assert_eq!(m.map(IdKind::Uid, 1009, true), 5009);
    assert_eq!(m.map(IdKind::Uid, 1010, true), 1010);
    assert_eq!(m.map(IdKind::Uid, 999, true), 999);
    assert_eq!(m.map(IdKind::Gid, 100, true), 200);
    assert_eq!(m.map(IdKind::Gid, 101, true), 101);
    assert_eq!(m.map(IdKind::Uid, 0, true), ANON_ID);
    assert_eq!(m.map(IdKind::Uid, 0, false), 0);
}

#[test]
fn an_explicit_root_entry_beats_root_squash() {
    let mut m = IdMap::new();
    m.apply(b"uid 0 1234").unwrap();
    assert_eq!(m.map(IdKind::Uid, 0, true), 1234);
    m.apply(b"-uid 0\nuid 0 0").unwrap();
    assert_eq!(m.map(IdKind::Uid, 0, true), 0);
}

#[test]
fn unmapped_squash() {
    let mut m = IdMap::new();
    m.apply(b"unmapped squash\nuid 1000 1000 100").unwrap();
    assert_eq!(m.map(IdKind::Uid, 1050, false), 1050);
    assert_eq!(m.map(IdKind::Uid, 7, false), ANON_ID);
    assert!(m.squash_unmapped());
    m.apply(b"clear").unwrap();
    assert_eq!(m, IdMap::new());
}

#[test]
fn bad_commands_change_nothing() {
    let mut m = IdMap::new();
    m.apply(b"uid 10 20 5").unwrap();
    let before = m;
    for bad in [
        &b"uid 12 100"[..],    // CN side overlaps
        b"uid 100 22",         // ION side overlaps
        b"uid 1 2 0",          // empty
        b"uid 4294967290 1 6", // reaches the invalid id
        b"uid 1 4294967295",   // the invalid id
        b"uid 1 2 3 4",        // trailing word
        b"uid x 2",            // not a number
        b"uid 99999999999 1",  // too large
        b"uid -1 2",           // not a number
        b"user 1 2",           // no such kind
        b"-uid 11",            // not a range's start
        b"unmapped maybe",     // no such policy
        b"gid 1 2\nuid 10 30", // second line bad: first undone
    ] {
        assert!(m.apply(bad).is_err(), "{:?}", core::str::from_utf8(bad));
        assert_eq!(m, before);
    }
    assert_eq!(m.apply(b"-gid 1"), Err(IdMapError::NotFound));
    assert_eq!(m.apply(b"uid 11 40"), Err(IdMapError::Overlap));
    assert_eq!(m.apply(b"uid 1 2 0"), Err(IdMapError::Invalid));
}

#[test]
fn the_table_fills_up_and_empties() {
    let mut m = IdMap::new();
    for i in 0..MAX_RANGES as u32 {
        m.apply(format!("gid {} {}", i * 10, i * 10).as_bytes())
            .unwrap();
    }
    assert_eq!(m.apply(b"gid 1000 1000"), Err(IdMapError::Full));
    m.apply(b"-gid 0\n-gid 310").unwrap();
    assert_eq!(m.ranges(IdKind::Gid).len(), MAX_RANGES - 2);
    assert_eq!(m.ranges(IdKind::Gid)[0].cn, 10);
    assert_eq!(m.map(IdKind::Gid, 0, false), 0);
    m.apply(b"gid 1000 1000").unwrap();
}

proptest! {
    /// Whatever ranges are accepted, a covered CN id maps into its range's
    /// ION side, and no two CN ids map to the same ION id through ranges.
    #[test]
    fn accepted_ranges_are_consistent_and_injective(
        cmds in proptest::collection::vec((0u32..200, 0u32..200, 1u32..20), 0..40),
        probes in proptest::collection::vec(0u32..260, 0..60),
    ) {
        let mut m = IdMap::new();
        for (cn, ion, count) in cmds {
            let before = m;
            match m.apply(format!("uid {cn} {ion} {count}").as_bytes()) {
                Ok(()) => {
                    let r = IdRange { cn, ion, count };
                    prop_assert!(m.ranges(IdKind::Uid).contains(&r));
                }
                Err(_) => prop_assert_eq!(m, before),
            }
        }
        let covered = |id: u32| m.ranges(IdKind::Uid).iter().any(|r| id >= r.cn && id - r.cn < r.count);
        for &a in &probes {
            for &b in &probes {
                if a != b && covered(a) && covered(b) {
                    prop_assert_ne!(m.map(IdKind::Uid, a, true), m.map(IdKind::Uid, b, true));
                }
            }
            if !covered(a) {
                prop_assert_eq!(m.map(IdKind::Uid, a, false), a);
            }
        }
    }
}
