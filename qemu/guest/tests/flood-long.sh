# The hostile flood's long run (`make soak`, issue 8): FLOOD_TOTAL frames
# (1e6) from CN 1 to the ION in rounds of FLOOD_ROUND (2.5e5: the selftest
# barrier waits at most 600 s, and an x86_64 KASAN ION takes about 1400
# frames/s), each round the whole of 89-treenet-hostile with a seed of its
# own: CN 2 served throughout, drops counted by reason, every node moving
# verified messages afterwards.
total=${FLOOD_TOTAL:-1000000}
round=${FLOOD_ROUND:-250000}
sent=0
i=1
while [ "$sent" -lt "$total" ]; do
  n=$round
  [ $((total - sent)) -ge "$n" ] || n=$((total - sent))
  start=$(cut -d' ' -f1 /proc/uptime)
  FLOOD_FRAMES=$n FLOOD_SEED=$((100 + i)) HOSTILE_TAG=$((8400 + 4 * i)) \
    sh -e /zoid/tests/89-treenet-hostile.sh || { echo "flood round $i failed"; exit 1; }
  sent=$((sent + n))
  echo "flood round $i: $n frames, $sent of $total, $(awk -v s="$start" '{ printf "%.0f", $1 - s }' /proc/uptime) s"
  i=$((i + 1))
done
