// SPDX-License-Identifier: GPL-2.0

//! String module parameters: 7.3's `module!` takes integers and bools
//! only.
//!
//! A module's C shim defines the parameter with `ZK_STRING_PARAM(name,
//! default, description)` (`shim/zoid_kernel_shim.h`), which also defines
//! its getter `zk_param_<name>()`; the Rust side reads the value with
//! [`string_param!`]:
//!
//! ```ignore
//! let ifname: &'static CStr = string_param!(zk_param_ifname);
//! ```

/// The value of the string parameter whose `ZK_STRING_PARAM` getter is
/// `$getter`, as a `&'static CStr` (an empty string if it has none).
#[allow(unused_macros)]
macro_rules! string_param {
    ($getter:ident) => {{
        extern "C" {
            fn $getter() -> *const kernel::ffi::c_char;
        }
        // SAFETY: `ZK_STRING_PARAM` defines `$getter` without arguments or
        // preconditions.
        let p = unsafe { $getter() };
        if p.is_null() {
            c""
        } else {
            // SAFETY: the getter returns the parameter's value, a
            // NUL-terminated string (its default, a literal, or what the
            // module loader parsed) that does not change or go away while
            // the module is loaded (mode 0444: sysfs cannot write it).
            unsafe { kernel::str::CStr::from_char_ptr(p) }
        }
    }};
}
#[allow(unused_imports)]
pub(crate) use string_param;
