#!/usr/bin/env bash
# Build (or reuse) a zoid test kernel and print its build directory (a
# prepared tree usable as KDIR for `make -C $KDIR M=...`).
#
#   scripts/build-kernel.sh x86_64 debug|release
#   scripts/build-kernel.sh ppc32  debug
#
# Kernels are cached outside the repo under
#   $ZOID_CACHE/build/<version>-<arch>-<flavor>-<hash>
# where <hash> covers the config fragments, the kernel patches, this script
# and the toolchain versions: a changed fragment rebuilds, an unchanged one
# does not.  Build logs go to <dir>.log.
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
key=$( { cat "${frags[@]}" "$0" "$here/toolchain.sh"; echo "$src"; toolchain_versions "$arch"; } | sha256sum | cut -c1-12)
out="$ZOID_CACHE/build/$kver-$arch-$flavor-$key"

if [ -f "$out/.zoid-built" ]; then
  echo "$out"
  exit 0
fi

log="$out.log"
mkdir -p "$out"
echo "build-kernel: building $kver $arch/$flavor in $out (log: $log)" >&2
start=$(date +%s)
{
  case "$arch" in
    x86_64) base=tinyconfig ;;
    ppc32) base=44x/bamboo_defconfig ;;
  esac
  kmake -C "$src" O="$out" "$base"
  "$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "${frags[@]}"
  kmake -C "$src" O="$out" olddefconfig
} > "$log" 2>&1 || { tail -n 40 "$log" >&2; exit 1; }

# merge_config silently drops what Kconfig refuses (a missing dependency):
# every `=y` a fragment asks for must be in the final .config.
missing=$(grep -hE '^CONFIG_[A-Za-z0-9_]+=y$' "${frags[@]}" | sort -u | grep -vxF -f "$out/.config" || true)
if [ -n "$missing" ]; then
  echo "build-kernel: these fragment options did not stick in $out/.config:" >&2
  echo "$missing" | sed 's/^/  /' >&2
  kmake -C "$src" O="$out" rustavailable >&2 || true
  exit 1
fi

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
echo "build-kernel: $arch/$flavor built in $(( $(date +%s) - start ))s" >&2
echo "$out"
