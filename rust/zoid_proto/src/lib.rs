// SPDX-License-Identifier: GPL-2.0

//! zoid's pure protocol logic.
//!
//! Everything here is `no_std`, allocation-free and free of `unsafe`, so the
//! same source builds two ways:
//!
//! * as the host crate `zoid_proto` (`cargo test`, property tests, fuzzing);
//! * inside every kernel module, included as a plain module with
//!   `#[path = "../../rust/zoid_proto/src/lib.rs"] mod zoid_proto;`.
//!
//! Rules that keep both builds working: refer to siblings with `super::`
//! (never `crate::`), depend on nothing but `core`, and keep every item that a
//! module uses `pub`.

#![no_std]

pub mod crc32c;
pub mod siphash;
pub mod ssi;
pub mod treenet;
pub mod version;
pub mod xxh64;
pub mod zoid;
pub mod zoidnet;
