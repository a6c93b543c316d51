// SPDX-License-Identifier: GPL-2.0

//! SipHash-2-4, the keyed MAC of treenet frames on an untrusted network.
//!
//! SipHash (Aumasson and Bernstein, 2012) is a pseudo-random function with a
//! 128-bit key and a 64-bit output, built for short inputs: a 256-byte tree
//! packet costs a few hundred cycles.  This is the reference algorithm,
//! usable incrementally like [`super::crc32c::Crc32c`]: hashing a frame piece
//! by piece (header, message header, payload) gives the same tag as hashing
//! it in one piece.  The test vectors are the reference implementation's
//! (also the kernel's `lib/tests/siphash_kunit.c`).

/// A 128-bit SipHash key, as two little-endian 64-bit words.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SipKey(pub [u64; 2]);

impl SipKey {
    /// The key whose bytes are `bytes` (byte 0 is the low byte of word 0,
    /// as in the reference implementation).
    pub fn from_bytes(bytes: &[u8; 16]) -> Self {
        let mut lo = [0u8; 8];
        let mut hi = [0u8; 8];
        lo.copy_from_slice(&bytes[..8]);
        hi.copy_from_slice(&bytes[8..]);
        Self([u64::from_le_bytes(lo), u64::from_le_bytes(hi)])
    }

    /// Parses 32 hexadecimal digits (the key's bytes in order, as
    /// `/sys/kernel/treenet/mac_key` takes it); surrounding white space is
    /// ignored.  `None` for anything else.
    pub fn parse_hex(text: &[u8]) -> Option<Self> {
        let text = trim(text);
        if text.len() != 32 {
            return None;
        }
        let mut bytes = [0u8; 16];
        for (i, pair) in text.chunks_exact(2).enumerate() {
            bytes[i] = (hex_digit(pair[0])? << 4) | hex_digit(pair[1])?;
        }
        Some(Self::from_bytes(&bytes))
    }
}

// A key is a secret: never printed by accident.
impl core::fmt::Debug for SipKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SipKey(..)")
    }
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = s {
        if !first.is_ascii_whitespace() {
            break;
        }
        s = rest;
    }
    while let [rest @ .., last] = s {
        if !last.is_ascii_whitespace() {
            break;
        }
        s = rest;
    }
    s
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// One SipRound on four local state words.
macro_rules! sipround {
    ($v0:ident, $v1:ident, $v2:ident, $v3:ident) => {
        $v0 = $v0.wrapping_add($v1);
        $v1 = $v1.rotate_left(13);
        $v1 ^= $v0;
        $v0 = $v0.rotate_left(32);
        $v2 = $v2.wrapping_add($v3);
        $v3 = $v3.rotate_left(16);
        $v3 ^= $v2;
        $v0 = $v0.wrapping_add($v3);
        $v3 = $v3.rotate_left(21);
        $v3 ^= $v0;
        $v2 = $v2.wrapping_add($v1);
        $v1 = $v1.rotate_left(17);
        $v1 ^= $v2;
        $v2 = $v2.rotate_left(32);
    };
}

/// Folds one message word into the state (two SipRounds).
#[inline(always)]
fn compress(v: [u64; 4], m: u64) -> [u64; 4] {
    let [mut v0, mut v1, mut v2, mut v3] = v;
    v3 ^= m;
    sipround!(v0, v1, v2, v3);
    sipround!(v0, v1, v2, v3);
    v0 ^= m;
    [v0, v1, v2, v3]
}

/// An incremental SipHash-2-4 computation.
#[derive(Clone)]
pub struct SipHasher24 {
    v: [u64; 4],
    /// Input bytes not yet folded in (fewer than 8), little-endian.
    tail: u64,
    ntail: usize,
    /// Total input length (only its low byte enters the hash).
    len: usize,
}

impl SipHasher24 {
    /// A computation under `key`.
    pub fn new(key: &SipKey) -> Self {
        let [k0, k1] = key.0;
        Self {
            v: [
                k0 ^ 0x736f_6d65_7073_6575,
                k1 ^ 0x646f_7261_6e64_6f6d,
                k0 ^ 0x6c79_6765_6e65_7261,
                k1 ^ 0x7465_6462_7974_6573,
            ],
            tail: 0,
            ntail: 0,
            len: 0,
        }
    }

    /// Feeds `data`.
    pub fn update(&mut self, mut data: &[u8]) {
        self.len = self.len.wrapping_add(data.len());
        // Complete a pending word first.
        while self.ntail != 0 {
            let Some((&b, rest)) = data.split_first() else {
                return;
            };
            self.tail |= u64::from(b) << (8 * self.ntail);
            self.ntail += 1;
            data = rest;
            if self.ntail == 8 {
                let m = self.tail;
                self.v = compress(self.v, m);
                self.tail = 0;
                self.ntail = 0;
            }
        }
        // The state in locals for the whole run of words: the kernel
        // builds Rust at opt-level "s", where state kept behind `&mut self`
        // goes through memory at every step (5 times slower, measured with
        // the `hash` self-test on the x86_64 release kernel).
        let [mut v0, mut v1, mut v2, mut v3] = self.v;
        let mut words = data.chunks_exact(8);
        for w in &mut words {
            let m = match <[u8; 8]>::try_from(w) {
                Ok(b) => u64::from_le_bytes(b),
                Err(_) => 0,
            };
            v3 ^= m;
            sipround!(v0, v1, v2, v3);
            sipround!(v0, v1, v2, v3);
            v0 ^= m;
        }
        self.v = [v0, v1, v2, v3];
        for (i, &b) in words.remainder().iter().enumerate() {
            self.tail |= u64::from(b) << (8 * i);
        }
        self.ntail = words.remainder().len();
    }

    /// The 64-bit tag.
    pub fn finish(self) -> u64 {
        let m = self.tail | ((self.len as u64 & 0xff) << 56);
        let [mut v0, mut v1, mut v2, mut v3] = compress(self.v, m);
        v2 ^= 0xff;
        for _ in 0..4 {
            sipround!(v0, v1, v2, v3);
        }
        v0 ^ v1 ^ v2 ^ v3
    }
}

/// SipHash-2-4 of the concatenation of `pieces` under `key`.
pub fn siphash24(key: &SipKey, pieces: &[&[u8]]) -> u64 {
    let mut h = SipHasher24::new(key);
    for p in pieces {
        h.update(p);
    }
    h.finish()
}

/// Compares two tags without an early exit, so the time a comparison takes
/// does not tell a forger how many leading bytes were right.
pub fn tags_equal(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b) {
        diff |= x ^ y;
    }
    diff == 0
}
