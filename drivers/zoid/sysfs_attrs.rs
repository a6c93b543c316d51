// SPDX-License-Identifier: GPL-2.0

//! `/sys/kernel/zoid/`: zoid's knobs, plug-ins and statistics.
//! The table is in `docs/zoid.md`.

use crate::plugin::parse_modules_command;
use crate::server::MAX_WORKERS;
use crate::zoid_kernel::sysfs::{self, Attribute, SysfsWriter};
use crate::zoid_kernel::time::U64;
use crate::zoid_proto::zoid::idmap::IdKind;
use crate::ZoidState as Ctx;
use kernel::prelude::*;
use kernel::sync::atomic::Relaxed;

fn show_treenet_version(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(w, "{}", c.treenet)
}

/// `modules`: one line per plug-in, `<name> <id> on|off`; write `name` or
/// `+name` to enable, `-name` to disable (ZOID's `ZOID_MODULES`).
fn show_modules(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    c.plugins.for_each(|p, on| {
        writeln!(
            w,
            "{} {} {}",
            p.name(),
            p.id(),
            if on { "on" } else { "off" }
        )
    })
}

fn store_modules(c: &Ctx, input: &[u8]) -> Result {
    let (name, enable) = parse_modules_command(input)?;
    c.plugins.set_enabled(name, enable)
}

fn show_workers(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(w, "{}", c.server.core().knobs.workers.load(Relaxed))
}

fn store_workers(c: &Ctx, input: &[u8]) -> Result {
    let n = u32::try_from(sysfs::parse_u64(input)?).map_err(|_| EINVAL)?;
    if n == 0 || n > MAX_WORKERS {
        return Err(EINVAL);
    }
    c.server.set_workers(n)
}

/// A numeric knob `$obj.knobs.$field` within `$lo..=$hi`.
macro_rules! knob {
    ($show:ident, $store:ident, |$c:ident| $knobs:expr, $field:ident, $lo:expr, $hi:expr) => {
        fn $show($c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
            writeln!(w, "{}", $knobs.$field.load(Relaxed))
        }
        fn $store($c: &Ctx, input: &[u8]) -> Result {
            let v = sysfs::parse_u64(input)?;
            if !($lo..=$hi).contains(&v) {
                return Err(EINVAL);
            }
            $knobs.$field.store(v as u32, Relaxed);
            Ok(())
        }
    };
}

const MSG_LIMIT: u64 = (64 << 20) + 1024;
knob!(
    show_max_request,
    store_max_request,
    |c| c.server.core().knobs,
    max_request,
    64,
    MSG_LIMIT
);
knob!(
    show_max_reply,
    store_max_reply,
    |c| c.server.core().knobs,
    max_reply,
    64,
    MSG_LIMIT
);
knob!(
    show_max_per_cn,
    store_max_per_cn,
    |c| c.server.core().knobs,
    max_per_cn,
    1,
    1024
);
knob!(
    show_max_bytes_per_cn,
    store_max_bytes_per_cn,
    |c| c.server.core().knobs,
    max_bytes_per_cn,
    1 << 16,
    1 << 30
);
knob!(
    show_max_inbox_per_cn,
    store_max_inbox_per_cn,
    |c| c.server.core().knobs,
    max_inbox_per_cn,
    1 << 16,
    1 << 30
);
// 0: one fewer than the workers (at least 1).
knob!(
    show_max_running_per_cn,
    store_max_running_per_cn,
    |c| c.server.core().knobs,
    max_running_per_cn,
    0,
    u64::from(MAX_WORKERS)
);
knob!(
    show_inline_bytes,
    store_inline_bytes,
    |c| c.server.core().knobs,
    inline_bytes,
    0,
    4096
);
knob!(
    show_softirq_calls,
    store_softirq_calls,
    |c| c.server.core().knobs,
    softirq_calls,
    0,
    1
);
knob!(
    show_idle_drive,
    store_idle_drive,
    |c| c.server.core().knobs,
    idle_drive,
    0,
    1
);
knob!(
    show_small_bytes,
    store_small_bytes,
    |c| c.server.core().knobs,
    small_bytes,
    0,
    MSG_LIMIT
);
knob!(
    show_timeout_ms,
    store_timeout_ms,
    |c| c.client.knobs,
    timeout_ms,
    10,
    3_600_000
);
knob!(show_hard, store_hard, |c| c.client.knobs, hard, 0, 1);
knob!(
    show_zoidfs_commit_delay_ms,
    store_zoidfs_commit_delay_ms,
    |c| c.zoidfs,
    commit_delay_ms,
    0,
    60_000
);

