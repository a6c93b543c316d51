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
fi
barrier 881
if [ "$ZOID_ROLE" = ion ]; then
  [ "$(counter $Z/calls sample.upper)" -ge $((2 * ZOID_CNS)) ] || { cat $Z/calls; exit 1; }
  # Switched off like any plug-in, then unloaded: its id is free again.
  echo -sample > $Z/modules
  grep -q "^sample 16 off$" $Z/modules
  rmmod zoid_sample
  ! grep -q "^sample " $Z/modules || { echo "should have failed: grep -q '^sample ' \$Z/modules"; exit 1; }
fi
barrier 882
if [ "$ZOID_ROLE" = cn ]; then
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
