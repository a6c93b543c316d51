// SPDX-License-Identifier: GPL-2.0

//! The ION's call scheduler: priorities, FIFO order, limits, dead CNs,
//! cancellation, aging; a model-based property test.

use proptest::prelude::*;
use std::collections::{BTreeMap, VecDeque};
use zoid_proto::zoid::errno::EAGAIN;
use zoid_proto::zoid::sched::{
    classify, CallScheduler, Priority, QueuedCall, SchedError, DEFAULT_AGING,
};

fn call(handle: u32, cn: u16, class: Priority) -> QueuedCall {
    QueuedCall {
        handle,
        cn,
        class,
        bytes: 0,
    }
}

/// Handles of every queued call, in pick order.
fn drain<const N: usize>(s: &mut CallScheduler<N>) -> Vec<u32> {
    std::iter::from_fn(|| s.next()).map(|c| c.handle).collect()
}

#[test]
fn highest_class_first_fifo_within() {
    let mut s = CallScheduler::<16>::new(16, 0);
    use Priority::*;
    for (h, class) in [
        (1, Bulk),
        (2, Small),
        (3, Urgent),
        (4, Small),
        (5, Bulk),
        (6, Urgent),
    ] {
        s.enqueue(call(h, 1, class)).unwrap();
    }
    assert_eq!(s.queued(), 6);
    assert_eq!((s.depth(Urgent), s.depth(Small), s.depth(Bulk)), (2, 2, 2));
    assert_eq!(drain(&mut s), [3, 6, 2, 4, 1, 5]);
    assert!(s.is_empty());
    assert_eq!(s.running(), 6);
    assert_eq!(s.next(), None);
    // Interleaved: a later urgent call overtakes queued small ones.
    for _ in 0..6 {
        assert!(s.done(1, 0));
    }
    s.enqueue(call(10, 2, Small)).unwrap();
    s.enqueue(call(11, 3, Small)).unwrap();
    assert_eq!(s.next().unwrap().handle, 10);
    s.enqueue(call(12, 2, Urgent)).unwrap();
    assert_eq!(drain(&mut s), [12, 11]);
}

#[test]
fn per_cn_limit_counts_queued_and_running() {
    let mut s = CallScheduler::<16>::new(2, DEFAULT_AGING);
    assert_eq!(s.max_per_cn(), 2);
    s.enqueue(call(1, 7, Priority::Small)).unwrap();
    s.enqueue(call(2, 7, Priority::Bulk)).unwrap();
    assert_eq!(
        s.enqueue(call(3, 7, Priority::Urgent)),
        Err(SchedError::CnOverLimit)
    );
    assert_eq!(SchedError::CnOverLimit.errno(), EAGAIN);
    s.enqueue(call(4, 8, Priority::Small)).unwrap();
    assert_eq!(s.outstanding(7), 2);
    assert_eq!(s.next().unwrap().handle, 1);
    // Running still counts.
    assert_eq!(s.outstanding(7), 2);
    assert_eq!(
        s.enqueue(call(3, 7, Priority::Small)),
        Err(SchedError::CnOverLimit)
    );
    assert!(s.done(7, 0));
    assert_eq!(s.outstanding(7), 1);
    s.enqueue(call(3, 7, Priority::Small)).unwrap();
    // `done` without a running call changes nothing.
    assert!(!s.done(7, 0));
    assert!(!s.done(99, 0));
    assert_eq!(s.outstanding(7), 2);
    // Lowering the limit keeps what was accepted.
    s.set_max_per_cn(1);
    assert_eq!(s.queued(), 3);
    assert_eq!(
        s.enqueue(call(5, 8, Priority::Small)),
        Err(SchedError::CnOverLimit)
    );
    assert_eq!(s.enqueue(call(6, 9, Priority::Small)), Ok(()));
    s.set_max_per_cn(0);
    assert_eq!(
        s.enqueue(call(7, 10, Priority::Small)),
        Err(SchedError::CnOverLimit)
    );
    assert_eq!(drain(&mut s), [4, 3, 6, 2]);
}

