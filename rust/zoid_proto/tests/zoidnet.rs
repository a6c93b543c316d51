// SPDX-License-Identifier: GPL-2.0

//! zoidnet's address plan and its transmit and receive decisions.

use core::net::{Ipv4Addr, Ipv6Addr};
use proptest::prelude::*;
use zoid_proto::zoidnet::{
    parse_header, receive, transmit, DropReason, Header, Local, Plan, Rx, Subnet4, Subnet6, Tx,
    DEFAULT_PLAN, HEADER_BYTES, MAX_PACKET_BYTES,
};

/// An IPv4 packet from `src` to `dst` with `payload` bytes after a
/// 20-byte header (protocol 17, checksums not filled in: the decisions do
/// not read them).
fn v4(src: Ipv4Addr, dst: Ipv4Addr, payload: usize) -> Vec<u8> {
    let total = 20 + payload;
    let mut p = vec![0u8; total];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[8] = 64;
    p[9] = 17;
    p[12..16].copy_from_slice(&src.octets());
    p[16..20].copy_from_slice(&dst.octets());
    p
}

/// An IPv6 packet from `src` to `dst` with `payload` bytes after its
/// 40-byte header.
fn v6(src: Ipv6Addr, dst: Ipv6Addr, payload: usize) -> Vec<u8> {
    let mut p = vec![0u8; 40 + payload];
    p[0] = 0x60;
    p[4..6].copy_from_slice(&(payload as u16).to_be_bytes());
    p[6] = 17;
    p[7] = 64;
    p[8..24].copy_from_slice(&src.octets());
    p[24..40].copy_from_slice(&dst.octets());
    p
}

const ION: Local = Local {
    node: 0,
    ion: Some(0),
};

fn cn(node: u16) -> Local {
    Local { node, ion: Some(0) }
}

fn a4(node: u16) -> Ipv4Addr {
    DEFAULT_PLAN.address4(node).unwrap()
}

fn a6(node: u16) -> Ipv6Addr {
    DEFAULT_PLAN.address6(node).unwrap()
}

fn tx(local: Local, p: &[u8]) -> Tx {
    transmit(&DEFAULT_PLAN, local, p, p.len())
}

fn rx(local: Local, src: u16, p: &[u8]) -> Rx {
    receive(&DEFAULT_PLAN, local, src, p, p.len())
}

const OUTSIDE4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 7);
const OUTSIDE6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 7);

#[test]
fn the_default_plan_numbers_nodes_from_host_one() {
    assert_eq!(a4(0), Ipv4Addr::new(10, 128, 0, 1));
    assert_eq!(a4(1), Ipv4Addr::new(10, 128, 0, 2));
    assert_eq!(a4(255), Ipv4Addr::new(10, 128, 1, 0));
    assert_eq!(a4(65533), Ipv4Addr::new(10, 128, 255, 254));
    // Host 65535 would be the broadcast address.
    assert_eq!(DEFAULT_PLAN.address4(65534), None);
    assert_eq!(a6(0), "fd5a:6f69:6400::1".parse::<Ipv6Addr>().unwrap());
    assert_eq!(
        a6(65535),
        "fd5a:6f69:6400::1:0".parse::<Ipv6Addr>().unwrap()
    );
    assert_eq!(DEFAULT_PLAN.v4.to_string(), "10.128.0.0/16");
    assert_eq!(DEFAULT_PLAN.v6.to_string(), "fd5a:6f69:6400::/64");
}

#[test]
fn every_node_of_the_default_plan_maps_back() {
    for n in 0..=u16::MAX {
        if let Some(a) = DEFAULT_PLAN.address4(n) {
            assert_eq!(DEFAULT_PLAN.v4.node_of(a), Some(n));
        } else {
            assert!(n >= 65534, "node {n} has no IPv4 address");
        }
        assert_eq!(DEFAULT_PLAN.v6.node_of(a6(n)), Some(n));
    }
}

