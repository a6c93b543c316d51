# ssi hook points: all off at load; turned on from ssi's sysfs, they fire
# where they stand (zoidfs open/close on the CNs, call dispatch on the ION,
# treenet peer events); turned off, they stay quiet.  Unknown names fail.
. /zoid/tests/treenet-lib.sh
S=/sys/kernel/ssi
Z=/sys/kernel/zoid
X=/zfs-hooks-export
M=/mnt/zfs-hooks
fired() { awk -v n="$1" '$1 == n { print $3 }' $S/hooks; }
[ "$(grep -c ' off 0$' $S/hooks)" = 6 ] || { cat $S/hooks; exit 1; }
for bad in "+nosuch" "nosuch" "+" ""; do
  if (echo "$bad" > $S/hooks) 2>/dev/null; then echo "hooks '$bad' accepted"; exit 1; fi
done
if [ "$ZOID_ROLE" = ion ]; then
  mkdir -p $X && echo hello > $X/f && echo $X > $Z/export
fi
barrier 730
echo +all > $S/hooks
[ "$(grep -c ' on ' $S/hooks)" = 6 ]
if [ "$ZOID_ROLE" = cn ]; then
  mkdir -p $M && mount -t zoidfs zoidfs $M
  [ "$(cat $M/f)" = hello ]
  umount $M
  [ "$(fired zoidfs_open)" -ge 1 ] && [ "$(fired zoidfs_close)" -ge 1 ] || { cat $S/hooks; exit 1; }
fi
barrier 731
if [ "$ZOID_ROLE" = ion ]; then
  [ "$(fired zoid_dispatch)" -ge 1 ] || { cat $S/hooks; exit 1; }
fi
echo -all > $S/hooks
before=$(cat $S/hooks)
if [ "$ZOID_ROLE" = cn ]; then
  mount -t zoidfs zoidfs $M && cat $M/f > /dev/null && umount $M
fi
barrier 732
if [ "$ZOID_ROLE" = ion ]; then echo > $Z/export; fi
[ "$(cat $S/hooks)" = "$before" ] || { echo "fired while off:"; cat $S/hooks; exit 1; }
echo +zoidfs_open > $S/hooks
grep -q "^zoidfs_open on " $S/hooks && [ "$(grep -c ' on ' $S/hooks)" = 1 ]
echo -zoidfs_open > $S/hooks
cat $S/hooks | tr '\n' ' '; echo
barrier 733
