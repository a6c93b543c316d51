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
Z=/sys/kernel/zoid
N=${N:-2000}
. "$(dirname "$0")/lib.sh"
bench_addresses
# PIGGYBACK=0: every treenet ack in a frame of its own (for comparison).
echo "${PIGGYBACK:-1}" > $TN/piggyback_acks || die "cannot set piggyback_acks"
snap() {
  {
    awk '{print "tn."$1, $2}' $TN/stats | grep -E "frames_|acks_sent|acks_piggy|kicks_saved|engine_|drive|hellos_sent|retransmits|msgs_sent|msgs_received|rx_queue"
    awk '{print "zoid."$1, $2}' $Z/stats 2>/dev/null | grep -E "calls_|direct|inline"
    for p in /proc/[0-9]*; do
      c=$(cat $p/comm 2>/dev/null) || continue
      case "$c" in treenet*|zoid*|ksoftirqd*|zoidbench|kworker*) ;; *) continue;; esac
      v=$(awk '/^voluntary_ctxt_switches/{v=$2} /^nonvoluntary_ctxt_switches/{n=$2} END{print v+n}' $p/status)
      echo "cs.$c.${p#/proc/} $v"
    done
    awk '/virtio/ {s=0; for(i=2;i<=NF;i++) if ($i ~ /^[0-9]+$/) s+=$i; print "irq."$NF, s}' /proc/interrupts
  } | sort > /tmp/snap.$1
}
delta() {
  echo "== $1 (per op, N=$N)"
  awk -v n=$N 'FNR==NR {a[$1]=$2; next} ($1 in a) {d=$2-a[$1]; if (d != 0) printf "  %-40s %8d  %.2f/op\n", $1, d, d/n}' /tmp/snap.$2 /tmp/snap.$3
}
if [ "$ZOID_ROLE" = ion ]; then
  start_forwarder
  barrier 1
  barrier 2; snap a; barrier 3; snap b; delta "ION: zoid null" a b
  barrier 4; snap a; barrier 5; snap b; delta "ION: treenet ping 32" a b
  barrier 6; snap a; barrier 7; snap b; delta "ION: tcp null" a b
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
barrier 2; run zoid_null "$BIN" null zoid "$N"; barrier 3; delta "CN: zoid null $r" a b
barrier 4; run ping sh -c "echo 'ping 0 32 $N' > $TN/selftest && cat $TN/selftest"
barrier 5; delta "CN: treenet ping $r" a b
barrier 6; run tcp_null "$BIN" null "$TCP" "$N"; barrier 7; delta "CN: tcp null $r" a b
"$BIN" quit "$TCP" || fail tcp_quit "cannot stop the forwarder"
barrier 8
exit "$failed"