#[test]
fn a_cn_at_its_running_limit_waits_while_others_run() {
    let mut s = CallScheduler::<16>::new(16, 0);
    s.set_max_running_per_cn(2);
    // CN 1 queues four calls, then CN 2 one, all of one class.
    for h in 0..4 {
        s.enqueue(call(h, 1, Priority::Small)).unwrap();
    }
    s.enqueue(call(9, 2, Priority::Bulk)).unwrap();
    // CN 1 runs two; its third is passed over for CN 2's, even of a
    // lower class.
    assert_eq!(s.next().map(|c| c.handle), Some(0));
    assert_eq!(s.next().map(|c| c.handle), Some(1));
    assert_eq!(s.next().map(|c| c.handle), Some(9));
    // Nothing runnable: CN 1 is at its limit.
    assert_eq!(s.next(), None);
    assert_eq!(s.queued(), 2);
    // One of CN 1's ends: its next one runs, in order.
    assert!(s.done(1, 0));
    assert_eq!(s.next().map(|c| c.handle), Some(2));
    assert_eq!(s.next(), None);
    // No limit: the rest runs.
    s.set_max_running_per_cn(0);
    assert_eq!(s.next().map(|c| c.handle), Some(3));
}

#[test]
fn total_capacity_includes_running_calls() {
    let mut s = CallScheduler::<4>::new(100, 0);
    assert_eq!(s.capacity(), 4);
    for h in 0..4 {
        s.enqueue(call(h, h as u16 % 2, Priority::Small)).unwrap();
    }
    assert_eq!(
        s.enqueue(call(9, 5, Priority::Urgent)),
        Err(SchedError::Full)
    );
    assert_eq!(SchedError::Full.errno(), EAGAIN);
    let c = s.next().unwrap();
    assert_eq!(
        s.enqueue(call(9, 5, Priority::Urgent)),
        Err(SchedError::Full)
    );
    assert!(s.done(c.cn, 0));
    s.enqueue(call(9, 5, Priority::Urgent)).unwrap();
    // Four distinct CNs fill the per-CN table too.
    assert_eq!(drain(&mut s), [9, 1, 2, 3]);
    for cn in [1, 0, 1, 5] {
        assert!(s.done(cn, 0));
    }
    assert_eq!(s.running(), 0);
    for cn in 10..14 {
        s.enqueue(call(u32::from(cn), cn, Priority::Bulk)).unwrap();
    }
    assert_eq!(
        s.enqueue(call(0, 14, Priority::Bulk)),
        Err(SchedError::Full)
    );
    assert_eq!(drain(&mut s), [10, 11, 12, 13]);
}

#[test]
fn default_is_empty_and_refuses() {
    let mut s = CallScheduler::<8>::default();
    assert_eq!((s.max_per_cn(), s.aging()), (0, 0));
    assert_eq!(
        s.enqueue(call(1, 1, Priority::Small)),
        Err(SchedError::CnOverLimit)
    );
    s.set_max_per_cn(4);
    s.set_aging(2);
    assert_eq!(s.aging(), 2);
    s.enqueue(call(1, 1, Priority::Small)).unwrap();
    assert_eq!(drain(&mut s), [1]);
}

