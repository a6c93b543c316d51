# zoidfs consistency=ssi: page coherence through ssi containers.  Every
# page of a file is an object of an ssi set defined on the ION; a CN
# caches a page only while it holds the object, so each CN reads what any
# CN last wrote, at once, while writes stay cached (no close or fsync in
# between):
# * bad options are refused with a clear word (cache=none, an unknown set,
#   ssi_set= alone, a bad name); the set shows it is cached through;
# * the POSIX workload gives what tmpfs gives, and zfsx's random
#   read/write/truncate/mmap verifies every byte;
# * CN 1 writes two pages and keeps them cached (the ION has nothing);
#   CN 2 reads them (CN 1 wrote them back when asked for them) and
#   overwrites one; CN 1 reads the new page at once, and appends a third;
#   CN 2 sees the new size; CN 2 shrinks the file and grows it back, and
#   CN 1 reads zeros where its cached page was (no stale data);
# * both CNs write bytes of the same page at once: no write is lost;
# * through mappings of the file (ssimap -f), every CN adds to one word at
#   once and the total is exact, and CN 1 passes messages to CN 2 that
#   CN 2 sees in order (sequential consistency);
# * after umount the ION has it all, and the set is no longer attached.
# With one CN only the single-CN parts run.
. /zoid/tests/treenet-lib.sh
. /zoid/tests/zoidfs-lib.sh
unset -f stat
Z=/sys/kernel/zoid
ZFS=/sys/kernel/zoidfs
S=/sys/kernel/ssi
X=/zfs-ssi-export
M=/mnt/zfs-ssi
zst() { counter $ZFS/stats "$1"; }
fail() {
  echo "$*"
  nonzero "zoidfs stats" $ZFS/stats
  nonzero "ssi stats" $S/stats
  echo "--- sets"; cat $S/sets
  dmesg | grep -i "zoidfs\|ssi" | tail -5
  exit 1
}
if [ "$ZOID_CNS" -ge 2 ]; then two=true; else two=false; fi
cn1() { [ "$ZOID_ROLE" = cn ] && [ "$ZOID_NODE_ID" = 1 ]; }
cn2() { $two && [ "$ZOID_ROLE" = cn ] && [ "$ZOID_NODE_ID" = 2 ]; }

if [ "$ZOID_ROLE" = ion ]; then
  mkdir -p $X && chmod 1777 $X && echo $X > $Z/export
  echo "define 90 zoidfs 64 memory" > $S/sets || fail "define the set"
fi
barrier 790
if [ "$ZOID_ROLE" = cn ]; then
  mkdir -p $M
  wait_for_set "90 zoidfs 64 memory" || fail "no set 90"
  must_fail_mount "use it with cache=strict or cache=loose" consistency=ssi,cache=none ||
    fail "cache=none accepted"
  must_fail_mount "no ssi set \"nosuch\" here" consistency=ssi,ssi_set=nosuch ||
    fail "unknown set accepted"
  must_fail_mount "ssi_set= goes with consistency=ssi" ssi_set=zoidfs || fail "lone ssi_set="
  must_fail_mount "is not a set name" "consistency=ssi,ssi_set=a b" || fail "bad set name"
  mount -t zoidfs -o consistency=ssi zoidfs $M || fail "mount"
  grep " $M zoidfs " /proc/mounts | grep -q "cache=loose,consistency=ssi,ssi_set=zoidfs" ||
    fail "options: $(grep " $M " /proc/mounts)"
  grep -q "^90 zoidfs 64 memory (cached through)$" $S/sets || fail "set not attached"
  # A second mount of the same set is refused (one client per set).
  mkdir -p $M-2
  if mount -t zoidfs -o consistency=ssi zoidfs $M-2 2>/dev/null; then
    umount $M-2; fail "a second mount attached to the same set"
  fi
  # The workload as on tmpfs, and zfsx, each CN in its own directory.
  dd if=/dev/urandom of=/tmp/zfs-rand bs=4096 count=64 2>/dev/null
  mkdir -p /tmp/zss-local $M/w-$ZOID_NODE_ID
  (cd /tmp/zss-local && workload) > /tmp/zss-local.out 2>&1 || echo "exit $?" >> /tmp/zss-local.out
  (cd $M/w-$ZOID_NODE_ID && workload) > /tmp/zss-remote.out 2>&1 ||
    echo "exit $?" >> /tmp/zss-remote.out
  diff /tmp/zss-local.out /tmp/zss-remote.out || fail "workload differs from tmpfs"
  /zoid/bin/zfsx $M/w-$ZOID_NODE_ID/fsx $ZFSX_OPS $ZOID_NODE_ID > /tmp/zss-fsx.out ||
    { cat /tmp/zss-fsx.out; fail "zfsx"; }
  [ "$(zst ssi_inserts)" -gt 0 ] || fail "no object arrived"
fi
barrier 791
if cn1; then
  dd if=/dev/urandom of=/tmp/zss-a bs=4096 count=3 2>/dev/null
  head -c 8192 /tmp/zss-a > /tmp/zss-a01
  md5sum < /tmp/zss-a01 > $M/a01.md5
  tail -c 4096 /tmp/zss-a > /tmp/zss-a2
  sync   # what the workload left dirty goes now, not below
  w0=$(zst write)
  # Two pages, kept open and cached.
  exec 3>$M/shared
  cat /tmp/zss-a01 >&3
  [ "$(zst write)" = "$w0" ] || fail "cached writes went to the ION at once"
