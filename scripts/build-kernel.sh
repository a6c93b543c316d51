#!/usr/bin/env bash
# Build (or reuse) a zoid test kernel and print its build directory (a
# prepared tree usable as KDIR for `make -C $KDIR M=...`).
#
#   scripts/build-kernel.sh x86_64 debug|release
#   scripts/build-kernel.sh ppc32  debug
#
# Kernels are cached outside the repo under
#   $ZOID_CACHE/build/<version>-<arch>-<flavor>-<hash>
# where <hash> covers the resulting .config (so the compiler and rustc
# versions too) and the patched source tree: a fragment change that changes
# the configuration rebuilds, anything else reuses the build.  Build logs go
# to <dir>.log.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/toolchain.sh"

arch=${1:?arch: x86_64|ppc32}
flavor=${2:?flavor: debug|release}
cfgdir="$here/kernel/configs"
frags=("$cfgdir/common.config" "$cfgdir/$arch-base.config" "$cfgdir/$arch-$flavor.config")
for f in "${frags[@]}"; do [ -f "$f" ] || { echo "build-kernel: no $f" >&2; exit 1; }; done

src=$("$here/fetch-kernel.sh")
kver=$(make -s -C "$src" kernelversion)

toolchain_env "$arch"
builds="$ZOID_CACHE/build"
mkdir -p "$builds/by-fragments"

# Fast path: these fragments, this source and this toolchain were seen before.
fkey=$( { cat "${frags[@]}"; echo "$src"; toolchain_versions "$arch"; } | sha256sum | cut -c1-12)
link="$builds/by-fragments/$kver-$arch-$flavor-$fkey"
if [ -f "$link/.zoid-built" ]; then
  readlink -f "$link"
  exit 0
fi

# Configure: arch base + fragments, in a scratch folder.
tmp=$(mktemp -d "$builds/configure-$arch-$flavor-XXXX")
trap 'rm -rf "$tmp"' EXIT
{
  case "$arch" in
    x86_64) base=tinyconfig ;;
    ppc32) base=44x/bamboo_defconfig ;;
  esac
  kmake -C "$src" O="$tmp" "$base"
  "$src/scripts/kconfig/merge_config.sh" -m -O "$tmp" "$tmp/.config" "${frags[@]}"
  kmake -C "$src" O="$tmp" olddefconfig
} > "$tmp/configure.log" 2>&1 || { tail -n 40 "$tmp/configure.log" >&2; exit 1; }

# merge_config silently drops what Kconfig refuses (a missing dependency):
# every `=y` a fragment asks for must be in the final .config.
missing=$(grep -hE '^CONFIG_[A-Za-z0-9_]+=y$' "${frags[@]}" | sort -u | grep -vxF -f "$tmp/.config" || true)
if [ -n "$missing" ]; then
  echo "build-kernel: these fragment options did not stick in the $arch/$flavor .config:" >&2
  echo "$missing" | sed 's/^/  /' >&2
  kmake -C "$src" O="$tmp" rustavailable >&2 || true
  exit 1
fi

# A build is keyed by its resulting .config (which records the compiler and
# rustc versions) and its source tree: editing a fragment without changing
# the configuration reuses the build.
key=$( { grep -v '^#' "$tmp/.config"; echo "$src"; } | sha256sum | cut -c1-12)
out="$builds/$kver-$arch-$flavor-$key"
if [ -f "$out/.zoid-built" ]; then
  ln -sfn "$out" "$link"
  echo "$out"
  exit 0
fi
rm -rf "$out"
mkdir -p "$out"
cp "$tmp/.config" "$out/.config"
log="$out.log"
echo "build-kernel: building $kver $arch/$flavor in $out (log: $log)" >&2
start=$(date +%s)
kmake -C "$src" O="$out" olddefconfig > "$log" 2>&1 || { tail -n 40 "$log" >&2; exit 1; }

case "$arch" in
  x86_64) targets=(bzImage modules) ;;
  ppc32) targets=(uImage modules) ;;
esac
if ! kmake -C "$src" O="$out" -j"$(nproc)" "${targets[@]}" >> "$log" 2>&1; then
  grep -E 'error|Error' "$log" | head -n 30 >&2
  tail -n 30 "$log" >&2
  exit 1
fi
touch "$out/.zoid-built"
ln -sfn "$out" "$link"
echo "build-kernel: $arch/$flavor built in $(( $(date +%s) - start ))s" >&2
echo "$out"
