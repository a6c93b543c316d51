# A CN cannot end, feed or flood another CN's ranks of a launched job
# (docs/zoid.md, "Launched jobs"; docs/reliability.md, "A hostile CN").
# The ION launches a job with rank 0 on CN 1 and rank 1 on CN 2, a 64 KiB
# stream window.  CN 1's kernel then sends the ION, through treenet's
# self-test (`raw`, any bytes on zoid's channel 4):
# * an end and output for rank 1 (CN 2's): refused_foreign, the job goes on;
# * output for a job that does not exist: refused_foreign;
# * a credit for rank 0's standard input far beyond what was sent (an
#   unbounded input window): refused_overrun;
# * a launch, to the ION and to CN 2: the ION's ranks refuse it
#   (refused_foreign), the ION does not pass it to CN 2
#   (drop_relay_refused);
# * output for its own rank 0, more messages than the window allows:
#   taken until the window is full, the rest refused_overrun, so the ION
#   held at most a window for it.
# Then the job is killed: both ranks end by the signal, none of CN 1's
# forged output for rank 1 ever reached zoid-job.  Needs 2 CNs.
. /zoid/tests/treenet-lib.sh
Z=/sys/kernel/zoid
ZJ=/zoid/bin/zoid-job
[ "${ZOID_CNS:-1}" -ge 2 ] || exit 0
fail() { echo "$*"; nonzero "launch stats" $Z/launch_stats; cat /tmp/zjh-out /tmp/zjh-err 2> /dev/null; diag; exit 1; }
ls_stat() { counter $Z/launch_stats "$1"; }
# hdr KIND FUNCTION TAG PID ARG_LEN ERRNO [SEQ]: a zoid call header in hex
# (SEQ: a stream message's number, in the uid field).
hdr() { printf '01%02x00000000%04x%08x%08x%08x00000000%08x%08x' "$1" "$2" "$3" "$4" "${7:-0}" "$5" "$6"; }
JOB_LAUNCH=14 JOB_OUTPUT=15 JOB_CREDIT=17 JOB_EXIT=19

if [ "$ZOID_ROLE" = ion ]; then
  window0=$(cat $Z/job_stream_window)
  echo 65536 > $Z/job_stream_window
  trap 'echo $window0 > $Z/job_stream_window' EXIT
  foreign0=$(ls_stat refused_foreign); overrun0=$(ls_stat refused_overrun)
  relay0=$(stat drop_relay_refused)
  # Rank 0 tells CN 1 its job id (the attacker needs it).
  $ZJ run --cns 1,2 -v -- sh -c 'echo $ZOID_JOB_ID > /tmp/zjh-id; exec sleep 600' \
    > /tmp/zjh-out 2> /tmp/zjh-err & job=$!
  has_job() { grep -q '^[0-9]* uid 0 ranks 2 running 2 held_peak [0-9]* sh$' $Z/launched; }
  wait_until 30 has_job || fail "the job does not run: $(cat $Z/launched)"
fi
barrier 1220
if [ "$ZOID_ROLE" = cn ] && [ "$ZOID_NODE_ID" = 1 ]; then
  wait_until 30 [ -s /tmp/zjh-id ] || fail "rank 0 never wrote its job id"
  id=$(cat /tmp/zjh-id)
  # Another CN's rank: its end and its output.
  st raw 4 0 "$(hdr $JOB_EXIT 0 "$id" 1 12 0)000000000000000000000000" > /dev/null || fail "raw exit"
  st raw 4 0 "$(hdr $JOB_OUTPUT 1 "$id" 1 7 0)666f726765640a" > /dev/null || fail "raw output"
  # A job that does not exist.
  st raw 4 0 "$(hdr $JOB_OUTPUT 1 $((id ^ 0x40000000)) 0 1 0)78" > /dev/null || fail "raw output, no job"
  # Rank 0's input window opened wide.
  st raw 4 0 "$(hdr $JOB_CREDIT 0 "$id" 0 4 0)7fffffff" > /dev/null || fail "raw credit"
  # Launches from a CN.
  st raw 4 0 "$(hdr $JOB_LAUNCH 0 "$id" 0 0 0)" > /dev/null || fail "raw launch to the ION"
  st raw 4 2 "$(hdr $JOB_LAUNCH 0 "$id" 0 0 0)" > /dev/null || fail "raw launch to CN 2"
  # Its own rank's output, 20 one-byte messages numbered 0..19: a 64 KiB
  # window holds 15 (each costs its byte and 4 KiB), more as zoid-job
  # reads them.
  i=0
  while [ $i -lt 20 ]; do
    st raw 4 0 "$(hdr $JOB_OUTPUT 1 "$id" 0 1 0 $i)2e" > /dev/null || fail "raw output $i"
    i=$((i + 1))
  done
fi
barrier 1221
if [ "$ZOID_ROLE" = ion ]; then
  counter_reaches $Z/launch_stats refused_foreign $((foreign0 + 4)) ||
    fail "refused_foreign rose by $(($(ls_stat refused_foreign) - foreign0)), want 4"
  counter_reaches $Z/launch_stats refused_overrun $((overrun0 + 1)) ||
    fail "the credit beyond what was sent was not refused"
  got_relay() { [ "$(stat drop_relay_refused)" -ge $((relay0 + 1)) ]; }
  wait_until 10 got_relay || fail "the ION passed a CN's launch on to CN 2"
  grep -q '^[0-9]* uid 0 ranks 2 running 2 ' $Z/launched || fail "a forged end ended a rank: $(cat $Z/launched)"
  id=$(awk '{ print $1; exit }' $Z/launched)
  peak=$(awk '{ for (i = 1; i < NF; i++) if ($i == "held_peak") print $(i + 1); exit }' $Z/launched)
  $ZJ kill "$id" || fail "zoid-job kill $id"
  rc=0; wait $job || rc=$?
  [ "$rc" = 143 ] || fail "the killed job exited $rc, want 143"
  grep -q 'rank 0 .*signal 15' /tmp/zjh-err && grep -q 'rank 1 .*signal 15' /tmp/zjh-err ||
    fail "zoid-job did not say both ranks were killed"
  ! grep -q forged /tmp/zjh-out || fail "CN 1's output for CN 2's rank reached zoid-job"
  # CN 1's own output: what the window took reached zoid-job, the rest was
  # refused, and the ION never held more than the window.
  dots=$(grep '^\[0\] ' /tmp/zjh-out | tr -cd . | wc -c)
  refused=$(($(ls_stat refused_overrun) - overrun0 - 1))
  [ $((dots + refused)) = 20 ] || fail "$dots bytes of rank 0 arrived and $refused were refused, of 20"
  [ "$dots" -ge 15 ] || fail "only $dots of rank 0's 20 bytes fit a 64 KiB window"
  [ -n "$peak" ] && [ "$peak" -le 65536 ] || fail "the ION held $peak bytes of rank 0's output for a 64 KiB window"
fi
barrier 1222
if [ "$ZOID_ROLE" = cn ] && [ "$ZOID_NODE_ID" = 2 ]; then
  [ "$(ls_stat launches)" -ge 1 ] || fail "CN 2 saw no launch"
  [ "$(ls_stat refused_foreign)" = 0 ] || fail "CN 2 got a launch from CN 1"
fi
barrier 1223
