# `mount -t zoidfs` on every CN, in each cache mode (none, strict, loose):
# a POSIX workload on the mount gives the same results as on a local tmpfs,
# and zfsx's random read/write/truncate/mmap verifies every byte; what one
# CN did is what the others see (at once with cache=none, at the next open
# with cache=strict); cache=loose's dentries and attributes hold as long as
# its options say, and no longer once the ION lost the file; appends from
# every CN interleave whole; bad mount
# options, a missing export and a wrong ION fail cleanly; a busy mount and
# a mounted module are refused.
. /zoid/tests/treenet-lib.sh
. /zoid/tests/zoidfs-lib.sh
unset -f stat   # treenet-lib's counter helper; here stat is the command
Z=/sys/kernel/zoid
ZFS=/sys/kernel/zoidfs
X=/zfs-mount-export
M=/mnt/zoidfs
zdiag() {
  nonzero "zoid stats" $Z/stats
  nonzero "zoidfs stats" $ZFS/stats
  dmesg | grep -i zoidfs | tail -5
}

if [ "$ZOID_ROLE" = ion ]; then
  mkdir -p $X && chmod 1777 $X
  echo 600000 > $Z/timeout_ms
  echo $X > $Z/export
fi
barrier 890
if [ "$ZOID_ROLE" = cn ]; then
  mkdir -p $M
  [ -d $ZFS ] && grep -q "^connect " $ZFS/stats
  # Bad input first: nothing gets mounted.
  must_fail_mount "Unknown parameter" bogus=1
  must_fail_mount "Bad value for 'cache'" cache=sometimes
  must_fail_mount "out of range" actimeo=100000
  must_fail_mount "has no export" export=nosuch
  must_fail_mount "is not this CN's ION" ion=4000
  must_fail_mount "out of range" timeo=0
  # The real mount, with the pset's ION named explicitly.
  mount -t zoidfs -o soft,timeo=600 zoidfs $M || { zdiag; exit 1; }
  grep " $M zoidfs " /proc/mounts | grep -q "soft"
  stat -f -c '%t' $M | grep -q 7a6f6964
  # The workload on tmpfs, then on the mount in each cache mode.
  dd if=/dev/urandom of=/tmp/zfs-rand bs=4096 count=64 2>/dev/null
  mkdir /tmp/zfs-local
  # Not under -e: a failing step shows as a difference.
  (cd /tmp/zfs-local && workload) > /tmp/zfs-local.out 2>&1 || echo "exit $?" >> /tmp/zfs-local.out
  for mode in none strict loose; do
    [ $mode = none ] || { umount $M; mount -t zoidfs -o cache=$mode zoidfs $M; }
    grep " $M zoidfs " /proc/mounts | grep -q "cache=$mode"
    D=$M/cn$ZOID_NODE_ID-$mode
    mkdir $D
    (cd $D && workload) > /tmp/zfs-remote.out 2>&1 || echo "exit $?" >> /tmp/zfs-remote.out
    diff /tmp/zfs-local.out /tmp/zfs-remote.out || { echo "cache=$mode"; zdiag; exit 1; }
    /zoid/bin/zfsx $D/fsx $ZFSX_OPS $ZOID_NODE_ID > /tmp/zfsx.out ||
      { echo "zfsx cache=$mode"; zdiag; exit 1; }
    cmp $D/fsx $D/fsx   # readable after close
  done
  umount $M
  mount -t zoidfs -o soft,timeo=600 zoidfs $M
  # Busy: umount refused while a shell sits in the mount; rmmod refused.
  (cd $M && sleep 3) & sleep 1
  ! umount $M 2>/dev/null || { echo "should have failed: umount \$M"; exit 1; }
  wait
  ! rmmod zoidfs 2>/dev/null || { echo "should have failed: rmmod zoidfs"; exit 1; }
  grep -q "^zoidfs " /proc/modules
  # For the other CNs: a file, and 40 appends each to one log.
  echo "from cn$ZOID_NODE_ID" > $M/note-$ZOID_NODE_ID
  for i in $(seq 1 40); do echo "cn$ZOID_NODE_ID line $i of forty......" >> $M/log; done
fi
barrier 891
if [ "$ZOID_ROLE" = ion ]; then
  for i in $(seq 1 "$ZOID_CNS"); do
    [ "$(cat $X/note-$i)" = "from cn$i" ]
    [ -f $X/cn$i-strict/f ] && [ ! -e $X/cn$i-loose/d ]
  done
  [ "$(wc -l < $X/log)" = $((40 * ZOID_CNS)) ] || { wc -l $X/log; exit 1; }
fi
if [ "$ZOID_ROLE" = cn ]; then
  # Every CN sees every CN's files, and whole lines in the shared log.
  for i in $(seq 1 "$ZOID_CNS"); do [ "$(cat $M/note-$i)" = "from cn$i" ]; done
  grep -c "^cn[0-9]* line [0-9]* of forty......$" $M/log > /tmp/zfs-lines
  [ "$(cat /tmp/zfs-lines)" = $((40 * ZOID_CNS)) ] || { cat /tmp/zfs-lines; exit 1; }
