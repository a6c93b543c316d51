#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make conformance`: the POSIX conformance suite (tools/zoid/posixcheck.c)
# on zoidfs, NFS and v9fs, all serving the same ION directory in one 1 ION +
# 1 CN pset (x86_64 release kernel), and on the CN's local tmpfs as the
# reference: the servers and mounts of `make bench` (qemu/guest/bench/fs.sh
# with BENCH_MODE=posix), posixcheck instead of the workloads.
#
#   scripts/conformance.sh [extra qemu/pset options]
#   CONFORMANCE_EXPORT=ext4 scripts/conformance.sh   # the export on an ext4 disk
#   BENCH_SYSTEMS="zoidfs nfs" scripts/conformance.sh
#
# Prints, per system, the checks passed and each check it fails that the
# local tmpfs passes (with the system's own words), writes
# bench/results/posix-<date>.txt, and ends with
#   CONFORMANCE <system> <passed> <total>
#   RATIO posix_vs_<nfs|v9fs> <value>
# (zoidfs's better configuration's checks passed over the peer's better
# one's: > 1 means zoidfs conforms better, 1 as well).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/common.sh"
log="$repo/out/conformance"
export_fs=${CONFORMANCE_EXPORT:-tmpfs}
fsbench=$("$here/build-guest-tool.sh" x86_64 tools/zoid/fsbench.c)
tcpbench=$("$here/build-guest-tool.sh" x86_64 tools/tcpbench/tcpbench.c)
posixcheck=$("$here/build-guest-tool.sh" x86_64 tools/zoid/posixcheck.c)
peers=$("$here/bench-peers.sh" "$repo/out/bench-peers")
env="BENCH_MODE=posix BENCH_EXPORT=$export_fs BENCH_SYSTEMS='${BENCH_SYSTEMS:-zoidfs zoidfs_loose nfs nfs3 9p 9p_loose}'"
extra=()
[ "$export_fs" = tmpfs ] || extra=(--ion-disk "${BENCH_DISK_MB:-1024}")
rm -rf "$log"
rc=0
"$repo/qemu/pset" --arch x86_64 --flavor release --cns 1 --mem 1024 --log "$log" \
  --add "$fsbench:/zoid/bench/fsbench" --add "$tcpbench:/zoid/bench/tcpbench" \
  --add "$posixcheck:/zoid/bench/posixcheck" --add "$peers:/" \
  --add "$repo/qemu/guest/bench/lib.sh:/zoid/bench/lib.sh" \
  --add "$repo/qemu/guest/bench/fs.sh:/zoid/bench/fs.sh" \
  --ion-cmd "$env sh /zoid/bench/fs.sh" --cn-cmd "$env sh /zoid/bench/fs.sh" \
  ${extra[@]+"${extra[@]}"} --timeout "${BENCH_TIMEOUT:-1800}" "$@" ||
  { rc=$?; echo "conformance: the pset failed (exit $rc, consoles in $log)"; }
mkdir -p "$repo/bench/results"
results="$repo/bench/results/posix-$(date -u +%Y%m%d-%H%M).txt"
python3 "$here/conformance-report.py" "$log/cn1.console" "$results" \
  "export=$export_fs on the ION; pset 1 ION + 1 CN, x86_64 release, QEMU TCG; $(git -C "$repo" rev-parse --short HEAD)" ||
  rc=1
echo "conformance: results in ${results#$repo/}"
exit "$rc"
