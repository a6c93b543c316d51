#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# bench-profile, the in-guest half (scripts/bench-profile.sh runs it on both
# nodes of a 1 ION + 1 CN pset): where the CPU time goes, on both nodes,
# while the CN drives one workload at a time against the ION.  kprof samples
# every CPU of the node (the kernel's cpu-clock event, modules named from
# /proc/kallsyms) for the length of one workload.
#
# WORKLOADS (default: all of them), each name:
#   tcp_4k, tcp_1m         tcpbench streams 4 KiB / 1 MiB writes to the ION
#   treenet_4k, treenet_1m treenet's self-test sink, the same sizes
#   treenet_auth_1m        the same with authenticated frames (a key on both)
#   treenet_crc_1m         the same with CRC-32C checksums (fast_checksum=0)
#   tcp_rtt, treenet_rtt   32-byte round trips
#   icmp_rtt               32-byte ICMP echoes (busybox ping -A), answered in
#                          the ION's softirq: the floor a transport that
#                          answers in the receive path could reach
#   zoid_write_1m, zoid_read_1m  1 MiB write/read calls through /dev/zoid
#                          (the unix plug-in on a tmpfs export), one at a time
#   fwd_write_1m, fwd_read_1m    the same calls through zoidbench's TCP
#                          forwarder (bench-zoid's CIOD baseline)
#   zoid_null, fwd_null    null calls
#   zoidfs_write_1m, zoidfs_read_1m  fsbench's sequential write (ending
#                          with an fsync) and read, 1 MiB blocks, on zoidfs
#                          with cache=loose (caches dropped before each)
#   zoidfs_par1_read, zoidfs_par2_read, zoidfs_par4_read  fsbench par read:
#                          1, 2 or 4 processes at once, each reading its own
#                          16 MiB file in 1 MiB blocks (make bench's scaling
#                          run; the files are written in the warm-up)
#   zoidfs_write_4k        fsbench's sequential write of 4 MiB in 4 KiB blocks
#                          (then fsync) on the zoidfs mount
#   local_meta, local_write_4k  the same as zoidfs_meta and zoidfs_write_4k
#                          on a tmpfs of the CN's own: the floor any network
#                          filesystem's figures meet (no calls at all)
#   zoidfs_meta            fsbench meta on the same mount: 2000 files created,
#                          stat'ed and unlinked in one directory
# KNOBS: sysfs knobs both nodes set before the first workload, as
#   "treenet/ack_threshold=0 zoid/workers=8" (under /sys/kernel).
# MOUNT_OPTS: zoidfs mount options (default cache=loose).
# RTT_OPS (default 2000): round trips of the *_rtt, *_null and *_meta
# workloads (more samples for a sharper profile).
# The output, per workload and node, between "== <workload> <node>" and
# "== end": on the CN the workload's result, kprof's PROF lines
# (docs/treenet.md "Where the time goes"), then what the node's counters
# did (lib.sh's snap and delta: frames, acks, engine passes, thread
# switches, virtio interrupts; in all and per message or round trip).
BIN=${TCPBENCH:-/zoid/bench/tcpbench}
ZB=${ZOIDBENCH:-/zoid/bench/zoidbench}
ZPORT=5202
KPROF=${KPROF:-/zoid/bench/kprof}
PORT=5201
WORKLOADS=${WORKLOADS:-"tcp_4k treenet_4k tcp_1m treenet_1m tcp_rtt treenet_rtt"}
TOP=${TOP:-40}
. "$(dirname "$0")/lib.sh"
[ -x "$BIN" ] || die "no tcpbench at $BIN"
[ -x "$KPROF" ] || die "no kprof at $KPROF"
[ -n "$HAVE_TN" ] || die "no $TN/selftest"
bench_addresses
[ -z "${BUSY_POLL_US:-}" ] || busy_polling "$BUSY_POLL_US"   # treenet's and sockets'

