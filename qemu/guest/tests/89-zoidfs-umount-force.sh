# Liveness with a dead ION (issue 8): the ION's zoid goes away under a
# hard mount (treenet stays up, so nothing tells the CN).  Tasks blocked on
# the mount sleep interruptibly: kill -9 ends one at once.  `umount -f`
# makes the others fail with EIO and lets the mount go, without the ION
# coming back.  Data that close() acknowledged before is still on the ION
# afterwards.  Both with the default consistency (serial) and with
# relaxed (write-back caching under a grant).  With consistency=ssi it is
# the ION's ssi that goes away (zoid stays): a read and a write wait for
# their pages' objects, which nobody grants; kill -9 and umount -f end
# those waits too (ssi polls the mount's flag), long before ssi's own
# 30 s timeout.  Data that sync acknowledged is still on the ION.
. /zoid/tests/treenet-lib.sh
Z=/sys/kernel/zoid
ZFS=/sys/kernel/zoidfs
S=/sys/kernel/ssi
X=/zfs-force-export
H=/mnt/zfs-force
cn_file=$H/kept-cn$ZOID_NODE_ID
# alive <pid>: the task still exists and is not a zombie.
alive() { [ -e /proc/$1 ] && ! grep -q '^[0-9]* ([^)]*) Z' /proc/$1/stat 2>/dev/null; }
# gone <pid>: the task has ended.
gone() { ! alive "$1"; }
# (Barrier tags 1020-1026, 1030-1036, 1040-1046: one range per mode.)
b=1020
for mode in serial relaxed ssi; do
  opts=consistency=$mode
  [ $mode != ssi ] || opts=$opts,ssi_set=zforce
  if [ "$ZOID_ROLE" = ion ]; then
    mkdir -p $X && chmod 1777 $X && echo $X > $Z/export
    if [ $mode = ssi ]; then
      echo "define 91 zforce 64 memory" > $S/sets
      echo "written on the ION" > $X/ion-file
    fi
  fi
  barrier $((b + 0))
  if [ "$ZOID_ROLE" = cn ]; then
    echo 5000 > $Z/timeout_ms
    mkdir -p $H
    if [ $mode = ssi ]; then
      wait_for_set "91 zforce 64 memory" || exit 1
    fi
    mount -t zoidfs -o hard,timeo=20,retrans=0,$opts zoidfs $H
    echo "acknowledged by close" > $cn_file
    # consistency=ssi keeps written pages cached past close: sync sends them.
    [ $mode != ssi ] || sync
    forced0=$(counter $ZFS/stats forced)
    [ $mode != ssi ] || aborted0=$(counter $S/stats aborted)
  fi
  barrier $((b + 1))
  if [ "$ZOID_ROLE" = ion ]; then
    if [ $mode = ssi ]; then
      rmmod ssi || { echo "rmmod ssi failed on the ION"; exit 1; }
    else
      sample=
      grep -q '^zoid_sample ' /proc/modules && sample=1 && rmmod zoid_sample
      rmmod zoidfs && rmmod zoid
    fi
  fi
  barrier $((b + 2))
  if [ "$ZOID_ROLE" = cn ]; then
    # A reader, a writer and a lookup, all blocked: nobody answers.  (With
    # ssi the reader reads the ION's file: the CN still holds its own
    # file's pages; and a lookup needs no object, so it may end.)
    rfile=$cn_file
    [ $mode != ssi ] || rfile=$H/ion-file
    cat $rfile > /tmp/zff-cat.out 2>&1 &
    reader=$!
    (if dd if=/dev/zero of=$H/new-cn$ZOID_NODE_ID bs=4096 count=4 2>&1; then echo "dd ok"; else echo "dd failed"; fi) > /tmp/zff-dd.out &
    writer=$!
    (if ls -l $H/ 2>&1; then echo "ls ok"; else echo "ls failed"; fi) > /tmp/zff-ls.out &
    lister=$!
    sleep 4
    blocked="$reader $writer $lister"
    [ $mode != ssi ] || blocked="$reader $writer"
    for p in $blocked; do
      alive $p || { echo "pid $p did not block:"; cat /tmp/zff-*.out; exit 1; }
    done
    # (An ssi wait wakes every 250 ms to look at the mount's flag: a
    # sample may see it running.)
    i=0
    while state=$(awk '{ print $3 }' /proc/$reader/stat) && [ "$state" != S ]; do
      i=$((i + 1))
      [ $i -le 5 ] || { echo "the reader waits uninterruptibly ($state)"; exit 1; }
      sleep 0.1
    done
    echo "blocked reader's state: $state"
    # kill -9 ends a blocked task at once.
    kill -9 $reader
    wait_until 2 gone $reader || { echo "kill -9 left the reader blocked"; exit 1; }
    # umount -f: the others fail with EIO within a second or two; the
    # unmount itself may first find the mount busy (their open files).
    t0=$(date +%s)
    umount -f $H 2>/dev/null || true
    wait_until 5 gone $writer || { echo "umount -f left the writer blocked"; exit 1; }
    wait_until 5 gone $lister || { echo "umount -f left ls blocked"; exit 1; }
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
    if [ $mode = ssi ]; then
      [ "$(counter $S/stats aborted)" -gt "$aborted0" ] || { nonzero ssi $S/stats; exit 1; }
      echo "ssi: $(awk '$1 == "aborted" || $1 == "timeouts"' $S/stats | tr '\n' ' ')"
    else
      [ "$(counter $ZFS/stats forced)" -gt "$forced0" ] || { nonzero zoidfs $ZFS/stats; exit 1; }
    fi
    [ "$(counter $ZFS/stats forced_umounts)" -ge 1 ]
    echo "zoid client: $(awk '$1 == "aborted" || $1 == "interrupted"' $Z/stats | tr '\n' ' ')"
  fi
  if [ $mode = ssi ] && [ "$ZOID_ROLE" = cn ]; then
    # A fresh ssi everywhere (the CN's still knows the old ION's).
    rmmod ssi || { echo "rmmod ssi failed on the CN"; exit 1; }
  fi
  barrier $((b + 3))
  if [ $mode = ssi ]; then
    insmod /lib/zoid/ssi.ko
  elif [ "$ZOID_ROLE" = ion ]; then
    insmod /lib/zoid/zoid.ko export=$X test_plugins=1 && insmod /lib/zoid/zoidfs.ko
    [ -z "$sample" ] || insmod /lib/zoid/zoid_sample.ko
  fi
  barrier $((b + 4))
  if [ "$ZOID_ROLE" = cn ]; then
    # A new mount works, and the acknowledged data is there.
    [ $mode != ssi ] || opts=consistency=serial
    mount -t zoidfs -o hard,$opts zoidfs $H
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
  b=$((b + 10))
done