fi
barrier 892
if [ "$ZOID_ROLE" = cn ]; then
  # One CN removes its note; the others see it gone at once (no caching).
  [ "$ZOID_NODE_ID" = 1 ] && rm $M/note-1
fi
barrier 893
if [ "$ZOID_ROLE" = cn ]; then
  [ ! -e $M/note-1 ] || { echo "note-1 still visible on cn$ZOID_NODE_ID"; exit 1; }
  # The other CNs' notes are still there (with one CN there are none).
  [ "$ZOID_CNS" = 1 ] || ls $M | grep -q "^note-$ZOID_CNS$" ||
    { echo "note-$ZOID_CNS gone on cn$ZOID_NODE_ID"; ls $M; exit 1; }
  umount $M
  ! grep -q " $M " /proc/mounts || { echo "should have failed: grep -q ' \$M ' /proc/mounts"; exit 1; }
  nonzero "zoidfs stats" $ZFS/stats
  [ "$(counter $ZFS/stats estale)" = 0 ]
fi
barrier 895
# cache=strict across CNs (close-to-open): CN 1 rewrites a file the other
# CNs have cached; their next open sees the new bytes.
if [ "$ZOID_ROLE" = cn ]; then
  mount -t zoidfs -o cache=strict,actimeo=60 zoidfs $M
  [ "$ZOID_NODE_ID" = 1 ] && echo "version one" > $M/shared
fi
barrier 896
if [ "$ZOID_ROLE" = cn ]; then
  [ "$(cat $M/shared)" = "version one" ]
fi
barrier 897
if [ "$ZOID_ROLE" = cn ] && [ "$ZOID_NODE_ID" = 1 ]; then
  echo "version two" > $M/shared
fi
barrier 898
if [ "$ZOID_ROLE" = cn ]; then
  [ "$(cat $M/shared)" = "version two" ] || { echo "stale on cn$ZOID_NODE_ID"; exit 1; }
  umount $M
fi
# cache=loose: positive dentries hold for acdirmin (30 s unless told; an
# actimeo= alone sets it too, as NFS's actimeo sets every timeout),
# attributes for actimeo.  A file removed on the ION is gone here once its
# attributes are stale, however long its dentry may hold: the getattr
# meets ESTALE, the VFS walks again with LOOKUP_REVAL, and that walk asks
# the ION.
if [ "$ZOID_ROLE" = cn ]; then
  must_fail_mount "out of range" acdirmin=100000
  mount -t zoidfs -o cache=loose zoidfs $M
  grep " $M zoidfs " /proc/mounts | grep -q ",actimeo=3,acdirmin=30," ||
    { echo "cache=loose: $(grep " $M " /proc/mounts)"; exit 1; }
  umount $M
  mount -t zoidfs -o cache=loose,actimeo=7 zoidfs $M
  grep " $M zoidfs " /proc/mounts | grep -q ",actimeo=7,acdirmin=7,"
  umount $M
  mount -t zoidfs -o cache=strict zoidfs $M
  grep " $M zoidfs " /proc/mounts | grep -q ",actimeo=3,acdirmin=3,"
  umount $M
  mount -t zoidfs -o cache=loose,actimeo=1,acdirmin=600 zoidfs $M
  grep " $M zoidfs " /proc/mounts | grep -q ",actimeo=1,acdirmin=600,"
  for f in doomed excl kept; do
    echo $f > $M/$f-$ZOID_NODE_ID
    [ "$(cat $M/$f-$ZOID_NODE_ID)" = $f ]   # its dentry and attributes cached
  done
fi
barrier 878
[ "$ZOID_ROLE" = ion ] && rm -f $X/doomed-* $X/excl-*
barrier 879
if [ "$ZOID_ROLE" = cn ]; then
  sleep 2   # past actimeo, well within acdirmin
  # A name that still exists holds: its stat fetches the attributes only.
  l0=$(counter $ZFS/stats lookup)
  [ "$(stat -c %s $M/kept-$ZOID_NODE_ID)" = 5 ]
  [ "$(counter $ZFS/stats lookup)" = "$l0" ] ||
    { echo "a name was looked up again within acdirmin on cn$ZOID_NODE_ID"; exit 1; }
  # An exclusive create asks the ION, whose file is gone: no EEXIST.
  mkdir $M/excl-$ZOID_NODE_ID || { echo "mkdir over a name removed on the ION"; exit 1; }
  [ -d $M/excl-$ZOID_NODE_ID ] && rmdir $M/excl-$ZOID_NODE_ID
  out=$(stat -c %s $M/doomed-$ZOID_NODE_ID 2>&1) &&
    { echo "a file removed on the ION still stats on cn$ZOID_NODE_ID: $out"; exit 1; }
  echo "$out" | grep -q "No such file" || { echo "stat of a removed file: $out"; exit 1; }
  [ ! -e $M/doomed-$ZOID_NODE_ID ]
  rm $M/kept-$ZOID_NODE_ID
  umount $M
fi
barrier 899
if [ "$ZOID_ROLE" = ion ]; then
  echo > $Z/export
  rm -rf $X
fi
barrier 889
