#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make sim`: runs rust/zoid_sim's standard scenarios (release build) and
# writes, in out/sim/: results.md (the tables, also printed), the plots'
# data (*.dat) and, with gnuplot (Debian's gnuplot-nox, installed on first
# use as `make bench` does), the plots as SVG:
#   sim-scaling.svg        ION link used and ION queue vs CNs, eager vs rendezvous
#   sim-ack-threshold.svg  latency and ION queue over the ack_threshold sweep
#   sim-scheduler.svg      small and bulk call p99, FIFO vs zoid's priorities
#   sim-ssi.svg            ssi messages per write vs copyset, per cluster size
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
out="$repo/out/sim"
mkdir -p "$out"
cargo run --release --locked --quiet --manifest-path "$repo/rust/zoid_sim/Cargo.toml" -- "$out" |
  tee "$out/results.md"

command -v gnuplot > /dev/null ||
  { [ "$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gnuplot-nox > /dev/null 2>&1; } ||
  { echo "sim: no gnuplot (apt-get install gnuplot-nox), no plots"; exit 0; }

cd "$out"
plot() { # name, gnuplot commands
  if printf 'set terminal svg size 900,420 dynamic font "sans,11"\nset output "%s.svg"\nset grid\nset key top left\n%s\n' "$1" "$2" | gnuplot; then
    echo "sim: plot out/sim/$1.svg"
  else
    echo "sim: gnuplot failed on $1"
  fi
}
plot sim-scaling '
set title "One ION, N CNs in a star: ION link used and ION port queue"; set key bottom right
set xlabel "CNs"; set ylabel "ION link used (%)"; set yrange [0:100]
set y2label "largest ION port queue (frames)"; set logscale y2; set y2tics; set ytics nomirror
plot "scaling.dat" u 1:2 w lp t "eager: link", "" u 1:3 w lp t "rendezvous: link", \
     "" u 1:6 axes x1y2 w lp dt 2 t "eager: queue", "" u 1:7 axes x1y2 w lp dt 2 t "rendezvous: queue"'
plot sim-ack-threshold '
set title "ack_threshold sweep, 64 CNs, sizes uniform in 1..64 KiB" noenhanced
set style data histograms; set style histogram clustered gap 1; set style fill solid 0.8 border -1
set ylabel "latency (ms)"; set yrange [0:*]
set y2label "largest ION port queue (frames)"; set y2tics; set ytics nomirror; set y2range [0:*]
plot "ack_threshold.dat" u 2:xtic(1) t "p50", "" u 3 t "p99", "" u 0:4 axes x1y2 w lp t "ION queue"'
plot sim-scheduler '
set title "zoid calls, 64 CNs, pool slower than the link: p99 latency"
set style data histograms; set style histogram clustered gap 1; set style fill solid 0.8 border -1
set ylabel "p99 latency (ms)"; set yrange [0:*]
plot "scheduler.dat" u 2:xtic(1) t "small calls", "" u 3 t "bulk calls"'
plot sim-ssi '
set title "ssi: messages per write vs read copies (identical for 16, 256, 4096 nodes)"
set xlabel "read copies before the write"; set ylabel "messages per write"
plot "ssi_cost.dat" u 1:2 w lp t "16 nodes", "" u 1:3 w lp dt 2 t "256 nodes", "" u 1:4 w p ps 2 t "4096 nodes"'
