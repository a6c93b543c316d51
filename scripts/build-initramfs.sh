#!/usr/bin/env bash
# Pack a guest initramfs (newc cpio) for one architecture and print its path:
# static busybox, qemu/guest/init, the in-guest tests, zoidnet-up, and the
# zoid modules from a build-modules.sh output folder.
#
#   scripts/build-initramfs.sh <arch> <modules-dir> <output.cpio>
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/common.sh"
arch=${1:?arch}
mods=${2:?modules dir}
outfile=${3:?output}

busybox=$("$here/build-busybox.sh" "$arch")
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,lib/zoid,zoid/bin,zoid/tests,zoid/run,proc,sys,dev,tmp,mnt,etc,root}
cp "$busybox" "$stage/bin/busybox"
ln -s busybox "$stage/bin/sh"
cp "$repo/qemu/guest/init" "$stage/init"
cp "$repo/qemu/guest/tests/run" "$repo/qemu/guest/tests/treenet-up" "$repo/qemu/guest/tests/treenet-lib.sh" \
  "$repo/qemu/guest/tests/zoidfs-lib.sh" "$repo/qemu/guest/tests/crash-ion.sh" \
  "$repo/qemu/guest/tests/crash-cn.sh" "$repo/qemu/guest/tests/soak.sh" \
  "$repo/qemu/guest/tests/flood-long.sh" \
  "$repo/qemu/guest/tests/reload-loops.sh" \
  "$repo"/qemu/guest/tests/[0-9]*.sh "$stage/zoid/tests/"
# Shell tools that need no build (compiled ones come with qemu/pset --add).
cp "$repo/tools/zoidnet/zoidnet-up" "$stage/zoid/bin/"
: > "$stage/lib/zoid/load-order"
while read -r name dir flags; do
  cp "$mods/$dir/$name.ko" "$stage/lib/zoid/"
  [ "$flags" = extra ] || echo "$name" >> "$stage/lib/zoid/load-order"
done < <(zoid_modules)
# The suite version the modules must report (source of truth: zoid_proto).
sed -n 's/.*SUITE_VERSION: Version = Version::new(\([0-9]*\), \([0-9]*\), \([0-9]*\)).*/\1.\2.\3/p' \
  "$repo/rust/zoid_proto/src/version.rs" > "$stage/zoid/suite-version"
[ -s "$stage/zoid/suite-version" ] || { echo "build-initramfs: cannot read SUITE_VERSION" >&2; exit 1; }
echo "root:x:0:0:root:/root:/bin/sh" > "$stage/etc/passwd"
echo "root:x:0:" > "$stage/etc/group"
mkdir -p "$(dirname "$outfile")"
(cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) > "$outfile.tmp"
mv "$outfile.tmp" "$outfile"
echo "$outfile"
