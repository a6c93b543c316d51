# Job hooks: CN processes register a job; the ION runs its job script once
# at the first start (1) and once at the last end (0), with the job's
# description in ZOID_JOB_*, as the job's owner (the CN's root, squashed
# to 65534); only a CN's root starts a job, and values a shell would run
# as commands are refused; a process that dies ends its part of the job.
. /zoid/tests/treenet-lib.sh
Z=/sys/kernel/zoid
ZC=/zoid/bin/zoidcall
LOG=/tmp/zoid-jobs.log
# logged <count> <pattern>: waits (up to 30 s) until the job log has exactly
# <count> lines matching <pattern> (notices of ended processes are async).
logged() {
  for _ in $(seq 30); do
    [ "$(grep -c "$2" $LOG 2>/dev/null)" = "$1" ] && return 0
    sleep 1
  done
  echo "job log: want $1 x '$2'"; cat $LOG; cat $Z/jobs; return 1
}

if [ "$ZOID_ROLE" = ion ]; then
  cat > /tmp/job.sh <<'SCRIPT'
#!/bin/sh
echo "$1 id=$ZOID_JOB_ID exec=$ZOID_JOB_EXEC args=$ZOID_JOB_ARGS global=$ZOID_JOB_GLOBAL_SIZE local=$ZOID_JOB_LOCAL_SIZE mode=$ZOID_JOB_MODE uid=$(id -u)" >> /tmp/zoid-jobs.log
[ "$ZOID_JOB_ID" != 13 ]   # job 13's script fails
SCRIPT
  chmod 755 /tmp/job.sh
  rm -f $LOG
  ! echo relative.sh > $Z/job_script 2>/dev/null || { echo "should have failed: echo relative.sh > \$Z/job_script"; exit 1; }
  echo /tmp/job.sh > $Z/job_script
  [ "$(cat $Z/job_script)" = /tmp/job.sh ]
fi
barrier 840
if [ "$ZOID_ROLE" = cn ]; then
  $ZC job hold 42 /bin/app "-n 4" 8 4 SMP 10 > /tmp/job42.out & holder=$!
fi
barrier 841
if [ "$ZOID_ROLE" = ion ]; then
  # The script runs as the job's owner: the CN's root, squashed.
  logged 1 '^1 id=42 exec=/bin/app args=-n 4 global=8 local=4 mode=SMP uid=65534$'
  logged 0 '^0 id=42 '
fi
barrier 842
if [ "$ZOID_ROLE" = cn ]; then
  wait $holder
  grep -q "^job 42 ended" /tmp/job42.out || { cat /tmp/job42.out; exit 1; }
  out=$($ZC job end 42) && { echo "end of a job not started: $out"; exit 1; }
  echo "$out" | grep -q "(2)$"      # ENOENT
  # A failing start script fails the start with EIO.
  out=$($ZC job start 13 /bin/x "" 1 1 VN) && { echo "job 13: $out"; exit 1; }
  echo "$out" | grep -q "(5)$"
  # Only a CN's root starts a job; a value with which a shell would run a
  # command never reaches the script.
  cp /etc/passwd /tmp/passwd.jobs
  echo "u1001:x:1001:1001::/:/bin/sh" >> /etc/passwd
  mode=$(/bin/busybox stat -c %a /dev/zoid)
  chmod 666 /dev/zoid
  out=$(su -s /bin/sh u1001 -c "$ZC job start 14 /bin/x '' 1 1 VN") && { echo "job 14 as u1001: $out"; exit 1; }
  chmod "$mode" /dev/zoid
  cp /tmp/passwd.jobs /etc/passwd
  echo "$out" | grep -q "(1)$" || { echo "job 14 as u1001: $out"; exit 1; }
  for bad in '$(reboot)' '`reboot`' 'a;reboot' "$(printf 'a\nb')"; do
    out=$($ZC job start 15 /bin/x "$bad" 1 1 VN) && { echo "job 15 with args $bad: $out"; exit 1; }
    echo "$out" | grep -q "(22)$" || { echo "job 15 with args $bad: $out"; exit 1; }
  done
fi
barrier 843
if [ "$ZOID_ROLE" = ion ]; then
  logged 1 '^0 id=42 '
  logged 0 ' id=1[45] '
  grep -q "^running 0" $Z/jobs
fi
barrier 844
if [ "$ZOID_ROLE" = cn ]; then
  # A job whose process is killed: the ION ends its part.
  $ZC job hold 77 /bin/crash "" 2 1 SMP 60 > /dev/null & victim=$!
  sleep 3
  kill -9 $victim; wait $victim 2>/dev/null || true
fi
barrier 845
if [ "$ZOID_ROLE" = ion ]; then
  logged 1 '^1 id=77 '
  logged 1 '^0 id=77 '
  echo > $Z/job_script
fi
barrier 846
