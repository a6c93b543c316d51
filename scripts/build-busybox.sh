#!/usr/bin/env bash
# Print the path of a static busybox for a guest architecture.
#   x86_64: Debian's busybox-static (/bin/busybox)
#   ppc32:  cross-built once from Debian's busybox source package with
#           gcc-powerpc-linux-gnu, cached in $ZOID_CACHE/busybox/
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/apt-private.sh"
arch=${1:?arch: x86_64|ppc32}

case "$arch" in
  x86_64)
    [ -x /bin/busybox ] || { echo "build-busybox: install busybox-static (scripts/setup.sh)" >&2; exit 1; }
    echo /bin/busybox
    exit 0 ;;
  ppc32) ;;
  *) echo "build-busybox: unknown arch $arch" >&2; exit 1 ;;
esac

# Keyed by this script (which holds the busybox configuration) and the cross compiler.
key=$( { cat "$0"; powerpc-linux-gnu-gcc --version | head -n1; } | sha256sum | cut -c1-10)
out="$ZOID_CACHE/busybox/ppc32-$key"
if [ -x "$out/busybox" ]; then echo "$out/busybox"; exit 0; fi

apt_private_init >&2
work="$ZOID_CACHE/busybox/src"
rm -rf "$work" && mkdir -p "$work" "$out"
(cd "$work" && apt_private source --only-source -qq busybox >/dev/null 2>&1) || {
  echo "build-busybox: apt-get source busybox failed" >&2; exit 1; }
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'busybox-*' | head -n1)
log="$out/build.log"
echo "build-busybox: cross-building $(basename "$src") for ppc32 (log: $log)" >&2
(
  cd "$src"
  make CROSS_COMPILE=powerpc-linux-gnu- defconfig
  # Static; full modutils (the "small" rmmod reports success when the
  # kernel refuses to unload a module in use); without tc, which does not
  # build against current kernel headers.
  sed -i -e 's/^# CONFIG_STATIC is not set/CONFIG_STATIC=y/' \
         -e 's/^CONFIG_MODPROBE_SMALL=y/# CONFIG_MODPROBE_SMALL is not set/' \
         -e 's/^CONFIG_TC=y/# CONFIG_TC is not set/' \
         -e 's/^CONFIG_FEATURE_TC_INGRESS=y/# CONFIG_FEATURE_TC_INGRESS is not set/' .config
  make CROSS_COMPILE=powerpc-linux-gnu- oldconfig </dev/null
  make CROSS_COMPILE=powerpc-linux-gnu- -j"$(nproc)" busybox
) > "$log" 2>&1 || { tail -n 30 "$log" >&2; exit 1; }
cp "$src/busybox" "$out/busybox"
rm -rf "$work"
echo "$out/busybox"
