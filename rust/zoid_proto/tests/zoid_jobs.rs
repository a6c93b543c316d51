// SPDX-License-Identifier: GPL-2.0

//! Property tests of launched jobs' streams (`zoid_proto::zoid::jobs`): a
//! writer and a reader with windows, over a link that delivers messages in
//! any order (treenet's control lane overtakes its bulk lane), must move
//! every byte, never let the reader hold more than the window, never
//! deadlock, and report the end only after every message.

use proptest::prelude::*;
use zoid_proto::zoid::jobs::{
    ExitReport, RankEnd, RecvWindow, SendWindow, CHUNK, MESSAGE_COST, MIN_WINDOW,
};

/// What travels.
#[derive(Clone, Debug)]
enum Msg {
    /// Output: its sequence number and length.
    Data(u64, u32),
    /// A credit back to the writer.
    Credit(u32),
    /// The writer's end, with how many data messages came before.
    Exit(ExitReport),
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn streams_deliver_everything_within_the_window(
        window_chunks in 1u32..8,
        writes in proptest::collection::vec(1usize..(3 * CHUNK as usize), 1..40),
        reads in proptest::collection::vec(1u32..(2 * CHUNK), 1..64),
        picks in proptest::collection::vec(any::<u16>(), 1..256),
    ) {
        let window = MIN_WINDOW * window_chunks;
        let mut tx = SendWindow::new(window);
        let mut rx = RecvWindow::new(window);
        let total: u64 = writes.iter().map(|&w| w as u64).sum();
        let mut to_write = writes.clone();
        to_write.reverse();
        let mut sent_msgs = 0u32;
        let mut exit_sent = false;
        let mut seq = 0u64;
        // In flight, delivered in the order `picks` chooses.
        let mut wire: Vec<Msg> = Vec::new();
        let mut back: Vec<Msg> = Vec::new();
        // The reader's queue: (sequence, bytes left, whole message length).
        let mut held: Vec<(u64, u32)> = Vec::new();
        let mut received = 0u32;
        let mut got = 0u64;
        let mut exit: Option<ExitReport> = None;
        let mut ended_at: Option<u64> = None;
        let mut step = 0usize;
        let mut idle = 0;
        while ended_at.is_none() {
            step += 1;
            prop_assert!(step < 1_000_000, "no progress");
            let pick = picks[step % picks.len()] as usize;
            let mut moved = false;
            // The writer sends what its window allows.
            if let Some(w) = to_write.last_mut() {
                let n = tx.take(*w);
                if n > 0 {
                    wire.push(Msg::Data(seq, n));
                    seq += 1;
                    sent_msgs += 1;
                    *w -= n as usize;
                    if *w == 0 {
                        to_write.pop();
                    }
                    moved = true;
                }
            } else if !exit_sent {
                wire.push(Msg::Exit(ExitReport { end: RankEnd::Status(0), sent: [sent_msgs, 0] }));
                exit_sent = true;
                moved = true;
            }
            // The link delivers one message each way, any of them.
            if !wire.is_empty() {
                let m = wire.remove(pick % wire.len());
                match m {
                    Msg::Data(s, n) => {
                        prop_assert!(rx.accept(n).is_ok(), "a writer inside its window overran");
                        prop_assert!(rx.held() <= window);
                        held.push((s, n));
                        received += 1;
                    }
                    Msg::Exit(r) => exit = Some(r),
                    Msg::Credit(_) => unreachable!(),
                }
                moved = true;
            }
            if !back.is_empty() {
                if let Msg::Credit(c) = back.remove(pick % back.len()) {
                    prop_assert!(tx.credit(c).is_ok());
                }
                moved = true;
            }
            // The reader consumes some of what it holds.
            if !held.is_empty() {
                let want = reads[step % reads.len()];
                let (s, left) = held[0];
                let n = want.min(left);
                let whole = n == left;
                if whole {
                    held.remove(0);
                } else {
                    held[0] = (s, left - n);
                }
                got += u64::from(n);
                if let Some(c) = rx.consume(n, whole) {
                    back.push(Msg::Credit(c));
                }
                moved = true;
            }
            // The end counts only once every message it counts arrived.
            if let Some(r) = exit {
                if received >= r.sent[0] && held.is_empty() {
                    ended_at = Some(got);
                }
            }
            if moved {
                idle = 0;
            } else {
                idle += 1;
                prop_assert!(idle < 2, "deadlock: writer waits, reader has nothing");
            }
        }
        prop_assert_eq!(ended_at, Some(total));
        prop_assert_eq!(got, total);
    }

    /// Tiny messages are paid for: however a writer splits its bytes, the
    /// reader holds at most a window's worth of messages and bytes.
    #[test]
    fn tiny_messages_are_bounded(sizes in proptest::collection::vec(1u32..64, 1..200)) {
        let mut tx = SendWindow::new(MIN_WINDOW);
        let mut rx = RecvWindow::new(MIN_WINDOW);
        let mut msgs = 0u32;
        for s in sizes {
            let n = tx.take(s as usize);
            if n == 0 {
                break;
            }
            prop_assert!(rx.accept(n).is_ok());
            msgs += 1;
        }
        prop_assert!(msgs <= rx.max_messages());
        prop_assert!(u64::from(msgs) * u64::from(MESSAGE_COST) <= u64::from(MIN_WINDOW));
    }
}
