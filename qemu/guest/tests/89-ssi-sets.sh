# ssi sets: defined on the ION (the home of every object) with a name, an
# object size and an I/O linker (ssi/linker.rs):
# * set 40: 64-byte memory objects; every node adds to a counter; such an
#   object cannot be mapped (SIGBUS), and a checkpoint records its size;
# * set 41: 4 KiB objects backed by a file on the ION: object 1 starts as
#   the file says, and flush writes the result back to the file; an
#   object past what the file can hold is refused and left uncreated;
# * bad definitions are refused: odd or too large sizes, taken ids and
#   names, relative paths, unknown linkers, sets already in use, and any
#   definition on a CN;
# * the CNs learn the definitions (names, sizes, linker kinds) from the ION;
# * set 43 is limited to the ION and node 1: the CNs see the limit, node 1
#   and the ION add to it and read 2, any other CN's add and read fail
#   (EACCES, counted not_member_accesses); a limit on a set in use, on an
#   undefined set, without nodes, or written on a CN is refused.
. /zoid/tests/treenet-lib.sh
S=/sys/kernel/ssi
M=/zoid/bin/ssimap
NODES=$((ZOID_CNS + 1))
F=/tmp/ssi-set41
fail() { echo "$*"; echo "--- sets"; cat $S/sets; echo "--- objects"; cat $S/objects
         nonzero "ssi stats" $S/stats; exit 1; }
refused() { if (echo "$1" > "$S/$2") 2> /dev/null; then fail "accepted: '$1' > $2"; fi; }

if [ "$ZOID_ROLE" = ion ]; then
  # The file's object 1 starts with the counter 5 (little-endian).
  dd if=/dev/zero of=$F bs=4096 count=2 2> /dev/null
  printf '\005' | dd of=$F bs=1 seek=4096 conv=notrunc 2> /dev/null
  echo "define 40 small 64 memory" > $S/sets || fail "define set 40"
  echo "define 41 backed 4096 file $F" > $S/sets || fail "define set 41"
  refused "define 42 odd 100 memory" sets
  refused "define 42 huge 8192 memory" sets
  refused "define 42 tiny 32 memory" sets
  refused "define 40 again 64 memory" sets
  refused "define 42 small 64 memory" sets
  refused "define 42 rel 64 file tmp/x" sets
  refused "define 42 what 64 disk" sets
  refused "define 42 a/b 64 memory" sets
  refused "define 42 nofile 64 file" sets
  refused "undefine 40" sets
  echo "47 0 1" > $S/add
  refused "define 47 late 64 memory" sets
  grep -q "^40 small 64 memory$" $S/sets || fail "set 40 not listed"
  grep -q "^41 backed 4096 file $F$" $S/sets || fail "set 41 not listed"
else
  refused "define 48 cn 64 memory" sets
fi
barrier 780
if [ "$ZOID_ROLE" = cn ]; then
  i=0
  until grep -q "^40 small 64 memory$" $S/sets && grep -q "^41 backed 4096 file$" $S/sets; do
    i=$((i + 1)); [ $i -le 50 ] || fail "the ION's sets are not known here"
    sleep 0.1
  done
fi
echo "40 3 1" > $S/add || fail "add to set 40"
echo "41 1 1" > $S/add || fail "add to set 41"
barrier 781
echo "40 3" > $S/read
[ "$(cat $S/read)" = "40 3 $NODES" ] || fail "set 40 object 3: $(cat $S/read), want $NODES"
echo "41 1" > $S/read
[ "$(cat $S/read)" = "41 1 $((5 + NODES))" ] || fail "set 41 object 1: $(cat $S/read), want $((5 + NODES))"
if $M -s 40 get 3 0 > /dev/null 2>&1; then fail "a 64-byte object was mapped"; fi
[ "$($M -s 41 get64le 1 0)" = $((5 + NODES)) ] || fail "mapping of set 41 object 1: $($M -s 41 get64le 1 0)"
barrier 782
if [ "$ZOID_ROLE" = ion ]; then
  echo 41 > $S/flush || fail "flush set 41"
  [ "$(cat $S/flush)" = "41 1" ] || fail "flush: $(cat $S/flush)"
  byte=$(dd if=$F bs=1 skip=4096 count=1 2> /dev/null | od -An -tu1 | tr -d ' ')
  [ "$byte" = $((5 + NODES)) ] || fail "the file holds $byte after flush, want $((5 + NODES))"
  echo "40 /tmp/ssi-set40.ckpt" > $S/checkpoint || fail "checkpoint set 40"
  [ "$(cat $S/checkpoint)" = "40 1 $(wc -c < /tmp/ssi-set40.ckpt)" ] \
    || fail "checkpoint: $(cat $S/checkpoint)"
  echo "40 3 100" > $S/add
  echo /tmp/ssi-set40.ckpt > $S/restore || fail "restore set 40"
  echo "40 3" > $S/read
  [ "$(cat $S/read)" = "40 3 $NODES" ] || fail "set 40 after restore: $(cat $S/read)"
  # An object past what the file can hold is refused, not created
  # (and not left held: the object stays uncreated).
  refused "41 2251799813685248 1" add
  [ "$(counter $S/stats linker_errors)" = 1 ] || fail "linker errors: $(counter $S/stats linker_errors), want 1"
  awk '$1 == 41 && $2 == 2251799813685248' $S/objects | grep -q " INV_OWNER 0 0 -$" \
    || fail "the refused object is not left uncreated"
else
  refused 41 flush
  [ "$(counter $S/stats linker_errors)" = 0 ] || fail "linker errors"
fi
if [ "$ZOID_ROLE" = ion ]; then
  echo "define 43 few 64 memory" > $S/sets || fail "define set 43"
  echo "members 43 1" > $S/sets || fail "limit set 43 to node 1"
  refused "members 40 1" sets
  refused "members 99 1" sets
  refused "members 43" sets
  refused "members 43 all 1" sets
  grep -q "^43 few 64 memory members 1$" $S/sets || fail "set 43's members not listed"
else
  refused "members 43 all" sets
fi
barrier 784
if [ "$ZOID_ROLE" = cn ]; then
  i=0
  until grep -q "^43 few 64 memory members 1$" $S/sets; do
    i=$((i + 1)); [ $i -le 50 ] || fail "set 43's members are not known here"
    sleep 0.1
  done
fi
if [ "$ZOID_ROLE" = ion ] || [ "$ZOID_NODE_ID" = 1 ]; then
  echo "43 5 1" > $S/add || fail "add to set 43 as a member"
else
  refused "43 5 1" add
  [ "$(counter $S/stats not_member_accesses)" = 1 ] \
    || fail "not_member_accesses: $(counter $S/stats not_member_accesses), want 1"
fi
barrier 785
if [ "$ZOID_ROLE" = ion ] || [ "$ZOID_NODE_ID" = 1 ]; then
  echo "43 5" > $S/read
  [ "$(cat $S/read)" = "43 5 2" ] || fail "set 43 object 5: $(cat $S/read), want 2"
else
  refused "43 5" read
fi
[ "$(counter $S/stats not_member)" = 0 ] || fail "members' messages dropped"
[ "$(counter $S/stats malformed)" = 0 ] && [ "$(counter $S/stats unexpected)" = 0 ] \
  && [ "$(counter $S/stats bad_token)" = 0 ] \
  || fail "malformed or unexpected messages"
nonzero "ssi stats" $S/stats
barrier 783
