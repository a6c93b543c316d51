// SPDX-License-Identifier: GPL-2.0

//! treenet's protocol logic: wire format, fragmentation and reassembly,
//! per-lane reliability, rendezvous grants.  See `docs/treenet.md`.

pub mod arq;
pub mod frag;
pub mod grant;
pub mod wire;