#[test]
fn addresses_that_are_nobodys() {
    let v4 = DEFAULT_PLAN.v4;
    assert_eq!(v4.node_of(Ipv4Addr::new(10, 128, 0, 0)), None, "network");
    assert_eq!(
        v4.node_of(Ipv4Addr::new(10, 128, 255, 255)),
        None,
        "broadcast"
    );
    assert_eq!(v4.node_of(Ipv4Addr::new(10, 129, 0, 1)), None, "outside");
    assert_eq!(v4.node_of(OUTSIDE4), None);
    let v6 = DEFAULT_PLAN.v6;
    assert_eq!(v6.node_of("fd5a:6f69:6400::".parse().unwrap()), None);
    assert_eq!(v6.node_of("fd5a:6f69:6400::1:1".parse().unwrap()), None);
    assert_eq!(v6.node_of("fd5a:6f69:6400:0:1::1".parse().unwrap()), None);
    assert_eq!(v6.node_of("fd5a:6f69:6401::1".parse().unwrap()), None);
    assert_eq!(v6.node_of(OUTSIDE6), None);
    // A /8 has room past the node ids: those are nobody's.
    let wide = Subnet4::parse(b"10.0.0.0/8").unwrap();
    assert_eq!(wide.node_of(Ipv4Addr::new(10, 1, 0, 0)), Some(65535));
    assert_eq!(wide.node_of(Ipv4Addr::new(10, 1, 0, 1)), None);
    // A /30 has two.
    let tiny = Subnet4::parse(b"10.0.0.4/30").unwrap();
    assert_eq!(tiny.address_of(1), Some(Ipv4Addr::new(10, 0, 0, 6)));
    assert_eq!(tiny.address_of(2), None);
}

