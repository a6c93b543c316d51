#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# `make bench`, the in-guest half (scripts/bench-fs.sh runs it on every node
# of its psets): zoidfs against NFS and v9fs, all serving the same ION
# directory over the same virtio links, the same kernel and the same
# workloads (fsbench, one static program for every system).
#
# The ION exports /export (a tmpfs, or with BENCH_EXPORT=ext4 its ext4 disk
# /dev/vda) three ways: zoid's unix plug-in (zoidfs), the kernel's nfsd
# (NFSv4.2, sync, configured through /proc: its export caches are primed by
# hand; with nfs3 among the systems, NFSv3 too, with Debian's rpcbind and
# rpc.mountd for its MOUNT protocol) and diod (9P2000.L over TCP, Debian's
# binary with its libraries).  The CN mounts each in turn:
#   zoidfs        zoidfs's defaults (cache=none)
#   zoidfs_loose  zoidfs's best options (cache=loose)
#   nfs           NFSv4.2, rsize=wsize=1M (nfsd's max_block_size raised first)
#   nfs3          NFSv3, the same sizes, no locking (no lockd/statd)
#   9p            v9fs, cache=none, the largest msize the server accepts
#   9p_loose      v9fs, cache=loose
# and prints, for each (medians of REPEAT runs, runs on a "bench:" line):
#   BENCH <fs>_write_<size>_mbps / <fs>_read_<size>_mbps   sequential, Mbit/s
#   BENCH <fs>_randread_4k_p50_us / _p99_us (and randwrite)  QD 1 latency
#   BENCH <fs>_<create|stat|unlink>_<onedir|dirs>_ops       metadata, ops/s
#   BENCH <fs>_par<N>_<write|read>_mbps / _jain      N processes at once,
#         each on its own file: aggregate Mbit/s and Jain's fairness index
#   BENCH <fs>_fio_<write|read>_1m_mbps, <fs>_fio_<randread|randwrite>_4k_<p50|p99>_us
#         the same kinds of run through Debian's fio (psync, one job)
# plus the raw link: BENCH raw_tcp_tput_1m_mbps, raw_treenet_tput_1m_mbps.
# The CN's caches are dropped before every run.  With BENCH_MODE=posix
# (`make conformance`) the CN runs posixcheck on each system instead.
#
# In a pset of 1 ION + N CNs (N > 1) it runs only the scaling across CNs:
# for each system and each count n of BENCH_CN_STEPS (1 2 4, up to N), CNs
# 1..n write (then fsync), then read, their own PAR_BYTES file in 1 MiB
# blocks at once, REPEAT times; each CN prints its own result as
#   BENCH-CN <fs> <n> <write|read> <run> <cn> <bytes> <ns>
# and scripts/bench-fs-report.py makes the aggregate (all bytes over the
# slowest CN's time) and Jain's index over the CNs of each run.  Every node
# walks the same barriers, so the CNs start each run together.
FSB=${FSBENCH:-/zoid/bench/fsbench}
TCPB=${TCPBENCH:-/zoid/bench/tcpbench}
DIOD=${DIOD:-/usr/sbin/diod}
FIO=${FIO:-/usr/bin/fio}
PC=${POSIXCHECK:-/zoid/bench/posixcheck}
MODE=${BENCH_MODE:-bench}
TCP_PORT=5203
# name:block:total bytes -- sequential runs (smaller totals for small blocks
# keep a 4 KiB run on an emulated machine within a few seconds).
SIZES=${BENCH_SIZES:-"4k:4096:4194304 64k:65536:16777216 1m:1048576:33554432 4m:4194304:33554432"}
RAND_OPS=${BENCH_RAND_OPS:-400}
META_FILES=${BENCH_META_FILES:-500}
META_DIRS=${BENCH_META_DIRS:-10}
SYSTEMS=${BENCH_SYSTEMS:-"zoidfs zoidfs_loose nfs nfs3 9p 9p_loose"}
# Processes at once on the CN (empty: no scaling runs), bytes each writes.
PROCS=${BENCH_PROCS-"1 2 4"}
PAR_BYTES=${BENCH_PAR_BYTES:-16777216}
# Extra zoidfs mount options for both zoidfs systems (inflight=, rsize=...).
ZOPTS=${BENCH_ZOIDFS_OPTS:-}
# Scaling across CNs: how many CNs at once.
CN_STEPS=${BENCH_CN_STEPS:-"1 2 4"}
# Which workloads of a 1-CN pset run (all by default; fewer for a quick A/B):
# seq (sequential), rand (random 4 KiB), meta (metadata), fio, par (processes
# at once, also needs BENCH_PROCS), raw (the raw link).
PARTS=${BENCH_PARTS:-"seq rand meta fio par raw"}
part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
EXPORT_FS=${BENCH_EXPORT:-tmpfs}
BENCH_ANY_CNS=1
. "$(dirname "$0")/lib.sh"
[ -x "$FSB" ] || die "no fsbench at $FSB"
bench_addresses

