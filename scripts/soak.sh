#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make soak: the long variants of issue 8's fault suite, on a debug pset
# (KASAN, lockdep, kmemleak on x86_64), each in a pset of its own:
#  1. minutes of mixed zoidfs load, qemu/guest/tests/soak.sh on every node;
#     throughput per interval goes to out/soak-<arch>/throughput.txt; it
#     fails on an error, a splat, a leak or a last third slower than half
#     the first;
#  2. the hostile flood's long run, qemu/guest/tests/flood-long.sh: CN 1
#     sends the ION SOAK_FLOOD_FRAMES hostile frames in rounds of 89-
#     treenet-hostile (CN 2 served throughout); out/soak-flood-<arch>/.
# Knobs from the environment: SOAK_SECONDS (600), SOAK_PROCS per CN (4),
# SOAK_CNS (2), SOAK_FLOOD_FRAMES (1000000; 0 skips the flood), ZOID_ARCH
# (x86_64).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
arch=${ZOID_ARCH:-x86_64}
secs=${SOAK_SECONDS:-600}
procs=${SOAK_PROCS:-4}
cns=${SOAK_CNS:-2}
flood=${SOAK_FLOOD_FRAMES:-1000000}
kdir=$("$here/build-kernel.sh" "$arch" debug | tail -n 1)
log="$repo/out/soak-$arch"
cmd="SOAK_SECONDS=$secs SOAK_PROCS=$procs sh -e /zoid/tests/soak.sh"
rc=0
"$repo/qemu/pset" --arch "$arch" --cns "$cns" --kdir "$kdir" --timeout $((secs + 900)) \
  --log "$log" --ion-cmd "$cmd" --cn-cmd "$cmd" || rc=$?
grep -ah "soak" "$log"/cn*.console | grep -v '^\[' > "$log/throughput.txt" || true
cat "$log/throughput.txt"
echo "soak: $( [ $rc = 0 ] && echo ok || echo FAILED ) ($secs s, $procs workers on each of $cns CNs, $arch debug)"
frc=0
if [ "$flood" -gt 0 ]; then
  tnflood=$("$here/build-guest-tool.sh" "$arch" tools/treenet/tnflood.c | tail -n 1)
  flog="$repo/out/soak-flood-$arch"
  fcmd="FLOOD_TOTAL=$flood sh -e /zoid/tests/flood-long.sh"
  # Rounds of 2.5e5 frames: about 3 min each on an x86_64 KASAN ION.
  "$repo/qemu/pset" --arch "$arch" --cns "$cns" --kdir "$kdir" \
    --timeout $((900 + flood / 250)) --log "$flog" --add "$tnflood:/zoid/bin/tnflood" \
    --ion-cmd "$fcmd" --cn-cmd "$fcmd" || frc=$?
  grep -ah "flood round\|pings answered\|tnflood:\|total_dropped" "$flog"/*.console \
    | grep -v '^\[' > "$flog/rounds.txt" || true
  cat "$flog/rounds.txt"
  echo "soak: flood $( [ $frc = 0 ] && echo ok || echo FAILED ) ($flood frames from CN 1, $cns CNs, $arch debug)"
fi
[ $rc = 0 ] && [ $frc = 0 ]
