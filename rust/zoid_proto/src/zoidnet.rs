// SPDX-License-Identifier: GPL-2.0

//! zoidnet: IP over treenet, the policy (`drivers/zoidnet/` is the driver).
//!
//! Every node of a pset has one interface, `zn0`, whose IP packets travel as
//! treenet messages, one packet per message, between a CN and its ION.
//! The ION is its CNs' router.  This module decides, without doing any
//! I/O, where an outgoing packet goes and whether an incoming one is let
//! in; the driver only moves bytes.
//!
//! **Address plan.**  The pset has one IPv4 subnet and one IPv6 prefix
//! (a [`Plan`]; [`DEFAULT_PLAN`]: `10.128.0.0/16` and
//! `fd5a:6f69:6400::/64`).  Node `n` has host part `n + 1` in both, so the
//! ION (node 0 in the psets) is `10.128.0.1` and CN 1 is `10.128.0.2`.  An
//! IPv4 address whose host part is zero (the network) or all ones (the
//! broadcast address) is nobody's, nor is one whose host part exceeds
//! 65536 (node ids are 16 bits).
//!
//! **Transmit** ([`transmit`]): a destination in the subnet goes to its
//! node ([`Tx::Node`]; treenet routes it, through the ION if need be); on a
//! CN any other destination goes to the ION, the default gateway
//! ([`Tx::Gateway`]).  Multicast and broadcast are not carried.
//!
//! **Receive** ([`receive`]): the trust boundary.  treenet binds a
//! message's sender to the link it came on, so the sender's node id is
//! reliable, and a CN's root is not trusted.  A packet from node `src` is
//! let in only if it is well formed, its source address is `src`'s own
//! (except from this node's ION, which routes packets from anywhere), and
//! its destination is this node's address, or, on the ION, an address the
//! ION's kernel forwards (another node's, or one outside the pset).  So no
//! CN can send in another node's name, the ION's included.
//!
//! The decisions read only a packet's first [`HEADER_BYTES`] bytes and its
//! length, so that a driver can decide before it copies a whole packet.

use core::fmt;
use core::net::{Ipv4Addr, Ipv6Addr};

/// Bytes of a packet the decisions read (the fixed IPv6 header; the first
/// 20 of an IPv4 header).  A caller passes at least the first
/// `min(len, HEADER_BYTES)` bytes.
pub const HEADER_BYTES: usize = 40;

/// The largest packet there is: an IPv6 header and a payload of 65535
/// bytes (IPv4's total length is at most 65535).
pub const MAX_PACKET_BYTES: usize = 40 + 65535;

/// The largest node id an address can name (host part 65536).
const MAX_HOST: u32 = u16::MAX as u32 + 1;

/// The pset's IPv4 subnet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Subnet4 {
    network: Ipv4Addr,
    prefix_len: u8,
}

impl Subnet4 {
    /// The subnet `network/prefix_len`: `None` unless the prefix is 1..=30
    /// bits (room for at least two nodes), `network`'s host bits are zero
    /// and the subnet is unicast space: it overlaps none of `0.0.0.0/8`,
    /// `127.0.0.0/8` and `224.0.0.0/3` (multicast, reserved, broadcast).
    pub const fn new(network: Ipv4Addr, prefix_len: u8) -> Option<Self> {
        if prefix_len < 1 || prefix_len > 30 {
            return None;
        }
        let s = Self {
            network,
            prefix_len,
        };
        let bits = u32::from_be_bytes(network.octets());
        if bits & !s.mask() != 0
            || s.overlaps(0, 8)
            || s.overlaps(127 << 24, 8)
            || s.overlaps(224 << 24, 3)
        {
            return None;
        }
        Some(s)
    }

    /// Whether the subnet and `other/other_len` share an address.
    const fn overlaps(&self, other: u32, other_len: u8) -> bool {
        let len = if other_len < self.prefix_len {
            other_len
        } else {
            self.prefix_len
        };
        let mask = u32::MAX << (32 - len as u32);
        (u32::from_be_bytes(self.network.octets()) ^ other) & mask == 0
    }