# all_cns <command>: evaluates it once per CN, with $c its number.
all_cns() { c=1; while [ $c -le "$ZOID_CNS" ]; do eval "$1" || return; c=$((c + 1)); done; }

# ---- the ION: three servers on one directory -----------------------------------------
if [ "$ZOID_ROLE" = ion ]; then
  mkdir -p /export
  case $EXPORT_FS in
    tmpfs) mount -t tmpfs -o size=400m bench-export /export ;;
    # (qemu/pset --ion-disk made it with the host's mkfs.ext4.)
    ext4) mount -t ext4 /dev/vda /export ;;
    *) false ;;
  esac && chmod 1777 /export || die "no $EXPORT_FS for /export"
  say "export: $(grep " /export " /proc/mounts)"
  # zoid
  echo /export > $Z/export || die "cannot set zoid's export"
  # glibc's files: diod resolves this host's name and looks attaching users
  # up (v9fs attaches as "nobody" with the caller's uid); rpcbind runs as
  # _rpc; rpc.mountd names clients.
  printf '127.0.0.1 localhost\n%s ion\n' "$ION_IP" > /etc/hosts
  all_cns 'echo "10.77.$c.2 cn$c" >> /etc/hosts'
  printf 'passwd: files\ngroup: files\nhosts: files\n' > /etc/nsswitch.conf
  grep -q '^root:' /etc/passwd 2>/dev/null || echo 'root:x:0:0:root:/root:/bin/sh' >> /etc/passwd
  grep -q '^nobody:' /etc/passwd || echo 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' >> /etc/passwd
  grep -q '^_rpc:' /etc/passwd || echo '_rpc:x:100:65534::/run/rpcbind:/bin/false' >> /etc/passwd
  grep -q '^root:' /etc/group 2>/dev/null || echo 'root:x:0:' >> /etc/group
  grep -q '^nogroup:' /etc/group || echo 'nogroup:x:65534:' >> /etc/group
  # posixcheck's two users (diod serves only users it can look up).
  if [ "$MODE" = posix ]; then
    printf 'pc-a:x:1000:1000::/:/bin/false\npc-b:x:1001:1001::/:/bin/false\n' >> /etc/passwd
    printf 'pc-a:x:1000:\npc-b:x:1001:\npc-a2:x:1002:pc-a\n' >> /etc/group
  fi
  hostname ion
  # nfsd, sync export: NFSv4 on primed caches; NFSv3 (only when nfs3 is
  # run) registers with rpcbind, and its clients ask rpc.mountd for the
  # export's root handle (/etc/exports, as Debian's exportfs reads it).
  grep -q nfsd /proc/filesystems || die "no nfsd in this kernel"
  mkdir -p /proc/fs/nfsd 2>/dev/null
  mount -t nfsd nfsd /proc/fs/nfsd || die "cannot mount nfsd's control fs"
  echo 1048576 > /proc/fs/nfsd/max_block_size || say "nfsd: max_block_size stays $(cat /proc/fs/nfsd/max_block_size)"
  echo 10 > /proc/fs/nfsd/nfsv4leasetime
  echo 10 > /proc/fs/nfsd/nfsv4gracetime
  v3=-3 mountd=
  case " $SYSTEMS " in *" nfs3 "*)
    v3=+3
    # (The kernel registers nfsd at /var/run/rpcbind.sock.)
    mkdir -p /run/rpcbind /var/lib/nfs
    [ -e /var/run ] || ln -s /run /var/run
    /sbin/rpcbind -f &
    sleep 1
    echo "/export 10.77.0.0/16(rw,sync,no_subtree_check,insecure,root_squash,fsid=0)" > /etc/exports
    /usr/sbin/exportfs -r || die "exportfs failed"
    ;;
  esac
  echo "$v3 +4 +4.1 +4.2" > /proc/fs/nfsd/versions || die "nfsd: cannot set versions"
  # Prime the caches rpc.mountd would fill: each CN's address is in domain
  # "bench"; /export is exported to it with fsid=0 (the NFSv4 root),
  # no_subtree_check, insecure, root_squash, sync; its file handles (fsid
  # type 1, fsid 0) map back to /export.  Expiry: 2038.
  forever=2147483647
  all_cns 'echo "nfsd 10.77.$c.2 $forever bench" > /proc/net/rpc/auth.unix.ip/channel' ||
    die "nfsd: auth.unix.ip"
  echo "bench /export $forever $((0x2000 | 0x400 | 0x2 | 0x4)) 65534 65534 0" \
    > /proc/net/rpc/nfsd.export/channel || die "nfsd: export"
  printf 'bench 1 \\x00000000 %s /export\n' $forever > /proc/net/rpc/nfsd.fh/channel || die "nfsd: fh"
  echo "tcp 2049" > /proc/fs/nfsd/portlist || die "nfsd: cannot listen on 2049"
  echo 8 > /proc/fs/nfsd/threads || die "nfsd: cannot start threads"
  if [ $v3 = +3 ]; then
    /usr/sbin/rpc.mountd -F -N 2 &
    mountd=$!
  fi
  say "nfsd: versions $(cat /proc/fs/nfsd/versions), max_block_size $(cat /proc/fs/nfsd/max_block_size)"
  listen=
  all_cns 'listen="$listen -l 10.77.$c.1:564"'
  "$DIOD" -f -n -c /dev/null -L stderr $listen -e /export &
  diod=$!
  tcp=
  if [ "$ZOID_CNS" = 1 ]; then
    "$TCPB" server "$TCP_PORT" "$ION_IP" &
    tcp=$!
  fi
  sleep 11                       # nfsd's grace period ends
  kill -0 $diod || die "diod did not start"
  barrier 1                      # the servers are ready
