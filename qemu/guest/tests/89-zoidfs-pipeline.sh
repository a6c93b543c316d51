# zoidfs keeps several reads and writes on the wire (inflight=): transfers
# that span many small rsize/wsize calls arrive whole and in place in both
# the direct (cache=none) and the page-cache path (write-back, readahead);
# a read that meets the end of the file mid-pipeline stops there; appends
# go one call at a time, in order; zfsx verifies random I/O made of page-
# sized calls; zoid's client saw the calls in flight together; fdatasync
# and fsync reach the ION, and so do sync(2) and close; with THP, page-cache
# writes go in large folios.
. /zoid/tests/treenet-lib.sh
unset -f stat
Z=/sys/kernel/zoid
ZFS=/sys/kernel/zoidfs
X=/zfs-pipe-export
M=/mnt/zfs-pipe
SIZE=1049000	# 1 MiB and then some: not a whole number of calls
zdiag() {
  nonzero "zoid stats" $Z/stats
  nonzero "zoidfs stats" $ZFS/stats
  dmesg | grep -i zoidfs | tail -5
}
if [ "$ZOID_ROLE" = ion ]; then
  mkdir -p $X && chmod 1777 $X && echo $X > $Z/export
fi
barrier 950
if [ "$ZOID_ROLE" = cn ]; then
  mkdir -p $M
  must_fail_mount "out of range" inflight=0
  must_fail_mount "out of range" inflight=17
  dd if=/dev/urandom of=/tmp/zp-src bs=1000 count=$((SIZE / 1000)) 2>/dev/null
  sum=$(md5sum < /tmp/zp-src)
  # Three appends of 100000 bytes from the middle of the source.
  for i in 1 2 3; do dd if=/tmp/zp-src bs=100000 skip=$i count=1 2>/dev/null; done > /tmp/zp-app
  for mode in none loose; do
    mount -t zoidfs -o cache=$mode,rsize=16384,wsize=16384,inflight=8 zoidfs $M ||
      { zdiag; exit 1; }
    grep " $M zoidfs " /proc/mounts | grep -q "cache=$mode.*inflight=8"
    D=$M/cn$ZOID_NODE_ID-$mode
    mkdir $D
    # One 1 MiB write: 64 calls, 8 on the wire (cache=none); write-back
    # of 257 dirty pages at fsync (loose).
    m0=$(counter $ZFS/stats run_mappings)
    dd if=/tmp/zp-src of=$D/big bs=1M conv=fsync 2>/dev/null || { zdiag; exit 1; }
    [ "$(stat -c %s $D/big)" = $SIZE ] || { stat -c %s $D/big; zdiag; exit 1; }
    # With THP, the page cache has large folios: each 16 KiB run written
    # back is one folio, sent from where it lies, no vmap (x86_64; ppc32's
    # 440 has no THP, and its runs of four pages are mapped together).
    if [ $mode = loose ] && [ -d /sys/kernel/mm/transparent_hugepage ]; then
      m1=$(counter $ZFS/stats run_mappings)
      [ "$m1" = "$m0" ] || { echo "large folios: $((m1 - m0)) runs mapped"; zdiag; exit 1; }
    fi
    # fdatasync and fsync reach the ION as commits.
    c0=$(counter $ZFS/stats commit)
    sync -d $D/big && sync $D/big
    [ "$(counter $ZFS/stats commit)" -ge $((c0 + 2)) ] || { zdiag; exit 1; }
    # A file a writer holds open as its standard output (any close, even
    # of a dup, would commit): its unsynced write dirties the inode, and
    # sync(2) commits it.  A close commits too.
    c0=$(counter $ZFS/stats commit)
    # Wait for the write(2) to return (the writer has become `sleep`), not
    # for its data on the ION: the writer notes the write as unsynced when
    # its reply arrives, and a sync that came before had nothing to commit.
    # (Nothing may close a copy of its stdout meanwhile: a marker written
    # by the writer would.)
    (exec > $D/open-sync; echo data; exec sleep 600) &
    writer=$!
    until [ "$(cat /proc/$writer/comm 2>/dev/null)" = sleep ]; do sleep 0.1; done
    grep -q data $D/open-sync || { echo "open-sync has no data ($mode)"; zdiag; exit 1; }
    [ "$(counter $ZFS/stats commit)" = "$c0" ] || { echo "a commit before sync ($mode)"; zdiag; exit 1; }
    sync
    [ "$(counter $ZFS/stats commit)" -ge $((c0 + 1)) ] || { echo "sync did not commit ($mode)"; zdiag; exit 1; }
    kill $writer; wait $writer || true
    c0=$(counter $ZFS/stats commit)
    echo more >> $D/open-sync
    [ "$(counter $ZFS/stats commit)" -ge $((c0 + 1)) ] || { echo "close did not commit ($mode)"; zdiag; exit 1; }
    [ "$(cat $D/open-sync)" = "$(printf 'data\nmore')" ] || { echo "open-sync ($mode)"; exit 1; }
    sync; echo 3 > /proc/sys/vm/drop_caches
    # One 4 MiB read: the end of the file comes while reads are in flight
    # (loose: readahead windows of 8 calls).
    [ "$(dd if=$D/big bs=4M 2>/dev/null | md5sum)" = "$sum" ] || { echo "read back ($mode)"; zdiag; exit 1; }
    # From an offset that is no call boundary, to the end.
    dd if=/tmp/zp-src bs=7000 skip=13 2>/dev/null | md5sum > /tmp/zp-want
    dd if=$D/big bs=7000 skip=13 2>/dev/null | md5sum > /tmp/zp-got
    cmp /tmp/zp-want /tmp/zp-got || { echo "offset read ($mode)"; exit 1; }
    # Appends of 7 calls each land in order.
    : > $D/app
    for i in 1 2 3; do dd if=/tmp/zp-src bs=100000 skip=$i count=1 2>/dev/null >> $D/app; done
    cmp /tmp/zp-app $D/app || { echo "appends ($mode)"; zdiag; exit 1; }
    # Random I/O where every call is a page, 8 in flight.
    /zoid/bin/zfsx $D/fsx $((ZFSX_OPS * 2 / 3)) $((ZOID_NODE_ID + 7)) > /tmp/zp-zfsx.out ||
      { cat /tmp/zp-zfsx.out; echo "zfsx ($mode)"; zdiag; exit 1; }
    umount $M
  done
  peak=$(counter $Z/stats inflight_peak)
  [ "$peak" -ge 8 ] || { echo "inflight_peak $peak"; zdiag; exit 1; }
  # For the ION: what the files must hold.
  mount -t zoidfs zoidfs $M
  echo "$sum" > $M/sum-cn$ZOID_NODE_ID
  # Calls of the default rsize (1 MiB): the ION writes each reply in place
  # into a message it did not zero-fill, and the last call meets the end
  # of the file 424 bytes in: only what it read may come back.
  [ "$(dd if=$M/cn$ZOID_NODE_ID-none/big bs=4M 2>/dev/null | md5sum)" = "$sum" ] ||
    { echo "1 MiB calls"; zdiag; exit 1; }
  umount $M
  echo "zoid client: inflight_peak $peak"
fi
barrier 951
if [ "$ZOID_ROLE" = ion ]; then
  [ "$(counter $Z/stats replies_mapped)" -gt 0 ] || { echo "no reply was mapped"; zdiag; exit 1; }
  for i in $(seq 1 "$ZOID_CNS"); do
    for mode in none loose; do
      [ "$(md5sum < $X/cn$i-$mode/big)" = "$(cat $X/sum-cn$i)" ] ||
        { echo "cn$i-$mode/big differs on the ION"; exit 1; }
    done
  done
fi
barrier 952
