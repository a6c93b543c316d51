// SPDX-License-Identifier: GPL-2.0

//! zoid's traffic by category (ZOID's statquery; `/sys/kernel/zoid/traffic`):
//! messages and bytes sent and received, per kind of message and per
//! plug-in, counted where zoid hands a message to treenet ([`send`],
//! [`send_message`]) and where treenet hands one to zoid.

use crate::stats::{PluginSlots, PLUGIN_SLOTS};
use crate::treenet;
use crate::zoid_kernel::sysfs::SysfsWriter;
use crate::zoid_kernel::time::U64;
use crate::zoid_proto::zoid::wire::{CallHeader, MsgKind, HEADER_LEN as CALL_HEADER_LEN};
use crate::CHANNEL;
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};

/// What a zoid message is, by its header's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Category {
    /// zoid's own: attach handshakes, process-exit, detach and cancel
    /// notices.
    Internal,
    /// Forwarded calls and their replies (also counted per plug-in).
    Call,
    /// Plug-ins' messages from the ION to their CN side (zoidfs's
    /// recalls; also counted per plug-in).
    Upcall,
    /// f2cn's file broadcast: its begin, data, commit and abort messages,
    /// and the CNs' acks.
    Broadcast,
    /// Launched jobs: launches, signals and ends of ranks.
    Job,
    /// Launched jobs' standard streams: output, input and their credits
    /// (statquery's "stream").
    Stream,
    /// Received messages whose header did not decode.
    Malformed,
}

/// Every category, in the order `traffic` lists them, with its name.
const CATEGORIES: [(Category, &str); 7] = [
    (Category::Internal, "internal"),
    (Category::Call, "call"),
    (Category::Upcall, "upcall"),
    (Category::Broadcast, "broadcast"),
    (Category::Job, "job"),
    (Category::Stream, "stream"),
    (Category::Malformed, "malformed"),
];

impl Category {
    /// The category of a message with header `hdr` (`None`: it did not
    /// decode), and the plug-in it is counted for, if any.
    pub(crate) fn of(hdr: Option<&CallHeader>) -> (Self, Option<u16>) {
        let Some(h) = hdr else {
            return (Self::Malformed, None);
        };
        match h.kind {
            MsgKind::Attach
            | MsgKind::AttachReply
            | MsgKind::ProcessExit
            | MsgKind::Detach
            | MsgKind::Cancel => (Self::Internal, None),
            MsgKind::Call | MsgKind::Reply => (Self::Call, Some(h.plugin)),
            MsgKind::Upcall => (Self::Upcall, Some(h.plugin)),
            MsgKind::FileBegin
            | MsgKind::FileData
            | MsgKind::FileCommit
            | MsgKind::FileAbort
            | MsgKind::FileAck => (Self::Broadcast, None),
            MsgKind::JobLaunch | MsgKind::JobSignal | MsgKind::JobExit => (Self::Job, None),
            MsgKind::JobOutput | MsgKind::JobInput | MsgKind::JobInputEnd | MsgKind::JobCredit => {
                (Self::Stream, None)
            }
        }
    }

    /// Index into [`CATEGORIES`] and [`Traffic`]'s flows.
    const fn index(self) -> usize {
        match self {
            Self::Internal => 0,
            Self::Call => 1,
            Self::Upcall => 2,
            Self::Broadcast => 3,
            Self::Job => 4,
            Self::Stream => 5,
            Self::Malformed => 6,
        }
    }
}

/// Which way a message went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    /// Handed to treenet here.
    Sent,
    /// Handed to zoid by treenet.
    Received,
}

/// Messages and bytes, both ways.
pub(crate) struct Flow {
    msgs_sent: Atomic<u64>,
    msgs_received: Atomic<u64>,
    bytes_sent: Atomic<u64>,
    bytes_received: Atomic<u64>,
}

impl Flow {
    const fn new() -> Self {
        Self {
            msgs_sent: Atomic::new(0),
            msgs_received: Atomic::new(0),
            bytes_sent: Atomic::new(0),
            bytes_received: Atomic::new(0),
        }
    }

    fn add(&self, dir: Direction, bytes: usize) {
        let (msgs, total) = match dir {
            Direction::Sent => (&self.msgs_sent, &self.bytes_sent),
            Direction::Received => (&self.msgs_received, &self.bytes_received),
        };
        msgs.fetch_add(1, Relaxed);
        total.fetch_add(bytes as u64, Relaxed);
    }

