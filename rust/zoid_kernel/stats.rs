// SPDX-License-Identifier: GPL-2.0

//! 64-bit statistics counters, declared once with their documentation.

/// Declares a struct of 64-bit counters (`Atomic<u64>`, relaxed), with
/// `new()`, `each(|name, value| ..)` for sysfs and `reset()`:
///
/// ```ignore
/// counters! {
///     /// What the counters count.
///     pub(crate) struct Stats {
///         frames_sent: "Frames transmitted.",
///     }
/// }
/// ```
///
/// The expanding module needs `kernel::sync::atomic::{Atomic, Relaxed}` in
/// scope.
#[allow(unused_macros)]
macro_rules! counters {
    ($(#[$meta:meta])* $vis:vis struct $name:ident { $($field:ident: $doc:literal,)* }) => {
        $(#[$meta])*
        $vis struct $name {
            $(#[doc = $doc] pub(crate) $field: Atomic<u64>,)*
        }
        impl $name {
            /// Every counter at zero.
            pub(crate) const fn new() -> Self {
                Self { $($field: Atomic::new(0),)* }
            }
            /// Every counter with its name.
            pub(crate) fn each(&self, mut f: impl FnMut(&'static str, u64)) {
                $(f(stringify!($field), self.$field.load(Relaxed));)*
            }
            /// Every counter back to zero (one at a time: a reader may see
            /// some reset and others not yet).
            #[allow(dead_code)]
            pub(crate) fn reset(&self) {
                $(self.$field.store(0, Relaxed);)*
            }
            /// Adds `n` to a counter.
            #[allow(dead_code)]
            pub(crate) fn add(counter: &Atomic<u64>, n: u64) {
                counter.fetch_add(n, Relaxed);
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use counters;
