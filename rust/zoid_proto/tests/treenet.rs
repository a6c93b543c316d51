// SPDX-License-Identifier: GPL-2.0

//! Host tests of treenet's protocol logic: wire format, fragmentation,
//! reassembly, reliability over a simulated lossy link, rendezvous grants.

use proptest::prelude::*;
use std::collections::VecDeque;
use zoid_proto::treenet::arq::{
    FrameSlot, RecvWindow, RtoEstimator, RxClass, SendWindow, MAX_WINDOW,
};
use zoid_proto::treenet::frag::{frame_count, frame_spec, ReasmError, Reassembler};
use zoid_proto::treenet::grant::{GrantError, GrantQueue, Request, Waiting};
use zoid_proto::treenet::wire::*;

fn build_frame(h: &FrameHeader, payload: &[u8]) -> Vec<u8> {
    build_frame_with(Checksum::Crc32c, h, payload)
}

fn build_frame_with(sum: Checksum, h: &FrameHeader, payload: &[u8]) -> Vec<u8> {
    let mut hdr = [0u8; HEADER_LEN];
    h.encode_with(sum, &[payload], &mut hdr);
    let mut f = hdr.to_vec();
    f.extend_from_slice(payload);
    let (ack, n) = h.ack_bytes();
    f.extend_from_slice(&ack[..n]);
    f
}

#[test]
fn header_is_zoid_sized_and_round_trips() {
    let h = FrameHeader::data(3, 0, Lane::Bulk, 0xdead_beef, FLAG_FIRST | FLAG_LAST);
    let f = build_frame(&h, &[7u8; ZOID_PACKET_PAYLOAD]);
    assert_eq!(f.len(), 256, "a 240-byte packet is a 256-byte tree packet");
    let (back, payload) = parse(&f, ZOID_PACKET_PAYLOAD).unwrap();
    assert_eq!(back, h);
    assert_eq!(payload, &[7u8; 240][..]);
}

#[test]
fn padding_after_the_payload_is_ignored() {
    let h = FrameHeader::ack(1, 2, Lane::Control, 5);
    let mut f = build_frame(&h, &encode_ack(0b101));
    f.resize(60, 0); // Ethernet minimum frame padding
    let (back, p) = parse(&f, 1500).unwrap();
    assert_eq!(back, h);
    assert_eq!(decode_ack(p), Some(0b101));
}

#[test]
fn bad_frames_are_refused_by_reason() {
    let h = FrameHeader::data(1, 0, Lane::Control, 9, FLAG_FIRST);
    let f = build_frame(&h, b"hello world, this is a payload");
    assert_eq!(parse(&f[..10], 1500), Err(FrameError::Truncated));
    assert_eq!(parse(&f[..f.len() - 1], 1500), Err(FrameError::Truncated));
    assert_eq!(parse(&f, 8), Err(FrameError::Oversized));
    let mut v = f.clone();
    v[0] = 3;
    assert_eq!(parse(&v, 1500), Err(FrameError::BadVersion));
    // Version 2 is known: a CRC frame relabelled fails its XXH64 check.
    let mut v2 = f.clone();
    v2[0] = WIRE_VERSION_XXH64;
    assert_eq!(parse(&v2, 1500), Err(FrameError::BadChecksum));
    let mut c = f.clone();
    c[20] ^= 0x10;
    assert_eq!(parse(&c, 1500), Err(FrameError::BadChecksum));
    // A valid checksum over an unknown kind.
    let mut k = f.clone();
    k[1] = 0x90;
    let mut crc = zoid_proto::crc32c::Crc32c::new();
    crc.update(&k[..12]);
    crc.update(&k[16..]);
    k[12..16].copy_from_slice(&crc.finish().to_be_bytes());
    assert_eq!(parse(&k, 1500), Err(FrameError::BadKind));
}

#[test]
fn xxh64_frames_round_trip_and_are_checked() {
    let h = FrameHeader::data(3, 0, Lane::Bulk, 77, FLAG_FIRST).with_ack(PiggyAck {
        lane: Lane::Control,
        next: 12,
    });
    let payload: Vec<u8> = (0..1200u32).map(|i| (i * 31) as u8).collect();
    let f = build_frame_with(Checksum::Xxh64, &h, &payload);
    assert_eq!(f[0], WIRE_VERSION_XXH64);
    let (back, p, seal) = parse_frame(&f, 1500).unwrap();
    assert_eq!((back, p, seal), (h, &payload[..], Seal::Checksum));
    // The same frame checksummed by CRC differs only in version and field.
    let c = build_frame(&h, &payload);
    assert_eq!(c[0], WIRE_VERSION);
    assert_eq!(c[1..12], f[1..12]);
    assert_eq!(c[16..], f[16..]);
    // Every single bit flipped past the version byte is caught (a flip
    // of the length or kind is refused for its own reason).
    for bit in 8..f.len() * 8 {
        let mut x = f.clone();
        x[bit / 8] ^= 1 << (bit % 8);
        assert!(parse_frame(&x, 1500).is_err(), "bit {bit}");
    }
    // Relabelled as version 1, its checksum is a CRC's no longer.
    let mut v1 = f.clone();
    v1[0] = WIRE_VERSION;
    assert_eq!(parse(&v1, 1500), Err(FrameError::BadChecksum));
}

