// SPDX-License-Identifier: GPL-2.0

//! Host tests of treenet's authenticated frames: SipHash-2-4 against the
//! reference vectors, sealing and verifying frames, and what a forger,
//! a tamperer, a replayer and a node with another key get.

use proptest::prelude::*;
use zoid_proto::siphash::{siphash24, SipHasher24, SipKey};
use zoid_proto::treenet::wire::*;

/// The reference implementation's vectors: key 00..0f, input 00..len-1
/// (the kernel's lib/tests/siphash_kunit.c has the same).
const VECTORS: [u64; 64] = [
    0x726fdb47dd0e0e31,
    0x74f839c593dc67fd,
    0x0d6c8009d9a94f5a,
    0x85676696d7fb7e2d,
    0xcf2794e0277187b7,
    0x18765564cd99a68d,
    0xcbc9466e58fee3ce,
    0xab0200f58b01d137,
    0x93f5f5799a932462,
    0x9e0082df0ba9e4b0,
    0x7a5dbbc594ddb9f3,
    0xf4b32f46226bada7,
    0x751e8fbc860ee5fb,
    0x14ea5627c0843d90,
    0xf723ca908e7af2ee,
    0xa129ca6149be45e5,
    0x3f2acc7f57c29bdb,
    0x699ae9f52cbe4794,
    0x4bc1b3f0968dd39c,
    0xbb6dc91da77961bd,
    0xbed65cf21aa2ee98,
    0xd0f2cbb02e3b67c7,
    0x93536795e3a33e88,
    0xa80c038ccd5ccec8,
    0xb8ad50c6f649af94,
    0xbce192de8a85b8ea,
    0x17d835b85bbb15f3,
    0x2f2e6163076bcfad,
    0xde4daaaca71dc9a5,
    0xa6a2506687956571,
    0xad87a3535c49ef28,
    0x32d892fad841c342,
    0x7127512f72f27cce,
    0xa7f32346f95978e3,
    0x12e0b01abb051238,
    0x15e034d40fa197ae,
    0x314dffbe0815a3b4,
    0x027990f029623981,
    0xcadcd4e59ef40c4d,
    0x9abfd8766a33735c,
    0x0e3ea96b5304a7d0,
    0xad0c42d6fc585992,
    0x187306c89bc215a9,
    0xd4a60abcf3792b95,
    0xf935451de4f21df2,
    0xa9538f0419755787,
    0xdb9acddff56ca510,
    0xd06c98cd5c0975eb,
    0xe612a3cb9ecba951,
    0xc766e62cfcadaf96,
    0xee64435a9752fe72,
    0xa192d576b245165a,
    0x0a8787bf8ecb74b2,
    0x81b3e73d20b49b6f,
    0x7fa8220ba3b2ecea,
    0x245731c13ca42499,
    0xb78dbfaf3a8d83bd,
    0xea1ad565322a1a0b,
    0x60e61c23a3795013,
    0x6606d7e446282b93,
    0x6ca4ecb15c5f91e1,
    0x9f626da15c9625f3,
    0xe51b38608ef25f57,
    0x958a324ceb064572,
];

fn reference_key() -> SipKey {
    let bytes: [u8; 16] = core::array::from_fn(|i| i as u8);
    SipKey::from_bytes(&bytes)
}

#[test]
fn siphash_matches_the_reference_vectors() {
    let key = reference_key();
    let input: Vec<u8> = (0..64u8).collect();
    for (len, want) in VECTORS.iter().enumerate() {
        assert_eq!(siphash24(&key, &[&input[..len]]), *want, "length {len}");
    }
}

#[test]
fn keys_parse_from_hex_and_nothing_else() {
    let k = SipKey::parse_hex(b"000102030405060708090a0b0c0d0e0f\n").unwrap();
    assert!(k == reference_key());
    assert!(SipKey::parse_hex(b"000102030405060708090A0B0C0D0E0F").unwrap() == k);
    for bad in [
        &b""[..],
        b"0001",
        b"000102030405060708090a0b0c0d0e0f00",
        b"000102030405060708090a0b0c0d0e0g",
        b"00 102030405060708090a0b0c0d0e0f",
    ] {
        assert!(SipKey::parse_hex(bad).is_none(), "{:?}", bad);
    }
    // A key never shows in debug output.
    assert_eq!(format!("{:?}", k), "SipKey(..)");
}

proptest! {
    /// Feeding the input in any pieces gives the one-piece tag.
    #[test]
    fn siphash_is_incremental(data in proptest::collection::vec(any::<u8>(), 0..300),
                              cuts in proptest::collection::vec(any::<usize>(), 0..6)) {
        let key = SipKey([0x1234_5678_9abc_def0, 0x0fed_cba9_8765_4321]);
        let whole = siphash24(&key, &[&data]);
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
        points.sort();
        let mut h = SipHasher24::new(&key);
        let mut at = 0;
        for p in points {
            h.update(&data[at..p]);
            at = p;
        }
        h.update(&data[at..]);
        prop_assert_eq!(h.finish(), whole);
    }
}

const KEY: SipKey = SipKey([0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210]);
const SESSION: Session = Session {
    src_epoch: 0x1111_1111,
    dst_epoch: 0x2222_2223,
};

fn sealed(h: &FrameHeader, pieces: &[&[u8]], key: &SipKey, session: Session) -> Vec<u8> {
    let mut hdr = [0u8; HEADER_LEN];
    let mut trailer = [0u8; MAC_TRAILER_LEN];
    h.encode_sealed(pieces, key, session, &mut hdr, &mut trailer);
    let mut f = hdr.to_vec();
    for p in pieces {
        f.extend_from_slice(p);
    }
    f.extend_from_slice(&trailer);
    f
}

