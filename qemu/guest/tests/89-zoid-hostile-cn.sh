# A CN is not trusted (docs/reliability.md, "Threat model"): a CN's root
# passes every check of its own kernel, so the ION checks again.
# * Files: the CN's root, squashed to 65534 on the ION, reads, writes,
#   truncates, touches, lists and links files of uid 1000 through zoidfs
#   in every cache mode, buffered, O_DIRECT and mmap (tools/zoid/zattack.c):
#   every attempt fails with the errno the ION's VFS gives (EACCES, EPERM)
#   and the files are unchanged; what the mode allows still works (a 0711
#   program is readable, as over NFS), a write by a non-owner clears
#   set-user-id and set-group-id, and a file's owner writes and truncates
#   a file it created with mode 0 through the creating descriptor.
# * Senders: CN 1's kernel claims another node's id (treenet's
#   forge_origin: its ION's, and with 2 CNs CN 2's): nothing it sends in
#   that name is delivered; the ION counts drop_forged_origin and says so.
# * Load: with 2 CNs, CN 1 floods the ION with calls (sleeping ones that
#   hold every worker it may take, and 64 KiB echoes) while CN 2's null calls keep
#   within twice their idle round trip.
# * Answers held back: CN 1's kernel acknowledges nothing (treenet's
#   mute_acks) while it sends 8000 small messages the ION's receive
#   handler answers (the self-test's verdicts) and zoid calls, a null
#   call and a 64 KiB echo (a worker's) a second: the ION's queue to CN 1
#   stops at twice its bound (handler_sends_refused; zoid keeps the
#   answers it cannot send for later, replies_deferred), no thread of the
#   ION waits for CN 1 (treenet's send_stalls stays put), CN 2's calls go
#   on meanwhile, and once CN 1 acks again it is served.
# * Renames: walks through ".." in a symlink of the export never leave it
#   while the ION moves the directory they cross out and back.
. /zoid/tests/treenet-lib.sh
unset -f stat
Z=/sys/kernel/zoid
ZA=/zoid/bin/zattack
ZC=/zoid/bin/zoidcall
X=/zfs-hostile-export
M=/mnt/zfs-hostile
tstat() { counter $T/stats "$1"; }
fail() { echo "$*"; nonzero "zoidfs stats" /sys/kernel/zoidfs/stats; dmesg | tail -5; exit 1; }
# refused <errno> <command...>: the command must fail with that errno.
refused() { expect_fail "$@" || fail "not refused: $*"; }
# refused_io <command...>: a write or read the CN's page cache stands in
# for fails with EACCES, or EIO where the ION's refusal reaches the caller
# through write-back or read-ahead (as NFS reports those).
refused_io() {
  if out=$("$@"); then fail "not refused: $*: $out"; fi
  echo "$out" | grep -q "(13)$\|(5)$" || fail "not EACCES or EIO: $*: $out"
}

if [ "$ZOID_ROLE" = ion ]; then
  mkdir -p $X && mount -t tmpfs -o mode=1777 tmpfs $X
  echo "uid 1000's secret" > $X/secret && chown 1000:1000 $X/secret && chmod 600 $X/secret
  mkdir $X/private && echo inner > $X/private/f
  chown -R 1000:1000 $X/private && chmod 700 $X/private
  printf '#!/bin/sh\necho run\n' > $X/prog && chown 1000:1000 $X/prog && chmod 711 $X/prog
  mkdir $X/open && chmod 1777 $X/open
  echo $X > $Z/export
