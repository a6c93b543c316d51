// SPDX-License-Identifier: GPL-2.0

//! `make sim`: treenet's and ssi's standard scenarios as Markdown tables.

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

fn main() {
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
    for n in [1, 8, 16, 32, 64] {
        for t in [None, Some(16)] {
            let m = run(&Config {
                cns: n,
                ack_threshold: t,
                ..base.clone()
            });
            row(&format!("{n}, {}", mode(t)), &m);
        }
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
    for t in [Some(1), Some(4), Some(16), Some(64), Some(128), None] {
        let m = run(&Config {
            cns: 64,
            ack_threshold: t,
            random_sizes: true,
            ..base.clone()
        });
        row(&mode(t), &m);
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

    ssi_tables();
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
    for nodes in [16u32, 256, 4096] {
        for copies in [0u32, 1, 4, 13] {
            let c = write_cost(nodes, copies, &net);
            println!(
                "| {nodes} | {copies} | {} | {} | {} |",
                c.messages(),
                c.by_kind[4],
                c.by_kind[5]
            );
        }
    }
    println!("\n## (f) ssi: probable-owner chains\n");
    println!("Writes one after the other by nodes drawn at random (2 000), and every node writing once at the same time.\n");
    println!("| nodes | workload | messages per write | messages to reach the owner: mean | max | done in ms |");
    println!("|---|---|---|---|---|---|");
    for nodes in [16u32, 64, 256, 1024, 4096] {
        let c = random_writers(nodes, 2000, &net);
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
