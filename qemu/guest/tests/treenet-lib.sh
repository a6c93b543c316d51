# Helpers for the in-guest tests (sourced): treenet selftests, barriers, zoidfs mounts.
T=/sys/kernel/treenet

# st <command...>: runs a selftest command, prints its result line.
st() {
  # (The reason goes last: a report that keeps only a failed command's last
  # lines shows it.)
  echo "$*" > $T/selftest || { diag; echo "selftest '$*' failed: $(cat $T/selftest)"; return 1; } >&2
  cat $T/selftest
}

# diag: treenet's state, for the log of a failed test.
diag() {
  echo "--- links"; cat $T/links
  echo "--- peers"; cat $T/peers
  echo "--- peer_log"; cat $T/peer_log
  nonzero stats $T/stats
  nonzero peaks $T/peaks
  echo "--- selftest_events"; cat $T/selftest_events | tr '\n' ' '; echo
}

# blocked: this node's tasks in uninterruptible sleep (a stuck server
# shows here), a stack each, then their names on one line.
blocked() {
  names=
  for d in /proc/[0-9]*; do
    grep -q '^State:.D' $d/status 2>/dev/null || continue
    n="$(awk '$1 == "Name:" { print $2 }' $d/status)/${d#/proc/}"
    echo "--- blocked $n"; cat $d/stack 2>/dev/null
    names="$names $n@$(cat $d/wchan 2>/dev/null)"
  done
  echo "blocked tasks:${names:- none}"
}

