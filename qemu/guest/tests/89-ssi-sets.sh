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
# * budget of objects: the ION lowers max_objects_per_node so that CN 1
#   has 8 objects left (more if another CN has made the ION create more
#   objects for it already: CN 1 reads how many in set 44's object 0);
#   CN 1 creates that many new objects of set 44, and its next new one is
#   refused with EAGAIN, read or written (refused_budget on the ION,
#   refused_answers on CN 1, nothing created for it); CN 2's new objects
#   are still created (its own budget); bad values of the knob are
#   refused; with the knob back at its default, CN 1's refused object is
#   created.
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
barrier 1160
# Budgets of objects per node.  Objects of set 44 (an undefined 4 KiB
# memory set no other test uses): 0 carries CN 1's allowance, CN 1
# creates 1001 onwards, CN 2 2001 and 2002.
charged() { awk -v n="$1" '$1 == n { c = $2 } END { print c + 0 }' $S/objects_per_node; }
if [ "$ZOID_ROLE" = ion ]; then
  [ "$(cat $S/max_objects_per_node)" = 65536 ] || fail "max_objects_per_node: $(cat $S/max_objects_per_node)"
  refused 16777217 max_objects_per_node
  refused -1 max_objects_per_node
  refused many max_objects_per_node
  [ "$(cat $S/max_objects_per_node)" = 65536 ] || fail "a refused value changed the knob"
  # What the CNs have made this node create so far (earlier tests).
  most=0
  n=1
  while [ $n -le "$ZOID_CNS" ]; do
    c=$(charged $n); [ "$c" -le "$most" ] || most=$c
    n=$((n + 1))
  done
  max=$((most + 8))
  allowance=$((max - $(charged 1)))
  refused0=$(counter $S/stats refused_budget)
  echo "44 0 $allowance" > $S/add || fail "set 44 object 0"
  # Back to the default whatever happens: the tests that follow create
  # objects.
  trap 'echo 65536 > $S/max_objects_per_node' EXIT
  echo $max > $S/max_objects_per_node || fail "max_objects_per_node $max"
  [ "$(cat $S/max_objects_per_node)" = $max ] || fail "max_objects_per_node: $(cat $S/max_objects_per_node), want $max"
fi
answers0=$(counter $S/stats refused_answers)
barrier 1161
if [ "$ZOID_NODE_ID" = 1 ]; then
  # (Object 0 is known to the ION already: reading it creates nothing.)
  echo "44 0" > $S/read || fail "set 44 object 0"
  allowance=$(cut -d' ' -f3 $S/read)
  [ "$allowance" -ge 8 ] || fail "CN 1's allowance: $allowance, want at least 8"
  o=1001
  while [ $o -le $((1000 + allowance)) ]; do
    echo "44 $o" > $S/read || fail "new object $o within the budget"
    o=$((o + 1))
  done
  if out=$( (echo "44 $o" > $S/read) 2>&1); then fail "new object $o past the budget was created"; fi
  echo "$out" | grep -q "Resource temporarily unavailable" || fail "new object $o past the budget: $out, want EAGAIN"
  [ "$(counter $S/stats refused_answers)" = $((answers0 + 1)) ] \
    || fail "refused_answers: $(counter $S/stats refused_answers), was $answers0"
  # A write of it is refused too; one created within the budget, known to
  # the ION, can be written (it costs nothing more).
  if out=$( (echo "44 $o 1" > $S/add) 2>&1); then fail "new object $o written past the budget"; fi
  echo "$out" | grep -q "Resource temporarily unavailable" || fail "write of new object $o: $out, want EAGAIN"
  echo "44 $((o - 1)) 1" > $S/add || fail "object $((o - 1)) within the budget"
elif [ "$ZOID_NODE_ID" = 2 ]; then
  echo "44 2001" > $S/read || fail "CN 2's new object 2001 (its own budget)"
  echo "44 2002 1" > $S/add || fail "CN 2's new object 2002 (its own budget)"
  [ "$(counter $S/stats refused_answers)" = "$answers0" ] || fail "CN 2's accesses refused"
fi
barrier 1162
if [ "$ZOID_ROLE" = ion ]; then
  # CN 1's read and write of its refused object.
  [ "$(counter $S/stats refused_budget)" = $((refused0 + 2)) ] \
    || fail "refused_budget: $(counter $S/stats refused_budget), was $refused0, want 2 more"
  [ "$(charged 1)" = $max ] || fail "objects created for CN 1: $(charged 1), want $max"
  [ "$ZOID_CNS" -lt 2 ] || [ "$(charged 2)" -le $max ] || fail "objects created for CN 2: $(charged 2), max $max"
  echo 65536 > $S/max_objects_per_node || fail "max_objects_per_node back to 65536"
  trap - EXIT
fi
barrier 1163
if [ "$ZOID_NODE_ID" = 1 ]; then
  echo "44 $o 1" > $S/add || fail "object $o once the budget is back"
  echo "44 $o" > $S/read
  [ "$(cat $S/read)" = "44 $o 1" ] || fail "object $o: $(cat $S/read), want 1"
  [ "$(counter $S/stats refused_answers)" = $((answers0 + 2)) ] \
    || fail "refused_answers: $(counter $S/stats refused_answers), was $answers0, want 2 more"
fi
barrier 1164
if [ "$ZOID_ROLE" = ion ]; then
  [ "$(charged 1)" = $((max + 1)) ] || fail "objects created for CN 1: $(charged 1), want $((max + 1))"
fi
[ "$(counter $S/stats bad_token)" = 0 ] && [ "$(counter $S/stats unexpected)" = 0 ] \
  || fail "bad_token or unexpected messages"
nonzero "ssi stats" $S/stats
barrier 783
