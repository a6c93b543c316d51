# CNs and their processes are kept apart on the ION (issue 8):
# * descriptors of the unix plug-in belong to the CN process that opened
#   them: while every CN holds one open, a new process, on that CN or
#   another, finds none of them usable (EBADF), and the holder still reads
#   through its own;
# * a CN cannot take the ION for itself: past `max_per_cn` calls queued or
#   running its next call that needs a worker is refused at once with
#   EAGAIN, while the other CNs' calls are served.
. /zoid/tests/treenet-lib.sh
Z=/sys/kernel/zoid
ZU=/zoid/bin/zoidunix
ZC=/zoid/bin/zoidcall
if [ "$ZOID_ROLE" = ion ]; then
  mkdir -p /export && chmod 1777 /export
  echo "held by a CN" > /export/held
  echo /export > $Z/export
fi
barrier 830
if [ "$ZOID_ROLE" = cn ]; then
  rm -f /tmp/hold.out
  $ZU hold held 15 > /tmp/hold.out &
  i=0
  until grep -q '^fd ' /tmp/hold.out 2>/dev/null; do
    i=$((i + 1)); [ $i -le 100 ] || { echo "no descriptor held"; cat /tmp/hold.out; exit 1; }
    sleep 0.1
  done
fi
# Every CN holds its descriptor now.
barrier 831
if [ "$ZOID_ROLE" = cn ]; then
  $ZU foreign 0 40
  wait $! || { echo "the holder lost its descriptor:"; cat /tmp/hold.out; exit 1; }
  grep -q '^read 13$' /tmp/hold.out || { echo "holder:"; cat /tmp/hold.out; exit 1; }
fi
barrier 832
cap0=$(cat $Z/max_per_cn)
[ "$ZOID_ROLE" = ion ] && echo 2 > $Z/max_per_cn
barrier 833
if [ "$ZOID_NODE" = cn1 ]; then
  # Two calls that sleep 5 s on the ION: CN 1 is at its cap.
  $ZC sleep 5000 > /tmp/sleep1.out & s1=$!
  $ZC sleep 5000 > /tmp/sleep2.out & s2=$!
  sleep 1.5
  # (Not a null call: calls that small run inline in the ION's receive
  # path, uncounted, and never wait for a worker.)
  expect_fail 11 $ZC sleep 1
  wait $s1 && wait $s2 || { echo "capped calls:"; cat /tmp/sleep?.out; exit 1; }
elif [ "$ZOID_ROLE" = cn ]; then
  sleep 2
  $ZC sleep 1 > /dev/null
fi
barrier 834
if [ "$ZOID_ROLE" = ion ]; then
  echo "$cap0" > $Z/max_per_cn
  echo > $Z/export
fi
barrier 835
