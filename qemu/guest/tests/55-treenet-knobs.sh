# Every treenet knob refuses bad values with EINVAL and keeps its value.
. /zoid/tests/treenet-lib.sh
bad() { # knob value
  old=$(cat $T/$1)
  if (echo "$2" > $T/$1) 2>/dev/null; then echo "$1 accepted '$2'"; exit 1; fi
  [ "$(cat $T/$1)" = "$old" ] || { echo "$1 changed on a bad write"; exit 1; }
}
bad packet_size 10; bad packet_size 70000; bad packet_size x
bad ack_threshold -1; bad window 0; bad window $(($(cat $T/max_window) + 1))
bad rto_min_ms 0; bad rto_max_ms 600001; bad peer_timeout_ms 1; bad ack_delay_us 100001
bad max_msg_size 67108865; bad grant_slots 0
bad drop_ppm 1000001; bad dup_ppm abc; bad reorder_ppm -5; bad drop_burst 0; bad drop_burst 1001
bad deaf_ppm 1000001; bad deaf_ppm x; bad piggyback_acks 2; bad piggyback_acks on
bad softirq_rx 2; bad softirq_rx on; bad mute_acks 2; bad mute_acks on
bad fast_checksum 2; bad fast_checksum on; bad busy_poll_us 100001; bad busy_poll_us -1
bad tx_batch 257; bad tx_batch on; bad tx_batch -1
bad role boss; bad node_id 65535
bad engine_nice -21; bad engine_nice 20; bad engine_nice x; bad engine_nice 1.5
# The engine thread runs at engine_nice (-20 at load), and a change reaches it.
engine_nice() { thread_nice treenet; }
[ "$(cat $T/engine_nice)" = -20 ] && [ "$(engine_nice)" = -20 ] ||
  { echo "engine_nice $(cat $T/engine_nice), thread at $(engine_nice)"; exit 1; }
echo 5 > $T/engine_nice
[ "$(engine_nice)" = 5 ] || { echo "engine_nice 5: thread at $(engine_nice)"; exit 1; }
# The file shows the thread's value, whoever set it (an admin's renice).
for pid in $(thread_pids treenet); do renice 3 -p $pid > /dev/null; done
[ "$(cat $T/engine_nice)" = 3 ] || { echo "after renice 3: engine_nice $(cat $T/engine_nice)"; exit 1; }
echo -20 > $T/engine_nice
if (echo "no/such" > $T/bind) 2>/dev/null; then echo "bad name bound"; exit 1; fi
if (echo nosuch0 > $T/bind) 2>/dev/null; then echo "missing device bound"; exit 1; fi
if (echo "fly 1 2" > $T/selftest) 2>/dev/null; then echo "bad command ran"; exit 1; fi
grep -q '^drop_bad_checksum 0$' $T/stats
# The engine's peaks: seven values in µs, reset by 0 and nothing else.
[ "$(awk '$2 ~ /^[0-9]+$/' $T/peaks | wc -l)" = 7 ] || { echo "peaks:"; cat $T/peaks; exit 1; }
# A bad write is refused and resets nothing (the peaks are live: each may
# only have grown meanwhile).
for v in 1 x; do
  before=$(cat $T/peaks)
  if (echo $v > $T/peaks) 2>/dev/null; then echo "peaks accepted '$v'"; exit 1; fi
  echo "$before" | while read -r name was; do
    now=$(awk -v n="$name" '$1 == n { print $2 }' $T/peaks)
    [ "$now" -ge "$was" ] || { echo "$name fell from $was to $now on a bad write"; exit 1; }
  done || exit 1
done
echo 0 > $T/peaks
[ "$(awk '$1 == "hello_late_max_us" { print $2 }' $T/peaks)" -lt 1000000 ] || { cat $T/peaks; exit 1; }
# A barrier tag used again soon (two tests sharing tags) fails at once on
# the ION (EEXIST), rather than timing out after 600 s.
if [ "$ZOID_ROLE" = ion ]; then
  said() { dmesg | grep -c "barrier tag 9990 was used" || true; }
  before=$(said)
  echo "barrier 9990 0" > $T/selftest
  if (echo "barrier 9990 0" > $T/selftest) 2>/dev/null; then echo "barrier tag 9990 reused"; exit 1; fi
  [ "$(said)" -gt "$before" ] || { echo "no reason given in dmesg"; exit 1; }
fi