#[test]
fn drop_cn_removes_only_its_queued_calls() {
    let mut s = CallScheduler::<16>::new(8, 0);
    use Priority::*;
    s.enqueue(call(1, 1, Small)).unwrap();
    assert_eq!(s.next().unwrap().handle, 1); // running
    for (h, cn, class) in [
        (2, 1, Bulk),
        (3, 2, Bulk),
        (4, 1, Urgent),
        (5, 2, Small),
        (6, 1, Bulk),
    ] {
        s.enqueue(call(h, cn, class)).unwrap();
    }
    let mut dropped = Vec::new();
    assert_eq!(s.drop_cn(1, |c| dropped.push(c.handle)), 3);
    assert_eq!(dropped, [4, 2, 6]);
    assert_eq!(s.outstanding(1), 1, "the running call stays counted");
    assert_eq!(s.drop_cn(1, |_| panic!("nothing left")), 0);
    assert_eq!(s.drop_cn(3, |_| panic!("unknown CN")), 0);
    assert_eq!((s.depth(Urgent), s.depth(Small), s.depth(Bulk)), (0, 1, 1));
    assert!(s.done(1, 0));
    assert_eq!(s.outstanding(1), 0);
    s.enqueue(call(7, 2, Bulk)).unwrap();
    assert_eq!(drain(&mut s), [5, 3, 7]);
}

#[test]
fn remove_cancels_a_queued_call() {
    let mut s = CallScheduler::<8>::new(8, 0);
    for h in 1..=4 {
        s.enqueue(call(h, 3, Priority::Small)).unwrap();
    }
    s.enqueue(call(2, 4, Priority::Small)).unwrap();
    assert_eq!(s.next().unwrap().handle, 1);
    assert_eq!(s.remove(3, 1), None, "running");
    assert_eq!(s.remove(3, 9), None, "unknown");
    assert_eq!(s.remove(5, 2), None, "other CN");
    assert_eq!(s.remove(3, 2), Some(call(2, 3, Priority::Small)));
    assert_eq!(s.remove(3, 2), None);
    assert_eq!(s.remove(3, 4), Some(call(4, 3, Priority::Small)));
    assert_eq!(s.outstanding(3), 2);
    // The tail was removed: appending still works.
    s.enqueue(call(5, 3, Priority::Small)).unwrap();
    assert_eq!(drain(&mut s), [3, 2, 5]);
}

/// Picks of a scheduler kept full of urgent calls (and of `lower`).
fn picks_under_pressure(aging: u32, lower: &[Priority], n: usize) -> Vec<Priority> {
    let mut s = CallScheduler::<64>::new(1000, aging);
    let mut h = 0;
    let mut refill = |s: &mut CallScheduler<64>, class| {
        while s.depth(class) < 4 {
            h += 1;
            s.enqueue(call(h, 1, class)).unwrap();
        }
    };
    let mut out = Vec::new();
    for _ in 0..n {
        refill(&mut s, Priority::Urgent);
        for &c in lower {
            refill(&mut s, c);
        }
        let c = s.next().unwrap();
        assert!(s.done(1, 0));
        out.push(c.class);
    }
    out
}

#[test]
fn aging_lets_bulk_through() {
    use Priority::*;
    let p = picks_under_pressure(3, &[Bulk], 12);
    assert_eq!(
        p,
        [
            Urgent, Urgent, Urgent, Bulk, Urgent, Urgent, Urgent, Bulk, Urgent, Urgent, Urgent,
            Bulk
        ]
    );
    // Strict priorities: never.
    assert!(picks_under_pressure(0, &[Small, Bulk], 50)
        .iter()
        .all(|&c| c == Urgent));
    // Both lower classes waiting: each gets a pick within every K + 2.
    for k in 1..6 {
        let p = picks_under_pressure(k, &[Small, Bulk], 200);
        for class in [Small, Bulk] {
            let mut gap = 0;
            for &c in &p {
                gap = if c == class { 0 } else { gap + 1 };
                assert!(
                    gap <= k as usize + 1,
                    "k {k}: {class:?} waited {gap}: {p:?}"
                );
            }
        }
        // Urgent calls still get K of every K + 2 picks.
        let urgent = p.iter().filter(|&&c| c == Urgent).count();
        assert!(
            urgent + 2 >= 200 * k as usize / (k as usize + 2),
            "k {k}: {urgent}"
        );
        assert!(
            !p.windows(3).any(|w| w.iter().all(|&c| c != Urgent)),
            "k {k}"
        );
    }
    // Small starves bulk without aging, not with it.
    assert!(picks_under_pressure(0, &[Small], 20)
        .iter()
        .all(|&c| c == Urgent));
    let mut s = CallScheduler::<64>::new(1000, 2);
    for h in 0..10 {
        s.enqueue(call(h, 1, if h < 8 { Small } else { Bulk }))
            .unwrap();
    }
    let order: Vec<Priority> = std::iter::from_fn(|| s.next()).map(|c| c.class).collect();
    assert_eq!(
        order,
        [Small, Small, Bulk, Small, Small, Bulk, Small, Small, Small, Small]
    );
}