fi
barrier 1100
if [ "$ZOID_ROLE" = cn ]; then
  cp /etc/passwd /tmp/passwd.hostile
  echo "u1000:x:1000:1000::/:/bin/sh" >> /etc/passwd
  mkdir -p $M
  for cache in none strict loose; do
    mount -t zoidfs -o cache=$cache zoidfs $M || fail "mount cache=$cache"
    # Reads first: a refused write leaves its own bytes in this CN's page
    # cache (cache=loose), which later reads would find.
    refused 13 $ZA read $M/secret direct
    refused_io $ZA read $M/secret buffered
    # A page the ION refuses is a SIGBUS, never the data.
    if out=$($ZA read $M/secret mmap 2>&1); then fail "cache=$cache: mmap read: $out"; fi
    refused 13 $ZA write $M/secret direct
    refused_io $ZA write $M/secret buffered
    refused_io $ZA append $M/secret
    refused 13 $ZA truncate $M/secret 0
    refused 13 $ZA touch $M/secret
    refused 1 $ZA settime $M/secret 1000
    refused 1 $ZA link $M/secret $M/open/stolen-$cache-$ZOID_NODE
    refused 13 $ZA list $M/private
    refused 13 $ZA read $M/private/f buffered
    [ -z "$(ls $M/private 2>/dev/null)" ] || fail "cache=$cache: private listed"
    # Allowed: a 0711 program is readable (a CN pages it in), as over NFS.
    $ZA read $M/prog buffered > /dev/null || fail "cache=$cache: the 0711 program"
    # The owner's override: a file created with mode 0 is written and
    # truncated through the descriptor that created it.
    out=$(su -s /bin/sh u1000 -c "$ZA create0 $M/open/mode0-$cache-$ZOID_NODE") ||
      fail "cache=$cache: u1000's mode-0 file: $out"
    umount $M
  done
  cp /tmp/passwd.hostile /etc/passwd
fi
barrier 1101
if [ "$ZOID_ROLE" = ion ]; then
  [ "$(cat $X/secret)" = "uid 1000's secret" ] || fail "secret changed: $(cat $X/secret)"
  [ "$(/bin/busybox stat -c '%a %s' $X/secret)" = "600 18" ] ||
    fail "secret: $(/bin/busybox stat -c '%a %s' $X/secret)"
  [ "$(/bin/busybox stat -c %Y $X/secret)" != 1000 ] || fail "secret's time was set"
  ls $X/open | grep -q stolen && fail "a link to secret was made: $(ls $X/open)"
  for cache in none strict loose; do
    for cn in $(seq 1 "$ZOID_CNS"); do
      f=$X/open/mode0-$cache-cn$cn
      [ "$(cat $f)" = hel ] || fail "$f: '$(cat $f)'"
    done
  done
  # A write by a non-owner clears set-user-id and set-group-id.
  echo x > $X/setid && chown 1000:1000 $X/setid && chmod 6777 $X/setid
fi
barrier 1102
if [ "$ZOID_NODE" = cn1 ]; then
  mount -t zoidfs -o cache=none zoidfs $M || fail "mount"
  $ZA write $M/setid buffered > /dev/null || fail "write to the 6777 file"
  umount $M
fi
barrier 1103
if [ "$ZOID_ROLE" = ion ]; then
  [ "$(/bin/busybox stat -c %a $X/setid)" = 777 ] ||
    fail "set-id bits kept after a non-owner's write: $(/bin/busybox stat -c %a $X/setid)"
  echo > $Z/export
  umount $X
  forged0=$(tstat drop_forged_origin)
fi
barrier 1104
# Forged senders: CN 1's messages claim the ION's id, then (with 2 CNs)
# CN 2's.  Its pings are never answered; nothing it sends so is delivered.
if [ "$ZOID_NODE" = cn1 ]; then
  claims=0
  [ "${ZOID_CNS:-1}" -ge 2 ] && claims="0 2"
  for id in $claims; do
    # For a second only: CN 1's other traffic (ssi's heartbeats) is
    # forged too meanwhile, and lost.
    echo "$id" > $T/forge_origin
    st ping 0 64 1 > /dev/null 2>&1 & pinger=$!
    sleep 1
    echo 65535 > $T/forge_origin
    if wait $pinger; then fail "a ping as node $id was answered"; fi
  done
  st ping 0 64 1 > /dev/null || fail "CN 1's own pings after the forgery"
fi
barrier 1105
if [ "$ZOID_ROLE" = ion ]; then
  want=1; [ "${ZOID_CNS:-1}" -ge 2 ] && want=2
  got=$(( $(tstat drop_forged_origin) - forged0 ))
  [ "$got" -ge "$want" ] || fail "drop_forged_origin rose by $got, want at least $want"
  dmesg | grep -q "sent a message as node" || fail "no forged origin logged"
  echo "forged origins dropped: $got"
