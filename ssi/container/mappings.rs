// SPDX-License-Identifier: GPL-2.0

//! Objects mapped into processes through `/dev/ssi`: a fault is an access
//! like any other, whose page stays mapped after it (read-only after a
//! read, writable after a write) until the state machine gives the
//! contents or the right to write away.  A fault keeps its access a
//! little longer (`linger_us`, [`LINGER_US`] by default), so that the
//! faulting task uses the page before a waiting request takes it away.

use super::*;

impl Containers {
    /// Takes object `object` (of every set) away from the processes that
    /// map it.
    pub(crate) fn unmap(&self, object: u64) {
        // Objects past the page offsets a mapping can have are never mapped.
        if let Ok(index) = usize::try_from(object) {
            self.mappings.zap(index, 1);
            self.counters.unmaps.fetch_add(1, Relaxed);
        }
    }

    /// Makes `file`'s mappings part of the containers' address space (when
    /// `/dev/ssi` is opened).
    pub(crate) fn attach_file(&self, file: &kernel::fs::File) {
        self.mappings.attach(file);
    }

    /// A page fault on object (`set`, page index) of a `/dev/ssi`
    /// mapping: an access (a read, or a write), whose page stays mapped
    /// once the access ends, read-only or writable, until the node has to
    /// give it up (`apply` zaps it first).
    pub(crate) fn fault(&self, set: u32, fault: &Fault) -> Result<Mapped> {
        self.counters.faults.fetch_add(1, Relaxed);
        let object = fault.page_index() as u64;
        let access = if fault.is_write() {
            Access::Write
        } else {
            Access::Read
        };
        self.hold(set, object, access)?;
        let r = (|| {
            let t = self.table.lock();
            let e = t.objects.get(&(set, object)).ok_or(EIO)?;
            let c = e.contents.as_ref().ok_or(EIO)?;
            if c.len != PAGE_SIZE {
                // Objects smaller than a page cannot be mapped.
                return Err(EINVAL);
            }
            // SAFETY: the page is not freed or replaced while mapped:
            // `apply` zaps the object before it installs or drops contents
            // (and before the contents or the right to write leave), and
            // entries go only with the module, when no file is open.
            Ok(unsafe { fault.map(&c.page, access == Access::Write) })
        })();
        match r {
            Ok(_) => self.linger(set, object),
            Err(_) => self.unhold(set, object),
        }
        r
    }

    /// A write to object (`set`, `index`), mapped read-only: waits for
    /// the right to write (the mapping becomes writable unless it was
    /// zapped meanwhile).
    pub(crate) fn mkwrite(&self, set: u32, index: usize) -> Result {
        self.counters.faults.fetch_add(1, Relaxed);
        self.hold(set, index as u64, Access::Write)?;
        self.linger(set, index as u64);
        Ok(())
    }

    /// Keeps the access a fault took a little longer (`linger_us`), so
    /// that the faulting task runs its instruction on the page before a
    /// request that waited for the object takes it away: without it,
    /// nodes contending for a page could take it from each other forever,
    /// none of them getting to use it.  `ssi_rx` releases the access then;
    /// the node's next local access of the object releases it at once.
    pub(super) fn linger(&self, set: u32, object: u64) {
        let linger_ns = u64::from(self.linger_us.load(Relaxed)) * 1000;
        let until = now_ns().saturating_add(linger_ns);
        if self.start_linger(set, object, until, until).is_ok() {
            self.rx_kicker.kick();
        }
    }

    /// Marks the held object's access as a fault's, lingering as `until`,
    /// and queues it for `ssi_rx` (due at `due`).  Out of memory, the
    /// access is released at once (`ENOMEM`).
    pub(super) fn start_linger(&self, set: u32, object: u64, until: u64, due: u64) -> Result {
        {
            let mut t = self.table.lock();
            if let Some(e) = t.objects.get_mut(&(set, object)) {
                e.lingering = Some(until);
            }
        }
        let pushed = {
            let mut l = self.lingering.lock();
            let linger = Linger {
                set,
                object,
                until,
                due,
                tgid: crate::zoid_kernel::cred::current_tgid(),
            };
            let r = l.push(linger, GFP_KERNEL);
            self.lingers.store(l.len() as u32, Relaxed);
            r
        };
        if pushed.is_err() {
            self.end_linger(set, object, until);
            return Err(ENOMEM);
        }
        Ok(())
    }

