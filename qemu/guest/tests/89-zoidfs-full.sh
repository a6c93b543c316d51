# A full export (a 4 MiB tmpfs on the ION): a CN's writers get ENOSPC,
# buffered ones at write or at fsync (write-back), O_DIRECT ones at write;
# what was written and synced before stays whole; the other CN reads and
# calls meanwhile; once space is freed, writes work again.
. /zoid/tests/treenet-lib.sh
Z=/sys/kernel/zoid
ZC=/zoid/bin/zoidcall
X=/zfs-full-export
M=/mnt/zfs-full
fail() { echo "$*"; nonzero "zoidfs stats" /sys/kernel/zoidfs/stats; dmesg | tail -5; exit 1; }
# enospc <command...>: the command fails, saying there is no space.
enospc() {
  if out=$("$@" 2>&1); then fail "no ENOSPC: $*"; fi
  echo "$out" | grep -q "No space left" || fail "not ENOSPC: $*: $out"
}
if [ "$ZOID_ROLE" = ion ]; then
  mkdir -p $X && mount -t tmpfs -o size=4m,mode=1777 tmpfs $X && echo $X > $Z/export
  dd if=/dev/urandom of=$X/keep bs=64k count=4 2>/dev/null
fi
barrier 1150
if [ "$ZOID_ROLE" = cn ]; then
  mkdir -p $M && mount -t zoidfs -o cache=loose zoidfs $M || fail "mount"
  md5sum < $M/keep > /tmp/full-keep.md5
fi
barrier 1151
if [ "$ZOID_NODE" = cn1 ]; then
  # Buffered: the page cache takes more than the export holds; the
  # write-back's ENOSPC comes back at fsync at the latest.
  enospc dd if=/dev/zero of=$M/big bs=64k count=128 conv=fsync
  rm -f $M/big
  # O_DIRECT: straight at write.
  enospc dd if=/dev/zero of=$M/direct bs=64k count=128 oflag=direct
  rm -f $M/direct
  # cache=none, on a second mount of the same export.
  mkdir -p $M-none && mount -t zoidfs -o cache=none zoidfs $M-none || fail "mount cache=none"
  enospc dd if=/dev/zero of=$M-none/none bs=64k count=128
  rm -f $M-none/none
  umount $M-none
elif [ "$ZOID_ROLE" = cn ]; then
  # The other CNs read and call meanwhile.
  i=0
  while [ $i -lt 10 ]; do
    [ "$(md5sum < $M/keep)" = "$(cat /tmp/full-keep.md5)" ] || fail "$ZOID_NODE: keep changed"
    $ZC null 10 > /dev/null || fail "$ZOID_NODE: calls while the export was full"
    i=$((i + 1))
  done
fi
barrier 1152
if [ "$ZOID_ROLE" = cn ]; then
  # What was there before is whole; with the space freed, writes work.
  [ "$(md5sum < $M/keep)" = "$(cat /tmp/full-keep.md5)" ] || fail "keep changed"
  dd if=/dev/urandom of=/tmp/full-again bs=64k count=8 2>/dev/null
  cp /tmp/full-again $M/again-$ZOID_NODE && sync $M/again-$ZOID_NODE || fail "a write after space was freed"
  cmp /tmp/full-again $M/again-$ZOID_NODE || fail "the write after space was freed reads back wrong"
  umount $M || fail "umount"
fi
barrier 1153
if [ "$ZOID_ROLE" = ion ]; then
  echo > $Z/export
  umount $X
fi
