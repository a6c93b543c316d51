# zoidfs special files and extended attributes: a fifo made on a CN is a
# fifo on the ION and works as a pipe on the CN (opened locally, as with
# NFS); a device node the ION made is opened with the CN's own driver; a
# squashed root may not make devices (EPERM).  user.* attributes round-trip
# with getxattr(2)'s size-0 and ERANGE rules, XATTR_CREATE/REPLACE and
# removal, on files and directories; trusted.* needs the ION's privilege
# (EPERM for a squashed root), security.* is not forwarded (EOPNOTSUPP).
# The export is a fresh tmpfs (user xattrs: CONFIG_TMPFS_XATTR), left
# mounted: the export holds it until the next test exports another.
. /zoid/tests/treenet-lib.sh
unset -f stat
Z=/sys/kernel/zoid
ZFS=/sys/kernel/zoidfs
ZX=/zoid/bin/zxattr
X=/zfs-special-export
M=/mnt/zfs-special
zst() { counter $ZFS/stats "$1"; }
zdiag() {
  nonzero "zoid stats" $Z/stats
  nonzero "zoidfs stats" $ZFS/stats
  dmesg | grep -i zoidfs | tail -5
}
fail() { echo "$*"; zdiag; exit 1; }

if [ "$ZOID_ROLE" = ion ]; then
  mkdir -p $X && mount -t tmpfs -o mode=1777 tmpfs $X && echo $X > $Z/export
  mknod -m 666 $X/dev-null c 1 3
fi
barrier 980
if [ "$ZOID_ROLE" = cn ]; then
  mkdir -p $M
  mount -t zoidfs zoidfs $M || fail "mount"
  D=$M/cn$ZOID_NODE_ID
  mkdir $D
  umask 022
  # A fifo: made on the ION, a pipe between two processes of this CN.
  m0=$(zst mknod)
  mkfifo $D/fifo || fail "mkfifo"
  [ -p $D/fifo ] || fail "not a fifo: $(ls -l $D/fifo)"
  [ "$(stat -c %a $D/fifo)" = 644 ] || fail "fifo mode $(stat -c %a $D/fifo)"
  [ "$(zst mknod)" = $((m0 + 1)) ] || fail "mknod not forwarded"
  (echo "through the fifo" > $D/fifo) &
  read -r line < $D/fifo
  wait
  [ "$line" = "through the fifo" ] || fail "fifo carried '$line'"
  # A device node the ION made: the CN's own /dev/null behind it.
  [ -c $M/dev-null ] || fail "dev-null: $(ls -l $M/dev-null)"
  [ "$(stat -c %t:%T $M/dev-null)" = 1:3 ] || fail "dev-null numbers $(stat -c %t:%T $M/dev-null)"
  echo discarded > $M/dev-null || fail "write to dev-null"
  [ -z "$(cat $M/dev-null)" ] || fail "dev-null read something"
  # Root is squashed on the ION: no devices (and nothing left behind).
  if mknod $D/null c 1 3 2>/dev/null; then fail "squashed root made a device"; fi
  [ ! -e $D/null ] || fail "a failed mknod left an entry"

  # user.* attributes.
  echo data > $D/f
  $ZX set $D/f user.color blue || fail "set"
  [ "$($ZX get $D/f user.color)" = blue ] || fail "get: $($ZX get $D/f user.color)"
  [ "$($ZX get $D/f user.color 0)" = 4 ] || fail "size-0 get"
  expect_fail 34 $ZX get $D/f user.color 2
  expect_fail 17 $ZX set $D/f user.color red create
  expect_fail 61 $ZX set $D/f user.none x replace
  $ZX set $D/f user.color green replace || fail "replace"
  [ "$($ZX get $D/f user.color)" = green ] || fail "replaced value"
  v=$(head -c 1000 /dev/zero | tr '\0' v)
  $ZX set $D/f user.big "$v" || fail "1000-byte value"
  [ "$($ZX get $D/f user.big)" = "$v" ] || fail "1000-byte value read back"
  [ "$($ZX list $D/f | sort | tr '\n' ' ')" = "user.big user.color " ] || fail "list: $($ZX list $D/f)"
  [ "$($ZX list $D/f 0)" = 20 ] || fail "size-0 list: $($ZX list $D/f 0)"
  expect_fail 34 $ZX list $D/f 5
  $ZX remove $D/f user.color || fail "remove"
  expect_fail 61 $ZX get $D/f user.color
  expect_fail 61 $ZX remove $D/f user.color
  $ZX set $D user.dir yes || fail "directory attribute"
  [ "$($ZX get $D user.dir)" = yes ] || fail "directory attribute read back"
  # user.* is for files and directories only (the VFS says so, as locally).
  expect_fail 1 $ZX set $D/fifo user.x y
  # Privileged and local namespaces.
  expect_fail 1 $ZX set $D/f trusted.x y
  expect_fail 95 $ZX set $D/f security.x y
  $ZX set $D/f user.kept stays
  $ZX remove $D/f user.big
  [ "$(zst setxattr)" -gt 0 ] && [ "$(zst listxattr)" -gt 0 ] || fail "xattr calls not counted"
fi
barrier 981
if [ "$ZOID_ROLE" = ion ]; then
  for i in $(seq 1 "$ZOID_CNS"); do
    [ -p $X/cn$i/fifo ] || fail "cn$i's fifo on the ION: $(ls -l $X/cn$i)"
    [ "$($ZX get $X/cn$i/f user.kept)" = stays ] || fail "cn$i's attribute on the ION"
    [ "$($ZX list $X/cn$i/f)" = user.kept ] || fail "cn$i's attributes: $($ZX list $X/cn$i/f)"
    [ "$($ZX get $X/cn$i user.dir)" = yes ] || fail "cn$i's directory attribute"
  done
  # Set on the ION, read on the CNs (nothing cached).
  $ZX set $X/cn1/f user.from-ion hello
fi
barrier 982
if [ "$ZOID_ROLE" = cn ]; then
  [ "$($ZX get $M/cn1/f user.from-ion)" = hello ] || fail "the ION's attribute on cn$ZOID_NODE_ID"
  umount $M
fi
barrier 983
