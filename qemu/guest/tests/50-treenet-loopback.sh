# Loopback mode: one kernel runs both ends of treenet (fragmentation,
# reliability, reassembly, the self-test channels), under fault injection.
. /zoid/tests/treenet-lib.sh
echo loopback > $T/bind
grep -q '^loopback ' $T/links
i=0
while ! awk -v id="$ZOID_NODE_ID" '$1 == id && $5 == "up"' $T/peers | grep -q .; do
  i=$((i + 1)); [ $i -lt 100 ] || { echo "loopback peer never came up"; cat $T/peers; exit 1; }
  sleep 0.1
done
for ps in 240 0; do
  echo $ps > $T/packet_size
  for size in 1 240 5000 300000; do st send "$ZOID_NODE_ID" $size 2 > /dev/null; done
done
echo 50000 > $T/drop_ppm; echo 20000 > $T/dup_ppm; echo 50000 > $T/reorder_ppm
st send "$ZOID_NODE_ID" 200000 2
st ping "$ZOID_NODE_ID" 32 20
echo 0 > $T/drop_ppm; echo 0 > $T/dup_ppm; echo 0 > $T/reorder_ppm
echo 0 > $T/packet_size
[ "$(stat retransmits)" -gt 0 ] || { echo "no retransmissions under 5% loss"; exit 1; }
echo loopback > $T/unbind
! grep -q '^loopback ' $T/links || { echo "should have failed: grep -q '^loopback ' \$T/links"; exit 1; }