#[test]
fn authenticated_frames_are_version_1_only() {
    let key = zoid_proto::siphash::SipKey([1, 2]);
    let h = FrameHeader::ack(1, 2, Lane::Control, 5);
    let p = encode_ack(0);
    let mut hdr = [0u8; HEADER_LEN];
    let mut t = [0u8; MAC_TRAILER_LEN];
    h.encode_sealed(&[&p], &key, Session::NONE, &mut hdr, &mut t);
    let mut f = hdr.to_vec();
    f.extend_from_slice(&p);
    f.extend_from_slice(&t);
    assert!(matches!(parse_frame(&f, 1500), Ok((_, _, Seal::Tag(_)))));
    f[0] = WIRE_VERSION_XXH64;
    assert_eq!(parse_frame(&f, 1500).err(), Some(FrameError::BadVersion));
}

#[test]
fn piggybacked_ack_round_trips_and_is_checksummed() {
    for lane in Lane::ALL {
        let ack = PiggyAck {
            lane,
            next: 0xffff_fffe,
        };
        let h = FrameHeader::data(3, 0, Lane::Bulk, 77, FLAG_FIRST).with_ack(ack);
        let f = build_frame(&h, b"call");
        assert_eq!(f.len(), HEADER_LEN + 4 + PIGGY_ACK_LEN);
        // The length field counts the ack; the parsed payload does not.
        assert_eq!(u16::from_be_bytes([f[6], f[7]]), 8);
        let (got, p) = parse(&f, 1500).unwrap();
        assert_eq!(got, h);
        assert_eq!(got.ack, Some(ack));
        assert_eq!(p, b"call");
        // The ack's bytes are covered by the checksum.
        let mut bad = f.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert_eq!(parse(&bad, 1500), Err(FrameError::BadChecksum));
        // And by the tag of an authenticated frame.
        let key = zoid_proto::siphash::SipKey([1, 2]);
        let session = Session {
            src_epoch: 5,
            dst_epoch: 6,
        };
        let mut hdr = [0u8; HEADER_LEN];
        let mut trailer = [0u8; MAC_TRAILER_LEN];
        h.encode_sealed(&[b"ca", b"ll"], &key, session, &mut hdr, &mut trailer);
        let mut sealed = hdr.to_vec();
        sealed.extend_from_slice(b"call");
        sealed.extend_from_slice(&ack.encode());
        sealed.extend_from_slice(&trailer);
        let (got, p, seal) = parse_frame(&sealed, 1500).unwrap();
        assert_eq!((got, p), (h, &b"call"[..]));
        assert_eq!(check_seal(Some(&key), seal, session, &sealed), Ok(()));
        sealed[HEADER_LEN + 5] ^= 0x80;
        let (_, _, seal) = parse_frame(&sealed, 1500).unwrap();
        assert_eq!(
            check_seal(Some(&key), seal, session, &sealed),
            Err(FrameError::BadMac)
        );
    }
    // Acks ride on data frames only.
    let ack = PiggyAck {
        lane: Lane::Control,
        next: 1,
    };
    assert_eq!(
        FrameHeader::ack(1, 2, Lane::Control, 5).with_ack(ack).ack,
        None
    );
    assert_eq!(FrameHeader::hello(1).with_ack(ack).ack, None);
}

#[test]
fn piggyback_kind_too_short_for_its_ack_is_truncated() {
    // A frame of kind "data + control ack" whose payload is 3 bytes.
    let mut f = vec![WIRE_VERSION, 0x43, 0, 1, 0, 2, 0, 3, 0, 0, 0, 9, 0, 0, 0, 0];
    f.extend_from_slice(b"abc");
    let mut crc = zoid_proto::crc32c::Crc32c::new();
    crc.update(&f[..12]);
    crc.update(&f[16..]);
    let sum = crc.finish();
    f[12..16].copy_from_slice(&sum.to_be_bytes());
    assert_eq!(parse(&f, 1500), Err(FrameError::Truncated));
    // With an empty data part it is a valid frame.
    let h = FrameHeader::data(1, 2, Lane::Control, 9, FLAG_LAST).with_ack(PiggyAck {
        lane: Lane::Bulk,
        next: 4,
    });
    let f = build_frame(&h, b"");
    let (got, p) = parse(&f, 1500).unwrap();
    assert_eq!((got, p.len()), (h, 0));
}

#[test]
fn hello_round_trips_and_fits_a_zoid_packet() {
    let mut below = [0u16; HELLO_MAX_BELOW];
    for (i, b) in below.iter_mut().enumerate() {
        *b = i as u16 + 100;
    }
    let h = Hello {
        epoch: 0x1234_5678,
        peer_epoch: 9,
        pset: 2,
        role: Role::Cn,
        hops: 1,
        features: FEATURE_PIGGY_ACK,
        n_below: HELLO_MAX_BELOW as u8,
        below,
        ion: NO_ION,
    };
    let mut buf = [0u8; 256];
    let n = h.encode(&mut buf);
    assert!(n <= ZOID_PACKET_PAYLOAD);
    assert_eq!(n, h.encoded_len());
    assert_eq!(Hello::decode(&buf[..n]), Some(h));
    assert_eq!(Hello::decode(&buf[..n - 1]), None);
    // With the ION's id: two bytes more, still one packet.
    let h = Hello {
        features: FEATURE_PIGGY_ACK | FEATURE_ION_ID,
        ion: 7,
        ..h
    };
    let n = h.encode(&mut buf);
    assert!(n <= ZOID_PACKET_PAYLOAD);
    assert_eq!(n, h.encoded_len());
    assert_eq!(Hello::decode(&buf[..n]), Some(h));
    // Announced but cut off: refused.
    assert_eq!(Hello::decode(&buf[..n - 1]), None);
}

