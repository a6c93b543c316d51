// SPDX-License-Identifier: GPL-2.0

//! Sets: their definitions (name, object size, I/O linker), made on the
//! ION and learnt by every node, and their members.
//!
//! A set takes in every node unless the ION limits it to some
//! (`members SET NODE...` written to `sets`): messages about its objects
//! from another node, or requests for one, are then dropped
//! (`not_member`), and such a node's own accesses are refused (`EACCES`).
//! The decision is `zoid_proto::ssi::members`; the ION sends the list
//! after the set's definition (`Members`), so every member decides alone.

use kernel::prelude::*;
use kernel::rbtree::RBTree;
use kernel::sync::atomic::Relaxed;
use kernel::sync::Arc;

use crate::container::{Containers, Table, OBJECT_SIZE};
use crate::linker::{valid_object_size, FileLinker, IoLinker, RemoteLinker, SetDef};
use crate::treenet;
use crate::zoid_kernel::sysfs::SysfsWriter;
use crate::zoid_kernel::vm::PAGE_SIZE;
use crate::zoid_proto::ssi::coherence::{Msg, NodeId};
use crate::zoid_proto::ssi::control::{self, Definition, LinkerKind, MEMBERS_ENTRY_LEN};
use crate::zoid_proto::ssi::members::Members;

impl Containers {
    /// Set `set`'s object size and I/O linker (undefined sets: 4 KiB of
    /// memory).
    pub(crate) fn set_info(&self, set: u32) -> (usize, Arc<dyn IoLinker>) {
        match self.sets.lock().get(&set) {
            Some(d) => (d.size, d.linker.clone()),
            None => (OBJECT_SIZE, self.memory.clone()),
        }
    }

    /// The object size and linker for a message of set `set` carrying
    /// `len` bytes of contents: definitions live on the ION, so a CN takes
    /// an undefined set's size from the contents (a power of two from 64
    /// bytes to a page; `None` otherwise).
    pub(crate) fn set_info_of_message(
        &self,
        set: u32,
        len: usize,
    ) -> Option<(usize, Arc<dyn IoLinker>)> {
        if let Some(d) = self.sets.lock().get(&set) {
            return Some((d.size, d.linker.clone()));
        }
        if len == 0 {
            return Some((OBJECT_SIZE, self.memory.clone()));
        }
        if treenet::node_id().ok() == treenet::ion().ok() {
            // The home knows every set it has: undefined means 4 KiB.
            return (len == OBJECT_SIZE).then(|| (len, self.memory.clone()));
        }
        valid_object_size(len as u64, PAGE_SIZE).then(|| (len, self.memory.clone()))
    }

    /// `sets`: defines set `set` on the ION (the home of every object, so
    /// the only node that creates objects): its name, object size and
    /// linker, `file` with `path` or `memory`.  `EINVAL` elsewhere or for
    /// a bad size, name or linker; `EEXIST` if the id or the name is
    /// taken; `EBUSY` if objects of the set exist already.
    pub(crate) fn define_set(
        &self,
        set: u32,
        name: &[u8],
        size: u64,
        linker: &[u8],
        path: Option<&[u8]>,
    ) -> Result {
        if treenet::node_id()? != treenet::ion()? {
            return Err(EINVAL);
        }
        if !valid_object_size(size, PAGE_SIZE) || !crate::linker::valid_set_name(name) {
            return Err(EINVAL);
        }
        // Refused definitions create no file: check first (and again once
        // it is open, for definitions made meanwhile).
        self.check_new_set(set, name)?;
        let (kind, linker): (_, Arc<dyn IoLinker>) = match (linker, path) {
            (b"memory", None) => (LinkerKind::Memory, self.memory.clone()),
            (b"file", Some(p)) => (
                LinkerKind::File,
                Arc::new(FileLinker::open(p)?, GFP_KERNEL)?,
            ),
            _ => return Err(EINVAL),
        };
        let mut n = KVec::with_capacity(name.len(), GFP_KERNEL)?;
        n.extend_from_slice(name, GFP_KERNEL)?;
        let t = self.table.lock();
        let mut sets = self.sets.lock();
        Self::check_new_set_locked(&t, &sets, set, name)?;
        let def = SetDef {
            name: n,
            size: size as usize,
            kind,
            linker,
            client: None,
            members: None,
        };
        sets.try_create_and_insert(set, def, GFP_KERNEL)?;
        drop(sets);
        drop(t);
        // Every member learns it (nodes that join later, at their first
        // heartbeat).
        self.announce_set(set);
        Ok(())
    }