    /// Parses `a.b.c.d/len` (surrounding whitespace and a newline allowed).
    pub fn parse(text: &[u8]) -> Option<Self> {
        let (addr, len) = split_prefix(text)?;
        Self::new(addr.parse().ok()?, len)
    }

    /// The network address.
    pub const fn network(&self) -> Ipv4Addr {
        self.network
    }

    /// The prefix length.
    pub const fn prefix_len(&self) -> u8 {
        self.prefix_len
    }

    /// The netmask, as a number.
    const fn mask(&self) -> u32 {
        u32::MAX << (32 - self.prefix_len as u32)
    }

    /// The network address, as a number.
    fn bits(&self) -> u32 {
        u32::from_be_bytes(self.network.octets())
    }

    /// The host part of the broadcast address (all host bits set).
    const fn all_ones(&self) -> u32 {
        !self.mask()
    }

    /// Whether `addr` is in the subnet.
    pub fn contains(&self, addr: Ipv4Addr) -> bool {
        u32::from_be_bytes(addr.octets()) & self.mask() == self.bits()
    }

    /// The subnet's broadcast address.
    pub fn broadcast(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.bits() | self.all_ones())
    }

    /// Node `node`'s address, if the subnet has room for it.
    pub fn address_of(&self, node: u16) -> Option<Ipv4Addr> {
        let host = u32::from(node) + 1;
        if host >= self.all_ones() {
            return None;
        }
        Some(Ipv4Addr::from(self.bits() | host))
    }

    /// The node whose address `addr` is: `None` outside the subnet, for
    /// the network and broadcast addresses and past the node ids.
    pub fn node_of(&self, addr: Ipv4Addr) -> Option<u16> {
        if !self.contains(addr) {
            return None;
        }
        let host = u32::from_be_bytes(addr.octets()) & self.all_ones();
        if host == 0 || host == self.all_ones() {
            return None;
        }
        u16::try_from(host - 1).ok()
    }
}

impl fmt::Display for Subnet4 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix_len)
    }
}

/// The pset's IPv6 prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Subnet6 {
    network: Ipv6Addr,
    prefix_len: u8,
}

/// Byte `i` of the mask of a `prefix_len`-bit prefix.
fn mask_byte(prefix_len: u8, i: usize) -> u8 {
    let start = u32::try_from(i * 8).unwrap_or(u32::MAX);
    let take = u32::from(prefix_len).saturating_sub(start).min(8);
    // `take` is 0..=8: a byte of its `take` high bits.
    (0xff00u16 >> take) as u8
}

/// `bytes` with the host bits of a `prefix_len`-bit prefix cleared.
fn masked(bytes: [u8; 16], prefix_len: u8) -> [u8; 16] {
    let mut out = bytes;
    for (i, b) in out.iter_mut().enumerate() {
        *b &= mask_byte(prefix_len, i);
    }
    out
}

impl Subnet6 {
    /// The prefix `network/prefix_len`: `None` unless the prefix is
    /// 1..=126 bits, `network`'s host bits are zero and the prefix is
    /// unicast space beyond the link: it overlaps none of `::/8`
    /// (unspecified, loopback, IPv4-mapped), `fe80::/10` (link-local) and
    /// `ff00::/8` (multicast).
    pub fn new(network: Ipv6Addr, prefix_len: u8) -> Option<Self> {
        if !(1..=126).contains(&prefix_len) {
            return None;
        }
        let o = network.octets();
        if masked(o, prefix_len) != o {
            return None;
        }
        let reserved: [([u8; 2], u8); 3] = [([0, 0], 8), ([0xfe, 0x80], 10), ([0xff, 0], 8)];
        for (start, len) in reserved {
            let mut other = [0u8; 16];
            other[..2].copy_from_slice(&start);
            let common = len.min(prefix_len);
            if masked(o, common) == masked(other, common) {
                return None;
            }
        }
        Some(Self {
            network,
            prefix_len,
        })
    }