#[test]
fn hello_without_the_ion_feature_reads_as_no_ion() {
    // A hello from a node that predates FEATURE_ION_ID, trailing bytes
    // and all: no ION known, whatever follows `below`.
    let h = Hello {
        epoch: 1,
        peer_epoch: 2,
        pset: 0,
        role: Role::Cn,
        hops: 2,
        features: FEATURE_PIGGY_ACK | FEATURE_XXH64,
        n_below: 1,
        below: [3u16; HELLO_MAX_BELOW],
        ion: 9,
    };
    let mut buf = [0xaau8; 256];
    let n = h.encode(&mut buf);
    assert_eq!(n, h.encoded_len());
    let back = Hello::decode(&buf[..n + 2]).unwrap();
    assert_eq!(back.ion, NO_ION);
    assert_eq!(back.below[0], 3);
}

#[test]
fn frame_counts_in_both_framing_modes() {
    assert_eq!(frame_count(0, 240), 1);
    assert_eq!(frame_count(224, 240), 1);
    assert_eq!(frame_count(225, 240), 2);
    assert_eq!(frame_count(4 * 1024 * 1024 + 1024, 240), 17481);
    assert_eq!(frame_count(4 * 1024 * 1024 + 1024, 1484), 2828);
    let last = frame_spec(1, 225, 240).unwrap();
    assert_eq!((last.offset, last.len, last.flags), (224, 1, FLAG_LAST));
    assert_eq!(frame_spec(2, 225, 240), None);
}

/// Splits a message into frame payloads as the sender would.
fn fragments(msg: &[u8], hdr: MsgHeader, payload: usize) -> Vec<(u8, Vec<u8>)> {
    (0..frame_count(msg.len(), payload))
        .map(|i| {
            let s = frame_spec(i, msg.len(), payload).unwrap();
            let mut p = Vec::new();
            if s.flags & FLAG_FIRST != 0 {
                p.extend_from_slice(&hdr.encode());
            }
            p.extend_from_slice(&msg[s.offset..s.offset + s.len]);
            assert!(p.len() <= payload);
            (s.flags, p)
        })
        .collect()
}

fn header(len: usize) -> MsgHeader {
    MsgHeader {
        origin: 1,
        dst: 0,
        channel: 7,
        flags: 0,
        len: len as u32,
        id: 42,
    }
}

#[test]
fn reassembler_refuses_bad_sequences() {
    let mut r = Reassembler::new();
    assert_eq!(r.feed(0, b"abc", 100), Err(ReasmError::NoStart));
    assert_eq!(
        r.feed(FLAG_FIRST, b"short", 100),
        Err(ReasmError::BadHeader)
    );
    let big = header(101).encode();
    assert_eq!(r.feed(FLAG_FIRST, &big, 100), Err(ReasmError::TooLong));
    let mut p = header(2).encode().to_vec();
    p.extend_from_slice(b"abc");
    assert_eq!(r.feed(FLAG_FIRST, &p, 100), Err(ReasmError::Overrun));
    let p = header(4).encode();
    assert!(r.feed(FLAG_FIRST, &p, 100).is_ok());
    assert_eq!(r.feed(FLAG_LAST, b"abc", 100), Err(ReasmError::Short));
    assert!(!r.in_message());
    assert!(r.feed(FLAG_FIRST, &p, 100).is_ok());
    assert_eq!(r.feed(FLAG_FIRST, &p, 100), Err(ReasmError::Interrupted));
}

#[test]
fn rto_follows_rfc6298_and_backs_off() {
    let ms = 1_000_000u64;
    let mut e = RtoEstimator::new(200 * ms, 10 * ms, 2000 * ms);
    assert_eq!(e.rto(), 200 * ms);
    e.sample(20 * ms);
    assert_eq!(e.rto(), 60 * ms); // srtt + 4 * srtt/2
    for _ in 0..50 {
        e.sample(20 * ms);
    }
    // A steady RTT: the variance decays and the RTO approaches the RTT.
    assert!(e.rto() >= 20 * ms && e.rto() < 21 * ms, "{}", e.rto());
    let steady = e.rto();
    e.backoff();
    e.backoff();
    assert_eq!(e.rto(), 4 * steady);
    let mut low = RtoEstimator::new(200 * ms, 10 * ms, 2000 * ms);
    low.sample(ms);
    assert_eq!(low.rto(), 10 * ms); // clamped at the minimum
    for _ in 0..20 {
        e.backoff();
    }
    assert_eq!(e.rto(), 2000 * ms);
}

#[test]
fn receive_window_classifies_and_sacks() {
    let mut w = RecvWindow::new(u32::MAX - 1, 8);
    assert_eq!(w.classify(u32::MAX - 1), RxClass::InOrder);
    assert_eq!(w.classify(u32::MAX - 2), RxClass::Duplicate);
    assert_eq!(w.classify(2), RxClass::Future); // wraps around
    assert_eq!(w.classify(6), RxClass::OutOfWindow);
    w.mark(0);
    w.mark(2);
    assert_eq!(w.classify(0), RxClass::Duplicate);
    assert_eq!(w.sack(), 0b1010);
    assert!(!w.next_but_one_buffered());
    w.advance();
    assert_eq!(w.pop_ready(), None);
    assert!(w.next_but_one_buffered());
    w.advance();
    assert_eq!(w.pop_ready(), Some(0));
    assert_eq!(w.pop_ready(), None);
    assert_eq!(w.next_seq(), 1);
    assert_eq!(w.sack(), 0b1);
}

