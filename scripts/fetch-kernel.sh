#!/usr/bin/env bash
# Fetch the Linux 7.3 source (Debian's linux-source-7.3 from trixie-backports,
# falling back to the newest linux-source-7.* there) into the zoid cache,
# apply zoid's kernel patches (scripts/kernel/patches/*.patch) and print the
# path of the prepared source tree on stdout.
#
# The system's apt sources are not touched: scripts/apt-private.sh uses a
# private apt configuration under $ZOID_CACHE/apt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/apt-private.sh"

WANT=${ZOID_KERNEL_PACKAGE:-linux-source-7.3}
apt_private_init >&2

pkg=$WANT
if ! apt_private_cache show "$pkg" >/dev/null 2>&1; then
  pkg=$(apt_private_cache search --names-only '^linux-source-7\.[0-9]+$' | awk '{print $1}' | sort -V | tail -n1)
  [ -n "$pkg" ] || { echo "fetch-kernel: no linux-source-7.* package found" >&2; exit 1; }
  echo "fetch-kernel: $WANT is not available; falling back to $pkg" >&2
fi
ver=$(apt_private_cache policy "$pkg" | awk '/Candidate:/ {print $2}')

debs="$ZOID_CACHE/debs"
mkdir -p "$debs"
deb=$(ls "$debs/${pkg}_"*.deb 2>/dev/null | grep -F "$(echo "$ver" | sed 's/:/%3a/')" | head -n1 || true)
if [ -z "$deb" ]; then
  echo "fetch-kernel: downloading $pkg $ver" >&2
  (cd "$debs" && apt_private download "$pkg=$ver" >&2)
  deb=$(ls "$debs/${pkg}_"*.deb | head -n1)
fi

# The tree's name carries the package version and a hash of the patch set,
# so changing a patch gives a fresh tree (and fresh kernel builds).
shopt -s nullglob
patches=("$here"/kernel/patches/*.patch)
shopt -u nullglob
phash=$(cat /dev/null "${patches[@]}" | sha256sum | cut -c1-10)
src="$ZOID_CACHE/src/${pkg}-${ver//[:~]/_}-p$phash"
if [ ! -f "$src/.zoid-ready" ]; then
  echo "fetch-kernel: unpacking $pkg into $src" >&2
  rm -rf "$src" "$src.tmp"
  mkdir -p "$src.tmp"
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$src.tmp" --wildcards './usr/src/*.tar.xz'
  tarball=$(ls "$src.tmp"/usr/src/*.tar.xz)
  tar -xJf "$tarball" -C "$src.tmp"
  rm -f "$tarball"
  top=$(find "$src.tmp" -mindepth 1 -maxdepth 1 -type d ! -name usr)
  mv "$top" "$src"
  rm -rf "$src.tmp"
  for p in "${patches[@]}"; do
    [ -f "$p" ] || continue
    echo "fetch-kernel: applying $(basename "$p")" >&2
    patch -d "$src" -p1 --quiet < "$p"
  done
  touch "$src/.zoid-ready"
fi
echo "$src"
