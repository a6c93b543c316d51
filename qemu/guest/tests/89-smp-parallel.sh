# Both CPUs of a node at once (x86_64 psets boot 2 vCPUs; ppc32 is one
# CPU and runs the same work interleaved): on every CN, two processes per
# CPU call the ION, write and read zoidfs files of their own in each cache
# mode, and append to one shared file, all at the same time, while the
# ION's workers, receive thread and treenet's softirq answer them.
# Everything must succeed and verify: echoes byte for byte, zfsx's model of
# every file, every appended record whole and present once.  Then the
# same calls over a lossy, duplicating, reordering link (treenet's fault
# knobs on every node), and four processes a node adding to one word of
# an ssi object and to words of their own on the same page (the page
# moves between CPUs and nodes at each fault): every total exact.
. /zoid/tests/treenet-lib.sh
Z=/sys/kernel/zoid
ZC=/zoid/bin/zoidcall
X=/zfs-smp-export
M=/mnt/zfs-smp
# (A mount left behind would keep the modules from unloading.)
fail() { echo "$*"; nonzero "zoid stats" $Z/stats; nonzero "zoidfs stats" /sys/kernel/zoidfs/stats; dmesg | tail -5
         grep -q " $M " /proc/mounts && umount -f $M; exit 1; }
cpus=$(grep -c ^processor /proc/cpuinfo)
P=$((2 * cpus))
# calls <name> <echoes> <nulls>: $P processes at once each make that many
# 64 KiB echoes (through zoid-rx and the workers), then null calls
# (treenet's receive softirq), verified by zoidcall.
calls() {
  i=0; pids=""
  while [ $i -lt $P ]; do
    ( $ZC echo 65536 "$2" > /tmp/smp-$1-$i 2>&1 && $ZC null "$3" >> /tmp/smp-$1-$i 2>&1 ) & pids="$pids $!"
    i=$((i + 1))
  done
  for p in $pids; do wait $p || fail "parallel calls ($1): $(cat /tmp/smp-$1-*)"; done
}
if [ "$ZOID_ROLE" = ion ]; then
  mkdir -p $X && chmod 1777 $X && echo $X > $Z/export
fi
barrier 1130
if [ "$ZOID_ROLE" = cn ]; then
  echo "$ZOID_NODE: $cpus CPU(s), $P processes at once"
  calls plain 10 50
  mkdir -p $M
  for cache in none strict loose; do
    mount -t zoidfs -o cache=$cache zoidfs $M || fail "mount cache=$cache"
    D=$M/$ZOID_NODE-$cache
    mkdir -p $D
    # Appenders to one file, and a zfsx each on a file of its own.
    i=0; pids=""
    while [ $i -lt $P ]; do
      ( n=0; while [ $n -lt 50 ]; do printf 'p%02d r%03d %s\n' $i $n "0123456789abcdefghijklmnopqrstuvwxyz" >> $D/shared || exit 1; n=$((n + 1)); done ) & pids="$pids $!"
      /zoid/bin/zfsx $D/fsx-$i $((ZFSX_OPS / 2)) $((ZOID_NODE_ID * 100 + i)) > /tmp/smp-zfsx-$i 2>&1 & pids="$pids $!"
      i=$((i + 1))
    done
    for p in $pids; do wait $p || fail "cache=$cache: a process failed: $(cat /tmp/smp-zfsx-*)"; done
    sync
    lines=$(wc -l < $D/shared)
    if [ "$lines" != $((P * 50)) ]; then
      i=0; missing=""
      while [ $i -lt $P ]; do
        n=0
        while [ $n -lt 50 ]; do
          r=$(printf 'p%02d r%03d' $i $n)
          grep -q "^$r " $D/shared || missing="$missing '$r'"
          n=$((n + 1))
        done
        i=$((i + 1))
      done
      fail "cache=$cache: $lines appended records, want $((P * 50)); missing:$missing"
    fi
    good=$(grep -c '^p[0-9][0-9] r[0-9][0-9][0-9] 0123456789abcdefghijklmnopqrstuvwxyz$' $D/shared)
    [ "$good" = "$lines" ] || fail "cache=$cache: $((lines - good)) torn records"
    dups=$(cut -d' ' -f1,2 $D/shared | sort | uniq -d | wc -l)
    [ "$dups" = 0 ] || fail "cache=$cache: $dups records twice"
    umount $M || fail "umount cache=$cache"
  done
fi
barrier 1131
if [ "$ZOID_ROLE" = ion ]; then
  # What the CNs saw is what the ION has.
  for cn in $(seq 1 "$ZOID_CNS"); do
    for cache in none strict loose; do
      [ "$(wc -l < $X/cn$cn-$cache/shared)" = $((P * 50)) ] ||
        fail "cn$cn cache=$cache: $(wc -l < $X/cn$cn-$cache/shared) records on the ION"
    done
  done
  echo > $Z/export
  rm -rf $X
fi
barrier 1132
# Calls over a faulty link, from every CPU at once.
echo 20000 > $T/drop_ppm; echo 10000 > $T/dup_ppm; echo 20000 > $T/reorder_ppm
barrier 1133
[ "$ZOID_ROLE" != cn ] || calls lossy 5 20
barrier 1134
echo 0 > $T/drop_ppm; echo 0 > $T/dup_ppm; echo 0 > $T/reorder_ppm
# ssi: every node's processes add to word 0 of object 1 of set 22, and
# each to a word of its own (offset 64 + 4 * (4 * node + process)).
S=/sys/kernel/ssi
SM=/zoid/bin/ssimap
N=100
NODES=$((ZOID_CNS + 1))
barrier 1135
i=0; pids=""
while [ $i -lt 4 ]; do
  $SM -s 22 add 1 0 $N > /dev/null & pids="$pids $!"
  $SM -s 22 add 1 $((64 + 4 * (4 * ZOID_NODE_ID + i))) $N > /dev/null & pids="$pids $!"
  i=$((i + 1))
done
for p in $pids; do wait $p || { cat $S/objects; nonzero "ssi stats" $S/stats; fail "ssimap add"; }; done
barrier 1136
got=$($SM -s 22 get 1 0)
[ "$got" = $((4 * N * NODES)) ] || fail "ssi shared word: $got, want $((4 * N * NODES))"
w=0
while [ $w -lt $((4 * NODES)) ]; do
  got=$($SM -s 22 get 1 $((64 + 4 * w)))
  [ "$got" = $N ] || fail "ssi word $w: $got, want $N"
  w=$((w + 1))
done
barrier 1137
