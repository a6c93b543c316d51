#!/usr/bin/env bash
# Build the four zoid modules for one kernel and print their output folder.
#
#   scripts/build-modules.sh <arch> <flavor> [KDIR]
#
# Without KDIR, the cached zoid kernel for <arch>/<flavor> is used (built if
# needed).  With KDIR, any prepared 7.x tree with CONFIG_RUST=y works; <arch>
# must match it.  Warnings are errors (W=e: -Werror for C, -Dwarnings for
# Rust); CLIPPY=1 in the environment runs clippy as the Rust compiler.
# Objects go to out/<arch>-<flavor>/ (Kbuild's MO=), so both architectures
# build from one source tree.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/toolchain.sh"
arch=${1:?arch: x86_64|ppc32}
flavor=${2:?flavor: debug|release}
kdir=${3:-}

if [ -z "$kdir" ]; then
  kdir=$("$here/build-kernel.sh" "$arch" "$flavor")
fi
[ -f "$kdir/.config" ] || { echo "build-modules: $kdir is not a prepared kernel tree (no .config)" >&2; exit 1; }
grep -qx CONFIG_RUST=y "$kdir/.config" || { echo "build-modules: $kdir has no CONFIG_RUST=y" >&2; exit 1; }
case "$arch" in
  x86_64) grep -qx CONFIG_X86_64=y "$kdir/.config" ;;
  ppc32) grep -qx CONFIG_PPC32=y "$kdir/.config" ;;
esac || { echo "build-modules: $kdir is not an $arch kernel" >&2; exit 1; }

toolchain_env "$arch"
# ZOID_HOOKS=n (hook points compiled out, see Kbuild) builds elsewhere.
out="$repo/out/$arch-$flavor${ZOID_HOOKS:+-hooks-$ZOID_HOOKS}"
# Kbuild does not notice that an external module's kernel changed: objects
# built against another tree would be relinked as they are.  Start clean
# whenever the kernel tree differs from the last build's.
kdir=$(cd "$kdir" && pwd)
if [ "$(cat "$out/.kdir" 2>/dev/null)" != "$kdir" ]; then
  rm -rf "$out"
fi
mkdir -p "$out"
echo "$kdir" > "$out/.kdir"
log="$out/build.log"
if ! kmake -C "$kdir" M="$repo" MO="$out" W=e ${CLIPPY:+CLIPPY=1} -j"$(nproc)" modules > "$log" 2>&1; then
  grep -v -E '^make(\[[0-9]+\])?: (Entering|Leaving)' "$log" | tail -n 60 >&2
  echo "build-modules: failed (full log: $log)" >&2
  exit 1
fi
while read -r name dir _; do
  [ -f "$out/$dir/$name.ko" ] || { echo "build-modules: $dir/$name.ko missing" >&2; exit 1; }
done < <(zoid_modules)
echo "$out"
