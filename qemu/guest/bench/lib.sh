# SPDX-License-Identifier: GPL-2.0
# Helpers of the in-guest benchmark scripts (sourced by treenet.sh, zoid.sh,
# hooks.sh and fs.sh), in a 1 ION + 1 CN pset (fs.sh, with BENCH_ANY_CNS
# set, in one of 1 ION + N CNs too).
#
# IPv4 exists only for the benchmarks and only on the tree links: the ION's
# link to CN k is 10.77.k.1/24, CN k is 10.77.k.2/24.  Links are found by
# their MAC (qemu/pset mac(): 52:54:00:5a:<node id>:<link index>).  On a
# CN, ION_IP and CN_IP are the two ends of its own link; on the ION, those
# of CN 1's.
TN=${TREENET_SYSFS:-/sys/kernel/treenet}   # overridable to test the scripts
Z=/sys/kernel/zoid                         # zoid's sysfs, for every bench script
REPEAT=${REPEAT:-3}    # each measurement is the median of this many runs (TCG is noisy)
_link=1
[ "$ZOID_ROLE" = cn ] && _link=${ZOID_NODE_ID:-1}
ION_IP=10.77.$_link.1
CN_IP=10.77.$_link.2
failed=0

say() { echo "bench: $*"; }
die() { say "$*"; exit 1; }

# busy_polling <us>: this node's busy polling for sockets (net.core.busy_read
# and busy_poll) and for treenet (busy_poll_us, if loaded); 0: off.  What
# cannot be set is said, not fatal (a node leaving would hang its barriers).
busy_polling() {
  echo "$1" > /proc/sys/net/core/busy_read 2>/dev/null || say "cannot set net.core.busy_read"
  echo "$1" > /proc/sys/net/core/busy_poll 2>/dev/null || say "cannot set net.core.busy_poll"
  [ ! -e "$TN/busy_poll_us" ] || echo "$1" > "$TN/busy_poll_us" || say "cannot set busy_poll_us"
}

[ "$ZOID_CNS" = 1 ] || [ -n "${BENCH_ANY_CNS:-}" ] ||
  die "run me in a 1 ION + 1 CN pset (ZOID_CNS=$ZOID_CNS)"
HAVE_TN=
[ -e "$TN/selftest" ] && HAVE_TN=1

# The netdevice whose MAC is $1.
link_by_mac() {
  for d in /sys/class/net/*; do
    [ "$(cat "$d/address")" = "$1" ] && { basename "$d"; return 0; }
  done
  return 1
}

# addr <link> <ip/len>: give the link its address (and only this one).
addr() {
  ip addr flush dev "$1" && ip addr add "$2" dev "$1" && ip link set "$1" up ||
    die "cannot set $2 on $1"
  say "$1 $(cat "/sys/class/net/$1/address") $2"
}

# bench_addresses: this node's benchmark addresses (the ION's on every
# link).
bench_addresses() {
  if [ "$ZOID_ROLE" = ion ]; then
    c=1
    while [ $c -le "$ZOID_CNS" ]; do
      l=$(link_by_mac "52:54:00:5a:00:$(printf %02x $((c - 1)))") || die "no link to cn$c"
      addr "$l" "10.77.$c.1/24"
      c=$((c + 1))
    done
  else
    l=$(link_by_mac "52:54:00:5a:$(printf %02x "$ZOID_NODE_ID"):00") || die "no tree link"
    addr "$l" "$CN_IP/24"
  fi
}

# start_forwarder (ION): zoid's export in /tmp/export (open to the CNs'
# squashed root) and zoidbench's TCP forwarder serving /tmp/fwd on $PORT
# in the background, its pid in $server.
start_forwarder() {
  mkdir -p /tmp/export /tmp/fwd
  chmod 1777 /tmp/export          # CN root is squashed to 65534
  echo /tmp/export > "$Z/export" || die "cannot set the export"
  "$BIN" server "$PORT" "$ION_IP" /tmp/fwd &
  server=$!
}

# barrier <tag>: wait until the ION and every CN got here (treenet only; the
# TCP clients retry their connection until the server listens).
barrier() {
  [ -n "$HAVE_TN" ] || return 0
  echo "barrier $1 $ZOID_CNS" > "$TN/selftest" || die "treenet barrier $1 failed"
}

# field <name> <line>: the value of name=<value> in a result line.
field() { echo "$2" | sed -n "s/.* $1=\([0-9][0-9]*\).*/\1/p"; }

# fail <name> [why]: a measurement that did not work (why on one line).
fail() { echo "BENCH-FAIL $1 $(echo "${2:-no output}" | tr '\n' ' ')"; failed=1; }

# split <name:size:count>: sets $name, $size and $count from a SIZES entry.
split() { name=${1%%:*}; size=${1#*:}; count=${size#*:}; size=${size%%:*}; }

# value <tput|rtt> <result line>: Mbit/s of an "ok op=... bytes= ns=" line
# ($size x $count bytes), or the round trip in us of one with rtt_ns=;
# fails on anything else.
value() {
  case "$1:$2" in
    "tput:ok op="*)
      bytes=$(field bytes "$2"); ns=$(field ns "$2")
      [ "$bytes" = $((size * count)) ] && [ -n "$ns" ] && [ "$ns" -gt 0 ] || return 1
      awk -v b="$bytes" -v ns="$ns" 'BEGIN { printf "%.1f", b * 8000 / ns }' ;;
    "rtt:ok op="*)
      rtt=$(field rtt_ns "$2")
      [ -n "$rtt" ] || return 1
      awk -v r="$rtt" 'BEGIN { printf "%.1f", r / 1000 }' ;;
    *) return 1 ;;
  esac
}

