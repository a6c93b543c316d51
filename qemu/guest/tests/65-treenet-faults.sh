# The same traffic over a lossy, duplicating, reordering link (fault
# injection on every node's transmit path), in both framing modes; then
# over 20 % loss and over burst loss.
. /zoid/tests/treenet-lib.sh
big=1048576; [ -z "$KASAN" ] || big=262144
# traffic: 1 byte .. $big from every CN to the ION and back, each verified.
traffic() {
  if [ "$ZOID_ROLE" = cn ]; then
    for size in 1 1000 65536 $big; do st send 0 $size 1 > /dev/null; done
  else
    for cn in $(seq 1 "$ZOID_CNS"); do
      for size in 1 1000 65536 $big; do st send $cn $size 1 > /dev/null; done
    done
  fi
}
echo 20000 > $T/drop_ppm; echo 10000 > $T/dup_ppm; echo 20000 > $T/reorder_ppm
tag=650
start=$(cut -d' ' -f1 /proc/uptime)
for ps in 240 0; do
  echo $ps > $T/packet_size
  barrier $tag; tag=$((tag + 1))
  traffic
  barrier $tag; tag=$((tag + 1))
done
echo 0 > $T/drop_ppm; echo 0 > $T/dup_ppm; echo 0 > $T/reorder_ppm
echo 0 > $T/packet_size
# Heavy and bursty loss, MTU frames: 20 % of frames lost one by one, then
# bursts of 8 frames in a row (1.5 % of frames start one: about 11 % lost).
# Hellos are lost too: a longer peer_timeout_ms keeps an idle session from
# timing out on four lost hellos in a row (0.2^4 per 5 s at 20 % loss).
timeout0=$(cat $T/peer_timeout_ms)
tag=640
for loss in 200000:1 15000:8; do
  barrier $tag; tag=$((tag + 1))
  echo 20000 > $T/peer_timeout_ms
  echo "${loss#*:}" > $T/drop_burst; echo "${loss%:*}" > $T/drop_ppm
  barrier $tag; tag=$((tag + 1))
  traffic
  barrier $tag; tag=$((tag + 1))
  echo 0 > $T/drop_ppm; echo 1 > $T/drop_burst
done
barrier $tag
echo "$timeout0" > $T/peer_timeout_ms
lossy=$(awk -v s="$start" '{ printf "%.1f", $1 - s }' /proc/uptime)
echo "lossy_seconds=$lossy retransmits=$(stat retransmits) rto_expired=$(stat rto_expired)" \
  "duplicates=$(stat duplicates) inject_drop=$(stat inject_drop)"
[ "$(stat retransmits)" -gt 0 ]
[ "$(stat duplicates)" -gt 0 ]
[ "$(counter $T/selftest_events received_bad)" = 0 ]
