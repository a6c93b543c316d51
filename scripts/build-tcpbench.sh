#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build the static tools/tcpbench binary for a guest architecture and print
# its path (out/bench/tcpbench-<arch>).
#
#   scripts/build-tcpbench.sh x86_64|ppc32
#
# x86_64: the host gcc; ppc32: powerpc-linux-gnu-gcc with Debian's
# libc6-dev-powerpc-cross (both installed by scripts/setup.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
arch=${1:?arch: x86_64|ppc32}
case "$arch" in
  x86_64) cc=gcc ;;
  ppc32) cc=powerpc-linux-gnu-gcc ;;
  *) echo "build-tcpbench: unknown arch $arch" >&2; exit 1 ;;
esac
command -v "$cc" >/dev/null || { echo "build-tcpbench: $cc not found (scripts/setup.sh)" >&2; exit 1; }
src="$repo/tools/tcpbench/tcpbench.c"
out="$repo/out/bench/tcpbench-$arch"
mkdir -p "$(dirname "$out")"
if [ ! -x "$out" ] || [ "$src" -nt "$out" ]; then
  "$cc" -static -O2 -Wall -Wextra -Werror -o "$out.tmp" "$src"
  mv "$out.tmp" "$out"
fi
echo "$out"
