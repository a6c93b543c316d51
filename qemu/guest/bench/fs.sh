#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# `make bench`, the in-guest half (scripts/bench-fs.sh runs it on both
# nodes of a 1 ION + 1 CN pset): zoidfs against NFS and v9fs, all serving the
# same ION directory (one tmpfs) over the same virtio link, the same kernel
# and the same workloads (fsbench, one static program for every system).
#
# The ION exports /export three ways: zoid's unix plug-in (zoidfs), the
# kernel's nfsd (NFSv4.2, sync, configured through /proc: its export caches
# are primed by hand, so no rpc.mountd or rpcbind runs) and diod (9P2000.L
# over TCP, Debian's binary with its libraries).  The CN mounts each in turn:
#   zoidfs        zoidfs's defaults (cache=none)
#   zoidfs_loose  zoidfs's best options (cache=loose)
#   nfs           NFSv4.2, rsize=wsize=1M (nfsd's max_block_size raised first)
#   9p            v9fs, cache=none, the largest msize the server accepts
#   9p_loose      v9fs, cache=loose
# and prints, for each (medians of REPEAT runs, runs on a "bench:" line):
#   BENCH <fs>_write_<size>_mbps / <fs>_read_<size>_mbps   sequential, Mbit/s
#   BENCH <fs>_randread_4k_p50_us / _p99_us (and randwrite)  QD 1 latency
#   BENCH <fs>_<create|stat|unlink>_<onedir|dirs>_ops       metadata, ops/s
#   BENCH <fs>_par<N>_<write|read>_mbps / _jain      N processes at once,
#         each on its own file: aggregate Mbit/s and Jain's fairness index
# plus the raw link: BENCH raw_tcp_tput_1m_mbps, raw_treenet_tput_1m_mbps.
# The CN's caches are dropped before every run.
FSB=${FSBENCH:-/zoid/bench/fsbench}
TCPB=${TCPBENCH:-/zoid/bench/tcpbench}
DIOD=${DIOD:-/usr/sbin/diod}
TCP_PORT=5203
# name:block:total bytes -- sequential runs (smaller totals for small blocks
# keep a 4 KiB run on an emulated machine within a few seconds).
SIZES=${BENCH_SIZES:-"4k:4096:4194304 64k:65536:16777216 1m:1048576:33554432 4m:4194304:33554432"}
RAND_OPS=${BENCH_RAND_OPS:-400}
META_FILES=${BENCH_META_FILES:-500}
META_DIRS=${BENCH_META_DIRS:-10}
SYSTEMS=${BENCH_SYSTEMS:-"zoidfs zoidfs_loose nfs 9p 9p_loose"}
# Processes at once on the CN (empty: no scaling runs), bytes each writes.
PROCS=${BENCH_PROCS-"1 2 4"}
PAR_BYTES=${BENCH_PAR_BYTES:-16777216}
# Extra zoidfs mount options for both zoidfs systems (inflight=, rsize=...).
ZOPTS=${BENCH_ZOIDFS_OPTS:-}
Z=/sys/kernel/zoid
. "$(dirname "$0")/lib.sh"
[ -x "$FSB" ] || die "no fsbench at $FSB"
bench_addresses

# ---- the ION: three servers on one tmpfs -----------------------------------------
if [ "$ZOID_ROLE" = ion ]; then
  mkdir -p /export && mount -t tmpfs -o size=400m bench-export /export && chmod 1777 /export ||
    die "no tmpfs for /export"
  # zoid
  echo /export > $Z/export || die "cannot set zoid's export"
  # nfsd, NFSv4 only (v3 would need rpcbind and mountd), sync export.
  grep -q nfsd /proc/filesystems || die "no nfsd in this kernel"
  mkdir -p /proc/fs/nfsd 2>/dev/null
  mount -t nfsd nfsd /proc/fs/nfsd || die "cannot mount nfsd's control fs"
  echo 1048576 > /proc/fs/nfsd/max_block_size || say "nfsd: max_block_size stays $(cat /proc/fs/nfsd/max_block_size)"
  echo 10 > /proc/fs/nfsd/nfsv4leasetime
  echo 10 > /proc/fs/nfsd/nfsv4gracetime
  echo "-3 +4 +4.1 +4.2" > /proc/fs/nfsd/versions || die "nfsd: cannot set versions"
  # Prime the caches rpc.mountd would fill: the CN's address is in domain
  # "bench"; /export is exported to it with fsid=0 (the NFSv4 root),
  # no_subtree_check, insecure, root_squash, sync; its file handles (fsid
  # type 1, fsid 0) map back to /export.  Expiry: 2038.
  forever=2147483647
  echo "nfsd $CN_IP $forever bench" > /proc/net/rpc/auth.unix.ip/channel || die "nfsd: auth.unix.ip"
  echo "bench /export $forever $((0x2000 | 0x400 | 0x2 | 0x4)) 65534 65534 0" \
    > /proc/net/rpc/nfsd.export/channel || die "nfsd: export"
  printf 'bench 1 \\x00000000 %s /export\n' $forever > /proc/net/rpc/nfsd.fh/channel || die "nfsd: fh"
  echo "tcp 2049" > /proc/fs/nfsd/portlist || die "nfsd: cannot listen on 2049"
  echo 8 > /proc/fs/nfsd/threads || die "nfsd: cannot start threads"
  say "nfsd: versions $(cat /proc/fs/nfsd/versions), max_block_size $(cat /proc/fs/nfsd/max_block_size)"
  # diod: it resolves this host's name and looks attaching users up
  # (v9fs attaches as "nobody" with the caller's uid), so /etc gets
  # hosts, passwd and group files for glibc.
  printf '127.0.0.1 localhost\n%s ion\n%s cn1\n' "$ION_IP" "$CN_IP" > /etc/hosts
  printf 'passwd: files\ngroup: files\nhosts: files\n' > /etc/nsswitch.conf
  grep -q '^root:' /etc/passwd 2>/dev/null || echo 'root:x:0:0:root:/root:/bin/sh' >> /etc/passwd
  grep -q '^nobody:' /etc/passwd || echo 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' >> /etc/passwd
  grep -q '^root:' /etc/group 2>/dev/null || echo 'root:x:0:' >> /etc/group
  grep -q '^nogroup:' /etc/group || echo 'nogroup:x:65534:' >> /etc/group
  hostname ion
  "$DIOD" -f -n -c /dev/null -L stderr -l "$ION_IP:564" -e /export &
  diod=$!
  "$TCPB" server "$TCP_PORT" "$ION_IP" &
  tcp=$!
  sleep 11                       # nfsd's grace period ends
  kill -0 $diod || die "diod did not start"
  barrier 1                      # the servers are ready
  # The CN takes longer than a treenet barrier waits: it says it is done
  # with a file in the export (pset's timeout bounds the wait).
  while [ ! -e /export/.bench-done ]; do sleep 2; done
  kill $diod
  wait $tcp || say "tcpbench server failed"
  echo 0 > /proc/fs/nfsd/threads
  exit 0
