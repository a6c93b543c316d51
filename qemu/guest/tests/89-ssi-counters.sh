# ssi containers: every node of the pset adds to shared counters at once
# (write accesses contend for ownership of the same objects); the totals
# are exact on every node.  A later write invalidates every reader's copy,
# so each node reads the new value.  Bad commands fail with nothing done.
. /zoid/tests/treenet-lib.sh
S=/sys/kernel/ssi
N=25
NODES=$((ZOID_CNS + 1))
# expect <object> <value>: this node reads <value> from object <object> of set 1.
expect() {
  echo "1 $1" > $S/read
  [ "$(cat $S/read)" = "1 $1 $2" ] && return 0
  echo "object $1: read '$(cat $S/read)', want $2"
  echo "--- objects"; cat $S/objects; nonzero "ssi stats" $S/stats
  return 1
}

barrier 710
i=0
while [ $i -lt $N ]; do
  echo "1 1 1" > $S/add
  echo "1 2 3" > $S/add
  i=$((i + 1))
done
barrier 711
expect 1 $((N * NODES))
expect 2 $((3 * N * NODES))
barrier 712
# Everybody holds a read copy now; the ION's write invalidates them all.
if [ "$ZOID_ROLE" = ion ]; then
  echo "1 1 1000" > $S/add
  [ "$(cat $S/add)" = "1 1 $((N * NODES + 1000))" ]
fi
barrier 713
# The ION's write took every other copy away (invalidated, or handed over
# with ownership).
if [ "$ZOID_ROLE" = cn ]; then
  grep -q "^1 1 INV_COPY " $S/objects || { echo "still a copy:"; cat $S/objects; exit 1; }
fi
expect 1 $((N * NODES + 1000))
# Another set is another object space.
echo "2 1" > $S/read
[ "$(cat $S/read)" = "2 1 0" ]
barrier 714
grep -q "^1 1 READ_\(COPY\|OWNER\) " $S/objects || { cat $S/objects; exit 1; }
for bad in "1 2" "1 2 3 4" "x 1 1" "4294967296 1 1"; do
  if (echo "$bad" > $S/add) 2>/dev/null; then echo "add '$bad' accepted"; exit 1; fi
done
if (echo "1" > $S/read) 2>/dev/null; then echo "read '1' accepted"; exit 1; fi
[ "$(counter $S/stats malformed)" = 0 ] && [ "$(counter $S/stats unexpected)" = 0 ]
# Every Copy and Ownership carried its request's token.
[ "$(counter $S/stats bad_token)" = 0 ] || { echo "bad_token: $(counter $S/stats bad_token)"; exit 1; }
nonzero "ssi stats" $S/stats
barrier 715