# thread_pids <comm>: the pids of the tasks named <comm>;
# thread_nice <comm>: their nice values, one per line.
thread_pids() {
  for c in /proc/[0-9]*/comm; do
    if [ "$(cat $c 2>/dev/null)" = "$1" ]; then _tp=${c%/comm}; echo ${_tp#/proc/}; fi
  done
}
thread_nice() { for _tp in $(thread_pids "$1"); do awk '{ print $19 }' /proc/$_tp/stat; done; }

# counter <file> <name>: one counter of a stats file; stat <name>: treenet's.
counter() { awk -v n="$2" '$1 == n { print $2 }' "$1"; }
stat() { counter $T/stats "$1"; }

# nonzero <title> <file>: a stats file's non-zero counters, on one line.
nonzero() { echo "--- $1 (non-zero)"; awk '$2 != 0' "$2" 2>/dev/null | tr '\n' ' '; echo; }

# expect_fail <errno-number> <command...>: the command (a zoid test tool)
# must fail, with that errno at the end of its output.
expect_fail() {
  want=$1; shift
  if out=$("$@"); then echo "expected errno $want: $* succeeded: $out"; return 1; fi
  echo "$out" | grep -q "($want)\$" || { echo "expected errno $want: $out"; return 1; }
}

# wait_until <seconds> <command...>: runs the command every 0.1 s until it
# succeeds; fails (silently: the caller says what it waited for) once
# <seconds> have gone by.  For state another node or an asynchronous notice
# moves, which may land after the barrier that follows its cause.
wait_until() {
  _wu_n=$(($1 * 10)); shift
  until "$@"; do
    _wu_n=$((_wu_n - 1))
    [ $_wu_n -ge 0 ] || return 1
    sleep 0.1
  done
}

# counter_reaches <file> <name> <min>: waits up to 10 s until a counter of
# a stats file is at least <min>; says where it stopped if it is not.
at_least() { [ "$(counter "$1" "$2")" -ge "$3" ]; }
counter_reaches() {
  wait_until 10 at_least "$@" || { echo "$2 in $1: $(counter "$1" "$2"), want at least $3"; return 1; }
}

# queue_to_ion_empty: nothing of this node's waits in treenet's queue to
# the ION (node 0), per /sys/kernel/treenet/peers.
queue_to_ion_empty() { awk 'NR > 1 && $1 == 0 { q = $8 } END { exit q != 0 }' $T/peers; }

# wait_for_set <line>: waits up to 5 s until this node's ssi lists a set
# the ION defined (<line> as /sys/kernel/ssi/sets prints it).
wait_for_set() {
  wait_until 5 grep -q "^$1\$" /sys/kernel/ssi/sets || { echo "the ION's set '$1' is not known here"; return 1; }
}

# barrier <tag>: every node of the pset meets here.
# Each barrier passed is noted with the uptime in /tmp/zoid-steps, which
# tests/run prints for a slow test (where its time went).
barrier() {
  st barrier "$1" "$ZOID_CNS" > /dev/null || return
  echo "$1 $(cut -d' ' -f1 /proc/uptime)" >> /tmp/zoid-steps
}

# flood_from_cn1 <frames> <seed> <capture_ms>: CN 1 keeps the treenet
# frames it sees for capture_ms while the ION sends it data, then floods
# the ION with <frames> hostile ones made from them (tools/treenet/
# tnflood.c); the other CNs do nothing.  With a second CN, some of the
# frames are the ION's captured hellos re-sealed in CN 2's name (node 2).
flood_from_cn1() {
  if [ "$ZOID_ROLE" = ion ]; then
    # (The flood may start before the last ones are answered.)
    _t=0
    while [ $_t -lt $(( $3 / 500 )) ]; do
      st send 1 4096 2 > /dev/null 2>&1 || true; sleep 0.5; _t=$((_t + 1))
    done
  elif [ "$ZOID_NODE" = cn1 ]; then
    _victim=; [ "$ZOID_CNS" -lt 2 ] || _victim=2
    /zoid/bin/tnflood "$(awk 'NR == 1 { print $1 }' $T/links)" "$1" "$2" "$3" $_victim
  fi
}

# The message sizes moved both ways: 1 byte .. 4 MiB.
SIZES="1 100 224 225 240 1000 1484 4096 65536 1048576 4194304"
# Under KASAN (x86_64 debug kernel, emulated) a 4 MiB message in 240-byte
# packets takes minutes: there the 240-byte mode stops at 1 MiB (4 MiB still
# goes in MTU-sized frames, and in both modes on the other kernels).
# (qemu/pset boots every KASAN kernel with kasan_multi_shot; the boot
# line may have left a long run's ring buffer.)
KASAN=
grep -q kasan_multi_shot /proc/cmdline && KASAN=1
dmesg | grep -q "KernelAddressSanitizer initialized" && KASAN=1
# zfsx operations per run in the zoidfs tests: a third under KASAN, where
# 300 took about 50 s with cache=none.
ZFSX_OPS=300
[ -z "$KASAN" ] || ZFSX_OPS=100
sizes_for() { # packet_size
  if [ -n "$KASAN" ] && [ "$1" = 240 ]; then echo "$SIZES" | sed 's/ 4194304//'; else echo "$SIZES"; fi
}
# zoidfs tests: mounting zoidfs on $M with options $2 must fail, leave
# nothing mounted, and say $1 in dmesg.
must_fail_mount() { # expected-dmesg-text options
  if mount -t zoidfs -o "$2" zoidfs $M 2>/dev/null; then
    echo "mount -o $2 succeeded"; umount $M; return 1
  fi
  dmesg | tail -3 | grep -q "$1" || { echo "no '$1' for -o $2:"; dmesg | tail -3; return 1; }
  ! grep -q " $M " /proc/mounts
}

# load_suite: loads the suite's modules in order, treenet with this node's
# identity and links as module parameters (30-reload, reload-loops.sh).
load_suite() {
  _devs=$(ls /sys/class/net | grep -v '^lo$' | tr '\n' ',' | sed 's/,$//')
  for _m in $(cat /lib/zoid/load-order); do
    if [ "$_m" = treenet ]; then
      insmod /lib/zoid/treenet.ko node_id="$ZOID_NODE_ID" role="$ZOID_ROLE" devices="$_devs"
    elif [ "$_m" = zoid ]; then
      insmod /lib/zoid/zoid.ko test_plugins=1
    else
      insmod /lib/zoid/$_m.ko
    fi
  done
}
