# Messages of 1 B .. 4 MiB, CN -> ION and ION -> CN, in both framing
# modes (ZOID's 240-byte packets and MTU-sized frames), each verified by
# its receiver.  Every node of the pset runs this in step (barriers).
. /zoid/tests/treenet-lib.sh
tag=600
for ps in 240 0; do
  echo $ps > $T/packet_size
  # The timed pair: 1 MiB messages, 256 KiB in 240-byte packets under
  # KASAN (the size list still moves one of 1 MiB there; 2 more
  # took a minute per direction).
  pair=1048576; [ -z "$KASAN" ] || [ $ps != 240 ] || pair=262144
  barrier $tag; tag=$((tag + 1))
  if [ "$ZOID_ROLE" = cn ]; then
    for size in $(sizes_for $ps); do st send 0 $size 1 > /dev/null; done
    echo "packet_size=$ps cn->ion: $(st send 0 $pair 2)"
  fi
  barrier $tag; tag=$((tag + 1))
  if [ "$ZOID_ROLE" = ion ]; then
    for cn in $(seq 1 "$ZOID_CNS"); do
      for size in $(sizes_for $ps); do st send $cn $size 1 > /dev/null; done
    done
    echo "packet_size=$ps ion->cn: $(st send 1 $pair 2)"
  fi
  barrier $tag; tag=$((tag + 1))
done
echo 0 > $T/packet_size
[ "$(counter $T/selftest_events received_bad)" = 0 ]
[ "$(stat drop_bad_checksum)" = 0 ]
