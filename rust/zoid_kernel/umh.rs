// SPDX-License-Identifier: GPL-2.0

//! Running a user-space program from the kernel and waiting for it
//! (`call_usermodehelper`), for job scripts and similar hooks.

use kernel::ffi::{c_char, c_int};
use kernel::prelude::*;

extern "C" {
    fn zk_run_helper(
        path: *const c_char,
        argv: *mut *mut c_char,
        envp: *mut *mut c_char,
        wait: bool,
    ) -> c_int;
}

/// Builds NUL-terminated strings and the NULL-terminated pointer arrays a
/// helper's `argv` and `envp` are.
pub(crate) struct StrList {
    bytes: KVec<u8>,
    ends: KVec<usize>,
}

impl StrList {
    /// An empty list.
    pub(crate) fn new() -> Self {
        Self {
            bytes: KVec::new(),
            ends: KVec::new(),
        }
    }

    /// Appends the concatenation of `parts` as one string (NUL bytes
    /// inside a part are refused with `EINVAL`).
    pub(crate) fn push(&mut self, parts: &[&[u8]]) -> Result {
        for p in parts {
            if p.contains(&0) {
                return Err(EINVAL);
            }
            self.bytes.extend_from_slice(p, GFP_KERNEL)?;
        }
        self.bytes.push(0, GFP_KERNEL)?;
        self.ends.push(self.bytes.len(), GFP_KERNEL)?;
        Ok(())
    }

    /// The pointer array (NULL-terminated) into `self`'s strings.
    pub(crate) fn pointers(&mut self) -> Result<KVec<*mut c_char>> {
        let mut v = KVec::with_capacity(self.ends.len() + 1, GFP_KERNEL)?;
        let base = self.bytes.as_mut_ptr();
        let mut start = 0;
        for &end in self.ends.iter() {
            // SAFETY: `start < self.bytes.len()`: every string is non-empty
            // (it has its NUL), so the offset stays inside the buffer.
            v.push(unsafe { base.add(start) }.cast::<c_char>(), GFP_KERNEL)?;
            start = end;
        }
        v.push(core::ptr::null_mut(), GFP_KERNEL)?;
        Ok(v)
    }
}

/// How long [`run`] waits.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Until the program exited: [`run`] returns its exit status.
    Exit,
    /// Until it was executed (its strings are copied): [`run`] returns 0.
    Exec,
}

/// Runs `argv[0]` with `argv` and `envp`; its exit status with
/// [`Wait::Exit`] (0: success), or an error if it could not be started.
pub(crate) fn run(argv: &mut StrList, envp: &mut StrList, wait: Wait) -> Result<i32> {
    if argv.ends.is_empty() {
        return Err(EINVAL);
    }
    let mut a = argv.pointers()?;
    let mut e = envp.pointers()?;
    // SAFETY: `a` and `e` are NULL-terminated arrays of NUL-terminated
    // strings that outlive the call (both waits return after the exec
    // copied them); `a[0]` is the path.
    let rc = unsafe { zk_run_helper(a[0], a.as_mut_ptr(), e.as_mut_ptr(), wait == Wait::Exit) };
    if rc < 0 {
        return Err(Error::from_errno(rc));
    }
    // A wait status: the exit code is in bits 8..15.
    Ok((rc >> 8) & 0xff | (rc & 0x7f))
}
