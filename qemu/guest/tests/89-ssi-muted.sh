# ssi never waits for a node that acknowledges nothing (ssi/backlog.rs;
# docs/reliability.md, "A hostile CN").  CN 1's kernel acknowledges
# nothing (treenet's mute_acks) while it sends the ION 8000 self-test
# messages, whose answers fill the ION's treenet queue to it, then asks
# the ION for new objects of set 60 from 16 tasks, each giving up after
# 3 s (a signal) and asking for the next: every copy the ION owes CN 1
# finds its queue full.  Meanwhile:
# * the ION's ssi threads wait for nothing: its messages to CN 1 wait in
#   the backlog (sends_deferred), treenet's send_stalls stays put; with
#   max_backlog_per_node at its 64 KiB minimum, what waits for CN 1 is
#   dropped past it (backlog_dropped) and never weighs more;
# * CN 2 reads new objects of set 61 and writes others (each a copy or
#   ownership from the ION), each access answered within 20 s.  (With
#   blocking sends, ssi_rx waited 4 x peer_timeout_ms for each copy to
#   CN 1, and CN 2's accesses with it.)
# Once CN 1 acknowledges again, the ION's backlog and treenet queue to it
# drain and CN 1's accesses are answered, an object CN 2 owns included.
# Bad values of the knob are refused.
. /zoid/tests/treenet-lib.sh
[ "${ZOID_CNS:-1}" -ge 2 ] || exit 0
S=/sys/kernel/ssi
MUTED=60
FLOOD=8000
TASKS=16
DEFAULT=8388608
SMALLEST=65536
fail() { echo "$*"; nonzero "ssi stats" $S/stats; echo "--- backlog"; cat $S/backlog
         nonzero "treenet stats" $T/stats; exit 1; }
sstat() { counter $S/stats "$1"; }
tstat() { counter $T/stats "$1"; }
uptime_s() { cut -d. -f1 /proc/uptime; }
refused() { if (echo "$1" > $S/max_backlog_per_node) 2> /dev/null; then fail "accepted: max_backlog_per_node $1"; fi; }
# backlog_to <node>: the bytes waiting for it in this node's ssi backlog.
backlog_to() { awk -v n="$1" '$1 == n { b = $3 } END { print b + 0 }' $S/backlog; }
# queued <node>: the bytes queued for a neighbour (treenet's peers).
queued() { awk -v n="$1" '$1 == n { print $8 }' $T/peers; }

if [ "$ZOID_ROLE" = ion ]; then
  [ "$(cat $S/max_backlog_per_node)" = $DEFAULT ] || fail "max_backlog_per_node: $(cat $S/max_backlog_per_node)"
  refused $((SMALLEST - 1))
  refused 1073741825
  refused -1
  refused many
  [ "$(cat $S/max_backlog_per_node)" = $DEFAULT ] || fail "a refused value changed the knob"
  # CN 1's heartbeats wait behind its own flood in its treenet queue:
  # the failure detector, which would declare it dead and rebuild, waits
  # out the window (a rebuild with a node that takes nothing is
  # 89-ssi-membership's and the coordinator's business, not this test's).
  hb0=$(cat $S/heartbeat_timeout_ms)
  # Back to the defaults whatever happens.
  trap 'echo $DEFAULT > $S/max_backlog_per_node; echo $hb0 > $S/heartbeat_timeout_ms' EXIT
  echo 600000 > $S/heartbeat_timeout_ms
  echo $SMALLEST > $S/max_backlog_per_node || fail "max_backlog_per_node $SMALLEST"
fi
barrier 1170
if [ "$ZOID_ROLE" = ion ]; then
  stalls0=$(tstat send_stalls)
  refused0=$(tstat handler_sends_refused)
  deferred0=$(sstat sends_deferred)
  dropped0=$(sstat backlog_dropped)
  # (Before the barrier: CN 1's flood starts right after it.)
  ok0=$(sed -n 's/.*received_ok \([0-9]*\).*/\1/p' $T/selftest_events)
