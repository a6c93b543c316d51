# `make soak` (scripts/soak.sh): minutes of mixed load through zoidfs
# (issue 8).  Every CN runs $SOAK_PROCS workers for $SOAK_SECONDS, each
# looping over metadata and data: mkdir, create and write a file of 4 to
# 64 KiB, read it back and compare, stat, rename, list, unlink, rmdir.
# Every $SOAK_INTERVAL seconds each CN prints its operations and bytes in
# that interval; at the end the last third of the run must keep at least
# half the throughput of the first third (no decay), no worker may have
# seen an error, and the harness checks for splats and leaks as always.
. /zoid/tests/treenet-lib.sh
unset -f stat
Z=/sys/kernel/zoid
X=/soak-export
M=/mnt/soak
SECONDS_=${SOAK_SECONDS:-600}
PROCS=${SOAK_PROCS:-4}
INTERVAL=${SOAK_INTERVAL:-30}

if [ "$ZOID_ROLE" = ion ]; then
  mkdir -p $X && chmod 1777 $X && echo $X > $Z/export
fi
barrier 9730
if [ "$ZOID_ROLE" = cn ]; then
  mkdir -p $M /tmp/soak
  mount -t zoidfs -o hard zoidfs $M
  for k in 1 2 4 8 16; do dd if=/dev/urandom of=/tmp/soak/src$k bs=4096 count=$k 2>/dev/null; done
  end=$(( $(date +%s) + SECONDS_ ))
  worker() { # id
    d=$M/cn$ZOID_NODE_ID-w$1
    n=0
    while [ "$(date +%s)" -lt $end ]; do
      k=$(( (n % 5) ))
      k=$(( 1 << k ))
      mkdir $d
      cp /tmp/soak/src$k $d/f
      cmp /tmp/soak/src$k $d/f
      [ "$(stat -c %s $d/f)" = $((k * 4096)) ]
      mv $d/f $d/g
      [ "$(ls $d)" = g ]
      rm $d/g
      rmdir $d
      n=$((n + 1))
      # 8 operations and 2 x k pages moved per loop.
      echo "$((k * 8192))" >> /tmp/soak/w$1.log
    done
  }
  i=1
  while [ $i -le "$PROCS" ]; do
    ( (set -e; worker $i) || echo "worker $i failed" ) > /tmp/soak/w$i.out 2>&1 &
    i=$((i + 1))
  done
  # The monitor: loops and bytes per interval, from the workers' logs.
  t=0; prev_loops=0; prev_bytes=0
  : > /tmp/soak/intervals
  while [ "$(date +%s)" -lt $end ]; do
    sleep "$INTERVAL"
    t=$((t + INTERVAL))
    loops=$(cat /tmp/soak/w*.log 2>/dev/null | wc -l)
    bytes=$(cat /tmp/soak/w*.log 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
    dl=$((loops - prev_loops)); db=$((bytes - prev_bytes))
    echo "$t $dl $db" >> /tmp/soak/intervals
    echo "soak cn$ZOID_NODE_ID t=${t}s loops=$dl ops/s=$(awk -v l=$dl -v i=$INTERVAL 'BEGIN { printf "%.1f", l * 8 / i }') KiB/s=$(( db / 1024 / INTERVAL ))"
    prev_loops=$loops; prev_bytes=$bytes
  done
  wait
  for i in $(seq 1 "$PROCS"); do
    [ ! -s /tmp/soak/w$i.out ] || { echo "worker $i:"; cat /tmp/soak/w$i.out; exit 1; }
  done
  # No decay: the last third's operations against the first third's.
  awk '{ v[NR] = $2 } END {
         third = int(NR / 3); if (third < 1) third = 1
         for (i = 1; i <= third; i++) first += v[i]
         for (i = NR - third + 1; i <= NR; i++) last += v[i]
         printf "soak: first third %d loops, last third %d loops (ratio %.2f)\n", first, last, last / first
         exit (last * 2 < first) }' /tmp/soak/intervals
  umount $M
fi
# The ION sits the soak out before it meets the CNs: a barrier waits at
# most 600 s, the default soak's length (a soak of 600 s failed so).
[ "$ZOID_ROLE" != ion ] || sleep "$SECONDS_"
barrier 9731
if [ "$ZOID_ROLE" = ion ]; then
  left=$(find $X -mindepth 1 | wc -l)
  [ "$left" = 0 ] || { echo "soak left $left entries"; find $X | head; exit 1; }
  nonzero "zoid (ION)" $Z/stats
  echo > $Z/export
  rm -rf $X
fi
