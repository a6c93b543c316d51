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
# (tcp's and treenet's throughput at each size: the median of TPUT_REPEAT
# (5) runs each, taken in turns; their round trips: the median of
# RTT_REPEAT (5) runs each, taken in turns at the end; so that both see
# the same host conditions)
# where <transport> is tcp, treenet (packet_size 0: the largest frames the
# MTU allows) or treenet240 (packet_size 240, ZOID's framing), and
# treenet_auth, treenet240_auth: the same with authenticated frames;
# treenet_crc: MTU-sized frames checksummed by CRC-32C (fast_checksum=0:
# what every frame carried before XXH64, docs/treenet.md).  A failed
# measurement prints BENCH-FAIL <name> <why> (and the script exits 1); when
# treenet has no /sys/kernel/treenet/selftest, BENCH-SKIP treenet... lines.
#
# The links' IPv4 addresses, barriers and the measurement helpers are
# lib.sh's.
BIN=${TCPBENCH:-/zoid/bench/tcpbench}
PORT=5201
# name:size:count -- about 16 MiB for 4k, 32 MiB for the others.
SIZES="4k:4096:4096 64k:65536:512 256k:262144:128 1m:1048576:32 4m:4194304:8"
PING_SIZE=32
PING_COUNT=2000
# packet_size:sealing -- plain: the checksum nodes choose (XXH64); auth: a
# key on both nodes (auth_key: SipHash-2-4 tags in place of the checksum,
# docs/treenet.md); crc: fast_checksum=0 on both nodes (CRC-32C).
VARIANTS="0:plain 240:plain 0:auth 240:auth 0:crc"
BENCH_KEY=000102030405060708090a0b0c0d0e0f
. "$(dirname "$0")/lib.sh"

# sealing plain|auth|crc: sets this node's treenet key and checksum choice.
sealing() {
  if [ -e "$TN/fast_checksum" ]; then
    if [ "$1" = crc ]; then echo 0 > "$TN/fast_checksum"; else echo 1 > "$TN/fast_checksum"; fi
  else
    [ "$1" != crc ] || return 1
  fi
  [ -e "$TN/auth_key" ] || { [ "$1" != auth ]; return; }
  if [ "$1" = auth ]; then echo "$BENCH_KEY" > "$TN/auth_key"; else echo off > "$TN/auth_key"; fi
}
[ -x "$BIN" ] || die "no tcpbench at $BIN"
bench_addresses

# Busy polling for the second set of round trips (busy_polling, lib.sh).
BUSY_POLL_US=1000

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
  barrier 2                      # the CN warmed up TCP (and, without treenet, measured it)
  k=0
  for variant in $VARIANTS; do
    k=$((k + 1))
    if [ -n "$HAVE_TN" ]; then
      echo "${variant%:*}" > "$TN/packet_size" || say "cannot set packet_size ${variant%:*}"
      sealing "${variant#*:}" || say "cannot set sealing ${variant#*:}"
    fi
    barrier "3$k"                # both nodes use this packet size and key
    barrier "4$k"                # the CN finished its treenet tests
  done
  if [ -n "$HAVE_TN" ]; then
    echo 0 > "$TN/packet_size"; sealing plain
  fi
  barrier 5                      # both back to the defaults: round trips
  barrier 6                      # the CN finished the round trips
  busy_polling "$BUSY_POLL_US"
  barrier 7                      # both poll: the same round trips again
  barrier 8
  busy_polling 0
  wait "$server" || die "tcpbench server failed"
  exit 0
fi

# ---- the CN: every measurement ----------------------------------------------------
barrier 1
# TCP.  A short warm-up first (ARP, and the server may still be starting).
"$BIN" ping "$ION_IP" "$PORT" "$PING_SIZE" 20 > /dev/null || fail tcp_warmup
# With treenet, TCP's throughput is measured in turns with treenet's
# (below); without, here.
if [ -z "$HAVE_TN" ]; then
  for s in $SIZES; do
    split "$s"
    measure "tcp_tput_${name}_mbps" tput "$BIN" tput "$ION_IP" "$PORT" "$size" "$count"
  done
fi
barrier 2

# treenet, both framings, without and with authenticated frames.
k=0
for variant in $VARIANTS; do
  k=$((k + 1))
  ps=${variant%:*}
  t=treenet; [ "$ps" = 0 ] || t=treenet$ps
  [ "${variant#*:}" = plain ] || t=${t}_${variant#*:}
  if [ -z "$HAVE_TN" ]; then
    echo "BENCH-SKIP $t no $TN/selftest"
    continue
  fi
  echo "$ps" > "$TN/packet_size" || fail "${t}_packet_size" "cannot set packet_size $ps"
  sealing "${variant#*:}" || fail "${t}_sealing" "cannot set sealing ${variant#*:}"
  barrier "3$k"
  selftest "ping 0 $PING_SIZE 20" > /dev/null || fail "${t}_warmup"
  for s in $SIZES; do
    split "$s"
    # "sink": the receiver answers without re-checking the pattern, as the
    # TCP server does (every frame is still checksummed by treenet).
    if [ "$variant" = 0:plain ]; then
      in_turns tput "${TPUT_REPEAT:-5}" \
        "tcp_tput_${name}_mbps" '"$BIN" tput "$ION_IP" "$PORT" "$size" "$count"' \
        "treenet_tput_${name}_mbps" 'selftest "sink 0 $size $count"'
    else
      measure "${t}_tput_${name}_mbps" tput selftest "sink 0 $size $count"
    fi
  done
  if [ "$variant" = 0:plain ]; then
    # The eager path: no rendezvous round trip (ack_threshold=0, sender side).
    echo 0 > "$TN/ack_threshold"
    split "1m:1048576:32"
    measure "treenet_eager_tput_1m_mbps" tput selftest "sink 0 $size $count"
    echo 16 > "$TN/ack_threshold"
  fi
  # (treenet's own round trip is measured below, in turns with TCP's.)
  [ "$t" = treenet ] || measure "${t}_rtt_${PING_SIZE}_us" rtt selftest "ping 0 $PING_SIZE $PING_COUNT"
  barrier "4$k"
done

# Round trips, TCP's and treenet's (default framing and checksum) in
# turns, RTT_REPEAT times each: a round trip is mostly time outside the
# guests (docs/treenet.md), which drifts over minutes by more than the
# difference measured, so the two are measured side by side in time.
echo 0 > "$TN/packet_size" 2>/dev/null; sealing plain 2>/dev/null
barrier 5
# round_trips <suffix>: TCP's and treenet's round trips in turns, reported
# as tcp<suffix>_rtt_32_us and treenet<suffix>_rtt_32_us.
round_trips() {
  tn='selftest "ping 0 $PING_SIZE $PING_COUNT"'
  [ -n "$HAVE_TN" ] || tn=
  in_turns rtt "${RTT_REPEAT:-5}" \
    "tcp$1_rtt_${PING_SIZE}_us" '"$BIN" ping "$ION_IP" "$PORT" "$PING_SIZE" "$PING_COUNT"' \
    "treenet$1_rtt_${PING_SIZE}_us" "$tn"
}
round_trips ""
# The same with busy polling on both nodes, for both transports (sockets:
# net.core.busy_read; treenet: busy_poll_us), BUSY_POLL_US each.
barrier 6
busy_polling "$BUSY_POLL_US"
barrier 7
round_trips _busypoll
barrier 8
busy_polling 0
"$BIN" quit "$ION_IP" "$PORT" || fail tcp_quit "cannot stop the server"
exit "$failed"