fi

# ---- the CN: mount each system, run the workloads --------------------------------------
M=/mnt/bench
if [ "$ZOID_ROLE" = cn ]; then
  mkdir -p $M
  barrier 1
fi

# mount_fs <system>: mounts it on $M.
mount_fs() {
  case $1 in
    zoidfs) mount -t zoidfs ${ZOPTS:+-o "$ZOPTS"} zoidfs $M ;;
    zoidfs_loose) mount -t zoidfs -o "cache=loose${ZOPTS:+,$ZOPTS}" zoidfs $M ;;
    nfs) "$FSB" mount "$ION_IP:/" $M nfs4 \
           "vers=4.2,proto=tcp,addr=$ION_IP,clientaddr=$CN_IP,rsize=1048576,wsize=1048576" ;;
    # (port=: no rpcbind lookup for nfsd itself, only for mountd.)
    nfs3) "$FSB" mount "$ION_IP:/export" $M nfs \
            "vers=3,proto=tcp,port=2049,mountproto=tcp,nolock,addr=$ION_IP,mountaddr=$ION_IP,rsize=1048576,wsize=1048576" ;;
    9p) "$FSB" mount "$ION_IP" $M 9p \
          "trans=tcp,port=564,version=9p2000.L,aname=/export,msize=4194304,cache=none" ;;
    9p_loose) "$FSB" mount "$ION_IP" $M 9p \
                "trans=tcp,port=564,version=9p2000.L,aname=/export,msize=4194304,cache=loose" ;;
    *) return 1 ;;
  esac
}

drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches; }

# result <line> <what>: from an fsbench result line, Mbit/s (what=mbps),
# ops/s (ops) or a latency in us (p50, p99).
result() {
  case "$2:$1" in
    mbps:"ok op="*" bytes="*) awk -v b="$(field bytes "$1")" -v ns="$(field ns "$1")" \
        'BEGIN { if (ns > 0 && b > 0) printf "%.1f", b * 8000 / ns; else exit 1 }' ;;
    ops:"ok op="*" ops="*) awk -v n="$(field ops "$1")" -v ns="$(field ns "$1")" \
        'BEGIN { if (ns > 0 && n > 0) printf "%.1f", n * 1e9 / ns; else exit 1 }' ;;
    p50:"ok op="*) awk -v v="$(field p50_ns "$1")" 'BEGIN { if (v > 0) printf "%.1f", v / 1000; else exit 1 }' ;;
    p99:"ok op="*) awk -v v="$(field p99_ns "$1")" 'BEGIN { if (v > 0) printf "%.1f", v / 1000; else exit 1 }' ;;
    *) return 1 ;;
  esac
}

# jain <line>: the fairness index of an fsbench par result line.
jain() { awk -v v="$(field jain_ppm "$1")" 'BEGIN { if (v > 0) printf "%.4f", v / 1e6; else exit 1 }'; }

# phase <output> <op>: the result line of one phase of an fsbench output.
phase() { echo "$1" | grep "^ok op=$2 " | head -1; }

# latencies <name> <command...>: REPEAT runs of the command, each after the
# caches are dropped, printing "<p50> <p99>" in us; reports <name>_p50_us
# and <name>_p99_us (or fails with what the command printed).
latencies() {
  lname=$1 p50= p99= i=0
  shift
  while [ $i -lt "$REPEAT" ]; do
    drop_caches
    pair=$("$@") || { fail "$lname" "$pair"; return 1; }
    p50="$p50 ${pair% *}" p99="$p99 ${pair#* }"
    i=$((i + 1))
  done
  report "${lname}_p50_us" $p50
  report "${lname}_p99_us" $p99
}

# throughputs <prefix> <suffix> <function> <args...>: REPEAT rounds of
# `function write args...` then `function read args...`, caches dropped
# before each, the function printing Mbit/s; reports
# <prefix>_write_<suffix>_mbps and <prefix>_read_<suffix>_mbps (or fails
# with what the function printed).
throughputs() {
  tprefix=$1 tsuffix=$2 w= r= i=0
  shift 2
  fn=$1
  shift
  while [ $i -lt "$REPEAT" ]; do
    for op in write read; do
      drop_caches
      v=$("$fn" $op "$@") || { fail "${tprefix}_${op}_$tsuffix" "$v"; return 1; }
      if [ $op = write ]; then w="$w $v"; else r="$r $v"; fi
    done
    i=$((i + 1))
  done
  report "${tprefix}_write_${tsuffix}_mbps" $w
  report "${tprefix}_read_${tsuffix}_mbps" $r
}

# fsbench_seq <write|read> <file> <block> <total>: Mbit/s.
fsbench_seq() {
  if [ "$1" = write ]; then out=$("$FSB" write "$2" "$3" "$4" 2>&1); else out=$("$FSB" read "$2" "$3" 2>&1); fi &&
    result "$out" mbps || { echo "$out"; return 1; }
}

# fsbench_latency <randread|randwrite> <file>: RAND_OPS 4 KiB operations.
fsbench_latency() {
  out=$("$FSB" "$1" "$2" 4096 "$RAND_OPS" 2>&1) &&
    a=$(result "$out" p50) && b=$(result "$out" p99) && echo "$a $b" || { echo "$out"; return 1; }
}

