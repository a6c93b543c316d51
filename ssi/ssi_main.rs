// SPDX-License-Identifier: GPL-2.0

//! ssi: Kerrighed-style single-system-image containers for zoid nodes.
//!
//! Containers are cluster-wide objects (4 KiB each unless their set says
//! otherwise, identified by set and object id) kept sequentially consistent by a write-invalidate protocol
//! over treenet (`container.rs`; the protocol itself is
//! `zoid_proto::ssi::coherence`, checked on the host).  Every object's
//! home is the pset's ION, which creates it (zero-filled) at first touch.
//!
//! `/sys/kernel/ssi/`:
//!
//! * `add`: write `SET OBJECT DELTA` to add DELTA to the 64-bit counter at
//!   the start of the object (a write access, coherent cluster-wide); read
//!   back `SET OBJECT VALUE` of this node's last add.
//! * `read`: write `SET OBJECT` to read that counter (a read access); read
//!   back `SET OBJECT VALUE`.
//! * `objects`: the objects this node knows, one per line: set, object,
//!   Kerrighed state, probable owner, version, held access.
//! * `stats`: counters.
//! * `checkpoint` (on the ION): write `SET /PATH` to dump the set to a
//!   file, consistently; read back `SET OBJECTS BYTES`.
//! * `restore`: write `/PATH` to write every object of the file back
//!   (checked whole first); read back `SETS OBJECTS`.
//! * `hooks`: the hook points of the suite (`zoid_kernel::hooks`), one per
//!   line with on/off and how often each fired; write `+NAME` / `-NAME`
//!   (or `+all`, `-all`) to turn them on or off.  All off at load.
//!
//! * `members`, `lost`, `remove_nodes`, `add_nodes`, `heartbeat_ms`,
//!   `heartbeat_timeout_ms`: membership (`membership.rs`).  Writing
//!   `SET OBJECT` to `lost` on the ION acknowledges that loss: every node
//!   forgets it, and the next access creates the object again.  Changes wake
//!   pollers of `members` and `lost`, and `/dev/ssi` sends a `change`
//!   uevent (`SSI_GENERATION=`, `SSI_EPOCH=`).
//!
//! * `process_events`: `on`, `off` or `unavailable`: probes of the
//!   scheduler's fork/exec/exit tracepoints (`zoid_kernel::procevents`),
//!   off at load; write `on`/`off`.  While on, forks, execs and exits are
//!   counted in `stats`, and a process that exits releases the accesses
//!   its page faults left lingering at once.
//! * `linger_us`: how long a `/dev/ssi` fault keeps its access (2000 us by
//!   default; 0 to 10 s).
//! * `max_objects_per_node`: how many objects this node creates for
//!   requests one neighbour sends it (65536 by default, 0 to 2^24); past
//!   it a request for a new object is refused and the requester's access
//!   fails with `EAGAIN` (`refused_budget` here, `refused_answers` there).
//!   Local accesses are not charged.  `objects_per_node`: `NODE OBJECTS`
//!   per neighbour charged (counts only grow: entries are never removed).
//! * `max_backlog_per_node`: how many bytes of messages wait at most for
//!   one node whose treenet queue is full (8 MiB by default, 64 KiB to
//!   1 GiB; `backlog.rs`); past it what waits for that node is dropped
//!   (`backlog_dropped`).  `backlog`: `NODE MESSAGES BYTES` per node
//!   messages wait for.
//!
//! * `sets` (on the ION): write `define ID NAME SIZE memory` or `define ID
//!   NAME SIZE file /PATH` to define a set before its first use: object
//!   size (a power of two, 64 bytes to a page) and I/O linker
//!   (`linker.rs`); read one line per set.  Undefined sets are 4 KiB
//!   memory sets.  `members ID NODE...` limits a defined set, before its
//!   first use, to the ION and those nodes; `members ID all` takes the
//!   limit away (`sets.rs`).
//! * `flush` (on the ION): write `SET` to write the set's objects back to
//!   its store; read back `SET OBJECTS`.
//!
//! `/dev/ssi` maps container objects into processes (`devssi.rs`).

