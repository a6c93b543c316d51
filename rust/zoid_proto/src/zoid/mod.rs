// SPDX-License-Identifier: GPL-2.0

//! zoid's call forwarding protocol: compute nodes (CN) forward calls to
//! their I/O node (ION), which runs them and replies.
//!
//! * [`wire`]: the 32-byte call header, message kinds, the attach
//!   handshake;
//! * [`marshal`]: allocation-free encoding of arguments and results;
//! * [`plugin`]: `zoid_plugin!`, which turns one interface declaration into
//!   the ION's dispatcher and the CN's client stubs;
//! * [`plugins`]: the interfaces (`ztest`, `unix`, `job`);
//! * [`f2cn`]: file broadcast from the ION to its CNs;
//! * [`jobs`]: jobs the ION launches on its CNs, and their streams;
//! * [`idmap`]: uid/gid mapping between CNs and the ION;
//! * [`sched`]: the ION's call scheduler (priority classes, per-CN limits);
//! * [`ledger`]: the ION's record of each CN's calls running and answered,
//!   so that a call sent again is not run twice;
//! * [`errno`]: the errno values all of these report.
//!
//! The macros are textually scoped: `marshal` (`wire_struct!`) and
//! `plugin` (`zoid_plugin!`) are declared with `#[macro_use]` before the
//! modules that use them.

pub mod errno;
#[macro_use]
pub mod marshal;
pub mod f2cn;
pub mod idmap;
pub mod jobs;
pub mod ledger;
#[macro_use]
pub mod plugin;
pub mod plugins;
pub mod sched;
pub mod wire;
