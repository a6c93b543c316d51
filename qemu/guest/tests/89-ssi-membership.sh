# ssi membership: CN 1's ssi dies (rmmod: it stops answering without a
# word); the ION's heartbeat timeout finds it dead and the pset rebuilds.
# What another node also held survives; what only CN 1 held is reported
# lost and fails with EIO everywhere, never read back as zeros.  CN 1 then
# comes back (insmod), joins through another rebuild, and learns the loss.
# Then the ION removes CN 1 gracefully: what it owned alone is handed over
# first, nothing is lost; added back, it reads it again.  Last, the ION
# acknowledges the loss: every node forgets it and the object is created
# again.
# Every membership change is announced: /dev/ssi sends a `change` uevent
# (SSI_GENERATION on the ION, SSI_EPOCH on the CNs after a rebuild).
. /zoid/tests/treenet-lib.sh
S=/sys/kernel/ssi
fail() { echo "$*"; echo "--- members"; cat $S/members; echo "--- lost"; cat $S/lost
         echo "--- objects"; cat $S/objects; nonzero "ssi stats" $S/stats; exit 1; }
# read_is <object> <value>: set 30's object reads <value> here.
read_is() {
  echo "30 $1" > $S/read || fail "read 30 $1 failed"
  [ "$(cat $S/read)" = "30 $1 $2" ] || fail "read 30 $1: $(cat $S/read), want $2"
}
# read_lost <object>: reading set 30's object fails with EIO.
read_lost() {
  if out=$( (echo "30 $1" > $S/read) 2>&1); then fail "lost object 30 $1 read: $(cat $S/read)"; fi
  echo "$out" | grep -q "Input/output error" || fail "lost object 30 $1: $out"
}
# wait_for <pattern> <file> <what>: until a line of <file> matches (60 s).
wait_for() {
  i=0
  until grep -q "$1" "$2"; do
    i=$((i + 1)); [ $i -lt 600 ] || fail "$3"
    sleep 0.1
  done
}
wait_lost() { wait_for "^30 2$" $S/lost "object 30 2 not reported lost"; }

# ssi's threads run at nice -20 (heartbeats are not starved by a flood).
nice_is() {
  for t in ssi_rx ssi_member; do
    [ "$(thread_nice $t)" = -20 ] || fail "$1: $t at nice '$(thread_nice $t)', want -20"
  done
}
nice_is "at load"
echo 200 > $S/heartbeat_ms
echo 2000 > $S/heartbeat_timeout_ms
EV=/tmp/ssi-uevents
rm -f $EV
if [ "$ZOID_NODE_ID" != 1 ]; then
  # shellcheck disable=SC2016
  busybox uevent sh -c '[ "$DEVNAME" = ssi ] && echo "$ACTION ${SSI_GENERATION:-e$SSI_EPOCH}" >> '$EV \
    > /dev/null 2>&1 < /dev/null &
  listener=$!
  trap 'st=$?; kill $listener 2> /dev/null; exit $st' EXIT
fi
barrier 750
# Object 1: CN 1 writes, the ION reads (a copy survives CN 1).  Object 2:
# CN 1 only (dies with it).  Object 3: the ION writes, CN 1 reads.
if [ "$ZOID_NODE_ID" = 1 ]; then echo "30 1 11" > $S/add; echo "30 2 22" > $S/add; fi
barrier 751
if [ "$ZOID_ROLE" = ion ]; then echo "30 3 33" > $S/add; read_is 1 11; fi
barrier 752
[ "$ZOID_NODE_ID" = 1 ] && read_is 3 33
barrier 753
if [ "$ZOID_NODE_ID" = 1 ]; then
  rmmod ssi
else
  wait_lost
  read_lost 2
  read_is 1 11
  read_is 3 33
  [ "$(counter $S/stats rebuilds)" -ge 1 ] || fail "no rebuild counted"
  if [ "$ZOID_ROLE" = ion ]; then
    grep -q "^1 dead " $S/members || fail "node 1 not dead"
  fi