    /// Parses `x:x::x/len` (surrounding whitespace and a newline allowed).
    pub fn parse(text: &[u8]) -> Option<Self> {
        let (addr, len) = split_prefix(text)?;
        Self::new(addr.parse().ok()?, len)
    }

    /// The network address.
    pub const fn network(&self) -> Ipv6Addr {
        self.network
    }

    /// The prefix length.
    pub const fn prefix_len(&self) -> u8 {
        self.prefix_len
    }

    /// Whether `addr` has the prefix.
    pub fn contains(&self, addr: Ipv6Addr) -> bool {
        masked(addr.octets(), self.prefix_len) == self.network.octets()
    }

    /// Bits of the host part.
    fn host_bits(&self) -> u32 {
        128 - u32::from(self.prefix_len)
    }

    /// Node `node`'s address, if the prefix has room for it.
    pub fn address_of(&self, node: u16) -> Option<Ipv6Addr> {
        let host = u32::from(node) + 1;
        if self.host_bits() < 32 && host >> self.host_bits() != 0 {
            return None;
        }
        let mut o = self.network.octets();
        for (b, h) in o[12..].iter_mut().zip(host.to_be_bytes()) {
            *b |= h;
        }
        Some(Ipv6Addr::from(o))
    }

    /// The node whose address `addr` is: `None` without the prefix, for
    /// host part zero (the subnet-router anycast address) and past the
    /// node ids.
    pub fn node_of(&self, addr: Ipv6Addr) -> Option<u16> {
        if !self.contains(addr) {
            return None;
        }
        // The host part is at most 17 bits: its bytes 0..12 are zero.
        let mut host_bytes = [0u8; 4];
        for (i, a) in addr.octets().into_iter().enumerate() {
            let h = a & !mask_byte(self.prefix_len, i);
            match i.checked_sub(12) {
                None if h != 0 => return None,
                None => {}
                Some(j) => host_bytes[j] = h,
            }
        }
        let host = u32::from_be_bytes(host_bytes);
        if host == 0 || host > MAX_HOST {
            return None;
        }
        u16::try_from(host - 1).ok()
    }
}

impl fmt::Display for Subnet6 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix_len)
    }
}

/// `ADDRESS/LEN` of a knob: the address text and the length.
fn split_prefix(text: &[u8]) -> Option<(&str, u8)> {
    let text = core::str::from_utf8(text).ok()?.trim();
    let (addr, len) = text.split_once('/')?;
    if len.is_empty() || len.len() > 3 || !len.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some((addr, len.parse().ok()?))
}

/// A pset's addresses: its IPv4 subnet and IPv6 prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The IPv4 subnet.
    pub v4: Subnet4,
    /// The IPv6 prefix.
    pub v6: Subnet6,
}

/// `10.128.0.0/16`.
pub const DEFAULT_SUBNET4: Subnet4 = Subnet4 {
    network: Ipv4Addr::new(10, 128, 0, 0),
    prefix_len: 16,
};

/// `fd5a:6f69:6400::/64`: a unique local prefix whose global id spells
/// "Zoid" (`5a 6f 69 64`).
pub const DEFAULT_SUBNET6: Subnet6 = Subnet6 {
    network: Ipv6Addr::new(0xfd5a, 0x6f69, 0x6400, 0, 0, 0, 0, 0),
    prefix_len: 64,
};

/// The plan a node starts with.
pub const DEFAULT_PLAN: Plan = Plan {
    v4: DEFAULT_SUBNET4,
    v6: DEFAULT_SUBNET6,
};

/// The addresses of an IP header that the decisions look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Header {
    /// An IPv4 packet.
    V4 {
        /// Source address.
        src: Ipv4Addr,
        /// Destination address.
        dst: Ipv4Addr,
    },
    /// An IPv6 packet.
    V6 {
        /// Source address.
        src: Ipv6Addr,
        /// Destination address.
        dst: Ipv6Addr,
    },
}

