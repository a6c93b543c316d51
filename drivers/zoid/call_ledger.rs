// SPDX-License-Identifier: GPL-2.0

//! The ION's call ledgers, one per CN (`zoid_proto::zoid::ledger`): a
//! call a CN sends again while its first copy runs, or just after that
//! copy was answered, is dropped instead of run twice.

use crate::zoid_proto::zoid::ledger::{Admit, CnLedger};
use kernel::prelude::*;
use kernel::sync::Mutex;

// SAFETY: `CnLedger` documents that its all-zero bytes are a valid, empty
// ledger (for node 0); every field is an integer or an array of integers.
unsafe impl pin_init::Zeroable for CnLedger {}

/// Every CN's ledger, created when its first call comes in.
#[pin_data]
pub(crate) struct Ledgers {
    #[pin]
    cns: Mutex<KVec<KBox<CnLedger>>>,
}

impl Ledgers {
    /// No CN known yet.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            cns <- kernel::new_mutex!(KVec::new(), "zoid::ledgers"),
        })
    }

    /// What to do with CN `node`'s call `tag` (see [`Admit`]).  A CN whose
    /// ledger cannot be allocated has its calls run untracked.
    pub(crate) fn admit(&self, node: u16, tag: u32) -> Admit {
        let mut cns = self.cns.lock();
        if let Some(l) = cns.iter_mut().find(|l| l.node() == node) {
            return l.admit(tag);
        }
        let Ok(mut l) = KBox::init(pin_init::init_zeroed::<CnLedger>(), GFP_KERNEL) else {
            return Admit::Untracked;
        };
        l.reset(node);
        let admitted = l.admit(tag);
        match cns.push(l, GFP_KERNEL) {
            Ok(()) => admitted,
            Err(_) => Admit::Untracked,
        }
    }

    /// CN `node`'s call `tag` ended; `delivered`: its reply went to
    /// treenet (or it wanted none).
    pub(crate) fn finish(&self, node: u16, tag: u32, delivered: bool) {
        self.on_known(node, |l| l.finish(tag, delivered));
    }

    /// CN `node` went down or detached: a copy of any of its calls runs.
    pub(crate) fn forget(&self, node: u16) {
        self.on_known(node, CnLedger::clear);
    }

    /// Runs `f` on CN `node`'s ledger, if it has one.
    fn on_known(&self, node: u16, f: impl FnOnce(&mut CnLedger)) {
        if let Some(l) = self.cns.lock().iter_mut().find(|l| l.node() == node) {
            f(l);
        }
    }
}