use kernel::sync::atomic::{Atomic, Relaxed};

use kernel::miscdevice::{MiscDeviceOptions, MiscDeviceRegistration};
use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};

mod backlog;
mod container;
mod devssi;
mod linker;
mod membership;
mod sets;

#[path = "../drivers/treenet/abi.rs"]
mod treenet;
#[path = "../rust/zoid_kernel/mod.rs"]
mod zoid_kernel;
#[allow(unused_attributes, unreachable_pub, dead_code)]
#[path = "../rust/zoid_proto/src/lib.rs"]
mod zoid_proto;

use backlog::{MAX_BACKLOG_PER_NODE_LIMIT, MIN_BACKLOG_PER_NODE};
use container::{Containers, CHANNEL, MAX_OBJECTS_PER_NODE_LIMIT};
use zoid_kernel::coherence::Provision;
use zoid_kernel::hooks::{Hook, HookHandler, Hooks};
use zoid_kernel::kthread::KThread;
use zoid_kernel::procevents::{ProcessEvent, ProcessObserver, ProcessProbes};
use zoid_kernel::sysfs::{parse_u64, Attribute, SysfsDir, SysfsWriter};
use zoid_kernel::time::U64;
use zoid_proto::ssi::coherence::Access;
use zoid_proto::version::SUITE_VERSION;

module! {
    type: Ssi,
    name: "ssi",
    authors: ["zoid developers"],
    description: "ssi: cluster-wide shared-object containers over treenet",
    license: "GPL",
}

/// The result of the last `add` or `read` on this node.
struct LastResult {
    set: Atomic<u64>,
    object: Atomic<u64>,
    value: Atomic<u64>,
}

impl LastResult {
    const fn new() -> Self {
        Self {
            set: Atomic::new(0),
            object: Atomic::new(0),
            value: Atomic::new(0),
        }
    }

    fn record(&self, set: u32, object: u64, value: u64) {
        self.set.store(u64::from(set), Relaxed);
        self.object.store(object, Relaxed);
        self.value.store(value, Relaxed);
    }

    fn show(&self, w: &mut SysfsWriter<'_>) -> Result {
        writeln!(
            w,
            "{} {} {}",
            U64(self.set.load(Relaxed)),
            U64(self.object.load(Relaxed)),
            U64(self.value.load(Relaxed))
        )
    }
}

/// What ssi does at the hook points it turned on: counts each one.  (The
/// place where per-job accounting and container clean-up will go.)
struct HookCounts {
    fired: [Atomic<u64>; 6],
    on: [Atomic<u32>; 6],
}

impl HookHandler for HookCounts {
    fn event(&self, hook: Hook, _a: u64, _b: u64) {
        self.fired[hook as usize].fetch_add(1, Relaxed);
    }
}

/// What ssi does with process events (`process_events`): counts them, and
/// releases what an exited process's faults left lingering.
struct ProcessWatch {
    containers: Arc<Containers>,
}

impl ProcessObserver for ProcessWatch {
    fn event(&self, event: ProcessEvent) {
        let c = &self.containers.counters;
        match event {
            ProcessEvent::Fork { .. } => {
                c.forks.fetch_add(1, Relaxed);
            }
            ProcessEvent::Exec { .. } => {
                c.execs.fetch_add(1, Relaxed);
            }
            ProcessEvent::Exit {
                tgid, group_dead, ..
            } => {
                c.exits.fetch_add(1, Relaxed);
                if group_dead {
                    self.containers.process_exited(tgid);
                }
            }
        }
    }
}

/// The process probes, when on; `unavailable` once the kernel said it has
/// no tracepoints.
struct ProbesState {
    probes: Option<ProcessProbes<ProcessWatch>>,
    unavailable: bool,
}

/// ssi's state, shared with its sysfs files.
struct SsiState {
    containers: Arc<Containers>,
    hooks: Hooks<HookCounts>,
    probes: Pin<KBox<Mutex<ProbesState>>>,
    last_add: LastResult,
    last_read: LastResult,
    /// Set, objects and bytes of the last checkpoint.
    last_checkpoint: LastResult,
    /// Sets and objects of the last restore.
    last_restore: LastResult,
    /// Set and objects of the last flush.
    last_flush: LastResult,
}

