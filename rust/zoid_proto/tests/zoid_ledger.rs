// SPDX-License-Identifier: GPL-2.0

//! The ION's call ledger against a model: no copy of a call in progress is
//! admitted, one copy of a call answered lately is not, every other call
//! is, and a copy of a call whose reply was lost always runs.

use proptest::prelude::*;
use std::collections::VecDeque;
use zoid_proto::zoid::ledger::{Admit, CnLedger, ANSWERED, RUNNING};

#[derive(Clone, Debug)]
enum Op {
    Admit(u32),
    Finish(u32, bool),
    Clear,
}

fn op() -> impl Strategy<Value = Op> {
    // Few tags, so that copies and repeats are common.
    prop_oneof![
        6 => (0u32..100).prop_map(Op::Admit),
        4 => ((0u32..100), any::<bool>()).prop_map(|(t, d)| Op::Finish(t, d)),
        1 => Just(Op::Clear),
    ]
}

/// The model: a list of tags in progress and a queue of the last answered
/// (each with whether it still absorbs a copy).
#[derive(Default)]
struct Model {
    running: Vec<u32>,
    answered: VecDeque<(u32, bool)>,
}

impl Model {
    fn admit(&mut self, tag: u32) -> Admit {
        if self.running.contains(&tag) {
            Admit::Running
        } else if let Some(a) = self.answered.iter_mut().find(|a| **a == (tag, true)) {
            a.1 = false;
            Admit::Answered
        } else if self.running.len() == RUNNING {
            Admit::Untracked
        } else {
            self.running.push(tag);
            Admit::New
        }
    }

    fn finish(&mut self, tag: u32, delivered: bool) {
        if let Some(i) = self.running.iter().position(|&t| t == tag) {
            self.running.swap_remove(i);
            if delivered {
                if self.answered.len() == ANSWERED {
                    self.answered.pop_front();
                }
                self.answered.push_back((tag, true));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn ledger_matches_the_model(ops in proptest::collection::vec(op(), 0..600)) {
        let mut l = CnLedger::new(4);
        let mut m = Model::default();
        for o in ops {
            match o {
                Op::Admit(t) => prop_assert_eq!(l.admit(t), m.admit(t)),
                Op::Finish(t, d) => {
                    l.finish(t, d);
                    m.finish(t, d);
                }
                Op::Clear => {
                    l.clear();
                    m = Model::default();
                }
            }
            prop_assert_eq!(l.running(), m.running.len());
        }
    }

    /// A client's life: tags counting up from anywhere, each call admitted,
    /// sent again now and then while running (any number of times) or once
    /// after its answer (a copy that crossed the reply), and finished in
    /// any order.  Every call runs exactly once.
    #[test]
    fn every_call_runs_once(
        start in any::<u32>(),
        plan in proptest::collection::vec((any::<bool>(), 0usize..8, any::<bool>()), 1..300),
    ) {
        let mut l = CnLedger::new(1);
        let mut runs = std::collections::BTreeMap::<u32, u32>::new();
        let mut in_progress: Vec<u32> = Vec::new();
        // Answered lately, not yet copied.
        let mut recent: VecDeque<u32> = VecDeque::new();
        for (i, (resend, pick, finish_one)) in plan.into_iter().enumerate() {
            let tag = start.wrapping_add(i as u32);
            if l.admit(tag) == Admit::New {
                *runs.entry(tag).or_default() += 1;
                in_progress.push(tag);
            }
            if resend {
                let copy = if pick % 2 == 0 && !in_progress.is_empty() {
                    in_progress[pick % in_progress.len()]
                } else if let Some(t) = recent.pop_back() {
                    t
                } else {
                    tag
                };
                if l.admit(copy) == Admit::New {
                    *runs.entry(copy).or_default() += 1;
                }
            }
            if finish_one && !in_progress.is_empty() {
                let t = in_progress.swap_remove(pick % in_progress.len());
                l.finish(t, true);
                recent.push_back(t);
                if recent.len() > 4 {
                    recent.pop_front();
                }
            }
        }
        for (tag, n) in runs {
            prop_assert_eq!(n, 1, "call {} ran {} times", tag, n);
        }
    }
}