/// Reads the header of a packet of `len` bytes whose first bytes are
/// `head` (at least `min(len, HEADER_BYTES)` of them).  `None` if the
/// packet is malformed: shorter than its header, longer than
/// [`MAX_PACKET_BYTES`], of another IP version, an IPv4 header length
/// below 20 bytes or beyond the packet, or a length field that disagrees
/// with `len` (IPv4's total length, IPv6's payload length; IPv6
/// jumbograms are not carried).
pub fn parse_header(head: &[u8], len: usize) -> Option<Header> {
    if len > MAX_PACKET_BYTES || head.len() < len.min(HEADER_BYTES) {
        return None;
    }
    let head = &head[..len.min(head.len()).min(HEADER_BYTES)];
    match head.first()? >> 4 {
        4 => {
            let h: &[u8; 20] = head.get(..20)?.try_into().ok()?;
            let ihl = usize::from(h[0] & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
            if ihl < 20 || ihl > total || total != len {
                return None;
            }
            let src = Ipv4Addr::new(h[12], h[13], h[14], h[15]);
            let dst = Ipv4Addr::new(h[16], h[17], h[18], h[19]);
            Some(Header::V4 { src, dst })
        }
        6 => {
            let h: &[u8; 40] = head.get(..40)?.try_into().ok()?;
            let payload = usize::from(u16::from_be_bytes([h[4], h[5]]));
            if payload + 40 != len {
                return None;
            }
            let mut src = [0u8; 16];
            src.copy_from_slice(&h[8..24]);
            let mut dst = [0u8; 16];
            dst.copy_from_slice(&h[24..40]);
            Some(Header::V6 {
                src: Ipv6Addr::from(src),
                dst: Ipv6Addr::from(dst),
            })
        }
        _ => None,
    }
}

/// Where an address is in a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// Node n's address.
    Node(u16),
    /// In the subnet, but nobody's (network or broadcast address, a host
    /// part past the node ids).
    Nobody,
    /// Outside the subnet.
    Outside,
}

impl Plan {
    /// Node `node`'s IPv4 address.
    pub fn address4(&self, node: u16) -> Option<Ipv4Addr> {
        self.v4.address_of(node)
    }

    /// Node `node`'s IPv6 address.
    pub fn address6(&self, node: u16) -> Option<Ipv6Addr> {
        self.v6.address_of(node)
    }

    /// Where the header's destination is.
    fn place_of_dst(&self, h: &Header) -> Place {
        match *h {
            Header::V4 { dst, .. } if self.v4.contains(dst) => {
                self.v4.node_of(dst).map_or(Place::Nobody, Place::Node)
            }
            Header::V6 { dst, .. } if self.v6.contains(dst) => {
                self.v6.node_of(dst).map_or(Place::Nobody, Place::Node)
            }
            _ => Place::Outside,
        }
    }

    /// Whether the header's destination is a group: IPv4 multicast,
    /// limited broadcast or the subnet's broadcast, IPv6 multicast.
    fn is_group_dst(&self, h: &Header) -> bool {
        match *h {
            Header::V4 { dst, .. } => {
                dst.is_multicast() || dst.is_broadcast() || dst == self.v4.broadcast()
            }
            Header::V6 { dst, .. } => dst.is_multicast(),
        }
    }

    /// Whether the header's source is node `node`'s address.
    fn source_is(&self, h: &Header, node: u16) -> bool {
        match *h {
            Header::V4 { src, .. } => self.v4.address_of(node) == Some(src),
            Header::V6 { src, .. } => self.v6.address_of(node) == Some(src),
        }
    }
}

/// A destination that only means something on one link (IPv6 link-local):
/// never sent to the gateway, never forwarded.
fn link_local_dst(h: &Header) -> bool {
    matches!(*h, Header::V6 { dst, .. } if dst.is_unicast_link_local())
}

