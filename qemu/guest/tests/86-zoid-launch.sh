# Jobs the ION launches on its CNs (ZOID_IOC_JOB_RUN, tools/zoid/zoid-job.c);
# the ION runs every job, the CNs wait at the barriers:
# * output: a job on every CN, 2 ranks each, prints one line per rank to
#   stdout and one to stderr: each arrives once, tagged "[R] ", on its own
#   stream, with ZOID_JOB_RANK/GLOBAL_SIZE/LOCAL_SIZE right and ZOID_JOB_ID
#   the id -v printed; a partial line is held until its end (with a
#   newline added at the rank's end); --output writes raw files, 0644;
# * exit codes: rank 1 exits 3 -> 3, rank 1 named; rank 0 killed by
#   SIGKILL -> 137; a program that does not exist -> 127, the runner's
#   message on the rank's stderr;
#   a CN that does not exist and a bad option are refused (1, 2);
# * stdin: rank 0 gets zoid-job's stdin (--stdin all: every rank; none:
#   end-of-file at once);
# * stopping: `zoid-job kill ID` ends a running job (143), SIGINT to
#   zoid-job does (130) and the job leaves /sys/kernel/zoid/launched; a user
#   cannot kill root's job (EPERM), root's `kill ID KILL` can (137); no
#   rank is left on a CN;
# * owners: uid 1000 cannot launch as root (EPERM, exit 1); its jobs run
#   as 1000 on the CNs;
# * job scripts: job_script then $HOME/zoid-user-script.sh, with 1 before
#   the ranks and 0 after them, as the owner, with ZOID_JOB_* and USER,
#   HOME, SHELL, PATH; a failing start script refuses the launch;
# * --stage: a program only the ION has goes to the CNs by f2cn and runs;
# * volume: MIB MiB (50; 16 under KASAN) from every rank with --output
#   into FIFOs, checked by md5, while the ION holds at most 2 stream
#   windows per rank (stream_held_peak in launch_stats);
# * counters: jobs_launched rose by the jobs launched, output_bytes by at
#   least the bytes received.
. /zoid/tests/treenet-lib.sh
Z=/sys/kernel/zoid
# The launched jobs and their counters (job-spec.md's jobs and jobs_stats;
# jobs is the job hooks' file).
JOBS=$Z/launched
JSTATS=$Z/launch_stats
ZJ=/zoid/bin/zoid-job
W=/tmp/zoid-launch
CNS=${ZOID_CNS:-1}
FIRST=1
# The ranks' shell pipelines find busybox's applets whatever PATH the
# kernel gives a job that names none.
P="--env PATH=/bin:/sbin:/usr/bin:/usr/sbin"
jstat() { counter $JSTATS "$1"; }
# The launched jobs: "<id> uid <uid> ranks <n> running <n> ... <program>".
jobs_listed() { grep -E '^[0-9]+ uid [0-9]+ ranks ' $JOBS || true; }
listed() { jobs_listed | grep -q "^$1 "; }
not_listed() { ! listed "$1"; }
running_all() { jobs_listed | grep -q "^$1 uid [0-9]* ranks $2 running $2 "; }
# count <fixed line> <file>: how often the file has exactly that line.
count() { grep -cxF -- "$1" "$2" || true; }
jdiag() {
  echo "--- launched"; cat $JOBS 2>&1
  nonzero "launch_stats" $JSTATS
  nonzero "zoid stats" $Z/stats
  dmesg | tail -5
}
# (The reason goes last: a report keeps a failed test's last lines.)
fail() { jdiag; echo "$*"; exit 1; }
# job_id <stderr file>: the id -v printed ("zoid-job: job ID, N ranks").
job_id() { sed -n 's/^zoid-job: job \([0-9]*\), [0-9]* ranks$/\1/p' "$1"; }
job_ranks() { sed -n 's/^zoid-job: job [0-9]*, \([0-9]*\) ranks$/\1/p' "$1"; }
# sleeps_left: this CN's processes of the sleeping jobs (sleep 601..603).
sleeps_left() {
  for _c in /proc/[0-9]*/cmdline; do
    tr '\0' ' ' < "$_c" 2>/dev/null | grep -q '^[^ ]*sleep 60[1-3] $' && echo "${_c%/cmdline}"
  done
  true
}
no_sleeps_left() { [ -z "$(sleeps_left)" ]; }

