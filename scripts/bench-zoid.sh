#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make bench-zoid`: forwarded calls through zoid against a user-space
# forwarder over TCP (the CIOD baseline, tools/zoid/zoidbench.c) between the
# same two VMs (1 ION + 1 CN, x86_64 release kernel) over the same link.
#
#   scripts/bench-zoid.sh [extra qemu/pset options]
#
# Boots the pset with qemu/guest/bench/zoid.sh on both nodes, collects the
# `BENCH <name> <value>` lines from out/bench-zoid/<node>.console, prints a
# table and, last, one line per comparison:
#   RATIO zoid_vs_tcp_null_rtt <tcp us / zoid us>
#   RATIO zoid_vs_tcp_write_<size> / zoid_vs_tcp_read_<size> <zoid / tcp Mbit/s>
# A value > 1 means zoid did better.  Exits non-zero if the pset failed or a
# measurement is missing (what exists is printed anyway).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
log="$repo/out/bench-zoid"

bin=$("$here/build-guest-tool.sh" x86_64 tools/zoid/zoidbench.c)
rm -rf "$log"   # stale consoles would give stale numbers
rc=0
"$repo/qemu/pset" --arch x86_64 --flavor release --cns 1 --log "$log" \
  --add "$bin:/zoid/bench/zoidbench" \
  --add "$repo/qemu/guest/bench/lib.sh:/zoid/bench/lib.sh" \
  --add "$repo/qemu/guest/bench/zoid.sh:/zoid/bench/zoid.sh" \
  --ion-cmd 'sh /zoid/bench/zoid.sh' --cn-cmd 'sh /zoid/bench/zoid.sh' \
  --timeout 1200 "$@" || rc=$?
echo
[ "$rc" = 0 ] || echo "bench-zoid: the pset failed (exit $rc, consoles in $log)"

cat "$log"/*.console 2>/dev/null | tr -d '\r' | awk '
  $1 == "BENCH" && NF == 3 { v[$2] = $3 }
  $1 == "BENCH-FAIL" { notes[++nn] = $0 }
  function cell(k) { need(k); return (k in v) ? v[k] : "-" }
  function need(k) { if (!(k in v) && !(k in seen)) { seen[k] = 1; missing[++nm] = k } }
  function ratio(name, a, b) {
    if ((a in v) && (b in v) && v[a] > 0 && v[b] > 0) printf "RATIO %s %.2f\n", name, v[a] / v[b]
    else printf "RATIO %s n/a\n", name
  }
  END {
    ns = split("4k 64k 256k 1m 4m", S, " ")
    printf "%-22s %12s %12s\n", "test", "zoid", "tcp"
    printf "%-22s %12s %12s\n", "null call us", cell("zoid_null_rtt_us"), cell("tcp_null_rtt_us")
    printf "%-22s %12s %12s\n", "floor: icmp, ping us", cell("icmp_rtt_us"), cell("treenet_ping_rtt_us")
    for (i = 1; i <= ns; i++)
      for (o = 1; o <= 2; o++) {
        op = (o == 1) ? "write" : "read"
        printf "%-22s %12s %12s\n", op " " S[i] " Mbit/s", cell("zoid_" op "_" S[i] "_mbps"),
          cell("tcp_" op "_" S[i] "_mbps")
      }
    for (i = 1; i <= nn; i++) print notes[i]
    # What the null-call goal (1.5 times lower latency than the forwarder)
    # asks, against the round trips nothing forwarded can beat.
    if (("tcp_null_rtt_us" in v) && ("icmp_rtt_us" in v) && ("treenet_ping_rtt_us" in v))
      printf "null-call goal: 1.5x the forwarder needs <= %.0f us; floors: ICMP echo %.0f us, treenet ping %.0f us\n",
        v["tcp_null_rtt_us"] / 1.5, v["icmp_rtt_us"], v["treenet_ping_rtt_us"]
    for (i = 1; i <= nm; i++) print "bench-zoid: missing " missing[i]
    ratio("zoid_vs_tcp_null_rtt", "tcp_null_rtt_us", "zoid_null_rtt_us")
    for (i = 1; i <= ns; i++)
      for (o = 1; o <= 2; o++) {
        op = (o == 1) ? "write" : "read"
        ratio("zoid_vs_tcp_" op "_" S[i], "zoid_" op "_" S[i] "_mbps", "tcp_" op "_" S[i] "_mbps")
      }
    exit nm > 0
  }' || rc=1
exit "$rc"
