// SPDX-License-Identifier: GPL-2.0

//! The ssi checkpoint format: what is written reads back identically, and
//! any damage is refused before anything is restored.

use proptest::prelude::*;
use zoid_proto::ssi::checkpoint::{
    encode_file_header, encode_record_header, CheckpointError, Parser, Piece, SetHeader,
    FILE_HEADER_LEN,
};

type Set = (u32, u32, Vec<(u64, Vec<u8>)>);

fn write(sets: &[Set]) -> Vec<u8> {
    let mut f = encode_file_header(sets.len() as u32).to_vec();
    for (set, size, objects) in sets {
        let h = SetHeader {
            set: *set,
            object_size: *size,
            objects: objects.len() as u64,
        };
        f.extend_from_slice(&h.encode());
        for (id, contents) in objects {
            f.extend_from_slice(&encode_record_header(*id, contents));
            f.extend_from_slice(contents);
        }
    }
    f
}

/// Reads a whole file as the kernel does: pieces of `need()` bytes, and
/// nothing may follow the end.
fn read(f: &[u8]) -> Result<Vec<Set>, CheckpointError> {
    let mut p = Parser::new();
    let mut at = 0;
    let mut sets: Vec<Set> = Vec::new();
    while !p.is_done() {
        let n = p.need();
        let piece = f.get(at..at + n).ok_or(CheckpointError::Misuse)?;
        match p.feed(piece)? {
            Piece::File { .. } | Piece::RecordHeader => {}
            Piece::Set(h) => sets.push((h.set, h.object_size, Vec::new())),
            Piece::Record { set, object } => {
                let last = sets.last_mut().unwrap();
                assert_eq!(last.0, set);
                last.2.push((object, piece.to_vec()));
            }
        }
        at += n;
    }
    if at != f.len() {
        return Err(CheckpointError::Misuse);
    }
    Ok(sets)
}

#[test]
fn a_checkpoint_reads_back_identically() {
    let sets = vec![
        (
            1,
            8,
            vec![(0, vec![1; 8]), (5, vec![2; 8]), (u64::MAX, vec![3; 8])],
        ),
        (9, 4096, vec![]),
        (u32::MAX, 16, vec![(7, (0..16).collect())]),
    ];
    assert_eq!(read(&write(&sets)), Ok(sets));
    assert_eq!(read(&write(&[])), Ok(vec![]));
}

#[test]
fn damage_is_refused() {
    let sets = vec![(1, 8, vec![(0, vec![1; 8]), (5, vec![2; 8])])];
    let good = write(&sets);
    let mut bad = good.clone();
    bad[0] ^= 1;
    assert_eq!(read(&bad), Err(CheckpointError::BadMagic));
    let mut bad = good.clone();
    bad[11] = 2;
    assert_eq!(read(&bad), Err(CheckpointError::BadVersion));
    // Truncated, and with trailing bytes.
    assert_eq!(read(&good[..good.len() - 1]), Err(CheckpointError::Misuse));
    let mut long = good.clone();
    long.push(0);
    assert_eq!(read(&long), Err(CheckpointError::Misuse));
    // Out of order and duplicate ids.
    let swapped = write(&[(1, 8, vec![(5, vec![2; 8]), (0, vec![1; 8])])]);
    assert_eq!(read(&swapped), Err(CheckpointError::OutOfOrder));
    let dup = write(&[(1, 8, vec![(5, vec![2; 8]), (5, vec![1; 8])])]);
    assert_eq!(read(&dup), Err(CheckpointError::OutOfOrder));
    // A record longer than its set's objects; objects of size 0.
    let wrong = write(&[(1, 8, vec![(5, vec![2; 9])])]);
    assert_eq!(read(&wrong), Err(CheckpointError::BadSize));
    let zero = write(&[(1, 0, vec![])]);
    assert_eq!(read(&zero), Err(CheckpointError::BadSize));
    // Feeding the wrong length, or after the end.
    let mut p = Parser::new();
    assert_eq!(p.feed(&good[..3]), Err(CheckpointError::Misuse));
    let empty = write(&[]);
    assert_eq!(
        p.feed(&empty[..FILE_HEADER_LEN]),
        Ok(Piece::File { sets: 0 })
    );
    assert!(p.is_done());
    assert_eq!(p.feed(&[]), Err(CheckpointError::Misuse));
}

fn sets() -> impl Strategy<Value = Vec<Set>> {
    proptest::collection::vec(
        (any::<u32>(), 1u32..64).prop_flat_map(|(set, size)| {
            proptest::collection::btree_map(
                any::<u64>(),
                proptest::collection::vec(any::<u8>(), size as usize),
                0..6,
            )
            .prop_map(move |m| (set, size, m.into_iter().collect::<Vec<_>>()))
        }),
        0..4,
    )
}

proptest! {
    #[test]
    fn any_checkpoint_round_trips(s in sets()) {
        prop_assert_eq!(read(&write(&s)), Ok(s));
    }

    /// Any one flipped bit is caught.
    #[test]
    fn any_flipped_bit_is_refused(s in sets(), at in any::<usize>(), bit in 0u8..8) {
        let mut f = write(&s);
        let at = at % f.len();
        f[at] ^= 1 << bit;
        prop_assert!(read(&f).is_err());
    }
}