fi
if [ "$ZOID_ROLE" = cn ]; then st ping 0 64 1 > /dev/null || fail "$ZOID_NODE's pings after the forgery"; fi
barrier 1106
# One CN floods the ION with calls (sleeping calls that hold the workers
# it may take, and 64 KiB echoes) while another measures its null-call
# round trip: within twice its idle value (the median of 5 rounds of 100
# calls each way).
if [ "${ZOID_CNS:-1}" -ge 2 ]; then
  rounds() { for _ in 1 2 3 4 5; do $ZC null 100 | awk '{ print $5 }'; done | sort -n | sed -n 3p; }
  if [ "$ZOID_NODE" = cn2 ]; then rounds > /tmp/null-idle; fi
  barrier 1107
  if [ "$ZOID_NODE" = cn1 ]; then
    i=0; while [ $i -lt 16 ]; do $ZC sleep 8000 > /dev/null 2>&1 & i=$((i + 1)); done
    ( end=$(( $(cut -d. -f1 /proc/uptime) + 8 ))
      while [ "$(cut -d. -f1 /proc/uptime)" -lt $end ]; do $ZC echo 65536 20 > /dev/null 2>&1 || true; done ) &
  fi
  if [ "$ZOID_NODE" = cn2 ]; then
    sleep 1
    busy=$(rounds)
    idle=$(cat /tmp/null-idle)
    echo "cn2 null call: idle ${idle} us, while cn1 floods ${busy} us"
    awk -v b="$busy" -v i="$idle" 'BEGIN { exit !(b <= 2 * i) }' ||
      fail "cn2's null calls slowed from $idle to $busy us while cn1 flooded"
  fi
  [ "$ZOID_NODE" != cn1 ] || wait
  barrier 1108
fi
if [ "$ZOID_ROLE" = ion ]; then
  # ssi's failure detector, which would declare CN 1 dead while its
  # heartbeats wait behind its own flood (and rebuild without it), waits
  # out the window: this test measures zoid.
  HB=/sys/kernel/ssi/heartbeat_timeout_ms
  hb0=
  if [ -w $HB ]; then hb0=$(cat $HB); echo 600000 > $HB; fi
  refused0=$(tstat handler_sends_refused)
  stalls0=$(tstat send_stalls)
  deferred0=$(counter $Z/stats replies_deferred)
  # (Before the barrier: CN 1's flood starts right after it.)
  ok0=$(sed -n 's/.*received_ok \([0-9]*\).*/\1/p' $T/selftest_events)
fi
barrier 1109
# CN 1 is muted from here until it has handed its flood to treenet and
# then called the ION for MUTED seconds (its ION can tell it nothing
# meanwhile, not even a barrier's release): the ION and CN 2 check what
# they check within that time.  (CN 1's calls go out after its flood:
# treenet sends a neighbour's small messages in order.)
MUTED=60
FLOOD=8000
# queued <node>: the bytes queued for a neighbour (treenet's peers).
queued() { awk -v n="$1" '$1 == n { print $8 }' $T/peers; }
if [ "$ZOID_NODE" = cn1 ]; then
  sent0=$(tstat msgs_sent)
  echo 1 > $T/mute_acks
  echo "send 0 64 $FLOOD" > $T/selftest 2>/dev/null & sender=$!
  flood_sent() { [ "$(tstat msgs_sent)" -ge $((sent0 + FLOOD)) ]; }
  wait_until 300 flood_sent || fail "CN 1 sent $(( $(tstat msgs_sent) - sent0 )) of its $FLOOD messages"
  # Calls a second, each waiting for its answer (up to 30 s): a null
  # call (answered by the receive path) and a 64 KiB echo (by a worker).
  ( end=$(( $(cut -d. -f1 /proc/uptime) + MUTED - 5 ))
    while [ "$(cut -d. -f1 /proc/uptime)" -lt $end ]; do
      $ZC null 1 > /dev/null 2>&1 &
      $ZC echo 65536 1 > /dev/null 2>&1 &
      sleep 1
    done ) &
  sleep $MUTED
  echo 0 > $T/mute_acks
  kill $sender 2>/dev/null
  wait
  out=$(timeout 60 $ZC null 10 2>&1) || {
    diag; nonzero "zoid stats" $Z/stats; fail "CN 1's calls once it acks again: $out"
  }