/// Parses `N` whitespace-separated numbers.
fn parse_numbers<const N: usize>(input: &[u8]) -> Result<[u64; N]> {
    let s = core::str::from_utf8(input).map_err(|_| EINVAL)?;
    let mut out = [0u64; N];
    let mut words = s.split_ascii_whitespace();
    for slot in out.iter_mut() {
        *slot = parse_u64(words.next().ok_or(EINVAL)?.as_bytes())?;
    }
    if words.next().is_some() {
        return Err(EINVAL);
    }
    Ok(out)
}

/// The 64-bit counter at the start of an object.
fn counter(contents: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&contents[..8]);
    u64::from_le_bytes(b)
}

fn store_add(s: &SsiState, input: &[u8]) -> Result {
    let [set, object, delta] = parse_numbers::<3>(input)?;
    let set = u32::try_from(set).map_err(|_| EINVAL)?;
    let value = s.containers.access(set, object, Access::Write, |c| {
        let v = counter(c).wrapping_add(delta);
        c[..8].copy_from_slice(&v.to_le_bytes());
        v
    })?;
    s.last_add.record(set, object, value);
    Ok(())
}

fn store_read(s: &SsiState, input: &[u8]) -> Result {
    let [set, object] = parse_numbers::<2>(input)?;
    let set = u32::try_from(set).map_err(|_| EINVAL)?;
    let value = s
        .containers
        .access(set, object, Access::Read, |c| counter(c))?;
    s.last_read.record(set, object, value);
    Ok(())
}

/// A path written to a knob: absolute, without the trailing newline.
fn parse_path(input: &[u8]) -> Result<&[u8]> {
    let p = input.strip_suffix(b"\n").unwrap_or(input);
    if !p.starts_with(b"/") || p.iter().any(|c| c.is_ascii_whitespace()) {
        return Err(EINVAL);
    }
    Ok(p)
}

fn store_checkpoint(s: &SsiState, input: &[u8]) -> Result {
    let at = input.iter().position(|&c| c == b' ').ok_or(EINVAL)?;
    let [set] = parse_numbers::<1>(&input[..at])?;
    let set = u32::try_from(set).map_err(|_| EINVAL)?;
    let (objects, bytes) = s
        .containers
        .checkpoint(set, parse_path(&input[at + 1..])?)?;
    s.last_checkpoint.record(set, objects, bytes);
    Ok(())
}

fn store_restore(s: &SsiState, input: &[u8]) -> Result {
    let (sets, objects) = s.containers.restore(parse_path(input)?)?;
    s.last_restore.record(sets, objects, 0);
    Ok(())
}

fn show_restore(s: &SsiState, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(
        w,
        "{} {}",
        U64(s.last_restore.set.load(Relaxed)),
        U64(s.last_restore.object.load(Relaxed))
    )
}

/// `hooks`: one line per hook point: name, on/off, times it fired.
fn show_hooks(s: &SsiState, w: &mut SysfsWriter<'_>) -> Result {
    let h = s.hooks.handler();
    for hook in Hook::ALL {
        let i = hook as usize;
        let on = if h.on[i].load(Relaxed) != 0 {
            "on"
        } else {
            "off"
        };
        writeln!(w, "{} {on} {}", hook.name(), U64(h.fired[i].load(Relaxed)))?;
    }
    Ok(())
}

/// `hooks`: `+NAME` turns a hook point on, `-NAME` off (`all` for every one).
fn store_hooks(s: &SsiState, input: &[u8]) -> Result {
    let input = input.strip_suffix(b"\n").unwrap_or(input);
    let (on, name) = match input.split_first() {
        Some((b'+', name)) => (true, name),
        Some((b'-', name)) => (false, name),
        _ => return Err(EINVAL),
    };
    let chosen = |h: &Hook| name == b"all" || h.name().as_bytes() == name;
    if name != b"all" && Hook::from_name(name).is_none() {
        return Err(EINVAL);
    }
    for hook in Hook::ALL.iter().filter(|h| chosen(h)) {
        s.hooks.enable(*hook, on)?;
        s.hooks.handler().on[*hook as usize].store(u32::from(on), Relaxed);
    }
    Ok(())
}