/// `stats`: every counter, `name value`, plus queue depths and workers.
fn show_stats(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    let mut r = Ok(());
    c.stats.c.each(|name, v| {
        if r.is_ok() {
            r = writeln!(w, "{name} {}", U64(v));
        }
    });
    r?;
    let [urgent, small, bulk] = c.server.queue_depths();
    writeln!(w, "queue_urgent {urgent}")?;
    writeln!(w, "queue_small {small}")?;
    writeln!(w, "queue_bulk {bulk}")?;
    let (busy, pool) = c.server.utilisation();
    writeln!(w, "workers_busy {busy}")?;
    writeln!(w, "workers {pool}")
}

/// `calls`: calls executed here per plug-in function, `plugin.function n`.
fn show_calls(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    c.plugins.for_each(|p, _| {
        p.for_each_function(&mut |f, name| {
            let n = c.stats.calls.get(p.id(), f);
            if n != 0 {
                writeln!(w, "{}.{} {}", p.name(), name, U64(n))?;
            }
            Ok(())
        })
    })?;
    let other = c.stats.calls.other();
    if other != 0 {
        writeln!(w, "other {}", U64(other))?;
    }
    Ok(())
}

/// `traffic`: messages and bytes sent and received by category and per
/// plug-in (docs/zoid.md, "Statistics").
fn show_traffic(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    crate::traffic::TRAFFIC.show(w, |id, f| match c.plugins.get(id) {
        Some(p) => f(p.name()),
        None => Ok(()),
    })
}

/// `latency`: log2 histograms (µs) of ION execution, ION queue wait and
/// CN round trip.
fn show_latency(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(w, "# execute")?;
    c.stats.call_latency.show(w)?;
    writeln!(w, "# queue_wait")?;
    c.server.core().queue_wait.show(w)?;
    writeln!(w, "# round_trip")?;
    c.stats.round_trip.show(w)
}

/// `attached`: the ION this CN is attached to and its limits, or `none`.
fn show_attached(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    match c.client.limits() {
        None => writeln!(w, "none"),
        Some((ion, l)) => writeln!(
            w,
            "ion {ion} max_request {} max_reply {} workers {} max_outstanding {}",
            l.max_request, l.max_reply, l.workers, l.max_outstanding
        ),
    }
}

/// `attach` (write anything): attach to the ION now.
fn store_attach(c: &Ctx, _input: &[u8]) -> Result {
    c.client.attach_now()
}

/// `idmap`: uid/gid ranges, CN to ION, then the policy for unmapped ids
/// (`zoid_proto::zoid::idmap` documents the commands).
fn show_idmap(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    c.unix.with_idmap(|m| {
        for (kind, name) in [(IdKind::Uid, "uid"), (IdKind::Gid, "gid")] {
            for r in m.ranges(kind) {
                writeln!(w, "{} {} {} {}", name, r.cn, r.ion, r.count)?;
            }
        }
        let policy = if m.squash_unmapped() {
            "squash"
        } else {
            "pass"
        };
        writeln!(w, "unmapped {}", policy)
    })
}

fn store_idmap(c: &Ctx, input: &[u8]) -> Result {
    c.unix.update_idmap(input)
}

/// `zoidfs_exports`: the zoidfs plug-in's named exports, `NAME PATH ID`
/// (hex id, the first four bytes of their handles); write `NAME /path` to
/// add one, `-NAME` to remove it.
fn show_zoidfs_exports(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    c.zoidfs.for_each_export(|name, path, id| {
        let name = core::str::from_utf8(name).unwrap_or("?");
        let path = core::str::from_utf8(path).unwrap_or("?");
        writeln!(w, "{} {} {:08x}", name, path, id)
    })
}

fn store_zoidfs_exports(c: &Ctx, input: &[u8]) -> Result {
    c.zoidfs.command(input)
}

/// `export`: the directory the `unix` plug-in serves (write a path; an
/// empty line withdraws it and closes every descriptor).
fn show_export(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    c.unix.export_path(|p| {
        w.write_bytes(p)?;
        writeln!(w)
    })
}

