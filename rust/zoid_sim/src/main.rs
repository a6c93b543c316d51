// SPDX-License-Identifier: GPL-2.0

//! `make sim`: treenet's, zoid's and ssi's standard scenarios as Markdown
//! tables on standard output.  With a directory as argument, also the
//! plots' data there (`*.dat`, gnuplot's format; `scripts/sim-plots.sh`
//! renders them).

use std::cell::RefCell;
use std::collections::BTreeMap;

use zoid_sim::ssi::{everyone_writes, random_writers, reconfigure, write_cost, Net};
use zoid_sim::{run, Config, Metrics};

fn mode(t: Option<usize>) -> String {
    match t {
        None => "eager".into(),
        Some(k) => format!("rendezvous K={k}"),
    }
}

fn us(ns: u64) -> String {
    format!("{:.0}", ns as f64 / 1000.0)
}

fn row(label: &str, m: &Metrics) {
    println!(
        "| {label} | {:.1} % | {:.4} | {} | {} | {} | {} | {} | {} | {} |",
        m.ion_fraction * 100.0,
        m.jain,
        us(m.p50_ns),
        us(m.p99_ns),
        m.frames_sent,
        m.retransmits,
        m.max_ion_queue,
        m.max_link_queue,
        if m.exactly_once() { "yes" } else { "NO" },
    );
}