#[test]
fn byte_budget_counts_queued_and_running_and_always_lets_one_in() {
    let mut s = CallScheduler::<16>::new(16, 0);
    s.set_max_bytes_per_cn(100);
    let sized = |handle, cn, bytes| QueuedCall {
        bytes,
        ..call(handle, cn, Priority::Small)
    };
    // One call larger than the budget: a CN with nothing outstanding is
    // never stopped outright.
    s.enqueue(sized(1, 1, 500)).unwrap();
    assert_eq!(s.bytes_held(1), 500);
    assert_eq!(s.enqueue(sized(2, 1, 1)), Err(SchedError::CnOverBytes));
    assert_eq!(SchedError::CnOverBytes.errno(), EAGAIN);
    // Another CN has a budget of its own.
    s.enqueue(sized(3, 2, 60)).unwrap();
    s.enqueue(sized(4, 2, 40)).unwrap();
    assert_eq!(s.enqueue(sized(5, 2, 1)), Err(SchedError::CnOverBytes));
    // Running calls still hold their bytes, until done.
    let first = s.next().unwrap();
    assert_eq!((first.handle, first.bytes), (1, 500));
    assert_eq!(s.enqueue(sized(2, 1, 1)), Err(SchedError::CnOverBytes));
    assert!(s.done(first.cn, first.bytes));
    assert_eq!(s.bytes_held(1), 0);
    s.enqueue(sized(2, 1, 100)).unwrap();
    // A queued call taken back (Cancel) or dropped with its CN frees its
    // bytes.
    assert_eq!(s.remove(2, 4).map(|c| c.bytes), Some(40));
    assert_eq!(s.bytes_held(2), 60);
    s.enqueue(sized(5, 2, 40)).unwrap();
    assert_eq!(s.drop_cn(2, |_| {}), 2);
    assert_eq!(s.bytes_held(2), 0);
    // 0: no limit.
    s.set_max_bytes_per_cn(0);
    s.enqueue(sized(6, 1, u32::MAX)).unwrap();
    assert_eq!(s.bytes_held(1), 100 + u64::from(u32::MAX));
}

#[test]
fn classify_by_hint_and_size() {
    assert_eq!(classify(10, 4096, true), Priority::Urgent);
    assert_eq!(classify(1 << 20, 4096, true), Priority::Urgent);
    assert_eq!(classify(4096, 4096, false), Priority::Small);
    assert_eq!(classify(0, 0, false), Priority::Small);
    assert_eq!(classify(4097, 4096, false), Priority::Bulk);
    assert_eq!(Priority::ALL.map(Priority::index), [0, 1, 2]);
}

// ---------------------------------------------------------------------------
// Model-based property test.

const CAP: usize = 8;