/// `process_events`: whether fork/exec/exit are observed.
fn show_process_events(s: &SsiState, w: &mut SysfsWriter<'_>) -> Result {
    let p = s.probes.lock();
    let state = match (&p.probes, p.unavailable) {
        (Some(_), _) => "on",
        (None, true) => "unavailable",
        (None, false) => "off",
    };
    writeln!(w, "{state}")
}

/// `process_events`: `on` attaches the probes (`EOPNOTSUPP` on a kernel
/// without tracepoints), `off` detaches them.
fn store_process_events(s: &SsiState, input: &[u8]) -> Result {
    let on = match input.strip_suffix(b"\n").unwrap_or(input) {
        b"on" | b"1" => true,
        b"off" | b"0" => false,
        _ => return Err(EINVAL),
    };
    let mut p = s.probes.lock();
    if !on {
        // Dropping waits until no probe runs.
        p.probes = None;
        return Ok(());
    }
    if p.probes.is_some() {
        return Ok(());
    }
    let watch = Arc::new(
        ProcessWatch {
            containers: s.containers.clone(),
        },
        GFP_KERNEL,
    )?;
    match ProcessProbes::start(watch) {
        Ok(probes) => {
            p.probes = Some(probes);
            Ok(())
        }
        Err(e) => {
            if e == EOPNOTSUPP {
                p.unavailable = true;
            }
            Err(e)
        }
    }
}

/// `sets`: `define ID NAME SIZE memory`, `define ID NAME SIZE file
/// /PATH`, `members ID NODE...` or `members ID all` (on the ION).
fn store_sets(s: &SsiState, input: &[u8]) -> Result {
    let text = core::str::from_utf8(input).map_err(|_| EINVAL)?;
    let mut words = text.split_ascii_whitespace();
    match words.next() {
        Some("define") => {}
        Some("members") => {
            let set = u32::try_from(parse_u64(words.next().ok_or(EINVAL)?.as_bytes())?)
                .map_err(|_| EINVAL)?;
            return s.containers.limit_set(set, parse_members(words)?);
        }
        _ => return Err(EINVAL),
    }
    let set =
        u32::try_from(parse_u64(words.next().ok_or(EINVAL)?.as_bytes())?).map_err(|_| EINVAL)?;
    let name = words.next().ok_or(EINVAL)?.as_bytes();
    let size = parse_u64(words.next().ok_or(EINVAL)?.as_bytes())?;
    let linker = words.next().ok_or(EINVAL)?.as_bytes();
    let path = match words.next() {
        Some(p) => Some(parse_path(p.as_bytes())?),
        None => None,
    };
    if words.next().is_some() {
        return Err(EINVAL);
    }
    s.containers.define_set(set, name, size, linker, path)
}

/// The nodes of `members ID ...`: `all` (`None`), or one or more node ids.
fn parse_members<'a>(
    mut words: impl Iterator<Item = &'a str>,
) -> Result<Option<KVec<zoid_proto::ssi::coherence::NodeId>>> {
    let mut nodes = KVec::new();
    let mut all = false;
    for word in words.by_ref() {
        if word == "all" {
            all = true;
            continue;
        }
        let n = u16::try_from(parse_u64(word.as_bytes())?).map_err(|_| EINVAL)?;
        nodes.push(u32::from(n), GFP_KERNEL)?;
    }
    match (all, nodes.is_empty()) {
        (true, true) => Ok(None),
        (false, false) => Ok(Some(nodes)),
        _ => Err(EINVAL),
    }
}

/// `flush`: `SET` writes the set's objects back to its store (on the ION).
fn store_flush(s: &SsiState, input: &[u8]) -> Result {
    let [set] = parse_numbers::<1>(input)?;
    let set = u32::try_from(set).map_err(|_| EINVAL)?;
    let objects = s.containers.flush(set)?;
    s.last_flush.record(set, objects, 0);
    Ok(())
}