# ops <workload>: how many messages or round trips it runs.
ops() {
  case "$1" in
    *_4k) echo 8192 ;;
    *_1m) echo 48 ;;
    zoidfs_par1_read) echo 16 ;;   # MiB
    zoidfs_par2_read) echo 32 ;;
    zoidfs_par4_read) echo 64 ;;
    *_rtt | *_null | *_meta) echo "${RTT_OPS:-2000}" ;;
    *) echo 1 ;;
  esac
}

# local_dir: a tmpfs of the CN's own at /tmp/local (the local_* workloads:
# what the same system calls cost with no network filesystem at all).
local_dir() {
  mkdir -p /tmp/local && { grep -q " /tmp/local " /proc/mounts || mount -t tmpfs local /tmp/local; }
}

# run <workload>: the CN's side of one workload, its result on stdout.
run() {
  n=$(ops "$1")
  case "$1" in
    tcp_4k) "$BIN" tput "$ION_IP" "$PORT" 4096 "$n" ;;
    tcp_1m) "$BIN" tput "$ION_IP" "$PORT" 1048576 "$n" ;;
    tcp_rtt) "$BIN" ping "$ION_IP" "$PORT" 32 "$n" ;;
    icmp_rtt) ping -A -q -c "$n" -s 32 "$ION_IP" | tail -n 1 ;;
    treenet_4k) echo "sink 0 4096 $n" > "$TN/selftest" && cat "$TN/selftest" ;;
    treenet_1m | treenet_auth_1m | treenet_crc_1m)
      echo "sink 0 1048576 $n" > "$TN/selftest" && cat "$TN/selftest" ;;
    treenet_rtt) echo "ping 0 32 $n" > "$TN/selftest" && cat "$TN/selftest" ;;
    zoid_write_1m | zoid_read_1m) op=${1#zoid_}; "$ZB" "${op%_1m}" zoid 1048576 "$n" ;;
    fwd_write_1m | fwd_read_1m) op=${1#fwd_}; "$ZB" "${op%_1m}" "tcp:$ION_IP:$ZPORT" 1048576 "$n" ;;
    zoid_null) "$ZB" null zoid "$n" ;;
    fwd_null) "$ZB" null "tcp:$ION_IP:$ZPORT" "$n" ;;
    zoidfs_write_1m) "$FSB" write /mnt/zp/seq 1048576 $((n * 1048576)) ;;
    zoidfs_read_1m) "$FSB" read /mnt/zp/seq 1048576 ;;
    zoidfs_par[124]_read) np=${1#zoidfs_par}; np=${np%_read}
      "$FSB" par read /mnt/zp/par "$np" 1048576 16777216 ;;
    zoidfs_write_4k) "$FSB" write /mnt/zp/seq4k 4096 4194304 ;;
    local_meta) local_dir && mkdir -p /tmp/local/meta && "$FSB" meta /tmp/local/meta "$n" 1 | tr '\n' ' ' ;;
    local_write_4k) local_dir && "$FSB" write /tmp/local/seq4k 4096 4194304 ;;
    zoidfs_meta) mkdir -p /mnt/zp/meta && "$FSB" meta /mnt/zp/meta "$n" 1 | tr '\n' ' ' ;;
    *) echo "unknown workload $1"; return 1 ;;
  esac
}

zoid_calls= zoidfs=
case " $WORKLOADS " in *" zoid_"* | *" fwd_"* | *" zoidfs_"*) zoid_calls=1 ;; esac
case " $WORKLOADS " in *" zoidfs_"*) zoidfs=1 ;; esac
FSB=${FSBENCH:-/zoid/bench/fsbench}
if [ -n "$zoid_calls" ]; then
  [ -x "$ZB" ] || die "no zoidbench at $ZB"
  [ -d "$Z" ] || die "zoid is not loaded"
fi
if [ "$ZOID_ROLE" = ion ]; then
  "$BIN" server "$PORT" "$ION_IP" &
  server=$!
  if [ -n "$zoid_calls" ]; then
    # bench-zoid's setup (lib.sh start_forwarder): zoid's export and the
    # TCP forwarder, each on its own tmpfs directory.
    mkdir -p /tmp/export /tmp/fwd
    chmod 1777 /tmp/export
    echo /tmp/export > "$Z/export" || die "cannot set the export"
    "$ZB" server "$ZPORT" "$ION_IP" /tmp/fwd &
    zserver=$!
  fi
