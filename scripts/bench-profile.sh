#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make bench-profile`: where the CPU time goes on both nodes of a 1 ION +
# 1 CN pset (x86_64 release kernel) while the CN streams 4 KiB and 1 MiB
# messages and runs 32-byte round trips, over treenet and over TCP
# (qemu/guest/bench/profile.sh; tools/kprof samples every CPU with the
# kernel's cpu-clock event, so it works under TCG).  A profile, not a
# benchmark: compare the shares of the functions between the two
# transports, and take figures from make bench-treenet.
#
#   scripts/bench-profile.sh [extra qemu/pset options]
#   WORKLOADS="treenet_4k tcp_4k" TOP=60 scripts/bench-profile.sh
#   WORKLOADS="zoid_write_1m fwd_write_1m" scripts/bench-profile.sh  (zoid calls)
#   WORKLOADS="treenet_1m zoidfs_write_1m zoidfs_read_1m" scripts/bench-profile.sh
#   BUSY_POLL_US=5000 WORKLOADS="tcp_rtt treenet_rtt" scripts/bench-profile.sh
#     (both nodes busy-poll, so idle time no longer hides a round trip's work)
#   RTT_OPS=20000 WORKLOADS="zoid_null fwd_null" scripts/bench-profile.sh
#     (more round trips, so more samples)
#   KNOBS="treenet/ack_threshold=0" MOUNT_OPTS="cache=loose,inflight=2" \
#     WORKLOADS="zoidfs_par2_read" scripts/bench-profile.sh  (knobs, mount options)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
log="$repo/out/bench-profile"
tcpbench=$("$here/build-guest-tool.sh" x86_64 tools/tcpbench/tcpbench.c)
kprof=$("$here/build-guest-tool.sh" x86_64 tools/kprof/kprof.c)
zoidbench=$("$here/build-guest-tool.sh" x86_64 tools/zoid/zoidbench.c)
fsbench=$("$here/build-guest-tool.sh" x86_64 tools/zoid/fsbench.c)
nicstats=$("$here/build-guest-tool.sh" x86_64 tools/kprof/nicstats.c)
rm -rf "$log"
env="TOP=${TOP:-40}"
[ -n "${WORKLOADS:-}" ] && env="$env WORKLOADS='$WORKLOADS'"
[ -n "${BUSY_POLL_US:-}" ] && env="$env BUSY_POLL_US='$BUSY_POLL_US'"
[ -n "${RTT_OPS:-}" ] && env="$env RTT_OPS='$RTT_OPS'"
[ -n "${KNOBS:-}" ] && env="$env KNOBS='$KNOBS'"
[ -n "${MOUNT_OPTS:-}" ] && env="$env MOUNT_OPTS='$MOUNT_OPTS'"
rc=0
"$repo/qemu/pset" --arch x86_64 --flavor "${FLAVOR:-release}" --cns 1 --log "$log" \
  --add "$tcpbench:/zoid/bench/tcpbench" \
  --add "$kprof:/zoid/bench/kprof" \
  --add "$zoidbench:/zoid/bench/zoidbench" \
  --add "$fsbench:/zoid/bench/fsbench" \
  --add "$nicstats:/zoid/bench/nicstats" \
  --add "$repo/qemu/guest/bench/lib.sh:/zoid/bench/lib.sh" \
  --add "$repo/qemu/guest/bench/profile.sh:/zoid/bench/profile.sh" \
  --ion-cmd "$env sh /zoid/bench/profile.sh" --cn-cmd "$env sh /zoid/bench/profile.sh" \
  --timeout 1200 "$@" || rc=$?
# Rust's symbols demangled (c++filt knows the v0 scheme), crate hashes cut.
demangle() { if command -v c++filt > /dev/null; then c++filt; else cat; fi; }
for n in cn1 ion; do
  tr -d '\r' < "$log/$n.console" | sed -n '/^== /,/^== end/p' |
    demangle | sed 's/\[[0-9a-f]\{16\}\]//g'
done
[ "$rc" = 0 ] || echo "bench-profile: the pset failed (exit $rc, consoles in $log)"
exit "$rc"
