// SPDX-License-Identifier: GPL-2.0

//! Replays the cargo-fuzz corpora (`fuzz/corpus/<target>/`) through the
//! fuzz targets' drivers, so a stable `cargo test` keeps exercising what
//! the fuzzer found without nightly or libFuzzer.

mod fuzz_driver;

use fuzz_driver::zoid;
use fuzz_driver::{
    build_frame, rx_record, CTRL_FIX_CRC, CTRL_FIX_LEN, CTRL_RESTART, CTRL_XXH64, GRANT_RESTART,
};
use std::fs;
use std::path::PathBuf;
use zoid_proto::treenet::frag::frame_spec;
use zoid_proto::treenet::wire::{
    encode_ack, parse, Checksum, FrameHeader, Hello, Lane, MsgHeader, PiggyAck, Role, HEADER_LEN,
    NO_ION, WIRE_VERSION_XXH64,
};

/// Every file of one target's corpus, sorted by name.
fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: empty corpus", dir.display());
    files
        .into_iter()
        .map(|p| {
            let data = fs::read(&p).unwrap();
            (p, data)
        })
        .collect()
}

#[test]
fn treenet_rx_corpus_replays() {
    let mut delivered = 0;
    for (path, data) in corpus("treenet_rx") {
        let stats = fuzz_driver::treenet_rx(&data);
        println!("{}: {stats:?}", path.display());
        delivered += stats.delivered;
    }
    assert!(delivered > 0, "no corpus input delivers a message");
}

#[test]
fn grant_queue_corpus_replays() {
    let mut grants = 0;
    for (path, data) in corpus("grant_queue") {
        let stats = fuzz_driver::grant_queue(&data);
        println!("{}: {stats:?}", path.display());
        grants += stats.grants;
    }
    assert!(grants > 0, "no corpus input grants a request");
}

fn hello_frame(src: u16, epoch: u32) -> Vec<u8> {
    let hello = Hello {
        epoch,
        peer_epoch: 0,
        pset: 0,
        role: Role::Cn,
        hops: 1,
        features: 0,
        n_below: 2,
        below: {
            let mut b = [0u16; 96];
            b[0] = 10;
            b[1] = 11;
            b
        },
        ion: NO_ION,
    };
    let mut p = [0u8; 256];
    let n = hello.encode(&mut p);
    build_frame(&FrameHeader::hello(src), &p[..n])
}

/// Frames of one message: `(seq, frame)` in order.
fn message_frames(src: u16, lane: Lane, seq: u32, len: usize, payload: usize) -> Vec<Vec<u8>> {
    let h = MsgHeader {
        origin: src,
        dst: 0,
        channel: 3,
        flags: 0,
        len: len as u32,
        id: 7,
    };
    let msg: Vec<u8> = (0..len).map(|i| i as u8).collect();
    let mut frames = Vec::new();
    let mut i = 0;
    while let Some(spec) = frame_spec(i, len, payload) {
        let mut p = Vec::new();
        if i == 0 {
            p.extend_from_slice(&h.encode());
        }
        p.extend_from_slice(&msg[spec.offset..spec.offset + spec.len]);
        let fh = FrameHeader::data(src, 0, lane, seq.wrapping_add(i as u32), spec.flags);
        frames.push(build_frame(&fh, &p));
        i += 1;
    }
    frames
}

/// The driver is not vacuous: a hello, a message out of order, an ack.
#[test]
fn treenet_rx_driver_delivers() {
    let mut input = vec![0x7f];
    input.extend(rx_record(0, &hello_frame(5, 1)));
    let frames = message_frames(5, Lane::Bulk, 0, 3000, 240);
    assert!(frames.len() > 3);
    // Second frame first (buffered), then the rest in order, a duplicate.
    input.extend(rx_record(0, &frames[1]));
    for f in &frames {
        input.extend(rx_record(0, f));
    }
    let ack = FrameHeader::ack(5, 0, Lane::Control, 3);
    input.extend(rx_record(0, &build_frame(&ack, &encode_ack(0b101))));
    let stats = fuzz_driver::treenet_rx(&input);
    assert_eq!(stats.parse_errors, 0);
    assert_eq!(stats.hellos, 1);
    assert_eq!(stats.buffered, 1);
    assert_eq!(stats.consumed, frames.len());
    assert_eq!(stats.delivered, 1);
    assert_eq!(stats.acks, 1);
    assert_eq!(stats.reasm_errors, 0);
}

/// Data frames that carry acks: the ack is taken (as the engine does,
/// before the data), the data consumed without the ack's bytes.
#[test]
fn treenet_rx_driver_takes_piggybacked_acks() {
    let mut input = vec![0x7f];
    input.extend(rx_record(0, &hello_frame(5, 1)));
    let mut frames = message_frames(5, Lane::Bulk, 0, 1000, 240);
    // Re-seal the first and last frames with an ack for each lane.
    for (i, lane, next) in [(0, Lane::Control, 2), (frames.len() - 1, Lane::Bulk, 1)] {
        let f = &frames[i];
        let (h, p) = parse(f, 1484).unwrap();
        let h = h.with_ack(PiggyAck { lane, next });
        frames[i] = build_frame(&h, p);
    }
    for f in &frames {
        input.extend(rx_record(0, f));
    }
    let stats = fuzz_driver::treenet_rx(&input);
    assert_eq!(stats.parse_errors, 0);
    assert_eq!(stats.acks, 2);
    assert_eq!(stats.consumed, frames.len());
    assert_eq!(stats.delivered, 1);
    assert_eq!(stats.reasm_errors, 0);
}

