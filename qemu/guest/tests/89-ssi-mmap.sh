# /dev/ssi: container objects mapped into processes share memory across
# the pset (ssimap, tools/ssi/ssimap.c).
# * Contention: every node adds 1 to the same word with atomic
#   instructions on its mapping, and to its own word of the same page
#   (false sharing); the page moves between nodes at each fault; the
#   totals are exact on every node.
# * Message passing over two objects: what the sender wrote before the
#   flag is what the receiver reads after it (sequential consistency).
# * A mapping and the sysfs accessors see the same object.
# * A private mapping is refused; faults and unmaps are counted.
. /zoid/tests/treenet-lib.sh
S=/sys/kernel/ssi
M=/zoid/bin/ssimap
N=200
NODES=$((ZOID_CNS + 1))
fail() { echo "$*"; echo "--- objects"; cat $S/objects; nonzero "ssi stats" $S/stats; exit 1; }

[ -c /dev/ssi ] || fail "no /dev/ssi"
$M private || fail "private mapping"
barrier 740
# Each node's own word: offset 64 + 4 * node id.
$M -s 20 add 1 0 $N > /dev/null &
shared=$!
$M -s 20 add 1 $((64 + 4 * ZOID_NODE_ID)) $N > /dev/null || fail "own word"
wait $shared || fail "shared word"
barrier 741
got=$($M -s 20 get 1 0)
[ "$got" = $((N * NODES)) ] || fail "shared word: $got, want $((N * NODES))"
i=0
while [ $i -le "$ZOID_CNS" ]; do
  got=$($M -s 20 get 1 $((64 + 4 * i)))
  [ "$got" = $N ] || fail "node $i's word: $got, want $N"
  i=$((i + 1))
done
barrier 742
case "$ZOID_NODE_ID" in
  0) $M -s 20 send 5 30 > /dev/null || fail "send" ;;
  1) $M -s 20 receive 5 30 > /dev/null || fail "receive" ;;
esac
barrier 743
# sysfs writes, mappings read; then the reverse.
[ "$ZOID_ROLE" = ion ] && echo "20 8 41" > $S/add
barrier 744
[ "$($M -s 20 get64le 8 0)" = 41 ] || fail "mapping after sysfs add: $($M -s 20 get64le 8 0)"
barrier 745
[ "$ZOID_NODE_ID" = 1 ] && $M -s 20 put64le 8 0 1000
barrier 746
echo "20 8" > $S/read
[ "$(cat $S/read)" = "20 8 1000" ] || fail "sysfs read after a mapping's write: $(cat $S/read)"
# Another set is another object: set 21's object 1 is untouched.
[ "$($M -s 21 get 1 0)" = 0 ] || fail "set 21 object 1 is not zero"
[ "$(counter $S/stats faults)" -gt 0 ] && [ "$(counter $S/stats unmaps)" -gt 0 ] \
  || fail "faults/unmaps not counted"
[ "$(counter $S/stats malformed)" = 0 ] && [ "$(counter $S/stats unexpected)" = 0 ] \
  && [ "$(counter $S/stats bad_token)" = 0 ] \
  || fail "malformed or unexpected messages"
nonzero "ssi stats" $S/stats
barrier 747