#[test]
fn send_window_ignores_bogus_acks_and_marks_sacked() {
    let est = RtoEstimator::new(1000, 10, 100_000);
    let mut s = SendWindow::new(10, 4, est);
    for t in 0..4 {
        s.on_send(t);
    }
    assert!(!s.can_send());
    assert!(s.on_ack(20, 0, 5).bogus);
    assert!(s.on_ack(9, 0, 5).bogus);
    let out = s.on_ack(11, 0b10, 100); // 10 acked, 13 sacked, 11 and 12 missing
    assert_eq!((out.acked, out.from), (1, 10));
    let mut due = Vec::new();
    // Holes below a sacked frame go out again after `fast_after`.
    assert!(!s.due(150, 50, |q| due.push(q)));
    assert_eq!(due, vec![11, 12]);
    due.clear();
    assert!(s.due(100_000, 50, |q| due.push(q)));
    assert_eq!(due, vec![11, 12]);
}

#[test]
fn a_window_on_a_heap_ring_is_a_window_inline() {
    let est = RtoEstimator::new(1000, 10, 100_000);
    // A ring of any other length is refused (sequence numbers map onto it
    // modulo its length).
    for len in [0, 1, MAX_WINDOW - 1, MAX_WINDOW + 1] {
        assert!(SendWindow::with_ring(vec![FrameSlot::default(); len], 0, 8, est).is_none());
    }
    // The largest window, wrapping its sequence numbers, on both kinds of
    // ring: the same frames go, the same acks free them, the same holes
    // are due.
    let start = 0xffff_ff00;
    let mut inline = SendWindow::new(start, MAX_WINDOW, est);
    let mut heap = SendWindow::with_ring(
        vec![FrameSlot::default(); MAX_WINDOW],
        start,
        MAX_WINDOW,
        est,
    )
    .unwrap();
    for t in 0..MAX_WINDOW as u32 {
        assert_eq!(inline.on_send(t), heap.on_send(t));
    }
    assert!(!inline.can_send() && !heap.can_send());
    let next = start.wrapping_add(300);
    assert_eq!(
        inline.on_ack(next, 0b1010, 600),
        heap.on_ack(next, 0b1010, 600)
    );
    let (mut a, mut b) = (Vec::new(), Vec::new());
    assert_eq!(
        inline.due(5_000, 1_000, |q| a.push(q)),
        heap.due(5_000, 1_000, |q| b.push(q))
    );
    assert_eq!(a, b);
    // Bits 1 and 3: next + 2 and next + 4 arrived, the holes below them go.
    assert_eq!(a[..3], [next, next.wrapping_add(1), next.wrapping_add(3)]);
    assert_eq!(inline.in_flight(), MAX_WINDOW - 300);
    assert_eq!(heap.in_flight(), MAX_WINDOW - 300);
}

#[test]
fn timers_wake_for_holes_after_fast_after_not_the_rto() {
    let est = RtoEstimator::new(50_000, 10_000, 1_000_000);
    let mut s = SendWindow::new(0, 8, est);
    for t in 0..4 {
        s.on_send(t);
    }
    // Nothing acked yet: the newest frame (3, sent at 3 µs) is probed
    // after twice `fast_after`, long before the 50 ms RTO.
    assert_eq!(s.next_due_in(100, 2_000), Some(3_903));
    // 0 acked, 2 sacked: 1 is a hole (due 2 ms after it left), 3 is not.
    s.on_ack(1, 0b1, 400);
    // One 400 µs sample: srtt 400, so holes wait the 1 ms floor; RTO 10 ms.
    assert_eq!(
        (s.rto.srtt(), s.fast_after(), s.rto.rto()),
        (400, 1000, 10_000)
    );
    assert_eq!(s.next_due_in(500, 2_000), Some(1_501));
    let mut due = Vec::new();
    assert!(!s.due(2_001, 2_000, |q| due.push(q)));
    assert_eq!(due, vec![1]);
    s.on_retransmit(1, 2_001);
    // The resent hole goes again after `fast_after` at the earliest (its
    // first resend: due at 4 001 µs), frame 3's tail-loss probe (sent at
    // 3 µs, probed after twice `fast_after`) two microseconds later.
    assert_eq!(s.next_due_in(2_001, 2_000), Some(2_000));
    // With a long `fast_after` the probe waits for the RTO, which runs
    // from the last ack that made progress (at 400 µs): due at 10 400 µs.
    assert_eq!(s.next_due_in(2_001, 9_000), Some(8_399));
    // Both go, without an RTO backoff; then frame 3 waits for its RTO
    // like any frame sent twice, and the hole twice `fast_after`.
    due.clear();
    assert!(!s.due(4_003, 2_000, |q| due.push(q)));
    assert_eq!(due, vec![1, 3]);
    s.on_retransmit(1, 4_003);
    s.on_retransmit(3, 4_003);
    assert_eq!(s.rto.rto(), 10_000);
    assert_eq!(s.next_due_in(4_003, 20_000), Some(10_000));
    assert_eq!(s.next_due_in(4_003, 2_000), Some(4_000));
    assert_eq!(SendWindow::new(0, 8, est).next_due_in(0, 1), None);
}

