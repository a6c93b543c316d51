// SPDX-License-Identifier: GPL-2.0

//! CRC-32C (Castagnoli), the checksum of zoid's wire headers and payloads.
//!
//! Table-driven, computed at compile time, usable incrementally: checksumming
//! a message fragment by fragment gives the same value as checksumming it in
//! one piece, so scatter-gather messages never need to be linearised.

/// The reflected Castagnoli polynomial.
const POLY: u32 = 0x82f6_3b78;

const fn make_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ POLY
            } else {
                crc >> 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
}

static TABLE: [u32; 256] = make_table();

/// Slicing-by-8 tables: `TABLES[k][b]` is the CRC of byte `b` followed by
/// `k` zero bytes, so eight input bytes are folded per step.
const fn make_tables() -> [[u32; 256]; 8] {
    let base = make_table();
    let mut t = [[0u32; 256]; 8];
    t[0] = base;
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[k - 1][i];
            t[k][i] = (prev >> 8) ^ base[(prev & 0xff) as usize];
            i += 1;
        }
        k += 1;
    }
    t
}

static TABLES: [[u32; 256]; 8] = make_tables();

/// An incremental CRC-32C.
#[derive(Clone, Copy, Debug)]
pub struct Crc32c {
    state: u32,
}

impl Default for Crc32c {
    fn default() -> Self {
        Self::new()
    }
}

impl Crc32c {
    /// A fresh checksum (of the empty input).
    pub const fn new() -> Self {
        Self { state: !0 }
    }

    /// Feeds `data` (eight bytes per step, then byte by byte).
    pub fn update(&mut self, data: &[u8]) {
        let mut crc = self.state;
        let mut chunks = data.chunks_exact(8);
        for c in &mut chunks {
            let lo = crc ^ u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            let t = &TABLES;
            crc = t[7][(lo & 0xff) as usize]
                ^ t[6][((lo >> 8) & 0xff) as usize]
                ^ t[5][((lo >> 16) & 0xff) as usize]
                ^ t[4][(lo >> 24) as usize]
                ^ t[3][usize::from(c[4])]
                ^ t[2][usize::from(c[5])]
                ^ t[1][usize::from(c[6])]
                ^ t[0][usize::from(c[7])];
        }
        for &b in chunks.remainder() {
            crc = TABLE[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
        }
        self.state = crc;
    }

    /// The checksum of everything fed so far.
    pub const fn finish(&self) -> u32 {
        !self.state
    }
}

/// The CRC-32C of `data` in one call.
pub fn checksum(data: &[u8]) -> u32 {
    let mut c = Crc32c::new();
    c.update(data);
    c.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        // RFC 3720 (iSCSI) appendix B.4 and the usual check value.
        assert_eq!(checksum(b""), 0);
        assert_eq!(checksum(b"123456789"), 0xe306_9283);
        assert_eq!(checksum(&[0u8; 32]), 0x8a91_36aa);
        assert_eq!(checksum(&[0xffu8; 32]), 0x62a8_ab43);
        let inc: [u8; 32] = core::array::from_fn(|i| i as u8);
        assert_eq!(checksum(&inc), 0x46dd_794e);
    }

    #[test]
    fn sliced_equals_bytewise() {
        let data: [u8; 1000] = core::array::from_fn(|i| (i * 7 + i / 13) as u8);
        for len in [0, 1, 7, 8, 9, 63, 64, 65, 999, 1000] {
            let mut bytewise = !0u32;
            for &b in &data[..len] {
                bytewise = TABLE[((bytewise ^ u32::from(b)) & 0xff) as usize] ^ (bytewise >> 8);
            }
            assert_eq!(checksum(&data[..len]), !bytewise);
        }
    }
}
