#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build a static guest program from one C file for a guest architecture and
# print its path (out/tools/<name>-<arch>).
#
#   scripts/build-guest-tool.sh x86_64|ppc32 tools/tcpbench/tcpbench.c
#
# x86_64: the host gcc; ppc32: powerpc-linux-gnu-gcc with Debian's
# libc6-dev-powerpc-cross (both installed by scripts/setup.sh).  Headers
# next to the source file are dependencies too.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
arch=${1:?arch: x86_64|ppc32}
src=${2:?source: tools/<dir>/<name>.c}
case "$arch" in
  x86_64) cc=gcc ;;
  ppc32) cc=powerpc-linux-gnu-gcc ;;
  *) echo "build-guest-tool: unknown arch $arch" >&2; exit 1 ;;
esac
command -v "$cc" >/dev/null || { echo "build-guest-tool: $cc not found (scripts/setup.sh)" >&2; exit 1; }
case "$src" in /*) ;; *) src="$repo/$src" ;; esac
name=$(basename "$src" .c)
out="$repo/out/tools/$name-$arch"
mkdir -p "$(dirname "$out")"
stale=0
[ -x "$out" ] || stale=1
for dep in "$src" "$(dirname "$src")"/*.h; do
  [ -e "$dep" ] && [ "$dep" -nt "$out" ] && stale=1
done
if [ "$stale" = 1 ]; then
  "$cc" -static -O2 -Wall -Wextra -Werror -o "$out.tmp" "$src"
  mv "$out.tmp" "$out"
fi
echo "$out"