    /// Holds the object for a page fault of a client's mapping (zoidfs's):
    /// as [`Containers::linger`] leaves a fault's access, but from the
    /// start and due only once [`Containers::fault_done`] says so.  The
    /// fault then runs, and ends, without taking the table: it returns its
    /// page locked, and a release elsewhere (under the table) may have to
    /// lock that page.  A local access of this node may take the hold over
    /// meanwhile, as it may take any linger over.  Returns the linger.
    pub(super) fn hold_for_fault(&self, set: u32, object: u64, access: Access) -> Result<u64> {
        self.hold(set, object, access)?;
        let until = now_ns();
        self.start_linger(set, object, until, NOT_DUE)?;
        Ok(until)
    }

    /// The fault of [`Containers::hold_for_fault`] ended: its hold is due
    /// after `linger_us`.  Takes no lock a release may wait behind.
    pub(super) fn fault_done(&self, set: u32, object: u64, until: u64) {
        let due = now_ns().saturating_add(u64::from(self.linger_us.load(Relaxed)) * 1000);
        {
            let mut l = self.lingering.lock();
            if let Some(g) = l
                .iter_mut()
                .find(|g| g.set == set && g.object == object && g.until == until)
            {
                g.due = due;
            }
        }
        self.rx_kicker.kick();
    }

    /// Releases the access a fault left lingering until `until`, unless
    /// it was taken over.
    pub(crate) fn end_linger(&self, set: u32, object: u64, until: u64) {
        let mut t = self.table.lock();
        let Some(e) = t.objects.get_mut(&(set, object)) else {
            return;
        };
        if e.lingering != Some(until) {
            return;
        }
        e.lingering = None;
        let out = self.release(set, object, e);
        drop(t);
        self.changed.notify_all();
        self.send_all(out);
    }

    /// Ends the lingers that are due; returns the nanoseconds until the
    /// next one is.
    pub(super) fn end_due_lingers(&self) -> Option<u64> {
        let now = now_ns();
        let exited = {
            let mut x = self.exited.lock();
            let got = x.tgids;
            let n = core::mem::take(&mut x.len);
            (got, n)
        };
        let gone = |tgid: i32| exited.0[..exited.1].contains(&tgid);

        let mut due = KVec::new();
        let mut next = None;
        {
            let mut l = self.lingering.lock();
            let mut i = 0;
            while i < l.len() {
                let g = l[i];
                let at_exit = g.due > now && gone(g.tgid);
                if g.due <= now || at_exit {
                    if due.push(g, GFP_KERNEL).is_err() {
                        // Later, then.
                        next = Some(0);
                        break;
                    }
                    if at_exit {
                        self.counters.released_at_exit.fetch_add(1, Relaxed);
                    }
                    let _ = l.remove(i);
                } else {
                    if g.due != NOT_DUE {
                        let left = g.due - now;
                        next = Some(next.map_or(left, |n: u64| n.min(left)));
                    }
                    i += 1;
                }
            }
            self.lingers.store(l.len() as u32, Relaxed);
        }
        for g in due {
            self.end_linger(g.set, g.object, g.until);
        }
        next
    }

    /// Ends every lingering access now.
    pub(crate) fn end_all_lingers(&self) {
        let lingering = {
            let mut l = self.lingering.lock();
            self.lingers.store(0, Relaxed);
            core::mem::take(&mut *l)
        };
        for g in lingering {
            self.end_linger(g.set, g.object, g.until);
        }
    }

    /// The exit probe's news (`process_events`): thread group `tgid` is
    /// gone, so accesses its faults left lingering serve no one; `ssi_rx`
    /// releases them at once.  Must not sleep.
    pub(crate) fn process_exited(&self, tgid: i32) {
        if self.lingers.load(Relaxed) == 0 {
            return;
        }
        {
            let mut x = self.exited.lock();
            let n = x.len;
            if n == EXITED_SLOTS {
                // Full: the linger timeout releases them.
                return;
            }
            x.tgids[n] = tgid;
            x.len = n + 1;
        }
        self.rx_kicker.kick();
    }

    /// Ends the access [`Containers::hold`] got.
    pub(super) fn unhold(&self, set: u32, object: u64) {
        let mut t = self.table.lock();
        let Some(e) = t.objects.get_mut(&(set, object)) else {
            return;
        };
        let out = self.release(set, object, e);
        drop(t);
        self.changed.notify_all();
        self.send_all(out);
    }
}