fs_workloads() { # <system> <dir>
  sys=$1 d=$2
  part seq && for s in $SIZES; do
    name=${s%%:*}; rest=${s#*:}; block=${rest%%:*}; total=${rest#*:}
    throughputs "$sys" "$name" fsbench_seq "$d/seq" "$block" "$total" || return 1
  done
  # Random 4 KiB at queue depth 1 on a 16 MiB file.
  if part rand; then
    "$FSB" write "$d/rand" 1048576 16777216 > /dev/null || { fail "${sys}_rand_file"; return 1; }
    for op in randread randwrite; do
      latencies "${sys}_${op}_4k" fsbench_latency $op "$d/rand" || return 1
    done
  fi
  rm -f "$d/seq" "$d/rand"
  part meta || return 0
  # Metadata: FILES files in one directory, then spread over DIRS.
  for layout in onedir dirs; do
    nd=1; [ $layout = dirs ] && nd=$META_DIRS
    c= s= u=
    i=0
    while [ $i -lt "$REPEAT" ]; do
      drop_caches
      out=$("$FSB" meta "$d" "$META_FILES" "$nd" 2>&1) &&
        a=$(result "$(phase "$out" create)" ops) && b=$(result "$(phase "$out" stat)" ops) &&
        e=$(result "$(phase "$out" unlink)" ops) || { fail "${sys}_meta_$layout" "$out"; return 1; }
      c="$c $a" s="$s $b" u="$u $e"
      i=$((i + 1))
    done
    report "${sys}_create_${layout}_ops" $c
    report "${sys}_stat_${layout}_ops" $s
    report "${sys}_unlink_${layout}_ops" $u
  done
}

# fio_job <file> <rw> <bs> <size> <io bytes>: one fio job (a thread of
# fio's process), JSON on stdout; writes end with an fsync, as fsbench's do.
# (fio keeps its job table in SysV shared memory: the release kernel has
# CONFIG_SYSVIPC for it.)
fio_job() {
  "$FIO" --thread --name=bench --filename="$1" --ioengine=psync --rw="$2" --bs="$3" \
    --size="$4" --io_size="$5" --end_fsync=1 --invalidate=1 --output-format=json
}

# fio_value <json> <bw|p50|p99>: Mbit/s, or a completion latency
# percentile in us, from fio's JSON (the largest over its read and write
# sections: the one that ran; percentiles only of "clat_ns", not of the
# final fsync's "sync" section).
fio_value() {
  case $2 in
    bw) key='"bw_bytes"' ;;
    p50) key='"50.000000"' ;;
    p99) key='"99.000000"' ;;
  esac
  v=$(echo "$1" | awk -v key="$key" -v all="$([ "$2" = bw ] && echo 1)" '
        /"clat_ns"/ { in_clat = 1 } /"lat_ns"|"sync"/ { in_clat = 0 }
        index($0, key) && (all || in_clat) { sub(/.*: */, ""); sub(/[^0-9].*/, ""); print }' |
      sort -n | tail -1)
  [ -n "$v" ] && [ "$v" -gt 0 ] || return 1
  case $2 in
    bw) awk -v b="$v" 'BEGIN { printf "%.1f", b * 8 / 1e6 }' ;;
    *) awk -v n="$v" 'BEGIN { printf "%.1f", n / 1000 }' ;;
  esac
}

# fio_seq <write|read> <file>: Mbit/s of 32 MiB in 1 MiB blocks.
fio_seq() {
  out=$(fio_job "$2" "$1" 1m 32m 32m 2>&1) && fio_value "$out" bw || { echo "$out" | tail -3; return 1; }
}

# fio_latency <randread|randwrite> <file>: RAND_OPS 4 KiB operations on a
# 16 MiB file.
fio_latency() {
  out=$(fio_job "$2" "$1" 4k 16m $((RAND_OPS * 4096)) 2>&1) &&
    a=$(fio_value "$out" p50) && b=$(fio_value "$out" p99) && echo "$a $b" ||
    { echo "$out" | tail -3; return 1; }
}

