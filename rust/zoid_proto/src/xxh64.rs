// SPDX-License-Identifier: GPL-2.0

//! XXH64 (Yann Collet's xxHash, 64-bit), the fast checksum of treenet frames
//! between nodes that both speak wire version 2 (see `treenet::wire`).
//!
//! CRC-32C in software costs a table load per byte; under emulation (QEMU's
//! TCG) every guest load is a software TLB lookup, and the checksum was the
//! largest cost of a streaming sender (docs/treenet.md, "Where the time
//! goes").  XXH64 folds 32 bytes per step into four accumulators with
//! multiplies and rotates on registers, no tables.  It is not a MAC (see
//! `siphash` for that), but as an error check its 32 low bits are as good
//! as a 32-bit CRC against random corruption (a miss chance of 2^-32).
//!
//! Usable incrementally like [`super::crc32c::Crc32c`]: hashing a frame piece
//! by piece gives the same value as hashing it in one piece.  The test
//! vectors are the reference implementation's (Python's `xxhash` module).

const P1: u64 = 0x9e37_79b1_85eb_ca87;
const P2: u64 = 0xc2b2_ae3d_27d4_eb4f;
const P3: u64 = 0x1656_67b1_9e37_79f9;
const P4: u64 = 0x85eb_ca77_c2b2_ae63;
const P5: u64 = 0x27d4_eb2f_1656_67c5;

/// Bytes folded per step (four 8-byte lanes).
const STRIPE: usize = 32;

#[inline(always)]
fn round(acc: u64, input: u64) -> u64 {
    acc.wrapping_add(input.wrapping_mul(P2))
        .rotate_left(31)
        .wrapping_mul(P1)
}

#[inline(always)]
fn merge(acc: u64, v: u64) -> u64 {
    (acc ^ round(0, v)).wrapping_mul(P1).wrapping_add(P4)
}

/// The little-endian word at `b[i..i + 8]`.  Byte by byte, as `crc32c.rs`
/// reads its input: the compiler makes one load of it, where an 8-byte
/// `copy_from_slice` became a call to `memcpy` in the kernel build (a
/// third of the checksum's time, `make bench-profile` found).
#[inline(always)]
fn word(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes([
        b[i],
        b[i + 1],
        b[i + 2],
        b[i + 3],
        b[i + 4],
        b[i + 5],
        b[i + 6],
        b[i + 7],
    ])
}

/// An incremental XXH64 computation.
#[derive(Clone, Debug)]
pub struct Xxh64 {
    v: [u64; 4],
    /// Input bytes not yet folded in (fewer than [`STRIPE`]).
    buf: [u8; STRIPE],
    nbuf: usize,
    /// Total input length.
    len: u64,
}

impl Default for Xxh64 {
    fn default() -> Self {
        Self::new()
    }
}

impl Xxh64 {
    /// A computation with seed 0.
    pub const fn new() -> Self {
        Self {
            v: [P1.wrapping_add(P2), P2, 0, 0u64.wrapping_sub(P1)],
            buf: [0; STRIPE],
            nbuf: 0,
            len: 0,
        }
    }

    #[inline(always)]
    fn stripe(v: &mut [u64; 4], s: &[u8]) {
        v[0] = round(v[0], word(s, 0));
        v[1] = round(v[1], word(s, 8));
        v[2] = round(v[2], word(s, 16));
        v[3] = round(v[3], word(s, 24));
    }

    /// Feeds `data`.
    pub fn update(&mut self, mut data: &[u8]) {
        self.len = self.len.wrapping_add(data.len() as u64);
        if self.nbuf != 0 {
            let take = (STRIPE - self.nbuf).min(data.len());
            self.buf[self.nbuf..self.nbuf + take].copy_from_slice(&data[..take]);
            self.nbuf += take;
            data = &data[take..];
            if self.nbuf < STRIPE {
                return;
            }
            Self::stripe(&mut self.v, &self.buf);
            self.nbuf = 0;
        }
        let mut stripes = data.chunks_exact(STRIPE);
        let mut v = self.v;
        for s in &mut stripes {
            Self::stripe(&mut v, s);
        }
        self.v = v;
        let rest = stripes.remainder();
        self.buf[..rest.len()].copy_from_slice(rest);
        self.nbuf = rest.len();
    }

    /// The hash of everything fed so far.
    pub fn finish(&self) -> u64 {
        let [v1, v2, v3, v4] = self.v;
        let mut h = if self.len >= STRIPE as u64 {
            let h = v1
                .rotate_left(1)
                .wrapping_add(v2.rotate_left(7))
                .wrapping_add(v3.rotate_left(12))
                .wrapping_add(v4.rotate_left(18));
            merge(merge(merge(merge(h, v1), v2), v3), v4)
        } else {
            P5
        };
        h = h.wrapping_add(self.len);
        let mut rest = &self.buf[..self.nbuf];
        while rest.len() >= 8 {
            h ^= round(0, word(rest, 0));
            h = h.rotate_left(27).wrapping_mul(P1).wrapping_add(P4);
            rest = &rest[8..];
        }
        if rest.len() >= 4 {
            let w = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
            h ^= u64::from(w).wrapping_mul(P1);
            h = h.rotate_left(23).wrapping_mul(P2).wrapping_add(P3);
            rest = &rest[4..];
        }
        for &b in rest {
            h ^= u64::from(b).wrapping_mul(P5);
            h = h.rotate_left(11).wrapping_mul(P1);
        }
        h ^= h >> 33;
        h = h.wrapping_mul(P2);
        h ^= h >> 29;
        h = h.wrapping_mul(P3);
        h ^ (h >> 32)
    }
}

/// The XXH64 (seed 0) of `data` in one call.
pub fn xxh64(data: &[u8]) -> u64 {
    let mut h = Xxh64::new();
    h.update(data);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(len: usize) -> [u8; 1000] {
        let mut b = [0u8; 1000];
        for (i, x) in b.iter_mut().enumerate().take(len) {
            *x = (i * 7 % 256) as u8;
        }
        b
    }

    #[test]
    fn reference_vectors() {
        // From the reference implementation (python3 -m pip install xxhash;
        // xxhash.xxh64(data).intdigest()).
        assert_eq!(xxh64(b""), 0xef46_db37_51d8_e999);
        assert_eq!(xxh64(b"a"), 0xd24e_c4f1_a98c_6e5b);
        assert_eq!(xxh64(b"abc"), 0x44bc_2cf5_ad77_0999);
        assert_eq!(xxh64(b"123456789"), 0x8cb8_41db_40e6_ae83);
        let inc: [u8; 100] = core::array::from_fn(|i| i as u8);
        assert_eq!(xxh64(&inc[..32]), 0xcbf5_9c51_16ff_32b4);
        assert_eq!(xxh64(&inc), 0x6ac1_e580_3216_6597);
        assert_eq!(xxh64(&sample(1000)), 0x2527_5608_a9cf_c168);
    }

    #[test]
    fn pieces_hash_like_the_whole() {
        let data = sample(1000);
        let whole = xxh64(&data);
        for cut1 in [0, 1, 7, 8, 31, 32, 33, 64, 500, 999, 1000] {
            for cut2 in [cut1, cut1 + 1, cut1 + 31, 1000] {
                let cut2 = cut2.min(1000);
                let mut h = Xxh64::new();
                h.update(&data[..cut1]);
                h.update(&data[cut1..cut2]);
                h.update(&data[cut2..]);
                assert_eq!(h.finish(), whole, "cuts {cut1} {cut2}");
            }
        }
    }
}
