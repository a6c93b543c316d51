#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make bench-callpath`: what one round trip costs in frames, interrupts and
# thread switches, for a zoid null call, a treenet ping and a null call
# through the user-space TCP forwarder, in the same 1 ION + 1 CN pset
# (qemu/guest/bench/callpath.sh).  Counts, not times: run it before and
# after a change to the fast path.
#
#   scripts/bench-callpath.sh [extra qemu/pset options]
#   FLAVOR=debug N=1000 scripts/bench-callpath.sh
#   PIGGYBACK=0 scripts/bench-callpath.sh   # acks in frames of their own
#   BUSY_POLL_US=1000 scripts/bench-callpath.sh  # both nodes busy-poll
#                     (treenet's busy_poll_us, sockets' net.core.busy_read)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
log="$repo/out/bench-callpath"
bin=$("$here/build-guest-tool.sh" x86_64 tools/zoid/zoidbench.c)
nicstats=$("$here/build-guest-tool.sh" x86_64 tools/kprof/nicstats.c)
rm -rf "$log"
rc=0
"$repo/qemu/pset" --arch x86_64 --flavor "${FLAVOR:-release}" --cns 1 --log "$log" \
  --add "$bin:/zoid/bench/zoidbench" \
  --add "$nicstats:/zoid/bench/nicstats" \
  --add "$repo/qemu/guest/bench/lib.sh:/zoid/bench/lib.sh" \
  --add "$repo/qemu/guest/bench/callpath.sh:/zoid/bench/callpath.sh" \
  --ion-cmd "N=${N:-2000} PIGGYBACK=${PIGGYBACK:-1} BUSY_POLL_US=${BUSY_POLL_US:-0} sh /zoid/bench/callpath.sh" \
  --cn-cmd "N=${N:-2000} PIGGYBACK=${PIGGYBACK:-1} BUSY_POLL_US=${BUSY_POLL_US:-0} sh /zoid/bench/callpath.sh" \
  --timeout 1200 "$@" || rc=$?
for n in cn1 ion; do
  tr -d '\r' < "$log/$n.console" | sed -n '/^== /,/^@@ZOID cmd-end/p' | grep -v '^@@ZOID'
done
[ "$rc" = 0 ] || echo "bench-callpath: the pset failed (exit $rc, consoles in $log)"
exit "$rc"
