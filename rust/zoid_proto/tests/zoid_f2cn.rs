// SPDX-License-Identifier: GPL-2.0

//! f2cn's pure parts: plans, the message bodies, a receiver's progress in
//! any arrival order, and the ION's answer tracking.

use proptest::prelude::*;
use zoid_proto::zoid::errno::{E2BIG, EBADMSG, EINVAL, EIO};
use zoid_proto::zoid::f2cn::{
    self, chunk_digest, data_header, data_offset, outcome, record, Ack, Begin, Commit, F2cnError,
    Outcome, Plan, Progress, Step, TargetState, MAX_CHUNK, MAX_CHUNKS, MAX_TARGETS, MIN_CHUNK,
    PHASE_COMMIT,
};
use zoid_proto::zoid::marshal::{Decoder, Encoder};

fn begin_bytes(plan: Plan, mode: u32, targets: &[u16], path: &[u8]) -> Vec<u8> {
    let mut m = Encoder::measuring();
    Begin::encode(&mut m, plan, mode, targets, path).unwrap();
    let mut buf = vec![0u8; m.len()];
    let mut e = Encoder::new(&mut buf);
    Begin::encode(&mut e, plan, mode, targets, path).unwrap();
    assert_eq!(e.len(), buf.len());
    buf
}

/// The file's chunks as the ION sends them, and its commit.
fn send(plan: Plan, file: &[u8]) -> (Vec<(u64, Vec<u8>)>, Commit) {
    let mut chunks = Vec::new();
    let mut digest = 0u64;
    for i in 0..plan.chunks() {
        let (off, len) = plan.chunk_range(i);
        let data = file[off as usize..off as usize + len].to_vec();
        digest = digest.wrapping_add(chunk_digest(i, &data));
        chunks.push((off, data));
    }
    (
        chunks,
        Commit {
            size: plan.size,
            digest,
        },
    )
}

#[test]
fn plans_cut_files_into_exact_chunks() {
    let p = Plan::new(10_000, 4096).unwrap();
    assert_eq!(p.chunks(), 3);
    assert_eq!(p.chunk_range(0), (0, 4096));
    assert_eq!(p.chunk_range(2), (8192, 1808));
    assert_eq!(p.bitmap_words(), 1);
    assert_eq!(p.index_of(4096, 4096), Ok(1));
    assert_eq!(p.index_of(8192, 1808), Ok(2));
    assert_eq!(p.index_of(8192, 4096), Err(F2cnError::BadChunk));
    assert_eq!(p.index_of(100, 4096), Err(F2cnError::BadChunk));
    assert_eq!(p.index_of(12_288, 0), Err(F2cnError::BadChunk));
    let empty = Plan::new(0, MAX_CHUNK).unwrap();
    assert_eq!((empty.chunks(), empty.bitmap_words()), (0, 0));
    assert_eq!(Plan::new(1, MIN_CHUNK - 1), Err(F2cnError::BadPlan));
    assert_eq!(Plan::new(1, MAX_CHUNK + 1), Err(F2cnError::BadPlan));
    assert_eq!(Plan::new(1, 3 * 4096), Err(F2cnError::BadPlan));
    let most = u64::from(MIN_CHUNK) * MAX_CHUNKS;
    assert!(Plan::new(most, MIN_CHUNK).is_ok());
    assert_eq!(Plan::new(most + 1, MIN_CHUNK), Err(F2cnError::BadPlan));
    // Files beyond 4 GiB (and on 32-bit hosts too: offsets are u64).
    let big = Plan::new(5 << 30, MAX_CHUNK).unwrap();
    assert_eq!(
        big.chunk_range(big.chunks() - 1).0,
        (5 << 30) - u64::from(MAX_CHUNK)
    );
}

#[test]
fn begin_round_trips_and_names_its_targets() {
    let plan = Plan::new(5 << 20, 1 << 20).unwrap();
    let b = begin_bytes(plan, 0o755, &[1, 2, 300], b"/tmp/app.bin");
    let d = Begin::decode(&b).unwrap();
    assert_eq!(
        (d.plan, d.mode, d.path),
        (plan, 0o755, &b"/tmp/app.bin"[..])
    );
    assert_eq!(d.targets().collect::<Vec<_>>(), [1, 2, 300]);
    assert!(d.has_target(300) && !d.has_target(3));
    // Trailing bytes, truncation.
    let mut long = b.clone();
    long.push(0);
    assert_eq!(Begin::decode(&long), Err(F2cnError::Malformed));
    assert_eq!(Begin::decode(&b[..b.len() - 1]), Err(F2cnError::Malformed));
}

