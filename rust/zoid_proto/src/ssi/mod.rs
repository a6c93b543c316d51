// SPDX-License-Identifier: GPL-2.0

//! ssi's protocol logic: the write-invalidate coherence of container
//! objects (Kerrighed's KDDM states, probable-owner forwarding).  See
//! `docs/ssi.md`.

pub mod budget;
pub mod checkpoint;
pub mod coherence;
pub mod control;
pub mod members;
pub mod rebuild;
pub mod wire;
