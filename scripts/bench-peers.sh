#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The user-space peers `make bench` needs inside the x86_64 guests, as a
# folder to add to the initramfs, printed on stdout:
#   scripts/bench-peers.sh <out-dir>
# That is diod (the 9P server of the v9fs runs), rpcbind, rpc.mountd and
# exportfs (NFSv3's MOUNT protocol; NFSv4 alone needs no user space: the
# guest script primes the kernel's export caches through /proc) and fio
# (whose binary links Ceph's and GlusterFS's client libraries, about 57 MiB
# with everything else it loads, for engines the runs never use):
# Debian's binaries and every shared library they load (from Debian's
# packages, downloaded once into the cache with `apt-get download`, which
# neither installs anything nor touches apt's sources, and from this host
# for the base libraries), laid out at the same paths as on Debian, with
# the files libtirpc reads (/etc/netconfig, /etc/rpc, /etc/protocols,
# /etc/services).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
out=${1:?usage: bench-peers.sh <out-dir>}
debs="$ZOID_CACHE/debs"
pkgs="diod libmunge2 liblua5.1-0 libwrap0 libcap2 rpcbind nfs-kernel-server libtirpc-common
  fio libgfxdr0 libglusterfs0 libgfrpc0 libgfapi0 libnbd0 libpmemblk1 libboost-thread1.74.0 libfmt9
  librados2 librbd1"
bins="usr/sbin/diod sbin/rpcbind usr/sbin/rpc.mountd usr/sbin/exportfs usr/bin/fio"
mkdir -p "$debs"
for p in $pkgs; do
  compgen -G "$debs/${p}_*_amd64.deb" > /dev/null || compgen -G "$debs/${p}_*_all.deb" > /dev/null ||
    (cd "$debs" && apt-get download -q "$p" >&2) ||
    { echo "bench-peers: cannot download $p" >&2; exit 1; }
done
x=$(mktemp -d)
trap 'rm -rf "$x"' EXIT
for p in $pkgs; do dpkg -x "$(ls "$debs/${p}"_*_amd64.deb "$debs/${p}"_*_all.deb 2>/dev/null | tail -1)" "$x"; done
rm -rf "$out" && mkdir -p "$out/usr/sbin" "$out/usr/bin" "$out/sbin" "$out/etc" "$out/var/lib/nfs" "$out/run/rpcbind"
for b in $bins; do cp "$x/$b" "$out/$b"; done
for f in netconfig rpc protocols services; do
  if [ -e "$x/etc/$f" ]; then cp "$x/etc/$f" "$out/etc/"; else cp "/etc/$f" "$out/etc/"; fi
done
: > "$out/var/lib/nfs/etab"
: > "$out/var/lib/nfs/rmtab"
libpath=$(find "$x" -name '*.so*' -printf '%h\n' | sort -u | tr '\n' :)
# Every library ldd resolves (from the packages first, then the host), at
# the path Debian's loader looks in.
for b in $bins; do
  LD_LIBRARY_PATH=$libpath ldd "$x/$b" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
done | sort -u |
  while read -r lib; do
    case $lib in
      */ld-linux*) dst=$out/lib64 ;;
      *) dst=$out/lib/x86_64-linux-gnu ;;
    esac
    mkdir -p "$dst"
    cp -L "$lib" "$dst/$(basename "$lib")"
  done
[ -e "$out/lib64/ld-linux-x86-64.so.2" ] || { echo "bench-peers: no loader for diod" >&2; exit 1; }
for b in $bins; do
  LD_LIBRARY_PATH=$libpath ldd "$x/$b" | grep -q "not found" &&
    { echo "bench-peers: $b misses a library" >&2; exit 1; }
done
echo "$out"