fi
barrier 1171
# CN 1 is muted from here until it has handed its flood to treenet and
# then asked for objects for MUTED seconds (its ION can tell it nothing
# meanwhile, not even a barrier's release): the ION and CN 2 check what
# they check within that time.
if [ "$ZOID_NODE_ID" = 1 ]; then
  sent0=$(tstat msgs_sent)
  # (Acknowledging again whatever happens: the tests that follow need it.)
  trap 'echo 0 > $T/mute_acks' EXIT
  echo 1 > $T/mute_acks
  echo "send 0 64 $FLOOD" > $T/selftest 2> /dev/null & sender=$!
  flood_sent() { [ "$(tstat msgs_sent)" -ge $((sent0 + FLOOD)) ]; }
  wait_until 300 flood_sent || fail "CN 1 sent $(( $(tstat msgs_sent) - sent0 )) of its $FLOOD messages"
  end=$(( $(uptime_s) + MUTED - 5 ))
  t=1
  while [ $t -le $TASKS ]; do
    ( o=$((t * 100000))
      while [ "$(uptime_s)" -lt $end ]; do
        timeout 3 sh -c "echo '60 $o' > $S/read" 2> /dev/null || :
        o=$((o + 1))
      done ) &
    t=$((t + 1))
  done
  sleep $MUTED
  echo 0 > $T/mute_acks
  trap - EXIT
  kill $sender 2> /dev/null || :
  wait
fi
if [ "$ZOID_ROLE" = ion ]; then
  flood_in() {
    [ "$(sed -n 's/.*received_ok \([0-9]*\).*/\1/p' $T/selftest_events)" -ge $((ok0 + FLOOD)) ]
  }
  wait_until 300 flood_in || fail "CN 1's flood did not arrive: $(cat $T/selftest_events)"
  [ "$(tstat handler_sends_refused)" -gt "$refused0" ] ||
    { diag; fail "the flood filled no queue: handler_sends_refused $(tstat handler_sends_refused)"; }
  # While CN 1 asks: what waits for it stays within the knob.
  end=$(( $(uptime_s) + MUTED - 5 ))
  most=0
  while [ "$(uptime_s)" -lt $end ]; do
    b=$(backlog_to 1)
    [ "$b" -le $SMALLEST ] || fail "the backlog to CN 1 holds $b bytes, over $SMALLEST"
    [ "$b" -le $most ] || most=$b
    sleep 1
  done
  deferred=$(( $(sstat sends_deferred) - deferred0 ))
  dropped=$(( $(sstat backlog_dropped) - dropped0 ))
  echo "CN 1 muted: ssi messages deferred $deferred, dropped $dropped, at most $most bytes waiting for it"
  [ $deferred -gt 0 ] || fail "no ssi message waited for CN 1"
  [ $dropped -gt 0 ] || fail "nothing waiting for CN 1 was dropped past max_backlog_per_node"
  # ssi_rx sending a copy to CN 1 would have waited 4 x peer_timeout_ms
  # for room, and failed: none waits.
  [ "$(tstat send_stalls)" = "$stalls0" ] ||
    fail "a thread of the ION waited for muted CN 1: send_stalls $stalls0 -> $(tstat send_stalls)"
fi
# ssi_rx does not stall behind CN 1: CN 2's reads and writes of new
# objects (a copy or ownership from the ION each) are answered all along.
if [ "$ZOID_NODE_ID" = 2 ]; then
  end=$(( $(uptime_s) + MUTED ))
  n=0
  while [ "$(uptime_s)" -lt $end ]; do
    n=$((n + 1))
    timeout 20 sh -c "echo '61 $n' > $S/read" || fail "CN 2's read of object $n while CN 1 was muted"
    w=$((100000 + n))
    timeout 20 sh -c "echo '61 $w 1' > $S/add" || fail "CN 2's write of object $w while CN 1 was muted"
    [ "$(cat $S/add)" = "61 $w 1" ] || fail "set 61 object $w: $(cat $S/add), want 1"
    sleep 1
  done
  echo "cn2: $n rounds of reads and writes answered while CN 1 was muted"
fi
barrier 1172
# CN 1 acknowledges again: what waited for it goes, and its accesses are
# answered (a new object; the ones whose copies were dropped may wait on).
if [ "$ZOID_ROLE" = ion ]; then
  echo $DEFAULT > $S/max_backlog_per_node || fail "max_backlog_per_node back to $DEFAULT"
  echo $hb0 > $S/heartbeat_timeout_ms
  trap - EXIT
  drained() { [ "$(backlog_to 1)" = 0 ] && [ "$(queued 1)" = 0 ]; }
  wait_until 60 drained || fail "once CN 1 acks: $(backlog_to 1) bytes wait in the backlog, $(queued 1) in treenet's queue"
fi
if [ "$ZOID_NODE_ID" = 1 ]; then
  again() { (echo "60 0" > $S/read) 2> /dev/null; }
  wait_until 90 again || fail "CN 1's accesses once it acks again"
  echo "61 100001 1" > $S/add || fail "CN 1's write of an object CN 2 owns"
  [ "$(cat $S/add)" = "61 100001 2" ] || fail "set 61 object 100001: $(cat $S/add), want 2"
fi
barrier 1173
nonzero "ssi stats" $S/stats
