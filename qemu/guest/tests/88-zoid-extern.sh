# A plug-in in its own module (zoid_sample.ko, plug-in ABI): loaded on the
# ION at run time, called by the CNs, unloaded while zoid stays.
. /zoid/tests/treenet-lib.sh
Z=/sys/kernel/zoid
ZC=/zoid/bin/zoidcall
zdiag() { nonzero "zoid stats" $Z/stats; cat $Z/modules; }

echo 600000 > $Z/timeout_ms
if [ "$ZOID_ROLE" = ion ]; then
  # Whatever happens, leave zoid free of users for the suite's unload.
  trap 'rmmod zoid_sample 2>/dev/null || true' EXIT
  ! grep -q "^sample " $Z/modules || { echo "should have failed: grep -q '^sample ' \$Z/modules"; exit 1; }
  insmod /lib/zoid/zoid_sample.ko
  grep -q "^sample 16 on$" $Z/modules || { zdiag; exit 1; }
fi
barrier 880
if [ "$ZOID_ROLE" = cn ]; then
  text="hello from cn$ZOID_NODE_ID"
  out=$($ZC upper "$text") || { zdiag; exit 1; }
  [ "$out" = "upper HELLO FROM CN$ZOID_NODE_ID ret ${#text}" ] || { echo "$out"; exit 1; }
  $ZC upper "" | grep -qx "upper  ret 0"
  # Deferred replies through the plug-in ABI (zoid_defer): two calls of
  # this CN meet; the first waits holding no worker, answered by the second.
  $ZC meet "7$ZOID_NODE_ID" sample > /tmp/meet-first & first=$!
  sleep 1
  out=$($ZC meet "7$ZOID_NODE_ID" sample) || { echo "$out"; zdiag; exit 1; }
  wait $first || { cat /tmp/meet-first; zdiag; exit 1; }
  [ "$out" = "meet partner $ZOID_NODE_ID" ] && grep -qx "meet partner $ZOID_NODE_ID" /tmp/meet-first ||
    { echo "meet: '$out' and '$(cat /tmp/meet-first)'"; exit 1; }
  # One left waiting: the module's unload answers it ECANCELED.
  $ZC meet "99$ZOID_NODE_ID" sample > /tmp/meet-left 2>&1 & left=$!
  sleep 1
fi
barrier 881
if [ "$ZOID_ROLE" = ion ]; then
  [ "$(counter $Z/calls sample.upper)" -ge $((2 * ZOID_CNS)) ] || { cat $Z/calls; exit 1; }
  # (The meets left waiting may arrive after the barrier.)
  counter_reaches $Z/calls sample.meet $((3 * ZOID_CNS)) || { cat $Z/calls; exit 1; }
  [ "$(counter $Z/stats deferred_replies)" -ge "$ZOID_CNS" ] || { zdiag; exit 1; }
  # Switched off like any plug-in, then unloaded: its id is free again.
  echo -sample > $Z/modules
  grep -q "^sample 16 off$" $Z/modules
  rmmod zoid_sample
  ! grep -q "^sample " $Z/modules || { echo "should have failed: grep -q '^sample ' \$Z/modules"; exit 1; }
fi
barrier 882
if [ "$ZOID_ROLE" = cn ]; then
  if wait $left; then echo "a meet left waiting succeeded: $(cat /tmp/meet-left)"; exit 1; fi
  grep -q "(125)\$" /tmp/meet-left || { echo "a meet left waiting: $(cat /tmp/meet-left)"; exit 1; }
  expect_fail 38 $ZC upper gone     # ENOSYS: no such plug-in any more
fi
barrier 883
if [ "$ZOID_ROLE" = ion ]; then
  # Loaded again (a new registration), then unloaded for good: the suite's
  # own unload at the end needs zoid free of users.
  insmod /lib/zoid/zoid_sample.ko
  grep -q "^sample 16 on$" $Z/modules
  rmmod zoid_sample
fi
barrier 884
