# A deeper tree (qemu/pset --below 2:1): CN 2's only link goes to CN 1,
# which relays whole messages for it both ways and passes the ION's
# broadcasts on; the ION reaches CN 2 through CN 1 (docs/treenet.md,
# "Routing").  Nothing to do in a star.
. /zoid/tests/treenet-lib.sh
case " ${ZOID_BELOW:-} " in
  *" 2:1 "*) ;;
  *) echo "not a tree with CN 2 below CN 1 (qemu/pset --below 2:1): nothing to test"; exit 0 ;;
esac
peer() { awk -v n="$1" 'NR > 1 && $1 == n' $T/peers; }
fwd0=$(stat msgs_forwarded) bcast0=$(stat bcast_received)
barrier 710
case $ZOID_NODE in
  ion)
    # CN 1 is a neighbour with one node below it; CN 2 is none of ours.
    peer 1 | awk '$5 == "up" && $9 >= 1 { ok = 1 } END { exit !ok }' ||
      { echo "CN 1 is not up with CN 2 below it:"; cat $T/peers; exit 1; }
    [ -z "$(peer 2)" ] || { echo "CN 2 is the ION's neighbour:"; cat $T/peers; exit 1; }
    # Every size through the relay, each verified by CN 2, and round trips.
    for size in $SIZES; do st send 2 $size 1 > /dev/null; done
    echo "ion -> cn2 through cn1: $(st send 2 1048576 2)"
    echo "ion <-> cn2: $(st ping 2 32 20)"
    ;;
  cn1)
    peer 2 | awk '$5 == "up" && $3 == "cn" { ok = 1 } END { exit !ok }' ||
      { echo "CN 2 is not up below CN 1:"; cat $T/peers; exit 1; }
    ;;
  cn2)
    # Its only neighbour is CN 1; everything else goes through it.
    [ "$(awk 'NR > 1' $T/peers | wc -l)" = 1 ] && peer 1 | grep -q " up " ||
      { echo "CN 2 should see CN 1 alone:"; cat $T/peers; exit 1; }
    for size in $SIZES; do st send 0 $size 1 > /dev/null; done
    echo "cn2 -> ion through cn1: $(st send 0 1048576 2)"
    ;;
esac
barrier 711
if [ "$ZOID_ROLE" = ion ]; then st send all 65536 2 > /dev/null; fi
barrier 712
case $ZOID_NODE in
  cn1)
    # Both ways, every size: at least 2 x 13 messages relayed.
    [ $(( $(stat msgs_forwarded) - fwd0 )) -ge 26 ] ||
      { echo "msgs_forwarded moved by $(( $(stat msgs_forwarded) - fwd0 ))"; nonzero stats $T/stats; exit 1; }
    ;;
  cn2)
    [ $(( $(stat bcast_received) - bcast0 )) -ge 2 ] ||
      { echo "the ION's broadcasts did not reach CN 2"; nonzero stats $T/stats; exit 1; }
    ;;
esac
[ "$(counter $T/selftest_events received_bad)" = 0 ]

# The relay loses its way to the ION (CN 1's link to it unbound for a
# while): the ION hears CN 1 and CN 2 go down; CN 2, whose neighbour CN 1
# stays up, hears its ION go down (upper layers get a peer-down for node
# 0) and cannot send to it (nothing bounces between CN 1 and CN 2); with
# the link back, everything comes up again.
# last_event <node> <up|down>: the last peer event the self-test channel
# saw for that node is this one.
last_event() { [ "$(awk -v n="$1" '$2 == n { e = $1 } END { print e }' $T/selftest_events)" = "$2" ]; }
timeout0=$(cat $T/peer_timeout_ms)
echo 3000 > $T/peer_timeout_ms
barrier 713
case $ZOID_NODE in
  cn1)
    uplink=$(awk 'NR == 1 { print $1 }' $T/links)   # (the first NIC: the parent's)
    echo "$uplink" > $T/unbind
    sleep 12
    echo "$uplink" > $T/bind
    ;;
  cn2)
    wait_until 30 last_event 0 down ||
      { echo "CN 2 was not told its ION went down"; cat $T/selftest_events; exit 1; }
    if echo "send 0 1000 1" > $T/selftest 2>/dev/null; then
      echo "a send to the lost ION succeeded"; exit 1
    fi
    echo "CN 2 without its ION: $(cat $T/selftest)"
    peer 1 | grep -q " up " || { echo "CN 1 went down for CN 2"; cat $T/peers; exit 1; }
    wait_until 60 last_event 0 up ||
      { echo "CN 2 was not told its ION came back"; cat $T/selftest_events; exit 1; }
    ;;
  ion)
    wait_until 30 last_event 2 down ||
      { echo "the ION was not told CN 2 went down"; cat $T/selftest_events; exit 1; }
    ;;
esac
barrier 714
echo "$timeout0" > $T/peer_timeout_ms
if [ "$ZOID_ROLE" = ion ]; then
  both_up() { last_event 1 up && last_event 2 up; }
  wait_until 30 both_up ||
    { echo "CN 1 or 2 not back up"; cat $T/selftest_events; exit 1; }
fi
if [ "$ZOID_NODE" = cn2 ]; then
  st send 0 65536 1 > /dev/null   # through CN 1 again
  echo "CN 2's peer events: $(tr '\n' ' ' < $T/selftest_events)"
fi