#[derive(Clone, Debug)]
enum Op {
    Enqueue(u16, u8),
    Next,
    Done(usize),
    DropCn(u16),
    Remove(u16, u32),
    SetMax(u32),
    SetMaxRunning(u32),
    SetMaxBytes(u64),
    SetAging(u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u16..5, 0u8..3).prop_map(|(cn, c)| Op::Enqueue(cn, c)),
        3 => Just(Op::Next),
        2 => any::<usize>().prop_map(Op::Done),
        1 => (0u16..5).prop_map(Op::DropCn),
        1 => (0u16..5, 0u32..40).prop_map(|(cn, h)| Op::Remove(cn, h)),
        1 => (0u32..5).prop_map(Op::SetMax),
        1 => (0u32..4).prop_map(Op::SetMaxRunning),
        1 => prop_oneof![Just(0u64), 1u64..400].prop_map(Op::SetMaxBytes),
        1 => (0u32..4).prop_map(Op::SetAging),
    ]
}

/// The documented behaviour, written plainly.
#[derive(Default)]
struct Model {
    queues: [VecDeque<QueuedCall>; 3],
    running: Vec<QueuedCall>,
    max: u32,
    max_bytes: u64,
    max_running: u32,
    aging: u32,
    passed: [u32; 3],
}

impl Model {
    fn outstanding(&self, cn: u16) -> u32 {
        let q = self.queues.iter().flatten().filter(|c| c.cn == cn).count();
        let r = self.running.iter().filter(|c| c.cn == cn).count();
        (q + r) as u32
    }

    fn bytes(&self, cn: u16) -> u64 {
        self.queues
            .iter()
            .flatten()
            .chain(&self.running)
            .filter(|c| c.cn == cn)
            .map(|c| u64::from(c.bytes))
            .sum()
    }

    fn tracked(&self) -> usize {
        self.queues.iter().map(VecDeque::len).sum::<usize>() + self.running.len()
    }

    fn enqueue(&mut self, c: QueuedCall) -> Result<(), SchedError> {
        if self.outstanding(c.cn) >= self.max {
            return Err(SchedError::CnOverLimit);
        }
        let held = self.bytes(c.cn);
        if self.max_bytes != 0 && held != 0 && held + u64::from(c.bytes) > self.max_bytes {
            return Err(SchedError::CnOverBytes);
        }
        if self.tracked() >= CAP {
            return Err(SchedError::Full);
        }
        self.queues[c.class.index()].push_back(c);
        Ok(())
    }

    fn next(&mut self) -> Option<QueuedCall> {
        let mut class = None;
        if self.aging > 0 {
            // An aged lower class, Small first.
            class = [1, 2]
                .into_iter()
                .find(|&c| !self.queues[c].is_empty() && self.passed[c] >= self.aging);
        }
        let first = class.or_else(|| (0..3).find(|&c| !self.queues[c].is_empty()))?;
        // The first call whose CN may run one more: in that class, else
        // in the others, highest first.
        let may_run = |cn: u16| {
            self.max_running == 0
                || (self.running.iter().filter(|c| c.cn == cn).count() as u32) < self.max_running
        };
        let (class, i) = std::iter::once(first)
            .chain((0..3).filter(|&c| c != first))
            .find_map(|c| {
                self.queues[c]
                    .iter()
                    .position(|q| may_run(q.cn))
                    .map(|i| (c, i))
            })?;
        let call = self.queues[class].remove(i).unwrap();
        for x in [1, 2] {
            if x == class || self.queues[x].is_empty() {
                self.passed[x] = 0;
            } else if class < x {
                // Only picks of higher classes count.
                self.passed[x] += 1;
            }
        }
        self.running.push(call);
        Some(call)
    }
}

