# A CN cannot pose as its ION to another CN (docs/reliability.md, "A
# hostile CN"): a zoid reply and an attach reply that one CN's kernel
# sends to the other (treenet's self-test `raw`, any bytes on any channel)
# never reach the other's zoid client, whose calls go on.
# * CNs side by side below their ION: the ION does not pass zoid messages
#   from one CN to another (treenet's drop_relay_refused).
# * CN 2 below CN 1 (ZOID_BELOW, the tree pset): the two are neighbours;
#   each zoid client takes replies from its ION alone (replies_foreign).
# Needs 2 CNs.
. /zoid/tests/treenet-lib.sh
Z=/sys/kernel/zoid
ZC=/zoid/bin/zoidcall
[ "${ZOID_CNS:-1}" -ge 2 ] || exit 0
# A reply to tag 1 of plug-in 1, and an attach reply (ZOID_WIRE_VERSION 1).
REPLY=0104000000010000000000010000000000000000000000000000000000000000
ATTACH=0102000000010000000000010000000000000000000000000000001c0000000000000000000000000000000000000000000000000000000000000000
fail() { echo "$*"; nonzero "zoid stats" $Z/stats; diag; exit 1; }
zstat() { counter $Z/stats "$1"; }
if [ "$ZOID_ROLE" = ion ]; then refused0=$(stat drop_relay_refused); fi
if [ "$ZOID_ROLE" = cn ]; then foreign0=$(zstat replies_foreign); fi
barrier 1120
if [ "$ZOID_ROLE" = cn ] && [ "$ZOID_NODE_ID" -le 2 ]; then
  other=$((3 - ZOID_NODE_ID))
  st raw 4 $other $ATTACH > /dev/null || fail "raw send of an attach reply to node $other"
  st raw 4 $other $REPLY > /dev/null || fail "raw send of a reply to node $other"
fi
barrier 1121
if [ -n "$ZOID_BELOW" ]; then
  if [ "$ZOID_ROLE" = cn ] && [ "$ZOID_NODE_ID" -le 2 ]; then
    got() { [ "$(zstat replies_foreign)" -ge $((foreign0 + 2)) ]; }
    wait_until 10 got || fail "replies_foreign rose by $(( $(zstat replies_foreign) - foreign0 )), want 2"
  fi
else
  if [ "$ZOID_ROLE" = ion ]; then
    got() { [ "$(stat drop_relay_refused)" -ge $((refused0 + 4)) ]; }
    wait_until 10 got || fail "drop_relay_refused rose by $(( $(stat drop_relay_refused) - refused0 )), want 4"
  fi
  if [ "$ZOID_ROLE" = cn ]; then
    [ "$(zstat replies_foreign)" = "$foreign0" ] || fail "CN $ZOID_NODE_ID's client saw a reply from another CN: the ION passed it on"
  fi
fi
# The victims' calls are answered as before.
if [ "$ZOID_ROLE" = cn ]; then
  out=$($ZC null 10 2>&1) || fail "null calls after the forgeries: $out"
fi
barrier 1122
