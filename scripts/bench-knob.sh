#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `scripts/bench-knob.sh`: a treenet knob's effect on round trips, its
# values in turns in one 1 ION + 1 CN pset (qemu/guest/bench/knob-ab.sh):
# treenet pings, zoid null calls and the TCP forwarder's null calls, then
# per value the medians and the medians of the ratios to TCP (>1: faster).
#
#   make bench-knob KNOB=softirq_rx VALUES="1 0" [NODES=ion] [ROUNDS=4] [N=2000]
#   make bench-knob KNOB=zoid/softirq_calls VALUES="1 0"   (a zoid knob)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
log="$repo/out/bench-knob"
bin=$("$here/build-guest-tool.sh" x86_64 tools/zoid/zoidbench.c)
rm -rf "$log"
env="KNOB=${KNOB:?KNOB=<treenet knob, or zoid/<knob>>} VALUES='${VALUES:?VALUES=\"a b\"}' NODES=${NODES:-ion} ROUNDS=${ROUNDS:-4} N=${N:-2000}"
rc=0
"$repo/qemu/pset" --arch x86_64 --flavor "${FLAVOR:-release}" --cns 1 --log "$log" \
  --add "$bin:/zoid/bench/zoidbench" \
  --add "$repo/qemu/guest/bench/lib.sh:/zoid/bench/lib.sh" \
  --add "$repo/qemu/guest/bench/knob-ab.sh:/zoid/bench/knob-ab.sh" \
  --ion-cmd "$env sh /zoid/bench/knob-ab.sh" --cn-cmd "$env sh /zoid/bench/knob-ab.sh" \
  --timeout 3600 "$@" || rc=$?
tr -d '\r' < "$log/cn1.console" | grep -o 'KNOB .*' | tee "$log/rounds.txt"
python3 - "$log/rounds.txt" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = dict(re.findall(r"(\S+?)=(\S+)", line))
    k = [x for x in m if x not in ("round", "ping_ns", "tcp_ns", "zoid_ns", "icmp_ns")][0]
    try:
        p, t, z = (int(m[x]) for x in ("ping_ns", "tcp_ns", "zoid_ns"))
    except (KeyError, ValueError):
        continue
    i = int(m["icmp_ns"]) if m.get("icmp_ns", "").isdigit() else 0
    rows.setdefault(f"{k}={m[k]}", []).append((p, t, z, i))
for v, rs in rows.items():
    med = lambda xs: statistics.median(xs)
    print(f"{v}: rounds={len(rs)} ping={med([r[0] for r in rs]) / 1000:.0f}us "
          f"tcp={med([r[1] for r in rs]) / 1000:.0f}us zoid={med([r[2] for r in rs]) / 1000:.0f}us "
          f"icmp={med([r[3] for r in rs]) / 1000:.0f}us "
          f"tcp/ping={med([r[1] / r[0] for r in rs]):.2f} tcp/zoid={med([r[1] / r[2] for r in rs]):.2f}")
PY
[ "$rc" = 0 ] || echo "bench-knob: the pset failed (exit $rc, consoles in $log)"
exit "$rc"