cleanup() {
  [ ! -e $W/passwd ] || cp $W/passwd /etc/passwd
  [ -z "$devmode" ] || chmod "$devmode" /dev/zoid
}
devmode=
trap cleanup EXIT

if [ "$ZOID_ROLE" = ion ]; then
  [ -x $ZJ ] || fail "$ZJ is missing (scripts/check.py adds it)"
  [ -r $JSTATS ] && [ -r $JOBS ] || fail "no $JSTATS or $JOBS"
  rm -rf $W && mkdir -p $W
  umask 022
  launched0=$(jstat jobs_launched)
  bytes0=$(jstat output_bytes)
  [ -n "$launched0" ] && [ -n "$bytes0" ] || fail "$JSTATS lacks jobs_launched or output_bytes"
  launched=0
fi
barrier 1200

if [ "$ZOID_ROLE" = ion ]; then
  # a. Every rank's lines, tagged, each once, on their streams.
  G=$((CNS * 2))
  rc=0
  $ZJ run -v --local 2 -- sh -c \
    'echo "rank $ZOID_JOB_RANK of $ZOID_JOB_GLOBAL_SIZE local $ZOID_JOB_LOCAL_SIZE id $ZOID_JOB_ID"
     echo "err $ZOID_JOB_RANK" >&2' > $W/a.out 2> $W/a.err || rc=$?
  launched=$((launched + 1))
  show_a() { echo "--- stdout"; cat $W/a.out; echo "--- stderr"; cat $W/a.err; }
  [ $rc = 0 ] || { show_a; fail "a: a job of echoes exited $rc"; }
  id=$(job_id $W/a.err)
  [ -n "$id" ] || { show_a; fail "a: -v printed no 'zoid-job: job ID, N ranks'"; }
  [ "$(job_ranks $W/a.err)" = $G ] || { show_a; fail "a: -v says $(job_ranks $W/a.err) ranks, want $G"; }
  r=0
  while [ $r -lt $G ]; do
    n=$(count "[$r] rank $r of $G local 2 id $id" $W/a.out)
    [ "$n" = 1 ] || { show_a; fail "a: stdout has '[$r] rank $r of $G local 2 id $id' $n times, want once"; }
    n=$(count "[$r] err $r" $W/a.err)
    [ "$n" = 1 ] || { show_a; fail "a: stderr has '[$r] err $r' $n times, want once"; }
    r=$((r + 1))
  done
  [ "$(wc -l < $W/a.out)" = $G ] || { show_a; fail "a: stdout has other lines than the ranks' $G (stderr's?)"; }
  [ "$(grep -vc '^zoid-job: ' $W/a.err)" = $G ] ||
    { show_a; fail "a: stderr has other lines than the ranks' $G (stdout's?)"; }

  # A partial line waits for its end; one without a newline at the
  # rank's end gets one.
  rc=0
  $ZJ run $P --cns $FIRST -- sh -c 'printf part; sleep 1; printf "ial\n"; printf tail; printf "no nl" >&2' \
    > $W/a2.out 2> $W/a2.err || rc=$?
  launched=$((launched + 1))
  [ $rc = 0 ] || { cat $W/a2.err; fail "a: the partial-line job exited $rc"; }
  # (tail -c 1 | wc -l: 1 if the file ends in a newline.)
  [ "$(cat $W/a2.out)" = "$(printf '[0] partial\n[0] tail')" ] && [ "$(tail -c 1 $W/a2.out | wc -l)" = 1 ] ||
    { od -c $W/a2.out | head; fail "a: partial lines: stdout is not '[0] partial', '[0] tail' (with a newline)"; }
  [ "$(cat $W/a2.err)" = "[0] no nl" ] && [ "$(tail -c 1 $W/a2.err | wc -l)" = 1 ] ||
    { od -c $W/a2.err | head; fail "a: partial line on stderr: not '[0] no nl' (with a newline)"; }

  # --output: raw files, 0644, nothing on stdout.
  mkdir $W/raw
  rc=0
  $ZJ run --cns $FIRST --output $W/raw -- sh -c 'printf "raw\nno newline"; printf e >&2' > $W/raw.stdout 2>&1 || rc=$?
  launched=$((launched + 1))
  [ $rc = 0 ] || { cat $W/raw.stdout; fail "a: the --output job exited $rc"; }
  [ ! -s $W/raw.stdout ] || { cat $W/raw.stdout; fail "a: --output printed something"; }
  printf 'raw\nno newline' > $W/raw.want
  cmp $W/raw/0.out $W/raw.want || { od -c $W/raw/0.out | head; fail "a: --output: 0.out is not the rank's raw stdout"; }
  [ "$(cat $W/raw/0.err)" = e ] || fail "a: --output: 0.err is '$(cat $W/raw/0.err)', want 'e'"
  for f in 0.out 0.err; do
    m=$(ls -l $W/raw/$f | cut -c1-10)
    [ "$m" = -rw-r--r-- ] || fail "a: --output: $f has mode $m, want -rw-r--r--"
  done
  [ "$(ls $W/raw | wc -l)" = 2 ] || fail "a: --output made other files than 0.out, 0.err: $(ls $W/raw)"

  # b. Exit codes: rank 1 exits 3.
  rc=0
  $ZJ run --local 2 -- sh -c '[ "$ZOID_JOB_RANK" != 1 ] || exit 3' > $W/b.out 2> $W/b.err || rc=$?
  launched=$((launched + 1))
  [ $rc = 3 ] || { cat $W/b.err; fail "b: zoid-job exited $rc when rank 1 exited 3, want 3"; }
  grep -q "rank 1 exited with status 3" $W/b.err || { cat $W/b.err; fail "b: stderr does not name rank 1 (status 3)"; }
  [ "$(grep -c 'rank [0-9]* ' $W/b.err)" = 1 ] || { cat $W/b.err; fail "b: stderr names other ranks than rank 1"; }

  # c. A rank killed by a signal.
  rc=0
  $ZJ run -- sh -c '[ "$ZOID_JOB_RANK" != 0 ] || kill -9 $$' > $W/c.out 2> $W/c.err || rc=$?
  launched=$((launched + 1))
  [ $rc = 137 ] || { cat $W/c.err; fail "c: zoid-job exited $rc when rank 0 was killed by SIGKILL, want 137"; }
  grep -q "rank 0 killed by signal 9" $W/c.err || { cat $W/c.err; fail "c: stderr does not say rank 0 was killed by signal 9"; }

  # g. A program that does not exist.
  rc=0
  $ZJ run --cns $FIRST -- /no/such/program > $W/g.out 2> $W/g.err || rc=$?
  launched=$((launched + 1))
  [ $rc = 127 ] || { cat $W/g.err; fail "g: zoid-job exited $rc for a program that does not exist, want 127"; }
  # (The job runner cannot execute it: it says so on the rank's stderr and
  # exits 127, as a shell does for a command it cannot find.)
  grep -q '^\[0\] zoid-job-run: /no/such/program: No such file' $W/g.err &&
    grep -q "rank 0 exited with status 127" $W/g.err ||
    { cat $W/g.err; fail "g: stderr does not say rank 0 could not execute its program"; }
  # ... a CN that does not exist (EHOSTDOWN), a bad option: nothing launched.
  rc=0
  $ZJ run --cns 4000 -- true > $W/g2.out 2>&1 || rc=$?
  [ $rc = 1 ] && grep -q "^zoid-job: .*: Host is down" $W/g2.out ||
    { cat $W/g2.out; fail "g: a job on CN 4000 (none): exit $rc, want 1 and 'Host is down'"; }
  rc=0
  $ZJ run --local 0 -- true > $W/g3.out 2>&1 || rc=$?
  [ $rc = 2 ] || { cat $W/g3.out; fail "g: --local 0: exit $rc, want 2 (usage)"; }

  # f. stdin: to rank 0; --stdin all: to every rank; none: end-of-file at once.
  rc=0
  printf 'hello\nworld\n' | $ZJ run --cns $FIRST -- cat > $W/f.out 2> $W/f.err || rc=$?
  launched=$((launched + 1))
  [ $rc = 0 ] || { cat $W/f.err; fail "f: cat with stdin exited $rc"; }
  [ "$(cat $W/f.out)" = "$(printf '[0] hello\n[0] world')" ] ||
    { cat $W/f.out; fail "f: stdin 'hello', 'world' did not come back as '[0] hello', '[0] world'"; }
  rc=0
  printf 'all\n' | $ZJ run --stdin all --local 2 --cns $FIRST -- cat > $W/f2.out 2> $W/f2.err || rc=$?
  launched=$((launched + 1))
  [ $rc = 0 ] && [ "$(count '[0] all' $W/f2.out)" = 1 ] && [ "$(count '[1] all' $W/f2.out)" = 1 ] &&
    [ "$(wc -l < $W/f2.out)" = 2 ] ||
    { cat $W/f2.out $W/f2.err; fail "f: --stdin all (exit $rc): not '[0] all' and '[1] all'"; }
  rc=0
  { sleep 3; echo late; } | $ZJ run --stdin none --cns $FIRST -- cat > $W/f3.out 2> $W/f3.err || rc=$?
  launched=$((launched + 1))
  [ $rc = 0 ] && [ ! -s $W/f3.out ] || { cat $W/f3.out $W/f3.err; fail "f: --stdin none (exit $rc): cat read something"; }