#[test]
fn a_resent_hole_backs_off_until_a_later_frame_arrives() {
    let est = RtoEstimator::new(50_000, 10_000, 1_000_000);
    let mut s = SendWindow::new(0, 8, est);
    for t in 0..3 {
        s.on_send(t);
    }
    // 0 acked, 2 sacked: 1 is a hole, resent after `fast_after`.
    s.on_ack(1, 0b1, 400);
    let mut due = Vec::new();
    s.due(2_001, 2_000, |q| due.push(q));
    assert_eq!(due, vec![1]);
    s.on_retransmit(1, 2_001);
    // Nothing sent after the resend has arrived: lost again (a lossy
    // link) or not yet answered (an overloaded receiver, slower than
    // `fast_after`).  It goes again after `fast_after`, then after twice
    // that, so a slow receiver does not get it every `fast_after`.
    let goes_at = |s: &mut SendWindow, quiet: u32, at: u32| {
        let mut due = Vec::new();
        assert!(!s.due(quiet, 2_000, |q| due.push(q)));
        assert!(due.is_empty(), "at {quiet}: {due:?}");
        assert!(!s.due(at, 2_000, |q| due.push(q)));
        assert_eq!(due, vec![1], "at {at}");
        s.on_retransmit(1, at);
    };
    goes_at(&mut s, 4_000, 4_001);
    goes_at(&mut s, 8_000, 8_001);
    assert_eq!(s.rto.rto(), 10_000, "no RTO backoff");
    // Frame 3, sent after the last resend, arrives (selectively acked):
    // the resent hole is lost again, and goes after `fast_after`.
    s.on_send(8_500);
    s.on_ack(1, 0b11, 8_600);
    goes_at(&mut s, 10_000, 10_001);
}

/// A request to send 1 MiB.
fn mib_request(peer: u16, id: u32) -> Request {
    Request {
        peer,
        id,
        len: 1 << 20,
    }
}

#[test]
fn grants_take_turns_one_per_peer_bounded_by_slots() {
    let mut g = GrantQueue::with_storage(vec![Waiting::default(); 8], 2);
    let r = mib_request;
    g.push(r(1, 1)).unwrap();
    g.push(r(1, 2)).unwrap();
    g.push(r(2, 1)).unwrap();
    g.push(r(3, 1)).unwrap();
    assert_eq!(g.push(r(3, 1)), Err(GrantError::Duplicate));
    assert_eq!(g.next_grant(), Some(r(1, 1)));
    // Peer 1 is busy: the far peer 2 is next, not peer 1's second message.
    assert_eq!(g.next_grant(), Some(r(2, 1)));
    assert_eq!(g.next_grant(), None); // both slots in use
    assert!(g.complete(1, 1));
    // Peers take turns: peer 3 has had nothing yet, peer 1 has.
    assert_eq!(g.next_grant(), Some(r(3, 1)));
    g.forget_peer(2);
    assert_eq!(g.next_grant(), Some(r(1, 2)));
    assert_eq!(g.waiting(), 0);
    // A peer may have two requests waiting, no more.
    g.push(r(9, 1)).unwrap();
    g.push(r(9, 2)).unwrap();
    assert_eq!(g.push(r(9, 3)), Err(GrantError::PeerLimit));
    for p in 10..16 {
        g.push(r(p, 1)).unwrap();
    }
    assert_eq!(g.push(r(20, 1)), Err(GrantError::Full));
}

/// Early grants: a peer whose one grant is draining may get its next
/// request in a free slot, but only when no peer without a grant waits,
/// and never a third grant.
#[test]
fn a_draining_grant_lets_its_peer_go_on() {
    let mut g = GrantQueue::with_storage(vec![Waiting::default(); 8], 2);
    let r = mib_request;
    g.push(r(1, 1)).unwrap();
    g.push(r(1, 2)).unwrap();
    assert_eq!(g.next_grant(), Some(r(1, 1)));
    assert_eq!(g.next_grant(), None, "one grant per peer until it drains");
    assert!(!g.draining(1, 9), "no such grant");
    assert!(g.draining(1, 1));
    assert_eq!(g.next_grant(), Some(r(1, 2)), "the next one, early");
    assert_eq!((g.held(1), g.held(2)), (2, 0));
    g.push(r(1, 3)).unwrap();
    assert!(g.draining(1, 2));
    assert_eq!(g.next_grant(), None, "two slots in use");
    assert!(g.complete(1, 1));
    assert_eq!(g.next_grant(), Some(r(1, 3)), "a free slot, 1 2 draining");
    // Another peer waiting goes before any early grant.
    assert!(g.complete(1, 2));
    g.push(r(1, 4)).unwrap();
    g.push(r(2, 1)).unwrap();
    assert!(g.draining(1, 3));
    assert_eq!(
        g.next_grant(),
        Some(r(2, 1)),
        "a peer without a grant first"
    );
    assert_eq!(g.next_grant(), None);
    assert!(g.complete(2, 1));
    assert_eq!(g.next_grant(), Some(r(1, 4)));
}

#[test]
fn nearly_received_is_half_or_what_is_in_flight() {
    use zoid_proto::treenet::grant::nearly_received;
    let mib = 1 << 20;
    assert!(!nearly_received(mib, 0, 190_000));
    assert!(!nearly_received(mib, mib / 2 - 1, 190_000));
    assert!(nearly_received(mib, mib / 2, 190_000));
    // 4 MiB: what is left fits in flight before half arrived.
    assert!(!nearly_received(4 * mib, 0, 190_000));
    assert!(nearly_received(4 * mib, 4 * mib - 190_000, 190_000));
    // A message smaller than what is in flight: at once.
    assert!(nearly_received(65_536, 0, 190_000));
    assert!(nearly_received(0, 0, 0));
    assert!(nearly_received(10, 20, 0), "more received than its length");
}