fn header(first: &str) {
    println!(
        "| {first} | ION link used | Jain | p50 µs | p99 µs | frames sent | retransmits | max ION queue | max link queue | exactly once |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
}

thread_local! {
    /// Plot data by file name.
    static DATA: RefCell<BTreeMap<&'static str, String>> = const { RefCell::new(BTreeMap::new()) };
}

/// Appends a line to the plot data file `name`.
fn dat(name: &'static str, line: String) {
    DATA.with(|d| {
        let mut d = d.borrow_mut();
        let f = d.entry(name).or_default();
        f.push_str(&line);
        f.push('\n');
    });
}

fn main() {
    let out = std::env::args().nth(1);
    run_all();
    if let Some(dir) = out {
        std::fs::create_dir_all(&dir).expect("create the data directory");
        DATA.with(|d| {
            for (name, text) in d.borrow().iter() {
                let path = std::path::Path::new(&dir).join(name);
                std::fs::write(&path, text).expect("write plot data");
            }
        });
    }
}

fn run_all() {
    let base = Config::default();
    println!(
        "Defaults: star, {} messages of {} KiB per CN, 1 outstanding, {}-byte packets, {} MB/s links and ION port, {} µs per hop, window {}, grant_slots {}, seed {}.\n",
        base.messages,
        base.size >> 10,
        base.payload,
        base.ion_bw / 1_000_000,
        base.latency_ns / 1000,
        base.window,
        base.grant_slots,
        base.seed
    );

    println!("## (a) eager vs rendezvous\n");
    header("CNs, mode");
    dat(
        "scaling.dat",
        "# CNs  ION-link-%-eager  ION-link-%-rendezvous  Jain-eager  Jain-rendezvous  ION-queue-eager  ION-queue-rendezvous".into(),
    );
    for n in [1, 8, 16, 32, 64] {
        let runs: Vec<Metrics> = [None, Some(16)]
            .into_iter()
            .map(|t| {
                let m = run(&Config {
                    cns: n,
                    ack_threshold: t,
                    ..base.clone()
                });
                row(&format!("{n}, {}", mode(t)), &m);
                m
            })
            .collect();
        let (e, r) = (&runs[0], &runs[1]);
        dat(
            "scaling.dat",
            format!(
                "{n} {:.2} {:.2} {:.4} {:.4} {} {}",
                e.ion_fraction * 100.0,
                r.ion_fraction * 100.0,
                e.jain,
                r.jain,
                e.max_ion_queue,
                r.max_ion_queue
            ),
        );
    }

    println!("\n## (a') 64 CNs in a tree (CNs relay for CNs below them)\n");
    header("fanout, mode");
    for fanout in [2, 4, 8] {
        for t in [None, Some(16)] {
            let m = run(&Config {
                cns: 64,
                fanout,
                ack_threshold: t,
                ..base.clone()
            });
            row(&format!("{fanout}, {}", mode(t)), &m);
        }
    }

    println!("\n## (b) ack_threshold sweep, 64 CNs, message sizes uniform in 1..=64 KiB\n");
    header("ack_threshold");
    dat(
        "ack_threshold.dat",
        "# K (0: eager)  p50-ms  p99-ms  ION-queue-frames".into(),
    );
    for t in [Some(1), Some(4), Some(16), Some(64), Some(128), None] {
        let m = run(&Config {
            cns: 64,
            ack_threshold: t,
            random_sizes: true,
            ..base.clone()
        });
        row(&mode(t), &m);
        dat(
            "ack_threshold.dat",
            format!(
                "\"{}\" {:.3} {:.3} {}",
                t.map_or("eager".to_string(), |k| k.to_string()),
                m.p50_ns as f64 / 1e6,
                m.p99_ns as f64 / 1e6,
                m.max_ion_queue
            ),
        );
    }

    println!("\n## (c) loss, 16 CNs, rendezvous K=16\n");
    println!(
        "| loss per hop | ION link used | p99 µs | frames sent | frames lost | retransmits | RTO expiries | delivered / expected | duplicates | exactly once |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (ppm, slots) in [(0, 2), (10_000, 2), (100_000, 2), (10_000, 8), (100_000, 8)] {
        let m = run(&Config {
            cns: 16,
            loss_ppm: ppm,
            grant_slots: slots,
            ..base.clone()
        });
        println!(
            "| {} %{} | {:.1} % | {} | {} | {} | {} | {} | {} / {} | {} | {} |",
            ppm / 10_000,
            match slots {
                2 => String::new(),
                s => format!(", grant_slots {s}"),
            },
            m.ion_fraction * 100.0,
            us(m.p99_ns),
            m.frames_sent,
            m.frames_lost,
            m.retransmits,
            m.rto_expired,
            m.delivered,
            m.expected,
            m.duplicates,
            if m.exactly_once() { "yes" } else { "NO" },
        );
    }

    println!("\n## (d) broadcast from the ION to 64 CNs: one broadcast vs 64 unicasts\n");
    println!("4 messages of 64 KiB to every CN, rendezvous K=16, no CN traffic.\n");
    println!(
        "| topology, mode | ION port frames out | ION port MB out | done at ms | delivered / expected | exactly once |"
    );
    println!("|---|---|---|---|---|---|");
    for fanout in [64, 8, 2] {
        for unicast in [false, true] {
            let m = run(&Config {
                cns: 64,
                fanout,
                messages: 0,
                broadcasts: 4,
                broadcast_as_unicast: unicast,
                ..base.clone()
            });
            println!(
                "| {}, {} | {} | {:.1} | {:.1} | {} / {} | {} |",
                if fanout >= 64 {
                    "star".to_string()
                } else {
                    format!("tree fanout {fanout}")
                },
                if unicast { "64 unicasts" } else { "broadcast" },
                m.ion_out_frames,
                m.ion_out_bytes as f64 / 1e6,
                m.bcast_done_ns as f64 / 1e6,
                m.bcast_delivered,
                m.bcast_expected,
                if m.exactly_once() { "yes" } else { "NO" },
            );
        }
    }

    zoid_tables(&base);
    ssi_tables();
}

/// When a node dies in table (i), ns.
const DEATH_AT: u64 = 200_000_000;

fn ms(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e6)
}