fi
barrier 1201

if [ "$ZOID_ROLE" = ion ]; then
  # d. zoid-job kill ends a running job.
  ( rc=0; $ZJ run -v -- sleep 601 > $W/d.out 2> $W/d.err || rc=$?; echo $rc > $W/d.rc ) &
  launched=$((launched + 1))
  wait_until 30 grep -q '^zoid-job: job ' $W/d.err || { cat $W/d.err; fail "d: no -v line in 30 s"; }
  id=$(job_id $W/d.err)
  wait_until 30 running_all "$id" $CNS || fail "d: $JOBS does not show job $id with $CNS ranks running"
  $ZJ list > $W/d.list || fail "d: zoid-job list failed"
  grep -q "^$id uid 0 ranks $CNS running $CNS .*sleep\$" $W/d.list ||
    { cat $W/d.list; fail "d: zoid-job list does not show '$id uid 0 ranks $CNS running $CNS sleep'"; }
  out=$($ZJ kill $id 2>&1) || fail "d: zoid-job kill $id: $out"
  wait_until 30 [ -s $W/d.rc ] || { cat $W/d.err; fail "d: job $id still runs 30 s after zoid-job kill"; }
  [ "$(cat $W/d.rc)" = 143 ] || { cat $W/d.err; fail "d: zoid-job run exited $(cat $W/d.rc) after kill, want 143"; }
  grep -q "rank 0 killed by signal 15" $W/d.err || { cat $W/d.err; fail "d: stderr does not say rank 0 was killed by signal 15"; }
  rc=0
  $ZJ kill 4000000000 > $W/d2.out 2>&1 || rc=$?
  [ $rc = 1 ] && grep -q "No such process" $W/d2.out || { cat $W/d2.out; fail "d: kill of no job: exit $rc, want 1 (ESRCH)"; }

  # e. SIGINT to zoid-job: forwarded, the job ends, it is forgotten.
  ( rc=0; sh -c "echo \$\$ > $W/e.pid; exec $ZJ run -v -- sleep 602" > $W/e.out 2> $W/e.err || rc=$?
    echo $rc > $W/e.rc ) &
  launched=$((launched + 1))
  # (-v is printed once zoid-job has its signal handlers.)
  wait_until 30 grep -q '^zoid-job: job ' $W/e.err || { cat $W/e.err; fail "e: no -v line in 30 s"; }
  id=$(job_id $W/e.err)
  wait_until 30 running_all "$id" $CNS || fail "e: $JOBS does not show job $id with $CNS ranks running"
  kill -INT "$(cat $W/e.pid)"
  wait_until 30 [ -s $W/e.rc ] || { cat $W/e.err; fail "e: zoid-job still runs 30 s after SIGINT"; }
  [ "$(cat $W/e.rc)" = 130 ] || { cat $W/e.err; fail "e: zoid-job exited $(cat $W/e.rc) after SIGINT, want 130"; }
  wait_until 10 not_listed "$id" || fail "e: job $id is still in $JOBS after zoid-job ended"

  # i. Owners: a user runs jobs as itself only, and kills only its own.
  cp /etc/passwd $W/passwd
  echo "u1000:x:1000:1000::/:/bin/sh" >> /etc/passwd
  devmode=$(/bin/busybox stat -c %a /dev/zoid)
  chmod 666 /dev/zoid
  rc=0
  su -s /bin/sh u1000 -c "$ZJ run --uid 0 --cns $FIRST -- id -u" > $W/i.out 2> $W/i.err || rc=$?
  [ $rc = 1 ] || { cat $W/i.out $W/i.err; fail "i: uid 1000 ran a job with --uid 0: exit $rc, want 1"; }
  grep -q "^zoid-job: .*: Operation not permitted" $W/i.err ||
    { cat $W/i.err; fail "i: uid 1000's job as root: no EPERM message"; }
  [ ! -s $W/i.out ] || { cat $W/i.out; fail "i: uid 1000's job as root printed something"; }
  rc=0
  su -s /bin/sh u1000 -c "$ZJ run $P --cns $FIRST -- sh -c 'echo \$(id -u) \$(id -g)'" > $W/i2.out 2> $W/i2.err || rc=$?
  launched=$((launched + 1))
  [ $rc = 0 ] && [ "$(cat $W/i2.out)" = "[0] 1000 1000" ] ||
    { cat $W/i2.out $W/i2.err; fail "i: uid 1000's job (exit $rc) did not run as uid 1000 gid 1000"; }
  # A job of root's: uid 1000 may not kill it; root's `kill ID KILL` does.
  ( rc=0; $ZJ run -v --cns $FIRST -- sleep 603 > $W/k.out 2> $W/k.err || rc=$?; echo $rc > $W/k.rc ) &
  launched=$((launched + 1))
  wait_until 30 grep -q '^zoid-job: job ' $W/k.err || { cat $W/k.err; fail "i: no -v line in 30 s"; }
  id=$(job_id $W/k.err)
  wait_until 30 running_all "$id" 1 || fail "i: $JOBS does not show job $id running"
  rc=0
  su -s /bin/sh u1000 -c "$ZJ kill $id" > $W/k2.out 2>&1 || rc=$?
  [ $rc = 1 ] && grep -q "Operation not permitted" $W/k2.out ||
    { cat $W/k2.out; fail "i: uid 1000 killing root's job $id: exit $rc, want 1 (EPERM)"; }
  listed "$id" || fail "i: root's job $id ended when uid 1000 tried to kill it"

  # s. ZeptoOS's job scripts: the ION runs job_script, then the owner's
  # $HOME/zoid-user-script.sh, with 1 before any rank starts and 0 after
  # the last one ended, as the owner, with the job's variables; a start
  # script that fails refuses the launch.
  script0=$(cat $Z/job_script)
  mkdir -p $W/home && chown 1000:1000 $W/home
  sed -i "s|^u1000:x:1000:1000::/:/bin/sh|u1000:x:1000:1000::$W/home:/bin/sh|" /etc/passwd
  cat > $W/admin.sh <<'EOS'