/// Active grants kept in caller storage (the kernel's heap `KVec`): its
/// length bounds the slots, whatever `set_slots` asks, and its stale
/// contents are cleared.
#[test]
fn slot_storage_bounds_the_grants() {
    let stale = Waiting::default();
    let mut g = GrantQueue::with_slot_storage(
        vec![Waiting::default(); 8],
        vec![Some(stale), Some(stale)],
        64,
    );
    assert_eq!(g.active(), 0);
    let r = |peer, id| Request { peer, id, len: 1 };
    for peer in 1..=4 {
        assert!(g.push(r(peer, 1)).is_ok());
    }
    assert_eq!(g.next_grant(), Some(r(1, 1)));
    assert_eq!(g.next_grant(), Some(r(2, 1)));
    assert_eq!(g.next_grant(), None, "2 slots of storage: 2 grants at once");
    assert!(g.complete(1, 1));
    assert_eq!(g.next_grant(), Some(r(3, 1)));
}

/// A relay pushed with weight 1 + (nodes below it) gets that many grants
/// for each grant of a leaf, while both always have requests waiting (the
/// leaf, back at once after its grant, starts at its last finish tag).
#[test]
fn weighted_peers_get_their_share() {
    let mut g = GrantQueue::with_storage(vec![Waiting::default(); 8], 1);
    let (mut relay_tag, mut leaf_tag) = (0u64, 0u64);
    let (mut next_relay, mut next_leaf) = (0u32, 0u32);
    let mut push = |g: &mut GrantQueue<Vec<Waiting>>, peer: u16| {
        let (id, tag, weight) = if peer == 1 {
            next_relay += 1;
            (next_relay, &mut relay_tag, 4)
        } else {
            next_leaf += 1;
            (next_leaf, &mut leaf_tag, 1)
        };
        g.push_weighted(Request { peer, id, len: 1 }, weight, tag)
            .unwrap();
    };
    for peer in [1, 1, 2, 2] {
        push(&mut g, peer);
    }
    // `n` grants, each completed and its peer asking again at once.
    fn grant(
        g: &mut GrantQueue<Vec<Waiting>>,
        push: &mut dyn FnMut(&mut GrantQueue<Vec<Waiting>>, u16),
        n: usize,
    ) -> Vec<u16> {
        (0..n)
            .map(|_| {
                let got = g.next_grant().unwrap();
                g.complete(got.peer, got.id);
                push(g, got.peer);
                got.peer
            })
            .collect()
    }
    let order = grant(&mut g, &mut push, 20);
    let relay = order.iter().filter(|&&p| p == 1).count();
    assert_eq!((relay, order.len() - relay), (16, 4), "{order:?}");
    // The leaf pauses for 10 grants of the relay, then asks again: it is
    // next (an idle peer comes back at the current virtual time), and its
    // pause earned it no more than that one turn.
    g.forget_peer(2);
    grant(&mut g, &mut push, 10);
    push(&mut g, 2);
    let order = grant(&mut g, &mut push, 10);
    assert_eq!(order[0], 2, "{order:?}");
    assert_eq!(order.iter().filter(|&&p| p == 2).count(), 3, "{order:?}");
}

#[test]
fn grant_storage_grows_keeping_fifo_order() {
    let mut g = GrantQueue::with_storage(vec![Waiting::default(); 3], 1);
    let r = |peer| Request {
        peer,
        id: 7,
        len: 1,
    };
    // Wrap the ring: head moves past the start.
    g.push(r(1)).unwrap();
    g.push(r(2)).unwrap();
    assert_eq!(g.next_grant(), Some(r(1)));
    g.push(r(3)).unwrap();
    g.push(r(4)).unwrap();
    assert_eq!(g.push(r(5)), Err(GrantError::Full));
    let small = vec![Waiting::default(); 2];
    assert_eq!(
        g.replace_storage(small)
            .map_err(|v| v.len())
            .map(|v| v.len()),
        Err(2)
    );
    let old = g.replace_storage(vec![Waiting::default(); 6]).unwrap();
    assert_eq!(old.len(), 3);
    assert_eq!(g.capacity(), 6);
    g.push(r(5)).unwrap();
    assert!(g.complete(1, 7));
    let order: Vec<u16> = core::iter::from_fn(|| {
        let n = g.next_grant()?;
        g.complete(n.peer, n.id);
        Some(n.peer)
    })
    .collect();
    assert_eq!(order, [2, 3, 4, 5]);
}

#[test]
fn an_empty_grant_storage_refuses_everything() {
    let mut g = GrantQueue::with_storage(Vec::new(), 1);
    assert_eq!(g.push(Request::default()), Err(GrantError::Full));
    assert_eq!(g.next_grant(), None);
    g.forget_peer(0);
}

/// A frame in flight on the simulated link.
#[derive(Clone)]
struct Wire {
    seq: u32,
    flags: u8,
    payload: Vec<u8>,
}