/// zoid's forwarded calls: the ION's scheduler and worker pool, and
/// deaths.
fn zoid_tables(base: &Config) {
    let pool = Config {
        cns: 64,
        small_percent: 25,
        workers: 4,
        service_ns: 20_000,
        service_bw: 50_000_000,
        ..base.clone()
    };
    println!("\n## (h) zoid calls: the ION's scheduler\n");
    println!(
        "{} CNs, 1 call outstanding each, {} % small calls ({} B of arguments, {} B reply) among writes of {} KiB; {} workers, each {} µs + {} MB/s per call (the pool: {} MB/s, below the ION link's {} MB/s).\n",
        pool.cns,
        pool.small_percent,
        pool.small_size,
        pool.small_reply,
        pool.size >> 10,
        pool.workers,
        pool.service_ns / 1000,
        pool.service_bw / 1_000_000,
        pool.workers as u64 * pool.service_bw / 1_000_000,
        pool.ion_bw / 1_000_000,
    );
    println!("| scheduling | ION link used | Jain | small p50 µs | small p99 µs | bulk p50 µs | bulk p99 µs | most queued | refused (EAGAIN) | every call accounted |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let flood = {
        let mut c = Config {
            cns: 16,
            outstanding: 1,
            ..pool.clone()
        };
        c.max_per_cn = 16;
        c
    };
    let rows: [(&str, Config); 5] = [
        (
            "FIFO (`small_bytes=0`)",
            Config {
                small_bytes: 0,
                ..pool.clone()
            },
        ),
        ("priorities, aging 8 (default)", pool.clone()),
        (
            "strict priorities (aging 0)",
            Config {
                aging: 0,
                ..pool.clone()
            },
        ),
        (
            "16 workers (pool faster than the link)",
            Config {
                workers: 16,
                ..pool.clone()
            },
        ),
        (
            "16 CNs, 64 outstanding each, `max_per_cn=16`",
            Config {
                outstanding: 64,
                messages: 64,
                ..flood
            },
        ),
    ];
    dat(
        "scheduler.dat",
        "# scheduling  small-p99-ms  bulk-p99-ms".into(),
    );
    for (i, (label, c)) in rows.into_iter().enumerate() {
        let m = run(&c);
        if i < 3 {
            dat(
                "scheduler.dat",
                format!(
                    "\"{}\" {:.3} {:.3}",
                    ["FIFO", "priorities, aging 8", "strict"][i],
                    m.small_p99_ns as f64 / 1e6,
                    m.bulk_p99_ns as f64 / 1e6
                ),
            );
        }
        println!(
            "| {label} | {:.1} % | {:.4} | {} | {} | {} | {} | {} | {} | {} |",
            m.ion_fraction * 100.0,
            m.jain,
            us(m.small_p50_ns),
            us(m.small_p99_ns),
            us(m.bulk_p50_ns),
            us(m.bulk_p99_ns),
            m.max_sched_queued,
            m.calls_refused,
            if m.every_call_accounted() {
                "yes"
            } else {
                "NO"
            },
        );
    }

    let fail = Config {
        cns: 16,
        messages: 32,
        outstanding: 8,
        workers: 1,
        service_ns: 20_000,
        service_bw: 50_000_000,
        call_timeout_ns: Some(1_000_000_000),
        peer_timeout_ns: 100_000_000,
        ..base.clone()
    };
    println!("\n## (i) zoid calls under loss and deaths (soft mode)\n");
    println!(
        "{} CNs, {} writes of {} KiB each, {} outstanding per CN, {} worker of {} MB/s (a backlog of {} ms at the ION, longer than `peer_timeout`); soft mode, `timeout_ms={}`, `peer_timeout_ms={}`; a death comes at {} ms, mid-run.\n",
        fail.cns,
        fail.messages,
        fail.size >> 10,
        fail.outstanding,
        fail.workers,
        fail.service_bw / 1_000_000,
        (fail.cns * fail.outstanding) as u64
            * (fail.size as u64 * 1_000_000_000 / fail.service_bw + fail.service_ns)
            / 1_000_000,
        fail.call_timeout_ns.unwrap_or(0) / 1_000_000,
        fail.peer_timeout_ns / 1_000_000,
        DEATH_AT / 1_000_000,
    );
    println!("| fault | answered | ETIMEDOUT | died with their CN | waiting at the end | dropped from the ION's queue | messages failed | found down after ms | last call ended at ms | every call accounted |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let tree = Config {
        cns: 64,
        fanout: 4,
        ..fail.clone()
    };
    let rows: [(&str, Config); 6] = [
        ("none", fail.clone()),
        (
            "1 % loss per hop",
            Config {
                loss_ppm: 10_000,
                ..fail.clone()
            },
        ),
        (
            "10 % loss per hop",
            Config {
                loss_ppm: 100_000,
                ..fail.clone()
            },
        ),
        (
            "CN 5 dies",
            Config {
                deaths: vec![(5, DEATH_AT)],
                ..fail.clone()
            },
        ),
        (
            "64 CNs, tree fanout 4: relay CN 1 dies (21 CNs below it)",
            Config {
                deaths: vec![(1, DEATH_AT)],
                ..tree
            },
        ),
        (
            "the ION dies",
            Config {
                deaths: vec![(0, DEATH_AT)],
                ..fail.clone()
            },
        ),
    ];
    for (label, c) in rows {
        let m = run(&c);
        println!(
            "| {label} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            m.calls_ok,
            m.calls_timed_out,
            m.calls_abandoned,
            m.calls_stuck,
            m.calls_dropped,
            m.msgs_failed,
            if c.deaths.is_empty() {
                String::new()
            } else {
                ms(m.detect_ns)
            },
            ms(m.makespan_ns),
            if m.every_call_accounted() {
                "yes"
            } else {
                "NO"
            },
        );
    }
}

