# zoidfs consistency=relaxed (ZOID's model): a file one CN has open is
# cached there (its writes stay in the page cache until close); when a
# second CN opens it, the ION recalls the first CN's grant, the dirty data
# reaches the ION before the second open returns, and from then on both
# CNs read and write through the ION (each sees the other's writes at
# once).  Bad option combinations are refused.  A grant lives as long as
# the CN's attach: after a partition in which the ION forgot the CN, what
# the CN cached under its old grant is dropped with EIO, never written
# over what was written since.  With one CN only the single-opener and
# partition parts run.
. /zoid/tests/treenet-lib.sh
unset -f stat
Z=/sys/kernel/zoid
ZFS=/sys/kernel/zoidfs
X=/zfs-rel-export
M=/mnt/zfs-rel
zst() { counter $ZFS/stats "$1"; }
zrel() { counter $Z/zoidfs_relaxed "$1"; }
zdiag() {
  nonzero "zoid stats" $Z/stats
  nonzero "zoidfs stats" $ZFS/stats
  echo "--- zoidfs_relaxed"; tr '\n' ' ' < $Z/zoidfs_relaxed; echo
  dmesg | grep -i zoidfs | tail -5
}
fail() { echo "$*"; zdiag; exit 1; }
if [ "$ZOID_CNS" -ge 2 ]; then two=true; else two=false; fi

if [ "$ZOID_ROLE" = ion ]; then
  mkdir -p $X && chmod 1777 $X && echo $X > $Z/export
  t0=$(zrel recall_timeouts)
fi
barrier 960
if [ "$ZOID_ROLE" = cn ]; then
  mkdir -p $M
  must_fail_mount "use it with cache=none" consistency=relaxed,cache=loose
  must_fail_mount "consistency" consistency=eventual
  mount -t zoidfs -o consistency=relaxed zoidfs $M || fail "mount"
  grep " $M zoidfs " /proc/mounts | grep -q "cache=none,consistency=relaxed" ||
    fail "options: $(grep " $M " /proc/mounts)"
  dd if=/dev/urandom of=/tmp/zr-a bs=4096 count=16 2>/dev/null
  dd if=/dev/urandom of=/tmp/zr-b bs=4096 count=16 2>/dev/null
  # Alone with its file: granted, the writes wait in the page cache, the
  # close writes them back.
  F=$M/own-$ZOID_NODE_ID
  g0=$(zst grants); w0=$(zst write)
  exec 3>$F
  cat /tmp/zr-a >&3
  [ "$(zst grants)" = $((g0 + 1)) ] || fail "no grant for a file only this CN opened"
  [ "$(zst write)" = "$w0" ] || fail "granted writes went to the ION at once"
  [ "$(md5sum < $F)" = "$(md5sum < /tmp/zr-a)" ] || fail "own cached data"
  exec 3>&-
  [ "$(zst write)" -gt "$w0" ] || fail "close wrote nothing back"
  md5sum < /tmp/zr-a > $F.md5
fi
barrier 961
if [ "$ZOID_ROLE" = ion ]; then
  for i in $(seq 1 "$ZOID_CNS"); do
    [ "$(md5sum < $X/own-$i)" = "$(cat $X/own-$i.md5)" ] || fail "own-$i differs on the ION"
  done
  [ "$(zrel files_open)" = 0 ] || fail "files left open"
fi
barrier 970
if $two && [ "$ZOID_ROLE" = cn ] && [ "$ZOID_NODE_ID" = 1 ]; then
  # CN 1 holds the shared file with dirty data in its cache (what CN 2
  # must read is in .md5 files: each CN's data is its own random).
  md5sum < /tmp/zr-a > $M/shared-a.md5
  cat /tmp/zr-a /tmp/zr-b | md5sum > $M/shared-ab.md5
  r0=$(zst recalls)
  exec 3>$M/shared
  cat /tmp/zr-a >&3
fi
barrier 962
if $two && [ "$ZOID_ROLE" = ion ]; then
  [ "$(stat -c %s $X/shared)" = 0 ] || fail "CN 1's cached writes reached the ION early"
fi
barrier 963
if $two && [ "$ZOID_ROLE" = cn ] && [ "$ZOID_NODE_ID" = 2 ]; then
  # CN 2's open recalls CN 1's grant: CN 1's data is there to read.
  g0=$(zst grants)
  exec 4<$M/shared
  [ "$(zst grants)" = "$g0" ] || fail "a second opener was granted"
  [ "$(md5sum < /proc/self/fd/4)" = "$(cat $M/shared-a.md5)" ] || fail "CN 1's data not seen after the recall"
