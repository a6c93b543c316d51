# The ION's zoid restarts under mounted CNs (treenet stays up): a hard
# mount's writer blocks meanwhile and finishes when the ION is back, with
# every byte in place (the handles of its open file still resolve); a soft
# mount's calls fail with EIO instead of hanging; nothing is written twice
# or lost.
. /zoid/tests/treenet-lib.sh
Z=/sys/kernel/zoid
X=/zfs-restart-export
H=/mnt/zfs-hard
S=/mnt/zfs-soft
RECORDS=150
export_it() {
  mkdir -p $X && chmod 1777 $X && echo $X > $Z/export
}
[ "$ZOID_ROLE" = ion ] && export_it
barrier 929
if [ "$ZOID_ROLE" = cn ]; then
  # Attach retries come every second; calls that go unanswered for a
  # timeo (3 s here) are sent again after a new attach.
  echo 5000 > $Z/timeout_ms
  mkdir -p $H $S
  mount -t zoidfs -o hard,timeo=30,retrans=0 zoidfs $H
  mount -t zoidfs -o soft,timeo=20,retrans=0 zoidfs $S
  echo "soft" > $S/soft-cn$ZOID_NODE_ID
  # The writer: fixed-size records at fixed offsets (a resent write lands
  # where the first did), paced so that the restart falls in the middle.
  (
    i=0
    while [ $i -lt $RECORDS ]; do
      printf 'cn%s record %05d ..............\n' "$ZOID_NODE_ID" $i |
        dd of=$H/data-cn$ZOID_NODE_ID bs=32 seek=$i conv=notrunc 2>/tmp/zfs-dd.err ||
        { echo "record $i:"; cat /tmp/zfs-dd.err; exit 1; }
      i=$((i + 1))
      sleep 0.05
    done
  ) > /tmp/zfs-writer.out 2>&1 &
  echo $! > /tmp/zfs-writer.pid
  sleep 2
fi
barrier 930
if [ "$ZOID_ROLE" = ion ]; then
  rmmod zoid_sample 2>/dev/null || true
  rmmod zoidfs && rmmod zoid
fi
barrier 931
if [ "$ZOID_ROLE" = cn ]; then
  # The ION's zoid is gone: soft calls fail (EIO) within their timeout.
  start=$(date +%s)
  if cat $S/soft-cn$ZOID_NODE_ID > /dev/null 2>/tmp/zfs-soft.err; then
    echo "soft read succeeded with the ION's zoid unloaded"; exit 1
  fi
  grep -q "Input/output error" /tmp/zfs-soft.err || { cat /tmp/zfs-soft.err; exit 1; }
  took=$(( $(date +%s) - start ))
  [ $took -le 30 ] || { echo "soft call took ${took}s"; exit 1; }
  # The hard writer is still there, waiting.
  kill -0 "$(cat /tmp/zfs-writer.pid)"
fi
barrier 932
if [ "$ZOID_ROLE" = ion ]; then
  # The export comes with the module: the CNs' resent calls, which arrive
  # as soon as zoid answers, find their handles' export.
  insmod /lib/zoid/zoid.ko export=$X test_plugins=1 && insmod /lib/zoid/zoidfs.ko
  [ "$(cat $Z/export)" = $X ]
fi
barrier 933
if [ "$ZOID_ROLE" = cn ]; then
  wait "$(cat /tmp/zfs-writer.pid)" || { cat /tmp/zfs-writer.out; exit 1; }
  i=0
  while [ $i -lt $RECORDS ]; do
    printf 'cn%s record %05d ..............\n' "$ZOID_NODE_ID" $i
    i=$((i + 1))
  done > /tmp/zfs-expect
  cmp /tmp/zfs-expect $H/data-cn$ZOID_NODE_ID || { head -c 400 $H/data-cn$ZOID_NODE_ID; exit 1; }
  # The soft mount works again too.
  [ "$(cat $S/soft-cn$ZOID_NODE_ID)" = soft ]
  umount $H; umount $S
  echo "zoid client: $(awk '$1 == "resent" || $1 == "timeouts" || $1 == "replies_stale"' $Z/stats | tr '\n' ' ')"
  echo 30000 > $Z/timeout_ms
fi
barrier 934
if [ "$ZOID_ROLE" = ion ]; then
  for i in $(seq 1 "$ZOID_CNS"); do [ "$(wc -c < $X/data-cn$i)" = $((32 * RECORDS)) ]; done
  echo > $Z/export
  rm -rf $X
fi
barrier 935
