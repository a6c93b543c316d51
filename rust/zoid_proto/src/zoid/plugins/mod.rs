// SPDX-License-Identifier: GPL-2.0

//! zoid's plug-in interfaces, each declared once with `zoid_plugin!`
//! (see [`super::plugin`]).
//!
//! | id | name    | purpose                                         |
//! |----|---------|-------------------------------------------------|
//! | 1  | `ztest` | tests and benchmarks of the call path           |
//! | 2  | `unix`  | POSIX file calls                                |
//! | 3  | `job`   | job start and end (the ION's job script)        |
//! | 4  | `zoidfs`| the filesystem's operations on stateless handles |
//! | 16 | `sample`| an external plug-in module (`drivers/zoid_sample`) |

pub mod job;
pub mod sample;
pub mod unix;
pub mod zoidfs;
pub mod ztest;
