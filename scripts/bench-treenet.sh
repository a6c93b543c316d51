#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make bench-treenet`: the in-kernel treenet transport against TCP between
# the same two VMs (1 ION + 1 CN, x86_64 release kernel) over the same virtio
# link.
#
#   scripts/bench-treenet.sh [extra qemu/pset options]
#
# Builds tools/tcpbench (static), boots the pset with qemu/guest/bench/
# treenet.sh on both nodes (the CN measures, the ION serves), collects the
# `BENCH <name> <value>` lines from out/bench-treenet/<node>.console, prints a
# table and, last, one line per comparison:
#   RATIO treenet_vs_tcp_tput_<size> <treenet/tcp>      (also treenet240_...)
#   RATIO treenet_vs_tcp_rtt_32 <tcp rtt/treenet rtt>   (also treenet240_...)
#   RATIO treenet_busypoll_vs_tcp_busypoll_rtt_32       (both busy-polling)
# A value > 1 means treenet did better.  Exits non-zero if the pset failed or
# any measurement is missing (what exists is printed anyway).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
log="$repo/out/bench-treenet"

bin=$("$here/build-guest-tool.sh" x86_64 tools/tcpbench/tcpbench.c)
rm -rf "$log"   # stale consoles would give stale numbers
rc=0
"$repo/qemu/pset" --arch x86_64 --flavor release --cns 1 --log "$log" \
  --add "$bin:/zoid/bench/tcpbench" \
  --add "$repo/qemu/guest/bench/lib.sh:/zoid/bench/lib.sh" \
  --add "$repo/qemu/guest/bench/treenet.sh:/zoid/bench/treenet.sh" \
  --ion-cmd 'sh /zoid/bench/treenet.sh' --cn-cmd 'sh /zoid/bench/treenet.sh' \
  --timeout 900 "$@" || rc=$?
echo
[ "$rc" = 0 ] || echo "bench-treenet: the pset failed (exit $rc, consoles in $log)"

# Table, notes, missing measurements, then the RATIO lines (kept last).
cat "$log"/*.console 2>/dev/null | tr -d '\r' | awk '
  $1 == "BENCH" && NF == 3 { v[$2] = $3 }
  $1 == "BENCH-SKIP" || $1 == "BENCH-FAIL" { notes[++nn] = $0 }
  function cell(k) { return (k in v) ? v[k] : "-" }
  function need(k) { if (!(k in v)) missing[++nm] = k }
  function ratio(name, a, b) {
    if ((a in v) && (b in v) && v[b] > 0) printf "RATIO %s %.2f\n", name, v[a] / v[b]
    else printf "RATIO %s n/a\n", name
  }
  END {
    ns = split("4k 64k 256k 1m 4m", S, " ")
    nt = split("tcp treenet treenet240 treenet_auth treenet240_auth treenet_crc", T, " ")
    printf "%-16s %12s %12s %12s %12s %16s %12s\n", "test", T[1], T[2], T[3], T[4], T[5], T[6]
    for (i = 1; i <= ns; i++) {
      printf "%-16s", "tput " S[i] " Mbit/s"
      for (j = 1; j <= nt; j++) {
        k = T[j] "_tput_" S[i] "_mbps"; need(k); printf " %*s", (j == 5 ? 16 : 12), cell(k)
      }
      printf "\n"
    }
    printf "%-16s", "rtt 32B us"
    for (j = 1; j <= nt; j++) { k = T[j] "_rtt_32_us"; need(k); printf " %*s", (j == 5 ? 16 : 12), cell(k) }
    printf "\n"
    printf "%-16s %12s %12s\n", "rtt busy-poll us", cell("tcp_busypoll_rtt_32_us"), cell("treenet_busypoll_rtt_32_us")
    need("tcp_busypoll_rtt_32_us"); need("treenet_busypoll_rtt_32_us")
    # ZOID flow control, both paths: rendezvous (default) vs eager (ack_threshold=0).
    printf "%-16s %12s %12s\n", "tput 1m eager", "-", cell("treenet_eager_tput_1m_mbps")
    need("treenet_eager_tput_1m_mbps")
    for (i = 1; i <= nn; i++) print notes[i]
    for (i = 1; i <= nm; i++) print "bench-treenet: missing " missing[i]
    for (i = 1; i <= ns; i++)
      for (j = 2; j <= nt; j++)
        ratio(T[j] "_vs_tcp_tput_" S[i], T[j] "_tput_" S[i] "_mbps", "tcp_tput_" S[i] "_mbps")
    ratio("treenet_eager_vs_tcp_tput_1m", "treenet_eager_tput_1m_mbps", "tcp_tput_1m_mbps")
    # What authenticated frames cost: with a key / without (1 = free).
    # What XXH64 checksums gain: XXH64 / CRC-32C (> 1: XXH64 faster).
    for (i = 1; i <= ns; i++) {
      ratio("treenet_xxh64_vs_crc_tput_" S[i], "treenet_tput_" S[i] "_mbps", "treenet_crc_tput_" S[i] "_mbps")
      ratio("treenet_auth_vs_plain_tput_" S[i], "treenet_auth_tput_" S[i] "_mbps", "treenet_tput_" S[i] "_mbps")
      ratio("treenet240_auth_vs_plain_tput_" S[i], "treenet240_auth_tput_" S[i] "_mbps", "treenet240_tput_" S[i] "_mbps")
    }
    ratio("treenet_auth_vs_plain_rtt_32", "treenet_rtt_32_us", "treenet_auth_rtt_32_us")
    for (j = 2; j <= nt; j++)
      ratio(T[j] "_vs_tcp_rtt_32", "tcp_rtt_32_us", T[j] "_rtt_32_us")
    # Both with busy polling (1000 us), and treenet polling against plain TCP.
    ratio("treenet_busypoll_vs_tcp_busypoll_rtt_32", "tcp_busypoll_rtt_32_us", "treenet_busypoll_rtt_32_us")
    ratio("treenet_busypoll_vs_tcp_rtt_32", "tcp_rtt_32_us", "treenet_busypoll_rtt_32_us")
    exit nm > 0
  }' || rc=1
exit "$rc"