fi
if [ "$ZOID_ROLE" = ion ]; then
  max=$(cat $T/max_msg_size)
  limit=$(( 2 * (2 * max + 2 * 1048576) + 65536 ))
  flood_in() {
    [ "$(sed -n 's/.*received_ok \([0-9]*\).*/\1/p' $T/selftest_events)" -ge $((ok0 + FLOOD)) ]
  }
  wait_until 300 flood_in || fail "CN 1's flood did not arrive: $(cat $T/selftest_events)"
  [ "$(tstat handler_sends_refused)" -gt "$refused0" ] ||
    { diag; fail "the flood filled no queue: handler_sends_refused $(tstat handler_sends_refused)"; }
  # While CN 1 calls: the queue stays within its limit.  (Its answers
  # are queued while the queue is below twice its bound, and wait in
  # zoid's backlog above it: replies_deferred, reported.)
  end=$(( $(cut -d. -f1 /proc/uptime) + MUTED - 5 ))
  while [ "$(cut -d. -f1 /proc/uptime)" -lt $end ]; do
    q=$(queued 1)
    [ "${q:-0}" -le $limit ] || fail "the queue to CN 1 holds $q bytes, over $limit"
    sleep 1
  done
  echo "CN 1 muted: queue $q bytes (limit $limit), handler sends refused $(( $(tstat handler_sends_refused) - refused0 )), answers deferred $(( $(counter $Z/stats replies_deferred) - deferred0 ))"
  # A worker answering CN 1 would have waited 4 x peer_timeout_ms for
  # room, and failed: none waits.
  [ "$(tstat send_stalls)" = "$stalls0" ] ||
    fail "a thread of the ION waited for muted CN 1: send_stalls $stalls0 -> $(tstat send_stalls)"
fi
# The receive path does not stall behind CN 1: CN 2's large calls (which
# go through zoid-rx) and null calls are answered all along.
if [ "$ZOID_NODE" = cn2 ]; then
  end=$(( $(cut -d. -f1 /proc/uptime) + MUTED ))
  n=0
  while [ "$(cut -d. -f1 /proc/uptime)" -lt $end ]; do
    timeout 20 $ZC echo 65536 5 > /dev/null || fail "cn2's 64 KiB calls while CN 1 was muted"
    timeout 20 $ZC null 10 > /dev/null || fail "cn2's null calls while CN 1 was muted"
    n=$((n + 1)); sleep 1
  done
  echo "cn2: $n rounds of calls answered while CN 1 was muted"
fi
barrier 1110
if [ "$ZOID_ROLE" = ion ]; then
  [ -z "$hb0" ] || echo "$hb0" > $HB
  end=$(( $(cut -d. -f1 /proc/uptime) + 60 ))
  until [ "$(queued 1)" = 0 ]; do
    [ "$(cut -d. -f1 /proc/uptime)" -lt $end ] || fail "the queue to CN 1 holds $(queued 1) bytes once it acks"
    sleep 1
  done
fi
# Renames racing walks: the ION moves a directory of the export out of
# it and back, again and again, while every CN opens a symlink below that
# directory whose target climbs back up with "..".  A walk the move meets
# halfway must fail or stay inside (LOOKUP_IN_ROOT); it must never climb
# out to the file of the same name beside the export.
R=/hostile-race
RACE=30
barrier 1111
if [ "$ZOID_ROLE" = ion ]; then
  mkdir -p $R && mount -t tmpfs -o mode=755 tmpfs $R
  mkdir -p $R/export/a/b/x $R/out
  printf inside > $R/export/target
  printf outside > $R/target
  ln -s ../../../target $R/export/a/b/x/up
  chmod -R a+rX $R
  echo $R/export > $Z/export
fi
barrier 1112
if [ "$ZOID_ROLE" = ion ]; then
  end=$(( $(cut -d. -f1 /proc/uptime) + RACE ))
  moves=0
  while [ "$(cut -d. -f1 /proc/uptime)" -lt $end ]; do
    mv $R/export/a/b $R/out/b && mv $R/out/b $R/export/a/b || fail "mv"
    moves=$((moves + 1))
  done
  echo "ION: moved the directory out and back $moves times"
fi
if [ "$ZOID_ROLE" = cn ]; then
  out=$(/zoid/bin/zoidunix race a/b/x/up inside $RACE) || fail "walks under renames: $out"
  echo "$ZOID_NODE: $out"
fi
barrier 1113
if [ "$ZOID_ROLE" = ion ]; then
  echo > $Z/export
  umount $R
fi
