// SPDX-License-Identifier: GPL-2.0

//! Fuzzes treenet's receive path: frames through `wire::parse`, hello and
//! ack decoding, the send window's ack processing, the receive window and
//! reassembly, as the kernel engine drives them.  See `README.md`.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../tests/fuzz_driver/mod.rs"]
mod fuzz_driver;

fuzz_target!(|data: &[u8]| {
    fuzz_driver::treenet_rx(data);
});