/// Moves messages over one lane with the given loss/dup/reorder rates
/// (per mille) and checks they arrive intact and in order.
fn run_lossy_lane(
    msgs: &[Vec<u8>],
    payload: usize,
    window: usize,
    drop: u32,
    dup: u32,
    reorder: u32,
    seed: u64,
) -> Vec<Vec<u8>> {
    let mut rng = seed | 1;
    let mut rand = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % 1000) as u32
    };
    let mut frames: VecDeque<(u8, Vec<u8>)> = VecDeque::new();
    for (i, m) in msgs.iter().enumerate() {
        let mut h = header(m.len());
        h.id = i as u32;
        frames.extend(fragments(m, h, payload));
    }
    let total = frames.len();
    let est = RtoEstimator::new(50, 20, 400);
    let mut tx = SendWindow::new(0xffff_fff0, window, est);
    let mut sent: Vec<(u8, Vec<u8>)> = Vec::new(); // indexed by seq - start
    let start = tx.base();
    let mut rx = RecvWindow::new(start, window);
    let mut buffered: std::collections::HashMap<u32, Wire> = Default::default();
    let mut reasm = Reassembler::new();
    let mut out = Vec::new();
    let mut cur: Vec<u8> = Vec::new();
    let mut to_rx: VecDeque<Wire> = VecDeque::new();
    let mut now = 0u32;
    let deliver = |w: &Wire, reasm: &mut Reassembler, cur: &mut Vec<u8>, out: &mut Vec<Vec<u8>>| {
        let step = reasm
            .feed(w.flags, &w.payload, 1 << 24)
            .expect("in-order frames reassemble");
        if let Some(h) = step.start {
            *cur = vec![0; h.len as usize];
        }
        cur[step.offset..step.offset + step.data.len()].copy_from_slice(step.data);
        if step.complete {
            out.push(std::mem::take(cur));
        }
    };
    let mut steps = 0;
    while out.len() < msgs.len() {
        steps += 1;
        assert!(steps < 1_000_000, "no progress");
        now += 1;
        // Sender: new frames while the window allows, then retransmissions.
        let mut emit = |w: Wire, to_rx: &mut VecDeque<Wire>| {
            let r = rand();
            if r < drop {
                return;
            }
            if r < drop + dup {
                to_rx.push_back(w.clone());
            }
            if rand() < reorder && !to_rx.is_empty() {
                to_rx.insert(to_rx.len() - 1, w);
            } else {
                to_rx.push_back(w);
            }
        };
        while tx.can_send() && sent.len() < total {
            let (flags, p) = frames[sent.len()].clone();
            let seq = tx.on_send(now);
            sent.push((flags, p.clone()));
            emit(
                Wire {
                    seq,
                    flags,
                    payload: p,
                },
                &mut to_rx,
            );
        }
        let mut due = Vec::new();
        if tx.due(now, 10, |s| due.push(s)) {
            tx.rto.backoff();
        }
        for s in due {
            tx.on_retransmit(s, now);
            let (flags, p) = sent[s.wrapping_sub(start) as usize].clone();
            emit(
                Wire {
                    seq: s,
                    flags,
                    payload: p,
                },
                &mut to_rx,
            );
        }
        // Receiver: consume what arrived, ack once per step (acks are lossy too).
        let mut got_any = false;
        while let Some(w) = to_rx.pop_front() {
            got_any = true;
            match rx.classify(w.seq) {
                RxClass::InOrder => {
                    deliver(&w, &mut reasm, &mut cur, &mut out);
                    rx.advance();
                    while let Some(s) = rx.pop_ready() {
                        let b = buffered.remove(&s).unwrap();
                        deliver(&b, &mut reasm, &mut cur, &mut out);
                    }
                }
                RxClass::Future => {
                    rx.mark(w.seq);
                    buffered.insert(w.seq, w);
                }
                RxClass::Duplicate | RxClass::OutOfWindow => {}
            }
        }
        if got_any && rand() >= drop {
            tx.on_ack(rx.next_seq(), rx.sack(), now + 1);
        }
    }
    assert!(buffered.is_empty() || rx.next_seq() != tx.next_seq());
    out
}

#[test]
fn lossless_lane_delivers_in_order() {
    let msgs: Vec<Vec<u8>> = (0..20).map(|i| vec![i as u8; i * 97]).collect();
    assert_eq!(run_lossy_lane(&msgs, 240, 16, 0, 0, 0, 1), msgs);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the loss, duplication and reordering, every message arrives
    /// once, intact, in order, in both framing modes.
    #[test]
    fn lossy_lane_delivers_every_message_intact(
        sizes in proptest::collection::vec(0usize..6000, 1..12),
        large in any::<bool>(),
        window in 1usize..64,
        drop in 0u32..300, dup in 0u32..200, reorder in 0u32..300,
        seed in any::<u64>(),
    ) {
        let msgs: Vec<Vec<u8>> = sizes.iter().enumerate()
            .map(|(i, &n)| (0..n).map(|j| (j * 31 + i * 7) as u8).collect()).collect();
        let payload = if large { 1484 } else { ZOID_PACKET_PAYLOAD };
        prop_assert_eq!(run_lossy_lane(&msgs, payload, window, drop, dup, reorder, seed), msgs);
    }

    /// Fragments cover the message exactly, each fits the frame.
    #[test]
    fn fragments_tile_the_message(len in 0usize..100_000, payload in 64usize..9000) {
        let mut at = 0;
        for i in 0..frame_count(len, payload) {
            let s = frame_spec(i, len, payload).unwrap();
            prop_assert_eq!(s.offset, at);
            let room = if i == 0 { payload - MSG_HEADER_LEN } else { payload };
            prop_assert!(s.len <= room);
            at += s.len;
        }
        prop_assert_eq!(at, len);
    }

    /// Any data frame with any piggybacked ack parses back to itself, its
    /// payload without the ack's bytes.
    #[test]
    fn piggybacked_frames_round_trip(
        payload in proptest::collection::vec(any::<u8>(), 0..300),
        bulk in any::<bool>(), ack_bulk in any::<bool>(), flags in 0u8..4,
        seq in any::<u32>(), next in any::<u32>(), src in any::<u16>(), dst in any::<u16>(),
    ) {
        let lane = |b| if b { Lane::Bulk } else { Lane::Control };
        let h = FrameHeader::data(src, dst, lane(bulk), seq, flags)
            .with_ack(PiggyAck { lane: lane(ack_bulk), next });
        let f = build_frame(&h, &payload);
        let (got, p) = parse(&f, payload.len() + PIGGY_ACK_LEN).unwrap();
        prop_assert_eq!(got, h);
        prop_assert_eq!(p, &payload[..]);
        // One byte less room than the frame needs: oversized.
        prop_assert_eq!(parse(&f, payload.len() + PIGGY_ACK_LEN - 1), Err(FrameError::Oversized));
    }

    /// The parser never panics and only accepts frames whose checksum holds.
    #[test]
    fn parser_survives_garbage(frame in proptest::collection::vec(any::<u8>(), 0..400)) {
        if let Ok((h, p)) = parse(&frame, 300) {
            prop_assert_eq!(&build_frame(&h, p)[..HEADER_LEN], &frame[..HEADER_LEN]);
        }
    }

    /// The reassembler never panics on arbitrary frame sequences and never
    /// reports data outside the announced length.
    #[test]
    fn reassembler_survives_garbage(
        frames in proptest::collection::vec((0u8..4, proptest::collection::vec(any::<u8>(), 0..64)), 0..32)
    ) {
        let mut r = Reassembler::new();
        let mut len = 0usize;
        for (flags, p) in &frames {
            if let Ok(step) = r.feed(*flags, p, 1000) {
                if let Some(h) = step.start {
                    len = h.len as usize;
                }
                prop_assert!(step.offset + step.data.len() <= len);
            }
        }
    }
}