#!/bin/sh
echo "admin $1 $(id -u) $ZOID_JOB_ID $ZOID_JOB_EXEC $ZOID_JOB_ARGS $ZOID_JOB_GLOBAL_SIZE $ZOID_JOB_LOCAL_SIZE $ZOID_JOB_MODE $USER $HOME $SHELL ${PATH:+path} $ZOID_JOB_ENV" >> /tmp/zoid-launch/scripts.log
EOS
  cat > $W/home/zoid-user-script.sh <<'EOS'
#!/bin/sh
echo "user $1 $(id -u) $ZOID_JOB_ID $ZOID_JOB_EXEC $USER $HOME" >> /tmp/zoid-launch/scripts.log
EOS
  chmod 755 $W/admin.sh $W/home/zoid-user-script.sh && chown 1000 $W/home/zoid-user-script.sh
  touch $W/scripts.log && chmod 666 $W/scripts.log
  echo $W/admin.sh > $Z/job_script
  rc=0
  su -s /bin/sh u1000 -c "$ZJ run -v $P --cns $FIRST -- /bin/echo a b" > $W/s.out 2> $W/s.err || rc=$?
  launched=$((launched + 1))
  [ $rc = 0 ] && [ "$(cat $W/s.out)" = "[0] a b" ] || { cat $W/s.out $W/s.err; fail "s: the job with scripts (exit $rc)"; }
  sid=$(job_id $W/s.err)
  h=$W/home
  printf '%s\n' "admin 1 1000 $sid /bin/echo a:b 1 1 SMP u1000 $h /bin/sh path PATH=/bin:/sbin:/usr/bin:/usr/sbin:HOME=$h:USER=u1000:SHELL=/bin/sh" \
    "user 1 1000 $sid /bin/echo u1000 $h" \
    "admin 0 1000 $sid /bin/echo a:b 1 1 SMP u1000 $h /bin/sh path PATH=/bin:/sbin:/usr/bin:/usr/sbin:HOME=$h:USER=u1000:SHELL=/bin/sh" \
    "user 0 1000 $sid /bin/echo u1000 $h" > $W/scripts.want
  cmp -s $W/scripts.want $W/scripts.log || { diff $W/scripts.want $W/scripts.log; fail "s: the scripts did not run as documented"; }
  # A start script that fails: nothing is launched.
  printf '#!/bin/sh\nexit 3\n' > $W/admin.sh
  rc=0
  $ZJ run --cns $FIRST -- /bin/echo never > $W/s2.out 2> $W/s2.err || rc=$?
  [ $rc = 1 ] && ! grep -q never $W/s2.out && grep -q "Input/output error" $W/s2.err ||
    { cat $W/s2.out $W/s2.err; fail "s: a failing start script did not refuse the launch (exit $rc)"; }
  echo "$script0" > $Z/job_script
  cp $W/passwd /etc/passwd && rm $W/passwd

  # t. --stage: the program goes to the CNs by f2cn, then runs there.
  printf '#!/bin/sh\necho staged $ZOID_JOB_RANK\n' > /tmp/zoid-launch-staged
  chmod 755 /tmp/zoid-launch-staged
  rc=0
  $ZJ run --stage -v -- /tmp/zoid-launch-staged > $W/t.out 2> $W/t.err || rc=$?
  launched=$((launched + 1))
  [ $rc = 0 ] && [ "$(grep -c '^\[[0-9]*\] staged [0-9]*$' $W/t.out)" = $CNS ] &&
    grep -q "^zoid-job: staged /tmp/zoid-launch-staged (" $W/t.err ||
    { cat $W/t.out $W/t.err; fail "t: the staged program did not run on every CN (exit $rc)"; }
  chmod "$devmode" /dev/zoid && devmode=
  out=$($ZJ kill $id KILL 2>&1) || fail "i: zoid-job kill $id KILL: $out"
  wait_until 30 [ -s $W/k.rc ] || { cat $W/k.err; fail "i: job $id still runs 30 s after kill KILL"; }
  [ "$(cat $W/k.rc)" = 137 ] || { cat $W/k.err; fail "i: job $id exited $(cat $W/k.rc) after kill KILL, want 137"; }
