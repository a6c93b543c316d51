# ssi observes fork/exec/exit through the scheduler's tracepoints
# (process_events), off at load:
# * while on, forks, execs and exits are counted;
# * a /dev/ssi fault keeps its access a while (linger_us); when the process
#   that faulted exits, the access is released at once with the probes on,
#   and lingers its full time with them off.
# * Bad values are refused.
. /zoid/tests/treenet-lib.sh
S=/sys/kernel/ssi
M=/zoid/bin/ssimap
OBJ=$((ZOID_NODE_ID + 1))
fail() { echo "$*"; echo "--- objects"; cat $S/objects; nonzero "ssi stats" $S/stats; exit 1; }
held() { awk -v o="$OBJ" '$1 == 23 && $2 == o { print $6 }' $S/objects; }

[ "$(cat $S/process_events)" = off ] || fail "process_events at load: $(cat $S/process_events)"
echo bogus > $S/process_events 2> /dev/null && fail "bogus process_events accepted"
echo 10000001 > $S/linger_us 2> /dev/null && fail "linger of more than 10 s accepted"
barrier 770
echo 5000000 > $S/linger_us
# Probes off: the access of an exited process's fault still lingers.
$M -s 23 put $OBJ 0 7 || fail "put"
[ "$(held)" = write ] || fail "probes off: the fault's access is not lingering ($(held))"
echo on > $S/process_events || fail "cannot turn process_events on"
[ "$(cat $S/process_events)" = on ] || fail "process_events: $(cat $S/process_events)"
forks=$(counter $S/stats forks); execs=$(counter $S/stats execs); exits=$(counter $S/stats exits)
for i in 1 2 3; do /bin/true; done
[ "$(counter $S/stats forks)" -ge $((forks + 3)) ] || fail "forks not counted"
[ "$(counter $S/stats execs)" -ge $((execs + 3)) ] || fail "execs not counted"
[ "$(counter $S/stats exits)" -ge $((exits + 3)) ] || fail "exits not counted"
# Probes on: the exit releases the access (well before 5 s).
released=$(counter $S/stats released_at_exit)
$M -s 23 put $OBJ 0 8 || fail "put"
i=0
while [ "$(held)" != - ]; do
  i=$((i + 1))
  [ $i -le 20 ] || fail "probes on: the access outlived its process by 2 s ($(held))"
  sleep 0.1
done
[ "$(counter $S/stats released_at_exit)" -gt "$released" ] || fail "released_at_exit not counted"
[ "$($M -s 23 get $OBJ 0)" = 8 ] || fail "object reads $($M -s 23 get $OBJ 0)"
echo off > $S/process_events
[ "$(cat $S/process_events)" = off ] || fail "process_events after off: $(cat $S/process_events)"
forks=$(counter $S/stats forks)
/bin/true
[ "$(counter $S/stats forks)" = "$forks" ] || fail "forks counted with the probes off"
echo 2000 > $S/linger_us
nonzero "ssi stats" $S/stats
barrier 771