#[test]
fn a_timeout_halves_the_congestion_window_and_resends_half_of_it() {
    let est = RtoEstimator::new(10_000, 10_000, 1_000_000);
    let mut s = SendWindow::new(0, 8, est);
    for t in 0..8 {
        s.on_send(t);
    }
    assert!(!s.can_send());
    // No answer for an RTO: the 4 oldest go again (half the window), the
    // window halves, the RTO doubles and its timer restarts.
    let mut due = Vec::new();
    assert!(s.due(10_007, 9_000, |q| due.push(q)));
    assert_eq!(due, vec![0, 1, 2, 3]);
    s.on_timeout(10_007);
    for &q in &due {
        s.on_retransmit(q, 10_007);
    }
    assert_eq!((s.cwnd(), s.rto.rto()), (4, 20_000));
    // Frames 4..8, unanswered too, wait for the restarted timer rather
    // than going at once; only frame 7's tail-loss probe (18 ms after it
    // left) comes before that.
    due.clear();
    assert!(!s.due(10_008, 9_000, |q| due.push(q)));
    assert!(due.is_empty(), "{due:?}");
    assert_eq!(s.next_due_in(10_008, 9_000), Some(7_999));
    // An ack for 0..4 (the resends) grows the window back by 4; a timeout
    // again halves it.
    s.on_ack(4, 0, 12_000);
    assert_eq!(s.cwnd(), 8);
    assert!(s.due(32_000, 9_000, |q| due.push(q)));
    s.on_timeout(32_000);
    assert_eq!(s.cwnd(), 4);
}

#[test]
fn a_slow_receiver_that_acks_draws_no_timeout() {
    let est = RtoEstimator::new(10_000, 10_000, 1_000_000);
    let mut s = SendWindow::new(0, 8, est);
    for t in 0..8 {
        s.on_send(t);
    }
    // One frame acked every 6 ms: each older than the RTO by the time its
    // ack comes, but the acks keep the timer from expiring: nothing goes
    // again but the newest frame's tail-loss probe.
    for i in 1..8u32 {
        let now = 6_000 * i;
        s.on_ack(i, 0, now);
        let mut due = Vec::new();
        assert!(!s.due(now + 5_000, 9_000, |q| due.push(q)), "at {now}");
        assert!(due.iter().all(|&q| q == 7), "at {now}: {due:?}");
        for q in due {
            s.on_retransmit(q, now + 5_000);
        }
    }
    assert_eq!(s.cwnd(), 8);
}

#[test]
fn peek_message_reads_whole_messages_of_data_frames_only() {
    let mh = MsgHeader {
        origin: 1,
        dst: 0,
        channel: 0x0203,
        flags: 0,
        len: 4,
        id: 9,
    };
    let mut payload = mh.encode().to_vec();
    payload.extend_from_slice(b"ping");
    let want = Some(PeekedMessage {
        origin: 1,
        channel: 0x0203,
        body: &b"ping"[..],
    });
    let first = FrameHeader::data(1, 0, Lane::Control, 5, FLAG_FIRST | FLAG_LAST);
    let f = build_frame(&first, &payload);
    assert_eq!(peek_message(&f), want);
    // With an ack riding along, and checksummed by XXH64: the same.
    let acked = first.with_ack(PiggyAck {
        lane: Lane::Bulk,
        next: 3,
    });
    assert_eq!(
        peek_message(&build_frame_with(Checksum::Xxh64, &acked, &payload)),
        want
    );
    // The first or a later frame of a longer message, an ack, a short
    // frame, lengths that disagree: none.
    let only_first = FrameHeader::data(1, 0, Lane::Control, 5, FLAG_FIRST);
    assert_eq!(peek_message(&build_frame(&only_first, &payload)), None);
    let later = FrameHeader::data(1, 0, Lane::Control, 6, FLAG_LAST);
    assert_eq!(peek_message(&build_frame(&later, b"tail")), None);
    assert_eq!(peek_message(&f[..HEADER_LEN + 5]), None);
    assert_eq!(peek_message(&[]), None);
    let mut ack = f.clone();
    ack[1] = 0x20;
    assert_eq!(peek_message(&ack), None);
    let mut longer = mh;
    longer.len = 5;
    let mut bad = longer.encode().to_vec();
    bad.extend_from_slice(b"ping");
    assert_eq!(peek_message(&build_frame(&first, &bad)), None);
}
