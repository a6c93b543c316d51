#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# bench-treenet, the in-guest half (scripts/bench-treenet.sh runs it on both
# nodes of a 1 ION + 1 CN pset): treenet against TCP between the same two VMs
# over the same virtio link.  The role comes from $ZOID_ROLE.
#
# The CN is the client of every test (it sends, the ION receives); the ION
# runs the tcpbench server in the background and joins treenet barriers.  The
# CN prints one line per measurement (the median of REPEAT runs):
#   BENCH <transport>_tput_<size>_mbps <Mbit/s>   (4k 64k 256k 1m 4m)
#   BENCH <transport>_rtt_32_us <microseconds>
# where <transport> is tcp, treenet (packet_size 0: the largest frames the
# MTU allows) or treenet240 (packet_size 240, ZOID's framing).  A failed
# measurement prints BENCH-FAIL <name> <why> (and the script exits 1); when
# treenet has no /sys/kernel/treenet/selftest, BENCH-SKIP treenet... lines.
#
# IPv4 exists only for this benchmark and only on the tree links: the ION's
# link to CN k is 10.77.k.1/24, CN k is 10.77.k.2/24.  Links are found by
# their MAC (qemu/pset mac(): 52:54:00:5a:<node id>:<link index>).
BIN=${TCPBENCH:-/zoid/bench/tcpbench}
TN=${TREENET_SYSFS:-/sys/kernel/treenet}   # overridable to test this script
PORT=5201
# name:size:count -- about 16 MiB for 4k, 32 MiB for the others.
SIZES="4k:4096:4096 64k:65536:512 256k:262144:128 1m:1048576:32 4m:4194304:8"
PING_SIZE=32
PING_COUNT=2000
REPEAT=3        # each measurement is the median of this many runs (TCG is noisy)
ION_IP=10.77.1.1
CN_IP=10.77.1.2
failed=0

say() { echo "bench: $*"; }
die() { say "$*"; exit 1; }

[ "$ZOID_CNS" = 1 ] || die "run me in a 1 ION + 1 CN pset (ZOID_CNS=$ZOID_CNS)"
[ -x "$BIN" ] || die "no tcpbench at $BIN"
HAVE_TN=
[ -e "$TN/selftest" ] && HAVE_TN=1

# The netdevice whose MAC is $1.
link_by_mac() {
  for d in /sys/class/net/*; do
    [ "$(cat "$d/address")" = "$1" ] && { basename "$d"; return 0; }
  done
  return 1
}

# addr <link> <ip/len>: give the link its address (and only this one).
addr() {
  ip addr flush dev "$1" && ip addr add "$2" dev "$1" && ip link set "$1" up ||
    die "cannot set $2 on $1"
  say "$1 $(cat "/sys/class/net/$1/address") $2"
}

if [ "$ZOID_ROLE" = ion ]; then
  k=1
  while [ "$k" -le "$ZOID_CNS" ]; do
    l=$(link_by_mac "52:54:00:5a:00:$(printf %02x $((k - 1)))") || die "no link to cn$k"
    addr "$l" "10.77.$k.1/24"
    k=$((k + 1))
  done
else
  l=$(link_by_mac "52:54:00:5a:$(printf %02x "$ZOID_NODE_ID"):00") || die "no tree link"
  addr "$l" "$CN_IP/24"
fi

# barrier <tag>: wait until the ION and every CN got here (treenet only; the
# TCP client retries its connection until the server listens).
barrier() {
  [ -n "$HAVE_TN" ] || return 0
  echo "barrier $1 $ZOID_CNS" > "$TN/selftest" || die "treenet barrier $1 failed"
}

# field <name> <line>: the value of name=<value> in a result line.
field() { echo "$2" | sed -n "s/.* $1=\([0-9][0-9]*\).*/\1/p"; }

# fail <name> [why]: a measurement that did not work (why on one line).
fail() { echo "BENCH-FAIL $1 $(echo "${2:-no output}" | tr '\n' ' ')"; failed=1; }

# split <name:size:count>: sets $name, $size and $count from a SIZES entry.
split() { name=${1%%:*}; size=${1#*:}; count=${size#*:}; size=${size%%:*}; }

# value <tput|rtt> <result line>: Mbit/s of a tput/send line ($size x $count
# bytes) or the round trip in us of a ping line; fails on anything else.
value() {
  case "$1:$2" in
    "tput:ok op=tput "* | "tput:ok op=send "*)
      bytes=$(field bytes "$2"); ns=$(field ns "$2")
      [ "$bytes" = $((size * count)) ] && [ -n "$ns" ] && [ "$ns" -gt 0 ] || return 1
      awk -v b="$bytes" -v ns="$ns" 'BEGIN { printf "%.1f", b * 8000 / ns }' ;;
    "rtt:ok op=ping "*)
      rtt=$(field rtt_ns "$2")
      [ -n "$rtt" ] || return 1
      awk -v r="$rtt" 'BEGIN { printf "%.1f", r / 1000 }' ;;
    *) return 1 ;;
  esac
}

