// SPDX-License-Identifier: GPL-2.0

//! zoid's local kernel abstractions: small, safe wrappers over
//! `kernel::bindings` for the facilities Linux 7.3's `kernel` crate lacks.
//!
//! Each zoid module includes this tree as a plain module:
//!
//! ```ignore
//! #[path = "../../rust/zoid_kernel/mod.rs"]
//! mod zoid_kernel;
//! ```
//!
//! One file per kernel facility; every `unsafe` block of the suite outside
//! C shims lives here, with its `// SAFETY:` argument.  A module uses only
//! part of the tree, hence the `dead_code` allowance below.  The tree expects
//! `crate::zoid_proto` (the pure protocol crate) next to it.
//!
//! The tree's own KUnit tests live in treenet's suite `zoid_kernel` (one
//! copy of the tests, although every module compiles the tree).

#![allow(dead_code)]

pub(crate) mod abort;
pub(crate) mod anonfile;
pub(crate) mod coherence;
pub(crate) mod cred;
pub(crate) mod fifo;
pub(crate) mod hooks;
pub(crate) mod kthread;
pub(crate) mod msgbuf;
pub(crate) mod netdev;
pub(crate) mod netlink;
pub(crate) mod ownlock;
pub(crate) mod params;
pub(crate) mod procevents;
pub(crate) mod spawn;
pub(crate) mod stats;
pub(crate) mod suite;
pub(crate) mod sysfs;
pub(crate) mod time;
pub(crate) mod umh;
pub(crate) mod vfs;
pub(crate) mod vm;
