#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# bench-zoid, the in-guest half (scripts/bench-zoid.sh runs it on both nodes
# of a 1 ION + 1 CN pset): forwarded calls through zoid (/dev/zoid on the CN,
# ION kernel threads) against the same calls through a user-space forwarder
# over TCP (zoidbench's server on the ION, in CIOD's role), between the same
# two VMs over the same virtio link.
#
# The CN runs every measurement; the ION exports a tmpfs directory to zoid's
# unix plug-in and runs the TCP forwarder on another one (both write and
# read the file zoidbench.dat there).  The CN prints (medians of REPEAT runs
# each, zoid's and the forwarder's taken in turns):
#   BENCH <fwd>_null_rtt_us <microseconds per null call>
#   BENCH icmp_rtt_us, treenet_ping_rtt_us <microseconds per round trip>
#     (the link's floors: ICMP echo and treenet's self-test ping)
#   BENCH <fwd>_write_<size>_mbps / <fwd>_read_<size>_mbps <Mbit/s>
# where <fwd> is zoid or tcp and <size> 4k 64k 256k 1m 4m.
BIN=${ZOIDBENCH:-/zoid/bench/zoidbench}
PORT=5202
# name:size:count -- 8 MiB for 4k, 32 MiB for the others.
SIZES=${SIZES:-"4k:4096:2048 64k:65536:512 256k:262144:128 1m:1048576:32 4m:4194304:8"}
NULL_COUNT=2000
. "$(dirname "$0")/lib.sh"
[ -x "$BIN" ] || die "no zoidbench at $BIN"
[ -d "$Z" ] || die "zoid is not loaded"
bench_addresses

if [ "$ZOID_ROLE" = ion ]; then
  start_forwarder
  barrier 1                      # export and forwarder ready
  barrier 2                      # the CN is done
  wait "$server" || die "forwarder failed"
  say "zoid on the ION: $(awk '$1 == "calls_done" || $1 == "calls_inline" || $1 == "requests_mapped" || $1 == "replies_mapped" { printf "%s ", $0 }' $Z/stats)"
  exit 0
fi

barrier 1
TCP="tcp:$ION_IP:$PORT"
# Warm-up: ARP, attach, the files' pages.
"$BIN" null zoid 20 > /dev/null || fail zoid_warmup "$("$BIN" null zoid 1 2>&1)"
"$BIN" null "$TCP" 20 > /dev/null || fail tcp_warmup
# zoid's and the forwarder's runs of each measurement in turns (in_turns).
in_turns rtt "$REPEAT" zoid_null_rtt_us '"$BIN" null zoid "$NULL_COUNT"' \
  tcp_null_rtt_us '"$BIN" null "$TCP" "$NULL_COUNT"'
# The link's floors for a round trip, in turns: the kernel's ICMP echo
# (answered in the ION's receive softirq: no thread, no user space on either
# node) and treenet's self-test ping (answered there too).  Any forwarded
# call costs at least such a round trip.
in_turns rtt "$REPEAT" icmp_rtt_us 'icmp_rtt "$NULL_COUNT"' \
  treenet_ping_rtt_us 'tn_ping "$NULL_COUNT"'
for s in $SIZES; do
  split "$s"
  for op in write read; do
    in_turns tput "$REPEAT" "zoid_${op}_${name}_mbps" '"$BIN" "$op" zoid "$size" "$count"' \
      "tcp_${op}_${name}_mbps" '"$BIN" "$op" "$TCP" "$size" "$count"'
  done
done
"$BIN" quit "$TCP" || fail tcp_quit "cannot stop the forwarder"
barrier 2
exit "$failed"
