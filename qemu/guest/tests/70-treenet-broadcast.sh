# Reliable broadcast from the ION to all its CNs; every CN verifies every
# message, and rendezvous (large messages) and eager paths are both used.
. /zoid/tests/treenet-lib.sh
# (Broadcast bytes: at least the 2 x 1 MiB messages', on both sides.)
bytes0=$(stat bcast_bytes_sent) bytes_in0=$(stat bcast_bytes_received)
barrier 700
if [ "$ZOID_ROLE" = ion ]; then
  before=$(stat frames_sent)
  for size in 1 4096 1048576; do st send all $size 2; done
  [ "$(stat bcast_sent)" -ge 6 ]
  [ "$(stat rendezvous_waits)" -gt 0 ]
  [ $(( $(stat bcast_bytes_sent) - bytes0 )) -ge 2097152 ] ||
    { echo "bcast_bytes_sent moved by $(( $(stat bcast_bytes_sent) - bytes0 ))"; exit 1; }
fi
barrier 701
if [ "$ZOID_ROLE" = cn ]; then
  [ "$(stat bcast_received)" -ge 6 ] || { echo "bcast_received=$(stat bcast_received)"; exit 1; }
  [ $(( $(stat bcast_bytes_received) - bytes_in0 )) -ge 2097152 ] ||
    { echo "bcast_bytes_received moved by $(( $(stat bcast_bytes_received) - bytes_in0 ))"; exit 1; }
fi
# ack_threshold=0: no rendezvous, everything eager.
echo 0 > $T/ack_threshold
barrier 702
[ "$ZOID_ROLE" = ion ] && st send all 1048576 1
barrier 703
echo 16 > $T/ack_threshold
