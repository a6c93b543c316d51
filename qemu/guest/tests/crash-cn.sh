# A CN crashes while it holds relaxed-consistency write-back data (issue 8),
# run by scripts/check.py in a pset of its own (ION + 2 CNs, this script as
# every command).  CN 1 writes a file and closes it (acknowledged: the
# close wrote it back), opens it again alone (granted: it caches) and
# appends data that stays in its page cache.  Then its power is cut
# (`@@ZOID crash`).  CN 2 opens the file: the ION's recall to CN 1 cannot
# be answered, and ends when CN 1 is declared down (peer_timeout_ms), not
# at the 30 s recall timeout.  What the others see is the file as CN 1's
# last close left it: the appended data, never acknowledged, is lost.
# CN 1 boots again and sees the same.  Meanwhile the ION ran a job with a
# rank on each CN (zoid-job run): CN 1's power cut ends it once CN 1 is
# declared down, rank 0 lost (exit 255), rank 1 killed, never a hang.
. /zoid/tests/treenet-lib.sh
unset -f stat
Z=/sys/kernel/zoid
X=/crash-cn-export
M=/mnt/zfs-crash-cn
zrel() { counter $Z/zoidfs_relaxed "$1"; }
# The two data sets, the same on every node (they are checked everywhere).
data() { i=0; while [ $i -lt 2048 ]; do printf '%s line %05d ..........\n' "$1" $i; i=$((i + 1)); done; }
data closed > /tmp/cc-closed
data cached > /tmp/cc-cached

if [ "$ZOID_ROLE" = cn ] && [ "$ZOID_NODE_ID" = 1 ] && [ "$ZOID_BOOT" -gt 1 ]; then
  # CN 1's second life: the file is as its last close left it.
  mkdir -p $M
  barrier 9723
  mount -t zoidfs -o consistency=relaxed zoidfs $M
  cmp /tmp/cc-closed $M/held || { echo "after the crash CN 1 reads another file"; exit 1; }
  umount $M
  echo "CN 1 (life $ZOID_BOOT): the file as its last close left it"
  barrier 9724
  exit 0
fi

if [ "$ZOID_ROLE" = ion ]; then
  mkdir -p $X && chmod 1777 $X && echo $X > $Z/export
  timeouts0=$(zrel recall_timeouts)
fi
barrier 9720
if [ "$ZOID_ROLE" = cn ]; then
  mkdir -p $M
  mount -t zoidfs -o consistency=relaxed zoidfs $M
fi
if [ "$ZOID_ROLE" = cn ] && [ "$ZOID_NODE_ID" = 1 ]; then
  cat /tmp/cc-closed > $M/held
  exec 3>>$M/held
  cat /tmp/cc-cached >&3
fi
barrier 9721
if [ "$ZOID_ROLE" = ion ]; then
  /zoid/bin/zoid-job run --cns 1,2 -- sleep 600 > /tmp/cc-job.out 2> /tmp/cc-job.err & job=$!
  i=0
  until grep -q ' running 2 ' $Z/launched; do
    i=$((i + 1)); [ $i -le 300 ] || { echo "the job does not run: $(cat $Z/launched)"; cat /tmp/cc-job.err; exit 1; }
    sleep 0.1
  done
fi
if [ "$ZOID_ROLE" = ion ]; then
  cmp /tmp/cc-closed $X/held || { echo "the ION does not have CN 1's closed data (or has its cached data)"; exit 1; }
  [ "$(zrel files_open)" = 1 ] || { echo "files_open $(zrel files_open)"; exit 1; }
fi
barrier 9722
if [ "$ZOID_ROLE" = cn ] && [ "$ZOID_NODE_ID" = 1 ]; then
  # Dead from now on, even before the harness kills the VM: no recall can
  # reach it.
  for l in $(ls /sys/class/net | grep -v '^lo$'); do ip link set "$l" down; done
  echo "@@ZOID crash" > /dev/console
  sleep 3600
fi
if [ "$ZOID_ROLE" = cn ]; then
  # CN 2 (and any other): once CN 1 is gone, the open waits for its
  # recall, which ends when CN 1 is declared down.
  sleep 2
  t0=$(date +%s)
  cmp /tmp/cc-closed $M/held || { echo "CN $ZOID_NODE_ID reads another file"; exit 1; }
  took=$(( $(date +%s) - t0 ))
  echo "CN $ZOID_NODE_ID: the open waited ${took}s for the dead CN's recall (peer_timeout_ms $(cat $T/peer_timeout_ms)); the file is as CN 1's last close left it"
  [ $took -lt 25 ] || { echo "the open waited for the recall timeout, not for the peer down"; exit 1; }
  umount $M
fi
if [ "$ZOID_ROLE" = ion ]; then
  # CN 1's grant is gone with it (the recall was not timed out).
  i=0
  until [ "$(zrel files_open)" = 0 ]; do
    i=$((i + 1)); [ $i -le 300 ] || { echo "CN 1's open file left in the table"; cat $Z/zoidfs_relaxed; exit 1; }
    sleep 0.1
  done
  [ "$(zrel recall_timeouts)" = "$timeouts0" ] || { echo "a recall timed out"; exit 1; }
  echo "ION: $(awk '$2 != 0' $Z/zoidfs_relaxed | tr '\n' ' ')"
  # The job: over with CN 1, rank 0 lost, rank 1 killed.
  i=0
  while kill -0 $job 2> /dev/null; do
    i=$((i + 1)); [ $i -le 300 ] || { echo "the job outlived CN 1 by 30 s"; cat $Z/launched; exit 1; }
    sleep 0.1
  done
  rc=0; wait $job || rc=$?
  [ "$rc" = 255 ] || { echo "the job exited $rc, want 255"; cat /tmp/cc-job.err; exit 1; }
  grep -q 'rank 0 lost' /tmp/cc-job.err && grep -q 'rank 1 .*signal 9' /tmp/cc-job.err ||
    { echo "zoid-job did not say rank 0 was lost and rank 1 killed:"; cat /tmp/cc-job.err; exit 1; }
  echo "ION: the job ended with CN 1: $(tr '\n' ' ' < /tmp/cc-job.err)"
fi
barrier 9723
barrier 9724
if [ "$ZOID_ROLE" = ion ]; then
  cmp /tmp/cc-closed $X/held
  echo "ION: CN 1's closed data kept, its cached data lost with it, as documented"
  echo > $Z/export
  rm -rf $X
fi