fn store_export(c: &Ctx, input: &[u8]) -> Result {
    let dir = input.trim_ascii();
    if !dir.is_empty() && !dir.starts_with(b"/") {
        return Err(EINVAL);
    }
    c.unix.set_export(dir)
}

knob!(
    show_root_squash,
    store_root_squash,
    |c| c.unix,
    root_squash,
    0,
    1
);

knob!(
    show_max_fds_per_cn,
    store_max_fds_per_cn,
    |c| c.unix,
    max_fds_per_cn,
    0,
    1_000_000
);
knob!(
    show_max_relaxed_per_cn,
    store_max_relaxed_per_cn,
    |c| c.zoidfs.relaxed,
    max_per_cn,
    0,
    1_000_000
);

/// `zoidfs_verifier`: the write verifier zoidfs writes and commits answer
/// with (changes only when this kernel boots again).
fn show_zoidfs_verifier(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    let v = c.zoidfs.verifier();
    writeln!(w, "{:08x}{:08x}", (v >> 32) as u32, v as u32)
}

fn show_open_files(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(w, "{}", c.unix.open_files())
}

/// `open_files_refused`: opens of the `unix` plug-in refused by
/// `max_fds_per_cn`.
fn show_open_files_refused(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(w, "{}", U64(c.unix.fds_refused.load(Relaxed)))
}

/// `job_script`: the program the ION runs at job start (`1`) and end
/// (`0`); empty: none.
fn show_job_script(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    c.job.with_script(|p| {
        w.write_bytes(p)?;
        writeln!(w)
    })
}

fn store_job_script(c: &Ctx, input: &[u8]) -> Result {
    c.job.set_script(input.trim_ascii())
}

/// `job_runner`: the program that runs a job script as the job's owner
/// when that is not root (absolute path; empty: such scripts do not run).
fn show_job_runner(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    c.job.with_runner(|p| {
        w.write_bytes(p)?;
        writeln!(w)
    })
}

fn store_job_runner(c: &Ctx, input: &[u8]) -> Result {
    c.job.set_runner(input.trim_ascii())
}

/// `jobs`: jobs running, job script runs and failures.
fn show_jobs(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(w, "running {}", c.job.running())?;
    writeln!(w, "script_runs {}", U64(c.job.script_runs.load(Relaxed)))?;
    writeln!(
        w,
        "script_failures {}",
        U64(c.job.script_failures.load(Relaxed))
    )
}

/// `f2cn`: file broadcast counters, then `down` and the CNs this ION saw
/// go down (a transfer to every CN refuses to start while one is listed).
/// Write `forget <node>` or `forget all` for CNs taken out of service.
fn show_f2cn(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    let mut r = Ok(());
    c.f2cn.stats.each(|name, v| {
        if r.is_ok() {
            r = writeln!(w, "{name} {}", U64(v));
        }
    });
    r?;
    write!(w, "down")?;
    c.f2cn.for_each_down(|n| write!(w, " {n}"))?;
    writeln!(w)
}

fn store_f2cn(c: &Ctx, input: &[u8]) -> Result {
    let arg = input
        .trim_ascii()
        .strip_prefix(b"forget ")
        .ok_or(EINVAL)?
        .trim_ascii();
    if arg == b"all" {
        c.f2cn.forget(None);
    } else {
        let node = u16::try_from(sysfs::parse_u64(arg)?).map_err(|_| EINVAL)?;
        c.f2cn.forget(Some(node));
    }
    Ok(())
}

/// `zoidfs_relaxed`: relaxed consistency's counters, then `files_open`
/// (files some CN has open on a `consistency=relaxed` mount).
fn show_zoidfs_relaxed(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    let t = &c.zoidfs.relaxed;
    let mut r = Ok(());
    t.stats.each(|name, v| {
        if r.is_ok() {
            r = writeln!(w, "{name} {}", U64(v));
        }
    });
    r?;
    writeln!(w, "files_open {}", t.files_open())
}

/// `launched`: jobs launched from this ION, one per line: `<id> uid <uid>
/// ranks <n> running <n> <program>`.
fn show_launched(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    c.launcher.show(w)
}

/// `launch_stats`: launched jobs' counters (both sides), then
/// `ranks_running` (ranks running on this CN now).
fn show_launch_stats(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    crate::job_launch::show_stats(&c.launcher, w)?;
    writeln!(w, "ranks_running {}", c.ranks.running())
}

