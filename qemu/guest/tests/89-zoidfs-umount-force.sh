# Liveness with a dead ION (issue 8): the ION's zoid goes away under a
# hard mount (treenet stays up, so nothing tells the CN).  Tasks blocked on
# the mount sleep interruptibly: kill -9 ends one at once.  `umount -f`
# makes the others fail with EIO and lets the mount go, without the ION
# coming back.  Data that close() acknowledged before is still on the ION
# afterwards.  Both with the default consistency (serial) and with
# relaxed (write-back caching under a grant).
. /zoid/tests/treenet-lib.sh
Z=/sys/kernel/zoid
ZFS=/sys/kernel/zoidfs
X=/zfs-force-export
H=/mnt/zfs-force
cn_file=$H/kept-cn$ZOID_NODE_ID
# alive <pid>: the task still exists and is not a zombie.
alive() { [ -e /proc/$1 ] && ! grep -q '^[0-9]* ([^)]*) Z' /proc/$1/stat 2>/dev/null; }
# gone_within <pid> <tenths>: the task ended within that time.
gone_within() {
  i=0
  while alive "$1"; do
    i=$((i + 1))
    [ $i -le "$2" ] || return 1
    sleep 0.1
  done
}
b=984
for mode in serial relaxed; do
  if [ "$ZOID_ROLE" = ion ]; then
    mkdir -p $X && chmod 1777 $X && echo $X > $Z/export
  fi
  barrier $((b + 0))
  if [ "$ZOID_ROLE" = cn ]; then
    echo 5000 > $Z/timeout_ms
    mkdir -p $H
    mount -t zoidfs -o hard,timeo=20,retrans=0,consistency=$mode zoidfs $H
    echo "acknowledged by close" > $cn_file
    forced0=$(counter $ZFS/stats forced)
  fi
  barrier $((b + 1))
  if [ "$ZOID_ROLE" = ion ]; then
    sample=
    grep -q '^zoid_sample ' /proc/modules && sample=1 && rmmod zoid_sample
    rmmod zoidfs && rmmod zoid
  fi
  barrier $((b + 2))
  if [ "$ZOID_ROLE" = cn ]; then
    # A reader, a writer and a lookup, all blocked: nobody answers.
    cat $cn_file > /tmp/zff-cat.out 2>&1 &
    reader=$!
    (if dd if=/dev/zero of=$H/new-cn$ZOID_NODE_ID bs=4096 count=4 2>&1; then echo "dd ok"; else echo "dd failed"; fi) > /tmp/zff-dd.out &
    writer=$!
    (if ls -l $H/ 2>&1; then echo "ls ok"; else echo "ls failed"; fi) > /tmp/zff-ls.out &
    lister=$!
    sleep 4
    for p in $reader $writer $lister; do
      alive $p || { echo "pid $p did not block:"; cat /tmp/zff-*.out; exit 1; }
    done
    state=$(awk '{ print $3 }' /proc/$reader/stat)
    echo "blocked reader's state: $state"
    [ "$state" = S ] || { echo "the reader waits uninterruptibly ($state)"; exit 1; }
    # kill -9 ends a blocked task at once.
    kill -9 $reader
    gone_within $reader 20 || { echo "kill -9 left the reader blocked"; exit 1; }
    # umount -f: the others fail with EIO within a second or two; the
    # unmount itself may first find the mount busy (their open files).
    t0=$(date +%s)
    umount -f $H 2>/dev/null || true
    gone_within $writer 50 || { echo "umount -f left the writer blocked"; exit 1; }
    gone_within $lister 50 || { echo "umount -f left ls blocked"; exit 1; }
    wait $writer $lister 2>/dev/null || true
    grep -q "Input/output error" /tmp/zff-dd.out || { echo "writer:"; cat /tmp/zff-dd.out; exit 1; }
    grep -q "dd failed" /tmp/zff-dd.out || { cat /tmp/zff-dd.out; exit 1; }
    i=0
    while grep -q " $H " /proc/mounts; do
      umount -f $H 2>/dev/null || true
      i=$((i + 1))
      [ $i -le 20 ] || { echo "$H still mounted"; exit 1; }
      sleep 0.5
    done
    took=$(( $(date +%s) - t0 ))
    echo "umount -f ($mode): blocked tasks failed and the mount went away in ${took}s"
    [ $took -le 15 ]
    [ "$(counter $ZFS/stats forced)" -gt "$forced0" ] || { nonzero zoidfs $ZFS/stats; exit 1; }
    [ "$(counter $ZFS/stats forced_umounts)" -ge 1 ]
    echo "zoid client: $(awk '$1 == "aborted" || $1 == "interrupted"' $Z/stats | tr '\n' ' ')"
  fi
  barrier $((b + 3))
  if [ "$ZOID_ROLE" = ion ]; then
    insmod /lib/zoid/zoid.ko export=$X && insmod /lib/zoid/zoidfs.ko
    [ -z "$sample" ] || insmod /lib/zoid/zoid_sample.ko
  fi
  barrier $((b + 4))
  if [ "$ZOID_ROLE" = cn ]; then
    # A new mount works, and the acknowledged data is there.
    mount -t zoidfs -o hard,consistency=$mode zoidfs $H
    [ "$(cat $cn_file)" = "acknowledged by close" ] || { echo "lost: $cn_file"; exit 1; }
    umount $H
    echo 30000 > $Z/timeout_ms
  fi
  barrier $((b + 5))
  if [ "$ZOID_ROLE" = ion ]; then
    echo > $Z/export
    rm -rf $X
  fi
  barrier $((b + 6))
  b=1000
done