/// `linger_us`: how long a fault's access lingers (0 to 10 s).
fn store_linger_us(s: &SsiState, input: &[u8]) -> Result {
    let us = parse_u64(input)?;
    if us > 10_000_000 {
        return Err(EINVAL);
    }
    s.containers.linger_us.store(us as u32, Relaxed);
    Ok(())
}

/// `max_objects_per_node`: objects created per neighbour (0 to 2^24).
fn store_max_objects_per_node(s: &SsiState, input: &[u8]) -> Result {
    let v = parse_u64(input)?;
    let v = u32::try_from(v).map_err(|_| EINVAL)?;
    if v > MAX_OBJECTS_PER_NODE_LIMIT {
        return Err(EINVAL);
    }
    s.containers.max_objects_per_node.store(v, Relaxed);
    Ok(())
}

/// `max_backlog_per_node`: bytes of messages waiting for one node (64 KiB
/// to 1 GiB).
fn store_max_backlog_per_node(s: &SsiState, input: &[u8]) -> Result {
    let v = parse_u64(input)?;
    let v = u32::try_from(v).map_err(|_| EINVAL)?;
    if !(MIN_BACKLOG_PER_NODE..=MAX_BACKLOG_PER_NODE_LIMIT).contains(&v) {
        return Err(EINVAL);
    }
    s.containers.max_backlog_per_node.store(v, Relaxed);
    Ok(())
}

/// A knob of milliseconds (at least 10).
fn store_ms(knob: &Atomic<u32>, input: &[u8]) -> Result {
    let v = parse_u64(input)?;
    let v = u32::try_from(v).map_err(|_| EINVAL)?;
    if v < 10 {
        return Err(EINVAL);
    }
    knob.store(v, Relaxed);
    Ok(())
}

/// `remove_nodes` / `add_nodes`: node ids separated by spaces.
fn store_nodes(input: &[u8], each: impl Fn(u16) -> Result) -> Result {
    let s = core::str::from_utf8(input).map_err(|_| EINVAL)?;
    let mut any = false;
    for word in s.split_ascii_whitespace() {
        let n = u16::try_from(parse_u64(word.as_bytes())?).map_err(|_| EINVAL)?;
        each(n)?;
        any = true;
    }
    if any {
        Ok(())
    } else {
        Err(EINVAL)
    }
}

static ATTRS: [Attribute<SsiState>; 22] = [
    Attribute::ro(c"version", zoid_kernel::suite::show_version),
    Attribute::rw(c"add", |s, w| s.last_add.show(w), store_add),
    Attribute::rw(c"read", |s, w| s.last_read.show(w), store_read),
    Attribute::ro(c"objects", |s, w| s.containers.show_objects(w)),
    Attribute::ro(c"stats", |s, w| s.containers.show_stats(w)),
    Attribute::rw(
        c"checkpoint",
        |s, w| s.last_checkpoint.show(w),
        store_checkpoint,
    ),
    Attribute::rw(c"restore", show_restore, store_restore),
    Attribute::rw(c"hooks", show_hooks, store_hooks),
    Attribute::ro(c"members", |s, w| s.containers.show_members(w)),
    Attribute::rw(
        c"lost",
        |s, w| s.containers.show_lost(w),
        |s, i| {
            let [set, object] = parse_numbers::<2>(i)?;
            let set = u32::try_from(set).map_err(|_| EINVAL)?;
            s.containers.acknowledge_loss(set, object)
        },
    ),
    Attribute::rw(
        c"remove_nodes",
        |_, _| Ok(()),
        |s, i| store_nodes(i, |n| s.containers.remove_node(n)),
    ),
    Attribute::rw(
        c"add_nodes",
        |_, _| Ok(()),
        |s, i| store_nodes(i, |n| s.containers.add_node(n)),
    ),
    Attribute::rw(
        c"heartbeat_ms",
        |s, w| writeln!(w, "{}", s.containers.membership.heartbeat_ms.load(Relaxed)),
        |s, i| store_ms(&s.containers.membership.heartbeat_ms, i),
    ),
    Attribute::rw(
        c"heartbeat_timeout_ms",
        |s, w| {
            writeln!(
                w,
                "{}",
                s.containers.membership.heartbeat_timeout_ms.load(Relaxed)
            )
        },
        |s, i| store_ms(&s.containers.membership.heartbeat_timeout_ms, i),
    ),
    Attribute::rw(c"sets", |s, w| s.containers.show_sets(w), store_sets),
    Attribute::rw(
        c"flush",
        |s, w| {
            writeln!(
                w,
                "{} {}",
                U64(s.last_flush.set.load(Relaxed)),
                U64(s.last_flush.object.load(Relaxed))
            )
        },
        store_flush,
    ),
    Attribute::rw(c"process_events", show_process_events, store_process_events),
    Attribute::rw(
        c"linger_us",
        |s, w| writeln!(w, "{}", s.containers.linger_us.load(Relaxed)),
        store_linger_us,
    ),
    Attribute::rw(
        c"max_objects_per_node",
        |s, w| writeln!(w, "{}", s.containers.max_objects_per_node.load(Relaxed)),
        store_max_objects_per_node,
    ),
    Attribute::ro(c"objects_per_node", |s, w| {
        s.containers.show_objects_per_node(w)
    }),
    Attribute::rw(
        c"max_backlog_per_node",
        |s, w| writeln!(w, "{}", s.containers.max_backlog_per_node.load(Relaxed)),
        store_max_backlog_per_node,
    ),
    Attribute::ro(c"backlog", |s, w| s.containers.show_backlog(w)),
];