/// The control bits repair a frame's checksum and length.
#[test]
fn treenet_rx_driver_fixes_frames() {
    let mut input = vec![0x80];
    let mut hello = hello_frame(9, 2);
    hello[12] ^= 0xff;
    input.extend(rx_record(0, &hello));
    input.extend(rx_record(CTRL_FIX_CRC, &hello));
    let mut frames = message_frames(9, Lane::Control, 0xffff_ffc0, 100, 64);
    for f in frames.iter_mut() {
        f[6] = 0xee;
        f[12] = !f[12];
    }
    for f in &frames {
        input.extend(rx_record(CTRL_FIX_CRC | CTRL_FIX_LEN, f));
    }
    let stats = fuzz_driver::treenet_rx(&input);
    assert_eq!(stats.parse_errors, 1);
    assert_eq!(stats.hellos, 1);
    assert_eq!(stats.delivered, 1);
}

/// Frames of wire version 2 (XXH64 checksums) take the same path; the
/// XXH64 control bit makes a record one.
#[test]
fn treenet_rx_driver_takes_xxh64_frames() {
    let mut input = vec![0x7f];
    input.extend(rx_record(0, &hello_frame(5, 1)));
    let frames = message_frames(5, Lane::Bulk, 0, 3000, 240);
    let (first, rest) = frames.split_at(2);
    for f in first {
        // Re-encoded as version 2 here, by the driver's control bits below.
        let (h, p) = parse(f, 1484).unwrap();
        let mut hdr = [0u8; HEADER_LEN];
        h.encode_with(Checksum::Xxh64, &[p], &mut hdr);
        let mut v2 = hdr.to_vec();
        v2.extend_from_slice(p);
        assert_eq!(v2[0], WIRE_VERSION_XXH64);
        input.extend(rx_record(0, &v2));
    }
    for f in rest {
        let mut f = f.clone();
        f[12] = !f[12];
        input.extend(rx_record(CTRL_FIX_CRC | CTRL_FIX_LEN | CTRL_XXH64, &f));
    }
    let stats = fuzz_driver::treenet_rx(&input);
    assert_eq!(stats.parse_errors, 0);
    assert_eq!(stats.consumed, frames.len());
    assert_eq!(stats.delivered, 1);
}

#[test]
fn grant_driver_grants() {
    // Two slots; push (peer 1, id 0), (peer 1, id 1), (peer 2, id 0);
    // grant twice (peer 1 and peer 2), complete peer 1's, grant again.
    let input = [2, 0x08, 0, 0x08, 1, 0x10, 0, 2, 0, 2, 0, 0x0c, 0, 2, 0];
    let stats = fuzz_driver::grant_queue(&input);
    assert_eq!(stats.ops, 7);
    assert_eq!(stats.grants, 3);
    assert_eq!(stats.completed, 1);
}

/// A restart record separates two inputs: the file replays both.
#[test]
fn treenet_rx_restart_joins_inputs() {
    let mut one = vec![0x7f];
    one.extend(rx_record(0, &hello_frame(5, 1)));
    for f in message_frames(5, Lane::Control, 0, 500, 240) {
        one.extend(rx_record(0, &f));
    }
    let a = fuzz_driver::treenet_rx(&one);
    assert_eq!(a.delivered, 1);
    let mut two = one.clone();
    two.extend(rx_record(CTRL_RESTART, &[0x7f]));
    two.extend_from_slice(&one[1..]);
    let b = fuzz_driver::treenet_rx(&two);
    assert_eq!(b.records, 2 * a.records + 1);
    assert_eq!(b.delivered, 2);
    assert_eq!(b.consumed, 2 * a.consumed);
    // Without the restart the second copy's frames are duplicates.
    let mut dup = one.clone();
    dup.extend_from_slice(&one[1..]);
    assert_eq!(fuzz_driver::treenet_rx(&dup).delivered, 1);
}

#[test]
fn grant_restart_joins_inputs() {
    let one = [2u8, 0x08, 0, 0x08, 1, 0x10, 0, 2, 0, 2, 0, 0x0c, 0, 2, 0];
    let a = fuzz_driver::grant_queue(&one);
    let mut two = one.to_vec();
    two.extend_from_slice(&[7, GRANT_RESTART | one[0]]);
    two.extend_from_slice(&one[1..]);
    let b = fuzz_driver::grant_queue(&two);
    assert_eq!(b.ops, 2 * a.ops + 1);
    assert_eq!(b.grants, 2 * a.grants);
    assert_eq!(b.completed, 2 * a.completed);
}