/// ssi containers: one object shared by up to 4096 nodes.
fn ssi_tables() {
    let net = Net::default();
    println!("\n## (e) ssi containers: messages per write vs copyset and cluster size\n");
    println!(
        "One object; `copies` nodes hold read copies, then another node writes.  {} µs per message + up to {} µs jitter.\n",
        net.latency_ns / 1000,
        net.jitter_ns / 1000
    );
    println!("| nodes | copies | messages | invalidations | acks |");
    println!("|---|---|---|---|---|");
    dat(
        "ssi_cost.dat",
        "# copies  messages-per-write at 16, 256 and 4096 nodes".into(),
    );
    let mut cost = BTreeMap::<u32, String>::new();
    for nodes in [16u32, 256, 4096] {
        for copies in [0u32, 1, 4, 13] {
            let c = write_cost(nodes, copies, &net);
            *cost.entry(copies).or_insert_with(|| copies.to_string()) +=
                &format!(" {}", c.messages());
            println!(
                "| {nodes} | {copies} | {} | {} | {} |",
                c.messages(),
                c.by_kind[4],
                c.by_kind[5]
            );
        }
    }
    for line in cost.into_values() {
        dat("ssi_cost.dat", line);
    }
    println!("\n## (f) ssi: probable-owner chains\n");
    println!("Writes one after the other by nodes drawn at random (2 000), and every node writing once at the same time.\n");
    println!("| nodes | workload | messages per write | messages to reach the owner: mean | max | done in ms |");
    println!("|---|---|---|---|---|---|");
    for nodes in [16u32, 64, 256, 1024, 4096] {
        let c = random_writers(nodes, 2000, &net);
        dat(
            "ssi_chains.dat",
            format!("{nodes} {:.3} {}", c.hops_mean(), c.hops_max),
        );
        println!(
            "| {nodes} | random, one at a time | {:.2} | {:.2} | {} | |",
            c.messages() as f64 / c.accesses as f64,
            c.hops_mean(),
            c.hops_max
        );
        let (c, t) = everyone_writes(nodes, &net);
        println!(
            "| {nodes} | all at once | {:.2} | {:.2} | {} | {:.1} |",
            c.messages() as f64 / c.accesses as f64,
            c.hops_mean(),
            c.hops_max,
            t as f64 / 1e6
        );
    }
    let objects = 256;
    let ion_bw = zoid_sim::Config::default().ion_bw;
    println!("\n## (g) ssi: rebuild after a node dies\n");
    println!(
        "{objects} objects, each written once by a node drawn at random (every other one also read by another); node 1 dies; the survivors rebuild with ssi.ko's rebuild core.  Floor: 4 latencies + the ION's port at {} MB/s.\n",
        ion_bw / 1_000_000
    );
    println!("| nodes | lost | kept | messages | of which marks | report entries | ION port in / out KiB | floor ms |");
    println!("|---|---|---|---|---|---|---|---|");
    for nodes in [16u32, 64, 256, 1024] {
        let r = reconfigure(nodes, objects, &net);
        println!(
            "| {nodes} | {} | {} | {} | {} | {} | {} / {} | {:.1} |",
            r.lost,
            r.kept,
            r.messages(),
            r.marks,
            r.report_entries,
            r.ion_bytes_in / 1024,
            r.ion_bytes_out / 1024,
            r.floor_ms(net.latency_ns, ion_bw)
        );
    }
}
