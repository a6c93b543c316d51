#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make soak: minutes of mixed zoidfs load on a debug pset (KASAN, lockdep,
# kmemleak on x86_64), qemu/guest/tests/soak.sh on every node.  Knobs from
# the environment: SOAK_SECONDS (600), SOAK_PROCS per CN (4), SOAK_CNS (2),
# ZOID_ARCH (x86_64).  Throughput per interval goes to
# out/soak-<arch>/throughput.txt; the run fails on an error, a splat, a
# leak or a last third slower than half the first.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
arch=${ZOID_ARCH:-x86_64}
secs=${SOAK_SECONDS:-600}
procs=${SOAK_PROCS:-4}
cns=${SOAK_CNS:-2}
kdir=$("$here/build-kernel.sh" "$arch" debug | tail -n 1)
log="$repo/out/soak-$arch"
cmd="SOAK_SECONDS=$secs SOAK_PROCS=$procs sh -e /zoid/tests/soak.sh"
rc=0
"$repo/qemu/pset" --arch "$arch" --cns "$cns" --kdir "$kdir" --timeout $((secs + 900)) \
  --log "$log" --ion-cmd "$cmd" --cn-cmd "$cmd" || rc=$?
grep -ah "soak" "$log"/cn*.console | grep -v '^\[' > "$log/throughput.txt" || true
cat "$log/throughput.txt"
echo "soak: $( [ $rc = 0 ] && echo ok || echo FAILED ) ($secs s, $procs workers on each of $cns CNs, $arch debug)"
exit $rc