fn accepts(
    frame: &[u8],
    key: &SipKey,
    session: Session,
) -> Result<(FrameHeader, Vec<u8>), FrameError> {
    let (h, p, seal) = parse_frame(frame, 1500)?;
    check_seal(Some(key), seal, session, frame)?;
    Ok((h, p.to_vec()))
}

#[test]
fn a_sealed_frame_round_trips_with_four_bytes_more() {
    let h = FrameHeader::data(3, 0, Lane::Bulk, 77, FLAG_FIRST);
    let payload = [9u8; ZOID_PACKET_PAYLOAD];
    let f = sealed(&h, &[&payload[..100], &payload[100..]], &KEY, SESSION);
    assert_eq!(f.len(), HEADER_LEN + ZOID_PACKET_PAYLOAD + MAC_TRAILER_LEN);
    let (back, p) = accepts(&f, &KEY, SESSION).unwrap();
    assert_eq!(back, h);
    assert_eq!(p, payload);
    // Link-layer padding after the trailer is ignored.
    let mut padded = f.clone();
    padded.extend_from_slice(&[0u8; 20]);
    assert!(accepts(&padded, &KEY, SESSION).is_ok());
    // Hellos and acks seal too.
    for h in [
        FrameHeader::hello(5),
        FrameHeader::ack(1, 2, Lane::Control, 9),
    ] {
        let f = sealed(&h, &[b"abc"], &KEY, Session::NONE);
        assert_eq!(accepts(&f, &KEY, Session::NONE).unwrap().0, h);
    }
}

#[test]
fn keyless_nodes_and_keyed_nodes_do_not_mix() {
    let h = FrameHeader::data(3, 0, Lane::Control, 1, FLAG_FIRST | FLAG_LAST);
    // A keyless node drops a sealed frame.
    let f = sealed(&h, &[b"hello"], &KEY, SESSION);
    assert_eq!(parse(&f, 1500), Err(FrameError::NoMac));
    // A keyed node is told a frame has only a checksum.
    let mut hdr = [0u8; HEADER_LEN];
    h.encode(&[b"hello"], &mut hdr);
    let mut plain = hdr.to_vec();
    plain.extend_from_slice(b"hello");
    assert_eq!(accepts(&plain, &KEY, SESSION), Err(FrameError::NoMac));
    // Another key.
    let other = SipKey([KEY.0[0], KEY.0[1] ^ 1]);
    assert_eq!(accepts(&f, &other, SESSION), Err(FrameError::BadMac));
}

#[test]
fn a_frame_from_another_session_does_not_verify() {
    let h = FrameHeader::data(3, 0, Lane::Control, 1, FLAG_FIRST | FLAG_LAST);
    let f = sealed(&h, &[b"payload"], &KEY, SESSION);
    for other in [
        Session {
            src_epoch: SESSION.src_epoch ^ 2,
            ..SESSION
        },
        Session {
            dst_epoch: SESSION.dst_epoch ^ 2,
            ..SESSION
        },
        Session {
            src_epoch: SESSION.dst_epoch,
            dst_epoch: SESSION.src_epoch,
        },
    ] {
        assert_eq!(accepts(&f, &KEY, other), Err(FrameError::BadMac));
    }
}

#[test]
fn a_cut_trailer_is_truncated() {
    let h = FrameHeader::data(3, 0, Lane::Control, 1, FLAG_FIRST | FLAG_LAST);
    let f = sealed(&h, &[b"payload"], &KEY, SESSION);
    for cut in 1..=MAC_TRAILER_LEN {
        assert_eq!(
            parse_frame(&f[..f.len() - cut], 1500).map(|_| ()),
            Err(FrameError::Truncated)
        );
    }
}

proptest! {
    /// Any single bit flipped anywhere in a sealed frame (header, payload or
    /// trailer) is caught: the frame is dropped, never accepted altered.
    #[test]
    fn every_bit_flip_is_caught(payload in proptest::collection::vec(any::<u8>(), 0..200),
                                bit in any::<usize>(), seq in any::<u32>()) {
        let h = FrameHeader::data(7, 1, Lane::Bulk, seq, FLAG_LAST);
        let mut f = sealed(&h, &[&payload], &KEY, SESSION);
        let bit = bit % (f.len() * 8);
        f[bit / 8] ^= 1 << (bit % 8);
        prop_assert!(accepts(&f, &KEY, SESSION).is_err());
    }

    /// A forger without the key, writing any header and payload with a
    /// random tag, is refused.
    #[test]
    fn forgeries_are_refused(payload in proptest::collection::vec(any::<u8>(), 0..64),
                             tag in any::<u64>(), src in any::<u16>(), seq in any::<u32>()) {
        let h = FrameHeader::data(src, 1, Lane::Control, seq, FLAG_FIRST | FLAG_LAST);
        let mut f = sealed(&h, &[&payload], &KEY, SESSION);
        let n = f.len();
        f[12..16].copy_from_slice(&(tag as u32).to_be_bytes());
        f[n - 4..].copy_from_slice(&((tag >> 32) as u32).to_be_bytes());
        let real = sealed(&h, &[&payload], &KEY, SESSION);
        prop_assume!(f != real);
        prop_assert_eq!(accepts(&f, &KEY, SESSION).map(|_| ()), Err(FrameError::BadMac));
    }
}