# icmp_rtt <count>: <count> 32-byte ICMP echoes to the ION (busybox ping
# -A: the next as soon as the last is answered), as an "ok op=icmp rtt_ns="
# line (the mean; busybox prints milliseconds with three decimals).
icmp_rtt() {
  ping -A -q -c "$1" -s 32 "$ION_IP" | awk -F'[/ ]+' '
    /round-trip/ { for (i = 1; i <= NF; i++) if ($i == "=") { printf "ok op=icmp rtt_ns=%.0f\n", $(i + 2) * 1e6; exit } }'
}

# tn_ping <count>: <count> 32-byte round trips of treenet's self-test to
# the ION, its "ok ... rtt_ns=" line.
tn_ping() { echo "ping 0 32 $1" > "$TN/selftest" && cat "$TN/selftest"; }

# measure <name> <tput|rtt> <command...>: runs the command REPEAT times and
# prints "BENCH <name> <median>" (the runs on a "bench:" line before it).
measure() {
  m=$1 kind=$2 runs= i=0
  shift 2
  while [ "$i" -lt "$REPEAT" ]; do
    out=$("$@" 2>&1)
    v=$(value "$kind" "$out") || { fail "$m" "$out"; return; }
    runs="$runs $v" i=$((i + 1))
  done
  report "$m" $runs
}

# in_turns <tput|rtt> <repeat> <name a> <command a> <name b> <command b>:
# the two commands (shell text, evaluated at each run, so $size and the like
# are read then) in turns, <repeat> runs of each, each reported as the
# median of its runs (report).  A stream's rate and a round trip on this
# host drift over minutes by as much as two transports differ
# (docs/treenet.md), so a comparison is measured side by side in time.  An
# empty <command b> measures a alone.  A failed run ends the turns: what
# was measured before it is still reported, after the BENCH-FAIL line.
in_turns() {
  kind=$1 repeat=$2 a_name=$3 a_cmd=$4 b_name=$5 b_cmd=$6
  a_runs= b_runs= i=0
  while [ "$i" -lt "$repeat" ]; do
    i=$((i + 1))
    out=$(eval "$a_cmd" 2>&1)
    v=$(value "$kind" "$out") || { fail "$a_name" "$out"; break; }
    a_runs="$a_runs $v"
    [ -n "$b_cmd" ] || continue
    out=$(eval "$b_cmd" 2>&1)
    v=$(value "$kind" "$out") || { fail "$b_name" "$out"; break; }
    b_runs="$b_runs $v"
  done
  [ -z "$a_runs" ] || report "$a_name" $a_runs
  [ -z "$b_runs" ] || report "$b_name" $b_runs
}

# median <values...>
median() { echo "$@" | tr ' ' '\n' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# report <name> <values...>: the runs on a "bench:" line, then their median.
report() { n=$1; shift; say "$n runs: $*"; echo "BENCH $n $(median "$@")"; }

# snap <name>: a snapshot of this node's treenet and zoid counters, the
# context switches of treenet/zoid/softirq/bench threads and the virtio
# interrupts, in /tmp/snap.<name> (for delta).
snap() {
  {
    awk '{print "tn."$1, $2}' $TN/stats | grep -E "frames_|acks_sent|acks_piggy|kicks_saved|engine_|drive|hellos_sent|retransmits|rto_expired|duplicates|rendezvous_|grants_|send_waits|send_stalls|drop_|tx_|msgs_sent|msgs_received|rx_queue|softirq_"
    awk '{print "zoid."$1, $2}' $Z/stats 2>/dev/null | grep -E "calls_|direct|inline"
    # zoidfs's calls per operation, where a zoidfs mount is loaded.
    awk '{print "zfs."$1, $2}' /sys/kernel/zoidfs/stats 2>/dev/null
    for p in /proc/[0-9]*; do
      c=$(cat $p/comm 2>/dev/null) || continue
      case "$c" in treenet*|zoid*|ksoftirqd*|zoidbench|tcpbench|kworker*) ;; *) continue;; esac
      v=$(awk '/^voluntary_ctxt_switches/{v=$2} /^nonvoluntary_ctxt_switches/{n=$2} END{print v+n}' $p/status)
      echo "cs.$c.${p#/proc/} $v"
    done
    awk '/virtio/ {s=0; for(i=2;i<=NF;i++) if ($i ~ /^[0-9]+$/) s+=$i; print "irq."$NF, s}' /proc/interrupts
    # The NIC's queue counters (virtio-net: packets and kicks, each kick
    # an exit to QEMU), where the bench copied nicstats in.
    [ -x "${NICSTATS:-/zoid/bench/nicstats}" ] &&
      "${NICSTATS:-/zoid/bench/nicstats}" "${BENCH_IF:-eth0}" 2>/dev/null |
      awk '$1 ~ /kicks|packets/ {print "nic."$1, $2}'
  } | sort > /tmp/snap.$1
}

# delta <title> <a> <b> <n>: what changed from snapshot a to b, in all and
# per operation (n operations).
delta() {
  echo "== $1 (per op, N=$4)"
  awk -v n="$4" 'FNR==NR {a[$1]=$2; next} ($1 in a) {d=$2-a[$1]; if (d != 0) printf "  %-40s %8d  %.2f/op\n", $1, d, d/n}' /tmp/snap.$2 /tmp/snap.$3
}