    /// Whether set `set` named `name` can be defined: `EEXIST` if the id or
    /// the name is taken, `EBUSY` if objects of the set exist.
    fn check_new_set(&self, set: u32, name: &[u8]) -> Result {
        let t = self.table.lock();
        let sets = self.sets.lock();
        Self::check_new_set_locked(&t, &sets, set, name)
    }

    fn check_new_set_locked(
        t: &Table,
        sets: &RBTree<u32, SetDef>,
        set: u32,
        name: &[u8],
    ) -> Result {
        if sets.get(&set).is_some() || sets.values().any(|d| &d.name[..] == name) {
            return Err(EEXIST);
        }
        if t.objects.keys().any(|&(s, _)| s == set) {
            return Err(EBUSY);
        }
        Ok(())
    }

    /// The definitions of every set (or of `only`), for `Define` messages.
    pub(crate) fn set_definitions(&self, only: Option<u32>) -> Result<KVec<Definition>> {
        let sets = self.sets.lock();
        let mut out = KVec::new();
        for (&id, d) in sets.iter() {
            if only.is_some_and(|o| o != id) {
                continue;
            }
            if let Some(def) = Definition::new(id, d.size as u32, d.kind, &d.name) {
                out.push(def, GFP_KERNEL)?;
            }
        }
        Ok(out)
    }

    /// A set the home defined (a `Define` from the ION): this node now
    /// knows its name, object size and linker kind.  A size that cannot
    /// be, or a name that is not plain, is ignored (counted malformed).
    pub(crate) fn learn_set(&self, d: &Definition) -> Result {
        if !valid_object_size(u64::from(d.size), PAGE_SIZE)
            || !crate::linker::valid_set_name(d.name())
        {
            self.counters.malformed.fetch_add(1, Relaxed);
            return Ok(());
        }
        let mut n = KVec::with_capacity(d.name().len(), GFP_KERNEL)?;
        n.extend_from_slice(d.name(), GFP_KERNEL)?;
        let mut def = SetDef {
            name: n,
            size: d.size as usize,
            kind: d.linker,
            linker: Arc::new(RemoteLinker(d.linker), GFP_KERNEL)?,
            client: None,
            // Members follow in their own message, for a limited set.
            members: None,
        };
        let mut sets = self.sets.lock();
        // A module caching through the set stays attached.
        if let Some(c) = sets.get(&d.set).and_then(|old| old.client.clone()) {
            def.linker = c.clone();
            def.client = Some(c);
        }
        let node = kernel::rbtree::RBTreeNodeReservation::new(GFP_KERNEL)?.into_node(d.set, def);
        // The home's word replaces what this node knew (a name, too).
        let renamed = sets
            .iter()
            .find(|(_, old)| &old.name[..] == d.name())
            .map(|(&id, _)| id);
        if let Some(id) = renamed {
            sets.remove(&id);
        }
        // Replacing an older definition of the same id drops it.
        drop(sets.insert(node));
        Ok(())
    }

    /// `sets`: one line per defined set: id, name, object size, linker
    /// (and its file).
    pub(crate) fn show_sets(&self, w: &mut SysfsWriter<'_>) -> Result {
        let sets = self.sets.lock();
        for (id, d) in sets.iter() {
            write!(w, "{id} ")?;
            w.write_bytes(&d.name)?;
            write!(w, " {} {}", d.size, d.linker.kind())?;
            d.linker.describe(w)?;
            if let Some(members) = &d.members {
                write!(w, " members")?;
                for n in members.iter() {
                    write!(w, " {n}")?;
                }
            }
            writeln!(w)?;
        }
        Ok(())
    }

