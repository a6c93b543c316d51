#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The report of `make bench` (zoidfs vs NFS vs v9fs) from the pset's consoles.

    scripts/bench-fs-report.py <log-dir>[:<tag>][,...] <results.json> [key=value ...]

Reads the `BENCH <name> <median>` and `bench: <name> runs: ...` lines the
guest script (qemu/guest/bench/fs.sh) printed in each pset's log folder
(a tag, e.g. `ext4`, goes into the names of that pset's figures:
`zoidfs_ext4_write_1m_mbps`), and its `BENCH-CN` lines (several CNs at
once), from which it makes `<fs>_cns<n>_<write|read>_mbps` (all bytes
over the slowest CN's time) and `_jain` (Jain's index over the CNs) per
run and their medians.  It writes every figure with its runs (median, min,
max) and the key=value facts given (machine, kernel, options) to
results.json, prints a table per workload and, last, one line per
comparison:

    RATIO <workload>_vs_<peer> <value>

against the best configuration of each peer (nfs: the better of NFSv4.2
and NFSv3; v9fs: the better of cache=none and cache=loose) and zoidfs's best configuration (the better
of its defaults and cache=loose; both are in the table).  value > 1 means
zoidfs did better: throughput and rates zoidfs/peer, latency peer/zoidfs.
With gnuplot on the PATH it also renders, next to results.json,
<stem>-seq.svg (throughput vs block size), <stem>-latency.svg (random 4 KiB
at queue depth 1), <stem>-meta.svg (metadata rates) and <stem>-scale.svg
(processes at once), <stem>-cns.svg (CNs at once) and <stem>-ext4-seq.svg
(sequential I/O on the ext4 export), and copies them to latest-*.svg for
the README.
Exits 1 if a figure is missing or a measurement failed.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

SYSTEMS = ["zoidfs", "zoidfs_loose", "nfs", "nfs3", "9p", "9p_loose"]
PEERS = {"nfs": ["nfs", "nfs3"], "v9fs": ["9p", "9p_loose"]}
ZOIDFS = ["zoidfs", "zoidfs_loose"]


def workloads(names):
    """Workload names (the part after '<system>_') in a stable order."""
    seen = []
    for n in names:
        for s in sorted(SYSTEMS, key=len, reverse=True):
            if n.startswith(s + "_"):
                w = n[len(s) + 1:]
                if w not in seen:
                    seen.append(w)
                break
    return seen


def tagged(name, tag):
    """A figure's name with its pset's tag after the system's name."""
    if not tag:
        return name
    for s in sorted(SYSTEMS, key=len, reverse=True):
        if name.startswith(s + "_"):
            return f"{s}_{tag}_{name[len(s) + 1:]}"
    return f"{tag}_{name}"