fi
barrier 754
if [ "$ZOID_NODE_ID" = 1 ]; then
  insmod /lib/zoid/ssi.ko
  nice_is "loaded again"
  echo 200 > $S/heartbeat_ms
  wait_lost
  read_lost 2
  read_is 1 11
fi
barrier 755
if [ "$ZOID_ROLE" = ion ]; then
  grep -q "^1 alive " $S/members || fail "node 1 did not join again"
fi
# Everybody writes the surviving object once more: coherence goes on.
echo "30 1 1" > $S/add
barrier 756
read_is 1 $((11 + ZOID_CNS + 1))
[ "$(counter $S/stats malformed)" = 0 ] || fail "malformed messages"
barrier 757
# Graceful removal: CN 1 owns object 4 alone; the ION removes CN 1, which
# hands it over first: nothing is lost, and CN 1's accesses fail (ENODEV)
# until the ION adds it back.
[ "$ZOID_NODE_ID" = 1 ] && echo "30 4 44" > $S/add
barrier 758
if [ "$ZOID_ROLE" = ion ]; then
  if (echo 0 > $S/remove_nodes) 2>/dev/null; then fail "the ION removed itself"; fi
  echo 1 > $S/remove_nodes
  wait_for "^1 left " $S/members "node 1 did not leave"
  read_is 4 44
  grep -q "^30 4$" $S/lost && fail "object 4 lost in a graceful removal"
fi
barrier 759
if [ "$ZOID_NODE_ID" = 1 ]; then
  if out=$( (echo "30 4" > $S/read) 2>&1); then fail "a removed node read"; fi
  echo "$out" | grep -q "No such device" || fail "removed node: $out"
fi
barrier 760
if [ "$ZOID_ROLE" = ion ]; then
  echo 1 > $S/add_nodes
  wait_for "^1 alive " $S/members "node 1 was not added back"
fi
barrier 761
if [ "$ZOID_NODE_ID" = 1 ]; then
  i=0
  until (echo "30 4" > $S/read) 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 300 ] || fail "node 1 cannot read after it was added back"
    sleep 0.1
  done
  read_is 4 44
fi
# The administrator acknowledges the loss of object 2 on the ION: every
# node forgets it, and the next access creates it again (zeros).
barrier 763
if [ "$ZOID_ROLE" = ion ]; then
  if (echo "30 1" > $S/lost) 2> /dev/null; then fail "acknowledged an object that is not lost"; fi
  echo "30 2" > $S/lost || fail "cannot acknowledge the loss of object 30 2"
else
  if (echo "30 2" > $S/lost) 2> /dev/null; then fail "a CN acknowledged a loss"; fi
fi
barrier 764
i=0
while grep -q "^30 2$" $S/lost; do
  i=$((i + 1)); [ $i -le 100 ] || fail "object 30 2 still lost after it was acknowledged"
  sleep 0.1
done
[ "$ZOID_ROLE" = ion ] && read_is 2 0
barrier 765
[ "$ZOID_ROLE" = ion ] || read_is 2 0
if [ "$ZOID_NODE_ID" != 1 ]; then
  echo "--- uevents: $(tr '\n' ' ' < $EV)"
  if [ "$ZOID_ROLE" = ion ]; then
    # The death, the rejoin, the removal and the return: generations.
    g=$(awk '$1 == "change" && $2 !~ /^e/' $EV | wc -l)
    [ "$g" -ge 4 ] || fail "$g membership uevents on the ION, want 4 or more"
    last=$(sed -n 's/^generation \([0-9]*\) .*/\1/p' $S/members)
    grep -q "^change $last$" $EV || fail "no uevent for generation $last"
  else
    g=$(grep -c "^change e" $EV || true)
    [ "$g" -ge 2 ] || fail "$g rebuild uevents on CN $ZOID_NODE_ID, want 2 or more"
  fi
fi
nonzero "ssi stats" $S/stats
echo 1000 > $S/heartbeat_ms
echo 5000 > $S/heartbeat_timeout_ms
barrier 762