    /// `[msgs_sent, msgs_received, bytes_sent, bytes_received]`.
    pub(crate) fn get(&self) -> [u64; 4] {
        [
            self.msgs_sent.load(Relaxed),
            self.msgs_received.load(Relaxed),
            self.bytes_sent.load(Relaxed),
            self.bytes_received.load(Relaxed),
        ]
    }

    fn show(&self, w: &mut SysfsWriter<'_>, name: &dyn core::fmt::Display) -> Result {
        let [ms, mr, bs, br] = self.get();
        writeln!(w, "{name} {} {} {} {}", U64(ms), U64(mr), U64(bs), U64(br))
    }
}

/// zoid's messages by category and by plug-in.
pub(crate) struct Traffic {
    categories: [Flow; CATEGORIES.len()],
    slots: PluginSlots,
    plugins: [Flow; PLUGIN_SLOTS],
    /// Plug-ins beyond the slots, together.
    other_plugins: Flow,
}

impl Traffic {
    /// All zero.
    pub(crate) const fn new() -> Self {
        Self {
            categories: [const { Flow::new() }; CATEGORIES.len()],
            slots: PluginSlots::new(),
            plugins: [const { Flow::new() }; PLUGIN_SLOTS],
            other_plugins: Flow::new(),
        }
    }

    /// Counts a message of `len` bytes whose header is `hdr` (`None`: it
    /// did not decode).
    pub(crate) fn count(&self, dir: Direction, hdr: Option<&CallHeader>, len: usize) {
        let (category, plugin) = Category::of(hdr);
        self.categories[category.index()].add(dir, len);
        if let Some(id) = plugin {
            match self.slots.slot(id, true) {
                Some(i) => self.plugins[i].add(dir, len),
                None => self.other_plugins.add(dir, len),
            }
        }
    }

    /// Counts a message whose first bytes are `head`.
    pub(crate) fn count_bytes(&self, dir: Direction, head: &[u8], len: usize) {
        self.count(dir, CallHeader::decode(head).ok().as_ref(), len);
    }

    /// The counts of `category`.
    pub(crate) fn of(&self, category: Category) -> [u64; 4] {
        self.categories[category.index()].get()
    }

    /// The counts of plug-in `id`, if it has a slot.
    pub(crate) fn of_plugin(&self, id: u16) -> Option<[u64; 4]> {
        Some(self.plugins[self.slots.slot(id, false)?].get())
    }

    /// The `traffic` file: a title line, one line per category, then
    /// `plugin.<name>` per plug-in counted (`name_of` names them; a
    /// plug-in no longer registered shows as its id).
    pub(crate) fn show(
        &self,
        w: &mut SysfsWriter<'_>,
        name_of: impl Fn(u16, &mut dyn FnMut(&str) -> Result) -> Result,
    ) -> Result {
        writeln!(
            w,
            "# what msgs_sent msgs_received bytes_sent bytes_received"
        )?;
        for (c, name) in CATEGORIES {
            self.categories[c.index()].show(w, &name)?;
        }
        for (i, flow) in self.plugins.iter().enumerate() {
            let Some(id) = self.slots.owner(i) else {
                break;
            };
            let mut shown = false;
            name_of(id, &mut |name| {
                shown = true;
                flow.show(w, &format_args!("plugin.{name}"))
            })?;
            if !shown {
                flow.show(w, &format_args!("plugin.{id}"))?;
            }
        }
        if self.other_plugins.get() != [0; 4] {
            self.other_plugins.show(w, &"plugin.other")?;
        }
        Ok(())
    }
}

/// This node's zoid traffic.
pub(crate) static TRAFFIC: Traffic = Traffic::new();

/// Sends `data` on zoid's channel as [`treenet::send`] does, and counts it.
pub(crate) fn send(dst: u16, data: &[u8], block: bool) -> Result {
    treenet::send(CHANNEL, dst, data, block)?;
    TRAFFIC.count_bytes(Direction::Sent, data, data.len());
    Ok(())
}

/// Sends `msg` on zoid's channel as [`treenet::send_message`] does, and
/// counts it.
pub(crate) fn send_message(dst: u16, msg: &treenet::Message, block: bool) -> Result {
    treenet::send_message(CHANNEL, dst, msg, block)?;
    TRAFFIC.count(Direction::Sent, header_of(msg).as_ref(), msg.len());
    Ok(())
}

/// The header of `msg`, if it has one that decodes.
pub(crate) fn header_of(msg: &treenet::Message) -> Option<CallHeader> {
    let mut head = [0u8; CALL_HEADER_LEN];
    if msg.len() < CALL_HEADER_LEN || msg.read_at(0, &mut head).is_err() {
        return None;
    }
    CallHeader::decode(&head).ok()
}
