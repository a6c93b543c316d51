// SPDX-License-Identifier: GPL-2.0

//! Fuzzes the rendezvous `GrantQueue` against a reference model with
//! arbitrary push / next_grant / complete / forget_peer / set_slots
//! / replace_storage operations.  See `README.md`.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../tests/fuzz_driver/mod.rs"]
mod fuzz_driver;

fuzz_target!(|data: &[u8]| {
    fuzz_driver::grant_queue(data);
});