# fio's view of the same kinds of run: 1 MiB sequential write and read of a
# 32 MiB file, and random 4 KiB reads and writes at queue depth 1 (RAND_OPS
# of them) on a 16 MiB file.
fio_workloads() { # <system> <dir>
  sys=$1 d=$2
  throughputs "${sys}_fio" 1m fio_seq "$d/fio-seq" || return 1
  for op in randread randwrite; do
    latencies "${sys}_fio_${op}_4k" fio_latency $op "$d/fio-rand" || return 1
  done
  rm -f "$d/fio-seq" "$d/fio-rand"
}

# Scaling on one CN: N processes write, then read, 1 MiB blocks, each its
# own PAR_BYTES file, at once.
scale_workloads() { # <system> <dir>
  sys=$1 d=$2   # (report() sets n)
  for np in $PROCS; do
    w= r= wj= rj=
    i=0
    while [ $i -lt "$REPEAT" ]; do
      for op in write read; do
        drop_caches
        out=$("$FSB" par $op "$d" "$np" 1048576 "$PAR_BYTES" 2>&1) && v=$(result "$out" mbps) &&
          j=$(jain "$out") || { fail "${sys}_par${np}_$op" "$out"; return 1; }
        if [ $op = write ]; then w="$w $v" wj="$wj $j"; else r="$r $v" rj="$rj $j"; fi
      done
      i=$((i + 1))
    done
    report "${sys}_par${np}_write_mbps" $w
    report "${sys}_par${np}_read_mbps" $r
    report "${sys}_par${np}_write_jain" $wj
    report "${sys}_par${np}_read_jain" $rj
    rm -f "$d"/par-*
  done
}

# stop_servers: the ION's diod, rpc.mountd and nfsd threads.  (SIGKILL for
# diod: its own SIGTERM shutdown faulted once in a smoke run.)
stop_servers() {
  kill -9 $diod
  [ -z "$mountd" ] || kill $mountd
  echo 0 > /proc/fs/nfsd/threads
}

# ---- several CNs at once -------------------------------------------------------------
# Every node (the ION too) walks the same barriers, tags from 100 up.
tag=100
step() { barrier $tag; tag=$((tag + 1)); }

cns_workloads() {
  steps=
  for n in $CN_STEPS; do [ "$n" -gt "$ZOID_CNS" ] || steps="$steps $n"; done
  for sys in $SYSTEMS; do
    ok= mounted=
    if [ "$ZOID_ROLE" = cn ]; then
      d=$M/cn$ZOID_NODE_ID-$sys
      # (A CN whose mount failed still walks the barriers.)
      if err=$(mount_fs "$sys" 2>&1); then
        mounted=1
        mkdir -p "$d" && ok=1 || fail "${sys}_cns_mkdir" "cn$ZOID_NODE_ID: cannot make $d"
      else
        fail "${sys}_cns_mount" "cn$ZOID_NODE_ID: $err"
      fi
    fi
    step                                   # every CN has it mounted
    for n in $steps; do
      i=0
      while [ $i -lt "$REPEAT" ]; do
        for op in write read; do
          [ "$ZOID_ROLE" = cn ] && drop_caches
          step                             # CNs 1..n start together
          [ -n "$ok" ] && [ "$ZOID_NODE_ID" -le "$n" ] || continue
          if [ $op = write ]; then
            out=$("$FSB" write "$d/f" 1048576 "$PAR_BYTES" 2>&1)
          else
            out=$("$FSB" read "$d/f" 1048576 2>&1)
          fi
          b=$(field bytes "$out") ns=$(field ns "$out")
          if [ "${out#ok op=}" != "$out" ] && [ -n "$b" ] && [ -n "$ns" ]; then
            echo "BENCH-CN $sys $n $op $i $ZOID_NODE_ID $b $ns"
          else
            fail "${sys}_cns${n}_$op" "cn$ZOID_NODE_ID: $out"
          fi
        done
        i=$((i + 1))
      done
    done
    [ -z "$ok" ] || rm -rf "$d"
    if [ -n "$mounted" ]; then
      umount $M || fail "${sys}_umount" "cn$ZOID_NODE_ID cannot unmount"
    fi
    # Every CN is done with it and unmounted: only then may the ION move
    # on (after the last system, stop its servers).
    step
  done
}

