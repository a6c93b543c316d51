# Last treenet test: the ION leaves (it powers off after this), and every
# CN's upper layers get a peer-down notification within peer_timeout_ms.
# ssi accesses that need the ION then fail at once (EHOSTUNREACH), for an
# object the CN knows and for a new one, instead of waiting; a /dev/ssi
# mapping gets SIGBUS.
. /zoid/tests/treenet-lib.sh
echo 2000 > $T/peer_timeout_ms
barrier 900
[ "$ZOID_ROLE" = ion ] && exit 0
# Wait until the upper layers' last word on the ION (node 0) is "down".
# (Not a count of downs: earlier flaps, a starved VM under KASAN, may have
# logged some, and selftest_events keeps only the last 64 events.)  The
# barrier's release came from the ION, so the session was up then: a down
# logged since is the ION's departure, or a flap after which the ssi
# checks below fail, since the ION answers again.
ion_down() { [ "$(grep -E '^(up|down) 0$' $T/selftest_events | tail -1)" = "down 0" ]; }
wait_until 30 ion_down || { echo "no peer-down notification after 30 s"; cat $T/peers; exit 1; }
silent=$(awk '$1 == "down" && $2 == 0 { sub("silent_ms=", "", $3); print $3 }' $T/peer_log | tail -1)
echo "ION down after ${silent} ms of silence (peer_timeout_ms=2000)"
[ "$silent" -le 3000 ]
S=/sys/kernel/ssi
if [ -e $S/add ]; then
  t0=$(date +%s)
  for cmd in "1 1 1" "9 9 1"; do
    if out=$( (echo "$cmd" > $S/add) 2>&1); then echo "ssi add '$cmd' worked without the ION"; exit 1; fi
    echo "$out" | grep -q "No route to host" || { echo "ssi add '$cmd': $out"; exit 1; }
  done
  took=$(( $(date +%s) - t0 ))
  [ "$took" -le 5 ] || { echo "ssi took $took s to fail without the ION"; exit 1; }
fi
# A mapping of an object the pset cannot serve: SIGBUS (status 135), at once.
if [ -c /dev/ssi ]; then
  t0=$(date +%s)
  if /zoid/bin/ssimap -s 9 get 10 0 2>/dev/null; then echo "ssimap read without the ION"; exit 1; else rc=$?; fi
  [ "$rc" = 135 ] || { echo "ssimap without the ION: status $rc, want 135 (SIGBUS)"; exit 1; }
  took=$(( $(date +%s) - t0 ))
  [ "$took" -le 5 ] || { echo "the fault took $took s to fail without the ION"; exit 1; }
fi