/// `job_stream_window`: each stream's window for jobs launched from now
/// on (bytes).
fn show_job_stream_window(c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(w, "{}", c.launcher.window.load(Relaxed))
}

fn store_job_stream_window(c: &Ctx, input: &[u8]) -> Result {
    use crate::zoid_proto::zoid::jobs::{MAX_WINDOW, MIN_WINDOW};
    let v = u32::try_from(sysfs::parse_u64(input)?).map_err(|_| EINVAL)?;
    if !(MIN_WINDOW..=MAX_WINDOW).contains(&v) {
        return Err(EINVAL);
    }
    c.launcher.window.store(v, Relaxed);
    Ok(())
}

pub(crate) static ATTRS: [Attribute<Ctx>; 41] = [
    Attribute::ro(c"version", crate::zoid_kernel::suite::show_version),
    Attribute::ro(c"treenet_version", show_treenet_version),
    Attribute::rw(c"modules", show_modules, store_modules),
    Attribute::rw(c"workers", show_workers, store_workers),
    Attribute::rw(c"max_request", show_max_request, store_max_request),
    Attribute::rw(c"max_reply", show_max_reply, store_max_reply),
    Attribute::rw(c"max_per_cn", show_max_per_cn, store_max_per_cn),
    Attribute::rw(
        c"max_running_per_cn",
        show_max_running_per_cn,
        store_max_running_per_cn,
    ),
    Attribute::rw(
        c"max_bytes_per_cn",
        show_max_bytes_per_cn,
        store_max_bytes_per_cn,
    ),
    Attribute::rw(
        c"max_inbox_per_cn",
        show_max_inbox_per_cn,
        store_max_inbox_per_cn,
    ),
    Attribute::rw(c"inline_bytes", show_inline_bytes, store_inline_bytes),
    Attribute::rw(c"small_bytes", show_small_bytes, store_small_bytes),
    Attribute::rw(c"idle_drive", show_idle_drive, store_idle_drive),
    Attribute::rw(c"softirq_calls", show_softirq_calls, store_softirq_calls),
    Attribute::rw(c"timeout_ms", show_timeout_ms, store_timeout_ms),
    Attribute::rw(c"hard", show_hard, store_hard),
    Attribute::ro(c"stats", show_stats),
    Attribute::ro(c"calls", show_calls),
    Attribute::ro(c"traffic", show_traffic),
    Attribute::ro(c"latency", show_latency),
    Attribute::ro(c"attached", show_attached),
    Attribute::rw(c"attach", show_attached, store_attach),
    Attribute::ro(c"queue_cap", show_queue_cap),
    Attribute::rw(c"export", show_export, store_export),
    Attribute::rw(c"root_squash", show_root_squash, store_root_squash),
    Attribute::rw(c"max_fds_per_cn", show_max_fds_per_cn, store_max_fds_per_cn),
    Attribute::rw(
        c"max_relaxed_per_cn",
        show_max_relaxed_per_cn,
        store_max_relaxed_per_cn,
    ),
    Attribute::ro(c"open_files_refused", show_open_files_refused),
    Attribute::rw(c"idmap", show_idmap, store_idmap),
    Attribute::rw(c"zoidfs_exports", show_zoidfs_exports, store_zoidfs_exports),
    Attribute::rw(
        c"zoidfs_commit_delay_ms",
        show_zoidfs_commit_delay_ms,
        store_zoidfs_commit_delay_ms,
    ),
    Attribute::ro(c"zoidfs_verifier", show_zoidfs_verifier),
    Attribute::ro(c"open_files", show_open_files),
    Attribute::ro(c"zoidfs_relaxed", show_zoidfs_relaxed),
    Attribute::rw(c"job_script", show_job_script, store_job_script),
    Attribute::rw(c"job_runner", show_job_runner, store_job_runner),
    Attribute::ro(c"jobs", show_jobs),
    Attribute::rw(c"f2cn", show_f2cn, store_f2cn),
    Attribute::ro(c"launched", show_launched),
    Attribute::ro(c"launch_stats", show_launch_stats),
    Attribute::rw(
        c"job_stream_window",
        show_job_stream_window,
        store_job_stream_window,
    ),
];

fn show_queue_cap(_c: &Ctx, w: &mut SysfsWriter<'_>) -> Result {
    writeln!(w, "{}", crate::server::QUEUE_CAP)
}
