#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make bench`: zoidfs against NFSv4.2 and v9fs, side by side in one 1 ION +
# 1 CN pset (x86_64 release kernel, 1 GiB per VM), all three serving the
# same ION tmpfs over the same link.
#
#   scripts/bench-fs.sh [extra qemu/pset options]
#
# Builds fsbench and tcpbench (static) and the diod overlay
# (scripts/bench-peers.sh), boots the pset with qemu/guest/bench/fs.sh on
# both nodes, then scripts/bench-fs-report.py writes
# bench/results/fs-<date>.json, prints the table and, last, the RATIO lines.
# Knobs (environment, passed to the guests): REPEAT (5), BENCH_SIZES,
# BENCH_RAND_OPS, BENCH_META_FILES, BENCH_META_DIRS, BENCH_SYSTEMS,
# BENCH_ZOIDFS_OPTS (extra zoidfs mount options, e.g. inflight=1),
# BENCH_PROCS (processes at once on the CN, "1 2 4"), BENCH_PAR_BYTES (each
# one's file, 16 MiB).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/common.sh"
log="$repo/out/bench-fs"

fsbench=$("$here/build-guest-tool.sh" x86_64 tools/zoid/fsbench.c)
tcpbench=$("$here/build-guest-tool.sh" x86_64 tools/tcpbench/tcpbench.c)
peers=$("$here/bench-peers.sh" "$repo/out/bench-peers")
env="REPEAT=${REPEAT:-5}"
for k in BENCH_SIZES BENCH_RAND_OPS BENCH_META_FILES BENCH_META_DIRS BENCH_SYSTEMS BENCH_ZOIDFS_OPTS \
    BENCH_PROCS BENCH_PAR_BYTES; do
  [ -z "${!k:-}" ] || env="$env $k='${!k}'"
done
# gnuplot renders the plots (Debian's gnuplot-nox, installed on first use).
command -v gnuplot > /dev/null ||
  { [ "$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gnuplot-nox > /dev/null; } ||
  echo "bench: no gnuplot (apt-get install gnuplot-nox), the results will have no plots"
rm -rf "$log"   # stale consoles would give stale numbers
rc=0
"$repo/qemu/pset" --arch x86_64 --flavor release --cns 1 --mem 1024 --log "$log" \
  --add "$fsbench:/zoid/bench/fsbench" --add "$tcpbench:/zoid/bench/tcpbench" \
  --add "$peers:/" \
  --add "$repo/qemu/guest/bench/lib.sh:/zoid/bench/lib.sh" \
  --add "$repo/qemu/guest/bench/fs.sh:/zoid/bench/fs.sh" \
  --ion-cmd "$env sh /zoid/bench/fs.sh" --cn-cmd "$env sh /zoid/bench/fs.sh" \
  --timeout "${BENCH_TIMEOUT:-3600}" "$@" || rc=$?
echo
[ "$rc" = 0 ] || echo "bench: the pset failed (exit $rc, consoles in $log)"
mkdir -p "$repo/bench/results"
results="$repo/bench/results/fs-$(date -u +%Y%m%d-%H%M).json"
kernel=$(grep -m1 -o "Linux version [^ ]*" "$log/cn1.console" 2>/dev/null | awk '{ print $3 }' || true)
python3 "$here/bench-fs-report.py" "$log" "$results" \
  "machine=$(nproc) cores, $(awk '/MemTotal/ { printf "%d MiB", $2 / 1024 }' /proc/meminfo), QEMU TCG" \
  "kernel=${kernel:-unknown} x86_64 release" "pset=1 ION + 1 CN, 1024 MiB each, virtio-net over a unix socket" \
  "export=tmpfs on the ION" "$env" || rc=1
echo "bench: results in ${results#$repo/}"
exit "$rc"