fi
barrier 1202

rm -f /tmp/zoid-launch-staged
if [ "$ZOID_ROLE" = cn ]; then
  # The stopped jobs left nothing running here.
  wait_until 10 no_sleeps_left || {
    for p in $(sleeps_left); do echo "$p: $(tr '\0' ' ' < $p/cmdline) $(grep -E '^(State|PPid|Uid)' $p/status | tr '\n' ' ')"; done
    fail "CN $ZOID_NODE_ID: ranks of stopped jobs still run"
  }
fi
barrier 1203

# h. Volume: MIB MiB from every rank, into FIFOs (the ION keeps none of
# it), checked by md5; the ION holds at most two stream windows per rank.
MIB=50
[ -z "$KASAN" ] || MIB=16
BYTES=$((MIB * 1048576))
gen='yes "rank $ZOID_JOB_RANK of the big job, one more line" | head -c '$BYTES
if [ "$ZOID_ROLE" = ion ]; then
  mkdir $W/h
  r=0
  while [ $r -lt $CNS ]; do
    mkfifo $W/h/$r.out
    ( md5sum < $W/h/$r.out > $W/h/$r.md5.part && mv $W/h/$r.md5.part $W/h/$r.md5 ) &
    r=$((r + 1))
  done
  t0=$(cut -d. -f1 /proc/uptime)
  rc=0
  # (Under 600 s, the CNs' barrier wait: SIGTERM, forwarded, ends the job.)
  timeout 540 $ZJ run $P --output $W/h -- sh -c "$gen" > $W/h.out 2>&1 || rc=$?
  launched=$((launched + 1))
  t=$(($(cut -d. -f1 /proc/uptime) - t0))
  [ $rc = 0 ] || { cat $W/h.out; fail "h: the job of $MIB MiB per rank exited $rc after $t s, $(jstat output_bytes) output bytes in all"; }
  echo "$CNS x $MIB MiB in $t s"
  r=0
  while [ $r -lt $CNS ]; do
    wait_until 30 [ -s $W/h/$r.md5 ] || fail "h: no md5 of rank $r's output"
    want=$(ZOID_JOB_RANK=$r sh -c "$gen" | md5sum | cut -c1-32)
    got=$(cut -c1-32 $W/h/$r.md5)
    [ "$got" = "$want" ] || fail "h: rank $r's $MIB MiB: md5 $got, want $want"
    [ ! -s $W/h/$r.err ] || { head -c 300 $W/h/$r.err; fail "h: rank $r wrote to stderr"; }
    r=$((r + 1))
  done
  peak=$(jstat stream_held_peak)
  window=$(cat $Z/job_stream_window)
  [ -n "$peak" ] && [ -n "$window" ] || fail "h: no stream_held_peak in $JSTATS or no job_stream_window"
  echo "stream_held_peak $peak, job_stream_window $window"
  [ "$peak" -le $((CNS * 2 * window)) ] ||
    fail "h: the ION held $peak bytes of output, more than $CNS ranks x 2 streams x window $window"
fi
barrier 1204

if [ "$ZOID_ROLE" = ion ]; then
  # j. Counters; and no job of this test is left.
  got=$(($(jstat jobs_launched) - launched0))
  [ "$got" = $launched ] || fail "j: jobs_launched rose by $got, want $launched"
  # Received at least: h's bytes, f's 12, the --output job's 15.
  want=$((CNS * BYTES + 12 + 15))
  got=$(($(jstat output_bytes) - bytes0))
  [ "$got" -ge $want ] || fail "j: output_bytes rose by $got, want at least $want"
  [ -z "$(jobs_listed)" ] || fail "j: jobs are left in $JOBS"
  rm -rf $W
fi
barrier 1205
