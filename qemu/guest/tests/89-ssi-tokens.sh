# A hostile CN forges ssi answers to a node that waits for one (docs/ssi.md,
# "Refusals"; docs/reliability.md, "A hostile CN").  CN 2 owns object 71 1
# (value 7), then stops taking data (treenet's deaf_ppm: hellos go on, so
# it stays up) while CN 1 reads the object: CN 1's request, forwarded by
# the home to CN 2, waits.  Meanwhile CN 2's root sends CN 1 raw ssi
# messages (treenet's self-test `raw`, any bytes on ssi's channel):
# * Copy messages in its own name with contents 0x41... and a token it
#   cannot know: CN 1 takes none (bad_token counts them);
# * a Copy in the ION's name: refused before anything (forged);
# Once CN 2 listens again, it answers the forwarded request and CN 1
# reads 7, the object's value, never the forged contents.
# (Named to run after the ssi tests that check bad_token stays 0.)
. /zoid/tests/treenet-lib.sh
[ "${ZOID_CNS:-1}" -ge 2 ] || exit 0
S=/sys/kernel/ssi
SET=71
FORGED=10
fail() { echo "$*"; nonzero "ssi stats" $S/stats; echo "--- read: $(cat $S/read)"; exit 1; }
sstat() { counter $S/stats "$1"; }
# copy <node named> <token>: a Copy of object $SET 1 in the wire format of
# rust/zoid_proto/src/ssi/wire.rs (version 3, kind 3), version 9, with
# 64 bytes of 0x41, in hex.
copy() {
  printf '5353%02x%02x%08x%016x%08x%08x%016x%s' 3 3 $SET 1 "$1" 64 9 "$2"
  i=0
  while [ $i -lt 64 ]; do printf 41; i=$((i + 1)); done
}
# A token the forger cannot know (the real one is from CN 1's CRNG), as
# 16 hex digits.
token() { tr -d '-' < /proc/sys/kernel/random/uuid | cut -c1-16; }

if [ "$ZOID_ROLE" = ion ]; then
  grep -q "^$SET " $S/sets || echo "define $SET forged 64 memory" > $S/sets || fail "define set $SET"
  # CN 2's heartbeats wait while it takes no acks (treenet's window):
  # the failure detector, which would declare it dead and lose its
  # object, waits out the window.
  hb0=$(cat $S/heartbeat_timeout_ms)
  trap 'echo $hb0 > $S/heartbeat_timeout_ms' EXIT
  echo 600000 > $S/heartbeat_timeout_ms
fi
barrier 1190
if [ "$ZOID_ROLE" = cn ]; then
  wait_until 30 grep -q "^$SET forged 64 memory$" $S/sets || fail "set $SET not known here"
fi
# CN 2 owns the object: CN 1's read goes to it through the home.
[ "$ZOID_NODE_ID" = 2 ] && { echo "$SET 1 7" > $S/add || fail "CN 2's write"; }
barrier 1191
if [ "$ZOID_NODE_ID" = 1 ]; then
  bad0=$(sstat bad_token)
  forged0=$(sstat forged)
fi
if [ "$ZOID_NODE_ID" = 2 ]; then
  # The forgeries, made before CN 2 goes deaf (slow shell on ppc32).
  n=0
  while [ $n -lt $FORGED ]; do copy 2 "$(token)" > /tmp/forged-$n; n=$((n + 1)); done
  copy 0 "$(token)" > /tmp/forged-ion
fi
barrier 1192
case "$ZOID_NODE_ID" in
1)
  # CN 2 goes deaf as it leaves the barrier: ask once it surely is (the
  # request then waits at CN 2), while the forgeries come.
  sleep 1
  ( echo "$SET 1" > $S/read ) 2> /tmp/forged-read || fail "CN 1's read of $SET 1: $(cat /tmp/forged-read)"
  [ "$(cat $S/read)" = "$SET 1 7" ] || fail "CN 1 read $(cat $S/read), want $SET 1 7"
  bad=$(( $(sstat bad_token) - bad0 ))
  forged=$(( $(sstat forged) - forged0 ))
  echo "CN 1 waited for CN 2's copy: $bad forged copies refused for their token, $forged in another node's name"
  # Every forgery came while CN 1 waited (they start 2 s into CN 2's
  # deafness, 1 s after CN 1 asked): each one is refused for its token.
  [ $bad -ge $((FORGED - 2)) ] || fail "bad_token grew by $bad for $FORGED forged copies"
  [ $forged -ge 1 ] || fail "the Copy in the ION's name was not refused as forged"
  ;;
2)
  # (Listening again whatever happens: the tests that follow need it.)
  trap 'echo 0 > $T/deaf_ppm' EXIT
  echo 1000000 > $T/deaf_ppm
  sleep 2
  n=0
  while [ $n -lt $FORGED ]; do
    st raw 6 1 "$(cat /tmp/forged-$n)" > /dev/null || fail "raw Copy to CN 1"
    sleep 0.2
    n=$((n + 1))
  done
  st raw 6 1 "$(cat /tmp/forged-ion)" > /dev/null || fail "raw Copy in the ION's name"
  sleep 0.5
  echo 0 > $T/deaf_ppm
  trap - EXIT
  ;;
esac
barrier 1193
if [ "$ZOID_ROLE" = ion ]; then echo $hb0 > $S/heartbeat_timeout_ms; trap - EXIT; fi