/// This node and its ION, as treenet says now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Local {
    /// This node's id.
    pub node: u16,
    /// The ION's id (`node` itself on the ION); `None` on a CN whose ION
    /// is down.
    pub ion: Option<u16>,
}

impl Local {
    /// Whether this node is the ION.
    pub fn is_ion(&self) -> bool {
        self.ion == Some(self.node)
    }
}

/// Why a packet is not carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// Not an IPv4 or IPv6 packet of the length it says.
    Malformed,
    /// No node to send it to: a destination in the subnet that is
    /// nobody's, one outside it on the ION (or IPv6 link-local), or a CN
    /// whose ION is down.
    NoRoute,
    /// Multicast or broadcast: not carried.
    Multicast,
    /// For this node's own address.
    ToSelf,
    /// From a node whose address is not its source address.
    SpoofedSource,
    /// For an address this node neither has nor forwards.
    NotForUs,
}

impl DropReason {
    /// The reason's name, as the driver's counters spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Malformed => "malformed",
            Self::NoRoute => "no_route",
            Self::Multicast => "multicast",
            Self::ToSelf => "to_self",
            Self::SpoofedSource => "spoofed_source",
            Self::NotForUs => "not_for_us",
        }
    }
}

/// Where an outgoing packet goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tx {
    /// To node n, whose address the destination is.
    Node(u16),
    /// To the ION (n), the gateway for destinations outside the subnet,
    /// which forwards it.  The packet leaves the pset, so its checksums
    /// must be complete (a driver that offloads them fills them in).
    Gateway(u16),
    /// Not carried.
    Drop(DropReason),
}

impl Tx {
    /// The node the packet goes to, if any.
    pub fn destination(self) -> Option<u16> {
        match self {
            Self::Node(n) | Self::Gateway(n) => Some(n),
            Self::Drop(_) => None,
        }
    }
}

/// Where a packet of `len` bytes starting with `head` (see
/// [`parse_header`]) that this node sends goes.
pub fn transmit(plan: &Plan, local: Local, head: &[u8], len: usize) -> Tx {
    let Some(h) = parse_header(head, len) else {
        return Tx::Drop(DropReason::Malformed);
    };
    if plan.is_group_dst(&h) {
        return Tx::Drop(DropReason::Multicast);
    }
    let Some(ion) = local.ion else {
        return Tx::Drop(DropReason::NoRoute);
    };
    match plan.place_of_dst(&h) {
        Place::Node(n) if n == local.node => Tx::Drop(DropReason::ToSelf),
        Place::Node(n) => Tx::Node(n),
        Place::Nobody => Tx::Drop(DropReason::NoRoute),
        Place::Outside if local.is_ion() || link_local_dst(&h) => Tx::Drop(DropReason::NoRoute),
        Place::Outside => Tx::Gateway(ion),
    }
}

/// Whether a packet is let in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rx {
    /// Hand it to this node's IP stack.
    Accept,
    /// Refused.
    Drop(DropReason),
}

/// Whether a packet of `len` bytes starting with `head` (see
/// [`parse_header`]) that node `src` sent this node is let in.
pub fn receive(plan: &Plan, local: Local, src: u16, head: &[u8], len: usize) -> Rx {
    let Some(h) = parse_header(head, len) else {
        return Rx::Drop(DropReason::Malformed);
    };
    let from_my_ion = !local.is_ion() && local.ion == Some(src);
    if !from_my_ion && !plan.source_is(&h, src) {
        return Rx::Drop(DropReason::SpoofedSource);
    }
    match plan.place_of_dst(&h) {
        Place::Node(n) if n == local.node => Rx::Accept,
        // The ION's kernel forwards the rest: to another node, or out of
        // the pset.
        Place::Node(_) if local.is_ion() => Rx::Accept,
        Place::Outside if local.is_ion() && !plan.is_group_dst(&h) && !link_local_dst(&h) => {
            Rx::Accept
        }
        _ => Rx::Drop(DropReason::NotForUs),
    }
}
