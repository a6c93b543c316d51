# Module lifecycle under traffic (issue 8), run by scripts/check.py in a
# pset of its own (in the full suite, the ssi tests that followed it
# failed: treenet peers flapped and barriers timed out; not yet
# understood, see docs/reliability.md).  Every CN
# loads and unloads the whole suite $RELOAD_LOOPS times (100 unless told),
# and between a load and the next unload it attaches to the ION, mounts
# zoidfs, writes and reads back a file and unmounts; while mounted, zoidfs,
# zoid and treenet refuse rmmod.  The ION serves throughout, then reloads
# its own suite $ION_LOOPS times (10) with a CN call after each load.
# kmemleak (debug x86_64) is checked by the harness when the node stops,
# with every module's loads and unloads behind it.  KUnit suites are
# filtered out meanwhile (they ran at the first load).
. /zoid/tests/treenet-lib.sh
Z=/sys/kernel/zoid
X=/reload-export
M=/mnt/reload
LOOPS=${RELOAD_LOOPS:-100}
ION_LOOPS=${ION_LOOPS:-10}
order=$(cat /lib/zoid/load-order)
reverse=$(echo "$order" | sed '1!G;h;$!d')
KF=/sys/module/kunit/parameters/filter_glob
load() { load_suite; }
unload() { for m in $reverse; do rmmod "$m"; done; }
must_not_unload() {
  for m in "$@"; do
    if rmmod "$m" 2>/dev/null; then echo "rmmod $m worked under a mount"; exit 1; fi
  done
}
export_it() { mkdir -p $X && chmod 1777 $X && echo $X > $Z/export; }
[ -w $KF ] && echo "no-such-suite" > $KF
[ "$ZOID_ROLE" = ion ] && export_it
barrier 994
t0=$(date +%s)
if [ "$ZOID_ROLE" = cn ]; then
  mkdir -p $M
  i=0
  while [ $i -lt "$LOOPS" ]; do
    unload
    load
    mount -t zoidfs -o soft,timeo=100 zoidfs $M
    echo "cn$ZOID_NODE_ID load $i" > $M/cn$ZOID_NODE_ID
    [ "$(cat $M/cn$ZOID_NODE_ID)" = "cn$ZOID_NODE_ID load $i" ] || { echo "load $i: read back wrong"; exit 1; }
    must_not_unload zoidfs zoid treenet
    umount $M
    i=$((i + 1))
  done
  echo "$LOOPS loads and unloads with a mount each in $(( $(date +%s) - t0 )) s"
fi
barrier 995
if [ "$ZOID_ROLE" = ion ]; then
  for i in $(seq 1 "$ZOID_CNS"); do
    [ "$(cat $X/cn$i)" = "cn$i load $((LOOPS - 1))" ] || { echo "CN $i's last write is not here"; exit 1; }
  done
  nonzero "zoid (ION)" $Z/stats
fi
t0=$(date +%s)
i=0
while [ $i -lt "$ION_LOOPS" ]; do
  if [ "$ZOID_ROLE" = ion ]; then
    unload
    load
    export_it
  fi
  barrier $((9500 + i))
  if [ "$ZOID_ROLE" = cn ]; then
    mount -t zoidfs -o soft,timeo=100 zoidfs $M
    echo "ion load $i" > $M/ion-cn$ZOID_NODE_ID
    [ "$(cat $M/ion-cn$ZOID_NODE_ID)" = "ion load $i" ]
    umount $M
  fi
  barrier $((9600 + i))
  i=$((i + 1))
done
[ "$ZOID_ROLE" = ion ] && echo "$ION_LOOPS ION loads and unloads in $(( $(date +%s) - t0 )) s"
[ -w $KF ] && echo "*.*" > $KF
barrier 996
if [ "$ZOID_ROLE" = ion ]; then
  echo > $Z/export
  rm -rf $X
fi
for m in $order; do [ -r /sys/kernel/$m/version ]; done
