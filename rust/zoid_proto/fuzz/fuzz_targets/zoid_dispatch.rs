// SPDX-License-Identifier: GPL-2.0

//! Fuzzes zoid's call path: messages through `split_call` and the `ztest`
//! and `unix` dispatchers with a dummy server, every accepted call replayed
//! through its client stub, fuzzed replies through the client stubs.  See
//! `README.md`.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../tests/fuzz_driver/mod.rs"]
mod fuzz_driver;

fuzz_target!(|data: &[u8]| {
    fuzz_driver::zoid::zoid_dispatch(data);
});
