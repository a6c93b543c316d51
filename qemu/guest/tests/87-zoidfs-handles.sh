# The zoidfs plug-in on the ION (what fs/zoidfs forwards), driven from CN
# programs through /dev/zoid with zoidfsctl: every operation on stateless
# handles, results checked against the ION's own view of its export;
# readdir cookies over small batches, stale handles, confinement, squash.
. /zoid/tests/treenet-lib.sh
Z=/sys/kernel/zoid
ZF=/zoid/bin/zoidfsctl
X=/zfs-export
zdiag() { nonzero "zoid stats" $Z/stats; }

echo 600000 > $Z/timeout_ms
if [ "$ZOID_ROLE" = ion ]; then
  mkdir -p $X/seed && chmod 1777 $X
  for i in $(seq 1 40); do echo "entry $i" > $X/seed/file-$i; done
  echo "written on the ion" > $X/hello
  ln -s hello $X/hello-link
  for i in $(seq 1 "$ZOID_CNS"); do mkdir -m 1777 $X/cn$i; done
  echo $X > $Z/export
  # A second export, by name; bad commands are refused.
  mkdir -p /zfs-named && echo "in the named export" > /zfs-named/n
  echo "scratch /zfs-named" > $Z/zoidfs_exports
  grep -q "^scratch /zfs-named [0-9a-f]\{8\}$" $Z/zoidfs_exports
  ! echo "scratch /zfs-named" > $Z/zoidfs_exports 2>/dev/null || { echo "should have failed: echo 'scratch /zfs-named' > \$Z/zoidfs_exports"; exit 1; }     # taken
  ! echo "bad/name /zfs-named" > $Z/zoidfs_exports 2>/dev/null || { echo "should have failed: echo 'bad/name /zfs-named' > \$Z/zoidfs_exports"; exit 1; }
  ! echo "other relative" > $Z/zoidfs_exports 2>/dev/null || { echo "should have failed: echo 'other relative' > \$Z/zoidfs_exports"; exit 1; }
  ! echo "-nosuch" > $Z/zoidfs_exports 2>/dev/null || { echo "should have failed: echo '-nosuch' > \$Z/zoidfs_exports"; exit 1; }
fi
barrier 870
if [ "$ZOID_ROLE" = cn ]; then
  D=cn$ZOID_NODE_ID
  # Reads, lookups, readdir in 512-byte batches (40 entries: several).
  [ "$($ZF cat hello)" = "written on the ion" ] || { zdiag; exit 1; }
  [ "$($ZF ls seed | wc -l)" = 40 ] || { $ZF ls seed; exit 1; }
  $ZF ls / | grep -qx "hello 8"
  $ZF ls / | grep -qx "seed 4"
  $ZF ls / | grep -qx "hello-link 10"
  [ "$($ZF readlink hello-link)" = hello ]
  $ZF stat seed/file-7 | grep -q "^mode 100644 nlink 1 uid 0 gid 0 size 8 "
  # Writes: a 200 KB file in 64 KiB calls, read back.
  dd if=/dev/urandom of=/tmp/data bs=1000 count=200 2>/dev/null
  $ZF put $D/data < /tmp/data
  $ZF cat $D/data > /tmp/back
  cmp /tmp/data /tmp/back
  $ZF stat $D/data | grep -q " size 200000 "
  # Root squash: a CN root's files belong to nobody on the ION.
  $ZF stat $D/data | grep -q " uid 65534 gid 65534 "
  # Attributes: mode, a sparse size, a nanosecond mtime.
  $ZF chmod $D/data 600
  $ZF stat $D/data | grep -q "^mode 100600 "
  $ZF truncate $D/data 10000000
  $ZF stat $D/data | grep -q " size 10000000 "
  $ZF mtime $D/data 1700000000 123456789
  $ZF stat $D/data | grep -q " mtime 1700000000.123456789$"
  # Namespace: mkdir, symlink, hard link, rename (and NOREPLACE), remove.
  $ZF mkdir $D/sub 750
  $ZF stat $D/sub | grep -q "^mode 40750 "
  $ZF symlink ../data $D/sub/link
  [ "$($ZF readlink $D/sub/link)" = ../data ]
  $ZF link $D/data $D/sub/hard | grep -qx "nlink 2"
  $ZF put $D/other < /tmp/data
  expect_fail 17 $ZF mv $D/other $D/data noreplace   # EEXIST
  $ZF mv $D/other $D/sub/moved
  expect_fail 2 $ZF stat $D/other                    # ENOENT
  expect_fail 39 $ZF rmdir $D/sub                    # ENOTEMPTY
  expect_fail 21 $ZF rm $D/sub                       # EISDIR
  $ZF rm $D/sub/moved; $ZF rm $D/sub/link; $ZF rm $D/sub/hard
  $ZF rmdir $D/sub
  expect_fail 2 $ZF ls $D/sub
  # Confinement: a walk never goes up; a forged handle names nothing.
  expect_fail 13 $ZF ls ..                           # EACCES
  expect_fail 13 $ZF stat seed/../hello
  expect_fail 116 $ZF hstat 01deadbeefdeadbeefdeadbeef  # ESTALE
  $ZF statfs | grep -q "^type "
  # The named export; an unknown name.
  [ "$($ZF -e scratch cat n)" = "in the named export" ]
  expect_fail 2 $ZF -e nosuch ls /
  $ZF -e scratch handle n > /tmp/named.handle
  # A handle kept across calls; the ION removes its file below.
  $ZF put $D/doomed < /tmp/data
  $ZF handle $D/doomed > /tmp/doomed.handle
  $ZF hstat "$(cat /tmp/doomed.handle)" | grep -q " size 200000 "
fi
barrier 871
if [ "$ZOID_ROLE" = ion ]; then
  for i in $(seq 1 "$ZOID_CNS"); do
    [ "$(ls -ln $X/cn$i/data | awk '{ print $3, $5 }')" = "65534 10000000" ] ||
      { ls -ln $X/cn$i; exit 1; }
    [ ! -e $X/cn$i/sub ]
    rm $X/cn$i/doomed
  done
  echo -scratch > $Z/zoidfs_exports
  [ -z "$(cat $Z/zoidfs_exports)" ]
fi
barrier 872
if [ "$ZOID_ROLE" = cn ]; then
  expect_fail 116 $ZF hstat "$(cat /tmp/doomed.handle)"  # ESTALE, never another file
  expect_fail 116 $ZF hstat "$(cat /tmp/named.handle)"   # its export is gone
fi
barrier 873
if [ "$ZOID_ROLE" = ion ]; then
  grep -q "^zoidfs.lookup " $Z/calls || { cat $Z/calls; exit 1; }
  echo > $Z/export
  rm -rf $X /zfs-named
fi
barrier 874
