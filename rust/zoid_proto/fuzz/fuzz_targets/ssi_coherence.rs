// SPDX-License-Identifier: GPL-2.0

//! Fuzzes the ssi coherence state machine: three nodes, a network and
//! local accesses scheduled by the input, optionally hostile messages.
//! See `README.md`.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../tests/fuzz_driver/mod.rs"]
mod fuzz_driver;

fuzz_target!(|data: &[u8]| {
    fuzz_driver::ssi::ssi_coherence(data);
});