fi
for k in ${KNOBS:-}; do
  echo "${k#*=}" > "/sys/kernel/${k%%=*}" || die "cannot set $k"
done
barrier 1
if [ "$ZOID_ROLE" = cn ]; then
  # Warm-ups: ARP, the TCP server's start, treenet's first round trip.
  "$BIN" ping "$ION_IP" "$PORT" 32 20 > /dev/null || fail tcp_warmup
  echo "ping 0 32 20" > "$TN/selftest" || fail treenet_warmup
  if [ -n "$zoid_calls" ]; then
    # Attach, and the files' pages, before anything is sampled.
    "$ZB" null zoid 20 > /dev/null || fail zoid_warmup
    "$ZB" write zoid 1048576 4 > /dev/null || fail zoid_warmup
    "$ZB" write "tcp:$ION_IP:$ZPORT" 1048576 4 > /dev/null || fail fwd_warmup
  fi
  if [ -n "$zoidfs" ]; then
    mkdir -p /mnt/zp
    mount -t zoidfs -o "${MOUNT_OPTS:-cache=loose}" zoidfs /mnt/zp || die "cannot mount zoidfs"
    "$FSB" write /mnt/zp/seq 1048576 $(($(ops zoidfs_write_1m) * 1048576)) > /dev/null ||
      fail zoidfs_warmup
    case " $WORKLOADS " in
      *" zoidfs_par"*) mkdir -p /mnt/zp/par &&
        "$FSB" par write /mnt/zp/par 4 1048576 16777216 > /dev/null || fail zoidfs_par_warmup ;;
    esac
  fi
fi
i=0
for w in $WORKLOADS; do
  i=$((i + 1))
  # Both nodes seal frames as the workload says (a key can change at run
  # time, docs/treenet.md).
  case "$w" in
    *_auth_*) echo 000102030405060708090a0b0c0d0e0f > "$TN/auth_key" ;;
    *) echo off > "$TN/auth_key" ;;
  esac
  case "$w" in
    *_crc_*) echo 0 > "$TN/fast_checksum" ;;
    *) echo 1 > "$TN/fast_checksum" ;;
  esac
  # A read starts from an empty page cache.
  # The ION waits for that (a sync may write back the warm-up's data), so
  # that both nodes' snapshots and samples cover the workload alone.
  [ "$ZOID_ROLE" = cn ] && case "$w" in zoidfs_*) sync; echo 3 > /proc/sys/vm/drop_caches ;; esac
  barrier "1$i"
  snap a
  "$KPROF" -n "$TOP" -o "/tmp/prof.$w" 3600 &
  kp=$!
  barrier "2$i"            # both nodes sample
  result=
  if [ "$ZOID_ROLE" = cn ]; then
    result=$(run "$w" 2>&1) || fail "$w" "$result"
  fi
  barrier "3$i"            # the workload is over
  kill -INT "$kp"
  wait "$kp" || fail "kprof_$w" "kprof failed"
  snap b
  echo "== $w $ZOID_ROLE"
  [ -n "$result" ] && echo "result: $result"
  cat "/tmp/prof.$w"
  delta "$w $ZOID_ROLE counters" a b "$(ops "$w")"
  echo "== end"
done
if [ "$ZOID_ROLE" = cn ]; then
  [ -z "$zoidfs" ] || umount /mnt/zp || fail zoidfs_umount
  "$BIN" quit "$ION_IP" "$PORT" || fail tcp_quit "cannot stop the server"
  [ -z "$zoid_calls" ] || "$ZB" quit "tcp:$ION_IP:$ZPORT" || fail fwd_quit "cannot stop the forwarder"
else
  wait "$server" || die "tcpbench server failed"
  [ -z "$zoid_calls" ] || wait "$zserver" || die "zoidbench forwarder failed"
fi
exit "$failed"
