#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make bench`: zoidfs against NFSv4.2 and v9fs, side by side, all three
# serving the same ION directory over the same links (x86_64 release
# kernel, 1 GiB per VM), in up to three psets, one after the other
# (BENCH_RUNS, default "tmpfs ext4 cns"):
#   tmpfs  1 ION + 1 CN, the export a tmpfs: every workload, the raw link;
#   ext4   1 ION + 1 CN, the export an ext4 file system on a virtio disk of
#          the ION (BENCH_DISK_MB, 2048): every workload, figures tagged ext4;
#   cns    1 ION + BENCH_CNS CNs (4), tmpfs: CNs writing and reading at once.
#
#   scripts/bench-fs.sh [extra qemu/pset options]
#
# Builds fsbench and tcpbench (static) and the diod overlay
# (scripts/bench-peers.sh), boots each pset with qemu/guest/bench/fs.sh on
# every node, then scripts/bench-fs-report.py writes
# bench/results/fs-<date>.json, prints the table and, last, the RATIO lines.
# Knobs (environment, passed to the guests): REPEAT (5), BENCH_SIZES,
# BENCH_RAND_OPS, BENCH_META_FILES, BENCH_META_DIRS, BENCH_SYSTEMS,
# BENCH_ZOIDFS_OPTS (extra zoidfs mount options, e.g. inflight=1),
# BENCH_PROCS (processes at once on the CN, "1 2 4"), BENCH_PAR_BYTES (each
# one's file, 16 MiB), BENCH_CN_STEPS (CNs at once, "1 2 4"), BENCH_PARTS
# (which workloads a 1-CN pset runs: "seq rand meta fio par raw"); on the
# host BENCH_OUT (the results' directory, bench/results).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/common.sh"
log="$repo/out/bench-fs"
runs=${BENCH_RUNS:-tmpfs ext4 cns}
cns=${BENCH_CNS:-4}
[ "$cns" -ge 2 ] || { echo "bench: BENCH_CNS must be 2 or more (the cns run)"; exit 2; }

fsbench=$("$here/build-guest-tool.sh" x86_64 tools/zoid/fsbench.c)
tcpbench=$("$here/build-guest-tool.sh" x86_64 tools/tcpbench/tcpbench.c)
peers=$("$here/bench-peers.sh" "$repo/out/bench-peers")
env="REPEAT=${REPEAT:-5}"
for k in BENCH_SIZES BENCH_RAND_OPS BENCH_META_FILES BENCH_META_DIRS BENCH_SYSTEMS BENCH_ZOIDFS_OPTS \
    BENCH_PROCS BENCH_PAR_BYTES BENCH_CN_STEPS BENCH_PARTS; do
  [ -z "${!k:-}" ] || env="$env $k='${!k}'"
done
# gnuplot renders the plots (Debian's gnuplot-nox, installed on first use).
command -v gnuplot > /dev/null ||
  { [ "$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gnuplot-nox > /dev/null; } ||
  echo "bench: no gnuplot (apt-get install gnuplot-nox), the results will have no plots"
rm -rf "$log"   # stale consoles would give stale numbers
rc=0
logs=
for run in $runs; do
  n=1 extra=() renv=$env tag=
  case $run in
    tmpfs) ;;
    ext4) extra=(--ion-disk "${BENCH_DISK_MB:-2048}") renv="$env BENCH_EXPORT=ext4" tag=:ext4 ;;
    cns) n=$cns ;;
    *) echo "bench: unknown run '$run' (tmpfs, ext4, cns)"; exit 2 ;;
  esac
  echo "bench: $run: 1 ION + $n CN(s)"
  "$repo/qemu/pset" --arch x86_64 --flavor release --cns "$n" --mem 1024 --log "$log/$run" \
    --add "$fsbench:/zoid/bench/fsbench" --add "$tcpbench:/zoid/bench/tcpbench" \
    --add "$peers:/" \
    --add "$repo/qemu/guest/bench/lib.sh:/zoid/bench/lib.sh" \
    --add "$repo/qemu/guest/bench/fs.sh:/zoid/bench/fs.sh" \
    --ion-cmd "$renv sh /zoid/bench/fs.sh" --cn-cmd "$renv sh /zoid/bench/fs.sh" \
    "${extra[@]}" --timeout "${BENCH_TIMEOUT:-3600}" "$@" ||
    { r=$?; echo "bench: the $run pset failed (exit $r, consoles in $log/$run)"; rc=$r; }
  logs="${logs:+$logs,}$log/$run$tag"
done
echo
# BENCH_OUT: where the results and plots go (a quick A/B elsewhere keeps
# bench/results/latest-*.svg those of a whole run).
out=${BENCH_OUT:-$repo/bench/results}
mkdir -p "$out"
results="$out/fs-$(date -u +%Y%m%d-%H%M).json"
kernel=$(cat "$log"/*/cn1.console 2>/dev/null | grep -m1 -o "Linux version [^ ]*" | awk '{ print $3 }' || true)
python3 "$here/bench-fs-report.py" "$logs" "$results" \
  "machine=$(nproc) cores, $(awk '/MemTotal/ { printf "%d MiB", $2 / 1024 }' /proc/meminfo), QEMU TCG" \
  "kernel=${kernel:-unknown} x86_64 release" "runs=$runs" \
  "pset=1 ION + 1 CN (tmpfs, ext4), 1 ION + $cns CNs (cns), 1024 MiB each, virtio-net over unix sockets" \
  "export=tmpfs on the ION; ext4_* figures: ext4 on a ${BENCH_DISK_MB:-2048} MiB virtio disk" \
  "meta=${BENCH_META_FILES:-500} empty files created, stat'ed and unlinked, in one directory and in ${BENCH_META_DIRS:-10}" \
  "$env" > "$log/report.txt" || rc=1
# The report's RATIO lines come last, as the issue's tooling reads them.
echo "bench: results in ${results#$repo/}"
cat "$log/report.txt"
exit "$rc"