#[test]
fn zoid_dispatch_corpus_replays() {
    let mut replies = 0;
    for (path, data) in corpus("zoid_dispatch") {
        let stats = fuzz_driver::zoid::zoid_dispatch(&data);
        println!("{}: {stats:?}", path.display());
        replies += stats.replies;
    }
    assert!(replies > 0, "no corpus input gets a reply");
}

/// Every sample call, as records of a `zoid_dispatch` input.
fn zoid_calls(groups: &[u32]) -> Vec<u8> {
    let mut input = Vec::new();
    for (i, (plugin, function, args)) in zoid::sample_calls().into_iter().enumerate() {
        let msg = zoid::call_message(plugin, function, i as u32, groups, &args);
        input.extend(zoid::zoid_record(0, &msg));
    }
    input
}

/// The driver is not vacuous: every function runs and replays.
#[test]
fn zoid_dispatch_driver_dispatches() {
    let calls = zoid::sample_calls().len();
    let mut input = vec![6]; // 4 KiB replies
    input.extend(zoid_calls(&[]));
    input.extend(zoid_calls(&[7, 8, 9]));
    let stats = zoid::zoid_dispatch(&input);
    assert_eq!(stats.records, 2 * calls);
    assert_eq!(stats.split_ok, 2 * calls);
    assert_eq!(stats.dispatch_errors, 0);
    assert_eq!(stats.replies + stats.errno_replies, 2 * calls);
    assert!(stats.replies > calls, "{stats:?}");
    // 12-byte replies: only calls with no out values and no array fit.
    let mut small = vec![2];
    small.extend(zoid_calls(&[]));
    let stats = zoid::zoid_dispatch(&small);
    assert!(stats.dispatch_errors > 0 && stats.replies > 0, "{stats:?}");
}

/// Fix-ups, restarts, attach payloads and client records.
#[test]
fn zoid_dispatch_driver_fixes_and_clients() {
    use zoid_proto::zoid::wire::{AttachRequest, CallHeader, MsgKind, HEADER_LEN};
    let mut input = vec![0];
    // Garbage header fixed into a ztest call of function 1 (null).
    let mut junk = vec![0xffu8; HEADER_LEN];
    junk[6..8].copy_from_slice(&17u16.to_be_bytes());
    input.extend(zoid::zoid_record(
        zoid::ZCTRL_FIX | zoid::ZCTRL_CALL | zoid::ZCTRL_ZTEST,
        &junk,
    ));
    input.extend(zoid::zoid_record(zoid::ZCTRL_RESTART, &[6]));
    let mut att = vec![0u8; HEADER_LEN];
    let a = AttachRequest {
        proto: 1 << 16,
        node: 3,
        max_reply: 65536,
    };
    let mut h = CallHeader::new(MsgKind::Attach, 1);
    h.arg_len = 16;
    h.encode((&mut att[..HEADER_LEN]).try_into().unwrap());
    att.extend_from_slice(&a.encode());
    input.extend(zoid::zoid_record(0, &att));
    // Client records: `null`'s reply (ret 0), then a malformed one.
    input.extend(zoid::zoid_record(
        zoid::ZCTRL_CLIENT,
        &[0, 0, 0, 0, 0, 0, 0, 0, 0],
    ));
    input.extend(zoid::zoid_record(zoid::ZCTRL_CLIENT, &[0, 1]));
    let stats = zoid::zoid_dispatch(&input);
    assert_eq!(stats.records, 5);
    assert_eq!(stats.split_ok, 2);
    assert_eq!(stats.dispatch_errors, 1, "{stats:?}"); // 0-byte replies
    assert_eq!(stats.attach, 1);
    assert_eq!(stats.client_calls, 2);
    assert_eq!(stats.client_ok, 1);
}

#[test]
fn ssi_coherence_corpus_replays() {
    let mut grants = 0;
    for (path, data) in corpus("ssi_coherence") {
        let stats = fuzz_driver::ssi::ssi_coherence(&data);
        println!("{}: {stats:?}", path.display());
        grants += stats.grants;
    }
    assert!(grants > 0, "no corpus input grants an access");
}

/// Random inputs through the ssi driver, benign and hostile, on stable
/// Rust (the fuzzer explores further).
#[test]
fn ssi_coherence_random_inputs_keep_the_invariants() {
    let mut x = 0x243f_6a88_85a3_08d3u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..3000 {
        let len = (next() % 400) as usize;
        let input: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        fuzz_driver::ssi::ssi_coherence(&input);
    }
}

/// Seeded random inputs through the grant driver (plain and weighted
/// pushes, grants, completions, forgets, growth): the queue matches the
/// reference model on every one; cargo-fuzz explores further.
#[test]
fn grant_driver_random_inputs_match_the_model() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut grants = 0;
    for _ in 0..3000 {
        let input: Vec<u8> = (0..129)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        grants += fuzz_driver::grant_queue(&input).grants;
    }
    assert!(grants > 10_000, "{grants} grants");
}