#[test]
fn knobs_parse_like_users_write_them() {
    assert_eq!(Subnet4::parse(b"10.128.0.0/16\n"), Some(DEFAULT_PLAN.v4));
    assert_eq!(
        Subnet6::parse(b" fd5a:6f69:6400::/64 \n"),
        Some(DEFAULT_PLAN.v6)
    );
    for bad in [
        &b"10.128.0.1/16"[..], // host bits set
        b"10.128.0.0/31",
        b"10.128.0.0/0",
        b"10.128.0.0/",
        b"10.128.0.0",
        b"10.128.0.0/+16",
        b"10.128.0.0/16/1",
        b"10.128.0/16",
        b"010.128.0.0/16",
        b"fd5a::/64",
        b"",
        b"\xff/8",
    ] {
        assert_eq!(
            Subnet4::parse(bad),
            None,
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
    for bad in [
        &b"224.0.0.0/4"[..],
        b"192.0.0.0/2", // reaches 224.0.0.0
        b"127.0.0.0/16",
        b"0.0.0.0/8",
        b"10.0.0.0/4", // reaches 0.0.0.0/8
    ] {
        assert_eq!(
            Subnet4::parse(bad),
            None,
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
    for bad in [
        &b"fd5a:6f69:6400::1/64"[..],
        b"ff02::/64",
        b"fe80::/64",
        b"::/64",
        b"::ffff:0:0/96",
        b"8000::/1", // reaches ff00::/8
        b"fe00::/7", // reaches fe80::/10
        b"fd5a::/127",
        b"fd5a::/0",
        b"fd5a::/129",
        b"fd5a::",
        b"10.0.0.0/8",
        b"fd5a:::/64",
    ] {
        assert_eq!(
            Subnet6::parse(bad),
            None,
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
    let s = Subnet6::parse(b"fd00:1:2:3:4:5:6:0/112").unwrap();
    assert_eq!(
        s.address_of(65534),
        Some("fd00:1:2:3:4:5:6:ffff".parse().unwrap())
    );
    assert_eq!(s.address_of(65535), None);
}

#[test]
fn malformed_packets_go_nowhere() {
    let good = v4(a4(1), a4(0), 8);
    assert_eq!(tx(cn(1), &good), Tx::Node(0));
    let mut bad_version = good.clone();
    bad_version[0] = 0x55;
    let mut short_ihl = good.clone();
    short_ihl[0] = 0x44;
    let mut long_ihl = good.clone();
    long_ihl[0] = 0x4f; // 60 bytes of header in a 28-byte packet
    let mut long_total = good.clone();
    long_total[3] += 1;
    let truncated = &good[..19];
    let good6 = v6(a6(1), a6(0), 8);
    let mut bad_payload = good6.clone();
    bad_payload[5] = 9;
    for p in [
        &bad_version[..],
        &short_ihl,
        &long_ihl,
        &long_total,
        truncated,
        &good6[..39],
        &bad_payload,
        &[][..],
        &[0x60][..],
    ] {
        assert_eq!(tx(cn(1), p), Tx::Drop(DropReason::Malformed), "{p:02x?}");
        assert_eq!(rx(ION, 1, p), Rx::Drop(DropReason::Malformed), "{p:02x?}");
    }
    // A head shorter than what the decisions read is refused too.
    assert_eq!(
        transmit(&DEFAULT_PLAN, cn(1), &good[..20], 100),
        Tx::Drop(DropReason::Malformed)
    );
    assert_eq!(parse_header(&good, MAX_PACKET_BYTES + 1), None);
}

#[test]
fn where_packets_go() {
    // A CN: the subnet to its node, the rest to the ION.
    assert_eq!(tx(cn(1), &v4(a4(1), a4(2), 10)), Tx::Node(2));
    assert_eq!(tx(cn(1), &v6(a6(1), a6(2), 10)), Tx::Node(2));
    assert_eq!(tx(cn(1), &v4(a4(1), OUTSIDE4, 10)), Tx::Gateway(0));
    assert_eq!(tx(cn(1), &v6(a6(1), OUTSIDE6, 10)), Tx::Gateway(0));
    assert_eq!(
        tx(cn(1), &v4(a4(1), a4(1), 10)),
        Tx::Drop(DropReason::ToSelf)
    );
    let network = Ipv4Addr::new(10, 128, 0, 0);
    assert_eq!(
        tx(cn(1), &v4(a4(1), network, 0)),
        Tx::Drop(DropReason::NoRoute)
    );
    let link_local: Ipv6Addr = "fe80::1".parse().unwrap();
    assert_eq!(
        tx(cn(1), &v6(a6(1), link_local, 0)),
        Tx::Drop(DropReason::NoRoute)
    );
    // Without its ION a CN reaches nobody.
    let orphan = Local { node: 1, ion: None };
    assert_eq!(
        tx(orphan, &v4(a4(1), a4(2), 0)),
        Tx::Drop(DropReason::NoRoute)
    );
    assert_eq!(
        tx(orphan, &v4(a4(1), OUTSIDE4, 0)),
        Tx::Drop(DropReason::NoRoute)
    );
    // The ION: to its CNs; the rest is its kernel's business elsewhere.
    assert_eq!(tx(ION, &v4(OUTSIDE4, a4(3), 10)), Tx::Node(3));
    assert_eq!(
        tx(ION, &v4(a4(0), OUTSIDE4, 10)),
        Tx::Drop(DropReason::NoRoute)
    );
    // Groups are not carried.
    for dst in [
        Ipv4Addr::new(224, 0, 0, 1),
        Ipv4Addr::new(239, 1, 2, 3),
        Ipv4Addr::BROADCAST,
        Ipv4Addr::new(10, 128, 255, 255),
    ] {
        assert_eq!(
            tx(cn(1), &v4(a4(1), dst, 0)),
            Tx::Drop(DropReason::Multicast)
        );
        assert_eq!(
            rx(ION, 1, &v4(a4(1), dst, 0)),
            Rx::Drop(DropReason::NotForUs)
        );
    }
    let all_nodes: Ipv6Addr = "ff02::1".parse().unwrap();
    assert_eq!(
        tx(ION, &v6(a6(0), all_nodes, 0)),
        Tx::Drop(DropReason::Multicast)
    );
    assert_eq!(Tx::Gateway(4).destination(), Some(4));
    assert_eq!(Tx::Drop(DropReason::ToSelf).destination(), None);
}

#[test]
fn who_gets_in() {
    // CN to CN, either family.
    assert_eq!(rx(cn(2), 1, &v4(a4(1), a4(2), 5)), Rx::Accept);
    assert_eq!(rx(cn(2), 1, &v6(a6(1), a6(2), 5)), Rx::Accept);
    // Not for this CN, even with the right source.
    assert_eq!(
        rx(cn(2), 1, &v4(a4(1), a4(3), 5)),
        Rx::Drop(DropReason::NotForUs)
    );
    assert_eq!(
        rx(cn(2), 1, &v4(a4(1), OUTSIDE4, 5)),
        Rx::Drop(DropReason::NotForUs)
    );
    // The ION speaks for the world.
    assert_eq!(rx(cn(2), 0, &v4(OUTSIDE4, a4(2), 5)), Rx::Accept);
    assert_eq!(rx(cn(2), 0, &v6(OUTSIDE6, a6(2), 5)), Rx::Accept);
    assert_eq!(rx(cn(2), 0, &v4(a4(7), a4(2), 5)), Rx::Accept);
    // The ION forwards what its CNs send out, and between them.
    assert_eq!(rx(ION, 1, &v4(a4(1), OUTSIDE4, 5)), Rx::Accept);
    assert_eq!(rx(ION, 1, &v6(a6(1), OUTSIDE6, 5)), Rx::Accept);
    assert_eq!(rx(ION, 1, &v4(a4(1), a4(2), 5)), Rx::Accept);
    assert_eq!(rx(ION, 1, &v4(a4(1), a4(0), 5)), Rx::Accept);
    // But not to nobody, nor link-local.
    let network = Ipv4Addr::new(10, 128, 0, 0);
    assert_eq!(
        rx(ION, 1, &v4(a4(1), network, 5)),
        Rx::Drop(DropReason::NotForUs)
    );
    let link_local: Ipv6Addr = "fe80::2".parse().unwrap();
    assert_eq!(
        rx(ION, 1, &v6(a6(1), link_local, 5)),
        Rx::Drop(DropReason::NotForUs)
    );
    // A CN in another's name, the ION's included; a source nobody has.
    for src in [a4(2), a4(0), OUTSIDE4, network] {
        assert_eq!(
            rx(ION, 1, &v4(src, a4(0), 5)),
            Rx::Drop(DropReason::SpoofedSource)
        );
        assert_eq!(
            rx(cn(3), 1, &v4(src, a4(3), 5)),
            Rx::Drop(DropReason::SpoofedSource)
        );
    }
    assert_eq!(
        rx(ION, 1, &v6(a6(2), OUTSIDE6, 5)),
        Rx::Drop(DropReason::SpoofedSource)
    );
    // A CN whose ION is down trusts nobody's word for another source.
    let orphan = Local { node: 2, ion: None };
    assert_eq!(
        rx(orphan, 0, &v4(OUTSIDE4, a4(2), 5)),
        Rx::Drop(DropReason::SpoofedSource)
    );
    assert_eq!(rx(orphan, 0, &v4(a4(0), a4(2), 5)), Rx::Accept);
}

#[test]
fn a_cn_below_an_ion_that_is_not_node_zero() {
    let plan = DEFAULT_PLAN;
    let here = Local {
        node: 5,
        ion: Some(9),
    };
    let p = v4(OUTSIDE4, a4(5), 0);
    assert_eq!(receive(&plan, here, 9, &p, p.len()), Rx::Accept);
    assert_eq!(
        receive(&plan, here, 0, &p, p.len()),
        Rx::Drop(DropReason::SpoofedSource)
    );
    let out = v4(a4(5), OUTSIDE4, 0);
    assert_eq!(transmit(&plan, here, &out, out.len()), Tx::Gateway(9));
}

/// A plan of any valid shape.
fn any_plan() -> impl Strategy<Value = Plan> {
    (any::<u32>(), 1u8..=30, any::<[u8; 16]>(), 1u8..=126).prop_filter_map(
        "reserved space",
        |(a4, l4, a6, l6)| {
            let mask4 = u32::MAX << (32 - u32::from(l4));
            let mut o6 = a6;
            for (i, b) in o6.iter_mut().enumerate() {
                let take = u32::from(l6).saturating_sub(i as u32 * 8).min(8);
                *b &= (0xff00u16 >> take) as u8;
            }
            Some(Plan {
                v4: Subnet4::new(Ipv4Addr::from(a4 & mask4), l4)?,
                v6: Subnet6::new(Ipv6Addr::from(o6), l6)?,
            })
        },
    )
}

fn any_local() -> impl Strategy<Value = Local> {
    (any::<u16>(), prop::option::of(any::<u16>())).prop_map(|(node, ion)| Local { node, ion })
}

proptest! {
    /// A node's address names it, and an address that names a node is
    /// that node's.
    #[test]
    fn addresses_and_nodes_map_both_ways(plan in any_plan(), node in any::<u16>(),
                                         a4 in any::<u32>(), a6 in any::<[u8; 16]>()) {
        if let Some(a) = plan.v4.address_of(node) {
            prop_assert!(plan.v4.contains(a));
            prop_assert_eq!(plan.v4.node_of(a), Some(node));
        }
        if let Some(a) = plan.v6.address_of(node) {
            prop_assert!(plan.v6.contains(a));
            prop_assert_eq!(plan.v6.node_of(a), Some(node));
        }
        let a4 = Ipv4Addr::from(a4);
        match plan.v4.node_of(a4) {
            Some(n) => prop_assert_eq!(plan.v4.address_of(n), Some(a4)),
            None => prop_assert!(!plan.v4.contains(a4) || a4 == plan.v4.network()
                || a4 == plan.v4.broadcast()
                || u32::from(a4) - u32::from(plan.v4.network()) > 65536),
        }
        let a6 = Ipv6Addr::from(a6);
        if let Some(n) = plan.v6.node_of(a6) {
            prop_assert_eq!(plan.v6.address_of(n), Some(a6));
        }
    }

    /// Addresses outside the plan are nobody's.
    #[test]
    fn outside_addresses_are_nobodys(plan in any_plan(), a4 in any::<u32>(),
                                     a6 in any::<[u8; 16]>()) {
        let a4 = Ipv4Addr::from(a4);
        if !plan.v4.contains(a4) {
            prop_assert_eq!(plan.v4.node_of(a4), None);
        }
        let a6 = Ipv6Addr::from(a6);
        if !plan.v6.contains(a6) {
            prop_assert_eq!(plan.v6.node_of(a6), None);
        }
    }

    /// Knobs read back as they were written.
    #[test]
    fn subnets_print_as_they_parse(plan in any_plan()) {
        prop_assert_eq!(Subnet4::parse(plan.v4.to_string().as_bytes()), Some(plan.v4));
        prop_assert_eq!(Subnet6::parse(plan.v6.to_string().as_bytes()), Some(plan.v6));
    }

    /// Any bytes at all: no panic, and the same answer from the head alone.
    #[test]
    fn any_bytes_are_decided_without_panic(plan in any_plan(), local in any_local(),
                                           src in any::<u16>(),
                                           bytes in prop::collection::vec(any::<u8>(), 0..200),
                                           extra in 0usize..70_000) {
        let len = bytes.len().max(HEADER_BYTES.min(bytes.len()) + extra);
        let t = transmit(&plan, local, &bytes, len);
        let r = receive(&plan, local, src, &bytes, len);
        if len <= bytes.len() {
            let head = &bytes[..len.min(HEADER_BYTES)];
            prop_assert_eq!(transmit(&plan, local, head, len), t);
            prop_assert_eq!(receive(&plan, local, src, head, len), r);
        }
        let _ = parse_header(&bytes, bytes.len());
    }

    /// Well-formed headers with any addresses: no panic either, and the
    /// head alone decides as the whole packet does.
    #[test]
    fn any_header_is_decided_like_its_packet(plan in any_plan(), local in any_local(),
                                             src in any::<u16>(), six in any::<bool>(),
                                             s4 in any::<u32>(), d4 in any::<u32>(),
                                             s6 in any::<[u8; 16]>(), d6 in any::<[u8; 16]>(),
                                             payload in 0usize..100) {
        let p = if six {
            v6(Ipv6Addr::from(s6), Ipv6Addr::from(d6), payload)
        } else {
            v4(Ipv4Addr::from(s4), Ipv4Addr::from(d4), payload)
        };
        let head = &p[..p.len().min(HEADER_BYTES)];
        prop_assert!(parse_header(&p, p.len()).is_some());
        prop_assert_eq!(transmit(&plan, local, head, p.len()), transmit(&plan, local, &p, p.len()));
        prop_assert_eq!(receive(&plan, local, src, head, p.len()),
                        receive(&plan, local, src, &p, p.len()));
    }

    /// A CN's packet in any other node's name is refused, by the ION and
    /// by other CNs, whatever its destination.
    #[test]
    fn a_cn_cannot_use_another_nodes_source(plan in any_plan(), ion in any::<u16>(),
                                            sender in any::<u16>(), victim in any::<u16>(),
                                            receiver in any::<u16>(), dst_node in any::<u16>(),
                                            six in any::<bool>()) {
        prop_assume!(sender != ion && sender != victim);
        let p = if six {
            let (Some(s), Some(d)) = (plan.address6(victim), plan.address6(dst_node)) else {
                return Ok(());
            };
            v6(s, d, 12)
        } else {
            let (Some(s), Some(d)) = (plan.address4(victim), plan.address4(dst_node)) else {
                return Ok(());
            };
            v4(s, d, 12)
        };
        let at = Local { node: receiver, ion: Some(ion) };
        prop_assert_eq!(receive(&plan, at, sender, &p, p.len()),
                        Rx::Drop(DropReason::SpoofedSource));
    }

    /// From its ION, a CN takes any source, when the packet is for it.
    #[test]
    fn the_ion_speaks_for_any_source(plan in any_plan(), ion in any::<u16>(), me in any::<u16>(),
                                     s4 in any::<u32>(), s6 in any::<[u8; 16]>(),
                                     six in any::<bool>()) {
        prop_assume!(me != ion);
        let p = if six {
            let Some(d) = plan.address6(me) else { return Ok(()); };
            v6(Ipv6Addr::from(s6), d, 3)
        } else {
            let Some(d) = plan.address4(me) else { return Ok(()); };
            v4(Ipv4Addr::from(s4), d, 3)
        };
        let at = Local { node: me, ion: Some(ion) };
        prop_assert_eq!(receive(&plan, at, ion, &p, p.len()), Rx::Accept);
    }

    /// What one node sends to another's address gets in there, both
    /// families, CN to CN, CN to ION and ION to CN; what a CN sends out of
    /// the pset goes to its ION, which takes it.
    #[test]
    fn packets_make_the_round_trip(plan in any_plan(), ion in any::<u16>(), a in any::<u16>(),
                                   b in any::<u16>(), out4 in any::<u32>(),
                                   out6 in any::<[u8; 16]>(), payload in 0usize..2000) {
        prop_assume!(a != b);
        let (local_a, local_b) = (
            Local { node: a, ion: Some(ion) },
            Local { node: b, ion: Some(ion) },
        );
        let pairs = [
            plan.address4(a).zip(plan.address4(b)).map(|(s, d)| v4(s, d, payload)),
            plan.address6(a).zip(plan.address6(b)).map(|(s, d)| v6(s, d, payload)),
        ];
        for p in pairs.into_iter().flatten() {
            prop_assert_eq!(transmit(&plan, local_a, &p, p.len()), Tx::Node(b));
            prop_assert_eq!(receive(&plan, local_b, a, &p, p.len()), Rx::Accept);
        }
        if a == ion {
            return Ok(());
        }
        let out4 = Ipv4Addr::from(out4);
        let out6 = Ipv6Addr::from(out6);
        let ion_here = Local { node: ion, ion: Some(ion) };
        if let Some(s) = plan.address4(a) {
            if !plan.v4.contains(out4) && !out4.is_multicast() && !out4.is_broadcast() {
                let p = v4(s, out4, payload);
                prop_assert_eq!(transmit(&plan, local_a, &p, p.len()), Tx::Gateway(ion));
                prop_assert_eq!(receive(&plan, ion_here, a, &p, p.len()), Rx::Accept);
            }
        }
        if let Some(s) = plan.address6(a) {
            if !plan.v6.contains(out6) && !out6.is_multicast() && !out6.is_unicast_link_local() {
                let p = v6(s, out6, payload);
                prop_assert_eq!(transmit(&plan, local_a, &p, p.len()), Tx::Gateway(ion));
                prop_assert_eq!(receive(&plan, ion_here, a, &p, p.len()), Rx::Accept);
            }
        }
    }
}

#[test]
fn headers_read_back() {
    let p = v6(a6(3), OUTSIDE6, 0);
    assert_eq!(
        parse_header(&p, p.len()),
        Some(Header::V6 {
            src: a6(3),
            dst: OUTSIDE6
        })
    );
    let p = v4(a4(3), OUTSIDE4, 1480);
    assert_eq!(
        parse_header(&p[..HEADER_BYTES], p.len()),
        Some(Header::V4 {
            src: a4(3),
            dst: OUTSIDE4
        })
    );
    assert_eq!(DropReason::SpoofedSource.name(), "spoofed_source");
}