fi

# ---- the CN: mount each system, run the workloads --------------------------------------
M=/mnt/bench
mkdir -p $M
barrier 1

# mount_fs <system>: mounts it on $M.
mount_fs() {
  case $1 in
    zoidfs) mount -t zoidfs ${ZOPTS:+-o "$ZOPTS"} zoidfs $M ;;
    zoidfs_loose) mount -t zoidfs -o "cache=loose${ZOPTS:+,$ZOPTS}" zoidfs $M ;;
    nfs) "$FSB" mount "$ION_IP:/" $M nfs4 \
           "vers=4.2,proto=tcp,addr=$ION_IP,clientaddr=$CN_IP,rsize=1048576,wsize=1048576" ;;
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

fs_workloads() { # <system> <dir>
  sys=$1 d=$2
  for s in $SIZES; do
    name=${s%%:*}; rest=${s#*:}; block=${rest%%:*}; total=${rest#*:}
    w= r=
    i=0
    while [ $i -lt "$REPEAT" ]; do
      drop_caches
      out=$("$FSB" write "$d/seq" "$block" "$total" 2>&1) && v=$(result "$out" mbps) ||
        { fail "${sys}_write_$name" "$out"; return 1; }
      w="$w $v"
      drop_caches
      out=$("$FSB" read "$d/seq" "$block" 2>&1) && v=$(result "$out" mbps) ||
        { fail "${sys}_read_$name" "$out"; return 1; }
      r="$r $v"
      i=$((i + 1))
    done
    report "${sys}_write_${name}_mbps" $w
    report "${sys}_read_${name}_mbps" $r
  done
  # Random 4 KiB at queue depth 1 on a 16 MiB file.
  "$FSB" write "$d/rand" 1048576 16777216 > /dev/null || { fail "${sys}_rand_file"; return 1; }
  for op in randread randwrite; do
    p50= p99=
    i=0
    while [ $i -lt "$REPEAT" ]; do
      drop_caches
      out=$("$FSB" $op "$d/rand" 4096 "$RAND_OPS" 2>&1) && a=$(result "$out" p50) &&
        b=$(result "$out" p99) || { fail "${sys}_${op}_4k" "$out"; return 1; }
      p50="$p50 $a" p99="$p99 $b"
      i=$((i + 1))
    done
    report "${sys}_${op}_4k_p50_us" $p50
    report "${sys}_${op}_4k_p99_us" $p99
  done
  rm -f "$d/seq" "$d/rand"
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

for sys in $SYSTEMS; do
  err=$(mount_fs "$sys" 2>&1) || { fail "${sys}_mount" "$err $(dmesg | tail -2)"; continue; }
  say "$sys: $(grep " $M " /proc/mounts)"
  d=$M/cn$ZOID_NODE_ID-$sys
  mkdir -p "$d" || { fail "${sys}_mkdir"; umount $M; continue; }
  fs_workloads "$sys" "$d"
  [ -z "$PROCS" ] || scale_workloads "$sys" "$d"
  rm -rf "$d"
  umount $M || fail "${sys}_umount" "cannot unmount"
done

# The raw link, for each system's efficiency: TCP (tcpbench) and treenet.
"$TCPB" ping "$ION_IP" "$TCP_PORT" 32 20 > /dev/null || fail raw_tcp_warmup
size=1048576 count=32
measure raw_tcp_tput_1m_mbps tput "$TCPB" tput "$ION_IP" "$TCP_PORT" $size $count
"$TCPB" quit "$ION_IP" "$TCP_PORT" || fail raw_tcp_quit "cannot stop the server"
if [ -n "$HAVE_TN" ]; then
  tn_selftest() { echo "$1" > "$TN/selftest" && cat "$TN/selftest"; }
  measure raw_treenet_tput_1m_mbps tput tn_selftest "sink 0 $size $count"
fi
say "zoidfs counters: $(awk '$2 != 0' /sys/kernel/zoidfs/stats | tr '\n' ' ')"
mount_fs zoidfs && touch $M/.bench-done && umount $M || die "cannot tell the ION it is done"
exit "$failed"
