// SPDX-License-Identifier: GPL-2.0

//! The calling task's identity, as a forwarded call carries it.

/// Most supplementary groups a forwarded call carries (NFS's AUTH_SYS has 16;
/// ZOID forwarded none).
pub(crate) const MAX_GROUPS: usize = 32;

extern "C" {
    fn zk_current_is_admin() -> bool;
    fn zk_current_tgid() -> i32;
    fn zk_current_creds(
        tgid: *mut u32,
        uid: *mut u32,
        gid: *mut u32,
        groups: *mut u32,
        max_groups: u32,
        ngroups: *mut u32,
    );
}

/// Process id and filesystem credentials of a task, numbered as in the
/// initial user namespace (unmappable ids are the overflow id).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Creds {
    /// Thread-group id (the process).
    pub(crate) pid: u32,
    /// Filesystem uid.
    pub(crate) uid: u32,
    /// Filesystem gid.
    pub(crate) gid: u32,
    /// Supplementary groups; the first `ngroups` are valid.
    pub(crate) groups: [u32; MAX_GROUPS],
    /// How many of `groups` are valid (extra groups are dropped).
    pub(crate) ngroups: usize,
}

impl Creds {
    /// The calling task's.
    pub(crate) fn current() -> Self {
        let mut c = Creds {
            pid: 0,
            uid: 0,
            gid: 0,
            groups: [0; MAX_GROUPS],
            ngroups: 0,
        };
        let mut n = 0u32;
        // SAFETY: every pointer is valid for one write (`groups` for
        // `MAX_GROUPS`); the shim only reads the current task's credentials.
        unsafe {
            zk_current_creds(
                &mut c.pid,
                &mut c.uid,
                &mut c.gid,
                c.groups.as_mut_ptr(),
                MAX_GROUPS as u32,
                &mut n,
            )
        };
        c.ngroups = (n as usize).min(MAX_GROUPS);
        c
    }

    /// The valid supplementary groups.
    pub(crate) fn groups(&self) -> &[u32] {
        &self.groups[..self.ngroups]
    }
}

/// The calling task's thread group (process) id, in the initial pid
/// namespace.
pub(crate) fn current_tgid() -> i32 {
    // SAFETY: no preconditions; reads the current task.
    unsafe { zk_current_tgid() }
}

/// Whether the calling task holds `CAP_SYS_ADMIN` (for operations that
/// write on every CN, such as f2cn).
pub(crate) fn current_is_admin() -> bool {
    // SAFETY: no preconditions; reads the current task's credentials.
    unsafe { zk_current_is_admin() }
}
