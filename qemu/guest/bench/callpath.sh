#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# bench-callpath, the in-guest half (scripts/bench-callpath.sh runs it on
# both nodes of a 1 ION + 1 CN pset): where a round trip's work goes.  The
# CN runs N zoid null calls (/dev/zoid), N treenet selftest pings of 32
# bytes, and N null calls through the TCP forwarder (zoidbench's server on
# the ION); around each, both nodes snapshot treenet's and zoid's counters,
# the context switches of treenet/zoid/softirq threads and the virtio
# interrupts, and print the differences per operation.  Counts, not times:
# they say how many frames, interrupts and thread switches one call costs.
BIN=${ZOIDBENCH:-/zoid/bench/zoidbench}
PORT=5202
N=${N:-2000}
. "$(dirname "$0")/lib.sh"
bench_addresses
# PIGGYBACK=0: every treenet ack in a frame of its own (for comparison).
echo "${PIGGYBACK:-1}" > $TN/piggyback_acks || die "cannot set piggyback_acks"
# BUSY_POLL_US: busy polling on this node, for treenet and for sockets.
busy_polling "${BUSY_POLL_US:-0}"
if [ "$ZOID_ROLE" = ion ]; then
  start_forwarder
  barrier 1
  barrier 2; snap a; barrier 3; snap b; delta "ION: zoid null" a b "$N"
  barrier 4; snap a; barrier 5; snap b; delta "ION: treenet ping 32" a b "$N"
  barrier 6; snap a; barrier 7; snap b; delta "ION: tcp null" a b "$N"
  barrier 8
  wait "$server" || die "forwarder failed"
  exit 0
fi
barrier 1
TCP="tcp:$ION_IP:$PORT"
# Warm-up: ARP, attach, the peers' windows.
"$BIN" null zoid 50 > /dev/null || fail zoid_warmup
"$BIN" null "$TCP" 50 > /dev/null || fail tcp_warmup
echo "ping 0 32 50" > $TN/selftest || fail ping_warmup
# run <name> <command...>: the command between two snapshots; its result
# line heads the differences.
run() {
  name=$1; shift
  snap a
  r=$("$@") || { fail "$name" "$r"; r="FAILED"; }
  snap b
}
barrier 2; run zoid_null "$BIN" null zoid "$N"; barrier 3; delta "CN: zoid null $r" a b "$N"
barrier 4; run ping sh -c "echo 'ping 0 32 $N' > $TN/selftest && cat $TN/selftest"
barrier 5; delta "CN: treenet ping $r" a b "$N"
barrier 6; run tcp_null "$BIN" null "$TCP" "$N"; barrier 7; delta "CN: tcp null $r" a b "$N"
"$BIN" quit "$TCP" || fail tcp_quit "cannot stop the forwarder"
barrier 8
exit "$failed"
