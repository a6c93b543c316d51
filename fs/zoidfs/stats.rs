// SPDX-License-Identifier: GPL-2.0

//! zoidfs's counters (`/sys/kernel/zoidfs/stats`): calls forwarded per
//! operation, failures by kind, bytes moved.

use crate::zoid_kernel::stats::counters;
use kernel::sync::atomic::{Atomic, Relaxed};

counters! {
    /// Counters of every zoidfs mount of this CN.
    pub(crate) struct Counters {
        connect: "Mounts that asked zoid for the ION.",
        root: "root calls (mounts).",
        lookup: "lookup calls (walks and dentry revalidation).",
        getattr: "getattr calls.",
        setattr: "setattr calls (chmod, chown, truncate, utimes).",
        create: "create calls.",
        mkdir: "mkdir calls.",
        symlink: "symlink calls.",
        link: "link calls.",
        remove: "remove calls (unlink, rmdir).",
        rename: "rename calls.",
        readlink: "readlink calls.",
        readdir: "readdir calls.",
        read: "read calls (read, mmap page-ins).",
        write: "write calls.",
        commit: "commit calls (fsync).",
        statfs: "statfs calls.",
        open: "open calls (consistency=relaxed: a file's first open on this CN).",
        close: "close calls (consistency=relaxed: its last close).",
        recalled: "recalled calls (answers to the ION's recalls).",
        mknod: "mknod calls (fifos, sockets, devices).",
        getxattr: "getxattr calls.",
        setxattr: "setxattr calls.",
        listxattr: "listxattr calls.",
        removexattr: "removexattr calls.",
        grants: "Opens granted caching (consistency=relaxed: the file's only CN).",
        recalls: "Recalls received (another CN opened a file this CN cached).",
        grants_void: "Grants found void and dropped: given under an earlier attach to the ION, which forgot them when it lost this CN (or was lost).",
        void_data_dropped: "Data cached under a void grant dropped, not written back over what other CNs wrote since: fsync and close report EIO.",
        bad_upcalls: "Upcalls from the ION that did not decode.",
        ssi_inserts: "consistency=ssi: page or size objects that arrived on this CN.",
        ssi_invalidations: "consistency=ssi: objects that left (their pages written back and dropped).",
        ssi_exports: "consistency=ssi: objects sent to another CN (their pages written back first).",
        ssi_refreshes: "consistency=ssi: attributes fetched because a file's size object moved.",
        ssi_writeback_errors: "consistency=ssi: write-backs that failed before another CN took a page.",
        bytes_read: "Bytes read from the ION.",
        bytes_written: "Bytes written to the ION.",
        errors: "Calls that failed (any errno, the ION's or zoid's).",
        estale: "Calls that failed with ESTALE (an object gone on the ION).",
        timeouts: "Calls that failed with ETIMEDOUT (soft mounts, no ION).",
        forced: "Calls given up by umount -f (the caller saw EIO).",
        forced_umounts: "umount -f requests (umount_begin).",
        unstable_resent: "fsyncs that wrote unsynced data again: the ION had booted again since it took them (its write verifier changed).",
        unstable_lost: "fsyncs that failed with EIO: unsynced writes the rebooted ION lost were no longer cached here to send again.",
        reconnects: "Stale handles of files made good again by looking their names up (the ION booted again and exports a subdirectory).",
        reconnects_failed: "Stale handles a name lookup could not make good (the file is gone or was replaced): the call failed with ESTALE.",
        connect_failed: "Mounts that found no ION.",
        run_mappings: "Read or write calls whose folios had to be mapped together (vmap): none where a call's pages are one large folio.",
    }
}

/// Every counter of this CN.
pub(crate) static STATS: Counters = Counters::new();

/// A forwarded operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Connect,
    Root,
    Lookup,
    Getattr,
    Setattr,
    Create,
    Mkdir,
    Symlink,
    Link,
    Remove,
    Rename,
    Readlink,
    Readdir,
    Read,
    Write,
    Commit,
    Statfs,
    Open,
    Close,
    Recalled,
    Mknod,
    Getxattr,
    Setxattr,
    Listxattr,
    Removexattr,
}

const ESTALE: i32 = 116;
const ETIMEDOUT: i32 = 110;
const ESHUTDOWN: i32 = 108;

impl Counters {
    fn of(&self, op: Op) -> &Atomic<u64> {
        match op {
            Op::Connect => &self.connect,
            Op::Root => &self.root,
            Op::Lookup => &self.lookup,
            Op::Getattr => &self.getattr,
            Op::Setattr => &self.setattr,
            Op::Create => &self.create,
            Op::Mkdir => &self.mkdir,
            Op::Symlink => &self.symlink,
            Op::Link => &self.link,
            Op::Remove => &self.remove,
            Op::Rename => &self.rename,
            Op::Readlink => &self.readlink,
            Op::Readdir => &self.readdir,
            Op::Read => &self.read,
            Op::Write => &self.write,
            Op::Commit => &self.commit,
            Op::Statfs => &self.statfs,
            Op::Open => &self.open,
            Op::Close => &self.close,
            Op::Recalled => &self.recalled,
            Op::Mknod => &self.mknod,
            Op::Getxattr => &self.getxattr,
            Op::Setxattr => &self.setxattr,
            Op::Listxattr => &self.listxattr,
            Op::Removexattr => &self.removexattr,
        }
    }

    /// Counts one call of `op`.
    pub(crate) fn call(&self, op: Op) {
        self.of(op).fetch_add(1, Relaxed);
    }

    /// Counts a failure of `op` with positive `errno`; `local`: the CN's
    /// transport failed it (a timeout, `umount -f`), not the ION's answer.
    pub(crate) fn failed(&self, op: Op, errno: i32, local: bool) {
        self.errors.fetch_add(1, Relaxed);
        match (op, errno, local) {
            (Op::Connect, _, _) => {
                self.connect_failed.fetch_add(1, Relaxed);
            }
            (_, ESTALE, _) => {
                self.estale.fetch_add(1, Relaxed);
            }
            (_, ETIMEDOUT, true) => {
                self.timeouts.fetch_add(1, Relaxed);
            }
            (_, ESHUTDOWN, true) => {
                self.forced.fetch_add(1, Relaxed);
            }
            _ => {}
        }
    }

    /// Counts bytes read (`n` as a call returned it).
    pub(crate) fn bytes_read(&self, n: i64) {
        self.bytes_read.fetch_add(n.max(0) as u64, Relaxed);
    }

    /// Counts bytes written.
    pub(crate) fn bytes_written(&self, n: i64) {
        self.bytes_written.fetch_add(n.max(0) as u64, Relaxed);
    }
}

impl Counters {
    /// Counts an event of `consistency=ssi` (`zoidfs_rs_ssi_count`):
    /// insert, invalidate, export, refresh, write-back error (`enum Ssi_*`
    /// in zoidfs_vfs.c).
    pub(crate) fn ssi_event(&self, event: i32) {
        let c = match event {
            0 => &self.ssi_inserts,
            1 => &self.ssi_invalidations,
            2 => &self.ssi_exports,
            3 => &self.ssi_refreshes,
            4 => &self.ssi_writeback_errors,
            _ => return,
        };
        c.fetch_add(1, Relaxed);
    }
}