def median(values):
    """The median as the guests take it (the lower one of an even count)."""
    v = sorted(values)
    return v[(len(v) + 1) // 2 - 1]


def jain(rates):
    return sum(rates) ** 2 / (len(rates) * sum(r * r for r in rates))


def cn_figures(records, values, runs, notes):
    """Aggregate Mbit/s and Jain's index of each run of several CNs at once
    from the CNs' own results: (fs, n, op, run, cn, bytes, ns) records."""
    groups = {}
    for fs, n, op, run, cn, b, ns in records:
        groups.setdefault((fs, n, op), {}).setdefault(run, {})[cn] = (b, ns)
    for (fs, n, op), by_run in sorted(groups.items()):
        aggs, jains = [], []
        for run, cns in sorted(by_run.items()):
            if len(cns) != n or any(ns <= 0 or b <= 0 for b, ns in cns.values()):
                notes.append(f"BENCH-FAIL {fs}_cns{n}_{op} run {run}: "
                             f"{len(cns)} of {n} CNs reported")
                continue
            aggs.append(round(sum(b for b, _ in cns.values()) * 8000
                              / max(ns for _, ns in cns.values()), 1))
            jains.append(round(jain([b / ns for b, ns in cns.values()]), 4))
        if aggs:
            for key, vals in ((f"{fs}_cns{n}_{op}_mbps", aggs), (f"{fs}_cns{n}_{op}_jain", jains)):
                values[key] = median(vals)
                runs[key] = vals


def lower_is_better(workload):
    return workload.endswith("_us")


def best(values, workload, systems):
    got = [(values[f"{s}_{workload}"], s) for s in systems if f"{s}_{workload}" in values]
    if not got:
        return None, None
    return (min if lower_is_better(workload) else max)(got)


LABELS = {"zoidfs": "zoidfs", "zoidfs_loose": "zoidfs cache=loose", "nfs": "NFSv4.2", "nfs3": "NFSv3",
          "9p": "v9fs cache=none", "9p_loose": "v9fs cache=loose"}


def plots(values, results):
    """SVG plots next to results (a .json path) with gnuplot; copies as latest-*."""
    if not shutil.which("gnuplot"):
        print("bench: no gnuplot, no plots (apt-get install gnuplot-nox)")
        return
    stem = results[:-len(".json")]
    d = os.path.dirname(results)
    systems = [s for s in SYSTEMS if any(k.startswith(s + "_") for k in values)]
    sizes = [("4k", 4), ("64k", 64), ("1m", 1024), ("4m", 4096)]

    # The plots with at least one figure (a run may lack some workloads).
    filled = set()

    def table(kind, rows):
        with open(f"{stem}-{kind}.dat", "w") as f:
            f.write("# " + " ".join(["x"] + systems) + "\n")
            for label, keyf in rows:
                cells = [f"{values[keyf(s)]:.1f}" if keyf(s) in values else "NaN" for s in systems]
                if any(c != "NaN" for c in cells):
                    filled.add(kind)
                f.write(" ".join([f'"{label}"'] + cells) + "\n")

    table("seq",
          [(f"{op} {n}", (lambda s, op=op, n=n: f"{s}_{op}_{n}_mbps"))
           for op in ("write", "read") for n, _ in sizes])
    table("latency",
          [(f"{op} {p}", (lambda s, op=op, p=p: f"{s}_{op}_4k_{p}_us"))
           for op in ("randread", "randwrite") for p in ("p50", "p99")])
    table("meta",
          [(f"{op} {lay}", (lambda s, op=op, lay=lay: f"{s}_{op}_{lay}_ops"))
           for op in ("create", "stat", "unlink") for lay in ("onedir", "dirs")])
    procs = sorted({int(m.group(1)) for k in values for m in [re.search(r"_par(\d+)_", k)] if m})
    table("scale",
          [(f"{op} x{n}", (lambda s, op=op, n=n: f"{s}_par{n}_{op}_mbps"))
           for op in ("write", "read") for n in procs])
    cns = sorted({int(m.group(1)) for k in values for m in [re.search(r"_cns(\d+)_", k)] if m})
    table("cns",
          [(f"{op} {n} CN", (lambda s, op=op, n=n: f"{s}_cns{n}_{op}_mbps"))
           for op in ("write", "read") for n in cns])
    table("ext4-seq",
          [(f"{op} {n}", (lambda s, op=op, n=n: f"{s}_ext4_{op}_{n}_mbps"))
           for op in ("write", "read") for n, _ in sizes])
    cols = " , ".join(f"'{{dat}}' using {i + 2}:xtic(1) title '{LABELS[s]}'"
                      for i, s in enumerate(systems))
    for kind, title, ylabel in (
            ("seq", "Sequential I/O, block size (higher is better)", "Mbit/s"),
            ("latency", "Random 4 KiB at queue depth 1 (lower is better)", "microseconds"),
            ("meta", "Metadata (higher is better)", "operations/s"),
            ("scale", "Processes at once on one CN, 1 MiB blocks, aggregate (higher is better)",
             "Mbit/s"),
            ("cns", "CNs at once, one process each, 1 MiB blocks, aggregate (higher is better)",
             "Mbit/s"),
            ("ext4-seq", "Sequential I/O on an ext4 export, block size (higher is better)",
             "Mbit/s")):
        if kind not in filled:
            continue
        dat = f"{stem}-{kind}.dat"
        svg = f"{stem}-{kind}.svg"
        script = (f"set terminal svg size 900,420 dynamic font 'sans,11'\n"
                  f"set output '{svg}'\nset title '{title}'\nset ylabel '{ylabel}'\n"
                  "set style data histograms\nset style histogram clustered gap 1\n"
                  "set style fill solid 0.8 border -1\nset key top left\n"
                  "set grid ytics\nset xtics rotate by -30\nset yrange [0:*]\n"
                  f"plot {cols.format(dat=dat)}\n")
        r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
        if r.returncode:
            print(f"bench: gnuplot failed on {kind}: {r.stderr.strip()}")
            continue
        shutil.copy(svg, os.path.join(d, f"latest-{kind}.svg"))
        print(f"bench: plot {os.path.relpath(svg)}")


def main():
    logdirs, out = sys.argv[1], sys.argv[2]
    facts = dict(a.split("=", 1) for a in sys.argv[3:])
    values, runs, notes, records = {}, {}, [], []
    for spec in logdirs.split(","):
        logdir, _, tag = spec.partition(":")
        for console in sorted(glob.glob(f"{logdir}/*.console")):
            with open(console, errors="replace") as f:
                for line in f:
                    line = line.replace("\r", "").rstrip("\n")
                    m = re.match(r"^BENCH (\S+) ([0-9.]+)$", line)
                    if m:
                        values[tagged(m.group(1), tag)] = float(m.group(2))
                    m = re.match(r"^bench: (\S+) runs: (.*)$", line)
                    if m:
                        runs[tagged(m.group(1), tag)] = [float(v) for v in m.group(2).split()]
                    m = re.match(r"^BENCH-CN (\S+) (\d+) (write|read) (\d+) (\d+) (\d+) (\d+)$", line)
                    if m:
                        fs, n, op, run, cn, b, ns = m.groups()
                        records.append((tagged(fs + "_", tag)[:-1], int(n), op, int(run), int(cn),
                                        int(b), int(ns)))
                    if line.startswith("BENCH-FAIL") or re.match(r"^bench: \S+: ", line):
                        notes.append(line + (f" ({tag})" if tag else ""))
    cn_figures(records, values, runs, notes)
    figures = {
        n: {"median": v, "runs": runs.get(n, []),
            "min": min(runs.get(n, [v])), "max": max(runs.get(n, [v]))}
        for n, v in sorted(values.items())
    }
    with open(out, "w") as f:
        json.dump({"facts": facts, "figures": figures, "notes": notes}, f, indent=1)
        f.write("\n")

    plots(values, out)
    ws = workloads(values)
    print(f"{'workload':28}" + "".join(f"{s:>14}" for s in SYSTEMS))
    for w in ws:
        cells = []
        for s in SYSTEMS:
            fig = figures.get(f"{s}_{w}")
            cells.append(f"{fig['median']:.1f}" if fig else "-")
        print(f"{w:28}" + "".join(f"{c:>14}" for c in cells))
    for n in ("raw_tcp_tput_1m_mbps", "raw_treenet_tput_1m_mbps"):
        print(f"{n:28}{values[n]:>14.1f}" if n in values else f"{n:28}{'-':>14}")
    raw = values.get("raw_treenet_tput_1m_mbps")
    if raw:
        for s in SYSTEMS:
            for op in ("write", "read"):
                k = f"{s}_{op}_1m_mbps"
                if k in values:
                    print(f"efficiency {s} {op} 1m: {values[k] / raw:.2f} of raw treenet")
    for n in notes:
        print(n)
    missing = [f"{s}_{w}" for w in ws for s in SYSTEMS if f"{s}_{w}" not in values]
    for m in missing:
        print(f"bench: missing {m}")
    for w in ws:
        z, zs = best(values, w, ZOIDFS)
        for peer, systems in PEERS.items():
            p, ps = best(values, w, systems)
            if z is None or p is None or z <= 0 or p <= 0:
                print(f"RATIO {re.sub(r'_(mbps|us|ops)$', '', w)}_vs_{peer} n/a")
                continue
            r = p / z if lower_is_better(w) else z / p
            print(f"RATIO {re.sub(r'_(mbps|us|ops)$', '', w)}_vs_{peer} {r:.2f}")
    return 1 if missing or any(n.startswith("BENCH-FAIL") for n in notes) else 0


if __name__ == "__main__":
    sys.exit(main())
