#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# bench-knob, the in-guest half (scripts/bench-knob.sh runs it on both nodes
# of a 1 ION + 1 CN pset): round trips with a treenet knob (or, as
# zoid/<name>, a zoid one) at each of its
# values in turns, in one pset, so that the host's drift falls on all of
# them alike.  Each round sets KNOB to every value of VALUES on the nodes
# NODES (ion, cn or both), the order reversed every other round, and the
# CN times N treenet pings of 32 bytes, N null calls through the TCP
# forwarder (zoidbench's server on the ION: the TCP peer of make
# bench-treenet's and bench-zoid's round trips), N zoid null calls and N
# ICMP echoes (busybox ping -A: the kernel's own round trip, answered in
# the ION's receive softirq, the link's floor).
# It prints one line per measurement, then per value the medians of the
# rounds and of the ratios to TCP (>1: faster than TCP).
ZB=${ZOIDBENCH:-/zoid/bench/zoidbench}
BIN=$ZB      # lib.sh's start_forwarder runs it
PORT=5202
N=${N:-2000}
ROUNDS=${ROUNDS:-4}
KNOB=${KNOB:?KNOB: a file of /sys/kernel/treenet, or zoid/<file of /sys/kernel/zoid>}
VALUES=${VALUES:?VALUES: the knob values to compare}
NODES=${NODES:-ion}
. "$(dirname "$0")/lib.sh"
bench_addresses
case "$KNOB" in zoid/*) KF=/sys/kernel/$KNOB ;; *) KF=$TN/$KNOB ;; esac
[ -w "$KF" ] || die "no knob $KF"
case "$NODES" in both | "$ZOID_ROLE") mine=1 ;; *) mine= ;; esac
[ "$ZOID_ROLE" = ion ] && start_forwarder
was=$(cat "$KF")
barrier 1
TCP="tcp:$ION_IP:$PORT"
if [ "$ZOID_ROLE" = cn ]; then
  "$ZB" null zoid 50 > /dev/null || fail zoid_warmup
  "$ZB" null "$TCP" 50 > /dev/null || fail tcp_warmup
  echo "ping 0 32 50" > "$TN/selftest" || fail ping_warmup
fi
# Every value's order in round r: as given, reversed every other round.
order() {
  if [ $(($1 % 2)) = 1 ]; then echo "$VALUES"; else echo "$VALUES" | awk '{ for (i = NF; i > 0; i--) printf "%s ", $i }'; fi
}
r=1
while [ $r -le "$ROUNDS" ]; do
  for v in $(order $r); do
    [ -n "$mine" ] && { echo "$v" > "$KF" || die "cannot set $KNOB=$v"; }
    barrier "1$r$v"
    if [ "$ZOID_ROLE" = cn ]; then
      p=$(tn_ping "$N")
      t=$("$ZB" null "$TCP" "$N")
      z=$("$ZB" null zoid "$N")
      i=$(icmp_rtt "$N")
      echo "KNOB $KNOB=$v round=$r ping_ns=$(field rtt_ns "$p") tcp_ns=$(field rtt_ns "$t") zoid_ns=$(field rtt_ns "$z") icmp_ns=$(field rtt_ns "$i")"
    fi
    barrier "2$r$v"
  done
  r=$((r + 1))
done
[ -n "$mine" ] && echo "$was" > "$KF"
if [ "$ZOID_ROLE" = cn ]; then
  "$ZB" quit "$TCP" || fail tcp_quit "cannot stop the forwarder"
else
  wait "$server" || die "forwarder failed"
fi
exit "$failed"
