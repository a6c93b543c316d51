# Hostile input: CN 1 captures a few valid treenet frames, then floods its
# ION with junk, truncated, oversized, forged and bit-flipped frames and
# with replays of the captured ones, mutated, and (with 2 CNs) with the
# ION's captured hellos re-sealed in CN 2's name (tools/treenet/tnflood.c).
# The ION must keep serving: CN 2's pings are answered throughout, afterwards
# every node moves verified messages both ways, KASAN, lockdep and kmemleak stay silent (the harness checks
# the console), and the ION's counters show the drops by reason.
# FLOOD_FRAMES (environment) sets the flood's size: 2.5e5 by default
# (ppc32 with 2 CNs: 1e6 took 320 s, about 3200 frames/s), 2e4 under
# KASAN (the emulated x86_64 debug kernel takes about 1.2 ms per frame:
# 25 s); `make soak` floods 1e6 a round.  FLOOD_SEED and HOSTILE_TAG (the first of
# its 4 barrier tags) let flood-long.sh (`make soak`) run it round after
# round.
. /zoid/tests/treenet-lib.sh
frames=${FLOOD_FRAMES:-250000}
[ -z "$KASAN" ] || frames=${FLOOD_FRAMES:-20000}
tag=${HOSTILE_TAG:-772}
drops="drop_truncated drop_oversized drop_bad_version drop_bad_checksum drop_bad_kind \
drop_unknown_node drop_not_for_us drop_out_of_window drop_msg_too_long drop_reassembly \
drop_no_route drop_no_channel drop_bad_hello drop_hello_flood drop_hello_moved drop_bad_control \
duplicates"
snapshot() { for c in $drops; do echo "$c $(stat $c)"; done; }
[ "$ZOID_ROLE" = ion ] && snapshot > /tmp/hostile-before
downs=$(stat peer_down)
others=; [ "$ZOID_ROLE" = cn ] && [ "$ZOID_NODE" != cn1 ] && others=1
barrier $tag
# The ION's engine peaks, from the flood on: a session the other CNs lose
# shows there whether the ION's engine stalled (docs/reliability.md).
if [ "$ZOID_ROLE" = ion ]; then
  echo 0 > $T/peaks
  awk 'NR > 2 { print $1, $3, $11 }' /proc/net/dev > /tmp/hostile-netdev
fi
if [ -n "$others" ]; then
  # The other CNs are served while CN 1 floods: a ping a second, each
  # answered within its 10 s.
  rm -f /tmp/flood-over /tmp/flood-pings
  ( while [ ! -e /tmp/flood-over ]; do
      if st ping 0 64 1 > /dev/null 2>&1; then echo ok; else echo failed; fi >> /tmp/flood-pings
      sleep 1
    done ) &
fi
flood_from_cn1 "$frames" "${FLOOD_SEED:-7}" 3000
barrier $((tag + 1))
if [ "$ZOID_ROLE" = ion ]; then
  echo "ION engine during the flood: $(awk '{ printf "%s=%s ", $1, $2 }' $T/peaks)"
  echo "ION frames during the flood (interface rx tx):"
  awk 'NR > 2 { print $1, $3, $11 }' /proc/net/dev | while read -r dev rx tx; do
    awk -v d="$dev" -v r="$rx" -v t="$tx" '$1 == d { printf " %s %d %d", d, r - $2, t - $3 }' /tmp/hostile-netdev
  done
  echo
fi
if [ -n "$others" ]; then
  touch /tmp/flood-over; wait
  failed=$(grep -c failed /tmp/flood-pings || true)
  echo "$ZOID_NODE: $(grep -c ok /tmp/flood-pings || true) pings answered during the flood, $failed failed"
  [ "$failed" = 0 ] || { echo "$ZOID_NODE was not served during CN 1's flood"; diag; exit 1; }
fi
# Forged hellos may have restarted sessions or announced nodes that do not
# exist: give them peer_timeout_ms to settle, then everything must work.
sleep $(( $(cat $T/peer_timeout_ms) / 1000 + 2 ))
# The other CNs' sessions lived through the flood: neither the flood's
# load on the ION nor hellos in CN 2's name from CN 1's link (which must
# not move a live neighbour's session) took their ION down.
if [ -n "$others" ] && [ "$(stat peer_down)" != "$downs" ]; then
  echo "$ZOID_NODE lost its ION during CN 1's flood: peer_down $downs -> $(stat peer_down)"
  diag; exit 1
fi
barrier $((tag + 2))
if [ "$ZOID_ROLE" = ion ]; then
  for cn in $(seq 1 "$ZOID_CNS"); do
    for size in 1 4096 65536 1048576; do st send $cn $size 1 > /dev/null; done
    st ping $cn 64 10 > /dev/null
  done
else
  for size in 1 4096 65536 1048576; do st send 0 $size 1 > /dev/null; done
fi
barrier $((tag + 3))
if [ "$ZOID_ROLE" = ion ]; then
  snapshot > /tmp/hostile-after
  echo "ION drops during the flood:"
  total=0
  while read -r name after; do
    before=$(awk -v n="$name" '$1 == n { print $2 }' /tmp/hostile-before)
    d=$((after - before)); total=$((total + d))
    [ "$d" = 0 ] || printf ' %s=%s' "$name" "$d"
  done < /tmp/hostile-after
  echo; echo "total_dropped=$total"
  # Every kind of bad frame the parser sees was counted.
  for c in drop_truncated drop_oversized drop_bad_version drop_bad_checksum drop_bad_kind; do
    b=$(awk -v n="$c" '$1 == n { print $2 }' /tmp/hostile-before)
    [ "$(stat $c)" -gt "$b" ] || { echo "no $c counted"; exit 1; }
  done
  [ "$total" -gt 1000 ]
  # The hellos in CN 2's name were refused, not taken for a move.
  if [ "$ZOID_CNS" -ge 2 ]; then
    b=$(awk '$1 == "drop_hello_moved" { print $2 }' /tmp/hostile-before)
    [ "$(stat drop_hello_moved)" -gt "$b" ] || { echo "no drop_hello_moved counted"; exit 1; }
  fi
  # Forged hellos left no neighbour behind: only the real ones remain.
  pending=$(awk 'NR > 1 && $5 != "up"' $T/peers | wc -l)
  [ "$pending" = 0 ] || { echo "$pending neighbours not up left:"; cat $T/peers; exit 1; }
fi