fi
barrier 964
if $two && [ "$ZOID_ROLE" = cn ] && [ "$ZOID_NODE_ID" = 1 ]; then
  [ "$(zst recalls)" = $((r0 + 1)) ] || fail "CN 1 saw no recall"
  # No grant any more: this write goes to the ION at once.
  w0=$(zst write)
  cat /tmp/zr-b >&3
  [ "$(zst write)" -gt "$w0" ] || fail "write after the recall stayed cached"
fi
barrier 965
if $two && [ "$ZOID_ROLE" = cn ] && [ "$ZOID_NODE_ID" = 2 ]; then
  cat $M/shared-ab.md5 > /tmp/zr-want
  md5sum < /proc/self/fd/4 > /tmp/zr-got
  cmp /tmp/zr-want /tmp/zr-got || fail "CN 2 did not see CN 1's write at once"
fi
barrier 966
if $two && [ "$ZOID_ROLE" = cn ]; then
  if [ "$ZOID_NODE_ID" = 1 ]; then exec 3>&-; else exec 4<&-; fi
fi
barrier 967
if $two && [ "$ZOID_ROLE" = cn ] && [ "$ZOID_NODE_ID" = 2 ]; then
  # Alone again: the next first open is granted.
  g0=$(zst grants)
  cat $M/shared | md5sum > /tmp/zr-got
  [ "$(zst grants)" = $((g0 + 1)) ] || fail "no grant once alone again"
  cmp /tmp/zr-want /tmp/zr-got || fail "shared file after both closed"
fi
# A partition: CN 1 caches a write under its grant, then its links stay
# down past peer_timeout_ms, so that the ION forgets it and its grants
# while the file is written on the ION.  Once back, CN 1 must not write
# its cached data over that: the grant is void, the data is dropped, and
# the fsync and close of the descriptor that wrote report EIO.  (zhold
# holds that descriptor: a shell's commands would inherit it, and the
# first to exit would take the error.)
barrier 971
if [ "$ZOID_ROLE" = cn ] && [ "$ZOID_NODE_ID" = 1 ]; then
  g0=$(zst grants); w0=$(zst write)
  v0=$(zst grants_void); d0=$(zst void_data_dropped)
  rm -f /tmp/zr-go
  /zoid/bin/zhold $M/lost /tmp/zr-a /tmp/zr-go > /tmp/zr-hold.out & holder=$!
  wait_until 30 grep -q written /tmp/zr-hold.out || fail "zhold: $(cat /tmp/zr-hold.out)"
  [ "$(zst grants)" = $((g0 + 1)) ] || fail "no grant for the file to lose"
  [ "$(zst write)" = "$w0" ] || fail "granted writes went to the ION at once"
  links=$(ls /sys/class/net | grep -v '^lo$')
  for l in $links; do ip link set "$l" down; done
  sleep $(( $(cat $T/peer_timeout_ms) / 1000 + 3 ))
  for l in $links; do ip link set "$l" up; done
fi
barrier 972
if [ "$ZOID_ROLE" = ion ]; then
  [ "$(zrel files_open)" = 0 ] || fail "the ION kept CN 1's open across the partition"
  # What another CN would have written meanwhile.
  echo "written since" > $X/lost
fi
barrier 973
if [ "$ZOID_ROLE" = cn ] && [ "$ZOID_NODE_ID" = 1 ]; then
  touch /tmp/zr-go
  wait $holder
  grep -q "^fsync: .*(5)$" /tmp/zr-hold.out || fail "fsync after the ION forgot the grant: $(cat /tmp/zr-hold.out)"
  [ "$(zst grants_void)" -gt "$v0" ] || fail "grants_void not counted"
  [ "$(zst void_data_dropped)" -gt "$d0" ] || fail "void_data_dropped not counted"
  [ "$(cat $M/lost)" = "written since" ] || fail "CN 1 reads '$(head -c 32 $M/lost)', not the ION's data"
fi
barrier 974
if [ "$ZOID_ROLE" = ion ]; then
  [ "$(cat $X/lost)" = "written since" ] || fail "CN 1's void data reached the ION: $(head -c 32 $X/lost | od -c | head -2)"
fi
barrier 968
if [ "$ZOID_ROLE" = cn ]; then
  umount $M || fail "umount"
fi
if [ "$ZOID_ROLE" = ion ]; then
  [ "$(zrel files_open)" = 0 ] || fail "files left open"
  [ "$(zrel recall_timeouts)" = "$t0" ] || fail "recalls timed out"
  if $two; then
    [ "$(zrel recalls_answered)" -ge 1 ] || fail "no recall answered"
  fi
  echo "zoidfs_relaxed: $(tr '\n' ' ' < $Z/zoidfs_relaxed)"
fi
barrier 969