/// The nice value of ssi's threads (`ssi_rx`, which takes in every
/// message and so every heartbeat, and `ssi_member`, which sends them and
/// declares silent nodes dead): -20, as treenet's engine
/// (`drivers/treenet/engine.rs`, `ENGINE_NICE`).  At nice 0, under a flood
/// of frames whose softirq work was charged to them, they lost the CPU for
/// seconds on an x86_64 KASAN ION, which then declared live nodes dead
/// (9 times in a 10^6-frame flood) and rebuilt without them
/// (docs/reliability.md, "Long runs").
pub(crate) const THREAD_NICE: i32 = -20;

/// treenet's callbacks: everything goes to the containers' thread.
struct Net {
    containers: Arc<Containers>,
}

impl treenet::Handler for Net {
    fn receive(&self, src: u16, msg: treenet::Message) {
        self.containers.deliver(src, msg);
    }

    fn peer_event(&self, node: u16, up: bool) {
        self.containers.peer_event(node, up);
    }
}

/// The loaded module.  Fields drop in order: no coherence provider (an
/// attached zoidfs mount keeps the module), no new `/dev/ssi` file (an
/// open one, or a mapping, keeps the module), no sysfs access, then no
/// treenet callback, then no receive thread.
struct Ssi {
    _coherence: Provision<Containers>,
    _misc: Pin<KBox<MiscDeviceRegistration<devssi::SsiFile>>>,
    _sysfs: SysfsDir<SsiState>,
    _member: KThread<membership::Membership>,
    _channel: treenet::Channel<Net>,
    _rx: KThread<Containers>,
}