if [ "$ZOID_CNS" -gt 1 ]; then
  cns_workloads
  [ "$ZOID_ROLE" != ion ] || stop_servers
  exit "$failed"
fi

if [ "$ZOID_ROLE" = ion ]; then
  # The CN takes longer than a treenet barrier waits: it says it is done
  # with a file in the export (pset's timeout bounds the wait).
  while [ ! -e /export/.bench-done ]; do sleep 2; done
  stop_servers
  wait $tcp || say "tcpbench server failed"
  exit 0
fi

# BENCH_MODE=posix (`make conformance`): posixcheck on each system, and
# on a local tmpfs first (the reference), instead of the workloads; every
# check a line "POSIX <system> ok|not ok <check>[: why]".
if [ "$MODE" = posix ]; then
  mkdir -p /tmp/posix-local
  mount -t tmpfs posix-local /tmp/posix-local && chmod 1777 /tmp/posix-local &&
    "$PC" /tmp/posix-local | sed 's/^/POSIX local /' || fail local_posixcheck
  umount /tmp/posix-local
fi
for sys in $SYSTEMS; do
  err=$(mount_fs "$sys" 2>&1) || { fail "${sys}_mount" "$err $(dmesg | tail -2)"; continue; }
  say "$sys: $(grep " $M " /proc/mounts)"
  d=$M/cn$ZOID_NODE_ID-$sys
  mkdir -p "$d" && chmod 1777 "$d" || { fail "${sys}_mkdir"; umount $M; continue; }
  if [ "$MODE" = posix ]; then
    "$PC" "$d" | sed "s/^/POSIX $sys /" || fail "${sys}_posixcheck"
  else
    fs_workloads "$sys" "$d"
    [ ! -x "$FIO" ] || ! part fio || fio_workloads "$sys" "$d"
    [ -z "$PROCS" ] || ! part par || scale_workloads "$sys" "$d"
  fi
  rm -rf "$d"
  umount $M || fail "${sys}_umount" "cannot unmount"
done
if [ "$MODE" = posix ]; then
  "$TCPB" quit "$ION_IP" "$TCP_PORT" || fail raw_tcp_quit "cannot stop the server"
  mount_fs zoidfs && touch $M/.bench-done && umount $M || die "cannot tell the ION it is done"
  exit "$failed"
fi

# The raw link, for each system's efficiency: TCP (tcpbench) and treenet.
if part raw; then
  "$TCPB" ping "$ION_IP" "$TCP_PORT" 32 20 > /dev/null || fail raw_tcp_warmup
  size=1048576 count=32
  tn_selftest() { echo "$1" > "$TN/selftest" && cat "$TN/selftest"; }
  tn='tn_selftest "sink 0 $size $count"'
  [ -n "$HAVE_TN" ] || tn=
  # In turns (in_turns), as the two are compared.
  in_turns tput "$REPEAT" \
    raw_tcp_tput_1m_mbps '"$TCPB" tput "$ION_IP" "$TCP_PORT" "$size" "$count"' \
    raw_treenet_tput_1m_mbps "$tn"
fi
"$TCPB" quit "$ION_IP" "$TCP_PORT" || fail raw_tcp_quit "cannot stop the server"
say "zoidfs counters: $(awk '$2 != 0' /sys/kernel/zoidfs/stats | tr '\n' ' ')"
mount_fs zoidfs && touch $M/.bench-done && umount $M || die "cannot tell the ION it is done"
exit "$failed"