proptest! {
    /// The scheduler behaves as the model, never exceeds its limits, and
    /// hands every accepted call back exactly once.
    #[test]
    fn scheduler_matches_model(ops in proptest::collection::vec(op(), 0..200)) {
        let mut s = CallScheduler::<CAP>::new(0, 0);
        let mut m = Model::default();
        let mut next_handle = 0u32;
        // handle -> times returned (by next, drop_cn or remove)
        let mut returned: BTreeMap<u32, u32> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Enqueue(cn, c) => {
                    let class = Priority::ALL[usize::from(c)];
                    let call = QueuedCall { handle: next_handle, cn, class, bytes: (next_handle * 37) % 150 };
                    let before = s.outstanding(cn);
                    let r = s.enqueue(call);
                    prop_assert_eq!(r, m.enqueue(call));
                    if r.is_ok() {
                        prop_assert!(before < s.max_per_cn());
                        returned.insert(next_handle, 0);
                        next_handle += 1;
                    }
                }
                Op::Next => {
                    let got = s.next();
                    prop_assert_eq!(got, m.next());
                    if let Some(c) = got {
                        *returned.get_mut(&c.handle).unwrap() += 1;
                    }
                }
                Op::Done(i) => {
                    if m.running.is_empty() {
                        prop_assert!(!s.done(0, 0));
                    } else {
                        let c = m.running.remove(i % m.running.len());
                        prop_assert!(s.done(c.cn, c.bytes));
                    }
                }
                Op::DropCn(cn) => {
                    let mut got = Vec::new();
                    let n = s.drop_cn(cn, |c| got.push(c));
                    let mut want = Vec::new();
                    for q in m.queues.iter_mut() {
                        want.extend(q.iter().filter(|c| c.cn == cn).copied());
                        q.retain(|c| c.cn != cn);
                    }
                    for (x, q) in m.passed.iter_mut().zip(&m.queues) {
                        if q.is_empty() {
                            *x = 0;
                        }
                    }
                    prop_assert_eq!(n, got.len());
                    prop_assert_eq!(&got, &want);
                    for c in got {
                        *returned.get_mut(&c.handle).unwrap() += 1;
                    }
                }
                Op::Remove(cn, h) => {
                    let got = s.remove(cn, h);
                    let mut want = None;
                    for q in m.queues.iter_mut() {
                        if let Some(i) = q.iter().position(|c| c.cn == cn && c.handle == h) {
                            want = q.remove(i);
                            break;
                        }
                    }
                    for (x, q) in m.passed.iter_mut().zip(&m.queues) {
                        if q.is_empty() {
                            *x = 0;
                        }
                    }
                    prop_assert_eq!(got, want);
                    if let Some(c) = got {
                        *returned.get_mut(&c.handle).unwrap() += 1;
                    }
                }
                Op::SetMax(x) => {
                    s.set_max_per_cn(x);
                    m.max = x;
                }
                Op::SetMaxRunning(x) => {
                    s.set_max_running_per_cn(x);
                    m.max_running = x;
                }
                Op::SetMaxBytes(x) => {
                    s.set_max_bytes_per_cn(x);
                    m.max_bytes = x;
                }
                Op::SetAging(k) => {
                    s.set_aging(k);
                    m.aging = k;
                }
            }
            prop_assert!(s.queued() + s.running() <= CAP);
            prop_assert_eq!(s.running(), m.running.len());
            for c in Priority::ALL {
                prop_assert_eq!(s.depth(c), m.queues[c.index()].len());
            }
            for cn in 0..5 {
                prop_assert_eq!(s.outstanding(cn), m.outstanding(cn));
                prop_assert_eq!(s.bytes_held(cn), m.bytes(cn));
            }
        }
        // Drain (no running limit, so nothing waits for a done): every
        // accepted call comes back exactly once.
        s.set_max_running_per_cn(0);
        m.max_running = 0;
        while let Some(c) = s.next() {
            prop_assert_eq!(Some(c), m.next());
            *returned.get_mut(&c.handle).unwrap() += 1;
        }
        prop_assert!(returned.values().all(|&n| n == 1), "{:?}", returned);
        for c in m.running.drain(..) {
            prop_assert!(s.done(c.cn, c.bytes));
        }
        prop_assert_eq!(s.running(), 0);
        for cn in 0..5 {
            prop_assert_eq!(s.outstanding(cn), 0);
            prop_assert_eq!(s.bytes_held(cn), 0);
        }
    }
}
