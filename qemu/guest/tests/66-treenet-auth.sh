# Authenticated frames (/sys/kernel/treenet/auth_key, docs/treenet.md):
# with one secret on every node the pset moves verified traffic in both
# framing modes; a node given another key is refused (drop_bad_auth) and
# serves again once given the right one; a hostile flood (tools/treenet/
# tnflood.c: forged, bit-flipped and mutated frames) gets nothing past the
# tags: no forged hello makes a neighbour.  The key is cleared at the end.
. /zoid/tests/treenet-lib.sh
KEY=00112233445566778899aabbccddeeff
OTHER=ffeeddccbbaa99887766554433221100
trap 'echo off > $T/auth_key' EXIT

# The knob: root only, never shows the key, refuses bad values.
[ "$(ls -l $T/auth_key | cut -c1-10)" = "-rw-------" ] || { ls -l $T/auth_key; exit 1; }
[ "$(cat $T/auth_key)" = off ]
for bad in 0011 zz112233445566778899aabbccddeeff "$KEY$KEY" on; do
  if echo "$bad" > $T/auth_key 2>/dev/null; then echo "auth_key took '$bad'"; exit 1; fi
done
[ "$(cat $T/auth_key)" = off ]
barrier 660
echo $KEY > $T/auth_key
[ "$(cat $T/auth_key)" = on ]
! grep -q 0011 $T/auth_key || { echo "should have failed: grep -q 0011 \$T/auth_key"; exit 1; }
# Frames refused while the nodes switch are sent again: nothing is lost.
# The count starts once every node has the key.  (A node that has it
# refuses the untagged frames of one that has not yet, but counts them
# as drop_no_auth: wire::check_seal.)
barrier 659
bad0=$(stat drop_bad_auth)
tag=661
for ps in 240 0; do
  echo $ps > $T/packet_size
  barrier $tag; tag=669
  if [ "$ZOID_ROLE" = cn ]; then
    for size in 1 1000 65536 1048576; do st send 0 $size 1 > /dev/null; done
  else
    for cn in $(seq 1 "$ZOID_CNS"); do
      for size in 1 1000 65536 1048576; do st send $cn $size 1 > /dev/null; done
      st ping $cn 64 10 > /dev/null
    done
  fi
done
echo 0 > $T/packet_size
barrier 662
bad=$(( $(stat drop_bad_auth) - bad0 ))
if [ $bad != 0 ]; then
  # What was refused, and whether it verifies under another session
  # (the engine's log_refused_tag).
  echo "tags refused between nodes of one key: $bad"
  dmesg | grep 'its tag does not verify' | tail -5
  diag; exit 1
fi
[ "$(counter $T/selftest_events received_bad)" = 0 ]
# Every node has read its count before CN 1 takes another key: its hello
# under that key (sent at once) reached the ION before the ION's shell had
# read the count, now and then on ppc32, and failed the check above with
# one refused frame (2026-11-29, 12-02, twice on 12-05).  The ION's count
# for the next phase is taken before it too, for the same reason.
[ "$ZOID_ROLE" != ion ] || before=$(stat drop_bad_auth)
barrier 658

# CN 1 takes another key for 2 s (well under peer_timeout_ms, 5 s: with
# 3 s the ION's silence count reached 5.2 s on a loaded host, the session
# went down and the messages queued for CN 1 with it): the ION refuses
# its frames, and it the ION's; then it is given the right key back (and
# says hello under it at once) and the session goes on.
if [ "$ZOID_ROLE" = ion ]; then
  counter_reaches $T/stats drop_bad_auth $((before + 1)) || { echo "CN 1's frames were not refused"; diag; exit 1; }
  # Messages sent to CN 1 now wait out its wrong key, then arrive.
  st send 1 65536 3 > /dev/null
  echo "ion: drop_bad_auth +$(( $(stat drop_bad_auth) - before )) during CN 1's wrong key"
elif [ "$ZOID_NODE" = cn1 ]; then
  before=$(stat drop_bad_auth)
  echo $OTHER > $T/auth_key
  sleep 2
  echo $KEY > $T/auth_key
  sleep 1
  [ "$(stat drop_bad_auth)" -gt "$before" ] || { echo "the ION's frames were not refused"; diag; exit 1; }
fi
barrier 663

# A hostile flood under the key: CN 1 captures sealed frames for 2 s,
# then sends forged, mutated and replayed ones.
frames=${FLOOD_FRAMES:-20000}
[ -z "$KASAN" ] || frames=2000
if [ "$ZOID_ROLE" = ion ]; then
  deep="drop_hello_flood drop_reassembly drop_msg_too_long drop_bad_control"
  for c in $deep; do echo "$c $(stat $c)"; done > /tmp/auth-deep
  na0=$(stat drop_no_auth); ba0=$(stat drop_bad_auth)
fi
flood_from_cn1 "$frames" 11 2000
barrier 664
if [ "$ZOID_ROLE" = ion ]; then
  na=$(( $(stat drop_no_auth) - na0 )); ba=$(( $(stat drop_bad_auth) - ba0 ))
  echo "ion: flood of $frames: drop_no_auth +$na drop_bad_auth +$ba"
  # Flipped and mutated replays fail their tags.  (Forged frames for
  # other nodes or from unknown ones are dropped as such before their tag
  # is looked at; replays of the ION's own hellos are drop_bad_hello.)
  [ "$ba" -gt 0 ] || { echo "no bad tag counted"; nonzero stats $T/stats; exit 1; }
  # Nothing forged or altered got into the protocol: no hello from a
  # new node, no message header, no rendezvous message (all of which
  # 89-treenet-hostile's flood reaches without a key).
  while read -r c before; do
    [ "$(stat $c)" = "$before" ] || { echo "$c: $before -> $(stat $c): a forged frame got in"; exit 1; }
  done < /tmp/auth-deep
  pending=$(awk 'NR > 1 && $5 != "up"' $T/peers | wc -l)
  [ "$pending" = 0 ] || { echo "$pending neighbours not up:"; cat $T/peers; exit 1; }
fi
barrier 665
# Still serving, then back to unauthenticated frames.
if [ "$ZOID_ROLE" = cn ]; then st send 0 65536 1 > /dev/null; else
  for cn in $(seq 1 "$ZOID_CNS"); do st send $cn 65536 1 > /dev/null; done
fi
barrier 666
echo off > $T/auth_key
barrier 667
if [ "$ZOID_ROLE" = cn ]; then st send 0 4096 1 > /dev/null; fi
barrier 668
[ "$(counter $T/selftest_events received_bad)" = 0 ]