# measure <name> <tput|rtt> <command...>: runs the command REPEAT times and
# prints "BENCH <name> <median>" (the runs on a "bench:" line before it).
measure() {
  m=$1 kind=$2 runs= i=0
  shift 2
  while [ "$i" -lt "$REPEAT" ]; do
    out=$("$@" 2>&1)
    v=$(value "$kind" "$out") || { fail "$m" "$out"; return; }
    runs="$runs $v" i=$((i + 1))
  done
  say "$m runs:$runs"
  echo "BENCH $m $(echo $runs | tr ' ' '\n' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')"
}

# selftest <command>: runs one treenet self-test, prints its result line.
selftest() {
  echo "$1" > "$TN/selftest" || { echo "write '$1' failed"; return 1; }
  cat "$TN/selftest"
}

# ---- the ION: serve TCP, follow the CN through the barriers --------------------
if [ "$ZOID_ROLE" = ion ]; then
  "$BIN" server "$PORT" "$ION_IP" &
  server=$!
  barrier 1                      # addresses set, server started
  barrier 2                      # the CN finished TCP
  for ps in 0 240; do
    if [ -n "$HAVE_TN" ]; then
      echo "$ps" > "$TN/packet_size" || say "cannot set packet_size $ps"
    fi
    barrier "3$ps"               # both nodes use this packet size
    barrier "4$ps"               # the CN finished its treenet tests
  done
  wait "$server" || die "tcpbench server failed"
  exit 0
fi

# ---- the CN: every measurement ----------------------------------------------------
barrier 1
# TCP.  A short warm-up first (ARP, and the server may still be starting).
"$BIN" ping "$ION_IP" "$PORT" "$PING_SIZE" 20 > /dev/null || fail tcp_warmup
for s in $SIZES; do
  split "$s"
  measure "tcp_tput_${name}_mbps" tput "$BIN" tput "$ION_IP" "$PORT" "$size" "$count"
done
measure "tcp_rtt_${PING_SIZE}_us" rtt "$BIN" ping "$ION_IP" "$PORT" "$PING_SIZE" "$PING_COUNT"
"$BIN" quit "$ION_IP" "$PORT" || fail tcp_quit "cannot stop the server"
barrier 2

# treenet, both framings.
for ps in 0 240; do
  t=treenet; [ "$ps" = 0 ] || t=treenet$ps
  if [ -z "$HAVE_TN" ]; then
    echo "BENCH-SKIP $t no $TN/selftest"
    continue
  fi
  echo "$ps" > "$TN/packet_size" || fail "${t}_packet_size" "cannot set packet_size $ps"
  barrier "3$ps"
  selftest "ping 0 $PING_SIZE 20" > /dev/null || fail "${t}_warmup"
  for s in $SIZES; do
    split "$s"
    # "sink": the receiver answers without re-checking the pattern, as the
    # TCP server does (every frame is still checksummed by treenet).
    measure "${t}_tput_${name}_mbps" tput selftest "sink 0 $size $count"
  done
  if [ "$ps" = 0 ]; then
    # The eager path: no rendezvous round trip (ack_threshold=0, sender side).
    echo 0 > "$TN/ack_threshold"
    split "1m:1048576:32"
    measure "treenet_eager_tput_1m_mbps" tput selftest "sink 0 $size $count"
    echo 16 > "$TN/ack_threshold"
  fi
  measure "${t}_rtt_${PING_SIZE}_us" rtt selftest "ping 0 $PING_SIZE $PING_COUNT"
  barrier "4$ps"
done
exit "$failed"
