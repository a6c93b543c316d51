# A node that fails a test tells the pset (tests/run writes `abort` to the
# selftest file): the others' waits of that test, which would wait for it
# up to 600 s, fail at once with ECANCELED, and the next test starts in
# step.  Here CN 1 gives up while the ION and CN 2 wait in a barrier.
. /zoid/tests/treenet-lib.sh
barrier 570
if [ "$ZOID_NODE" = cn1 ]; then
  sleep 10
  echo abort > $T/selftest
else
  t0=$(cut -d. -f1 /proc/uptime)
  if echo "barrier 571 $ZOID_CNS" > $T/selftest 2>/dev/null; then
    echo "the barrier passed without CN 1"; exit 1
  fi
  waited=$(( $(cut -d. -f1 /proc/uptime) - t0 ))
  r=$(cat $T/selftest)
  echo "barrier without CN 1: $r after ${waited} s"
  case "$r" in *errno=-125*) ;; *) echo "not ECANCELED"; exit 1 ;; esac
  [ "$waited" -lt 120 ] || { echo "the abort took ${waited} s"; exit 1; }
fi
# The rest of this test is given up on every node: its waits fail at once.
if echo "barrier 572 $ZOID_CNS" > $T/selftest 2>/dev/null; then
  echo "a barrier of the aborted test passed"; exit 1
fi