#[test]
fn bad_begins_are_refused_with_errnos() {
    let plan = Plan::new(1, 4096).unwrap();
    for path in [&b""[..], b"/", b"relative", b"/a\0b"] {
        let mut m = Encoder::measuring();
        assert_eq!(
            Begin::encode(&mut m, plan, 0o644, &[1], path),
            Err(F2cnError::BadPath)
        );
    }
    let mut m = Encoder::measuring();
    assert_eq!(
        Begin::encode(&mut m, plan, 0o10000, &[1], b"/x"),
        Err(F2cnError::BadMode)
    );
    let many = vec![7u16; MAX_TARGETS + 1];
    assert_eq!(
        Begin::encode(&mut m, plan, 0o644, &many, b"/x"),
        Err(F2cnError::TooManyTargets)
    );
    // Decoding checks the same things a sender might not have.
    let mut b = begin_bytes(plan, 0o644, &[1], b"/x");
    b[8..12].copy_from_slice(&100u32.to_be_bytes()); // chunk 100
    assert_eq!(Begin::decode(&b), Err(F2cnError::BadPlan));
    let mut b = begin_bytes(plan, 0o644, &[1], b"/x");
    b[12..16].copy_from_slice(&0o100644u32.to_be_bytes());
    assert_eq!(Begin::decode(&b), Err(F2cnError::BadMode));
    let mut b = begin_bytes(plan, 0o644, &[1], b"/x");
    b[16..20].copy_from_slice(&(MAX_TARGETS as u32 + 1).to_be_bytes());
    assert_eq!(Begin::decode(&b), Err(F2cnError::TooManyTargets));
    let b = begin_bytes(plan, 0o644, &[1], b"/x");
    let mut rel = b.clone();
    let n = rel.len();
    rel[n - 2] = b'x'; // "xx": relative
    assert_eq!(Begin::decode(&rel), Err(F2cnError::BadPath));
    assert_eq!(F2cnError::Malformed.errno(), EBADMSG);
    assert_eq!(F2cnError::BadPath.errno(), EINVAL);
    assert_eq!(F2cnError::TooManyTargets.errno(), E2BIG);
    assert_eq!(F2cnError::DigestMismatch.errno(), EIO);
}

#[test]
fn data_commit_and_ack_bodies() {
    let mut body = data_header(0x1_0000_0000).to_vec();
    body.extend_from_slice(b"chunk");
    assert_eq!(data_offset(&body), Ok(0x1_0000_0000));
    assert_eq!(data_offset(&body[..7]), Err(F2cnError::Malformed));
    let c = Commit {
        size: 9,
        digest: 0xdead_beef_0bad_f00d,
    };
    let mut buf = [0u8; 16];
    Encoder::new(&mut buf).put(&c).unwrap();
    assert_eq!(Decoder::new(&buf).get::<Commit>(), Ok(c));
    let a = Ack {
        phase: PHASE_COMMIT,
    };
    let mut buf = [0u8; 4];
    Encoder::new(&mut buf).put(&a).unwrap();
    assert_eq!(buf, PHASE_COMMIT.to_be_bytes());
}

#[test]
fn receiver_completes_in_order_and_refuses_strays() {
    let file: Vec<u8> = (0..10_000u32).map(|i| (i * 7) as u8).collect();
    let plan = Plan::new(file.len() as u64, 4096).unwrap();
    let (chunks, commit) = send(plan, &file);
    let mut got = [0u64; 1];
    let mut p = Progress::new(plan, &mut got).unwrap();
    assert_eq!(p.data(&mut got, 0, &chunks[0].1), Ok(Step::More));
    assert_eq!(p.data(&mut got, 0, &chunks[0].1), Err(F2cnError::Duplicate));
    assert_eq!(p.data(&mut got, 1, b"x"), Err(F2cnError::BadChunk));
    assert_eq!(p.data(&mut got, 4096, &chunks[1].1), Ok(Step::More));
    assert_eq!(
        p.commit(commit.size + 1, commit.digest),
        Err(F2cnError::SizeMismatch)
    );
    assert_eq!(p.commit(commit.size, commit.digest), Ok(Step::More));
    assert_eq!(
        p.commit(commit.size, commit.digest),
        Err(F2cnError::Duplicate)
    );
    assert_eq!(p.data(&mut got, 8192, &chunks[2].1), Ok(Step::Complete));
    assert_eq!(p.received(), 3);
    // An empty file completes with its commit alone.
    let empty = Plan::new(0, 4096).unwrap();
    let mut none: [u64; 0] = [];
    let mut p = Progress::new(empty, &mut none).unwrap();
    assert_eq!(p.commit(0, 0), Ok(Step::Complete));
    // A bitmap too short is refused up front.
    let big = Plan::new(65 * 4096, 4096).unwrap();
    assert_eq!(
        Progress::new(big, &mut [0u64; 1]),
        Err(F2cnError::BitmapTooSmall)
    );
}

