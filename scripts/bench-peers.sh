#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The user-space peers `make bench` needs inside the x86_64 guests, as a
# folder to add to the initramfs, printed on stdout:
#   scripts/bench-peers.sh <out-dir>
# Today that is diod (the 9P server of the v9fs runs): Debian's binary and
# every shared library it loads (from Debian's packages, downloaded once into
# the cache with `apt-get download`, which neither installs anything nor
# touches apt's sources, and from this host for the base libraries), laid out
# at the same paths as on Debian.  NFS needs no user space: the guest script
# configures the kernel's nfsd through /proc.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
out=${1:?usage: bench-peers.sh <out-dir>}
debs="$ZOID_CACHE/debs"
pkgs="diod libmunge2 liblua5.1-0 libwrap0 libcap2"
mkdir -p "$debs"
for p in $pkgs; do
  ls "$debs/${p}"_*_amd64.deb > /dev/null 2>&1 ||
    (cd "$debs" && apt-get download -q "$p" >&2) ||
    { echo "bench-peers: cannot download $p" >&2; exit 1; }
done
x=$(mktemp -d)
trap 'rm -rf "$x"' EXIT
for p in $pkgs; do dpkg -x "$(ls "$debs/${p}"_*_amd64.deb | tail -1)" "$x"; done
rm -rf "$out" && mkdir -p "$out/usr/sbin"
cp "$x/usr/sbin/diod" "$out/usr/sbin/"
libpath=$(find "$x" -name '*.so*' -printf '%h\n' | sort -u | tr '\n' :)
# Every library ldd resolves (from the packages first, then the host), at
# the path Debian's loader looks in.
LD_LIBRARY_PATH=$libpath ldd "$x/usr/sbin/diod" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' |
  while read -r lib; do
    case $lib in
      */ld-linux*) dst=$out/lib64 ;;
      *) dst=$out/lib/x86_64-linux-gnu ;;
    esac
    mkdir -p "$dst"
    cp -L "$lib" "$dst/$(basename "$lib")"
  done
[ -e "$out/lib64/ld-linux-x86-64.so.2" ] || { echo "bench-peers: no loader for diod" >&2; exit 1; }
echo "$out"
