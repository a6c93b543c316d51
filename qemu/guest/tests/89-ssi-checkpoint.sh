# ssi checkpoint and restore: the ION dumps a set whose objects are owned
# all over the pset; on a fresh cluster (ssi reloaded everywhere) the dump
# restores the same values on every node, and dumping again gives the same
# bytes.  Damaged or truncated files are refused with nothing restored;
# only the ION (which knows every object) dumps.
. /zoid/tests/treenet-lib.sh
S=/sys/kernel/ssi
OBJECTS="0 1 2 3 4"
barrier 720
if [ "$ZOID_ROLE" = ion ]; then
  for i in $OBJECTS; do echo "3 $i $((100 * i))" > $S/add; done
fi
barrier 721
if [ "$ZOID_ROLE" = cn ]; then
  for i in $OBJECTS; do echo "3 $i 1" > $S/add; done
fi
barrier 722
if [ "$ZOID_ROLE" = ion ]; then
  echo "3 /tmp/set3.ckpt" > $S/checkpoint
  # file header, set header, 5 x (record header + 4 KiB)
  [ "$(cat $S/checkpoint)" = "3 5 $((16 + 24 + 5 * (16 + 4096)))" ] || { cat $S/checkpoint; exit 1; }
else
  if (echo "3 /tmp/x.ckpt" > $S/checkpoint) 2>/dev/null; then echo "a CN dumped a set"; exit 1; fi
fi
barrier 723
rmmod ssi
insmod /lib/zoid/ssi.ko
barrier 724
if [ "$ZOID_ROLE" = ion ]; then
  cp /tmp/set3.ckpt /tmp/bad.ckpt
  printf 'X' | dd of=/tmp/bad.ckpt bs=1 seek=5000 conv=notrunc 2>/dev/null
  head -c 100 /tmp/set3.ckpt > /tmp/short.ckpt
  for f in /tmp/bad.ckpt /tmp/short.ckpt /tmp/nosuch.ckpt; do
    if (echo $f > $S/restore) 2>/dev/null; then echo "$f restored"; exit 1; fi
  done
  [ "$(counter $S/stats bad_checkpoints)" = 2 ]
  [ -z "$(cat $S/objects)" ] || { echo "restored from a bad file:"; cat $S/objects; exit 1; }
  echo /tmp/set3.ckpt > $S/restore
  [ "$(cat $S/restore)" = "1 5" ]
fi
barrier 725
for i in $OBJECTS; do
  echo "3 $i" > $S/read
  want="3 $i $((100 * i + ZOID_CNS))"
  [ "$(cat $S/read)" = "$want" ] || { echo "read '$(cat $S/read)', want '$want'"; cat $S/objects; exit 1; }
done
barrier 726
if [ "$ZOID_ROLE" = ion ]; then
  echo "3 /tmp/again.ckpt" > $S/checkpoint
  cmp /tmp/set3.ckpt /tmp/again.ckpt
fi
nonzero "ssi stats" $S/stats
barrier 727