#[test]
fn swapped_chunks_fail_the_digest() {
    let plan = Plan::new(8192, 4096).unwrap();
    let file: Vec<u8> = (0..8192u32).map(|i| (i / 4096) as u8 + 1).collect();
    let (chunks, commit) = send(plan, &file);
    let mut got = [0u64; 1];
    let mut p = Progress::new(plan, &mut got).unwrap();
    p.data(&mut got, 0, &chunks[1].1).unwrap();
    p.commit(commit.size, commit.digest).unwrap();
    assert_eq!(
        p.data(&mut got, 4096, &chunks[0].1),
        Err(F2cnError::DigestMismatch)
    );
}

#[test]
fn answers_are_tracked_per_phase() {
    let targets = [3u16, 5, 9];
    let mut s = [TargetState::Waiting; 3];
    assert_eq!(outcome(&targets, &s), Outcome::Waiting);
    assert!(record(&targets, &mut s, 5, 0));
    assert!(!record(&targets, &mut s, 4, 0)); // not a target
    record(&targets, &mut s, 3, 0);
    record(&targets, &mut s, 9, 0);
    assert_eq!(outcome(&targets, &s), Outcome::AllDone);
    f2cn::next_phase(&mut s);
    assert_eq!(outcome(&targets, &s), Outcome::Waiting);
    record(&targets, &mut s, 9, 28); // ENOSPC
    record(&targets, &mut s, 9, 0); // a failure sticks
    assert_eq!(
        outcome(&targets, &s),
        Outcome::Failed { node: 9, errno: 28 }
    );
    f2cn::next_phase(&mut s);
    assert_eq!(s[2], TargetState::Failed(28));
}

proptest! {
    /// Whatever order the chunks and the commit arrive in, the receiver
    /// completes exactly at the last of them, with the same file.
    #[test]
    fn any_arrival_order_completes_once(
        size in 0usize..40_000,
        chunk_shift in 0u32..3,
        order in proptest::collection::vec(any::<u32>(), 0..16),
        commit_at in any::<u32>(),
    ) {
        let file: Vec<u8> = (0..size).map(|i| (i * 31 + i / 251) as u8).collect();
        let plan = Plan::new(size as u64, 4096 << chunk_shift).unwrap();
        let (mut chunks, commit) = send(plan, &file);
        // Shuffle by the random keys.
        for (i, k) in order.iter().enumerate() {
            if !chunks.is_empty() {
                let n = chunks.len();
                chunks.swap(i % n, *k as usize % n);
            }
        }
        let commit_at = commit_at as usize % (chunks.len() + 1);
        let mut got = vec![0u64; plan.bitmap_words()];
        let mut p = Progress::new(plan, &mut got).unwrap();
        let mut out = vec![0u8; size];
        let mut steps = Vec::new();
        for (i, (off, data)) in chunks.iter().enumerate() {
            if i == commit_at {
                steps.push(p.commit(commit.size, commit.digest).unwrap());
            }
            out[*off as usize..*off as usize + data.len()].copy_from_slice(data);
            steps.push(p.data(&mut got, *off, data).unwrap());
        }
        if commit_at == chunks.len() {
            steps.push(p.commit(commit.size, commit.digest).unwrap());
        }
        prop_assert_eq!(steps.last(), Some(&Step::Complete));
        prop_assert!(steps[..steps.len() - 1].iter().all(|s| *s == Step::More));
        prop_assert_eq!(out, file);
    }

    /// A chunk with one byte changed never completes the transfer.
    #[test]
    fn a_corrupt_chunk_is_caught(
        size in 1usize..20_000,
        at in any::<usize>(),
        flip in 1u8..=255,
    ) {
        let file: Vec<u8> = (0..size).map(|i| (i * 13) as u8).collect();
        let plan = Plan::new(size as u64, 4096).unwrap();
        let (mut chunks, commit) = send(plan, &file);
        let at = at % size;
        let ci = at / 4096;
        chunks[ci].1[at % 4096] ^= flip;
        let mut got = vec![0u64; plan.bitmap_words()];
        let mut p = Progress::new(plan, &mut got).unwrap();
        p.commit(commit.size, commit.digest).unwrap();
        let mut last = Ok(Step::More);
        for (off, data) in &chunks {
            last = p.data(&mut got, *off, data);
        }
        prop_assert_eq!(last, Err(F2cnError::DigestMismatch));
    }
}