impl kernel::Module for Ssi {
    fn init(module: &'static ThisModule) -> Result<Self> {
        devssi::init_slot();
        let treenet = treenet::attach()?;
        let containers = Arc::pin_init(Containers::new()?, GFP_KERNEL)?;
        let rx = KThread::spawn(c"ssi_rx", containers.clone())?;
        containers.rx_kicker.set_nice(THREAD_NICE)?;
        let channel = treenet::Channel::register(
            CHANNEL,
            Arc::new(
                Net {
                    containers: containers.clone(),
                },
                GFP_KERNEL,
            )?,
        )?;
        let hooks = Hooks::register(Arc::new(
            HookCounts {
                fired: [const { Atomic::new(0) }; 6],
                on: [const { Atomic::new(0) }; 6],
            },
            GFP_KERNEL,
        )?)?;
        let member = KThread::spawn(
            c"ssi_member",
            Arc::new(
                membership::Membership {
                    containers: containers.clone(),
                },
                GFP_KERNEL,
            )?,
        )?;
        containers.membership.set_thread_nice(THREAD_NICE)?;
        let published = containers.clone();
        let probes = KBox::pin_init(
            new_mutex!(
                ProbesState {
                    probes: None,
                    unavailable: false,
                },
                "ssi::probes"
            ),
            GFP_KERNEL,
        )?;
        let state = Arc::new(
            SsiState {
                containers,
                hooks,
                probes,
                last_add: LastResult::new(),
                last_read: LastResult::new(),
                last_checkpoint: LastResult::new(),
                last_restore: LastResult::new(),
                last_flush: LastResult::new(),
            },
            GFP_KERNEL,
        )?;
        let sysfs = SysfsDir::new(c"ssi", state, &ATTRS)?;
        devssi::publish(Some(published));
        let misc = KBox::pin_init(
            MiscDeviceRegistration::register(MiscDeviceOptions { name: c"ssi" }),
            GFP_KERNEL,
        )
        .inspect_err(|_| devssi::publish(None))?;
        sysfs.context().containers.set_change_notifier(Some(
            zoid_kernel::sysfs::ChangeNotifier::new(&sysfs, Some(&*misc)),
        ));
        let coherence = Provision::provide(module, sysfs.context().containers.clone())?;
        pr_info!("ssi {SUITE_VERSION} loaded (treenet {treenet})\n");
        Ok(Self {
            _coherence: coherence,
            _misc: misc,
            _sysfs: sysfs,
            _member: member,
            _channel: channel,
            _rx: rx,
        })
    }
}

impl Drop for Ssi {
    fn drop(&mut self) {
        // Before the device and the directory go.
        self._sysfs.context().containers.set_change_notifier(None);
        devssi::publish(None);
        pr_info!("ssi unloaded\n");
    }
}

#[kunit_tests(ssi_foundation)]
mod tests {
    use super::*;

    use super::zoid_proto::version::Version;

    /// ssi refuses a treenet it cannot talk to, instead of misbehaving later.
    #[test]
    fn incompatible_or_malformed_treenet_is_refused() {
        let next_major = Version::new(SUITE_VERSION.major + 1, 0, 0);
        assert_eq!(treenet::check_compatible(next_major.to_wire()), Err(EPROTO));
        assert_eq!(treenet::check_compatible(u64::MAX), Err(EPROTO));
        assert_eq!(
            treenet::check_compatible(SUITE_VERSION.to_wire()),
            Ok(SUITE_VERSION)
        );
    }

    /// What users write to `add` and `read` parses, and nothing else does.
    #[test]
    fn commands_parse_like_users_write_them() {
        assert_eq!(parse_numbers::<3>(b"1 7 5\n"), Ok([1, 7, 5]));
        assert_eq!(parse_numbers::<2>(b"  0x10   3 "), Ok([16, 3]));
        assert_eq!(parse_numbers::<3>(b"1 7"), Err(EINVAL));
        assert_eq!(parse_numbers::<2>(b"1 7 5"), Err(EINVAL));
        assert_eq!(parse_numbers::<2>(b"1 -7"), Err(EINVAL));
        assert_eq!(parse_numbers::<2>(b"\xff 1"), Err(EINVAL));
    }

    /// Checkpoint paths are absolute, one word, newline optional.
    #[test]
    fn paths_parse_like_users_write_them() {
        assert_eq!(parse_path(b"/tmp/a.ckpt\n"), Ok(&b"/tmp/a.ckpt"[..]));
        assert_eq!(parse_path(b"/x"), Ok(&b"/x"[..]));
        assert_eq!(parse_path(b"tmp/a"), Err(EINVAL));
        assert_eq!(parse_path(b"/a b"), Err(EINVAL));
        assert_eq!(parse_path(b""), Err(EINVAL));
    }

    /// The counter is the object's first 8 bytes, little-endian.
    #[test]
    fn counter_reads_the_first_eight_bytes() {
        let mut c = [0u8; 16];
        c[0] = 2;
        c[1] = 1;
        c[8] = 0xff;
        assert_eq!(counter(&c), 0x0102);
    }
}
