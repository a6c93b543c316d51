# posixcheck (tools/zoid/posixcheck.c, a conformance suite of some 180
# checks: errno values, modes and umask, owners, times to the nanosecond,
# links, renames with their flags, sparse and >4 GiB files, O_DIRECT, mmap,
# xattrs, fifos, locks, and two users' permissions, sticky and set-group-id
# directories) on a local tmpfs, then on zoidfs in each cache mode and with
# consistency=relaxed: every check that passes on tmpfs passes on zoidfs.
# (`make conformance` runs the same suite on NFS and v9fs beside zoidfs.)
. /zoid/tests/treenet-lib.sh
Z=/sys/kernel/zoid
X=/zfs-posix-export
M=/mnt/zoidfs-posix
PC=/zoid/bin/posixcheck

if [ "$ZOID_ROLE" = ion ]; then
  mkdir -p $X && chmod 1777 $X
  echo $X > $Z/export
fi
barrier 1960
if [ "$ZOID_ROLE" = cn ]; then
  mkdir -p /tmp/pc-local $M
  mount -t tmpfs pc-local /tmp/pc-local && chmod 1777 /tmp/pc-local
  $PC /tmp/pc-local > /tmp/pc-local.out
  umount /tmp/pc-local
  tail -1 /tmp/pc-local.out
  grep "^not ok" /tmp/pc-local.out | sed 's/^/tmpfs: /' || true
  grep "^ok " /tmp/pc-local.out > /tmp/pc-local.ok
  [ "$(wc -l < /tmp/pc-local.ok)" -ge 150 ] || { cat /tmp/pc-local.out; exit 1; }
  bad=0
  for opts in cache=none cache=strict cache=loose consistency=relaxed; do
    mount -t zoidfs -o "$opts" zoidfs $M
    # (A directory per CN: the CNs run at once, and their pids may agree.)
    D=$M/cn$ZOID_NODE_ID
    mkdir $D && chmod 1777 $D
    $PC $D > /tmp/pc-zoidfs.out || { cat /tmp/pc-zoidfs.out; exit 1; }
    rmdir $D
    umount $M
    echo "$opts: $(tail -1 /tmp/pc-zoidfs.out)"
    # Checks tmpfs passes and zoidfs does not, with zoidfs's words.
    grep "^ok " /tmp/pc-zoidfs.out > /tmp/pc-zoidfs.ok || true
    grep -vxF -f /tmp/pc-zoidfs.ok /tmp/pc-local.ok > /tmp/pc-missing || true
    if [ -s /tmp/pc-missing ]; then
      bad=1
      while read -r _ name; do
        grep -m1 "^not ok $name[: ]" /tmp/pc-zoidfs.out || echo "missing: $name"
      done < /tmp/pc-missing | sed "s/^/$opts: /"
    fi
  done
  [ $bad = 0 ]
fi
barrier 1961
if [ "$ZOID_ROLE" = ion ]; then
  [ -z "$(ls -A $X)" ] || { echo "left on the export:"; ls -la $X; exit 1; }
  echo > $Z/export
  rm -rf $X
fi
barrier 1962