fi
barrier 792
if $two && [ "$ZOID_ROLE" = ion ]; then
  [ "$(stat -c %s $X/shared)" = 0 ] || fail "CN 1's cached writes reached the ION early"
fi
barrier 793
if cn2; then
  [ "$(stat -c %s $M/shared)" = 8192 ] || fail "size: $(stat -c %s $M/shared), want 8192"
  [ "$(md5sum < $M/shared)" = "$(cat $M/a01.md5)" ] || fail "CN 1's cached data not seen"
  # Page 1 anew, from here.
  dd if=/dev/urandom of=/tmp/zss-b bs=4096 count=1 2>/dev/null
  dd if=/tmp/zss-b of=$M/shared bs=4096 seek=1 conv=notrunc 2>/dev/null
  cp /tmp/zss-b $M/b.page
fi
barrier 794
if cn1 && $two; then
  [ "$(zst ssi_exports)" -gt 0 ] || fail "CN 1 sent no page"
  [ "$(zst ssi_invalidations)" -gt 0 ] || fail "CN 1's copy of page 1 stayed"
  [ "$(md5sum < $M/shared)" = "$({ head -c 4096 /tmp/zss-a01; cat $M/b.page; } | md5sum)" ] ||
    fail "CN 2's page 1 not seen"
  # Append a third page on the same open file (O_APPEND-free: at 8192).
  cat /tmp/zss-a2 >&3
  { head -c 4096 /tmp/zss-a01; cat $M/b.page /tmp/zss-a2; } | md5sum > $M/ab2.md5
fi
barrier 795
if cn2; then
  [ "$(stat -c %s $M/shared)" = 12288 ] || fail "size after CN 1's append: $(stat -c %s $M/shared)"
  [ "$(md5sum < $M/shared)" = "$(cat $M/ab2.md5)" ] || fail "CN 1's appended page not seen"
  # Shrink to one page and grow back: pages 1 and 2 are zeros now.
  dd of=$M/shared bs=4096 seek=1 count=0 2>/dev/null
  dd of=$M/shared bs=4096 seek=3 count=0 2>/dev/null
fi
barrier 796
if cn1; then
  exec 3>&-
fi
if cn1 && $two; then
  { head -c 4096 /tmp/zss-a01; head -c 8192 /dev/zero; } | md5sum > /tmp/zss-want
  [ "$(md5sum < $M/shared)" = "$(cat /tmp/zss-want)" ] ||
    fail "stale pages after another CN's truncate: $(od -An -tx1 -j4096 -N16 $M/shared)"
  cp /tmp/zss-want $M/final.md5
fi
barrier 797
# False sharing: every CN writes its own bytes of page 0 of one file, 16
# one-byte writes each, at once.
if [ "$ZOID_ROLE" = cn ]; then
  i=0
  while [ $i -lt 16 ]; do
    printf "$ZOID_NODE_ID" | dd of=$M/same bs=1 seek=$(( (ZOID_NODE_ID - 1) * 100 + i )) \
      conv=notrunc 2>/dev/null
    i=$((i + 1))
  done
fi
barrier 798
# every_cn_wrote FILE: each CN's 16 bytes are in FILE.
every_cn_wrote() {
  for n in $(seq 1 "$ZOID_CNS"); do
    got=$(dd if="$1" bs=1 skip=$(( (n - 1) * 100 )) count=16 2>/dev/null)
    [ "$got" = "$(printf "%016d" 0 | tr 0 "$n")" ] || fail "CN $n's bytes in $1: '$got'"
  done
}
if [ "$ZOID_ROLE" = cn ]; then
  every_cn_wrote $M/same
fi
# Shared memory through the mount (ssimap -f maps the file's pages): every
# CN adds to one word of a mapped page at once (the page's ownership moves
# at write faults), and CN 1 passes messages to CN 2 through two pages.
if cn1; then
  dd if=/dev/zero of=$M/mapped bs=4096 count=3 2>/dev/null
fi
barrier 784
if [ "$ZOID_ROLE" = cn ]; then
  /zoid/bin/ssimap -f $M/mapped add 0 0 100 > /dev/null || fail "ssimap add"
fi
barrier 785
if [ "$ZOID_ROLE" = cn ]; then
  got=$(/zoid/bin/ssimap -f $M/mapped get 0 0)
  [ "$got" = $((100 * ZOID_CNS)) ] || fail "mapped counter: $got, want $((100 * ZOID_CNS))"
fi
if cn1 && $two; then
  /zoid/bin/ssimap -f $M/mapped send 1 20 > /dev/null || fail "ssimap send"
fi
if cn2; then
  /zoid/bin/ssimap -f $M/mapped receive 1 20 > /dev/null || fail "ssimap receive"
fi
barrier 786
if [ "$ZOID_ROLE" = cn ]; then
  umount $M || fail "umount"
  grep -q "^90 zoidfs 64 memory$" $S/sets || fail "still attached after umount"
  [ "$(counter $S/stats clients_attached)" -ge 1 ] || fail "clients_attached"
  nonzero "zoidfs stats" $ZFS/stats
fi
barrier 799
if [ "$ZOID_ROLE" = ion ]; then
  # Everything the CNs cached reached the ION at umount.
  every_cn_wrote $X/same
  if $two; then
    [ "$(md5sum < $X/shared)" = "$(cat $X/final.md5)" ] || fail "shared differs on the ION"
  fi
fi
barrier 789