    /// `sets`: limits set `set` (defined here, on the ION) to `members`
    /// and the ION (`None`: every node again).  Allowed only while no
    /// object of the set exists (`EBUSY`), so that no node outside the set
    /// holds one; `ENOENT` for a set not defined, `EINVAL` on a CN.
    pub(crate) fn limit_set(&self, set: u32, members: Option<KVec<NodeId>>) -> Result {
        if treenet::node_id()? != treenet::ion()? {
            return Err(EINVAL);
        }
        let t = self.table.lock();
        let mut sets = self.sets.lock();
        let d = sets.get_mut(&set).ok_or(ENOENT)?;
        if t.objects.keys().any(|&(s, _)| s == set) {
            return Err(EBUSY);
        }
        d.members = members;
        drop(sets);
        drop(t);
        // Every member learns it: a `Define`, then the members.
        self.announce_set(set);
        Ok(())
    }

    /// The members of every limited set (or of `only`), for `Members`
    /// messages: (set, node) pairs.
    pub(crate) fn set_members(&self, only: Option<u32>) -> Result<KVec<(u32, NodeId)>> {
        let sets = self.sets.lock();
        let mut out = KVec::new();
        for (&id, d) in sets.iter() {
            if only.is_some_and(|o| o != id) {
                continue;
            }
            for &n in d.members.iter().flatten() {
                out.push((id, n), GFP_KERNEL)?;
            }
        }
        Ok(out)
    }

    /// The members the home listed (a `Members` from the ION, after the
    /// sets' `Define`): each set named takes in only its nodes listed.  A
    /// set this node does not know is counted unexpected.
    pub(crate) fn learn_members(&self, entries: &[u8]) -> Result {
        let mut pairs = KVec::with_capacity(entries.len() / MEMBERS_ENTRY_LEN, GFP_KERNEL)?;
        for c in entries.chunks_exact(MEMBERS_ENTRY_LEN) {
            let mut entry = [0u8; MEMBERS_ENTRY_LEN];
            entry.copy_from_slice(c);
            pairs.push(control::decode_member(&entry), GFP_KERNEL)?;
        }
        let mut sets = self.sets.lock();
        for (i, &(set, _)) in pairs.iter().enumerate() {
            if pairs[..i].iter().any(|&(s, _)| s == set) {
                continue;
            }
            let mut members = KVec::new();
            for &(s, n) in pairs[i..].iter() {
                if s == set {
                    members.push(n, GFP_KERNEL)?;
                }
            }
            match sets.get_mut(&set) {
                Some(d) => d.members = Some(members),
                None => {
                    self.counters.unexpected.fetch_add(1, Relaxed);
                }
            }
        }
        Ok(())
    }

    /// Whether a coherence message `msg` about an object of set `set`,
    /// from `src`, comes from and (a request) asks for members of the set
    /// (`ssi::members`).
    pub(crate) fn members_admit(&self, set: u32, src: u16, msg: &Msg) -> bool {
        let Ok(home) = treenet::ion() else {
            return false;
        };
        let sets = self.sets.lock();
        let listed = sets.get(&set).and_then(|d| d.members.as_deref());
        Members::new(listed, NodeId::from(home)).admits(NodeId::from(src), msg)
    }

    /// Whether this node is a member of set `set` (may access its
    /// objects).
    pub(crate) fn member_here(&self, set: u32) -> bool {
        let (Ok(me), Ok(home)) = (treenet::node_id(), treenet::ion()) else {
            // Not up: the access fails as it would have.
            return true;
        };
        let sets = self.sets.lock();
        let listed = sets.get(&set).and_then(|d| d.members.as_deref());
        Members::new(listed, NodeId::from(home)).contains(NodeId::from(me))
    }
}
